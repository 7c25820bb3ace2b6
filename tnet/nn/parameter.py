"""torch.nn.parameter's import path: Parameter, Buffer and the lazy layers' placeholders."""
from . import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter"]
