"""Element-wise ops (kernels/pointwise.py): arithmetic, functions and activations, PyTorch's
names. Binary ops broadcast like PyTorch's and take a Python number on either side; each
operand's gradient is summed back to its shape. A gradient passed on unchanged goes out as a
view, so that no two inputs hold one buffer (the tape copies a view before keeping it as a
leaf's .grad). Each keeps its input's layout."""
import numbers

from ..kernels import pointwise as _pw
from ..kernels import reduce as _reduce
from ..kernels.launch import check
from ..tensor import Tensor, record
from .inputs import check_tensors, needs_grad


def relu(x):
    check_tensors("relu", x=x)
    y = _pw.relu(x.data)
    return record("relu", y, (x,), lambda g: (_pw.relu_backward(y, g),), saved=(y,))


def _operands(name, input, other):
    """The kernel operands of input and other: a tnet.Tensor's storage, or a Python number."""
    for arg, v in (("input", input), ("other", other)):
        check(isinstance(v, (Tensor, numbers.Real)),
              f"{name}: {arg} must be a tnet.Tensor or a Python number, got {type(v).__name__}")
    check(isinstance(input, Tensor) or isinstance(other, Tensor), f"{name}: input or other must be a tnet.Tensor")
    return [v.data if isinstance(v, Tensor) else float(v) for v in (input, other)]


def _sum_to(g, x):
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
        return tuple(_sum_to(gv, v) for v, gv in zip((input, other), grads(g)) if isinstance(v, Tensor))
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
          f"pow: exponent must be a Python number (tensor exponents are not supported), got {type(exponent).__name__}")
    return _unary("pow", input, "pow", "pow_backward", False, float(exponent))


def gelu(input, approximate="none"):
    """x * Phi(x), Phi the standard normal CDF (erf); approximate='tanh': PyTorch's tanh form."""
    check(approximate in ("none", "tanh"), f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    op = "gelu" if approximate == "none" else "gelu_tanh"
    return _unary("gelu", input, op, op + "_backward", False)


def sigmoid(input):
    return _unary("sigmoid", input, "sigmoid", "sigmoid_backward", True)


def tanh(input):
    return _unary("tanh", input, "tanh", "tanh_backward", True)


def silu(input):
    """x * sigmoid(x)."""
    return _unary("silu", input, "silu", "silu_backward", False)
