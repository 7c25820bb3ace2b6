"""tnet.Tensor and the tape.

Each differentiable op calls `record(...)`, which gives its output a tape entry: the next
sequence number, the inputs, and the backward closure written beside the op's forward.
`backward()` takes the part of the tape that the output depends on and walks it in
reverse sequence order, then frees each entry's saved state.
"""
import itertools
from contextlib import contextmanager

import numpy as np
import torch

from ._device import DEVICE
from .kernels.conv import is_channels_last, memory_format
from .kernels.elementwise import add_

_seq = itertools.count()
_grad_enabled = [True]
_backward_timer = [None]


def set_backward_timer(timer):
    """timer(op, run) is called around every backward closure (op is the op's name, run()
    computes and returns the gradients); None switches it off. For per-layer profiles."""
    _backward_timer[0] = timer


@contextmanager
def no_grad():
    """Within this block ops record nothing on the tape."""
    previous, _grad_enabled[0] = _grad_enabled[0], False
    try:
        yield
    finally:
        _grad_enabled[0] = previous


class _Entry:
    __slots__ = ("seq", "op", "inputs", "backward")

    def __init__(self, op, inputs, backward):
        self.seq = next(_seq)
        self.op = op
        self.inputs = inputs
        self.backward = backward


def _as_storage(data, dtype=None):
    """A torch tensor on tnet's device from a numpy array, torch tensor, list or number:
    int64 for integer input, float32 otherwise (unless dtype says)."""
    if isinstance(data, Tensor):
        data = data.data
    if not isinstance(data, torch.Tensor):
        data = torch.from_numpy(np.array(data))
    if dtype is None:
        dtype = torch.float32 if data.is_floating_point() else torch.int64
    return data.to(device=DEVICE, dtype=dtype, copy=True).contiguous()


class Tensor:
    """A torch tensor used as device memory, plus what autograd needs."""

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._entry = None

    shape = property(lambda self: tuple(self.data.shape))
    dtype = property(lambda self: self.data.dtype)
    device = property(lambda self: self.data.device)
    ndim = property(lambda self: self.data.dim())

    def numel(self):
        return self.data.numel()

    def numpy(self):
        return self.data.detach().cpu().numpy()

    def item(self):
        return self.data.item()

    def detach(self):
        return Tensor(self.data)

    def reshape(self, *shape):
        from .functional import reshape
        return reshape(self, *shape)

    def __matmul__(self, other):
        from .functional import matmul
        return matmul(self, other)

    # Arithmetic and reductions: PyTorch's operators and methods, each a call into functional.
    def __add__(self, other):
        from . import functional as F
        return F.add(self, other)

    def __radd__(self, other):
        from . import functional as F
        return F.add(other, self)

    def __sub__(self, other):
        from . import functional as F
        return F.sub(self, other)

    def __rsub__(self, other):
        from . import functional as F
        return F.sub(other, self)

    def __mul__(self, other):
        from . import functional as F
        return F.mul(self, other)

    def __rmul__(self, other):
        from . import functional as F
        return F.mul(other, self)

    def __truediv__(self, other):
        from . import functional as F
        return F.div(self, other)

    def __rtruediv__(self, other):
        from . import functional as F
        return F.div(other, self)

    def __neg__(self):
        from . import functional as F
        return F.neg(self)

    def __pow__(self, exponent):
        from . import functional as F
        return F.pow(self, exponent)

    def exp(self):
        from . import functional as F
        return F.exp(self)

    def log(self):
        from . import functional as F
        return F.log(self)

    def sqrt(self):
        from . import functional as F
        return F.sqrt(self)

    def sum(self, dim=None, keepdim=False):
        from . import functional as F
        return F.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        from . import functional as F
        return F.mean(self, dim, keepdim)

    def max(self, dim=None, keepdim=False):
        from . import functional as F
        return F.max(self, dim, keepdim)

    def argmax(self, dim=None, keepdim=False):
        from . import functional as F
        return F.argmax(self, dim, keepdim)

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tnet.Tensor({self.numpy()!r}{grad})"

    def backward(self, grad=None):
        """Accumulate d(self)/d(leaf) * grad into every leaf's .grad that requires it."""
        if not self.requires_grad:
            raise RuntimeError("backward: this tensor does not require grad (no input did, or it was made under no_grad)")
        if grad is None:
            if self.data.numel() != 1:
                raise ValueError(f"backward: grad can be omitted only for a scalar, this tensor is {self.shape}")
            grad = torch.ones_like(self.data)
        else:
            grad = _as_storage(grad, torch.float32)
            if tuple(grad.shape) != self.shape:
                raise ValueError(f"backward: grad is {tuple(grad.shape)} but the tensor is {self.shape}")

        if self._entry is None:  # a leaf: its own gradient is the seed
            _accumulate_leaf(self, grad)
            return
        # The part of the tape this tensor depends on, found without recursion.
        entries, stack, seen = [], [self], set()
        while stack:
            t = stack.pop()
            if t._entry is not None and id(t) not in seen:
                seen.add(id(t))
                entries.append(t)
                stack.extend(x for x in t._entry.inputs if x.requires_grad)
        grads = {id(self): grad}
        for t in sorted(entries, key=lambda t: t._entry.seq, reverse=True):
            g = grads.pop(id(t), None)
            entry = t._entry
            if entry.backward is None:
                raise RuntimeError("backward: this part of the graph was already freed by an earlier backward()")
            if g is not None:
                g = _in_layout(g, t.data)
                timer = _backward_timer[0]
                gxs = entry.backward(g) if timer is None else timer(entry.op, lambda: entry.backward(g))
                for x, gx in zip(entry.inputs, gxs):
                    if gx is None or not x.requires_grad:
                        continue
                    assert tuple(gx.shape) == x.shape, f"gradient {tuple(gx.shape)} for input {x.shape}"
                    if x._entry is None:
                        _accumulate_leaf(x, gx)
                    elif id(x) in grads:  # used twice: a fresh buffer, as gx may be a view
                        grads[id(x)] = add_(grads[id(x)].clone(), gx)
                    else:
                        grads[id(x)] = gx
            entry.backward = None  # frees what the closure saved
            entry.inputs = ()


def _in_layout(g, like):
    """g, contiguous in the memory layout (NCHW or channels-last) of `like`, the tensor it is
    the gradient of: kernels take their operands in one layout, and ops such as reshape or
    a user's seed hand back NCHW. A copy only where the layouts differ."""
    return g.contiguous(memory_format=memory_format(is_channels_last(like)))  # g itself if already so


def _accumulate_leaf(x, g):
    g = _in_layout(g, x.data)
    if x.grad is None:
        x.grad = Tensor(g.clone() if g._base is not None else g)
    else:
        add_(x.grad.data, g)


def record(op, data, inputs, backward):
    """Wrap the output of op (its name); put it on the tape when grad is on and an input
    requires it."""
    out = Tensor(data)
    if _grad_enabled[0] and any(x.requires_grad for x in inputs):
        out.requires_grad = True
        out._entry = _Entry(op, tuple(inputs), backward)
    return out


def tensor(data, requires_grad=False, dtype=None):
    """A tnet.Tensor from a numpy array, torch tensor or list: float32 by default, int64 stays int64."""
    t = Tensor(_as_storage(data, dtype), requires_grad=requires_grad)
    if requires_grad and not t.data.is_floating_point():
        raise ValueError(f"tensor: only floating-point tensors can require grad, got {t.dtype}")
    return t


def is_grad_enabled():
    return _grad_enabled[0]
