"""Softmax, log-softmax, cross-entropy and nll_loss (kernels/softmax.py, functional/softmax.py) against torch in
float64: odd row lengths, label smoothing, reductions, ignored and out-of-range labels, 16-bit
logits and autocast's fp32 losses, values at 1e4, nn.CrossEntropyLoss, every tile config."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet.kernels import pointwise, softmax
from helpers import (CONFIG_DTYPES, DEV, LOW, TOL, assert_close, check_op, config_indices, f64, flag_checked,
                     only_ith_config, pair, randn, tol_for)


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
        flag_checked(lambda: softmax.cross_entropy(randn(300, 10), labels.to(DEV)))
    assert softmax.take_label_error(DEV) is None  # the eager check cleared the flag
    softmax.cross_entropy(randn(300, 10), labels.to(DEV) * 0)  # good labels pass again


@pytest.mark.skipif(DEV.type != "cuda", reason="the GPU's deferred check; the CPU raises at once (above)")
def test_label_error_on_the_gpu_comes_at_a_later_call_without_a_sync():
    """A loss call does not wait for its label check; the next one after the GPU has run it raises, before
    its own launch, and so does a host read."""
    labels = torch.tensor([1, 12, 3], device=DEV)
    softmax.cross_entropy(randn(3, 10), labels)  # no host read: no error yet
    torch.cuda.synchronize()
    with pytest.raises(IndexError, match="target 12 is out of bounds"):
        softmax.cross_entropy(randn(3, 10), labels * 0)  # the next call raises, before its launch
    softmax.cross_entropy(randn(3, 10), labels * 0)
    torch.cuda.synchronize()
    softmax.cross_entropy(randn(3, 10), labels * 0)  # the flag was taken: good labels pass
    loss, _ = softmax.cross_entropy(randn(3, 10), labels)
    with pytest.raises(IndexError, match="target 12 is out of bounds"):
        tnet.Tensor(loss).item()  # a host read waits for the GPU, then raises


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


@pytest.mark.parametrize("dtype", [torch.float32, *LOW])
def test_safe_softmax_zeroes_rows_of_all_minus_inf(dtype):
    """safe=True (torch's _safe_softmax, attention's): a row of all -inf gives zeros, one with a NaN beside its
    -infs stays NaN, the rest as softmax; without it the -inf row is NaN, as torch.softmax."""
    inf = float("inf")
    x = torch.tensor([[-inf, -inf, -inf], [float("nan"), -inf, -inf], [1.0, -inf, 2.0], [inf, -inf, -inf]],
                     device=DEV).to(dtype)
    want = torch.softmax(f64(x), 1)
    want[0] = 0.0
    tol = tol_for(dtype, 1e-6)
    torch.testing.assert_close(softmax.softmax(x, safe=True).cpu().double(), want.cpu(), rtol=tol, atol=tol,
                               equal_nan=True)
    assert softmax.softmax(x).isnan()[0].all()


KERNELS = [softmax.softmax_kernel, softmax.softmax_backward_kernel, softmax.log_softmax_kernel,
           softmax.log_softmax_backward_kernel]


@pytest.mark.parametrize("i", config_indices(KERNELS))
def test_softmax_every_config(i, monkeypatch):
    """test_softmax with each kernel's i-th tile config (or its last)."""
    only_ith_config(monkeypatch, KERNELS, i)
    for dtype in CONFIG_DTYPES:
        test_softmax(5, 131, dtype)


# ---- through the tape -----------------------------------------------------------------------

def test_log_softmax(rng):
    check_op(F.log_softmax, lambda x: torch.log_softmax(x, 1), [pair(rng, 7, 10)], 1e-6, rng)


def test_functional_cross_entropy(rng):
    labels = rng.integers(0, 10, 37)
    logits, ref = pair(rng, 37, 10, scale=3)
    loss = F.cross_entropy(logits, tnet.tensor(labels))
    r = tF.cross_entropy(ref, torch.tensor(labels))
    assert_close(loss, r, 1e-6, "loss")
    loss.backward(2.0 * np.ones(()))
    (2.0 * r).backward()
    assert_close(logits.grad, ref.grad, 1e-5, "dlogits")


def test_cross_entropy_label_smoothing(rng):
    labels = rng.integers(0, 10, 13)
    logits, ref = pair(rng, 13, 10, scale=3)
    loss = F.cross_entropy(logits, tnet.tensor(labels), label_smoothing=0.1)
    r = tF.cross_entropy(ref, torch.tensor(labels), label_smoothing=0.1)
    assert_close(loss, r, 1e-6, "loss")
    loss.backward()
    r.backward()
    assert_close(logits.grad, ref.grad, 1e-5, "dlogits")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rows", [11, 517])  # 517 rows of 10: five programs, their sums added after
def test_cross_entropy_loss_module(rng, reduction, rows):
    labels = rng.integers(0, 7, rows)
    labels[4] = labels[300 % rows] = -100
    logits, ref = pair(rng, rows, 7, scale=3)
    loss = tnet.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.05)(logits, tnet.tensor(labels))
    r = torch.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.05)(ref, torch.tensor(labels))
    assert_close(loss, r, 1e-6, "loss")
    g = rng.standard_normal(r.shape)
    loss.backward(g)
    r.backward(torch.tensor(g))
    assert_close(logits.grad, ref.grad, 1e-5, "dlogits")


@pytest.mark.parametrize("bad", [10, -1, 1000])
@pytest.mark.parametrize("rows", [6, 300])
def test_cross_entropy_names_a_label_out_of_range(rng, bad, rows):
    labels = rng.integers(0, 10, rows)
    labels[rows - 4] = bad
    with pytest.raises(ValueError, match=f"target {bad} is out of bounds"):
        flag_checked(lambda: F.cross_entropy(tnet.tensor(rng.standard_normal((rows, 10))), tnet.tensor(labels)))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter computes pow's unused branches too
@pytest.mark.parametrize("dtype", LOW)
def test_losses_and_softmax_in_fp32_under_autocast(rng, dtype):
    """As torch's autocast: softmax, log_softmax, cross_entropy and mse_loss return fp32 (at fp32's
    tolerance from the 16-bit inputs), and hand the 16-bit inputs 16-bit gradients."""
    labels = rng.integers(0, 10, 13)
    logits, ref = pair(rng, 13, 10, scale=3, dtype=dtype)
    target, ref_target = pair(rng, 13, 10, dtype=dtype)
    with tnet.autocast("cuda", dtype=dtype):
        loss = F.cross_entropy(logits, tnet.tensor(labels))
        mse = F.mse_loss(logits, target)
        outs = [F.softmax(logits), F.log_softmax(logits), loss, mse]
    refs = [torch.softmax(ref, 1), torch.log_softmax(ref, 1), tF.cross_entropy(ref, torch.tensor(labels)),
            tF.mse_loss(ref, ref_target)]
    for out, r, name in zip(outs, refs, ["softmax", "log_softmax", "cross_entropy", "mse_loss"]):
        assert out.dtype == torch.float32, name
        assert_close(out, r, TOL["ieee"], name)
    (loss + mse).backward()
    (refs[2] + refs[3]).backward()
    assert logits.grad.dtype == target.grad.dtype == dtype
    assert_close(logits.grad, ref.grad, tol_for(dtype), "dlogits")
    assert_close(target.grad, ref_target.grad, tol_for(dtype), "dtarget")
    assert F.cross_entropy(logits, tnet.tensor(labels)).dtype == F.softmax(logits).dtype == dtype  # outside


# ---- any dim, nll_loss, cross-entropy beyond [N, C] with class indices --------------------------

@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim,channels_last", [((3, 5, 4, 6), 1, True), ((3, 5, 4, 6), 1, False),
                                                     ((3, 5, 4, 6), -1, True), ((7, 5, 3), 0, False), ((11,), 0, False),
                                                     ((2, 3, 5), None, False), ((), 0, False)])
def test_softmax_any_dim(rng, name, shape, dim, channels_last):
    x = pair(rng, *shape, scale=3, channels_last=channels_last)
    ref_dim = dim if dim is not None else (0 if len(shape) in (0, 1, 3) else 1)
    check_op(lambda t: getattr(F, name)(t, dim), lambda t: getattr(torch, name)(t, ref_dim), [x], TOL["ieee"], rng)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "gumbel_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_over_any_dim_is_contiguous_as_torchs(name, dim):
    """The result and the input's gradient are contiguous, as torch's, whichever dim: a permuted view of the rows
    refused the .view(...) that torch's takes (a capsule network's F.softmax(b_ij) over dim 1, then view). A
    channels-last activation's softmax over dim 1 stays channels-last: its rows are that memory's (no copy)."""
    x = tnet.randn(3, 4, 5, requires_grad=True)
    y = getattr(F, name)(x, dim=dim)
    assert y.stride() == torch.empty(3, 4, 5).stride() and y.view(-1).shape == (60,)
    y.backward(tnet.ones(3, 4, 5))
    assert x.grad.stride() == x.stride()
    z = tnet.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert F.softmax(z, dim=1).stride() == z.stride()


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_implicit_dim_warns_as_torch(name):
    """Without dim, torch's implicit choice with torch's warning, pointing at the caller (nn.Softmax() in older
    scripts: PyTorch-GAN's ACGAN)."""
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name} has been deprecated") as caught:
        out = getattr(F, name)(tnet.ones(2, 3))
    assert caught[0].filename == __file__
    assert tuple(out.shape) == (2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        assert tnet.nn.Softmax()(tnet.ones(2, 3)).sum(1).tolist() == [1.0, 1.0]


def test_softmax_method_and_dtype(rng):
    x = pair(rng, 4, 7)
    check_op(lambda t: t.softmax(0), lambda t: t.softmax(0), [x], TOL["ieee"], rng)
    assert F.log_softmax(x[0], 1, dtype=torch.float16).dtype == torch.float16


def _loss_check(rng, ours, theirs, x, target, tol=TOL["ieee"], weight=None, **kwargs):
    """A loss and its input's gradient against torch's (and the target's, for probabilities).
    A weighted mean of a few terms can cancel, so the bound is fp32's (docs/results.md)."""
    t, ref = x
    args = (target[0],) if weight is None else (target[0], tnet.tensor(weight))
    ref_args = (target[1],) if weight is None else (target[1], torch.tensor(weight))
    loss, r = ours(t, *args, **kwargs), theirs(ref, *ref_args, **kwargs)
    assert_close(loss, r, tol, "loss")
    g = rng.standard_normal(r.shape)
    loss.backward(g)
    r.backward(torch.tensor(g))
    assert_close(t.grad, ref.grad, tol * 10, "dinput")
    if isinstance(target[0], tnet.Tensor) and target[0].requires_grad:
        assert_close(target[0].grad, target[1].grad, tol * 10, "dtarget")


def _labels(rng, shape, C, ignore=-100):
    """Class indices, every 4th one ignored (a lone one is not: its mean would be NaN)."""
    labels = rng.integers(0, C, shape)
    if shape:
        labels.reshape(-1)[::4] = ignore
    else:
        labels = np.array(1 if ignore != 1 else 0)
    return tnet.tensor(labels), torch.tensor(labels)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape,weighted", [((13, 7), False), ((13, 7), True), ((2, 7, 3, 5), True), ((7,), False)])
def test_nll_loss(rng, reduction, shape, weighted):
    C = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else (shape[0], *shape[2:])
    weight = np.abs(rng.standard_normal(C)) + 0.1 if weighted else None
    x = pair(rng, *shape, channels_last=len(shape) == 4)
    labels = _labels(rng, target_shape, C)
    _loss_check(rng, F.nll_loss, tF.nll_loss, x, labels, weight=weight, reduction=reduction)
    module = tnet.nn.NLLLoss(None if weight is None else tnet.tensor(weight), ignore_index=2, reduction=reduction)
    ref_module = torch.nn.NLLLoss(None if weight is None else torch.tensor(weight), ignore_index=2, reduction=reduction)
    x = pair(rng, *shape)
    _loss_check(rng, lambda t, y: module(t, y), lambda t, y: ref_module(t, y), x, _labels(rng, target_shape, C, 2))


def test_nll_loss_edges(rng):
    x = pair(rng, 5, 4)
    every = tnet.tensor(np.full(5, -100))
    assert np.isnan(F.nll_loss(x[0], every).item())  # 0 / 0, as torch
    with pytest.raises(IndexError, match="target 4 is out of bounds"):
        flag_checked(lambda: F.nll_loss(x[0], tnet.tensor([0, 1, 4, 2, 3])))
    with pytest.raises(ValueError, match="target must be int64"):
        F.nll_loss(x[0], x[0])
    with pytest.raises(ValueError, match="expected"):
        F.nll_loss(x[0], tnet.tensor([0, 1]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape,weighted,smoothing", [((13, 7), True, 0.0), ((13, 7), True, 0.2),
                                                      ((2, 7, 3, 5), False, 0.1), ((2, 7, 3, 5), True, 0.1),
                                                      ((7,), False, 0.3)])
def test_cross_entropy_class_indices_beyond_2d(rng, reduction, shape, weighted, smoothing):
    """Weights, [C] and [N, C, d...] logits (log_softmax and nll_loss), with torch's smoothing."""
    C = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else (shape[0], *shape[2:])
    weight = np.abs(rng.standard_normal(C)) + 0.1 if weighted else None
    x = pair(rng, *shape, scale=3, channels_last=len(shape) == 4)
    labels = _labels(rng, target_shape, C) if len(shape) > 1 else (tnet.tensor(np.array(2)), torch.tensor(2))
    _loss_check(rng, F.cross_entropy, tF.cross_entropy, x, labels, weight=weight, reduction=reduction,
                label_smoothing=smoothing)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape,weighted,smoothing", [((13, 7), False, 0.0), ((13, 7), True, 0.1),
                                                      ((2, 7, 3, 5), False, 0.2)])
def test_cross_entropy_probability_targets(rng, reduction, shape, weighted, smoothing):
    weight = np.abs(rng.standard_normal(shape[1])) + 0.1 if weighted else None
    x = pair(rng, *shape, scale=3)
    probs = tnet.tensor(np.moveaxis(rng.dirichlet(np.ones(shape[1]), (shape[0], *shape[2:])), -1, 1), requires_grad=True)
    target = (probs, probs.memory.double().cpu().requires_grad_(True))
    _loss_check(rng, F.cross_entropy, tF.cross_entropy, x, target, weight=weight, reduction=reduction,
                label_smoothing=smoothing)
    module = tnet.nn.CrossEntropyLoss(None if weight is None else tnet.tensor(weight), label_smoothing=smoothing)
    assert_close(module(x[0], probs), torch.nn.CrossEntropyLoss(None if weight is None else torch.tensor(weight),
                                                                label_smoothing=smoothing)(x[1], target[1]), 1e-6, "module")


@pytest.mark.parametrize("dtype", LOW)
def test_nll_and_any_dim_16_bit(rng, dtype):
    x = pair(rng, 2, 7, 3, 5, scale=3, dtype=dtype, channels_last=True)
    check_op(lambda t: F.log_softmax(t, 1), lambda t: torch.log_softmax(t, 1), [x], tol_for(dtype), rng)
    x = pair(rng, 13, 7, dtype=dtype)
    _loss_check(rng, F.nll_loss, tF.nll_loss, x, _labels(rng, (13,), 7), tol=tol_for(dtype))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_of_wide_rows(op, rng):
    """Rows wider than the tuned blocks hold (2000 classes here, past the interpreter's 1024 rows x 1024;
    on the GPU past 8192 classes) take a program each: values and gradients as torch's."""
    x = rng.standard_normal((3, 2000)).astype(np.float32)
    a, ref = tnet.tensor(x, requires_grad=True), torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y, y_ref = getattr(F, op)(a, 1), getattr(torch, op)(ref, 1)
    (y * y).sum().backward()
    (y_ref * y_ref).sum().backward()
    assert_close(y.memory, y_ref, TOL["ieee"])
    assert_close(a.grad.memory, ref.grad, TOL["ieee"])
