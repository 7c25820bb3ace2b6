"""Each kernel against torch in float64, on odd shapes (K = 75, primes, 1x1)."""
import pytest
import torch
import torch.nn.functional as tF
from triton.runtime.errors import OutOfResources

import tnet
from tnet.kernels import gemm, pointwise, pool, reduce, softmax
from tnet.kernels.launch import is_channels_last
from helpers import CONFIG_DTYPES, LOW, TOL, assert_close, only_config, tol_for

DEV = tnet.DEVICE


def randn(*shape, gen=[0]):
    gen[0] += 1
    g = torch.Generator().manual_seed(gen[0])
    return torch.randn(*shape, generator=g).to(DEV)


def f64(x):
    return x.double().cpu()


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


def test_autotuned_kernel_remembers_each_key():
    """After its first launch a tuning key skips Triton's autotuner; a new dtype is a new key."""
    a, b = randn(19, 23), randn(23, 11)
    gemm.gemm_kernel.chosen.clear()
    for _ in range(2):
        assert_close(gemm.matmul(a, b, precision="ieee"), f64(a) @ f64(b), TOL["ieee"], "fp32")
    assert len(gemm.gemm_kernel.chosen) == 1
    a16, b16 = a.bfloat16(), b.bfloat16()
    assert_close(f64(gemm.matmul(a16, b16)), f64(a16) @ f64(b16), TOL["bf16"], "bf16")
    assert len(gemm.gemm_kernel.chosen) == 2


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
        c = gemm.matmul(at.t(), b, out_dtype=torch.float32)
        assert c.dtype == torch.float32
        assert_close(c, f64(at).t() @ f64(b), TOL["ieee"], "A column-major, fp32 output")
        assert_close(gemm.matmul(at.t(), bt.t()), f64(at).t() @ f64(bt).t(), tol, "A column-major, B K-major")
        expect = [(False, False), (False, True), (True, False), (True, True)]
    assert [(k["a_t"], k["b_t"]) for k in calls] == expect
    a, b = randn(144, 75).to(dtype), randn(75, 88).to(dtype)  # rows of 75 elements: no TMA descriptor
    assert_close(gemm.matmul(a, b), f64(a) @ f64(b), tol, "fallback")
    assert len(calls) == len(expect)


POOLS = [((3, 3), (2, 2), (0, 0), True), ((3, 3), (2, 2), (1, 1), True), ((2, 2), (2, 2), (0, 0), False),
         ((3, 2), (1, 2), (1, 1), False), ((1, 1), (1, 1), (0, 0), False),
         ((2, 3), (3, 2), (0, 1), True), ((5, 5), (2, 3), (2, 2), False)]  # gaps between windows; 3 and 2 per row


def torch_pool(mode, x, kernel, stride, padding, ceil_mode=False):
    if mode == "max":
        return tF.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode)
    return tF.avg_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode, count_include_pad=True)


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", POOLS)
def test_pool(mode, kernel, stride, padding, ceil_mode, dtype=torch.float32):
    x = randn(2, 3, 13, 8).to(dtype)
    xd = f64(x).requires_grad_(True)
    ref = torch_pool(mode, xd, kernel, stride, padding, ceil_mode)
    y, arg = pool.pool2d(x, kernel, stride, padding, ceil_mode, mode)
    assert y.dtype == dtype
    assert_close(y, ref, tol_for(dtype, 1e-6), f"{mode} forward {dtype}")
    g = randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    dx = pool.pool2d_backward(g, arg, x.shape, kernel, stride, padding, mode)
    assert dx.dtype == dtype
    assert_close(dx, xd.grad, tol_for(dtype, 1e-6), f"{mode} backward {dtype}")


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pool_16_bit(dtype, mode):
    """16-bit pooling, and as conv2d_relu_pool2d runs it: a channels-last ReLU output pooled into
    NCHW, the ReLU's mask applied in the backward."""
    test_pool(mode, *POOLS[1], dtype=dtype)
    pre = randn(2, 16, 9, 7).to(dtype)
    relu_out = pointwise.relu(pre.contiguous(memory_format=torch.channels_last))
    xd = f64(pre).requires_grad_(True)
    ref = torch_pool(mode, torch.relu(xd), (3, 3), (2, 2), (1, 1))
    y, arg = pool.pool2d(relu_out, (3, 3), (2, 2), (1, 1), False, mode, channels_last=False)
    assert y.dtype == dtype and y.is_contiguous()
    assert_close(y, ref, tol_for(dtype), f"{mode} forward")
    g = randn(*ref.shape).to(dtype)
    ref.backward(f64(g))
    dx = pool.pool2d_backward(g, arg, pre.shape, (3, 3), (2, 2), (1, 1), mode, relu_input=relu_out,
                              x_channels_last=True, y_channels_last=False)
    assert dx.dtype == dtype and is_channels_last(dx)
    assert_close(dx, xd.grad, tol_for(dtype), f"{mode} backward through the ReLU")


def test_max_pool_ties_take_first_in_row_major_order():
    x = torch.zeros(1, 1, 4, 4, device=DEV)  # all ties
    y, arg = pool.pool2d(x, (3, 3), (2, 2), (0, 0), True, "max")
    assert arg.dtype == torch.int8 and arg.cpu().flatten().tolist() == [0, 0, 0, 0]  # each window's first tap
    dx = pool.pool2d_backward(torch.ones_like(y), arg, x.shape, (3, 3), (2, 2), (0, 0), "max")
    assert torch.nonzero(dx.cpu().flatten()).flatten().tolist() == [0, 2, 8, 10]  # rows 0 and 2, columns 0 and 2


def test_relu(dtype=torch.float32):
    x = randn(1000 + 7).to(dtype)
    y = pointwise.relu(x)
    assert_close(y, torch.relu(f64(x)), 0, "relu")  # exact in every dtype
    g = randn(1007).to(dtype)
    dx = pointwise.relu_backward(y, g)
    assert y.dtype == dx.dtype == dtype
    assert_close(dx, f64(g) * (f64(x) > 0), 0, "relu backward")


def test_add_scale(dtype=torch.float32):
    x, y = randn(301).to(dtype), randn(301).to(dtype)
    expect = f64(x) + f64(y)
    assert_close(pointwise.add_(x, y), expect, tol_for(dtype, 1e-7), "add_")
    s = torch.full((1,), 2.5, device=DEV)
    assert_close(pointwise.scale_(x, s), expect * 2.5, tol_for(dtype, 1e-7), "scale_")
    assert x.dtype == dtype


@pytest.mark.parametrize("dtype", LOW)
def test_elementwise_16_bit(dtype):
    test_relu(dtype)
    test_add_scale(dtype)
    x, y = randn(301), randn(301).to(dtype)  # a 16-bit gradient into an fp32 sum; a 16-bit scale
    expect = f64(x) + f64(y)
    assert_close(pointwise.add_(x, y), expect, 1e-7, "fp32 += 16-bit")
    assert_close(pointwise.scale_(x, torch.full((1,), -0.5, dtype=dtype, device=DEV)), -0.5 * expect, 1e-7, "scale_")


@pytest.mark.parametrize("R,C", [(37, 10), (1, 1), (5, 131)])
def test_softmax(R, C, dtype=torch.float32):
    x = (randn(R, C) * 5).to(dtype)
    y = softmax.softmax(x)
    xd = f64(x).requires_grad_(True)
    ref = torch.softmax(xd, 1)
    assert_close(y, ref, tol_for(dtype, 1e-6), "softmax")
    g = randn(R, C).to(dtype)
    ref.backward(f64(g))
    assert_close(softmax.softmax_backward(y, g), xd.grad, tol_for(dtype), "softmax backward")
    y = softmax.log_softmax(x)
    xd.grad = None
    ref = torch.log_softmax(xd, 1)
    assert_close(y, ref, tol_for(dtype, 1e-6), "log_softmax")
    ref.backward(f64(g))
    dx = softmax.log_softmax_backward(y, g)
    assert y.dtype == dx.dtype == dtype
    assert_close(dx, xd.grad, tol_for(dtype), "log_softmax backward")


@pytest.mark.parametrize("dtype", LOW)
def test_softmax_16_bit(dtype):
    """16-bit rows; and fp32 outputs of 16-bit logits (tnet.autocast's softmax), whose fp32 math
    then shows at fp32's tolerance, with the input's gradient back in 16 bits."""
    test_softmax(5, 131, dtype)
    x = (randn(37, 10) * 5).to(dtype)
    xd = f64(x).requires_grad_(True)
    ref = torch.softmax(xd, 1)
    y = softmax.softmax(x, torch.float32)
    assert y.dtype == torch.float32
    assert_close(y, ref, 1e-6, "fp32 softmax of 16-bit logits")
    g = randn(37, 10)
    ref.backward(f64(g))
    dx = softmax.softmax_backward(y, g, dtype)
    assert dx.dtype == dtype
    assert_close(dx, xd.grad, tol_for(dtype), "its gradient")
    assert_close(softmax.log_softmax(x, torch.float32), torch.log_softmax(f64(x), 1), 1e-6, "fp32 log_softmax")


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("R,C", [(37, 10), (1, 1), (300, 7), (2100, 10)])  # the last in 3 steps
def test_cross_entropy(R, C, smoothing):
    x = randn(R, C) * 5
    labels = torch.randint(0, C, (R,), generator=torch.Generator().manual_seed(R)).to(DEV)
    xd = f64(x).requires_grad_(True)
    ref = tF.cross_entropy(xd, labels.cpu(), label_smoothing=smoothing)
    ref.backward()
    loss, dx = softmax.cross_entropy(x, labels, smoothing)
    assert_close(loss, ref, 1e-6, "loss")
    assert_close(dx, xd.grad, 1e-5, "dlogits")
    count = torch.zeros((), dtype=torch.int32, device=DEV)
    softmax.count_correct(x, labels, count)
    assert count.item() == (f64(x).argmax(1) == labels.cpu()).sum().item()


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cross_entropy_reductions_and_ignore_index(reduction):
    x = randn(37, 10) * 5
    labels = torch.randint(0, 10, (37,), generator=torch.Generator().manual_seed(3))
    labels[[0, 5, 36]] = -100  # ignored, and left out of the mean
    xd = f64(x).requires_grad_(True)
    ref = tF.cross_entropy(xd, labels, reduction=reduction, label_smoothing=0.1)
    loss, dx = softmax.cross_entropy(x, labels.to(DEV), 0.1, reduction)
    assert_close(loss, ref, 1e-6, "loss")
    g = randn(*(ref.shape or (1,)))
    ref.backward(f64(g).reshape(ref.shape))
    if reduction == "none":
        softmax.scale_rows_(dx, g)
    else:
        pointwise.scale_(dx, g.reshape(1))
    assert_close(dx, xd.grad, 1e-5, "dlogits")


@pytest.mark.parametrize("bad", [10, -1, 1000])
def test_cross_entropy_flags_labels_out_of_range(bad):
    labels = torch.randint(0, 10, (300,), generator=torch.Generator().manual_seed(4))
    labels[[150, 200]] = bad
    with pytest.raises(ValueError, match=f"target {bad} is out of bounds"):
        softmax.cross_entropy(randn(300, 10), labels.to(DEV))
    assert softmax.take_label_error(DEV) is None  # the eager check cleared the flag
    softmax.cross_entropy(randn(300, 10), labels.to(DEV) * 0)  # good labels pass again


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_cross_entropy_16_bit(dtype, reduction):
    """The loss in the logits' dtype, or fp32 (autocast's), computed in fp32 either way; the
    logits' gradient in their dtype."""
    x = (randn(37, 10) * 5).to(dtype)
    labels = torch.randint(0, 10, (37,), generator=torch.Generator().manual_seed(5))
    labels[3] = -100
    xd = f64(x).requires_grad_(True)
    ref = tF.cross_entropy(xd, labels, reduction=reduction, label_smoothing=0.1)
    loss, dx = softmax.cross_entropy(x, labels.to(DEV), 0.1, reduction)
    assert loss.dtype == dx.dtype == dtype
    assert_close(loss, ref, tol_for(dtype), "loss")
    loss32, _ = softmax.cross_entropy(x, labels.to(DEV), 0.1, reduction, dtype=torch.float32)
    assert loss32.dtype == torch.float32
    assert_close(loss32, ref, 1e-6, "fp32 loss")
    g = randn(*(ref.shape or (1,))).to(dtype)
    ref.backward(f64(g).reshape(ref.shape))
    if reduction == "none":
        softmax.scale_rows_(dx, g)
    else:
        pointwise.scale_(dx, g)
    assert dx.dtype == dtype
    assert_close(dx, xd.grad, tol_for(dtype), "dlogits")
    count = torch.zeros((), dtype=torch.int32, device=DEV)
    softmax.count_correct(x, labels.to(DEV), count)
    assert count.item() == (f64(x).argmax(1) == labels).sum().item()


def test_softmax_and_loss_finite_at_1e4():
    x = torch.tensor([[1e4, -1e4, 0.0], [-1e4, 1e4, 3.0]], device=DEV)
    labels = torch.tensor([0, 0], device=DEV)
    loss, dx = softmax.cross_entropy(x, labels)
    y = softmax.softmax(x)
    assert torch.isfinite(loss).all() and torch.isfinite(dx).all() and torch.isfinite(y).all()
    assert_close(loss, tF.cross_entropy(f64(x), labels.cpu()), 1e-6, "loss at 1e4")
    assert_close(y, torch.softmax(f64(x), 1), 1e-6, "softmax at 1e4")


@pytest.mark.parametrize("shape,dim", [((3, 5, 4, 6), 1), ((37, 10), 1), ((1, 1), 1), ((2, 64, 1023), 1), ((3, 5, 4000), 1)])
def test_sum_except(shape, dim, dtype=torch.float32):
    x = randn(*shape).to(dtype)
    axes = tuple(i for i in range(len(shape)) if i != dim)
    out = reduce.sum_except(x, dim)
    assert out.dtype == dtype
    assert_close(out, f64(x).sum(axes), tol_for(dtype), "sum_except")  # fp32 sums of 1e4 terms
    if dtype != torch.float32:  # the bias gradient of 16-bit gradients: fp32 sums into an fp32 vector
        out = reduce.sum_except(x, dim, out=torch.empty(shape[dim], device=DEV))
        assert_close(out, f64(x).sum(axes), TOL["ieee"], "sum_except into fp32")


@pytest.mark.parametrize("dtype", LOW)
def test_sum_except_16_bit(dtype):
    test_sum_except((3, 5, 4000), 1, dtype)  # in parts
    test_sum_except((3, 5, 4, 6), 1, dtype)


def test_launchers_reject_bad_layout():
    with pytest.raises(ValueError, match="contiguous"):
        pointwise.relu(randn(4, 6).t())
    with pytest.raises(ValueError, match="4-D"):
        pool.pool2d(randn(4, 6), (2, 2), (2, 2), (0, 0), False, "max")
    with pytest.raises(ValueError, match="labels"):
        softmax.cross_entropy(randn(4, 3), torch.zeros(5, dtype=torch.int64, device=DEV))


SMALL_KERNELS = [(pool, "pool_kernel"), (pool, "pool_backward_kernel"),
                 (pointwise, "relu_kernel"), (pointwise, "relu_backward_kernel"), (pointwise, "add_kernel"),
                 (pointwise, "scale_kernel"), (reduce, "sum_kernel"),
                 (softmax, "softmax_kernel"), (softmax, "softmax_backward_kernel"),
                 (softmax, "log_softmax_kernel"), (softmax, "log_softmax_backward_kernel")]


@pytest.mark.parametrize("i", range(max(len(getattr(module, name).all_configs) for module, name in SMALL_KERNELS)))
def test_small_kernels_every_config(i, monkeypatch):
    """The other tests again, with each kernel's i-th tile config (or its last): on the GPU
    they otherwise run only the first (TNET_AUTOTUNE=0)."""
    for module, name in SMALL_KERNELS:
        configs = getattr(module, name).all_configs
        only_config(monkeypatch, getattr(module, name), configs[min(i, len(configs) - 1)])
    for dtype in CONFIG_DTYPES:
        for mode in ("max", "avg"):
            test_pool(mode, *POOLS[1], dtype=dtype)
        test_relu(dtype)
        test_add_scale(dtype)
        test_softmax(5, 131, dtype)
        test_sum_except((3, 5, 4000), 1, dtype)
