"""torch.autograd.grad_mode's import path: the grad-mode blocks."""
from ..tensor import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401

__all__ = ["enable_grad", "inference_mode", "no_grad", "set_grad_enabled"]
