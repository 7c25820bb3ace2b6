"""torch.nn.modules.linear's import path: tnet.nn's layers, re-exported, and MultiheadAttention's
out_proj class."""
from .. import (Bilinear, Identity, LazyLinear, Linear)
from .. import transformer

NonDynamicallyQuantizableLinear = transformer.NonDynamicallyQuantizableLinear

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]
