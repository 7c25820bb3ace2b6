"""torch.jit's calls that training scripts and copied model definitions (torchvision's, timm's) make,
for tnet: tnet's kernels are Triton-compiled already, so script and trace return what they are given,
the decorators return the function, and code never runs scripted or traced (no TorchScript:
jit.save is not here)."""
import typing

import torch

from .nn import Module

Final = typing.Final  # torch.jit.Final is typing's: timm's `fused_attn: Final[bool]`


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    return func


class ScriptModule(Module):
    """torch.jit.ScriptModule, the legacy base of a module whose methods are marked @script_method
    (weiaicunzai's stochastic-depth ResNet block): here a plain Module, its methods run eagerly."""


def script_method(fn):
    return fn


def ignore(drop=False, **kwargs):
    return drop if callable(drop) else (lambda fn: fn)


unused = ignore


def export(fn):
    return fn


def _overload_method(func):
    """torchvision's DenseNet declares forward's typed overloads with it; the last `def` wins, as in eager torch."""
    return func


_overload = _overload_method


def is_scripting():
    return False


def is_tracing():
    return False


def annotate(the_type, the_value):
    """A typed None for TorchScript (`aux1 = torch.jit.annotate(Optional[Tensor], None)`): the value."""
    return the_value


def script_if_tracing(fn):
    """A decorator that scripts fn when tracing (torchvision's ops): fn itself."""
    return fn


def trace_module(mod, inputs, *args, **kwargs):
    return mod


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    return mod


def optimize_for_inference(mod, other_methods=None):
    return mod


Future = torch.futures.Future  # torch.jit.Future is torch.futures': a host object holding a value


def fork(func, *args, **kwargs):
    """func(*args, **kwargs) run now, its result in a completed Future (torch's runs it asynchronously under
    TorchScript; in eager torch, at once too)."""
    future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future):
    return future.wait()
