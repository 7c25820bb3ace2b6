"""Random numbers from Triton's Philox (`tl.rand`, `tl.randn`): uniform and normal fills, and
dropout.

The generator's state is a device tensor [seed, offset] (int64). A draw of n numbers gives
element i the Philox counter offset + i, so draws never share counters. Every draw first runs
`take`: a one-program kernel that copies the state into a fresh snapshot and advances the
state's offset by n, on the device. The draw kernel then reads its seed and offset from that
snapshot. No value is baked into a launch, so a CUDA graph that captured a draw draws fresh
numbers on every replay; and since the state only changes between kernels, in stream order,
no program can read a half-advanced offset."""
import torch
import triton
import triton.language as tl

from .autotune import autotune, fit, jit
from .launch import BLOCK_CONFIGS, FLOATS, check, check_float, grid1d, is_flat


@jit
def take_kernel(state_ptr, snapshot_ptr, n):
    """snapshot [2] = state [2] = (seed, offset); then state's offset += n. One program."""
    seed = tl.load(state_ptr)
    offset = tl.load(state_ptr + 1)
    tl.store(snapshot_ptr, seed)
    tl.store(snapshot_ptr + 1, offset)
    tl.store(state_ptr + 1, offset + n)


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 16)})
@triton.jit
def random_kernel(out_ptr, snapshot_ptr, n, NORMAL: tl.constexpr, BLOCK: tl.constexpr):
    """out [n] = uniform [0, 1) numbers, or standard normal ones with NORMAL, for the Philox
    counters snapshot[1] + i under the seed snapshot[0]."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    counter = tl.load(snapshot_ptr + 1) + i
    if NORMAL:
        x = tl.randn(tl.load(snapshot_ptr), counter)
    else:
        x = tl.rand(tl.load(snapshot_ptr), counter)
    tl.store(out_ptr + i, x.to(out_ptr.dtype.element_ty), mask=i < n)


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 16)})
@triton.jit
def dropout_kernel(x_ptr, y_ptr, snapshot_ptr, n, p, scale, BLOCK: tl.constexpr):
    """y [n] = x * scale where the uniform number of counter snapshot[1] + i is >= p, else 0.
    Dropout's forward (x the input) and backward (x the output's gradient, same snapshot)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    keep = tl.rand(tl.load(snapshot_ptr), tl.load(snapshot_ptr + 1) + i) >= p
    x = tl.load(x_ptr + i, mask=mask).to(tl.float32)
    tl.store(y_ptr + i, tl.where(keep, x * scale, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


def take(state, n):
    """A snapshot (seed, offset) of the generator state for a draw of n numbers; advances the
    state past them, on the device."""
    check(state.shape == (2,) and state.dtype == torch.int64 and state.is_contiguous(),
          lambda: f"take: the state must be 2 contiguous int64, got {tuple(state.shape)} {state.dtype}")
    snapshot = torch.empty(2, dtype=torch.int64, device=state.device)
    take_kernel[(1,)](state, snapshot, n)
    return snapshot


def fill_random_(out, state, normal=False):
    """Fill a dense float tensor with uniform [0, 1) numbers (standard normal ones with normal=True)
    in memory order; returns out."""
    check(out.dtype in FLOATS, lambda: f"random: expected a float tensor, got {out.dtype}")
    check(is_flat(out), lambda: f"random: expected a contiguous or channels-last tensor, got strides {out.stride()}")
    check(out.device == state.device, lambda: f"random: out on {out.device}, the generator on {state.device}")
    n = out.numel()
    snapshot = take(state, n)
    if n:
        random_kernel[grid1d(n)](out, snapshot, n, NORMAL=normal)
    return out


def dropout(x, p, snapshot):
    """x with the elements whose uniform number (counter snapshot[1] + memory index) is < p
    zeroed and the rest scaled by 1/(1-p) (0 for p = 1): a fresh tensor in x's layout, x dense.
    The backward is dropout(g, p, snapshot) with the forward's snapshot: it regenerates the
    mask, so nothing but 16 bytes is kept between the passes (a mask would cost a byte per
    element written and read back; Philox is a few dozen integer operations per element,
    hidden under the memory traffic)."""
    check_float("dropout", x)
    check(is_flat(x), lambda: f"dropout: expected a contiguous or channels-last tensor, got strides {x.stride()}")
    check(0.0 <= p <= 1.0, lambda: f"dropout: p must be in [0, 1], got {p}")
    check(snapshot.device == x.device, lambda: f"dropout: x on {x.device}, the snapshot on {snapshot.device}")
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        dropout_kernel[grid1d(n)](x, y, snapshot, n, float(p), 0.0 if p == 1 else 1.0 / (1.0 - p))
    return y
