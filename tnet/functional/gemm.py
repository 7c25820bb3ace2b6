"""Matrix products: matmul and linear (kernels/gemm.py), and the bias gradient that linear
and the convolutions share."""
import torch

from .. import amp
from ..kernels import gemm as _gemm
from ..kernels import reduce as _reduce
from ..kernels.launch import check, is_channels_last
from ..tensor import record
from .inputs import check_tensors, needs_grad


def matmul(a, b):
    """a [M, K] @ b [K, N]. Under autocast the product reads 16-bit operands (amp.cast_operand)
    and returns a 16-bit output; each gradient comes in its input's dtype, written so by the GEMM."""
    check_tensors("matmul", a=a, b=b)
    check(a.ndim == 2 and b.ndim == 2, f"matmul: a and b must be 2-D, got {a.shape} and {b.shape}")
    need_a, need_b = needs_grad(a, b)
    low = amp.get_autocast_dtype()
    A, B = (a.data, b.data) if low is None else (amp.cast_operand(a, low), amp.cast_operand(b, low))
    a_dtype, b_dtype = a.dtype, b.dtype

    def backward(g):
        return (_gemm.matmul(g, B.t(), out_dtype=a_dtype) if need_a else None,
                _gemm.matmul(A.t(), g, out_dtype=b_dtype) if need_b else None)
    return record("matmul", _gemm.matmul(A, B), (a, b), backward, saved=(b if need_a else None, a if need_b else None))


def linear(x, w, b=None):
    """x [N, in] @ w.T + b, with w [out, in] and b [out]. Under autocast the GEMM reads 16-bit
    x and w (amp.cast_operand: an fp32 parameter's kept copy) and writes a 16-bit output, the
    fp32 bias added in its epilogue. Each gradient comes in its input's dtype (fp32 for fp32
    masters), written so by the GEMM or the reduction: no extra cast pass."""
    check_tensors("linear", x=x, w=w)
    check(x.ndim == 2 and w.ndim == 2 and x.shape[1] == w.shape[1],
          f"linear: x is {'x'.join(map(str, x.shape))} but w is {'x'.join(map(str, w.shape))} ([out, in])")
    check(b is None or b.shape == (w.shape[0],), f"linear: b is {None if b is None else b.shape}, expected ({w.shape[0]},)")
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
