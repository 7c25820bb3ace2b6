"""Pooling (kernels/pool.py, F.max_pool2d and F.avg_pool2d) against torch in float64: Caffe's
geometries in NCHW and between layouts, 16-bit and through a ReLU's mask; airbench94's pools (2x2
windows that tile the image, 31 -> 15 leaving the last row and column out), the compact argmax,
ties, windows of -inf, the window-by-window backward with padding and ceil mode in every layout,
adaptive average and max pooling to any size, and every tile config."""
import pytest
import torch
import torch.nn.functional as tF

import tnet.functional as F
from tnet import nn
from tnet.kernels import pointwise, pool
from tnet.kernels.launch import BLOCK_CONFIGS, is_channels_last
from helpers import (CL, CONFIG_DTYPES, DEV, FLOATS, LOW, TOL, assert_close, check, check_op, cl_randn, f64, leaf,
                     only_config, pair, randn, tol_for)


LAYOUTS = {"cl-cl": (True, True), "nchw-cl": (False, True), "cl-nchw": (True, False), "nchw-nchw": (False, False)}


POOLS = [((3, 3), (2, 2), (0, 0), True), ((3, 3), (2, 2), (1, 1), True), ((2, 2), (2, 2), (0, 0), False),
         ((3, 2), (1, 2), (1, 1), False), ((1, 1), (1, 1), (0, 0), False),
         ((2, 3), (3, 2), (0, 1), True), ((5, 5), (2, 3), (2, 2), False)]  # gaps between windows; 3 and 2 per row


def torch_pool(mode, x, kernel, stride, padding, ceil_mode=False):
    if mode == "max":
        return tF.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode)
    return tF.avg_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode, count_include_pad=True)


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


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", POOLS)
def test_pool(mode, kernel, stride, padding, ceil_mode, dtype=torch.float32):
    x = randn(2, 3, 13, 8).to(dtype)
    xd = f64(x).requires_grad_(True)
    ref = torch_pool(mode, xd, kernel, stride, padding, ceil_mode)
    y, arg = pool.pool2d(x, kernel, stride, padding, ceil_mode, mode)
    assert y.dtype == dtype
    assert_close(y, ref, tol_for(dtype, 1e-6), f"{mode} forward {dtype}")
    g = randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    dx = pool.pool2d_backward(g, arg, x.shape, kernel, stride, padding, mode)
    assert dx.dtype == dtype
    assert_close(dx, xd.grad, tol_for(dtype, 1e-6), f"{mode} backward {dtype}")


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pool_16_bit(dtype, mode):
    """16-bit pooling, and as conv2d_relu_pool2d runs it: a channels-last ReLU output pooled into
    NCHW, the ReLU's mask applied in the backward."""
    test_pool(mode, *POOLS[1], dtype=dtype)
    pre = randn(2, 16, 9, 7).to(dtype)
    relu_out = pointwise.relu(pre.contiguous(memory_format=torch.channels_last))
    xd = f64(pre).requires_grad_(True)
    ref = torch_pool(mode, torch.relu(xd), (3, 3), (2, 2), (1, 1))
    y, arg = pool.pool2d(relu_out, (3, 3), (2, 2), (1, 1), False, mode, channels_last=False)
    assert y.dtype == dtype and y.is_contiguous()
    assert_close(y, ref, tol_for(dtype), f"{mode} forward")
    g = randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    dx = pool.pool2d_backward(g, arg, pre.shape, (3, 3), (2, 2), (1, 1), mode, relu_input=relu_out,
                              x_channels_last=True, y_channels_last=False)
    assert dx.dtype == dtype and is_channels_last(dx)
    assert_close(dx, xd.grad, tol_for(dtype), f"{mode} backward through the ReLU")


def test_max_pool_ties_take_first_in_row_major_order():
    x = torch.zeros(1, 1, 4, 4, device=DEV)  # all ties
    y, arg = pool.pool2d(x, (3, 3), (2, 2), (0, 0), True, "max")
    assert arg.dtype == torch.int8 and arg.cpu().flatten().tolist() == [0, 0, 0, 0]  # each window's first tap
    dx = pool.pool2d_backward(torch.ones_like(y), arg, x.shape, (3, 3), (2, 2), (0, 0), "max")
    assert torch.nonzero(dx.cpu().flatten()).flatten().tolist() == [0, 2, 8, 10]  # rows 0 and 2, columns 0 and 2


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
    TNET_AUTOTUNE=0): airbench's pool and an overlapping one, channels-last and NCHW, and test_pool's NCHW
    overlapping windows."""
    for name in KERNELS:
        only_config(monkeypatch, getattr(pool, name), pool._CONFIGS[i])
    for dtype in CONFIG_DTYPES:
        x = randn(2, 64, 9, 9).to(dtype)
        for mode in ("max", "avg"):
            check_pool(x, mode, (2, 2), (2, 2), (0, 0), False)
            check_pool(x, mode, (3, 3), (2, 2), (1, 1), True, relu=True)
            check_pool(x[:, :3], mode, (2, 2), (2, 2), (0, 0), True, (False, False))
            test_pool(mode, *POOLS[1], dtype=dtype)


# ---- max_pool2d and avg_pool2d through the tape ---------------------------------------------

@pytest.mark.parametrize("ceil_mode", [True, False])
def test_pools(rng, ceil_mode):
    check_op(lambda x: F.max_pool2d(x, 3, 2, ceil_mode=ceil_mode),
             lambda x: tF.max_pool2d(x, 3, 2, ceil_mode=ceil_mode), [pair(rng, 2, 3, 9, 9)], 1e-6, rng)
    check_op(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=ceil_mode),
             lambda x: tF.avg_pool2d(x, 3, 2, 1, ceil_mode=ceil_mode), [pair(rng, 2, 3, 9, 9)], 1e-6, rng)


# ---- adaptive pooling -------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("shape,size,channels_last", [((2, 3, 7, 5), (3, 2), False), ((2, 17, 9, 11), (4, 5), True),
                                                      ((3, 7, 5), 2, False), ((2, 3, 5, 7), (7, 9), False),
                                                      ((2, 16, 8, 8), (None, 3), True), ((2, 3, 6, 6), 1, True)])
def test_adaptive_pool(rng, mode, shape, size, channels_last, dtype=torch.float32):
    """torch's windows (overlapping where sizes do not divide, and upsampling), both layouts, a
    3-D input, None keeping a size; the gradient gathered from every window holding a pixel."""
    ours, theirs = getattr(F, f"adaptive_{mode}_pool2d"), getattr(tF, f"adaptive_{mode}_pool2d")
    x = pair(rng, *shape, dtype=dtype, channels_last=channels_last)
    out = check_op(lambda t: ours(t, size), lambda t: theirs(t, size), [x], tol_for(dtype, 1e-6), rng)
    assert out.dtype == dtype and is_channels_last(out.memory) == (channels_last and out.shape[-2:] != (1, 1))


def test_adaptive_pool_modules_indices_and_slices(rng):
    x = pair(rng, 2, 6, 7, 7, channels_last=True)
    check_op(lambda t: nn.AdaptiveAvgPool2d((3, 4))(t[:, 1:4]), lambda t: tF.adaptive_avg_pool2d(t[:, 1:4], (3, 4)),
             [x], 1e-6, rng)
    y, idx = nn.AdaptiveMaxPool2d(3, return_indices=True)(x[0])
    ref, ref_idx = tF.adaptive_max_pool2d(x[1], 3, return_indices=True)
    assert idx.dtype == torch.int64 and torch.equal(idx.memory.cpu(), ref_idx)
    nan = x[0].detach()
    nan.memory[0, 0, 1, 1] = float("nan")
    assert torch.isnan(F.adaptive_max_pool2d(nan, 2).memory[0, 0, 0, 0])
    assert F.adaptive_avg_pool2d(x[0], (0, 2)).shape == x[0].shape[:2] + (0, 2)  # as torch's
    with pytest.raises(RuntimeError, match="output_size must be greater than or equal to 0"):
        F.adaptive_avg_pool2d(x[0], (-1, 2))


@pytest.mark.parametrize("dtype", LOW)
def test_adaptive_pool_16_bit(rng, dtype):
    for mode in ("avg", "max"):
        test_adaptive_pool(rng, mode, (2, 17, 9, 11), (4, 5), True, dtype)


@pytest.mark.parametrize("i", range(len(BLOCK_CONFIGS)))
def test_adaptive_pool_every_config(rng, i, monkeypatch):
    for kernel in (pool.adaptive_pool_kernel, pool.adaptive_pool_backward_kernel):
        only_config(monkeypatch, kernel, BLOCK_CONFIGS[i])
    for dtype in CONFIG_DTYPES:
        for mode in ("avg", "max"):
            test_adaptive_pool(rng, mode, (2, 17, 9, 11), (4, 5), True, dtype)
            test_adaptive_pool(rng, mode, (2, 3, 5, 7), (7, 9), False, dtype)


@pytest.mark.parametrize("stride,ceil_mode", [(None, False), (1, False), (2, True)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_avg_pool_of_the_whole_image_is_a_mean(rng, stride, ceil_mode, channels_last):
    """F.avg_pool2d(x, x.size(2)) (SENet's squeeze) runs as the mean kernel, with torch's values,
    gradient and shape, whatever the stride."""
    x = pair(rng, 2, 40, 6, 5, channels_last=channels_last)
    y = check_op(lambda t: F.avg_pool2d(t, (6, 5), stride, 0, ceil_mode),
                 lambda t: tF.avg_pool2d(t, (6, 5), stride, 0, ceil_mode), [x], TOL["ieee"], rng)
    assert y.shape == (2, 40, 1, 1)


# ---- avg_pool2d's divisors, as torch's --------------------------------------------------------

AVG_GEOMETRIES = [(3, 2, 1, True), ((3, 2), (2, 3), (1, 1), True), (2, 2, 1, True), ((2, 3), (2, 3), (1, 1), False),
                  (1, 3, 0, True), ((3, 1), (3, 3), (1, 0), True)]  # ceil windows clipped, over the padding, past it


@pytest.mark.parametrize("count_include_pad,divisor_override", [(True, None), (False, None), (True, 5), (False, -2)])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", AVG_GEOMETRIES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_avg_pool2d_divisors(rng, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
                             channels_last):
    """count_include_pad both ways and divisor_override against torch, forward and gradient, on
    the overlapping and the window-by-window backward paths; ceil-mode windows that run past the
    padded image (counted as torch: only what lies within it), and the last window dropped where
    it would start past the image (padding 0, stride > kernel)."""
    x = pair(rng, 2, 10, 7, 8, channels_last=channels_last)
    args = (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    check_op(lambda t: F.avg_pool2d(t, *args), lambda t: tF.avg_pool2d(t, *args), [x], 1e-6, rng)
    if divisor_override is None:  # the module (test_conv fuses it after a convolution)
        check_op(lambda t: nn.AvgPool2d(*args)(t), lambda t: tF.avg_pool2d(t, *args), [x], 1e-6, rng)


def test_avg_pool2d_3d_input_module_and_errors(rng):
    x = pair(rng, 3, 7, 6)
    check_op(lambda t: nn.AvgPool2d(3, 2, 1, True, False)(t), lambda t: tF.avg_pool2d(t, 3, 2, 1, True, False),
             [x], 1e-6, rng)
    x = pair(rng, 1, 2, 6, 6)
    check_op(lambda t: F.avg_pool2d(t, 6, divisor_override=4), lambda t: tF.avg_pool2d(t, 6, divisor_override=4),
             [x], 1e-6, rng)  # a whole-image window with an override: the window kernel, not the mean
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x[0], 2, divisor_override=0)
    for fn in (F.avg_pool2d, F.max_pool2d):
        with pytest.raises(RuntimeError, match="pad should be at most half"):
            fn(x[0], 3, 1, 2)


def test_max_pool_ceil_mode_drops_a_window_past_the_image(rng):
    """ceil_mode with padding 0 and stride > kernel: torch drops a last window that would start
    past the image; tnet's max pooling takes the same output size."""
    x = pair(rng, 1, 2, 5, 7)
    y = check_op(lambda t: F.max_pool2d(t, 1, 3, ceil_mode=True), lambda t: tF.max_pool2d(t, 1, 3, ceil_mode=True),
                 [x], 0, rng)
    assert y.shape == (1, 2, 2, 3)


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool1d_divisors(rng, count_include_pad):
    x = pair(rng, 2, 3, 10)
    for k, s, p, ceil in [(3, 2, 1, True), (4, 3, 2, True), (2, 2, 1, False)]:
        check_op(lambda t: F.avg_pool1d(t, k, s, p, ceil, count_include_pad),
                 lambda t: tF.avg_pool1d(t, k, s, p, ceil, count_include_pad), [x], 1e-6, rng)


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pool_of_strided_views_as_torch(rng, mode):
    """max_pool2d and avg_pool2d of a channel slice and of an H/W transpose (strided views, as
    torch takes them: copied dense first), values and gradients."""
    x, xr = leaf(rng, 2, 8, 7, 6)
    fn = getattr(F, f"{mode}_pool2d")
    ref = getattr(torch.nn.functional, f"{mode}_pool2d")
    check(lambda a: fn(a[:, :5], 3, 2, 1), lambda a: ref(a[:, :5], 3, 2, 1), [(x, xr)], rng)
    x.grad = xr.grad = None
    check(lambda a: fn(a.transpose(2, 3), 2), lambda a: ref(a.transpose(2, 3), 2), [(x, xr)], rng)
