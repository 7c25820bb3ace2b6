"""torch.nn.modules.batchnorm's import path: tnet.nn's layers, re-exported."""
from importlib import import_module

from .. import (BatchNorm1d, BatchNorm2d, BatchNorm3d, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
    SyncBatchNorm)

_nn = import_module("tnet.nn")  # torch's private bases, by attribute (tnet imports no private name)
_BatchNorm, _NormBase, _LazyNormBase = _nn._BatchNorm, _nn._NormBase, _nn._LazyNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm", "_BatchNorm", "_LazyNormBase", "_NormBase"]
