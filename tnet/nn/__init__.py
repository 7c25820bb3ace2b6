"""Modules in the PyTorch style, with Caffe's fillers and per-parameter lr/decay multipliers."""
import dataclasses
import math
import numbers
import operator
import sys
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Iterable, Mapping, MutableMapping, MutableSet
from types import MappingProxyType

import numpy as np
import torch

from .. import amp
from .. import functional as F
from .._device import DEVICE
from ..functional.conv import check_conv_args
from ..functional.inputs import legacy_reduction
from ..kernels.launch import InputTypeError, check, dense, ntuple, pair, plain_ints, single, triple
from ..factory import init_generator, zeros
from ..tensor import (Tensor, add_hook, as_int, as_storage, check_factory_device, gate, hooks_of, is_grad_enabled,
                      memory_of, no_grad, tensor)
from . import attention, init, utils

# torch.nn.functional's path to the one functional module: `import tnet.nn.functional as F` and
# `from tnet.nn import functional as F` give tnet.functional itself
functional = F
sys.modules[__name__ + ".functional"] = F


reshaped_parameters = [0]  # how often a Parameter's memory took another shape (Parameter.memory)


def _hook_last_op(module, out, hooks):
    """Put register_backward_hook's hooks (a list) on the tape entry that made out's first tensor: its
    backward then hands its input gradients through them."""
    var = out
    while not isinstance(var, Tensor):
        var = next(iter(var.values())) if isinstance(var, Mapping) else var[0]
    entry = var._entry
    if entry is None or entry.backward is None:
        return
    backward = entry.backward

    def hooked(g):
        grad_input = tuple(None if gx is None or not x.requires_grad else Tensor(gx)
                           for x, gx in zip(entry.inputs, backward(g)))
        for hook in hooks:
            changed = hook(module, grad_input, (Tensor(g),))
            if changed is not None:
                check(len(changed) == len(grad_input), lambda: f"backward hook returned {len(changed)} "
                                                               f"grad_input, expected {len(grad_input)}")
                grad_input = tuple(changed)
        return [None if gx is None else memory_of(gx) for gx in grad_input]
    entry.backward = hooked


class Parameter(Tensor):
    """A leaf that requires grad, with Caffe's lr_mult and decay_mult (Caffe's order:
    torch's requires_grad comes as a keyword). From a tnet.Tensor it shares that tensor's
    memory, as torch's does (float32 on tnet's device: else a copy); from a numpy array,
    list or torch tensor it holds a float32 copy."""

    def __init__(self, data, lr_mult=1.0, decay_mult=1.0, *, requires_grad=True):
        if requires_grad and isinstance(data, (Tensor, torch.Tensor)) and not data.is_floating_point():
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")  # torch's
        if isinstance(data, Tensor) and data.dtype == torch.float32 and data.device == DEVICE:
            data = data.memory
        else:
            data = as_storage(data, torch.float32)
        super().__init__(data, requires_grad=requires_grad)
        self.lr_mult, self.decay_mult = lr_mult, decay_mult

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()  # torch's

    def __deepcopy__(self, memo):
        """A new Parameter holding a copy of the values, with requires_grad (and Caffe's multipliers), as torch's:
        neither the gradient nor other attributes come along, so `target = copy.deepcopy(model)` starts
        without gradients."""
        if id(self) not in memo:
            result = Parameter.__new__(type(self))
            Parameter.__init__(result, self.memory.clone(), self.lr_mult, self.decay_mult,
                               requires_grad=self.requires_grad)
            memo[id(self)] = result
        return memo[id(self)]

    @property
    def memory(self):
        return self._memory

    @memory.setter
    def memory(self, value):
        """p.data = t, as torch's, and tnet's own writes: p's 16-bit copies (tnet.amp) are
        rewritten in place where the shape and strides stay, else dropped (the next autocast use
        makes them anew)."""
        old = self.__dict__.get("_memory")
        self._memory = value
        if old is not None and old.shape != value.shape:
            reshaped_parameters[0] += 1  # optimizers built before then remake their state of it (lazy layers)
        self._shape_of = None  # Tensor.shape's cache: drops its hold on the old memory
        low = amp.low_copies(self)
        if low and all(t.shape == value.shape and t.stride() == value.stride() for t in low):
            amp.refresh_low_copies(self)
        elif low:
            amp.drop_low_copies(self)


class UninitializedParameter(Parameter):
    """torch's placeholder parameter of a lazy layer: an empty Parameter until materialize(shape)
    gives it memory (drawn by nothing: the layer's reset_parameters fills it) and makes it a
    Parameter, as torch's. Difference: it is an ordinary empty tensor meanwhile (torch's refuses
    most uses)."""
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        factory_args("UninitializedParameter", device, dtype)
        super().__init__(np.empty(0, np.float32), requires_grad=requires_grad)

    def materialize(self, shape, device=None, dtype=None, **layout):
        factory_args("UninitializedParameter.materialize", device, dtype)
        self.memory = torch.empty(tuple(shape), device=DEVICE, **layout)
        self.__class__ = self.cls_to_become


class UninitializedBuffer(Tensor):
    """torch's placeholder buffer of a lazy layer (see UninitializedParameter): a tnet.Tensor once
    materialized."""
    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        factory_args("UninitializedBuffer", device, dtype)
        super().__init__(torch.empty(0, device=DEVICE), requires_grad)
        self.persistent = persistent

    materialize = UninitializedParameter.materialize


class _BufferMeta(type):
    def __instancecheck__(cls, instance):  # torch's: a tensor made by Buffer(...) is a Buffer
        return isinstance(instance, Tensor) and vars(instance).get("_is_buffer", False)


class Buffer(Tensor, metaclass=_BufferMeta):
    """torch.nn.Buffer (torch 2.5+): Buffer(data, persistent=True) is data detached (its memory)
    marked so that assigning it to a module attribute registers it as a buffer (persistent: in the
    state_dict), as register_buffer does."""

    def __new__(cls, data=None, *, persistent=True):
        data = tensor(np.empty(0, np.float32)) if data is None else data if isinstance(data, Tensor) else tensor(data)
        t = data.detach()
        t.requires_grad = data.requires_grad
        t.persistent, t._is_buffer = persistent, True
        return t


def gaussian(std, mean=0.0):
    """Caffe's gaussian filler: draws from numpy's seeded generator, so a seed gives the same
    weights on CPU and GPU."""
    return lambda shape, rng: rng.normal(mean, std, size=shape).astype(np.float32)


def constant(value=0.0):
    """Caffe's constant filler."""
    return lambda shape, rng: np.full(shape, value, dtype=np.float32)


def _put(values, at, replacements):
    """values (a tuple) with values[at[k]] = replacements[k]."""
    values = list(values)
    for i, v in zip(at, replacements):
        values[i] = v
    return tuple(values)


class _Members(MutableMapping):
    """Module._modules, _parameters and _buffers: the module's attributes of class `kind` (None: its
    buffers) and those registered as that kind and set to None, by name in the order of assignment; an
    item set goes through `put` (setattr, or register_buffer), an item deleted is the attribute deleted."""

    def __init__(self, module, kind, put):
        self.module, self.kind, self.put = module, kind, put

    def _names(self):
        if self.kind is None:
            return [name for name in self.module._buffer_names if name in vars(self.module)]
        nones = self.module._none_members  # names registered as this kind whose value is None, as torch keeps them
        return [name for name, v in vars(self.module).items()
                if isinstance(v, self.kind) or v is None and nones.get(name) is self.kind]

    def __getitem__(self, name):
        if name not in self._names():
            raise KeyError(name)
        return vars(self.module)[name]

    def __setitem__(self, name, value):
        self.put(self.module, name, value)

    def __delitem__(self, name):
        self[name]  # a KeyError for a name that is no member
        delattr(self.module, name)

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())


# torch's hook registries of a module, each a dict that exists from construction there: code reads or clears
# them (`len(m._forward_hooks)`, `m._forward_hooks.clear()` to drop every forward hook at once)
_HOOK_REGISTRIES = frozenset({"_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                              "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"})


class _NonPersistent(MutableSet):
    """Module._non_persistent_buffers_set: the names of the module's own buffers kept out of its state_dict, a
    live view of its registry, as code copied from torch reads (`name in m._non_persistent_buffers_set`) and
    edits it (discard(name) puts a buffer into the state_dict, add(name) takes it out); a name that is no
    buffer of the module is not kept."""

    def __init__(self, module):
        self.module = module

    def __contains__(self, name):
        return self.module._buffer_names.get(name) is False

    def __iter__(self):
        return iter([name for name, persistent in self.module._buffer_names.items() if not persistent])

    def __len__(self):
        return len(list(iter(self)))

    def add(self, name):
        if name in self.module._buffer_names:
            self.module._buffer_names[name] = False

    def discard(self, name):
        if name in self.module._buffer_names:
            self.module._buffer_names[name] = True


class _ForwardHook:
    """A forward hook registered with with_kwargs=True (called with the forward's keyword arguments
    too) or always_call=True (called, with output None, when the call raised before it ran)."""

    def __init__(self, hook, with_kwargs, always_call):
        self.hook, self.with_kwargs, self.always_call = hook, with_kwargs, always_call

    def __call__(self, module, args, kwargs, out):
        return self.hook(module, args, kwargs, out) if self.with_kwargs else self.hook(module, args, out)


# torch.nn.modules.module's global hooks (register_module_*_hook, below): those of a call, which every module's
# call runs before its own, and those of registration, which __setattr__ runs
_GLOBAL_HOOKS = type("GlobalHooks", (), {})()
_CALL_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks",
               "_legacy_backward_hooks")


class Module:
    """The base of every layer, as torch.nn.Module: a subclass calls super().__init__() and
    assigns its Parameters and submodules as attributes, which register them in the order of
    assignment; tensors that are state but not parameters are registered with
    register_buffer. Subclasses that skip super().__init__() work too. Methods that walk the
    tree (parameters, buffers, modules, children and their named_ forms) return generators.
    state_dict holds tensors on the module's memory, as torch's (see state_dict)."""

    training = True
    _buffer_names = MappingProxyType({})  # name -> persistent; each module's own from __init__ or register_buffer
    _none_members = MappingProxyType({})  # name -> Parameter or Module: a parameter or submodule set to None
    _compute_dtype = None  # float16 or bfloat16 after .half() or .bfloat16(): the forward runs under autocast
    _hooked = False  # True once a hook was registered on this module (_add_hook): __call__ looks for them
    call_super_init = False  # torch's class flags, read by code that copies torch's Module conventions
    dump_patches = False

    def __init__(self):
        self.training = True
        self._buffer_names = {}

    def forward(self, *args):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __setattr__(self, name, value):
        if vars(_GLOBAL_HOOKS) and value is not None:  # only while some global hook was ever registered
            value = self._registering(name, value)
        current, buffers = self.__dict__.get(name), self.__dict__.get("_buffer_names", {})
        kind = (Parameter if isinstance(current, Parameter) else Module if isinstance(current, Module) else
                self._none_members.get(name))
        if value is not None and kind is not None and not isinstance(value, (kind, Parameter)):
            # torch's: a parameter's name takes a Parameter or None (`m.weight = nn.Parameter(t)`, `m.weight.data =
            # t`), a submodule's a Module, a Parameter or None
            what = "parameter" if kind is Parameter else "child module"
            raise TypeError(f"cannot assign '{_typename(value)}' as {what} '{name}' (torch.nn.{kind.__name__} or None "
                            "expected)")
        if value is None and kind is not None:  # still registered, as torch's _parameters and _modules keep None
            self._mark_none(name, kind)
        elif name in self._none_members:
            del self._none_members[name]
        if name in buffers:  # a parameter or submodule takes a buffer's name from it, as torch's; else a tensor or None
            if isinstance(value, (Parameter, Module)):
                del buffers[name]
            elif value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' (torch.nn.Buffer, "
                                "torch.Tensor or None expected)")
        if isinstance(value, Tensor) and vars(value).get("_is_buffer"):  # an nn.Buffer registers, as torch's
            if "_buffer_names" not in vars(self):
                object.__setattr__(self, "_buffer_names", {})
            self._buffer_names[name] = value.persistent
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        """The attribute deleted, and with it its registration as a buffer, or as a parameter or submodule set to
        None: a later tensor of the name is a plain attribute, as after torch's del."""
        object.__delattr__(self, name)
        for registry in ("_buffer_names", "_none_members"):
            if name in self.__dict__.get(registry, ()):
                del self.__dict__[registry][name]

    def _mark_none(self, name, kind):
        """Register the attribute `name`, set to None, as a parameter or submodule (kind Parameter or Module)."""
        if "_none_members" not in vars(self):
            object.__setattr__(self, "_none_members", {})
        self._none_members[name] = kind

    def __setstate__(self, state):
        """copy.deepcopy's and pickle's restore of the attributes, as torch's: a subclass's own __setstate__ (the
        Transformer layers' copies fill a missing activation) calls super().__setstate__(state)."""
        self.__dict__.update(state)

    def __getattr__(self, name):
        """torch's Module.__getattr__, which scripts also call by name (kuangliu's DLA reads its subtrees by
        `self.__getattr__('level_%d' % i)`): an attribute of the instance, else torch's AttributeError. Python
        calls it only where the usual lookup failed, so attribute reads cost nothing more."""
        try:
            return self.__dict__[name]
        except KeyError:
            if name in _HOOK_REGISTRIES:  # made on first read, as the first hook makes it (add_hook)
                return self.__dict__.setdefault(name, {})
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'") from None

    def __call__(self, *args, **kwargs):
        if torch.Tensor in map(type, args):  # a torchvision transform's output, say: a constant copy, as tnet.tensor
            args = tuple(Tensor(as_storage(a)) if type(a) is torch.Tensor else a for a in args)
        if not self._hooked and self._compute_dtype is None:  # the common path: one forward call
            return self.forward(*args, **kwargs)
        called = set()  # the always_call hooks that ran
        try:
            return self._hooked_call(args, kwargs, called)
        except Exception:
            for hook in self._hooks("_forward_hooks"):
                if isinstance(hook, _ForwardHook) and hook.always_call and id(hook) not in called:
                    try:
                        hook(self, args, kwargs, None)
                    except Exception as e:
                        warnings.warn("forward hook with ``always_call=True`` raised an exception that was silenced "
                                      f"as another error was raised in forward: {e}")
            raise

    def _hooked_call(self, args, kwargs, called):
        for hook in self._hooks("_forward_pre_hooks"):
            if isinstance(hook, _ForwardHook):
                changed = hook.hook(self, args, kwargs)
                if changed is not None:
                    if not (isinstance(changed, tuple) and len(changed) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {changed}.")
                    args, kwargs = changed
                continue
            changed = hook(self, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        if is_grad_enabled() and (self._hooks("_backward_hooks") or self._hooks("_backward_pre_hooks")):
            return self._call_with_backward_hooks(args, kwargs, called)
        return self._forward_and_hooks(args, kwargs, called)

    def _registering(self, name, value):
        """value through the global registration hooks of its kind (register_module_parameter_/module_/
        buffer_registration_hook), as torch's register_parameter, add_module and register_buffer run them:
        hook(module, name, value), a returned value replacing it."""
        buffer = isinstance(value, Tensor) and (name in self.__dict__.get("_buffer_names", {}) or
                                                vars(value).get("_is_buffer"))
        kind = ("_parameter_registration_hooks" if isinstance(value, Parameter) else
                "_module_registration_hooks" if isinstance(value, Module) else
                "_buffer_registration_hooks" if buffer else None)
        for hook in list(vars(_GLOBAL_HOOKS).get(kind, {}).values()) if kind else ():
            changed = hook(self, name, value)
            if changed is not None:
                value = changed
        return value

    def _hooks(self, attribute):
        """The hooks of one kind that a call runs: the global ones (register_module_*_hook) first, then
        the module's own, each in the order registered, as torch's."""
        return [*_GLOBAL_HOOKS.__dict__.get(attribute, {}).values(), *self.__dict__.get(attribute, {}).values()]

    def _forward_and_hooks(self, args, kwargs, called):
        if self._compute_dtype is None or amp.is_autocast_enabled():
            out = self.forward(*args, **kwargs)
        else:
            with amp.autocast(dtype=self._compute_dtype):
                out = self.forward(*args, **kwargs)
        for hook in self._hooks("_forward_hooks"):
            if isinstance(hook, _ForwardHook):
                called.add(id(hook))
                changed = hook(self, args, kwargs, out)
            else:
                changed = hook(self, args, out)
            if changed is not None:
                out = changed
        legacy = self._hooks("_legacy_backward_hooks")
        if legacy and is_grad_enabled():
            _hook_last_op(self, out, legacy)
        return out

    def _call_with_backward_hooks(self, args, kwargs, called):
        """The call with its positional tensor inputs and its tensor outputs gated (tensor.gate), as
        torch's BackwardHook: the output gradients go through the backward pre-hooks; the backward
        hooks run once the inputs' gradients are in (or at the outputs, where no input needs one)."""
        grad_input, grad_output = [None] * len(args), []
        needs = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        reached = [False]  # whether the gradient came through the outputs since the hooks last ran, as torch's

        def run_hooks():
            for hook in self._hooks("_backward_hooks"):
                changed = hook(self, tuple(grad_input), tuple(grad_output))
                if changed is not None:
                    check(len(changed) == len(grad_input), lambda: f"Backward hook returned an invalid number of "
                                                                   f"grad_input, got {len(changed)}, but expected "
                                                                   f"{len(grad_input)}")
                    grad_input[:] = changed

        def passed(g, graph):  # what a gate passes on: torch memory, or under create_graph the tnet Tensor itself
            return None if g is None else g if graph else memory_of(g)

        def received(g):  # what a gate hands the hooks: a tnet Tensor (torch memory wrapped)
            return None if g is None else g if isinstance(g, Tensor) else Tensor(g)

        def at_inputs(grads, graph):
            if not reached[0]:  # torch's: a gradient that reached the inputs by another way (a double backward,
                return [passed(received(g), graph) for g in grads]  # an output of another type) runs no hook
            for i, g in zip(needs, grads):
                grad_input[i] = received(g)
            for i, a in enumerate(args):  # torch's zeros for a tensor input that needs no gradient (its dtype)
                if isinstance(a, Tensor) and not a.requires_grad:
                    grad_input[i] = zeros(a.shape, dtype=a.dtype)
            run_hooks()
            reached[0] = False
            return [passed(grad_input[i], graph) for i in needs]
        args = _put(args, needs, gate([args[i] for i in needs], at_inputs))
        out = self._forward_and_hooks(args, kwargs, called)
        if not isinstance(out, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                          f"but received {type(out)}", stacklevel=3)
        outs = out if isinstance(out, tuple) else (out,)
        made = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]

        def at_outputs(grads, graph):
            reached[0] = True
            grad_output[:] = [None] * len(outs)
            for i, g in zip(made, grads):
                grad_output[i] = received(g)
            for hook in self._hooks("_backward_pre_hooks"):
                changed = hook(self, tuple(grad_output))
                if changed is not None:
                    check(len(changed) == len(grad_output), lambda: f"Backward pre hook returned an invalid number "
                                                                    f"of grad_output, got {len(changed)}, but expected "
                                                                    f"{len(grad_output)}")
                    grad_output[:] = changed
            if not needs:  # torch's warning and call: no input needs a gradient
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients.", stacklevel=2)
                run_hooks()
            return [passed(grad_output[i], graph) for i in made]
        outs = _put(outs, made, gate([outs[i] for i in made], at_outputs))
        return outs if isinstance(out, tuple) else outs[0]

    def _add_hook(self, attribute, hook, prepend=False):
        self._hooked = True
        return add_hook(self, attribute, hook, prepend)

    def register_full_backward_hook(self, hook):
        """hook(module, grad_input, grad_output) once the gradients of the module's positional tensor
        inputs are computed, as torch's: tuples with None for non-tensors and tensors that need no
        gradient; a returned tuple replaces grad_input. Returns a handle whose remove() takes it away.
        Difference: where a call has several tensor inputs (outputs) that need gradients and the
        backward does not reach the first, its gradient shows as zeros, not None (tensor.gate)."""
        return self._add_hook("_backward_hooks", hook)

    def register_backward_hook(self, hook):
        """torch's legacy backward hook (deprecated there for register_full_backward_hook):
        hook(module, grad_input, grad_output) at the backward of the op that made the module's output
        (its first tensor), grad_input that op's input gradients (None where an input needs none),
        grad_output the output's; a returned tuple replaces grad_input. It describes the module's
        inputs only where its forward is one op (ReLU, a convolution: (input, weight, bias)), as
        torch's. Difference: grad_input follows tnet's op, whose inputs may differ from torch's node's
        (Linear's is one op of (input, weight, bias), torch's addmm of (bias, input, weight.t()))."""
        return self._add_hook("_legacy_backward_hooks", hook)

    def register_full_backward_pre_hook(self, hook):
        """hook(module, grad_output) once the gradients of the module's outputs are computed, before
        they go on into the module, as torch's; a returned tuple replaces grad_output."""
        return self._add_hook("_backward_pre_hooks", hook)

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) before each forward; a returned value replaces the arguments (a tuple,
        or one value), as torch's. with_kwargs: hook(module, args, kwargs), returning None or the pair
        (args, kwargs) that replaces them. prepend: before the hooks already there. Returns a handle
        whose remove() takes it away."""
        return self._add_forward_hook("_forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) after each forward; a returned value replaces the output, as
        torch's; with_kwargs: hook(module, args, kwargs, output). prepend: before the hooks already
        there. always_call: also called, with output None, where the call raised before the hook ran.
        Returns a handle with remove()."""
        return self._add_forward_hook("_forward_hooks", hook, prepend, with_kwargs, always_call)

    def _add_forward_hook(self, attribute, hook, prepend, with_kwargs, always_call=False):
        return self._add_hook(attribute, _ForwardHook(hook, with_kwargs, always_call) if with_kwargs or always_call
                              else hook, prepend)

    def get_submodule(self, target):
        """The submodule at a dotted path ("layer1.0.conv1"; "" is self), as torch's."""
        module = self
        for name in target.split(".") if target else ():
            if not isinstance(vars(module).get(name), Module):
                raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
            module = getattr(module, name)
        return module

    def set_submodule(self, target, module, strict=False):
        """Put module at a dotted path ("layer1.0.conv1"), as torch's: the parent must exist
        (AttributeError), an existing attribute there must be a Module (AttributeError), and with
        strict it must exist; ValueError for an empty target or a module that is no Module."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target):
        """The parameter at a dotted path ("layer1.0.conv1.weight"), as torch's: AttributeError where
        the path or the name is missing or names no Parameter."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        if not isinstance(getattr(module, name), Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return getattr(module, name)

    def get_buffer(self, target):
        """The buffer at a dotted path ("bn1.running_mean"), as torch's: AttributeError where the path
        or the name is missing or names no buffer."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        if name not in vars(module).get("_buffer_names", {}):
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(module, name)

    def _check_new_name(self, kind, name, registered):
        """torch's checks of a buffer's or parameter's name: a str (TypeError), without "." and not
        empty, and no other attribute's unless it is registered as this kind already (KeyError)."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and not registered:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor of the module's state that is no parameter (BatchNorm's running mean):
        an attribute, in buffers() and, if persistent, in the state_dict. None is allowed
        (and skipped by both)."""
        self._check_new_name("buffer", name, name in vars(self).get("_buffer_names", ()))
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
        self._check_new_name("parameter", name, isinstance(vars(self).get(name, ""), (Parameter, type(None))))
        if not isinstance(param, (Parameter, type(None))):
            raise TypeError(f"register_parameter: cannot assign a {type(param).__name__} to parameter {name!r} "
                            "(nn.Parameter or None required)")
        setattr(self, name, param)
        if param is None:
            self._mark_none(name, Parameter)

    def add_module(self, name, module):
        """setattr(self, name, module) with torch's checks: module a Module or None, name a
        non-empty str without "." that is no other attribute's."""
        if not isinstance(module, (Module, type(None))):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and not isinstance(vars(self).get(name), Module):
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        setattr(self, name, module)
        if module is None:
            self._mark_none(name, Module)

    register_module = add_module

    def _submodules(self):
        return [(name, value) for name, value in vars(self).items() if isinstance(value, Module)]

    def _set_submodules(self, pairs):
        """Replace the submodules by (name, module) pairs, in their order (containers insert)."""
        for name, _ in self._submodules():
            delattr(self, name)
        for name, module in pairs:
            setattr(self, name, module)

    # torch's registries, which scripts edit for surgery (`model._modules[name] = nn.Identity()`): live
    # views of the attributes, which hold tnet's members
    _modules = property(lambda self: _Members(self, Module, setattr))
    _parameters = property(lambda self: _Members(self, Parameter, setattr))
    _buffers = property(lambda self: _Members(self, None, Module.register_buffer))
    _non_persistent_buffers_set = property(lambda self: _NonPersistent(self))

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
                p.grad.memory.zero_()

    def requires_grad_(self, requires_grad=True):
        """Whether autograd computes the parameters' gradients (False freezes them)."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def apply(self, fn):
        """fn(module) for every submodule (children first, depth first), then for self; returns
        self, as torch's (a script's weight init: model.apply(init_weights))."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse=True):
        """torch's Module._apply (what libraries build their own .to on): fn(t) of each parameter, written into it
        (p.data = fn(p): the Parameter object stays, as torch's default), of its .grad likewise, and of each buffer,
        which fn's result replaces; the children's first where recurse. Returns self."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for _, p in self._own_parameters():
                p.data = fn(p)
                if p.grad is not None:
                    p.grad.data = fn(p.grad)
            for name, buffer in self._own_buffers():
                setattr(self, name, fn(buffer))
        return self

    def to(self, *args, **kwargs):
        """torch's Module.to(device, dtype, non_blocking, memory_format) (or to(tensor)), as far
        as tnet's one device and fp32 master parameters allow:
        - device: tnet's device type is a no-op; "meta" too (tnet has no meta tensors: the module
          keeps its values, where torch's drops them; the model-ensembling tutorial sends its
          stateless base model there before functional_call feeds it); another raises;
        - dtype: the parameters stay float32 masters; float16 or bfloat16 runs every forward of
          this module tree under tnet.autocast(dtype=...) (unless an autocast block is already
          active, which wins as in torch): 16-bit outputs as torch's half model gives, while the
          optimizer updates fp32 weights; float32 back to full precision; float64 raises (tnet
          has no float64 kernels);
        - memory_format is accepted and ignored: tnet picks the layouts (channels-last
          convolutions). Returns self."""
        if args and isinstance(args[0], Tensor):
            args = (args[0].memory, *args[1:])
        if isinstance(kwargs.get("tensor"), Tensor):
            kwargs["tensor"] = kwargs["tensor"].memory
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        check_factory_device(f"{type(self).__name__}.to", device)
        if dtype is not None:
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")
            if dtype not in (torch.float32,) + amp.LOW:
                raise TypeError(f"{type(self).__name__}.to: tnet computes in float32, float16 or bfloat16 "
                                f"(parameters are fp32 masters), got {dtype}")
            for module in self.modules():
                module._compute_dtype = None if dtype == torch.float32 else dtype
        return self

    def to_empty(self, *, device, recurse=True):
        """torch's: parameters and buffers moved to device without copying their values (meant for a
        model built on the meta device, whose reset_parameters or checkpoint then gives them values). tnet has
        one device and no meta tensors, so on tnet's device or "meta" the tensors stay as they are (their
        values count as uninitialised); another device raises ValueError. Returns self."""
        check_factory_device(f"{type(self).__name__}.to_empty",
                            torch.device(device) if isinstance(device, int) else device)
        return self

    def compile(self, *args, **kwargs):
        """torch's in-place Module.compile(...) with torch.compile's arguments: nothing to do, tnet's
        kernels are compiled by Triton already (see tnet.compile). Returns None, as torch's."""
        from .. import compile
        compile(self, *args, **kwargs)

    def share_memory(self):
        """torch's Module.share_memory, which scripts call on a model that worker processes share
        (A3C, Hogwild): each parameter's and buffer's share_memory_() (their memory, as torch's:
        tnet.multiprocessing is torch's process management only). Returns self."""
        for t in [*self.parameters(), *self.buffers()]:
            t.share_memory_()
        return self

    def cuda(self, device=None):
        return self.to("cuda" if device is None else torch.device("cuda", device) if isinstance(device, int) else device)

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return self.to(torch.float32)

    def type(self, dst_type):
        """torch's Module.type(dst_type): to(the dtype of dst_type), a dtype, a typed constructor
        (torch.FloatTensor, torch.cuda.FloatTensor) or its name, within to's rules (fp32 master
        parameters; float16 or bfloat16 compute; no float64 or integer parameters)."""
        return self.to(F.type_dtype(dst_type))

    def half(self):
        """Float16 compute with fp32 master parameters (see to)."""
        return self.to(torch.float16)

    def bfloat16(self):
        """Bfloat16 compute with fp32 master parameters (see to)."""
        return self.to(torch.bfloat16)

    def double(self):
        """Raises: tnet has no float64 kernels (see to)."""
        return self.to(torch.float64)

    def train(self, mode=True):
        """Training mode (or eval mode, mode=False) for this module and, through each child's own
        train(mode), every submodule: as torch's, so a child that overrides train (loralib's
        Linear merging its weights in eval mode) hears of it."""
        if not isinstance(mode, bool):
            raise ValueError("train: training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    _version = 1  # torch's: a class raises it when its keys change; state_dict()._metadata records it

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers, named after the layers ("conv1.weight",
        "bn1.running_mean", "bn1.num_batches_tracked"), as torch's: tensors on the module's own
        memory, detached (keep_vars: the parameters themselves), so later training changes them
        and an in-place write to one (an EMA's v.copy_) changes the module. Take a copy
        (copy.deepcopy, or {k: v.clone()}) to keep a snapshot. Its `_metadata` holds each
        module's `_version` by its name, as torch's (load_state_dict hands it back). Each module's
        own entries come from its _save_to_state_dict and its children's from their state_dict, so a
        class may override either, as torch's; the hooks of register_state_dict_pre_hook/_post_hook run
        at each module, before its own entries and after its children's, as torch's."""
        if args:  # torch's deprecated positional (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (*args, *(destination, prefix, keep_vars)[len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in hooks_of(self, "_state_dict_pre_hooks"):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, child in self._submodules():
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in hooks_of(self, "_state_dict_post_hooks"):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None and not getattr(hook, "may_return", False):
                raise RuntimeError("state_dict post-hook must return None")
            if result is not None:  # _register_state_dict_hook's: replaces what this module returns
                destination = result
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """This module's own entries, not its children's, into destination, as torch's: its parameters and
        persistent buffers (detached unless keep_vars), and "<prefix>_extra_state" where its class defines
        get_extra_state. Quantisation-aware and similar layers override it to add entries."""
        for name, t in self._own_parameters() + self._own_buffers(persistent_only=True):
            destination[prefix + name] = t if keep_vars else t.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def _get_name(self):
        """The class's name, as torch's (custom __repr__s call it)."""
        return type(self).__name__

    def get_extra_state(self):
        """torch's: the state a class adds to its state_dict beside its tensors (any value), under
        "_extra_state"; a class that defines it defines set_extra_state too."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        """torch's: takes back what get_extra_state gave, from load_state_dict."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) before state_dict saves this module's entries, as torch's."""
        return add_hook(self, "_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) once state_dict saved this module and its
        children; it edits state_dict in place and returns None (else RuntimeError), as torch's."""
        return add_hook(self, "_state_dict_post_hooks", hook)

    def _register_state_dict_hook(self, hook):
        """torch's private form, which older code calls: a post-hook that may also return a new
        state dict, which replaces what its module's state_dict returns (the caller's, at the root)."""
        def legacy(*args):
            return hook(*args)
        legacy.may_return = True
        return add_hook(self, "_state_dict_post_hooks", legacy)

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) before this module reads its keys (in Module._load_from_state_dict), as torch's:
        it may rename or add keys of state_dict, which its children then see."""
        return add_hook(self, "_load_state_dict_pre_hooks", hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """torch's private form, which older code calls: hook(state_dict, prefix, local_metadata,
        strict, missing_keys, unexpected_keys, error_msgs), the module first if with_module."""
        return self.register_load_state_dict_pre_hook(hook if with_module else lambda module, *a: hook(*a))

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) once load_state_dict read this module and its children, as
        torch's: incompatible_keys' missing_keys and unexpected_keys are the lists so far, which the
        hook may edit (strict's check comes after); it returns None."""
        return add_hook(self, "_load_state_dict_post_hooks", hook)

    def _state(self):
        """The tnet tensors behind state_dict(), by the same names."""
        members = lambda module: module._own_parameters() + module._own_buffers(persistent_only=True)
        return OrderedDict(self._named_members(members, "", True, False))

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy the values of state_dict (numpy arrays, tnet or torch tensors, by name as in
        state_dict()) into the parameters and persistent buffers, keeping their dtype and
        memory layout. Shapes must match; with strict, the names too. Nothing is copied when
        a check fails. Returns (missing_keys, unexpected_keys), as torch. The parameters'
        16-bit copies (tnet.amp.low_copy) are rewritten from the loaded values.
        Each module reads its own keys in _load_from_state_dict, called with torch's arguments
        from the root down, each on the keys under its prefix: a class may override it to rename
        a legacy checkpoint's keys before calling super()'s (torchvision's MLPBlock, BatchNorm
        before num_batches_tracked); local_metadata is the module's entry of state_dict._metadata
        ({} where the dict has none, with torch's "assign_to_params_buffers").
        assign=True (a model built on the meta device, then given a checkpoint): each parameter and
        buffer takes the value's memory instead (shared where it is a tnet tensor, or a torch tensor
        on tnet's device), as torch's; the Parameter objects stay, with their dtype (fp32 masters)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        missing, unexpected, errors, copies = [], [], [], []

        def load(module, local, prefix):
            local_metadata = dict({} if metadata is None else metadata.get(prefix[:-1], {}))
            local_metadata[_PENDING] = copies
            local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._submodules():  # a child held under two names loads under each
                child_prefix = prefix + name + "."
                load(child, {k: v for k, v in local.items() if k.startswith(child_prefix)}, child_prefix)
            for hook in hooks_of(module, "_load_state_dict_post_hooks"):
                if hook(module, _IncompatibleKeys(missing, unexpected)) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, dict(state_dict), "")
        names = lambda keys: ", ".join(f'"{k}"' for k in keys)
        if strict:  # torch's text, which a script may print or parse: one tab-indented line per error
            errors = [f"Missing key(s) in state_dict: {names(missing)}. "] * bool(missing) \
                + [f"Unexpected key(s) in state_dict: {names(unexpected)}. "] * bool(unexpected) + errors
        check(not errors, lambda: f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        for t, v in copies:
            _copy_loaded(t, v, assign)
        return _IncompatibleKeys(missing, unexpected)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """torch's per-module step of load_state_dict: this module's own parameters and persistent
        buffers take state_dict[prefix + name]; absent ones go to missing_keys, a shape mismatch
        to error_msgs, and (strict) keys under prefix that name neither one of them nor a child
        to unexpected_keys. Inside load_state_dict the copies wait until every module passed."""
        for hook in hooks_of(self, "_load_state_dict_pre_hooks"):
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        own = self._own_parameters() + self._own_buffers(persistent_only=True)
        pending = local_metadata.get(_PENDING)
        extra = type(self).set_extra_state is not Module.set_extra_state
        if extra and prefix + _EXTRA_STATE in state_dict:
            self.set_extra_state(state_dict[prefix + _EXTRA_STATE])
        elif extra and strict:
            missing_keys.append(prefix + _EXTRA_STATE)
        for name, t in own:
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            v = _loadable(key, state_dict[key], t)
            if tuple(v.shape) != t.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {torch.Size(v.shape)} from "
                                  f"checkpoint, the shape in current model is {t.shape}.")
            elif pending is None:
                _copy_loaded(t, v, local_metadata.get("assign_to_params_buffers", False))
            else:
                pending.append((t, v))
        if strict:
            known = {name for name, _ in own} | {name for name, _ in self._submodules()}
            known |= {_EXTRA_STATE} if extra else set()
            unexpected_keys.extend(k for k in state_dict if k.startswith(prefix) and
                                   k[len(prefix):].split(".", 1)[0] not in known)

    def __repr__(self):
        """torch's: a one-line extra_repr inside the parentheses where there are no children, else every
        extra_repr line and each child "(name): repr" on lines of their own, indented by two; every entry of
        _modules, as torch's (a module registered twice shows twice, a None as None)."""
        extra = self.extra_repr()
        extra = extra.split("\n") if extra else []
        children = [f"({k}): " + repr(v).replace("\n", "\n  ") for k, v in self._modules.items()]
        if len(extra) == 1 and not children:
            return f"{type(self).__name__}({extra[0]})"
        lines = extra + children
        return f"{type(self).__name__}(" + ("\n  " + "\n  ".join(lines) + "\n" if lines else "") + ")"

    def extra_repr(self):
        return ""


def _typename(value):
    """torch.typename's name of a value in Module.__setattr__'s errors ('torch.FloatTensor', 'int')."""
    return value.type() if isinstance(value, Tensor) else torch.typename(value)


class _MethodFirst:
    """A public method of Module that a member of the same name does not hide, as torch's: there a module's
    submodules, parameters and buffers live in _modules, _parameters and _buffers, which attribute lookup reaches
    only after the class's own attributes, while tnet keeps them in the instance's __dict__, which a plain method
    would lose to. N-BEATS builds `self.parameters = []`, then `self.parameters = nn.ParameterList(self.parameters)`,
    and its optimizer still calls net.parameters(). Any other value of the name (that list, a patched
    `m.forward = f`) hides the method, as an instance attribute does in torch; a parameter or buffer may not take
    the name (torch's KeyError)."""

    def __init__(self, function):
        self.function, self.name = function, function.__name__
        self.__doc__ = function.__doc__

    def __get__(self, module, owner=None):
        if module is None:
            return self.function
        value = module.__dict__.get(self.name, self)
        if value is self or isinstance(value, Module):
            return self.function.__get__(module, owner)
        return value

    def __set__(self, module, value):
        if isinstance(value, Parameter) or isinstance(value, Tensor) and vars(value).get("_is_buffer"):
            raise KeyError(f"attribute '{self.name}' already exists")
        module.__dict__[self.name] = value

    def __delete__(self, module):
        if self.name not in module.__dict__:
            raise AttributeError(self.name)
        del module.__dict__[self.name]


for _name, _method in list(vars(Module).items()):
    if callable(_method) and not _name.startswith("_") and not isinstance(_method, (staticmethod, classmethod, type)):
        setattr(Module, _name, _MethodFirst(_method))


def _add_global_hook(attribute, hook):
    """hook kept in _GLOBAL_HOOKS; while any hook of a call is there every module's call looks for hooks
    (Module._hooked)."""
    Module._hooked = True
    handle = add_hook(_GLOBAL_HOOKS, attribute, hook)
    remove = handle.remove

    def remove_and_recheck():
        remove()
        Module._hooked = any(vars(_GLOBAL_HOOKS).get(kind) for kind in _CALL_HOOKS)
    handle.remove = remove_and_recheck
    return handle


def register_module_forward_pre_hook(hook):
    """hook(module, args) before every module's forward, before the module's own pre-hooks, as
    torch's; a returned value replaces the arguments. Returns a handle whose remove() takes it away."""
    return _add_global_hook("_forward_pre_hooks", hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """hook(module, args, output) after every module's forward, before the module's own hooks, as
    torch's; a returned value replaces the output. with_kwargs=True and always_call=True are not
    implemented (NotImplementedError), as Module.register_forward_hook takes neither."""
    if with_kwargs or always_call:
        raise NotImplementedError("register_module_forward_hook: with_kwargs and always_call are not implemented")
    return _add_global_hook("_forward_hooks", hook)


def register_module_full_backward_hook(hook):
    """hook(module, grad_input, grad_output) for every module's call, as Module.register_full_backward_hook,
    before the module's own hooks, as torch's."""
    return _add_global_hook("_backward_hooks", hook)


def register_module_backward_hook(hook):
    """torch's legacy global backward hook: Module.register_backward_hook's hook for every module's call,
    before the module's own."""
    return _add_global_hook("_legacy_backward_hooks", hook)


def register_module_parameter_registration_hook(hook):
    """hook(module, name, param) whenever a module registers a Parameter (an assignment, register_parameter),
    as torch's; a returned value is registered instead."""
    return add_hook(_GLOBAL_HOOKS, "_parameter_registration_hooks", hook)


def register_module_module_registration_hook(hook):
    """hook(module, name, submodule) whenever a module registers a submodule (an assignment, add_module), as
    torch's; a returned value is registered instead."""
    return add_hook(_GLOBAL_HOOKS, "_module_registration_hooks", hook)


def register_module_buffer_registration_hook(hook):
    """hook(module, name, buffer) whenever a module registers a buffer (register_buffer, an assignment to a
    buffer's name or of an nn.Buffer), as torch's; a returned value is registered instead."""
    return add_hook(_GLOBAL_HOOKS, "_buffer_registration_hooks", hook)


def register_module_full_backward_pre_hook(hook):
    """hook(module, grad_output) for every module's call, as Module.register_full_backward_pre_hook,
    before the module's own hooks, as torch's."""
    return _add_global_hook("_backward_pre_hooks", hook)


def factory_args(name, device, dtype):
    """torch's device= and dtype= of a layer: tnet's device ("meta" too: check_factory_device) and float32 only
    (parameters are fp32 masters; tnet.autocast gives 16-bit compute)."""
    check_factory_device(name, device)
    if dtype is not None and dtype != torch.float32:
        advice = ("use tnet.autocast for 16-bit compute" if dtype in (torch.float16, torch.bfloat16)
                  else f"tnet has no {dtype} kernels for it")
        raise TypeError(f"{name}: parameters are float32 ({advice}), got dtype={dtype}")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns, as torch's: the keys missing and unexpected, shown as
    `<All keys matched successfully>` where both are empty (what a notebook cell prints)."""
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


_EXTRA_STATE = "_extra_state"  # torch's key of get_extra_state's value, after the module's prefix
_PENDING = "tnet: copies pending"  # load_state_dict's list of (tensor, value), in each local_metadata


def _loadable(key, value, own):
    """A state_dict value (numpy array, tnet or torch tensor, nested list) as a torch tensor to copy into
    the tnet tensor own; TypeError where it is not an array of numbers own can take."""
    v = value.memory if isinstance(value, Tensor) else value
    try:
        v = v if isinstance(v, torch.Tensor) else torch.from_numpy(np.array(v))
    except (TypeError, ValueError) as e:
        raise TypeError(f"load_state_dict: the value for {key!r} is not an array of numbers ({e})") from None
    if v.is_complex() or v.dtype == torch.bool and own.memory.is_floating_point():
        raise TypeError(f"load_state_dict: the value for {key!r} is {v.dtype}, the model's {own.dtype}")
    return v


def _copy_loaded(t, v, assign=False):
    """t takes v's values, or with assign v's memory (in t's dtype and a dense layout, which tnet's
    kernels and optimizers read); its 16-bit copies, which layers read under autocast, follow."""
    if assign:
        t.data = dense(v.to(DEVICE, t.dtype))
        amp.drop_low_copies(t)
    else:
        t.memory.copy_(v)
        amp.refresh_low_copies(t)


def _new_size(*size):
    """size, for a layer's new parameter: torch's RuntimeError for a negative dim (numpy's is a ValueError)."""
    check(all(d >= 0 for d in size), lambda: f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    return size


def _torch_default_init(layer):
    """torch's reset_parameters of Conv2d and Linear: the weight kaiming_uniform_ with a=sqrt(5),
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn
    from layer.rng (None: tnet's init stream at the time of the call); a Caffe filler given
    at construction (weight_filler=, bias_filler=) draws instead, from the same stream."""
    rng = init_generator() if layer.rng is None else layer.rng
    weight_filler, bias_filler = layer.fillers
    if weight_filler is None:
        init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=rng)
    else:
        init.write_(layer.weight, weight_filler(layer.weight.shape, rng))
    if layer.bias is None:
        return
    if bias_filler is None:
        fan_in, _ = init.calculate_fan_in_and_fan_out(layer.weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(layer.bias, -bound, bound, generator=rng)
    else:
        init.write_(layer.bias, bias_filler(layer.bias.shape, rng))


def _check_conv_layer(in_channels, out_channels, groups, padding=0, stride=(1,), padding_mode="zeros"):
    """torch's _ConvNd.__init__ checks, in its order and with its ValueErrors' messages (an InputError is
    one): groups positive and dividing both channel counts, a padding string ('same': stride (a tuple) all 1)
    and padding_mode. Unlike torch's, a layer also checks its stride, padding and dilation values here
    (check_conv_args), where torch raises at the first forward; a kernel dim of size 0 passes, as torch's, and
    raises torch's error (an empty batch's IndexError) at the forward."""
    check(groups > 0, "groups must be a positive integer")
    check(in_channels % groups == 0, "in_channels must be divisible by groups")
    check(out_channels % groups == 0, "out_channels must be divisible by groups")
    if isinstance(padding, str):
        valid_padding_strings = {"same", "valid"}  # a set, as torch's: the message lists it in its order
        check(padding in valid_padding_strings,
              lambda: f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
        check(padding == "valid" or all(s == 1 for s in stride),
              "padding='same' is not supported for strided convolutions")
    valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
    check(padding_mode in valid_padding_modes,
          lambda: f"padding_mode must be one of {valid_padding_modes}, but got padding_mode='{padding_mode}'")


class _SizeFromWeight:
    """A layer's size attribute (in_channels, out_features, kernel_size), a plain attribute in torch that a script
    may overwrite (slimmable networks set in_channels and out_channels, then convolve a slice of the weight); until
    it is set, read from the weight, which a lazy layer shapes at its first call."""

    def __init__(self, read):
        self.read = read

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, layer, owner=None):
        if layer is None:
            return self
        return vars(layer)[self.name] if self.name in vars(layer) else self.read(layer)

    def __set__(self, layer, value):
        vars(layer)[self.name] = value


class _ConvNd(Module):
    """The base of tnet's convolutions, as torch's (isinstance checks): their default init, and
    torch's size attributes, read from the weight (a lazy layer's change at its first call)."""
    in_channels = _SizeFromWeight(lambda self: self.weight.shape[1] * self.groups)
    out_channels = _SizeFromWeight(lambda self: self.weight.shape[0])
    kernel_size = _SizeFromWeight(lambda self: tuple(self.weight.shape[2:]))
    transposed = False
    output_padding = property(lambda self: (0,) * len(self.kernel_size))  # a transposed layer holds its own

    def reset_parameters(self):
        """Draw the weight and bias anew, as at construction (torch's init or the fillers given)."""
        _torch_default_init(self)

    def extra_repr(self):
        """torch's: the sizes and stride, then the arguments that differ from their defaults."""
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        for name, default in (("padding", 0), ("dilation", 1), ("output_padding", 0)):
            value = getattr(self, name, None)
            if value is not None and value != (default,) * len(self.kernel_size):
                text += f", {name}={value}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if getattr(self, "padding_mode", "zeros") != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv2d(_ConvNd):
    """torch.nn.Conv2d's arguments in torch's order (padding also 'same' or 'valid'), and
    torch's default init (reset_parameters: kaiming_uniform_ with a=sqrt(5) for the weight,
    U(+-1/sqrt(fan_in)) for the bias), drawn by numpy from `rng`, by default tnet's init
    stream (tnet.factory.init_generator, seeded by tnet.manual_seed; a seed gives the same
    weights on CPU and GPU, not torch's numbers). Caffe's ways as keyword-only extras:
    weight_filler and bias_filler (Caffe's fillers, nn.gaussian(std) or nn.constant(value),
    instead of torch's init), and bias_lr_mult, the bias learning at that many times the lr
    (Caffe's lr_mult; 1 by default). The weight is [out_channels, in_channels/groups, kh, kw],
    as torch's; padding_mode 'reflect', 'replicate' or 'circular' pads with F.pad first, as torch's."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, *, weight_filler=None,
                 bias_filler=None, rng=None, bias_lr_mult=1.0):
        super().__init__()
        # numpy's integers and one-element integer tensors pass for ints, as torch's parser takes them
        in_channels, out_channels, groups = (as_int(plain_ints(v)) for v in (in_channels, out_channels, groups))
        for arg, v in (("in_channels", in_channels), ("out_channels", out_channels)):
            if not isinstance(v, int) or isinstance(v, bool):  # torch's TypeError (of its `%` on the value)
                raise InputTypeError(f"Conv2d: {arg} must be a positive int, got {v!r}")
            check(v > 0, lambda: f"Conv2d: {arg} must be a positive int, got {v!r}")
        kh, kw = pair(kernel_size, "Conv2d: kernel_size")
        _check_conv_layer(in_channels, out_channels, groups, padding, pair(stride, "Conv2d: stride", 1),
                          padding_mode)
        check_conv_args((kh, kw), stride, padding, dilation, groups, in_channels, out_channels)
        factory_args(type(self).__name__, device, dtype)
        # torch's attributes are tuples (EfficientNet's same-padding convs take len(self.stride))
        self.stride, self.dilation, self.groups = pair(stride, "stride"), pair(dilation, "dilation"), groups
        self.padding = padding if isinstance(padding, str) else pair(padding, "padding")
        self.padding_mode = padding_mode
        if padding_mode != "zeros":  # F.pad's (left, right, top, bottom), then a convolution without padding
            if padding in ("valid", "same"):  # 'same': torch's split, the odd one at the end
                (dh, dw), sides = pair(dilation, "Conv2d: dilation", 1), []
                for total in (dw * (kw - 1), dh * (kh - 1)):
                    sides += [0, 0] if padding == "valid" else [total // 2, total - total // 2]
            else:
                ph, pw = pair(padding, "Conv2d: padding")
                sides = [pw, pw, ph, ph]
            self._mode_pads = tuple(sides)
        self.rng, self.fillers = rng, (weight_filler, bias_filler)
        # channels-last: the kernels read a tap's channels, or (i, j, c) for few channels, contiguously
        self.weight = Parameter(Tensor(torch.empty((out_channels, in_channels // groups, kh, kw), device=DEVICE,
                                                   memory_format=torch.channels_last)))
        self.register_parameter("bias", Parameter(Tensor(torch.empty(out_channels, device=DEVICE)),
                                                  lr_mult=bias_lr_mult) if bias else None)
        self.reset_parameters()

    def forward(self, input, relu=False, pool=None):
        """relu=True fuses a ReLU after the convolution; pool, a MaxPool2d or AvgPool2d, also
        fuses that pooling after the ReLU (F.conv2d_relu_pool2d)."""
        if pool is None:
            return self._conv_forward(input, self.weight, self.bias, relu=relu)
        check(relu, "Conv2d: a fused pooling needs relu=True")
        input, padding = self._pad(input)
        return F.conv2d_relu_pool2d(input, self.weight, self.bias, self.stride, padding, pool.mode,
                                    pool.kernel_size, pool.stride, pool.padding, pool.ceil_mode,
                                    dilation=self.dilation, groups=self.groups,
                                    count_include_pad=getattr(pool, "count_include_pad", True),
                                    divisor_override=getattr(pool, "divisor_override", None))

    def _conv_forward(self, input, weight, bias, relu=False):
        """torch's: input convolved with weight and bias at this layer's stride, padding (padding_mode's
        F.pad first), dilation and groups, which a subclass that convolves another weight calls
        (weight standardisation, a quantised weight); relu=True fuses a ReLU, as forward's."""
        input, padding = self._pad(input)
        return F.conv2d(input, weight, bias, self.stride, padding, self.dilation, self.groups, relu=relu)

    def _pad(self, x):
        """(x, the padding left to the convolution): padding_mode's F.pad first where it is not 'zeros'."""
        if self.padding_mode != "zeros":
            return F.pad(x, self._mode_pads, mode=self.padding_mode), 0
        return x, self.padding


class Linear(Module):
    """torch.nn.Linear's arguments in torch's order and torch's default init, drawn from rng
    (tnet's init stream by default), with Caffe's weight_filler, bias_filler and bias_lr_mult
    keyword-only, as in Conv2d."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *,
                 weight_filler=None, bias_filler=None, rng=None, bias_lr_mult=1.0):
        super().__init__()
        in_features, out_features = (as_int(plain_ints(v)) for v in (in_features, out_features))  # as Conv2d's
        for arg, v in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(v, int) or isinstance(v, bool):  # torch's TypeError (its empty() refuses a float size)
                raise InputTypeError(f"Linear: {arg} must be an int, got {v!r}")
            check(v >= 0, lambda: f"Linear: {arg} must be a non-negative int, got {v!r}")
        factory_args(type(self).__name__, device, dtype)
        self.rng, self.fillers = rng, (weight_filler, bias_filler)
        self.weight = Parameter(Tensor(torch.empty((out_features, in_features), device=DEVICE)))
        self.register_parameter("bias", Parameter(Tensor(torch.empty(out_features, device=DEVICE)),
                                                  lr_mult=bias_lr_mult) if bias else None)
        self.reset_parameters()

    def reset_parameters(self):
        """Draw the weight and bias anew, as at construction (torch's init or the fillers given)."""
        _torch_default_init(self)

    in_features = _SizeFromWeight(lambda self: self.weight.shape[1])  # torch's attributes, read from the weight
    out_features = _SizeFromWeight(lambda self: self.weight.shape[0])

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class _Lazy:
    """torch's lazy layers: the input size comes from the first call; then the weight takes its
    full shape, the parameters are drawn as the full layer's, and the module becomes that layer
    (cls_to_become), as torch's. The Parameter objects exist from construction (a placeholder
    shape) and are reshaped in place, so an optimizer built before the first call keeps them."""
    # the input size before the first call: 0, as torch's (its repr: LazyLinear(in_features=0, ...)); the full
    # layer's class (cls_to_become) reads it from the weight
    in_features = in_channels = property(lambda self: 0)

    def _uninitialized(self, *names):
        """Mark the named parameters and buffers as torch's placeholders (isinstance checks)."""
        for name in names:
            t = getattr(self, name)
            if t is not None:
                t.__class__ = UninitializedParameter if isinstance(t, Parameter) else UninitializedBuffer

    def has_uninitialized_params(self):
        return any(isinstance(t, (UninitializedParameter, UninitializedBuffer)) for t in vars(self).values())

    def _materialize(self, shape, **layout):
        self.weight.materialize(shape, **layout)
        self._become()

    def _become(self):
        """The full layer: reset_parameters() draws the parameters, the class is cls_to_become."""
        self.reset_parameters()
        self.__class__ = self.cls_to_become


class LazyLinear(_Lazy, Linear):
    """nn.LazyLinear: a Linear whose in_features is the first input's last dim."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(1, out_features, bias, device, dtype)
        self._uninitialized("weight")

    def forward(self, input):
        self._materialize((self.weight.shape[0], input.shape[-1]))
        return self.forward(input)


class LazyConv2d(_Lazy, Conv2d):
    """nn.LazyConv2d: a Conv2d whose in_channels is the first input's channel count."""
    cls_to_become = Conv2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(groups, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         device, dtype)
        self._uninitialized("weight")

    def forward(self, input, relu=False, pool=None):
        out, _, kh, kw = self.weight.shape
        check(input.ndim in (3, 4), lambda: f"LazyConv2d: expected a 3-D or 4-D input, got {input.ndim}-D")
        channels = input.shape[-3]
        check_conv_args((kh, kw), self.stride, self.padding, self.dilation, self.groups, channels, out)
        self._materialize((out, channels // self.groups, kh, kw), memory_format=torch.channels_last)
        return self.forward(input, relu, pool)


class Conv1d(_ConvNd):
    """torch.nn.Conv1d's arguments in torch's order and torch's default init (drawn from rng, tnet's
    init stream by default): F.conv1d, a conv2d over [N, C, 1, L]; padding_mode 'reflect', 'replicate'
    or 'circular' pads with F.pad first, as torch's (a WaveNet's or HiFi-GAN's reflect-padded convs)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, rng=None):
        super().__init__()
        k = kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size
        _check_conv_layer(in_channels, out_channels, groups, padding, (single(stride, "stride", 1),), padding_mode)
        check_conv_args((1, k), 1, 0, 1, groups, in_channels, out_channels)
        factory_args(type(self).__name__, device, dtype)
        self.stride, self.dilation = (single(stride, "stride", 1),), (single(dilation, "dilation", 1),)  # torch's tuples
        self.padding, self.groups = padding if isinstance(padding, str) else (single(padding, "padding"),), groups
        self.padding_mode = padding_mode
        if padding_mode != "zeros":  # F.pad's (left, right), then a convolution without padding
            total = self.dilation[0] * (k - 1)  # 'same': torch's split, the odd one at the end
            self._mode_pads = ((0, 0) if padding == "valid" else (total // 2, total - total // 2) if padding == "same"
                               else self.padding * 2)
        self.rng, self.fillers = rng, (None, None)
        self.weight = Parameter(Tensor(torch.empty((out_channels, in_channels // groups, k), device=DEVICE)))
        self.register_parameter("bias", Parameter(Tensor(torch.empty(out_channels, device=DEVICE))) if bias else None)
        self.reset_parameters()

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input, weight, bias):
        """torch's: input convolved with weight and bias at this layer's settings (Conv2d's)."""
        if self.padding_mode != "zeros":
            return F.conv1d(F.pad(input, self._mode_pads, mode=self.padding_mode), weight, bias, self.stride, 0,
                            self.dilation, self.groups)
        return F.conv1d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    """torch.nn.ConvTranspose1d's, 2d's and 3d's arguments in torch's order and torch's default init (drawn
    from rng, tnet's init stream by default); the weight is [in_channels, out_channels/groups, *kernel],
    as torch's (channels-last in 2-D); padding_mode 'zeros' only."""
    in_channels = _SizeFromWeight(lambda self: self.weight.shape[0])
    out_channels = _SizeFromWeight(lambda self: self.weight.shape[1] * self.groups)
    dims = 2
    transposed, output_padding = True, None  # output_padding: set by __init__

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None, *, rng=None):
        super().__init__()
        name = type(self).__name__
        if padding_mode != "zeros":  # torch's first check
            raise ValueError(f'Only "zeros" padding mode is supported for {name}')
        kernel = ntuple(kernel_size, self.dims, f"{name}: kernel_size")
        _check_conv_layer(in_channels, out_channels, groups)  # torch's checks of padding: at the forward
        factory_args(name, device, dtype)
        tup = lambda v, name: ntuple(v, self.dims, name)  # torch's tuples
        self.stride, self.padding = tup(stride, "stride"), tup(padding, "padding")
        self.output_padding, self.dilation = tup(output_padding, "output_padding"), tup(dilation, "dilation")
        self.groups, self.padding_mode = groups, padding_mode
        self.rng, self.fillers = rng, (None, None)
        layout = dict(memory_format=torch.channels_last) if self.dims == 2 else {}
        self.weight = Parameter(Tensor(torch.empty((in_channels, out_channels // groups, *kernel), device=DEVICE,
                                                   **layout)))
        self.register_parameter("bias", Parameter(Tensor(torch.empty(out_channels, device=DEVICE))) if bias else None)
        self.reset_parameters()

    def forward(self, input, output_size=None):
        conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[self.dims]
        return conv(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                    self.groups, self.dilation)

    def _output_padding(self, x, output_size):
        """torch's: the output_padding that makes the output output_size (spatial sizes, or the whole
        shape), which must lie within stride - 1 of the smallest size the convolution gives."""
        if output_size is None:
            return self.output_padding
        n = self.dims
        spatial = tuple(output_size)[-n:] if len(output_size) == x.ndim else tuple(output_size)
        if len(spatial) != n:
            raise ValueError(f"ConvTranspose{n}D: for {x.ndim}D input, output_size must have {n} or {x.ndim} "
                             f"elements (got {len(output_size)})")
        norm = lambda v, name: ntuple(v, n, name)
        stride, padding = norm(self.stride, "stride"), norm(self.padding, "padding")
        dilation, kernel = norm(self.dilation, "dilation"), tuple(self.weight.shape[2:])
        smallest = [(x.shape[x.ndim - n + d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel[d] - 1) + 1
                    for d in range(n)]
        largest = [size + s - 1 for size, s in zip(smallest, stride)]
        if any(not lo <= int(size) <= hi for size, lo, hi in zip(spatial, smallest, largest)):
            raise ValueError(f"requested an output size of {list(spatial)}, but valid sizes range from {smallest} "
                             f"to {largest} (for an input of {tuple(x.shape[x.ndim - n:])})")
        padding_out = tuple(int(size) - lo for size, lo in zip(spatial, smallest))
        return padding_out[0] if n == 1 else padding_out



class ConvTranspose2d(_ConvTransposeNd):
    """F.conv_transpose2d of [N, Cin, H, W] (see _ConvTransposeNd)."""


class ConvTranspose1d(_ConvTransposeNd):
    """F.conv_transpose1d of [N, Cin, L] or [Cin, L] (see _ConvTransposeNd)."""
    dims = 1


class ConvTranspose3d(_ConvTransposeNd):
    """F.conv_transpose3d of [N, Cin, D, H, W] or [Cin, D, H, W] (see _ConvTransposeNd)."""
    dims = 3


class Conv3d(_ConvNd):
    """torch.nn.Conv3d's arguments in torch's order and torch's default init (drawn from rng, tnet's init
    stream by default): F.conv3d, kd conv2d's over depth slices (see there); padding_mode 'reflect',
    'replicate' or 'circular' pads with F.pad first, as torch's. The weight is [out_channels,
    in_channels/groups, kd, kh, kw], as torch's."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, rng=None):
        super().__init__()
        kernel = triple(kernel_size, "Conv3d: kernel_size", 0, True)
        _check_conv_layer(in_channels, out_channels, groups, padding, triple(stride, "stride", 1, True), padding_mode)
        check_conv_args(kernel[1:], 1, 0, 1, groups, in_channels, out_channels)
        factory_args(type(self).__name__, device, dtype)
        self.stride, self.dilation = triple(stride, "stride", 1, True), triple(dilation, "dilation", 1, True)
        self.padding = padding if isinstance(padding, str) else triple(padding, "padding", 0, True)
        self.groups, self.padding_mode = groups, padding_mode
        self.rng, self.fillers = rng, (None, None)
        self.weight = Parameter(Tensor(torch.empty((out_channels, in_channels // groups, *kernel), device=DEVICE)))
        self.register_parameter("bias", Parameter(Tensor(torch.empty(out_channels, device=DEVICE))) if bias else None)
        self.reset_parameters()

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input, weight, bias):
        """torch's: input convolved with weight and bias at this layer's settings."""
        padding = self.padding
        if self.padding_mode != "zeros":  # F.pad's (W, H, D) pairs, 'same' split as torch's (the odd one at the end)
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pairs = ([(0, 0)] * 3 if padding == "valid" else [(t // 2, t - t // 2) for t in totals]
                     if padding == "same" else [(p, p) for p in padding])
            input, padding = F.pad(input, [v for pair_ in reversed(pairs) for v in pair_], mode=self.padding_mode), 0
        return F.conv3d(input, weight, bias, self.stride, padding, self.dilation, self.groups)


class LazyConv3d(_Lazy, Conv3d):
    """nn.LazyConv3d: a Conv3d whose in_channels is the first input's channel count."""
    cls_to_become = Conv3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(groups, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         device, dtype)
        self._uninitialized("weight")

    def forward(self, input):
        out, _, *kernel = self.weight.shape
        check(input.ndim in (4, 5), lambda: f"LazyConv3d: expected a 4-D or 5-D input, got {input.ndim}-D")
        channels = input.shape[-4]
        check_conv_args(kernel[1:], 1, 0, 1, self.groups, channels, out)
        self._materialize((out, channels // self.groups, *kernel))
        return self.forward(input)


class LazyConv1d(_Lazy, Conv1d):
    """nn.LazyConv1d: a Conv1d whose in_channels is the first input's channel count."""
    cls_to_become = Conv1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(groups, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         device, dtype)
        self._uninitialized("weight")

    def forward(self, input):
        out, _, k = self.weight.shape
        check(input.ndim in (2, 3), lambda: f"LazyConv1d: expected a 2-D or 3-D input, got {input.ndim}-D")
        channels = input.shape[-2]
        check_conv_args((1, k), 1, 0, 1, self.groups, channels, out)
        self._materialize((out, channels // self.groups, k))
        return self.forward(input)


class _LazyConvTranspose(_Lazy):
    """nn.LazyConvTranspose1d and 2d: in_channels from the first input's channel count."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(groups, out_channels, kernel_size, stride, padding, output_padding, groups, bias, dilation,
                         padding_mode, device, dtype)
        self._uninitialized("weight")

    def forward(self, input, output_size=None):
        _, per_group, *kernel = self.weight.shape
        check(input.ndim in (self.dims + 1, self.dims + 2),
              lambda: f"{type(self).__name__}: expected a {self.dims + 1}-D or {self.dims + 2}-D input, "
                      f"got {input.ndim}-D")
        channels = input.shape[-self.dims - 1]
        check(channels % self.groups == 0,
              lambda: f"{type(self).__name__}: groups={self.groups} must divide in_channels ({channels})")
        layout = dict(memory_format=torch.channels_last) if self.dims == 2 else {}
        self._materialize((channels, per_group, *kernel), **layout)
        return self.forward(input, output_size)


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    cls_to_become = ConvTranspose3d


def reset_affine(module):
    """A normalization's affine parameters anew: the weight ones, the bias zeros (where the module has them)."""
    for p, fill in ((module.weight, init.ones_), (getattr(module, "bias", None), init.zeros_)):
        if p is not None:
            fill(p)


class LayerNorm(Module):
    """F.layer_norm over the last dims (normalized_shape), with weight (ones) and bias (zeros) of
    that shape where elementwise_affine (bias=False: no bias), as torch's."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        normalized_shape = plain_ints(normalized_shape)
        self.normalized_shape = ((normalized_shape,) if isinstance(normalized_shape, int)
                                 else tuple(normalized_shape))
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _new_size(*self.normalized_shape)
        affine = lambda value, on: Parameter(np.full(self.normalized_shape, value)) if on else None
        self.register_parameter("weight", affine(1.0, elementwise_affine))
        self.register_parameter("bias", affine(0.0, elementwise_affine and bias))

    reset_parameters = reset_affine

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """F.rms_norm over the last dims (normalized_shape), with a weight (ones) of that shape where
    elementwise_affine, as torch's (eps None: the input dtype's machine epsilon)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        normalized_shape = plain_ints(normalized_shape)
        self.normalized_shape = ((normalized_shape,) if isinstance(normalized_shape, int)
                                 else tuple(normalized_shape))
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _new_size(*self.normalized_shape)
        self.register_parameter("weight", Parameter(np.ones(self.normalized_shape)) if elementwise_affine else None)

    reset_parameters = reset_affine

    def forward(self, x):  # torch's RMSNorm names it x
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """F.group_norm with per-channel weight (ones) and bias (zeros) where affine (bias=False: no bias), as torch's."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _new_size(num_channels)
        self.register_parameter("weight", Parameter(np.ones(num_channels)) if affine else None)
        self.register_parameter("bias", Parameter(np.zeros(num_channels)) if affine and bias else None)

    reset_parameters = reset_affine

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class Embedding(Module):
    """F.embedding's table of num_embeddings rows of embedding_dim, drawn from N(0, 1) (tnet's init
    stream) with the padding_idx row zero, as torch's; max_norm, norm_type and scale_grad_by_freq as
    F.embedding's. sparse=True gives a dense gradient (F.embedding says how)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, scale_grad_by_freq, sparse
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            if padding_idx == 0:  # torch asserts on nonzero ones only, then fails to zero row 0 of no rows
                raise IndexError("index 0 is out of bounds for dimension 0 with size 0")
            raise AssertionError("Padding_idx must be within num_embeddings")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        table = np.empty(_new_size(num_embeddings, embedding_dim)) if _weight is None else _weight
        self.weight = Parameter(table, requires_grad=not _freeze)
        if _weight is None:
            self.reset_parameters()

    def reset_parameters(self):
        """The table drawn from N(0, 1), its padding_idx row zero, as torch's."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.memory[self.padding_idx].zero_()

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding whose table is a copy of the 2-D embeddings (frozen unless freeze=False), as torch's."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings.detach().clone(), _freeze=freeze)

    def extra_repr(self):
        extras = [f"padding_idx={self.padding_idx}" if self.padding_idx is not None else "",
                  f"max_norm={self.max_norm}" if self.max_norm is not None else "",
                  f"norm_type={self.norm_type}" if self.norm_type != 2 else "",
                  "scale_grad_by_freq=True" if self.scale_grad_by_freq else "", "sparse=True" if self.sparse else ""]
        return ", ".join([f"{self.num_embeddings}, {self.embedding_dim}", *filter(None, extras)])


# torch's base classes of the pooling and padding layers (torch.nn.modules.pooling's _MaxPoolNd, ...), for
# scripts' isinstance checks (a FLOP counter's `isinstance(m, nn.modules.pooling._AvgPoolNd)`): markers,
# each layer below a subclass of its own kind's, as torch's
class _MaxPoolNd(Module):
    pass


class _AvgPoolNd(Module):
    pass


class _AdaptiveMaxPoolNd(Module):
    pass


class _AdaptiveAvgPoolNd(Module):
    pass


class _LPPoolNd(Module):
    pass


class _MaxUnpoolNd(Module):
    pass


class _ConstantPadNd(Module):
    pass


class _ReflectionPadNd(Module):
    pass


class _ReplicationPadNd(Module):
    pass


class _CircularPadNd(Module):
    pass


class _Pool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False):
        # torch's: no stride means the kernel's size
        self.kernel_size, self.padding, self.ceil_mode = kernel_size, padding, ceil_mode
        self.stride = kernel_size if stride is None else stride

    def extra_repr(self):
        if self.mode == "avg":
            return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class _MaxPool(_Pool, _MaxPoolNd):
    """MaxPool2d's and MaxPool3d's arguments (return_indices before ceil_mode) and forward, through
    their functional form `_pool`."""
    mode = "max"

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation, self.return_indices = dilation, return_indices

    def forward(self, input):
        return self._pool(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                               self.return_indices)


class _AvgPool(_Pool, _AvgPoolNd):
    """AvgPool2d's and AvgPool3d's arguments and forward, through their functional form `_pool`."""
    mode = "avg"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return self._pool(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                               self.divisor_override)


class MaxPool2d(_MaxPool):
    """F.max_pool2d, torch's arguments (return_indices before ceil_mode)."""
    _pool = staticmethod(F.max_pool2d)


class AvgPool2d(_AvgPool):
    """F.avg_pool2d, torch's arguments."""
    _pool = staticmethod(F.avg_pool2d)


class MaxPool3d(_MaxPool):
    """F.max_pool3d, torch's arguments (return_indices before ceil_mode)."""
    _pool = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPool):
    """F.avg_pool3d, torch's arguments."""
    _pool = staticmethod(F.avg_pool3d)


class _NormBase(Module):
    """torch's batch and instance normalisation modules: weight (ones) and bias (zeros) Parameters with
    affine (bias=False: weight only), buffers running_mean (zeros), running_var (ones) and
    num_batches_tracked (int64 0) with track_running_stats. Training mode normalises with the
    batch's statistics and updates the running ones (momentum=None: their cumulative
    average); eval mode uses the running ones, or the batch's without them. The count and
    the running statistics change on the device only, so a CUDA graph can replay a step."""

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        factory_args(type(self).__name__, device, dtype)
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine or track_running_stats:  # InstanceNorm's defaults make no tensor of that size
            _new_size(num_features)
        self.register_parameter("weight", Parameter(np.ones(num_features, np.float32)) if affine else None)
        self.register_parameter("bias", Parameter(np.zeros(num_features, np.float32)) if affine and bias else None)
        track = track_running_stats
        self.register_buffer("running_mean", tensor(np.zeros(num_features, np.float32)) if track else None)
        self.register_buffer("running_var", tensor(np.ones(num_features, np.float32)) if track else None)
        self.register_buffer("num_batches_tracked", tensor(np.array(0, np.int64)) if track else None)

    _version = 2  # version 1 checkpoints (torch before 0.4.1) have no num_batches_tracked

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """A checkpoint of version < 2 (or of none) without num_batches_tracked keeps the module's count, as torch's."""
        key = prefix + "num_batches_tracked"
        if (local_metadata.get("version") or 1) < 2 and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked.memory.clone()
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def reset_running_stats(self):
        """running_mean zeros, running_var ones, num_batches_tracked 0 (in place: their addresses stay)."""
        if self.track_running_stats:
            for buffer in (self.running_mean, self.running_var, self.num_batches_tracked):
                (init.ones_ if buffer is self.running_var else init.zeros_)(buffer)

    def reset_parameters(self):
        """reset_running_stats(), the weight ones and the bias zeros, as torch's."""
        self.reset_running_stats()
        reset_affine(self)

    def forward(self, input, activation=None):
        """activation, tnet's addition: an nn.GELU() (approximate='none'), fused after the
        normalisation: the same as activation(self(x)), in one op (F.batch_norm's activation)."""
        self._check_input_dim(input)
        if activation is not None:  # the message closure only where there is something to check
            check(isinstance(activation, GELU) and activation.approximate == "none",
                  lambda: f"{type(self).__name__}: activation must be None or nn.GELU() to fuse, got {activation!r}")
        # torch's rules: the running statistics are updated in training mode if tracked, and
        # used in eval mode if they exist
        track = self.training and self.track_running_stats
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None, self.running_var if use_stats else None,
                            self.weight, self.bias, self.training or self.running_mean is None, self.momentum,
                            self.eps, num_batches_tracked=self.num_batches_tracked if track else None,
                            activation=None if activation is None else "gelu")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Batch normalisation (see _NormBase)."""


# torch's _BatchNorm family (BatchNorm1d, 2d and 3d, SyncBatchNorm, the lazy ones), by a public name for the
# isinstance checks of optim.swa_utils.update_bn and func.replace_all_batch_norm_modules_
BATCH_NORMS = (_BatchNorm,)


class BatchNorm1d(_BatchNorm):
    """Over [N, C] or [N, C, L] input."""

    def _check_input_dim(self, x):
        check(x.ndim in (2, 3), lambda: f"BatchNorm1d: expected 2D or 3D input (got {x.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Over [N, C, H, W] input, NCHW or channels-last (the output keeps the layout)."""

    def _check_input_dim(self, x):
        check(x.ndim == 4, lambda: f"BatchNorm2d: expected 4D input (got {x.ndim}D input)")


class BatchNorm3d(_BatchNorm):
    """Over [N, C, D, H, W] input."""

    def _check_input_dim(self, x):
        check(x.ndim == 5, lambda: f"BatchNorm3d: expected 5D input (got {x.ndim}D input)")


class SyncBatchNorm(_BatchNorm):
    """torch's SyncBatchNorm in a single process (or outside torch.distributed): BatchNorm over
    [N, C, ...] inputs. tnet does not yet reduce the statistics across processes, so with
    several processes it raises NotImplementedError (BatchNorm per process is DDP's default)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, x):
        check(x.ndim >= 2, lambda: f"expected at least 2D input (got {x.ndim}D input)")
        if torch.distributed.is_available() and torch.distributed.is_initialized() and \
                torch.distributed.get_world_size() > 1:
            raise NotImplementedError("SyncBatchNorm: statistics across processes are not implemented in tnet; "
                                      "use BatchNorm2d (per process, as DDP's default)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with each BatchNorm layer made a SyncBatchNorm holding its parameters and buffers."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            sync = cls.__new__(cls)
            sync.__dict__.update(module.__dict__)
            return sync
        for name, child in module.named_children():
            converted = cls.convert_sync_batchnorm(child, process_group)
            if converted is not child:
                setattr(module, name, converted)
        return module


class ReLU(Module):
    """F.relu; inplace=True writes the result into the input, as torch's (F.relu's inplace)."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _Activation(Module):
    """An element-wise activation with its parameters, in torch's order, and torch's inplace=
    (the result written into the input, as F's inplace=)."""
    fn, params = None, ()

    def __init__(self, *args, inplace=False, **kwargs):
        names = [name for name, _ in self.params]
        check(len(args) <= len(names) + 1 and not set(kwargs) - set(names),
              lambda: f"{type(self).__name__}: takes {', '.join(names + ['inplace'])}")
        values = dict(self.params, **dict(zip(names, args)), **kwargs)
        if len(args) > len(names):
            inplace = args[-1]
        for name, value in values.items():
            setattr(self, name, value)
        self.inplace = inplace

    def forward(self, input):
        args = [getattr(self, name) for name, _ in self.params]
        return type(self).fn(input, *args, inplace=True) if self.inplace else type(self).fn(input, *args)

    def extra_repr(self):
        return ", ".join([f"{name}={getattr(self, name)}" for name, _ in self.params] +
                         ["inplace=True"] * bool(self.inplace))


class ReLU6(_Activation):
    fn = F.relu6


class Hardswish(_Activation):
    fn = F.hardswish

    def extra_repr(self):  # torch's shows no inplace
        return ""


class Hardsigmoid(_Activation):
    fn = F.hardsigmoid

    def extra_repr(self):
        return ""


class LeakyReLU(_Activation):
    fn, params = F.leaky_relu, (("negative_slope", 0.01),)


class ELU(_Activation):
    fn, params = F.elu, (("alpha", 1.0),)


class Hardtanh(_Activation):
    fn, params = F.hardtanh, (("min_val", -1.0), ("max_val", 1.0))


class Mish(_Activation):
    fn = F.mish


class SELU(_Activation):
    fn = F.selu


class CELU(_Activation):
    fn, params = F.celu, (("alpha", 1.0),)


class Threshold(_Activation):
    """F.threshold: threshold and value are required, as torch's."""
    fn, params = F.threshold, (("threshold", None), ("value", None))

    def __init__(self, threshold, value, inplace=False):
        super().__init__(threshold, value, inplace=inplace)


class _Parametrised(Module):
    """An activation without inplace= whose parameters, in torch's order, go to fn."""
    fn, params = None, ()

    def __init__(self, *args, **kwargs):
        names = [name for name, _ in self.params]
        check(len(args) <= len(names) and not set(kwargs) - set(names),
              lambda: f"{type(self).__name__}: takes {', '.join(names) or 'no arguments'}")
        for name, value in dict(self.params, **dict(zip(names, args)), **kwargs).items():
            setattr(self, name, value)

    def forward(self, input):
        return type(self).fn(input, *[getattr(self, name) for name, _ in self.params])

    def extra_repr(self):
        return ", ".join(f"{name}={getattr(self, name)}" for name, _ in self.params)


class Softplus(_Parametrised):
    fn, params = F.softplus, (("beta", 1.0), ("threshold", 20.0))


class LogSigmoid(_Parametrised):
    fn = F.logsigmoid


class Softsign(_Parametrised):
    fn = F.softsign


class Tanhshrink(_Parametrised):
    fn = F.tanhshrink


class Hardshrink(_Parametrised):
    fn, params = F.hardshrink, (("lambd", 0.5),)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    fn = F.softshrink


class GLU(_Parametrised):
    fn, params = F.glu, (("dim", -1),)


class GELU(Module):
    def __init__(self, approximate="none"):
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(_Activation):
    fn = F.silu


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class _Call(Module):
    """A layer that calls fn(x, *its arguments), the arguments kept as attributes by name, in
    torch's order (a subclass's __init__ sets them); its repr shows those of `shown` (all by default),
    as torch's. forward takes its inputs by position or by torch's names for them (`inputs`:
    `criterion(input=out, target=y)`)."""
    fn, names, shown, inputs = None, (), None, ("input",)

    def forward(self, *inputs, **named):
        return type(self).fn(*self._bound(inputs, named), *[getattr(self, name) for name in self.names])

    def _bound(self, inputs, named):
        """inputs, then the named ones in the positions of torch's forward (TypeError for a name it lacks)."""
        inputs = list(inputs)
        for name in self.inputs[len(inputs):]:
            if name not in named:
                break
            inputs.append(named.pop(name))
        if named:
            raise TypeError(f"{type(self).__name__}.forward() got an unexpected keyword argument {next(iter(named))!r}")
        return inputs

    def extra_repr(self):
        return ", ".join(f"{name}={getattr(self, name)}" for name in (self.names if self.shown is None else self.shown))


class _Loss(_Call):
    """A loss module with torch's reduction= (and its deprecated size_average and reduce)."""
    inputs = ("input", "target")

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)

    def forward(self, *inputs, **named):
        return type(self).fn(*self._bound(inputs, named), **{name: getattr(self, name) for name in self.names})

    def extra_repr(self):  # torch's losses show no arguments
        return ""


class _WeightedLoss(_Loss):
    """A loss with torch's class weight, a buffer (in the state_dict where given), as torch's."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    _loss = staticmethod(F.mse_loss)

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        self.reduction = legacy_reduction(size_average, reduce, reduction)

    def forward(self, input, target):
        return self._loss(input, target, reduction=self.reduction)


class L1Loss(MSELoss):
    _loss = staticmethod(F.l1_loss)


class SmoothL1Loss(MSELoss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class BCELoss(_WeightedLoss):
    """F.binary_cross_entropy as a module; weight: a tnet.Tensor broadcast over the elements (a buffer), or None."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(BCELoss):
    """F.binary_cross_entropy_with_logits as a module (weight and pos_weight: tnet.Tensors, or None), both buffers
    (in the state_dict where given: a model holding its criterion saves `criterion.pos_weight`), as torch's."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class CrossEntropyLoss(_WeightedLoss):
    """F.cross_entropy as a module, with torch's arguments; weight is a tnet.Tensor of the class
    weights, or None."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        reduction = legacy_reduction(size_average, reduce, reduction)
        check(reduction in ("mean", "sum", "none"),
              lambda: f"CrossEntropyLoss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        check(label_smoothing <= 1.0,  # torch's check: a negative one is taken
              lambda: f"CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        super().__init__(weight, reduction=reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


@dataclasses.dataclass
class LinearCrossEntropyOptions:
    """torch 2.13's options of linear_cross_entropy's chunked path (the batch in pieces, the logits never
    whole): accepted and changes nothing, as tnet computes the logits whole, torch's reference path (the
    one torch itself falls back to for the cases its chunked path lacks): the same loss, more memory."""
    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: torch.dtype = None


class LinearCrossEntropyLoss(_WeightedLoss):
    """torch 2.13's: F.linear_cross_entropy with its own Linear (self.linear: in_features to
    num_classes * prod(out_features), stored flat and reshaped in forward, as torch's); options (a
    LinearCrossEntropyOptions) is accepted and changes nothing (see F.linear_cross_entropy)."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight, reduction=reduction)
        self.num_classes, self.out_features = num_classes, out_features
        self.ignore_index, self.label_smoothing, self.options = ignore_index, label_smoothing, options
        self.linear = Linear(in_features, math.prod(out_features) * num_classes, bias=bias, device=device,
                             dtype=dtype)

    def forward(self, input, target):
        shape = (self.num_classes, *self.out_features)
        return F.linear_cross_entropy(
            input, self.linear.weight.reshape(*shape, self.linear.in_features), target,
            linear_bias=None if self.linear.bias is None else self.linear.bias.reshape(shape), weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
            options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


class NLLLoss(_WeightedLoss):
    """F.nll_loss as a module, with torch's arguments."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        reduction = legacy_reduction(size_average, reduce, reduction)
        check(reduction in ("mean", "sum", "none"),
              lambda: f"NLLLoss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        super().__init__(weight, reduction=reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """F.adaptive_avg_pool2d to any output_size (an int or a pair; None keeps that size)."""

    def __init__(self, output_size):
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """F.adaptive_max_pool2d to any output_size, return_indices as torch."""

    def __init__(self, output_size, return_indices=False):
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """F.adaptive_avg_pool3d to any output_size (an int or a triple; None keeps that size)."""
    __init__, extra_repr = AdaptiveAvgPool2d.__init__, AdaptiveAvgPool2d.extra_repr

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """F.adaptive_max_pool3d to any output_size, return_indices as torch."""
    __init__, extra_repr = AdaptiveMaxPool2d.__init__, AdaptiveMaxPool2d.extra_repr

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _Pad(Module):
    """F.pad of the last `dims` dims: padding an int (every side) or (left, right[, top, bottom]),
    as torch's padding modules."""
    mode, dims = "constant", 2

    def __init__(self, padding, value=None):
        self.padding = (padding,) * (2 * self.dims) if isinstance(padding, int) else tuple(padding)
        check(len(self.padding) == 2 * self.dims,
              lambda: f"{type(self).__name__}: padding must be an int or {2 * self.dims} ints, got {padding!r}")
        self.value = value

    def forward(self, input):
        if self.mode == "circular" and input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.ndim}D input)")
        return F.pad(input, self.padding, self.mode, self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}" if self.mode == "constant" else f"{self.padding}"


class ConstantPad1d(_Pad, _ConstantPadNd):
    dims = 1


class ConstantPad2d(_Pad, _ConstantPadNd):
    pass


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_Pad, _ReflectionPadNd):
    mode, dims = "reflect", 1


class ReflectionPad2d(_Pad, _ReflectionPadNd):
    mode = "reflect"


class ReplicationPad1d(_Pad, _ReplicationPadNd):
    mode, dims = "replicate", 1


class ReplicationPad2d(_Pad, _ReplicationPadNd):
    mode = "replicate"


class CircularPad1d(_Pad, _CircularPadNd):
    mode, dims = "circular", 1


class CircularPad2d(_Pad, _CircularPadNd):
    mode = "circular"


class ConstantPad3d(_Pad, _ConstantPadNd):
    dims = 3


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad3d(_Pad, _ReflectionPadNd):
    mode, dims = "reflect", 3


class ReplicationPad3d(_Pad, _ReplicationPadNd):
    mode, dims = "replicate", 3


class CircularPad3d(_Pad, _CircularPadNd):
    mode, dims = "circular", 3


class Flatten(Module):
    """Dims start_dim..end_dim as one (F.flatten: torch's NCHW order for a channels-last activation)."""

    def __init__(self, start_dim=1, end_dim=-1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return F.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Dim `dim` unflattened into unflattened_size (F.unflatten), as torch's."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(dim, str):  # torch's checks of a size (a str dim takes named sizes)
            if not isinstance(unflattened_size, (tuple, list)):
                raise InputTypeError(f"unflattened_size must be a tuple of ints, but found type "
                                     f"{type(unflattened_size).__name__}")
            for i, v in enumerate(unflattened_size):
                if not isinstance(v, numbers.Integral) or isinstance(v, bool):
                    raise InputTypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                         f"{type(v).__name__} at pos {i}")
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return F.unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class PReLU(Module):
    """F.prelu with num_parameters slopes (1, or one per channel), each starting at init."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        if isinstance(init, Tensor):  # torch's fill_ takes a 0-d tensor's value
            check(init.ndim == 0, lambda: f"fill_ only supports 0-dimension value tensor but got tensor with "
                                          f"{init.ndim} dimensions.")
            init = init.item()
        if not isinstance(init, numbers.Real):
            raise InputTypeError(f"fill_() received an invalid combination of arguments - got "
                                 f"({type(init).__name__}), but expected one of: (Tensor value), (Number value)")
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(np.full(_new_size(num_parameters), init, dtype=np.float32))

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _InstanceNorm(_NormBase):
    """F.instance_norm, with per-channel weight (ones) and bias (zeros) where affine, as torch's
    (affine=False by default); batched or unbatched input. track_running_stats=True keeps running_mean
    and running_var (updated in training mode, used in eval mode; momentum=None is 0, and
    num_batches_tracked stays 0, as torch's)."""
    dims = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.ndim}D input)")
        if input.ndim == self.dims + 1:
            return self.forward(input.unsqueeze(0)).squeeze(0)
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Over [N, C, L] or [C, L]."""
    dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Over [N, C, H, W] or [C, H, W]."""


class InstanceNorm3d(_InstanceNorm):
    """Over [N, C, D, H, W] or [C, D, H, W]."""
    dims = 3


class _LazyNorm(_Lazy):
    """torch's lazy batch and instance norms: num_features from the first input's channels (dim 1,
    or dim 0 of an unbatched instance-norm input)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__(0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self._uninitialized("weight", "bias", "running_mean", "running_var")

    def forward(self, input, *args):
        unbatched = isinstance(self, _InstanceNorm) and input.ndim == self.dims + 1
        self.num_features = input.shape[0 if unbatched else 1]
        for name in ("weight", "bias", "running_mean", "running_var"):
            if getattr(self, name) is not None:
                getattr(self, name).materialize((self.num_features,))
        self._become()
        return self.forward(input, *args)


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    cls_to_become = BatchNorm3d


class _LazyInstanceNorm(_LazyNorm):
    """torch's lazy instance norms: _LazyNorm's defaults, affine=True and track_running_stats=True, as torch's
    (unlike InstanceNorm's False and False)."""


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    cls_to_become = InstanceNorm3d


class Upsample(Module):
    """F.interpolate by size or scale_factor (nearest, nearest-exact, linear, bilinear, bicubic), as torch's."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        if isinstance(scale_factor, tuple):  # kept as floats, as torch's
            scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            scale_factor = float(scale_factor) if scale_factor else None
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self):
        shown = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{shown}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear with align_corners=True, as torch's."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


class _DropoutNd(Module):
    """torch's dropout modules: _drop in training mode (module.train()), the identity in eval mode."""
    _drop = staticmethod(F.dropout)

    def __init__(self, p=0.5, inplace=False):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return self._drop(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """F.dropout in training mode (module.train()), the identity in eval mode."""


class Dropout1d(_DropoutNd):
    """F.dropout1d (whole channels of [N, C, L] or [C, L]) in training mode."""
    _drop = staticmethod(F.dropout1d)


class Dropout3d(_DropoutNd):
    """F.dropout3d (whole channels of [N, C, D, H, W] or [C, D, H, W]) in training mode."""
    _drop = staticmethod(F.dropout3d)


class FeatureAlphaDropout(_DropoutNd):
    """F.feature_alpha_dropout (alpha dropout of whole channels) in training mode."""
    _drop = staticmethod(F.feature_alpha_dropout)


class Dropout2d(Dropout):
    """F.dropout2d (whole channels) in training mode, the identity in eval mode."""
    _drop = staticmethod(F.dropout2d)


class AlphaDropout(Dropout):
    """F.alpha_dropout (SELU's dropout) in training mode, the identity in eval mode."""
    _drop = staticmethod(F.alpha_dropout)


class Softmax(_Activation):
    fn, params = F.softmax, (("dim", None),)


class LogSoftmax(_Activation):
    fn, params = F.log_softmax, (("dim", None),)


class Softmax2d(Module):
    """softmax over the channels of a [N, C, H, W] or [C, H, W] input, as torch's."""

    def forward(self, input):
        check(input.ndim in (3, 4), lambda: f"Softmax2d: expected a 3-D or 4-D input, got {input.ndim}-D")
        return F.softmax(input, -3)


class Softmin(_Activation):
    fn, params = F.softmin, (("dim", None),)


class Identity(Module):
    """Returns its input; takes and ignores any arguments, as torch's."""

    def __init__(self, *args, **kwargs):
        pass

    def forward(self, input):
        return input


def _index(container, idx):
    """The int idx (negative from the end, as torch's) as a position in container; IndexError out of range."""
    idx, n = operator.index(idx), len(container)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


class _Numbered(Module):
    """What Sequential and ModuleList share, as torch's: submodules in order, numbered "0",
    "1"... by append and extend, renumbered by insert and del; len, iteration, item
    assignment (under the same name), pop."""

    def _items(self):
        return [module for _, module in self._submodules()]  # a module given twice comes twice

    def __len__(self):
        return len(self._submodules())

    def __iter__(self):
        return iter(self._items())

    def __setitem__(self, idx, module):
        self.add_module(self._submodules()[_index(self, idx)][0], module)

    def __delitem__(self, idx):
        items = self._items()
        del items[idx if isinstance(idx, slice) else _index(self, idx)]
        self._set_submodules((str(i), module) for i, module in enumerate(items))

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        if not isinstance(modules, Iterable):
            raise TypeError(f"{type(self).__name__}.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self

    def _insert(self, index, module):
        items = self._items()
        items.insert(index, module)
        self._set_submodules((str(i), m) for i, m in enumerate(items))

    def pop(self, key):
        module = self[key]
        del self[key]
        return module


class Sequential(_Numbered):
    """Layers applied in order; give an OrderedDict (or name=module pairs) to name them.
    torch's container API: append, extend, insert, pop, add_module, len, iteration, indexing
    (an int gives a layer, a slice a Sequential of those layers, by their names), item
    assignment and deletion (which renumbers the layers "0", "1"..., as torch's).

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
            if _TorchLayer.takes(layer):
                layer = _TorchLayer(layer)
            if not isinstance(layer, Module):  # torch's add_module's TypeError (unlike torch's, None is refused too)
                raise InputTypeError(f"{type(layer).__name__} is not a Module subclass (Sequential's layer {name})")
            setattr(self, name, layer)

    def forward(self, input):
        layers = self._items()
        i = 0
        while i < len(layers):
            covered, pool = _fusion(layers[i:i + 3])
            input = layers[i](input, relu=True, pool=pool) if covered else layers[i](input)
            i += covered or 1
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(self._submodules()[idx]))
        return self._items()[_index(self, idx)]

    def insert(self, index, module):
        """module at position index (-len <= index <= len); the layers are renumbered "0", "1"...,
        as torch's insert does for a Sequential of numbered layers."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        self._insert(index, module)
        return self

    # torch's arithmetic: + and += join two Sequentials, * and *= repeat the layers (the same modules, shared)
    def __add__(self, other):
        return Sequential(*self, *self._joined(other))

    def __iadd__(self, other):
        return self.extend(self._joined(other))

    def _joined(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return list(other)

    def _repeats(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return list(self) * other

    def __mul__(self, other):
        return Sequential(*self._repeats(other))

    __rmul__ = __mul__

    def __imul__(self, other):
        return self.extend(self._repeats(other)[len(self):])


class ModuleList(_Numbered):
    """torch.nn.ModuleList: submodules in a list, registered as "0", "1"... (so parameters(),
    state_dict() and apply() see them): append, extend, insert, pop, len, iteration, indexing
    (a slice gives a ModuleList), item assignment and deletion, +=. No forward, as torch's."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(self._items()[idx])
        return self._items()[_index(self, idx)]

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return type(self)(self._items() + list(other))

    def insert(self, index, module):
        """module before position index, as list.insert (torch's fails on a negative index)."""
        if not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._insert(index, module)

    def __repr__(self):
        """torch's: runs of equal children's reprs compressed into "(i-j): n x repr"."""
        runs = []  # [first index, last index, repr]
        for i, module in enumerate(self):
            r = repr(module)
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        if not runs:
            return f"{type(self).__name__}()"
        lines = [(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}").replace("\n", "\n  ")
                 for a, b, r in runs]
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """torch.nn.ModuleDict: submodules by name, registered under their keys, in insertion order;
    the mapping API (indexing, assignment, del, in, len, iteration over keys, keys, values,
    items, pop, clear, update)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        if key not in self:
            raise KeyError(key)
        return vars(self)[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        if key not in self:
            raise KeyError(key)
        delattr(self, key)

    def __len__(self):
        return len(self._submodules())

    def __iter__(self):
        return iter(self.keys())

    def __contains__(self, key):
        return isinstance(vars(self).get(key), Module)

    def keys(self):
        return [name for name, _ in self._submodules()]

    def values(self):
        return [module for _, module in self._submodules()]

    def items(self):
        return self._submodules()

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def clear(self):
        self._set_submodules(())

    def update(self, modules):
        """Add (or replace) the modules of a mapping, in its order, or of an iterable of
        (key, module) pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(modules).__name__}")
        pairs = modules.items() if isinstance(modules, (Mapping, ModuleDict)) else modules
        for j, item in enumerate(pairs):
            if not isinstance(item, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is {type(item).__name__}")
            if len(item) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(item)}; 2 is required")
            self[item[0]] = item[1]


class _TorchLayer(Module):
    """A torch.nn.Module without parameters or buffers (einops' Rearrange and Reduce) in a tnet
    container: called as it is on tnet Tensors, so it must compute with their methods (reshape,
    permute, sum), as einops' layers do."""

    def __init__(self, layer):
        super().__init__()
        object.__setattr__(self, "layer", layer)  # not a tnet Module: no child to walk

    @staticmethod
    def takes(layer):
        return (isinstance(layer, torch.nn.Module) and not any(True for _ in layer.parameters())
                and not any(True for _ in layer.buffers()))

    def forward(self, *args, **kwargs):
        return self.layer(*args, **kwargs)

    def __repr__(self):
        return repr(self.layer)


def _fusion(layers):
    """(how many of `layers` one fused Conv2d covers, the pooling it fuses or None): conv,
    ReLU, pool or conv, max pool, ReLU: 3 and the pool; conv, ReLU: 2; otherwise (0, None).
    Layers with forward hooks are not fused: each hook sees its own layer's input and output."""
    if type(layers[0]) is not Conv2d:  # the common case, asked of every layer of every call
        return 0, None
    kinds = [type(layer) for layer in layers]
    covered, pool = 0, None
    if kinds[:2] == [Conv2d, ReLU]:
        pooled = len(kinds) == 3 and issubclass(kinds[2], (MaxPool2d, AvgPool2d)) \
            and not getattr(layers[2], "return_indices", False)
        covered, pool = (3, layers[2]) if pooled else (2, None)
    elif kinds == [Conv2d, MaxPool2d, ReLU] and not layers[1].return_indices:
        covered, pool = 3, layers[1]
    hooked = any(layer._hooks(h) for layer in layers[:covered]
                 for h in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                           "_legacy_backward_hooks"))
    return (0, None) if hooked else (covered, pool)


# ---- the containers of parameters, shape layers, 1-D pooling, losses and the rest that CIFAR/MNIST scripts use ----

def _as_parameter(value):
    """A tensor as a Parameter (sharing its memory), as torch's parameter containers wrap it; other values as they are."""
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value


class ParameterList(Module):
    """torch.nn.ParameterList: parameters in a list, registered as "0", "1"... (so parameters(),
    named_parameters() and state_dict() name them as torch's); a tensor added is wrapped in a
    Parameter sharing its memory. append, extend, indexing (a slice gives a ParameterList), item
    assignment, len, iteration, +=."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(getattr(self, str(i)) for i in range(self._size))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self)[idx])
        return getattr(self, str(_index(self, idx)))

    def __setitem__(self, idx, value):
        setattr(self, str(_index(self, idx)), _as_parameter(value))

    def append(self, value):
        self._size += 1
        setattr(self, str(self._size - 1), _as_parameter(value))
        return self

    def extend(self, values):
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def __iadd__(self, values):
        return self.extend(values)

    def extra_repr(self):
        return _entries_repr(enumerate(self), lambda p: p.dtype)


def _entries_repr(items, type_name):
    """ParameterList's and ParameterDict's extra_repr, torch's: a line "  (key): Parameter containing: [type of size
    AxB]" (" (cuda:0)" after on a GPU) for each entry, type_name(p) its type (the list's dtype, the dict's type())."""
    lines = []
    for k, p in items:
        if isinstance(p, Tensor):
            where = f" ({p.device})" if p.device.type == "cuda" else ""
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            lines.append(f"  ({k}): {kind} containing: [{type_name(p)} of size {'x'.join(map(str, p.shape))}{where}]")
        else:
            lines.append(f"  ({k}): Object of type: {type(p).__name__}")
    return "\n".join(lines)


class ParameterDict(Module):
    """torch.nn.ParameterDict: parameters by name (str keys), registered under their keys (so
    named_parameters() and state_dict() name them as torch's), in insertion order (a plain dict
    given to the constructor or update goes in sorted order, as torch's); a tensor is wrapped in a
    Parameter sharing its memory. The mapping API: indexing, assignment, del, in, len, iteration,
    keys, values, items, get, pop, popitem, setdefault, clear, update, copy, fromkeys."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def values(self):
        return (self[k] for k in self._keys)

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        key = list(self._keys)[-1]
        return key, self.pop(key)

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def copy(self):
        return type(self)(OrderedDict(self.items()))

    def fromkeys(self, keys, default=None):
        return type(self)(OrderedDict((k, default) for k in keys))

    def update(self, parameters):
        """The (key, parameter) pairs of a mapping (a plain dict in sorted key order, as torch's) or
        an iterable of pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError(f"ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(parameters).__name__}")
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = list(parameters)
        for j, pair_ in enumerate(pairs):
            if not isinstance(pair_, Iterable) or len(pair_) != 2:
                raise ValueError(f"ParameterDict update sequence element #{j} should be a (key, value) pair")
            self[pair_[0]] = pair_[1]

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def extra_repr(self):
        return _entries_repr(self.items(), lambda p: p.type())


class PixelShuffle(_Call):
    fn, names = F.pixel_shuffle, ("upscale_factor",)

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor


class PixelUnshuffle(_Call):
    fn, names = F.pixel_unshuffle, ("downscale_factor",)

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor


class ChannelShuffle(_Call):
    fn, names = F.channel_shuffle, ("groups",)

    def __init__(self, groups):
        super().__init__()
        self.groups = groups


class AvgPool1d(_Call, _AvgPoolNd):
    """F.avg_pool1d over [N, C, L] or [C, L]; its sizes kept as 1-tuples and its repr showing those three, as
    torch's."""
    fn, names = F.avg_pool1d, ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")
    shown = names[:3]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = ntuple(kernel_size, 1, "AvgPool1d: kernel_size", 1)
        self.stride = self.kernel_size if stride is None else ntuple(stride, 1, "AvgPool1d: stride", 1)
        self.padding = ntuple(padding, 1, "AvgPool1d: padding")
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad


class MaxPool1d(_Call, _MaxPoolNd):
    """F.max_pool1d over [N, C, L] or [C, L] (torch's argument order: return_indices before
    ceil_mode)."""
    fn, names = F.max_pool1d, ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
    shown = names[:5]  # torch's repr leaves return_indices out

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, kernel_size if stride is None else stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode


class MaxUnpool1d(_MaxUnpoolNd):
    """F.max_unpool1d: forward(input, indices, output_size=None). Sizes kept as tuples, as torch's."""
    dims = 1

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        name = type(self).__name__
        self.kernel_size = ntuple(kernel_size, self.dims, f"{name}: kernel_size", 1)
        self.stride = self.kernel_size if stride is None else ntuple(stride, self.dims, f"{name}: stride", 1)
        self.padding = ntuple(padding, self.dims, f"{name}: padding")

    def forward(self, input, indices, output_size=None):
        return type(self).fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    fn = staticmethod(F.max_unpool1d)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool2d(MaxUnpool1d):
    """F.max_unpool2d: forward(input, indices, output_size=None)."""
    fn, dims = staticmethod(F.max_unpool2d), 2


class MaxUnpool3d(MaxUnpool1d):
    """F.max_unpool3d: forward(input, indices, output_size=None)."""
    fn, dims = staticmethod(F.max_unpool3d), 3


class FractionalMaxPool2d(Module):
    """F.fractional_max_pool2d with torch's arguments: output_size or output_ratio (in (0, 1)), new
    random windows at each call unless _random_samples (a buffer, as torch's) fixes them."""
    fn, dims = staticmethod(F.fractional_max_pool2d), 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        name = type(self).__name__
        self.kernel_size, self.return_indices = kernel_size, return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else ntuple(output_size, self.dims, f"{name}: output_size")
        self.output_ratio = None if output_ratio is None else (
            tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * self.dims)
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return type(self).fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                             _random_samples=self._random_samples)


class FractionalMaxPool3d(FractionalMaxPool2d):
    """F.fractional_max_pool3d with torch's arguments (see FractionalMaxPool2d)."""
    fn, dims = staticmethod(F.fractional_max_pool3d), 3


class AdaptiveAvgPool1d(_Call, _AdaptiveAvgPoolNd):
    fn, names = F.adaptive_avg_pool1d, ("output_size",)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size


class AdaptiveMaxPool1d(_Call, _AdaptiveMaxPoolNd):
    fn, names, shown = F.adaptive_max_pool1d, ("output_size", "return_indices"), ("output_size",)

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices


class LocalResponseNorm(_Call):
    """F.local_response_norm across channels (AlexNet's and Caffe's LRN)."""
    fn, names = F.local_response_norm, ("size", "alpha", "beta", "k")

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class Unfold(_Call):
    """F.unfold (im2col)."""
    fn, names = F.unfold, ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride


class Fold(_Call):
    """F.fold (col2im)."""
    fn, names = F.fold, ("output_size", "kernel_size", "dilation", "padding", "stride")

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride


class CosineSimilarity(_Call):
    fn, names, shown, inputs = F.cosine_similarity, ("dim", "eps"), (), ("x1", "x2")

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps


class PairwiseDistance(_Call):
    fn, names, shown, inputs = F.pairwise_distance, ("norm", "eps", "keepdim"), (), ("x1", "x2")

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim


class HuberLoss(_Loss):
    fn, names = F.huber_loss, ("reduction", "delta")

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta


class KLDivLoss(_Loss):
    """F.kl_div: input log-probabilities; reduction 'mean' (torch's default, over every element),
    'batchmean', 'sum' or 'none'."""
    fn, names = F.kl_div, ("reduction", "log_target")

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target


class MarginRankingLoss(_Loss):
    fn, names, inputs = F.margin_ranking_loss, ("margin", "reduction"), ("input1", "input2", "target")

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class HingeEmbeddingLoss(MarginRankingLoss):
    fn, inputs = F.hinge_embedding_loss, ("input", "target")

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)


class SoftMarginLoss(_Loss):
    fn, names = F.soft_margin_loss, ("reduction",)


class CosineEmbeddingLoss(MarginRankingLoss):
    fn = F.cosine_embedding_loss


class TripletMarginLoss(_Loss):
    fn, names = F.triplet_margin_loss, ("margin", "p", "eps", "swap", "reduction")
    inputs = ("anchor", "positive", "negative")

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap


class NLLLoss2d(NLLLoss):
    """torch's deprecated alias of NLLLoss (for [N, C, H, W] log-probabilities)."""


class MultiMarginLoss(_WeightedLoss):
    fn, names = F.multi_margin_loss, ("p", "margin", "weight", "reduction")

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError("MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.ndim}D tensor instead")
        self.p, self.margin = p, margin


class MultiLabelMarginLoss(_Loss):
    fn, names = F.multilabel_margin_loss, ("reduction",)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    fn, names = F.multilabel_soft_margin_loss, ("weight", "reduction")


class PoissonNLLLoss(_Loss):
    fn, names, inputs = F.poisson_nll_loss, ("log_input", "full", "eps", "reduction"), ("log_input", "target")

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps


class CTCLoss(_Loss):
    """F.ctc_loss: forward(log_probs, targets, input_lengths, target_lengths)."""
    fn, names = F.ctc_loss, ("blank", "reduction", "zero_infinity")
    inputs = ("log_probs", "targets", "input_lengths", "target_lengths")

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity


class GaussianNLLLoss(_Loss):
    """F.gaussian_nll_loss: forward(input, target, var)."""
    fn, names, inputs = F.gaussian_nll_loss, ("full", "eps", "reduction"), ("input", "target", "var")

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps


class TripletMarginWithDistanceLoss(_Loss):
    fn, names = F.triplet_margin_with_distance_loss, ("distance_function", "margin", "swap", "reduction")
    inputs = ("anchor", "positive", "negative")

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function, self.margin, self.swap = distance_function, margin, swap


class AdaptiveLogSoftmaxWithLoss(Module):
    """torch's adaptive softmax (Grave et al.): a head Linear over the cutoffs[0] most frequent classes and one
    logit per cluster, and per cluster a tail Sequential(Linear(in, in // div_value ** (i + 1)), Linear(that,
    cluster size)), torch's parameter names; forward(input [N, in] or [in], target [N] or []) gives
    (output, loss): each target's log-probability and their negated mean. The targets are read on the host
    to split the batch by cluster (a sync, as torch's nonzero); log_prob and predict as torch's."""

    _ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 or \
                len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes, self.cutoffs = in_features, n_classes, cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size, self.n_clusters = self.cutoffs[0], len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False),
                                        Linear(hidden, self.cutoffs[i + 1] - self.cutoffs[i], bias=False)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_.numpy().reshape(-1).astype(np.int64)
        output = input.new_zeros(len(target))
        gather_inds = target.copy()  # the head's column of each row: its class, or its cluster's logit
        bounds = [0] + self.cutoffs
        for i in range(1, len(bounds) - 1):
            rows = np.nonzero((target >= bounds[i]) & (target < bounds[i + 1]))[0]
            if rows.size == 0:
                continue
            index = tensor(rows)
            logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, index)), dim=1)
            local = logprob.gather(1, tensor(target[rows] - bounds[i]).unsqueeze(1)).squeeze(1)
            output = output.index_copy(0, index, local)
            gather_inds[rows] = self.shortlist_size + i - 1
        if target.size and (target.min() < 0 or target.max() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min()}, {target.max()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, tensor(gather_inds).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return self._ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return F.cat(parts, dim=1)

    def log_prob(self, input):
        """The log-probabilities [N, n_classes] of every class."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each row: the head's argmax where it is in the shortlist, else the full
        distribution's (computed for every row here, where torch's takes only the others: the same classes)."""
        head_output = self.head(input)
        output = head_output.argmax(dim=1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        return F.where(outside, self._get_full_log_prob(input, head_output).argmax(dim=1), output)


class RReLU(Module):
    """F.rrelu: a random slope in [lower, upper) per negative element in training mode, their mean in
    eval mode (tnet's generator: other draws than torch's); inplace=True is computed out of place."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class LPPool1d(_Call, _LPPoolNd):
    """F.lp_pool1d over [N, C, L] or [C, L]."""
    fn, names = F.lp_pool1d, ("norm_type", "kernel_size", "stride", "ceil_mode")

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode


class LPPool2d(LPPool1d):
    """F.lp_pool2d over [N, C, H, W] or [C, H, W]."""
    fn = F.lp_pool2d


class LPPool3d(LPPool1d):
    """F.lp_pool3d over [N, C, D, H, W] or [C, D, H, W]."""
    fn = F.lp_pool3d


class EmbeddingBag(Module):
    """F.embedding_bag's table of num_embeddings rows of embedding_dim, drawn from N(0, 1) (tnet's
    init stream) with the padding_idx row zero, as torch's; forward(input, offsets=None,
    per_sample_weights=None); max_norm renorms the rows looked up in place, as torch's. scale_grad_by_freq
    and sparse are not implemented."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        if scale_grad_by_freq or sparse:
            raise NotImplementedError("EmbeddingBag: scale_grad_by_freq and sparse are not implemented")
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise AssertionError("padding_idx must be within num_embeddings")
        self.num_embeddings, self.embedding_dim, self.mode = num_embeddings, embedding_dim, mode
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, scale_grad_by_freq, sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        self.weight = Parameter(np.empty(_new_size(num_embeddings, embedding_dim)) if _weight is None else _weight)
        if _weight is None:
            self.reset_parameters()

    reset_parameters = Embedding.reset_parameters

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        extras = [f"max_norm={self.max_norm}" if self.max_norm is not None else "",
                  f"norm_type={self.norm_type}" if self.norm_type != 2 else "",
                  "scale_grad_by_freq=True" if self.scale_grad_by_freq else "", f"mode={self.mode!r}",
                  f"padding_idx={self.padding_idx}" if self.padding_idx is not None else ""]
        return ", ".join([f"{self.num_embeddings}, {self.embedding_dim}", *filter(None, extras)])

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """A bag over embeddings [num, dim] (its memory: a Parameter of a float32 tnet tensor shares it),
        frozen unless freeze=False, as torch's."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        bag = cls(*embeddings.shape, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag


class Bilinear(Module):
    """torch.nn.Bilinear: F.bilinear with weight [out, in1, in2] and bias [out], both drawn from
    U(-1/sqrt(in1), 1/sqrt(in1)) as torch's reset_parameters, by numpy from rng (tnet's init stream
    by default: a seed gives the same weights on CPU and GPU, not torch's numbers)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None, *, rng=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        self.in1_features, self.in2_features, self.out_features, self.rng = in1_features, in2_features, out_features, rng
        self.weight = Parameter(np.zeros(_new_size(out_features, in1_features, in2_features), np.float32))
        self.register_parameter("bias", Parameter(np.zeros(out_features, np.float32)) if bias else None)
        self.reset_parameters()

    def reset_parameters(self):
        rng = init_generator() if self.rng is None else self.rng
        if self.in1_features == 0:  # torch's check, past the parameters' sizes
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.in1_features)
        for p in (self.weight, self.bias):
            if p is not None:
                init.uniform_(p, -bound, bound, generator=rng)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


from . import parallel  # noqa: E402  (after Module: parallel subclasses it)
from .parallel import DataParallel  # noqa: E402
from . import rnn  # noqa: E402  (after Module: the recurrent layers subclass it)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder,  # noqa: E402
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from .utils import fusion, parametrizations, parametrize, prune, stateless  # noqa: E402,F401  (after Module: ParametrizationList subclasses ModuleList)
from . import common_types, modules, parameter  # noqa: E402,F401  (torch's import paths; after every layer)
from . import grad  # noqa: E402  (torch.nn.grad; after functional: it calls the convolutions)
F.grad = grad  # torch.nn.functional.grad is torch.nn.grad, as torch's functional imports it
