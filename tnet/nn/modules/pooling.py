"""torch.nn.modules.pooling's import path: tnet.nn's layers, re-exported, and torch's private base classes."""
from importlib import import_module

from .. import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, FractionalMaxPool2d, FractionalMaxPool3d, LPPool1d, LPPool2d,
    LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d)

_nn = import_module("tnet.nn")  # torch's private bases, by attribute (tnet imports no private name)
_MaxPoolNd, _AvgPoolNd, _AdaptiveMaxPoolNd, _AdaptiveAvgPoolNd, _LPPoolNd, _MaxUnpoolNd = (
    _nn._MaxPoolNd, _nn._AvgPoolNd, _nn._AdaptiveMaxPoolNd, _nn._AdaptiveAvgPoolNd, _nn._LPPoolNd, _nn._MaxUnpoolNd)
from . import utils as _utils  # noqa: E402  (the argument helpers torch's pooling module imports)
_single, _pair, _triple = _utils._single, _utils._pair, _utils._triple

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]
