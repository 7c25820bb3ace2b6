"""torch.utils.hooks' RemovableHandle, which the register_*hook methods return (scripts import it for
their type hints, `handles: List[RemovableHandle]`)."""
from ..tensor import RemovableHandle

__all__ = ["RemovableHandle"]
