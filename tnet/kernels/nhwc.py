"""Stride-1 convolutions over channels-last images, as implicit GEMMs.

Channels-last is PyTorch's torch.channels_last: the tensor keeps its [N, C, H, W] shape, but
element (n, c, h, w) sits at ((n*H + h)*W + w)*C + c (NHWC memory). Here the output pixels
are the GEMM's M, the output channels its N, and K runs over (tap i, tap j, input channel).
Each row of an A tile is BLOCK_C consecutive channels of one input pixel: one contiguous,
aligned vector, where the NCHW kernel (gemm.py, B_MODE 1) gathers single floats. On the
H200 this ran cifar10_quick's conv2 and conv3 2-4x faster than the NCHW kernel, forward and
backward (README, Results). An input with few channels (conv1's 3, not a multiple of 16)
stays NCHW and is read through im2col_tile instead (NCHW_X); the output is channels-last.

- `conv`: y = relu(conv(x, w) + bias), channels-last out. The weight is read through its
  strides (any layout; channels-last weights, as nn.Conv2d keeps them, read 2.3x faster),
  and `input_grad` is the same kernel run over dy with the flipped weight: a view of w
  with negative tap strides.
- `weight_grad`: dw = sum over output pixels of dy[pixel] (x) x[pixel shifted by the tap].
  One program per (tap, C block, Cout block, pixel part); the parts are summed afterwards,
  so the result is deterministic.
"""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from ._autotune import autotune, cdiv, check
from .conv import im2col_tile, memory_format
from .gemm import _SMS, _check_dtype, _precision, _shape, mma
from .reduce import sum_except


def _config(bm, bn, warps, stages, block_p=None):
    sizes = {"BLOCK_M": bm, "BLOCK_N": bn} if block_p is None else {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_P": block_p}
    return triton.Config(sizes, num_warps=warps, num_stages=stages)


def _MISCOMPILED(config):
    """On the H200 with triton 3.6, conv_kernel with this config and 16-wide K steps
    (BLOCK_C 16) gave tf32 results 22% off (NCHW_X, conv1 at b100); its ieee results and
    the other configs were right."""
    return (config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"], config.num_warps, config.num_stages) == (128, 32, 4, 4)


def _prune(configs, named_args, **kwargs):
    """Skip tiles wider than the output channels (conv) or the weight gradient's K blocks,
    and _MISCOMPILED ones. Triton passes the positional arguments in named_args, the keyword
    ones in kwargs."""
    args = {**named_args, **kwargs}
    if "BLOCK_P" in configs[0].kwargs:
        n = args["C"] * (args["KH"] * args["KW"] if args["NCHW_X"] else 1)
    else:
        n = args["COUT"]
    fits = [c for c in configs
            if c.kwargs["BLOCK_N"] <= max(32, n) and not (args.get("BLOCK_C") == 16 and _MISCOMPILED(c))]
    return fits or configs[:1]


# From the prototype's tuning on the H200 (b100 and b1024, conv2, conv3 and conv3's dx).
_CONV_CONFIGS = [_config(64, 32, 4, 4), _config(128, 32, 4, 4), _config(128, 64, 4, 3), _config(64, 64, 4, 4),
                 _config(32, 32, 2, 4), _config(128, 32, 8, 4), _config(256, 32, 8, 3)]
_GRAD_CONFIGS = [_config(32, 32, 4, 3, 64), _config(32, 32, 4, 3, 128), _config(64, 32, 4, 3, 64),
                 _config(64, 32, 4, 4, 32), _config(32, 32, 2, 4, 32), _config(32, 64, 4, 3, 64)]
PART_ALIGN = 256  # weight_grad's pixel parts start at multiples of this (>= any BLOCK_P)
PARTS_WAVES = 4  # weight_grad's parts aim at this many programs per SM (2 made the b1024 step 21 µs slower)


@triton.jit
def _pixel(p, OH: tl.constexpr, OW: tl.constexpr):
    """(image, row, column) of output pixel numbers p."""
    return p // (OH * OW), (p // OW) % OH, p % OW


# The interpreter's big blocks: it pays per program and per op, so 1024-pixel blocks made a CPU
# training step 2.5x faster than 256 (cifar10_quick at b25: 50 -> 20 s on 2 cores)
@autotune(_CONV_CONFIGS, key=["NPIX", "H", "W", "C", "COUT", "KH", "KW", "NCHW_X", "PRECISION"],
          prune_configs_by={"early_config_prune": _prune}, interpret={"BLOCK_M": 1024, "BLOCK_N": 64})
@triton.jit
def conv_kernel(x_ptr, w_ptr, y_ptr, bias_ptr, NPIX, stride_wo, stride_wc, stride_wi, stride_wj,
                H: tl.constexpr, W: tl.constexpr, C: tl.constexpr, COUT: tl.constexpr,
                KH: tl.constexpr, KW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, NCHW_X: tl.constexpr,
                BIAS: tl.constexpr, RELU: tl.constexpr, PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    """y [NPIX, COUT] = relu(sum over taps (i, j) and channels c of x[pixel + (i, j) - (PH, PW), c]
    * w[o, c, i, j] + bias[o]), for x [N, H, W, C] and y [N, OH, OW, COUT] in NHWC memory and
    w read as w_ptr + o*stride_wo + c*stride_wc + i*stride_wi + j*stride_wj. Stride 1, so
    OH = H + 2*PH - KH + 1. BLOCK_C divides C. Taps and channel chunks are one loop with
    constexpr divisors: no run-time division, and Triton pipelines it.
    NCHW_X: x is NCHW instead (a few channels: conv1's 3), read through im2col_tile in
    chunks of BLOCK_C of K = (c, i, j), and w is contiguous (stride_wc etc. unused)."""
    OH: tl.constexpr = H + 2 * PH - KH + 1
    OW: tl.constexpr = W + 2 * PW - KW + 1
    CHUNKS: tl.constexpr = C // BLOCK_C
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # int32: the launcher checks sizes
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_c = tl.arange(0, BLOCK_C)
    mask_m = offs_m < NPIX
    mask_n = offs_n < COUT
    img, oh, ow = _pixel(offs_m, OH, OW)
    w_tile = w_ptr + offs_n[None, :] * stride_wo + offs_c[:, None] * stride_wc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if NCHW_X:
        K: tl.constexpr = C * KH * KW
        x_image = x_ptr + (img * (C * H * W))[:, None]
        pixel = (oh * OW + ow)[:, None]
        for k0 in range(0, K, BLOCK_C):
            k = k0 + offs_c
            a = im2col_tile(x_image, k[None, :], pixel, mask_m[:, None] & (k < K)[None, :], H, W, OW, 1, 1, PH, PW,
                            KH, KW)
            b = tl.load(w_ptr + offs_n[None, :] * K + k[:, None], mask=(k < K)[:, None] & mask_n[None, :], other=0.0)
            acc = mma(a, b, acc, PRECISION, INTERPRET)
    else:
        for t in range(0, KH * KW * CHUNKS):
            i = t // (KW * CHUNKS)
            j = (t // CHUNKS) % KW
            c0 = (t % CHUNKS) * BLOCK_C
            h = oh - PH + i
            w = ow - PW + j
            inside = mask_m & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            a = tl.load(x_ptr + (((img * H + h) * W + w) * C + c0)[:, None] + offs_c[None, :],
                        mask=inside[:, None], other=0.0)
            b = tl.load(w_tile + i * stride_wi + j * stride_wj + c0 * stride_wc, mask=mask_n[None, :], other=0.0)
            acc = mma(a, b, acc, PRECISION, INTERPRET)
    if BIAS:
        acc += tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(y_ptr + offs_m[:, None] * COUT + offs_n[None, :], acc, mask=mask_m[:, None] & mask_n[None, :])


@autotune(_GRAD_CONFIGS, key=["NPIX", "PIX_PER", "H", "W", "C", "COUT", "KH", "KW", "NCHW_X", "PRECISION"],
          prune_configs_by={"early_config_prune": _prune}, interpret={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_P": 1024})
@triton.jit
def weight_grad_kernel(x_ptr, dy_ptr, dw_ptr, NPIX, PIX_PER, stride_dp, stride_do, stride_dc, stride_di, stride_dj,
                       H: tl.constexpr, W: tl.constexpr, C: tl.constexpr, COUT: tl.constexpr,
                       KH: tl.constexpr, KW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, NCHW_X: tl.constexpr,
                       PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_P: tl.constexpr):
    """dw[part s, o, c, i, j] = sum over the output pixels p of part s (PIX_PER of them) of
    dy[p, o] * x[p + (i, j) - (PH, PW), c], for x [N, H, W, C] and dy [N, OH, OW, COUT] in NHWC
    memory; dw at dw_ptr + s*stride_dp + o*stride_do + c*stride_dc + i*stride_di + j*stride_dj.
    Grid (KH*KW * C blocks, COUT blocks, parts). NCHW_X: x is NCHW, the N axis is K = (c, i, j)
    read through im2col_tile, in blocks of BLOCK_N, and dw is contiguous; grid (K blocks, ...)."""
    OH: tl.constexpr = H + 2 * PH - KH + 1
    OW: tl.constexpr = W + 2 * PW - KW + 1
    C_BLOCKS: tl.constexpr = (C + BLOCK_N - 1) // BLOCK_N
    tap = tl.program_id(0) // C_BLOCKS
    i = tap // KW
    j = tap % KW
    offs_n = (tl.program_id(0) % C_BLOCKS) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < C
    if NCHW_X:
        offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        mask_n = offs_n < C * KH * KW
    offs_m = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < COUT
    part = tl.program_id(2)
    first = part * PIX_PER
    end = tl.minimum(first + PIX_PER, NPIX)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for p0 in range(first, end, BLOCK_P):
        offs_p = p0 + tl.arange(0, BLOCK_P)
        img, oh, ow = _pixel(offs_p, OH, OW)
        in_part = offs_p < end
        g = tl.load(dy_ptr + offs_p[None, :] * COUT + offs_m[:, None], mask=mask_m[:, None] & in_part[None, :],
                    other=0.0)
        if NCHW_X:
            x = im2col_tile(x_ptr + (img * (C * H * W))[:, None], offs_n[None, :], (oh * OW + ow)[:, None],
                            in_part[:, None] & mask_n[None, :], H, W, OW, 1, 1, PH, PW, KH, KW)
        else:
            h = oh - PH + i
            w = ow - PW + j
            inside = in_part & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            x = tl.load(x_ptr + (((img * H + h) * W + w) * C)[:, None] + offs_n[None, :],
                        mask=inside[:, None] & mask_n[None, :], other=0.0)
        acc = mma(g, x, acc, PRECISION, INTERPRET)
    dw = dw_ptr + part.to(tl.int64) * stride_dp + offs_m[:, None] * stride_do
    if NCHW_X:
        tl.store(dw + offs_n[None, :], acc, mask=mask_m[:, None] & mask_n[None, :])
    else:
        tl.store(dw + offs_n[None, :] * stride_dc + i * stride_di + j * stride_dj, acc,
                 mask=mask_m[:, None] & mask_n[None, :])


def channels_fit(channels):
    """Whether a channel count suits the NHWC kernels: a multiple of 16, the tensor cores'
    smallest K. Activations with such counts are kept channels-last."""
    return channels % 16 == 0


def fits_shape(c, cout, kernel, stride, padding):
    """Whether this module runs a convolution of c to cout channels: stride 1, padding below
    the kernel (the input gradient is then a convolution too) and cout fitting. x is then
    channels-last if c fits too, else NCHW (NCHW_X: conv1's 3 channels)."""
    return (tuple(stride) == (1, 1) and padding[0] < kernel[0] and padding[1] < kernel[1] and channels_fit(cout))


def fits(x, w, stride, padding):
    """fits_shape for x [N, C, H, W] and w [Cout, C, kh, kw], and x under 2^31 elements."""
    return fits_shape(w.shape[1], w.shape[0], w.shape[2:], stride, padding) and x.numel() < 2**31


def _check_image(name, x, arg="x"):
    """x: float32 [N, C, H, W] under 2^31 elements, channels-last if C fits, else NCHW."""
    layout = memory_format(channels_fit(x.shape[1]))
    check(x.dim() == 4 and x.dtype == torch.float32 and x.numel() < 2**31 and x.is_contiguous(memory_format=layout),
          lambda: f"{name}: {arg} must be a float32 [N, C, H, W] tensor under 2^31 elements, channels-last if C is a "
                  f"multiple of 16 and NCHW otherwise; got {_shape(x)} {x.dtype} with strides {x.stride()}")


def _run_conv(x, w, w_strides, cout, kernel, padding, bias, relu, precision):
    """conv_kernel over x with the weight at w (a tensor or a view's base) read through
    w_strides (o, c, i, j); returns y [N, cout, OH, OW], channels-last."""
    N, C, H, W = x.shape
    (KH, KW), (PH, PW) = kernel, padding
    OH, OW = H + 2 * PH - KH + 1, W + 2 * PW - KW + 1
    check(OH > 0 and OW > 0, lambda: f"conv: a {KH}x{KW} kernel with padding {padding} does not fit {H}x{W}")
    y = torch.empty((N, cout, OH, OW), device=x.device, dtype=torch.float32, memory_format=torch.channels_last)
    npix = N * OH * OW
    check(npix * cout < 2**31, "conv: the output exceeds 2^31 elements; split the batch")
    grid = lambda meta: (cdiv(npix, meta["BLOCK_M"]), cdiv(cout, meta["BLOCK_N"]))
    nchw_x = not channels_fit(C)
    # NCHW_X takes its K in one step when K fits 128: conv1's forward at b1024 ran in 105 us
    # against 179 in steps of 16 (H200; steps of 32 and 64 were slower than 16)
    block_c = (128 if C * KH * KW <= 128 else 16) if nchw_x else (16 if C % 32 else 32)
    conv_kernel[grid](x, w, y, bias if bias is not None else y, npix, *w_strides, H, W, C, cout, KH, KW, PH, PW,
                      NCHW_X=nchw_x, BIAS=bias is not None, RELU=relu, PRECISION=precision, INTERPRET=INTERPRET,
                      BLOCK_C=block_c)
    return y


def _check_weight(name, x, w):
    _check_dtype(name, w, "w")
    check(w.dim() == 4 and w.shape[1] == x.shape[1] and channels_fit(w.shape[0]) and w.device == x.device
          and (channels_fit(w.shape[1]) or w.is_contiguous()),
          lambda: f"{name}: w is {_shape(w)} on {w.device}; x {_shape(x)} on {x.device} needs "
                  f"[Cout, {x.shape[1]}, kh, kw] there, Cout a multiple of 16 (and w contiguous when C is not)")


def conv(x, w, padding, *, bias=None, relu=False, precision=None):
    """y = relu(conv2d(x, w, stride 1, padding) + bias) for x [N, C, H, W] (channels-last if C
    is a multiple of 16, else NCHW) and w [Cout, C, kh, kw] (any strides, or contiguous for an
    NCHW x); y [N, Cout, OH, OW] is channels-last."""
    _check_image("conv", x)
    _check_weight("conv", x, w)
    check(bias is None or (bias.shape == (w.shape[0],) and bias.is_contiguous() and bias.dtype == torch.float32),
          lambda: f"conv: bias must be a contiguous float32 vector of {w.shape[0]}, got {tuple(bias.shape)}")
    return _run_conv(x, w, w.stride(), w.shape[0], w.shape[2:], padding, bias, relu, _precision("conv", precision, w))


def input_grad(dy, w, padding, *, precision=None):
    """dx [N, C, H, W] (channels-last) of a stride-1 convolution by w [Cout, C, kh, kw] with
    padding p, for its output gradient dy [N, Cout, OH, OW] (channels-last): the "full"
    convolution of dy by w flipped in both tap axes with the channel axes swapped, padding
    kh-1-p. The flip is a view: w read from its last tap backwards. The K axis of the flipped
    weight is (tap, Cout), so w is first copied with Cout fastest (a small copy; reading the
    channels-last weight instead made the b1024 step 40 µs slower on the H200)."""
    _check_image("input_grad", dy, "dy")
    cout, c, kh, kw = w.shape
    check(dy.shape[1] == cout, lambda: f"input_grad: dy has {dy.shape[1]} channels but w is {_shape(w)}")
    w = w.permute(1, 2, 3, 0).contiguous().permute(3, 0, 1, 2)
    so, sc, si, sj = w.stride()
    last = w.as_strided((1,), (1,), w.storage_offset() + (kh - 1) * si + (kw - 1) * sj)  # w[0, 0, kh-1, kw-1]
    full = (kh - 1 - padding[0], kw - 1 - padding[1])
    return _run_conv(dy, last, (sc, so, -si, -sj), c, (kh, kw), full, None, False,
                     _precision("input_grad", precision, w))


def weight_grad(dy, x, kernel, padding, *, precision=None, parts=None, channels_last=False):
    """dw [Cout, C, kh, kw] of a stride-1 convolution of x [N, C, H, W] with padding, for its
    output gradient dy [N, Cout, OH, OW], channels-last (x as for `conv`). dw is contiguous,
    or with channels_last in channels-last memory (as a weight kept there). The pixels are split
    into `parts` sums (by default enough programs for PARTS_WAVES per SM), which are added
    after in a fixed order."""
    _check_image("weight_grad", dy, "dy")
    _check_image("weight_grad", x)
    N, C, H, W = x.shape
    (KH, KW), (PH, PW) = kernel, padding
    cout, OH, OW = dy.shape[1], H + 2 * PH - KH + 1, W + 2 * PW - KW + 1
    check(dy.shape == (N, cout, OH, OW) and dy.device == x.device,
          lambda: f"weight_grad: dy is {_shape(dy)} but x {_shape(x)} with a {KH}x{KW} kernel gives "
                  f"[{N}, Cout, {OH}, {OW}]")
    check(not channels_last or channels_fit(C), "weight_grad: channels_last needs C to be a multiple of 16")
    return _run_weight_grad(x, dy, kernel, padding, _precision("weight_grad", precision, dy), parts, channels_last)


def _run_weight_grad(x, dy, kernel, padding, precision, parts, channels_last):
    """weight_grad_kernel over checked operands, then the sum of its parts."""
    N, C, H, W = x.shape
    (KH, KW), (PH, PW) = kernel, padding
    cout, npix = dy.shape[1], dy.shape[0] * dy.shape[2] * dy.shape[3]
    nchw_x = not channels_fit(C)
    if parts is None:  # enough programs for PARTS_WAVES per SM (with 32-wide tiles)
        blocks = cdiv(C * KH * KW, 32) if nchw_x else KH * KW
        parts = max(1, min(cdiv(npix, 4 * PART_ALIGN), PARTS_WAVES * _SMS // blocks))
    per = cdiv(cdiv(npix, parts), PART_ALIGN) * PART_ALIGN
    parts = cdiv(npix, per)
    dw = torch.empty((cout, C, KH, KW), device=x.device, dtype=torch.float32,
                     memory_format=memory_format(channels_last))
    out = dw if parts == 1 else torch.empty((parts, dw.numel()), device=x.device, dtype=torch.float32)
    k_blocks = lambda n: cdiv(C * KH * KW, n) if nchw_x else KH * KW * cdiv(C, n)
    grid = lambda meta: (k_blocks(meta["BLOCK_N"]), cdiv(cout, meta["BLOCK_M"]), parts)
    weight_grad_kernel[grid](x, dy, out, npix, per, dw.numel(), *dw.stride(), H, W, C, cout, KH, KW, PH, PW,
                             NCHW_X=nchw_x, PRECISION=precision, INTERPRET=INTERPRET)
    if parts > 1:
        sum_except(out, 1, out=dw.permute(0, 2, 3, 1).view(-1) if channels_last else dw.view(-1))
    return dw
