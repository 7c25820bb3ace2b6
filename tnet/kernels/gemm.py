"""Tiled GEMM: C = A @ B with any strides, a batch axis, and a fused epilogue.

Precision of the products (the sums are always fp32):
  "ieee": exact fp32 products, on the CUDA cores;
  "tf32": fp32 operands rounded to tf32 on the tensor cores (~3e-4 relative error);
  "bf16": operands rounded to bf16 on the tensor cores (~1e-2 relative error).
fp32 tensors default to "tf32", as PyTorch's cuDNN convolutions do; bf16 tensors always
use "bf16". Change the default with `tnet.set_precision`.
"""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from ._autotune import autotune, check
from .reduce import sum_except

PRECISIONS = ("ieee", "tf32", "bf16")
_SMS = 0 if INTERPRET else torch.cuda.get_device_properties(0).multi_processor_count  # 0: no split-K
_default = {"precision": "tf32"}


def set_precision(precision):
    """Set the default GEMM precision for fp32 tensors; returns the previous one."""
    check(precision in PRECISIONS, f"precision must be one of {PRECISIONS}, got {precision!r}")
    previous, _default["precision"] = _default["precision"], precision
    return previous


def get_precision():
    return _default["precision"]


def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


_CONFIGS = [
    _config(64, 64, 32, 4, 4),
    _config(128, 128, 32, 8, 3),
    _config(128, 256, 32, 8, 3),
    _config(128, 256, 64, 8, 3),
    _config(128, 64, 32, 4, 4),
    _config(64, 32, 32, 4, 4),
    _config(32, 64, 32, 4, 4),
]


def _prune(configs, named_args, **kwargs):
    """Skip tiles far larger than the problem: they cost compile and tuning time only."""
    M, N = named_args["M"], named_args["N"]
    fits = [c for c in configs if c.kwargs["BLOCK_M"] <= max(32, 2 * M) and c.kwargs["BLOCK_N"] <= max(32, 2 * N)]
    return fits or configs[:1]


@autotune(_CONFIGS, key=["M", "N", "K", "BATCH", "batch_per", "PRECISION"], restore_value=["c_ptr"],
          prune_configs_by={"early_config_prune": _prune},
          interpret={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64})
@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, bias_ptr,
                M, N, K, BATCH, batch_per,
                stride_ab, stride_am, stride_ak,
                stride_bb, stride_bk, stride_bn,
                stride_cb, stride_cm, stride_cn,
                BIAS: tl.constexpr, RELU: tl.constexpr, ACCUMULATE: tl.constexpr,
                PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr):
    """C[s] (+)= relu(sum over b in part s of A[b] @ B[b] + bias), A [BATCH, M, K],
    B [BATCH, K, N]; part s holds the batch_per products from b = s*batch_per (1: a batched
    GEMM, more: split-K over the batch). BIAS: 0 none, 1 indexed by row m, 2 by column n."""
    # Grouped ordering: GROUP_M row-blocks share their B tiles while they sit in L2.
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * num_n)
    first_m = group * GROUP_M
    group_size = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_n)) % group_size
    pid_n = (pid % (GROUP_M * num_n)) // group_size

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N

    part = tl.program_id(1).to(tl.int64)
    b_first = part * batch_per
    b_count = tl.minimum(batch_per, BATCH - b_first)
    a_base = a_ptr + b_first * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_base = b_ptr + b_first * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, b_count):
        a_ptrs = a_base
        b_ptrs = b_base
        for k in range(0, K, BLOCK_K):
            mask_k = offs_k < K - k
            a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
            if PRECISION == "bf16":
                if INTERPRET:
                    # The interpreter's bf16 dot is broken; rounding then an fp32 dot is exact.
                    a = a.to(tl.bfloat16).to(tl.float32)
                    b = b.to(tl.bfloat16).to(tl.float32)
                    acc = tl.dot(a, b, acc)
                else:
                    acc = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), acc)
            else:
                acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision=PRECISION)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        a_base += stride_ab
        b_base += stride_bb

    c_ptrs = c_ptr + part * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = mask_m[:, None] & mask_n[None, :]
    if ACCUMULATE:
        acc += tl.load(c_ptrs, mask=c_mask, other=0.0)
    if BIAS == 1:
        acc += tl.load(bias_ptr + offs_m, mask=mask_m, other=0.0)[:, None]
    if BIAS == 2:
        acc += tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(c_ptrs, acc, mask=c_mask)


def _as3d(x, name):
    check(x.dim() in (2, 3), f"matmul: {name} must be 2-D or 3-D, got shape {tuple(x.shape)}")
    return x if x.dim() == 3 else x.unsqueeze(0)


def _shape(x):
    return "x".join(map(str, x.shape))


def matmul(a, b, *, bias=None, bias_dim=1, relu=False, out=None, accumulate=False,
           sum_batch=False, precision=None):
    """C = relu(A @ B + bias) for 2-D or batched 3-D operands with any strides.

    bias_dim=1 adds bias[n] to every row (a linear layer), bias_dim=0 adds bias[m] to every
    column (a convolution's output channels). A 2-D operand is broadcast over the batch.
    accumulate=True adds the existing contents of `out` (before bias and ReLU).
    sum_batch=True sums the batch of products into one [M, N] output.
    """
    check(a.device == b.device, f"matmul: a is on {a.device} but b is on {b.device}")
    for name, x in (("a", a), ("b", b)):
        check(x.dtype in (torch.float32, torch.bfloat16),
              f"matmul: {name} must be float32 or bfloat16, got {x.dtype}")
    a3, b3 = _as3d(a, "a"), _as3d(b, "b")
    check(a3.shape[2] == b3.shape[1], f"matmul: a is {_shape(a)} but b is {_shape(b)}")
    batch = max(a3.shape[0], b3.shape[0])
    check(a3.shape[0] in (1, batch) and b3.shape[0] in (1, batch),
          f"matmul: batch sizes differ, a is {_shape(a)} but b is {_shape(b)}")
    M, K, N = a3.shape[1], a3.shape[2], b3.shape[2]
    if precision is None:
        precision = "bf16" if torch.bfloat16 in (a.dtype, b.dtype) else _default["precision"]
    check(precision in PRECISIONS, f"matmul: precision must be one of {PRECISIONS}, got {precision!r}")

    out_shape = (M, N) if sum_batch or (a.dim() == 2 and b.dim() == 2) else (batch, M, N)
    fresh = out is None
    if fresh:
        check(not accumulate, "matmul: accumulate=True needs out")
        out = torch.empty(out_shape, device=a.device, dtype=torch.float32)
    check(tuple(out.shape) == out_shape,
          f"matmul: out is {_shape(out)} but a {_shape(a)} @ b {_shape(b)} is {'x'.join(map(str, out_shape))}")
    check(out.dtype == torch.float32 and out.device == a.device, "matmul: out must be float32 on a's device")
    c3 = out if out.dim() == 3 else out.unsqueeze(0)
    kind = 0
    if bias is not None:
        check(bias_dim in (0, 1), f"matmul: bias_dim must be 0 or 1, got {bias_dim}")
        size = (M, N)[bias_dim]
        check(bias.shape == (size,) and bias.is_contiguous() and bias.dtype == torch.float32
              and bias.device == a.device,
              f"matmul: bias must be a contiguous float32 vector of {size} on {a.device}, "
              f"got {tuple(bias.shape)} {bias.dtype}")
        kind = 1 + bias_dim

    # stride 0 broadcasts a 2-D operand over the batch
    sab = a3.stride(0) if a3.shape[0] > 1 else 0
    sbb = b3.stride(0) if b3.shape[0] > 1 else 0
    parts, per = batch, 1
    if sum_batch:
        # Split-K over the batch, so that a small output still fills the GPU (weight
        # gradients: a 32x75 output summed over 100 images); the parts are summed after.
        tiles = triton.cdiv(M, 64) * triton.cdiv(N, 64)
        parts = 1 if accumulate or bias is not None or relu else max(1, min(batch, 2 * _SMS // tiles))
        per = triton.cdiv(batch, parts)
        parts = triton.cdiv(batch, per)
        if parts > 1:
            c3 = torch.empty((parts, M, N), device=a.device, dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), parts)
    gemm_kernel[grid](a3, b3, c3, bias if bias is not None else c3,
                      M, N, K, batch, per,
                      sab, a3.stride(1), a3.stride(2),
                      sbb, b3.stride(1), b3.stride(2),
                      c3.stride(0), c3.stride(1), c3.stride(2),
                      BIAS=kind, RELU=relu, ACCUMULATE=accumulate,
                      PRECISION=precision, INTERPRET=INTERPRET)
    if sum_batch and parts > 1:
        total = sum_except(c3.reshape(parts, M * N), 1).reshape(M, N)
        out = total if fresh else out.copy_(total)
    return out
