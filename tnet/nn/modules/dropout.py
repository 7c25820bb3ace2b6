"""torch.nn.modules.dropout's import path: tnet.nn's layers, re-exported."""
from importlib import import_module

from .. import (AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout)

_nn = import_module("tnet.nn")  # torch's private bases, by attribute (tnet imports no private name)
_DropoutNd = _nn._DropoutNd

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout",
           "_DropoutNd"]
