"""torch.utils's part that training scripts use: `tnet.utils.data` (Dataset, DataLoader, ...) and
`tnet.utils.checkpoint`, and `tnet.utils.model_zoo` (tnet.hub's loader) for copied model files."""
from . import checkpoint, data, model_zoo

__all__ = ["checkpoint", "data", "model_zoo"]
