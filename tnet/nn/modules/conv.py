"""torch.nn.modules.conv's import path: tnet.nn's layers, re-exported."""
from importlib import import_module

from .. import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, LazyConv1d, LazyConv2d,
    LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d)

_nn = import_module("tnet.nn")  # torch's private bases, by attribute (tnet imports no private name)
_ConvNd, _ConvTransposeNd = _nn._ConvNd, _nn._ConvTransposeNd
# the argument helpers torch's conv module imports, which deformable-convolution files import from it
from . import utils as _utils  # noqa: E402
_single, _pair, _triple = _utils._single, _utils._pair, _utils._triple
_reverse_repeat_tuple = _utils._reverse_repeat_tuple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "_ConvNd", "_ConvTransposeNd"]
