"""im2col and col2im in Caffe's layout, batched: col[n, (c, i, j), (oh, ow)] holds
x[n, c, oh*sh - ph + i, ow*sw - pw + j], zero outside the image. A convolution is then
the GEMM W[Cout, C*kh*kw] @ col[n], whose output is already NCHW. gemm.py reads its B
operand through `im2col_tile` (implicit GEMM), so convolutions never write col; im2col
stays as the reference of the layout. The input gradient of a stride-1 convolution is
itself a convolution, of dy with `flip_weight(w)`; col2im serves the other strides."""
import torch
import triton
import triton.language as tl

from ._autotune import autotune, cdiv, check

_CONFIGS = [triton.Config({"BLOCK": 4096}, num_warps=8), triton.Config({"BLOCK": 1024}, num_warps=4),
            triton.Config({"BLOCK": 512}, num_warps=4)]


def out_size(size, kernel, stride, pad, ceil_mode=False):
    """Output length of a sliding window; ceil mode drops a last window that starts in the
    padding (Caffe's and PyTorch's rule)."""
    span = size + 2 * pad - kernel
    check(span >= 0, f"window of {kernel} with padding {pad} does not fit an input of {size}")
    n = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and pad > 0 and (n - 1) * stride >= size + pad:
        n -= 1
    return n


@triton.jit
def im2col_tile(x_ptr, k, p, mask, H, W, OW, SH, SW, PH, PW, KH: tl.constexpr, KW: tl.constexpr):
    """col[k, p] of one image x [C, H, W] for int32 index tensors k = (c, i, j) and p = (oh, ow)
    of any broadcastable shapes ([BK, 1] and [1, BN] or the transpose), zero outside the image.
    Callers pass the geometry as constexpr (one compile per layer shape), so the divisions by
    OW, KW and the strides compile to multiplies and shifts instead of ~20-instruction
    run-time integer divisions per element."""
    c = k // (KH * KW)
    i = (k // KW) % KH
    j = k % KW
    h = (p // OW) * SH - PH + i
    w = (p % OW) * SW - PW + j
    inside = mask & (h >= 0) & (h < H) & (w >= 0) & (w < W)
    return tl.load(x_ptr + (c * H + h) * W + w, mask=inside, other=0.0)


@triton.jit
def window_source(h, pad, i, stride, out_len):
    """The window (along one axis) whose tap i reads input position h, and whether it exists."""
    num = h + pad - i
    o = num // stride
    return o, (num >= 0) & (num % stride == 0) & (o < out_len)


@autotune(_CONFIGS, key=["C", "H", "W", "OH", "OW", "KH", "KW"], interpret={"BLOCK": 1 << 16})
@triton.jit
def im2col_kernel(x_ptr, col_ptr, C, H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
                  SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                  KH: tl.constexpr, KW: tl.constexpr, BLOCK: tl.constexpr):
    """x [N, C, H, W] -> col [N, C*KH*KW, OH*OW]; grid (blocks of one image's col, N).
    Index math is int32 (int64 division is slow); only the image offset is int64."""
    n = tl.program_id(1).to(tl.int64)
    P = OH * OW
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < C * KH * KW * P
    v = im2col_tile(x_ptr + n * C * H * W, offs // P, offs % P, mask, H, W, OW, SH, SW, PH, PW, KH, KW)
    tl.store(col_ptr + n * C * KH * KW * P + offs, v, mask=mask)


@autotune(_CONFIGS, key=["C", "H", "W", "OH", "OW", "KH", "KW"], interpret={"BLOCK": 1 << 16})
@triton.jit
def col2im_kernel(col_ptr, x_ptr, C, H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
                  SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                  KH: tl.constexpr, KW: tl.constexpr, BLOCK: tl.constexpr):
    """dx [N, C, H, W] = sum of the col [N, C*KH*KW, OH*OW] entries that read each pixel.
    A gather per pixel: no atomics, so the result is deterministic."""
    n = tl.program_id(1).to(tl.int64)
    P = OH * OW
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < C * H * W
    c = offs // (H * W)
    h = (offs // W) % H
    w = offs % W
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    base = col_ptr + n * C * KH * KW * P
    for i in tl.static_range(KH):
        oh, ok_h = window_source(h, PH, i, SH, OH)
        for j in tl.static_range(KW):
            ow, ok_w = window_source(w, PW, j, SW, OW)
            ok = mask & ok_h & ok_w
            acc += tl.load(base + ((c * KH + i) * KW + j) * P + oh * OW + ow, mask=ok, other=0.0)
    tl.store(x_ptr + n * C * H * W + offs, acc, mask=mask)


def is_channels_last(x):
    """Whether x [N, C, H, W] lies in channels-last memory (torch.channels_last: NHWC order)
    and not also in NCHW order (C == 1 or H == W == 1 make the two orders the same)."""
    return x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)


def memory_format(channels_last):
    """torch's memory format for a layout: channels-last, or NCHW (contiguous)."""
    return torch.channels_last if channels_last else torch.contiguous_format


def check_image(name, x, channels_last=False):
    """x must be a float32 [N, C, H, W] tensor, contiguous (or, with channels_last=True,
    contiguous in either memory format), under 2^31 elements."""
    check(x.dim() == 4, f"{name}: expected a 4-D NCHW tensor, got shape {tuple(x.shape)}")
    check(x.numel() < 2**31, f"{name}: {x.numel()} elements; kernels index with int32, split the batch")
    check(x.dtype == torch.float32, f"{name}: expected float32, got {x.dtype}")
    check(x.is_contiguous() or (channels_last and x.is_contiguous(memory_format=torch.channels_last)),
          f"{name}: expected a contiguous {'NCHW or channels-last' if channels_last else 'NCHW'} tensor, "
          f"got strides {x.stride()}")


def im2col(x, kernel, stride, padding):
    """x [N, C, H, W] -> col [N, C*kh*kw, OH*OW]; kernel, stride, padding are (h, w) pairs."""
    check_image("im2col", x)
    N, C, H, W = x.shape
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, padding
    OH, OW = out_size(H, KH, SH, PH), out_size(W, KW, SW, PW)
    check(C * KH * KW * OH * OW < 2**31, "im2col: one image's columns exceed 2^31 elements")
    col = torch.empty((N, C * KH * KW, OH * OW), device=x.device, dtype=x.dtype)
    grid = lambda meta: (cdiv(C * KH * KW * OH * OW, meta["BLOCK"]), N)
    im2col_kernel[grid](x, col, C, H, W, OH, OW, SH, SW, PH, PW, KH=KH, KW=KW)
    return col, (OH, OW)


def col2im(col, image_shape, kernel, stride, padding):
    """The adjoint of im2col: col [N, C*kh*kw, OH*OW] -> dx of image_shape [N, C, H, W]."""
    N, C, H, W = image_shape
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, padding
    OH, OW = out_size(H, KH, SH, PH), out_size(W, KW, SW, PW)
    expect = (N, C * KH * KW, OH * OW)
    check(tuple(col.shape) == expect, f"col2im: col is {tuple(col.shape)}, expected {expect}")
    check(col.is_contiguous() and col.dtype == torch.float32, "col2im: col must be contiguous float32")
    x = torch.empty(image_shape, device=col.device, dtype=col.dtype)
    grid = lambda meta: (cdiv(C * H * W, meta["BLOCK"]), N)
    col2im_kernel[grid](col, x, C, H, W, OH, OW, SH, SW, PH, PW, KH=KH, KW=KW)
    return x


@triton.jit
def flip_weight_kernel(w_ptr, out_ptr, COUT, C, KK, BLOCK: tl.constexpr):
    """out[c, (co, k)] = w[co, c, KK-1-k] for w [COUT, C, KH, KW], k = i*KW + j over KK = KH*KW
    taps: reversing k flips the kernel in both axes."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < C * COUT * KK
    c = offs // (COUT * KK)
    co = (offs // KK) % COUT
    k = offs % KK
    tl.store(out_ptr + offs, tl.load(w_ptr + (co * C + c) * KK + KK - 1 - k, mask=mask), mask=mask)


def flip_weight(w):
    """w [Cout, C, kh, kw] -> [C, Cout*kh*kw], the kernel flipped in both axes with the channel
    axes swapped: the input gradient of a stride-1 convolution with padding p is the
    convolution of dy with it, padding kh-1-p (a "full" convolution)."""
    check(w.dim() == 4 and w.dtype == torch.float32 and w.is_contiguous(),
          f"flip_weight: expected a contiguous float32 [Cout, C, kh, kw] tensor, got {tuple(w.shape)} {w.dtype}")
    COUT, C, KH, KW = w.shape
    out = torch.empty((C, COUT * KH * KW), device=w.device, dtype=w.dtype)
    BLOCK = 1024
    flip_weight_kernel[(cdiv(out.numel(), BLOCK),)](w, out, COUT, C, KH * KW, BLOCK=BLOCK)
    return out
