"""torch.nn.modules.linear's import path: tnet.nn's layers, re-exported, and MultiheadAttention's out_proj class
(a forked attention layer builds its own)."""
from .. import (Bilinear, Identity, LazyLinear, Linear)
from ..transformer import NonDynamicallyQuantizableLinear

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear", "NonDynamicallyQuantizableLinear"]
