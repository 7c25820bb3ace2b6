"""torch.overrides' questions that functions copied out of torch's source ask first (`if has_torch_function(...)`:
repositories that vendor F.multi_head_attention_forward), answered for tnet: no tnet tensor overrides an op
through __torch_function__, so each question's answer is False and the function runs its own body."""
from .tensor import Tensor

__all__ = ["handle_torch_function", "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "is_tensor_like"]


def has_torch_function(relevant_args):
    return False


def has_torch_function_unary(arg):
    return False


def has_torch_function_variadic(*args):
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """What torch calls where an argument overrides public_api; with no override in tnet, public_api itself."""
    return public_api(*args, **kwargs)


def is_tensor_like(inp):
    return isinstance(inp, Tensor)
