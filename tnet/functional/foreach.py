"""torch's _foreach_* functions on lists of tensors (tnet._foreach_add_, ..., tnet/__init__.py
names them), which EMA and optimizer code call. Each is a loop of tnet's op or in-place method
over the tensors: a launch or two per tensor, not torch's one fused launch per group (tnet's
optimizers fuse their own steps). The arguments are torch's: the second one a number, a list of
numbers (one per tensor), a list of tensors, or, for add, sub, mul and div, one tensor for all;
alpha only with tensors; addcmul_/addcdiv_'s value a number, a list of numbers or a 1-d tensor
of them (read on the host). Gradients and in-place rules are those of the per-tensor ops."""
import numbers

from ..tensor import Tensor
from .inplace import inplace
from .pointwise import add as _add, div as _div, maximum as _maximum, mul as _mul, neg as _neg, sqrt as _sqrt
from .pointwise import sub as _sub
from .reduce import norm as _norm

__all__ = ["add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "lerp_", "addcmul_", "addcdiv_", "sqrt",
           "sqrt_", "neg", "neg_", "zero_", "copy_", "norm", "maximum_"]


def _tensors(name, tensors):
    """tensors as a list, checked as torch's: not empty, tnet tensors only."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): expected a list of tnet.Tensors, got an element of type {type(t).__name__}")
    return tensors


def _same_length(tensors, others):
    others = _tensors("_foreach", others)
    if len(others) != len(tensors):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and {len(others)}")
    return others


def _seconds(name, tensors, other, alpha=None, one_tensor=True):
    """other as one value per tensor: a number for all, a list of numbers, a list of tensors, or
    (one_tensor) one tensor for all; alpha (None: not given) is taken with tensors only, as torch's."""
    n = len(tensors)
    if isinstance(other, Tensor) and one_tensor:
        return [other] * n
    if isinstance(other, (list, tuple)) and other and all(isinstance(o, Tensor) for o in other):
        return _same_length(tensors, other)
    if alpha is not None:
        raise TypeError(f"{name}(): alpha is taken with a list of tensors or a tensor, not with numbers")
    if isinstance(other, numbers.Number):
        return [other] * n
    if not isinstance(other, (list, tuple)) or not all(isinstance(o, numbers.Number) for o in other):
        raise TypeError(f"{name}(): expected a number, a list of numbers or a list of tensors, got {other!r}")
    if len(other) != n:
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return list(other)


def _values(name, tensors, value):
    """addcmul_/addcdiv_'s value: one number, a list of numbers, or a 1-d tensor of them (a host read)."""
    if isinstance(value, Tensor):
        if value.ndim != 1 or value.shape[0] != len(tensors):
            raise RuntimeError(f"Expected length of scalars to match input of length {len(tensors)} but got "
                               f"{value.numel()} instead.")
        return value.tolist()
    return _seconds(name, tensors, value)


def _alpha(alpha):
    return 1 if alpha is None else alpha


def add(self, other, *, alpha=None):
    self = _tensors("_foreach_add", self)
    return [_add(t, o, alpha=_alpha(alpha)) for t, o in zip(self, _seconds("_foreach_add", self, other, alpha))]


def add_(self, other, *, alpha=None):
    self = _tensors("_foreach_add_", self)
    for t, o in zip(self, _seconds("_foreach_add_", self, other, alpha)):
        t.add_(o, alpha=_alpha(alpha))


def sub(self, other, *, alpha=None):
    self = _tensors("_foreach_sub", self)
    return [_sub(t, o, alpha=_alpha(alpha)) for t, o in zip(self, _seconds("_foreach_sub", self, other, alpha, False))]


def sub_(self, other, *, alpha=None):
    self = _tensors("_foreach_sub_", self)
    for t, o in zip(self, _seconds("_foreach_sub_", self, other, alpha, False)):
        t.sub_(o, alpha=_alpha(alpha))


def mul(self, other):
    self = _tensors("_foreach_mul", self)
    return [_mul(t, o) for t, o in zip(self, _seconds("_foreach_mul", self, other))]


def mul_(self, other):
    self = _tensors("_foreach_mul_", self)
    for t, o in zip(self, _seconds("_foreach_mul_", self, other)):
        t.mul_(o)


def div(self, other):
    self = _tensors("_foreach_div", self)
    return [_div(t, o) for t, o in zip(self, _seconds("_foreach_div", self, other))]


def div_(self, other):
    self = _tensors("_foreach_div_", self)
    for t, o in zip(self, _seconds("_foreach_div_", self, other)):
        t.div_(o)


def lerp_(self, tensors1, weight):
    """self[i] += weight[i] * (tensors1[i] - self[i]); weight a number, a list of numbers or of tensors."""
    self = _tensors("_foreach_lerp_", self)
    for t, end, w in zip(self, _same_length(self, tensors1), _seconds("_foreach_lerp_", self, weight, None, False)):
        t.lerp_(end, w)


def addcmul_(self, tensor1, tensor2, value=1):
    self = _tensors("_foreach_addcmul_", self)
    for t, a, b, v in zip(self, _same_length(self, tensor1), _same_length(self, tensor2),
                          _values("_foreach_addcmul_", self, value)):
        t.addcmul_(a, b, value=v)


def addcdiv_(self, tensor1, tensor2, value=1):
    self = _tensors("_foreach_addcdiv_", self)
    for t, a, b, v in zip(self, _same_length(self, tensor1), _same_length(self, tensor2),
                          _values("_foreach_addcdiv_", self, value)):
        t.addcdiv_(a, b, value=v)


def sqrt(self):
    return [_sqrt(t) for t in _tensors("_foreach_sqrt", self)]


def sqrt_(self):
    for t in _tensors("_foreach_sqrt_", self):
        t.sqrt_()


def neg(self):
    return [_neg(t) for t in _tensors("_foreach_neg", self)]


def neg_(self):
    for t in _tensors("_foreach_neg_", self):
        t.neg_()


def zero_(self):
    for t in _tensors("_foreach_zero_", self):
        t.zero_()


def copy_(self, src, non_blocking=False):
    self = _tensors("_foreach_copy_", self)
    for t, s in zip(self, _same_length(self, src)):
        t.copy_(s)


def norm(self, ord=2, dtype=None):
    """Each tensor's vector norm over all its elements (tnet.norm's p: 2, 1, inf, -inf, others), 0-d tensors."""
    return [_norm(t, ord, dtype=dtype) for t in _tensors("_foreach_norm", self)]


def maximum_(self, other):
    """self[i] = maximum(self[i], other[i]), NaN propagating; other a number, numbers or tensors."""
    self = _tensors("_foreach_maximum_", self)
    for t, o in zip(self, _seconds("_foreach_maximum_", self, other, None, False)):
        if isinstance(o, Tensor):
            inplace(t, "maximum_", lambda x: _maximum(x, o), (o,), keeps_self=True)
        else:
            t.clamp_(min=o)
