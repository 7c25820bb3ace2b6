"""torch.linalg's functions that tnet has. The norms run on tnet's kernels, with gradients. A
decomposition runs on the host in numpy, in float64 (a host sync: meant for small init-time
matrices, such as a whitening filter's covariance), and returns tensors of the input's dtype on
tnet's device; it takes no gradient."""
from collections import namedtuple

import numpy as np
import torch

from .functional.copy import cross as _cross
from .functional.inputs import check_tensors
from .functional.reduce import matrix_norm, vector_norm
from .kernels.launch import check
from .tensor import Tensor, is_grad_enabled, tensor

__all__ = ["cross", "eigh", "matrix_norm", "norm", "vector_norm"]


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: with ord None, the 2-norm of the entries over dim (None: all of them,
    any shape); else a vector norm (vector_norm) over one dim, or a matrix norm (matrix_norm:
    'fro', 1, -1, inf, -inf; 'nuc', 2 and -2 raise NotImplementedError) over two; without dim,
    A must then be 1-D or 2-D."""
    check_tensors("linalg.norm", A=A)
    if dim is not None:
        dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        check(len(dim) in (1, 2), lambda: f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                                          f"Got {list(dim)}")
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None:
        check(A.ndim in (1, 2), lambda: f"linalg.norm: If dim is not specified but ord is, the input must be 1D or "
                                        f"2D. Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    check(not isinstance(ord, str), lambda: f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim[0]}")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


def eigh(A, UPLO="L"):
    """torch.linalg.eigh: the eigenvalues (ascending) and eigenvectors (columns) of the symmetric
    matrices A [..., n, n], reading the lower (UPLO='L') or upper triangle. No gradient: an A that
    requires one raises NotImplementedError (call it under tnet.no_grad() or on A.detach())."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.eigh: A must be a tnet.Tensor, got {type(A).__name__}")
    check(UPLO in ("L", "U"), lambda: f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    check(A.ndim >= 2 and A.shape[-1] == A.shape[-2],
          lambda: f"linalg.eigh: A must be batches of square matrices, but they are {tuple(A.shape[-2:])} matrices")
    check(A.dtype == torch.float32, lambda: f"linalg.eigh: Low precision dtypes not supported. Got {A.dtype}")
    if A.requires_grad and is_grad_enabled():
        raise NotImplementedError("linalg.eigh: tnet has no gradient for it; call it under tnet.no_grad() or on "
                                  "A.detach()")
    values, vectors = np.linalg.eigh(A.numpy().astype(np.float64), UPLO=UPLO)
    return EighResult(tensor(values, dtype=A.dtype), tensor(vectors, dtype=A.dtype))


def cross(input, other, *, dim=-1):
    """torch.linalg.cross: the cross product of 3-vectors along dim (default the last), broadcast."""
    return _cross(input, other, dim)
