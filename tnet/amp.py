"""Mixed precision in PyTorch's style: 16-bit activations, fp32 master weights.

    with tnet.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()

Inside the block, conv2d, linear and matmul run on 16-bit operands (fp32 sums) and return
16-bit outputs; the ops after them (BatchNorm, activations, pooling, additions) keep their
input's dtype, with their statistics and sums in fp32; the losses return fp32. Parameters
stay fp32 masters with fp32 gradients: a layer reads a parameter's 16-bit copy (`low_copy`),
made on first use and then rewritten by the optimizer's kernel as it updates the parameter
(no extra pass), and by Module.load_state_dict. A parameter changed by hand through `.data`
must call `refresh_low_copies(p)`: its copy is kept for the parameter's lifetime, unlike
torch's per-block cache, so that a captured CUDA graph keeps one address for it."""
import functools

import torch

from .kernels._autotune import check
from .kernels.copy import copy_

LOW = (torch.float16, torch.bfloat16)
_state = {"dtype": None}


class autocast:
    """torch.autocast's signature: device_type ("cuda" or "cpu": tnet runs on its one device
    either way), dtype (torch.float16 or torch.bfloat16; None means torch's default for the
    device type, float16 for "cuda" and bfloat16 for "cpu"), enabled. A context manager or a
    decorator; nested blocks restore the outer one's state on exit. cache_enabled is accepted
    for torch's signature: tnet always keeps the parameters' copies (see the module's text)."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        check(device_type in ("cuda", "cpu"), f"autocast: device_type must be 'cuda' or 'cpu', got {device_type!r}")
        dtype = dtype if dtype is not None else (torch.float16 if device_type == "cuda" else torch.bfloat16)
        check(dtype in LOW, f"autocast: dtype must be torch.float16 or torch.bfloat16, got {dtype}")
        self.dtype, self.enabled = dtype, bool(enabled)
        self._previous = []

    def __enter__(self):
        self._previous.append(_state["dtype"])
        _state["dtype"] = self.dtype if self.enabled else None
        return self

    def __exit__(self, *exc):
        _state["dtype"] = self._previous.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


def get_autocast_dtype():
    """The dtype of the enclosing autocast block, or None outside one (or in a disabled one)."""
    return _state["dtype"]


def is_autocast_enabled():
    return _state["dtype"] is not None


def low_copy(p, dtype):
    """The 16-bit copy of parameter p (a tnet.Tensor holding fp32 data) in dtype: a torch
    tensor laid out as p.data, made on the first call and kept on p (p._low, by dtype)."""
    low = p.__dict__.setdefault("_low", {})
    if dtype not in low:
        low[dtype] = copy_(torch.empty_like(p.data, dtype=dtype), p.data)
    return low[dtype]


def low_copies(p):
    """p's 16-bit copies (a list, often empty)."""
    return list(p.__dict__.get("_low", {}).values())


def refresh_low_copies(p):
    """Rewrite p's 16-bit copies from p.data in place (their addresses stay)."""
    for t in low_copies(p):
        copy_(t, p.data)


def cast_operand(x, dtype):
    """The torch data of tnet.Tensor x in dtype, for a GEMM or convolution under autocast: x's
    own data when already in dtype; a parameter's (an fp32 leaf that requires grad) kept
    16-bit copy (low_copy); else a fresh cast by the copy kernel, in x's memory layout."""
    if x.dtype == dtype:
        return x.data
    if x.dtype == torch.float32 and x.requires_grad and x._entry is None:
        return low_copy(x, dtype)
    return copy_(torch.empty_like(x.data, dtype=dtype), x.data)
