"""Arithmetic, element-wise functions, activations and reductions: forward and backward against
torch in float64, on odd shapes, broadcasting, numbers on either side, NCHW and channels-last."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet import nn
from tnet.kernels import pointwise, reduce
from tnet.kernels.launch import is_channels_last
from helpers import CONFIG_DTYPES, LOW, TOL, assert_close, check_op, tol_for

# The interpreter computes every branch of a tl.where in numpy, masked lanes too: log(0) warns.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

CL = torch.channels_last


def leaf(rng, *shape, channels_last=False, positive=False, values=None, dtype=torch.float32):
    """A tnet leaf of dtype (channels-last memory if asked) and the float64 torch leaf with the same
    (rounded) values: standard normal, spread over magnitudes 0.01 to 5 (tanh's series and exp
    branches; to 2 in 16 bits, where exp(15) would overflow float16), or > 0.5."""
    big = 5.0 if dtype == torch.float32 else 2.0
    a = rng.standard_normal(shape) * rng.choice([0.01, 1.0, big], shape) if values is None else values
    a = np.abs(a) + 0.5 if positive else a
    t = tnet.tensor(a, dtype=dtype)
    ref = t.data.double().cpu().requires_grad_(True)
    if channels_last:
        t.data = t.data.contiguous(memory_format=CL)
    t.requires_grad = True
    return t, ref


def check(fn_tnet, fn_torch, inputs, rng, tol=TOL["ieee"]):
    """Forward and every input's gradient against torch; returns tnet's output."""
    return check_op(fn_tnet, fn_torch, inputs, tol, rng)


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


def test_tensor_used_twice(rng):
    check(lambda x, y: x * x + x / y - x, lambda x, y: x * x + x / y - x, [leaf(rng, 5, 7), leaf(rng, 7, positive=True)], rng)
    check(lambda x: x + x, lambda x: x + x, [leaf(rng, 3, 5)], rng)
    # u's two gradients come from an NCHW and a channels-last output: the tape adds them, so each
    # must arrive in u's layout
    fn = lambda x, y: (lambda u: (x * u).sum() + u.exp().sum())(y * 0.5)
    check(fn, fn, [leaf(rng, 2, 5, 3, 7), leaf(rng, 2, 5, 3, 7, channels_last=True)], rng)


def test_passed_on_gradients_are_not_shared(rng):
    """a + b hands both leaves the same gradient: each must own its .grad (a second backward
    accumulates into both)."""
    (a, ra), (b, rb) = leaf(rng, 4, 3), leaf(rng, 4, 3)
    for _ in range(2):
        (a + b).backward(np.ones((4, 3)))
        ((a - b) + 1).backward(np.ones((4, 3)))
    assert_close(a.grad, np.full((4, 3), 4.0), 0, "a.grad")
    assert_close(b.grad, np.zeros((4, 3)), 0, "b.grad")


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


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dim,keepdim,channels_last", [
    (None, False, False), (0, False, True), (-1, True, False), ((0, 2), False, True), ((1, 2, 3), True, True),
    ((), False, False), ((-3, 3), True, True), ((0, 2, 3), False, False)])
def test_sum_mean(rng, op, dim, keepdim, channels_last):
    x = leaf(rng, 3, 5, 4, 7, channels_last=channels_last)
    check(lambda t: getattr(t, op)(dim, keepdim), lambda t: getattr(t, op)(dim, keepdim), [x], rng)


def test_sum_each_subset_of_axes():
    """Every set of axes in both layouts, forward only: the runs of reduced axes in memory order."""
    x = torch.randn(3, 5, 4, 7, generator=torch.Generator().manual_seed(0)).to(tnet.DEVICE)
    for data, masks in ((x, range(1, 16)), (x.contiguous(memory_format=CL), range(1, 16)),
                        (x.permute(2, 0, 3, 1), (5, 6, 10))):
        for mask in masks:
            dims = tuple(d for d in range(4) if mask >> d & 1)
            assert_close(F.sum(tnet.Tensor(data), dims), data.double().sum(dims), TOL["ieee"], f"sum over {dims}")


@pytest.mark.parametrize("shape,dim", [((3, 2500), 1), ((2500, 3), 0), ((5000,), None), ((3, 1100, 5), 1)])
def test_long_sums_in_parts(rng, shape, dim, dtype=torch.float32):
    """Sums longer than reduce.CHUNK: parts, then the sum of the parts."""
    check(lambda t: F.mean(t, dim), lambda t: t.mean(dim), [leaf(rng, *shape, dtype=dtype)], rng, tol_for(dtype))


@pytest.mark.parametrize("shape", [(3, 37, 4, 4), (2, 32, 8, 8)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_global_average_pooling(rng, shape, channels_last):
    x = leaf(rng, *shape, channels_last=channels_last)
    check(lambda t: t.mean((2, 3)), lambda t: t.mean((2, 3)), [x], rng)
    x = leaf(rng, *shape, channels_last=channels_last)
    out = check(nn.AdaptiveAvgPool2d(1), lambda t: tF.adaptive_avg_pool2d(t, (1, 1)), [x], rng)
    assert out.shape == (shape[0], shape[1], 1, 1)


@pytest.mark.parametrize("dim,keepdim,channels_last", [(0, False, False), (1, True, True), (2, False, True),
                                                       (-1, False, False), (3, True, True)])
def test_max_dim_with_ties(rng, dim, keepdim, channels_last, dtype=torch.float32):
    """Values of few levels, so most rows hold ties: the first index, like torch's, gets the gradient."""
    x = leaf(rng, 3, 5, 4, 7, channels_last=channels_last, values=rng.integers(0, 3, (3, 5, 4, 7)).astype(float),
             dtype=dtype)
    out = x[0].max(dim, keepdim)
    ref = x[1].max(dim, keepdim)
    assert out.indices.dtype == torch.int64 and np.array_equal(out.indices.numpy(), ref.indices.numpy())
    assert np.array_equal(F.argmax(x[0], dim, keepdim).numpy(), torch.argmax(x[1], dim, keepdim).numpy())
    check(lambda t: t.max(dim, keepdim).values, lambda t: t.max(dim, keepdim).values, [x], rng, tol_for(dtype))


def test_max_ties_across_parts(monkeypatch):
    """A max over three parts (of 64 here), tied in different parts: the first index."""
    monkeypatch.setattr(reduce, "CHUNK", 64)
    n = 150
    x = torch.zeros(3, n, 5)
    x[:, n - 3] = x[:, 7] = x[1, n // 2] = 1.0
    values, indices = F.max(tnet.tensor(x), 1)
    assert np.array_equal(indices.numpy(), x.argmax(1).numpy()) and (indices.numpy() == 7).all()
    assert F.argmax(tnet.tensor(x[1:, :, 1:])).item() == x[1:, :, 1:].argmax().item() == 28


@pytest.mark.parametrize("channels_last", [False, True])
def test_global_max_and_argmax(rng, channels_last):
    """max() shares the gradient among tied maxima, as torch does; argmax() counts in row-major order."""
    values = rng.integers(0, 4, (2, 3, 4, 5)).astype(float)
    x = leaf(rng, 2, 3, 4, 5, channels_last=channels_last, values=values)
    check(lambda t: t.max(), lambda t: t.max(), [x], rng)
    values = rng.standard_normal((2, 3, 4, 5))
    x = leaf(rng, 2, 3, 4, 5, channels_last=channels_last, values=values)
    assert x[0].argmax().item() == values.argmax() and x[0].argmax().dtype == torch.int64
    assert x[0].argmax(keepdim=True).shape == (1, 1, 1, 1)


def test_max_propagates_nan():
    x = torch.tensor([[1.0, float("nan"), 3.0], [2.0, 5.0, 4.0]])
    values, indices = F.max(tnet.tensor(x), 1)
    ref = x.max(1)
    assert np.isnan(values.numpy()[0]) and values.numpy()[1] == 5.0
    assert np.array_equal(indices.numpy(), ref.indices.numpy())
    assert np.isnan(F.max(tnet.tensor(x)).item())


# ---- 16-bit storage: fp32 math, outputs and gradients in the inputs' dtype -------------------

@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("op", BINARY)
def test_binary_16_bit(rng, dtype, op):
    test_binary_broadcast(rng, op, ((2, 3, 5, 7), (3, 1, 1)), dtype)
    check(lambda t: 3 - t * 1.5, lambda t: 3 - t * 1.5, [leaf(rng, 3, 7, dtype=dtype)], rng, tol_for(dtype))


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", UNARY)
def test_unary_16_bit(rng, dtype, name):
    test_unary(rng, name, name == "gelu", dtype)


@pytest.mark.parametrize("dtype", LOW)
def test_reductions_16_bit(rng, dtype):
    """Sums in fp32 (in parts too), each result rounded once; maxima with ties; argmax."""
    for op, dim, cl in (("sum", None, False), ("mean", (0, 2, 3), True), ("sum", 1, True)):
        x = leaf(rng, 3, 5, 4, 7, channels_last=cl, dtype=dtype)
        out = check(lambda t: getattr(t, op)(dim), lambda t: getattr(t, op)(dim), [x], rng, tol_for(dtype))
        assert out.dtype == x[0].grad.dtype == dtype
    test_long_sums_in_parts(rng, (3, 2500), 1, dtype)
    test_max_dim_with_ties(rng, 1, True, True, dtype)
    x = leaf(rng, 2, 3, 4, 5, values=rng.integers(0, 4, (2, 3, 4, 5)).astype(float), dtype=dtype)
    check(lambda t: t.max(), lambda t: t.max(), [x], rng, tol_for(dtype))
    assert x[0].argmax().item() == x[1].argmax().item()


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


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(rng, reduction):
    inputs = [leaf(rng, 5, 7, 3), leaf(rng, 5, 7, 3)]
    check(lambda a, b: F.mse_loss(a, b, reduction), lambda a, b: tF.mse_loss(a, b, reduction=reduction), inputs, rng)
    inputs = [leaf(rng, 5, 7, 3), leaf(rng, 5, 7, 3)]
    check(nn.MSELoss(reduction), torch.nn.MSELoss(reduction=reduction), inputs, rng)


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


KERNELS = [(pointwise, "pointwise_kernel", pointwise.pointwise_kernel.all_configs), (reduce, "reduce_kernel", reduce._REDUCE_CONFIGS)]


@pytest.mark.parametrize("i", range(max(len(configs) for *_, configs in KERNELS)))
def test_every_config(rng, i, monkeypatch):
    """A few of the tests above with each kernel's i-th tile config (or its last): on the GPU the
    others run only the first (TNET_AUTOTUNE=0). `chosen` is emptied: it remembers the config
    a tuning key ran with before. Sums split into parts of 64, for short CPU runs."""
    for module, name, configs in KERNELS:
        monkeypatch.setattr(getattr(module, name), "configs", [configs[min(i, len(configs) - 1)]])
        monkeypatch.setattr(getattr(module, name), "chosen", {})
    monkeypatch.setattr(reduce, "CHUNK", 64)
    for dtype in CONFIG_DTYPES:
        test_binary_broadcast(rng, "div", ((2, 3, 5, 7), (3, 1, 1)), dtype)
        test_unary(rng, "gelu", True, dtype)
        test_long_sums_in_parts(rng, (3, 150, 5), 1, dtype)
        check(lambda t: t.mean((2, 3)), lambda t: t.mean((2, 3)), [leaf(rng, 3, 37, 4, 4, dtype=dtype)], rng,
              tol_for(dtype))
        test_max_dim_with_ties(rng, 1, False, True, dtype)
    test_max_ties_across_parts(monkeypatch)
