"""Sorting and scans along one axis (kernels/sort.py): sort, argsort, topk, cumsum and cumprod, as
torch's, with their gradients. Sorts are always stable (torch's stable=True order, which
stable=False also allows), of rows of any length."""
import math
import numbers

import torch

from .. import return_types
from ..factory import arange, ones_like
from ..kernels import copy as _copy
from ..kernels import pointwise as _pw
from ..kernels import sort as _sort
from ..kernels.copy import copy_
from ..kernels.launch import FLOATS, InputIndexError, InputTypeError, check, no_host_read, not_implemented
from ..tensor import Tensor, as_int, dim_index, linear_graph, named, no_grad, record, tape_mark, tensor
from .copy import (add_at, cat, clone, diagonal, diff, expand, flip, gather, movedim, narrow, reshape, scatter_add, squeeze,
                   take_along_dim, to, unsqueeze)
from .gemm import cov, tensordot
from .inputs import ABSENT, check_args, check_tensors, numpy_names
from .pointwise import (add, ceil, clamp, div, eq, exp, floor, floor_divide, isnan, lerp, log, logical_and,
                        logical_not, logical_or, lt, mul, neg, round, sqrt, sub, where)
from .reduce import argmax, sum, tie_shared

sort_result, topk_result = return_types.sort, return_types.topk
cummax_result, cummin_result = return_types.cummax, return_types.cummin
median_result, nanmedian_result = return_types.median, return_types.nanmedian
kthvalue_result, mode_result = return_types.kthvalue, return_types.mode


def _sorted(name, input, dim, k, descending, result):
    """result(values, indices) of input sorted along dim, its first k (None: all); the gradient of
    the values goes back to the places they came from."""
    check_tensors(name, input=input)
    if input.ndim == 0:  # torch takes dim 0 (or -1) of a 0-d input: itself, index 0
        dim_index(dim, 0)
        values, indices = _sorted(name, reshape(input, 1), 0, k, descending, result)
        return result(reshape(values, ()), reshape(indices, ()))
    d = dim_index(dim, input.ndim)
    shape = input.shape
    values, indices = _sort.sort(input.memory, d, k, descending)

    def backward(g):
        return (_sort.unsort(g, indices, shape, d),)

    def graph(g, out):  # g added back at the indices: a scatter_add, whose own gradient gathers there
        return (scatter_add(Tensor(torch.zeros_like(input.memory)), d, Tensor(indices), g),)
    return result(record(name, values, (input,), backward, saved=(indices,), graph=graph), Tensor(indices))


def msort(input):
    """input sorted along its first dim, as torch.msort: sort(input, 0).values."""
    return sort(input, 0).values


@numpy_names
def sort(input, dim=-1, descending=False, stable=False):
    """sort_result(values, indices) of input sorted along dim, ascending (or descending); NaN is the
    largest; equal elements keep their order (stable, whatever `stable` says)."""
    check_args("sort", "bool", descending=descending, **({} if stable is None else {"stable": stable}))
    return _sorted("sort", input, dim, None, descending, sort_result)


@numpy_names
def argsort(input, dim=-1, descending=False, stable=False):
    """The int64 indices that sort input along dim (see sort)."""
    return sort(input, dim, descending, stable).indices


@numpy_names
def topk(input, k, dim=-1, largest=True, sorted=True):
    """topk_result(values, indices) of the k largest (or smallest) elements along dim, always in
    sorted order (largest first, or smallest); among equal elements the first ones. NaN is the
    largest, as torch's."""
    check_tensors("topk", input=input)
    check_args("topk", "int", k=k, dim=dim)
    check_args("topk", "bool", largest=largest, sorted=sorted)
    k = as_int(k)
    d = dim_index(dim, input.ndim)  # its range before k's, a 0-d input's too (0 or -1), as torch's
    n = input.shape[d] if input.ndim else 1
    check(0 <= k <= n, "topk: selected index k out of range")
    return _sorted("topk", input, dim, k if input.ndim else 1, largest, topk_result)  # torch's 0-d k=0: the element


def _scan_dim(name, input, dim):
    check_tensors(name, input=input)
    return dim_index(dim, input.ndim)


@numpy_names
def cumsum(input, dim, *, dtype=None):
    """The running sum along dim, in fp32; integers and bools in int64 by default, as torch's (dtype:
    the result's, the input cast to it first). The gradient is the reversed running sum of g."""
    d = _scan_dim("cumsum", input, dim)
    if input.ndim == 0:
        return reshape(cumsum(reshape(input, 1), 0, dtype=dtype), ())
    y = _sort.scan(input.memory, d, "sum", dtype=dtype)
    if not y.is_floating_point():
        return Tensor(y)
    backward = lambda g: (_sort.scan(g, d, "sum", reverse=True, dtype=input.dtype),)
    return record("cumsum", y, (input,), backward,
                  graph=linear_graph("cumsum", backward, lambda h: _sort.scan(h, d, "sum", dtype=y.dtype)))


@numpy_names
def cumprod(input, dim, *, dtype=None):
    """The running product along dim, in fp32; integers and bools in int64 by default, as torch's.
    The gradient is torch's, zeros included: before a row's first zero, the reversed running sum of
    g * y over x; at that zero, the product before it times the sum of g * (the running product past
    it); after it, 0. Each sum takes only its own stretch (before the first zero; from it to the
    second), as torch's masks: an inf before a zero makes y NaN past it, which must not reach them."""
    d = _scan_dim("cumprod", input, dim)
    if input.ndim == 0:
        return reshape(cumprod(reshape(input, 1), 0, dtype=dtype), ())
    X = input.memory
    y = _sort.scan(X, d, "prod", dtype=dtype)
    if not y.is_floating_point():
        return Tensor(y)
    if X.shape[d] == 1:  # y = x: g itself, as torch's (g * y / x overflows at 3e38)
        return record("cumprod", y, (input,), lambda g: (g,))

    def backward(g):
        zero = _pw.pointwise("eq", X, 0)
        zeros_so_far = _sort.scan(zero, d)
        before = _pw.pointwise("eq", zeros_so_far, 0)
        to_second = _pw.pointwise("eq", zeros_so_far, 1)
        first = _pw.pointwise("logical_and", zero, to_second)
        gy = _pw.pointwise("where", before, _pw.pointwise("mul", g, y), 0.0)
        upto = _pw.pointwise("div", _sort.scan(gy, d, reverse=True), X)
        # at the first zero: (the product before it) * the sum of g * (the product past it), in torch's order
        past = _pw.pointwise("where", _pw.pointwise("logical_or", before, first), 1.0, X)
        g_past = _pw.pointwise("mul", g, _sort.scan(past, d, "prod", dtype=torch.float32))
        sums = _sort.scan(_pw.pointwise("where", to_second, g_past, 0.0), d, reverse=True)
        prefix = _sort.scan(_pw.pointwise("where", before, X, 1.0), d, "prod", dtype=torch.float32)
        at_first = _pw.pointwise("mul", sums, prefix)
        return (_pw.pointwise("where", before, upto, _pw.pointwise("where", first, at_first, 0.0),
                              dtype=input.dtype),)
    return record("cumprod", y, (input,), backward, saved=(X, y))


def _cumulative_extreme(name, input, dim, largest, result):
    """result(values, indices): the running max (largest) or min along dim and where it was taken
    (kernels/sort.py scan_extreme); the values' gradient is added back at those places."""
    if isinstance(input, Tensor) and not input.numel() and isinstance(dim, numbers.Integral):
        dim = 0  # torch's cummax and cummin check no dim of an empty input, its type only: any gives the empty result
    d = _scan_dim(name, input, dim)
    if input.ndim == 0:
        values, indices = _cumulative_extreme(name, reshape(input, 1), 0, largest, result)
        return result(reshape(values, ()), reshape(indices, ()))
    y, i = _sort.scan_extreme(input.memory, d, largest)
    if not y.is_floating_point():
        return result(Tensor(y), Tensor(i))
    shape, dtype = input.shape, input.dtype
    return result(record(name, y, (input,), lambda g: (add_at(shape, d, i, g, dtype),), saved=(i,)), Tensor(i))


@numpy_names
def cummax(input, dim):
    """cummax_result(values, indices): the running maximum along dim and the index it came from, as
    torch.cummax: NaN propagates (its index the latest NaN's), a tie takes the later index."""
    return _cumulative_extreme("cummax", input, dim, True, cummax_result)


@numpy_names
def cummin(input, dim):
    """cummin_result(values, indices): the running minimum along dim (see cummax)."""
    return _cumulative_extreme("cummin", input, dim, False, cummin_result)


def _picked(values, indices, d, pick, keepdim):
    """values' and indices' elements at pick (int64, keepdim's shape) along d."""
    v, i = gather(values, d, pick), gather(indices, d, pick)
    return (v, i) if keepdim else (reshape(v, v.shape[:d] + v.shape[d + 1:]), reshape(i, i.shape[:d] + i.shape[d + 1:]))


def _check_dim(name, input, dim, keepdim):
    """torch's order for a reduction over one dim: the argument types (keepdim a bool, dim an int), then
    dim's range, before any check of the values or the dtype."""
    if dim is ABSENT:
        return
    check_args(name, "int", dim=dim)
    check_args(name, "bool", keepdim=keepdim)
    dim_index(dim, input.ndim)


def _refuse_bool(input, dim):
    """median's and nanmedian's NotImplementedError for a bool input, as torch's: but of nothing (no dim), and
    along an empty dim (its IndexError comes first)."""
    if input.dtype != torch.bool:
        return
    reduced = dim is not ABSENT and (input.shape[dim_index(dim, input.ndim)] if input.ndim else 1)  # a 0-d's dim: 1
    if input.numel() or reduced:
        raise not_implemented("median", torch.bool)


@numpy_names
def _empty_median(input):
    """median's and nanmedian's answer for an empty input, no dim: NaN in input's dtype, as torch's
    (an integer's NaN cast is its dtype's least: int32's -2**31, uint8's 0; a bool's True)."""
    if not input.memory.is_floating_point():
        nan = True if input.dtype == torch.bool else torch.iinfo(input.dtype).min
        return Tensor(torch.full((), nan, dtype=input.dtype, device=input.device))
    return reshape(input, (-1,)).sum() * math.nan


def median(input, dim=ABSENT, keepdim=False):
    """The lower median ((n - 1) // 2-th smallest) of all elements (no dim: a 0-d tensor), or
    median_result(values, indices) along dim; NaN where the row holds one (the index the first NaN's),
    as torch.median; by a stable sort (kernels/sort.py). The gradient goes to the picked element (no
    dim: shared by the elements equal to it, as torch's)."""
    check_tensors("median", input=input)
    _check_dim("median", input, dim, keepdim)
    _refuse_bool(input, dim)
    if dim is ABSENT:
        if input.numel():
            with no_grad():
                value = median(reshape(input, (-1,)), 0).values
            return tie_shared("median", input, value.memory)
        return _empty_median(input)
    if input.ndim == 0:
        dim_index(dim, 0)
        values, indices = median(reshape(input, 1), 0, True)
        return median_result(reshape(values, ()), reshape(indices, ()))
    d = dim_index(dim, input.ndim)
    if input.shape[d] == 0:  # torch's IndexError, an integer input's too
        raise InputIndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    values, indices = sort(input, d)
    n = input.shape[d]
    if input.memory.is_floating_point():
        nans = _sort.scan(_pw.pointwise("ne", values.memory, values.memory), d).narrow(d, n - 1, 1)  # NaNs per row
        pick = Tensor(_pw.pointwise("where", _pw.pointwise("gt", nans, 0), _pw.pointwise("sub", n, nans), (n - 1) // 2))
    else:
        pick = Tensor(torch.full(values.shape[:d] + (1,) + values.shape[d + 1:], (n - 1) // 2, dtype=torch.int64,
                                 device=input.device))
    return median_result(*_picked(values, indices, d, pick, keepdim))


@numpy_names
def kthvalue(input, k, dim=-1, keepdim=False):
    """kthvalue_result(values, indices): the k-th smallest element along dim (k from 1) and its index,
    as torch.kthvalue (NaN the largest), by a stable sort. The gradient goes to that element."""
    check_tensors("kthvalue", input=input)
    check_args("kthvalue", "int", k=k)
    k = as_int(k)
    _check_dim("kthvalue", input, dim, keepdim)
    if input.ndim == 0:
        dim_index(dim, 0)
        check(k == 1, "kthvalue(): selected number k out of range for dimension 0")
        return kthvalue_result(input * 1, Tensor(torch.zeros((), dtype=torch.int64, device=input.device)))
    d = dim_index(dim, input.ndim)
    if input.shape[d] == 0:  # torch's IndexError before its range check of k
        raise InputIndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    check(1 <= k <= input.shape[d], lambda: f"kthvalue(): selected number k out of range for dimension {d}")
    mark = tape_mark()  # the values' node: torch's one op's (KthvalueBackward0)
    values, indices = sort(input, d)
    v, i = narrow(values, d, k - 1, 1), narrow(indices, d, k - 1, 1)
    if not keepdim:
        v, i = reshape(v, v.shape[:d] + v.shape[d + 1:]), reshape(i, i.shape[:d] + i.shape[d + 1:])
    # contiguous as torch's, not a slice's strides
    return kthvalue_result(named("kthvalue", mark, v.contiguous()), i.contiguous())


# ---- shape and indexing ops of the eighth session: quantiles, modes and searches ----------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    """torch's quantile_compute: input sorted along dim (NaN last), the rank q * (n - 1) of each q
    (ignore_nan: n the row's non-NaN count; else a row with a NaN takes its last element, NaN),
    adjusted by interpolation, its neighbours gathered and interpolated (lerp). Gradients go to the
    two neighbours, through the sort."""
    check_tensors(name, input=input)
    check_args(name, "bool", keepdim=keepdim)
    check_args(name, "str", interpolation=interpolation)
    if dim is not None:
        check_args(name, "int", dim=dim)
    check(input.numel() > 0, lambda: f"{name}() input tensor must be non-empty")
    check(input.dtype == torch.float32, lambda: f"{name}() input tensor must be either float or double dtype")  # no 16-bit
    check(interpolation in _INTERPOLATIONS,
          lambda: f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
                  f"{interpolation}")
    if isinstance(q, Tensor):
        check(q.ndim <= 1, lambda: f"{name}() q must be a scalar or 1D tensor")
        check(q.dtype == input.dtype, lambda: f"{name}() q tensor must be same dtype as the input tensor")
        no_host_read(q.memory, f"{name}(q=tensor)")
        q_values = q.memory.detach().cpu().float().numpy()
        scalar, q = q.ndim == 0, reshape(q, (-1,))
    else:
        check(0 <= q <= 1, lambda: f"{name}() q must be in the range [0, 1] but got {q}")
        scalar, q, q_values = True, tensor([q], dtype=input.dtype), None
    x = reshape(input, (-1,)) if dim is None else input
    d = dim_index(0 if dim is None else dim, x.ndim)
    if q_values is not None:  # a tensor q's values after the dim, as torch's (its CPU check is in the computation)
        check(((q_values >= 0) & (q_values <= 1)).all(), lambda: f"{name}() q values must be in the range [0, 1]")
    if x.ndim == 0:
        x = reshape(x, (1,))
    values = movedim(sort(x, d).values, d, -1)  # [..., n]
    n = values.shape[-1]
    q = reshape(q, (-1,) + (1,) * values.ndim)  # [Q, 1..., 1]
    nan = isnan(values)
    if ignore_nan:
        ranks = mul(q, sub(sum(logical_not(nan), -1, keepdim=True), 1))
        ranks = where(lt(ranks, 0), 0.0, ranks)
    else:
        ranks = where(narrow(nan, -1, n - 1, 1), float(n - 1), mul(q, n - 1))
    ranks = {"lower": floor, "higher": ceil, "nearest": round}.get(interpolation, lambda r: r)(ranks)
    below = ranks.long()
    rows = unsqueeze(values, 0)
    out = take_along_dim(rows, below, -1)
    if interpolation in ("linear", "midpoint"):
        weights = sub(ranks, below) if interpolation == "linear" else mul(ones_like(ranks), 0.5)
        out = lerp(out, take_along_dim(rows, ceil(ranks).long(), -1), weights.to(out.dtype))
    out = squeeze(out, -1)  # [Q, ...] over input's dims but dim
    if keepdim:
        out = unsqueeze(out, d + 1) if dim is not None else reshape(out, (out.shape[0],) + (1,) * input.ndim)
        if dim is not None and input.ndim == 0:
            out = reshape(out, (out.shape[0],))
    return squeeze(out, 0) if scalar else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles (q a number or a 1-D tensor of them, in [0, 1]: a leading dim) of input
    over dim (None: all elements), as torch.quantile; NaN where a row holds one. A sort and gathers."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile of the non-NaN elements (NaN for a row of NaNs only), as torch.nanquantile."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


@numpy_names
def nanmedian(input, dim=ABSENT, keepdim=False):
    """median of the non-NaN elements: the ((k - 1) // 2)-th smallest of a row's k, NaN (index 0)
    for a row of NaNs; no dim: a 0-d tensor (NaN for an empty input), else nanmedian_result(values,
    indices), as torch.nanmedian. The gradient goes to the picked element (no dim: as median's)."""
    check_tensors("nanmedian", input=input)
    _check_dim("nanmedian", input, dim, keepdim)
    _refuse_bool(input, dim)
    if dim is ABSENT:
        if not input.numel():
            return _empty_median(input)
        with no_grad():
            value = nanmedian(reshape(input, (-1,)), 0).values
        return tie_shared("nanmedian", input, value.memory)
    if input.ndim == 0:
        dim_index(dim, 0)
        values, indices = nanmedian(reshape(input, 1), 0, True)
        return nanmedian_result(reshape(values, ()), reshape(indices, ()))
    d = dim_index(dim, input.ndim)
    if input.shape[d] == 0:  # torch's IndexError, worded as its median's
        raise InputIndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    values, indices = sort(input, d)
    count = sum(logical_not(isnan(values)), d, keepdim=True)
    pick = where(lt(count, 1), 0, floor_divide(sub(count, 1), 2))
    return nanmedian_result(*_picked(values, indices, d, pick, keepdim))


@numpy_names
def mode(input, dim=-1, keepdim=False):
    """mode_result(values, indices): the most frequent value along dim (the smallest among ties) and
    the index of its last occurrence, as torch.mode, from a stable sort: each element's run of equal
    values (running max and min of the runs' ends), the first longest. The gradient goes to that
    element. A NaN counts as equal to another NaN (torch's index for a NaN mode may differ)."""
    check_tensors("mode", input=input)
    _check_dim("mode", input, dim, keepdim)
    if input.ndim == 0:
        dim_index(dim, 0)
        return mode_result(clone(input), Tensor(torch.zeros((), dtype=torch.int64, device=input.device)))  # a bool stays bool
    d = dim_index(dim, input.ndim)
    n = input.shape[d]
    if n == 0:
        raise InputIndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    mark = tape_mark()
    values, indices = sort(input, d)
    v = Tensor(values.memory)
    a, b = narrow(v, d, 1, n - 1), narrow(v, d, 0, n - 1)
    new = logical_not(logical_or(eq(a, b), logical_and(isnan(a), isnan(b))))  # a run starts at a
    edge = ones_like(narrow(v, d, 0, 1), dtype=torch.bool)
    starts, ends = cat([edge, new], d), cat([new, edge], d)
    pos = reshape(arange(n), [n if k == d else 1 for k in range(input.ndim)])
    first = cummax(where(starts, pos, 0), d).values
    last = flip(cummin(flip(where(ends, pos, n), (d,)), d).values, (d,))
    pick = gather(last, d, argmax(sub(last, first), d, keepdim=True))
    picked_values, picked_indices = _picked(values, indices, d, pick, keepdim)
    return mode_result(named("mode", mark, picked_values), picked_indices)  # torch's node: its one op's


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where input's values would go in sorted_sequence's innermost rows (1-D: one row for all
    values; else its leading dims match input's) to keep them sorted: the first position whose
    element is >= the value (right, or side 'right': >), NaN the largest, as torch.searchsorted
    (sorter: the indices that sort the rows). A binary search kernel; int64 (out_int32: int32)."""
    check_args("searchsorted", "bool", out_int32=out_int32, right=right)
    if side is not None:
        check_args("searchsorted", "str", side=side)
    check_tensors("searchsorted", sorted_sequence=sorted_sequence)
    check(side in (None, "left", "right"), lambda: f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                                                   f"{side}")
    check(side is None or (side == "right") == bool(right) or not right,
          lambda: f"torch.searchsorted(): side and right can't be set to opposites, got side of {side} while right "
                  f"was True")
    right = bool(right) or side == "right"
    values = input if isinstance(input, Tensor) else tensor(input, dtype=sorted_sequence.dtype)
    seq = sorted_sequence
    check(seq.ndim >= 1, "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                         "of boundaries tensor and input value tensor must match")
    check(seq.ndim == 1 or (values.ndim == seq.ndim and values.shape[:-1] == seq.shape[:-1]),
          lambda: f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                  f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                  f"{list(seq.shape)} and input value tensor {list(values.shape)}")
    if sorter is not None:
        check(sorter.shape == seq.shape, "torch.searchsorted(): boundary and sorter must have the same size")
        seq = take_along_dim(seq, sorter, -1)
    floats = seq.dtype.is_floating_point or values.dtype.is_floating_point
    dtype = seq.dtype if seq.dtype == values.dtype else torch.float32 if floats else torch.int64
    dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype  # compared in fp32
    s, v = (copy_(torch.empty(t.shape, dtype=dtype, device=t.device), t.memory) for t in (seq, values))
    rows = math.prod(seq.shape[:-1])
    s = s if seq.ndim == 1 else s.view(rows, seq.shape[-1])
    out = _copy.search(s, v.view(rows, values.shape[-1]) if seq.ndim > 1 else v.view(-1), right,
                       torch.int32 if out_int32 else torch.int64)
    return Tensor(out.view(values.shape))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each of input's values among the 1-D boundaries (searchsorted(boundaries, input,
    right=right)), as torch.bucketize."""
    check_args("bucketize", "bool", out_int32=out_int32, right=right)
    check_tensors("bucketize", boundaries=boundaries)
    check(boundaries.ndim == 1, lambda: f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ---- running products and sums, and matrix products, of the eighth session (here, not in
# reduce.py, which gemm.py imports: a scan, or a product of gemm.py's) ---------------------------

def vander(x, N=None, increasing=False):
    """The Vandermonde matrix [len(x), N] of the powers of a 1-D x (highest first unless increasing),
    as torch.vander: a running product (cumprod), integers in int64."""
    check_tensors("vander", x=x)
    check_args("vander", "bool", increasing=increasing)
    if N is not None:  # its type before the input's rank, as torch's parser
        check_args("vander", "int", N=N)
    check(x.ndim == 1, "x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    check(n >= 0, "N must be non-negative.")
    dtype = x.dtype if x.dtype.is_floating_point else torch.int64
    ones = Tensor(torch.ones((x.shape[0], 1), dtype=dtype, device=x.device))
    if n <= 1:
        return narrow(ones, 1, 0, n)
    powers = cumprod(cat([ones, expand(unsqueeze(to(x, dtype), 1), (x.shape[0], n - 1))], 1), 1)
    return powers if increasing else flip(powers, (1,))


@numpy_names
def logcumsumexp(input, dim):
    """log(cumsum(exp(input), dim)), as torch.logcumsumexp: one scan of logaddexp (a running shift by the
    larger: no underflow of elements far below a later one; NaN propagates, +inf stays). The gradient,
    sum over i >= j of g_i exp(x_j - y_i), comes as exp(x_j + a reversed logcumsumexp of log(g_i) - y_i) over
    g's positive and negative parts, as torch's (no overflow). Not differentiable twice (create_graph)."""
    check_tensors("logcumsumexp", input=input)
    check(input.dtype in FLOATS, lambda: f"\"logcumsumexp\" not implemented for '{input.dtype}'")
    d = dim_index(dim, input.ndim)
    if input.ndim == 0 or input.numel() == 0:  # itself, its gradient g (NaN too), as torch's
        return mul(input, 1)
    y = _sort.scan(input.memory, d, "logsumexp")

    def backward(g):
        with no_grad():  # in fp32: 16-bit sums x_j + (log(g_i) - y_i) of large terms would lose them
            x, out, g = Tensor(input.memory).float(), Tensor(y).float(), Tensor(g).float()

            def part(h):  # h >= 0: sum over i >= j of h_i exp(x_j - y_i)
                return exp(add(x, Tensor(_sort.scan(sub(log(h), out).memory, d, "logsumexp", reverse=True))))
            return (sub(part(clamp(g, min=0.0)), part(clamp(neg(g), min=0.0))).to(input.dtype).memory,)
    return record("logcumsumexp", y, (input,), backward, saved=(input, y))


def inner(input, other):
    """Sums of products over both inputs' last dims, [*a, k] x [*b, k] -> [*a, *b] (a 0-d input:
    the element-wise product), as torch.inner: one tensordot (a matmul)."""
    check_tensors("inner", input=input, other=other)
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    check(input.shape[-1] == other.shape[-1],
          lambda: f"inner() the last dimension must match on both input tensors but got shapes {list(input.shape)} "
                  f"and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def corrcoef(input):
    """The Pearson correlation coefficients of x's rows (the variables; a 1-D x or one row: one, a 0-d result),
    clipped to [-1, 1], as torch.corrcoef: cov over the outer product of the standard deviations."""
    c = cov(input)
    if c.ndim == 0:
        return div(c, c)
    d = sqrt(diagonal(c))  # torch's ops (pow's gradient rounds otherwise in 16 bits)
    return clamp(div(div(c, unsqueeze(d, 1)), unsqueeze(d, 0)), -1.0, 1.0)


# ---- the tensor surface of the eighth session (ops3): the trapezoidal rule ----------------------

def _float_samples(name, y, dim):
    """trapezoid's checks of y, and y as floats (integers as float32) with dim's index."""
    check_tensors(name, y=y)
    if y.ndim == 0:
        raise InputIndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return (y if y.dtype in FLOATS else to(y, torch.float32)), dim_index(dim, y.ndim)


def _spacing_args(name, x, dx, dim):
    """trapezoid's x and dx as torch's parser matches its overloads (y, x, *, dim) and (y, *, dx=1, dim): an
    explicit None for either, an x that is no Tensor, or both given, match neither (TypeError); then dx's and
    dim's types, before any shape. Returns (x, dx), None where not given."""
    if x is None or dx is None or (x is not ABSENT and (dx is not ABSENT or not isinstance(x, Tensor))):
        got = ", ".join(["Tensor"] + [f"{arg}={type(v).__name__}" for arg, v in (("x", x), ("dx", dx)) if v is not ABSENT])
        raise InputTypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one "
                             f"of: (Tensor y, Tensor x, *, int dim = -1), (Tensor y, *, Number dx = 1, int dim = -1)")
    check_args(name, "float", dx=1 if dx is ABSENT else dx)
    check_args(name, "int", dim=dim)
    return (None if x is ABSENT else x), (None if dx is ABSENT else dx)


def _trapezoids(name, y, x, dx, dim, total):
    """total (sum or cumsum) along dim of the trapezoids between y's neighbours (float), in torch's order:
    over x's steps (x 1-D along dim, or broadcasting with y) total((y[k] + y[k + 1]) * step) / 2, so a
    product past the range is inf before the halving; over a spacing total((y[k] + y[k + 1]) * (dx / 2))."""
    y, d = _float_samples(name, y, dim)
    n = y.shape[d]
    pairs = add(narrow(y, d, min(n, 1), max(n - 1, 0)), narrow(y, d, 0, max(n - 1, 0)))
    if x is None:
        return total(mul(pairs, 0.5 if dx is None else dx / 2), d)
    check_tensors(name, x=x)
    if x.ndim == 1:
        check(x.shape[0] == n, "trapezoid: There must be one `x` value for each sample point")
        steps = diff(x)
        steps = reshape(steps, (-1,) + (1,) * (y.ndim - 1 - d))
    else:
        steps = diff(x, dim=d if x.ndim == y.ndim else dim)
    return mul(total(mul(steps, pairs), d), 0.5)


def _trapezoid(name, y, x, dx, dim):
    x, dx = _spacing_args(name, x, dx, dim)
    if isinstance(y, Tensor) and y.ndim and y.shape[dim_index(dim, y.ndim)] == 0:
        d = dim_index(dim, y.ndim)
        return Tensor(torch.zeros(y.shape[:d] + y.shape[d + 1:], dtype=y.dtype, device=y.device))
    if x is not None:
        return _trapezoids(name, y, x, dx, dim, sum)
    y, d = _float_samples(name, y, dim)
    ends = add(narrow(y, d, 0, 1), narrow(y, d, y.shape[d] - 1, 1))
    total = sub(sum(y, d), mul(squeeze(ends, d), 0.5))
    return total if dx is None else mul(total, dx)


def trapezoid(y, x=ABSENT, *, dx=ABSENT, dim=-1):
    """torch.trapezoid: the integral of y along dim by the trapezoidal rule, over the sample points x
    (1-D along dim, or broadcasting with y) or a spacing dx (1); integers give floats. Differentiable.
    As torch's: a spacing takes (sum(y) - (y[0] + y[-1]) / 2) dx (so an infinite end gives NaN, and
    one sample its own inf - inf), and a dim of size 0 zeros of y's dtype, outside the graph; x and dx
    together, or an explicit None for either, raise TypeError (no overload of torch's takes them)."""
    return _trapezoid("trapezoid", y, x, dx, dim)


def trapz(y, x=ABSENT, *, dx=ABSENT, dim=-1):
    """torch.trapz: trapezoid."""
    return _trapezoid("trapz", y, x, dx, dim)


def cumulative_trapezoid(y, x=ABSENT, *, dx=ABSENT, dim=-1):
    """torch.cumulative_trapezoid: the running integral of y along dim (one shorter) by the trapezoidal
    rule, as trapezoid takes x and dx."""
    return _trapezoids("cumulative_trapezoid", y, *_spacing_args("cumulative_trapezoid", x, dx, dim), dim, cumsum)
