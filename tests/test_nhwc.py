"""Channels-last (NHWC) convolutions, pooling and elementwise kernels against torch in float64."""
import pytest
import torch
import torch.nn.functional as tF

from tnet.kernels import elementwise, nhwc, pool
from tnet.kernels.conv import is_channels_last
from conftest import TOL, assert_close, only_config
from test_kernels import POOLS, f64, randn

CL = torch.channels_last
CONVS = [  # x shape, Cout, kernel, padding
    ((2, 16, 6, 7), 32, (5, 5), (2, 2)),  # cifar10_quick's 5x5, padding 2
    ((3, 32, 5, 4), 16, (3, 3), (1, 1)),  # BLOCK_C 32, several output tiles
    ((2, 48, 7, 5), 16, (3, 2), (1, 0)),  # C 48 (chunks of 16), rectangular kernel, output smaller than x
    ((2, 3, 9, 8), 32, (5, 5), (2, 2)),  # conv1: an NCHW x (NCHW_X), K = 75
    ((3, 5, 4, 6), 16, (3, 2), (0, 1)),  # NCHW_X, K = 30, output smaller than x
    ((2, 6, 5, 4), 16, (5, 5), (2, 2)),  # NCHW_X, K = 150: steps of 16 (K up to 128 takes one step)
]


def cl_randn(*shape):
    return randn(*shape).contiguous(memory_format=CL)


def check_conv(shape, cout, kernel, padding, precision, parts=None):
    x = cl_randn(*shape) if nhwc.channels_fit(shape[1]) else randn(*shape)
    w, b = randn(cout, shape[1], *kernel) * 0.3, randn(cout)
    xd, wd = f64(x).requires_grad_(True), f64(w).requires_grad_(True)
    ref = tF.conv2d(xd, wd, f64(b), 1, padding)
    what = f"{precision} x {shape} w {tuple(w.shape)} padding {padding}"
    y = nhwc.conv(x, w, padding, bias=b, relu=True, precision=precision)
    assert is_channels_last(y) and y.shape == ref.shape
    assert_close(y, torch.relu(ref), TOL[precision], f"forward {what}")
    g = cl_randn(*ref.shape)
    ref.backward(f64(g))
    dx = nhwc.input_grad(g, w, padding, precision=precision)
    assert is_channels_last(dx)
    assert_close(dx, xd.grad, TOL[precision], f"input gradient {what}")
    dw = nhwc.weight_grad(g, x, kernel, padding, precision=precision, parts=parts)
    assert dw.is_contiguous()
    assert_close(dw, wd.grad, TOL[precision], f"weight gradient {what}, parts {parts}")


@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16"])
@pytest.mark.parametrize("shape,cout,kernel,padding", CONVS)
def test_nhwc_conv(precision, shape, cout, kernel, padding):
    check_conv(shape, cout, kernel, padding, precision)


@pytest.mark.parametrize("parts", [1, 2, 5])
def test_nhwc_weight_grad_parts(parts, monkeypatch):
    """The pixels split into parts (the last one shorter), summed after."""
    monkeypatch.setattr(nhwc, "PART_ALIGN", 16)
    check_conv((3, 16, 5, 6), 16, (3, 3), (1, 1), "ieee", parts)


@pytest.mark.parametrize("i", range(max(len(nhwc._CONV_CONFIGS), len(nhwc._GRAD_CONFIGS))))
def test_nhwc_every_config(i, monkeypatch):
    """Each tile config the GPU's autotuner may pick (the other tests there run the first
    only, TNET_AUTOTUNE=0), the weight gradient split in parts."""
    for kernel, configs in ((nhwc.conv_kernel, nhwc._CONV_CONFIGS), (nhwc.weight_grad_kernel, nhwc._GRAD_CONFIGS)):
        only_config(monkeypatch, kernel, configs[min(i, len(configs) - 1)])
    monkeypatch.setattr(nhwc, "PART_ALIGN", 16)
    check_conv((2, 32, 5, 6), 64, (3, 3), (1, 1), "ieee", parts=3)
    for precision in ("ieee", "tf32"):  # tf32 caught a miscompiled config on the GPU
        check_conv((1, 3, 4, 5), 32, (3, 3), (1, 1), precision, parts=2)  # NCHW_X, K = 27 in one step
        if not nhwc._MISCOMPILED(nhwc._CONV_CONFIGS[min(i, len(nhwc._CONV_CONFIGS) - 1)]):  # pruned there
            check_conv((1, 6, 4, 5), 32, (5, 5), (2, 2), precision, parts=2)  # NCHW_X, K = 150 in steps of 16


def test_nhwc_prune_reads_keyword_arguments():
    """As Triton calls it: positional arguments in a dict, the keyword ones (NCHW_X) as keywords."""
    conv = nhwc._prune(nhwc._CONV_CONFIGS, {"C": 3, "COUT": 32, "KH": 5, "KW": 5}, NCHW_X=True, BLOCK_C=16)
    assert conv and all(c.kwargs["BLOCK_N"] <= 32 and not nhwc._MISCOMPILED(c) for c in conv)
    assert any(map(nhwc._MISCOMPILED, nhwc._prune(nhwc._CONV_CONFIGS, {"COUT": 32}, NCHW_X=False, BLOCK_C=32)))
    assert nhwc._prune(nhwc._GRAD_CONFIGS, {"C": 3, "COUT": 32, "KH": 5, "KW": 5}, NCHW_X=True) == nhwc._GRAD_CONFIGS
    grad = nhwc._prune(nhwc._GRAD_CONFIGS, {"C": 32, "COUT": 32, "KH": 5, "KW": 5}, NCHW_X=False)
    assert grad and all(c.kwargs["BLOCK_N"] <= 32 for c in grad)


def test_nhwc_bad_input():
    x, w = cl_randn(2, 16, 6, 6), randn(16, 16, 3, 3)
    with pytest.raises(ValueError, match="channels-last"):
        nhwc.conv(randn(2, 16, 6, 6), w, (1, 1))
    with pytest.raises(ValueError, match="NCHW otherwise"):
        nhwc.conv(cl_randn(2, 8, 6, 6), randn(16, 8, 3, 3), (1, 1))
    with pytest.raises(ValueError, match="Cout a multiple of 16"):
        nhwc.conv(x, randn(8, 16, 3, 3), (1, 1))
    with pytest.raises(ValueError, match=r"w is 16x32x3x3"):
        nhwc.conv(x, randn(16, 32, 3, 3), (1, 1))
    with pytest.raises(ValueError, match="bias"):
        nhwc.conv(x, w, (1, 1), bias=randn(8))
    with pytest.raises(ValueError, match=r"dy is 2x16x5x6 but"):
        nhwc.weight_grad(cl_randn(2, 16, 5, 6), x, (3, 3), (1, 1))
    assert not nhwc.fits(x, w, (2, 2), (1, 1)) and not nhwc.fits(x, w, (1, 1), (3, 3))
    assert nhwc.fits(x, w, (1, 1), (1, 1)) and not nhwc.fits(x, randn(16, 16, 3, 3)[:8], (1, 1), (1, 1))


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
        assert is_channels_last(dx) == x_cl and torch.equal(dx.cpu(), ref.cpu()), f"relu {r is not None}"
    if y_cl and y.shape[2:] != (1, 1):
        with pytest.raises(ValueError, match="layout"):
            pool.pool2d_backward(g.contiguous(), arg, x.shape, kernel, stride, padding, mode, x_channels_last=x_cl,
                                 y_channels_last=True)


def test_elementwise_channels_last():
    x, g = cl_randn(2, 3, 4, 5), cl_randn(2, 3, 4, 5)
    y = elementwise.relu(x)
    assert is_channels_last(y) and torch.equal(y.cpu(), torch.relu(x).cpu())
    assert torch.equal(elementwise.relu_backward(y, g).cpu(), torch.where(x > 0, g, 0.0).cpu())
    with pytest.raises(ValueError, match="laid out alike"):
        elementwise.add_(x, g.contiguous())
