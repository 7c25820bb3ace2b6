"""torch.nn.modules.transformer's import path: tnet.nn's layers, re-exported, and its _get_clones and
_get_activation_fn."""
import copy

from .. import (ModuleList, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                TransformerEncoderLayer)
from ..transformer import activation_fn

_get_activation_fn = activation_fn  # torch's private name, which custom transformer layers import

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]


def _get_clones(module, N):
    """N deep copies of module in a ModuleList (torch's private helper, which DETR-style files import)."""
    return ModuleList([copy.deepcopy(module) for _ in range(N)])
