"""What training scripts use beside the layers (issue 26): advanced indexing, norms, normalize,
cosine similarity, KL divergence, PReLU, instance norm, nearest interpolation, and the names a
script touches once (backends, compile, Variable, cpu/cuda/type_as, dtype names, Generator, DataParallel,
x.data). Each against torch in float64."""
import collections
import copy
import importlib
import math
import warnings

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from helpers import DEV, MATMUL_TOL, TOL, assert_close, check, flag_checked, leaf


@pytest.mark.parametrize("p", [2, "fro", 1, 3, math.inf, -math.inf])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True)])
def test_norm_as_torch(rng, p, dim, keepdim):
    x, ref = leaf(rng, 3, 4, 5)
    check(lambda a: tnet.norm(a, p, dim, keepdim), lambda a: torch.norm(a, p, dim, keepdim), [(x, ref)], rng)


def test_nuclear_norm_as_torch(rng):
    """torch.norm(p='nuc'): the matrix nuclear norm over dim (None: both dims of a matrix), with its gradient;
    a 3-D input without dim raises torch's RuntimeError."""
    x, ref = leaf(rng, 3, 4)
    check(lambda a: tnet.norm(a, "nuc"), lambda a: torch.norm(a, "nuc"), [(x, ref)], rng, MATMUL_TOL)
    y, yref = leaf(rng, 2, 3, 4)
    check(lambda a: tnet.norm(a, p="nuc", dim=(1, 2), keepdim=True),
          lambda a: torch.norm(a, p="nuc", dim=(1, 2), keepdim=True), [(y, yref)], rng, MATMUL_TOL)
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        tnet.norm(y, "nuc")


def test_two_norm_of_zeros_has_torchs_zero_gradient():
    x = tnet.tensor(np.zeros((2, 3)), requires_grad=True)
    x.norm(dim=1).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.zeros((2, 3)))


def test_normalize_cosine_similarity_kl_div_as_torch(rng):
    x, xr = leaf(rng, 4, 6)
    y, yr = leaf(rng, 4, 6)
    check(lambda a: F.normalize(a, dim=1), lambda a: torch.nn.functional.normalize(a, dim=1), [(x, xr)], rng)
    check(lambda a, b: F.cosine_similarity(a, b), lambda a, b: torch.nn.functional.cosine_similarity(a, b),
          [(x, xr), (y, yr)], rng)
    for reduction in ("mean", "batchmean", "sum", "none"):
        logp = lambda t, mod: mod.log_softmax(t, 1)
        check(lambda a, b: F.kl_div(logp(a, F), F.softmax(b, 1), reduction=reduction),
              lambda a, b: torch.nn.functional.kl_div(logp(a, torch), torch.softmax(b, 1), reduction=reduction),
              [(x, xr), (y, yr)], rng)
        check(lambda a, b: F.kl_div(logp(a, F), logp(b, F), reduction=reduction, log_target=True),
              lambda a, b: torch.nn.functional.kl_div(logp(a, torch), logp(b, torch), reduction=reduction,
                                                      log_target=True), [(x, xr), (y, yr)], rng)


def test_normalize_out_as_torch(rng):
    """torch.nn.utils.spectral_norm's power iteration writes normalize's result into its buffer by out=."""
    w = rng.standard_normal((5, 3)).astype(np.float32)
    u = rng.standard_normal(5).astype(np.float32)
    results = []
    for lib, fn in ((tnet, F), (torch, torch.nn.functional)):
        weight, v = lib.tensor(w, requires_grad=True), lib.empty(0)  # out resized, as torch resizes it
        with lib.no_grad():
            returned = fn.normalize(lib.mv(weight.t(), lib.tensor(u)), dim=0, eps=1e-12, out=v)
        assert returned is v
        results.append(np.asarray(v.numpy()))
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            fn.normalize(weight, dim=0, out=lib.zeros(5, 3))
    np.testing.assert_allclose(*results, rtol=max(1e-6, MATMUL_TOL))  # mv in tf32 on the GPU


def test_kl_div_of_a_zero_target_is_zero():
    out = F.kl_div(tnet.tensor([[-1.0, -2.0]]), tnet.tensor([[0.0, 1.0]]), reduction="none")
    assert out.numpy().tolist() == [[0.0, 2.0]]


def test_prelu_as_torch(rng):
    x, xr = leaf(rng, 2, 3, 4, 4)
    x.memory[0, 0, 0, :2] = 0.0
    xr.data[0, 0, 0, :2] = 0.0
    for n in (1, 3):
        w, wr = leaf(rng, n)
        check(lambda a, b: F.prelu(a, b), lambda a, b: torch.nn.functional.prelu(a, b), [(x, xr), (w, wr)], rng)
    assert nn.PReLU(3).weight.numpy().tolist() == [0.25] * 3


def test_instance_norm_as_torch(rng):
    x, xr = leaf(rng, 2, 3, 4, 5)
    w, wr = leaf(rng, 3)
    b, br = leaf(rng, 3)
    check(lambda a, c, d: F.instance_norm(a, weight=c, bias=d), lambda a, c, d: torch.nn.functional.instance_norm(
        a, weight=c, bias=d), [(x, xr), (w, wr), (b, br)], rng, TOL["ieee"] * 10)
    assert nn.InstanceNorm2d(3).weight is None and nn.InstanceNorm2d(3, affine=True).weight.shape == (3,)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_instance_norm_running_statistics_as_torch(rng, momentum):
    """track_running_stats=True: training mode updates running_mean and running_var by the mean over
    the batch of each instance's statistics (num_batches_tracked stays 0), eval mode normalises with
    them; momentum=None is 0 (the running statistics stay), as torch's."""
    model = nn.InstanceNorm2d(3, affine=True, momentum=momentum, track_running_stats=True)
    ref = torch.nn.InstanceNorm2d(3, affine=True, momentum=momentum, track_running_stats=True).double()
    assert list(model.state_dict()) == list(ref.state_dict())
    for _ in range(2):
        x, xr = leaf(rng, 2, 3, 4, 5)
        check(model, ref, [(x, xr)], rng, TOL["ieee"] * 10)
    for name, value in ref.state_dict().items():
        assert_close(model.state_dict()[name].memory, value, TOL["ieee"], name)
    model.eval(), ref.eval()
    x, xr = leaf(rng, 3, 4, 5)  # unbatched
    check(model, ref, [(x, xr)], rng, TOL["ieee"] * 10)


@pytest.mark.parametrize("kwargs", [dict(scale_factor=2), dict(size=(6, 10)), dict(size=3), dict(scale_factor=1.5),
                                    dict(scale_factor=(0.5, 3))])
def test_nearest_interpolate_as_torch(rng, kwargs):
    x, xr = leaf(rng, 2, 3, 4, 5)
    check(lambda a: F.interpolate(a, **kwargs), lambda a: torch.nn.functional.interpolate(a, **kwargs), [(x, xr)], rng)
    assert tuple(nn.Upsample(**kwargs)(x).shape) == tuple(torch.nn.Upsample(**kwargs)(xr).shape)


def test_interpolate_errors():
    x = tnet.randn(1, 2, 4, 4)
    v = tnet.randn(1, 2, 2, 2, 2)  # a volume: nearest by default (5-D resampling since the ported scripts 17)
    assert np.array_equal(F.interpolate(v, scale_factor=2).numpy(),
                          torch.nn.functional.interpolate(torch.tensor(v.numpy()), scale_factor=2).numpy())
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)


def test_advanced_indexing_as_torch(rng):
    x, xr = leaf(rng, 5, 3, 2)
    idx = tnet.tensor(np.array([[4, 0], [0, 2]]))
    check(lambda a: a[idx], lambda a: a[torch.tensor([[4, 0], [0, 2]])], [(x, xr)], rng)
    check(lambda a: a[[1, 1, 3]], lambda a: a[[1, 1, 3]], [(x, xr)], rng)
    check(lambda a: a[:, tnet.tensor([2, 0])], lambda a: a[:, torch.tensor([2, 0])], [(x, xr)], rng)
    mask = xr.detach()[:, 0, 0] > 0
    check(lambda a: a[tnet.tensor(mask.numpy())], lambda a: a[mask], [(x, xr)], rng)
    full = xr.detach() > 0
    check(lambda a: a[tnet.tensor(full.numpy())], lambda a: a[full], [(x, xr)], rng)
    check(lambda a: a[idx, 1], lambda a: a[torch.tensor([[4, 0], [0, 2]]), 1], [(x, xr)], rng)


def test_names_scripts_touch_once():
    tnet.backends.cudnn.benchmark = True
    model = nn.Linear(2, 2)
    assert tnet.compile(print) is print and tnet.compile(mode="max-autotune")(print) is print
    compiled = tnet.compile(model)  # torch's OptimizedModule: the model under _orig_mod
    assert compiled._orig_mod is model and compiled.weight is model.weight and compiled.in_features == 2
    assert list(compiled.state_dict()) == list(torch.compile(torch.nn.Linear(2, 2)).state_dict())
    assert [name for name, _ in compiled.named_parameters()] == ["_orig_mod.weight", "_orig_mod.bias"]
    assert compiled.eval() is compiled and not model.training
    x = tnet.randn(2, 2)
    assert compiled(x).tolist() == model(x).tolist()
    assert x.cpu() is x and x.cuda() is x
    assert x.type_as(tnet.randn(1).half()).dtype == torch.float16
    assert_close(x.pow(2).memory, x.memory.double() ** 2, TOL["ieee"])
    assert tuple(nn.Unflatten(1, (2, 1))(x).shape) == (2, 2, 1)
    # the device questions modern scripts ask, and torch.cuda's other names (torch's own)
    assert tnet.backends.mps.is_available() is False and tnet.backends.cudnn.is_available() in (True, False)
    assert tnet.xpu.is_available() is False and tnet.xpu.device_count() == 0  # the tutorials' chain asks it too
    video = tnet.ones(1, 2, 3, 4, 5).contiguous(memory_format=tnet.channels_last_3d)  # a 3-D model's memory format
    assert video.is_contiguous(memory_format=torch.channels_last_3d) and isinstance(tnet.channels_last, tnet.memory_format)
    import tnet.backends.cudnn as cudnn  # pytorch/examples' imagenet and kuangliu's main.py import it so
    import tnet.backends.mps as mps
    import tnet.multiprocessing as mp
    cudnn.benchmark = False
    assert tnet.backends.cudnn is cudnn and not tnet.backends.cudnn.benchmark and mps.is_built() is False
    assert mp.spawn is torch.multiprocessing.spawn and mp.get_context is torch.multiprocessing.get_context
    assert tnet.distributed.is_available() == torch.distributed.is_available()  # without its own import, as torch's
    assert tnet.version.cuda == torch.version.cuda  # `print(torch.__version__, torch.version.cuda)`
    # research code's version checks take their modern branch, as under torch 2 (`>= '1.5.0'` as strings, the major
    # number, the release part); tnet's own version is the local label and tnet.VERSION
    v = tnet.__version__
    assert v >= "1.5.0" and int(v.split(".")[0]) >= 2 and v.split("+") == [v.split("+")[0], "tnet" + tnet.VERSION]
    assert v >= (1, 10) and v >= (2, 0, 0) and not v < (2,) and isinstance(v, str)  # torch's TorchVersion's tuples
    assert tnet.cuda.Stream is torch.cuda.Stream and tnet.cuda.FloatTensor([1, 2]).dtype == torch.float32
    assert tnet.accelerator.is_available() == tnet.cuda.is_available() == (tnet.get_default_device().type == "cuda")
    assert tnet.accelerator.current_accelerator() == (torch.device("cuda") if tnet.cuda.is_available() else None)
    assert tnet.ones(2).to(tnet.ones(1).half()).dtype == torch.float16  # to(other): other's dtype
    tnet.set_default_device(tnet.DEVICE.type)
    with pytest.raises(ValueError):
        tnet.set_default_device("meta")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_as_torch(rng, dim):
    x, xr = leaf(rng, 4, 5, 3)
    shape = [3, 4, 2]
    idx = rng.integers(0, x.shape[dim], shape)
    check(lambda a: a.gather(dim, tnet.tensor(idx)), lambda a: a.gather(dim, torch.tensor(idx)), [(x, xr)], rng)
    with pytest.raises(IndexError, match="out of bounds"):
        flag_checked(lambda: tnet.gather(x, dim, tnet.tensor(idx + 10)))


def test_label_smoothing_gather_idiom(rng):
    logits, ref = leaf(rng, 6, 10)
    y = rng.integers(0, 10, 6)
    check(lambda a: -F.log_softmax(a, -1).gather(-1, tnet.tensor(y).unsqueeze(1)).mean(),
          lambda a: -torch.log_softmax(a, -1).gather(-1, torch.tensor(y).unsqueeze(1)).mean(), [(logits, ref)], rng)


def test_scatter_as_torch(rng):
    x, xr = leaf(rng, 3, 5)
    s, sr = leaf(rng, 3, 4)
    idx = np.array([[0, 1, 2, 3], [4, 3, 2, 1], [1, 0, 4, 2]])  # no repeats in a row: one value per position
    check(lambda a, b: tnet.scatter(a, 1, tnet.tensor(idx), b), lambda a, b: torch.scatter(a, 1, torch.tensor(idx), b),
          [(x, xr), (s, sr)], rng)
    check(lambda a: a.scatter(1, tnet.tensor(idx), 2.5), lambda a: a.scatter(1, torch.tensor(idx), 2.5), [(x, xr)], rng)
    y = rng.integers(0, 10, 6)
    one_hot = tnet.zeros(6, 10).scatter_(1, tnet.tensor(y).view(-1, 1), 1)
    assert np.array_equal(one_hot.numpy(), np.eye(10, dtype=np.float32)[y])


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,kj", [(3, 4), (5, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("i,i->", [(4,), (4,)]), ("i,j->ij", [(3,), (4,)]), ("ij->ji", [(3, 4)]), ("ij->j", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("bi,bi->b", [(3, 4), (3, 4)]), ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bld,dn->bldn", [(2, 3, 4), (4, 5)]), ("bld,bln,bld->bldn", [(2, 3, 4), (2, 3, 5), (2, 3, 4)])])  # outer products
def test_einsum_as_torch(rng, equation, shapes):
    pairs = [leaf(rng, *s) for s in shapes]
    check(lambda *a: tnet.einsum(equation, *a), lambda *a: torch.einsum(equation, *a), pairs, rng, TOL["tf32"])


def test_einsum_errors():
    with pytest.raises(ValueError, match="sizes"):  # a diagonal of a non-square operand
        tnet.einsum("ii->i", tnet.randn(3, 4))
    with pytest.raises(ValueError, match="sizes"):
        tnet.einsum("ij,jk->ik", tnet.randn(3, 4), tnet.randn(5, 2))


def test_einsum_under_autocast_is_16_bit():
    """torch's einsum is on autocast's 16-bit list (CUDA): an outer product (tnet's element-wise product, no GEMM)
    as a contraction."""
    a, b = tnet.randn(2, 3, requires_grad=True), tnet.randn(3, 4)
    with tnet.autocast("cuda", dtype=tnet.float16):
        outer, inner = tnet.einsum("bi,bj->bij", a, a), tnet.einsum("ij,jk->ik", a, b)
    assert outer.dtype == inner.dtype == tnet.float16
    outer.float().sum().backward()
    assert a.grad.dtype == tnet.float32


def test_torch_names_scripts_use(tmp_path):
    """dtype names, the host Generator, seeding, cuda's memory calls, DataParallel, torch.load's and
    torch.tensor's arguments and the legacy typed constructors, as scripts write them."""
    assert (tnet.long, tnet.float, tnet.half, tnet.int, tnet.bool, tnet.double) == (
        torch.int64, torch.float32, torch.float16, torch.int32, torch.bool, torch.float64)
    assert tnet.zeros(3, dtype=tnet.long).dtype == torch.int64
    data = tnet.utils.data.TensorDataset(tnet.arange(10))
    splits = [tnet.utils.data.random_split(data, [7, 3], generator=tnet.Generator().manual_seed(42)) for _ in range(2)]
    assert [list(s.indices) for s in splits[0]] == [list(s.indices) for s in splits[1]]
    assert tnet.Generator().device == torch.Generator().device == torch.device("cpu")  # passed on as device=
    tnet.random.manual_seed(5)
    assert tnet.random.initial_seed() == 5 == tnet.initial_seed()
    tnet.cuda.empty_cache()
    assert tnet.cuda.memory_allocated() >= 0
    model = nn.DataParallel(nn.Linear(2, 3))
    assert list(model.state_dict()) == ["module.weight", "module.bias"] and model(tnet.randn(4, 2)).shape == (4, 3)
    assert nn.parallel.DistributedDataParallel is tnet.distributed.DistributedDataParallel
    tnet.save(model.state_dict(), tmp_path / "m.pt")
    model.load_state_dict(tnet.load(tmp_path / "m.pt", map_location="cpu", weights_only=True))
    assert tnet.tensor([1.0], device=tnet.DEVICE.type).device == tnet.DEVICE
    assert tnet.FloatTensor([1, 2]).dtype == torch.float32 and tnet.LongTensor(2, 3).shape == (2, 3)


def test_data_is_torchs_idioms():
    """x.data as torch's scripts use it: torch.max(out.data, 1), m.weight.data.normal_(0, 0.01),
    m.bias.data.zero_() change the parameter's values and not its autograd state."""
    layer = nn.Linear(4, 3)
    layer.weight.data.normal_(0, 0.01)
    layer.bias.data.zero_()
    assert layer.bias.tolist() == [0.0, 0.0, 0.0] and layer.weight.requires_grad and layer.weight.is_leaf
    assert 0 < float(layer.weight.abs().max()) < 0.1
    _, predicted = tnet.max(layer(tnet.randn(5, 4)).data, 1)
    assert predicted.shape == (5,) and predicted.dtype == torch.int64


def test_isclose_allclose_equal_as_torch():
    values = [1.0, 1.0 + 1e-6, float("inf"), float("-inf"), float("nan"), 0.0, 2.0]
    others = [1.0, 1.0, float("inf"), float("inf"), float("nan"), 1e-9, float("inf")]
    a, b = tnet.tensor(values), tnet.tensor(others)
    ra, rb = torch.tensor(values), torch.tensor(others)
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0, "atol": 0}):
        assert tnet.isclose(a, b, **kwargs).tolist() == torch.isclose(ra, rb, **kwargs).tolist(), kwargs
        assert tnet.allclose(a[:2], b[:2], **kwargs) == torch.allclose(ra[:2], rb[:2], **kwargs)
    assert tnet.allclose(a, a, equal_nan=True) and not tnet.allclose(a, a)
    assert tnet.equal(a[:4], a[:4]) and not tnet.equal(a, a) and not tnet.equal(a[:2], a[:3])
    assert a.isclose(b).dtype == torch.bool and a[:1].allclose(b[:1]) and a[:1].equal(b[:1])


def test_method_forms_alpha_rounding_and_integer_division_as_torch(rng):
    """x.add(y, alpha=), x.sub, x.mul, x.div(rounding_mode=), x.where, 2 ** x, and true division of
    integer tensors (correct / total) as torch's, with gradients."""
    check(lambda a, b: a.add(b, alpha=0.5).sub(a, alpha=2).mul(b).div(b.abs() + 1),
          lambda a, b: a.add(b, alpha=0.5).sub(a, alpha=2).mul(b).div(b.abs() + 1), [leaf(rng, 3, 4), leaf(rng, 4)], rng)
    check(lambda a: (2 ** a) * a.where(a > 0, 0.5), lambda a: (2 ** a) * a.where(a > 0, 0.5), [leaf(rng, 5)], rng)
    values = [7, -7, 6, -1]
    for mode in ("floor", "trunc"):
        for x, ref in ((tnet.tensor(values), torch.tensor(values)), (tnet.tensor(values) * 0.5, torch.tensor(values) * 0.5)):
            got, want = x.div(2, rounding_mode=mode), ref.div(2, rounding_mode=mode)
            assert got.dtype == want.dtype and got.tolist() == want.tolist(), mode
    assert (tnet.tensor(values) / 4).tolist() == (torch.tensor(values) / 4).tolist()
    hits = (tnet.tensor([1, 2, 3]) == tnet.tensor([1, 0, 3])).sum()
    assert (hits / 3).dtype == torch.float32 and abs((hits / 3).item() - 2 / 3) < 1e-7
    x = tnet.tensor([1.0, float("nan")])
    assert x.isnan().tolist() == [False, True] and x.is_floating_point() and x.ndimension() == 1


@pytest.mark.parametrize("op", [
    lambda m: m.add(m.tensor([1, 2]), m.tensor([3, 4]), alpha=2.0), lambda m: m.sub(m.tensor([1, 2]), 1, alpha=0.5),
    lambda m: m.tensor([1, 2]).add_(m.tensor([3, 4]), alpha=2.5), lambda m: m.add(m.tensor([1, 2]), 1, alpha=True),
    lambda m: m.add(m.ones(2), m.ones(2), alpha=True), lambda m: m.tensor([1, 2]).sub_(1, alpha=0.5),
    lambda m: m.add(m.tensor([1, 2]), 1.5, alpha=2.0), lambda m: m.add(m.tensor([1, 2]), m.ones(2), alpha=2.5),
    lambda m: m.add(m.tensor([True, False]), m.tensor([True, True]), alpha=2),
    lambda m: m.tensor([True, False]).add_(m.tensor([False, True]), alpha=True),
    lambda m: m.sub(m.tensor([3, 4]), m.tensor([1, 1]), alpha=3),
], ids=range(11))
def test_add_and_sub_take_alpha_by_torchs_rules(op):
    """A floating alpha with an integral result, or a bool one with a non-bool result, is torch's RuntimeError (tnet
    computed in float32); a bool result takes an int alpha as a bool (True + 2 * True is True; tnet gave 3)."""
    try:
        want = op(torch)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e).split(".")[0]):
            op(tnet)
        return
    got = op(tnet)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_scale_first_overloads_as_torch(rng):
    """torch's deprecated scale-first overloads that optimizers written before torch 1.5 call
    (add(alpha, other), sub, addcmul(value, t1, t2), addcdiv; function, method and in-place forms):
    values and gradients as torch's, torch's UserWarning, and its TypeError for other combinations;
    then the original RAdam repository's update, written with them."""
    def forms(lib, x, a, b):
        with warnings.catch_warnings():  # torch warns once per process
            warnings.simplefilter("ignore")
            y = x.add(0.5, a)
            return lib.sub(y, 2, b) + y.addcmul(-1.5, a, b) + lib.addcdiv(y, 0.25, a, b.abs() + 1)

    check(lambda x, a, b: forms(tnet, x, a, b), lambda x, a, b: forms(torch, x, a, b),
          [leaf(rng, 3, 4), leaf(rng, 3, 4), leaf(rng, 4)], rng)
    with pytest.warns(UserWarning, match=r"This overload of add_ is deprecated:\n\tadd_\(Number alpha, Tensor other\)"):
        tnet.ones(2).add_(2, tnet.ones(2))
    with pytest.raises(TypeError, match="invalid combination"):
        tnet.ones(2).add(tnet.ones(2), tnet.ones(2))

    def radam_like_step(lib, p, grad):  # LiyuanLucasLiu/RAdam's step, as written there
        exp_avg, exp_avg_sq = lib.zeros_like(p), lib.zeros_like(p)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exp_avg_sq.mul_(0.999).addcmul_(1 - 0.999, grad, grad)
            exp_avg.mul_(0.9).add_(1 - 0.9, grad)
            p.data.add_(-0.01 * 0.1, p.data)  # weight decay
            p.data.addcdiv_(-0.5, exp_avg, exp_avg_sq.sqrt().add_(1e-8))
            p.data.sub_(0.1, grad)
        return p

    values = rng.standard_normal((2, 5)).astype(np.float32)
    grad = rng.standard_normal((2, 5)).astype(np.float32)
    got = radam_like_step(tnet, tnet.tensor(values), tnet.tensor(grad))
    want = radam_like_step(torch, torch.tensor(values), torch.tensor(grad))
    assert_close(got, want, TOL["ieee"], "RAdam-style step")


def test_forward_hooks_with_kwargs_and_prepend_as_torch():
    """register_forward_pre_hook and register_forward_hook with with_kwargs=True (transformers' and
    PEFT's hooks see and replace the keyword arguments) and prepend=True (run before the hooks there);
    a with_kwargs pre-hook returning anything but an (args, kwargs) pair raises RuntimeError, as torch's,
    and a hook registered with always_call=True runs all the same; torch.compiler's is_compiling and disable."""
    def build(lib):
        class Scaled(lib.nn.Module):
            def forward(self, x, scale=1.0):
                return x * scale
        return Scaled()
    results = {}
    for lib in (tnet, torch):
        m, order = build(lib), []
        m.register_forward_pre_hook(lambda mod, args: order.append("plain") or None)
        m.register_forward_pre_hook(lambda mod, args, kwargs: order.append("first") or (args, {**kwargs, "scale": 3.0}),
                                    with_kwargs=True, prepend=True)
        handle = m.register_forward_hook(lambda mod, args, kwargs, out: out + kwargs["scale"], with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: order.append("post") or None, prepend=True, always_call=True)
        x = lib.ones(2)
        y = m(x, scale=2.0)
        handle.remove()
        results[lib] = (y.tolist(), m(x).tolist(), order)
        m.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
        with pytest.raises(RuntimeError):
            m(x)
        assert lib.compiler.is_compiling() is False and lib.compiler.disable(len)([1, 2]) == 2
    # the third call's pre-hook raised: the always_call hook ran all the same
    assert results[tnet] == results[torch] == ([6.0, 6.0], [3.0, 3.0], ["first", "plain", "post"] * 3)



def test_hook_handles_are_torchs_removable_handles():
    """torch.utils.hooks.RemovableHandle: each handle a new id, a context manager that removes its hook
    on exit (`with layer.register_forward_hook(fn): model(x)`), remove() twice harmless, and a handle
    made by hand over a user's dict (extra_dict too), as torch's."""
    results = {}
    for lib in (tnet, torch):
        from importlib import import_module
        RemovableHandle = import_module(lib.__name__ + ".utils.hooks").RemovableHandle
        m, seen = lib.nn.Linear(2, 2), []
        with m.register_forward_hook(lambda mod, args, out: seen.append("hook")) as handle:
            m(lib.ones(2))
            assert isinstance(handle, RemovableHandle)
        m(lib.ones(2))
        handle.remove()
        first, second = m.register_forward_pre_hook(lambda *a: None), m.register_forward_pre_hook(lambda *a: None)
        hooks, extra = collections.OrderedDict(), collections.OrderedDict()  # torch's keeps weak references
        mine = RemovableHandle(hooks, extra_dict=extra)
        hooks[mine.id] = extra[mine.id] = "x"
        mine.remove()
        results[lib] = (seen, second.id - first.id, hooks, extra, len(m._forward_pre_hooks))
    assert results[tnet] == results[torch] == (["hook"], 1, collections.OrderedDict(), collections.OrderedDict(), 2)


def test_load_state_dict_hooks_as_torch():
    """load_state_dict's hooks as torch's: a pre-hook renames a legacy key in the state_dict it is given
    (_register_load_state_dict_pre_hook, and the public one with the module first), each child's hook
    sees its own prefix, and a post-hook takes a tied weight's key out of missing_keys before the strict
    check; to_empty returns the module."""
    def build(lib):
        class Tied(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = lib.nn.Linear(2, 2)
                self.dec = lib.nn.Linear(2, 2, bias=False)
                self.dec.weight = self.enc.weight
        m = Tied()
        seen = []

        def rename(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
            seen.append(prefix)
            if prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
        m.enc._register_load_state_dict_pre_hook(rename)
        m.register_load_state_dict_pre_hook(lambda module, sd, prefix, *rest: seen.append(type(module).__name__))

        def untie(module, incompatible_keys):
            if "dec.weight" in incompatible_keys.missing_keys:
                incompatible_keys.missing_keys.remove("dec.weight")
        m.register_load_state_dict_post_hook(untie)
        return m, seen
    results = {}
    for lib in (tnet, torch):
        m, seen = build(lib)
        assert m.to_empty(device=None) is m  # torch's leaves the memory uninitialised: the load writes it
        keys = m.load_state_dict({"enc.w": lib.ones(2, 2), "enc.bias": lib.zeros(2)})
        results[lib] = (m.dec.weight.sum().item(), keys.missing_keys, keys.unexpected_keys, seen)
    assert results[tnet] == results[torch] == (4.0, [], [], ["Tied", "enc."])


def test_hooks_as_torch(rng):
    """Module forward hooks and pre-hooks (a returned value replaces), Tensor.register_hook on a
    non-leaf and a leaf (a returned gradient replaces), handles that remove, get_submodule,
    get_parameter and get_buffer."""
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    seen = []
    handle = model[0].register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    model[1].register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    assert model(tnet.randn(2, 3)).abs().sum().item() == 0 and seen == [(2, 4)]
    handle.remove()
    model(tnet.randn(1, 3))
    assert seen == [(2, 4)] and model.get_submodule("1") is model[1] and model.get_submodule("") is model
    with pytest.raises(AttributeError):
        model.get_submodule("2")
    bn = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    assert bn.get_parameter("0.weight") is bn[0].weight and bn.get_buffer("1.running_var") is bn[1].running_var
    for get, target, message in [(bn.get_parameter, "1.running_mean", "is not an nn.Parameter"),
                                 (bn.get_buffer, "0.bias", "is not a buffer"),
                                 (bn.get_parameter, "0.nope", "Linear has no attribute `nope`")]:
        with pytest.raises(AttributeError, match=message):
            get(target)
    values = rng.standard_normal(5)
    grads = []
    for lib in (tnet, torch):
        x = lib.tensor(values.astype(np.float32), requires_grad=True)
        y = x * 3
        y.register_hook(lambda g: g * 10)
        x.register_hook(lambda g: g + 1)
        (y * y).sum().backward()
        grads.append(np.asarray(x.grad.tolist()))
    assert_close(grads[0], grads[1], TOL["ieee"], "hooked gradients")


def test_optimizer_add_param_group_and_ema_as_torch(rng):
    init = [rng.standard_normal(3).astype(np.float32), rng.standard_normal(2).astype(np.float32)]
    for name, kwargs in (("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1))):
        ps = [nn.Parameter(v) for v in init]
        refs = [torch.nn.Parameter(torch.tensor(v)) for v in init]
        opt, ref = getattr(tnet.optim, name)(ps[:1], **kwargs), getattr(torch.optim, name)(refs[:1], **kwargs)
        for step in range(3):
            if step == 1:
                opt.add_param_group({"params": ps[1], "lr": 0.05})
                ref.add_param_group({"params": refs[1], "lr": 0.05})
            for p, r in zip(ps, refs):
                g = rng.standard_normal(p.shape).astype(np.float32)
                p.grad, r.grad = tnet.tensor(g), torch.tensor(g)
            opt.step()
            ref.step()
        for p, r in zip(ps, refs):
            assert_close(p.numpy(), r.detach().numpy(), TOL["ieee"], name)
    ema, ref = tnet.zeros(3), torch.zeros(3)
    with tnet.no_grad():
        ema.lerp_(tnet.ones(3), 0.1).mul_(0.5).addcmul_(tnet.ones(3), tnet.ones(3), value=2)
    ref.lerp_(torch.ones(3), 0.1).mul_(0.5).addcmul_(torch.ones(3), torch.ones(3), value=2)
    assert_close(ema.numpy(), ref.numpy(), TOL["ieee"], "ema")


@pytest.mark.parametrize("mode, kernel, padding", [("reflect", 3, 1), ("replicate", (3, 4), "same"), ("circular", 3, 2)])
def test_conv2d_padding_modes_as_torch(rng, ieee, mode, kernel, padding):
    layer = nn.Conv2d(3, 4, kernel, padding=padding, padding_mode=mode)
    ref = torch.nn.Conv2d(3, 4, kernel, padding=padding, padding_mode=mode).double()
    ref.weight.data, ref.bias.data = (torch.tensor(p.numpy(), dtype=torch.float64) for p in (layer.weight, layer.bias))
    check(layer, ref, [leaf(rng, 2, 3, 6, 7)], rng)


def test_switches_constants_and_layout_calls():
    tnet.set_float32_matmul_precision("highest")
    assert tnet.get_float32_matmul_precision() == "highest" and tnet.get_precision() == "ieee"
    tnet.set_float32_matmul_precision("high")
    assert tnet.get_precision() == "tf32" and tnet.get_default_dtype() == torch.float32
    assert (tnet.inf, tnet.pi, tnet.finfo(tnet.float16).max, tnet.Size([2])) == (math.inf, math.pi, 65504.0, (2,))
    x = tnet.randn(2, 3, 4, 5).to(memory_format=tnet.channels_last)
    assert not x.is_contiguous() and x.is_contiguous(memory_format=tnet.channels_last)
    model = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)))
    assert isinstance(model[1], nn.SyncBatchNorm) and model(x[:, :3]).shape == (2, 4, 4, 5)
    start, end = tnet.cuda.Event(enable_timing=True), tnet.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    layer = nn.Linear(3, 2)
    assert tnet.jit.script(layer) is layer and tnet.utils.checkpoint.checkpoint(layer, x[0, 0, :, :3]).shape == (4, 2)

    class Scripted(tnet.jit.ScriptModule):  # the legacy TorchScript API: a Module whose methods run eagerly
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        @tnet.jit.script_method
        def forward(self, x):
            return self.fc(x) if self.training else -self.fc(x)

    scripted = Scripted()
    assert isinstance(scripted, nn.Module) and list(scripted.state_dict()) == ["fc.weight", "fc.bias"]
    assert scripted.eval()(x[0, 0, :, :3]).shape == (4, 2)


def test_scatter_add_and_index_put_as_torch(rng):
    """scatter_add (values and both gradients; repeated positions sum), scatter_add_, and
    index_put_ with and without accumulate (a confusion matrix; negative indices; value slices)."""
    x, xr = leaf(rng, 3, 5)
    s, sr = leaf(rng, 2, 4)
    index = torch.tensor([[0, 1, 2, 0], [2, 0, 1, 2]])
    check(lambda a, b: tnet.scatter_add(a, 0, tnet.tensor(index), b), lambda a, b: torch.scatter_add(a, 0, index, b),
          [(x, xr), (s, sr)], rng)
    z, zr = tnet.zeros(3, 5), torch.zeros(3, 5)
    z.scatter_add_(1, tnet.tensor(index[:, :3]), tnet.ones(2, 3))
    zr.scatter_add_(1, index[:, :3], torch.ones(2, 3))
    assert z.tolist() == zr.tolist()
    t, p = torch.tensor([0, 2, 2, 1, 2, -1]), torch.tensor([0, 1, 1, 1, 2, 0])
    cm, cmr = tnet.zeros(3, 3, dtype=torch.int64), torch.zeros(3, 3, dtype=torch.int64)
    cm.index_put_((tnet.tensor(t), tnet.tensor(p)), tnet.ones(6, dtype=torch.int64), accumulate=True)
    cmr.index_put_((t, p), torch.ones(6, dtype=torch.int64), accumulate=True)
    assert cm.dtype == cmr.dtype and cm.tolist() == cmr.tolist()
    y, yr = tnet.zeros(4, 3), torch.zeros(4, 3)
    rows, vals = torch.tensor([1, 3, 1]), torch.tensor(rng.standard_normal((3, 3)), dtype=torch.float32)
    y.index_put_((tnet.tensor(rows),), tnet.tensor(vals.numpy()), accumulate=True)
    yr.index_put_((rows,), vals, accumulate=True)
    assert_close(y, yr, TOL["ieee"], "index_put_ of rows")
    y.index_put_((tnet.tensor([0]), tnet.tensor([2])), tnet.tensor(7.0))
    yr.index_put_((torch.tensor([0]), torch.tensor([2])), torch.tensor(7.0))
    assert_close(y, yr, TOL["ieee"], "index_put_ without accumulate")
    with pytest.raises(IndexError):
        flag_checked(lambda: tnet.zeros(2, 2).index_put_((tnet.tensor([2]),), tnet.ones(1, 2), accumulate=True))


def test_torch_tensor_operands_legacy_constructor_and_sum_dtype():
    """A torch tensor met in a tnet op (a torchvision transform's output, a real torch.ones) is a
    constant copied to tnet's device; torch.Tensor(sizes) and torch.Tensor(data) as torch's legacy
    constructor; sum and mean with dtype=."""
    a = torch.tensor([1.0, 2.0, 3.0])
    assert (tnet.ones(3) * a).tolist() == [1.0, 2.0, 3.0] and (a * tnet.ones(3)).tolist() == [1.0, 2.0, 3.0]
    assert (a + tnet.ones(3)).tolist() == [2.0, 3.0, 4.0] and (tnet.ones(3) > a).tolist() == [False, False, False]
    w = tnet.ones(3, requires_grad=True)
    (w * a).sum().backward()
    assert w.grad.tolist() == [1.0, 2.0, 3.0]
    lin = nn.Linear(3, 2)  # an inference script's model(transform(img).unsqueeze(0))
    assert np.allclose(lin(a.unsqueeze(0)).numpy(), lin(tnet.tensor(a).unsqueeze(0)).numpy())
    assert nn.CrossEntropyLoss()(tnet.zeros(2, 3), torch.tensor([0, 2])).item() == pytest.approx(math.log(3))
    for dtype in (torch.float16, torch.bfloat16):  # 16-bit data keeps its dtype, as torch.tensor's
        assert tnet.tensor(torch.ones(2, dtype=dtype)).dtype == dtype
    assert tnet.tensor(np.ones(2, np.float16)).dtype == torch.float16 and tnet.tensor(np.ones(2)).dtype == torch.float32
    t = tnet.Tensor(3, 4)
    assert t.shape == (3, 4) and t.dtype == torch.float32 and not t.requires_grad
    assert tnet.Tensor(2).shape == (2,) and tnet.Tensor(torch.Size([2, 0])).shape == (2, 0)
    assert tnet.Tensor().shape == (0,) and tnet.Tensor([1, 2]).tolist() == [1.0, 2.0]
    for lib in (tnet, torch):  # old scripts' uint8 masks and images
        byte = lib.ByteTensor([1, 0, 255])
        assert byte.dtype == torch.uint8 and byte.type().endswith(".ByteTensor") and byte.tolist() == [1, 0, 255]
        assert lib.ones(2).type(lib.ByteTensor).dtype == torch.uint8
    p = nn.Parameter(tnet.Tensor(4, 3))
    nn.init.kaiming_uniform_(p, a=math.sqrt(5))
    assert p.shape == (4, 3) and p.requires_grad and np.isfinite(p.numpy()).all()
    assert tnet.Tensor(3, 4).uniform_(-0.1, 0.1).abs().max().item() <= 0.1
    with pytest.raises(TypeError):
        tnet.Tensor("a")
    m = torch.tensor([True, False, True])
    s = tnet.tensor(m.numpy()).sum(dtype=torch.int32)
    assert s.dtype == torch.int32 and s.item() == 2
    assert tnet.tensor([1, 2]).mean(dtype=torch.float32).item() == 1.5


def test_unbatched_conv2d_and_iteration_as_torch(rng, ieee):
    """conv2d and nn.Conv2d on an unbatched [C, H, W] input (values and gradients); iterating a
    tensor yields its rows, a 0-d one raises TypeError, as torch's."""
    x, xr = leaf(rng, 3, 5, 6)
    w, wr = leaf(rng, 4, 3, 3, 3)
    check(lambda a, b: F.conv2d(a, b, padding=1), lambda a, b: torch.nn.functional.conv2d(a, b, padding=1),
          [(x, xr), (w, wr)], rng, TOL["ieee"] * 10)
    assert nn.Conv2d(3, 4, 3)(x).shape == (4, 3, 4)
    v, vr = leaf(rng, 6)
    check(lambda a, b: F.linear(a, b), lambda a, b: torch.nn.functional.linear(a, b), [(x, xr), (v, vr)], rng,
          TOL["ieee"] * 10)  # a 1-D weight: one output, its dim dropped
    assert [row.tolist() for row in tnet.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="0-d"):
        list(tnet.tensor(3.0))


def test_grad_modes_warm_up_scheduler_and_small_layers_as_torch(rng):
    """set_grad_enabled(False) alone switches recording off (as torch's), as a block or decorator
    it restores; @no_grad without parentheses; a warm-up scheduler subclassing _LRScheduler gives
    torch's lrs; Softmax2d; AlphaDropout (identity in eval; kept values x a + alpha a p, dropped
    ones alpha a (p - 1)); is_cuda and the thread switches."""
    x = tnet.ones(2, requires_grad=True)
    tnet.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    tnet.set_grad_enabled(True)
    with tnet.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad

    @tnet.no_grad
    def inside():
        return (x * 2).requires_grad
    assert inside() is False and (x * 2).requires_grad

    def warm_up(lib):
        class WarmUpLR(lib.optim.lr_scheduler._LRScheduler):
            def __init__(self, optimizer, total_iters, last_epoch=-1):
                self.total_iters = total_iters
                super().__init__(optimizer, last_epoch)

            def get_lr(self):
                return [base_lr * self.last_epoch / (self.total_iters + 1e-8) for base_lr in self.base_lrs]
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1, momentum=0.9)
        scheduler, lrs = WarmUpLR(opt, 5), []
        for _ in range(6):
            opt.step()
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
        return lrs
    np.testing.assert_allclose(warm_up(tnet), warm_up(torch), rtol=1e-12)
    a, ar = leaf(rng, 2, 3, 4, 5)
    check(nn.Softmax2d(), torch.nn.Softmax2d(), [(a, ar)], rng)
    drop, p = nn.AlphaDropout(0.3), 0.3
    assert drop.eval()(a) is a
    y = drop.train()(a).numpy()
    scale = 1.0 / ((1.7580993408473766 ** 2 * p + 1.0) * (1.0 - p)) ** 0.5
    kept = np.isclose(y, a.numpy() * scale + 1.7580993408473766 * scale * p, rtol=1e-5, atol=1e-6)
    dropped = np.isclose(y, 1.7580993408473766 * scale * (p - 1.0), rtol=1e-5)
    assert (kept | dropped).all() and 0.1 < dropped.mean() < 0.5
    assert x.is_cuda == (tnet.DEVICE.type == "cuda") and tnet.get_num_threads() >= 1


@pytest.mark.parametrize("name,args", [("relu_", ()), ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.5)), ("elu_", ()),
                                       ("selu_", ()), ("celu_", ()), ("threshold_", (0.1, -2.0))])
def test_functional_in_place_activations_as_torch(rng, name, args):
    """F.relu_ and the other in-place functional forms: the tensor itself returned, written, and
    the gradient through it as torch's."""
    (w, wr) = leaf(rng, 2, 5)
    x, xr = w * 1.0, wr * 1.0
    y, yr = getattr(F, name)(x, *args), getattr(torch.nn.functional, name)(xr, *args)
    assert y is x
    g = rng.standard_normal((2, 5))
    y.backward(g)
    yr.backward(torch.tensor(g))
    assert_close(x, xr.detach(), TOL["ieee"], name)
    assert_close(w.grad, wr.grad, TOL["ieee"], f"{name} gradient")


def test_split_diff_rot90_tensordot_isin_rms_norm_and_rng_state_as_torch(rng, ieee):
    """tensor_split (sections and indices, negative too), diff (n, prepend), rot90 (every k),
    tensordot (int and lists), isin (invert), RMSNorm (values and gradients), get/set_rng_state,
    result_type and the dtype metadata names."""
    x, xr = leaf(rng, 3, 7, 4)
    for args in [(3, 1), ([1, 5], 1), ([2, -2], 1), ([0, 0, 2], 2)]:
        for o, r in zip(tnet.tensor_split(x, *args), torch.tensor_split(xr, *args), strict=True):
            assert_close(o, r.detach(), 0, f"tensor_split {args}")
    for k in (1, 2, 3, -1):
        assert_close(tnet.rot90(x, k, (1, 2)), torch.rot90(xr, k, (1, 2)).detach(), 0, f"rot90 {k}")
    check(lambda a: tnet.diff(a, 2, 1), lambda a: torch.diff(a, 2, 1), [(x, xr)], rng)
    p, pr = leaf(rng, 3, 1, 4)
    check(lambda a, b: tnet.diff(a, 1, 1, prepend=b), lambda a, b: torch.diff(a, 1, 1, prepend=b), [(x, xr), (p, pr)], rng)
    y, yr = leaf(rng, 4, 7, 5)
    check(lambda a, b: tnet.tensordot(a, b, dims=([1, 2], [1, 0])), lambda a, b: torch.tensordot(a, b, dims=([1, 2], [1, 0])),
          [(x, xr), (y, yr)], rng, TOL["ieee"] * 10)
    e, te = torch.tensor([[1, 2], [3, 4]]), torch.tensor([2, 3, 9])
    assert tnet.isin(tnet.tensor(e), tnet.tensor(te)).tolist() == torch.isin(e, te).tolist()
    assert tnet.isin(tnet.tensor(e), 3, invert=True).tolist() == torch.isin(e, 3, invert=True).tolist()
    norm, ref = nn.RMSNorm(4), torch.nn.RMSNorm(4).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(rng.standard_normal(4)))
    norm.weight.data = tnet.tensor(ref.weight.detach().numpy())
    check(norm, ref, [(x, xr)], rng, TOL["ieee"] * 10)
    state = tnet.get_rng_state()
    first = tnet.rand(5).tolist()
    tnet.set_rng_state(state)
    assert tnet.rand(5).tolist() == first
    assert tnet.result_type(tnet.tensor([1]), 2.5) == torch.float32 and isinstance(tnet.float32, tnet.dtype)


def test_lazy_layers_take_their_size_from_the_first_call(rng, ieee):
    """LazyConv2d and LazyLinear: sizes from the first input, then the full layer's class and
    torch's values for the weights they drew; an optimizer built before the first call (its
    momentum buffers of the placeholder shape) steps them as torch's SGD does."""
    model = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.LazyLinear(3))
    opt = tnet.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, xr = leaf(rng, 2, 5, 4, 4)
    y = model(x)
    assert type(model[0]) is nn.Conv2d and type(model[3]) is nn.Linear
    assert model[0].weight.shape == (4, 5, 3, 3) and model[3].weight.shape == (3, 64)
    ref = torch.nn.Sequential(torch.nn.Conv2d(5, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(64, 3)).double()
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    assert_close(y, ref(xr), TOL["ieee"] * 10, "forward")
    for _ in range(2):
        model(x).sum().backward()
        ref(xr).sum().backward()
        opt.step(), ref_opt.step()
        opt.zero_grad(), ref_opt.zero_grad()
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        assert_close(p, r.detach(), TOL["ieee"] * 10, name)


def test_copied_model_files_import_hub_and_model_zoo():
    """`from torch.hub import load_state_dict_from_url` and `torch.utils.model_zoo.load_url` import (a
    copied torchvision file builds its models); asking for torch's pickled weights raises and names
    the conversion."""
    from tnet.hub import load_state_dict_from_url
    import tnet.utils.model_zoo as model_zoo
    for load in (load_state_dict_from_url, model_zoo.load_url, lambda url: tnet.hub.load("pytorch/vision", "resnet18")):
        with pytest.raises(NotImplementedError, match=r"pickles.*tnet.save\(torch.hub.load_state_dict_from_url"):
            load("https://download.pytorch.org/models/resnet18-f37072fd.pth")


def test_hub_dir_as_torchs_and_its_listings_raise(monkeypatch, tmp_path):
    """torch.hub.get_dir and set_dir (scripts keep checkpoints there); hub.list and hub.help, which fetch
    GitHub repositories' torch code, raise and name the local way."""
    import torch
    monkeypatch.setattr(tnet.hub, "_hub_dir", None)
    for home in (None, str(tmp_path)):
        if home:
            monkeypatch.setenv("TORCH_HOME", home)
        assert tnet.hub.get_dir() == torch.hub.get_dir()
    tnet.hub.set_dir(str(tmp_path / "hub2"))
    assert tnet.hub.get_dir() == str(tmp_path / "hub2")
    for call in (lambda: tnet.hub.list("pytorch/vision"), lambda: tnet.hub.help("pytorch/vision", "resnet18")):
        with pytest.raises(NotImplementedError, match="source='local'"):
            call()


def test_a_training_step_under_torchs_profiler():
    """`with torch.profiler.profile(...)` around a step, record_function labels, and the older
    torch.autograd.profiler.profile: torch's profiler records tnet's work (host time, and on a GPU
    its kernels)."""
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU())
    x = tnet.randn(5, 8)
    with tnet.profiler.profile(activities=[tnet.profiler.ProfilerActivity.CPU]) as prof:
        with tnet.profiler.record_function("step"):
            model(x).sum().backward()
    assert "step" in {event.key for event in prof.key_averages()}
    with tnet.autograd.profiler.profile() as old:
        with tnet.autograd.profiler.record_function("forward"):
            model(x)
    assert "forward" in {event.key for event in old.key_averages()}


def test_tensorboard_writer_takes_tnet_tensors(tmp_path):
    """from torch.utils.tensorboard import SummaryWriter, ported: scalars, a scalars dict, a histogram and
    an image from tnet Tensors reach torch's event files as their values."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tnet.utils.tensorboard import SummaryWriter
    with SummaryWriter(log_dir=str(tmp_path)) as writer:
        for step in range(3):
            writer.add_scalar("loss", tnet.tensor(0.5 * step), step)
        writer.add_scalars("acc", {"train": tnet.tensor(0.25), "val": 0.75}, 0)
        writer.add_histogram("w", nn.Linear(4, 3).weight.to(torch.bfloat16), 0)
        writer.add_image("img", tnet.rand(3, 4, 4), 0)
        with pytest.raises(NotImplementedError, match="add_graph"):
            writer.add_graph(nn.Linear(2, 2), tnet.ones(1, 2))
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [e.value for e in events.Scalars("loss")] == [0.0, 0.5, 1.0]
    assert events.Histograms("w")[0].histogram_value.num == 12 and events.Images("img")


@pytest.mark.parametrize("dims", [(2,), ((2, 3),), (2, 3), ([1, 2, 2],)])
def test_tile_takes_ints_and_sequences_as_torch(rng, dims):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(tnet.tensor(a).tile(*dims).numpy(), torch.tensor(a).tile(*dims).numpy())


def test_testing_assert_close_as_torchs():
    """torch.testing.assert_close in a ported unit test: tnet tensors against tnet, torch or numpy values,
    torch's default tolerances per dtype, NaN, shapes, dtypes, nested containers, and its message."""
    a = tnet.tensor([1.0, 2.0, float("nan")])
    tnet.testing.assert_close(a, torch.tensor([1.0, 2.0 + 1e-6, float("nan")]), equal_nan=True)
    tnet.testing.assert_close({"w": [a[:2]]}, {"w": [tnet.tensor([1.0, 2.0])]})
    tnet.testing.assert_close(a.to(torch.bfloat16)[:2], torch.tensor([1.0, 2.01], dtype=torch.bfloat16))
    for lib, x in ((tnet.testing, a), (torch.testing, torch.tensor([1.0, 2.0, float("nan")]))):
        with pytest.raises(AssertionError, match="Tensor-likes are not close!"):
            lib.assert_close(x, x)  # NaN unequal unless equal_nan
        with pytest.raises(AssertionError, match="'shape' do not match"):
            lib.assert_close(x[:2], x[:1])
        with pytest.raises(AssertionError, match="'dtype' do not match"):
            lib.assert_close(x[:2], x[:2].to(torch.float16))
        with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
            lib.assert_close(x, x, rtol=1e-3)
    tnet.testing.assert_allclose(a, [1.0, 2.0, float("nan")])


def test_slice_bounds_may_be_integer_tensors():
    """A one-element integer tensor as a slice bound (crnn.pytorch's t[index:index + l] with l = length[i])
    reads its value, as torch's __index__; reading, writing and mixed with an advanced index; a float
    tensor bound raises TypeError, as torch's."""
    for lib in (tnet, torch):
        x = lib.arange(10)
        length = lib.tensor([3, 2], dtype=lib.int32)
        parts = [x[i:i + length[k]].tolist() for k, i in enumerate((1, 5))]
        y = x.clone()
        y[0:length[0]] = 0
        grid = lib.arange(12).view(3, 4)[[0, 2], :length[1]]
        assert parts == [[1, 2, 3], [5, 6]] and y.tolist()[:4] == [0, 0, 0, 3], lib
        assert grid.tolist() == [[0, 1], [8, 9]] and x[::length[0]].tolist() == [0, 3, 6, 9], lib
        with pytest.raises(TypeError):
            x[0:lib.tensor(2.0)]


def test_numpy_argument_names_as_torch():
    """axis= for dim= and keepdims= for keepdim=, which torch's argument parser takes (SpinningUp's
    logp.sum(axis=-1), makemore's counts.sum(1, keepdims=True)); both names at once raise TypeError."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 5
    for lib in (tnet, torch):
        x = lib.tensor(a)
        got = [x.sum(axis=-1), x.mean(axis=0, keepdims=True), x.max(axis=1).values, x.amax(axis=1, keepdims=True),
               x.std(axis=1), lib.logsumexp(x, axis=1), x.softmax(axis=1), x.cumsum(axis=1), x.argmax(axis=1).float(),
               lib.cat([x, x], axis=1), lib.stack([x, x], axis=0), x.unsqueeze(axis=0), x.sort(axis=0).values,
               x.sum(1, keepdims=True), lib.norm(x, dim=1)]
        if lib is tnet:
            ours = [v.numpy() for v in got]
        else:
            for v, r in zip(ours, got):
                np.testing.assert_allclose(v, r.numpy(), rtol=1e-6, atol=1e-6)
        with pytest.raises(TypeError):
            x.sum(dim=1, axis=1)


def test_size_keyword_of_factories_and_new_methods():
    """torch.empty(size=(n, m)) (pyGAT's parameters) and x.new_zeros(size=...) take the keyword, as torch's;
    sizes given both ways raise TypeError."""
    for lib in (tnet, torch):
        x = lib.ones(2)
        shapes = [lib.empty(size=(2, 3)).shape, lib.zeros(size=[4]).shape, lib.ones(size=(1, 2)).shape,
                  lib.randn(size=(2, 2)).shape, lib.rand(size=(3,)).shape, x.new_zeros(size=(2, 2)).shape,
                  x.new_full(size=(2,), fill_value=1.5).shape, x.new_empty(size=[1, 2]).shape]
        assert [tuple(s) for s in shapes] == [(2, 3), (4,), (1, 2), (2, 2), (3,), (2, 2), (2,), (1, 2)], lib
        with pytest.raises(TypeError):
            lib.zeros(2, size=(3,))


def test_keyword_names_as_torch():
    """torch's keyword names: F.linear(x, w, bias=b) (loralib's, transformers'), torch.swapdims(x, dim0=, dim1=),
    nansum and nanmean's dtype=, matmul's input= and other=, t's and flatten's input=; the same values as torch's."""
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5, 4), (5,)))
    x[0, 1] = np.nan
    outs = {}
    for lib in (tnet, torch):
        X, W, B = (lib.tensor(v) for v in (x, w, b))
        F = lib.nn.functional
        outs[lib] = [F.linear(input=X.nan_to_num(), weight=W, bias=B), F.linear(X.nan_to_num(), W, bias=B),
                     lib.swapdims(X, dim0=0, dim1=1), lib.nansum(X, 1, dtype=lib.float16),
                     lib.nanmean(X, dim=0, dtype=lib.float16), X.nansum(dtype=lib.float16),
                     lib.matmul(input=W, other=X.nan_to_num().t()), lib.t(input=W), lib.flatten(input=W, start_dim=0)]
    for ours, ref in zip(outs[tnet], outs[torch]):
        assert ours.dtype == ref.dtype
        np.testing.assert_allclose(ours.float().numpy(), ref.float().numpy(), rtol=2e-3, atol=2e-3, equal_nan=True)



def test_legacy_backward_hook_as_torch(rng, ieee):
    """Module.register_backward_hook, torch's legacy hook on the op that made the output: a ReLU's
    grad_input is its input's gradient, which a returned tuple replaces (guided backprop's clamp); a
    convolution's is (input, weight, bias), None for an input that needs no gradient; handles remove."""
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    results = []
    convs = {tnet: tnet.nn.Conv2d(3, 4, 3), torch: torch.nn.Conv2d(3, 4, 3)}
    convs[torch].load_state_dict({k: torch.tensor(v.numpy()) for k, v in convs[tnet].state_dict().items()})
    for lib in (tnet, torch):
        conv, relu = convs[lib], lib.nn.ReLU()
        seen = []
        conv.register_backward_hook(lambda m, gi, go: seen.append(
            [None if g is None else tuple(g.shape) for g in gi] + [tuple(go[0].shape)]))
        handle = relu.register_backward_hook(lambda m, gi, go: (lib.clamp(gi[0], min=0.0) * 2,))
        for requires_grad in (False, True):
            inp = lib.tensor(x, requires_grad=requires_grad)
            (relu(conv(inp)) * lib.tensor(np.linspace(-1, 1, 36, dtype=np.float32).reshape(1, 4, 3, 3))).sum().backward()
            results.append(conv.weight.grad.numpy().copy())
            conv.weight.grad = None
        handle.remove()
        relu(conv(lib.tensor(x))).sum().backward()
        results.append(conv.bias.grad.numpy().copy())
        results.append(seen)
    n = len(results) // 2
    for a, b in zip(results[:n - 1], results[n:-1]):
        assert_close(a, b, TOL["ieee"], "gradient through the legacy hooks")
    assert results[n - 1] == results[-1], (results[n - 1], results[-1])


def test_inference_tensors_and_variable_as_torch():
    """Tensors made in an inference_mode block are inference tensors, as torch's: an op recorded
    outside may not save one for its backward (a Linear's input, a product's factor), a sum may read
    one, clone() outside makes a normal tensor, requires_grad_() outside raises; Variable(x,
    requires_grad=True) is a new leaf on x's memory, x untouched, and Variable(h) a detached leaf."""
    outcomes = []
    for lib in (tnet, torch):
        with lib.inference_mode():
            a = lib.ones(2, 3)
            inside = [a.is_inference(), (a * 2).is_inference(), lib.is_inference_mode_enabled()]
        w = lib.ones(2, 3, requires_grad=True)
        lin = lib.nn.Linear(3, 2)
        row = inside + [a.clone().is_inference(), lib.ones(1).is_inference(), lin.weight.is_inference()]
        (a + w).sum().backward()
        (a.clone() * w).sum().backward()
        for fn in (lambda: a * w, lambda: lin(a), lambda: a.requires_grad_()):
            with pytest.raises(RuntimeError, match="nference"):
                fn()
        x = lib.ones(2)
        v = lib.autograd.Variable(x, requires_grad=True)
        h = lib.autograd.Variable(w * 2)
        with lib.no_grad():
            v.add_(1)
        row += [x.requires_grad, v is x, v.requires_grad, v.is_leaf, x.tolist(), h.requires_grad, h.grad_fn is None,
                w.grad.tolist()]
        outcomes.append(row)
    assert outcomes[0] == outcomes[1], outcomes


def test_variable_is_a_class_every_tensor_is_an_instance_of():
    """torch.autograd.Variable is a class whose isinstance holds for every tensor (old scripts' repackage_hidden and
    `if isinstance(x, Variable): x = x.data`; tnet's function raised TypeError: isinstance() arg 2 must be a type),
    never type(t); Variable(t) still gives a tensor, and Variable._execution_engine.queue_callback runs its callback
    once the backward under way has finished."""
    rows = []
    for lib in (tnet, torch):
        Variable = lib.autograd.Variable
        w = lib.ones(2, requires_grad=True)
        v = Variable(w * 2)
        order = []
        w.register_hook(lambda g: Variable._execution_engine.queue_callback(lambda: order.append("callback")) or
                        order.append("hook"))
        (w * 3).sum().backward()
        rows.append([isinstance(w, Variable), isinstance(v, Variable), isinstance(lib.nn.Parameter(lib.ones(1)), Variable),
                     isinstance(2.0, Variable), type(w) == Variable, isinstance(v, lib.Tensor),
                     isinstance(Variable, type), order])
    assert rows[0] == rows[1] == [True, True, True, False, False, True, True, ["hook", "callback"]], rows


def test_numpy_ufuncs_on_a_tensor_give_a_tensor_as_torchs():
    """np.sqrt(loss), np.exp(x), np.maximum(x, c), np.argmax(x): numpy's functions on a tensor give a
    tensor (a 0-d one from a 0-d tensor), as torch's __array_wrap__; np.array(x) stays an array."""
    rows = []
    for lib in (tnet, torch):
        x = lib.tensor([0.0, 1.0, -2.0])
        results = [np.sqrt(lib.tensor(0.25)), np.exp(x), np.maximum(x, 0.5), np.argmax(x), np.clip(x, -1, 0.5)]
        assert all(isinstance(r, lib.Tensor) for r in results) and isinstance(np.array(x), np.ndarray)
        rows.append([(r.dtype, tuple(r.shape), np.round(r.tolist(), 6).tolist()) for r in results])
    assert rows[0] == rows[1], rows


def test_private_and_submodule_names_scripts_import():
    """torch's names that copied files import by their full paths: nn.init's _no_grad_trunc_normal_,
    nn.modules.utils' consume_prefix_in_state_dict_if_present (a DDP checkpoint's "module." keys),
    nn.modules.transformer's _get_clones and _get_activation_fn, nn.modules.linear's
    NonDynamicallyQuantizableLinear (MultiheadAttention's out_proj), torch.utils.data._utils.collate,
    torch.random.fork_rng and default_generator, torch.types' aliases, the attention backend switches (torch.nn.attention.sdpa_kernel,
    torch.backends.cuda.sdp_kernel), and torch.OutOfMemoryError."""
    from collections import OrderedDict
    from tnet.nn.init import _no_grad_trunc_normal_
    from tnet.nn.modules.transformer import _get_clones
    from tnet.nn.modules.utils import consume_prefix_in_state_dict_if_present
    from tnet.utils.data._utils.collate import default_collate
    from tnet.nn.attention import SDPBackend, sdpa_kernel
    w = _no_grad_trunc_normal_(tnet.empty(50), 0.0, 1.0, -0.5, 0.5)
    assert float(w.abs().max()) <= 0.5
    state = OrderedDict([("module.fc.weight", 1), ("module.fc.bias", 2), ("head", 3)])
    state._metadata = OrderedDict([("", {}), ("module", {"version": 1}), ("module.fc", {"version": 1})])
    ref = copy.deepcopy(state)
    consume_prefix_in_state_dict_if_present(state, "module.")
    torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(ref, "module.")
    assert list(state.items()) == list(ref.items()) and list(state._metadata) == list(ref._metadata)
    layers = _get_clones(nn.Linear(2, 2), 3)
    assert isinstance(layers, nn.ModuleList) and len(layers) == 3 and layers[0].weight is not layers[1].weight
    assert np.array_equal(layers[0].weight.numpy(), layers[2].weight.numpy())
    from tnet.nn.modules.transformer import _get_activation_fn
    from tnet.nn.modules.linear import NonDynamicallyQuantizableLinear
    assert _get_activation_fn("relu") is F.relu and _get_activation_fn("gelu") is F.gelu
    for lib in (tnet, torch):  # only the two names, as torch's: not a callable
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            importlib.import_module(lib.__name__ + ".nn.modules.transformer")._get_activation_fn("tanh")
    assert isinstance(nn.MultiheadAttention(4, 2).out_proj, NonDynamicallyQuantizableLinear)
    assert default_collate([(1, 2.0), (3, 4.0)])[0].tolist() == [1, 3]
    tnet.manual_seed(3)
    draws, weights = tnet.rand(3).numpy(), nn.Linear(2, 2).weight.numpy()
    tnet.manual_seed(3)
    with tnet.random.fork_rng(devices=[]):  # whatever the block draws or seeds is forgotten after it
        tnet.manual_seed(5), tnet.rand(7), nn.Linear(3, 3)
    assert tnet.initial_seed() == 3 and np.array_equal(tnet.rand(3).numpy(), draws)
    assert np.array_equal(nn.Linear(2, 2).weight.numpy(), weights)
    # torch.types' aliases for annotations
    from tnet.types import Number, _size
    assert Number == torch.types.Number and _size == torch.types._size
    # torch.random.default_generator, which a seeding helper reseeds (`torch.random.default_generator.manual_seed`)
    assert tnet.random.default_generator is tnet.default_generator
    tnet.random.default_generator.manual_seed(3)
    assert np.array_equal(tnet.rand(3).numpy(), draws)
    q = tnet.randn(1, 2, 3, 4)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    with pytest.raises(AssertionError):
        with sdpa_kernel("flash"):
            pass
    with tnet.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
        assert not tnet.backends.cuda.flash_sdp_enabled() and tnet.backends.cuda.math_sdp_enabled()
    assert tnet.backends.cuda.flash_sdp_enabled()
    # a batch-size finder's `except torch.OutOfMemoryError` (or torch.cuda's): torch's class, as torch's allocator
    # raises it for tnet's tensors
    assert tnet.OutOfMemoryError is tnet.cuda.OutOfMemoryError is torch.OutOfMemoryError


def test_pooling_and_padding_layers_have_torchs_private_bases():
    """Each pooling and padding layer is a subclass of torch's base of its kind (nn.modules.pooling's
    _MaxPoolNd, _AvgPoolNd, ..., nn.modules.padding's _ConstantPadNd, ...), as scripts' isinstance
    checks read them (a FLOP counter's `isinstance(m, nn.modules.pooling._AvgPoolNd)`)."""
    import inspect
    for kind in ("pooling", "padding"):
        ours, theirs = getattr(nn.modules, kind), getattr(torch.nn.modules, kind)
        for name in theirs.__all__:
            if not hasattr(ours, name):  # FractionalMaxPool2d and 3d: not in tnet
                continue
            bases = {b.__name__ for b in inspect.getmro(getattr(theirs, name)) if b.__name__.startswith("_")
                     and b.__module__ == theirs.__name__}
            for base in bases:
                assert issubclass(getattr(ours, name), getattr(ours, base)), (name, base)
            assert not any(issubclass(getattr(ours, name), getattr(ours, b)) for b in
                           {n for n in vars(ours) if n.endswith("Nd") and n.startswith("_")} - bases), name


def test_misuse_raises_torchs_error_types():
    """A buffer or parameter name with a dot, empty, or another attribute's raises KeyError; a
    non-str name TypeError; a float Linear size TypeError; one tensor handed to an optimizer in place
    of an iterable TypeError (it was taken row by row), as torch's."""
    ours, theirs = nn.Linear(2, 2), torch.nn.Linear(2, 2)
    for register in ("register_buffer", "register_parameter"):
        for name, error in [("a.b", KeyError), ("", KeyError), ("forward", KeyError), (3, TypeError)]:
            for module in (theirs, ours):
                with pytest.raises(error):
                    getattr(module, register)(name, None)
    for module in (theirs, ours):
        with pytest.raises(KeyError, match="already exists"):  # a parameter's name for a buffer
            module.register_buffer("weight", None)
        module.register_parameter("bias", None)  # a parameter's name for a parameter: replaced
        module.register_buffer("extra", None)
        module.register_buffer("extra", None)  # a buffer's for a buffer
        assert module.bias is None and module.extra is None
    with pytest.raises(TypeError):
        nn.Linear(2.5, 3)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        tnet.optim.SGD(nn.Linear(2, 2).weight, lr=0.1)
    for make in (torch.nn.Parameter, nn.Parameter):  # an integer tensor cannot require grad
        with pytest.raises(RuntimeError, match="floating point"):
            make(torch.tensor([1, 2]) if make is torch.nn.Parameter else tnet.tensor([1, 2]))


@pytest.mark.parametrize("call", [lambda m, x: m.nn.functional.softmax(x, 0), lambda m, x: m.nn.functional.gelu(x),
                                  lambda m, x: m.nn.functional.layer_norm(x, (3,)), lambda m, x: m.nn.functional.group_norm(x[None, :, None], 1),
                                  lambda m, x: m.lerp(x, x, 0.5), lambda m, x: m.histc(x)])
def test_float_only_ops_of_integer_tensors_raise_not_implemented(call):
    """A float-only op of an integer tensor raises NotImplementedError, as torch's ("... not
    implemented for 'Long'"), which is also tnet's InputError (ValueError, RuntimeError)."""
    with pytest.raises(NotImplementedError):
        call(torch, torch.tensor([1, 2, 3]))
    with pytest.raises(NotImplementedError):
        call(tnet, tnet.tensor([1, 2, 3]))
    with pytest.raises(ValueError):
        call(tnet, tnet.tensor([1, 2, 3]))


def test_loss_and_call_modules_take_torchs_input_names():
    """The losses and layers that call one functional take their inputs by torch's names too
    (`criterion(input=out, target=y)`, `nn.CosineSimilarity()(x1=a, x2=b)`); an unknown name raises
    TypeError, as a Python call."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = np.sign(rng.standard_normal(3)).astype(np.float32)
    for make, named in [(lambda m: m.KLDivLoss(reduction="batchmean"), lambda t: dict(input=t(a).log_softmax(1), target=t(b).softmax(1))),
                        (lambda m: m.HuberLoss(), lambda t: dict(input=t(a), target=t(b))),
                        (lambda m: m.MarginRankingLoss(0.1), lambda t: dict(input1=t(a[:, 0]), input2=t(b[:, 0]), target=t(y))),
                        (lambda m: m.TripletMarginLoss(), lambda t: dict(anchor=t(a), positive=t(b), negative=t(a * 2))),
                        (lambda m: m.GaussianNLLLoss(), lambda t: dict(input=t(a), target=t(b), var=t(a * a + 0.1))),
                        (lambda m: m.CosineSimilarity(), lambda t: dict(x1=t(a), x2=t(b)))]:
        ours = make(nn)(**named(tnet.tensor)).numpy()
        theirs = make(torch.nn)(**named(torch.tensor)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    loss = nn.HuberLoss()
    assert float(loss(tnet.tensor(a), target=tnet.tensor(b))) == float(loss(tnet.tensor(a), tnet.tensor(b)))
    with pytest.raises(TypeError, match="unexpected keyword argument 'targets'"):
        loss(tnet.tensor(a), targets=tnet.tensor(b))


def test_dynamo_and_inductor_settings_as_torchs(monkeypatch):
    """torch._dynamo.config and torch._inductor.config take the settings scripts make beside
    torch.compile (kept, read back; a name never set raises AttributeError), reached without
    their own import, as torch's; reset and the shape hints run."""
    import importlib
    for lib in (tnet, torch):
        config = importlib.import_module(f"{lib.__name__}._inductor.config")
        settings = [(lib._dynamo.config, "cache_size_limit", 64), (lib._dynamo.config, "suppress_errors", True),
                    (config, "coordinate_descent_tuning", True), (config.triton, "unique_kernel_names", True)]
        for where, name, value in settings:  # torch's put back after the test
            monkeypatch.setattr(where, name, value, raising=False)
        assert lib._inductor.config.triton.unique_kernel_names and lib._dynamo.config.cache_size_limit == 64
        lib._dynamo.reset()
        lib._dynamo.mark_dynamic(lib.ones(2, 3), 0)
    with pytest.raises(AttributeError):
        tnet._dynamo.config.never_set_anywhere


def test_safe_globals_pytree_and_numpy_force_as_torchs(tmp_path):
    """torch.serialization's allow-list before a weights_only load (tnet's files hold data only: kept, changing
    nothing), torch.utils._pytree over a batch of tnet Tensors, and Tensor.numpy(force=True), as torch's."""
    import argparse
    results = []
    for lib in (tnet, torch):
        lib.serialization.add_safe_globals([argparse.Namespace])
        assert argparse.Namespace in lib.serialization.get_safe_globals()
        with lib.serialization.safe_globals([collections.OrderedDict]):
            assert collections.OrderedDict in lib.serialization.get_safe_globals()
        lib.save({"args": argparse.Namespace(lr=0.1), "w": lib.ones(2)}, tmp_path / "ckpt.pt")
        ckpt = lib.load(tmp_path / "ckpt.pt", weights_only=True)
        batch = {"x": lib.ones(2), "meta": [lib.zeros(1), "name"]}
        moved = lib.utils._pytree.tree_map_only(lib.Tensor, lambda t: t + 1, batch)
        leaves = lib.utils._pytree.tree_leaves(moved)
        results.append((ckpt["args"].lr, ckpt["w"].tolist(), moved["meta"][1], [v.tolist() for v in leaves[:2]],
                        lib.ones(2, requires_grad=True).numpy(force=True).tolist()))
        lib.serialization.clear_safe_globals()
    assert results[0] == results[1]
    # the module by its import path too, as torch 2.4's scripts write it
    from tnet.serialization import add_safe_globals, safe_globals
    assert importlib.import_module("tnet.serialization") is tnet.serialize
    assert add_safe_globals is tnet.serialize.add_safe_globals and safe_globals is tnet.serialize.safe_globals


def test_overrides_for_functions_vendored_from_torch():
    """A function copied out of torch's source (a repository's multi_head_attention_forward) asks
    torch.overrides first whether an argument overrides it; for tnet's tensors, None and numbers the answer is
    False, as torch's for its own, and the function runs its own body."""
    results = []
    for lib in (tnet, torch):
        overrides = importlib.import_module(lib.__name__ + ".overrides")

        def scaled_linear(x, weight, bias=None, scale=1.0):
            tens_ops = (x, weight, bias)
            if any(type(t) is not lib.Tensor for t in tens_ops) and overrides.has_torch_function(tens_ops):
                return overrides.handle_torch_function(scaled_linear, tens_ops, x, weight, bias=bias, scale=scale)
            if overrides.has_torch_function_variadic(x, weight) or overrides.has_torch_function_unary(x):
                raise AssertionError("no override expected")
            return lib.nn.functional.linear(x, weight, bias) * scale

        x, w = lib.ones(2, 3), lib.full((4, 3), 0.5)
        results.append((scaled_linear(x, w, scale=2.0).tolist(), overrides.is_tensor_like(x),
                        overrides.is_tensor_like(3.0),
                        overrides.handle_torch_function(scaled_linear, (x, w), x, w, scale=3.0).tolist()))
    assert results[0] == results[1]


def test_linear_and_conv2d_take_integer_tensors_for_sizes_as_torch():
    """nn.Linear and nn.Conv2d built from one-element integer tensors (a width computed on the device), as torch's
    parser takes them; a float tensor is no size (TypeError)."""
    assert tnet.nn.Linear(tnet.tensor(3), 4).weight.shape == torch.nn.Linear(torch.tensor(3), 4).weight.shape
    conv = tnet.nn.Conv2d(tnet.tensor(3), tnet.tensor(4), 3, groups=tnet.tensor(1))
    assert conv.weight.shape == torch.nn.Conv2d(torch.tensor(3), torch.tensor(4), 3).weight.shape
    with pytest.raises(TypeError):
        tnet.nn.Linear(tnet.tensor(3.0), 4)


def test_integer_tensors_of_one_element_pass_for_ints_as_torchs():
    """torch's argument parser takes an integer tensor of one element (through __index__) where it wants an int:
    YOLOX's topk(cost, k=dynamic_ks[i], largest=False) with an int32 0-d k, torch.zeros(n, 4) of a count n =
    mask.sum(), arange(n) (int64), dims, chunks, shifts, pads, steps and bins; a float tensor is no int
    (TypeError)."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7
    t, r = tnet.tensor(x), torch.tensor(x)
    for lib, v in ((tnet, t), (torch, r)):
        k32, k = lib.tensor(2, dtype=lib.int32), lib.tensor(1)
        results = [lib.topk(v[0, 0], k=k32, largest=False).indices, v.topk(k32, dim=k).values,
                   lib.kthvalue(v[0, 0], k32).values, lib.zeros(k32, 3), lib.arange(k32), lib.full((k,), 2.0),
                   v.new_zeros(k32), lib.linspace(0, 1, k32 + 1), lib.histc(v, bins=k32 + 1),
                   v.sum(k), v.sum((k, 2)), v.argmax(k), v.cumsum(k), v.unsqueeze(k32), v.transpose(k, 2),
                   v.movedim(k, 0), lib.roll(v, k32, k), v.chunk(k32, 2)[1], v.split(k32, 2)[0],
                   v.flatten(0, k), v.permute(k, 0, 2), v.gather(k, lib.zeros(2, 1, 4, dtype=lib.int64)),
                   lib.nn.functional.pad(v, (k32, 0)), lib.multinomial(lib.ones(4), k32).shape[0]]
        if lib is tnet:
            ours = results
        else:
            for i, (a, b) in enumerate(zip(ours, results)):
                if isinstance(b, torch.Tensor):
                    assert a.dtype == b.dtype and a.shape == b.shape, (i, a.dtype, b.dtype, a.shape, b.shape)
                    if i not in (0, 2):  # topk's and kthvalue's ties: values, not indices
                        assert_close(a, b, 0, f"result {i}")
                else:
                    assert a == b, i
        with pytest.raises(TypeError, match="must be int, not Tensor"):
            lib.topk(v[0, 0], lib.tensor(2.0))


def test_numpy_integers_pass_for_layer_sizes_as_torchs():
    """Sizes computed by numpy (nn.Linear(np.prod(img_shape), 4), a GAN's or a VAE's flattened size) build the
    layers and run their ops as torch's: Linear, Conv1d/2d, ConvTranspose2d, MaxPool2d, LayerNorm, adaptive pooling."""
    n = np.int64(3)
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    shapes = []
    for lib in (tnet, torch):
        v = lib.tensor(x)
        shapes.append([lib.nn.Linear(np.prod((2, 2)), n)(v).shape,
                       lib.nn.Conv2d(np.int64(2), n, n, padding=n // 2)(v).shape,
                       lib.nn.Conv1d(np.int64(3), 2, np.int64(2), stride=np.int64(2))(v[0]).shape,
                       lib.nn.ConvTranspose2d(2, n, np.int64(2), stride=np.int64(2))(v).shape,
                       lib.nn.MaxPool2d(np.int64(2))(v).shape, lib.nn.LayerNorm(np.int64(4))(v).shape,
                       lib.nn.AdaptiveAvgPool2d((np.int64(1), np.int64(2)))(v).shape,
                       lib.nn.functional.avg_pool2d(v, np.int64(2), stride=np.int64(1)).shape])
    assert shapes[0] == shapes[1]


def test_named_results_print_and_check_as_torchs():
    """max, sort, topk, cummax, aminmax, frexp and linalg.qr give torch.return_types' named tuples: named as
    torch's, printed as torch's (a script logs `print(out.max(1))`), unpacked and sliced as tuples."""
    x = np.array([[3.0, 1.0], [0.5, 2.0]], np.float32)
    texts, names = [], []
    for lib in (tnet, torch):
        v = lib.tensor(x, device=DEV)  # the device shows in the text
        results = [v.max(1), lib.sort(v, 1), v.topk(1), v.cummax(0), lib.aminmax(v), lib.frexp(v), v.median(0),
                   lib.linalg.qr(lib.eye(2, device=DEV))]
        texts.append([repr(r) for r in results])
        names.append([type(r).__name__ for r in results])
        assert isinstance(results[0], lib.return_types.max) and isinstance(results[0], tuple)
        values, indices = results[0]
        assert values is results[0].values and type(results[0][:1]) is tuple
    assert texts[0] == texts[1] and names[0] == names[1]


def test_non_persistent_buffers_set_and_a_missing_forward_as_torchs():
    """Module._non_persistent_buffers_set, which code copied from torch reads and edits (HF-style loaders), is a
    live view of the module's buffers kept out of its state_dict; a Module without forward raises torch's message."""
    for lib in (tnet, torch):
        m = lib.nn.BatchNorm1d(2)
        m.register_buffer("scratch", lib.zeros(1), persistent=False)
        assert set(m._non_persistent_buffers_set) == {"scratch"} and "scratch" in m._non_persistent_buffers_set
        assert "running_mean" not in m._non_persistent_buffers_set and len(m._non_persistent_buffers_set) == 1
        m._non_persistent_buffers_set.discard("scratch")
        m._non_persistent_buffers_set.add("num_batches_tracked")
        assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "scratch"], lib
        with pytest.raises(NotImplementedError, match=r'^Module \[Module\] is missing the required "forward" function$'):
            lib.nn.Module()(lib.zeros(1))


def test_hook_registries_as_torchs():
    """A module's hook registries exist before any hook, as torch's: code counts them or clears every forward
    hook at once (`m._forward_hooks.clear()`), after which a call runs none."""
    for lib in (tnet, torch):
        m = lib.nn.Linear(2, 2)
        assert len(m._forward_hooks) == 0 and len(m._forward_pre_hooks) == 0 and len(m._backward_hooks) == 0
        seen = []
        m.register_forward_hook(lambda mod, args, out: seen.append(1))
        m(lib.ones(1, 2))
        assert len(m._forward_hooks) == 1 and seen == [1]
        m._forward_hooks.clear()
        m(lib.ones(1, 2))
        assert seen == [1]


def test_tensors_inside_a_list_are_numbers_to_tensor_as_torchs():
    """torch.tensor reads a tensor inside a list as its one number: predictions of batches of one, collected and
    made a tensor (`torch.tensor(preds)`), are 1-d, so that `(preds == labels)` compares element-wise; 0-d and
    1-element tensors of any shape count, keep their dtype (float16 stays), and one of several elements raises."""
    for lib in (tnet, torch):
        preds = [lib.tensor([1]), lib.tensor([0]), lib.tensor([[2]])]
        assert lib.tensor(preds).shape == (3,) and lib.tensor(preds).dtype == torch.int64
        assert lib.tensor([[lib.tensor(1.5), 2], [3, lib.tensor(4)]]).tolist() == [[1.5, 2.0], [3.0, 4.0]]
        assert lib.tensor([lib.tensor(1.5, dtype=torch.float16)] * 2).dtype == torch.float16
        assert lib.tensor([lib.tensor(True), lib.tensor(False)]).dtype == torch.bool
        assert lib.tensor([lib.tensor([2.0], requires_grad=True) * 2]).requires_grad is False
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            lib.tensor([lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])])


def test_requires_grad_set_on_an_integer_tensor_raises_as_torchs():
    """`t.requires_grad = True` checks as requires_grad_() does: an integer tensor raises torch's RuntimeError;
    False is always taken on a leaf."""
    for lib in (tnet, torch):
        t = lib.ones(2, dtype=torch.int64)
        with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype can require gradients$"):
            t.requires_grad = True
        t.requires_grad = False
        f = lib.ones(2)
        f.requires_grad = True
        assert f.requires_grad and f.is_leaf


def test_printed_outputs_and_losses_name_torchs_nodes():
    """The grad_fn a script's printed loss or output shows is torch's node class: cross_entropy's NllLossBackward0,
    a Linear's AddmmBackward0 (MmBackward0 without bias, a view on 3-D input), a convolution's ConvolutionBackward0,
    a flatten's ViewBackward0 (a copy's UnsafeViewBackward0), contiguous's CloneBackward0, .half()'s ToCopyBackward0."""
    x = np.arange(8, dtype=np.float32).reshape(4, 2) / 8
    texts = []
    for lib in (tnet, torch):
        lib.manual_seed(0)
        v, lin, img = lib.tensor(x, requires_grad=True), lib.nn.Linear(2, 3), lib.ones(1, 1, 4, 4, requires_grad=True)
        outs = [lib.nn.functional.cross_entropy(lin(v), lib.tensor([0, 1, 2, 0])), lin(v), lib.nn.Linear(2, 3, bias=False)(v),
                lin(v.reshape(2, 2, 2)), lib.nn.Conv2d(1, 2, 3)(img), lib.nn.ConvTranspose2d(1, 1, 2)(img), img.flatten(1),
                v.t().reshape(8), v.t().contiguous(), v.half(), v.narrow(0, 1, 2), lib.nn.functional.max_pool2d(img, 2),
                v @ lib.ones(2, 2)]
        texts.append([type(o.grad_fn).__name__ for o in outs])
        assert str(outs[0]).endswith("grad_fn=<NllLossBackward0>)")
    assert texts[0] == texts[1]


NODE_CASES = {  # op of x [3, 4, 5] (requires grad), lo and hi [5] (bounds): its output's grad_fn, torch's class
    "sum": lambda lib, x, lo, hi: x.sum(), "sum_dim": lambda lib, x, lo, hi: x.sum(1),
    "sum_dims_keepdim": lambda lib, x, lo, hi: x.sum((1, 2), keepdim=True), "mean_dim": lambda lib, x, lo, hi: x.mean(-1),
    "prod": lambda lib, x, lo, hi: x.prod(), "prod_dim": lambda lib, x, lo, hi: x.prod(1),
    "max": lambda lib, x, lo, hi: x.max(), "max_dim": lambda lib, x, lo, hi: x.max(1)[0],
    "min": lambda lib, x, lo, hi: x.min(), "min_dim": lambda lib, x, lo, hi: x.min(dim=0, keepdim=True).values,
    "median": lambda lib, x, lo, hi: x.median(), "stack": lambda lib, x, lo, hi: lib.stack([x, x], 1),
    "cat": lambda lib, x, lo, hi: lib.cat([x, x]), "select": lambda lib, x, lo, hi: x[0],
    "select_after_slice": lambda lib, x, lo, hi: x[:, 1], "slice": lambda lib, x, lo, hi: x[1:],
    "slice_after_select": lambda lib, x, lo, hi: x[0, 1:], "whole_slices": lambda lib, x, lo, hi: x[:, 0:10],
    "ellipsis": lambda lib, x, lo, hi: x[...], "ellipsis_int": lambda lib, x, lo, hi: x[..., 1],
    "none": lambda lib, x, lo, hi: x[None], "none_after_int": lambda lib, x, lo, hi: x[0, None],
    "int_after_none": lambda lib, x, lo, hi: x[None, 0], "step": lambda lib, x, lo, hi: x[::2],
    "advanced": lambda lib, x, lo, hi: x[[0, 2]], "narrow": lambda lib, x, lo, hi: x.narrow(1, 0, 2),
    "select_method": lambda lib, x, lo, hi: x.select(2, 1), "unbind": lambda lib, x, lo, hi: x.unbind(1)[0],
    "iter": lambda lib, x, lo, hi: next(iter(x)), "split": lambda lib, x, lo, hi: x.split(2)[1],
    "split_with_sizes": lambda lib, x, lo, hi: x.split([1, 2])[0], "chunk": lambda lib, x, lo, hi: x.chunk(2, 2)[0],
    "tensor_split": lambda lib, x, lo, hi: x.tensor_split(2)[0], "squeeze": lambda lib, x, lo, hi: x[:1].squeeze(),
    "squeeze_dim": lambda lib, x, lo, hi: x[:1].squeeze(0), "squeeze_dims": lambda lib, x, lo, hi: x[:1].squeeze((0,)),
    "clamp": lambda lib, x, lo, hi: x.clamp(-1, 1), "clamp_min_number": lambda lib, x, lo, hi: x.clamp(min=0),
    "clip": lambda lib, x, lo, hi: x.clip(max=0.5), "clamp_tensors": lambda lib, x, lo, hi: x.clamp(lo, hi),
    "clamp_min_tensor": lambda lib, x, lo, hi: x.clamp(min=lo), "clamp_min": lambda lib, x, lo, hi: x.clamp_min(0),
    "clamp_max": lambda lib, x, lo, hi: x.clamp_max(0), "clamp_min_of_tensor": lambda lib, x, lo, hi: x.clamp_min(lo),
    "clamp_max_of_tensor": lambda lib, x, lo, hi: x.clamp_max(hi), "clamp_inplace": lambda lib, x, lo, hi: (x * 1).clamp_(0, 1),
    "clamp_min_inplace": lambda lib, x, lo, hi: (x * 1).clamp_min_(lo), "clamp_max_inplace": lambda lib, x, lo, hi: (x * 1).clamp_max_(0),
    "batch_norm": lambda lib, x, lo, hi: lib.nn.functional.batch_norm(x, None, None, training=True),
    "avg_pool2d": lambda lib, x, lo, hi: lib.nn.functional.avg_pool2d(x[None], 2),
    "logsigmoid": lambda lib, x, lo, hi: lib.nn.functional.logsigmoid(x),
    "T": lambda lib, x, lo, hi: x[0].T, "T_3d": lambda lib, x, lo, hi: x.T,
    "layer_norm": lambda lib, x, lo, hi: lib.nn.functional.layer_norm(x, (5,), hi, lo),
    "group_norm": lambda lib, x, lo, hi: lib.nn.functional.group_norm(x[None], 3),
    "instance_norm": lambda lib, x, lo, hi: lib.nn.functional.instance_norm(x[None]),
    # ops tnet composes of others, named as torch's one op (and torch's title-cased names: Log1PBackward0)
    "rsub_number": lambda lib, x, lo, hi: 1 - x, "rsub": lambda lib, x, lo, hi: lib.rsub(x, hi),
    "pow_tensors": lambda lib, x, lo, hi: x.abs() ** hi, "pow_number_base": lambda lib, x, lo, hi: 2 ** x,
    "masked_fill": lambda lib, x, lo, hi: x.masked_fill(x > 0, 0.0), "tril": lambda lib, x, lo, hi: x.tril(),
    "triu": lambda lib, x, lo, hi: x.triu(1), "roll": lambda lib, x, lo, hi: x.roll(1, 0),
    "pad_constant": lambda lib, x, lo, hi: lib.nn.functional.pad(x, (1, 2)),
    "pad_reflect": lambda lib, x, lo, hi: lib.nn.functional.pad(x, (1, 2), mode="reflect"),
    "pad_replicate_2d": lambda lib, x, lo, hi: lib.nn.functional.pad(x[None], (1, 1, 2, 0), mode="replicate"),
    "pad_circular": lambda lib, x, lo, hi: lib.nn.functional.pad(x, (1, 2), mode="circular"),
    "gather": lambda lib, x, lo, hi: x.gather(2, lib.tensor([[[0, 4]] * 4] * 3)),
    "take_along_dim": lambda lib, x, lo, hi: x.take_along_dim(lib.tensor([[[0, 4]] * 4] * 3), 2),
    "embedding": lambda lib, x, lo, hi: lib.nn.functional.embedding(lib.tensor([[0, 2]]), x[0]),
    "bmm": lambda lib, x, lo, hi: lib.bmm(x, x.transpose(1, 2)),
    "addmm": lambda lib, x, lo, hi: lib.addmm(x[1, :, :4], x[0], x[0].T[:, :4]),
    "baddbmm": lambda lib, x, lo, hi: lib.baddbmm(x[:, :, :4], x, x.transpose(1, 2)),
    "dot": lambda lib, x, lo, hi: lib.dot(x[0, 0], hi), "mv": lambda lib, x, lo, hi: lib.mv(x[0], hi),
    "vector_norm": lambda lib, x, lo, hi: lib.linalg.vector_norm(x, dim=1), "norm": lambda lib, x, lo, hi: x.norm(),
    "conv1d": lambda lib, x, lo, hi: lib.nn.functional.conv1d(x, x[:2, :, :3]),
    "conv_transpose1d": lambda lib, x, lo, hi: lib.nn.functional.conv_transpose1d(x, x.transpose(0, 1)[:, :2, :2]),
    "pixel_shuffle": lambda lib, x, lo, hi: lib.nn.functional.pixel_shuffle(x.transpose(0, 1), 2),
    "upsample_nearest1d": lambda lib, x, lo, hi: lib.nn.functional.interpolate(x, scale_factor=2),
    "upsample_bilinear2d": lambda lib, x, lo, hi: lib.nn.functional.interpolate(x[None], scale_factor=2,
                                                                                mode="bilinear"),
    "upsample_bicubic2d_aa": lambda lib, x, lo, hi: lib.nn.functional.interpolate(x[None], size=(2, 3), mode="bicubic",
                                                                                  antialias=True),
    "adaptive_avg_pool2d": lambda lib, x, lo, hi: lib.nn.functional.adaptive_avg_pool2d(x[None], 2),
    "adaptive_avg_pool2d_to_1": lambda lib, x, lo, hi: lib.nn.functional.adaptive_avg_pool2d(x, 1),
    "adaptive_max_pool2d": lambda lib, x, lo, hi: lib.nn.functional.adaptive_max_pool2d(x, 2),
    "log1p": lambda lib, x, lo, hi: x.abs().log1p(),
    "matmul_mv": lambda lib, x, lo, hi: x[0] @ hi, "matmul_dot": lambda lib, x, lo, hi: x[0, 0] @ hi,
    "matmul_vector_matrix": lambda lib, x, lo, hi: lo[:4] @ x[0], "matmul_3d_2d": lambda lib, x, lo, hi: x @ x[0].T,
    "matmul_vector_3d": lambda lib, x, lo, hi: lo[:4] @ x,
    "linear_3d": lambda lib, x, lo, hi: lib.nn.functional.linear(x, x[0]),
    "linear_vector": lambda lib, x, lo, hi: lib.nn.functional.linear(x[0, 0], x[0]),
    "unfold": lambda lib, x, lo, hi: lib.nn.functional.unfold(x[None], 2),
    "prelu": lambda lib, x, lo, hi: lib.nn.functional.prelu(x, hi[:4] + 0.1),
    "l1_loss": lambda lib, x, lo, hi: lib.nn.functional.l1_loss(x, hi.expand(3, 4, 5)),
    "l1_loss_sum": lambda lib, x, lo, hi: lib.nn.functional.l1_loss(x, hi.expand(3, 4, 5), reduction="sum"),
    "div_floor": lambda lib, x, lo, hi: x.div(2, rounding_mode="floor"),
    "div_trunc": lambda lib, x, lo, hi: x.div(hi + 1, rounding_mode="trunc"),
    "setitem_slice": lambda lib, x, lo, hi: _written(x * 1, (slice(0, 1),), 0.0),
    "setitem_int": lambda lib, x, lo, hi: _written(x * 1, (0, 1), hi),
    "setitem_advanced": lambda lib, x, lo, hi: _written(x * 1, (lib.tensor([2, 0]),), hi),
    "setitem_mask": lambda lib, x, lo, hi: _written(x * 1, (x > 0,), 0.0),
    "index_put": lambda lib, x, lo, hi: x.index_put((lib.tensor([1]),), hi),
    "index_put_accumulate": lambda lib, x, lo, hi: (x * 1).index_put_((lib.tensor([1, 1]),), hi, accumulate=True),
    "masked_fill_": lambda lib, x, lo, hi: (x * 1).masked_fill_(x > 0, 1.0),
    "write_through_a_view": lambda lib, x, lo, hi: _mul_first_row(x * 1),
    **{f"cross_entropy_{kind}_{reduction}": (lambda kind, reduction: lambda lib, x, lo, hi:
                                              lib.nn.functional.cross_entropy(
        x[0], lib.tensor([0, 1, 4, 2]) if kind != "probabilities" else (x[1] * 0).softmax(1).detach(),
        reduction=reduction, label_smoothing=0.1 if kind == "smoothed" else 0.0))(kind, reduction)
       for kind in ("labels", "smoothed", "probabilities") for reduction in ("mean", "sum", "none")},
    "pairwise_distance": lambda lib, x, lo, hi: lib.nn.functional.pairwise_distance(x[0], hi),
    "triplet_margin_loss": lambda lib, x, lo, hi: lib.nn.functional.triplet_margin_loss(x[0], x[1], x[2]),
    "margin_ranking_loss": lambda lib, x, lo, hi: lib.nn.functional.margin_ranking_loss(x[0, 0], x[0, 1], hi,
                                                                                         reduction="sum"),
    "hinge_embedding_loss": lambda lib, x, lo, hi: lib.nn.functional.hinge_embedding_loss(x[0], hi.sign()),
    "cosine_embedding_loss": lambda lib, x, lo, hi: lib.nn.functional.cosine_embedding_loss(x[0], x[1],
                                                                                             lib.ones(4)),
    "multi_margin_loss": lambda lib, x, lo, hi: lib.nn.functional.multi_margin_loss(x[0], lib.tensor([0, 1, 2, 4])),
    **{f"embedding_bag_{mode}": (lambda mode: lambda lib, x, lo, hi: lib.nn.functional.embedding_bag(
        lib.tensor([0, 2, 1, 3]), x[0], lib.tensor([0, 2]), mode=mode))(mode) for mode in ("sum", "mean", "max")},
    "channel_shuffle": lambda lib, x, lo, hi: lib.nn.functional.channel_shuffle(x.transpose(0, 1)[None], 2),
    "pixel_unshuffle": lambda lib, x, lo, hi: lib.nn.functional.pixel_unshuffle(x[:, :4, :4][None], 2),
    "conv3d": lambda lib, x, lo, hi: lib.nn.functional.conv3d(x[None, None], x[:2, :2, :2][None, None]),
    "max_pool3d": lambda lib, x, lo, hi: lib.nn.functional.max_pool3d(x[None, None], 2),
    "max_pool3d_unbatched_dilated": lambda lib, x, lo, hi: lib.nn.functional.max_pool3d(x[None], 2, dilation=2,
                                                                                          return_indices=True)[0],
    "avg_pool3d_unbatched": lambda lib, x, lo, hi: lib.nn.functional.avg_pool3d(x[None], 2),
    "grid_sample": lambda lib, x, lo, hi: lib.nn.functional.grid_sample(x[None], x[None, :2, :2, :2] * 0.3,
                                                                        align_corners=False),
    "affine_grid": lambda lib, x, lo, hi: lib.nn.functional.affine_grid(x[:1, :2, :3], (1, 1, 3, 2),
                                                                        align_corners=False),
    "trace": lambda lib, x, lo, hi: x[0].trace(), "cross": lambda lib, x, lo, hi: lib.cross(x[:, 0], x[:, 1], dim=0),
    "masked_select": lambda lib, x, lo, hi: x.masked_select(x > 0), "take": lambda lib, x, lo, hi: x.take(
        lib.tensor([0, 7])),
    "index_fill": lambda lib, x, lo, hi: x.index_fill(1, lib.tensor([0, 2]), 0.0),
    "nan_to_num": lambda lib, x, lo, hi: x.nan_to_num(), "renorm": lambda lib, x, lo, hi: x.renorm(2, 0, 1.0),
    "selu": lambda lib, x, lo, hi: lib.nn.functional.selu(x),
    "softsign": lambda lib, x, lo, hi: lib.nn.functional.softsign(x),
    "tanhshrink": lambda lib, x, lo, hi: lib.nn.functional.tanhshrink(x),
    "rrelu_eval": lambda lib, x, lo, hi: lib.nn.functional.rrelu(x),
    "aminmax_min": lambda lib, x, lo, hi: x.aminmax(dim=1)[0], "aminmax_max": lambda lib, x, lo, hi: x.aminmax()[1],
    "deg2rad": lambda lib, x, lo, hi: x.deg2rad(), "rad2deg": lambda lib, x, lo, hi: x.rad2deg(),
    "diagflat": lambda lib, x, lo, hi: x[0, 0].diagflat(), "mode": lambda lib, x, lo, hi: x.mode(1)[0],
    "nansum": lambda lib, x, lo, hi: x.nansum(), "sgn": lambda lib, x, lo, hi: x.sgn(),
    "linalg_qr": lambda lib, x, lo, hi: lib.linalg.qr(x[0])[0],
    "linalg_pinv": lambda lib, x, lo, hi: lib.linalg.pinv(x[0]),
    "fmod_tensor": lambda lib, x, lo, hi: x.fmod(hi + 2), "fmod_number": lambda lib, x, lo, hi: x.fmod(2),
    "remainder_tensor": lambda lib, x, lo, hi: x % (hi + 2), "remainder_number": lambda lib, x, lo, hi: x % 2,
    "copysign_tensor": lambda lib, x, lo, hi: x.copysign(lo), "copysign_number": lambda lib, x, lo, hi: x.copysign(-1),
    "xlogy_tensors": lambda lib, x, lo, hi: x.xlogy(hi + 1), "xlogy_number": lambda lib, x, lo, hi: x.xlogy(2),
    "xlogy_number_input": lambda lib, x, lo, hi: lib.xlogy(2, x.abs() + 1),
    "fmax": lambda lib, x, lo, hi: x.fmax(lo), "fmin": lambda lib, x, lo, hi: x.fmin(lo),
    "dist": lambda lib, x, lo, hi: x[0].dist(x[1]), "mvlgamma": lambda lib, x, lo, hi: (x.abs() + 2).mvlgamma(2),
    "kthvalue": lambda lib, x, lo, hi: x.kthvalue(2, 1)[0], "roll_flattened": lambda lib, x, lo, hi: x.roll(3),
    "ldexp": lambda lib, x, lo, hi: x.ldexp(hi),
    # in-place ops whose node differs from their out-of-place op's (leaky_relu_'s LeakyReluBackward1)
    **{f"{f}_inplace": (lambda f: lambda lib, x, lo, hi: getattr(lib.nn.functional, f)(
        x * 1, *((0.1, 0.0) if f == "threshold" else ()), inplace=True))(f)
       for f in ("leaky_relu", "elu", "selu", "celu", "threshold", "relu", "hardtanh", "silu")},
    "acosh_": lambda lib, x, lo, hi: (x.abs() + 1).acosh_(), "atanh_": lambda lib, x, lo, hi: (x * 0.1).atanh_(),
    "unsqueeze_": lambda lib, x, lo, hi: (x * 1).unsqueeze_(0), "t_": lambda lib, x, lo, hi: (x[0] * 1).t_(),
    "transpose_": lambda lib, x, lo, hi: (x * 1).transpose_(0, 2),
    "squeeze_": lambda lib, x, lo, hi: (x[:1] * 1).squeeze_(),
    "squeeze_dim_": lambda lib, x, lo, hi: (x[:1] * 1).squeeze_(0),
    "squeeze_dims_": lambda lib, x, lo, hi: (x[:1] * 1).squeeze_((0,)),
    # on the device of each library's tensors: torch's CPU dropout is a product, its GPU one native_dropout
    "dropout": lambda lib, x, lo, hi: lib.nn.functional.dropout(x.to(DEV) if lib is torch else x, 0.3),
    "repeat_interleave": lambda lib, x, lo, hi: x.repeat_interleave(2, 1),
    "repeat_interleave_flattened": lambda lib, x, lo, hi: x.repeat_interleave(3),
    "dropout2d": lambda lib, x, lo, hi: lib.nn.functional.dropout2d((x.to(DEV) if lib is torch else x)[None], 0.3),
}


def _written(y, index, value):
    y[index] = value
    return y


def _mul_first_row(y):
    y[0].mul_(2)
    return y


@pytest.mark.parametrize("case", NODE_CASES)
def test_grad_fn_is_torchs_node(case):
    """type(y.grad_fn).__name__ and grad_fn.name() as torch's: the overload an op ran (sum over dims SumBackward1, max
    of all MaxBackward1, clamp by numbers ClampBackward1), and basic indexing named by the view op torch applies
    last (select, slice, unsqueeze; alias where none)."""
    names = []
    for lib in (tnet, torch):
        x = lib.tensor(np.linspace(-2, 2, 60, dtype=np.float32).reshape(3, 4, 5), requires_grad=True)
        lo, hi = lib.tensor(np.linspace(-1, 0, 5, dtype=np.float32)), lib.tensor(np.linspace(0, 1, 5, dtype=np.float32))
        y = NODE_CASES[case](lib, x, lo, hi)
        names.append((type(y.grad_fn).__name__, y.grad_fn.name()))
    assert names[0] == names[1]


@pytest.mark.parametrize("data", [None, [1, None], [[1.0], [object()]], {"a": 1}, ["a", "b"], [1, "a"], "a", [b"a"],
                                  np.array(["a"]), np.array([None]), [1, 2 ** 70], [[1, 2], [3]], [[1.5, 2], 3],
                                  [1.5, [2, 3]], [[[1], [2]], [[3], [4, 5]]], [[1, 2], [3, 4], 5]],
                         ids=["none", "none_after_number", "object", "dict", "strings", "string_after_number", "string",
                              "bytes", "string_array", "object_array", "int_beyond_int64", "shorter_row", "number_row",
                              "list_item", "deep_longer_row", "trailing_number"])
def test_tensor_of_non_numbers_raises_torchs_error(data):
    """torch.tensor's error type and text for what is no number: a collate that catches the ValueError of a list of
    strings (`except ValueError: batch[k] = values`) keeps them, as with torch; and for nested lists that are not
    rectangular: a list of another length a ValueError naming its dim, a number where a list belongs (or a list
    where a number does) a TypeError."""
    errors = []
    for lib in (tnet, torch):
        with pytest.raises(Exception) as e:
            lib.tensor(data)
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1]
    assert tnet.tensor([1.5, 2 ** 70]).tolist() == torch.tensor([1.5, 2 ** 70]).tolist()  # beside a float: a float


def test_loader_batching_attributes_refuse_assignment_as_torch():
    """A DataLoader's batching is fixed when it is built: assigning batch_size (or sampler, dataset, ...) afterwards
    raises torch's ValueError instead of being ignored; other attributes (num_workers, collate_fn) take it."""
    for lib in (tnet, torch):
        loader = lib.utils.data.DataLoader(list(range(6)), batch_size=2)
        for name in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"):
            with pytest.raises(ValueError, match=f"{name} attribute should not be set after DataLoader is initialized"):
                setattr(loader, name, getattr(loader, name))
        loader.collate_fn = lambda batch: batch
        assert list(loader) == [[0, 1], [2, 3], [4, 5]]


def test_dlpack_device_module_and_symbolic_helpers_as_torch():
    """torch.from_dlpack / to_dlpack and Tensor.__dlpack__ share tnet's memory (numpy reads it; a tensor that
    requires grad is refused, as torch's); get_device_module names tnet's device modules; is_distributed is False;
    the sym_* helpers are torch's own."""
    x = tnet.randn(3, 4)
    assert np.array_equal(np.from_dlpack(x), x.numpy())
    for y in (tnet.from_dlpack(x), tnet.from_dlpack(tnet.to_dlpack(x))):
        assert isinstance(y, tnet.Tensor) and y.memory.data_ptr() == x.memory.data_ptr()
    assert tnet.from_dlpack(np.arange(6.0, dtype=np.float32)).tolist() == list(range(6))
    with pytest.raises(RuntimeError, match="require gradient"):
        tnet.to_dlpack(tnet.randn(2, requires_grad=True))
    assert tnet.get_device_module("cuda") is tnet.cuda and tnet.get_device_module(torch.device("cpu")) is tnet.cpu
    assert tnet.get_device_module() is (tnet.cuda if tnet.cuda.is_available() else tnet.cpu)
    assert tnet.get_device_module("xpu") is tnet.xpu and tnet.get_device_module("mps") is torch.mps
    with pytest.raises(RuntimeError, match="Invalid value of device"):
        tnet.get_device_module(0)
    assert tnet.is_distributed(x) is False and tnet.sym_max is torch.sym_max and tnet.sym_int(3.7) == 3
