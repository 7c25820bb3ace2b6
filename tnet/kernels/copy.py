"""A strided copy between two tensors of one shape, casting on the way: it serves casts
(`Tensor.to(dtype)`) and the backward of slicing (the gradient written through the same view
of a zeroed buffer). Any strides on either side; dims are ordered by the destination's strides
and merged where both sides allow, so most copies run as 1-D or 2-D ones."""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune
from .launch import BLOCK_CONFIGS, check, grid1d

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32)
MAX_DIMS = 4
_ROUND_BF16_BY_HAND = tl.constexpr(INTERPRET)


@triton.jit
def cast(x, dtype: tl.constexpr):
    """x cast to dtype, float narrowing rounded to nearest even as on the GPU: the interpreter
    truncates fp32 -> bf16, so there the rounding is done on the bits (NaN kept quiet)."""
    if _ROUND_BF16_BY_HAND and (dtype == tl.bfloat16) and (x.dtype == tl.float32):
        bits = x.to(tl.uint32, bitcast=True)
        bits = tl.where(x == x, bits + 0x7FFF + ((bits >> 16) & 1), bits | 0x400000)
        return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    return x.to(dtype)


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": 1 << 16})
@triton.jit
def copy_kernel(dst_ptr, src_ptr, n, size1, size2, size3, dst0, dst1, dst2, dst3, src0, src1, src2, src3,
                BLOCK: tl.constexpr):
    """dst[i] = src[i] cast to dst's dtype over the shape [n / (size1 size2 size3), size1, size2, size3],
    with the strides (in elements) dst0..dst3 and src0..src3.
    Narrowing float casts round to nearest even (see cast)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    i3 = i % size3
    rest = i // size3
    i2 = rest % size2
    rest = rest // size2
    i1 = rest % size1
    i0 = rest // size1
    # a direct cast, not through fp32: int64 -> int64 and float -> int stay exact
    x = tl.load(src_ptr + i0 * src0 + i1 * src1 + i2 * src2 + i3 * src3, mask=mask)
    tl.store(dst_ptr + i0 * dst0 + i1 * dst1 + i2 * dst2 + i3 * dst3, cast(x, dst_ptr.dtype.element_ty), mask=mask)


def _overlaps(x):
    """Whether two elements of x share memory (an expanded view): then writes would race."""
    span = 0  # the farthest element reachable through the smaller strides
    for stride, size in sorted((st, s) for s, st in zip(x.shape, x.stride()) if s > 1):
        if stride <= span:
            return True
        span += stride * (size - 1)
    return False


def merge_dims(shape, dst_strides, src_strides):
    """(sizes, dst strides, src strides) of the same copy in as few dims as possible: size-1 dims
    dropped, the rest ordered by the destination's strides (its fastest dim last, so that
    writes are coalesced), neighbours merged where both sides step through them as one."""
    dims = sorted(((size, d, s) for size, d, s in zip(shape, dst_strides, src_strides) if size != 1),
                  key=lambda dim: dim[1], reverse=True)
    merged = []
    for size, d, s in dims:
        if merged and merged[-1][1] == d * size and merged[-1][2] == s * size:
            merged[-1] = (merged[-1][0] * size, d, s)
        else:
            merged.append((size, d, s))
    return [m[0] for m in merged], [m[1] for m in merged], [m[2] for m in merged]


def copy_(dst, src):
    """dst[...] = src cast to dst's dtype, for tensors of one shape with any strides (dst may not
    overlap itself); returns dst."""
    check(dst.shape == src.shape, f"copy_: shapes differ, dst {tuple(dst.shape)} and src {tuple(src.shape)}")
    check(dst.device == src.device, f"copy_: dst on {dst.device}, src on {src.device}")
    check(dst.dtype in DTYPES and src.dtype in DTYPES,
          f"copy_: supports {', '.join(map(str, DTYPES))}; got dst {dst.dtype}, src {src.dtype}")
    check(not _overlaps(dst), f"copy_: dst overlaps itself (strides {dst.stride()}), elements would race")
    sizes, dst_strides, src_strides = merge_dims(dst.shape, dst.stride(), src.stride())
    check(len(sizes) <= MAX_DIMS, f"copy_: {len(sizes)} dims remain after merging; the kernel takes {MAX_DIMS}")
    pad = MAX_DIMS - len(sizes)
    sizes, dst_strides, src_strides = [1] * pad + sizes, [0] * pad + dst_strides, [0] * pad + src_strides
    n = dst.numel()
    if n:
        copy_kernel[grid1d(n)](dst, src, n, *sizes[1:], *dst_strides, *src_strides)
    return dst
