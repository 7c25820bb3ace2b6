"""torch.types' aliases, which model files write in their annotations (`from torch.types import Number, _size`):
torch's own (type names only; no tnet tensor passes through them)."""
import torch.types


def __getattr__(name):
    return getattr(torch.types, name)
