"""torch.nn.parallel's names: DataParallel on tnet's one device, and DistributedDataParallel
(tnet.distributed's, for several processes under torchrun), also at torch's module paths
torch.nn.parallel.data_parallel and torch.nn.parallel.distributed."""
import sys
import types

from . import Module


class DataParallel(Module):
    """torch.nn.DataParallel on tnet's one device: a process drives one GPU, so forward is the
    module's (device_ids, output_device and dim are accepted; for several GPUs run
    tnet.distributed.DistributedDataParallel under torchrun). As torch's, the module is
    `.module` and the state_dict's keys carry the "module." prefix."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def __getattr__(name):
    if name == "DistributedDataParallel":  # imported late: tnet.distributed imports tnet.nn
        from ..distributed import DistributedDataParallel
        return DistributedDataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# torch.nn.parallel's submodules, for their import paths (`from torch.nn.parallel.distributed import
# DistributedDataParallel`); the second finds DistributedDataParallel through this module's __getattr__, late
data_parallel = types.ModuleType(f"{__name__}.data_parallel", "torch.nn.parallel.data_parallel's DataParallel")
data_parallel.DataParallel = DataParallel
distributed = types.ModuleType(f"{__name__}.distributed", "torch.nn.parallel.distributed's DistributedDataParallel")
distributed.__getattr__ = __getattr__
sys.modules[data_parallel.__name__], sys.modules[distributed.__name__] = data_parallel, distributed
