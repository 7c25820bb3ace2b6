"""tnet: a deep-learning mini-framework whose GPU kernels are written in Triton."""
from ._device import DEVICE, INTERPRET  # first: it may switch on Triton's interpreter
from .kernels.launch import InputError
from .kernels.gemm import get_precision, set_precision
from .tensor import Tensor, enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled, tensor
from .factory import bfloat16, float16, float32, full, int32, int64, manual_seed, ones, rand, randn, zeros
from .serialize import LoadError, load, save
from .amp import autocast, get_autocast_dtype, is_autocast_enabled
from . import functional, linalg, nn, optim, models, data, graph, cuda, utils
from torch import device  # torch.device: `tnet.device("cuda" if tnet.cuda.is_available() else "cpu")`


def is_tensor(obj):
    return isinstance(obj, Tensor)


def from_numpy(ndarray):
    """tnet.tensor(ndarray): a copy on tnet's device (torch's shares the array's memory, which a GPU
    cannot); floats become float32, integers int64, as tnet.tensor."""
    return tensor(ndarray)


def numel(input):
    return input.numel()


def as_tensor(data, dtype=None, device=None):
    """data itself where it is a tnet.Tensor of dtype (or dtype None), else tnet.tensor(data, dtype=dtype):
    a copy on tnet's device (torch's shares a numpy array's memory on the CPU)."""
    if isinstance(data, Tensor):
        return data if dtype in (None, data.dtype) else data.to(dtype)
    return tensor(data, dtype=dtype).to(device=device)


__version__ = "0.1.0"  # pyproject.toml reads it from here

__all__ = ["DEVICE", "INTERPRET", "Tensor", "tensor", "no_grad", "is_grad_enabled", "set_precision",
           "get_precision", "zeros", "ones", "full", "rand", "randn", "manual_seed", "float32", "float16",
           "bfloat16", "int64", "int32", "save", "load", "LoadError", "InputError", "functional", "linalg", "nn", "optim", "models",
           "data", "graph", "utils", "autocast", "get_autocast_dtype", "is_autocast_enabled", "cuda", "device",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_tensor", "from_numpy"]

# torch's top-level functions: shape ops, factories, element-wise ops, activations and reductions
from .functional import (abs, add, amax, amin, argmax, broadcast_to, cat, chunk, clamp, clamp_max, clamp_min, clip,
                         clone, cov, concat, concatenate, div, eq, exp, flatten, flip, ge, gt, index_select, le, log,
                         log_softmax, logical_and, logical_not, logical_or, lt, matmul, max, mean, movedim, mul,
                         narrow, ne, neg, permute, pow, relu, reshape, select, sigmoid, softmax, split, sqrt, squeeze,
                         stack, std, std_mean, sub, sum, swapaxes, swapdims, t, tanh, transpose, unbind, unflatten,
                         unsqueeze, var, var_mean, where)
from .functional.pointwise import isinf, isnan, maximum, minimum
from .factory import arange, empty, empty_like, eye, full_like, linspace, ones_like, randint, randperm, zeros_like
__all__ += ["abs", "add", "amax", "amin", "argmax", "broadcast_to", "cat", "chunk", "clamp", "clamp_max", "clamp_min",
            "clip", "clone", "cov", "concat", "concatenate", "div", "eq", "exp", "flatten", "flip", "ge", "gt",
            "index_select", "le", "log", "log_softmax", "logical_and", "logical_not", "logical_or", "lt", "matmul",
            "max", "mean", "movedim", "mul", "narrow", "ne", "neg", "permute", "pow", "relu", "reshape", "select",
            "sigmoid", "softmax", "split", "sqrt", "squeeze", "stack", "std", "std_mean", "sub", "sum", "swapaxes",
            "swapdims", "t", "tanh", "transpose", "unbind", "unflatten", "unsqueeze", "var", "var_mean", "where",
            "arange", "empty", "empty_like", "full_like", "ones_like", "randperm", "zeros_like", "isinf", "isnan",
            "eye", "linspace", "randint", "maximum", "minimum"]
from .functional import einsum, gather, norm, scatter  # noqa: E402
from . import backends  # noqa: E402
from .autograd import Variable  # noqa: E402
from . import autograd  # noqa: E402
__all__ += ["einsum", "gather", "norm", "scatter", "backends", "autograd", "Variable", "compile"]
from .functional import (addcdiv, addcmul, celu, ceil, cos, erf, exp2, expm1, floor, hardshrink, lerp, log10,  # noqa: E402
                         log1p, log2, masked_fill, reciprocal, round, rsqrt, selu, sign, sin, square, threshold, tril,
                         triu, trunc)
__all__ += ["addcdiv", "addcmul", "celu", "ceil", "cos", "erf", "exp2", "expm1", "floor", "hardshrink", "lerp", "log10",
            "log1p", "log2", "masked_fill", "reciprocal", "round", "rsqrt", "selu", "sign", "sin", "square",
            "threshold", "tril", "triu", "trunc"]
from .functional import repeat_interleave, roll  # noqa: E402
__all__ += ["numel", "as_tensor", "repeat_interleave", "roll"]

from .functional import addmm, baddbmm, bmm, channel_shuffle, dot, index_add, mm, mv, outer, pixel_shuffle, pixel_unshuffle  # noqa: E402,E501
__all__ += ["addmm", "baddbmm", "bmm", "channel_shuffle", "dot", "index_add", "mm", "mv", "outer", "pixel_shuffle", "pixel_unshuffle"]

def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """torch.compile's signature; returns model (or, used as a decorator without it, the identity):
    tnet's kernels are compiled by Triton already. To capture a whole step in a CUDA graph, as
    mode="reduce-overhead" does, use tnet.graph.capture."""
    if model is None:
        return lambda fn: fn
    return model
from .functional import (all, any, argmin, argsort, count_nonzero, cumprod, cumsum, logsumexp, min, prod,  # noqa: E402
                         sort, topk)
__all__ += ["all", "any", "argmin", "argsort", "count_nonzero", "cumprod", "cumsum", "logsumexp", "min", "prod",
            "sort", "topk"]
