"""Each kernel against torch in float64, on odd shapes (K = 75, primes, 1x1)."""
import pytest
import torch
import torch.nn.functional as tF
from triton.runtime.errors import OutOfResources

import tnet
from tnet.kernels import conv, elementwise, gemm, pool, reduce, softmax
from conftest import TOL, assert_close, only_config

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


@pytest.mark.parametrize("kernel,stride,padding", [((5, 5), (1, 1), (2, 2)), ((3, 2), (2, 1), (1, 0)), ((1, 1), (1, 1), (0, 0))])
def test_im2col_col2im(kernel, stride, padding):
    x = randn(2, 3, 11, 7)
    col, _ = conv.im2col(x, kernel, stride, padding)
    ref = tF.unfold(f64(x), kernel, padding=padding, stride=stride)
    assert_close(col, ref, 0, "im2col")
    assert_close(conv.col2im(col, x.shape, kernel, stride, padding),
                 tF.fold(ref, (11, 7), kernel, padding=padding, stride=stride), 1e-6, "col2im")


CONVS = [  # x shape, Cout, kernel, stride, padding
    ((2, 3, 11, 7), 5, (5, 5), (1, 1), (2, 2)),  # K = 75
    ((1, 6, 17, 13), 3, (5, 5), (1, 1), (2, 2)),  # K = 150, P = 221: several tiles along both
    ((3, 2, 13, 17), 7, (3, 3), (2, 2), (1, 1)),  # primes, stride 2
    ((2, 5, 7, 3), 3, (1, 1), (1, 1), (0, 0)),  # 1x1
    ((2, 4, 9, 8), 3, (3, 2), (2, 1), (1, 0)),  # rectangular kernel, stride and padding
]


def conv_reference(x, w, stride, padding, dy):
    """torch's float64 convolution of x and w, and its weight gradient for the output gradient dy."""
    xd, wd = f64(x), f64(w).requires_grad_(True)
    y = tF.conv2d(xd, wd, None, stride, padding)
    y.backward(f64(dy))
    return y.detach(), wd.grad


@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16"])
@pytest.mark.parametrize("shape,cout,kernel,stride,padding", CONVS)
def test_conv_implicit_gemm(precision, shape, cout, kernel, stride, padding):
    x, w = randn(*shape), randn(cout, shape[1], *kernel)
    dy = randn(*tF.conv2d(f64(x), f64(w), None, stride, padding).shape)
    y_ref, dw_ref = conv_reference(x, w, stride, padding, dy)
    what = f"{precision} x {tuple(shape)} kernel {kernel} stride {stride} padding {padding}"
    y = gemm.conv_gemm(w.reshape(cout, -1), x, kernel, stride, padding, precision=precision)
    assert_close(y, y_ref, TOL[precision], f"forward {what}")
    dw = gemm.conv_weight_grad(dy, x, kernel, stride, padding, precision=precision)
    assert_close(dw, dw_ref, TOL[precision], f"weight gradient {what}")


DTYPES = {"tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}  # the operands of each precision
TOLS = {"tf32": TOL["tf32"], "bf16": TOL["bf16"], "fp16": TOL["bf16"]}  # 16-bit outputs: one rounding at the store


def close16(out, ref, tol, what):
    """assert_close for 16-bit outputs too (numpy has no bfloat16)."""
    assert_close(f64(out), ref, tol, what)


@pytest.mark.parametrize("precision", ["tf32", "bf16", "fp16"])
@pytest.mark.parametrize("config", gemm._CONFIGS, ids=lambda c: "x".join(str(v) for v in c.kwargs.values()))
def test_gemm_every_config(config, precision, monkeypatch):
    """Each tile config the GPU's autotuner may pick (the other tests there run the first
    only, TNET_AUTOTUNE=0), in each precision on its own operands (16-bit ones in and out): a
    plain and a split-K GEMM, and in fp32 both implicit GEMMs, on sizes that leave every kind
    of tile edge."""
    only_config(monkeypatch, gemm.gemm_kernel, config)
    monkeypatch.setattr(gemm, "_SMS", 2)
    dtype = DTYPES[precision]
    a, b = randn(70, 45).to(dtype), randn(45, 300).to(dtype)
    try:
        c = gemm.matmul(a, b, precision=precision)
    except OutOfResources:  # GPU only: fp32 tiles this big overflow shared memory, so the
        assert precision == "tf32"  # autotuner skips the config for fp32 operands
        return
    assert c.dtype == dtype
    close16(c, f64(a) @ f64(b), TOLS[precision], "plain")
    a3, b3 = randn(5, 33, 70).to(dtype), randn(5, 70, 17).to(dtype)
    close16(gemm.matmul(a3, b3, sum_batch=True, precision=precision), (f64(a3) @ f64(b3)).sum(0), TOLS[precision],
            "split")
    if precision != "tf32":
        return
    x, w = randn(3, 4, 9, 10), randn(6, 4, 3, 3)
    dy = randn(3, 6, 9, 10)
    y_ref, dw_ref = conv_reference(x, w, (1, 1), (1, 1), dy)
    assert_close(gemm.conv_gemm(w.reshape(6, -1), x, (3, 3), (1, 1), (1, 1), precision="ieee"), y_ref, TOL["ieee"], "conv")
    assert_close(gemm.conv_weight_grad(dy, x, (3, 3), (1, 1), (1, 1), precision="ieee"), dw_ref, TOL["ieee"], "dw")


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
    monkeypatch.setattr(gemm, "_SMS", 1)
    only_config(monkeypatch, gemm.gemm_tma_tuned if precision == "tf32" else gemm.gemm_tma16_tuned, config)
    calls = []
    launch = gemm._launch_tma
    monkeypatch.setattr(gemm, "_launch_tma", lambda *a, **k: calls.append(k) or launch(*a, **k))
    dtype = DTYPES[precision]
    a, at, b, bt = (randn(*s).to(dtype) for s in ((144, 136), (136, 144), (136, 88), (88, 136)))
    bias_n, bias_m = randn(88), randn(144)
    tol = TOLS[precision]
    close16(gemm.matmul(a, b, bias=bias_n, relu=True), torch.relu(f64(a) @ f64(b) + f64(bias_n)), tol, "B row-major")
    close16(gemm.matmul(a, bt.t(), bias=bias_m, bias_dim=0), f64(a) @ f64(bt).t() + f64(bias_m)[:, None], tol,
            "B K-major")
    expect = [(False, True), (False, True)]
    if precision != "tf32":
        c = gemm.matmul(at.t(), b, out_dtype=torch.float32)
        assert c.dtype == torch.float32
        close16(c, f64(at).t() @ f64(b), TOL["ieee"], "A column-major, fp32 output")
        close16(gemm.matmul(at.t(), bt.t()), f64(at).t() @ f64(bt).t(), tol, "A column-major, B K-major")
        expect = [(False, False), (False, True), (True, False), (True, True)]
    assert [(k["a_t"], k["b_t"]) for k in calls] == expect
    a, b = randn(144, 75).to(dtype), randn(75, 88).to(dtype)  # rows of 75 elements: no TMA descriptor
    close16(gemm.matmul(a, b), f64(a) @ f64(b), tol, "fallback")
    assert len(calls) == len(expect)


def test_conv_gemm_bias_relu():
    x, w, b = randn(2, 3, 11, 7), randn(5, 3, 5, 5), randn(5)
    y = gemm.conv_gemm(w.reshape(5, -1), x, (5, 5), (2, 1), (2, 2), bias=b, relu=True, precision="ieee")
    assert_close(y, torch.relu(tF.conv2d(f64(x), f64(w), f64(b), (2, 1), (2, 2))), TOL["ieee"], "bias + relu")


def test_conv_weight_grad_split_over_the_batch(monkeypatch):
    monkeypatch.setattr(gemm, "_SMS", 2)  # as on a GPU with 2 SMs: the 7 images go to 4 parts, summed after
    x, w = randn(7, 3, 6, 5), randn(4, 3, 3, 3)
    dy = randn(7, 4, 6, 5)
    _, dw_ref = conv_reference(x, w, (1, 1), (1, 1), dy)
    assert_close(gemm.conv_weight_grad(dy, x, (3, 3), (1, 1), (1, 1), precision="ieee"), dw_ref, TOL["ieee"], "split")
    # a strided dy (a channel slice) works without a copy
    dy2 = randn(7, 9, 6, 5)[:, 2:6]
    _, dw_ref = conv_reference(x, w, (1, 1), (1, 1), dy2)
    assert_close(gemm.conv_weight_grad(dy2, x, (3, 3), (1, 1), (1, 1), precision="ieee"), dw_ref, TOL["ieee"], "strided dy")


def test_conv_launchers_bad_input():
    x = randn(2, 3, 11, 7)
    with pytest.raises(ValueError, match=r"w2 is 5x74 .* needs \[Cout, 75\]"):
        gemm.conv_gemm(randn(5, 74), x, (5, 5), (1, 1), (2, 2))
    with pytest.raises(ValueError, match="4-D"):
        gemm.conv_gemm(randn(5, 75), randn(3, 11, 7), (5, 5), (1, 1), (2, 2))
    with pytest.raises(ValueError, match="contiguous"):
        gemm.conv_gemm(randn(5, 75), randn(2, 3, 7, 11).transpose(2, 3), (5, 5), (1, 1), (2, 2))
    with pytest.raises(ValueError, match="does not fit"):
        gemm.conv_gemm(randn(5, 75), randn(2, 3, 3, 3), (5, 5), (1, 1), (0, 0))
    with pytest.raises(ValueError, match="bias"):
        gemm.conv_gemm(randn(5, 75), x, (5, 5), (1, 1), (2, 2), bias=randn(4))
    with pytest.raises(ValueError, match=r"dy is 2x5x11x6 .* gives \[2, Cout, 11, 7\]"):
        gemm.conv_weight_grad(randn(2, 5, 11, 6), x, (5, 5), (1, 1), (2, 2))
    with pytest.raises(ValueError, match="merge OH and OW"):
        gemm.conv_weight_grad(randn(2, 5, 7, 11).transpose(2, 3), x, (5, 5), (1, 1), (2, 2))


POOLS = [((3, 3), (2, 2), (0, 0), True), ((3, 3), (2, 2), (1, 1), True), ((2, 2), (2, 2), (0, 0), False),
         ((3, 2), (1, 2), (1, 1), False), ((1, 1), (1, 1), (0, 0), False),
         ((2, 3), (3, 2), (0, 1), True), ((5, 5), (2, 3), (2, 2), False)]  # gaps between windows; 3 and 2 per row


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", POOLS)
def test_pool(mode, kernel, stride, padding, ceil_mode):
    x = randn(2, 3, 13, 8)
    xd = f64(x).requires_grad_(True)
    if mode == "max":
        ref = tF.max_pool2d(xd, kernel, stride, padding, ceil_mode=ceil_mode)
    else:
        ref = tF.avg_pool2d(xd, kernel, stride, padding, ceil_mode=ceil_mode, count_include_pad=True)
    y, arg = pool.pool2d(x, kernel, stride, padding, ceil_mode, mode)
    assert_close(y, ref, 1e-6, f"{mode} forward")
    g = randn(*ref.shape)
    ref.backward(f64(g))
    assert_close(pool.pool2d_backward(g, arg, x.shape, kernel, stride, padding, mode), xd.grad, 1e-6, f"{mode} backward")


def test_max_pool_ties_take_first_in_row_major_order():
    x = torch.zeros(1, 1, 4, 4, device=DEV)  # all ties
    y, arg = pool.pool2d(x, (3, 3), (2, 2), (0, 0), True, "max")
    assert arg.cpu().flatten().tolist() == [0, 2, 8, 10]


def test_relu():
    x = randn(1000 + 7)
    y = elementwise.relu(x)
    assert_close(y, torch.relu(f64(x)), 0, "relu")
    g = randn(1007)
    assert_close(elementwise.relu_backward(y, g), f64(g) * (f64(x) > 0), 0, "relu backward")


def test_add_scale():
    x, y = randn(301), randn(301)
    expect = f64(x) + f64(y)
    assert_close(elementwise.add_(x, y), expect, 1e-7, "add_")
    s = torch.full((1,), 2.5, device=DEV)
    assert_close(elementwise.scale_(x, s), expect * 2.5, 1e-7, "scale_")


@pytest.mark.parametrize("R,C", [(37, 10), (1, 1), (5, 131)])
def test_softmax(R, C):
    x = randn(R, C) * 5
    y = softmax.softmax(x)
    xd = f64(x).requires_grad_(True)
    ref = torch.softmax(xd, 1)
    assert_close(y, ref, 1e-6, "softmax")
    g = randn(R, C)
    ref.backward(f64(g))
    assert_close(softmax.softmax_backward(y, g), xd.grad, 1e-5, "softmax backward")
    y = softmax.log_softmax(x)
    xd.grad = None
    ref = torch.log_softmax(xd, 1)
    assert_close(y, ref, 1e-6, "log_softmax")
    ref.backward(f64(g))
    assert_close(softmax.log_softmax_backward(y, g), xd.grad, 1e-5, "log_softmax backward")


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
        elementwise.scale_(dx, g.reshape(1))
    assert_close(dx, xd.grad, 1e-5, "dlogits")


@pytest.mark.parametrize("bad", [10, -1, 1000])
def test_cross_entropy_flags_labels_out_of_range(bad):
    labels = torch.randint(0, 10, (300,), generator=torch.Generator().manual_seed(4))
    labels[[150, 200]] = bad
    with pytest.raises(ValueError, match=f"target {bad} is out of bounds"):
        softmax.cross_entropy(randn(300, 10), labels.to(DEV))
    assert softmax.take_label_error(DEV) is None  # the eager check cleared the flag
    softmax.cross_entropy(randn(300, 10), labels.to(DEV) * 0)  # good labels pass again


def test_softmax_and_loss_finite_at_1e4():
    x = torch.tensor([[1e4, -1e4, 0.0], [-1e4, 1e4, 3.0]], device=DEV)
    labels = torch.tensor([0, 0], device=DEV)
    loss, dx = softmax.cross_entropy(x, labels)
    y = softmax.softmax(x)
    assert torch.isfinite(loss).all() and torch.isfinite(dx).all() and torch.isfinite(y).all()
    assert_close(loss, tF.cross_entropy(f64(x), labels.cpu()), 1e-6, "loss at 1e4")
    assert_close(y, torch.softmax(f64(x), 1), 1e-6, "softmax at 1e4")


@pytest.mark.parametrize("shape,dim", [((3, 5, 4, 6), 1), ((37, 10), 1), ((1, 1), 1), ((2, 64, 1023), 1), ((3, 5, 4000), 1)])
def test_sum_except(shape, dim):
    x = randn(*shape)
    axes = tuple(i for i in range(len(shape)) if i != dim)
    assert_close(reduce.sum_except(x, dim), f64(x).sum(axes), 1e-5, "sum_except")  # fp32 sums of 1e4 terms


def test_launchers_reject_bad_layout():
    with pytest.raises(ValueError, match="contiguous"):
        elementwise.relu(randn(4, 6).t())
    with pytest.raises(ValueError, match="4-D"):
        pool.pool2d(randn(4, 6), (2, 2), (2, 2), (0, 0), False, "max")
    with pytest.raises(ValueError, match="labels"):
        softmax.cross_entropy(randn(4, 3), torch.zeros(5, dtype=torch.int64, device=DEV))


SMALL_KERNELS = [(conv, "im2col_kernel"), (conv, "col2im_kernel"), (pool, "pool_kernel"), (pool, "pool_backward_kernel"),
                 (elementwise, "relu_kernel"), (elementwise, "relu_backward_kernel"), (elementwise, "add_kernel"),
                 (elementwise, "scale_kernel"), (reduce, "sum_kernel"),
                 (softmax, "softmax_kernel"), (softmax, "softmax_backward_kernel"),
                 (softmax, "log_softmax_kernel"), (softmax, "log_softmax_backward_kernel")]


@pytest.mark.parametrize("i", range(max(len(module._CONFIGS) for module, _ in SMALL_KERNELS)))
def test_small_kernels_every_config(i, monkeypatch):
    """The other tests again, with each kernel's i-th tile config (or its last): on the GPU
    they otherwise run only the first (TNET_AUTOTUNE=0)."""
    for module, name in SMALL_KERNELS:
        configs = module._CONFIGS
        only_config(monkeypatch, getattr(module, name), configs[min(i, len(configs) - 1)])
    test_im2col_col2im((5, 5), (1, 1), (2, 2))
    for mode in ("max", "avg"):
        test_pool(mode, *POOLS[1])
    test_relu()
    test_add_scale()
    test_softmax(5, 131)
    test_sum_except((3, 5, 4000), 1)
