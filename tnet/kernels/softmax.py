"""Row softmax and log-softmax forward and backward, fused softmax + cross-entropy (with the
label check), the negative log-likelihood's per-row terms, and the count of correct predictions. Rows are short (the classes), so a program holds whole rows.
Tensors are float32, float16 or bfloat16, computed in fp32; an output takes its first input's
dtype unless the launcher's `dtype` says otherwise (tnet.autocast's fp32 softmax and losses)."""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import autotune, fit, jit, launch_kept
from .launch import FLOATS, InputIndexError, cdiv, check, check_flag, check_float, next_power_of_2, raise_flagged, take_flag
from .reduce import sum_except

_CONFIGS = [triton.Config({"ROWS": 64}, num_warps=4), triton.Config({"ROWS": 16}, num_warps=2),
            triton.Config({"ROWS": 128}, num_warps=4), triton.Config({"ROWS": 4}, num_warps=1)]
# Triton's largest block, in elements; rows wider than WIDE_COLS take a program each (the tuned
# configs hold up to 128 rows, the interpreter's 1024)
MAX_BLOCK = 1 << 20
WIDE_COLS = MAX_BLOCK // (1024 if INTERPRET else 128)
# Padding lanes hold -inf (a finite -3e38 would count against a row of -3e38s), set in fp32 after
# the load; a row of all -inf then gives NaN, as torch, and rows past R are never stored.
NEG = tl.constexpr(float("-inf"))
# cross_entropy_kernel's rows per program hold up to this many logits (128 of CIFAR-10's rows):
# a small batch's loss in one program, with its sum written directly
CE_STEP = 2048


@triton.jit
def _load_rows(x_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    mask = (rows < R)[:, None] & (cols < C)[None, :]
    offs = rows.to(tl.int64)[:, None] * C + cols[None, :]
    x = tl.where(mask, tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32), NEG)
    return x, rows, cols, offs, mask


@triton.jit
def _softmax(x):
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    return e / tl.sum(e, axis=1)[:, None]


@autotune(_CONFIGS, key=["R", "C"], interpret={"ROWS": fit("R", 1024)})
@triton.jit
def softmax_kernel(x_ptr, y_ptr, R, C, SAFE: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):
    """y [R, C] = softmax of each row of x [R, C]; SAFE: a row of all -inf gives zeros (torch's _safe_softmax,
    attention's), else NaN."""
    x, _, _, offs, mask = _load_rows(x_ptr, R, C, ROWS, COLS)
    y = _softmax(x)
    if SAFE:  # counted, not by the row's max: a GPU max may pass over a NaN, whose row stays NaN
        y = tl.where((tl.sum((x != NEG).to(tl.int32), axis=1) == 0)[:, None], 0.0, y)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@autotune(_CONFIGS, key=["R", "C"], interpret={"ROWS": fit("R", 1024)})
@triton.jit
def softmax_backward_kernel(y_ptr, dy_ptr, dx_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    """dx = y * (dy - sum(dy * y)) row by row, from the softmax output y."""
    y, _, _, offs, mask = _load_rows(y_ptr, R, C, ROWS, COLS)
    y = tl.where(mask, y, 0.0)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@jit
def cross_entropy_kernel(x_ptr, label_ptr, loss_ptr, dx_ptr, bad_ptr, R, C, smoothing, ignore_index,
                         ROWS: tl.constexpr, COLS: tl.constexpr, REDUCTION: tl.constexpr,
                         LABELS: tl.constexpr):
    """Per row of x [R, C], loss = logsumexp(x) - sum(target * x), target = (1 - smoothing) *
    onehot(label) + smoothing / C, and dx = softmax(x) - target; rows whose label is
    ignore_index give loss 0 and dx softmax(x) * 0 (NaN where softmax is). A program takes ROWS
    rows. REDUCTION 0 ("none"): loss [R] holds each row's; 1 ("sum") and 2 ("mean"): loss
    [programs] holds each program's sum (the mean's share: each program counts the rows not
    ignored, LABELS labels a step), for a
    fixed-order sum after, and dx is scaled to match. A label outside [0, C) sets bad [2] =
    (1, label) unless already set: the flag stays on the device, so a captured CUDA graph needs
    no host read per step (two programs may race to set it: either one's label is a bad one)."""
    scale = 1.0
    if REDUCTION == 2:
        n = 0
        for start in range(0, R, LABELS):
            every = start + tl.arange(0, LABELS)
            n += tl.sum((tl.load(label_ptr + every, mask=every < R, other=ignore_index) != ignore_index).to(tl.int32),
                        axis=0)
        scale = 1.0 / n.to(tl.float32)  # every label ignored: 0 * inf = NaN, as torch
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    label = tl.load(label_ptr + rows, mask=rows < R, other=ignore_index)
    row_ok = (rows < R) & (label != ignore_index)
    out_of_range = row_ok & ((label < 0) | (label >= C))
    inside = (rows < R)[:, None] & (cols < C)[None, :]
    mask = row_ok[:, None] & inside
    offs = rows.to(tl.int64)[:, None] * C + cols[None, :]
    # ignored rows are read too: their dx is softmax * 0, NaN beside a NaN or +inf, as torch's log_softmax backward
    x = tl.where(inside, tl.load(x_ptr + offs, mask=inside, other=0.0).to(tl.float32), NEG)
    onehot = (cols[None, :] == label[:, None]) & mask
    m = tl.max(x, axis=1)
    e = tl.exp(x - m[:, None])
    s = tl.sum(e, axis=1)
    target = tl.where(onehot, 1.0 - smoothing, 0.0) + tl.where(mask, smoothing / C, 0.0)
    # target sums to 1, so the loss is log(s) - sum(target * (x - m)): m + log(s) - sum(target * x)
    # loses log(s) beside a huge m (3e38 + log 4 - 3e38 = 0). In torch's order: (1 - smoothing) times the
    # label's term plus smoothing / C times the row's sum, which overflows to -inf as torch's sum of
    # log_softmax does (three logits near -3e38 beside a 3e38); no smoothing adds no sum (no 0 * -inf)
    shifted = tl.where(mask, x - m[:, None], 0.0)
    picked = tl.sum(tl.where(onehot, shifted, 0.0), axis=1) * (1.0 - smoothing)
    picked += tl.where(smoothing > 0.0, tl.sum(shifted, axis=1) * (smoothing / C), 0.0)
    row_loss = tl.where(row_ok, tl.log(s) - picked, 0.0)
    if REDUCTION == 0:
        tl.store(loss_ptr + rows, row_loss.to(loss_ptr.dtype.element_ty), mask=rows < R)
    else:
        tl.store(loss_ptr + tl.program_id(0), (tl.sum(row_loss, axis=0) * scale).to(loss_ptr.dtype.element_ty))
    p = e / s[:, None]
    dx = tl.where(mask, (p - target) * scale, p * 0.0)
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=(rows < R)[:, None] & (cols < C)[None, :])
    first_bad = tl.min(tl.where(out_of_range, rows, R), axis=0)
    if first_bad < R:
        if tl.load(bad_ptr) == 0:
            tl.store(bad_ptr, 1)
            tl.store(bad_ptr + 1, tl.load(label_ptr + first_bad))


@jit
def scale_rows_kernel(x_ptr, s_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    """x [R, C] *= s [R] row by row (the backward of a per-row loss)."""
    _, rows, _, offs, mask = _load_rows(x_ptr, R, C, ROWS, COLS)
    s = tl.load(s_ptr + rows, mask=rows < R, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(x_ptr + offs, (x * s[:, None]).to(x_ptr.dtype.element_ty), mask=mask)


@autotune(_CONFIGS, key=["R", "C"], interpret={"ROWS": fit("R", 1024)})
@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    """y [R, C] = x - logsumexp of each row of x."""
    x, _, _, offs, mask = _load_rows(x_ptr, R, C, ROWS, COLS)
    m = tl.max(x, axis=1)
    shifted = x - m[:, None]  # (x - m) - log(s), not x - (m + log(s)): that loses log(s) beside a large m
    tl.store(y_ptr + offs, (shifted - tl.log(tl.sum(tl.exp(shifted), axis=1))[:, None]).to(y_ptr.dtype.element_ty), mask=mask)


@autotune(_CONFIGS, key=["R", "C"], interpret={"ROWS": fit("R", 1024)})
@triton.jit
def log_softmax_backward_kernel(y_ptr, dy_ptr, dx_ptr, R, C, ROWS: tl.constexpr, COLS: tl.constexpr):
    """dx = dy - exp(y) * sum(dy) row by row, from the log-softmax output y."""
    y, _, _, offs, mask = _load_rows(y_ptr, R, C, ROWS, COLS)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dx = dy - tl.exp(y) * tl.sum(dy, axis=1)[:, None]
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@jit
def count_correct_kernel(x_ptr, label_ptr, count_ptr, R, C, weights, ROWS: tl.constexpr, COLS: tl.constexpr):
    """count[0] += number of rows r < R whose first largest logit is at label[r], the logits of row r
    being sum_v weights[v] * x[v*R + r] (x [V*R, C], V views of each row, as test-time augmentation's).
    A row holding a NaN picks its first NaN, as torch's argmax."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    mask = (rows < R)[:, None] & (cols < C)[None, :]
    x = tl.zeros((ROWS, COLS), tl.float32)
    for v in tl.static_range(len(weights)):
        offs = (v * R + rows).to(tl.int64)[:, None] * C + cols[None, :]
        x += weights[v] * tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    x = tl.where(mask, x, NEG)
    isnan = x != x
    m = tl.max(tl.where(isnan, NEG, x), axis=1)  # tl.max drops NaN on the GPU, keeps it in the interpreter
    first = tl.min(tl.where((x == m[:, None]) & mask, cols[None, :], COLS), axis=1)
    first_nan = tl.min(tl.where(isnan, cols[None, :], COLS), axis=1)
    first = tl.where(first_nan < COLS, first_nan, first)
    label = tl.load(label_ptr + rows, mask=rows < R, other=-1)
    tl.atomic_add(count_ptr, tl.sum((first == label).to(tl.int32), axis=0))


@jit
def nll_loss_kernel(x_ptr, label_ptr, w_ptr, loss_ptr, wt_ptr, bad_ptr, R, C, stride_r, stride_c, ignore_index,
                    HAS_W: tl.constexpr, BLOCK: tl.constexpr):
    """Per row r < R of x [R, C] (strides stride_r, stride_c): wt[r] = weight[label[r]] (1 without
    weights) and loss[r] = -wt[r] * x[r, label[r]], both 0 where the label is ignore_index. A label
    outside [0, C) counts as ignored and sets bad, as in cross_entropy_kernel."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_rows = rows < R
    label = tl.load(label_ptr + rows, mask=in_rows, other=ignore_index)
    kept = in_rows & (label != ignore_index)
    valid = kept & (label >= 0) & (label < C)
    x = tl.load(x_ptr + rows.to(tl.int64) * stride_r + label * stride_c, mask=valid, other=0.0).to(tl.float32)
    if HAS_W:
        w = tl.load(w_ptr + label, mask=valid, other=0.0).to(tl.float32)
    else:
        w = tl.where(valid, 1.0, 0.0)
    tl.store(loss_ptr + rows, tl.where(valid, -w * x, 0.0), mask=in_rows)
    tl.store(wt_ptr + rows, w, mask=in_rows)
    first_bad = tl.min(tl.where(kept & ~valid, rows, R), axis=0)
    if first_bad < R:
        if tl.load(bad_ptr) == 0:
            tl.store(bad_ptr, 1)
            tl.store(bad_ptr + 1, tl.load(label_ptr + first_bad))


def _check_rows(name, x):
    check(x.dim() == 2, lambda: f"{name}: expected a 2-D [rows, classes] tensor, got shape {tuple(x.shape)}")
    check_float(name, x)
    check(x.is_contiguous(), lambda: f"{name}: expected a contiguous tensor, got strides {x.stride()}")
    R, C = x.shape
    return R, C, next_power_of_2(C)


def _check_labels(name, x, labels):
    check(labels.dtype == torch.int64 and labels.dim() == 1 and labels.shape[0] == x.shape[0],
          lambda: f"{name}: labels must be int64 of shape ({x.shape[0]},), got {tuple(labels.shape)} {labels.dtype}")
    check(labels.device == x.device, lambda: f"{name}: logits on {x.device} but labels on {labels.device}")
    check(labels.is_contiguous(), lambda: f"{name}: labels must be contiguous")


def _row_grid(R):
    return lambda meta: (cdiv(R, meta["ROWS"]),)


def _rows_op(kernel, name, *xs, dtype=None, **constexprs):
    """kernel over the [R, C] tensors xs into a new one of dtype (None: xs[0]'s); constexprs: the kernel's own."""
    R, C, COLS = _check_rows(name, xs[0])
    check(dtype is None or dtype in FLOATS, lambda: f"{name}: dtype must be float32, float16 or bfloat16, got {dtype}")
    for x in xs[1:]:
        check_float(name, x, "the gradient")
        check(x.shape == xs[0].shape and x.is_contiguous(),
              lambda: f"{name}: gradient is {tuple(x.shape)}, expected {tuple(xs[0].shape)}")
    out = torch.empty_like(xs[0], dtype=dtype)
    if COLS > WIDE_COLS:  # the tuned ROWS x COLS would pass Triton's largest block: a row a program
        check(COLS <= MAX_BLOCK, lambda: f"{name}: at most {MAX_BLOCK} classes, got {C}")
        kernel.jitted[(R,)](*xs, out, R, C, ROWS=1, COLS=COLS, **constexprs)
    else:
        kernel[_row_grid(R)](*xs, out, R, C, COLS=COLS, **constexprs)
    return out


def softmax(x, dtype=None, safe=False):
    """Rows' softmax; safe: a row of all -inf gives zeros, as torch's _safe_softmax (attention's)."""
    return _rows_op(softmax_kernel, "softmax", x, dtype=dtype, SAFE=bool(safe))


def softmax_backward(y, dy, dtype=None):
    """dx for the output y and its gradient dy, of dtype (None: y's), the input's."""
    return _rows_op(softmax_backward_kernel, "softmax backward", y, dy, dtype=dtype)


def log_softmax(x, dtype=None):
    return _rows_op(log_softmax_kernel, "log_softmax", x, dtype=dtype)


def log_softmax_backward(y, dy, dtype=None):
    return _rows_op(log_softmax_backward_kernel, "log_softmax backward", y, dy, dtype=dtype)


_label_flags = {}  # device -> int64 [2]: (a label was out of range, that label)


def _label_flag(device):
    if device not in _label_flags:
        _label_flags[device] = torch.zeros(2, dtype=torch.int64, device=device)
    return _label_flags[device]


def take_label_error(device):
    """The out-of-range label a cross_entropy on `device` has met since the last call, or None;
    clears the flag. Reads the device (a synchronisation): train.py calls it once an epoch."""
    return take_flag(_label_flag(device))


def _raise_label_error(name, x, C, ignore_index):
    """After a loss's launch: a label out of range raises InputIndexError, an IndexError as torch's, on the CPU
    at once, on a GPU at a later loss call or host read (launch.check_flag)."""
    check_flag(_label_flag(x.device), lambda bad: InputIndexError(
        f"{name}: target {bad} is out of bounds (labels must be in [0, {C}) or ignore_index {ignore_index})"))


REDUCTIONS = ("none", "sum", "mean")  # cross_entropy_kernel's REDUCTION is the index


def cross_entropy(x, labels, label_smoothing=0.0, reduction="mean", ignore_index=-100, dtype=None):
    """Returns (loss, gradient of the loss w.r.t. x): loss is a 0-d tensor for reduction "mean"
    or "sum", one value per row for "none" (the gradient is then each row's own), of dtype
    (None: x's); the gradient has x's dtype. Rows labelled
    ignore_index count for nothing. Outside a CUDA graph capture, a label outside [0, classes)
    (negative ones too) raises InputIndexError, an IndexError as torch's: on the CPU at once, on a GPU
    at a later loss call or host read, without a synchronisation (launch.check_flag); inside one, the
    flag waits for take_label_error."""
    R, C, COLS = _check_rows("cross_entropy", x)
    _check_labels("cross_entropy", x, labels)
    check(label_smoothing <= 1.0,  # torch's check: a negative one is taken
          lambda: f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    check(reduction in REDUCTIONS,
          lambda: f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    check(dtype is None or dtype in FLOATS,
          lambda: f"cross_entropy: dtype must be float32, float16 or bfloat16, got {dtype}")
    if R == 0:  # an empty batch, as torch's: no losses, a sum of 0, a mean of 0 / 0
        fill = float("nan") if reduction == "mean" else 0.0
        return torch.full((0,) if reduction == "none" else (), fill, device=x.device, dtype=dtype or x.dtype), torch.empty_like(x)
    raise_flagged(x.device)
    loss = torch.empty((R,) if reduction == "none" else (), device=x.device, dtype=dtype or x.dtype)
    dx = torch.empty_like(x)
    rows = min(next_power_of_2(R), max(1, CE_STEP // COLS))
    programs = cdiv(R, rows)
    # one program's sum is the loss; more programs' are added after, in a fixed order
    sums = loss.view(-1) if reduction == "none" or programs == 1 else \
        torch.empty(programs, device=x.device, dtype=torch.float32)
    launch_kept(_BOUND, (cross_entropy_kernel, R, C, int(ignore_index), reduction, x.dtype, sums.dtype),
                cross_entropy_kernel, (programs,),
                (x, labels, sums, dx, _label_flag(x.device), R, C, float(label_smoothing), int(ignore_index)),
                dict(ROWS=rows, COLS=COLS, REDUCTION=REDUCTIONS.index(reduction), LABELS=min(next_power_of_2(R), 4096)))
    if reduction != "none" and programs > 1:
        sum_except(sums.view(programs, 1), 1, out=loss.view(1))
    _raise_label_error("cross_entropy", x, C, ignore_index)
    return loss, dx


_BOUND = {}  # cross_entropy_kernel's Bound launches (autotune.launch_kept) by sizes and arguments


NLL_BLOCK = 1024  # rows per program: one load of a label, a weight and a logit per row


def nll_loss(x, labels, weight=None, ignore_index=-100):
    """The negative log-likelihood's terms of x [R, C] (any strides; log-probabilities) at int64
    labels [R]: (loss [R], wt [R]), fp32, loss[r] = -weight[label] * x[r, label] and wt[r] =
    weight[label] (1 without weights), both 0 for rows labelled ignore_index. A label outside
    [0, C) raises InputIndexError as cross_entropy's (in a CUDA graph capture, see take_label_error)."""
    check(x.dim() == 2, lambda: f"nll_loss: expected [rows, classes], got shape {tuple(x.shape)}")
    check_float("nll_loss", x)
    _check_labels("nll_loss", x, labels)
    R, C = x.shape
    check(weight is None or (weight.shape == (C,) and weight.dtype in FLOATS and weight.is_contiguous()
                             and weight.device == x.device),
          lambda: f"nll_loss: weight must be a contiguous float ({C},) on {x.device}, got {tuple(weight.shape)} {weight.dtype}")
    check(R * max(abs(x.stride(0)), 1) < 2**62, "nll_loss: offsets too large")
    loss = torch.empty(R, device=x.device, dtype=torch.float32)
    wt = torch.empty(R, device=x.device, dtype=torch.float32)
    if R:
        raise_flagged(x.device)
        nll_loss_kernel[(cdiv(R, NLL_BLOCK),)](x, labels, x if weight is None else weight, loss, wt,
                                               _label_flag(x.device), R, C, x.stride(0), x.stride(1),
                                               int(ignore_index), HAS_W=weight is not None, BLOCK=NLL_BLOCK)
        _raise_label_error("nll_loss", x, C, ignore_index)
    return loss, wt


def scale_rows_(x, s):
    """x [R, C] *= s [R] in place, row by row; returns x."""
    R, C, COLS = _check_rows("scale_rows_", x)
    check(s.shape == (R,) and s.dtype in FLOATS and s.is_contiguous(),
          lambda: f"scale_rows_: s must be a contiguous float ({R},), got {tuple(s.shape)} {s.dtype}")
    ROWS = max(1, 2048 // COLS)
    scale_rows_kernel[(cdiv(R, ROWS),)](x, s, R, C, ROWS=ROWS, COLS=COLS)
    return x


def count_correct(x, labels, count, weights=(1.0,)):
    """Add to count (an int32 device scalar) the rows whose argmax equals the label. With V weights,
    x [V*R, C] holds V views of R rows (view v's rows at v*R ...), and a row's logits are the
    weighted sum of its views' (test-time augmentation); labels [R]."""
    _, C, COLS = _check_rows("count_correct", x)
    weights = tuple(map(float, weights))
    check(len(weights) > 0 and x.shape[0] % len(weights) == 0,
          lambda: f"count_correct: {x.shape[0]} rows are not {len(weights)} views of a batch")
    R = x.shape[0] // len(weights)
    _check_labels("count_correct", x[:R], labels)
    ROWS = max(1, 2048 // COLS)
    count_correct_kernel[(cdiv(R, ROWS),)](x, labels, count, R, C, weights, ROWS=ROWS, COLS=COLS)
