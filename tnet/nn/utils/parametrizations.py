"""torch.nn.utils.parametrizations: weight_norm and spectral_norm as parametrizations (see
parametrize), with torch's names and state_dict keys; their math is the hook API's (tnet.nn.utils).
orthogonal raises NotImplementedError: tnet has no matrix_exp, QR or Householder product."""
from ... import functional as F
from ...factory import randn
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


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """torch.nn.utils.parametrizations.orthogonal: not in tnet (its maps need matrix_exp, a QR or a
    Householder product, which tnet lacks); raises NotImplementedError."""
    raise NotImplementedError("tnet.nn.utils.parametrizations.orthogonal is not implemented: its maps (matrix_exp, "
                              "cayley, householder) need linear algebra that tnet does not have")
