"""torch's element-wise functions (floor ... erf), the activations softplus ... softmin and their nn
modules, and lerp, addcmul, addcdiv, masked_fill, tril and triu (functional/pointwise.py): values and
gradients against torch in float64 on odd shapes and at NaN, +-inf, +-0 and the kinks; integer and
bool inputs; the names at the top level, in functional and as Tensor methods where torch has them."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet import nn
from tnet.kernels.launch import is_channels_last
from helpers import LOW, MEMORY_OPS, TOL, Recorder, check, dev, host, leaf, tol_for

# The interpreter computes every branch of a tl.where in numpy, masked lanes too: log(0) warns.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

MATH = ["floor", "ceil", "round", "trunc", "sign", "log1p", "expm1", "sin", "cos", "reciprocal", "rsqrt", "log2",
        "log10", "exp2", "square", "erf"]
POSITIVE = {"log1p", "reciprocal", "rsqrt", "log2", "log10"}  # their random inputs are > 0.5

# name: (tnet's, torch's); the numbers are the parameters each is tested with
ACTIVATIONS = {
    "softplus": (lambda x: F.softplus(x), tF.softplus),
    "softplus 2 1": (lambda x: F.softplus(x, 2.0, 1.0), lambda x: tF.softplus(x, 2.0, 1.0)),
    "mish": (F.mish, tF.mish),
    "selu": (F.selu, tF.selu),
    "celu 0.7": (lambda x: F.celu(x, 0.7), lambda x: tF.celu(x, 0.7)),
    "logsigmoid": (F.logsigmoid, tF.logsigmoid),
    "softsign": (F.softsign, tF.softsign),
    "tanhshrink": (F.tanhshrink, tF.tanhshrink),
    "hardtanh": (F.hardtanh, tF.hardtanh),
    "hardtanh -0.5 1.5": (lambda x: F.hardtanh(x * 1, -0.5, 1.5, True), lambda x: tF.hardtanh(x * 1, -0.5, 1.5, True)),
    "relu6": (lambda x: F.relu6(x * 4), lambda x: tF.relu6(x * 4)),
    "threshold": (lambda x: F.threshold(x, 0.5, -2.0), lambda x: tF.threshold(x, 0.5, -2.0)),
    "hardshrink": (F.hardshrink, tF.hardshrink),
    "softshrink 1.5": (lambda x: F.softshrink(x, 1.5), lambda x: tF.softshrink(x, 1.5)),
    "elu": (F.elu, tF.elu),
}

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 6.0, 1e-6, -3e-5, 30.0, -30.0,
           7.3, -0.999]


# The gradient at NaN of torch's CUDA kernels, which tnet follows, where torch's float64 CPU one
# differs: elu's family takes its x > 0 branch, hardtanh's and the shrinks' pass g (their CPU
# vector loops give 0; aten/src/ATen/native/cuda/ActivationHardtanhKernel.cu, ...SoftshrinkKernel.cu).
NAN_GRAD = {"selu": 1.0507009873554805, "celu 0.7": 1.0, "elu": 1.0, "hardtanh": 1.0, "hardtanh -0.5 1.5": 1.0,
            "relu6": 4.0, "hardshrink": 1.0, "softshrink 1.5": 1.0}


def _at_special(fn, ref, nan_grad=None):
    """Values and gradients at SPECIAL element by element against torch's in float64 (of the float32
    inputs), NaN matching NaN; nan_grad: the gradient at NaN (SPECIAL[0]) instead of float64's."""
    x = tnet.tensor(SPECIAL, requires_grad=True)
    rx = x.memory.double().cpu().requires_grad_(True)
    y, ry = fn(x), ref(rx)
    np.testing.assert_allclose(y.numpy(), ry.detach().numpy(), rtol=2e-6, atol=1e-7, equal_nan=True)
    y.backward(np.ones(len(SPECIAL)))
    ry.backward(torch.ones(len(SPECIAL), dtype=torch.float64))
    want = rx.grad.numpy()
    if nan_grad is not None:
        want[0] = nan_grad
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=2e-6, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize("name", MATH)
def test_math(rng, name):
    """Each at the top level, as a method and (where NaN, inf and 0 are in its domain) at them."""
    positive = name in POSITIVE
    check(getattr(tnet, name), getattr(torch, name), [leaf(rng, 3, 5, 7, positive=positive)], rng)
    check(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), [leaf(rng, 5, positive=positive)], rng)
    _at_special(getattr(tnet, name), getattr(torch, name))


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations(rng, name):
    fn, ref = ACTIVATIONS[name]
    check(fn, ref, [leaf(rng, 3, 5, 7)], rng)
    _at_special(fn, ref, NAN_GRAD.get(name))


def test_rounding_and_accuracy():
    """Ties to even, the sign of a zero, large floats, decimals; log1p and expm1 keep relative accuracy near 0."""
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999997, -0.49999997, 8388609.0, -8388607.5, 1e30, 2.0 ** 23 + 2])
    got = tnet.round(tnet.Tensor(x.to(tnet.DEVICE))).memory.cpu()
    assert torch.equal(got, torch.round(x)) and torch.equal(got.signbit(), torch.round(x).signbit())  # -0.0 as torch
    y = torch.tensor([1.2345, -1234.5, 0.125, 2.675, -0.0051, 1e-3])
    for d in (2, 1, -1, -2):
        assert torch.equal(tnet.round(tnet.Tensor(y.to(tnet.DEVICE)), decimals=d).memory.cpu(), torch.round(y, decimals=d))
    tiny = torch.tensor([1e-7, -3e-6, 2e-4, -0.01, 0.3, -0.7, 5.0])
    for name in ("log1p", "expm1"):
        got = getattr(tnet, name)(tnet.Tensor(tiny.to(tnet.DEVICE))).memory.double().cpu()
        want = getattr(torch, name)(tiny.double())
        assert ((got - want).abs() / want.abs()).max() < 2e-6, name


def test_integer_and_bool_inputs():
    """Step functions, sign, square and abs keep an integer dtype, as torch's; the floating ones
    compute on float32; bool tensors raise where torch's do."""
    i = torch.tensor([[-3, 0, 4], [7, -1, 2]])
    b = torch.tensor([True, False])
    for name in ("floor", "ceil", "round", "trunc", "sign", "square", "abs", "sin", "exp2", "reciprocal", "erf"):
        got, want = getattr(tnet, name)(tnet.tensor(i)), getattr(torch, name)(i)
        assert got.dtype == want.dtype and np.allclose(got.numpy(), want.numpy()), name
    for name in ("sign", "square", "log1p"):
        got, want = getattr(tnet, name)(tnet.tensor(b)), getattr(torch, name)(b)
        assert got.dtype == want.dtype and np.allclose(got.numpy(), want.numpy()), name
    for name in ("floor", "round", "abs"):
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):  # torch's kind and message
            getattr(tnet, name)(tnet.tensor(b))
    with pytest.raises(RuntimeError, match="floating-point"):
        F.softplus(tnet.tensor(i))


INTEGER_INPUTS = [torch.tensor([[-3, 0, 4], [7, -1, 2**40 + 1]]), torch.tensor([[-3, 0], [9, 2]], dtype=torch.int32),
                  torch.tensor([[True, False, True]])]


@pytest.mark.parametrize("x", INTEGER_INPUTS, ids=["int64", "int32", "bool"])
def test_integer_inputs_promote_to_float32(x):
    """exp, log, sqrt, sigmoid, tanh, logit, softsign, tanhshrink, the MATH functions and pow with a
    float exponent compute integers and bools in float32, as torch's type promotion."""
    ours = [(tnet.exp, torch.exp), (tnet.log, torch.log), (tnet.sqrt, torch.sqrt), (tnet.sigmoid, torch.sigmoid),
            (tnet.tanh, torch.tanh), (tnet.logit, torch.logit), (lambda v: v ** 0.5, lambda v: v ** 0.5),
            (lambda v: v.exp(), lambda v: v.exp()), (lambda v: v.sigmoid(), lambda v: v.sigmoid())]
    ours += [(getattr(tnet, n), getattr(torch, n)) for n in ("log1p", "expm1", "rsqrt", "log2", "log10", "sin", "cos")]
    if x.dtype != torch.bool:  # torch's abs and sub take no bools
        ours += [(F.softsign, tF.softsign), (F.tanhshrink, tF.tanhshrink)]
    for fn, ref in ours:
        got, want = fn(dev(x)), ref(x)
        assert got.dtype == want.dtype == torch.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("x", INTEGER_INPUTS, ids=["int64", "int32", "bool"])
def test_integer_inputs_stay_integer(x):
    """relu, relu6, hardtanh, clamp with int bounds, pow with an int exponent, neg and abs keep an
    integer dtype (bool: int64 where torch's does, else torch's error), exactly past 2^24; a float
    bound gives float32."""
    top = 5 if x.dtype == torch.int32 else 2**40  # torch's int32 takes no bound past 2^31
    cases = [(lambda v: tnet.clamp(v, -2, 3), lambda v: torch.clamp(v, -2, 3)),
             (lambda v: v.clamp(max=top), lambda v: v.clamp(max=top)),
             (lambda v: tnet.clamp(v, min=-1.5), lambda v: torch.clamp(v, min=-1.5)),
             (lambda v: v ** 0, lambda v: v ** 0), (lambda v: v.pow(3), lambda v: v.pow(3)),
             (lambda v: tnet.pow(v, 2), lambda v: torch.pow(v, 2))]
    if x.dtype != torch.bool:
        cases += [(F.relu, tF.relu), (F.relu6, tF.relu6), (lambda v: F.hardtanh(v, -1.5, 2.5),
                                                           lambda v: tF.hardtanh(v, -1.5, 2.5)),
                  (tnet.neg, torch.neg), (tnet.abs, torch.abs), (lambda v: -v, lambda v: -v)]
    for fn, ref in cases:
        got, want = fn(dev(x)), ref(x)
        assert got.dtype == want.dtype and torch.equal(host(got), want), (got, want)
    if x.dtype == torch.bool:
        for fn, match in [(F.relu, "Boolean inputs"), (F.relu6, "Bool inputs"), (tnet.neg, "Negation")]:
            with pytest.raises(RuntimeError, match=match):
                fn(dev(x))
    else:
        with pytest.raises(RuntimeError, match="negative integer powers"):
            tnet.pow(dev(x), -1)
        t = dev(x)
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            t.exp_()
        assert torch.equal(t.clamp_(0, 3).memory.cpu(), x.clamp(0, 3))


def test_tensor_math(rng):
    """lerp with a number and a tensor weight, addcmul and addcdiv, broadcasting; masked_fill with a
    number and a 0-d tensor; tril and triu of a batch, each with its gradients."""
    check(lambda a, b: tnet.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3), [leaf(rng, 3, 5), leaf(rng, 5)], rng)
    check(lambda a, b, w: a.lerp(b, w), lambda a, b, w: a.lerp(b, w),
          [leaf(rng, 3, 1), leaf(rng, 5), leaf(rng, 2, 1, 5)], rng)
    check(lambda a, b, c: tnet.addcmul(a, b, c, value=-0.7), lambda a, b, c: torch.addcmul(a, b, c, value=-0.7),
          [leaf(rng, 5), leaf(rng, 3, 5), leaf(rng, 2, 1, 1)], rng)
    check(lambda a, b, c: a.addcdiv(b, c, value=2), lambda a, b, c: a.addcdiv(b, c, value=2),
          [leaf(rng, 3, 5), leaf(rng, 1, 5), leaf(rng, 3, 1, positive=True)], rng)
    mask = rng.random((3, 1, 7)) < 0.5
    m, rm = tnet.tensor(mask), torch.tensor(mask)
    check(lambda x: tnet.masked_fill(x, m, -1.5), lambda x: torch.masked_fill(x, rm, -1.5), [leaf(rng, 5, 7)], rng)
    check(lambda x, v: x.masked_fill(m, v), lambda x, v: x.masked_fill(rm, v), [leaf(rng, 3, 5, 7), leaf(rng)], rng)
    for d in (0, -1, 2):
        check(lambda x: tnet.tril(x, d), lambda x: torch.tril(x, d), [leaf(rng, 2, 4, 5)], rng)
        check(lambda x: x.triu(d), lambda x: x.triu(d), [leaf(rng, 5, 3)], rng)
    x = tnet.tensor([[np.nan, 1.0], [2.0, np.inf]])
    assert np.array_equal(tnet.triu(x).numpy(), [[np.nan, 1.0], [0.0, np.inf]], equal_nan=True)
    ints = tnet.tensor(np.arange(12).reshape(3, 4))
    assert torch.equal(tnet.tril(ints).memory.cpu(), torch.tril(torch.arange(12).reshape(3, 4)))
    filled = ints.masked_fill(tnet.tensor([True, False, False, True]), 2.7)
    assert torch.equal(host(filled), torch.arange(12).reshape(3, 4).masked_fill(torch.tensor([1, 0, 0, 1]).bool(), 2.7))


def test_glu_softmin_and_layout(rng):
    check(lambda x: F.glu(x, 1), lambda x: tF.glu(x, 1), [leaf(rng, 3, 6, 5)], rng)
    check(lambda x: F.softmin(x, -1), lambda x: tF.softmin(x, -1), [leaf(rng, 3, 7)], rng)
    x = leaf(rng, 2, 5, 3, 3, channels_last=True)
    out = check(lambda t: F.mish(t).sin(), lambda t: tF.mish(t).sin(), [x], rng)
    assert is_channels_last(out.memory)


@pytest.mark.parametrize("dtype", LOW)
def test_16_bit(rng, dtype):
    for fn, ref in [(F.softplus, tF.softplus), (tnet.erf, torch.erf), (tnet.rsqrt, torch.rsqrt)]:
        x = leaf(rng, 3, 7, positive=True, dtype=dtype)
        out = check(fn, ref, [x], rng, tol_for(dtype))
        assert out.dtype == x[0].grad.dtype == dtype
    a, b = leaf(rng, 3, 7, dtype=dtype), leaf(rng, 7, dtype=dtype)
    check(lambda s, t: tnet.lerp(s, t, 0.6), lambda s, t: torch.lerp(s, t, 0.6), [a, b], rng, tol_for(dtype))


def test_modules(rng):
    x, rx = leaf(rng, 3, 4, 5)
    cases = [(nn.Softplus(2.0, 1.0), torch.nn.Softplus(2.0, 1.0)), (nn.Mish(), torch.nn.Mish()),
             (nn.SELU(), torch.nn.SELU()), (nn.CELU(0.5), torch.nn.CELU(0.5)), (nn.LogSigmoid(), torch.nn.LogSigmoid()),
             (nn.Softsign(), torch.nn.Softsign()), (nn.Tanhshrink(), torch.nn.Tanhshrink()),
             (nn.Hardtanh(-0.5, 2.0), torch.nn.Hardtanh(-0.5, 2.0)), (nn.Threshold(0.1, 20), torch.nn.Threshold(0.1, 20)),
             (nn.Hardshrink(), torch.nn.Hardshrink()), (nn.Softshrink(0.3), torch.nn.Softshrink(0.3)),
             (nn.GLU(1), torch.nn.GLU(1)), (nn.Softmin(1), torch.nn.Softmin(1)), (nn.ReLU6(), torch.nn.ReLU6()),
             (nn.Hardtanh(inplace=True), torch.nn.Hardtanh()), (nn.SELU(True), torch.nn.SELU())]
    for module, ref in cases:
        inplace = getattr(module, "inplace", False)  # a leaf that requires grad refuses an in-place write, as torch's
        np.testing.assert_allclose(module(x * 1 if inplace else x).numpy(), ref(rx).detach().numpy(),
                                   rtol=TOL["ieee"], atol=1e-6)
        if not getattr(module, "inplace", False):
            assert repr(module) == repr(ref)


def test_names_follow_torch():
    """Each new name is where torch has it: the top level, functional (torch.nn.functional's, or
    torch's), Tensor methods; gelu and silu are not top-level, as in torch."""
    new = MATH + ["lerp", "addcmul", "addcdiv", "masked_fill", "tril", "triu", "softplus", "mish", "selu", "celu",
                  "logsigmoid", "softsign", "tanhshrink", "hardtanh", "threshold", "hardshrink", "softshrink", "glu",
                  "softmin", "gelu", "silu"]
    for name in new:
        assert hasattr(tnet, name) == hasattr(torch, name), name
        assert hasattr(tnet.Tensor, name) == hasattr(torch.Tensor, name), name
        assert hasattr(F, name) or not hasattr(tF, name), name
        assert (name in tnet.__all__) == hasattr(torch, name), name


def test_torch_for_memory_only(rng):
    """Every new op, forward and backward, dispatches no aten operator but allocation, fill, copy
    and views."""
    x = tnet.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = tnet.tensor(0.3, requires_grad=True)
    with Recorder() as rec:
        outs = [getattr(tnet, name)(x) for name in MATH] + [fn(x) for fn, _ in ACTIVATIONS.values()]
        outs += [tnet.round(x, decimals=2), tnet.lerp(x, x * 2, w), tnet.addcmul(x, x, x, value=2),
                 tnet.addcdiv(x, x, x + 9), x.masked_fill(x > 0, w), x.tril(-1), x.triu(1), F.glu(x), F.softmin(x, 1),
                 tnet.sign(tnet.tensor([2, -3])), tnet.floor(tnet.tensor([2, -3])), tnet.sin(tnet.tensor([2, -3]))]
        sum(o.sum() for o in outs[:-3]).backward()
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_bad_input():
    x = tnet.tensor(np.ones((3, 5)))
    cases = [(lambda: F.glu(x), RuntimeError, "Halving dimension must be even, but dimension 1 is size 5"),
             (lambda: F.glu(tnet.tensor(1.0)), RuntimeError, "does not support scalars"),
             (lambda: tnet.tril(tnet.ones(3)), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
             (lambda: x.masked_fill(tnet.tensor([1, 0, 1, 0, 1]), 0.0), RuntimeError, "only supports boolean masks"),
             (lambda: x.masked_fill(x > 0, tnet.ones(1)), RuntimeError, "0-dimensional value tensor"),
             (lambda: F.hardtanh(x, 2.0, 1.0), ValueError, "min_val cannot be greater than max_val"),
             (lambda: F.softshrink(x, -0.5), RuntimeError, "lambda must be in range"),
             (lambda: tnet.lerp(x, x.half(), 0.5), RuntimeError, "expected dtype torch.float32 for `end`"),
             (lambda: tnet.addcmul(x, x, 2.0), ValueError, "tensor2 must be a tnet.Tensor")]
    for fn, error, message in cases:
        with pytest.raises(error, match=message):
            fn()


# ---- more functions (the eighth session) ----------------------------------------------------------

# name: the random inputs' domain (None: standard normal); their SPECIAL values include the edges
MORE_MATH = {"tan": None, "acosh": "above 1", "asinh": None, "atanh": "(-1, 1)", "erfc": None, "erfinv": "(-1, 1)",
             "lgamma": None, "digamma": None, "sinc": None}
MORE_SPECIAL = SPECIAL + [3e30, -1e20, 1e-30, 0.999, 1.0001, 1.4616, -3.7, 9.0, 100.0, 0.3, -0.7, 2.0, -2.0]


def _domain(rng, kind, *shape):
    u = rng.uniform(-0.98, 0.98, shape)
    return {"above 1": 1.05 + np.abs(rng.standard_normal(shape)) * 3, "(-1, 1)": u}.get(kind)


@pytest.mark.parametrize("name", MORE_MATH)
def test_more_math(rng, name):
    """Values and gradients against torch in float64 on random inputs of the function's domain, as a
    method too; then at NaN, +-inf, +-0, the poles and edges (digamma's gradient, trigamma, not at
    the negative integers, where tnet's is inf and torch's large, nor past float32's range)."""
    kind = MORE_MATH[name]
    check(getattr(tnet, name), getattr(torch, name), [leaf(rng, 3, 5, 7, values=_domain(rng, kind, 3, 5, 7))], rng)
    check(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), [leaf(rng, 5, values=_domain(rng, kind, 5))], rng)
    x = tnet.tensor(MORE_SPECIAL, requires_grad=True)
    rx = x.memory.double().cpu().requires_grad_(True)
    y, ry = getattr(tnet, name)(x), getattr(torch, name)(rx)
    # absolute 1e-6 near the roots of lgamma and digamma (log-sums of terms near 1)
    np.testing.assert_allclose(y.numpy(), ry.detach().numpy(), rtol=2e-6, atol=1e-6, equal_nan=True)
    y.backward(np.ones(len(MORE_SPECIAL)))
    ry.backward(torch.ones(len(MORE_SPECIAL), dtype=torch.float64))
    want, got = rx.grad.numpy(), x.grad.numpy()
    xs = np.array(MORE_SPECIAL)
    keep = ~((xs < 0) & (np.floor(xs) == xs)) & (np.abs(want) < 1e38) if name == "digamma" else slice(None)
    np.testing.assert_allclose(got[keep], want[keep], rtol=1e-5, atol=1e-6, equal_nan=True)


def test_more_math_integers_aliases_and_empty():
    """Integer and bool tensors compute in float32 as torch's; the arc- aliases, fix (trunc), sgn
    (sign), negative, absolute and positive; empty tensors."""
    i = torch.tensor([[-3, 0, 4], [7, -1, 2]])
    for name in [*MORE_MATH, "deg2rad", "rad2deg", "fix", "sgn", "negative", "absolute", "positive"]:
        got, want = getattr(tnet, name)(tnet.tensor(i)), getattr(torch, name)(i)
        assert got.dtype == want.dtype and np.allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7, equal_nan=True), name
    x = torch.tensor([0.3, -0.6, 0.0, 2.5])
    for name in ("arccosh", "arcsinh", "arctanh", "deg2rad", "rad2deg", "fix", "sgn", "negative", "absolute"):
        got, want = getattr(dev(x), name)(), getattr(x, name)()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True, err_msg=name)
    t = dev(x)
    assert tnet.positive(t) is t
    with pytest.raises(RuntimeError, match="on a bool tensor is not supported"):
        tnet.positive(tnet.tensor([True]))
    for name in [*MORE_MATH, "deg2rad", "sgn"]:
        assert getattr(tnet, name)(tnet.zeros(0, 3)).shape == (0, 3), name
    rng = np.random.default_rng(3)
    for name in ("deg2rad", "rad2deg"):
        check(getattr(tnet, name), getattr(torch, name), [leaf(rng, 3, 4)], rng)


@pytest.mark.parametrize("dtype", LOW)
def test_more_math_16_bit(rng, dtype):
    for name in ("tan", "erfc", "lgamma", "sinc"):
        x = leaf(rng, 3, 7, dtype=dtype, values=rng.uniform(0.1, 1.2, (3, 7)))
        out = check(getattr(tnet, name), getattr(torch, name), [x], rng, tol_for(dtype))
        assert out.dtype == x[0].grad.dtype == dtype


def test_more_math_names_and_torch_for_memory_only(rng):
    for name in [*MORE_MATH, "arccosh", "arcsinh", "arctanh", "deg2rad", "rad2deg", "fix", "sgn", "negative",
                 "absolute", "positive"]:
        assert hasattr(tnet, name) and hasattr(tnet.Tensor, name) and name in tnet.__all__, name
        assert hasattr(tnet.Tensor, name + "_") == hasattr(torch.Tensor, name + "_"), name
        assert hasattr(tnet, name + "_") == hasattr(torch, name + "_"), name
    x = tnet.tensor(rng.uniform(0.1, 0.9, (3, 4)), requires_grad=True)
    with Recorder() as rec:
        outs = [getattr(tnet, name)(x) for name in [*MORE_MATH, "deg2rad", "rad2deg"]] + [tnet.acosh(x + 1)]
        sum(o.sum() for o in outs).backward()
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"
