"""torch.func's functional_call (the rest of torch.func, vmap, grad and the other transforms, is not
there: using one raises AttributeError)."""
from .nn.utils.stateless import functional_call

__all__ = ["functional_call"]
