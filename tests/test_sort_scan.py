"""Sorting, scans and the reductions beside them (kernels/sort.py, functional/sort.py,
functional/reduce.py) against torch in float64: sort, argsort and topk with ties, NaN and rows of
1, 7 and 33; the top-5 accuracy idiom; cumsum and cumprod (zeros in its gradient, long rows in
chunks); min, argmin, prod with zeros, any, all, count_nonzero and logsumexp with infinite rows."""
import math

import numpy as np
import pytest
import torch

import tnet
from tnet.kernels import sort as sort_kernels
from helpers import TOL, assert_close, check, leaf

# The interpreter computes every branch of a tl.where in numpy, masked lanes too: log(0) warns.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def same(out, ref, what=""):
    """Equal values, NaN matching NaN, and equal shapes."""
    out, ref = np.asarray(out.numpy(), np.float64), np.asarray(ref.detach().numpy(), np.float64)
    assert out.shape == ref.shape and np.array_equal(out, ref, equal_nan=True), f"{what}: {out} vs {ref}"


def tied(rng, *shape):
    """Values of few levels (most rows hold ties), a NaN row and a NaN among them, -0.0 beside 0.0."""
    a = rng.integers(-2, 3, shape).astype(np.float64)
    a.reshape(-1, shape[-1])[0] = np.nan
    a.reshape(-1)[-2] = np.nan
    a.reshape(-1)[1::7] *= -1  # -0.0 where a was 0
    return a


@pytest.fixture(params=["as it runs", "one program"])
def sort_path(request, monkeypatch):
    """Each sort test twice: as sorts run here (the interpreter merge-sorts every row), and with every
    row of at most MAX_SORT sorted in one program by sort_kernel, as on the GPU."""
    if request.param == "one program":
        monkeypatch.setattr(sort_kernels, "LONG_FROM", sort_kernels.MAX_SORT)


@pytest.mark.parametrize("shape,dim", [((7,), -1), ((3, 33), 1), ((4, 1, 5), 0), ((2, 7, 3), 1)])
def test_sort_ties_and_nan_as_torch_stable(rng, shape, dim, sort_path):
    a = tied(rng, *shape)
    x, r = tnet.tensor(a), torch.tensor(a)
    for descending in (False, True):
        out, ref = tnet.sort(x, dim, descending), torch.sort(r, dim=dim, descending=descending, stable=True)
        same(out.values, ref.values, "values")
        same(out.indices, ref.indices, "indices")
        same(x.argsort(dim, descending), ref.indices, "argsort")
    top, ref = x.topk(shape[dim] // 2 + 1, dim), r.topk(shape[dim] // 2 + 1, dim)
    same(top.values, ref.values, "topk values")
    same(r.gather(dim, torch.from_numpy(top.indices.numpy())), ref.values, "topk indices")  # any of equal ones
    # tnet's among equal ones: the first, as torch's stable sort orders them (README's porting section)
    first = torch.sort(r, dim=dim, descending=True, stable=True).indices.narrow(dim, 0, shape[dim] // 2 + 1)
    same(top.indices, first, "topk indices: the first of equal ones")
    small = x.topk(2 if shape[dim] > 1 else 1, dim, largest=False)
    same(small.values, r.topk(small.values.shape[dim], dim, largest=False).values, "topk smallest")


def test_sort_and_topk_gradients(rng):
    x = leaf(rng, 5, 33)  # distinct values: the same elements move as in torch
    check(lambda t: t.sort(1, descending=True).values * 1.0, lambda t: t.sort(1, descending=True).values, [x], rng)
    x = leaf(rng, 7, 4, dtype=torch.float16)
    check(lambda t: t.sort(0).values, lambda t: t.sort(0).values, [x], rng, TOL["fp16"])
    x = leaf(rng, 7, 3, 6)
    check(lambda t: t.topk(3, 1, largest=False).values, lambda t: t.topk(3, 1, largest=False).values, [x], rng)
    x = leaf(rng, 1, 1)
    check(lambda t: t.topk(1).values, lambda t: t.topk(1).values, [x], rng)


def test_sort_dtypes_views_and_errors(rng, sort_path):
    a = rng.integers(-5, 5, (3, 9))
    r = torch.tensor(a, dtype=torch.int32)
    x = tnet.tensor(r, dtype=tnet.int32)
    same(tnet.sort(x).values, r.sort(stable=True).values, "int32")
    same(tnet.sort(x).indices, r.sort(stable=True).indices, "int32 indices")
    same(tnet.argsort((x > 0).T, 0, descending=True), torch.argsort((r > 0).T, dim=0, descending=True, stable=True),
         "bool, a transposed view")
    x = tnet.tensor(2.5, requires_grad=True)
    assert x.sort().values.shape == () and x.topk(1).indices.item() == 0
    assert tnet.sort(tnet.zeros(0, 3)).values.shape == (0, 3) and tnet.topk(tnet.ones(4, 2), 0).values.shape == (4, 0)
    with pytest.raises(RuntimeError, match="out of range"):
        tnet.topk(tnet.ones(3), 4)
    with pytest.raises(IndexError):
        tnet.sort(tnet.ones(3), 1)
    big = np.array([[2**40 + 3, -2**40, 5, 2**40 + 3, -1, 0, 2**33, -2**40 + 7, 5]])
    for a in (big, rng.integers(-3, 3, (4, 6))):  # int64: sorted by low halves, then high halves
        x, r = tnet.tensor(a), torch.tensor(a)
        for descending in (False, True):
            same(x.sort(-1, descending).indices, r.sort(dim=-1, descending=descending, stable=True).indices, "int64")
            same(x.topk(3, 1, largest=descending).values, r.topk(3, 1, largest=descending).values, "int64 topk")
            same(x.sort(0, descending).values, r.sort(dim=0, descending=descending).values, "int64 dim 0")


def test_top5_accuracy_idiom(rng):
    """ImageNet's accuracy(): the top-5 predictions against the targets."""
    logits, target = rng.standard_normal((9, 12)), rng.integers(0, 12, 9)
    out, y = tnet.tensor(logits), tnet.tensor(target)
    _, pred = out.topk(5, 1, True, True)
    pred = pred.t()
    correct = pred.eq(y.view(1, -1).expand_as(pred))
    _, ref = torch.tensor(logits).topk(5, 1, True, True)
    ref = ref.t().eq(torch.tensor(target).view(1, -1).expand_as(ref.t()))
    same(correct, ref, "correct")
    for k in (1, 5):
        same(correct[:k].reshape(-1).float().sum(0, keepdim=True), ref[:k].reshape(-1).float().sum(0, keepdim=True))


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 33), -1), ((33, 2), 0), ((2, 1, 7), 1)])
def test_cumsum_cumprod_as_torch(rng, shape, dim):
    x = leaf(rng, *shape)
    check(lambda t: tnet.cumsum(t, dim), lambda t: torch.cumsum(t, dim), [x], rng)
    x = leaf(rng, *shape, values=rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape))
    check(lambda t: t.cumprod(dim), lambda t: t.cumprod(dim), [x], rng)


def test_cumprod_gradient_at_zeros(rng):
    a = rng.uniform(0.5, 1.5, (5, 7))
    a[0, 3] = a[1, 0] = a[2, 6] = a[3, 2] = a[3, 5] = a[4, 1] = a[4, 2] = 0.0  # one, first, last, two, adjacent
    check(lambda t: t.cumprod(1), lambda t: t.cumprod(1), [leaf(rng, 5, 7, values=a)], rng)
    check(lambda t: t.cumprod(0), lambda t: t.cumprod(0), [leaf(rng, 7, 5, values=a.T.copy())], rng)


def test_scan_dtypes_and_long_rows_in_chunks(rng, monkeypatch):
    b = torch.tensor(rng.integers(-3, 4, (4, 6)))
    for r in (b, b.int(), b > 0):
        out = tnet.tensor(r).cumsum(1)
        assert out.dtype == torch.int64
        same(out, r.cumsum(1), f"{r.dtype} cumsum")
        same(tnet.tensor(r).cumprod(0), r.cumprod(0), f"{r.dtype} cumprod")
    same(tnet.tensor(b).cumsum(0, dtype=tnet.float32), b.cumsum(0, dtype=torch.float32), "dtype")
    assert tnet.cumsum(tnet.tensor(3.0), 0).item() == 3.0 and tnet.cumsum(tnet.zeros(0, 2), 1).shape == (0, 2)
    monkeypatch.setattr(sort_kernels, "SCAN_BLOCK", 16)  # rows of 3 chunks and a part, the totals carried
    x = leaf(rng, 3, 55)
    check(lambda t: t.cumsum(1), lambda t: t.cumsum(1), [x], rng)
    x = leaf(rng, 55, 2, values=rng.uniform(0.9, 1.1, (55, 2)))
    check(lambda t: t.cumprod(0), lambda t: t.cumprod(0), [x], rng)


def test_min_argmin_as_torch(rng):
    a = tied(rng, 4, 7)
    x, r = tnet.tensor(a), torch.tensor(a)
    for dim, keepdim in ((0, False), (1, True), (-1, False)):
        out, ref = tnet.min(x, dim, keepdim), torch.min(r, dim, keepdim)
        same(out.values, ref.values, "values")
        same(out.indices, ref.indices, "indices")
        same(x.argmin(dim, keepdim), r.argmin(dim, keepdim), "argmin")
    same(x.min(), r.min(), "min of all")
    same(x[1:].argmin(), r[1:].argmin(), "argmin of all")
    y = leaf(rng, 4, 7)
    check(lambda t: t.min(1).values, lambda t: t.min(1).values, [y], rng)
    z = leaf(rng, 4, 7, values=np.nan_to_num(a[::-1].copy()))
    check(lambda t: t.min(), lambda t: t.min(), [z], rng)  # ties share the gradient
    check(lambda t, u: tnet.min(t, u), lambda t, u: torch.min(t, u), [leaf(rng, 3, 5), leaf(rng, 1, 5)], rng)
    check(lambda t, u: tnet.max(t, u), lambda t, u: torch.max(t, u), [leaf(rng, 3, 5), leaf(rng, 3, 1)], rng)
    with pytest.raises(IndexError):
        tnet.argmin(tnet.zeros(0))


def test_prod_with_zeros_as_torch(rng):
    a = rng.uniform(0.5, 1.5, (4, 5)) * rng.choice([-1, 1], (4, 5))
    a[1, 2] = a[2, 0] = a[2, 4] = 0.0  # rows with no, one and two zeros
    for dim, keepdim in ((None, False), (1, False), (0, True), (-1, True)):
        check(lambda t: t.prod(dim, keepdim) if dim is not None else t.prod(),
              lambda t: t.prod(dim, keepdim) if dim is not None else t.prod(), [leaf(rng, 4, 5, values=a)], rng)
    check(lambda t: t.prod(), lambda t: t.prod(), [leaf(rng, 1, 3, values=np.array([[0.5, 0.0, 3.0]]))], rng)
    i = torch.tensor(rng.integers(-3, 4, (3, 5)))
    for r in (i, i.int(), i != 0):
        out = tnet.tensor(r).prod(1)
        assert out.dtype == torch.int64
        same(out, r.prod(1), f"{r.dtype} prod")
    same(tnet.tensor(i).prod(dtype=tnet.float32), i.prod(dtype=torch.float32), "dtype")
    assert tnet.prod(tnet.zeros(0, 3), 0).numpy().tolist() == [1.0, 1.0, 1.0]


def test_any_all_count_nonzero_as_torch(rng):
    a = rng.integers(0, 2, (3, 4, 5)).astype(np.float64)
    a[0] = 1.0
    a[1, 1] = np.nan
    for r in (torch.tensor(a), torch.tensor(a).long(), torch.tensor(a) > 0):
        x = tnet.tensor(r)
        same(tnet.any(x), torch.any(r), "any")
        same(tnet.all(x), torch.all(r), "all")
        same(tnet.count_nonzero(x), torch.count_nonzero(r), "count_nonzero")
        for dim in (0, -1, (1, 2)):
            same(x.any(dim, keepdim=True), r.any(dim, keepdim=True), f"any {dim}")
            same(x.all(dim), r.all(dim), f"all {dim}")
            same(x.count_nonzero(dim), r.count_nonzero(dim), f"count_nonzero {dim}")
    assert tnet.all(tnet.zeros(0)).item() and not tnet.any(tnet.zeros(0)).item()


def test_logsumexp_as_torch(rng):
    for dim, keepdim in ((1, False), (0, True), ((0, 2), False)):
        check(lambda t: t.logsumexp(dim, keepdim), lambda t: t.logsumexp(dim, keepdim), [leaf(rng, 3, 7, 2)], rng)
    a = rng.standard_normal((5, 4)) * 50
    a[0] = -math.inf
    a[1, 1] = math.inf
    a[2, 2] = np.nan
    a[3, 0] = -math.inf
    x, r = tnet.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, ref = tnet.logsumexp(x, 1), torch.logsumexp(r, 1)
    assert_close(out.memory[3:], ref.detach()[3:], TOL["ieee"], "finite rows")
    same(out, ref.float(), "-inf, inf and NaN rows")
    out.backward(np.ones(5))
    ref.sum().backward()
    same(x.grad[0], r.grad[0].float(), "the gradient of a row of -inf: NaN")
    assert_close(x.grad.memory[3:], r.grad[3:], TOL["ieee"], "gradient")
    same(tnet.logsumexp(tnet.tensor([[1, 2]]), 1), torch.tensor([[1, 2]]).logsumexp(1), "integers")
    same(tnet.logsumexp(tnet.zeros(0, 3), 0), torch.zeros(0, 3).logsumexp(0), "empty")
    with pytest.raises(TypeError):
        tnet.logsumexp(tnet.ones(3))


def test_torch_for_memory_only(rng):
    from helpers import MEMORY_OPS, Recorder
    x = tnet.tensor(rng.standard_normal((3, 9)), requires_grad=True)
    with Recorder() as rec:
        parts = [x.sort(0).values, x.topk(2).values, x.cumsum(1), x.cumprod(0), x.prod(1, keepdim=True),
                 x.logsumexp(1, keepdim=True), x.min(1, keepdim=True).values]
        sum(p.sum() for p in parts).backward()
        tnet.tensor([[5, -2**40, 3]]).T.argsort(0), x.any(), x.all(1), x.count_nonzero(), x.argmin()
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


# ---- quantiles, modes and searches of the eighth session -----------------------------------------

QUANTILES = [("quantile", lambda m, x: m.quantile(x, 0.3)), ("quantile dim", lambda m, x: x.quantile(0.75, 1, True)),
             ("quantile q tensor", lambda m, x: m.quantile(x, m.tensor([0.0, 0.5, 1.0], dtype=x.dtype), 0)),
             ("quantile q tensor keepdim", lambda m, x: m.quantile(x, m.tensor([0.25, 0.9], dtype=x.dtype), -1, True)),
             ("quantile all keepdim", lambda m, x: x.quantile(0.4, keepdim=True))]
QUANTILES += [(f"quantile {mode}", lambda m, x, mode=mode: m.quantile(x, 0.55, 1, interpolation=mode))
              for mode in ("lower", "higher", "midpoint", "nearest")]
QUANTILES += [("nanquantile", lambda m, x: m.nanquantile(x, 0.3, 1)), ("nanmedian", lambda m, x: x.nanmedian()),
              ("nanmedian dim", lambda m, x: m.nanmedian(x, 1).values),
              ("nanmedian keepdim", lambda m, x: x.nanmedian(0, True).values), ("mode", lambda m, x: m.mode(x.round()).values)]


@pytest.mark.parametrize("name, op", QUANTILES, ids=[n for n, _ in QUANTILES])
def test_quantiles_medians_and_modes_as_torchs(rng, name, op):
    x, xr = leaf(rng, 4, 5)
    check(lambda x: op(tnet, x), lambda x: op(torch, x), [(x, xr)], rng)


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_is_contiguous_as_torchs(rng, keepdim):
    """kthvalue over a dim not the last: values and indices contiguous, as torch's (a slice of the sort had
    its strides, and .view refused them)."""
    a = rng.standard_normal((3, 4, 5))
    out, ref = tnet.tensor(a).kthvalue(2, 1, keepdim), torch.tensor(a, dtype=torch.float32).kthvalue(2, 1, keepdim)
    for o, r in zip(out, ref):
        assert o.stride() == r.stride() and o.is_contiguous()
        same(o, r)


def test_nan_quantiles_medians_and_modes_as_torchs():
    nan = float("nan")
    data = [[1.0, nan, 3.0, 2.0], [nan, nan, nan, nan], [4.0, 4.0, 1.0, 2.0], [2.0, 1.0, 2.0, 1.0]]
    x, xr = tnet.tensor(data), torch.tensor(data)
    for op in (lambda m, x: m.quantile(x, 0.5, 1), lambda m, x: m.nanquantile(x, 0.4, 1),
               lambda m, x: m.nanquantile(x, m.tensor([0.0, 1.0]), 1, interpolation="nearest"),
               lambda m, x: m.nanmedian(x, 1).values, lambda m, x: m.nanmedian(x[2:], 1).indices, lambda m, x: m.nanmedian(x),
               lambda m, x: m.mode(x[2:], 1).values, lambda m, x: m.mode(x[2:], 1).indices,
               lambda m, x: m.mode(x[2:].long(), 0).indices, lambda m, x: m.mode(x[2:].long(), 0).values,
               lambda m, x: m.nanmedian(x[:0]), lambda m, x: m.mode(x[0, 0]).values):  # a row of NaNs' index: torch's own
        got, ref = op(tnet, x).memory.cpu(), op(torch, xr)
        assert got.dtype == ref.dtype and torch.allclose(got, ref, equal_nan=True), (got, ref)
    for error, match, fn in [(RuntimeError, "range \\[0, 1\\]", lambda: x.quantile(1.5)),
                             (RuntimeError, "non-empty", lambda: tnet.quantile(x[:0], 0.5)),
                             (RuntimeError, "float or double", lambda: tnet.quantile(x.long(), 0.5)),
                             (RuntimeError, "same dtype", lambda: tnet.quantile(x, tnet.tensor([1]))),
                             (RuntimeError, "scalar or 1D", lambda: tnet.quantile(x, tnet.tensor([[0.5]]))),
                             (RuntimeError, "interpolation", lambda: tnet.quantile(x, 0.5, interpolation="x")),
                             (IndexError, "non-zero size", lambda: tnet.mode(tnet.zeros(2, 0), 1))]:
        with pytest.raises(error, match=match):
            fn()


def test_median_of_all_elements_shares_a_tie_gradient_as_torch():
    """median() and nanmedian() (no dim) give every element equal to the median an even share of the
    gradient (torch's evenly_distribute_backward); it went to one of them (fuzz seed 10)."""
    nan = float("nan")
    for data in ([[1.0, 2.0, 2.0], [3.0, 2.0, 0.0]], [[1.0, nan], [2.0, nan]], [[4.0]]):
        for name in ("median", "nanmedian"):
            x, xr = tnet.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
            getattr(tnet, name)(x).backward(tnet.tensor(3.0))
            getattr(torch, name)(xr).backward(torch.tensor(3.0))
            np.testing.assert_array_equal(x.grad.numpy(), xr.grad.numpy())
    assert tnet.median(tnet.tensor([3, 1, 2])).item() == 2


def test_searchsorted_and_bucketize_as_torchs(rng):
    seq = np.sort(rng.integers(-5, 5, (3, 7)).astype(np.float32), 1)
    values = rng.integers(-6, 6, (3, 4)).astype(np.float32)
    values[0, 0] = np.nan
    s, v, sr, vr = tnet.tensor(seq), tnet.tensor(values), torch.tensor(seq), torch.tensor(values)
    order = np.argsort(rng.standard_normal(7)).astype(np.int64)
    for op in (lambda m, s, v: m.searchsorted(s, v), lambda m, s, v: m.searchsorted(s, v, right=True),
               lambda m, s, v: m.searchsorted(s[1], v, side="right", out_int32=True),
               lambda m, s, v: m.searchsorted(s[0], 0.5), lambda m, s, v: m.searchsorted(s[2].long(), v[0]),
               lambda m, s, v: m.searchsorted(s[0].to(m.float16), v[1:].to(m.bfloat16)),
               lambda m, s, v: m.searchsorted(s[0, order], v, sorter=m.tensor(np.argsort(order, kind="stable"))),
               lambda m, s, v: m.searchsorted(s[:0, :], v[:0]), lambda m, s, v: m.searchsorted(s[:, :0], v),
               lambda m, s, v: m.bucketize(v, s[1]), lambda m, s, v: m.bucketize(v, s[2], right=True, out_int32=True),
               lambda m, s, v: m.bucketize(2, s[0])):
        got, ref = op(tnet, s, v).memory.cpu(), op(torch, sr, vr)
        assert got.dtype == ref.dtype and torch.equal(got, ref), (got, ref)
    for fn in (lambda: tnet.searchsorted(s, v[:2]), lambda: tnet.bucketize(v, s),
               lambda: tnet.searchsorted(s[0], v, side="left", right=True)):
        with pytest.raises(RuntimeError):
            fn()


@pytest.mark.parametrize("run", [None, 1, 4, 64])
def test_long_rows_merge_sort_as_torch(rng, run):
    """Rows merge-sorted from runs (kernels.sort LONG_FROM; `run` forces runs of that length on a short
    row): ties keep their order, NaN is last, -0.0 ties 0.0, descending, the first k, a strided row, int64
    in two passes; a 40000-long row (runs of MAX_SORT on the GPU, two merge passes, a short last run)."""
    def same_sort(x, dim, k=None, descending=False):
        values, indices = sort_kernels.sort(x, dim, k, descending, run=run)
        ref_values, ref_indices = torch.sort(x, dim=dim, descending=descending, stable=True)
        if k is not None:
            ref_values, ref_indices = ref_values.narrow(dim, 0, k), ref_indices.narrow(dim, 0, k)
        assert torch.equal(indices.cpu(), ref_indices.cpu()), (tuple(x.shape), dim, k, descending)
        torch.testing.assert_close(values.cpu(), ref_values.cpu(), rtol=0, atol=0, equal_nan=True)
    device = tnet.zeros(1).memory.device
    x = torch.tensor(tied(rng, 3, 37), dtype=torch.float32, device=device)
    for descending in (False, True):
        same_sort(x, 1, descending=descending)
        same_sort(x.t(), 0, 5, descending)
    same_sort(x.to(torch.bfloat16), 1, 9)
    ints = torch.tensor(rng.integers(-2**40, 2**40, (2, 29)), device=device)
    ints[0, :5] = 7
    same_sort(ints, 1, descending=True)
    if run is None:
        same_sort(torch.tensor(rng.standard_normal(40000), dtype=torch.float32, device=device), 0, 3000)
