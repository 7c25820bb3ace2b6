"""What every launcher shares: the input checks and their errors, the storage dtypes, grid
arithmetic, tile configs, and the memory layouts of activations (NCHW or channels-last)."""
import collections
import numbers

import torch
import triton


class InputError(ValueError, RuntimeError):
    """tnet's one-line error for bad input (shape, dtype, device, value): a ValueError, and a
    RuntimeError too, as torch raises for most of these, so that either except clause catches it."""


class InputIndexError(InputError, IndexError):
    """An index out of range (a cross_entropy label, a reduction over a dim of size 0): an
    IndexError, as torch raises, and an InputError."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (a number where a tensor is wanted, a string for a dim or a
    stride): a TypeError, as torch's argument parser raises, and an InputError."""


class InputDtypeError(InputError, NotImplementedError):
    """An integer or bool tensor where a kernel computes in floats only (softmax, a convolution, a
    norm of a Long tensor): the NotImplementedError torch raises there ("... not implemented for
    'Long'"), and an InputError."""


class CaptureError(RuntimeError):
    """A function that a CUDA graph capture records (tnet.graph.capture, Graph, TrainStep) does
    what a capture cannot: it reads a device tensor on the host, say."""


def capturing(x):
    """Whether x (a torch tensor) is on a GPU whose current stream a CUDA graph capture records: then
    a check that reads the device on the host is skipped."""
    return x.is_cuda and torch.cuda.is_current_stream_capturing()


def no_host_read(x, what):
    """Raise CaptureError for `what`, a host read of the device tensor x, inside a CUDA graph
    capture: the capture records launches and cannot wait for their results. Outside one, a GPU's
    flagged errors of earlier launches are raised first (a host read waits for the GPU anyway), as
    torch's CUDA errors surface at the next synchronisation."""
    if capturing(x):
        raise CaptureError(f"{what} reads a device tensor on the host, which a CUDA graph capture cannot do: "
                           f"read it outside the captured function (return the tensor, read it after the call)")
    if _FLAG_COPIES and x.is_cuda and x.device in _FLAG_COPIES:
        _FLAG_COPIES[x.device].wait()


class _FlagCopies:
    """A GPU's error flags, read without a synchronisation. A kernel that meets bad input (a label or an
    index out of range) sets its flag, int64 [2] = (1, the value), on the device; a host read of it after
    each launch would stall every eager step until the GPU drained. Instead each launch's flag is copied
    behind it into one of RING pinned host slots, with an event, and a later check reads the slots whose
    events have passed, in launch order. A host RING flagged launches ahead waits for the oldest copy."""
    RING = 8

    def __init__(self):
        self.hosts = torch.zeros((self.RING, 2), dtype=torch.int64, pin_memory=True)
        self.events = [torch.cuda.Event() for _ in range(self.RING)]
        self.queue = collections.deque()  # (slot, flag, error) in launch order
        self.next = 0

    def raise_passed(self):
        """error(value) of the oldest copy that shows its flag set, among those the GPU has written; the flag
        is cleared then (it is sticky: the later copies of it show the same value)."""
        while self.queue and self.events[self.queue[0][0]].query():
            slot, flag, error = self.queue.popleft()
            seen, value = self.hosts[slot].tolist()
            if seen:
                self.forget(flag)
                flag.zero_()
                raise error(value)

    def wait(self):
        """raise_passed once the GPU has written every copy."""
        if self.queue:
            self.events[self.queue[-1][0]].synchronize()
            self.raise_passed()

    def forget(self, flag):
        """Drop the pending copies of flag (read or cleared by its owner)."""
        self.queue = collections.deque(entry for entry in self.queue if entry[1] is not flag)

    def copy(self, flag, error):
        if len(self.queue) == self.RING:
            self.events[self.queue[0][0]].synchronize()
            self.raise_passed()
        slot, self.next = self.next, (self.next + 1) % self.RING
        self.hosts[slot].copy_(flag, non_blocking=True)  # on flag's device's current stream: the event goes there too
        self.events[slot].record(torch.cuda.current_stream(flag.device))
        self.queue.append((slot, flag, error))


_FLAG_COPIES = {}  # device -> _FlagCopies, once a flag of the device has been copied


def raise_flagged(device):
    """Before a launch that may flag bad input: the error an earlier launch on `device` flagged, where the GPU
    has run it by now (no synchronisation; nothing inside a CUDA graph capture)."""
    copies = _FLAG_COPIES.get(device)
    if copies is not None and copies.queue and not torch.cuda.is_current_stream_capturing():
        copies.raise_passed()


def check_flag(flag, error):
    """After a launch that may have set flag (int64 [2] = (1, value)): on the CPU, error(value) raised at once and
    the flag cleared; on a GPU outside a CUDA graph capture, raised by a later raise_flagged or host read, once
    the GPU has run this launch (_FlagCopies); inside a capture the flag waits on the device for its reader."""
    if not flag.is_cuda:
        value = take_flag(flag)
        if value is not None:
            raise error(value)
    elif not torch.cuda.is_current_stream_capturing():
        if flag.device not in _FLAG_COPIES:
            _FLAG_COPIES[flag.device] = _FlagCopies()
        _FLAG_COPIES[flag.device].copy(flag, error)


def clear_flags():
    """Clear, unread, every flag with a pending copy and drop the copies (after a GPU synchronisation), so that an
    error one piece of work left unread (a test's) is not raised in the next. Every flag a launch set has one until
    it is read: check_flag copies it after each launch."""
    for copies in _FLAG_COPIES.values():
        if copies.queue:
            copies.events[copies.queue[-1][0]].synchronize()
        for _, flag, _ in copies.queue:
            flag.zero_()
        copies.queue.clear()


def take_flag(flag):
    """The value flag holds, or None if unset, read on the host now (a synchronisation); clears it and drops
    its pending copies."""
    if flag.device in _FLAG_COPIES:
        _FLAG_COPIES[flag.device].forget(flag)
    seen, value = flag.tolist()
    if not seen:
        return None
    flag.zero_()
    return value


def check(cond, msg):
    """Raise the InputError every launcher uses for bad shape, dtype or device. msg may be a
    function returning the text, for hot paths where building it costs launch time."""
    if not cond:
        raise InputError(msg() if callable(msg) else msg)


def check_batch_only_empty(shape, spatial, message=None):
    """torch's rule for its kernels over images of `spatial` dims (reflection and replication padding, im2col,
    the non-adaptive poolings): an input of spatial + 1 or spatial + 2 dims, of which only a batch (the first of
    spatial + 2) may be empty. message: the error's text (a callable) where the kernel's words differ."""
    check(all(shape[1 if len(shape) == spatial + 2 else 0:]),
          message or (lambda: f"Expected {spatial + 1}D or {spatial + 2}D (batch mode) tensor with possibly 0 batch "
                              f"size and other non-zero dimensions for input, but got: {list(shape)}"))


def check_type(cond, msg):
    """check for an argument's type (a number where a tensor is wanted, a string for a dim):
    InputTypeError, torch's TypeError."""
    if not cond:
        raise InputTypeError(msg() if callable(msg) else msg)


FLOATS = (torch.float32, torch.float16, torch.bfloat16)  # the storage dtypes of tnet's float tensors
# the integer dtypes that the element-wise ops and reductions take, computing in int64 (stored back
# wrapping, as torch's: a uint8 image's `255 - img`, a mask's `m > 0`, its `sum()`)
INTEGERS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)
# torch's C++ names of the dtypes, as its messages print them
DTYPE_NAMES = {torch.float32: "Float", torch.float16: "Half", torch.bfloat16: "BFloat16", torch.float64: "Double",
               torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
               torch.bool: "Bool"}


def not_implemented(name, dtype):
    """torch's NotImplementedError for a kernel `name` that has no `dtype` (frac of an int64 tensor):
    '"frac" not implemented for 'Long''."""
    return NotImplementedError(f'"{name}" not implemented for \'{DTYPE_NAMES.get(dtype, dtype)}\'')


def check_float(name, x, arg="x"):
    """x must hold one of FLOATS (16-bit tensors are storage: kernels compute in fp32); else
    InputDtypeError."""
    if x.dtype not in FLOATS:
        raise InputDtypeError(f"{name}: {arg} must be float32, float16 or bfloat16, got {x.dtype}")


def pair(v, name, least=0, expand_one=False):
    """(v, v) for an int v, v itself for a pair of ints, each at least `least` (1 for kernel sizes and
    strides, 0 for paddings; None: see at_least); a bool is no int, as torch's. expand_one: a list of one int is (v[0], v[0]),
    as torch's convolutions and poolings take it (its unfold, fold and max_unpool2d raise)."""
    return ntuple(v, 2, name, least, expand_one)


def triple(v, name, least=0, expand_one=False):
    """pair's rule for the three sizes (D, H, W) of torch's 3-D layers."""
    return ntuple(v, 3, name, least, expand_one)


def plain_ints(v):
    """v with numpy's integers (np.int64 sizes from np.prod) as Python ints, itself or in a tuple or list: torch's
    parser takes any integer for an int."""
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v)
    return type(v)(plain_ints(i) for i in v) if isinstance(v, (tuple, list)) else v


def ntuple(v, n, name, least=0, expand_one=False):
    """n ints from an int or a sequence of n (or of one, with expand_one): pair's rule for n sizes."""
    words = {2: "a pair", 3: "a triple"}.get(n, f"{n}")
    v = plain_ints(v)
    sizes_type(v, n, name)
    v = (v,) * n if isinstance(v, int) else tuple(v) * (n if expand_one and len(v) == 1 else 1)
    check(len(v) == n, f"{name} must be an int or {words} of ints, got {v}")
    return at_least(v, name, least)


def sizes_type(v, n, name):
    """torch's argument parser's TypeError for a list of n ints (an int, or a tuple or list of ints; a
    bool is no int; numpy's integers are), which it raises before any check of the input or the values."""
    v = plain_ints(v)
    if not isinstance(v, (int, tuple, list)) or isinstance(v, bool) \
            or not isinstance(v, int) and not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        words = {2: "a pair", 3: "a triple"}.get(n, f"{n}")
        raise InputTypeError(f"{name} must be an int or {words} of ints, got {v!r}")


def single(v, name, least=0):
    """v for an int v or a 1-tuple of one (torch's _single), at least `least` (None: see at_least)."""
    v = plain_ints(v[0] if isinstance(v, (tuple, list)) and len(v) == 1 else v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise InputTypeError(f"{name} must be an int, got {v!r}")
    return at_least(v, name, least)


def at_least(v, name, least):
    """v (an int or a tuple of ints) where each is at least `least` (None: no bound, for a caller that checks
    every argument's type before any value, as torch's parser does, and then calls this)."""
    if least is not None and (min(v) if isinstance(v, tuple) else v) < least:
        raise InputError(f"{name} must be at least {least}, got {v}")
    return v


_C_INTS = {torch.uint8: "uint8_t", torch.int8: "int8_t", torch.int16: "int16_t", torch.int32: "int", torch.int64: "int64_t"}


def as_int_of(value, dtype):
    """value (a number) as the int an integer tensor of `dtype` holds, truncated as torch casts it: InputError
    (torch's RuntimeError) for inf, NaN or a value past the dtype's range, before any launch; an unsigned dtype
    also takes a negative int down to -max, wrapped (-1 of uint8 is 255; -0.5 raises), as c10's checked
    conversion (overflows())."""
    info = torch.iinfo(dtype)
    wraps = info.min == 0 and isinstance(value, numbers.Integral)
    if not (-info.max if wraps else info.min) <= value <= info.max:  # False for NaN too
        raise InputError(f"value cannot be converted to type {_C_INTS[dtype]} without overflow: {value}")
    return int(value) % (info.max + 1) if info.min == 0 else int(value)


def as_int64(value):
    """as_int_of for int64 (a number given where torch takes an int64)."""
    return as_int_of(value, torch.int64)


def as_float_of(value, dtype):
    """value (a number) as the float an op on a float tensor of `dtype` reads: InputError (torch's RuntimeError)
    for a finite one past the dtype's range (1e30 for a float16 tensor's clamp bound), as torch converts it."""
    value = float(value)
    if abs(value) > torch.finfo(dtype).max and value != float("inf") and value != -float("inf"):  # NaN passes
        raise InputError(f"value cannot be converted to type {dtype} without overflow: {value}")
    return value


def as_value_of(value, dtype):
    """value (a number) as an element of a tensor of `dtype` holds it, torch's checked conversion of a fill
    value (masked_fill, index_fill, fill_diagonal_): a bool for bool, an int64 for integers, a float in the
    float dtype's range; InputError (torch's RuntimeError) past it, InputTypeError for no real number."""
    if not isinstance(value, numbers.Real):
        raise InputTypeError(f"value must be a number, not {type(value).__name__}")
    if dtype == torch.bool:
        return bool(value)
    return as_float_of(value, dtype) if dtype.is_floating_point else as_int_of(value, dtype)


CACHE_SIZE = 4096  # keys a per-shape cache holds before it starts over (shapes seen once, say)


def kept(cache, key, make):
    """cache[key], made by make() where missing (an error in make() keeps nothing): what is
    worked out per shape (checks passed, a launch's plan) once. Past CACHE_SIZE keys the cache
    starts over, so that memory stays bounded."""
    try:
        return cache[key]
    except KeyError:
        pass
    value = make()
    if len(cache) >= CACHE_SIZE:
        cache.clear()
    cache[key] = value
    return value


def plain(*values):
    """Whether every value is an int, a string, None or a tuple of ints, compared by value and by
    type alike: arguments that may key a cache of what was worked out from them (1.0 equals 1, and
    a check that refuses the one must not be skipped for it). A loop, not all(...): it runs on
    every call of the ops that cache."""
    for v in values:
        kind = type(v)
        if kind is tuple:  # a layer's stride or padding: loops, no generator (every conv call asks)
            for i in v:
                if type(i) is not int:
                    return False
        elif not (kind is int or kind is str or v is None):
            return False
    return True


def cdiv(a, b):
    """ceil(a / b) for the host side (triton.cdiv costs microseconds per call there)."""
    return -(-a // b)


def next_power_of_2(n):
    """The least power of 2 at least n (0 for 0), triton.next_power_of_2's answer, for the host
    side (Triton's is a jit-callable there: microseconds a call)."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


# The one-axis kernels' configs (elements per program, warps), from 4 to 16 elements a thread. The
# first is what the interpreter (with its own block) and TNET_AUTOTUNE=0 run.
BLOCK_CONFIGS = [triton.Config({"BLOCK": 1024}, num_warps=4), triton.Config({"BLOCK": 2048}, num_warps=8),
                 triton.Config({"BLOCK": 4096}, num_warps=8), triton.Config({"BLOCK": 2048}, num_warps=4),
                 triton.Config({"BLOCK": 512}, num_warps=2)]


def grid1d(n):
    """The grid of a one-axis kernel over n elements, BLOCK per program."""
    return lambda meta: (cdiv(n, meta["BLOCK"]),)


def tile_config(bm, bn, bk, warps, stages, **extra):
    """A GEMM-shaped kernel's config: BLOCK_M x BLOCK_N output tiles, BLOCK_K steps."""
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, **extra}, num_warps=warps, num_stages=stages)


SM_SHARED_MEMORY = 228 * 1024  # a Hopper SM's, shared by the programs resident on it


def stage_bytes(config, precision):
    """Shared memory of a tile_config's pipeline stages of A [BLOCK_M, BLOCK_K] and B [BLOCK_K, BLOCK_N],
    with 2-byte operands for 16-bit precisions, 4-byte ones otherwise."""
    kw, size = config.kwargs, 2 if precision in ("bf16", "fp16") else 4
    return (kw["BLOCK_M"] + kw["BLOCK_N"]) * kw["BLOCK_K"] * size * config.num_stages


def resident(config, precision):
    """How many programs of a tile_config an SM holds at a time, by their stages' shared memory."""
    return max(1, SM_SHARED_MEMORY // stage_bytes(config, precision))


def out_size(size, kernel, stride, pad, ceil_mode=False):
    """Output length of a sliding window; ceil mode drops a last window that starts in the
    right padding or past it (PyTorch's rule, padding or not)."""
    span = size + 2 * pad - kernel
    n = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (n - 1) * stride >= size + pad:
        n -= 1
    check(n >= 1, lambda: f"window of {kernel} with padding {pad} does not fit an input of {size} (output size {n})")
    return n


def is_channels_last(x):
    """Whether x [N, C, H, W] lies in channels-last memory (torch.channels_last: NHWC order)
    and not also in NCHW order (C == 1 or H == W == 1 make the two orders the same)."""
    return x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)


def memory_format(channels_last):
    """torch's memory format for a layout: channels-last, or NCHW (contiguous)."""
    return torch.channels_last if channels_last else torch.contiguous_format


def is_flat(x):
    """Contiguous, or channels-last: x's flat memory holds exactly its elements, in one of the
    two layouts the tape keeps, so a kernel may run over it as one vector."""
    return x.is_contiguous() or is_channels_last(x)


def dense(x):
    """x, or a dense copy of a strided view (a channel slice, a transpose): channels-last where its
    channels are innermost, for kernels that run over NCHW or channels-last memory."""
    if is_flat(x):
        return x
    return x.contiguous(memory_format=memory_format(x.dim() == 4 and x.stride(1) == 1 and x.shape[1] > 1))


def keeps_channels_last(channels):
    """Whether activations of this many channels are kept channels-last, where the
    convolutions read them fastest (a few channels, RGB, may stay NCHW)."""
    return channels >= 16
