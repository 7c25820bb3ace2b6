"""`triton.autotune` for tnet's kernels: the interpreter's single config, the chosen config
remembered per key, and timing as a captured training step runs a kernel."""
import os

import triton
import triton.testing

from .._device import INTERPRET

# TNET_AUTOTUNE=0 keeps the first config on the GPU too (fast compiles for test runs);
# TNET_AUTOTUNE=compile compiles and runs every config once, times none and keeps no choice: a
# warm-up of Triton's cache that parallel processes can share before one tunes undisturbed.
MODE = os.environ.get("TNET_AUTOTUNE", "1")
TUNE = MODE != "0"


def autotune(configs, key, interpret=None, **kwargs):
    """Autotune over `configs` on the GPU, keyed on `key`. The interpreter cannot benchmark
    (docs/triton.md), so there only the first config runs, with the block sizes in
    `interpret` put over it: the interpreter pays per program and per op, not per element,
    so big blocks make CPU runs many times faster."""
    every = list(configs)
    if INTERPRET:
        first = configs[0]
        configs = [triton.Config({**first.kwargs, **(interpret or {})},
                                 num_warps=first.num_warps, num_stages=first.num_stages)]
    elif not TUNE:
        configs = configs[:1]
    elif MODE == "compile":
        kwargs["do_bench"] = lambda kernel_call, quantiles: [kernel_call() or 1.0] * len(quantiles or [0])
    else:
        kwargs.setdefault("cache_results", True)  # timings kept in Triton's cache dir across runs
        kwargs.setdefault("do_bench", warm_bench)
    tuned = triton.autotune(configs, key=key, **kwargs)
    # Built by Triton, so that its constructor's arguments may change between versions;
    # only run() is replaced.
    return lambda fn: _Remembered.adopt(tuned(fn), every)


class _Remembered(triton.runtime.Autotuner):
    """Triton's autotuner that remembers, per tuning key, the chosen config's arguments.
    Triton's run() rebuilds dicts of all ~35 arguments and checks each one for a dtype on
    every launch: a fifth of a GEMM call's host time under cProfile. Here a launch with a
    known key costs one tuple and one dict lookup; a new key goes through Triton's run() as
    before. The key is Triton's: the key arguments' values and the tensor arguments' dtypes
    (tnet names every tensor argument *_ptr). Configs may not have pre-hooks, which this
    path would skip."""

    @classmethod
    def adopt(cls, tuner, every):
        assert all(c.pre_hook is None for c in tuner.configs), "_Remembered skips config pre-hooks"
        tuner.__class__ = cls
        names = tuner.arg_names
        tuner.key_args = [(names.index(k), k) for k in tuner.keys]
        tuner.tensor_args = [i for i, name in enumerate(names) if name.endswith("_ptr")]
        tuner.chosen = {}
        tuner.all_configs = every  # every config the GPU tunes over, for the tests of each one
        return tuner

    def run(self, *args, **kwargs):
        key = (*[args[i] if i < len(args) else kwargs[name] for i, name in self.key_args],
               *[getattr(args[i], "dtype", None) for i in self.tensor_args if i < len(args)])
        config = self.chosen.get(key)
        if config is None:
            ret = super().run(*args, **kwargs)
            self.chosen[key] = self.best_config.all_kwargs()
            return ret
        return self.fn.run(*args, **kwargs, **config)


def warm_bench(kernel_call, quantiles):
    """Time a config as a training step runs it: back-to-back launches replayed from a CUDA
    graph, so no host overhead, with the operands hot in L2. Triton's default flushes L2
    before every launch; for the step's small GEMMs that ranks tiles for a regime the step
    never sees (small conv tiles won the cold timing and made the captured step slower)."""
    return triton.testing.do_bench_cudagraph(kernel_call, rep=5, quantiles=quantiles)
