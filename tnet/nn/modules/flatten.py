"""torch.nn.modules.flatten's import path: tnet.nn's layers, re-exported."""
from .. import (Flatten, Unflatten)

__all__ = ["Flatten", "Unflatten"]
