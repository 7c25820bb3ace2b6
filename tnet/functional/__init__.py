"""Differentiable ops, as torch.nn.functional (and torch's tensor ops). Each computes its forward
with tnet's kernels and records, right beside it, the backward closure that returns one gradient
per input (None where no input needs one); forward saves only what backward needs. The modules
here mirror kernels/ by name: an op, its backward and its kernels are one hop apart.

Activations of 16 channels or more are kept channels-last (torch.channels_last: NCHW shape, NHWC
memory), where the convolutions read a tap's channels as one vector. Element-wise ops keep their
input's layout. The tape hands every backward its gradient in the layout of the op's output.

Tensor's operators and methods are bound here, at the end, and nowhere else."""
import functools
import numbers
import warnings

import numpy as np
import torch

from .. import factory
from ..kernels.copy import overlaps
from ..kernels.launch import InputError, InputTypeError, check_type
from ..tensor import Tensor, is_grad_enabled, tensor
from .conv import conv1d, conv2d, conv2d_relu_pool2d, conv_transpose2d
from .copy import contiguous, flatten, getitem, reshape, shape_args, sizes_or_keyword, t, to, view
from .copy import (broadcast_to, cat, chunk, clone, concat, concatenate, expand, expand_as, flip, index_select,
                   movedim, narrow, permute, repeat, select, split, squeeze, stack, swapaxes, swapdims, transpose,
                   unbind, unflatten, unfold_windows, unsqueeze)
from .copy import embedding
from .gemm import cdist, cov, linear, matmul
from .norm import batch_norm, group_norm, layer_norm, rms_norm
from .pointwise import add, div, exp, gelu, log, mul, neg, pow, relu, rsub, sigmoid, silu, sqrt, sub, tanh
from .pool import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from .random import alpha_dropout, dropout, dropout2d
from .reduce import (argmax, binary_cross_entropy, binary_cross_entropy_with_logits, l1_loss, max, max_result, mean,
                     mse_loss, one_hot, smooth_l1_loss, sum)
from .softmax import cross_entropy, log_softmax, softmax
# element-wise ops, activations, reductions and losses of issue 26
from .pad import pad
from .pointwise import maximum, minimum
from .pointwise import (abs, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, logical_xor, signbit, clamp, clamp_max, clamp_min, elu, eq, ge, gt,
                        hardsigmoid, hardswish, le, leaky_relu, logical_and, logical_not, logical_or, lt, ne, relu6,
                        where)
from .pointwise import clamp as clip
from .reduce import amax, amin, std, std_mean, var, var_mean
from .pool import adaptive_max_pool2d
from .softmax import nll_loss
# what training scripts use besides (issue 26, fifth session)
from .copy import gather, index_put, scatter, scatter_add
from .inplace import index_put_, scatter_, scatter_add_
from .copy import diff, rot90, tensor_split
from .gemm import einsum, tensordot
from .norm import instance_norm
from .pointwise import prelu
from .reduce import cosine_similarity, isin, kl_div, norm, normalize
# torch's element-wise functions, more activations and tensor math (lerp, addcmul, masked_fill, tril)
from .pointwise import (addcdiv, addcmul, celu, ceil, cos, erf, exp2, expm1, floor, glu, hardshrink, hardtanh, lerp,
                        log10, log1p, log2, logsigmoid, masked_fill, mish, reciprocal, round, rsqrt, selu, sign, sin,
                        softplus, softshrink, softsign, square, tanhshrink, threshold, tril, triu, trunc)
from .softmax import softmin
# reductions, sorting and scans
from .pointwise import isclose, isinf, isnan, rpow
from .reduce import all, allclose, any, argmin, count_nonzero, equal, logsumexp, min, min_result, prod
from .sort import argsort, cumprod, cumsum, msort, sort, sort_result, topk, topk_result
# in-place methods and the Tensor conveniences scripts use
from . import inplace as _inplace
from .copy import repeat_interleave, roll
# the modules, losses and matrix ops of CIFAR and MNIST scripts
from .copy import channel_shuffle, fold, index_add, pixel_shuffle, pixel_unshuffle, unfold
from .gemm import addmm, baddbmm, bilinear, bmm, dot, mm, mv, outer
from .norm import local_response_norm
from .pool import adaptive_avg_pool1d, adaptive_max_pool1d, avg_pool1d, max_pool1d
from .pool import max_unpool1d, max_unpool2d
from .reduce import (cosine_embedding_loss, hinge_embedding_loss, huber_loss, margin_ranking_loss, pairwise_distance,
                     soft_margin_loss, triplet_margin_loss)
# resampling images
from .resample import affine_grid, grid_sample, interpolate, upsample, upsample_bilinear, upsample_nearest
# attention
from .attention import multi_head_attention_forward, scaled_dot_product_attention
from .attention import (canonical_mask as _canonical_mask, in_projection as _in_projection,  # noqa: E402
                        in_projection_packed as _in_projection_packed, mha_shape_check as _mha_shape_check,
                        none_or_dtype as _none_or_dtype)
from .norm import verify_batch_size as _verify_batch_size  # noqa: E402
# torch.nn.functional's own imports from torch.overrides, which copies of its functions import from it
from ..overrides import (handle_torch_function, has_torch_function, has_torch_function_unary,  # noqa: E402
                         has_torch_function_variadic)


def _swapped(op):
    """other (op) self, for the reflected operators (2 - x)."""
    return lambda self, other: op(other, self)


def _rtruediv(self, other):
    """other / self, as torch's Tensor.__rtruediv__: self.reciprocal() * other, so 1 / x rounds first (7 / x is an
    ulp off the quotient in about a quarter of fp32 elements, as torch's) and the gradient is reciprocal's."""
    return mul(reciprocal(self), other)


def _or_identity(compare):
    """== and != with an operand that is no tensor, array or number (None, a string, a list): NotImplemented,
    so that Python compares identities, as torch's (`if mask == None:` is False for a tensor mask)."""
    def method(self, other):
        if not isinstance(other, (Tensor, torch.Tensor, np.ndarray, np.generic, numbers.Number)):
            return NotImplemented
        return compare(self, other)
    return method


def _cast(dtype):
    return lambda self: to(self, dtype)


def _method_dim(op):
    """The Tensor method of softmax or log_softmax: its dim required, an int, as torch's method parser (the
    function's dim=None, torch's implicit choice, is the function's only)."""
    @functools.wraps(op)
    def method(self, *args, **kwargs):
        dim = args[0] if args else kwargs.get("dim", kwargs.get("axis"))  # numpy's axis= too, as torch's parser
        if dim is None or isinstance(dim, bool):
            raise InputTypeError(f"{op.__name__}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
        return op(self, *args, **kwargs)
    return method


def _T(self):
    """x.T: x's dims reversed (a permute, as torch's: any number of dims; a 0-d tensor itself, with torch's
    deprecation warning)."""
    if self.ndim == 0:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
                      UserWarning, stacklevel=2)
    return permute(self, tuple(range(self.ndim))[::-1])


for _name, _method in {
        "__getitem__": getitem, "view": view, "reshape": reshape, "flatten": flatten, "t": t, "T": property(_T),
        "contiguous": contiguous, "to": to, "float": _cast(torch.float32), "half": _cast(torch.float16),
        "bfloat16": _cast(torch.bfloat16),
        "dim": lambda self: self.ndim, "permute": lambda self, *args, dims=None: permute(self, sizes_or_keyword("permute", args, "dims", dims)),
        "flip": lambda self, *args, dims=None: flip(self, sizes_or_keyword("flip", args, "dims", dims)), "transpose": transpose, "swapaxes": swapaxes,
        "swapdims": swapdims, "movedim": movedim, "unflatten": unflatten, "squeeze": squeeze, "unsqueeze": unsqueeze,
        "expand": expand, "expand_as": expand_as, "repeat": repeat, "narrow": narrow, "select": select,
        "unbind": unbind, "split": lambda self, split_size, dim=0: split(self, split_size, dim),  # torch's keyword
        "chunk": chunk, "clone": clone, "unfold": unfold_windows,
        "index_select": index_select,
        "__matmul__": matmul, "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": rsub,
        # 1 + x and 2 * x are x.add(1) and x.mul(2), as torch's reflected add and mul (x first: its node's edges)
        "__mul__": mul, "__rmul__": mul, "__truediv__": div, "__rtruediv__": _rtruediv,
        "__neg__": neg, "__pow__": pow, "exp": exp, "log": log, "sqrt": sqrt,
        "sum": sum, "mean": mean, "max": max, "argmax": argmax,
        # element-wise ops, activations and reductions (issue 26); __hash__ stays id-based, as torch's
        "__eq__": _or_identity(eq), "__ne__": _or_identity(ne), "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge, "__hash__": object.__hash__,
        "__invert__": bitwise_not, "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor, "eq": eq, "ne": ne, "lt": lt,
        "le": le, "gt": gt, "ge": ge, "logical_not": logical_not, "logical_and": logical_and,
        "logical_or": logical_or, "relu": relu, "sigmoid": sigmoid, "tanh": tanh, "abs": abs, "__abs__": abs,
        "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max, "amax": amax, "amin": amin,
        "std": std, "var": var, "softmax": _method_dim(softmax), "log_softmax": _method_dim(log_softmax), "long": _cast(torch.int64),
        "int": _cast(torch.int32), "bool": _cast(torch.bool),
        # torch's method forms of the functions above
        "add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "isnan": isnan, "isinf": isinf,
        "maximum": maximum, "minimum": minimum, "where": lambda self, condition, other: where(condition, self, other),
        "__rpow__": rpow, "is_floating_point": lambda self: self.memory.is_floating_point(),
        "is_cuda": property(lambda self: self.memory.is_cuda),
        "is_complex": lambda self: False, "ndimension": lambda self: self.ndim,
        "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
        "logical_xor": logical_xor, "__rand__": _swapped(bitwise_and), "__ror__": _swapped(bitwise_or),
        "__rxor__": _swapped(bitwise_xor), "signbit": signbit, "msort": msort}.items():
    setattr(Tensor, _name, _method)


def _host(self):
    """cpu() and cuda(): tnet keeps every tensor on its one device, so both return the tensor
    itself (numpy(), item() and tolist() copy to the host)."""
    return self


for _name, _method in {"cpu": _host, "cuda": lambda self, device=None, non_blocking=False: self,
                       "type_as": lambda self, other: to(self, other.dtype), "norm": norm, "pow": pow,
                       "gather": gather, "scatter": scatter, "scatter_": scatter_, "scatter_add": scatter_add,
                       "scatter_add_": scatter_add_, "index_put": index_put, "index_put_": index_put_,
                       "min": min, "argmin": argmin, "prod": prod, "all": all, "any": any, "logsumexp": logsumexp,
                       "count_nonzero": count_nonzero, "sort": sort, "argsort": argsort, "topk": topk,
                       "cumsum": cumsum, "cumprod": cumprod, "isclose": isclose, "allclose": allclose, "equal": equal,
                       "matmul": matmul, "mm": mm, "bmm": bmm, "addmm": addmm, "baddbmm": baddbmm, "outer": outer,
                       "dot": dot, "mv": mv, "index_add": index_add}.items():
    setattr(Tensor, _name, _method)

for _name in ("floor", "ceil", "round", "trunc", "sign", "log1p", "expm1", "sin", "cos", "reciprocal", "rsqrt", "log2",
              "log10", "exp2", "square", "erf", "lerp", "addcmul", "addcdiv", "masked_fill", "tril", "triu", "hardshrink"):
    setattr(Tensor, _name, globals()[_name])


def _new(make):
    """Tensor.new_zeros & co: make(size, dtype=, requires_grad=) in self's dtype unless dtype says."""
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        if not size and "size" in kwargs:  # x.new_zeros(size=(2, 3))
            size = (kwargs.pop("size"),)
        check_type(size, lambda: f'new_{make.__name__}() missing 1 required positional arguments: "size"')
        return make(shape_args(size), dtype=dtype or self.dtype, device=device, requires_grad=requires_grad, **kwargs)
    return method


def _type(self, dtype=None, non_blocking=False):
    """type(): torch's type string for self's dtype on tnet's device ('torch.cuda.FloatTensor' on a
    GPU, 'torch.FloatTensor' on the CPU), as scripts compare it; type(dtype, such a string or a typed
    constructor, x.type(tnet.FloatTensor)): to."""
    if dtype is None:
        return _TYPE_PREFIX[self.device.type] + _TYPE_NAMES[self.dtype]
    return to(self, type_dtype(dtype))


def type_dtype(t):
    """The dtype that Tensor.type and nn.Module.type take t for: a dtype, a typed constructor
    (tnet.FloatTensor, torch's torch.cuda.FloatTensor), its name ('torch.cuda.FloatTensor'), or the
    untyped Tensor class (torch's default dtype, float32)."""
    if callable(t) and isinstance(getattr(t, "dtype", None), torch.dtype):
        return t.dtype
    if t is Tensor or t is torch.Tensor:  # the untyped class, type(x) (loss-landscape's w.type(type(w))): float32
        return torch.float32
    if isinstance(t, type):
        raise ValueError(f"invalid type: '{t.__name__}'")
    if isinstance(t, str):
        names = {v: k for k, v in _TYPE_NAMES.items()}
        name = t.rsplit(".", 1)[-1]
        if name not in names:
            raise ValueError(f"invalid type: '{t}'")
        return names[name]
    return t


# torch's legacy type names; DoubleTensor names float64 so that x.type('torch.DoubleTensor') reaches to()'s
# TypeError (tnet has no float64 kernels) rather than an unknown name's ValueError
_TYPE_NAMES = {torch.float32: "FloatTensor", torch.float16: "HalfTensor", torch.bfloat16: "BFloat16Tensor",
               torch.float64: "DoubleTensor", torch.int64: "LongTensor", torch.int32: "IntTensor",
               torch.int16: "ShortTensor", torch.int8: "CharTensor", torch.bool: "BoolTensor", torch.uint8: "ByteTensor"}
_TYPE_PREFIX = {"cuda": "torch.cuda.", "cpu": "torch."}


def _new_tensor(data, dtype, device, requires_grad):
    """A copy of data (tnet.tensor's), in dtype; device checked as to() does."""
    return to(tensor(data, requires_grad=requires_grad, dtype=dtype), device=device)


def _double(self):
    raise TypeError("Tensor.double: tnet has no float64 kernels (float32, float16, bfloat16); use float()")


def _mT(self):
    if self.ndim < 2:
        raise InputError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def _volatile(self):
    """Variable.volatile of pre-0.4 scripts: always False, with torch's warning."""
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def _set_volatile(self, value):
    """Setting it changes nothing, with torch's warning."""
    warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.", UserWarning,
                  stacklevel=2)


def _iop(method):
    """x op= y: method (add_, ...) writes x in place, as torch's; Python binds the result to x."""
    return lambda self, other: method(self, other)


for _name in ("add_", "sub_", "mul_", "div_", "zero_", "fill_", "clamp_", "clamp_min_", "clamp_max_", "relu_",
              "copy_", "normal_", "uniform_", "abs_", "neg_", "sqrt_", "exp_", "log_", "sigmoid_", "tanh_", "pow_",
              "masked_fill_", "lerp_", "addcmul_", "addcdiv_", "random_", "floor_", "ceil_", "round_", "trunc_"):
    setattr(Tensor, _name, getattr(_inplace, _name))
# torch.nn.functional's in-place forms (F.relu_(x)), and the methods torch has of them
relu_, leaky_relu_, hardtanh_, elu_, selu_, celu_, threshold_, clamp_ = (
    _inplace.relu_, _inplace.leaky_relu_, _inplace.hardtanh_, _inplace.elu_, _inplace.selu_, _inplace.celu_,
    _inplace.threshold_, _inplace.clamp_)
Tensor.hardtanh_ = hardtanh_
Tensor.tensor_split, Tensor.diff, Tensor.rot90 = tensor_split, diff, rot90
for _name, _method in {
        "clip_": _inplace.clamp_, "__iadd__": _iop(_inplace.add_), "__isub__": _iop(_inplace.sub_),
        "__imul__": _iop(_inplace.mul_), "__itruediv__": _iop(_inplace.div_),
        "new_zeros": _new(factory.zeros), "new_ones": _new(factory.ones), "new_empty": _new(factory.empty),
        "new_full": lambda self, size, fill_value, dtype=None, device=None, requires_grad=False: factory.full(
            size, fill_value, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad),
        "new_tensor": lambda self, data, dtype=None, device=None, requires_grad=False: _new_tensor(
            data, dtype or self.dtype, device, requires_grad),
        "view_as": lambda self, other: view(self, other.shape), "reshape_as": lambda self, other: reshape(self, other.shape),
        "type": _type, "double": _double, "mT": property(_mT), "repeat_interleave": repeat_interleave,
        "roll": roll, "__setitem__": _inplace.setitem}.items():
    setattr(Tensor, _name, _method)

# torch's remainders, two-operand functions, NaN handling, random draws, host-read ops and matrix
# helpers that scripts use (tests/test_misc_ops.py)
from .pointwise import (acos, asin, atan, atan2, cosh, floor_divide, fmax, fmin, fmod, frac, hypot, isfinite, logaddexp,
                        logit, nan_to_num, remainder, sinh, true_divide, xlogy)
for _name in ("acos", "asin", "atan", "atan2", "cosh", "floor_divide", "fmax", "fmin", "fmod", "frac", "hypot",
              "isfinite", "logaddexp", "logit", "nan_to_num", "remainder", "sinh", "true_divide", "xlogy"):
    setattr(Tensor, _name, globals()[_name])
for _name, _method in {"arccos": acos, "arcsin": asin, "arctan": atan, "arctan2": atan2, "__mod__": remainder,
                       "__rmod__": _swapped(remainder), "__floordiv__": floor_divide,
                       "__rfloordiv__": _swapped(floor_divide)}.items():
    setattr(Tensor, _name, _method)
from .random import bernoulli, binomial, multinomial, normal, poisson
for _name, _method in {"bernoulli": bernoulli, "multinomial": multinomial, "bernoulli_": _inplace.bernoulli_,
                       "exponential_": _inplace.exponential_}.items():
    setattr(Tensor, _name, _method)
from .host import argwhere, bincount, histc, nonzero, nonzero_static, unique
for _name in ("argwhere", "bincount", "histc", "nonzero", "nonzero_static", "unique"):
    setattr(Tensor, _name, globals()[_name])
from .copy import (broadcast_tensors, diag, diagonal, hstack, masked_select, meshgrid, take_along_dim, tile, trace,
                   vstack)
from .reduce import aminmax, nanmean, nansum
from .sort import cummax, cummin, kthvalue, median
for _name in ("diag", "diagonal", "take_along_dim", "tile", "trace", "aminmax", "nanmean", "nansum", "cummax", "cummin",
              "kthvalue", "median", "masked_select"):
    setattr(Tensor, _name, globals()[_name])

# element-wise functions of the eighth session: more functions, torch's aliases, in-place forms
from .pointwise import arccos, arcsin, arctan, arctan2
from .pointwise import (absolute, acosh, arccosh, arcsinh, arctanh, asinh, atanh, copysign, deg2rad, digamma, divide,
                        erfc, erfinv, fix, float_power, gcd, greater, greater_equal, heaviside, is_nonzero,
                        is_same_size, is_signed, isneginf, isposinf, isreal, lcm, ldexp, less, less_equal, lgamma,
                        logaddexp2, multiply, negative, not_equal, positive, rad2deg, rsub, sgn, sinc, subtract, tan)
for _name in ("absolute", "acosh", "arccosh", "arcsinh", "arctanh", "asinh", "atanh", "copysign", "deg2rad", "digamma",
              "divide", "erfc", "erfinv", "fix", "float_power", "gcd", "greater", "greater_equal", "heaviside",
              "is_nonzero", "is_same_size", "is_signed", "isneginf", "isposinf", "isreal", "lcm", "ldexp", "less",
              "less_equal", "lgamma", "logaddexp2", "multiply", "negative", "not_equal", "positive", "rad2deg", "sgn",
              "sinc", "subtract", "tan", "logaddexp", "logit", "arccos", "arcsin", "arctan", "arctan2"):
    setattr(Tensor, _name, globals()[_name])
for _name in ("acos_", "asin_", "atan_", "cos_", "cosh_", "sin_", "sinh_", "tan_", "erf_", "erfc_", "erfinv_", "exp2_",
              "expm1_", "log10_", "log1p_", "log2_", "reciprocal_", "rsqrt_", "square_", "sign_", "sgn_", "frac_",
              "fix_", "lgamma_", "digamma_", "deg2rad_", "rad2deg_", "negative_", "logit_", "nan_to_num_", "acosh_",
              "asinh_", "atanh_", "sinc_", "absolute_", "arccos_", "arcsin_", "arctan_", "arccosh_", "arcsinh_",
              "arctanh_", "logical_not_", "bitwise_not_", "atan2_", "arctan2_", "hypot_", "xlogy_", "copysign_",
              "ldexp_", "float_power_", "true_divide_", "fmod_", "remainder_", "floor_divide_", "heaviside_", "gcd_",
              "lcm_", "multiply_", "divide_", "subtract_", "bitwise_and_", "bitwise_or_", "bitwise_xor_",
              "logical_and_", "logical_or_", "logical_xor_", "eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_",
              "greater_equal_", "less_", "less_equal_", "not_equal_"):
    setattr(Tensor, _name, getattr(_inplace, _name))

# torch.special's erfcx, log_ndtr, ndtri and modified Bessel functions (i0 also a method, in place too)
from .pointwise import erfcx, i0, i0e, i1, i1e, log_ndtr, ndtri
Tensor.i0, Tensor.i0_ = i0, _inplace.i0_
# torch's regularized incomplete gamma functions (torch.special's gammainc and gammaincc), methods too
from .pointwise import igamma, igammac
Tensor.igamma, Tensor.igammac, Tensor.igamma_, Tensor.igammac_ = igamma, igammac, _inplace.igamma_, _inplace.igammac_

# shape and indexing ops of the eighth session
from .copy import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes, cartesian_prod, column_stack,
                   combinations, cross, diag_embed, diagflat, diagonal_fill_strided_, diagonal_filled, diagonal_scatter,
                   dsplit, dstack, fliplr, flipud, hsplit, index_copy, index_fill, kron, masked_scatter, moveaxis, put,
                   ravel, row_stack, select_scatter, slice_scatter, split_with_sizes, take, unravel_index, view_in_place,
                   vsplit)
from .copy import narrow_copy, unsafe_chunk, unsafe_split, unsafe_split_with_sizes
from .copy import (alias_copy, as_strided_copy, detach_copy, diagonal_copy, expand_copy, permute_copy, select_copy,
                   slice_copy, split_copy, split_with_sizes_copy, squeeze_copy, t_copy, transpose_copy, unbind_copy,
                   unfold_copy, unsqueeze_copy, view_copy)
from .copy import squeeze_, swapaxes_, swapdims_, t_, transpose_, unsqueeze_
from .reduce import dist, renorm, sum_to_size
from .sort import (bucketize, corrcoef, inner, logcumsumexp, mode, nanmedian, nanquantile, quantile, searchsorted,
                   vander)
from .host import histogram, histogramdd, unique_consecutive


def in_place(name, op, keeps_self=False):
    """Tensor.<name>(...): op(self, ...) written into self, recorded as functional/inplace.py records
    in-place ops (keeps_self: op's backward reads self's values)."""
    def method(self, *args, **kwargs):
        others = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        return _inplace.inplace(self, name, lambda x: op(x, *args, **kwargs), others, keeps_self)
    method.__name__ = name
    return method


def _fill_diagonal_(self, fill_value, wrap=False):
    """Tensor.fill_diagonal_: the recorded whole write of diagonal_filled's values, or, for a self that
    overlaps itself (an expanded tensor, no whole write) outside a recorded graph, the diagonal's own."""
    if overlaps(self.memory) and not (is_grad_enabled() and self.requires_grad):
        return diagonal_fill_strided_(self, fill_value, wrap)
    return in_place("fill_diagonal_", diagonal_filled)(self, fill_value, wrap)


def _legacy_new(self, *args, dtype=None, device=None):
    """Tensor.new (legacy): new() an empty tensor, new(sizes...) an uninitialised one, new(data) a
    copy of a list or array, in self's dtype."""
    dtype = dtype or self.dtype
    sizes = not args or isinstance(args[0], torch.Size) or not [a for a in args if not isinstance(a, int) or isinstance(a, bool)]
    if sizes:
        return factory.empty(*(args or (0,)), dtype=dtype, device=device)
    if isinstance(args[0], Tensor):
        raise TypeError("new(): expected data (a list or array) or sizes, got a Tensor; use new_tensor or clone")
    return _new_tensor(args[0], dtype, device, False)


for _name, _method in {
        "moveaxis": moveaxis, "ravel": ravel, "fliplr": fliplr, "flipud": flipud, "hsplit": hsplit, "vsplit": vsplit,
        "dsplit": dsplit, "take": take, "put": put, "index_copy": index_copy, "index_fill": index_fill,
        "masked_scatter": masked_scatter, "select_scatter": select_scatter, "slice_scatter": slice_scatter,
        "diagonal_scatter": diagonal_scatter, "diag_embed": diag_embed, "diagflat": diagflat, "kron": kron,
        "inner": inner, "cross": cross, "broadcast_to": broadcast_to, "unique_consecutive": unique_consecutive,
        "split_with_sizes": split_with_sizes, "sum_to_size": sum_to_size, "narrow_copy": narrow_copy,
        "unsafe_chunk": unsafe_chunk, "unsafe_split_with_sizes": unsafe_split_with_sizes,
        "unsafe_split": lambda self, split_size, dim=0: unsafe_split(self, split_size, dim),  # torch's keyword
        "fill_diagonal_": _fill_diagonal_,
        "corrcoef": corrcoef, "quantile": quantile, "nanquantile": nanquantile, "nanmedian": nanmedian, "mode": mode,
        "logcumsumexp": logcumsumexp, "dist": dist, "renorm": renorm, "histogram": histogram,
        "put_": in_place("put_", put), "index_copy_": in_place("index_copy_", index_copy),
        "index_fill_": in_place("index_fill_", index_fill), "index_add_": in_place("index_add_", index_add),
        "masked_scatter_": in_place("masked_scatter_", masked_scatter), "tril_": in_place("tril_", tril),
        "triu_": in_place("triu_", triu), "cumsum_": in_place("cumsum_", cumsum),
        "cumprod_": in_place("cumprod_", cumprod, keeps_self=True), "squeeze_": squeeze_, "unsqueeze_": unsqueeze_,
        "t_": t_, "transpose_": transpose_, "swapaxes_": swapaxes_, "swapdims_": swapdims_,
        "byte": _cast(torch.uint8), "char": _cast(torch.int8), "short": _cast(torch.int16),
        "is_cpu": property(lambda self: self.memory.is_cpu), "nbytes": property(lambda self: self.memory.nbytes),
        "itemsize": property(lambda self: self.memory.itemsize),
        "pin_memory": lambda self, device=None: self,  # tnet's tensors live on its device already
        "get_device": lambda self: self.memory.get_device(), "is_inference": lambda self: self._is_inference,
        "new": _legacy_new}.items():
    setattr(Tensor, _name, _method)

# nn functions of the eighth session
from .composed import (ctc_loss, embedding_bag, gaussian_nll_loss, linear_cross_entropy, multi_margin_loss,
                       multilabel_margin_loss, multilabel_soft_margin_loss, pdist, poisson_nll_loss, triplet_margin_with_distance_loss)
from .composed import stft
Tensor.stft = stft
from .conv import conv_transpose1d
from .conv import conv3d, conv_transpose3d
from .pool import (adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_max_pool3d_with_indices, avg_pool3d, lp_pool3d,
                   max_pool3d, max_pool3d_with_indices, max_unpool3d)
from .pool import (adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices, lp_pool1d, lp_pool2d,
                   max_pool1d_with_indices, max_pool2d_with_indices)
from .pool import (fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
                   fractional_max_pool3d_with_indices)
from .random import dropout1d, dropout3d, feature_alpha_dropout, feature_dropout, gumbel_softmax, rrelu
native_channel_shuffle = channel_shuffle
rrelu_ = _inplace._unary("rrelu_", rrelu, keeps_self=True)

# matrix functions of the eighth session (tnet/linalg.py)
from .. import linalg as _linalg  # noqa: E402
for _name in ("det", "logdet", "slogdet", "pinverse", "cholesky_solve", "cholesky_inverse", "triangular_solve",
              "matrix_power", "matrix_exp", "ormqr", "geqrf"):
    setattr(Tensor, _name, getattr(_linalg, _name))
for _name in ("inverse", "svd", "qr", "cholesky", "lu", "orgqr", "adjoint"):
    setattr(Tensor, _name, _linalg.TORCH_FORMS[_name])
Tensor.lu_solve = lambda self, LU_data, LU_pivots: _linalg.lu_solve(LU_data, LU_pivots, self)
Tensor.mH = property(_mT)

# tensor surface of the eighth session (ops3)
from .copy import as_strided_scatter  # noqa: E402
from .copy import (as_strided, as_strided_, index_reduce, resize_, resize_as, resize_as_, scatter_reduce,
                   set_)
from .gemm import addbmm, addmv, addr, ger, vdot
from .pointwise import bitwise_left_shift, bitwise_right_shift, frexp, nextafter, polygamma
from .pointwise import fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine
from .reduce import mvlgamma
from .sort import cumulative_trapezoid, trapezoid, trapz
from .inplace import apply_, cauchy_, geometric_, log_normal_, map_


def _H(self):
    """self's transpose: a 2-D tensor's (or a 0-D one itself), as torch's .H of a real tensor."""
    if self.ndim not in (0, 2):
        raise InputError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
    return self if self.ndim == 0 else transpose(self, 0, 1)


def _itself(self):
    """self: torch's conj, resolve_conj, resolve_neg and real of a real tensor (tnet's are real)."""
    return self


def _share_memory_(self):
    """torch's share_memory_: the memory moves to shared memory in place (a CUDA tensor's, as torch's, stays as
    it is), so is_shared() answers as torch's does. Returns self."""
    self.memory.share_memory_()
    return self


def _record_stream(self, stream):
    """torch's record_stream of the memory (a GPU's); nothing on the CPU."""
    if self.memory.is_cuda:
        self.memory.record_stream(stream)


addmm_, addbmm_, addmv_, addr_, baddbmm_ = (in_place(name, op) for name, op in (
    ("addmm_", addmm), ("addbmm_", addbmm), ("addmv_", addmv), ("addr_", addr), ("baddbmm_", baddbmm)))
for _name, _method in {
        "addbmm": addbmm, "addmv": addmv, "addr": addr, "ger": ger, "vdot": vdot, "addmm_": addmm_,
        "addbmm_": addbmm_, "addmv_": addmv_, "addr_": addr_, "baddbmm_": baddbmm_,
        "scatter_reduce": scatter_reduce, "index_reduce": index_reduce,
        "scatter_reduce_": in_place("scatter_reduce_", scatter_reduce, keeps_self=True),
        "index_reduce_": in_place("index_reduce_", index_reduce, keeps_self=True),
        "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
        "__lshift__": bitwise_left_shift, "__rshift__": bitwise_right_shift,
        "__rlshift__": _swapped(bitwise_left_shift), "__rrshift__": _swapped(bitwise_right_shift),
        "bitwise_left_shift_": in_place("bitwise_left_shift_", bitwise_left_shift),
        "bitwise_right_shift_": in_place("bitwise_right_shift_", bitwise_right_shift),
        "frexp": frexp, "nextafter": nextafter, "nextafter_": in_place("nextafter_", nextafter, keeps_self=True),
        "polygamma": lambda self, n: polygamma(n, self),
        "polygamma_": in_place("polygamma_", lambda self, n: polygamma(n, self), keeps_self=True),
        "mvlgamma": mvlgamma, "mvlgamma_": in_place("mvlgamma_", mvlgamma, keeps_self=True),
        "cauchy_": cauchy_, "geometric_": geometric_, "log_normal_": log_normal_,
        "H": property(_H), "prelu": prelu,
        "renorm_": in_place("renorm_", renorm, keeps_self=True), "resize_": resize_, "resize_as_": resize_as_,
        "resize_as": resize_as, "set_": set_,
        "new_empty_strided": lambda self, size, stride, dtype=None, device=None, requires_grad=False: factory.empty_strided(
            size, stride, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad),
        "as_strided": as_strided, "as_strided_": as_strided_, "as_strided_scatter": as_strided_scatter,
        "apply_": apply_, "map_": map_,
        "is_pinned": lambda self, device=None: False, "is_shared": lambda self: self.memory.is_shared(),
        "share_memory_": _share_memory_, "record_stream": _record_stream,
        "storage": lambda self: self.memory.storage(), "untyped_storage": lambda self: self.memory.untyped_storage(),
        "is_sparse": property(lambda self: False), "is_quantized": property(lambda self: False),
        "is_meta": property(lambda self: False), "is_mkldnn": property(lambda self: False),
        "is_nested": property(lambda self: False), "is_conj": lambda self: False, "is_neg": lambda self: False,
        "conj": _itself, "resolve_conj": _itself, "resolve_neg": _itself, "real": property(_itself),
        "layout": property(lambda self: torch.strided), "output_nr": property(lambda self: 0),
        "name": property(lambda self: None), "cov": cov,
        "const_data_ptr": lambda self: self.memory.data_ptr(), "dim_order": lambda self: self.memory.dim_order(),
        "volatile": property(_volatile, _set_volatile)}.items():
    setattr(Tensor, _name, _method)
# the other backends' flags, False on tnet's one device (`if x.is_mps:` in device-agnostic code), as torch's on CUDA
for _name in ("is_mps", "is_xpu", "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mtia", "is_sparse_csr"):
    setattr(Tensor, _name, property(lambda self: False))
Tensor.__ilshift__ = _iop(Tensor.bitwise_left_shift_)
Tensor.__irshift__ = _iop(Tensor.bitwise_right_shift_)
# the other augmented assignments write in place too, as torch's (without them Python rebinds x to a new tensor:
# `mask &= d < r` left a view of mask, or a module's attribute holding it, unchanged)
Tensor.__ifloordiv__ = _iop(Tensor.floor_divide_)
Tensor.__imod__ = _iop(Tensor.remainder_)
Tensor.__ipow__ = _iop(Tensor.pow_)
Tensor.__iand__ = _iop(Tensor.bitwise_and_)
Tensor.__ior__ = _iop(Tensor.bitwise_or_)
Tensor.__ixor__ = _iop(Tensor.bitwise_xor_)
