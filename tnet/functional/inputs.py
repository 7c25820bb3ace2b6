"""The checks every op makes of its tensor arguments, and which of them need a gradient."""
from ..kernels.launch import InputTypeError
from ..tensor import Tensor


def needs_grad(*xs):
    """For each argument, whether it is a tnet.Tensor that requires a gradient."""
    return [isinstance(x, Tensor) and x.requires_grad for x in xs]


def check_tensors(name, **xs):
    """Each keyword argument must be a tnet.Tensor (InputTypeError, torch's TypeError, naming the op and
    the argument)."""
    for arg, x in xs.items():
        if not isinstance(x, Tensor):  # no message closure per argument: every op calls this
            raise InputTypeError(f"{name}: {arg} must be a tnet.Tensor, got {type(x).__name__}")
