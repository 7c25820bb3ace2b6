"""Matrix products: matmul and linear (kernels/gemm.py), and the bias gradient that linear
and the convolutions share."""
import math
import numbers
import warnings

import torch

from .. import amp
from ..kernels import gemm as _gemm
from ..kernels import pointwise as _pw
from ..kernels.pointwise import broadcast_shape
from ..kernels import reduce as _reduce
from ..kernels.launch import DTYPE_NAMES, InputError, InputIndexError, check, check_type, is_channels_last
from ..tensor import Tensor, named, no_grad, record, record_composed, tape_mark
from .copy import (contiguous, diagonal, expand, permute, reshape, squeeze, tensors_result_type, to, transpose,
                   unsafe_view, unsqueeze)
from .pointwise import (abs, add, ceil, clamp_max, clamp_min, div, eq, isnan, logical_and, logical_or, mul, sign, sqrt, sub,
                        sum_to, where)
from .inputs import check_args, check_tensors, needs_grad
from .reduce import amin as _amin
from .reduce import sum as _reduce_sum
from .reduce import vector_norm


def same_dtype(name, *xs):
    """torch's products take operands of one dtype (RuntimeError otherwise); under tnet.autocast they
    are cast, as torch's autocast casts them."""
    if amp.get_autocast_dtype() is None and any(x.dtype != xs[0].dtype for x in xs):
        dtypes = [str(x.dtype) for x in xs]
        raise InputError(f"{name}: expected the operands to have the same dtype, but got "
                         f"{', '.join(dtypes[:-1])} and {dtypes[-1]}")


def _matmul2d(a, b, op="matmul"):
    """a @ b of matrices or vectors, each read as a matrix ([M, K] @ [K, N]: a vector a as a row, b as a column,
    views of their memory), one GEMM recorded as one node named op, as torch's mm, mv and dot: the result's shape
    drops the vectors' dims. Under autocast the product reads 16-bit operands (amp.cast_operand) and returns a
    16-bit output; each gradient comes in its input's dtype, written so by the GEMM."""
    need_a, need_b = needs_grad(a, b)
    M, K, N = (a.shape[0] if a.ndim == 2 else 1), b.shape[0], (b.shape[1] if b.ndim == 2 else 1)
    low = amp.get_autocast_dtype()
    A, B = (a.memory, b.memory) if low is None else (amp.cast_operand(a, low), amp.cast_operand(b, low))
    A, B = A.view(M, K), B.view(K, N)
    a_dtype, b_dtype = a.dtype, b.dtype
    shape = (*a.shape[:-1], *b.shape[1:])

    def backward(g):
        g = g.reshape(M, N)
        return (_gemm.matmul(g, B.t(), out_dtype=a_dtype).view(a.shape) if need_a else None,
                _gemm.matmul(A.t(), g, out_dtype=b_dtype).view(b.shape) if need_b else None)

    def graph(g, y):
        g, a2, b2 = (x if x.ndim == 2 else reshape(x, size) for x, size in ((g, (M, N)), (a, (M, K)), (b, (K, N))))
        ga = matmul(g, transpose(b2, 0, 1)) if need_a else None
        gb = matmul(transpose(a2, 0, 1), g) if need_b else None
        return (ga if ga is None or a.ndim == 2 else reshape(ga, a.shape),
                gb if gb is None or b.ndim == 2 else reshape(gb, b.shape))
    # the result's own memory, no view of the GEMM's [M, N] (unsafe_view's reason: in-place ops may write it)
    return record(op, _gemm.matmul(A, B).view(shape).detach(), (a, b), backward,
                  saved=(b if need_a else None, a if need_b else None), graph=graph)


def _bmm(a, b):
    """a [batch, M, K] or [M, K] @ b [batch, K, N]: a batch of products (a 2-D a is shared by
    the batch, its gradient the sum over the batch). Autocast and dtypes as _matmul2d."""
    need_a, need_b = needs_grad(a, b)
    low = amp.get_autocast_dtype()
    A, B = (a.memory, b.memory) if low is None else (amp.cast_operand(a, low), amp.cast_operand(b, low))
    a_dtype, b_dtype = a.dtype, b.dtype

    def backward(g):
        return (_gemm.matmul(g, B.transpose(-1, -2), out_dtype=a_dtype, sum_batch=A.dim() == 2) if need_a else None,
                _gemm.matmul(A.transpose(-1, -2), g, out_dtype=b_dtype) if need_b else None)

    def graph(g, y):
        ga = matmul(g, transpose(b, -1, -2)) if need_a else None
        return (ga if ga is None or a.ndim == 3 else _reduce_sum(ga, 0),
                matmul(transpose(a, -1, -2), g) if need_b else None)
    return record("matmul", _gemm.matmul(A, B), (a, b), backward, saved=(b if need_a else None, a if need_b else None),
                  graph=graph)


def matmul(input, other):
    """torch.matmul (a, b: input, other, torch's keyword names): 1-D operands are vectors (a dot product, matrix-vector, vector-matrix);
    [..., M, K] @ [..., K, N] is a batch of products over the leading dims broadcast as torch's:
    where b is one matrix a's leading dims fold into its rows, where a is one matrix (size-1
    leading dims) it is shared by the batch; else an operand with the broadcast leading dims goes
    to the batched GEMM as a view, one broadcast along some of them is expanded and copied (as
    torch's: strides of 0 and n do not merge into the GEMM's one batch stride). The gradients sum
    back over the dims an operand was broadcast along. Under autocast the GEMMs
    read 16-bit operands and return 16-bit outputs; each gradient comes in its input's dtype."""
    a, b = input, other
    check_tensors("matmul", a=a, b=b)
    batched = a.ndim >= 3 and b.ndim >= 3
    if not batched:  # torch's mm, mv and folded products check the dtypes first (its bmm: see below)
        same_dtype("matmul", a, b)
    check(a.ndim >= 1 and b.ndim >= 1,
          lambda: f"matmul: both arguments need at least 1 dimension, got {a.shape} and {b.shape}")
    K = a.shape[-1]
    check(K == b.shape[-2 if b.ndim > 1 else 0],
          lambda: f"matmul: a is {'x'.join(map(str, a.shape))} but b is {'x'.join(map(str, b.shape))}: they cannot be multiplied")
    if a.ndim == b.ndim == 2:
        return _matmul2d(a, b)
    # torch's nodes of a vector's products: mv's and dot's one node; a vector times a matrix an mm of its unsqueezed
    # row, squeezed in place (SqueezeBackward4); a vector and a batch an mv of the batch folded to a matrix
    if b.ndim == 1 and a.ndim <= 2:
        return _matmul2d(a, b, "mv" if a.ndim == 2 else "dot")
    if b.ndim == 1:  # a batch times a vector: its rows folded
        return unsafe_view(_matmul2d(reshape(a, math.prod(a.shape[:-1]), K), b, "mv"), *a.shape[:-1])
    if a.ndim == 1 and b.ndim == 2:
        mark = tape_mark()
        return named("squeeze_dim_inplace", mark, unsafe_view(_matmul2d(unsqueeze(a, 0), b), b.shape[-1]))
    if a.ndim == 1:  # a vector times a batch: the batch's columns folded to rows (a copy), as torch's
        rows = unsafe_view(contiguous(transpose(b, -1, -2)), math.prod(b.shape[:-2]) * b.shape[-1], K)
        return unsafe_view(_matmul2d(rows, a, "mv"), *b.shape[:-2], b.shape[-1])
    M, N = a.shape[-2], b.shape[-1]
    lead = broadcast_shape("matmul", a.shape[:-2], b.shape[:-2])
    if a.dtype != b.dtype and (K == 0 or math.prod((*lead, M, N)) == 0):
        return no_terms((*lead, M, N), b.dtype, a, b)
    same_dtype("matmul", a, b)
    if math.prod(b.shape[:-2]) == 1:  # b one matrix: a's leading dims fold into its rows
        out = _matmul2d(reshape(a, math.prod(a.shape[:-1]), K), reshape(b, K, N))  # no -1: empty a
    elif math.prod(a.shape[:-2]) == 1:  # a one matrix, shared by the batch
        out = _bmm(reshape(a, M, K), _batch(b, lead))
    else:
        out = _bmm(_batch(a, lead), _batch(b, lead))
    return unsafe_view(out, *lead, M, N)


def no_terms(shape, dtype, *operands):
    """The zeros [shape] of a product with no terms (K = 0) or no elements, in dtype, its operands' gradients
    zeros: torch's batched products (bmm, baddbmm, addbmm) return these before they read the operands,
    whatever their dtypes (its bmm's result takes batch2's)."""
    y = torch.zeros(shape, dtype=dtype, device=operands[0].device)
    return record("matmul", y, operands, lambda g: tuple(torch.zeros_like(x.memory) for x in operands))


def _batch(x, lead):
    """x [..., R, C] as [batch, R, C] over the broadcast leading dims `lead`."""
    if x.shape[:-2] != lead:
        x = expand(x, *lead, *x.shape[-2:])
    return reshape(x, math.prod(lead), *x.shape[-2:])


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """torch.cdist: the p-norm distances [*, P, R] between the rows of x1 [*, P, M] and x2 [*, R, M]
    (leading dims broadcast), p >= 0. p = 2 runs as torch's: through the GEMM identity |a|^2 +
    |b|^2 - 2 a.b, clamped at 0 before the square root, where P or R passes 25 (compute_mode
    'use_mm_for_euclid_dist_if_necessary'; 'use_mm_for_euclid_dist' always, 'donot_use_mm_...'
    never), its gradient (a - b) g / d through GEMMs, 0 where d is 0. Other p (and p = 2 on the
    direct path) are `distances` of the [*, P, R, M] differences, with torch's gradients (at p = inf
    each of a tie for the largest |a - b| takes it whole)."""
    check_tensors("cdist", x1=x1, x2=x2)
    check_type(isinstance(p, numbers.Real), lambda: f"cdist(): argument 'p' must be float, not {type(p).__name__}")
    check(x1.ndim >= 2, lambda: f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    check(x2.ndim >= 2, lambda: f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    check(x1.shape[-1] == x2.shape[-1], lambda: f"X1 and X2 must have the same number of columns. X1: "
                                                f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    check(not isinstance(p, bool) and p >= 0, "cdist only supports non-negative p values")
    check(compute_mode in _CDIST_MODES, lambda: f"{compute_mode} is not a valid value for compute_mode")
    check(x1.dtype == x2.dtype or not (x1.shape[-2] and x2.shape[-2]),  # torch's kernels read both as one dtype
          lambda: f"expected scalar type {DTYPE_NAMES[x1.dtype]} but found {DTYPE_NAMES[x2.dtype]}")
    if p == 2 and (compute_mode == _CDIST_MODES[1] or
                   (compute_mode == _CDIST_MODES[0] and (x1.shape[-2] > 25 or x2.shape[-2] > 25))):
        return _euclidean_cdist(x1, x2)
    return distances(sub(unsqueeze(x1, -2), unsqueeze(x2, -3)), p)


def distances(diff, p):
    """The p-norms over the last dim of the differences diff [*, M], with the gradients of torch's cdist and
    pdist (one kernel family in torch): their own at p = 2, 1, 0 and inf, vector_norm's at other p."""
    if p == 2:
        return _direct_euclidean(diff)
    if p == 1:
        return _taxicab(diff)
    if p == 0:
        return _hamming(diff)
    if p == math.inf:
        return _chebyshev(diff)
    return vector_norm(diff, p, -1)


def _hamming(diff):
    """The 0-norms over the last dim of diff [*, M] as torch's cdist and pdist count them, sum(min(ceil(|diff|), 1)):
    NaN along a NaN difference (vector_norm's p = 0 counts it); their gradient is 0 (vector_norm's p = 0 has none:
    x.grad stays None there, as torch's)."""
    with no_grad():
        d = _reduce_sum(clamp_max(ceil(abs(diff)), 1.0), -1)
    return record("cdist", d.memory, (diff,), lambda g: (torch.zeros_like(diff.memory),),
                  graph=lambda g, out: (Tensor(torch.zeros_like(diff.memory)),))


def _chebyshev(diff):
    """The inf-norms (largest |diff|) over the last dim of diff [*, M], with torch's cdist and pdist gradient
    g sign(diff) (1 - min(1, ceil(||diff| - d|))): g sign(diff) at each element whose |diff| is the norm d (every one
    of a tie, where vector_norm's shares g), 0 at the others, NaN where |diff| - d is NaN (an infinite norm's
    infinite elements too)."""
    with no_grad():  # no columns: 0, as torch's (vector_norm's inf norm, without an identity, raises there)
        d = vector_norm(diff, math.inf, -1) if diff.shape[-1] else _reduce_sum(abs(diff), -1)

    def grads(g):
        gap = sub(abs(diff), unsqueeze(d, -1))
        at_norm = where(eq(gap, 0.0), 1.0, where(isnan(gap), math.nan, 0.0))
        return (mul(mul(unsqueeze(g, -1), sign(diff)), at_norm),)
    return record_composed("cdist", d.memory, (diff,), grads, saved=(diff, d))


def _taxicab(diff):
    """The 1-norms over the last dim of the differences diff [*, P, R, M], with torch's cdist gradient
    g sign(diff), NaN where diff is NaN (vector_norm's, as torch.abs's, is 0 there)."""
    with no_grad():
        d = vector_norm(diff, 1, -1)
    return record_composed("cdist", d.memory, (diff,),
                           lambda g: (where(isnan(diff), math.nan, mul(unsqueeze(g, -1), sign(diff))),), saved=(diff,))


def _direct_euclidean(diff):
    """The 2-norms over the last dim of the differences diff [*, P, R, M], with torch's cdist gradient g diff / d
    (the norm's is diff (g / d), as torch's: the product first is NaN where g diff overflows beside an infinite
    d, as torch's cdist), 0 where d is 0. d is torch's kernels' sqrt(sum(diff^2)) in fp32, unscaled (not
    vector_norm's): 0 where the squares underflow (a subnormal difference), inf where they overflow (|diff| >= 2e19)."""
    with no_grad():
        wide = diff if diff.dtype == torch.float32 else to(diff, torch.float32)
        d = sqrt(_reduce_sum(mul(wide, wide), -1))
        d = d if d.dtype == diff.dtype else to(d, diff.dtype)
    D = diff.memory

    def backward(g):  # g diff / d in fp32 registers (g diff overflows float16)
        Y = d.memory.unsqueeze(-1)
        return (_pw.pointwise("where", _pw.pointwise("eq", Y, 0), 0.0, _pw.pointwise("muldiv", g.unsqueeze(-1), D, Y)),)

    def graph(g, out):
        y = unsqueeze(out, -1)
        return (where(eq(y, 0), 0.0, div(mul(unsqueeze(g, -1), diff), y)),)
    return record("cdist", d.memory, (diff,), backward, saved=(diff, d), graph=graph)


def _euclidean_cdist(x1, x2):
    """cdist's p = 2 through one batched GEMM: sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), the GEMMs of fp32
    rows, forward and backward, in IEEE fp32 whatever set_precision says, as torch's (tf32's rounding
    of a.b, cancelling against |a|^2, would leave a point 0.1 from itself; the backward's a sum(w) -
    w b cancels alike for near points, where w = g / d is large)."""
    need1, need2 = needs_grad(x1, x2)
    with no_grad(), _gemm.precision_of("ieee"):
        squares1 = _reduce_sum(mul(x1, x1), -1, keepdim=True)
        squares2 = unsqueeze(_reduce_sum(mul(x2, x2), -1), -2)
        d = sqrt(clamp_min(add(sub(squares1, mul(matmul(x1, transpose(x2, -1, -2)), 2.0)), squares2), 0.0))

    def backward(g):
        with no_grad(), _gemm.precision_of("ieee"):
            w = where(eq(d, 0), 0.0, div(Tensor(g), d))  # [*, P, R]
            g1 = sub(mul(x1, _reduce_sum(w, -1, keepdim=True)), matmul(w, x2)) if need1 else None
            g2 = sub(mul(x2, transpose(_reduce_sum(w, -2, keepdim=True), -1, -2)),
                     matmul(transpose(w, -1, -2), x1)) if need2 else None
            return tuple(None if gx is None else sum_to(gx.memory, x) for gx, x in ((g1, x1), (g2, x2)))
    return record("cdist", d.memory, (x1, x2), backward, saved=(x1, x2, d))


def cov(x, *, correction=1, fweights=None, aweights=None):
    """torch.cov: the covariance matrix of the variables in x's rows over its columns, the
    observations (x [vars, obs], or [obs] or [1, obs] for one variable: a 0-d result), dividing by
    obs - correction (at most 0: infinities, as torch); differentiable. Observation weights as torch's: w the product
    of fweights (integer repeat counts) and aweights (float importances), the weighted mean sum(x w) / sum(w), the
    products of the centred rows with x w, divided by sum(w) - correction * sum(w aweights) / sum(w) where aweights
    are given (sum(w) - correction where not); the weights get their gradient too."""
    check_args("cov", "int", correction=correction)
    check_tensors("cov", input=x)
    check(x.ndim <= 2, lambda: f"cov: expected input to have two or fewer dimensions but got an input with {x.ndim} "
                               f"dimensions")
    rows = reshape(x, 1, -1) if x.ndim < 2 else x
    obs = rows.shape[1]
    w = None
    for name, weights in (("fweights", fweights), ("aweights", aweights)):
        if weights is None:
            continue
        check_tensors("cov", **{name: weights})
        floating = weights.dtype.is_floating_point
        check(weights.ndim <= 1, lambda: f"cov(): expected {name} to have one or fewer dimensions but got {name} "
                                         f"with {weights.ndim} dimensions")
        check(floating == (name == "aweights") and weights.dtype != torch.bool,
              lambda: f"cov(): expected {name} to have {'floating point' if name == 'aweights' else 'integral'} dtype "
                      f"but got {name} with {weights.dtype} dtype")
        check(weights.numel() == obs, lambda: f"cov(): expected {name} to have the same numel as there are "
                                              f"observations in the input but got {weights.numel()} != {obs}")
        check(obs == 0 or _amin(weights).item() >= 0, f"cov(): {name} cannot be negative")
        w = weights if w is None else mul(w, weights)
    # torch's ops: the sum over the count (a 16-bit sum rounds before the division), the product divided by the
    # degrees of freedom, 0 where there are none (x / 0: inf, or NaN), with its warning
    if w is None:
        avg = div(_reduce_sum(rows, 1), obs)
        dof = obs - correction
    else:
        w_sum = _reduce_sum(w)
        check(w_sum.item() != 0, "cov(): weights sum to zero, can't be normalized")
        avg = div(_reduce_sum(mul(rows, w), 1), w_sum)
        dof = (sub(w_sum, div(mul(_reduce_sum(mul(w, aweights)), correction), w_sum))
               if aweights is not None and correction != 0 else sub(w_sum, correction))
    if (dof.item() if isinstance(dof, Tensor) else dof) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        dof = mul(dof, 0) if isinstance(dof, Tensor) else 0
    centred = rows - unsqueeze(avg, 1)
    other = centred if w is None else mul(centred, w)
    return squeeze(div(matmul(centred, other.t()), dof))  # torch squeezes every size-1 dim: one variable gives 0-d


def linear(input, weight, bias=None):
    """x [N, in] @ w.T + b (x, w, b: input, weight, bias, torch's keyword names), with w [out, in]
    and b [out]; x may also be [in] or [..., in], as torch's (the leading dims are the rows of one
    GEMM). Under autocast the GEMM reads 16-bit x and w (amp.cast_operand: an fp32 parameter's
    kept copy) and writes a 16-bit output, the fp32 bias added in its epilogue. Each gradient comes in its input's dtype (fp32 for fp32
    masters), written so by the GEMM or the reduction: no extra cast pass."""
    x, w, b = input, weight, bias
    check_tensors("linear", x=x, w=w, **({} if b is None else {"b": b}))
    same_dtype("linear", x, w, *([] if b is None else [b]))  # the bias too, as torch's addmm
    if w.ndim == 1 and b is None:  # torch's one-output form: w [in], the output without its last dim
        y = linear(x, unsqueeze(w, 0))
        return unsafe_view(y, tuple(y.shape[:-1]))
    check(x.ndim >= 1 and w.ndim == 2 and x.shape[-1] == w.shape[1],
          lambda: f"linear: x is {'x'.join(map(str, x.shape))} but w is {'x'.join(map(str, w.shape))} ([out, in])")
    if x.ndim != 2:  # [in] or [..., in]: the leading dims as rows; torch's node a view of its addmm with a bias, else
        # its matmul's (an unsafe view, or for a vector an in-place squeeze)
        mark = tape_mark()  # a vector's row: torch's view with a bias, else its matmul's unsqueeze
        rows = unsqueeze(x, 0) if x.ndim == 1 and b is None else reshape(x, math.prod(x.shape[:-1]), x.shape[-1])
        y = unsafe_view(linear(rows, w, b), *x.shape[:-1], w.shape[0])
        return named("view" if b is not None else "squeeze_dim_inplace" if x.ndim == 1 else "unsafe_view", mark, y)
    check(x.ndim == 2 and w.ndim == 2 and x.shape[1] == w.shape[1],
          lambda: f"linear: x is {'x'.join(map(str, x.shape))} but w is {'x'.join(map(str, w.shape))} ([out, in])")
    check(b is None or b.shape == (w.shape[0],),
          lambda: f"linear: b is {None if b is None else b.shape}, expected ({w.shape[0]},)")
    need_x, need_w, need_b = needs_grad(x, w, b)
    low = amp.get_autocast_dtype()
    X, W = (x.memory, w.memory) if low is None else (amp.cast_operand(x, low), amp.cast_operand(w, low))
    x_dtype, w_dtype, b_dtype = x.dtype, w.dtype, None if b is None else b.dtype

    def backward(g):
        return (_gemm.matmul(g, W, out_dtype=x_dtype) if need_x else None,
                _gemm.matmul(g.t(), X, out_dtype=w_dtype) if need_w else None,
                bias_grad(g, b_dtype) if need_b else None)

    def graph(g, y):
        return (matmul(g, w) if need_x else None, matmul(transpose(g, 0, 1), x) if need_w else None,
                _reduce_sum(g, 0) if need_b else None)
    y = _gemm.matmul(X, W.t(), bias=None if b is None else b.memory.contiguous(), bias_dim=1)  # the epilogue reads it dense
    return record("linear", y, (x, w) if b is None else (x, w, b), backward,
                  saved=(w if need_x else None, x if need_w else None), graph=graph)


def bias_grad(g, dtype):
    """The bias gradient of a linear layer or a convolution: g [N, C] or [N, C, H, W] summed
    over all axes but C, in fp32, written in dtype."""
    out = torch.empty(g.shape[1], device=g.device, dtype=dtype)
    if is_channels_last(g):
        return _reduce.sum_except(g.permute(0, 2, 3, 1).view(-1, g.shape[1]), 1, out=out)
    return _reduce.sum_except(g, 1, out=out)


def _einsum_labels(equation, operands):
    """The equation's labels per operand and the output's: each '...' as capital letters standing
    for the dims it covers (the same count in every operand that has one)."""
    check(all(c.isalpha() or c in ",.->" or c.isspace() for c in equation),
          lambda: f"einsum(): invalid subscript given in the equation string {equation!r}")
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    check(len(terms) == len(operands),
          lambda: f"einsum(): {len(terms)} operands in the equation, but {len(operands)} were given")
    spans = [x.ndim - len(t.replace("...", "")) if "..." in t else 0 for t, x in zip(terms, operands)]
    width = max(spans, default=0)
    dots = "".join(chr(ord("Z") - i) for i in range(width))[::-1]  # the same letters for every '...'
    labels = [t.replace("...", dots[width - n:]) for t, n in zip(terms, spans)]
    if arrow:
        out = rhs.replace("...", dots)
    else:  # implicit: '...' first, then the labels seen once, in alphabetical order
        seen = "".join(labels)
        out = dots + "".join(sorted(c for c in set(seen) if c.islower() and seen.count(c) == 1))
    for t, x in zip(labels, operands):
        check(len(t) == x.ndim, lambda: f"einsum(): the subscripts {t!r} do not match an operand of {x.ndim} dims")
    return labels, out


def _einsum_diagonals(x, labels):
    """x with each label repeated in labels taken once, along the diagonal of its dims (a view):
    (x, its labels, the diagonal's last)."""
    for c in sorted(set(c for c in labels if labels.count(c) > 1)):
        while labels.count(c) > 1:
            i, j = labels.index(c), labels.index(c, labels.index(c) + 1)
            x = diagonal(x, 0, i, j)
            labels = "".join(d for k, d in enumerate(labels) if k not in (i, j)) + c
    return x, labels


def _einsum_sum(x, labels, keep):
    """x summed over its labels not in keep: (x, its remaining labels)."""
    drop = [i for i, c in enumerate(labels) if c not in keep]
    if drop:
        x = _reduce_sum(x, tuple(drop))
    return x, "".join(c for c in labels if c in keep)


def einsum(equation, *operands):
    """torch.einsum for one or two operands (more are taken two at a time, left to right), with
    '...' and the implicit output: labels summed out, then one batched matmul (batch labels, each
    operand's free labels, the contracted ones), then the output's order; a label repeated within one
    operand takes that operand's diagonal first; a pair with no label summed (an outer product) is an element-wise
    product instead. Not supported: sizes that broadcast (1 against n). torch's sublist form,
    einsum(op1, [0, 1], op2, [1, 2], [0, 2]), is read as its equation."""
    check_type(isinstance(equation, (str, Tensor)),  # the sublist form starts with a tensor
               lambda: f"einsum(): argument 'equation' (position 1) must be str, not {type(equation).__name__}")
    if not isinstance(equation, str):
        equation, operands = _einsum_sublists((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    check_tensors("einsum", **{f"operand {i}": x for i, x in enumerate(operands)})
    labels, out = _einsum_labels(equation, operands)
    sizes = {}
    for t, x in zip(labels, operands):
        for c, n in zip(t, x.shape):
            check(sizes.setdefault(c, n) == n, lambda: f"einsum(): the label {c!r} has sizes {sizes[c]} and {n}")
    operands, labels = zip(*(_einsum_diagonals(x, t) for x, t in zip(operands, labels)))
    x, lx = operands[0], labels[0]
    for i in range(1, len(operands)):
        x, lx = _einsum_pair(x, lx, operands[i], labels[i], set(out) | set("".join(labels[i + 1:])), sizes)
    x, lx = _einsum_sum(x, lx, set(out))
    return permute(x, tuple(lx.index(c) for c in out)) if lx != out else x


def _einsum_sublists(args):
    """(equation, operands) of torch's sublist form: operands each followed by a list of its dims' labels (ints 0-51
    as a-z then A-Z, Ellipsis as '...'), then optionally the output's list."""
    def letters(sublist):
        return "".join("..." if d is Ellipsis else chr(ord("a") + d) if d < 26 else chr(ord("A") + d - 26)
                       for d in sublist)
    operands, subscripts = args[0:len(args) - len(args) % 2:2], [letters(s) for s in args[1::2]]
    equation = ",".join(subscripts[:len(operands)])
    if len(args) % 2:
        equation += "->" + letters(args[-1])
    return equation, operands


def _einsum_pair(a, la, b, lb, keep, sizes):
    """a (labels la) times b (lb), summed over the labels in both that keep (the output's and the
    later operands') lacks: (the product, its labels: batch, a's free, b's free)."""
    a, la = _einsum_sum(a, la, set(lb) | keep)
    b, lb = _einsum_sum(b, lb, set(la) | keep)
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]
    size = lambda cs: math.prod(sizes[c] for c in cs)
    a = reshape(permute(a, tuple(la.index(c) for c in batch + free_a + summed)),
                (size(batch), size(free_a), size(summed)))
    b = reshape(permute(b, tuple(lb.index(c) for c in batch + summed + free_b)),
                (size(batch), size(summed), size(free_b)))
    if summed:
        product = matmul(a, b)
    else:  # [B, Fa, 1] times [B, 1, Fb] element-wise (a GEMM of K = 1 would spend whole tiles on it), in autocast's
        low = amp.get_autocast_dtype()  # dtype as the GEMM's, torch's einsum being on autocast's 16-bit list
        product = mul(a, b) if low is None else mul(to(a, low), to(b, low))
    return reshape(product, tuple(sizes[c] for c in batch + free_a + free_b)), "".join(batch + free_a + free_b)


def mm(input, mat2):
    """torch.mm: [n, m] @ [m, p], matrices only (matmul)."""
    check_tensors("mm", input=input, mat2=mat2)
    check(input.ndim == 2, "self must be a matrix")
    check(mat2.ndim == 2, "mat2 must be a matrix")
    return matmul(input, mat2)


def bmm(input, mat2):
    """torch.bmm: [b, n, m] @ [b, m, p], batches of one size only (matmul's batched GEMM)."""
    check_tensors("bmm", input=input, mat2=mat2)
    check(input.ndim == 3, "batch1 must be a 3D tensor")
    check(mat2.ndim == 3, "batch2 must be a 3D tensor")
    check(input.shape[0] == mat2.shape[0] and input.shape[2] == mat2.shape[1],
          lambda: f"Expected size for first two dimensions of batch2 tensor to be: [{input.shape[0]}, "
                  f"{input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    mark = tape_mark()
    return named("bmm", mark, matmul(input, mat2))


def _scaled_sum(name, input, product, beta, alpha):
    """beta * input + alpha * product, input broadcast to product's shape; beta 0 takes product's
    values alone (not input's NaN or inf) and gives input torch's gradient g * 0 (NaN where g is inf
    or NaN: torch's backward scales g by beta whatever beta is)."""
    product = product if alpha == 1 else mul(product, alpha)
    if beta == 0:
        with no_grad():
            out = where(Tensor(torch.ones((), dtype=torch.bool, device=product.device)), product, input)
        if any(needs_grad(input, product)):
            out = record_composed(name, out.memory, (input, product), lambda g: (
                to(mul(g, 0).sum_to_size(input.shape), input.dtype), to(g, product.dtype)), saved=())
    else:
        out = add(input if beta == 1 else mul(input, beta), product)
    check(out.shape == product.shape,
          lambda: f"{name}: the input {input.shape} does not broadcast to the product's shape {product.shape}")
    return out


def scales_first(name, args, beta, alpha):
    """torch's deprecated overloads of addmm, addbmm, baddbmm, addmv and addr (before torch 1.5) that take the
    scales first: name(beta, input, [alpha,] m1, m2) and input.name(beta, [alpha,] m1, m2), as center-loss's
    `distmat.addmm_(1, -2, x, centers.t())`: args as (input, m1, m2, beta, alpha), with torch's UserWarning;
    three arguments of another kind as they are, for the checks that follow to name; TypeError for the rest."""
    args = list(args)
    if len(args) > 1 and isinstance(args[0], numbers.Number) and isinstance(args[1], Tensor):
        args[0], args[1] = args[1], args[0]  # the function's form: beta before input
    input, rest = args[0], args[1:]
    scales = []
    while rest and len(scales) < 2 and isinstance(rest[0], numbers.Number):
        scales, rest = scales + [rest[0]], rest[1:]
    if len(args) == 3 and not scales:
        return (*args, beta, alpha)
    if not scales or len(rest) != 2 or not all(isinstance(t, Tensor) for t in (input, *rest)):
        raise TypeError(f"{name}() received an invalid combination of arguments: "
                        f"({', '.join(type(a).__name__ for a in args)})")
    warnings.warn(f"This overload of {name} is deprecated:\n\t{name}(Number beta, Number alpha, Tensor, Tensor)\n"
                  f"Consider using one of the following signatures instead:\n\t{name}(Tensor, Tensor, *, "
                  f"Number beta = 1, Number alpha = 1)", UserWarning, stacklevel=3)
    beta, alpha = (scales + [alpha])[:2]
    return (input, *rest, beta, alpha)


def addmm(input, mat1, mat2, *deprecated, beta=1, alpha=1):
    """torch.addmm: beta * input + alpha * (mat1 @ mat2), input broadcast to [n, p]; beta=0
    ignores input (its NaN and inf too), as torch."""
    if deprecated or not isinstance(mat1, Tensor):
        input, mat1, mat2, beta, alpha = scales_first("addmm", (input, mat1, mat2, *deprecated), beta, alpha)
    check_args("addmm", "float", beta=beta, alpha=alpha)
    check_tensors("addmm", input=input, mat1=mat1, mat2=mat2)
    same_dtype("addmm", input, mat1, mat2)  # before the shapes, as torch's addmm (its addmv and baddbmm: after)
    mark = tape_mark()
    return named("addmm", mark, _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha))


def baddbmm(input, batch1, batch2, *deprecated, beta=1, alpha=1):
    """torch.baddbmm: beta * input + alpha * bmm(batch1, batch2), input broadcast; beta=0 ignores
    input, as torch."""
    if deprecated or not isinstance(batch1, Tensor):
        input, batch1, batch2, beta, alpha = scales_first("baddbmm", (input, batch1, batch2, *deprecated), beta, alpha)
    check_args("baddbmm", "float", beta=beta, alpha=alpha)
    check_tensors("baddbmm", input=input)
    mark = tape_mark()
    product = bmm(batch1, batch2)
    same_dtype("baddbmm", input, batch1)  # batch2's dtype is bmm's to check (not where it has no terms)
    if input.dtype != product.dtype:  # no terms: torch's result takes batch2's dtype, input copied in before beta
        input = input.to(product.dtype)  # scales it (fuzz seed 314, case 378: 1e5 to float16 is inf, then * 0.5)
    return named("baddbmm", mark, _scaled_sum("baddbmm", input, product, beta, alpha))


def tensordot(a, b, dims=2):
    """Sums of products over a's and b's paired dims, as torch.tensordot: dims an int (a's last
    dims with b's first) or two lists; a permute, a reshape and one matmul."""
    if isinstance(dims, numbers.Integral):
        check(dims >= 0, lambda: f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, numbers.Integral) else list(d) for d in dims)
    da, db = [d % a.ndim for d in da], [d % b.ndim for d in db]
    for i, j in zip(da, db):  # a contracted dim of size 1 beside a longer one: the longer summed first, as torch's
        if a.shape[i] != b.shape[j] and b.shape[j] == 1:
            a = _reduce_sum(a, i, keepdim=True)
        elif a.shape[i] != b.shape[j] and a.shape[i] == 1:
            b = _reduce_sum(b, j, keepdim=True)
    check(len(da) == len(db) and all(a.shape[i] == b.shape[j] for i, j in zip(da, db)),
          lambda: f"tensordot: contracted dims of {a.shape} ({da}) and {b.shape} ({db}) do not match")
    free_a, free_b = [d for d in range(a.ndim) if d not in da], [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    left = reshape(permute(a, free_a + da), (math.prod(a.shape[d] for d in free_a), k))
    right = reshape(permute(b, db + free_b), (k, math.prod(b.shape[d] for d in free_b)))
    return reshape(matmul(left, right), tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))


def outer(input, vec2):
    """torch.outer: [n] x [m] -> [n, m], as torch computes it: a column times a row (element-wise)."""
    check_tensors("outer", input=input, vec2=vec2)
    check(input.ndim == 1, lambda: f"outer: Expected 1-D argument self, but got {input.ndim}-D")
    check(vec2.ndim == 1, lambda: f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return mul(reshape(input, (-1, 1)), vec2)


def dot(input, tensor):
    """torch.dot: the 0-d inner product of two vectors of one size, a product and an fp32 sum: never
    tf32, as torch's dot (a BLAS dot, not a GEMM), whose products LBFGS's curvature pairs read."""
    check_tensors("dot", input=input, tensor=tensor)
    return _dot("dot", input, tensor)


def _dot(op, a, b):
    """dot's and vdot's checks, product and sum, recorded as one node named op over a and b, as torch's
    DotBackward0 and VdotBackward0: the gradients g b and g a."""
    check(a.ndim == 1 and b.ndim == 1, lambda: f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    check(a.shape == b.shape,
          lambda: f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have "
                  f"the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively")
    check(a.dtype == b.dtype,
          lambda: f"{op} : expected both vectors to have same dtype, but found {a.dtype} and {b.dtype}")
    with no_grad():
        y = _reduce_sum(mul(a, b))
    need_a, need_b = needs_grad(a, b)
    return record_composed(op, y.memory, (a, b),
                           lambda g: (mul(g, b) if need_a else None, mul(g, a) if need_b else None),
                           saved=(b if need_a else None, a if need_b else None))


def mv(input, vec):
    """torch.mv: [n, m] @ [m] -> [n] (matmul)."""
    check_tensors("mv", input=input, vec=vec)
    check(input.ndim == 2 and vec.ndim == 1,
          lambda: f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    return matmul(input, vec)


def bilinear(input1, input2, weight, bias=None):
    """torch's bilinear map: y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o],
    as one GEMM (input1 against weight read as [in1, out * in2]), a product with input2 and a sum."""
    check_tensors("bilinear", input1=input1, input2=input2, weight=weight)
    same_dtype("bilinear", input1, input2, weight, *([] if bias is None else [bias]))  # before the shapes, as torch's
    check(weight.ndim == 3 and input1.shape[-1] == weight.shape[1] and input2.shape[-1] == weight.shape[2] and
          input1.shape[:-1] == input2.shape[:-1],
          lambda: f"bilinear: input1 {input1.shape} and input2 {input2.shape} must be [..., in1] and [..., in2] for "
                  f"the weight {weight.shape} [out, in1, in2]")
    out, in1, in2 = weight.shape
    x1, x2 = reshape(input1, (-1, in1)), reshape(input2, (-1, 1, in2))
    t = reshape(matmul(x1, reshape(permute(weight, (1, 0, 2)), (in1, out * in2))), (-1, out, in2))
    y = _reduce_sum(mul(t, x2), -1)
    if bias is not None:
        y = add(y, bias)
    return reshape(y, (*input1.shape[:-1], out))


# ---- the tensor surface of the eighth session (ops3): more of torch's matrix products -----------

def addbmm(input, batch1, batch2, *deprecated, beta=1, alpha=1):
    """torch.addbmm: beta * input + alpha * (the sum over the batch of batch1[i] @ batch2[i]), input
    broadcast to [n, p]: one GEMM of batch1 read as [n, b * m] against batch2 as [b * m, p]."""
    if deprecated or not isinstance(batch1, Tensor):
        input, batch1, batch2, beta, alpha = scales_first("addbmm", (input, batch1, batch2, *deprecated), beta, alpha)
    check_args("addbmm", "float", beta=beta, alpha=alpha)
    check_tensors("addbmm", input=input, batch1=batch1, batch2=batch2)
    check(batch1.ndim == 3, "batch1 must be a 3D tensor")
    check(batch2.ndim == 3, "batch2 must be a 3D tensor")
    (b, n, m), (b2, m2, p) = batch1.shape, batch2.shape
    check(b == b2, lambda: f"batch1 and batch2 must have same number of batches, got {b} and {b2}")
    check(m == m2, lambda: f"Incompatible matrix sizes for bmm ({n}x{m} and {m2}x{p})")
    if b == 0:  # no batch: torch's beta * input, whatever the batches' dtypes
        product = no_terms((n, p), input.dtype, batch1, batch2)
    else:
        product = matmul(reshape(permute(batch1, (1, 0, 2)), (n, b * m)), reshape(batch2, (b * m, p)))
        same_dtype("addbmm", input, batch1, batch2)
    return _scaled_sum("addbmm", input, product, beta, alpha)


def addmv(input, mat, vec, *deprecated, beta=1, alpha=1):
    """torch.addmv: beta * input + alpha * (mat @ vec), input broadcast to [n]; beta=0 ignores input."""
    if deprecated or not isinstance(mat, Tensor):
        input, mat, vec, beta, alpha = scales_first("addmv", (input, mat, vec, *deprecated), beta, alpha)
    check_args("addmv", "float", beta=beta, alpha=alpha)
    check_tensors("addmv", input=input, mat=mat, vec=vec)
    check(mat.ndim == 2 and vec.ndim == 1 and input.ndim <= 1,
          lambda: f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if not (mat.shape[1] == vec.shape[0] and input.numel() in (1, mat.shape[0])):
        if input.ndim == 0:  # torch's message reads input.size(0)
            raise InputIndexError("Dimension specified as 0 but tensor has no dimensions")
        raise InputError(f"size mismatch, got input ({input.shape[0]}), mat ({mat.shape[0]}x{mat.shape[1]}), "
                         f"vec ({vec.shape[0]})")
    same_dtype("addmv", input, mat, vec)
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *deprecated, beta=1, alpha=1):
    """torch.addr: beta * input + alpha * outer(vec1, vec2), input broadcast to [n, m]; beta=0 ignores
    input."""
    if deprecated or not isinstance(vec1, Tensor):
        input, vec1, vec2, beta, alpha = scales_first("addr", (input, vec1, vec2, *deprecated), beta, alpha)
    check_args("addr", "float", beta=beta, alpha=alpha)
    check_tensors("addr", input=input, vec1=vec1, vec2=vec2)
    check(vec1.ndim == 1, lambda: f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    check(vec2.ndim == 1, lambda: f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    shape = (vec1.shape[0], vec2.shape[0])
    check(broadcast_shape("addr", input.shape, shape) == shape,
          lambda: f"addr: the input {input.shape} does not broadcast to the product's shape {shape}")
    # torch's element-wise kernel: the operands in their promoted dtype, the scales cast to it (a float scale of
    # integers refused), beta * input + (alpha * vec1) * vec2 left to right (alpha * vec1 first: a huge vec1 times
    # alpha < 1 stays finite), each product rounded to the dtype; bools by and and or
    dtype = tensors_result_type("addr", (input, vec1, vec2))
    for name, v in (("beta", beta), ("alpha", alpha)):
        check(not isinstance(v, bool) or dtype == torch.bool, lambda: f"Boolean {name} only supported for Boolean results.")
        check(dtype.is_floating_point or isinstance(v, numbers.Integral),
              lambda: f"For integral input tensors, argument {name} must not be a floating point number.")
    x, column, row = (to(t, dtype) for t in (input, reshape(vec1, (-1, 1)), vec2))
    if dtype == torch.bool:
        product = logical_and(column, row) if alpha else Tensor(torch.zeros(shape, dtype=dtype, device=row.device))
        return logical_or(x, product) if beta else expand(product, shape)
    b, a = (_pw.round_to(float(v), dtype) if dtype in _pw.FLOATS else v for v in (beta, alpha))
    with no_grad():
        out = _scaled_sum("addr", x, mul(column if a == 1 else mul(column, a), row), b, 1)
    if not any(needs_grad(x, column, row)):
        return out

    def grads(g):  # torch's formulas, the scales as given: g beta, (g vec2) alpha, (g^T vec1) alpha
        scaled = lambda t, v: t if v == 1 else mul(t, v)  # noqa: E731
        return (scaled(g, beta).sum_to_size(x.shape), scaled(_reduce_sum(mul(g, row), 1, keepdim=True), alpha),
                scaled(_reduce_sum(mul(g, column), 0), alpha))
    return record_composed("addr", out.memory, (x, column, row), grads, saved=(column, row))


ger = outer


def vdot(input, other):
    """torch.vdot: the dot product of two 1-D tensors (conjugating input, a no-op for tnet's real ones)."""
    check_tensors("vdot", input=input, other=other)
    check(input.dtype == other.dtype, lambda: f"vdot : expected both vectors to have same dtype, but found "
                                              f"{input.dtype} and {other.dtype}")
    return _dot("vdot", input, other)
