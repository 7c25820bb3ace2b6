"""Matrix products: matmul and linear (kernels/gemm.py), and the bias gradient that linear
and the convolutions share."""
import torch

from .. import amp
from ..kernels import gemm as _gemm
from ..kernels import reduce as _reduce
from ..kernels.launch import check, is_channels_last
from ..tensor import record
from .copy import reshape
from .inputs import check_tensors, needs_grad


def _matmul2d(a, b):
    """a [M, K] @ b [K, N]. Under autocast the product reads 16-bit operands (amp.cast_operand)
    and returns a 16-bit output; each gradient comes in its input's dtype, written so by the GEMM."""
    need_a, need_b = needs_grad(a, b)
    low = amp.get_autocast_dtype()
    A, B = (a.data, b.data) if low is None else (amp.cast_operand(a, low), amp.cast_operand(b, low))
    a_dtype, b_dtype = a.dtype, b.dtype

    def backward(g):
        return (_gemm.matmul(g, B.t(), out_dtype=a_dtype) if need_a else None,
                _gemm.matmul(A.t(), g, out_dtype=b_dtype) if need_b else None)
    return record("matmul", _gemm.matmul(A, B), (a, b), backward, saved=(b if need_a else None, a if need_b else None))


def _bmm(a, b):
    """a [batch, M, K] or [M, K] @ b [batch, K, N]: a batch of products (a 2-D a is shared by
    the batch, its gradient the sum over the batch). Autocast and dtypes as _matmul2d."""
    need_a, need_b = needs_grad(a, b)
    low = amp.get_autocast_dtype()
    A, B = (a.data, b.data) if low is None else (amp.cast_operand(a, low), amp.cast_operand(b, low))
    a_dtype, b_dtype = a.dtype, b.dtype

    def backward(g):
        return (_gemm.matmul(g, B.transpose(-1, -2), out_dtype=a_dtype, sum_batch=A.dim() == 2) if need_a else None,
                _gemm.matmul(A.transpose(-1, -2), g, out_dtype=b_dtype) if need_b else None)
    return record("matmul", _gemm.matmul(A, B), (a, b), backward, saved=(b if need_a else None, a if need_b else None))


def matmul(a, b):
    """torch.matmul: 1-D operands are vectors (a dot product, matrix-vector, vector-matrix);
    [..., M, K] @ [K, N] folds the leading dims into M; [..., M, K] @ [..., K, N] is a batch of
    products over equal leading dims (or a 2-D a shared by the batch). Other broadcasts of the
    leading dims are not supported. Under autocast the GEMMs read 16-bit operands and return
    16-bit outputs; each gradient comes in its input's dtype."""
    check_tensors("matmul", a=a, b=b)
    check(a.ndim >= 1 and b.ndim >= 1,
          lambda: f"matmul: both arguments need at least 1 dimension, got {a.shape} and {b.shape}")
    K = a.shape[-1]
    check(K == b.shape[-2 if b.ndim > 1 else 0],
          lambda: f"matmul: a is {'x'.join(map(str, a.shape))} but b is {'x'.join(map(str, b.shape))}: they cannot be multiplied")
    if a.ndim == b.ndim == 2:
        return _matmul2d(a, b)
    if b.ndim == 1:  # a matrix (or batch) times a vector: a column, dropped after
        return reshape(matmul(a, reshape(b, K, 1)), *a.shape[:-1])
    if a.ndim == 1:
        return reshape(matmul(reshape(a, 1, K), b), *b.shape[:-2], b.shape[-1])
    M, N = a.shape[-2], b.shape[-1]
    if b.ndim == 2:  # the leading dims of a fold into its rows
        return reshape(_matmul2d(reshape(a, -1, K), b), *a.shape[:-1], N)
    lead = b.shape[:-2]
    check(a.ndim == 2 or a.shape[:-2] == lead,
          lambda: f"matmul: the leading dims of {a.shape} and {b.shape} differ (tnet does not broadcast them)")
    out = _bmm(a if a.ndim == 2 else reshape(a, -1, M, K), reshape(b, -1, K, N))
    return reshape(out, *lead, M, N)


def cov(x, *, correction=1, fweights=None, aweights=None):
    """torch.cov: the covariance matrix of the variables in x's rows over its columns, the
    observations (x [vars, obs], or [obs] for one variable: a 0-d result), dividing by
    obs - correction (at most 0: infinities, as torch); differentiable. Observation weights (fweights, aweights) raise
    NotImplementedError."""
    check_tensors("cov", input=x)
    check(x.ndim <= 2, lambda: f"cov: expected input to have two or fewer dimensions but got an input with {x.ndim} "
                               f"dimensions")
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov: fweights and aweights are not supported")
    rows = reshape(x, 1, -1) if x.ndim < 2 else x
    centred = rows - rows.mean(1, keepdim=True)
    dof = rows.shape[1] - correction
    out = matmul(centred, centred.t()) * (1.0 / dof if dof > 0 else float("inf"))  # x / 0 as torch: inf, or NaN
    return reshape(out) if x.ndim < 2 else out


def linear(x, w, b=None):
    """x [N, in] @ w.T + b, with w [out, in] and b [out]; x may also be [in] or [..., in], as
    torch's (the leading dims are the rows of one GEMM). Under autocast the GEMM reads 16-bit
    x and w (amp.cast_operand: an fp32 parameter's kept copy) and writes a 16-bit output, the
    fp32 bias added in its epilogue. Each gradient comes in its input's dtype (fp32 for fp32
    masters), written so by the GEMM or the reduction: no extra cast pass."""
    check_tensors("linear", x=x, w=w)
    check(x.ndim >= 1 and w.ndim == 2 and x.shape[-1] == w.shape[1],
          lambda: f"linear: x is {'x'.join(map(str, x.shape))} but w is {'x'.join(map(str, w.shape))} ([out, in])")
    if x.ndim != 2:  # [in] or [..., in]: the leading dims as rows
        return reshape(linear(reshape(x, -1, x.shape[-1]), w, b), *x.shape[:-1], w.shape[0])
    check(x.ndim == 2 and w.ndim == 2 and x.shape[1] == w.shape[1],
          lambda: f"linear: x is {'x'.join(map(str, x.shape))} but w is {'x'.join(map(str, w.shape))} ([out, in])")
    check(b is None or b.shape == (w.shape[0],),
          lambda: f"linear: b is {None if b is None else b.shape}, expected ({w.shape[0]},)")
    need_x, need_w, need_b = needs_grad(x, w, b)
    low = amp.get_autocast_dtype()
    X, W = (x.data, w.data) if low is None else (amp.cast_operand(x, low), amp.cast_operand(w, low))
    x_dtype, w_dtype, b_dtype = x.dtype, w.dtype, None if b is None else b.dtype

    def backward(g):
        return (_gemm.matmul(g, W, out_dtype=x_dtype) if need_x else None,
                _gemm.matmul(g.t(), X, out_dtype=w_dtype) if need_w else None,
                bias_grad(g, b_dtype) if need_b else None)
    y = _gemm.matmul(X, W.t(), bias=None if b is None else b.data, bias_dim=1)
    return record("linear", y, (x, w) if b is None else (x, w, b), backward,
                  saved=(w if need_x else None, x if need_w else None))


def bias_grad(g, dtype):
    """The bias gradient of a linear layer or a convolution: g [N, C] or [N, C, H, W] summed
    over all axes but C, in fp32, written in dtype."""
    out = torch.empty(g.shape[1], device=g.device, dtype=dtype)
    if is_channels_last(g):
        return _reduce.sum_except(g.permute(0, 2, 3, 1).view(-1, g.shape[1]), 1, out=out)
    return _reduce.sum_except(g, 1, out=out)
