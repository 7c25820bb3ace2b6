"""torch.utils's part that training scripts use: `tnet.utils.data` (Dataset, DataLoader, ...)."""
from . import data

__all__ = ["data"]
