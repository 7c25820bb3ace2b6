"""Modules in the PyTorch style, with Caffe's fillers and per-parameter lr/decay multipliers."""
from collections import OrderedDict

import numpy as np
import torch

from . import functional as F
from .kernels._autotune import check
from .kernels.nhwc import channels_fit, fits_shape
from .tensor import Tensor, _as_storage


class Parameter(Tensor):
    """A leaf that requires grad, with Caffe's lr_mult and decay_mult."""

    def __init__(self, array, lr_mult=1.0, decay_mult=1.0):
        super().__init__(_as_storage(array, torch.float32), requires_grad=True)
        self.lr_mult, self.decay_mult = lr_mult, decay_mult


def gaussian(std, mean=0.0):
    """Caffe's gaussian filler: draws from numpy's seeded generator, so a seed gives the same
    weights on CPU and GPU."""
    return lambda shape, rng: rng.normal(mean, std, size=shape).astype(np.float32)


def constant(value=0.0):
    """Caffe's constant filler."""
    return lambda shape, rng: np.full(shape, value, dtype=np.float32)


class Module:
    training = True

    def forward(self, *args):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def children(self):
        return [(k, v) for k, v in vars(self).items() if isinstance(v, Module)]

    def named_parameters(self, prefix=""):
        for name, value in vars(self).items():
            if isinstance(value, Parameter):
                yield prefix + name, value
            elif isinstance(value, Module):
                yield from value.named_parameters(f"{prefix}{name}.")

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def train(self, mode=True):
        self.training = mode
        for _, child in self.children():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        """Parameter values as numpy arrays, named after the layers ("conv1.weight")."""
        return OrderedDict((name, p.numpy().copy()) for name, p in self.named_parameters())

    def load_state_dict(self, state):
        params = dict(self.named_parameters())
        missing, unexpected = params.keys() - state.keys(), state.keys() - params.keys()
        check(not missing and not unexpected,
              f"load_state_dict: missing {sorted(missing)}, unexpected {sorted(unexpected)}")
        for name, p in params.items():
            value = np.asarray(state[name])
            check(value.shape == p.shape, f"load_state_dict: {name} is {p.shape} but the state holds {value.shape}")
            p.data.copy_(torch.from_numpy(value.astype(np.float32)))

    def __repr__(self):
        inner = "".join(f"\n  ({k}): " + repr(v).replace("\n", "\n  ") for k, v in self.children())
        return f"{type(self).__name__}({self.extra_repr()}{inner}{chr(10) if inner else ''})"

    def extra_repr(self):
        return ""


class Conv2d(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True,
                 weight_filler=gaussian(0.01), bias_filler=constant(0.0), rng=None, bias_lr_mult=2.0):
        rng = np.random.default_rng(0) if rng is None else rng
        self.stride, self.padding = stride, padding
        kh, kw = F._pair(kernel_size, "Conv2d: kernel_size")
        self.weight = Parameter(weight_filler((out_channels, in_channels, kh, kw), rng))
        self.bias = Parameter(bias_filler((out_channels,), rng), lr_mult=bias_lr_mult) if bias else None
        pair = (F._pair(stride, "Conv2d: stride"), F._pair(padding, "Conv2d: padding"))
        if fits_shape(in_channels, out_channels, (kh, kw), *pair) and channels_fit(in_channels):
            # the NHWC kernels read the weight's channels contiguously
            self.weight.data = self.weight.data.contiguous(memory_format=torch.channels_last)

    def forward(self, x, relu=False, pool=None):
        """relu=True fuses a ReLU after the convolution; pool, a MaxPool2d or AvgPool2d, also
        fuses that pooling after the ReLU (F.conv2d_relu_pool2d)."""
        if pool is None:
            return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, relu=relu)
        check(relu, "Conv2d: a fused pooling needs relu=True")
        return F.conv2d_relu_pool2d(x, self.weight, self.bias, self.stride, self.padding, pool.mode,
                                    pool.kernel_size, pool.stride, pool.padding, pool.ceil_mode)

    def extra_repr(self):
        cout, cin, kh, kw = self.weight.shape
        return f"{cin}, {cout}, kernel_size=({kh}, {kw}), stride={self.stride}, padding={self.padding}"


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, weight_filler=gaussian(0.01),
                 bias_filler=constant(0.0), rng=None, bias_lr_mult=2.0):
        rng = np.random.default_rng(0) if rng is None else rng
        self.weight = Parameter(weight_filler((out_features, in_features), rng))
        self.bias = Parameter(bias_filler((out_features,), rng), lr_mult=bias_lr_mult) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"{self.weight.shape[1]}, {self.weight.shape[0]}"


class _Pool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False):
        self.kernel_size, self.stride, self.padding, self.ceil_mode = kernel_size, stride, padding, ceil_mode

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, ceil_mode={self.ceil_mode}"


class MaxPool2d(_Pool):
    mode = "max"

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode)


class AvgPool2d(_Pool):
    mode = "avg"

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode)


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    def __init__(self, approximate="none"):
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    def forward(self, x):
        return F.silu(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class MSELoss(Module):
    def __init__(self, reduction="mean"):
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class AdaptiveAvgPool2d(Module):
    """Global average pooling: output_size 1 (or (1, 1)) only."""

    def __init__(self, output_size):
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class Flatten(Module):
    def forward(self, x):
        return x.reshape(x.shape[0], -1)


class Sequential(Module):
    """Layers applied in order; give an OrderedDict (or name=module pairs) to name them.

    A Conv2d followed by a ReLU runs as one fused op (F.conv2d(..., relu=True)), and with a
    pooling right after the ReLU as one op too (F.conv2d_relu_pool2d). ReLU commutes with
    max pooling, so conv -> max pool -> ReLU is fused the same way: same values, same
    gradients."""

    def __init__(self, *layers):
        if len(layers) == 1 and isinstance(layers[0], dict):
            layers = layers[0].items()
        else:
            layers = ((str(i), layer) for i, layer in enumerate(layers))
        for name, layer in layers:
            check(isinstance(layer, Module), f"Sequential: {name} is a {type(layer).__name__}, not a Module")
            setattr(self, name, layer)

    def forward(self, x):
        layers = [layer for _, layer in self.children()]
        i = 0
        while i < len(layers):
            covered, pool = _fusion(layers[i:i + 3])
            x = layers[i](x, relu=True, pool=pool) if covered else layers[i](x)
            i += covered or 1
        return x

    def __getitem__(self, i):
        return self.children()[i][1]

    def __len__(self):
        return len(self.children())


def _fusion(layers):
    """(how many of `layers` one fused Conv2d covers, the pooling it fuses or None): conv,
    ReLU, pool or conv, max pool, ReLU: 3 and the pool; conv, ReLU: 2; otherwise (0, None)."""
    kinds = [type(layer) for layer in layers]
    if kinds[:2] == [Conv2d, ReLU]:
        pooled = len(kinds) == 3 and issubclass(kinds[2], _Pool)
        return (3, layers[2]) if pooled else (2, None)
    if kinds == [Conv2d, MaxPool2d, ReLU]:
        return 3, layers[1]
    return 0, None
