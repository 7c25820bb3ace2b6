"""torch.linalg's functions that tnet has. A decomposition runs on the host in numpy, in float64
(a host sync: meant for small init-time matrices, such as a whitening filter's covariance), and
returns tensors of the input's dtype on tnet's device; it takes no gradient."""
from collections import namedtuple

import numpy as np
import torch

from .kernels.launch import check
from .tensor import Tensor, is_grad_enabled, tensor

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
