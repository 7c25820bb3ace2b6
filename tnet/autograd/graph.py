"""torch.autograd.graph's Node, and its context managers for what autograd saves. save_on_cpu (activation offloading) is
accepted and changes nothing: tnet's saved tensors stay in device memory, and the gradients are the same numbers.
saved_tensors_hooks raises: tnet's backwards read the tensors their closures hold, so a pack hook that changed
them (compression, quantisation) could not take effect, and ignoring it would give other numbers than torch's.
register_multi_grad_hook is torch's, on tnet's register_hook and queue_callback."""
import contextlib

from ..tensor import Node  # grad_fn's class (the base of each node's own), as torch's isinstance checks ask
from ..tensor import RemovableHandle, queue_callback

__all__ = ["Node", "disable_saved_tensors_hooks", "register_multi_grad_hook", "save_on_cpu", "saved_tensors_hooks"]


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


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """torch's: a hook over several tensors' gradients, once per backward. mode="all": fn(grads), grads a
    list in tensors' order with None for those the backward computed no gradient for; every tensor must
    require grad. Difference: tnet calls it when the backward finishes, not as soon as the last of the
    gradients is computed (the same gradients; torch's engine knows in advance which it will compute).
    mode="any": fn(grad) with the first gradient computed among tensors (those that require grad).
    fn's return value is ignored, as torch's. Returns one handle whose remove() takes the hook off every
    tensor."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    if mode == "any":
        tensors = tuple(t for t in tensors if t.requires_grad)
    for t in tensors:
        if not t.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    grads = [None] * len(tensors)  # this backward's, in "all" mode
    ran = [False]  # whether this backward called fn already ("any") or queued its call ("all")

    def finish():
        out = list(grads) if mode == "all" else None
        grads[:] = [None] * len(tensors)
        ran[0] = False
        if mode == "all":
            fn(out)

    def hook_at(i):
        def hook(grad):
            first = not ran[0]
            if first:
                ran[0] = True
                queue_callback(finish)  # the end of this backward: "all" calls fn, "any" rearms
            if mode == "any":
                if first:
                    fn(grad)
            else:  # once per tensor and backward (a leaf's parts arrive summed: tensor.py's held leaves)
                grads[i] = grad if grads[i] is None else grads[i] + grad
        return hook

    dicts = [t.__dict__.setdefault("_hooks", {}) for t in tensors]
    handle = RemovableHandle({}, extra_dict=dicts)  # one id, a key in every tensor's hooks
    for i, hooks in enumerate(dicts):
        hooks[handle.id] = hook_at(i)
    return handle
