"""Caffe's SGD with momentum, and learning-rate schedules."""
import torch

from .kernels._autotune import check
from .kernels.elementwise import sgd_many_
from .tensor import _in_layout


class SGD:
    """Caffe's rule for every parameter p, with its lr_mult and decay_mult (default 1):
        h = momentum*h + lr*lr_mult*(g + weight_decay*decay_mult*p);  p -= h
    params: an iterable of parameters, or of dicts {"params": [...], "lr": ..., ...}."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        params = list(params)
        check(len(params) > 0, "SGD: got no parameters")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay}
        self.param_groups = [{**defaults, **g, "params": list(g["params"])} for g in groups]
        self.state = {}
        for group in self.param_groups:
            for p in group["params"]:
                check(p.requires_grad, "SGD: a parameter does not require grad")
                self.state[id(p)] = torch.zeros_like(p.data)
            # The kernel reads lr from the device, so a captured step (tnet.graph) follows
            # the schedule: update_lr() writes it there outside the graph.
            group["_lr_device"] = (None, torch.empty(1, device=group["params"][0].data.device))
        self.update_lr()

    def update_lr(self):
        """Copy each group's lr to the device where it changed."""
        for group in self.param_groups:
            value, t = group["_lr_device"]
            if value != group["lr"]:
                t.fill_(group["lr"])
                group["_lr_device"] = (group["lr"], t)

    def step(self):
        """Update every parameter that has a gradient, in one kernel launch. A gradient set by
        hand in another memory layout than its parameter's is copied into that layout."""
        self.update_lr()
        sgd_many_([(p.data, _in_layout(p.grad.data, p.data), self.state[id(p)], group["_lr_device"][1],
                    group["momentum"], group["weight_decay"], getattr(p, "lr_mult", 1.0), getattr(p, "decay_mult", 1.0))
                   for group in self.param_groups for p in group["params"] if p.grad is not None])

    def zero_grad(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def state_dict(self):
        """Momentum buffers as numpy arrays, in parameter order, and each group's lr."""
        return {"momentum": [self.state[id(p)].cpu().numpy() for g in self.param_groups for p in g["params"]],
                "lr": [g["lr"] for g in self.param_groups]}

    def load_state_dict(self, state):
        params = [p for g in self.param_groups for p in g["params"]]
        check(len(state["momentum"]) == len(params),
              f"SGD.load_state_dict: {len(state['momentum'])} buffers for {len(params)} parameters")
        for p, h in zip(params, state["momentum"]):
            check(tuple(h.shape) == p.shape, f"SGD.load_state_dict: buffer {tuple(h.shape)} for parameter {p.shape}")
            self.state[id(p)].copy_(torch.from_numpy(h))
        for g, lr in zip(self.param_groups, state["lr"]):
            g["lr"] = lr
        self.update_lr()


class LambdaLR:
    """lr = base_lr * factor(iteration); call step() once per iteration, after optimizer.step()."""

    def __init__(self, optimizer, factor):
        self.optimizer, self.factor, self.iteration = optimizer, factor, 0
        self.base_lrs = [g["lr"] for g in optimizer.param_groups]
        self._apply()

    def _apply(self):
        for g, base in zip(self.optimizer.param_groups, self.base_lrs):
            g["lr"] = base * self.factor(self.iteration)
        self.optimizer.update_lr()

    def step(self):
        self.iteration += 1
        self._apply()

    def state_dict(self):
        return {"iteration": self.iteration}

    def load_state_dict(self, state):
        self.iteration = state["iteration"]
        self._apply()


def caffe_quick(total_iterations):
    """Caffe's quick recipe scaled to any length: the base rate, then a tenth of it for the
    last fifth (4,000 + 1,000 iterations in Caffe's own example)."""
    switch = round(total_iterations * 0.8)
    return lambda it: 1.0 if it < switch else 0.1


def one_cycle(total_iterations, warmup_fraction=0.15):
    """Linear warm-up from 0 to the base rate over the first warmup_fraction of the
    iterations, then a linear decay to 0 at the end."""
    warmup = max(1, round(total_iterations * warmup_fraction))
    return lambda it: (it + 1) / warmup if it < warmup else max(0.0, (total_iterations - it) / (total_iterations - warmup))
