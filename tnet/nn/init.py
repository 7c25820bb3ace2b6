"""torch.nn.init's functions, with torch's names, signatures and semantics: each fills a
tnet.Tensor (a Parameter, say) or a torch tensor in place, outside autograd, and returns it.

The values are drawn on the host by numpy from tnet's init stream (tnet.factory.init_generator,
seeded by tnet.manual_seed; `generator=` takes another numpy Generator), then copied to the
device: a seed gives the same values on CPU and GPU, though not torch's values. The write counts
as an in-place write (the tape's version check sees it) and rewrites the tensor's 16-bit copies
that layers read under autocast (tnet.amp)."""
import math
import warnings

import numpy as np
import torch

from .. import amp
from ..factory import host_generator
from ..kernels.launch import check
from ..tensor import Tensor, bump_version

__all__ = ["calculate_gain", "calculate_fan_in_and_fan_out", "uniform_", "normal_", "trunc_normal_", "constant_",
           "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye", "dirac",
           "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


def _storage(tensor):
    if isinstance(tensor, Tensor):
        return tensor.memory
    if isinstance(tensor, torch.Tensor):
        return tensor
    raise TypeError(f"nn.init: expected a tnet.Tensor or a torch tensor, got {type(tensor).__name__}")


def _rng(generator):
    return host_generator("nn.init", generator)


def _written(tensor):
    """Count the in-place write and refresh the 16-bit copies; returns tensor, as torch's functions do."""
    bump_version(tensor)
    if isinstance(tensor, Tensor):
        amp.refresh_low_copies(tensor)
    return tensor


def write_(tensor, values):
    """Write `values` (a numpy array of tensor's shape) into tensor, which keeps its dtype and
    memory layout; counted as an in-place write, as every function here. For Caffe's fillers
    (nn.Conv2d's weight_filler) and this module's draws."""
    data = _storage(tensor)
    values = np.asarray(values)
    check(values.shape == tuple(data.shape), lambda: f"nn.init: values {values.shape} for a tensor {tuple(data.shape)}")
    if data.is_floating_point():
        values = values.astype(np.float32)  # half the bytes to the device; 16-bit targets round from it
    data.copy_(torch.from_numpy(np.ascontiguousarray(values)))
    return _written(tensor)


def _fill_value(tensor, value):
    _storage(tensor).fill_(value)
    return _written(tensor)


def calculate_gain(nonlinearity, param=None):
    """torch's recommended gain for a nonlinearity: 1 for linear, conv and sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (param: the slope, 0.01 by
    default), 3/4 for selu."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight [out, in, *kernel]: in and out times the kernel's size.
    torch's private name _calculate_fan_in_and_fan_out is an alias (scripts use it)."""
    shape = tuple(_storage(tensor).shape)
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = math.prod(shape[2:])
    return shape[1] * receptive_field_size, shape[0] * receptive_field_size


_calculate_fan_in_and_fan_out = calculate_fan_in_and_fan_out


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Values from U(a, b)."""
    check(a <= b, lambda: f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    return write_(tensor, _rng(generator).uniform(a, b, size=_storage(tensor).shape))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Values from N(mean, std^2)."""
    check(std >= 0.0, lambda: f"normal expects std >= 0.0, but found std {std}")
    return write_(tensor, _rng(generator).normal(mean, std, size=_storage(tensor).shape))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Values from N(mean, std^2) truncated to [a, b] (a and b are values, not multiples of
    std, as in torch): draws outside [a, b] are drawn again."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    norm_cdf = lambda x: (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    accept = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) if std > 0 else float(a <= mean <= b)
    check(accept > 0, lambda: f"trunc_normal_: N({mean}, {std}^2) has no mass in [{a}, {b}]")
    rng, shape = _rng(generator), _storage(tensor).shape
    n = math.prod(shape)
    kept = np.empty(0)
    while kept.size < n:  # each round draws enough for the rest, expectedly, with a margin
        draw = rng.normal(mean, std, size=int((n - kept.size) / accept * 1.1) + 16)
        kept = np.concatenate([kept, draw[(draw >= a) & (draw <= b)]])
    return write_(tensor, kept[:n].reshape(shape))



_no_grad_trunc_normal_ = trunc_normal_  # torch's private name (older DeiT and ViT files import it); tnet's is no-grad


def constant_(tensor, val):
    return _fill_value(tensor, val)


def ones_(tensor):
    return _fill_value(tensor, 1.0)


def zeros_(tensor):
    return _fill_value(tensor, 0.0)


# torch's other private no-grad fills, which copied init code calls (tnet's fills write without the tape anyway)
_no_grad_uniform_, _no_grad_normal_, _no_grad_fill_, _no_grad_zero_ = uniform_, normal_, constant_, zeros_


def eye_(tensor):
    """The identity matrix, for a 2-D tensor (Linear's weight: as many inputs kept as possible)."""
    shape = tuple(_storage(tensor).shape)
    if len(shape) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return write_(tensor, np.eye(*shape))


def dirac_(tensor, groups=1):
    """The Dirac delta, for a 3-, 4- or 5-D convolution weight: output channel d of each group
    passes input channel d through the kernel's centre (as many channels as possible)."""
    shape = tuple(_storage(tensor).shape)
    if len(shape) not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = shape[0] // groups
    values = np.zeros(shape)
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return write_(tensor, values)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot's uniform init: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot's normal init: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    """He's std, gain / sqrt(fan); None for a tensor without elements (torch warns and leaves it)."""
    if 0 in _storage(tensor).shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He's uniform init: U(-bound, bound), bound = gain * sqrt(3 / fan), fan per mode
    ('fan_in' or 'fan_out'), gain per nonlinearity (a: leaky_relu's slope). With a = sqrt(5),
    torch's default for Conv2d and Linear weights: bound = 1 / sqrt(fan_in)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He's normal init: N(0, std^2), std = gain / sqrt(fan) (mode, nonlinearity and a as
    kaiming_uniform_)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix times gain, for a tensor of >= 2 dims flattened to
    [size(0), rest]: the Q of a normal matrix's QR decomposition (numpy, on the host), its
    columns' signs made those of R's diagonal, as torch's."""
    shape = tuple(_storage(tensor).shape)
    if len(shape) < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if math.prod(shape) == 0:
        return tensor
    rows = shape[0]
    cols = math.prod(shape) // rows
    flattened = _rng(generator).normal(0, 1, size=(rows, cols))
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return write_(tensor, (q * gain).reshape(shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D tensor from N(0, std^2) with ceil(sparsity * rows) elements of each column zero."""
    shape = tuple(_storage(tensor).shape)
    if len(shape) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rng = _rng(generator)
    rows, cols = shape
    num_zeros = math.ceil(sparsity * rows)
    values = rng.normal(0, std, size=shape)
    for col in range(cols):
        values[rng.permutation(rows)[:num_zeros], col] = 0
    return write_(tensor, values)


def _deprecated(fn):
    """torch's deprecated name without the trailing underscore (old scripts use them)."""
    old_name = fn.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{fn.__name__}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    deprecated_init.__name__ = old_name
    deprecated_init.__doc__ = f"Deprecated, as in torch: {fn.__name__}."
    return deprecated_init


uniform, normal, constant, eye, dirac = map(_deprecated, (uniform_, normal_, constant_, eye_, dirac_))
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal, sparse = _deprecated(orthogonal_), _deprecated(sparse_)
