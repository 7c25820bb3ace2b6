"""Max and average pooling over NCHW or channels-last tensors, forward and backward, with
Caffe's rules: max pooling skips the padding and keeps the first maximum in row-major order;
average pooling divides by the window clipped to the padded image (count_include_pad), or as
torch's count_include_pad=False and divisor_override ask (_window). The
geometry is constexpr: index divisions become multiplies. Tensors are float32,
float16 or bfloat16: sums and comparisons in fp32, y in x's dtype, dx in dy's.

Each program takes a tile of pixels x channels. In channels-last memory a tile row is a run of
contiguous channels addressed through the constexpr sizes, so loads and stores move 16-byte
vectors (see conv._x_offset). Max pooling keeps, per output, the index i*KW + j of its maximum
inside the window: int8 (a quarter of an int32 plane index's traffic) where KH*KW <= 127."""
import torch
import triton
import triton.language as tl

from .autotune import autotune, fit, jit
from .launch import (BLOCK_CONFIGS, cdiv, check, check_float, grid1d, is_channels_last, memory_format, next_power_of_2,
                     out_size)

# BLOCK: elements (pixels x channels) per program. 8 per thread: 16-byte vectors of 16-bit values
# and 8-byte ones of int8 arg in the same layout (16 per thread took an 8 KB shared-memory
# conversion between them in the PTX of triton 3.9 for sm_90).
_CONFIGS = [triton.Config({"BLOCK": 2048}, num_warps=8), triton.Config({"BLOCK": 1024}, num_warps=4),
            triton.Config({"BLOCK": 4096}, num_warps=16)]
# the interpreter's blocks: a block of BLOCK // BLOCK_C pixels x BLOCK_C channels, fitted to the pixels
_fit_pixels = fit(lambda args: args["NPIX"] * args["BLOCK_C"], 1 << 16)


def arg_dtype(kernel):
    """The dtype of max pooling's argmax for a (KH, KW) window: int8 indices while they fit."""
    return torch.int8 if kernel[0] * kernel[1] <= 127 else torch.int32


def _tiling(N, C, x_cl, y_cl):
    """(images, channels, channels per tile row) as the kernels see the tensors. Channels-last on
    either side: a tile row is a run of channels that divides C where C is a multiple of 8
    (unmasked 16-byte vectors of 16-bit values), up to 64. NCHW on both sides: N*C one-channel
    images, the same memory, so that tile rows run along the planes' contiguous pixels."""
    if not (x_cl or y_cl):
        return N * C, 1, 1
    return N, C, min(C & -C, 64) if C % 8 == 0 else min(next_power_of_2(C), 64)


@triton.jit
def _tile(NPIX, C: tl.constexpr, BLOCK: tl.constexpr, BLOCK_C: tl.constexpr):
    """This program's pixel rows p [BLOCK // BLOCK_C, 1] (of NPIX) and channel columns c
    [1, BLOCK_C], and the mask of the tile's valid elements; channel blocks vary fastest
    across programs."""
    BLOCKS_C: tl.constexpr = (C + BLOCK_C - 1) // BLOCK_C
    BLOCK_P: tl.constexpr = BLOCK // BLOCK_C
    pid = tl.program_id(0)
    p = ((pid // BLOCKS_C) * BLOCK_P + tl.arange(0, BLOCK_P))[:, None]
    c = ((pid % BLOCKS_C) * BLOCK_C + tl.arange(0, BLOCK_C))[None, :]
    ok = p < NPIX
    if C % BLOCK_C != 0:
        ok = ok & (c < C)
    return p, c, ok


@triton.jit
def _at(n, c, h, w, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, CL: tl.constexpr):
    """Flat offset of element [n, c, h, w] of an [N, C, H, W] tensor, NCHW or, with CL,
    channels-last (int32: see _check_image)."""
    if CL:
        return ((n * H + h) * W + w) * C + c
    return ((n * C + c) * H + h) * W + w


@triton.jit
def _window(oh, ow, H, W, SH, SW, PH, PW, KH: tl.constexpr, KW: tl.constexpr, COUNT_PAD: tl.constexpr,
            DIVISOR: tl.constexpr):
    """First row and column of a window, and its average divisor, torch's: DIVISOR where not 0
    (divisor_override), else the window clipped to the padded image (COUNT_PAD, Caffe's rule)
    or to the image."""
    h0 = oh * SH - PH
    w0 = ow * SW - PW
    if DIVISOR != 0:
        size = h0 * 0 + w0 * 0 + DIVISOR
    elif COUNT_PAD:
        size = (tl.minimum(h0 + KH, H + PH) - h0) * (tl.minimum(w0 + KW, W + PW) - w0)
    else:  # at least 1: the backward's masked windows outside the output would divide 0 by 0
        size = (tl.minimum(h0 + KH, H) - tl.maximum(h0, 0)) * (tl.minimum(w0 + KW, W) - tl.maximum(w0, 0))
        size = tl.maximum(size, 1)
    return h0, w0, size


@autotune(_CONFIGS, key=["NPIX", "C", "H", "W", "OH", "OW", "SH", "SW", "PH", "PW", "KH", "KW", "MAX", "COUNT_PAD",
                         "DIVISOR", "CL_X", "CL_Y", "BLOCK_C"], interpret={"BLOCK": _fit_pixels})
@jit
def pool_kernel(x_ptr, y_ptr, arg_ptr, NPIX, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                OH: tl.constexpr, OW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
                PW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, MAX: tl.constexpr, COUNT_PAD: tl.constexpr,
                DIVISOR: tl.constexpr, CL_X: tl.constexpr, CL_Y: tl.constexpr, BLOCK_C: tl.constexpr,
                BLOCK: tl.constexpr):
    """x [N, C, H, W] -> y [N, C, OH, OW] (NPIX = N*OH*OW pixels), each NCHW or channels-last
    (CL_X, CL_Y: pooling is where an NCHW activation turns channels-last); max pooling also
    writes arg (laid out as y), the index i*KW + j of each maximum inside its window."""
    p, c, ok = _tile(NPIX, C, BLOCK, BLOCK_C)
    n, oh, ow = p // (OH * OW), (p // OW) % OH, p % OW
    h0, w0, size = _window(oh, ow, H, W, SH, SW, PH, PW, KH, KW, COUNT_PAD, DIVISOR)
    if MAX:
        best = tl.full((BLOCK // BLOCK_C, BLOCK_C), float("-inf"), tl.float32)
        # A window of -inf only: its first tap inside the image, as PyTorch takes.
        arg = tl.zeros((BLOCK // BLOCK_C, BLOCK_C), tl.int32) + \
            (tl.maximum(h0, 0) - h0) * KW + tl.maximum(w0, 0) - w0
    else:
        acc = tl.zeros((BLOCK // BLOCK_C, BLOCK_C), tl.float32)
    for i in tl.static_range(KH):
        h = h0 + i
        for j in tl.static_range(KW):
            w = w0 + j
            inside = ok & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            src = x_ptr + _at(n, c, h, w, C, H, W, CL_X)
            if MAX:
                v = tl.load(src, mask=inside, other=float("-inf")).to(tl.float32)
                # strict: the first maximum wins ties; a NaN wins always, so the last NaN is kept, as torch
                better = (v > best) | (v != v)
                best = tl.where(better, v, best)
                arg = tl.where(better, i * KW + j, arg)
            else:
                acc += tl.load(src, mask=inside, other=0.0).to(tl.float32)
    out = _at(n, c, oh, ow, C, OH, OW, CL_Y)
    if MAX:
        tl.store(y_ptr + out, best.to(y_ptr.dtype.element_ty), mask=ok)
        tl.store(arg_ptr + out, arg.to(arg_ptr.dtype.element_ty), mask=ok)
    else:
        tl.store(y_ptr + out, (acc / size.to(tl.float32)).to(y_ptr.dtype.element_ty), mask=ok)


@autotune(_CONFIGS, key=["NPIX", "C", "H", "W", "OH", "OW", "SH", "SW", "PH", "PW", "KH", "KW", "MAX", "COUNT_PAD",
                         "DIVISOR", "RELU", "CL_X", "CL_Y", "BLOCK_C"], interpret={"BLOCK": _fit_pixels})
@jit
def pool_backward_kernel(dy_ptr, arg_ptr, x_ptr, dx_ptr, NPIX, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                         OH: tl.constexpr, OW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
                         PW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, MAX: tl.constexpr,
                         COUNT_PAD: tl.constexpr, DIVISOR: tl.constexpr, RELU: tl.constexpr, CL_X: tl.constexpr,
                         CL_Y: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK: tl.constexpr):
    """dx [N, C, H, W] (NPIX = N*H*W pixels, laid out as the pooled x: CL_X) from dy
    [N, C, OH, OW] and arg (laid out as y: CL_Y): each pixel gathers from the windows that read
    it (no atomics, deterministic); max pooling only from windows whose maximum it was. RELU:
    the pooled x was a ReLU's output, whose gradient mask (0 where x <= 0: a NaN passes, as torch)
    is applied here too."""
    p, c, ok = _tile(NPIX, C, BLOCK, BLOCK_C)
    n, h, w = p // (H * W), (p // W) % H, p % W
    acc = tl.zeros((BLOCK // BLOCK_C, BLOCK_C), tl.float32)
    # The windows that read row h are oh = (h + PH) // SH - t for t < ceil(KH / SH), those that
    # exist: 2 per axis for a 3x3 window at stride 2, so 4 loads where trying every tap takes 9.
    for t in tl.static_range((KH + SH - 1) // SH):
        oh = (h + PH) // SH - t
        i = h + PH - oh * SH  # the row inside window oh
        ok_h = (oh >= 0) & (oh < OH) & (i < KH)
        for u in tl.static_range((KW + SW - 1) // SW):
            ow = (w + PW) // SW - u
            j = w + PW - ow * SW
            hit = ok & ok_h & (ow >= 0) & (ow < OW) & (j < KW)
            at = _at(n, c, oh, ow, C, OH, OW, CL_Y)
            g = tl.load(dy_ptr + at, mask=hit, other=0.0).to(tl.float32)
            if MAX:
                acc += tl.where(tl.load(arg_ptr + at, mask=hit, other=-1).to(tl.int32) == i * KW + j, g, 0.0)
            else:
                _, _, size = _window(oh, ow, H, W, SH, SW, PH, PW, KH, KW, COUNT_PAD, DIVISOR)
                acc += g / size.to(tl.float32)
    at = _at(n, c, h, w, C, H, W, CL_X)
    if RELU:
        acc = tl.where(tl.load(x_ptr + at, mask=ok, other=0.0).to(tl.float32) <= 0, 0.0, acc)
    tl.store(dx_ptr + at, acc.to(dx_ptr.dtype.element_ty), mask=ok)


@autotune(_CONFIGS, key=["NPIX", "C", "H", "W", "OH", "OW", "OHX", "OWX", "PH", "PW", "KH", "KW", "MAX", "COUNT_PAD",
                         "DIVISOR", "RELU", "CL_X", "CL_Y", "BLOCK_C"], interpret={"BLOCK": _fit_pixels})
@jit
def pool_backward_disjoint_kernel(dy_ptr, arg_ptr, x_ptr, dx_ptr, NPIX, C: tl.constexpr, H: tl.constexpr,
                                  W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr, OHX: tl.constexpr,
                                  OWX: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, KH: tl.constexpr,
                                  KW: tl.constexpr, MAX: tl.constexpr, COUNT_PAD: tl.constexpr, DIVISOR: tl.constexpr,
                                  RELU: tl.constexpr, CL_X: tl.constexpr, CL_Y: tl.constexpr, BLOCK_C: tl.constexpr,
                                  BLOCK: tl.constexpr):
    """pool_backward_kernel's dx where the windows tile the image (stride == kernel): each
    window of the [N, OHX, OWX] grid that covers the padded image (NPIX = N*OHX*OWX) reads its
    dy and arg once and writes each of its pixels' dx once. Windows past the output (the last
    rows and columns a floor-mode pooling leaves out) write zeros. airbench's 31 -> 15 at b1024
    in fp16: 44 MB read (dy, int8 arg), 126 MB written, all in 16-byte vectors."""
    p, c, ok = _tile(NPIX, C, BLOCK, BLOCK_C)
    n, oh, ow = p // (OHX * OWX), (p // OWX) % OHX, p % OWX
    at = _at(n, c, oh, ow, C, OH, OW, CL_Y)
    real = ok & (oh < OH) & (ow < OW)
    h0, w0, size = _window(oh, ow, H, W, KH, KW, PH, PW, KH, KW, COUNT_PAD, DIVISOR)
    g = tl.load(dy_ptr + at, mask=real, other=0.0).to(tl.float32)
    if MAX:
        arg = tl.load(arg_ptr + at, mask=real, other=-1).to(tl.int32)
    else:
        g = g / size.to(tl.float32)
    for i in tl.static_range(KH):
        h = h0 + i
        for j in tl.static_range(KW):
            w = w0 + j
            inside = ok & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            if MAX:
                d = tl.where(arg == i * KW + j, g, 0.0)
            else:
                d = g
            dst = _at(n, c, h, w, C, H, W, CL_X)
            if RELU:
                d = tl.where(tl.load(x_ptr + dst, mask=inside, other=0.0).to(tl.float32) <= 0, 0.0, d)
            tl.store(dx_ptr + dst, d.to(dx_ptr.dtype.element_ty), mask=inside)


def _check_image(name, x):
    """x must be a float [N, C, H, W] tensor, NCHW or channels-last, under 2^31 elements."""
    check(x.dim() == 4, lambda: f"{name}: expected a 4-D NCHW tensor, got shape {tuple(x.shape)}")
    check(x.numel() < 2**31, lambda: f"{name}: {x.numel()} elements; kernels index with int32, split the batch")
    check_float(name, x)
    check(x.is_contiguous() or is_channels_last(x),
          lambda: f"{name}: expected a contiguous NCHW or channels-last tensor, got strides {x.stride()}")


def _divisor(divisor_override):
    """The kernels' DIVISOR: divisor_override, 0 for none."""
    if divisor_override is None:
        return 0
    check(divisor_override != 0, "divisor must be not zero")
    return int(divisor_override)


def pool2d(x, kernel, stride, padding, ceil_mode, mode, channels_last=None, count_include_pad=True,
           divisor_override=None):
    """mode "max" or "avg"; kernel, stride, padding are (h, w) pairs, padding at most half the
    kernel (torch's rule). Returns (y, arg), where arg is max pooling's argmax (the index
    i*KW + j inside each window, arg_dtype(kernel)) and None for average pooling; both
    channels-last if channels_last (None: as x is). count_include_pad and divisor_override:
    average pooling's divisor, as torch's avg_pool2d."""
    _check_image(f"{mode}_pool2d", x)
    check(mode in ("max", "avg"), lambda: f"pool2d: mode must be 'max' or 'avg', got {mode!r}")
    N, C, H, W = x.shape
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, padding
    for k, p in zip(kernel, padding):
        check(2 * p <= k, lambda: f"pad should be at most half of effective kernel size, but got pad={p}, "
                                  f"kernel_size={k} and dilation=1")
    OH, OW = out_size(H, KH, SH, PH, ceil_mode), out_size(W, KW, SW, PW, ceil_mode)
    x_cl = is_channels_last(x)
    y_cl = x_cl if channels_last is None else channels_last
    y = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype, memory_format=memory_format(y_cl))
    arg = torch.empty((N, C, OH, OW), device=x.device, dtype=arg_dtype(kernel), memory_format=memory_format(y_cl)) \
        if mode == "max" else None
    n, c, block_c = _tiling(N, C, x_cl, y_cl)
    npix = n * OH * OW
    grid = lambda meta: (cdiv(npix, meta["BLOCK"] // block_c) * cdiv(c, block_c),)
    pool_kernel[grid](x, y, arg if arg is not None else y, npix, c, H, W, OH, OW, SH, SW, PH, PW,
                      KH=KH, KW=KW, MAX=mode == "max", COUNT_PAD=bool(count_include_pad),
                      DIVISOR=_divisor(divisor_override), CL_X=x_cl, CL_Y=y_cl, BLOCK_C=block_c)
    return y, arg


def pool2d_backward(dy, arg, image_shape, kernel, stride, padding, mode, relu_input=None,
                    x_channels_last=False, y_channels_last=None, count_include_pad=True,
                    divisor_override=None):
    """dx of pool2d for dy; with relu_input, the pooled tensor (a ReLU's output), dx is
    also masked where relu_input <= 0: the ReLU's backward in the same pass.
    x_channels_last: the pooled tensor's layout (is_channels_last), which dx gets and
    relu_input must have; y_channels_last (None: the same): the pooling output's, which dy
    and arg must have. Windows that tile the image (stride == kernel) write dx window by
    window; overlapping or spaced ones gather it pixel by pixel. count_include_pad and
    divisor_override: pool2d's."""
    N, C, H, W = image_shape
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, padding
    OH, OW = dy.shape[2], dy.shape[3]
    y_channels_last = x_channels_last if y_channels_last is None else y_channels_last
    _check_image(f"{mode}_pool2d backward", dy)
    check(mode != "max" or (arg is not None and arg.dtype == arg_dtype(kernel) and arg.shape == dy.shape),
          lambda: f"max_pool2d backward: arg must be pool2d's {arg_dtype(kernel)} argmax of dy's shape "
                  f"{tuple(dy.shape)}, got {None if arg is None else (arg.dtype, tuple(arg.shape))}")
    for name, t, cl in (("dy", dy, y_channels_last), ("arg", arg, y_channels_last),
                        ("relu_input", relu_input, x_channels_last)):
        check(t is None or t.is_contiguous(memory_format=memory_format(cl)),
              lambda: f"{mode}_pool2d backward: {name} is not in the layout given for it "
                      f"({'channels-last' if cl else 'NCHW'}), strides {t.stride()}")
    check(relu_input is None or tuple(relu_input.shape) == tuple(image_shape),
          lambda: f"{mode}_pool2d backward: relu_input is {tuple(relu_input.shape)}, expected {tuple(image_shape)}")
    dx = torch.empty(image_shape, device=dy.device, dtype=dy.dtype, memory_format=memory_format(x_channels_last))
    n, c, block_c = _tiling(N, C, x_channels_last, y_channels_last)
    args = (dy, arg if arg is not None else dy, relu_input if relu_input is not None else dy, dx)
    flags = dict(KH=KH, KW=KW, MAX=mode == "max", COUNT_PAD=bool(count_include_pad),
                 DIVISOR=_divisor(divisor_override), RELU=relu_input is not None,
                 CL_X=x_channels_last, CL_Y=y_channels_last, BLOCK_C=block_c)
    if (SH, SW) == (KH, KW):
        OHX, OWX = max(OH, cdiv(H + PH, KH)), max(OW, cdiv(W + PW, KW))  # windows that cover the image
        npix = n * OHX * OWX
        grid = lambda meta: (cdiv(npix, meta["BLOCK"] // block_c) * cdiv(c, block_c),)
        pool_backward_disjoint_kernel[grid](*args, npix, c, H, W, OH, OW, OHX, OWX, PH, PW, **flags)
    else:
        npix = n * H * W
        grid = lambda meta: (cdiv(npix, meta["BLOCK"] // block_c) * cdiv(c, block_c),)
        pool_backward_kernel[grid](*args, npix, c, H, W, OH, OW, SH, SW, PH, PW, **flags)
    return dx


# Adaptive pooling (torch's rule): output row oh reads input rows floor(oh*H/OH) to
# ceil((oh+1)*H/OH), exclusive; columns likewise. Windows differ in size and may overlap.
# One program takes BLOCK outputs (or inputs, backward) in the tensors' flat memory order.

@triton.jit
def _nchw_index(offs, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, CL: tl.constexpr):
    """(n, c, h, w) of flat offsets into an [N, C, H, W] tensor, NCHW or channels-last (CL)."""
    if CL:
        c = offs % C
        rest = offs // C
        w = rest % W
        rest = rest // W
        h = rest % H
        n = rest // H
    else:
        w = offs % W
        rest = offs // W
        h = rest % H
        rest = rest // H
        c = rest % C
        n = rest // C
    return n, c, h, w


@autotune(BLOCK_CONFIGS, key=["n", "C", "H", "W", "OH", "OW", "MAX", "CL"], interpret={"BLOCK": fit("n", 1 << 14)})
@triton.jit
def adaptive_pool_kernel(x_ptr, y_ptr, arg_ptr, n, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr,
                         OW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, MAX: tl.constexpr, CL: tl.constexpr,
                         BLOCK: tl.constexpr):
    """y [N, C, OH, OW] (n elements; x and y both NCHW, or both channels-last: CL) = the mean, or
    (MAX) the maximum, with arg its input pixel h*W + w, of x over each output's window, of at
    most KH x KW pixels."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    b, c, oh, ow = _nchw_index(offs, C, OH, OW, CL)
    h0 = oh * H // OH
    h1 = ((oh + 1) * H + OH - 1) // OH
    w0 = ow * W // OW
    w1 = ((ow + 1) * W + OW - 1) // OW
    acc = tl.zeros([BLOCK], tl.float32)
    if MAX:
        acc += float("-inf")
    arg = h0 * W + w0  # torch's index where every value is -inf
    for i in range(0, KH):
        for j in range(0, KW):
            h = h0 + i
            w = w0 + j
            inside = mask & (h < h1) & (w < w1)
            at = _at(b, c, h, w, C, H, W, CL)
            if MAX:  # the first maximum wins ties; a NaN always wins, so the last NaN is kept, as torch
                v = tl.load(x_ptr + at, mask=inside, other=float("-inf")).to(tl.float32)
                better = inside & ((v > acc) | (v != v))
                acc = tl.where(better, v, acc)
                arg = tl.where(better, h * W + w, arg)
            else:
                acc += tl.load(x_ptr + at, mask=inside, other=0.0).to(tl.float32)
    if MAX:
        tl.store(arg_ptr + offs, arg.to(arg_ptr.dtype.element_ty), mask=mask)
    else:
        acc = acc / ((h1 - h0) * (w1 - w0)).to(tl.float32)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


@autotune(BLOCK_CONFIGS, key=["n", "C", "H", "W", "OH", "OW", "MAX", "CL"], interpret={"BLOCK": fit("n", 1 << 14)})
@triton.jit
def adaptive_pool_backward_kernel(dy_ptr, arg_ptr, dx_ptr, n, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                                  OH: tl.constexpr, OW: tl.constexpr, KOH: tl.constexpr, KOW: tl.constexpr,
                                  MAX: tl.constexpr, CL: tl.constexpr, BLOCK: tl.constexpr):
    """dx [N, C, H, W] (n elements, laid out as dy: CL) gathers from the outputs whose windows
    hold its pixel, rows oh in [floor(h*OH/H), ceil((h+1)*OH/H)), at most KOH (and KOW columns):
    dy / the window's size, or (MAX) dy where arg names the pixel. No atomics: deterministic."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    b, c, h, w = _nchw_index(offs, C, H, W, CL)
    oh0 = h * OH // H
    oh1 = ((h + 1) * OH + H - 1) // H
    ow0 = w * OW // W
    ow1 = ((w + 1) * OW + W - 1) // W
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, KOH):
        for j in range(0, KOW):
            oh = oh0 + i
            ow = ow0 + j
            hit = mask & (oh < oh1) & (ow < ow1)
            at = _at(b, c, oh, ow, C, OH, OW, CL)
            g = tl.load(dy_ptr + at, mask=hit, other=0.0).to(tl.float32)
            if MAX:
                acc += tl.where(tl.load(arg_ptr + at, mask=hit, other=-1) == h * W + w, g, 0.0)
            else:
                size = (((oh + 1) * H + OH - 1) // OH - oh * H // OH) * (((ow + 1) * W + OW - 1) // OW - ow * W // OW)
                acc += g / size.to(tl.float32)
    tl.store(dx_ptr + offs, acc.to(dx_ptr.dtype.element_ty), mask=mask)


def _span(size, out):
    """The most input rows an adaptive window of `out` windows over `size` rows takes."""
    return max((-(-(o + 1) * size // out) - o * size // out for o in range(out)), default=0)


def adaptive_pool2d(x, output_size, mode):
    """Adaptive average ("avg") or max ("max") pooling of x [N, C, H, W] (NCHW or channels-last;
    y in x's layout) to output_size (OH, OW): (y, arg), arg the int32 input pixel h*W + w of each
    maximum (None for "avg")."""
    name = f"adaptive_{mode}_pool2d"
    _check_image(name, x)
    check(mode in ("avg", "max"), lambda: f"adaptive_pool2d: mode must be 'avg' or 'max', got {mode!r}")
    N, C, H, W = x.shape
    OH, OW = output_size
    check(OH >= 0 and OW >= 0, lambda: f"{name}: elements of output_size must be greater than or equal to 0 but "
                                        f"received {output_size}")
    check(H > 0 and W > 0, lambda: f"{name}: input {tuple(x.shape)} has an empty spatial dim")
    cl = is_channels_last(x)
    y = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype, memory_format=memory_format(cl))
    arg = torch.empty_like(y, dtype=torch.int32) if mode == "max" else None
    if y.numel():
        adaptive_pool_kernel[grid1d(y.numel())](x, y, y if arg is None else arg, y.numel(), C, H, W, OH, OW,
                                                _span(H, OH), _span(W, OW), MAX=mode == "max", CL=cl)
    return y, arg


def adaptive_pool2d_backward(dy, arg, image_shape, mode):
    """dx [N, C, H, W] of adaptive_pool2d, laid out as dy, from dy and (max) its arg."""
    name = f"adaptive_{mode}_pool2d backward"
    _check_image(name, dy)
    cl = is_channels_last(dy)
    check(mode == "avg" or (arg is not None and arg.shape == dy.shape and arg.is_contiguous(memory_format=memory_format(cl))),
          lambda: f"{name}: arg must be the forward's, laid out as dy")
    N, C, H, W = image_shape
    OH, OW = dy.shape[2:]
    dx = torch.empty(image_shape, device=dy.device, dtype=dy.dtype, memory_format=memory_format(cl))
    if dx.numel() and not dy.numel():  # an output of size 0 took no input pixel
        dx.zero_()
    elif dx.numel():
        adaptive_pool_backward_kernel[grid1d(dx.numel())](dy, dy if arg is None else arg, dx, dx.numel(), C, H, W,
                                                          OH, OW, _span(OH, H), _span(OW, W), MAX=mode == "max",
                                                          CL=cl)
    return dx
