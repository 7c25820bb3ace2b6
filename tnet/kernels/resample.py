"""Image resampling, forward and backward: torch's interpolate along one axis at a time
(linear and cubic taps from a host-made table), and grid_sample's bilinear and nearest
sampling at the points of a grid. Inputs of any strides (NCHW, channels-last, views) are read
as they lie; outputs are NCHW or channels-last as the input. Sums in fp32, outputs in the
input's dtype.

Interpolation is separable: along an axis of n points, output i is sum_k w[i, k] x[idx[i, k]],
K taps per output. Its gradient is the same sum over the transposed table (for each input
point, the outputs that read it and their weights), so one kernel serves both directions and
the backward is a gather: deterministic, no atomics."""
import math

import numpy as np
import torch
import triton
import triton.language as tl

from .autotune import autotune, fit, jit
from .launch import BLOCK_CONFIGS, cdiv, check, grid1d, is_channels_last, kept, memory_format

CUBIC_A = -0.75  # torch's cubic convolution constant (Keys)


# ---- interpolate: the host tables of one axis ------------------------------------------------

def source_scale(n, m, align_corners, scale_factor):
    """torch's area_pixel_compute_scale in float32 (the opmath of a float32 input): (n - 1) / (m - 1)
    with align_corners, else 1 / scale_factor where one is given, else n / m."""
    if align_corners:
        return np.float32(n - 1) / np.float32(m - 1) if m > 1 else np.float32(0)
    if scale_factor is not None and scale_factor > 0:
        return np.float32(1.0 / scale_factor)
    return np.float32(n) / np.float32(m)


def _axis_taps(n, m, mode, align_corners, scale_factor):
    """(idx [m, K] int32, w [m, K] float32): the input points and weights of each of m outputs from
    n inputs, by torch's area_pixel_compute_source_index; linear (K = 2: floor and the next,
    clamped, lambda clamped to [0, 1] as torch's CPU kernels; an axis of n == m reads input i with
    weight 1 and again with weight 0, so an inf stays NaN as torch's) or cubic (K = 4 around floor, the
    indices clamped to the border, A = -0.75)."""
    scale = source_scale(n, m, align_corners, scale_factor)
    i = np.arange(m, dtype=np.float32)
    cubic = mode == "cubic"
    if align_corners:
        src = scale * i
    else:
        src = scale * (i + np.float32(0.5)) - np.float32(0.5)
        if not cubic:
            src = np.maximum(src, np.float32(0))
    if not cubic and n == m:  # torch's copy of an axis that keeps its size: both taps output i's input, weights 1, 0
        idx = np.stack([np.arange(m)] * 2, 1)
        w = np.stack([np.ones(m, np.float32), np.zeros(m, np.float32)], 1)
    elif not cubic:
        i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
        lam = np.clip(src - i0.astype(np.float32), 0, 1).astype(np.float32)
        idx = np.stack([i0, np.minimum(i0 + 1, n - 1)], 1)
        w = np.stack([np.float32(1) - lam, lam], 1)
    else:
        i0 = np.floor(src)
        t = (src - i0).astype(np.float32)
        a = np.float32(CUBIC_A)

        def near(x):  # |x| <= 1
            return ((a + 2) * x - (a + 3)) * x * x + 1

        def far(x):  # 1 < |x| < 2
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        w = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1).astype(np.float32)
        idx = np.clip(i0.astype(np.int64)[:, None] + np.arange(-1, 3), 0, n - 1)
    return idx.astype(np.int32), w.astype(np.float32)


_SUPPORT = {"linear": 1.0, "cubic": 2.0, "lanczos": 3.0}  # an antialiased filter's half width, in input pixels


def _antialiased_taps(n, m, kind, align_corners, scale_factor):
    """(idx [m, K], w [m, K]) of antialiased resampling, torch's: each output i reads the inputs within
    `support` of its centre scale * (i + 0.5), support = 1 (kind 'linear'), 2 ('cubic', A = -0.5) or 3
    ('lanczos': sinc(x) sinc(x / 3)) input pixels widened by the scale where it shrinks, the filter
    stretched as much, the weights normalised to sum 1; float32 arithmetic as torch's for a float32
    input (the lanczos filter's sines in float64, rounded); unused taps are index -1, weight 0. An axis
    of n == m is a copy, as torch's separable passes skip it (a NaN's zero-weight neighbour stays finite)."""
    scale = source_scale(n, m, align_corners, scale_factor)
    half = np.float32(_SUPPORT[kind])
    support = half * scale if scale >= 1 else half
    invscale = np.float32(1) / scale if scale >= 1 else np.float32(1)
    k = int(math.ceil(support)) * 2 + 1
    a = np.float32(-0.5)

    def filt(x):
        x = np.abs(x)
        if kind == "cubic":
            near = ((a + 2) * x - (a + 3)) * x * x + 1
            far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
            return np.where(x < 1, near, np.where(x < 2, far, np.float32(0))).astype(np.float32)
        if kind == "lanczos":
            return np.where(x < 3, np.sinc(x.astype(np.float64)) * np.sinc(x / 3.0), 0.0).astype(np.float32)
        return np.where(x < 1, np.float32(1) - x, np.float32(0)).astype(np.float32)
    idx = np.full((m, k), -1, np.int64)
    w = np.zeros((m, k), np.float32)
    if n == m:
        idx[:, 0], w[:, 0] = np.arange(m), 1
        return idx.astype(np.int32), w
    half_pixel = np.float32(0.5)
    for i in range(m):
        center = scale * (np.float32(i) + half_pixel)
        lo = max(int(center - support + half_pixel), 0)  # int(): truncation toward 0, as torch's cast
        size = min(int(center + support + half_pixel), n) - lo
        taps = filt((np.arange(size, dtype=np.float32) + np.float32(lo) - center + half_pixel) * invscale)
        total = taps.sum(dtype=np.float32)
        idx[i, :size] = lo + np.arange(size)
        w[i, :size] = taps / total if total != 0 else taps
    return idx.astype(np.int32), w


def _transposed(idx, w, n):
    """The table of the gradient: for each of n inputs, the outputs that read it and their
    weights, padded with index -1 (masked) to the largest count, in output order; the forward's
    padding taps (index -1) read nothing and are left out."""
    m, k = idx.shape
    flat = idx.reshape(-1)
    used = np.nonzero(flat >= 0)[0]
    order = used[np.argsort(flat[used], kind="stable")]
    counts = np.bincount(flat[used], minlength=n)
    width = max(int(counts.max()) if counts.size else 0, 1)
    slot = np.arange(order.size) - np.repeat(np.cumsum(counts) - counts, counts)
    idx_t = np.full((n, width), -1, np.int32)
    w_t = np.zeros((n, width), np.float32)
    idx_t[flat[order], slot] = order // k
    w_t[flat[order], slot] = w.reshape(-1)[order]
    return idx_t, w_t


_TABLES = {}


def axis_tables(n, m, mode, align_corners, scale_factor, device):
    """((idx, w), (idx_t, w_t)) on device, the forward and backward tables of one axis (kept per
    geometry: scripts resize the same shapes every step)."""
    def make():
        if mode.startswith("antialiased"):
            idx, w = _antialiased_taps(n, m, mode[len("antialiased "):], align_corners, scale_factor)
        else:
            idx, w = _axis_taps(n, m, mode, align_corners, scale_factor)
        idx_t, w_t = _transposed(idx, w, n)
        return tuple((torch.from_numpy(a).to(device), torch.from_numpy(b).to(device))
                     for a, b in ((idx, w), (idx_t, w_t)))
    return kept(_TABLES, (n, m, mode, bool(align_corners), scale_factor, str(device)), make)


# ---- interpolate: the kernel -----------------------------------------------------------------

@autotune(BLOCK_CONFIGS, key=["TOTAL", "AX", "K"], interpret={"BLOCK": fit("TOTAL", 1 << 14)})
@jit
def resample_axis_kernel(x_ptr, y_ptr, idx_ptr, w_ptr, TOTAL, S1, S2, S3, XS0, XS1, XS2, XS3, YS0, YS1, YS2, YS3,
                         AX: tl.constexpr, K: tl.constexpr, BLOCK: tl.constexpr):
    """y [S0, S1, S2, S3] (TOTAL elements, dims in y's memory order) from x of the same dims but
    along dim AX: y[.., i, ..] = sum_k w[i, k] * x[.., idx[i, k], ..], idx < 0 a padding tap."""
    f = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = f < TOTAL
    r3 = f % S3
    r2 = (f // S3) % S2
    r1 = (f // (S3 * S2)) % S1
    r0 = f // (S3 * S2 * S1)
    if AX == 0:
        i = r0
        xs = XS0
    elif AX == 1:
        i = r1
        xs = XS1
    elif AX == 2:
        i = r2
        xs = XS2
    else:
        i = r3
        xs = XS3
    xbase = r0 * XS0 + r1 * XS1 + r2 * XS2 + r3 * XS3 - i * xs
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in tl.static_range(K):
        j = tl.load(idx_ptr + i * K + k, mask=ok, other=-1)
        wk = tl.load(w_ptr + i * K + k, mask=ok, other=0.0)
        tap = ok & (j >= 0)
        acc += wk * tl.load(x_ptr + xbase + j * xs, mask=tap, other=0.0).to(tl.float32)
    tl.store(y_ptr + r0 * YS0 + r1 * YS1 + r2 * YS2 + r3 * YS3, acc.to(y_ptr.dtype.element_ty), mask=ok)


def _like(x, shape):
    """An empty tensor of `shape` in x's layout: channels-last where x is, else contiguous."""
    return torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=memory_format(is_channels_last(x)))


def _check_offsets(name, *ts):
    for t in ts:
        reach = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))
        check(reach < 2**31, lambda: f"{name}: offsets past 2^31; kernels index with int32, split the batch")


def resample_axis(x, axis, idx, w):
    """y: x (3-D or 4-D, any strides) resampled along `axis` by the table (idx, w) [m, K] (one
    row per output point), in x's layout."""
    shape = list(x.shape)
    shape[axis] = idx.shape[0]
    y = _like(x, shape)
    if y.numel() == 0:
        return y
    _check_offsets("interpolate", x, y)
    pad = 4 - x.dim()
    xv, yv = x[(None,) * pad], y[(None,) * pad]
    ax = axis + pad
    order = sorted(range(4), key=lambda d: -yv.stride(d))  # y's memory order: coalesced stores
    s = [yv.shape[d] for d in order]
    resample_axis_kernel[grid1d(y.numel())](
        xv, yv, idx, w, y.numel(), s[1], s[2], s[3], *[xv.stride(d) for d in order], *[yv.stride(d) for d in order],
        AX=order.index(ax), K=idx.shape[1])
    return y



# ---- grid_sample -----------------------------------------------------------------------------

ZEROS, BORDER, REFLECTION = 0, 1, 2  # padding modes, as the kernels take them

# BLOCK_P pixels x BLOCK_C channels per step; a program loops over the channel blocks so that
# each pixel's grid point and weights are worked out once.
_GRID_CONFIGS = [triton.Config({"BLOCK_P": 64}, num_warps=4), triton.Config({"BLOCK_P": 128}, num_warps=4),
                 triton.Config({"BLOCK_P": 32}, num_warps=2)]


@triton.jit
def _clip(x, size):
    """(x clipped to [0, size - 1], its derivative: 0 on and past the border, as torch's)."""
    top = (size - 1) * 1.0  # not .to(): an int argument of 1 is a constexpr on the GPU
    return tl.minimum(tl.maximum(x, 0.0), top), tl.where((x > 0.0) & (x < top), 1.0, 0.0)


@triton.jit
def _reflect(x, twice_low, twice_high):
    """(x reflected into [twice_low / 2, twice_high / 2], its derivative: +-1), torch's
    reflect_coordinates; a span of 0 (one point with align_corners) gives 0."""
    lo = twice_low * 0.5
    span = (twice_high - twice_low) * 0.5
    span1 = tl.where(span > 0, span, 1.0)
    d = x - lo
    sign = tl.where(d < 0, -1.0, 1.0)
    d = tl.abs(d)
    flips = tl.floor(d / span1)
    extra = d - flips * span1
    even = flips - 2.0 * tl.floor(flips / 2.0) == 0.0
    out = tl.where(even, extra + lo, span - extra + lo)
    grad = tl.where(even, sign, -sign)
    return tl.where(span > 0, out, 0.0), tl.where(span > 0, grad, 0.0)


@triton.jit
def _source(coord, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    """(the input coordinate of a grid coordinate in [-1, 1] along an axis of `size` points, d it /
    d coord): torch's grid_sampler_compute_source_index with its padding mode; a coordinate that
    is not finite or does not fit an int32 becomes -100 (outside), as torch's."""
    s = size * 1.0
    if ALIGN:
        x = (coord + 1.0) / 2.0 * (s - 1.0)
        g = (s - 1.0) / 2.0 + tl.zeros_like(coord)
    else:
        # one rounding, as torch's kernels round it (compiled with fused multiply-adds): at an identity
        # theta a point lands on a pixel centre, and a second rounding can move it to the pixel below,
        # and bilinear's gradient to the grid with it
        x = tl.fma(coord + 1.0, s, -1.0) / 2.0
        g = s / 2.0 + tl.zeros_like(coord)
    if PAD == 1:
        x, gc = _clip(x, size)
        g = g * gc
    elif PAD == 2:
        if ALIGN:
            x, gr = _reflect(x, 0, 2 * (size - 1))
        else:
            x, gr = _reflect(x, -1, 2 * size - 1)
        x, gc = _clip(x, size)
        g = g * gr * gc
    x = tl.where((x != x) | (x > 2147483646.0) | (x < -2147483648.0), -100.0, x)
    return x, g


@triton.jit
def _round_even(x):
    """x rounded to the nearest integer, ties to even (torch's nearbyint)."""
    f = tl.floor(x)
    d = x - f
    odd = f - 2.0 * tl.floor(f / 2.0) != 0.0
    return tl.where((d > 0.5) | ((d == 0.5) & odd), f + 1.0, f)


@triton.jit
def _corner_weights(k: tl.constexpr, fx, fy):
    """(wx, wy): corner k's (0 nw, 1 ne, 2 sw, 3 se) bilinear weight is wx * wy, fx and fy the
    point's offsets from the nw corner."""
    if k % 2 == 1:
        wx = fx
    else:
        wx = 1.0 - fx
    if k // 2 == 1:
        wy = fy
    else:
        wy = 1.0 - fy
    return wx, wy


@triton.jit
def _corner(xi, yi, W, H):
    """(int32 column, int32 row, whether the point lies inside the image) of a corner."""
    inside = (xi >= 0) & (xi < W) & (yi >= 0) & (yi < H)
    return xi.to(tl.int32), yi.to(tl.int32), inside


@triton.jit
def _first_corner(ix, iy, BILINEAR: tl.constexpr):
    """(x0, y0): the nw corner of a bilinear point's four taps, or a nearest point's one tap."""
    if BILINEAR:
        return tl.floor(ix), tl.floor(iy)
    return _round_even(ix), _round_even(iy)


@triton.jit
def _grid_point(g_ptr, p, okp, OH, OW, GN, GH, GW, GD, H, W, PAD: tl.constexpr, ALIGN: tl.constexpr):
    """Image n of pixels p [BLOCK_P] and their input coordinates (ix, iy) with d/d grid (gx, gy)."""
    n = p // (OH * OW)
    at = n * GN + ((p // OW) % OH) * GH + (p % OW) * GW
    ix, gx = _source(tl.load(g_ptr + at, mask=okp, other=0.0).to(tl.float32), W, PAD, ALIGN)
    iy, gy = _source(tl.load(g_ptr + at + GD, mask=okp, other=0.0).to(tl.float32), H, PAD, ALIGN)
    return n, ix, iy, gx, gy


@autotune(_GRID_CONFIGS, key=["NP", "C", "BILINEAR", "PAD", "ALIGN", "BLOCK_C"], interpret={"BLOCK_P": fit("NP", 1024)})
@jit
def grid_sample_kernel(x_ptr, g_ptr, y_ptr, NP, C, H, W, OH, OW, XN, XC, XH, XW, GN, GH, GW, GD, YN, YC, YH, YW,
                       BILINEAR: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr, BLOCK_C: tl.constexpr,
                       BLOCK_P: tl.constexpr):
    """y [N, C, OH, OW] (NP = N*OH*OW pixels): x [N, C, H, W] sampled at grid [N, OH, OW, 2] (x, y
    in [-1, 1]), bilinear or nearest, each tensor through its strides."""
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    okp = p < NP
    n, ix, iy, gx, gy = _grid_point(g_ptr, p, okp, OH, OW, GN, GH, GW, GD, H, W, PAD, ALIGN)
    yat = (n * YN + ((p // OW) % OH) * YH + (p % OW) * YW)[:, None]
    x0, y0 = _first_corner(ix, iy, BILINEAR)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)[None, :]
        ok = okp[:, None] & (c < C)
        xb = n[:, None] * XN + c * XC
        acc = tl.zeros((BLOCK_P, BLOCK_C), tl.float32)
        for k in tl.static_range(4 if BILINEAR else 1):
            xi = x0 + (k % 2)
            yi = y0 + (k // 2)
            if BILINEAR:
                wx, wy = _corner_weights(k, ix - x0, iy - y0)
                w = wx * wy
            else:
                w = tl.full((BLOCK_P,), 1.0, tl.float32)
            xc, yc, inside = _corner(xi, yi, W, H)
            v = tl.load(x_ptr + xb + (yc * XH + xc * XW)[:, None], mask=ok & inside[:, None], other=0.0)
            acc += w[:, None] * v.to(tl.float32)
        tl.store(y_ptr + yat + c * YC, acc.to(y_ptr.dtype.element_ty), mask=ok)


# One config: timing configs would run the atomic adds into dx again and again.
@autotune(_GRID_CONFIGS[:1], key=["NP", "C", "BILINEAR", "PAD", "ALIGN", "DX", "DGRID", "BLOCK_C"],
          interpret={"BLOCK_P": fit("NP", 1024)})
@jit
def grid_sample_backward_kernel(dy_ptr, x_ptr, g_ptr, dx_ptr, dg_ptr, NP, C, H, W, OH, OW, XN, XC, XH, XW, GN, GH,
                                GW, GD, YN, YC, YH, YW, DN, DC, DH, DW, BILINEAR: tl.constexpr, PAD: tl.constexpr,
                                ALIGN: tl.constexpr, DX: tl.constexpr, DGRID: tl.constexpr, BLOCK_C: tl.constexpr,
                                BLOCK_P: tl.constexpr):
    """grid_sample_kernel's gradients from dy (strides YN..YW): with DX, dx (fp32, zeroed,
    strides DN..DW) += each tap's weight * dy, by atomic adds (the taps of two pixels may
    meet); with DGRID (bilinear), dgrid [NP, 2] (fp32, contiguous) = d y / d grid . dy summed
    over the channels."""
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    okp = p < NP
    n, ix, iy, gx, gy = _grid_point(g_ptr, p, okp, OH, OW, GN, GH, GW, GD, H, W, PAD, ALIGN)
    yat = (n * YN + ((p // OW) % OH) * YH + (p % OW) * YW)[:, None]
    x0, y0 = _first_corner(ix, iy, BILINEAR)
    fx = ix - x0
    fy = iy - y0
    sx = tl.zeros((BLOCK_P,), tl.float32)
    sy = tl.zeros((BLOCK_P,), tl.float32)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)[None, :]
        ok = okp[:, None] & (c < C)
        dy = tl.load(dy_ptr + yat + c * YC, mask=ok, other=0.0).to(tl.float32)
        for k in tl.static_range(4 if BILINEAR else 1):
            xi = x0 + (k % 2)
            yi = y0 + (k // 2)
            xc, yc, inside = _corner(xi, yi, W, H)
            at = (yc * XH + xc * XW)[:, None]
            m = ok & inside[:, None]
            if BILINEAR:
                wx, wy = _corner_weights(k, fx, fy)
                w = wx * wy
            else:
                w = tl.full((BLOCK_P,), 1.0, tl.float32)
            if DX:
                tl.atomic_add(dx_ptr + n[:, None] * DN + c * DC + (yc * DH + xc * DW)[:, None], w[:, None] * dy,
                              mask=m)
            if DGRID:
                v = tl.load(x_ptr + n[:, None] * XN + c * XC + at, mask=m, other=0.0).to(tl.float32)
                # d w / d ix = +-wy, d w / d iy = +-wx: + for the far corner along the axis; (value * that) * dy,
                # torch's order: a huge value times dy first overflowed, and times a clipped point's 0, NaN
                if k % 2 == 1:
                    tx = wy
                else:
                    tx = -wy
                if k // 2 == 1:
                    ty = wx
                else:
                    ty = -wx
                sx += tl.sum(v * tx[:, None] * dy, axis=1)
                sy += tl.sum(v * ty[:, None] * dy, axis=1)
    if DGRID:
        tl.store(dg_ptr + 2 * p, sx * gx, mask=okp)
        tl.store(dg_ptr + 2 * p + 1, sy * gy, mask=okp)


def _grid_args(x, grid, y):
    N, C, H, W = x.shape
    OH, OW = grid.shape[1:3]
    return (N * OH * OW, C, H, W, OH, OW, *x.stride(), *grid.stride(), *y.stride())


def _block_c(C):
    return min(max(1 << (C - 1).bit_length(), 1), 32)


def grid_sample(x, grid, bilinear, pad, align_corners):
    """y [N, C, OH, OW] in x's layout: x [N, C, H, W] sampled at grid [N, OH, OW, 2], any strides."""
    N, C = x.shape[:2]
    y = _like(x, (N, C, *grid.shape[1:3]))
    if y.numel() == 0:
        return y
    _check_offsets("grid_sample", x, grid, y)
    grid_sample_kernel[lambda meta: (cdiv(y.numel() // C, meta["BLOCK_P"]),)](
        x, grid, y, *_grid_args(x, grid, y), BILINEAR=bilinear, PAD=pad, ALIGN=bool(align_corners),
        BLOCK_C=_block_c(C))
    return y


def grid_sample_backward(dy, x, grid, bilinear, pad, align_corners, need_dx, need_dgrid):
    """(dx in x's layout and dtype, or None; dgrid [N, OH, OW, 2] in grid's dtype, or None). dx adds up by
    atomics: on the GPU its sums run in no fixed order (torch's CUDA grid_sample is so too)."""
    N, C = x.shape[:2]
    dx = torch.empty(x.shape, dtype=torch.float32, device=x.device,
                     memory_format=memory_format(is_channels_last(x))).zero_()
    dgrid = torch.zeros((*grid.shape[:3], 2), dtype=torch.float32, device=x.device)
    want_dgrid, need_dgrid = need_dgrid, need_dgrid and bilinear  # nearest: d y / d grid = 0
    if dy.numel() and (need_dx or need_dgrid):
        _check_offsets("grid_sample", dy, dx)
        grid_sample_backward_kernel[lambda meta: (cdiv(dy.numel() // C, meta["BLOCK_P"]),)](
            dy, x, grid, dx, dgrid, *_grid_args(x, grid, dy), *dx.stride(), BILINEAR=bilinear, PAD=pad,
            ALIGN=bool(align_corners), DX=need_dx, DGRID=need_dgrid, BLOCK_C=_block_c(C))
    return (dx.to(x.dtype) if need_dx else None), (dgrid.to(grid.dtype) if want_dgrid else None)
