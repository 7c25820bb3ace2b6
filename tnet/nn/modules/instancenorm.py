"""torch.nn.modules.instancenorm's import path: tnet.nn's layers, re-exported."""
from importlib import import_module

from .. import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d,
    LazyInstanceNorm3d)

_nn = import_module("tnet.nn")  # torch's private bases, by attribute (tnet imports no private name)
_InstanceNorm = _nn._InstanceNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d", "_InstanceNorm"]
