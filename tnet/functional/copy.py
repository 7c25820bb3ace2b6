"""Shapes, views, casts and indexing, as torch's (kernels/copy.py copies). Views share the
input's memory; each backward hands back its gradient in the input's layout."""
import numpy as np
import torch

from ..kernels.copy import copy_
from ..tensor import Tensor, dim_index, empty_in_layout, in_layout, record
from .inputs import check_tensors


def getitem(x, index):
    """x[index], basic indexing only (ints, slices with step > 0, None, Ellipsis): a view of the
    same memory. The backward writes g through the same view of a zeroed gradient."""
    index = _basic_index(index)
    y = x.data[index]

    def backward(g):
        gx = empty_in_layout(x.data).zero_()
        copy_(gx[index], g)
        return (gx,)
    return record("getitem", y, (x,), backward)


def _basic_index(index):
    """index as a tuple, checked to hold only what basic indexing takes."""
    def is_int(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)  # a bool index is advanced
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if item is None or item is Ellipsis or is_int(item):
            continue
        if not isinstance(item, slice):
            raise TypeError(f"tnet.Tensor indexing: only basic slicing is supported (ints, slices, None, ...), "
                            f"got a {type(item).__name__}; advanced indexing (tensors, lists, bools) is not")
        if not all(v is None or is_int(v) for v in (item.start, item.stop, item.step)):
            raise TypeError(f"tnet.Tensor indexing: slice bounds must be ints or None, got {item}")
        if item.step is not None and item.step <= 0:
            raise ValueError(f"tnet.Tensor indexing: step must be greater than zero, got {item}")
    return items


def _shape_args(shape):
    """view(2, 3) and view((2, 3)) alike."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def view(x, *shape):
    """The same memory under another shape; RuntimeError (torch's) where the strides do not
    allow it: use reshape."""
    y = x.data.view(_shape_args(shape))
    return record("view", y, (x,), lambda g: (in_layout(g.reshape(x.shape), x.data),))


def reshape(x, *shape):
    """A view when the memory allows (torch's reshape; a copy otherwise)."""
    check_tensors("reshape", x=x)
    shape = _shape_args(shape)
    try:
        y = x.data.reshape(shape)
    except RuntimeError as e:
        raise ValueError(f"reshape: cannot view {x.shape} as {shape}: {e}") from None
    return record("reshape", y, (x,), lambda g: (g.reshape(x.shape),))


def t(x):
    """The transpose of a tensor of at most 2 dims (a view)."""
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return record("t", x.data.t(), (x,), lambda g: (in_layout(g.t(), x.data),))


def flatten(x, start_dim=0, end_dim=-1):
    """Dims start_dim..end_dim as one: a view where the memory allows (torch's reshape rule)."""
    shape = x.shape or (1,)
    start, end = dim_index(start_dim, len(shape)), dim_index(end_dim, len(shape))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    return reshape(x, *shape[:start], int(np.prod(shape[start:end + 1])), *shape[end + 1:])


def contiguous(x):
    """x when contiguous, else a contiguous copy (on the tape)."""
    if x.data.is_contiguous():
        return x
    return record("contiguous", x.data.contiguous(), (x,), lambda g: (in_layout(g, x.data),))


def to(x, *args, **kwargs):
    """to(dtype), to(device), to(device, dtype) (with keywords too): tnet has one device, so
    only the dtype may change. A cast makes a fresh tensor (x when the dtype is already that, as
    torch); casts between float dtypes are on the tape (the gradient casts back)."""
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to: unexpected arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, torch.dtype):
            dtype = arg
        else:
            device = arg
    if device is not None and torch.device(device).type != x.device.type:
        raise ValueError(f"to: tnet keeps tensors on {x.device}, got device {device}")
    if dtype is None or dtype == x.dtype:
        return x
    y = copy_(torch.empty_like(x.data, dtype=dtype), x.data)
    if not y.is_floating_point():
        return Tensor(y)  # no gradient flows through an integer tensor (torch's rule)
    return record("to", y, (x,), lambda g: (copy_(empty_in_layout(x.data), g),))
