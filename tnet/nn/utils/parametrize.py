"""torch.nn.utils.parametrize: register_parametrization, remove_parametrizations, is_parametrized,
cached, type_before_parametrizations and ParametrizationList, with torch's layout. A parametrized
tensor module.<name> lives as module.parametrizations.<name>.original (original0, original1...
where right_inverse returns several tensors) and is computed on each read through the
parametrizations registered on it; as torch's, the module's class becomes a subclass of its own
("ParametrizedLinear") holding a property for each parametrized name, whose setter runs
right_inverse; a parametrized module deep-copies but does not pickle (save its state_dict)."""
import copy
from collections.abc import Sequence
from contextlib import contextmanager

from ... import amp
from ...kernels.launch import dense
from ...tensor import Tensor, no_grad
from .. import ModuleDict, ModuleList, Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization", "remove_parametrizations",
           "transfer_parametrizations_and_params", "type_before_parametrizations"]

_cache = {}  # (id(module), name) -> the parametrized tensor, while a cached() block is open
_cache_depth = [0]


@contextmanager
def cached():
    """Within this block each parametrized tensor is computed once, on its first read, and that value
    is read again after (a weight shared by several calls), as torch's; leaving the outermost block
    forgets the values."""
    _cache_depth[0] += 1
    try:
        yield
    finally:
        _cache_depth[0] -= 1
        if not _cache_depth[0]:
            _cache.clear()


def _register_parameter_or_buffer(module, name, value):
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set(dest, src):
    """dest takes src's memory (torch's dest.set_(src)), so that dest stays the object that an
    optimizer holds; a strided view's (orthogonal's transposed reflectors) as a dense copy, which
    the optimizers' kernels step."""
    if src is not dest:
        dest.data = dense(src.memory)
        amp.drop_low_copies(dest)


def _check_tensor(value, what):
    if not isinstance(value, Tensor):
        raise ValueError(f"{what} must return a tensor. Got {type(value).__name__}.")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, as torch's: modules "0", "1"... applied in order to the
    original tensor(s) `original` (or original0, original1...), which hold right_inverse's value of
    the tensor at registration (parameters where it was a parameter, else buffers)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with no_grad():
                _set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):  # the original's lr_mult and decay_mult carry over
                    originali = Parameter(originali.detach(), original.lr_mult, original.decay_mult,
                                          requires_grad=original.requires_grad)
                else:
                    originali = originali.detach().requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            Z = self()
            _check_tensor(Z, "A parametrization")
            if Z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {Z.dtype}")
            if Z.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {Z.shape}")

    def right_inverse(self, value):
        """The originals become the right_inverse of value through every parametrization, last first
        (module.<name> = value), written into their memory, as torch's."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set(self.original, value)
                return
            if not isinstance(value, Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got element {i} of type "
                                     f"{type(tensor).__name__}.")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while "
                                     f"`original{i}` has dtype {original_i.dtype}")
                _set(original_i, tensor)

    def forward(self):
        modules = self._items()
        if self.is_tensor:
            x = modules[0](self.original)
        else:
            x = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            x = module(x)
        return x


def _parametrized_property(tensor_name):
    """The class property behind module.<tensor_name>: computed through module.parametrizations on
    each read (once per cached() block), set through their right_inverse."""

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth[0]:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    return property(get_parametrized, set_original)


def _inject_new_class(module):
    """module's class becomes a subclass of it, "Parametrized<name>", to hold the properties."""
    cls = type(module)

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict().")

    def default_deepcopy(self, memo):  # copy.deepcopy would otherwise go through getstate
        if id(self) in memo:
            return memo[id(self)]
        replica = memo[id(self)] = self.__new__(type(self))
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        return replica

    members = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _is_own_tensor(module, name):
    """Whether name is one of module's parameters or buffers (torch's _parameters or _buffers)."""
    value = vars(module).get(name)
    return isinstance(value, Parameter) or (name in module._buffer_names and isinstance(value, Tensor))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """module.<tensor_name> (a parameter or buffer) becomes parametrization(original), computed on each
    read, as torch's: original (module.parametrizations.<tensor_name>.original, or original0,
    original1... where parametrization.right_inverse returns a sequence) holds right_inverse of the
    current value (the value itself where there is no right_inverse); a second parametrization on
    the same name is applied after the first. unsafe skips the checks that the parametrization keeps
    the shape and dtype. Returns module."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            _check_tensor(X, "A parametrization")
            if X.dtype != Y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {X.dtype}")
            if X.shape != Y.shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {Y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {X.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    _check_tensor(Z, "parametrization.right_inverse")
                    if Z.dtype != Y.dtype or Z.shape != Y.shape:
                        raise ValueError("The tensor returned by parametrization.right_inverse must have the same "
                                         f"dtype and shape as module.{tensor_name}, unless the `unsafe` flag is "
                                         f"enabled.\nmodule.{tensor_name}: {Y.dtype} {Y.shape}\n"
                                         f"returned: {Z.dtype} {Z.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif _is_own_tensor(module, tensor_name):
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        module._buffer_names.pop(tensor_name, None)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        setattr(type(module), tensor_name, _parametrized_property(tensor_name))
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether module has a parametrization on tensor_name (None: on any tensor), as torch's."""
    parametrizations = vars(module).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Take the parametrizations of module.<tensor_name> away, as torch's: it becomes a parameter (or
    buffer) again, holding its current parametrized value (leave_parametrized=True) or the original
    (False: only where there is one original tensor; else ValueError). With one original, that same
    Parameter object comes back, so an optimizer holding it needs no change. Returns module."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _set(original, t)
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t.detach()
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in "
                         "terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module):
    """module's class before any parametrization was registered on it, as torch's."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """The parametrizations of from_module (those of tensor_name, or all) registered on to_module too,
    sharing from_module's original tensors, as torch's. Returns to_module."""
    if not is_parametrized(from_module):
        return to_module
    for name in list(from_module.parametrizations) if tensor_name is None else [tensor_name]:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        for original in ["original"] if source.is_tensor else [f"original{i}" for i in range(source.ntensors)]:
            setattr(target, original, getattr(source, original))
    return to_module
