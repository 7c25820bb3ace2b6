"""Elementwise kernels: ReLU forward and backward, in-place add and scale. Each works on
the flat memory of dense tensors of any size: contiguous, or channels-last, with every
operand laid out alike. Operands are float32, float16 or bfloat16, not necessarily one dtype:
kernels compute in fp32 and store in the output's dtype."""
import torch
import triton
import triton.language as tl

from ._autotune import FLOATS, autotune, cdiv, check, check_float
from .conv import is_channels_last

_CONFIGS = [triton.Config({"BLOCK": 4096}, num_warps=8), triton.Config({"BLOCK": 1024}, num_warps=4),
            triton.Config({"BLOCK": 2048}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=2)]


def check_like(name, *xs):
    """Float tensors of one shape and device, dense in one layout (contiguous or channels-last):
    the kernels run over their flat memory."""
    first = xs[0]
    for x in xs:
        check(x.shape == first.shape, lambda: f"{name}: shapes differ, {tuple(first.shape)} and {tuple(x.shape)}")
        check(x.device == first.device, lambda: f"{name}: tensors on {first.device} and {x.device}")
        check_float(name, x, "operands")
        check(is_channels_last(x) == is_channels_last(first) and (x.is_contiguous() or is_channels_last(x)),
              lambda: f"{name}: expected contiguous or channels-last tensors laid out alike, got strides {x.stride()}")


def _grid(n):
    return lambda meta: (cdiv(n, meta["BLOCK"]),)


@autotune(_CONFIGS, key=["n"], interpret={"BLOCK": 1 << 16})
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y = max(x, 0) over n elements."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL).to(y_ptr.dtype.element_ty), mask=mask)


@autotune(_CONFIGS, key=["n"], interpret={"BLOCK": 1 << 16})
@triton.jit
def relu_backward_kernel(y_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    """dx = 0 where the ReLU's output y <= 0, else dy (torch's threshold_backward: a NaN y passes dy)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask).to(tl.float32)
    tl.store(dx_ptr + offs, tl.where(y <= 0.0, 0.0, dy).to(dx_ptr.dtype.element_ty), mask=mask)


@autotune(_CONFIGS, key=["n"], interpret={"BLOCK": 1 << 16}, restore_value=["x_ptr"])
@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """x += y over n elements."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(x_ptr + offs, (x + y).to(x_ptr.dtype.element_ty), mask=mask)


@autotune(_CONFIGS, key=["n"], interpret={"BLOCK": 1 << 16}, restore_value=["x_ptr"])
@triton.jit
def scale_kernel(x_ptr, s_ptr, n, BLOCK: tl.constexpr):
    """x *= s[0]: the scalar is read on the device, so no host synchronisation."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(s_ptr).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(x_ptr + offs, (x * s).to(x_ptr.dtype.element_ty), mask=mask)


def relu(x, out=None):
    """max(x, 0) into out (default: a new tensor like x)."""
    out = torch.empty_like(x) if out is None else out
    check_like("relu", x, out)
    relu_kernel[_grid(x.numel())](x, out, x.numel())
    return out


def relu_backward(y, dy):
    """dy where the ReLU's output y > 0, else 0: a new tensor like dy."""
    check_like("relu_backward", y, dy)
    dx = torch.empty_like(dy)
    relu_backward_kernel[_grid(y.numel())](y, dy, dx, y.numel())
    return dx


def add_(x, y):
    """x += y in place (y cast to x's dtype, the sum in fp32); returns x."""
    check_like("add_", x, y)
    add_kernel[_grid(x.numel())](x, y, x.numel())
    return x


def scale_(x, s):
    """x *= s in place, where s is a one-element float device tensor; returns x."""
    check_like("scale_", x)
    check(s.numel() == 1 and s.device == x.device and s.dtype in FLOATS,
          f"scale_: s must be one float element on {x.device}, got {tuple(s.shape)} {s.dtype} on {s.device}")
    scale_kernel[_grid(x.numel())](x, s, x.numel())
    return x
