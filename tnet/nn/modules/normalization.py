"""torch.nn.modules.normalization's import path: tnet.nn's layers, re-exported."""
from .. import (GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm)

__all__ = ["GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]
