"""Pooling (kernels/pool.py): max and average pooling over windows, and adaptive pooling.
An NCHW input of a width kept channels-last (launch.keeps_channels_last) comes out channels-last."""
import torch

from ..kernels import pool as _pool
from ..kernels.copy import copy_
from ..kernels.launch import check, is_channels_last, is_flat, keeps_channels_last, pair
from ..tensor import Tensor, in_layout, record
from .inputs import check_tensors
from .reduce import sum_or_mean


def pool_args(mode, kernel_size, stride, padding):
    kernel = pair(kernel_size, f"{mode}_pool2d: kernel_size", 1)
    stride = kernel if stride is None else pair(stride, f"{mode}_pool2d: stride", 1)
    return kernel, stride, pair(padding, f"{mode}_pool2d: padding")


def _pool2d(mode, x, kernel_size, stride, padding, ceil_mode):
    check_tensors(f"{mode}_pool2d", x=x)
    kernel, stride, padding = pool_args(mode, kernel_size, stride, padding)
    if mode == "avg" and x.ndim == 4 and padding == (0, 0) and kernel == tuple(x.shape[2:]):
        return sum_or_mean("avg_pool2d", x, (-2, -1), True, mean=True)  # a global pooling: see avg_pool2d
    y_cl = keeps_channels_last(x.shape[1])
    y, arg = _pool.pool2d(x.data, kernel, stride, padding, ceil_mode, mode, channels_last=y_cl)
    shape, x_cl = x.shape, is_channels_last(x.data)

    def backward(g):
        return (_pool.pool2d_backward(g, arg, shape, kernel, stride, padding, mode, x_channels_last=x_cl,
                                      y_channels_last=y_cl),)
    return record(f"{mode}_pool2d", y, (x,), backward)


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    """Max pooling over [N, C, H, W]; ties go to the first maximum in row-major order."""
    return _pool2d("max", x, kernel_size, stride, padding, ceil_mode)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    """Average pooling over [N, C, H, W]; the divisor counts the padding (Caffe's rule). A window
    of the whole image without padding (F.avg_pool2d(x, x.size(2)), a global pooling) runs as a
    mean, the reduction kernel: the window kernel would loop over every tap of it."""
    return _pool2d("avg", x, kernel_size, stride, padding, ceil_mode)


def _adaptive(mode, input, output_size):
    """Adaptive pooling of [N, C, H, W] or [C, H, W] input to output_size (an int, or a pair whose
    None keeps the input's size): (the result, the max's int32 pixel indices or None)."""
    name = f"adaptive_{mode}_pool2d"
    check_tensors(name, input=input)
    check(input.ndim in (3, 4), lambda: f"{name}: expected a 3-D or 4-D input, got {input.shape}")
    size = (output_size, output_size) if output_size is None or isinstance(output_size, int) else tuple(output_size)
    check(len(size) == 2, lambda: f"{name}: output_size must be an int or a pair, got {output_size!r}")
    OH, OW = (input.shape[-2 + i] if s is None else s for i, s in enumerate(size))
    if mode == "avg" and (OH, OW) == (1, 1):  # global average pooling: the mean kernel
        return sum_or_mean(name, input, (-2, -1), True, mean=True), None
    X = input.data if input.ndim == 4 else input.data.unsqueeze(0)
    if not is_flat(X):  # a strided view (a channel slice): the kernels read dense memory
        X = X.contiguous()
    y, arg = _pool.adaptive_pool2d(X, (OH, OW), mode)
    image_shape = X.shape

    def backward(g):
        g = g if input.ndim == 4 else g.unsqueeze(0)
        dx = _pool.adaptive_pool2d_backward(in_layout(g, y), arg, image_shape, mode)
        return (dx if input.ndim == 4 else dx[0],)
    out = record(name, y if input.ndim == 4 else y[0], (input,), backward)
    return out, (arg if input.ndim == 4 else arg[0]) if arg is not None else None


def adaptive_avg_pool2d(input, output_size):
    """The mean over adaptive windows of [N, C, H, W] (or [C, H, W]) input, to output_size (an int
    or a pair; None keeps that size), with torch's windows: rows floor(i*H/OH) to ceil((i+1)*H/OH).
    The output keeps the input's layout; a strided input is copied dense first."""
    return _adaptive("avg", input, output_size)[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over adaptive windows (see adaptive_avg_pool2d); return_indices=True also gives
    the int64 flat index h*W + w of each maximum in its plane, as torch. NaN wins, as torch."""
    y, arg = _adaptive("max", input, output_size)
    if not return_indices:
        return y
    return y, Tensor(copy_(torch.empty_like(arg, dtype=torch.int64), arg))
