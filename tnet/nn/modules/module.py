"""torch.nn.modules.module's import path: tnet.nn's layers, re-exported."""
from .. import Module

__all__ = ["Module"]
