"""torch.multiprocessing: Python's multiprocessing with torch's sharing strategies and spawn, which
scripts call around their loaders and workers (`mp.set_sharing_strategy('file_system')`,
`mp.spawn(main_worker, nprocs=ngpus, args=(...))` in pytorch/examples' imagenet). Process management,
not math: torch's own names."""
import torch.multiprocessing as _mp

__all__ = sorted(set(_mp.__all__) | {"spawn", "start_processes"})


def __getattr__(name):
    """torch.multiprocessing's names (spawn, set_sharing_strategy, Process, Queue, get_context, ...)."""
    return getattr(_mp, name)

