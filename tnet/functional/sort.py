"""Sorting and scans along one axis (kernels/sort.py): sort, argsort, topk, cumsum and cumprod, as
torch's, with their gradients. Sorts are always stable (torch's stable=True order, which
stable=False also allows), of rows of up to kernels.sort.MAX_SORT elements on the GPU."""
import collections

import torch

from ..kernels import pointwise as _pw
from ..kernels import sort as _sort
from ..kernels.launch import check
from ..tensor import Tensor, dim_index, record
from .copy import reshape
from .inputs import check_tensors

sort_result = collections.namedtuple("sort", ["values", "indices"])
topk_result = collections.namedtuple("topk", ["values", "indices"])


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
