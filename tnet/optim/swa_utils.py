"""torch.optim.swa_utils: stochastic weight averaging and exponential moving averages of a model
(AveragedModel and the averaging functions), the SWALR schedule and update_bn, with torch's
arguments and semantics. The averages are tnet's ops under no_grad (the multi-tensor forms loop
over the tensors, tnet.functional.foreach); n_averaged is read on the host once per update, as
torch reads it."""
import copy
import math

import torch

from .. import nn
from ..functional import foreach
from ..tensor import Tensor, no_grad, tensor
from .lr_scheduler import LRScheduler, per_group

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """fn(ema_params, current_params, n_averaged): ema = decay * ema + (1 - decay) * current, in
    place (lerp_ for float tensors, as torch's)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            if ema_param_list[0].is_floating_point():
                foreach.lerp_(ema_param_list, current_param_list, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """fn(averaged_params, current_params, n_averaged): the running mean, in place: averaged +=
    (current - averaged) / (n_averaged + 1) (lerp_ for float tensors, as torch's)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            if averaged_param_list[0].is_floating_point():
                weight = 1 / (num_averaged + 1)
                foreach.lerp_(averaged_param_list, current_param_list,
                              float(weight) if isinstance(weight, Tensor) else weight)
            else:
                diffs = foreach.sub(current_param_list, averaged_param_list)
                if isinstance(num_averaged, Tensor):
                    foreach.addcdiv_(averaged_param_list, diffs, [num_averaged + 1] * len(averaged_param_list))
                else:
                    foreach.add_(averaged_param_list, diffs, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """fn(ema_param, current_param, n_averaged) -> decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """fn(averaged_param, current_param, n_averaged) -> averaged + (current - averaged) / (n_averaged + 1)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(nn.Module):
    """A running average of a model's parameters (SWA by default, EMA with get_ema_multi_avg_fn):
    .module is a deep copy of model, and update_parameters(model) averages model's current
    parameters (and, with use_buffers, its buffers) into it; the first call copies them. n_averaged
    (an int64 buffer) counts the updates. Without use_buffers the buffers are copied from model at
    each update. avg_fn(averaged, current, n) returns one tensor's new average; multi_avg_fn(averaged
    list, current list, n) updates lists in place (per dtype); not both. state_dict: "n_averaged"
    and "module.*", as torch's. forward calls module. device: tnet's device only (a no-op).
    The default average is torch's multi-tensor one on the GPU: lerp_ by 1 / (n + 1) for float
    tensors; integer buffers (use_buffers) take averaged + (current - averaged) / (n + 1)
    truncated, as torch's single-tensor form."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.register_buffer("n_averaged", tensor(0, dtype=torch.int64))
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged(self, model):
        """(this copy's tensors, model's) that update_parameters averages, detached, in order."""
        if self.use_buffers:
            mine, theirs = [*self.module.parameters(), *self.module.buffers()], [*model.parameters(), *model.buffers()]
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        return [(a.detach(), b.detach()) for a, b in zip(mine, theirs)]

    def update_parameters(self, model):
        """Average model's current parameters into this copy (copy them, at the first call)."""
        pairs = self._averaged(model)
        n = int(self.n_averaged.item())
        with no_grad():
            if n == 0:
                for mine, theirs in pairs:
                    mine.copy_(theirs)
            elif self.avg_fn is not None:
                for mine, theirs in pairs:
                    mine.copy_(self.avg_fn(mine, theirs, self.n_averaged))
            else:
                by_dtype = {}
                for mine, theirs in pairs:
                    by_dtype.setdefault(mine.dtype, []).append((mine, theirs))
                for group in by_dtype.values():
                    mine, theirs = [a for a, _ in group], [b for _, b in group]
                    if self.multi_avg_fn is not None:
                        self.multi_avg_fn(mine, theirs, self.n_averaged)
                    elif mine[0].is_floating_point():
                        get_swa_multi_avg_fn()(mine, theirs, n)
                    else:
                        swa = get_swa_avg_fn()
                        for a, b in group:
                            a.copy_(swa(a, b, n))
            if not self.use_buffers:  # the buffers follow the model's
                for mine, theirs in zip(self.module.buffers(), model.buffers()):
                    mine.detach().copy_(theirs.detach())
            self.n_averaged += 1


def update_bn(loader, model, device=None):
    """One pass of loader's batches (a tensor, or a list/tuple whose first element is) through
    model in training mode, to recompute its BatchNorm layers' running statistics from scratch:
    they are reset and averaged cumulatively (momentum None), then the momenta and the model's
    mode are put back, as torch's."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, nn.BATCH_NORMS):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to swa_lr (one for all groups, or a list) over anneal_epochs steps,
    by cosine ('cos') or linearly ('linear'), then hold it; the formulas are torch's, so the lrs
    are torch's to the bit. Each group records group["swa_lr"]."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self):
        """Every attribute but the optimizer and anneal_func, as torch's."""
        return {key: value for key, value in vars(self).items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        vars(self).update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
