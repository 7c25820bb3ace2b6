"""Sorting and scans along one axis (kernels/sort.py): sort, argsort, topk, cumsum and cumprod, as
torch's, with their gradients. Sorts are always stable (torch's stable=True order, which
stable=False also allows), of rows of up to kernels.sort.MAX_SORT elements on the GPU."""
import collections
import math

import torch

from ..kernels import pointwise as _pw
from ..kernels import sort as _sort
from ..kernels.launch import check
from ..tensor import Tensor, dim_index, record
from .copy import add_at, gather, narrow, reshape
from .inputs import check_tensors

sort_result = collections.namedtuple("sort", ["values", "indices"])
topk_result = collections.namedtuple("topk", ["values", "indices"])
cummax_result = collections.namedtuple("cummax", ["values", "indices"])
cummin_result = collections.namedtuple("cummin", ["values", "indices"])
median_result = collections.namedtuple("median", ["values", "indices"])
kthvalue_result = collections.namedtuple("kthvalue", ["values", "indices"])


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
    return result(record(name, values, (input,), backward, saved=(indices,)), Tensor(indices))


def msort(input):
    """input sorted along its first dim, as torch.msort: sort(input, 0).values."""
    return sort(input, 0).values


def sort(input, dim=-1, descending=False, stable=False):
    """sort_result(values, indices) of input sorted along dim, ascending (or descending); NaN is the
    largest; equal elements keep their order (stable, whatever `stable` says)."""
    return _sorted("sort", input, dim, None, descending, sort_result)


def argsort(input, dim=-1, descending=False, stable=False):
    """The int64 indices that sort input along dim (see sort)."""
    return sort(input, dim, descending, stable).indices


def topk(input, k, dim=-1, largest=True, sorted=True):
    """topk_result(values, indices) of the k largest (or smallest) elements along dim, always in
    sorted order (largest first, or smallest); among equal elements the first ones. NaN is the
    largest, as torch's."""
    check_tensors("topk", input=input)
    n = input.shape[dim_index(dim, input.ndim)] if input.ndim else 1
    check(0 <= k <= n, "topk: selected index k out of range")
    return _sorted("topk", input, dim, k, largest, topk_result)


def _scan_dim(name, input, dim):
    check_tensors(name, input=input)
    return dim_index(dim, input.ndim)


def cumsum(input, dim, *, dtype=None):
    """The running sum along dim, in fp32; integers and bools in int64 by default, as torch's (dtype:
    the result's, the input cast to it first). The gradient is the reversed running sum of g."""
    d = _scan_dim("cumsum", input, dim)
    if input.ndim == 0:
        return reshape(cumsum(reshape(input, 1), 0, dtype=dtype), ())
    y = _sort.scan(input.memory, d, "sum", dtype=dtype)
    if not y.is_floating_point():
        return Tensor(y)
    return record("cumsum", y, (input,), lambda g: (_sort.scan(g, d, "sum", reverse=True, dtype=input.dtype),))


def cumprod(input, dim, *, dtype=None):
    """The running product along dim, in fp32; integers and bools in int64 by default, as torch's.
    The gradient is torch's, zeros included: before a row's first zero, the reversed running sum of
    g * y over x; at that zero, the reversed running sum of g * (the running product with that zero
    read as 1); after it, 0."""
    d = _scan_dim("cumprod", input, dim)
    if input.ndim == 0:
        return reshape(cumprod(reshape(input, 1), 0, dtype=dtype), ())
    X = input.memory
    y = _sort.scan(X, d, "prod", dtype=dtype)
    if not y.is_floating_point():
        return Tensor(y)

    def backward(g):
        zero = _pw.pointwise("eq", X, 0)
        zeros_so_far = _sort.scan(zero, d)
        before = _pw.pointwise("eq", zeros_so_far, 0)
        first = _pw.pointwise("logical_and", zero, _pw.pointwise("eq", zeros_so_far, 1))
        upto = _pw.pointwise("div", _sort.scan(_pw.pointwise("mul", g, y), d, reverse=True), X)
        skipped = _sort.scan(_pw.pointwise("where", first, 1.0, X), d, "prod", dtype=torch.float32)
        at_first = _sort.scan(_pw.pointwise("mul", g, skipped), d, reverse=True)
        return (_pw.pointwise("where", before, upto, _pw.pointwise("where", first, at_first, 0.0),
                              dtype=input.dtype),)
    return record("cumprod", y, (input,), backward, saved=(X, y))


def _cumulative_extreme(name, input, dim, largest, result):
    """result(values, indices): the running max (largest) or min along dim and where it was taken
    (kernels/sort.py scan_extreme); the values' gradient is added back at those places."""
    d = _scan_dim(name, input, dim)
    if input.ndim == 0:
        values, indices = _cumulative_extreme(name, reshape(input, 1), 0, largest, result)
        return result(reshape(values, ()), reshape(indices, ()))
    y, i = _sort.scan_extreme(input.memory, d, largest)
    if not y.is_floating_point():
        return result(Tensor(y), Tensor(i))
    shape, dtype = input.shape, input.dtype
    return result(record(name, y, (input,), lambda g: (add_at(shape, d, i, g, dtype),), saved=(i,)), Tensor(i))


def cummax(input, dim):
    """cummax_result(values, indices): the running maximum along dim and the index it came from, as
    torch.cummax: NaN propagates (its index the latest NaN's), a tie takes the later index."""
    return _cumulative_extreme("cummax", input, dim, True, cummax_result)


def cummin(input, dim):
    """cummin_result(values, indices): the running minimum along dim (see cummax)."""
    return _cumulative_extreme("cummin", input, dim, False, cummin_result)


def _picked(values, indices, d, pick, keepdim):
    """values' and indices' elements at pick (int64, keepdim's shape) along d."""
    v, i = gather(values, d, pick), gather(indices, d, pick)
    return (v, i) if keepdim else (reshape(v, v.shape[:d] + v.shape[d + 1:]), reshape(i, i.shape[:d] + i.shape[d + 1:]))


def median(input, dim=None, keepdim=False):
    """The lower median ((n - 1) // 2-th smallest) of all elements (dim None: a 0-d tensor), or
    median_result(values, indices) along dim; NaN where the row holds one (the index the first NaN's),
    as torch.median; by a stable sort (kernels/sort.py). The gradient goes to the picked element."""
    check_tensors("median", input=input)
    if dim is None:
        return median(reshape(input, (-1,)), 0).values if input.numel() else reshape(input, (-1,)).sum() * math.nan
    if input.ndim == 0:
        dim_index(dim, 0)
        values, indices = median(reshape(input, 1), 0, True)
        return median_result(reshape(values, ()), reshape(indices, ()))
    d = dim_index(dim, input.ndim)
    values, indices = sort(input, d)
    n = input.shape[d]
    if input.memory.is_floating_point():
        nans = _sort.scan(_pw.pointwise("ne", values.memory, values.memory), d).narrow(d, n - 1, 1)  # NaNs per row
        pick = Tensor(_pw.pointwise("where", _pw.pointwise("gt", nans, 0), _pw.pointwise("sub", n, nans), (n - 1) // 2))
    else:
        pick = Tensor(torch.full(values.shape[:d] + (1,) + values.shape[d + 1:], (n - 1) // 2, dtype=torch.int64,
                                 device=input.device))
    return median_result(*_picked(values, indices, d, pick, keepdim))


def kthvalue(input, k, dim=-1, keepdim=False):
    """kthvalue_result(values, indices): the k-th smallest element along dim (k from 1) and its index,
    as torch.kthvalue (NaN the largest), by a stable sort. The gradient goes to that element."""
    check_tensors("kthvalue", input=input)
    if input.ndim == 0:
        dim_index(dim, 0)
        check(k == 1, "kthvalue(): selected number k out of range for dimension 0")
        return kthvalue_result(input * 1, Tensor(torch.zeros((), dtype=torch.int64, device=input.device)))
    d = dim_index(dim, input.ndim)
    check(1 <= k <= input.shape[d], lambda: f"kthvalue(): selected number k out of range for dimension {d}")
    values, indices = sort(input, d)
    v, i = narrow(values, d, k - 1, 1), narrow(indices, d, k - 1, 1)
    if not keepdim:
        v, i = reshape(v, v.shape[:d] + v.shape[d + 1:]), reshape(i, i.shape[:d] + i.shape[d + 1:])
    return kthvalue_result(v, i)
