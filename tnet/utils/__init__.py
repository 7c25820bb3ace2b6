"""torch.utils's part that training scripts use: `tnet.utils.data` (Dataset, DataLoader, ...) and
`tnet.utils.checkpoint`, `tnet.utils.model_zoo` (tnet.hub's loader) for copied model files,
`tnet.utils.hooks` (RemovableHandle), and torch's `_pytree` (reached without its own import, as torch's)."""
from . import _pytree, checkpoint, data, hooks, model_zoo  # noqa: F401

__all__ = ["checkpoint", "data", "hooks", "model_zoo"]
