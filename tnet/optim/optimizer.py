"""torch.optim.optimizer's names, for scripts that write their own optimizer:
`from torch.optim.optimizer import Optimizer, required`."""
from . import Optimizer, required

__all__ = ["Optimizer", "required"]
