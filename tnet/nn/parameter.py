"""torch.nn.parameter's import path: Parameter, Buffer and the lazy layers' placeholders."""
from . import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter"]


def is_lazy(param):
    """Whether param is a lazy layer's placeholder, not yet materialized (torch's)."""
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))
