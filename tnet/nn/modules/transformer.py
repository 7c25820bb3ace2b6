"""torch.nn.modules.transformer's import path: tnet.nn's layers, re-exported, and its _get_clones and
_get_activation_fn."""
import copy
from importlib import import_module

from .. import (ModuleList, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                TransformerEncoderLayer)

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]


def _get_clones(module, N):
    """N deep copies of module in a ModuleList (torch's private helper, which DETR-style files import)."""
    return ModuleList([copy.deepcopy(module) for _ in range(N)])


def _get_activation_fn(activation):
    """F.relu or F.gelu for "relu" or "gelu" (torch's private helper, which DETR-style files import); RuntimeError
    for another name or a callable, as torch's."""
    if not isinstance(activation, str):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return import_module("tnet.nn.transformer")._activation(activation)  # by attribute: tnet imports no private name
