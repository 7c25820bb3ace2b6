"""Pooling (kernels/pool.py): max and average pooling over windows, and global average pooling.
An NCHW input of a width kept channels-last (launch.keeps_channels_last) comes out channels-last."""
from ..kernels import pool as _pool
from ..kernels.launch import check, is_channels_last, keeps_channels_last, pair
from ..tensor import record
from .inputs import check_tensors
from .reduce import sum_or_mean


def pool_args(mode, kernel_size, stride, padding):
    kernel = pair(kernel_size, f"{mode}_pool2d: kernel_size", 1)
    stride = kernel if stride is None else pair(stride, f"{mode}_pool2d: stride", 1)
    return kernel, stride, pair(padding, f"{mode}_pool2d: padding")


def _pool2d(mode, x, kernel_size, stride, padding, ceil_mode):
    check_tensors(f"{mode}_pool2d", x=x)
    kernel, stride, padding = pool_args(mode, kernel_size, stride, padding)
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
    """Average pooling over [N, C, H, W]; the divisor counts the padding (Caffe's rule)."""
    return _pool2d("avg", x, kernel_size, stride, padding, ceil_mode)


def adaptive_avg_pool2d(input, output_size):
    """The mean over H and W of [N, C, H, W] (or [C, H, W]) as [N, C, 1, 1]: only output size 1."""
    check_tensors("adaptive_avg_pool2d", input=input)
    check(output_size in (1, (1, 1), [1, 1]),
          f"adaptive_avg_pool2d: only output_size 1 (global average pooling) is supported, got {output_size!r}")
    check(input.ndim in (3, 4), f"adaptive_avg_pool2d: expected a 3-D or 4-D input, got {input.shape}")
    return sum_or_mean("adaptive_avg_pool2d", input, (-2, -1), True, mean=True)
