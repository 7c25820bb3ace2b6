"""Pooling kernels against torch in float64: airbench94's pools (2x2 windows that tile the image,
31 -> 15 leaving the last row and column out), the compact argmax, ties, windows of -inf, the
window-by-window backward with padding and ceil mode in every layout, and every tile config.
The generic geometries are in test_kernels.py (NCHW) and test_conv.py (layouts)."""
import pytest
import torch
import torch.nn.functional as tF

from tnet.kernels import pool
from tnet.kernels.launch import is_channels_last
from helpers import CONFIG_DTYPES, FLOATS, assert_close, only_config, tol_for
from test_kernels import DEV, f64, randn, torch_pool

CL = torch.channels_last
LAYOUTS = {"cl-cl": (True, True), "nchw-cl": (False, True), "cl-nchw": (True, False), "nchw-nchw": (False, False)}


@pytest.fixture
def unwritten_is_nan(monkeypatch):
    """torch.empty fills float tensors with NaN (integers with 77), so that an element a kernel
    leaves unwritten cannot pass as a zero."""
    empty = torch.empty

    def filled(*args, **kwargs):
        t = empty(*args, **kwargs)
        return t.fill_(float("nan") if t.is_floating_point() else 77)
    monkeypatch.setattr(torch, "empty", filled)


def layout(t, cl):
    return t.contiguous(memory_format=CL if cl else torch.contiguous_format)


def window_index(torch_indices, shape, kernel, stride, padding):
    """torch's plane indices h*W + w of the maxima as indices i*KW + j inside their windows."""
    W, (KW, SH, SW, PH, PW) = shape[3], (kernel[1], *stride, *padding)
    oh = torch.arange(torch_indices.shape[2])[:, None]
    ow = torch.arange(torch_indices.shape[3])[None, :]
    return (torch_indices // W - (oh * SH - PH)) * KW + torch_indices % W - (ow * SW - PW)


def check_pool(x, mode, kernel, stride, padding, ceil_mode, layouts=(True, True), relu=False):
    """pool2d and pool2d_backward (through a ReLU's mask with relu) against torch in float64 on
    the same rounded values, and max pooling's argmax against torch's indices. Max pooling's
    values are copies of its inputs, so they match exactly, and so does dx where windows are
    disjoint; the rest within the dtype's rounding."""
    x_cl, y_cl = layouts
    x = layout(x, x_cl)
    xd = f64(x).requires_grad_(True)
    r = torch.relu(x) if relu else None
    src = torch.relu(xd) if relu else xd
    if mode == "max":
        ref, idx = tF.max_pool2d(src, kernel, stride, padding, ceil_mode=ceil_mode, return_indices=True)
    else:
        ref = torch_pool(mode, src, kernel, stride, padding, ceil_mode)
    y, arg = pool.pool2d(layout(r, x_cl) if relu else x, kernel, stride, padding, ceil_mode, mode,
                         channels_last=y_cl)
    assert y.dtype == x.dtype and is_channels_last(y) == (y_cl and y.shape[1] > 1 and y.shape[2:] != (1, 1))
    if mode == "avg":
        assert_close(y, ref, tol_for(x.dtype, 1e-6), "avg forward")
    else:
        assert torch.equal(f64(y), ref.detach()), f"max forward: {(f64(y) != ref).sum()} elements differ"
        assert arg.dtype == pool.arg_dtype(kernel) and arg.shape == y.shape
        assert torch.equal(arg.cpu().long(), window_index(idx, x.shape, kernel, stride, padding)), "argmax"
    g = layout(randn(*ref.shape).to(x.dtype), y_cl)
    ref.backward(f64(g))
    dx = pool.pool2d_backward(g, arg, x.shape, kernel, stride, padding, mode, relu_input=r,
                              x_channels_last=x_cl, y_channels_last=y_cl)
    assert dx.dtype == x.dtype and is_channels_last(dx) == (x_cl and x.shape[1] > 1)
    # A pixel of overlapping windows sums their gradients, rounded; of disjoint ones it copies one.
    tol = 0.0 if mode == "max" and stride == kernel else tol_for(x.dtype, 1e-6)
    assert_close(dx, xd.grad, tol, f"{mode} backward{' through the ReLU' if relu else ''}")
    return y, dx


AIRBENCH = [((2, 64, 31, 31), 2), ((2, 24, 15, 15), 2), ((2, 16, 7, 7), 2), ((3, 40, 3, 3), 3)]  # airbench: 64, 256, 256, 256 channels


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k", AIRBENCH, ids=["31-15", "15-7", "7-3", "3-1"])
def test_airbench_pools(shape, k, dtype, unwritten_is_nan):
    """airbench94's MaxPool2d(2)s and MaxPool2d(3), channels-last, at fewer images and channels
    (24 and 40: channel runs of 8): windows that tile the image, exact in every dtype; the last
    row and column of 31 -> 15 get a zero gradient."""
    x = randn(*shape).to(dtype)
    _, dx = check_pool(x, "max", (k, k), (k, k), (0, 0), False)
    if shape[2] == 31:
        assert not dx[:, :, 30].cpu().any() and not dx[:, :, :, 30].cpu().any()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("geometry", [((2, 2), (2, 2), (0, 0), False), ((3, 3), (2, 2), (1, 1), True)],
                         ids=["disjoint", "overlapping"])
def test_max_pool_ties(geometry, dtype):
    """Inputs of three values, so most windows hold ties: the first maximum in row-major order
    takes the gradient, as in PyTorch, on both backward paths."""
    x = torch.randint(0, 3, (2, 16, 9, 11)).to(DEV, dtype)
    check_pool(x, "max", *geometry)


def test_max_pool_windows_of_minus_inf():
    """A window of -inf only (the padding excepted) sends its gradient to its first pixel inside
    the image, as PyTorch does; y is -inf there."""
    x = randn(1, 8, 7, 7)
    x[:, :, :4, :4] = float("-inf")
    for kernel, stride, padding, ceil_mode in [((3, 3), (3, 3), (1, 1), True), ((3, 3), (2, 2), (1, 1), False)]:
        y, _ = check_pool(x, "max", kernel, stride, padding, ceil_mode)
        assert (y[:, :, 0, 0].cpu() == float("-inf")).all()


@pytest.mark.parametrize("kernel,stride,padding", [((12, 11), (1, 1), (0, 5)), ((12, 11), (12, 11), (3, 0))])
def test_max_pool_wide_window_takes_int32_indices(kernel, stride, padding):
    """Windows of more than 127 pixels keep their indices in int32, on both backward paths."""
    assert pool.arg_dtype(kernel) == torch.int32 and pool.arg_dtype((11, 11)) == torch.int8
    check_pool(randn(1, 8, 14, 12), "max", kernel, stride, padding, True)


@pytest.mark.parametrize("relu", [False, True], ids=["", "relu"])
@pytest.mark.parametrize("layouts", LAYOUTS.values(), ids=LAYOUTS.keys())
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("kernel,padding,ceil_mode", [((2, 2), (0, 0), True), ((3, 2), (1, 1), True),
                                                      ((2, 3), (1, 0), False)])
def test_disjoint_windows(kernel, padding, ceil_mode, mode, layouts, relu):
    """Windows that tile the padded image (stride == kernel), written window by window: the
    last window clipped (ceil mode), windows over the padding, rows and columns left out,
    channels not a multiple of 8 (masked runs), with and without the fused ReLU gradient."""
    check_pool(randn(2, 5, 11, 9), mode, kernel, kernel, padding, ceil_mode, layouts, relu)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_disjoint_windows_16_bit(mode, dtype):
    """16-bit pooling as conv2d_relu_pool2d and airbench run it, both backward paths' tiles."""
    check_pool(randn(2, 24, 9, 7).to(dtype), mode, (2, 2), (2, 2), (0, 0), True, relu=True)
    check_pool(randn(2, 24, 9, 7).to(dtype), mode, (3, 3), (2, 2), (1, 1), True, (True, False), relu=True)


def test_backward_checks_arg():
    x = randn(1, 16, 6, 6).contiguous(memory_format=CL)
    y, arg = pool.pool2d(x, (2, 2), (2, 2), (0, 0), False, "max")
    for bad in (None, arg.int(), arg[:, :, :2]):
        with pytest.raises(ValueError, match="argmax"):
            pool.pool2d_backward(y, bad, x.shape, (2, 2), (2, 2), (0, 0), "max", x_channels_last=True)


KERNELS = ["pool_kernel", "pool_backward_kernel", "pool_backward_disjoint_kernel"]


@pytest.mark.parametrize("i", range(len(pool._CONFIGS)))
def test_pool_every_config(i, monkeypatch):
    """Each tile config of the three kernels (on the GPU the others run only the first,
    TNET_AUTOTUNE=0): airbench's pool and an overlapping one, channels-last and NCHW."""
    for name in KERNELS:
        only_config(monkeypatch, getattr(pool, name), pool._CONFIGS[i])
    for dtype in CONFIG_DTYPES:
        x = randn(2, 64, 9, 9).to(dtype)
        for mode in ("max", "avg"):
            check_pool(x, mode, (2, 2), (2, 2), (0, 0), False)
            check_pool(x, mode, (3, 3), (2, 2), (1, 1), True, relu=True)
            check_pool(x[:, :3], mode, (2, 2), (2, 2), (0, 0), True, (False, False))
