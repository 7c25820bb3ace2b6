"""torch.nn.modules.transformer's import path: tnet.nn's layers, re-exported, and its _get_clones."""
import copy

from .. import (ModuleList, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                TransformerEncoderLayer)

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]


def _get_clones(module, N):
    """N deep copies of module in a ModuleList (torch's private helper, which DETR-style files import)."""
    return ModuleList([copy.deepcopy(module) for _ in range(N)])
