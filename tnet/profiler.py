"""torch.profiler's names, for the scripts that profile their training loop (`with torch.profiler.profile(...)`):
torch's own profiler, which records host time, torch's operations and, on a GPU, every kernel launched
(tnet's Triton kernels among them) with its CUDA time. Instrumentation only: no math runs through it."""
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

__all__ = ["ProfilerActivity", "profile", "record_function", "schedule", "tensorboard_trace_handler"]
