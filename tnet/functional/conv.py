"""Convolutions (kernels/conv.py; depthwise ones, kernels/depthwise.py): conv2d, and
conv2d_relu_pool2d, a convolution, its ReLU and the pooling after it as one op. Wide activations
are read as channel vectors, so channels-last: convolutions return channels-last outputs (also from
a 3-channel NCHW input, which they gather from)."""
import torch

from .. import amp
from ..kernels import conv as _conv
from ..kernels import depthwise as _depthwise
from ..kernels import pointwise as _pw
from ..kernels import pool as _pool
from ..kernels.launch import (InputError, InputIndexError, at_least, check, check_type, is_channels_last,
                              keeps_channels_last, kept, pair, plain, single, sizes_type, triple)
from ..tensor import Tensor, named, record, tape_mark
from .copy import cat, contiguous, getitem, reshape, to, transpose, unsqueeze
from .pad import pad
from .pointwise import add
from .gemm import bias_grad
from .inputs import check_tensors, needs_grad
from .pointwise import gt, where
from .pool import pool_args
from .reduce import sum as sum_dims


def check_conv_args(kernel, stride, padding, dilation, groups, in_channels, out_channels):
    """A convolution's arguments as torch takes them: stride and dilation positive ints or
    pairs, padding an int, a pair, 'valid' or 'same' (stride 1 only, as torch), groups a
    positive int that divides both channel counts. A kernel dim of size 0 passes, as torch's layers take
    it: the convolution raises torch's error at the forward (check_kernel_size)."""
    conv_arg_types(stride, padding, dilation, groups)
    _conv_arg_values(kernel, stride, padding, dilation, groups, in_channels, out_channels)


def _conv_arg_values(kernel, stride, padding, dilation, groups, in_channels, out_channels, batch=None):
    """check_conv_args past the arguments' types (conv_arg_types) and the kernel's size; an empty batch (batch 0)
    may have dilation 0, as torch's."""
    _conv.conv_dilation(dilation, batch)
    check(groups > 0, lambda: f"conv2d: groups must be a positive int, got {groups!r}")
    check(in_channels % groups == 0 and out_channels % groups == 0,
          lambda: f"conv2d: groups={groups} must divide in_channels ({in_channels}) and out_channels ({out_channels})")
    _conv.conv_pads(padding, stride, kernel, dilation)


def check_kernel_size(kernel, batch=None):
    """torch's error for a kernel dim of size 0, which it raises past the shapes' and arguments' checks: an
    empty batch's IndexError (torch's path for one selects the weight's first element), else a RuntimeError."""
    if min(kernel) > 0:
        return
    if batch == 0:
        raise InputIndexError("select(): index 0 out of range for tensor of size [0] at dimension 0")
    raise InputError(f"kernel size should be greater than zero, but got {tuple(kernel)}")


def conv_arg_types(stride, padding, dilation, groups, n=2, name="conv2d", output_padding=0):
    """torch's argument parser's TypeErrors for the arguments of a convolution of n dims (sizes: an int or
    ints, a convolution's padding also a string, a transposed one's output_padding too), which it raises
    before any check of a shape or a value."""
    sizes_type(stride, n, f"{name}: stride")
    sizes_type(dilation, n, f"{name}: dilation")
    if not isinstance(padding, str) or "transpose" in name:
        sizes_type(padding, n, f"{name}: padding")
    sizes_type(output_padding, n, f"{name}: output_padding")
    check_type(isinstance(groups, int) and not isinstance(groups, bool),
               lambda: f"{name}(): argument 'groups' must be int, not {type(groups).__name__}")


_CHECKED = {}  # (shapes, arguments) that passed _check_shapes, where the arguments are plain


def _check_shapes(x, w, b, stride, padding, dilation, groups):
    conv_arg_types(stride, padding, dilation, groups)
    check(x.ndim == 4 and w.ndim == 4, lambda: f"conv2d: x and w must be 4-D, got {x.shape} and {w.shape}")
    _conv_arg_values(w.shape[2:], stride, padding, dilation, groups, x.shape[1], w.shape[0], x.shape[0])
    check(x.shape[1] == w.shape[1] * groups, lambda: f"conv2d: x has {x.shape[1]} channels but w expects "
                                                     f"{w.shape[1] * groups}" + (f" ({groups} groups)" if groups > 1 else ""))
    check(b is None or b.shape == (w.shape[0],),
          lambda: f"conv2d: b is {None if b is None else b.shape}, expected ({w.shape[0]},)")
    if min(w.shape[2:]) == 0:  # torch checks the input's size against the kernel's first
        _conv.conv_geometry("conv2d", x.shape[2:], w.shape[2:], stride, padding, dilation, x.shape[0])
        check_kernel_size(w.shape[2:], x.shape[0])


def _check_dtypes(name, x, w, b, low):
    """x's, w's and b's dtypes one (not under autocast, which casts them), as torch's; an empty batch's w may
    differ (torch reads none of it), its b not."""
    if low is None:
        check(x.dtype == w.dtype or x.shape[0] == 0,
              lambda: f"{name}: x is {x.dtype} but w is {w.dtype}; use one dtype, or tnet.autocast")
        check(b is None or b.dtype == x.dtype,
              lambda: f"{name}: Input type ({x.dtype}) and bias type ({b.dtype}) should be the same")


def _convolve(x, w, b, stride, padding, relu, dilation=1, groups=1):
    """Checks and runs a convolution; returns y and grads(g), the gradients (x, w, b) for
    the gradient g of y (with relu: already masked by y > 0), g in y's layout. Depthwise ones
    (groups == C) run kernels/depthwise.py's stencils, the others conv.py's implicit GEMMs."""
    check_tensors("conv2d", x=x, w=w)
    check_type(b is None or isinstance(b, Tensor),
          lambda: f"conv2d: bias must be a tnet.Tensor or None, got {type(b).__name__}")
    # the shapes' and arguments' checks, once for plain arguments (lists are not hashable, and
    # (1, 1.0) equals (1, 1))
    checks = lambda: _check_shapes(x, w, b, stride, padding, dilation, groups)
    if plain(stride, padding, dilation, groups):
        kept(_CHECKED, (x.shape, w.shape, None if b is None else b.shape, stride, padding, dilation, groups), checks)
    else:
        checks()
    low = amp.get_autocast_dtype()
    _check_dtypes("conv2d", x, w, b, low)
    need_x, need_w, need_b = needs_grad(x, w, b)
    kernels = _depthwise if _depthwise.is_depthwise(x.shape[1], groups) else _conv
    # a wide x is read as channel vectors (a depthwise one always), so channels-last (no copy if
    # already so), once for the forward and the weight gradient; a narrow one (RGB) is gathered
    # in any layout
    cl = kernels is _depthwise or _conv.reads_vectors(x.shape[1])
    X = x.memory.contiguous(memory_format=torch.channels_last) if cl else x.memory
    # the kernels' epilogue reads the bias dense: a strided or expanded one (torch takes any) copied, C elements
    Wl, B = w.memory if low is None else amp.cast_operand(w, low), None if b is None else b.memory.contiguous()
    y = kernels.conv2d(X, Wl, stride, padding, dilation, groups, bias=B, relu=relu, out_dtype=low or x.dtype)
    X = X if need_w else None  # only the weight gradient reads it
    saved = (w if need_x else None, X, y if relu else None)  # what grads reads (y: the ReLU's mask)

    def grads(g):
        gx = gw = gb = None
        if kernels is _depthwise:
            if need_x:
                gx = kernels.conv2d_input(x.shape, Wl, g, stride, padding, dilation, groups, out_dtype=x.dtype)
            if need_w:
                gw = kernels.conv2d_weight(X, w.shape, g, stride, padding, dilation, groups,
                                           channels_last=is_channels_last(w.memory))
        elif need_x or need_w:  # unchecked: the forward checked what conv2d_input and conv2d_weight would
            geometry = _conv.conv_geometry("conv2d", x.shape[2:], w.shape[2:], stride, padding, dilation, x.shape[0])
            if need_x:
                gx = _conv.input_trusted(x.shape, Wl, g, geometry, groups, out_dtype=x.dtype)
            if need_w:
                gw = _conv.weight_trusted(X, w.shape, g, geometry, groups, channels_last=is_channels_last(w.memory))
        if need_b:
            gb = bias_grad(g, b.dtype)
        return (gx, gw) if b is None else (gx, gw, gb)
    return y, grads, saved


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, relu=False):
    """input [N, C, H, W] * weight [Cout, C/groups, kh, kw] + bias [Cout], torch's arguments in
    torch's order (padding an int, a pair, 'same' or 'valid'; 'same' pads an even kernel's odd
    row and column at the end, as torch), as implicit GEMMs (kernels/conv.py), a group per grid
    row; depthwise ones (groups == C) as stencils (kernels/depthwise.py), fp32 products whatever
    the precision. The output is channels-last. tnet's addition, keyword-only:
    relu=True applies ReLU in the GEMM's epilogue
    (relu(conv2d(...)) in one pass over the output instead of three). Under tnet.autocast the
    products are 16-bit and so is the output; an fp32 w is read through its 16-bit copy and
    gets an fp32 gradient. An unbatched input [C, H, W] gives [Cout, OH, OW], as torch's."""
    if isinstance(input, Tensor) and input.ndim == 3:
        return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, relu=relu).squeeze(0)
    x, w, b = input, weight, bias
    y, grads, saved = _convolve(x, w, b, stride, padding, relu, dilation, groups)

    def backward(g):
        return grads(_pw.relu_backward(y, g) if relu else g)
    return record("conv2d", y, (x, w) if b is None else (x, w, b), backward, saved=saved,
                  graph=lambda g, out: _conv2d_graph(g, out, x, w, b, stride, padding, dilation, groups, relu))


def _conv2d_graph(g, y, x, w, b, stride, padding, dilation, groups, relu):
    """conv2d's gradients (x, w, b) on the tape (record's graph=): the input's a transposed
    convolution of g by w; the weight's a convolution of x by g, batch and channels swapped
    (stride and dilation swapped too), cut to the kernel's size. Symmetric padding only."""
    if relu:
        g = where(gt(y, 0.0), g, 0.0)
    (top, bottom), (left, right) = _conv.conv_pads(padding, stride, w.shape[2:], dilation)
    if top != bottom or left != right:
        raise NotImplementedError("create_graph through conv2d with padding='same' and an even kernel (uneven "
                                  "padding) is not supported")
    pads, strides, dilations = (top, left), pair(stride, "conv2d: stride", 1, True), _conv.conv_dilation(dilation, x.shape[0])
    gx = gw = gb = None
    if x.requires_grad:
        extra = tuple(n - ((o - 1) * s - 2 * p + d * (k - 1) + 1)  # the rows and columns the stride left out
                      for n, o, s, p, d, k in zip(x.shape[2:], g.shape[2:], strides, pads, dilations, w.shape[2:]))
        gx = conv_transpose2d(g, w, None, strides, pads, extra, groups, dilations)
    if w.requires_grad:
        gw = weight_graph(x, g, w.shape, strides, pads, dilations, groups)
    if b is not None and b.requires_grad:
        gb = sum_dims(g, (0, 2, 3))
    return (gx, gw) if b is None else (gx, gw, gb)


def weight_graph(x, g, shape, strides, pads, dilations, groups):
    """The weight gradient of conv1d, conv2d or conv3d (by x's ndim) of x by a weight of shape `shape` for the
    output's gradient g, on the tape: each group's a convolution of its x by its g, batch and channels swapped
    (stride and dilation swapped too), cut to the kernel's size; the groups' joined along the output channels.
    conv2d's and conv_transpose2d's create_graph, and torch.nn.grad's conv*_weight, take it."""
    conv = {3: conv1d, 4: conv2d, 5: conv3d}[x.ndim]
    cin, cout = x.shape[1] // groups, g.shape[1] // groups
    parts = []
    for i in range(groups):
        xi = getitem(x, (slice(None), slice(i * cin, (i + 1) * cin))) if groups > 1 else x
        gi = getitem(g, (slice(None), slice(i * cout, (i + 1) * cout))) if groups > 1 else g
        full = conv(transpose(xi, 0, 1), transpose(gi, 0, 1), None, dilations, pads, strides)  # [cin, cout, >= k...]
        parts.append(transpose(getitem(full, (slice(None), slice(None), *(slice(k) for k in shape[2:]))), 0, 1))
    return parts[0] if groups == 1 else cat(parts, 0)


def conv2d_relu_pool2d(x, w, b, stride, padding, mode, kernel_size, pool_stride=None, pool_padding=0,
                       ceil_mode=False, *, dilation=1, groups=1, count_include_pad=True, divisor_override=None):
    """{mode}_pool2d(relu(conv2d(x, w, b, stride, padding, dilation, groups)), kernel_size, ...)
    as one op, mode "max" or "avg" (count_include_pad and divisor_override: avg_pool2d's): ReLU
    runs in the convolution's epilogue, its gradient in the pooling's backward kernel, so the
    convolution's output is written once and its gradient once. ReLU commutes with max pooling,
    so this is also max_pool2d followed by relu."""
    check(mode in ("max", "avg"), lambda: f"conv2d_relu_pool2d: mode must be 'max' or 'avg', got {mode!r}")
    y, grads, saved = _convolve(x, w, b, stride, padding, True, dilation, groups)
    kernel, pool_stride, pool_padding = pool_args(mode, kernel_size, pool_stride, pool_padding)
    p_cl = keeps_channels_last(y.shape[1])
    divisor = dict(count_include_pad=count_include_pad, divisor_override=divisor_override)
    p, arg = _pool.pool2d(y, kernel, pool_stride, pool_padding, ceil_mode, mode, channels_last=p_cl, **divisor)
    y_cl = is_channels_last(y)

    def backward(g):
        return grads(_pool.pool2d_backward(g, arg, y.shape, kernel, pool_stride, pool_padding, mode, relu_input=y,
                                           x_channels_last=y_cl, y_channels_last=p_cl, **divisor))
    return record("conv2d_relu_pool2d", p, (x, w) if b is None else (x, w, b), backward, saved=saved)


def empty_output(name, shape, dtype, inputs):
    """A transposed convolution's output of no element (a dim of size 0: the padding crops all of it): nothing
    runs, and every input's gradient is 0, as torch's (cuDNN skips an empty output; a NaN weight reaches nothing)."""
    inputs = tuple(t for t in inputs if t is not None)
    y = torch.empty(shape, device=inputs[0].memory.device, dtype=dtype)
    return record(name, y, inputs, lambda g: tuple(torch.zeros_like(t.memory) for t in inputs))


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed convolution (the gradient of conv2d's input, as a layer): input [N, Cin, H, W],
    weight [Cin, Cout/groups, kh, kw], torch's arguments in torch's order; the output [N, Cout, OH,
    OW], OH = (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1, is
    channels-last. It runs the convolutions' input-gradient kernels; its gradients, a convolution
    (the input's) and the weight-gradient kernel. Under tnet.autocast as conv2d."""
    x, w, b = input, weight, bias
    check_tensors("conv_transpose2d", x=x, w=w)
    # every argument's type before any shape or value, as torch's parser; a list of one int expanded, as torch's
    stride, padding, extra, dilation = (pair(v, f"conv_transpose2d: {name}", None, True) for v, name in (
        (stride, "stride"), (padding, "padding"), (output_padding, "output_padding"), (dilation, "dilation")))
    check_type(isinstance(groups, int) and not isinstance(groups, bool),
               lambda: f"conv_transpose2d(): argument 'groups' must be int, not {type(groups).__name__}")
    check(x.ndim == 4 and w.ndim == 4 and x.shape[1] == w.shape[0],
          lambda: f"conv_transpose2d: input {x.shape} and weight {w.shape}: expected [N, Cin, H, W] and [Cin, "
                  f"Cout/groups, kh, kw] with Cin = {x.shape[1] if x.ndim == 4 else '?'}")
    check(groups > 0 and w.shape[0] % groups == 0,
          lambda: f"conv_transpose2d: groups={groups!r} must be a positive int dividing in_channels {w.shape[0]}")
    cout = w.shape[1] * groups
    check(b is None or (isinstance(b, Tensor) and b.shape == (cout,)),
          lambda: f"conv_transpose2d: bias must be a tnet.Tensor of ({cout},) or None")
    stride, padding = at_least(stride, "conv_transpose2d: stride", 1), at_least(padding, "conv_transpose2d: padding", 0)
    extra = at_least(extra, "conv_transpose2d: output_padding", 0)
    dilation = _conv.conv_dilation(dilation, x.shape[0], transposed=True)  # 0 for an empty batch, as torch's
    check_kernel_size(w.shape[2:], x.shape[0])  # before output_padding's check, as torch's
    if x.shape[0] and any(o >= max(s, d) for o, s, d in zip(extra, stride, dilation)):  # torch checks no empty batch
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got output_padding: "
                           f"{extra}, stride: {stride}, dilation: {dilation}")
    if any(o >= s for o, s in zip(extra, stride)):
        # output_padding past the stride (below the dilation): the kernels' convolution of the output
        # would give q = o // s rows more than x has; x with q rows of zeros more is the same sum, at o % s
        more = [o // s for o, s in zip(extra, stride)]
        return conv_transpose2d(pad(x, (0, more[1], 0, more[0])), w, b, stride, padding,
                                tuple(o % s for o, s in zip(extra, stride)), groups, dilation)
    out = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1
                for n, s, p, d, k, o in zip(x.shape[2:], stride, padding, dilation, w.shape[2:], extra))
    check(min(out) >= 0, lambda: f"conv_transpose2d: the output would be {out}")
    low = amp.get_autocast_dtype()
    if x.shape[0]:  # torch's transposed convolution of an empty batch reads no dtype, its bias's neither
        _check_dtypes("conv_transpose2d", x, w, b, low)
    if min(out) == 0:
        return empty_output("conv_transpose2d", (x.shape[0], cout, *out), low or x.dtype, (x, w, b))
    need_x, need_w, need_b = needs_grad(x, w, b)
    # the convolution whose input gradient this is maps cout channels to Cin: its kernels
    kernels = _depthwise if _depthwise.is_depthwise(cout, groups) else _conv
    X = x.memory.contiguous(memory_format=torch.channels_last)
    Wl = w.memory if low is None else amp.cast_operand(w, low)
    y = kernels.conv2d_input((x.shape[0], cout, *out), Wl, X, stride, padding, dilation, groups,
                             out_dtype=low or x.dtype)
    if b is not None:
        y = _pw.pointwise("add", y, b.memory.view(1, cout, 1, 1).to(y.dtype))

    def backward(g):
        g = g.contiguous(memory_format=torch.channels_last)
        gx = kernels.conv2d(g, Wl, stride, padding, dilation, groups, out_dtype=x.dtype) if need_x else None
        gw = (kernels.conv2d_weight(g, w.shape, X, stride, padding, dilation, groups,
                                    channels_last=is_channels_last(w.memory)) if need_w else None)
        gb = bias_grad(g, b.dtype) if need_b else None
        return (gx, gw) if b is None else (gx, gw, gb)
    saved = (w if need_x else None, X if need_w else None)

    def graph(g, out):  # the input's gradient a convolution of g by w, the weight's conv2d's with x and g swapped
        gx = conv2d(g, w, None, stride, padding, dilation, groups) if x.requires_grad else None
        gw = weight_graph(g, x, w.shape, stride, padding, dilation, groups) if w.requires_grad else None
        gb = sum_dims(g, (0, 2, 3)) if b is not None and b.requires_grad else None
        return (gx, gw) if b is None else (gx, gw, gb)
    return record("conv_transpose2d", y, (x, w) if b is None else (x, w, b), backward, saved=saved, graph=graph)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """input [N, C, L] * weight [Cout, C/groups, k] + bias, torch's arguments in torch's order
    (padding also 'same' or 'valid'): conv2d over [N, C, 1, L]. The output [N, Cout, L'] keeps its
    channels-last memory (NLC). An unbatched input [C, L] gives [Cout, L'], as torch's."""
    check_tensors("conv1d", input=input, weight=weight)
    conv_arg_types(stride, padding, dilation, groups, 1, "conv1d")  # every type before any shape or value, as torch's parser
    s, d = (single(v, f"conv1d: {name}", None) for v, name in ((stride, "stride"), (dilation, "dilation")))
    p = padding if isinstance(padding, str) else single(padding, "conv1d: padding", None)
    if input.ndim == 2:
        return conv1d(input.unsqueeze(0), weight, bias, s, p, d, groups).squeeze(0)
    check(input.ndim == 3 and weight.ndim == 3,
          lambda: f"conv1d: expected input [N, C, L] and weight [Cout, C/groups, k], got {input.shape} and "
                  f"{weight.shape}")
    p = p if isinstance(p, str) else (0, at_least(p, "conv1d: padding", 0))
    mark = tape_mark()  # the squeezed result is torch's one convolution node (ConvolutionBackward0)
    y = conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias, (1, at_least(s, "conv1d: stride", 1)), p, (1, d),
               groups)  # conv2d checks the dilation, as torch's conv1d (0 for an empty batch)
    return named("conv1d", mark, y.squeeze(2))



def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed convolution of [N, Cin, L] (or [Cin, L]) by weight [Cin, Cout/groups, k], torch's
    arguments in torch's order: conv_transpose2d over [N, Cin, 1, L]."""
    check_tensors("conv_transpose1d", input=input, weight=weight)
    conv_arg_types(stride, padding, dilation, groups, 1, "conv_transpose1d", output_padding)  # as conv1d's
    s, p, o, d = (single(v, f"conv_transpose1d: {name}", None) for v, name in (
        (stride, "stride"), (padding, "padding"), (output_padding, "output_padding"), (dilation, "dilation")))
    check(input.ndim in (2, 3) and weight.ndim == 3,
          lambda: f"conv_transpose1d: expected input [N, Cin, L] or [Cin, L] and weight [Cin, Cout/groups, k], got "
                  f"{input.shape} and {weight.shape}")
    x = input.unsqueeze(2) if input.ndim == 3 else input.unsqueeze(0).unsqueeze(2)
    mark = tape_mark()
    y = conv_transpose2d(x, weight.unsqueeze(2), bias, (1, at_least(s, "conv_transpose1d: stride", 1)),
                         (0, at_least(p, "conv_transpose1d: padding", 0)),
                         (0, at_least(o, "conv_transpose1d: output_padding", 0)), groups, (1, d))  # d: as conv1d's
    y = named("conv_transpose1d", mark, y.squeeze(2))
    return y if input.ndim == 3 else y.squeeze(0)


# ---- 3-D convolutions: a kernel of depth kd is kd plane kernels [Cout, C/groups, kh, kw], each a conv2d (or
# conv_transpose2d) over the batch of depth slices it meets, the kd results added: tnet's 2-D kernels and
# their gradients, kd launches of each (no 3-D kernel) ----

def _check_bias_3d(bias, channels, name):
    """A 3-D convolution's bias: None or a tnet Tensor [channels], checked at any batch size, as torch's."""
    check_type(bias is None or isinstance(bias, Tensor),
               lambda: f"{name}: bias must be a tnet.Tensor or None, got {type(bias).__name__}")
    check(bias is None or bias.shape == (channels,),
          lambda: f"{name}: bias is {None if bias is None else bias.shape}, expected ({channels},)")


def _bias_3d(y, bias, name):
    _check_bias_3d(bias, y.shape[1], name)
    return y if bias is None else add(y, reshape(bias, (1, -1, 1, 1, 1)))


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """input [N, C, D, H, W] * weight [Cout, C/groups, kd, kh, kw] + bias [Cout], torch's arguments in
    torch's order (padding an int, a triple, 'same' or 'valid'; 'same' pads an even kernel's odd plane at
    the end, as torch). Kernel plane k is a conv2d over the [N*D', C, H, W] batch of the depth slices it
    meets; the kd results are added. The output is contiguous; an unbatched [C, D, H, W] gives
    [Cout, D', H', W'], as torch's."""
    check_tensors("conv3d", input=input, weight=weight)
    conv_arg_types(stride, padding, dilation, groups, 3, "conv3d")  # every type before any shape or value, as torch's
    if input.ndim == 4:
        return conv3d(unsqueeze(input, 0), weight, bias, stride, padding, dilation, groups)[0]
    mark = tape_mark()  # the planes' convolutions make torch's one node (ConvolutionBackward0)
    check(input.ndim == 5 and weight.ndim == 5,
          lambda: f"conv3d: expected input [N, C, D, H, W] and weight [Cout, C/groups, kd, kh, kw], got "
                  f"{input.shape} and {weight.shape}")
    sd, sh, sw = triple(stride, "conv3d: stride", 1, True)
    dd, dh, dw = _conv.conv_dilation(dilation, input.shape[0], 3)  # 0 for an empty batch, as torch's
    if not isinstance(padding, str):
        front, *plane_padding = triple(padding, "conv3d: padding", 0, True)
        back = front
    check(not isinstance(groups, int) or input.shape[1] == weight.shape[1] * groups,
          lambda: f"conv3d: input has {input.shape[1]} channels but weight expects {weight.shape[1] * groups}")
    if isinstance(bias, Tensor):  # the planes' conv2d checks the weight, not the bias added after
        _check_dtypes("conv3d", input, weight, bias, amp.get_autocast_dtype())
    check_kernel_size(weight.shape[2:], input.shape[0])  # a depth of 0 runs no plane's conv2d
    kd = weight.shape[2]
    if isinstance(padding, str):  # the depth's pad here, the plane's by conv2d's rule
        front = back = 0
        if padding == "same":
            check((sd, sh, sw) == (1, 1, 1), "conv3d: padding='same' is not supported for strided convolutions")
            front, back = dd * (kd - 1) // 2, dd * (kd - 1) - dd * (kd - 1) // 2
        plane_padding = padding
    x = pad(input, (0, 0, 0, 0, front, back)) if front or back else input
    N, C, D, H, W = x.shape
    OD = (D - dd * (kd - 1) - 1) // sd + 1
    check(OD > 0, lambda: f"conv3d: the kernel's depth {kd} (dilation {dd}) exceeds the padded input's {D}")
    slices = transpose(x, 1, 2)  # [N, D, C, H, W]: a depth slice per image
    y = None
    for k in range(kd):
        planes = reshape(contiguous(getitem(slices, (slice(None), slice(k * dd, k * dd + sd * (OD - 1) + 1, sd)))),
                         (N * OD, C, H, W))
        yk = conv2d(planes, contiguous(getitem(weight, (slice(None), slice(None), k))), None, (sh, sw),
                    plane_padding, (dh, dw), groups)
        y = yk if y is None else add(y, yk)
    y = contiguous(transpose(reshape(y, (N, OD, *y.shape[1:])), 1, 2))
    return named("conv3d", mark, _bias_3d(y, bias, "conv3d"))


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed 3-D convolution: input [N, Cin, D, H, W] (or [Cin, D, H, W]), weight [Cin, Cout/groups,
    kd, kh, kw], torch's arguments in torch's order; OD = (D - 1) * stride - 2 * padding + dilation * (kd - 1)
    + output_padding + 1 (and so OH, OW). Kernel plane k is a conv_transpose2d of the [N*D, Cin, H, W] slices,
    whose slice i lands on depth i * stride + k * dilation - padding; the kd results are added. The output
    is contiguous."""
    check_tensors("conv_transpose3d", input=input, weight=weight)
    conv_arg_types(stride, padding, dilation, groups, 3, "conv_transpose3d", output_padding)  # as conv3d's
    if input.ndim == 4:
        return conv_transpose3d(unsqueeze(input, 0), weight, bias, stride, padding, output_padding, groups, dilation)[0]
    check(input.ndim == 5 and weight.ndim == 5,
          lambda: f"conv_transpose3d: expected input [N, Cin, D, H, W] and weight [Cin, Cout/groups, kd, kh, kw], "
                  f"got {input.shape} and {weight.shape}")
    sd, *s2 = triple(stride, "conv_transpose3d: stride", 1, True)
    pd, *p2 = triple(padding, "conv_transpose3d: padding", 0, True)
    (od, *o2) = triple(output_padding, "conv_transpose3d: output_padding", 0, True)
    (dd, *d2) = _conv.conv_dilation(dilation, input.shape[0], 3, transposed=True)  # as conv3d's
    check_kernel_size(weight.shape[2:], input.shape[0])  # as conv_transpose2d's
    if input.shape[0] and od >= max(sd, dd):  # as conv_transpose2d's
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got output_padding: "
                           f"{(od, *o2)}, stride: {(sd, *s2)}, dilation: {(dd, *d2)}")
    N, C, D, H, W = input.shape
    if N and isinstance(bias, Tensor):  # as conv_transpose2d's (which gets no bias here)
        _check_dtypes("conv_transpose3d", input, weight, bias, amp.get_autocast_dtype())
    kd = weight.shape[2]
    full = (D - 1) * sd + dd * (kd - 1) + od + 1  # the output's depth before padding's crop
    check(full - 2 * pd >= 0, lambda: f"conv_transpose3d: the output's depth would be {full - 2 * pd}")
    planes = reshape(contiguous(transpose(input, 1, 2)), (N * D, C, H, W))
    if full - 2 * pd == 0:  # no depth: the planes' checks (on none of them), then nothing runs
        plane = conv_transpose2d(getitem(planes, slice(0, 0)), getitem(weight, (slice(None), slice(None), 0)), None,
                                 s2, p2, o2, groups, d2)
        _check_bias_3d(bias, plane.shape[1], "conv_transpose3d")
        if N:
            _check_dtypes("conv_transpose3d", input, weight, bias, amp.get_autocast_dtype())
        return empty_output("conv_transpose3d", (N, plane.shape[1], 0, *plane.shape[2:]),
                            amp.get_autocast_dtype() or input.dtype, (input, weight, bias))
    y = None
    for k in range(kd):
        yk = conv_transpose2d(planes, contiguous(getitem(weight, (slice(None), slice(None), k))), None, s2, p2, o2,
                              groups, d2)
        yk = reshape(yk, (N, D, 1, *yk.shape[1:]))
        # slice i to depth i * sd (stride - 1 zero slices after each), then shifted by k * dd and cropped by
        # the padding: one constant pad (negative where it crops)
        yk = reshape(pad(yk, (0, 0) * 3 + (0, sd - 1)), (N, D * sd, *yk.shape[3:]))
        yk = pad(yk, (0, 0) * 3 + (k * dd - pd, full - k * dd - D * sd - pd))
        y = yk if y is None else add(y, yk)
    y = contiguous(transpose(y, 1, 2))
    if not N and isinstance(bias, Tensor) and bias.shape == (y.shape[1],):
        # an empty batch's output keeps input's dtype, as torch's, whose empty path adds no bias; the bias still
        # gets its zero gradient there, as torch's: the empty sum of a recorded addition of its cast
        return _bias_3d(y, bias if bias.dtype == y.dtype else to(bias, y.dtype), "conv_transpose3d")
    return _bias_3d(y, bias, "conv_transpose3d")  # an empty batch's bias was added above where its shape is right
