"""torch.nn.modules.batchnorm's import path: tnet.nn's layers, re-exported."""
from .. import (BatchNorm1d, BatchNorm2d, LazyBatchNorm1d, LazyBatchNorm2d, SyncBatchNorm, _BatchNorm, _NormBase)
from .. import _LazyNorm as _LazyNormBase

__all__ = ["BatchNorm1d", "BatchNorm2d", "LazyBatchNorm1d", "LazyBatchNorm2d", "SyncBatchNorm", "_BatchNorm",
           "_NormBase", "_LazyNormBase"]
