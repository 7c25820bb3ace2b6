"""torch.utils's part that training scripts use: `tnet.utils.data` (Dataset, DataLoader, ...) and
`tnet.utils.checkpoint`."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]
