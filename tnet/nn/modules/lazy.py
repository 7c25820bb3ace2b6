"""torch.nn.modules.lazy's import path: LazyModuleMixin, the base of tnet's lazy layers."""
from importlib import import_module

_nn = import_module("tnet.nn")  # torch's private bases, by attribute (tnet imports no private name)
LazyModuleMixin = _nn._Lazy

__all__ = ["LazyModuleMixin"]
