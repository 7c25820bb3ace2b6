"""torch.nn.modules.instancenorm's import path: tnet.nn's layers, re-exported."""
from .. import (InstanceNorm1d, InstanceNorm2d, LazyInstanceNorm1d, LazyInstanceNorm2d, _InstanceNorm)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "_InstanceNorm"]
