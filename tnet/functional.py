"""Differentiable ops. Each computes its forward with tnet's kernels and records, right
beside it, the backward closure that returns one gradient per input (None where no input
needs one). Forward saves only what backward needs.

Activations of 16 channels or more are kept channels-last (torch.channels_last: NCHW shape,
NHWC memory), where the convolutions (kernels/conv.py) read a tap's channels as one vector:
convolutions return channels-last outputs (also from a 3-channel NCHW input, which they
gather from), and pooling turns an NCHW input of such a width channels-last. Elementwise ops
keep their input's layout. The tape hands every
backward its gradient in the layout of the op's output."""
import collections
import math
import numbers

import torch

from . import amp
from .amp import is_autocast_enabled
from .factory import float32, rng_state
from .kernels import conv as _conv
from .kernels import elementwise as _ew
from .kernels import gemm as _gemm
from .kernels import norm as _norm
from .kernels import pointwise as _pw
from .kernels import pool as _pool
from .kernels import random as _random
from .kernels import reduce as _reduce
from .kernels import softmax as _softmax
from .kernels._autotune import InputError, InputIndexError, check
from .kernels.conv import is_channels_last
from .tensor import Tensor, is_grad_enabled, record


def _pair(v, name, least=0):
    """(v, v) for an int v, v itself for a pair of ints, each at least `least` (1 for kernel
    sizes and strides, 0 for paddings)."""
    v = (v, v) if isinstance(v, int) else tuple(v)
    check(len(v) == 2 and all(isinstance(i, int) for i in v), f"{name} must be an int or a pair of ints, got {v}")
    check(min(v) >= least, f"{name} must be at least {least}, got {v}")
    return v


def _need(*xs):
    return [isinstance(x, Tensor) and x.requires_grad for x in xs]


def _is_tensor(name, **xs):
    for arg, x in xs.items():
        check(isinstance(x, Tensor), f"{name}: {arg} must be a tnet.Tensor, got {type(x).__name__}")


def matmul(a, b):
    """a [M, K] @ b [K, N]. Under autocast the product reads 16-bit operands (amp.cast_operand)
    and returns a 16-bit output; each gradient comes in its input's dtype, written so by the GEMM."""
    _is_tensor("matmul", a=a, b=b)
    check(a.ndim == 2 and b.ndim == 2, f"matmul: a and b must be 2-D, got {a.shape} and {b.shape}")
    need_a, need_b = _need(a, b)
    low = amp.get_autocast_dtype()
    A, B = (a.data, b.data) if low is None else (amp.cast_operand(a, low), amp.cast_operand(b, low))
    a_dtype, b_dtype = a.dtype, b.dtype

    def backward(g):
        return (_gemm.matmul(g, B.t(), out_dtype=a_dtype) if need_a else None,
                _gemm.matmul(A.t(), g, out_dtype=b_dtype) if need_b else None)
    return record("matmul", _gemm.matmul(A, B), (a, b), backward, saved=(b if need_a else None, a if need_b else None))


def linear(x, w, b=None):
    """x [N, in] @ w.T + b, with w [out, in] and b [out]. Under autocast the GEMM reads 16-bit
    x and w (amp.cast_operand: an fp32 parameter's kept copy) and writes a 16-bit output, the
    fp32 bias added in its epilogue. Each gradient comes in its input's dtype (fp32 for fp32
    masters), written so by the GEMM or the reduction: no extra cast pass."""
    _is_tensor("linear", x=x, w=w)
    check(x.ndim == 2 and w.ndim == 2 and x.shape[1] == w.shape[1],
          f"linear: x is {'x'.join(map(str, x.shape))} but w is {'x'.join(map(str, w.shape))} ([out, in])")
    check(b is None or b.shape == (w.shape[0],), f"linear: b is {None if b is None else b.shape}, expected ({w.shape[0]},)")
    need_x, need_w, need_b = _need(x, w, b)
    low = amp.get_autocast_dtype()
    X, W = (x.data, w.data) if low is None else (amp.cast_operand(x, low), amp.cast_operand(w, low))
    x_dtype, w_dtype, b_dtype = x.dtype, w.dtype, None if b is None else b.dtype

    def backward(g):
        return (_gemm.matmul(g, W, out_dtype=x_dtype) if need_x else None,
                _gemm.matmul(g.t(), X, out_dtype=w_dtype) if need_w else None,
                _bias_grad(g, b_dtype) if need_b else None)
    y = _gemm.matmul(X, W.t(), bias=None if b is None else b.data, bias_dim=1)
    return record("linear", y, (x, w) if b is None else (x, w, b), backward,
                  saved=(w if need_x else None, x if need_w else None))


def _bias_grad(g, dtype):
    """The bias gradient of a linear layer or a convolution: g [N, C] or [N, C, H, W] summed
    over all axes but C, in fp32, written in dtype."""
    out = torch.empty(g.shape[1], device=g.device, dtype=dtype)
    if is_channels_last(g):
        return _reduce.sum_except(g.permute(0, 2, 3, 1).view(-1, g.shape[1]), 1, out=out)
    return _reduce.sum_except(g, 1, out=out)


def _conv_padding(padding, stride, kernel):
    """padding as a pair of ints: an int, a pair, or torch's 'valid' (0) and 'same' (the output
    as large as the input: stride 1 only, as torch; odd kernel sizes only, as tnet's kernels
    pad both sides alike)."""
    if isinstance(padding, str):
        check(padding in ("same", "valid"), f"conv2d: invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if padding == "valid":
            return 0, 0
        check(_pair(stride, "conv2d: stride", 1) == (1, 1), "conv2d: padding='same' is not supported for strided convolutions")
        if any(k % 2 == 0 for k in kernel):
            raise NotImplementedError(f"conv2d: padding='same' with an even kernel size {tuple(kernel)} needs uneven "
                                      "padding, which tnet does not support; pad explicitly")
        return tuple((k - 1) // 2 for k in kernel)
    return _pair(padding, "conv2d: padding")


def _unsupported_conv_args(dilation, groups):
    """dilation and groups: only 1 (NotImplementedError otherwise, with a TypeError or ValueError
    for values torch rejects too)."""
    check(isinstance(groups, int) and not isinstance(groups, bool) and groups > 0,
          f"conv2d: groups must be a positive int, got {groups!r}")
    if _pair(dilation, "conv2d: dilation", 1) != (1, 1):
        raise NotImplementedError(f"conv2d: dilation={dilation} is not supported by tnet (only 1)")
    if groups != 1:
        raise NotImplementedError(f"conv2d: groups={groups} is not supported by tnet (only 1)")


def _convolve(x, w, b, stride, padding, relu, dilation=1, groups=1):
    """Checks and runs a convolution; returns y and grads(g), the gradients (x, w, b) for
    the gradient g of y (with relu: already masked by y > 0), g in y's layout."""
    _is_tensor("conv2d", x=x, w=w)
    check(b is None or isinstance(b, Tensor), f"conv2d: bias must be a tnet.Tensor or None, got {type(b).__name__}")
    _unsupported_conv_args(dilation, groups)
    check(x.ndim == 4 and w.ndim == 4, f"conv2d: x and w must be 4-D, got {x.shape} and {w.shape}")
    check(x.shape[1] == w.shape[1], f"conv2d: x has {x.shape[1]} channels but w expects {w.shape[1]}")
    check(b is None or b.shape == (w.shape[0],), f"conv2d: b is {None if b is None else b.shape}, expected ({w.shape[0]},)")
    stride, padding = _pair(stride, "conv2d: stride", 1), _conv_padding(padding, stride, w.shape[2:])
    low = amp.get_autocast_dtype()
    check(low is not None or x.dtype == w.dtype,
          f"conv2d: x is {x.dtype} but w is {w.dtype}; use one dtype, or tnet.autocast")
    need_x, need_w, need_b = _need(x, w, b)
    # a wide x is read as channel vectors, so channels-last (no copy if already so), once for
    # the forward and the weight gradient; a narrow one (RGB) is gathered in any layout
    X = x.data.contiguous(memory_format=torch.channels_last) if _conv.reads_vectors(x.shape[1]) else x.data
    Wl, B = w.data if low is None else amp.cast_operand(w, low), None if b is None else b.data
    y = _conv.conv2d(X, Wl, stride, padding, bias=B, relu=relu, out_dtype=low or x.dtype)
    X = X if need_w else None  # only the weight gradient reads it
    saved = (w if need_x else None, X, y if relu else None)  # what grads reads (y: the ReLU's mask)

    def grads(g):
        gx = _conv.conv2d_input(x.shape, Wl, g, stride, padding, out_dtype=x.dtype) if need_x else None
        gw = gb = None
        if need_w:
            gw = _conv.conv2d_weight(X, w.shape, g, stride, padding, channels_last=is_channels_last(w.data))
        if need_b:
            gb = _bias_grad(g, b.dtype)
        return (gx, gw) if b is None else (gx, gw, gb)
    return y, grads, saved


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, relu=False):
    """input [N, C, H, W] * weight [Cout, C, kh, kw] + bias [Cout], torch's arguments in torch's
    order (padding an int, a pair, 'same' or 'valid'; dilation and groups 1 only), as implicit
    GEMMs (kernels/conv.py): the output is channels-last. tnet's addition, keyword-only:
    relu=True applies ReLU in the GEMM's epilogue
    (relu(conv2d(...)) in one pass over the output instead of three). Under tnet.autocast the
    products are 16-bit and so is the output; an fp32 w is read through its 16-bit copy and
    gets an fp32 gradient."""
    x, w, b = input, weight, bias
    y, grads, saved = _convolve(x, w, b, stride, padding, relu, dilation, groups)

    def backward(g):
        return grads(_ew.relu_backward(y, g) if relu else g)
    return record("conv2d", y, (x, w) if b is None else (x, w, b), backward, saved=saved)


def _pool_args(mode, kernel_size, stride, padding):
    kernel = _pair(kernel_size, f"{mode}_pool2d: kernel_size", 1)
    stride = kernel if stride is None else _pair(stride, f"{mode}_pool2d: stride", 1)
    return kernel, stride, _pair(padding, f"{mode}_pool2d: padding")


def _pool2d(mode, x, kernel_size, stride, padding, ceil_mode):
    _is_tensor(f"{mode}_pool2d", x=x)
    kernel, stride, padding = _pool_args(mode, kernel_size, stride, padding)
    y_cl = _conv.keeps_channels_last(x.shape[1])
    y, arg = _pool.pool2d(x.data, kernel, stride, padding, ceil_mode, mode, channels_last=y_cl)
    shape, x_cl = x.shape, is_channels_last(x.data)

    def backward(g):
        return (_pool.pool2d_backward(g, arg, shape, kernel, stride, padding, mode, x_channels_last=x_cl,
                                      y_channels_last=y_cl),)
    return record(f"{mode}_pool2d", y, (x,), backward)


def conv2d_relu_pool2d(x, w, b, stride, padding, mode, kernel_size, pool_stride=None, pool_padding=0,
                       ceil_mode=False):
    """{mode}_pool2d(relu(conv2d(x, w, b, stride, padding)), kernel_size, ...) as one op, mode
    "max" or "avg": ReLU runs in the GEMM's epilogue, its gradient in the pooling's backward
    kernel, so the convolution's output is written once and its gradient once. ReLU commutes
    with max pooling, so this is also max_pool2d followed by relu."""
    check(mode in ("max", "avg"), f"conv2d_relu_pool2d: mode must be 'max' or 'avg', got {mode!r}")
    y, grads, saved = _convolve(x, w, b, stride, padding, relu=True)
    kernel, pool_stride, pool_padding = _pool_args(mode, kernel_size, pool_stride, pool_padding)
    p_cl = _conv.keeps_channels_last(y.shape[1])
    p, arg = _pool.pool2d(y, kernel, pool_stride, pool_padding, ceil_mode, mode, channels_last=p_cl)
    y_cl = is_channels_last(y)

    def backward(g):
        return grads(_pool.pool2d_backward(g, arg, y.shape, kernel, pool_stride, pool_padding, mode, relu_input=y,
                                           x_channels_last=y_cl, y_channels_last=p_cl))
    return record("conv2d_relu_pool2d", p, (x, w) if b is None else (x, w, b), backward, saved=saved)


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    """Max pooling over [N, C, H, W]; ties go to the first maximum in row-major order."""
    return _pool2d("max", x, kernel_size, stride, padding, ceil_mode)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    """Average pooling over [N, C, H, W]; the divisor counts the padding (Caffe's rule)."""
    return _pool2d("avg", x, kernel_size, stride, padding, ceil_mode)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05,
               *, num_batches_tracked=None, activation=None):
    """Batch normalisation of input [N, C], [N, C, L] or [N, C, H, W] (NCHW or channels-last;
    the output keeps the layout) over every axis but C, as torch.nn.functional.batch_norm.
    training=True normalises with the batch's mean and biased variance and, given
    running_mean and running_var, updates them in place on the device:
    running = (1 - momentum) * running + momentum * batch, with the unbiased variance.
    training=False normalises with running_mean and running_var.
    tnet's additions, keyword-only: num_batches_tracked, for nn.BatchNorm, one int64 element,
    is increased by 1 on the device in training mode, and momentum=None then means the
    cumulative average (momentum 1 / num_batches_tracked): torch's module reads that count on
    the host, which a CUDA graph could not replay. activation='gelu' returns
    F.gelu(F.batch_norm(...)) (the erf GELU, within 1e-6: see kernels/norm.py's _gelu_cdf) as
    one op: the normalised values are never stored, the backward recomputes them from the
    input and the statistics."""
    _is_tensor("batch_norm", input=input)
    for arg, v in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                   ("bias", bias), ("num_batches_tracked", num_batches_tracked)):
        check(v is None or isinstance(v, Tensor),
              lambda: f"batch_norm: {arg} must be a tnet.Tensor or None, got {type(v).__name__}")
    data = lambda v: None if v is None else v.data
    X, W, B = input.data, data(weight), data(bias)
    need_x, need_w, need_b = _need(input, weight, bias)
    if training:
        y, mean, stat = _norm.batch_norm_train(X, W, B, eps, data(running_mean), data(running_var), momentum,
                                               data(num_batches_tracked), activation)
    else:
        y = _norm.batch_norm_eval(X, data(running_mean), data(running_var), W, B, eps, activation)
        if is_grad_enabled() and (need_x or need_w or need_b):  # the running statistics now, for the backward
            mean, stat = running_mean.data.clone(), running_var.data.clone()
    inputs = [v for v in (input, weight, bias) if v is not None]

    def backward(g):
        dx, dw, db = _norm.batch_norm_backward(g, X, mean, stat, W, eps, running=not training, need_x=need_x,
                                               need_params=need_w or need_b, bias=B, activation=activation)
        grads = (dx, dw if need_w else None, db if need_b else None)
        return [gx for v, gx in zip((input, weight, bias), grads) if v is not None]
    return record("batch_norm" if activation is None else f"batch_norm_{activation}", y, inputs, backward,
                  saved=(X, W, B if activation else None))


def relu(x):
    _is_tensor("relu", x=x)
    y = _ew.relu(x.data)
    return record("relu", y, (x,), lambda g: (_ew.relu_backward(y, g),), saved=(y,))


# Arithmetic, element-wise functions, activations and reductions (PyTorch's names). Binary ops
# broadcast like PyTorch's and take a Python number on either side; each operand's gradient is
# summed back to its shape. A gradient passed on unchanged goes out as a view, so that no two
# inputs hold one buffer (the tape copies a view before keeping it as a leaf's .grad).

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
    need_b = _need(other)[0]
    return _record2("sub", _pw.pointwise("sub", a, b), input, other,
                    lambda g: (g.view(g.shape), _pw.pointwise("neg", g) if need_b else None))


def mul(input, other):
    """input * other."""
    a, b = _operands("mul", input, other)
    need_a, need_b = _need(input, other)
    return _record2("mul", _pw.pointwise("mul", a, b), input, other,
                    lambda g: (_pw.pointwise("mul", g, b) if need_a else None,
                               _pw.pointwise("mul", g, a) if need_b else None),
                    saved=(b if need_a else None, a if need_b else None))


def div(input, other):
    """input / other (true division)."""
    a, b = _operands("div", input, other)
    need_a, need_b = _need(input, other)
    y = _pw.pointwise("div", a, b)
    return _record2("div", y, input, other,
                    lambda g: (_pw.pointwise("div", g, b) if need_a else None,
                               _pw.pointwise("div_backward", g, y, b) if need_b else None),
                    saved=(b, y if need_b else None))


def _unary(name, input, op, grad_op, saves_output, *args):
    """Record y = op(input, *args) elementwise, in input's layout; its backward is
    grad_op(g, y or input, *args), saving only the one it reads."""
    _is_tensor(name, input=input)
    y = _pw.pointwise(op, input.data, *args)
    saved = y if saves_output else input.data
    return record(name, y, (input,), lambda g: (_pw.pointwise(grad_op, g, saved, *args),), saved=(saved,))


def neg(input):
    _is_tensor("neg", input=input)
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


def _dims(name, input, dim):
    """dim (None, an int or a sequence of ints; negative ones count from the end) as a sorted tuple of
    input's axes; None and () mean all of them, as in PyTorch's sum (a 0-d input has none)."""
    n = input.ndim
    dims = range(n) if dim is None else list(dim) if isinstance(dim, (tuple, list)) else [dim]
    out = []
    for d in dims:
        check(isinstance(d, numbers.Integral), f"{name}: dim must be an int or a tuple of ints, got {dim!r}")
        low, high = (-n, n - 1) if n else (-1, 0)
        check(low <= d <= high, f"{name}: dimension out of range (expected to be in range of [{low}, {high}], but got {d})")
        if not n:
            continue
        d %= n
        check(d not in out, f"{name}: dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out)) if out else tuple(range(n))


def _dense(x):
    """x's storage, copied contiguous if it has gaps (a slice): the reductions read dense memory."""
    return x.data if _reduce.is_dense(x.data) else x.data.contiguous()


def _shape(shape, dims, keepdim):
    return tuple(1 if d in dims else s for d, s in enumerate(shape) if keepdim or d not in dims)


def _sum(name, input, dim, keepdim, mean):
    _is_tensor(name, input=input)
    dims = _dims(name, input, dim)
    if input.numel() == 0:  # torch's values for no elements: sums 0, means nan (0 / 0); gradients of no elements
        out = torch.full(_shape(input.shape, dims, keepdim), math.nan if mean else 0.0, dtype=input.dtype,
                         device=input.device)
        return record(name, out, (input,), lambda g: (torch.zeros_like(input.data),))
    X, shape = _dense(input), input.shape
    count = math.prod(shape[d] for d in dims) if mean else 1
    y = _reduce.reduce(X, dims, divisor=count)
    cl = is_channels_last(X)

    def backward(g):  # g spread back over the reduced axes (and divided by the count: mean)
        return (_pw.pointwise("div", g.reshape(y.shape).expand(shape), float(count), channels_last=cl),)
    return record(name, y.reshape(_shape(shape, dims, keepdim)), (input,), backward)


def sum(input, dim=None, keepdim=False):
    """The sum over dim (None: all axes; an int or a tuple), accumulated in fp32."""
    return _sum("sum", input, dim, keepdim, mean=False)


def mean(input, dim=None, keepdim=False):
    """The mean over dim (None: all axes; an int or a tuple), accumulated in fp32."""
    return _sum("mean", input, dim, keepdim, mean=True)


max_result = collections.namedtuple("max", ["values", "indices"])


def _max_dims(name, input, dim):
    """The checks of max and argmax, as torch's: returns dim's one axis as a tuple, () for dim None.
    No elements: dim must be given (RuntimeError for max, IndexError for argmax, as torch) and
    name an axis of nonzero size (IndexError); the other axes may be empty."""
    _is_tensor(name, input=input)
    check(dim is None or isinstance(dim, numbers.Integral),
          f"{name}: dim must be an int or None, got {dim!r}" +
          (" (an elementwise max of two tensors is not supported)" if name == "max" else ""))
    if dim is None:
        if input.numel() == 0:
            if name == "argmax":
                raise InputIndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
            raise InputError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                             "Specify the reduction dim with the 'dim' argument.")
        return ()
    d = _dims(name, input, dim)
    if input.ndim and input.shape[d[0]] == 0:
        raise InputIndexError(f"{name}(): Expected reduction dim {d[0]} to have non-zero size.")
    return d


def max(input, dim=None, keepdim=False):
    """dim None: the largest element (a 0-d tensor; its gradient is shared by the elements equal to
    it, as in PyTorch). An int dim: max_result(values, indices) along dim, the indices (int64) of
    the first maximum; the gradient goes to those. NaN counts as the largest, as in PyTorch.
    A dim of size 0 is an error, other empty axes give empty results, as torch's."""
    d = _max_dims("max", input, dim)
    if dim is not None and input.ndim == 0:  # torch takes dim 0 (or -1) of a 0-d input: itself, index 0
        return max(reshape(input, 1), 0)
    X, shape, cl = _dense(input), input.shape, is_channels_last(input.data)
    if dim is None:
        y, _ = _reduce.reduce(X, tuple(range(input.ndim)), "max")

        def share(g):
            ties = _pw.pointwise("eq", X, y)
            return (_pw.pointwise("muldiv", ties, g.reshape(y.shape), _reduce.reduce(ties, tuple(range(input.ndim)))),)
        return record("max", y.reshape(()), (input,), share, saved=(X, y))
    out = _shape(shape, d, keepdim)
    if input.numel() == 0:  # a kept axis of size 0: nothing to reduce
        y = torch.empty(out, device=input.device, dtype=input.dtype)
        indices = torch.empty(out, device=input.device, dtype=torch.int64)
        return max_result(record("max", y, (input,), lambda g: (torch.zeros_like(input.data),)), Tensor(indices))
    y, indices = _reduce.reduce(X, d, "max")

    def backward(g):
        return (_pw.route(g.reshape(y.shape), indices, shape, d[0], channels_last=cl),)
    return max_result(record("max", y.reshape(out), (input,), backward, saved=(indices,)), Tensor(indices.reshape(out)))


def argmax(input, dim=None, keepdim=False):
    """The int64 index of the first maximum along dim, or (dim None) in the flattened input. A dim
    of size 0 is an error, other empty axes give an empty result, as torch's."""
    d = _max_dims("argmax", input, dim)
    if dim is None:  # flat indices count in row-major order: a contiguous copy if need be
        _, indices = _reduce.reduce(input.data.contiguous().reshape(-1), (0,), "max")
        return Tensor(indices.reshape((1,) * input.ndim if keepdim else ()))
    if input.ndim == 0 or input.numel() == 0:  # a 0-d input's index is 0; a kept axis of size 0: empty
        return Tensor(torch.zeros(_shape(input.shape, d, keepdim), device=input.device, dtype=torch.int64))
    _, indices = _reduce.reduce(_dense(input), d, "max")
    return Tensor(indices.reshape(_shape(input.shape, d, keepdim)))


def mse_loss(input, target, reduction="mean"):
    """(input - target) ** 2, broadcasting, averaged ('mean'), summed ('sum') or kept ('none');
    under tnet.autocast on fp32 copies of 16-bit operands, as torch's autocast."""
    _is_tensor("mse_loss", input=input, target=target)
    check(reduction in ("mean", "sum", "none"), f"mse_loss: {reduction!r} is not a valid value for reduction")
    if is_autocast_enabled():
        input, target = input.float(), target.float()
    loss = pow(sub(input, target), 2)
    return loss if reduction == "none" else _sum("mse_loss", loss, None, False, mean=reduction == "mean")


def adaptive_avg_pool2d(input, output_size):
    """The mean over H and W of [N, C, H, W] (or [C, H, W]) as [N, C, 1, 1]: only output size 1."""
    _is_tensor("adaptive_avg_pool2d", input=input)
    check(output_size in (1, (1, 1), [1, 1]),
          f"adaptive_avg_pool2d: only output_size 1 (global average pooling) is supported, got {output_size!r}")
    check(input.ndim in (3, 4), f"adaptive_avg_pool2d: expected a 3-D or 4-D input, got {input.shape}")
    return _sum("adaptive_avg_pool2d", input, (-2, -1), True, mean=True)


def _rows(name, x, dim):
    _is_tensor(name, x=x)
    check(x.ndim == 2 and dim in (1, -1), f"{name}: supports 2-D input over dim 1, got {x.shape} and dim={dim}")


def _autocast_fp32(x):
    """The output dtype of softmax, log_softmax and the losses: float32 inside a tnet.autocast
    block (torch's autocast runs them in fp32), else x's. They compute in fp32 either way."""
    return float32 if is_autocast_enabled() else x.dtype


def softmax(x, dim=1):
    """Softmax over the rows of a 2-D tensor (in fp32; the output in x's dtype, or fp32 under
    tnet.autocast)."""
    _rows("softmax", x, dim)
    y, dtype = _softmax.softmax(x.data.contiguous(), _autocast_fp32(x)), x.dtype  # a strided view: a copy
    return record("softmax", y, (x,), lambda g: (_softmax.softmax_backward(y, g, dtype),), saved=(y,))


def log_softmax(x, dim=1):
    """x - logsumexp(x) over the rows of a 2-D tensor (in fp32; the output in x's dtype, or fp32
    under tnet.autocast)."""
    _rows("log_softmax", x, dim)
    y, dtype = _softmax.log_softmax(x.data.contiguous(), _autocast_fp32(x)), x.dtype  # a strided view: a copy
    return record("log_softmax", y, (x,), lambda g: (_softmax.log_softmax_backward(y, g, dtype),), saved=(y,))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """-log softmax(input)[target] per row of input [N, classes], target int64 [N]; reduction
    'mean' (over the rows whose target is not ignore_index), 'sum' or 'none', and
    label_smoothing, as in PyTorch (class weights and the deprecated size_average and reduce
    are not supported). A target outside [0, classes), other than ignore_index, raises IndexError
    (InputIndexError, also a ValueError) as torch's; inside a captured
    CUDA graph it is flagged on the device instead (see kernels.softmax.take_label_error).
    The loss and its gradient come out of one fused kernel, in fp32; the loss has input's
    dtype (fp32 under tnet.autocast, as torch's), the gradient input's."""
    _is_tensor("cross_entropy", input=input, target=target)
    check(weight is None and size_average is None and reduce is None,
          "cross_entropy: weight, size_average and reduce are not supported")
    check(input.ndim == 2, f"cross_entropy: input must be [N, classes], got {input.shape}")
    loss, dlogits = _softmax.cross_entropy(input.data, target.data, label_smoothing, reduction, ignore_index,
                                           dtype=_autocast_fp32(input))
    if reduction == "none":
        return record("cross_entropy", loss, (input,), lambda g: (_softmax.scale_rows_(dlogits, g),))
    return record("cross_entropy", loss, (input,), lambda g: (_ew.scale_(dlogits, g.reshape(1)),))


def reshape(x, *shape):
    """A view when the memory allows (torch's reshape; a copy otherwise)."""
    _is_tensor("reshape", x=x)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:
        y = x.data.reshape(shape)
    except RuntimeError as e:
        raise ValueError(f"reshape: cannot view {x.shape} as {shape}: {e}") from None
    return record("reshape", y, (x,), lambda g: (g.reshape(x.shape),))


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only; else
    the input itself). The mask comes from tnet's Philox generator (tnet.manual_seed), whose
    state the kernels advance on the device: a captured CUDA graph draws a new mask on each
    replay. The backward regenerates the mask from the forward's 16-byte snapshot of that
    state instead of keeping it (kernels/random.py). inplace=True is not supported: the tape
    has no version counters to catch a backward that needs the overwritten values."""
    _is_tensor("dropout", input=input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if inplace:
        raise NotImplementedError("dropout: inplace=True is not supported by tnet; use inplace=False")
    X = input.data
    if not _random.is_dense(X):  # a strided view: the mask is drawn over flat memory
        X = X.contiguous()
    snapshot = _random.take(rng_state(), X.numel())
    y = _random.dropout(X, p, snapshot)
    return record("dropout", y, (input,), lambda g: (_random.dropout(g, p, snapshot),))
