"""Batch normalisation over [N, C], [N, C, L] and [N, C, H, W] tensors (NCHW or channels-last).

Every kernel sees its input as R rows of C channels: row r, channel c lies at
(r // L) * C * L + c * L + r % L, with L = H*W (or L) for contiguous input and L = 1 for
channels-last and 2-D input, where a row is one pixel's C contiguous values. Per-channel
sums over the R rows are split into parts of `chunk` rows, one program per part and block of
channels, then the parts are combined in a fixed order: deterministic, no atomics, and many
programs at ResNet sizes (R = N*H*W up to a million).

Training forward: batch_norm_stats_kernel (per part: mean and M2 by Welford's update, of x
shifted by its first row), batch_norm_finalize_kernel (Chan's combination of the parts; the running statistics' update
on the device) and batch_norm_apply_kernel. Eval forward: batch_norm_apply_kernel alone, from
the running statistics. Backward: batch_norm_backward_reduce_kernel (per part: sum dy and
sum dy * xhat, added up by reduce.sum_except) and batch_norm_backward_kernel (dx).

Dtypes: x and dy are float32, float16 or bfloat16 (one dtype), y and dx take x's; the
per-channel vectors (weight, bias, running statistics) may be any of the three and are
usually fp32; statistics and sums are fp32, and so are the saved mean and invstd and the
returned dweight and dbias."""
import math

import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from . import reduce as _reduce
from ._autotune import FLOATS, autotune, cdiv, check, check_float
from .conv import is_channels_last

_CONFIGS = [triton.Config({"BLOCK_R": 64, "BLOCK_C": 64}, num_warps=4),
            triton.Config({"BLOCK_R": 32, "BLOCK_C": 128}, num_warps=4),
            triton.Config({"BLOCK_R": 128, "BLOCK_C": 32}, num_warps=4),
            triton.Config({"BLOCK_R": 128, "BLOCK_C": 16}, num_warps=4)]  # NCHW: runs of L along the rows
_INTERPRET_BLOCKS = {"BLOCK_R": 2048, "BLOCK_C": 16}
# Rows of one part: at least ROWS_MIN (a multiple of every config's BLOCK_R), at most
# MAX_PARTS parts. N=1024 at 4x4 gives 128 parts per block of channels, at 32x32 1024 parts
# of 1024 rows. The interpreter pays per program: one part for test-sized inputs.
ROWS_MIN = 4096 if INTERPRET else 128
MAX_PARTS = 1024
# batch_norm_finalize_kernel's tile: narrow, so that up to 2 x 1024 x C partials are read by
# several programs (C / 16), not one
FINAL_BLOCK_S, FINAL_BLOCK_C = 64, 16


@triton.jit
def _offsets(rows, cols, end, C, L: tl.constexpr):
    """Offsets and mask of the tile rows x cols of the [R, C] view (see the module's
    docstring), rows below end. int32: the launchers check the size."""
    offs = (rows // L * (C * L) + rows % L)[:, None] + cols[None, :] * L
    return offs, (rows < end)[:, None] & (cols < C)[None, :]


@triton.jit
def _normaliser(mean_ptr, stat_ptr, cols, C, eps, RUNNING: tl.constexpr):
    """Per channel, the mean and 1/std: stat holds the inverse std saved by the training
    forward, or with RUNNING the running variance (eps added here)."""
    mask = cols < C
    mean = tl.load(mean_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    stat = tl.load(stat_ptr + cols, mask=mask, other=1.0).to(tl.float32)
    if RUNNING:
        stat = 1.0 / tl.sqrt(stat + eps)
    return mean, stat


@autotune(_CONFIGS, key=["R", "C", "L", "COUNT"], interpret=_INTERPRET_BLOCKS, restore_value=["count_ptr"])
@triton.jit
def batch_norm_stats_kernel(x_ptr, mean_ptr, m2_ptr, count_ptr, R, C, chunk, L: tl.constexpr, COUNT: tl.constexpr,
                            BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """x as [R, C] -> mean [S, C] and m2 [S, C]: per part of chunk rows, the mean of x - x[0]
    and the sum of squared deviations from it; grid (S, C blocks). COUNT: program (0, 0) adds
    1 to the int64 count (num_batches_tracked); the finalize kernel, launched after, reads it."""
    part = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    first = part * chunk
    end = tl.minimum(first + chunk, R)
    # Shifted by row 0, the part means are of the size of the std, not of the mean: stored in
    # fp32 they would otherwise carry |mean| * 6e-8 of error into the parts' combination.
    shift = tl.load(x_ptr + cols * L, mask=cols < C, other=0.0).to(tl.float32)[None, :]
    # Welford's update in every lane, then the lanes combined: no cancellation of large sums
    # of squares.
    mean = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    m2 = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    n = tl.zeros((BLOCK_R, 1), dtype=tl.float32)
    for start in range(first, end, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        offs, mask = _offsets(rows, cols, end, C, L)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) - shift
        valid = (rows < end)[:, None]
        n += valid.to(tl.float32)
        delta = tl.where(valid, x - mean, 0.0)
        mean += delta * (1.0 / tl.maximum(n, 1.0))
        m2 += delta * (x - mean)
    total = tl.sum(n, axis=0)
    part_mean = tl.sum(n * mean, axis=0) / total
    d = mean - part_mean[None, :]
    part_m2 = tl.sum(m2 + n * d * d, axis=0)
    out = part * C + cols
    tl.store(mean_ptr + out, part_mean, mask=cols < C)
    tl.store(m2_ptr + out, part_m2, mask=cols < C)
    if COUNT:
        if (part == 0) & (tl.program_id(1) == 0):
            tl.store(count_ptr, tl.load(count_ptr) + 1)


@triton.jit
def batch_norm_finalize_kernel(x_ptr, pmean_ptr, pm2_ptr, mean_ptr, invstd_ptr, run_mean_ptr, run_var_ptr,
                               count_ptr, R, C, S, chunk, momentum, eps, L: tl.constexpr, TRACK: tl.constexpr,
                               CUMULATIVE: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_C: tl.constexpr):
    """The S parts [S, C] of batch_norm_stats_kernel for x -> mean [C] and invstd [C] =
    1/sqrt(biased var + eps); grid (C blocks). TRACK: running = (1 - f) * running + f * batch, with the
    unbiased variance, f = momentum, or with CUMULATIVE 1 / count (the cumulative average)."""
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < C
    acc = tl.zeros((BLOCK_S, BLOCK_C), dtype=tl.float32)
    for s0 in range(0, S, BLOCK_S):
        s = s0 + tl.arange(0, BLOCK_S)
        mask = (s < S)[:, None] & cmask[None, :]
        n = tl.minimum(chunk, R - s * chunk).to(tl.float32)[:, None]
        acc += n * tl.load(pmean_ptr + s[:, None] * C + cols[None, :], mask=mask, other=0.0)
    mean = tl.sum(acc, axis=0) / R  # of x - x[0]
    acc = tl.zeros((BLOCK_S, BLOCK_C), dtype=tl.float32)
    for s0 in range(0, S, BLOCK_S):  # Chan's rule: M2 = sum of M2_s + n_s * (mean_s - mean)^2
        s = s0 + tl.arange(0, BLOCK_S)
        mask = (s < S)[:, None] & cmask[None, :]
        n = tl.minimum(chunk, R - s * chunk).to(tl.float32)[:, None]
        at = s[:, None] * C + cols[None, :]
        d = tl.load(pmean_ptr + at, mask=mask, other=0.0) - mean[None, :]
        acc += tl.load(pm2_ptr + at, mask=mask, other=0.0) + tl.where(mask, n * d * d, 0.0)
    m2 = tl.sum(acc, axis=0)
    mean += tl.load(x_ptr + cols * L, mask=cmask, other=0.0).to(tl.float32)
    tl.store(mean_ptr + cols, mean, mask=cmask)
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


@autotune(_CONFIGS, key=["R", "C", "L", "RUNNING", "HAS_W", "HAS_B"], interpret=_INTERPRET_BLOCKS)
@triton.jit
def batch_norm_apply_kernel(x_ptr, mean_ptr, stat_ptr, w_ptr, b_ptr, y_ptr, R, C, eps, L: tl.constexpr,
                            RUNNING: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
                            BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """y = (x - mean) * invstd * w + b, x and y [R, C] (laid out alike), the rest [C]; see
    _normaliser for stat. Grid (row blocks, C blocks)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    offs, mask = _offsets(rows, cols, R, C, L)
    mean, scale = _normaliser(mean_ptr, stat_ptr, cols, C, eps, RUNNING)
    if HAS_W:
        scale *= tl.load(w_ptr + cols, mask=cols < C, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    # (x - mean) * scale rather than x * scale + shift: the latter cancels when |mean| >> std
    y = (x - mean[None, :]) * scale[None, :]
    if HAS_B:
        y += tl.load(b_ptr + cols, mask=cols < C, other=0.0).to(tl.float32)[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@autotune(_CONFIGS, key=["R", "C", "L", "RUNNING"], interpret=_INTERPRET_BLOCKS)
@triton.jit
def batch_norm_backward_reduce_kernel(dy_ptr, x_ptr, mean_ptr, stat_ptr, part_ptr, R, C, chunk, eps,
                                      L: tl.constexpr, RUNNING: tl.constexpr,
                                      BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """dy and x [R, C] -> part [S, 2, C]: per part of chunk rows, sum dy and sum dy * xhat,
    xhat = (x - mean) * invstd; grid (S, C blocks)."""
    part = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    first = part * chunk
    end = tl.minimum(first + chunk, R)
    mean, invstd = _normaliser(mean_ptr, stat_ptr, cols, C, eps, RUNNING)
    acc_g = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    acc_gx = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for start in range(first, end, BLOCK_R):
        offs, mask = _offsets(start + tl.arange(0, BLOCK_R), cols, end, C, L)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        acc_g += dy
        acc_gx += dy * (x - mean[None, :])
    out = part * 2 * C + cols
    tl.store(part_ptr + out, tl.sum(acc_g, axis=0), mask=cols < C)
    tl.store(part_ptr + out + C, tl.sum(acc_gx, axis=0) * invstd, mask=cols < C)


@autotune(_CONFIGS, key=["R", "C", "L", "RUNNING", "HAS_W"], interpret=_INTERPRET_BLOCKS)
@triton.jit
def batch_norm_backward_kernel(dy_ptr, x_ptr, mean_ptr, stat_ptr, w_ptr, sums_ptr, dx_ptr, R, C, eps,
                               L: tl.constexpr, RUNNING: tl.constexpr, HAS_W: tl.constexpr,
                               BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """dx [R, C] of y = xhat * w + b for dy [R, C]. Batch statistics: dx = w * invstd *
    (dy - (sum dy + xhat * sum dy*xhat) / R), with the sums [2, C] of the reduce kernel;
    RUNNING (eval: constant statistics): dx = w * invstd * dy. Grid (row blocks, C blocks)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < C
    offs, mask = _offsets(rows, cols, R, C, L)
    mean, invstd = _normaliser(mean_ptr, stat_ptr, cols, C, eps, RUNNING)
    scale = invstd
    if HAS_W:
        scale *= tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if RUNNING:
        dx = dy * scale[None, :]
    else:
        a = tl.load(sums_ptr + cols, mask=cmask, other=0.0) / R
        b = tl.load(sums_ptr + C + cols, mask=cmask, other=0.0) / R
        xhat = (tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) - mean[None, :]) * invstd[None, :]
        dx = scale[None, :] * (dy - a[None, :] - xhat * b[None, :])
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _view(name, x):
    """(R, C, L) of x, checked: the [R, C] view of the module's docstring."""
    check(x.dim() in (2, 3, 4), f"{name}: expected [N, C], [N, C, L] or [N, C, H, W] input, got {tuple(x.shape)}")
    check_float(name, x, "input")
    check(x.numel() < 2**31, f"{name}: {x.numel()} elements; kernels index with int32, split the batch")
    cl = is_channels_last(x)
    check(x.is_contiguous() or cl,
          f"{name}: expected a contiguous (or channels-last) tensor, got strides {x.stride()}")
    C = x.shape[1]
    L = 1 if cl else math.prod(x.shape[2:])
    return x.numel() // max(C, 1), C, L


def _check_vector(name, arg, v, C, device):
    check(v is None or (tuple(v.shape) == (C,) and v.is_contiguous() and v.dtype in FLOATS and v.device == device),
          lambda: f"{name}: {arg} must be a contiguous float vector of {C} on {device}, got "
                  f"{tuple(v.shape)} {v.dtype} on {v.device}")


def _parts(R):
    """(chunk, S): rows per part and the number of parts."""
    chunk = cdiv(max(ROWS_MIN, cdiv(R, MAX_PARTS)), ROWS_MIN) * ROWS_MIN
    return chunk, cdiv(R, chunk)


def _tiles(R, C):
    return lambda meta: (cdiv(R, meta["BLOCK_R"]), cdiv(C, meta["BLOCK_C"]))


def _apply(name, x, mean, stat, weight, bias, eps, running):
    R, C, L = _view(name, x)
    y = torch.empty_like(x)
    batch_norm_apply_kernel[_tiles(R, C)](x, mean, stat, x if weight is None else weight, x if bias is None else bias,
                                          y, R, C, float(eps), L=L, RUNNING=running, HAS_W=weight is not None,
                                          HAS_B=bias is not None)
    return y


def batch_norm_train(x, weight=None, bias=None, eps=1e-5, running_mean=None, running_var=None, momentum=0.1,
                     num_batches_tracked=None):
    """Batch normalisation with the batch's statistics: returns (y, mean, invstd), y in x's
    layout, mean and invstd [C] float32 (what batch_norm_backward needs). Given running_mean
    and running_var, updates them in place on the device, with momentum, or with
    momentum=None the cumulative average over num_batches_tracked; given
    num_batches_tracked (one int64 element), adds 1 to it on the device first. No host
    synchronisation: a CUDA graph replays all of it."""
    R, C, L = _view("batch_norm", x)
    check(R > 1, f"batch_norm: expected more than 1 value per channel when training, got input size {tuple(x.shape)}")
    for arg, v in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        _check_vector("batch_norm", arg, v, C, x.device)
    track = running_mean is not None
    check(track == (running_var is not None), "batch_norm: give both running_mean and running_var, or neither")
    count = num_batches_tracked
    check(count is None or (count.numel() == 1 and count.dtype == torch.int64 and count.device == x.device),
          lambda: f"batch_norm: num_batches_tracked must be one int64 element on {x.device}, got "
                  f"{tuple(count.shape)} {count.dtype} on {count.device}")
    check(momentum is not None or not track or count is not None,
          "batch_norm: momentum=None (the cumulative average) needs num_batches_tracked")
    chunk, S = _parts(R)
    part_mean = torch.empty((S, C), device=x.device, dtype=torch.float32)
    part_m2 = torch.empty((S, C), device=x.device, dtype=torch.float32)
    mean = torch.empty(C, device=x.device, dtype=torch.float32)
    invstd = torch.empty(C, device=x.device, dtype=torch.float32)
    grid = lambda meta: (S, cdiv(C, meta["BLOCK_C"]))
    batch_norm_stats_kernel[grid](x, part_mean, part_m2, mean if count is None else count, R, C, chunk, L=L,
                                  COUNT=count is not None)
    batch_norm_finalize_kernel[(cdiv(C, FINAL_BLOCK_C),)](
        x, part_mean, part_m2, mean, invstd, running_mean if track else mean, running_var if track else mean,
        mean if count is None else count, R, C, S, chunk, float(momentum or 0.0), float(eps), L=L, TRACK=track,
        CUMULATIVE=momentum is None, BLOCK_S=FINAL_BLOCK_S, BLOCK_C=FINAL_BLOCK_C)
    return _apply("batch_norm", x, mean, invstd, weight, bias, eps, running=False), mean, invstd


def batch_norm_eval(x, running_mean, running_var, weight=None, bias=None, eps=1e-5):
    """Batch normalisation with the running statistics, in one pass; y in x's layout."""
    _, C, _ = _view("batch_norm", x)
    for arg, v in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        _check_vector("batch_norm", arg, v, C, x.device)
    check(running_mean is not None and running_var is not None,
          "batch_norm: running_mean and running_var must be given in evaluation mode")
    return _apply("batch_norm", x, running_mean, running_var, weight, bias, eps, running=True)


def batch_norm_backward(dy, x, mean, stat, weight=None, eps=1e-5, running=False, need_x=True, need_params=True):
    """(dx, dweight, dbias) for dy (in x's layout) of y = batch_norm(x): of batch_norm_train
    with its (mean, invstd) as (mean, stat), or with running=True of batch_norm_eval with its
    running (mean, var) as (mean, stat). dx is None unless need_x, dweight and dbias None
    unless need_params (dweight is the gradient of a weight, also without one)."""
    R, C, L = _view("batch_norm backward", x)
    check(dy.shape == x.shape and dy.dtype == x.dtype and is_channels_last(dy) == is_channels_last(x)
          and (dy.is_contiguous() or is_channels_last(dy)),
          lambda: f"batch_norm backward: dy {tuple(dy.shape)} {dy.dtype} with strides {dy.stride()} is not laid "
                  f"out as x {tuple(x.shape)} {x.dtype} with strides {x.stride()}")
    for arg, v in (("mean", mean), ("stat", stat), ("weight", weight)):
        _check_vector("batch_norm backward", arg, v, C, x.device)
    sums = None
    if need_params or (need_x and not running):
        chunk, S = _parts(R)
        part = torch.empty((S, 2 * C), device=x.device, dtype=torch.float32)
        grid = lambda meta: (S, cdiv(C, meta["BLOCK_C"]))
        batch_norm_backward_reduce_kernel[grid](dy, x, mean, stat, part, R, C, chunk, float(eps), L=L, RUNNING=running)
        sums = part.view(2 * C) if S == 1 else _reduce.sum_except(part, 1)
    dx = None
    if need_x:
        dx = torch.empty_like(x)
        batch_norm_backward_kernel[_tiles(R, C)](dy, x, mean, stat, x if weight is None else weight,
                                                 mean if sums is None else sums, dx, R, C, float(eps), L=L,
                                                 RUNNING=running, HAS_W=weight is not None)
    if not need_params:
        return dx, None, None
    return dx, sums[C:], sums[:C]
