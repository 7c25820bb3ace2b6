"""torch.nn.modules.dropout's import path: tnet.nn's layers, re-exported."""
from .. import (AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout, _DropoutNd)

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout",
           "_DropoutNd"]
