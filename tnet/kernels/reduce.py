"""Sums over the batch axes, as bias gradients need: out[j] = sum over i, l of x[i, j, l]; and
sums, products, maxima and minima over any axes (reduce), for PyTorch's sum, mean, prod, max,
min, argmax and argmin."""
import functools
import math

import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune, fit, launch_kept
from .launch import FLOATS, INTEGERS, cdiv, check, check_float, kept


_CONFIGS = [triton.Config({"BLOCK_R": 512, "BLOCK_J": 16}, num_warps=4),
            triton.Config({"BLOCK_R": 256, "BLOCK_J": 32}, num_warps=4),
            triton.Config({"BLOCK_R": 128, "BLOCK_J": 64}, num_warps=4),
            triton.Config({"BLOCK_R": 64, "BLOCK_J": 128}, num_warps=4),
            # few long rows: a weight gradient's pixel parts
            triton.Config({"BLOCK_R": 16, "BLOCK_J": 256}, num_warps=4),
            triton.Config({"BLOCK_R": 8, "BLOCK_J": 1024}, num_warps=8)]
# Reduced elements per program: long sums are split, then the parts summed. Larger chunks leave
# too few programs for a small batch's bias sums (docs/results.md, tuning notes); the interpreter pays
# per program and per loop step, so there a part is longer.
CHUNK = 1 << 14 if INTERPRET else 1024
# The interpreter's [BLOCK_R, BLOCK_J] tile of reduce_kernel: its columns fitted to the kept axis, its rows
# to the part, 8K elements at most
_TILE = 8192


@autotune(_CONFIGS, key=["I", "J", "L"],
          interpret={"BLOCK_R": fit(lambda args: min(args["chunk"], args["I"] * args["L"]), 4096), "BLOCK_J": 16})
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
        acc += tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + tl.program_id(1).to(tl.int64) * J + offs_j, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty),
             mask=offs_j < J)


def _sum(x, I, J, L, out):
    parts = max(1, cdiv(I * L, CHUNK))
    part_sums = out if parts == 1 else torch.empty((parts, J), device=x.device, dtype=torch.float32)
    launch_kept(_BOUND, (sum_kernel, I, J, L, CHUNK, x.dtype, part_sums.dtype), sum_kernel,
                lambda meta: (cdiv(J, meta["BLOCK_J"]), parts), (x, part_sums, I, J, L, CHUNK), {})
    return out if parts == 1 else _sum(part_sums, parts, J, 1, out)


# sum_kernel's and reduce_kernel's Bound launches (autotune.launch_kept), by sizes, flags and CHUNK (which a Bound's
# grid holds, and the tests change)
_BOUND = {}


def sum_except(x, dim, out=None):
    """Sum a contiguous float tensor over every axis but `dim`, in fp32: [N, out] with dim=1 gives
    a linear layer's bias gradient, [N, C, H, W] with dim=1 a convolution's. The result is a
    fresh vector of x's dtype, or goes into `out` (a contiguous float vector, x.shape[dim] long,
    of any float dtype: an fp32 bias gradient of a 16-bit x is rounded once, not twice)."""
    check_float("sum_except", x)
    check(x.is_contiguous(), lambda: f"sum_except: expected a contiguous tensor, got strides {x.stride()}")
    check(0 <= dim < x.dim(), lambda: f"sum_except: dim {dim} out of range for shape {tuple(x.shape)}")
    check(x.numel() < 2**31, lambda: f"sum_except: {x.numel()} elements exceed int32 indexing")
    I, J = 1, x.shape[dim]
    for s in x.shape[:dim]:
        I *= s
    L = x.numel() // max(1, I * J)
    if out is None:
        out = torch.empty(J, device=x.device, dtype=x.dtype)
    check(out.shape == (J,) and out.is_contiguous() and out.dtype in FLOATS and out.device == x.device,
          lambda: f"sum_except: out must be a contiguous float vector of {J} on {x.device}, got "
                  f"{tuple(out.shape)} {out.dtype}")
    return _sum(x, I, J, L, out)


PARTS_WAVES = 4  # best_parts' parts fill at most this many waves of programs
# GEMM flops per weight that take as long as adding one more part's fp32 sums: 4 bytes at the
# part sum's memory bandwidth against the weight gradient's tensor-core rate
PART_SUM_FLOPS = 2000


@functools.lru_cache(maxsize=4096)  # every launch asks, for each config (a call's buffer size)
def best_parts(n, blocks, slots, align):
    """How many parts a weight gradient's sum over n pixels splits into, for a tile of `blocks`
    programs a part and `slots` programs at a time on the GPU (0: the interpreter, 1 part): the count
    that fills 1 to PARTS_WAVES whole waves best, by a model of the time (the busiest slot's pixels,
    plus PART_SUM_FLOPS for each part summed after), each part at least 4 runs of `align` pixels."""
    if slots == 0 or n == 0:  # the interpreter; an empty batch
        return 1
    aligns, most = cdiv(n, align), max(1, cdiv(n, 4 * align))

    def cost(p):  # in flops per weight; 2 * n when the slots share the pixels evenly
        busiest = cdiv(blocks * p, slots) * cdiv(aligns, p) * slots / (blocks * aligns)
        return 2 * n * busiest + PART_SUM_FLOPS * p
    candidates = {max(1, min(most, waves * slots // blocks)) for waves in range(1, PARTS_WAVES + 1)}
    return min(sorted(candidates), key=cost)


class PartSums:
    """A sum split into parts along a launch's last grid axis (split-K): each part's programs write
    their own copy of the result into a buffer of as many copies as the most parts any config
    launches (`most`; the result itself for one), summed after in a fixed order: deterministic."""

    def __init__(self, result, most):
        self.most, self.launched = most, []
        self.buffer = result if most == 1 else torch.empty((most, result.numel()), device=result.device,
                                                           dtype=torch.float32)

    def parts(self, n):
        """For a launch's grid: the config's n parts, never past the buffer (remembered for finish)."""
        self.launched.append(min(n, self.most))
        return self.launched[-1]

    def finish(self, flat, kept_parts=None):
        """Sum the parts into flat (the result's memory as one vector); kept_parts() tells how many
        ran where no grid was asked (a kept launch)."""
        if self.most > 1:
            sum_except(self.buffer[:self.launched[-1] if self.launched else kept_parts()], 1, out=flat)


# Sums, products, maxima and minima over any dims (PyTorch's sum, mean, prod, max, argmax...): x is
# seen in its memory order as [K1, R, K2], the reduced axes R between kept ones, and reduced to [K1, K2].
_REDUCE_CONFIGS = [triton.Config({"BLOCK_R": 16, "BLOCK_J": 256}, num_warps=4),
                   triton.Config({"BLOCK_R": 64, "BLOCK_J": 64}, num_warps=4),
                   triton.Config({"BLOCK_R": 256, "BLOCK_J": 16}, num_warps=4),
                   triton.Config({"BLOCK_R": 512, "BLOCK_J": 8}, num_warps=4)]
_NO_INDEX = tl.constexpr(2**62)  # above every index
_INT64_MIN = tl.constexpr(-2**63)  # the identity of an integer maximum


@triton.jit
def _product(x, R: tl.constexpr, J: tl.constexpr):
    """The product of x [R, J] (R a power of two up to 2^10) over axis 0, by halving: no tl.reduce
    with a combine function, which the interpreter runs element by element (0.7 s a 64 x 128 tile)."""
    for i in tl.static_range(1, 11):
        if (R >> i) > 0:
            a, b = tl.split(tl.permute(tl.reshape(x, [R >> i, 2, J]), (0, 2, 1)))
            x = a * b
    return tl.reshape(x, [J])


# BLOCK_J before BLOCK_R: the rows' fit reads the columns'
@autotune(_REDUCE_CONFIGS, key=["K1", "R", "K2", "INNER"],
          interpret={"BLOCK_J": fit(lambda args: args["K1"] if args["INNER"] else args["K2"], 128),
                     "BLOCK_R": fit(lambda args: min(args["chunk"], args["R"], _TILE // args["BLOCK_J"]), _TILE // 16)})
@triton.jit
def reduce_kernel(x_ptr, xi_ptr, y_ptr, yi_ptr, K1, R, K2, chunk, divisor,
                  OP: tl.constexpr, INNER: tl.constexpr, INDEXED: tl.constexpr, INTEGER: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_J: tl.constexpr):
    """x [K1, R, K2] dense -> y [K1, S, K2], S = cdiv(R, chunk), part s over r in [s*chunk, (s+1)*chunk):
    OP "sum" (in fp32, divided by divisor; INTEGER: in int64, undivided), "prod" (in fp32, or
    int64) or "max" or "min" (in fp32, or int64) with yi its index (r, or xi's value if INDEXED).
    INNER (K2 == 1): a tile's J axis runs over k1, else over k2. Grid: S * (J blocks) [* K1 unless INNER]."""
    pid = tl.program_id(0)
    parts = (R + chunk - 1) // chunk  # not tl.cdiv: each call of a jit function costs ms in the interpreter
    if INNER:
        blocks = (K1 + BLOCK_J - 1) // BLOCK_J
        k1 = (pid % blocks) * BLOCK_J + tl.arange(0, BLOCK_J)
        part = pid // blocks
        cols = k1.to(tl.int64) * R
        out = k1.to(tl.int64) * parts + part
        col_mask = k1 < K1
        step = 1
    else:
        blocks = (K2 + BLOCK_J - 1) // BLOCK_J
        k2 = (pid % blocks) * BLOCK_J + tl.arange(0, BLOCK_J)
        k1 = (pid // blocks) % K1
        part = pid // blocks // K1
        cols = k1.to(tl.int64) * R * K2 + k2
        out = (k1.to(tl.int64) * parts + part) * K2 + k2
        col_mask = k2 < K2
        step = K2
    first = part.to(tl.int64) * chunk  # int64 index arithmetic, which the interpreter does not check for overflow
    end = tl.minimum(first + chunk, R)
    if INTEGER:
        acc = tl.zeros((BLOCK_R, BLOCK_J), dtype=tl.int64)
    else:
        acc = tl.zeros((BLOCK_R, BLOCK_J), dtype=tl.float32)
    acc_i = tl.full((BLOCK_R, BLOCK_J), _NO_INDEX, tl.int64)
    if OP == "prod":
        acc += 1
    elif OP != "sum":
        if INTEGER:
            acc += _INT64_MIN
        else:
            acc += float("-inf")
    for start in range(first, end, BLOCK_R):
        r = start + tl.arange(0, BLOCK_R)
        offs = cols[None, :] + r[:, None] * step
        mask = (r < end)[:, None] & col_mask[None, :]
        if OP == "sum":
            acc += tl.load(x_ptr + offs, mask=mask, other=0).to(acc.dtype)
        elif OP == "prod":
            # where, not other=1: the interpreter fills a masked bf16 load with the bits 1 (9e-41), not 1.0
            acc *= tl.where(mask, tl.load(x_ptr + offs, mask=mask, other=0).to(acc.dtype), 1)
        else:
            # A lane meets its indices in increasing order, so it keeps its first maximum by taking
            # only larger values, or a first NaN (PyTorch's max propagates NaN). A minimum is the
            # maximum of the negated values; of integers, of the complemented ones (~v = -v - 1 reverses
            # the order without negation's overflow at the int64 minimum).
            if INTEGER:
                v = tl.load(x_ptr + offs, mask=mask, other=0).to(tl.int64)
                if OP == "min":
                    v = ~v
            elif OP == "min":
                v = -tl.load(x_ptr + offs, mask=mask, other=float("inf")).to(tl.float32)
            else:
                v = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(tl.float32)
            if INDEXED:
                i = tl.load(xi_ptr + offs, mask=mask, other=_NO_INDEX)
            else:
                i = tl.broadcast_to(r[:, None], (BLOCK_R, BLOCK_J))
            # A lane's first element is taken whatever it is: a row of -inf only gives index 0, as torch.
            take = ((v > acc) | ((v != v) & (acc == acc)) | (acc_i == _NO_INDEX)) & mask
            acc = tl.where(take, v, acc)
            acc_i = tl.where(take, i, acc_i)
    if OP == "sum":
        total = tl.sum(acc, axis=0)
        if not INTEGER:
            total = total / divisor
        tl.store(y_ptr + out, total.to(y_ptr.dtype.element_ty), mask=col_mask)
    elif OP == "prod":
        tl.store(y_ptr + out, _product(acc, BLOCK_R, BLOCK_J).to(y_ptr.dtype.element_ty), mask=col_mask)
    elif INTEGER:  # across lanes: the first index holding the maximum (no NaN)
        v = tl.max(acc, axis=0)
        tl.store(yi_ptr + out, tl.min(tl.where(acc == v[None, :], acc_i, _NO_INDEX), axis=0), mask=col_mask)
        if OP == "min":
            v = ~v
        tl.store(y_ptr + out, v.to(y_ptr.dtype.element_ty), mask=col_mask)
    else:  # across lanes: the first index holding the maximum (or a NaN)
        isnan = acc != acc
        nan_col = tl.max(isnan.to(tl.int32), axis=0) > 0
        v = tl.max(tl.where(isnan, float("-inf"), acc), axis=0)
        hit = tl.where(nan_col[None, :], isnan, acc == v[None, :])
        if OP == "min":
            v = -v
        tl.store(y_ptr + out, tl.where(nan_col, float("nan"), v).to(y_ptr.dtype.element_ty), mask=col_mask)
        tl.store(yi_ptr + out, tl.min(tl.where(hit, acc_i, _NO_INDEX), axis=0), mask=col_mask)


def memory_order(x):
    """x's axes from the outermost in memory to the innermost (ties in index order)."""
    return sorted(range(x.dim()), key=lambda d: -x.stride(d))


def is_dense(x):
    """Whether x's elements fill its memory without gaps or overlaps, in some axis order
    (contiguous, channels-last, a transposed matrix...); an empty x always (torch gives any strides)."""
    if x.numel() == 0:
        return True
    expected = 1
    for d in reversed(memory_order(x)):
        if x.shape[d] != 1:
            if x.stride(d) != expected:
                return False
            expected *= x.shape[d]
    return True


def _reduce_view(x, xi, K1, R, K2, op, divisor, y, yi):
    """x (and xi) seen as [K1, R, K2] into y (and yi) seen as [K1, K2]; a long R in parts first,
    whose [K1, parts, K2] results are then reduced the same way."""
    parts = max(1, cdiv(R, CHUNK))
    if parts > 1:
        out = torch.empty(K1 * parts * K2, device=x.device, dtype=y.dtype if integer(y) else torch.float32)
        out_i = torch.empty(K1 * parts * K2, device=x.device, dtype=torch.int64) if op in ("max", "min") else None
    else:
        out, out_i = y, yi
    inner = K2 == 1
    blocks = lambda meta: cdiv(K1 if inner else K2, meta["BLOCK_J"]) * (1 if inner else K1)
    launch_kept(_BOUND, (reduce_kernel, K1, R, K2, CHUNK, op, xi is None, out_i is None, x.dtype, out.dtype), reduce_kernel,
                lambda meta: (parts * blocks(meta),),
                (x, x if xi is None else xi, out, out if out_i is None else out_i, K1, R, K2, CHUNK,
                 divisor if parts == 1 else 1.0), dict(OP=op, INNER=inner, INDEXED=xi is not None, INTEGER=integer(x)))
    if parts > 1:
        _reduce_view(out, out_i, K1, parts, K2, op, divisor, y, yi)


def integer(x):
    """Whether x holds integers or bools, which reduce exactly in int64."""
    return x.dtype in INTEGERS


def reduce(x, dims, op="sum", divisor=1.0, dtype=None):
    """x summed (then divided by divisor), multiplied ("prod"), maximised or minimised over `dims`,
    distinct axes >= 0, in fp32; integer or bool x exactly in int64: sums and products into int64 (no
    divisor, wrapping around on overflow as torch's), maxima and minima in x's dtype. Returns a new
    tensor shaped like x with 1 on those axes, laid out in x's memory order, of `dtype` (x's, or
    int64 for integer sums and products, by default); "max" and "min" return (values, int64 indices along its one reduced axis of size > 1,
    the first of equal extremes; with all axes reduced, indices in memory order; None where the
    reduced axes make several runs, below). x must be dense (see is_dense): the reduced axes
    then fall into runs between kept ones; several runs (a sum over N, H and W of NCHW) are
    reduced one run after the other, the longest first."""
    exact, dims = op in ("sum", "prod"), tuple(dims)
    plan = kept(_PLANS, (x.shape, x.stride(), x.dtype, dims, op, dtype), lambda: _plan(x, dims, op, dtype))
    if plan[0] == "runs":  # over several runs: the longest first, then the rest
        _, longest, rest, dtype = plan
        if not exact:  # values only: an index along several runs is not one number
            return reduce(reduce(x, longest, op)[0], rest, op, dtype=dtype)[0], None
        part = reduce(x, longest, op, dtype=torch.int64 if integer(x) else torch.float32)
        return reduce(part, rest, op, divisor, dtype)
    _, K1, R, K2, shape, back, dtype = plan
    y = torch.empty(shape, device=x.device, dtype=dtype)
    yi = None if exact else torch.empty(shape, device=x.device, dtype=torch.int64)
    if back is not None:
        y, yi = y.permute(back), yi if yi is None else yi.permute(back)
    if y.numel() and not x.numel():  # a sum (product) of no elements: the kernel would write nothing
        y.fill_(0 if op == "sum" else 1)
    elif y.numel():
        _reduce_view(x, None, K1, R, K2, op, float(divisor), y, yi)
    return y if exact else (y, yi)


_PLANS = {}  # reduce's plans (_plan) by x's shape, strides and dtype and the arguments: every call asks


def _plan(x, dims, op, dtype):
    """reduce's checks, then what its launch needs of x's geometry: ("runs", the longest run of
    reduced axes, the other reduced axes, dtype) where they make several runs, else ("view", K1, R,
    K2, the output's shape in memory order, the permutation back to x's axis order, dtype)."""
    exact = op in ("sum", "prod")
    check(x.dtype in FLOATS or integer(x), lambda: f"{op}: x must be float32, float16, bfloat16, an integer or bool, "
                                                   f"got {x.dtype}")
    check(is_dense(x), lambda: f"{op}: expected a dense tensor (contiguous, channels-last or a permutation), "
                               f"got shape {tuple(x.shape)} with strides {x.stride()}")
    check(op in ("sum", "prod", "max", "min"), lambda: f"reduce: op must be 'sum', 'prod', 'max' or 'min', got {op!r}")
    check(exact or x.numel() > 0, lambda: f"{op}: cannot take the {op} of an empty tensor")
    dtype = dtype or (torch.int64 if integer(x) and exact else x.dtype)
    order = memory_order(x)
    runs = []  # [reduced?, size, axes] in memory order, axes of size 1 left out
    for d in order:
        if x.shape[d] != 1:
            if runs and runs[-1][0] == (d in dims):
                runs[-1][1] *= x.shape[d]
                runs[-1][2].append(d)
            else:
                runs.append([d in dims, x.shape[d], [d]])
    reduced = [run for run in runs if run[0]]
    if len(reduced) > 1:
        longest = max(reduced, key=lambda run: run[1])[2]
        return "runs", longest, [d for d in dims if d not in longest], dtype
    at = runs.index(reduced[0]) if reduced else len(runs)
    K1, K2 = (math.prod(run[1] for run in runs[i]) for i in (slice(0, at), slice(at + 1, None)))
    R = reduced[0][1] if reduced else 1
    shape = [1 if d in dims else x.shape[d] for d in order]
    back = sorted(range(x.dim()), key=order.__getitem__)
    return "view", K1, R, K2, shape, None if back == sorted(back) else back, dtype  # None: no permutation
