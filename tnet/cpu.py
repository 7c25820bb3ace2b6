"""torch.cpu's names a device-agnostic script reaches for (`torch.cpu.amp.autocast()` beside
`torch.cuda.amp.autocast()`, `torch.cpu.is_available()`, `torch.cpu.synchronize()`), answered for
tnet: a "cpu" tensor lives on tnet's one device, as every tensor does, and autocast("cpu") casts as
tnet's autocast does, to bfloat16 by default (torch.cpu.amp's)."""
import torch

from . import amp as _amp


def is_available():
    """torch.cpu.is_available: always True."""
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """Nothing to wait for, as torch's on the CPU (tnet's own work on a GPU: tnet.cuda.synchronize)."""


# torch.cpu.amp: autocast (bfloat16 by default) and GradScaler with the "cpu" device type fixed
amp = _amp.device_amp(__name__, "cpu", torch.bfloat16)
autocast, GradScaler = amp.autocast, amp.GradScaler
