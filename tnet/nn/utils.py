"""torch.nn.utils's gradient clipping: get_total_norm, clip_grads_with_norm_, clip_grad_norm_ and
clip_grad_value_, with torch's arguments, built of tnet's ops (their kernels) under no_grad; and
parameters_to_vector, vector_to_parameters.

The norm stays on the device and the gradients are scaled by min(1, max_norm / (norm + 1e-6))
read there, so clipping does not synchronise with the host (error_if_nonfinite=True reads the norm,
as torch's). foreach is accepted and ignored: tnet takes a kernel or two per gradient."""
import math
import types
import warnings

from .. import functional as F
from ..factory import zeros
from ..kernels import pointwise as _pw
from ..kernels.copy import copy_
from ..kernels.launch import is_flat
from ..tensor import Tensor, bump_version, no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters"]


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



def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one 1-D tensor (a copy, in autograd's graph), as torch's."""
    return F.cat([p.reshape(-1) for p in _tensors(parameters)])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D vec into the parameters, in place. torch's makes each
    parameter's .data a view of vec; tnet's copies, so the parameters keep their own memory."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    with no_grad():
        for p in _tensors(parameters):
            n = p.numel()
            p.copy_(vec[pointer:pointer + n].view_as(p))
            pointer += n
