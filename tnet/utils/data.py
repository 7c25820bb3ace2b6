"""torch.utils.data for tnet: data sets, samplers and DataLoader, with torch's arguments and
semantics; a batch comes out as tnet Tensors on tnet's device.

Where tnet differs:
- Loading runs in the calling process. num_workers, pin_memory, timeout, multiprocessing_context,
  prefetch_factor, persistent_workers, pin_memory_device and in_order are checked as torch checks
  them and otherwise ignored. With num_workers > 0 the calling process stands in for one worker:
  worker_init_fn(0) runs at each iteration's start (once with persistent_workers), and while it
  runs and while a batch is fetched get_worker_info() gives worker 0 of 1 (a worker_init_fn that
  opens the data set's files works); the Python, numpy and tnet random states it changes (a
  seed_worker's np.random.seed) are restored after it, as a worker's draws leave the main
  process's alone.
- Random draws (shuffle, RandomSampler, SubsetRandomSampler, random_split) are numpy's, on the
  host, from the stream that tnet.manual_seed reseeds, or from `generator=`, a numpy Generator:
  tnet.manual_seed(s) repeats an order, with other numbers than torch's.
- Batches hold tnet's dtypes: float32, float16, bfloat16, int64, int32, uint8 (images) and bool are
  kept, other floats (float64: Python floats, numpy's default) become float32 and other integers
  int64, where torch keeps every dtype. Items of one batch must share a dtype (torch promotes).

tnet.data.Loader is tnet's own loader for image sets held on the device (augmentation there)."""
import bisect
import collections.abc
import copy
import itertools
import math
import numbers
import random
import sys
import types
import warnings
from typing import Generic, TypeVar

import numpy as np
import torch

from .._device import DEVICE
from ..factory import fork_rng, host_generator, initial_seed
from ..functional import stack
from ..kernels.copy import gather_
from ..kernels.launch import is_channels_last, memory_format
from ..tensor import Tensor, as_storage

__all__ = ["Dataset", "IterableDataset", "ChainDataset", "StackDataset", "TensorDataset", "ConcatDataset", "Subset",
           "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader",
           "DistributedSampler", "default_collate", "default_convert", "get_worker_info"]

KEPT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8, torch.bool)
COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


# ---- host data to device tensors ----

def device_dtype(dtype):
    """The dtype tnet holds data of torch dtype `dtype` in: itself where tnet has it, else float32
    for floats and int64 for integers."""
    if dtype in KEPT_DTYPES:
        return dtype
    if dtype.is_complex:
        raise TypeError(f"tnet holds no complex data, got {dtype}")
    return torch.float32 if dtype.is_floating_point else torch.int64


def _host(v):
    """v, a numpy array or a torch tensor, as a torch tensor (a numpy array's memory shared)."""
    if isinstance(v, torch.Tensor):
        return v.detach()  # data: torch's autograd has no part in tnet
    if not isinstance(v, np.ndarray) or v.dtype.kind in "OSUV":  # objects, strings: torch's refusal
        raise TypeError(COLLATE_ERROR.format(v.dtype if isinstance(v, np.ndarray) else type(v)))
    return torch.from_numpy(np.require(v, requirements="W"))  # a read-only array (a memory map) copied: torch warns


def to_device(v):
    """A tnet.Tensor on tnet's device holding a copy of v (a numpy array or a torch tensor on any
    device), in device_dtype."""
    v = _host(v)
    return Tensor(as_storage(v, device_dtype(v.dtype)))


def _stack_host(items):
    """numpy arrays or torch tensors of one shape and dtype, stacked where they are: one copy to the
    device follows, not one per item."""
    rows = [_host(v) for v in items]
    first = rows[0]
    for i, row in enumerate(rows):
        if row.shape != first.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first.shape)} at entry 0 "
                               f"and {list(row.shape)} at entry {i}")
        if row.dtype != first.dtype:
            raise TypeError(f"default_collate: tnet stacks items of one dtype, got {first.dtype} at entry 0 and "
                            f"{row.dtype} at entry {i}")
    out = torch.empty((len(rows), *first.shape), dtype=first.dtype, device=first.device)
    for i, row in enumerate(rows):
        out[i].copy_(row)
    return out


def _rebuilt(elem, parts):
    """parts (a dict where elem is a mapping, else a list) in elem's container type, as torch's
    collate rebuilds them: a named tuple as itself, another tuple as a list (torch's backward
    compatibility), a mutable mapping or sequence as a copy of elem updated (keeping its type and
    attributes), other types built from parts; a plain list or dict where that fails."""
    if isinstance(elem, tuple):
        return type(elem)(*parts) if hasattr(elem, "_fields") else parts
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)
            out.update(parts)
            return out
        if isinstance(elem, collections.abc.MutableSequence):
            out = copy.copy(elem)
            for i, part in enumerate(parts):
                out[i] = part
            return out
        return type(elem)(parts)
    except TypeError:
        return parts


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """tnet Tensors stacked on the device (on the tape); torch tensors and numpy arrays stacked on the host and
    copied to the device once."""
    if isinstance(batch[0], Tensor):
        return stack(list(batch))
    return to_device(_stack_host(batch))


def collate_number_fn(batch, *, collate_fn_map=None):
    """Numbers (Python's and numpy's) as one tensor (dtypes as the module docstring says)."""
    return to_device(np.asarray(batch))


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings and bytes stay a sequence."""
    return batch


# torch's names for its leaf functions; a number's dtype is tnet's rule whichever kind it is
collate_numpy_array_fn = collate_tensor_fn
collate_numpy_scalar_fn = collate_float_fn = collate_int_fn = collate_number_fn

# default_collate's leaves by type, as torch's map (a script extends a copy: {**default_collate_fn_map, T: fn})
default_collate_fn_map = {Tensor: collate_tensor_fn, torch.Tensor: collate_tensor_fn,
                          np.ndarray: collate_numpy_array_fn, (np.bool_, np.number): collate_numpy_scalar_fn,
                          float: collate_float_fn, int: collate_int_fn, str: collate_str_fn, bytes: collate_str_fn,
                          numbers.Number: collate_number_fn}


def collate(batch, *, collate_fn_map=None):
    """torch's collate: a list of samples into a batch by the first sample's type: the function collate_fn_map
    gives its type (the exact type, else the first key it is an instance of), called as fn(batch,
    collate_fn_map=...); else dicts, named tuples and sequences field by field (a tuple becomes a list, as torch's);
    else TypeError."""
    elem = batch[0]
    if collate_fn_map is not None:
        fn = collate_fn_map.get(type(elem)) or next(
            (f for key, f in collate_fn_map.items() if isinstance(elem, key)), None)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuilt(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return _rebuilt(elem, [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)])
    raise TypeError(COLLATE_ERROR.format(type(elem)))


def default_collate(batch):
    """torch's default_collate: collate by default_collate_fn_map (a change to that map changes it, as torch's).
    tnet Tensors are stacked on the device (on the tape); numpy arrays and torch tensors are stacked
    on the host and copied to the device once; numbers (Python's and numpy's) become a tensor;
    strings stay a sequence; dicts, named tuples and sequences are collated field by field (a
    tuple becomes a list, as torch's). Dtypes as the module docstring says."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """torch's default_convert (the DataLoader's collate_fn when batch_size is None): numpy arrays
    and scalars, and torch tensors (which torch leaves), become tnet Tensors on the device, also
    within dicts, named tuples and sequences (a tuple becomes a list); all else stays as it is."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "OSUV":
        return data
    if isinstance(data, (torch.Tensor, np.ndarray)):
        return to_device(data)
    if isinstance(data, (np.number, np.bool_)):
        return to_device(np.asarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuilt(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, collections.abc.Sequence):
        return _rebuilt(data, [default_convert(d) for d in data])
    return data


# ---- data sets ----

# the type variable of torch's generic data sets, samplers and loader (`class Pairs(Dataset[tuple[Tensor, int]])`)
T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """torch's map-style data set: a subclass gives __getitem__(index) and, for the samplers,
    __len__(); `a + b` is ConcatDataset([a, b])."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """torch's iterable-style data set: a subclass gives __iter__; a DataLoader batches its items in
    the order they come (no sampler, no shuffle). `a + b` is ChainDataset([a, b])."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """The items of several IterableDatasets, one stream after another, as torch's (AssertionError for a
    data set that is no IterableDataset, met as the chain reaches it)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def _checked(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield d

    def __iter__(self):
        for d in self._checked():
            yield from d

    def __len__(self):
        return sum(len(d) for d in self._checked())


class StackDataset(Dataset[T_co]):
    """Item i of several data sets of one length side by side, as torch's: a tuple (StackDataset(a, b))
    or a dict (StackDataset(image=a, text=b)); ValueError for both forms, none, or unequal lengths."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets = args or kwargs
        parts = list(args or kwargs.values())
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class TensorDataset(Dataset):
    """Tensors of one length, item i the tuple of their rows i. tnet Tensors are kept; numpy
    arrays and torch tensors are copied to the device once, in default_collate's dtypes, so an
    item's rows are tnet views. A DataLoader gathers a batch of each tensor by one kernel. A
    length mismatch raises AssertionError, as torch's assert."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        self.tensors = tuple(t if isinstance(t, Tensor) else to_device(t) for t in tensors)
        if any(t.ndim == 0 or len(t) != len(self.tensors[0]) for t in self.tensors):
            raise AssertionError(f"Size mismatch between tensors: first dims {[tuple(t.shape[:1]) for t in self.tensors]}")

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class Subset(Dataset[T_co]):
    """The items of dataset at `indices` (a sequence of ints), in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        """The items at indices, by the data set's own __getitems__ where it has one, as torch's."""
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset[T_co]):
    """The items of several data sets, one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:  # torch's asserts, as TensorDataset's
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        i = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[i][idx - (self.cumulative_sizes[i - 1] if i else 0)]


def random_split(dataset, lengths, generator=None):
    """Subsets of dataset, of `lengths` (ints, or fractions summing to 1: floor(fraction * len),
    the remainder dealt one by one from the first, as torch's), over one random permutation drawn
    by numpy from the stream tnet.manual_seed reseeds (or from generator, a numpy Generator)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, fraction in enumerate(lengths):
            if fraction < 0 or fraction > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(len(dataset) * fraction))
        for i in range(len(dataset) - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = sizes
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = host_generator("random_split", generator).permutation(sum(lengths)).tolist()
    return [Subset(dataset, indices[end - size:end]) for end, size in zip(itertools.accumulate(lengths), lengths)]


# ---- samplers ----

class Sampler(Generic[T_co]):
    """torch's Sampler: iterating it gives indices (a batch sampler: lists of them)."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new permutation of the data set's indices at every pass; num_samples beyond its length
    takes further permutations, the last cut short; replacement=True draws num_samples indices
    with replacement. Drawn by numpy from the stream tnet.manual_seed reseeds, or from
    generator (a numpy Generator): other orders than torch's."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")
        host_generator("RandomSampler", generator)  # a torch.Generator raises here, not at the first batch

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), host_generator("RandomSampler", self.generator)
        if self.replacement:  # in blocks of 32, as torch's: minGPT's trainer asks for num_samples=int(1e10)
            for _ in range(self.num_samples // 32):
                yield from rng.integers(0, n, size=32).tolist()
            yield from rng.integers(0, n, size=self.num_samples % 32).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        if self.num_samples % n:
            yield from rng.permutation(n)[:self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order at every pass (drawn as RandomSampler's)."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator
        host_generator("SubsetRandomSampler", generator)

    def __iter__(self):
        for i in host_generator("SubsetRandomSampler", self.generator).permutation(len(self.indices)):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probabilities proportional to weights (with replacement unless
    replacement=False), anew at every pass. Drawn by numpy as RandomSampler's: other indices than torch's."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = np.asarray(weights.tolist() if isinstance(weights, Tensor) else weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights, self.num_samples, self.replacement, self.generator = weights, num_samples, replacement, generator
        host_generator("WeightedRandomSampler", generator)

    def __iter__(self):
        """torch.multinomial's draw and errors (RuntimeError, at the first item): without replacement, weights
        divided by exponential draws and the largest num_samples taken, so that zero weights come last, once the
        positive ones are all drawn."""
        rng = host_generator("WeightedRandomSampler", self.generator)
        w = self.weights
        if not (np.isfinite(w).all() and (w >= 0).all()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > len(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        if self.replacement:
            yield from rng.choice(len(w), size=self.num_samples, p=w / w.sum()).tolist()
        else:
            keys = w / rng.exponential(size=len(w))
            yield from np.argsort(-keys, kind="stable")[:self.num_samples].tolist()

    def __len__(self):
        return self.num_samples


def _check_batching(batch_size, drop_last):
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
    if not isinstance(drop_last, bool):
        raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")


class BatchSampler(Sampler):
    """Lists of batch_size consecutive indices of sampler (any iterable: the DataLoader groups an
    IterableDataset's items with it too), the last shorter unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        _check_batching(batch_size, drop_last)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        items = iter(self.sampler)
        while batch := list(itertools.islice(items, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedSampler(Sampler[T_co]):
    """torch's DistributedSampler(dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
    drop_last=False): this rank's share, every num_replicas-th index from position rank, of an
    order padded by its first indices to a multiple of num_replicas (drop_last: cut to one). The
    order is numpy's permutation seeded by seed + the epoch (set_epoch), the same on every rank;
    other orders than torch's. num_replicas and rank default to torch.distributed's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            if not torch.distributed.is_available():
                raise RuntimeError("Requires distributed package to be available")
            # without a process group torch.distributed's own ValueError ("Default process group has not been
            # initialized"), as torch's sampler raises
            num_replicas = torch.distributed.get_world_size() if num_replicas is None else num_replicas
            rank = torch.distributed.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank, self.epoch = dataset, num_replicas, rank, 0
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        n = len(dataset)
        self.num_samples = math.ceil((n - num_replicas) / num_replicas if drop_last and n % num_replicas else
                                     n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        order = np.random.default_rng(self.seed + self.epoch).permutation(n) if self.shuffle else np.arange(n)
        order = np.resize(order, self.total_size)  # pads by repeating the order from its start, or cuts it
        return iter(order[self.rank::self.num_replicas].tolist())

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


# ---- the loader ----

class WorkerInfo:
    """torch's worker description: id, num_workers, seed and dataset."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker = [None]  # the WorkerInfo while a loader with workers fetches or runs its worker_init_fn


def get_worker_info():
    """None in the main process, torch's answer there; while a loader with num_workers > 0 fetches
    a batch or runs its worker_init_fn, its one in-process worker: id 0 of num_workers 1 (an
    IterableDataset that shards its items by worker yields them all)."""
    return _worker[0]


def _as_worker(info, items):
    """items, each drawn with get_worker_info() giving info."""
    while True:
        _worker[0] = info
        try:
            item = next(items)
        except StopIteration:
            return
        finally:
            _worker[0] = None
        yield item


def _gathered(dataset, indices):
    """default_collate's batch of the items at indices of a TensorDataset (or of Subsets of one, as
    random_split makes), gathered on the device by one kernel per tensor where collating the rows
    would copy each; None for other data sets, and where a tensor requires grad (default_collate
    stacks those on the tape)."""
    while type(dataset) is Subset:
        indices = [dataset.indices[i] for i in indices]
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset or any(t.requires_grad for t in dataset.tensors):
        return None
    index, n = np.asarray(indices), len(dataset)
    if index.ndim != 1 or index.dtype.kind not in "iu":
        return None  # not a list of ints: the rows' own indexing says what is wrong
    outside = (index < -n) | (index >= n)
    if outside.any():
        raise IndexError(f"index {index[outside][0]} is out of bounds for dimension 0 with size {n}")
    # negative indices count from the end, as t[i]; checked here, so the kernel's flag is not read
    # back (a host synchronisation per batch)
    index = torch.from_numpy((index % n).astype(np.int64)).to(DEVICE)
    batch = []
    for t in dataset.tensors:
        rows = torch.empty((len(index), *t.shape[1:]), dtype=t.dtype, device=DEVICE,
                           memory_format=memory_format(is_channels_last(t.memory)))
        batch.append(Tensor(gather_(rows, t.memory, index, 0, name=None)))
    return batch


class _LoaderIter:
    """A DataLoader's iterator: next() gives its batches, len() is the loader's, as torch's
    (`tqdm(iter(loader))` reads its total)."""

    def __init__(self, loader, batches):
        self._loader, self._batches = loader, batches

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._batches)

    def __len__(self):
        return len(self._loader)


class DataLoader(Generic[T_co]):
    """torch's DataLoader, its arguments in its order: batches of dataset's items in the order of
    sampler (default: SequentialSampler; shuffle=True: a RandomSampler with generator), in lists of
    batch_size (the last shorter unless drop_last; batch_sampler gives the lists itself),
    collated by collate_fn (default_collate: tnet Tensors on tnet's device). batch_size=None
    yields single items through default_convert. An IterableDataset's items are batched in the
    order they come. len() as torch's. Each iteration draws a new order.

    What tnet ignores (loading runs in this process) and its dtypes: see the module docstring.
    With the default collate_fn, a batch of a TensorDataset (or a Subset of one) is gathered on
    the device by one kernel per tensor: the same values as collating its rows."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        # torch's checks of the worker options, so that a script that torch takes runs here
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if isinstance(dataset, IterableDataset):
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        elif batch_size is not None:
            _check_batching(batch_size, drop_last)
        if not isinstance(dataset, IterableDataset):
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
            if batch_size is not None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self._batched = batch_size is not None or batch_sampler is not None  # torch's auto-collation
        self.collate_fn = collate_fn if collate_fn is not None else default_collate if self._batched else default_convert
        self.num_workers, self.pin_memory, self.timeout, self.worker_init_fn = num_workers, pin_memory, timeout, \
            worker_init_fn
        self.multiprocessing_context, self.prefetch_factor = multiprocessing_context, prefetch_factor
        self.persistent_workers, self.pin_memory_device, self.in_order = persistent_workers, pin_memory_device, in_order
        self._initialized = True

    # torch's: the batching is fixed at construction (its batch_sampler built from these), so a later
    # assignment, which would be silently ignored, raises
    _FIXED = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

    def __setattr__(self, name, value):
        if name in self._FIXED and vars(self).get("_initialized"):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            return n if self.batch_size is None else len(BatchSampler(range(n), self.batch_size, self.drop_last))
        return len(self.batch_sampler if self._batched else self.sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return _LoaderIter(self, self._batches())
        info = WorkerInfo(0, 1, initial_seed(), self.dataset)
        if self.worker_init_fn is not None and not (self.persistent_workers and vars(self).get("_started")):
            self._started = True
            states = random.getstate(), np.random.get_state()
            _worker[0] = info
            try:
                with fork_rng():
                    self.worker_init_fn(0)
            finally:
                _worker[0] = None
                random.setstate(states[0])
                np.random.set_state(states[1])
        return _LoaderIter(self, _as_worker(info, self._batches()))

    def _batches(self):
        if isinstance(self.dataset, IterableDataset):
            items = iter(self.dataset)
            if self.batch_size is None:
                return map(self.collate_fn, items)
            return map(self.collate_fn, BatchSampler(items, self.batch_size, self.drop_last))
        if not self._batched:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return map(self._fetch, self.batch_sampler)

    def _fetch(self, indices):
        if self.collate_fn is default_collate:
            batch = _gathered(self.dataset, indices)
            if batch is not None:
                return batch
        getitems = getattr(self.dataset, "__getitems__", None)
        return self.collate_fn(getitems(indices) if callable(getitems) else [self.dataset[i] for i in indices])


# torch.utils.data's submodules, each a module in sys.modules, so that `from torch.utils.data.dataloader import
# default_collate` and `torch.utils.data.distributed.DistributedSampler` port
for _name, _names in {"dataloader": ["DataLoader", "default_collate", "default_convert", "get_worker_info"],
                      "dataset": ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
                                  "random_split", "ChainDataset", "StackDataset", "T_co"],
                      "sampler": ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
                                  "WeightedRandomSampler", "BatchSampler"],
                      "distributed": ["DistributedSampler"]}.items():
    _module = types.ModuleType(f"{__name__}.{_name}", f"torch.utils.data.{_name}'s names")
    _module.__dict__.update({n: globals()[n] for n in _names})
    sys.modules[_module.__name__] = globals()[_name] = _module
# and the older path `from torch.utils.data._utils.collate import default_collate`
_utils = types.ModuleType(f"{__name__}._utils", "torch.utils.data._utils: its collate module")
_utils.collate = types.ModuleType(f"{_utils.__name__}.collate", "torch.utils.data._utils.collate's collate functions")
_utils.collate.__dict__.update({n: globals()[n] for n in (
    "collate", "default_collate", "default_convert", "default_collate_fn_map", "collate_tensor_fn",
    "collate_numpy_array_fn", "collate_numpy_scalar_fn", "collate_float_fn", "collate_int_fn", "collate_str_fn")})
sys.modules[_utils.__name__], sys.modules[_utils.collate.__name__] = _utils, _utils.collate
