"""torch.nn.modules.distance's import path: tnet.nn's layers, re-exported."""
from .. import (CosineSimilarity, PairwiseDistance)

__all__ = ["CosineSimilarity", "PairwiseDistance"]
