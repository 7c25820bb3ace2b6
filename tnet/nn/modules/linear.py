"""torch.nn.modules.linear's import path: tnet.nn's layers, re-exported."""
from .. import (Bilinear, Identity, LazyLinear, Linear)

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]
