"""torch.nn.modules.pooling's import path: tnet.nn's layers, re-exported."""
from .. import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d,
    MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d)

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]
