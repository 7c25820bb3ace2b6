"""Row softmax forward and backward, fused softmax + cross-entropy, and the count of
correct predictions. Rows are short (the classes), so a program holds whole rows."""
import torch
import triton
import triton.language as tl

from ._autotune import autotune, cdiv, check

_CONFIGS = [triton.Config({"ROWS": 64}, num_warps=4), triton.Config({"ROWS": 16}, num_warps=2),
            triton.Config({"ROWS": 128}, num_warps=4), triton.Config({"ROWS": 4}, num_warps=1)]
# Padding lanes hold a large finite negative, not -inf, so that empty rows give no NaN.
NEG = tl.constexpr(-3.0e38)
# cross_entropy_kernel's program reads up to this many logits per step: a batch of 1024 x 10
# is one step (23 us on the H200, against 30 in eight steps of 128 rows)
CE_STEP = 16384


@triton.jit
def _load_rows(x_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    mask = (rows < R)[:, None] & (cols < C)[None, :]
    offs = rows.to(tl.int64)[:, None] * C + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=NEG).to(tl.float32)
    return x, rows, cols, offs, mask


@triton.jit
def _softmax(x):
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    return e / tl.sum(e, axis=1)[:, None]


@autotune(_CONFIGS, key=["R", "C"], interpret={"ROWS": 1024})
@triton.jit
def softmax_kernel(x_ptr, y_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    """y [R, C] = softmax of each row of x [R, C]."""
    x, _, _, offs, mask = _load_rows(x_ptr, R, C, ROWS, COLS)
    tl.store(y_ptr + offs, _softmax(x), mask=mask)


@autotune(_CONFIGS, key=["R", "C"], interpret={"ROWS": 1024})
@triton.jit
def softmax_backward_kernel(y_ptr, dy_ptr, dx_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    """dx = y * (dy - sum(dy * y)) row by row, from the softmax output y."""
    y, _, _, offs, mask = _load_rows(y_ptr, R, C, ROWS, COLS)
    y = tl.where(mask, y, 0.0)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0)
    tl.store(dx_ptr + offs, y * (dy - tl.sum(dy * y, axis=1)[:, None]), mask=mask)


@triton.jit
def cross_entropy_kernel(x_ptr, label_ptr, loss_ptr, dx_ptr, R, C, smoothing,
                         ROWS: tl.constexpr, COLS: tl.constexpr):
    """loss[0] = mean over rows of logsumexp(x) - sum(target * x), target = (1 - smoothing) *
    onehot(label) + smoothing / C; dx = (softmax(x) - target) / R. One program walks all
    rows, so the mean needs no second launch and is deterministic."""
    total = tl.zeros((ROWS,), dtype=tl.float32)
    for start in range(0, R, ROWS):
        rows = start + tl.arange(0, ROWS)
        cols = tl.arange(0, COLS)
        row_ok = rows < R
        mask = row_ok[:, None] & (cols < C)[None, :]
        offs = rows.to(tl.int64)[:, None] * C + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=NEG)
        label = tl.load(label_ptr + rows, mask=row_ok, other=0)
        onehot = cols[None, :] == label[:, None]
        m = tl.max(x, axis=1)
        e = tl.exp(x - m[:, None])
        s = tl.sum(e, axis=1)
        target = tl.where(onehot, 1.0 - smoothing, 0.0) + tl.where(mask, smoothing / C, 0.0)
        picked = tl.sum(tl.where(mask, target * x, 0.0), axis=1)
        total += tl.where(row_ok, m + tl.log(s) - picked, 0.0)
        grad = (e / s[:, None] - target) / R
        tl.store(dx_ptr + offs, grad, mask=mask)
    tl.store(loss_ptr, tl.sum(total, axis=0) / R)


@triton.jit
def count_correct_kernel(x_ptr, label_ptr, count_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    """count[0] += number of rows whose first largest logit is at the label."""
    x, rows, cols, _, mask = _load_rows(x_ptr, R, C, ROWS, COLS)
    m = tl.max(x, axis=1)
    first = tl.min(tl.where((x == m[:, None]) & mask, cols[None, :], COLS), axis=1)
    label = tl.load(label_ptr + rows, mask=rows < R, other=-1)
    tl.atomic_add(count_ptr, tl.sum((first == label).to(tl.int32), axis=0))


def _check_rows(name, x):
    check(x.dim() == 2, f"{name}: expected a 2-D [rows, classes] tensor, got shape {tuple(x.shape)}")
    check(x.dtype == torch.float32, f"{name}: expected float32, got {x.dtype}")
    check(x.is_contiguous(), f"{name}: expected a contiguous tensor, got strides {x.stride()}")
    R, C = x.shape
    return R, C, triton.next_power_of_2(C)


def _check_labels(name, x, labels):
    check(labels.dtype == torch.int64 and labels.dim() == 1 and labels.shape[0] == x.shape[0],
          f"{name}: labels must be int64 of shape ({x.shape[0]},), got {tuple(labels.shape)} {labels.dtype}")
    check(labels.device == x.device, f"{name}: logits on {x.device} but labels on {labels.device}")
    check(labels.is_contiguous(), f"{name}: labels must be contiguous")


def _row_grid(R):
    return lambda meta: (cdiv(R, meta["ROWS"]),)


def softmax(x):
    R, C, COLS = _check_rows("softmax", x)
    y = torch.empty_like(x)
    softmax_kernel[_row_grid(R)](x, y, R, C, COLS=COLS)
    return y


def softmax_backward(y, dy):
    R, C, COLS = _check_rows("softmax backward", y)
    check(dy.shape == y.shape and dy.is_contiguous(), f"softmax backward: dy is {tuple(dy.shape)}, y is {tuple(y.shape)}")
    dx = torch.empty_like(y)
    softmax_backward_kernel[_row_grid(R)](y, dy, dx, R, C, COLS=COLS)
    return dx


def cross_entropy(x, labels, label_smoothing=0.0):
    """Returns (mean loss as a one-element tensor, gradient of the mean loss w.r.t. x)."""
    R, C, COLS = _check_rows("cross_entropy", x)
    _check_labels("cross_entropy", x, labels)
    check(R > 0, "cross_entropy: empty batch")
    check(0.0 <= label_smoothing < 1.0, f"cross_entropy: label_smoothing must be in [0, 1), got {label_smoothing}")
    loss = torch.empty((), device=x.device, dtype=torch.float32)
    dx = torch.empty_like(x)
    rows = min(triton.next_power_of_2(R), max(1, CE_STEP // COLS))
    cross_entropy_kernel[(1,)](x, labels, loss, dx, R, C, float(label_smoothing), ROWS=rows, COLS=COLS,
                               num_warps=16 if rows * COLS >= 8192 else 4)
    return loss, dx


def count_correct(x, labels, count):
    """Add to count (an int32 device scalar) the rows whose argmax equals the label."""
    R, C, COLS = _check_rows("count_correct", x)
    _check_labels("count_correct", x, labels)
    ROWS = max(1, 2048 // COLS)
    count_correct_kernel[(cdiv(R, ROWS),)](x, labels, count, R, C, ROWS=ROWS, COLS=COLS)
