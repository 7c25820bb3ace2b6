"""Batch normalisation over [N, C], [N, C, L], [N, C, H, W] (NCHW or channels-last) and [N, C, D, H, W] tensors,
optionally followed by GELU in the same passes.

Every kernel sees its input as R rows of C channels: row r, channel c lies at
(r // L) * C * L + c * L + r % L, with L = D*H*W, H*W or L for contiguous input and L = 1 for
channels-last and 2-D input, where a row is one pixel's C contiguous values (read as 16-byte
vectors along C). Per-channel sums over the rows are split into parts of `chunk` rows, one
program per part and block of channels, then added up by batch_norm_finalize_kernel in a fixed
order: deterministic, no atomics.

Training forward: batch_norm_stats_kernel (per part: the sums of x - x[0] and of its square),
batch_norm_finalize_kernel (mean and 1/std; the running statistics' update on the device) and
batch_norm_apply_kernel (y = act(z), z = xhat * w + b). Eval forward: batch_norm_apply_kernel
alone, from the running statistics. Backward: batch_norm_backward_reduce_kernel (per part: sum
dz and sum dz * xhat, dz = dy * act'(z)), batch_norm_finalize_kernel (the parts added up) and
batch_norm_backward_kernel (dx).

With the activation (ACT: GELU), z is recomputed from x in every pass instead of being stored,
and dz formed where it is used: the forward reads x twice and writes y once, the backward reads
x and dy twice and writes dx once. Batch norm and GELU apart move 5 and 8 such tensors (z
written and read again, dz written and read twice). The second pass of each, one program per
tile, starts from the last rows: what the first pass read last is still in L2.

Dtypes: x and dy are float32, float16 or bfloat16 (one dtype), y and dx take x's; the
per-channel vectors (weight, bias, running statistics) may be any of the three and are
usually fp32; statistics and sums are fp32, and so are the saved mean and invstd and the
returned dweight and dbias."""
import functools
import math

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from .._device import INTERPRET
from .autotune import autotune, fit, jit, launch_kept
from .launch import FLOATS, InputError, cdiv, check, check_float, is_channels_last, kept, next_power_of_2

# Tiles of BLOCK_R rows x BLOCK_C channels: for channels-last 64 or 256 channels wide, for NCHW
# 16 wide with runs of L along the rows. The kernels that sum over parts loop over a part's
# tiles with STAGES of them loaded ahead (cp.async into shared memory): a few programs per SM
# then keep enough bytes in flight.
_TILE_CONFIGS = [triton.Config({"BLOCK_R": 64, "BLOCK_C": 64}, num_warps=4),
                 triton.Config({"BLOCK_R": 128, "BLOCK_C": 64}, num_warps=8),
                 triton.Config({"BLOCK_R": 32, "BLOCK_C": 256}, num_warps=8),
                 triton.Config({"BLOCK_R": 128, "BLOCK_C": 16}, num_warps=4)]
_PART_CONFIGS = [triton.Config({**c.kwargs, "STAGES": stages}, num_warps=c.num_warps)
                 for c, stages in zip(_TILE_CONFIGS, (3, 2, 2, 2))]
_INTERPRET_BLOCKS = {"BLOCK_R": fit("R", 2048), "BLOCK_C": 16}
_GPU = tl.constexpr(not INTERPRET)
# Rows of one part of the sums: a multiple of ROWS_MIN (itself a multiple of every config's
# BLOCK_R, so that no tile straddles two parts), at most MAX_PARTS parts, so that the finalize
# kernel reads each channel's parts in one tile. At airbench's sizes: [1024, 64, 15, 15] gives
# 450 parts of 512 rows, [1024, 256, 7, 7] 392 of 128, each part one program per block of
# channels. The interpreter pays per program: one part for test-sized inputs.
ROWS_MIN = 4096 if INTERPRET else 128
MAX_PARTS = 512
# batch_norm_finalize_kernel's channels per program: 32-byte rows of the [S, 2, C] parts, and
# C / 8 programs reading them at once rather than a few looping; the interpreter pays per program
FINAL_BLOCK_C = 128 if INTERPRET else 8


@triton.jit
def _offsets(rows, cols, end, C, L: tl.constexpr):
    """Offsets and mask of the tile rows x cols of the [R, C] view (see the module's
    docstring), rows below end. int32: the launchers check the size."""
    if L == 1:  # channels-last or 2-D: C contiguous values per row
        offs = rows[:, None] * C + cols[None, :]
    else:
        offs = (rows // L * (C * L) + rows % L)[:, None] + cols[None, :] * L
    return offs, (rows < end)[:, None] & (cols < C)[None, :]


@triton.jit
def _normaliser(mean_ptr, stat_ptr, w_ptr, b_ptr, cols, C, eps, RUNNING: tl.constexpr, HAS_W: tl.constexpr,
                HAS_B: tl.constexpr):
    """Per channel (mean, invstd, w, shift), z = (x - mean) * invstd * w + shift: stat holds the
    inverse std saved by the training forward, or with RUNNING the running variance (eps added
    here); w and shift = b (1 and 0 without them)."""
    mask = cols < C
    mean = tl.load(mean_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    invstd = tl.load(stat_ptr + cols, mask=mask, other=1.0).to(tl.float32)
    if RUNNING:
        invstd = 1.0 / tl.sqrt(invstd + eps)
    w = tl.zeros_like(mean) + 1.0
    if HAS_W:
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    shift = tl.zeros_like(mean)
    if HAS_B:
        shift = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    return mean, invstd, w, shift


@triton.jit
def _rcp(a):
    """1 / a for a >= 1: on the GPU the approximate reciprocal (2 ulp), without the range
    checks of a full division (8 instructions to 1); the interpreter has no libdevice."""
    if _GPU:
        r = libdevice.fast_dividef(1.0, a)
    else:
        r = 1.0 / a
    return r


@triton.jit
def _gelu_cdf(z):
    """(Phi(z), phi(z)): the standard normal CDF and density, GELU(z) = z Phi(z) and GELU'(z) =
    Phi(z) + z phi(z). Phi by Abramowitz and Stegun's 7.1.26 for erf (error below 1.5e-7; 3e-7
    evaluated in fp32, at most 8e-7 with the GPU's approximate reciprocal and exp2, where
    libdevice's erf gives 6e-8), whose exp(-z^2 / 2) is phi's: one exp and one reciprocal. With
    libdevice's erf and exp instead, the backward's reduce loop took 51 SASS instructions per
    element and 233 registers, against 27 and 128 (triton 3.9, sm_90): these
    passes would be compute-bound. Phi from the tail q = erfc(|z| / sqrt 2) / 2 on either side:
    no cancellation at z < 0."""
    t = _rcp(1.0 + 0.23164188826636045 * tl.abs(z))  # 0.3275911 / sqrt(2)
    # A&S's a1..a5, halved
    p = t * (0.127414796 + t * (-0.142248368 + t * (0.7107068705 + t * (-0.7265760135 + t * 0.5307027145))))
    e = tl.exp2(-0.7213475204444817 * z * z)  # exp(-z^2 / 2)
    q = p * e
    return tl.where(z < 0.0, q, 1.0 - q), e * 0.3989422804014327


@triton.jit
def _rows_of(part, chunk, R):
    """The first row of a part of chunk rows and its end (exclusive)."""
    first = part * chunk
    return first, tl.minimum(first + chunk, R)


@autotune(_PART_CONFIGS, key=["R", "C", "L", "COUNT"], interpret=_INTERPRET_BLOCKS, restore_value=["count_ptr"])
@triton.jit
def batch_norm_stats_kernel(x_ptr, part_ptr, count_ptr, R, C, chunk, L: tl.constexpr, COUNT: tl.constexpr,
                            BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, STAGES: tl.constexpr):
    """x as [R, C] -> part [S, 2, C]: per part of chunk rows, its mean and M2 (the sum of
    squared deviations from that mean); grid (S, C blocks). COUNT: program (0, 0) adds 1 to
    the int64 count (num_batches_tracked); the finalize kernel, launched after, reads it."""
    part = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    first, end = _rows_of(part, chunk, R)
    # Sums of x - shift, shift the mean of the part's first tile (peeled off the loop): the
    # sums then stay near n * (mean - shift), a few std / sqrt(BLOCK_R), whatever the rows'
    # count or offset, and M2 = sum d^2 - (sum d)^2 / n cancels almost nothing.
    offs, mask = _offsets(first + tl.arange(0, BLOCK_R), cols, end, C, L)
    x = tl.where(mask, tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32), 0.0)
    shift = tl.sum(x, axis=0) / tl.maximum(tl.minimum(end - first, BLOCK_R), 1).to(tl.float32)
    s1 = tl.where(mask, x - shift[None, :], 0.0)
    s2 = s1 * s1
    for start in tl.range(first + BLOCK_R, end, BLOCK_R, num_stages=STAGES):
        offs, mask = _offsets(start + tl.arange(0, BLOCK_R), cols, end, C, L)
        x = tl.where(mask, tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) - shift[None, :], 0.0)
        s1 += x
        s2 += x * x
    n = tl.maximum(end - first, 1).to(tl.float32)  # no rows (an empty batch's count-only program): zeros
    d = tl.sum(s1, axis=0)
    ss = tl.sum(s2, axis=0)
    # squares past fp32's range (a 3e38 among small values): M2 inf, not inf - inf, so that a finite
    # mean gives invstd 0 and y = bias, as torch's
    m2 = tl.where(ss == float("inf"), ss, ss - d * d / n)
    m2 = tl.where(m2 < 0.0, 0.0, m2)  # not tl.maximum: a NaN stays NaN, as torch's
    out = part * 2 * C + cols
    tl.store(part_ptr + out, shift + d / n, mask=cols < C)
    tl.store(part_ptr + out + C, m2, mask=cols < C)
    if COUNT:
        if (part == 0) & (tl.program_id(1) == 0):
            tl.store(count_ptr, tl.load(count_ptr) + 1)


@jit
def batch_norm_finalize_kernel(part_ptr, out_ptr, invstd_ptr, run_mean_ptr, run_var_ptr, count_ptr, R, C, S,
                               chunk, momentum, eps, STATS: tl.constexpr, TRACK: tl.constexpr,
                               CUMULATIVE: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_C: tl.constexpr):
    """part [S, 2, C] -> out [C] and invstd [C], its two rows' sums over the S parts, in a fixed
    order (the backward's sums: of dz, the bias's gradient, and of dz * xhat, the weight's, each its
    own tensor so that either becomes a leaf's .grad as it is); grid (C blocks). STATS (the stats
    kernel's parts of chunk rows): out [C] the mean and invstd [C] = 1/sqrt(biased var + eps)
    instead; TRACK: running = (1 - f) * running + f * batch, with the unbiased variance,
    f = momentum, or with CUMULATIVE 1 / count (the cumulative average)."""
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < C
    if STATS:
        # Chan's merge of the parts' (n, mean, M2), about part 0's mean: mean = m0 + sum n d / R,
        # M2 = sum (M2 + n (d - mean + m0)^2), d = part mean - m0; one tile (BLOCK_S >= S)
        s = tl.arange(0, BLOCK_S)
        n = tl.minimum(chunk, R - s * chunk).to(tl.float32)[:, None]
        mask = (s < S)[:, None] & cmask[None, :]
        at = s[:, None] * (2 * C) + cols[None, :]
        m0 = tl.load(part_ptr + cols, mask=cmask, other=0.0)
        d = tl.where(mask, tl.load(part_ptr + at, mask=mask, other=0.0) - m0[None, :], 0.0)
        dmean = tl.sum(n * d, axis=0) / R
        e = tl.where(mask, d - dmean[None, :], 0.0)
        m2 = tl.sum(tl.load(part_ptr + at + C, mask=mask, other=0.0) + n * e * e, axis=0)
        mean = m0 + dmean
        tl.store(out_ptr + cols, mean, mask=cmask)
        tl.store(invstd_ptr + cols, 1.0 / tl.sqrt(m2 / R + eps), mask=cmask)
        if TRACK:
            if CUMULATIVE:
                f = 1.0 / tl.load(count_ptr).to(tl.float32)
            else:
                f = momentum
            rm = tl.load(run_mean_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
            rv = tl.load(run_var_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
            rm = (1.0 - f) * rm + f * mean
            rv = (1.0 - f) * rv + f * (m2 / (R - 1))
            tl.store(run_mean_ptr + cols, rm.to(run_mean_ptr.dtype.element_ty), mask=cmask)
            tl.store(run_var_ptr + cols, rv.to(run_var_ptr.dtype.element_ty), mask=cmask)
    else:
        acc0 = tl.zeros((BLOCK_S, BLOCK_C), dtype=tl.float32)
        acc1 = tl.zeros((BLOCK_S, BLOCK_C), dtype=tl.float32)
        for s0 in range(0, S, BLOCK_S):  # once, where the launcher makes BLOCK_S >= S
            s = s0 + tl.arange(0, BLOCK_S)
            mask = (s < S)[:, None] & cmask[None, :]
            at = s[:, None] * (2 * C) + cols[None, :]
            acc0 += tl.load(part_ptr + at, mask=mask, other=0.0)
            acc1 += tl.load(part_ptr + at + C, mask=mask, other=0.0)
        tl.store(out_ptr + cols, tl.sum(acc0, axis=0), mask=cmask)
        tl.store(invstd_ptr + cols, tl.sum(acc1, axis=0), mask=cmask)


@autotune(_TILE_CONFIGS, key=["R", "C", "L", "RUNNING", "HAS_W", "HAS_B", "ACT"], interpret=_INTERPRET_BLOCKS)
@triton.jit
def batch_norm_apply_kernel(x_ptr, mean_ptr, stat_ptr, w_ptr, b_ptr, y_ptr, R, C, eps, L: tl.constexpr,
                            RUNNING: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, ACT: tl.constexpr,
                            BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """y = z = w * (x - mean) * invstd + b, or with ACT y = gelu(z); x and y [R, C] (laid out
    alike), the rest [C]; see _normaliser for stat. Grid (row blocks, C blocks), the last row
    block first."""
    rows = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    offs, mask = _offsets(rows, cols, R, C, L)
    mean, invstd, w, shift = _normaliser(mean_ptr, stat_ptr, w_ptr, b_ptr, cols, C, eps, RUNNING, HAS_W, HAS_B)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    # (x - mean) first, not x * scale + shift: the latter cancels when |mean| >> std; then w, then
    # invstd, as torch's CUDA kernels (w * (x - mean) * invstd + b): invstd * w overflows where y
    # does not (w = 3e38)
    y = x - mean[None, :]
    if HAS_W:
        y *= w[None, :]
    y = y * invstd[None, :] + shift[None, :]
    if ACT:
        y *= _gelu_cdf(y)[0]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _dz(dy, xc, scale, shift, ACT: tl.constexpr):
    """The gradient at z = xc * scale + shift, xc = x - mean: dy, or with ACT dy * gelu'(z)."""
    if ACT:
        z = xc * scale[None, :] + shift[None, :]
        cdf, pdf = _gelu_cdf(z)
        dy = dy * (cdf + z * pdf)
    return dy


@autotune(_PART_CONFIGS, key=["R", "C", "L", "RUNNING", "HAS_W", "HAS_B", "ACT"], interpret=_INTERPRET_BLOCKS)
@triton.jit
def batch_norm_backward_reduce_kernel(dy_ptr, x_ptr, mean_ptr, stat_ptr, w_ptr, b_ptr, part_ptr, R, C, chunk, eps,
                                      L: tl.constexpr, RUNNING: tl.constexpr, HAS_W: tl.constexpr,
                                      HAS_B: tl.constexpr, ACT: tl.constexpr,
                                      BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, STAGES: tl.constexpr):
    """dy and x [R, C] -> part [S, 2, C]: per part of chunk rows, sum dz and sum dz * xhat,
    xhat = (x - mean) * invstd, dz the gradient at z (see _dz); grid (S, C blocks)."""
    part = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mean, invstd, w, shift = _normaliser(mean_ptr, stat_ptr, w_ptr, b_ptr, cols, C, eps, RUNNING, HAS_W, HAS_B)
    scale = invstd * w
    first, end = _rows_of(part, chunk, R)
    acc_g = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    acc_gx = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for start in tl.range(first, end, BLOCK_R, num_stages=STAGES):
        offs, mask = _offsets(start + tl.arange(0, BLOCK_R), cols, end, C, L)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        xc = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) - mean[None, :]
        if RUNNING:  # a running mean may be infinite: a masked row's 0 * (0 - mean) would be NaN
            xc = tl.where(mask, xc, 0.0)
        dz = _dz(dy, xc, scale, shift, ACT)  # 0 where masked: dy is
        acc_g += dz
        acc_gx += dz * xc
    out = part * 2 * C + cols
    tl.store(part_ptr + out, tl.sum(acc_g, axis=0), mask=cols < C)
    tl.store(part_ptr + out + C, tl.sum(acc_gx, axis=0) * invstd, mask=cols < C)


@autotune(_TILE_CONFIGS, key=["R", "C", "L", "RUNNING", "HAS_W", "HAS_B", "ACT"], interpret=_INTERPRET_BLOCKS)
@triton.jit
def batch_norm_backward_kernel(dy_ptr, x_ptr, mean_ptr, stat_ptr, w_ptr, b_ptr, sum_dz_ptr, sum_dzx_ptr, dx_ptr, R, C,
                               eps, L: tl.constexpr, RUNNING: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
                               ACT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """dx [R, C] of y = act(xhat * w + b) for dy [R, C]. Batch statistics: dx = w * invstd *
    (dz - (sum dz + xhat * sum dz*xhat) / R), with the sums [C] of the reduce kernel;
    RUNNING (eval: constant statistics): dx = w * invstd * dz. Grid (row blocks, C blocks),
    the last row block first."""
    rows = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < C
    offs, mask = _offsets(rows, cols, R, C, L)
    mean, invstd, w, shift = _normaliser(mean_ptr, stat_ptr, w_ptr, b_ptr, cols, C, eps, RUNNING, HAS_W, HAS_B)
    scale = invstd * w
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if ACT or not RUNNING:
        xc = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) - mean[None, :]
        dz = _dz(dy, xc, scale, shift, ACT)
    else:
        dz = dy
    if RUNNING:  # (dz * w) * invstd, as torch's CUDA: invstd * w overflows where dx does not (w = 3e38)
        if HAS_W:
            dz *= w[None, :]
        dx = dz * invstd[None, :]
    else:
        mean_dz = tl.load(sum_dz_ptr + cols, mask=cmask, other=0.0) / R
        mean_dzx = tl.load(sum_dzx_ptr + cols, mask=cmask, other=0.0) * invstd / R  # per unit of x - mean
        dx = scale[None, :] * (dz - mean_dz[None, :] - xc * mean_dzx[None, :])
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


_VIEWS = {}  # _view's answers by (shape, strides, dtype): every forward and backward asks


def _view(name, x):
    """(R, C, L) of x, checked: the [R, C] view of the module's docstring."""
    return kept(_VIEWS, (x.shape, x.stride(), x.dtype), lambda: _checked_view(name, x))


def _checked_view(name, x):
    check(x.dim() in (2, 3, 4, 5),
          lambda: f"{name}: expected [N, C], [N, C, L], [N, C, H, W] or [N, C, D, H, W] input, got {tuple(x.shape)}")
    check_float(name, x, "input")
    check(x.numel() < 2**31, lambda: f"{name}: {x.numel()} elements; kernels index with int32, split the batch")
    cl = is_channels_last(x)
    check(x.is_contiguous() or cl,
          lambda: f"{name}: expected a contiguous (or channels-last) tensor, got strides {x.stride()}")
    C = x.shape[1]
    L = 1 if cl else max(1, math.prod(x.shape[2:]))  # no pixels (H or W 0): no rows, and no division by 0
    return x.numel() // max(C, 1), C, L


def _check_vector(name, arg, v, C, device):
    # no message closure: every forward and backward checks four vectors
    if v is not None and not (v.shape == (C,) and v.is_contiguous() and v.dtype in FLOATS and v.device == device):
        raise InputError(f"{name}: {arg} must be a contiguous float vector of {C} on {device}, got "
                         f"{tuple(v.shape)} {v.dtype} on {v.device}")


def _act(name, activation):
    """The kernels' ACT flag for an activation name: None or 'gelu' (exact, erf's)."""
    if activation is None:  # the common case, without the message closure
        return False
    check(activation == "gelu", lambda: f"{name}: activation must be None or 'gelu', got {activation!r}")
    return True


@functools.lru_cache(maxsize=4096)  # every forward and backward asks
def _row_parts(R):
    """(chunk, S): rows per part and the number of parts."""
    chunk = cdiv(max(ROWS_MIN, cdiv(R, MAX_PARTS)), ROWS_MIN) * ROWS_MIN
    return chunk, cdiv(R, chunk)


def _parts_grid(S, C):
    return lambda meta: (S, cdiv(C, meta["BLOCK_C"]))


def _tiles(R, C):
    return lambda meta: (cdiv(R, meta["BLOCK_R"]), cdiv(C, meta["BLOCK_C"]))


_BOUND = {}  # the kernels' Bound launches (autotune.launch_kept), by kernel, sizes and flags


def _finalize(part, out, invstd, run_mean, run_var, count, R, C, S, chunk, momentum, eps, stats, track, cumulative):
    block_s = min(next_power_of_2(S), MAX_PARTS)
    launch_kept(_BOUND, (batch_norm_finalize_kernel, R, C, S, chunk, stats, track, cumulative),
                batch_norm_finalize_kernel, (cdiv(C, FINAL_BLOCK_C),),
                (part, out, invstd, run_mean, run_var, count, R, C, S, chunk, momentum, eps),
                dict(STATS=stats, TRACK=track, CUMULATIVE=cumulative, BLOCK_S=block_s, BLOCK_C=FINAL_BLOCK_C,
                     num_warps=8 if block_s > 128 else 4))


def _apply(x, view, mean, stat, weight, bias, eps, running, act):
    """y = act(normalised x) through the apply kernel; view: x's checked (R, C, L)."""
    R, C, L = view
    y = torch.empty_like(x)
    if R == 0:  # no rows: nothing to launch
        return y
    has_w, has_b = weight is not None, bias is not None
    launch_kept(_BOUND, (batch_norm_apply_kernel, R, C, L, running, has_w, has_b, act), batch_norm_apply_kernel,
                _tiles(R, C), (x, mean, stat, weight if has_w else x, bias if has_b else x, y, R, C, float(eps)),
                dict(L=L, RUNNING=running, HAS_W=has_w, HAS_B=has_b, ACT=act))
    return y


def batch_norm_train(x, weight=None, bias=None, eps=1e-5, running_mean=None, running_var=None, momentum=0.1,
                     num_batches_tracked=None, activation=None):
    """Batch normalisation with the batch's statistics, then the activation (None or 'gelu'):
    returns (y, mean, invstd), y in x's layout, mean and invstd [C] float32 (what
    batch_norm_backward needs). Given running_mean and running_var, updates them in place on
    the device, with momentum, or with momentum=None the cumulative average over
    num_batches_tracked; given num_batches_tracked (one int64 element), adds 1 to it on the
    device first. No host synchronisation: a CUDA graph replays all of it. An empty batch (no
    rows) gives an empty y and leaves the running statistics as they are, as torch (which still
    counts the batch in num_batches_tracked)."""
    R, C, L = _view("batch_norm", x)
    act = _act("batch_norm", activation)
    device = x.device
    if R == 1:
        raise InputError(f"batch_norm: expected more than 1 value per channel when training, got input size "
                         f"{tuple(x.shape)}")
    _check_vector("batch_norm", "weight", weight, C, device)
    _check_vector("batch_norm", "bias", bias, C, device)
    _check_vector("batch_norm", "running_mean", running_mean, C, device)
    _check_vector("batch_norm", "running_var", running_var, C, device)
    track = running_mean is not None
    check(track == (running_var is not None), "batch_norm: give both running_mean and running_var, or neither")
    count = num_batches_tracked
    if count is not None and not (count.numel() == 1 and count.dtype == torch.int64 and count.device == device):
        raise InputError(f"batch_norm: num_batches_tracked must be one int64 element on {device}, got "
                         f"{tuple(count.shape)} {count.dtype} on {count.device}")
    check(momentum is not None or not track or count is not None,
          "batch_norm: momentum=None (the cumulative average) needs num_batches_tracked")
    chunk, S = _row_parts(R)
    part = torch.empty((max(S, 1), 2, C), device=device, dtype=torch.float32)
    mean = torch.empty(C, device=device, dtype=torch.float32)
    invstd = torch.empty(C, device=device, dtype=torch.float32)
    # no rows: one program only counts the batch (its part, of no rows, is never read)
    grid = _parts_grid(S, C) if R else (1, 1)
    counts = count is not None
    launch_kept(_BOUND, (batch_norm_stats_kernel, R, C, L, chunk, counts), batch_norm_stats_kernel, grid,
                (x, part, count if counts else mean, R, C, chunk), dict(L=L, COUNT=counts))
    if R == 0:
        return torch.empty_like(x), mean, invstd
    _finalize(part, mean, invstd, running_mean if track else mean, running_var if track else mean,
              mean if count is None else count, R, C, S, chunk, float(momentum or 0.0), float(eps), stats=True,
              track=track, cumulative=momentum is None)
    return _apply(x, (R, C, L), mean, invstd, weight, bias, eps, False, act), mean, invstd


def batch_norm_eval(x, running_mean, running_var, weight=None, bias=None, eps=1e-5, activation=None):
    """Batch normalisation with the running statistics, then the activation (None or 'gelu'),
    in one pass; y in x's layout."""
    view = _view("batch_norm", x)
    C = view[1]
    act = _act("batch_norm", activation)
    for arg, v in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        _check_vector("batch_norm", arg, v, C, x.device)
    check(running_mean is not None and running_var is not None,
          "batch_norm: running_mean and running_var must be given in evaluation mode")
    return _apply(x, view, running_mean, running_var, weight, bias, eps, True, act)


def batch_norm_backward(dy, x, mean, stat, weight=None, eps=1e-5, running=False, need_x=True, need_params=True, *,
                        bias=None, activation=None):
    """(dx, dweight, dbias) for dy (in x's layout) of y = act(batch_norm(x)): of batch_norm_train
    with its (mean, invstd) as (mean, stat), or with running=True of batch_norm_eval with its
    running (mean, var) as (mean, stat); weight, bias and activation as given to the forward
    (bias matters only under the activation). dx is None unless need_x, dweight and dbias None
    unless need_params (dweight is the gradient of a weight, also without one). No rows: an
    empty dx, zero dweight and dbias."""
    R, C, L = _view("batch_norm backward", x)
    act = _act("batch_norm backward", activation)
    check(dy.shape == x.shape and dy.dtype == x.dtype and is_channels_last(dy) == is_channels_last(x)
          and (dy.is_contiguous() or is_channels_last(dy)),
          lambda: f"batch_norm backward: dy {tuple(dy.shape)} {dy.dtype} with strides {dy.stride()} is not laid "
                  f"out as x {tuple(x.shape)} {x.dtype} with strides {x.stride()}")
    for arg, v in (("mean", mean), ("stat", stat), ("weight", weight), ("bias", bias)):
        _check_vector("batch_norm backward", arg, v, C, x.device)
    return backward_trusted(dy, x, mean, stat, weight, eps, running, need_x, need_params, bias, act)


def backward_trusted(dy, x, mean, stat, weight, eps, running, need_x, need_params, bias, act):
    """batch_norm_backward without its checks of dy and the vectors (act: _act's flag), for
    F.batch_norm's backward: its forward checked x, the statistics and the parameters, and the
    tape brings dy in x's shape, dtype and layout. The checks cost about what the launches do."""
    R, C, L = _view("batch_norm backward", x)
    if R == 0:
        zeros = lambda: torch.zeros(C, device=x.device, dtype=torch.float32) if need_params else None
        return torch.empty_like(x) if need_x else None, zeros(), zeros()
    flags = dict(L=L, RUNNING=running, HAS_W=weight is not None, HAS_B=bias is not None, ACT=act)
    w, b = x if weight is None else weight, x if bias is None else bias
    dw = db = None  # the sums over the rows of dz * xhat and of dz
    if need_params or (need_x and not running):
        chunk, S = _row_parts(R)
        part = torch.empty((S, 2, C), device=x.device, dtype=torch.float32)
        launch_kept(_BOUND, (batch_norm_backward_reduce_kernel, R, C, chunk, *flags.values()),
                    batch_norm_backward_reduce_kernel, _parts_grid(S, C),
                    (dy, x, mean, stat, w, b, part, R, C, chunk, float(eps)), flags)
        db = torch.empty(C, device=x.device, dtype=torch.float32)
        dw = torch.empty(C, device=x.device, dtype=torch.float32)
        _finalize(part, db, dw, db, db, db, R, C, S, chunk, 0.0, 0.0, stats=False, track=False, cumulative=False)
    dx = None
    if need_x:
        dx = torch.empty_like(x)
        launch_kept(_BOUND, (batch_norm_backward_kernel, R, C, *flags.values()), batch_norm_backward_kernel,
                    _tiles(R, C), (dy, x, mean, stat, w, b, mean if db is None else db, mean if dw is None else dw, dx,
                                   R, C, float(eps)), flags)
    if not need_params:
        return dx, None, None
    return dx, dw, db
