"""torch.sparse's names as scripts use them (pygcn's torch.sparse.FloatTensor adjacency and torch.spmm),
with tnet's dense tensors: tnet has no sparse layout, so a COO tensor is built dense (values at
their indices, repeated indices summed, as torch's coalesce) and a sparse product is a dense GEMM.
Values, gradients and shapes are torch's; memory is that of the dense matrix, and is_sparse is False."""
import math

from .factory import float32, zeros
from .functional import addmm as _addmm
from .functional import index_put, mm as _dense_mm, sum as _sum
from .kernels.launch import check
from .tensor import Tensor, tensor as _tensor

__all__ = ["FloatTensor", "addmm", "coo_tensor", "mm", "sum"]


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
    return out.requires_grad_() if requires_grad else out


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
