"""torch.nn.modules.pixelshuffle's import path: tnet.nn's layers, re-exported."""
from .. import (PixelShuffle, PixelUnshuffle)

__all__ = ["PixelShuffle", "PixelUnshuffle"]
