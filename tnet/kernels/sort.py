"""Along one axis of any tensor: sorting (PyTorch's sort, argsort and topk), the scatter of a
gradient back to the sorted elements' places, and scans (cumsum, cumprod).

A row is the elements along the axis at one coordinate of the other axes; a program takes ROWS
rows, each reached through the other axes' strides (any layout, no copy). A sort holds its rows
whole, padded to a power of two, and packs each element's key (an int32 whose order is the
values' order) above its index in one int64: tl.sort's bitonic network then sorts the pairs, and
equal keys keep their input order (a stable sort). int64 values are sorted in two such passes, by
their low halves, then by their high halves (stable sorts compose: least significant first).
Rows longer than one program holds (LONG_FROM; every row in the interpreter) are merge-sorted
through two buffers of packed pairs: runs of LONG_RUN sorted as above, then merge passes that
double the runs, each pair placed by its rank in the partner run (a binary search; the pairs are
distinct, so no two land on one place). A scan walks its rows in BLOCK-long chunks, carrying each row's running total."""
import math

import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .copy import copy_
from .launch import FLOATS, INTEGERS, cdiv, check, next_power_of_2
from .pointwise import log1p_kahan

SORT_DTYPES = (*FLOATS, torch.int64, torch.int32, torch.bool)
WIDENED = (torch.uint8, torch.int8, torch.int16)  # sorted as int32
SCAN_DTYPES = (*FLOATS, *INTEGERS)
# The longest row a sort holds in one program (registers).
MAX_SORT = 1 << 14
# Rows longer than LONG_FROM are merge-sorted, from runs of LONG_RUN. The interpreter merge-sorts
# every row: its tl.sort costs about a millisecond per element (a 33-long row 3-30x the merges' time).
LONG_FROM = 0 if INTERPRET else MAX_SORT
LONG_RUN = 1 if INTERPRET else MAX_SORT
MERGE_BLOCK = 1 << 14 if INTERPRET else 1024
# A scan's chunk: whole rows in the interpreter, which pays per op, not per element.
SCAN_BLOCK = 1 << 14 if INTERPRET else 1024
_LAST = tl.constexpr(2**63 - 1)  # padding's packed key: after every element, NaN's included


@triton.jit
def _row_offsets(row, sizes, x_strides, y_strides):
    """The offsets of rows `row` (indices into the other axes, innermost first) in x and y."""
    rest = row
    x_off = tl.zeros_like(row)
    y_off = tl.zeros_like(row)
    for d in tl.static_range(len(sizes)):
        pos = rest % sizes[d]
        rest = rest // sizes[d]
        x_off += pos * x_strides[d]
        y_off += pos * y_strides[d]
    return x_off, y_off


@triton.jit
def _packed(x, col, mask, PART: tl.constexpr, DESCENDING: tl.constexpr):
    """Each element's sort key (an int32 ordered as the values: NaN above +inf, -0.0 equal to 0.0;
    an int64's low half (PART 1) or high half (PART 2)) above its position col in one int64; _LAST
    where not mask."""
    if PART == 1:
        key = x.to(tl.int32) ^ -2147483648  # the low half's unsigned order, as int32's
    elif PART == 2:
        key = (x >> 32).to(tl.int32)
    elif x.dtype.is_floating():
        f = x.to(tl.float32)
        b = tl.where(f == 0.0, 0.0, f).to(tl.int32, bitcast=True)
        key = tl.where(b < 0, b ^ 0x7FFFFFFF, b)  # a negative float's bits order backwards
        key = tl.where(f != f, 0x7FFFFFFF, key)
    else:
        key = x.to(tl.int32)
    if DESCENDING:
        key = ~key
    return tl.where(mask, (key.to(tl.int64) << 32) | col, _LAST)


@triton.jit
def sort_kernel(x_ptr, order_ptr, values_ptr, indices_ptr, rows, n, k, x_stride, y_stride, sizes, x_strides,
                y_strides, PART: tl.constexpr, DESCENDING: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """Each of `rows` rows of n elements of x sorted (ascending, or DESCENDING), its first k written
    to values and indices (int64, the positions in x's row); x's row r starts at the offset its
    coordinates give through x_strides (sizes: the other axes, innermost first), element j is
    x_stride further on; likewise values and indices through y_strides and y_stride. NaN sorts
    above +inf, -0.0 ties with 0.0, as torch's; BLOCK >= n. The key is the value (PART 0), an int64's
    low half (PART 1), or its high half (PART 2), the row then read in the order of `order` (PART 1's
    indices, laid out as the output; k = n)."""
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    x_row, y_row = _row_offsets(row, sizes, x_strides, y_strides)
    col = tl.arange(0, BLOCK).to(tl.int64)
    mask = (row < rows)[:, None] & (col < n)[None, :]
    if PART == 2:
        pos = tl.load(order_ptr + y_row[:, None] + col[None, :] * y_stride, mask=mask, other=0)
    else:
        pos = col[None, :]
    x = tl.load(x_ptr + x_row[:, None] + pos * x_stride, mask=mask, other=0)
    packed = tl.sort(_packed(x, col[None, :], mask, PART, DESCENDING), dim=1)
    index = packed.to(tl.int32).to(tl.int64)  # the low half
    keep = (row < rows)[:, None] & (col < k)[None, :]
    if PART == 2:
        index = tl.load(order_ptr + y_row[:, None] + index * y_stride, mask=keep, other=0)
    # the values read back from x: NaN payloads and the sign of zero as they were
    values = tl.load(x_ptr + x_row[:, None] + index * x_stride, mask=keep)
    out = y_row[:, None] + col[None, :] * y_stride
    tl.store(values_ptr + out, values, mask=keep)
    tl.store(indices_ptr + out, index, mask=keep)


@triton.jit
def unsort_kernel(g_ptr, indices_ptr, dx_ptr, rows, k, g_stride, dx_stride, sizes, g_strides, dx_strides,
                  ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """dx's row r at position indices[r, j] = g[r, j] for j < k (rows as in sort_kernel; indices
    laid out as g): a sort's gradient, scattered back to where its values came from."""
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    g_row, dx_row = _row_offsets(row, sizes, g_strides, dx_strides)
    col = tl.arange(0, BLOCK).to(tl.int64)
    mask = (row < rows)[:, None] & (col < k)[None, :]
    at = g_row[:, None] + col[None, :] * g_stride
    index = tl.load(indices_ptr + at, mask=mask, other=0)
    tl.store(dx_ptr + dx_row[:, None] + index * dx_stride, tl.load(g_ptr + at, mask=mask), mask=mask)


@triton.jit
def sort_runs_kernel(x_ptr, order_ptr, keys_ptr, units, runs, n, x_stride, y_stride, sizes, x_strides, y_strides,
                     PART: tl.constexpr, DESCENDING: tl.constexpr, UNITS: tl.constexpr, RUN: tl.constexpr):
    """The first step of a long sort: keys (rows x n, contiguous) gets each row's packed pairs
    (_packed, by position in the row), sorted within runs of RUN. A unit is one run of one row
    (`runs` per row); a program takes UNITS of them. x and order (PART 2) as in sort_kernel."""
    unit = tl.program_id(0).to(tl.int64) * UNITS + tl.arange(0, UNITS)
    row = unit // runs
    x_row, y_row = _row_offsets(row, sizes, x_strides, y_strides)
    col = (unit % runs)[:, None] * RUN + tl.arange(0, RUN).to(tl.int64)[None, :]
    mask = (unit < units)[:, None] & (col < n)
    if PART == 2:
        pos = tl.load(order_ptr + y_row[:, None] + col * y_stride, mask=mask, other=0)
    else:
        pos = col
    packed = _packed(tl.load(x_ptr + x_row[:, None] + pos * x_stride, mask=mask, other=0), col, mask, PART, DESCENDING)
    if RUN > 1:
        packed = tl.sort(packed, dim=1)  # the padding (_LAST) goes last: the stores below keep the rest
    tl.store(keys_ptr + row[:, None] * n + col, packed, mask=mask)


@triton.jit
def merge_kernel(keys_ptr, out_ptr, total, n, length, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    """One merge pass of a long sort: each row of keys (rows x n, contiguous; total = rows x n) holds
    sorted runs of `length`; each pair of runs goes to out merged. A pair's place is its place in
    its own run plus the count of the partner run's pairs below it: a binary search of STEPS
    halvings (length < 2^STEPS)."""
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    row = e // n
    p = e % n
    run = p // length
    partner = row * n + (run ^ 1) * length
    size = tl.minimum(tl.maximum(n - (run ^ 1) * length, 0), length)
    key = tl.load(keys_ptr + e, mask=mask, other=0)
    lo = tl.zeros_like(p)
    hi = size
    for _ in tl.static_range(STEPS):
        mid = (lo + hi) // 2
        active = lo < hi
        below = tl.load(keys_ptr + partner + mid, mask=mask & active, other=0) < key
        lo = tl.where(active & below, mid + 1, lo)
        hi = tl.where(active & ~below, mid, hi)
    tl.store(out_ptr + row * n + (run - run % 2) * length + p % length + lo, key, mask=mask)


@triton.jit
def unpack_kernel(x_ptr, order_ptr, keys_ptr, values_ptr, indices_ptr, total, n, k, x_stride, y_stride, sizes,
                  x_strides, y_strides, PART: tl.constexpr, BLOCK: tl.constexpr):
    """The last step of a long sort: the first k sorted pairs of each row of keys (rows x n) written
    as values (read back from x) and indices, laid out as in sort_kernel; total = rows x k."""
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    row = e // k
    j = e % k
    x_row, y_row = _row_offsets(row, sizes, x_strides, y_strides)
    index = tl.load(keys_ptr + row * n + j, mask=mask, other=0).to(tl.int32).to(tl.int64)  # the low half
    if PART == 2:
        index = tl.load(order_ptr + y_row + index * y_stride, mask=mask, other=0)
    out = y_row + j * y_stride
    tl.store(values_ptr + out, tl.load(x_ptr + x_row + index * x_stride, mask=mask), mask=mask)
    tl.store(indices_ptr + out, index, mask=mask)


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _multiply(a, b):
    return a * b


@triton.jit
def _logaddexp(a, b):
    """log(exp(a) + exp(b)) with no overflow, as pointwise's logaddexp (equal infinities give themselves,
    NaN propagates): logcumsumexp's combine, a running shift by the larger."""
    m = tl.where(a > b, a, b)
    return tl.where((a == b) & (tl.abs(a) == float("inf")), a, m + log1p_kahan(tl.exp(-tl.abs(a - b))))


@triton.jit
def scan_kernel(x_ptr, y_ptr, rows, n, x_stride, y_stride, sizes, x_strides, y_strides,
                OP: tl.constexpr, REVERSE: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                BLOCK: tl.constexpr):
    """y = the running sum (OP "sum"), product ("prod") or log-sum-exp ("logsumexp": fp32) along each
    row of x (rows as in sort_kernel), in COMPUTE (fp32 or int64); REVERSE: from the row's end."""
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    x_row, y_row = _row_offsets(row, sizes, x_strides, y_strides)
    if OP == "sum":
        carry = tl.zeros([ROWS], COMPUTE)
    elif OP == "prod":
        carry = tl.zeros([ROWS], COMPUTE) + 1
    else:
        carry = tl.zeros([ROWS], COMPUTE) - float("inf")
    last = (tl.arange(0, BLOCK) == BLOCK - 1)[None, :]
    for start in range(0, n, BLOCK):
        col = start + tl.arange(0, BLOCK).to(tl.int64)
        if REVERSE:
            pos = n - 1 - col
        else:
            pos = col
        mask = (row < rows)[:, None] & (col < n)[None, :]
        if OP == "sum":
            x = tl.load(x_ptr + x_row[:, None] + pos[None, :] * x_stride, mask=mask, other=0).to(COMPUTE)
            y = tl.associative_scan(x, 1, _add) + carry[:, None]
        elif OP == "prod":
            x = tl.load(x_ptr + x_row[:, None] + pos[None, :] * x_stride, mask=mask, other=1).to(COMPUTE)
            y = tl.associative_scan(x, 1, _multiply) * carry[:, None]
        else:
            x = tl.load(x_ptr + x_row[:, None] + pos[None, :] * x_stride, mask=mask, other=float("-inf")).to(COMPUTE)
            y = _logaddexp(tl.associative_scan(x, 1, _logaddexp), carry[:, None])
        # the chunk's last column: padding adds 0, multiplies by 1 or adds exp(-inf)
        carry = tl.sum(tl.where(last, y, 0), axis=1)
        tl.store(y_ptr + y_row[:, None] + pos[None, :] * y_stride, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _later_max(a, i, b, j):
    """cummax's combine, b the later part: NaN wins (the last NaN), then the larger, a tie the later."""
    take = (b != b) | ((a == a) & (b >= a))
    return tl.where(take, b, a), tl.where(take, j, i)


@triton.jit
def _later_min(a, i, b, j):
    """cummin's combine (see _later_max)."""
    take = (b != b) | ((a == a) & (b <= a))
    return tl.where(take, b, a), tl.where(take, j, i)


@triton.jit
def scan_extreme_kernel(x_ptr, y_ptr, i_ptr, rows, n, x_stride, y_stride, sizes, x_strides, y_strides,
                        MAX: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """y, i = the running max (MAX) or min along each row of x and its index (rows as in sort_kernel;
    y and i laid out alike), as torch's cummax and cummin: NaN propagates, a tie takes the later."""
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    x_row, y_row = _row_offsets(row, sizes, x_strides, y_strides)
    carry = tl.load(x_ptr + x_row, mask=row < rows, other=0).to(COMPUTE)  # the row's first element
    carry_i = tl.zeros([ROWS], tl.int64)
    last = (tl.arange(0, BLOCK) == BLOCK - 1)[None, :]
    for start in range(0, n, BLOCK):
        col = start + tl.arange(0, BLOCK).to(tl.int64)
        mask = (row < rows)[:, None] & (col < n)[None, :]
        x = tl.load(x_ptr + x_row[:, None] + col[None, :] * x_stride, mask=mask, other=0).to(COMPUTE)
        i = tl.zeros([ROWS, BLOCK], tl.int64) + col[None, :]
        if MAX:
            y, i = tl.associative_scan((x, i), 1, _later_max)
            y, i = _later_max(carry[:, None], carry_i[:, None], y, i)
        else:
            y, i = tl.associative_scan((x, i), 1, _later_min)
            y, i = _later_min(carry[:, None], carry_i[:, None], y, i)
        carry = tl.sum(tl.where(last, y, 0), axis=1)  # the chunk's last column (padding only after the row's end)
        carry_i = tl.sum(tl.where(last, i, 0), axis=1)
        tl.store(y_ptr + y_row[:, None] + col[None, :] * y_stride, y.to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(i_ptr + y_row[:, None] + col[None, :] * y_stride, i, mask=mask)

def _rows(shape, dim, *tensors):
    """(rows, the other axes' sizes innermost first, and each tensor's strides along them): the
    row layout of tensors shaped like `shape` along dim (their sizes at dim may differ)."""
    others = [d for d in range(len(shape)) if d != dim][::-1]
    sizes = tuple(shape[d] for d in others) or (1,)
    strides = [tuple(t.stride(d) for d in others) or (0,) for t in tensors]
    return math.prod(shape[d] for d in others), sizes, strides


def _row_block(rows, block, elements):
    """Rows per program: `elements` in a program's tile (at least one row, no more than there are)."""
    return max(1, min(next_power_of_2(rows), elements // block))


def sort(x, dim, k=None, descending=False, run=None):
    """(values, int64 indices) of x (float32, float16, bfloat16, int64, int32 or bool; any strides)
    sorted along dim (>= 0), stably: equal elements keep their order; NaN is the largest. k: only
    the first k along dim. Both new tensors are contiguous, x's shape with k at dim. run: merge-sort
    from runs of this length whatever the row's length (tests)."""
    if x.dtype in WIDENED:  # uint8, int8, int16 sort as int32, which holds each value: the same order
        values, indices = sort(copy_(torch.empty(x.shape, dtype=torch.int32, device=x.device), x), dim, k, descending, run)
        return copy_(torch.empty_like(values, dtype=x.dtype), values), indices
    check(x.dtype in SORT_DTYPES, lambda: f"sort: supports {', '.join(map(str, SORT_DTYPES))}, got {x.dtype}")
    check(0 <= dim < x.dim(), lambda: f"sort: dim {dim} out of range for shape {tuple(x.shape)}")
    n = x.shape[dim]
    k = n if k is None else k
    check(0 <= k <= n, lambda: f"sort: k {k} out of range for a dim of {n}")
    if x.dtype != torch.int64:
        return _sort_pass(x, dim, k, descending, 0, run=run)
    if x.numel() == 0:
        return _sort_pass(x, dim, k, descending, 1)
    values, indices = _sort_pass(x, dim, n, descending, 2, _sort_pass(x, dim, n, descending, 1, run=run)[1], run=run)
    if k == n:
        return values, indices
    return values.narrow(dim, 0, k).contiguous(), indices.narrow(dim, 0, k).contiguous()


def _sort_pass(x, dim, k, descending, part, order=None, run=None):
    """One sort by PART's key, into new values and indices: one launch of sort_kernel, or for rows
    longer than LONG_FROM (or where `run` is given) a merge sort from runs of `run` (LONG_RUN)."""
    shape = list(x.shape)
    shape[dim] = k
    values = torch.empty(shape, dtype=x.dtype, device=x.device)
    indices = torch.empty(shape, dtype=torch.int64, device=x.device)
    if values.numel() == 0:
        return values, indices
    n = x.shape[dim]
    rows, sizes, (x_strides, y_strides) = _rows(x.shape, dim, x, values)
    order = indices if order is None else order  # PART 2 reads it; the other parts, any address
    if n > LONG_FROM or run is not None:
        run = LONG_RUN if run is None else run
        keys = torch.empty(rows * n, dtype=torch.int64, device=x.device)
        spare = torch.empty_like(keys)
        units = rows * cdiv(n, run)
        per = _row_block(units, run, 4096)
        sort_runs_kernel[(cdiv(units, per),)](x, order, keys, units, cdiv(n, run), n, x.stride(dim), values.stride(dim),
                                              sizes, x_strides, y_strides, PART=part, DESCENDING=descending,
                                              UNITS=per, RUN=run, num_warps=_warps(run))
        length = run
        while length < n:
            merge_kernel[(cdiv(rows * n, MERGE_BLOCK),)](keys, spare, rows * n, n, length, STEPS=length.bit_length(),
                                                          BLOCK=MERGE_BLOCK)
            keys, spare, length = spare, keys, 2 * length
        unpack_kernel[(cdiv(rows * k, MERGE_BLOCK),)](x, order, keys, values, indices, rows * k, n, k, x.stride(dim),
                                                       values.stride(dim), sizes, x_strides, y_strides, PART=part,
                                                       BLOCK=MERGE_BLOCK)
        return values, indices
    block = max(2, next_power_of_2(n))  # tl.sort wants two elements at least
    per = _row_block(rows, block, 4096)
    sort_kernel[(cdiv(rows, per),)](x, order, values, indices, rows, n, k, x.stride(dim), values.stride(dim), sizes,
                                    x_strides, y_strides, PART=part, DESCENDING=descending, ROWS=per, BLOCK=block,
                                    num_warps=_warps(block))
    return values, indices


def _warps(block):
    """Warps for a program that sorts rows of `block` elements."""
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def unsort(g, indices, shape, dim):
    """A new tensor of `shape` (g's dtype), g at the positions along dim that indices (g's shape,
    int64, distinct along dim) name, 0 elsewhere: the gradient of sort's values."""
    check(g.shape == indices.shape and indices.dtype == torch.int64 and g.device == indices.device,
          lambda: f"unsort: g {tuple(g.shape)} and int64 indices {tuple(indices.shape)} {indices.dtype} must match")
    dx = torch.zeros(shape, dtype=g.dtype, device=g.device)
    k = g.shape[dim]
    if g.numel() == 0:
        return dx
    g = g.contiguous()  # the tape hands g contiguous already
    indices = indices.contiguous()
    rows, sizes, (g_strides, dx_strides) = _rows(g.shape, dim, g, dx)
    block = next_power_of_2(k)
    per = _row_block(rows, block, 4096)
    unsort_kernel[(cdiv(rows, per),)](g, indices, dx, rows, k, g.stride(dim), dx.stride(dim), sizes, g_strides,
                                      dx_strides, ROWS=per, BLOCK=block)
    return dx


def scan(x, dim, op="sum", reverse=False, dtype=None):
    """The running sum (op "sum"), product ("prod") or log-sum-exp ("logsumexp", of floats) of x (any
    strides) along dim (>= 0), from the row's start (or its end: reverse), in fp32 (integers and bools
    in int64), into a new contiguous tensor of dtype (default x's; int64 for integers and bools, as torch)."""
    check(x.dtype in SCAN_DTYPES, lambda: f"scan: supports {', '.join(map(str, SCAN_DTYPES))}, got {x.dtype}")
    check(op in ("sum", "prod") or op == "logsumexp" and x.dtype in FLOATS,
          lambda: f"scan: op must be 'sum', 'prod' or (floats) 'logsumexp', got {op!r} for {x.dtype}")
    check(0 <= dim < x.dim(), lambda: f"scan: dim {dim} out of range for shape {tuple(x.shape)}")
    y = torch.empty(x.shape, dtype=dtype or (x.dtype if x.dtype in FLOATS else torch.int64), device=x.device)
    integer = y.dtype not in FLOATS  # torch computes in the result's dtype
    if y.numel() == 0:
        return y
    n = x.shape[dim]
    rows, sizes, (x_strides, y_strides) = _rows(x.shape, dim, x, y)
    block = min(next_power_of_2(n), SCAN_BLOCK)
    per = _row_block(rows, block, 4 * SCAN_BLOCK)
    scan_kernel[(cdiv(rows, per),)](x, y, rows, n, x.stride(dim), y.stride(dim), sizes, x_strides, y_strides,
                                    OP=op, REVERSE=reverse, COMPUTE=tl.int64 if integer else tl.float32,
                                    ROWS=per, BLOCK=block)
    return y


def scan_extreme(x, dim, largest=True):
    """(values, int64 indices): the running max (largest) or min of x (any strides) along dim (>= 0)
    and where it was taken, as torch's cummax and cummin; new contiguous tensors."""
    check(x.dtype in SCAN_DTYPES, lambda: f"scan_extreme: supports {', '.join(map(str, SCAN_DTYPES))}, got {x.dtype}")
    check(0 <= dim < x.dim(), lambda: f"scan_extreme: dim {dim} out of range for shape {tuple(x.shape)}")
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    i = torch.empty(x.shape, dtype=torch.int64, device=x.device)
    if y.numel() == 0:
        return y, i
    n = x.shape[dim]
    rows, sizes, (x_strides, y_strides) = _rows(x.shape, dim, x, y)
    block = min(next_power_of_2(n), SCAN_BLOCK)
    per = _row_block(rows, block, 4 * SCAN_BLOCK)
    scan_extreme_kernel[(cdiv(rows, per),)](x, y, i, rows, n, x.stride(dim), y.stride(dim), sizes, x_strides, y_strides,
                                            MAX=largest, COMPUTE=tl.float32 if x.dtype in FLOATS else tl.int64,
                                            ROWS=per, BLOCK=block)
    return y, i
