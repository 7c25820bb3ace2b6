"""Stride-1 convolutions through Hopper's tensor-memory accelerator (TMA), 16-bit operands: the
forward and the input gradient.

A 4-D tensor descriptor over a channels-last image [N, H, W, C] loads a box of BI images' BH x BW
pixels by BLOCK_K channels at any coordinates, the rows and columns outside the image read as zeros:
a filter tap's shifted box is an operand of the implicit GEMM, its padding free, with no index
arithmetic or masks per element, landing in shared memory where wgmma reads it. Small images
(ResNet's 8x8 and 4x4) take several whole images per box, so the tile stays 64 or 128 pixels.

- The forward, y = relu(conv(x, w) + bias): M over a box of output pixels, N over output channels,
  K over (tap, channel chunk). The weight [Cout, kh, kw, C] (channels-last) is a 2-D descriptor
  [Cout, kh*kw*C] read in [BLOCK_N, K step] boxes, a K step dividing C, so that a box holds one tap's
  channels.
- The input gradient, the same kernel TRANSPOSED: tap (i, j) reads dy at (h + PH - i, w + PW - j) and
  the weight's [K step (Cout), BLOCK_N (C)] box at that tap (no flipped copy). A box's columns past C
  belong to the next tap; they land in output channels past C, which the store leaves out.

`suits` says where it runs: stride and dilation 1, one group, bf16 or fp16 at 16-bit precision, dense
channels-last tensors whose channel counts TMA can stride over, at least MIN_OUT_CHANNELS outputs, on a
GPU with TMA (or in the interpreter, for the tests). Elsewhere conv.py's gathering kernels run, and
they run every weight gradient: a TMA one, its pixels the K of the GEMM, ran slower on the H100 (the
boxes' pixels past 15x15 or 7x7 images are waste; docs/results.md)."""
import functools
import os

import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune, jit, launch_kept
from .gemm import SMS, descriptor_memory, mma
from .launch import cdiv, tile_config

ENABLED = os.environ.get("TNET_CONV_TMA", "1") != "0"  # 0: conv.py's gathering kernels everywhere (A/B timing)
# Fewer output channels ran faster gathered on the H100 (a 64-wide N tile reads each box for few outputs)
MIN_OUT_CHANNELS = 128


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


@autotune(_FWD_CONFIGS, key=["N", "H", "W", "CA", "HO", "WO", "CO", "KH", "KW", "PH", "PW", "TRANSPOSED", "BIAS",
                             "RELU", "PRECISION"],
          interpret={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64})
@jit
def conv_tma_kernel(a_ptr, w_ptr, y_ptr, bias_ptr, N, H: tl.constexpr, W: tl.constexpr, CA: tl.constexpr,
                    HO: tl.constexpr, WO: tl.constexpr, CO: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                    PH: tl.constexpr, PW: tl.constexpr, K_MAX: tl.constexpr, TRANSPOSED: tl.constexpr,
                    BIAS: tl.constexpr, RELU: tl.constexpr, PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                    BOX_H: tl.constexpr, BOX_W: tl.constexpr, NUM_SMS: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y [N, HO, WO, CO] = relu(sum over taps (i, j) and channels c of a[n, h, w, c] * weight + bias)
    for a [N, H, W, CA] (NHWC memory), h = oh - PH + i (TRANSPOSED: oh + PH - i), likewise w; the
    weight is w_ptr's [CO, KH, KW, CA] (TRANSPOSED: [CA, KH, KW, CO], the forward's, read across).
    K steps of BLOCK_K channels, or K_MAX where fewer: a weight box holds one tap's channels alone.
    Persistent: NUM_SMS programs (or fewer) walk the tiles (output box, CO block), the CO blocks of
    a box in turn, so that the descriptors are built once a program and a box is read while in L2."""
    KS: tl.constexpr = BLOCK_K if BLOCK_K < K_MAX else K_MAX
    # the box: as wide as the image's row (BOX_W, a power of 2) up to BLOCK_M pixels, as many rows as fit, then images
    BW: tl.constexpr = BOX_W if BOX_W < BLOCK_M else BLOCK_M
    BH: tl.constexpr = BOX_H if BOX_H < BLOCK_M // BW else BLOCK_M // BW
    BI: tl.constexpr = BLOCK_M // (BW * BH)
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


def suits(stride, dilation, groups, precision, x, w, transposed=False):
    """Whether conv_tma_kernel runs the forward (transposed: the input gradient, x being dy) of a
    convolution of x by w: stride and dilation 1, one group, 16-bit products, x and w non-empty, of
    one 16-bit dtype, dense channels-last (w: [Cout, kh, kw, C] memory) with their addresses and
    channel counts' bytes multiples of 16, the forward's input channels a multiple of 16 (K steps),
    at least MIN_OUT_CHANNELS outputs, on a GPU with TMA or in the interpreter."""
    if not (ENABLED and groups == 1 and stride == (1, 1) and dilation == (1, 1) and precision in ("bf16", "fp16")):
        return False
    if x.dtype not in (torch.bfloat16, torch.float16) or w.shape[0 if transposed else 1] % 16 or \
            w.shape[1 if transposed else 0] < MIN_OUT_CHANNELS:
        return False
    if not (INTERPRET or (x.is_cuda and _has_tma(x.device.index or 0))):
        return False
    return w.shape[0] % 8 == 0 and w.shape[1] % 8 == 0 and all(
        t.dtype == x.dtype and t.numel() > 0 and t.data_ptr() % 16 == 0 and
        t.is_contiguous(memory_format=torch.channels_last) for t in (x, w))


def _pow2(n):
    return triton.next_power_of_2(n)


def _k_max(channels):
    """The largest K step (a power of 2, 16 to 64) that divides the channels."""
    return 64 if channels % 64 == 0 else 32 if channels % 32 == 0 else 16


def conv(a, w, out_hw, out_channels, padding, transposed, *, bias=None, relu=False, precision, out_dtype):
    """conv_tma_kernel over a [N, CA, H, W] (channels-last) and w (channels-last): the forward
    (y [N, out_channels, *out_hw]) or, transposed, the input gradient (a: dy); padding: before the
    image. Returns y channels-last in out_dtype."""
    descriptor_memory(a.device)
    N, CA, H, W = a.shape
    (HO, WO), (PH, PW), (KH, KW) = out_hw, padding, w.shape[2:]
    y = torch.empty((N, out_channels, HO, WO), device=a.device, dtype=out_dtype, memory_format=torch.channels_last)
    box_h, box_w = _pow2(HO), _pow2(WO)

    def grid(meta):
        m = meta["BLOCK_M"]
        bw = min(box_w, m)
        bh = min(box_h, m // bw)
        return min(meta["NUM_SMS"], cdiv(N, m // (bw * bh)) * cdiv(HO, bh) * cdiv(WO, bw) *
                   cdiv(out_channels, meta["BLOCK_N"])),
    # the key: all the arguments but the tensors (dense channels-last: their shapes decide them)
    key = (a.shape, w.shape, out_hw, padding, transposed, bias is None, relu, precision)
    launch_kept(_BOUND, key, conv_tma_kernel, grid,
                (a, w, y, y if bias is None else bias, N, H, W, CA, HO, WO, out_channels, KH, KW, PH, PW,
                 64 if transposed else _k_max(CA)),
                dict(TRANSPOSED=transposed, BIAS=bias is not None, RELU=relu, PRECISION=precision, INTERPRET=INTERPRET,
                     BOX_H=box_h, BOX_W=box_w, NUM_SMS=SMS or 4))
    return y


_BOUND = {}  # conv_tma_kernel's Bound launches (autotune.launch_kept) by conv's key
