"""torch.optim.optimizer's names, for scripts that write their own optimizer:
`from torch.optim.optimizer import Optimizer, required`, the step hooks of every optimizer, and the helpers that a
copy of one of torch's own optimizers imports (a modified adam.py or sgd.py: ParamsT, _use_grad_for_differentiable,
_get_value, _default_to_fused_or_foreach, ...), with torch's behaviour outside torch.compile (tnet has none)."""
import functools
from typing import Any, Iterable, TypeAlias

import torch
from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices, _get_fused_kernels_supported_devices

from . import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook, required
from ..tensor import Tensor, is_grad_enabled, set_grad_enabled

__all__ = ["Optimizer", "ParamsT", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook",
           "required"]

ParamsT: TypeAlias = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]
# the annotations torch's optimizer files import beside it
DeviceDict: TypeAlias = dict[torch.device | None, Tensor]
DeviceDtypeDict: TypeAlias = dict[tuple[torch.device, torch.dtype] | None, Tensor]
TensorListList: TypeAlias = list[list[Tensor | None]]


def _use_grad_for_differentiable(func):
    """A copied optimizer's step decorator: it runs with grad mode set to the optimizer's
    defaults["differentiable"] (normally off), then restores it."""
    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        prev_grad = is_grad_enabled()
        try:
            set_grad_enabled(self.defaults["differentiable"])
            return func(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev_grad)
    return _use_grad


def host_value(x):
    """A step count or hyperparameter as a Python number: x.item() of a tensor (a host read), x itself otherwise."""
    return x.item() if isinstance(x, Tensor) else x


_get_value = host_value  # torch's name


def _stack_if_compiling(x):
    return x  # torch stacks only under torch.compile


def _disable_dynamo_if_unsupported(single_tensor_fn=None):
    """A decorator of a copied optimizer's functional form; torch's changes only what torch.compile traces."""
    def wrapper(func):
        return func
    return wrapper


def _default_to_fused_or_foreach(params, differentiable, use_fused=False):
    """(fused, foreach) as torch picks them from the parameters' device type: neither where differentiable; fused
    where asked and every parameter is a floating tensor of a fused device type; else foreach where every parameter
    is on a foreach device type (a GPU; not the CPU). tnet has torch's _foreach_* functions but no _fused_* ones:
    a copy that takes its fused branch raises AttributeError there."""
    if differentiable:
        return False, False
    fused = use_fused and all(p is None or (isinstance(p, Tensor) and p.device.type in
                                            _get_fused_kernels_supported_devices() and p.is_floating_point())
                              for p in params)
    foreach = not fused and all(p is None or (isinstance(p, Tensor) and p.device.type in
                                              _get_foreach_kernels_supported_devices()) for p in params)
    return fused, foreach


def _device_dtype_check_for_fused(p, cuda_unsupported=False):
    devices = _get_fused_kernels_supported_devices()
    if cuda_unsupported:
        devices.remove("cuda")
    if not (p.device.type in devices and p.is_floating_point()):
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices: "
                           f"{devices} but {p.dtype} and {p.device.type}")


def _view_as_real(params, *state_and_grads):
    """torch's views complex parameters and their states as real; tnet has no complex tensors, so none changes."""


def _get_capturable_supported_devices(supports_xla=True):
    """The device types torch allows capturable=True on (a copied optimizer checks its parameters against them);
    tnet's GPU is "cuda"."""
    return ["cuda", "xpu", "hpu", "privateuseone", *(["xla"] if supports_xla else [])]


def _get_scalar_dtype(is_fused=None):
    """The dtype of a copied optimizer's step tensors: float32 (torch's float64 follows a float64 default dtype,
    which tnet does not have)."""
    return torch.float32


def _to_scalar(x):
    """A one-element hyperparameter tensor as a 0-d tensor; anything else as it is."""
    if isinstance(x, Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


# the argument descriptions torch's optimizers share in their docstrings, which a copied docstring formats in
_params_doc = ("params (iterable): iterable of parameters or named_parameters to optimize or iterable of dicts "
               "defining parameter groups.")
_foreach_doc = "foreach (bool, optional): whether the foreach implementation of the optimizer is used (default: None)."
_fused_doc = "fused (bool, optional): whether the fused implementation is used (default: None)."
_capturable_doc = "capturable (bool, optional): whether this instance is safe to capture in a graph (default: False)."
_differentiable_doc = ("differentiable (bool, optional): whether autograd should occur through the optimizer step "
                       "(default: False).")
_maximize_doc = ("maximize (bool, optional): maximize the objective with respect to the params, instead of minimizing "
                 "(default: False).")
