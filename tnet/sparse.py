"""torch.sparse's names as scripts use them (pygcn's torch.sparse.FloatTensor adjacency and torch.spmm),
with tnet's dense tensors: tnet has no sparse layout, so a COO tensor is built dense (values at
their indices, repeated indices summed, as torch's coalesce) and a sparse product is a dense GEMM.
Values, gradients and shapes are torch's; memory is that of the dense matrix, and is_sparse is False.
A tensor built by coo_tensor (or to_sparse) also keeps the indices and values it was given, so that
the COO accessors answer as torch's (indices(), values(), _indices(), _values(), _nnz(), is_coalesced(),
coalesce(), sparse_dim(), dense_dim()): LightGCN's edge dropout and pyGAT's sparse backward read them.
clone, detach and casts (to(dtype), float(), half(), bfloat16()) keep it, as torch's; what tnet's other ops
make of such a tensor is dense: the COO structure does not pass through them (arithmetic included)."""
import functools
import math

import numpy as np

from .factory import float32, full, zeros
from .functional import addmm as _addmm
from .functional import index_add, index_put, mm as _dense_mm, nonzero, sum as _sum
from .functional import log_softmax as _dense_log_softmax, softmax as _dense_softmax
from .kernels.launch import check
from .tensor import Tensor, tensor as _tensor

__all__ = ["FloatTensor", "addmm", "coo_tensor", "log_softmax", "mm", "softmax", "sum"]


class _COO:
    """The indices [sparse_dim, nnz] and values [nnz, *dense dims] of a COO tensor, and whether they are
    coalesced (sorted, each index once), as torch's: a tensor of fewer than two entries is."""
    __slots__ = ("indices", "values", "coalesced")

    def __init__(self, indices, values, coalesced):
        self.indices, self.values = indices, values
        self.coalesced = bool(coalesced) or indices.shape[1] < 2


def _with_coo(dense, indices, values, coalesced):
    """An alias of dense (its gradient flows to dense's) that carries the COO structure."""
    out = dense.view(dense.shape)
    out._coo = _COO(indices, values, coalesced)
    return out


def keeping_coo(dense_op, of_coo):
    """dense_op(t, ...) (clone, detach, a cast), which for a COO tensor t gives one whose structure is
    of_coo(t's _COO, the dense result), as torch's sparse clone, detach and to(dtype) give sparse tensors; the
    result dense_op gives where t has no structure, or where it is t itself (a cast to t's own dtype)."""
    @functools.wraps(dense_op)
    def op(t, *args, **kwargs):
        out = dense_op(t, *args, **kwargs)
        coo = getattr(t, "_coo", None)
        if coo is not None and out is not t:
            out._coo = of_coo(coo, out)
        return out
    return op


# the structures that keeping_coo gives: torch's sparse clone copies the indices and values, detach detaches
# the values, a cast casts them
def cloned_coo(coo, out):
    return _COO(coo.indices.clone(), coo.values.clone(), coo.coalesced)


def detached_coo(coo, out):
    return _COO(coo.indices, coo.values.detach(), coo.coalesced)


def cast_coo(coo, out):
    return _COO(coo.indices, coo.values.to(out.dtype), coo.coalesced)


def _coo_of(t, name, raw=False):
    coo = getattr(t, "_coo", None)
    if coo is None:
        if raw:  # torch's _indices()/_values() of a strided tensor: no kernel for its layout
            raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the strided layout: "
                                      f"{name}() is for sparse COO tensors (tnet: those sparse_coo_tensor or "
                                      f"to_sparse() built)")
        layout = "sparse tensor" if name == "values" else "sparse coordinate tensor"
        raise RuntimeError(f"{name} expected {layout} layout but got Strided")
    return coo


def coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False, requires_grad=False,
               check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor as a dense tensor: `indices` [sparse_dim, nnz] (int), `values` [nnz, *dense
    dims]; entries at repeated indices add up. Without `size`, each sparse dim's size is its largest
    index + 1 (a host read), as torch's. A gradient of values flows from the dense tensor's; the flags
    after dtype are torch's, accepted (tnet has one device)."""
    indices = indices if isinstance(indices, Tensor) else _tensor(indices)
    values = values if isinstance(values, Tensor) else _tensor(values, dtype=dtype)
    values = values if dtype is None or values.dtype == dtype else values.to(dtype)
    check(indices.ndim == 2 and indices.shape[1] == values.shape[0],
          lambda: f"indices and values must have the same number of elements: indices {tuple(indices.shape)}, "
                  f"values {tuple(values.shape)}")
    sparse_dims = indices.shape[0]
    if size is None:
        size = [int(indices[d].max().item()) + 1 if indices.shape[1] else 0 for d in range(sparse_dims)]
        size = (*size, *values.shape[1:])
    size = tuple(size)
    check(len(size) == sparse_dims + values.ndim - 1 and tuple(size[sparse_dims:]) == tuple(values.shape[1:]),
          lambda: f"number of dimensions must be sparse_dim ({sparse_dims}) + dense_dim ({values.ndim - 1}), "
                  f"but got {len(size)}")
    out = zeros(size, dtype=values.dtype)
    if math.prod(size) and indices.shape[1]:
        out = index_put(out, tuple(indices[d] for d in range(sparse_dims)), values, accumulate=True)
    out = out.requires_grad_() if requires_grad else out
    out._coo = _COO(indices, values, is_coalesced)
    return out


def _indices(t):
    return _coo_of(t, "_indices", raw=True).indices


def _values(t):
    """torch's _values(): the values, outside autograd (a detached alias, as torch's is not differentiable)."""
    return _coo_of(t, "_values", raw=True).values.detach()


def indices(t):
    coo = _coo_of(t, "indices")
    if not coo.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return coo.indices


def values(t):
    """torch's values() of a coalesced tensor, differentiable as torch's: where t requires grad, t's entries
    at the indices (each index once: they are the values), so that a gradient reaches t (a sparse leaf's too)."""
    coo = _coo_of(t, "values")
    if not coo.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    if not t.requires_grad:
        return coo.values
    idx = coo.indices
    return t[tuple(idx[d] for d in range(idx.shape[0]))] if idx.shape[0] else t.unsqueeze(0)[:idx.shape[1]]


def _nnz(t):
    return _coo_of(t, "_nnz").indices.shape[1]


def is_coalesced(t):
    return _coo_of(t, "is_coalesced").coalesced


def sparse_dim(t):
    coo = getattr(t, "_coo", None)
    return 0 if coo is None else coo.indices.shape[0]


def dense_dim(t):
    coo = getattr(t, "_coo", None)
    return t.ndim if coo is None else coo.values.ndim - 1


def coalesce(t):
    """torch's coalesce: the indices sorted (row-major over the sparse dims) and each once, the values at a
    repeated index summed (index_add: their gradient flows to each). A tensor without COO structure is
    returned as it is (torch raises: tnet's dense "sparse" tensors of old pass through)."""
    coo = getattr(t, "_coo", None)
    if coo is None or coo.coalesced:
        return t
    idx = coo.indices.memory.cpu().numpy()  # index bookkeeping on the host, as unique's
    shape = tuple(t.shape[:idx.shape[0]])
    linear, inverse = np.unique(np.ravel_multi_index(tuple(idx), shape), return_inverse=True)
    merged = np.stack(np.unravel_index(linear, shape)) if shape else idx[:, :len(linear)]
    summed = index_add(zeros((len(linear), *coo.values.shape[1:]), dtype=coo.values.dtype), 0,
                       _tensor(inverse.reshape(-1)), coo.values)
    return _with_coo(t, _tensor(merged.astype(np.int64)), summed, True)


def to_sparse(t, sparse_dim=None):
    """torch's to_sparse: the COO structure of t's nonzero entries (over its first sparse_dim dims,
    all by default), coalesced; tnet's storage stays t's dense memory."""
    if getattr(t, "_coo", None) is not None:
        return t
    sparse_dim = t.ndim if sparse_dim is None else sparse_dim
    check(0 <= sparse_dim <= t.ndim, lambda: f"sparse_dim must be in [0, {t.ndim}], got {sparse_dim}")
    rows = t if sparse_dim == t.ndim else t.reshape(*t.shape[:sparse_dim], -1).ne(0).any(-1)
    idx = nonzero(rows).t() if sparse_dim else zeros((0, 1), dtype=_tensor(0).dtype)
    vals = t[tuple(idx[d] for d in range(sparse_dim))] if sparse_dim else t.unsqueeze(0)
    return _with_coo(t, idx, vals, True)


def to_dense(t, dtype=None, masked_grad=None):
    """torch's to_dense: tnet's storage is dense already; a COO tensor gives an alias without its structure."""
    out = t if getattr(t, "_coo", None) is None else t.view(t.shape)
    return out if dtype in (None, out.dtype) else out.to(dtype)


def FloatTensor(indices, values, size=None):
    """torch.sparse.FloatTensor(indices, values, size), the legacy COO constructor: coo_tensor in float32."""
    return coo_tensor(indices, values, size, dtype=float32)


def mm(sparse, dense):
    """torch.sparse.mm (and torch.spmm): the product of the (dense-stored) sparse matrix and dense."""
    return _dense_mm(sparse, dense)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    return _addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):
    """torch.sparse.sum: the sum over dim (all dims where None)."""
    return _sum(input, dtype=dtype) if dim is None else _sum(input, dim, dtype=dtype)


def _over_entries(name, normalise, input, dim, dtype):
    """normalise (softmax or log_softmax) along dim over the entries input specifies, the others taken as -inf (as
    torch.sparse's): on the dense storage with -inf outside the (coalesced) indices, read back at them."""
    coo = _coo_of(coalesce(input), name, raw=True)
    where = tuple(coo.indices[d] for d in range(coo.indices.shape[0]))
    masked = index_put(full(input.shape, float("-inf"), dtype=coo.values.dtype), where, coo.values)
    values = normalise(masked, dim, dtype=dtype)[where]
    return coo_tensor(coo.indices, values, input.shape, is_coalesced=True)


def softmax(input, dim, *, dtype=None):
    """torch.sparse.softmax: the softmax along dim over the specified entries alone, a COO tensor of the same
    (coalesced) indices; its gradient flows to input's values."""
    return _over_entries("_sparse_softmax", _dense_softmax, input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """torch.sparse.log_softmax: as softmax, of log_softmax."""
    return _over_entries("_sparse_log_softmax", _dense_log_softmax, input, dim, dtype)
