"""Image resampling, forward and backward: torch's interpolate along one axis at a time
(linear and cubic taps from a host-made table), and grid_sample's bilinear and nearest
sampling at the points of a grid. Inputs of any strides (NCHW, channels-last, views) are read
as they lie; outputs are NCHW or channels-last as the input. Sums in fp32, outputs in the
input's dtype.

Interpolation is separable: along an axis of n points, output i is sum_k w[i, k] x[idx[i, k]],
K taps per output. Its gradient is the same sum over the transposed table (for each input
point, the outputs that read it and their weights), so one kernel serves both directions and
the backward is a gather: deterministic, no atomics."""
import numpy as np
import torch
import triton
import triton.language as tl

from .autotune import autotune, jit
from .launch import BLOCK_CONFIGS, check, grid1d, is_channels_last, kept, memory_format

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
    clamped, lambda clamped to [0, 1] as torch's CPU kernels) or cubic (K = 4 around floor, the
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
    if not cubic:
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


def _transposed(idx, w, n):
    """The table of the gradient: for each of n inputs, the outputs that read it and their
    weights, padded with index -1 (masked) to the largest count, in output order."""
    m, k = idx.shape
    flat = idx.reshape(-1)
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=n)
    width = max(int(counts.max()) if counts.size else 0, 1)
    slot = np.arange(flat.size) - np.repeat(np.cumsum(counts) - counts, counts)
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
        idx, w = _axis_taps(n, m, mode, align_corners, scale_factor)
        idx_t, w_t = _transposed(idx, w, n)
        return tuple((torch.from_numpy(a).to(device), torch.from_numpy(b).to(device))
                     for a, b in ((idx, w), (idx_t, w_t)))
    return kept(_TABLES, (n, m, mode, bool(align_corners), scale_factor, str(device)), make)


# ---- interpolate: the kernel -----------------------------------------------------------------

@autotune(BLOCK_CONFIGS, key=["TOTAL", "AX", "K"], interpret={"BLOCK": 1 << 14})
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

