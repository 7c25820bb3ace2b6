"""torch.cpu's names a device-agnostic script reaches for (`torch.cpu.amp.autocast()` beside
`torch.cuda.amp.autocast()`, `torch.cpu.is_available()`, `torch.cpu.synchronize()`), answered for
tnet: a "cpu" tensor lives on tnet's one device, as every tensor does, and autocast("cpu") casts as
tnet's autocast does, to bfloat16 by default (torch.cpu.amp's)."""
import sys
import types

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


class autocast(_amp.autocast):
    """torch.cpu.amp.autocast(enabled, dtype, cache_enabled): tnet.amp.autocast("cpu", ...)."""

    def __init__(self, enabled=True, dtype=torch.bfloat16, cache_enabled=True):
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """torch.cpu.amp.GradScaler(init_scale, ...): tnet.amp.GradScaler("cpu", ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


# tnet.cpu.amp, a module of its own in sys.modules, so that `from tnet.cpu.amp import autocast` imports
amp = types.ModuleType(__name__ + ".amp", "torch.cpu.amp's names: autocast and GradScaler for device type 'cpu'.")
amp.autocast, amp.GradScaler = autocast, GradScaler
sys.modules[amp.__name__] = amp
