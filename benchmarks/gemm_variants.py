"""The original student project's GEMM variants, C = A @ B, in Triton: kept for bench.py
to compare with the production kernel (gemm.py) and cuBLAS, not used by the layers.

Each launcher takes 2-D row-major contiguous A [M, K] and B [K, N], both float32, both
float16 or both bfloat16, and returns a float32 C [M, N]. `precision` is as in gemm.py:
"ieee", "tf32", "bf16" or "fp16" (naive is "ieee" only: it never touches the tensor cores).
"""
import torch
import triton
import triton.language as tl

from tnet._device import INTERPRET
from tnet.kernels.gemm import PRECISIONS, mma
from tnet.kernels.launch import FLOATS, cdiv, check


@triton.jit
def naive_kernel(a_ptr, b_ptr, c_ptr,
                 M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_N: tl.constexpr):
    """C[m, n:n+BLOCK_N] for one row m per program: K scalar-times-vector multiply-adds
    straight from global memory, nothing reused on chip (each strip re-reads K x BLOCK_N of B)."""
    m = tl.program_id(0)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(0, K):
        a = tl.load(a_ptr + m * stride_am + k * stride_ak).to(tl.float32)
        b = tl.load(b_ptr + k * stride_bk + offs_n * stride_bn, mask=mask_n, other=0.0)
        acc += a * b.to(tl.float32)
    tl.store(c_ptr + m * stride_cm + offs_n * stride_cn, acc, mask=mask_n)


@triton.jit
def tiled_kernel(a_ptr, b_ptr, c_ptr,
                 M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 PRECISION: tl.constexpr, INTERPRET: tl.constexpr, BLOCK: tl.constexpr):
    """One BLOCK x BLOCK tile of C per program; each K-step stages a BLOCK x BLOCK tile of
    A and of B on chip (the shared-memory tiled GEMM): global traffic falls by BLOCK."""
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        mask_k = offs_k < K - k
        a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        acc = mma(a, b, acc, PRECISION, INTERPRET)
        a_ptrs += BLOCK * stride_ak
        b_ptrs += BLOCK * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc,
             mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def two_tiles_kernel(a_ptr, b_ptr, c_ptr,
                     M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     PRECISION: tl.constexpr, INTERPRET: tl.constexpr, BLOCK: tl.constexpr):
    """Two adjacent BLOCK x BLOCK tiles of C along N per program (a BLOCK x 2*BLOCK block):
    each A tile loaded serves both, so A is read half as often as in tiled_kernel."""
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n0 = tl.program_id(1) * (2 * BLOCK) + tl.arange(0, BLOCK)
    offs_n1 = offs_n0 + BLOCK
    offs_k = tl.arange(0, BLOCK)
    mask_m = offs_m < M
    mask_n0 = offs_n0 < N
    mask_n1 = offs_n1 < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b0_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n0[None, :] * stride_bn
    b1_ptrs = b0_ptrs + BLOCK * stride_bn
    acc0 = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    acc1 = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        mask_k = offs_k < K - k
        a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b0 = tl.load(b0_ptrs, mask=mask_k[:, None] & mask_n0[None, :], other=0.0)
        b1 = tl.load(b1_ptrs, mask=mask_k[:, None] & mask_n1[None, :], other=0.0)
        acc0 = mma(a, b0, acc0, PRECISION, INTERPRET)
        acc1 = mma(a, b1, acc1, PRECISION, INTERPRET)
        a_ptrs += BLOCK * stride_ak
        b0_ptrs += BLOCK * stride_bk
        b1_ptrs += BLOCK * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n0[None, :] * stride_cn
    tl.store(c_ptrs, acc0, mask=mask_m[:, None] & mask_n0[None, :])
    tl.store(c_ptrs + BLOCK * stride_cn, acc1, mask=mask_m[:, None] & mask_n1[None, :])


def _prepare(name, a, b, precision, precisions):
    """Check the operands of `name`, return M, N, K and an empty float32 C."""
    check(precision in precisions, f"{name}: precision must be one of {precisions}, got {precision!r}")
    check(a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0],
          f"{name}: need A [M, K] and B [K, N], got {tuple(a.shape)} and {tuple(b.shape)}")
    check(a.dtype == b.dtype and a.dtype in FLOATS,
          f"{name}: A and B must both be float32, both float16 or both bfloat16, got {a.dtype} and {b.dtype}")
    check(a.device == b.device, f"{name}: A is on {a.device} but B is on {b.device}")
    check(a.is_contiguous() and b.is_contiguous(),
          f"{name}: A and B must be row-major contiguous, got strides {a.stride()} and {b.stride()}")
    (M, K), N = a.shape, b.shape[1]
    # int32 offsets inside the kernels
    check(max(M * K, K * N, M * N) < 2**31, f"{name}: {M}x{N}x{K} is too large for int32 offsets")
    return M, N, K, torch.empty((M, N), device=a.device, dtype=torch.float32)


def naive(a, b, precision="ieee"):
    """C = A @ B with no tiles and no tl.dot: one row strip of up to 128 outputs per program."""
    M, N, K, c = _prepare("naive", a, b, precision, ("ieee",))
    block_n = min(128, max(32, triton.next_power_of_2(N)))
    naive_kernel[(M, cdiv(N, block_n))](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                                               BLOCK_N=block_n, num_warps=block_n // 32)
    return c


def tiled(a, b, precision="ieee", block=32):
    """C = A @ B by square block x block tiles, one tl.dot per K-step; block >= 16 on the GPU."""
    M, N, K, c = _prepare("tiled", a, b, precision, PRECISIONS)
    grid = (cdiv(M, block), cdiv(N, block))
    tiled_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                       PRECISION=precision, INTERPRET=INTERPRET, BLOCK=block, num_warps=4)
    return c


def two_tiles(a, b, precision="ieee", block=32):
    """C = A @ B by block x (2 * block) blocks, computed as two square tiles sharing A."""
    M, N, K, c = _prepare("two_tiles", a, b, precision, PRECISIONS)
    grid = (cdiv(M, block), cdiv(N, 2 * block))
    two_tiles_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                           PRECISION=precision, INTERPRET=INTERPRET, BLOCK=block, num_warps=4)
    return c


# name: (launcher, the precisions it supports), for bench.py
VARIANTS = {"naive": (naive, ("ieee",)), "tiled": (tiled, PRECISIONS), "two_tiles": (two_tiles, PRECISIONS)}
