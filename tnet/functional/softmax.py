"""Softmax, log-softmax, cross-entropy and the negative log-likelihood (kernels/softmax.py), in
fp32. The kernels take rows: the op's dim is moved last (a view where the memory allows, as
for dim 1 of a channels-last activation, else a copy)."""
import math
import warnings

import torch

from ..amp import is_autocast_enabled
from ..factory import float32
from ..kernels import pointwise as _pw
from ..kernels import reduce as _reduce
from ..kernels import softmax as _softmax
from ..kernels.copy import copy_
from ..kernels.launch import DTYPE_NAMES, check, check_type
from ..tensor import Tensor, as_dtype, dim_index, in_layout, named, record, tape_mark
from .inputs import check_args, check_tensors, legacy_reduction, numpy_names
from .pointwise import exp, mul, ne, neg, sub, where
from .reduce import mean, one_hot, sum


def _implicit_dim(name, ndim, stacklevel):
    """torch's implicit dim of a softmax called without one (nn.Softmax() in older scripts), with its warning:
    0 for 0-, 1- and 3-D input, else 1."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=stacklevel + 1)
    return 0 if ndim in (0, 1, 3) else 1


def _rows(name, x, dim, dtype):
    """(x cast to dtype, its storage as contiguous rows [R, C] along dim, the moved shape, dim)."""
    check_tensors(name, x=x)
    if dtype is not None:
        dtype = as_dtype(dtype)
        check_type(isinstance(dtype, torch.dtype), lambda: f"{name}(): argument 'dtype' must be torch.dtype, not "
                                                           f"{type(dtype).__name__}")
        x = x.to(dtype)
    if dim is None:
        dim = _implicit_dim(name, x.ndim, 5)  # the caller of softmax's numpy_names wrapper
    d = dim_index(dim, x.ndim)
    X = x.memory.reshape(1) if x.ndim == 0 else x.memory
    moved = X.movedim(d, -1)
    rows = math.prod(moved.shape[:-1])  # not view(-1, C): C may be 0
    return x, moved.contiguous().view(rows, moved.shape[-1]), moved.shape, d


def _back(rows, moved_shape, d, like):
    """Rows [R, C] of a result back in the op's shape, in like's layout: contiguous as torch's result (a copy where
    dim d is not the last: a permuted view would refuse the .view(...) that torch's takes), or channels-last as
    a tnet activation, whose dim 1 the rows are already."""
    return in_layout(rows.view(moved_shape).movedim(-1, d).reshape(like.shape), like.memory)


def _autocast_fp32(x):
    """The output dtype of softmax, log_softmax and the losses: float32 inside a tnet.autocast
    block (torch's autocast runs them in fp32), else x's. They compute in fp32 either way."""
    return float32 if is_autocast_enabled() else x.dtype


def _softmax_op(name, forward, backward, x, dim, dtype):
    x, rows, moved_shape, d = _rows(name, x, dim, dtype)
    if rows.numel() == 0:
        return record(name, torch.empty_like(x.memory), (x,), lambda g: (torch.zeros_like(x.memory),))
    y_rows, in_dtype = forward(rows, _autocast_fp32(x)), x.dtype

    def grad(g):  # g in y's layout: for dim 1 of a channels-last y its rows are contiguous already
        g_rows = (g.reshape(1) if x.ndim == 0 else g).movedim(d, -1).contiguous().view(y_rows.shape)
        return (_back(backward(y_rows, g_rows, in_dtype), moved_shape, d, x),)
    graph = _log_softmax_graph if name == "log_softmax" else _softmax_graph
    return record(name, _back(y_rows, moved_shape, d, x), (x,), grad, saved=(y_rows,),
                  graph=lambda g, y: (graph(g, y, d if x.ndim else ()),))


# the graph backwards (record's graph=) of softmax and log_softmax: g, the output, the op's dim
def _softmax_graph(g, y, d):
    return mul(y, sub(g, sum(mul(g, y), d, keepdim=True)))


def _log_softmax_graph(g, y, d):
    return sub(g, mul(exp(y), sum(g, d, keepdim=True)))


@numpy_names
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Softmax over dim of a tensor of any rank (in fp32; the output in input's dtype, or dtype's
    if given, or fp32 under tnet.autocast). dim None: torch's implicit choice."""
    return _softmax_op("softmax", _softmax.softmax, _softmax.softmax_backward, input, dim, dtype)


def safe_softmax(input, dim):
    """softmax over dim whose rows of all -inf (a query no key may see) give zeros, not NaN: torch's
    _safe_softmax, the weights of scaled_dot_product_attention. Its gradient is softmax's formula (0 in
    such a row, NaN beside a NaN or inf gradient), as torch's."""
    return _softmax_op("safe_softmax", lambda rows, dtype: _softmax.softmax(rows, dtype, safe=True),
                       _softmax.softmax_backward, input, dim, None)


@numpy_names
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) over dim of a tensor of any rank (in fp32; the output in input's dtype, or
    dtype's if given, or fp32 under tnet.autocast). dim None: torch's implicit choice."""
    return _softmax_op("log_softmax", _softmax.log_softmax, _softmax.log_softmax_backward, input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) over dim, as torch's (dtype: cast before the negation)."""
    check_tensors("softmin", input=input)
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, 2)
    return softmax(neg(input if dtype is None else input.to(dtype)), dim)


def _check_reduction(name, reduction):
    check(reduction in ("mean", "sum", "none"), lambda: f"{name}: {reduction!r} is not a valid value for reduction")


def _nll(input, target, weight, ignore_index, reduction):
    """nll_loss, and the device sum of the weights of the rows not ignored (the mean's divisor)."""
    check_tensors("nll_loss", input=input, target=target)
    check_type(weight is None or isinstance(weight, Tensor), "nll_loss: weight must be a tnet.Tensor or None")
    check(target.dtype == torch.int64, lambda: f"nll_loss: target must be int64 class indices, got {target.dtype}")
    check(input.ndim >= 1, "nll_loss: input must have at least 1 dimension")
    cdim = 0 if input.ndim == 1 else 1
    C = input.shape[cdim]
    expect = input.shape[:cdim] + input.shape[cdim + 1:]
    check(target.shape == expect,
          lambda: f"nll_loss: target is {target.shape}, expected {expect} for input {input.shape}")
    if weight is not None:  # its shape, then its dtype: input's (both fp32 under autocast), as torch's kernels
        check(weight.shape == (C,), lambda: f"weight tensor should be defined either for all {C} classes or no "
                                            f"classes but got weight tensor of shape: {list(weight.shape)}")
        check(weight.dtype == input.dtype or is_autocast_enabled(),
              lambda: f"expected scalar type {DTYPE_NAMES[input.dtype]} but found {DTYPE_NAMES[weight.dtype]}")
    X = input.memory.reshape(1, C) if input.ndim == 1 else input.memory
    moved = X.movedim(1, -1)
    rows = moved.reshape(-1, C)  # a view where the memory allows; the kernel takes strides
    labels = target.memory.reshape(-1).contiguous()
    W = None if weight is None else weight.memory.contiguous()
    loss, wt = _softmax.nll_loss(rows, labels, W, ignore_index)
    dtype = _autocast_fp32(input)
    if reduction == "none":
        out, total = loss.view(target.shape), None
    else:
        out = _reduce.reduce(loss, (0,)).view(())
        total = _reduce.reduce(wt, (0,)).view(())
        if reduction == "mean":  # every row ignored: 0 / 0, NaN, as torch
            out = _pw.pointwise("div", out, total)
    y = _cast(out, dtype)
    shape, R = input.shape, rows.shape[0]

    def backward(g):  # -wt[r] g[r] (wt times g / total for the mean, torch's order) at each row's label, 0 elsewhere
        g = g.reshape(-1) if reduction == "none" else g.reshape(1)
        s = _pw.pointwise("mul", wt, _pw.pointwise("div", g, total) if reduction == "mean" else g)
        if reduction == "mean":  # an ignored row's 0 / 0 (every row's weight 0) is 0 in torch, not NaN
            s = _pw.pointwise("where", _pw.pointwise("eq", labels, ignore_index), 0.0, s)
        d_rows = _pw.route(_pw.pointwise("neg", s).view(R, 1), labels.view(R, 1), (R, C), 1)
        return (d_rows.view(moved.shape).movedim(-1, 1).reshape(shape),)

    def graph(g, out):  # linear in g: backward's gradient for g = 1, times g
        ones = backward(torch.ones_like(g.memory))[0]
        return (mul(Tensor(ones), g if reduction != "none" or input.ndim == 1 else g.unsqueeze(1)),)
    return record("nll_loss", y, (input,), backward, saved=(labels,), graph=graph), total


def _cast(x, dtype):
    """x (a torch tensor) in dtype, through tnet's copy kernel."""
    return x if x.dtype == dtype else copy_(torch.empty_like(x, dtype=dtype), x)


def _class_indices(target):
    """target's class indices in int64: torch's losses take int64 and uint8 targets (labels that np.frombuffer
    read from MNIST's idx files are uint8); uint8 ones are copied to int64, others left to the checks."""
    return target.to(torch.int64) if target.dtype == torch.uint8 else target


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] * weight[target[n]] for input [N, C] (log-probabilities), [C] or
    [N, C, d1, ...] and int64 target [N] ([], [N, d1, ...]); reduction 'mean' divides by the
    weights of the targets not ignored (NaN if all are), 'sum' or 'none', as torch. A target
    outside [0, C), other than ignore_index, raises IndexError (InputIndexError)."""
    check_args("nll_loss", "int", ignore_index=ignore_index)
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction("nll_loss", reduction)
    return _nll(input, _class_indices(target), weight, ignore_index, reduction)[0]


def _reduced(loss, reduction):
    return loss if reduction == "none" else sum(loss) if reduction == "sum" else mean(loss)


def _cross_entropy_graph(g, input, target, label_smoothing, reduction, ignore_index):
    """The fused cross-entropy's input gradient on tnet Tensors (record's graph=): (softmax(x) - q)
    times each row's g, 0 on ignored rows, over their count for the mean; q the smoothed one-hot target."""
    C = input.shape[1]
    valid = ne(target, ignore_index)
    q = one_hot(where(valid, target, 0), C) * (1 - label_smoothing) + label_smoothing / C
    scale = where(valid, g, 0.0)
    if reduction == "mean":
        scale = scale / sum(valid)
    return mul(sub(softmax(input, 1), q), scale.unsqueeze(1))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross-entropy of logits input [N, C] ([C], or [N, C, d1, ...]) against int64 class indices
    target [N] ([], [N, d1, ...]), or against class probabilities (a float target of input's
    shape), with weight, ignore_index (class indices only), reduction and label_smoothing as
    torch (and its deprecated size_average and reduce). A target outside [0, C),
    other than ignore_index, raises IndexError (InputIndexError, also a ValueError) as torch's: on the
    CPU at once, on a GPU at a later loss call or host read, without a synchronisation (launch.check_flag);
    inside a captured CUDA graph it is flagged on the device instead (see
    kernels.softmax.take_label_error). For [N, C] logits with class indices and no weight, the
    loss and its gradient come out of one fused kernel, in fp32; other cases are log_softmax
    and nll_loss (or, for probabilities, a product and sums). The loss has input's dtype (fp32
    under tnet.autocast, as torch's), the gradient input's."""
    check_args("cross_entropy", "int", ignore_index=ignore_index)
    check_tensors("cross_entropy", input=input, target=target)
    check_type(weight is None or isinstance(weight, Tensor), "cross_entropy: weight must be a tnet.Tensor or None")
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction("cross_entropy", reduction)
    check(label_smoothing <= 1.0,  # torch's check: a negative one is taken, and smooths nothing
          lambda: f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    label_smoothing = label_smoothing if label_smoothing > 0 else 0.0
    check(input.ndim >= 1, "cross_entropy: input must have at least 1 dimension")
    cdim = 0 if input.ndim == 1 else 1
    C = input.shape[cdim]
    w = None if weight is None else weight.reshape(C, *[1] * (input.ndim - cdim - 1))  # along the class dim
    if target.memory.is_floating_point():  # class probabilities
        check(target.shape == input.shape,
              lambda: f"cross_entropy: target must be int64 labels or class probabilities of "
                      f"input's shape {input.shape}, got {target.dtype} {target.shape}")
        # torch refuses only a non-negative ignore_index here (any negative one can name no class)
        check(ignore_index < 0, "ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / C
        terms = mul(log_softmax(input, cdim), target)
        mark = tape_mark()  # torch's node: its loss's last op, a division by the count for the mean, else a negation
        loss = _reduced(neg(sum(terms if w is None else mul(terms, w), cdim)), reduction)
        return named({"mean": "div_number", "sum": "neg"}.get(reduction, "neg"), mark, loss)
    target = _class_indices(target)
    if input.ndim == 2 and weight is None:
        # strided logits or labels (a transpose, a slice) copied dense: the fused kernel reads rows
        loss, dlogits = _softmax.cross_entropy(input.memory.contiguous(), target.memory.contiguous(), label_smoothing,
                                               reduction, ignore_index, dtype=_autocast_fp32(input))
        graph = lambda g, out: (_cross_entropy_graph(g, input, target, label_smoothing, reduction, ignore_index),)
        op = "cross_entropy" if label_smoothing == 0 else "cross_entropy_smoothed"  # torch's nll's node, or its sum's
        if reduction == "none":
            return record(op, loss, (input,), lambda g: (_softmax.scale_rows_(dlogits, g),), graph=graph)
        return record(op, loss, (input,), lambda g: (_pw.scale_(dlogits, g.reshape(1)),), graph=graph)
    logp = log_softmax(input, cdim)
    nll, total = _nll(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return nll
    # torch's smoothing term: -sum_c weight[c] logp[c] / C per element, 0 where ignored; its mean is
    # over the weights of the targets not ignored, as nll's
    smooth = neg(sum(logp if w is None else mul(logp, w), cdim))
    smooth = where(target != ignore_index, smooth, 0.0)
    if reduction != "none":
        smooth = sum(smooth)
        if reduction == "mean":  # over the count in the loss's dtype (an fp32 total would promote a 0-d 16-bit loss)
            smooth = smooth / Tensor(total).to(smooth.dtype)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / C)
