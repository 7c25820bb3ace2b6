"""torch.multiprocessing: Python's multiprocessing with torch's sharing strategies and spawn, which
scripts call around their loaders and workers (`mp.set_sharing_strategy('file_system')`,
`mp.spawn(main_worker, nprocs=ngpus, args=(...))` in pytorch/examples' imagenet). Process management,
not math: torch's own names."""
import torch.multiprocessing as _mp

from . import cuda as _cuda

__all__ = sorted(set(_mp.__all__) | {"spawn", "start_processes"})


# torch.multiprocessing's names (spawn, set_sharing_strategy, Process, Queue, get_context, ...) and submodules
# (`from torch.multiprocessing.spawn import ProcessRaisedException`): torch's own
__getattr__ = _cuda.torchs_own(__name__, _mp, ("pool", "queue", "reductions", "spawn"))
