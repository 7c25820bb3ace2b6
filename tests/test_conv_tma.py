"""The TMA convolutions (kernels/conv_tma.py) against torch in float64: forward (bias, ReLU), input
and weight gradients at bf16 and fp16, boxes of one image's rows and of several whole images, channel
counts of each K step, every tile config; and conv.py routing to them where they suit."""
import pytest
import torch
import torch.nn.functional as tF

from tnet.kernels import conv, conv_tma
from tnet.kernels.launch import is_channels_last
from helpers import CL, DEV, ROUNDING, TOL, assert_close, cl_randn, config_indices, f64, only_ith_config, randn

SHAPES = [  # x shape, Cout, kernel, padding
    ((2, 16, 6, 7), 32, (3, 3), (1, 1)),  # a box of rows; K steps of 16; a partial row and column box
    ((3, 32, 3, 3), 16, (3, 3), (1, 1)),  # several whole images a box, the last box past the batch; K steps of 32
    ((2, 64, 5, 4), 24, (1, 1), (0, 0)),  # 1x1; Cout not a multiple of the N block
    ((2, 48, 5, 6), 64, (3, 2), (1, 0)),  # a rectangular kernel; C in K steps of 16
    ((1, 16, 4, 4), 80, (3, 3), (2, 2)),  # padding past the kernel's reach: rows of zeros only
]


@pytest.fixture(autouse=True)
def tf32_enabled(monkeypatch):
    """The tf32 forward, off by default (no faster than the gathering kernel), on for these tests."""
    monkeypatch.setattr(conv_tma, "TF32_ENABLED", conv_tma.ENABLED)


@pytest.fixture
def any_width(monkeypatch):
    """The kernels at the tests' small channel counts, which the router leaves to conv.py's."""
    monkeypatch.setattr(conv_tma, "MIN_OUT_CHANNELS", 8)
    monkeypatch.setattr(conv_tma, "MIN_PHASE_CHANNELS", 8)


def check_tma(shape, cout, kernel, padding, dtype):
    precision = "bf16" if dtype == torch.bfloat16 else "fp16"
    x = cl_randn(*shape).to(dtype)
    w = (randn(cout, shape[1], *kernel) * 0.3).to(dtype).contiguous(memory_format=CL)
    b = randn(cout)
    xd, wd = f64(x).requires_grad_(True), f64(w).requires_grad_(True)
    ref = tF.conv2d(xd, wd, f64(b), 1, padding)
    what = f"{precision} x {shape} w {tuple(w.shape)} padding {padding}"
    assert conv_tma.suits((1, 1), (1, 1), 1, precision, x, w)
    y = conv_tma.conv(x, w, ref.shape[2:], cout, padding, False, bias=b, relu=True, precision=precision,
                      out_dtype=dtype)
    assert is_channels_last(y) and y.dtype == dtype
    assert_close(y, torch.relu(ref), ROUNDING[precision], f"forward {what}")
    g = cl_randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    assert conv_tma.suits((1, 1), (1, 1), 1, precision, g, w, transposed=True) == (cout % 16 == 0)
    dx = conv_tma.conv(g, w, shape[2:], shape[1], padding, True, precision=precision, out_dtype=dtype)
    assert is_channels_last(dx) and dx.dtype == dtype
    assert_close(dx, xd.grad, ROUNDING[precision], f"input gradient {what}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,cout,kernel,padding", SHAPES)
def test_conv_tma(shape, cout, kernel, padding, dtype, any_width):
    check_tma(shape, cout, kernel, padding, dtype)


STRIDE2_SHAPES = [  # x shape (even height and width), Cout, kernel, padding
    ((2, 16, 8, 10), 32, (3, 3), (1, 1)),  # a box of rows; taps in both phases of a pair, the first pair -1
    ((3, 32, 4, 4), 24, (1, 1), (0, 0)),  # ResNet's 1x1 shortcut; several whole images a box
    ((1, 16, 10, 6), 16, (7, 7), (3, 3)),  # an ImageNet stem's reach: pairs -2 to +1
    ((2, 16, 6, 6), 16, (3, 2), (0, 1)),  # no padding above: the last row pair past the image reads zeros
]


def check_stride_2(shape, cout, kernel, padding, dtype=torch.bfloat16):
    """The forward at stride 2 (the image read in row and column pairs) and the input gradient (each
    phase of dx by its own taps); odd sizes stay gathered."""
    precision = "bf16" if dtype == torch.bfloat16 else "fp16"
    x = cl_randn(*shape).to(dtype)
    w = (randn(cout, shape[1], *kernel) * 0.3).to(dtype).contiguous(memory_format=CL)
    b = randn(cout)
    xd = f64(x).requires_grad_(True)
    ref = tF.conv2d(xd, f64(w), f64(b), 2, padding)
    what = f"x {shape} w {tuple(w.shape)} padding {padding}"
    assert conv_tma.suits((2, 2), (1, 1), 1, precision, x, w)
    assert not conv_tma.suits((2, 2), (1, 1), 1, precision, cl_randn(1, shape[1], 7, 8).to(dtype), w)
    y = conv_tma.conv(x, w, ref.shape[2:], cout, padding, False, stride=2, bias=b, relu=True, precision=precision,
                      out_dtype=dtype)
    assert_close(y, torch.relu(ref), ROUNDING[precision], f"stride-2 forward {what}")
    g = cl_randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    assert conv_tma.suits((2, 2), (1, 1), 1, precision, g, w, transposed=True, out_hw=shape[2:]) == (cout % 16 == 0)
    assert not conv_tma.suits((2, 2), (1, 1), 1, precision, g, w, transposed=True, out_hw=(shape[2] + 1, shape[3]))
    dx = conv_tma.conv(g, w, shape[2:], shape[1], padding, True, stride=2, precision=precision, out_dtype=dtype)
    assert_close(dx, xd.grad, ROUNDING[precision], f"stride-2 input gradient {what}")


@pytest.mark.parametrize("shape,cout,kernel,padding", STRIDE2_SHAPES)
def test_conv_tma_stride_2(shape, cout, kernel, padding, any_width):
    check_stride_2(shape, cout, kernel, padding)


def check_tf32(shape, cout, kernel, padding):
    """The tf32 forward of fp32 operands (K steps of at most 32 channels); its input gradient stays
    gathered (tf32's wgmma reads A K-major, the transposed pass's weight box is not)."""
    x = cl_randn(*shape)
    w = (randn(cout, shape[1], *kernel) * 0.3).contiguous(memory_format=CL)
    b = randn(cout)
    ref = tF.conv2d(f64(x), f64(w), f64(b), 1, padding)
    assert conv_tma.suits((1, 1), (1, 1), 1, "tf32", x, w)
    assert not conv_tma.suits((1, 1), (1, 1), 1, "tf32", cl_randn(*ref.shape), w, transposed=True)
    assert not conv_tma.suits((1, 1), (1, 1), 1, "ieee", x, w)
    y = conv_tma.conv(x, w, ref.shape[2:], cout, padding, False, bias=b, relu=True, precision="tf32",
                      out_dtype=torch.float32)
    assert is_channels_last(y) and y.dtype == torch.float32
    assert_close(y, torch.relu(ref), TOL["tf32"], f"tf32 forward x {shape} w {tuple(w.shape)} padding {padding}")


@pytest.mark.parametrize("shape,cout,kernel,padding", SHAPES[:3])
def test_conv_tma_tf32_forward(shape, cout, kernel, padding, any_width):
    check_tf32(shape, cout, kernel, padding)


WEIGHT_SHAPES = [  # x shape, Cout, kernel, padding: outputs of powers of 2 rows and columns
    ((2, 64, 8, 8), 64, (3, 3), (1, 1)),  # runs of whole rows (64 pixels: the interpreter's run)
    ((3, 64, 4, 4), 128, (3, 3), (1, 1)),  # runs of whole images, the last run past the batch
    ((2, 72, 8, 5), 64, (3, 2), (1, 0)),  # a rectangular kernel, 8x4 outputs; C past the N block
    ((1, 64, 2, 2), 80, (1, 1), (0, 0)),  # 1x1, a run longer than the batch's pixels
]


def check_weight(shape, cout, kernel, padding, dtype):
    """conv_tma.weight_grad against float64 at fp32's tolerance: the products of 16-bit values are exact
    in fp32, so only the sums' order differs."""
    precision = "bf16" if dtype == torch.bfloat16 else "fp16"
    x = cl_randn(*shape).to(dtype)
    w = (randn(cout, shape[1], *kernel) * 0.3).to(dtype).contiguous(memory_format=CL)
    xd, wd = f64(x), f64(w).requires_grad_(True)
    ref = tF.conv2d(xd, wd, None, 1, padding)
    g = cl_randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    assert conv_tma.suits_weight((1, 1), (1, 1), 1, precision, x, g)
    dw = conv_tma.weight_grad(x, g, w.shape, padding, precision)
    assert dw.dtype == torch.float32 and dw.is_contiguous(memory_format=CL)
    assert_close(dw, wd.grad, 1e-4, f"weight gradient {precision} x {shape} w {tuple(w.shape)} padding {padding}")
    assert conv_tma.weight_grad(x, g, w.shape, padding, precision, channels_last=False).is_contiguous()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,cout,kernel,padding", WEIGHT_SHAPES)
def test_conv_tma_weight(shape, cout, kernel, padding, dtype):
    check_weight(shape, cout, kernel, padding, dtype)


PADDED_WEIGHT_SHAPES = [  # outputs of other sizes, padded to powers of 2 (PADDED)
    ((2, 64, 7, 7), 64, (3, 3), (1, 1)),  # 7x7 in 8x8 boxes: a run an image
    ((3, 64, 3, 3), 72, (3, 3), (1, 1)),  # 3x3 in 4x4: runs of four images, past the batch; Cout past M
    ((2, 64, 15, 15), 64, (3, 3), (1, 1)),  # 15x15 in 16x16: runs of 4 rows, the last past the image
    ((2, 64, 6, 10), 64, (3, 3), (1, 0)),  # 6x8 outputs in 8x8: the rows alone padded
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,cout,kernel,padding", PADDED_WEIGHT_SHAPES)
def test_conv_tma_weight_padded(shape, cout, kernel, padding, dtype, monkeypatch):
    monkeypatch.setattr(conv_tma, "PADDED", True)
    check_weight(shape, cout, kernel, padding, dtype)


def test_conv_tma_weight_suits_powers_of_2_and_wide_channels():
    x, g = (cl_randn(2, 64, 8, 8).to(torch.bfloat16) for _ in range(2))
    assert conv_tma.suits_weight((1, 1), (1, 1), 1, "bf16", x, g)
    assert not conv_tma.suits_weight((1, 1), (1, 1), 1, "bf16", x, cl_randn(2, 64, 7, 7).to(torch.bfloat16))
    assert not conv_tma.suits_weight((1, 1), (1, 1), 1, "bf16", x[:, :32], g[:, :32].contiguous(memory_format=CL))
    assert not conv_tma.suits_weight((2, 2), (1, 1), 1, "bf16", x, g)
    assert not conv_tma.suits_weight((1, 1), (1, 1), 1, "tf32", x.float(), g.float())


@pytest.mark.parametrize("i", config_indices([conv_tma.conv_tma_kernel, conv_tma.conv_tma_wgrad_kernel,
                                              conv_tma.conv_tma_dgrad2_kernel]))
def test_conv_tma_every_config(i, monkeypatch, any_width):
    """Each tile config, its blocks in the interpreter too: boxes of rows and of whole images."""
    only_ith_config(monkeypatch, [conv_tma.conv_tma_kernel, conv_tma.conv_tma_wgrad_kernel,
                                  conv_tma.conv_tma_dgrad2_kernel], i)
    for dtype in (torch.bfloat16, torch.float16) if DEV.type == "cuda" else (torch.bfloat16,):  # one path on the CPU
        check_tma((2, 64, 9, 10), 64, (3, 3), (1, 1), dtype)
        check_tma((5, 128, 4, 4), 256, (3, 3), (1, 1), dtype)
        check_weight((2, 64, 16, 16), 128, (3, 3), (1, 1), dtype)
        check_weight((5, 128, 4, 4), 64, (3, 3), (1, 1), dtype)
    check_tf32((2, 64, 9, 10), 128, (3, 3), (1, 1))
    monkeypatch.setattr(conv_tma, "PADDED", True)
    for dtype in (torch.bfloat16, torch.float16) if DEV.type == "cuda" else (torch.bfloat16,):
        check_weight((3, 64, 15, 15), 128, (3, 3), (1, 1), dtype)
        check_weight((5, 128, 3, 3), 64, (3, 3), (1, 1), dtype)
    for dtype in (torch.bfloat16, torch.float16) if DEV.type == "cuda" else (torch.bfloat16,):
        check_stride_2((2, 64, 8, 16), 128, (3, 3), (1, 1), dtype)
        check_stride_2((3, 128, 8, 8), 256, (1, 1), (0, 0), dtype)


def test_conv_routes_to_tma_where_it_suits(monkeypatch):
    """conv.py's passes run the TMA kernels for 16-bit stride-1 convolutions of channels-last tensors
    with enough channels (the weight gradient: of 8x8 images here), the forward at stride 2 and fp32's
    tf32 forward, the gathering kernels for the rest (stride 2's and fp32's gradients, groups, few
    outputs), each against float64."""
    calls = []
    real, real_weight = conv_tma.conv, conv_tma.weight_grad
    monkeypatch.setattr(conv_tma, "conv", lambda *a, **k: calls.append(a[5]) or real(*a, **k))
    monkeypatch.setattr(conv_tma, "weight_grad", lambda *a, **k: calls.append("w") or real_weight(*a, **k))
    monkeypatch.setattr(conv_tma, "MIN_OUT_CHANNELS", 32)
    monkeypatch.setattr(conv_tma, "MIN_WEIGHT_CHANNELS", 16)
    x = cl_randn(2, 32, 8, 8).to(torch.bfloat16)
    w = (randn(32, 32, 3, 3) * 0.3).to(torch.bfloat16).contiguous(memory_format=CL)
    for stride, dtype, groups, cout, expect in [(1, torch.bfloat16, 1, 32, [False, True, "w"]),
                                                (2, torch.bfloat16, 1, 32, [False]),  # the forward
                                                (1, torch.float32, 1, 32, [False]),  # tf32: the forward
                                                (1, torch.bfloat16, 2, 32, []),
                                                (1, torch.bfloat16, 1, 16, [True, "w"])]:  # dx: 32 outputs
        calls.clear()
        xs, ws = x.to(dtype), w[:cout, :32 // groups].to(dtype).contiguous(memory_format=CL)
        xd, wd = f64(xs).requires_grad_(True), f64(ws).requires_grad_(True)
        ref = tF.conv2d(xd, wd, None, stride, 1, 1, groups)
        tol = TOL["bf16"] if dtype == torch.bfloat16 else TOL["tf32"]
        assert_close(conv.conv2d(xs, ws, stride, 1, 1, groups), ref, tol, f"forward stride {stride} {dtype}")
        g = cl_randn(*ref.shape).to(dtype)
        ref.backward(f64(g))
        assert_close(conv.conv2d_input(xs.shape, ws, g, stride, 1, 1, groups), xd.grad, tol, "input gradient")
        assert_close(conv.conv2d_weight(xs, ws.shape, g, stride, 1, 1, groups), wd.grad, tol, "weight gradient")
        assert calls == expect, (stride, dtype, groups, cout, calls)


def test_conv_routes_the_stride_2_input_gradient_to_tma_on_trial(monkeypatch):
    """conv.conv2d_input of a stride-2 convolution runs conv_tma_dgrad2_kernel where the
    input's height and width are even, the gathering kernel for odd sizes, each against float64."""
    calls = []
    real = conv_tma.conv
    monkeypatch.setattr(conv_tma, "conv", lambda *a, **k: calls.append((a[5], k.get("stride"))) or real(*a, **k))
    monkeypatch.setattr(conv_tma, "MIN_PHASE_CHANNELS", 32)
    w = (randn(32, 32, 3, 3) * 0.3).to(torch.bfloat16).contiguous(memory_format=CL)
    for size, expect in ((8, [(True, 2)]), (7, [])):
        calls.clear()
        xd = f64(cl_randn(2, 32, size, size)).requires_grad_(True)
        ref = tF.conv2d(xd, f64(w), None, 2, 1)
        g = cl_randn(*ref.shape).to(torch.bfloat16)
        ref.backward(f64(g))
        assert_close(conv.conv2d_input(xd.shape, w, g, 2, 1), xd.grad, TOL["bf16"], f"input gradient at {size}")
        assert calls == expect, (size, calls)
