"""torch.cuda.amp's names, as torch keeps them (deprecated there in favour of torch.amp): autocast
and GradScaler with their "cuda" device type fixed (tnet.amp's, on tnet's one device)."""
import torch

from .. import amp


class autocast(amp.autocast):
    """torch.cuda.amp.autocast(enabled, dtype, cache_enabled): tnet.amp.autocast("cuda", ...)."""

    def __init__(self, enabled=True, dtype=torch.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """torch.cuda.amp.GradScaler(init_scale, ...): tnet.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
