"""torch.overrides' queries, for code copied from torch's own (a forked multi_head_attention_forward's
`if has_torch_function(tens_ops): return handle_torch_function(...)`). tnet has no __torch_function__
protocol: no argument overrides an op, so the queries say False and the copied code takes its own path."""
from .tensor import Tensor


def has_torch_function(relevant_args):
    """False: no tnet argument overrides an op (torch's says so for plain tensors)."""
    return False


def has_torch_function_unary(input):
    return False


def has_torch_function_variadic(*args):
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """public_api(*args, **kwargs): with no override to hand the call to, the op runs as itself, as torch's
    does for plain tensors."""
    return public_api(*args, **kwargs)


def is_tensor_like(inp):
    """Whether inp is a tnet tensor (a Parameter too) or of a type that defines __torch_function__."""
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")
