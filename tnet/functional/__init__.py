"""Differentiable ops, as torch.nn.functional (and torch's tensor ops). Each computes its forward
with tnet's kernels and records, right beside it, the backward closure that returns one gradient
per input (None where no input needs one); forward saves only what backward needs. The modules
here mirror kernels/ by name: an op, its backward and its kernels are one hop apart.

Activations of 16 channels or more are kept channels-last (torch.channels_last: NCHW shape, NHWC
memory), where the convolutions read a tap's channels as one vector. Element-wise ops keep their
input's layout. The tape hands every backward its gradient in the layout of the op's output.

Tensor's operators and methods are bound here, at the end, and nowhere else."""
import torch

from ..tensor import Tensor
from .conv import conv2d, conv2d_relu_pool2d
from .copy import contiguous, flatten, getitem, reshape, t, to, view
from .gemm import linear, matmul
from .norm import batch_norm
from .pointwise import add, div, exp, gelu, log, mul, neg, pow, relu, sigmoid, silu, sqrt, sub, tanh
from .pool import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from .random import dropout
from .reduce import argmax, max, max_result, mean, mse_loss, sum
from .softmax import cross_entropy, log_softmax, softmax

def _swapped(op):
    """other (op) self, for the reflected operators (2 - x)."""
    return lambda self, other: op(other, self)


def _cast(dtype):
    return lambda self: to(self, dtype)


for _name, _method in {
        "__getitem__": getitem, "view": view, "reshape": reshape, "flatten": flatten, "t": t, "T": property(t),
        "contiguous": contiguous, "to": to, "float": _cast(torch.float32), "half": _cast(torch.float16),
        "bfloat16": _cast(torch.bfloat16),
        "__matmul__": matmul, "__add__": add, "__radd__": _swapped(add), "__sub__": sub, "__rsub__": _swapped(sub),
        "__mul__": mul, "__rmul__": _swapped(mul), "__truediv__": div, "__rtruediv__": _swapped(div),
        "__neg__": neg, "__pow__": pow, "exp": exp, "log": log, "sqrt": sqrt,
        "sum": sum, "mean": mean, "max": max, "argmax": argmax}.items():
    setattr(Tensor, _name, _method)
