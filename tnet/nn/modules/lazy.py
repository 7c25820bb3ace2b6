"""torch.nn.modules.lazy's import path: LazyModuleMixin, the base of tnet's lazy layers."""
from .. import _Lazy as LazyModuleMixin

__all__ = ["LazyModuleMixin"]
