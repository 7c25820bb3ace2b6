"""torch.autograd's functions, custom Functions, and the names that old training scripts use."""
import warnings
from types import SimpleNamespace

from torch.autograd import profiler  # torch's profiler (instrumentation, no math): profiler.profile, record_function

from ..functional import isnan
from ..functional.copy import stack
from ..tensor import (Tensor, backward_checks, enable_grad, inference_mode, no_grad, queue_callback, run_backward,
                      set_grad_enabled)
from . import function, grad_mode, graph  # torch's submodules, for their import paths
from .function import Function, FunctionCtx, once_differentiable

__all__ = ["Function", "FunctionCtx", "Variable", "backward", "detect_anomaly", "enable_grad", "forward_ad", "function",
           "functional", "graph", "grad", "grad_mode", "inference_mode", "no_grad", "once_differentiable", "profiler", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
           "set_grad_enabled"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):  # torch's VariableMeta: every tensor is a Variable
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch.autograd.Variable (deprecated in torch): as torch's, a new leaf on the tensor's memory,
    cut from its history, that requires grad only where asked; the tensor given is left as it was
    (`Variable(x, requires_grad=True)` does not make x require grad, and `Variable(h)` of a
    recorded h is a detached leaf). A class, as torch's: old scripts ask isinstance(h, Variable), true of
    every tensor (type(h) is Tensor, never Variable). Variable._execution_engine.queue_callback(fn): fn runs once the
    backward under way has finished (DDP-style hooks queue their reductions there), as torch's."""
    _execution_engine = SimpleNamespace(queue_callback=queue_callback)

    def __new__(cls, tensor, requires_grad=False, volatile=False):
        out = tensor.detach()
        out.requires_grad = bool(requires_grad)
        return out


def _tensors(v):
    return (v,) if isinstance(v, Tensor) else tuple(v)


def _seeds(given, n):
    given = (None,) * n if given is None else _tensors(given) if isinstance(given, Tensor) else tuple(given)
    if len(given) != n:
        raise RuntimeError(f"grad_tensors has {len(given)} tensors, expected {n}")
    return given


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """torch.autograd.backward: the gradients of tensors (seeded by grad_tensors, ones for
    one-element tensors where None) accumulated into the leaves' .grad (only inputs', where given).
    grad_variables: grad_tensors' deprecated name, with torch's warning, in torch's place."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    tensors = _tensors(tensors)
    run_backward(tensors, _seeds(grad_tensors, len(tensors)), retain_graph, create_graph,
                 None if inputs is None else _tensors(inputs))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """torch.autograd.grad: the gradients of outputs (seeded by grad_outputs) with respect to inputs
    (leaves or not), as a tuple, without touching any .grad. An input that no path reaches raises,
    unless allow_unused (None in its place) or materialize_grads (zeros). only_inputs is ignored, as
    torch's (deprecated there). create_graph=True: the gradients are themselves on the tape (higher-order
    gradients, a gradient penalty) through the ops that give record() a graph function (the README's
    porting section lists them); any other op on the path raises NotImplementedError naming it.
    is_grads_batched: each grad_output's first dimension is a batch of seeds (see _grads_batched)."""
    outputs, inputs = _tensors(outputs), _tensors(inputs)
    if is_grads_batched:
        return _grads_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                              materialize_grads)
    for x in inputs:
        if not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    found = run_backward(outputs, _seeds(grad_outputs, len(outputs)), retain_graph, create_graph, inputs,
                         accumulate=False)
    out = []
    for i, (x, g) in enumerate(zip(inputs, found)):
        if g is None and materialize_grads:
            out.append(x.new_zeros(x.shape))
        elif g is None and not allow_unused:
            raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
        else:
            out.append(g if g is None or isinstance(g, Tensor) else Tensor(g))
    return tuple(out)


def _grads_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """grad with is_grads_batched=True: seed b of each output is its grad_output[b]; one backward per seed (torch
    vmaps them), the graph kept for the next, each input's B gradients stacked along a new first dimension (None
    for an unused input, where allow_unused)."""
    seeds = _seeds(grad_outputs, len(outputs))
    for i, (y, s) in enumerate(zip(outputs, seeds)):
        if s is None or tuple(s.shape[1:]) != tuple(y.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                f"output, but a mismatch was detected: grad_output[{i}] has a shape of "
                f"{None if s is None else tuple(s.shape)} and output[{i}] has a shape of {tuple(y.shape)}.")
    n = seeds[0].shape[0]
    if any(s.shape[0] != n for s in seeds):
        raise ValueError(f"autograd.grad: the grad_outputs' batch sizes {[s.shape[0] for s in seeds]} differ")
    rows = [grad(outputs, inputs, [s[b] for s in seeds], True if b < n - 1 else retain_graph, create_graph,
                 allow_unused=allow_unused, materialize_grads=materialize_grads) for b in range(n)]
    return tuple(None if column[0] is None else stack(column) for column in zip(*rows))


from . import functional  # noqa: E402  (it builds on grad)
from . import forward_ad  # noqa: E402  (it builds on grad)


_anomaly = [False, True]  # [enabled, check_nan], as set: is_anomaly_enabled() reports them


def _check_nan(node, grads):
    """Anomaly mode's check (torch's, with check_nan): RuntimeError where a backward node returned NaN in a
    gradient (torch tensors, or tnet Tensors under create_graph)."""
    for i, g in enumerate(grads):
        if g is not None and g.is_floating_point() and bool(isnan(g if isinstance(g, Tensor) else Tensor(g)).any()):
            raise RuntimeError(f"Function '{node.name().split('::')[-1]}' returned nan values in its {i}th output.")


def _set_anomaly(state):
    """The anomaly mode's [enabled, check_nan], and the backward's NaN check on or off with it."""
    _anomaly[:] = state
    if _check_nan in backward_checks:
        backward_checks.remove(_check_nan)
    if all(state):
        backward_checks.append(_check_nan)


def is_anomaly_enabled():
    """Whether anomaly detection was switched on (set_detect_anomaly, set_anomaly_enabled); with check_nan, the
    backward raises where a node returns NaN (_check_nan)."""
    return _anomaly[0]


def is_anomaly_check_nan_enabled():
    return _anomaly[1]


def set_anomaly_enabled(enabled, check_nan=True):
    """torch's switch: on with check_nan, each backward node's gradients are checked for NaN (a RuntimeError
    naming the node, as torch's); the forward's stack traces are not kept."""
    _set_anomaly([bool(enabled), bool(check_nan)])


class set_detect_anomaly:
    """torch's anomaly detection switch (as a call, block or decorator; set_anomaly_enabled), the previous
    state back at the block's end."""

    def __init__(self, mode=True, check_nan=True):
        self._previous = list(_anomaly)
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set_anomaly(self._previous)
        return False

    def __call__(self, fn):
        return fn


class detect_anomaly(set_detect_anomaly):
    """torch.autograd.detect_anomaly, a block or decorator that switches anomaly detection on while it
    runs (as set_detect_anomaly)."""

    def __init__(self, check_nan=True):
        self._check_nan = check_nan

    def __enter__(self):
        self._previous = list(_anomaly)
        set_anomaly_enabled(True, self._check_nan)
        return self

    def __call__(self, fn):
        def run(*args, **kwargs):
            with detect_anomaly(self._check_nan):
                return fn(*args, **kwargs)
        return run


_multithreading = [True]


def is_multithreading_enabled():
    """torch's switch of its backward's worker threads: recorded; tnet's backward runs in the calling thread."""
    return _multithreading[0]


class set_multithreading_enabled:
    """torch's context manager (or call) that switches the backward's threads: recorded (is_multithreading_enabled),
    the previous state back at the block's end."""

    def __init__(self, mode):
        self._previous = _multithreading[0]
        _multithreading[0] = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _multithreading[0] = self._previous
        return False


# torch.autograd's old submodules, for their import paths (`from torch.autograd.variable import Variable`)
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402
for _name, _names in (("variable", ["Variable"]), ("anomaly_mode", ["detect_anomaly", "set_detect_anomaly"])):
    _module = _types.ModuleType(f"{__name__}.{_name}", f"torch.autograd.{_name}'s {', '.join(_names)}")
    for _n in _names:
        setattr(_module, _n, globals()[_n])
    _sys.modules[_module.__name__] = _module
    globals()[_name] = _module
__all__ += ["is_multithreading_enabled", "set_multithreading_enabled", "variable", "anomaly_mode"]
# torch's own profiler, as tnet.autograd.profiler is (`from torch.autograd.profiler import record_function`)
_sys.modules[f"{__name__}.profiler"] = profiler
