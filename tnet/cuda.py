"""torch.cuda's questions a training script asks (`torch.cuda.is_available()` in
`device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`), answered for tnet: a
process has one device, tnet.DEVICE."""
import importlib
import importlib.util
import sys
import time

import torch

from . import amp as _amp
from . import factory as _factory
from ._device import DEVICE
from .factory import get_rng_state as _get_rng_state, manual_seed as _manual_seed, set_rng_state as _set_rng_state

# torch.cuda's legacy typed constructors (`torch.cuda.FloatTensor(n, c, h, w).fill_(0)`,
# `x.type(torch.cuda.FloatTensor)`): tnet's, on its one device
FloatTensor, HalfTensor, BFloat16Tensor, DoubleTensor, LongTensor, IntTensor, BoolTensor, ByteTensor = (
    _factory.FloatTensor, _factory.HalfTensor, _factory.BFloat16Tensor, _factory.DoubleTensor, _factory.LongTensor,
    _factory.IntTensor, _factory.BoolTensor, _factory.ByteTensor)


def is_available():
    """Whether tnet runs on a CUDA GPU (else on the CPU, through Triton's interpreter)."""
    return DEVICE.type == "cuda"


def device_count():
    return torch.cuda.device_count() if is_available() else 0


def current_device():
    return DEVICE.index if is_available() else 0


def synchronize(device=None):
    """Wait for the GPU's queued work (nothing to wait for on the CPU)."""
    if is_available():
        torch.cuda.synchronize(device)


def manual_seed(seed):
    """tnet.manual_seed (one stream serves the one device); returns None, as torch.cuda's."""
    _manual_seed(seed)


def manual_seed_all(seed):
    """tnet.manual_seed: one stream serves the one device."""
    _manual_seed(seed)


def set_device(device):
    """torch.cuda.set_device: tnet's device is chosen at import (LOCAL_RANK's GPU under torchrun), so
    this only checks that `device` (an index, a string or a torch.device) names it; on the CPU it
    does nothing."""
    index = device if isinstance(device, int) else torch.device(device).index
    if is_available() and index is not None and index != DEVICE.index:
        raise RuntimeError(f"set_device: tnet runs on {DEVICE}, chosen at import; got device {device!r} "
                           "(set CUDA_VISIBLE_DEVICES or LOCAL_RANK before importing tnet)")


def get_rng_state(device="cuda"):
    """tnet.get_rng_state: one generator serves the one device."""
    return _get_rng_state()


def set_rng_state(new_state, device="cuda"):
    _set_rng_state(new_state)


def get_rng_state_all():
    return [_get_rng_state()]


def set_rng_state_all(new_states):
    _set_rng_state(new_states[0])


def get_device_name(device=None):
    return torch.cuda.get_device_name(device) if is_available() else "cpu"


def empty_cache():
    """Hand the caching allocator's unused blocks back to the GPU, as torch's (tnet's memory is torch's)."""
    if is_available():
        torch.cuda.empty_cache()


def memory_allocated(device=None):
    return torch.cuda.memory_allocated(device) if is_available() else 0


def max_memory_allocated(device=None):
    return torch.cuda.max_memory_allocated(device) if is_available() else 0


def reset_peak_memory_stats(device=None):
    if is_available():
        torch.cuda.reset_peak_memory_stats(device)


def is_bf16_supported(including_emulation=True):
    """Whether bfloat16 runs: on tnet's GPU path (compute capability 8.0 and up), or on the CPU
    through the interpreter."""
    return not is_available() or torch.cuda.get_device_capability()[0] >= 8


class _HostEvent:
    """torch.cuda.Event's timing on the CPU (the interpreter runs synchronously): host clock."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.time = None

    def record(self, stream=None):
        self.time = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, end_event):
        return (end_event.time - self.time) * 1e3


Event = torch.cuda.Event if is_available() else _HostEvent  # CUDA events on the GPU, as torch's


# ---- torch.cuda.amp: autocast and GradScaler with the "cuda" device type fixed -------------------

amp = _amp.device_amp(__name__, "cuda", torch.float16)
amp.custom_fwd, amp.custom_bwd = _amp.custom_fwd, _amp.custom_bwd
_amp.add_path_modules(amp)
autocast, GradScaler = amp.autocast, amp.GradScaler


def torchs_own(module_name, torch_module, submodules):
    """The __getattr__ of a tnet module whose other names are torch_module's own (tnet.cuda's are torch.cuda's,
    tnet.xpu's torch.xpu's, ...), after putting torch_module's submodules (those named) at the tnet module's paths
    in sys.modules, as torch's own modules (`from torch.cuda.memory import ...`). It raises AttributeError for
    dunder names: the tnet module is no package, and a __path__ handed over from torch's would make the import
    system load a second copy of each torch file under tnet's name (whose relative imports then fail)."""
    for name in submodules:
        if importlib.util.find_spec(f"{torch_module.__name__}.{name}"):  # a torch of another version may lack one
            sys.modules[f"{module_name}.{name}"] = importlib.import_module(f"{torch_module.__name__}.{name}")

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        return getattr(torch_module, name)
    return __getattr__


# torch.cuda's other names (streams, device properties, memory statistics, CUDA graphs): torch's own, as tnet's
# memory, streams and graphs are torch's
__getattr__ = torchs_own(__name__, torch.cuda, ("memory", "graphs", "streams", "random", "nccl", "nvtx", "profiler"))
