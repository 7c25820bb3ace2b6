"""Whole-step capture: record a function's kernel launches once in a CUDA graph, then
replay them with one launch and no Python. The function must read its inputs from fixed
("static") tensors and do no host synchronisation; copy new data into those tensors
before each replay. torch.cuda.CUDAGraph only records and replays launches: no math."""
import copy
import functools
import gc
import warnings

import numpy as np
import torch

from .amp import autocast
from ._device import DEVICE
from .kernels.data import gather
from .kernels.launch import CaptureError  # noqa: F401 (tnet.graph.CaptureError: what capture raises)
from .kernels.pointwise import add_
from .kernels.softmax import count_correct
from .tensor import Tensor, memory_of, no_grad


class Graph:
    """g = Graph(fn); g() replays fn's launches. `fn` runs once eagerly first (so that
    every kernel is compiled and autotuned before the capture); pass `restore` to undo
    what that run changed (say, put back the weights). Without a GPU, g() just calls fn."""

    def __init__(self, fn, restore=None, warmup=1):
        self.fn, self.graph, self.result = fn, None, None
        if DEVICE.type != "cuda":
            return
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        if restore is not None:
            restore()
        # No garbage collection inside the capture: collecting an unreferenced earlier graph
        # there (a dead TrainStep's reference cycle) resets it, which a capturing stream does
        # not permit, and the capture fails (a train.py --runs process of many runs: see
        # docs/results.md). Those are collected first.
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.result = fn()
        finally:
            if was_enabled:
                gc.enable()

    def __call__(self):
        if self.graph is None:
            return self.fn()
        self.graph.replay()
        return self.result


def capture(fn=None, *, warmup=1, max_graphs=8):
    """A user's function captured in a CUDA graph, in the spirit of torch.compile(fn,
    mode="reduce-overhead"): `step = tnet.graph.capture(step)`, or `@tnet.graph.capture` on its
    definition. Each call runs fn once, with the same effects as an eager call:
    - the first `warmup` calls of each input signature (the tensors' shapes, dtypes and
      requires_grad; every other argument's value) run eagerly, compiling and autotuning the
      kernels;
    - the next one captures fn on static copies of the tensor arguments, then replays the graph
      (that first replay is the call's run);
    - later calls copy their tensors into those copies and replay: fn's Python does not run.
    The result is the captured one, the same tensors each replay, overwritten by the next call
    (clone what must outlive it); read it on the host after the call, never inside fn.

    fn must read its inputs only through its arguments and state on the device (a model, an
    optimizer: tnet's keep their step counts, learning rates and random state there), and must
    not read a device tensor on the host (.item(), float(), printing): that raises CaptureError
    at the capture, whose message names the read. A new signature gets its own graph; past
    `max_graphs` of them, fn runs eagerly, with one warning. Without a GPU every call runs fn."""
    if fn is None:  # @capture(warmup=2)
        return functools.partial(capture, warmup=warmup, max_graphs=max_graphs)
    return CapturedFunction(fn, warmup, max_graphs)


class CapturedFunction:
    """What tnet.graph.capture returns: fn, and a graph for each input signature it has captured."""

    def __init__(self, fn, warmup, max_graphs):
        functools.update_wrapper(self, fn)
        self.fn, self.warmup, self.max_graphs = fn, warmup, max_graphs
        self.graphs, self.calls, self.warned = {}, {}, False

    def __call__(self, *args):
        if DEVICE.type != "cuda":
            return self.fn(*args)
        key = _signature(args)
        graph = self.graphs.get(key)
        if graph is None:
            calls = self.calls[key] = self.calls.get(key, 0) + 1
            if calls <= self.warmup:
                return self.fn(*args)
            if len(self.graphs) >= self.max_graphs:
                if not self.warned:
                    warnings.warn(f"tnet.graph.capture: {self.__name__} has met {len(self.graphs) + 1} input "
                                  f"signatures; past max_graphs={self.max_graphs} it runs eagerly", stacklevel=2)
                    self.warned = True
                return self.fn(*args)
            graph = self.graphs[key] = _Captured(self.fn, args)
        return graph(args)


def _signature(args):
    """A call's key: each tensor argument's shape, dtype, device and requires_grad; every other
    argument's value (it must be hashable: it is fixed in the graph)."""
    key = []
    for i, a in enumerate(args):
        t = memory_of(a)
        if isinstance(t, torch.Tensor):
            key.append((type(a), tuple(t.shape), t.dtype, t.device, isinstance(a, Tensor) and a.requires_grad))
            continue
        try:
            hash(a)
        except TypeError:
            raise TypeError(f"tnet.graph.capture: argument {i} is a {type(a).__name__}; pass tensors, or hashable "
                            f"values (numbers, strings), which the graph fixes") from None
        key.append((type(a), a))
    return tuple(key)


class _Captured:
    """fn captured on static copies of the tensor arguments; calling it copies the new tensors in
    and replays. The capture records fn's launches without running them: the call that captures
    runs fn by its first replay, and only by it (one step, not two)."""

    def __init__(self, fn, args):
        self.static = [_static_copy(a) for a in args]
        try:
            self.graph = Graph(lambda: fn(*self.static), warmup=0)
        except RuntimeError as e:  # tnet's CaptureError, perhaps under the capture's end failing after it
            cause = e
            while cause is not None and not isinstance(cause, CaptureError):
                cause = cause.__context__
            if cause is not None:
                raise cause from None
            raise CaptureError(f"tnet.graph.capture: {getattr(fn, '__name__', 'the function')} cannot be captured "
                               f"in a CUDA graph: {str(e).splitlines()[0]}") from e

    def __call__(self, args):
        for static, a in zip(self.static, args):
            src = memory_of(a)
            dst = memory_of(static)
            if isinstance(dst, torch.Tensor) and src is not dst:
                dst.copy_(src)
        self.graph.graph.replay()
        return self.graph.result


def _static_copy(a):
    if isinstance(a, Tensor):
        copy = Tensor(a.memory.clone())
        copy.requires_grad = a.requires_grad
        return copy
    return a.clone() if isinstance(a, torch.Tensor) else a


class _Static:
    """A captured function of a batch (x, y): calling it copies a batch of the captured shape
    into the static buffers self.x and self.y (unless it is already there: see
    `Loader.batches(out=...)`) and replays; a batch of another shape (a short last one) runs
    eagerly."""

    def __init__(self, fn, x, y, restore=None):
        self.fn, self.x, self.y = fn, x.clone(), y.clone()
        self.graph = Graph(lambda: fn(self.x, self.y), restore)

    def __call__(self, x, y):
        if x.shape != self.x.shape:
            return self.fn(x, y)
        if x is not self.x:
            self.x.copy_(x)
        if y is not self.y:
            self.y.copy_(y)
        return self.graph()


class TrainStep(_Static):
    """A whole training step, step(x, y) -> loss (forward, backward, optimizer update, and
    whatever else it does: tnet.recipes.make_train_step builds one; the loss a one-element tnet
    or torch tensor), in one CUDA graph, for batches shaped like (x, y). state: the objects the step changes, each with state_dict and
    load_state_dict (say the model, the optimizer, a GradScaler, a Lookahead; None entries
    skipped): the eager run that compiles and autotunes the kernels is undone by loading their
    states back (weights and their 16-bit copies, the optimizer's buffers and step counts...);
    it makes the copies that layers read under autocast, so the captured step writes them at
    fixed addresses. The losses add up in self.loss_sum (a one-element fp32 tensor, `loss_sum`
    if given: two steps of one run can share it). The graph holds the gradients that were
    needed at capture: a parameter frozen later (requires_grad False) still gets its gradient
    from this graph; capture another TrainStep for the frozen phase."""

    def __init__(self, step, x, y, state=(), loss_sum=None):
        self.loss_sum = torch.zeros(1, device=x.device) if loss_sum is None else loss_sum
        saved = [(obj, copy.deepcopy(obj.state_dict())) for obj in state if obj is not None]  # snapshots

        def restore():
            for obj, obj_state in saved:
                obj.load_state_dict(obj_state)
            self.loss_sum.zero_()

        def counted(x, y):
            loss = step(x, y)
            add_(self.loss_sum, memory_of(loss).reshape(1))
            return loss
        super().__init__(counted, x, y, restore)


class EvalStep(_Static):
    """A captured forward pass that adds the number of correct predictions to self.correct;
    dtype: under tnet.autocast(dtype=dtype) (None: no autocast). Test-time augmentation: with
    flip=True the logits of each image and of its mirror image are averaged; with translate=True
    too (airbench's level 2), those two weigh 1/4 each, and the mirrored pairs of the image
    shifted by one pixel up-left and down-right (reflect padding) 1/8 each. The views of a batch
    are gathered into one batch for one forward pass."""

    def __init__(self, model, x, y, flip=False, dtype=None, translate=False):
        self.model, self.dtype = model, dtype
        self.views = tta_views(flip, translate)
        self.correct = torch.zeros((), dtype=torch.int32, device=x.device)
        self._gather = {}
        super().__init__(self._count, x, y, restore=self.correct.zero_)

    def _gather_args(self, n, device):
        """For a batch of n: the batch gather kernel's indices, shifts and flips that put the
        views of the batch one after another."""
        if n not in self._gather:
            k = len(self.views)
            shifts = np.repeat([[dy, dx] for dy, dx, _, _ in self.views], n, axis=0).astype(np.int32)
            flips = np.repeat([f for _, _, f, _ in self.views], n).astype(np.int32)
            self._gather[n] = [torch.from_numpy(a).to(device) for a in (np.tile(np.arange(n), k), shifts, flips)]
        return self._gather[n]

    def _count(self, x, y):
        with no_grad(), autocast(dtype=self.dtype, enabled=self.dtype is not None):
            if len(self.views) > 1:
                x, _ = gather(x, y, *self._gather_args(x.shape[0], x.device), padding_mode="reflect")
            # fp32 logits (a copy only under autocast): the views' sum and the argmax in fp32
            logits = self.model(Tensor(x)).float().memory
            count_correct(logits, y, self.correct, [w for *_, w in self.views])


def tta_views(flip=False, translate=False):
    """Test-time augmentation's views of an image: (dy, dx, mirrored, weight) as the batch
    gather kernel's shift and flip (see EvalStep)."""
    if translate and not flip:
        raise ValueError("EvalStep: translate=True needs flip=True (airbench's level 2 translates the mirrored pair)")
    if not flip:
        return [(0, 0, 0, 1.0)]
    pair = lambda dy, dx, w: [(dy, dx, 0, w), (dy, dx, 1, w)]
    if not translate:
        return pair(0, 0, 0.5)
    return pair(0, 0, 0.25) + pair(-1, -1, 0.125) + pair(1, 1, 0.125)
