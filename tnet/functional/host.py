"""Ops whose result's size depends on the values (unique, nonzero, argwhere, bincount, histc): each
reads its input back to the host (a sync, as torch's on a GPU), works it out there with numpy, and
copies the result to the device. None carries a gradient (torch's neither)."""

import numpy as np
import torch

from .. import return_types
from ..kernels import pointwise as _pw
from ..kernels.launch import InputDtypeError, check
from ..tensor import Tensor, as_int, dim_index
from .inputs import check_args, check_tensors


def _host(x):
    """x's values as a numpy array (16-bit floats as float32)."""
    x = x.memory.detach()
    return x.to("cpu", torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype).numpy()


def _device(array, dtype, device):
    # ascontiguousarray makes a 0-d array 1-d: the reshape keeps its shape (a 0-d input's inverse)
    return Tensor(torch.from_numpy(np.ascontiguousarray(array).reshape(np.shape(array))).to(device, dtype))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of input (flattened; with dim, the distinct slices along dim), in
    ascending order (also with sorted=False, as torch's CPU and CUDA kernels give them), then, as
    asked, the inverse indices (input's shape, or dim's length) and the counts, as torch.unique; each
    NaN is distinct, as torch's. Computed on the host: a sync."""
    check_args("unique", "bool", sorted=sorted, return_inverse=return_inverse, return_counts=return_counts)
    check_tensors("unique", input=input)
    x = _host(input)
    if dim is None:
        values, inverse, counts = np.unique(x.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        inverse = inverse.reshape(input.shape)
    else:
        d = dim_index(dim, input.ndim)
        _check_empty_along(input, d)
        values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True, axis=d, equal_nan=False)
        inverse = inverse.reshape(-1)
    out = [_device(values, input.dtype, input.device)]
    if return_inverse:
        out.append(_device(inverse, torch.int64, input.device))
    if return_counts:
        out.append(_device(counts, torch.int64, input.device))
    return out[0] if len(out) == 1 else tuple(out)


def _nonzero_mask(name, input):
    """input != 0 (on the device), on the host."""
    check_tensors(name, input=input)
    return _host(Tensor(_pw.pointwise("ne", input.memory, 0)))


def nonzero(input, *, as_tuple=False):
    """The indices of input's nonzero elements in row-major order: an int64 [n, ndim] tensor, or
    with as_tuple one 1-D tensor per dim (a 0-d input: as a 1-D one), as torch.nonzero. The test
    x != 0 runs on the device, the indices are found on the host: a sync."""
    mask = _nonzero_mask("nonzero", input)
    if as_tuple:
        return tuple(_device(i, torch.int64, input.device) for i in np.nonzero(mask.reshape(-1) if mask.ndim == 0 else mask))
    return _device(np.argwhere(mask), torch.int64, input.device)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero(input)'s first `size` rows, padded with rows of fill_value to `size`, as torch.nonzero_static (whose
    shape is fixed for compilers; here a host read as nonzero's)."""
    check(size >= 0, lambda: f"nonzero_static: 'size' must be an non-negative integer, but got size: {size}")
    found = np.argwhere(_nonzero_mask("nonzero_static", input))[:size]
    padded = np.full((size, found.shape[1]), fill_value, np.int64)
    padded[:len(found)] = found
    return _device(padded, torch.int64, input.device)


def argwhere(input):
    """nonzero(input): the [n, ndim] indices of its nonzero elements."""
    return nonzero(input)


def bincount(input, weights=None, minlength=0):
    """The count of each value 0, 1, ... in a 1-D tensor of non-negative integers (with weights:
    their sum per value, float32 for any float weights, where torch gives float64 for 16-bit ones),
    at least minlength long, as torch.bincount. Computed on the host: a sync."""
    check_tensors("bincount", input=input)
    check(input.ndim == 1 and not input.memory.is_floating_point() and input.dtype != torch.bool,
          "bincount only supports 1-d non-negative integral inputs.")
    check(minlength >= 0, "minlength should be >= 0")
    x = _host(input)
    check(x.size == 0 or x.min() >= 0, "bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _device(np.bincount(x, minlength=minlength), torch.int64, input.device)
    check_tensors("bincount", weights=weights)
    check(weights.shape == input.shape, "weights should be 1-d and have the same length as input")
    w = _host(weights).astype(np.float64)
    return _device(np.bincount(x, w, minlength=minlength), torch.float32, input.device)


def histc(input, bins=100, min=0, max=0):
    """A histogram of input's elements in `bins` equal bins over [min, max] (both 0: the elements'
    own min and max), those outside left out, the last bin closed, as torch.histc; in input's float
    dtype. Computed on the host, in float32: a sync."""
    check_args("histc", "int", bins=bins)
    bins = as_int(bins)
    check_args("histc", "float", min=min, max=max)
    check_tensors("histc", input=input)
    if not input.memory.is_floating_point():
        raise InputDtypeError(f"histc: expected a float tensor, got {input.dtype}")
    check(bins > 0, "torch.histc: bins must be > 0")
    x = _host(input).reshape(-1).astype(np.float32)
    lo, hi = np.float32(min), np.float32(max)
    if lo == hi and x.size:
        lo, hi = x.min(), x.max()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    check(lo <= hi, lambda: f"torch.histc: max must be larger than min, got {min} and {max}")
    check(np.isfinite(lo) and np.isfinite(hi), lambda: f"torch.histc: range of [{lo}, {hi}] is not finite")
    x = x[(x >= lo) & (x <= hi)]
    with np.errstate(over="ignore"):
        if not np.isfinite(hi - lo):  # torch's edges (linspace's) over a range past float32's end in NaN: none counts
            x = x[:0]
    if lo == hi:  # past 2^25 the +-1 above rounds away: torch counts the elements in the middle bin, as in [v - 1, v + 1]
        return _device(np.bincount(np.full(x.size, bins // 2), minlength=bins), input.dtype, input.device)
    with np.errstate(over="ignore"):  # (x - lo) * bins may overflow near 3e38: inf, clipped to the last bin
        pos = np.clip((x - lo) * np.float32(bins) / (hi - lo), 0, bins - 1)
    counts = np.bincount(pos.astype(np.int64), minlength=bins)
    return _device(counts, input.dtype, input.device)


# ---- shape and indexing ops of the eighth session -----------------------------------------------

def _check_empty_along(input, d):
    """torch's rule for unique and unique_consecutive along dim d of an empty input: d is its one dim of size 0."""
    if input.numel() == 0:
        check(input.shape[d] == 0, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        check(list(input.shape).count(0) == 1, "Number of zero sized dimensions is more than one, so unique cannot be "
                                               "applied ")


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """input's values (flattened; with dim, its slices along dim) with each run of equal
    neighbours kept once, then, as asked, the inverse indices (input's shape, or dim's length) and
    the runs' lengths, as torch.unique_consecutive. Computed on the host: a sync."""
    check_tensors("unique_consecutive", input=input)
    check_args("unique_consecutive", "bool", return_inverse=return_inverse, return_counts=return_counts)
    x = _host(input)
    d = None if dim is None else dim_index(dim, input.ndim)
    if d is not None:
        _check_empty_along(input, d)
    rows = x.reshape(-1, 1) if d is None else np.moveaxis(x, d, 0).reshape(x.shape[d], int(np.prod(np.delete(x.shape, d))))
    new = np.ones(len(rows), bool)
    new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    values = x.reshape(-1)[new] if d is None else np.moveaxis(np.moveaxis(x, d, 0)[new], 0, d)
    inverse = np.cumsum(new) - 1
    out = [_device(values, input.dtype, input.device)]
    if return_inverse:
        out.append(_device(inverse.reshape(input.shape if d is None else -1), torch.int64, input.device))
    if return_counts:
        out.append(_device(np.diff(np.append(np.flatnonzero(new), len(rows))), torch.int64, input.device))
    return out[0] if len(out) == 1 else tuple(out)


def histogram(input, bins, *, range=None, weight=None, density=False):
    """histogram_result(hist, bin_edges): input's elements counted (or their weights summed) in
    `bins` equal bins over range (None: the elements' min and max) or between the given edges (a
    1-D tensor), the last bin closed, density-normalised if asked, as torch.histogram (numpy's
    rule; edges that do not increase, torch's: _histogramdd). Computed on the host: a sync."""
    check_tensors("histogram", input=input)
    if not input.memory.is_floating_point():
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{input.dtype}'")
    x = _host(input).reshape(-1)
    if isinstance(bins, Tensor):
        check(bins.ndim == 1 and bins.numel() > 0, "torch.histogram(): bins tensor should have one dimension")
        bins = _host(bins)
    else:
        check(bins > 0, lambda: f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    w = None if weight is None else _host(weight).reshape(-1)
    check(w is None or w.shape == x.shape, "torch.histogram(): if weight tensor is provided it should have the same "
                                           "shape as the input tensor excluding its innermost dimension")
    edges = bins if isinstance(bins, np.ndarray) else _edges(x, bins, range)
    hist, _ = _histogramdd(x.reshape(-1, 1), [edges], w, density)
    return histogram_result(_device(hist, input.dtype, input.device), _device(edges, input.dtype, input.device))


def _edges(x, bins, range):
    """histogram's bins + 1 equal-width edges over range (None: x's min and max; 0 and 1 for no
    elements; a range of one value widened by 0.5 each way), as torch.linspace computes them in x's
    dtype: the first half up from the left end, the second down from the right one, each a fused
    multiply-add of the step (numpy's differ in the last bit, which moves an element on an edge into
    another bin)."""
    lo, hi = range if range is not None else (x.min(), x.max()) if x.size else (0, 1)
    lo, hi = x.dtype.type(lo), x.dtype.type(hi)
    check(np.isfinite(lo) and np.isfinite(hi),
          lambda: f"torch.histogramdd: dimension 0's range [{lo}, {hi}] is not finite")
    check(lo <= hi, lambda: f"torch.histogramdd: min should not exceed max, but got min {lo} max {hi} for dimension 0")
    if lo == hi:
        lo, hi = lo - x.dtype.type(0.5), hi + x.dtype.type(0.5)
    i = np.arange(bins + 1)
    with np.errstate(over="ignore", invalid="ignore"):  # a range past the dtype's: an inf step, NaN edges as torch's
        step = np.float64((hi - lo) / x.dtype.type(bins))  # in x's dtype; the products exact in float64
        return np.where(i < (bins + 1) // 2, lo + i * step, hi - (bins - i) * step).astype(x.dtype)


def _histogramdd(x, edges, w, density):
    """numpy's histogramdd of the points x [n, D] where every dimension's edges increase (torch's rule there too);
    else torch's own: a point counts where each coordinate lies in [its first edge, its last] (a NaN edge at
    either end, as an overflowing range's, counts none) and falls in the bin before the first edge above it
    by std::upper_bound's bisection (unsorted or NaN edges probed as torch's), the last edge in the last bin.
    numpy refuses such edges (ValueError); torch counts."""
    if all(np.all(e[:-1] <= e[1:]) for e in edges):
        with np.errstate(invalid="ignore", divide="ignore"):  # the density of no point: 0 / 0, NaN as torch's
            return np.histogramdd(x, edges, weights=w, density=density)
    keep, index = np.ones(len(x), bool), []
    for d, e in enumerate(edges):
        v = x[:, d]
        keep &= (v >= e[0]) & (v <= e[-1])
        index.append(np.minimum(_upper_bound(e, v) - 1, len(e) - 2))
    shape = tuple(len(e) - 1 for e in edges)
    flat = np.ravel_multi_index(tuple(np.clip(i[keep], 0, n - 1) for i, n in zip(index, shape)), shape)
    hist = np.bincount(flat, None if w is None else w[keep], minlength=int(np.prod(shape))).reshape(shape)
    if density:
        with np.errstate(all="ignore"):  # no point counted: 0 / 0, NaN as torch's
            hist = hist / hist.sum()
            for d, e in enumerate(edges):
                hist = hist / np.diff(e).reshape([-1 if k == d else 1 for k in range(len(edges))])
    return hist, edges


def _upper_bound(edges, v):
    """std::upper_bound(edges, v) for each v: the first i with v < edges[i], by its bisection (on unsorted or
    NaN edges the probes, hence the answer, are torch's)."""
    first, count = np.zeros(v.shape, np.int64), np.full(v.shape, len(edges), np.int64)
    while count.any():
        step = count // 2
        probe = first + step
        right = (count > 0) & ~(v < edges[np.minimum(probe, len(edges) - 1)])
        first, count = np.where(right, probe + 1, first), np.where(right, count - step - 1, step)
    return first


histogram_result, histogramdd_result = return_types.histogram, return_types.histogramdd


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """histogramdd(hist, bin_edges): the points input [..., D] (each row one point) counted (or their weights
    summed) in a D-dimensional grid of bins, as torch.histogramdd: bins an int (each dimension), D ints, or D 1-D
    edge tensors; range a flat [min0, max0, min1, max1, ...] (None: the points' own, per dimension), each
    dimension's edges as histogram's. Computed on the host: a sync."""
    check_tensors("histogramdd", input=input)
    if not input.memory.is_floating_point():
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{input.dtype}'")
    check(input.ndim >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions")
    D = input.shape[-1]
    x = _host(input).reshape(-1, D)
    bins = [bins] * D if isinstance(bins, int) else list(bins)
    check(len(bins) == D, "histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    check(range is None or len(range) == 2 * D,
          lambda: f"torch.histogramdd: for a {D}-dimensional histogram range should have {2 * D} elements, but got "
                  f"{len(range)}")
    check(weight is None or tuple(weight.shape) == tuple(input.shape[:-1]),
          lambda: f"torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor "
                  f"excluding its innermost dimension, but got input with shape {list(input.shape)} and weight with "
                  f"shape {list(weight.shape)}")
    w = None if weight is None else _host(weight).reshape(-1)  # read back once its shape is checked
    edges = []
    for d, b in enumerate(bins):
        if isinstance(b, Tensor):
            check(b.ndim == 1 and b.numel() > 0, "torch.histogramdd(): bins tensor should have one dimension")
            edges.append(_host(b).astype(x.dtype))
        else:
            check(b > 0, lambda: f"torch.histogram(): bins must be > 0, but got {b} for dimension {d}")
            edges.append(_edges(x[:, d], b, None if range is None else range[2 * d:2 * d + 2]))
    hist, _ = _histogramdd(x, edges, w, density)
    return histogramdd_result(_device(hist, input.dtype, input.device),
                              [_device(e, input.dtype, input.device) for e in edges])
