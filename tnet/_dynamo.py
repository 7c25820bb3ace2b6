"""torch._dynamo's names that training scripts touch around torch.compile (`torch._dynamo.config
.cache_size_limit = 64`, `suppress_errors = True`, `torch._dynamo.reset()`, `mark_dynamic`): tnet
traces nothing (tnet.compile returns the model as it is), so a setting is kept and read back and
changes nothing; one never set raises AttributeError."""
from types import SimpleNamespace

from .compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset

__all__ = ["allow_in_graph", "assume_constant_result", "config", "disable", "is_compiling", "mark_dynamic",
           "mark_static", "maybe_mark_dynamic", "reset"]

config = SimpleNamespace()


def mark_dynamic(t, index, *, min=None, max=None):
    """A dynamic-shape hint for dynamo: nothing to do."""


def maybe_mark_dynamic(t, index):
    """A dynamic-shape hint for dynamo: nothing to do."""


def mark_static(t, index=None):
    """A static-shape hint for dynamo: nothing to do."""
