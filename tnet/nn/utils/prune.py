"""torch.nn.utils.prune: pruning by masks, with torch's layout, names and semantics.

Pruning tensor `name` of a module moves the parameter to `name + "_orig"`, registers the mask as
the buffer `name + "_mask"` and makes `name` a plain tensor, orig * mask, recomputed before each
forward by the method itself, registered as a forward pre-hook. Pruning the same tensor again
combines the methods in a PruningContainer: each new mask is computed on the entries (unstructured)
or channels (structured) that the masks so far keep, and `amount` as a fraction counts those.
`remove` makes the pruned tensor the parameter again. The masks are computed with tnet's ops; the
random methods draw from tnet's generator, so their masks differ from torch's for the same seed."""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import torch

from ... import functional as F
from ...factory import ones_like, rand, rand_like, zeros_like

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
           "RandomStructured", "RandomUnstructured", "custom_from_mask", "global_unstructured", "identity",
           "is_pruned", "l1_unstructured", "ln_structured", "random_structured", "random_unstructured", "remove"]


def _hooks(module):
    return vars(module).get("_forward_pre_hooks", {})


class BasePruningMethod(ABC):
    """A pruning method: compute_mask(t, default_mask) gives the new mask; as a forward pre-hook it
    sets module.<name> = <name>_orig * <name>_mask."""

    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for t, given the mask so far (default_mask)."""

    def apply_mask(self, module):
        assert self._tensor_name is not None, f"Module {module} has to be pruned"
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs), ranking by importance_scores (default: the
        tensor itself), combined with any pruning already on it."""
        old = [(key, hook) for key, hook in _hooks(module).items()
               if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
        assert len(old) <= 1, f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. " \
                              "Use a PruningContainer."
        old_method = old[0][1] if old else None
        if old:
            del _hooks(module)[old[0][0]]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            method = old_method
        elif old_method is not None:
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            assert importance_scores.shape == orig.shape, \
                f"importance_scores should have the same shape as parameter {name} of {module}"
        else:
            importance_scores = orig
        if old_method is None:
            default_mask = ones_like(orig)
            delattr(module, name)
            module.register_parameter(name + "_orig", orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=torch.contiguous_format)
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if old_method is None:  # the parameter goes back where it was
                orig = getattr(module, name + "_orig")
                delattr(module, name + "_orig")
                module.register_parameter(name, orig)
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (t itself is left as it is)."""
        if importance_scores is not None:
            assert importance_scores.shape == t.shape, "importance_scores should have the same shape as tensor t"
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make module.<name> the parameter again, holding orig * mask; the mask and the hook go."""
        assert self._tensor_name is not None, f"Module {module} has to be pruned before pruning can be removed"
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = getattr(module, self._tensor_name + "_orig")
        orig.data = weight.data
        delattr(module, self._tensor_name + "_orig")
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor, in order; the mask is the last one's, computed on
    what the earlier ones keep."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and not isinstance(args[0], Iterable):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        elif len(args) == 1 and len(args[0]) == 1:
            self._tensor_name = args[0][0]._tensor_name
            self.add_pruning_method(args[0][0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            kept = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the attribute "
                                     "`dim` defined.")
            dim = method.dim + t.dim() if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor of size {t.shape}")
            kept = [slice(None)] * t.dim()
            kept[dim] = default_mask.sum(dim=[d for d in range(t.dim()) if d != dim]) != 0
            kept = tuple(kept)
        elif method.PRUNING_TYPE == "global":
            kept = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        mask[kept] = method.compute_mask(t[kept], default_mask=mask[kept]).to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _ByEntry(BasePruningMethod):
    """Prunes `amount` entries (a fraction, or a count): the `count` that _pruned picks."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count(self.amount, t.numel())
        mask = default_mask.clone(memory_format=torch.contiguous_format)
        if count:
            mask.view(-1)[self._pruned(t.reshape(-1), count)] = 0
        return mask


class RandomUnstructured(_ByEntry):
    """Prunes `amount` entries drawn at random."""

    def _pruned(self, flat, count):
        return rand_like(flat).topk(count).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_ByEntry):
    """Prunes the `amount` entries of smallest magnitude."""

    def _pruned(self, flat, count):
        return flat.abs().topk(count, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim`, drawn at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t, self.dim)
        size = t.shape[self.dim]
        count = _count(self.amount, size)
        if not count:
            return default_mask
        prob = rand(size)
        return _channels(t, self.dim, prob > prob.kthvalue(count).values) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along `dim` of smallest L`n` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t, self.dim)
        size = t.shape[self.dim]
        count = _count(self.amount, size)
        if not count:
            return default_mask
        dim = self.dim % t.dim()
        norm = t.norm(p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        return _channels(t, self.dim, norm.topk(size - count).indices) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes by a given mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        assert default_mask.shape == self.mask.shape
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of `parameters` together: the method (unstructured) ranks
    all their entries as one vector, then each tensor takes its part of the mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    flat = lambda tensors: F.cat([t.reshape(-1) for t in tensors])  # noqa: E731
    scores = flat([importance_scores.get((m, name), getattr(m, name)) for m, name in parameters])
    default_mask = flat([getattr(m, name + "_mask") if hasattr(m, name + "_mask") else ones_like(getattr(m, name))
                         for m, name in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer()
    container._tensor_name = "temp"
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=final_mask[start:start + param.numel()].view_as(param))
        start += param.numel()


def remove(module, name):
    """Make the pruning of module.<name> permanent: the parameter holds orig * mask again."""
    for key, hook in list(_hooks(module).items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del _hooks(module)[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether a pruning hook is on module or any of its submodules."""
    return any(isinstance(hook, BasePruningMethod) for _, m in module.named_modules() for hook in _hooks(m).values())


def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or \
            (not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount, size):
    """How many of `size` entries or channels `amount` prunes (a count, or a fraction rounded)."""
    count = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if count > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
    return count


def _validate_structured(t, dim):
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _channels(t, dim, kept):
    """A mask shaped as t: ones in the channels along dim that kept (indices or a bool mask) picks."""
    mask = zeros_like(t)
    where = [slice(None)] * t.dim()
    where[dim] = kept
    mask[tuple(where)] = 1
    return mask
