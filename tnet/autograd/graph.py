"""torch.autograd.graph's Node, and its context managers for what autograd saves. save_on_cpu (activation offloading) is
accepted and changes nothing: tnet's saved tensors stay in device memory, and the gradients are the same numbers.
saved_tensors_hooks raises: tnet's backwards read the tensors their closures hold, so a pack hook that changed
them (compression, quantisation) could not take effect, and ignoring it would give other numbers than torch's."""
import contextlib

from ..tensor import Node  # grad_fn's class (the base of each node's own), as torch's isinstance checks ask

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]


class saved_tensors_hooks:
    """torch's pack/unpack hooks on saved tensors: not supported (raises NotImplementedError)."""

    def __init__(self, pack_hook, unpack_hook):
        raise NotImplementedError("autograd.graph.saved_tensors_hooks is not supported: tnet's backwards read the "
                                  "tensors they hold, and a pack hook could not change them")


class save_on_cpu(contextlib.nullcontext):
    """torch's offloading of saved tensors to host memory during a block: accepted; the tensors stay on the
    device (the same gradients)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__()


class disable_saved_tensors_hooks(contextlib.ContextDecorator):
    """torch's switch that makes saved_tensors_hooks raise inside the block: tnet's always does."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
