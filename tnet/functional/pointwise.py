"""Element-wise ops (kernels/pointwise.py): arithmetic, functions and activations, PyTorch's
names. Binary ops broadcast like PyTorch's and take a Python number on either side; each
operand's gradient is summed back to its shape. A gradient passed on unchanged goes out as a
view, so that no two inputs hold one buffer (the tape copies a view before keeping it as a
leaf's .grad). Each keeps its input's layout.

Comparisons (eq, ne, lt, le, gt, ge), logical ops and where take integer and bool tensors too;
comparisons and logical ops give bool tensors, which carry no gradient."""
import math
import numbers

import torch

from ..kernels import pointwise as _pw
from ..kernels import reduce as _reduce
from ..kernels.launch import check, is_flat
from ..tensor import Tensor, record
from .inputs import check_tensors, needs_grad


INPLACE = """inplace=True is accepted and computed out of place: the result is a new tensor and the input
    is not modified (torch overwrites it); values and gradients are torch's."""


def relu(input, inplace=False):
    """max(x, 0), NaN kept. A strided view (a channel slice x[:, :c]) goes through the broadcasting
    kernel, dense memory through the flat one; either way the output is dense. """ + INPLACE
    check_tensors("relu", input=input)
    X = input.data
    y = _pw.relu(X) if is_flat(X) else _pw.pointwise("relu", X)
    return record("relu", y, (input,), lambda g: (_pw.relu_backward(y, g),), saved=(y,))


def _operands(name, input, other):
    """The kernel operands of input and other: a tnet.Tensor's storage, or a Python number."""
    for arg, v in (("input", input), ("other", other)):
        check(isinstance(v, (Tensor, numbers.Real)),
              lambda: f"{name}: {arg} must be a tnet.Tensor or a Python number, got {type(v).__name__}")
    check(isinstance(input, Tensor) or isinstance(other, Tensor),
          lambda: f"{name}: input or other must be a tnet.Tensor")
    # ints stay ints: integer arithmetic where every operand is an integer, as torch's
    return [v.data if isinstance(v, Tensor) else int(v) if isinstance(v, numbers.Integral) else float(v)
            for v in (input, other)]


def sum_to(g, x):
    """g, of a broadcast result's shape, summed over the axes that broadcasting stretched to x's
    shape (in any layout: the tape puts gradients in their tensor's layout)."""
    if g is None:
        return None
    if tuple(g.shape) != x.shape:
        lead = g.dim() - x.ndim
        dims = [*range(lead), *(lead + i for i, s in enumerate(x.shape) if s == 1 and g.shape[lead + i] != 1)]
        g = _reduce.reduce(g, dims).reshape(x.shape)
    return g


def _record2(name, y, input, other, grads, saved=()):
    """Record y = name(input, other); grads(g) gives both operands' gradients at y's shape (None
    where not needed), summed here to each tensor operand's shape; numbers get none. saved: the
    tensors grads reads (record's)."""
    inputs = [v for v in (input, other) if isinstance(v, Tensor)]

    def backward(g):
        return tuple(sum_to(gv, v) for v, gv in zip((input, other), grads(g)) if isinstance(v, Tensor))
    return record(name, y, inputs, backward, saved=saved)


def add(input, other):
    """input + other."""
    a, b = _operands("add", input, other)
    return _record2("add", _pw.pointwise("add", a, b), input, other, lambda g: (g.view(g.shape), g.view(g.shape)))


def sub(input, other):
    """input - other."""
    a, b = _operands("sub", input, other)
    need_b = needs_grad(other)[0]
    return _record2("sub", _pw.pointwise("sub", a, b), input, other,
                    lambda g: (g.view(g.shape), _pw.pointwise("neg", g) if need_b else None))


def mul(input, other):
    """input * other."""
    a, b = _operands("mul", input, other)
    need_a, need_b = needs_grad(input, other)
    return _record2("mul", _pw.pointwise("mul", a, b), input, other,
                    lambda g: (_pw.pointwise("mul", g, b) if need_a else None,
                               _pw.pointwise("mul", g, a) if need_b else None),
                    saved=(b if need_a else None, a if need_b else None))


def div(input, other):
    """input / other (true division)."""
    a, b = _operands("div", input, other)
    need_a, need_b = needs_grad(input, other)
    y = _pw.pointwise("div", a, b)
    return _record2("div", y, input, other,
                    lambda g: (_pw.pointwise("div", g, b) if need_a else None,
                               _pw.pointwise("div_backward", g, y, b) if need_b else None),
                    saved=(b, y if need_b else None))


def _unary(name, input, op, grad_op, saves_output, *args):
    """Record y = op(input, *args) elementwise, in input's layout; its backward is
    grad_op(g, y or input, *args), saving only the one it reads."""
    check_tensors(name, input=input)
    y = _pw.pointwise(op, input.data, *args)
    saved = y if saves_output else input.data
    return record(name, y, (input,), lambda g: (_pw.pointwise(grad_op, g, saved, *args),), saved=(saved,))


def neg(input):
    check_tensors("neg", input=input)
    return record("neg", _pw.pointwise("neg", input.data), (input,), lambda g: (_pw.pointwise("neg", g),))


def exp(input):
    return _unary("exp", input, "exp", "mul", True)


def log(input):
    return _unary("log", input, "log", "div", False)


def sqrt(input):
    return _unary("sqrt", input, "sqrt", "sqrt_backward", True)


def pow(input, exponent):
    """input ** exponent for a Python number exponent (tensor exponents are not supported)."""
    check(isinstance(exponent, numbers.Real),
          lambda: f"pow: exponent must be a Python number (tensor exponents are not supported), got {type(exponent).__name__}")
    return _unary("pow", input, "pow", "pow_backward", False, float(exponent))


def gelu(input, approximate="none"):
    """x * Phi(x), Phi the standard normal CDF (erf); approximate='tanh': PyTorch's tanh form."""
    check(approximate in ("none", "tanh"), lambda: f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    op = "gelu" if approximate == "none" else "gelu_tanh"
    return _unary("gelu", input, op, op + "_backward", False)


def sigmoid(input):
    return _unary("sigmoid", input, "sigmoid", "sigmoid_backward", True)


def tanh(input):
    return _unary("tanh", input, "tanh", "tanh_backward", True)


def silu(input):
    """x * sigmoid(x)."""
    return _unary("silu", input, "silu", "silu_backward", False)


def relu6(input, inplace=False):
    """min(max(x, 0), 6); the gradient is 0 at and outside 0 and 6 (torch's hardtanh rule). """ + INPLACE
    return _unary("relu6", input, "relu6", "relu6_backward", False)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6. """ + INPLACE
    return _unary("hardswish", input, "hardswish", "hardswish_backward", False)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6. """ + INPLACE
    return _unary("hardsigmoid", input, "hardsigmoid", "hardsigmoid_backward", False)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x. """ + INPLACE
    return _unary("leaky_relu", input, "leaky_relu", "leaky_relu_backward", False, float(negative_slope))


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1) (an accurate expm1). """ + INPLACE
    return _unary("elu", input, "elu", "elu_backward", False, float(alpha))


def abs(input):
    """|x|; the gradient is g * sign(x), 0 at 0 (and at NaN, as torch)."""
    return _unary("abs", input, "abs", "abs_backward", False)


def clamp(input, min=None, max=None):
    """min(max(x, min), max) for Python numbers min and max (either may be None), NaN kept; the
    gradient passes where x lies within the bounds, bounds included, as torch. Tensor bounds are
    not supported."""
    check_tensors("clamp", input=input)
    check(min is not None or max is not None, "clamp: at least one of 'min' or 'max' must not be None")
    for arg, v in (("min", min), ("max", max)):
        check(v is None or isinstance(v, numbers.Real),
              lambda: f"clamp: {arg} must be a Python number or None (tensor bounds are not supported), got {type(v).__name__}")
    X = input.data
    y = _pw.pointwise("clamp", X, -math.inf if min is None else float(min), math.inf if max is None else float(max))
    return record("clamp", y, (input,), lambda g: (_pw.pointwise("clamp_backward", g, X, y),), saved=(X, y))


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def _compare(name, input, other):
    """A bool tensor (no gradient): input `name` other, broadcasting; tensors of any dtype tnet
    holds, or a Python number on either side."""
    a, b = _operands(name, input, other)
    return Tensor(_pw.pointwise(name, a, b))


def _comparison(name, text):
    """The op `name`: element-wise `text`, a bool tensor without gradient."""
    def op(input, other):
        return _compare(name, input, other)
    op.__name__, op.__qualname__, op.__doc__ = name, name, f"{text}, element-wise: a bool tensor."
    return op


eq = _comparison("eq", "input == other (NaN equals nothing)")
ne = _comparison("ne", "input != other (NaN differs from everything)")
lt = _comparison("lt", "input < other")
le = _comparison("le", "input <= other")
gt = _comparison("gt", "input > other")
ge = _comparison("ge", "input >= other")
logical_and = _comparison("logical_and", "input and other (nonzero is true)")
logical_or = _comparison("logical_or", "input or other (nonzero is true)")


def logical_not(input):
    """True where input is 0 (of any dtype): a bool tensor."""
    check_tensors("logical_not", input=input)
    return Tensor(_pw.pointwise("logical_not", input.data))


def _bool_only(name, op):
    """The operator `name` (&, |) of bool tensors: the logical op."""
    def apply(input, other):
        for v in (input, other):
            check(not isinstance(v, Tensor) or v.dtype == torch.bool,
                  lambda: f"{name}: tnet supports bool tensors only (bitwise ops on integers are not supported), got {v.dtype}")
        return op(input, other)
    return apply


bitwise_and = _bool_only("bitwise_and", logical_and)
bitwise_or = _bool_only("bitwise_or", logical_or)


def bitwise_not(input):
    """~x: logical not of a bool tensor, two's complement of an integer one (floats raise, as torch)."""
    check_tensors("bitwise_not", input=input)
    check(input.dtype in _pw.INTEGERS,
          lambda: f"bitwise_not: not implemented for {input.dtype} (bool and integer tensors only)")
    return Tensor(_pw.pointwise("logical_not" if input.dtype == torch.bool else "bitwise_not", input.data))


def where(condition, input, other):
    """input where condition (a bool tensor) holds, else other, broadcasting; input and other are
    tensors or Python numbers (not both numbers). Each tensor's gradient is g where it was taken."""
    check(isinstance(condition, Tensor) and condition.dtype == torch.bool,
          lambda: f"where: condition must be a bool tnet.Tensor, got {getattr(condition, 'dtype', type(condition).__name__)}")
    a, b = _operands("where", input, other)
    C = condition.data
    need_a, need_b = needs_grad(input, other)
    y = _pw.pointwise("where", C, a, b)
    return _record2("where", y, input, other,
                    lambda g: (_pw.pointwise("where", C, g, 0.0) if need_a else None,
                               _pw.pointwise("where", C, 0.0, g) if need_b else None), saved=(C,))


def isnan(input):
    """A bool tensor, True where input is NaN (never for integers)."""
    return ne(input, input)


def isinf(input):
    """A bool tensor, True where input is +inf or -inf (never for integers)."""
    if not input.data.is_floating_point():
        return ne(input, input)
    return eq(abs(input), math.inf)


def _extremum(input, other, wins, loses):
    """The element winning `wins` (gt: the larger), NaN where either is, a tie's gradient shared half
    and half (a NaN's whole to both), as torch's maximum and minimum (integers: the winner, no
    gradient)."""
    if not (input.data.is_floating_point() or getattr(other, "data", other).is_floating_point()):
        return where(logical_not(loses(input, other)), input, other)
    tie = add(mul(input, 0.5), mul(other, 0.5))  # either value; halves never overflow
    neither = where(eq(input, other), tie, add(input, other))  # a NaN: NaN, the whole gradient to both
    return where(wins(input, other), input, where(loses(input, other), other, neither))


def maximum(input, other):
    """The larger of each pair of elements (broadcast), as torch.maximum."""
    check_tensors("maximum", input=input, other=other)
    return _extremum(input, other, gt, lt)


def minimum(input, other):
    """The smaller of each pair of elements (broadcast), as torch.minimum."""
    check_tensors("minimum", input=input, other=other)
    return _extremum(input, other, lt, gt)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight one value or one per channel (dim 1), as torch's: the
    input's gradient 1 where x > 0, else weight."""
    check_tensors("prelu", input=input, weight=weight)
    check(weight.numel() == 1 or (input.ndim >= 2 and weight.numel() == input.shape[1]),
          lambda: f"prelu: the weight has {weight.numel()} elements; expected 1 or the input's {input.shape[1] if input.ndim >= 2 else 1} channels")
    if weight.numel() > 1:
        weight = weight.reshape((1, -1) + (1,) * (input.ndim - 2))
    positive = relu(input)
    return add(positive, mul(weight, sub(input, positive)))
