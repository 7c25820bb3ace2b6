"""Sums over the batch axes, as bias gradients need: out[j] = sum over i, l of x[i, j, l]."""
import torch
import triton
import triton.language as tl

from ._autotune import autotune, cdiv, check

_CONFIGS = [triton.Config({"BLOCK_R": 512, "BLOCK_J": 16}, num_warps=4),
            triton.Config({"BLOCK_R": 256, "BLOCK_J": 32}, num_warps=4),
            triton.Config({"BLOCK_R": 128, "BLOCK_J": 64}, num_warps=4),
            triton.Config({"BLOCK_R": 64, "BLOCK_J": 128}, num_warps=4)]
CHUNK = 1024  # reduced elements per program: long sums are split, then the parts summed
# (4096: a cifar10_quick b100 graphed step 10 us slower on the H200, too few programs for the bias sums)


@autotune(_CONFIGS, key=["I", "J", "L"], interpret={"BLOCK_R": 4096, "BLOCK_J": 16})
@triton.jit
def sum_kernel(x_ptr, out_ptr, I, J, L, chunk, BLOCK_R: tl.constexpr, BLOCK_J: tl.constexpr):
    """x [I, J, L] contiguous -> out [S, J], part s summing reduced indices r = i*L + l in
    [s*chunk, (s+1)*chunk); grid (J blocks, S). int32 indices: the launcher checks sizes."""
    offs_j = tl.program_id(0) * BLOCK_J + tl.arange(0, BLOCK_J)
    first = tl.program_id(1) * chunk
    end = tl.minimum(first + chunk, I * L)
    acc = tl.zeros((BLOCK_R, BLOCK_J), dtype=tl.float32)
    for start in range(first, end, BLOCK_R):
        r = start + tl.arange(0, BLOCK_R)
        offs = (r // L * J * L + r % L)[:, None] + offs_j[None, :] * L
        mask = (r < end)[:, None] & (offs_j < J)[None, :]
        acc += tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + tl.program_id(1).to(tl.int64) * J + offs_j, tl.sum(acc, axis=0), mask=offs_j < J)


def _sum(x, I, J, L, out):
    parts = max(1, cdiv(I * L, CHUNK))
    part_sums = out if parts == 1 else torch.empty((parts, J), device=x.device, dtype=torch.float32)
    grid = lambda meta: (cdiv(J, meta["BLOCK_J"]), parts)
    sum_kernel[grid](x, part_sums, I, J, L, CHUNK)
    return out if parts == 1 else _sum(part_sums, parts, J, 1, out)


def sum_except(x, dim, out=None):
    """Sum a contiguous float32 tensor over every axis but `dim`: [N, out] with dim=1 gives a
    linear layer's bias gradient, [N, C, H, W] with dim=1 a convolution's. The result is a
    fresh vector, or goes into `out` (contiguous float32, x.shape[dim] long)."""
    check(x.dtype == torch.float32 and x.is_contiguous(),
          f"sum_except: expected a contiguous float32 tensor, got {x.dtype} with strides {x.stride()}")
    check(0 <= dim < x.dim(), f"sum_except: dim {dim} out of range for shape {tuple(x.shape)}")
    check(x.numel() < 2**31, f"sum_except: {x.numel()} elements exceed int32 indexing")
    I, J = 1, x.shape[dim]
    for s in x.shape[:dim]:
        I *= s
    L = x.numel() // max(1, I * J)
    if out is None:
        out = torch.empty(J, device=x.device, dtype=torch.float32)
    check(out.shape == (J,) and out.is_contiguous() and out.dtype == torch.float32 and out.device == x.device,
          lambda: f"sum_except: out must be a contiguous float32 vector of {J} on {x.device}, got {tuple(out.shape)}")
    return _sum(x, I, J, L, out)
