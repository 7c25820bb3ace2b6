"""Mixed precision in PyTorch's style: 16-bit activations, fp32 master weights.

    with tnet.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()

Inside the block, conv2d, linear and matmul run on 16-bit operands (fp32 sums) and return
16-bit outputs; the ops after them (BatchNorm, activations, pooling, additions) keep their
input's dtype, with their statistics and sums in fp32; the ops of torch's CUDA autocast float32
list (exp, log, pow, sum, prod, cumsum, norm, layer_norm, group_norm, normalize, softmax, the
losses, ...: FLOAT32_OPS) compute in and return fp32, as torch's. Parameters
stay fp32 masters with fp32 gradients: a layer reads a parameter's 16-bit copy (`low_copy`),
made on first use and then rewritten by the optimizer's kernel as it updates the parameter
(no extra pass), and by Module.load_state_dict. A parameter changed by hand through `.memory`
must call `refresh_low_copies(p)`: its copy is kept for the parameter's lifetime, unlike
torch's per-block cache, so that a captured CUDA graph keeps one address for it.

float16 needs a loss scale, as in torch (its gradients underflow below 6e-8; bfloat16's
range is fp32's): GradScaler, torch's dynamic one, with its state on the device."""
import enum
import functools
import sys
import types
import warnings

import torch

from ._device import DEVICE
from .kernels import optim as optim_kernels
from .kernels.launch import check
from .kernels.copy import copy_
from .tensor import Tensor

LOW = (torch.float16, torch.bfloat16)
_state = {"dtype": None, "cache": True}


class autocast:
    """torch.autocast's signature: device_type ("cuda" or "cpu": tnet runs on its one device
    either way), dtype (torch.float16 or torch.bfloat16; None means torch's default for the
    device type, float16 for "cuda" and bfloat16 for "cpu"), enabled. A context manager or a
    decorator; nested blocks restore the outer one's state on exit. cache_enabled is accepted
    for torch's signature: tnet always keeps the parameters' copies (see the module's text)."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        check(device_type in ("cuda", "cpu"),
              lambda: f"autocast: device_type must be 'cuda' or 'cpu', got {device_type!r}")
        dtype = dtype if dtype is not None else (torch.float16 if device_type == "cuda" else torch.bfloat16)
        if dtype not in LOW:  # torch's rule: a block of another dtype (float32, as scripts pick off a GPU) casts nothing
            kind = device_type.upper()
            warnings.warn(f"In {kind} autocast, but the target dtype is not supported. Disabling autocast.\n{kind} "
                          f"Autocast only supports dtypes of torch.float16, torch.bfloat16 currently.")
            enabled = False
        self.dtype, self.enabled = dtype, bool(enabled)
        self._previous = []

    def __enter__(self):
        self._previous.append(_state["dtype"])
        _state["dtype"] = self.dtype if self.enabled else None
        return self

    def __exit__(self, *exc):
        _state["dtype"] = self._previous.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


def get_autocast_dtype(device_type=None):
    """The dtype of the enclosing autocast block. Outside one (or in a disabled one): None, or,
    where torch's form names a device type, torch's default for it (float16 for "cuda", bfloat16
    for "cpu"), the dtype a block of that type would take."""
    if _state["dtype"] is None and device_type is not None:
        return autocast(device_type).dtype
    return _state["dtype"]


def is_autocast_enabled(device_type=None):
    """Whether an enabled autocast block encloses the call; device_type is accepted for torch's
    signature (tnet's blocks cast on its one device, whatever type they name)."""
    return _state["dtype"] is not None


def get_autocast_gpu_dtype():
    """torch's older name for get_autocast_dtype("cuda"), which model files still call; with torch's warning."""
    warnings.warn("torch.get_autocast_gpu_dtype() is deprecated. Please use torch.get_autocast_dtype('cuda') instead.",
                  DeprecationWarning, stacklevel=2)
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype():
    """torch's older name for get_autocast_dtype("cpu"); with torch's warning."""
    warnings.warn("torch.get_autocast_cpu_dtype() is deprecated. Please use torch.get_autocast_dtype('cpu') instead.",
                  DeprecationWarning, stacklevel=2)
    return get_autocast_dtype("cpu")


def is_autocast_cpu_enabled():
    """torch's older name for is_autocast_enabled("cpu"); with torch's warning."""
    warnings.warn("torch.is_autocast_cpu_enabled() is deprecated. Please use torch.is_autocast_enabled('cpu') "
                  "instead.", DeprecationWarning, stacklevel=2)
    return is_autocast_enabled("cpu")


def set_autocast_cache_enabled(enabled):
    """torch's switch of the autocast weight cache, kept and reported (is_autocast_cache_enabled), as torch's: tnet
    keeps the parameters' 16-bit copies either way (see the module's text)."""
    _state["cache"] = bool(enabled)


def is_autocast_cache_enabled():
    return _state["cache"]


def clear_autocast_cache():
    """torch's: drops the casts its autocast cached; tnet's copies are refreshed after each optimizer step instead."""


def low_copy(p, dtype):
    """The 16-bit copy of parameter p (a tnet.Tensor holding fp32 data) in dtype: a torch
    tensor laid out as p.memory, made on the first call and kept on p (p._low, by dtype)."""
    low = p.__dict__.setdefault("_low", {})
    if dtype not in low:
        low[dtype] = copy_(torch.empty_like(p.memory, dtype=dtype), p.memory)
    return low[dtype]


def low_copies(p):
    """p's 16-bit copies (a list, often empty: an optimizer asks for every parameter at every step)."""
    low = p.__dict__.get("_low")
    return list(low.values()) if low else []


def refresh_low_copies(p):
    """Rewrite p's 16-bit copies from p.memory in place (their addresses stay)."""
    for t in low_copies(p):
        copy_(t, p.memory)


def drop_low_copies(p):
    """Forget p's 16-bit copies (p.memory was replaced by another shape or layout): the next use
    under autocast makes them anew."""
    p.__dict__.pop("_low", None)


# The ops of torch's CUDA autocast float32 list whose tnet forms would otherwise return 16 bits: inside an enabled
# block their 16-bit float tensor arguments are cast to float32 first, so they compute and return float32, as
# torch's (exp of a 16-bit 12 is 162754.8 there, not inf; a sum of squares does not overflow). The list's softmax,
# log_softmax, softmin and losses are not here: tnet's forms already compute in float32 and return it under
# autocast, from the 16-bit input itself (one pass fewer than a cast).
FLOAT32_OPS = ("__pow__", "__rpow__", "__rtruediv__", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "exp", "expm1",
               "log", "log10", "log1p", "log2", "pow", "reciprocal", "rsqrt", "cumprod", "cumsum", "prod", "sum",
               "norm", "dist", "cdist", "pdist", "renorm", "normalize", "cosine_similarity", "layer_norm", "group_norm",
               "softplus", "triplet_margin_loss", "poisson_nll_loss", "multi_margin_loss", "multilabel_margin_loss")


def _float32(v):
    return v.float() if isinstance(v, Tensor) and v.dtype in LOW else v


def float32_under_autocast(fn):
    """fn (an op of FLOAT32_OPS, a function or a Tensor method) computing in float32 inside an enabled autocast
    block: its 16-bit tensor arguments cast first (a cast on the tape: the gradients flow back in 16 bits). A call
    with out= is left as it is, as torch's autocast leaves out= calls alone."""
    @functools.wraps(fn)
    def op(*args, **kwargs):
        if _state["dtype"] is None or kwargs.get("out") is not None:
            return fn(*args, **kwargs)
        return fn(*map(_float32, args), **{k: _float32(v) for k, v in kwargs.items()})
    return op


def cast_operand(x, dtype):
    """The torch data of tnet.Tensor x in dtype, for a GEMM or convolution under autocast: x's
    own data when already in dtype; a parameter's (an fp32 leaf that requires grad) kept
    16-bit copy (low_copy); else a fresh cast by the copy kernel, in x's memory layout."""
    if x.dtype == dtype:
        return x.memory
    if x.dtype == torch.float32 and x.requires_grad and x._entry is None:
        return low_copy(x, dtype)
    return copy_(torch.empty_like(x.memory, dtype=dtype), x.memory)


class OptState(enum.Enum):
    """An optimizer's stage in GradScaler since its last update(), as torch.amp.grad_scaler's."""
    READY = 0
    UNSCALED = 1
    STEPPED = 2


class GradScaler:
    """torch.amp.GradScaler's arguments and methods scale, unscale_, step, update, get_scale,
    is_enabled, state_dict and load_state_dict, and the getters and setters of growth_factor,
    backoff_factor and growth_interval:

        scaler.scale(loss).backward()   # the gradients, times the scale, do not underflow float16
        scaler.unscale_(opt)            # optional: divided by it in place, to clip them (once a step)
        scaler.step(opt)                # divided by it again; no update if one holds an inf or NaN
        scaler.update()                 # the scale halves after such a step, doubles after 2000 without

    Unlike torch's, the whole is free of host synchronisation, so a CUDA graph can capture it:
    the scale, its growth tracker and the inf flag are device tensors, the optimizer's kernel
    divides each gradient as it reads it and skips the update (step counts too) on the flag,
    and step() returns None. With enabled=False, scale() returns its input and step() is
    optimizer.step()."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        check(device in ("cuda", "cpu"), lambda: f"GradScaler: device must be 'cuda' or 'cpu', got {device!r}")
        check(growth_factor > 1.0, "GradScaler: the growth factor must be > 1.0")
        check(0.0 < backoff_factor < 1.0, "GradScaler: the backoff factor must be < 1.0 and > 0")
        check(int(growth_interval) > 0, "GradScaler: growth_interval must be a positive integer")
        self._enabled = bool(enabled)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._scale = torch.full((), float(init_scale), device=DEVICE)
        self._growth_tracker = torch.zeros((), dtype=torch.int32, device=DEVICE)
        self._found_inf = torch.zeros((), device=DEVICE)
        self._scale_tensor = Tensor(self._scale)
        self._stages = {}  # id(optimizer): its OptState since the last update(), as torch's

    def _stage(self, optimizer):
        return self._stages.get(id(optimizer), OptState.READY)

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        """outputs times the scale (a tensor, or a list or tuple of them), on the tape."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(t) for t in outputs)
        return outputs * self._scale_tensor

    def unscale_(self, optimizer):
        """Divide optimizer's gradients by the scale in place, flagging an inf or NaN among them
        (one launch a 32 tensors, on the device), so that they may be clipped before step(), which
        then skips its own division. Once per optimizer between update()s, and before its step():
        else RuntimeError, as torch's."""
        if not self._enabled:
            return
        if self._stage(optimizer) is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if self._stage(optimizer) is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = [p.grad.memory for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        optim_kernels.find_inf_(grads, self._found_inf, self._scale)
        self._stages[id(optimizer)] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer's step on the gradients divided by the scale, in its one launch, after a pass
        that flags an inf or NaN in them (or on those that unscale_ divided and checked); a flagged
        step changes nothing."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if args or "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        if self._stage(optimizer) is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if self._stage(optimizer) is OptState.UNSCALED:
            optimizer._step(None, self._found_inf)
        else:
            optimizer._step(self._scale, self._found_inf)
        self._stages[id(optimizer)] = OptState.STEPPED
        return None

    def update(self, new_scale=None):
        """torch's rule, on the device: the scale times backoff_factor after a flagged step, times
        growth_factor after growth_interval steps in a row without one; or new_scale if given."""
        if not self._enabled:
            return
        self._stages.clear()
        if new_scale is not None:
            self._scale.fill_(float(new_scale))  # a host value (a tensor: a sync, as torch's .item())
            self._growth_tracker.zero_()
            self._found_inf.zero_()
            return
        optim_kernels.update_scale_(self._scale, self._growth_tracker, self._found_inf, self._growth_factor,
                                    self._backoff_factor, self._growth_interval)

    def get_scale(self):
        """The scale as a Python float (a host synchronisation); 1.0 when disabled."""
        return self._scale.item() if self._enabled else 1.0

    # torch's accessors of the update rule's settings; a setter's value rules from the next update()
    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def state_dict(self):
        """torch's keys (host copies; {} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": int(self._growth_tracker.item())}

    def load_state_dict(self, state_dict):
        """Take state_dict()'s values into this scaler's device tensors (their addresses stay)."""
        if not self._enabled:
            return
        check(len(state_dict) > 0, "GradScaler.load_state_dict: the state is empty (saved by a disabled scaler)")
        self._scale.fill_(float(state_dict["scale"]))
        self._growth_tracker.fill_(int(state_dict["_growth_tracker"]))
        self._found_inf.zero_()
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])


def is_autocast_available(device_type):
    """Whether autocast runs for device_type: "cuda" and "cpu" (tnet's one device either way)."""
    return device_type in ("cuda", "cpu")


def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    """torch.amp.custom_fwd, for an autograd.Function's forward(ctx, ...): the forward runs in the
    caller's autocast state, kept for custom_bwd; with cast_inputs (a 16-bit dtype or float32) and
    autocast on, it runs with autocast off on its floating-point tensor arguments cast to it."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(ctx, *args, **kwargs):
        ctx._autocast_dtype = _state["dtype"]
        if cast_inputs is None or _state["dtype"] is None:
            return fwd(ctx, *args, **kwargs)
        cast = [a.to(cast_inputs) if isinstance(a, Tensor) and a.dtype.is_floating_point else a for a in args]
        with autocast(device_type, enabled=False):
            return fwd(ctx, *cast, **kwargs)
    return forward


def custom_bwd(bwd=None, *, device_type="cuda"):
    """torch.amp.custom_bwd: the backward runs in the autocast state its custom_fwd forward ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(ctx, *grads):
        previous, _state["dtype"] = _state["dtype"], getattr(ctx, "_autocast_dtype", None)
        try:
            return bwd(ctx, *grads)
        finally:
            _state["dtype"] = previous
    return backward


def device_amp(package, device_type, default_dtype):
    """torch.<device>.amp (torch.cuda.amp, torch.cpu.amp) for tnet.<device> (package): autocast(enabled, dtype,
    cache_enabled) and GradScaler(init_scale, ...) with device_type fixed, default_dtype autocast's, in a module of
    its own in sys.modules, so that `from tnet.cuda.amp import autocast` imports."""
    def autocast_init(self, enabled=True, dtype=default_dtype, cache_enabled=True):
        autocast.__init__(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def scaler_init(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                    enabled=True):
        GradScaler.__init__(self, device_type, init_scale, growth_factor, backoff_factor, growth_interval, enabled)
    module = types.ModuleType(f"{package}.amp", f"torch.{device_type}.amp's autocast and GradScaler for device type "
                                                f"{device_type!r}.")
    for base, init in ((autocast, autocast_init), (GradScaler, scaler_init)):
        setattr(module, base.__name__, type(base.__name__, (base,), {
            "__init__": init, "__module__": module.__name__,
            "__doc__": f"torch.{device_type}.amp.{base.__name__}: tnet.amp.{base.__name__}({device_type!r}, ...)."}))
    sys.modules[module.__name__] = module
    return module


def add_path_modules(parent):
    """parent's (tnet.amp's, tnet.cuda.amp's) grad_scaler and autocast_mode submodules, with those of its names
    that torch's hold, in sys.modules, for torch's import paths (`from torch.cuda.amp.grad_scaler import
    GradScaler`, `from torch.amp.autocast_mode import autocast`)."""
    for name, members in (("grad_scaler", ("GradScaler", "OptState")),
                          ("autocast_mode", ("autocast", "custom_fwd", "custom_bwd", "is_autocast_available"))):
        module = types.ModuleType(f"{parent.__name__}.{name}", f"torch{parent.__name__[4:]}.{name}")
        module.__dict__.update({n: getattr(parent, n) for n in members if hasattr(parent, n)})
        sys.modules[module.__name__] = module
        setattr(parent, name, module)


add_path_modules(sys.modules[__name__])
