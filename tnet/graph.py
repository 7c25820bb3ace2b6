"""Whole-step capture: record a function's kernel launches once in a CUDA graph, then
replay them with one launch and no Python. The function must read its inputs from fixed
("static") tensors and do no host synchronisation; copy new data into those tensors
before each replay. torch.cuda.CUDAGraph only records and replays launches: no math."""
import torch

from ._device import DEVICE


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
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.result = fn()

    def __call__(self):
        if self.graph is None:
            return self.fn()
        self.graph.replay()
        return self.result


def train_step(model, opt, x, y, loss_sum=None):
    """One SGD step of model on the batch (x, y) of torch tensors; adds the loss to loss_sum."""
    from . import functional as F
    from .kernels.elementwise import add_
    from .tensor import Tensor
    loss = F.cross_entropy(model(Tensor(x)), Tensor(y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss_sum is not None:
        add_(loss_sum, loss.data.reshape(1))
    return loss.data


class TrainStep:
    """A captured training step for batches shaped like (x, y): step(x, y) copies the batch
    into the graph's static buffers and replays forward, backward and the SGD update. The
    eager run that compiles and autotunes the kernels is undone (weights, momentum)."""

    def __init__(self, model, opt, x, y):
        self.x, self.y = x.clone(), y.clone()
        self.loss_sum = torch.zeros(1, device=x.device)
        weights, momentum = model.state_dict(), opt.state_dict()

        def restore():
            model.load_state_dict(weights)
            opt.load_state_dict(momentum)
            self.loss_sum.zero_()
        self.graph = Graph(lambda: train_step(model, opt, self.x, self.y, self.loss_sum), restore)

    def __call__(self, x, y):
        self.x.copy_(x)
        self.y.copy_(y)
        return self.graph()


class EvalStep:
    """A captured forward pass that adds the number of correct predictions to self.correct."""

    def __init__(self, model, x, y):
        from .kernels.softmax import count_correct
        from .tensor import Tensor, no_grad
        self.x, self.y = x.clone(), y.clone()
        self.correct = torch.zeros((), dtype=torch.int32, device=x.device)

        def forward():
            with no_grad():
                count_correct(model(Tensor(self.x)).data, self.y, self.correct)
        self.graph = Graph(forward, restore=self.correct.zero_)

    def __call__(self, x, y):
        self.x.copy_(x)
        self.y.copy_(y)
        self.graph()
