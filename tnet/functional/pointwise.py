"""Element-wise ops (kernels/pointwise.py): arithmetic, functions and activations, PyTorch's
names. Binary ops broadcast like PyTorch's and take a Python number on either side; each
operand's gradient is summed back to its shape. A gradient passed on unchanged goes out as a
view, so that no two inputs hold one buffer (the tape copies a view before keeping it as a
leaf's .grad). Each keeps its input's layout.

Comparisons (eq, ne, lt, le, gt, ge), logical ops and where take integer and bool tensors too;
comparisons and logical ops give bool tensors, which carry no gradient.

torch's element-wise functions (floor ... erf) are one table, MATH; integer tensors keep their dtype
through floor, ceil, round, trunc, sign, square and abs, and compute on float32 in the others, as
torch's. Then more activations (softplus ... glu) and tensor math (lerp, addcmul, addcdiv,
masked_fill, tril, triu)."""
import functools
import math
import numbers
import warnings

import numpy as np
import torch

from .. import amp, return_types
from ..kernels import pointwise as _pw
from ..kernels import reduce as _reduce
from ..kernels.copy import check_count, copy_
from ..kernels.launch import (DTYPE_NAMES, InputError, InputTypeError, as_float_of, as_int64, as_int_of, as_value_of, capturing, check, check_type,
                              is_channels_last, is_flat, not_implemented, raise_flagged)
from ..tensor import (Tensor, any_requires_grad, named, tape_mark, as_storage, dim_index, is_grad_enabled, linear_graph, no_grad,
                      record)
from .host import nonzero
from .inputs import check_args, check_tensors, needs_grad, write_out


INPLACE = """inplace=True writes the result into the input and returns it, as torch's."""


# an activation's name -> its in-place form (relu_, ...), registered by inplace.py, which imports this module
INPLACE_WRITERS = {}


def _written(name, input, *args):
    """The activation `name` of input (with args) written into input and input returned: its
    inplace=True, as torch's (a recorded in-place op where grad is on; a view writes through to
    its base: see inplace.inplace)."""
    check_tensors(name, input=input)
    return INPLACE_WRITERS[name](input, *args)


def relu(input, inplace=False):
    """max(x, 0), NaN kept. A strided view (a channel slice x[:, :c]) goes through the broadcasting
    kernel, dense memory through the flat one; either way the output is dense. Integer tensors keep
    their dtype. """ + INPLACE
    if inplace:
        return _written("relu", input)
    check_tensors("relu", input=input)
    X = input.memory
    if X.dtype in _pw.INTEGERS:  # integers stay integers, as torch's
        check(X.dtype != torch.bool, "Boolean inputs not supported for relu")
        return clamp(input, min=0)
    y = _pw.relu(X) if is_flat(X) else _pw.pointwise("relu", X)
    return record_relu(y, input)


def record_relu(y, input):
    """y = relu(input) (torch tensor; input a tnet Tensor) on the tape: its backward reads y."""
    return record("relu", y, (input,), lambda g: (_pw.relu_backward(y, g),), saved=(y,), graph=_relu_graph)


def _relu_graph(g, y):  # torch's threshold_backward: 0 where y <= 0, g elsewhere (at NaN too), as relu_backward
    return (_tied(where(le(y, 0.0), 0.0, g), y),)


def _tied(v, x):
    """v, on the tape as depending on x with a zero gradient: the gradient of a piecewise-linear op
    (relu's, leaky_relu's, abs's) reads x only through a mask, and torch still counts x as used, so
    its second-order gradient is zeros, not None. No copy and no kernel."""
    if not (is_grad_enabled() and x.requires_grad):
        return v
    return record("tied", v.memory, (v, x), lambda h: (h, torch.zeros_like(x.memory)),
                  graph=lambda h, out: (h, Tensor(torch.zeros_like(x.memory))))


def _operands(name, input, other):
    """The kernel operands of input and other: a tnet.Tensor's storage, a torch tensor's or numpy
    array's copy on tnet's device (a constant: no gradient flows to it; numpy's dtypes as tnet.tensor
    takes them), or a Python number."""
    if isinstance(input, Tensor) and (isinstance(other, Tensor) or type(other) in (int, float)):  # the common case
        return [input.memory, other.memory if isinstance(other, Tensor) else other]
    if any(isinstance(v, (torch.Tensor, np.ndarray)) for v in (input, other)):
        input, other = (Tensor(as_storage(v, v.dtype)) if isinstance(v, torch.Tensor) else
                        Tensor(as_storage(v)) if isinstance(v, np.ndarray) else v for v in (input, other))
    for arg, v in (("input", input), ("other", other)):
        check_type(isinstance(v, (Tensor, numbers.Real)),
              lambda: f"{name}: {arg} must be a tnet.Tensor or a Python number, got {type(v).__name__}")
    check_type(isinstance(input, Tensor) or isinstance(other, Tensor),
          lambda: f"{name}: input or other must be a tnet.Tensor")
    # ints stay ints: integer arithmetic where every operand is an integer, as torch's
    return [v.memory if isinstance(v, Tensor) else v if isinstance(v, bool) else int(v)
            if isinstance(v, numbers.Integral) else float(v) for v in (input, other)]


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


def _record_each(name, y, operands, grads, saved=(), graph=None, saves_nothing=False):
    """Record y = name(*operands); grads(g) gives every operand's gradient at y's shape (None
    where not needed), summed here to each tensor operand's shape; numbers get none. saved: the
    tensors grads reads (record's). graph(g, y): grads' twin on tnet Tensors (record's graph=).
    saves_nothing: record's."""
    inputs = [v for v in operands if isinstance(v, Tensor)]
    if not (is_grad_enabled() and any_requires_grad(inputs)):  # nothing to record
        return Tensor(y)

    def backward(g):
        return tuple(sum_to(gv, v) for v, gv in zip(operands, grads(g)) if isinstance(v, Tensor))

    def graph_backward(g, out):
        return tuple(graph_sum_to(gv, v) for v, gv in zip(operands, graph(g, out)) if isinstance(v, Tensor))
    out = record(name, y, inputs, backward, saved=saved, graph=None if graph is None else graph_backward,
                 saves_nothing=saves_nothing)
    if len(inputs) < len(operands) and out._entry is not None:  # where next_functions keeps a number's slot
        out._entry.numbers = tuple(i for i, v in enumerate(operands) if not isinstance(v, Tensor))
    return out


def _record2(name, y, input, other, grads, saved=(), graph=None, saves_nothing=False):
    """_record_each of the two operands input and other."""
    return _record_each(name, y, (input, other), grads, saved, graph, saves_nothing)


def graph_sum_to(g, x):
    """sum_to on the tape: g, a tnet Tensor of a broadcast result's shape (or None), summed to
    x's shape, for graph backwards (record's graph=)."""
    if g is None or g.shape == x.shape:
        return g
    shape = g.shape
    return record("sum_to", sum_to(g.memory, x), (g,), lambda h: (h.expand(shape),),
                  graph=lambda h, y: (_graph_expand(h, shape),))


def _graph_expand(h, shape):
    """h broadcast to shape, on the tape: graph_sum_to's gradient (copy.expand's twin, which this
    module cannot import)."""
    return record("expand", h.memory.expand(shape), (h,), lambda k: (sum_to(k, h),),
                  graph=lambda k, y: (graph_sum_to(k, h),))


def _kind(v):
    """"bool", "int" or "float": the kind of an operand of add or sub (a tnet or torch tensor, a numpy array or a
    number), for alpha's rules."""
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, numbers.Integral):
        return "int"
    dtype = getattr(v, "dtype", None)
    if isinstance(dtype, torch.dtype):
        return "bool" if dtype == torch.bool else "float" if dtype.is_floating_point or dtype.is_complex else "int"
    if isinstance(dtype, np.dtype):
        return {"b": "bool", "i": "int", "u": "int"}.get(dtype.kind, "float")
    return "float"


def checked_alpha(input, other, alpha):
    """alpha= of add and sub (and add_, sub_) by torch's rules: a floating alpha needs a floating result, a bool
    alpha a bool one (RuntimeError); for a bool result, alpha as a bool (True + 2 * True is True, as torch's)."""
    if alpha.__class__ is int and alpha == 1:  # the default, which every rule lets through: every a + b asks
        return alpha
    kinds = {_kind(input), _kind(other)}
    check("float" in kinds or not isinstance(alpha, (float, np.floating)),
          "For integral input tensors, argument alpha must not be a floating point number.")
    check(kinds == {"bool"} or not isinstance(alpha, (bool, np.bool_)),
          "Boolean alpha only supported for Boolean results.")
    return bool(alpha) if kinds == {"bool"} else alpha


def scaled(other, alpha):
    """alpha * other, for alpha= of add, sub and their in-place forms (other itself where alpha is 1)."""
    return other if alpha == 1 else mul(other, alpha) if isinstance(other, Tensor) else other * alpha


def scale_first(name, args, tensors):
    """torch's deprecated overloads that take the scale first, which optimizers written before torch
    1.5 use (`p.data.add_(-lr, d_p)`, `exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)`): args,
    a number then `tensors` tensors, as (number, [tensors]), with torch's UserWarning; TypeError for
    another combination, as torch's."""
    scale, rest = args[0], list(args[1:])
    if not (isinstance(scale, numbers.Number) and len(rest) == tensors and all(isinstance(t, Tensor) for t in rest)):
        raise TypeError(f"{name}() received an invalid combination of arguments: "
                        f"({', '.join(type(a).__name__ for a in args)})")
    what = "alpha, Tensor other" if tensors == 1 else "value, Tensor tensor1, Tensor tensor2"
    keyword = "Tensor other, *, Number alpha = 1" if tensors == 1 else "Tensor tensor1, Tensor tensor2, *, Number value = 1"
    warnings.warn(f"This overload of {name} is deprecated:\n\t{name}(Number {what})\nConsider using one of the "
                  f"following signatures instead:\n\t{name}({keyword})", UserWarning, stacklevel=3)
    return scale, rest


def add(input, other, *deprecated, alpha=1):
    """input + alpha * other; also torch's deprecated add(input, alpha, other) (scale_first)."""
    if deprecated:
        alpha, (other,) = scale_first("add", (other, *deprecated), 1)
    alpha = checked_alpha(input, other, alpha)
    return add_or_sub("add", input, other if alpha == 1 else scaled(other, alpha))


def sub(input, other, *deprecated, alpha=1):
    """input - alpha * other; also torch's deprecated sub(input, alpha, other) (scale_first)."""
    if deprecated:
        alpha, (other,) = scale_first("sub", (other, *deprecated), 1)
    alpha = checked_alpha(input, other, alpha)
    return add_or_sub("sub", input, other if alpha == 1 else scaled(other, alpha))


SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, "
            "use the `~` or `logical_not()` operator instead.")
SUB_BOOLS = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
             "operator instead.")  # torch's where both operands are bool (a Python bool counts)


def add_or_sub(name, input, other, into=None):
    """input + other (name "add") or input - other ("sub"), on the tape; into: a dense torch tensor
    of the result's shape (input's own memory, for add_ and sub_ with grad) that the kernel writes,
    as neither gradient reads the operands."""
    a, b = _operands(name, input, other)
    bools = [v is True or v is False or getattr(v, "dtype", None) == torch.bool for v in (a, b)]
    check(name == "add" or not any(bools), lambda: SUB_BOOLS if all(bools) else SUB_BOOL)
    y = _pw.pointwise(name, a, b) if into is None else \
        _pw.pointwise(name, a, b, channels_last=is_channels_last(into), out=into)
    need_b = needs_grad(other)[0]
    return _record2(name, y, input, other, lambda g: (
        g.view(g.shape), (g.view(g.shape) if name == "add" else _pw.pointwise("neg", g)) if need_b else None),
        graph=lambda g, out: (g, (g if name == "add" else neg(g)) if need_b else None), saves_nothing=True)


def mul(input, other):
    """input * other."""
    a, b = _operands("mul", input, other)
    need_a, need_b = needs_grad(input, other)
    return _record2("mul", _pw.pointwise("mul", a, b), input, other,
                    lambda g: (_pw.pointwise("mul", g, b) if need_a else None,
                               _pw.pointwise("mul", g, a) if need_b else None),
                    saved=(b if need_a else None, a if need_b else None),
                    graph=lambda g, out: (mul(g, other) if need_a else None, mul(g, input) if need_b else None))


def div(input, other, *, rounding_mode=None):
    """input / other: true division, or rounded toward zero (rounding_mode 'trunc') or down
    ('floor'), as torch's (rounded results have no gradient, as torch's; their node torch's DivBackward2)."""
    if rounding_mode is not None:
        mark = tape_mark()
        return named("div_rounded", mark, _div_rounded(input, other, rounding_mode))
    input, other = _ints_to_float(input, other)
    a, b = _operands("div", input, other)
    need_a, need_b = needs_grad(input, other)
    # other's gradient reads the operands, not the quotient, as torch's: scripts write into the
    # quotient in place (RepDistiller's `torch.div(p, q).log_()`, `out[out != out] = 0`); its -g ((a / b) / b)
    # runs op by op beside a 16-bit operand, each quotient rounded as torch's
    def other_grad(g):
        if not _op_by_op(input, other):
            return _pw.pointwise("div_other_backward", g, a, b)
        return _pw.pointwise("neg", _pw.pointwise("mul", g, _pw.pointwise("div", _pw.pointwise("div", a, b), b)))
    return _record2("div", _pw.pointwise("div", a, b), input, other,
                    lambda g: (_pw.pointwise("div", g, b) if need_a else None, other_grad(g) if need_b else None),
                    saved=(b, a if need_b else None),
                    graph=lambda g, out: (div(g, other) if need_a else None,
                                          neg(mul(g, div(div(input, other), other))) if need_b else None))


def _div_rounded(input, other, rounding_mode):
    """div's rounded quotient (rounding_mode 'trunc' or 'floor'), as torch's."""
    check_type(isinstance(rounding_mode, str), lambda: f"div(): argument 'rounding_mode' must be str or None, not "
                                                       f"{type(rounding_mode).__name__}")
    check(rounding_mode in ("trunc", "floor"),
          lambda: f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
    if rounding_mode == "floor":  # torch's div_floor (1 / -inf is -1, inf / 2 NaN), integers exactly
        return floor_divide(input, other)
    if _is_integer(input) and _is_integer(other):  # exactly, in their promoted integer dtype, as torch's:
        # (input - fmod) / other divides evenly; bools, which sub refuses, in int64 and cast back
        if _all_bool(input, other):
            raise not_implemented("div_trunc_cpu", torch.bool)
        x = input.to(torch.int64) if isinstance(input, Tensor) and input.dtype == torch.bool else input
        y = floor_divide(sub(x, fmod(x, other)), other)
        return y if x is input else y.to(_pw.out_dtype("floor_divide", _operands("div", input, other), True))
    with no_grad():  # a zero gradient, not trunc's 0 times div's (NaN where other is 0)
        y = trunc(div(input, other))
    return _record2("div", y.memory, input, other, lambda g: (torch.zeros_like(g), torch.zeros_like(g)))


def _ints_to_float(*values):
    """values, the integer and bool tensors among them cast to the float dtype torch's promotion
    gives them: the float tensors' (float16 with an int64 tensor stays float16), float32 without one."""
    floats = [v.memory for v in values if isinstance(v, Tensor) and v.memory.is_floating_point()]
    dtype = _pw.result_type(floats) if floats else torch.float32
    return tuple(v.to(dtype) if isinstance(v, Tensor) and not v.memory.is_floating_point() else v for v in values)


def _is_integer(v):
    """An integer or bool tnet tensor, or a Python int (bool)."""
    return isinstance(v, numbers.Integral) or isinstance(v, Tensor) and v.dtype in _pw.INTEGERS


def ints_as_float32(X):
    """X, or a float32 copy of an integer or bool X: the functions that torch computes in float32 for
    integers (exp, log, sigmoid...), as its type promotion does."""
    return X if X.is_floating_point() else copy_(torch.empty_like(X, dtype=torch.float32), X)


PROMOTED = ("exp", "log", "sqrt", "sigmoid", "tanh", "softsign", "tanhshrink")  # integers in float32, as torch's
# bool raises there in torch: softsign's abs has no bool kernel, tanhshrink's x - tanh(x) refuses a bool
NO_BOOL = {"softsign": lambda: not_implemented("abs", torch.bool), "tanhshrink": lambda: InputError(SUB_BOOL)}


def _unary(name, input, op, grad_op, saves_output, *args, graph=None):
    """Record y = op(input, *args) elementwise, in input's layout; its backward is
    grad_op(g, y or input, *args), saving only the one it reads; graph(g, x, y, *args), where
    given, its twin on tnet Tensors (record's graph=); grad_op is a kernel's op or a function of the
    same arguments. Integer and bool inputs of PROMOTED
    functions compute in float32."""
    check_tensors(name, input=input)
    X = input.memory
    if name in PROMOTED and X.dtype in _pw.INTEGERS:
        if name in NO_BOOL and X.dtype == torch.bool:
            raise NO_BOOL[name]()
        X = ints_as_float32(X)
    y = _pw.pointwise(op, X, *args)
    saved = y if saves_output else X
    grad = grad_op if callable(grad_op) else functools.partial(_pw.pointwise, grad_op)
    return record(name, y, (input,), lambda g: (grad(g, saved, *args),), saved=(saved,),
                  graph=None if graph is None else lambda g, out: (graph(g, input, out, *args),))


# the graph backwards (record's graph=) of _unary's functions: g, the input, the output, the arguments
def _exp_graph(g, x, y):
    return mul(g, y)


def _log_graph(g, x, y):
    return div(g, x)


def _sqrt_graph(g, x, y):
    return div(g, mul(y, 2.0))


def _sigmoid_graph(g, x, y):
    return mul(g, mul(y, sub(1.0, y)))


def _tanh_graph(g, x, y):
    return mul(g, sub(1.0, mul(y, y)))


def _leaky_relu_graph(g, x, y, slope):
    return _tied(where(gt(x, 0.0), g, mul(g, slope)), x)


def _abs_graph(g, x, y):
    return _tied(mul(g, Tensor(_pw.pointwise("sign", x.memory))), x)  # sign: a constant


def _zero_graph(g, y):  # a step function's (element-wise): zero gradients of every order
    return (Tensor(torch.zeros_like(g.memory)),)


def _gelu_graph(g, x, y):  # Phi(x) + x phi(x), phi the standard normal density
    phi = mul(exp(mul(mul(x, x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
    return mul(g, add(mul(add(erf(mul(x, 1.0 / math.sqrt(2.0))), 1.0), 0.5), mul(x, phi)))


def _gelu_tanh_graph(g, x, y):  # t = tanh(k (x + c x^3)): (1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2
    k, c = math.sqrt(2.0 / math.pi), 0.044715
    t = tanh(mul(add(x, mul(mul(mul(x, x), x), c)), k))
    slope = mul(mul(x, sub(1.0, mul(t, t))), mul(add(mul(mul(x, x), 3.0 * c), 1.0), k))
    return mul(g, mul(add(add(t, 1.0), slope), 0.5))


def _silu_graph(g, x, y):  # s (1 + x (1 - s)), s = sigmoid(x)
    s = sigmoid(x)
    return mul(g, mul(s, add(mul(x, sub(1.0, s)), 1.0)))


def _elu_graph(g, x, y, alpha, scale):  # 1 above 0, else alpha scale exp(scale x)
    above = gt(x, 0.0)
    below = where(above, 0.0, x)  # exp of the positive side would overflow, and 0 * inf is NaN
    return where(above, g, mul(g, mul(exp(mul(below, scale)), alpha * scale)))


def _softplus_graph(g, x, y, beta, threshold):  # sigmoid(beta x), 1 where beta x > threshold
    bx = mul(x, beta)
    return where(gt(bx, threshold), g, mul(g, sigmoid(bx)))


def _hardtanh_graph(g, x, y, low, high):  # 1 strictly between the bounds, else 0
    return _tied(where(gt(x, low), where(lt(x, high), g, 0.0), 0.0), x)


def _hardswish_graph(g, x, y):  # 0 at or below -3, x / 3 + 1/2 below 3, else 1
    return where(le(x, -3.0), 0.0, where(lt(x, 3.0), mul(g, add(div(x, 3.0), 0.5)), g))


def _hardsigmoid_graph(g, x, y):  # 1/6 strictly between -3 and 3, else 0
    return where(gt(x, -3.0), where(lt(x, 3.0), div(g, 6.0), 0.0), 0.0)


def _mish_graph(g, x, y):  # t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x))
    t = tanh(softplus(x))
    return mul(g, add(t, mul(mul(x, sigmoid(x)), sub(1.0, mul(t, t)))))


def _selu_graph(g, x, y):  # scale, or scale alpha exp(x) at or below 0
    return _elu_graph(g, x, y, 1.6732632423543772, 1.0) * 1.0507009873554805


def _logsigmoid_graph(g, x, y):  # sigmoid(-x)
    return mul(g, sigmoid(neg(x)))


def _softsign_graph(g, x, y):  # 1 / (1 + |x|)^2
    d = add(abs(x), 1.0)
    return div(g, mul(d, d))


def neg(input):
    """-x; integer tensors keep their dtype, bool ones raise, as torch's."""
    check_tensors("neg", input=input)
    check(input.dtype != torch.bool, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                     "to invert a mask, use the `~` or `logical_not()` operator instead.")
    return record("neg", _pw.pointwise("neg", input.memory), (input,), lambda g: (_pw.pointwise("neg", g),),
                  graph=lambda g, y: (neg(g),), saves_nothing=True)


def exp(input):
    return _unary("exp", input, "exp", "mul", True, graph=_exp_graph)


def log(input):
    return _unary("log", input, "log", "div", False, graph=_log_graph)


def sqrt(input):
    return _unary("sqrt", input, "sqrt", "sqrt_backward", True, graph=_sqrt_graph)


def pow(input, exponent):
    """input ** exponent, as torch's: a Python number or a tensor exponent (broadcast; floats), or
    a number input with a tensor exponent (rpow). Integer and bool tensors with a number exponent:
    an int exponent >= 0 gives exact int64 (int32) powers, wrapping on overflow (bool becomes
    int64; with a bool exponent it stays bool), a float one float32, as torch's; a negative int exponent
    raises as torch's."""
    if isinstance(exponent, Tensor):
        return rpow(exponent, input) if isinstance(input, numbers.Real) else _pow_tensor(input, exponent)
    check_type(isinstance(exponent, numbers.Real),
          lambda: f"pow: exponent must be a tnet.Tensor or a Python number, got {type(exponent).__name__}")
    check_tensors("pow", input=input)
    if input.dtype == torch.bool and isinstance(exponent, bool):  # stays bool, as torch's: x ** True is x
        return Tensor(input.memory.clone() if exponent else torch.ones_like(input.memory))
    if input.dtype in _pw.INTEGERS:
        if not isinstance(exponent, numbers.Integral):
            return pow(Tensor(ints_as_float32(input.memory)), exponent)
        check(exponent >= 0, "Integers to negative integer powers are not allowed.")
        return Tensor(_integer_power(input.memory, int(exponent)))
    # a 16-bit input's exponent past its range raises, as torch converts it (a float32 one's is kept as a double)
    e = float(exponent) if input.dtype == torch.float32 else as_float_of(exponent, input.dtype)
    sixteen = input.dtype in (torch.float16, torch.bfloat16)
    return _unary("pow", input, "pow_number", _pow_grad_rounded if sixteen else "pow_number_backward", False, e,
                  graph=_pow_graph)


def _pow_grad_rounded(g, X, E):
    """torch's pow_backward as its separate ops, g * (e * x^(e - 1)), 0 where e is 0, each op's result in its
    dtype: beside 16-bit operands every step rounds (bf16's 99840 - 1 is 99840, an even power of a negative x),
    where the fused pow_backward kernels round once. E: a tensor, or a number (whose e - 1 torch takes in double)."""
    if not isinstance(E, torch.Tensor):
        if E == 0:
            return _pw.pointwise("pow_number_backward", g, X, E)  # zeros, as torch's zeros_like(self)
        return _pw.pointwise("mul", g, _pw.pointwise("mul", _pw.pointwise("pow_number", X, E - 1.0), E))
    power = _pw.pointwise("mul", E, _pw.pointwise("pow", X, _pw.pointwise("sub", E, 1.0)))
    return _pw.pointwise("where", _pw.pointwise("eq", E, 0.0), 0.0, _pw.pointwise("mul", g, power))


def _pow_graph(g, x, y, e):
    """g e x^(e-1) on the tape (0 for e = 0, as torch's)."""
    if e == 0:
        return mul(g, 0.0)
    return mul(g, mul(x if e == 2 else pow(x, e - 1), e))


def _pow_tensor(input, exponent):
    """input ** exponent for two tensors; the exponent's gradient is g y log(x), 0 where x == 0 and
    the exponent >= 0 (torch's rule)."""
    check_tensors("pow", input=input, exponent=exponent)
    if _is_integer(input) and _is_integer(exponent):
        return _ipow(*_rounded_0d(input.memory, exponent.memory))
    input, exponent = _ints_to_float(input, exponent)
    X0, E0 = input.memory, exponent.memory  # torch's backward reads the operands as given: a 0-d one unrounded
    X, E = _rounded_0d(X0, E0)
    y = _pw.pointwise("pow", X, E)
    need_x, need_e = needs_grad(input, exponent)

    def grads(g):
        gx = None
        if need_x and (E.dtype in (torch.float16, torch.bfloat16) or y.dtype in (torch.float16, torch.bfloat16)):
            # a 16-bit exponent's e - 1 rounds in its dtype, even beside fp32 x (-0.93359375 - 1 is bf16's -1.9375);
            # a 0-d fp32 exponent of 1e-40 is no 0 there, though the forward's float16 took it as 0
            gx = _pow_grad_rounded(g, X0, E0)
        elif need_x:
            gx = _pw.pointwise("pow_backward", g, X, E)
        ge = None
        if need_e:
            zero = _pw.pointwise("logical_and", _pw.pointwise("eq", X0, 0.0), _pw.pointwise("ge", E0, 0.0))
            # torch's g * where(...): a NaN or inf g still gives NaN where the factor is 0; its log of x in the
            # promoted dtype (a 0-d bf16 x beside an fp32 exponent: an fp32 log)
            Xp = X if X.dtype == y.dtype else copy_(torch.empty_like(X, dtype=y.dtype), X)
            ge = _pw.pointwise("mul", g, _pw.pointwise("where", zero, 0.0, _pw.pointwise("mul", y, _pw.pointwise("log", Xp))))
        return gx, ge
    return _record2("pow_tensors", y, input, exponent, grads, saved=(X0 if need_x or need_e else None, E0 if need_x or need_e else None,
                                                              X if need_e else None, y if need_e else None))


def _integer_power(X, n):
    """X ** n for an integer tensor X and n >= 0, by repeated squaring in X's integer dtype (int64 for bool)."""
    if X.dtype == torch.bool:
        X = copy_(torch.empty_like(X, dtype=torch.int64), X)
    y = _pw.pointwise("eq", X, X, dtype=X.dtype)  # ones
    while n:
        if n & 1:
            y = _pw.pointwise("mul", y, X)
        n >>= 1
        if n:
            X = _pw.pointwise("mul", X, X)
    return y


def _ipow(a, b):
    """a ** b of integers (integer tensors or ints; bools as 0 and 1), exact in int64 wrapping on overflow, then in
    their promoted dtype (int32 ** int32 is int32, wrapped there), as torch's; two bool tensors raise as torch's."""
    if all(isinstance(v, bool) or isinstance(v, torch.Tensor) and v.dtype == torch.bool for v in (a, b)):
        raise not_implemented("pow", torch.bool)
    dtype = _pw.out_dtype("ipow", (a, b), True)
    a, b = (copy_(torch.empty_like(v, dtype=torch.int64), v) if isinstance(v, torch.Tensor) and v.dtype != torch.int64
            else int(v) if isinstance(v, bool) else v for v in (a, b))
    y = _pw.pointwise("ipow", a, b)
    return Tensor(y if y.dtype == dtype else copy_(torch.empty_like(y, dtype=dtype), y))


def rpow(input, base):
    """base ** input for a positive Python number base (2 ** x), as exp2(x * log2(base)), with
    its gradient; an int base with an integer or bool tensor: exact int64 powers, as torch's; a base
    <= 0 as a 0-d tensor of input's float dtype to the tensor pow (C's rules: signed zeros and
    infinities, NaN at a fractional exponent); beside a 16-bit input, the base rounded to its dtype."""
    check_type(isinstance(base, numbers.Real), lambda: f"pow: base must be a Python number, got {type(base).__name__}")
    if isinstance(input, Tensor) and isinstance(base, numbers.Integral) and input.dtype in _pw.INTEGERS:
        return _ipow(base, input.memory)
    if base <= 0:
        check_tensors("pow", input=input)
        dtype = input.dtype if input.dtype in _pw.FLOATS else torch.float32
        return _pow_tensor(Tensor(torch.full((), _pw.round_to(float(base), dtype), dtype=dtype, device=input.device)),
                           input)
    if isinstance(input, Tensor) and input.dtype in (torch.float16, torch.bfloat16):  # torch's: the value from the
        X = input.memory  # base rounded to input's dtype (1e30 is fp16's inf), the gradient g y log(base) from the number
        # rounded on the host: torch.full refuses a value past the dtype's range on the GPU
        y = _pw.pointwise("pow", torch.full((), _pw.round_to(float(base), X.dtype), dtype=X.dtype, device=X.device), X)
        return _record_each("pow_number_base", y, (input,), lambda g: (_pw.pointwise("mul", g, _pw.pointwise("mul", y, math.log(base))),),
                            saved=(y,))
    # inf ** 0 and nan ** 0 are 1, not exp2(0 * inf); the gradient torch's g (y log(base)), y log(base) first: it
    # overflows where y is near the range's end (1e30 ** 1.23 is 6.8e36, times log(1e30) past it), and inf ** 0's
    # is inf, not NaN
    with no_grad():
        y = exp2(mul(input, math.log2(base)))
        y = y if math.isfinite(base) else where(eq(input, 0), 1.0, y)
    return _record_each("pow_number_base", y.memory, (input,), lambda g: (_pw.pointwise("mul", g, _pw.pointwise("mul", y.memory, math.log(base))),),
                        saved=(y.memory,), graph=lambda g, out: (mul(g, mul(out, math.log(base))),))


def gelu(input, approximate="none"):
    """x * Phi(x), Phi the standard normal CDF (erf); approximate='tanh': PyTorch's tanh form."""
    check_type(isinstance(approximate, str), lambda: f"gelu(): argument 'approximate' must be str, not "
                                                     f"{type(approximate).__name__}")
    check(approximate in ("none", "tanh"), lambda: f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    op = "gelu" if approximate == "none" else "gelu_tanh"
    return _unary("gelu", input, op, op + "_backward", False, graph=_gelu_graph if op == "gelu" else _gelu_tanh_graph)


def sigmoid(input):
    return _unary("sigmoid", input, "sigmoid", "sigmoid_backward", True,
                  graph=_sigmoid_graph)


def tanh(input):
    return _unary("tanh", input, "tanh", "tanh_backward", True, graph=_tanh_graph)


def silu(input, inplace=False):
    """x * sigmoid(x). """ + INPLACE
    if inplace:
        return _written("silu", input)
    return _unary("silu", input, "silu", "silu_backward", False, graph=_silu_graph)


def relu6(input, inplace=False):
    """min(max(x, 0), 6): hardtanh(x, 0, 6), as torch's. """ + INPLACE
    return hardtanh(input, 0.0, 6.0, inplace)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6. """ + INPLACE
    if inplace:
        return _written("hardswish", input)
    return _unary("hardswish", input, "hardswish", "hardswish_backward", False, graph=_hardswish_graph)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6. """ + INPLACE
    if inplace:
        return _written("hardsigmoid", input)
    return _unary("hardsigmoid", input, "hardsigmoid", "hardsigmoid_backward", False, graph=_hardsigmoid_graph)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x. """ + INPLACE
    check_args("leaky_relu", "float", negative_slope=negative_slope)  # torch's parser's TypeError, first
    if inplace:
        return _written("leaky_relu", input, negative_slope)
    return _unary("leaky_relu", input, "leaky_relu", "leaky_relu_backward", False, float(negative_slope),
                  graph=_leaky_relu_graph)


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1) (an accurate expm1). """ + INPLACE
    check_args("elu", "float", alpha=alpha)  # torch's parser's TypeError, first
    if inplace:
        return _written("elu", input, alpha)
    return _unary("elu", input, "elu", "elu_backward", False, float(alpha), 1.0, graph=_elu_graph)


def abs(input):
    """|x|; the gradient is g * sign(x), 0 at 0 (and at NaN, as torch). Integer tensors keep their
    dtype; bool ones raise, as torch."""
    check_tensors("abs", input=input)
    if input.dtype == torch.bool:
        raise not_implemented("abs", torch.bool)
    return _unary("abs", input, "abs", "abs_backward", False, graph=_abs_graph)


def clamp(input, min=None, max=None):
    """min(max(x, min), max), torch's: min and max Python numbers or tnet.Tensors that broadcast
    with x (both of one kind, else TypeError, as torch), either None; a NaN in x or a bound gives
    NaN, and min > max gives max. Gradients as torch's: x takes g where min <= x <= max (bounds
    included), min where x < min < max (or x < min without max), max where x > max or max < min;
    each summed back over the dims its operand was broadcast along. Integer tensors with int
    (number) bounds clamp exactly in their dtype (bool: int64), with a float bound in float32; a bool tensor
    with bool bounds raises torch's NotImplementedError."""
    return _clamp("clamp", input, min, max)


def _clamp(name, input, min, max):
    """clamp, recorded as the op `name` (clamp, clamp_min or clamp_max, whose nodes torch names apart): with number
    bounds as name, with tensor bounds as name + "_tensors" (torch's overloads: ClampBackward1 and ClampBackward0)."""
    check_tensors("clamp", input=input)
    check(min is not None or max is not None, "torch.clamp: At least one of 'min' or 'max' must not be None")
    tensors = [isinstance(v, Tensor) for v in (min, max) if v is not None]
    if any(tensors) and not all(tensors):
        # torch's parser reads a 0-d tensor that needs no gradient as a Number (Beta-VAE's
        # torch.clamp(c, 0, C_max.data[0])): such a bound beside a number is that number
        min, max = (v.item() if isinstance(v, Tensor) and v.ndim == 0 and not v.requires_grad else v
                    for v in (min, max))
        tensors = [isinstance(v, Tensor) for v in (min, max) if v is not None]
    if any(tensors):
        if not all(tensors):
            raise TypeError(f"clamp() received an invalid combination of arguments - got min={type(min).__name__}, "
                            f"max={type(max).__name__}: both bounds must be tensors, or both numbers")
        return _clamp_tensors(f"{name}_tensors", input, min, max)
    for arg, v in (("min", min), ("max", max)):
        check_type(v is None or isinstance(v, numbers.Real),
              lambda: f"clamp: {arg} must be a number, a tnet.Tensor or None, got {type(v).__name__}")
    X = input.memory
    if X.dtype == torch.bool and all(v is None or isinstance(v, bool) for v in (min, max)):
        # a bool tensor with bool bounds is a bool clamp, which torch's kernels lack (an int bound promotes to int64)
        which = "" if min is not None and max is not None else "_min" if max is None else "_max"
        raise not_implemented(f"clamp{which}_scalar_{X.device.type}", torch.bool)
    if X.dtype in _pw.INTEGERS:
        if not all(v is None or isinstance(v, numbers.Integral) for v in (min, max)):
            return _clamp(name, Tensor(ints_as_float32(X)), min, max)
        if X.dtype == torch.bool:
            X = copy_(torch.empty_like(X, dtype=torch.int64), X)
        info = torch.iinfo(X.dtype)  # the bounds in X's dtype first, as torch's checked conversion (-1 of uint8: 255)
        return Tensor(_pw.pointwise("clamp", X, info.min if min is None else as_int_of(min, X.dtype),
                                    info.max if max is None else as_int_of(max, X.dtype)))
    lo = -math.inf if min is None else as_float_of(min, X.dtype)
    hi = math.inf if max is None else as_float_of(max, X.dtype)
    y = _pw.pointwise("clamp", X, lo, hi)
    if lo > hi:  # y is max everywhere: no x lies within the bounds, so none takes a gradient (torch's rule)
        return record(name, y, (input,), lambda g: (torch.zeros_like(g),))
    # g where x lies within the bounds; the output is recomputed, not saved, as torch's saves x alone, so
    # that a script may write the output in place (`y = x.clamp(...); y.mul_(2)`)
    kept = lambda g: _pw.pointwise("clamp_backward", g, X, _pw.pointwise("clamp", X, lo, hi))
    backward = lambda g: (kept(g),)
    return record(name, y, (input,), backward, saved=(X,), graph=linear_graph(name, backward, kept))


def _clamp_tensors(name, input, min, max):
    """clamp with tensor bounds (either None): clamp_which codes which operand takes each
    element's gradient, worked out in the backward. Integer tensors clamp exactly, in their dtype."""
    if not any(v.memory.is_floating_point() for v in (input, min, max) if v is not None):
        y = input if min is None else maximum(input, min)
        return y if max is None else minimum(y, max)
    X = input.memory
    lo, hi = -math.inf if min is None else min.memory, math.inf if max is None else max.memory
    y = _pw.pointwise("clamp", X, lo, hi)
    operands = (input, min, max)
    need = needs_grad(*operands)

    def which():
        fx, flo, fhi = (ints_as_float32(v) if isinstance(v, torch.Tensor) and not v.is_floating_point() else v for v in (X, lo, hi))
        return _pw.pointwise("clamp_which", fx, flo, fhi, float((min is not None) + 2 * (max is not None)))

    def grads(g):
        code = which()
        # in g's dtype, summed to a broadcast operand's shape, then the tape casts: torch's order (a 0-d fp32 bound
        # of bf16 input takes a bf16 sum, and so does an fp32 bound of clamp_ into a bf16 self, whose g is bf16)
        return tuple(_pw.pointwise("clamp_backward", g, code, float(k), dtype=g.dtype) if n else None
                     for k, n in enumerate(need))

    def graph(g, out):  # each operand's gradient is g masked where it was taken: linear in g, its own adjoint
        code = which()
        masked = lambda h, k: _pw.pointwise("clamp_backward", h, code, float(k), dtype=h.dtype)
        return tuple(record("clamp_backward", masked(g.memory, k), (g,), lambda h, k=k: (masked(h, k),)) if n else None
                     for k, n in enumerate(need))
    return _record_each(name, y, operands, grads, saved=(X, lo, hi), graph=graph)


def clamp_min(input, min):
    return _clamp("clamp_min", input, min, None)


def clamp_max(input, max):
    return _clamp("clamp_max", input, None, max)


def _compare(name, input, other):
    """A bool tensor (no gradient): input `name` other, broadcasting; tensors of any dtype tnet
    holds, or a Python number on either side."""
    a, b = _wrapped_ints(*_rounded_0d(*_operands(name, input, other)))
    return Tensor(_pw.pointwise(name, a, b))


def _rounded_0d(a, b):
    """Kernel operands a and b in torch's promoted dtype, which torch casts each operand to first: a 0-d float
    tensor beside a 16-bit tensor (which sets the result's dtype) is rounded to 16 bits (a 0-d fp32 1e5 is fp16's
    inf), and a 0-d integer tensor beside a narrower integer tensor wraps into its dtype (a 0-d int64 -4 beside
    uint8 is 252: minimum and < compare with 252)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype != b.dtype and (a.dim() == 0) != (b.dim() == 0):
        a, b = (copy_(torch.empty_like(v, dtype=w.dtype), v) if v.dim() == 0 and _same_kind_narrower(v.dtype, w.dtype)
                else v for v, w in ((a, b), (b, a)))
    return a, b


def _same_kind_narrower(dtype, other):
    """Whether a 0-d tensor of dtype beside a tensor of other takes other's dtype: 16-bit floats beside a float,
    any integer dtype beside an integer (bool is neither)."""
    if other in (torch.float16, torch.bfloat16):
        return dtype.is_floating_point
    ints = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
    return dtype in ints and other in ints


def _rounded_numbers(a, b):
    """Kernel operands a and b with a Python number beside a float16 or bfloat16 tensor rounded to its
    dtype, as torch's element-wise ops other than + - * / take it (fmod(x, 0.1) of fp16 divides by
    0.0999756, xlogy(x, 1e5) of fp16 is x * log(inf)), and a Python int beside an integer tensor wrapped."""
    return _wrapped_ints(*(_pw.round_to(float(v), w.dtype) if isinstance(v, numbers.Real) and isinstance(w, torch.Tensor)
                           and w.dtype in (torch.float16, torch.bfloat16) else v for v, w in ((a, b), (b, a))))


_NP_INTS = {torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64}


def _wrapped_ints(a, b):
    """Kernel operands a and b with a Python int (not a bool) beside an integer tensor wrapped into its dtype, as
    torch casts each operand to the result's dtype first (x < -4 of uint8 x compares with 252)."""
    return tuple(int(np.array(v, np.int64).astype(_NP_INTS[w.dtype])) if type(v) is int and -2 ** 63 <= v < 2 ** 63
                 and isinstance(w, torch.Tensor) and w.dtype in _NP_INTS else v for v, w in ((a, b), (b, a)))


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
    return Tensor(_pw.pointwise("logical_not", input.memory))


logical_xor = _comparison("logical_xor", "input xor other (nonzero is true)")


def _bitwise(name):
    """torch.{name} of integer or bool tensors and Python ints (&, |, ^): the dtype by torch's
    promotion (bool with bool stays bool)."""
    def op(input, other):
        tensors = [v for v in (input, other) if isinstance(v, Tensor)]
        check_type(tensors, lambda: f"{name}: input or other must be a tnet.Tensor")  # torch's parser's TypeError
        floats = [v.dtype if isinstance(v, Tensor) else torch.float32 for v in (input, other)
                  if isinstance(v, float) or isinstance(v, Tensor) and v.dtype.is_floating_point]
        if floats:  # torch's kernel has no float form: its NotImplementedError names the promoted dtype
            raise not_implemented(f"{name}_{tensors[0].device.type}", floats[0])
        for v in (input, other):
            check(isinstance(v, numbers.Integral) or isinstance(v, Tensor) and v.dtype in _pw.INTEGERS,
                  lambda: f"{name}: not implemented for {getattr(v, 'dtype', type(v).__name__)} (bool and integer "
                          f"tensors and ints only)")
        a, b = _operands(name, input, other)
        return Tensor(_pw.pointwise(name, a, b))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.{name} of integer or bool tensors (or a Python int), element-wise."
    return op


bitwise_and, bitwise_or, bitwise_xor = _bitwise("bitwise_and"), _bitwise("bitwise_or"), _bitwise("bitwise_xor")


def bitwise_not(input):
    """~x: logical not of a bool tensor, two's complement of an integer one (floats raise, as torch)."""
    check_tensors("bitwise_not", input=input)
    check_type(input.dtype in _pw.INTEGERS,  # torch's ~ raises TypeError, its bitwise_not NotImplementedError
               lambda: f"bitwise_not: not implemented for {input.dtype} (bool and integer tensors only)")
    return Tensor(_pw.pointwise("logical_not" if input.dtype == torch.bool else "bitwise_not", input.memory))


def where(condition, input=None, other=None):
    """input where condition (a bool tensor) holds, else other, broadcasting; input and other are
    tensors or Python numbers (two numbers: a bool, int64 or float32 tensor, as torch's). Each
    tensor's gradient is g where it was taken.
    where(condition) alone: nonzero(condition, as_tuple=True), a host read, as torch's."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes a condition alone, or a condition, input and other")
    check(isinstance(condition, Tensor) and condition.dtype == torch.bool,
          lambda: f"where: condition must be a bool tnet.Tensor, got {getattr(condition, 'dtype', type(condition).__name__)}")
    if isinstance(input, numbers.Number) and isinstance(other, numbers.Number):  # torch's dtype of two numbers
        kind = bool if all(isinstance(v, bool) for v in (input, other)) else \
            int if all(isinstance(v, numbers.Integral) for v in (input, other)) else float
        input = Tensor(torch.full((), input, dtype={bool: torch.bool, int: torch.int64, float: torch.float32}[kind],
                                  device=condition.device))
    return _selected("where", condition, input, other)


def _selected(name, condition, input, other, swapped=False):
    """where's values, input where condition holds, else other (tensors or numbers), each tensor's gradient g where
    it was taken, recorded as name over (input, other), or with swapped over (other, input): masked_fill's node, the
    filled tensor first and its value second."""
    a, b = _operands(name, input, other)
    C = condition.memory
    need_a, need_b = needs_grad(input, other)

    def grads(g):
        return (_pw.pointwise("where", C, g, 0.0) if need_a else None,
                _pw.pointwise("where", C, 0.0, g) if need_b else None)

    def graph(g, out):
        return where(condition, g, 0.0) if need_a else None, where(condition, 0.0, g) if need_b else None
    y = _pw.pointwise("where", C, a, b)
    if swapped:
        return _record2(name, y, other, input, lambda g: grads(g)[::-1], saved=(C,),
                        graph=lambda g, out: graph(g, out)[::-1])
    return _record2(name, y, input, other, grads, saved=(C,), graph=graph)


def isnan(input):
    """A bool tensor, True where input is NaN (never for integers)."""
    return ne(input, input)


def isinf(input):
    """A bool tensor, True where input is +inf or -inf (never for integers)."""
    if not input.memory.is_floating_point():
        return ne(input, input)
    return eq(abs(input), math.inf)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise, as torch's: equal values (infinities too)
    are close, a finite and an infinite value are not, NaN is close to NaN only with equal_nan. A
    bool tensor without gradient."""
    check_args("isclose", "float", rtol=rtol, atol=atol)
    check_args("isclose", "bool", equal_nan=equal_nan)
    check_tensors("isclose", input=input, other=other)
    check(input.dtype == other.dtype, lambda: f"isclose: {input.dtype} did not match {other.dtype}")
    close = eq(input, other)
    if input.dtype != torch.bool:
        error = abs(sub(input, other))
        within = logical_and(le(error, add(mul(abs(other), float(rtol)), float(atol))), logical_not(isinf(error)))
        close = logical_or(close, within)
    if equal_nan:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    return close


def _extremum(name, input, other, sign):
    """torch's maximum (sign 1) or minimum (-1), one kernel: the winner, input at a tie, NaN where
    either is; the gradient g to the winner, half to each at a tie, the whole to both at a NaN.
    Integers: the winner, no gradient."""
    if not (input.memory.is_floating_point() or other.memory.is_floating_point()):
        return where(logical_not(lt(input, other) if sign > 0 else gt(input, other)), input, other)
    side = lambda g, x, o: _pw.pointwise("extremum_backward", g, x, o, sign)
    return _binary(name, input, other, name, lambda g, a, b, y, need: (need[0] and side(g, a, b),
                                                                       need[1] and side(g, b, a)),
                   graph=lambda g, a, b, y: (g * Tensor(side(1.0, a.memory, b.memory)),
                                             g * Tensor(side(1.0, b.memory, a.memory))))


def maximum(input, other, *, out=None):
    """The larger of each pair of elements (broadcast), as torch.maximum; out= as torch's (write_out)."""
    check_tensors("maximum", input=input, other=other)
    result = _extremum("maximum", input, other, 1.0)
    return result if out is None else write_out("maximum", out, result, (input, other))


def minimum(input, other, *, out=None):
    """The smaller of each pair of elements (broadcast), as torch.minimum; out= as torch's (write_out)."""
    check_tensors("minimum", input=input, other=other)
    result = _extremum("minimum", input, other, -1.0)
    return result if out is None else write_out("minimum", out, result, (input, other))


def prelu(input, weight):
    """x where x > 0, else weight * x, weight one value or one per channel (dim 1) of input's dtype (under
    autocast: any), as torch's (inf stays inf, NaN NaN): the input's gradient 1 where x > 0, else weight."""
    check_tensors("prelu", input=input, weight=weight)
    check(input.dtype == weight.dtype or amp.get_autocast_dtype() is not None,  # first, as torch's
          lambda: f"prelu: Type promoting not supported. Got {DTYPE_NAMES[input.dtype]} and {DTYPE_NAMES[weight.dtype]}")
    check(weight.numel() == 1 or (input.ndim >= 2 and weight.numel() == input.shape[1]),
          lambda: f"prelu: the weight has {weight.numel()} elements; expected 1 or the input's {input.shape[1] if input.ndim >= 2 else 1} channels")
    if weight.numel() != 1:  # one per channel (0 for an input of no channels)
        weight = weight.reshape((1, -1) + (1,) * (input.ndim - 2))
    positive = gt(input, 0.0)
    # the product reads 0 at x > 0: its gradient there (0 * weight) is NaN for an infinite weight, which
    # this where stops before it reaches x; the node torch's _prelu_kernel's
    mark = tape_mark()
    return named("prelu_kernel", mark, where(positive, input, mul(weight, where(positive, 0.0, input))))


# ---- torch's element-wise functions -----------------------------------------------------------

_LN2, _LN10 = math.log(2.0), math.log(10.0)

# name: (what it computes, its kernel OP, then its gradient: the OP and its operands after g, "x"
# the input, "y" the output, or numbers; no OP: a zero gradient, as torch's for step functions)
MATH = {
    "floor": ("the largest integer <= x", "floor"),
    "ceil": ("the smallest integer >= x", "ceil"),
    "trunc": ("x rounded toward 0", "trunc"),
    "sign": ("-1, 0 or 1 by x's sign (0 at NaN, as torch's)", "sign"),
    "log1p": ("log(1 + x), accurate near 0", "log1p", "log1p_backward", "x"),
    "expm1": ("exp(x) - 1, accurate near 0", "expm1", "expm1_backward", "y"),
    "sin": ("sin(x)", "sin", "sin_backward", "x"),
    "cos": ("cos(x)", "cos", "cos_backward", "x"),
    "reciprocal": ("1 / x", "reciprocal", "reciprocal_backward", "y"),
    "rsqrt": ("1 / sqrt(x)", "rsqrt", "rsqrt_backward", "y"),
    "log2": ("log(x) / log(2)", "log2", "muldiv", 1 / _LN2, "x"),  # g (1 / ln 2) / x
    "log10": ("log(x) / log(10)", "log10", "muldiv", 1 / _LN10, "x"),
    "exp2": ("2 ** x", "exp2", "muldiv", "y", 1 / _LN2),  # g y / (1 / ln 2)
    "erf": ("the error function", "erf", "erf_backward", "x"),
    "frac": ("x - trunc(x)", "frac", "mul", 1.0),
    "sinh": ("sinh(x)", "sinh", "sinh_backward", "x"),
    "cosh": ("cosh(x)", "cosh", "cosh_backward", "x"),
    "asin": ("asin(x), NaN outside [-1, 1]", "asin", "asin_backward", "x"),
    "acos": ("acos(x), NaN outside [-1, 1]", "acos", "acos_backward", "x"),
    "atan": ("atan(x)", "atan", "atan_backward", "x"),
}
STEPS = ("floor", "ceil", "round", "trunc")  # integer tensors: a copy, as torch's (bool ones raise)
FLOAT_ONLY = ("frac",)  # integer and bool tensors raise, as torch's

# MATH's gradients on tnet Tensors (record's graph=): g, the input x, the output y
MATH_GRAPHS = {
    "log1p": lambda g, x, y: div(g, add(x, 1.0)),
    "expm1": lambda g, x, y: mul(g, add(y, 1.0)),
    "sin": lambda g, x, y: mul(g, cos(x)),
    "cos": lambda g, x, y: neg(mul(g, sin(x))),
    "reciprocal": lambda g, x, y: neg(mul(g, mul(y, y))),
    "rsqrt": lambda g, x, y: mul(g, mul(mul(y, mul(y, y)), -0.5)),
    "log2": lambda g, x, y: div(g, mul(x, _LN2)),
    "log10": lambda g, x, y: div(g, mul(x, _LN10)),
    "exp2": lambda g, x, y: mul(g, mul(y, _LN2)),
    "erf": lambda g, x, y: mul(g, mul(exp(neg(mul(x, x))), 2.0 / math.sqrt(math.pi))),
    "frac": lambda g, x, y: g,
    "sinh": lambda g, x, y: mul(g, cosh(x)),
    "cosh": lambda g, x, y: mul(g, sinh(x)),
    "asin": lambda g, x, y: div(g, sqrt(sub(1.0, mul(x, x)))),
    "acos": lambda g, x, y: neg(div(g, sqrt(sub(1.0, mul(x, x))))),
    "atan": lambda g, x, y: div(g, add(mul(x, x), 1.0)),
    "tan": lambda g, x, y: mul(g, add(mul(y, y), 1.0)),
    "acosh": lambda g, x, y: div(g, sqrt(sub(mul(x, x), 1.0))),
    "asinh": lambda g, x, y: div(g, sqrt(add(mul(x, x), 1.0))),
    "atanh": lambda g, x, y: div(g, sub(1.0, mul(x, x))),
    "erfc": lambda g, x, y: mul(g, mul(exp(neg(mul(x, x))), -2.0 / math.sqrt(math.pi))),
    "erfinv": lambda g, x, y: mul(g, mul(exp(mul(y, y)), math.sqrt(math.pi) / 2.0)),
    "lgamma": lambda g, x, y: mul(g, digamma(x)),
    "digamma": lambda g, x, y: mul(g, polygamma(1, x)),
    # torch.special's (SPECIAL_MATH, below)
    "erfcx": lambda g, x, y: mul(g, sub(mul(mul(x, y), 2.0), 2.0 / math.sqrt(math.pi))),
    "log_ndtr": lambda g, x, y: mul(g, mul(exp(sub(mul(mul(x, x), -0.5), y)), 1.0 / math.sqrt(2.0 * math.pi))),
    "ndtri": lambda g, x, y: mul(g, mul(exp(mul(mul(y, y), 0.5)), math.sqrt(2.0 * math.pi))),
    "i0": lambda g, x, y: mul(g, i1(x)),
    "i0e": lambda g, x, y: mul(g, sub(i1e(x), mul(sign(x), y))),
    # torch's: the y / x terms' limit 0.5 where |x| <= eps (NaN too), the other branch at x = eps there (a tiny x's
    # 1 / x would overflow, and a NaN would be sent back through the branch that where does not take)
    "i1": lambda g, x, y: _near_zero(g, x, lambda x: sub(i0(x), div(y, x))),
    "i1e": lambda g, x, y: _near_zero(g, x, lambda x: sub(i0e(x), mul(y, add(sign(x), reciprocal(x))))),
    # sinc' at 0 as x sinc''(0) = -x pi^2 / 3: 0, with the slope of the limit (torch's second order is NaN there)
    "sinc": lambda g, x, y: mul(g, where(eq(x, 0.0), mul(x, -math.pi ** 2 / 3), div(sub(cos(mul(x, math.pi)), y),
                                                                                   _nonzero(x)))),
}


def _near_zero(g, x, slope):
    """g * slope(x) where |x| > float32's eps, else g * 0.5 (the Bessel function I1's slope at 0): torch's i1 and i1e
    gradients (their kernels' rule), slope evaluated at eps where x is tiny or NaN."""
    eps = torch.finfo(torch.float32).eps
    big = gt(abs(x), eps)
    return mul(g, where(big, slope(where(big, x, eps)), 0.5))


def _nonzero(x):
    """x with its zeros as 1 (their gradient 0): a divisor for where's branch that a zero does not take."""
    return where(eq(x, 0.0), 1.0, x)


def _elementwise(name, input, op, grad=()):
    """Record y = op(input) by the MATH rule grad (OP and operands; empty: a zero gradient).
    Integer and bool tensors: a copy for STEPS (bool ones raise), sign in their dtype, FLOAT_ONLY raise,
    float32 for the rest (torch's promotion); no gradient either way."""
    check_tensors(name, input=input)
    X = input.memory
    if X.dtype in _pw.INTEGERS and name != "sign":
        if name in FLOAT_ONLY or name in STEPS and X.dtype == torch.bool:
            raise not_implemented(name, X.dtype)
        if name in STEPS:
            return Tensor(X.clone())
        X = ints_as_float32(X)
    y = _pw.pointwise(op, X)
    if not grad:
        return record(name, y, (input,), lambda g: (torch.zeros_like(g),), graph=_zero_graph)
    args = [X if a == "x" else y if a == "y" else a for a in grad[1:]]
    graph = MATH_GRAPHS.get(name)
    rounded = ROUNDED_GRADS.get(name) if X.dtype in (torch.float16, torch.bfloat16) else None
    return record(name, y, (input,), lambda g: (rounded(g, *args) if rounded else _pw.pointwise(grad[0], g, *args),),
                  saved=[a for a in args if isinstance(a, torch.Tensor)],
                  graph=None if graph is None else lambda g, out: (graph(g, input, out),))


def _sinc_grad_rounded(g, X):
    """torch's sinc_backward of 16-bit x, its ops rounded each: g ((t cos t - sin t) / (x x pi)), t = x pi, 0 where
    x x pi is 0 (t past float16's range is inf, so NaN; near 0 the difference cancels to 0, where the kernel's
    series gives -pi^2 x / 3)."""
    t = _pw.pointwise("mul", X, math.pi)
    sq = _pw.pointwise("mul", _pw.pointwise("mul", X, X), math.pi)
    d = _pw.pointwise("sub", _pw.pointwise("mul", t, _pw.pointwise("cos", t)), _pw.pointwise("sin", t))
    return _pw.pointwise("where", _pw.pointwise("eq", sq, 0.0), 0.0, _pw.pointwise("mul", g, _pw.pointwise("div", d, sq)))


# torch's gradient formulas of 16-bit input as its separate ops, each rounded to the dtype, where a MATH kernel's
# single rounding differs: rule(g, *the MATH rule's operands)
ROUNDED_GRADS = {"sinc": _sinc_grad_rounded,
                 # g (1 + y y): y y past float16's range is inf, so -inf or inf (fuzz seed 560, case 892)
                 "tan": lambda g, y: _pw.pointwise("mul", g, _pw.pointwise("add", _pw.pointwise("mul", y, y), 1.0)),
                 "reciprocal": lambda g, y: _pw.pointwise("mul", _pw.pointwise("neg", g), _pw.pointwise("mul", y, y))}


def _math(name, text, op, *grad):
    def fn(input):
        return _elementwise(name, input, op, grad)
    fn.__name__, fn.__qualname__, fn.__doc__ = name, name, f"{text}, element-wise, as torch.{name}."
    return fn


(floor, ceil, trunc, sign, log1p, expm1, sin, cos, reciprocal, rsqrt, log2, log10, exp2, erf, frac, sinh, cosh, asin,
 acos, atan) = (_math(name, *spec) for name, spec in MATH.items())


def round(input, *, decimals=0):
    """x rounded to the nearest integer, ties to even, as torch.round; decimals != 0: to that many
    decimal places (negative: tens, hundreds...), as torch's: round(x * 10^d) / 10^d, or
    round(x / 10^-d) * 10^-d, in fp32. The gradient is 0."""
    check_args("round", "int", decimals=decimals)
    if decimals == 0:
        return _elementwise("round", input, "round")
    check_tensors("round", input=input)
    check(input.memory.is_floating_point(), "round: decimals is supported for floating-point tensors only")
    scale, there, back = (10.0 ** decimals, "mul", "div") if decimals > 0 else (10.0 ** -decimals, "div", "mul")
    r = _pw.pointwise("round", _pw.pointwise(there, input.memory, scale, dtype=torch.float32))
    y = _pw.pointwise(back, r, scale, dtype=input.dtype)
    return record("round", y, (input,), lambda g: (torch.zeros_like(g),), graph=_zero_graph)


def square(input):
    """x * x: integer tensors keep their dtype, as torch's (bool ones become int64)."""
    check_tensors("square", input=input)
    if input.dtype in _pw.INTEGERS:
        X = input.memory if input.dtype != torch.bool else copy_(torch.empty_like(input.memory, dtype=torch.int64), input.memory)
        return Tensor(_pw.pointwise("mul", X, X))
    return pow(input, 2)


# ---- more activations ---------------------------------------------------------------------------

def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """min(max(x, min_val), max_val), NaN kept; the gradient is 0 at and outside the bounds (torch's).
    Integer tensors keep their dtype, the bounds truncated to integers, as torch's. """ + INPLACE
    if inplace:
        return _written("hardtanh", input, min_val, max_val)
    check(min_val <= max_val, "min_val cannot be greater than max_val")
    check_tensors("hardtanh", input=input)
    if input.dtype in _pw.INTEGERS:
        check(input.dtype != torch.bool, "Bool inputs not supported for hardtanh")
        check(input.dtype != torch.uint8 or min_val >= 0, "cannot do hardtanh on an unsigned type with negative limits")
        return clamp(input, int(min_val), int(max_val))
    return _unary("hardtanh", input, "clamp", "hardtanh_backward", False, as_float_of(min_val, input.dtype),
                  as_float_of(max_val, input.dtype), graph=_hardtanh_graph)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    check_args("softplus", "float", beta=beta, threshold=threshold)
    return _unary("softplus", input, "softplus", "softplus_backward", False, float(beta), float(threshold),
                  graph=_softplus_graph)


def mish(input, inplace=False):
    """x tanh(softplus(x)). """ + INPLACE
    if inplace:
        return _written("mish", input)
    return _unary("mish", input, "mish", "mish_backward", False, graph=_mish_graph)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with torch's constants (alpha 1.6733, scale 1.0507). """ + INPLACE
    if inplace:
        return _written("selu", input)
    mark = tape_mark()  # torch's node: an elu's, which its selu runs
    return named("elu", mark, _unary("selu", input, "selu", "selu_backward", False, graph=_selu_graph))


def celu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x / alpha) - 1). """ + INPLACE
    check_type(isinstance(alpha, numbers.Real), lambda: f"celu(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    if inplace:
        return _written("celu", input, alpha)
    check(alpha != 0, "ZeroDivisionError in the celu: alpha cannot be 0")
    return _unary("celu", input, "elu", "elu_backward", False, float(alpha), 1.0 / alpha, graph=_elu_graph)


def logsigmoid(input):
    """log(sigmoid(x)), as min(x, 0) - log1p(exp(-|x|)) (no overflow)."""
    return _unary("logsigmoid", input, "logsigmoid", "logsigmoid_backward", False, graph=_logsigmoid_graph)


def softsign(input):
    """x / (1 + |x|)."""
    mark = tape_mark()  # torch's node: its composition's last op's, x / (1 + |x|)
    return named("div", mark, _unary("softsign", input, "softsign", "softsign_backward", False, graph=_softsign_graph))


def tanhshrink(input):
    """x - tanh(x); its node torch's composition's last op's (SubBackward0)."""
    mark = tape_mark()
    return named("sub", mark, _unary("tanhshrink", input, "tanhshrink", "tanhshrink_backward", False,
                                     graph=lambda g, x, y: g * tanh(x) * tanh(x)))  # tanh(x)^2 = 1 - tanh'(x)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value (NaN kept); the gradient is 0 where x <= threshold. """ + INPLACE
    check_args("threshold", "float", threshold=threshold, value=value)  # torch's parser's TypeError, first
    if inplace:
        return _written("threshold", input, threshold, value)
    check_tensors("threshold", input=input)
    if not input.is_floating_point():  # torch casts both numbers to the integer dtype first (0.1 to 0, 2.5 to 2)
        return where(le(input, as_int64(threshold)), as_int64(value), input)
    X = input.memory
    y = _pw.pointwise("threshold", X, float(threshold), as_float_of(value, X.dtype))  # the value only, as torch's
    return record("threshold", y, (input,), lambda g: (_pw.pointwise("threshold_backward", g, X, float(threshold)),),
                  saved=(X,))


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    check_type(isinstance(lambd, numbers.Real), lambda: f"hardshrink(): argument 'lambd' must be Number, not {type(lambd).__name__}")
    return _unary("hardshrink", input, "hardshrink", "shrink_backward", False, float(lambd))


def softshrink(input, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0 (NaN kept)."""
    check_type(isinstance(lambd, numbers.Real), lambda: f"softshrink(): argument 'lambd' must be Number, not {type(lambd).__name__}")
    check(lambd >= 0, lambda: f"softshrink: lambda must be in range [0, inf], but found {lambd}")
    return _unary("softshrink", input, "softshrink", "shrink_backward", False, float(lambd))


def glu(input, dim=-1):
    """a * sigmoid(b), a and b the halves of input along dim (floating-point, as torch's); b's gradient
    is (a s (1 - s)) g, s = sigmoid(b), a's product with s first as torch's: g a first overflowed for a
    huge a, and times s (1 - s) = 0 gave NaN."""
    check_tensors("glu", input=input)
    check(input.ndim > 0, "glu does not support scalars because halving size must be even")
    d = dim_index(dim, input.ndim)
    check(input.shape[d] % 2 == 0,
          lambda: f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    if input.dtype in _pw.INTEGERS:
        raise not_implemented("glu_cpu", input.dtype)
    a, b = input.chunk(2, d)
    with no_grad():
        s = sigmoid(b)
        y = mul(a, s)
    A, S = a.memory, s.memory
    need_a, need_b = needs_grad(a, b)

    def graph(g, out):  # the same products on the tape, sigmoid(b) taken once
        sb = sigmoid(b)
        return g * sb, a * sb * (1.0 - sb) * g
    return _record2("glu", y.memory, a, b,
                    lambda g: (_pw.pointwise("mul", g, S) if need_a else None,
                               _pw.pointwise("mul", _pw.pointwise("sigmoid_backward", A, S), g) if need_b else None),
                    saved=(S, A if need_b else None), graph=graph)


# ---- tensor math: lerp, addcmul, addcdiv, masked_fill, tril, triu -------------------------------

def _same_dtype(name, input, **others):
    for arg, v in others.items():
        check(not isinstance(v, Tensor) or v.dtype == input.dtype,
              lambda: f"{name}: expected dtype {input.dtype} for `{arg}` but got dtype {v.dtype}")


def lerp(input, end, weight):
    """input + weight * (end - input), broadcasting; weight a number or a tensor (of input's dtype,
    as end, unless 0-d; three 0-d tensors promote together), computed from the nearer end as torch's."""
    check_tensors("lerp", input=input, end=end)
    check_type(isinstance(weight, (Tensor, numbers.Real)),
          lambda: f"lerp: weight must be a tnet.Tensor or a Python number, got {type(weight).__name__}")
    # torch's gradients g (1 - w), g w and g (end - input) read the operands as given, each op's result in its dtype:
    # a 0-d bf16 weight's 1 - w rounds to bf16, float16 end - input to float16
    W0 = weight.memory if isinstance(weight, Tensor) and weight.is_floating_point() else None
    S0, E0 = input.memory, end.memory
    if isinstance(weight, Tensor) and weight.ndim == 0 and weight.dtype != input.dtype:
        if input.ndim == end.ndim == 0 and end.dtype == input.dtype and weight.is_floating_point():
            dtype = _pw.result_type([input.memory, weight.memory])  # all 0-d: promoted together, as torch's
            input, end = input.to(dtype), end.to(dtype)
        weight = weight.to(input.dtype)  # torch takes a 0-d weight of any dtype, as a number
    _same_dtype("lerp", input, end=end, weight=weight)
    S, E = input.memory, end.memory
    W = weight.memory if isinstance(weight, Tensor) else float(weight)
    Wg = W if W0 is None else W0
    need_s, need_e, need_w = needs_grad(input, end, weight)
    # torch's overloads: LerpBackward0 of a number weight, LerpBackward1 of a tensor one
    name = "lerp_tensor" if isinstance(weight, Tensor) else "lerp"
    return _record_each(name, _pw.pointwise("lerp", S, E, W), (input, end, weight),
                        lambda g: (_pw.pointwise("mul", g, _rsub_one(Wg)) if need_s else None,  # torch's g (1 - w): inf g, inf
                                   _pw.pointwise("mul", g, Wg) if need_e else None,
                                   _pw.pointwise("mul", g, _pw.pointwise("sub", E0, S0)) if need_w else None),
                        saved=(S0 if need_w else None, E0 if need_w else None, Wg),
                        graph=lambda g, y: (g * (1.0 - weight), g * weight, g * (end - input) if need_w else None))


def _rsub_one(w):
    """1 - w for a kernel operand w (a torch tensor or a number)."""
    return _pw.pointwise("sub", 1.0, w) if isinstance(w, torch.Tensor) else 1.0 - w


def _addc(name, input, tensor1, tensor2, value, grads):
    """input + value * tensor1 * tensor2 (or / tensor2); grads(g, A, B, v, need_a, need_b): tensor1's and
    tensor2's gradients (None where not needed)."""
    check_tensors(name, input=input, tensor1=tensor1, tensor2=tensor2)
    check_type(isinstance(value, numbers.Real), lambda: f"{name}: value must be a Python number, got {type(value).__name__}")
    check(name != "addcdiv" or not (_is_integer(tensor1) and _is_integer(tensor2)),
          "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true "
          "division of tensor1 and tensor2.")
    # the gradients read the factors as given: torch's formulas multiply an integer operand by value in its own
    # dtype (a uint8 t2 * -2 wraps, derivatives.yaml's on every device), the forward computes in floats; addcdiv's
    # divisor is the float one (a true division)
    t1, t2 = tensor1, tensor2
    if not all(_is_integer(val) for val in (input, tensor1, tensor2)):  # integers beside floats: floats, as torch's
        input, tensor1, tensor2 = _ints_to_float(input, tensor1, tensor2)
    if name == "addcdiv":
        t2 = tensor2
    X, A, B = input.memory, t1.memory, t2.memory
    v = value if isinstance(value, numbers.Integral) else float(value)
    need_x, need_a, need_b = needs_grad(input, tensor1, tensor2)
    return _record_each(name, _pw.pointwise(name, X, tensor1.memory, tensor2.memory, float(value)), (input, tensor1, tensor2),
                        lambda g: (g.view(g.shape) if need_x else None, *grads(g, A, B, v, need_a, need_b)),
                        saved=(A if need_b else None, B if need_a or need_b else None),
                        graph=lambda g, y: (g, g * (t2 * v), g * (t1 * v)) if name == "addcmul" else
                        (g, g * (v / t2), -g * (t1 * v / (t2 * t2))))


def _addcmul_grads(g, A, B, v, need_a, need_b):
    """torch's formulas, each product rounded to its operands' dtype (a 16-bit t2 * value overflows there):
    g * (t2 * value), g * (t1 * value)."""
    P = _pw.pointwise
    return P("mul", g, P("mul", B, v)) if need_a else None, P("mul", g, P("mul", A, v)) if need_b else None


def _addcdiv_grads(g, A, B, v, need_a, need_b):
    """torch's formulas, rounded as _addcmul_grads: g * (value / t2), -g * (value * t1 / (t2 * t2))."""
    P = _pw.pointwise
    if need_b:
        AV = P("mul", A, v)
        AV = AV if AV.is_floating_point() else AV.to(B.dtype)  # an integer t1 * value, then divided in B's dtype
    return (P("mul", g, P("div", v, B)) if need_a else None,
            P("mul", P("neg", g), P("div", AV, P("mul", B, B))) if need_b else None)


def addcmul(input, tensor1, tensor2, *deprecated, value=1):
    """input + value * tensor1 * tensor2, broadcasting; also torch's deprecated addcmul(input, value,
    tensor1, tensor2) (scale_first)."""
    if deprecated:
        value, (tensor1, tensor2) = scale_first("addcmul", (tensor1, tensor2, *deprecated), 2)
    return _addc("addcmul", input, tensor1, tensor2, value, _addcmul_grads)


def addcdiv(input, tensor1, tensor2, *deprecated, value=1):
    """input + value * tensor1 / tensor2, broadcasting (floating-point tensors only); also torch's
    deprecated addcdiv(input, value, tensor1, tensor2) (scale_first)."""
    if deprecated:
        value, (tensor1, tensor2) = scale_first("addcdiv", (tensor1, tensor2, *deprecated), 2)
    return _addc("addcdiv", input, tensor1, tensor2, value, _addcdiv_grads)


def masked_fill(input, mask, value):
    """input with value where mask (a bool tensor, broadcasting) is True; value a number or a 0-d
    tensor (which gets the gradient of the filled elements), cast to input's dtype as torch's."""
    check_tensors("masked_fill", input=input)
    check(isinstance(mask, Tensor) and mask.dtype == torch.bool,
          lambda: f"masked_fill only supports boolean masks, but got mask with dtype {getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        check(value.ndim == 0, lambda: f"masked_fill only supports a 0-dimensional value tensor, but got tensor with "
                                       f"{value.ndim} dimension(s).")
        value = value.to(input.dtype)
    else:
        check_type(isinstance(value, numbers.Real),
              lambda: f"masked_fill: value must be a number or a 0-d tnet.Tensor, got {type(value).__name__}")
        value = as_value_of(value, input.dtype)
    # torch's nodes: MaskedFillBackward0 of a number value; MaskedFillBackward1 of a tensor one, edges (input, value)
    return _selected("masked_fill_tensor" if isinstance(value, Tensor) else "masked_fill", mask, value, input,
                     swapped=True)


@functools.lru_cache(maxsize=64)
def _triangle(rows, cols, diagonal, upper, device):
    """A bool [rows, cols] device tensor, True on the triangle that tril (upper: triu) keeps; made on
    the host (numpy) once per shape."""
    keep = ~np.tri(rows, cols, diagonal - 1, dtype=bool) if upper else np.tri(rows, cols, diagonal, dtype=bool)
    return torch.from_numpy(keep).to(device)


def _triangular(name, input, diagonal, upper):
    check_tensors(name, input=input)
    check(input.ndim >= 2, lambda: f"{name}: input tensor must have at least 2 dimensions")
    keep = _triangle(*input.shape[-2:], int(diagonal), upper, input.device)
    mark = tape_mark()
    return named(name, mark, where(Tensor(keep), input, False if input.dtype == torch.bool else 0))  # bool stays bool


def tril(input, diagonal=0):
    """input's lower triangle over its last two dims, on and below diagonal `diagonal`; 0 elsewhere."""
    check_args("tril", "int", diagonal=diagonal)
    return _triangular("tril", input, diagonal, False)


def triu(input, diagonal=0):
    """input's upper triangle over its last two dims, on and above diagonal `diagonal`; 0 elsewhere."""
    check_args("triu", "int", diagonal=diagonal)
    return _triangular("triu", input, diagonal, True)


# ---- division's remainders and quotients, two-operand functions, NaN and infinity handling ------

def _binary(name, input, other, op, grads=None, graph=None, saves_output=False):
    """Record y = op(input, other) elementwise, broadcasting (a number on either side); grads(g, a,
    b, y) gives both operands' gradients (None: not needed); grads None: a zero gradient, as torch's
    for step functions. graph(g, input, other, y): grads' twin on tnet Tensors (record's graph=).
    The backward saves the operands, and y only where saves_output (grads or graph read it: hypot's
    g x / y), as torch's, so that a script may write y in place (`torch.min(a, b).clamp_(min=0)`). Integer operands compute in int64 where op takes them (fmod, remainder,
    floor_divide), without gradient; the float-only ops take integer and bool tensors as floats, of
    the dtype torch's promotion gives (_ints_to_float), unless both are integers (NO_INTEGERS: torch's
    NotImplementedError)."""
    if name in NO_INTEGERS and _integer_tensors(input, other):
        raise_no_integers(name, input, other)
    if name in NO_BOOLS and _all_bool(input, other):
        raise not_implemented(name, torch.bool)
    if op not in _pw.INTEGER_OPS or not (_is_integer(input) and _is_integer(other)):
        input, other = _ints_to_float(input, other)
    a, b = _rounded_numbers(*_rounded_0d(*_operands(name, input, other)))
    if name in ("fmod", "remainder", "floor_divide"):
        _check_int_divisor(a, b)
    y = _pw.pointwise(op, a, b)
    if not y.is_floating_point():
        return Tensor(y)
    if grads is None:
        return _record2(name, y, input, other, lambda g: (torch.zeros_like(g), torch.zeros_like(g)))
    need = needs_grad(input, other)
    return _record2(name, y, input, other,
                    lambda g: tuple(v if n else None for v, n in zip(grads(g, a, b, y, need), need)),
                    saved=[v for v in (a, b, y if saves_output else None) if isinstance(v, torch.Tensor)],
                    graph=None if graph is None else lambda g, out: graph(g, input, other, out))


# float kernels only: two integer tensors raise (a number beside one, tnet's addition: computed as floats)
NO_INTEGERS = ("hypot", "logaddexp", "logaddexp2", "nextafter", "igamma", "igammac")


def _integer_tensors(*values):
    return all(isinstance(v, Tensor) and v.dtype in _pw.INTEGERS for v in values)
NO_BOOLS = ("fmod", "remainder", "floor_divide")  # no bool kernel: two bool operands raise (a bool and an int: int64)


def _all_bool(*values):
    """Whether every value is a bool tensor or a Python bool."""
    return all(isinstance(v, bool) or isinstance(v, Tensor) and v.dtype == torch.bool for v in values)


def raise_no_integers(name, *values):
    """torch's NotImplementedError for NO_INTEGERS' integer operands, named by their dtype (a bool one
    beside an integer one: the integer's)."""
    dtypes = [v.dtype for v in values if isinstance(v, Tensor)]
    raise not_implemented(name, next((d for d in dtypes if d != torch.bool), dtypes[0] if dtypes else torch.int64))


def _check_int_divisor(a, b):
    """torch's RuntimeError (on the CPU; CUDA's gives garbage) for an integer division by 0: a number b at
    once; an integer tensor b's zeros counted on its device and raised as kernels.copy.check_count raises (on
    the CPU at once, on a GPU at a later flagging call or host read, without a synchronisation; not inside a
    CUDA graph capture)."""
    if not (_pw._is_int(a) and _pw._is_int(b)) or isinstance(b, torch.Tensor) and capturing(b):
        return
    if any(isinstance(v, torch.Tensor) and v.numel() == 0 for v in (a, b)):  # no element is divided
        return
    if not isinstance(b, torch.Tensor):
        check(b != 0, "ZeroDivisionError")
        return
    raise_flagged(b.device)
    check_count(_reduce.reduce(_pw.pointwise("eq", b, 0).reshape(-1), [0]), lambda: InputError("ZeroDivisionError"))


def fmod(input, other):
    """C's fmod: the remainder of input / other truncated toward 0, with input's sign (integers:
    C's %; integer division by 0 raises RuntimeError, as torch's on the CPU). other's gradient is
    -g * trunc(input / other)."""
    mark = tape_mark()  # torch's node by overload: FmodBackward0 by a number, FmodBackward1 by a tensor
    return named(_overload("fmod", input, other), mark, _quotient_remainder("fmod", input, other))


def remainder(input, other):
    """Python's %: input - floor(input / other) * other, with other's sign (the % operator), as
    torch.remainder; integer division by 0 raises RuntimeError, as torch's on the CPU). other's gradient is
    -g * floor_divide(input, other)."""
    mark = tape_mark()
    return named(_overload("remainder", input, other), mark, _quotient_remainder("remainder", input, other))


def _overload(name, input, other):
    """The label of the overload that torch's two-operand op name runs, for its node (tensor.py's table): name
    for (Tensor, number), name_tensors for two tensors, name_number_input for (number, Tensor)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return f"{name}_tensors"
    return name if isinstance(input, Tensor) else f"{name}_number_input"


def _quotient_remainder(name, input, other):
    """fmod or remainder (name): input - q * other for the quotient q rounded toward 0 (fmod) or down
    (remainder); the gradients g and -g q, q a step function of the operands (a constant on the tape)."""
    def quotient(a, b):  # of torch tensors or numbers
        return _pw.pointwise("trunc", _pw.pointwise("div", a, b)) if name == "fmod" else _pw.pointwise("floor_divide", a, b)
    memory = lambda v: v.memory if isinstance(v, Tensor) else v
    return _binary(name, input, other, name, lambda g, a, b, y, need: (
        g.view(g.shape), need[1] and _pw.pointwise("muldiv", g, quotient(a, b), -1.0)),
        graph=lambda g, a, b, y: (g, -(g * Tensor(quotient(memory(a), memory(b))))))


def floor_divide(input, other):
    """floor(input / other) (the // operator), as torch.floor_divide and div(rounding_mode="floor");
    the gradient is 0. Integer division by 0 raises RuntimeError, as torch's on the CPU (a host read
    of the divisor's zeros)."""
    return _binary("floor_divide", input, other, "floor_divide")


def true_divide(input, other):
    """input / other: div."""
    return div(input, other)


def _op_by_op(input, other, integers=False):
    """The memories of the tensors input and other as given, where torch's gradient formula, run as its separate ops
    each of whose results takes its operands' dtype, differs from a fused kernel's single fp32 rounding: beside a
    16-bit operand (or an integer one, with integers); else None (a number, or fp32 only)."""
    given = [v.memory for v in (input, other) if isinstance(v, Tensor)]
    if len(given) == 2 and any(v.dtype in (torch.float16, torch.bfloat16) or integers and not v.is_floating_point()
                               for v in given):
        return given
    return None


def _tensors_only(name, input, other):
    """torch's argument parser for the binary ops that have no number overload (atan2, hypot, logaddexp,
    logaddexp2): TypeError for a number on either side."""
    for arg, position, v in (("input", 1, input), ("other", 2, other)):
        if not isinstance(v, Tensor):
            raise InputTypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {type(v).__name__}")


def atan2(input, other):
    """The angle of the point (other, input) in [-pi, pi], as torch.atan2 (arctan2); the gradients are torch's
    (g b, -g a) / (a^2 + b^2), 0 where a^2 + b^2 is 0."""
    _tensors_only("atan2", input, other)
    def grads(g, a, b, y, need):
        given = _op_by_op(input, other, integers=True)
        if given:  # b * b of bf16 b rounds to bf16 beside fp32 a (and a 0-d bf16 b's beside float16 a), of uint8 b
            a, b = given  # wraps in uint8
            r = _pw.pointwise("add", _pw.pointwise("mul", a, a), _pw.pointwise("mul", b, b))
            r = _pw.pointwise("where", _pw.pointwise("eq", r, 0.0), 0.0, _pw.pointwise("reciprocal", r))
            return (need[0] and _pw.pointwise("mul", _pw.pointwise("mul", g, b), r),
                    need[1] and _pw.pointwise("mul", _pw.pointwise("mul", g, neg(Tensor(a)).memory), r))  # bool a raises
        return (need[0] and _pw.pointwise("atan2_backward", g, b, a, 1.0),
                need[1] and _pw.pointwise("atan2_backward", g, a, b, -1.0))
    return _binary("atan2", input, other, "atan2", grads, graph=_atan2_graph)


def hypot(input, other):
    """sqrt(input^2 + other^2) without overflow of the squares; the gradients are g * x / y (NaN at
    y = 0), as torch's."""
    _tensors_only("hypot", input, other)
    def grad(g, x, y):
        if y.dtype in (torch.float16, torch.bfloat16):  # torch's g x rounds to y's dtype before / y (an inf past 65504)
            return _pw.pointwise("div", _pw.pointwise("mul", g, x), y)
        return _pw.pointwise("muldiv", g, x, y)
    return _binary("hypot", input, other, "hypot", lambda g, a, b, y, need: (
        need[0] and grad(g, a, y), need[1] and grad(g, b, y)),
        graph=lambda g, a, b, y: (g * a / y, g * b / y), saves_output=True)


def _logaddexp_grads(power, fused):
    """logaddexp's and logaddexp2's gradients, torch's g / (1 + power(b - a)) for a (swapped for b): op by op beside
    a 16-bit operand (bf16 a beside a 0-d fp32 b: b - a, its power and 1 + it round to bf16), else the fused kernel."""
    def grads(input, other):
        def run(g, a, b, y, need):
            given = _op_by_op(input, other)
            if not given:
                return need[0] and _pw.pointwise(fused, g, a, b), need[1] and _pw.pointwise(fused, g, b, a)
            a, b = given
            return tuple(n and _pw.pointwise("div", g, _pw.pointwise("add", _pw.pointwise(power, _pw.pointwise("sub", v, u)),
                                                                     1.0)) for n, u, v in ((need[0], a, b), (need[1], b, a)))
        return run
    return grads


def logaddexp(input, other):
    """log(exp(input) + exp(other)), without overflow, as torch.logaddexp."""
    _tensors_only("logaddexp", input, other)
    return _binary("logaddexp", input, other, "logaddexp", _logaddexp_grads("exp", "logaddexp_backward")(input, other),
        graph=lambda g, a, b, y: (g * exp(a - y) if isinstance(a, Tensor) else None,
                                  g * exp(b - y) if isinstance(b, Tensor) else None), saves_output=True)


def _atan2_graph(g, a, b, y):  # (g b, -g a) / (a^2 + b^2), 0 where a^2 + b^2 is 0, as atan2_backward
    r = a * a + b * b
    recip = where(eq(r, 0.0), 0.0, reciprocal(r))
    return g * b * recip, -(g * a) * recip


def _xlogy_graph(g, a, b, y):  # g log(b) (0 where a is 0 and b <= 0, as torch's; a number b: not > 0), g a / b
    ga = None
    if isinstance(a, Tensor):
        ga = xlogy(g, b)
        if isinstance(b, Tensor):
            ga = where(logical_and(eq(a, 0.0), le(b, 0.0)), 0.0, ga)
        elif not b > 0:
            ga = where(eq(a, 0.0), 0.0, ga)
    return ga, g * a / b if isinstance(b, Tensor) else None


def xlogy(input, other):
    """input * log(other), 0 where input is 0 (NaN where other is NaN), as torch.xlogy; other's gradient is torch's
    g * input / other, op by op beside a 16-bit operand (g * input rounds first). input's gradient g log(other) is 0
    where input is 0 and other <= 0, and beside a number other that is not > 0 (NaN too: torch's Scalar_Other rule)."""
    def grads(g, a, b, y, need):
        given = _op_by_op(input, other)
        gb = need[1] and (_pw.pointwise("div", _pw.pointwise("mul", g, given[0]), given[1]) if given
                          else _pw.pointwise("muldiv", g, a, b))
        ga = need[0] and _pw.pointwise("xlogy_backward", g, a, b)
        if need[0] and isinstance(other, numbers.Real) and math.isnan(other):  # the kernel's NaN, 0 where input is 0
            ga = _pw.pointwise("where", _pw.pointwise("eq", a, 0.0), 0.0, ga)
        return ga, gb
    mark = tape_mark()
    return named(_overload("xlogy", input, other), mark, _binary("xlogy", input, other, "xlogy", grads,
                                                                 graph=_xlogy_graph))


def _incomplete_gamma(name, sign):
    """torch's igamma (sign 1) or igammac (sign -1): see their docstrings."""
    refused = f"the derivative for '{name}: input' is not implemented."

    def graph(g, a, x, y):  # igamma_backward's formula on tnet Tensors
        if a.requires_grad:
            raise NotImplementedError(refused)
        return None, g * (sign * exp((a - 1.0) * log(x) - x - lgamma(a)))

    def grads(g, a, x, y, need):
        if need[0]:
            raise NotImplementedError(refused)
        return None, _pw.pointwise("igamma_backward", g, a, x, sign)

    def fn(input, other):
        check_tensors(name, input=input, other=other)
        return _binary(name, input, other, name, grads, graph=graph)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{'P' if sign > 0 else 'Q'}(a, x), the regularized {'lower' if sign > 0 else 'upper'} incomplete gamma
    function of a = input and x = other{'' if sign > 0 else ' (1 - P)'}, element-wise over broadcast tensors, as
    torch.{name} (torch.special.{'gammainc' if sign > 0 else 'gammaincc'}): in fp32 by torch's methods and with its
    values at the edges (kernels/pointwise.py's _igamma); a Python number, or two integer tensors, raise as
    torch's. x's gradient is {'' if sign > 0 else '-'}g x^(a - 1) e^-x / Gamma(a), torch's formula; a's raises
    NotImplementedError in backward, as torch's."""
    return fn


igamma, igammac = _incomplete_gamma("igamma", 1.0), _incomplete_gamma("igammac", -1.0)


def logit(input, eps=None):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] first where eps is given, as torch.logit; the
    gradient is 0 outside those bounds (without eps: NaN outside [0, 1])."""
    if eps is not None:
        check_args("logit", "float", eps=eps)
    check_tensors("logit", input=input)
    X = ints_as_float32(input.memory)  # integers in float32, as torch's
    lo, hi = (-1.0, 2.0) if eps is None else (float(eps), 1.0 - float(eps))
    if eps is None:
        y = _pw.pointwise("logit", X)
    elif lo <= hi:
        y = _pw.pointwise("logit", _pw.pointwise("clamp", X, lo, hi))
    else:  # eps past 0.5: torch's x < eps ? eps : x > 1 - eps ? 1 - eps : x, where clamp would give 1 - eps throughout
        P = _pw.pointwise
        y = P("logit", P("where", P("lt", X, lo), lo, P("where", P("gt", X, hi), hi, X)))
    backward = lambda g: (_pw.pointwise("logit_backward", g, X, lo, hi),)

    def graph(g, out):  # g / (x (1 - x)), 0 outside [eps, 1 - eps] where eps is given
        if eps is None:
            return (g / (input * (1.0 - input)),)
        x = clamp(input, lo, hi)  # the unused branch stays finite: 0 * inf would be NaN
        return (where(logical_and(ge(input, lo), le(input, hi)), g / (x * (1.0 - x)), 0.0),)
    return record("logit", y, (input,), backward, saved=(X,), graph=graph)


def isfinite(input):
    """A bool tensor, True where input is neither NaN nor infinite (always for integers)."""
    check_tensors("isfinite", input=input)
    if not input.memory.is_floating_point():
        return eq(input, input)
    return lt(abs(input), math.inf)


def signbit(input):
    """A bool tensor, True where input's sign bit is set (-0.0 and a negative NaN too), as torch's."""
    check_tensors("signbit", input=input)
    return Tensor(_pw.pointwise("signbit", input.memory))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """input with NaN replaced by nan, +inf by posinf and -inf by neginf (None: the dtype's
    largest and lowest finite values; nan None: 0), as torch's; the gradient passes where input is finite."""
    check_tensors("nan_to_num", input=input)
    for arg, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        check_type(v is None or isinstance(v, numbers.Real) or isinstance(v, Tensor) and v.ndim == 0,
                   lambda: f"nan_to_num(): argument '{arg}' must be float, not {type(v).__name__}")
    nan = 0.0 if nan is None else nan
    if not input.memory.is_floating_point():
        return input.clone()
    info = torch.finfo(input.dtype)
    posinf, neginf = info.max if posinf is None else posinf, info.min if neginf is None else neginf
    mark = tape_mark()  # torch's node: its one op's
    y = where(eq(input, math.inf), float(posinf), where(eq(input, -math.inf), float(neginf), input))
    return named("nan_to_num", mark, where(isnan(input), float(nan), y))


def fmax(input, other):
    """The larger of each pair (broadcast), NaN only where both are: a NaN loses, as torch.fmax; the
    gradient goes to input where input >= other (or other is NaN), else to other."""
    check_tensors("fmax", input=input, other=other)
    mark = tape_mark()  # torch's node: its one op's
    return named("fmax", mark, where(logical_or(ge(input, other), isnan(other)), input, other))


def fmin(input, other):
    """The smaller of each pair (broadcast), NaN only where both are, as torch.fmin (see fmax)."""
    check_tensors("fmin", input=input, other=other)
    mark = tape_mark()
    return named("fmin", mark, where(logical_or(le(input, other), isnan(other)), input, other))


# ---- more of torch's element-wise functions, and its aliases (the eighth session) ---------------

MORE_MATH = {
    "tan": ("tan(x)", "tan", "tan_backward", "y"),
    "acosh": ("acosh(x), NaN below 1", "acosh", "acosh_backward", "x"),
    "asinh": ("asinh(x)", "asinh", "asinh_backward", "x"),
    "atanh": ("atanh(x), NaN outside [-1, 1]", "atanh", "atanh_backward", "x"),
    "erfc": ("1 - erf(x), accurate in the tail (relative error near 1e-7)", "erfc", "erfc_backward", "x"),
    "erfinv": ("the inverse of erf, +-inf at +-1, NaN outside [-1, 1]", "erfinv", "erfinv_backward", "y"),
    "lgamma": ("log|Gamma(x)|, inf at 0 and the negative integers (absolute error near 1e-7 at its roots)",
               "lgamma", "lgamma_backward", "x"),
    "digamma": ("Gamma'(x) / Gamma(x), -inf at +0, +inf at -0, NaN at the negative integers (absolute error "
                "near 1e-6 at its roots); its gradient, trigamma, is inf at the negative integers, where "
                "torch's gives large finite values", "digamma", "digamma_backward", "x"),
    "sinc": ("sin(pi x) / (pi x), 1 at 0", "sinc", "sinc_backward", "x"),
}
MATH.update(MORE_MATH)
tan, acosh, asinh, atanh, erfc, erfinv, lgamma, digamma, sinc = (_math(name, *spec) for name, spec in MORE_MATH.items())

SPECIAL_MATH = {  # torch.special's (i0 also torch's and Tensor's); gradients by their kernels' backward OPs
    "erfcx": ("exp(x^2) erfc(x), no overflow above 0 (inf below about -9.4)", "erfcx", "erfcx_backward", "x"),
    "log_ndtr": ("log of the standard normal CDF, accurate in both tails", "log_ndtr", "log_ndtr_backward", "x"),
    "ndtri": ("the standard normal quantile (Acklam's approximation and a Halley step), -inf at 0, inf at 1, "
              "NaN outside [0, 1]", "ndtri", "ndtri_backward", "y"),
    "i0": ("the modified Bessel function I0 (relative error near 1e-6)", "i0", "i0_backward", "x"),
    "i0e": ("exp(-|x|) I0(x)", "i0e", "i0e_backward", "x"),
    "i1": ("the modified Bessel function I1", "i1", "i1_backward", "x"),
    "i1e": ("exp(-|x|) I1(x)", "i1e", "i1e_backward", "x"),
}
MATH.update(SPECIAL_MATH)
erfcx, log_ndtr, ndtri, i0, i0e, i1, i1e = (_math(name, *spec) for name, spec in SPECIAL_MATH.items())
arccos, arcsin, arctan, arctan2, arccosh, arcsinh, arctanh = acos, asin, atan, atan2, acosh, asinh, atanh
fix, negative, absolute = trunc, neg, abs


def sgn(input):
    """sign for real tensors (tnet has no complex ones), its node torch's SgnBackward0."""
    mark = tape_mark()
    return named("sgn", mark, sign(input))
multiply, subtract, greater, greater_equal, less, less_equal, not_equal = mul, sub, gt, ge, lt, le, ne


def divide(input, other, *, rounding_mode=None):
    """div: input / other, or rounded toward 0 ('trunc') or down ('floor')."""
    return div(input, other, rounding_mode=rounding_mode)


def rsub(input, other, *, alpha=1):
    """other - alpha * input (torch.rsub: sub with its operands swapped; Tensor.__rsub__, `1 - x`); its node
    torch's RsubBackward0, or RsubBackward1 where other is a number."""
    mark = tape_mark()
    return named("rsub" if isinstance(other, Tensor) else "rsub_number", mark, sub(other, input, alpha=alpha))


def positive(input):
    """input itself, as torch's (bool tensors raise)."""
    check_tensors("positive", input=input)
    check(input.dtype != torch.bool, "The `+` operator, on a bool tensor is not supported.")
    return input


def _floats(*values):
    """values with integer and bool tnet tensors as float32 copies: the functions that torch computes
    in floats for them (deg2rad, ldexp, float_power)."""
    return [Tensor(ints_as_float32(v.memory)) if isinstance(v, Tensor) and v.dtype in _pw.INTEGERS else v for v in values]


def deg2rad(input):
    """x * pi / 180 (integer and bool tensors give float32, as torch's)."""
    check_tensors("deg2rad", input=input)
    mark = tape_mark()
    return named("deg2rad", mark, mul(*_floats(input), math.pi / 180.0))


def rad2deg(input):
    """x * 180 / pi (integer and bool tensors give float32, as torch's)."""
    check_tensors("rad2deg", input=input)
    mark = tape_mark()
    return named("rad2deg", mark, mul(*_floats(input), 180.0 / math.pi))


def copysign(input, other):
    """|input| with other's sign (its sign bit: -0.0 counts as negative), as torch.copysign; integers
    give float32. input's gradient is g * (y / x), its factor 0 where x is 0; other's is 0, as torch's."""
    mark = tape_mark()
    return named(_overload("copysign", input, other), mark, _copysign(input, other))


def _copysign(input, other):
    return _binary("copysign", input, other, "copysign", lambda g, a, b, y, need: (
        need[0] and _pw.pointwise("mul", g, _pw.pointwise("std_backward", 1.0, a, y)),  # torch's g where(x == 0, 0, y / x)
        need[1] and torch.zeros_like(g)), saves_output=True,
        graph=lambda g, a, b, y: (g * Tensor(_pw.pointwise("std_backward", 1.0, a.memory, y.memory)), g * 0.0))


def heaviside(input, values):
    """values where input is 0, else 0 (input < 0 or NaN) or 1, as torch.heaviside: two tensors of one
    dtype (integers too). torch's has no gradient (its backward raises); tnet's is 0."""
    check_tensors("heaviside", input=input, values=values)
    check(input.dtype == values.dtype, "heaviside is not yet implemented for tensors with different dtypes.")
    return _binary("heaviside", input, values, "heaviside")


def logaddexp2(input, other):
    """log2(2^input + 2^other), without overflow, as torch.logaddexp2."""
    _tensors_only("logaddexp2", input, other)
    return _binary("logaddexp2", input, other, "logaddexp2",
                   _logaddexp_grads("exp2", "logaddexp2_backward")(input, other))


def _integers_only(name, *values):
    """values (tensors, or an int: tnet's addition) with a bool tensor beside an integer one promoted
    to its dtype, as torch's; a float or bool number raises torch's TypeError (an int too beside a tensor
    of another dtype: torch's parser refuses any number before the dtype's check), other dtypes its
    NotImplementedError."""
    ints = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
    integers = all(v.dtype in ints for v in values if isinstance(v, Tensor))
    for k, v in enumerate(values):
        check_type(isinstance(v, Tensor) or isinstance(v, numbers.Integral) and not isinstance(v, bool) and integers,
                   lambda: f"{name}(): argument '{('input', 'other')[k]}' (position {k + 1}) must be Tensor, "
                           f"not {type(v).__name__}")
    tensors = [v for v in values if isinstance(v, Tensor)]
    if len({v.dtype == torch.bool for v in tensors}) == 2:
        integer = next(v.dtype for v in tensors if v.dtype != torch.bool)
        values = tuple(v.to(integer) if isinstance(v, Tensor) and v.dtype == torch.bool else v for v in values)
    for v in values:
        if isinstance(v, Tensor) and v.dtype not in ints:
            raise not_implemented(name, v.dtype)
    return values


def gcd(input, other):
    """The greatest common divisor of |input| and |other| (int64 or int32 tensors, a bool one beside
    them, or an int), 0 for two zeros, as torch.gcd."""
    input, other = _integers_only("gcd", input, other)
    return _binary("gcd", input, other, "gcd")


def lcm(input, other):
    """The least common multiple of |input| and |other| (integers), 0 where either is, as torch.lcm."""
    input, other = _integers_only("lcm", input, other)
    return _binary("lcm", input, other, "lcm")


def _exp2_number(v):
    """2 ** v for a Python number, inf past float's range (Python's power raises OverflowError), as exp2 of a tensor."""
    try:
        return 2.0 ** v
    except OverflowError:
        return math.inf


def ldexp(input, other):
    """input * 2 ** other, as torch.ldexp's: for an integer tensor other exactly, in input's dtype;
    for a float one, input * exp2(other) (overflowing where that power does, as torch's); other may
    be a number; an integer input gives float32. Gradients as of that product: input's is g 2^other
    (torch's is 0 where an integer other is negative: it takes 2^other in integers)."""
    input, = _floats(input)
    if isinstance(other, Tensor) and other.dtype in _pw.INTEGERS:
        check_tensors("ldexp", input=input)
        X, E = input.memory, ints_as_float32(other.memory)
        y = _pw.pointwise("ldexp_int", X, E, dtype=X.dtype)
        return _record2("ldexp", y, input, other, lambda g: (_pw.pointwise("ldexp_int", g, E, dtype=g.dtype), None),
                        saved=(E,))
    mark = tape_mark()  # torch's node: its one op's (LdexpBackward0)
    return named("ldexp", mark, mul(input, exp2(other) if isinstance(other, Tensor) else _exp2_number(other)))


def float_power(input, exponent):
    """input ** exponent. Unlike torch's, in float32, not float64 (tnet has no float64 kernels):
    integer, bool and 16-bit tensors become float32 first (a recorded cast: a 16-bit leaf gets its
    gradient), and the result is float32."""
    input, exponent = (v.to(torch.float32) if isinstance(v, Tensor) and v.dtype != torch.float32 else
                       float(v) if isinstance(v, numbers.Real) else v for v in (input, exponent))
    return pow(input, exponent)


def isposinf(input):
    """A bool tensor, True where input is +inf."""
    check_tensors("isposinf", input=input)
    return eq(input, math.inf)


def isneginf(input):
    """A bool tensor, True where input is -inf."""
    check_tensors("isneginf", input=input)
    return eq(input, -math.inf)


def isreal(input):
    """A bool tensor of True: tnet's tensors are real."""
    check_tensors("isreal", input=input)
    return Tensor(torch.ones(input.shape, dtype=torch.bool, device=input.device))


def is_nonzero(input):
    """bool(input) of a one-element tensor (a host read); RuntimeError for others, as torch's."""
    return bool(input)


def is_signed(input):
    """Whether input's dtype is signed: all of tnet's but bool and uint8."""
    return input.dtype.is_signed


def is_same_size(input, other):
    return input.shape == other.shape


# ---- the tensor surface of the eighth session (ops3): shifts, frexp, nextafter, polygamma ------

def _shift(name):
    """torch.{name} of integer (or bool) tensors and Python ints, as torch's: a count past the
    width gives 0 (left) or the sign's fill (right), as does a negative one; floats raise, and two bools."""
    def op(input, other):
        if _all_bool(input, other):
            raise not_implemented(name, torch.bool)
        for v in (input, other):
            if not (isinstance(v, numbers.Integral) or isinstance(v, Tensor) and v.dtype in _pw.INTEGERS):
                raise NotImplementedError(f'"{name}" not implemented for '
                                          f"'{getattr(v, 'dtype', type(v).__name__)}' (integer tensors and ints only)")
        a, b = _operands(name, input, other)
        return Tensor(_pw.pointwise(name, a, b))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.{name} (the {'<<' if 'left' in name else '>>'} operator) of integer tensors, element-wise."
    return op


bitwise_left_shift, bitwise_right_shift = _shift("bitwise_left_shift"), _shift("bitwise_right_shift")


def _float_input(name, input):
    check_tensors(name, input=input)
    check(input.dtype in _pw.FLOATS, lambda: f"torch.{name}() only supports floating-point dtypes")


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1 (0, inf and NaN
    give themselves and exponent 0), as torch.frexp: exponent int32; mantissa's gradient g 2^-exponent."""
    _float_input("frexp", input)
    X = input.memory
    exponent = _pw.pointwise("frexp_exponent", X, dtype=torch.int32)
    shift = _pw.pointwise("neg", ints_as_float32(exponent))
    mantissa = record("frexp", _pw.pointwise("frexp_mantissa", X), (input,),
                      lambda g: (_pw.pointwise("ldexp_int", g, shift, dtype=g.dtype),), saved=(shift,))
    return frexp_result(mantissa, Tensor(exponent))


frexp_result = return_types.frexp

_LAST_PLACE = {torch.float16: 1 << 13, torch.bfloat16: 1 << 16}  # in fp32's bits; float32's is 1


def nextafter(input, other):
    """The next value of input's dtype after input toward other (other itself where they are equal),
    as torch.nextafter: two float tensors, broadcast; input's gradient is g where input != other (0 at a tie, where
    the value does not move), other's 0, as torch's."""
    for arg, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"nextafter(): argument '{arg}' must be Tensor, not {type(v).__name__}")
    if _integer_tensors(input, other):
        raise_no_integers("nextafter", input, other)
    input, other = _ints_to_float(input, other)  # an integer one beside a float one: promoted, as torch's
    A, B = input.memory, other.memory
    y = _pw.pointwise("nextafter", A, B, float(_LAST_PLACE.get(_pw.result_type([A, B]), 1)))
    return _record2("nextafter", y, input, other,
                    lambda g: (_pw.pointwise("where", _pw.pointwise("eq", A, B), 0.0, g), torch.zeros_like(g)), saved=(A, B))


def polygamma(n, input):
    """The n-th derivative of digamma, as torch.polygamma: n = 0 digamma, n = 1 trigamma (reflected for
    x < 0), n >= 2 (-1)^(n+1) n! zeta(n + 1, x) from the Hurwitz zeta's Euler-Maclaurin sum (relative
    error near 1e-6 for x > 0; poles at 0, -1, ..., -inf, as torch's; x < 0 through zetas of positive
    arguments, where torch's Cephes sums ceil(9 - x) terms before its tail: near its values, the cancellation
    of large terms aside).
    Its gradient is polygamma(n + 1, x) g."""
    check_type(isinstance(n, numbers.Integral), lambda: f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    check(n >= 0, lambda: f"polygamma(n, x) does not support negative n, got {n}")
    if n == 0:
        return digamma(input)
    check_tensors("polygamma", input=input)
    X = ints_as_float32(input.memory) if input.dtype in _pw.INTEGERS else input.memory

    def value(k):
        return _pw.pointwise("polygamma", X, float(k + 1), (-1.0) ** (k + 1) * math.factorial(k))
    return record("polygamma", value(n), (input,), lambda g: (_pw.pointwise("mul", g, value(n + 1)),), saved=(X,),
                  graph=lambda g, out: (mul(g, polygamma(n + 1, input)),))



# ---- fake quantisation (quantisation-aware training) -------------------------------------------

def _fake_quantize(name, input, scale, inv_scale, zero_point, quant_min, quant_max, float_zero_point=False):
    """(clamp(code, quant_min, quant_max) - zero_point) * scale, code = round(x * inv_scale) + zero_point
    (quantize's rule), as torch's fake quantisers; scale, inv_scale and zero_point are numbers or fp32
    tensors that broadcast with x. The gradient is g where the code lies in [quant_min, quant_max], else
    0 (the straight-through estimator, torch's mask)."""
    check(input.memory.is_floating_point(), lambda: f"{name}: expected a floating-point input, got {input.dtype}")
    check(quant_min <= quant_max, "`quant_min` should be less than or equal to `quant_max`.")
    X = input.memory
    code = _pw.pointwise("quantize", X, inv_scale, zero_point, 1.0 if float_zero_point else 0.0, dtype=torch.float32)
    kept = _pw.pointwise("clamp", code, float(quant_min), float(quant_max))
    y = _pw.pointwise("dequantize", kept, scale, zero_point, dtype=X.dtype)
    return record(name, y, (input,), lambda g: (_pw.pointwise("clamp_backward", g, code, kept),), saved=(code, kept),
                  graph=lambda g, out: (where(Tensor(_pw.pointwise("eq", code, kept)), g, 0.0),))


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """torch.fake_quantize_per_tensor_affine: x quantised to the integers quant_min..quant_max of step
    scale about zero_point and back, in x's dtype, with x * (1 / scale) in fp32 rounded half to even as
    torch's; the gradient passes where the code is within the range (_fake_quantize). scale and
    zero_point: numbers, or one-element tensors (read on the host, as .item())."""
    check_tensors("fake_quantize_per_tensor_affine", input=input)
    scale, zero_point = (v.item() if isinstance(v, Tensor) else v for v in (scale, zero_point))
    check(quant_min <= zero_point <= quant_max, "`zero_point` must be between `quant_min` and `quant_max`.")
    scale = np.float32(scale)
    return _fake_quantize("fake_quantize_per_tensor_affine", input, float(scale), float(np.float32(1) / scale),
                          int(zero_point), quant_min, quant_max)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """torch.fake_quantize_per_channel_affine: as fake_quantize_per_tensor_affine with scale[c] and
    zero_point[c] for each index c of dim `axis` (0 <= axis < input.ndim; 1-D tensors of input.shape[axis]
    elements; an int32 zero point is added after rounding, a float one before it, as torch's). The quantisation parameters
    are read on the host (a tensor's few values), where 1 / scale is taken in fp32."""
    check_tensors("fake_quantize_per_channel_affine", input=input, scale=scale, zero_point=zero_point)
    check(scale.ndim == 1, "scale should be a 1-D tensor")
    check(zero_point.ndim == 1, "zero point should be a 1-D tensor")
    check(zero_point.dtype in (torch.int32, torch.float32, torch.float16),
          lambda: f"Zero-point must be Int32, Float or Half, found {zero_point.dtype}")
    check(0 <= axis < input.ndim, "`axis` must be between 0 and number of dimensions of input")  # no negative axis
    check(scale.numel() == input.shape[axis], "dimensions of scale and input should match")
    check(zero_point.numel() == input.shape[axis], "dimensions of zero_point and input should match")
    zeros = zero_point.memory.detach().cpu().numpy()
    float_zero_point = zero_point.memory.is_floating_point()
    check(float_zero_point or (zeros.min() >= quant_min and zeros.max() <= quant_max),
          "`zero_point` must be between `quant_min` and `quant_max`.")
    steps = scale.memory.detach().cpu().numpy().astype(np.float32)
    shape = [1] * input.ndim
    shape[axis] = -1

    def laid(v):  # a host array as an fp32 device tensor along dim axis
        return as_storage(np.asarray(v, dtype=np.float32)).to(input.memory.device).view(shape)
    return _fake_quantize("fake_quantize_per_channel_affine", input, laid(steps), laid(np.float32(1) / steps),
                          laid(zeros), quant_min, quant_max, float_zero_point)
