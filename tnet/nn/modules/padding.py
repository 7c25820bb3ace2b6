"""torch.nn.modules.padding's import path: tnet.nn's layers, re-exported, and torch's private base classes."""
from importlib import import_module

from .. import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
    ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d,
    ZeroPad1d, ZeroPad2d, ZeroPad3d)

_nn = import_module("tnet.nn")  # torch's private bases, by attribute (tnet imports no private name)
_ConstantPadNd, _ReflectionPadNd, _ReplicationPadNd, _CircularPadNd = (
    _nn._ConstantPadNd, _nn._ReflectionPadNd, _nn._ReplicationPadNd, _nn._CircularPadNd)
from . import utils as _utils  # noqa: E402  (the argument helpers torch's padding module imports)
_pair, _quadruple, _ntuple = _utils._pair, _utils._quadruple, _utils._ntuple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]
