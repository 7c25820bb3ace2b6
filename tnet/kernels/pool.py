"""Max and average pooling over NCHW or channels-last tensors, forward and backward, with
Caffe's rules: max pooling skips the padding and keeps the first maximum in row-major order;
average pooling divides by the window clipped to the padded image (count_include_pad). The
geometry is constexpr: index divisions become multiplies. Tensors are float32,
float16 or bfloat16: sums and comparisons in fp32, y in x's dtype, dx in dy's."""
import torch
import triton
import triton.language as tl

from ._autotune import autotune, cdiv, check, check_float
from .conv import is_channels_last, memory_format, out_size

_CONFIGS = [triton.Config({"BLOCK": 4096}, num_warps=8), triton.Config({"BLOCK": 1024}, num_warps=4),
            triton.Config({"BLOCK": 256}, num_warps=2)]


@triton.jit
def _window(oh, ow, H, W, SH, SW, PH, PW, KH: tl.constexpr, KW: tl.constexpr):
    """First row and column of a window, and Caffe's average divisor for it."""
    h0 = oh * SH - PH
    w0 = ow * SW - PW
    size = (tl.minimum(h0 + KH, H + PH) - h0) * (tl.minimum(w0 + KW, W + PW) - w0)
    return h0, w0, size


@triton.jit
def _split(offs, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, CL: tl.constexpr):
    """(plane n*C + c, row, column) of flat offsets into an [N, C, H, W] tensor, NCHW or, with
    CL, channels-last (NHWC memory)."""
    if CL:
        pixel = offs // C
        return (pixel // (H * W)) * C + offs % C, (pixel // W) % H, pixel % W
    else:
        return offs // (H * W), (offs // W) % H, offs % W


@triton.jit
def _origin(plane, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, CL: tl.constexpr):
    """Flat offset of (plane, 0, 0); pixel (h, w) of the plane is (h*W + w) * (C if CL else 1) further."""
    if CL:
        return (plane // C) * (H * W * C) + plane % C
    else:
        return plane * (H * W)


@autotune(_CONFIGS, key=["total", "C", "H", "W", "OH", "OW", "KH", "KW", "MAX", "CL_X", "CL_Y"],
          interpret={"BLOCK": 1 << 16})
@triton.jit
def pool_kernel(x_ptr, y_ptr, arg_ptr, total, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                OH: tl.constexpr, OW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
                PW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, MAX: tl.constexpr, CL_X: tl.constexpr,
                CL_Y: tl.constexpr, BLOCK: tl.constexpr):
    """x [N, C, H, W] -> y [N, C, OH, OW], each NCHW or channels-last (CL_X, CL_Y: pooling is
    where an NCHW activation turns channels-last); max pooling also writes arg (laid out as
    y), the row-major index h*W+w of each maximum in its plane."""
    PIX: tl.constexpr = 1 + (C - 1) * CL_X  # distance between neighbouring pixels of a plane of x
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # int32: see _check_image
    mask = offs < total
    plane, oh, ow = _split(offs, C, OH, OW, CL_Y)
    h0, w0, size = _window(oh, ow, H, W, SH, SW, PH, PW, KH, KW)
    src = x_ptr + _origin(plane, C, H, W, CL_X)
    if MAX:
        best = tl.full((BLOCK,), float("-inf"), tl.float32)
        arg = tl.zeros((BLOCK,), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in tl.static_range(KH):
        h = h0 + i
        for j in tl.static_range(KW):
            w = w0 + j
            inside = mask & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            if MAX:
                v = tl.load(src + (h * W + w) * PIX, mask=inside, other=float("-inf")).to(tl.float32)
                better = v > best  # strict: the first maximum wins ties
                best = tl.where(better, v, best)
                arg = tl.where(better, (h * W + w).to(tl.int32), arg)
            else:
                acc += tl.load(src + (h * W + w) * PIX, mask=inside, other=0.0).to(tl.float32)
    if MAX:
        tl.store(y_ptr + offs, best.to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(arg_ptr + offs, arg, mask=mask)
    else:
        tl.store(y_ptr + offs, (acc / size.to(tl.float32)).to(y_ptr.dtype.element_ty), mask=mask)


@autotune(_CONFIGS, key=["total", "C", "H", "W", "OH", "OW", "KH", "KW", "MAX", "RELU", "CL_X", "CL_Y"],
          interpret={"BLOCK": 1 << 16})
@triton.jit
def pool_backward_kernel(dy_ptr, arg_ptr, x_ptr, dx_ptr, total, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                         OH: tl.constexpr, OW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
                         PW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, MAX: tl.constexpr, RELU: tl.constexpr,
                         CL_X: tl.constexpr, CL_Y: tl.constexpr, BLOCK: tl.constexpr):
    """dx [N, C, H, W] (laid out as the pooled x: CL_X) from dy [N, C, OH, OW] and arg (laid
    out as y: CL_Y): each pixel gathers from the windows that read it (no atomics,
    deterministic); max pooling only from windows whose maximum it was. RELU: the pooled x
    was a ReLU's output, whose gradient mask (x > 0) is applied here too."""
    PIX: tl.constexpr = 1 + (C - 1) * CL_Y  # distance between neighbouring pixels of a plane of dy
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # int32: see _check_image
    mask = offs < total
    plane, h, w = _split(offs, C, H, W, CL_X)
    origin = _origin(plane, C, OH, OW, CL_Y)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    # The windows that read row h are oh = (h + PH) // SH - t for t < ceil(KH / SH), those that
    # exist: 2 per axis for a 3x3 window at stride 2, so 4 loads where trying every tap takes 9.
    for t in tl.static_range((KH + SH - 1) // SH):
        oh = (h + PH) // SH - t
        ok_h = (oh >= 0) & (oh < OH) & (h + PH - oh * SH < KH)
        for u in tl.static_range((KW + SW - 1) // SW):
            ow = (w + PW) // SW - u
            ok_w = (ow >= 0) & (ow < OW) & (w + PW - ow * SW < KW)
            ok = mask & ok_h & ok_w
            at = origin + (oh * OW + ow) * PIX
            g = tl.load(dy_ptr + at, mask=ok, other=0.0).to(tl.float32)
            if MAX:
                hit = tl.load(arg_ptr + at, mask=ok, other=-1) == (h * W + w).to(tl.int32)
                acc += tl.where(hit, g, 0.0)
            else:
                _, _, size = _window(oh, ow, H, W, SH, SW, PH, PW, KH, KW)
                acc += g / size.to(tl.float32)
    if RELU:
        acc = tl.where(tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) > 0, acc, 0.0)
    tl.store(dx_ptr + offs, acc.to(dx_ptr.dtype.element_ty), mask=mask)


def _check_image(name, x):
    """x must be a float [N, C, H, W] tensor, NCHW or channels-last, under 2^31 elements."""
    check(x.dim() == 4, f"{name}: expected a 4-D NCHW tensor, got shape {tuple(x.shape)}")
    check(x.numel() < 2**31, f"{name}: {x.numel()} elements; kernels index with int32, split the batch")
    check_float(name, x)
    check(x.is_contiguous() or is_channels_last(x),
          f"{name}: expected a contiguous NCHW or channels-last tensor, got strides {x.stride()}")


def pool2d(x, kernel, stride, padding, ceil_mode, mode, channels_last=None):
    """mode "max" or "avg"; kernel, stride, padding are (h, w) pairs. Returns (y, arg), where
    arg is the int32 argmax for max pooling and None for average pooling; both channels-last
    if channels_last (None: as x is)."""
    _check_image(f"{mode}_pool2d", x)
    check(mode in ("max", "avg"), f"pool2d: mode must be 'max' or 'avg', got {mode!r}")
    N, C, H, W = x.shape
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, padding
    check(PH < KH and PW < KW, f"{mode}_pool2d: padding {padding} must be smaller than the kernel {kernel}")
    OH, OW = out_size(H, KH, SH, PH, ceil_mode), out_size(W, KW, SW, PW, ceil_mode)
    x_cl = is_channels_last(x)
    y_cl = x_cl if channels_last is None else channels_last
    y = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype, memory_format=memory_format(y_cl))
    arg = torch.empty((N, C, OH, OW), device=x.device, dtype=torch.int32, memory_format=memory_format(y_cl)) \
        if mode == "max" else None
    total = y.numel()
    grid = lambda meta: (cdiv(total, meta["BLOCK"]),)
    pool_kernel[grid](x, y, arg if arg is not None else y, total, C, H, W, OH, OW, SH, SW, PH, PW,
                      KH=KH, KW=KW, MAX=mode == "max", CL_X=x_cl, CL_Y=y_cl)
    return y, arg


def pool2d_backward(dy, arg, image_shape, kernel, stride, padding, mode, relu_input=None,
                    x_channels_last=False, y_channels_last=None):
    """dx of pool2d for dy; with relu_input, the pooled tensor (a ReLU's output), dx is
    also masked where relu_input <= 0: the ReLU's backward in the same pass.
    x_channels_last: the pooled tensor's layout (is_channels_last), which dx gets and
    relu_input must have; y_channels_last (None: the same): the pooling output's, which dy
    and arg must have."""
    N, C, H, W = image_shape
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, padding
    OH, OW = dy.shape[2], dy.shape[3]
    y_channels_last = x_channels_last if y_channels_last is None else y_channels_last
    _check_image(f"{mode}_pool2d backward", dy)
    for name, t, cl in (("dy", dy, y_channels_last), ("arg", arg, y_channels_last),
                        ("relu_input", relu_input, x_channels_last)):
        check(t is None or t.is_contiguous(memory_format=memory_format(cl)),
              lambda: f"{mode}_pool2d backward: {name} is not in the layout given for it "
                      f"({'channels-last' if cl else 'NCHW'}), strides {t.stride()}")
    check(relu_input is None or tuple(relu_input.shape) == tuple(image_shape),
          lambda: f"{mode}_pool2d backward: relu_input is {tuple(relu_input.shape)}, expected {tuple(image_shape)}")
    dx = torch.empty(image_shape, device=dy.device, dtype=dy.dtype, memory_format=memory_format(x_channels_last))
    total = dx.numel()
    grid = lambda meta: (cdiv(total, meta["BLOCK"]),)
    pool_backward_kernel[grid](dy, arg if arg is not None else dy, relu_input if relu_input is not None else dy, dx,
                               total, C, H, W, OH, OW, SH, SW, PH, PW, KH=KH, KW=KW, MAX=mode == "max",
                               RELU=relu_input is not None, CL_X=x_channels_last, CL_Y=y_channels_last)
    return dx
