"""`triton.autotune` and `triton.jit` for tnet's kernels: the interpreter's single config, the
chosen config remembered per key, timing as a captured training step runs a kernel, and a launch
that skips Triton's per-call Python once a kernel is compiled for its arguments' specialization."""
import concurrent.futures
import functools
import os

import torch
import triton
import triton.testing

from .._device import INTERPRET
from .launch import kept, next_power_of_2, plain

def _patch_nested_calls_once():
    """In the interpreter, a @triton.jit helper called from a kernel re-patches triton.language on
    every call (Triton's InterpretedFunction.__call__ runs _patch_lang, an inspect.getmembers walk
    of about 2 ms), though the kernel's launch has patched the same modules already: a quarter of a
    CPU test's time. Where triton.language's builtins are patched (tl.load is no builtin then), the
    helper runs without it (each module it sees as triton.language already patched); elsewhere
    Triton's own call runs. Triton versions without that layout
    keep their own."""
    from triton.runtime import interpreter
    call = getattr(interpreter.InterpretedFunction, "__call__", None)
    if call is None or not hasattr(interpreter.InterpretedFunction, "rewrite"):
        return
    import inspect
    language = (triton.language, triton.language.core)
    langs = {}  # helper -> the language modules it sees, as _patch_lang finds them

    def __call__(self, *args, **kwargs):
        seen = langs.get(self.fn)
        if seen is None:
            seen = langs[self.fn] = [v for v in self.fn.__globals__.values() if inspect.ismodule(v) and v in language]
        if not seen or any(getattr(lang.load, "__triton_builtin__", False) for lang in seen):  # not patched yet
            return call(self, *args, **kwargs)
        try:
            return self.rewrite()(*args, **kwargs)
        except Exception as e:
            raise interpreter.InterpreterError(repr(e)) from e
    interpreter.InterpretedFunction.__call__ = __call__


def _skip_discarded_overflow_checks():
    """The interpreter's int add, sub and mul each run Triton's overflow check
    (binary_op_sanitize_overflow_impl: both operands cast to int64, the op again, two comparisons),
    whose only effect is a device_assert, which does nothing without the interpreter's options.debug
    (always False: the interpreter builds its options with the defaults): a third of a CPU test's time,
    discarded. Without debug the check is skipped; with it, Triton's own runs. Triton versions
    without that layout keep their own."""
    from triton.runtime import interpreter
    semantic = getattr(interpreter, "interpreter_semantic", None)
    check = getattr(type(semantic), "binary_op_sanitize_overflow_impl", None)
    if check is None or not hasattr(type(semantic), "device_assert"):
        return

    def binary_op_sanitize_overflow_impl(lhs, rhs, binary_op):
        if semantic.builder.options.debug:
            check(semantic, lhs, rhs, binary_op)
    semantic.binary_op_sanitize_overflow_impl = binary_op_sanitize_overflow_impl


def _list_builtins_once():
    """Each launch in the interpreter patches triton.language's builtins (_patch_builtin: an
    inspect.getmembers walk of five modules, about a twentieth of a CPU test's time) to find the same
    names every time: the names are listed once, at the first walk of a module, and each launch patches
    those of them that are builtins then, as the walk would. Triton versions without that layout keep
    their own."""
    from triton.runtime import interpreter
    walk, patch = getattr(interpreter, "_patch_builtin", None), getattr(interpreter, "_patch_attr", None)
    is_builtin = getattr(triton.language.core, "is_builtin", None)
    if walk is None or patch is None or is_builtin is None:
        return
    import inspect
    names = {}  # id(module) -> the names of its builtins

    def _patch_builtin(pkg, builder, scope):
        listed = names.get(id(pkg))
        if listed is None:
            listed = names[id(pkg)] = [name for name, member in inspect.getmembers(pkg) if is_builtin(member)]
        for name in listed:
            member = getattr(pkg, name)
            if is_builtin(member):
                patch(pkg, name, member, builder, scope)
    interpreter._patch_builtin = _patch_builtin


def _np_dtypes_once():
    """The interpreter's _get_np_dtype builds its table of 19 numpy dtypes at every call (a few
    hundred thousand calls in a CPU test file): the scalar dtypes' answers are kept, a block's taken
    from its element's, a pointer's (unhashable) asked of Triton's as before. Triton versions without
    that function keep their own."""
    from triton.runtime import interpreter
    get = getattr(interpreter, "_get_np_dtype", None)
    block, pointer = getattr(triton.language, "block_type", None), getattr(triton.language, "pointer_type", None)
    if get is None or block is None or pointer is None:
        return
    answers = {}

    def _get_np_dtype(tt_dtype):
        if isinstance(tt_dtype, block):
            tt_dtype = tt_dtype.element_ty
        if isinstance(tt_dtype, pointer):
            return get(tt_dtype)
        answer = answers.get(tt_dtype)
        if answer is None:
            answer = answers[tt_dtype] = get(tt_dtype)
        return answer
    interpreter._get_np_dtype = _get_np_dtype


if INTERPRET:
    _patch_nested_calls_once()
    _skip_discarded_overflow_checks()
    _list_builtins_once()
    _np_dtypes_once()

# TNET_AUTOTUNE=0 keeps the first config on the GPU too (fast compiles for test runs);
# TNET_AUTOTUNE=compile compiles and runs every config once, times none and keeps no choice: a
# warm-up of Triton's cache that parallel processes can share before one tunes undisturbed;
# TNET_AUTOTUNE=compile:I/N does so for the configs whose index is I modulo N (the first where
# none is), so that N processes split one model's configs.
MODE = os.environ.get("TNET_AUTOTUNE", "1")
TUNE = MODE != "0"
# Threads that compile a new tuning key's configs at once on the GPU (_Remembered.compile_configs); 1: one
# after another, as Triton's autotuner does
COMPILE_THREADS = int(os.environ.get("TNET_COMPILE_THREADS", min(8, os.cpu_count() or 1)))


def compile_shard(mode):
    """(I, N) of a TNET_AUTOTUNE compile mode ((0, 1) for 'compile'), None for the other modes."""
    if mode == "compile":
        return 0, 1
    if not mode.startswith("compile:"):
        return None
    i, _, n = mode[len("compile:"):].partition("/")
    if not (i.isdigit() and n.isdigit() and int(i) < int(n)):
        raise ValueError(f"TNET_AUTOTUNE={mode!r}: expected 0, 1, compile or compile:I/N with 0 <= I < N")
    return int(i), int(n)


SHARD = compile_shard(MODE)


def autotune(configs, key, interpret=None, **kwargs):
    """Autotune over `configs` on the GPU, keyed on `key`. The interpreter cannot benchmark
    (docs/triton.md), so there only the first config runs, with the block sizes in
    `interpret` put over it: the interpreter pays per program and per op more than per element,
    so big blocks make CPU runs many times faster. A value of `interpret` may be fitted to each
    launch (`fit`), where no test has chosen another config (tests/helpers.py's only_config)."""
    every = list(configs)
    fitted = {}
    if INTERPRET:
        first, interpret = configs[0], interpret or {}
        fitted = {k: v for k, v in interpret.items() if callable(v)}
        blocks = {k: getattr(v, "most", v) for k, v in interpret.items()}  # a fitted block's largest
        configs = [triton.Config({**first.kwargs, **blocks}, num_warps=first.num_warps, num_stages=first.num_stages)]
    elif not TUNE:
        configs = configs[:1]
    elif SHARD is not None:
        configs = configs[SHARD[0]::SHARD[1]] or configs[:1]
        kwargs["do_bench"] = lambda kernel_call, quantiles: [kernel_call() or 1.0] * len(quantiles or [0])
    else:
        kwargs.setdefault("cache_results", True)  # timings kept in Triton's cache dir across runs
        kwargs.setdefault("do_bench", warm_bench)
    tuned = triton.autotune(configs, key=key, **kwargs)
    # Built by Triton, so that its constructor's arguments may change between versions;
    # only run() is replaced.
    def make(fn):
        jitted = jit_fast(fn)
        kernel = _Remembered.adopt(tuned(jitted), every)
        kernel.jitted = jitted  # untuned, for a launch of its own config
        kernel.fitted = fitted  # the interpreter's blocks fitted to each launch, while its own config runs
        kernel.interpreted = kernel.configs
        return kernel
    return make


def fit(size, most, least=16):
    """An interpreter block (a value of autotune's `interpret`): the least power of 2 at least `size`,
    within [least, most], where size names an argument of the kernel or is a function of them all
    (by name). The interpreter pays for masked lanes as for live ones, so a block far past the data
    wastes most of a launch. The kernel's config holds `most` (what the host reads of it)."""
    def block(args):
        return min(most, max(least, next_power_of_2(args[size] if isinstance(size, str) else size(args))))
    block.most = most
    return block


def jit(fn):
    """triton.jit, launched by _Fast on the GPU (the kernels tnet launches; not their helpers)."""
    return jit_fast(triton.jit(fn))


def jit_fast(fn):
    """A triton.jit function made a _Fast one (in the interpreter, left as it is)."""
    if not INTERPRET and isinstance(fn, triton.runtime.JITFunction):
        _Fast.adopt(fn)
    return fn


def _spec(a):
    """A non-constexpr argument as _Fast's key holds it: a tensor as its dtype and whether its
    address is a multiple of 16, a float or a bool as its type alone, a tuple element by element,
    anything else (an int, None) by its value. Triton 3.x specializes a kernel on a tensor's dtype
    and 16-byte alignment, an int's type (i32, i64, u64), whether it is 1 and whether a multiple
    of 16, a float's or a bool's type: this key tells apart every pair of calls that Triton does,
    and more (ints are shapes: few values each)."""
    cls = a.__class__
    if cls is int:
        return a
    if cls is torch.Tensor:
        return (a.dtype, a.data_ptr() % 16 == 0)
    if cls is float or cls is bool:
        return cls
    if cls is tuple:  # an optimizer's tensors, Nones and floats: their cases inlined (a launch holds dozens)
        return tuple([i if (c := i.__class__) is int or i is None else (i.dtype, i.data_ptr() % 16 == 0)
                      if c is torch.Tensor else c if c is float else _spec(i) for i in a])
    if isinstance(a, torch.Tensor):  # a subclass
        return (a.dtype, a.data_ptr() % 16 == 0)
    return a


def _int_tuples(args):
    """Whether every tuple among args holds ints alone, at any depth: then each is its own _spec."""
    return all(_ints(a) for a in args if type(a) is tuple)


def _ints(t):
    return all(type(i) is int or (type(i) is tuple and _ints(i)) for i in t)


def _hooks_set():
    """Whether a launch enter or exit hook is set (a profiler's): then Triton's own path runs.
    Triton 3.x's hooks are HookChains, empty unless a profiler adds one (never None: a None test
    would take every launch for a hooked one); other versions' are a function or None."""
    enter, leave = _RUNTIME.launch_enter_hook, _RUNTIME.launch_exit_hook
    return bool(getattr(enter, "calls", enter) or getattr(leave, "calls", leave))


_RUNTIME = triton.knobs.runtime


class _Fast(triton.runtime.JITFunction):
    """A JITFunction whose launch, once compiled for a call's specialization, skips Triton's
    run(): its binder, cache key, option and hook handling cost several times the launch itself
    (docs/results.md). The compiled kernel is kept per key (constexprs and options by value, the
    other arguments by _spec) and launched with Triton's own launcher. Triton's path stays for
    the first call of each key, for warm-up compiles, and while a launch hook is set (profilers)."""

    @classmethod
    def adopt(cls, fn):
        fn.__class__ = cls
        fn.fast = {}
        constexpr = [p.is_constexpr for p in fn.params]
        fn.constexpr_at = tuple(constexpr)
        # positional arguments before the first constexpr parameter go through _spec as they are
        fn.plain_args = constexpr.index(True) if True in constexpr else len(constexpr)
        fn.specialized = {p.name for p in fn.params if not p.is_constexpr}  # other keywords: options, by value
        fn.defaults = {p.name: p.default for p in fn.params if p.has_default}
        # Until a call passes a tuple holding more than ints (tensors, floats), the key takes each
        # tuple as it is (shapes and strides: _spec's value at no cost); from then on, by _spec.
        fn.int_tuples = True
        return fn

    def __getitem__(self, grid):
        return functools.partial(self.run, grid=grid, warmup=False)  # Triton's lambda, in C

    def key(self, args, kwargs):
        """A call's specialization: constexprs and options by value, the other arguments by _spec."""
        if len(args) <= self.plain_args and self.int_tuples:
            positional = tuple([a if (c := a.__class__) is int or c is tuple else  # _spec, inlined where common
                                (a.dtype, a.data_ptr() % 16 == 0) if c is torch.Tensor else _spec(a) for a in args])
        elif len(args) <= self.plain_args:
            positional = tuple([a if a.__class__ is int else _spec(a) for a in args])
        else:
            positional = tuple([a if const else _spec(a) for a, const in zip(args, self.constexpr_at)])
        return positional, (tuple(kwargs.items()) if self.specialized.isdisjoint(kwargs) else
                            tuple([(k, _spec(v) if k in self.specialized else v) for k, v in kwargs.items()]))

    def run(self, *args, grid, warmup, **kwargs):
        if warmup or _hooks_set():
            return super().run(*args, grid=grid, warmup=warmup, **kwargs)
        key = self.key(args, kwargs)
        entry = self.fast.get(key)
        if entry is None:
            if self.int_tuples and not _int_tuples(args):
                self.int_tuples = False
                self.fast.clear()  # keys that held such tuples as they are
                key = self.key(args, kwargs)
            kernel = super().run(*args, grid=grid, warmup=warmup, **kwargs)
            if hasattr(kernel, "result"):  # a future, where Triton compiles asynchronously
                kernel = kernel.result()
            # the parameters after the positional ones, each from the keywords or its default
            kept(self.fast, key, lambda: (kernel, *_launcher(kernel), [(name, name in kwargs, self.defaults.get(name))
                                                                       for name in self.arg_names[len(args):]]))
            driver = triton.runtime.driver.active  # started by the launch above
            # the current stream of tnet's one device (the device's index looked up once)
            self.stream = functools.partial(driver.get_current_stream, driver.get_current_device())
            return kernel
        return self.launch(entry, args, kwargs, grid)

    def bound(self, grid, args, kwargs):
        """The Bound launch of a call seen before (None where none is kept)."""
        entry = self.fast.get(self.key(args, kwargs))
        return None if entry is None else Bound(self, entry, grid, args, kwargs)

    def launch(self, entry, args, kwargs, grid):
        """Launch a kept (kernel, the parameters after the positional ones) with Triton's launcher."""
        kernel, run, head, rest = entry
        values = (*args, *_after(rest, kwargs))
        if callable(grid):  # tnet's grids read keyword constexprs alone (a config's block sizes)
            grid = grid(kwargs)
        run(grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1, self.stream(), *head, *values)
        return kernel


def _after(rest, kwargs):
    """The values of the parameters after the positional ones (an entry's rest: each one's name, whether
    the call gives it as a keyword, its default)."""
    return tuple([kwargs[name] if given else default for name, given, default in rest])


# Triton versions whose C launcher takes (grid, stream, function, cooperative, pdl, global scratch,
# profile scratch, metadata, launch metadata, enter hook, exit hook, *arguments): their CudaLauncher
# passes its call on in that order (later versions reorder it).
DIRECT_LAUNCH_VERSIONS = ("3.6.",)


class Bound:
    """A kernel's launch for one specialization, with its grid and the parameters after the
    positional ones fixed. bound(*args) launches it on positional arguments alike the bound call's
    in all but the tensors' addresses and the floats' values: the caller's key vouches for the
    rest (ints, strides, which arguments are tensors), and little else is checked, so that a
    launch costs the C launcher and little more. The tensors go to it as their addresses
    (ints: the launcher then skips its own data_ptr() and pointer check); a tensor off 16 bytes
    (the bound call's were all on them) or a launch hook set since (a profiler's) sends the call
    back to the kernel's own path: __call__ returns False then, True after a launch. So does a
    tensor of another dtype than the bound call's there (a dtype is the one thing a caller's key
    misses most easily, and reading memory as another dtype fails silently)."""
    __slots__ = ("run", "head", "grid", "tail", "stream", "tensors")

    def __init__(self, fn, entry, grid, args, kwargs):
        _, self.run, self.head, rest = entry
        self.tail = _after(rest, kwargs)
        grid = grid(kwargs) if callable(grid) else grid
        self.grid = (*grid, 1, 1)[:3]
        self.stream = fn.stream
        self.tensors = tuple((i, a.dtype) for i, a in enumerate(args) if isinstance(a, torch.Tensor))

    def __call__(self, *args):
        args = list(args)
        low = 0
        for i, dtype in self.tensors:
            t = args[i]
            if t.dtype is not dtype:
                return False
            args[i] = p = t.data_ptr()
            low |= p
        if low & 15 or _hooks_set():
            return False
        grid = self.grid
        self.run(grid[0], grid[1], grid[2], self.stream(), *self.head, *args, *self.tail)
        return True


def bind(kernel, grid, args, kwargs):
    """After kernel[grid](*args, **kwargs) ran: its Bound launch, or None where the kernel has none
    (the interpreter, Triton's own path under a launch hook, a tensor argument off 16 bytes, an
    autotuned kernel before its config is kept)."""
    if INTERPRET or getattr(kernel, "bound", None) is None or _hooks_set():
        return None
    low = 0
    for a in args:
        if isinstance(a, torch.Tensor):
            low |= a.data_ptr()
    return None if low & 15 else kernel.bound(grid, args, kwargs)


def launch_kept(cache, key, kernel, grid, args, kwargs):
    """kernel[grid](*args, **kwargs) through cache[key], a Bound kept by an earlier call, where it
    serves them; else by the kernel's own path, keeping its Bound for the next call. key must
    decide all of the call but the tensors' addresses and dtypes and the floats' values (see
    Bound); key None: a call that none may serve (its ints specialize by value), launched by the
    kernel's own path."""
    bound = None if key is None else cache.get(key)
    if bound is not None and bound(*args):
        return
    kernel[grid](*args, **kwargs)
    if bound is None and key is not None:
        bound = bind(kernel, grid, args, kwargs)
        if bound is not None:
            kept(cache, key, lambda: bound)


def _launcher(kernel):
    """(run, head): a compiled kernel's launch as run(grid x, y, z, stream, *head, *arguments). Where
    the kernel needs no scratch memory and Triton's C launcher is known (DIRECT_LAUNCH_VERSIONS), run
    is that launcher itself: its Python wrapper (CudaLauncher.__call__) only allocates the scratch,
    and with the property that makes it costs about a microsecond a launch. Else Triton's launcher."""
    launcher = kernel.run
    if triton.__version__.startswith(DIRECT_LAUNCH_VERSIONS) and hasattr(launcher, "launch") and \
            launcher.global_scratch_size == 0 and launcher.profile_scratch_size == 0:
        return launcher.launch, (kernel.function, launcher.launch_cooperative_grid, launcher.launch_pdl, None, None,
                                 kernel.packed_metadata, None, None, None)
    return launcher, (kernel.function, kernel.packed_metadata, None, None, None)


class _Remembered(triton.runtime.Autotuner):
    """Triton's autotuner that remembers, per tuning key, the chosen config's arguments, and per
    specialization (_Fast's key of the call) the config and the compiled kernel. Triton's run()
    rebuilds dicts of all ~35 arguments and checks each one for a dtype on every launch: a fifth
    of a GEMM call's host time under cProfile. Here a launch seen before costs _Fast's key and one
    dict lookup; a new tuning key goes through Triton's run() as before. The tuning key is
    Triton's: the key arguments' values and the tensor arguments' dtypes (tnet names every tensor
    argument *_ptr); _Fast's key holds both where the key arguments are constexprs (held by value) or
    plain (ints, strings). Configs may not have pre-hooks, which this path would skip."""

    @classmethod
    def adopt(cls, tuner, every):
        assert all(c.pre_hook is None for c in tuner.configs), "_Remembered skips config pre-hooks"
        tuner.__class__ = cls
        names = tuner.arg_names
        tuner.key_args = [(names.index(k), k) for k in tuner.keys]
        # the key arguments that _Fast's key holds by _spec, not by value: all but the constexprs
        constexpr = getattr(tuner.fn, "constexpr_at", None)
        tuner.spec_keys = [i for i, (at, _) in enumerate(tuner.key_args) if constexpr is None or not constexpr[at]]
        tuner.tensor_args = [i for i, name in enumerate(names) if name.endswith("_ptr")]
        tuner.chosen = {}  # tuning key -> the chosen config's arguments
        tuner.launches = {}  # _Fast's key of a call -> (those arguments, _Fast's entry)
        tuner.all_configs = every  # every config the GPU tunes over, for the tests of each one
        TUNERS.append(tuner)
        return tuner

    def run(self, *args, grid, warmup, **kwargs):
        fn = self.fn
        fast = fn.__class__ is _Fast and not warmup and not _hooks_set()  # not in the interpreter
        if fast:
            key = fn.key(args, kwargs)
            seen = self.launches.get(key)
            if seen is not None:
                config, entry = seen
                return fn.launch(entry, args, {**kwargs, **config}, grid)
        tuning = [args[i] if i < len(args) else kwargs[name] for i, name in self.key_args]
        dtypes = [getattr(args[i], "dtype", None) for i in self.tensor_args if i < len(args)]
        if self.fitted and self.configs is self.interpreted:  # not a test's choice of a config (only_config)
            meta = self.chosen[(*tuning, *dtypes)] = self.launch_blocks(args, kwargs)
            return fn.run(*args, grid=grid, warmup=warmup, **kwargs, **meta)
        config = self.chosen.get((*tuning, *dtypes))
        if config is None:
            if fast:
                self.compile_configs(args, grid, kwargs)
            ret = super().run(*args, grid=grid, warmup=warmup, **kwargs)
            self.chosen[(*tuning, *dtypes)] = self.best_config.all_kwargs()
            return ret
        meta = {**kwargs, **config}
        kernel = fn.run(*args, grid=grid, warmup=warmup, **meta)
        if fast and plain(*[tuning[i] for i in self.spec_keys]):
            entry = fn.fast.get(fn.key(args, meta))
            if entry is not None:  # keyed anew: the run may have changed how fn keys tuples
                kept(self.launches, fn.key(args, kwargs), lambda: (config, entry))
        return kernel

    def launch_blocks(self, args, kwargs):
        """The interpreter's config with its fitted blocks (autotune's `fit`) worked out for this launch, in
        their order: each sees the arguments by name and the blocks before it."""
        meta = self.configs[0].all_kwargs()
        named = {**dict(zip(self.arg_names, args)), **kwargs}
        for name, block in self.fitted.items():
            meta[name] = block({**named, **meta})
        return meta

    def compile_configs(self, args, grid, kwargs):
        """Compile the configs that Triton's run() is about to time for a new tuning key, all at once, in
        COMPILE_THREADS threads (Triton's AsyncCompileMode): most of a compile runs outside Python (MLIR's
        and LLVM's passes, ptxas), so the configs can compile side by side instead of one after another.
        Triton's timing then finds them compiled, or in its disk cache. Anything that
        fails here (a config that does not compile, a Triton without AsyncCompileMode) is left to
        Triton's own path, which compiles it again and reports it as it always has."""
        mode = getattr(triton, "AsyncCompileMode", None)
        if COMPILE_THREADS < 2 or mode is None or SHARD is not None:
            return
        self.nargs = dict(zip(self.arg_names, args))  # prune_configs reads them, as in Triton's run()
        try:
            configs = self.prune_configs({**kwargs, "grid": grid, "warmup": False})
            if len(configs) > 1:
                with concurrent.futures.ThreadPoolExecutor(min(COMPILE_THREADS, len(configs))) as pool, \
                        mode(pool, ignore_errors=True):
                    for config in configs:
                        self.fn.warmup(*args, grid=grid, **kwargs, **config.all_kwargs())
        except Exception:  # Triton's own path, next, compiles again and reports whatever failed here
            pass
        finally:
            self.nargs = None

    def bound(self, grid, args, kwargs):
        """The Bound launch of a call seen before, with its chosen config (None where none is kept)."""
        fn = self.fn
        seen = self.launches.get(fn.key(args, kwargs)) if fn.__class__ is _Fast else None
        return None if seen is None else Bound(fn, seen[1], grid, args, {**kwargs, **seen[0]})


TUNERS = []  # every _Remembered autotuner, for chosen_configs


def chosen_configs():
    """{(kernel name, tuning key): the chosen config as text} of every autotuned kernel so far: what
    the autotuner picked, for the studies to report beside their times."""
    return {**{(t.base_fn.__name__, key): " ".join(f"{k}={v}" for k, v in config.items())
               for t in TUNERS for key, config in t.chosen.items()},
            **{("fastest", key): name for key, (_, name) in _FASTEST.items()}}


def warm_bench(kernel_call, quantiles):
    """Time a config as a training step runs it: back-to-back launches replayed from a CUDA
    graph, so no host overhead, with the operands hot in L2. Triton's default flushes L2
    before every launch; for the step's small GEMMs that ranks tiles for a regime the step
    never sees (small conv tiles won the cold timing and made the captured step slower).
    Triton times on a stream of its own, which waits for nothing: the caller's kernels finish
    first, so that a timed launch neither reads their outputs early nor writes memory that they
    still use (the caching allocator hands a tensor freed on the caller's stream to the next
    allocation before its readers ran)."""
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(kernel_call, rep=5, quantiles=quantiles)


_FASTEST = {}  # fastest()'s choice by key: (index, the candidate's name)


def fastest(key, candidates):
    """Run the fastest of `candidates` (callables, each one way of launching the same op into the
    same outputs, read-only on its inputs) and return its index: what the autotuner does for
    configs, for kernels. On the GPU each candidate runs once (its own kernels tuned and compiled)
    and is then timed by warm_bench, once per key; key must decide all of the call but the
    tensors' addresses. The first candidate runs in the interpreter, under TNET_AUTOTUNE=0, and
    while a CUDA graph is being captured (nothing can be timed then; no choice is kept); under a
    compile mode, each runs once and the first is kept."""
    kept_choice = _FASTEST.get(key)
    if kept_choice is None:
        if INTERPRET or not TUNE or torch.cuda.is_current_stream_capturing():
            candidates[0]()
            return 0
        for candidate in candidates:
            candidate()
        times = [1.0] if SHARD is not None else [warm_bench(candidate, None) for candidate in candidates]
        choice = min(range(len(times)), key=times.__getitem__)
        kept_choice = _FASTEST[key] = choice, candidates[choice].__name__
    candidates[kept_choice[0]]()
    return kept_choice[0]
