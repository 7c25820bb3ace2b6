"""Stride-1 convolutions through Hopper's tensor-memory accelerator (TMA), 16-bit operands.

A 4-D tensor descriptor over a channels-last image [N, H, W, C] loads a box of BI images' BH x BW
pixels by BLOCK_K channels at any coordinates, the rows and columns outside the image read as zeros:
a filter tap's shifted box is the A tile of the implicit GEMM, its padding free, with no index
arithmetic or masks per element. The box lands in shared memory as wgmma reads it. Small images
(ResNet's 8x8 and 4x4) take several whole images per box, so the tile stays 64 or 128 pixels.

- `conv2d`: y = relu(conv(x, w) + bias), M over a box of output pixels, N over output channels,
  K over (tap, channel chunk). The weight [Cout, kh, kw, C] (channels-last) is a 2-D descriptor
  [Cout, kh*kw*C] read in [BLOCK_N, BLOCK_K] boxes: C must be a multiple of BLOCK_K, so that a box
  holds one tap's channels.
- `conv2d_input`: the input gradient, the same kernel TRANSPOSED: tap (i, j) reads dy at
  (h + PH - i, w + PW - j) and the weight's [BLOCK_K (Cout), BLOCK_N (C)] box at that tap (no flipped
  copy). A box's columns past C belong to the next tap; they land in output channels past C, which
  the store leaves out.
- `conv2d_weight`: dw[o, tap, c] = sum over output pixels of dy[p, o] x[p shifted by tap, c], M over
  output channels, N over input channels, K over boxes of output pixels (dy's box outside the output
  reads zeros, so partial boxes add nothing), split into parts summed after in a fixed order.

`suits` says where these run: stride and dilation 1, one group, bf16 or fp16 at 16-bit precision,
dense channels-last tensors whose channel counts TMA can stride over, on a GPU with TMA (or in the
interpreter, for the tests). Elsewhere conv.py's gathering kernels run."""
import functools
import os

import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune, jit
from .gemm import SMS, descriptor_memory, mma
from .launch import cdiv, tile_config
from .reduce import sum_except

ENABLED = os.environ.get("TNET_CONV_TMA", "1") != "0"  # 0: conv.py's gathering kernels everywhere (A/B timing)


@functools.lru_cache(maxsize=None)
def _has_tma(device_index):
    return torch.cuda.get_device_capability(device_index)[0] >= 9


@triton.jit
def _tile(t, HO: tl.constexpr, WO: tl.constexpr, BI: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr):
    """(first image, row, column) of box number t, boxes in row-major order over (images, rows, columns)."""
    num_w: tl.constexpr = (WO + BW - 1) // BW
    num_h: tl.constexpr = (HO + BH - 1) // BH
    return t // (num_h * num_w) * BI, (t // num_w) % num_h * BH, t % num_w * BW


_FWD_CONFIGS = [tile_config(128, 128, 64, 8, 3), tile_config(128, 64, 64, 4, 4), tile_config(64, 64, 64, 4, 4),
                tile_config(128, 256, 64, 8, 3), tile_config(64, 128, 64, 4, 4), tile_config(128, 128, 64, 4, 4)]
_WGRAD_CONFIGS = [tile_config(128, 64, 128, 8, 3), tile_config(64, 64, 128, 4, 4), tile_config(128, 128, 64, 8, 3),
                  tile_config(64, 128, 128, 4, 4), tile_config(128, 128, 128, 8, 3), tile_config(64, 64, 64, 4, 4)]


def _prune(configs, named_args, **kwargs):
    """No tile wider than twice the channels it covers (N: the output's), nor a K step past the
    channels a box holds (the forward's CA must be a multiple of BLOCK_K)."""
    a = {**named_args, **kwargs}
    fits = [c for c in configs if c.kwargs["BLOCK_N"] <= max(64, 2 * a["CO"]) and c.kwargs["BLOCK_K"] <= a["K_MAX"]]
    return fits or configs[:1]


def _prune_wgrad(configs, named_args, **kwargs):
    a = {**named_args, **kwargs}
    fits = [c for c in configs if c.kwargs["BLOCK_M"] <= max(64, 2 * a["COUT"]) and
            c.kwargs["BLOCK_N"] <= max(64, 2 * a["C"])]
    return fits or configs[:1]


@autotune(_FWD_CONFIGS, key=["N", "H", "W", "CA", "HO", "WO", "CO", "KH", "KW", "PH", "PW", "TRANSPOSED", "BIAS",
                             "RELU", "PRECISION"],
          prune_configs_by={"early_config_prune": _prune}, interpret={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 16})
@jit
def conv_tma_kernel(a_ptr, w_ptr, y_ptr, bias_ptr, N, H: tl.constexpr, W: tl.constexpr, CA: tl.constexpr,
                    HO: tl.constexpr, WO: tl.constexpr, CO: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                    PH: tl.constexpr, PW: tl.constexpr, K_MAX: tl.constexpr, TRANSPOSED: tl.constexpr,
                    BIAS: tl.constexpr, RELU: tl.constexpr, PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                    BOX_H: tl.constexpr, BOX_W: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y [N, HO, WO, CO] = relu(sum over taps (i, j) and channels c of a[n, h, w, c] * weight + bias)
    for a [N, H, W, CA] (NHWC memory), h = oh - PH + i (TRANSPOSED: oh + PH - i), likewise w; the
    weight is w_ptr's [CO, KH, KW, CA] (TRANSPOSED: [CA, KH, KW, CO], the forward's, read across).
    Grid: (output boxes, CO blocks)."""
    # the box: as wide as the image's row (BOX_W, a power of 2) up to BLOCK_M pixels, as many rows as fit, then images
    BW: tl.constexpr = BOX_W if BOX_W < BLOCK_M else BLOCK_M
    BH: tl.constexpr = BOX_H if BOX_H < BLOCK_M // BW else BLOCK_M // BW
    BI: tl.constexpr = BLOCK_M // (BW * BH)
    a_desc = tl.make_tensor_descriptor(a_ptr, [N, H, W, CA], [H * W * CA, W * CA, CA, 1], [BI, BH, BW, BLOCK_K])
    y_desc = tl.make_tensor_descriptor(y_ptr, [N, HO, WO, CO], [HO * WO * CO, WO * CO, CO, 1], [BI, BH, BW, BLOCK_N])
    if TRANSPOSED:
        w_desc = tl.make_tensor_descriptor(w_ptr, [CA, KH * KW * CO], [KH * KW * CO, 1], [BLOCK_K, BLOCK_N])
    else:
        w_desc = tl.make_tensor_descriptor(w_ptr, [CO, KH * KW * CA], [KH * KW * CA, 1], [BLOCK_N, BLOCK_K])
    n0, h0, w0 = _tile(tl.program_id(0), HO, WO, BI, BH, BW)
    o0 = tl.program_id(1) * BLOCK_N
    CHUNKS: tl.constexpr = (CA + BLOCK_K - 1) // BLOCK_K
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(0, KH * KW * CHUNKS):
        i = t // (KW * CHUNKS)
        j = (t // CHUNKS) % KW
        c0 = (t % CHUNKS) * BLOCK_K
        if TRANSPOSED:
            a = a_desc.load([n0, h0 + PH - i, w0 + PW - j, c0])
            b = w_desc.load([c0, (i * KW + j) * CO + o0])
        else:
            a = a_desc.load([n0, h0 - PH + i, w0 - PW + j, c0])
            b = w_desc.load([o0, (i * KW + j) * CA + c0]).T
        acc = mma(a.reshape(BLOCK_M, BLOCK_K), b, acc, PRECISION, INTERPRET)
    if BIAS:
        offs_n = o0 + tl.arange(0, BLOCK_N)
        acc += tl.load(bias_ptr + offs_n, mask=offs_n < CO, other=0.0).to(tl.float32)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)  # NaN stays NaN, as torch's relu
    y_desc.store([n0, h0, w0, o0], acc.to(y_ptr.dtype.element_ty).reshape(BI, BH, BW, BLOCK_N))


@autotune(_WGRAD_CONFIGS, key=["N", "H", "W", "C", "OH", "OW", "COUT", "KH", "KW", "PH", "PW", "PRECISION"],
          prune_configs_by={"early_config_prune": _prune_wgrad},
          interpret={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64})
@jit
def conv_tma_wgrad_kernel(x_ptr, dy_ptr, dw_ptr, N, stride_part, H: tl.constexpr, W: tl.constexpr, C: tl.constexpr,
                          OH: tl.constexpr, OW: tl.constexpr, COUT: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                          PH: tl.constexpr, PW: tl.constexpr, PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                          BOX_H: tl.constexpr, BOX_W: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """dw[part, o, i, j, c] = sum over the output boxes of part of dy[n, oh, ow, o] * x[n, oh - PH + i,
    ow - PW + j, c], for x [N, H, W, C] and dy [N, OH, OW, COUT] in NHWC memory, dw's parts stride_part
    apart, each [COUT, KH, KW, C]. Grid: (taps x C blocks, COUT blocks, parts): part s takes the
    s-th run of cdiv(boxes, parts) boxes of BLOCK_K pixels."""
    # the box: as wide as the image's row (BOX_W, a power of 2) up to BLOCK_K pixels, as many rows as fit, then images
    BW: tl.constexpr = BOX_W if BOX_W < BLOCK_K else BLOCK_K
    BH: tl.constexpr = BOX_H if BOX_H < BLOCK_K // BW else BLOCK_K // BW
    BI: tl.constexpr = BLOCK_K // (BW * BH)
    x_desc = tl.make_tensor_descriptor(x_ptr, [N, H, W, C], [H * W * C, W * C, C, 1], [BI, BH, BW, BLOCK_N])
    dy_desc = tl.make_tensor_descriptor(dy_ptr, [N, OH, OW, COUT], [OH * OW * COUT, OW * COUT, COUT, 1],
                                        [BI, BH, BW, BLOCK_M])
    C_BLOCKS: tl.constexpr = (C + BLOCK_N - 1) // BLOCK_N
    tap = tl.program_id(0) // C_BLOCKS
    i = tap // KW
    j = tap % KW
    c0 = tl.program_id(0) % C_BLOCKS * BLOCK_N
    o0 = tl.program_id(1) * BLOCK_M
    boxes = tl.cdiv(N, BI) * ((OH + BH - 1) // BH) * ((OW + BW - 1) // BW)
    per = tl.cdiv(boxes, tl.num_programs(2))
    first = tl.program_id(2) * per
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(first, tl.minimum(first + per, boxes)):
        n0, h0, w0 = _tile(t, OH, OW, BI, BH, BW)
        g = dy_desc.load([n0, h0, w0, o0]).reshape(BLOCK_K, BLOCK_M)
        x = x_desc.load([n0, h0 - PH + i, w0 - PW + j, c0]).reshape(BLOCK_K, BLOCK_N)
        acc = mma(g.T, x, acc, PRECISION, INTERPRET)
    offs_m = o0 + tl.arange(0, BLOCK_M)
    offs_c = c0 + tl.arange(0, BLOCK_N)
    dw = dw_ptr + tl.program_id(2).to(tl.int64) * stride_part + offs_m[:, None] * (KH * KW * C) + tap * C
    tl.store(dw + offs_c[None, :], acc, mask=(offs_m < COUT)[:, None] & (offs_c < C)[None, :])


def suits(stride, dilation, groups, precision, *tensors, k_channels=None):
    """Whether this module's kernels run a convolution pass over `tensors` (the images and the weight
    it reads, or the image and dy of the weight gradient): stride and dilation 1, one group, 16-bit
    products, every tensor non-empty, of one 16-bit dtype, dense channels-last (a weight: [Cout, kh,
    kw, C] memory) with its address and channel count's bytes multiples of 16, on a GPU with TMA or
    in the interpreter; k_channels (the forward's image channels, its K steps) a multiple of 16."""
    if not (ENABLED and groups == 1 and stride == (1, 1) and dilation == (1, 1) and precision in ("bf16", "fp16")):
        return False
    dtype = tensors[0].dtype
    if dtype not in (torch.bfloat16, torch.float16) or (k_channels is not None and k_channels % 16):
        return False
    if not (INTERPRET or (tensors[0].is_cuda and _has_tma(tensors[0].device.index or 0))):
        return False
    return all(t.dtype == dtype and t.numel() > 0 and t.shape[1] % 8 == 0 and t.data_ptr() % 16 == 0 and
               t.is_contiguous(memory_format=torch.channels_last) for t in tensors)


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
        return cdiv(N, m // (bw * bh)) * cdiv(HO, bh) * cdiv(WO, bw), cdiv(out_channels, meta["BLOCK_N"])
    conv_tma_kernel[grid](a, w, y, y if bias is None else bias, N, H, W, CA, HO, WO, out_channels, KH, KW, PH, PW,
                          64 if transposed else _k_max(CA), TRANSPOSED=transposed, BIAS=bias is not None, RELU=relu,
                          PRECISION=precision, INTERPRET=INTERPRET, BOX_H=box_h, BOX_W=box_w)
    return y


def weight_grad(x, dy, weight_size, padding, precision, channels_last=True):
    """dw (weight_size [Cout, C, kh, kw], fp32) of the stride-1 convolution of x [N, C, H, W] with
    output gradient dy [N, Cout, OH, OW], both channels-last; padding: before the image. The
    pixels split into parts (each at least four boxes) that fill the SMs' program slots about
    twice, summed after in a fixed order."""
    descriptor_memory(x.device)
    N, C, H, W = x.shape
    cout, _, KH, KW = weight_size
    OH, OW = dy.shape[2:]
    PH, PW = padding
    box_h, box_w = _pow2(OH), _pow2(OW)
    dw = torch.empty(tuple(weight_size), device=x.device, dtype=torch.float32, memory_format=torch.channels_last)

    def parts_of(meta):
        k = meta["BLOCK_K"]
        bw = min(box_w, k)
        bh = min(box_h, k // bw)
        boxes = cdiv(N, k // (bw * bh)) * cdiv(OH, bh) * cdiv(OW, bw)
        blocks = KH * KW * cdiv(C, meta["BLOCK_N"]) * cdiv(cout, meta["BLOCK_M"])
        return max(1, min(cdiv(2 * max(SMS, 1), blocks), boxes // 4))
    most = max(parts_of(c.kwargs) for c in _WGRAD_CONFIGS)
    out = dw if most == 1 else torch.empty((most, dw.numel()), device=x.device, dtype=torch.float32)
    launched = []

    def grid(meta):
        launched.append(parts_of(meta))
        return KH * KW * cdiv(C, meta["BLOCK_N"]), cdiv(cout, meta["BLOCK_M"]), launched[-1]
    conv_tma_wgrad_kernel[grid](x, dy, out, N, dw.numel(), H, W, C, OH, OW, cout, KH, KW, PH, PW, PRECISION=precision,
                                INTERPRET=INTERPRET, BOX_H=box_h, BOX_W=box_w)
    if most > 1:  # out holds [parts, Cout, kh, kw, C]: dw's channels-last memory
        sum_except(out[:launched[-1]], 1, out=dw.permute(0, 2, 3, 1).view(-1))
    return dw if channels_last else dw.contiguous()
