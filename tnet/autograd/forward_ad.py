"""torch.autograd.forward_ad: dual tensors and the Jacobian-vector products of what is computed from them, by
reverse mode twice (the forward-mode AD tutorial's API). make_dual adds a zero leaf z to the primal, so that
whatever is computed from the dual depends on z as on the primal; unpack_dual(y) takes g_i = J_i^T u, the gradient
of y with respect to each z_i of the level for a zero seed u on the tape (create_graph), and then the gradient of
sum_i <g_i, t_i> with respect to u: sum_i J_i t_i, y's tangent. So every op between them must support create_graph
(the README's list), each unpack_dual runs two backwards (keeping y's graph), a dual and what is computed from it
require grad (torch's do not), and make_dual under no_grad raises (nothing after it would be recorded)."""
import contextlib
from typing import NamedTuple, Optional

from ..factory import zeros
from ..tensor import Tensor, enable_grad, is_grad_enabled
from . import grad

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]

_levels = []  # each a list of the (z, tangent, dual) that make_dual made at that level


class UnpackedDualTensor(NamedTuple):
    primal: Tensor
    tangent: Optional[Tensor]


def enter_dual_level():
    """A new level, returned; make_dual and unpack_dual use the innermost."""
    _levels.append([])
    return len(_levels) - 1


def exit_dual_level(*, level=None):
    """Drop the innermost level (its duals' tangents), as torch's: only the last one created may exit."""
    if not _levels or level not in (None, len(_levels) - 1):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _levels.pop()


class dual_level(contextlib.ContextDecorator):
    """`with fwAD.dual_level():` (or a decorator): a level for the block's duals."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


def _level(level):
    if not _levels:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    return _levels[-1 if level is None else level]


def make_dual(tensor, tangent, *, level=None):
    """tensor as a dual with this tangent (of its shape): tensor + z, z a zero leaf of the level."""
    duals = _level(level)
    if not is_grad_enabled():
        raise NotImplementedError("forward_ad.make_dual under no_grad: tnet's forward AD differentiates the autograd "
                                  "tape, which no_grad leaves unrecorded (enter the dual level with grad enabled)")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    z = zeros(tensor.shape, dtype=tensor.dtype).requires_grad_(True)
    with enable_grad():
        dual = tensor + z
    duals.append((z, tangent, dual))
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): tensor itself and its Jacobian-vector product along the level's tangents, None where it
    does not depend on a dual of the level (or there is none); a dual's own tangent is the one it was made with."""
    duals = _levels[-1 if level is None else level] if _levels else []
    if not duals or not isinstance(tensor, Tensor) or not tensor.requires_grad:
        return UnpackedDualTensor(tensor, None)
    for _, t, dual in duals:
        if dual is tensor:
            return UnpackedDualTensor(tensor, t)
    with enable_grad():
        u = zeros(tensor.shape, dtype=tensor.dtype).requires_grad_(True)
        gs = grad(tensor, [z for z, _, _ in duals], u, retain_graph=True, create_graph=True, allow_unused=True)
        used = [(g, t) for g, (_, t, _) in zip(gs, duals) if g is not None]
        if not used:
            return UnpackedDualTensor(tensor, None)
        inner = sum((g * t).sum() for g, t in used)
        (tangent,) = grad(inner, u, retain_graph=True, materialize_grads=True)
    return UnpackedDualTensor(tensor, tangent.detach())
