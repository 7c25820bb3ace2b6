"""tnet.utils.data against torch.utils.data: the DataLoader's batches (collated samples of every
kind, a TensorDataset's gathered on the device, batch samplers, batch_size=None, an
IterableDataset) equal torch's on the same data, shuffling draws repeatable permutations,
random_split's sizes, and torch's errors."""
import collections
import importlib
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import tnet
import tnet.utils.data as data
from tnet.utils.data import DataLoader, TensorDataset

Pair = collections.namedtuple("Pair", "a b")


def assert_same(ours, ref, what="batch"):
    """ours (tnet) holds ref's (torch's) structure and values: each torch tensor as a tnet.Tensor
    on tnet's device, of tnet's dtype for it (float64 -> float32, int16 -> int64)."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(ours, tnet.Tensor) and ours.device == tnet.DEVICE, f"{what}: {type(ours).__name__}"
        assert ours.dtype == data.device_dtype(ref.dtype) and ours.shape == tuple(ref.shape), \
            f"{what}: {ours.dtype} {ours.shape} for {ref.dtype} {tuple(ref.shape)}"
        assert torch.equal(ours.memory.cpu(), ref.to(ours.dtype)), f"{what}: values differ"
    elif isinstance(ref, dict):
        assert type(ours) is type(ref) and ours.keys() == ref.keys(), what
        for key in ref:
            assert_same(ours[key], ref[key], f"{what}[{key!r}]")
    elif isinstance(ref, (list, tuple)):
        assert type(ours) is type(ref) and len(ours) == len(ref), f"{what}: {type(ours).__name__} for {ref!r}"
        for i, (o, r) in enumerate(zip(ours, ref)):
            assert_same(o, r, f"{what}[{i}]")
    else:
        assert ours == ref, what


def assert_loaders_agree(ours, ref):
    assert len(ours) == len(ref)
    batches, ref_batches = list(ours), list(ref)
    assert len(batches) == len(ref_batches)
    for i, (b, r) in enumerate(zip(batches, ref_batches)):
        assert_same(b, r, f"batch {i}")


class Samples:
    """A map-style data set of every kind default_collate takes (a plain class: both loaders
    take it)."""

    def __init__(self, n):
        rng = np.random.default_rng(n)
        self.images = rng.integers(0, 256, (n, 3, 2, 2), dtype=np.uint8)
        self.features = rng.standard_normal((n, 3))  # float64
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"image": self.images[i], "x": torch.tensor(self.features[i], dtype=torch.float32), "label": i % 3,
                "weight": 0.5 * i, "flag": i % 2 == 0, "name": f"item{i}",
                "pair": Pair(np.int64(i), np.float32(i / 4)), "parts": (self.features[i, 0], [i, -i])}


def test_batches_of_every_kind_are_torchs():
    """dicts, named tuples, tuples (lists, as torch's), lists, strings, numpy arrays and scalars,
    torch tensors, Python ints, floats and bools; drop_last and a short last batch."""
    for batch_size, drop_last in ((4, False), (4, True), (1, False), (11, False)):
        assert_loaders_agree(DataLoader(Samples(11), batch_size, drop_last=drop_last),
                             tud.DataLoader(Samples(11), batch_size, drop_last=drop_last))


def test_tensor_dataset_batches_are_torchs(monkeypatch):
    """TensorDataset of numpy arrays, torch tensors and tnet Tensors (a channels-last one, int32,
    bool, uint8 and float64 sources): the device gather (no row is stacked) gives torch's batches,
    also through the Subsets that random_split makes and for negative indices."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((11, 3, 2, 2))
    y = rng.integers(0, 10, 11)
    flags = rng.random(11) < 0.5
    small = rng.integers(-5, 5, (11, 2)).astype(np.int32)
    pixels = rng.integers(0, 256, (11, 4), dtype=np.uint8)
    image = tnet.Tensor(torch.tensor(x, dtype=torch.float32).contiguous(memory_format=torch.channels_last))
    ours = TensorDataset(x, torch.from_numpy(y), tnet.tensor(flags), small, pixels, image)
    ref = tud.TensorDataset(*(torch.from_numpy(a) for a in (x, y, flags, small, pixels)),
                            torch.tensor(x, dtype=torch.float32))
    assert len(ours) == 11
    assert_same(ours[3], ref[3], "item 3")
    monkeypatch.setattr(data, "stack", lambda rows: pytest.fail("rows stacked, not gathered"))
    assert_loaders_agree(DataLoader(ours, 4), tud.DataLoader(ref, 4))
    subset = data.Subset(ours, [5, 0, 7, 3, 9, 1])
    assert_loaders_agree(DataLoader(subset, 4), tud.DataLoader(tud.Subset(ref, [5, 0, 7, 3, 9, 1]), 4))
    batches = [[0, -1, 3], [-11, 10]]
    assert_loaders_agree(DataLoader(ours, batch_sampler=batches), tud.DataLoader(ref, batch_sampler=batches))
    with pytest.raises(IndexError, match="index 11 is out of bounds"):
        next(iter(DataLoader(ours, batch_sampler=[[0, 11]])))


def test_tensors_that_require_grad_are_stacked_on_the_tape():
    w = tnet.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    (batch,) = next(iter(DataLoader(TensorDataset(w), batch_size=2)))
    batch.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[1, 1], [1, 1], [0, 0]])


def epoch_order(loader):
    return np.concatenate([y.numpy() for _, y in loader]).tolist()


def test_shuffle_draws_a_repeatable_permutation():
    """shuffle=True: every index once per epoch, a new order each epoch; tnet.manual_seed(s)
    repeats the orders, as does generator= (a numpy Generator); a torch.Generator raises."""
    n = 13
    loader = DataLoader(TensorDataset(np.zeros((n, 2)), np.arange(n)), batch_size=4, shuffle=True)
    assert len(loader) == 4
    tnet.manual_seed(5)
    first, second = epoch_order(loader), epoch_order(loader)
    assert sorted(first) == sorted(second) == list(range(n)) and first != second
    tnet.manual_seed(5)
    assert epoch_order(loader) == first and epoch_order(loader) == second
    seeded = lambda: DataLoader(TensorDataset(np.zeros(n), np.arange(n)), 5, shuffle=True,
                                generator=np.random.default_rng(2))
    assert epoch_order(seeded()) == epoch_order(seeded())
    with pytest.raises(TypeError, match="numpy Generator"):
        DataLoader(TensorDataset(np.arange(n)), shuffle=True, generator=torch.Generator())


def test_samplers():
    """RandomSampler with num_samples and replacement, SubsetRandomSampler, BatchSampler as torch's
    (lengths, the indices they may give), and a sampler handed to the loader."""
    tnet.manual_seed(0)
    over = list(data.RandomSampler(range(5), num_samples=12))
    assert len(over) == 12 and sorted(over[:5]) == sorted(over[5:10]) == list(range(5)) and len(set(over[10:])) == 2
    drawn = list(data.RandomSampler(range(5), replacement=True, num_samples=30))
    assert len(drawn) == 30 and set(drawn) <= set(range(5))
    # drawn as it is read, as torch's: minGPT's trainer asks for int(1e10) samples and reads a few
    endless = DataLoader(TensorDataset(np.arange(5)), 2, sampler=data.RandomSampler(range(5), True, int(1e10)))
    (batch,) = next(iter(endless))
    assert len(endless) == 5 * 10 ** 9 and batch.shape == (2,)
    batches = iter(DataLoader(range(10), batch_size=4))  # the iterator's len() is the loader's, as torch's
    assert len(batches) == 3 and next(batches).tolist() == [0, 1, 2, 3] and len(list(batches)) == 2
    subset = data.SubsetRandomSampler([9, 4, 7])
    assert sorted(subset) == [4, 7, 9] and len(subset) == 3
    for drop_last in (False, True):
        ours, ref = data.BatchSampler(range(10), 3, drop_last), tud.BatchSampler(range(10), 3, drop_last)
        assert list(ours) == list(ref) and len(ours) == len(ref)
    dataset = TensorDataset(np.arange(8))
    (batch,) = next(iter(DataLoader(dataset, 8, sampler=data.SubsetRandomSampler([1, 6, 2]))))
    assert sorted(batch.tolist()) == [1, 2, 6]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        data.RandomSampler(range(3), num_samples=0)



def test_weighted_random_sampler_draws_and_errors_as_torchs():
    """torch.multinomial's rules: without replacement every positive weight is drawn before any zero one, and
    the counts over many draws follow the weights; bad weights raise torch's RuntimeError when iterated."""
    tnet.manual_seed(0)
    for _ in range(5):
        assert sorted(list(data.WeightedRandomSampler([0.0, 0.9, 0.0, 0.2], 3, replacement=False))[:2]) == [1, 3]
    firsts = collections.Counter(next(iter(data.WeightedRandomSampler([1.0, 3.0], 1, replacement=False)))
                                 for _ in range(2000))
    assert 0.72 < firsts[1] / 2000 < 0.78  # P(first = 1) = 3/4, as torch's successive draws
    drawn = collections.Counter(data.WeightedRandomSampler(tnet.tensor([1.0, 0.0, 3.0]), 4000))
    assert drawn[1] == 0 and 0.72 < drawn[2] / 4000 < 0.78
    for weights, n, replacement, match in [([0.1, 0.9], 5, False, "cannot sample n_sample"),
                                           ([-1.0, 2.0], 1, True, "element < 0"), ([np.nan, 1.0], 1, True, "nan"),
                                           ([0.0, 0.0], 1, True, "sum of probabilities <= 0")]:
        for lib in (tud, data):
            with pytest.raises(RuntimeError, match=match):
                list(lib.WeightedRandomSampler(weights, n, replacement))

def test_batch_size_none_converts_items_as_torch():
    """No batching: each item through default_convert (numpy into tensors; tuples into lists;
    Python numbers and strings kept; torch tensors, which torch keeps, into tnet Tensors)."""
    assert_loaders_agree(DataLoader(Samples(3), batch_size=None), tud.DataLoader(Samples(3), batch_size=None))


class Count:
    """An iterable data set: i, (i, i squared) for i < n."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return ((np.float32(i), [i, i * i]) for i in range(self.n))

    def __len__(self):
        return self.n


class OurCount(Count, data.IterableDataset):
    pass


class TorchCount(Count, tud.IterableDataset):
    pass


def test_iterable_dataset_batches_are_torchs():
    for batch_size, drop_last in ((3, False), (3, True), (None, False)):
        assert_loaders_agree(DataLoader(OurCount(7), batch_size, drop_last=drop_last),
                             tud.DataLoader(TorchCount(7), batch_size, drop_last=drop_last))
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(OurCount(7), shuffle=True)


def test_random_split_sizes_are_torchs():
    """Lengths as ints and as fractions (the remainder dealt round-robin): torch's sizes, disjoint
    subsets covering the data set, repeatable under tnet.manual_seed."""
    for lengths in ([3, 7], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25], [0.34, 0.33, 0.33]):
        tnet.manual_seed(1)
        parts = data.random_split(range(10), lengths)
        ref = tud.random_split(range(10), lengths)
        assert [len(p) for p in parts] == [len(r) for r in ref]
        assert sorted(i for p in parts for i in p) == list(range(10))
        tnet.manual_seed(1)
        assert [list(p) for p in data.random_split(range(10), lengths)] == [list(p) for p in parts]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        data.random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        data.random_split(range(10), [0.5, -0.5, 1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        data.random_split(range(2), [0.9, 0.1])


def test_concat_and_subset():
    a, b = TensorDataset(np.arange(3)), TensorDataset(np.arange(10, 14))
    both = a + b
    assert isinstance(both, data.ConcatDataset) and len(both) == 7
    assert [int(both[i][0]) for i in range(-7, 7)] == [0, 1, 2, 10, 11, 12, 13] * 2
    with pytest.raises(ValueError, match="should not exceed dataset length"):
        both[-8]
    (batch,) = next(iter(DataLoader(both, 7)))
    assert batch.tolist() == [0, 1, 2, 10, 11, 12, 13]
    assert data.Subset(Samples(5), [4, 1])[1]["label"] == 1
    for lib in (data, tud):  # torch's asserts
        with pytest.raises(AssertionError, match="^datasets should not be an empty iterable$"):
            lib.ConcatDataset([])
        with pytest.raises(AssertionError, match="^ConcatDataset does not support IterableDataset$"):
            lib.ConcatDataset([type("Stream", (lib.IterableDataset,), {"__iter__": lambda self: iter(())})()])


def test_worker_options_are_accepted_and_loading_stays_here():
    """The worker options change nothing but worker_init_fn's call (below); the porting idiom
    `x, y = x.to(device), y.to(device)` works on tnet's device."""
    calls = []
    dataset = TensorDataset(np.arange(10.0).reshape(5, 2), np.arange(5))
    loader = DataLoader(dataset, 2, False, None, None, 2, None, True, False, 5.0, calls.append, None, None,
                        prefetch_factor=4, persistent_workers=True, pin_memory_device="cuda", in_order=False)
    assert loader.num_workers == 2 and loader.pin_memory and loader.timeout == 5.0
    assert data.get_worker_info() is None
    device = tnet.device("cuda" if tnet.cuda.is_available() else "cpu")
    for (x, y), (rx, ry) in zip(loader, tud.DataLoader(tud.TensorDataset(*map(torch.from_numpy, (
            np.arange(10.0).reshape(5, 2), np.arange(5)))), 2)):
        x, y = x.to(device), y.to(device)
        assert_same([x, y], [rx, ry])
    list(loader)
    assert calls == [0]  # persistent workers: initialised once


def test_worker_init_fn_runs_as_one_workers():
    """With num_workers > 0, worker_init_fn(0) runs at each iteration's start, get_worker_info()
    giving worker 0 of 1 and the data set there and in __getitem__ (an HDF5-style data set opened by
    worker_init_fn works); the random states a seed_worker resets (Python's, numpy's, tnet's) are the
    main process's again after it, as a worker's are its own; num_workers=0 calls nothing."""
    import random

    class Lazy(data.Dataset):
        def __init__(self):
            self.file, self.seen = None, []

        def __len__(self):
            return 4

        def __getitem__(self, i):
            self.seen.append(data.get_worker_info().id)
            return self.file[i]

    def open_file(worker_id):
        info = data.get_worker_info()
        assert worker_id == info.id == 0 and info.num_workers == 1
        info.dataset.file = np.arange(4.0) * 10
        random.seed(worker_id), np.random.seed(tnet.initial_seed() % 2**32), tnet.manual_seed(123)

    dataset = Lazy()
    loader = DataLoader(dataset, batch_size=2, num_workers=3, worker_init_fn=open_file)
    tnet.manual_seed(0), random.seed(5), np.random.seed(5)
    states = random.getstate(), np.random.get_state()[1].copy(), tnet.get_rng_state().tolist()
    assert [b.tolist() for b in loader] == [[0.0, 10.0], [20.0, 30.0]] and dataset.seen == [0] * 4
    assert random.getstate() == states[0] and np.array_equal(np.random.get_state()[1], states[1])
    assert tnet.get_rng_state().tolist() == states[2] and tnet.initial_seed() == 0
    assert data.get_worker_info() is None
    with pytest.raises(AttributeError):  # no workers: no worker info (None.id), as torch's
        next(iter(DataLoader(dataset, batch_size=2, worker_init_fn=open_file)))


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(shuffle=True, sampler=[0, 1]), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_size=2, batch_sampler=[[0]]), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "mutually exclusive with drop_last"),
    (dict(batch_size=0), "batch_size should be a positive integer value"),
])
def test_errors_are_torchs(kwargs, match):
    for make, dataset in ((DataLoader, TensorDataset(np.arange(4))), (tud.DataLoader, tud.TensorDataset(torch.arange(4)))):
        with pytest.raises(ValueError, match=match):
            make(dataset, **kwargs)


def test_collate_errors_and_edges():
    """torch's errors; a read-only numpy array and a torch tensor that requires grad collate
    quietly into plain device data."""
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        data.default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        data.default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers"):
        data.default_collate([object()])
    with pytest.raises(TypeError, match="batch must contain"):
        data.default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):  # torch's assert
        TensorDataset(np.zeros(3), np.zeros(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a read-only array (np.load's memory maps) is copied, not warned about
        frozen = np.arange(4.0)
        frozen.flags.writeable = False
        assert data.default_collate([frozen, frozen]).shape == (2, 4)
    batch = data.default_collate([torch.ones(2, requires_grad=True)] * 3)
    assert batch.shape == (3, 2) and not batch.requires_grad and not batch.memory.requires_grad


@pytest.mark.parametrize("n, drop_last", [(10, False), (10, True), (2, False), (9, True)])
def test_distributed_sampler_as_torch(n, drop_last):
    """Each rank's share and length as torch's without shuffling; with shuffling, the ranks' shares of one epoch
    are a padded permutation, the same for a seed and epoch and new at set_epoch. The submodules import."""
    from tnet.utils.data.distributed import DistributedSampler
    from tnet.utils.data.dataloader import default_collate
    from tnet.utils.data.sampler import BatchSampler
    assert default_collate is data.default_collate and BatchSampler is data.BatchSampler
    dataset_module = importlib.import_module("tnet.utils.data.dataset")
    assert all(getattr(dataset_module, name) is getattr(data, name) for name in tud.dataset.__all__)
    for r in range(3):
        ours, ref = DistributedSampler(range(n), 3, r, shuffle=False, drop_last=drop_last), \
            tud.distributed.DistributedSampler(range(n), 3, r, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(ref) and len(ours) == len(ref)
    shares = [DistributedSampler(range(n), 3, r, seed=1, drop_last=drop_last) for r in range(3)]
    first = [list(s) for s in shares]
    drawn = sum(first, [])
    assert first == [list(s) for s in shares] and len(drawn) == 3 * len(shares[0])
    assert len(set(drawn)) == len(drawn) if drop_last else set(drawn) == set(range(n))
    shares[0].set_epoch(1)
    assert n < 3 or list(shares[0]) != first[0]
    loader = DataLoader(TensorDataset(tnet.arange(n)), batch_size=2, sampler=shares[1])
    assert [int(v) for (b,) in loader for v in b] == first[1]
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(range(n), 3, 3)
    for sampler in (DistributedSampler, tud.distributed.DistributedSampler):  # no process group: torch's ValueError
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            sampler(range(n))


def test_chain_and_stack_datasets_as_torch():
    def run(lib, count):
        d = lib.utils.data
        chain = d.ChainDataset([count(3), count(2)])
        added = count(2) + count(1)
        stack = d.StackDataset(list(range(3)), "abc")
        named = d.StackDataset(x=list(range(2)), y=[5, 6])
        errors = []
        for make in (lambda: d.StackDataset(), lambda: d.StackDataset([1], y=[2]), lambda: d.StackDataset([1], [1, 2])):
            with pytest.raises(ValueError) as info:
                make()
            errors.append(info.type)
        with pytest.raises(AssertionError):
            list(d.ChainDataset([count(1), [1, 2]]))
        return ([float(x) for x, _ in chain], len(chain), type(added).__name__, [float(x) for x, _ in added],
                [stack[i] for i in range(3)], len(stack), named[1], errors)
    assert run(tnet, OurCount) == run(torch, TorchCount)


def test_collate_fn_map_extension_as_torchs():
    """torch's documented way to extend default_collate: a custom type's collate function added to a copy of
    default_collate_fn_map and collate(batch, collate_fn_map=...) called with it; the nested dicts and tuples
    around it are collated by collate itself, the other leaves by the default functions."""
    results = []
    for lib in (tnet, torch):
        collate_module = importlib.import_module(lib.__name__ + ".utils.data._utils.collate")
        collate, default_collate_fn_map = collate_module.collate, collate_module.default_collate_fn_map

        class Box:
            def __init__(self, corners):
                self.corners = corners

        def collate_box_fn(batch, *, collate_fn_map=None):
            return lib.tensor([b.corners for b in batch], dtype=lib.float32) * 2

        custom_collate_fn_map = {Box: collate_box_fn}
        custom_collate_fn_map.update(default_collate_fn_map)
        batch = [{"box": Box([1, 2, 3, 4]), "image": np.full((2, 2), i, np.float32), "label": i,
                  "meta": ("a%d" % i, lib.tensor([i, i + 1]))} for i in range(3)]
        out = collate(batch, collate_fn_map=custom_collate_fn_map)
        results.append((out["box"].tolist(), out["image"].shape, out["label"].tolist(), out["meta"][0],
                        out["meta"][1].tolist(), type(out["meta"]).__name__))
        with pytest.raises(TypeError):
            collate([Box([1])], collate_fn_map=default_collate_fn_map)
        assert collate_module.default_collate([1, 2]).tolist() == [1, 2]
    assert results[0] == results[1]
