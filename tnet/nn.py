"""Modules in the PyTorch style, with Caffe's fillers and per-parameter lr/decay multipliers."""
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import torch

from . import amp
from . import functional as F
from ._device import DEVICE
from .functional.conv import check_conv_args, conv_padding
from .kernels.launch import check, pair
from .factory import init_generator
from .tensor import Tensor, as_storage, tensor


class Parameter(Tensor):
    """A leaf that requires grad, with Caffe's lr_mult and decay_mult (Caffe's order:
    torch's requires_grad comes as a keyword). From a tnet.Tensor it shares that tensor's
    memory, as torch's does (float32 on tnet's device: else a copy); from a numpy array,
    list or torch tensor it holds a float32 copy."""

    def __init__(self, data, lr_mult=1.0, decay_mult=1.0, *, requires_grad=True):
        if isinstance(data, Tensor) and data.dtype == torch.float32 and data.device == DEVICE:
            data = data.data
        else:
            data = as_storage(data, torch.float32)
        super().__init__(data, requires_grad=requires_grad)
        self.lr_mult, self.decay_mult = lr_mult, decay_mult


def gaussian(std, mean=0.0):
    """Caffe's gaussian filler: draws from numpy's seeded generator, so a seed gives the same
    weights on CPU and GPU."""
    return lambda shape, rng: rng.normal(mean, std, size=shape).astype(np.float32)


def constant(value=0.0):
    """Caffe's constant filler."""
    return lambda shape, rng: np.full(shape, value, dtype=np.float32)


class Module:
    """The base of every layer, as torch.nn.Module: a subclass calls super().__init__() and
    assigns its Parameters and submodules as attributes, which register them in the order of
    assignment; tensors that are state but not parameters are registered with
    register_buffer. Subclasses that skip super().__init__() work too. Methods that walk the
    tree (parameters, buffers, modules, children and their named_ forms) return generators.
    Difference: state_dict holds numpy copies, not tensors (see state_dict)."""

    training = True
    _buffer_names = MappingProxyType({})  # name -> persistent; each module's own from __init__ or register_buffer

    def __init__(self):
        self.training = True
        self._buffer_names = {}

    def forward(self, *args):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor of the module's state that is no parameter (BatchNorm's running mean):
        an attribute, in buffers() and, if persistent, in the state_dict. None is allowed
        (and skipped by both)."""
        check(isinstance(name, str) and name and "." not in name, f"register_buffer: bad name {name!r}")
        if not isinstance(tensor, (Tensor, type(None))):
            raise TypeError(f"register_buffer: cannot assign a {type(tensor).__name__} to buffer {name!r} "
                            "(tnet.Tensor or None required)")
        if "_buffer_names" not in vars(self):
            self._buffer_names = {}
        self._buffer_names[name] = persistent
        setattr(self, name, tensor)

    def register_parameter(self, name, param):
        """setattr(self, name, param) for a Parameter or None (torch's way of saying a layer has
        no such parameter, as BatchNorm2d(affine=False)'s weight)."""
        check(isinstance(name, str) and name and "." not in name, f"register_parameter: bad name {name!r}")
        if not isinstance(param, (Parameter, type(None))):
            raise TypeError(f"register_parameter: cannot assign a {type(param).__name__} to parameter {name!r} "
                            "(nn.Parameter or None required)")
        setattr(self, name, param)

    def _submodules(self):
        return [(name, value) for name, value in vars(self).items() if isinstance(value, Module)]

    def named_children(self):
        """(name, module) of each direct submodule, in the order of assignment, each once."""
        seen = set()
        for name, module in self._submodules():
            if id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(name, module) of this module ("") and of every submodule ("layer1.0.conv1"),
        depth first in the order of assignment; a module held twice comes once, unless
        remove_duplicate=False (state_dict lists a shared layer's values under each name)."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._submodules():
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def _named_members(self, members, prefix, recurse, remove_duplicate):
        """(name, tensor) from members(module) -> (name, tensor) pairs, for each module of the
        tree (or this one only): a module's own first, then its submodules', as torch."""
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in members(module):
                if remove_duplicate and id(value) in seen:
                    continue
                seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def _own_parameters(self):
        return [(name, v) for name, v in vars(self).items() if isinstance(v, Parameter)]

    def _own_buffers(self, persistent_only=False):
        names = [name for name, persistent in self._buffer_names.items() if persistent or not persistent_only]
        return [(name, getattr(self, name, None)) for name in names if getattr(self, name, None) is not None]

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """("conv1.weight", parameter) pairs; a parameter shared by two layers comes once."""
        return self._named_members(Module._own_parameters, prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(Module._own_buffers, prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def zero_grad(self, set_to_none=True):
        """Drop every parameter's gradient (set_to_none=False: zero it in place)."""
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.data.zero_()

    def requires_grad_(self, requires_grad=True):
        """Whether autograd computes the parameters' gradients (False freezes them)."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def train(self, mode=True):
        """Training mode (or eval mode, mode=False) for this module and every submodule."""
        if not isinstance(mode, bool):
            raise ValueError("train: training mode is expected to be boolean")
        for module in self.modules():
            module.training = mode
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        """Parameters and persistent buffers, named after the layers ("conv1.weight",
        "bn1.running_mean", "bn1.num_batches_tracked"), as numpy copies: unlike torch's
        tensors, later training does not change them (tnet.graph relies on that to put a
        model back), and they save with numpy alone."""
        return OrderedDict((name, t.numpy().copy()) for name, t in self._state().items())

    def _state(self):
        """The tnet tensors behind state_dict(), by the same names."""
        members = lambda module: module._own_parameters() + module._own_buffers(persistent_only=True)
        return OrderedDict(self._named_members(members, "", True, False))

    def load_state_dict(self, state_dict, strict=True):
        """Copy the values of state_dict (numpy arrays, tnet or torch tensors, by name as in
        state_dict()) into the parameters and persistent buffers, keeping their dtype and
        memory layout. Shapes must match; with strict, the names too. Nothing is copied when
        a check fails. Returns (missing_keys, unexpected_keys), as torch. The parameters'
        16-bit copies (tnet.amp.low_copy) are rewritten from the loaded values."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        own = self._state()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        values = {k: state_dict[k].data if isinstance(state_dict[k], Tensor) else state_dict[k]
                  for k in own if k in state_dict}
        for k, v in values.items():
            try:
                values[k] = v if isinstance(v, torch.Tensor) else torch.from_numpy(np.array(v))
            except (TypeError, ValueError) as e:
                raise TypeError(f"load_state_dict: the value for {k!r} is not an array of numbers ({e})") from None
            if values[k].is_complex() or values[k].dtype == torch.bool and own[k].data.is_floating_point():
                raise TypeError(f"load_state_dict: the value for {k!r} is {values[k].dtype}, the model's {own[k].dtype}")
        names = lambda keys: ", ".join(f'"{k}"' for k in keys)
        errors = [f"size mismatch for {k}: copying a param with shape {tuple(v.shape)} from checkpoint, the shape in "
                  f"current model is {own[k].shape}" for k, v in values.items() if tuple(v.shape) != own[k].shape]
        if strict:
            errors = [f"Missing key(s) in state_dict: {names(missing)}"] * bool(missing) \
                + [f"Unexpected key(s) in state_dict: {names(unexpected)}"] * bool(unexpected) + errors
        check(not errors, lambda: f"Error(s) in loading state_dict for {type(self).__name__}: " + "; ".join(errors))
        for k, v in values.items():
            own[k].data.copy_(v)
            amp.refresh_low_copies(own[k])  # the 16-bit copies that layers read under autocast
        return _IncompatibleKeys(missing, unexpected)

    def __repr__(self):
        inner = "".join(f"\n  ({k}): " + repr(v).replace("\n", "\n  ") for k, v in self.named_children())
        return f"{type(self).__name__}({self.extra_repr()}{inner}{chr(10) if inner else ''})"

    def extra_repr(self):
        return ""


def _factory_args(name, device, dtype):
    """torch's device= and dtype= of a layer: tnet's device and float32 only (parameters are fp32
    masters; tnet.autocast gives 16-bit compute)."""
    if device is not None and torch.device(device).type != DEVICE.type:
        raise ValueError(f"{name}: tnet keeps parameters on {DEVICE}, got device={device}")
    if dtype is not None and dtype != torch.float32:
        raise TypeError(f"{name}: parameters are float32 (use tnet.autocast for 16-bit compute), got dtype={dtype}")


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Conv2d(Module):
    """torch.nn.Conv2d's arguments in torch's order (padding also 'same' or 'valid'), with
    Caffe's ways kept as keyword-only extras: the weight is drawn by Caffe's gaussian filler
    (std 0.01) from `rng`, a numpy Generator, by default tnet's init stream
    (tnet.factory.init_generator, seeded by tnet.manual_seed; a seed gives the same weights on
    CPU and GPU), not PyTorch's Kaiming-uniform init, and the bias may learn at bias_lr_mult
    times the lr (Caffe's lr_mult; 1 by default). dilation and groups other than 1, and
    padding modes other than 'zeros', raise NotImplementedError."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, *, weight_filler=gaussian(0.01),
                 bias_filler=constant(0.0), rng=None, bias_lr_mult=1.0):
        super().__init__()
        for arg, v in (("in_channels", in_channels), ("out_channels", out_channels)):
            check(isinstance(v, int) and not isinstance(v, bool) and v > 0,
                  f"Conv2d: {arg} must be a positive int, got {v!r}")
        kh, kw = pair(kernel_size, "Conv2d: kernel_size", 1)
        pair(stride, "Conv2d: stride", 1)  # checked here: a bad value fails at construction, as in torch
        conv_padding(padding, stride, (kh, kw))
        check_conv_args(dilation, groups)
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d: padding_mode={padding_mode!r} is not supported (only 'zeros')")
        _factory_args("Conv2d", device, dtype)
        rng = init_generator() if rng is None else rng
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.padding_mode = padding_mode
        self.weight = Parameter(weight_filler((out_channels, in_channels, kh, kw), rng))
        self.bias = Parameter(bias_filler((out_channels,), rng), lr_mult=bias_lr_mult) if bias else None
        # channels-last: the kernels read a tap's channels, or (i, j, c) for few channels, contiguously
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
        return f"{cin}, {cout}, kernel_size=({kh}, {kw}), stride={self.stride}, padding={self.padding!r}"


class Linear(Module):
    """torch.nn.Linear's arguments in torch's order, with Caffe's gaussian filler, rng (tnet's
    init stream by default) and bias_lr_mult keyword-only, as in Conv2d."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *,
                 weight_filler=gaussian(0.01), bias_filler=constant(0.0), rng=None, bias_lr_mult=1.0):
        super().__init__()
        for arg, v in (("in_features", in_features), ("out_features", out_features)):
            check(isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                  f"Linear: {arg} must be a non-negative int, got {v!r}")
        _factory_args("Linear", device, dtype)
        rng = init_generator() if rng is None else rng
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


class _BatchNorm(Module):
    """torch's batch normalisation modules: weight (ones) and bias (zeros) Parameters with
    affine (bias=False: weight only), buffers running_mean (zeros), running_var (ones) and
    num_batches_tracked (int64 0) with track_running_stats. Training mode normalises with the
    batch's statistics and updates the running ones (momentum=None: their cumulative
    average); eval mode uses the running ones, or the batch's without them. The count and
    the running statistics change on the device only, so a CUDA graph can replay a step."""

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", Parameter(np.ones(num_features, np.float32)) if affine else None)
        self.register_parameter("bias", Parameter(np.zeros(num_features, np.float32)) if affine and bias else None)
        track = track_running_stats
        self.register_buffer("running_mean", tensor(np.zeros(num_features, np.float32)) if track else None)
        self.register_buffer("running_var", tensor(np.ones(num_features, np.float32)) if track else None)
        self.register_buffer("num_batches_tracked", tensor(np.array(0, np.int64)) if track else None)

    def forward(self, x, activation=None):
        """activation, tnet's addition: an nn.GELU() (approximate='none'), fused after the
        normalisation: the same as activation(self(x)), in one op (F.batch_norm's activation)."""
        self._check_input_dim(x)
        check(activation is None or (isinstance(activation, GELU) and activation.approximate == "none"),
              lambda: f"{type(self).__name__}: activation must be None or nn.GELU() to fuse, got {activation!r}")
        # torch's rules: the running statistics are updated in training mode if tracked, and
        # used in eval mode if they exist
        track = self.training and self.track_running_stats
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(x, self.running_mean if use_stats else None, self.running_var if use_stats else None,
                            self.weight, self.bias, self.training or self.running_mean is None, self.momentum,
                            self.eps, num_batches_tracked=self.num_batches_tracked if track else None,
                            activation=None if activation is None else "gelu")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Over [N, C] or [N, C, L] input."""

    def _check_input_dim(self, x):
        check(x.ndim in (2, 3), f"BatchNorm1d: expected 2D or 3D input (got {x.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Over [N, C, H, W] input, NCHW or channels-last (the output keeps the layout)."""

    def _check_input_dim(self, x):
        check(x.ndim == 4, f"BatchNorm2d: expected 4D input (got {x.ndim}D input)")


class ReLU(Module):
    """F.relu; inplace=True is accepted and computed out of place (the input is not modified)."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _Activation(Module):
    """An element-wise activation with torch's inplace= (accepted, computed out of place: the
    input is not modified) and its parameters, in torch's order."""
    fn, params = None, ()

    def __init__(self, *args, inplace=False, **kwargs):
        names = [name for name, _ in self.params]
        check(len(args) <= len(names) + 1 and not set(kwargs) - set(names),
              f"{type(self).__name__}: takes {', '.join(names + ['inplace'])}")
        values = dict(self.params, **dict(zip(names, args)), **kwargs)
        if len(args) > len(names):
            inplace = args[-1]
        for name, value in values.items():
            setattr(self, name, value)
        self.inplace = inplace

    def forward(self, x):
        return type(self).fn(x, *[getattr(self, name) for name, _ in self.params])

    def extra_repr(self):
        return ", ".join([f"{name}={getattr(self, name)}" for name, _ in self.params] +
                         ["inplace=True"] * bool(self.inplace))


class ReLU6(_Activation):
    fn = F.relu6


class Hardswish(_Activation):
    fn = F.hardswish


class Hardsigmoid(_Activation):
    fn = F.hardsigmoid


class LeakyReLU(_Activation):
    fn, params = F.leaky_relu, (("negative_slope", 0.01),)


class ELU(_Activation):
    fn, params = F.elu, (("alpha", 1.0),)


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


class CrossEntropyLoss(Module):
    """F.cross_entropy as a module, with torch's arguments (the deprecated size_average and
    reduce are not supported); weight is a tnet.Tensor of the class weights, or None."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        check(size_average is None and reduce is None,
              "CrossEntropyLoss: the deprecated size_average and reduce are not supported")
        check(reduction in ("mean", "sum", "none"), f"CrossEntropyLoss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        check(0.0 <= label_smoothing < 1.0, f"CrossEntropyLoss: label_smoothing must be in [0, 1), got {label_smoothing}")
        self.weight, self.ignore_index, self.reduction, self.label_smoothing = weight, ignore_index, reduction, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(Module):
    """F.nll_loss as a module, with torch's arguments (the deprecated size_average and reduce
    are not supported)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        check(size_average is None and reduce is None, "NLLLoss: the deprecated size_average and reduce are not supported")
        check(reduction in ("mean", "sum", "none"), f"NLLLoss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class AdaptiveAvgPool2d(Module):
    """F.adaptive_avg_pool2d to any output_size (an int or a pair; None keeps that size)."""

    def __init__(self, output_size):
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """F.adaptive_max_pool2d to any output_size, return_indices as torch."""

    def __init__(self, output_size, return_indices=False):
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class _Pad(Module):
    """F.pad of the last two dims: padding an int (all four sides) or (left, right, top, bottom)."""
    mode = "constant"

    def __init__(self, padding, value=None):
        self.padding = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
        check(len(self.padding) == 4, f"{type(self).__name__}: padding must be an int or 4 ints, got {padding!r}")
        self.value = value

    def forward(self, x):
        return F.pad(x, self.padding, self.mode, self.value)

    def extra_repr(self):
        return f"{self.padding}" + (f", value={self.value}" if self.value is not None else "")


class ZeroPad2d(_Pad):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ConstantPad2d(_Pad):
    pass


class ReflectionPad2d(_Pad):
    mode = "reflect"


class ReplicationPad2d(_Pad):
    mode = "replicate"


class Flatten(Module):
    """Dims start_dim..end_dim as one (F.flatten: torch's NCHW order for a channels-last activation)."""

    def __init__(self, start_dim=1, end_dim=-1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return F.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """F.dropout in training mode (module.train()), the identity in eval mode."""

    def __init__(self, p=0.5, inplace=False):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Identity(Module):
    """Returns its input; takes and ignores any arguments, as torch's."""

    def __init__(self, *args, **kwargs):
        pass

    def forward(self, x):
        return x


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

    def _layers(self):
        return [layer for _, layer in self._submodules()]  # a layer given twice runs twice

    def forward(self, x):
        layers = self._layers()
        i = 0
        while i < len(layers):
            covered, pool = _fusion(layers[i:i + 3])
            x = layers[i](x, relu=True, pool=pool) if covered else layers[i](x)
            i += covered or 1
        return x

    def __getitem__(self, i):
        return self._layers()[i]

    def __len__(self):
        return len(self._layers())


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
