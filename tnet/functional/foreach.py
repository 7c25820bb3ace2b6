"""torch's _foreach_* functions on lists of tensors (tnet._foreach_add_, ...: tnet/__init__.py
names each of __all__ with the prefix), which EMA and optimizer code call. Each is a loop of
tnet's op or in-place method over the tensors: a launch or two per tensor, not torch's one fused
launch per group (tnet's optimizers fuse their own steps). The pointwise ones are made from their
names by _unary, _binary and _ternary, each an out-of-place and an in-place (name_) function. The
arguments are torch's: a binary op's second one a number, a list of numbers (one per tensor), a
list of tensors, or, for add, mul and div, one tensor for all; alpha only with tensors (add and
sub); addcmul/addcdiv's value a number, a list of numbers or a 1-d tensor of them (read on the
host); lerp's weight a number, a list of numbers or a list of tensors; pow's self may be one
number, its exponent then the list. The last argument may be named by any of torch's overloads'
keywords (scalar=, scalars=, other=; exponent=; weight=, weights=; value=, scalars=). Gradients
and in-place rules are those of the per-tensor ops."""
import numbers

from ..tensor import Tensor
from .inplace import inplace
from .pointwise import maximum as _maximum, minimum as _minimum, pow as _pow
from .reduce import amax as _amax, norm as _norm

UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p log2 neg reciprocal "
         "round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc").split()
BINARY = {"add": True, "sub": False, "mul": True, "div": True, "clamp_min": False, "clamp_max": False,
          "maximum": False, "minimum": False, "pow": False}  # name: whether one tensor stands for all, as torch's
TERNARY = ("addcmul", "addcdiv", "lerp")
__all__ = [f"{name}{suffix}" for name in [*UNARY, *BINARY, *TERNARY] for suffix in ("", "_")]
__all__ += ["clone", "zero_", "copy_", "norm", "powsum", "max", "mm"]


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


def _unary(name):
    def out(self):
        return [getattr(t, name)() for t in _tensors(f"_foreach_{name}", self)]

    def in_place(self):
        for t in _tensors(f"_foreach_{name}_", self):
            getattr(t, name + "_")()
    return out, in_place


# maximum and minimum with a number are clamps (torch's tensor methods take tensors only); in place with a
# tensor through inplace(), as tnet's Tensor has no maximum_/minimum_
NUMBER_FORM = {"maximum": "clamp_min", "minimum": "clamp_max"}
INPLACE_FORM = {"maximum": _maximum, "minimum": _minimum}


def _binary_one(t, name, o, alpha, in_place):
    """t's name (name_ if in_place) with o, alpha passed to add and sub only."""
    kwargs = {} if alpha is None else {"alpha": alpha}
    if name in NUMBER_FORM and not isinstance(o, Tensor):
        name = NUMBER_FORM[name]
    if in_place and name in INPLACE_FORM:
        return inplace(t, name + "_", lambda x: INPLACE_FORM[name](x, o), (o,), keeps_self=True)
    return getattr(t, name + ("_" if in_place else ""))(o, **kwargs)


def _argument(fname, args, named, names):
    """The one argument given by position (args) or by one of torch's overloads' keywords (names)."""
    unknown = set(named) - set(names)
    if unknown:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{unknown.pop()}'")
    given = [*args, *named.values()]
    if len(given) != 1:
        raise TypeError(f"{fname}() takes one of: a positional argument, {', '.join(names)}; got {len(given)}")
    return given[0]


def _binary(name, one_tensor):
    takes_alpha = name in ("add", "sub")
    keywords = ("exponent",) if name == "pow" else ("other", "scalar", "scalars")  # torch's overloads' names

    def pairs(fname, self, args, named, alpha):
        other = _argument(fname, args, named, keywords)
        if alpha is not None and not takes_alpha:
            raise TypeError(f"{fname}() got an unexpected keyword argument 'alpha'")
        self = _tensors(fname, self)
        return zip(self, _seconds(fname, self, other, alpha, one_tensor))

    def out(self, *args, alpha=None, **named):
        if name == "pow" and isinstance(self, numbers.Number):  # torch's pow(Scalar self, Tensor[] exponent)
            return [_pow(self, e) for e in _tensors("_foreach_pow", _argument("_foreach_pow", args, named, keywords))]
        return [_binary_one(t, name, o, alpha, False) for t, o in pairs(f"_foreach_{name}", self, args, named, alpha)]

    def in_place(self, *args, alpha=None, **named):
        for t, o in pairs(f"_foreach_{name}_", self, args, named, alpha):
            _binary_one(t, name, o, alpha, True)
    return out, in_place


def _ternary(name):
    """addcmul/addcdiv (self, tensor1, tensor2, value=1; or scalars=) and lerp (self, tensors1, weight; or
    weights=), the last argument by position or torch's keywords."""
    keywords = ("weight", "weights") if name == "lerp" else ("value", "scalars")
    lists = ("tensors1",) if name == "lerp" else ("tensor1", "tensor2")

    def triples(fname, self, args, named):
        args = [*args, *[named.pop(k) for k in lists[len(args):] if k in named]]
        tensors, rest = args[:len(lists)], args[len(lists):]
        if len(tensors) != len(lists):
            raise TypeError(f"{fname}() missing its lists {', '.join(lists)}")
        last = 1 if name != "lerp" and not rest and not named else _argument(fname, rest, named, keywords)
        self = _tensors(fname, self)
        lasts = _seconds(fname, self, last, None, False) if name == "lerp" else _values(fname, self, last)
        return self, zip(*[_same_length(self, t) for t in tensors], lasts)

    def one(t, args, in_place):
        method = getattr(t, name + ("_" if in_place else ""))
        return method(*args) if name == "lerp" else method(*args[:2], value=args[2])

    def out(self, *args, **named):
        self, rest = triples(f"_foreach_{name}", self, args, named)
        return [one(t, a, False) for t, a in zip(self, rest)]

    def in_place(self, *args, **named):
        self, rest = triples(f"_foreach_{name}_", self, args, named)
        for t, a in zip(self, rest):
            one(t, a, True)
    return out, in_place


def _define(name, pair):
    out, in_place = pair
    out.__name__, in_place.__name__ = name, name + "_"
    out.__qualname__, in_place.__qualname__ = name, name + "_"
    globals()[name], globals()[name + "_"] = out, in_place


for _name in UNARY:
    _define(_name, _unary(_name))
for _name, _one_tensor in BINARY.items():
    _define(_name, _binary(_name, _one_tensor))
for _name in TERNARY:
    _define(_name, _ternary(_name))
del _name, _one_tensor


def clone(self, *, memory_format=None):
    kwargs = {} if memory_format is None else {"memory_format": memory_format}
    return [t.clone(**kwargs) for t in _tensors("_foreach_clone", self)]


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


def powsum(self, ord=2, dtype=None):
    """Each tensor's sum of |x| ** ord over all its elements, 0-d tensors, as torch's (ord 0 counts every
    element, zeros too; inf counts the elements of magnitude 1, adding inf for any above)."""
    return [_pow(t.abs(), ord).sum(dtype=dtype) for t in _tensors("_foreach_powsum", self)]


def max(self):
    """Each tensor's largest element, 0-d tensors, NaN propagating, as torch's."""
    return [_amax(t) for t in _tensors("_foreach_max", self)]


def mm(self, mat2):
    self = _tensors("_foreach_mm", self)
    return [t.mm(m) for t, m in zip(self, _same_length(self, mat2))]
