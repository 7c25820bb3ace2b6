"""torch.utils._pytree, which today's training and model code maps over nested batches with
(`tree_map(lambda t: t.to(device), batch)`, `tree_map_only(torch.Tensor, ...)`): torch's own
functions, pure Python over containers, which take a tnet Tensor as a leaf."""
import torch.utils._pytree as torch_pytree

__all__ = list(torch_pytree.__all__)
globals().update({name: getattr(torch_pytree, name) for name in __all__})
