"""Convolutions against torch in float64: the kernels (implicit GEMMs over channels-last images)
and both gradients at each precision, every tile config, the weight gradient in parts; conv2d
through the tape, with the fused ReLU and pooling, the layouts it keeps, nn.Conv2d's weights and
autocast."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
from tnet import functional as F, nn
from tnet.kernels import conv, conv_tma, depthwise
from tnet.kernels.reduce import best_parts
from tnet.kernels.launch import is_channels_last, keeps_channels_last, tile_config
from helpers import CL, ROUNDING, TOL, Launches, assert_close, check, check_op, cl_randn, f64, leaf, only_config, pair, randn


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
GROUPED = [  # x shape, Cout, kernel, stride, padding, dilation, groups: the implicit GEMMs
    ((2, 6, 7, 9), 9, (3, 3), (1, 1), (1, 1), (1, 1), 3),  # 2 channels a group, gathered as (i, j, c)
    ((2, 8, 7, 6), 12, (3, 2), (2, 2), (1, 0), (1, 1), 4),  # stride 2, rectangular kernel
    ((2, 64, 6, 5), 64, (3, 3), (1, 1), (2, 2), (2, 2), 2),  # 32 channels a group: read as vectors; dilation 2
    ((2, 10, 9, 8), 10, (2, 4), (1, 1), "same", (2, 1), 2),  # 'same', even kernel: padding after > before
    ((2, 16, 9, 7), 24, (4, 4), (1, 1), "same", (1, 1), 1),  # groups 1, 'same' with an even kernel
    ((1, 5, 9, 10), 8, (3, 3), (2, 2), (2, 2), (2, 3), 1),  # groups 1, dilation, a narrow NCHW x
    ((2, 12, 7, 8), 12, (3, 3), (2, 1), "valid", (1, 2), 3),  # 'valid', mixed strides and dilations
    ((2, 6, 7, 5), 6, (3, 3), (1, 1), (1, 1), (1, 1), 6),  # depthwise as 6 GEMMs of one channel
]
DEPTHWISE = [  # x shape, Cout, kernel, stride, padding, dilation: groups == C, the stencils
    ((2, 16, 7, 9), 16, (3, 3), (1, 1), (1, 1), (1, 1)),  # MobileNet's 3x3, stride 1
    ((2, 24, 9, 8), 24, (3, 3), (2, 2), (1, 1), (1, 1)),  # stride 2
    ((2, 8, 7, 6), 16, (3, 3), (1, 1), (1, 1), (1, 1)),  # channel multiplier 2
    ((2, 12, 8, 7), 24, (5, 5), (2, 2), (2, 2), (1, 1)),  # EfficientNet's 5x5, stride 2, multiplier 2
    ((2, 10, 7, 9), 10, (4, 2), (1, 1), "same", (2, 1)),  # 'same' with an even kernel, dilation
    ((1, 3, 6, 7), 3, (3, 3), (1, 2), (0, 1), (2, 1)),  # a narrow NCHW x, mixed strides and dilations
    ((2, 80, 5, 6), 80, (3, 3), (1, 1), (1, 1), (1, 1)),  # a second, partial channel block
]


def check_conv(shape, cout, kernel, stride, padding, precision, parts=None, dilation=1, groups=1, kernels=conv):
    """conv2d (bias, ReLU), conv2d_input and conv2d_weight of `kernels` (conv or depthwise)
    against torch in float64 on the same (rounded) inputs; x channels-last when wide, NCHW when
    narrow (as the layers keep them)."""
    dtype = DTYPES[precision]
    x = (cl_randn(*shape) if keeps_channels_last(shape[1]) else randn(*shape)).to(dtype)
    w = (randn(cout, shape[1] // groups, *kernel) * 0.3).to(dtype).contiguous(memory_format=CL)
    b = randn(cout)
    xd, wd = f64(x).requires_grad_(True), f64(w).requires_grad_(True)
    ref = tF.conv2d(xd, wd, f64(b), stride, padding, dilation, groups)
    what = (f"{precision} x {shape} w {tuple(w.shape)} stride {stride} padding {padding} dilation {dilation} "
            f"groups {groups}")
    args = (stride, padding, dilation, groups)
    # 16-bit outputs within their rounding, fp32 ones (dw, and all at tf32 and ieee) within TOL
    tol, tol_dw = (ROUNDING[precision], 1e-4) if precision in ROUNDING else (TOL[precision],) * 2
    y = kernels.conv2d(x, w, *args, bias=b, relu=True, precision=precision)
    assert is_channels_last(y) or y.shape[1] == 1, "channels-last output"
    assert y.dtype == dtype and y.shape == ref.shape
    assert_close(y, torch.relu(ref), tol, f"forward {what}")
    g = cl_randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    dx = kernels.conv2d_input(x.shape, w, g, *args, precision=precision)
    assert dx.dtype == dtype and (is_channels_last(dx) or shape[2:] == (1, 1))
    assert_close(dx, xd.grad, tol, f"input gradient {what}")
    dw = kernels.conv2d_weight(x, w.shape, g, *args, precision=precision, parts=parts)
    assert dw.dtype == torch.float32 and dw.is_contiguous(memory_format=CL)
    assert_close(dw, wd.grad, tol_dw, f"weight gradient {what}, parts {parts}")


@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16", "fp16"])
@pytest.mark.parametrize("shape,cout,kernel,stride,padding", CONVS)
def test_conv(precision, shape, cout, kernel, stride, padding):
    check_conv(shape, cout, kernel, stride, padding, precision)


@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16", "fp16"])
@pytest.mark.parametrize("shape,cout,kernel,stride,padding,dilation,groups", GROUPED)
def test_conv_groups_dilation(precision, shape, cout, kernel, stride, padding, dilation, groups):
    check_conv(shape, cout, kernel, stride, padding, precision, dilation=dilation, groups=groups)


@pytest.mark.parametrize("precision", ["ieee", "bf16", "fp16"])  # fp32 products at every precision: tf32 is ieee
@pytest.mark.parametrize("shape,cout,kernel,stride,padding,dilation", DEPTHWISE)
def test_depthwise(precision, shape, cout, kernel, stride, padding, dilation):
    check_conv(shape, cout, kernel, stride, padding, precision, dilation=dilation, groups=shape[1], kernels=depthwise)


def by_output_rows(monkeypatch):
    """Make the depthwise forward and input gradient take their rows kernel where autotune.fastest would choose
    (the interpreter and TNET_AUTOTUNE=0 run the first candidate, the pixel blocks), and a 3x3 weight gradient
    its own (the GPU's choice; the interpreter's is the pixel blocks)."""
    monkeypatch.setattr(depthwise, "fastest", lambda key, candidates: candidates[1]())
    monkeypatch.setattr(depthwise, "WEIGHT_BY_ROWS", True)


@pytest.mark.parametrize("shape,kernel,padding,parts,precision", [
    ((2, 16, 7, 9), (3, 3), (1, 1), None, "ieee"),  # MobileNet's 3x3 'same'
    ((2, 16, 7, 9), (3, 3), (1, 1), None, "bf16"),
    ((2, 80, 5, 6), (3, 3), (1, 1), 3, "ieee"),  # a second, partial channel block; rows in parts (the last shorter)
    ((3, 8, 6, 5), (3, 3), (0, 0), 2, "bf16"),  # 'valid': rows of 3 columns
    ((1, 4, 4, 3), (3, 3), (2, 1), 7, "ieee"),  # padding past a tap: rows of dy without x, more parts than rows
    ((2, 8, 1, 5), (3, 3), (1, 1), 2, "ieee"),  # one row an image: every row of x its image's first
    ((3, 8, 2, 1), (3, 3), (1, 1), 4, "ieee"),  # one column; parts that start inside an image
    ((2, 12, 7, 8), (5, 5), (2, 2), None, "fp16"),  # EfficientNet's 5x5: its weight gradient keeps the tap blocks
    ((1, 6, 5, 6), (2, 4), "same", 2, "ieee"),  # an even kernel's 'same': more padding after than before
])
def test_depthwise_by_rows(shape, kernel, padding, parts, precision, monkeypatch):
    """A stride-1 layer runs by output rows: the forward and the input gradient depthwise_rows_kernel
    (autotune.fastest's second candidate, taken here as the GPU takes it where it times faster), a 3x3 one's
    weight gradient depthwise_weight3_kernel (nine sums over the rows of each part); other layers keep the
    pixel-block kernels."""
    by_output_rows(monkeypatch)
    log, calls = [], []
    monkeypatch.setattr(depthwise, "depthwise_rows_kernel", Launches(depthwise.depthwise_rows_kernel, log))
    by_rows = depthwise._weight_rows
    monkeypatch.setattr(depthwise, "_weight_rows", lambda *args: calls.append(args) or by_rows(*args))
    check_conv(shape, shape[1], kernel, (1, 1), padding, precision, parts, groups=shape[1], kernels=depthwise)
    if parts is None and kernel == (3, 3):  # a channel multiplier of 2
        check_conv((2, 8, 7, 6), 16, (3, 3), (1, 1), (1, 1), precision, groups=8, kernels=depthwise)
    assert [kwargs["TRANSPOSED"] for *_, kwargs in log] == [False, True] and len(calls) == (kernel == (3, 3))


def by_flat_rows(monkeypatch):
    """Make the depthwise forward and input gradient take their flat-rows kernel (autotune.fastest's third
    candidate), as the GPU would where it times fastest."""
    monkeypatch.setattr(depthwise, "fastest", lambda key, candidates: candidates[2]())


@pytest.mark.parametrize("shape,kernel,padding,parts,precision", [
    ((2, 16, 7, 9), (3, 3), (1, 1), None, "ieee"),  # MobileNet's 3x3 'same'
    ((2, 12, 5, 6), (3, 3), (1, 1), 3, "bf16"),  # 12 channels (not a power of 2); rows in parts, the last shorter
    ((3, 8, 6, 5), (3, 3), (0, 0), 2, "fp16"),  # 'valid': output rows narrower than the input's
    ((2, 6, 7, 8), (5, 5), (2, 2), None, "ieee"),  # 5x5
    ((1, 6, 5, 6), (2, 4), "same", None, "ieee"),  # an even kernel's 'same': more padding after than before
])
def test_depthwise_by_flat_rows(shape, kernel, padding, parts, precision, monkeypatch):
    """A stride-1 layer's forward and input gradient by flat rows (depthwise_flat_kernel): each output row's
    columns and channels one vector, each tap a shifted window of an input row."""
    by_flat_rows(monkeypatch)
    log = []
    monkeypatch.setattr(depthwise, "depthwise_flat_kernel", Launches(depthwise.depthwise_flat_kernel, log))
    check_conv(shape, shape[1], kernel, (1, 1), padding, precision, parts, groups=shape[1], kernels=depthwise)
    assert [kwargs["TRANSPOSED"] for *_, kwargs in log] == [False, True]


@pytest.mark.parametrize("parts", [1, 2, 5])
def test_depthwise_weight_parts(parts, monkeypatch):
    """The depthwise weight gradient's pixels split into parts (the last one shorter), summed after."""
    monkeypatch.setattr(depthwise, "PART_PIXELS", 16)
    check_conv((3, 16, 5, 6), 32, (3, 3), (1, 1), (1, 1), "ieee", parts, groups=16, kernels=depthwise)


@pytest.mark.parametrize("parts", [1, 2, 5])
def test_conv_weight_parts(parts, monkeypatch):
    """The pixels split into parts (the last one shorter), summed after."""
    monkeypatch.setattr(conv, "PART_ALIGN", 16)
    check_conv((3, 16, 5, 6), 16, (3, 3), (1, 1), (1, 1), "ieee", parts)
    check_conv((3, 3, 5, 6), 16, (3, 3), (2, 1), (1, 1), "ieee", parts)


@pytest.mark.parametrize("kernels,groups", [(conv, 1), (conv, 4), (depthwise, 16)])
def test_conv_empty_batch(kernels, groups):
    """An empty batch: empty outputs and input gradients, a weight gradient of zeros (as torch)."""
    x, w = cl_randn(0, 16, 5, 5), randn(16, 16 // groups, 3, 3)
    y = kernels.conv2d(x, w, 1, 1, 1, groups)
    assert y.shape == (0, 16, 5, 5) and kernels.conv2d_input(x.shape, w, y, 1, 1, 1, groups).shape == x.shape
    assert (kernels.conv2d_weight(x, w.shape, y, 1, 1, 1, groups) == 0).all()


@pytest.mark.parametrize("groups,channels", [(1, 4), (2, 4), (4, 4), (1, 40)])  # grouped, depthwise, channel vectors
def test_functional_conv_of_an_empty_batch_as_torchs(groups, channels):
    """F.conv2d of an empty batch: torch's empty output (shape, dtype, memory facts aside) and gradients (an empty one
    for x, zeros for w and b) for every stride, padding and dilation torch takes, dilation 0 among them (torch's empty
    batch runs no kernel: its window spans d * (k - 1) + 1 = 1 pixel), and torch's error where it raises."""
    cases = [(s, p, d, hw, k) for s in (1, 2) for p in (0, 1, "same", "valid") for d in (0, 1, 2)
             for hw in ((5, 4), (1, 1), (0, 3)) for k in (1, 3)]
    for stride, padding, dilation, hw, k in cases:
        results = []
        for lib in (tnet, torch):
            x = lib.zeros(0, channels, *hw, requires_grad=True)
            w = lib.ones(2 * groups, channels // groups, k, k, requires_grad=True)
            b = lib.ones(2 * groups, requires_grad=True)
            try:
                y = lib.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups)
            except RuntimeError:  # tnet's InputError is one
                results.append("RuntimeError")
                continue
            y.sum().backward()
            results.append((tuple(y.shape), y.dtype, tuple(x.grad.shape), w.grad.abs().sum().item(), b.grad.tolist()))
        assert results[0] == results[1], (stride, padding, dilation, hw, k)


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.conv2d(lib.zeros(1, 4, 5, 5), lib.ones(2, 4, 3, 3), None, 1, 0, 0),
    lambda lib: lib.nn.functional.conv2d(lib.zeros(4, 5, 5), lib.ones(2, 4, 3, 3), None, 1, 0, (1, 0)),
    lambda lib: lib.nn.functional.conv2d(lib.zeros(0, 4, 5, 5), lib.ones(2, 4, 3, 3), None, 1, 0, -1),
    lambda lib: lib.nn.functional.conv2d(lib.zeros(1, 4, 5, 5), lib.ones(2, 4, 3, 3), None, 1, 0, (2, -1)),
    lambda lib: lib.nn.functional.conv1d(lib.zeros(1, 4, 5), lib.ones(2, 4, 3), None, 1, 0, 0),
    lambda lib: lib.nn.functional.conv1d(lib.zeros(0, 4, 5), lib.ones(2, 4, 3), None, 1, 0, -1),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.zeros(1, 4, 5, 5), lib.ones(4, 2, 3, 3), None, 1, 0, 0, 1, (1, 0)),
    lambda lib: lib.nn.functional.conv_transpose1d(lib.zeros(1, 4, 5), lib.ones(4, 2, 3), None, 1, 0, 0, 1, 0),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.zeros(0, 4, 5, 5), lib.ones(4, 2, 3, 3), None, 1, 0, 0, 1, -1),
    lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 4, 5, 5, 5), lib.ones(2, 4, 3, 3, 3), None, 1, 0, (0, 1, 1)),
    lambda lib: lib.nn.functional.conv_transpose3d(lib.zeros(1, 4, 3, 3, 3), lib.ones(4, 2, 2, 2, 2), None, 1, 0, 0, 1,
                                                   0)],
    ids=["zero", "zero_unbatched", "negative_empty_batch", "negative", "conv1d_zero", "conv1d_negative_empty_batch",
         "transposed_zero", "transposed_1d_zero", "transposed_negative_empty_batch", "conv3d_zero_depth",
         "transposed_3d_zero"])
def test_conv_dilation_errors_are_torchs(call):
    """torch's RuntimeError and text for a dilation below 1: negative always, 0 where the batch holds samples (the
    transposed convolutions name the axes); conv1d's as conv2d's of [N, C, 1, L], as torch's."""
    texts = []
    for lib in (tnet, torch):
        with pytest.raises(RuntimeError) as e:
            call(lib)
        texts.append(str(e.value))
    assert texts[0] == texts[1]
    assert tnet.nn.functional.conv1d(tnet.zeros(0, 4, 5), tnet.ones(2, 4, 3), None, 1, 0, 0).shape == (0, 2, 5)


@pytest.mark.parametrize("op", ["conv_transpose1d", "conv_transpose2d", "conv3d", "conv_transpose3d"])
def test_other_convolutions_of_an_empty_batch_as_torchs(op):
    """conv3d's and the transposed convolutions' empty batch, dilation 0 among the arguments, as torch's: the output's
    shape and the gradients (empty for x, zeros for w), or the error where torch raises."""
    dims = {"conv_transpose1d": 1, "conv_transpose2d": 2, "conv3d": 3, "conv_transpose3d": 3}[op]
    for stride, padding, dilation, k in [(s, p, d, k) for s in (1, 2) for p in (0, 1) for d in (0, 1, 2) for k in (1, 3)]:
        results = []
        for lib in (tnet, torch):
            x = lib.zeros(0, 4, *(5, 4, 3)[:dims], requires_grad=True)
            w = lib.ones(*((2, 4) if op == "conv3d" else (4, 2)), *(k,) * dims, requires_grad=True)
            args = (stride, padding, dilation) if op == "conv3d" else (stride, padding, 0, 1, dilation)
            try:
                y = getattr(lib.nn.functional, op)(x, w, None, *args)
            except RuntimeError:  # a window larger than the padded input, in both
                results.append("RuntimeError")
                continue
            y.sum().backward()
            results.append((tuple(y.shape), tuple(x.grad.shape), w.grad.abs().sum().item()))
        assert results[0] == results[1], (stride, padding, dilation, k)


def test_weight_parts_fill_whole_waves(monkeypatch):
    """conv2d_weight's default part count, on the H200's 132 SMs: whole waves of programs, and
    no more parts than the balance they bring pays for in sums; 1 in the interpreter."""
    monkeypatch.setattr(conv, "SMS", 132)
    assert conv.weight_grad_parts(1024 * 7 * 7, 18) == 7  # airbench's 256 -> 256 at 7x7, 256x128 tiles: a wave of 126
    assert conv.weight_grad_parts(1024 * 15 * 15, 18, per_sm=2) == 14  # two tiles at a time per SM: a wave of 252
    assert conv.weight_grad_parts(300, 1) == 1  # too few pixels to split
    assert conv._resident(tile_config(256, 128, 64, 8, 3).kwargs, "fp16") == 1
    assert conv._resident({"BLOCK_M": 8, "BLOCK_N": 8, "BLOCK_K": 8}, "fp16") == 1
    monkeypatch.setattr(conv, "SMS", 0)
    assert conv.weight_grad_parts(1024 * 7 * 7, 18) == 1
    # the TMA weight gradient's: ResNet-18's 512 -> 512 at 4x4, b256 (64 runs of 64 pixels), 128x128x64
    # tiles, 144 programs a part and two an SM: 3 parts (the 2 of its own rule make 288 programs, a wave and a tail)
    assert conv_tma._WGRAD_RESIDENT[128, 128, 64] == 2
    assert best_parts(64 * 64, 144, 2 * 132, 64) == 3


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
    if i >= conv.GROUPED_CONFIGS:
        return  # never run for groups or dilation
    # groups and dilation: read as vectors (32 channels a group), and gathered (8 a group)
    check_conv((2, 64, 9, 10), 96, (3, 3), (1, 1), (2, 2), precision, parts=3, dilation=2, groups=2)
    check_conv((2, 24, 9, 8), 48, (3, 2), (2, 2), "valid", precision, parts=2, dilation=(1, 2), groups=3)


@pytest.mark.skipif(tnet.INTERPRET, reason="the interpreter runs one config, and ignores warps and stages")
@pytest.mark.parametrize("precision", ["ieee", "bf16", "fp16"])
@pytest.mark.parametrize("i", range(max(len(depthwise._CONFIGS), len(depthwise._GRAD_CONFIGS))))
def test_depthwise_every_config(i, precision, monkeypatch):
    """Each config of the depthwise kernels (their products are fp32 at every precision: tf32
    is ieee's), in each storage dtype: stride 1 and 2, a channel multiplier, 'same' with an even
    kernel, several channel blocks, the weight gradient in parts."""
    for kernel in (depthwise.depthwise_kernel, depthwise.depthwise_weight_kernel, depthwise.depthwise_rows_kernel,
                   depthwise.depthwise_weight3_kernel, depthwise.depthwise_flat_kernel):
        only_config(monkeypatch, kernel, kernel.all_configs[min(i, len(kernel.all_configs) - 1)])
    monkeypatch.setattr(depthwise, "PART_PIXELS", 16)
    by_output_rows(monkeypatch)  # 3x3 layers by rows, then by pixel blocks
    check_conv((2, 96, 9, 10), 96, (3, 3), (1, 1), (1, 1), precision, parts=3, groups=96, kernels=depthwise)
    check_conv((2, 200, 5, 33), 200, (3, 3), (1, 1), (0, 2), precision, parts=2, groups=200, kernels=depthwise)
    with monkeypatch.context() as flat:
        by_flat_rows(flat)
        check_conv((2, 144, 9, 10), 144, (3, 3), (1, 1), (1, 1), precision, parts=3, groups=144, kernels=depthwise)
        check_conv((2, 24, 6, 7), 24, (5, 5), (1, 1), (2, 2), precision, groups=24, kernels=depthwise)
    monkeypatch.setattr(depthwise, "by_rows", lambda *args, **kwargs: False)  # the pixel-block kernels
    check_conv((2, 96, 9, 10), 96, (3, 3), (1, 1), (1, 1), precision, parts=3, groups=96, kernels=depthwise)
    check_conv((2, 40, 9, 8), 80, (5, 5), (2, 2), (2, 2), precision, parts=2, groups=40, kernels=depthwise)
    check_conv((2, 264, 6, 7), 264, (4, 2), (1, 1), "same", precision, parts=2, dilation=(1, 2), groups=264,
               kernels=depthwise)


def test_conv_prune_reads_keyword_arguments():
    """As Triton calls it: positional arguments in a dict, the keyword ones as keywords; tiles
    no wider than the problem, and within shared memory."""
    args = {"NPIX": 5000, "C": 3, "COUT": 32, "KH": 5, "KW": 5, "G": 1, "DH": 1, "DW": 1}
    tiles = conv._prune_conv(conv._CONV_CONFIGS, args, WIDE=False, PRECISION="tf32")
    assert tiles and all(c.kwargs["BLOCK_N"] <= 64 and conv.fits_shared_memory(c, "tf32") for c in tiles)
    assert not conv.fits_shared_memory(tile_config(128, 256, 64, 8, 3), "tf32")  # 294 KB: failed on the H200
    wide = conv._prune_conv(conv._CONV_CONFIGS, {**args, "C": 256, "COUT": 256}, WIDE=True, PRECISION="bf16")
    assert any(c.kwargs["BLOCK_K"] == 64 and c.kwargs["BLOCK_N"] == 256 for c in wide)
    grad = conv._prune_grad(conv._GRAD_CONFIGS, {"C": 32, "COUT": 32, "KH": 5, "KW": 5, "NPIX": 512, "G": 1, "DH": 1,
                                                 "DW": 1}, WIDE=True, PRECISION="tf32")
    assert grad and all(c.kwargs["BLOCK_N"] <= 64 and c.kwargs["BLOCK_M"] <= 64 for c in grad)
    # grouped or dilated: the first GROUPED_CONFIGS only
    for prune, configs in ((conv._prune_conv, conv._CONV_CONFIGS), (conv._prune_grad, conv._GRAD_CONFIGS)):
        for extra in ({"G": 2}, {"DH": 2}, {"DW": 3}):
            kept = prune(configs, {**args, "C": 256, "COUT": 256, "NPIX": 1 << 20, **extra}, WIDE=True,
                         PRECISION="bf16")
            assert kept and all(c in configs[:conv.GROUPED_CONFIGS] for c in kept)


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
    with pytest.raises(ValueError, match="groups must be a positive int that divides the input's 16 channels"):
        conv.conv2d(x, w, groups=3)
    with pytest.raises(ValueError, match=r"weight is 16x16x3x3 .* must be \[Cout, 8, kh, kw\]"):
        conv.conv2d(x, w, groups=2)
    with pytest.raises(ValueError, match=r"Cout a multiple of groups=4"):
        conv.conv2d(x, randn(6, 4, 3, 3), groups=4)
    with pytest.raises(ValueError, match="does not fit input"):
        conv.conv2d_weight(x, (16, 4, 3, 3), cl_randn(2, 16, 6, 6), 1, 1, 1, 2)
    with pytest.raises(ValueError, match=r"dilation 4\) with padding 1, 1 does not fit"):
        conv.conv2d(x, w, 1, 1, 4)
    with pytest.raises(ValueError, match="'same' is not supported for strided"):
        conv.conv2d(x, w, 2, "same")
    with pytest.raises(ValueError, match="groups must equal the input's 16 channels"):
        depthwise.conv2d(x, randn(16, 2, 3, 3), groups=8)
    with pytest.raises(ValueError, match=r"weight is 8x1x3x3 .* must be \[Cout, 1, kh, kw\] .* multiple of groups=16"):
        depthwise.conv2d(x, randn(8, 1, 3, 3), groups=16)
    with pytest.raises(ValueError, match="does not fit input"):
        depthwise.conv2d_weight(x, (16, 2, 3, 3), cl_randn(2, 16, 6, 6), 1, 1, 1, 16)


@pytest.mark.parametrize("groups", [1, 16])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_conv2d_autocast(dtype, groups):
    """F.conv2d under tnet.autocast: 16-bit products and output from an fp32 input and fp32
    weights (read through their 16-bit copies), fp32 gradients for both; also depthwise."""
    x = tnet.Tensor(randn(2, 16, 5, 6), requires_grad=True)
    w = tnet.nn.Parameter(randn(32 if groups > 1 else 24, 16 // groups, 3, 3) * 0.3)
    with tnet.autocast("cuda", dtype=dtype):
        y = F.conv2d(x, w, None, 1, 1, 1, groups)
    assert y.dtype == dtype and x.memory.dtype == torch.float32
    g = cl_randn(*y.shape).to(dtype)
    y.backward(tnet.Tensor(g))
    xd, wd = f64(x.memory).requires_grad_(True), f64(w.memory.to(dtype)).requires_grad_(True)
    ref = tF.conv2d(xd, wd, None, 1, 1, 1, groups)
    ref.backward(f64(g))
    assert_close(y.memory, ref, TOL["bf16"], "forward")
    assert x.grad.dtype == torch.float32 and w.grad.dtype == torch.float32
    assert_close(x.grad.memory, xd.grad, TOL["bf16"], "input gradient")
    assert_close(w.grad.memory, wd.grad, TOL["bf16"], "weight gradient")


# ---- conv2d through the tape ----------------------------------------------------------------

@pytest.mark.parametrize("shape,wshape,stride,padding", [
    ((2, 3, 11, 11), (5, 3, 5, 5), 1, 2),   # K = 75
    ((3, 2, 7, 9), (7, 2, 3, 3), 2, 1),
    ((1, 1, 1, 1), (1, 1, 1, 1), 1, 0),
    ((2, 4, 8, 6), (3, 4, 3, 2), (2, 1), (0, 1)),
    ((2, 4, 8, 6), (3, 4, 3, 2), 1, (2, 0)),  # stride 1: the input gradient is a convolution too
])
def test_conv2d(rng, ieee, shape, wshape, stride, padding):
    inputs = [pair(rng, *shape), pair(rng, *wshape, scale=0.3), pair(rng, wshape[0])]
    check_op(lambda x, w, b: F.conv2d(x, w, b, stride, padding),
             lambda x, w, b: tF.conv2d(x, w, b, stride, padding), inputs, TOL["ieee"], rng)


@pytest.mark.parametrize("shape,wshape,stride,padding,dilation,groups", [
    ((2, 6, 7, 8), (9, 2, 3, 3), 1, 1, 1, 3),  # grouped
    ((2, 4, 9, 7), (4, 1, 3, 3), 2, 1, 1, 4),  # depthwise, stride 2
    ((2, 3, 8, 7), (6, 1, 3, 3), 1, "same", 2, 3),  # depthwise, channel multiplier 2, dilated 'same'
    ((2, 4, 7, 6), (5, 4, 2, 2), 1, "same", 1, 1),  # 'same' with an even kernel
    ((2, 4, 9, 8), (4, 2, 3, 2), (2, 1), "valid", (1, 3), 2),
])
def test_conv2d_groups_dilation(rng, ieee, shape, wshape, stride, padding, dilation, groups):
    """Through the tape, torch's positional order, with the fused ReLU."""
    inputs = [pair(rng, *shape), pair(rng, *wshape, scale=0.3), pair(rng, wshape[0])]
    check_op(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups, relu=True),
             lambda x, w, b: torch.relu(tF.conv2d(x, w, b, stride, padding, dilation, groups)), inputs, TOL["ieee"],
             rng)


def test_depthwise_separable_block(rng, ieee):
    """MobileNet's block as nn layers: a depthwise 3x3 (stride 2) and a pointwise 1x1, each with
    its ReLU fused by Sequential, then a grouped conv with a fused max pooling; weights [Cout,
    C/groups, kh, kw] as torch's, loaded from torch's layers."""
    from tnet import nn

    def block(nn, **kw):
        return nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1, groups=16, **kw), nn.ReLU(), nn.Conv2d(16, 32, 1, **kw),
                             nn.ReLU(), nn.Conv2d(32, 32, 3, 1, 1, 1, 4, **kw), nn.MaxPool2d(2), nn.ReLU())
    net, ref = block(nn), block(torch.nn, dtype=torch.float64)
    assert net[0].weight.shape == (16, 1, 3, 3) and net[4].weight.shape == (32, 8, 3, 3)
    assert "groups=16" in repr(net[0])
    net.load_state_dict({k: v.float().numpy() for k, v in ref.state_dict().items()})
    x = rng.standard_normal((2, 16, 9, 9))
    out, out_ref = net(tnet.tensor(x)), ref(torch.tensor(x))
    assert_close(out, out_ref, TOL["ieee"], "forward")
    g = rng.standard_normal(out_ref.shape)
    out_ref.backward(torch.tensor(g))
    out.backward(g)
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        assert_close(p.grad, q.grad, TOL["ieee"], f"gradient of {name}")


def test_conv2d_fused_relu(rng, ieee):
    inputs = [pair(rng, 2, 3, 9, 9), pair(rng, 4, 3, 3, 3, scale=0.3), pair(rng, 4)]
    check_op(lambda x, w, b: F.conv2d(x, w, b, 1, 1, relu=True),
             lambda x, w, b: torch.relu(tF.conv2d(x, w, b, 1, 1)), inputs, TOL["ieee"], rng)


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_conv2d_relu_pool2d(rng, ieee, mode):
    pool = tF.max_pool2d if mode == "max" else tF.avg_pool2d
    inputs = [pair(rng, 2, 3, 9, 9), pair(rng, 4, 3, 3, 3, scale=0.3), pair(rng, 4)]
    check_op(lambda x, w, b: F.conv2d_relu_pool2d(x, w, b, 1, 1, mode, 3, 2, ceil_mode=True),
             lambda x, w, b: pool(torch.relu(tF.conv2d(x, w, b, 1, 1)), 3, 2, ceil_mode=True),
             inputs, TOL["ieee"], rng)
    if mode == "avg":  # torch's other divisors, through Conv2d's fused pooling as Sequential runs it
        conv = nn.Conv2d(3, 4, 3, padding=1)
        conv.weight.memory.copy_(inputs[1][1].detach().float())
        conv.bias.memory.copy_(inputs[2][1].detach().float())
        for args in [(3, 2, 1, True, False), (2, 2, 1, False, True, 3)]:
            check_op(lambda x: conv(x, relu=True, pool=nn.AvgPool2d(*args)),
                     lambda x: tF.avg_pool2d(torch.relu(tF.conv2d(x, inputs[1][1], inputs[2][1], 1, 1)), *args),
                     inputs[:1], TOL["ieee"], rng)


def test_conv2d_channels_last_path(rng, ieee):
    """Stride-1 convolutions to 16 channels run the NHWC kernels and return channels-last
    outputs: from 16 channels on a channels-last x (an NCHW one is copied), from 3 on the NCHW
    x itself. Reshape hands back an NCHW gradient, which the tape puts into each output's
    layout before its backward."""
    from tnet.kernels.launch import is_channels_last
    inputs = [pair(rng, 2, 3, 8, 7), pair(rng, 16, 3, 3, 3, scale=0.3), pair(rng, 16),
              pair(rng, 16, 16, 5, 5, scale=0.1), pair(rng, 16)]

    def net(conv, pool, relu, x, w1, b1, w2, b2):
        h = pool(relu(conv(x, w1, b1, 1, 1)), 3, 2, ceil_mode=True)
        return relu(conv(h, w2, b2, 1, 2)).reshape(2, -1)
    check_op(lambda *a: net(F.conv2d, F.max_pool2d, F.relu, *a),
             lambda *a: net(tF.conv2d, tF.max_pool2d, torch.relu, *a), inputs, TOL["ieee"], rng)
    x, w1, b1 = (t for t, _ in inputs[:3])
    h = F.conv2d(x, w1, b1, 1, 1)
    p = F.max_pool2d(h, 3, 2, ceil_mode=True)
    assert is_channels_last(h.memory) and is_channels_last(p.memory)
    assert is_channels_last(F.max_pool2d(tnet.tensor(rng.standard_normal((2, 16, 5, 5))), 2).memory)
    assert is_channels_last(F.conv2d(p, *[t for t, _ in inputs[3:]], 1, 2).memory)
    assert is_channels_last(F.conv2d(h, *[t for t, _ in inputs[3:]], 1, 2).memory)
    fused = [pair(rng, 2, 16, 9, 9), pair(rng, 32, 16, 3, 3, scale=0.3), pair(rng, 32)]
    check_op(lambda x, w, b: F.conv2d_relu_pool2d(x, w, b, 1, 1, "avg", 3, 2, ceil_mode=True),
             lambda x, w, b: tF.avg_pool2d(torch.relu(tF.conv2d(x, w, b, 1, 1)), 3, 2, ceil_mode=True),
             fused, TOL["ieee"], rng)


def test_sequential_fuses_relu_into_conv(rng, ieee):
    """conv -> max pool -> ReLU, conv -> ReLU -> avg pool and conv -> ReLU run fused; values
    and gradients are those of the layers run one by one."""
    from tnet import nn
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, weight_filler=nn.gaussian(0.3)), nn.MaxPool2d(3, 2),
                        nn.ReLU(), nn.Conv2d(4, 5, 3, weight_filler=nn.gaussian(0.3)), nn.ReLU(),
                        nn.AvgPool2d(2), nn.ReLU(), nn.Conv2d(5, 6, 1, weight_filler=nn.gaussian(0.3)), nn.ReLU())
    for p in net.parameters():  # biases that move some outputs below zero
        p.memory.copy_(torch.from_numpy(rng.standard_normal(p.shape).astype(np.float32) * 0.3))
    x = rng.standard_normal((2, 3, 10, 10))
    g = rng.standard_normal((2, 6, 1, 1))
    results = []
    for fused in (True, False):
        h = tnet.tensor(x)
        if fused:
            h = net(h)
        else:
            for layer in net:
                h = layer(h)
        h.backward(g)
        results.append([h.numpy()] + [p.grad.numpy() for p in net.parameters()])
        for p in net.parameters():
            p.grad = None
    for fused, alone in zip(*results):
        np.testing.assert_allclose(fused, alone, rtol=1e-6, atol=1e-7)


def test_conv2d_mixes_layouts(rng, ieee):
    """A channels-last output feeding a strided convolution (the NCHW kernels: its input is
    copied to NCHW, and its input gradient back to channels-last by the tape)."""
    inputs = [pair(rng, 2, 16, 6, 5), pair(rng, 16, 16, 3, 3, scale=0.2), pair(rng, 16, 16, 3, 3, scale=0.2)]
    check_op(lambda x, w1, w2: F.conv2d(F.conv2d(x, w1, None, 1, 1), w2, None, 2, 1),
             lambda x, w1, w2: tF.conv2d(tF.conv2d(x, w1, None, 1, 1), w2, None, 2, 1), inputs, TOL["ieee"], rng)


def test_conv2d_module_keeps_weights_channels_last(rng, ieee):
    """nn.Conv2d stores its weights channels-last (the kernels read a tap's channels, or
    (i, j, c), contiguously); their gradients, momentum and state_dict follow, with the logical
    [Cout, C, kh, kw] values."""
    from tnet import nn, optim
    from tnet.kernels.launch import is_channels_last
    conv = nn.Conv2d(16, 32, 3, padding=1)
    assert is_channels_last(nn.Conv2d(3, 16, 3, padding=1).weight.memory)
    assert is_channels_last(nn.Conv2d(16, 32, 3, stride=2).weight.memory)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    conv.load_state_dict({"weight": w, "bias": np.zeros(32, np.float32)})
    assert is_channels_last(conv.weight.memory) and (conv.state_dict()["weight"].numpy() == w).all()
    x, g = rng.standard_normal((2, 16, 5, 5)), rng.standard_normal((2, 32, 5, 5))
    wd = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    tF.conv2d(torch.tensor(x), wd, None, 1, 1).backward(torch.tensor(g))
    opt = optim.SGD(conv.parameters(), lr=0.5)
    conv(tnet.tensor(x)).backward(g)
    assert is_channels_last(conv.weight.grad.memory)
    opt.step()
    assert_close(conv.weight, wd.detach() - 0.5 * wd.grad, TOL["ieee"], "one SGD step")


def test_conv2d_tf32_default(rng):
    assert tnet.get_precision() == "tf32"
    inputs = [pair(rng, 2, 3, 11, 11), pair(rng, 5, 3, 5, 5), pair(rng, 5)]
    check_op(lambda x, w, b: F.conv2d(x, w, b, padding=2), lambda x, w, b: tF.conv2d(x, w, b, padding=2),
             inputs, TOL["tf32"], rng)


# ---- the transposed convolution ------------------------------------------------------------

@pytest.mark.parametrize("n,cin,hw,cout,k,stride,padding,output_padding,groups,dilation", [
    (2, 4, 5, 6, 3, 2, 1, 1, 1, 1),   # a DCGAN-like upsampling, the odd row and column added
    (2, 32, 4, 16, 4, 2, 1, 0, 1, 1),  # wide: channel vectors
    (1, 4, 3, 4, 3, 1, 0, 0, 2, 2),    # grouped and dilated
    (2, 8, 4, 8, 3, 2, 1, 1, 8, 1),    # depthwise
])
def test_conv_transpose2d_as_torch(rng, ieee, n, cin, hw, cout, k, stride, padding, output_padding, groups, dilation):
    """F.conv_transpose2d and nn.ConvTranspose2d against torch in float64: the output, and the
    input's, weight's and bias's gradients."""
    x, w, b = leaf(rng, n, cin, hw, hw), leaf(rng, cin, cout // groups, k, k), leaf(rng, cout)
    args = (stride, padding, output_padding, groups, dilation)
    check(lambda x, w, b: F.conv_transpose2d(x, w, b, *args), lambda x, w, b: tF.conv_transpose2d(x, w, b, *args),
          [x, w, b], rng)
    layer = nn.ConvTranspose2d(cin, cout, k, stride, padding, output_padding, groups, dilation=dilation)
    ref = torch.nn.ConvTranspose2d(cin, cout, k, stride, padding, output_padding, groups, dilation=dilation).double()
    ref.load_state_dict({name: torch.from_numpy(np.asarray(v, np.float64)) for name, v in layer.state_dict().items()})
    check(layer, ref, [leaf(rng, n, cin, hw, hw)], rng)
    assert tuple(layer.weight.shape) == tuple(ref.weight.shape)


def test_conv_transpose2d_errors():
    x, w = tnet.randn(1, 4, 3, 3), tnet.randn(4, 2, 3, 3)
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        F.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="Cin"):
        F.conv_transpose2d(tnet.randn(1, 3, 3, 3), w)


def test_conv_transpose_output_size_as_torch(rng, ieee):
    """ConvTranspose2d(x, output_size=...) and ConvTranspose1d's, as an autoencoder's decoder undoes a
    stride-2 encoder of odd size: the output_padding torch derives, from spatial sizes or the whole
    shape (a torch.Size), and torch's ValueError outside the sizes the stride reaches."""
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for size in ([8, 9], (7, 10), torch.Size([2, 2, 8, 10])):
        layer = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, dilation=1)
        ref = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
        ref.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in layer.state_dict().items()})
        out, expected = layer(tnet.tensor(x), output_size=size), ref(torch.from_numpy(x), output_size=size)
        assert_close(out, expected.detach(), TOL["ieee"] * 10, f"output_size={size}")
    for lib in (tnet, torch):
        with pytest.raises(ValueError, match="valid sizes range from"):
            lib.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)(lib.ones(1, 3, 4, 5), output_size=[9, 9])
        with pytest.raises(ValueError, match="output_size must have"):
            lib.nn.ConvTranspose2d(3, 2, 3, stride=2)(lib.ones(1, 3, 4, 5), output_size=[9])
    layer = nn.ConvTranspose1d(3, 2, 4, stride=3)
    assert layer(tnet.ones(2, 3, 5), output_size=[16]).shape == (2, 2, 16)
    assert layer(tnet.ones(3, 5), output_size=(2, 17)).shape == (2, 17)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 1, 1, 1), (2, 0, 2, 2), (1, "same", 1, 4)])
def test_conv1d_as_torch(rng, ieee, stride, padding, dilation, groups):
    """F.conv1d and nn.Conv1d (a conv2d over [N, C, 1, L]) against torch in float64, gradients too."""
    x, w, b = leaf(rng, 2, 8, 11), leaf(rng, 12, 8 // groups, 3), leaf(rng, 12)
    args = (stride, padding, dilation, groups)
    check(lambda x, w, b: F.conv1d(x, w, b, *args), lambda x, w, b: tF.conv1d(x, w, b, *args), [x, w, b], rng)
    layer = nn.Conv1d(8, 12, 3, stride, padding, dilation, groups)
    ref = torch.nn.Conv1d(8, 12, 3, stride, padding, dilation, groups).double()
    ref.load_state_dict({name: torch.from_numpy(np.asarray(v, np.float64)) for name, v in layer.state_dict().items()})
    check(layer, ref, [leaf(rng, 2, 8, 11)], rng)


@pytest.mark.parametrize("padding_mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding,dilation", [(2, 1), ("same", 2), (1, 3)])
def test_conv1d_padding_modes_as_torch(rng, ieee, padding_mode, padding, dilation):
    """nn.Conv1d's padding_mode (F.pad's mode first, then no padding, as torch's; 'same' split as torch
    splits it, the odd one at the end) against torch in float64, gradients too."""
    layer = nn.Conv1d(4, 5, 4, 1, padding, dilation, padding_mode=padding_mode)
    ref = torch.nn.Conv1d(4, 5, 4, 1, padding, dilation, padding_mode=padding_mode).double()
    ref.load_state_dict({name: torch.from_numpy(np.asarray(v, np.float64)) for name, v in layer.state_dict().items()})
    check(layer, ref, [leaf(rng, 2, 4, 13)], rng)
    assert f"padding_mode={padding_mode}" in repr(layer) and repr(layer) == repr(ref)


@pytest.mark.parametrize("n, stride, padding, dilation, groups", [(1, 2, 1, 1, 2), (2, 1, 0, 1, 1), (2, 2, 1, 1, 2),
                                                                 (2, 3, 0, 2, 1), (3, 2, 1, 1, 2)])
def test_nn_grad(rng, n, stride, padding, dilation, groups, ieee):
    """torch.nn.grad's conv{1,2,3}d_input and _weight (also as F.grad) against torch's: odd sizes, so that a
    stride leaves rows out that input_size alone tells."""
    x = rng.standard_normal((2, 4) + (9,) * n).astype(np.float32)
    w = rng.standard_normal((6, 4 // groups) + (3,) * n).astype(np.float32)
    conv = getattr(tF, f"conv{n}d")
    g = rng.standard_normal(conv(torch.tensor(x), torch.tensor(w), None, stride, padding, dilation, groups).shape)
    g = g.astype(np.float32)
    args = (stride, padding, dilation, groups)
    ref_x = getattr(torch.nn.grad, f"conv{n}d_input")(x.shape, torch.tensor(w), torch.tensor(g), *args)
    ref_w = getattr(torch.nn.grad, f"conv{n}d_weight")(torch.tensor(x), w.shape, torch.tensor(g), *args)
    gx = getattr(nn.grad, f"conv{n}d_input")(x.shape, tnet.tensor(w), tnet.tensor(g), *args)
    gw = getattr(F.grad, f"conv{n}d_weight")(tnet.tensor(x), w.shape, tnet.tensor(g), *args)
    assert_close(gx, ref_x, TOL["ieee"], "input gradient")
    assert_close(gw, ref_w, TOL["ieee"], "weight gradient")
