"""Depthwise convolutions: groups == C input channels, Cout = M*C for a channel multiplier M
(MobileNet's and EfficientNet's 3x3 and 5x5 layers), output channel o reading input channel o // M
through torch's grouped weight [Cout, 1, kh, kw]. Each weight meets one channel, so there is no
GEMM to run: these are memory-bound stencils over channels-last images (NHWC memory), each tap a
[pixels, channels] tile of contiguous channel vectors, fp32 sums whatever the storage.

- `conv2d`: y = relu(conv(x, w) + bias), a program per block of output pixels x a vector of
  output channels, the taps unrolled.
- `conv2d_input`: dx, the same kernel run transposed (as conv.py's), each input channel summing
  its M output channels' taps.
- `conv2d_weight`: dw, a reduction over the output pixels: a program per (block of up to 16
  taps, channel block, part of the pixels) keeps [pixels, taps, channels] fp32 sums, reduced once
  at its end; the parts are added after in a fixed order (deterministic).
- A stride-1 layer of one output channel per input channel may run by output rows instead, each
  row one [columns, channels] tile with per-row addresses: the forward and the input gradient
  `depthwise_rows_kernel` (kernels up to 7x7), where it times faster than the pixel blocks for the
  layer's shapes and dtypes (autotune.fastest: the interpreter, whose cost is per program, runs the pixel
  blocks); a 3x3 one's weight gradient `depthwise_weight3_kernel` on the GPU (WEIGHT_BY_ROWS),
  a program per (channel block, part of the rows of x) keeping a sum for each of the nine taps (the
  16-tap block leaves 7 lanes of 16 empty), each row of x loaded once against three rows of dy.
- The forward and the input gradient may also run over flat rows (`depthwise_flat_kernel`), an NHWC
  row's columns and channels one vector, each tap a shifted window of it: a third autotune.fastest
  candidate. (The weight gradient's over flat rows timed no faster than the channel blocks, and went.)

Products are fp32 at every precision: there are no tensor cores to feed, and 16-bit operands
multiply exactly in fp32 (so `precision` is checked, and changes nothing)."""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune, fastest, fit, jit
from .conv import check_dy, check_image4, check_weight, conv_geometry, pixel, source, source_axis
from .gemm import SMS, pick_precision, shape_text
from .launch import FLOATS, cdiv, check, memory_format, next_power_of_2
from .reduce import PartSums

_CONFIGS = [triton.Config({"BLOCK_P": 32, "BLOCK_C": 64}, num_warps=4),
            triton.Config({"BLOCK_P": 64, "BLOCK_C": 64}, num_warps=4),
            triton.Config({"BLOCK_P": 16, "BLOCK_C": 128}, num_warps=4),
            triton.Config({"BLOCK_P": 128, "BLOCK_C": 32}, num_warps=4),
            triton.Config({"BLOCK_P": 64, "BLOCK_C": 128}, num_warps=8),
            triton.Config({"BLOCK_P": 32, "BLOCK_C": 32}, num_warps=2),
            triton.Config({"BLOCK_P": 8, "BLOCK_C": 256}, num_warps=4),
            triton.Config({"BLOCK_P": 128, "BLOCK_C": 16}, num_warps=4)]  # 144 or 240 channels: no masked lanes
# [BLOCK_P, TAPS, BLOCK_C] tiles of 8K to 16K elements for the 16 taps of a 3x3 or 5x5 kernel's block
_GRAD_CONFIGS = [triton.Config({"BLOCK_P": 8, "BLOCK_C": 64}, num_warps=4),
                 triton.Config({"BLOCK_P": 16, "BLOCK_C": 64}, num_warps=8),
                 triton.Config({"BLOCK_P": 4, "BLOCK_C": 128}, num_warps=4),
                 triton.Config({"BLOCK_P": 16, "BLOCK_C": 32}, num_warps=4),
                 triton.Config({"BLOCK_P": 32, "BLOCK_C": 32}, num_warps=8),
                 triton.Config({"BLOCK_P": 8, "BLOCK_C": 128}, num_warps=8),
                 triton.Config({"BLOCK_P": 32, "BLOCK_C": 16}, num_warps=4)]
PART_PIXELS = 1024  # the weight gradient's parts start at multiples of this many pixels, and are no shorter
PROGRAMS_PER_SM = 8  # the weight gradient's parts make about this many programs per SM: many loads in flight
MAX_TAPS = 16  # a weight gradient program's taps (fewer for a smaller kernel): a 3x3 kernel's in one block


def _prune(configs, named_args, **kwargs):
    """Channel vectors not far wider than the output's channels CO (Triton passes the positional
    arguments in named_args, the keyword ones in kwargs)."""
    channels = {**named_args, **kwargs}["CO"]
    return [c for c in configs if c.kwargs["BLOCK_C"] <= max(32, 2 * channels)] or configs[:1]


def is_depthwise(channels, groups):
    """Whether a convolution of this many input channels in these groups is depthwise (one input
    channel a group), which this module's kernels run; groups=1 (one channel too) stays a GEMM."""
    return groups > 1 and groups == channels


# blocks of up to 1024 pixels in the interpreter, which pays per program and per op more than per element
@autotune(_CONFIGS, key=["NPIX", "H", "W", "CI", "CO", "OH", "OW", "KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW",
                         "M", "TRANSPOSED"],
          prune_configs_by={"early_config_prune": _prune},
          interpret={"BLOCK_P": fit("NPIX", 1024), "BLOCK_C": fit("CO", 64)})
@jit
def depthwise_kernel(x_ptr, w_ptr, y_ptr, bias_ptr, NPIX, stride_wn, stride_wi, stride_wj,
                     H: tl.constexpr, W: tl.constexpr, CI: tl.constexpr, CO: tl.constexpr, OH: tl.constexpr,
                     OW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
                     PH: tl.constexpr, PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr, M: tl.constexpr,
                     TRANSPOSED: tl.constexpr, BIAS: tl.constexpr, RELU: tl.constexpr,
                     BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    """y [N, OH, OW, CO] (NHWC memory) from x [N, H, W, CI] (NHWC) and w [Cout, 1, KH, KW] read
    through strides (o, i, j). Forward (CO = M*CI): y[p, o] = relu(sum over taps of
    x[source(p, i, j), o // M] * w[o, i, j] + bias[o]). TRANSPOSED (the input gradient, x = dy,
    CI = M*CO): y[p, c] = sum over m < M and taps of x[source(p, i, j), c*M + m] * w[c*M + m, i, j]."""
    offs_p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)  # int32: the launcher checks sizes
    offs_c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_p = offs_p < NPIX
    mask_c = offs_c < CO
    img, oh, ow = pixel(offs_p, OH, OW)
    acc = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
    for m in tl.static_range(M if TRANSPOSED else 1):
        if TRANSPOSED:
            ch = offs_c * M + m if M > 1 else offs_c  # the channel of x (dy) read, and its weight's
            row = ch
        else:
            ch = offs_c // M if M > 1 else offs_c
            row = offs_c
        x_ch = x_ptr + ch[None, :]
        w_row = w_ptr + row * stride_wn
        for i in tl.static_range(KH):
            h, ok_h = source_axis(oh, i, H, SH, PH, DH, TRANSPOSED)  # once per row of taps
            at_h = img * H + h
            ok_h = mask_p & ok_h
            for j in tl.static_range(KW):
                w, ok_w = source_axis(ow, j, W, SW, PW, DW, TRANSPOSED)
                x = tl.load(x_ch + ((at_h * W + w) * CI)[:, None], mask=(ok_h & ok_w)[:, None] & mask_c[None, :],
                            other=0.0)
                wt = tl.load(w_row + (i * stride_wi + j * stride_wj), mask=mask_c, other=0.0)
                acc += x.to(tl.float32) * wt.to(tl.float32)[None, :]
    if BIAS:
        acc += tl.load(bias_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)  # NaN stays NaN, as torch's relu
    tl.store(y_ptr + offs_p[:, None] * CO + offs_c[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=mask_p[:, None] & mask_c[None, :])


@autotune(_GRAD_CONFIGS, key=["NPIX", "H", "W", "CI", "CO", "OH", "OW", "KH", "KW", "SH", "SW", "PH", "PW", "DH",
                              "DW", "M", "TAPS"],
          prune_configs_by={"early_config_prune": _prune},
          interpret={"BLOCK_P": fit("NPIX", 64), "BLOCK_C": fit("CO", 64)})
@jit
def depthwise_weight_kernel(x_ptr, dy_ptr, dw_ptr, NPIX, stride_dp,
                            H: tl.constexpr, W: tl.constexpr, CI: tl.constexpr, CO: tl.constexpr, OH: tl.constexpr,
                            OW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr,
                            SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DH: tl.constexpr,
                            DW: tl.constexpr, M: tl.constexpr, TAPS: tl.constexpr, PART_PIXELS: tl.constexpr,
                            BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    """dw[part s, o, i, j] = sum over the output pixels p of part s of dy[p, o] * x[source(p, i, j),
    o // M] for dy [N, OH, OW, CO] and x [N, H, W, CI] (NHWC memory), at dw_ptr + s*stride_dp +
    o*KH*KW + i*KW + j. Grid (channel blocks x blocks of TAPS taps, parts): a program reads a dy
    tile once for its taps, and their x tiles as one [pixels, taps, channels] load, whose
    neighbouring taps share cache lines. The parts split the pixels into runs of whole
    PART_PIXELS (the last run shorter, or empty)."""
    KK: tl.constexpr = KH * KW
    TAP_BLOCKS: tl.constexpr = (KK + TAPS - 1) // TAPS
    taps = (tl.program_id(0) % TAP_BLOCKS) * TAPS + tl.arange(0, TAPS)
    mask_t = taps < KK
    i = (taps // KW)[None, :]
    j = (taps % KW)[None, :]
    offs_c = (tl.program_id(0) // TAP_BLOCKS) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = offs_c < CO
    ch = offs_c // M if M > 1 else offs_c
    part = tl.program_id(1)
    per = tl.cdiv(tl.cdiv(NPIX, tl.num_programs(1)), PART_PIXELS) * PART_PIXELS
    first = part * per
    end = tl.minimum(first + per, NPIX)
    # fp32 sums per pixel slot, tap and channel; summed over the pixel slots once, at the end
    acc = tl.zeros((BLOCK_P, TAPS, BLOCK_C), dtype=tl.float32)
    for p0 in range(first, end, BLOCK_P):
        offs_p = p0 + tl.arange(0, BLOCK_P)
        in_part = offs_p < end
        img, oh, ow = pixel(offs_p, OH, OW)
        h, w, ok = source(oh[:, None], ow[:, None], i, j, H, W, SH, SW, PH, PW, DH, DW, False)
        g = tl.load(dy_ptr + offs_p[:, None] * CO + offs_c[None, :], mask=in_part[:, None] & mask_c[None, :],
                    other=0.0)
        pix = (img[:, None] * H + h) * W + w
        x = tl.load(x_ptr + pix[:, :, None] * CI + ch[None, None, :],
                    mask=(in_part[:, None] & ok & mask_t[None, :])[:, :, None] & mask_c[None, None, :], other=0.0)
        acc += g.to(tl.float32)[:, None, :] * x.to(tl.float32)
    dw = dw_ptr + part.to(tl.int64) * stride_dp + offs_c[None, :] * KK + taps[:, None]
    tl.store(dw, tl.sum(acc, axis=0), mask=mask_t[:, None] & mask_c[None, :])


# [BLOCK_W, BLOCK_C] tiles of 1K to 4K elements: thirteen of them (the nine sums, three rows of dy, a window of x)
# live at once in the weight gradient
# (32 channels over 8 warps: fewer registers a thread, more loads in flight an SM; the tuner's pick at dw144 tf32)
_ROW_CONFIGS = [triton.Config({"BLOCK_C": 32}, num_warps=4), triton.Config({"BLOCK_C": 64}, num_warps=8),
                triton.Config({"BLOCK_C": 128}, num_warps=8), triton.Config({"BLOCK_C": 32}, num_warps=8),
                triton.Config({"BLOCK_C": 16}, num_warps=4)]  # the smallest last: _prune_rows's fallback


def _prune_rows(configs, named_args, **kwargs):
    """Channel blocks not far wider than the channels C, of tiles at most 4K elements (with the row's BLOCK_W)."""
    a = {**named_args, **kwargs}
    return [c for c in configs if c.kwargs["BLOCK_C"] <= max(16, 2 * a["C"])
            and c.kwargs["BLOCK_C"] * a["BLOCK_W"] <= 4096] or configs[-1:]


@triton.jit
def _tap(x_ptr, n, h, w, H: tl.constexpr, W: tl.constexpr, C: tl.constexpr, offs_c, mask_c):
    """x[n, h, w + column, channel] for the columns w [BLOCK_W] and channels offs_c, fp32, 0 off the image."""
    h = h + tl.zeros_like(w)  # a vector: the interpreter cannot mask by a vector & a loop scalar's comparison
    ok = (w >= 0) & (w < W) & (h >= 0) & (h < H)
    x = tl.load(x_ptr + ((n * H + h) * W + w)[:, None] * C + offs_c[None, :], mask=ok[:, None] & mask_c[None, :],
                other=0.0)
    return x.to(tl.float32)


@autotune(_ROW_CONFIGS, key=["ROWS", "H", "W", "C", "OH", "OW", "PH", "PW"],
          prune_configs_by={"early_config_prune": _prune_rows}, interpret={"BLOCK_C": fit("C", 64)})
@jit
def depthwise_weight3_kernel(x_ptr, dy_ptr, dw_ptr, ROWS, stride_dp, H: tl.constexpr, W: tl.constexpr,
                             C: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr, PH: tl.constexpr,
                             PW: tl.constexpr, BLOCK_W: tl.constexpr, BLOCK_C: tl.constexpr):
    """dw[part s, c, i, j] = sum over the rows r (= n*H + h) of x in part s and the columns ow of
    dy[n, h + PH - i, ow, c] * x[n, h, ow + j - PW, c], for a 3x3 stride-1 depthwise convolution of one
    output channel per input channel: dy [N, OH, OW, C] and x [N, H, W, C] (NHWC memory), at dw_ptr +
    s*stride_dp + c*9 + i*3 + j. Grid (channel blocks, parts); the parts split the ROWS = N*H rows evenly.
    Each row of x is loaded once, as three [BLOCK_W >= OW, BLOCK_C] windows (neighbouring windows share
    cache lines), against the three rows of dy it meets (tap row i's h + PH - i). Those roll from one row
    of x to the next, one new row of dy loaded, and are loaded whole at a part's or an image's first row:
    four tiles loaded a row, where a walk over the rows of dy loads ten."""
    offs_c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = offs_c < C
    ow = tl.arange(0, BLOCK_W)
    per = tl.cdiv(ROWS, tl.num_programs(1))
    first = tl.program_id(1) * per
    end = tl.minimum(first + per, ROWS)
    a00 = tl.zeros((BLOCK_W, BLOCK_C), dtype=tl.float32)
    a01, a02, a10, a11, a12, a20, a21, a22 = a00, a00, a00, a00, a00, a00, a00, a00
    g0, g1 = a00, a00  # the rows of dy of tap rows 0 and 1 at the row before: tap rows 1 and 2 at this one
    for r in range(first, end):
        n = r // H
        h = r - n * H
        if (r == first) | (h == 0):
            g1 = _tap(dy_ptr, n, h + PH - 1, ow, OH, OW, C, offs_c, mask_c)
            g2 = _tap(dy_ptr, n, h + PH - 2, ow, OH, OW, C, offs_c, mask_c)
        else:
            g2 = g1
            g1 = g0
        g0 = _tap(dy_ptr, n, h + PH, ow, OH, OW, C, offs_c, mask_c)
        x = _tap(x_ptr, n, h, ow - PW, H, W, C, offs_c, mask_c)
        a00 += g0 * x
        a10 += g1 * x
        a20 += g2 * x
        x = _tap(x_ptr, n, h, ow + 1 - PW, H, W, C, offs_c, mask_c)
        a01 += g0 * x
        a11 += g1 * x
        a21 += g2 * x
        x = _tap(x_ptr, n, h, ow + 2 - PW, H, W, C, offs_c, mask_c)
        a02 += g0 * x
        a12 += g1 * x
        a22 += g2 * x
    dw = dw_ptr + tl.program_id(1).to(tl.int64) * stride_dp + offs_c * 9
    tl.store(dw, tl.sum(a00, axis=0), mask=mask_c)
    tl.store(dw + 1, tl.sum(a01, axis=0), mask=mask_c)
    tl.store(dw + 2, tl.sum(a02, axis=0), mask=mask_c)
    tl.store(dw + 3, tl.sum(a10, axis=0), mask=mask_c)
    tl.store(dw + 4, tl.sum(a11, axis=0), mask=mask_c)
    tl.store(dw + 5, tl.sum(a12, axis=0), mask=mask_c)
    tl.store(dw + 6, tl.sum(a20, axis=0), mask=mask_c)
    tl.store(dw + 7, tl.sum(a21, axis=0), mask=mask_c)
    tl.store(dw + 8, tl.sum(a22, axis=0), mask=mask_c)


_ROW_FORWARD_CONFIGS = [triton.Config({"BLOCK_C": 32, "ROWS": 4}, num_warps=4),
                        triton.Config({"BLOCK_C": 64, "ROWS": 4}, num_warps=4),
                        triton.Config({"BLOCK_C": 128, "ROWS": 2}, num_warps=8),
                        triton.Config({"BLOCK_C": 16, "ROWS": 8}, num_warps=4)]


@triton.jit
def _weighted_tap(acc, x_ptr, w_ptr, n, h, w, i: tl.constexpr, j: tl.constexpr, KW: tl.constexpr, PH: tl.constexpr,
                  PW: tl.constexpr, HI: tl.constexpr, WI: tl.constexpr, C: tl.constexpr, offs_c, mask_c,
                  TRANSPOSED: tl.constexpr):
    """acc + tap (i, j)'s window of the input times its weights (taps-major [KH, KW, C] at w_ptr), for the
    output row h and columns w: the input at (h + i - PH, w + j - PW), or transposed (h - i + PH, w - j + PW)."""
    wt = tl.load(w_ptr + (i * KW + j) * C + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    if TRANSPOSED:
        x = _tap(x_ptr, n, h - i + PH, w - j + PW, HI, WI, C, offs_c, mask_c)
    else:
        x = _tap(x_ptr, n, h + i - PH, w + j - PW, HI, WI, C, offs_c, mask_c)
    return acc + x * wt[None, :]


@autotune(_ROW_FORWARD_CONFIGS, key=["NROWS", "HI", "WI", "C", "HO", "WO", "KH", "KW", "PH", "PW", "TRANSPOSED"],
          prune_configs_by={"early_config_prune": _prune_rows},
          interpret={"BLOCK_C": fit("C", 64), "ROWS": fit("NROWS", 64, 1)})
@jit
def depthwise_rows_kernel(x_ptr, w_ptr, y_ptr, bias_ptr, NROWS, HI: tl.constexpr, WI: tl.constexpr, C: tl.constexpr,
                          HO: tl.constexpr, WO: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, PH: tl.constexpr,
                          PW: tl.constexpr, TRANSPOSED: tl.constexpr, BIAS: tl.constexpr, RELU: tl.constexpr,
                          BLOCK_W: tl.constexpr, BLOCK_C: tl.constexpr, ROWS: tl.constexpr):
    """y [N, HO, WO, C] = relu(KH x KW stride-1 depthwise convolution of x [N, HI, WI, C] + bias) (NHWC
    memory), one output channel per input channel, weights taps-major [KH, KW, C] at w_ptr; TRANSPOSED: the
    input gradient (x = dy, y = dx). Grid (channel blocks, blocks of ROWS output rows r = n*HO + h): each row
    is one [BLOCK_W >= WO, BLOCK_C] tile, each tap's window of x loaded whole."""
    offs_c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = offs_c < C
    cols = tl.arange(0, BLOCK_W)
    first = tl.program_id(1) * ROWS
    for r in range(first, tl.minimum(first + ROWS, NROWS)):
        n = r // HO
        h = r - n * HO
        acc = tl.zeros((BLOCK_W, BLOCK_C), dtype=tl.float32)
        for i in tl.static_range(KH):
            for j in tl.static_range(KW):
                acc = _weighted_tap(acc, x_ptr, w_ptr, n, h, cols, i, j, KW, PH, PW, HI, WI, C, offs_c, mask_c,
                                    TRANSPOSED)
        if BIAS:
            acc += tl.load(bias_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[None, :]
        if RELU:
            acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)  # NaN stays NaN, as torch's relu
        tl.store(y_ptr + (r * WO + cols)[:, None] * C + offs_c[None, :], acc.to(y_ptr.dtype.element_ty),
                 mask=(cols < WO)[:, None] & mask_c[None, :])


# Flat rows: BLOCK consecutive elements of an output row's WO * C (NHWC: its columns' channels, one vector), ROWS rows
_FLAT_CONFIGS = [triton.Config({"BLOCK": 1024, "ROWS": 4}, num_warps=4),
                 triton.Config({"BLOCK": 2048, "ROWS": 2}, num_warps=8),
                 triton.Config({"BLOCK": 512, "ROWS": 8}, num_warps=4),
                 triton.Config({"BLOCK": 256, "ROWS": 8}, num_warps=2)]


def _prune_flat(configs, named_args, **kwargs):
    """Blocks not far past an output row's WO * C elements."""
    a = {**named_args, **kwargs}
    return [c for c in configs if c.kwargs["BLOCK"] <= max(256, 2 * a["WO"] * a["C"])] or configs[-1:]


@autotune(_FLAT_CONFIGS, key=["NROWS", "HI", "WI", "C", "HO", "WO", "KH", "KW", "PH", "PW", "TRANSPOSED"],
          prune_configs_by={"early_config_prune": _prune_flat},
          interpret={"BLOCK": fit(lambda a: a["WO"] * a["C"], 1024), "ROWS": fit("NROWS", 64, 1)})
@jit
def depthwise_flat_kernel(x_ptr, w_ptr, y_ptr, bias_ptr, NROWS, HI: tl.constexpr, WI: tl.constexpr, C: tl.constexpr,
                          HO: tl.constexpr, WO: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, PH: tl.constexpr,
                          PW: tl.constexpr, TRANSPOSED: tl.constexpr, BIAS: tl.constexpr, RELU: tl.constexpr,
                          BLOCK: tl.constexpr, ROWS: tl.constexpr):
    """depthwise_rows_kernel's convolution (y [N, HO, WO, C] from x [N, HI, WI, C], NHWC memory, one output
    channel per input channel, weights taps-major [KH, KW, C] at w_ptr; TRANSPOSED: the input gradient) over
    flat rows: an output row's WO * C elements are one vector, element f = wo * C + c, and tap (i, j) reads
    x's row h + i - PH (transposed h - i + PH) at f + (j - PW) * C (transposed (PW - j) * C): contiguous
    loads whatever C is, no channel block past the channels. Grid (blocks of a row, blocks of ROWS rows)."""
    f = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = f < WO * C
    c = f % C
    wo = f // C
    first = tl.program_id(1) * ROWS
    for r in range(first, tl.minimum(first + ROWS, NROWS)):
        n = r // HO
        h = r - n * HO
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for i in tl.static_range(KH):
            hi = (h - i + PH if TRANSPOSED else h + i - PH) + tl.zeros_like(f)  # a vector: the interpreter's masks
            row = live & (hi >= 0) & (hi < HI)
            for j in tl.static_range(KW):
                dj = PW - j if TRANSPOSED else j - PW
                ok = row & (wo + dj >= 0) & (wo + dj < WI)
                x = tl.load(x_ptr + (n * HI + hi) * (WI * C) + f + dj * C, mask=ok, other=0.0)
                wt = tl.load(w_ptr + (i * KW + j) * C + c, mask=live, other=0.0)
                acc += x.to(tl.float32) * wt.to(tl.float32)
        if BIAS:
            acc += tl.load(bias_ptr + c, mask=live, other=0.0).to(tl.float32)
        if RELU:
            acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)  # NaN stays NaN, as torch's relu
        tl.store(y_ptr + r * (WO * C) + f, acc.to(y_ptr.dtype.element_ty), mask=live)


def by_rows(kernel, stride, dilation, cout, c, width, weight=False):
    """Whether a pass may run by output rows: stride 1, no dilation, one output channel per input
    channel, rows of at most 256 columns; the forward and the input gradient (depthwise_rows_kernel,
    where it times faster than the pixel blocks: autotune.fastest) of kernels up to 7x7, the weight
    gradient (depthwise_weight3_kernel, weight=True; it ran faster at every layer timed) of 3x3 ones."""
    return (stride == (1, 1) and dilation == (1, 1) and cout == c and width <= 256
            and (kernel == (3, 3) if weight else max(kernel) <= 7))


# The 3x3 weight gradient by rows on the GPU, where it ran faster at every layer timed; the interpreter, which pays
# per loop iteration and per call of a jit helper, runs the pixel blocks (far faster there: docs/results.md)
WEIGHT_BY_ROWS = not INTERPRET


def weight_parts(npix, blocks):
    """How many pixel parts conv2d_weight splits into, for `blocks` programs per part: about
    PROGRAMS_PER_SM programs per SM in all, each part at least PART_PIXELS long; 1 in the
    interpreter."""
    if SMS == 0:
        return 1
    return max(1, min(cdiv(SMS * PROGRAMS_PER_SM, blocks), npix // PART_PIXELS))


def _check_depthwise(name, groups, c):
    check(groups == c, lambda: f"depthwise.{name}: groups must equal the input's {c} channels, got {groups!r}")


def _run(x, w, co, out_hw, kernel, stride, padding, dilation, transposed, bias, relu, out_dtype):
    """depthwise_kernel over x [N, CI, H, W] (copied to channels-last if not so) into y
    [N, co, OH, OW], channels-last in out_dtype; padding: before the image only."""
    N, CI, H, W = x.shape
    (OH, OW), (KH, KW), (SH, SW), (PH, PW), (DH, DW) = out_hw, kernel, stride, padding, dilation
    x = x.contiguous(memory_format=torch.channels_last)
    # the weight copied taps-major, [KH, KW, 1, Cout]: a tap's weights are then one contiguous
    # vector, read as such (through torch's layout, strided by KH*KW: one load per channel)
    w = w.permute(2, 3, 1, 0).contiguous().permute(3, 2, 0, 1)
    y = torch.empty((N, co, OH, OW), device=x.device, dtype=out_dtype, memory_format=torch.channels_last)
    npix = N * OH * OW
    check(npix * co < 2**31, "conv2d: the output exceeds 2^31 elements; split the batch")

    def pixel_blocks():
        grid = lambda meta: (cdiv(npix, meta["BLOCK_P"]), cdiv(co, meta["BLOCK_C"]))
        depthwise_kernel[grid](x, w, y, bias if bias is not None else y, npix, w.stride(0), w.stride(2), w.stride(3),
                               H, W, CI, co, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, CI // co if transposed else co // CI,
                               TRANSPOSED=transposed, BIAS=bias is not None, RELU=relu)

    def by_output_rows():
        rows = N * OH
        grid = lambda meta: (cdiv(co, meta["BLOCK_C"]), cdiv(rows, meta["ROWS"]))
        depthwise_rows_kernel[grid](x, w, y, bias if bias is not None else y, rows, H, W, CI, OH, OW, KH, KW, PH, PW,
                                    TRANSPOSED=transposed, BIAS=bias is not None, RELU=relu,
                                    BLOCK_W=next_power_of_2(OW))
    def by_flat_rows():
        rows = N * OH
        grid = lambda meta: (cdiv(OW * co, meta["BLOCK"]), cdiv(rows, meta["ROWS"]))
        depthwise_flat_kernel[grid](x, w, y, bias if bias is not None else y, rows, H, W, CI, OH, OW, KH, KW, PH, PW,
                                    TRANSPOSED=transposed, BIAS=bias is not None, RELU=relu)
    if by_rows(kernel, stride, dilation, co, CI, max(W, OW)) and x.numel() < 2**31:
        # none wins everywhere (by rows won fp32's layers but one, lost bf16's but one; the flat rows won
        # airbench-like 144 channels: docs/results.md)
        fastest(("depthwise", x.shape, x.dtype, w.dtype, co, out_hw, kernel, padding, transposed,
                 None if bias is None else bias.dtype, relu, out_dtype),
                (pixel_blocks, by_output_rows, by_flat_rows))
    else:
        pixel_blocks()
    return y


def conv2d(x, w, stride=1, padding=0, dilation=1, groups=None, *, bias=None, relu=False, precision=None,
           out_dtype=None):
    """y = relu(conv2d(x, w, stride, padding, dilation, groups=C) + bias) for x [N, C, H, W]
    (copied to channels-last if not so) and w [M*C, 1, kh, kw]; y [N, M*C, OH, OW] channels-last,
    in out_dtype (default x's dtype). conv.conv2d's arguments; groups must be C (None: C)."""
    check_image4("conv2d", x, "input")
    C = x.shape[1]
    groups = C if groups is None else groups
    _check_depthwise("conv2d", groups, C)
    check_weight("conv2d", w, C, groups, x.device)
    cout, kernel = w.shape[0], tuple(w.shape[2:])
    check(bias is None or (bias.shape == (cout,) and bias.is_contiguous() and bias.dtype in FLOATS),
          lambda: f"conv2d: bias must be a contiguous float vector of {cout}, got {tuple(bias.shape)} {bias.dtype}")
    pick_precision("conv2d", precision, x, w)
    stride, dilation, padding, out_hw = conv_geometry("conv2d", x.shape[2:], kernel, stride, padding, dilation,
                                                      x.shape[0])
    return _run(x, w, cout, out_hw, kernel, stride, padding, dilation, False, bias, relu, out_dtype or x.dtype)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=None, *, precision=None,
                 out_dtype=None):
    """dx [N, C, H, W] (input_size; channels-last, in grad_output's dtype or out_dtype) of a
    depthwise convolution by weight [M*C, 1, kh, kw], for its output gradient grad_output
    (copied to channels-last if not so)."""
    N, C, H, W = input_size
    groups = C if groups is None else groups
    _check_depthwise("conv2d_input", groups, C)
    check_weight("conv2d_input", weight, C, groups, grad_output.device)
    cout, kernel = weight.shape[0], tuple(weight.shape[2:])
    pick_precision("conv2d_input", precision, grad_output, weight)
    stride, dilation, padding, (OH, OW) = conv_geometry("conv2d_input", (H, W), kernel, stride, padding, dilation, N)
    check_dy("conv2d_input", grad_output, N, cout, OH, OW, grad_output.device)
    return _run(grad_output, weight, C, (H, W), kernel, stride, padding, dilation, True, None, False,
                out_dtype or grad_output.dtype)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=None, *, precision=None,
                  channels_last=True, parts=None):
    """dw (weight_size [M*C, 1, kh, kw], fp32; one channel, so channels-last or not is the same
    memory) of a depthwise convolution of input [N, C, H, W] for its output gradient grad_output
    (both copied to channels-last if not so). The pixels are split into `parts` sums (by default
    weight_parts'), added after in a fixed order."""
    check_image4("conv2d_weight", input, "input")
    N, C, H, W = input.shape
    cout, c, KH, KW = weight_size
    groups = C if groups is None else groups
    _check_depthwise("conv2d_weight", groups, C)
    check(c == 1 and cout % C == 0,
          lambda: f"conv2d_weight: weight_size {tuple(weight_size)} does not fit input {shape_text(input)} in "
                  f"groups={groups}")
    pick_precision("conv2d_weight", precision, grad_output, input)
    (SH, SW), (DH, DW), (PH, PW), (OH, OW) = conv_geometry("conv2d_weight", (H, W), (KH, KW), stride, padding,
                                                           dilation, N)
    check_dy("conv2d_weight", grad_output, N, cout, OH, OW, input.device)
    x, dy = (t.contiguous(memory_format=torch.channels_last) for t in (input, grad_output))
    npix = N * OH * OW
    if WEIGHT_BY_ROWS and by_rows((KH, KW), (SH, SW), (DH, DW), cout, C, OW, weight=True):
        return _weight_rows(x, dy, (cout, 1, KH, KW), (PH, PW), (OH, OW), channels_last, parts)
    taps = min(MAX_TAPS, next_power_of_2(KH * KW))
    blocks = lambda meta: cdiv(KH * KW, taps) * cdiv(cout, meta["BLOCK_C"])
    # the parts of each config (none beyond the pixels; one, of zeros, for none): the launch's
    # grid, called with the config that runs, tells which
    parts_of = lambda meta: max(1, min(parts or weight_parts(npix, blocks(meta)), cdiv(npix, PART_PIXELS)))
    most = max(parts_of(config.kwargs) for config in depthwise_weight_kernel.configs)
    dw = torch.empty((cout, 1, KH, KW), device=x.device, dtype=torch.float32,
                     memory_format=memory_format(channels_last))
    sums = PartSums(dw, most)
    grid = lambda meta: (blocks(meta), sums.parts(parts_of(meta)))
    depthwise_weight_kernel[grid](x, dy, sums.buffer, npix, dw.numel(), H, W, C, cout, OH, OW, KH, KW, SH, SW, PH,
                                  PW, DH, DW, cout // C, taps, PART_PIXELS=PART_PIXELS)
    sums.finish(dw.view(-1))
    return dw


def _weight_rows(x, dy, weight_size, padding, out_hw, channels_last, parts):
    """conv2d_weight through depthwise_weight3_kernel (by_rows): the rows of x split into `parts`
    (by default about PROGRAMS_PER_SM programs per SM, each part at least a row), summed after."""
    N, C, H, W = x.shape
    (OH, OW), (PH, PW) = out_hw, padding
    check(x.numel() < 2**31 and dy.numel() < 2**31, "conv2d_weight: over 2^31 elements; split the batch")
    rows = N * H
    blocks = lambda meta: cdiv(C, meta["BLOCK_C"])
    parts_of = lambda meta: max(1, min(parts or (1 if SMS == 0 else cdiv(SMS * PROGRAMS_PER_SM, blocks(meta))), rows))
    dw = torch.empty(weight_size, device=x.device, dtype=torch.float32, memory_format=memory_format(channels_last))

    most = max(parts_of(config.kwargs) for config in depthwise_weight3_kernel.configs)
    sums = PartSums(dw, most)
    grid = lambda meta: (blocks(meta), sums.parts(parts_of(meta)))
    depthwise_weight3_kernel[grid](x, dy, sums.buffer, rows, dw.numel(), H, W, C, OH, OW, PH, PW,
                                   BLOCK_W=next_power_of_2(OW))
    sums.finish(dw.view(-1))
    return dw
