"""Arithmetic, element-wise functions and activations (kernels/pointwise.py, functional/pointwise.py):
forward and backward against torch in float64, on odd shapes, broadcasting, numbers on either side,
NCHW and channels-last, 16-bit storage and type promotion; the flat ReLU, add and scale kernels."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet import nn
from tnet.kernels import pointwise
from tnet.kernels.launch import is_channels_last
from helpers import (CONFIG_DTYPES, DEV, LOW, TOL, assert_close, check, cl_randn, config_indices, f64, leaf,
                     only_ith_config, randn, tol_for)


# The interpreter computes every branch of a tl.where in numpy, masked lanes too: log(0) warns.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b}


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shapes", [((5, 1, 7), (3, 1)), ((2, 3, 5, 7), (3, 1, 1)), ((7,), (2, 5, 1))])
def test_binary_broadcast(rng, op, shapes, dtype=torch.float32):
    inputs = [leaf(rng, *shapes[0], dtype=dtype), leaf(rng, *shapes[1], positive=op == "div", dtype=dtype)]
    out = check(BINARY[op], BINARY[op], inputs, rng, tol_for(dtype))
    assert out.dtype == inputs[0][0].grad.dtype == inputs[1][0].grad.dtype == dtype
    inputs = [leaf(rng, *shapes[1], dtype=dtype), leaf(rng, *shapes[0], positive=op == "div", dtype=dtype)]
    check(getattr(F, op), getattr(torch, op), inputs, rng, tol_for(dtype))


@pytest.mark.parametrize("fn,ref", [(lambda x: x + 2, None), (lambda x: 2.5 + x, None), (lambda x: x - 3, None),
                                    (lambda x: 3 - x, None), (lambda x: x * -1.5, None), (lambda x: 4 * x, None),
                                    (lambda x: x / 3, None), (lambda x: 3 / x, None),
                                    (lambda x: F.sub(1, x), lambda x: 1 - x), (lambda x: F.div(x, 7), lambda x: x / 7)])
def test_number_on_either_side(rng, fn, ref):
    check(fn, ref or fn, [leaf(rng, 3, 7, 5, positive=True)], rng)


def test_layouts(rng, monkeypatch):
    """Channels-last and NCHW operands, alike and mixed: values, gradients and the output's layout
    (channels-last if the first full-shape operand is); alike dense operands run as one flat pass."""
    flat = []
    kernel = pointwise.pointwise_kernel
    monkeypatch.setattr(pointwise, "pointwise_kernel", type("Spy", (), {
        "__getitem__": lambda self, grid: lambda *a, **kw: (flat.append(kw["FLAT"]), kernel[grid](*a, **kw))[1]})())
    shape = (2, 5, 3, 7)
    for cl_x, cl_y, other, want_cl, want_flat in [(True, True, shape, True, True), (False, False, shape, False, True),
                                                  (True, False, shape, True, False), (False, True, shape, False, False),
                                                  (True, False, (1, 5, 1, 1), True, False)]:
        x, y = leaf(rng, *shape, channels_last=cl_x), leaf(rng, *other, channels_last=cl_y)
        flat.clear()
        out = check(lambda a, b: a * b + a, lambda a, b: a * b + a, [x, y], rng)
        assert is_channels_last(out.data) == want_cl and is_channels_last(x[0].grad.data) == cl_x
        assert flat[:2] == [want_flat, True], flat  # a * b, then (a * b) + a: both outputs laid out like a


UNARY = {
    "neg": (lambda x: -x, lambda x: -x, False),
    "exp": (lambda x: x.exp(), torch.exp, False),
    "log": (lambda x: x.log(), torch.log, True),
    "sqrt": (lambda x: x.sqrt(), torch.sqrt, True),
    "square": (lambda x: x ** 2, lambda x: x ** 2, False),
    "cube": (lambda x: x ** 3, lambda x: x ** 3, False),
    "pow 0.5": (lambda x: x ** 0.5, lambda x: x ** 0.5, True),
    "pow -1.5": (lambda x: F.pow(x, -1.5), lambda x: x ** -1.5, True),
    "pow 0": (lambda x: x ** 0, lambda x: x ** 0, False),
    "gelu": (F.gelu, tF.gelu, False),
    "gelu tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: tF.gelu(x, approximate="tanh"), False),
    "sigmoid": (F.sigmoid, torch.sigmoid, False),
    "tanh": (F.tanh, torch.tanh, False),
    "silu": (F.silu, tF.silu, False),
}


@pytest.mark.parametrize("name,channels_last", [(name, False) for name in UNARY] +
                         [("gelu", True), ("cube", True), ("sigmoid", True)])
def test_unary(rng, name, channels_last, dtype=torch.float32):
    """Every op on NCHW memory, a few on channels-last (the same flat pass): the output keeps the layout."""
    fn, ref, positive = UNARY[name]
    x = leaf(rng, 3, 5, 2, 7, channels_last=channels_last, positive=positive, dtype=dtype)
    out = check(fn, ref, [x], rng, tol_for(dtype))
    assert is_channels_last(out.data) == channels_last
    assert out.dtype == x[0].grad.dtype == dtype


def test_unary_strided_input(rng):
    """A transposed view (no copy) goes through the strided path; the output is contiguous."""
    x, rx = leaf(rng, 7, 5)
    out = F.tanh(tnet.Tensor(x.data.t()))
    assert_close(out, torch.tanh(rx.t()), TOL["ieee"], "tanh of a transposed view")
    assert out.data.is_contiguous()


def test_tanh_accuracy():
    """Pointwise relative accuracy near 0 (the series) and across the exp branch."""
    x = torch.tensor([1e-7, -3e-4, 0.01, 0.1249, 0.1251, -0.5, 2.0, -9.0, 20.0, 0.0], dtype=torch.float64)
    y = pointwise.pointwise("tanh", x.float().to(tnet.DEVICE))
    rel = ((y.double().cpu() - torch.tanh(x.float().double())).abs() / torch.tanh(x).abs().clamp_min(1e-30))
    assert rel[:-1].max() < 2e-6 and y[-1] == 0, rel


# ---- the flat kernels: ReLU and its gradient, in-place add and scale ------------------------

def test_relu(dtype=torch.float32):
    x = randn(1000 + 7).to(dtype)
    y = pointwise.relu(x)
    assert_close(y, torch.relu(f64(x)), 0, "relu")  # exact in every dtype
    g = randn(1007).to(dtype)
    dx = pointwise.relu_backward(y, g)
    assert y.dtype == dx.dtype == dtype
    assert_close(dx, f64(g) * (f64(x) > 0), 0, "relu backward")


def test_add_scale(dtype=torch.float32):
    x, y = randn(301).to(dtype), randn(301).to(dtype)
    expect = f64(x) + f64(y)
    assert_close(pointwise.add_(x, y), expect, tol_for(dtype, 1e-7), "add_")
    s = torch.full((1,), 2.5, device=DEV)
    assert_close(pointwise.scale_(x, s), expect * 2.5, tol_for(dtype, 1e-7), "scale_")
    assert x.dtype == dtype


@pytest.mark.parametrize("dtype", LOW)
def test_elementwise_16_bit(dtype):
    test_relu(dtype)
    test_add_scale(dtype)
    x, y = randn(301), randn(301).to(dtype)  # a 16-bit gradient into an fp32 sum; a 16-bit scale
    expect = f64(x) + f64(y)
    assert_close(pointwise.add_(x, y), expect, 1e-7, "fp32 += 16-bit")
    assert_close(pointwise.scale_(x, torch.full((1,), -0.5, dtype=dtype, device=DEV)), -0.5 * expect, 1e-7, "scale_")


def test_elementwise_channels_last():
    x, g = cl_randn(2, 3, 4, 5), cl_randn(2, 3, 4, 5)
    y = pointwise.relu(x)
    assert is_channels_last(y) and torch.equal(y.cpu(), torch.relu(x).cpu())
    assert torch.equal(pointwise.relu_backward(y, g).cpu(), torch.where(x > 0, g, 0.0).cpu())
    with pytest.raises(ValueError, match="laid out alike"):
        pointwise.add_(x, g.contiguous())


# ---- 16-bit storage: fp32 math, outputs and gradients in the inputs' dtype ------------------

@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("op", BINARY)
def test_binary_16_bit(rng, dtype, op):
    test_binary_broadcast(rng, op, ((2, 3, 5, 7), (3, 1, 1)), dtype)
    check(lambda t: 3 - t * 1.5, lambda t: 3 - t * 1.5, [leaf(rng, 3, 7, dtype=dtype)], rng, tol_for(dtype))


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", UNARY)
def test_unary_16_bit(rng, dtype, name):
    test_unary(rng, name, name == "gelu", dtype)


@pytest.mark.parametrize("a,b", [(torch.bfloat16, torch.float32), (torch.float16, torch.bfloat16),
                                 (torch.float32, torch.float16)])
def test_type_promotion(rng, a, b):
    """Mixed dtypes as in PyTorch: the wider dtype, fp32 for bf16 with fp16; a 0-d tensor or a number
    does not widen a tensor with dims. Each gradient comes back in its operand's dtype."""
    x, y = leaf(rng, 3, 5, dtype=a), leaf(rng, 5, positive=True, dtype=b)
    out = check(lambda s, t: s * t - s / t, lambda s, t: s * t - s / t, [x, y], rng, TOL["bf16"])
    assert out.dtype == torch.promote_types(a, b) and x[0].grad.dtype == a and y[0].grad.dtype == b
    x, s = leaf(rng, 3, 5, dtype=a), leaf(rng, dtype=b)
    out = check(lambda t, u: t * u + 2.5, lambda t, u: t * u + 2.5, [x, s], rng, TOL["bf16"])
    assert out.dtype == (x[1].to(a) * s[1].detach().to(b)).dtype == a and s[0].grad.dtype == b


def test_modules(rng):
    x = leaf(rng, 3, 5, 7)
    for module, ref in [(nn.GELU(), tF.gelu), (nn.GELU("tanh"), lambda t: tF.gelu(t, approximate="tanh")),
                        (nn.SiLU(), tF.silu), (nn.Sigmoid(), torch.sigmoid), (nn.Tanh(), torch.tanh)]:
        assert_close(module(x[0]), ref(x[1]), TOL["ieee"], repr(module))
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"


def test_bad_input(rng):
    x = tnet.tensor(rng.standard_normal((3, 4)))
    cases = [(lambda: F.add(x, "a"), "tnet.Tensor or a Python number"),
             (lambda: F.mul(2, 3), "must be a tnet.Tensor"),
             (lambda: x + tnet.tensor(np.ones((4, 3))), "do not broadcast"),
             (lambda: x + tnet.tensor(np.ones((3, 4), dtype=np.int64)), "floating-point"),
             (lambda: F.sum(x, 2), r"out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
             (lambda: F.mean(x, (1, -1)), "dim 1 appears multiple times"),
             (lambda: F.sum(x, 1.5), "dim must be an int"),
             (lambda: F.max(x, (0, 1)), "dim must be an int or None"),
             (lambda: F.argmax(x, -3), "out of range"),
             (lambda: F.gelu(x, "fast"), "approximate must be 'none' or 'tanh'"),
             (lambda: F.pow(x, x), "exponent must be a Python number"),
             (lambda: F.mse_loss(x, x, "avg"), "not a valid value for reduction"),
             (lambda: F.adaptive_avg_pool2d(tnet.tensor(np.ones((2, 3, 4, 4))), 2), "only output_size 1"),
             (lambda: F.exp(np.ones(3)), "must be a tnet.Tensor"),
             (lambda: F.sum(tnet.tensor(np.ones(3, dtype=np.int64))), "must be float32, float16 or bfloat16")]
    for fn, message in cases:
        with pytest.raises(ValueError, match=message):
            fn()


KERNELS = [pointwise.pointwise_kernel, pointwise.relu_kernel, pointwise.relu_backward_kernel, pointwise.add_kernel,
           pointwise.scale_kernel]


@pytest.mark.parametrize("i", config_indices(KERNELS))
def test_every_config(rng, i, monkeypatch):
    """A few of the tests above with each kernel's i-th tile config (or its last)."""
    only_ith_config(monkeypatch, KERNELS, i)
    for dtype in CONFIG_DTYPES:
        test_binary_broadcast(rng, "div", ((2, 3, 5, 7), (3, 1, 1)), dtype)
        test_unary(rng, "gelu", True, dtype)
        test_relu(dtype)
        test_add_scale(dtype)
