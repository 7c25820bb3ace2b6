"""Reductions (kernels/reduce.py): sum, mean, max and argmax over any axes, and mse_loss."""
import collections
import math
import numbers

import torch

from ..amp import is_autocast_enabled
from ..kernels import pointwise as _pw
from ..kernels import reduce as _reduce
from ..kernels.launch import InputError, InputIndexError, check, is_channels_last
from ..tensor import Tensor, record
from .copy import reshape
from .inputs import check_tensors
from .pointwise import pow, sub


def _dims(name, input, dim):
    """dim (None, an int or a sequence of ints; negative ones count from the end) as a sorted tuple of
    input's axes; None and () mean all of them, as in PyTorch's sum (a 0-d input has none)."""
    n = input.ndim
    dims = range(n) if dim is None else list(dim) if isinstance(dim, (tuple, list)) else [dim]
    out = []
    for d in dims:
        check(isinstance(d, numbers.Integral), f"{name}: dim must be an int or a tuple of ints, got {dim!r}")
        low, high = (-n, n - 1) if n else (-1, 0)
        check(low <= d <= high, f"{name}: dimension out of range (expected to be in range of [{low}, {high}], but got {d})")
        if not n:
            continue
        d %= n
        check(d not in out, f"{name}: dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out)) if out else tuple(range(n))


def _dense(x):
    """x's storage, copied contiguous if it has gaps (a slice): the reductions read dense memory."""
    return x.data if _reduce.is_dense(x.data) else x.data.contiguous()


def _shape(shape, dims, keepdim):
    return tuple(1 if d in dims else s for d, s in enumerate(shape) if keepdim or d not in dims)


def sum_or_mean(name, input, dim, keepdim, mean):
    check_tensors(name, input=input)
    dims = _dims(name, input, dim)
    if input.numel() == 0:  # torch's values for no elements: sums 0, means nan (0 / 0); gradients of no elements
        out = torch.full(_shape(input.shape, dims, keepdim), math.nan if mean else 0.0, dtype=input.dtype,
                         device=input.device)
        return record(name, out, (input,), lambda g: (torch.zeros_like(input.data),))
    X, shape = _dense(input), input.shape
    count = math.prod(shape[d] for d in dims) if mean else 1
    y = _reduce.reduce(X, dims, divisor=count)
    cl = is_channels_last(X)

    def backward(g):  # g spread back over the reduced axes (and divided by the count: mean)
        return (_pw.pointwise("div", g.reshape(y.shape).expand(shape), float(count), channels_last=cl),)
    return record(name, y.reshape(_shape(shape, dims, keepdim)), (input,), backward)


def sum(input, dim=None, keepdim=False):
    """The sum over dim (None: all axes; an int or a tuple), accumulated in fp32."""
    return sum_or_mean("sum", input, dim, keepdim, mean=False)


def mean(input, dim=None, keepdim=False):
    """The mean over dim (None: all axes; an int or a tuple), accumulated in fp32."""
    return sum_or_mean("mean", input, dim, keepdim, mean=True)


max_result = collections.namedtuple("max", ["values", "indices"])


def _max_dims(name, input, dim):
    """The checks of max and argmax, as torch's: returns dim's one axis as a tuple, () for dim None.
    No elements: dim must be given (RuntimeError for max, IndexError for argmax, as torch) and
    name an axis of nonzero size (IndexError); the other axes may be empty."""
    check_tensors(name, input=input)
    check(dim is None or isinstance(dim, numbers.Integral),
          f"{name}: dim must be an int or None, got {dim!r}" +
          (" (an elementwise max of two tensors is not supported)" if name == "max" else ""))
    if dim is None:
        if input.numel() == 0:
            if name == "argmax":
                raise InputIndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
            raise InputError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                             "Specify the reduction dim with the 'dim' argument.")
        return ()
    d = _dims(name, input, dim)
    if input.ndim and input.shape[d[0]] == 0:
        raise InputIndexError(f"{name}(): Expected reduction dim {d[0]} to have non-zero size.")
    return d


def max(input, dim=None, keepdim=False):
    """dim None: the largest element (a 0-d tensor; its gradient is shared by the elements equal to
    it, as in PyTorch). An int dim: max_result(values, indices) along dim, the indices (int64) of
    the first maximum; the gradient goes to those. NaN counts as the largest, as in PyTorch.
    A dim of size 0 is an error, other empty axes give empty results, as torch's."""
    d = _max_dims("max", input, dim)
    if dim is not None and input.ndim == 0:  # torch takes dim 0 (or -1) of a 0-d input: itself, index 0
        return max(reshape(input, 1), 0)
    X, shape, cl = _dense(input), input.shape, is_channels_last(input.data)
    if dim is None:
        y, _ = _reduce.reduce(X, tuple(range(input.ndim)), "max")

        def share(g):
            ties = _pw.pointwise("eq", X, y)
            return (_pw.pointwise("muldiv", ties, g.reshape(y.shape), _reduce.reduce(ties, tuple(range(input.ndim)))),)
        return record("max", y.reshape(()), (input,), share, saved=(X, y))
    out = _shape(shape, d, keepdim)
    if input.numel() == 0:  # a kept axis of size 0: nothing to reduce
        y = torch.empty(out, device=input.device, dtype=input.dtype)
        indices = torch.empty(out, device=input.device, dtype=torch.int64)
        return max_result(record("max", y, (input,), lambda g: (torch.zeros_like(input.data),)), Tensor(indices))
    y, indices = _reduce.reduce(X, d, "max")

    def backward(g):
        return (_pw.route(g.reshape(y.shape), indices, shape, d[0], channels_last=cl),)
    return max_result(record("max", y.reshape(out), (input,), backward, saved=(indices,)), Tensor(indices.reshape(out)))


def argmax(input, dim=None, keepdim=False):
    """The int64 index of the first maximum along dim, or (dim None) in the flattened input. A dim
    of size 0 is an error, other empty axes give an empty result, as torch's."""
    d = _max_dims("argmax", input, dim)
    if dim is None:  # flat indices count in row-major order: a contiguous copy if need be
        _, indices = _reduce.reduce(input.data.contiguous().reshape(-1), (0,), "max")
        return Tensor(indices.reshape((1,) * input.ndim if keepdim else ()))
    if input.ndim == 0 or input.numel() == 0:  # a 0-d input's index is 0; a kept axis of size 0: empty
        return Tensor(torch.zeros(_shape(input.shape, d, keepdim), device=input.device, dtype=torch.int64))
    _, indices = _reduce.reduce(_dense(input), d, "max")
    return Tensor(indices.reshape(_shape(input.shape, d, keepdim)))


def mse_loss(input, target, reduction="mean"):
    """(input - target) ** 2, broadcasting, averaged ('mean'), summed ('sum') or kept ('none');
    under tnet.autocast on fp32 copies of 16-bit operands, as torch's autocast."""
    check_tensors("mse_loss", input=input, target=target)
    check(reduction in ("mean", "sum", "none"), f"mse_loss: {reduction!r} is not a valid value for reduction")
    if is_autocast_enabled():
        input, target = input.float(), target.float()
    loss = pow(sub(input, target), 2)
    return loss if reduction == "none" else sum_or_mean("mse_loss", loss, None, False, mean=reduction == "mean")
