"""torch.nn.modules.conv's import path: tnet.nn's layers, re-exported."""
from .. import (Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, LazyConv1d, LazyConv2d, LazyConvTranspose1d,
    LazyConvTranspose2d, _ConvNd, _ConvTransposeNd)

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "LazyConv1d", "LazyConv2d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "_ConvNd", "_ConvTransposeNd"]
