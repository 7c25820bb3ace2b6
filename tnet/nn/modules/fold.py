"""torch.nn.modules.fold's import path: tnet.nn's layers, re-exported."""
from .. import (Fold, Unfold)

__all__ = ["Fold", "Unfold"]
