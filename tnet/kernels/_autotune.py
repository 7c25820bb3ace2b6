"""`triton.autotune` for tnet's kernels, and the launchers' input check."""
import os

import triton
import triton.testing

from .._device import INTERPRET

# TNET_AUTOTUNE=0 keeps the first config on the GPU too (fast compiles for test runs).
TUNE = os.environ.get("TNET_AUTOTUNE", "1") != "0"


def autotune(configs, key, interpret=None, **kwargs):
    """Autotune over `configs` on the GPU, keyed on `key`. The interpreter cannot benchmark
    (see TRITON_NOTES.md), so there only the first config runs, with the block sizes in
    `interpret` put over it: the interpreter pays per program and per op, not per element,
    so big blocks make CPU runs many times faster."""
    if INTERPRET:
        first = configs[0]
        configs = [triton.Config({**first.kwargs, **(interpret or {})},
                                 num_warps=first.num_warps, num_stages=first.num_stages)]
    elif not TUNE:
        configs = configs[:1]
    else:
        kwargs.setdefault("cache_results", True)  # timings kept in Triton's cache dir across runs
        kwargs.setdefault("do_bench", warm_bench)
    return triton.autotune(configs, key=key, **kwargs)


def warm_bench(kernel_call, quantiles):
    """Time a config as a training step runs it: back-to-back launches replayed from a CUDA
    graph, so no host overhead, with the operands hot in L2. Triton's default flushes L2
    before every launch; for the step's small GEMMs that ranks tiles for a regime the step
    never sees (small conv tiles won the cold timing and made the captured step slower)."""
    return triton.testing.do_bench_cudagraph(kernel_call, rep=5, quantiles=quantiles)


def check(cond, msg):
    """Raise the ValueError every launcher uses for bad shape, dtype or device. msg may be a
    function returning the text, for hot paths where building it costs launch time."""
    if not cond:
        raise ValueError(msg() if callable(msg) else msg)


def cdiv(a, b):
    """ceil(a / b) for the host side (triton.cdiv costs microseconds per call there)."""
    return -(-a // b)
