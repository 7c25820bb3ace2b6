"""Batch normalisation (kernels/norm.py), with its GELU fused where asked; layer and group normalisation
(kernels/group_norm.py; composed of the reductions' and element-wise kernels where those do not serve, and for
create_graph), each one node with torch's native backward."""
import math

import numpy as np
import torch

from ..kernels import group_norm as _group_norm, norm as _norm
from ..kernels.copy import copy_
from ..kernels.launch import DTYPE_NAMES, FLOATS, InputError, InputTypeError, check, dense
from ..tensor import Tensor, is_grad_enabled, no_grad, record
from .copy import repeat, reshape, view
from .inputs import check_args, check_tensors, needs_grad
from .pad import pad
from .pointwise import add, div, mul, pow, reciprocal, rsqrt, sqrt, sub
from .pool import avg_pool2d
from .reduce import mean, sum, var_mean


FUSED = True  # the layer, group, instance and RMS norms on kernels/group_norm.py (else composed: for A/B timing)


def verify_batch_size(shape):
    """torch's _verify_batch_size: a ValueError where shape [N, C, ...] leaves one value per channel (N times
    the spatial sizes is 1), whose variance a training normalisation cannot take."""
    if shape[0] * math.prod(shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {torch.Size(shape)}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05,
               *, num_batches_tracked=None, activation=None, statistics=False):
    """Batch normalisation of input [N, C], [N, C, L], [N, C, H, W] (NCHW or channels-last;
    the output keeps the layout) or [N, C, D, H, W] over every axis but C, as torch.nn.functional.batch_norm.
    training=True normalises with the batch's mean and biased variance and, given
    running_mean and running_var, updates them in place on the device:
    running = (1 - momentum) * running + momentum * batch, with the unbiased variance.
    training=False normalises with running_mean and running_var.
    tnet's additions, keyword-only: num_batches_tracked, for nn.BatchNorm, one int64 element,
    is increased by 1 on the device in training mode, and momentum=None then means the
    cumulative average (momentum 1 / num_batches_tracked): torch's module reads that count on
    the host, which a CUDA graph could not replay. activation='gelu' returns
    F.gelu(F.batch_norm(...)) (the erf GELU, within 1e-6: see kernels/norm.py's _gelu_cdf) as
    one op: the normalised values are never stored, the backward recomputes them from the
    input and the statistics. A strided input (a channel slice x[:, :c]) is copied dense first
    (channels-last where its channels are innermost), as the kernels read dense memory. statistics=True returns
    native_batch_norm's (output, mean, invstd)."""
    check_tensors("batch_norm", input=input)
    check_args("batch_norm", "bool", training=training)
    for arg, v in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                   ("bias", bias), ("num_batches_tracked", num_batches_tracked)):
        if v is not None and not isinstance(v, Tensor):  # no message closure per argument
            raise InputTypeError(f"batch_norm: {arg} must be a tnet.Tensor or None, got {type(v).__name__}")
    if training:  # torch's F.batch_norm's checks: the batch's size, then eps
        verify_batch_size(input.shape)
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if momentum is not None:  # torch.batch_norm's parser's TypeError, past F.batch_norm's checks (None: tnet's own)
        check_args("batch_norm", "float", momentum=momentum)
    if input.numel() == 0:  # torch's empty batch: input * weight[0] + bias[0], no size checked, no statistic updated
        if training and num_batches_tracked is not None:  # but the batch counted, as by torch's module
            copy_(num_batches_tracked.memory, add(num_batches_tracked, 1).memory)
        y = mul(input, 1.0)
        y = y if weight is None else mul(y, weight[0])
        return y if bias is None else add(y, bias[0])
    data = lambda v: None if v is None else v.memory
    X = dense(input.memory)
    # a strided view copied: kernels read dense vectors
    W, B, RM, RV = (None if v is None else v.memory.contiguous() for v in (weight, bias, running_mean, running_var))
    need_x, need_w, need_b = needs_grad(input, weight, bias)
    if training:
        y, mean, stat = _norm.batch_norm_train(X, W, B, eps, RM, RV, momentum, data(num_batches_tracked), activation)
        for v, updated in ((running_mean, RM), (running_var, RV)):
            if v is not None and updated is not v.memory:
                _write_back(v.memory, updated)
    else:
        y = _norm.batch_norm_eval(X, RM, RV, W, B, eps, activation)
        if is_grad_enabled() and (need_x or need_w or need_b):  # the running statistics now, for the backward
            mean, stat = running_mean.memory.clone(), running_var.memory.clone()
    inputs = [v for v in (input, weight, bias) if v is not None]

    def backward(g):
        dx, dw, db = _norm.backward_trusted(g, X, mean, stat, W, eps, not training, need_x, need_w or need_b, B,
                                            activation is not None)
        grads = (dx, dw if need_w else None, db if need_b else None)
        return [gx for v, gx in zip((input, weight, bias), grads) if v is not None]
    graph = None if activation else lambda g, out: _batch_norm_graph(g, input, weight, bias, training, eps,
                                                                      None if training else (mean, stat))
    y = record("batch_norm" if activation is None else f"batch_norm_{activation}", y, inputs, backward,
               saved=(X, W, B if activation else None), graph=graph)
    if not statistics:
        return y
    if training:  # the batch's statistics, which no gradient reaches
        return y, Tensor(mean), Tensor(stat)
    return y, Tensor(X.new_empty(0, dtype=torch.float32)), Tensor(X.new_empty(0, dtype=torch.float32))  # as torch's


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """torch.native_batch_norm: (batch_norm's output, save_mean, save_invstd), in training the batch's mean and
    1 / sqrt(var + eps) per channel, float32 (torch's on CUDA; on the CPU torch keeps 16-bit input's dtype), empty in
    eval mode; no gradient reaches them, as torch's."""
    check_tensors("native_batch_norm", input=input)
    if input.numel():
        return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, statistics=True)
    if training:  # torch's (F.batch_norm's empty batch passes through)
        raise RuntimeError(f"input tensor must have at least one element, but got input_sizes = {list(input.shape)}")
    none = input.memory.new_empty(0, dtype=torch.float32)
    return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps), Tensor(none), Tensor(none)


def _write_back(stat, updated):
    """A strided running statistic's update (computed in a dense copy) written back. An expanded one
    (stride 0: one element for every channel) gets the last channel's update (torch's CPU loop applies
    the channels' updates to it one after another: other values, no error either)."""
    if stat.stride(0) == 0:
        stat, updated = stat[:1], updated[-1:]
    copy_(stat, updated)


def _batch_norm_graph(g, input, weight, bias, training, eps, running):
    """batch_norm's input gradients on tnet Tensors (record's graph=), in float32: with xhat the
    normalised input and s = 1 / sqrt(var + eps), dx = s (h - mean(h) - xhat mean(h xhat)) for the
    batch's statistics (s h for the running ones: running = (mean, var)), h = g * weight;
    dweight = sum(g xhat), dbias = sum(g), over every axis but C."""
    dims = (0, *range(2, input.ndim))
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    x, g = input.to(torch.float32), g.to(torch.float32)
    if training:
        var, mu = var_mean(x, dims, keepdim=True, correction=0)
    else:
        mu, var = (Tensor(v.view(shape)) for v in running)
    s = rsqrt(add(var, eps))
    xhat = mul(sub(x, mu), s)
    h = g if weight is None else mul(g, reshape(weight, shape))
    if training:
        h = sub(sub(h, mean(h, dims, keepdim=True)), mul(xhat, mean(mul(h, xhat), dims, keepdim=True)))
    grads = (mul(h, s), None if weight is None else sum(mul(g, xhat), dims), None if bias is None else sum(g, dims))
    return [gx for v, gx in zip((input, weight, bias), grads) if v is not None]


def _native_norm(name, input, stats_shape, dims, eps, weight, bias, shape, sizes, groups, statistics=False):
    """torch's native layer and group norms, one node named as torch's (native_layer_norm: NativeLayerNormBackward0):
    xhat = (x - mean) / sqrt(var + eps), the statistics over `dims` of input viewed as stats_shape (the biased
    variance), then xhat * weight + bias, weight and bias viewed as `shape`. 16-bit input is normalised in float32
    and rounded once, after the weight and bias, as torch's layer and group norms: a 16-bit variance overflows
    (65504 ** 2), and so would a 16-bit gradient of the normalised values times a large weight. The backward is
    torch's native formula (_native_grads), not the composition's, whose variance gradient's sum / n overflows where
    torch's is finite; the composition runs on the tape only for create_graph, whose gradient differentiates it.
    As torch's, the backward keeps the input and the statistics, not the output, which may be written in place (an
    instance norm's ReLU(inplace=True)) and is xhat itself where there is no weight or bias: xhat is recomputed.
    sizes: input as [N, C, S], `groups` groups of statistics along C (kernels/group_norm.py's view), whose kernels
    run both passes where the tensors are theirs (not empty, of their dtypes), the composition elsewhere.
    statistics=True returns (output, mean, sqrt(var + eps)), the statistics float32 vectors of N * groups, which no
    gradient reaches (torch.native_layer_norm's and native_group_norm's)."""
    args = (input, stats_shape, dims, weight, bias, shape)

    def graph(g, out):  # the statistics recomputed on the tape, so that a gradient of the gradient reaches them
        xhat, _, std = _standardised(input, stats_shape, dims, eps)
        return _native_grads(g, xhat, std, *args)
    if FUSED and input.numel() and input.dtype in FLOATS and all(v is None or v.dtype in FLOATS for v in (weight, bias)):
        _check_affine(weight, bias, input.dtype)
        return _fused_norm(name, input, sizes, groups, eps, weight, bias, graph, statistics)
    with no_grad():
        xhat, mu, std = _standardised(input, stats_shape, dims, eps)
        y = _affine(xhat, weight, bias, shape, input.dtype)
    del xhat

    def backward(g):
        with no_grad():
            xhat = _standardised(input, stats_shape, dims, eps, (mu, std))[0]
            return [None if v is None else v.memory for v in _native_grads(Tensor(g), xhat, std, *args)]
    y = record(name, y.memory, [v for v in (input, weight, bias) if v is not None], backward,
               saved=(input, weight), graph=graph)
    return (y, *(reshape(v, (sizes[0] * groups,)) for v in (mu, std))) if statistics else y


def _fused_norm(name, input, sizes, groups, eps, weight, bias, graph, statistics, center=True):
    """_native_norm through kernels/group_norm.py: input viewed as sizes [N, C, S], `groups` groups along C,
    weight and bias flattened to [C]; center=False: rms_norm's (no mean taken)."""
    x = _group_norm.viewable(input.memory, sizes)
    w, b = (None if v is None else v.memory.reshape(-1).contiguous() for v in (weight, bias))
    y, mu, std = _group_norm.group_norm(x, sizes, groups, w, b, eps, center)
    need_x, need_w, need_b = needs_grad(input, weight, bias)

    def backward(g):
        dx, dw, db = _group_norm.group_norm_backward(x, sizes, g, groups, w, mu, std, need_x,
                                                     w.dtype if need_w else None, b.dtype if need_b else None, center)
        grads = (dx, dw if dw is None or dw.shape == weight.shape else dw.view(weight.shape),
                 db if db is None or db.shape == bias.shape else db.view(bias.shape))
        return [gv for v, gv in zip((input, weight, bias), grads) if v is not None]
    y = record(name, y, [v for v in (input, weight, bias) if v is not None], backward, saved=(input, weight),
               graph=graph)
    return (y, Tensor(mu), Tensor(std)) if statistics else y


def _standardised(input, stats_shape, dims, eps, statistics=None, center=True):
    """(xhat, mean, sqrt(var + eps)): input (16-bit in float32) viewed as stats_shape, less the mean over dims, over
    the square root of the biased variance plus eps; xhat in input's shape, the statistics in stats_shape's with dims
    kept. statistics: (mean, root) taken before (the backward's xhat, the forward's to the bit). center=False:
    rms_norm's, no mean taken (None), the mean square for the variance."""
    x = reshape(_upcast(input), stats_shape)
    if statistics is None:
        if center:
            var, mean_ = var_mean(x, dims, keepdim=True, correction=0)
        else:
            var, mean_ = mean(mul(x, x), dims, keepdim=True), None
        statistics = mean_, sqrt(add(var, eps))
    mean_, std = statistics
    return reshape(div(x if mean_ is None else sub(x, mean_), std), input.shape), mean_, std


def _native_grads(g, xhat, std, input, stats_shape, dims, weight, bias, shape, center=True):
    """The gradients of _native_norm's input, weight and bias (those given; None where not needed) for its output's
    gradient g, torch's native formula in float32: with h = g * weight, viewed as stats_shape,
        dx = (h - mean(h) - xhat * mean(h * xhat)) / sqrt(var + eps)  over dims,
    dweight = sum(g * xhat) and dbias = sum(g) over the dims that weight and bias are broadcast along. center=False:
    rms_norm's, without the mean(h) term (its mean, taken as 0, is no function of x)."""
    need_x, need_w, need_b = needs_grad(input, weight, bias)
    g = g.to(xhat.dtype)
    dx = dw = db = None
    if need_x:
        h, x = (reshape(v, stats_shape) for v in (g if weight is None else mul(g, reshape(weight, shape)), xhat))
        h = sub(sub(h, mean(h, dims, keepdim=True)) if center else h, mul(x, mean(mul(h, x), dims, keepdim=True)))
        dx = reshape(div(h, std), input.shape)
    lead = input.ndim - len(shape)
    broadcast = tuple(d for d in range(input.ndim) if d < lead or shape[d - lead] == 1)
    summed = lambda v: v if not broadcast else sum(v, broadcast)  # noqa: E731 (sum over () would take every dim)
    if need_w:
        dw = reshape(summed(mul(g, xhat)), weight.shape)
    if need_b:
        db = reshape(summed(g), bias.shape)
    return [gv for v, gv in zip((input, weight, bias), (dx, dw, db)) if v is not None]


def _affine(y, weight, bias, shape, dtype=None, mixed=False):
    """y * weight + bias, weight and bias viewed as `shape` (either may be None), computed in y's dtype
    and returned in dtype (None: y's), the input's, as torch's: float32 parameters of a 16-bit input are
    the one mix torch's layer, group and instance norms take (RuntimeError otherwise), rms_norm
    (mixed=True) takes any."""
    dtype = dtype or y.dtype
    if not mixed:
        _check_affine(weight, bias, dtype)
    if weight is not None:
        y = mul(y, reshape(weight, shape))
    y = y if bias is None else add(y, reshape(bias, shape))
    return y if y.dtype == dtype else y.to(dtype)


def _check_affine(weight, bias, dtype):
    """The one mix of dtypes torch's layer, group and instance norms take: float32 parameters of a 16-bit input,
    weight and bias of one dtype."""
    check_tensors("norm", **{name: v for name, v in (("weight", weight), ("bias", bias)) if v is not None})
    check(weight is None or bias is None or weight.dtype == bias.dtype,
          lambda: f"expected scalar type {DTYPE_NAMES[weight.dtype]} but found {DTYPE_NAMES[bias.dtype]}")
    for v in (weight, bias):
        if v is not None and v.dtype not in (dtype, torch.float32):
            raise InputError(f"mixed dtype: expect parameter to have scalar type of Float, got {v.dtype} "
                             f"for an input of {dtype}")


def _last_dims(name, input, normalized_shape):
    """normalized_shape as a tuple, which must end input's shape (torch's error otherwise)."""
    check_tensors(name, input=input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or tuple(input.shape[input.dim() - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    return shape


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalisation over the last len(normalized_shape) dims of each sample, then weight and bias
    of normalized_shape, as torch's (_native_norm)."""
    return _layer_norm(input, normalized_shape, weight, bias, eps, statistics=False)


def _layer_norm(input, normalized_shape, weight, bias, eps, statistics):
    """layer_norm, and with statistics=True native_layer_norm's (output, mean, std) (_native_norm)."""
    check_args("layer_norm", "tuple of ints", normalized_shape=normalized_shape)  # the parser's TypeErrors, first
    check_args("layer_norm", "float", eps=eps)
    shape = _last_dims("layer_norm", input, normalized_shape)
    _check_normalized(shape, weight=weight, bias=bias)
    cols = math.prod(shape)
    return _native_norm("native_layer_norm", input, input.shape, tuple(range(-len(shape), 0)), eps, weight, bias, shape,
                        (input.numel() // cols if cols else 0, cols, 1), 1, statistics)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """torch.native_layer_norm: (layer_norm's output, mean, rstd = 1 / sqrt(var + eps)), the statistics of input's
    shape with the normalised dims of size 1, float32 for 16-bit input (torch's on CUDA; on the CPU torch keeps
    them in the input's dtype); no gradient reaches them, as torch's."""
    y, mu, std = _layer_norm(input, normalized_shape, weight, bias, eps, statistics=True)
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    stats_shape = (*input.shape[:input.dim() - k], *(1,) * k)
    return y, reshape(mu, stats_shape), reshape(reciprocal(std), stats_shape)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight, as torch's
    (eps None: the machine epsilon of the dtype it computes in, float32 for 16-bit input, as torch's), in
    float32 for 16-bit input, weight of any float dtype. One node (kernels/group_norm.py's with center=False)
    where the tensors are the kernels'; torch's composition elsewhere, and on the tape for create_graph."""
    if isinstance(normalized_shape, (int, np.integer)):  # torch's parser takes a sequence only here (layer_norm's an int)
        raise InputTypeError(f"rms_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                             f"{type(normalized_shape).__name__}")
    if eps is not None:  # its type before the shapes, as torch's parser
        check_args("rms_norm", "float", eps=eps)
    shape = _last_dims("rms_norm", input, normalized_shape)
    _check_normalized(shape, weight=weight)
    eps = torch.finfo(torch.promote_types(input.dtype, torch.float32)).eps if eps is None else eps
    dims = tuple(range(-len(shape), 0))
    if FUSED and input.numel() and input.dtype in FLOATS and (weight is None or weight.dtype in FLOATS):
        cols = math.prod(shape)

        def graph(g, out):  # torch's native formula on the tape, the rms recomputed so that the second gradient reaches it
            xhat, _, std = _standardised(input, input.shape, dims, eps, center=False)
            return _native_grads(g, xhat, std, input, input.shape, dims, weight, None, shape, center=False)
        return _fused_norm("rms_norm", input, (input.numel() // cols, cols, 1), 1, eps, weight, None, graph, False,
                           center=False)
    x = _upcast(input)  # eps ~1e-7 needs fp32 squares
    # pow(x, 2), as torch's composition: its gradient g (2 x) takes 2 x, inf past 1.7e38, times rsqrt's 0 there: NaN
    y = _affine(mul(x, rsqrt(add(mean(pow(x, 2), dims, keepdim=True), eps))), weight, None, shape, mixed=True)
    return y if y.dtype == input.dtype else y.to(input.dtype)


def _upcast(input):
    """input in float32 where it is 16-bit: the norms compute in float32."""
    return input.to(torch.float32) if input.dtype in (torch.float16, torch.bfloat16) else input


def _check_normalized(shape, **vectors):
    """torch's RuntimeError where a layer or RMS norm's weight or bias (vectors: by name) is not of normalized_shape."""
    for name, v in vectors.items():
        check(v is None or tuple(v.shape) == shape,
              lambda: f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                      f"{list(v.shape)} and normalized_shape = {list(shape)}")


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalisation over each sample's groups of C / num_groups channels (and every position),
    then per-channel weight and bias, as torch's (_native_norm)."""
    return _group_norm_of(input, num_groups, weight, bias, eps, statistics=False)


def _group_norm_of(input, num_groups, weight, bias, eps, statistics):
    """group_norm, and with statistics=True native_group_norm's (output, mean, std) (_native_norm)."""
    check_tensors("group_norm", input=input)
    check_args("group_norm", "int", num_groups=num_groups)
    check_args("group_norm", "float", eps=eps)
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, c = input.shape[:2]
    verify_batch_size([n * c // num_groups, num_groups, *input.shape[2:]])  # before the groups' check, as torch's
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, v in (("weight", weight), ("bias", bias)):
        check(v is None or (v.ndim == 1 and v.numel() == c),
              lambda: f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
                      f"{name} of shape {list(v.shape)} and input of shape {list(input.shape)}")
    group = c // num_groups * math.prod(input.shape[2:])  # not -1: an empty batch's view is ambiguous
    return _native_norm("native_group_norm", input, (n, num_groups, group), (2,), eps, weight, bias,
                        (c,) + (1,) * (input.dim() - 2), (n, c, math.prod(input.shape[2:])), num_groups, statistics)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """torch.native_group_norm: (group_norm's output, mean, rstd = 1 / sqrt(var + eps)), the statistics [N, group],
    in the input's dtype (float32 where 16-bit input has float32 weight or bias, as torch's). Unlike torch's, no
    gradient reaches the statistics."""
    check_tensors("native_group_norm", input=input)
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to be of size N * C * HxW = {N * C * HxW}, got {input.numel()} elements "
                           f"of shape {list(input.shape)}")
    y, mu, std = _group_norm_of(input, group, weight, bias, eps, statistics=True)
    mixed = any(v is not None and v.dtype != input.dtype for v in (weight, bias))
    dtype = torch.float32 if mixed else input.dtype
    return y, reshape(mu, (N, group)).to(dtype), reshape(reciprocal(std), (N, group)).to(dtype)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Each sample's channels normalised over their positions, then per-channel weight and bias. Without
    running statistics, group_norm with a group per channel; with them (track_running_stats), as torch
    composes it: batch_norm of the input viewed as one sample of N * C channels, with the running
    statistics, weight and bias repeated N times, whose updated copies' means over the N samples
    become the running statistics (use_input_stats=False normalises with them)."""
    check_tensors("instance_norm", input=input)
    if use_input_stats and math.prod(input.shape[2:]) == 1:  # torch's _verify_spatial_size: a variance of one element
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    check_args("instance_norm", "bool", use_input_stats=use_input_stats)  # then torch's argument parser
    check_args("instance_norm", "Tensor", running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    check_args("instance_norm", "float", momentum=momentum, eps=eps)
    check(input.dim() >= 3, lambda: f"instance_norm: expected an input of 3 or more dimensions, got {tuple(input.shape)}")
    n, c = input.shape[:2]
    if running_mean is None and running_var is None:
        check(use_input_stats, "instance_norm: use_input_stats=False needs running_mean and running_var")
        if n * c:  # no channels at all: torch's batch_norm below (of 0 channels: its IndexError for a weight or bias)
            return view(group_norm(input, c, weight, bias, eps), input.shape)  # torch's ends in a view: ViewBackward0
    repeated = [None if v is None else repeat(v, n) for v in (running_mean, running_var, weight, bias)]
    out = batch_norm(reshape(input, (1, n * c, *input.shape[2:])), *repeated, use_input_stats, momentum, eps)
    for running, updated in zip((running_mean, running_var), repeated):
        if running is not None:
            copy_(running.memory, mean(reshape(updated, (n, c)), 0).memory)
    return reshape(out, input.shape)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta over [N, C, *] input,
    composed as torch composes it: the squares viewed as [N, 1, C, rest], zero-padded by
    size // 2 channels before and (size - 1) // 2 after, averaged by a (size, 1) pooling
    (AlexNet's and Caffe's LRN across channels)."""
    check_tensors("local_response_norm", input=input)
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    n, c = input.shape[:2]
    div_ = reshape(mul(input, input), (n, 1, c, -1))
    div_ = avg_pool2d(pad(div_, (0, 0, size // 2, (size - 1) // 2)), (size, 1), stride=1)
    return div(input, pow(add(mul(reshape(div_, input.shape), alpha), k), beta))
