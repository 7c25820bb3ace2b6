"""torch.accelerator's questions (`torch.accelerator.is_available()`, `current_accelerator()`, as
pytorch/examples' scripts ask them), answered for tnet's one device: a CUDA GPU is the
accelerator; on the CPU (Triton's interpreter) there is none, as torch says there."""
import torch

from . import cuda


def is_available():
    return cuda.is_available()


def current_accelerator(check_available=False):
    """The accelerator's device type (torch.device("cuda")), or None without one."""
    return torch.device("cuda") if cuda.is_available() else None


def device_count():
    return cuda.device_count()


# torch.accelerator's other names (streams, memory statistics, synchronize) and submodules: torch's own
__getattr__ = cuda.torchs_own(__name__, torch.accelerator, ("memory", "graphs"))
