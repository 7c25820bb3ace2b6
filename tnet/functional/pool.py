"""Pooling (kernels/pool.py): max and average pooling over windows, and adaptive pooling.
An NCHW input of a width kept channels-last (launch.keeps_channels_last) comes out channels-last."""
import builtins
import functools
import itertools
import math

import numpy as np
import torch

from ..factory import rand
from ..kernels import pool as _pool
from ..kernels.copy import copy_
from ..kernels import pointwise as _pw
from ..kernels.launch import (InputIndexError, at_least, check, check_batch_only_empty, dense, is_channels_last,
                              is_flat, keeps_channels_last, ntuple, out_size, pair, plain_ints, single, sizes_type,
                              triple)
from ..tensor import Tensor, as_storage, in_layout, linear_graph, named, record, tape_mark, tensor
from .copy import contiguous, gather, index_select, reshape, scatter, scatter_add, squeeze, stack, unsqueeze
from .pad import pad
from .inputs import check_args, check_tensors
from .pointwise import abs, add, div, floor_divide, mul, neg, pow, relu, remainder, sign
from .reduce import argmax, sum_or_mean
from .reduce import max as reduce_max


def pool_args(name, kernel_size, stride, padding, expand_one=True):
    """(kernel, stride, padding) pairs of a 2-D pooling (`name`, or "max"/"avg" for max_pool2d/avg_pool2d);
    a list of one int expanded, as torch's poolings (not max_unpool2d: expand_one=False)."""
    name = name if "_" in name else f"{name}_pool2d"
    kernel = pair(kernel_size, f"{name}: kernel_size", None, expand_one)  # every type before any value, as torch's
    # [] is no stride, as torch's
    stride = plain_ints(stride)
    stride = kernel if stride is None or stride == [] or stride == () else pair(stride, f"{name}: stride", None, expand_one)
    padding = pair(padding, f"{name}: padding", None, expand_one)
    return (at_least(kernel, f"{name}: kernel_size", 1), at_least(stride, f"{name}: stride", 1),
            at_least(padding, f"{name}: padding", 0))


def arg_types(name, n, kernel_size, stride, padding, **flags):
    """torch's argument parser's TypeErrors for a pooling of n dims (sizes: an int or ints; flags: bools),
    which it raises before any check of the input's rank or of a value."""
    for arg, v in (("kernel_size", kernel_size), ("stride", plain_ints(stride)), ("padding", padding)):
        if arg != "stride" or v not in (None, [], ()):  # no stride: the kernel's
            sizes_type(v, n, f"{name}: {arg}")
    check_args(name, "bool", **flags)


def _pool2d(mode, x, kernel_size, stride, padding, ceil_mode, **divisor):
    """(the pooled x, max pooling's argmax: pool2d's index i * KW + j inside each window);
    divisor: average pooling's count_include_pad and divisor_override (kernels.pool.pool2d)."""
    check_tensors(f"{mode}_pool2d", x=x)
    check_args(f"{mode}_pool2d", "bool", ceil_mode=ceil_mode)
    kernel, stride, padding = pool_args(mode, kernel_size, stride, padding)
    if mode == "avg" and x.ndim == 4 and padding == (0, 0) and kernel == tuple(x.shape[2:]) \
            and divisor.get("divisor_override") is None:
        return sum_or_mean("avg_pool2d", x, (-2, -1), True, mean=True), None  # a global pooling: see avg_pool2d
    y_cl = keeps_channels_last(x.shape[1])
    X = dense(x.memory)  # a strided view (x[:, :c], a transpose) is copied dense first
    y, arg = _pool.pool2d(X, kernel, stride, padding, ceil_mode, mode, channels_last=y_cl, **divisor)
    shape, x_cl = x.shape, is_channels_last(X)

    def backward(g):
        return (_pool.pool2d_backward(g, arg, shape, kernel, stride, padding, mode, x_channels_last=x_cl,
                                      y_channels_last=y_cl, **divisor),)

    if mode == "max":
        graph = lambda g, out: (_max_pool_graph(g, shape, plane_indices(arg, kernel, stride, padding, shape[-1])),)
    else:
        graph = linear_graph("avg_pool2d", backward, lambda h: _pool.pool2d(
            dense(h), kernel, stride, padding, ceil_mode, mode, channels_last=y_cl, **divisor)[0])
    return record(f"{mode}_pool2d", y, (x,), backward, graph=graph), arg


def _max_pool_graph(g, shape, index):
    """Max pooling's input gradient on tnet Tensors (record's graph=): each g added at its window's
    maximum (index: int64 h * W + w in its plane, [N, C, OH, OW]), a scatter_add over the planes (in
    float32) whose own gradient gathers back."""
    N, C, H, W = shape
    index = reshape(Tensor(index), (N, C, -1))
    planes = Tensor(torch.zeros((N, C, H * W), device=g.memory.device))
    return reshape(scatter_add(planes, 2, index, reshape(g.to(torch.float32), (N, C, -1))), shape)


_EMPTY_2D = "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max pooling over [N, C, H, W] or [C, H, W], torch's arguments; ties go to the first maximum in
    row-major order, a NaN wins. return_indices=True also gives the int64 index h*W + w of each
    maximum in its input plane, as torch's; dilation > 1 by its taps (_dilated_max_pool)."""
    arg_types("max_pool2d", 2, kernel_size, stride, padding, ceil_mode=ceil_mode)
    dilation = pair(dilation, "max_pool2d: dilation", 1, expand_one=True)
    check_tensors("max_pool2d", input=input)
    check(input.ndim in (3, 4), "non-empty 3D or 4D (batch mode) tensor expected for input")
    check_batch_only_empty(input.shape, 2, lambda: _EMPTY_2D + str(list(input.shape)))
    x = unsqueeze(input, 0) if input.ndim == 3 else input
    if dilation != (1, 1):
        y, index = _dilated_max_pool(x, *pool_args("max", kernel_size, stride, padding), dilation, ceil_mode)
        y, index = (squeeze(y, 0), squeeze(index, 0)) if input.ndim == 3 else (y, index)
        return (y, index) if return_indices else y
    y, arg = _pool2d("max", x, kernel_size, stride, padding, ceil_mode)
    if input.ndim == 3:
        y = squeeze(y, 0)
    if not return_indices:
        return y
    index = plane_indices(arg, *pool_args("max", kernel_size, stride, padding), x.shape[-1])
    return y, Tensor(index if input.ndim == 4 else index[0])


def _dilated_max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    """Max pooling of x's last len(kernel) dims with dilation > 1, by its taps (the window kernels have none): x
    padded with -inf, each tap of the window a strided slice of it, the maximum over the taps stacked in the window's
    row-major order (ties go to the first, a NaN wins, the gradient to the maximum, as torch's); (y, torch's int64
    index into each input plane or volume, h * W + w or (d * H + h) * W + w)."""
    n, sizes = len(kernel), x.shape[-len(kernel):]
    check(all(2 * p <= k for p, k in zip(padding, kernel)),  # torch's kernel, not its span
          lambda: f"pad should be smaller than or equal to half of kernel size, but got padding={padding}, "
                  f"kernel_size={kernel}")
    outs = [out_size(size, d * (k - 1) + 1, s, p, ceil_mode)
            for size, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    ends = [(o - 1) * s + d * (k - 1) + 1 - size - p for o, s, d, k, size, p in zip(outs, stride, dilation, kernel, sizes,
                                                                                     padding)]
    xp = pad(x, [q for p, e in reversed(list(zip(padding, ends))) for q in (p, builtins.max(e, 0))], value=float("-inf"))
    taps = [xp[(Ellipsis, *(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilation, outs, stride)))]
            for tap in itertools.product(*map(range, kernel))]
    y, tap = reduce_max(stack(taps, x.ndim - n), dim=x.ndim - n)
    index = None
    for dim in range(n):  # the tap's digit along dim, its input coordinate, then Horner's sum over the dims
        digit = remainder(floor_divide(tap, math.prod(kernel[dim + 1:])), kernel[dim])
        start = np.arange(outs[dim]).reshape([-1] + [1] * (n - 1 - dim)) * stride[dim] - padding[dim]
        coord = add(mul(digit, dilation[dim]), tensor(start))
        index = coord if index is None else add(mul(index, sizes[dim]), coord)
    return y, index


def plane_indices(arg, kernel, stride, padding, W):
    """Max pooling's argmax arg (pool2d's i*KW + j inside each window, int8 or int32) as torch's
    int64 index into the input plane of width W: (oh*SH - PH + i) * W + ow*SW - PW + j, that is the
    window's first pixel plus arg, plus (W - KW) per window row above the maximum."""
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, padding
    OH, OW = arg.shape[-2:]
    start = as_storage((np.arange(OH, dtype=np.int64)[:, None] * SH - PH) * W + np.arange(OW, dtype=np.int64) * SW - PW)
    a = copy_(torch.empty_like(arg, dtype=torch.int64), arg)
    index = _pw.pointwise("add", a, start)
    if KH > 1 and W != KW:
        index = _pw.pointwise("add", index, _pw.pointwise("mul", _pw.pointwise("floor_divide", a, KW), W - KW))
    return index


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Average pooling over [N, C, H, W] or [C, H, W], torch's arguments and divisors: with
    count_include_pad the window clipped to the padded image (a ceil_mode window past the
    padding counts only what lies within it), without it the window's input pixels alone, or
    divisor_override (non-zero) for every window. A window of the whole image without padding
    (F.avg_pool2d(x, x.size(2)), a global pooling) runs as a mean, the reduction kernel: the
    window kernel would loop over every tap of it."""
    check_tensors("avg_pool2d", input=input)
    arg_types("avg_pool2d", 2, kernel_size, stride, padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    if divisor_override is not None:
        check_args("avg_pool2d", "int", divisor_override=divisor_override)
    if input.ndim < 3:  # torch reads input.size(-3) first
        raise InputIndexError(f"Dimension out of range (expected to be in range of [{-builtins.max(input.ndim, 1)}, "
                              f"{builtins.max(input.ndim, 1) - 1}], but got -3)")
    check(input.ndim == 4 or input.ndim == 3, lambda: f"non-empty 3D or 4D (batch mode) tensor expected for input, got "
                                                      f"{input.ndim}D")
    check_batch_only_empty(input.shape, 2, lambda: _EMPTY_2D + str(list(input.shape)))
    x = unsqueeze(input, 0) if input.ndim == 3 else input
    y = _pool2d("avg", x, kernel_size, stride, padding, ceil_mode, count_include_pad=count_include_pad,
                divisor_override=divisor_override)[0]
    return squeeze(y, 0) if input.ndim == 3 else y


def _unpool_size(input, kernel, stride, padding, output_size):
    """The unpooled sizes of input's last len(kernel) dims, as torch's _unpool_output_size: (in - 1)
    * stride - 2 * padding + kernel, or output_size (those dims, or with [N, C] before them), which
    must lie within a stride of that."""
    default = [(input.shape[d - len(kernel)] - 1) * s - 2 * p + k for d, (k, s, p) in enumerate(zip(kernel, stride, padding))]
    if output_size is None:
        return default
    size = list(output_size)
    if len(size) == len(kernel) + 2:
        size = size[2:]
    if len(size) != len(kernel):
        raise ValueError(f"output_size should be a sequence containing {len(kernel)} or {len(kernel) + 2} elements, "
                         f"but it has a length of '{len(size)}'")
    for d, (want, s) in enumerate(zip(size, stride)):
        if not default[d] - s < want < default[d] + s:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between '
                             f'{default[d] - s} and {default[d] + s})')
    return size


def _max_unpool(name, dims, input, indices, kernel, stride, padding, output_size):
    """max_unpool over input's last `dims` dims ([N, C, *] or [C, *]): zeros with input's values at
    indices, each an index into the flattened output plane; a scatter, its gradient a gather."""
    check_tensors(name, input=input, indices=indices)
    check(indices.dtype == torch.int64, lambda: f"elements in indices should be type int64 but got: "
                                                f"{str(indices.dtype).split('.')[-1].capitalize()}")
    check(input.ndim in (dims + 1, dims + 2), lambda: f"{name}: Expected {dims + 1}D or {dims + 2}D tensor, but got "
                                                      f"{input.ndim}D tensor")
    check(indices.shape == input.shape, lambda: f"{name}: Expected shape of indices to be same as that of the input "
                                                f"tensor ({tuple(input.shape)}) but got indices tensor with shape: "
                                                f"{tuple(indices.shape)}")
    size = _unpool_size(input, kernel, stride, padding, output_size)
    lead = input.shape[:-dims]
    planes = Tensor(torch.zeros((*lead, int(np.prod(size))), dtype=input.dtype, device=input.device))
    flat = lambda t: reshape(t, (*lead, int(np.prod(t.shape[-dims:]))))  # no -1: a 0-sized lead leaves it open
    return reshape(scatter(planes, -1, flat(indices), flat(input)), (*lead, *size))


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d, as torch's: an [N, C, H, W] (or [C, H, W]) input put at
    max_pool2d's indices of zero planes of output_size (default (H - 1) * stride - 2 * padding +
    kernel_size). An index outside the plane raises IndexError (an InputError: a RuntimeError too,
    as torch's) after a host read; a repeated index keeps one of its values."""
    kernel, stride, padding = pool_args("max_unpool2d", kernel_size, stride, padding, expand_one=False)
    return _max_unpool("max_unpool2d", 2, input, indices, kernel, stride, padding, output_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_unpool2d's 1-D form over [N, C, L] (or [C, L]), for max_pool1d's indices."""
    k = single(kernel_size, "max_unpool1d: kernel_size", 1)
    s = k if stride is None else single(stride, "max_unpool1d: stride", 1)
    return _max_unpool("max_unpool1d", 1, input, indices, (k,), (s,), (single(padding, "max_unpool1d: padding"),),
                       output_size)


def _signal_as_image(name, input):
    """[N, C, L] or [C, L] as [N, C, 1, L] (a view; a strided input copied dense) for the 2-D
    kernels, as conv1d does."""
    check_tensors(name, input=input)
    check(input.ndim in (2, 3), lambda: f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for "
                                        f"argument #1 'self' (while checking arguments for {name})")
    x = unsqueeze(input if input.ndim == 3 else unsqueeze(input, 0), 2)
    return x if is_flat(x.memory) else contiguous(x)


def _image_as_signal(y, input):
    """The [N, C, 1, L'] result of a pooling of _signal_as_image(input) in input's shape."""
    y = squeeze(y, 2)
    return y if input.ndim == 3 else squeeze(y, 0)


def _window_1d(name, kernel_size, stride, padding, **flags):
    k = single(kernel_size, f"{name}: kernel_size", None)  # every type before any value, as torch's parser
    s = k if stride is None or stride == () or stride == [] else single(stride, f"{name}: stride", None)
    p = single(padding, f"{name}: padding", None)
    check_args(name, "bool", **flags)
    k, s = at_least(k, f"{name}: kernel_size", 1), at_least(s, f"{name}: stride", 1)
    p = at_least(p, f"{name}: padding", 0)
    check(p <= k // 2, lambda: f"{name}() padding should be at most half of kernel size, but got padding={p} and "
                               f"kernel_size={k}")
    return k, s, p


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Average pooling over [N, C, L] (or [C, L]), torch's arguments and divisors: avg_pool2d
    over [N, C, 1, L]."""
    k, s, p = _window_1d("avg_pool1d", kernel_size, stride, padding, ceil_mode=ceil_mode,
                         count_include_pad=count_include_pad)
    y = avg_pool2d(_signal_as_image("avg_pool1d", input), (1, k), (1, s), (0, p), ceil_mode, count_include_pad)
    return _image_as_signal(y, input)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max pooling over [N, C, L] (or [C, L]), torch's arguments: max_pool2d over [N, C, 1, L];
    return_indices=True also gives the int64 position of each maximum along L; dilation > 1 by its
    taps (_dilated_max_pool)."""
    d = single(dilation, "max_pool1d: dilation", 1)
    k, s, p = _window_1d("max_pool1d", kernel_size, stride, padding, ceil_mode=ceil_mode)
    _signal_as_image("max_pool1d", input)  # its rank's error first
    check_batch_only_empty(input.shape, 1, lambda: f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                                                   f"dim batch size for input, but got:{list(input.shape)}")
    if d != 1:
        y, index = _dilated_max_pool(_signal_as_image("max_pool1d", input), (1, k), (1, s), (0, p), (1, d), ceil_mode)
        y, index = _image_as_signal(y, input), _image_as_signal(index, input)
        return (y, index) if return_indices else y
    y, arg = _pool2d("max", _signal_as_image("max_pool1d", input), (1, k), (1, s), (0, p), ceil_mode)
    y = _image_as_signal(y, input)
    if not return_indices:
        return y
    index = plane_indices(arg, (1, k), (1, s), (0, p), input.shape[-1])
    return y, _image_as_signal(Tensor(index), input)


def _nonempty(name, input):
    """torch's forward check of the adaptive max poolings (and of the 3-D average's but its global mean): no
    empty dim past the first (an unbatched input's channels may be empty, a batched input's may not)."""
    empty = [d for d in range(1, input.ndim) if input.shape[d] == 0]
    check(not empty, lambda: f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                             f"has sizes {list(input.shape)} with dimension {empty[0]} being empty")


def _adaptive_1d(mode, input, output_size, return_indices=False):
    name = f"adaptive_{mode}_pool1d"
    size = single(output_size, f"{name}: output_size", 0)
    image = _signal_as_image(name, input)
    if mode == "max":
        _nonempty(name, input)
    y, arg = _adaptive(mode, image, (1, size), 1 if input.ndim == 3 else 2)
    y = _image_as_signal(y, input)
    if not return_indices:
        return y
    return y, _image_as_signal(Tensor(copy_(torch.empty_like(arg, dtype=torch.int64), arg)), input)


def adaptive_avg_pool1d(input, output_size):
    """The mean over adaptive windows of [N, C, L] (or [C, L]) to output_size, torch's windows:
    adaptive_avg_pool2d over [N, C, 1, L]."""
    return _adaptive_1d("avg", input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum over adaptive windows of [N, C, L] (or [C, L]) (see adaptive_avg_pool1d);
    return_indices=True also gives the int64 position of each maximum along L."""
    return _adaptive_1d("max", input, output_size, return_indices)


def _adaptive(mode, input, output_size, batch_dims=1):
    """Adaptive pooling of [N, C, H, W] or [C, H, W] input to output_size (an int, or a pair whose
    None keeps the input's size): (the result, the max's int32 pixel indices or None). Its
    backward refuses an output empty past the first batch_dims dims, as torch's (which returns it
    from the forward): 2 where the input is an unbatched signal [C, L] as [1, C, 1, L]."""
    name = f"adaptive_{mode}_pool2d"
    check_tensors(name, input=input)
    check(input.ndim in (3, 4), lambda: f"{name}: expected a 3-D or 4-D input, got {input.shape}")
    output_size = plain_ints(output_size)
    size = (output_size, output_size) if output_size is None or isinstance(output_size, int) else tuple(output_size)
    check(len(size) == 2, lambda: f"{name}: output_size must be an int or a pair, got {output_size!r}")
    OH, OW = (input.shape[-2 + i] if s is None else s for i, s in enumerate(size))
    if mode == "avg" and (OH, OW) == (1, 1):  # global average pooling: the mean kernel
        return sum_or_mean(name, input, (-2, -1), True, mean=True), None
    X = input.memory if input.ndim == 4 else input.memory.unsqueeze(0)
    if not is_flat(X):  # a strided view (a channel slice): the kernels read dense memory
        X = X.contiguous()
    y, arg = _pool.adaptive_pool2d(X, (OH, OW), mode)
    image_shape = X.shape

    def backward(g):
        empty = [d for d in range(batch_dims, g.dim()) if g.shape[d] == 0]
        check(not empty, lambda: f"{name}_backward(): Expected grad_output to have non-zero size for non-batch "
                                 f"dimensions, but grad_output has sizes {list(g.shape)} with dimension {empty[0]} "
                                 f"being empty")
        g = g if input.ndim == 4 else g.unsqueeze(0)
        dx = _pool.adaptive_pool2d_backward(in_layout(g, y), arg, image_shape, mode)
        return (dx if input.ndim == 4 else dx[0],)
    def pooled(h):  # the average's gradient's own gradient: h pooled as the input was
        out = _pool.adaptive_pool2d(dense(h if input.ndim == 4 else h.unsqueeze(0)), (OH, OW), mode)[0]
        return out if input.ndim == 4 else out[0]

    def maxima(g, out):  # the maximum's: g added at each window's maximum
        index = copy_(torch.empty_like(arg, dtype=torch.int64), arg)
        gx = _max_pool_graph(g if input.ndim == 4 else unsqueeze(g, 0), image_shape, index)
        return (gx if input.ndim == 4 else squeeze(gx, 0),)
    out = record(name, y if input.ndim == 4 else y[0], (input,), backward,
                 graph=maxima if mode == "max" else linear_graph(name, backward, pooled))
    return out, (arg if input.ndim == 4 else arg[0]) if arg is not None else None


def adaptive_avg_pool2d(input, output_size):
    """The mean over adaptive windows of [N, C, H, W] (or [C, H, W]) input, to output_size (an int
    or a pair; None keeps that size), with torch's windows: rows floor(i*H/OH) to ceil((i+1)*H/OH).
    The output keeps the input's layout; a strided input is copied dense first. To 1 x 1 its node is torch's mean
    over the plane's (MeanBackward1), as torch's takes that path."""
    mark = tape_mark()
    y = _adaptive("avg", input, output_size)[0]
    return named("mean_dim", mark, y) if tuple(y.shape[-2:]) == (1, 1) else y


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over adaptive windows (see adaptive_avg_pool2d); return_indices=True also gives
    the int64 flat index h*W + w of each maximum in its plane, as torch. NaN wins, as torch."""
    if isinstance(input, Tensor) and input.ndim in (3, 4):
        _nonempty("adaptive_max_pool2d", input)
    y, arg = _adaptive("max", input, output_size)
    if not return_indices:
        return y
    return y, Tensor(copy_(torch.empty_like(arg, dtype=torch.int64), arg))


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """max_pool2d's (output, int64 indices), whatever return_indices says, as torch's."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """max_pool1d's (output, int64 indices), whatever return_indices says, as torch's."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool1d's (output, int64 indices), as torch's."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool2d's (output, int64 indices), as torch's."""
    return adaptive_max_pool2d(input, output_size, True)


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, taps, max_pool, avg_pool):
    """torch's composition: (sign(s) * relu(|s|) * taps()) ** (1 / norm_type), s the average of x **
    norm_type over each window; norm_type +-inf: the max (min) of |x|. taps() reads kernel_size once the
    pooling has checked it and the stride (its TypeError for a stride first, as torch's)."""
    if norm_type == float("inf"):
        return max_pool(abs(input), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return neg(max_pool(neg(abs(input)), kernel_size, stride, 0, 1, ceil_mode))
    out = avg_pool(pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return pow(mul(mul(sign(out), relu(abs(out))), taps()), 1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The power-average pooling of [N, C, H, W] (or [C, H, W]): (sum of x ** norm_type over each
    window) ** (1 / norm_type), composed as torch's (no padding)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode,
                    lambda: math.prod(pair(kernel_size, "lp_pool2d: kernel_size", 1)), max_pool2d, avg_pool2d)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """lp_pool2d's 1-D form over [N, C, L] (or [C, L])."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode,
                    lambda: single(kernel_size, "lp_pool1d: kernel_size", 1), max_pool1d, avg_pool1d)


# ---- 3-D pooling: a max or a mean over a (d, h, w) window is one over its (h, w) window then one over d
# (windows, padding, ceil_mode and torch's divisors all go per dim), so the 2-D kernels run it: over the
# [N, C*D, H, W] planes, then over depth as [N*C, 1, D, OH*OW]. Ties go to the first maximum in (d, h, w)
# order, as torch's. ----

def _volumes(name, input):
    """[N, C, D, H, W] (an unbatched [C, D, H, W] with N = 1) and whether it was unbatched."""
    check_tensors(name, input=input)
    check(input.ndim in (4, 5), lambda: f"{name}: non-empty 4D or 5D (batch mode) tensor expected for input, got "
                                        f"{input.ndim}D")
    return (unsqueeze(input, 0), True) if input.ndim == 4 else (input, False)


def _volumes_nonempty(name, input):
    """torch's pool3d_shape_check: an empty dim but the batch's raises (the size, 0, in its message)."""
    check_batch_only_empty(input.shape, 3, lambda: f"{name}(): Expected input's non-batch dimensions to have positive "
                                                   f"length, but input has a shape of {list(input.shape)} and "
                                                   f"non-batch dimension 0 has length zero!")


def _window_3d(name, kernel_size, stride, padding):
    kernel = triple(kernel_size, f"{name}: kernel_size", 1, True)
    stride = kernel if stride is None or stride == [] or stride == () else triple(stride, f"{name}: stride", 1, True)
    return kernel, stride, triple(padding, f"{name}: padding", 0, True)


def _separably(pool, x, planes, depth, indices=False):
    """pool2d(input, *planes) over the (H, W) planes of x [N, C, D, H, W] as [N*C, D, H, W] (a batch of N*C:
    empty channels are an empty batch, as torch's 3-D poolings take them), then pool2d(input, *depth) over
    [N*C, 1, D, OH*OW]; indices: the pools return (y, int64 plane indices), combined into torch's d*H*W +
    h*W + w."""
    N, C, D, H, W = x.shape
    y = pool(reshape(x, (N * C, D, H, W)), *planes)
    y, first = y if indices else (y, None)
    OH, OW = y.shape[2:]
    z = pool(reshape(y, (N * C, 1, D, OH * OW)), *depth)
    z, second = z if indices else (z, None)
    out = reshape(z, (N, C, z.shape[2], OH, OW))
    if not indices:
        return out
    d = Tensor(_pw.pointwise("floor_divide", second.memory, OH * OW))  # [N*C, 1, OD, OH*OW]: the max's depth
    at = gather(reshape(first, (N * C, D, OH * OW)), 1, reshape(d, (N * C, z.shape[2], OH * OW)))  # not -1: N * C may be 0
    index = _pw.pointwise("add", _pw.pointwise("mul", d.memory.reshape(at.shape), H * W), at.memory)
    return out, Tensor(index).reshape(out.shape)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max pooling over [N, C, D, H, W] or [C, D, H, W], torch's arguments: max_pool2d over the (H, W)
    planes, then over depth (see above); a NaN wins. return_indices=True also gives the int64 index
    d*H*W + h*W + w of each maximum in its input volume, as torch's; dilation > 1 by its taps
    (_dilated_max_pool)."""
    arg_types("max_pool3d", 3, kernel_size, stride, padding, ceil_mode=ceil_mode)
    dilation = triple(dilation, "max_pool3d: dilation", 1, True)
    x, unbatched = _volumes("max_pool3d", input)
    _volumes_nonempty("max_pool3d", input)
    mark = tape_mark()
    if dilation != (1, 1, 1):
        out = _dilated_max_pool(x, *_window_3d("max_pool3d", kernel_size, stride, padding), dilation, ceil_mode)
        out = out if return_indices else out[0]
        out = (tuple(o[0] for o in out) if return_indices else out[0]) if unbatched else out
        named("max_pool3d_with_indices", mark, out[0] if return_indices else out)
        return out
    (kd, *k2), (sd, *s2), (pd, *p2) = _window_3d("max_pool3d", kernel_size, stride, padding)
    out = _separably(max_pool2d, x, (k2, s2, p2, 1, ceil_mode, return_indices),
                     ((kd, 1), (sd, 1), (pd, 0), 1, ceil_mode, return_indices), return_indices)
    out = tuple(o[0] for o in out) if unbatched and return_indices else out[0] if unbatched else out
    named("max_pool3d_with_indices", mark, out[0] if return_indices else out)  # the passes: torch's one node
    return out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Average pooling over [N, C, D, H, W] or [C, D, H, W], torch's arguments and divisors (see
    avg_pool2d; each is a product over the dims): avg_pool2d over the (H, W) planes, then over depth;
    divisor_override as window sums (a divisor of 1) divided by it."""
    arg_types("avg_pool3d", 3, kernel_size, stride, padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    if divisor_override is not None:
        check_args("avg_pool3d", "int", divisor_override=divisor_override)
    x, unbatched = _volumes("avg_pool3d", input)
    check(divisor_override is None or divisor_override != 0, "divisor must be not zero")
    _volumes_nonempty("avg_pool3d", input)
    mark = tape_mark()
    (kd, *k2), (sd, *s2), (pd, *p2) = _window_3d("avg_pool3d", kernel_size, stride, padding)
    D, H, W = x.shape[2:]  # torch's avg_pool3d alone needs the unpadded input to hold a window (its 2-D one does not)
    check(D >= kd and H >= k2[0] and W >= k2[1],
          lambda: f"input image (T: {D} H: {H} W: {W}) smaller than kernel size (kT: {kd} kH: {k2[0]} kW: {k2[1]})")
    ones = None if divisor_override is None else 1
    y = _separably(avg_pool2d, x, (k2, s2, p2, ceil_mode, count_include_pad, ones),
                   ((kd, 1), (sd, 1), (pd, 0), ceil_mode, count_include_pad, ones))
    y = y if divisor_override is None else div(y, divisor_override)
    return named("avg_pool3d", mark, y[0] if unbatched else y)  # torch's one node (AvgPool3DBackward0)


def _adaptive_3d(mode, input, output_size, return_indices=False):
    name = f"adaptive_{mode}_pool3d"
    x, unbatched = _volumes(name, input)
    size = (output_size,) * 3 if output_size is None or isinstance(output_size, int) else tuple(output_size)
    check(len(size) == 3, lambda: f"{name}: output_size must be an int or a triple, got {output_size!r}")
    OD, OH, OW = (x.shape[2 + i] if s is None else s for i, s in enumerate(size))
    if mode == "max" or (OD, OH, OW) != (1, 1, 1):  # torch's global average (a mean) takes empty dims
        _nonempty(name, input)
    pool = adaptive_avg_pool2d if mode == "avg" else lambda t, size: adaptive_max_pool2d(t, size, return_indices)
    if OH * OW == 0:  # empty planes: no depth pass (a 2-D pooling of width 0 refuses), OD copies of nothing
        N, C = x.shape[:2]
        y = pool(reshape(x, (N * C, *x.shape[2:])), (OH, OW))
        at = tensor(np.zeros(OD, np.int64))
        out = tuple(reshape(index_select(v, 1, at), (N, C, OD, OH, OW)) for v in (y if return_indices else (y,)))
        out = out if return_indices else out[0]
    else:  # the depth pass's width OH*OW kept: its windows there are single columns
        out = _separably(pool, x, ((OH, OW),), ((OD, None),), return_indices)
    return tuple(o[0] for o in out) if unbatched and return_indices else out[0] if unbatched else out


def adaptive_avg_pool3d(input, output_size):
    """The mean over adaptive windows of [N, C, D, H, W] (or [C, D, H, W]) to output_size (an int or a
    triple; None keeps that size), torch's windows: adaptive_avg_pool2d over the planes, then over depth."""
    return _adaptive_3d("avg", input, output_size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over adaptive windows (see adaptive_avg_pool3d); return_indices=True also gives the
    int64 index d*H*W + h*W + w of each maximum in its volume, as torch's."""
    return _adaptive_3d("max", input, output_size, return_indices)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """max_pool3d's (output, int64 indices), whatever return_indices says, as torch's."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool3d's (output, int64 indices), whatever return_indices says, as torch's."""
    return adaptive_max_pool3d(input, output_size, True)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The power-average pooling of [N, C, D, H, W] (or [C, D, H, W]), composed as lp_pool2d over avg_pool3d."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode,
                    lambda: math.prod(triple(kernel_size, "lp_pool3d: kernel_size", 1, True)), max_pool3d, avg_pool3d)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d, as torch's: an [N, C, D, H, W] (or [C, D, H, W]) input put at
    max_pool3d's indices of zero volumes of output_size (default (D - 1) * stride - 2 * padding + kernel_size,
    and so H, W); see max_unpool2d."""
    kernel, stride, padding = _window_3d("max_unpool3d", kernel_size, stride, padding)
    return _max_unpool("max_unpool3d", 3, input, indices, kernel, stride, padding, output_size)


def _fractional_max_pool(name, dims, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    """fractional_max_pool2d/3d over the last `dims` axes of [N, C, *size] (or [C, *size]): each output
    position's window of kernel_size starts at torch's pseudo-random interval sequence, drawn per plane
    from _random_samples [N, C, dims] in [0, 1) (tnet.rand's where None), read on the host (a sync: not
    under a CUDA graph's capture); the maximum picked by gather, so that its gradient goes to one input,
    as torch's. Indices: flat positions in each input plane (h * W + w, 3-D (t * H + h) * W + w)."""
    check_tensors(name, input=input)
    if output_size is not None:  # torch's parser first: the types before any value
        check_args(name, "tuple of ints", output_size=output_size)
    check_args(name, "Tensor", random_samples=_random_samples)
    check(input.ndim in (dims + 1, dims + 2),
          lambda: f"{name}: expected a {dims + 1}-D or {dims + 2}-D input, got {input.ndim}-D")
    if input.ndim == dims + 1:
        out = _fractional_max_pool(name, dims, unsqueeze(input, 0), kernel_size, output_size, output_ratio,
                                   return_indices, _random_samples)  # the samples [1, C, dims], as torch's
        return tuple(squeeze(t, 0) for t in out) if return_indices else squeeze(out, 0)
    # torch's CPU kernel reads outside the window for a size under 1 (-inf, indices past the plane): refused
    kernel = ntuple(kernel_size, dims, f"{name}: kernel_size", 1, True)
    N, C, *size = input.shape
    if output_size is None:
        check(output_ratio is not None, f"{name} requires specifying either an output_size or an output_ratio")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * dims
        if len(ratio) < dims:  # torch's Python indexes its first dims: an IndexError where fewer, the rest unread
            raise InputIndexError("tuple index out of range")
        ratio = ratio[:dims]
        output_size = tuple(int(s * r) for s, r in zip(size, ratio))
    out = ntuple(output_size, dims, f"{name}: output_size", None, True)
    for axis, (n, o, k) in enumerate(zip(size, out, kernel)):
        what = ("time", "height", "width")[axis + 3 - dims]
        # torch's 3-D check is strict (o + k - 1 < n), its 2-D one not
        check(o + k - 1 < n or dims == 2 and o + k - 1 == n,
              lambda: f"{name}{'' if dims == 2 else '_out'}(): pool {what} {k} too large relative to input {what} {n}")
    check(min(out) >= 0, lambda: f"Trying to create tensor with negative dimension {min(out)}: {[N, C, *out]}")
    if _random_samples is None:
        _random_samples = rand(N, C, dims, dtype=input.dtype)
    # torch's: samples for at least N planes (the first N used), C channels
    check(_random_samples.ndim == 3 and _random_samples.shape[0] >= N,
          "Expect _random_samples.size(0) no less then input batch size.")
    check(_random_samples.shape[1] == C, "Expect _random_samples.size(1) equals to input channel size.")
    check(_random_samples.shape[2] == dims, lambda: f"Expect _random_samples.size(2) equals to {dims}.")
    check(_random_samples.dtype == input.dtype, "Expect _random_samples to have the same dtype as input")
    samples = _random_samples.memory[:N].cpu().float().numpy()
    # the windows' starts along each axis, [N, C, out]: torch's sequence in fp32 (2-D reads the
    # width's sample first)
    order = (1, 0) if dims == 2 else (0, 1, 2)
    starts = []
    for axis, (n, o, k) in enumerate(zip(size, out, kernel)):
        u = samples[..., order[axis], None]
        alpha = np.float32(n - k) / np.float32(max(o - 1, 1))
        seq = (np.floor((np.arange(o, dtype=np.float32) + u) * alpha) - np.floor(u * alpha)).astype(np.int64)
        seq[..., o - 1] = n - k
        starts.append(seq)
    # each output's window as flat positions in its plane, [N, C, *out, *kernel] summed over the axes,
    # the window's taps in row-major order (torch's scan: its first maximum wins)
    plane = 0
    for axis, (seq, k) in enumerate(zip(starts, kernel)):
        taps = (seq[..., None] + np.arange(k)) * math.prod(size[axis + 1:])  # [N, C, out, k] along this axis
        plane = plane + taps.reshape([N, C] + [o if a == axis else 1 for a, o in enumerate(out)]
                                     + [k if a == axis else 1 for a, k in enumerate(kernel)])
    plane = np.broadcast_to(plane, (N, C, *out, *kernel)).copy().reshape(N, C, *out, math.prod(kernel))
    first = (np.arange(N * C, dtype=np.int64) * math.prod(size)).reshape(N, C, *[1] * (dims + 1))
    where = Tensor(torch.from_numpy(plane + first).to(input.device))
    values = reshape(index_select(reshape(input, (-1,)), 0, reshape(where, (-1,))), tuple(where.shape))
    arg = argmax(values, -1, keepdim=True)
    y = squeeze(gather(values, -1, arg), -1)
    if not return_indices:
        return y
    return y, squeeze(gather(Tensor(torch.from_numpy(plane).to(input.device)), -1, arg), -1)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch's fractional max pooling (Graham, 2014) over [N, C, H, W] or [C, H, W]: see _fractional_max_pool."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch's fractional max pooling over [N, C, T, H, W] or [C, T, H, W]: see _fractional_max_pool."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


fractional_max_pool2d_with_indices = functools.partial(fractional_max_pool2d, return_indices=True)
fractional_max_pool3d_with_indices = functools.partial(fractional_max_pool3d, return_indices=True)
