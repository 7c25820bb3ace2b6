"""Strided copies between tensors of one shape, casting on the way: casts (`Tensor.to(dtype)`),
the shape ops that copy (cat, stack, clone, flip, repeat, a view that cannot be one), and the
backward of slicing (the gradient written through the same view of a zeroed buffer). With an
index vector along one axis the same kernel gathers (index_select) or scatter-adds (its
backward, index_add); with atomic adds into an overlapping view it sums unfold's windows back.
Any number of dims, any strides on either side (negative ones flip); dims are ordered by the
destination's strides and merged where both sides allow, so most copies run as 1-D or 2-D ones."""
import math

import numpy as np
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune, fit
from .launch import BLOCK_CONFIGS, InputIndexError, cdiv, check, check_flag, grid1d, raise_flagged

# int8: max pooling's argmax (kernels/pool.py), which max_pool1d's return_indices widens to int64;
# uint8, int16: Tensor.byte() and short()
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int8, torch.bool, torch.uint8,
          torch.int16)
INDEX_DTYPES = (torch.int64, torch.int32)


def _round_bf16_casts():
    """The interpreter's casts to and from bf16 as the GPU's: fp32 -> bf16 rounded to nearest even (the
    interpreter truncates), bf16 subnormals widened exactly (it zeroes or scales them), ints, bools and fp16
    to bf16 by value (it reinterprets their bits). bf16 is stored as uint16 there: the casts are on the bits."""
    from triton.runtime import interpreter
    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is None or not all(hasattr(m, a) for m, a in ((builder, "cast_impl"), (interpreter, "TensorHandle"),
                                                              (interpreter, "_get_np_dtype"))):
        return  # another layout: Triton's own casts
    own = builder.cast_impl

    def cast_impl(self, src, dst_type):
        src_type, dst = src.dtype.scalar, dst_type.scalar
        if (src_type == tl.bfloat16) == (dst == tl.bfloat16):
            return own(self, src, dst_type)
        if src_type == tl.bfloat16:
            wide = (np.asarray(src.data).astype(np.uint32) << 16).view(np.float32)
            return interpreter.TensorHandle(wide.astype(interpreter._get_np_dtype(dst)), dst)
        x = np.asarray(src.data).astype(np.float32)
        bits = x.view(np.uint32)
        bits = np.where(x == x, bits + 0x7FFF + ((bits >> 16) & 1), bits | 0x400000)  # NaN kept quiet
        return interpreter.TensorHandle((bits >> 16).astype(np.uint16), dst)
    builder.cast_impl = cast_impl


if INTERPRET:
    _round_bf16_casts()


ATOMIC, ACCUMULATE = 1, 2  # copy_kernel's ADD (0: a plain copy)


# restore_value: the tuner runs a config many times, and an adding copy must add once.
@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 16)}, restore_value=["dst_ptr"])
@triton.jit
def copy_kernel(dst_ptr, src_ptr, index_ptr, flag_ptr, n, limit, sizes, dst_strides, src_strides, index_stride,
                GATHER: tl.constexpr, AXIS: tl.constexpr, ADD: tl.constexpr, WRAP: tl.constexpr,
                BLOCK: tl.constexpr):
    """dst[i] = src[i] cast to dst's dtype (ADD 1, ATOMIC: dst[i] += src[i] by fp32 atomic adds; 2, ACCUMULATE:
    dst[i] += src[i] read, added in fp32 and written, where no two i share an element of dst) over the n
    elements of dims `sizes` (innermost first), each side through its strides (in elements).
    Along axis AXIS (if any) the coordinate k of one side (GATHER: src's, else dst's) is
    index[k] (WRAP: plus limit where negative); an index outside [0, limit) is skipped and
    recorded in flag [1, index]."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    rest = offs
    dst_off = tl.zeros([BLOCK], tl.int64)
    src_off = dst_off
    for d in tl.static_range(len(sizes)):
        pos = rest % sizes[d]  # on the last dim too: a lane past n wraps, but it is masked
        rest = rest // sizes[d]
        if d == AXIS:
            given = tl.load(index_ptr + pos * index_stride, mask=ok, other=0).to(tl.int64)
            k = given
            if WRAP:
                k = tl.where(given < 0, given + limit, given)
            bad = ok & ((k < 0) | (k >= limit))
            tl.store(flag_ptr + tl.zeros_like(k), 1, mask=bad)  # any one bad index will do
            tl.store(flag_ptr + 1 + tl.zeros_like(k), given, mask=bad)
            ok = ok & ~bad
            if GATHER:
                src_off += k * src_strides[d]
                dst_off += pos * dst_strides[d]
            else:
                src_off += pos * src_strides[d]
                dst_off += k * dst_strides[d]
        else:
            dst_off += pos * dst_strides[d]
            src_off += pos * src_strides[d]
    # a direct cast, not through fp32: int64 -> int64 and float -> int stay exact
    x = tl.load(src_ptr + src_off, mask=ok)
    if ADD == 1:
        tl.atomic_add(dst_ptr + dst_off, x.to(tl.float32), mask=ok, sem="relaxed")
    elif ADD == 2:
        y = tl.load(dst_ptr + dst_off, mask=ok).to(tl.float32) + x.to(tl.float32)
        tl.store(dst_ptr + dst_off, y.to(dst_ptr.dtype.element_ty), mask=ok)
    else:
        tl.store(dst_ptr + dst_off, x.to(dst_ptr.dtype.element_ty), mask=ok)


def overlaps(x):
    """Whether two elements of x share memory (an expanded view): then writes would race."""
    if x.numel() == 0:
        return False
    span = 0  # the farthest element reachable through the smaller strides
    for stride, size in sorted((abs(st), s) for s, st in zip(x.shape, x.stride()) if s > 1):
        if stride <= span:
            return True
        span += stride * (size - 1)
    return False


def merge_dims(shape, dst_strides, src_strides, keep=-1):
    """(sizes, dst strides, src strides, position of axis `keep` or -1) of the same copy in as
    few dims as possible, outermost first: size-1 dims dropped (but `keep`), the rest ordered by
    the destination's strides (its fastest dim last, so that writes are coalesced), neighbours
    merged where both sides step through them as one (never `keep`)."""
    dims = sorted(((size, d, s, i) for i, (size, d, s) in enumerate(zip(shape, dst_strides, src_strides))
                   if size != 1 or i == keep), key=lambda dim: abs(dim[1]), reverse=True)
    merged, at = [], -1
    for size, d, s, i in dims:
        if merged and at != len(merged) - 1 and i != keep and merged[-1][1] == d * size and merged[-1][2] == s * size:
            merged[-1] = (merged[-1][0] * size, d, s)
        else:
            at = len(merged) if i == keep else at
            merged.append((size, d, s))
    return [m[0] for m in merged], [m[1] for m in merged], [m[2] for m in merged], at


_index_flags = {}  # (device, reported) -> int64 [2]: (an index was out of range, that index)


def _launch(dst, src, shape, dst_strides, src_strides, index=None, gather=False, axis=-1, limit=0, add=0,
            report=None, wrap=False):
    """copy_kernel over `shape`, dst and src pointing at their first elements; with an index and
    `report` (the op's name, or a function of the bad index giving the message), raise
    InputIndexError for an index outside [0, limit) (wrap: [-limit, limit)): on the CPU at once, on a
    GPU at a later reporting launch or host read (launch.check_flag), not within a CUDA graph capture."""
    n = math.prod(shape)
    if n == 0:
        return
    sizes, dsts, srcs, at = merge_dims(shape, dst_strides, src_strides, axis)
    sizes, dsts, srcs = (v[::-1] or [z] for v, z in ((sizes, 1), (dsts, 0), (srcs, 0)))  # innermost first
    key = (dst.device, bool(report))  # an unreported launch flags into a buffer of its own, never read
    if index is not None and key not in _index_flags:
        _index_flags[key] = torch.zeros(2, dtype=torch.int64, device=dst.device)
    flag = _index_flags[key] if index is not None else dst
    if report:
        raise_flagged(dst.device)
    copy_kernel[grid1d(n)](dst, src, dst if index is None else index, flag, n, limit, tuple(sizes), tuple(dsts),
                           tuple(srcs), 0 if index is None else index.stride(0),
                           GATHER=gather, AXIS=-1 if at < 0 else len(sizes) - 1 - at, ADD=add, WRAP=wrap)
    if report:
        check_flag(flag, lambda k: InputIndexError(
            report(k) if callable(report) else f"{report}: index {k} is out of range for dimension {axis} of size {limit}"))


def _check_pair(name, dst, src):
    check(dst.device == src.device, lambda: f"{name}: dst on {dst.device}, src on {src.device}")
    check(dst.dtype in DTYPES and src.dtype in DTYPES,
          lambda: f"{name}: supports {', '.join(map(str, DTYPES))}; got dst {dst.dtype}, src {src.dtype}")


def _check_write(name, dst, src):
    """The checks of a copy of src into dst, element for element: one shape, the dtypes and device _check_pair
    takes, and a dst that does not overlap itself (its elements' writes would race)."""
    check(dst.shape == src.shape, lambda: f"{name}: shapes differ, dst {tuple(dst.shape)} and src {tuple(src.shape)}")
    _check_pair(name, dst, src)
    check(not overlaps(dst), lambda: f"{name}: dst overlaps itself (strides {dst.stride()}), elements would race")


def copy_(dst, src):
    """dst[...] = src cast to dst's dtype, for tensors of one shape with any strides (dst may not
    overlap itself); returns dst."""
    _check_write("copy_", dst, src)
    _launch(dst, src, dst.shape, dst.stride(), src.stride())
    return dst


def add_into(dst, src):
    """dst += src (the sum in fp32, cast to dst's dtype) for tensors of one shape with any strides (dst may not
    overlap itself); returns dst."""
    _check_write("add_into", dst, src)
    check(dst.is_floating_point(), lambda: f"add_into: dst must be float, got {dst.dtype}")
    _launch(dst, src, dst.shape, dst.stride(), src.stride(), add=ACCUMULATE)
    return dst


def check_count(count, error):
    """check_flag for a count of bad elements (an integer tensor of one element, on the device that counted
    them): error() where it is not 0, raised as check_flag raises, so without a synchronisation on a GPU. Call
    launch.raise_flagged(device) before the counting launch, as every flagging call does."""
    flag = torch.zeros(2, dtype=torch.int64, device=count.device)  # (bad elements, unused)
    copy_(flag[:1], count.reshape(1))
    check_flag(flag, lambda _: error())


def flip_(dst, src, dims):
    """dst[...] = src reversed along `dims` (axes >= 0), cast to dst's dtype; returns dst."""
    _check_write("flip_", dst, src)
    if src.numel() == 0:
        return dst
    first = src  # src's last element along the flipped axes, read from there with negated strides
    for d in dims:
        first = first.narrow(d, src.shape[d] - 1, 1)
    strides = [-st if d in dims else st for d, st in enumerate(src.stride())]
    _launch(dst, first, dst.shape, dst.stride(), strides)
    return dst


def _check_index(name, dst, src, index, dim):
    _check_pair(name, dst, src)
    check(index.dim() == 1 and index.dtype in INDEX_DTYPES and index.device == dst.device,
          lambda: f"{name}: index must be a vector of int64 or int32 on {dst.device}, got {tuple(index.shape)} "
                  f"{index.dtype} on {index.device}")
    check(0 <= dim < max(dst.dim(), 1) and dst.dim() == src.dim(),
          lambda: f"{name}: dim {dim} of dst {tuple(dst.shape)} and src {tuple(src.shape)}")


def gather_(dst, src, index, dim, name="gather_", wrap=False):
    """dst = src.index_select(dim, index): dst's slice k along dim is src's slice index[k], cast to
    dst's dtype (wrap: a negative index counts from the end, as x[idx]). An index out of range
    raises InputIndexError naming op `name` (or with the message name(index) where a function;
    on a GPU at a later reporting launch or host read, see _launch; name None: skipped, not
    reported). Returns dst."""
    _check_index("gather_", dst, src, index, dim)
    check(all(a == b for d, (a, b) in enumerate(zip(dst.shape, src.shape)) if d != dim) and
          dst.shape[dim] == index.shape[0],
          lambda: f"gather_: dst {tuple(dst.shape)} must be src {tuple(src.shape)} with {index.shape[0]} at dim {dim}")
    check(not overlaps(dst), lambda: f"gather_: dst overlaps itself (strides {dst.stride()}), elements would race")
    _launch(dst, src, dst.shape, dst.stride(), src.stride(), index, True, dim, src.shape[dim], report=name, wrap=wrap)
    return dst


def index_add_(dst, src, index, dim, wrap=False):
    """dst.index_add_(dim, index, src) for an fp32 dst: src's slice k along dim is added to dst's
    slice index[k] (wrap: negative ones from the end), by atomic adds, so repeated indices sum (in
    no fixed order on the GPU, as torch's CUDA index_add). Indices out of range are skipped, not
    reported. Returns dst."""
    _check_index("index_add_", dst, src, index, dim)
    check(dst.dtype == torch.float32 and src.dtype.is_floating_point,
          lambda: f"index_add_: adds float src into a float32 dst, got {src.dtype} into {dst.dtype}")
    check(all(a == b for d, (a, b) in enumerate(zip(dst.shape, src.shape)) if d != dim) and
          src.shape[dim] == index.shape[0],
          lambda: f"index_add_: src {tuple(src.shape)} must be dst {tuple(dst.shape)} with {index.shape[0]} at dim {dim}")
    _launch(dst, src, src.shape, dst.stride(), src.stride(), index, False, dim, dst.shape[dim], add=ATOMIC, wrap=wrap)
    return dst


def put_(dst, src, index, dim=0, name="scatter", wrap=False):
    """dst.index_copy_(dim, index, src): dst's slice index[k] along dim = src's slice k, cast (wrap:
    negative indices from the end). A repeated index keeps one of its values (which one is not
    fixed on the GPU, as torch's scatter). An index out of range raises InputIndexError as
    gather_'s `name` says. dst may overlap itself off the indexed slices (an as_strided view).
    Returns dst."""
    _check_index("put_", dst, src, index, dim)
    check(all(a == b for d, (a, b) in enumerate(zip(dst.shape, src.shape)) if d != dim) and
          src.shape[dim] == index.shape[0],
          lambda: f"put_: src {tuple(src.shape)} must be dst {tuple(dst.shape)} with {index.shape[0]} at dim {dim}")
    _launch(dst, src, src.shape, dst.stride(), src.stride(), index, False, dim, dst.shape[dim], report=name, wrap=wrap)
    return dst


def windows(x, dim, size, step):
    """x.unfold(dim, size, step) (dim >= 0; size and step checked by the caller): x's windows of
    `size` along dim, `step` apart, as a view [..., windows, ..., size] of x's memory."""
    if x.dim() == 0:
        return x.as_strided((size,), (1,), x.storage_offset())
    shape, strides = list(x.shape), list(x.stride())
    shape[dim] = (shape[dim] - size) // step + 1
    strides[dim] *= step
    return x.as_strided((*shape, size), (*strides, x.stride(dim)), x.storage_offset())


def unfold_add_(dst, src, dim, size, step):
    """dst += src summed back from dst's windows (src is shaped as windows(dst, dim, size, step)):
    unfold's backward, overlapping windows summed by atomic adds into an fp32 dst. Returns dst."""
    check(dst.dtype == torch.float32 and src.dtype.is_floating_point and src.device == dst.device,
          lambda: f"unfold_add_: adds float src into a float32 dst, got {src.dtype} into {dst.dtype}")
    view = windows(dst, dim, size, step)
    check(src.shape == view.shape, lambda: f"unfold_add_: src {tuple(src.shape)} must be {tuple(view.shape)}, dst's windows")
    _launch(dst, src, src.shape, view.stride(), src.stride(), add=ATOMIC)
    return dst


@triton.jit
def search_kernel(seq_ptr, v_ptr, out_ptr, m, per_row, n, RIGHT: tl.constexpr, STEPS: tl.constexpr,
                  BLOCK: tl.constexpr):
    """out[i] = where values [m] (row i // per_row) go in their row of seq [rows, n] (ascending, both
    contiguous): the first position whose element is >= v (RIGHT: > v), by STEPS halvings."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < m
    v = tl.load(v_ptr + offs, mask=ok, other=0)
    row = seq_ptr + (offs // per_row) * n
    lo = tl.zeros([BLOCK], tl.int64)
    hi = lo + n
    for _ in tl.static_range(STEPS):
        active = ok & (lo < hi)
        mid = (lo + hi) // 2
        s = tl.load(row + mid, mask=active, other=0)
        # torch's tests, negated, so that a NaN (the largest) sends the search right
        if RIGHT:
            before = ~(s > v)
        else:
            before = ~(s >= v)
        lo = tl.where(active & before, mid + 1, lo)
        hi = tl.where(active & ~before, mid, hi)
    tl.store(out_ptr + offs, lo.to(out_ptr.dtype.element_ty), mask=ok)


def search(seq, values, right, out_dtype):
    """Insertion points (out_dtype) of values [rows, per_row] in seq [rows or 1, n], both
    contiguous and of one dtype; see search_kernel."""
    out = torch.empty(values.shape, dtype=out_dtype, device=values.device)
    m, n = values.numel(), seq.shape[-1]
    if m:
        block = 1 << 14 if INTERPRET else 512
        per_row = m if seq.dim() == 1 or seq.shape[0] == 1 else values.shape[-1]
        search_kernel[(cdiv(m, block),)](seq, values, out, m, per_row, n, RIGHT=right, STEPS=int(n).bit_length(),
                                         BLOCK=block)
    return out


# ---- the tensor surface of the eighth session (ops3): scatter_reduce's products and extremes ----

@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 12)}, restore_value=["acc_ptr"])
@triton.jit
def combine_at_kernel(acc_ptr, src_ptr, pos_ptr, n, spare, OP: tl.constexpr, BLOCK: tl.constexpr):
    """acc[pos[i]] = acc[pos[i]] OP src[i] for i < n: acc fp32 values read as their int32 bits, with a
    spare element at `spare` that idle lanes address; OP "prod", "amax" or "amin" (a NaN wins, as
    torch's). Triton has no atomic product, so each lane loops on a compare-and-swap until its value
    went in: repeated positions combine in no fixed order."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    todo = i < n
    x = tl.load(src_ptr + i, mask=todo, other=0).to(tl.float32)
    ptr = acc_ptr + tl.where(todo, tl.load(pos_ptr + i, mask=todo, other=0), spare)
    old = tl.load(ptr)
    while tl.max(todo.to(tl.int32), 0) > 0:
        a = old.to(tl.float32, bitcast=True)
        if OP == "prod":
            y = a * x
        elif OP == "amax":
            y = tl.where((a != a) | (a > x), a, x)
        else:
            y = tl.where((a != a) | (a < x), a, x)
        new = tl.where(todo, y.to(tl.int32, bitcast=True), old)
        seen = tl.atomic_cas(ptr, old, new)
        todo = todo & (seen != old)
        old = seen


def combine_at_(acc, src, positions, op):
    """acc[positions[i]] = acc[positions[i]] op src[i] (op "prod", "amax" or "amin"; repeated positions
    combine) for a dense fp32 acc [n + 1] whose last element is spare, src and positions (int64, in
    range) dense vectors of one length; returns acc."""
    check(acc.dtype == torch.float32 and acc.dim() == 1 and acc.is_contiguous(),
          lambda: f"combine_at_: acc must be a dense float32 vector, got {acc.dtype} {tuple(acc.shape)}")
    check(src.dim() == 1 and positions.shape == src.shape and positions.dtype == torch.int64 and src.is_contiguous()
          and positions.is_contiguous(), lambda: f"combine_at_: src {tuple(src.shape)} and int64 positions "
                                                 f"{tuple(positions.shape)} {positions.dtype} must be dense vectors of one length")
    check(op in ("prod", "amax", "amin"), lambda: f"combine_at_: unknown op {op!r}")
    n = src.shape[0]
    if n:
        combine_at_kernel[grid1d(n)](acc.view(torch.int32), src, positions, n, acc.shape[0] - 1, OP=op)
    return acc
