"""Reductions (kernels/reduce.py): sum, mean, prod, max, min, argmax, argmin, amax, amin, any, all,
count_nonzero, logsumexp, var and std over any axes, and the element-wise losses."""
import builtins
import math
import numbers

import torch

from .. import return_types
from ..amp import is_autocast_enabled
from ..factory import arange
from ..kernels import pointwise as _pw
from ..kernels import reduce as _reduce
from ..kernels import sort as _sort
from ..kernels.copy import check_count, copy_
from ..kernels.launch import (DTYPE_NAMES, FLOATS, InputError, InputIndexError, InputTypeError, capturing, check,
                              check_float, check_type, is_channels_last, raise_flagged)
from ..tensor import (Tensor, as_int, as_storage, dim_index, in_layout, is_grad_enabled, linear_graph, named, no_grad, record,
                      record_composed, tape_mark)
from .copy import broadcast_tensors, expand, reshape, shape_args, unsqueeze
from .inputs import check_args, check_tensors, legacy_reduction, numpy_names, write_out
from .pointwise import (abs, add, clamp, clamp_min, div, eq, exp, graph_sum_to, gt, isclose, isnan, lgamma, log,
                        logical_not, logical_or, logsigmoid, maximum, minimum, mul, ne, neg, pow, sigmoid, sign, softplus,
                        sub, where, xlogy)


def _dims(name, input, dim, keepdim=False):
    """dim (None, an int or a sequence of ints; negative ones count from the end) as a sorted tuple of
    input's axes; None and () mean all of them, as in PyTorch's sum (a 0-d input has none). A keepdim
    that is no bool raises torch's TypeError, before the dims' checks as torch's argument parser."""
    check_type(isinstance(keepdim, bool), lambda: f"{name}(): argument 'keepdim' must be bool, not {type(keepdim).__name__}")
    n = input.ndim
    if dim is None:  # the common case: all of them
        return tuple(range(n))
    dims = [as_int(d) for d in dim] if isinstance(dim, (tuple, list)) else [as_int(dim)]
    out = []
    for d in dims:
        if not isinstance(d, numbers.Integral):
            raise InputTypeError(f"{name}: dim must be an int or a tuple of ints, got {dim!r}")
        low, high = (-n, n - 1) if n else (-1, 0)
        if not low <= d <= high:
            raise InputIndexError(f"{name}: dimension out of range (expected to be in range of [{low}, {high}], "
                                  f"but got {d})")
        if not n:
            continue
        d %= n
        check(d not in out, lambda: f"{name}: dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out)) if out else tuple(range(n))


def _dense(x):
    """x's storage, copied contiguous if it has gaps (a slice): the reductions read dense memory."""
    memory = x.memory
    return memory if memory.is_contiguous() or _reduce.is_dense(memory) else memory.contiguous()


def _shape(shape, dims, keepdim):
    return tuple(1 if d in dims else s for d, s in enumerate(shape) if keepdim or d not in dims)


def sum_or_mean(name, input, dim, keepdim, mean):
    check_tensors(name, input=input)
    dims = _dims(name, input, dim, keepdim)
    # sum and mean given a dim (or keepdim) ran torch's dim overload, whose node is SumBackward1 (MeanBackward1)
    op = f"{name}_dim" if name in ("sum", "mean") and (dim is not None or keepdim) else name
    integer = _reduce.integer(input.memory)
    check(not (mean and integer), lambda: f"{name}(): could not infer output dtype. Input dtype must be either a "
                                          f"floating point or complex dtype. Got: {DTYPE_NAMES[input.dtype]}")
    if input.numel() == 0:  # torch's values for no elements: sums 0, means nan (0 / 0); gradients of no elements
        out = torch.full(_shape(input.shape, dims, keepdim), math.nan if mean else 0.0,
                         dtype=torch.int64 if integer else input.dtype, device=input.device)
        return record(op, out, (input,), lambda g: (torch.zeros_like(input.memory),),
                      graph=lambda g, y: (Tensor(torch.zeros_like(input.memory)),), saves_nothing=True)
    X, shape = _dense(input), input.shape
    count = math.prod(shape[d] for d in dims) if mean else 1
    y = _reduce.reduce(X, dims, divisor=count)
    cl = is_channels_last(X)

    def backward(g):  # g spread back over the reduced axes (and divided by the count: mean)
        return (_pw.pointwise("div", g.reshape(y.shape).expand(shape), float(count), channels_last=cl),)

    def graph(g, out):
        spread = expand(reshape(g, y.shape), shape)
        return (div(spread, float(count)) if mean else spread,)
    # the backward reads shapes only: a second backward may pass it, as torch's SumBackward/MeanBackward
    return record(op, y.reshape(_shape(shape, dims, keepdim)), (input,), backward, graph=graph, saves_nothing=True)


@numpy_names
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum over dim (None: all axes; an int or a tuple), accumulated in fp32; of integers or
    bools exactly, into int64 (as torch). dtype: the input cast to it first and the result of that
    dtype, as torch's."""
    y = sum_or_mean("sum", _cast_first(input, dtype), dim, keepdim, mean=False)
    return y if dtype is None or y.dtype == dtype else y.to(dtype)


@numpy_names
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over dim (None: all axes; an int or a tuple), accumulated in fp32. dtype: the input
    cast to it first, as torch's."""
    return sum_or_mean("mean", _cast_first(input, dtype), dim, keepdim, mean=True)


def _cast_first(input, dtype):
    if dtype is None:
        return input
    check_tensors("reduction", input=input)
    return input if dtype == input.dtype else input.to(dtype)


def _selection_graph(name, backward, dims, out_shape):
    """record's graph= of a reduction that sends g to chosen elements in fixed shares (max, min, amax,
    amin): those shares are backward(1), and the gradient's own gradient sums h times them over dims."""
    def adjoint(h):
        shares = backward(torch.ones(out_shape, device=h.device, dtype=h.dtype))[0]
        return _reduce.reduce(_pw.pointwise("mul", in_layout(h, shares), shares), dims).reshape(out_shape)
    return linear_graph(name, backward, adjoint)


max_result, min_result = return_types.max, return_types.min


def _max_dims(name, input, dim, keepdim=False):
    """The checks of max, min, argmax and argmin, as torch's: returns dim's one axis as a tuple, ()
    for dim None. No elements: dim must be given (RuntimeError for max and min, IndexError for
    argmax and argmin, as torch) and name an axis of nonzero size (IndexError); the other axes may
    be empty."""
    check_tensors(name, input=input)
    dim = as_int(dim)
    check_type(dim is None or isinstance(dim, numbers.Integral), lambda: f"{name}: dim must be an int or None, got {dim!r}")
    _dims(name, input, (), keepdim)  # keepdim's type first
    if dim is None:
        if input.numel() == 0:
            if name.startswith("arg"):
                raise InputIndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
            raise InputError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                             "Specify the reduction dim with the 'dim' argument.")
        return ()
    d = _dims(name, input, dim)
    if input.ndim and input.shape[d[0]] == 0:
        raise InputIndexError(f"{name}(): Expected reduction dim {d[0]} to have non-zero size.")
    return d


def tie_shared(name, input, y):
    """y, one of input's values (device memory), as a 0-d tensor whose gradient the elements equal to
    it share evenly (NaN matching NaN): torch's evenly_distribute_backward of max(), min(), median()."""
    X, dims = _dense(input), tuple(range(input.ndim))

    def share(g):
        ties = _pw.pointwise("tie", X, y)
        return (_pw.pointwise("muldiv", ties, g.reshape(y.shape), _reduce.reduce(ties, dims)),)
    return record(name, y.reshape(()), (input,), share, saved=(X, y), graph=_selection_graph(name, share, dims, ()))


def _max_or_min(name, input, dim, keepdim, result):
    """max and min: dim None, the extreme element (its gradient shared by the elements equal to it);
    an int dim, result(values, indices) of the first extreme along dim (the gradient goes to those)."""
    d = _max_dims(name, input, dim, keepdim)
    if dim is not None and input.ndim == 0:  # torch takes dim 0 (or -1) of a 0-d input: itself, index 0
        return _max_or_min(name, reshape(input, 1), 0, False, result)  # 0-d out, keepdim or not
    X, shape, cl = _dense(input), input.shape, is_channels_last(input.memory)
    if dim is None:
        return tie_shared(f"{name}_all", input, _reduce.reduce(X, tuple(range(input.ndim)), name)[0])
    out = _shape(shape, d, keepdim)
    if input.numel() == 0:  # a kept axis of size 0: nothing to reduce
        y = torch.empty(out, device=input.device, dtype=input.dtype)
        indices = torch.empty(out, device=input.device, dtype=torch.int64)
        return result(record(name, y, (input,), lambda g: (torch.zeros_like(input.memory),)), Tensor(indices))
    y, indices = _reduce.reduce(X, d, name)

    def backward(g):
        return (_pw.route(g.reshape(y.shape), indices, shape, d[0], channels_last=cl),)
    return result(record(name, y.reshape(out), (input,), backward, saved=(indices,),
                         graph=_selection_graph(name, backward, d, out)), Tensor(indices.reshape(out)))


_ABSENT = object()  # max's and min's dim and keepdim when not passed: an explicit None matches none of torch's overloads


def _overload(name, dim, keepdim):
    """max's and min's (dim, keepdim) as torch's overloads take them: (input), (input, other) or (input, dim,
    keepdim = False). A dim of None, or a keepdim without a dim, matches none: torch's parser's TypeError, before
    any check of the input (max of an empty tensor and None is that TypeError in torch, not the empty input's)."""
    if dim is None or (dim is _ABSENT and keepdim is not _ABSENT):
        got = ["Tensor"] + ([] if dim is _ABSENT else ["NoneType"]) + ([] if keepdim is _ABSENT else ["keepdim"])
        # InputTypeError: torch 2.13's parser raises TypeError, torch 2.11 (which reads a dim of None as a dimension
        # name) RuntimeError; it is both
        raise InputTypeError(f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), but "
                             f"expected one of: (Tensor input), (Tensor input, Tensor other), (Tensor input, int dim, "
                             f"bool keepdim = False)")
    return None if dim is _ABSENT else dim, False if keepdim is _ABSENT else keepdim


def _max_or_min_out(name, input, dim, keepdim, result, out):
    """max's and min's forms with `out=` (write_out): of the largest element, and of (input, other), which
    maximum's out= writes. The dim form's out=(values, indices) tnet does not take."""
    if out is None:
        return _max_or_min(name, input, *_overload(name, dim, keepdim), result)
    check(dim is _ABSENT, f"{name}: out= with a dim is not supported by tnet")
    return write_out(name, out, _max_or_min(name, input, *_overload(name, dim, keepdim), result), (input,))


@numpy_names
def max(input, dim=_ABSENT, keepdim=_ABSENT, *, out=None):
    """No dim: the largest element (a 0-d tensor; its gradient is shared by the elements equal to
    it, as in PyTorch). An int dim: max_result(values, indices) along dim, the indices (int64) of
    the first maximum; the gradient goes to those. A tensor in dim's place: maximum(input, other).
    NaN counts as the largest, as in PyTorch. A dim of size 0 is an error, other empty axes give
    empty results, as torch's. Integer and bool tensors compare exactly (in int64), keeping their
    dtype. out= as _max_or_min_out says."""
    if isinstance(dim, Tensor):
        return maximum(input, dim, out=out)
    return _max_or_min_out("max", input, dim, keepdim, max_result, out)


@numpy_names
def min(input, dim=_ABSENT, keepdim=_ABSENT, *, out=None):
    """As max, for the smallest: min(x), min(x, dim, keepdim) -> min_result(values, indices), and
    min(x, other) = minimum(x, other). NaN wins here too, as in PyTorch."""
    if isinstance(dim, Tensor):
        return minimum(input, dim, out=out)
    return _max_or_min_out("min", input, dim, keepdim, min_result, out)


def _arg(name, input, dim, keepdim):
    d = _max_dims(name, input, dim, keepdim)
    check(input.dtype != torch.bool, lambda: f"{name}(): does not support bool input")
    op = name[3:]
    if dim is None:  # flat indices count in row-major order: a contiguous copy if need be
        _, indices = _reduce.reduce(input.memory.contiguous().reshape(-1), (0,), op)
        return Tensor(indices.reshape((1,) * input.ndim if keepdim else ()))
    if input.ndim == 0 or input.numel() == 0:  # a 0-d input's index is 0; a kept axis of size 0: empty
        return Tensor(torch.zeros(_shape(input.shape, d, keepdim), device=input.device, dtype=torch.int64))
    _, indices = _reduce.reduce(_dense(input), d, op)
    return Tensor(indices.reshape(_shape(input.shape, d, keepdim)))


@numpy_names
def argmax(input, dim=None, keepdim=False):
    """The int64 index of the first maximum along dim, or (dim None) in the flattened input. A dim
    of size 0 is an error, other empty axes give an empty result, as torch's; so are bool inputs
    (integers compare exactly)."""
    return _arg("argmax", input, dim, keepdim)


@numpy_names
def argmin(input, dim=None, keepdim=False):
    """The int64 index of the first minimum (or NaN) along dim, or in the flattened input, as argmax."""
    return _arg("argmin", input, dim, keepdim)


@numpy_names
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product over dim (None: every element; an int), in fp32; of integers or bools exactly, in
    int64 (wrapping on overflow), as torch's. dtype: the input cast to it first. The gradient is
    torch's, zeros included: g times the product of the other elements of the slice (g * prod / x
    where the input holds no zero)."""
    check_tensors("prod", input=input)
    dim = as_int(dim)
    check_type(dim is None or isinstance(dim, numbers.Integral), lambda: f"prod: dim must be an int or None, got {dim!r}")
    if dtype is not None:
        input = input.to(dtype)
    dims = _dims("prod", input, dim, keepdim)
    X, out_shape = _dense(input), _shape(input.shape, dims, keepdim)
    if _reduce.integer(X):
        return Tensor(_reduce.reduce(X, dims, "prod").reshape(out_shape))
    y = _reduce.reduce(X, dims, "prod", dtype=torch.float32)  # fp32, as the backward reads it
    out = y if input.dtype == torch.float32 else copy_(torch.empty_like(y, dtype=input.dtype), y)

    def backward(g):
        if not input.ndim:  # torch's: a 0-d input's gradient is g (an infinite or NaN x too, where prod / x is NaN);
            # over a dim of size 1 the rule below holds: g * prod / x (NaN there) unless the input holds a zero
            return (copy_(torch.empty(X.shape, dtype=input.dtype, device=X.device), g.reshape(X.shape)),)
        # torch's rule, by the input's count of zeros (torch reads it on the host; here it selects on the device,
        # so that a captured step replays it): none, g * prod / x; prod() of two or more, 0 everywhere (beside a
        # NaN too); else the product of the slice's others
        zeros = _reduce.reduce(_pw.pointwise("eq", X, 0), tuple(range(X.ndim)))
        if dim is None:
            others = others_product(X.reshape(-1), 0).reshape(X.shape)
            others = _pw.pointwise("where", _pw.pointwise("gt", zeros, 1), 0.0, others)
        else:
            others = others_product(X, dims[0])
        factor = _pw.pointwise("where", _pw.pointwise("eq", zeros, 0), _pw.pointwise("div", y, X), others)
        return (_pw.pointwise("mul", factor, g.reshape(y.shape), dtype=input.dtype),)
    return record("prod" if dim is None else "prod_dim", out.reshape(out_shape), (input,), backward, saved=(X,))


def others_product(X, d):
    """The product of each element's others in its slice along d, in fp32: the running products before it
    and after it (torch's prod_safe_zeros_backward): exact beside a zero, an inf or a NaN, where prod / x is not."""
    n = X.shape[d]
    before, after = torch.ones(X.shape, device=X.device), torch.ones(X.shape, device=X.device)
    if n > 1:
        copy_(before.narrow(d, 1, n - 1), _sort.scan(X.narrow(d, 0, n - 1), d, "prod", dtype=torch.float32))
        copy_(after.narrow(d, 0, n - 1), _sort.scan(X.narrow(d, 1, n - 1), d, "prod", reverse=True, dtype=torch.float32))
    return _pw.pointwise("mul", before, after)


def _count(name, input, dim, keepdim, op):
    """How many elements over dim (None: all; an int or a tuple) are nonzero (op "ne") or zero ("eq"),
    int64; NaN is nonzero."""
    check_tensors(name, input=input)
    dims = _dims(name, input, dim, keepdim)
    return Tensor(_reduce.reduce(_pw.pointwise(op, _dense(input), 0), dims).reshape(_shape(input.shape, dims, keepdim)))


@numpy_names
def count_nonzero(input, dim=None):
    """The number of nonzero elements over dim (None: all; an int or a tuple), int64, as torch's."""
    return _count("count_nonzero", input, dim, False, "ne")


@numpy_names
def any(input, dim=None, keepdim=False):
    """Whether some element over dim (None: all; an int or a tuple) is nonzero (NaN is): a bool tensor (see _truth)."""
    return _truth(input, gt(_count("any", input, dim, keepdim, "ne"), 0))


@numpy_names
def all(input, dim=None, keepdim=False):
    """Whether every element over dim (None: all; an int or a tuple) is nonzero: a bool tensor (see _truth)."""
    return _truth(input, eq(_count("all", input, dim, keepdim, "eq"), 0))


def _truth(input, y):
    """any's and all's answer y (bool) as torch gives it: uint8 for a uint8 input (its legacy rule), else bool."""
    return y.to(torch.uint8) if input.dtype == torch.uint8 else y


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of input is close to other's (isclose), as a Python bool: a host read."""
    return builtins.bool(all(isclose(input, other, rtol, atol, equal_nan)).item())


def equal(input, other):
    """Whether input and other have one shape and equal elements (NaN equals nothing), as a Python
    bool: a host read."""
    check_tensors("equal", input=input, other=other)
    return input.shape == other.shape and builtins.bool(all(eq(input, other)).item())


_FLOAT_MAX = 3.4028234663852886e38


@numpy_names
def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) over dim (an int or a tuple), stable: the maximum is taken out first, in fp32.
    A slice of -inf gives -inf, one holding +inf gives inf, NaN gives NaN; the gradient g * exp(x -
    result) is NaN on a slice of -inf, as torch's. Integers are cast to float32 first, as torch."""
    check_tensors("logsumexp", input=input)
    check_args("logsumexp", "tuple of ints", dim=dim)  # no None: torch's parser's TypeError
    if input.dtype not in FLOATS:
        input = input.float()
    dims = _dims("logsumexp", input, dim, keepdim)
    X, out_shape = _dense(input), _shape(input.shape, dims, keepdim)
    if input.numel() == 0:  # log(0), as torch
        return record("logsumexp", torch.full(out_shape, -math.inf, device=input.device, dtype=input.dtype),
                      (input,), lambda g: (torch.zeros_like(input.memory),))
    # the maximum, clamped to finite values: an infinite one leaves exp(x - shift) at 0 or inf, not NaN
    shift = _pw.pointwise("clamp", _reduce.reduce(X, dims, "max", dtype=torch.float32)[0], -_FLOAT_MAX, _FLOAT_MAX)
    total = _reduce.reduce(_pw.pointwise("exp", _pw.pointwise("sub", X, shift)), dims, dtype=torch.float32)
    y = _pw.pointwise("add", _pw.pointwise("log", total), shift)  # fp32, as the backward reads it
    out = y if input.dtype == torch.float32 else copy_(torch.empty_like(y, dtype=input.dtype), y)

    def backward(g):
        e = _pw.pointwise("exp", _pw.pointwise("sub", X, y))
        return (_pw.pointwise("mul", e, g.reshape(y.shape), dtype=input.dtype),)

    def graph(g, out):  # g exp(x - result), on tnet Tensors
        return (mul(exp(sub(input, reshape(out, y.shape))), reshape(g, y.shape)),)
    return record("logsumexp", out.reshape(out_shape), (input,), backward, saved=(X,), graph=graph)


def _extreme(name, input, dim, keepdim):
    """amax and amin: the largest (smallest) values over dim (() or None: every axis), NaN if the
    reduced elements hold one. The gradient is shared equally among the elements equal to the
    result, as torch's (NaN where the result is NaN: no element equals it)."""
    check_tensors(name, input=input)
    dims = _dims(name, input, () if dim is None else dim, keepdim)
    if input.numel() == 0:
        if dim is None or (isinstance(dim, (tuple, list)) and not dim):
            raise InputError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                             "Specify the reduction dim with the 'dim' argument.")
        for d in dims:
            if input.shape[d] == 0:
                raise InputIndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        out = torch.empty(_shape(input.shape, dims, keepdim), device=input.device, dtype=input.dtype)
        return record(name, out, (input,), lambda g: (torch.zeros_like(input.memory),))
    X, shape, cl = _dense(input), input.shape, is_channels_last(input.memory)
    y = _reduce.reduce(X, dims, "max" if name == "amax" else "min")[0]

    def backward(g):
        ties = _pw.pointwise("eq", X, y, dtype=torch.float32)
        count = _reduce.reduce(ties, dims)
        return (_pw.pointwise("muldiv", ties, g.reshape(y.shape), count, channels_last=cl, dtype=input.dtype),)
    out = _shape(shape, dims, keepdim)
    return record(name, y.reshape(out), (input,), backward, saved=(X, y), graph=_selection_graph(name, backward, dims, out))


@numpy_names
def amax(input, dim=(), keepdim=False):
    """The largest values over dim (an int or a tuple; () means every axis), as torch.amax (integers
    and bools exactly, in their dtype)."""
    return _extreme("amax", input, dim, keepdim)


@numpy_names
def amin(input, dim=(), keepdim=False):
    """The smallest values over dim (an int or a tuple; () means every axis), as torch.amin."""
    return _extreme("amin", input, dim, keepdim)


def _correction(name, dim, unbiased, correction):
    """(dim, correction) from torch's forms: var(x, dim, unbiased, keepdim), var(x, unbiased)
    and var(x, dim, correction=c); the default correction is 1 (Bessel's)."""
    if isinstance(dim, bool):  # var(x, False): the second argument is unbiased
        dim, unbiased = None, dim
    check_args(name, "float", correction=0 if correction is None else correction)  # before the dims, as torch's parser
    check_args(name, "bool", unbiased=False if unbiased is None else unbiased)
    check(unbiased is None or correction is None, lambda: f"{name}: give unbiased or correction, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _low_moments_backward(g, out, X, mean, k, root, cl):
    """var's and std's gradient of a 16-bit X (out: the 16-bit result, g at its keepdim shape; mean: the fp32 mean)
    as torch's var_backward and std_backward compute it, each op rounded to X's dtype: (2 / dof) * g' * (x - mean),
    g' = g / (out * 2), 0 where out is 0, for std, else g (a bf16 x - mean of near-equal x is far from exact)."""
    P = _pw.pointwise
    out = out.reshape(g.shape)
    if root:
        g = P("where", P("eq", out, 0.0), 0.0, P("div", g, P("mul", out, 2.0)))
    return P("mul", P("mul", g, 2 * k), P("sub", X, mean.to(X.dtype)), channels_last=cl)


def _moments(name, input, dim, unbiased, keepdim, correction, root, with_mean=False):
    """var or std (root) over dim, as torch's; with_mean: (that, the mean), the mean being the one the variance
    is taken about (var_mean's and std_mean's, as torch's Welford mean: exact on a constant slice)."""
    check_tensors(name, input=input)
    check_float(name, input, "input")
    dim, correction = _correction(name, dim, unbiased, correction)
    dims = _dims(name, input, dim, keepdim)
    X, shape, cl = _dense(input), input.shape, is_channels_last(input.memory)
    n = math.prod(shape[d] for d in dims)
    dof = builtins.max(0, n - correction)  # none left: x / 0, inf or NaN, as torch (which warns)
    out_shape = _shape(shape, dims, keepdim)
    if input.numel() == 0:
        out = record(name, torch.full(out_shape, math.nan, device=input.device, dtype=input.dtype), (input,),
                     lambda g: (torch.zeros_like(input.memory),))
        return (out, sum_or_mean("mean", input, dims, keepdim, mean=True)) if with_mean else out
    # sum(x / n), which no finite slice overflows (sum / n of [3e38, 3e38] is inf, torch's Welford mean 3e38), can be
    # an ulp off a constant slice's value, where torch's Welford mean is exact: the mean of x - base added back makes
    # it exact there, so that such a slice's variance is 0 and std's gradient 0 (torch's rule), not rounding noise
    # over rounding noise; beside an inf (a NaN correction) the base stays, as a Welford mean of one element
    base = _reduce.reduce(_pw.pointwise("div", X, float(n), dtype=torch.float32), dims)
    drift = _reduce.reduce(_pw.pointwise("sub", X, base), dims, divisor=n, dtype=torch.float32)
    mean = _pw.pointwise("add_finite", base, drift)
    var = _reduce.reduce(_pw.pointwise("sqdiff", X, mean), dims, divisor=dof)  # two passes: no cancellation
    y = _pw.pointwise("sqrt", var) if root else var  # fp32, as the backward reads it
    out = low = y if input.dtype == torch.float32 else copy_(torch.empty_like(y, dtype=input.dtype), y)
    k = 1 / (n - correction) if n != correction else math.inf  # torch's gradient divides by the unclamped dof
    # over every element (no dim, or a 0-d input) with no dof left, torch's gradient is g' * (NaN where x is the mean,
    # else inf), g' being g for var and g / (2 std) for std, where the formula's 2 / dof would flip signs or give 0
    no_dof = (dim is None or input.ndim == 0) and n - correction <= 0

    def backward(g):  # d var = 2 (x - mean) / dof; d std = d var / (2 std), 0 where std is 0 (torch's rule), the
        # mean being torch's formula's sum / n (inf beside an inf, or past the range)
        g = g.reshape(y.shape)
        plain = _reduce.reduce(X, dims, divisor=n, dtype=torch.float32)
        if no_dof:
            s = _pw.pointwise("std_backward", g, y, 0.5) if root else g
            blowup = _pw.pointwise("where", _pw.pointwise("eq", X, plain), math.nan, math.inf)
            return (_pw.pointwise("mul", s, blowup, channels_last=cl, dtype=input.dtype),)
        if input.dtype != torch.float32:  # torch's formula op by op, each rounded to 16 bits: x - mean cancels there
            return (_low_moments_backward(g, low, X, plain, k, root, cl),)
        s = _pw.pointwise("std_backward", g, y, k) if root else _pw.pointwise("mul", g, 2 * k)
        return (_pw.pointwise("var_backward", s, X, plain, channels_last=cl, dtype=input.dtype),)

    def graph(g, out):  # backward's rule on the tape
        g, out = reshape(g, y.shape), reshape(out, y.shape)
        mean_ = sum_or_mean("mean", input, dims, True, mean=True)
        if no_dof:
            s = where(eq(out, 0), 0.0, div(mul(g, 0.5), out)) if root else g
            return (mul(s, where(eq(input, mean_), math.nan, math.inf)),)
        s = where(eq(out, 0), 0.0, div(mul(g, k), out)) if root else mul(g, 2 * k)
        return (mul(s, sub(input, mean_)),)
    out = record(name, out.reshape(out_shape), (input,), backward, saved=(X,), graph=graph)
    if not with_mean:
        return out
    m = mean if input.dtype == torch.float32 else copy_(torch.empty_like(mean, dtype=input.dtype), mean)

    def mean_backward(g):  # g / n spread back over the reduced axes, as mean's
        return (_pw.pointwise("div", g.reshape(mean.shape).expand(shape), float(n), channels_last=cl),)
    return out, record("mean", m.reshape(out_shape), (input,), mean_backward,
                       graph=lambda g, o: (div(expand(reshape(g, mean.shape), shape), float(n)),))


@numpy_names
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance over dim (None: every axis), sum((x - mean)^2) / (n - correction), correction 1
    by default (unbiased=False: 0), computed in fp32 in two passes, as torch.var."""
    return _moments("var", input, dim, unbiased, keepdim, correction, root=False)


@numpy_names
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation, sqrt(var) (see var); its gradient is 0 where it is 0, as torch's."""
    return _moments("std", input, dim, unbiased, keepdim, correction, root=True)


@numpy_names
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dim, as torch.var_mean: one pass's mean, exact on a constant slice as torch's."""
    return _moments("var_mean", input, dim, unbiased, keepdim, correction, root=False, with_mean=True)


@numpy_names
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim, as torch.std_mean."""
    return _moments("std_mean", input, dim, unbiased, keepdim, correction, root=True, with_mean=True)


def _loss_inputs(name, input, target, reduction, broadcast=False):
    """The checked operands of an element-wise loss: fp32 copies of 16-bit ones under tnet.autocast,
    as torch's autocast. broadcast: torch's F.mse_loss, l1_loss and smooth_l1_loss broadcast their
    operands first, so a 0-d one of another dtype beside a dimensioned one promotes as a dimensioned one
    (f16 [2] and f32 [] give f32, where the arithmetic alone keeps f16)."""
    check_tensors(name, input=input, target=target)
    check(reduction in ("mean", "sum", "none"), lambda: f"{name}: {reduction!r} is not a valid value for reduction")
    if is_autocast_enabled():
        return input.float(), target.float()
    if broadcast and (input.ndim == 0) != (target.ndim == 0) and input.dtype != target.dtype:
        return broadcast_tensors(input, target)
    return input, target


def _reduced(name, loss, reduction):
    return loss if reduction == "none" else sum_or_mean(name, loss, None, False, mean=reduction == "mean")


def _composed_reduced(loss, reduction):
    """_reduced for a loss that torch composes of other ops: its node is the reduction's (MeanBackward0,
    SumBackward0), as torch's."""
    return _reduced(reduction, loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target) ** 2, broadcasting, averaged ('mean'), summed ('sum') or kept ('none'), as
    torch's (and its deprecated size_average and reduce); under tnet.autocast on fp32 copies of
    16-bit operands, as torch's autocast. weight (input's shape) multiplies each element, and the
    mean is then over the weights' sum, as torch's."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    input, target = _loss_inputs("mse_loss", input, target, reduction, broadcast=True)
    if (input.dtype == torch.bool) != (target.dtype == torch.bool):  # torch's mse promotes a bool operand (l1 does not)
        input, target = (input.to(target.dtype), target) if input.dtype == torch.bool else (input, target.to(input.dtype))
    d = sub(input, target)
    if weight is None and d.is_floating_point():
        return _squares_reduced(d, reduction)
    return _weighted_reduced("mse_loss", pow(d, 2), reduction, weight, input)


def _squares_reduced(d, reduction):
    """mse_loss of the differences d: d * d reduced, with torch's gradient (norm d) g, norm 2 / n for the mean
    (2 else): the scale first, as torch's formula (2 d overflows where d passes half the dtype's range)."""
    with no_grad():
        y = _reduced("mse_loss", mul(d, d), reduction)
    norm = 2.0 / d.numel() if reduction == "mean" and d.numel() else 2.0

    def grad(g):
        return mul(mul(d, norm), g)

    def backward(g):
        with no_grad():
            return grad(Tensor(g)).memory
    return record("mse_loss", y.memory, (d,), lambda g: (backward(g),), saved=(d,), graph=lambda g, out: (grad(g),))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, reduced and weighted as mse_loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    input, target = _loss_inputs("l1_loss", input, target, reduction, broadcast=True)
    mark = tape_mark()
    loss = _weighted_reduced("l1_loss", abs(sub(input, target)), reduction, weight, input)
    # torch's l1_loss is composed: its node the reduction's (MeanBackward0, SumBackward0) or abs's
    return loss if weight is not None or reduction == "none" else named(reduction, mark, loss)


def _weighted_reduced(name, loss, reduction, weight, input):
    """mse_loss's and l1_loss's weight: element-wise, the mean over the weights' sum."""
    if weight is None:
        return _reduced(name, loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = mul(loss, weight)
    if reduction == "mean":
        return div(sum_or_mean(name, loss, None, False, mean=False), sum_or_mean(name, weight, None, False, mean=False))
    return _reduced(name, loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """torch's Huber-like loss: 0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta
    (beta 0: l1_loss), reduced as mse_loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    input, target = _loss_inputs("smooth_l1_loss", input, target, reduction, broadcast=True)
    if beta < 0:  # after the reduction's check, as torch's
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = sub(input, target)
    loss = abs(d) if beta == 0 else _smooth_l1("smooth_l1_loss", d, beta, 1.0)
    return _reduced("smooth_l1_loss", loss, reduction)


def _smooth_l1(name, d, beta, scale):
    """scale * (0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta), element-wise, with torch's
    gradient scale * clamp(d / beta, -1, 1): NaN at a NaN d (abs's gradient would give 0), finite at
    an infinite one (a where's 0 gradient times inf would be NaN)."""
    with no_grad():
        a = abs(d)
        m = clamp(a, None, beta)
        loss = mul(m, m) * (0.5 * scale / beta) + (a - m) * scale

    return record_composed(name, loss.memory, (d,), lambda g: (mul(g, clamp(d, -beta, beta)) * (scale / beta),), (d,))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """-(w [p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))]) per element (p: pos_weight, w:
    weight, both broadcast), as (1 - y) x + (1 + (p - 1) y) softplus(-x): no exp overflows, and softplus's
    gradient sigmoid(-x) is right at x = 0 too. The loss has target's dtype (torch's works in place on
    1 - target: an fp32 weight beside fp16 operands, or an fp32 input beside an fp16 target, gives fp16).
    The gradients are torch's formulas, each one product by w (an infinite weight gives inf, where the
    composition's two terms gave inf - inf): input's g w ((p y + 1 - y) sigmoid(x) - p y), target's
    g w (log sigmoid(-x) - p log sigmoid(x)), or g w (-x) without p, each step in place in torch's dtypes;
    weight and pos_weight take none (requiring one raises, as torch's)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    extra = {k: v for k, v in (("weight", weight), ("pos_weight", pos_weight)) if v is not None}
    check_tensors("binary_cross_entropy_with_logits", **extra)
    for k, v in extra.items():
        check(not (v.requires_grad and is_grad_enabled()), lambda: f"The function 'binary_cross_entropy_with_logits' is "
              f"not differentiable with respect to argument '{k}'. This input cannot have requires_grad True.")
    x, y = _loss_inputs("binary_cross_entropy_with_logits", input, target, reduction)
    # torch's loss takes target's dtype: an integer target (class labels as long) is its RuntimeError
    check(y.dtype.is_floating_point, lambda: f"result type {DTYPE_NAMES.get(x.dtype, x.dtype)} can't be cast to the "
                                             f"desired output type {DTYPE_NAMES.get(y.dtype, y.dtype)}")
    if target.shape != input.shape:  # torch's check: no broadcasting
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    for v in (pos_weight, weight):  # torch multiplies them in place into the input's shape: none broadcasts past it
        if v is not None:
            shape = _pw.broadcast_shape("binary_cross_entropy_with_logits", input.shape, v.shape)
            check(shape == tuple(input.shape),
                  lambda: f"output with shape {list(input.shape)} doesn't match the broadcast shape {list(shape)}")
    with no_grad():
        log_p = softplus(neg(x))  # -log sigmoid(x)
        if pos_weight is not None:  # torch's log_sigmoid(x).mul_(log_weight): in place, rounded to x's dtype
            log_p = mul(log_p, mul(y, pos_weight - 1.0) + 1.0)
            log_p = log_p if log_p.dtype == x.dtype else log_p.to(x.dtype)
        loss = mul(1.0 - y, x)
        if y.dtype.is_floating_point and loss.dtype != y.dtype:  # torch's (1 - target).mul_(input): in place
            loss = loss.to(y.dtype)  # in target's dtype (an f16 product past 65504 is inf there)
        loss = (loss + log_p).to(y.dtype)  # in place, as each step below
        if weight is not None:
            loss = mul(loss, weight).to(y.dtype)
        loss = _reduced("binary_cross_entropy_with_logits", loss, reduction)
    n = x.numel() if reduction == "mean" and x.numel() else 1

    def grads(g):  # torch's formulas in its order: the term times g, times w, / n for the mean (the mean's own
        # gradient g / n would round to the loss's dtype first: an fp32 input's gradient off by bf16's 1 / n). Its
        # steps work in place, each rounded to the first one's dtype (pos_weight * target's for the input's: a bf16
        # target keeps it bf16), but the input's under create_graph
        def then(v, op, w, in_place):
            r = op(v, w)
            return r.to(v.dtype) if in_place and r.dtype != v.dtype else r
        in_place = not is_grad_enabled()
        if pos_weight is None:
            gx = then(sigmoid(x), sub, y, in_place)
            gy = mul(neg(x), g)
        else:
            t = mul(pos_weight, y)
            gx = then(then(then(add(t, 1.0), sub, y, in_place), mul, sigmoid(x), in_place), sub, t, in_place)
            gy = then(then(logsigmoid(neg(x)), sub, then(logsigmoid(x), mul, pos_weight, True), True), mul, g, True)
        gx = then(gx, mul, g, in_place)
        out = []
        for v, u, steps_in_place in ((gx, x, in_place), (gy, y, True)):
            v = v if weight is None else then(v, mul, weight, steps_in_place)
            v = v if n == 1 else div(v, float(n))
            out.append(graph_sum_to(v, u).to(u.dtype))  # summed over a broadcast weight
        return out
    return record_composed("binary_cross_entropy_with_logits", loss.memory, (x, y), grads, (x, y))



def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(w [y log x + (1 - y) log(1 - x)]) per element for probabilities x, each log at least -100,
    as torch's; input and target of one dtype, as torch's. An input or target outside
    [0, 1] (or NaN) raises RuntimeError, as torch's: on the CPU at once, on a GPU at a later flagging
    call or host read, without a synchronisation (kernels.launch.check_flag); not inside a CUDA graph
    capture. A weight must be a Tensor (torch's weight.size() raises AttributeError for a number; tnet's
    refusal is a TypeError) that broadcasts to target's shape, as torch's expand and its kernel's output."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, y = _loss_inputs("binary_cross_entropy", input, target, reduction)
    if x.shape != y.shape:
        raise ValueError(f"Using a target size ({y.shape}) that is different to the input size ({x.shape}) is "
                         f"deprecated. Please ensure they have the same size.")
    if weight is not None:
        check_tensors("binary_cross_entropy", weight=weight)
        shape = _pw.broadcast_shape("binary_cross_entropy", y.shape, weight.shape)
        check(shape == tuple(y.shape),
              lambda: f"output with shape {list(y.shape)} doesn't match the broadcast shape {list(shape)}")
    check(x.dtype == y.dtype, lambda: f"Found dtype {DTYPE_NAMES[y.dtype]} but expected {DTYPE_NAMES[x.dtype]}")  # torch's
    with no_grad():
        raise_flagged(x.memory.device)  # an earlier call's values outside [0, 1], as far as the GPU has run
        for arg, v in (("input", x), ("target", y)) if not capturing(x.memory) else ():
            check_count(_count("binary_cross_entropy", eq(clamp(v, 0.0, 1.0), v), None, False, "eq").memory,
                        lambda arg=arg: InputError(f"all elements of {arg} should be between 0 and 1"))
        log_x, log_1x = clamp_min(log(x), -100.0), clamp_min(log(1.0 - x), -100.0)
        loss = neg(mul(y, log_x) + mul(1.0 - y, log_1x))
        loss = loss if weight is None else mul(loss, weight).to(x.dtype)  # in input's dtype, as torch's in-place product

    def grads(g):  # torch's: the input's finite at x = 0 and 1, the target's from the unclamped logs
        g = g if weight is None else mul(g, weight)
        return div(mul(g, x - y), clamp_min(mul(x, 1.0 - x), 1e-12)), mul(g, log(1.0 - x) - log(x))
    loss = record_composed("binary_cross_entropy", loss.memory, (x, y), grads, (x, y))
    return _reduced("binary_cross_entropy", loss, reduction)


def one_hot(tensor, num_classes=-1):
    """[..., num_classes] int64, 1 at each element's class, as torch's (num_classes -1: the
    largest class + 1). Its classes are checked on the host, as torch checks them: a sync."""
    check_args("one_hot", "int", num_classes=num_classes)
    check_tensors("one_hot", tensor=tensor)
    if tensor.dtype != torch.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel():
        every = tuple(range(tensor.dim()))
        low, high = int(amin(tensor, every).item()), int(amax(tensor, every).item())
        if low < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes != -1 and high >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
        num_classes = high + 1 if num_classes == -1 else num_classes
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    return eq(unsqueeze(tensor, -1), arange(num_classes)).long()


@numpy_names
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: vector_norm over dim (None: all elements), p 'fro' (or None, as torch's) the 2-norm; 'nuc' the
    nuclear norm, linalg.matrix_norm's over dim (None: every dim, which must then be two). dtype: the input
    cast first."""
    check_tensors("norm", input=input)
    p = "fro" if p is None else p
    check_type(p == "fro" or p == "nuc" or (isinstance(p, numbers.Real) and not isinstance(p, bool)),
          lambda: f"norm: p must be a number, 'fro' or 'nuc', got {p!r}")
    if p == "nuc":
        return nuclear_norm(input, tuple(range(input.ndim)) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(input, 2 if p == "fro" else p, dim, keepdim, dtype=dtype)


def nuclear_norm(input, dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.nuclear_norm: linalg, built on this module, puts its own here when imported."""
    raise NotImplementedError("norm: p='nuc' needs tnet.linalg")


def frobenius_norm(input, dim, keepdim=False):
    """torch.frobenius_norm (torch keeps it for TorchScript, linalg.vector_norm's 2-norm): the 2-norm over dim, at
    most two dims (() every one)."""
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    check(len(dims) <= 2, lambda: f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    return vector_norm(input, 2, dims, keepdim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm over dim (None or (): all elements): ord 2 sqrt(sum |x|^2), 1,
    inf and -inf (the largest and smallest |x|, a tie's gradient shared), 0 (the count of
    nonzeros, no gradient: x.grad stays None, as torch's) and other p sum(|x|^p)^(1/p), with torch's gradients (0 where the norm
    is 0, and at zeros for p < 1). dtype: x cast first. Its node is torch's LinalgVectorNormBackward0."""
    mark = tape_mark()
    return named("linalg_vector_norm", mark, _vector_norm(x, ord, dim, keepdim, dtype))


def norm_dtype(name, x, dtype):
    """x cast to a norm's dtype, after torch's checks: x floating before any cast (an integer tensor with
    dtype=float32 raises), dtype a floating one that x's converts to without narrowing."""
    check(x.dtype in FLOATS, lambda: f"{name}: Expected a floating point or complex tensor as input. "
                                     f"Got {DTYPE_NAMES.get(x.dtype, x.dtype)}")
    if dtype is None:
        return x
    check(dtype.is_floating_point, lambda: f"{name}: dtype should be floating point or complex, but got "
                                           f"{DTYPE_NAMES.get(dtype, dtype)}")
    check(torch.promote_types(x.dtype, dtype) == dtype,
          lambda: f"{name}: the dtype of the input ({DTYPE_NAMES.get(x.dtype, x.dtype)}) should be convertible "
                  f"without narrowing to the specified dtype ({DTYPE_NAMES.get(dtype, dtype)})")
    return x.to(dtype)


def _vector_norm(x, ord, dim, keepdim, dtype):
    check_tensors("linalg.vector_norm", x=x)
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    check_args("linalg_vector_norm", "bool", keepdim=keepdim)
    if dim is not None:
        check_args("linalg_vector_norm", "tuple of ints", dim=dim)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise InputTypeError(f"linalg_vector_norm(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    x = norm_dtype("linalg.vector_norm", x, dtype)
    dim = () if dim is None else dim
    if ord == 2:
        return _two_norm(x, dim, keepdim)
    if ord < 0 or ord == math.inf:  # a min, a max or a sum of |x|^-p under a negative power: no identity
        reduced = [x.shape[d] for d in _dims("linalg.vector_norm", x, dim)]  # () is every dim, 0 the first
        check(x.ndim == 0 or builtins.all(reduced), lambda: f"linalg.vector_norm cannot compute the {ord} norm on an "
                                                            f"empty tensor because the operation does not have an identity")
    if ord in (math.inf, -math.inf):
        return _inf_norm(x, ord > 0, dim, keepdim)
    if ord == 1:
        return sum(abs(x), dim, keepdim)
    if ord == 0:
        with no_grad():
            y = sum(ne(x, 0).to(x.dtype), dim, keepdim)
        return record("vector_norm", y.memory, (x,), lambda g: (None,))  # no gradient, as torch's (x.grad None)
    return _p_norm(x, float(ord), dim, keepdim)


def _inf_norm(x, largest, dim, keepdim):
    """The largest (smallest) |x| over dim, with torch's gradient sgn(x) (g / count) at the elements whose |x| is
    the norm or NaN (count of them): a NaN's sgn is 0, so a NaN norm passes no gradient (amax's would share
    g with the NaNs, and abs's g sgn(x) of those is 0 * NaN)."""
    with no_grad():
        a = abs(x)
        y = (amax if largest else amin)(a, dim, keepdim=True)

    def weights():  # sgn(x) / count at the norm's elements, else 0: the gradient's factor of g, a step function
        with no_grad():
            mask = logical_or(eq(a, y), isnan(a)).to(x.dtype)
            return mul(sign(x), div(mask, sum(mask, dim, keepdim=True)))

    def graph(g, norm):  # the gradient on the tape, the factor a constant
        return (mul(reshape(g, norm.shape), weights()),)

    def backward(g):
        with no_grad():
            return graph(Tensor(g), y)[0].memory
    out = record("vector_norm", y.memory, (x,), lambda g: (backward(g),), saved=(x, y), graph=graph)
    return out if keepdim else reshape(out, _shape(x.shape, _dims("vector_norm", x, dim), False))


def _p_norm(x, p, dim, keepdim):
    """sum(|x|^p)^(1/p) over dim, with torch's gradient sign(x) |x|^(p-1) g / norm^(p-1): 0
    where the norm is 0, and where x is 0 (p < 1: |x|^(p-1) would be inf). The powers and their sum of
    16-bit input in fp32, as torch's (0.13^-7 overflows float16)."""
    with no_grad():
        if _single(x, dim):
            y = abs(x)
        else:
            y = pow(sum(pow(abs(x).to(torch.float32), p), dim, keepdim=True), 1.0 / p)
            y = y if y.dtype == x.dtype else y.to(x.dtype)

    def graph(g, norm):  # the gradient on the tape, through the norm as recorded (its own gradient then counts)
        scale = where(eq(norm, 0), 0.0, mul(reshape(g, norm.shape), pow(norm, 1.0 - p)))
        return (mul(where(eq(x, 0), 0.0, mul(sign(x), pow(abs(x), p - 1.0))), scale),)

    def backward(g):
        with no_grad():
            return graph(Tensor(g), y)[0].memory
    out = record("vector_norm", y.memory, (x,), lambda g: (backward(g),), saved=(x, y), graph=graph)
    return out if keepdim else reshape(out, _shape(x.shape, _dims("vector_norm", x, dim), False))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.linalg.matrix_norm over the two dims of dim: ord 'fro' (the 2-norm of the entries), 1
    and -1 (the largest and smallest column sum of |A|), inf and -inf (row sums), with torch's
    gradients. 'nuc', 2 and -2 need singular values: NotImplementedError. dtype: A cast first."""
    check_tensors("linalg.matrix_norm", A=A)
    dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    check(len(dim) == 2, lambda: f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    check(A.ndim >= 2, lambda: "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    rows, cols = (_dims("linalg.matrix_norm", A, d)[0] for d in dim)
    check(rows != cols, lambda: f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values, which tnet does not "
                                  f"compute (ord 'fro', 1, -1, inf and -inf are supported)")
    check(ord in ("fro", 1, -1, math.inf, -math.inf), lambda: f"linalg.matrix_norm: Order {ord} not supported.")
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim, dtype=dtype)
    A = norm_dtype("linalg.matrix_norm", A, dtype)
    summed, over = (rows, cols) if ord in (1, -1) else (cols, rows)
    y = (amax if ord > 0 else amin)(sum(abs(A), summed, keepdim=True), over, keepdim=True)
    return y if keepdim else reshape(y, _shape(A.shape, (rows, cols), False))


def _single(x, dim):
    """Whether every dim reduced has size 1 (or x is 0-d): torch's norm of one element is |x| (its
    is_reduce_over_1D_vector), exact where the square of a huge x would overflow; the gradient stays the norm's.
    A 0-d x given a dim is not (torch's squares it: inf at 3e38), without one it is."""
    if x.ndim == 0:
        return dim in ((), [])
    return builtins.all(x.shape[d] == 1 for d in _dims("linalg.vector_norm", x, dim))


def _two_norm(input, dim, keepdim):
    """sqrt(sum(x^2)) over dim, with torch's gradient g (x / norm), x / norm taken as 0 where the norm is 0 (so a
    NaN or inf g still gives NaN there, as torch's); the squares of 16-bit input in fp32 (65504^2 overflows
    float16), as torch's."""
    with no_grad():
        X = input.memory
        if _single(input, dim):
            y = abs(input)
        else:
            squares = Tensor(_pw.pointwise("mul", X, X, dtype=torch.float32))
            y = pow(sum(squares, dim, keepdim=True), 0.5)
            y = y if y.dtype == input.dtype else y.to(input.dtype)

    def backward(g):  # g (x / y), as torch's (g x overflows where x is huge, g / y where y is tiny); x / y 0 where y is 0
        Y = y.memory
        ratio = _pw.pointwise("where", _pw.pointwise("eq", Y, 0), 0.0, _pw.pointwise("div", X, Y, dtype=torch.float32))
        return _pw.pointwise("mul", g.reshape(Y.shape), ratio, dtype=X.dtype)
    out = record("norm", y.memory, (input,), lambda g: (backward(g),), saved=(input, y),
                 graph=lambda g, out: (mul(g, where(eq(out, 0), 0.0, div(input, out))),))
    return out if keepdim else reshape(out, _shape(input.shape, _dims("norm", input, dim), False))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps), as torch.nn.functional.normalize. With out=, the quotient is
    written into out as torch's torch.div(..., out=out) writes it (spectral_norm's power iteration's
    `v = normalize(torch.mv(weight.t(), u), dim=0, eps=eps, out=v)`): not differentiable, so under grad mode an
    input requiring grad raises div()'s RuntimeError, as torch's."""
    result = div(input, clamp_min(norm(input, p, dim, keepdim=True), eps))
    return result if out is None else write_out("div", out, result, (input,))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) over dim, broadcasting x1 and x2, as
    torch.nn.functional.cosine_similarity (its gradient too: torch clamps the norms in place under
    no_grad, so a clamped norm passes the unclamped norm's gradient)."""
    check_tensors("cosine_similarity", x1=x1, x2=x2)
    check_args("cosine_similarity", "int", dim=dim)
    check_args("cosine_similarity", "float", eps=eps)
    if x1.is_floating_point() != x2.is_floating_point():  # an integer operand beside a float one: torch promotes
        x1, x2 = (x1, x2.to(x1.dtype)) if x1.is_floating_point() else (x1.to(x2.dtype), x2)
    check(x1.is_floating_point(), lambda: f"expected common dtype to be floating point, yet common dtype is "
                                          f"{DTYPE_NAMES.get(x1.dtype, x1.dtype)}")
    check(eps >= 0, lambda: f"eps must be non-negative, got: {eps}")  # before the shapes, as torch's (NaN too)
    x1, x2 = broadcast_tensors(x1, x2)  # the norms are over the broadcast shape, as torch's
    return sum(mul(div(x1, _clamped_norm(x1, dim, eps)), div(x2, _clamped_norm(x2, dim, eps))), dim)


def _clamped_norm(x, dim, eps):
    """||x|| over dim (kept), at least eps in value only: the gradient is the norm's, as torch's in-place clamp."""
    n = norm(x, 2, dim, keepdim=True)
    with no_grad():
        c = clamp_min(n, eps)
    return record("cosine_similarity_norm", c.memory, (n,), lambda g: (g,), graph=lambda g, y: (g,))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """torch's KL divergence with input log-probabilities: xlogy(target, target) - target * input (0 where
    target is 0; the target's gradient NaN there, as torch's), or exp(target) * (target - input) with log_target; reduced by 'mean' (over every
    element, torch's default), 'batchmean' (the sum over the batch size), 'sum' or 'none'."""
    check_args("kl_div", "bool", log_target=log_target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    check(reduction in ("mean", "batchmean", "sum", "none"),
          lambda: f"kl_div: {reduction!r} is not a valid value for reduction")
    input, target = _loss_inputs("kl_div", input, target, "none")
    check(input.dtype.is_floating_point and target.dtype.is_floating_point, "kl_div: Integral inputs not supported.")
    if log_target:
        loss = mul(exp(target), sub(target, input))
    else:  # torch's xlogy(target, target) - target * input: 0 at target 0, NaN below 0 and at NaN; and its
        # gradients: the target's is NaN at 0 (xlogy's t / t)
        loss = sub(xlogy(target, target), mul(target, input))
    if reduction == "batchmean":
        return div(sum(loss), input.shape[0] if input.ndim else 1)
    return _reduced("kl_div", loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta), d = input - target (broadcast),
    times weight (input's shape) where given, reduced as mse_loss, as torch's."""
    input, target = _loss_inputs("huber_loss", input, target, reduction)
    if delta <= 0:  # after the reduction's check, as torch's
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    loss = _smooth_l1("huber_loss", sub(input, target), delta, delta)  # delta * smooth_l1 of beta delta
    if weight is not None:
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        loss = mul(loss, weight)
    return _reduced("huber_loss", loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), broadcasting inputs of one number of dims."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_tensors("margin_ranking_loss", input1=input1, input2=input2, target=target)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    input1, input2 = _loss_inputs("margin_ranking_loss", input1, input2, reduction)
    return _composed_reduced(clamp_min(add(mul(neg(target), sub(input1, input2)), margin), 0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where target is -1, as torch's (which adds
    both terms for other target values)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    input, target = _loss_inputs("hinge_embedding_loss", input, target, reduction)
    loss = add(where(ne(target, 1), clamp_min(sub(margin, input), 0.0), 0.0), where(ne(target, -1), input, 0.0))
    return _composed_reduced(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), as torch's (which overflows alike past -target * input ~ 88): torch
    writes each step into an output of input's shape and dtype, so target must broadcast to input's shape
    and -target * input is rounded to input's dtype."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    input, target = _loss_inputs("soft_margin_loss", input, target, reduction)
    shape = _pw.broadcast_shape("soft_margin_loss", input.shape, target.shape)
    check(shape == input.shape,
          lambda: f"output with shape {list(input.shape)} doesn't match the broadcast shape {list(shape)}")
    z = mul(neg(input), target)
    z = z if z.dtype == input.dtype else z.to(input.dtype)
    return _reduced("soft_margin_loss", log(add(exp(z), 1.0)), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1, the cosine
    over the last dim of [N, D] (or [D]) inputs with torch's 1e-12 added to each squared norm."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_tensors("cosine_embedding_loss", input1=input1, input2=input2, target=target)
    check_args("cosine_embedding_loss", "float", margin=margin)
    check(input1.ndim in (1, 2) and input1.shape == input2.shape and target.ndim == input1.ndim - 1,
          lambda: f"cosine_embedding_loss: expected input1 and input2 of one shape [N, D] or [D] and target [N] or [], "
                  f"got {input1.shape}, {input2.shape} and {target.shape}")
    input1, input2 = _loss_inputs("cosine_embedding_loss", input1, input2, reduction)
    squares = mul(add(sum(mul(input1, input1), -1), 1e-12), add(sum(mul(input2, input2), -1), 1e-12))
    cos = div(sum(mul(input1, input2), -1), pow(squares, 0.5))
    loss = add(where(eq(target, 1), sub(1.0, cos), 0.0), where(eq(target, -1), clamp_min(sub(cos, margin), 0.0), 0.0))
    return _composed_reduced(loss, reduction)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim (broadcasting x1 and x2), as torch's."""
    check_tensors("pairwise_distance", x1=x1, x2=x2)
    check_args("pairwise_distance", "float", p=p, eps=eps)  # torch's parser's TypeErrors (p=None is no 2-norm)
    check_args("pairwise_distance", "bool", keepdim=keepdim)
    mark = tape_mark()  # torch's node: its norm over a dim's (NormBackward1)
    return named("norm_dim", mark, norm(add(sub(x1, x2), eps), p, builtins.max(x1.ndim, x2.ndim) - 1, keepdim))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the pairwise_distance (swap:
    the smaller of d(anchor, negative) and d(positive, negative)), as torch's."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_tensors("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    check(anchor.ndim == positive.ndim == negative.ndim,
          lambda: f"The anchor, positive, and negative tensors are expected to have the same number of dimensions, "
                  f"but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    check(reduction in ("mean", "sum", "none"), lambda: f"{reduction!r} is not a valid value for reduction")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    # torch's order, (margin + d_pos) - d_neg: a 16-bit d_pos rounds the margin in its dtype
    return _composed_reduced(clamp_min(sub(add(d_pos, margin), d_neg), 0.0), reduction)


aminmax_result = return_types.aminmax


@numpy_names
def aminmax(input, *, dim=None, keepdim=False):
    """aminmax_result(min, max) over dim (None: every element), as torch.aminmax (amin and amax)."""
    dim = () if dim is None else dim
    mark = tape_mark()  # both from torch's one node (AminmaxBackward0)
    return aminmax_result(*(named("aminmax", mark, f(input, dim, keepdim)) for f in (amin, amax)))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor of elements' shape: True where the element equals one of test_elements (a
    tensor or a number), as torch.isin (invert: where it equals none); one comparison against every
    test element, then an any."""
    check_type(isinstance(elements, Tensor) or isinstance(test_elements, Tensor),
          "isin: elements or test_elements must be a tnet.Tensor")
    if not isinstance(elements, Tensor):
        elements = Tensor(as_storage(elements))
    tests = reshape(test_elements, (-1,)) if isinstance(test_elements, Tensor) else test_elements
    found = any(eq(unsqueeze(elements, -1), tests), -1) if isinstance(tests, Tensor) else eq(elements, tests)
    return logical_not(found) if invert else found


@numpy_names
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """sum with NaN counted as 0, as torch.nansum; the gradient is g times 0 at NaN, as torch's (NaN there where
    g is infinite: nanmean's over a slice of NaNs, g / 0). dtype: as sum's."""
    check_tensors("nansum", input=input)
    mark = tape_mark()  # torch's node: its one op's (NansumBackward0)
    return named("nansum", mark,
                 sum(_nan_zeroed(input) if input.memory.is_floating_point() else input, dim, keepdim, dtype=dtype))


def _nan_zeroed(x):
    """x with 0 at NaN; its gradient g * (x == x), a product as torch's nansum's (where's select would drop a NaN)."""
    with no_grad():
        kept = eq(x, x)
        y = where(kept, x, 0.0)
    return record_composed("nansum", y.memory, (x,), lambda g: (mul(g, kept),), saved=(kept,))


@numpy_names
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the elements that are not NaN, as torch.nanmean (NaN where all are); float inputs.
    dtype: the input cast to it first, as mean's."""
    check_tensors("nanmean", input=input)
    check(input.memory.is_floating_point(), lambda: f"nanmean(): expected input to have floating point dtype but got {input.dtype}")
    input = _cast_first(input, dtype)
    count = sum(eq(input, input).to(input.dtype), dim, keepdim)
    return div(nansum(input, dim, keepdim), count)


# ---- shape and indexing ops of the eighth session: products, distances and running sums -------

def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), as torch.dist (vector_norm's gradients)."""
    check_tensors("dist", input=input, other=other)
    mark = tape_mark()  # torch's node: its one op's (DistBackward0)
    return named("dist", mark, vector_norm(sub(input, other), p))


def renorm(input, p, dim, maxnorm):
    """input with each slice along dim whose p-norm exceeds maxnorm scaled to it (by maxnorm / (norm +
    1e-7)), as torch.renorm; the gradient flows through the norm too, as torch's."""
    check_tensors("renorm", input=input)
    check_args("renorm", "float", p=p, maxnorm=maxnorm)
    check_args("renorm", "int", dim=dim)
    check(input.ndim >= 2, lambda: f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    check(p > 0, "renorm: non-positive-norm not supported")
    check(maxnorm >= 0, lambda: f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = dim_index(dim, input.ndim)
    dims = [k for k in range(input.ndim) if k != d]
    with no_grad():
        scaled = gt(vector_norm(input, p, dims, keepdim=True), maxnorm)
    # the norm's gradient from the scaled slices only: a slice left as it is (a NaN norm among them) passes g
    # alone, as torch's renorm_backward (its where), not g plus 0 * the norm's NaN gradient
    mark = tape_mark()  # torch's node: its one op's (RenormBackward0)
    norms = vector_norm(where(scaled, input, 0.0), p, dims, keepdim=True)
    return named("renorm", mark, mul(input, where(scaled, div(maxnorm, add(norms, 1e-7)), 1.0)))


def sum_to_size(input, *size):
    """input summed over the dims where size (which must expand to input's shape) has 1 or nothing,
    as Tensor.sum_to_size."""
    check_type(size, 'sum_to_size() missing 1 required positional arguments: "size"')
    size = tuple(shape_args(size))
    lead = input.ndim - len(size)
    check(lead >= 0 and builtins.all(s in (1, n) for s, n in zip(size, input.shape[lead:])),
          lambda: f"size {{{list(size)}}} is not expandable to size {{{list(input.shape)}}}.")
    dims = [*range(lead), *(lead + k for k, s in enumerate(size) if s == 1 and input.shape[lead + k] != 1)]
    if not dims:
        return input
    return reshape(sum(input, dims, keepdim=True), size)


# ---- the tensor surface of the eighth session (ops3) --------------------------------------------

def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: sum over i < p of lgamma(x - i / 2), plus
    p (p - 1) / 4 log(pi), as torch.mvlgamma (differentiable). Elements at or below (p - 1) / 2 are not
    refused (torch 2.13 dropped its check): they give lgamma's values there (inf at its poles)."""
    check_tensors("mvlgamma", input=input)
    check_args("mvlgamma", "int", p=p)  # torch's parser's TypeError (a bool or a float p too)
    p = int(p)
    check(p >= 1, "p has to be greater than or equal to 1")
    check(input.dtype in _pw.FLOATS, lambda: f"mvlgamma: expected a float tensor, got {input.dtype}")
    mark = tape_mark()  # torch's node: its one op's (MvlgammaBackward0)
    terms = lgamma(add(unsqueeze(input, -1), arange(0.0, -p / 2.0, -0.5, dtype=input.dtype)))
    return named("mvlgamma", mark, add(sum(terms, -1), p * (p - 1) / 4.0 * math.log(math.pi)))
