"""torch.nn.modules.transformer's import path: tnet.nn's layers, re-exported, and the private helpers that copies
of torch's transformer.py import (_get_clones, _get_activation_fn, _generate_square_subsequent_mask,
_detect_is_causal_mask, _get_seq_len)."""
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


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """The float [sz, sz] causal mask (-inf above the diagonal), as torch's: Transformer's."""
    return Transformer.generate_square_subsequent_mask(sz, device=device, dtype=dtype)


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """is_causal where given; else whether mask equals the causal mask of its size (or of size), as torch's (a host
    read of the comparison)."""
    if is_causal is not None or mask is None:
        return is_causal is True
    causal = _generate_square_subsequent_mask(size if size is not None else mask.shape[-2], dtype=mask.dtype)
    return mask.shape == causal.shape and bool((mask == causal).all())


def _get_seq_len(src, batch_first):
    """The sequence length of src: [S, E] unbatched, else [N, S, E] (batch_first) or [S, N, E]."""
    return src.shape[0] if src.ndim == 2 else src.shape[1 if batch_first else 0]
