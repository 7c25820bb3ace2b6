"""The GEMM (kernels/gemm.py) and matmul and linear (functional/gemm.py) against torch in float64:
fp32 operands at each precision, strides, bias, ReLU and accumulation, batched and summed products,
every tile config, TMA; 16-bit operands, outputs and epilogue; linear and matmul under autocast; matmul
on vectors and batches (leading dims broadcast), linear on any leading dims; cdist."""
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
from triton.runtime.errors import OutOfResources

import tnet
import tnet.functional as F
from tnet import amp
from tnet.kernels import gemm
from tnet.kernels.launch import tile_config
from helpers import DEV, LOW, MEMORY_OPS, TOL, Recorder, assert_close, check_op, f64, host, only_config, pair, randn


@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16"])
@pytest.mark.parametrize("M,K,N", [(37, 75, 29), (1, 1, 1), (67, 131, 17), (128, 64, 96)])
def test_gemm(precision, M, K, N):
    a, b = randn(M, K), randn(K, N)
    assert_close(gemm.matmul(a, b, precision=precision), f64(a) @ f64(b), TOL[precision], f"{precision} {M}x{K}x{N}")


def test_gemm_strides_bias_relu_accumulate():
    a, b = randn(29, 75).t(), randn(31, 29).t()  # transposed views, no copy
    bias_n, bias_m = randn(31), randn(75)
    ref = f64(a) @ f64(b)
    assert_close(gemm.matmul(a, b, bias=bias_n, relu=True, precision="ieee"),
                 torch.relu(ref + f64(bias_n)), TOL["ieee"], "bias along n + relu")
    assert_close(gemm.matmul(a, b, bias=bias_m, bias_dim=0, precision="ieee"),
                 ref + f64(bias_m)[:, None], TOL["ieee"], "bias along m")
    out = randn(75, 31)
    expect = f64(out) + ref
    gemm.matmul(a, b, out=out, accumulate=True, precision="ieee")
    assert_close(out, expect, TOL["ieee"], "accumulate")


def test_gemm_batched_and_summed():
    a, b = randn(3, 13, 75), randn(3, 75, 7)
    assert_close(gemm.matmul(a, b, precision="ieee"), f64(a) @ f64(b), TOL["ieee"], "batched")
    assert_close(gemm.matmul(randn(13, 75) * 0 + a[0], b, precision="ieee"), f64(a[0]) @ f64(b), TOL["ieee"], "broadcast a")
    assert_close(gemm.matmul(a, b, sum_batch=True, precision="ieee"), (f64(a) @ f64(b)).sum(0), TOL["ieee"], "summed")


def test_gemm_tf32_reads_b_from_a_k_major_copy(monkeypatch):
    monkeypatch.setattr(gemm, "TRANSPOSE_MIN", 8)
    a, b = randn(37, 75), randn(75, 29)
    assert_close(gemm.matmul(a, b, precision="tf32"), f64(a) @ f64(b), TOL["tf32"], "2-D")
    a3, b3 = randn(3, 70, 9)[:, :, 1:], randn(9, 3, 41)[1:].transpose(0, 1)  # odd strides
    assert_close(gemm.matmul(a3, b3, precision="tf32"), f64(a3) @ f64(b3), TOL["tf32"], "batched, strided")
    bt = gemm._k_major(b3)
    assert bt.stride(1) == 1 and torch.equal(bt.cpu(), b3.cpu())


def test_gemm_bad_input():
    with pytest.raises(ValueError, match="a is 3x4 but b is 5x6"):
        gemm.matmul(randn(3, 4), randn(5, 6))
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        gemm.matmul(randn(3, 4).double(), randn(4, 6))
    with pytest.raises(ValueError, match="precision"):
        gemm.matmul(randn(3, 4), randn(4, 6), precision="fp8")
    with pytest.raises(ValueError, match="bias"):
        gemm.matmul(randn(3, 4), randn(4, 6), bias=randn(5))


DTYPES = {"tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}  # the operands of each precision
TOLS = {"tf32": TOL["tf32"], "bf16": TOL["bf16"], "fp16": TOL["bf16"]}  # 16-bit outputs: one rounding at the store


@pytest.mark.parametrize("precision", ["tf32", "bf16", "fp16"])
@pytest.mark.parametrize("config", gemm._CONFIGS, ids=lambda c: "x".join(str(v) for v in c.kwargs.values()))
def test_gemm_every_config(config, precision, monkeypatch):
    """Each tile config the GPU's autotuner may pick (the other tests there run the first
    only, TNET_AUTOTUNE=0), in each precision on its own operands (16-bit ones in and out): a
    plain and a split-K GEMM, on sizes that leave every kind of tile edge."""
    only_config(monkeypatch, gemm.gemm_kernel, config)
    monkeypatch.setattr(gemm, "SMS", 2)
    dtype = DTYPES[precision]
    a, b = randn(70, 45).to(dtype), randn(45, 300).to(dtype)
    try:
        c = gemm.matmul(a, b, precision=precision)
    except OutOfResources:  # GPU only: fp32 tiles this big overflow shared memory, so the
        assert precision == "tf32"  # autotuner skips the config for fp32 operands
        return
    assert c.dtype == dtype
    assert_close(c, f64(a) @ f64(b), TOLS[precision], "plain")
    a3, b3 = randn(5, 33, 70).to(dtype), randn(5, 70, 17).to(dtype)
    assert_close(gemm.matmul(a3, b3, sum_batch=True, precision=precision), (f64(a3) @ f64(b3)).sum(0), TOLS[precision],
            "split")


def test_16_bit_tma_tiles_of_an_fp32_c_fit_shared_memory():
    """The 128x256 tile's fp32 C, staged by the epilogue, would overflow shared memory (GPU only):
    the autotuner never tries it; a C of 16 bits keeps every tile."""
    big = tile_config(128, 256, 64, 8, 3, GROUP_M=8)
    configs = [*gemm._TMA16_CONFIGS, big]

    def kept(dtype):
        return gemm._c_tile_fits(configs, {"c_ptr": torch.empty(1, dtype=dtype)})
    assert kept(torch.bfloat16) == kept(torch.float16) == configs
    assert kept(torch.float32) == [c for c in configs if c.kwargs["BLOCK_N"] < 256]
    assert gemm._c_tile_fits([big], {}, c_ptr=torch.empty(1)) == gemm._TMA16_CONFIGS[:1]


TMA_CASES = ([(c, "tf32") for c in gemm._TMA_CONFIGS]
             + [(c, p) for c in gemm._TMA16_CONFIGS for p in ("bf16", "fp16")])


@pytest.mark.parametrize("config,precision", TMA_CASES,
                         ids=lambda v: v if isinstance(v, str) else "x".join(map(str, list(v.kwargs.values())[:3]))
                         + f"_{v.num_warps}w{v.num_stages}s")
def test_gemm_tma_every_config(config, precision, monkeypatch):
    """Large 2-D tf32, bf16 and fp16 products run gemm_tma_kernel (TMA tiles, one program
    walking several output tiles here): B row-major (tf32: copied K-major) or K-major, and
    16-bit A row- or column-major, bias along either axis, ReLU, an fp32 output from 16-bit
    operands, tile edges in M, N and K. Misaligned rows fall back to gemm_kernel."""
    monkeypatch.setattr(gemm, "TRANSPOSE_MIN", 8)
    monkeypatch.setattr(gemm, "SMS", 1)
    only_config(monkeypatch, gemm.gemm_tma_tuned if precision == "tf32" else gemm.gemm_tma16_tuned, config)
    calls = []
    launch = gemm._launch_tma
    monkeypatch.setattr(gemm, "_launch_tma", lambda *a, **k: calls.append(k) or launch(*a, **k))
    dtype = DTYPES[precision]
    a, at, b, bt = (randn(*s).to(dtype) for s in ((144, 136), (136, 144), (136, 88), (88, 136)))
    bias_n, bias_m = randn(88), randn(144)
    tol = TOLS[precision]
    assert_close(gemm.matmul(a, b, bias=bias_n, relu=True), torch.relu(f64(a) @ f64(b) + f64(bias_n)), tol, "B row-major")
    assert_close(gemm.matmul(a, bt.t(), bias=bias_m, bias_dim=0), f64(a) @ f64(bt).t() + f64(bias_m)[:, None], tol,
            "B K-major")
    expect = [(False, True), (False, True)]
    if precision != "tf32":
        expect = [(False, False), (False, True), (True, True)]
        if gemm._c_tile_fits([config], {"c_ptr": torch.empty(0)}) == [config]:  # an fp32 C tile in shared memory
            c = gemm.matmul(at.t(), b, out_dtype=torch.float32)
            assert c.dtype == torch.float32
            assert_close(c, f64(at).t() @ f64(b), TOL["ieee"], "A column-major, fp32 output")
            expect.insert(2, (True, False))
        assert_close(gemm.matmul(at.t(), bt.t()), f64(at).t() @ f64(bt).t(), tol, "A column-major, B K-major")
    assert [(k["a_t"], k["b_t"]) for k in calls] == expect
    a, b = randn(144, 75).to(dtype), randn(75, 88).to(dtype)  # rows of 75 elements: no TMA descriptor
    assert_close(gemm.matmul(a, b), f64(a) @ f64(b), tol, "fallback")
    assert len(calls) == len(expect)


# ---- 16-bit operands and outputs; autocast --------------------------------------------------

TOL16 = TOL["bf16"]  # a 16-bit output: one rounding at the store (bf16 ~4e-3, fp16 ~5e-4)
# Products of 16-bit values are exact in fp32, so an fp32 output differs from float64 only by
# the fp32 sums: TOL["ieee"] holds, and it would not if the output went through 16 bits.


def randn16(*shape, dtype=torch.float32, gen=[100]):
    """Normal values rounded to bfloat16 and float16 alike (8 bits of mantissa, small exponents),
    stored in dtype: the same numbers in every dtype, so casts between them are exact."""
    gen[0] += 1
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(gen[0]))
    return x.bfloat16().to(dtype).to(DEV)


@pytest.mark.parametrize("out_dtype", [None, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("dtype", LOW)
def test_matmul_16bit_each_output_dtype(dtype, out_dtype):
    for M, K, N in [(37, 75, 29), (1, 1, 1)]:
        a, b = randn16(M, K, dtype=dtype), randn16(K, N, dtype=dtype)
        c = gemm.matmul(a, b, out_dtype=out_dtype)
        assert c.dtype == (out_dtype or dtype)
        tol = TOL["ieee"] if c.dtype == torch.float32 else TOL16
        assert_close(c, f64(a) @ f64(b), tol, f"{dtype} -> {c.dtype} {M}x{K}x{N}")


@pytest.mark.parametrize("dtype", LOW)
def test_matmul_16bit_bias_relu_accumulate(dtype):
    a, b = randn16(29, 75, dtype=dtype).t(), randn16(31, 29, dtype=dtype).t()  # transposed views, no copy
    bias_n, bias_m = randn16(31), randn16(75, dtype=dtype)  # fp32, or the output's dtype
    ref = f64(a) @ f64(b)
    assert_close(gemm.matmul(a, b, bias=bias_n, relu=True), torch.relu(ref + f64(bias_n)), TOL16, "bias along n + relu")
    assert_close(gemm.matmul(a, b, bias=bias_m, bias_dim=0), ref + f64(bias_m)[:, None], TOL16, "bias along m")
    y = gemm.matmul(a, b, bias=bias_n, out_dtype=torch.float32)
    assert_close(y, ref + f64(bias_n), TOL["ieee"], "fp32 output, fp32 bias")
    out = randn16(75, 31, dtype=dtype)
    expect = f64(out) + ref
    gemm.matmul(a, b, out=out, accumulate=True)
    assert out.dtype == dtype
    assert_close(out, expect, TOL16, "accumulate into a 16-bit out")


@pytest.mark.parametrize("dtype", LOW)
def test_matmul_16bit_batched_and_summed(dtype, monkeypatch):
    monkeypatch.setattr(gemm, "SMS", 2)  # as on a GPU with 2 SMs: sum_batch splits the 5 products into 3 parts
    a, b = randn16(5, 13, 75, dtype=dtype), randn16(5, 75, 7, dtype=dtype)
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
    a, b = randn16(37, 75) * 1.001, randn16(75, 29) * 1.001  # not 16-bit values
    ref = f64(a.half()) @ f64(b.half())
    assert_close(gemm.matmul(a, b, precision="fp16"), ref, TOL["ieee"], "precision fp16")
    previous = tnet.set_precision("fp16")
    try:
        assert_close(gemm.matmul(a, b), ref, TOL["ieee"], "default precision fp16")
    finally:
        tnet.set_precision(previous)
    a, b16 = randn16(37, 75), randn16(75, 29, dtype=torch.bfloat16)
    c = gemm.matmul(a, b16)
    assert c.dtype == torch.float32
    assert_close(c, f64(a) @ f64(b16), TOL["ieee"], "fp32 @ bf16")


def test_matmul_16bit_bad_input():
    a16, b16 = randn16(3, 4, dtype=torch.float16), randn16(4, 6, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="float16 and bfloat16 do not mix"):
        gemm.matmul(a16, b16)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        gemm.matmul(a16, b16.double())
    with pytest.raises(ValueError, match="out_dtype"):
        gemm.matmul(a16, b16.half(), out_dtype=torch.float64)
    with pytest.raises(ValueError, match="out_dtype"):
        gemm.matmul(a16, b16.half(), out=torch.empty(3, 6, device=DEV), out_dtype=torch.float16)
    with pytest.raises(ValueError, match="bias"):  # bf16 is neither float32 nor the output's float16
        gemm.matmul(a16, b16.half(), bias=randn16(6, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="precision"):
        gemm.matmul(a16, b16.half(), precision="fp8")


def pair16(*shape, dtype=torch.float32):
    """A tnet leaf of 16-bit-exact values stored in dtype, and the float64 torch leaf."""
    x = randn16(*shape, dtype=dtype)
    return tnet.Tensor(x, requires_grad=True), f64(x).requires_grad_()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", LOW)
def test_linear_under_autocast(dtype, bias):
    """The GEMM reads 16-bit copies (a parameter's kept one; a fresh cast of other inputs) and
    writes a 16-bit output; the gradients of the fp32 inputs and parameters are fp32, written
    directly by the GEMM and the reduction from exact products: fp32 accuracy."""
    (x0, x0_ref), (w, w_ref), (b, b_ref) = pair16(13, 75), pair16(17, 75), pair16(17)
    g = randn16(13, 17).cpu().numpy()
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
        pair16(11, 19), pair16(23, 19), pair16(23), pair16(7, 23), pair16(7))
    g = randn16(11, 7).cpu().numpy()
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
    (a, a_ref), (b, b_ref) = pair16(37, 75), pair16(75, 29)
    g = randn16(37, 29).cpu().numpy()
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
    (a, a_ref), (w, w_ref) = pair16(37, 75, dtype=torch.bfloat16), pair16(29, 75, dtype=torch.bfloat16)
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
    (x, _), (w, _), (b, _) = pair16(5, 7), pair16(3, 7), pair16(3)
    with Recorder() as rec:
        with tnet.autocast(dtype=torch.bfloat16):
            y = F.linear(x.view(5, 7), w, b)
        y.backward(np.ones((5, 3)))
    assert rec.ops and rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


# ---- matmul and linear through the tape -----------------------------------------------------

def test_matmul(rng, ieee):
    check_op(F.matmul, torch.matmul, [pair(rng, 37, 75), pair(rng, 75, 29)], TOL["ieee"], rng)


@pytest.mark.parametrize("bias", [True, False])
def test_linear(rng, ieee, bias):
    inputs = [pair(rng, 13, 75), pair(rng, 17, 75)] + ([pair(rng, 17)] if bias else [])
    check_op(F.linear, tF.linear, inputs, TOL["ieee"], rng)


# ---- matmul and linear on torch's other shapes ---------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((7,), (7,)), ((3, 7), (7,)), ((7,), (7, 4)), ((2, 3, 7), (7, 4)),
                                   ((2, 3, 7), (2, 7, 4)), ((3, 7), (2, 5, 7, 4)), ((2, 5, 3, 7), (2, 5, 7, 4)),
                                   ((7,), (2, 7, 4)), ((2, 3, 7), (7,))])
def test_matmul_vectors_and_batches(rng, ieee, sa, sb):
    """torch.matmul's shapes: dot, matrix-vector, leading dims folded into rows, batches (a shared
    2-D operand's gradient summed over the batch)."""
    check_op(F.matmul, torch.matmul, [pair(rng, *sa), pair(rng, *sb)], TOL["ieee"], rng)
    check_op(lambda a, b: a @ b, lambda a, b: a @ b, [pair(rng, *sa), pair(rng, *sb)], TOL["ieee"], rng)


@pytest.mark.parametrize("sa,sb", [((2, 4, 3, 5), (4, 5, 2)), ((2, 1, 3, 5), (4, 5, 2)), ((3, 5), (2, 5, 4)),
                                   ((4, 1, 3, 5), (1, 5, 2)), ((1, 3, 5), (2, 2, 5, 4)), ((3, 1, 2, 5), (1, 4, 5, 3)),
                                   ((2, 1, 3, 5), (2, 3, 5, 2)), ((5,), (3, 1, 5, 2)), ((2, 1, 3, 5), (5,))])
def test_matmul_broadcasts_leading_dims(rng, ieee, sa, sb):
    """Leading dims broadcast as torch's (one operand's missing or of size 1, or both's), each
    operand's gradient summed back over the dims it was broadcast along."""
    check_op(F.matmul, torch.matmul, [pair(rng, *sa), pair(rng, *sb)], TOL["ieee"], rng)


def test_matmul_broadcast_is_a_view_where_strides_allow(rng, monkeypatch):
    """An operand of the broadcast leading dims, or one matrix under size-1 dims, reaches the
    GEMM as a view of its memory; one expanded along some dims only is copied once (torch copies
    there too: expanded strides of 0 and n do not merge into one batch stride)."""
    from tnet.kernels import gemm
    seen = []
    real = gemm.matmul
    monkeypatch.setattr(gemm, "matmul", lambda a, b, **kw: seen.append((a, b)) or real(a, b, **kw))
    a, b = pair(rng, 1, 1, 3, 5)[0], pair(rng, 2, 6, 5, 2)[0]
    F.matmul(a, b)
    assert seen[-1][0].data_ptr() == a.memory.data_ptr() and seen[-1][1].data_ptr() == b.memory.data_ptr()
    a, b = pair(rng, 6, 3, 5)[0], pair(rng, 2, 6, 5, 2)[0]
    F.matmul(a, b)
    assert seen[-1][0].data_ptr() != a.memory.data_ptr() and seen[-1][0].shape == (12, 3, 5)
    assert seen[-1][1].data_ptr() == b.memory.data_ptr()


def test_matmul_shape_errors(rng):
    with pytest.raises(ValueError, match="a is 3x7 but b is 6x2"):
        F.matmul(pair(rng, 3, 7)[0], pair(rng, 6, 2)[0])
    with pytest.raises(RuntimeError, match="do not broadcast"):
        F.matmul(pair(rng, 2, 3, 7)[0], pair(rng, 3, 7, 2)[0])


@pytest.mark.parametrize("shape", [(7,), (2, 3, 7), (2, 1, 3, 7)])
def test_linear_any_leading_dims(rng, ieee, shape):
    check_op(F.linear, tF.linear, [pair(rng, *shape), pair(rng, 5, 7), pair(rng, 5)], TOL["ieee"], rng)
    layer = tnet.nn.Linear(7, 5)
    ref = torch.nn.Linear(7, 5).double()
    ref.weight.data, ref.bias.data = layer.weight.memory.double().cpu(), layer.bias.memory.double().cpu()
    check_op(layer, ref, [pair(rng, *shape)], TOL["ieee"], rng)


# ---- cdist ------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, 0.5, math.inf])
@pytest.mark.parametrize("s1,s2", [((5, 3), (4, 3)), ((2, 5, 3), (2, 4, 3)), ((3, 1, 4, 2), (2, 5, 2))])
def test_cdist_as_torch(rng, ieee, p, s1, s2):
    """Every p on the direct path (small P and R), leading dims broadcast, a row of x1 equal to one
    of x2 (a zero distance: gradient 0, as torch's)."""
    x1, x2 = pair(rng, *s1), pair(rng, *s2)
    for t in (x1, x2):
        t[0].memory.view(-1, s1[-1])[0] = t[1].data.view(-1, s1[-1])[0] = 0.25  # equal rows somewhere
    if p == 0:  # torch's gradient of p = 0 has its own shape; the values are the count of nonzeros
        np.testing.assert_array_equal(tnet.cdist(x1[0], x2[0], p).numpy(), torch.cdist(x1[1], x2[1], p).detach())
        return
    check_op(lambda a, b: tnet.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p), [x1, x2], TOL["ieee"], rng)


@pytest.mark.parametrize("s1,s2,mode", [((30, 7), (6, 7), "use_mm_for_euclid_dist_if_necessary"),
                                        ((2, 27, 5), (1, 9, 5), "use_mm_for_euclid_dist_if_necessary"),
                                        ((3, 4, 5), (3, 6, 5), "use_mm_for_euclid_dist"),
                                        ((30, 7), (26, 7), "donot_use_mm_for_euclid_dist")])
def test_cdist_euclidean_through_the_gemm(rng, ieee, s1, s2, mode):
    """p = 2 through the GEMM identity where torch takes it (P or R over 25, or asked), its
    gradient through GEMMs; against torch's same path in float64."""
    x1, x2 = pair(rng, *s1), pair(rng, *s2)
    out = check_op(lambda a, b: tnet.cdist(a, b, compute_mode=mode), lambda a, b: torch.cdist(a, b, compute_mode=mode),
                   [x1, x2], 1e-4, rng)
    assert out.shape == torch.cdist(x1[1], x2[1]).shape


def test_cdist_euclidean_gemm_is_clamped_and_zero_distances_have_no_gradient(rng):
    x = pair(rng, 30, 4)[0]
    d = tnet.cdist(x, x)  # the diagonal: |a|^2 + |a|^2 - 2 a.a, rounding below 0 clamped
    assert not np.isnan(d.numpy()).any() and np.abs(np.diag(d.numpy())).max() < 1e-2
    y = tnet.tensor(np.zeros((30, 4)), requires_grad=True)
    tnet.cdist(y, tnet.tensor(np.zeros((3, 4)))).sum().backward()
    assert not y.grad.numpy().any()


def test_cdist_errors_as_torch(rng):
    a, b = pair(rng, 3, 4)[0], pair(rng, 5, 4)[0]
    with pytest.raises(RuntimeError, match="non-negative p"):
        tnet.cdist(a, b, -1.0)
    with pytest.raises(RuntimeError, match="same number of columns"):
        tnet.cdist(a, pair(rng, 5, 3)[0])
    with pytest.raises(RuntimeError, match="at least 2D"):
        tnet.cdist(pair(rng, 4)[0], b)
    with pytest.raises(ValueError, match="not a valid value for compute_mode"):
        tnet.cdist(a, b, compute_mode="fast")


# ---- the tensor surface of the eighth session (ops3): more matrix products ----------------------

def _leaf(rng, *shape):
    t = tnet.tensor(rng.standard_normal(shape), requires_grad=True)
    return t, t.memory.double().detach().requires_grad_(True)


@pytest.mark.parametrize("name,shapes", [("addbmm", ((3, 4), (2, 3, 5), (2, 5, 4))), ("addbmm", ((4,), (2, 3, 5), (2, 5, 4))),
                                         ("addmv", ((3,), (3, 5), (5,))), ("addmv", ((1,), (3, 5), (5,))),
                                         ("addr", ((3, 4), (3,), (4,))), ("addr", ((1, 4), (3,), (4,)))])
def test_add_products_values_and_gradients_as_torch(rng, ieee, name, shapes):
    inputs = [_leaf(rng, *s) for s in shapes]
    check_op(lambda *xs: getattr(tnet, name)(*xs, beta=0.5, alpha=-2.0),
             lambda *xs: getattr(torch, name)(*xs, beta=0.5, alpha=-2.0), [_leaf(rng, *s) for s in shapes], TOL["ieee"], rng)
    method = lambda *xs: getattr(xs[0], name)(*xs[1:])  # noqa: E731
    check_op(method, method, inputs, TOL["ieee"], rng)
    nan_input = tnet.full(shapes[0], float("nan"))  # beta=0 ignores input, its NaN too
    assert not getattr(tnet, name)(nan_input, *[x for x, _ in inputs[1:]], beta=0).isnan().any()


@pytest.mark.parametrize("name,shapes", [("addmm", ((2,), (2, 3), (3, 2))), ("addmv", ((2,), (2, 3), (3,))),
                                         ("addbmm", ((2, 2), (2, 2, 3), (2, 3, 2))),
                                         ("baddbmm", ((1, 2, 2), (2, 2, 3), (2, 3, 2))), ("addr", ((2, 2), (2,), (2,)))])
def test_add_products_beta_0_give_input_g_times_0(name, shapes):
    # torch's backward scales g by beta even at 0: an inf in g is a NaN in input's gradient
    grads = []
    for lib in (torch, tnet):
        x = lib.ones(*shapes[0], requires_grad=True)
        y = getattr(lib, name)(x, *(lib.ones(*s) for s in shapes[1:]), beta=0)
        g = lib.ones(*y.shape)
        g.view(-1)[0] = math.inf
        y.backward(g)
        grads.append(x.grad)
    torch.testing.assert_close(host(grads[1]), grads[0], equal_nan=True)


def test_add_products_in_place_and_empty(rng, ieee):
    x, ref = tnet.tensor(rng.standard_normal((3, 4))), torch.tensor(rng.standard_normal((3, 4)))
    x.memory.copy_(ref)
    ref = ref.double()
    m1, m2, b1, b2, v1, v2 = (rng.standard_normal(s) for s in ((3, 5), (5, 4), (2, 3, 5), (2, 5, 4), (3,), (4,)))
    T, R = tnet.tensor, lambda a: torch.tensor(a)
    for method, args in (("addmm_", (m1, m2)), ("addbmm_", (b1, b2)), ("addr_", (v1, v2))):
        assert getattr(x, method)(*map(T, args), beta=0.5, alpha=2) is x
        getattr(ref, method)(*map(R, args), beta=0.5, alpha=2)
        assert_close(x, ref, TOL["ieee"], method)
    y, yr = tnet.zeros(2, 3, 4), torch.zeros(2, 3, 4, dtype=torch.float64)
    y.baddbmm_(T(b1), T(b2)), yr.baddbmm_(R(b1), R(b2))
    assert_close(y, yr, TOL["ieee"], "baddbmm_")
    v, vr = tnet.ones(3), torch.ones(3, dtype=torch.float64)
    tnet.addmv_(v, T(m1), T(m1[0])), torch.addmv_(vr, R(m1), R(m1[0]))
    assert_close(v, vr, TOL["ieee"], "addmv_")
    # empty batches and vectors: input (times beta) alone
    assert_close(tnet.addbmm(T(m1[:, :4] * 0 + 1), tnet.zeros(0, 3, 2), tnet.zeros(0, 2, 4)), np.ones((3, 4)), 0, "addbmm empty")
    assert tnet.addr(tnet.zeros(0, 4), tnet.zeros(0), T(v2)).shape == (0, 4)
    assert_close(tnet.addmv(tnet.ones(3), tnet.zeros(3, 0), tnet.zeros(0), beta=2), np.full(3, 2.0), 0, "addmv empty")


@pytest.mark.parametrize("call", ["addmm(2, x, m1, m2)", "addmm(2, x, -3, m1, m2)", "x.addmm(2, -3, m1, m2)",
                                  "x.addmm(2, m1, m2)", "x.clone().addmm_(1, -2, m1, m2)",
                                  "baddbmm(0.5, y, 2, b1, b2)", "y.clone().baddbmm_(0.5, b1, b2)",
                                  "x.addbmm(0.5, 2, b1, b2)", "addr(0.5, x, 2, v1, v2)", "v.addmv_(2, -1, m3, v2)"])
def test_add_products_deprecated_scales_first_as_torch(rng, ieee, call):
    """torch's overloads from before 1.5 with beta (and alpha) first, which center-loss's
    `distmat.addmm_(1, -2, x, centers.t())` writes: the values and a UserWarning, as torch's (whose warning
    comes once a process: tnet's alone is checked)."""
    shapes = {"x": (3, 4), "m1": (3, 5), "m2": (5, 4), "y": (2, 3, 4), "b1": (2, 3, 5), "b2": (2, 5, 4), "v1": (3,),
              "v2": (4,), "v": (5,), "m3": (5, 4)}
    values = {k: rng.standard_normal(s) for k, s in shapes.items()}
    outs = []
    for lib in (tnet, torch):
        names = {k: lib.tensor(v, dtype=lib.float32) for k, v in values.items()}
        call_of = call if call[0] in "xyv" else "lib." + call
        with pytest.warns(UserWarning, match="deprecated") if lib is tnet else warnings.catch_warnings():
            outs.append(eval(call_of, {"lib": lib, **names}))
    assert_close(outs[0], outs[1].double(), TOL["ieee"], call)
    with pytest.raises(TypeError):
        tnet.addmm(tnet.zeros(3, 4), 2, 3, tnet.zeros(3, 5))


def test_chain_matmul_vdot_ger_and_errors_as_torch(rng, ieee):
    mats = [_leaf(rng, *s) for s in ((3, 4), (4, 2), (2, 5))]
    check_op(tnet.chain_matmul, torch.chain_matmul, mats, TOL["ieee"], rng)
    one = tnet.chain_matmul(mats[0][0])
    assert one is not mats[0][0] and np.array_equal(one.detach().numpy(), mats[0][0].detach().numpy())
    check_op(tnet.vdot, torch.vdot, [_leaf(rng, 6), _leaf(rng, 6)], TOL["ieee"], rng)
    check_op(lambda a, b: a.ger(b), lambda a, b: a.ger(b), [_leaf(rng, 3), _leaf(rng, 2)], TOL["ieee"], rng)
    for fn, args in ((tnet.addbmm, (tnet.zeros(3, 4), tnet.zeros(3, 5), tnet.zeros(2, 5, 4))),
                     (tnet.addbmm, (tnet.zeros(3, 4), tnet.zeros(2, 3, 5), tnet.zeros(3, 5, 4))),
                     (tnet.addbmm, (tnet.zeros(3, 4), tnet.zeros(2, 3, 5), tnet.zeros(2, 6, 4))),
                     (tnet.addmv, (tnet.zeros(3), tnet.zeros(3, 5), tnet.zeros(4))),
                     (tnet.addr, (tnet.zeros(3, 4), tnet.zeros(3, 1), tnet.zeros(4))),
                     (tnet.addr, (tnet.zeros(2, 4), tnet.zeros(3), tnet.zeros(4))),
                     (tnet.chain_matmul, (tnet.zeros(2, 3), tnet.zeros(2, 3, 4))), (tnet.chain_matmul, ()),
                     (tnet.vdot, (tnet.zeros(3), tnet.zeros(4)))):
        ref_args = [torch.zeros(a.shape, dtype=torch.float64) for a in args]
        with pytest.raises(RuntimeError):
            getattr(torch, fn.__name__)(*ref_args)
        with pytest.raises(RuntimeError):
            fn(*args)
