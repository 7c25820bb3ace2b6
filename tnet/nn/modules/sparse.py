"""torch.nn.modules.sparse's import path: tnet.nn's layers, re-exported."""
from .. import (Embedding, EmbeddingBag)

__all__ = ["Embedding", "EmbeddingBag"]
