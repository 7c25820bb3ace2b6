"""torch.xpu's questions that device-picking scripts ask (`elif torch.xpu.is_available(): device = "xpu"`, the
PyTorch tutorials' chain beside torch.backends.mps), answered for tnet: it runs on CUDA or the CPU, never on an
Intel GPU."""
import torch

from . import cuda as _cuda


def is_available():
    return False


def device_count():
    return 0


# torch.xpu's other names (manual_seed, empty_cache, synchronize) and submodules: torch's own
__getattr__ = _cuda.torchs_own(__name__, torch.xpu, ("memory", "graphs", "random", "streams"))
