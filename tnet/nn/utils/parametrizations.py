"""torch.nn.utils.parametrizations: weight_norm and spectral_norm as parametrizations (see
parametrize), with torch's names and state_dict keys; their math is the hook API's (tnet.nn.utils);
orthogonal's maps (matrix_exp, cayley, householder) are tnet.linalg's, with their gradients."""
from enum import Enum, auto

import torch

from ... import functional as F
from ... import linalg
from ...factory import eye, randn, zeros_like
from ...tensor import Tensor, no_grad
from .. import ConvTranspose2d, Module
from . import norm_except_dim, power_iteration_, weight_from_norm, weight_to_matrix
from .parametrize import register_parametrization

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    """weight = g * v / ||v|| from original0 = g and original1 = v, as torch's."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_from_norm(weight_g, weight_v, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """torch.nn.utils.parametrizations.weight_norm: module.<name> = g * v / ||v||, the norm over every
    dim but dim (None: over all), from module.parametrizations.<name>.original0 (g) and original1
    (v). Returns module. Difference: loading a state_dict of the hook API's weight_g and weight_v
    keys is not translated (torch's load_state_dict pre-hook)."""
    return register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """weight / sigma, sigma estimated by the power method on weight as a matrix (dim first): buffers
    _u and _v, updated in place in training mode; a 1-D weight is just normalized, as torch's."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                h, w = weight_to_matrix(weight, self.dim).shape
                # tnet's generator, not torch's: 15 steps of the power method make them near the same
                self.register_buffer("_u", F.normalize(randn(h), dim=0, eps=eps))
                self.register_buffer("_v", F.normalize(randn(w), dim=0, eps=eps))
                power_iteration_(weight_to_matrix(weight, self.dim), self._u, self._v, 15, eps, u_first=True)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = weight_to_matrix(weight, self.dim)
        if self.training:
            u, v = power_iteration_(matrix, self._u, self._v, self.n_power_iterations, self.eps, u_first=True)
        else:
            u, v = F.clone(self._u), F.clone(self._v)
        return F.div(weight, F.dot(u, F.mv(matrix, v)))

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """torch.nn.utils.parametrizations.spectral_norm: module.<name> = original / sigma, sigma the
    largest singular value of original as a matrix (dim first; dim=None: 1 for ConvTranspose, else
    0) by the power method, whose vectors are the buffers parametrizations.<name>.0._u and _v (drawn
    from tnet's generator, not torch's), updated in training mode only. Returns module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose2d) else 0
    return register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _make_orthogonal(A):
    """The Q of A = QR (A tall) with R's diagonal made non-negative, as torch's."""
    X, tau = linalg.geqrf(A)
    Q = linalg.householder_product(X, tau)
    return F.mul(Q, F.unsqueeze(F.sgn(X.diagonal(dim1=-2, dim2=-1)), -2))


class _Orthogonal(Module):
    """torch's _Orthogonal: the orthogonal matrix (orthonormal columns of a tall matrix, rows of a wide
    one) that orthogonal_map makes of the original: exp or the Cayley transform of the skew-symmetric
    A = X.tril() - X.tril().T (X embedded in a square), or the product of the Householder reflectors
    below X's diagonal, whose signs it reads; with use_trivialization, the buffer `base` (the
    orthogonal matrix at the last assignment) times that."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X, n, k = X.mT, k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:  # embedded into a square matrix
                X = F.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = F.sub(X, X.mH)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:  # (I + A/2)(I - A/2)^-1
                Id = eye(n, dtype=A.dtype)
                Q = linalg.solve(F.add(Id, A, alpha=-0.5), F.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = F.div(2.0, F.add(F.mul(A, A).sum(dim=-2), 1.0))
            Q = linalg.householder_product(A, tau)
            # X's diagonal holds the signs (1 or -1), not differentiated
            Q = F.mul(Q, X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2))
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    @no_grad()
    def right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q, n, k = Q.mT, k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # the reflectors of Q's QR, R's diagonal made positive: their signs go on the diagonal
            A, tau = linalg.geqrf(Q)
            A.diagonal(dim1=-2, dim2=-1).sign_()
            A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1  # LAPACK's tau is exactly 0 for a skipped reflection
            return A.mT if transpose else A
        if n == k:
            eps = 10.0 * n * torch.finfo(Q.dtype).eps
            if not F.allclose(Q.mH @ Q, eye(k, dtype=Q.dtype), atol=eps):
                Q = _make_orthogonal(Q)
            else:
                Q = F.clone(Q)
        else:  # completed into an n x n orthogonal matrix by random columns (tnet's generator)
            N = randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
            Q = _make_orthogonal(F.cat([Q, N], dim=-1))
        self.base = Q
        # -Id: householder(zeros) is then eye(m, n), and the trivialization starts at base
        neg_Id = zeros_like(Q_init)
        neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """torch.nn.utils.parametrizations.orthogonal: module.<name> (a matrix or a batch of them) made
    orthogonal by orthogonal_map ("matrix_exp", "cayley" or "householder"; None: matrix_exp for a
    square matrix, householder otherwise), as torch's, its initial value the original's Q factor (the
    original where it is orthogonal already). A non-square original with use_trivialization completes
    its base by columns drawn from tnet's generator (other numbers than torch's). Returns module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    return register_parametrization(module, name, orth, unsafe=True)
