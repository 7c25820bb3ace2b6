"""torch.nn.modules.upsampling's import path: tnet.nn's layers, re-exported."""
from .. import (Upsample, UpsamplingBilinear2d, UpsamplingNearest2d)

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
