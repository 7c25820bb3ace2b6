"""torch's in-place Tensor methods (add_, mul_, zero_, copy_, normal_, x += y, ...). Each writes
into the tensor's own memory (a strided view writes through to its base), counts one write in
`_version` (shared with views) and returns the tensor.

Under no_grad, or where nothing involved requires grad, the op just writes. Otherwise it is
recorded as torch records it: the result is computed out of place by the op of the same name
(its graph node beside it), copied into the memory, and the Tensor object takes the new node
(tensor.rebase), so that after `y = x * 2; y.add_(1)` the gradient of x is 2. As torch, a leaf
that requires grad refuses, and so does a view of one. A view in the graph (`y[:, :c] += z`, as
GhostNet's shortcut) is rebased, and so is its dense base (torch's CopySlices, _copy_slices), and so
are the strided views that the written view was made from by view ops, as views of that dense base
(monodepth2's `pix_coords = p.view(...).permute(0, 2, 3, 1); pix_coords[..., 0] /= w - 1`,
_rebase_as_views); another strided base (a view beside the written one's chain) is not: a backward
through an op that read it after the write raises (tensor.run_backward), as does a backward through
a view taken before its base was written (tensor._inputs_then)."""
import math
import warnings
import numbers

import numpy as np
import torch

from .. import amp
from ..factory import check_random_bounds, host_generator, is_global, rng_state
from ..kernels import copy as _copy
from ..kernels import pointwise as _pw
from ..kernels import random as _random
from ..kernels.copy import copy_ as _copy_
from ..kernels.launch import DTYPE_NAMES, InputError, as_int64, as_value_of, check, check_type, is_channels_last, is_flat, memory_format
from ..tensor import (INPLACE_NODE_NAMES, Tensor, bump_version, is_grad_enabled, memory_root, named, rebase, record,
                      tape_mark)
from ..tensor import tensor as tnet_tensor
from .copy import (Indexing, basic_index, check_put_dtype, expand, index_put, reshape, scalar_indices, scatter, scatter_add,
                   sequence_as_tuple, to)
from .inputs import check_args, check_tensors, needs_grad
from .pointwise import (abs, add, add_or_sub, addcdiv, addcmul, ceil, celu, checked_alpha, clamp, clamp_max, clamp_min,
                        div, elu, exp, floor, graph_sum_to, hardsigmoid, hardswish, hardtanh, leaky_relu, lerp, log,
                        masked_fill, mish, mul, neg, pow, relu, round, scale_first, scaled, selu, sigmoid, silu, sqrt,
                        sub, sum_to, tanh, threshold, trunc, where, record_relu, INPLACE_WRITERS)
from .random import bernoulli_draw, draw
from .reduce import any as _any

def _kind(v):
    """0 for bool, 1 for integers, 2 for floats (a tensor's dtype or a Python number's type)."""
    if isinstance(v, Tensor):
        return 0 if v.dtype == torch.bool else 2 if v.dtype.is_floating_point else 1
    return 0 if isinstance(v, bool) else 1 if isinstance(v, numbers.Integral) else 2


def _bases(t):
    """(the tensors in t's graph whose memory t views, the ids of the view ops' entries that made t
    from them): an in-place write to t changes them too."""
    bases, entries, stack = {}, set(), [t]  # by id: a Tensor's == is element-wise
    while stack:
        v = stack.pop()
        if v._entry is not None:
            for x in v._entry.inputs:
                if x.memory is not v.memory and memory_root(x.memory) is memory_root(v.memory) and id(x) not in bases:
                    bases[id(x)] = x
                    entries.add(id(v._entry))
                    stack.append(x)
    return list(bases.values()), entries


def _copy_slices(base, view, view_entries):
    """torch's CopySlices for a dense base whose memory the view (just written in place, with grad)
    shares: base takes a node whose backward sends its gradient on to base's former identity with
    the view's region zeroed, and that region to the view's new node. The region is found by the
    view's storage offset and strides, the gradient laid out as base's memory; view_entries, the
    view ops that made the view from base, may still read base's former identity (_inputs_then).
    False (nothing done) for a base that is itself strided."""
    B = base.memory
    if not is_flat(B):
        return False
    shape, strides, offset = tuple(view.memory.shape), view.memory.stride(), view.memory.storage_offset() - B.storage_offset()

    def backward(g):
        if g.stride() != B.stride():  # base's own strides, which the region's offset and strides assume
            g = _copy_(torch.empty_strided(B.shape, B.stride(), dtype=g.dtype, device=g.device), g)
        rest = g.clone()
        rest.as_strided(shape, strides, rest.storage_offset() + offset).zero_()
        return rest, g.as_strided(shape, strides, g.storage_offset() + offset).clone()
    old = Tensor(B, base.requires_grad)
    old._entry, old._views_through = base._entry, view_entries
    rebase(base, old, record("copy_slices", B, (old, view), backward))
    return True


def _strided_chain(t):
    """(the strided views that t was made from by view ops, nearest first, up to the first flat one; that flat
    tensor, or None where the chain ends without one)."""
    chain, v = [], t
    while v._entry is not None:
        x = next((x for x in v._entry.inputs
                  if x.memory is not v.memory and memory_root(x.memory) is memory_root(v.memory)), None)
        if x is None:
            return chain, None
        if is_flat(x.memory):
            return chain, x
        chain.append(x)
        v = x
    return chain, None


def _rebase_as_views(chain, flat, view_entries):
    """After flat (a dense base, just rebased by _copy_slices) took the write, each strided view in chain (the
    written view's own bases between it and flat) takes a node that views flat's new identity, as torch's views
    regenerate their grad_fn from their base after an in-place write: its gradient goes into flat's region."""
    B = flat.memory
    for c in chain:
        shape, strides = tuple(c.memory.shape), c.memory.stride()
        offset = c.memory.storage_offset() - B.storage_offset()

        def backward(g, shape=shape, strides=strides, offset=offset):
            out = torch.empty_strided(B.shape, B.stride(), dtype=g.dtype, device=g.device).zero_()
            _copy_(out.as_strided(shape, strides, out.storage_offset() + offset), g)
            return (out,)
        old = Tensor(c.memory, c.requires_grad)
        old._entry, old._views_through = c._entry, view_entries
        rebase(c, old, record("as_strided", c.memory, (flat,), backward))


def inplace(self, name, compute, others=(), keeps_self=False):
    """Write compute(x) (a tnet.Tensor of self's shape) into self's memory and return self. x is
    self, or, where the write is recorded, a Tensor with self's node before it (a copy of its
    values where keeps_self: the op's backward reads them); compute may also write self.memory
    itself and return a Tensor holding it. A result of a higher kind than self's dtype (float into
    an integer self, integer into a bool one) raises torch's RuntimeError, self untouched."""
    recording = is_grad_enabled() and (self.requires_grad or any(needs_grad(*others)))
    x = self
    bases = ()
    if recording:
        if self.requires_grad and self._entry is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        bases, view_entries = _bases(self)
        chain, flat = _strided_chain(self)
        if any(b.requires_grad and b._entry is None for b in bases):
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        x = Tensor(self.memory.clone() if keeps_self else self.memory, self.requires_grad)
        x._entry = self._entry
    version = self._version
    mark = tape_mark()
    out = compute(x)
    if name in INPLACE_NODE_NAMES:  # torch's node class of this in-place op, not its out-of-place op's
        named(name, mark, out)
    if out.dtype != self.dtype:  # a float result into an integer self, an integer one into a bool self
        _check_result(name, self, _kind(out))
    check(out.shape == self.shape,
          lambda: f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(out.shape)}")
    if out.memory is not self.memory:
        _copy_(self.memory, out.memory)
    if self._version == version:  # a torch fill counted itself
        bump_version(self)
    if recording and out._entry is not None:
        rebase(self, x, out)
        rebased = set()
        for base in bases:
            if _copy_slices(base, self, view_entries):
                rebased.add(id(base))
        if flat is not None and id(flat) in rebased:
            _rebase_as_views(chain, flat, view_entries)
            rebased.update(id(c) for c in chain)
        for base in bases:
            if id(base) not in rebased:  # not rebased: its later readers' gradients would miss the write's
                base.__dict__["_stale_after"] = out._entry.seq
    if "_low" in self.__dict__:  # a parameter's 16-bit copies read under autocast
        amp.refresh_low_copies(self)
    return self


def _check_result(name, self, kind):
    """torch's error where the result (of kind, _kind's) would not fit self's dtype."""
    if kind > _kind(self):
        result = {0: "Bool", 1: "Long", 2: "Float"}[kind]
        raise RuntimeError(f"result type {result} can't be cast to the desired output type {DTYPE_NAMES[self.dtype]}")


def _binary(name, op, self, other, keeps_self=False, result_kind=None):
    """self = op(self, other), other a tnet.Tensor or a Python number broadcast to self."""
    if isinstance(other, Tensor):
        if other.shape != self.shape:
            shape = _pw.broadcast_shape(name, self.shape, other.shape)
            check(shape == self.shape,
                  lambda: f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")
    else:
        check_type(isinstance(other, numbers.Real),
              lambda: f"{name}: other must be a tnet.Tensor or a Python number, got {type(other).__name__}")
    if not self.memory.is_floating_point():  # a float self takes any result
        _check_result(name, self, max(_kind(self), _kind(other)) if result_kind is None else result_kind)
    if _kernel_takes(op, other) and _writes_directly(self, other):  # nothing to record: the kernel writes self's memory itself
        _pw.pointwise(op.__name__, self.memory, other.memory if isinstance(other, Tensor) else other,
                      channels_last=is_channels_last(self.memory), out=self.memory)
        return inplace(self, name, lambda x: x)
    if op in (add, sub) and other is not self and _writes_directly(self, other, recorded=True):  # out += x
        return inplace(self, name, lambda x: add_or_sub(op.__name__, x, other, into=self.memory), (other,))
    return inplace(self, name, lambda x: op(x, x if other is self else other), (other,), keeps_self or other is self)


_CHECKED = ("heaviside", "gcd", "lcm", *_pw.BITWISE_OPS)  # their functions check the dtypes first


def _kernel_takes(op, other):
    """Whether op is the pointwise kernel's OP of its name and takes other as it is (integer
    tensors only where the OP takes them; the functions convert them first)."""
    name = op.__name__
    return name in _pw.ARITY and name not in _CHECKED and (not isinstance(other, Tensor) or other.dtype in _pw.FLOATS or name in _pw.INTEGER_OPS)


def _writes_directly(self, other, recorded=False):
    """Whether op(self, other) may be written by the pointwise kernel straight into self's memory:
    nothing records (or, with recorded, op's backward reads neither operand), self is a dense float
    tensor, and other a number, self itself or apart from it."""
    if not recorded and is_grad_enabled() and (self.requires_grad or needs_grad(other)[0]):
        return False
    if not (self.dtype in _pw.FLOATS and is_flat(self.memory)):
        return False
    if not isinstance(other, Tensor) or other.memory is self.memory:
        return True
    return memory_root(other.memory) is not memory_root(self.memory)


def add_(self, other, *deprecated, alpha=1):
    """self += alpha * other; also torch's deprecated add_(alpha, other) (scale_first)."""
    if deprecated:
        alpha, (other,) = scale_first("add_", (other, *deprecated), 1)
    alpha = checked_alpha(self, other, alpha)
    return _binary("add_", add, self, scaled(other, alpha))


def sub_(self, other, *deprecated, alpha=1):
    """self -= alpha * other; also torch's deprecated sub_(alpha, other) (scale_first)."""
    if deprecated:
        alpha, (other,) = scale_first("sub_", (other, *deprecated), 1)
    alpha = checked_alpha(self, other, alpha)
    return _binary("sub_", sub, self, scaled(other, alpha))


def mul_(self, other):
    return _binary("mul_", mul, self, other, keeps_self=needs_grad(other)[0])


def div_(self, other, *, rounding_mode=None):
    """self /= other (true division: an integer self raises, as torch); rounding_mode 'trunc' or 'floor' rounds
    the quotient as div's, an integer self staying one (a beam search's idx.div_(vocab, rounding_mode='floor'))."""
    if rounding_mode is None:
        return _binary("div_", div, self, other, keeps_self=needs_grad(other)[0], result_kind=2)

    def rounded(a, b):
        return div(a, b, rounding_mode=rounding_mode)
    return _binary("div_", rounded, self, other, keeps_self=True)


def _unary(name, op, keeps_self=False):
    """The method self.name(*args): self = op(self, *args); torch's error where that result's dtype
    does not fit self's (an integer self.exp_(): inplace's check)."""
    def method(self, *args, **kwargs):
        return inplace(self, name, lambda x: op(x, *args, **kwargs), keeps_self=keeps_self)
    method.__name__ = method.__qualname__ = name
    return method


abs_ = _unary("abs_", abs, keeps_self=True)
neg_ = _unary("neg_", neg)
sqrt_ = _unary("sqrt_", sqrt)
exp_ = _unary("exp_", exp)
log_ = _unary("log_", log, keeps_self=True)
sigmoid_ = _unary("sigmoid_", sigmoid)
tanh_ = _unary("tanh_", tanh)


def relu_(self):
    """self = relu(self), written straight into a dense float self's memory (no copy): relu's
    backward reads its output, which is then self's memory itself."""
    def compute(x):
        X = self.memory
        if X.dtype not in _pw.FLOATS or not is_flat(X):
            return relu(x)
        y = _pw.relu(X, out=X)
        bump_version(self)  # before record, which keeps y's version for the backward's check
        return record_relu(y, x)
    return inplace(self, "relu_", compute)


pow_ = _unary("pow_", pow, keeps_self=True)
floor_ = _unary("floor_", floor)  # DeiT's drop_path: (keep_prob + rand(shape)).floor_()
ceil_ = _unary("ceil_", ceil)
round_ = _unary("round_", round)
trunc_ = _unary("trunc_", trunc)
# F.relu_ and the other activations' in-place functional forms (their backwards read the input)
leaky_relu_ = _unary("leaky_relu_", leaky_relu, keeps_self=True)
hardtanh_ = _unary("hardtanh_", hardtanh, keeps_self=True)
elu_ = _unary("elu_", elu, keeps_self=True)
selu_ = _unary("selu_", selu, keeps_self=True)
celu_ = _unary("celu_", celu, keeps_self=True)
_threshold_ = _unary("threshold_", threshold, keeps_self=True)


def threshold_(self, threshold, value):
    """self = threshold(self, threshold, value). torch's threshold_, alone of the in-place activations,
    takes a self that overlaps itself (an expanded tensor): every alias of an element gets one value, so
    outside a recorded graph the write goes to each element once, through the stride-0 dims taken once."""
    if _copy.overlaps(self.memory) and not (is_grad_enabled() and self.requires_grad):
        _threshold_(Tensor(_each_once(self.memory)[0]), threshold, value)  # counts the write in self's version
        return self  # (one memory); an as_strided self that still overlaps raises copy_'s error
    return _threshold_(self, threshold, value)


def _each_once(m):
    """(m's elements each once: m with its stride-0 dims of more than one taken at one index, those dims), for
    the in-place writes torch takes on a tensor that overlaps itself (threshold_, masked_fill_)."""
    aliased = tuple(d for d, (n, st) in enumerate(zip(m.shape, m.stride())) if st == 0 and n > 1)
    return m.as_strided([1 if d in aliased else n for d, n in enumerate(m.shape)], m.stride(), m.storage_offset()), aliased


# the activations' inplace=True (F.relu(x, inplace=True), nn.ReLU(inplace=True), ...): their in-place forms
INPLACE_WRITERS.update(relu=relu_, leaky_relu=leaky_relu_, hardtanh=hardtanh_, elu=elu_, selu=selu_, celu=celu_,
                       threshold=threshold_, **{op.__name__: _unary(op.__name__ + "_", op, keeps_self=True)
                                                for op in (silu, hardswish, hardsigmoid, mish)})


def lerp_(self, end, weight):
    """self += weight * (end - self) (an EMA's update: ema.lerp_(p, 1 - decay))."""
    return inplace(self, "lerp_", lambda x: lerp(x, end, weight), (end, weight), keeps_self=True)


def addcmul_(self, tensor1, tensor2, *deprecated, value=1):
    """self += value * tensor1 * tensor2; also torch's deprecated addcmul_(value, tensor1, tensor2)."""
    if deprecated:
        value, (tensor1, tensor2) = scale_first("addcmul_", (tensor1, tensor2, *deprecated), 2)
    return inplace(self, "addcmul_", lambda x: addcmul(x, tensor1, tensor2, value=value), (tensor1, tensor2))


def addcdiv_(self, tensor1, tensor2, *deprecated, value=1):
    """self += value * tensor1 / tensor2; also torch's deprecated addcdiv_(value, tensor1, tensor2)."""
    if deprecated:
        value, (tensor1, tensor2) = scale_first("addcdiv_", (tensor1, tensor2, *deprecated), 2)
    return inplace(self, "addcdiv_", lambda x: addcdiv(x, tensor1, tensor2, value=value), (tensor1, tensor2))


def clamp_(self, min=None, max=None):
    """self = clamp(self, min, max); tensor bounds broadcast to self."""
    return inplace(self, "clamp_", lambda x: clamp(x, min, max), [v for v in (min, max) if isinstance(v, Tensor)],
                   keeps_self=True)


def clamp_min_(self, min):
    return inplace(self, "clamp_min_", lambda x: clamp_min(x, min), [min] if isinstance(min, Tensor) else [],
                   keeps_self=True)


def clamp_max_(self, max):
    return inplace(self, "clamp_max_", lambda x: clamp_max(x, max), [max] if isinstance(max, Tensor) else [],
                   keeps_self=True)


def _overwritten(name, x, data, src=None, zeros=()):
    """The record of data (self's memory, already written) replacing x's values: x's gradient is
    0, src's (if any: a tnet.Tensor that data was broadcast from) g in src's dtype summed back to its shape;
    zeros: more inputs whose gradient is 0 (a comparison's other, as torch's eq_'s)."""
    def backward(g):
        gx = torch.zeros_like(g) if x.requires_grad else None
        gz = tuple(torch.zeros_like(z.memory) for z in zeros)
        if src is None:
            return (gx, *gz)
        if g.dtype != src.dtype:  # torch casts g to src's dtype first, then sums the broadcast (in src's dtype)
            g = _copy_(torch.empty_like(g, dtype=src.dtype), g)
        return (gx, sum_to(g, src), *gz)
    return record(name, data, (x,) + ((src,) if src is not None else ()) + tuple(zeros), backward)


def fill_(self, value):
    """Every element = value (a number, or a one-element tnet.Tensor: a copy_ of it)."""
    if isinstance(value, Tensor):
        check(value.ndim == 0, lambda: f"fill_ only supports 0-dimension value tensor but got tensor with "
                                       f"{value.ndim} dimensions.")
        return copy_(self, value)
    check_type(isinstance(value, numbers.Real), lambda: f"fill_: value must be a number, got {type(value).__name__}")
    return inplace(self, "fill_", lambda x: _overwritten("fill_", x, self.memory.fill_(value)))


def zero_(self):
    return fill_(self, 0)


def copy_(self, src, non_blocking=False):
    """self's elements = src's, broadcast to self's shape and cast to self's dtype; src's gradient
    is summed back to its shape, self's earlier values get none. A number src is torch's wrapped 0-d tensor
    (bool, int64 or float64) cast to self's dtype as any copy, without fill_'s range check (1e10 into float16
    is inf, 300 into uint8 wraps to 44, NaN into int64 is INT64_MIN): cast on the host, by the CPU's rules,
    then filled in."""
    if isinstance(src, numbers.Number) and not isinstance(src, complex):
        dtype = torch.bool if isinstance(src, bool) else torch.int64 if isinstance(src, numbers.Integral) else torch.float64
        if dtype == torch.int64 and not -2 ** 63 <= src < 2 ** 63:
            raise OverflowError("int too big to convert")
        return fill_(self, torch.tensor(src, dtype=dtype).to(self.dtype).item())
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    shape = _pw.broadcast_shape("copy_", self.shape, src.shape)
    check(shape == self.shape,
          lambda: f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")

    def compute(x):
        _write(self.memory, src.memory)
        return _overwritten("copy_", x, self.memory, src)
    return inplace(self, "copy_", compute, (src,))


def _write(dst, src):
    """dst's elements = src's (torch tensors), broadcast and cast; a copy of src first where the two
    share memory (not where they are one), as elements would race."""
    if src is dst:
        return
    if memory_root(src) is memory_root(dst):
        src = src.clone()
    _copy_(dst, src.expand(dst.shape))


def _draws(name, self, normal, generator):
    """float32 numbers shaped and laid out as self: uniform [0, 1) or standard normal, from tnet's generator on
    the device, or on the host from generator= (a tnet.Generator, as `x.uniform_(-b, b, generator=g)` seeds an
    init), as tnet.rand and tnet.randn draw them."""
    if is_global(generator):
        return _random.fill_random_(torch.empty_like(self.memory, dtype=torch.float32,
                                                     memory_format=memory_format(is_channels_last(self.memory))),
                                    rng_state(), normal)
    return draw(self.shape, self.device, normal, generator, name).contiguous(
        memory_format=memory_format(is_channels_last(self.memory)))


def _draw(name, self, normal, scale, shift, generator):
    """self = shift + scale * (a uniform [0, 1) or standard normal draw: _draws')."""
    host_generator(name, generator)  # a torch.Generator: TypeError before anything is drawn
    check(self.dtype in _random.FLOATS, lambda: f"{name}: expected a float tensor, got {self.dtype}")

    def compute(x):
        z = _draws(name, self, normal, generator)
        if scale != 1 or shift != 0:
            z = _pw.pointwise("add", _pw.pointwise("mul", z, float(scale)), float(shift))
        _copy_(self.memory, z)
        if not normal:  # a value rounded up to the bound becomes the other bound, as torch's
            top = _pw.pointwise("eq", self.memory, float(shift + scale))
            _copy_(self.memory, _pw.pointwise("where", top, float(shift), self.memory))
        return _overwritten(name, x, self.memory)
    return inplace(self, name, compute)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Normal numbers of mean and std from tnet's generator (tnet.manual_seed; other numbers than
    torch's), as tnet.randn draws them."""
    check(std >= 0.0, lambda: f"normal expects std >= 0.0, but found std {std}")
    return _draw("normal_", self, True, std, mean, generator)


def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """Uniform numbers in [from_, to) from tnet's generator (other numbers than torch's)."""
    check(from_ <= to, lambda: f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _draw("uniform_", self, False, to - from_, from_, generator)


_RANDOM_TOP = {torch.float32: 2 ** 24, torch.float16: 2 ** 11, torch.bfloat16: 2 ** 8, torch.int64: 2 ** 63 - 1,
               torch.int32: 2 ** 31 - 1, torch.int16: 2 ** 15 - 1, torch.int8: 2 ** 7 - 1, torch.uint8: 2 ** 8 - 1,
               torch.bool: 1}  # random_()'s largest value: the dtype's exact integers


def random_(self, *args, generator=None, **kwargs):
    """Integers uniform in [from, to), as torch's forms random_(from, to), random_(to) and random_()
    (from 0 to 2^mantissa digits for floats, to the dtype's largest for integers, both included).
    Drawn on the host from tnet's init stream (tnet.manual_seed seeds it) or a numpy generator=,
    then copied to the device: other numbers than torch's."""
    if len(args) > 2 or set(kwargs) - {"from", "to"}:
        raise TypeError(f"random_() takes (from, to), (to) or (), got {len(args)} arguments and {sorted(kwargs)}")
    if len(args) == 1 and not kwargs:
        low, high = 0, args[0]
    else:
        bounds = {**dict(zip(("from", "to"), args)), **kwargs}
        low, high = bounds.get("from", 0), bounds.get("to")
    high = _RANDOM_TOP[self.dtype] + 1 if high is None else high
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    check_random_bounds(self.dtype, low, high)
    values = host_generator("random_", generator).integers(low, high, size=self.shape, dtype=np.int64)

    def compute(x):
        _copy_(self.memory, torch.from_numpy(values).to(self.device))
        return _overwritten("random_", x, self.memory)
    return inplace(self, "random_", compute)


def bernoulli_(self, p=0.5, *, generator=None):
    """self = 1 with probability p (a number or a tensor broadcast to self), else 0, from tnet's
    generator or generator= (random.draw; other numbers than torch's)."""
    host_generator("bernoulli_", generator)
    P = p.memory if isinstance(p, Tensor) else float(p)
    check(isinstance(p, Tensor) or 0.0 <= P <= 1.0, lambda: f"bernoulli_ expects p to be in [0, 1], but got p={p}")

    def compute(x):
        _copy_(self.memory, bernoulli_draw(P, self.shape, self.dtype, self.device, generator, "bernoulli_"))
        return _overwritten("bernoulli_", x, self.memory)
    return inplace(self, "bernoulli_", compute)


def exponential_(self, lambd=1.0, *, generator=None):
    """self = exponential numbers of rate lambd, -log(1 - u) / lambd from tnet's uniform u (other
    numbers than torch's)."""
    check_args("exponential_", "float", lambd=lambd)  # the parser's TypeError before the values' checks
    check(lambd > 0, lambda: f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    _draw("exponential_", self, False, 1.0, 0.0, generator)
    with_grad = _pw.pointwise("log1p", _pw.pointwise("neg", self.memory))
    _copy_(self.memory, _pw.pointwise("div", with_grad, -float(lambd)))
    return self

def _masked_value(name, input, mask, value):
    """value checked as masked_fill takes it (a number, cast to input's dtype, or a 0-d tnet.Tensor)
    with mask (bool, broadcast to input's shape)."""
    check_tensors(name, input=input, mask=mask)
    if mask.dtype != torch.bool:
        raise InputError(f"{name} only supports boolean masks, but got mask with dtype {mask.dtype}")
    if isinstance(value, Tensor):
        check(value.ndim == 0, lambda: f"{name} only supports a 0-dimensional value tensor, but got tensor "
                                       f"with {value.ndim} dimension(s).")
        value = to(value, input.dtype)
    else:
        value = as_value_of(value, input.dtype)  # cast to input's dtype, as torch
    shape = _pw.broadcast_shape(name, input.shape, mask.shape)
    check(shape == input.shape,
          lambda: f"output with shape {list(input.shape)} doesn't match the broadcast shape {list(shape)}")
    return value


def masked_fill_(self, mask, value):
    """self = value where mask. torch's takes a self that overlaps itself (an expanded tensor), with its
    deprecation UserWarning: an element gets value where the mask of any of its aliases is True, so outside
    a recorded graph the write goes to each element once, through the stride-0 dims taken once and the
    mask reduced over them by any."""
    value = _masked_value("masked_fill_", self, mask, value)
    if _copy.overlaps(self.memory) and not (is_grad_enabled() and self.requires_grad):
        warnings.warn("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before "
                      "performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar",
                      UserWarning, stacklevel=2)
        once, aliased = _each_once(self.memory)
        if aliased:
            mask = _any(expand(mask, self.shape), dim=aliased, keepdim=True)
        inplace(Tensor(once), "masked_fill_", lambda x: where(mask, value, x), (value,))  # counts the write in
        return self  # self's version (one memory); an as_strided self that still overlaps raises copy_'s error
    return inplace(self, "masked_fill_", lambda x: masked_fill(x, mask, value), (value,))


def setitem(self, index, value):
    """self[index] = value (a number, or a tnet.Tensor broadcast to the indexed part and cast), as
    torch's: basic indexing (ints, slices, None, ...; 0-d integer tensors among other items as
    ints, copy.scalar_indices) writes through a view; advanced indexing (copy.Indexing) puts value
    at the indexed elements, a repeated one keeping one of its values (which one is not fixed on
    the GPU, as torch's); a bool mask among full slices with a number or a 0-d tensor is
    masked_fill_ (no host read). The overwritten part gets no gradient; value's is summed back
    to its shape."""
    if isinstance(value, numbers.Real) and self.dtype in _pw.INTEGERS and self.dtype != torch.bool:
        as_int64(value)  # before the index, as torch converts it: x[1.5] = nan of an int64 x is its RuntimeError
    index = scalar_indices(sequence_as_tuple(index))
    plan = Indexing.of(self.memory, index)
    if plan is not None:
        sole = plan.sole_mask()
        if sole is not None and (not isinstance(value, Tensor) or value.ndim == 0):
            at, mask = sole
            mask = mask if isinstance(mask, Tensor) else tnet_tensor(mask)
            mark = tape_mark()
            masked_fill_(self, reshape(mask, mask.shape + (1,) * (self.ndim - at - mask.ndim)), value)
            if self._entry is not None and self._entry.op in ("masked_fill", "masked_fill_tensor"):  # torch's x[mask] = v
                named("index_put", mark, self)
        else:
            _put(self, plan, value)
        return  # None, as torch's __setitem__ (a tensor returned would meet `x.__setitem__(i, v) or x` as ambiguous)
    items = index if isinstance(index, tuple) else (index,)
    items = basic_index(items)
    value = _check_value(value, tuple(self.memory[items].shape))
    if _stored_back(self, items, value):
        bump_version(self)  # counted as a write, as torch's copy
        return

    def compute(x):
        part = self.memory[items]
        if isinstance(value, Tensor):
            _write(part, value.memory)
        else:  # a number past a float dtype's range is its inf (torch's fill_ on the GPU would raise)
            part.fill_(_pw.round_to(float(value), part.dtype) if part.dtype in _pw.FLOATS else value)

        def backward(g):
            gx = None
            if x.requires_grad:
                gx = g.clone()
                gx[items].zero_()
            if not isinstance(value, Tensor):
                return (gx,)
            gv = g[items]
            return gx, sum_to(gv if tuple(gv.shape) == value.shape else gv.contiguous(), value)  # reduce: dense

        def graph(g, y):  # the same linear maps of g on the tape: g off the written part (zeros there, as the
            keep = torch.ones(g.shape, dtype=torch.bool, device=g.device)  # backward's, a NaN of g too), that part of g
            keep[items] = False
            gx = where(Tensor(keep), g, 0.0) if x.requires_grad else None
            return (gx,) if not isinstance(value, Tensor) else (gx, graph_sum_to(g[items], value))
        return record("setitem", self.memory, (x, value) if isinstance(value, Tensor) else (x,), backward,
                      graph=graph)
    inplace(self, "setitem", compute, (value,))


def _stored_back(self, items, value):
    """Whether self[items] = value stores back the view that an in-place op just wrote, as Python's `x[:, 2:] +=
    x[:, :2]` does (x.__setitem__(i, x[i].__iadd__(...))): the same memory, whose write self's latest node (the
    write's copy_slices, or a strided self's view of its dense base whose copy_slices does, _rebase_as_views)
    already records. Recorded again, the copy would read that view after its own write."""
    entry = self._entry
    if entry is not None and entry.op == "as_strided":
        entry = entry.inputs[0]._entry
    if not isinstance(value, Tensor) or entry is None or entry.op != "copy_slices" or entry.inputs[-1] is not value:
        return False
    part, memory = self.memory[items], value.memory
    return (memory.data_ptr(), memory.shape, memory.stride()) == (part.data_ptr(), part.shape, part.stride())


def _check_value(value, shape):
    """value as it is written into the indexed part of `shape`: a number, or a tnet.Tensor that broadcasts
    to shape once its leading size-1 dims past shape's are dropped (a view, with its gradient), as torch's
    copy into an index (slicePrefix1sSize: `advantages[t] = delta` of a [1, n] delta into [n])."""
    if not isinstance(value, Tensor):
        check_type(isinstance(value, numbers.Real),
              lambda: f"tnet.Tensor item assignment: value must be a number or a tnet.Tensor, got {type(value).__name__}")
        return value
    lead = 0
    while value.ndim - lead > len(shape) and value.shape[lead] == 1:
        lead += 1
    if lead:
        value = reshape(value, tuple(value.shape[lead:]))
    fits = value.ndim <= len(shape) and all(v in (1, p) for v, p in zip(value.shape[::-1], shape[::-1]))
    check(fits, lambda: f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to indexing "
                        f"result of shape {list(shape)}")
    return value


def _put(self, plan, value):
    """self[index] = value for advanced indexing (plan, a copy.Indexing): value's elements put along
    the indexed block of self's memory (plan.block) by the copy kernel."""
    plan.resolve()
    shape = plan.shape
    value = _check_value(value, shape)
    memory = self.memory
    index, wrap, report = plan.flat(plan.memory_strides(memory), memory.device)
    check_put_dtype(self, value)  # after the indices' bounds, as torch's
    part_shape = list(plan.block(memory).shape)
    part_shape[plan.axis] = index.shape[0]

    def compute(x):
        if isinstance(value, Tensor):
            src = value.memory.clone() if memory_root(value.memory) is memory_root(memory) else value.memory
            src = src.expand(shape).reshape(part_shape)
        else:
            src = torch.full((), value, dtype=memory.dtype, device=memory.device).expand(part_shape)
        _copy.put_(plan.block(memory), src, index, plan.axis, report, wrap)
        strides = memory.stride()

        def backward(g):
            if g.stride() != strides:  # the block's strides are memory's
                g = _copy_(torch.empty_strided(g.shape, strides, dtype=g.dtype, device=g.device), g)
            gx = None
            if x.requires_grad:
                gx = g.clone()
                zeros = torch.zeros((), dtype=g.dtype, device=g.device).expand(part_shape)
                _copy.put_(plan.block(gx), zeros, index, plan.axis, None, wrap)
            if not isinstance(value, Tensor):
                return (gx,)
            return gx, sum_to(gathered(g), value)

        def gathered(g):  # the indexed elements of g, in value's broadcast shape
            if g.stride() != strides:  # the block's strides are memory's
                g = _copy_(torch.empty_strided(g.shape, strides, dtype=g.dtype, device=g.device), g)
            gv = torch.empty(part_shape, dtype=g.dtype, device=g.device)
            _copy.gather_(gv, plan.block(g), index, plan.axis, None, wrap)
            return gv.view(shape)

        def added(k):  # gathered's adjoint: k added at the indexed elements of zeros (a repeated index sums)
            out = torch.empty_strided(memory.shape, strides, dtype=torch.float32, device=k.device).zero_()
            _copy.index_add_(plan.block(out), k.reshape(part_shape), index, plan.axis, wrap)
            return out if k.dtype == torch.float32 else _copy_(torch.empty_like(out, dtype=k.dtype), out)

        def graph(g, y):  # the same linear maps of g on the tape: g off the indexed elements, and g there
            gx = None
            if x.requires_grad:  # zeros at the indexed elements, as the backward's (a NaN of g too)
                keep = torch.empty_strided(memory.shape, strides, dtype=torch.bool, device=g.device).fill_(True)
                _copy.put_(plan.block(keep), torch.zeros((), dtype=torch.bool, device=g.device).expand(part_shape),
                           index, plan.axis, None, wrap)
                gx = where(Tensor(keep), g, 0.0)
            if not isinstance(value, Tensor):
                return (gx,)
            return gx, graph_sum_to(record("setitem_backward", gathered(g.memory), (g,), lambda k: (added(k),)), value)
        # advanced indexing's node: torch's index_put_'s
        return record("index_put", memory, (x, value) if isinstance(value, Tensor) else (x,), backward, saved=(index,),
                      graph=graph)
    return inplace(self, "setitem", compute, (value,))


# ---- the in-place forms of more element-wise functions (the eighth session) -------------------
from . import pointwise as _pointwise  # noqa: E402


def _boolean(name, op):
    """op (a comparison or a logical op), whose bool result carries no gradient: recorded, where x (or a
    comparison's other) is in the graph, as overwriting x, so that x's past and other get 0, as torch's eq_ & co
    (torch's logical_and_ & co record nothing: other gets no gradient, x's past gets g unchanged, where tnet's 0)."""
    def fn(x, *args):
        out = op(x, *args)
        others = [a for a in args if isinstance(a, Tensor) and a.requires_grad and a is not x
                  and not name.startswith("logical_")]
        return _overwritten(name, x, out.memory, zeros=others) if x.requires_grad or others else out
    fn.__name__ = op.__name__  # still the kernel's OP (_kernel_takes)
    return fn


# unary: those whose gradient reads the input (MATH's "x", and the others but expm1, exp2, rsqrt,
# tan, erfinv and sign's family) keep a copy of it while recording
for _name in ("acos", "asin", "atan", "cos", "cosh", "sin", "sinh", "tan", "erf", "erfc", "erfinv", "exp2", "expm1",
              "log10", "log1p", "log2", "reciprocal", "rsqrt", "square", "sign", "sgn", "frac", "fix", "lgamma",
              "digamma", "deg2rad", "rad2deg", "negative", "logit", "nan_to_num", "acosh", "asinh", "atanh", "sinc",
              "absolute", "arccos", "arcsin", "arctan", "arccosh", "arcsinh", "arctanh", "i0"):
    _spec = _pointwise.MATH.get(getattr(_pointwise, _name).__name__, ())
    globals()[_name + "_"] = _unary(_name + "_", getattr(_pointwise, _name),
                                    keeps_self=not _spec or "x" in _spec[3:])
logical_not_ = _unary("logical_not_", _boolean("logical_not_", _pointwise.logical_not))
bitwise_not_ = _unary("bitwise_not_", _pointwise.bitwise_not)


def _binary_method(name, op, result_kind=None):
    """The method self.name(other): self = op(self, other), other broadcast to self; result_kind
    (_kind's): the kind of op's result where it is not the operands' (2: a float; 0: a bool)."""
    if result_kind == 0:
        op = _boolean(name, op)

    def method(self, other):
        return _binary(name, op, self, other, keeps_self=True, result_kind=result_kind)
    method.__name__ = method.__qualname__ = name
    return method


for _name, _kind_of_result in {
        "atan2": 2, "arctan2": 2, "hypot": 2, "xlogy": 2, "copysign": 2, "ldexp": 2, "float_power": 2,
        "true_divide": 2, "fmod": None, "remainder": None, "floor_divide": None, "heaviside": None, "gcd": None,
        "lcm": None, "multiply": None, "bitwise_and": None, "bitwise_or": None, "bitwise_xor": None,
        "logical_and": 0, "logical_or": 0, "logical_xor": 0, "eq": 0, "ne": 0, "lt": 0, "le": 0, "gt": 0, "ge": 0,
        "greater": 0, "greater_equal": 0, "less": 0, "less_equal": 0, "not_equal": 0}.items():
    globals()[_name + "_"] = _binary_method(_name + "_", getattr(_pointwise, _name), _kind_of_result)


def _tensor_other(method):
    """method, whose other must be a tnet.Tensor (torch's igamma_ takes no Python number)."""
    def checked(self, other):
        check_tensors(method.__name__, other=other)
        return method(self, other)
    checked.__name__ = checked.__qualname__ = method.__name__
    return checked


igamma_ = _tensor_other(_binary_method("igamma_", _pointwise.igamma, 2))
igammac_ = _tensor_other(_binary_method("igammac_", _pointwise.igammac, 2))


def divide_(self, other, *, rounding_mode=None):
    """self = divide(self, other, rounding_mode=...) (true division: an integer self raises, as torch)."""
    if rounding_mode is None:
        return div_(self, other)
    return _binary("divide_", lambda x, y: _pointwise.div(x, y, rounding_mode=rounding_mode), self, other)


def subtract_(self, other, *, alpha=1):
    return sub_(self, other, alpha=alpha)


# ---- the tensor surface of the eighth session (ops3): more in-place draws ----------------------

def _transformed_draw(name, self, normal, transform, generator, integers=False):
    """self = transform(z) (torch tensors, in fp32), z uniform [0, 1) or standard normal numbers of
    tnet's generator or generator= (_draws; other numbers than torch's); integers: an integer self takes the
    result too."""
    host_generator(name, generator)
    check(self.dtype in _random.FLOATS or integers and self.dtype in (torch.int64, torch.int32),
          lambda: f"{name}: expected a float tensor, got {self.dtype}")

    def compute(x):
        z = _draws(name, self, normal, generator)
        _write(self.memory, transform(z))
        return _overwritten(name, x, self.memory)
    return inplace(self, name, compute)


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Cauchy numbers, median + sigma tan(pi (u - 1/2)) of tnet's uniform u, as torch's formula."""
    check_args("cauchy_", "float", median=median, sigma=sigma)  # the parser's TypeError before the values' checks
    check(sigma > 0.0, lambda: f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    half_turn = lambda u: _pw.pointwise("tan", _pw.pointwise("sub", _pw.pointwise("mul", u, math.pi), math.pi / 2))
    return _transformed_draw("cauchy_", self, False, lambda u: _pw.pointwise(
        "add", _pw.pointwise("mul", half_turn(u), float(sigma)), float(median)), generator)


def geometric_(self, p, *, generator=None):
    """Geometric numbers (trials up to the first success of probability p: 1, 2, ...), as torch's
    ceil(log(u) / log(1 - p)) of a uniform u in (0, 1] (1 - tnet's u); integer tensors too."""
    check_args("geometric_", "float", p=p)  # the parser's TypeError before the values' checks
    check(0.0 < p < 1.0, lambda: f"geometric_ expects p to be in (0, 1), got p={p}")
    scale = 1.0 / math.log1p(-p)
    trials = lambda u: _pw.pointwise("ceil", _pw.pointwise("mul", _pw.pointwise("log1p", _pw.pointwise("neg", u)), scale))
    return _transformed_draw("geometric_", self, False, lambda u: _pw.pointwise("clamp", trials(u), 1.0, math.inf),
                             generator, integers=True)  # u = 0 would give 0 trials


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """exp of normal numbers of mean and std, as torch's log_normal_."""
    check_args("log_normal_", "float", mean=mean, std=std)  # the parser's TypeError before the values' checks
    check(std > 0.0, lambda: f"log_normal_ expects std > 0.0, but found std={std}")
    return _transformed_draw("log_normal_", self, True, lambda z: _pw.pointwise(
        "exp", _pw.pointwise("add", _pw.pointwise("mul", z, float(std)), float(mean))), generator)


def apply_(self, callable):
    """self's elements replaced by callable(element), called on the host per element (Python numbers),
    as torch's CPU-only apply_ (tnet's on any device: a copy to the host and back). No gradient."""
    return _per_element("apply_", self, lambda values: [callable(v) for v in values])


def map_(self, tensor, callable):
    """self's elements replaced by callable(element, tensor's element) (tensor broadcast to self), called
    on the host per element, as torch's CPU-only map_. No gradient."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    others = tensor.memory.expand(self.shape).reshape(-1).tolist()
    return _per_element("map_", self, lambda values: [callable(v, w) for v, w in zip(values, others)])


def _per_element(name, self, compute_values):
    values = compute_values(self.memory.reshape(-1).tolist())

    def compute(x):
        _copy_(self.memory, torch.tensor(values, dtype=self.dtype).reshape(self.shape).to(self.device))
        return _overwritten(name, x, self.memory)
    return inplace(self, name, compute)


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """Tensor.scatter_: scatter's result written into self (returned), recorded as an in-place op
    (gradients as torch's: self's outside the written positions, src's at them)."""
    return inplace(self, "scatter_", lambda x: scatter(x, dim, index, src, value, reduce=reduce),
                   [src] if isinstance(src, Tensor) else [])


def scatter_add_(self, dim, index, src):
    """Tensor.scatter_add_: scatter_add's result written into self (returned), recorded as scatter_."""
    return inplace(self, "scatter_add_", lambda x: scatter_add(x, dim, index, src), [src] if isinstance(src, Tensor) else [])


def index_put_(self, indices, values, accumulate=False):
    """Tensor.index_put_: self[indices] = values (a tuple of index tensors, as x[i, j] = v), or with
    accumulate index_put's sums written into self, recorded as an in-place op (gradients as torch's)."""
    check_args("index_put_", "bool", accumulate=accumulate)  # the parser's TypeError before any value's check
    indices = tuple(indices)
    if not accumulate:
        self[indices] = values
        return self
    return inplace(self, "index_put_", lambda x: index_put(x, indices, values, True), [v for v in (values,) if isinstance(v, Tensor)])
