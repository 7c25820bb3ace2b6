"""Batch normalisation (kernels/norm.py, F.batch_norm, nn.BatchNorm1d/2d) against torch in float64:
training and eval, GELU fused, statistics in parts, the modules' options, empty batches, every tile
config; and its accuracy beside torch fp32's own error (statistics, output, dx, dweight, dbias;
odd sizes, channels-last, 16-bit input), and NaN/inf input as torch."""
import inspect

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet import nn
from tnet.kernels import norm
from tnet.kernels.launch import is_channels_last
from helpers import CONFIG_DTYPES, LOW, TOL, assert_close, only_config, tol_for


# (shape, channels-last, weight, bias)
CASES = [((5, 3, 5, 3), False, True, True), ((5, 7, 5, 3), True, True, True), ((5, 7, 1, 1), False, False, False),
         ((5, 7), False, True, True), ((5, 3, 4), False, True, False), ((5, 3, 5, 3), True, False, False)]


def leaf(a, channels_last=False, requires_grad=True, dtype=torch.float32):
    """A tnet leaf of dtype and the float64 torch leaf with the values of the numpy array a, rounded
    to dtype first (at |x| = 1000 fp32's rounding would move the variance by 1e-5)."""
    t = tnet.tensor(a, requires_grad=requires_grad, dtype=dtype)
    ref = t.memory.double().cpu().requires_grad_(requires_grad)
    if channels_last:
        t.memory = t.memory.contiguous(memory_format=torch.channels_last)
    return t, ref


def check_backward(out, ref, pairs, rng, what, tol=TOL["ieee"]):
    g = rng.standard_normal(ref.shape)
    out.backward(g)
    ref.backward(torch.tensor(g).to(out.dtype).double())  # the seed as tnet rounds it
    for name, (t, r) in pairs.items():
        if t is not None:
            assert t.grad.dtype == t.dtype, f"{what}: gradient of {name} is {t.grad.dtype}, not {t.dtype}"
            assert_close(t.grad, r.grad, tol, f"{what}: gradient of {name}")


@pytest.mark.parametrize("shape,channels_last,affine_w,affine_b", CASES)
def test_batch_norm(rng, shape, channels_last, affine_w, affine_b, dtype=torch.float32, activation=None):
    """Three training steps that update the running statistics (the last one backward too),
    then eval mode, forward and backward. A 16-bit x keeps fp32 parameters and statistics, as
    under tnet.autocast: the statistics match torch's at fp32's tolerance, y and the gradients
    at the 16-bit one. activation='gelu': against F.gelu of torch's batch norm."""
    C = shape[1]
    tol = tol_for(dtype)
    act = tF.gelu if activation == "gelu" else lambda t: t
    w, rw = leaf(rng.standard_normal(C)) if affine_w else (None, None)
    b, rb = leaf(rng.standard_normal(C)) if affine_b else (None, None)
    rm, rv = tnet.tensor(np.zeros(C)), tnet.tensor(np.ones(C))
    trm, trv = torch.zeros(C, dtype=torch.float64), torch.ones(C, dtype=torch.float64)
    what = f"{shape} {'channels-last' if channels_last else 'contiguous'} {dtype} {activation or ''}"
    for step in range(3):
        x, rx = leaf(rng.standard_normal(shape) * 2 + 3, channels_last, dtype=dtype)
        y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, activation=activation)
        ref = act(tF.batch_norm(rx, trm, trv, rw, rb, training=True, momentum=0.1))
        assert_close(y, ref, tol, f"{what}: step {step}")
        assert_close(rm, trm, TOL["ieee"], f"{what}: running_mean {step}")
        assert_close(rv, trv, TOL["ieee"], f"{what}: running_var {step}")
        assert is_channels_last(y.memory) == channels_last and y.dtype == dtype and rm.dtype == torch.float32
    check_backward(y, ref, {"x": (x, rx), "weight": (w, rw), "bias": (b, rb)}, rng, f"{what}: training", tol)
    for t in (x, w, b):
        if t is not None:
            t.grad = None
    y = F.batch_norm(x, rm, rv, w, b, activation=activation)
    ref = act(tF.batch_norm(rx, trm, trv, rw, rb))
    assert_close(y, ref, tol, f"{what}: eval")
    for t in (rx, rw, rb):
        if t is not None:
            t.grad = None
    check_backward(y, ref, {"x": (x, rx), "weight": (w, rw), "bias": (b, rb)}, rng, f"{what}: eval", tol)


@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_on_a_channel_slice(rng, channels_last):
    """x[:, :c] (a strided view) is copied dense, in its channels' order, then normalised: values
    and gradients as torch's, through the slice into x."""
    x = tnet.tensor(rng.standard_normal((4, 6, 3, 5)), requires_grad=True)
    if channels_last:
        x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    rx = x.memory.double().cpu().requires_grad_(True)
    layer, ref_layer = nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4).double()
    for train in (True, False):
        layer.train(train), ref_layer.train(train)
        y = F.relu(layer(x[:, 1:5]))
        ref = torch.relu(ref_layer(rx[:, 1:5]))
        assert_close(y, ref, TOL["ieee"], f"training={train}")
        g = rng.standard_normal(ref.shape)
        x.grad, rx.grad = None, None
        y.backward(g)
        ref.backward(torch.tensor(g))
        assert_close(x.grad, rx.grad, TOL["ieee"], f"gradient, training={train}")
    assert_close(layer.running_var, ref_layer.running_var, TOL["ieee"], "running_var")


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[3]], ids=["nchw", "channels-last", "2-d"])
def test_batch_norm_16_bit(rng, dtype, case):
    test_batch_norm(rng, *case, dtype)


# Wider than one block of channels (16 under the interpreter, 8 in the finalize kernel)
WIDE = ((3, 37, 3, 5), True, True, True)
GELU_CASES = [CASES[0], CASES[1], CASES[3], CASES[4], WIDE]


@pytest.mark.parametrize("shape,channels_last,affine_w,affine_b", GELU_CASES,
                         ids=["nchw", "channels-last", "2-d", "3-d-no-bias", "wide"])
def test_batch_norm_gelu(rng, shape, channels_last, affine_w, affine_b):
    """activation='gelu': F.gelu(F.batch_norm(...)) in one op; the running statistics as without."""
    test_batch_norm(rng, shape, channels_last, affine_w, affine_b, activation="gelu")


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("case", [CASES[0], WIDE], ids=["nchw", "channels-last"])
def test_batch_norm_gelu_16_bit(rng, dtype, case):
    test_batch_norm(rng, *case, dtype, activation="gelu")


def test_gelu_of_batch_norm_is_erf_gelu_elementwise(rng):
    """The fused GELU and its gradient element by element, z from -12 to 12 (eval mode with mean
    0, variance 1, eps 0 and bias 0: z = x), against torch's erf GELU in float64: within
    1.5e-6 (1 + |z|), about 12 fp32 ulps of 1 (kernels/norm.py: _gelu_cdf; 3e-7 here, up to
    8e-7 with the GPU's approximate reciprocal and exp2)."""
    z = np.linspace(-12, 12, 2401).reshape(7, 7, 7, 7)
    x, rx = leaf(z)
    y = F.batch_norm(x, tnet.tensor(np.zeros(7)), tnet.tensor(np.ones(7)), eps=0.0, activation="gelu")
    ref = tF.gelu(rx)
    bound = 1.5e-6 * (1 + rx.detach().abs())
    assert (torch.as_tensor(y.numpy()).double() - ref.detach()).abs().le(bound).all(), "GELU"
    y.backward(np.ones(z.shape))
    ref.backward(torch.ones_like(ref))
    assert (torch.as_tensor(x.grad.numpy()).double() - rx.grad).abs().le(bound).all(), "GELU'"


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("activation", [None, "gelu"])
def test_batch_norm_split_into_parts(monkeypatch, rng, channels_last, activation):
    """Rows in parts as at GPU sizes (315 rows: parts of 128, 128 and 59, combined after; several
    tiles of rows per part with the tile configs of the every-config test), with |mean| =
    1000 std: a plain sum of squares would lose the variance in fp32, the sums shifted by
    a sample do not."""
    monkeypatch.setattr(norm, "ROWS_MIN", 64)
    monkeypatch.setattr(norm, "MAX_PARTS", 4)
    assert norm._row_parts(315) == (128, 3)
    a = rng.standard_normal((7, 3, 9, 5)) + 1000 * np.array([1, -1, 2])[:, None, None]
    x, rx = leaf(a, channels_last)
    rm, rv = torch.zeros(3, device=tnet.DEVICE), torch.ones(3, device=tnet.DEVICE)
    act = tF.gelu if activation == "gelu" else lambda t: t
    y, mean, invstd = norm.batch_norm_train(x.memory, None, None, 1e-5, rm, rv, 0.5, activation=activation)
    ref_var = rx.detach().var((0, 2, 3), unbiased=False)
    assert_close(mean, rx.detach().mean((0, 2, 3)), TOL["ieee"], "mean")
    assert_close(1 / invstd.double() ** 2 - 1e-5, ref_var, TOL["ieee"], "biased variance")
    assert_close(rv, 0.5 + 0.5 * rx.detach().var((0, 2, 3)).to(rv.device), TOL["ieee"], "running_var")
    # the inputs' fp32 rounding (1000 * 6e-8 against std 1) bounds y's accuracy: 1e-4
    assert_close(y, act(tF.batch_norm(rx, None, None, training=True)), 1e-4, "y")
    x, rx = leaf(rng.standard_normal((7, 3, 9, 5)), channels_last)
    w, rw = leaf(rng.standard_normal(3))
    b, rb = leaf(rng.standard_normal(3))
    y = F.batch_norm(x, None, None, w, b, training=True, activation=activation)
    ref = act(tF.batch_norm(rx, None, None, rw, rb, training=True))
    check_backward(y, ref, {"x": (x, rx), "weight": (w, rw), "bias": (b, rb)}, rng, "parts")


def test_batch_norm_cumulative_average_counts_on_the_device(rng):
    """momentum=None: the running statistics are the average over the batches so far, with
    num_batches_tracked counted by the kernels; torch's module as the reference."""
    bn, ref = nn.BatchNorm2d(3, momentum=None), torch.nn.BatchNorm2d(3, momentum=None).double()
    for step in range(3):
        x, rx = leaf(rng.standard_normal((5, 3, 5, 3)) + step, channels_last=step == 1, requires_grad=False)
        assert_close(bn(x), ref(rx), TOL["ieee"], f"step {step}")
    assert bn.num_batches_tracked.item() == 3 and bn.num_batches_tracked.dtype == torch.int64
    assert_close(bn.running_mean, ref.running_mean, TOL["ieee"], "running_mean")
    assert_close(bn.running_var, ref.running_var, TOL["ieee"], "running_var")


def torch_bn(cls, tnet_module, **kwargs):
    """The torch module of class cls with the tnet module's arguments and state, in float64."""
    ref = cls(tnet_module.num_features, **kwargs).double()
    ref.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in tnet_module.state_dict().items()})
    return ref


@pytest.mark.parametrize("kwargs", [{}, {"affine": False}, {"track_running_stats": False}, {"bias": False},
                                    {"momentum": 0.3, "eps": 1e-3}])
def test_batch_norm_modules(rng, kwargs):
    """BatchNorm1d on [N, C] and [N, C, L], BatchNorm2d on a channels-last batch: two training
    steps (forward and backward), then eval mode, against torch's modules."""
    if "bias" in kwargs and "bias" not in inspect.signature(torch.nn.BatchNorm1d).parameters:
        pytest.skip(f"torch {torch.__version__}'s BatchNorm has no bias argument to compare with")
    for cls, shape, cl in ((nn.BatchNorm1d, (5, 7), False), (nn.BatchNorm1d, (5, 3, 4), False),
                           (nn.BatchNorm2d, (5, 3, 5, 3), True)):
        bn = cls(shape[1], **kwargs)
        for p in bn.parameters():
            p.memory.copy_(torch.from_numpy(rng.standard_normal(p.shape)))
        ref = torch_bn(getattr(torch.nn, cls.__name__), bn, **kwargs)
        what = f"{cls.__name__} {shape} {kwargs}"
        for step in range(2):
            x, rx = leaf(rng.standard_normal(shape) + 2, cl)
            y, r = bn(x), ref(rx)
            assert_close(y, r, TOL["ieee"], f"{what}: step {step}")
            check_backward(y, r, {"x": (x, rx), **{n: (p, q) for (n, p), q in zip(bn.named_parameters(),
                                                                                    ref.parameters())}}, rng, what)
            for p, q in zip(bn.parameters(), ref.parameters()):
                p.grad, q.grad = None, None
        state = bn.state_dict()
        assert list(state) == list(ref.state_dict())
        for k, v in ref.state_dict().items():
            assert_close(state[k], v, TOL["ieee"], f"{what}: {k}")
        bn.eval(), ref.eval()
        x, rx = leaf(rng.standard_normal(shape), cl, requires_grad=False)
        assert_close(bn(x), ref(rx), TOL["ieee"], f"{what}: eval")
        assert_close(bn.state_dict().get("num_batches_tracked", 0), ref.state_dict().get("num_batches_tracked", 0),
                     0, "eval counts no batch")


def test_batch_norm_module_fuses_gelu(rng):
    """bn(x, activation=nn.GELU()) is nn.GELU()(bn(x)): two training steps and eval mode against
    torch's module and GELU, gradients and running statistics included; only the exact GELU fuses."""
    bn = nn.BatchNorm2d(7, eps=1e-12, momentum=0.4)
    for p in bn.parameters():
        p.memory.copy_(torch.from_numpy(rng.standard_normal(p.shape)))
    ref = torch_bn(torch.nn.BatchNorm2d, bn, eps=1e-12, momentum=0.4)
    for step in range(2):
        x, rx = leaf(rng.standard_normal((5, 7, 5, 3)) + 2, channels_last=True)
        y, r = bn(x, activation=nn.GELU()), tF.gelu(ref(rx))
        assert_close(y, r, TOL["ieee"], f"step {step}")
        check_backward(y, r, {"x": (x, rx), "weight": (bn.weight, ref.weight), "bias": (bn.bias, ref.bias)}, rng,
                       f"step {step}")
        for p, q in zip(bn.parameters(), ref.parameters()):
            p.grad, q.grad = None, None
    for k, v in ref.state_dict().items():
        assert_close(bn.state_dict()[k], v, TOL["ieee"], k)
    bn.eval(), ref.eval()
    assert_close(bn(x, activation=nn.GELU()), tF.gelu(ref(rx)), TOL["ieee"], "eval")
    for act in (nn.GELU("tanh"), nn.ReLU(), "gelu"):
        with pytest.raises(ValueError, match=r"activation must be None or nn.GELU\(\) to fuse"):
            bn(x, activation=act)
    with pytest.raises(ValueError, match="activation must be None or 'gelu', got 'relu'"):
        F.batch_norm(x, bn.running_mean, bn.running_var, activation="relu")


def test_batch_norm_bad_input(rng):
    x = tnet.tensor(rng.standard_normal((5, 3, 4, 4)))
    rm, rv = tnet.tensor(np.zeros(3)), tnet.tensor(np.ones(3))
    with pytest.raises(ValueError, match="running_mean must be a contiguous float vector of 3"):
        F.batch_norm(x, tnet.tensor(np.zeros(4)), rv, training=True)
    with pytest.raises(ValueError, match="weight must be"):
        F.batch_norm(x, rm, rv, weight=tnet.tensor(np.ones(5)))
    with pytest.raises(ValueError, match="running_var must be"):
        F.batch_norm(x, rm, tnet.tensor(np.ones(3, np.int64)))
    with pytest.raises(ValueError, match="input must be float32, float16 or bfloat16"):
        F.batch_norm(tnet.tensor(np.ones((5, 3), np.int64)), rm, rv)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(tnet.tensor(np.ones((1, 3, 1, 1))), rm, rv, training=True)
    with pytest.raises(ValueError, match="evaluation mode"):
        F.batch_norm(x, None, None)
    with pytest.raises(ValueError, match="both running_mean and running_var"):
        F.batch_norm(x, rm, None, training=True)
    with pytest.raises(ValueError, match="needs num_batches_tracked"):
        F.batch_norm(x, rm, rv, training=True, momentum=None)
    with pytest.raises(ValueError, match="tnet.Tensor"):
        F.batch_norm(x, rm.memory, rv)
    strided = F.batch_norm(tnet.Tensor(x.memory.transpose(2, 3)), rm, rv)  # copied dense: as torch, no error
    assert np.array_equal(strided.numpy(), F.batch_norm(tnet.Tensor(x.memory.transpose(2, 3).contiguous()), rm, rv).numpy())
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        nn.BatchNorm2d(3)(tnet.tensor(np.ones((5, 3))))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(x)


NORM_KERNELS = ["batch_norm_stats_kernel", "batch_norm_apply_kernel", "batch_norm_backward_reduce_kernel",
                "batch_norm_backward_kernel"]
PART_KERNELS = ["batch_norm_stats_kernel", "batch_norm_backward_reduce_kernel"]


@pytest.mark.parametrize("i", range(max(len(norm._PART_CONFIGS), len(norm._TILE_CONFIGS))))
def test_norm_kernels_every_config(i, monkeypatch, rng):
    """test_batch_norm, with and without GELU, and the split into parts with the i-th tile
    config of every kernel: on the GPU the other tests run only the first (TNET_AUTOTUNE=0)."""
    for name in NORM_KERNELS:
        configs = norm._PART_CONFIGS if name in PART_KERNELS else norm._TILE_CONFIGS
        only_config(monkeypatch, getattr(norm, name), configs[i % len(configs)])
    for dtype in CONFIG_DTYPES:
        test_batch_norm(rng, *CASES[1], dtype)
        test_batch_norm(rng, *CASES[0], dtype)
        test_batch_norm(rng, *WIDE, dtype, activation="gelu")
    test_batch_norm_split_into_parts(monkeypatch, rng, True, "gelu")
    test_batch_norm_split_into_parts(monkeypatch, rng, False, None)


@pytest.mark.parametrize("shape, channels_last", [((0, 3, 4, 4), False), ((0, 20, 2, 2), True), ((0, 3), False),
                                                   ((2, 3, 0, 4), False)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_empty_batch_as_torch(shape, channels_last, training, momentum):
    """No rows: an empty output, the running statistics unchanged (the batch still counted),
    an empty input gradient and zero parameter gradients."""
    C = shape[1]
    ours = (nn.BatchNorm2d if len(shape) == 4 else nn.BatchNorm1d)(C, momentum=momentum)
    theirs = (torch.nn.BatchNorm2d if len(shape) == 4 else torch.nn.BatchNorm1d)(C, momentum=momentum)
    ours.train(training), theirs.train(training)
    x, ref = leaf(np.zeros(shape), channels_last)
    ref = ref.float().detach().requires_grad_(True)
    y, want = ours(x), theirs(ref)
    assert y.shape == tuple(want.shape)
    F.sum(y).backward()
    want.sum().backward()
    assert x.grad.shape == tuple(ref.grad.shape)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_array_equal(getattr(ours, name).numpy(), getattr(theirs, name).numpy(), err_msg=name)
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(getattr(ours, name).grad.numpy(), getattr(theirs, name).grad.numpy(), err_msg=name)


@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 1, 1), (1, 3, 1)])
def test_batch_norm_one_value_per_channel_in_training_as_torch(shape):
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training") as theirs:
        tF.batch_norm(torch.zeros(shape), None, None, training=True)
    with pytest.raises(ValueError, match="xpected more than 1 value per channel when training") as info:
        F.batch_norm(tnet.tensor(np.zeros(shape, np.float32)), None, None, training=True)
    assert str(info.value) == str(theirs.value)  # "got input size torch.Size([1, 3])", as torch's


# ---- accuracy against float64, beside torch fp32's own error --------------------------------

@pytest.mark.parametrize("shift", [0.0, 1000.0, 1e-3])
def test_batch_stats_as_accurate_as_torch(shift):
    x = torch.tensor(np.random.default_rng(0).standard_normal((2048, 64)) + shift, dtype=torch.float32)
    ref = x.double()
    yref = (ref - ref.mean(0)) / torch.sqrt(ref.var(0, unbiased=False) + 1e-5)
    err = lambda y: ((y.double() - yref).norm() / yref.norm()).item()
    ours = err(F.batch_norm(tnet.tensor(x.numpy()), None, None, training=True).memory.cpu())
    theirs = err(tF.batch_norm(x, None, None, training=True))
    assert ours <= 4 * theirs + 1e-7, f"shift {shift}: relative error {ours:.2e}, torch fp32 {theirs:.2e}"


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_inf_like_torch(bad):
    x = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    x[2, 1] = bad
    y = F.batch_norm(tnet.tensor(x), None, None, training=True).memory.cpu()
    ref = tF.batch_norm(torch.tensor(x), None, None, training=True)
    assert torch.equal(torch.isnan(y), torch.isnan(ref)), f"NaN pattern {y} vs torch {ref}"


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_a_huge_weight_scales_the_normalised_value(training):
    """y = (w * (x - mean)) * invstd + b and eval's dx = (g * w) * invstd, as torch's CUDA: invstd * w first overflows
    to inf at w = 3e38 where y and dx are finite (fuzz seed 386, case 1401: tnet -inf, torch's CPU NaN from its folded
    x * (invstd w) + (b - mean invstd w); seed 408, case 800: dx)."""
    x = np.array([[0.1026, 0.2297], [0.5632, 0.0532]], np.float32)
    w, b = np.array([3e38, 0.063], np.float32), np.array([1.7, 2.0], np.float32)
    rm, rv = np.array([0.3329, 0.0], np.float32), np.array([0.25, 1.0], np.float32)
    got = F.batch_norm(tnet.tensor(x), tnet.tensor(rm), tnet.tensor(rv), tnet.tensor(w), tnet.tensor(b),
                       training=training).memory.cpu().double()
    mean, var = (x.mean(0), x.var(0)) if training else (rm, rv)
    want = (x - mean) / np.sqrt(var.astype(np.float64) + 1e-5) * w + b
    assert np.isfinite(got.numpy()).all(), got
    assert_close(got, want, TOL["ieee"], "y")
    if not training:
        a = tnet.tensor(x, requires_grad=True)
        y = F.batch_norm(a, tnet.tensor(rm), tnet.tensor(rv), tnet.tensor(w), tnet.tensor(b))
        y.backward(tnet.full((2, 2), 0.25))
        want = np.full((2, 2), 0.25) * w / np.sqrt(rv.astype(np.float64) + 1e-5)
        assert np.isfinite(a.grad.numpy()).all(), a.grad
        assert_close(a.grad.memory.cpu().double(), want, TOL["ieee"], "dx")


def _bn_grads(x, w, b, g, lib):
    """(y, dx, dw, db) of training-mode batch norm of x with weight w and bias b for the output
    gradient g, in lib (torch or tnet); the arrays as float64 numpy."""
    if lib is torch:
        leaves = [v.clone().requires_grad_(True) for v in (x, w, b)]
        y = tF.batch_norm(leaves[0], None, None, leaves[1], leaves[2], training=True)
        y.backward(g.to(y.dtype))
        grads = [v.grad for v in leaves]
    else:
        leaves = [tnet.tensor(v.float().numpy(), requires_grad=True, dtype=v.dtype) for v in (x, w, b)]
        if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and x.shape[1] > 1:
            leaves[0].memory = leaves[0].memory.contiguous(memory_format=torch.channels_last)
        y = F.batch_norm(leaves[0], None, None, leaves[1], leaves[2], training=True)
        y.backward(tnet.tensor(g.float().numpy(), dtype=g.dtype))
        y, grads = y.memory.cpu(), [v.grad.memory.cpu() for v in leaves]
    return [v.detach().double() for v in (y, *grads)]


def _rel(got, want):
    return ((got - want).norm() / want.norm()).item()


@pytest.mark.parametrize("shape, channels_last", [((3, 5, 7, 7), False), ((3, 5, 7, 7), True), ((4, 20, 3, 5), True),
                                                   ((37, 6), False), ((2, 3, 11), False)])
def test_batch_norm_backward_as_accurate_as_torch(shape, channels_last):
    """y, dx, dweight and dbias of the training mode against float64, within 4x of torch fp32's
    own error (+ a floor for errors that are both at rounding level)."""
    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal(shape) * 3 + 5, dtype=torch.float32)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    C = shape[1]
    w = torch.tensor(rng.standard_normal(C) + 1, dtype=torch.float32)
    b = torch.tensor(rng.standard_normal(C), dtype=torch.float32)
    g = torch.tensor(rng.standard_normal(shape), dtype=torch.float32)
    ref = _bn_grads(*(v.double() for v in (x, w, b, g)), torch)
    theirs, ours = _bn_grads(x, w, b, g, torch), _bn_grads(x, w, b, g, tnet)
    for name, o, t, r in zip(("y", "dx", "dweight", "dbias"), ours, theirs, ref):
        assert o.shape == r.shape
        assert _rel(o, r) <= 4 * _rel(t, r) + 2e-7, f"{name}: relative error {_rel(o, r):.2e}, torch fp32 {_rel(t, r):.2e}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_16_bit_input_against_float64(dtype, channels_last):
    """16-bit x and dy (fp32 weight and bias, statistics in fp32): y and dx within their dtype's
    rounding, dweight and dbias (fp32) within 1e-2 of float64 from the same rounded inputs."""
    rng = np.random.default_rng(3)
    shape = (3, 5, 7, 7)
    x = torch.tensor(rng.standard_normal(shape) * 2 - 1).to(dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.tensor(rng.standard_normal(5) + 1, dtype=torch.float32)
    b = torch.tensor(rng.standard_normal(5), dtype=torch.float32)
    g = torch.tensor(rng.standard_normal(shape)).to(dtype)
    ref = _bn_grads(*(v.double() for v in (x, w, b, g)), torch)
    ours = _bn_grads(x, w, b, g, tnet)
    bound = 1e-2 if dtype == torch.bfloat16 else 2e-3
    for name, o, r in zip(("y", "dx", "dweight", "dbias"), ours, ref):
        assert _rel(o, r) <= bound, f"{name}: relative error {_rel(o, r):.2e} (bound {bound:.0e})"


# ---- layer and group normalisation, embeddings (composed of other kernels) ----------------------

def test_layer_norm_group_norm_and_embedding_as_torch(rng):
    """LayerNorm over one and two trailing dims (with and without affine or bias), GroupNorm on a
    channels-last activation, Embedding with a padding row (no gradient there), against torch in
    float64: values and every gradient."""
    from helpers import check, leaf
    for shape, norm_shape, kwargs in (((3, 5, 8), 8, {}), ((2, 3, 4, 5), (4, 5), {"bias": False}),
                                      ((4, 6), 6, {"elementwise_affine": False})):
        mine, ref = nn.LayerNorm(norm_shape, **kwargs), torch.nn.LayerNorm(norm_shape, **kwargs).double()
        for p, r in zip(mine.parameters(), ref.parameters()):
            values = rng.standard_normal(p.shape)
            p.memory.copy_(torch.from_numpy(values))
            r.data.copy_(torch.from_numpy(values))
        check(mine, ref, [leaf(rng, *shape)], rng)
        for p, r in zip(mine.parameters(), ref.parameters()):
            assert_close(p.grad, r.grad, TOL["ieee"], f"LayerNorm{norm_shape} parameter gradient")
    w, b = leaf(rng, 8), leaf(rng, 8)
    check(lambda x, w, b: F.group_norm(x, 4, w, b), lambda x, w, b: tF.group_norm(x, 4, w, b),
          [leaf(rng, 3, 8, 5, 5, channels_last=True), w, b], rng)
    assert tuple(nn.GroupNorm(2, 8)(tnet.randn(2, 8, 3, 3)).shape) == (2, 8, 3, 3)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(tnet.randn(2, 6, 3), 4)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(tnet.randn(2, 6), (5,))
    table = leaf(rng, 7, 4)
    idx = np.array([[1, 3, 3], [6, 1, 0]])
    check(lambda t: F.embedding(tnet.tensor(idx), t, padding_idx=3),
          lambda t: tF.embedding(torch.tensor(idx), t, padding_idx=3), [table], rng)
    e = nn.Embedding(10, 3, padding_idx=-1)
    assert e.padding_idx == 9 and not e.weight.numpy()[9].any() and e(tnet.tensor([9, 2])).shape == (2, 3)
    vectors = tnet.tensor(rng.standard_normal((4, 3)))
    frozen, tuned = nn.Embedding.from_pretrained(vectors), nn.Embedding.from_pretrained(vectors, freeze=False,
                                                                                          padding_idx=1)
    assert not frozen.weight.requires_grad and tuned.weight.requires_grad and tuned.padding_idx == 1
    assert np.array_equal(frozen(tnet.tensor([3, 0])).numpy(), vectors.numpy()[[3, 0]])
    tuned.weight.data.zero_()  # a copy: the pretrained vectors stay
    assert vectors.numpy().any() and frozen.weight.numpy().any()
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.Embedding.from_pretrained(tnet.ones(3))


NATIVE_NORMS = {  # (tnet's call, torch's, the input's shape and layout, the weight's and bias's shapes)
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (7,), w, b), lambda x, w, b: tF.layer_norm(x, (7,), w, b),
                   (3, 5, 7), False, (7,), (7,)),
    "layer_norm_two_dims": (lambda x, w: F.layer_norm(x, (4, 5), w), lambda x, w: tF.layer_norm(x, (4, 5), w),
                            (2, 3, 4, 5), False, (4, 5), None),
    "layer_norm_whole_input": (lambda x, w, b: F.layer_norm(x, (11,), w, b), lambda x, w, b: tF.layer_norm(x, (11,), w, b),
                               (11,), False, (11,), (11,)),
    "group_norm": (lambda x, w, b: F.group_norm(x, 4, w, b), lambda x, w, b: tF.group_norm(x, 4, w, b),
                   (3, 8, 5, 5), True, (8,), (8,)),
    "group_norm_plain": (lambda x: F.group_norm(x, 3), lambda x: tF.group_norm(x, 3), (2, 6, 7), False, None, None),
    "instance_norm": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                      lambda x, w, b: tF.instance_norm(x, weight=w, bias=b), (2, 3, 4, 6), False, (3,), (3,)),
    "rms_norm": (lambda x, w: F.rms_norm(x, (7,), w, 1e-6), lambda x, w: tF.rms_norm(x, (7,), w, 1e-6), (3, 5, 7),
                 False, (7,), None),
    "rms_norm_plain": (lambda x: F.rms_norm(x, (4, 5), eps=1e-6), lambda x: tF.rms_norm(x, (4, 5), eps=1e-6),
                       (2, 3, 4, 5), False, None, None),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_group_norm_kernels_over_many_loop_steps_and_parts(monkeypatch, rng, dtype):
    """kernels/group_norm.py with small steps: groups of many loop steps (NCHW, channels-last, a layer norm's
    rows, a transposed view), the weight gradients' pairs in several parts, a gradient laid out unlike x (copied),
    the weight's gradient alone; against torch in float64 (16-bit x with float32 parameters, as torch's layers)."""
    from helpers import check, leaf
    from tnet.kernels import group_norm
    for name, value in (("ROW_BLOCK", 16), ("PART", 32), ("PAIRS", 16), ("CHANNELS", 16)):
        monkeypatch.setattr(group_norm, name, value)
    tol = tol_for(dtype)
    for shape, channels_last in (((3, 8, 5, 6), False), ((3, 8, 5, 6), True), ((2, 8, 41), False)):
        w, b = leaf(rng, 8), leaf(rng, 8)
        check(lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: tF.group_norm(x, 2, w, b),
              [leaf(rng, *shape, channels_last=channels_last, dtype=dtype), w, b], rng, tol)
    w, b = leaf(rng, 40), leaf(rng, 40)
    check(lambda x, w, b: F.layer_norm(x, (40,), w, b), lambda x, w, b: tF.layer_norm(x, (40,), w, b),
          [leaf(rng, 70, 40, dtype=dtype), w, b], rng, tol)
    check(lambda x, w: F.layer_norm(x.t(), (9,), w), lambda x, w: tF.layer_norm(x.t(), (9,), w),
          [leaf(rng, 9, 33, dtype=dtype), leaf(rng, 9)], rng, tol)
    check(lambda x, w: F.rms_norm(x.t(), (9,), w, 1e-6), lambda x, w: tF.rms_norm(x.t(), (9,), w, 1e-6),
          [leaf(rng, 9, 33, dtype=dtype), leaf(rng, 9)], rng, tol)
    x = tnet.tensor(rng.standard_normal((6, 8, 7)), dtype=dtype)
    (mine, ref), (bias, ref_bias) = leaf(rng, 8), leaf(rng, 8)
    F.group_norm(x, 4, mine, bias).sum().backward()
    tF.group_norm(x.memory.double().cpu(), 4, ref, ref_bias).sum().backward()
    assert_close(mine.grad, ref.grad, tol, "the weight's gradient alone")
    assert_close(bias.grad, ref_bias.grad, tol, "the bias's gradient alone")


@pytest.mark.parametrize("case", NATIVE_NORMS)
def test_layer_group_and_instance_norms_as_torch_to_1e_6(rng, case):
    """The layer, group and instance norms' values and gradients (input, weight, bias), one node each whose backward
    is torch's native formula, against torch in float64 to 1e-6 relative in float32; and the 16-bit input's
    (float32 weights, as torch's layers keep them), to bfloat16's rounding."""
    from helpers import check, leaf
    fn, ref_fn, shape, channels_last, *params = NATIVE_NORMS[case]
    params = [leaf(rng, *p) for p in params if p is not None]
    check(fn, ref_fn, [leaf(rng, *shape, channels_last=channels_last), *params], rng, tol=1e-6)
    low, low_ref = leaf(rng, *shape, dtype=torch.bfloat16)
    out = fn(low, *(t for t, _ in params))
    assert out.dtype == torch.bfloat16
    assert_close(out, ref_fn(low_ref, *(r for _, r in params)), TOL["bf16"], "bfloat16 forward")


@pytest.mark.parametrize("call", [lambda m, x, v: m.nn.functional.layer_norm(x, (4,), v(2, 2)),
                                  lambda m, x, v: m.nn.functional.layer_norm(x, (4,), None, v(4, 1)),
                                  lambda m, x, v: m.nn.functional.rms_norm(x, (4,), v(2, 2)),
                                  lambda m, x, v: m.nn.functional.group_norm(x.reshape(2, 4, 3), 2, v(4, 1)),
                                  lambda m, x, v: m.nn.functional.group_norm(x.reshape(2, 4, 3), 2, None, v(5)),
                                  lambda m, x, v: m.nn.functional.layer_norm(x, (4,), v(4), v(4).half())])
def test_norm_parameters_of_the_wrong_shape_or_of_two_dtypes_raise_as_torch(rng, call):
    """A weight or bias of normalized_shape's numel but another shape (or not a vector of C for the group norm), and a
    weight and bias of two dtypes, raise torch's RuntimeError (tnet's reshape took the first two)."""
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    with pytest.raises(RuntimeError) as want:
        call(torch, torch.tensor(x), lambda *s: torch.ones(s))
    with pytest.raises(RuntimeError) as got:
        call(tnet, tnet.tensor(x), lambda *s: tnet.ones(s))
    assert str(got.value).split(",")[0] == str(want.value).split(",")[0]


@pytest.mark.parametrize("shape", [4, True, np.int64(4)])
def test_rms_norm_takes_a_sequence_only_as_torch(shape):
    """F.rms_norm's normalized_shape is a sequence of ints: an int raises torch's TypeError with its message (tnet
    took it, as layer_norm's parser does); nn.RMSNorm(4) still makes it a tuple."""
    x = np.ones((2, 4), np.float32)
    with pytest.raises(TypeError) as want:
        tF.rms_norm(torch.tensor(x), shape)
    with pytest.raises(TypeError) as got:
        F.rms_norm(tnet.tensor(x), shape)
    assert str(got.value).split(",")[0].split(" not ")[0] == str(want.value).split(",")[0].split(" not ")[0]
    assert_close(nn.RMSNorm(4)(tnet.tensor(x)), torch.nn.RMSNorm(4)(torch.tensor(x)), 1e-6, "nn.RMSNorm(4)")


@pytest.mark.parametrize("norm_fn", [lambda lib, x: lib.nn.functional.instance_norm(x),
                                     lambda lib, x: lib.nn.functional.layer_norm(x, (4,))], ids=["instance", "layer"])
def test_norm_output_written_in_place_keeps_the_gradient(rng, norm_fn):
    """A norm without weight and bias whose output a ReLU(inplace=True) writes (CycleGAN's InstanceNorm2d, ReLU(True)):
    the backward recomputes the normalised values from the input, as torch's keeps the input, not the output."""
    a, seed = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    grads = []
    for lib in (tnet, torch):
        x = lib.tensor(a, dtype=torch.float32, requires_grad=True)
        y = lib.nn.functional.relu(norm_fn(lib, x), inplace=True) * 2
        y.backward(lib.tensor(seed, dtype=torch.float32))
        grads.append(np.asarray(x.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_norm_gradient_is_finite_where_the_variance_gradient_overflowed():
    """Rows holding 3e38 (fuzz seed 389, case 537): the composed norm's variance gradient, sum / n, overflowed into
    NaN where torch's native formula (tnet's now) gives 0; and the grad_fn is torch's node."""
    values = [[[3e38, 3e38, 4.6979e-02], [-1.8102, 1.9112, 1e-40], [-0.10994, -0.36146, 0.79526]]]
    seed = [[[0.3, -1.2, 0.5], [1.0, 0.25, -0.75], [-0.5, 2.0, 1.5]]]
    grads = []
    for lib in (tnet, torch):
        x = lib.tensor(values, requires_grad=True)
        y = lib.nn.functional.instance_norm(x)
        y.backward(lib.tensor(seed))
        grads.append(np.asarray(x.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)
    assert np.isfinite(grads[0]).all()
    for name in ("NativeLayerNormBackward0", "NativeGroupNormBackward0"):
        x = tnet.ones(2, 4, 3, requires_grad=True)
        y = F.layer_norm(x, (3,)) if name.startswith("NativeLayer") else F.group_norm(x, 2)
        assert type(y.grad_fn).__name__ == y.grad_fn.name() == name


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5])
def test_embedding_max_norm_and_scale_grad_by_freq_as_torch(norm_type, rng):
    """Embedding(max_norm=, norm_type=) renormalises the rows looked up in the weight in place
    (repeated indices, rows under the limit and a padding row too), and scale_grad_by_freq divides
    each lookup's gradient by its index's count: the output, the weight after and its gradient,
    against torch in float64."""
    values = rng.standard_normal((7, 4)) * 2
    values[2] *= 0.05  # under max_norm: left alone
    idx = np.array([[1, 3, 3], [6, 1, 2], [0, 1, 4]])
    seed = rng.standard_normal((3, 3, 4))
    results = []
    for lib in (tnet, torch):
        e = lib.nn.Embedding(7, 4, padding_idx=4, max_norm=1.5, norm_type=norm_type, scale_grad_by_freq=True)
        if lib is torch:
            e = e.double()
        e.weight.data.copy_(lib.tensor(values))
        out = e(lib.tensor(idx))
        out.backward(lib.tensor(seed))
        results.append([out.detach().numpy(), e.weight.detach().numpy(), e.weight.grad.numpy()])
        assert "max_norm=1.5" in repr(e) and "scale_grad_by_freq=True" in repr(e)
    for what, out, ref in zip(("output", "weight", "gradient"), *results):
        assert_close(out, ref, TOL["ieee"], what)
    table, ref = tnet.tensor(values), torch.tensor(values)
    out = F.embedding(tnet.tensor(idx), table, max_norm=0.5)
    assert_close(out, tF.embedding(torch.tensor(idx), ref, max_norm=0.5), TOL["ieee"], "F.embedding(max_norm)")
    assert_close(table, ref, TOL["ieee"], "F.embedding(max_norm)'s weight")


@pytest.mark.parametrize("layout", [lambda m, v: m.tensor(v[3:]).expand(4, 3),  # one row in memory: renormed once
                                    lambda m, v: m.tensor(v.T.copy()).t(),  # column-major
                                    lambda m, v: m.tensor(np.repeat(v, 2, 1))[:, ::2],  # strided rows
                                    lambda m, v: m.tensor(v[:, :1]).expand(4, 3)])  # aliased columns: torch's error
def test_embedding_max_norm_of_a_view_as_torch(layout):
    """F.embedding(max_norm=) renorms a non-contiguous or expanded weight in place, repeated indices once, as
    torch's embedding_renorm_ (its values, output and one version bump), or raises torch's error."""
    values, idx = np.arange(12.0).reshape(4, 3) / 3, [[1, 3, 1], [0, 3, 2]]
    results = []
    for lib in (torch, tnet):
        weight = layout(lib, values)
        version = weight._version
        try:
            out = (lib.nn.functional.embedding(lib.tensor(idx), weight, max_norm=1.0), weight,
                   weight._version - version)
        except RuntimeError as e:
            results.append(str(e))
            continue
        results.append([np.asarray(out[0].tolist()), np.asarray(out[1].tolist()), out[2]])
    if isinstance(results[0], str):
        assert results[1] == results[0]
        return
    for what, ref, got in zip(("output", "weight", "version bumps"), *results):
        assert_close(got, ref, TOL["ieee"], what)


def test_layer_and_group_norm_of_a_constant_row_are_0_as_torch():
    """var_mean's mean is the one the variance is taken about, exact on a constant row as torch's Welford mean:
    layer_norm of three 0.8210846 gave -1.9e-5 (sum / 3 an ulp off, over sqrt(eps)), torch 0."""
    x = torch.tensor([[0.8210846185684204] * 3, [1.2773] * 3, [0.1, 0.2, 0.4]])
    got, want = F.layer_norm(tnet.Tensor(x.clone()), (3,)), tF.layer_norm(x, (3,))
    np.testing.assert_array_equal(got.numpy()[:2], want.numpy()[:2])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    g = F.group_norm(tnet.Tensor(x.reshape(1, 3, 3).clone()), 3)
    np.testing.assert_array_equal(g.numpy()[0, :2], np.zeros((2, 3), np.float32))
    v, m = tnet.var_mean(tnet.Tensor(x.clone()), 1)
    np.testing.assert_array_equal(m.numpy()[:2], x[:2, 0].numpy())


@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_merges_many_parts(monkeypatch, rng, channels_last):
    """300 parts of 64 rows, with |mean| = 100 std: the statistics, the running variance and the
    gradients as in float64."""
    monkeypatch.setattr(norm, "ROWS_MIN", 64)
    monkeypatch.setattr(norm, "MAX_PARTS", 512)
    a = rng.standard_normal((300, 3, 8, 8)) + 100 * np.array([1, -1, 2])[:, None, None]
    x, rx = leaf(a, channels_last)
    assert norm._row_parts(19200) == (64, 300)
    rm, rv = torch.zeros(3, device=tnet.DEVICE), torch.ones(3, device=tnet.DEVICE)
    y, mean, invstd = norm.batch_norm_train(x.memory, None, None, 1e-5, rm, rv, 0.5)
    ref = rx.detach()
    assert_close(mean, ref.mean((0, 2, 3)), TOL["ieee"], "mean")
    assert_close(1 / invstd.double() ** 2 - 1e-5, ref.var((0, 2, 3), unbiased=False), TOL["ieee"], "biased variance")
    assert_close(rv, 0.5 + 0.5 * ref.var((0, 2, 3)).to(rv.device), TOL["ieee"], "running_var")
    dy = torch.empty_like(x.memory).copy_(torch.as_tensor(rng.standard_normal(a.shape)))  # laid out as x
    w = torch.ones(3, device=tnet.DEVICE)
    dx, dw, db = norm.batch_norm_backward(dy, x.memory, mean, invstd, w)
    rxd = ref.clone().requires_grad_(True)
    wd = torch.ones(3, dtype=torch.float64, requires_grad=True)
    bd = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    tF.batch_norm(rxd, None, None, wd, bd, training=True).backward(dy.double().cpu())
    assert_close(dx, rxd.grad, TOL["ieee"], "dx")
    assert_close(dw, wd.grad, TOL["ieee"], "dweight")
    assert_close(db, bd.grad, TOL["ieee"], "dbias")


@pytest.mark.parametrize("call", [lambda lib, x: lib.nn.functional.layer_norm(x, (4,), eps="x"),
                                  lambda lib, x: lib.nn.functional.group_norm(x, 1, eps="x"),
                                  lambda lib, x: lib.nn.functional.instance_norm(x, eps="x"),
                                  lambda lib, x: lib.nn.functional.instance_norm(x, momentum=None)],
                         ids=["layer_norm eps", "group_norm eps", "instance_norm eps", "instance_norm momentum"])
def test_norms_float_arguments_are_the_parsers_as_torch(call):
    """A non-float eps or momentum is torch's argument parser's TypeError, before any work."""
    for lib in (torch, tnet):
        with pytest.raises(TypeError, match="must be float"):
            call(lib, lib.ones(2, 3, 4))


NATIVE = {  # torch's top-level native norms: (call on tnet or torch, input's shape, weight's and bias's shapes)
    "native_layer_norm": (lambda lib, x, w, b: lib.native_layer_norm(x, [4, 5], w, b, 1e-5), (2, 3, 4, 5), (4, 5),
                          (4, 5)),
    "native_layer_norm_plain": (lambda lib, x: lib.native_layer_norm(x, (7,), None, None, 1e-3), (3, 7), None, None),
    "native_group_norm": (lambda lib, x, w, b: lib.native_group_norm(x, w, b, 3, 6, 10, 2, 1e-5), (3, 6, 2, 5), (6,),
                          (6,)),
    "native_group_norm_plain": (lambda lib, x: lib.native_group_norm(x, None, None, 2, 4, 3, 4, 1e-5), (2, 4, 3),
                                None, None),
    "native_batch_norm": (lambda lib, x, w, b: lib.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5),
                          (4, 3, 5), (3,), (3,)),
}


@pytest.mark.parametrize("case", list(NATIVE))
def test_native_norms_return_torchs_statistics(rng, case):
    """torch.native_layer_norm, native_group_norm and native_batch_norm: (output, mean, rstd) of torch's shapes, against
    torch in float64, and the output's gradient reaching input, weight and bias; the statistics carry no gradient."""
    call, shape, w_shape, b_shape = NATIVE[case]
    pairs = [leaf(rng.standard_normal(s) + 0.5) for s in (shape, w_shape, b_shape) if s is not None]
    out, ref = call(tnet, *[t for t, _ in pairs]), call(torch, *[r for _, r in pairs])
    for what, o, r in zip(("output", "mean", "rstd"), out, ref):
        assert_close(o, r, TOL["ieee"], f"{case}: {what}")
        assert o.dtype == torch.float32 and tuple(o.shape) == tuple(r.shape)
    assert not out[1].requires_grad and not out[2].requires_grad
    check_backward(out[0], ref[0], dict(zip("xwb", pairs)), rng, case)


def test_native_norms_statistics_dtypes_and_eval_mode():
    """16-bit input: layer and batch norms' statistics in float32 (torch's on CUDA), group norm's in the input's dtype
    but for float32 parameters (torch's); native_batch_norm in eval mode updates nothing and returns empty statistics,
    and refuses an empty batch, as torch's."""
    x = tnet.randn(2, 4, 6).to(torch.bfloat16)
    assert [v.dtype for v in tnet.native_layer_norm(x, [6], None, None, 1e-5)[1:]] == [torch.float32] * 2
    assert [v.dtype for v in tnet.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[1:]] == [torch.float32] * 2
    assert [v.dtype for v in tnet.native_group_norm(x, None, None, 2, 4, 6, 2, 1e-5)[1:]] == [torch.bfloat16] * 2
    assert [v.dtype for v in tnet.native_group_norm(x, tnet.ones(4), None, 2, 4, 6, 2, 1e-5)[1:]] == [torch.float32] * 2
    mean, var = tnet.randn(4), tnet.rand(4) + 0.5
    before = mean.memory.clone()
    y, m, r = tnet.native_batch_norm(x.float(), None, None, mean, var, False, 0.1, 1e-5)
    ref = torch.native_batch_norm(x.memory.float().cpu(), None, None, mean.memory.cpu(), var.memory.cpu(), False, 0.1, 1e-5)
    assert_close(y, ref[0], TOL["ieee"], "eval output")
    assert m.shape == r.shape == ref[1].shape == (0,) and torch.equal(mean.memory, before)
    with pytest.raises(RuntimeError, match="at least one element"):
        tnet.native_batch_norm(tnet.zeros(0, 4), None, None, None, None, True, 0.1, 1e-5)
    empty = tnet.zeros(0, 4, 2)
    for ours, theirs in ((tnet.native_batch_norm(empty, None, None, mean, var, False, 0.1, 1e-5),
                          torch.native_batch_norm(torch.zeros(0, 4, 2), None, None, mean.memory.cpu(),
                                                  var.memory.cpu(), False, 0.1, 1e-5)),
                         (tnet.native_layer_norm(empty, [2], None, None, 1e-5),
                          torch.native_layer_norm(torch.zeros(0, 4, 2), [2], None, None, 1e-5)),
                         (tnet.native_group_norm(empty, None, None, 0, 4, 2, 2, 1e-5),
                          torch.native_group_norm(torch.zeros(0, 4, 2), None, None, 0, 4, 2, 2, 1e-5))):
        assert [tuple(v.shape) for v in ours] == [tuple(v.shape) for v in theirs]  # an empty batch, as torch's
    with pytest.raises(RuntimeError, match="N \\* C \\* HxW"):
        tnet.native_group_norm(x, None, None, 2, 4, 5, 2, 1e-5)
