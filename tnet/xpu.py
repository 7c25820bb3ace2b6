"""torch.xpu's questions that device-picking scripts ask (`elif torch.xpu.is_available(): device = "xpu"`, the
PyTorch tutorials' chain beside torch.backends.mps), answered for tnet: it runs on CUDA or the CPU, never on an
Intel GPU."""
import torch


def is_available():
    return False


def device_count():
    return 0


def __getattr__(name):
    """torch.xpu's other names (manual_seed, empty_cache, synchronize): torch's own."""
    return getattr(torch.xpu, name)
