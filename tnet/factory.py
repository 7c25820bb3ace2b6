"""Tensor factories (zeros, ones, full, rand, randn; empty, the *_like ones, arange, randperm),
the dtype names, and the random generator's state with `manual_seed`.

The generator is Philox (kernels/random.py) with its state [seed, offset] in one device
tensor that the draw kernels advance themselves: a CUDA graph that captured a draw (say a
dropout) draws fresh numbers on every replay. `manual_seed` writes the state from the host."""
import contextlib
import functools
import math
import numbers

import numpy as np
import torch

from ._device import DEVICE
from .kernels import random as _random
from .kernels.launch import INTEGERS, InputError, InputTypeError, check, not_implemented
from .tensor import Tensor, as_int, as_storage, check_dtype, check_factory_device

float32, float16, bfloat16, int64, int32 = torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32
DEFAULT_SEED = 67280421310721  # torch's default generator's seed
_state = []  # [the generator's device tensor [seed, offset]], made on first use
_seed = [DEFAULT_SEED]  # manual_seed's last seed (initial_seed)
_init = [np.random.default_rng(DEFAULT_SEED)]  # the host stream that layers draw their initial weights from


def init_generator():
    """The numpy Generator that every layer built without an explicit `rng` draws its initial
    weights from, as torch's layers draw from its global generator: two layers of one shape
    start different, and manual_seed(s) makes a model's init repeat."""
    return _init[0]


class Generator(np.random.Generator):
    """torch.Generator for what tnet draws on the host (DataLoader's shuffle, random_split, randperm,
    the init functions' generator=): a numpy Generator with torch's manual_seed, initial_seed and
    seed. device= is accepted: tnet's device draws (rand, dropout) take the global generator that
    tnet.manual_seed seeds. Other numbers than torch's generator gives for a seed."""

    def __init__(self, device="cpu"):
        self.device = torch.device(device)  # as given, as torch's (diffusers pass generator.device on)
        self._seed = DEFAULT_SEED
        super().__init__(np.random.PCG64(DEFAULT_SEED))

    def manual_seed(self, seed):
        self._seed = int(seed) % (1 << 64)
        self.bit_generator.state = np.random.PCG64(self._seed).state
        return self

    def initial_seed(self):
        return self._seed

    # get_state's bytes: PCG64's 128-bit state and increment, its buffered 32-bit draw and flag, the initial seed
    _STATE_BYTES = (16, 16, 4, 1, 8)

    def get_state(self):
        """The generator's state as a uint8 tensor (torch's ByteTensor), for set_state."""
        st = self.bit_generator.state
        fields = (st["state"]["state"], st["state"]["inc"], st["uinteger"], st["has_uint32"], self._seed)
        data = b"".join(int(v).to_bytes(n, "little") for v, n in zip(fields, self._STATE_BYTES))
        return Tensor(torch.frombuffer(bytearray(data), dtype=torch.uint8).to(DEVICE))

    def set_state(self, new_state):
        """Restore a state from get_state; returns the generator, as torch's."""
        memory = new_state.memory if isinstance(new_state, Tensor) else torch.as_tensor(new_state)
        data = memory.cpu().numpy().tobytes()
        if memory.dtype != torch.uint8 or len(data) != sum(self._STATE_BYTES):
            raise RuntimeError(f"set_state: expected get_state's uint8 tensor of {sum(self._STATE_BYTES)} elements, got "
                               f"{memory.dtype} {tuple(memory.shape)}")
        ends = np.cumsum((0,) + self._STATE_BYTES)
        state, inc, uinteger, has_uint32, seed = (int.from_bytes(data[a:b], "little") for a, b in zip(ends, ends[1:]))
        self.bit_generator.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
                                    "has_uint32": has_uint32, "uinteger": uinteger}
        self._seed = seed
        return self

    def seed(self):
        """Seed from the OS's entropy, as torch's; returns the seed."""
        self.manual_seed(np.random.SeedSequence().entropy)
        return self._seed


def host_generator(name, generator=None):
    """The numpy Generator a host-side draw takes: `generator` (what tnet's functions take as
    generator=), or the init stream (init_generator) when None or default_generator. tnet draws on
    the host with numpy, so a torch.Generator raises TypeError."""
    if is_global(generator):
        return init_generator()
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"{name}: tnet draws on the host, so generator must be a numpy Generator "
                        f"(np.random.default_rng(seed)), got {type(generator).__name__}")
    return generator


def _capturing():
    return DEVICE.type == "cuda" and torch.cuda.is_current_stream_capturing()


def rng_state():
    """The generator's device tensor [seed, offset] (int64); the draw kernels advance it."""
    if not _state:
        if _capturing():
            raise RuntimeError("tnet's random generator is made on its first draw, which must come before a "
                               "CUDA graph capture (or call tnet.manual_seed first)")
        _state.append(torch.tensor([DEFAULT_SEED, 0], dtype=torch.int64, device=DEVICE))
    return _state[0]


def manual_seed(seed):
    """Reset the generator and the layers' init stream (init_generator): draws and layers built
    after this repeat those after any earlier manual_seed(seed). A host write, so not within a
    CUDA graph capture. Seeds are taken modulo 2^64, as torch's. Returns the init stream, a
    tnet.Generator (`torch.manual_seed(0).initial_seed()`; torch returns its default generator)."""
    if _capturing():
        raise RuntimeError("manual_seed: writes the generator state from the host; call it outside a graph capture")
    seed = int(seed) % (1 << 64)
    _seed[0] = seed
    _init[0] = Generator().manual_seed(seed)  # numpy's default_rng(seed) stream, with torch's methods
    seed = seed - (1 << 64) if seed >= 1 << 63 else seed  # the int64 with the same bits
    state = rng_state()
    state[0].fill_(seed)
    state[1].fill_(0)
    return _init[0]


def get_rng_state():
    """The draw generator's state, a copy, for set_rng_state: its seed and offset, two int64 values, as the 16
    bytes of a uint8 tnet tensor, as torch.cuda's Philox state (the layers' init stream is not in it)."""
    return Tensor(rng_state().clone().view(torch.uint8))


def set_rng_state(new_state):
    """Restore the draw generator to a state from get_rng_state (a host write, so not within a
    CUDA graph capture); the int64 pair that earlier tnet versions gave (a checkpoint's) is taken too."""
    memory = new_state.memory if isinstance(new_state, Tensor) else torch.as_tensor(new_state)
    if memory.shape == (16,) and memory.dtype == torch.uint8:
        memory = memory.contiguous().view(torch.int64)
    if memory.shape != (2,) or memory.dtype != torch.int64:
        raise RuntimeError(f"set_rng_state: expected get_rng_state's uint8 tensor of 16 elements, got {memory.dtype} "
                           f"{tuple(memory.shape)}")
    if _capturing():
        raise RuntimeError("set_rng_state: writes the generator state from the host; call it outside a graph capture")
    rng_state().copy_(memory)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """torch.random.fork_rng: within the block, draws and seeds as ever; on exit the generator, the
    layers' init stream and initial_seed are back where they were, as torch's restores its CPU and
    device generators (devices and device_type are accepted: tnet has one of each)."""
    if not enabled:
        yield
        return
    draws, init, init_state, last_seed = get_rng_state(), _init[0], _init[0].bit_generator.state, _seed[0]
    try:
        yield
    finally:
        set_rng_state(draws)
        init.bit_generator.state = init_state
        _init[0], _seed[0] = init, last_seed


def initial_seed():
    """The seed manual_seed (or seed) set last, as torch's."""
    return _seed[0]


def seed():
    """manual_seed with a seed from the OS's entropy, as torch's; returns that seed."""
    s = int(np.random.SeedSequence().entropy) % (1 << 63)
    manual_seed(s)
    return s


def _size(name, size, keyword=None):
    """Sizes given as ints or as one tuple/list, or as the keyword `size=` (`keyword`), as torch takes them
    (none at all: torch's TypeError; a 0-d tensor's size is ())."""
    if keyword is not None:
        if size:
            raise InputTypeError(f"{name}: got the sizes both positionally and as size=")
        size = (keyword,)
    if not size:
        raise InputTypeError(f'{name}() missing 1 required positional arguments: "size"')
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    size = tuple(as_int(s) for s in size)  # integer tensors of one element are ints to torch's parser
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in size):
        raise InputTypeError(f"{name}: sizes must be ints, got {size}")
    if not all(s >= 0 for s in size):
        raise InputError(f"{name}: sizes must be non-negative ints, got {size}")
    return tuple(size)


def check_layout(name, layout):
    """A factory's layout=: torch.strided (or None, a *_like's "input's"), the one layout tnet's tensors have."""
    if layout is not None and layout != torch.strided:
        raise InputError(f"{name}: layout={layout} is not supported (tnet's tensors are strided)")


def _leaf(name, data, requires_grad):
    check_dtype(name, data.dtype)
    if requires_grad and not data.is_floating_point():
        raise InputError(f"{name}: only floating-point tensors can require grad, got {data.dtype}")
    return Tensor(data, requires_grad=requires_grad)


def _with_out(factory):
    """factory with torch's `out=`: the values made in out's dtype (a dtype= must be out's) and written into out,
    resized to their shape where it differs (old scripts: `torch.eye(n, out=grad.new(n, n))`). Returns out."""
    name = factory.__name__

    @functools.wraps(factory)
    def made(*args, out=None, **kwargs):
        if out is None:
            return factory(*args, **kwargs)
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        dtype = kwargs.pop("dtype", None)
        if dtype is not None and dtype != out.dtype:
            raise RuntimeError(f"{name}(): dtype {dtype} does not match dtype of out parameter ({out.dtype})")
        if out.requires_grad:
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                               f"but one of the arguments requires grad.")
        values = factory(*args, dtype=out.dtype, **kwargs).memory
        if out.shape != values.shape:
            out.resize_(values.shape)
        out.memory.copy_(values)
        return out
    return made


@_with_out
def full(size, fill_value, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    """A tensor of `size` filled with fill_value; dtype as torch infers it (int64 for an int,
    bool for a bool, float32 otherwise)."""
    check_factory_device("full", device)
    check_layout("full", layout)
    if dtype is not None:  # the argument's type before the size's values, as torch's parser
        dtype = check_dtype("full", dtype)
    data = torch.full(_size("full", (size,)), fill_value, dtype=dtype, device=DEVICE)
    return _leaf("full", data, requires_grad)


@_with_out
def zeros(*sizes, size=None, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    dtype = check_dtype("zeros", dtype or float32)
    return full(_size("zeros", sizes, size), 0.0, dtype, layout, device, requires_grad)


@_with_out
def ones(*sizes, size=None, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    dtype = check_dtype("ones", dtype or float32)
    return full(_size("ones", sizes, size), 1.0, dtype, layout, device, requires_grad)


class DefaultGenerator:
    """torch.default_generator: one object that stands for tnet's global random state (the device
    generator and the host init stream, both of which manual_seed seeds), so that a draw given it as
    generator= draws as one given none; its methods are the module's manual_seed, seed, initial_seed,
    get_rng_state and set_rng_state. tnet has no torch.Generator of the device: Generator() is a host one."""
    device = torch.device("cpu")

    def manual_seed(self, seed):
        manual_seed(seed)
        return self

    def seed(self):
        return seed()

    def initial_seed(self):
        return initial_seed()

    def get_state(self):
        return get_rng_state()

    def set_state(self, new_state):
        set_rng_state(new_state)
        return self


default_generator = DefaultGenerator()


def is_global(generator):
    """Whether a generator= argument means tnet's global state: None or default_generator."""
    return generator is None or generator is default_generator


def check_global(name, generator):
    """A device draw's generator=: tnet's global state alone (None or default_generator), the one generator
    its kernels draw from."""
    check(is_global(generator), lambda: f"{name}: generator= is not supported (tnet draws from its one generator, "
                                        f"seeded by tnet.manual_seed)")


def host_draw(name, generator, size, normal):
    """Standard normal (normal) or uniform [0, 1) numbers of size, float64 on the host, from generator= (a
    tnet.Generator: a numpy Generator), as a draw given a generator takes them (torch's CPU generator draws on
    the host too)."""
    g = host_generator(name, generator)
    return g.standard_normal(size) if normal else g.random(size)


def _random_tensor(name, size, dtype, device, requires_grad, normal, generator=None):
    """Of size (a tuple of ints, checked), drawn on the device from tnet's generator, or with generator= (a
    tnet.Generator) on the host from that generator, as randint and randperm draw."""
    check_factory_device(name, device)
    dtype = dtype or float32
    if not isinstance(dtype, torch.dtype):
        raise InputTypeError(f"{name}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    if not dtype.is_floating_point:  # torch's kernels have no integer form (its normal one is not run for no elements)
        if normal and 0 in size:
            return _leaf(name, torch.empty(size, dtype=dtype, device=DEVICE), requires_grad)
        raise not_implemented(f"normal_kernel_{DEVICE.type}" if normal else "check_uniform_bounds", dtype)
    if dtype not in _random.FLOATS:
        raise ValueError(f"{name}: draws float tensors ({', '.join(map(str, _random.FLOATS))}), got {dtype}")
    if not is_global(generator):
        return _leaf(name, as_storage(host_draw(name, generator, size, normal), dtype), requires_grad)
    data = _random.fill_random_(torch.empty(size, dtype=dtype, device=DEVICE), rng_state(), normal)
    return _leaf(name, data, requires_grad)


def rand(*sizes, size=None, generator=None, dtype=None, layout=torch.strided, device=None, requires_grad=False,
         pin_memory=False):
    """Uniform numbers in [0, 1) from tnet's generator, or on the host from generator= (a
    tnet.Generator): other numbers than torch.rand's."""
    check_layout("rand", layout)
    dtype = check_dtype("rand", dtype or float32)  # the parser's TypeError before the sizes' check, float64's
    return _random_tensor("rand", _size("rand", sizes, size), dtype, device, requires_grad, False, generator)


def randn(*sizes, size=None, generator=None, dtype=None, layout=torch.strided, device=None, requires_grad=False,
          pin_memory=False):
    """Standard normal numbers from tnet's generator, or on the host from generator= (a
    tnet.Generator): other numbers than torch.randn's."""
    check_layout("randn", layout)
    dtype = check_dtype("randn", dtype or float32)  # the parser's TypeError before the sizes' check, float64's
    return _random_tensor("randn", _size("randn", sizes, size), dtype, device, requires_grad, True, generator)


# ---- torch's other factories: uninitialised memory, tensors like another, ranges and permutations ----

def empty(*sizes, size=None, dtype=None, layout=torch.strided, device=None, requires_grad=False, pin_memory=False,
          memory_format=torch.contiguous_format):
    """An uninitialised tensor of `size` (float32 unless dtype says)."""
    check_factory_device("empty", device)
    check_layout("empty", layout)
    dtype = check_dtype("empty", dtype or float32)  # the parser's TypeError before the sizes' check
    data = torch.empty(_size("empty", sizes, size), dtype=dtype, device=DEVICE, memory_format=memory_format)
    return _leaf("empty", data, requires_grad)


def _like(name, input, make, dtype, layout, device, requires_grad, memory_format):
    """make(input's storage, dtype, memory_format): a new tensor shaped like input, of input's dtype
    unless dtype says, in input's layout by default (torch's preserve_format)."""
    check_factory_device(name, device)
    check_layout(name, layout)
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a tnet.Tensor, not {type(input).__name__}")
    return _leaf(name, make(input.memory, dtype=dtype or input.dtype, memory_format=memory_format), requires_grad)


def empty_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=torch.preserve_format):
    return _like("empty_like", input, torch.empty_like, dtype, layout, device, requires_grad, memory_format)


def zeros_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=torch.preserve_format):
    return _like("zeros_like", input, torch.zeros_like, dtype, layout, device, requires_grad, memory_format)


def ones_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=torch.preserve_format):
    return _like("ones_like", input, torch.ones_like, dtype, layout, device, requires_grad, memory_format)


def full_like(input, fill_value, dtype=None, layout=torch.strided, device=None, requires_grad=False,
              memory_format=torch.preserve_format):
    fill = lambda x, **kw: torch.full_like(x, fill_value, **kw)
    return _like("full_like", input, fill, dtype, layout, device, requires_grad, memory_format)


def rand_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=torch.preserve_format):
    """rand of input's shape (and dtype unless dtype says), from tnet's generator."""
    check_layout("rand_like", layout)
    return _random_tensor("rand_like", tuple(input.shape), dtype or input.dtype, device, requires_grad, normal=False)


def randn_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=torch.preserve_format):
    """randn of input's shape (and dtype unless dtype says), from tnet's generator."""
    check_layout("randn_like", layout)
    return _random_tensor("randn_like", tuple(input.shape), dtype or input.dtype, device, requires_grad, normal=True)


def randint_like(input, low=0, high=None, *, dtype=None, layout=torch.strided, device=None, requires_grad=False,
                 memory_format=torch.preserve_format):
    """randint of input's shape and dtype (unless dtype says): randint_like(input, high) or
    (input, low, high), drawn on the host as randint."""
    low, high = (0, low) if high is None else (low, high)
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, layout=layout, device=device,
                   requires_grad=requires_grad)

def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


@_with_out
def arange(*bounds, start=None, end=None, step=None, dtype=None, layout=torch.strided, device=None,
           requires_grad=False):
    """start, start + step, ... up to end (excluded), as torch.arange: int64 when start, end and
    step are ints, else float32 (unless dtype says). Computed on the host in float64, then copied.
    torch's forms: arange(end), arange(end=end) (TransE's), arange(start, end) and arange(start, end,
    step), by position or keyword; another (a step or a start without an end) is its TypeError."""
    check_factory_device("arange", device)
    check_layout("arange", layout)
    dtype = dtype if dtype is None else check_dtype("arange", dtype)
    if len(bounds) > 3:
        raise InputTypeError(f"arange() takes from 1 to 3 positional arguments but {len(bounds)} were given")
    if any(b is None for b in bounds):  # None given by position matches none of torch's forms
        raise InputTypeError(f"arange() received an invalid combination of arguments - got "
                             f"({', '.join(type(b).__name__ for b in bounds)})")
    if len(bounds) == 1 and end is None:  # arange(end), which takes no step
        if step is not None:
            raise InputTypeError("arange() received an invalid combination of arguments: a step needs a start")
        bounds = (0,) + bounds
    given = dict(zip(("start", "end", "step"), bounds))
    for name, value in (("start", start), ("end", end), ("step", step)):
        if value is not None:
            if name in given:
                raise InputTypeError(f"arange() got multiple values for argument '{name}'")
            given[name] = value
    if "end" not in given:
        raise InputTypeError('arange() missing 1 required positional arguments: "end"')
    if "start" not in given:
        if "step" in given:  # torch's arange(end=n, step=k) matches none of its forms
            raise InputTypeError("arange() received an invalid combination of arguments: a step needs a start")
        given["start"] = 0
    start, end, step = given["start"], given["end"], given.get("step")
    step = 1 if step is None else step
    # a 0-d tensor bound is its number, an int where its dtype is an integer's (torch.arange(n) of a count n)
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if not all(math.isfinite(v) for v in (start, end)):
        raise InputError(f"arange: unsupported range: {start} -> {end}")
    if step == 0:
        raise InputError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise InputError("arange: upper bound and lower bound inconsistent with step sign")
    ints = all(_is_int(v) for v in (start, end, step))
    dtype = dtype or (int64 if ints else float32)
    n = None
    if not ints and dtype in INTEGERS:  # torch truncates the numbers to ints first: for int64 all three, count
        if dtype == int64:              # included; a narrower type counts on the numbers given
            if int(step) == 0:
                raise InputError("step must be nonzero")
        else:
            n = math.ceil((end - start) / step)
        start, end, step, ints = int(start), int(end), int(step), True
    if n is None:
        n = math.ceil((end - start) / step) if not ints else -(-(end - start) // step)
    if n >= 2 ** 63:
        raise InputError(f"arange: invalid size, possible overflow? ({n} elements)")
    values = np.arange(n, dtype=np.int64) * step + start if ints else start + np.arange(n) * float(step)
    return _leaf("arange", as_storage(values, dtype), requires_grad)


@_with_out
def eye(n, m=None, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    """The n x m (m = n) identity, float32 unless dtype says, as torch.eye."""
    check_factory_device("eye", device)
    check_layout("eye", layout)
    if dtype is not None:
        dtype = check_dtype("eye", dtype)
    if n < 0 or m is not None and m < 0:
        raise InputError(f"eye: n and m must be greater or equal to 0, got {n} and {m}")
    return _leaf("eye", as_storage(np.eye(n, n if m is None else m), dtype or float32), requires_grad)


@_with_out
def linspace(start, end, steps, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    """steps values from start to end, evenly spaced (computed on the host in float64), as torch.linspace."""
    check_factory_device("linspace", device)
    check_layout("linspace", layout)
    steps = _check_steps("linspace", steps)
    return _leaf("linspace", as_storage(np.linspace(start, end, steps), dtype or float32), requires_grad)


def _check_steps(name, steps):
    """linspace's and logspace's count, as torch checks it: an int (TypeError; an integer tensor of one element is
    one), not negative (RuntimeError). Returns it as an int."""
    steps = as_int(steps)
    if not isinstance(steps, int) or isinstance(steps, bool):
        raise InputTypeError(f"{name}: steps must be an int, got {steps!r}")
    if steps < 0:
        raise InputError(f"{name}: number of steps must be non-negative, got {steps}")
    return steps


_C_NAMES = {torch.bool: "bool", torch.uint8: "unsigned char", torch.int8: "signed char", torch.int16: "short",
            torch.int32: "int", torch.int64: "long"}  # torch's bounds messages name the C types


def check_random_bounds(dtype, low, high):
    """[low, high) in an integer dtype's range, as torch's random_ (and randint) check it: its RuntimeError."""
    if not dtype.is_floating_point:
        info = (0, 1) if dtype == torch.bool else (torch.iinfo(dtype).min, torch.iinfo(dtype).max)
        for bound, v in (("from", low), ("to - 1", high - 1)):
            if not info[0] <= v <= info[1]:
                raise InputError(f"{bound} is out of bounds for {_C_NAMES[dtype]}")


def randint(low=None, high=None, size=None, *, generator=None, dtype=None, layout=torch.strided, device=None,
            requires_grad=False):
    """Integers uniform in [low, high) (randint(high, size), randint(high, size=...) and randint(high=,
    size=): from 0), int64 unless dtype says, drawn on the host from the stream tnet.manual_seed reseeds
    (or from generator, a numpy Generator): other numbers than torch's."""
    check_factory_device("randint", device)
    check_layout("randint", layout)
    if size is None:  # randint(high, size)
        low, high, size = None, low, high
    if high is None:  # randint(high, size=...): the Datasets tutorial's randint(len(training_data), size=(1,))
        low, high = None, low
    if high is None or size is None:
        raise TypeError("randint() missing the high or size argument")
    low = 0 if low is None else low
    for v in (low, high):  # torch's parser: ints (a float bound matches none of its forms)
        if not isinstance(v, (numbers.Integral, Tensor)) or isinstance(v, bool):
            raise InputTypeError(f"randint() received an invalid combination of arguments - got ({type(low).__name__}, "
                                 f"{type(high).__name__}, {type(size).__name__})")
    if low >= high:  # torch's RuntimeError (numpy's is a ValueError only)
        raise InputError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise InputTypeError(f"randint(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    dtype = dtype or int64
    check_random_bounds(dtype, low, high)
    if not isinstance(size, (tuple, list, torch.Size)):
        raise InputTypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    draw = host_generator("randint", generator).integers(low, high, size=_size("randint", (size,)))
    return _leaf("randint", as_storage(draw, dtype), requires_grad)


def randperm(n, *, generator=None, dtype=None, layout=torch.strided, device=None, requires_grad=False,
             pin_memory=False):
    """A random permutation of 0 .. n-1 (int64 unless dtype says), drawn on the host from the
    stream that tnet.manual_seed reseeds (init_generator) or from generator (a tnet.Generator), then
    copied: other numbers than torch's."""
    check_factory_device("randperm", device)
    check_layout("randperm", layout)
    if not _is_int(n):
        raise InputTypeError(f"randperm(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    dtype = check_dtype("randperm", dtype or int64)  # the parser's TypeError before the size's check
    if n < 0:
        raise InputError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return _leaf("randperm", as_storage(host_generator("randperm", generator).permutation(n), dtype),
                 requires_grad)


class _TypedTensor(type):
    """torch's legacy typed tensor classes (tnet.FloatTensor, ByteTensor...): called, name(*sizes) makes an
    uninitialised tensor (empty) and name(data) a copy of data in the class's dtype; isinstance(x, name)
    asks whether x is a tnet tensor of that dtype (torchvision's `isinstance(img, torch.ByteTensor)`; tnet has
    one device, so torch.cuda's classes are these)."""

    def __call__(cls, *args, device=None):
        if not args or all(isinstance(a, int) and not isinstance(a, bool) for a in args) or \
                (len(args) == 1 and isinstance(args[0], torch.Size)):
            return empty(*(args or (0,)), dtype=cls.dtype, device=device)
        if len(args) > 1:
            raise TypeError(f"{cls.__name__}: takes sizes (ints) or one sequence of data, got {len(args)} arguments")
        return _leaf(cls.__name__, as_storage(args[0], cls.dtype), False)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype


def _typed(name, dtype):
    return _TypedTensor(name, (), {"dtype": dtype})  # x.type(tnet.FloatTensor) reads dtype


# DoubleTensor: torch's name, so that calling it, or x.type(tnet.DoubleTensor), raises the float64 TypeError
FloatTensor, HalfTensor, BFloat16Tensor, DoubleTensor = (_typed(n, d) for n, d in (
    ("FloatTensor", float32), ("HalfTensor", float16), ("BFloat16Tensor", bfloat16), ("DoubleTensor", torch.float64)))
LongTensor, IntTensor, BoolTensor, ByteTensor, ShortTensor, CharTensor = (_typed(n, d) for n, d in (
    ("LongTensor", int64), ("IntTensor", int32), ("BoolTensor", torch.bool), ("ByteTensor", torch.uint8),
    ("ShortTensor", torch.int16), ("CharTensor", torch.int8)))


# ---- factories of the eighth session ------------------------------------------------------------

def _triangle_indices(name, pick, row, col, offset, dtype, device):
    check_factory_device(name, device)
    for arg, v in (("row", row), ("col", col), ("offset", offset)):  # torch's parser's TypeError
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise InputTypeError(f"{name}(): argument '{arg}' must be int, not {type(v).__name__}")
    if row < 0 or col < 0:
        raise RuntimeError(f"{'row' if row < 0 else 'col'} must be non-negative, got {row if row < 0 else col}")
    return Tensor(as_storage(np.stack(pick(row, offset, col)).reshape(2, -1), dtype))


def tril_indices(row, col, offset=0, *, dtype=torch.int64, device=None, layout=torch.strided):
    """The [2, n] coordinates of a row x col matrix's lower triangle (its diagonal `offset` and
    below), row by row, as torch.tril_indices (made on the host)."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=torch.int64, device=None, layout=torch.strided):
    """The [2, n] coordinates of the upper triangle (diagonal `offset` and above), as torch.triu_indices."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False, layout=torch.strided,
                  pin_memory=False):
    """An uninitialised tensor with these strides, as torch.empty_strided."""
    check_factory_device("empty_strided", device)
    return _leaf("empty_strided", torch.empty_strided(tuple(size), tuple(stride), dtype=dtype or float32, device=DEVICE),
                 requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=torch.strided, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor of `size` whose memory holds its dims in the order `physical_layout` (the
    last the fastest), as torch.empty_permuted: (0, 2, 3, 1) of a 4-d size is channels-last."""
    check_factory_device("empty_permuted", device)
    return _leaf("empty_permuted", torch.empty_permuted(tuple(size), tuple(physical_layout), dtype=dtype or float32,
                                                        device=DEVICE), requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor of s, float32 unless dtype says, as torch.scalar_tensor."""
    return full((), s, dtype=dtype or float32, device=device, requires_grad=requires_grad)


# ---- the tensor surface of the eighth session (ops3): more factories, computed on the host in float64
# as linspace, then copied

def logspace(start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), as torch.logspace."""
    if not isinstance(base, numbers.Real):
        raise InputTypeError(f"logspace(): argument 'base' must be float, not {type(base).__name__}")
    check_factory_device("logspace", device)
    steps = _check_steps("logspace", steps)
    return _leaf("logspace", as_storage(float(base) ** np.linspace(start, end, steps), dtype or float32), requires_grad)


def range_(start=0, end=None, step=1, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    """torch.range (deprecated there for arange): start, start + step, ... up to end included,
    float32 unless dtype says (ints too); warns as torch's."""
    import warnings
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    check_factory_device("range", device)
    start, end = (0, start) if end is None else (start, end)
    if step == 0 or (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign" if step else "step must be nonzero")
    n = math.floor((end - start) / step) + 1
    return _leaf("range", as_storage(start + np.arange(n) * step, dtype or float32), requires_grad)


def _window(name, window_length, periodic, dtype, device, requires_grad, values):
    """A window of window_length values: values(k, m) of the points k = 0 .. m (m = window_length, or
    window_length - 1 where not periodic: a periodic window is the symmetric one of one more point,
    its last dropped), as torch's window functions."""
    check_factory_device(name, device)
    if not isinstance(periodic, bool):  # torch's argument parser
        raise InputTypeError(f"{name}(): argument 'periodic' must be bool, not {type(periodic).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dtype = dtype or float32
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length <= 1:
        return _leaf(name, as_storage(np.ones(window_length), dtype), requires_grad)
    m = window_length if periodic else window_length - 1
    return _leaf(name, as_storage(values(np.arange(window_length, dtype=np.float64), m), dtype), requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    """0.5 - 0.5 cos(2 pi k / m), as torch.hann_window."""
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=torch.strided,
                   device=None, requires_grad=False):
    """alpha - beta cos(2 pi k / m), as torch.hamming_window."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: alpha - beta * np.cos(2 * np.pi * k / m))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=torch.strided, device=None,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi k / m) + 0.08 cos(4 pi k / m), as torch.blackman_window."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 0.42 - 0.5 * np.cos(2 * np.pi * k / m) + 0.08 * np.cos(4 * np.pi * k / m))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=torch.strided, device=None,
                    requires_grad=False):
    """1 - |2 k / m - 1|, as torch.bartlett_window."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 1 - np.abs(2 * k / m - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=torch.strided, device=None,
                  requires_grad=False):
    """I0(beta sqrt(1 - (2 k / m - 1)^2)) / I0(beta), as torch.kaiser_window."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: np.i0(beta * np.sqrt(np.maximum(1 - (2 * k / m - 1) ** 2, 0))) / np.i0(beta))
