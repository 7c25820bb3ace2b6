"""torch.optim.optimizer's names, for scripts that write their own optimizer:
`from torch.optim.optimizer import Optimizer, required`, and the step hooks of every optimizer."""
from . import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook, required

__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook", "required"]
