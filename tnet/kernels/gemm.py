"""Tiled GEMM: C = A @ B with any strides, a batch axis, and a fused epilogue (the
convolutions, implicit GEMMs over images, are in conv.py).

Operands and outputs are float32, float16 or bfloat16 in memory (16-bit: storage only); the
sums, the bias and the ReLU are fp32, rounded once at the store into the output's dtype.
Precision of the products:
  "ieee": exact fp32 products, on the CUDA cores;
  "tf32": operands rounded to tf32 on the tensor cores (~3e-4 relative error);
  "bf16": operands rounded to bf16 on the tensor cores (~1e-2 relative error);
  "fp16": operands rounded to fp16 on the tensor cores (~1e-3; fp16 overflows past 65504).
bf16 and fp16 tensors use their own precision; fp32 tensors default to "tf32", as PyTorch's
cuDNN convolutions do ("bf16" or "fp16" round fp32 operands in registers). Change that
default with `tnet.set_precision`.

Large 2-D tf32, bf16 and fp16 products run gemm_tma_kernel instead: TMA tile loads and
persistent programs.
"""
import contextlib

import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune, fit, jit, launch_kept
from .launch import FLOATS, cdiv, check, check_float, tile_config
from .copy import copy_
from .reduce import sum_except

PRECISIONS = ("ieee", "tf32", "bf16", "fp16")
_LOW = {torch.bfloat16: "bf16", torch.float16: "fp16"}  # a 16-bit dtype's own precision
SMS = 0 if INTERPRET else torch.cuda.get_device_properties(0).multi_processor_count  # 0: no split-K
_default = {"precision": "tf32"}
_allocator = []  # set once Triton has an allocator for TMA descriptors (descriptor_memory)


def set_precision(precision):
    """Set the default GEMM precision for fp32 tensors; returns the previous one. 16-bit
    tensors keep their own ("bf16" or "fp16")."""
    check(precision in PRECISIONS, lambda: f"precision must be one of {PRECISIONS}, got {precision!r}")
    previous, _default["precision"] = _default["precision"], precision
    return previous


def get_precision():
    return _default["precision"]


@contextlib.contextmanager
def precision_of(precision):
    """GEMMs of fp32 tensors at `precision` inside the block (set_precision, the previous one restored after)."""
    previous = set_precision(precision)
    try:
        yield
    finally:
        set_precision(previous)


# Small tiles for small products; the large ones are each precision's best for large products
# (bench.py gemm; docs/results.md, tuning notes).
_CONFIGS = [tile_config(*tile, GROUP_M=8) for tile in [
    (64, 64, 32, 4, 4), (128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (256, 128, 32, 8, 3), (128, 256, 64, 8, 4),
    (64, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 32, 32, 4, 4), (32, 64, 32, 4, 4)]]
SPLIT_WAVES = 2  # split-K over the batch aims at this many programs per SM
TRANSPOSE_MIN = 512  # tf32 products with M and K from this size read B from a K-major copy;
# 2-D tf32, bf16 and fp16 ones with N from this size too run gemm_tma_kernel


def _prune(configs, named_args, **kwargs):
    """Skip tiles far larger than the problem: they cost compile and tuning time only."""
    M, N = named_args["M"], named_args["N"]
    fits = [c for c in configs if c.kwargs["BLOCK_M"] <= max(32, 2 * M) and c.kwargs["BLOCK_N"] <= max(32, 2 * N)]
    return fits or configs[:1]


@triton.jit
def mma(a, b, acc, PRECISION: tl.constexpr, INTERPRET: tl.constexpr):
    """acc + a @ b with the products at PRECISION and the sums in fp32."""
    if PRECISION == "bf16" or PRECISION == "fp16":
        low = tl.bfloat16 if PRECISION == "bf16" else tl.float16
        if INTERPRET:
            # The interpreter's bf16 dot is broken; rounding then an fp32 dot is exact.
            acc = tl.dot(a.to(low).to(tl.float32), b.to(low).to(tl.float32), acc)
        else:
            acc = tl.dot(a.to(low), b.to(low), acc)
    else:
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision=PRECISION)
    return acc


@triton.jit
def grouped_tile(tile, num_m, num_n, GROUP_M: tl.constexpr):
    """(row block, column block) of output tile number `tile` in grouped order: GROUP_M row
    blocks take their turns on each column block, so they share its B tiles while in L2."""
    group = tile // (GROUP_M * num_n)
    first_m = group * GROUP_M
    group_size = min(num_m - first_m, GROUP_M)
    return first_m + (tile % (GROUP_M * num_n)) % group_size, (tile % (GROUP_M * num_n)) // group_size


@triton.jit
def epilogue(acc, bias_ptr, offs_m, offs_n, mask_m, mask_n, BIAS: tl.constexpr, RELU: tl.constexpr):
    """relu(acc + bias) in fp32, whatever the bias's dtype. BIAS: 0 none, 1 indexed by row m,
    2 by column n."""
    if BIAS == 1:
        acc += tl.load(bias_ptr + offs_m, mask=mask_m, other=0.0).to(tl.float32)[:, None]
    if BIAS == 2:
        acc += tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)  # NaN stays NaN, as torch's relu
    return acc


_TUNING = dict(key=["M", "N", "K", "BATCH", "batch_per", "PRECISION"],
               prune_configs_by={"early_config_prune": _prune},
               interpret={"BLOCK_M": fit("M", 128), "BLOCK_N": fit("N", 128), "BLOCK_K": fit("K", 128)})


@autotune(_CONFIGS, **_TUNING)
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
    """C[s] (+)= relu(sum over b in part s of A[b] @ B[b] + bias), A [BATCH, M, K]; part s
    holds the batch_per products from b = s*batch_per (1: a batched GEMM, more: split-K over
    the batch), B [BATCH, K, N]. BIAS: 0 none, 1 indexed by row m, 2 by column n.
    A, B and C may each hold fp32, fp16 or bf16; C's is rounded to once, from fp32 sums."""
    pid_m, pid_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
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
            b_mask = mask_k[:, None] & mask_n[None, :]
            a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=b_mask, other=0.0)
            b_ptrs += BLOCK_K * stride_bk
            acc = mma(a, b, acc, PRECISION, INTERPRET)
            a_ptrs += BLOCK_K * stride_ak
        a_base += stride_ab
        b_base += stride_bb

    c_ptrs = c_ptr + part * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = mask_m[:, None] & mask_n[None, :]
    if ACCUMULATE:
        acc += tl.load(c_ptrs, mask=c_mask, other=0.0).to(tl.float32)
    acc = epilogue(acc, bias_ptr, offs_m, offs_n, mask_m, mask_n, BIAS, RELU)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# With ACCUMULATE the kernel reads C, so the tuner's trial launches must put C back after
# each one; that clone and copy would otherwise be timed with every trial of every GEMM.
gemm_accumulate_kernel = autotune(_CONFIGS, restore_value=["c_ptr"], **_TUNING)(gemm_kernel.jitted)


@jit
def gemm_tma_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_a, stride_b, stride_cm,
                    A_T: tl.constexpr, B_T: tl.constexpr,
                    BIAS: tl.constexpr, RELU: tl.constexpr, PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
                    NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr):
    """C = relu(A @ B + bias) for large 2-D operands: Hopper's tensor-memory accelerator
    (TMA) moves the A and B tiles into shared memory, through descriptors, and each of the
    NUM_SMS programs walks over output tiles (a persistent kernel: no tail of short-lived
    programs). C [M, N] has a unit column stride, and so has what a_ptr and b_ptr hold (row
    stride stride_a, stride_b): A [M, K], or A.T [K, M] with A_T; B [K, N], or B.T [N, K] with
    B_T (K-major, as Hopper's tf32 instruction needs; its 16-bit one reads either). BIAS as
    gemm_kernel."""
    if A_T:
        a_desc = tl.make_tensor_descriptor(a_ptr, [K, M], [stride_a, 1], [BLOCK_K, BLOCK_M])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_a, 1], [BLOCK_M, BLOCK_K])
    if B_T:
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [stride_b, 1], [BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [stride_b, 1], [BLOCK_K, BLOCK_N])
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile, num_m, num_n, GROUP_M)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            if A_T:
                a = a_desc.load([k, pid_m * BLOCK_M]).T
            else:
                a = a_desc.load([pid_m * BLOCK_M, k])
            if B_T:
                b = b_desc.load([pid_n * BLOCK_N, k]).T
            else:
                b = b_desc.load([k, pid_n * BLOCK_N])
            acc = mma(a, b, acc, PRECISION, INTERPRET)
        mask_m = offs_m < M
        mask_n = offs_n < N
        acc = epilogue(acc, bias_ptr, offs_m, offs_n, mask_m, mask_n, BIAS, RELU)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=mask_m[:, None] & mask_n[None, :])


# tf32 tiles: the largest whose stages fit shared memory with a bias added (docs/results.md,
# tuning notes); and 128x64, whose twice as many tiles fill the SMs where 128x128 ones leave half idle
# (1024^3: 64 tiles of 128x128 on 132 SMs); and 64x128: as many tiles as 128x64, each one warpgroup's m64
# instruction, for the products that leave SMs idle (1024^3 trails cuBLAS most: docs/results.md).
_TMA_CONFIGS = [tile_config(*tile, GROUP_M=8) for tile in [(128, 128, 32, 4, 4), (128, 128, 32, 4, 5), (128, 128, 32, 8, 5),
                                                           (128, 64, 32, 4, 4), (64, 128, 32, 4, 4)]]
# 16-bit tiles: 128x128x64; 128x64x64 and 64x128x64 as tf32's; 128x256x64 in 3 stages (4 overflow shared memory)
# for large products, whose C tile of 16 bits fits beside them.
_TMA16_CONFIGS = [tile_config(*tile, GROUP_M=8) for tile in [(128, 128, 64, 8, 4), (128, 128, 64, 4, 4),
                                                             (128, 64, 64, 4, 4), (128, 256, 64, 8, 3),
                                                             (64, 128, 64, 4, 4)]]
C_TILE_BYTES = 128 * 256 * 2  # the epilogue stages C's tile in shared memory beside the operands' stages


def _c_tile_fits(configs, named_args, **kwargs):
    """The 16-bit configs whose C tile fits C_TILE_BYTES (a 128x256 one of an fp32 C does not; Triton
    passes the positional arguments in named_args, the keyword ones in kwargs)."""
    size = {**named_args, **kwargs}["c_ptr"].element_size()
    return [c for c in configs if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] * size <= C_TILE_BYTES] or _TMA16_CONFIGS[:1]


_TMA_TUNING = dict(key=["M", "N", "K", "A_T", "B_T", "PRECISION"],
                   interpret={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64})
gemm_tma_tuned = autotune(_TMA_CONFIGS, **_TMA_TUNING)(gemm_tma_kernel)  # tf32
gemm_tma16_tuned = autotune(_TMA16_CONFIGS, prune_configs_by={"early_config_prune": _c_tile_fits},
                            **_TMA_TUNING)(gemm_tma_kernel)  # bf16 and fp16
_TMA_DTYPES = {"tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}  # what runs there


@jit
def transpose_kernel(x_ptr, y_ptr, R, C, stride_xb, stride_xr, stride_xc,
                     BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """y[b] = x[b].T for x [B, R, C] with any strides, y [B, C, R] contiguous; grid (tiles, B)."""
    num_c = tl.cdiv(C, BLOCK_C)
    offs_r = tl.program_id(0) // num_c * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_c = tl.program_id(0) % num_c * BLOCK_C + tl.arange(0, BLOCK_C)
    b = tl.program_id(1).to(tl.int64)
    mask = (offs_r < R)[:, None] & (offs_c < C)[None, :]
    tile = tl.load(x_ptr + b * stride_xb + offs_r[:, None] * stride_xr + offs_c[None, :] * stride_xc, mask=mask)
    tl.store(y_ptr + b * R * C + offs_c[None, :] * R + offs_r[:, None], tile, mask=mask)


def _tma_fits(x, transposed=False):
    """Whether a TMA descriptor can address the 2-D tensor x (x.T if transposed): a unit
    column stride, and the base address and row stride multiples of 16 bytes."""
    row, col = x.stride()[::-1] if transposed else x.stride()
    return col == 1 and row * x.element_size() % 16 == 0 and x.data_ptr() % 16 == 0


def descriptor_memory(device):
    """Give Triton, once, an allocator for the memory in which kernels build their TMA descriptors."""
    if not _allocator:
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))
        _allocator.append(True)


def _launch_tma(a, b, out, *, a_t, b_t, precision, bias=None, bias_kind=0, relu=False, config=None):
    """Run gemm_tma_kernel on checked operands a [M, K] and b [K, N] that `_tma_fits`, read
    as a.T with a_t and b.T with b_t, and out [M, N] with a unit column stride. config: a
    triton.Config to run instead of autotuning (studies)."""
    descriptor_memory(out.device)
    (M, K), N = a.shape, b.shape[1]
    args = (a, b, out, bias if bias is not None else out, M, N, K,
            a.stride(1 if a_t else 0), b.stride(1 if b_t else 0), out.stride(0))
    meta = dict(A_T=a_t, B_T=b_t, BIAS=bias_kind, RELU=relu, PRECISION=precision, INTERPRET=INTERPRET,
                NUM_SMS=SMS or 4)
    grid = lambda meta: (min(meta["NUM_SMS"], cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"])),)
    if config is None:
        (gemm_tma_tuned if precision == "tf32" else gemm_tma16_tuned)[grid](*args, **meta)
    else:
        gemm_tma_kernel[grid](*args, **meta, **config.kwargs, num_warps=config.num_warps, num_stages=config.num_stages)
    return out


def _k_major(b):
    """b [K, N] or [batch, K, N] as a view of a contiguous [N, K] or [batch, N, K] copy.
    Hopper's tf32 tensor-core instruction reads both operands K-major from shared memory:
    with an N-major B, Triton routes every B tile through registers to transpose it, at about
    half the speed, so large tf32 products pay for one transposed copy."""
    *batch, K, N = b.shape
    bt = torch.empty((*batch, N, K), device=b.device, dtype=b.dtype)
    grid = (cdiv(K, 64) * cdiv(N, 64), batch[0] if batch else 1)
    transpose_kernel[grid](b, bt, K, N, b.stride(0) if batch else 0, b.stride(-2), b.stride(-1), BLOCK_R=64, BLOCK_C=64)
    return bt.transpose(-2, -1)


def _strides(x):
    """(batch, row, column) strides of a 2-D or 3-D operand. A 2-D operand, or a batch of
    one, gets batch stride 0: the kernel then reads the same matrix for every product."""
    if x.dim() == 2:
        return (0, *x.stride())
    s = x.stride()
    return (s[0] if x.shape[0] > 1 else 0, s[1], s[2])


def shape_text(x):
    return "x".join(map(str, x.shape))


def pick_precision(name, precision, *xs):
    """The products' precision: the caller's, else a 16-bit operand's dtype, else the default."""
    if precision is None:  # a loop, not next(genexpr): every GEMM and convolution asks
        for x in xs:
            low = _LOW.get(x.dtype)
            if low is not None:
                return low
        return _default["precision"]
    check(precision in PRECISIONS, lambda: f"{name}: precision must be one of {PRECISIONS}, got {precision!r}")
    return precision


def _bias_kind(name, bias, bias_dim, M, N, device, dtype=torch.float32):
    """BIAS of gemm_kernel: 0 none, 1 along m (bias_dim=0), 2 along n (bias_dim=1). The bias
    is float32 or the output's dtype (it is added in fp32 either way)."""
    if bias is None:
        return 0
    check(bias_dim in (0, 1), lambda: f"{name}: bias_dim must be 0 or 1, got {bias_dim}")
    size = (M, N)[bias_dim]
    check(bias.shape == (size,) and bias.is_contiguous() and bias.dtype in (torch.float32, dtype)
          and bias.device == device,
          lambda: f"{name}: bias must be a contiguous vector of {size} on {device}, float32 or {dtype}, "
                  f"got {tuple(bias.shape)} {bias.dtype} on {bias.device}")
    return 1 + bias_dim


def _launch(a, b, out, M, N, K, batch, *, a_strides, b_strides, precision, bias=None, bias_kind=0, relu=False,
            accumulate=False, sum_batch=False):
    """Run gemm_kernel on checked operands: A at a and B at b with
    (batch, row, column) strides (batch stride 0 broadcasts one matrix), out [batch, M, N]
    or [M, N]; with sum_batch out is [M, N] and holds the sum of the batch of products.
    Returns out."""
    c, c_strides = out, _strides(out)
    parts, per = batch, 1
    if sum_batch:
        # Split-K over the batch, so that a small output still fills the GPU (weight
        # gradients: a 32x75 output summed over 100 images); the parts, fp32 whatever out's
        # dtype, are summed after.
        tiles = max(1, cdiv(M, 64) * cdiv(N, 64))  # an empty output (N = 0: a [3, 0] operand's gradient) has none
        parts = 1 if accumulate or bias is not None or relu else max(1, min(batch, SPLIT_WAVES * SMS // tiles))
        per = max(1, cdiv(batch, parts))  # an empty batch: one part, which writes the sum's zeros
        parts = max(1, cdiv(batch, per))
        if parts > 1:
            c = torch.empty((parts, M, N), device=out.device, dtype=torch.float32)
            c_strides = (M * N, N, 1)
    grid = lambda meta: (cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]), parts)
    tuned = gemm_accumulate_kernel if accumulate else gemm_kernel
    # the key: all the arguments but the tensors (their dtypes Bound checks)
    key = (tuned, M, N, K, batch, per, parts, a_strides, b_strides, c_strides, bias is None, bias_kind, relu, precision)
    launch_kept(_BOUND, key, tuned, grid,
                (a, b, c, c if bias is None else bias, M, N, K, batch, per, *a_strides, *b_strides, *c_strides),
                dict(BIAS=bias_kind, RELU=relu, ACCUMULATE=accumulate, PRECISION=precision, INTERPRET=INTERPRET))
    if sum_batch and parts > 1:
        if out.is_contiguous() and out.dtype == torch.float32:
            sum_except(c.view(parts, M * N), 1, out=out.view(M * N))
        else:
            copy_(out, sum_except(c.view(parts, M * N), 1).view(M, N))
    return out


_BOUND = {}  # gemm_kernel's Bound launches (autotune.launch_kept) by _launch's key


def matmul(a, b, *, bias=None, bias_dim=1, relu=False, out=None, out_dtype=None, accumulate=False,
           sum_batch=False, precision=None):
    """C = relu(A @ B + bias) for 2-D or batched 3-D operands with any strides.

    bias_dim=1 adds bias[n] to every row (a linear layer), bias_dim=0 adds bias[m] to every
    column (a convolution's output channels). A 2-D operand is broadcast over the batch.
    accumulate=True adds the existing contents of `out` (before bias and ReLU).
    sum_batch=True sums the batch of products into one [M, N] output.

    a and b are float32, float16 or bfloat16; a 16-bit operand may meet a float32 one (which
    is then rounded in registers at the 16-bit precision), float16 may not meet bfloat16
    (torch refuses mixed dtypes; tnet refuses only this pair). C's dtype is out's, else
    out_dtype, else the operands' (float32 for mixed ones, torch's type promotion). The sums,
    the bias (float32 or C's dtype) and the ReLU are fp32, rounded once into C's dtype.
    """
    # Every call pays this host code (tens of microseconds of Python): no tensor views are
    # made before the launch, and the error texts are built only when a check fails.
    check(a.device == b.device, lambda: f"matmul: a is on {a.device} but b is on {b.device}")
    check_float("matmul", a, "a")
    check_float("matmul", b, "b")
    check(a.dtype == b.dtype or torch.float32 in (a.dtype, b.dtype),
          lambda: f"matmul: a is {a.dtype} but b is {b.dtype}: float16 and bfloat16 do not mix, cast one")
    check(a.dim() in (2, 3) and b.dim() in (2, 3),
          lambda: f"matmul: a and b must be 2-D or 3-D, got shapes {shape_text(a)} and {shape_text(b)}")
    a_batch, M, K = a.shape if a.dim() == 3 else (1, *a.shape)
    b_batch, b_rows, N = b.shape if b.dim() == 3 else (1, *b.shape)
    check(K == b_rows, lambda: f"matmul: a is {shape_text(a)} but b is {shape_text(b)}")
    batch = b_batch if a_batch == 1 else a_batch  # one of 1 broadcasts, to an empty batch too
    check(a_batch in (1, batch) and b_batch in (1, batch),
          lambda: f"matmul: batch sizes differ, a is {shape_text(a)} but b is {shape_text(b)}")
    precision = pick_precision("matmul", precision, a, b)

    out_shape = (M, N) if sum_batch or (a.dim() == 2 and b.dim() == 2) else (batch, M, N)
    if out is None:
        check(not accumulate, "matmul: accumulate=True needs out")
        if out_dtype is None:
            out_dtype = a.dtype if a.dtype == b.dtype else torch.float32
        check(out_dtype in FLOATS, lambda: f"matmul: out_dtype must be float32, float16 or bfloat16, got {out_dtype}")
        out = torch.empty(out_shape, device=a.device, dtype=out_dtype)
    check(out.shape == out_shape,
          lambda: f"matmul: out is {shape_text(out)} but a {shape_text(a)} @ b {shape_text(b)} is {'x'.join(map(str, out_shape))}")
    check(out.dtype in FLOATS and out_dtype in (None, out.dtype) and out.device == a.device,
          lambda: f"matmul: out must be float32, float16 or bfloat16 on a's device ({a.device}), as out_dtype "
                  f"({out_dtype}) says if given; got {out.dtype} on {out.device}")
    kind = _bias_kind("matmul", bias, bias_dim, M, N, a.device, out.dtype)
    if precision == "tf32" and b.dtype == torch.float32 and b.stride(-2) != 1 and min(M, K) >= TRANSPOSE_MIN:
        b = _k_major(b)
    if (a.dim() == b.dim() == 2 and a.dtype == b.dtype == _TMA_DTYPES.get(precision) and not sum_batch
            and not accumulate and min(M, N, K) >= TRANSPOSE_MIN):
        # tf32 reads A [M, K] and B.T [N, K] (K-major, after the copy above); 16-bit reads
        # either layout of each as it comes, preferring K-major
        a_t = precision != "tf32" and a.stride(1) != 1
        b_t = precision == "tf32" or b.stride(0) == 1
        if _tma_fits(a, a_t) and _tma_fits(b, b_t) and out.stride(1) == 1:  # C: plain stores
            return _launch_tma(a, b, out, a_t=a_t, b_t=b_t, precision=precision, bias=bias, bias_kind=kind, relu=relu)
    return _launch(a, b, out, M, N, K, batch, a_strides=_strides(a), b_strides=_strides(b), precision=precision,
                   bias=bias, bias_kind=kind, relu=relu, accumulate=accumulate, sum_batch=sum_batch)
