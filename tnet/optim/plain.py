"""torch.optim's Rprop, ASGD, Adafactor and SparseAdam, written as torch writes them: subclasses of
the plain base (Optimizer without RULE) whose step() runs tnet's tensor ops under no_grad, one
parameter at a time, with state made at a parameter's first step. Where torch keeps a one-number
state as a 0-d tensor on the host (step; ASGD's eta and mu), tnet keeps a Python float: it is host
bookkeeping, and reading it costs no synchronisation. Each step reads on the host what torch's
reads (Adafactor's norms)."""
import math

import torch

from .. import functional as F
from ..factory import full_like, zeros, zeros_like
from ..tensor import enable_grad, no_grad
from . import Optimizer


def _closure_loss(closure):
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _check_lr(lr):
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


class Rprop(Optimizer):
    """torch.optim.Rprop's rule, for every parameter p with gradient g (-g if maximize):
        s = sign(g * prev);  step_size = clamp(step_size * (etaplus, etaminus, 1 where s >, <, = 0), *step_sizes)
        g = 0 where s < 0;  p = p - sign(g) * step_size;  prev = g
    step_size starts at lr. The state (step, prev, step_size) is torch's; step is a float."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable, "capturable": capturable})

    @no_grad()
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            low, high = group["step_sizes"]
            for p in (p for p in group["params"] if p.grad is not None):
                state = self.state[p]
                if not state:
                    state.update(step=0.0, prev=zeros_like(p), step_size=full_like(p, group["lr"]))
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                sign = (grad * state["prev"]).sign()
                factor = F.where(sign > 0, etaplus, F.where(sign < 0, full_like(sign, etaminus), 1.0))
                state["step_size"].mul_(factor).clamp_(low, high)
                grad = F.where(sign < 0, 0.0, grad)
                p.addcmul_(grad.sign(), state["step_size"], value=-1)
                state["prev"].copy_(grad)
        return loss


class ASGD(Optimizer):
    """torch.optim.ASGD's rule (averaged SGD), for every parameter p with gradient g (-g if
    maximize), at its step t:
        g = g + weight_decay*p;  p = p*(1 - lambd*eta) - eta*g
        ax = ax + mu*(p - ax)   (ax = p while mu is 1)
        eta = lr / (1 + lambd*lr*t)**alpha;  mu = 1 / max(1, t - t0)
    The state is torch's (step, eta, mu, ax); step, eta and mu are floats."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                                  "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    @no_grad()
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, lambd = group["lr"], group["lambd"]
            for p in (p for p in group["params"] if p.grad is not None):
                state = self.state[p]
                if not state:
                    state.update(step=0.0, eta=float(lr), mu=1.0, ax=zeros_like(p))
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                eta = state["eta"]
                p.mul_(1 - lambd * eta).add_(grad, alpha=-eta)
                if state["mu"] != 1:
                    state["ax"].add_((p - state["ax"]).mul_(state["mu"]))
                else:
                    state["ax"].copy_(p)
                step = state["step"]
                state["eta"] = lr / ((1 + lambd * lr * step) ** group["alpha"])
                state["mu"] = 1 / max(1, step - group["t0"])
        return loss


class Adafactor(Optimizer):
    """torch.optim.Adafactor's rule (torch 2.5's), for every parameter p with gradient g (-g if
    maximize), at its step t:
        beta2' = t**beta2_decay;  rho = min(lr, 1/sqrt(t));  alpha = max(eps2, rms(p)) * rho
        p = p*(1 - lr*weight_decay)
        matrices (the last two dimensions): row_var = lerp(row_var, mean(g^2, -1), beta2'),
            col_var = lerp(col_var, mean(g^2, -2), beta2'), v = row_var @ col_var / max(mean(row_var, -2), eps1)
        vectors: variance = lerp(variance, g^2, beta2'), v = variance
        u = g / sqrt(max(v, eps1^2));  p = p - alpha / max(1, rms(u)/d) * u
    eps1 None is the parameter dtype's eps (float32's in tnet: torch's float64 parameters get
    float64's). rms(p) and rms(u) are read on the host, as torch's."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                                  "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize})

    @no_grad()
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, (eps1, eps2) = group["lr"], group["eps"]
            for p in (p for p in group["params"] if p.grad is not None):
                grad = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if not state:
                    state["step"] = 0.0
                    if grad.dim() > 1:
                        state["row_var"] = zeros(*grad.shape[:-1], 1, device=p.device)
                        state["col_var"] = zeros(*grad.shape[:-2], 1, grad.shape[-1], device=p.device)
                    else:
                        state["variance"] = zeros_like(grad)
                e1 = torch.finfo(p.dtype).eps if eps1 is None else eps1
                state["step"] += 1
                t = state["step"]
                beta2 = t ** group["beta2_decay"]
                alpha = max(eps2, p.norm(2).item() / math.sqrt(p.numel())) * min(lr, 1 / math.sqrt(t))
                if group["weight_decay"] != 0:
                    p.mul_(1 - lr * group["weight_decay"])
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.shape[-1]), beta2)
                    col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.shape[-2]), beta2)
                    var = (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=e1))
                else:
                    state["variance"].lerp_(grad * grad, beta2)
                    var = state["variance"].clone()
                update = var.clamp_(min=e1 * e1).rsqrt_().mul_(grad)
                denom = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * group["d"]))
                p.add_(update, alpha=-alpha / denom)
        return loss


class SparseAdam(Optimizer):
    """torch.optim.SparseAdam's rule, for the entries present in the gradient g (-g if maximize):
        m = lerp(m, g, 1 - beta1);  v = lerp(v, g*g, 1 - beta2)
        p = p - lr*sqrt(1 - beta2**t)/(1 - beta1**t) * m/(sqrt(v) + eps)
    entries absent keep p, m and v. tnet has no sparse tensors: where torch raises for a dense
    gradient, tnet takes it as the sparse gradient of its rows (along dimension 0) that hold a
    nonzero, as nn.Embedding(sparse=True)'s gradient holds the rows looked up (a row looked up whose
    gradient is all zeros is taken as absent, where torch's would decay its moments). t, step in
    the state, is an int, as torch's."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})

    @no_grad()
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in (p for p in group["params"] if p.grad is not None):
                state = self.state[p]
                if not state:
                    state.update(step=0, exp_avg=zeros_like(p), exp_avg_sq=zeros_like(p))
                state["step"] += 1
                grad = -p.grad if group["maximize"] else p.grad
                rows = grad != 0
                if grad.dim() > 1:
                    rows = rows.flatten(1).any(dim=1).view(-1, *[1] * (grad.dim() - 1))
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.copy_(F.where(rows, m.lerp(grad, 1 - beta1), m))
                v.copy_(F.where(rows, v.lerp(grad * grad, 1 - beta2), v))
                t = state["step"]
                step_size = group["lr"] * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
                p.sub_(F.where(rows, m / (v.sqrt() + group["eps"]), 0.0).mul_(step_size))
        return loss
