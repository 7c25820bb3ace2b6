#!/usr/bin/env python3
"""Fuzz tnet's public ops and layers against torch on bad and corner-case input.

usage: python tools/fuzz_ops.py [--cases N] [--seed S] [--ops NAME,...] [--case I] [--json PATH] [--list]

Case i runs op i % len(OPS) (round robin over ~1030 tnet.* functions, Tensor methods and operators,
tnet.nn.functional ops and nn layers, forward and, for the differentiable ones, backward) on input
drawn from a generator seeded by (seed, i): odd and 0-sized shapes, 0-d tensors, NaN/inf/-0.0 and
huge values, int64/int32/uint8/bool/float16/bfloat16 dtypes, 3-D volumes, transposed, step-sliced, expanded, channels-last,
offset (a channel slice) and permuted views, and, at random, bad arguments (wrong rank, dtype or type,
out-of-range dims and indices, negative sizes, mismatched shapes). torch and tnet run the same input; each case is one of:

  match          same values (NaN where torch has NaN), dtype and shape, or both raised the same kind
  error-kind     both raised, tnet's error not an instance of torch's type
  silent-wrong   both returned, results differ (values, dtype or shape): the worst outcome
  internal       tnet raised AttributeError/KeyError/AssertionError/..., from inside Triton, or a
                 message of several lines
  timeout        tnet ran past --timeout seconds
  tnet-only      tnet raised where torch returned
  torch-only     torch raised where tnet returned

The summary (counts overall and per op, and every case that is not a match, with its input
described: f32[2, 3]t!NH^ is a float32 [2, 3] transposed view holding NaN and huge values that requires
grad; the flags: N NaN, I inf, Z zero, H finite beyond 1e30, S subnormal; the layouts: t transposed, s
step-sliced, e expanded, cl channels-last, o offset (a channel slice x[:, 1:] of an image, else x[1:]), p
the first dim innermost) is written as JSON to --json; --case I replays one case and prints both sides in full.
"""
import argparse
import collections
import json
import math
import os
import signal
import sys
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout's tnet

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as tF  # noqa: E402

import tnet  # noqa: E402
import tnet.functional as F  # noqa: E402

F32, F16, BF16, I64, BOOL = torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool
I32, U8 = torch.int32, torch.uint8  # drawn in place of int64 at times (SMALL_INTS): numpy's indices, uint8 images
SMALL_INTS = 0.3
FLOATS = (F32, F32, F32, F16, BF16)
ANY = (F32, F32, F32, F16, BF16, I64, I64, BOOL)
SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 3e38, -3e38, 1e-40, 65504.0, 1e5]
TOL = {F32: 1e-4, F16: 1e-2, BF16: 3e-2}
INTERNAL = (AttributeError, KeyError, AssertionError, UnboundLocalError, NameError, ZeroDivisionError,
            OverflowError, SystemError, RecursionError, MemoryError)


class Timeout(BaseException):
    """Raised by the alarm: a BaseException, so that no `except Exception` in the code under test eats it."""


class T:
    """A tensor input: a contiguous base (torch), a view of it (layout) and whether it requires grad.
    make() gives a fresh copy each call, so torch and tnet never share memory."""

    def __init__(self, base, view, layout, grad):
        self.base, self.view, self.layout, self.grad = base, view, layout, grad

    @property
    def shape(self):
        return tuple(self.view(self.base).shape)

    @property
    def dtype(self):
        return self.base.dtype

    @property
    def ndim(self):
        return len(self.shape)

    def make(self):
        v = self.view(self.base.clone())
        if self.grad:
            v = v.detach().requires_grad_(True)
        return v

    def __repr__(self):
        name = {F32: "f32", F16: "f16", BF16: "bf16", I64: "i64", I32: "i32", U8: "u8", BOOL: "bool"}.get(self.dtype,
                                                                                                       str(self.dtype))
        special = ""
        if self.dtype.is_floating_point and self.base.numel():
            b = self.base.double()
            tiny, huge = (b != 0) & (b.abs() < 1.2e-38), b.isfinite() & (b.abs() > 1e30)
            special = "".join(s for s, c in (("N", b.isnan()), ("I", b.isinf()), ("Z", b == 0), ("H", huge), ("S", tiny))
                              if c.any())
        lay = "" if self.layout == "c" else self.layout
        return f"{name}{list(self.shape)}{lay}{special and '!' + special}{'^' if self.grad else ''}"


class Gen:
    """Draws an op's arguments; `bad` is the chance that an argument drawn through `maybe` is a bad one."""

    def __init__(self, rng, bad):
        self.r, self.bad = rng, bad

    def pick(self, seq):
        return seq[int(self.r.integers(len(seq)))]

    def chance(self, p):
        return self.r.random() < p

    def maybe(self, good, *bad):
        """good, or (at the bad rate) one of the bad alternatives."""
        return self.pick(bad) if bad and self.chance(self.bad) else good

    def shape(self, rank=None, zero=0.08):
        rank = self.pick((0, 1, 2, 2, 3, 3, 4)) if rank is None else rank
        return tuple(0 if self.chance(zero) else self.pick((1, 2, 3, 3, 4, 5)) for _ in range(rank))

    def t(self, shape=None, rank=None, dt=FLOATS, vals="normal", grad=None, layout=None, special=0.35):
        """A tensor input. dt: a dtype or a tuple to pick from; vals: normal, pos (> 0), prob ([0, 1]),
        or (lo, hi) integers; special: the chance of NaN/inf/-0.0/huge values at a few places."""
        shape = self.shape(rank) if shape is None else tuple(shape)
        dtype = self.pick(dt) if isinstance(dt, tuple) else dt
        if dtype == I64 and isinstance(dt, tuple) and self.chance(SMALL_INTS):  # a choice of dtypes: int32 or uint8 too
            dtype = self.pick((I32, U8))
        layout = layout or self.pick(("c", "c", "c", "t", "s", "e", "cl", "o", "p"))
        if layout == "t" and len(shape) < 2 or layout == "cl" and len(shape) != 4 or layout == "o" and not shape \
                or layout == "p" and len(shape) < 3:
            layout = "c"
        if layout == "e" and not any(s > 1 for s in shape):
            layout = "c"
        base_shape = list(shape)
        if layout == "t":
            base_shape[-2], base_shape[-1] = base_shape[-1], base_shape[-2]
            view = lambda b: b.transpose(-1, -2)  # noqa: E731
        elif layout == "s":
            if shape:
                base_shape[-1] = 2 * shape[-1]
            view = lambda b: b[..., ::2] if b.dim() else b  # noqa: E731
        elif layout == "e":
            d = self.pick([i for i, s in enumerate(shape) if s > 1])
            base_shape[d] = 1
            view = lambda b: b.expand(shape)  # noqa: E731
        elif layout == "cl":
            view = lambda b: b.contiguous(memory_format=torch.channels_last)  # noqa: E731
        elif layout == "o":  # a slice past the first element: a channel slice x[:, 1:] of an image, else of dim 0
            d = 1 if len(shape) == 4 else 0
            base_shape[d] = shape[d] + 1
            view = lambda b: b.narrow(d, 1, shape[d])  # noqa: E731
        elif layout == "p":  # the first dim innermost in memory (a batch-last buffer seen batch-first)
            base_shape = list(shape[1:]) + [shape[0]]
            view = lambda b: b.permute(b.dim() - 1, *range(b.dim() - 1))  # noqa: E731
        else:
            view = lambda b: b  # noqa: E731
        n = int(np.prod(base_shape))
        if isinstance(vals, tuple) or not dtype.is_floating_point:
            lo, hi = vals if isinstance(vals, tuple) else (-4, 5)
            a = self.r.integers(lo, hi, n) if dtype != BOOL else self.r.integers(0, 2, n)
        else:
            a = self.r.standard_normal(n)
            if vals == "pos":
                a = np.abs(a) + 0.1
            elif vals == "prob":
                a = self.r.random(n)
            if n and self.chance(special):
                idx = self.r.choice(n, size=min(n, int(self.r.integers(1, 4))), replace=False)
                a[idx] = [self.pick(SPECIAL) for _ in idx]
        base = torch.tensor(a.reshape(base_shape)).to(dtype)
        grad = dtype.is_floating_point if grad is None else grad and dtype.is_floating_point
        return T(base, view, layout, grad)

    def like(self, x, dt=None, vals="normal"):
        """A second operand for x: the same shape, a broadcastable one, or (bad) a mismatched one."""
        s = list(x.shape)
        choice = self.pick(("same", "same", "suffix", "ones", "scalar0d", "mismatch" if self.chance(self.bad * 2) else "same"))
        if choice == "suffix":
            s = s[self.pick(range(len(s) + 1)):] if s else s
        elif choice == "ones":
            s = [1 if self.chance(0.5) else v for v in s]
        elif choice == "scalar0d":
            s = []
        elif choice == "mismatch":
            s = s + [] if not s else s[:-1] + [s[-1] + 1]
        return self.t(shape=s, dt=x.dtype if dt is None and self.chance(0.7) else (dt or ANY), vals=vals)

    def dim(self, x, none=False):
        n = max(x.ndim, 1)
        good = int(self.r.integers(-n, n)) if not (none and self.chance(0.3)) else None
        return self.maybe(good, n, -n - 1, 7, "1", 1.0, None)

    def scalar(self):
        return self.pick((2, 0.5, -1, 0, 3, 1e30, math.nan, math.inf, -0.0, True, 2.5))


# ---- the ops ----------------------------------------------------------------------------------

OPS = []  # (name, torch callable, tnet callable, generator of (args, kwargs), extra)


def op(name, torch_fn, tnet_fn, gen, grad=True, cmp="values"):
    OPS.append(dict(name=name, torch=torch_fn, tnet=tnet_fn, gen=gen, grad=grad, cmp=cmp))


def top(name, gen, grad=True, cmp="values", fname=None):
    """torch.NAME against tnet.NAME."""
    op(name, getattr(torch, fname or name), getattr(tnet, fname or name), gen, grad, cmp)


def fop(name, gen, grad=True, cmp="values"):
    """torch.nn.functional.NAME against tnet.functional.NAME."""
    op("F." + name, getattr(tF, name), getattr(F, name), gen, grad, cmp)


def meth(name, gen, grad=True, cmp="values"):
    """The Tensor method NAME, called on the first argument."""
    fn = lambda x, *a, **k: getattr(x, name)(*a, **k)  # noqa: E731
    op("." + name, fn, fn, gen, grad, cmp)


def oper(name, fn, gen, grad=True):
    op(name, fn, fn, gen, grad)


def u(dt=ANY, vals="normal"):
    def gen(g):
        return (g.t(dt=dt, vals=vals),), {}
    return gen


def b(dt=ANY, scalar=0.25):
    def gen(g):
        x = g.t(dt=dt)
        return (x, g.scalar() if g.chance(scalar) else g.like(x, dt=dt)), {}
    return gen


def red(keep=True, none=True, dt=ANY):
    def gen(g):
        x = g.t(dt=dt)
        d = g.dim(x, none=none)
        if d is None:
            return (x,), {}
        return (x, d), ({"keepdim": g.maybe(g.chance(0.5), "yes")} if keep else {})
    return gen


for name in ("abs", "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "floor", "ceil", "round",
             "trunc", "sign", "reciprocal", "square", "expm1", "log1p", "log2", "log10", "exp2", "erf", "frac",
             "isnan", "isinf", "isfinite", "signbit", "logical_not", "relu", "asin", "atan", "sinh", "cosh"):
    top(name, u(), grad=name not in ("isnan", "isinf", "isfinite", "signbit", "logical_not"))
top("bitwise_not", u(dt=(I64, BOOL, F32)), grad=False)
top("nan_to_num", lambda g: ((g.t(),), g.pick(({}, {"nan": 1.5}, {"posinf": 7.0, "neginf": -7.0}))))
top("logit", lambda g: ((g.t(vals="prob"),), {"eps": g.pick((None, 1e-3))}))
for name in ("add", "sub", "mul", "div", "maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "logaddexp", "xlogy",
             "remainder", "fmod", "floor_divide", "true_divide"):
    top(name, b(), grad=name != "floor_divide")  # torch has no floor_divide derivative
for name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"):
    top(name, b(), grad=False)
for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    top(name, b(dt=(I64, BOOL, F32)), grad=False)
top("pow", lambda g: (lambda x: ((x, g.scalar() if g.chance(0.5) else g.like(x)), {}))(g.t(dt=ANY)))
top("div", lambda g: (lambda x: ((x, g.like(x)), {"rounding_mode": g.maybe(g.pick(("floor", "trunc", None)), "up")}))(
    g.t(dt=ANY)), fname="div")
OPS[-1]["name"] = "div(rounding_mode)"
top("clamp", lambda g: (lambda x: ((x,), g.pick(({"min": -0.5}, {"max": 0.5}, {"min": 0.5, "max": -0.5}, {},
                                                   {"min": g.like(x)}, {"min": math.nan}))))(g.t(dt=ANY)))
top("where", lambda g: (lambda x: ((g.t(shape=x.shape, dt=g.maybe(BOOL, F32, I64)), x, g.like(x)), {}))(g.t()))
top("lerp", lambda g: (lambda x: ((x, g.like(x), g.pick((0.3, g.t(shape=x.shape)))), {}))(g.t()))
top("addcmul", lambda g: (lambda x: ((x, g.like(x), g.like(x)), {"value": g.pick((1, 0.5, -2))}))(g.t()))
top("addcdiv", lambda g: (lambda x: ((x, g.like(x), g.like(x)), {"value": g.pick((1, 0.5, -2))}))(g.t()))
top("isclose", lambda g: (lambda x: ((x, g.like(x)), {"equal_nan": g.chance(0.5)}))(g.t()), grad=False)
top("allclose", lambda g: (lambda x: ((x, g.like(x)), {}))(g.t()), grad=False)
top("equal", lambda g: (lambda x: ((x, g.like(x)), {}))(g.t(dt=ANY)), grad=False)
top("masked_fill", lambda g: (lambda x: ((x, g.t(shape=x.shape, dt=g.maybe(BOOL, F32)), g.scalar()), {}))(g.t(dt=ANY)))
top("threshold", lambda g: ((g.t(), 0.1, g.scalar()), {}))
top("hardshrink", lambda g: ((g.t(),), {"lambd": g.maybe(0.5, -1.0)}))
top("celu", lambda g: ((g.t(),), {"alpha": g.maybe(1.0, 0.0)}))
top("selu", u(dt=FLOATS))
for name in ("sum", "mean", "prod", "nansum", "nanmean", "logsumexp", "amax", "amin", "argmax", "argmin", "all", "any",
             "count_nonzero", "std", "var"):
    top(name, red(keep=name != "count_nonzero", none=name != "logsumexp",
                  dt=FLOATS if name in ("mean", "nanmean", "logsumexp", "std", "var") else ANY),
        grad=name not in ("argmax", "argmin", "all", "any", "count_nonzero"))
top("max", red(dt=ANY))
top("min", red(dt=ANY))
top("median", red(none=True), cmp="values")
top("cumsum", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t(dt=ANY)))
top("cumprod", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t()))
top("cummax", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t()))
top("sort", lambda g: (lambda x: ((x,), {"dim": g.dim(x), "descending": g.chance(0.5), "stable": True}))(g.t(dt=ANY)))
top("argsort", lambda g: (lambda x: ((x,), {"dim": g.dim(x), "stable": True}))(g.t(dt=ANY)), grad=False)
top("topk", lambda g: (lambda x: ((x, g.maybe(int(g.r.integers(0, 3)), -1, 99)), {"dim": g.dim(x)}))(g.t(special=0)))
top("kthvalue", lambda g: (lambda x: ((x, g.maybe(1, 0, 99)), {"dim": g.dim(x)}))(g.t(special=0)))
top("norm", lambda g: ((g.t(),), {"p": g.pick((2, 1, "fro", math.inf)), "dim": g.pick((None, -1))}))
top("aminmax", lambda g: ((g.t(dt=ANY),), {}), grad=False)
top("diff", lambda g: (lambda x: ((x,), {"dim": g.dim(x)}))(g.t()))
top("unique", lambda g: ((g.t(dt=(I64, F32), vals=(-3, 3)),), {"sorted": True}), grad=False)
top("nonzero", u(dt=ANY), grad=False)
top("bincount", lambda g: ((g.t(rank=g.maybe(1, 2), dt=g.maybe(I64, F32), vals=(g.maybe(0, -2), 6)),), {}), grad=False)
top("histc", lambda g: ((g.t(dt=F32, special=0.2),), {"bins": g.maybe(4, 0, -1), "min": 0, "max": g.pick((1, 0))}),
    grad=False)
top("isin", lambda g: ((g.t(dt=I64, vals=(0, 5)), g.t(rank=1, dt=I64, vals=(0, 5))), {}), grad=False)
# shape ops
top("reshape", lambda g: (lambda x: ((x, g.maybe(tuple(reversed(x.shape)) if g.chance(0.5) else (-1,), (-1, -1), (3, -2),
                                                  (7,))), {}))(g.t(dt=ANY)))
top("flatten", lambda g: (lambda x: ((x,), {"start_dim": g.dim(x), "end_dim": -1}))(g.t(dt=ANY)))
top("squeeze", lambda g: (lambda x: ((x, g.dim(x)) if g.chance(0.6) else (x,), {}))(g.t(dt=ANY)))
top("unsqueeze", lambda g: (lambda x: ((x, g.maybe(int(g.r.integers(-x.ndim - 1, x.ndim + 1)), x.ndim + 1)), {}))(
    g.t(dt=ANY)))
top("transpose", lambda g: (lambda x: ((x, g.dim(x), g.dim(x)), {}))(g.t(dt=ANY)))
top("permute", lambda g: (lambda x: ((x, g.maybe(tuple(g.r.permutation(x.ndim).tolist()), (0, 0), tuple(range(x.ndim + 1)))),
                                     {}))(g.t(dt=ANY)))
top("movedim", lambda g: (lambda x: ((x, g.dim(x), g.dim(x)), {}))(g.t(dt=ANY)))
top("flip", lambda g: (lambda x: ((x, (g.dim(x),)), {}))(g.t(dt=ANY)))
top("roll", lambda g: (lambda x: ((x, g.pick((1, -2, 5))), {"dims": g.dim(x)}))(g.t(dt=ANY)))
top("narrow", lambda g: (lambda x: ((x, g.dim(x), g.maybe(0, -1, 9), g.maybe(1, -1, 9)), {}))(g.t(dt=ANY, rank=g.pick((1, 2, 3)))))
top("select", lambda g: (lambda x: ((x, g.dim(x), g.maybe(0, -1, 9)), {}))(g.t(dt=ANY)))
top("chunk", lambda g: (lambda x: ((x, g.maybe(2, 0, -1)), {"dim": g.dim(x)}))(g.t(dt=ANY)))
top("split", lambda g: (lambda x: ((x, g.maybe(2, 0, [1, 1], -1)), {"dim": g.dim(x)}))(g.t(dt=ANY)))
top("tensor_split", lambda g: (lambda x: ((x, g.maybe(2, 0, [1, 3])), {"dim": g.dim(x)}))(g.t(dt=ANY)))
top("unbind", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t(dt=ANY)))
top("cat", lambda g: (lambda x: (([x, g.like(x) if g.chance(0.3) else g.t(shape=x.shape, dt=ANY)],), {"dim": g.dim(x)}))(
    g.t(dt=ANY)))
top("stack", lambda g: (lambda x: (([x, g.like(x) if g.chance(0.3) else g.t(shape=x.shape)],), {"dim": g.dim(x)}))(g.t()))
top("hstack", lambda g: (lambda x: (([x, g.t(shape=x.shape)],), {}))(g.t()))
top("tile", lambda g: ((g.t(dt=ANY), g.maybe((2, 1), (-1,), ())), {}))
top("repeat_interleave", lambda g: (lambda x: ((x, g.maybe(2, -1, 0)), {"dim": g.dim(x, none=True)}))(g.t(dt=ANY)))
top("broadcast_to", lambda g: (lambda x: ((x, g.maybe((2,) + x.shape, x.shape + (2,), (-1,))), {}))(g.t(dt=ANY)))
top("tril", lambda g: ((g.t(rank=g.maybe(2, 1, 3)),), {"diagonal": g.pick((0, 1, -1, 9))}))
top("triu", lambda g: ((g.t(rank=g.maybe(2, 1, 3)),), {"diagonal": g.pick((0, 1, -1, 9))}))
top("diag", lambda g: ((g.t(rank=g.pick((1, 2, 3))),), {}))
top("diagonal", lambda g: (lambda x: ((x,), {"offset": g.pick((0, 1, -1)), "dim1": 0, "dim2": g.dim(x)}))(
    g.t(rank=g.pick((2, 3)))))
top("trace", lambda g: ((g.t(rank=g.maybe(2, 1, 3)),), {}))
top("rot90", lambda g: ((g.t(rank=g.pick((2, 3))), g.pick((1, 2, -1))), {}))
top("gather", lambda g: (lambda x, d: ((x, d, g.t(shape=x.shape, dt=g.maybe(I64, F32), vals=(g.maybe(0, -1), max(1, x.shape[d] if x.ndim and isinstance(d, int) and -x.ndim <= d < x.ndim else 1) + (1 if g.chance(g.bad) else 0)))), {}))(
    *(lambda x: (x, g.dim(x)))(g.t(rank=g.pick((1, 2, 3))))))
top("take_along_dim", lambda g: (lambda x: ((x, g.t(shape=x.shape, dt=I64, vals=(0, max(1, x.shape[-1])))), {"dim": -1}))(
    g.t(rank=g.pick((1, 2)))))
top("index_select", lambda g: (lambda x: ((x, 0, g.t(rank=g.maybe(1, 2), dt=g.maybe(I64, F32),
                                                    vals=(g.maybe(0, -1), max(1, x.shape[0]) + (1 if g.chance(g.bad) else 0)))), {}))(
    g.t(rank=g.pick((1, 2, 3)))))
top("masked_select", lambda g: (lambda x: ((x, g.t(shape=x.shape, dt=g.maybe(BOOL, I64))), {}))(g.t()))
top("scatter", lambda g: (lambda x: ((x, 0, g.t(shape=x.shape, dt=I64, vals=(0, max(1, x.shape[0]) + (1 if g.chance(g.bad) else 0))),
                                      g.t(shape=x.shape, dt=x.dtype)), {}))(g.t(rank=g.pick((1, 2)), special=0)), grad=False)
top("scatter_add", lambda g: (lambda x: ((x, 0, g.t(shape=x.shape, dt=I64, vals=(0, max(1, x.shape[0]))),
                                          g.t(shape=x.shape, dt=x.dtype)), {}))(g.t(rank=g.pick((1, 2)), special=0)), grad=False)
top("index_add", lambda g: (lambda x: ((x, 0, g.t(shape=(x.shape[0],), dt=I64, vals=(0, max(1, x.shape[0]))),
                                        g.t(shape=x.shape, dt=x.dtype)), {}))(g.t(rank=g.pick((1, 2)), special=0)), grad=False)
# matrix products
top("matmul", lambda g: (lambda x: ((x, g.t(shape=(x.shape[-1] if x.ndim else 2, g.pick((1, 3)))[:g.pick((1, 2, 2))]
                                        if g.chance(0.8) else g.shape(), dt=g.maybe(x.dtype, I64, F16))), {}))(g.t(rank=g.pick((1, 2, 3)))))
top("mm", lambda g: (lambda x: ((x, g.t(shape=(g.maybe(x.shape[-1], 7), 3))), {}))(g.t(rank=g.maybe(2, 1, 3))))
top("bmm", lambda g: (lambda x: ((x, g.t(shape=(x.shape[0], x.shape[-1], 2) if g.chance(0.85) else (1, 1, 1))), {}))(
    g.t(rank=g.maybe(3, 2))))
top("mv", lambda g: (lambda x: ((x, g.t(shape=(x.shape[-1],) if g.chance(0.85) else (9,))), {}))(g.t(rank=g.maybe(2, 1))))
top("dot", lambda g: (lambda x: ((x, g.t(shape=x.shape if g.chance(0.85) else (9,), dt=g.maybe(x.dtype, I64))), {}))(
    g.t(rank=g.maybe(1, 2))))
top("outer", lambda g: ((g.t(rank=g.maybe(1, 2)), g.t(rank=1)), {}))
top("addmm", lambda g: ((g.t(shape=(2, 3)), g.t(shape=(2, 4)), g.t(shape=(4, g.maybe(3, 5)))),
                        {"beta": g.pick((1, 0, 0.5)), "alpha": g.pick((1, 2))}))
top("einsum", lambda g: (g.pick((("ij,jk->ik", g.t(shape=(2, 3)), g.t(shape=(3, 4))), ("ii->i", g.t(shape=(3, 3))),
                                 ("ij->", g.t(shape=(2, g.maybe(3, 0)))), ("ij,j->i", g.t(shape=(2, 3)), g.t(shape=(g.maybe(3, 4),))))), {}))
top("cdist", lambda g: ((g.t(shape=(3, 2)), g.t(shape=(4, g.maybe(2, 3)))), {"p": g.pick((2.0, 1.0))}))
# factories
op("zeros", torch.zeros, tnet.zeros, lambda g: (g.maybe(g.shape(), (-1, 2), (2.5,), "x"), {"dtype": g.pick((None, F16, I64, BOOL))}),
   grad=False)
op("ones", torch.ones, tnet.ones, lambda g: (g.maybe(g.shape(), (-1,)), {"dtype": g.pick((None, BF16, I64))}), grad=False)
op("full", torch.full, tnet.full, lambda g: ((g.maybe(g.shape(), (-2,)), g.scalar()), {"dtype": g.pick((None, F32, I64, BOOL))}),
   grad=False)
op("arange", torch.arange, tnet.arange, lambda g: (g.pick(((5,), (0,), (-3,), (1, 4), (0, 1, 0.25), (0, 5, 0), (3, 0, -1),
                                                          (0.5, 2.5), (math.inf,), (0, 5, -1))), {"dtype": g.pick((None, F32, I64))}), grad=False)
op("linspace", torch.linspace, tnet.linspace, lambda g: ((0.0, 1.0, g.maybe(g.pick((0, 1, 5)), -1, 2.5)), {}), grad=False)
op("eye", torch.eye, tnet.eye, lambda g: (g.pick(((3,), (0,), (2, 4), (-1,))), {"dtype": g.pick((None, I64, BOOL))}), grad=False)
op("tensor", torch.tensor, tnet.tensor, lambda g: ((g.pick(([1, 2.5], [[1, 2], [3, 4]], [], [[]], 3, True, [True, 1],
                                                            [math.nan], [2 ** 62], [1.5e300])),), {}), grad=False)
# functional
for name in ("gelu", "silu", "elu", "leaky_relu", "hardtanh", "relu6", "hardsigmoid", "hardswish", "softplus", "softsign",
             "mish", "logsigmoid", "tanhshrink", "softshrink", "selu", "celu"):
    fop(name, u(dt=FLOATS + (I64,) if name in ("relu6", "hardtanh") else FLOATS))
fop("gelu", lambda g: ((g.t(),), {"approximate": g.maybe("tanh", "fast")}))
OPS[-1]["name"] = "F.gelu(approximate)"
fop("glu", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t(rank=g.pick((1, 2, 3)))))
fop("softmax", lambda g: (lambda x: ((x,), {"dim": g.dim(x), "dtype": g.pick((None, None, F32))}))(g.t()))
fop("log_softmax", lambda g: (lambda x: ((x,), {"dim": g.dim(x)}))(g.t()))
fop("softmin", lambda g: (lambda x: ((x,), {"dim": g.dim(x)}))(g.t()))
fop("normalize", lambda g: (lambda x: ((x,), {"dim": g.dim(x), "p": g.pick((2.0, 1.0))}))(g.t(rank=g.pick((1, 2, 3)))))
fop("cosine_similarity", lambda g: (lambda x: ((x, g.like(x)), {"dim": g.dim(x)}))(g.t(rank=g.pick((1, 2, 3)))))
fop("pairwise_distance", lambda g: (lambda x: ((x, g.like(x)), {}))(g.t(rank=g.pick((1, 2)))))
fop("linear", lambda g: (lambda x: ((x, g.t(shape=(3, g.maybe(x.shape[-1] if x.ndim else 1, 9))),
                                     g.pick((None, g.t(shape=(g.maybe(3, 4),))))), {}))(g.t(rank=g.maybe(g.pick((1, 2, 3)), 0))))
fop("bilinear", lambda g: ((g.t(shape=(2, 3)), g.t(shape=(2, 4)), g.t(shape=(5, 3, g.maybe(4, 2)))), {}))


def img(g, c=None, rank=4, hw=None, **kw):
    n = g.pick((1, 2, 0)) if g.chance(0.15) else g.pick((1, 2))
    c = g.pick((1, 2, 3)) if c is None else c
    hw = hw or (g.pick((1, 3, 4, 5, 6)), g.pick((3, 4, 5, 7)))
    return g.t(shape=(n, c) + hw[:rank - 2], **kw)


def conv_gen(g):
    cin, cout, k = g.pick((1, 2, 3)), g.pick((1, 2, 4)), g.pick((1, 2, 3))
    x = img(g, c=g.maybe(cin, cin + 1), rank=g.maybe(4, 3))
    groups = g.maybe(1, 2, 0)
    w = g.t(shape=(cout, max(cin // (groups if isinstance(groups, int) and groups > 0 else 1), 1), k, k))
    return (x, w, g.pick((None, g.t(shape=(g.maybe(cout, cout + 1),))))), {
        "stride": g.maybe(g.pick((1, 2, (1, 2))), 0, -1), "padding": g.maybe(g.pick((0, 1, "same", "valid")), -1, "full"),
        "dilation": g.maybe(g.pick((1, 2)), 0), "groups": groups}


fop("conv2d", conv_gen)
fop("conv1d", lambda g: (lambda cin: ((img(g, c=g.maybe(cin, cin + 1), rank=3), g.t(shape=(2, cin, g.pick((1, 3))))),
                                      {"stride": g.maybe(g.pick((1, 2)), 0), "padding": g.maybe(g.pick((0, 1)), -1)}))(g.pick((1, 2))))
fop("conv_transpose2d", lambda g: (lambda cin: ((img(g, c=g.maybe(cin, cin + 1)), g.t(shape=(cin, 2, 3, 3))),
                                                {"stride": g.maybe(g.pick((1, 2)), 0), "padding": g.pick((0, 1)),
                                                 "output_padding": g.maybe(0, 1, 3)}))(g.pick((1, 2))))
for name in ("max_pool2d", "avg_pool2d"):
    fop(name, lambda g: ((img(g, rank=g.maybe(4, 3, 2)), g.maybe(g.pick((1, 2, 3, (2, 1))), 0, -1)),
                         {"stride": g.maybe(g.pick((None, 1, 2)), 0), "padding": g.maybe(g.pick((0, 1)), 2, -1),
                          "ceil_mode": g.chance(0.3)}))
for name in ("max_pool1d", "avg_pool1d"):
    fop(name, lambda g: ((img(g, rank=g.maybe(3, 4, 2)), g.maybe(g.pick((1, 2, 3)), 0)), {"stride": g.pick((None, 1, 2))}))
for name in ("adaptive_avg_pool2d", "adaptive_max_pool2d"):
    fop(name, lambda g: ((img(g, rank=g.maybe(4, 3)), g.maybe(g.pick((1, 2, 3, (2, 1), (None, 2))), 0, -1, (0, 2))), {}))
fop("adaptive_avg_pool1d", lambda g: ((img(g, rank=g.maybe(3, 2, 4)), g.maybe(g.pick((1, 2, 3)), 0, -1)), {}))
fop("batch_norm", lambda g: (lambda x: ((x, g.t(shape=(x.shape[1],), grad=False), g.t(shape=(x.shape[1],), vals="pos", grad=False),
                                         g.t(shape=(g.maybe(x.shape[1], 9),)), g.t(shape=(x.shape[1],))),
                                        {"training": g.chance(0.5), "eps": g.maybe(1e-5, 0.0)}))(img(g, rank=g.pick((2, 3, 4)))))
fop("layer_norm", lambda g: (lambda x: ((x, g.maybe(x.shape[-1:], x.shape[-1:] + (2,), (9,)),
                                         g.t(shape=x.shape[-1:]), g.t(shape=x.shape[-1:])), {}))(g.t(rank=g.pick((1, 2, 3)))))
fop("group_norm", lambda g: (lambda x: ((x, g.maybe(g.pick((1, 2)) if x.shape[1] % 2 == 0 else 1, 3, 0)), {}))(
    img(g, c=g.pick((2, 4)), rank=g.pick((3, 4)))))
fop("instance_norm", lambda g: ((img(g, rank=g.pick((3, 4))),), {}))
fop("rms_norm", lambda g: (lambda x: ((x, g.maybe(x.shape[-1:], (9,))), {"eps": g.pick((None, 1e-6))}))(g.t(rank=g.pick((1, 2, 3)))))
fop("local_response_norm", lambda g: ((img(g, c=4), g.maybe(2, 0)), {}))
fop("dropout", lambda g: ((g.t(),), {"p": g.maybe(g.pick((0.0, 0.5, 1.0)), 1.5, -0.1), "training": g.chance(0.2)}), grad=False,
    cmp="dropout")
fop("pad", lambda g: (lambda x: ((x, g.maybe(g.pick(((1, 1), (0, 2, 1, 0), (-1, 0))), (1,), (1, 2, 3)),),
                                 {"mode": g.maybe(g.pick(("constant", "constant", "reflect", "replicate", "circular")), "wrap"),
                                  "value": None}))(img(g, rank=g.pick((3, 4)))))
fop("one_hot", lambda g: ((g.t(rank=g.pick((0, 1, 2)), dt=g.maybe(I64, F32), vals=(g.maybe(0, -1), 4)),), {"num_classes": g.pick((-1, 4, 2))}),
    grad=False)
fop("embedding", lambda g: ((g.t(rank=g.pick((0, 1, 2)), dt=g.maybe(I64, F32), vals=(g.maybe(0, -1), g.maybe(5, 7))),
                             g.t(shape=(5, 3))), {"padding_idx": g.pick((None, 0, -1))}))
fop("pixel_shuffle", lambda g: ((img(g, c=g.maybe(4, 3)), 2), {}))
fop("pixel_unshuffle", lambda g: ((img(g, hw=(g.maybe(4, 3), 2)), 2), {}))
fop("interpolate", lambda g: ((img(g),), g.pick(({"scale_factor": 2}, {"size": (3, 5)}, {"size": (0, 2)}, {"scale_factor": 0.5, "mode": "bilinear"},
                                                  {"size": 3, "mode": "bilinear", "align_corners": True}, {"size": 4, "mode": "nearest-exact"},
                                                  {}, {"mode": "bicubic", "size": 4}, {"size": -1}))))
fop("unfold", lambda g: ((img(g, rank=g.maybe(4, 3)), g.maybe(2, 0)), {"padding": g.pick((0, 1)), "stride": g.pick((1, 2))}))
fop("grid_sample", lambda g: ((img(g, c=2), g.t(shape=(1, 3, 2, 2), vals="prob")), {"align_corners": g.chance(0.5)}))
fop("scaled_dot_product_attention", lambda g: (lambda q: ((q, g.like(q) if g.chance(0.2) else g.t(shape=q.shape), g.t(shape=q.shape)),
                                                         {"is_causal": g.chance(0.3)}))(g.t(shape=(1, 2, g.pick((1, 3)), 4))))


def loss_gen(prob=False, target_dt=None):
    def gen(g):
        x = g.t(rank=g.pick((0, 1, 2, 3)), vals="prob" if prob else "normal")
        y = g.t(shape=x.shape if g.chance(0.85) else g.shape(), dt=target_dt or x.dtype, vals="prob" if prob else "normal", grad=False)
        return (x, y), {"reduction": g.maybe(g.pick(("mean", "sum", "none")), "avg")}
    return gen


for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss", "binary_cross_entropy_with_logits"):
    fop(name, loss_gen())
fop("binary_cross_entropy", loss_gen(prob=True))
fop("kl_div", lambda g: (lambda x: ((x, g.t(shape=x.shape, vals="prob", grad=False)), {"reduction": g.pick(("mean", "sum", "batchmean"))}))(
    g.t(rank=2)))


def ce_gen(g):
    x = g.t(shape=(g.pick((1, 3, 0)), g.pick((1, 4))) + ((3,) if g.chance(0.2) else ()))
    c = x.shape[1]
    if g.chance(0.3):
        y = g.t(shape=x.shape, vals="prob", grad=False)  # probabilities
    else:
        y = g.t(shape=(x.shape[0],) + x.shape[2:] if g.chance(0.9) else (7,), dt=g.maybe(I64, F32),
                vals=(g.maybe(0, -1), g.maybe(c, c + 1)))
    return (x, y), {"reduction": g.pick(("mean", "sum", "none")), "label_smoothing": g.maybe(g.pick((0.0, 0.1)), -0.1, 1.5),
                    "ignore_index": g.pick((-100, 0))}


fop("cross_entropy", ce_gen)
fop("nll_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape[:1], dt=I64, vals=(g.maybe(0, -1), g.maybe(x.shape[1], x.shape[1] + 1)))),
                                      {"reduction": g.pick(("mean", "sum", "none"))}))(g.t(shape=(3, 4))))
fop("margin_ranking_loss", lambda g: (lambda x: ((x, g.like(x), g.t(shape=x.shape, grad=False)), {}))(g.t(rank=1)))
fop("hinge_embedding_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape, grad=False)), {}))(g.t(rank=1)))
fop("triplet_margin_loss", lambda g: (lambda x: ((x, g.like(x), g.t(shape=x.shape)), {}))(g.t(rank=2)))
fop("cosine_embedding_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape), g.t(shape=x.shape[:1], grad=False)), {}))(g.t(rank=2)))
# Tensor methods and operators
for name, fn in (("+", lambda a, b: a + b), ("-", lambda a, b: a - b), ("*", lambda a, b: a * b), ("/", lambda a, b: a / b),
                 ("//", lambda a, b: a // b), ("%", lambda a, b: a % b), ("**", lambda a, b: a ** b), ("<", lambda a, b: a < b),
                 ("==", lambda a, b: a == b), ("&", lambda a, b: a & b), ("@", lambda a, b: a @ b), ("r-", lambda a, b: b - a),
                 ("r/", lambda a, b: b / a), ("r**", lambda a, b: b ** a)):
    oper(name, fn, b(scalar=0.4), grad=name not in ("<", "==", "&", "//", "%"))
oper("unary-", lambda a: -a, u())
oper("~", lambda a: ~a, u(dt=(BOOL, I64, F32)), grad=False)
oper("abs()", lambda a: abs(a), u())
oper("len", lambda a: len(a), u(), grad=False)
oper("bool()", lambda a: bool(a), u(), grad=False)
oper("float()", lambda a: float(a), u(), grad=False)
oper("int()", lambda a: int(a), u(), grad=False)
oper("item", lambda a: a.item(), u(), grad=False)
oper("tolist", lambda a: a.tolist(), u(), grad=False)
oper("size(d)", lambda a, d: a.size(d), lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t()), grad=False)


def index_gen(g):
    x = g.t(rank=g.pick((1, 2, 3)), dt=ANY)
    s0 = x.shape[0]
    idx = g.pick((0, -1, s0, -s0 - 1, slice(None, None, 2), slice(1, None), slice(5, 1), (Ellipsis, 0), None, (0, None),
                  [0, -1], [True] * s0, g.t(shape=(2,), dt=I64, vals=(-s0, max(s0, 1))), g.t(shape=x.shape, dt=BOOL),
                  slice(None, None, -1), 1.5, (0, 0, 0, 0), "a"))
    return (x, idx), {}


oper("getitem", lambda a, i: a[i], index_gen)


def setitem(a, i, v):
    a = a.clone()
    a[i] = v
    return a


oper("setitem", setitem, lambda g: (lambda x, i: ((x, i, g.pick((1.5, math.nan, g.t(shape=(), dt=ANY), g.t(shape=(2,), dt=F32)))),
                                                  {}))(*index_gen(g)[0]), grad=False)
meth("view", lambda g: (lambda x: ((x, g.maybe(-1, (-1, 2), 7)), {}))(g.t()))
meth("expand", lambda g: (lambda x: ((x, g.maybe((2,) + x.shape, (-1,) * x.ndim, x.shape + (3,), (-2,) + x.shape)), {}))(g.t()))
meth("repeat", lambda g: (lambda x: ((x, *g.maybe([2] * x.ndim, [1] * max(x.ndim - 1, 0) if x.ndim > 1 else [-1], [2, 0, 1, 1, 1])),
                                     {}))(g.t()))
meth("to", lambda g: ((g.t(dt=ANY), g.pick((F32, F16, BF16, I64, BOOL, "cpu", torch.int32))), {}))
meth("type_as", lambda g: ((g.t(dt=ANY), g.t(dt=ANY)), {}))
meth("contiguous", u())
meth("T", lambda g: ((g.t(rank=g.pick((0, 1, 2))),), {}))
OPS[-1].update(torch=lambda x: x.T, tnet=lambda x: x.T)
meth("mT", lambda g: ((g.t(rank=g.pick((1, 2, 3))),), {}))
OPS[-1].update(torch=lambda x: x.mT, tnet=lambda x: x.mT)
meth("new_zeros", lambda g: ((g.t(dt=ANY), g.maybe((2, 3), (-1,))), {}), grad=False)
meth("float", u(dt=ANY))
meth("long", u(dt=FLOATS), grad=False)
meth("bool", u(dt=ANY), grad=False)
meth("half", u(dt=ANY))
meth("numel", u(), grad=False)
meth("dim", u(), grad=False)
meth("max", red(dt=ANY))
meth("sum", red(dt=ANY))
meth("mean", red(dt=FLOATS))
meth("std", red(dt=FLOATS))
meth("argmax", red(dt=ANY), grad=False)


# Tensor methods the rounds above left out (thirtieth session): the new_* factories, views and queries by method
meth("new_ones", lambda g: ((g.t(dt=ANY), g.maybe((2, 3), (-1,), (2.5,))), {"dtype": g.pick((None, F16, I64))}), grad=False)
meth("new_tensor", lambda g: ((g.t(dt=ANY), g.pick(([1, 2.5], [[1, 2]], [], 3, [True, False]))), {}), grad=False)
meth("new_empty", lambda g: ((g.t(dt=ANY), g.maybe((2, 3), (-1,))), {}), grad=False, cmp="shape")
meth("view_as", lambda g: (lambda x: ((x, g.t(shape=g.maybe(tuple(reversed(x.shape)), (7,)))), {}))(g.t(dt=ANY, layout="c")))
meth("clone", lambda g: ((g.t(dt=ANY),), {"memory_format": g.pick((torch.preserve_format, torch.contiguous_format))}))
meth("softmax", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t()))
meth("log_softmax", lambda g: (lambda x: ((x, g.dim(x)), {"dtype": g.pick((None, F32))}))(g.t()))
meth("stride", lambda g: (lambda x: ((x,) + ((g.dim(x),) if g.chance(0.5) else ()), {}))(g.t(dt=ANY)), grad=False)
meth("storage_offset", u(dt=ANY), grad=False)
meth("element_size", u(dt=ANY), grad=False)
meth("nelement", u(dt=ANY), grad=False)
meth("is_contiguous", lambda g: ((g.t(dt=ANY),), {"memory_format": g.pick((torch.contiguous_format, torch.channels_last))}),
     grad=False)
meth("is_floating_point", u(dt=ANY), grad=False)
meth("is_signed", u(dt=ANY), grad=False)
meth("byte", u(dt=ANY), grad=False)
meth("short", u(dt=ANY), grad=False)
meth("char", u(dt=ANY), grad=False)
meth("bfloat16", u(dt=ANY))
meth("type", lambda g: ((g.t(dt=ANY), g.pick(("torch.FloatTensor", "torch.LongTensor", torch.float16, "torch.BoolTensor"))), {}),
     grad=False)
meth("unsafe_chunk", lambda g: (lambda x: ((x, g.maybe(2, 0, -1)), {"dim": g.dim(x)}))(g.t(dt=ANY)))
meth("unsafe_split", lambda g: (lambda x: ((x, g.maybe(2, 0, -1)), {"dim": g.dim(x)}))(g.t(dt=ANY)))
meth("resolve_conj", u(dt=ANY))
meth("conj", u(dt=ANY))


def inplace(name, gen):
    def fn(x, *a, **k):
        y = x.clone() if x.requires_grad else x
        return getattr(y, name)(*a, **k)
    op("." + name, fn, fn, gen, grad=True)


for name in ("add_", "sub_", "mul_", "div_", "clamp_min_", "pow_", "maximum"):
    inplace(name, b(scalar=0.4))
inplace("clamp_", lambda g: ((g.t(dt=ANY),), g.pick(({"min": -0.5}, {"max": 0.5}, {}))))
inplace("fill_", lambda g: ((g.t(dt=ANY), g.scalar()), {}))
inplace("zero_", u(dt=ANY))
inplace("relu_", u(dt=ANY))
inplace("exp_", u(dt=ANY))
inplace("masked_fill_", lambda g: (lambda x: ((x, g.t(shape=x.shape, dt=g.maybe(BOOL, I64)), g.scalar()), {}))(g.t(dt=ANY)))
inplace("copy_", lambda g: (lambda x: ((x, g.like(x)), {}))(g.t(dt=ANY)))
inplace("uniform_", lambda g: ((g.t(), 0.0, g.maybe(1.0, -1.0)), {}))
OPS[-1].update(cmp="shape")
inplace("normal_", lambda g: ((g.t(), 0.0, g.maybe(1.0, -1.0)), {}))
OPS[-1].update(cmp="shape")


# ops added after the first fuzz (special functions, searches, quantiles, embedding_bag, Function)
for name in ("tan", "erfc", "erfinv", "lgamma", "digamma", "asinh", "acosh", "atanh", "sinc", "deg2rad", "rad2deg"):
    top(name, lambda g: ((g.t(dt=ANY, vals=g.pick(("normal", "prob", "pos"))),), {}))
for name in ("copysign", "logaddexp2"):  # not float_power: tnet's is float32 (no float64), as its docstring says
    top(name, b())
for name in ("gcd", "lcm"):
    top(name, b(dt=(I64, I64, BOOL, F32)), grad=False)
top("heaviside", lambda g: (lambda x: ((x, g.like(x, dt=x.dtype)), {}))(g.t()), grad=False)
top("kron", lambda g: ((g.t(rank=g.pick((0, 1, 2)), dt=ANY), g.t(rank=g.pick((1, 2)), dt=ANY)), {}))
top("cross", lambda g: (lambda x: ((x, g.like(x) if g.chance(0.2) else g.t(shape=x.shape)), {"dim": g.maybe(-1, 0, 5)}))(
    g.t(shape=(2, g.maybe(3, 4)))))
top("logcumsumexp", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t()))


def sorted_t(g, n, dt=F32):
    """A 1-D tensor input of n sorted values (boundaries, offsets), or (bad) unsorted ones."""
    a = np.sort(g.r.integers(-3, 4, n)) if g.chance(1 - g.bad) else g.r.integers(-3, 4, n)
    return T(torch.tensor(a).to(dt), lambda v: v, "c", False)


top("searchsorted", lambda g: (lambda dt: ((sorted_t(g, g.pick((0, 1, 4))), g.t(rank=g.pick((0, 1, 2)), dt=dt, grad=False)),
                                           {"right": g.chance(0.5)}))(g.maybe(F32, I64)), grad=False)
top("bucketize", lambda g: ((g.t(rank=g.pick((0, 1, 2)), grad=False), sorted_t(g, g.pick((0, 1, 4)))), {"right": g.chance(0.5)}),
    grad=False)
for name in ("quantile", "nanquantile"):
    top(name, lambda g: (lambda x: ((x, g.pick((0.5, 0.0, 1.0, 0.25, 1.5, -0.1, g.t(shape=(g.pick((1, 3)),), vals="prob", grad=False)))),
                                    {"dim": g.dim(x, none=True), "keepdim": g.chance(0.3),
                                     "interpolation": g.maybe(g.pick(("linear", "lower", "higher", "midpoint", "nearest")), "up")}))(
        g.t(rank=g.pick((0, 1, 2)), dt=g.maybe(F32, F16, I64))))
fop("rrelu", lambda g: ((g.t(),), {"lower": g.maybe(0.125, 0.5), "upper": 1 / 3, "training": False}))
fop("embedding_bag", lambda g: (lambda two: ((g.t(shape=(2, 3) if two else (6,), dt=g.maybe(I64, F32), vals=(0, g.maybe(5, 6)), grad=False),
                                              g.t(shape=(5, 3))),
                                             {"offsets": None if two else T(torch.tensor(g.pick(([0, 2, 4], [0, 0, 6], [0], [1, 2])),
                                                                                          dtype=I64), lambda v: v, "c", False),
                                              "mode": g.maybe(g.pick(("sum", "mean", "max")), "min"),
                                              "padding_idx": g.pick((None, 0))}))(g.chance(0.4)))
for name in ("poisson_nll_loss", "multilabel_soft_margin_loss"):
    fop(name, loss_gen())
fop("gaussian_nll_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape, grad=False), g.t(shape=x.shape if g.chance(0.7) else x.shape[:-1] + (1,),
                                                                                    vals=g.maybe("pos", "normal"))), {}))(g.t(rank=2)))


def _square(library):
    """A custom Function, x * x * k with its own backward, written once against torch or tnet."""
    class Square(library.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x * x * k

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x * (2 * ctx.k), None
    return Square.apply


op("autograd.Function", _square(torch), _square(tnet), lambda g: ((g.t(), g.pick((1.5, -2, 0))), {}))



# ops added after the second fuzz: scatter/index reductions, bit shifts, frexp, nextafter, polygamma,
# trapezoid, linalg, a gradient penalty (create_graph), optimizers' steps, distributions' log_prob
def _reduce_gen(g, index_reduce):
    x = g.t(rank=g.pick((1, 2)), special=0.2)
    n = max(1, x.shape[0])
    index = g.t(shape=(x.shape[0],) if index_reduce else x.shape, dt=g.maybe(I64, F32), vals=(g.maybe(0, -1), n + (1 if g.chance(g.bad) else 0)))
    reduces = ("prod", "mean", "amax", "amin") + (() if index_reduce else ("sum",))
    return (x, 0, index, g.t(shape=x.shape, dt=g.maybe(x.dtype, I64))), {"reduce": g.maybe(g.pick(reduces), "max"),
                                                                        "include_self": g.chance(0.5)}


top("scatter_reduce", lambda g: _reduce_gen(g, False), grad=False)
top("index_reduce", lambda g: _reduce_gen(g, True), grad=False)
for name in ("bitwise_left_shift", "bitwise_right_shift"):
    top(name, b(dt=(I64, I64, BOOL, F32)), grad=False)
top("frexp", u(dt=FLOATS + (I64,)), grad=False)
top("nextafter", b(dt=FLOATS), grad=False)
top("polygamma", lambda g: ((g.maybe(g.pick((0, 1, 2)), -1, 1.5), g.t(dt=g.maybe(F32, I64), vals=g.pick(("normal", "pos")))), {}))
top("trapezoid", lambda g: (lambda y: ((y,), g.pick(({}, {"dx": 0.5}, {"dim": g.dim(y)},
                                                    {"x": g.t(shape=y.shape[-1:] if g.chance(0.85) else (7,), grad=False)}))))(g.t()))


def square(g, spd=False):
    """A (batch of) n x n matrices, (bad) n x (n + 1); spd: M M^T + n I, symmetric positive definite (bad: not)."""
    n, batch = g.pick((1, 2, 3)), g.pick(((), (), (2,)))
    if spd and g.chance(1 - g.bad):
        m = torch.tensor(g.r.standard_normal(batch + (n, n)))
        a = (m @ m.mT + n * torch.eye(n)).float()
        return T(a, lambda v: v, "c", True)
    return g.t(shape=batch + (n, g.maybe(n, n + 1)), dt=g.maybe(F32, F32, I64), special=0.15)


def linalg(name, fn=None, **kw):
    op("linalg." + name, fn(torch.linalg) if fn else getattr(torch.linalg, name), fn(tnet.linalg) if fn else getattr(tnet.linalg, name),
       lambda g: ((square(g, spd=name == "cholesky"),), {}), **kw)


for name in ("inv", "det", "cholesky", "matrix_exp"):
    linalg(name)
linalg("svd", lambda m: lambda A: m.svd(A, full_matrices=False).S, grad=False)  # S only: U and V are up to signs
OPS[-1]["name"] = "linalg.svd(S)"
linalg("qr", lambda m: lambda A: m.qr(A).R.abs(), grad=False)  # |R|: its rows are up to signs
OPS[-1]["name"] = "linalg.qr(|R|)"
top("matrix_exp", lambda g: ((square(g),), {}))
op("linalg.solve", torch.linalg.solve, tnet.linalg.solve,
   lambda g: (lambda A: ((A, g.t(shape=A.shape[:-1] + (g.pick((1, 2)),) if g.chance(0.5) else A.shape[-1:] if g.chance(0.9) else (5,))), {}))(
       square(g)))


def _penalty(m):
    """A gradient penalty (WGAN-GP's): |d act(x @ w).sum() / dx|^2, differentiated again by the harness."""
    def fn(x, w, act):
        gx, = m.autograd.grad(getattr(m, act)(m.matmul(x, w)).sum(), x, create_graph=True)
        return (gx * gx).sum()
    return fn


op("autograd.grad(create_graph)", _penalty(torch), _penalty(tnet),
   lambda g: (lambda x: ((x, g.t(shape=(x.shape[-1], 2), dt=g.maybe(x.dtype, I64)), g.pick(("tanh", "sigmoid", "exp", "relu", "square"))), {}))(
       g.t(rank=g.pick((1, 2)), special=0.2)))


def _steps(m):
    """Two steps of an optimizer on sum((p - t)^2); p after them."""
    def fn(p, t, name, kw):
        opt = getattr(m.optim, name)([p], **kw)

        def closure():
            opt.zero_grad()
            loss = ((p - t) ** 2).sum()
            loss.backward()
            return loss
        for _ in range(2):
            opt.step(closure)
        return p.detach()
    return fn


op("optim steps", _steps(torch), _steps(tnet), lambda g: (lambda p: ((p, g.t(shape=p.shape, grad=False), *g.pick((
    ("LBFGS", {"lr": g.maybe(0.5, -1.0), "history_size": 3, "line_search_fn": g.pick((None, "strong_wolfe"))}),
    ("Rprop", {"lr": g.maybe(0.01, -0.1), "etas": g.maybe((0.5, 1.2), (1.5, 1.2))}),
    ("ASGD", {"lr": g.maybe(0.01, -0.1), "lambd": 1e-4, "t0": 1.0})))), {}))(g.t(rank=g.pick((1, 2)), dt=F32, special=0.1)),
   grad=False)


def _log_prob(m):
    def fn(name, params, x):
        return getattr(m.distributions, name)(*params).log_prob(x)
    return fn


def dist_gen(g):
    name = g.pick(("Normal", "Laplace", "Exponential", "Gamma", "Beta", "Uniform", "Bernoulli"))
    shape = g.shape(rank=g.pick((0, 1, 2)))
    pos = lambda: g.t(shape=shape, dt=F32, vals=g.maybe("pos", "normal"), special=0.1)  # noqa: E731
    params = {"Normal": lambda: (g.t(shape=shape, dt=F32), pos()), "Laplace": lambda: (g.t(shape=shape, dt=F32), pos()),
              "Exponential": lambda: (pos(),), "Gamma": lambda: (pos(), pos()), "Beta": lambda: (pos(), pos()),
              "Uniform": lambda: (g.t(shape=shape, dt=F32, vals=(-3, -1)), g.t(shape=shape, dt=F32, vals=g.maybe((1, 3), (-5, -4)))),
              "Bernoulli": lambda: (g.t(shape=shape, dt=F32, vals="prob"),)}[name]()
    x = g.t(shape=shape if g.chance(0.8) else g.shape(), dt=F32, grad=False,
            vals={"Exponential": "pos", "Gamma": "pos", "Beta": "prob", "Bernoulli": (0, 2)}.get(name, "normal"))
    return (name, params, x), {}


op("distributions.log_prob", _log_prob(torch), _log_prob(tnet), dist_gen)


# ops added for the eleventh fuzz: in-place writes (methods ending in _, activations' inplace=True) on views of a
# tensor that requires grad, NaN through searches, weighted losses, more pooling, folding, interpolation and padding
# modes, and the tnet.* / Tensor / functional names the earlier rounds left out
VIEWS = {"whole": lambda t: t, "row": lambda t: t[0], "col": lambda t: t[..., ::2], "T": lambda t: t.mT,
         "narrow": lambda t: t.narrow(-1, 0, 1)}
WRITES = ("add_", "sub_", "mul_", "div_", "copy_", "clamp_", "pow_", "relu_", "sigmoid_", "tanh_", "exp_", "neg_", "abs_",
          "sqrt_", "zero_", "floor_", "F.relu", "F.silu", "F.elu", "F.leaky_relu", "F.hardtanh", "F.relu6", "F.hardswish",
          "F.hardsigmoid", "F.mish", "F.celu", "F.selu", "F.threshold")


def _view_inplace(m):
    """z = x * 1 (not a leaf), a view of z written in place by `how` (with y where it takes an operand), then z:
    the write's gradient reaches x, and y's where it has one."""
    def fn(x, y, view, how):
        z = x * 1 if x.is_floating_point() else x.clone()
        v = VIEWS[view](z)
        if how == "F.threshold":
            m.nn.functional.threshold(v, 0.1, 2.0, inplace=True)
        elif how.startswith("F."):
            getattr(m.nn.functional, how[2:])(v, inplace=True)
        elif how in ("add_", "sub_", "mul_", "div_", "copy_", "pow_"):
            getattr(v, how)(y)
        elif how == "clamp_":
            v.clamp_(min=y if not isinstance(y, (m.Tensor,)) or y.dim() else y)
        else:
            getattr(v, how)()
        return z
    return fn


op("view inplace", _view_inplace(torch), _view_inplace(tnet), lambda g: (
    (g.t(rank=g.pick((2, 3)), dt=g.pick(FLOATS + FLOATS + (I64,))), g.pick((g.scalar(), g.t(shape=(1,)), g.t(shape=()), 0.5)),
     g.pick(tuple(VIEWS)), g.pick(WRITES)), {}))


def _nan_search(name):
    """topk / kthvalue / sort / max pooling with NaN at a few places (torch ranks NaN above everything)."""
    def gen(g):
        x = g.t(rank=g.pick((1, 2, 3)), dt=FLOATS, special=0)
        b = x.base.flatten()
        for j in g.r.choice(b.numel(), size=min(b.numel(), int(g.r.integers(1, 3))), replace=False) if b.numel() else ():
            b[int(j)] = g.pick((math.nan, math.nan, math.inf, -math.inf))
        d = g.dim(x)
        n = x.shape[d] if x.ndim and isinstance(d, int) and -x.ndim <= d < x.ndim else 1
        return {"topk": lambda: ((x, g.pick((1, n))), {"dim": d, "largest": g.chance(0.5)}),
                "kthvalue": lambda: ((x, max(1, g.pick((1, n)))), {"dim": d}),
                "sort": lambda: ((x,), {"dim": d, "descending": g.chance(0.5), "stable": True}),
                "max": lambda: ((x, d), {}), "cummax": lambda: ((x, d), {}), "cummin": lambda: ((x, d), {}),
                "median": lambda: ((x, d), {}), "nanmedian": lambda: ((x, d), {}), "mode": lambda: ((x, d), {}),
                "amax": lambda: ((x, d), {}), "argmax": lambda: ((x, d), {}), "argsort": lambda: ((x,), {"dim": d, "stable": True}),
                "msort": lambda: ((x,), {})}[name]()
    return gen


for name in ("topk", "kthvalue", "sort", "max", "cummax", "cummin", "median", "nanmedian", "mode", "amax", "argmax", "argsort", "msort"):
    top(name, _nan_search(name), grad=name not in ("argmax", "argsort"))
    OPS[-1]["name"] = name + "(nan)"
# each NaN distinct and last, as torch's; no dim=: torch sorts slices holding NaN in no defined order (std::sort)
top("unique", lambda g: ((g.t(rank=g.pick((1, 2)), dt=F32, special=0.6),), {"sorted": True, "return_inverse": g.chance(0.5),
                                                                            "return_counts": g.chance(0.5)}), grad=False)
OPS[-1]["name"] = "unique(nan)"
top("cummin", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t(dt=ANY)))
top("nanmedian", red(none=True))
top("mode", red(none=True, dt=ANY))
top("msort", u(dt=ANY))
top("argwhere", u(dt=ANY), grad=False)
top("isposinf", u(dt=ANY), grad=False)
top("isneginf", u(dt=ANY), grad=False)
top("clamp_max", b(scalar=0.5))
top("clamp_min", b(scalar=0.5))
top("ldexp", lambda g: (lambda x: ((x, g.like(x, dt=(I64,))), {}))(g.t()))
top("sgn", u())
top("fix", u())
top("rsub", b())
top("float_power", lambda g: (lambda x: ((x, g.pick((2, 0.5, -1))), {}))(g.t(dt=FLOATS)), grad=False)
OPS.pop()  # float_power is float32 in tnet (no float64), as its docstring says
for name in ("index_copy", "index_fill"):
    top(name, lambda g, name=name: (lambda x: ((x, g.maybe(0, 2), g.t(shape=(x.shape[0],), dt=g.maybe(I64, F32), vals=(0, max(1, x.shape[0]))),
                                                 g.t(shape=x.shape, dt=x.dtype) if name == "index_copy" else g.scalar()), {}))(
        g.t(rank=g.pick((1, 2)), special=0.2)))
top("masked_scatter", lambda g: (lambda x: ((x, g.t(shape=x.shape if g.chance(0.8) else x.shape[-1:], dt=g.maybe(BOOL, I64)),
                                             g.t(shape=x.shape if g.chance(0.9) else (1,), dt=x.dtype)), {}))(g.t(dt=ANY)))
top("take", lambda g: (lambda x: ((x, g.t(rank=g.pick((0, 1, 2)), dt=g.maybe(I64, F32), vals=(-max(1, int(np.prod(x.shape))),
                                                                                             max(1, int(np.prod(x.shape))) + (1 if g.chance(g.bad) else 0)))), {}))(
    g.t(dt=ANY)))
meth("put", lambda g: (lambda x, n: ((x, g.t(shape=(2,), dt=I64, vals=(-n, n + (1 if g.chance(g.bad) else 0))), g.t(shape=(2,), dt=x.dtype)),
                                     {"accumulate": g.chance(0.5)}))(*(lambda x: (x, max(1, int(np.prod(x.shape)))))(g.t(dt=ANY, special=0.2))))
top("renorm", lambda g: (lambda x: ((x, g.pick((1, 2, 3.5)), g.dim(x), g.maybe(1.0, -1.0)), {}))(g.t(rank=g.pick((1, 2, 3)))))
top("dist", lambda g: (lambda x: ((x, g.like(x), g.pick((2, 1, 0, math.inf, 3.5))), {}))(g.t()))
top("cov", lambda g: ((g.t(rank=g.maybe(g.pick((1, 2)), 3)),), {"correction": g.pick((1, 0, 2))}))
top("corrcoef", lambda g: ((g.t(rank=g.maybe(g.pick((1, 2)), 3)),), {}))
top("addmv", lambda g: (lambda m: ((g.t(shape=g.pick(((m[0],), (1,), ()))), g.t(shape=m), g.t(shape=(g.maybe(m[1], m[1] + 1),))),
                                   {"beta": g.pick((1, 0, 0.5)), "alpha": g.pick((1, 2))}))((g.pick((0, 1, 3)), g.pick((0, 2)))))
top("addr", lambda g: (lambda n, k: ((g.t(shape=g.pick(((n, k), (k,), ()))), g.t(shape=(n,)), g.t(shape=(g.maybe(k, k + 1),))),
                                     {"beta": g.pick((1, 0)), "alpha": g.pick((1, 0.5))}))(g.pick((0, 1, 3)), g.pick((1, 2))))
top("baddbmm", lambda g: (lambda bb, n, k, mm: ((g.t(shape=(bb, n, mm)), g.t(shape=(bb, n, k)), g.t(shape=(bb, g.maybe(k, k + 1), mm))),
                                                {"beta": g.pick((1, 0, 0.5)), "alpha": g.pick((1, 2))}))(g.pick((1, 2)), 2, g.pick((0, 3)), 2))
top("addbmm", lambda g: (lambda bb, n, k, mm: ((g.t(shape=(n, mm)), g.t(shape=(bb, n, k)), g.t(shape=(bb, g.maybe(k, k + 1), mm))),
                                               {"beta": g.pick((1, 0)), "alpha": g.pick((1, 2))}))(g.pick((0, 2)), 2, 3, 2))
top("tensordot", lambda g: (lambda x: ((x, g.t(shape=x.shape[-2:] + (2,)), g.maybe(2, 3, -1)), {}))(g.t(rank=g.pick((2, 3)))))
top("inner", lambda g: (lambda x: ((x, g.t(shape=(2,) + x.shape[-1:] if x.ndim and g.chance(0.9) else (3,))), {}))(g.t(rank=g.pick((0, 1, 2)))))
top("vdot", lambda g: (lambda x: ((x, g.t(shape=x.shape if g.chance(0.9) else (7,))), {}))(g.t(rank=g.maybe(1, 2))))
top("block_diag", lambda g: ((g.t(rank=g.pick((0, 1, 2))), g.t(rank=2), g.t(rank=g.maybe(2, 3))), {}))
top("cartesian_prod", lambda g: ((g.t(rank=1, dt=ANY), g.t(rank=g.maybe(1, 2), dt=ANY)), {}))
top("combinations", lambda g: ((g.t(rank=g.maybe(1, 2), dt=ANY),), {"r": g.pick((2, 0, 3)), "with_replacement": g.chance(0.5)}))
top("diag_embed", lambda g: ((g.t(rank=g.pick((1, 2))),), {"offset": g.pick((0, 1, -1))}))
top("diagonal_scatter", lambda g: (lambda x, off: ((x, g.t(shape=torch.zeros(x.shape).diagonal(off).shape if g.chance(0.9) else (9,))),
                                                   {"offset": off}))(g.t(rank=2), g.pick((0, 1, -1))))
top("slice_scatter", lambda g: (lambda x: ((x, g.t(shape=(x.shape[0], (x.shape[1] + 1) // 2) if g.chance(0.9) else (1, 7))),
                                           {"dim": 1, "start": 0, "end": None, "step": 2}))(g.t(rank=2)))
top("select_scatter", lambda g: (lambda x: ((x, g.t(shape=x.shape[1:] if g.chance(0.9) else (9,)), 0, g.maybe(0, -1, 9)), {}))(
    g.t(rank=g.pick((1, 2, 3)))))
top("unique_consecutive", lambda g: ((g.t(dt=(I64, F32), vals=(-2, 2), rank=g.pick((0, 1, 2))),),
                                     {"return_counts": g.chance(0.5), "return_inverse": g.chance(0.5), "dim": g.pick((None, None, 0))}),
    grad=False)
top("histogram", lambda g: ((g.t(rank=1, dt=F32, special=0.2), g.maybe(4, 0, -1)), {}), grad=False)
# rows >= 1: torch 2.13's pdist backward of a [0, n] input segfaults (fuzz seed 23, case 2161)
top("pdist", lambda g: ((g.t(shape=(g.pick((1, 2, 3, 5)), g.pick((0, 1, 3)))) if g.chance(0.85) else g.t(rank=1),),
                        {"p": g.pick((2.0, 1.0, 0.0, math.inf))}))
for name in ("std_mean", "var_mean"):
    top(name, lambda g: (lambda x: ((x,), {"dim": g.dim(x, none=True), "correction": g.pick((1, 0, 2)), "keepdim": g.chance(0.5)}))(
        g.t(dt=FLOATS)))
top("unflatten", lambda g: (lambda x: ((x, g.dim(x), g.maybe((1, -1), (-1, -1), (7, 7))), {}))(g.t(rank=g.pick((1, 2, 3)), dt=ANY)))
meth("unfold", lambda g: (lambda x: ((x, g.dim(x), g.maybe(2, 0, 9), g.maybe(1, 0)), {}))(g.t(rank=g.pick((1, 2, 3)))))
top("mvlgamma", lambda g: ((g.t(vals="pos") if g.chance(0.7) else g.t(), g.pick((1, 2))), {}))
top("cumulative_trapezoid", lambda g: (lambda y: ((y,), g.pick(({}, {"dx": 0.5}, {"dim": g.dim(y)}))))(g.t()))
top("vander", lambda g: ((g.t(rank=g.maybe(1, 2)),), {"N": g.pick((None, 3, 0)), "increasing": g.chance(0.5)}))
op("logspace", torch.logspace, tnet.logspace, lambda g: ((0.0, 2.0, g.maybe(g.pick((0, 1, 5)), -1)), {"base": g.pick((10.0, 2.0))}),
   grad=False)
for name in ("tril_indices", "triu_indices"):
    op(name, getattr(torch, name), getattr(tnet, name), lambda g: ((g.pick((3, 0, 1)), g.pick((4, 2, 0)), g.pick((0, 1, -1, 5))), {}),
       grad=False)
op("meshgrid", torch.meshgrid, tnet.meshgrid, lambda g: ((g.t(rank=g.maybe(1, 0)), g.t(rank=1, dt=ANY)),
                                                      {"indexing": g.maybe(g.pick(("ij", "xy")), "yx")}))
for name in ("fliplr", "flipud"):
    top(name, lambda g: ((g.t(rank=g.pick((1, 2, 3)), dt=ANY),), {}))
for name in ("logdet", "slogdet", "pinverse"):
    op(name, getattr(torch, name), getattr(tnet, name), lambda g: ((square(g),), {}), grad=name != "slogdet")
op("matrix_power", torch.matrix_power, tnet.matrix_power, lambda g: ((square(g), g.pick((0, 1, 2, 3, -1))), {}))
meth("expand_as", lambda g: (lambda x: ((x, g.t(shape=(2,) + x.shape if g.chance(0.9) else (7, 7))), {}))(g.t()))
meth("reshape_as", lambda g: (lambda x: ((x, g.t(shape=tuple(reversed(x.shape)) if g.chance(0.9) else (7,))), {}))(g.t()))
meth("new_full", lambda g: ((g.t(dt=ANY), g.maybe((2, 3), (-1,)), g.scalar()), {}), grad=False)
meth("sum_to_size", lambda g: (lambda x: ((x, *[1 if g.chance(0.5) else s for s in x.shape]), {}))(g.t()))
meth("index_put", lambda g: (lambda x: ((x, (g.t(shape=(2,), dt=I64, vals=(-max(1, x.shape[0]), max(1, x.shape[0]))),),
                                         g.t(shape=g.pick(((), (2,) + x.shape[1:]))), ), {"accumulate": g.chance(0.5)}))(
    g.t(rank=g.pick((1, 2)), grad=False)))
inplace("fill_diagonal_", lambda g: ((g.t(rank=g.maybe(2, 3), dt=ANY), g.scalar()), {"wrap": g.chance(0.3)}))
inplace("lerp_", lambda g: (lambda x: ((x, g.like(x, dt=x.dtype), g.pick((0.3, 1.5))), {}))(g.t()))
inplace("addcmul_", lambda g: (lambda x: ((x, g.like(x), g.like(x)), {"value": g.pick((1, -2))}))(g.t()))
inplace("cumsum_", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t()))
inplace("index_add_", lambda g: (lambda x: ((x, 0, g.t(shape=(x.shape[0],), dt=I64, vals=(0, max(1, x.shape[0]))),
                                              g.t(shape=x.shape, dt=x.dtype)), {"alpha": g.pick((1, 2))}))(g.t(rank=g.pick((1, 2)), special=0)))
inplace("scatter_", lambda g: (lambda x: ((x, 0, g.t(shape=x.shape, dt=I64, vals=(0, max(1, x.shape[0]))), g.t(shape=x.shape, dt=x.dtype)),
                                          {}))(g.t(rank=g.pick((1, 2)), special=0, grad=False)))
inplace("squeeze_", lambda g: (lambda x: ((x, g.dim(x)), {}))(g.t()))
inplace("t_", lambda g: ((g.t(rank=g.maybe(2, 3)),), {}))
# functional
fop("fold", lambda g: (lambda k, hw: ((g.t(shape=(g.pick((1, 2)), 2 * k * k, (hw[0] - k + 1) * (hw[1] - k + 1) + (1 if g.chance(g.bad) else 0))),
                                       hw, k), {}))(g.pick((1, 2)), (g.pick((2, 3)), g.pick((2, 4)))))
fop("unfold", lambda g: ((img(g), g.pick((1, 2, (2, 1)))), {"dilation": g.pick((1, 2)), "padding": g.pick((0, 1)), "stride": g.pick((1, 2))}))
OPS[-1]["name"] = "F.unfold(dilation)"
fop("affine_grid", lambda g: ((g.t(shape=(g.pick((1, 2)), 2, g.maybe(3, 2))), g.pick(((1, 1, 3, 4), (2, 1, 2, 2), (1, 1, 0, 3)))),
                              {"align_corners": g.chance(0.5)}))
# no NaN or huge grid values with reflection or border padding: torch 2.13's CPU backward of a NaN there segfaults
# (fuzz seed 50 on the sixteenth round's fuzzer, case 1027; border: seed 286, case 1027)
fop("grid_sample", lambda g: (lambda pad: ((img(g, c=2), g.t(shape=(1, 3, 2, 2), vals=g.pick(("normal", "prob")),
                                                            special=0 if pad in ("reflection", "border") else 0.35)),
                                           {"mode": g.pick(("bilinear", "nearest")), "padding_mode": pad,
                                            "align_corners": g.chance(0.5)}))(g.pick(("zeros", "border", "reflection"))))
OPS[-1]["name"] = "F.grid_sample(modes)"
fop("conv_transpose1d", lambda g: (lambda cin: ((img(g, c=g.maybe(cin, cin + 1), rank=3), g.t(shape=(cin, 2, 3))),
                                                {"stride": g.maybe(g.pick((1, 2)), 0), "padding": g.pick((0, 1)),
                                                 "output_padding": g.maybe(0, 1, 3), "dilation": g.pick((1, 2))}))(g.pick((1, 2))))
fop("adaptive_max_pool1d", lambda g: ((img(g, rank=g.maybe(3, 2)), g.maybe(g.pick((1, 2, 3)), 0)), {}))
for name in ("lp_pool1d", "lp_pool2d"):
    fop(name, lambda g, name=name: ((img(g, rank=3 if name == "lp_pool1d" else 4, vals="pos") if g.chance(0.7) else img(g, rank=3 if name == "lp_pool1d" else 4),
                                     g.pick((2, 1, 3.0)), g.maybe(2, 0)), {"stride": g.pick((None, 1))}))
fop("max_pool2d", lambda g: ((img(g), g.pick((2, 3, (2, 1)))), {"stride": g.pick((None, 1)), "padding": g.pick((0, 1)),
                                                               "return_indices": True}))
OPS[-1]["name"] = "F.max_pool2d(indices)"
fop("avg_pool2d", lambda g: ((img(g), 2), {"padding": g.pick((0, 1)), "divisor_override": g.maybe(g.pick((None, 3)), 0),
                                          "count_include_pad": g.chance(0.5), "ceil_mode": g.chance(0.5)}))
OPS[-1]["name"] = "F.avg_pool2d(divisor)"


def _unpool(m):
    def fn(x, k, s):
        y, i = m.nn.functional.max_pool2d(x, k, s, return_indices=True)
        return m.nn.functional.max_unpool2d(y, i, k, s, output_size=x.shape[-2:])
    return fn


op("F.max_unpool2d", _unpool(torch), _unpool(tnet), lambda g: ((img(g), g.pick((1, 2)), g.pick((None, 1, 2))), {}))
fop("multi_margin_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape[:1], dt=I64, vals=(g.maybe(0, -1), g.maybe(x.shape[-1], x.shape[-1] + 1)))),
                                               {"p": g.maybe(g.pick((1, 2)), 3), "margin": g.pick((1.0, 0.5)),
                                                "weight": g.pick((None, g.t(shape=x.shape[-1:], grad=False))),
                                                "reduction": g.pick(("mean", "sum", "none"))}))(g.t(shape=(g.pick((0, 1, 3)), g.pick((1, 4))))))
fop("multilabel_margin_loss", lambda g: (lambda x: ((x, T(torch.tensor(g.pick(([[3, 0, -1, 1]], [[-1, 1, 2, 3]], [[0, 1, 2, 3]], [[4, -1, 0, 0]]))
                                                                           ).expand(x.shape[0], 4).contiguous(), lambda v: v, "c", False)),
                                                    {"reduction": g.pick(("mean", "sum", "none"))}))(g.t(shape=(g.pick((1, 2)), 4))))
fop("triplet_margin_with_distance_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape), g.t(shape=x.shape)),
                                                               {"margin": g.pick((1.0, 0.0)), "swap": g.chance(0.5),
                                                                "reduction": g.pick(("mean", "sum", "none"))}))(g.t(rank=2)))
fop("prelu", lambda g: (lambda x: ((x, g.t(shape=g.pick(((1,), (x.shape[1] if x.ndim > 1 else 1,), (7,))))), {}))(g.t(rank=g.pick((1, 2, 3, 4)))))
fop("hardshrink", lambda g: ((g.t(),), {"lambd": g.pick((0.5, 0.0, 2.0))}))
fop("threshold", lambda g: ((g.t(dt=g.pick(FLOATS + (I64,))), g.pick((0.1, 0, -1.0, math.nan)), g.scalar()), {}))
fop("channel_shuffle", lambda g: ((img(g, c=g.pick((2, 4, 3))), g.maybe(2, 0, 3)), {}), grad=True)
for name in ("relu", "silu", "elu", "leaky_relu", "hardtanh", "relu6", "hardswish", "hardsigmoid", "celu", "selu", "mish", "threshold"):
    fn_t, fn_n = getattr(tF, name), getattr(F, name)
    args = (0.1, 2.0) if name == "threshold" else ()
    op(f"F.{name}(inplace)", lambda x, fn=fn_t, a=args: fn(x * 1 if x.is_floating_point() else x, *a, inplace=True),
       lambda x, fn=fn_n, a=args: fn(x * 1 if x.is_floating_point() else x, *a, inplace=True), u(dt=FLOATS + (I64,)))
for name in ("relu_", "elu_", "leaky_relu_", "hardtanh_", "celu_", "selu_", "rrelu_", "threshold_"):
    if hasattr(tF, name) and hasattr(F, name):
        args = (0.1, 2.0) if name == "threshold_" else ()
        kw = {"training": False} if name == "rrelu_" else {}
        op("F." + name, lambda x, fn=getattr(tF, name), a=args, k=kw: fn(x * 1 if x.is_floating_point() else x.clone(), *a, **k),
           lambda x, fn=getattr(F, name), a=args, k=kw: fn(x * 1 if x.is_floating_point() else x.clone(), *a, **k), u(dt=FLOATS + (I64,)))
fop("dropout2d", lambda g: ((img(g, rank=g.pick((3, 4))),), {"p": g.maybe(g.pick((0.0, 0.5)), 1.5), "training": g.chance(0.3)}),
    grad=False, cmp="dropout")
fop("interpolate", lambda g: (lambda x: ((x,), g.pick((
    {"size": g.pick((3, 7, 1)), "mode": g.pick(("linear", "nearest", "nearest-exact", "area")), "align_corners": None},
    {"scale_factor": g.pick((2, 0.5, 1.5)), "mode": g.pick(("linear", "nearest"))},
    {"size": 3, "mode": "linear", "align_corners": g.chance(0.5)}))))(img(g, rank=3)) if g.chance(0.4) else
    (lambda x: ((x,), g.pick(({"size": (2, 3), "mode": "area"}, {"scale_factor": (0.5, 1.5), "mode": g.pick(("bilinear", "bicubic", "nearest"))},
                              {"size": 4, "mode": "bicubic", "align_corners": g.chance(0.5)}, {"size": (5, 2), "mode": "bilinear", "antialias": True},
                              {"size": 3, "mode": "bilinear", "recompute_scale_factor": True, "scale_factor": None},
                              {"scale_factor": 2.5, "mode": "bilinear", "recompute_scale_factor": True}))))(img(g)))
OPS[-1]["name"] = "F.interpolate(modes)"
fop("pad", lambda g: (lambda r: (lambda x: ((x, g.pick(((1, 1), (0, 2, 1, 0), (1, 0, 0, 1, 1, 1), (-1, 1), (2, 2))[:None]),),
                                            {"mode": g.pick(("constant", "reflect", "replicate", "circular")), "value": g.pick((None, 0.0, 1.5))}))(
    g.t(shape=(1, 2) + tuple(g.pick((1, 2, 3, 4)) for _ in range(r - 2)) if r > 1 else (3,))))(g.pick((1, 2, 3, 4, 5))))
OPS[-1]["name"] = "F.pad(modes)"
fop("binary_cross_entropy_with_logits", lambda g: (lambda x: ((x, g.t(shape=x.shape, vals="prob", grad=False)),
                                                              {"weight": g.pick((None, g.t(shape=x.shape[-1:], vals="pos", grad=False))),
                                                               "pos_weight": g.pick((None, g.t(shape=x.shape[-1:] if g.chance(0.9) else (7,), vals="pos", grad=False),
                                                                                     g.t(shape=(1,), vals="pos", grad=False))),
                                                               "reduction": g.pick(("mean", "sum", "none"))}))(g.t(rank=g.pick((1, 2)))))
OPS[-1]["name"] = "F.binary_cross_entropy_with_logits(weights)"
fop("binary_cross_entropy", lambda g: (lambda x: ((x, g.t(shape=x.shape, vals="prob", grad=False)),
                                                  {"weight": g.pick((None, g.t(shape=x.shape[-1:], vals="pos", grad=False))),
                                                   "reduction": g.pick(("mean", "sum", "none"))}))(g.t(rank=g.pick((1, 2)), vals="prob", special=0.2)))
OPS[-1]["name"] = "F.binary_cross_entropy(weight)"
fop("cross_entropy", lambda g: (lambda x: ((x, g.t(shape=x.shape[:1], dt=I64, vals=(0, x.shape[1]))),
                                           {"weight": g.t(shape=(g.maybe(x.shape[1], 7),), vals="pos", grad=False),
                                            "ignore_index": g.pick((-100, 0, 1)), "label_smoothing": g.pick((0.0, 0.1)),
                                            "reduction": g.pick(("mean", "sum", "none"))}))(g.t(shape=(g.pick((0, 1, 3)), g.pick((2, 4))))))
OPS[-1]["name"] = "F.cross_entropy(weight)"
fop("nll_loss", lambda g: (lambda x: ((x, g.t(shape=(x.shape[0],) + x.shape[2:], dt=I64, vals=(0, x.shape[1]))),
                                      {"weight": g.pick((None, g.t(shape=(x.shape[1],), vals="pos", grad=False))),
                                       "ignore_index": g.pick((-100, 0, 1)), "reduction": g.pick(("mean", "sum", "none"))}))(
    g.t(shape=(g.pick((0, 1, 3)), g.pick((2, 4))) + g.pick(((), (2,), (2, 2))))))
OPS[-1]["name"] = "F.nll_loss(weight)"
fop("smooth_l1_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape, grad=False)), {"beta": g.maybe(g.pick((1.0, 0.0, 0.5)), -1.0),
                                                                                  "reduction": g.pick(("mean", "sum", "none"))}))(g.t()))
OPS[-1]["name"] = "F.smooth_l1_loss(beta)"
fop("huber_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape, grad=False)), {"delta": g.maybe(g.pick((1.0, 0.5, 3.0)), 0.0, -1.0),
                                                                              "reduction": g.pick(("mean", "sum", "none"))}))(g.t()))
OPS[-1]["name"] = "F.huber_loss(delta)"
fop("kl_div", lambda g: (lambda x: ((x, g.t(shape=x.shape, vals=g.pick(("prob", "normal")), grad=False)),
                                    {"reduction": g.pick(("mean", "sum", "batchmean", "none")), "log_target": g.chance(0.5)}))(g.t(rank=g.pick((1, 2)))))
OPS[-1]["name"] = "F.kl_div(log_target)"
fop("poisson_nll_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape, vals="pos", grad=False)),
                                              {"log_input": g.chance(0.5), "full": g.chance(0.5), "eps": g.pick((1e-8, 0.5)),
                                               "reduction": g.pick(("mean", "sum", "none"))}))(g.t(vals=g.pick(("pos", "normal")))))
OPS[-1]["name"] = "F.poisson_nll_loss(options)"
fop("gaussian_nll_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape, grad=False), g.t(shape=g.pick((x.shape, x.shape[:-1] + (1,), x.shape[:-1])),
                                                                                      vals=g.maybe("pos", "normal", "prob"))),
                                               {"full": g.chance(0.5), "eps": g.pick((1e-6, 0.5)), "reduction": g.pick(("mean", "sum", "none"))}))(
    g.t(rank=g.pick((1, 2)))))
OPS[-1]["name"] = "F.gaussian_nll_loss(options)"
fop("cosine_embedding_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape), T(torch.tensor(g.r.choice([1, -1], x.shape[0])).float(), lambda v: v, "c", False)),
                                                   {"margin": g.pick((0.0, 0.5, -0.5)), "reduction": g.pick(("mean", "sum", "none"))}))(
    g.t(rank=g.pick((1, 2)))))
OPS[-1]["name"] = "F.cosine_embedding_loss(margin)"
fop("margin_ranking_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape), T(torch.tensor(g.r.choice([1, -1], x.shape)).float(), lambda v: v, "c", False)),
                                                 {"margin": g.pick((0.0, 0.5)), "reduction": g.pick(("mean", "sum", "none"))}))(g.t(rank=g.pick((0, 1)))))
OPS[-1]["name"] = "F.margin_ranking_loss(margin)"
fop("multilabel_soft_margin_loss", lambda g: (lambda x: ((x, g.t(shape=x.shape, dt=F32, vals=(0, 2), grad=False)),
                                                         {"weight": g.pick((None, g.t(shape=x.shape[-1:], vals="pos", grad=False))),
                                                          "reduction": g.pick(("mean", "sum", "none"))}))(g.t(rank=g.pick((1, 2)))))
OPS[-1]["name"] = "F.multilabel_soft_margin_loss(weight)"
fop("softplus", lambda g: ((g.t(),), {"beta": g.pick((1.0, 2.0, 0.5, -1.0)), "threshold": g.pick((20.0, 1.0))}))
OPS[-1]["name"] = "F.softplus(beta)"
fop("normalize", lambda g: (lambda x: ((x,), {"dim": g.dim(x), "p": g.pick((2.0, 1.0, math.inf, 0.5, 0.0)), "eps": g.pick((1e-12, 1.0))}))(
    g.t(rank=g.pick((1, 2, 3)))))
OPS[-1]["name"] = "F.normalize(p)"
fop("cosine_similarity", lambda g: (lambda x: ((x, g.t(shape=x.shape) if g.chance(0.8) else g.like(x)), {"dim": g.dim(x), "eps": g.pick((1e-8, 1.0))}))(
    g.t(rank=g.pick((1, 2, 3)), special=0.1)))
OPS[-1]["name"] = "F.cosine_similarity(eps)"
fop("layer_norm", lambda g: (lambda x: ((x, x.shape[-2:] if x.ndim >= 2 and g.chance(0.5) else x.shape[-1:]), {"eps": g.pick((1e-5, 0.0, 1.0))}))(
    g.t(rank=g.pick((1, 2, 3)), special=0.2)))
OPS[-1]["name"] = "F.layer_norm(shapes)"
fop("group_norm", lambda g: (lambda x: ((x, g.pick((1, 2)), g.t(shape=(4,)), g.t(shape=(4,))), {"eps": g.pick((1e-5, 0.0))}))(
    img(g, c=4, rank=g.pick((2, 3, 4)))))
OPS[-1]["name"] = "F.group_norm(affine)"
fop("instance_norm", lambda g: (lambda x: ((x,), {"running_mean": g.pick((None, g.t(shape=(x.shape[1],), grad=False))),
                                                  "running_var": None, "weight": g.pick((None, g.t(shape=(x.shape[1],)))),
                                                  "bias": g.pick((None, g.t(shape=(x.shape[1],)))), "use_input_stats": True}))(
    img(g, rank=g.pick((3, 4)))))
OPS[-1]["name"] = "F.instance_norm(affine)"
fop("embedding", lambda g: ((g.t(rank=g.pick((1, 2)), dt=I64, vals=(0, 5)), g.t(shape=(5, 3), special=0.2)),
                            {"padding_idx": g.pick((None, 2, -1)), "max_norm": g.pick((None, 1.0)), "scale_grad_by_freq": g.chance(0.5)}))
OPS[-1]["name"] = "F.embedding(options)"

# torch's aliases, top-level in-place forms, stacking and splitting helpers and other torch.* functions that
# scripts call by name, which the rounds above left out (each alias runs tnet's own alias, not its target)
for name in ("absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "negative", "positive"):
    top(name, u(dt=ANY))
for name in ("arctan2", "multiply", "divide", "subtract"):
    top(name, b())
for name in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
    top(name, b(), grad=False)
top("clip", lambda g: (lambda x: ((x,), g.pick(({"min": -0.5}, {"max": 0.5}, {"min": 0.5, "max": -0.5}, {}))))(g.t(dt=ANY)))
top("float_power", lambda g: ((g.t(dt=ANY), g.scalar()), {}), grad=False)
OPS[-1].update(cmp="shape")  # float32 in tnet (no float64), as its docstring says: only the shape compares


def top_inplace(name, gen):
    """torch.NAME (an in-place function such as torch.abs_) on a fresh copy of its first argument."""
    def fn(library):
        f = getattr(library, name)
        return lambda x, *a, **k: f(x.clone() if x.requires_grad else x, *a, **k)
    op(name, fn(torch), fn(tnet), gen, grad=True)


for name in ("abs_", "ceil_", "exp_", "neg_", "sqrt_", "sigmoid_", "tanh_", "relu_", "trunc_", "frac_", "log1p_", "sin_",
             "round_", "zero_", "reciprocal_", "rsqrt_", "square_"):
    top_inplace(name, u(dt=ANY))
top_inplace("clamp_", lambda g: ((g.t(dt=ANY),), g.pick(({"min": -0.5}, {"max": 0.5}, {}))))
top_inplace("xlogy_", b())
top_inplace("fill_", lambda g: ((g.t(dt=ANY), g.scalar()), {}))
top_inplace("nan_to_num_", lambda g: ((g.t(),), g.pick(({}, {"nan": 1.5}, {"posinf": 7.0}))))
for name in ("vstack", "dstack", "column_stack", "row_stack", "concat", "concatenate"):
    top(name, lambda g: (lambda x: (([x, g.t(shape=x.shape, dt=g.maybe(x.dtype, I64)) if g.chance(0.8) else g.like(x)],), {}))(
        g.t(rank=g.pick((0, 1, 2, 3)))))
for name in ("hsplit", "vsplit", "dsplit"):
    top(name, lambda g: (lambda x: ((x, g.maybe(g.pick((1, 2, [1], [1, 2])), 0, 3)), {}))(g.t(rank=g.pick((1, 2, 3, 4)))))
for name in ("atleast_1d", "atleast_2d", "atleast_3d", "ravel", "t", "adjoint", "diagflat"):
    top(name, lambda g: ((g.t(dt=ANY, rank=g.pick((0, 1, 2, 2, 3))),), {}))
for name in ("swapaxes", "swapdims", "moveaxis"):
    top(name, lambda g: (lambda x: ((x, g.dim(x), g.dim(x)), {}))(g.t(dt=ANY)))
top("narrow_copy", lambda g: (lambda x: ((x, g.dim(x), g.maybe(0, -1, 9), g.maybe(1, -1, 9)), {}))(g.t(dt=ANY, rank=g.pick((1, 2, 3)))))
top("split_with_sizes", lambda g: (lambda x: ((x, g.maybe([1, max(x.shape[0] - 1, 0)] if x.ndim else [1], [1], [-1, 2])), {}))(
    g.t(rank=g.pick((1, 2)))))
top("broadcast_tensors", lambda g: (lambda x: ((x, g.like(x)), {}))(g.t(dt=ANY)))
top("as_strided", lambda g: (lambda x: ((x, g.maybe((2, 2), (-1, 2), (9, 9)), g.maybe((1, 1), (1, -1)), g.pick((0, 1))), {}))(
    g.t(shape=(g.pick((3, 4, 5)),))))
top("index_put", lambda g: (lambda x: ((x, (g.t(shape=(3,), dt=g.maybe(I64, F32), vals=(g.maybe(0, -1), max(1, x.shape[0]) + (1 if g.chance(g.bad) else 0)), grad=False),),
                                        g.t(shape=g.pick(((3,) + x.shape[1:], ())), dt=x.dtype)), {"accumulate": g.chance(0.5)}))(
    g.t(rank=g.pick((1, 2)), special=0)), grad=False)
top("gradient", lambda g: (lambda x: ((x,), g.pick(({}, {"spacing": g.maybe(2.0, 0.0)}, {"dim": g.dim(x)}, {"edge_order": g.maybe(1, 2, 3)}))))(
    g.t(shape=(g.maybe(4, 1), 3))), grad=False)
top("trapz", lambda g: ((g.t(rank=g.pick((1, 2))),), {}))
top("unravel_index", lambda g: ((g.t(rank=g.pick((0, 1, 2)), dt=I64, vals=(g.maybe(0, -7), 12), grad=False), g.maybe((3, 4), (0,), (-1, 2))), {}),
    grad=False)
top("diff", lambda g: (lambda x: ((x,), {"n": g.maybe(2, 0, -1), "dim": g.dim(x), "prepend": g.pick((None, g.t(shape=x.shape)))}))(
    g.t(rank=g.pick((1, 2)))), fname="diff")
OPS[-1]["name"] = "diff(n, prepend)"
top("chain_matmul", lambda g: ((g.t(shape=(2, 3)), g.t(shape=(3, g.maybe(4, 2))), g.t(shape=(4, 2))), {}))
top("ger", lambda g: ((g.t(rank=1), g.t(rank=g.maybe(1, 2))), {}))
top("inverse", lambda g: ((g.t(shape=g.pick(((2, 2), (3, 3), (2, 3, 3), (2, 3)))),), {}))
top("det", lambda g: ((g.t(shape=g.pick(((2, 2), (3, 3), (2, 3, 3), (2, 3)))),), {}))
top("full_like", lambda g: ((g.t(dt=ANY), g.scalar()), {"dtype": g.pick((None, F32, I64, BOOL))}), grad=False)
for name in ("zeros_like", "ones_like"):
    top(name, lambda g: ((g.t(dt=ANY),), {"dtype": g.pick((None, F16, I64))}), grad=False)
for name in ("empty_like", "rand_like", "randn_like"):
    top(name, lambda g: ((g.t(dt=ANY),), {"dtype": g.pick((None, F32, BF16))}), grad=False, cmp="shape")
top("randint_like", lambda g: ((g.t(dt=ANY), g.maybe(5, 0, -1)), {}), grad=False, cmp="shape")
top("scalar_tensor", lambda g: ((g.scalar(),), {"dtype": g.pick((None, F16, I64))}), grad=False)
top("result_type", lambda g: ((g.t(dt=ANY), g.pick((g.scalar(), g.t(dt=ANY)))), {}), grad=False)
top("can_cast", lambda g: ((g.pick((F32, I64, BOOL, F16)), g.pick((F32, I64, BOOL, F16))), {}), grad=False)
top("promote_types", lambda g: ((g.pick((F32, I64, BOOL, F16, BF16, U8)), g.pick((F32, I64, BOOL, F16, BF16, I32))), {}), grad=False)
top("is_nonzero", lambda g: ((g.t(shape=g.maybe((), (1,), (2,)), dt=ANY),), {}), grad=False)
top("is_same_size", lambda g: (lambda x: ((x, g.like(x)), {}))(g.t()), grad=False)
top("isreal", u(dt=ANY), grad=False)
for name in ("bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"):
    op(name, getattr(torch, name), getattr(tnet, name), lambda g: ((g.maybe(g.pick((0, 1, 2, 5)), -1),), {"periodic": g.chance(0.5)}),
       grad=False)
op("range", torch.range, tnet.range, lambda g: (g.pick(((0, 4), (0, 1, 0.25), (3, 0, -1), (0, 5, 0))), {}), grad=False)
for name in ("max_pool1d", "avg_pool1d"):
    top(name, lambda g: ((img(g, rank=g.maybe(3, 2)), g.maybe(g.pick((1, 2, 3)), 0, -1)),
                         {"stride": g.pick((None, 1, 2)), "padding": g.maybe(0, 1, 5), "ceil_mode": g.chance(0.3)}))
top("max_pool2d", lambda g: ((img(g), g.maybe(g.pick((1, 2, (2, 1))), 0)), {"stride": g.pick((None, 1, 2)), "padding": g.maybe(0, 1, 5)}))
top("adaptive_avg_pool1d", lambda g: ((img(g, rank=g.maybe(3, 2)), g.maybe(g.pick((1, 2, 3)), 0, -1)), {}))
top("adaptive_max_pool1d", lambda g: ((img(g, rank=g.maybe(3, 2)), g.maybe(g.pick((1, 2, 3)), 0, -1)), {}))
top("constant_pad_nd", lambda g: ((g.t(rank=g.pick((1, 2, 3))), g.maybe(g.pick(((1, 1), (0, 2, 1, 0), (-1, 1))), (1,))), {"value": g.scalar()}))
top("pixel_shuffle", lambda g: ((img(g, c=g.maybe(4, 3), hw=(2, 3)), g.maybe(2, 0, 3)), {}))
top("pixel_unshuffle", lambda g: ((img(g, hw=(g.maybe(4, 3), 2)), g.maybe(2, 0, 3)), {}))
top("channel_shuffle", lambda g: ((img(g, c=g.maybe(4, 3)), g.maybe(2, 0, 3)), {}))
top("prelu", lambda g: (lambda x: ((x, g.t(shape=g.maybe((1,) if x.ndim < 2 or g.chance(0.5) else (x.shape[1],), (5,)))), {}))(img(g, rank=g.pick((1, 2, 4)))))
top("rrelu", lambda g: ((g.t(),), {"lower": 0.1, "upper": g.maybe(0.3, -1.0), "training": False}))
fop("max_pool1d_with_indices", lambda g: ((img(g, rank=3), g.maybe(2, 0)), {}), grad=False)
fop("max_pool2d_with_indices", lambda g: ((img(g), g.maybe(2, 0)), {"stride": g.pick((None, 1))}), grad=False)
fop("adaptive_max_pool2d_with_indices", lambda g: ((img(g), g.maybe(g.pick((1, 2, (2, 1))), 0)), {}), grad=False)
fop("upsample_nearest", lambda g: ((img(g), ), {"scale_factor": g.maybe(2, 0)}))
fop("upsample_bilinear", lambda g: ((img(g), ), {"scale_factor": g.maybe(2, 0)}))
fop("dropout1d", lambda g: ((img(g, rank=3),), {"p": g.maybe(0.5, 1.5), "training": False}))
fop("dropout3d", lambda g: ((img(g, rank=5, hw=(2, 2, 2)),), {"p": g.maybe(0.5, 1.5), "training": False}))
fop("alpha_dropout", lambda g: ((g.t(),), {"p": g.maybe(0.5, 1.5), "training": False}))

# ---- modules ------------------------------------------------------------------------------------

def mod(name, ctor, inputs, grad=True, train=True, classes=None):
    """nn.NAME built from the same constructor arguments, torch's parameters and buffers copied into tnet's;
    classes: (torch's, tnet's) builders where NAME is not one class (a Sequential of layers)."""
    tcls, ncls = classes or (getattr(torch.nn, name), getattr(tnet.nn, name))
    built = {}  # the torch module of the case: tnet's side copies its parameters and buffers

    def run(cls, tnet_side):
        def call(ctor_args, ctor_kwargs, *xs):
            if not tnet_side:
                built.clear()
            if tnet_side:
                ctor_kwargs = {k: tnet.Tensor(v.clone()) if isinstance(v, torch.Tensor) else v for k, v in ctor_kwargs.items()}
            m = cls(*ctor_args, **ctor_kwargs)
            if tnet_side:
                if "torch" not in built:
                    raise Harness(f"torch's {name} raised in its constructor")
                src = built["torch"]
                for k, v in list(m.named_parameters()) + list(m.named_buffers()):
                    if k not in src:
                        raise Harness(f"tnet's {name} has {k}, torch's not")
                    v.memory.copy_(src[k])
            else:  # its values as built: its forward may change them in place (max_norm, running stats)
                built["torch"] = {k: v.detach().clone() for k, v in list(m.named_parameters()) + list(m.named_buffers())}
            m.train(train)
            return m(*xs)
        return call
    op("nn." + name, run(tcls, False), run(ncls, True),
       lambda g: (lambda c: ((c[0], c[1], *inputs(g, c)), {}))(ctor(g)), grad=grad)


class Harness(Exception):
    """The fuzz driver itself could not set the case up."""


mod("Linear", lambda g: ((g.maybe(3, 0, -1), g.maybe(2, 0)), {"bias": g.chance(0.7)}),
    lambda g, c: [g.t(shape=(g.pick((1, 2)), g.maybe(3, 4)))])
mod("Conv2d", lambda g: ((2, g.maybe(3, 0), g.maybe(3, 0)), {"padding": g.pick((0, 1, "same")), "stride": g.pick((1, 2)),
                                                            "bias": g.chance(0.7), "padding_mode": g.pick(("zeros", "zeros", "reflect", "circular"))}),
    lambda g, c: [img(g, c=g.maybe(2, 3), hw=(4, 5), layout=g.pick(("c", "cl")))])
mod("Conv1d", lambda g: ((2, 3, g.maybe(3, 0)), {"padding": g.pick((0, 1))}), lambda g, c: [img(g, c=2, rank=g.maybe(3, 2), hw=(5, 5))])
mod("ConvTranspose2d", lambda g: ((2, 3, 3), {"stride": g.pick((1, 2))}), lambda g, c: [img(g, c=g.maybe(2, 1))])
mod("BatchNorm2d", lambda g: ((g.maybe(3, 0),), {"affine": g.chance(0.8), "track_running_stats": g.chance(0.8)}),
    lambda g, c: [img(g, c=g.maybe(3, 2), rank=g.maybe(4, 3))])
mod("BatchNorm1d", lambda g: ((3,), {}), lambda g, c: [g.t(shape=(g.pick((1, 2, 4)), g.maybe(3, 2)) + g.pick(((), (5,))))])
mod("LayerNorm", lambda g: ((g.pick((3, (2, 3))),), {"elementwise_affine": g.chance(0.8)}), lambda g, c: [g.t(shape=(2,) + ((2, 3) if isinstance(c[0][0], tuple) else (g.maybe(3, 4),)))])
mod("GroupNorm", lambda g: ((g.maybe(2, 3), 4), {}), lambda g, c: [img(g, c=g.maybe(4, 2))])
mod("InstanceNorm2d", lambda g: ((3,), {"affine": g.chance(0.5)}), lambda g, c: [img(g, c=3)])
mod("Embedding", lambda g: ((g.maybe(5, 0), 3), {"padding_idx": g.pick((None, 0))}),
    lambda g, c: [g.t(shape=(2, 3), dt=I64, vals=(0, g.maybe(5, 6)))])
mod("Embedding", lambda g: ((5, 3), {"max_norm": g.maybe(g.pick((1.0, 0.5)), -1.0), "norm_type": g.pick((2.0, 1.0))}),
    lambda g, c: [g.t(shape=(2, 3), dt=I64, vals=(0, g.maybe(5, 6)))])
OPS[-1]["name"] = "nn.Embedding(max_norm)"
mod("MaxPool2d", lambda g: ((g.maybe(2, 0),), {"stride": g.pick((None, 1)), "padding": g.pick((0, 1))}), lambda g, c: [img(g)])
mod("AvgPool2d", lambda g: ((g.maybe(2, 0),), {"count_include_pad": g.chance(0.5), "padding": g.pick((0, 1))}), lambda g, c: [img(g)])
mod("AdaptiveAvgPool2d", lambda g: ((g.maybe(g.pick((1, 2, (3, 2))), 0),), {}), lambda g, c: [img(g)])
mod("Dropout", lambda g: ((g.maybe(0.5, 1.5),), {}), lambda g, c: [g.t()], train=False)
mod("ReLU", lambda g: ((), {}), lambda g, c: [g.t(dt=ANY)])
mod("GELU", lambda g: ((), {}), lambda g, c: [g.t()])
mod("Flatten", lambda g: ((), {"start_dim": g.pick((1, 0, -1))}), lambda g, c: [g.t(dt=ANY)])
mod("Softmax", lambda g: ((), {"dim": g.pick((1, -1, 3))}), lambda g, c: [g.t(rank=g.pick((1, 2, 3)))])
mod("PReLU", lambda g: ((), {"num_parameters": g.maybe(1, 3)}), lambda g, c: [img(g, c=g.pick((1, 3)))])
mod("PixelShuffle", lambda g: ((2,), {}), lambda g, c: [img(g, c=g.maybe(4, 3))])
mod("Upsample", lambda g: ((), g.pick(({"scale_factor": 2}, {"size": (3, 3)}, {"scale_factor": 2, "mode": "bilinear"}))), lambda g, c: [img(g)])
mod("CrossEntropyLoss", lambda g: ((), {"label_smoothing": g.pick((0.0, 0.2))}),
    lambda g, c: [g.t(shape=(3, 4)), g.t(shape=(3,), dt=I64, vals=(g.maybe(0, -1), g.maybe(4, 5)))])
mod("MSELoss", lambda g: ((), {}), lambda g, c: (lambda x: [x, g.like(x)])(g.t()))
mod("BCELoss", lambda g: ((), {}), lambda g, c: (lambda x: [x, g.t(shape=x.shape, vals="prob", grad=False)])(g.t(vals="prob", special=0.5)))
mod("LSTM", lambda g: ((3, 2), {"batch_first": g.chance(0.5)}), lambda g, c: [g.t(shape=(2, 2, g.maybe(3, 4)))])
mod("GRU", lambda g: ((3, 2), {}), lambda g, c: [g.t(shape=(g.pick((1, 2)), 2, g.maybe(3, 4)))])
mod("RReLU", lambda g: ((), {"lower": g.maybe(0.125, 0.5)}), lambda g, c: [g.t()], train=False)
mod("EmbeddingBag", lambda g: ((g.maybe(5, 0), 3), {"mode": g.pick(("sum", "mean", "max"))}),
    lambda g, c: [g.t(shape=(2, 3), dt=I64, vals=(0, g.maybe(5, 6)))])
mod("RMSNorm", lambda g: ((g.pick((3, (2, 3))),), {"elementwise_affine": g.chance(0.8)}),
    lambda g, c: [g.t(shape=(2,) + ((2, 3) if isinstance(c[0][0], tuple) else (g.maybe(3, 4),)))])
mod("MultiheadAttention", lambda g: ((4, g.maybe(2, 3)), {"batch_first": True}),
    lambda g, c: (lambda q: [q, q, q])(g.t(shape=(1, 3, g.maybe(4, 5)), layout="c")))

# modules added for the eleventh fuzz
mod("Fold", lambda g: (((3, g.pick((3, 4))), 2), {"padding": g.pick((0, 1)), "stride": g.pick((1, 2))}),
    lambda g, c: (lambda L: [g.t(shape=(g.pick((1, 2)), 2 * 4, L + (1 if g.chance(g.bad) else 0)))])(
        (((3 + 2 * c[1]["padding"] - 2) // c[1]["stride"]) + 1) * (((c[0][0][1] + 2 * c[1]["padding"] - 2) // c[1]["stride"]) + 1)))
mod("Unfold", lambda g: ((g.pick((2, (1, 2))),), {"padding": g.pick((0, 1)), "dilation": g.pick((1, 2)), "stride": g.pick((1, 2))}),
    lambda g, c: [img(g, rank=g.maybe(4, 3))])
mod("ConvTranspose1d", lambda g: ((2, 3, 3), {"stride": g.pick((1, 2)), "padding": g.pick((0, 1)), "output_padding": g.pick((0, 1))}),
    lambda g, c: [img(g, c=g.maybe(2, 1), rank=3)])
mod("AdaptiveMaxPool2d", lambda g: ((g.pick((1, 2, (3, 2))),), {}), lambda g, c: [img(g)])
mod("AdaptiveMaxPool1d", lambda g: ((g.pick((1, 2, 3)),), {}), lambda g, c: [img(g, rank=3)])
mod("AdaptiveAvgPool1d", lambda g: ((g.pick((1, 2, 3)),), {}), lambda g, c: [img(g, rank=3)])
mod("MaxPool1d", lambda g: ((g.pick((1, 2, 3)),), {"stride": g.pick((None, 1)), "padding": g.pick((0, 1)), "ceil_mode": g.chance(0.3)}),
    lambda g, c: [img(g, rank=3)])
mod("AvgPool1d", lambda g: ((g.pick((1, 2, 3)),), {"stride": g.pick((None, 1)), "padding": g.pick((0, 1)), "ceil_mode": g.chance(0.3)}),
    lambda g, c: [img(g, rank=3)])
mod("LPPool2d", lambda g: ((g.pick((1, 2)), 2), {}), lambda g, c: [img(g, vals="pos") if g.chance(0.7) else img(g)])
mod("BCEWithLogitsLoss", lambda g: ((), {"pos_weight": g.pick((None, torch.tensor([2.0, 0.5, 1.0]), torch.tensor([3.0]))),
                                         "reduction": g.pick(("mean", "sum", "none"))}),
    lambda g, c: (lambda x: [x, g.t(shape=x.shape, vals="prob", grad=False)])(g.t(shape=(2, 3))))
OPS[-1]["name"] = "nn.BCEWithLogitsLoss(pos_weight)"
mod("HuberLoss", lambda g: ((), {"delta": g.pick((1.0, 0.5)), "reduction": g.pick(("mean", "sum", "none"))}),
    lambda g, c: (lambda x: [x, g.t(shape=x.shape, grad=False)])(g.t()))
mod("SmoothL1Loss", lambda g: ((), {"beta": g.pick((1.0, 0.0, 2.0))}), lambda g, c: (lambda x: [x, g.t(shape=x.shape, grad=False)])(g.t()))
mod("L1Loss", lambda g: ((), {}), lambda g, c: (lambda x: [x, g.like(x)])(g.t()))
mod("KLDivLoss", lambda g: ((), {"reduction": "batchmean", "log_target": g.chance(0.5)}),
    lambda g, c: (lambda x: [x, g.t(shape=x.shape, vals="prob", grad=False)])(g.t(rank=2)))
mod("NLLLoss", lambda g: ((), {"weight": g.pick((None, torch.tensor([1.0, 2.0, 0.5, 0.0]))), "ignore_index": g.pick((-100, 1))}),
    lambda g, c: [g.t(shape=(3, 4)), g.t(shape=(3,), dt=I64, vals=(0, 4))])
mod("CrossEntropyLoss", lambda g: ((), {"weight": g.pick((None, torch.tensor([1.0, 2.0, 0.5, 0.0]))), "label_smoothing": g.pick((0.0, 0.3)),
                                        "ignore_index": g.pick((-100, 1))}),
    lambda g, c: [g.t(shape=(3, 4, g.pick((1, 2)))[:g.pick((2, 3))]), g.t(shape=(3,), dt=I64, vals=(0, 4))])
OPS[-1]["name"] = "nn.CrossEntropyLoss(weight)"
mod("PoissonNLLLoss", lambda g: ((), {"log_input": g.chance(0.5), "full": g.chance(0.5)}),
    lambda g, c: (lambda x: [x, g.t(shape=x.shape, vals="pos", grad=False)])(g.t(vals="pos")))
mod("GaussianNLLLoss", lambda g: ((), {"full": g.chance(0.5)}),
    lambda g, c: (lambda x: [x, g.t(shape=x.shape, grad=False), g.t(shape=x.shape, vals="pos")])(g.t(rank=2)))
mod("MultiMarginLoss", lambda g: ((), {"p": g.pick((1, 2)), "margin": g.pick((1.0, 0.3))}),
    lambda g, c: [g.t(shape=(3, 4)), g.t(shape=(3,), dt=I64, vals=(0, 4))])
mod("MultiLabelSoftMarginLoss", lambda g: ((), {}), lambda g, c: [g.t(shape=(2, 3)), g.t(shape=(2, 3), dt=F32, vals=(0, 2), grad=False)])
mod("MarginRankingLoss", lambda g: ((), {"margin": g.pick((0.0, 0.5))}), lambda g, c: [g.t(shape=(3,)), g.t(shape=(3,)), g.t(shape=(3,), grad=False)])
mod("TripletMarginLoss", lambda g: ((), {"margin": 1.0, "p": g.pick((2.0, 1.0)), "swap": g.chance(0.5)}),
    lambda g, c: [g.t(shape=(2, 3)), g.t(shape=(2, 3)), g.t(shape=(2, 3))])
mod("CosineEmbeddingLoss", lambda g: ((), {"margin": g.pick((0.0, 0.5))}),
    lambda g, c: [g.t(shape=(2, 3)), g.t(shape=(2, 3)), T(torch.tensor([1.0, -1.0]), lambda v: v, "c", False)])
mod("InstanceNorm1d", lambda g: ((3,), {"affine": g.chance(0.5)}), lambda g, c: [img(g, c=3, rank=3)])
mod("LocalResponseNorm", lambda g: ((g.pick((1, 2, 3)),), {}), lambda g, c: [img(g, c=4, rank=g.pick((3, 4)))])
mod("GroupNorm", lambda g: ((2, 4), {"affine": g.chance(0.5), "eps": g.pick((1e-5, 0.0))}), lambda g, c: [img(g, c=4, rank=g.pick((2, 3, 4)))])
OPS[-1]["name"] = "nn.GroupNorm(affine)"
mod("LayerNorm", lambda g: ((3,), {"bias": g.chance(0.5), "eps": g.pick((1e-5, 0.0))}), lambda g, c: [g.t(shape=(2, 3), special=0.3)])
OPS[-1]["name"] = "nn.LayerNorm(bias)"
for name in ("ReflectionPad1d", "ReplicationPad1d", "CircularPad1d", "ConstantPad1d", "ZeroPad1d"):
    mod(name, lambda g, name=name: ((g.pick((1, (2, 0), (0, 1))),) + ((1.5,) if name.startswith("Constant") else ()), {}),
        lambda g, c: [img(g, rank=g.maybe(3, 2))])
for name in ("ReflectionPad2d", "ReplicationPad2d", "CircularPad2d", "ConstantPad2d", "ZeroPad2d"):
    mod(name, lambda g, name=name: ((g.pick((1, (1, 0, 0, 2), (0, 1, 1, 0))),) + ((-2.0,) if name.startswith("Constant") else ()), {}),
        lambda g, c: [img(g, rank=g.maybe(4, 3))])
mod("Bilinear", lambda g: ((3, 4, 2), {"bias": g.chance(0.5)}), lambda g, c: [g.t(shape=(2, 3)), g.t(shape=(2, g.maybe(4, 3)))])
mod("GLU", lambda g: ((), {"dim": g.pick((-1, 1))}), lambda g, c: [g.t(shape=(2, g.maybe(4, 3)))])
mod("CosineSimilarity", lambda g: ((), {"dim": 1}), lambda g, c: [g.t(shape=(2, 3)), g.t(shape=(2, 3))])
mod("PairwiseDistance", lambda g: ((), {"p": g.pick((2.0, 1.0)), "keepdim": g.chance(0.5)}), lambda g, c: [g.t(shape=(2, 3)), g.t(shape=(2, 3))])
mod("Softmax2d", lambda g: ((), {}), lambda g, c: [img(g, rank=g.maybe(4, 3, 2))])
mod("LogSoftmax", lambda g: ((), {"dim": g.pick((1, -1))}), lambda g, c: [g.t(rank=g.pick((2, 3)))])
mod("Softmin", lambda g: ((), {"dim": -1}), lambda g, c: [g.t(rank=g.pick((1, 2)))])
mod("Threshold", lambda g: ((0.1, 20.0), {"inplace": g.chance(0.5)}), lambda g, c: [g.t(grad=g.chance(0.5))])
for name, kw in (("ReLU", {}), ("ReLU6", {}), ("LeakyReLU", {"negative_slope": 0.2}), ("ELU", {"alpha": 0.5}), ("SiLU", {}),
                 ("Hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("Hardswish", {}), ("Hardsigmoid", {}), ("Mish", {}), ("CELU", {}),
                 ("SELU", {})):
    mod(name, lambda g, kw=kw: ((), dict(kw, inplace=True)), lambda g, c: [g.t(grad=g.chance(0.3))])
    OPS[-1]["name"] = f"nn.{name}(inplace)"
for name in ("Tanh", "Sigmoid", "LogSigmoid", "Softsign", "Softplus", "Softshrink", "Hardshrink", "Tanhshrink", "Identity"):
    mod(name, lambda g: ((), {}), lambda g, c: [g.t()])
mod("RNN", lambda g: ((3, 2), {"nonlinearity": g.pick(("tanh", "relu")), "num_layers": g.pick((1, 2)), "bias": g.chance(0.7),
                               "bidirectional": g.chance(0.3)}), lambda g, c: [g.t(shape=(2, 2, g.maybe(3, 4)))])
mod("LSTM", lambda g: ((3, 2), {"num_layers": g.pick((1, 2)), "bidirectional": g.chance(0.5), "proj_size": 0}),
    lambda g, c: [g.t(shape=(2, 2, 3))])
OPS[-1]["name"] = "nn.LSTM(layers)"
for name in ("RNNCell", "LSTMCell", "GRUCell"):
    mod(name, lambda g: ((3, 2), {"bias": g.chance(0.7)}), lambda g, c: [g.t(shape=g.pick(((2, 3), (3,), (2, 4))))])
mod("TransformerEncoderLayer", lambda g: ((4, 2), {"dim_feedforward": 8, "dropout": 0.0, "batch_first": True, "norm_first": g.chance(0.5),
                                                   "activation": g.pick(("relu", "gelu"))}),
    lambda g, c: [g.t(shape=(1, g.pick((1, 3)), 4), layout="c", special=0.1)])
mod("Unflatten", lambda g: ((1, g.maybe((2, 2), (3, 3))), {}), lambda g, c: [g.t(shape=(2, 4))])
mod("ChannelShuffle", lambda g: ((g.maybe(2, 3),), {}), lambda g, c: [img(g, c=4)])
mod("PixelUnshuffle", lambda g: ((2,), {}), lambda g, c: [img(g, hw=(g.maybe(4, 3), 2))])
mod("UpsamplingBilinear2d", lambda g: ((), {"scale_factor": 2}), lambda g, c: [img(g)])
mod("UpsamplingNearest2d", lambda g: ((), {"size": (3, 5)}), lambda g, c: [img(g)])
mod("Conv2d", lambda g: ((4, 4, 3), {"padding": g.pick((1, "same")), "groups": g.pick((2, 4)), "dilation": g.pick((1, 2)), "bias": g.chance(0.5)}),
    lambda g, c: [img(g, c=4, hw=(5, 5))])
OPS[-1]["name"] = "nn.Conv2d(groups)"


# ops added for the sixteenth fuzz: 3-D volumes [N, C, D, H, W] (video and medical models: conv3d, 3-D pooling
# and norms), beside the int32 and uint8 inputs that Gen.t now draws in place of int64 (SMALL_INTS)
def vol(g, c=None, **kw):
    n = g.pick((1, 2, 0)) if g.chance(0.15) else g.pick((1, 2))
    c = g.pick((1, 2, 3)) if c is None else c
    return g.t(shape=(n, c, g.pick((1, 2, 3)), g.pick((2, 3, 4)), g.pick((2, 3, 4))), **kw)


fop("conv3d", lambda g: (lambda cin: ((vol(g, c=g.maybe(cin, cin + 1)) if g.chance(0.9) else img(g, c=cin),
                                       g.t(shape=(2, cin) + tuple(g.pick((1, 2)) for _ in range(3))), g.pick((None, g.t(shape=(2,))))),
                                      {"stride": g.maybe(g.pick((1, 2, (1, 2, 1))), 0), "padding": g.maybe(g.pick((0, 1, "same")), -1),
                                       "dilation": g.pick((1, 2))}))(g.pick((1, 2))))
for name in ("max_pool3d", "avg_pool3d"):
    fop(name, lambda g: ((vol(g) if g.chance(0.9) else img(g), g.maybe(g.pick((1, 2, (1, 2, 2))), 0)),
                         {"stride": g.pick((None, 1, 2)), "padding": g.maybe(g.pick((0, 1)), 2), "ceil_mode": g.chance(0.3)}))
for name in ("adaptive_avg_pool3d", "adaptive_max_pool3d"):
    fop(name, lambda g: ((vol(g) if g.chance(0.9) else img(g), g.maybe(g.pick((1, 2, (1, 2, 3), (None, 2, 1))), 0)), {}))
mod("Conv3d", lambda g: ((2, 2, g.pick((1, 2))), {"padding": g.pick((0, 1)), "bias": g.chance(0.7)}),
    lambda g, c: [vol(g, c=g.maybe(2, 3))])
mod("BatchNorm3d", lambda g: ((g.maybe(2, 3),), {"affine": g.chance(0.8), "track_running_stats": g.chance(0.8)}),
    lambda g, c: [vol(g, c=2)])
mod("InstanceNorm3d", lambda g: ((2,), {"affine": g.chance(0.5)}), lambda g, c: [vol(g, c=2)])
mod("MaxPool3d", lambda g: ((g.pick((1, 2)),), {"stride": g.pick((None, 1))}), lambda g, c: [vol(g)])
mod("AvgPool3d", lambda g: ((g.pick((1, 2)),), {"count_include_pad": g.chance(0.5)}), lambda g, c: [vol(g)])


# the layers the rounds above left out (thirtieth session)
for name in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
    mod(name, lambda g: ((g.maybe(0.5, 1.5, -0.1),), {}),
        lambda g, c, name=name: [vol(g) if name == "Dropout3d" else img(g, rank=3 if name == "Dropout1d" else 4)], train=False)
mod("HingeEmbeddingLoss", lambda g: ((), {"margin": g.pick((1.0, 0.0)), "reduction": g.pick(("mean", "sum", "none"))}),
    lambda g, c: (lambda x: [x, T(torch.tensor(g.r.choice([1.0, -1.0], x.shape), dtype=F32), lambda v: v, "c", False)])(
        g.t(rank=g.pick((1, 2)))))
mod("SoftMarginLoss", lambda g: ((), {"reduction": g.pick(("mean", "sum", "none"))}),
    lambda g, c: (lambda x: [x, T(torch.tensor(g.r.choice([1.0, -1.0], x.shape), dtype=F32), lambda v: v, "c", False)])(
        g.t(rank=g.pick((1, 2)))))
mod("MultiLabelMarginLoss", lambda g: ((), {"reduction": g.pick(("mean", "sum", "none"))}),
    lambda g, c: [g.t(shape=(2, 4)), g.t(shape=(2, 4), dt=I64, vals=(g.maybe(-1, -2), g.maybe(4, 5)), grad=False)])
mod("TripletMarginWithDistanceLoss", lambda g: ((), {"margin": g.pick((1.0, 0.5)), "swap": g.chance(0.5),
                                                     "reduction": g.pick(("mean", "sum", "none"))}),
    lambda g, c: [g.t(shape=(2, 3)), g.t(shape=(2, 3)), g.t(shape=(2, g.maybe(3, 4)))])
mod("CTCLoss", lambda g: ((), {"blank": g.maybe(0, 5), "reduction": g.pick(("mean", "sum", "none")), "zero_infinity": g.chance(0.5)}),
    lambda g, c: [T(torch.randn(5, 2, 4, generator=torch.Generator().manual_seed(int(g.r.integers(1 << 30)))).log_softmax(2),
                    lambda v: v, "c", True),
                  g.t(shape=(2, 3), dt=I64, vals=(1, 4), grad=False), T(torch.tensor([5, g.maybe(4, 6)]), lambda v: v, "c", False),
                  T(torch.tensor([g.pick((3, 2, 0)), 2]), lambda v: v, "c", False)],
    grad=False)  # its gradient with respect to log_probs differs from torch's by design (ctc_loss's docstring)
for name in ("AdaptiveAvgPool3d", "AdaptiveMaxPool3d"):
    mod(name, lambda g: ((g.maybe(g.pick((1, 2, (1, 2, 1))), 0),), {}), lambda g, c: [vol(g)])
for name in ("ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "ConstantPad3d", "ZeroPad3d"):
    mod(name, lambda g, name=name: ((g.pick((1, (1, 0, 0, 1, 1, 0))),) + ((0.5,) if name.startswith("Constant") else ()), {}),
        lambda g, c: [vol(g) if g.chance(0.9) else img(g)])
mod("ConvTranspose3d", lambda g: ((2, 2, g.pick((1, 2))), {"stride": g.pick((1, 2)), "bias": g.chance(0.7)}),
    lambda g, c: [vol(g, c=g.maybe(2, 3))])
mod("LPPool1d", lambda g: ((g.pick((1, 2)), 2), {}), lambda g, c: [img(g, rank=3, vals="pos")])
mod("LPPool3d", lambda g: ((2, g.maybe(1, 0)), {}), lambda g, c: [vol(g, vals="pos")])
mod("TransformerDecoderLayer", lambda g: ((4, 2), {"dim_feedforward": 8, "dropout": 0.0, "batch_first": True,
                                                   "norm_first": g.chance(0.5)}),
    lambda g, c: [g.t(shape=(1, g.pick((1, 3)), 4), layout="c", special=0.1), g.t(shape=(1, 2, 4), layout="c", special=0.1)])



# torch.special, the linalg functions and the top-level factorizations the rounds above left out (thirty-first
# session); each runs tnet's own function (torch.special.expit, not its alias torch.sigmoid)
def sop(name, gen, grad=True, cmp="values"):
    """torch.special.NAME against tnet.special.NAME."""
    op("special." + name, getattr(torch.special, name), getattr(tnet.special, name), gen, grad, cmp)


def _unary_domain(g):
    return ((g.t(dt=ANY, vals=g.pick(("normal", "normal", "prob", "pos"))),), {})


for name in ("digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1",
             "i1e", "log1p", "log_ndtr", "ndtr", "ndtri", "psi", "round", "sinc"):
    sop(name, _unary_domain)
for name in ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
             "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
             "spherical_bessel_j0"):
    sop(name, _unary_domain, grad=False)  # torch has no derivative of these
for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
             "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
             "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
             "legendre_polynomial_p"):
    sop(name, lambda g: (lambda x: ((x, g.pick((0, 1, 3, -1, 2.5, g.t(shape=x.shape, dt=I64, vals=(-1, 6), grad=False)))), {}))(
        g.t(dt=g.maybe(F32, F32, I64), vals=g.pick(("normal", "prob")))), grad=False)
for name in ("xlog1py", "xlogy"):
    sop(name, b())
for name in ("zeta", "gammainc", "gammaincc"):
    sop(name, lambda g: (lambda x: ((x, g.scalar() if g.chance(0.2) else g.like(x, vals="pos")), {}))(g.t(dt=g.maybe(F32, F32, I64), vals="pos")),
        grad=False)  # torch differentiates none of these in their first operand
sop("polygamma", lambda g: ((g.maybe(g.pick((0, 1, 2)), -1, 1.5), g.t(dt=ANY, vals=g.pick(("normal", "pos")))), {}))
sop("multigammaln", lambda g: ((g.t(vals="pos") if g.chance(0.5) else T(torch.rand(3) + 2, lambda v: v, "c", True),
                                g.maybe(g.pick((1, 2, 3)), 0, -1, 1.5)), {}))
sop("logit", lambda g: ((g.t(dt=ANY, vals="prob"),), {"eps": g.pick((None, 1e-3, 0.6))}))
sop("logsumexp", lambda g: (lambda x: ((x, g.dim(x)), {"keepdim": g.chance(0.5)}))(g.t(dt=ANY)))
for name in ("softmax", "log_softmax"):
    sop(name, lambda g: (lambda x: ((x, g.dim(x)), {"dtype": g.pick((None, F32, F16))}))(g.t(dt=ANY)))
top("acos", lambda g: ((g.t(dt=ANY, vals=g.pick(("normal", "prob"))),), {}))
top("i0", _unary_domain)
for name in ("igamma", "igammac"):
    top(name, lambda g: (lambda x: ((x, g.like(x, vals="pos")), {}))(g.t(dt=g.maybe(F32, F32, I64), vals="pos")), grad=False)


def spd(g, batch=None):
    """A (batch of) symmetric positive definite n x n matrices, (bad) an indefinite or non-square one."""
    n, batch = g.pick((1, 2, 3)), g.pick(((), (), (2,))) if batch is None else batch
    m = torch.tensor(g.r.standard_normal(batch + (n, n)))
    if g.chance(g.bad):
        return g.pick((T(m.float(), lambda v: v, "c", True), g.t(shape=batch + (n, n + 1))))
    return T((m @ m.mT + n * torch.eye(n)).float(), lambda v: v, "c", True)


def tri(g, n, upper, batch=()):
    """A (batch of) well-conditioned triangular n x n matrices (a unit-ish diagonal)."""
    a = g.r.standard_normal(batch + (n, n)) * 0.3 + 2 * np.eye(n)
    a = np.triu(a) if upper else np.tril(a)
    return T(torch.tensor(a).float(), lambda v: v, "c", True)


def rhs(g, A, k=None):
    """A right-hand side B for A's rows: [..., n, k], or (bad) a mismatched one."""
    n = A.shape[-1] if A.ndim else 1
    return g.t(shape=A.shape[:-2] + (g.maybe(n, n + 1), k or g.pick((1, 2))), special=0.1)


linalg("cholesky_ex", lambda m: lambda A: m.cholesky_ex(A).L)
OPS[-1].update(name="linalg.cholesky_ex(L)", gen=lambda g: ((spd(g),), {}))
linalg("inv_ex", lambda m: lambda A: m.inv_ex(A).inverse)
OPS[-1]["name"] = "linalg.inv_ex(inverse)"
linalg("solve_ex", lambda m: lambda A, B: m.solve_ex(A, B).result)
OPS[-1].update(name="linalg.solve_ex(result)", gen=lambda g: (lambda A: ((A, rhs(g, A)), {}))(square(g)))
linalg("svdvals", grad=False)
linalg("eigvalsh", grad=False)
OPS[-1]["gen"] = lambda g: ((spd(g),), {"UPLO": g.maybe("L", "U", "X")})
linalg("eigh", lambda m: lambda A, **k: m.eigh(A, **k).eigenvalues, grad=False)
OPS[-1].update(name="linalg.eigh(eigenvalues)", gen=lambda g: ((spd(g),), {"UPLO": g.pick(("L", "U"))}))
linalg("pinv", grad=False)
OPS[-1]["gen"] = lambda g: ((g.t(shape=g.pick(((2, 3), (3, 2), (2, 2), (2, 1, 3))), special=0.1),), {"hermitian": False})
linalg("matrix_rank", grad=False)
OPS[-1]["gen"] = lambda g: ((g.t(shape=g.pick(((2, 3), (3, 3), (2, 2, 2))), dt=g.maybe(F32, I64), special=0.1),), {})
linalg("cond", grad=False)
OPS[-1]["gen"] = lambda g: ((square(g),), {"p": g.pick((None, 1, 2, -2, "fro", "nuc", math.inf, -1))})
linalg("matrix_norm")
OPS[-1]["gen"] = lambda g: ((g.t(rank=g.maybe(g.pick((2, 3)), 1)),), {"ord": g.maybe(g.pick(("fro", "nuc", 1, -1, 2, -2, math.inf)), 3),
                                                                      "keepdim": g.chance(0.3)})
linalg("vector_norm")
OPS[-1]["gen"] = lambda g: (lambda x: ((x,), {"ord": g.pick((2, 1, 0, 3.5, math.inf, -math.inf, -1)), "dim": g.dim(x, none=True),
                                              "keepdim": g.chance(0.3), "dtype": g.pick((None, None, F32))}))(g.t(dt=g.maybe(F32, F16, BF16, I64)))
linalg("norm")
OPS[-1]["gen"] = lambda g: (lambda x: ((x,), {"ord": g.pick((None, 2, 1, "fro", math.inf)), "dim": g.pick((None, -1, (0, 1) if x.ndim >= 2 else 0))}))(
    g.t(rank=g.pick((1, 2, 3))))
linalg("vecdot")
OPS[-1]["gen"] = lambda g: (lambda x: ((x, g.like(x)), {"dim": g.dim(x)}))(g.t(rank=g.pick((1, 2, 3))))
linalg("multi_dot")
OPS[-1]["gen"] = lambda g: (([g.t(shape=(g.pick((2, 3)),) if g.chance(0.3) else (2, 3)), g.t(shape=(3, g.maybe(4, 2))),
                              g.t(shape=(4,) if g.chance(0.3) else (4, 2))],), {})
linalg("solve_triangular")
OPS[-1]["gen"] = lambda g: (lambda up, n: ((tri(g, n, up), rhs(g, tri(g, n, up))),
                                           {"upper": g.maybe(up, not up), "left": True, "unitriangular": g.chance(0.2)}))(g.chance(0.5), g.pick((1, 2, 3)))
linalg("lstsq", lambda m: lambda A, B: m.lstsq(A, B).solution, grad=False)
OPS[-1].update(name="linalg.lstsq(solution)", gen=lambda g: (lambda A: ((A, g.t(shape=(A.shape[0], g.pick((1, 2))) if g.chance(0.9) else (7, 1))), {}))(
    g.t(shape=g.pick(((3, 2), (3, 3), (4, 2))), special=0.05)))
linalg("lu_factor", lambda m: lambda A: m.lu_factor(A).LU)
OPS[-1]["name"] = "linalg.lu_factor(LU)"
linalg("lu", lambda m: lambda A: tuple(m.lu(A)))
OPS[-1]["gen"] = lambda g: ((g.t(shape=g.pick(((2, 2), (3, 3), (2, 3), (3, 2), (2, 2, 2))), special=0.1),), {})
linalg("matrix_power")
OPS[-1]["gen"] = lambda g: ((square(g), g.maybe(g.pick((0, 1, 2, 3, -1)), 1.5)), {})
linalg("slogdet", lambda m: lambda A: tuple(m.slogdet(A)))
linalg("tensorinv")
OPS[-1]["gen"] = lambda g: ((g.t(shape=g.maybe((4, 2, 2), (4, 2, 3)), special=0.05), ), {"ind": g.maybe(1, 0)})
linalg("tensorsolve")
OPS[-1]["gen"] = lambda g: ((g.t(shape=(2, 3, 6), special=0.05), g.t(shape=g.maybe((2, 3), (3, 2)))), {})
linalg("vander", grad=False)
OPS[-1]["gen"] = lambda g: ((g.t(rank=g.maybe(1, 2, 0), dt=g.maybe(F32, I64)),), {"N": g.pick((None, 0, 1, 3))})
linalg("householder_product")
OPS[-1]["gen"] = lambda g: ((g.t(shape=(3, 2)), g.t(shape=(g.maybe(2, 3),))), {})
linalg("cross")
OPS[-1]["gen"] = lambda g: (lambda x: ((x, g.like(x) if g.chance(0.2) else g.t(shape=x.shape)), {"dim": g.maybe(-1, 0)}))(
    g.t(shape=(2, g.maybe(3, 4))))
linalg("diagonal")
OPS[-1]["gen"] = lambda g: ((g.t(rank=g.maybe(g.pick((2, 3)), 1), dt=ANY),), {"offset": g.pick((0, 1, -1, 5))})
top("cholesky", lambda g: ((spd(g),), {"upper": g.chance(0.5)}))
top("cholesky_inverse", lambda g: ((tri(g, g.pick((1, 2, 3)), False) if g.chance(0.9) else g.t(shape=(2, 3)),), {"upper": False}))
top("cholesky_solve", lambda g: (lambda L: ((rhs(g, L), L), {"upper": False}))(tri(g, g.pick((1, 2, 3)), False)))
top("triangular_solve", lambda g: (lambda A: ((rhs(g, A), A), {"upper": True, "transpose": g.chance(0.3)}))(tri(g, g.pick((1, 2, 3)), True)))
top("svd", lambda g: ((square(g),), {}), grad=False)
OPS[-1].update(name="svd(S)", torch=lambda A: torch.svd(A).S, tnet=lambda A: tnet.svd(A).S)
top("qr", lambda g: ((g.t(shape=g.pick(((2, 2), (3, 2), (2, 3)))),), {}), grad=False)
OPS[-1].update(name="qr(|R|)", torch=lambda A: torch.qr(A).R.abs(), tnet=lambda A: tnet.qr(A).R.abs())
fop("sigmoid", u(dt=ANY))
fop("tanh", u(dt=ANY))
fop("conv_transpose3d", lambda g: (lambda cin: ((vol(g, c=g.maybe(cin, cin + 1)), g.t(shape=(cin, 2) + tuple(g.pick((1, 2)) for _ in range(3))),
                                                 g.pick((None, g.t(shape=(g.maybe(2, 3),))))),
                                                {"stride": g.maybe(g.pick((1, 2)), 0), "padding": g.pick((0, 1)),
                                                 "output_padding": g.maybe(0, 1, 3), "dilation": g.pick((1, 2))}))(g.pick((1, 2))))
fop("lp_pool3d", lambda g: ((vol(g, vals="pos"), g.pick((1, 2, 3.5)), g.maybe(g.pick((1, 2)), 0)), {"stride": g.pick((None, 1))}))
for name in ("adaptive_max_pool1d_with_indices", "adaptive_max_pool3d_with_indices", "max_pool3d_with_indices"):
    fop(name, lambda g, name=name: ((vol(g) if "3d" in name else img(g, rank=3), g.maybe(g.pick((1, 2)), 0)), {}), grad=False)
# torch has no derivative for it (its backward raises), where tnet's has channel_shuffle's: values only
fop("native_channel_shuffle", lambda g: ((img(g, c=g.maybe(4, 3)), g.maybe(2, 0)), {}), grad=False)
for name, rank in (("max_unpool1d", 3), ("max_unpool2d", 4), ("max_unpool3d", 5)):
    pool = getattr(tF, name.replace("unpool", "pool"))

    def unpool_gen(g, rank=rank, pool=pool):
        x = vol(g) if rank == 5 else img(g, rank=rank)
        if min(x.shape[2:]) < 2:  # a window of 2 needs 2 elements along each dim
            x = g.t(shape=x.shape[:2] + tuple(max(2, d) for d in x.shape[2:]), special=0)
        _, idx = pool(x.make().detach().float(), 2, return_indices=True)
        vals = g.t(shape=tuple(idx.shape))
        if g.chance(g.bad):
            idx = idx + 100
        return (vals, T(idx, lambda v: v, "c", False), 2), {"output_size": g.pick((None, x.shape[2:]))}
    fop(name, unpool_gen)
    OPS[-1]["name"] += "(pooled)"  # max_unpool2d's first entry keeps its name



# fractional max pools with their samples given (deterministic), and the layers the rounds above left out
def _samples(g, n, c, dims):
    return T(torch.tensor(g.r.random((n, c, dims))).float(), lambda v: v, "c", False)


fop("fractional_max_pool2d", lambda g: (lambda x: ((x, g.maybe(2, 0, 9)), {"output_size": g.maybe(g.pick((2, (1, 2))), (9, 9)),
                                                                          "_random_samples": _samples(g, max(x.shape[0], 1), x.shape[1], 2)}))(
    img(g, hw=(g.pick((4, 5)), g.pick((4, 6))))))
fop("fractional_max_pool3d", lambda g: (lambda x: ((x, g.maybe(2, 0)), {"output_ratio": g.pick((0.5, (0.5, 0.7, 0.6))),
                                                                       "_random_samples": _samples(g, max(x.shape[0], 1), x.shape[1], 3)}))(
    vol(g)))
for name in ("MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"):
    pool = getattr(tF, name.replace("Unpool", "_pool").lower().replace("max_pool", "max_pool"))

    def unpool_inputs(g, c, name=name, pool=pool):
        rank = {"1d": 3, "2d": 4, "3d": 5}[name[-2:]]
        x = g.t(shape=(g.pick((1, 2)), 2) + tuple(g.pick((2, 4, 5)) for _ in range(rank - 2)), special=0)
        _, idx = pool(x.make().detach(), 2, return_indices=True)
        return [g.t(shape=tuple(idx.shape)), T(idx + (100 if g.chance(g.bad) else 0), lambda v: v, "c", False)]
    mod(name, lambda g: ((2,), {"stride": g.pick((None, 2))}), unpool_inputs)
mod("TransformerEncoderLayer", lambda g: ((4, 2), {"dim_feedforward": 8, "dropout": 0.0, "batch_first": g.chance(0.5),
                                                   "bias": g.chance(0.5), "layer_norm_eps": g.pick((1e-5, 1e-3))}),
    lambda g, c: [g.t(shape=(g.pick((1, 3)), 2, 4), layout="c", special=0.1)])
OPS[-1]["name"] = "nn.TransformerEncoderLayer(seq-first)"


# ---- the fused paths of the thirty-second session: attention, the recurrent layers, pieces of one tensor ----
def fixed(a, grad=False):
    """A tensor input of exactly these values (a mask with a fully masked row, a padding mask)."""
    return T(torch.tensor(a), lambda b: b, "c", grad)


def attn_mask(g, L, S, lead=()):
    """A bool mask (True: the key takes part) that may hide every key of a row, or a float one with -inf."""
    if g.chance(0.5):
        a = g.r.random(lead + (L, S)) > 0.35
        if g.chance(0.5):
            a[..., g.r.integers(L), :] = False
        return fixed(a)
    a = g.r.standard_normal(lead + (L, S))
    a[g.r.random(a.shape) < 0.3] = -math.inf
    return fixed(a.astype(np.float32))


def sdpa_gen(g):
    """SDPA's fused kernel's cases: odd L and S, E != EV, grouped-query heads, 16-bit, strided q/k/v, causal
    (L != S), bool masks with fully masked rows, broadcast float masks; bad: dtypes, head sizes, heads."""
    B, H, L, S, E = g.pick((1, 2)), g.pick((1, 2, 4)), g.pick((1, 3, 5, 17)), g.pick((1, 4, 5, 17)), g.pick((2, 4, 8))
    Hk = g.pick([h for h in (1, 2, 4) if H % h == 0]) if g.chance(0.4) else H
    dt = g.pick((F32, F32, F16, BF16))
    lay = ("c", "c", "t", "s", "p")
    q = g.t(shape=(B, H, L, E), dt=dt, layout=g.pick(lay), special=0.15)
    k = g.t(shape=(B, g.maybe(Hk, 3), S, g.maybe(E, E + 1)), dt=g.maybe(dt, F16 if dt == F32 else F32), layout=g.pick(lay),
            special=0.1)
    v = g.t(shape=(B, Hk, S, g.pick((E, 3))), dt=dt, layout=g.pick(lay), special=0.1)
    kw = {"enable_gqa": True} if Hk != H and g.chance(1 - g.bad) else {}
    masking = g.pick(("none", "causal", "mask", "mask", "bcast"))
    if masking == "causal" or g.chance(g.bad / 3):
        kw["is_causal"] = True
    if masking in ("mask", "bcast"):
        kw["attn_mask"] = attn_mask(g, L, S, () if masking == "mask" else g.pick(((1, 1), (B, 1), (1, H))))
        if dt != F32 and kw["attn_mask"].dtype != BOOL and g.chance(1 - g.bad):
            kw["attn_mask"].base = kw["attn_mask"].base.to(dt)
    if g.chance(0.3):
        kw["scale"] = g.pick((0.3, 1.7))
    return (q, k, v), kw


op("F.sdpa(new)", tF.scaled_dot_product_attention, F.scaled_dot_product_attention, sdpa_gen)


def mha_inputs(g, c):
    """MultiheadAttention's forward, positional: query, key, value, key_padding_mask (a row may pad every key),
    need_weights=False (the fused kernel), attn_mask (bool, True: not allowed, or float; a causal one with is_causal)."""
    N, L, S, D = 2, g.pick((1, 3, 5)), g.pick((1, 4, 5)), 4
    first = c[1]["batch_first"]
    q = g.t(shape=(N, L, D) if first else (L, N, D), layout=g.pick(("c", "c", "t")), special=0.1)
    kv = g.t(shape=(N, S, D) if first else (S, N, D), special=0.1)
    k, v = (q, q) if g.chance(0.3) else (kv, g.t(shape=kv.shape, special=0.1))
    S = k.shape[1 if first else 0]
    kpm = None
    if g.chance(0.5):
        a = g.r.random((N, S)) < 0.3
        if g.chance(0.3):
            a[g.r.integers(N)] = True
        kpm = fixed(a if g.chance(0.7) else np.where(a, -math.inf, 0.0).astype(np.float32))
    mask, causal = None, False
    which = g.pick(("none", "bool", "float", "causal"))
    if which == "causal" and L == S:
        mask, causal = fixed(np.triu(np.ones((L, S), bool), 1)), True
    elif which in ("bool", "float"):
        m = attn_mask(g, L, S)
        mask = fixed(~m.base.numpy()) if m.dtype == BOOL else m
    return [q, k, v, kpm, g.maybe(False, True), mask, True, causal]


mod("MultiheadAttention", lambda g: ((4, g.pick((1, 2, 4))), {"batch_first": g.chance(0.5), "bias": g.chance(0.8),
                                                             "add_bias_kv": g.chance(0.15)}), mha_inputs)
OPS[-1]["name"] = "nn.MultiheadAttention(new)"
mod("TransformerDecoderLayer", lambda g: ((4, 2), {"dim_feedforward": 8, "dropout": 0.0, "batch_first": True,
                                                   "norm_first": g.chance(0.5)}),
    lambda g, c: (lambda L: [g.t(shape=(2, L, 4), layout="c", special=0.05), g.t(shape=(2, g.pick((1, 5)), 4), special=0.05),
                             fixed(np.triu(np.full((L, L), -math.inf, np.float32), 1)), None, None, None, True])(g.pick((1, 3, 5))))
OPS[-1]["name"] = "nn.TransformerDecoderLayer(causal)"


def rnn_inputs(g, c):
    """A recurrent layer's input (batched or not, odd lengths) and, at times, its initial state."""
    layers, dirs, H = c[1].get("num_layers", 1), 2 if c[1].get("bidirectional") else 1, c[0][1]
    T_, N = g.pick((1, 2, 5)), g.pick((1, 3))
    batched = g.chance(0.8)
    shape = ((N, T_) if c[1].get("batch_first") else (T_, N)) if batched else (T_,)
    x = g.t(shape=shape + (g.maybe(c[0][0], c[0][0] + 1),), layout=g.pick(("c", "c", "t", "s")), special=0.1)
    if g.chance(0.5):
        return [x]
    hs = (layers * dirs,) + ((N,) if batched else ())
    h = g.t(shape=hs + (c[1].get("proj_size") or H,), special=0.05)
    if c[2] == "LSTM":
        return [x, (h, g.t(shape=hs + (H,), special=0.05))]
    return [x, h]


for name in ("LSTM", "GRU"):
    mod(name, lambda g, name=name: ((3, g.pick((2, 4))), dict({"num_layers": g.pick((1, 2)), "bidirectional": g.chance(0.4),
                                                               "batch_first": g.chance(0.5), "bias": g.chance(0.8)},
                                                              **({"proj_size": g.pick((0, 0, 1))} if name == "LSTM" else {})), name),
        rnn_inputs)
    OPS[-1]["name"] = f"nn.{name}(new)"
for name in ("LSTMCell", "GRUCell"):
    mod(name, lambda g: ((3, g.pick((2, 4))), {"bias": g.chance(0.7)}),
        lambda g, c, name=name: (lambda x, N: [x] if g.chance(0.3) else [x, (lambda h: (h, g.t(shape=h.shape)) if name == "LSTMCell" else h)(
            g.t(shape=N + (c[0][1],), special=0.05))])(*(lambda N: (g.t(shape=N + (g.maybe(3, 4),), special=0.1), N))(
                g.pick(((2,), (1,), ())))))
    OPS[-1]["name"] = f"nn.{name}(new)"


def pieces(x, specs):
    """Pieces of x (narrow, select, unbind, split, chunk, basic indexing; overlapping, repeated), each scaled by
    its own factor, flattened and joined: x's gradient sums every piece's part. specs: (kind, args, factor);
    through: "leaf" (x itself) or "nonleaf" (x * 1)."""
    lib = tnet if isinstance(x, tnet.Tensor) else torch
    specs, through = specs
    if through == "nonleaf":
        x = x * 1
    outs = []
    for kind, a, c in specs:
        if kind == "unbind_all":
            p = lib.stack([q * (i + 1) for i, q in enumerate(x.unbind(a))])
        else:
            p = {"narrow": lambda: x.narrow(*a), "select": lambda: x.select(*a), "unbind": lambda: x.unbind(a[0])[a[1]],
                 "split": lambda: x.split(a[1], a[0])[a[2]], "chunk": lambda: x.chunk(a[1], a[0])[a[2]],
                 "getitem": lambda: x[a]}[kind]()
        outs.append((p * c).reshape(-1))
    return lib.cat(outs)


def pieces_gen(g):
    x = g.t(shape=tuple(g.pick((1, 2, 3, 5)) for _ in range(g.pick((1, 2, 3)))), dt=g.pick((F32, F32, F16, BF16)),
            layout=g.pick(("c", "c", "t", "s", "p", "o")), special=0.1)
    specs = []
    for _ in range(g.pick((2, 3, 4, 6))):
        d = int(g.r.integers(-x.ndim, x.ndim))
        n = x.shape[d]
        i = g.maybe(int(g.r.integers(-n, n)), n, -n - 1)
        start = int(g.r.integers(0, n))
        kind = g.pick(("narrow", "select", "unbind", "split", "chunk", "getitem", "getitem", "unbind_all"))
        a = {"narrow": (d, start, g.maybe(int(g.r.integers(0, n - start + 1)), n + 1)), "select": (d, i), "unbind": (d, i),
             "split": (d, g.pick((1, 2, [1, n - 1] if n > 1 else [1])), 0), "chunk": (d, g.pick((1, 2, 3)), 0), "unbind_all": d,
             "getitem": g.pick(((slice(start, None),), (i,), (Ellipsis, slice(None, None, 2)), (None, slice(0, 1)),
                                (slice(None), i) if x.ndim > 1 else (i,)))}[kind]
        if kind in ("split", "chunk"):
            a = (a[0], a[1], 0 if g.chance(0.5) else -1)
        specs.append((kind, a, g.pick((1.0, 2.0, -3.0, 0.5))))
    return (x, (specs, g.pick(("leaf", "nonleaf")))), {}


oper("pieces(new)", pieces, pieces_gen)


# ---- what training scripts call that the rounds above left out (thirty-third session): in-place methods,
# the random and conversion factories, hooks, the top-level aliases of F, clipping, containers and lazy layers ----
def gen_of(name):
    """The generator of the entry NAME: an in-place method draws its out-of-place twin's arguments."""
    return next(e["gen"] for e in OPS if e["name"] == name)


# the methods whose other must be a tensor in torch (a number: its parser's TypeError); tnet's take a number too
TENSOR_OTHER = ("atan2_", "hypot_", "logical_and_", "logical_or_", "logical_xor_", "ldexp_", "nextafter_", "heaviside_", "gcd_",
                "lcm_")
for name in ("log_", "floor_", "sign_", "sgn_", "erf_", "erfc_", "erfinv_", "sinh_", "cosh_", "tan_", "atan_", "asin_", "acos_",
             "digamma_", "lgamma_", "log2_", "log10_", "exp2_", "expm1_", "deg2rad_", "rad2deg_", "fix_", "i0_", "logit_", "sinc_",
             "cos_", "logical_not_", "bitwise_not_", "negative_", "absolute_"):
    inplace(name, u(dt=ANY))
for name in ("eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "less_equal_", "not_equal_", "fmod_", "remainder_", "atan2_",
             "hypot_", "copysign_", "floor_divide_", "true_divide_", "logical_and_", "logical_or_", "logical_xor_", "multiply_",
             "divide_", "subtract_", "ldexp_", "xlogy_", "nextafter_", "clamp_max_", "heaviside_", "float_power_"):
    inplace(name, b(scalar=0 if name in TENSOR_OTHER else 0.3))
for name in ("gcd_", "lcm_", "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_left_shift_", "bitwise_right_shift_"):
    inplace(name, b(dt=(I64, I64, BOOL, F32), scalar=0 if name in TENSOR_OTHER else 0.3))
for e in OPS:  # torch's logical_and_ & co record nothing: x's past gets g unchanged (its autograd's gap), tnet's 0
    if e["name"] in (".logical_not_", ".logical_and_", ".logical_or_", ".logical_xor_"):
        e["grad"] = False
inplace("clip_", gen_of("clip"))
inplace("polygamma_", lambda g: ((g.t(), g.maybe(g.pick((0, 1, 2)), -1)), {}))
for name in ("scatter_add", "index_fill", "index_copy", "masked_scatter", "scatter_reduce", "index_reduce", "tril", "triu", "cumprod",
             "addmm", "baddbmm", "addbmm", "addmv", "addr", "renorm"):
    inplace(name + "_", gen_of(name))
inplace("index_put_", gen_of(".index_put"))
inplace("put_", gen_of(".put"))
inplace("transpose_", lambda g: (lambda x: ((x, g.dim(x), g.dim(x)), {}))(g.t(dt=ANY)))
inplace("swapaxes_", lambda g: (lambda x: ((x, g.dim(x), g.dim(x)), {}))(g.t(dt=ANY)))
inplace("unsqueeze_", lambda g: (lambda x: ((x, g.maybe(int(g.r.integers(-x.ndim - 1, x.ndim + 1)), x.ndim + 1)), {}))(g.t(dt=ANY)))
# the random fills: only the shape and dtype compare, but every argument check does
inplace("bernoulli_", lambda g: (lambda x: ((x, g.maybe(g.pick((0.5, 0.0, 1.0, g.t(shape=x.shape, vals="prob", grad=False))), 1.5, -0.1)),
                                            {}))(g.t(dt=ANY)))
inplace("random_", lambda g: ((g.t(dt=ANY),) + g.pick(((), (5,), (-3, 4), (g.maybe(2, 5), 3))), {}))
inplace("exponential_", lambda g: ((g.t(dt=ANY),), {"lambd": g.maybe(g.pick((1.0, 0.5)), 0.0, -1.0)}))
inplace("cauchy_", lambda g: ((g.t(dt=ANY),), {"median": 0.0, "sigma": g.maybe(1.0, 0.0, -1.0)}))
inplace("log_normal_", lambda g: ((g.t(dt=ANY),), {"mean": 1.0, "std": g.maybe(2.0, 0.0, -1.0)}))
inplace("geometric_", lambda g: ((g.t(dt=ANY), g.maybe(g.pick((0.5, 1.0)), 0.0, 1.5)), {}))
for e in OPS[-6:]:
    e["cmp"] = "shape"
inplace("detach_", u(dt=ANY))
meth("detach", u(dt=ANY))
meth("requires_grad_", lambda g: ((g.t(dt=ANY, grad=False),) + ((g.chance(0.7),) if g.chance(0.7) else ()), {}))
meth("cpu", u(dt=ANY))
meth("ndimension", u(dt=ANY), grad=False)
meth("resize_", lambda g: ((g.t(dt=ANY, grad=False), *g.maybe(g.pick(((2, 3), (0,), (1,))), (-1, 2))), {}), grad=False, cmp="shape")
op(".numpy", lambda x, **k: torch.from_numpy(x.numpy(**k)), lambda x, **k: torch.from_numpy(x.numpy(**k)),
   lambda g: ((g.t(dt=ANY),), {"force": True} if g.chance(0.3) else {}), grad=False)


def hooked(x, where, scale):
    """y = x * 1 with a gradient hook on y or on x (None: one that only looks), then y * y: x's gradient shows it."""
    y = x * 1
    (y if where == "y" else x).register_hook(lambda gr: None if scale is None else gr * scale)
    return y * y


def retained(x, twice):
    """retain_grad on a non-leaf y = 2 x: y's and x's gradients of sum(y * y), computed inside."""
    y = x * 2
    y.retain_grad()
    if twice:
        y.retain_grad()
    (y * y).sum().backward()
    return y.grad, x.grad


oper("register_hook", hooked, lambda g: ((g.t(dt=ANY), g.pick(("x", "y")), g.pick((None, 3.0, -0.5))), {}))
oper("retain_grad", retained, lambda g: ((g.t(dt=g.maybe(F32, F16, I64), grad=g.maybe(True, False)), g.chance(0.3)), {}), grad=False)


def size_arg(g):
    """A factory's size, as one tuple or as separate numbers; bad: negative or not an integer."""
    size = g.maybe(g.pick(((2, 3), (0,), (), (4,), (1, 2, 3))), (-1, 2), (2.5,))
    return (size,) if g.chance(0.5) or not size else size


for name in ("rand", "randn", "empty"):
    top(name, lambda g, name=name: (size_arg(g), {"dtype": g.pick((None, F32, F16, BF16, I64 if name == "empty" else F32))}),
        grad=False, cmp="shape")
top("randint", lambda g: (g.pick(((g.maybe(5, 0, -1),), (g.maybe(-2, 4), 3))) + ((g.maybe((2, 3), (-1,)),)), {"dtype": g.pick((None, I64, F32))}),
    grad=False, cmp="shape")
top("randperm", lambda g: ((g.maybe(g.pick((0, 1, 5)), -1),), {"dtype": g.pick((None, I64, F32))}), grad=False, cmp="shape")
top("empty_strided", lambda g: ((g.maybe((2, 3), (-1, 3)), g.pick(((3, 1), (1, 2)))), {}), grad=False, cmp="shape")


def normal_gen(g):
    """torch.normal's forms: (mean tensor, std tensor), (mean tensor, std float), (mean, std, size)."""
    form = g.pick(("tensors", "tensor", "size"))
    if form == "size":
        return (0.0, g.maybe(1.0, -1.0), g.maybe((2, 3), (-1,))), {}
    x = g.t()
    if form == "tensors":
        return (x, g.t(shape=x.shape if g.chance(0.8) else (7,), vals=g.maybe("pos", "normal"), grad=False)), {}
    return (x, g.maybe(1.0, -1.0)), {}


top("normal", normal_gen, grad=False, cmp="shape")
top("bernoulli", lambda g: ((g.t(vals=g.maybe("prob", "normal")),), {}), grad=False, cmp="shape")
top("multinomial", lambda g: (lambda p: ((p, g.maybe(g.pick((1, 2)), 0, 9)), {"replacement": g.chance(0.4)}))(
    g.t(shape=g.pick(((4,), (2, 4), (3,))), vals=g.maybe("prob", "normal"), special=0.05)), grad=False, cmp="shape")
top("poisson", lambda g: ((g.t(vals=g.maybe("pos", "normal"), special=0.05),), {}), grad=False, cmp="shape")
for name in ("as_tensor", "asarray"):
    top(name, lambda g: ((g.pick((g.t(dt=ANY), [1, 2.5], [[1, 2], [3, 4]], 3, [True, False], [[1], [2, 3]])),),
                         {"dtype": g.pick((None, F32, I64, F16))}), grad=False)
op("from_numpy", torch.from_numpy, tnet.from_numpy,
   lambda g: ((g.pick((np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int64), np.array([True, False]),
                       np.zeros((0, 2), np.float16), np.arange(4, dtype=np.uint8), np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2],
                       g.maybe(np.ones(2, np.int64), [1, 2]))),), {}), grad=False)  # (int32 becomes int64: README)
top("fill", lambda g: ((g.t(dt=ANY), g.pick((g.scalar(), g.t(shape=(), dt=ANY)))), {}))
top("broadcast_shapes", lambda g: (g.pick((((2, 1), (3,)), ((2,), (3,)), ((), (1, 4)), ((0, 1), (1, 5)), ((2, -1), (2,)))), {}), grad=False)
top("detach", u(dt=ANY))
for name in ("dropout", "alpha_dropout", "feature_alpha_dropout"):
    top(name, lambda g: ((img(g, rank=g.pick((2, 3, 4))), g.maybe(0.5, 1.5, -0.1), False), {}))
top("layer_norm", lambda g: (lambda x: ((x, x.shape[-1:] if g.chance(0.8) else (9,)) + g.pick(((), (g.t(shape=x.shape[-1:]), g.t(shape=x.shape[-1:])))),
                                        {"eps": g.pick((1e-5, 0.0))}))(g.t(rank=g.pick((1, 2, 3)), special=0.2)))
top("batch_norm", lambda g: (lambda x, c, tr: ((x, g.t(shape=(c,)), g.t(shape=(c,)), g.t(shape=(g.maybe(c, c + 1),), grad=False, special=0),
                                                g.t(shape=(c,), vals="pos", grad=False, special=0), tr, 0.1, 1e-5, False), {}))(
    *(lambda x: (x, x.shape[1] if x.ndim > 1 else 1, g.chance(0.5)))(img(g, rank=g.pick((2, 3, 4))))))
top("group_norm", lambda g: (lambda x: ((x, g.maybe(2, 3), g.t(shape=(x.shape[1],)), g.t(shape=(x.shape[1],)), 1e-5, False), {}))(
    img(g, c=4)))
top("instance_norm", lambda g: (lambda x: ((x, g.t(shape=(3,)), g.t(shape=(3,)), None, None, True, 0.1, 1e-5, False), {}))(
    img(g, c=g.maybe(3, 2))))
for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
    top(name, gen_of("F." + name))
top_inplace("clamp_max_", lambda g: ((g.t(dt=ANY), g.pick((0.5, -1, g.t(shape=(), dt=F32)))), {}))
top_inplace("clip_", gen_of("clip"))


def lu_gen(g):
    """An LU factorisation (LU, pivots) of a random square matrix (batched at times); bad: pivots past n."""
    n = g.pick((1, 2, 3))
    A = torch.tensor(g.r.standard_normal(g.pick(((), (2,))) + (n, n))).float()
    LU, piv = torch.linalg.lu_factor(A)
    piv = piv + (5 if g.chance(g.bad) else 0)
    return T(LU, lambda v: v, "c", False), T(piv.to(g.maybe(torch.int32, I64)), lambda v: v, "c", False)  # no gradient in tnet


top("lu_unpack", lambda g: (lu_gen(g), {}))
top("lu_solve", lambda g: (lambda LU, piv: ((g.t(shape=LU.shape[:-1] + (g.maybe(2, 1),), grad=False) if g.chance(0.8) else
                                             g.t(shape=(5, 1), grad=False), LU, piv),
                                            {}))(*lu_gen(g)))
fop("gumbel_softmax", lambda g: (lambda x: ((x,), {"tau": g.maybe(g.pick((1.0, 0.5)), 0.0), "hard": g.chance(0.5), "dim": g.dim(x)}))(
    g.t(rank=g.pick((1, 2, 3)), special=0.05)), cmp="shape")
fop("pdist", gen_of("pdist"))
fop("upsample", lambda g: ((img(g),), g.pick(({"scale_factor": g.maybe(2, 0)}, {"size": g.maybe((3, 5), (0, 2))},
                                              {"scale_factor": 2, "mode": g.pick(("bilinear", "bicubic", "nearest-exact")),
                                               "align_corners": g.pick((None, True, False))}))))
fop("feature_alpha_dropout", lambda g: ((img(g),), {"p": g.maybe(0.5, 1.5), "training": False}))


def clip_grads(library, fn):
    """nn.utils.clip_grad_norm_/value_ on parameters whose grads are the inputs (None for a missing one): the
    total norm (norm_) and the clipped grads."""
    def run(*grads, **kw):
        params = []
        for gr in grads:
            p = library.zeros(gr.shape if gr is not None else (2,), dtype=gr.dtype if gr is not None and gr.is_floating_point()
                              else torch.float32, requires_grad=True)  # (tnet takes a grad of another dtype, torch not)
            if gr is not None:
                p.grad = gr
            params.append(p)
        total = getattr(library.nn.utils, fn)(params, **kw)
        return (total, *[p.grad for p in params if p.grad is not None])
    return run


def clip_gen(norm):
    def gen(g):
        grads = [g.t(rank=g.pick((0, 1, 2)), dt=g.maybe(F32, F16, I64), special=0.2, grad=False) if g.chance(0.9) else None
                 for _ in range(g.pick((1, 2, 3)))]
        if norm:
            return tuple(grads), {"max_norm": g.maybe(g.pick((1.0, 0.1, 100.0)), -1.0, 0.0),
                                  "norm_type": g.pick((2.0, 1.0, math.inf, 0.5, "inf")), "error_if_nonfinite": g.chance(0.3)}
        return tuple(grads), {"clip_value": g.maybe(g.pick((0.5, 1.0)), -1.0, 0.0)}
    return gen


op("nn.utils.clip_grad_norm_", clip_grads(torch, "clip_grad_norm_"), clip_grads(tnet, "clip_grad_norm_"), clip_gen(True), grad=False)
op("nn.utils.clip_grad_value_", clip_grads(torch, "clip_grad_value_"), clip_grads(tnet, "clip_grad_value_"), clip_gen(False), grad=False)
op("nn.utils.parameters_to_vector", lambda *xs: torch.nn.utils.parameters_to_vector(xs),
   lambda *xs: tnet.nn.utils.parameters_to_vector(xs),
   lambda g: (tuple(g.t(rank=g.pick((0, 1, 2)), dt=g.maybe(F32, F16)) for _ in range(g.pick((1, 2, 3)))), {}))


def padded(library):
    return lambda *xs, **k: library.nn.utils.rnn.pad_sequence(list(xs), **k)


op("nn.utils.rnn.pad_sequence", padded(torch), padded(tnet),
   lambda g: (lambda tail: (tuple(g.t(shape=(g.pick((1, 2, 4, 0)),) + g.maybe(tail, tail + (1,)), dt=g.pick((F32, F32, I64)))
                                  for _ in range(g.pick((1, 2, 3)))),
                            {"batch_first": g.chance(0.5), "padding_value": g.pick((0.0, -1.0, math.nan))}))(g.pick(((), (3,)))))


def seq(library, kind, c):
    """A Sequential of torch's or tnet's layers: an MLP or a small CNN."""
    nn = library.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.0), nn.Linear(4, 2), nn.LogSoftmax(dim=-1))
    return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(3 * c, 2))


mod("Sequential", lambda g: (("mlp", 1), {}), lambda g, c: [g.t(shape=(g.pick((1, 2, 0)), g.maybe(3, 4)), special=0.1)],
    classes=(lambda *a: seq(torch, *a), lambda *a: seq(tnet, *a)))
OPS[-1]["name"] = "nn.Sequential(MLP)"
mod("Sequential", lambda g: (lambda hw: (("cnn", (hw[0] // 2) * (hw[1] // 2)), {"hw": hw}))(g.pick(((4, 4), (4, 6), (5, 4)))),
    lambda g, c: [img(g, c=g.maybe(2, 3), hw=c[1]["hw"] if g.chance(0.9) else (2, 2), special=0.1)],
    classes=(lambda *a, hw: seq(torch, *a), lambda *a, hw: seq(tnet, *a)))
OPS[-1]["name"] = "nn.Sequential(CNN)"


def stack(library, kind, layers, norm, batch_first, norm_first):
    """nn.TransformerEncoder / Decoder of small layers (d_model 4, 2 heads, no dropout), with a final norm at times;
    or a whole nn.Transformer of one layer each."""
    nn = library.nn
    kw = {"dim_feedforward": 8, "dropout": 0.0, "batch_first": batch_first, "norm_first": norm_first}
    if kind == "Transformer":
        return nn.Transformer(4, 2, layers, layers, **kw)
    layer = getattr(nn, kind + "Layer")(4, 2, **kw)
    extra = {"enable_nested_tensor": False} if kind == "TransformerEncoder" else {}
    return getattr(nn, kind)(layer, layers, norm=nn.LayerNorm(4) if norm else None, **extra)


def stack_inputs(g, c):
    """src (and tgt, or memory) of 1-4 positions, a causal float or bool mask at times, a key padding mask at times."""
    kind, first = c[0][0], c[0][3]
    N, L, S = g.pick((1, 2)), g.pick((1, 3, 4)), g.pick((1, 2, 5))

    def seq_t(n):
        return g.t(shape=(N, n, g.maybe(4, 5)) if first else (n, N, 4), layout=g.pick(("c", "c", "t")), special=0.05)
    causal = fixed(np.triu(np.full((L, L), -math.inf, np.float32), 1)) if g.chance(0.5) else None
    kpm = fixed(g.r.random((N, S if kind != "TransformerEncoder" else L)) < 0.3) if g.chance(0.3) else None
    if kind == "TransformerEncoder":
        return [seq_t(L), causal, kpm]
    if kind == "TransformerDecoder":
        return [seq_t(L), seq_t(S), causal, None, None, kpm]
    return [seq_t(S), seq_t(L), None, causal, None, kpm]


for kind in ("TransformerEncoder", "TransformerDecoder", "Transformer"):
    mod(kind, lambda g, kind=kind: ((kind, g.pick((1, 2)), g.chance(0.5), g.chance(0.5), g.chance(0.5)), {}), stack_inputs,
        classes=(lambda *a: stack(torch, *a), lambda *a: stack(tnet, *a)))


def lazy(name, ctor, inputs):
    """nn.Lazy*: each side's first forward makes its parameters; tnet's then takes torch's values and runs again."""
    state = {}

    def run(library):
        def call(ctor_args, *xs):
            m = getattr(library.nn, name)(*ctor_args)
            y = m(*xs)
            if library is torch:
                state["torch"] = {k: v.detach().clone() for k, v in list(m.named_parameters()) + list(m.named_buffers())}
                return y
            for k, v in list(m.named_parameters()) + list(m.named_buffers()):
                v.memory.copy_(state["torch"][k])
            return m(*xs)
        return call
    op("nn." + name, run(torch), run(tnet), lambda g: (lambda c: ((c, *inputs(g, c)), {}))(ctor(g)))


lazy("LazyLinear", lambda g: (g.maybe(3, 0),), lambda g, c: [g.t(shape=(g.pick((1, 2)), g.pick((1, 4))), special=0.1)])
lazy("LazyConv2d", lambda g: (3, g.maybe(3, 0)), lambda g, c: [img(g, rank=g.maybe(4, 3), hw=(4, 5))])
lazy("LazyConv1d", lambda g: (2, 3), lambda g, c: [img(g, rank=g.maybe(3, 2), hw=(5,))])
lazy("LazyBatchNorm2d", lambda g: (), lambda g, c: [img(g, rank=g.maybe(4, 3))])
mod("FractionalMaxPool2d", lambda g: ((g.maybe(2, 0),), {"output_size": g.maybe(g.pick((2, (1, 2))), (9, 9)),
                                                        "_random_samples": _samples(g, 2, 2, 2)}),
    lambda g, c: [g.t(shape=(2, 2, g.pick((4, 5)), 5), layout=g.pick(("c", "cl", "t")))])
mod("AdaptiveLogSoftmaxWithLoss", lambda g: ((4, 6, g.maybe([2, 4], [4, 2], [2, 6])), {"div_value": g.pick((4.0, 2.0)),
                                                                                       "head_bias": g.chance(0.5)}),
    lambda g, c: (lambda N: [g.t(shape=N + (g.maybe(4, 3),), special=0.1), g.t(shape=N, dt=I64, vals=(0, g.maybe(6, 7)))])(
        g.pick(((3,), (1,), ()))))


def normed(library, kind, dim):
    """A Linear (or Conv1d) under weight_norm (the old hook or the parametrization) or spectral_norm; spectral_norm's
    u and v are buffers that tnet's copies, so that its power iteration is torch's."""
    nn = library.nn
    layer = nn.Linear(3, 2) if dim is None or dim < 2 else nn.Conv1d(2, 3, 2)
    if kind == "weight_norm":
        return nn.utils.weight_norm(layer, dim=dim if dim is not None else 0)
    if kind == "parametrizations.weight_norm":
        return nn.utils.parametrizations.weight_norm(layer, dim=dim if dim is not None else 0)
    return nn.utils.spectral_norm(layer, n_power_iterations=2)


for kind in ("weight_norm", "parametrizations.weight_norm", "spectral_norm"):
    mod(kind, lambda g, kind=kind: ((kind, g.pick((None, 0, 1, 2, -1)) if kind != "spectral_norm" else None), {}),
        lambda g, c: [g.t(shape=(2, 3), special=0.1) if c[0][1] is None or c[0][1] < 2 else img(g, c=2, rank=3, hw=(4,), special=0.1)],
        classes=(lambda *a: normed(torch, *a), lambda *a: normed(tnet, *a)))
    OPS[-1]["name"] = "nn.utils." + kind


def packed_lstm(library, ctor, x, lengths, enforce_sorted, h0):
    """pack_padded_sequence -> LSTM -> pad_packed_sequence, a language model's batch of padded sentences."""
    rnn = library.nn.utils.rnn
    m = ctor(library)
    packed = rnn.pack_padded_sequence(x, lengths, batch_first=m.batch_first, enforce_sorted=enforce_sorted)
    out, (h, c) = m(packed, h0)
    y, lens = rnn.pad_packed_sequence(out, batch_first=m.batch_first)
    return y, h, c, lens


def packed_gen(g):
    layers, bidir, first = g.pick((1, 2)), g.chance(0.5), g.chance(0.5)
    B, T_ = g.pick((1, 3)), g.pick((1, 4))
    lengths = sorted((int(g.r.integers(1, T_ + 1)) for _ in range(B)), reverse=g.chance(0.7))
    if g.chance(g.bad):
        lengths[0] = g.pick((0, T_ + 1))
    x = g.t(shape=(B, T_, 3) if first else (T_, B, 3), special=0.05)
    h0 = None if g.chance(0.5) else tuple(g.t(shape=(layers * (2 if bidir else 1), B, 2), dt=g.maybe(F32, F16), special=0)
                                          for _ in range(2))
    return (("LSTM", (3, 2), {"num_layers": layers, "bidirectional": bidir, "batch_first": first}), x,
            fixed(np.array(lengths, np.int64)) if g.chance(0.5) else lengths, g.maybe(False, True), h0), {}


def lstm_ctor(spec):
    """(library -> the LSTM of spec), tnet's taking torch's weights (the case's last torch build)."""
    built = {}

    def make(library):
        m = getattr(library.nn, spec[0])(*spec[1], **spec[2])
        if library is torch:
            built["w"] = {k: v.detach().clone() for k, v in m.named_parameters()}
        else:
            for k, v in m.named_parameters():
                v.memory.copy_(built["w"][k])
        return m
    return make


def packed_side(library, made={}):  # noqa: B006: torch's side makes the case's LSTM builder, tnet's takes it
    def run(spec, *a):
        if library is torch:
            made["ctor"] = lstm_ctor(spec)
        return packed_lstm(library, made["ctor"], *a)
    return run


op("nn.utils.rnn.pack_padded_sequence(LSTM)", packed_side(torch), packed_side(tnet), packed_gen)



def lce_gen(g):
    """linear_cross_entropy: hidden states [N, D] (or [D]), the classifier's weight [C, D], int targets (an ignored
    one at times); bad: another D or C, targets past C."""
    N, D, C = g.pick(((3,), (1,), ())), g.pick((2, 5)), g.pick((3, 4))
    x = g.t(shape=N + (D,), special=0.1)
    w = g.t(shape=(C, g.maybe(D, D + 1)), special=0.05)
    t = g.t(shape=N, dt=I64, vals=(g.maybe(0, -1), g.maybe(C, C + 1)), grad=False)
    kw = {"reduction": g.pick(("mean", "sum", "none")), "label_smoothing": g.pick((0.0, 0.1)),
          "ignore_index": g.pick((None, 0, -100))}
    if g.chance(0.4):
        kw["linear_bias"] = g.t(shape=(g.maybe(C, C + 1),))
    if g.chance(0.3):
        kw["weight"] = g.t(shape=(C,), vals="pos", grad=False, special=0)
    return (x, w, t), kw


fop("linear_cross_entropy", lce_gen)


def ctc_gen(g):
    """F.ctc_loss as nn.CTCLoss's entry draws it, the lengths both tuples or both tensors (torch's parser takes no mix)."""
    lengths = ((5, g.maybe(4, 6)), (g.pick((3, 2, 0)), 2))
    if g.chance(0.5):
        lengths = tuple(fixed(np.array(n)) for n in lengths)
    log_probs = torch.randn(5, 2, 4, generator=torch.Generator().manual_seed(int(g.r.integers(1 << 30)))).log_softmax(2)
    return ((T(log_probs, lambda v: v, "c", True), g.t(shape=(2, 3), dt=I64, vals=(1, g.maybe(4, 5)), grad=False), *lengths),
            {"blank": g.maybe(0, 5), "reduction": g.pick(("mean", "sum", "none")), "zero_infinity": g.chance(0.5)})


fop("ctc_loss", ctc_gen, grad=False)  # its gradient with respect to log_probs differs from torch's by design, as nn.CTCLoss's


# ---- running and comparing -------------------------------------------------------------------

def materialize(v, tnet_side, leaves):
    if isinstance(v, T):
        m = v.make()
        if tnet_side:
            m = tnet.Tensor(m.detach(), requires_grad=v.grad)
        leaves.append(m)
        return m
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        return type(v)(materialize(e, tnet_side, leaves) for e in v)
    if isinstance(v, dict):
        return {k: materialize(e, tnet_side, leaves) for k, e in v.items()}
    return v


def flat(r):
    """r's values as a flat list: tensors as torch tensors, numbers and the rest as they are."""
    if isinstance(r, tnet.Tensor):
        return [r.memory]
    if isinstance(r, torch.Tensor):
        return [r]
    if isinstance(r, (tuple, list)):
        return [v for e in r for v in flat(e)]
    return [r]


def differ(got, want, loosest=0.0):
    """Why got (tnet's, flattened) differs from want (torch's), or None where they agree; loosest: a tolerance that
    none is held to less (a gradient that came through a 16-bit result is held to that dtype's)."""
    got, want = flat(got), flat(want)
    if len(got) != len(want):
        return f"{len(got)} results, torch {len(want)}"
    for i, (a, b) in enumerate(zip(got, want)):
        if isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                return f"result {i}: {type(a).__name__}, torch a tensor"
            if a.dtype != b.dtype:
                return f"result {i}: dtype {a.dtype}, torch {b.dtype}"
            if tuple(a.shape) != tuple(b.shape):
                return f"result {i}: shape {tuple(a.shape)}, torch {tuple(b.shape)}"
            a, b = a.detach().cpu(), b.detach().cpu()
            if b.dtype.is_floating_point:
                a64, b64 = a.double().numpy(), b.double().numpy()
                tol = max(TOL.get(b.dtype, 1e-4), loosest)
                scale = max(1.0, float(np.nanmax(np.abs(b64[np.isfinite(b64)]), initial=0.0)))
                ok = np.isclose(a64, b64, rtol=tol, atol=tol * scale, equal_nan=True)
                if not ok.all():
                    j = tuple(int(k) for k in np.argwhere(~ok)[0])
                    return f"result {i}: at {j} {a64[j]!r}, torch {b64[j]!r} ({int((~ok).sum())} of {ok.size} differ)"
            elif not torch.equal(a, b):
                return f"result {i}: values differ: {a.flatten()[:6].tolist()} vs torch {b.flatten()[:6].tolist()}"
        elif isinstance(a, torch.Tensor):
            return f"result {i}: a tensor, torch {type(b).__name__}"
        elif isinstance(b, float) and isinstance(a, (int, float)):
            if not (a == b or math.isnan(a) and math.isnan(b) or math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5)) \
                    or type(a) is not type(b):
                return f"result {i}: {a!r}, torch {b!r}"
        elif type(a) is not type(b) and not (isinstance(b, torch.Size) and isinstance(a, tuple)) or a != b:
            if not (isinstance(a, tuple) and tuple(a) == tuple(b)):
                return f"result {i}: {a!r}, torch {b!r}"
    return None


def run_side(entry, args, kwargs, tnet_side, timeout, gseed):
    """(result, gradients of the inputs, error): runs the op, and its backward where it has one."""
    leaves = []
    fn = entry["tnet" if tnet_side else "torch"]
    signal.alarm(timeout)
    try:
        a, k = materialize(args, tnet_side, leaves), materialize(kwargs, tnet_side, leaves)
        out = fn(*a, **k)
        grads = None
        first = flat(out)[0] if flat(out) else None
        if entry["grad"] and isinstance(first, torch.Tensor) and first.dtype.is_floating_point \
                and any(getattr(x, "requires_grad", False) for x in leaves):
            o = out[0] if isinstance(out, (tuple, list)) else out
            if getattr(o, "requires_grad", False):
                seed = gseed(tuple(first.shape), first.dtype)
                o.backward(tnet.Tensor(seed) if tnet_side else seed)
                grads = [None if not getattr(x, "requires_grad", False) else x.grad for x in leaves]
        return out, grads, None
    except Timeout as e:
        return None, None, e
    except Exception as e:  # noqa: BLE001: every failure is classified
        return None, None, e
    finally:
        signal.alarm(0)


def in_triton(e):
    return any("/triton/" in f.filename and "/tnet/" not in f.filename for f in traceback.extract_tb(e.__traceback__))


def classify(entry, args, kwargs, timeout, seed):
    rng = np.random.default_rng(seed)
    cache = {}

    def gseed(shape, dtype):
        if shape not in cache:
            cache[shape] = torch.tensor(rng.standard_normal(shape)).to(dtype)
        return cache[shape].clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, want_g, want_e = run_side(entry, args, kwargs, False, timeout, gseed)
        got, got_g, got_e = run_side(entry, args, kwargs, True, timeout, gseed)
    detail = {"torch_error": _err(want_e), "tnet_error": _err(got_e)}
    if isinstance(want_e, Harness) or isinstance(got_e, Harness):
        return "harness", detail
    if isinstance(got_e, Timeout):
        return "timeout", detail
    if got_e is not None and type(got_e) is type(want_e):  # torch's own kind, even an AssertionError
        return "match", detail
    if got_e is not None and (isinstance(got_e, INTERNAL) or in_triton(got_e) or "\n" in str(got_e).strip()
                              or not isinstance(got_e, (TypeError, ValueError, IndexError, RuntimeError))):
        detail["where"] = "".join(traceback.format_tb(got_e.__traceback__)[-2:])[-600:]
        return "internal", detail
    if want_e is not None and got_e is not None:
        return ("match" if kinds(want_e) <= kinds(got_e) else "error-kind"), detail
    if got_e is not None:
        detail["where"] = "".join(traceback.format_tb(got_e.__traceback__)[-1:])[-300:]
        return "tnet-only", detail
    if want_e is not None:
        return "torch-only", detail
    if entry["cmp"] == "shape" or entry["cmp"] == "dropout" and (kwargs.get("training") and 0 < kwargs.get("p", 0) < 1):
        why = differ([tuple(x.shape) for x in flat(got) if isinstance(x, torch.Tensor)],
                     [tuple(x.shape) for x in flat(want) if isinstance(x, torch.Tensor)])
    else:
        loosest = max([TOL.get(x.dtype, 0.0) for x in flat(want) if isinstance(x, torch.Tensor)], default=0.0)
        why = differ(got, want) or (differ(got_g, want_g, loosest) and "gradient: " + differ(got_g, want_g, loosest))
    if why:
        detail["why"] = why
        return "silent-wrong", detail
    return "match", detail


def kinds(e):
    """The error kinds the fuzz compares that e is (torch's NotImplementedError is a RuntimeError)."""
    return {k for k in (TypeError, ValueError, IndexError, RuntimeError) if isinstance(e, k)}


def _err(e):
    return None if e is None else f"{type(e).__name__}: {str(e)[:300]}"


def describe(args, kwargs):
    def d(v):
        if isinstance(v, slice):
            return f"{v.start or ''}:{v.stop or ''}:{v.step or ''}"
        if isinstance(v, (list, tuple)) and any(isinstance(e, T) for e in v):
            return "[" + ", ".join(d(e) for e in v) + "]"
        return repr(v) if not isinstance(v, float) or math.isfinite(v) else str(v)
    return ", ".join([d(a) for a in args] + [f"{k}={d(v)}" for k, v in kwargs.items()])


def case(i, seed, bad, ops):
    entry = ops[i % len(ops)]
    g = Gen(np.random.default_rng([seed, i]), bad)
    try:
        args, kwargs = entry["gen"](g)
        if kwargs and g.chance(g.bad / 3):  # a keyword argument of a wrong type
            kwargs = dict(kwargs, **{g.pick(sorted(kwargs)): g.pick(("x", 1.5, [1], -7, object()))})
    except Exception as e:  # noqa: BLE001
        return entry, (), {}, "harness", {"why": f"generator: {type(e).__name__}: {e}"}
    torch.manual_seed(int(np.random.default_rng([seed, i, 2]).integers(1 << 62)))  # a layer's init: --case replays it
    kind, detail = classify(entry, args, kwargs, TIMEOUT[0], [seed, i, 1])
    return entry, args, kwargs, kind, detail


TIMEOUT = [30]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=3000, help="how many cases (default 3000)")
    p.add_argument("--seed", type=int, default=0, help="the seed of every case's generator (default 0)")
    p.add_argument("--bad", type=float, default=0.15, help="the chance that an argument is a bad one (default 0.15)")
    p.add_argument("--ops", default="", help="only these ops, by name, comma-separated (e.g. F.conv2d,.add_,nn.Linear)")
    p.add_argument("--case", type=int, default=None, help="replay case I only and print both sides")
    p.add_argument("--timeout", type=int, default=30, help="seconds a case may run before it counts as a hang (default 30)")
    p.add_argument("--json", default="fuzz_ops.json", help="where the summary goes (default fuzz_ops.json)")
    p.add_argument("--list", action="store_true", help="list the ops and exit")
    a = p.parse_args(argv)
    TIMEOUT[0] = a.timeout
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Timeout("timed out")))
    ops = [e for e in OPS if not a.ops or e["name"] in a.ops.split(",")]
    if a.list:
        print(len(ops), "ops:", " ".join(e["name"] for e in ops))
        return 0
    if a.case is not None:
        entry, args, kwargs, kind, detail = case(a.case, a.seed, a.bad, ops)
        print(f"case {a.case}: {entry['name']}({describe(args, kwargs)}) -> {kind}")
        for k, v in detail.items():
            print(f"  {k}: {v}")
        for v in list(args) + list(kwargs.values()):
            if isinstance(v, T):
                print(f"  {v!r}: strides {v.make().stride()}\n{v.make().detach()}")
        return 0
    from tqdm import tqdm
    counts, per_op, bad_cases = collections.Counter(), collections.defaultdict(collections.Counter), []
    for i in tqdm(range(a.cases), desc="fuzz", unit="case", mininterval=2):
        entry, args, kwargs, kind, detail = case(i, a.seed, a.bad, ops)
        counts[kind] += 1
        per_op[entry["name"]][kind] += 1
        if kind != "match":
            bad_cases.append({"case": i, "op": entry["name"], "kind": kind, "input": describe(args, kwargs)[:300], **detail})
    order = ["silent-wrong", "internal", "timeout", "error-kind", "tnet-only", "torch-only", "harness"]
    summary = {"seed": a.seed, "cases": a.cases, "ops": len(ops), "counts": dict(counts),
               "per_op": {k: dict(v) for k, v in sorted(per_op.items()) if set(v) != {"match"}},
               "failures": sorted(bad_cases, key=lambda c: (order.index(c["kind"]), c["op"], c["case"]))}
    with open(a.json, "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary["counts"]), f"-> {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
