"""Reductions (kernels/reduce.py, functional/reduce.py) against torch in float64: sum and mean over
any dims in either layout, long sums in parts, max and argmax with ties and NaN, global average
pooling, mse_loss, the bias gradient's sum_except, amax/amin with ties and NaN, var and std in
torch's forms, exact integer sums, maxima and minima, 16-bit storage, every tile config."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet import nn
from tnet.kernels import reduce
from helpers import (CL, CONFIG_DTYPES, DEV, LOW, TOL, assert_close, check, config_indices, dev, f64, host, leaf,
                     only_ith_config, randn, tol_for)


# The interpreter computes every branch of a tl.where in numpy, masked lanes too: log(0) warns.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dim,keepdim,channels_last", [
    (None, False, False), (0, False, True), (-1, True, False), ((0, 2), False, True), ((1, 2, 3), True, True),
    ((), False, False), ((-3, 3), True, True), ((0, 2, 3), False, False)])
def test_sum_mean(rng, op, dim, keepdim, channels_last):
    x = leaf(rng, 3, 5, 4, 7, channels_last=channels_last)
    check(lambda t: getattr(t, op)(dim, keepdim), lambda t: getattr(t, op)(dim, keepdim), [x], rng)


def test_sum_each_subset_of_axes():
    """Every set of axes in both layouts, forward only: the runs of reduced axes in memory order."""
    x = torch.randn(3, 5, 4, 7, generator=torch.Generator().manual_seed(0)).to(tnet.DEVICE)
    for data, masks in ((x, range(1, 16)), (x.contiguous(memory_format=CL), range(1, 16)),
                        (x.permute(2, 0, 3, 1), (5, 6, 10))):
        for mask in masks:
            dims = tuple(d for d in range(4) if mask >> d & 1)
            assert_close(F.sum(tnet.Tensor(data), dims), data.double().sum(dims), TOL["ieee"], f"sum over {dims}")


@pytest.mark.parametrize("shape,dim", [((3, 2500), 1), ((2500, 3), 0), ((5000,), None), ((3, 1100, 5), 1)])
def test_long_sums_in_parts(rng, monkeypatch, shape, dim):
    """Sums longer than reduce.CHUNK (the GPU's, 1024; the interpreter's parts are longer): parts, then the
    sum of the parts."""
    monkeypatch.setattr(reduce, "CHUNK", 1024)
    long_sums(rng, shape, dim)


def long_sums(rng, shape, dim, dtype=torch.float32):
    check(lambda t: F.mean(t, dim), lambda t: t.mean(dim), [leaf(rng, *shape, dtype=dtype)], rng, tol_for(dtype))


@pytest.mark.parametrize("shape", [(3, 37, 4, 4), (2, 32, 8, 8)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_global_average_pooling(rng, shape, channels_last):
    x = leaf(rng, *shape, channels_last=channels_last)
    check(lambda t: t.mean((2, 3)), lambda t: t.mean((2, 3)), [x], rng)
    x = leaf(rng, *shape, channels_last=channels_last)
    out = check(nn.AdaptiveAvgPool2d(1), lambda t: tF.adaptive_avg_pool2d(t, (1, 1)), [x], rng)
    assert out.shape == (shape[0], shape[1], 1, 1)


@pytest.mark.parametrize("dim,keepdim,channels_last", [(0, False, False), (1, True, True), (2, False, True),
                                                       (-1, False, False), (3, True, True)])
def test_max_dim_with_ties(rng, dim, keepdim, channels_last, dtype=torch.float32):
    """Values of few levels, so most rows hold ties: the first index, like torch's, gets the gradient."""
    x = leaf(rng, 3, 5, 4, 7, channels_last=channels_last, values=rng.integers(0, 3, (3, 5, 4, 7)).astype(float),
             dtype=dtype)
    out = x[0].max(dim, keepdim)
    ref = x[1].max(dim, keepdim)
    assert out.indices.dtype == torch.int64 and np.array_equal(out.indices.numpy(), ref.indices.numpy())
    assert np.array_equal(F.argmax(x[0], dim, keepdim).numpy(), torch.argmax(x[1], dim, keepdim).numpy())
    check(lambda t: t.max(dim, keepdim).values, lambda t: t.max(dim, keepdim).values, [x], rng, tol_for(dtype))


def test_max_ties_across_parts(monkeypatch):
    """A max over three parts (of 64 here), tied in different parts: the first index."""
    monkeypatch.setattr(reduce, "CHUNK", 64)
    n = 150
    x = torch.zeros(3, n, 5)
    x[:, n - 3] = x[:, 7] = x[1, n // 2] = 1.0
    values, indices = F.max(tnet.tensor(x), 1)
    assert np.array_equal(indices.numpy(), x.argmax(1).numpy()) and (indices.numpy() == 7).all()
    assert F.argmax(tnet.tensor(x[1:, :, 1:])).item() == x[1:, :, 1:].argmax().item() == 28


@pytest.mark.parametrize("channels_last", [False, True])
def test_global_max_and_argmax(rng, channels_last):
    """max() shares the gradient among tied maxima, as torch does; argmax() counts in row-major order."""
    values = rng.integers(0, 4, (2, 3, 4, 5)).astype(float)
    x = leaf(rng, 2, 3, 4, 5, channels_last=channels_last, values=values)
    check(lambda t: t.max(), lambda t: t.max(), [x], rng)
    values = rng.standard_normal((2, 3, 4, 5))
    x = leaf(rng, 2, 3, 4, 5, channels_last=channels_last, values=values)
    assert x[0].argmax().item() == values.argmax() and x[0].argmax().dtype == torch.int64
    assert x[0].argmax(keepdim=True).shape == (1, 1, 1, 1)


def test_max_propagates_nan():
    x = torch.tensor([[1.0, float("nan"), 3.0], [2.0, 5.0, 4.0]])
    values, indices = F.max(tnet.tensor(x), 1)
    ref = x.max(1)
    assert np.isnan(values.numpy()[0]) and values.numpy()[1] == 5.0
    assert np.array_equal(indices.numpy(), ref.indices.numpy())
    assert np.isnan(F.max(tnet.tensor(x)).item())


@pytest.mark.parametrize("dtype", LOW)
def test_reductions_16_bit(rng, monkeypatch, dtype):
    """Sums in fp32 (in parts too), each result rounded once; maxima with ties; argmax."""
    for op, dim, cl in (("sum", None, False), ("mean", (0, 2, 3), True), ("sum", 1, True)):
        x = leaf(rng, 3, 5, 4, 7, channels_last=cl, dtype=dtype)
        out = check(lambda t: getattr(t, op)(dim), lambda t: getattr(t, op)(dim), [x], rng, tol_for(dtype))
        assert out.dtype == x[0].grad.dtype == dtype
    monkeypatch.setattr(reduce, "CHUNK", 1024)
    long_sums(rng, (3, 2500), 1, dtype)
    test_max_dim_with_ties(rng, 1, True, True, dtype)
    x = leaf(rng, 2, 3, 4, 5, values=rng.integers(0, 4, (2, 3, 4, 5)).astype(float), dtype=dtype)
    check(lambda t: t.max(), lambda t: t.max(), [x], rng, tol_for(dtype))
    assert x[0].argmax().item() == x[1].argmax().item()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(rng, reduction):
    inputs = [leaf(rng, 5, 7, 3), leaf(rng, 5, 7, 3)]
    check(lambda a, b: F.mse_loss(a, b, reduction=reduction), lambda a, b: tF.mse_loss(a, b, reduction=reduction), inputs, rng)
    inputs = [leaf(rng, 5, 7, 3), leaf(rng, 5, 7, 3)]
    check(nn.MSELoss(reduction=reduction), torch.nn.MSELoss(reduction=reduction), inputs, rng)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_l1_smooth_l1_and_binary_cross_entropy_losses(rng, reduction):
    """l1_loss, smooth_l1_loss (beta 1, 0.5 and 0), binary_cross_entropy (probabilities, 0 and 1
    among them: the log's floor of -100) and binary_cross_entropy_with_logits (weight, pos_weight,
    logits up to +-60) as torch's, functions and modules, values and gradients."""
    pairs = lambda: [leaf(rng, 4, 6), leaf(rng, 4, 6)]
    check(lambda a, b: F.l1_loss(a, b, reduction=reduction), lambda a, b: tF.l1_loss(a, b, reduction=reduction), pairs(), rng)
    check(nn.L1Loss(reduction=reduction), torch.nn.L1Loss(reduction=reduction), pairs(), rng)
    for beta in (1.0, 0.5, 0.0):
        check(lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
              lambda a, b: tF.smooth_l1_loss(a, b, reduction=reduction, beta=beta), pairs(), rng)
    check(nn.SmoothL1Loss(reduction=reduction, beta=0.5), torch.nn.SmoothL1Loss(reduction=reduction, beta=0.5),
          pairs(), rng)
    p = rng.uniform(0.02, 0.98, (4, 6))
    probs, target = leaf(rng, 4, 6, values=p), leaf(rng, 4, 6, values=rng.uniform(0, 1, (4, 6)))
    weight = rng.uniform(0.5, 2, 6)
    check(lambda a, b: F.binary_cross_entropy(a, b, tnet.tensor(weight), reduction=reduction),
          lambda a, b: tF.binary_cross_entropy(a, b, torch.tensor(weight), reduction=reduction), [probs, target], rng)
    p[0, :2], p[1, :2] = 0.0, 1.0  # the target's gradient is infinite there: the input's alone
    y = rng.uniform(0, 1, (4, 6))
    check(lambda a: F.binary_cross_entropy(a, tnet.tensor(y), reduction=reduction),
          lambda a: tF.binary_cross_entropy(a, torch.tensor(y), reduction=reduction), [leaf(rng, 4, 6, values=p)], rng)
    logits = rng.standard_normal((4, 6)) * 5
    logits[0, :2] = 60, -60
    check(nn.BCEWithLogitsLoss(tnet.tensor(weight), reduction=reduction, pos_weight=tnet.tensor(weight[::-1].copy())),
          torch.nn.BCEWithLogitsLoss(torch.tensor(weight), reduction=reduction,
                                     pos_weight=torch.tensor(weight[::-1].copy())),
          [leaf(rng, 4, 6, values=logits), leaf(rng, 4, 6, values=rng.uniform(0, 1, (4, 6)))], rng)
    check(nn.BCELoss(reduction=reduction), torch.nn.BCELoss(reduction=reduction), [probs, target], rng)
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(*[t for t, _ in pairs()], beta=-1.0)


@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True), (False, True)])
def test_legacy_size_average_and_reduce_as_torch(rng, size_average, reduce):
    """torch's deprecated size_average and reduce (old scripts' F.nll_loss(..., size_average=False),
    the VAE's binary_cross_entropy(..., size_average=False)) pick the reduction, with torch's warning,
    in the functions (positionally too, where torch's signatures put them) and the loss modules."""
    kw = dict(size_average=size_average, reduce=reduce)
    expected = ("mean" if size_average in (None, True) else "sum") if reduce in (None, True) else "none"
    t, y = rng.uniform(0, 1, (4, 5)), rng.integers(0, 5, 4)
    # each case takes the functional module (tnet's or torch's), the input, a float and a class target
    cases = [lambda f, a, t, y: f.mse_loss(a, t, size_average, reduce),
             lambda f, a, t, y: f.l1_loss(a, t, **kw),
             lambda f, a, t, y: f.smooth_l1_loss(a, t, **kw),
             lambda f, a, t, y: f.nll_loss(a, y, None, **kw),
             lambda f, a, t, y: f.cross_entropy(a, y, **kw),
             lambda f, a, t, y: f.binary_cross_entropy(f.sigmoid(a), t, **kw),
             lambda f, a, t, y: f.binary_cross_entropy_with_logits(a, t, **kw),
             lambda f, a, t, y: f.kl_div(a, t, **kw),
             lambda f, a, t, y: f.soft_margin_loss(a, t, **kw)]
    for case in cases:
        x, xr = leaf(rng, 4, 5)
        with pytest.warns(UserWarning, match=f"please use reduction='{expected}' instead"):
            check(lambda a: case(F, a, tnet.tensor(t), tnet.tensor(y)),
                  lambda a: case(tF, a, torch.tensor(t), torch.tensor(y)), [(x, xr)], rng)
    for name in ("NLLLoss", "CrossEntropyLoss", "MSELoss", "BCEWithLogitsLoss"):
        with pytest.warns(UserWarning, match=f"please use reduction='{expected}' instead"):
            assert getattr(nn, name)(**kw).reduction == getattr(torch.nn, name)(**kw).reduction == expected


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_mse_and_l1_as_torch(rng, reduction):
    """mse_loss's and l1_loss's weight: element-wise, the mean over the weights' sum (huber_loss's
    is over the elements), as torch's."""
    w = rng.uniform(0, 1, (4, 5))
    for ours, theirs in ((F.mse_loss, tF.mse_loss), (F.l1_loss, tF.l1_loss), (F.huber_loss, tF.huber_loss)):
        x, xr = leaf(rng, 4, 5)
        t, tr = leaf(rng, 4, 5)
        check(lambda a, b: ours(a, b, reduction=reduction, weight=tnet.tensor(w)),
              lambda a, b: theirs(a, b, reduction=reduction, weight=torch.tensor(w)), [(x, xr), (t, tr)], rng)
    with pytest.raises(ValueError, match="same size"):
        F.mse_loss(x, t, weight=tnet.tensor(w[:1]))


def test_one_hot_as_torch():
    y = tnet.tensor([[3, 0], [1, 1]])
    assert F.one_hot(y).tolist() == tF.one_hot(torch.tensor([[3, 0], [1, 1]])).tolist()
    assert F.one_hot(y, 6).dtype == torch.int64 and F.one_hot(y, 6).shape == (2, 2, 6)
    for bad, classes, error in (([1, -1], -1, "non-negative"), ([1, 5], 5, "smaller than num_classes")):
        with pytest.raises(RuntimeError, match=error):
            F.one_hot(tnet.tensor(bad), classes)
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(tnet.tensor([1.0]))


# ---- sum_except: the bias gradient's sum over every dim but one -----------------------------

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


# ---- amax and amin, var and std, integer sums --------------------------------------------------

@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dim,keepdim,channels_last", [((), False, False), (1, True, True), ((0, 2), False, True),
                                                       ((-1, 1), True, False), ((0, 1, 2, 3), False, True)])
def test_amax_amin(rng, name, dim, keepdim, channels_last, dtype=torch.float32):
    """Every dim set (one run or several in memory order), with ties: the gradient is shared among
    them, as torch's amax."""
    values = np.round(rng.standard_normal((3, 5, 4, 7)), 0)  # many ties
    x = leaf(rng, 3, 5, 4, 7, values=values, channels_last=channels_last, dtype=dtype)
    check(lambda t: getattr(t, name)(dim, keepdim), lambda t: getattr(t, name)(dim, keepdim), [x], rng, tol_for(dtype))


def test_amax_nan_and_errors():
    x = tnet.tensor([[1.0, 3.0, 3.0], [np.nan, 1.0, 2.0]], requires_grad=True)
    y = tnet.amax(x, 1)
    y.backward(np.ones(2))
    assert np.isnan(y.numpy()[1]) and y.numpy()[0] == 3
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [np.nan] * 3])  # torch's: no element equals NaN
    assert F.amin(x, 1).numpy()[0] == 1 and np.isnan(F.amin(x).item())
    empty = tnet.zeros(0, 3)
    assert F.amax(empty, 1).shape == (0,)
    with pytest.raises(IndexError, match="reduction dim 0"):
        F.amax(empty, 0)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        F.amin(empty)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dim,kwargs,channels_last", [
    (None, {}, False), (1, {"keepdim": True}, True), ((0, 2, 3), {"unbiased": False}, True),
    ((-1,), {"correction": 0}, False), ((0, 2), {"correction": 2, "keepdim": True}, False)])
def test_var_std(rng, name, dim, kwargs, channels_last, dtype=torch.float32):
    x = leaf(rng, 3, 5, 4, 7, channels_last=channels_last, dtype=dtype)
    check(lambda t: getattr(t, name)(dim, **kwargs), lambda t: getattr(t, name)(dim, **kwargs), [x], rng, tol_for(dtype))


def test_var_std_forms_and_edges(rng):
    """torch's positional forms, the _mean pairs, a constant slice (std's gradient 0 there, as
    torch) and too few elements (inf or NaN, as torch)."""
    x = leaf(rng, 4, 6)
    check(lambda t: F.var(t, False), lambda t: torch.var(t, False), [x], rng)
    check(lambda t: F.std(t, 0, True, True), lambda t: torch.std(t, 0, True, True), [x], rng)
    for ours, ref in [(tnet.std_mean, torch.std_mean), (tnet.var_mean, torch.var_mean)]:
        check(lambda t: sum(ours(t, 1, correction=0)), lambda t: sum(ref(t, 1, correction=0)), [x], rng)
    c = leaf(rng, 2, 5, values=np.array([[1.0] * 5, [1, 2, 3, 4, 5.0]]))
    check(lambda t: t.std(1), lambda t: t.std(1), [c], rng)
    one = tnet.tensor([[2.0], [3.0]])
    assert np.isnan(F.var(one, 1).numpy()).all() and np.isinf(F.std(tnet.tensor([[2.0, 3.0]]), 1, correction=2).numpy()).all()
    with pytest.raises(ValueError, match="unbiased or correction"):
        F.var(x[0], 0, True, correction=1)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("n, correction", [(1, 2), (3, 3), (3, 4)])
def test_var_std_gradient_past_the_elements(name, n, correction):
    """A correction >= n: the value divides by dof 0 (inf or NaN) and the gradient by torch's unclamped
    n - correction (-0.0, inf or NaN terms, as torch's; tnet divided by 0: NaN; fuzz seed 29)."""
    x = np.array([[0.5, -1.25, 2.0], [1.0, 3.0, -2.0]], np.float32)[:, :n]
    g = np.array([1.5, -0.5], np.float32)
    a, t = tnet.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = getattr(tnet, name)(a, 1, correction=correction), getattr(torch, name)(t, 1, correction=correction)
    got.backward(tnet.tensor(g))
    want.backward(torch.tensor(g))
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_std_of_a_constant_slice_is_0_with_a_0_gradient_as_torch():
    """sum / n of three 0.8210846 is an ulp off: tnet's std was 7e-8 and its gradient (x - mean) / std about 0.6,
    where torch's Welford mean is exact (std 0, gradient 0); an expanded slice (fuzz seed 29)."""
    x = torch.tensor([[0.8210846185684204], [1.2773], [-0.0049]]).expand(3, 3)
    a, t = tnet.Tensor(x, requires_grad=True), x.clone().requires_grad_(True)
    got, want = tnet.std(a, 1), torch.std(t, 1)
    got.backward(tnet.ones(3))
    want.backward(torch.ones(3))
    assert got.tolist() == want.tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())


def test_var_mean_of_one_infinite_element_keeps_it_as_the_mean_as_torch():
    """The mean's correction (the mean of x - mean) is NaN beside an inf: the plain mean stays, as torch's Welford
    mean of one element is the element (a NaN mean after b18ed7d; fuzz seed 29)."""
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.tensor([-float("inf")], dtype=dtype)
        for op in ("var_mean", "std_mean"):
            got, want = getattr(tnet, op)(tnet.Tensor(x.clone()), correction=0), getattr(torch, op)(x, correction=0)
            assert np.isnan(got[0].item()) and np.isnan(want[0].item()) and got[1].tolist() == want[1].tolist() == -np.inf


def test_integer_sums():
    """Sums of bool and integer tensors are exact int64, as torch; their mean raises as torch's."""
    big = tnet.tensor(np.array([[2**40 + 1, 3], [5, -7]]))
    assert big.sum().dtype == torch.int64 and big.sum().item() == 2**40 + 2
    np.testing.assert_array_equal(F.sum(big, 0).numpy(), [2**40 + 6, -4])
    flags = tnet.tensor(np.arange(3000) % 3 == 0)
    assert flags.sum().item() == 1000 and flags.sum(0, keepdim=True).shape == (1,)
    assert F.sum(tnet.tensor(np.ones((3, 0), np.int64)), 1).numpy().tolist() == [0, 0, 0]
    with pytest.raises(RuntimeError, match="could not infer output dtype.*Got: Long$"):  # torch's message
        big.mean()


def _integers(rng, dtype, shape=(5, 4, 7)):
    """torch integers of dtype with few levels (ties), negative values and, in int64, values past 2^24
    that differ in their last bit (and the dtype's extremes); bool: both values."""
    if dtype == torch.bool:
        return torch.tensor(rng.integers(0, 2, shape) == 1)
    levels = torch.tensor(rng.integers(-3, 3, shape))
    if dtype == torch.int32:
        return levels.to(torch.int32)
    x = levels * (2**40 + 1) + torch.tensor(rng.integers(0, 2, shape))
    x.view(-1)[3], x.view(-1)[-5] = -2**63, 2**63 - 1
    return x


def _same(out, ref, what):
    assert out.dtype == ref.dtype and tuple(out.shape) == tuple(ref.shape), f"{what}: {out.dtype} {out.shape}, {ref}"
    assert torch.equal(host(out), ref), f"{what}: {host(out)} != {ref}"


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
@pytest.mark.parametrize("channels_last", [False, True])
def test_integer_max_min(rng, dtype, channels_last):
    """max, min, amax, amin, aminmax and argmax/argmin of integers and bools: exact (int64 past 2^24
    and at its extremes), in the input's dtype, the first of tied extremes, with dim and keepdim."""
    x = _integers(rng, dtype, (3, 5, 4, 7))
    t = dev(x.to(memory_format=CL) if channels_last else x)
    for name in ("max", "min"):
        _same(getattr(t, name)(), getattr(x, name)(), name)
        for dim, keepdim in [(0, False), (1, True), (-1, False), (2, True)]:
            out, ref = getattr(t, name)(dim, keepdim), getattr(x, name)(dim, keepdim)
            _same(out.values, ref.values, f"{name}({dim}, {keepdim})")
            _same(out.indices, ref.indices, f"{name}({dim}, {keepdim}) indices")
            if dtype != torch.bool:
                arg = "arg" + name
                _same(getattr(F, arg)(t, dim, keepdim), getattr(torch, arg)(x, dim, keepdim), arg)
        for dim in [(), 1, (0, 2), (-1, 1, 0)]:
            a = "a" + name
            _same(getattr(F, a)(t, dim), getattr(torch, a)(x, dim), f"{a}({dim})")
    if dtype != torch.bool:
        _same(F.argmax(t), torch.argmax(x), "argmax")
        _same(F.argmin(t, keepdim=True), torch.argmin(x, keepdim=True), "argmin")
    for ours, ref in zip(tnet.aminmax(t, dim=1, keepdim=True), torch.aminmax(x, dim=1, keepdim=True)):
        _same(ours, ref, "aminmax")
    _same(tnet.aminmax(t).max, torch.aminmax(x).max, "aminmax")


def test_integer_max_in_parts(monkeypatch, rng):
    """Long integer rows reduce in parts, the parts' extremes and indices exactly in int64."""
    monkeypatch.setattr(reduce, "CHUNK", 64)
    x = torch.tensor(rng.integers(-2**50, 2**50, (3, 150, 5)))
    x[1, 120, 2] = x[1, 130, 2] = 2**60 + 1  # tied in different parts: the first
    x[1, 100, 2] = 2**60
    x[2, 70, :] = -2**60 - 1
    t = dev(x)
    for name in ("max", "min"):
        out, ref = getattr(F, name)(t, 1), getattr(torch, name)(x, 1)
        _same(out.values, ref.values, name)
        _same(out.indices, ref.indices, name)
        _same(getattr(F, name)(t), getattr(torch, name)(x), name)
        _same(getattr(F, "arg" + name)(t), getattr(torch, "arg" + name)(x), "arg" + name)


def test_integer_reduction_edges():
    """bool argmax raises, as torch; empty integer inputs raise or give empty results as torch's;
    sums and products of bools and integers are int64."""
    b = tnet.tensor([[True, False], [False, False]])
    for name in ("argmax", "argmin"):
        with pytest.raises(RuntimeError, match="does not support bool input"):
            getattr(F, name)(b, 0)
    _same(F.sum(b, 1), torch.tensor([1, 0]), "sum")
    _same(F.prod(b, 0), torch.tensor([0, 0]), "prod")
    _same(F.prod(tnet.tensor(np.array([[2**20, -3], [2**20, 5]])), 0), torch.tensor([2**40, -15]), "prod")
    empty = tnet.Tensor(torch.zeros(0, 3, dtype=torch.int64))
    _same(F.max(empty, 1).values, torch.zeros(0, dtype=torch.int64), "max")
    _same(F.amin(empty, 1), torch.zeros(0, dtype=torch.int64), "amin")
    with pytest.raises(IndexError, match="reduction dim 0"):
        F.max(empty, 0)
    with pytest.raises(IndexError, match="reduction dim 0"):
        F.argmin(empty, 0)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        F.amax(empty)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        F.min(empty)


@pytest.mark.parametrize("dtype", LOW)
def test_amax_var_16_bit(rng, dtype):
    test_amax_amin(rng, "amin", (0, 2), False, True, dtype)
    test_var_std(rng, "std", 1, {"keepdim": True}, True, dtype)


KERNELS = [reduce.reduce_kernel, reduce.sum_kernel]


@pytest.mark.parametrize("i", config_indices(KERNELS))
def test_reduce_every_config(rng, i, monkeypatch):
    """A few of the tests above with each kernel's i-th tile config (or its last); then sums
    split into parts of 64, for short CPU runs."""
    only_ith_config(monkeypatch, KERNELS, i)
    for dtype in CONFIG_DTYPES:
        test_sum_except((3, 5, 4000), 1, dtype)
    monkeypatch.setattr(reduce, "CHUNK", 64)
    for dtype in CONFIG_DTYPES:
        long_sums(rng, (3, 150, 5), 1, dtype)
        check(lambda t: t.mean((2, 3)), lambda t: t.mean((2, 3)), [leaf(rng, 3, 37, 4, 4, dtype=dtype)], rng,
              tol_for(dtype))
        test_max_dim_with_ties(rng, 1, False, True, dtype)
        test_amax_amin(rng, "amin", (-1, 1), True, False, dtype)
        check(lambda t: t.var(1), lambda t: t.var(1), [leaf(rng, 3, 150, 5, dtype=dtype)], rng, tol_for(dtype))
    test_integer_sums()
    test_max_ties_across_parts(monkeypatch)
    test_integer_max_in_parts(monkeypatch, rng)


# ---- products, distances and running sums of the eighth session ----------------------------------

EIGHTH_REDUCTIONS = [
    ("inner", lambda m, x: m.inner(x, x[1:] * 2)), ("inner 0-d", lambda m, x: x.inner(x[0, 0])),
    ("corrcoef", lambda m, x: m.corrcoef(x)), ("corrcoef 1-D", lambda m, x: x[0].corrcoef()),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, -1)), ("logcumsumexp 0", lambda m, x: x.logcumsumexp(0)),
    ("dist", lambda m, x: m.dist(x, x[1:2] * 0.5)), ("dist p=1", lambda m, x: x.dist(x.flip(0), 1)),
    ("dist inf", lambda m, x: m.dist(x, x.flip(1), float("inf"))), ("dist 3", lambda m, x: m.dist(x, x.flip(1), 3)),
    ("renorm", lambda m, x: m.renorm(x, 2, 0, 1.0)), ("renorm p=1 dim -1", lambda m, x: x.renorm(1, -1, 2.0)),
]


@pytest.mark.parametrize("name, op", EIGHTH_REDUCTIONS, ids=[n for n, _ in EIGHTH_REDUCTIONS])
def test_eighth_session_reductions_as_torchs(rng, ieee, name, op):
    x, xr = leaf(rng, 3, 5)
    check(lambda x: op(tnet, x), lambda x: op(torch, x), [(x, xr)], rng)


def test_eighth_session_reductions_edges():
    x = tnet.tensor([[-1000.0, 0.0, float("-inf"), 1.0], [float("-inf")] * 4])
    ref = torch.tensor([[-1000.0, 0.0, float("-inf"), 1.0], [float("-inf")] * 4]).logcumsumexp(1)
    got = host(x.logcumsumexp(1))
    assert torch.equal(got[1], ref[1]) and torch.allclose(got[0], ref[0])  # a running shift: -1000 stays -1000
    assert tnet.logcumsumexp(tnet.zeros(0, 3), 1).shape == (0, 3) and tnet.tensor(2.0).logcumsumexp(0).item() == 2.0
    nan = tnet.tensor(float("nan"), requires_grad=True)  # a 0-d input's gradient is g, as torch's (fuzz seed 10)
    nan.logcumsumexp(0).backward(tnet.tensor(-0.5))
    assert nan.grad.item() == -0.5
    for error, fn in [(RuntimeError, lambda: tnet.inner(tnet.zeros(2, 3), tnet.zeros(2, 2))),
                      (RuntimeError, lambda: tnet.renorm(tnet.zeros(3), 2, 0, 1)),
                      (RuntimeError, lambda: tnet.renorm(tnet.zeros(3, 2), 0, 0, 1)),
                      (IndexError, lambda: tnet.renorm(tnet.zeros(3, 2), 2, 2, 1)),
                      (RuntimeError, lambda: tnet.logcumsumexp(tnet.zeros(2, dtype=tnet.int64), 0))]:
        with pytest.raises(error):
            fn()


def test_reduction_dim_errors_are_torchs():
    x = tnet.zeros(2, 3)
    with pytest.raises(IndexError, match="out of range"):
        x.sum(5)
    with pytest.raises(TypeError):
        x.sum(1.5)
    with pytest.raises(RuntimeError, match="multiple times"):
        x.mean((0, 0))
