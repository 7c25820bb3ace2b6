"""tnet: a deep-learning mini-framework whose GPU kernels are written in Triton."""
from ._device import DEVICE, INTERPRET  # first: it may switch on Triton's interpreter
from .kernels.launch import InputError
from .kernels.gemm import get_precision, set_precision
from .tensor import (Tensor, enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled,
                     set_printoptions, tensor)
from .factory import (bfloat16, float16, float32, full, initial_seed, int32, int64, manual_seed, ones, rand, randn, seed,
                      zeros)
from .serialize import LoadError, load, save
from . import serialize as serialization  # torch's module name (add_safe_globals), at its import path too
from .tensor import check_device as _check_device, is_tnets_device as _is_tnets_device  # not torch's names
from .tensor import check_dtype as _check_dtype  # not torch's name
from .amp import GradScaler, autocast, get_autocast_dtype, get_autocast_gpu_dtype, is_autocast_enabled
from .amp import (clear_autocast_cache, get_autocast_cpu_dtype, is_autocast_cache_enabled,  # noqa: E402
                  is_autocast_cpu_enabled, set_autocast_cache_enabled)
from . import functional, linalg, nn, optim, models, data, graph, cuda, utils, backends, autograd, random, jit, compiler
from . import accelerator, distributions, einops_backend, func, hub, profiler, special, testing  # noqa: E402
from . import cpu, multiprocessing, overrides, return_types, types, version, xpu  # noqa: E402
from . import _dynamo, _inductor  # noqa: E402,F401  (torch._dynamo.config, torch._inductor.config without their own import)
from torch.distributed import is_available as _distributed_available  # noqa: E402
if _distributed_available():  # tnet.distributed without its own import, as torch's (where torch has it)
    from . import distributed  # noqa: E402
from . import sparse  # noqa: E402
from .autograd import Variable
from .func import vmap  # noqa: E402  (torch.vmap is torch.func.vmap)
import sys as _sys
_sys.modules[__name__ + ".serialization"] = serialization  # `from torch.serialization import add_safe_globals`
import torch as _torch
from torch.torch_version import TorchVersion as _TorchVersion
from torch import device  # torch.device: `tnet.device("cuda" if tnet.cuda.is_available() else "cpu")`
from torch import OutOfMemoryError  # torch's: tnet allocates through torch's allocator, which raises it

# torch's top-level functions: shape ops, element-wise ops, reductions, sorting, matrix products
from .functional import (abs, add, addcdiv, addcmul, addmm, all, allclose, amax, amin, any, argmax, argmin, argsort,
                         baddbmm, bmm, broadcast_to, cat, cdist, ceil, celu, channel_shuffle, chunk, clamp, clamp_max,
                         clamp_min, clip, clone, concat, concatenate, cos, count_nonzero, cov, cumprod, cumsum, div,
                         dot, einsum, eq, equal, erf, exp, exp2, expm1, flatten, flip, floor, gather, ge, gt,
                         hardshrink, index_add, index_select, isclose, isinf, isnan, le, lerp, log, log10, log1p, log2,
                         log_softmax, logical_and, logical_not, logical_or, logsumexp, lt, masked_fill, matmul, max,
                         maximum, mean, min, minimum, mm, movedim, mul, mv, narrow, ne, neg, norm, outer, permute,
                         pixel_shuffle, pixel_unshuffle, pow, prod, reciprocal, relu, repeat_interleave, reshape, roll,
                         round, rsqrt, scatter, select, selu, sigmoid, sign, sin, softmax, sort, split, sqrt, square,
                         squeeze, stack, std, std_mean, sub, sum, swapaxes, swapdims, t, tanh, threshold, topk,
                         transpose, tril, triu, trunc, unbind, unflatten, unsqueeze, var, var_mean, where)
from .functional import bitwise_and, bitwise_not, bitwise_or, bitwise_xor, logical_xor, msort, signbit  # noqa: E402
from .functional import index_put, scatter_add  # noqa: E402
from .functional import clamp_, diff, isin, relu_, rot90, tensor_split, tensordot  # noqa: E402
from .factory import get_rng_state, set_rng_state  # noqa: E402
# dtype metadata (no tensor math): the type of dtypes, layouts and torch's promotion table
from torch import can_cast, dtype, layout, promote_types, sparse_coo, sparse_csr, strided  # noqa: E402


def result_type(tensor1, tensor2):
    """The dtype torch's promotion gives tensor1 and tensor2 (tnet tensors or Python numbers)."""
    # meta stand-ins of the tensors' dtypes and ranks: a 0-d tensor promotes as a number of its kind does
    return _torch.result_type(*[_torch.empty((1,) * (t.ndim > 0), dtype=t.dtype, device="meta") if isinstance(t, Tensor)
                                else t for t in (tensor1, tensor2)])
# torch's other factories, its host generator and its legacy typed constructors (tnet.FloatTensor(...))
from .factory import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, Generator,
                      HalfTensor, IntTensor, LongTensor, ShortTensor, arange, default_generator, empty, empty_like, eye,
                      full_like, linspace, ones_like, randint, randperm, zeros_like)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def from_numpy(ndarray):
    """tnet.tensor(ndarray): a copy on tnet's device (torch's shares the array's memory, which a GPU
    cannot); float64 becomes float32 and integers but uint8 int64, as tnet.tensor."""
    return tensor(ndarray)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """torch.frombuffer: a 1-D tensor of buffer's bytes read as dtype (count elements from byte offset; -1: to
    the end), copied to tnet's device (torch's shares the buffer's memory; an MNIST idx reader's images)."""
    host = _torch.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
    return tensor(host, dtype=dtype, requires_grad=requires_grad)


def from_dlpack(ext_tensor):
    """torch.from_dlpack: a tnet Tensor on ext_tensor's memory (an object with __dlpack__, a cupy or JAX array, or a
    DLPack capsule), shared as torch's shares it where it lies on tnet's device, else copied there."""
    t = _torch.from_dlpack(ext_tensor)
    return Tensor(t) if t.device == DEVICE else tensor(t)


def to_dlpack(tensor):
    """torch.to_dlpack: the DLPack capsule of tensor's memory (Tensor.__dlpack__'s)."""
    return tensor.__dlpack__()


def get_device_module(device=None):
    """torch.get_device_module: the module of device's type, tnet's where it has one (cuda, cpu, xpu), else
    torch's; None: the current accelerator's (tnet.cuda on a GPU, tnet.cpu under the interpreter)."""
    if device is not None and not isinstance(device, (str, _torch.device)):
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    kind = (accelerator.current_accelerator() or _torch.device("cpu")) if device is None else _torch.device(device)
    return {"cuda": cuda, "cpu": cpu, "xpu": xpu}.get(kind.type) or _torch.get_device_module(kind)


def is_distributed(input):
    """False, as torch's for every dense tensor."""
    return False


def numel(input):
    return input.numel()


def as_tensor(data, dtype=None, device=None):
    """data itself where it is a tnet.Tensor of dtype (or dtype None), else tnet.tensor(data, dtype=dtype):
    a copy on tnet's device (torch's shares a numpy array's memory on the CPU)."""
    dtype = None if dtype is None else _check_dtype("as_tensor", dtype)  # the parser's TypeError first
    if isinstance(data, Tensor):
        return data if dtype in (None, data.dtype) else data.to(dtype)
    return tensor(data, dtype=dtype).to(device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """torch.asarray: a tnet Tensor of dtype itself (copy=True: a copy; another dtype: a converted copy,
    which copy=False refuses with ValueError), else tnet.tensor(obj, dtype=dtype), a copy on tnet's device
    (torch's shares a numpy array's or buffer's memory on the CPU, which copy=False asks; tnet refuses
    it). requires_grad (default: obj's, else False) sets the result's, as torch's."""
    _check_device("asarray", device)
    dtype = None if dtype is None else _check_dtype("asarray", dtype)  # the parser's TypeError first
    if isinstance(obj, Tensor):
        converts = dtype is not None and dtype != obj.dtype
        if copy is False and converts:
            raise ValueError("can't alias tensor from variable of type {} to dtype {}".format(obj.dtype, dtype))
        out = obj.to(dtype) if converts else obj.clone() if copy else obj
        wants = obj.requires_grad if requires_grad is None else requires_grad
        return out if out.requires_grad == wants else out.detach().requires_grad_(wants)
    if copy is False:
        raise ValueError("asarray: tnet copies host data to its device (copy=False cannot alias it)")
    return tensor(obj, dtype=dtype, requires_grad=requires_grad is True)


def is_complex(input):
    """False: tnet has no complex tensors (TypeError for a non-tensor, as torch's)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return False


def _complex_missing(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"torch.{name}: tnet has no complex dtypes (rotary embeddings: use cos/sin with "
                                  f"rotate_half, as Hugging Face's LLaMA does)")
    fn.__name__, fn.__doc__ = name, f"torch's {name}: not in tnet (it has no complex dtypes); raises NotImplementedError."
    return fn


polar, complex, view_as_complex, view_as_real = (_complex_missing(n) for n in ("polar", "complex", "view_as_complex",
                                                                                "view_as_real"))


class OptimizedModule(nn.Module):
    """What torch.compile returns for a Module: the module under `_orig_mod`, so that its
    state_dict's and named_parameters' names start with "_orig_mod.", as torch's (a checkpoint
    saved from torch's compiled model loads); calls and other attributes go to the module."""

    def __init__(self, mod):
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name):  # only names the wrapper lacks
        if name == "_orig_mod":  # not set yet (copy.copy builds the object without __init__)
            raise AttributeError(name)
        return getattr(self._orig_mod, name)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """torch.compile's signature: a Module comes back wrapped in an OptimizedModule (as torch's),
    a function as it is (or, used as a decorator without one, the identity): tnet's kernels are
    compiled by Triton already. To capture a whole step in a CUDA graph, as mode="reduce-overhead"
    does, use tnet.graph.capture. As torch's, compiling a model or function (not disable=True) turns the
    distributions' default validate_args off for the process."""
    if model is None:
        return lambda fn: compile(fn, disable=disable)
    if not disable:
        distributions.Distribution.set_default_validate_args(False)
    return OptimizedModule(model) if isinstance(model, nn.Module) else model


# torch's constants and type facts, and the switches scripts set
from torch import Size, channels_last, channels_last_3d, contiguous_format, finfo, iinfo, memory_format  # noqa: E402
from torch import preserve_format  # noqa: E402
from math import e, inf, nan, pi  # noqa: E402

_MATMUL_PRECISIONS = {"highest": "ieee", "high": "tf32", "medium": "tf32"}


def set_float32_matmul_precision(precision):
    """torch's switch, as tnet's GEMM precision for float32 tensors: 'highest' exact fp32 products
    (set_precision("ieee")), 'high' and 'medium' TF32 (tnet's default; torch's 'medium' would take
    bfloat16 products)."""
    if precision not in _MATMUL_PRECISIONS:
        raise RuntimeError(f"Invalid precision: {precision}. Expected one of: highest, high, medium")
    set_precision(_MATMUL_PRECISIONS[precision])


def get_float32_matmul_precision():
    return "highest" if get_precision() == "ieee" else "high"


def get_default_dtype():
    return float32


def set_default_dtype(d):
    """tnet's floats are float32 by default, as torch's; other defaults are not supported."""
    if d != float32:
        raise TypeError(f"set_default_dtype: tnet's default float dtype is float32, got {d}")


def is_floating_point(input):
    return input.is_floating_point()


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Accepted (are_deterministic_algorithms_enabled reports it); tnet's kernels are deterministic except
    the atomic adds of index_add, fold, index_select's and unfold's backwards, scatter with reduce and
    scatter_reduce, whose order is not fixed on the GPU."""
    _deterministic[:] = [mode, warn_only]  # as given: this module's bool is torch.bool


_deterministic = [False, False]  # use_deterministic_algorithms' mode and warn_only


def get_default_device():
    """tnet's one device (a CUDA GPU, or the CPU under Triton's interpreter)."""
    return DEVICE


def set_default_device(device):
    """Accepted for tnet's one device (or None); another raises ValueError, as tnet's factories do."""
    if not _is_tnets_device(device):
        raise ValueError(f"set_default_device: tnet keeps tensors on {DEVICE}, got device={device}")


def get_num_threads():
    """The host's thread count for torch's CPU work (tnet's math runs in its kernels)."""
    return _torch.get_num_threads()


def set_num_threads(n):
    """torch's switch for its host threads, passed on."""
    _torch.set_num_threads(n)


VERSION = "0.1.0"  # tnet's own; pyproject.toml reads it from here
# What a script's `torch.__version__` checks read (`>= '1.5.0'`, `>= (1, 10)`, `int(v.split('.')[0]) >= 2`,
# packaging's parse): the PyTorch API that tnet follows, with tnet's own version as the local label, in torch's
# TorchVersion (a str that also compares with tuples)
__version__ = _TorchVersion(f"2.13.0+tnet{VERSION}")
version.__version__ = __version__  # torch.version's too (`from torch.version import __version__`)

# torch's other dtype names, so that `dtype=torch.long` ports (last: they shadow Python's int, float
# and bool in this module). tnet computes in float32, float16, bfloat16, int64, int32 and bool; the
# float64 names exist for scripts to name, and making a float64 tensor raises TypeError in one line.
half, float, long, int, bool = float16, float32, int64, int32, _torch.bool
float64 = double = _torch.float64
uint8, int8, int16, short = _torch.uint8, _torch.int8, _torch.int16, _torch.int16

__all__ = [name for name in dir() if not name.startswith("_") and name not in ("factory", "kernels", "serialize")]

# torch's remainders, two-operand functions, NaN handling, random draws, host-read ops and matrix helpers
from .functional import (acos, asin, atan, atan2, cosh, floor_divide, fmax, fmin, fmod, frac, hypot, isfinite,
                         logaddexp, logit, nan_to_num, remainder, sinh, true_divide, xlogy)
from .functional import bernoulli, binomial, multinomial, normal, poisson
from .functional.random import sample_dirichlet as _sample_dirichlet, standard_gamma as _standard_gamma  # torch's names
from .factory import rand_like, randint_like, randn_like
from .functional import argwhere, bincount, histc, nonzero, unique
from .functional import (aminmax, broadcast_tensors, cummax, cummin, diag, diagonal, hstack, kthvalue, masked_select,
                         median, meshgrid, nanmean, nansum, take_along_dim, tile, trace, vstack)
arccos, arcsin, arctan, arctan2 = acos, asin, atan, atan2
__all__ += ["acos", "asin", "atan", "atan2", "cosh", "floor_divide", "fmax", "fmin", "fmod", "frac", "hypot", "isfinite",
            "logaddexp", "logit", "nan_to_num", "remainder", "sinh", "true_divide", "xlogy", "arccos", "arcsin",
            "arctan", "arctan2", "bernoulli", "binomial", "multinomial", "normal", "poisson", "rand_like", "randint_like",
            "randn_like",
            "argwhere", "bincount", "histc", "nonzero", "unique", "aminmax", "broadcast_tensors", "cummax", "cummin",
            "diag", "diagonal", "hstack", "kthvalue", "median", "meshgrid", "nanmean", "nansum", "take_along_dim", "tile",
            "trace", "vstack", "masked_select"]

# torch's _foreach_* functions (tnet/functional/foreach.py: a loop of tnet's ops over the tensors, not one fused launch)
from .functional import foreach as _foreach  # noqa: E402
for _name in _foreach.__all__:
    globals()["_foreach_" + _name] = getattr(_foreach, _name)
del _name

# element-wise functions of the eighth session: more functions, torch's aliases, in-place forms
from .functional import (absolute, acosh, arccosh, arcsinh, arctanh, asinh, atanh, copysign, deg2rad, digamma,  # noqa: E402
                         divide, erfc, erfinv, fix, float_power, gcd, greater, greater_equal, heaviside, is_nonzero,
                         is_same_size, is_signed, isneginf, isposinf, isreal, lcm, ldexp, less, less_equal, lgamma,
                         logaddexp2, multiply, negative, not_equal, positive, rad2deg, rsub, sgn, sinc, subtract, tan)
from .functional.inplace import (abs_, acos_, acosh_, arccos_, arccosh_, arcsin_, arcsinh_, arctan_, arctanh_,  # noqa: E402
                                 asin_, asinh_, atan_, atanh_, ceil_, celu_, clamp_max_, clamp_min_, cos_, cosh_,
                                 deg2rad_, erf_, erfc_, exp2_, exp_, expm1_, fill_, fix_, floor_, frac_, gcd_, lcm_,
                                 ldexp_, log10_, log1p_, log2_, log_, logit_, nan_to_num_, neg_, negative_, rad2deg_,
                                 reciprocal_, round_, rsqrt_, selu_, sigmoid_, sin_, sinc_, sinh_, sqrt_, square_, tan_,
                                 tanh_, threshold_, trunc_, xlogy_, zero_)
from .functional.inplace import clamp_ as clip_  # noqa: E402
from .functional.inplace import index_put_  # noqa: E402
__all__ += ["absolute", "acosh", "arccosh", "arcsinh", "arctanh", "asinh", "atanh", "copysign", "deg2rad", "digamma",
            "divide", "erfc", "erfinv", "fix", "float_power", "gcd", "greater", "greater_equal", "heaviside",
            "is_nonzero", "is_same_size", "is_signed", "isneginf", "isposinf", "isreal", "lcm", "ldexp", "less",
            "less_equal", "lgamma", "logaddexp2", "multiply", "negative", "not_equal", "positive", "rad2deg", "rsub",
            "sgn", "sinc", "subtract", "tan", "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
            "arctan_", "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "celu_", "clamp_max_", "clamp_min_",
            "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_",
            "frac_", "gcd_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
            "negative_", "rad2deg_", "reciprocal_", "round_", "rsqrt_", "selu_", "sigmoid_", "sin_", "sinc_", "sinh_",
            "sqrt_", "square_", "tan_", "tanh_", "threshold_", "trunc_", "xlogy_", "zero_", "clip_", "index_put_"]

# shape and indexing ops of the eighth session
from .functional import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes, bucketize,  # noqa: E402
                         cartesian_prod, column_stack, combinations, corrcoef, cross, diag_embed, diagflat,
                         diagonal_scatter, dist, dsplit, dstack, fliplr, flipud, histogram, histogramdd, hsplit,
                         index_copy, index_fill, inner, kron, logcumsumexp, masked_scatter, mode, moveaxis, nanmedian,
                         nanquantile, put, quantile, ravel, renorm, row_stack, searchsorted, select_scatter,
                         slice_scatter, split_with_sizes, take, unique_consecutive, unravel_index, vander, vsplit)
from .functional import narrow_copy, unsafe_chunk, unsafe_split, unsafe_split_with_sizes  # noqa: E402
from .functional import (alias_copy, as_strided_copy, detach_copy, diagonal_copy, expand_copy,  # noqa: E402
                         permute_copy, select_copy, slice_copy, split_copy, split_with_sizes_copy, squeeze_copy, t_copy,
                         transpose_copy, unbind_copy, unfold_copy, unsqueeze_copy, view_copy)
__all__ += ["alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "permute_copy",
            "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy",
            "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy"]
from .factory import empty_permuted, empty_strided, scalar_tensor, tril_indices, triu_indices  # noqa: E402


def get_device(input):
    """-1 for a CPU tensor, else its GPU's index, as torch.get_device."""
    return input.get_device()


def is_inference(input):
    """Whether input was made in an inference_mode block, as torch.is_inference."""
    return input.is_inference()


def _assert(condition, message):
    """torch._assert, the traceable assert torchvision's ViT and Swin check input sizes with: AssertionError."""
    if not condition:
        raise AssertionError(message)


__all__ += ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes", "bucketize", "cartesian_prod",
            "column_stack", "combinations", "corrcoef", "cross", "diag_embed", "diagflat", "diagonal_scatter", "dist",
            "dsplit", "dstack", "fliplr", "flipud", "histogram", "histogramdd", "hsplit", "index_copy", "index_fill",
            "inner", "kron", "logcumsumexp", "masked_scatter", "mode", "moveaxis", "nanmedian", "nanquantile", "put",
            "quantile", "ravel", "renorm", "row_stack", "searchsorted", "select_scatter", "slice_scatter",
            "split_with_sizes", "take",
            "narrow_copy", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
            "unique_consecutive", "unravel_index", "vander", "vsplit", "empty_permuted", "empty_strided",
            "scalar_tensor", "tril_indices", "triu_indices", "get_device", "is_inference"]

# nn functions of the eighth session: torch's top-level forms of nn.functional's ops (aten's
# signatures where they differ from F's: tnet/functional/aten.py)
from .functional import (adaptive_avg_pool1d, avg_pool1d, bilinear, celu_, channel_shuffle as native_channel_shuffle,
                         conv1d, conv2d, conv_transpose1d, conv_transpose2d, cosine_similarity, pairwise_distance,
                         pdist, prelu, rms_norm, selu_, threshold_)
from .functional.aten import (adaptive_max_pool1d, alpha_dropout, alpha_dropout_, batch_norm,
                              binary_cross_entropy_with_logits, cosine_embedding_loss, dropout, dropout_, embedding,
                              feature_alpha_dropout, feature_alpha_dropout_, feature_dropout, feature_dropout_,
                              group_norm, hinge_embedding_loss, instance_norm, kl_div, layer_norm, margin_ranking_loss,
                              max_pool1d, max_pool1d_with_indices, max_pool2d, poisson_nll_loss, rrelu, rrelu_,
                              triplet_margin_loss)
__all__ += ["adaptive_avg_pool1d", "avg_pool1d", "bilinear", "celu_", "native_channel_shuffle", "conv1d", "conv2d",
            "conv_transpose1d", "conv_transpose2d", "cosine_similarity", "pairwise_distance", "pdist", "prelu",
            "rms_norm", "selu_", "threshold_", "adaptive_max_pool1d", "alpha_dropout", "alpha_dropout_", "batch_norm",
            "binary_cross_entropy_with_logits", "cosine_embedding_loss", "dropout", "dropout_", "embedding",
            "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "group_norm",
            "hinge_embedding_loss", "instance_norm", "kl_div", "layer_norm", "margin_ranking_loss", "max_pool1d",
            "max_pool1d_with_indices", "max_pool2d", "poisson_nll_loss", "rrelu", "rrelu_", "triplet_margin_loss"]
from .functional import conv3d, conv_transpose3d  # noqa: E402
from .functional.aten import constant_pad_nd, ctc_loss, max_pool3d  # noqa: E402
# aten's forms and torch's other top-level ops on tensors that scripts and copied torch code call
from .functional.aten import (affine_grid_generator, convolution, grid_sampler, grid_sampler_2d,  # noqa: E402
                              grid_sampler_3d)
from .nn.utils import norm_except_dim  # noqa: E402
from .nn.rnn import gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell  # noqa: E402
from .functional import as_strided_, as_strided_scatter, nonzero_static  # noqa: E402
from .functional.random import native_dropout  # noqa: E402
from .functional.copy import embedding_renorm_  # noqa: E402
__all__ += ["affine_grid_generator", "convolution", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
            "norm_except_dim", "gru_cell", "lstm_cell", "rnn_relu_cell", "rnn_tanh_cell", "as_strided_",
            "as_strided_scatter", "nonzero_static", "native_dropout", "embedding_renorm_"]
# torch's symbolic-shape helpers, which copied torch code calls on Python numbers (no tensor math): torch's own
from torch import SymBool, SymFloat, SymInt, sym_float, sym_int, sym_ite, sym_max, sym_min, sym_not  # noqa: E402
from torch import sym_sqrt, sym_sum  # noqa: E402
__all__ += ["from_dlpack", "to_dlpack", "get_device_module", "is_distributed", "SymBool", "SymFloat", "SymInt",
            "sym_float", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum"]
from .functional.norm import native_batch_norm, native_group_norm, native_layer_norm  # noqa: E402
__all__ += ["native_batch_norm", "native_group_norm", "native_layer_norm"]
from .functional import stft  # noqa: E402
from .autograd import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled  # noqa: E402
from .functional import i0  # noqa: E402
from .functional.composed import gradient  # noqa: E402
from .functional.inplace import i0_  # noqa: E402
from .functional import igamma, igammac  # noqa: E402
__all__ += ["gradient", "stft", "i0", "i0_", "igamma", "igammac", "conv3d", "conv_transpose3d", "max_pool3d", "constant_pad_nd", "ctc_loss",
            "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "set_anomaly_enabled"]

# matrix functions of the eighth session (tnet/linalg.py: factorizations and solves on the host in float64)
from .linalg import (TORCH_FORMS, cholesky_inverse, cholesky_solve, chain_matmul, det, geqrf, logdet,  # noqa: E402
                     lu_unpack, matrix_exp, matrix_power, ormqr, pca_lowrank, pinverse, slogdet, svd_lowrank,
                     triangular_solve)
svd, qr, cholesky, lu, lu_solve, inverse, orgqr, adjoint = (
    TORCH_FORMS[n] for n in ("svd", "qr", "cholesky", "lu", "lu_solve", "inverse", "orgqr", "adjoint"))
__all__ += ["cholesky_inverse", "cholesky_solve", "chain_matmul", "det", "geqrf", "logdet", "lu_unpack", "matrix_exp",
            "matrix_power", "ormqr", "pinverse", "slogdet", "triangular_solve", "cholesky", "lu", "lu_solve", "qr",
            "svd", "orgqr", "inverse", "adjoint", "pca_lowrank", "svd_lowrank"]
from .linalg import nuclear_norm  # noqa: E402
from .functional.reduce import frobenius_norm  # noqa: E402
__all__ += ["nuclear_norm", "frobenius_norm"]

# tensor surface of the eighth session (ops3)
from .functional import (addbmm, addmv, addmv_, addr, as_strided, bitwise_left_shift, bitwise_right_shift,  # noqa: E402
                         cumulative_trapezoid, frexp, ger, index_reduce, mvlgamma, nextafter, polygamma,
                         resize_as_, scatter_reduce, trapezoid, trapz, vdot)
from .factory import (bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window,  # noqa: E402
                      logspace)
from .tensor import is_inference_mode_enabled  # noqa: E402
from .factory import range_ as range  # noqa: E402  (torch.range: end included; Python's range is builtins.range here)
from torch import compiled_with_cxx11_abi, get_num_interop_threads, is_storage, is_warn_always_enabled  # noqa: E402
from torch import set_num_interop_threads, set_warn_always  # noqa: E402
newaxis = None


def real(input):
    """input itself: tnet's tensors are real (torch's real, conj, resolve_conj and resolve_neg of one)."""
    return input


conj = resolve_conj = resolve_neg = real


def detach(input):
    return input.detach()


def detach_(input):
    return input.detach_()


def fill(input, value):
    """A copy of input filled with value (a number or a 0-d tensor), as torch.fill: input's gradient is
    0, value's the sum of g."""
    return clone(input).fill_(value)


def is_conj(input):
    return False


def is_neg(input):
    return False


def typename(obj):
    """torch's type name: a tnet tensor's as Tensor.type() gives it ('torch.cuda.FloatTensor' on a GPU),
    else torch.typename's."""
    return obj.type() if isinstance(obj, Tensor) else _torch.typename(obj)


def are_deterministic_algorithms_enabled():
    """What use_deterministic_algorithms last set (False at first), as torch's."""
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic[1]


def set_flush_denormal(mode):
    """torch's switch for its host math (returns whether the CPU supports it); tnet's kernels do not
    read it (the GPU keeps denormals, the interpreter's numpy too)."""
    return _torch.set_flush_denormal(mode)


_DEFAULT_TYPES = ("torch.FloatTensor", "torch.cuda.FloatTensor")


def set_default_tensor_type(t):
    """torch's legacy switch, for the float32 types only (tnet's default: float32 on its one device):
    'torch.FloatTensor' and 'torch.cuda.FloatTensor' (strings, torch's classes or tnet.FloatTensor) are
    accepted; others raise TypeError."""
    if not (t in _DEFAULT_TYPES if isinstance(t, str) else getattr(t, "dtype", None) == float32):
        raise TypeError(f"set_default_tensor_type: tnet's default tensors are float32 on its device; only "
                        f"{' and '.join(_DEFAULT_TYPES)} are accepted, got {t}")


__all__ += ["addbmm", "addmv", "addmv_", "addr", "as_strided", "bitwise_left_shift", "bitwise_right_shift",
            "cumulative_trapezoid", "frexp", "ger", "index_reduce", "mvlgamma", "nextafter",
            "polygamma", "resize_as_", "scatter_reduce", "trapezoid", "trapz", "vdot", "conj", "resolve_conj",
            "resolve_neg", "real", "bartlett_window", "blackman_window", "hamming_window", "hann_window",
            "kaiser_window", "logspace", "range", "compiled_with_cxx11_abi", "get_num_interop_threads", "is_storage",
            "is_warn_always_enabled", "set_num_interop_threads", "set_warn_always", "newaxis", "detach",
            "detach_", "fill", "is_conj", "is_neg", "typename", "are_deterministic_algorithms_enabled",
            "is_deterministic_algorithms_warn_only_enabled", "is_inference_mode_enabled", "set_flush_denormal",
            "set_default_tensor_type"]

# torch.sparse's names with dense storage (tnet/sparse.py: pygcn's adjacency); torch.sparse.torch is
# torch, which a capsule network's `torch.sparse.torch.eye(n)` reads
from .sparse import coo_tensor as sparse_coo_tensor, mm as spmm  # noqa: E402
sparse.torch = _sys.modules[__name__]
for _name in ("to_sparse", "to_dense", "coalesce", "is_coalesced", "indices", "values", "_indices", "_values", "_nnz",
              "sparse_dim", "dense_dim"):  # the COO accessors of a sparse_coo_tensor's dense storage
    setattr(Tensor, _name, getattr(sparse, _name))
# clone, detach and casts keep a COO tensor's structure, as torch's
Tensor.clone = clone = sparse.keeping_coo(clone, sparse.cloned_coo)
Tensor.detach = sparse.keeping_coo(Tensor.detach, sparse.detached_coo)
for _name in ("to", "float", "half", "bfloat16"):
    setattr(Tensor, _name, sparse.keeping_coo(getattr(Tensor, _name), sparse.cast_coo))
Tensor.is_sparse = property(lambda self: False)
__all__ += ["sparse_coo_tensor", "spmm"]

# fake quantisation (hand-written quantisation-aware training)
from .functional import fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine  # noqa: E402
__all__ += ["fake_quantize_per_channel_affine", "fake_quantize_per_tensor_affine"]

# What the imports made (torch's, numpy's, Triton's and tnet's modules, functions and classes) lives as long as the
# process: frozen (gc.freeze), it is left out of the collector's full passes, which an eager training loop's tape
# triggers every few hundred steps and which otherwise walk all of it (a long pause: docs/results.md). Objects made
# after the import are collected as ever. They are unfrozen at exit, for the interpreter's last collection (extension
# modules report what it does not free as leaked). TNET_GC_FREEZE=0 leaves the collector as it is.
import atexit as _atexit  # noqa: E402
import gc as _gc  # noqa: E402
import os as _os  # noqa: E402
if _os.environ.get("TNET_GC_FREEZE", "1") != "0":
    _gc.freeze()
    _atexit.register(_gc.unfreeze)


# torch's `out=` on the top-level functions whose torch twins take it and return one tensor (max, min, maximum,
# minimum and the factories take it themselves)
from .functional.inputs import taking_out as _taking_out  # noqa: E402
OUT_FUNCTIONS = ("abs", "acos", "acosh", "add", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "addr", "all",
                 "amax", "amin", "any", "asin", "asinh", "atan", "atan2", "atanh", "baddbmm", "bernoulli",
                 "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
                 "bitwise_xor", "bmm", "bucketize", "cat", "ceil", "cholesky", "cholesky_inverse", "cholesky_solve",
                 "clamp", "clamp_max", "clamp_min", "clip", "column_stack", "concat", "concatenate", "copysign", "cos",
                 "cosh", "cross", "cumprod", "cumsum", "deg2rad", "diag", "diff", "div", "dot", "dstack", "eq", "erf",
                 "erfinv", "exp", "exp2", "expm1", "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod",
                 "gather", "gcd", "ge", "gt", "heaviside", "histc", "hstack", "hypot", "igamma", "igammac", "index_select", "inner",
                 "isneginf", "isposinf", "kron", "lcm", "ldexp", "le", "lerp", "lgamma", "log", "log10", "log1p",
                 "log2", "logaddexp", "logaddexp2", "logcumsumexp", "logical_and", "logical_not", "logical_or",
                 "logical_xor", "logsumexp", "lt", "lu_solve", "masked_select", "matmul", "mean", "mm", "msort", "mul",
                 "multinomial", "mv", "nan_to_num", "nanmean", "nanquantile", "narrow_copy", "ne", "neg", "nextafter",
                 "norm", "normal", "ormqr", "outer", "pow", "prod", "quantile", "rad2deg", "reciprocal", "remainder",
                 "renorm", "round", "rsqrt", "searchsorted", "sgn", "sigmoid", "sign", "signbit", "sin", "sinh",
                 "sqrt", "square", "stack", "std", "sub", "sum", "take_along_dim", "tan", "tanh", "tril", "triu",
                 "trunc", "var", "vdot", "vstack", "where")
for _name in OUT_FUNCTIONS:
    globals()[_name] = _taking_out(globals()[_name])
del _name

# torch's CUDA autocast float32 list (amp.FLOAT32_OPS): those ops compute in float32 inside an autocast block,
# called as tnet.*, F.* (tnet.nn's layers call them so) or Tensor methods; tnet's own kernels' callers are not
# wrapped, as torch's autocast acts at its dispatcher's entry only
from .amp import FLOAT32_OPS as _FLOAT32_OPS, float32_under_autocast as _float32_under_autocast  # noqa: E402
for _name in _FLOAT32_OPS:
    for _space in (globals(), vars(functional)):
        if _name in _space:
            _space[_name] = _float32_under_autocast(_space[_name])
    if _name in vars(Tensor):
        setattr(Tensor, _name, _float32_under_autocast(vars(Tensor)[_name]))
del _name, _space
