"""Convolutions (implicit GEMMs over channels-last images), and channels-last pooling and
elementwise kernels, against torch in float64."""
import pytest
import torch
import torch.nn.functional as tF

import tnet
from tnet import functional as F
from tnet.kernels import conv, pointwise, pool
from tnet.kernels.launch import is_channels_last, keeps_channels_last, tile_config
from helpers import TOL, assert_close, only_config
from test_kernels import POOLS, f64, randn

CL = torch.channels_last
CONVS = [  # x shape, Cout, kernel, stride, padding
    ((2, 16, 6, 7), 32, (5, 5), (1, 1), (2, 2)),  # cifar10_quick's 5x5: C below the K step (masked channels)
    ((3, 32, 5, 4), 16, (3, 3), (1, 1), (1, 1)),  # several output tiles
    ((2, 48, 7, 5), 16, (3, 2), (1, 1), (1, 0)),  # C 48: a partial channel chunk; rectangular kernel
    ((2, 3, 9, 8), 32, (5, 5), (1, 1), (2, 2)),  # conv1: a narrow NCHW x, K = (i, j, c) = 75 gathered
    ((2, 3, 8, 8), 24, (2, 2), (1, 1), (0, 0)),  # airbench's whitening conv: Cout 24, no padding
    ((2, 24, 7, 9), 20, (3, 3), (2, 2), (1, 1)),  # stride 2, C and Cout not multiples of 16, C gathered
    ((2, 40, 6, 5), 20, (3, 3), (2, 2), (1, 1)),  # stride 2, C read in a full and a partial chunk
    ((1, 5, 6, 7), 8, (2, 3), (2, 1), (0, 1)),  # narrow, mixed strides
    ((2, 16, 5, 5), 16, (1, 1), (1, 1), (0, 0)),  # 1x1
    ((2, 20, 9, 9), 16, (5, 5), (2, 2), (2, 2)),  # 5x5 stride 2
]
DTYPES = {"ieee": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def cl_randn(*shape):
    return randn(*shape).contiguous(memory_format=CL)


def check_conv(shape, cout, kernel, stride, padding, precision, parts=None):
    """conv2d (bias, ReLU), conv2d_input and conv2d_weight against torch in float64 on the same
    (rounded) inputs; x channels-last when wide, NCHW when narrow (as the layers keep them)."""
    dtype = DTYPES[precision]
    x = (cl_randn(*shape) if keeps_channels_last(shape[1]) else randn(*shape)).to(dtype)
    w = (randn(cout, shape[1], *kernel) * 0.3).to(dtype).contiguous(memory_format=CL)
    b = randn(cout)
    xd, wd = f64(x).requires_grad_(True), f64(w).requires_grad_(True)
    ref = tF.conv2d(xd, wd, f64(b), stride, padding)
    what = f"{precision} x {shape} w {tuple(w.shape)} stride {stride} padding {padding}"
    y = conv.conv2d(x, w, stride, padding, bias=b, relu=True, precision=precision)
    assert is_channels_last(y) or y.shape[1] == 1, "channels-last output"
    assert y.dtype == dtype and y.shape == ref.shape
    assert_close(y, torch.relu(ref), TOL[precision], f"forward {what}")
    g = cl_randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    dx = conv.conv2d_input(x.shape, w, g, stride, padding, precision=precision)
    assert dx.dtype == dtype and (is_channels_last(dx) or shape[2:] == (1, 1))
    assert_close(dx, xd.grad, TOL[precision], f"input gradient {what}")
    dw = conv.conv2d_weight(x, w.shape, g, stride, padding, precision=precision, parts=parts)
    assert dw.dtype == torch.float32 and is_channels_last(dw) == (kernel != (1, 1))
    assert_close(dw, wd.grad, TOL[precision], f"weight gradient {what}, parts {parts}")


@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16", "fp16"])
@pytest.mark.parametrize("shape,cout,kernel,stride,padding", CONVS)
def test_conv(precision, shape, cout, kernel, stride, padding):
    check_conv(shape, cout, kernel, stride, padding, precision)


@pytest.mark.parametrize("parts", [1, 2, 5])
def test_conv_weight_parts(parts, monkeypatch):
    """The pixels split into parts (the last one shorter), summed after."""
    monkeypatch.setattr(conv, "PART_ALIGN", 16)
    check_conv((3, 16, 5, 6), 16, (3, 3), (1, 1), (1, 1), "ieee", parts)
    check_conv((3, 3, 5, 6), 16, (3, 3), (2, 1), (1, 1), "ieee", parts)


def test_weight_parts_fill_whole_waves(monkeypatch):
    """conv2d_weight's default part count, on the H200's 132 SMs: whole waves of programs, and
    no more parts than the balance they bring pays for in sums; 1 in the interpreter."""
    monkeypatch.setattr(conv, "SMS", 132)
    assert conv.weight_grad_parts(1024 * 7 * 7, 18) == 7  # airbench's 256 -> 256 at 7x7, 256x128 tiles: a wave of 126
    assert conv.weight_grad_parts(1024 * 15 * 15, 18, resident=2) == 14  # two tiles at a time per SM: a wave of 252
    assert conv.weight_grad_parts(300, 1) == 1  # too few pixels to split
    assert conv._resident(conv._GRAD_CONFIGS[-1].kwargs, "fp16") == 1 and conv._resident({"BLOCK_M": 8, "BLOCK_N": 8,
                                                                                        "BLOCK_K": 8}, "fp16") == 1
    monkeypatch.setattr(conv, "SMS", 0)
    assert conv.weight_grad_parts(1024 * 7 * 7, 18) == 1


@pytest.mark.skipif(tnet.INTERPRET, reason="the interpreter runs one config, and ignores warps and stages")
@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16", "fp16"])
@pytest.mark.parametrize("i", range(max(len(conv._CONV_CONFIGS), len(conv._GRAD_CONFIGS))))
def test_conv_every_config(i, precision, monkeypatch):
    """Each tile config the GPU's autotuner may pick (the other tests there run the first only,
    TNET_AUTOTUNE=0), in each precision, wide and narrow, the weight gradient split in parts."""
    for kernel, configs in ((conv.conv_kernel, conv._CONV_CONFIGS), (conv.weight_grad_kernel, conv._GRAD_CONFIGS)):
        config = configs[min(i, len(configs) - 1)]
        if not conv.fits_shared_memory(config, precision):
            continue  # pruned: too large for fp32 operands
        only_config(monkeypatch, kernel, config)
    monkeypatch.setattr(conv, "PART_ALIGN", 16)
    check_conv((2, 64, 9, 10), 128, (3, 3), (1, 1), (1, 1), precision, parts=3)
    check_conv((2, 24, 9, 8), 64, (3, 3), (2, 2), (1, 1), precision, parts=2)
    check_conv((1, 3, 9, 10), 32, (5, 5), (1, 1), (2, 2), precision, parts=2)


def test_conv_prune_reads_keyword_arguments():
    """As Triton calls it: positional arguments in a dict, the keyword ones as keywords; tiles
    no wider than the problem, and within shared memory."""
    args = {"NPIX": 5000, "C": 3, "COUT": 32, "KH": 5, "KW": 5}
    tiles = conv._prune_conv(conv._CONV_CONFIGS, args, WIDE=False, PRECISION="tf32")
    assert tiles and all(c.kwargs["BLOCK_N"] <= 64 and conv.fits_shared_memory(c, "tf32") for c in tiles)
    assert not conv.fits_shared_memory(tile_config(128, 256, 64, 8, 3), "tf32")  # 294 KB: failed on the H200
    wide = conv._prune_conv(conv._CONV_CONFIGS, {**args, "C": 256, "COUT": 256}, WIDE=True, PRECISION="bf16")
    assert any(c.kwargs["BLOCK_K"] == 64 and c.kwargs["BLOCK_N"] == 256 for c in wide)
    grad = conv._prune_grad(conv._GRAD_CONFIGS, {"C": 32, "COUT": 32, "KH": 5, "KW": 5, "NPIX": 512}, WIDE=True,
                            PRECISION="tf32")
    assert grad and all(c.kwargs["BLOCK_N"] <= 64 and c.kwargs["BLOCK_M"] <= 64 for c in grad)


def test_conv_bad_input():
    x, w = cl_randn(2, 16, 6, 6), randn(16, 16, 3, 3)
    with pytest.raises(ValueError, match="4-D"):
        conv.conv2d(randn(16, 6, 6), w)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        conv.conv2d(x.to(torch.float64), w)
    with pytest.raises(ValueError, match=r"weight is 16x32x3x3"):
        conv.conv2d(x, randn(16, 32, 3, 3))
    with pytest.raises(ValueError, match="bias"):
        conv.conv2d(x, w, bias=randn(8))
    with pytest.raises(ValueError, match="does not fit"):
        conv.conv2d(x, randn(16, 16, 7, 7))
    with pytest.raises(ValueError, match="precision"):
        conv.conv2d(x, w, precision="fp8")
    with pytest.raises(ValueError, match=r"grad_output is 2x16x5x6 .* gives \[2, 16, 6, 6\]"):
        conv.conv2d_weight(x, w.shape, cl_randn(2, 16, 5, 6), 1, 1)
    with pytest.raises(ValueError, match=r"grad_output is 2x16x6x6 .* gives \[2, 16, 3, 3\]"):
        conv.conv2d_input(x.shape, w, cl_randn(2, 16, 6, 6), 2, 1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_conv2d_autocast(dtype):
    """F.conv2d under tnet.autocast: 16-bit products and output from an fp32 input and fp32
    weights (read through their 16-bit copies), fp32 gradients for both."""
    x = tnet.Tensor(randn(2, 16, 5, 6), requires_grad=True)
    w = tnet.nn.Parameter(randn(24, 16, 3, 3) * 0.3)
    with tnet.autocast("cuda", dtype=dtype):
        y = F.conv2d(x, w, None, 1, 1)
    assert y.dtype == dtype and x.data.dtype == torch.float32
    g = cl_randn(*y.shape).to(dtype)
    y.backward(tnet.Tensor(g))
    xd, wd = f64(x.data).requires_grad_(True), f64(w.data.to(dtype)).requires_grad_(True)
    ref = tF.conv2d(xd, wd, None, 1, 1)
    ref.backward(f64(g))
    assert_close(y.data, ref, TOL["bf16"], "forward")
    assert x.grad.dtype == torch.float32 and w.grad.dtype == torch.float32
    assert_close(x.grad.data, xd.grad, TOL["bf16"], "input gradient")
    assert_close(w.grad.data, wd.grad, TOL["bf16"], "weight gradient")


@pytest.mark.parametrize("layouts", [(True, True), (False, True), (True, False)], ids=["cl-cl", "nchw-cl", "cl-nchw"])
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", POOLS)
def test_pool_channels_last(mode, kernel, stride, padding, ceil_mode, layouts):
    """Pooling between any two layouts (x's, y's) gives NCHW pooling's values, forward and
    backward, with or without the fused ReLU gradient."""
    x_cl, y_cl = layouts
    x = cl_randn(2, 5, 13, 8) if x_cl else randn(2, 5, 13, 8)
    y, arg = pool.pool2d(x, kernel, stride, padding, ceil_mode, mode, channels_last=y_cl)
    y_ref, arg_ref = pool.pool2d(x.contiguous(), kernel, stride, padding, ceil_mode, mode)
    assert is_channels_last(y) == (y_cl and y.shape[2:] != (1, 1))
    assert torch.equal(y.cpu(), y_ref.cpu()) and (arg is None or torch.equal(arg.cpu(), arg_ref.cpu()))
    g = cl_randn(*y.shape) if y_cl else randn(*y.shape)
    relu_input = torch.relu(x).contiguous(memory_format=CL if x_cl else torch.contiguous_format)
    for r in (None, relu_input):
        dx = pool.pool2d_backward(g, arg, x.shape, kernel, stride, padding, mode, relu_input=r,
                                  x_channels_last=x_cl, y_channels_last=y_cl)
        ref = pool.pool2d_backward(g.contiguous(), arg_ref, x.shape, kernel, stride, padding, mode,
                                   relu_input=None if r is None else r.contiguous())
        assert is_channels_last(dx) == x_cl, f"relu {r is not None}"
        if mode == "max":
            assert torch.equal(dx.cpu(), ref.cpu()), f"relu {r is not None}"
        else:  # the GPU's fp32 division is not correctly rounded, and each layout compiles its own
            assert_close(dx, ref, TOL["ieee"], f"relu {r is not None}")
    if y_cl and y.shape[2:] != (1, 1):
        with pytest.raises(ValueError, match="layout"):
            pool.pool2d_backward(g.contiguous(), arg, x.shape, kernel, stride, padding, mode, x_channels_last=x_cl,
                                 y_channels_last=True)


def test_elementwise_channels_last():
    x, g = cl_randn(2, 3, 4, 5), cl_randn(2, 3, 4, 5)
    y = pointwise.relu(x)
    assert is_channels_last(y) and torch.equal(y.cpu(), torch.relu(x).cpu())
    assert torch.equal(pointwise.relu_backward(y, g).cpu(), torch.where(x > 0, g, 0.0).cpu())
    with pytest.raises(ValueError, match="laid out alike"):
        pointwise.add_(x, g.contiguous())
