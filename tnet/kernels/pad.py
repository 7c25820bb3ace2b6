"""Padding of the last dims, as torch.nn.functional.pad: constant (any sign: a negative pad
crops), reflect, replicate and circular; and its adjoint for the backward, one padded axis at a
time. Both gather: each program computes BLOCK output elements from where they read, so that
the backward sums a reflected or replicated element's contributions in a fixed order (no atomics).

The output is dense, channels-last where the input is (launch.is_channels_last), else
contiguous; the input may have any strides. Indices are int32: the launchers check sizes."""
import torch
import triton
import triton.language as tl

from .autotune import autotune, fit
from .launch import (BLOCK_CONFIGS, FLOATS, check, check_batch_only_empty, check_type, grid1d, is_channels_last,
                     memory_format)

MODES = ("constant", "reflect", "replicate", "circular")
DTYPES = (*FLOATS, torch.int64, torch.int32, torch.uint8)  # uint8: also a bool tensor's bytes


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 14)})
@triton.jit
def pad_kernel(x_ptr, y_ptr, n, value, sizes, x_strides, befores, lengths, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """y (n elements, dense with axes `sizes`, innermost first) = x padded: along axis d, y's index o
    reads x's index i = o - befores[d] of lengths[d], reflected, clamped or wrapped into range, or
    (constant) `value` where out of range. x is read through its strides on those axes."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    rest = offs.to(tl.int32)
    off = tl.zeros([BLOCK], tl.int32)
    inside = mask
    for d in tl.static_range(len(sizes)):
        if d < len(sizes) - 1:
            pos = rest % sizes[d]
            rest = rest // sizes[d]
        else:
            pos = rest
        i = pos - befores[d]
        if MODE == "reflect":  # pads < length: one reflection reaches every index
            i = tl.abs(i)
            i = tl.where(i >= lengths[d], 2 * (lengths[d] - 1) - i, i)
        elif MODE == "replicate":
            i = tl.minimum(tl.maximum(i, 0), lengths[d] - 1)
        elif MODE == "circular":  # pads <= length: one wrap
            i = tl.where(i < 0, i + lengths[d], tl.where(i >= lengths[d], i - lengths[d], i))
        else:
            inside = inside & (i >= 0) & (i < lengths[d])
        off += i * x_strides[d]
    x = tl.load(x_ptr + off, mask=inside, other=value)
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty), mask=mask)


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 14)})
@triton.jit
def pad_fold_kernel(g_ptr, gx_ptr, n, sizes, g_strides, before, length, after,
                    AXIS: tl.constexpr, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """The adjoint of padding along axis AXIS (pads >= 0): gx (n elements, dense with axes `sizes`,
    innermost first; `length` along AXIS) at index i sums g (read through its strides, `out_len`
    along AXIS, before + length + after) over the indices o that padding maps to i: o = before + i,
    and the reflected, wrapped or (replicate, at the edges) repeated ones; summed in fp32."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    rest = offs.to(tl.int32)
    off = tl.zeros([BLOCK], tl.int32)
    i = off
    for d in tl.static_range(len(sizes)):
        if d < len(sizes) - 1:
            pos = rest % sizes[d]
            rest = rest // sizes[d]
        else:
            pos = rest
        if d == AXIS:
            i = pos
        else:
            off += pos * g_strides[d]
    step = g_strides[AXIS]
    out_len = before + length + after
    acc = tl.load(g_ptr + off + (before + i) * step, mask=mask).to(tl.float32)
    if MODE == "reflect":
        left = before - i
        acc += tl.load(g_ptr + off + left * step, mask=mask & (i >= 1) & (left >= 0), other=0.0).to(tl.float32)
        right = before + 2 * (length - 1) - i
        acc += tl.load(g_ptr + off + right * step, mask=mask & (i <= length - 2) & (right < out_len),
                       other=0.0).to(tl.float32)
    elif MODE == "circular":
        left = before + i - length
        acc += tl.load(g_ptr + off + left * step, mask=mask & (left >= 0), other=0.0).to(tl.float32)
        right = before + i + length
        acc += tl.load(g_ptr + off + right * step, mask=mask & (right < out_len), other=0.0).to(tl.float32)
    elif MODE == "replicate":  # the first index takes o in [0, before), the last o in [before + length, out_len)
        first = mask & (i == 0)
        for k in range(0, before):
            acc += tl.load(g_ptr + off + k * step, mask=first, other=0.0).to(tl.float32)
        last = mask & (i == length - 1)
        for k in range(before + length, out_len):
            acc += tl.load(g_ptr + off + k * step, mask=last, other=0.0).to(tl.float32)
    tl.store(gx_ptr + offs, acc.to(gx_ptr.dtype.element_ty), mask=mask)


def _memory_axes(y):
    """y's axes from the innermost in memory to the outermost."""
    return sorted(range(y.dim()), key=lambda d: (y.stride(d), -d))


def _check_offsets(name, *xs):
    for x in xs:
        check(x.numel() < 2**31 and sum((s - 1) * abs(st) for s, st in zip(x.shape, x.stride())) < 2**31,
              lambda: f"{name}: offsets past 2^31; split the batch")


def pads_of(name, shape, pad, mode):
    """[(before, after)] of each dim of a tensor of `shape` from torch's flat pad (last dim first),
    checked as torch does."""
    check(mode in MODES, lambda: f"{name}: mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    check_type(isinstance(pad, (tuple, list)) and all(isinstance(p, int) and not isinstance(p, bool) for p in pad),
          lambda: f"{name}: pad must be a tuple of ints, got {pad!r}")
    check(len(pad) % 2 == 0, lambda: f"{name}: Padding length must be divisible by 2, got {len(pad)}")
    k = len(pad) // 2
    ndim = len(shape)
    check(k <= ndim, lambda: f"{name}: Padding length should be less than or equal to two times the input dimension "
                             f"but got padding length {len(pad)} and input of dimension {ndim}")
    pads = [(0, 0)] * (ndim - k) + [(pad[2 * j], pad[2 * j + 1]) for j in reversed(range(k))]
    if mode != "constant":
        check(1 <= k <= 3 and ndim in (k + 1, k + 2),
              lambda: f"{name}: padding size {len(pad)} is not supported for {ndim}D input in mode {mode!r} (as torch: "
                      f"2 for 2D or 3D input, 4 for 3D or 4D, 6 for 4D or 5D)")
        if mode != "circular":  # torch's reflection and replication kernels
            check_batch_only_empty(shape, k)
        for d, (b, a) in enumerate(pads):
            L = shape[d]
            if b == a == 0:  # an unpadded dim (a batch of 0 too) is not checked, as torch's
                continue
            check(b >= 0 and a >= 0, lambda: f"{name}: negative padding is supported in constant mode only, got {pad}")
            check(mode != "reflect" or (b < L and a < L),
                  lambda: f"{name}: Padding size should be less than the corresponding input dimension, but got: padding "
                          f"({b}, {a}) at dimension {d} of input {list(shape)}")
            check(mode != "circular" or (b <= L and a <= L),
                  lambda: f"{name}: Padding value causes wrapping around more than once.")
    for d, (b, a) in enumerate(pads):
        # torch's constant_pad_nd crops by each negative pad in turn (before, then after) before it pads: a crop
        # past what is left is its narrow()'s error, whatever the other side adds ((-3, 5) of 2 elements)
        check(shape[d] + min(b, 0) >= 0 and shape[d] + min(b, 0) + min(a, 0) >= 0, "narrow(): length must be non-negative.")
    return pads


def pad(x, pad, mode="constant", value=0.0):
    """x padded (and, with negative constant pads, cropped) as torch.nn.functional.pad: pad =
    (before, after) of the last dim, then of the one before, ...; a new dense tensor in x's layout."""
    pads = pads_of("pad", x.shape, pad, mode)
    check(x.dtype in DTYPES, lambda: f"pad: dtype {x.dtype} is not supported")
    shape = [s + b + a for s, (b, a) in zip(x.shape, pads)]
    y = torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=memory_format(is_channels_last(x)))
    if y.numel() == 0:
        return y
    _check_offsets("pad", x, y)
    axes = _memory_axes(y)
    pad_kernel[grid1d(y.numel())](
        x, y, y.numel(), float(value), tuple(y.shape[d] for d in axes), tuple(x.stride(d) for d in axes),
        tuple(pads[d][0] for d in axes), tuple(x.shape[d] for d in axes), MODE=mode)
    return y


def pad_backward(g, shape, padding, mode):
    """The gradient of pad for an input of `shape`, from g, the output's: for constant mode g
    cropped back (the opposite pads), else folded along each padded axis in turn (sums in fp32)."""
    if mode == "constant":
        return pad(g, [-p for p in padding], "constant", 0.0)
    check(g.dtype in FLOATS, lambda: f"pad backward: g must be float32, float16 or bfloat16, got {g.dtype}")
    pads = pads_of("pad backward", shape, padding, mode)
    for d in range(len(shape)):
        before, after = pads[d]
        if before == after == 0:
            continue
        axes = _memory_axes(g)
        out = [*g.shape]
        out[d] = shape[d]
        back = sorted(range(g.dim()), key=axes[::-1].__getitem__)
        gx = torch.empty([out[a] for a in axes[::-1]], dtype=g.dtype, device=g.device).permute(back)
        if gx.numel():
            _check_offsets("pad backward", g)
            pad_fold_kernel[grid1d(gx.numel())](
                g, gx, gx.numel(), tuple(gx.shape[a] for a in axes), tuple(g.stride(a) for a in axes), before,
                shape[d], after, AXIS=axes.index(d), MODE=mode)
        g = gx
    return g
