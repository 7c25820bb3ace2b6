"""torch.nn.modules.pooling's import path: tnet.nn's layers, re-exported."""
from .. import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, LPPool1d,
    LPPool2d, MaxPool1d, MaxPool2d, MaxUnpool1d, MaxUnpool2d)

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d",
           "AvgPool2d", "LPPool1d", "LPPool2d", "MaxPool1d", "MaxPool2d", "MaxUnpool1d", "MaxUnpool2d"]
