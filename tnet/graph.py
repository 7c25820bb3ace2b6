"""Whole-step capture: record a function's kernel launches once in a CUDA graph, then
replay them with one launch and no Python. The function must read its inputs from fixed
("static") tensors and do no host synchronisation; copy new data into those tensors
before each replay. torch.cuda.CUDAGraph only records and replays launches: no math."""
import gc

import numpy as np
import torch

from .amp import autocast
from ._device import DEVICE
from .kernels.data import gather
from .kernels.pointwise import add_
from .kernels.softmax import count_correct
from .tensor import Tensor, no_grad


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
        saved = [(obj, obj.state_dict()) for obj in state if obj is not None]

        def restore():
            for obj, obj_state in saved:
                obj.load_state_dict(obj_state)
            self.loss_sum.zero_()

        def counted(x, y):
            loss = step(x, y)
            add_(self.loss_sum, loss.data.reshape(1))
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
            logits = self.model(Tensor(x)).float().data
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
