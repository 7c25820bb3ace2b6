"""The checks every op makes of its tensor arguments (and of its bool, int and number ones), which of
them need a gradient, numpy's argument names, the losses' deprecated reduction arguments, and `out=`."""
import builtins
import functools
import numbers
import warnings

import torch

from ..kernels.launch import DTYPE_NAMES, InputTypeError, check, check_type
from ..tensor import Tensor, is_grad_enabled


def needs_grad(*xs):
    """For each argument, whether it is a tnet.Tensor that requires a gradient."""
    return [isinstance(x, Tensor) and x._requires_grad for x in xs]


def legacy_reduction(size_average, reduce, reduction):
    """A loss's reduction from torch's deprecated size_average and reduce where either is given (both
    default True: 'mean'; reduce=False: 'none'; size_average=False: 'sum'), with torch's UserWarning;
    else reduction."""
    if size_average is None and reduce is None:
        return reduction
    size_average, reduce = size_average is None or size_average, reduce is None or reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=3)
    return reduction


def check_tensors(name, **xs):
    """Each keyword argument must be a tnet.Tensor (InputTypeError, torch's TypeError, naming the op and
    the argument)."""
    for arg, x in xs.items():
        if not isinstance(x, Tensor):  # no message closure per argument: every op calls this
            raise InputTypeError(f"{name}: {arg} must be a tnet.Tensor, got {type(x).__name__}")


_KINDS = {  # torch's argument parser: a bool is no int; a tensor passes for a number (its item), an integer one for an int
    "bool": lambda v: isinstance(v, bool),
    # type(v) is int/float first: the common case, without the ABCs' isinstance
    "int": lambda v: (type(v) is int or isinstance(v, numbers.Integral) and not isinstance(v, bool)
                      or isinstance(v, Tensor) and not v.is_floating_point()),
    "float": lambda v: type(v) is float or type(v) is int or isinstance(v, (numbers.Real, Tensor)),
    "str": lambda v: isinstance(v, str),
    # an int or a tuple or list of ints (a size, sizes, dims, split points), or an integer tensor (a 0-d one an int)
    "tuple of ints": lambda v: (_KINDS["int"](v) or isinstance(v, (tuple, list)) and builtins.all(_KINDS["int"](i) for i in v)),
    "Tensor": lambda v: v is None or isinstance(v, Tensor),  # an optional tensor argument
}


class _Absent:
    """The default of an argument whose None torch's parser refuses (median's and squeeze's dim): given
    None, check_args(..., "int") raises its TypeError; left out, the op reads this."""

    def __repr__(self):
        return "<absent>"


ABSENT = _Absent()


def check_args(name, kind, **args):
    """Each keyword argument must be of kind 'bool' (True or False), 'int' (an integer, not a bool),
    'float' (a real number), 'str', 'tuple of ints' (an int or a sequence of them) or 'Tensor' (a tnet.Tensor or
    None: torch's optional tensor); else torch's
    argument parser's TypeError (InputTypeError), which it raises before any check of the values:
    "name(): argument 'arg' must be bool, not str"."""
    ok = _KINDS[kind]
    for arg, v in args.items():
        if not ok(v):
            raise InputTypeError(f"{name}(): argument '{arg}' must be {kind}, not {type(v).__name__}")


NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}  # torch's argument parser takes numpy's names too


def numpy_names(fn):
    """fn taking numpy's `axis=` for `dim=` and `keepdims=` for `keepdim=`, as torch's functions do
    (SpinningUp's `logp.sum(axis=-1)`, makemore's `counts.sum(1, keepdims=True)`)."""
    @functools.wraps(fn)
    def op(*args, **kwargs):
        for numpy_name, name in NUMPY_NAMES.items():
            if numpy_name in kwargs:
                check_type(name not in kwargs, lambda: f"{fn.__name__}() got both {name}= and {numpy_name}=")
                kwargs[name] = kwargs.pop(numpy_name)
        return fn(*args, **kwargs)
    return op


def write_out(name, out, result, inputs):
    """torch's `out=` of an op that computed result from inputs (AdaBound's `torch.max(m, v, out=m)`): out a
    Tensor; under grad mode no input (nor out) requiring grad, since torch does not differentiate out= ops; result's
    dtype one that casts to out's; out resized where its shape differs (with torch's deprecation warning where out
    held elements); result written into out, which is returned."""
    if not isinstance(out, Tensor):
        raise InputTypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    check(not (is_grad_enabled() and any(needs_grad(*inputs, out))),
          lambda: f"{name}(): functions with out=... arguments don't support automatic differentiation, but one of "
                  f"the arguments requires grad.")
    check(torch.can_cast(result.dtype, out.dtype), lambda: f"result type {DTYPE_NAMES[result.dtype]} can't be cast to "
                                                           f"the desired output type {DTYPE_NAMES[out.dtype]}")
    if out.shape != result.shape:
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          f"deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          f"zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          f"elements with t.resize_(0).", UserWarning, stacklevel=3)
        out.resize_(result.shape)
    return out.copy_(result)


def taking_out(fn):
    """fn (a top-level function returning one tensor, whose torch twin takes `out=`) with torch's `out=`: fn's
    result written into out by write_out, the inputs checked being fn's tensor arguments and those in its list
    arguments (cat's, stack's). Only the top-level functions take it, as torch's Tensor methods do not."""
    @functools.wraps(fn)
    def op(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        if out is None:
            return result
        inputs = [x for a in (*args, *kwargs.values()) for x in (a if isinstance(a, (list, tuple)) else (a,))]
        return write_out(fn.__name__, out, result, inputs)
    return op
