"""torch.nn.functional's ops that tnet composes of its other ops, whose gradients they carry: the
margin, multi-label, Poisson and Gaussian losses, triplet_margin_with_distance_loss, pdist and
embedding_bag; and torch.stft in its real form. No kernels of their own."""
import functools
import math
import numbers
import warnings

import numpy as np
import torch

from ..kernels.copy import check_count
from ..kernels.launch import DTYPE_NAMES, InputError, InputIndexError, InputTypeError, capturing, check, raise_flagged
from ..tensor import Tensor, as_storage, dim_index, named, tape_mark
from .copy import cat, embedding, embedding_renorm_, gather, index_select, narrow, reshape, scatter, select, stack, unsqueeze
from .copy import to, unfold_windows
from .gemm import distances, linear, matmul
from .pad import pad
from .inputs import check_args, check_tensors, legacy_reduction
from .pointwise import (add, clamp_min, div, eq, exp, ge, gt, isnan, le, log, logical_and, logical_not, logical_or, logsigmoid, lt,
                        minimum, mul, ne, neg, pow, sub, where)
from .reduce import any, logsumexp, max, mean, pairwise_distance, sum
from .softmax import cross_entropy
from .sort import cumprod, cumsum


def _require(cond, msg, error=ValueError):
    """torch's Python-side checks, which raise ValueError (or AssertionError), not RuntimeError."""
    if not cond:
        raise error(msg() if callable(msg) else msg)


def _reduced(loss, reduction):
    return loss if reduction == "none" else mean(loss) if reduction == "mean" else sum(loss)


def _check_reduction(reduction, concatenated=False):
    """torch's ValueError for a reduction other than 'mean', 'sum' or 'none'; concatenated: the losses whose
    torch message is `reduction + " is not valid"`, a TypeError where reduction is no str."""
    if reduction not in ("mean", "sum", "none"):
        if concatenated and not isinstance(reduction, str):
            raise TypeError(f"unsupported operand type(s) for +: '{type(reduction).__name__}' and 'str'")
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _as_batch(name, input, target):
    """input [N, C] or [C] as [N, C], target [N] or [] as [N, 1] (int64)."""
    check_tensors(name, input=input, target=target)
    check(input.ndim in (1, 2) and target.ndim == input.ndim - 1 and (input.ndim == 1 or target.shape[0] == input.shape[0]),
          lambda: f"{name}: expected input [N, C] or [C] and target [N] or [], got {tuple(input.shape)} and "
                  f"{tuple(target.shape)}")
    check(target.dtype == torch.int64, lambda: f"{name}: expected an int64 target, got {target.dtype}")
    x = input if input.ndim == 2 else unsqueeze(input, 0)
    return x, reshape(target, (-1, 1))


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The multi-class hinge loss of input [N, C] (or [C]) and int64 target [N] (or []): per sample
    sum over i != y of max(0, margin - x[y] + x[i]) ** p (times weight[y]) / C, as torch's."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    check_tensors("multi_margin_loss", input=input, target=target)
    check_args("multi_margin_loss", "float", margin=margin)  # torch's parser's TypeError, before the shapes' checks
    x, t = _as_batch("multi_margin_loss", input, target)
    mark = tape_mark()  # the composition is torch's one op (MultiMarginLossBackward0)
    z = add(sub(margin, gather(x, 1, t)), x)  # torch's order (margin - x[y]) + x[i], its rounding
    # torch sums the terms i != y (the target's own is no margin) where z > 0: a NaN one is left out, zeroed
    # before the square (its gradient 0 * 2z would be NaN), and the weight is zeroed there too (0 * inf)
    classes = Tensor(as_storage(np.arange(x.shape[1], dtype=np.int64)))
    active = logical_and(gt(z, 0.0), ne(classes, t))
    h = where(active, z, 0.0)
    h = mul(h, h) if p == 2 else h
    if weight is not None:  # torch's kernel reads the weight in input's dtype: the loss keeps that dtype
        check(weight.dtype == x.dtype or x.numel() == 0,
              lambda: f"expected scalar type {DTYPE_NAMES[x.dtype]} but found {DTYPE_NAMES[weight.dtype]}")
        h = mul(h, where(active, index_select(weight.to(x.dtype), 0, reshape(t, (-1,))).unsqueeze(1), 0.0))
    loss = div(sum(h, 1), x.shape[1])
    return named("multi_margin_loss", mark, _reduced(loss if input.ndim == 2 else reshape(loss, ()), reduction))


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The multi-label hinge loss of input [N, C] (or [C]) and int64 target of that shape, whose
    classes run up to its first -1: per sample the sum over those targets j and non-targets i of
    max(0, 1 - x[j] + x[i]) / C in that order, as torch's (a repeated target counts twice)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    check_tensors("multilabel_margin_loss", input=input, target=target)
    check(input.ndim in (1, 2) and target.shape == input.shape,
          lambda: f"multilabel_margin_loss: inconsistent target size: {tuple(target.shape)} for input of size: "
                  f"{tuple(input.shape)}")
    x = input if input.ndim == 2 else unsqueeze(input, 0)
    t = reshape(target, x.shape)
    n, c = x.shape
    if not capturing(t.memory):  # every target in [-1, C), listed or not, as torch's (a flag, no host read)
        raise_flagged(t.memory.device)
        check_count(sum(logical_or(lt(t, -1), ge(t, c))).memory, lambda: InputError("argument #2 'target' is out of range"))
    listed = ne(cumprod(ne(t, -1), 1), 0)  # the slots before the first -1
    slot = where(listed, t, c)  # unlisted slots point past the classes
    is_target = narrow(scatter(Tensor(torch.zeros((n, c + 1), dtype=x.dtype, device=x.device)), 1, slot, value=1.0),
                       1, 0, c)
    x_target = gather(x, 1, where(listed, t, 0))  # [N, slots]
    z = add(sub(1.0, unsqueeze(x_target, 2)), unsqueeze(x, 1))  # [N, slots, C], torch's order: 1 - x[j] + x[i]
    pairs = mul(unsqueeze(listed.to(x.dtype), 2), unsqueeze(sub(1.0, is_target), 1))
    # torch sums the pairs' margins where z > 0: a NaN one (a NaN input) is left out, as are the other pairs
    loss = div(sum(where(gt(mul(z, pairs), 0.0), z, 0.0), (1, 2)), c)
    return _reduced(loss if input.ndim == 2 else reshape(loss, ()), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)) (times weight), averaged over the classes (the
    last dim), as torch's."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_tensors("multilabel_soft_margin_loss", input=input, target=target)
    if input.ndim == 0:  # its class dim -1, as torch's
        raise InputIndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = neg(add(mul(target, logsigmoid(input)), mul(sub(1.0, target), logsigmoid(neg(input)))))
    if weight is not None:
        loss = mul(loss, weight)
    loss = div(sum(loss, input.ndim - 1), input.shape[-1])
    _check_reduction(reduction, concatenated=True)  # after the loss's shape errors, as torch's
    return _reduced(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """The Poisson negative log-likelihood, as torch's: exp(input) - target * input (log_input), else
    input - target * log(input + eps); full adds Stirling's target * log(target) - target +
    log(2 pi target) / 2 where target > 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, concatenated=True)
    check_tensors("poisson_nll_loss", input=input, target=target)
    check_args("poisson_nll_loss", "bool", log_input=log_input, full=full)
    check_args("poisson_nll_loss", "float", eps=eps)
    if log_input:
        loss = sub(exp(input), mul(target, input))
    else:
        loss = sub(input, mul(target, log(add(input, eps))))
    if full:
        stirling = add(sub(mul(target, log(target)), target), mul(log(mul(target, 2 * math.pi)), 0.5))
        loss = add(loss, where(le(target, 1.0), 0.0, stirling))
    return _reduced(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The Gaussian negative log-likelihood (log(var) + (input - target) ** 2 / var) / 2 (+ log(2 pi) / 2
    with full), as torch's: var of input's shape, or one dim short, or 1 in one dim (homoscedastic),
    or a float; var clamped to eps without that clamp's gradient. A negative var raises ValueError
    (a host read of the device's answer, as torch's)."""
    check_tensors("gaussian_nll_loss", input=input, target=target)
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = Tensor(torch.full(input.shape, var, dtype=input.dtype, device=input.device))
    elif any(lt(var, 0.0)).item():
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = unsqueeze(var, -1)
        elif not (input.ndim == var.ndim and np.sum([v for i, v in zip(input.shape, var.shape) if i != v]) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # torch's clamp under no_grad: the gradient passes; the lift is 0, not inf - inf, where var is inf
    var = add(var, where(lt(var, eps), sub(eps, var), 0.0).detach())
    loss = mul(add(log(var), div(pow(sub(input, target), 2), var)), 0.5)
    if full:
        loss = add(loss, 0.5 * math.log(2 * math.pi))
    return _reduced(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) for any distance_function
    (pairwise_distance by default; swap: d(anchor, negative) the smaller of it and d(positive,
    negative)), as torch's."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    check_tensors("triplet_margin_with_distance_loss", anchor=anchor, positive=positive, negative=negative)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, distance(positive, negative))
    return _reduced(clamp_min(sub(add(d_pos, margin), d_neg), 0.0), reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """torch 2.13's cross_entropy of linear(input, linear_weight, linear_bias): input [N, in] or [in],
    linear_weight [C, d1, ..., in] (the logits [N, C, d1, ...], a K-dimensional loss, need a batch),
    linear_bias [C, d1, ...]; target class indices, or probabilities of the logits' shape (then
    ignore_index must be None); ignore_index None means -100. Difference: options (torch's
    LinearCrossEntropyOptions, a chunked path that saves memory) is accepted and changes nothing: tnet
    computes the logits whole, torch's reference path (the same loss, more memory)."""
    check(1 <= input.ndim <= 2, lambda: f"expected input with dimensionality 1 or 2, got {input.ndim}")
    check(linear_weight.ndim >= 2,
          lambda: f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    batch, in_features = input.shape[:-1], input.shape[-1]
    check(in_features == linear_weight.shape[-1],
          lambda: "expected equal input and linear_weight last dimensions (in_features), "
                  f"got {in_features} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    check(linear_bias is None or tuple(linear_bias.shape) == (classes, *out_features),
          lambda: f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    check(not out_features or batch,
          lambda: f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                  f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batch, classes, *out_features)
    check(tuple(target.shape) != logits_shape or ignore_index is None,
          lambda: "ignore_index cannot be specified when target contains probabilities")
    outputs = math.prod(out_features) * classes  # the weight as Linear's [C * d1 * ..., in]
    logits = linear(input, reshape(linear_weight, (outputs, in_features)),
                    None if linear_bias is None else reshape(linear_bias, (outputs,)))
    return cross_entropy(reshape(logits, logits_shape), target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=label_smoothing)


def pdist(input, p=2):
    """The p-norm distances between the rows i < j of input [N, M], in row-major order of (i, j): N(N-1)/2
    of them, as torch's; the pairs' indices are made on the host."""
    check_tensors("pdist", input=input)
    check_args("pdist", "float", p=p)
    check(input.ndim == 2, lambda: f"pdist only supports 2D tensors, got: {input.ndim}D")
    check(p >= 0, "pdist only supports non-negative p values")
    i, j = (Tensor(as_storage(v.astype(np.int64))) for v in np.triu_indices(input.shape[0], 1))
    if input.shape[1] == 0:  # rows of no elements are 0 apart at any p, as torch's (the inf norm of none raises)
        p = 2
    return distances(sub(index_select(input, 0, i), index_select(input, 0, j)), p)


def _bags_of_offsets(input, offsets, include_last_offset):
    """A 1-D input cut at offsets as [B, L] positions into it and whether each is in its bag (numpy;
    the offsets are read on the host, a sync)."""
    _require(offsets is not None, "offsets has to be a 1D Tensor but got None")
    _require(offsets.ndim == 1, "offsets has to be a 1D Tensor")
    o = offsets.memory.detach().to("cpu", torch.int64).numpy()
    _require(o.size == 0 or o[0] == 0, lambda: f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
                                            f"to start from position 0. However, got {o[0]}", InputError)  # torch's C++ check
    n = input.shape[0]
    starts, ends = (o[:-1], o[1:]) if include_last_offset else (o, np.append(o[1:], n))
    _require(np.all(ends >= starts) and (ends.size == 0 or ends.max() <= n),
             "embedding_bag: offsets must be non-decreasing and within the input")
    length = int(np.max(ends - starts, initial=1))
    position = starts[:, None] + np.arange(length)
    inside = position < ends[:, None]
    return np.where(inside, position, 0), inside


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The sums, means or maxima of bags of weight's rows, as torch's: input [B, L] (a bag a row) or
    a 1-D input cut at offsets (read on the host: a sync), per_sample_weights (mode 'sum') scaling
    each row; padding_idx's rows are left out of every bag (and of a mean's count); an empty bag
    gives zeros. max_norm: every row that input names (padding_idx's too) is first renormed in place, as
    F.embedding's (torch's embedding_renorm_). scale_grad_by_freq and sparse are not implemented."""
    check_tensors("embedding_bag", input=input, weight=weight)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and (scale_grad_by_freq or sparse):  # torch's own refusals first
        raise ValueError("max mode does not support scaling the gradient by the frequency" if scale_grad_by_freq else
                         "max mode does not support sparse weights")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not implemented")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if padding_idx is not None:
        check_args("embedding_bag", "int", padding_idx=padding_idx)  # torch's parser, after F's own checks
        n = weight.shape[0]
        check(-n <= padding_idx < n, lambda: f"padding_idx must be within the number of embeddings, -{n} through {n - 1}, "
                                             f"but got {padding_idx}")
        padding_idx %= weight.shape[0]
    if max_norm is not None:  # before the bags, over all of input, as torch's F.embedding_bag
        embedding_renorm_(weight, reshape(input, (-1,)), max_norm, norm_type)
    if input.ndim == 2:
        _require(offsets is None, "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                                  "fixed length sequences.")
        index, inside, sample = input, None, per_sample_weights
    else:
        _require(input.ndim == 1, lambda: f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
        position, inside = _bags_of_offsets(input, offsets, include_last_offset)
        if input.shape[0] == 0:  # every bag empty
            return Tensor(torch.zeros((position.shape[0], weight.shape[1]), dtype=weight.dtype, device=weight.device))
        at = Tensor(as_storage(position.reshape(-1)))
        index = reshape(index_select(input, 0, at), position.shape)
        sample = None if per_sample_weights is None else reshape(index_select(per_sample_weights, 0, at),
                                                                 position.shape)
        inside = Tensor(as_storage(inside))
    if padding_idx is not None:
        padded = ne(index, padding_idx)
        inside = padded if inside is None else mul(inside, padded)
    mark = tape_mark()  # the bags' ops make torch's one node (EmbeddingBagBackward0)
    rows = embedding(index, weight)  # [B, L, D]
    keep = None if inside is None else unsqueeze(inside.to(weight.dtype), 2)
    if mode == "max":  # the gradient goes to each maximum's row, as torch's
        # torch's kernels take a bag's first row, then each strictly greater one: a NaN counts only as the first
        first = (Tensor(as_storage((np.arange(rows.shape[1]) == 0).reshape(1, -1, 1))) if keep is None
                 else logical_and(gt(keep, 0.0), eq(cumsum(keep, 1), 1.0)))
        rows = where(logical_or(first, logical_not(isnan(rows))), rows, -math.inf)
        if keep is None:
            return named("embedding_bag", mark, max(rows, 1)[0])
        top = max(where(gt(keep, 0.0), rows, -math.inf), 1)[0]
        # a column whose kept rows are all -inf is the bag's first kept row (left-out rows before it would take max's tie)
        top = where(eq(top, -math.inf), sum(where(first, rows, 0.0), 1), top)
        return named("embedding_bag", mark, where(gt(sum(keep, 1), 0.0), top, 0.0))
    if keep is not None:  # left out, not times 0: an infinite padding row gives no NaN, as torch's
        rows = where(gt(keep, 0.0), rows, 0.0)
    total = sum(rows if sample is None else mul(rows, unsqueeze(sample, 2)), 1)
    if mode == "sum":
        return named("embedding_bag", mark, total)
    count = input.shape[1] if keep is None else clamp_min(sum(keep, 1), 1.0)
    return named("embedding_bag", mark, div(total, count))


_CTC_NEG = -1e30  # "log 0" of an unreachable CTC state: finite, so that logsumexp's gradient stays 0, not NaN


def _lengths(name, lengths, n):
    """input_lengths or target_lengths (a tensor, list or tuple of n ints) as a numpy int64 array (a
    host read, as torch's CPU kernel reads them)."""
    values = np.asarray(lengths.tolist() if isinstance(lengths, Tensor) else lengths, dtype=np.int64).reshape(-1)
    check(values.shape == (n,), lambda: f"ctc_loss: {name} must have {n} entries, got {values.shape[0]}")
    return values


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The connectionist temporal classification loss, as torch's: log_probs [T, N, C] (or [T, C]),
    log-probabilities (log_softmax's); targets [N, S] padded or 1-D, the N targets concatenated;
    input_lengths and target_lengths N ints (read on the host). The forward (alpha) recursion runs
    over T in tnet's ops on [N, 2S + 1] log-states, so that autograd carries the gradient: the true
    derivative with respect to log_probs, where torch's kernel returns the one that assumes a
    log_softmax input (it adds exp(log_probs)); through log_softmax both are the same. 'mean' divides
    each loss by its target length (at least 1) and averages; an impossible alignment gives inf (0,
    and no gradient, with zero_infinity)."""
    check_tensors("ctc_loss", log_probs=log_probs, targets=targets)
    check_args("ctc_loss", "int", blank=blank)  # the parser's TypeErrors, before the values' checks
    check_args("ctc_loss", "bool", zero_infinity=zero_infinity)
    _check_reduction(reduction)
    unbatched = log_probs.ndim == 2
    lp = unsqueeze(log_probs, 1) if unbatched else log_probs
    check(lp.ndim == 3, lambda: f"ctc_loss: expected log_probs [T, N, C] or [T, C], got {tuple(log_probs.shape)}")
    T, N, C = lp.shape
    check(0 <= blank < C, "blank must be in label range")
    in_len = _lengths("input_lengths", input_lengths, N)
    tg_len = _lengths("target_lengths", target_lengths, N)
    check(bool((in_len <= T).all()) and bool((in_len >= 0).all()),
          lambda: f"ctc_loss: input_lengths must be in [0, {T}], got {in_len.tolist()}")
    flat = np.asarray(targets.tolist(), dtype=np.int64)
    if unbatched or flat.ndim == 1:  # concatenated targets (an unbatched target is one of them)
        starts = np.concatenate([[0], np.cumsum(tg_len)[:-1]])
        rows = [flat.reshape(-1)[s:s + k] for s, k in zip(starts, tg_len)]
    else:
        rows = [flat[i, :k] for i, k in enumerate(tg_len)]
    L = 2 * int(tg_len.max(initial=0)) + 1
    ext = np.full((N, L), blank, dtype=np.int64)  # blank, l1, blank, l2, ..., blank
    for i, row in enumerate(rows):
        ext[i, 1:2 * len(row):2] = row
    skip = np.zeros((N, L), dtype=bool)  # s-2 -> s allowed: a label unlike the one two states back
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    skip = Tensor(as_storage(skip))
    emit = gather(lp, 2, Tensor(as_storage(np.broadcast_to(ext, (T, N, L)).copy())))  # [T, N, L]

    def unreachable(k):
        return Tensor(torch.full((N, k), _CTC_NEG, dtype=lp.dtype, device=lp.memory.device))

    def shifted(alpha, k):
        """alpha moved k states right, unreachable states coming in at the left."""
        return cat([unreachable(k), narrow(alpha, 1, 0, L - k)], 1) if L > k else unreachable(L)
    start = np.arange(L) < np.minimum(2, 2 * tg_len[:, None] + 1)  # the first blank and the first label
    alpha = where(Tensor(as_storage(start & (in_len[:, None] > 0))), select(emit, 0, 0), _CTC_NEG)
    for t in range(1, T):
        candidates = stack([alpha, shifted(alpha, 1), where(skip, shifted(alpha, 2), _CTC_NEG)])
        step = add(logsumexp(candidates, 0), select(emit, 0, t))
        alpha = where(Tensor(as_storage((t < in_len)[:, None])), step, alpha)  # a finished input keeps its states
    # the alignment ends in the last blank or the last label (none for an empty target)
    last = Tensor(as_storage(np.stack([2 * tg_len, np.maximum(2 * tg_len - 1, 0)], 1)))
    ends = where(Tensor(as_storage(np.stack([np.ones(N, bool), tg_len > 0], 1))), gather(alpha, 1, last), _CTC_NEG)
    loss = neg(logsumexp(ends, 1))  # [N]
    loss = where(gt(loss, -_CTC_NEG / 2), 0.0 if zero_infinity else math.inf, loss)  # impossible alignments
    if reduction == "mean":
        return mean(div(loss, Tensor(as_storage(np.maximum(tg_len, 1), lp.dtype))))
    loss = sum(loss) if reduction == "sum" else loss
    return reshape(loss, ()) if unbatched and reduction == "none" else loss


def _gradient_coefficients(coords, edge_order):
    """(a, b, c) per position of a 1-D grid (host float64 arrays of length n): the derivative there is
    a f[i-1] + b f[i] + c f[i+1], numpy's and torch's second-order central differences inside, and at the two
    ends one-sided ones of edge_order (the ends' a (c) taken as the coefficients of f[1], f[2] (f[-2], f[-3]),
    see gradient)."""
    dx = np.diff(coords)
    dx1, dx2 = dx[:-1], dx[1:]
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    if edge_order == 1:
        first, last = (-1 / dx[0], 1 / dx[0], 0.0), (0.0, -1 / dx[-1], 1 / dx[-1])
    else:
        h1, h2 = dx[0], dx[1]
        first = (-(2 * h1 + h2) / (h1 * (h1 + h2)), (h1 + h2) / (h1 * h2), -h1 / (h2 * (h1 + h2)))
        h1, h2 = dx[-2], dx[-1]
        last = (h2 / (h1 * (h1 + h2)), -(h1 + h2) / (h1 * h2), (2 * h2 + h1) / (h2 * (h1 + h2)))
    return a, b, c, first, last


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """torch.gradient: the derivative of input along each dim (all, or dim: an int or a list) by second-order
    central differences inside and one-sided ones of edge_order (1 or 2) at the ends, on a grid of uniform
    spacing (a number, or one per dim) or of coordinates (one 1-D tensor per dim, read on the host); a tuple of
    float tensors (a 16-bit input's dtype, computed in float32), with gradients to input. The coefficients come from the host in float64, so a uniform grid's
    inside differences are (f[i+1] - f[i-1]) / 2h up to their rounding."""
    check_tensors("gradient", input=input)
    check_args("gradient", "int", edge_order=edge_order)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [dim_index(d, input.ndim) for d in dims]
    if not isinstance(spacing, (numbers.Real, list, tuple, Tensor)):  # torch's argument parser
        raise InputTypeError(f"gradient(): spacing must be a number, a list of them or of tensors, got "
                             f"{type(spacing).__name__}")
    spacings = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(spacings) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to "
                           f"'self.dim() = {input.ndim}', since dim argument was not given, but got a list of length "
                           f"{len(spacings)}" if dim is None else f"torch.gradient expected spacing to be unspecified, "
                           f"a scalar or it's spacing and dim arguments to have the same length, but got a spacing "
                           f"argument of length {len(spacings)} and a dim argument of length {len(dims)}.")
    out = []
    for d, s in zip(dims, spacings):
        n = input.shape[d]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
        # a uniform spacing h: the differences at unit spacing, divided by h after (h = 0 gives +-inf, as torch's)
        coords = s.detach().numpy().astype(np.float64) if isinstance(s, Tensor) else np.arange(n, dtype=np.float64)
        check(coords.shape == (n,), lambda: f"torch.gradient expected each tensor to be on the same device and of "
                                            f"the dimension size {n}, got coordinates of shape {coords.shape}")
        a, b, c, first, last = _gradient_coefficients(coords, edge_order)
        along = lambda v: Tensor(as_storage(np.asarray(v, np.float32).reshape([-1] + [1] * (input.ndim - 1 - d))))
        part = lambda start, length: narrow(input, d, start, length)
        pieces = [add(add(mul(part(0, 1), first[0]), mul(part(1, 1), first[1])), mul(part(2, 1), first[2]))
                  if edge_order == 2 else add(mul(part(0, 1), first[0]), mul(part(1, 1), first[1]))]
        if n > 2:
            inside = add(mul(part(0, n - 2), along(a)), mul(part(2, n - 2), along(c)))
            pieces.append(add(inside, mul(part(1, n - 2), along(b))) if np.any(b) else inside)
        pieces.append(add(add(mul(part(n - 3, 1), last[0]), mul(part(n - 2, 1), last[1])), mul(part(n - 1, 1), last[2]))
                      if edge_order == 2 else add(mul(part(n - 2, 1), last[1]), mul(part(n - 1, 1), last[2])))
        out.append(cat(pieces, d) if isinstance(s, Tensor) or s == 1 else div(cat(pieces, d), float(s)))
    low = input.dtype in (torch.float16, torch.bfloat16)  # a 16-bit input's derivatives in its dtype, as torch's
    return tuple(to(o, input.dtype) if low else o for o in out)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """torch.stft of a real signal [L] or [B, L] in the real form torch gives with return_complex=False
    (deprecated there, and warned of as torch does): [..., freq, frames, 2], the real and imaginary parts,
    freq n_fft // 2 + 1 (onesided, the default) or n_fft. The frames (after center's pad_mode padding by
    n_fft // 2) are cut by unfold, windowed (the window centred in n_fft, rectangular by default) and
    multiplied by the DFT's cosine and negated sine bases (host-built constants) in one product, so
    gradients flow to the signal and the window; normalized scales by n_fft ** -0.5. tnet has no complex
    dtypes: return_complex=True raises NotImplementedError (ParallelWaveGAN's and HiFi-GAN's STFT losses
    take return_complex=False, or torch.view_as_real of the complex form, which is this)."""
    if return_complex is None:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if return_complex:
        raise NotImplementedError("stft(return_complex=True): tnet has no complex dtypes; return_complex=False gives "
                                  "the same numbers as torch.view_as_real of the complex result")
    warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                  "complex tensors for all inputs, and return_complex=False will raise an error.", UserWarning)
    check_tensors("stft", input=input)
    check(input.ndim in (1, 2), lambda: f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    x = input if input.ndim == 2 else unsqueeze(input, 0)
    if center:
        x = pad(unsqueeze(x, 1), (n_fft // 2, n_fft // 2), mode=pad_mode)[:, 0]
    length = x.shape[-1]
    check(0 < n_fft <= length, lambda: f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    check(hop_length > 0, lambda: f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    check(0 < win_length <= n_fft, lambda: f"stft: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    frames = unfold_windows(x, -1, n_fft, hop_length)  # [B, frames, n_fft]
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window can are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning)
    else:
        check(window.ndim == 1 and window.shape[0] == win_length,
              lambda: f"stft: expected a 1D window tensor of size equal to win_length={win_length}, but got window "
                      f"with size {list(window.shape)}")
        left = (n_fft - win_length) // 2
        frames = mul(frames, pad(window, (left, n_fft - win_length - left)) if win_length < n_fft else window)
    freq = n_fft // 2 + 1 if onesided in (None, True) else n_fft
    basis = Tensor(_dft_basis(n_fft, freq, bool(normalized), input.dtype))  # a new leaf over the cached memory
    out = reshape(matmul(frames, basis), (x.shape[0], frames.shape[1], freq, 2)).transpose(1, 2)
    return out if input.ndim == 2 else select(out, 0, 0)


@functools.lru_cache(maxsize=16)
def _dft_basis(n_fft, freq, normalized, dtype):
    """The DFT's bases [n_fft, 2 freq] in device memory, made once per size (a training loop's STFT loss calls stft
    with the same few): the angle 2 pi k n / n_fft from (k n) mod n_fft, exact in integers; cos, then -sin. The
    memory is cached, not a Tensor: each call wraps it anew (one made in inference_mode must not be reused)."""
    angle = 2 * np.pi * (np.outer(np.arange(n_fft), np.arange(freq)) % n_fft) / n_fft
    basis = np.stack([np.cos(angle), -np.sin(angle)], axis=-1) * (n_fft ** -0.5 if normalized else 1.0)
    return as_storage(basis.reshape(n_fft, 2 * freq), dtype)
