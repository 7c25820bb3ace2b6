"""torch.distributed.nn: the collectives through which gradients flow (`import torch.distributed.nn` at the top of
CLIP's and SimCLR's losses, `torch.distributed.nn.all_gather(z)` to take every rank's embeddings as negatives)."""
from .functional import all_gather, all_reduce, reduce_scatter

__all__ = ["all_gather", "all_reduce", "reduce_scatter"]
