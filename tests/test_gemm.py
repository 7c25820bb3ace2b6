"""The GEMM with 16-bit storage (float16, bfloat16): operands, outputs and epilogue, and linear and
matmul under autocast, against torch in float64 of the same rounded values."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet import amp
from tnet.kernels import gemm
from helpers import TOL, assert_close
from test_kernels import f64
from test_no_torch_math import MEMORY_OPS, Recorder

DEV = tnet.DEVICE
LOW = [torch.float16, torch.bfloat16]
TOL16 = TOL["bf16"]  # a 16-bit output: one rounding at the store (bf16 ~4e-3, fp16 ~5e-4)
# Products of 16-bit values are exact in fp32, so an fp32 output differs from float64 only by
# the fp32 sums: TOL["ieee"] holds, and it would not if the output went through 16 bits.


def randn(*shape, dtype=torch.float32, gen=[100]):
    """Normal values rounded to bfloat16 and float16 alike (8 bits of mantissa, small exponents),
    stored in dtype: the same numbers in every dtype, so casts between them are exact."""
    gen[0] += 1
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(gen[0]))
    return x.bfloat16().to(dtype).to(DEV)


@pytest.mark.parametrize("out_dtype", [None, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("dtype", LOW)
def test_matmul_16bit_each_output_dtype(dtype, out_dtype):
    for M, K, N in [(37, 75, 29), (1, 1, 1)]:
        a, b = randn(M, K, dtype=dtype), randn(K, N, dtype=dtype)
        c = gemm.matmul(a, b, out_dtype=out_dtype)
        assert c.dtype == (out_dtype or dtype)
        tol = TOL["ieee"] if c.dtype == torch.float32 else TOL16
        assert_close(c, f64(a) @ f64(b), tol, f"{dtype} -> {c.dtype} {M}x{K}x{N}")


@pytest.mark.parametrize("dtype", LOW)
def test_matmul_16bit_bias_relu_accumulate(dtype):
    a, b = randn(29, 75, dtype=dtype).t(), randn(31, 29, dtype=dtype).t()  # transposed views, no copy
    bias_n, bias_m = randn(31), randn(75, dtype=dtype)  # fp32, or the output's dtype
    ref = f64(a) @ f64(b)
    assert_close(gemm.matmul(a, b, bias=bias_n, relu=True), torch.relu(ref + f64(bias_n)), TOL16, "bias along n + relu")
    assert_close(gemm.matmul(a, b, bias=bias_m, bias_dim=0), ref + f64(bias_m)[:, None], TOL16, "bias along m")
    y = gemm.matmul(a, b, bias=bias_n, out_dtype=torch.float32)
    assert_close(y, ref + f64(bias_n), TOL["ieee"], "fp32 output, fp32 bias")
    out = randn(75, 31, dtype=dtype)
    expect = f64(out) + ref
    gemm.matmul(a, b, out=out, accumulate=True)
    assert out.dtype == dtype
    assert_close(out, expect, TOL16, "accumulate into a 16-bit out")


@pytest.mark.parametrize("dtype", LOW)
def test_matmul_16bit_batched_and_summed(dtype, monkeypatch):
    monkeypatch.setattr(gemm, "SMS", 2)  # as on a GPU with 2 SMs: sum_batch splits the 5 products into 3 parts
    a, b = randn(5, 13, 75, dtype=dtype), randn(5, 75, 7, dtype=dtype)
    ref = f64(a) @ f64(b)
    assert_close(gemm.matmul(a, b), ref, TOL16, "batched")
    assert_close(gemm.matmul(a[0], b), f64(a[0]) @ f64(b), TOL16, "broadcast a")
    assert_close(gemm.matmul(a, b, sum_batch=True), ref.sum(0), TOL16, "summed")
    summed = gemm.matmul(a, b, sum_batch=True, out_dtype=torch.float32)
    assert summed.dtype == torch.float32
    assert_close(summed, ref.sum(0), TOL["ieee"], "summed into fp32")
    out = torch.empty(7, 13, dtype=dtype, device=DEV).t()  # a strided 16-bit out
    gemm.matmul(a, b, sum_batch=True, out=out)
    assert_close(out, ref.sum(0), TOL16, "summed into a strided out")


def test_matmul_fp32_operands_at_16bit_precision():
    """fp32 operands are rounded in registers at the precision asked for, or at a 16-bit
    operand's own; the output is fp32 (torch's type promotion)."""
    a, b = randn(37, 75) * 1.001, randn(75, 29) * 1.001  # not 16-bit values
    ref = f64(a.half()) @ f64(b.half())
    assert_close(gemm.matmul(a, b, precision="fp16"), ref, TOL["ieee"], "precision fp16")
    previous = tnet.set_precision("fp16")
    try:
        assert_close(gemm.matmul(a, b), ref, TOL["ieee"], "default precision fp16")
    finally:
        tnet.set_precision(previous)
    a, b16 = randn(37, 75), randn(75, 29, dtype=torch.bfloat16)
    c = gemm.matmul(a, b16)
    assert c.dtype == torch.float32
    assert_close(c, f64(a) @ f64(b16), TOL["ieee"], "fp32 @ bf16")


def test_matmul_16bit_bad_input():
    a16, b16 = randn(3, 4, dtype=torch.float16), randn(4, 6, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="float16 and bfloat16 do not mix"):
        gemm.matmul(a16, b16)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        gemm.matmul(a16, b16.double())
    with pytest.raises(ValueError, match="out_dtype"):
        gemm.matmul(a16, b16.half(), out_dtype=torch.float64)
    with pytest.raises(ValueError, match="out_dtype"):
        gemm.matmul(a16, b16.half(), out=torch.empty(3, 6, device=DEV), out_dtype=torch.float16)
    with pytest.raises(ValueError, match="bias"):  # bf16 is neither float32 nor the output's float16
        gemm.matmul(a16, b16.half(), bias=randn(6, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="precision"):
        gemm.matmul(a16, b16.half(), precision="fp8")


def pair(*shape, dtype=torch.float32):
    """A tnet leaf of 16-bit-exact values stored in dtype, and the float64 torch leaf."""
    x = randn(*shape, dtype=dtype)
    return tnet.Tensor(x, requires_grad=True), f64(x).requires_grad_()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", LOW)
def test_linear_under_autocast(dtype, bias):
    """The GEMM reads 16-bit copies (a parameter's kept one; a fresh cast of other inputs) and
    writes a 16-bit output; the gradients of the fp32 inputs and parameters are fp32, written
    directly by the GEMM and the reduction from exact products: fp32 accuracy."""
    (x0, x0_ref), (w, w_ref), (b, b_ref) = pair(13, 75), pair(17, 75), pair(17)
    g = randn(13, 17).cpu().numpy()
    x = x0.view(13, 75)  # fp32, not a parameter: cast for the GEMM, not kept
    with tnet.autocast(dtype=dtype):
        y = F.linear(x, w, b if bias else None)
    assert y.dtype == dtype
    ref = tF.linear(x0_ref, w_ref, b_ref if bias else None)
    assert_close(y, ref, TOL16, "forward")
    assert [c.dtype for c in amp.low_copies(w)] == [dtype] and not amp.low_copies(x) and not amp.low_copies(x0)
    y.backward(g)
    ref.backward(torch.tensor(g, dtype=torch.float64))
    for name, t, r in [("x", x0, x0_ref), ("w", w, w_ref)] + ([("b", b, b_ref)] if bias else []):
        assert t.grad.dtype == torch.float32, name
        assert_close(t.grad, r.grad, TOL["ieee"], f"gradient of {name}")


def test_two_linears_under_autocast_pass_16bit_gradients():
    """The hidden activation and its gradient are bf16: the first layer's bias gradient sums a
    bf16 gradient into an fp32 vector."""
    (x, x_ref), (w1, w1_ref), (b1, b1_ref), (w2, w2_ref), (b2, b2_ref) = (
        pair(11, 19), pair(23, 19), pair(23), pair(7, 23), pair(7))
    g = randn(11, 7).cpu().numpy()
    with tnet.autocast(dtype=torch.bfloat16):
        h = F.linear(x, w1, b1)
        y = F.linear(h, w2, b2)
    assert h.dtype == y.dtype == torch.bfloat16
    h_ref = tF.linear(x_ref, w1_ref, b1_ref)
    ref = tF.linear(h_ref, w2_ref, b2_ref)
    assert_close(y, ref, TOL16, "forward")
    y.backward(g)
    ref.backward(torch.tensor(g, dtype=torch.float64))
    for name, t, r in [("x", x, x_ref), ("w1", w1, w1_ref), ("b1", b1, b1_ref), ("w2", w2, w2_ref), ("b2", b2, b2_ref)]:
        assert t.grad.dtype == torch.float32, name
        assert_close(t.grad, r.grad, TOL16, f"gradient of {name}")


def test_matmul_under_autocast_and_with_16bit_tensors():
    (a, a_ref), (b, b_ref) = pair(37, 75), pair(75, 29)
    g = randn(37, 29).cpu().numpy()
    with tnet.autocast(dtype=torch.float16):
        y = F.matmul(a, b)
    assert y.dtype == torch.float16
    ref = a_ref @ b_ref
    assert_close(y, ref, TOL16, "forward under autocast")
    y.backward(g)
    ref.backward(torch.tensor(g, dtype=torch.float64))
    assert a.grad.dtype == b.grad.dtype == torch.float32
    assert_close(a.grad, a_ref.grad, TOL["ieee"], "gradient of a")
    assert_close(b.grad, b_ref.grad, TOL["ieee"], "gradient of b")
    # outside autocast, a user's 16-bit tensors run 16-bit too, gradients in their dtype
    (a, a_ref), (w, w_ref) = pair(37, 75, dtype=torch.bfloat16), pair(29, 75, dtype=torch.bfloat16)
    y = F.linear(a, w)
    assert y.dtype == torch.bfloat16
    ref = tF.linear(a_ref, w_ref)
    assert_close(y, ref, TOL16, "forward in bf16")
    y.backward(g)
    ref.backward(torch.tensor(g, dtype=torch.float64))
    assert a.grad.dtype == w.grad.dtype == torch.bfloat16
    assert_close(a.grad, a_ref.grad, TOL16, "bf16 gradient of a")
    assert_close(w.grad, w_ref.grad, TOL16, "bf16 gradient of w")


def test_linear_under_autocast_uses_torch_for_memory_only():
    (x, _), (w, _), (b, _) = pair(5, 7), pair(3, 7), pair(3)
    with Recorder() as rec:
        with tnet.autocast(dtype=torch.bfloat16):
            y = F.linear(x.view(5, 7), w, b)
        y.backward(np.ones((5, 3)))
    assert rec.ops and rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"
