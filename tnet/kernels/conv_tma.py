"""Convolutions through Hopper's tensor-memory accelerator (TMA), 16-bit operands: the forward and the
input gradient (stride 1 or 2) and, for images of powers of 2, the weight gradient (stride 1).

A 4-D tensor descriptor over a channels-last image [N, H, W, C] loads a box of BI images' BH x BW
pixels by BLOCK_K channels at any coordinates, the rows and columns outside the image read as zeros:
a filter tap's shifted box is an operand of the implicit GEMM, its padding free, with no index
arithmetic or masks per element, landing in shared memory where wgmma reads it. Small images
(ResNet's 8x8 and 4x4) take several whole images per box, so the tile stays 64 or 128 pixels.

- The forward, y = relu(conv(x, w) + bias): M over a box of output pixels, N over output channels,
  K over (tap, channel chunk). The weight [Cout, kh, kw, C] (channels-last) is a 2-D descriptor
  [Cout, kh*kw*C] read in [BLOCK_N, K step] boxes, a K step dividing C, so that a box holds one tap's
  channels. At stride 2 the image is read as [N, H/2, 2, W/2, 2C] (5-D), rows and columns in pairs:
  a tap's rows for a box of output rows are one box at the shifted pairs in one phase of the pair.
- The input gradient, the same kernel TRANSPOSED: tap (i, j) reads dy at (h + PH - i, w + PW - j) and
  the weight's [K step (Cout), BLOCK_N (C)] box at that tap (no flipped copy). A box's columns past C
  belong to the next tap; they land in output channels past C, which the store leaves out. At stride 2
  (conv_tma_dgrad2_kernel) each of dx's four phases (even or odd rows and columns) is a stride-1
  transposed convolution of dy by the taps of its parity, stored through a descriptor of that phase's
  pixels: no tap meets the zeros between dy's pixels.
- The weight gradient, dw[o, tap, c] = sum over output pixels of dy[p, o] x[p shifted by tap, c]: K
  over runs of pixels, for outputs of powers of 2 rows and columns (ResNet's 32x32 to 4x4), where a
  run of whole rows or whole images is both a 2-D box of dy's memory (wgmma's A, transposed in shared
  memory) and a 4-D box of x shifted by the tap. A 4-D box of dy as A went through registers; boxes
  over 15x15 or 7x7 images waste their pixels past the image: both ran slower than the gathering kernel
  on the H100 (docs/results.md).

`suits` and `suits_weight` say where they run: stride 1 (the forward and input gradient also 2, over
even sizes), dilation 1, one group, bf16 or fp16 at 16-bit precision (the forward also fp32 at tf32),
dense channels-last tensors whose channel counts TMA can stride over, enough channels, on a GPU with TMA
(or in the interpreter, for the tests); the switches below keep the paths not yet run or not faster on a
GPU off. Elsewhere conv.py's gathering kernels run."""
import functools
import os

import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune, jit, launch_kept
from .gemm import SMS, descriptor_memory, mma
from .launch import cdiv, kept, next_power_of_2, resident, tile_config
from .reduce import PartSums, best_parts

ENABLED = os.environ.get("TNET_CONV_TMA", "1") != "0"  # 0: conv.py's gathering kernels everywhere (A/B timing)
# Fewer output channels ran faster gathered on the H100 (a 64-wide N tile reads each box for few outputs)
MIN_OUT_CHANNELS = 128
# The stride-2 input gradient's gathering kernel masks about 3 of 4 tap-pixel pairs: from 64 outputs (ResNet's
# first stride-2 layer) the phases' boxes ran faster (docs/results.md)
MIN_PHASE_CHANNELS = 64
MIN_WEIGHT_CHANNELS = 64  # the weight gradient's boxes are 64 channels wide at least
# The forward of fp32 operands at tf32 (both K-major, as tf32's wgmma needs) passed its GPU tests but ran no
# faster than the gathering kernel on the H100 (docs/results.md): off unless TNET_CONV_TMA_TF32=1
TF32_ENABLED = ENABLED and os.environ.get("TNET_CONV_TMA_TF32", "0") == "1"
# The weight gradient of outputs other than powers of 2, padded to them, passed its GPU tests but ran slower than
# the gathering kernels (dy reaches wgmma through registers; docs/results.md): off unless TNET_CONV_TMA_PADDED=1
PADDED = ENABLED and os.environ.get("TNET_CONV_TMA_PADDED", "0") == "1"


@functools.lru_cache(maxsize=None)
def _has_tma(device_index):
    return torch.cuda.get_device_capability(device_index)[0] >= 9


@triton.jit
def _tile(t, HO: tl.constexpr, WO: tl.constexpr, BI: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr):
    """(first image, row, column) of box number t, boxes in row-major order over (images, rows, columns)."""
    num_w: tl.constexpr = (WO + BW - 1) // BW
    num_h: tl.constexpr = (HO + BH - 1) // BH
    return t // (num_h * num_w) * BI, (t // num_w) % num_h * BH, t % num_w * BW


# The forward's 128x256 tile gave wrong sums on the H100 (a 64-channel output; not investigated).
_FWD_CONFIGS = [tile_config(128, 128, 64, 8, 3), tile_config(128, 64, 64, 4, 4), tile_config(64, 64, 64, 4, 4),
                tile_config(64, 128, 64, 4, 4), tile_config(128, 128, 64, 4, 4)]
# the weight gradient's: BLOCK_M over output channels, BLOCK_N over input channels, BLOCK_K over pixels
_WGRAD_CONFIGS = [tile_config(128, 128, 64, 8, 3), tile_config(64, 64, 128, 4, 4), tile_config(128, 64, 128, 8, 3),
                  tile_config(64, 128, 128, 4, 4), tile_config(128, 128, 128, 8, 3), tile_config(64, 64, 64, 4, 4)]
# each tile's programs an SM holds at a time (16-bit operands), by its block sizes
_WGRAD_RESIDENT = {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"]): resident(c, "bf16")
                   for c in _WGRAD_CONFIGS}


@autotune(_FWD_CONFIGS, key=["N", "H", "W", "CA", "HO", "WO", "CO", "KH", "KW", "PH", "PW", "STRIDE", "TRANSPOSED",
                             "BIAS", "RELU", "PRECISION"],
          interpret={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64})
@jit
def conv_tma_kernel(a_ptr, w_ptr, y_ptr, bias_ptr, N, H: tl.constexpr, W: tl.constexpr, CA: tl.constexpr,
                    HO: tl.constexpr, WO: tl.constexpr, CO: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                    PH: tl.constexpr, PW: tl.constexpr, K_MAX: tl.constexpr, STRIDE: tl.constexpr,
                    TRANSPOSED: tl.constexpr,
                    BIAS: tl.constexpr, RELU: tl.constexpr, PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                    BOX_H: tl.constexpr, BOX_W: tl.constexpr, NUM_SMS: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y [N, HO, WO, CO] = relu(sum over taps (i, j) and channels c of a[n, h, w, c] * weight + bias)
    for a [N, H, W, CA] (NHWC memory), h = STRIDE * oh - PH + i (TRANSPOSED, STRIDE 1: oh + PH - i),
    likewise w; the weight is w_ptr's [CO, KH, KW, CA] (TRANSPOSED: [CA, KH, KW, CO], the forward's,
    read across). STRIDE 2 (H and W even) reads a as [N, H/2, 2, W/2, 2*CA]: row 2q + r is row pair q,
    phase r, so a tap's rows (columns) for a box of output rows are one box at shifted pairs and a phase.
    K steps of BLOCK_K channels, or K_MAX where fewer: a weight box holds one tap's channels alone.
    Persistent: NUM_SMS programs (or fewer) walk the tiles (output box, CO block), the CO blocks of
    a box in turn, so that the descriptors are built once a program and a box is read while in L2."""
    KS: tl.constexpr = BLOCK_K if BLOCK_K < K_MAX else K_MAX
    # the box: as wide as the image's row (BOX_W, a power of 2) up to BLOCK_M pixels, as many rows as fit, then images
    BW: tl.constexpr = BOX_W if BOX_W < BLOCK_M else BLOCK_M
    BH: tl.constexpr = BOX_H if BOX_H < BLOCK_M // BW else BLOCK_M // BW
    BI: tl.constexpr = BLOCK_M // (BW * BH)
    if STRIDE == 2:
        a_desc = tl.make_tensor_descriptor(a_ptr, [N, H // 2, 2, W // 2, 2 * CA],
                                           [H * W * CA, 2 * W * CA, W * CA, 2 * CA, 1], [BI, BH, 1, BW, KS])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, [N, H, W, CA], [H * W * CA, W * CA, CA, 1], [BI, BH, BW, KS])
    y_desc = tl.make_tensor_descriptor(y_ptr, [N, HO, WO, CO], [HO * WO * CO, WO * CO, CO, 1], [BI, BH, BW, BLOCK_N])
    if TRANSPOSED:
        w_desc = tl.make_tensor_descriptor(w_ptr, [CA, KH * KW * CO], [KH * KW * CO, 1], [KS, BLOCK_N])
    else:
        w_desc = tl.make_tensor_descriptor(w_ptr, [CO, KH * KW * CA], [KH * KW * CA, 1], [BLOCK_N, KS])
    CHUNKS: tl.constexpr = (CA + KS - 1) // KS
    NUM_O: tl.constexpr = (CO + BLOCK_N - 1) // BLOCK_N
    tiles = tl.cdiv(N, BI) * ((HO + BH - 1) // BH) * ((WO + BW - 1) // BW) * NUM_O
    for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=True):
        n0, h0, w0 = _tile(tile // NUM_O, HO, WO, BI, BH, BW)
        o0 = tile % NUM_O * BLOCK_N
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
        for t in range(0, KH * KW * CHUNKS):
            i = t // (KW * CHUNKS)
            j = (t // CHUNKS) % KW
            c0 = (t % CHUNKS) * KS
            # acc^T [BLOCK_N, BLOCK_M] = weight^T @ box^T: the box, reshaped, is wgmma's B operand, which
            # Triton reads from shared memory as it lands (as A it went through registers)
            if TRANSPOSED:
                a = a_desc.load([n0, h0 + PH - i, w0 + PW - j, c0])
                b = w_desc.load([c0, (i * KW + j) * CO + o0]).T
            elif STRIDE == 2:  # row 2 * oh + i - PH: pair oh + (i - PH) // 2 (floored), phase (i - PH) % 2
                a = a_desc.load([n0, h0 + (i + PH) // 2 - PH, (i + PH) % 2, w0 + (j + PW) // 2 - PW,
                                 (j + PW) % 2 * CA + c0])
                b = w_desc.load([o0, (i * KW + j) * CA + c0])
            else:
                a = a_desc.load([n0, h0 - PH + i, w0 - PW + j, c0])
                b = w_desc.load([o0, (i * KW + j) * CA + c0])
            acc = mma(b, a.reshape(BLOCK_M, KS).T, acc, PRECISION, INTERPRET)
        out = acc.T
        if BIAS:
            offs_n = o0 + tl.arange(0, BLOCK_N)
            out += tl.load(bias_ptr + offs_n, mask=offs_n < CO, other=0.0).to(tl.float32)[None, :]
        if RELU:
            out = tl.maximum(out, 0.0, propagate_nan=tl.PropagateNan.ALL)  # NaN stays NaN, as torch's relu
        y_desc.store([n0, h0, w0, o0], out.to(y_ptr.dtype.element_ty).reshape(BI, BH, BW, BLOCK_N))


@autotune(_FWD_CONFIGS, key=["N", "H", "W", "CA", "HO", "WO", "CO", "KH", "KW", "PH", "PW", "PRECISION"],
          interpret={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64})
@jit
def conv_tma_dgrad2_kernel(a_ptr, w_ptr, y_ptr, N, H: tl.constexpr, W: tl.constexpr, CA: tl.constexpr,
                           HO: tl.constexpr, WO: tl.constexpr, CO: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                           PH: tl.constexpr, PW: tl.constexpr, PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                           BOX_H: tl.constexpr, BOX_W: tl.constexpr, NUM_SMS: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The input gradient y [N, HO, WO, CO] (HO and WO even) of a stride-2 convolution, for its output
    gradient a [N, H, W, CA] (NHWC) and the forward's weight [CA, KH, KW, CO] (conv_tma_kernel's
    TRANSPOSED reading): y[n, 2p + r, 2q + s] = sum over taps i = r + PH (mod 2), j = s + PW (mod 2) of
    a[n, p + (r + PH - i) / 2, q + (s + PW - j) / 2] @ w[:, i, j]. Each of y's four phases (r, s) is a
    stride-1 transposed convolution of a by its own taps (none wasted on the zeros between dy's pixels),
    written through a descriptor of that phase's pixels ([N, HO/2, WO/2, CO], rows and columns 2 apart);
    a phase without taps (a 1x1 kernel's odd rows) is written as zeros. Persistent, phase after phase."""
    KS: tl.constexpr = BLOCK_K if BLOCK_K < 64 else 64
    HH: tl.constexpr = HO // 2
    WW: tl.constexpr = WO // 2
    BW: tl.constexpr = BOX_W if BOX_W < BLOCK_M else BLOCK_M
    BH: tl.constexpr = BOX_H if BOX_H < BLOCK_M // BW else BLOCK_M // BW
    BI: tl.constexpr = BLOCK_M // (BW * BH)
    a_desc = tl.make_tensor_descriptor(a_ptr, [N, H, W, CA], [H * W * CA, W * CA, CA, 1], [BI, BH, BW, KS])
    w_desc = tl.make_tensor_descriptor(w_ptr, [CA, KH * KW * CO], [KH * KW * CO, 1], [KS, BLOCK_N])
    CHUNKS: tl.constexpr = (CA + KS - 1) // KS
    NUM_O: tl.constexpr = (CO + BLOCK_N - 1) // BLOCK_N
    tiles = tl.cdiv(N, BI) * ((HH + BH - 1) // BH) * ((WW + BW - 1) // BW) * NUM_O
    for r in tl.static_range(2):
        for s in tl.static_range(2):
            # the phase's first taps and tap counts (constant: r and s are; unannotated, as they change per phase)
            i0 = (r + PH) % 2
            j0 = (s + PW) % 2
            ni = (KH - i0 + 1) // 2
            nj = (KW - j0 + 1) // 2
            y_desc = tl.make_tensor_descriptor(y_ptr + (r * WO + s) * CO, [N, HH, WW, CO],
                                               [HO * WO * CO, 2 * WO * CO, 2 * CO, 1], [BI, BH, BW, BLOCK_N])
            for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=True):
                n0, h0, w0 = _tile(tile // NUM_O, HH, WW, BI, BH, BW)
                o0 = tile % NUM_O * BLOCK_N
                acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
                for t in range(0, ni * nj * CHUNKS):
                    i = i0 + 2 * (t // (nj * CHUNKS))
                    j = j0 + 2 * ((t // CHUNKS) % nj)
                    c0 = (t % CHUNKS) * KS
                    # r + PH - i is even: its half is exact (truncated or floored alike)
                    a = a_desc.load([n0, h0 + (r + PH - i) // 2, w0 + (s + PW - j) // 2, c0])
                    b = w_desc.load([c0, (i * KW + j) * CO + o0]).T
                    acc = mma(b, a.reshape(BLOCK_M, KS).T, acc, PRECISION, INTERPRET)
                y_desc.store([n0, h0, w0, o0], acc.T.to(y_ptr.dtype.element_ty).reshape(BI, BH, BW, BLOCK_N))


@autotune(_WGRAD_CONFIGS, key=["N", "H", "W", "C", "OH", "OW", "COUT", "KH", "KW", "PH", "PW", "PRECISION"],
          interpret={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64})
@jit
def conv_tma_wgrad_kernel(x_ptr, dy_ptr, dw_ptr, N, stride_part, H: tl.constexpr, W: tl.constexpr, C: tl.constexpr,
                          OH: tl.constexpr, OW: tl.constexpr, COUT: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                          PH: tl.constexpr, PW: tl.constexpr, BOX_H: tl.constexpr, BOX_W: tl.constexpr,
                          PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """dw[part, o, i, j, c] = sum over the pixels of part of dy[n, oh, ow, o] * x[n, oh - PH + i, ow - PW + j, c]
    for x [N, H, W, C] and dy [N, OH, OW, COUT] in NHWC memory, OW at most BLOCK_K; dw's parts
    stride_part apart, each [COUT, KH, KW, C]. The image's pixels are seen padded to BOX_H x BOX_W,
    the powers of 2 from OH and OW. The K loop walks runs of BLOCK_K padded pixels: BH whole rows of
    one image, or BI whole images, each a 4-D box of x (shifted by the tap) and of dy, read as zeros
    outside the image and past the batch, so that the padding adds nothing (dy's zeros). Where OH and
    OW are the powers of 2 (FLAT), dy's run is a 2-D box of its [pixels, COUT] memory instead. dy's box
    is wgmma's A operand, transposed in shared memory; x's the B operand.
    Grid: (taps x C blocks, COUT blocks, parts): part s takes the s-th run of cdiv(runs, parts)."""
    BH: tl.constexpr = BOX_H if BOX_H < BLOCK_K // BOX_W else BLOCK_K // BOX_W
    BI: tl.constexpr = BLOCK_K // (BOX_W * BH)
    ROWS: tl.constexpr = (OH + BH - 1) // BH  # runs per image (one where a run holds whole images)
    FLAT: tl.constexpr = OH == BOX_H and OW == BOX_W
    x_desc = tl.make_tensor_descriptor(x_ptr, [N, H, W, C], [H * W * C, W * C, C, 1], [BI, BH, BOX_W, BLOCK_N])
    if FLAT:
        dy_desc = tl.make_tensor_descriptor(dy_ptr, [N * OH * OW, COUT], [COUT, 1], [BLOCK_K, BLOCK_M])
    else:
        dy_desc = tl.make_tensor_descriptor(dy_ptr, [N, OH, OW, COUT], [OH * OW * COUT, OW * COUT, COUT, 1],
                                            [BI, BH, BOX_W, BLOCK_M])
    C_BLOCKS: tl.constexpr = (C + BLOCK_N - 1) // BLOCK_N
    tap = tl.program_id(0) // C_BLOCKS
    i = tap // KW
    j = tap % KW
    c0 = tl.program_id(0) % C_BLOCKS * BLOCK_N
    o0 = tl.program_id(1) * BLOCK_M
    runs = tl.cdiv(N, BI) * ROWS
    per = tl.cdiv(runs, tl.num_programs(2))
    first = tl.program_id(2) * per
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(first, tl.minimum(first + per, runs)):
        n0 = t // ROWS * BI
        r0 = t % ROWS * BH
        if FLAT:  # the run's pixels are consecutive in memory: t * BLOCK_K on
            g = dy_desc.load([t * BLOCK_K, o0])
        else:
            g = dy_desc.load([n0, r0, 0, o0]).reshape(BLOCK_K, BLOCK_M)
        x = x_desc.load([n0, r0 - PH + i, j - PW, c0]).reshape(BLOCK_K, BLOCK_N)
        acc = mma(g.T, x, acc, PRECISION, INTERPRET)
    offs_m = o0 + tl.arange(0, BLOCK_M)
    offs_c = c0 + tl.arange(0, BLOCK_N)
    dw = dw_ptr + tl.program_id(2).to(tl.int64) * stride_part + offs_m[:, None] * (KH * KW * C) + tap * C
    tl.store(dw + offs_c[None, :], acc, mask=(offs_m < COUT)[:, None] & (offs_c < C)[None, :])


def suits(stride, dilation, groups, precision, x, w, transposed=False, out_hw=None):
    """Whether conv_tma_kernel runs the forward (transposed: the input gradient, x being dy and out_hw
    the input's height and width) of a convolution of x by w: stride 1 or 2 (the forward's input, the
    input gradient's output of even height and width), dilation 1, one group, 16-bit products of one
    16-bit dtype (or, TF32_ENABLED, a forward's tf32 products of fp32), x and w non-empty, dense
    channels-last (w: [Cout, kh, kw, C] memory) with their addresses and channel counts' bytes multiples
    of 16, the forward's input channels a multiple of 16 (K steps), at least MIN_OUT_CHANNELS outputs
    (MIN_PHASE_CHANNELS at stride 2 transposed), on a GPU with TMA or in the interpreter."""
    # cheapest first: every convolution asks
    if not ((x.dtype in _16_BITS and precision in _PRECISIONS and ENABLED
             or x.dtype is torch.float32 and precision == "tf32" and TF32_ENABLED and not transposed)
            and groups == 1 and dilation == (1, 1)
            and (stride == (1, 1) or stride == (2, 2)
                 and all(size % 2 == 0 for size in (out_hw if transposed else x.shape[2:])))):
        return False
    cout, cin = w.shape[:2]
    k, n = (cout, cin) if transposed else (cin, cout)
    least = MIN_PHASE_CHANNELS if transposed and stride == (2, 2) else MIN_OUT_CHANNELS
    return k % 16 == 0 and n >= least and n % 8 == 0 and _addressable(x, w)


def suits_weight(stride, dilation, groups, precision, x, dy):
    """Whether conv_tma_wgrad_kernel runs the weight gradient of a convolution of x with output
    gradient dy: stride and dilation 1, one group, 16-bit products, x and dy non-empty, of one 16-bit
    dtype, dense channels-last with their addresses and channel counts' bytes multiples of 16, at
    least MIN_WEIGHT_CHANNELS channels each, an output at most 64 columns wide, of powers of 2 rows
    and columns (other sizes, padded to them, where PADDED), on a GPU with TMA or in the interpreter."""
    if not (x.dtype in _16_BITS and ENABLED and precision in _PRECISIONS and groups == 1 and stride == (1, 1)
            and dilation == (1, 1)):
        return False
    c, cout, (oh, ow) = x.shape[1], dy.shape[1], dy.shape[2:]
    return (min(c, cout) >= MIN_WEIGHT_CHANNELS and c % 8 == 0 and cout % 8 == 0 and ow <= 64
            and (PADDED or oh & (oh - 1) == 0 and ow & (ow - 1) == 0) and _addressable(x, dy))


def _addressable(a, b):
    """Whether TMA descriptors can address a and b on this device: one dtype, a non-empty, their
    addresses multiples of 16 bytes, dense channels-last memory (a weight's: [Cout, kh, kw, C])."""
    return (b.dtype is a.dtype and a.numel() > 0 and not (a.data_ptr() | b.data_ptr()) & 15
            and a.is_contiguous(memory_format=torch.channels_last) and b.is_contiguous(memory_format=torch.channels_last)
            and (INTERPRET or (a.is_cuda and _has_tma(a.device.index or 0))))


_16_BITS = (torch.bfloat16, torch.float16)
_PRECISIONS = ("bf16", "fp16")


def _k_max(channels, dtype):
    """The largest K step (a power of 2 from 16) that divides the channels, its channels at most 128
    bytes (TMA's widest swizzled row: 64 16-bit channels, 32 fp32 ones)."""
    widest = 128 // dtype.itemsize
    return next(k for k in (64, 32, 16) if k <= widest and channels % k == 0)


def conv(a, w, out_hw, out_channels, padding, transposed, *, stride=1, bias=None, relu=False, precision, out_dtype):
    """conv_tma_kernel over a [N, CA, H, W] (channels-last) and w (channels-last): the forward
    (y [N, out_channels, *out_hw]) or, transposed, the input gradient (a: dy; conv_tma_dgrad2_kernel
    at stride 2); padding: before the image; stride: the forward's, 1 or 2. Returns y channels-last in
    out_dtype."""
    # the key: all the arguments but the tensors (dense channels-last: their shapes decide them)
    key = (a.shape, a.dtype, w.shape, out_hw, padding, stride, transposed, bias is None, relu, precision)
    kernel, grid, sizes, flags = kept(_PLANS, key, lambda: _plan(a, w, out_hw, out_channels, padding, transposed,
                                                               stride, bias is not None, relu, precision))
    y = torch.empty((a.shape[0], out_channels, *out_hw), device=a.device, dtype=out_dtype,
                    memory_format=torch.channels_last)
    if "BIAS" in flags:  # conv_tma_kernel's; conv_tma_dgrad2_kernel has no bias
        launch_kept(_BOUND, key, kernel, grid, (a, w, y, y if bias is None else bias, *sizes), flags)
    else:
        launch_kept(_BOUND, key, kernel, grid, (a, w, y, *sizes), flags)
    return y


def _plan(a, w, out_hw, out_channels, padding, transposed, stride, bias, relu, precision):
    """conv's (kernel, grid, its integer arguments, its keyword ones): what the shapes and arguments decide,
    worked out once per key."""
    descriptor_memory(a.device)
    N, CA, H, W = a.shape
    (HO, WO), (PH, PW), (KH, KW) = out_hw, padding, w.shape[2:]
    phases = transposed and stride == 2  # the stride-2 input gradient's boxes tile each phase's pixels
    box_hw = (HO // 2, WO // 2) if phases else (HO, WO)
    box_h, box_w = map(next_power_of_2, box_hw)

    def grid(meta):
        m = meta["BLOCK_M"]
        bw = min(box_w, m)
        bh = min(box_h, m // bw)
        return min(meta["NUM_SMS"], cdiv(N, m // (bw * bh)) * cdiv(box_hw[0], bh) * cdiv(box_hw[1], bw) *
                   cdiv(out_channels, meta["BLOCK_N"])),
    sizes = (N, H, W, CA, HO, WO, out_channels, KH, KW, PH, PW)
    flags = dict(PRECISION=precision, INTERPRET=INTERPRET, BOX_H=box_h, BOX_W=box_w, NUM_SMS=SMS or 4)
    if phases:
        return conv_tma_dgrad2_kernel, grid, sizes, flags
    return (conv_tma_kernel, grid, (*sizes, 64 if transposed else _k_max(CA, a.dtype), stride),
            dict(TRANSPOSED=transposed, BIAS=bias, RELU=relu, **flags))


_PLANS = {}  # conv's plans (_plan) by its key
_BOUND = {}  # conv's and weight_grad's Bound launches (autotune.launch_kept) by their keys


def weight_grad(x, dy, weight_size, padding, precision, channels_last=True):
    """dw (weight_size [Cout, C, kh, kw], fp32) of the stride-1 convolution of x [N, C, H, W] with output
    gradient dy [N, Cout, OH, OW] (suits_weight); padding: before the image. The pixels split into
    parts (each at least four runs) that fill the SMs' program slots about twice, summed after in a
    fixed order."""
    key = (x.shape, x.dtype, dy.shape, tuple(weight_size), padding, precision)
    blocks, parts_of, most, sizes, flags = kept(_WGRAD_PLANS, key, lambda: _weight_plan(x, dy, weight_size, padding,
                                                                                          precision))
    dw = torch.empty(tuple(weight_size), device=x.device, dtype=torch.float32, memory_format=torch.channels_last)
    sums = PartSums(dw, most)
    grid = lambda meta: (*blocks(meta), sums.parts(parts_of(meta)))
    launch_kept(_BOUND, key, conv_tma_wgrad_kernel, grid, (x, dy, sums.buffer, *sizes), flags)
    # the parts hold [Cout, kh, kw, C]: dw's channels-last memory; a kept launch's grid tells how many ran
    sums.finish(dw.permute(0, 2, 3, 1).view(-1), lambda: _BOUND[key].grid[2])
    return dw if channels_last else dw.contiguous()


def _weight_plan(x, dy, weight_size, padding, precision):
    """weight_grad's (blocks(meta), parts_of(meta), the most parts of any config, the kernel's integer
    arguments, its keyword ones), worked out once per key."""
    descriptor_memory(x.device)
    N, C, H, W = x.shape
    cout, _, KH, KW = weight_size
    OH, OW = dy.shape[2:]
    box_h, box_w = next_power_of_2(OH), next_power_of_2(OW)
    blocks = lambda meta: (KH * KW * cdiv(C, meta["BLOCK_N"]), cdiv(cout, meta["BLOCK_M"]))

    def parts_of(meta):
        rows = min(box_h, meta["BLOCK_K"] // box_w)  # the kernel's runs: BH rows, or BI images
        runs = cdiv(N, meta["BLOCK_K"] // (box_w * rows)) * cdiv(OH, rows)
        # the gathering weight gradient's model of whole waves against the parts' sums
        slots = SMS * _WGRAD_RESIDENT[meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]]
        grid_blocks = blocks(meta)
        return best_parts(runs * meta["BLOCK_K"], grid_blocks[0] * grid_blocks[1], slots, meta["BLOCK_K"])
    most = max(parts_of(c.kwargs) for c in _WGRAD_CONFIGS)
    sizes = (N, cout * weight_size[1] * KH * KW, H, W, C, OH, OW, cout, KH, KW, *padding)
    return blocks, parts_of, most, sizes, dict(BOX_H=box_h, BOX_W=box_w, PRECISION=precision, INTERPRET=INTERPRET)


_WGRAD_PLANS = {}  # weight_grad's plans (_weight_plan) by its key
