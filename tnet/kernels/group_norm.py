"""Layer, group and RMS normalisation, forward and backward, over x viewed as [N, C, S] with strides (sN, sC, sS): G
groups of CPG = C / G channels each, a group's L = CPG * S values (channel c = g * CPG + k, position s) normalised
together. Group norm views [N, C, *spatial] so (NCHW or channels-last alike); layer norm views [rows, columns, 1],
one group, the columns its channels, so that its weight and bias are per channel in both. RMS norm is layer norm's
view with CENTER=False: no mean taken (stored as 0), std = sqrt(mean(x^2) + eps).

- group_norm_forward_kernel, one program per (n, g): the mean (the first value plus the mean of the differences
  from it, each over L: exact on a constant group, as torch's Welford mean, and no sum to overflow), the biased
  variance of x - mean (two passes: no cancellation), then y = (x - mean) / std * w[c] + b[c]; mean and
  std = sqrt(var + eps) saved in fp32.
- group_norm_backward_kernel, one program per (n, g): torch's native formula, with h = dy * w[c] and xhat = (x -
  mean) / std, dx = (h - mean(h) - xhat * mean(h * xhat)) / std.
- group_norm_affine_grads_kernel: dweight = sum(dy * xhat) and dbias = sum(dy) over n and s, per channel, in parts
  of the (n, s) pairs (a program per part and block of channels), the parts added up after in a fixed order.

x and dy are float32, float16 or bfloat16 (computed in fp32); y and dx take x's dtype, weight and bias any float
dtype. A row's passes re-read it: the second and third reads mostly hit the cache."""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import jit
from .copy import copy_
from .launch import cdiv, check, check_float, dense, next_power_of_2
from .reduce import sum_except

# A group's values per loop step: the interpreter pays per step, the GPU keeps a step in registers
ROW_BLOCK = 1 << 14 if INTERPRET else 2048
# The weight gradients' tiles: (n, s) pairs by channels, and pairs per part
PAIRS, CHANNELS = (1024, 64) if INTERPRET else (64, 64)
PART = 1 << 14 if INTERPRET else 512


@triton.jit
def _offsets(j, S, sC, sS, FLAT: tl.constexpr):
    """The memory offsets of a group's values j (channel j // S of the group, position j % S) from its first."""
    if FLAT:  # the group's values evenly spaced (sC == S * sS): a layer norm's row, an NCHW group
        return j.to(tl.int64) * sS
    k = j // S
    return k.to(tl.int64) * sC + (j - k * S).to(tl.int64) * sS


@triton.jit
def _group(G, CPG, sN, sC):
    """(n, g, the group's first offset, its first channel) of this program's group."""
    row = tl.program_id(0)
    n = row // G
    g = row - n * G
    return n, g, n.to(tl.int64) * sN + (g * CPG).to(tl.int64) * sC, g * CPG


@jit
def group_norm_forward_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, std_ptr, G, CPG, S, L, sN, sC, sS, eps,
                              HAS_W: tl.constexpr, HAS_B: tl.constexpr, FLAT: tl.constexpr, CENTER: tl.constexpr,
                              BLOCK: tl.constexpr):
    """y = (x - mean) / std * w + b over one group a program; mean [N * G] and std [N * G] stored (fp32).
    y has x's strides. CENTER=False: the mean taken as 0, std = sqrt(mean(x^2) + eps) (rms_norm)."""
    _, _, base, c0 = _group(G, CPG, sN, sC)
    inv_l = 1.0 / L
    mean = 0.0
    if CENTER:
        first = tl.load(x_ptr + base).to(tl.float32)
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, L, BLOCK):
            j = start + tl.arange(0, BLOCK)
            d = tl.load(x_ptr + base + _offsets(j, S, sC, sS, FLAT), mask=j < L, other=0.0).to(tl.float32) - first
            acc += tl.where(j < L, d * inv_l, 0.0)
        mean = first + tl.sum(acc, axis=0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, L, BLOCK):
        j = start + tl.arange(0, BLOCK)
        d = tl.load(x_ptr + base + _offsets(j, S, sC, sS, FLAT), mask=j < L, other=0.0).to(tl.float32) - mean
        acc += tl.where(j < L, d * d, 0.0)
    std = tl.sqrt(tl.sum(acc, axis=0) * inv_l + eps)
    tl.store(mean_ptr + tl.program_id(0), mean)
    tl.store(std_ptr + tl.program_id(0), std)
    for start in range(0, L, BLOCK):
        j = start + tl.arange(0, BLOCK)
        offs = base + _offsets(j, S, sC, sS, FLAT)
        y = (tl.load(x_ptr + offs, mask=j < L, other=0.0).to(tl.float32) - mean) / std
        c = c0 + j // S
        if HAS_W:
            y = y * tl.load(w_ptr + c, mask=j < L, other=0.0).to(tl.float32)
        if HAS_B:
            y = y + tl.load(b_ptr + c, mask=j < L, other=0.0).to(tl.float32)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=j < L)


@triton.jit
def _step(x_ptr, dy_ptr, w_ptr, start, base, c0, mean, std, S, L, sC, sS, HAS_W: tl.constexpr, FLAT: tl.constexpr,
          BLOCK: tl.constexpr):
    """The backward's loop step at a group's value `start`: (j, offsets, x, xhat, h = dy * w) of its BLOCK values."""
    j = start + tl.arange(0, BLOCK)
    offs = base + _offsets(j, S, sC, sS, FLAT)
    x = tl.load(x_ptr + offs, mask=j < L, other=0.0).to(tl.float32)
    h = tl.load(dy_ptr + offs, mask=j < L, other=0.0).to(tl.float32)
    if HAS_W:
        h = h * tl.load(w_ptr + c0 + j // S, mask=j < L, other=0.0).to(tl.float32)
    return j, offs, x, (x - mean) / std, h


@jit
def group_norm_backward_kernel(x_ptr, dy_ptr, w_ptr, mean_ptr, std_ptr, dx_ptr, G, CPG, S, L, sN, sC, sS,
                               HAS_W: tl.constexpr, FLAT: tl.constexpr, CENTER: tl.constexpr, BLOCK: tl.constexpr):
    """dx = (h - mean(h) - xhat * mean(h * xhat)) / std over one group a program, h = dy * w (dy, dx: x's strides).
    CENTER=False (rms_norm's): no mean(h) term (the mean taken as 0 is no function of x), and NaN where torch's
    composition x * rsqrt(mean(x ** 2) + eps) gives NaN: where the squares overflow (std inf), its gradient adds
    sum(h x) * 0 * 2 x, NaN where sum(h x) or 2 x is not finite."""
    _, _, base, c0 = _group(G, CPG, sN, sC)
    mean = tl.load(mean_ptr + tl.program_id(0))
    std = tl.load(std_ptr + tl.program_id(0))
    sum_h = tl.zeros((BLOCK,), tl.float32)  # CENTER=False: sum(h x)
    sum_hx = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, L, BLOCK):
        j, offs, x, xhat, h = _step(x_ptr, dy_ptr, w_ptr, start, base, c0, mean, std, S, L, sC, sS, HAS_W, FLAT, BLOCK)
        if CENTER:
            sum_h += h
        else:
            sum_h += h * x
        sum_hx += h * xhat
    total_h = tl.sum(sum_h, axis=0)
    mean_hx = tl.sum(sum_hx, axis=0) / L
    for start in range(0, L, BLOCK):
        j, offs, x, xhat, h = _step(x_ptr, dy_ptr, w_ptr, start, base, c0, mean, std, S, L, sC, sS, HAS_W, FLAT, BLOCK)
        if CENTER:
            dx = (h - total_h / L - xhat * mean_hx) / std
        else:
            dx = (h - xhat * mean_hx) / std + tl.where(std == float("inf"), total_h * 0.0 * (2.0 * x), 0.0)
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=j < L)


@jit
def group_norm_affine_grads_kernel(x_ptr, dy_ptr, mean_ptr, std_ptr, dw_ptr, db_ptr, C, G, CPG, S, T, sN, sC, sS,
                                   PART_T: tl.constexpr, PAIRS: tl.constexpr, CHANNELS: tl.constexpr):
    """Per channel c, over the part's (n, s) pairs t in [part * PART_T, ...) of the T = N * S: dw[part, c] = sum
    dy * xhat and db[part, c] = sum dy (fp32 [parts, C])."""
    part = tl.program_id(0)
    c = tl.program_id(1) * CHANNELS + tl.arange(0, CHANNELS)
    in_c = c < C
    group = c // CPG
    acc_w = tl.zeros((PAIRS, CHANNELS), tl.float32)
    acc_b = tl.zeros((PAIRS, CHANNELS), tl.float32)
    for start in range(part * PART_T, tl.minimum(part * PART_T + PART_T, T), PAIRS):
        t = start + tl.arange(0, PAIRS)
        n = t // S
        mask = ((t < T) & (t < part * PART_T + PART_T))[:, None] & in_c[None, :]
        offs = (n.to(tl.int64) * sN + (t - n * S).to(tl.int64) * sS)[:, None] + c.to(tl.int64)[None, :] * sC
        stat = n[:, None] * G + group[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        xhat = (x - tl.load(mean_ptr + stat, mask=mask, other=0.0)) / tl.load(std_ptr + stat, mask=mask, other=1.0)
        acc_w += dy * xhat
        acc_b += dy
    tl.store(dw_ptr + part * C + c, tl.sum(acc_w, axis=0), mask=in_c)
    tl.store(db_ptr + part * C + c, tl.sum(acc_b, axis=0), mask=in_c)


def _sizes(name, x, sizes, groups, *vectors):
    """x [N, C, S] (the tensor x viewed as sizes)'s (view, channels per group, values per group, strides, FLAT, the
    loop's block and warps), after the checks; a single position's stride is the channel's."""
    check_float(name, x)
    N, C, S = sizes
    check(groups > 0 and C % groups == 0 and x.numel() == N * C * S > 0,
          lambda: f"{name}: expected a non-empty tensor of C divisible by {groups} groups, got {tuple(sizes)}")
    for v in vectors:
        check(v is None or (v.shape == (C,) and v.is_contiguous() and v.device == x.device),
              lambda: f"{name}: weight and bias must be contiguous ({C},) tensors on {x.device}")
    view = x.view(sizes)
    sN, sC, sS = view.stride()
    if S == 1:
        sS = sC
    L = C // groups * S
    block = min(next_power_of_2(L), ROW_BLOCK)
    return view, C // groups, L, (sN, sC, sS), sC == S * sS, block, 4 if block <= 1024 else 8


def viewable(x, sizes):
    """x, or a copy where x is not flat (launch.dense) or cannot be viewed as sizes (the kernels' [N, C, S]):
    the output's empty_like must take x's strides."""
    x = dense(x)
    try:
        x.view(sizes)
        return x
    except RuntimeError:
        return x.contiguous()


def group_norm(x, sizes, groups, weight, bias, eps, center=True):
    """(y, mean, std): x (dense, viewed as sizes [N, C, S]: viewable) normalised over each sample's groups of
    C / groups channels, times weight [C] and plus bias [C] (either may be None); y of x's shape, dtype and
    strides, mean and std fp32 [N * groups]. center=False: rms_norm's, the mean taken as 0 (stored as 0)."""
    x3, CPG, L, strides, flat, block, warps = _sizes("group_norm", x, sizes, groups, weight, bias)
    y = torch.empty_like(x)
    mean = torch.empty(sizes[0] * groups, device=x.device, dtype=torch.float32)
    std = torch.empty_like(mean)
    group_norm_forward_kernel[(sizes[0] * groups,)](x3, x if weight is None else weight, x if bias is None else bias,
                                                    y.view(sizes), mean, std, groups, CPG, sizes[2], L, *strides,
                                                    float(eps), HAS_W=weight is not None, HAS_B=bias is not None,
                                                    FLAT=flat, CENTER=center, BLOCK=block, num_warps=warps)
    return y, mean, std


def group_norm_backward(x, sizes, dy, groups, weight, mean, std, need_x=True, w_dtype=None, b_dtype=None,
                        center=True):
    """(dx, dweight, dbias) of group_norm(center=center) for its output's gradient dy (x's shape): dx of x's shape,
    dtype and strides (None unless need_x), dweight in w_dtype and dbias in b_dtype (None where None)."""
    x3, CPG, L, strides, flat, block, warps = _sizes("group_norm backward", x, sizes, groups, weight)
    check(dy.shape == x.shape, lambda: f"group_norm backward: gradient is {tuple(dy.shape)}, expected {tuple(x.shape)}")
    if dy.stride() != x.stride():  # the kernels read dy at x's offsets
        dy = copy_(torch.empty_like(x), dy)
    dy3 = dy.view(sizes)
    N, C, S = sizes
    dx = dw = db = None
    if need_x:
        dx = torch.empty_like(x)
        group_norm_backward_kernel[(N * groups,)](x3, dy3, x if weight is None else weight, mean, std, dx.view(sizes),
                                                  groups, CPG, S, L, *strides, HAS_W=weight is not None, FLAT=flat,
                                                  CENTER=center, BLOCK=block, num_warps=warps)
    if w_dtype or b_dtype:
        T = N * S
        parts = cdiv(T, PART)
        sums = torch.empty((2, parts, C), device=x.device, dtype=torch.float32)
        group_norm_affine_grads_kernel[(parts, cdiv(C, CHANNELS))](x3, dy3, mean, std, sums[0], sums[1], C, groups,
                                                                   CPG, S, T, *strides, PART_T=PART, PAIRS=PAIRS,
                                                                   CHANNELS=CHANNELS)
        dw, db = (dtype and sum_except(part_sums, 1, out=torch.empty(C, device=x.device, dtype=dtype))
                  for part_sums, dtype in zip(sums, (w_dtype, b_dtype)))
    return dx, dw, db
