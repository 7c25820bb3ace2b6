"""torch.nn.utils's gradient clipping (get_total_norm, clip_grads_with_norm_, clip_grad_norm_ and
clip_grad_value_, built of tnet's ops under no_grad), weight reparametrizations by forward
pre-hooks (weight_norm, spectral_norm), parameters_to_vector / vector_to_parameters and
tnet.nn.utils.rnn.pad_sequence, with torch's arguments.

The norm stays on the device and the gradients are scaled by min(1, max_norm / (norm + 1e-6))
read there, so clipping does not synchronise with the host (error_if_nonfinite=True reads the norm,
as torch's). foreach is accepted and ignored: tnet takes a kernel or two per gradient."""
import math
import sys
import types
import warnings

from ... import functional as F
from ...factory import full, randn, zeros
from ...kernels import pointwise as _pw
from ...kernels.copy import copy_
from ...kernels.launch import is_flat
from ...tensor import Tensor, bump_version, no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "remove_spectral_norm", "remove_weight_norm", "spectral_norm", "vector_to_parameters", "weight_norm"]


def _tensors(tensors):
    """A tensor, or an iterable of them, as a list."""
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _norm(x, ord):
    """torch.linalg.vector_norm of x over all its elements, as a 0-d tensor: (sum |x|^ord)^(1/ord),
    the largest |x| for inf, the smallest for -inf, the count of nonzeros for 0."""
    if ord == math.inf:
        return F.amax(F.abs(x))
    if ord == -math.inf:
        return F.amin(F.abs(x))
    if ord == 0:
        return F.sum(F.ne(x, 0)).float()
    if ord == 2:  # the common case in two kernels: squares summed in fp32, one root
        return F.sqrt(F.sum(F.mul(x, x)))
    if ord == 1:
        return F.sum(F.abs(x))
    return F.pow(F.sum(F.pow(F.abs(x), ord)), 1.0 / ord)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of norm_type of the tensors' norms, as if all their elements made one vector
    (torch's); a 0-d tensor, 0.0 for no tensors. norm_type may be 'inf'. error_if_nonfinite:
    RuntimeError where the norm is NaN or infinite (a host read)."""
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return zeros(())
    with no_grad():
        norms = [_norm(t, norm_type) for t in tensors]
        total = _norm(F.stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           f"cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           f"anyway, set `error_if_nonfinite=False`")
    return total


def _rewrite_(g, values):
    """g's memory takes values (a torch tensor of g's shape), for the in-place writes torch makes
    on .grad: a captured step or an optimizer holding the gradient keeps its address."""
    copy_(g.memory, values)
    bump_version(g)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the parameters' gradients, in place, by min(max_norm / (total_norm + 1e-6), 1), a
    factor computed and read on the device (no host synchronisation)."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        scale = F.clamp(F.div(float(max_norm), F.add(total_norm, 1e-6)), max=1.0).memory.reshape(1)
        for g in grads:
            if is_flat(g.memory):
                _pw.scale_(g.memory, scale)
                bump_version(g)
            else:  # a gradient set by hand as a strided view
                _rewrite_(g, _pw.pointwise("mul", g.memory, scale))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the parameters' gradients in place so that their total norm (get_total_norm) is at
    most max_norm, as torch's: by min(max_norm / (norm + 1e-6), 1), on the device. Returns the
    total norm before clipping, a 0-d tensor (0.0 where no parameter has a gradient)."""
    if isinstance(parameters, types.GeneratorType):
        parameters = list(parameters)
        if not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    parameters = _tensors(parameters)
    total = get_total_norm([p.grad for p in parameters if p.grad is not None], norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the parameters' gradients, in place, to [-clip_value, clip_value], as torch's."""
    clip_value = float(clip_value)
    for p in _tensors(parameters):
        if p.grad is not None:
            _rewrite_(p.grad, _pw.pointwise("clamp", p.grad.memory, -clip_value, clip_value))


# ---- weight reparametrizations: weight_norm and spectral_norm (torch's hook API) ----


def _own_hook(module, kind, name):
    """(key, hook) of module's forward pre-hook of class `kind` for parameter `name`, or None."""
    hooks = module.__dict__.get("_forward_pre_hooks", {})
    return next(((k, h) for k, h in hooks.items() if isinstance(h, kind) and h.name == name), None)


def _remove_hook(module, kind, name, what):
    """Take module's reparametrization `what` (its pre-hook of class kind) of `name` away, as torch's."""
    found = _own_hook(module, kind, name)
    if found is None:
        raise ValueError(f"{what} of '{name}' not found in {module}")
    found[1].remove(module)
    del module._forward_pre_hooks[found[0]]
    return module


def norm_except_dim(v, pow=2, dim=0):
    """torch.norm_except_dim: the pow-norm of v over every dim but dim, keeping v's number of dims
    (dim -1: over all of v, a 0-d tensor, as torch's)."""
    if dim == -1:
        return F.norm(v, pow)
    dim = dim % v.ndim
    return F.norm(v, pow, tuple(d for d in range(v.ndim) if d != dim), keepdim=True)


def weight_from_norm(g, v, dim):
    """g * v / ||v|| (norm_except_dim(v, 2, dim)): weight_norm's weight from its magnitude g and direction v,
    as torch._weight_norm(v, g, dim)."""
    return F.mul(v, F.div(g, norm_except_dim(v, 2, dim)))


class WeightNorm:
    """The forward pre-hook of weight_norm: module.<name> = g * v / ||v|| (norm_except_dim) from its
    parameters <name>_g and <name>_v, before each forward, as torch's."""

    def __init__(self, name, dim):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        return weight_from_norm(getattr(module, self.name + "_g"), getattr(module, self.name + "_v"), self.dim)

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))

    def remove(self, module):
        from .. import Parameter
        weight = self.compute_weight(module)
        for suffix in ("", "_g", "_v"):
            delattr(module, self.name + suffix)
        setattr(module, self.name, Parameter(weight.data))


def weight_norm(module, name="weight", dim=0):
    """torch.nn.utils.weight_norm (the hook API): parameter `name` becomes parameters name_g (its
    norm over every dim but dim; dim=None or -1: over all of it) and name_v (its direction), and
    module.<name> is recomputed from them before each forward (a forward pre-hook). Returns module."""
    from .. import Parameter
    if _own_hook(module, WeightNorm, name):
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    delattr(module, name)
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
    module.register_parameter(name + "_v", Parameter(weight.data))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: `name` a parameter again, holding the current g * v / ||v||."""
    return _remove_hook(module, WeightNorm, name, "weight_norm")


def weight_to_matrix(weight, dim):
    """weight as spectral_norm's matrix: dim first, the other dims flattened, as torch's."""
    if dim != 0:
        weight = F.permute(weight, (dim, *[d for d in range(weight.ndim) if d != dim]))
    return F.reshape(weight, (weight.shape[0], -1))


def power_iteration_(matrix, u, v, n_power_iterations, eps, u_first=False):
    """n_power_iterations steps of the power method on matrix, writing the unit vectors u and v in
    place without gradient: v = normalize(W^T u), then u = normalize(W v) (the hook API's order), or
    u first (u_first: the parametrization's order), as torch's. Returns copies of u and v: the next
    forward's in-place update must not change what this backward reads."""
    with no_grad():
        for _ in range(n_power_iterations):
            if u_first:
                _rewrite_(u, F.normalize(F.mv(matrix, v), dim=0, eps=eps).memory)
            _rewrite_(v, F.normalize(F.mv(F.t(matrix), u), dim=0, eps=eps).memory)
            if not u_first:
                _rewrite_(u, F.normalize(F.mv(matrix, v), dim=0, eps=eps).memory)
    return F.clone(u), F.clone(v)


class SpectralNorm:
    """The forward pre-hook of spectral_norm: module.<name> = <name>_orig / sigma, sigma the largest
    singular value of <name>_orig as a matrix (dim first, the rest flattened) estimated as
    u . (W v); in training mode n_power_iterations of power iteration first update the buffers
    <name>_u and <name>_v in place, without gradient, as torch's."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def reshape_weight_to_matrix(self, weight):
        return weight_to_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            u, v = power_iteration_(matrix, u, v, self.n_power_iterations, self.eps)
        return F.div(weight, F.dot(u, F.mv(matrix, v)))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def remove(self, module):
        from .. import Parameter
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module._buffer_names.pop(self.name + "_u", None)
        module._buffer_names.pop(self.name + "_v", None)
        module.register_parameter(self.name, Parameter(weight.data))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """torch.nn.utils.spectral_norm (the hook API): parameter `name` becomes name_orig, with buffers
    name_u and name_v (random unit vectors from tnet's generator, not torch's), and module.<name> =
    name_orig / sigma before each forward (SpectralNorm). dim=None: 1 for ConvTranspose, else 0.
    Difference: the state_dict has no version metadata hook (torch's loads old checkpoints
    through one). Returns module."""
    from .. import ConvTranspose2d, Parameter
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose2d) else 0
    if _own_hook(module, SpectralNorm, name):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = getattr(module, name)
    with no_grad():
        h, w = fn.reshape_weight_to_matrix(weight).shape
        u = F.normalize(randn(h), dim=0, eps=eps)
        v = F.normalize(randn(w), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight if isinstance(weight, Parameter) else Parameter(weight))
    setattr(module, name, weight.data)
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: `name` a parameter again, holding name_orig / sigma (no power iteration)."""
    return _remove_hook(module, SpectralNorm, name, "spectral_norm")


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one vector (differentiable), as torch's."""
    return F.cat([F.reshape(p, (-1,)) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Each parameter's .data becomes its slice of vec, viewed in its shape (the parameters then
    share vec's memory), as torch's."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec.memory[pointer:pointer + n].view_as(param.memory).data
        pointer += n


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Tensors [L_i, *] stacked into [max L, B, *] (batch_first: [B, max L, *]), each padded with
    padding_value after (padding_side 'right') or before ('left') its elements; differentiable."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = _tensors(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        if s.shape[0] < longest:
            pad = full((longest - s.shape[0], *s.shape[1:]), padding_value, dtype=s.dtype)
            s = F.cat([s, pad] if padding_side == "right" else [pad, s])
        padded.append(s)
    return F.stack(padded, 1 - int(bool(batch_first)))


# tnet.nn.utils.rnn, a module of its own in sys.modules, so that `from tnet.nn.utils.rnn import pad_sequence` imports
rnn = types.ModuleType(__name__ + ".rnn", "torch.nn.utils.rnn's pad_sequence (packed sequences are not supported).")
rnn.pad_sequence = pad_sequence
sys.modules[rnn.__name__] = rnn
