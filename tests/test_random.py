"""The factories and random numbers (tnet/factory.py, kernels/random.py): zeros, ones, full, rand,
randn and manual_seed; dropout (functional/random.py, nn.Dropout): its mask, scale and gradient
in every layout and dtype, and fresh masks in a replayed CUDA graph."""
import math
import re
import warnings

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from tnet.kernels import random as random_module
from tnet.kernels.launch import is_channels_last
from helpers import CONFIG_DTYPES, DEV, LOW, TOL, assert_close, config_indices, only_ith_config, pair, tol_for


# ---- factories and random numbers -----------------------------------------------------------

def test_factories_shapes_and_dtypes():
    for t, shape, dtype in [(tnet.zeros(2, 3), (2, 3), torch.float32), (tnet.zeros((4,)), (4,), torch.float32),
                            (tnet.ones([2, 1, 3], dtype=tnet.float16), (2, 1, 3), torch.float16),
                            (tnet.full((2, 3), 7), (2, 3), torch.int64), (tnet.full([5], 1.5), (5,), torch.float32),
                            (tnet.full((2,), 2, dtype=tnet.int32), (2,), torch.int32), (tnet.zeros(()), (), torch.float32),
                            (tnet.rand(3, 4), (3, 4), torch.float32), (tnet.randn((5,)), (5,), torch.float32),
                            (tnet.rand(0, 3), (0, 3), torch.float32), (tnet.randn(7, dtype=tnet.bfloat16), (7,), torch.bfloat16)]:
        assert t.shape == shape and t.dtype == dtype and t.device.type == DEV.type
    assert tnet.ones(2, 2).tolist() == [[1.0, 1.0], [1.0, 1.0]] and tnet.full((2,), 7).tolist() == [7, 7]
    assert tnet.zeros(3, requires_grad=True).requires_grad and not tnet.randn(3).requires_grad
    with pytest.raises(TypeError, match='missing 1 required positional arguments'):  # as torch's
        tnet.zeros()
    scalar = tnet.tensor(1.0)  # 0-d sizes are sizes: () given, or a 0-d tensor's
    assert [t.shape for t in (tnet.rand(()), tnet.randn(()), tnet.rand_like(scalar), tnet.randn_like(scalar))] == [()] * 4
    for bad in (lambda: tnet.zeros(2, -1), lambda: tnet.full((2,), 1, requires_grad=True),
                lambda: tnet.zeros(2, device="mps")):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(NotImplementedError, match="check_uniform_bounds"):  # torch's kernel has no integer form
        tnet.rand(2, dtype=tnet.int64)


@pytest.mark.parametrize("dtype", LOW)
def test_factories_16_bit(dtype):
    for t, value in ((tnet.zeros(2, 3, dtype=dtype), 0.0), (tnet.ones(3, dtype=dtype), 1.0),
                     (tnet.full((2, 2), 1.5, dtype=dtype), 1.5)):
        assert t.dtype == dtype and np.all(f64(t) == value)
    tnet.manual_seed(0)
    u, z = f64(tnet.rand(4096, dtype=dtype)), f64(tnet.randn(4096, dtype=dtype))
    assert u.min() >= 0.0 and u.max() <= 1.0 and abs(u.mean() - 0.5) < 0.03  # <= 1: rounding may reach 1
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1.0) < 0.06
    assert tnet.randn(3, dtype=dtype, requires_grad=True).requires_grad


def test_manual_seed_reproduces_draws():
    tnet.manual_seed(1234)
    a, b = tnet.rand(37, 11), tnet.randn(5, 3)
    tnet.manual_seed(1234)
    assert torch.equal(a.memory, tnet.rand(37, 11).memory) and torch.equal(b.memory, tnet.randn(5, 3).memory)
    assert not torch.equal(a.memory, tnet.rand(37, 11).memory), "a second draw differs"
    tnet.manual_seed(1235)
    assert not torch.equal(a.memory, tnet.rand(37, 11).memory), "another seed differs"
    tnet.manual_seed(-1)  # any Python int, as torch (taken modulo 2^64)
    tnet.rand(2)


def test_rand_and_randn_statistics():
    tnet.manual_seed(0)
    u = tnet.rand(181, 113).numpy().astype(np.float64)  # n = 20453: the mean's std is 0.002
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - 12 ** -0.5) < 0.01
    assert abs((u < 0.25).mean() - 0.25) < 0.015
    z = tnet.randn(181, 113).numpy().astype(np.float64)  # the mean's std is 0.007, the std's 0.005
    assert abs(z.mean()) < 0.035 and abs(z.std() - 1.0) < 0.03
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.016
    assert np.abs(np.corrcoef(z.ravel()[:-1], z.ravel()[1:])[0, 1]) < 0.035, "neighbours are independent"
    h = tnet.rand(4096, dtype=tnet.float16).numpy().astype(np.float64)
    assert h.min() >= 0.0 and h.max() <= 1.0 and abs(h.mean() - 0.5) < 0.03


# ---- dropout --------------------------------------------------------------------------------

P = 0.3


def binomial_ok(zeroed, n, p):
    """Zeroed count within 5 standard deviations of n*p."""
    return abs(zeroed - n * p) <= 5 * np.sqrt(n * p * (1 - p))


def f64(t):
    """A tnet tensor's values as a float64 numpy array (numpy has no bfloat16)."""
    return t.memory.double().cpu().numpy()


def check_dropout(x, y, p):
    """y zeroes about p of x and scales the rest by 1/(1-p) (rounded to y's dtype); returns the kept mask."""
    X, Y = f64(x), f64(y)
    kept = Y != 0
    assert binomial_ok((~kept).sum(), X.size, p), f"{(~kept).mean():.3f} zeroed for p = {p}"
    assert_close(Y[kept], X[kept] / (1 - p), tol_for(y.dtype), "kept values")
    return kept


def test_dropout_train_mask_scale_gradient(rng, dtype=torch.float32):
    # no zeros: y != 0 is the mask
    x = tnet.tensor(rng.standard_normal((64, 67)) + 5.0, requires_grad=True, dtype=dtype)
    y = F.dropout(x, P)
    kept = check_dropout(x, y, P)
    g = rng.standard_normal(y.shape)
    y.backward(g)
    g = torch.tensor(g).to(dtype).double().numpy()  # as the tape rounds the seed
    assert y.dtype == x.grad.dtype == dtype
    assert_close(x.grad, np.where(kept, g / (1 - P), 0.0), tol_for(dtype), "gradient follows the mask")
    assert np.all(f64(x.grad)[~kept] == 0)


@pytest.mark.parametrize("dtype", LOW)
def test_dropout_16_bit(rng, dtype):
    test_dropout_train_mask_scale_gradient(rng, dtype)
    x = tnet.tensor(rng.standard_normal((2, 16, 5, 3)) + 5.0, dtype=dtype)
    x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    y = F.dropout(x, 0.5)
    assert y.dtype == dtype and is_channels_last(y.memory)
    check_dropout(x, y, 0.5)


def test_dropout_channels_last_keeps_layout(rng):
    x, _ = pair(rng, 2, 16, 5, 3, channels_last=True)
    y = F.dropout(x, 0.5)
    assert is_channels_last(y.memory)
    kept = check_dropout(x, y, 0.5)
    g = torch.tensor(rng.standard_normal(y.shape), dtype=torch.float32).contiguous(memory_format=torch.channels_last)
    y.backward(g)
    assert_close(x.grad, np.where(kept, g.numpy() * 2.0, 0.0), TOL["ieee"], "gradient")


def test_dropout_on_a_strided_view(rng):
    x = tnet.tensor(rng.standard_normal((40, 90)) + 5.0, requires_grad=True)
    v = x[:, ::3].T
    y = F.dropout(v, P)
    kept = check_dropout(v, y, P)
    y.backward(np.ones(y.shape))
    expect = np.zeros(x.shape)
    expect[:, ::3] = np.where(kept, 1 / (1 - P), 0.0).T
    assert_close(x.grad, expect, TOL["ieee"], "gradient")


def test_dropout_seed_reproduces_and_calls_differ():
    x = tnet.ones(50, 41)
    tnet.manual_seed(7)
    a = F.dropout(x, 0.5).numpy()
    b = F.dropout(x, 0.5).numpy()
    tnet.manual_seed(7)
    assert np.array_equal(a, F.dropout(x, 0.5).numpy())
    assert not np.array_equal(a, b)


def test_dropout_of_p_1_is_input_times_0_and_bad_bounds_raise_as_torch():
    """p = 1 is torch's input * 0: NaN and inf give NaN, and a NaN gradient stays (tnet wrote zeros); randint's
    empty range and randperm's negative n raise torch's RuntimeError (numpy's ValueError alone did not pass)."""
    for m in (torch, tnet):
        x = m.tensor([1.0, float("nan"), float("inf")], requires_grad=True)
        y = m.nn.functional.dropout(x, 1.0)
        y.backward(m.tensor([1.0, 2.0, float("nan")]))
        np.testing.assert_array_equal(np.asarray(y.tolist()), [0.0, np.nan, np.nan])
        np.testing.assert_array_equal(np.asarray(x.grad.tolist()), [0.0, 0.0, np.nan])
        for call in (lambda: m.randint(5, 2, (2,)), lambda: m.randint(0, (2,)), lambda: m.randperm(-1)):
            with pytest.raises(RuntimeError):
                call()
        with pytest.raises(TypeError):
            m.randperm(2.5)


def test_dropout_identity_edges_and_errors():
    x = tnet.ones(4, 5, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x and F.dropout(x, 0.0) is x
    z = F.dropout(x, 1.0)
    assert np.all(z.numpy() == 0)
    z.backward(np.ones(z.shape))
    assert np.all(x.grad.numpy() == 0)
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            F.dropout(x, p)
        with pytest.raises(ValueError, match="between 0 and 1"):
            nn.Dropout(p)
    tnet.manual_seed(5)
    y = F.dropout(x, 0.5)
    tnet.manual_seed(5)
    assert np.array_equal(F.dropout(x, 0.5, inplace=True).numpy(), y.numpy())  # out of place: x kept
    assert np.all(x.numpy() == 1)


def test_dropout_and_identity_modules():
    x = tnet.ones(30, 40)
    drop = nn.Dropout(0.25)
    assert repr(drop) == "Dropout(p=0.25, inplace=False)"
    check_dropout(x, drop(x), 0.25)
    model = nn.Sequential(nn.Identity(54, unused=1), drop)
    assert model.eval()(x) is x
    check_dropout(x, model.train()(x), 0.25)


@pytest.mark.skipif(DEV.type != "cuda", reason="CUDA graphs need a GPU")
def test_captured_dropout_draws_a_new_mask_on_every_replay():
    from tnet.graph import Graph
    x = tnet.ones(256, 129)
    graph = Graph(lambda: (F.dropout(x, 0.5).memory, tnet.rand(1000).memory))
    masks, draws = zip(*[[t.clone() for t in graph()] for _ in range(3)])
    for i in range(2):
        assert not torch.equal(masks[i], masks[i + 1]) and not torch.equal(draws[i], draws[i + 1])
    tnet.manual_seed(5)
    first = graph()[0].clone()
    tnet.manual_seed(5)
    assert torch.equal(first, graph()[0])


KERNELS = [random_module.random_kernel, random_module.dropout_kernel]


@pytest.mark.parametrize("i", config_indices(KERNELS))
def test_random_every_config(i, monkeypatch, rng):
    """Dropout and rand/randn tests again with each kernel's i-th tile config (or its last)."""
    only_ith_config(monkeypatch, KERNELS, i)
    for dtype in CONFIG_DTYPES:
        test_dropout_train_mask_scale_gradient(rng, dtype)
    test_rand_and_randn_statistics()


def test_dropout2d_drops_whole_channels():
    """Each (sample, channel) map is zero or scaled by 1/(1-p), as torch's; the gradient takes the same mask; eval
    mode and p=0 give the input back; a channels-last input keeps its layout. Other ranks as torch's feature dropout,
    with its warnings: a 3-D input read as [N, C, L], a 2-D one (mnist_rnn's Dropout2d after a BatchNorm1d) dropped
    element-wise, a 1-D one refused in training only."""
    tnet.manual_seed(4)
    x = tnet.tensor(np.random.default_rng(0).uniform(1, 2, (6, 16, 3, 3)), requires_grad=True)
    x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    y = F.dropout2d(x, 0.4)
    y.sum().backward()
    ratio = (y.memory / x.memory).cpu().numpy()
    per_map = ratio.reshape(6, 16, 9)
    kept = per_map[..., 0]
    assert np.allclose(per_map, per_map[..., :1]) and np.all(np.isclose(kept, 0) | np.isclose(kept, 1 / 0.6))
    assert 10 < (per_map[..., 0] == 0).sum() < 70 and is_channels_last(y.memory)
    assert np.allclose(x.grad.numpy(), ratio)
    assert F.dropout2d(x, 0.4, training=False) is x and F.dropout2d(x, 0.0) is x
    with pytest.warns(UserWarning, match="interpreted as shape \\(N, C, L\\)"):
        z = F.dropout2d(tnet.ones(5, 2, 4), 0.5).numpy()
    assert np.allclose(z, z[..., :1]) and np.isclose(z, 0).any() and not np.allclose(z[:, :1], z[:, 1:])
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        z = nn.Dropout2d(0.5)(tnet.ones(64, 3)).numpy()
    assert set(np.unique(z)) == {0.0, 2.0} and not np.allclose(z, z[:, :1])
    m = nn.Dropout2d(0.5)
    m.eval()
    assert m(x) is x
    with pytest.warns(UserWarning, match="1-D input"):
        assert F.dropout2d(tnet.ones(4), 0.5, training=False).shape == (4,)
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            F.dropout2d(tnet.ones(4), 0.5)



def test_normal_bernoulli_categorical_as_torch(rng):
    """tnet.distributions' log_prob, entropy, cdf, icdf and kl_divergence against torch.distributions in
    float64, with the parameters' gradients; rsample's gradient is 1 for loc and the noise for scale;
    samples have torch's shapes and dtypes and the right frequencies."""
    import torch.distributions as TD
    D = tnet.distributions
    (loc, rloc), (scale, rscale), (logits, rlogits) = pair(rng, 2, 3), pair(rng, 2, 3), pair(rng, 2, 3)
    value = rng.standard_normal((4, 2, 3))
    cls = np.array([[2, 0], [1, 1], [0, 2], [2, 2]])
    tv, rv, tc, rc = tnet.tensor(value), torch.tensor(value), tnet.tensor(cls), torch.tensor(cls)
    bits = (value > 0).astype(np.float64)

    def laws(d, lib, loc, scale, logits):
        n, q = d.Normal(loc, scale.abs() + 0.5), d.Normal(loc * 0.5, 2.0)
        b, c = d.Bernoulli(logits=logits), d.Categorical(logits=logits)
        i = d.Independent(n, 1)
        return [n.log_prob(lib.tensor(value)) if lib is torch else n.log_prob(tv), n.entropy(),
                n.cdf(rv if lib is torch else tv), n.icdf(d.Normal(0., 1.).cdf(rv if lib is torch else tv)),
                d.kl_divergence(n, q), d.kl_divergence(i, d.Independent(q, 1)), i.log_prob(rv if lib is torch else tv),
                b.log_prob(lib.tensor(bits)), b.entropy(), d.Bernoulli(probs=logits.sigmoid()).log_prob(lib.tensor(bits)),
                d.kl_divergence(b, d.Bernoulli(probs=lib.tensor([[0.2, 0.7, 0.9]] * 2, dtype=logits.dtype))),
                c.log_prob(rc if lib is torch else tc), c.entropy(), c.probs,
                d.Categorical(probs=logits.exp()).log_prob(rc if lib is torch else tc),
                d.kl_divergence(c, d.Categorical(logits=logits.flip(0)))]

    outs, refs = laws(D, tnet, loc, scale, logits), laws(TD, torch, rloc, rscale, rlogits)
    for k, (out, ref) in enumerate(zip(outs, refs)):
        assert_close(out, ref, TOL["ieee"] * 10, f"law {k}")
    seeds = [rng.standard_normal(tuple(r.shape)) for r in refs]
    sum(((o * tnet.tensor(g)).sum() for o, g in zip(outs, seeds)), tnet.tensor(0.0)).backward()
    sum((r * torch.tensor(g)).sum() for r, g in zip(refs, seeds)).backward()
    for t, r in ((loc, rloc), (scale, rscale), (logits, rlogits)):
        assert_close(t.grad, r.grad, TOL["ieee"] * 10, "gradient")
    # rsample: loc + eps * scale, differentiable; sample: detached
    loc.grad = scale.grad = None
    z = D.Normal(loc, scale, validate_args=False).rsample((5,))  # a negative scale: torch's check would raise
    assert z.shape == (5, 2, 3) and z.requires_grad and not D.Normal(loc, scale, validate_args=False).sample().requires_grad
    z.sum().backward()
    eps = (z.detach() - loc.detach()) / scale.detach()
    assert_close(loc.grad, np.full((2, 3), 5.0), TOL["ieee"], "rsample's loc gradient")
    assert_close(scale.grad, eps.sum(0), TOL["ieee"] * 10, "rsample's scale gradient")
    tnet.manual_seed(0)
    b = D.Bernoulli(probs=tnet.tensor([0.1, 0.8])).sample((4000,))
    c = D.Categorical(probs=tnet.tensor([[1.0, 3.0], [4.0, 0.0]])).sample((4000,))
    assert b.shape == (4000, 2) and b.dtype == torch.float32 and c.shape == (4000, 2) and c.dtype == torch.int64
    assert np.allclose(b.numpy().mean(0), [0.1, 0.8], atol=0.03)
    assert np.allclose(c.numpy().mean(0), [0.75, 0.0], atol=0.03)
    with pytest.raises(ValueError, match="not both"):
        D.Bernoulli(probs=0.5, logits=0.0)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(0., 1.), D.Bernoulli(0.5))
    from tnet.distributions.normal import Normal
    from tnet.distributions.kl import kl_divergence
    assert Normal is D.Normal and kl_divergence is D.kl_divergence and D.Independent(D.Normal(loc, scale.abs()), 2).batch_shape == ()


def _one_hot_dist(d, F, logits):
    """dreamerv3-torch's OneHotDist: a OneHotCategorical subclass whose mode() reads super().logits."""
    class OneHotDist(d.OneHotCategorical):
        def mode(self):
            _mode = F.one_hot(super().logits.argmax(-1), super().logits.shape[-1])
            return _mode.detach() + super().logits - super().logits.detach()
    class Cat(d.Categorical):  # torch's lazy probs and logits, read through super() as well
        def both(self):
            return super().probs * super().logits

    class Ber(d.Bernoulli):
        def both(self):
            return super().probs * super().logits
    o = OneHotDist(logits=logits)
    e = o.expand((4, 2))
    return ([o.mode(), o.probs, e.logits, e.probs, Cat(logits=logits).both(), Ber(logits=logits).both()],
            (tuple(o.param_shape), repr(o), "probs" in vars(o)))


def test_one_hot_categorical_parameters_are_properties_as_torch(rng):
    """OneHotCategorical's probs, logits and param_shape are properties of the class reading its Categorical, as
    torch's: a subclass reads super().logits, expand() carries them, and repr() lists no parameter; Categorical's
    and Bernoulli's (torch's lazy ones, tnet's computed at once) are read through super() too."""
    import torch.distributions as TD
    logits, rlogits = pair(rng, 2, 3)
    outs, meta = _one_hot_dist(tnet.distributions, tnet.nn.functional, logits)
    refs, rmeta = _one_hot_dist(TD, torch.nn.functional, rlogits)
    assert meta == (rmeta[0], rmeta[1].replace("torch", "tnet"), rmeta[2]) and meta[0] == (2, 3)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL["ieee"])
    sum((o * k).sum() for k, o in enumerate(outs, 1)).backward()
    sum((r * k).sum() for k, r in enumerate(refs, 1)).backward()
    assert_close(logits.grad, rlogits.grad, TOL["ieee"], "gradient")


def test_uniform_one_hot_categorical_mixture_as_torch(rng):
    """Uniform (-inf outside [low, high), where torch's default validation would raise instead),
    OneHotCategorical and MixtureSameFamily (of Normals, and of Independent Normals) against
    torch.distributions in float64 with gradients; samples have torch's shapes, and a mixture's come
    from the component its Categorical picks."""
    import torch.distributions as TD
    D = tnet.distributions
    (low, rlow), (logits, rlogits), (loc, rloc) = pair(rng, 2), pair(rng, 2, 3), pair(rng, 2, 3, 4)
    u = rng.uniform(-2, 4, (5, 2))
    onehot = np.eye(3)[[[0, 2], [1, 1]]]
    x = rng.standard_normal((5, 2, 4))

    def laws(d, lib, low, logits, loc):
        uni = d.Uniform(low, low.exp() + low, validate_args=False)
        o = d.OneHotCategorical(logits=logits)
        mix = d.MixtureSameFamily(d.Categorical(logits=logits[0]), d.Normal(loc[0, :, 0], loc[1, :, 0].exp()))
        mix2 = d.MixtureSameFamily(d.Categorical(logits=logits),
                                   d.Independent(d.Normal(loc, (loc * 0.5).exp()), 1))
        return [uni.log_prob(lib.tensor(u)), uni.entropy(), uni.cdf(lib.tensor(u)), uni.mean, uni.variance,
                o.log_prob(lib.tensor(onehot)), o.entropy(), mix.log_prob(lib.tensor(u)), mix.mean,
                mix2.log_prob(lib.tensor(x)), mix2.mean]

    outs, refs = laws(D, tnet, low, logits, loc), laws(TD, torch, rlow, rlogits, rloc)
    for k, (out, ref) in enumerate(zip(outs, refs)):
        finite = np.isfinite(ref.detach().numpy())
        assert np.array_equal(np.isfinite(out.numpy()), finite), f"law {k}"
        assert_close(np.where(finite, out.numpy(), 0), np.where(finite, ref.detach().numpy(), 0), TOL["ieee"] * 10,
                     f"law {k}")
    seeds = [rng.standard_normal(tuple(r.shape)) * np.isfinite(r.detach().numpy()) for r in refs]
    sum(((o * tnet.tensor(g)).nan_to_num().sum() for o, g in zip(outs, seeds)), tnet.tensor(0.0)).backward()
    sum((r * torch.tensor(g)).nan_to_num().sum() for r, g in zip(refs, seeds)).backward()
    for t, r in ((low, rlow), (logits, rlogits), (loc, rloc)):
        assert_close(t.grad, r.grad, TOL["ieee"] * 10, "gradient")
    tnet.manual_seed(1)
    z = D.Uniform(low, low + 1).rsample((7,))
    assert z.shape == (7, 2) and z.requires_grad
    assert D.OneHotCategorical(logits=logits).sample((4,)).shape == (4, 2, 3)
    mix = D.MixtureSameFamily(D.Categorical(probs=tnet.tensor([1.0, 3.0])),
                              D.Normal(tnet.tensor([-10.0, 10.0]), tnet.tensor([0.01, 0.01])))
    draws = mix.sample((2000,)).numpy()
    assert draws.shape == (2000,) and np.all(np.abs(np.abs(draws) - 10) < 0.1)
    assert abs((draws > 0).mean() - 0.75) < 0.04

def _laws_as_torch(laws, params, refs_params, rng):
    """laws(distributions module, library, *params): a list of tensors; tnet's (tnet.distributions) against
    torch's, values and the parameters' gradients of a random weighting of all of them."""
    outs, refs = laws(tnet.distributions, tnet, *params), laws(torch.distributions, torch, *refs_params)
    for k, (out, ref) in enumerate(zip(outs, refs)):
        assert tuple(out.shape) == tuple(ref.shape), f"law {k}"
        assert_close(out, ref.detach(), TOL["ieee"] * 20, f"law {k}")
    seeds = [rng.standard_normal(tuple(r.shape)) for r in refs]
    sum(((o * tnet.tensor(g)).sum() for o, g in zip(outs, seeds)), tnet.tensor(0.0)).backward()
    sum((r * torch.tensor(g)).sum() for r, g in zip(refs, seeds)).backward()
    for t, r in zip(params, refs_params):
        assert_close(t.grad, r.grad, TOL["ieee"] * 20, "gradient")


def test_laplace_exponential_gamma_dirichlet_mvn_relaxed_as_torch(rng, ieee):
    """Laplace, Exponential, Gamma, Dirichlet, MultivariateNormal (from a covariance, a precision and a
    scale_tril, batch dims broadcast), RelaxedBernoulli, RelaxedOneHotCategorical and Beta against
    torch.distributions in float64: log_prob, entropy, cdf, icdf, mean, variance, kl_divergence, and
    the parameters' gradients through them."""
    D = tnet.distributions
    (a, ra), (b, rb), (m, rm) = pair(rng, 2, 3), pair(rng, 2, 3), pair(rng, 3, 3)
    x = rng.standard_normal((4, 2, 3))
    pos = rng.gamma(2.0, size=(4, 2, 3)) + 0.05
    simplex = rng.dirichlet(np.ones(3), size=(4, 2))
    u = rng.uniform(0.05, 0.95, (4, 2, 3))

    def laws(d, lib, a, b, m):
        t = lib.tensor
        lap, lap2 = d.Laplace(a, b.exp()), d.Laplace(b, a.exp() + 0.5)
        ex, ex2 = d.Exponential(a.exp()), d.Exponential(b.exp())
        ga, ga2 = d.Gamma(a.exp() + 0.5, b.exp()), d.Gamma(b.exp(), a.exp())
        di, di2 = d.Dirichlet(a.exp()), d.Dirichlet(b.exp() + 0.3)
        cov = m @ m.mT + 0.5 * lib.eye(3, dtype=m.dtype)
        mvn, mvn2 = d.MultivariateNormal(a, covariance_matrix=cov), d.MultivariateNormal(b[0], precision_matrix=cov)
        mvn3 = d.MultivariateNormal(b, scale_tril=lib.linalg.cholesky(cov * 2))
        rb_, rc = d.RelaxedBernoulli(b.exp(), logits=a), d.RelaxedOneHotCategorical(b[0, 0].exp(), logits=a)
        be = d.Beta(a.exp(), b.exp() + 0.5)
        return [lap.log_prob(t(x)), lap.entropy(), lap.cdf(t(x)), lap.icdf(t(u)), lap.variance,
                d.kl_divergence(lap, lap2), ex.log_prob(t(pos)), ex.entropy(), ex.cdf(t(pos)), ex.icdf(t(u)),
                ex.variance, d.kl_divergence(ex, ex2), ga.log_prob(t(pos)), ga.entropy(), ga.mean, ga.variance,
                d.kl_divergence(ga, ga2), di.log_prob(t(simplex)), di.entropy(), di.mean, di.variance,
                d.kl_divergence(di, di2), mvn.log_prob(t(x)), mvn.entropy(), mvn.variance, mvn2.log_prob(t(x)),
                mvn2.entropy(), mvn2.scale_tril, mvn.precision_matrix, mvn3.log_prob(t(x)),
                d.kl_divergence(mvn, mvn2), d.kl_divergence(mvn3, mvn), rb_.log_prob(t(u)),
                rc.log_prob(t(simplex)), be.log_prob(t(u)), be.entropy(), be.variance]

    _laws_as_torch(laws, (a, b, m), (ra, rb, rm), rng)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.MultivariateNormal(tnet.zeros(2))
    from tnet.distributions.multivariate_normal import MultivariateNormal
    assert MultivariateNormal is D.MultivariateNormal



def test_gamma_and_chi2_cdf_as_torch(rng):
    """Gamma.cdf (Chi2's through it) as torch's gammainc(concentration, rate * value), against torch in float64:
    values, the gradients of rate and value; concentration's raises in backward, as torch's."""
    D = tnet.distributions
    conc, rate = np.array([0.5, 2.0, 30.0]), np.array([1.5, 0.7, 1.0])
    value = rng.gamma(2.0, size=(2, 3)) + 0.05
    (r, rr), (v, rv) = (tnet.tensor(rate, requires_grad=True), torch.tensor(rate, requires_grad=True)), \
        (tnet.tensor(value, requires_grad=True), torch.tensor(value, requires_grad=True))
    ours, ref = D.Gamma(tnet.tensor(conc), r).cdf(v), torch.distributions.Gamma(torch.tensor(conc), rr).cdf(rv)
    assert_close(ours, ref.detach(), 1e-5, "Gamma.cdf")
    ours.sum().backward()
    ref.sum().backward()
    assert_close(r.grad, rr.grad, 1e-5, "rate's gradient")
    assert_close(v.grad, rv.grad, 1e-5, "value's gradient")
    assert_close(D.Chi2(tnet.tensor(conc)).cdf(tnet.tensor(value)),
                 torch.distributions.Chi2(torch.tensor(conc)).cdf(torch.tensor(value)), 1e-5, "Chi2.cdf")
    for lib in (tnet, torch):
        with pytest.raises(NotImplementedError, match="igamma: input"):
            lib.distributions.Gamma(lib.tensor([2.0], requires_grad=True), 1.0).cdf(lib.tensor([1.0])).sum().backward()


VALIDATED = [  # (law's constructor, value for log_prob or None): torch's validate_args raises for each
    (lambda d, t: d.Normal(t([0.0, float("nan")]), 1.0), None), (lambda d, t: d.Normal(0.0, t([1.0, -1.0])), None),
    (lambda d, t: d.Normal(0.0, 1.0), lambda t: t([float("nan")])), (lambda d, t: d.Gamma(2.0, 1.0), lambda t: t([-1.0])),
    (lambda d, t: d.Bernoulli(probs=t([0.5, 1.5])), None), (lambda d, t: d.Categorical(probs=t([0.5, -0.5])), None),
    (lambda d, t: d.Uniform(1.0, 0.0), None), (lambda d, t: d.Uniform(0.0, 1.0), lambda t: t(2.0)),
    (lambda d, t: d.Beta(1.0, -1.0), None), (lambda d, t: d.HalfNormal(1.0), lambda t: t([-0.5])),
    (lambda d, t: d.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]])), None),
    (lambda d, t: d.Binomial(5, probs=t([0.5])), lambda t: t([6.0])), (lambda d, t: d.Poisson(2.0), lambda t: t([1.5])),
    (lambda d, t: d.Independent(d.Normal(t([0.0, 0.0]), 1.0), 1), lambda t: t([0.0, float("nan")])),
    (lambda d, t: d.Dirichlet(t([1.0, 0.0])), None), (lambda d, t: d.Exponential(1.0), lambda t: t(-1.0)),
    (lambda d, t: d.LogNormal(0.0, 1.0), lambda t: t(-1.0)), (lambda d, t: d.Chi2(t([-1.0])), None),
    (lambda d, t: d.Geometric(t([0.5, 0.0])), None),
    (lambda d, t: d.Normal(t([0.0, 0.0]), 1.0), lambda t: t([0.0, 0.0, 0.0])), (lambda d, t: d.Normal(0.0, 1.0), lambda t: 2.0)]


@pytest.mark.parametrize("case", range(len(VALIDATED)))
def test_validate_args_raises_as_torch(case):
    """validate_args (on by default, as torch's): the constructor checks the parameters against arg_constraints,
    log_prob and cdf their value against support, with torch's ValueError (the same message where the law's
    repr is torch's); validate_args=False, or set_default_validate_args(False), skips them."""
    make, value = VALIDATED[case]
    messages = []
    on_device = lambda *args: torch.tensor(*args, device=tnet.DEVICE)  # torch's message shows the device, as tnet's
    for lib, tensor in ((torch, on_device), (tnet, tnet.tensor)):
        with pytest.raises(ValueError) as raised:
            law = make(lib.distributions, tensor)
            if value is not None:
                law.log_prob(value(tensor))
        messages.append(str(raised.value))
    if case < 4 or case in (7, 19):  # Normal's, Gamma's, Uniform's and Geometric's reprs are torch's
        # torch 2.11's Gamma prints its invalid value without the device (a GPU's gpu61 run), 2.13's with it
        device = f", device='{tnet.DEVICE}'" if tnet.DEVICE.type == "cuda" else ""
        assert messages[0].replace(device, "") == messages[1].replace(device, "")
    if value is None or case >= len(VALIDATED) - 2:  # their laws, or scores, raise otherwise without the checks
        return
    tnet.distributions.Distribution.set_default_validate_args(False)
    try:
        law = make(tnet.distributions, tnet.tensor)
        law.log_prob(value(tnet.tensor))
    finally:
        tnet.distributions.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):  # the default read at each call, as torch's: on again
        law.log_prob(value(tnet.tensor))
    for lib in (tnet, torch):
        with pytest.raises(ValueError):
            lib.distributions.Distribution.set_default_validate_args("yes")


EMPTY_BATCHES = [  # (law's constructor, validate_args' outcome: None where it constructs)
    (lambda d, t: d.Beta(t([]), t([])), "[0, -1]"), (lambda d, t: d.Beta(t([[], []]), 1.0), "[2, 0, -1]"),
    (lambda d, t: d.Dirichlet(t([[]]).reshape(0, 3)), "[0, -1]"), (lambda d, t: d.Dirichlet(t([[], []])), None),
    (lambda d, t: d.MultivariateNormal(t([[]]).reshape(0, 2), t([[1.0, 0.0], [0.0, 1.0]])), "[0, -1]"),
    (lambda d, t: d.Categorical(logits=t([[]]).reshape(0, 3)), "[0, -1]"),
    (lambda d, t: d.Categorical(probs=t([[]]).reshape(0, 3)), None)]


@pytest.mark.parametrize("case", range(len(EMPTY_BATCHES)))
def test_validate_args_of_an_empty_batch_as_torch(case):
    """torch's independent constraint (Dirichlet's concentration, Beta's Dirichlet, MultivariateNormal's loc,
    Categorical's logits) reshapes its check to batch_shape + (-1,), which torch refuses with a RuntimeError
    where the batch holds a 0 (fuzz seed 264, case 338); an empty event, or validate_args=False, constructs."""
    make, shape = EMPTY_BATCHES[case]
    for lib in (torch, tnet):
        if shape is None:
            make(lib.distributions, lib.tensor)
            continue
        with pytest.raises(RuntimeError, match=re.escape(f"into shape {shape} because")):
            make(lib.distributions, lib.tensor)
    tnet.distributions.Distribution.set_default_validate_args(False)
    try:
        make(tnet.distributions, tnet.tensor)
    finally:
        tnet.distributions.Distribution.set_default_validate_args(True)


def test_compile_turns_validate_args_off_as_torch(monkeypatch):
    """torch.compile of a model or function turns the distributions' default validate_args off (disable=True
    and the bare decorator do not; torch's first such call in the process, tnet's each, which a script cannot
    tell apart); inside a CUDA graph's capture the checks, host reads, are skipped."""
    tnet.compile(lambda x: x, disable=True), tnet.compile()
    assert tnet.distributions.Distribution._validate_args
    tnet.compile(lambda x: x)
    assert not tnet.distributions.Distribution._validate_args
    tnet.distributions.Normal(0.0, -1.0)
    monkeypatch.setattr(tnet.distributions.Distribution, "_validate_args", True)
    monkeypatch.setattr(tnet.distributions, "capturing", lambda x: True)
    tnet.distributions.Normal(tnet.zeros(2), -tnet.ones(2)).log_prob(tnet.zeros(2))


def test_validate_args_false_skips_the_checks_as_torch():
    def scores(lib):
        D, t = lib.distributions, lib.tensor
        return [D.Normal(0.0, -1.0, validate_args=False).scale, D.Normal(0.0, 1.0, validate_args=False).log_prob(t([float("nan")])),
                D.Gamma(2.0, 1.0, validate_args=False).log_prob(t([-1.0])), D.Uniform(0.0, 1.0, validate_args=False).log_prob(t(2.0)),
                D.Exponential(2.0, validate_args=False).cdf(t([-1.0]))]
    for got, want in zip(scores(tnet), scores(torch)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_bounded_constraints_check_by_one_reduction(monkeypatch):
    """An interval of numbers answers validate_args from amin, amax or aminmax of the value (NaN fails), not
    from check's comparisons: one reduction per parameter at each construction."""
    C = tnet.distributions.constraints
    x = tnet.tensor([0.5, 2.0, 1.0])
    monkeypatch.setattr(type(C.positive), "check", lambda self, v: pytest.fail("check called"))
    assert C.positive._holds(x) and C.real._holds(x) and not C.unit_interval._holds(x)
    assert not C.real._holds(tnet.tensor([1.0, float("nan")])) and not C.positive._holds(tnet.tensor([1.0, 0.0]))
    assert C.nonnegative._holds(tnet.tensor([0.0, 3.0])) and C.half_open_interval(0.0, 2.5)._holds(x)
    assert not C.half_open_interval(0.0, 2.5)._holds(tnet.tensor([2.5])) and C.real._holds(tnet.tensor([]))
    assert C.independent(C.positive, 1)._holds(x.reshape(1, 3))
    for name in ("amin", "amax"):  # a parameter given as a number is checked on the host
        monkeypatch.setattr(tnet.Tensor, name, lambda self, *a, **k: pytest.fail("a reduction launched"))
    tnet.distributions.Normal(0.0, 1.0), tnet.distributions.Gamma(2.0, 3.0)
    with pytest.raises(ValueError, match="GreaterThan"):
        tnet.distributions.Normal(0.0, -1.0)
    monkeypatch.undo()
    loc, scale = tnet.distributions.utils.broadcast_all(0.0, 1.0)
    scale.mul_(-1.0)  # written in place since: its number no longer stands for it
    assert not C.positive._holds(scale)


def test_transformed_cdf_icdf_modes_enumerate_support_and_more_as_torch():
    """TransformedDistribution's cdf and icdf (the base's through the transforms, flipped where they reverse
    the order: Weibull, Pareto, Kumaraswamy, InverseGamma), Bernoulli's, Uniform's, OneHotCategorical's and
    Independent's mode (Beta's and Dirichlet's too, a one-hot mode where all concentrations are below 1),
    Bernoulli's, OneHotCategorical's and Independent's enumerate_support, MixtureSameFamily's cdf and
    Multinomial's entropy, as torch's."""
    def laws(lib):
        d, t = lib.distributions, lib.tensor
        x, u = t([0.3, 1.2, 2.5]), t([0.1, 0.5, 0.9])
        w, p = d.Weibull(t([1.5, 2.0, 0.7]), 1.3), d.Pareto(1.0, t([2.0, 3.0, 1.5]))
        k, ig = d.Kumaraswamy(t([2.0, 0.5, 1.5]), 3.0), d.InverseGamma(t([2.0, 3.0, 1.5]), 1.2)
        oh = d.OneHotCategorical(t([[0.2, 0.5, 0.3]]))
        return [w.cdf(x), w.icdf(u), p.cdf(x + 1), p.icdf(u), k.cdf(u), k.icdf(u), ig.cdf(x),
                d.Bernoulli(t([0.2, 0.5, 0.9])).mode, d.Bernoulli(t([[0.2, 0.7]])).enumerate_support(),
                d.Uniform(0.0, t([1.0, 2.0])).mode, oh.mode, oh.enumerate_support(), oh.enumerate_support(False),
                d.Independent(d.Bernoulli(t([[0.2, 0.7]])), 0).enumerate_support(False),
                d.Independent(d.Normal(t([[0.2, 0.7]]), 1.0), 1).mode,
                d.MixtureSameFamily(d.Categorical(t([0.3, 0.7])), d.Normal(t([-1.0, 2.0]), t([1.0, 0.5]))).cdf(x),
                d.Multinomial(5, t([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])).entropy(),
                d.Beta(t([2.0, 0.5, 1.0, 0.5, 3.0]), t([3.0, 0.7, 1.0, 2.0, 0.5])).mode,
                d.Dirichlet(t([[2.0, 3.0, 1.5], [0.5, 0.2, 0.9], [0.5, 2.0, 0.3]])).mode]
    for k, (got, want) in enumerate(zip(laws(tnet), laws(torch))):
        assert tuple(got.shape) == tuple(want.shape), k
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-6, equal_nan=True, err_msg=str(k))
    for lib in (tnet, torch):
        with pytest.raises(NotImplementedError, match="cartesian product"):
            lib.distributions.Independent(lib.distributions.Bernoulli(lib.tensor([[0.2, 0.7]])), 1).enumerate_support()


def test_generalized_pareto_as_torch(rng):
    """GeneralizedPareto against torch's (in float32: torch's log_prob raises for float64 parameters, isclose of
    a float32 0): log_prob, cdf, icdf, log_survival_function, mean, variance, entropy, with the parameters'
    gradients, rsample's shape; its support's check (an upper bound for a negative concentration)."""
    (a, _), (b, _) = pair(rng, 2, 3), pair(rng, 2, 3)
    ra, rb = (torch.tensor(v.numpy(), requires_grad=True) for v in (a, b))
    pos, u = rng.gamma(2.0, size=(4, 2, 3)) + 0.05, rng.uniform(0.05, 0.95, (4, 2, 3))

    def laws(d, lib, a, b):
        t = lambda v: lib.tensor(v, dtype=lib.float32)
        g = d.GeneralizedPareto(0.1 * a - 1.0, b.exp(), 0.2 + 0.1 * b.sigmoid())
        e = d.GeneralizedPareto(0.1 * a - 1.0, b.exp(), 0.0 * b)  # the exponential limit
        return [g.log_prob(t(pos)), g.cdf(t(pos)), g.icdf(t(u)), g.log_survival_function(t(pos)), g.mean, g.variance,
                g.entropy(), e.log_prob(t(pos)), e.cdf(t(pos)), e.icdf(t(u))]

    outs, refs = laws(tnet.distributions, tnet, a, b), laws(torch.distributions, torch, ra, rb)
    for k, (out, ref) in enumerate(zip(outs, refs)):
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=2e-5, atol=2e-6, err_msg=str(k))
    seeds = [rng.standard_normal(tuple(r.shape)).astype(np.float32) for r in refs]
    sum(((o * tnet.tensor(g)).sum() for o, g in zip(outs, seeds)), tnet.tensor(0.0)).backward()
    sum((r * torch.tensor(g)).sum() for r, g in zip(refs, seeds)).backward()
    for got, want in ((a, ra), (b, rb)):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert tnet.distributions.GeneralizedPareto(a, b.exp(), 0.3).rsample((5,)).shape == (5, 2, 3)
    for lib in (tnet, torch):
        with pytest.raises(ValueError, match="within the support"):
            lib.distributions.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(lib.tensor(3.0))


def test_gumbel_cauchy_log_normal_poisson_student_t_as_torch(rng, ieee):
    """Gumbel, Cauchy, LogNormal, Poisson and StudentT against torch.distributions in float64: log_prob,
    cdf, icdf, entropy, mean, mode, variance, Poisson's kl_divergence, and the parameters' gradients
    through them; then their samples' moments (Poisson and StudentT drawn on the host), and rsample's
    gradient where torch has one."""
    D = tnet.distributions
    (a, ra), (b, rb) = pair(rng, 2, 3), pair(rng, 2, 3)
    x = rng.standard_normal((4, 2, 3))
    pos = rng.gamma(2.0, size=(4, 2, 3)) + 0.05
    counts = rng.integers(0, 6, (4, 2, 3)).astype(np.float64)
    u = rng.uniform(0.05, 0.95, (4, 2, 3))

    def laws(d, lib, a, b):
        t = lib.tensor
        gu, ca = d.Gumbel(a, b.exp(), validate_args=False), d.Cauchy(a, b.exp())  # torch checks its Uniform base
        ln = d.LogNormal(a, b.exp())
        po, po2 = d.Poisson(a.exp()), d.Poisson(b.exp())
        st = d.StudentT(b.exp() + 2.5, a, b.exp())
        return [gu.log_prob(t(x)), gu.cdf(t(x)), gu.icdf(t(u)), gu.entropy(), gu.mean, gu.variance,
                ca.log_prob(t(x)), ca.cdf(t(x)), ca.icdf(t(u)), ca.entropy(), ln.log_prob(t(pos)), ln.cdf(t(pos)),
                ln.icdf(t(u)), ln.entropy(), ln.mean, ln.mode, ln.variance, po.log_prob(t(counts)), po.mean,
                d.kl_divergence(po, po2), st.log_prob(t(x)), st.entropy(), st.mean, st.variance]

    _laws_as_torch(laws, (a, b), (ra, rb), rng)
    heavy = D.StudentT(tnet.tensor([0.5, 1.5]))
    mean, variance = heavy.mean.numpy(), heavy.variance.numpy()
    assert np.isnan(mean[0]) and np.isnan(variance[0]) and np.isinf(variance[1])
    tnet.manual_seed(5)
    loc = tnet.tensor([1.0, -2.0], requires_grad=True)
    cases = [(D.Gumbel(loc, 0.5), [1.0 + 0.5 * 0.5772, -2.0 + 0.5 * 0.5772], [0.411, 0.411]),
             (D.LogNormal(tnet.tensor([0.0, 0.5]), 0.25), [1.0317, 1.7009], [0.0687, 0.1883]),
             (D.Poisson(tnet.tensor([0.5, 4.0])), [0.5, 4.0], [0.5, 4.0]),
             (D.StudentT(tnet.tensor([5.0, 8.0]), 1.0, 2.0), [1.0, 1.0], [6.667, 5.333])]
    for d, mean, var in cases:
        draws = d.sample((6000,))
        assert tuple(draws.shape) == (6000, 2) and not draws.requires_grad, type(d).__name__
        assert np.allclose(draws.numpy().mean(0), mean, atol=0.1, rtol=0.05), type(d).__name__
        assert np.allclose(draws.numpy().var(0), var, rtol=0.15, atol=0.01), type(d).__name__
    median = np.median(D.Cauchy(loc, 1.0).sample((6000,)).numpy(), 0)
    assert np.allclose(median, [1.0, -2.0], atol=0.1)
    assert D.Gumbel(loc, 1.0).rsample().requires_grad and D.Cauchy(loc, 1.0).rsample().requires_grad
    assert D.LogNormal(loc, 1.0).rsample((3,)).shape == (3, 2) and not D.Poisson(1.0).has_rsample
    from tnet.distributions.studentT import StudentT
    assert StudentT is D.StudentT


def test_transformed_distribution_as_torch(rng, ieee):
    """TransformedDistribution with torch's transforms (Tanh, Sigmoid, Exp, Affine) against torch's in
    float64: log_prob and its gradients; denisyarats/pytorch_sac's SquashedNormal (a subclass over a
    TanhTransform subclass of Transform, with constraints.interval) with the cache making inv(t(x)) x
    itself; rsample's gradient; the transforms' inv."""
    D = tnet.distributions
    (a, ra), (b, rb) = pair(rng, 2, 3), pair(rng, 2, 3)
    y = rng.uniform(-0.9, 0.9, (4, 2, 3))
    pos = rng.gamma(2.0, size=(4, 2, 3)) + 0.05
    u = rng.uniform(0.05, 0.95, (4, 2, 3))

    def laws(d, lib, a, b):
        t, T = lib.tensor, d.transforms
        squash = d.TransformedDistribution(d.Normal(a, b.exp()), [T.TanhTransform(cache_size=1)])
        lognormal = d.TransformedDistribution(d.Normal(a, b.exp()), [T.AffineTransform(0.5, 2.0), T.ExpTransform()])
        logit = d.TransformedDistribution(d.Normal(a, b.exp()), T.SigmoidTransform())
        affine = d.TransformedDistribution(d.Normal(a, 1.0), T.AffineTransform(b, b.exp() + 0.5))
        independent = d.Independent(d.TransformedDistribution(d.Normal(a, b.exp()), [T.TanhTransform()]), 1)
        return [squash.log_prob(t(y)), lognormal.log_prob(t(pos)), logit.log_prob(t(u)), affine.log_prob(t(y)),
                independent.log_prob(t(y))]

    _laws_as_torch(laws, (a, b), (ra, rb), rng)

    def squashed_normal(lib):
        pyd, F_ = lib.distributions, lib.nn.functional

        class TanhTransform(pyd.transforms.Transform):
            domain = pyd.constraints.real
            codomain = pyd.constraints.interval(-1.0, 1.0)
            bijective = True
            sign = +1

            def __init__(self, cache_size=1):
                super().__init__(cache_size=cache_size)

            @staticmethod
            def atanh(x):
                return 0.5 * (x.log1p() - (-x).log1p())

            def __eq__(self, other):
                return isinstance(other, TanhTransform)

            def _call(self, x):
                return x.tanh()

            def _inverse(self, y):
                return self.atanh(y)

            def log_abs_det_jacobian(self, x, y):
                return 2. * (math.log(2.) - x - F_.softplus(-2. * x))

        class SquashedNormal(pyd.transformed_distribution.TransformedDistribution):
            def __init__(self, loc, scale):
                self.loc = loc
                self.scale = scale
                self.base_dist = pyd.Normal(loc, scale)
                transforms = [TanhTransform()]
                super().__init__(self.base_dist, transforms)

            @property
            def mean(self):
                mu = self.loc
                for tr in self.transforms:
                    mu = tr(mu)
                return mu
        return SquashedNormal

    loc = tnet.tensor([[0.2, 20.0]], requires_grad=True)  # tanh(20) rounds to 1: only the cache keeps it finite
    dist = squashed_normal(tnet)(loc, tnet.tensor([[0.5, 0.5]]))
    action = dist.rsample()
    log_prob = dist.log_prob(action).sum(-1, keepdim=True)
    assert np.isfinite(log_prob.numpy()).all() and action.requires_grad
    log_prob.backward()
    assert np.isfinite(loc.grad.numpy()).all()
    ref = squashed_normal(torch)(torch.tensor([[0.2, -0.3]]), torch.tensor([[0.5, 0.5]]))
    mine = squashed_normal(tnet)(tnet.tensor([[0.2, -0.3]]), tnet.tensor([[0.5, 0.5]]))
    assert_close(mine.mean, ref.mean, 1e-6, "SquashedNormal.mean")
    assert_close(mine.log_prob(tnet.tensor([[0.1, 0.7]])), ref.log_prob(torch.tensor([[0.1, 0.7]])), 1e-5, "log_prob")
    tanh = D.transforms.TanhTransform()
    assert_close(tanh.inv(tnet.tensor([0.5])), torch.atanh(torch.tensor([0.5])), 1e-6, "inv")
    assert D.constraints.interval(0.0, 1.0).check(tnet.tensor([0.5, 2.0])).tolist() == [True, False]

def test_new_distributions_samples():
    """Samples of the new distributions: torch's shapes, rsample's gradient where torch has one,
    and moments near the laws' (Gamma and Dirichlet drawn on the host)."""
    D = tnet.distributions
    tnet.manual_seed(3)
    loc = tnet.tensor([1.0, -2.0], requires_grad=True)
    cov = tnet.tensor([[2.0, 0.6], [0.6, 0.5]])
    cases = [(D.Laplace(loc, 0.5), [1.0, -2.0], [0.5, 0.5]), (D.Exponential(tnet.tensor([0.5, 4.0])), [2.0, 0.25], [4.0, 1 / 16]),
             (D.Gamma(tnet.tensor([2.0, 0.5]), tnet.tensor([1.0, 2.0])), [2.0, 0.25], [2.0, 0.125]),
             (D.Dirichlet(tnet.tensor([1.0, 2.0, 5.0])), [0.125, 0.25, 0.625], None),
             (D.MultivariateNormal(loc, cov), [1.0, -2.0], [2.0, 0.5])]
    for d, mean, var in cases:
        draws = d.sample((6000,))
        assert tuple(draws.shape) == (6000, *d.batch_shape, *d.event_shape) and not draws.requires_grad
        assert np.allclose(draws.numpy().mean(0), mean, atol=0.1, rtol=0.05), type(d).__name__
        if var is not None:
            assert np.allclose(draws.numpy().var(0), var, rtol=0.12, atol=0.01), type(d).__name__
    z = D.MultivariateNormal(loc, cov).rsample((3, 4))
    assert z.shape == (3, 4, 2) and z.requires_grad
    draws = D.MultivariateNormal(loc, cov).sample((6000,)).numpy()
    assert abs(np.cov(draws.T)[0, 1] - 0.6) < 0.08
    r = D.RelaxedOneHotCategorical(0.5, logits=tnet.tensor([[0.0, 1.0, -1.0]] * 2)).rsample((5,))
    assert r.shape == (5, 2, 3) and np.allclose(r.numpy().sum(-1), 1, atol=1e-5) and (r.numpy() > 0).all()
    rb = D.RelaxedBernoulli(tnet.tensor(0.1), probs=tnet.tensor([0.2, 0.9])).sample((4000,)).numpy()
    assert rb.shape == (4000, 2) and np.allclose((rb > 0.5).mean(0), [0.2, 0.9], atol=0.04)
    assert D.Laplace(loc, 1.0).rsample().requires_grad and D.Gamma(2.0, 1.0).has_rsample


def test_eye_linspace_randint_isnan_isinf_as_torch():
    assert tnet.eye(3, 2).tolist() == torch.eye(3, 2).tolist() and tnet.eye(2).dtype == torch.float32
    assert_close(tnet.linspace(-1, 2, 7), torch.linspace(-1, 2, 7), TOL["ieee"], "linspace")
    tnet.manual_seed(5)
    a = tnet.randint(3, 9, (200,))
    tnet.manual_seed(5)
    assert a.tolist() == tnet.randint(3, 9, (200,)).tolist() and a.dtype == torch.int64
    assert set(a.tolist()) == set(range(3, 9)) and set(tnet.randint(2, (50,)).tolist()) <= {0, 1}
    # torch's randint(high, size=...) and randint(high=, size=) (the Datasets tutorial's sample index); no size, or
    # no high, is a TypeError
    assert tnet.randint(4, size=(30,)).shape == (30,) and set(tnet.randint(high=3, size=(30,)).tolist()) <= {0, 1, 2}
    for args, kwargs in (((10,), {}), ((), {"size": (2,)})):
        with pytest.raises(TypeError):
            tnet.randint(*args, **kwargs)
    x = [1.0, float("nan"), float("inf"), -float("inf"), 0.0]
    assert tnet.isnan(tnet.tensor(x)).tolist() == torch.isnan(torch.tensor(x)).tolist()
    assert tnet.isinf(tnet.tensor(x)).tolist() == torch.isinf(torch.tensor(x)).tolist()
    assert tnet.isinf(tnet.tensor([3, 4])).tolist() == [False, False] and tnet.isnan(tnet.tensor(x)).dtype == torch.bool


def test_factories_write_into_out_as_torch():
    """`torch.eye(n, out=grad.new(n, n))` (pytorch-optimizer's Shampoo) and the other factories' out=: out's dtype,
    resized to the values' shape, the same object returned; a dtype= other than out's, or an out that requires
    grad, raises."""
    for lib in (tnet, torch):
        out = lib.zeros(2, 2)
        assert lib.eye(3, out=out) is out and out.tolist() == torch.eye(3).tolist()
        assert lib.arange(4, out=lib.zeros(4)).tolist() == [0.0, 1.0, 2.0, 3.0]
        ints = lib.ones(2, 3, out=lib.zeros(6, dtype=lib.int64))
        assert ints.dtype == torch.int64 and ints.tolist() == [[1] * 3] * 2
        assert lib.full((2,), 7, out=lib.zeros(1)).tolist() == [7.0, 7.0]
        assert lib.linspace(0, 1, 3, out=lib.zeros(3)).tolist() == [0.0, 0.5, 1.0]
        with pytest.raises(RuntimeError, match="does not match dtype of out"):
            lib.eye(2, out=lib.zeros(2, 2), dtype=lib.int64)
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            lib.zeros(2, out=lib.zeros(2, requires_grad=True))


def test_beta_distribution():
    """tnet.distributions.Beta for mixup: shapes as torch's, values in [0, 1] with the right mean,
    repeated by manual_seed."""
    for lib in (tnet, torch):
        d = lib.distributions.beta.Beta(lib.tensor([0.4, 2.0]), lib.tensor([0.4, 6.0]))
        assert d.sample().shape == (2,) and d.sample((3,)).shape == (3, 2)
        assert lib.distributions.Beta(1., 1.).sample().shape == ()
        np.testing.assert_allclose(d.mean.numpy(), [0.5, 0.25], rtol=1e-6)
    tnet.manual_seed(3)
    draws = tnet.distributions.Beta(2.0, 6.0).sample((4000,)).numpy()
    tnet.manual_seed(3)
    assert np.array_equal(draws, tnet.distributions.Beta(2.0, 6.0).sample((4000,)).numpy())
    assert draws.min() >= 0 and draws.max() <= 1 and abs(draws.mean() - 0.25) < 0.01
    with pytest.raises(ValueError):
        tnet.distributions.Beta(0.0, 1.0)


# ---- the tensor surface of the eighth session (ops3): more in-place draws -----------------------

def test_cauchy_geometric_and_log_normal_draws():
    tnet.manual_seed(5)
    x = tnet.zeros(20000)
    assert x.cauchy_(1.0, 2.0) is x
    q = np.quantile(x.numpy(), [0.25, 0.5, 0.75])  # median 1, quartiles at median -+ sigma
    assert np.allclose(q, [-1.0, 1.0, 3.0], atol=0.15), q
    g = tnet.zeros(20000, dtype=tnet.int64).geometric_(0.25)
    values = g.numpy()
    assert g.dtype == torch.int64 and values.min() >= 1 and abs(values.mean() - 4.0) < 0.15  # mean 1 / p
    assert abs((values == 1).mean() - 0.25) < 0.02
    h = tnet.zeros(5000, dtype=tnet.float16).geometric_(0.5)
    assert h.dtype == torch.float16 and h.numpy().min() >= 1
    z = tnet.zeros(20000).log_normal_(0.5, 0.25)
    logs = np.log(z.numpy())
    assert abs(logs.mean() - 0.5) < 0.01 and abs(logs.std() - 0.25) < 0.01
    a, b = tnet.zeros(8).cauchy_(), tnet.zeros(8).cauchy_()
    assert a.tolist() != b.tolist()  # fresh numbers each draw
    for draw, args in ((tnet.zeros(3).cauchy_, (0.0, 0.0)), (tnet.zeros(3).geometric_, (1.0,)),
                       (tnet.zeros(3).log_normal_, (1.0, -1.0)), (tnet.zeros(3, dtype=tnet.int64).cauchy_, ())):
        with pytest.raises(RuntimeError):
            draw(*args)
    leaf = tnet.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        leaf.log_normal_()
    y = leaf * 2
    y.cauchy_()
    y.sum().backward()
    assert leaf.grad.tolist() == [0.0] * 3  # overwritten: no gradient, as torch's


def test_binomial_multinomial_geometric_half_normal_chi2_lowrank_as_torch(rng, ieee):
    """Binomial, Multinomial, Geometric, HalfNormal, Chi2 and LowRankMultivariateNormal against
    torch.distributions in float64: log_prob, entropy, cdf/icdf, mean, mode, variance, their registered
    kl_divergence pairs (and the new Uniform, Beta and OneHotCategorical ones), with the parameters'
    gradients through them."""
    (a, ra), (b, rb), (w, rw) = pair(rng, 2, 3), pair(rng, 2, 3), pair(rng, 2, 3, 2)
    counts = rng.integers(0, 6, (4, 2, 3)).astype(np.float64)
    onehot_counts = rng.multinomial(7, [0.2, 0.5, 0.3], (4, 2)).astype(np.float64)
    pos, u = rng.gamma(2.0, size=(4, 2, 3)) + 0.05, rng.uniform(0.05, 0.95, (4, 2, 3))
    x = rng.standard_normal((4, 2, 3))

    def laws(d, lib, a, b, w):
        t = lib.tensor
        bi, bi2 = d.Binomial(6, logits=a), d.Binomial(t([[6.0] * 3] * 2), probs=b.sigmoid())
        mu, ge, ge2 = d.Multinomial(7, logits=a), d.Geometric(a.sigmoid()), d.Geometric(logits=b)
        hn, hn2, chi = d.HalfNormal(a.exp()), d.HalfNormal(b.exp()), d.Chi2(b.exp() + 1)
        lr = d.LowRankMultivariateNormal(a, w, b.exp())
        beta, beta2 = d.Beta(a.exp(), b.exp()), d.Beta(b.exp(), a.exp() + 1)
        un, un2 = d.Uniform(a, a + b.exp()), d.Uniform(a - 1, a + b.exp() + 1)
        oh, oh2 = d.OneHotCategorical(logits=a), d.OneHotCategorical(logits=b)
        return [bi.log_prob(t(counts)), bi.mean, bi.mode, bi.variance, bi.entropy(), d.kl_divergence(bi, bi2),
                mu.log_prob(t(onehot_counts)), mu.mean, mu.variance, ge.log_prob(t(counts)), ge.mean,
                ge.variance, ge.entropy(), d.kl_divergence(ge, ge2), hn.log_prob(t(pos)), hn.cdf(t(pos)),
                hn.icdf(t(u)), hn.entropy(), hn.mean, hn.variance, d.kl_divergence(hn, hn2),
                chi.log_prob(t(pos)), chi.mean, d.kl_divergence(chi, d.Chi2(a.exp() + 1)),
                lr.log_prob(t(x)), lr.entropy(), lr.variance, lr.covariance_matrix,
                d.kl_divergence(beta, beta2), d.kl_divergence(un, un2), d.kl_divergence(oh, oh2)]

    _laws_as_torch(laws, (a, b, w), (ra, rb, rw), rng)
    D = tnet.distributions
    out = D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(tnet.tensor([0.5, -1.0]), 3.0)).numpy()
    assert np.isinf(out[0]) and np.isclose(out[1], np.log(2.0))
    assert np.isneginf(D.HalfNormal(1.0, validate_args=False).log_prob(tnet.tensor(-0.5)).numpy())


def test_new_discrete_distributions_samples_and_register_kl():
    D = tnet.distributions
    tnet.manual_seed(4)
    cases = [(D.Binomial(10, tnet.tensor([0.2, 0.7])), [2.0, 7.0], [1.6, 2.1]),
             (D.Geometric(tnet.tensor([0.25, 0.8])), [3.0, 0.25], [12.0, 0.3125]),
             (D.HalfNormal(tnet.tensor([1.0, 2.0])), [0.798, 1.596], [0.363, 1.453]),
             (D.Chi2(tnet.tensor([3.0, 6.0])), [3.0, 6.0], [6.0, 12.0])]
    for d, mean, var in cases:
        draws = d.sample((6000,))
        assert tuple(draws.shape) == (6000, 2) and not draws.requires_grad, type(d).__name__
        assert np.allclose(draws.numpy().mean(0), mean, atol=0.1, rtol=0.05), type(d).__name__
        assert np.allclose(draws.numpy().var(0), var, rtol=0.15, atol=0.02), type(d).__name__
    m = D.Multinomial(9, probs=tnet.tensor([[0.2, 0.3, 0.5]] * 2)).sample((3000,)).numpy()
    assert m.shape == (3000, 2, 3) and (m.sum(-1) == 9).all() and np.allclose(m.mean(0), [1.8, 2.7, 4.5], atol=0.1)
    logits = tnet.tensor([[0.0, 1.0, -1.0]], requires_grad=True)
    st = D.OneHotCategoricalStraightThrough(logits=logits).rsample((5,))
    assert st.shape == (5, 1, 3) and set(np.unique(st.numpy())) <= {0.0, 1.0}
    (st * tnet.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0
    loc = tnet.tensor([1.0, -2.0, 0.5], requires_grad=True)
    lr = D.LowRankMultivariateNormal(loc, tnet.tensor([[1.0], [0.5], [-1.0]]), tnet.tensor([0.5, 0.2, 1.0]))
    z = lr.rsample((6000,))
    assert z.shape == (6000, 3) and z.requires_grad
    assert np.allclose(np.cov(z.detach().numpy().T), lr.covariance_matrix.numpy(), atol=0.1)

    class Shifted(D.Normal):
        pass

    @D.register_kl(Shifted, D.Normal)
    def _kl_shifted(p, q):
        return tnet.tensor(42.0)
    try:
        assert D.kl_divergence(Shifted(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
        assert np.isclose(D.kl_divergence(D.Normal(0.0, 1.0), Shifted(1.0, 1.0)).item(), 0.5)  # the Normal pair
    finally:
        del tnet.distributions._KL[Shifted, D.Normal]
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)
    with pytest.raises(NotImplementedError):  # a pair torch does not register either
        D.kl_divergence(D.Normal(0.0, 1.0), D.StudentT(3.0))
    with pytest.raises(ValueError):
        D.Binomial(5)
    from tnet.distributions.binomial import Binomial
    from tnet.distributions.kl import register_kl
    assert Binomial is D.Binomial and register_kl is D.register_kl


def test_compose_softplus_power_abs_softmax_independent_transforms_as_torch(rng, ieee):
    """The new transforms against torch.distributions.transforms in float64: forward, inverse, log|det J|
    (summed over an IndependentTransform's and a ComposeTransform's event dims) and a TransformedDistribution
    through a composition, with the parameters' gradients."""
    (a, ra), (b, rb) = pair(rng, 2, 3), pair(rng, 2, 3)
    pos = rng.gamma(2.0, size=(2, 3)) + 0.1

    def laws(d, lib, a, b):
        t, T = lib.tensor, d.transforms
        soft, power = T.SoftplusTransform(), T.PowerTransform(b.exp())
        compose = T.ComposeTransform([soft, T.AffineTransform(a, 2.0), T.ExpTransform()])
        ind = T.IndependentTransform(T.ExpTransform(), 1)
        x = a * 1.5
        flow = d.TransformedDistribution(d.Normal(a, b.exp()), [T.ComposeTransform([T.SoftplusTransform(),
                                                                                     T.PowerTransform(2.0)])])
        return [soft(x), soft.inv(t(pos)), soft.log_abs_det_jacobian(x, soft(x)), power(t(pos)),
                power.inv(t(pos)), power.log_abs_det_jacobian(t(pos), power(t(pos))), compose(x),
                compose.inv(compose(x)), compose.log_abs_det_jacobian(x, compose(x)), T.AbsTransform()(x),
                T.SoftmaxTransform()(x), T.SoftmaxTransform().inv(T.SoftmaxTransform()(x)),
                ind.log_abs_det_jacobian(x, ind(x)), T.identity_transform(x), flow.log_prob(t(pos))]

    _laws_as_torch(laws, (a, b), (ra, rb), rng)
    T = tnet.distributions.transforms
    assert T.ComposeTransform([T.ExpTransform(), T.PowerTransform(-1.0)]).sign == -1
    assert T.ComposeTransform([T.SoftmaxTransform(), T.ExpTransform()]).event_dim == 1
    assert not T.AbsTransform().bijective and T.SoftplusTransform().bijective


def test_more_constraints_as_torch():
    """constraints' sets against torch's: check() on members and non-members, is_discrete, event_dim, repr;
    dependent and dependent_property."""
    spd = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.0], [0.3, 1.0]]])
    chol = np.array([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.1], [0.5, 2.0]], [[-1.0, 0.0], [0.5, 2.0]]])
    counts = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0], [2.0, 1.0, 0.0]])
    ints = np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 4.0])

    def run(lib):
        c, t = lib.distributions.constraints, lib.tensor
        cases = [(c.positive_integer, ints), (c.integer_interval(0, 3), ints), (c.lower_triangular, chol),
                 (c.lower_cholesky, chol), (c.square, spd), (c.symmetric, spd), (c.positive_definite, spd),
                 (c.positive_semidefinite, spd), (c.one_hot, counts), (c.multinomial(2), counts),
                 (c.independent(c.positive, 1), counts), (c.real_vector, counts), (c.boolean, ints),
                 (c.nonnegative_integer, ints), (c.simplex, counts / 2)]
        out = [(repr(k), k.is_discrete, k.event_dim, k.check(t(v)).tolist()) for k, v in cases]
        with pytest.raises(ValueError):
            c.dependent.check(t(ints))

        class Box(lib.distributions.Distribution):
            @c.dependent_property(is_discrete=False, event_dim=0)
            def support(self):
                return c.interval(0.0, 1.0)
        prop = vars(Box)["support"]
        return out, c.is_dependent(c.dependent), c.is_dependent(prop), repr(Box.__new__(Box).support), \
            c.dependent(is_discrete=True, event_dim=1).event_dim
    assert run(tnet) == run(torch)


def test_half_cauchy_negative_binomial_weibull_pareto_kumaraswamy_inverse_gamma_as_torch(rng, ieee):
    """The new laws against torch.distributions in float64 (log_prob, cdf/icdf, mean, mode, variance, entropy)
    with the parameters' gradients, then samples' shapes and moments."""
    (a, ra), (b, rb) = pair(rng, 2, 3), pair(rng, 2, 3)
    counts = rng.integers(0, 6, (4, 2, 3)).astype(np.float64)
    pos = rng.gamma(2.0, size=(4, 2, 3)) + 0.05
    unit = rng.uniform(0.05, 0.95, (4, 2, 3))

    def laws(d, lib, a, b):
        t = lib.tensor
        hc, nb = d.HalfCauchy(b.exp()), d.NegativeBinomial(a.exp() + 0.5, logits=b)
        nb2 = d.NegativeBinomial(3.0, b.sigmoid())
        we, pa = d.Weibull(a.exp(), b.exp() + 1), d.Pareto(a.exp() * 0.01, b.exp() + 2.5)
        ku, ig = d.Kumaraswamy(2 * a.sigmoid() + 1, 2 * b.sigmoid() + 1), d.InverseGamma(a.exp() + 2.5, b.exp())
        return [hc.log_prob(t(pos)), hc.cdf(t(pos)), hc.icdf(t(unit)), hc.entropy(), nb.log_prob(t(counts)), nb.mean,
                nb.mode, nb.variance, nb2.log_prob(t(counts)), we.log_prob(t(pos)), we.mean, we.mode, we.variance,
                we.entropy(), pa.log_prob(t(pos) + 0.1), pa.mean, pa.variance, pa.entropy(), ku.log_prob(t(unit)),
                ku.mean, ku.variance, ku.entropy(), ig.log_prob(t(pos)), ig.mean, ig.mode, ig.variance,
                ig.entropy()]

    _laws_as_torch(laws, (a, b), (ra, rb), rng)
    D = tnet.distributions
    tnet.manual_seed(6)
    cases = [(D.NegativeBinomial(tnet.tensor([3.0, 5.0]), tnet.tensor([0.4, 0.7])), [2.0, 11.667], [3.333, 38.89]),
             (D.Weibull(tnet.tensor([1.0, 2.0]), tnet.tensor([2.0, 5.0])), [0.8862, 1.8363], [0.2146, 0.1758]),
             (D.Pareto(1.0, tnet.tensor([4.0, 6.0])), [1.3333, 1.2], [0.2222, 0.06]),
             (D.Kumaraswamy(tnet.tensor([2.0, 5.0]), tnet.tensor([3.0, 1.0])), [0.4571, 0.8333], [0.0394, 0.0198]),
             (D.InverseGamma(tnet.tensor([4.0, 6.0]), 2.0), [0.6667, 0.4], [0.2222, 0.04])]
    for d, mean, var in cases:
        draws = d.sample((6000,))
        assert tuple(draws.shape) == (6000, 2) and not draws.requires_grad, type(d).__name__
        assert np.allclose(draws.numpy().mean(0), mean, atol=0.05, rtol=0.05), type(d).__name__
        assert np.allclose(draws.numpy().var(0), var, rtol=0.2, atol=0.01), type(d).__name__
    assert D.Weibull(1.0, tnet.tensor(2.0, requires_grad=True)).rsample((3,)).requires_grad
    assert D.HalfCauchy(1.0).sample((5,)).numpy().min() >= 0 and np.isinf(D.HalfCauchy(1.0).mean.numpy())


def test_von_mises_stick_breaking_and_exponential_family_as_torch(rng, ieee):
    """VonMises' log_prob and circular variance, FisherSnedecor's log_prob and moments, StickBreakingTransform's forward, inverse and log|det J|, and a
    user's ExponentialFamily subclass's entropy (the Bregman form through autograd.grad) against torch in
    float64 with the parameters' gradients; VonMises' samples."""
    (a, ra), (b, rb) = pair(rng, 2, 3), pair(rng, 2, 3)
    angles = rng.uniform(-3.0, 3.0, (4, 2, 3))

    def laws(d, lib, a, b):
        vm = d.VonMises(a, b.exp())
        sb = d.transforms.StickBreakingTransform()
        y = sb(a)

        class Expo(d.ExponentialFamily):  # Exponential(rate) written as an exponential family
            def __init__(self, rate):
                self.rate = rate
                super().__init__(rate.shape)
            _natural_params = property(lambda self: (-self.rate,))
            _mean_carrier_measure = 0

            def _log_normalizer(self, x):
                return -(-x).log()
        fs = d.FisherSnedecor(a.exp() + 2.5, b.exp() + 4.5)
        return [vm.log_prob(lib.tensor(angles)), vm.variance, vm.mean, y, sb.inv(y), sb.log_abs_det_jacobian(a, y),
                Expo(b.exp()).entropy(), fs.log_prob(lib.tensor(np.abs(angles) + 0.1)), fs.mean, fs.mode, fs.variance]

    _laws_as_torch(laws, (a, b), (ra, rb), rng)
    D = tnet.distributions
    tnet.manual_seed(2)
    draws = D.VonMises(tnet.tensor([0.5, 3.0]), tnet.tensor([4.0, 2.0])).sample((6000,)).numpy()
    assert draws.shape == (6000, 2) and (draws >= -np.pi).all() and (draws < np.pi).all()
    assert np.allclose(np.angle(np.exp(1j * draws).mean(0)), [0.5, 3.0], atol=0.05)
    f = D.FisherSnedecor(tnet.tensor([4.0, 10.0]), tnet.tensor([12.0, 20.0])).sample((6000,)).numpy()
    assert f.shape == (6000, 2) and np.allclose(f.mean(0), [1.2, 1.1111], rtol=0.05)
    from tnet.distributions.exp_family import ExponentialFamily
    from tnet.distributions.von_mises import VonMises
    assert (ExponentialFamily, VonMises) == (D.ExponentialFamily, D.VonMises)


def test_logistic_normal_and_shape_changing_transformed_distributions_as_torch(rng, ieee):
    """LogisticNormal (a topic model's prior and posterior) and TransformedDistribution over StickBreakingTransform,
    which changes the event's size: batch and event shapes (the base's last batch dim taken as the event dim, a
    scalar law expanded to one dim), log_prob, the KL of two LogisticNormals, against torch in float64 with the
    parameters' gradients; rsample's shape on the simplex, expand, and torch's ValueError for a base too small."""
    (a, ra), (b, rb) = pair(rng, 2, 3), pair(rng, 2, 3)
    y = rng.dirichlet(np.ones(4), size=(5, 2))

    def laws(d, lib, a, b):
        p, q = d.LogisticNormal(a, b.exp()), d.LogisticNormal(b, a.exp())
        composed = d.TransformedDistribution(d.Normal(a, b.exp()), [d.AffineTransform(0.5, 2.0),
                                                                    d.StickBreakingTransform()])
        scalar = d.LogisticNormal(a[0, 0], b[0, 0].exp())
        return [p.log_prob(lib.tensor(y)), d.kl_divergence(p, q), composed.log_prob(lib.tensor(y)),
                scalar.log_prob(lib.tensor(y[0, 0, :2] / y[0, 0, :2].sum()))]

    _laws_as_torch(laws, (a, b), (ra, rb), rng)
    D = tnet.distributions
    p = D.LogisticNormal(a.detach(), b.detach().exp())
    assert (tuple(p.batch_shape), tuple(p.event_shape)) == ((2,), (4,))
    assert (tuple(p.base_dist.batch_shape), tuple(p.base_dist.event_shape)) == ((2,), (3,))
    assert tuple(D.LogisticNormal(0.0, 1.0).event_shape) == (2,) and tuple(p.loc.shape) == (2, 3)
    draws = p.rsample((6,)).numpy()
    assert draws.shape == (6, 2, 4) and np.allclose(draws.sum(-1), 1, atol=1e-6) and (draws > 0).all()
    assert tuple(p.expand((3, 2)).log_prob(tnet.tensor(y[:3])).shape) == (3, 2)
    assert repr(p.support) == "Simplex()" and D.logistic_normal.LogisticNormal is D.LogisticNormal
    with pytest.raises(ValueError, match="base_distribution needs to have shape with size at least 1"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [D.StickBreakingTransform()])


def _expo_family(d):
    class Expo(d.ExponentialFamily):  # Exponential(rate) written as an exponential family
        arg_constraints = {}

        def __init__(self, rate):
            self.rate = rate
            super().__init__(rate.shape, validate_args=False)
        _natural_params = property(lambda self: (-self.rate,))

        def _log_normalizer(self, n):
            return -(-n).log()
    return Expo


_EXPO_FAMILY = {d: _expo_family(d) for d in (tnet.distributions, torch.distributions)}


def _kl_law(d, lib, name, x, y, w, m, as_q):
    """A law named in torch's KL registry from leaves x, y [2, 3], w [2, 3, 2], m [3, 3]; as_q: q's
    parameters, where the pairs need p's support within q's (a Uniform p inside [0.2, 0.95], a Uniform q over
    [-1.5, 1.5] and wider, a Pareto q's scale below 0.2). ContinuousBernoulli's probs stay below 0.35, where
    fp32 keeps its mean's and variance's gradients (their two terms cancel near 1/2, in torch's fp32 too)."""
    pos, pos2 = x.exp(), y.exp()
    tril = m.tril(-1) + (m.diagonal().exp() + 0.5).diag_embed()
    laws = {"Bernoulli": lambda: d.Bernoulli(x.sigmoid()), "Beta": lambda: d.Beta(pos, pos2 + 0.5),
            "Binomial": lambda: d.Binomial(5, x.sigmoid()), "Categorical": lambda: d.Categorical(logits=x),
            "Cauchy": lambda: d.Cauchy(x, pos2), "ContinuousBernoulli": lambda: d.ContinuousBernoulli(x.sigmoid() * 0.3 + 0.05),
            "Dirichlet": lambda: d.Dirichlet(pos), "Exponential": lambda: d.Exponential(pos),
            "ExponentialFamily": lambda: _EXPO_FAMILY[d](pos), "Gamma": lambda: d.Gamma(pos + 0.5, pos2),
            "Geometric": lambda: d.Geometric(x.sigmoid()), "Gumbel": lambda: d.Gumbel(x, pos2 + 0.5),
            "HalfNormal": lambda: d.HalfNormal(pos), "Independent": lambda: d.Independent(d.Normal(x, pos2), 1),
            "Laplace": lambda: d.Laplace(x, pos2), "LowRankMultivariateNormal":
                lambda: d.LowRankMultivariateNormal(x, w, pos2),
            "MultivariateNormal": lambda: d.MultivariateNormal(x, scale_tril=tril), "Normal": lambda: d.Normal(x, pos2),
            "OneHotCategorical": lambda: d.OneHotCategorical(logits=x),
            "Pareto": lambda: d.Pareto(x.sigmoid() * 0.2, pos2 + 2.5) if as_q else d.Pareto(pos, pos2 + 2.5),
            "Poisson": lambda: d.Poisson(pos),
            "TransformedDistribution": lambda: d.TransformedDistribution(
                d.Normal(x, pos2), [d.transforms.ExpTransform(), d.transforms.AffineTransform(0.5, 2.0)]),
            "Uniform": lambda: (d.Uniform(x.sigmoid() - 1.5, pos2 + 1.5) if as_q else
                                d.Uniform(x.sigmoid() * 0.5 + 0.2, x.sigmoid() * 0.5 + 0.25 + y.sigmoid() * 0.2))}
    return laws[name]()


def _assert_close_with_infs(out, ref, tol, what):
    out, ref = out.numpy().astype(np.float64), ref.detach().numpy()
    assert out.shape == ref.shape and (np.isinf(out) == np.isinf(ref)).all(), f"{what}: {out} vs {ref}"
    assert_close(out[np.isfinite(ref)], ref[np.isfinite(ref)], tol, what)


@pytest.mark.parametrize("pq", sorted(f"{p.__name__}-{q.__name__}" for p, q in torch.distributions.kl._KL_REGISTRY))
def test_kl_divergence_every_pair_of_torchs_registry(pq, rng, ieee):
    """Every pair torch registers: tnet's kl_divergence against torch's in float64 (inf where torch's is),
    and the gradient of a random weighting of its finite values to p's and q's parameters (none for the pairs
    that are inf everywhere, none to p's through the ExponentialFamily fallback, as torch's)."""
    P, Q = pq.split("-")
    leaves = [pair(rng, 2, 3), pair(rng, 2, 3), pair(rng, 2, 3, 2), pair(rng, 3, 3)]
    leaves_q = [pair(rng, 2, 3), pair(rng, 2, 3), pair(rng, 2, 3, 2), pair(rng, 3, 3)]
    out, ref = ((d.kl_divergence(_kl_law(d, lib, P, *[v[k] for v in leaves], False),
                                 _kl_law(d, lib, Q, *[v[k] for v in leaves_q], True)))
                for k, (d, lib) in enumerate([(tnet.distributions, tnet), (torch.distributions, torch)]))
    _assert_close_with_infs(out, ref, TOL["ieee"] * 20, pq)
    if not ref.requires_grad:
        return
    seed = np.where(np.isfinite(ref.detach().numpy()), rng.standard_normal(tuple(ref.shape)), 0.0)
    (out * tnet.tensor(seed)).sum().backward()
    (ref * torch.tensor(seed)).sum().backward()
    for k, ((t, r), name) in enumerate(zip(leaves + leaves_q, ["a", "b", "w", "m"] * 2)):
        if r.grad is None:
            assert t.grad is None or not t.grad.numpy().any(), f"{pq}: gradient of {name}"
        else:
            assert_close(t.grad, r.grad, TOL["ieee"] * 20, f"{pq}: gradient of {name} ({'pq'[k // 4]})")


def test_exponential_families_bregman_forms_as_torch(rng, ieee):
    """Normal, Bernoulli, Beta, Exponential, Gamma, Poisson and Dirichlet are ExponentialFamily laws, as torch's:
    their natural parameters and log normalizers give the Bregman KL of the registry's fallback (torch's, called
    on the pair directly) and, where torch's give a mean carrier measure, the Bregman entropy as torch's, the
    KL's gradient reaching q's parameters."""
    (a, ra), (b, rb) = pair(rng, 2, 3), pair(rng, 2, 3)

    def laws(d, lib, a, b):
        kl = tnet.distributions._KL[D.ExponentialFamily, D.ExponentialFamily] if lib is tnet else \
            torch.distributions.kl._kl_expfamily_expfamily
        out = []
        for make in (lambda x: d.Normal(x, x.exp()), lambda x: d.Bernoulli(x.sigmoid()),
                     lambda x: d.Beta(x.exp(), x.exp() + 1), lambda x: d.Exponential(x.exp()),
                     lambda x: d.Gamma(x.exp() + 0.5, x.exp()), lambda x: d.Poisson(x.exp()),
                     lambda x: d.Dirichlet(x.exp())):
            p, q = make(a), make(b)
            assert isinstance(p, d.ExponentialFamily)
            out.append(kl(p, q))
            if not isinstance(p, (d.Beta, d.Poisson, d.Dirichlet)):  # these three have no carrier measure in torch
                out += [d.ExponentialFamily.entropy(p), p.entropy()]
        return out

    D = tnet.distributions
    _laws_as_torch(laws, (a, b), (ra, rb), rng)


def test_kl_divergence_infs_and_refusals_as_torch():
    """The pairs that are inf where p's support leaves q's (Pareto's alpha at or below 1 or 2, a Uniform
    beyond q's support, a Bernoulli's or Categorical's outcome of probability 0 under q) and those that raise
    as torch's: TransformedDistributions by unequal transforms,
    exponential families of two kinds, low-rank normals of two event shapes."""
    def cases(d, lib):
        t = lib.tensor
        par = d.Pareto(t([1.0, 2.0, 1.0]), t([0.5, 1.5, 3.0]))
        uni = d.Uniform(t([-0.5, 0.1, 0.5]), t([0.5, 0.9, 2.0]))
        return [d.kl_divergence(par, d.Exponential(t([1.0, 2.0, 0.5]))), d.kl_divergence(par, d.Gamma(2.0, 3.0)),
                d.kl_divergence(par, d.Normal(0.5, 2.0)), d.kl_divergence(par, d.Pareto(t([0.5, 3.0, 1.0]), 2.0)),
                d.kl_divergence(uni, d.Beta(2.0, 3.0)), d.kl_divergence(uni, d.Exponential(2.0)),
                d.kl_divergence(uni, d.Gamma(2.0, 1.0)), d.kl_divergence(uni, d.Pareto(0.2, 2.0)),
                d.kl_divergence(uni, d.ContinuousBernoulli(0.3)),
                d.kl_divergence(d.Beta(2.0, 3.0), d.Uniform(t([-0.5, 0.0, 0.1]), t([1.5, 1.0, 1.0]))),
                d.kl_divergence(d.ContinuousBernoulli(0.3), d.Uniform(t([-0.5, 0.0, -0.1]), t([1.5, 1.0, 1.0]))),
                d.kl_divergence(d.HalfCauchy(t([1.0, 2.0])), d.HalfCauchy(t([3.0, 0.5]))),
                d.kl_divergence(d.Bernoulli(t([0.0, 0.0, 1.0, 0.3, 1.0, 0.5])),  # probabilities 0 and 1
                                d.Bernoulli(t([0.0, 0.5, 1.0, 0.0, 0.0, 1.0]))),
                d.kl_divergence(d.Categorical(t([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]])),
                                d.Categorical(t([[0.5, 0.5], [1.0, 0.0], [1.0, 0.0]])))]

    for k, (out, ref) in enumerate(zip(cases(tnet.distributions, tnet), cases(torch.distributions, torch))):
        _assert_close_with_infs(out, ref.double(), TOL["ieee"] * 20, f"case {k}")
    for d, lib in [(tnet.distributions, tnet), (torch.distributions, torch)]:
        with pytest.raises(NotImplementedError):
            d.kl_divergence(d.Weibull(1.0, 2.0), d.Weibull(1.0, 3.0))
        with pytest.raises(NotImplementedError):
            d.kl_divergence(d.HalfNormal(1.0), d.HalfCauchy(1.0))
        with pytest.raises(NotImplementedError):
            d.kl_divergence(d.Gumbel(0.0, 1.0), d.Laplace(0.0, 1.0))
        with pytest.raises(ValueError):
            d.kl_divergence(d.LowRankMultivariateNormal(lib.zeros(2), lib.ones(2, 1), lib.ones(2)),
                            d.MultivariateNormal(lib.zeros(3), lib.eye(3)))
        assert d.kl_divergence(d.Weibull(1.0, 2.0), d.Weibull(1.0, 2.0)).item() == 0.0
        with pytest.raises(NotImplementedError):  # the Bregman fallback needs one family
            d.kl_divergence(d.ContinuousBernoulli(0.3), _kl_law(d, lib, "ExponentialFamily", *[lib.zeros(n)
                                                                 for n in [2, 2, (2, 1), (3, 3)]], False))
    T = tnet.distributions.transforms
    assert T.AffineTransform(0.0, tnet.tensor([1.0, 2.0])) == T.AffineTransform(0.0, tnet.tensor([1.0, 2.0]))
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.PowerTransform(2.0) != T.PowerTransform(3.0) and T.ExpTransform().inv == T.ExpTransform().inv


def test_poisson_and_binomial_draws():
    """torch.poisson and torch.binomial: counts in the input's dtype and shape (binomial's count and
    prob broadcast), with the right means, repeatable under manual_seed or a numpy generator; a
    negative rate raises, as torch's (RuntimeError), and an integer one (torch: NotImplementedError)."""
    tnet.manual_seed(0)
    rates = tnet.tensor(np.array([[0.0, 2.0], [5.0, 30.0]], np.float32)).repeat(500, 1)
    draws = tnet.poisson(rates)
    assert draws.dtype == torch.float32 and draws.shape == rates.shape and not draws.requires_grad
    counts = draws.numpy()
    assert np.array_equal(counts, np.round(counts)) and (counts[0::2, 0] == 0).all()  # rate 0: always 0
    np.testing.assert_allclose(counts.reshape(-1, 2, 2).mean(0), [[0, 2], [5, 30]], rtol=0.1, atol=0.1)
    tnet.manual_seed(0)
    assert np.array_equal(tnet.poisson(rates).numpy(), counts)
    fixed = [tnet.poisson(rates[:4], generator=np.random.default_rng(3)).numpy() for _ in range(2)]
    assert np.array_equal(*fixed)
    trials = tnet.binomial(tnet.full((2000, 2), 10.0), tnet.tensor([0.0, 0.3]))
    assert trials.shape == (2000, 2) and trials.dtype == torch.float32
    assert (trials.numpy()[:, 0] == 0).all() and abs(trials.numpy()[:, 1].mean() - 3.0) < 0.2
    with pytest.raises(RuntimeError, match="non-negative"):
        tnet.poisson(tnet.tensor([-1.0]))
    for lib in (torch, tnet):  # a NaN rate too (numpy's ValueError before)
        with pytest.raises(RuntimeError, match="non-negative"):
            lib.poisson(lib.tensor([1.0, math.nan]))
    with pytest.raises(RuntimeError):
        tnet.poisson(tnet.tensor([1, 2]))


def test_sample_dirichlet_and_standard_gamma_draws():
    """torch._sample_dirichlet (torchvision's RandomMixup weight) and torch._standard_gamma: draws in the input's dtype
    and shape, each Dirichlet row summing to 1, with the right means, repeatable under manual_seed or a numpy
    generator; an integer input raises torch's NotImplementedError."""
    alpha = tnet.tensor(np.array([[0.2, 0.2], [1.0, 3.0]], np.float32)).repeat(1000, 1)
    tnet.manual_seed(0)
    draws = tnet._sample_dirichlet(alpha)
    assert draws.dtype == torch.float32 and draws.shape == alpha.shape and not draws.requires_grad
    d = draws.numpy()
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(d.reshape(-1, 2, 2).mean(0), [[0.5, 0.5], [0.25, 0.75]], atol=0.03)
    tnet.manual_seed(0)
    assert np.array_equal(tnet._sample_dirichlet(alpha).numpy(), d)
    fixed = [tnet._sample_dirichlet(alpha[:4], generator=np.random.default_rng(3)).numpy() for _ in range(2)]
    assert np.array_equal(*fixed)
    gamma = tnet._standard_gamma(tnet.full((4000,), 3.0)).numpy()
    assert abs(gamma.mean() - 3.0) < 0.15 and (gamma > 0).all()
    for f in (tnet._sample_dirichlet, tnet._standard_gamma):
        with pytest.raises(NotImplementedError):
            f(tnet.tensor([1, 2]))


@pytest.mark.parametrize("given", ["probs", "logits"])
def test_continuous_bernoulli_as_torch(given):
    """torch.distributions.ContinuousBernoulli (a VAE's likelihood of pixel intensities): log_prob and its gradient,
    cdf, icdf, mean, variance, entropy and the KL between two, as torch's, on both sides of the Taylor region
    around 1/2 (not on its edges, lims, where torch's own closed forms cancel to noise); rsample's shape and mean."""
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.uniform(0.01, 0.99, 6), [0.4995, 0.5, 0.5005, 0.45, 0.55]]).astype(np.float32)
    param = p if given == "probs" else np.log(p / (1 - p))
    value = rng.uniform(0, 1, p.shape).astype(np.float32)
    out = []
    for lib in (tnet, torch):
        a = lib.tensor(param, requires_grad=True)
        d, q = lib.distributions.ContinuousBernoulli(**{given: a}), lib.distributions.ContinuousBernoulli(
            probs=lib.tensor(p[::-1].copy()))
        log_p = d.log_prob(lib.tensor(value))
        log_p.sum().backward()
        out.append([log_p, a.grad, d.cdf(lib.tensor(value)), d.icdf(lib.tensor(value)), d.mean, d.variance,
                    d.entropy(), lib.distributions.kl_divergence(d, q)])
        assert d.rsample((2,)).shape == (2, len(p)) and d.sample().shape == (len(p),)
    for mine, ref in zip(*out):
        np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    tnet.manual_seed(0)
    draws = tnet.distributions.continuous_bernoulli.ContinuousBernoulli(probs=0.2).sample((4000,)).numpy()
    assert draws.min() >= 0 and draws.max() <= 1
    assert abs(draws.mean() - torch.distributions.ContinuousBernoulli(probs=0.2).mean.item()) < 0.02


def test_default_generator_stands_for_the_global_state():
    """torch.default_generator: one object whose methods are manual_seed's, initial_seed's and the rng
    state's, and which a draw given as generator= takes as it takes none (device draws, host draws, random_split)."""
    from tnet.utils.data import random_split
    g = tnet.default_generator
    assert g.manual_seed(3) is g and g.initial_seed() == tnet.initial_seed() == 3 and g.device == torch.device("cpu")
    first = tnet.rand(3, generator=g).tolist()
    tnet.manual_seed(3)
    assert tnet.rand(3).tolist() == first
    state = g.get_state()
    drawn = tnet.randn(2).tolist()
    assert g.set_state(state) is g and tnet.randn(2).tolist() == drawn
    splits = []
    for generator in (g, None):
        tnet.manual_seed(0)
        splits.append([list(part.indices) for part in random_split(range(10), [5, 5], generator=generator)])
    assert splits[0] == splits[1]
    tnet.manual_seed(1)
    masked = tnet.ones(64).bernoulli_(0.5, generator=g).tolist()
    tnet.manual_seed(1)
    assert tnet.ones(64).bernoulli_(0.5).tolist() == masked


def test_in_place_draws_take_a_generator_as_the_factories_do():
    """x.uniform_(a, b, generator=g), normal_, exponential_, log_normal_, bernoulli_, tnet.bernoulli and tnet.normal
    given a tnet.Generator draw on the host from it, as tnet.rand(generator=) does (a script seeding an init with its own generator): repeatable for a
    seed, the global stream untouched, the bounds and layout kept; a torch.Generator raises TypeError."""
    x = tnet.empty(2, 3, 4, 4).to(memory_format=torch.channels_last)
    draws = []
    for _ in range(2):
        g = tnet.Generator().manual_seed(7)
        tnet.manual_seed(0)
        draws.append([x.uniform_(-0.5, 0.5, generator=g).numpy().copy(), x.normal_(1.0, 2.0, generator=g).numpy().copy(),
                      x.exponential_(generator=g).numpy().copy(), x.log_normal_(generator=g).numpy().copy(),
                      tnet.rand(2).tolist(), x.bernoulli_(0.3, generator=g).numpy().copy(),
                      tnet.bernoulli(tnet.full((64,), 0.5), generator=g).numpy(),
                      tnet.normal(tnet.zeros(8), 2.0, generator=g).numpy()])
    for a, b in zip(*draws):
        np.testing.assert_array_equal(a, b)
    tnet.manual_seed(0)
    assert draws[0][4] == tnet.rand(2).tolist()  # the global stream did not move
    uniform, normal = draws[0][0], draws[0][1]
    assert -0.5 <= uniform.min() and uniform.max() < 0.5 and abs(uniform.mean()) < 0.1 and abs(normal.mean() - 1.0) < 0.5
    assert is_channels_last(x.memory) and (draws[0][2] >= 0).all()
    assert set(np.unique(draws[0][5])) == {0.0, 1.0} and 10 < draws[0][6].sum() < 54
    for call in (lambda g: x.normal_(generator=g), lambda g: x.bernoulli_(generator=g), lambda g: tnet.normal(0.0, 1.0, (2,), generator=g)):
        with pytest.raises(TypeError, match="numpy Generator"):
            call(torch.Generator())


@pytest.mark.parametrize("make, value", [
    (lambda m: m.distributions.Normal(m.tensor([0.0, 1.0]), m.tensor([1.0, 2.0])), [[0.5], [1.5], [0.2]]),
    (lambda m: m.distributions.Categorical(logits=m.tensor([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]])), [[1], [2], [0]]),
    (lambda m: m.distributions.Bernoulli(probs=m.tensor([0.3, 0.6])), [[1.0], [0.0], [1.0]]),
    (lambda m: m.distributions.Beta(m.tensor([2.0, 1.0]), m.tensor([3.0, 2.0])), [[0.3], [0.5], [0.9]]),
    (lambda m: m.distributions.Independent(m.distributions.Normal(m.tensor([[0.0, 1.0], [1.0, 0.0]]),
                                                                 m.tensor([[1.0, 2.0], [1.0, 1.0]])), 1),
     [[[0.5, 0.2]], [[1.0, 1.0]], [[0.0, 0.0]]]),
    (lambda m: m.distributions.MixtureSameFamily(m.distributions.Categorical(m.tensor([[0.3, 0.7], [0.5, 0.5]])),
                                                 m.distributions.Normal(m.tensor([[0.0, 1.0], [1.0, 2.0]]),
                                                                        m.tensor([[1.0, 0.5], [1.0, 1.0]]))),
     [[0.5], [1.5], [0.2]]),
], ids=["normal", "categorical", "bernoulli", "beta", "independent", "mixture"])
def test_distribution_expand_as_torch(make, value):
    """Distribution.expand(batch_shape) (a prior expanded to a batch): the parameters viewed at the new batch shape,
    a wrapped law expanded with its own extra dims; log_prob, mean, variance and the samples' shapes as torch's."""
    got, want = make(tnet).expand((3, 2)), make(torch).expand((3, 2))
    assert got.batch_shape == want.batch_shape and got.event_shape == want.event_shape
    for name in ("mean", "variance"):  # a Categorical's are NaN, as torch's
        np.testing.assert_allclose(getattr(got, name).numpy(), getattr(want, name).numpy(), rtol=1e-6, equal_nan=True)
    assert_close(got.log_prob(tnet.tensor(value)), want.log_prob(torch.tensor(value)), 1e-6, "log_prob")
    assert tuple(got.sample((4,)).shape) == tuple(want.sample((4,)).shape)


def test_more_kl_pairs_and_moments_as_torch():
    """kl_divergence of LogNormal and of Gumbel pairs, Uniform.icdf and MixtureSameFamily.variance, as torch's."""
    for op in (lambda m: m.distributions.kl_divergence(m.distributions.LogNormal(m.tensor([0.0, 1.0]), m.tensor([1.0, 0.5])),
                                                       m.distributions.LogNormal(m.tensor([1.0, 0.0]), m.tensor([2.0, 1.0]))),
               lambda m: m.distributions.kl_divergence(m.distributions.Gumbel(m.tensor([0.0, 1.0]), m.tensor([1.0, 0.5])),
                                                       m.distributions.Gumbel(m.tensor([1.0, 0.0]), m.tensor([2.0, 1.0]))),
               lambda m: m.distributions.Uniform(m.tensor([0.0, -1.0]), m.tensor([1.0, 3.0])).icdf(m.tensor([0.25, 0.5]))):
        assert_close(op(tnet), op(torch), 1e-6, "kl or icdf")


def test_gamma_rsample_is_reparameterized_as_torchs():
    """Gamma.rsample (and Chi2's, StudentT's through it): tnet's standard Gamma draws z carry torch's
    reparameterized gradient, torch._standard_gamma_grad(concentration, z) over the rate in the concentration and
    -z / rate^2 in the rate; StudentT's gradient reaches df, loc and scale (ports 32: a Gamma posterior's ELBO, which
    raised NotImplementedError)."""
    D = tnet.distributions
    conc = np.array([0.3, 1.0, 2.5, 9.0, 40.0], np.float32)
    rate = np.array([0.5, 1.0, 2.0, 1.5, 0.25], np.float32)
    w = np.random.default_rng(0).standard_normal((64, 5)).astype(np.float32)
    tnet.manual_seed(0)
    c, r = tnet.tensor(conc, requires_grad=True), tnet.tensor(rate, requires_grad=True)
    x = D.Gamma(c, r).rsample((64,))
    (x * tnet.tensor(w)).sum().backward()
    z = torch.tensor(x.detach().numpy()) * torch.tensor(rate)  # the standard draws, as tnet drew them
    ref_c = (torch.tensor(w) * torch._standard_gamma_grad(torch.tensor(conc).expand(64, 5), z) / torch.tensor(rate))
    ref_r = torch.tensor(w) * -z / torch.tensor(rate) ** 2
    np.testing.assert_allclose(c.grad.numpy(), ref_c.sum(0).numpy(), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(r.grad.numpy(), ref_r.sum(0).numpy(), rtol=2e-5, atol=1e-5)
    draws = D.Gamma(tnet.tensor([2.0, 9.0]), tnet.tensor([1.0, 3.0])).sample((6000,)).numpy()
    assert np.allclose(draws.mean(0), [2.0, 3.0], rtol=0.05) and np.allclose(draws.var(0), [2.0, 1.0], rtol=0.15)
    assert D.Gamma(1.0, 1.0).has_rsample and D.Chi2(tnet.tensor(3.0, requires_grad=True)).rsample().requires_grad
    df, loc, scale = (tnet.tensor(v, requires_grad=True) for v in ([4.0, 7.0], [0.5, -1.0], [1.0, 2.0]))
    D.StudentT(df, loc, scale).rsample((16,)).pow(2).sum().backward()
    assert all(t.grad is not None and np.isfinite(t.grad.numpy()).all() for t in (df, loc, scale))


def test_dirichlet_and_beta_rsample_are_reparameterized_as_torchs():
    """Dirichlet.rsample (and Beta's, a Dirichlet of [a, b]'s first part): tnet's draws x carry torch's
    _Dirichlet_backward, torch._dirichlet_grad(x, alpha, total) (g - sum(x g)), in every branch of its
    approximation (x near 0 or 1, large alpha and beta, the rational correction) (ports 32)."""
    D = tnet.distributions
    conc = np.array([[0.3, 0.5, 2.0], [7.0, 9.0, 20.0], [1.0, 1.0, 1.0], [3.0, 0.4, 5.0]], np.float32)
    w = np.random.default_rng(0).standard_normal((32, 4, 3)).astype(np.float32)
    tnet.manual_seed(0)
    c = tnet.tensor(conc, requires_grad=True)
    x = D.Dirichlet(c).rsample((32,))
    (x * tnet.tensor(w)).sum().backward()
    rx, rc, rw = torch.tensor(x.detach().numpy()), torch.tensor(conc).expand(32, 4, 3), torch.tensor(w)
    total = rc.sum(-1, True).expand_as(rc)
    ref = torch._dirichlet_grad(rx, rc, total) * (rw - (rx * rw).sum(-1, True))
    np.testing.assert_allclose(c.grad.numpy(), ref.sum(0).numpy(), rtol=1e-4, atol=1e-5)
    a, b = tnet.tensor([0.5, 8.0], requires_grad=True), tnet.tensor([2.0, 9.0], requires_grad=True)
    y = D.Beta(a, b).rsample((16,))
    y.sum().backward()
    ry = torch.tensor(y.detach().numpy())
    ra, rb = torch.tensor([0.5, 8.0]).expand(16, 2), torch.tensor([2.0, 9.0]).expand(16, 2)
    rx = torch.stack([ry, 1 - ry], -1)
    g = torch.stack([torch.ones_like(ry), torch.zeros_like(ry)], -1)
    conc2 = torch.stack([ra, rb], -1)
    ref = torch._dirichlet_grad(rx, conc2, conc2.sum(-1, True).expand_as(conc2)) * (g - (rx * g).sum(-1, True))
    np.testing.assert_allclose(a.grad.numpy(), ref[..., 0].sum(0).numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), ref[..., 1].sum(0).numpy(), rtol=1e-4, atol=1e-5)
    draws = D.Dirichlet(tnet.tensor([1.0, 2.0, 5.0])).sample((4000,)).numpy()
    assert np.allclose(draws.mean(0), [0.125, 0.25, 0.625], atol=0.02) and D.Beta(2.0, 3.0).has_rsample


def test_biject_to_and_transform_to_as_torch():
    """distributions.biject_to / transform_to against torch's registries: the transform each set gets (its repr),
    its forward, inverse and log|det J| on the same values; a factory a user registers for a set's class (by an
    instance, as torch keys by type) or as a decorator; torch's NotImplementedError for a set with no factory
    (tnet has no Cholesky or positive-definite transforms: those raise too, where torch's give one)."""
    D, TD = tnet.distributions, torch.distributions
    x = np.array([[-1.5, 0.2, 0.7], [0.3, -0.4, 2.0]], dtype=np.float32)
    for name, args, registry in [("real", None, "biject_to"), ("real_vector", None, "biject_to"),
                                 ("positive", None, "biject_to"), ("nonnegative", None, "transform_to"),
                                 ("unit_interval", None, "biject_to"), ("interval", (-1.0, 2.5), "biject_to"),
                                 ("half_open_interval", (0.5, 3.0), "transform_to"), ("greater_than", (-2.0,), "biject_to"),
                                 ("greater_than_eq", (1.0,), "transform_to"), ("less_than", (0.5,), "biject_to"),
                                 ("simplex", None, "biject_to"), ("simplex", None, "transform_to"),
                                 ("independent", "positive", "biject_to")]:
        def make(lib):
            c = getattr(lib.constraints, name)
            if name == "independent":
                c = c(getattr(lib.constraints, args), 1)
            elif args is not None:
                c = c(*args)
            return getattr(lib, registry)(c)
        ours, theirs = make(D), make(TD)
        assert repr(ours) == repr(theirs), (name, registry)
        y, ry = ours(tnet.tensor(x)), theirs(torch.tensor(x))
        assert_close(y, ry, 1e-6, f"{registry}({name})")
        assert_close(ours.inv(y), theirs.inv(ry), 1e-5, f"{registry}({name}).inv")
        if theirs.bijective:  # transform_to(simplex), a softmax, has none
            assert_close(ours.log_abs_det_jacobian(tnet.tensor(x), y), theirs.log_abs_det_jacobian(torch.tensor(x), ry),
                         1e-5, f"{registry}({name}) log|det J|")
    for lib in (D, TD):
        registry = lib.constraint_registry.ConstraintRegistry()
        registry.register(lib.constraints.positive, lambda c: lib.transforms.SoftplusTransform())

        @registry.register(lib.constraints.real)
        def _(c):
            return lib.transforms.TanhTransform()

        assert type(registry(lib.constraints.greater_than(3.0))).__name__ == "SoftplusTransform"
        assert type(registry(lib.constraints.real)).__name__ == "TanhTransform"
        with pytest.raises(NotImplementedError, match="Cannot transform _Interval constraints"):
            registry(lib.constraints.unit_interval)
        with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
            lib.biject_to(lib.constraints.boolean)
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        D.biject_to(D.constraints.lower_cholesky)  # torch's too: only transform_to has the matrix sets
    m = np.array([[0.3, 9.0, 9.0], [-0.7, -0.2, 9.0], [0.4, 1.1, 0.5]], dtype=np.float32)
    for name in ("lower_cholesky", "positive_definite", "positive_semidefinite"):
        ours, theirs = D.transform_to(getattr(D.constraints, name)), TD.transform_to(getattr(TD.constraints, name))
        assert repr(ours) == repr(theirs) and ours == type(ours)()
        y, ry = ours(tnet.tensor(m)), theirs(torch.tensor(m))
        assert_close(y, ry, 1e-6, f"transform_to({name})")
        assert_close(ours.inv(y), theirs.inv(ry), 1e-5, f"transform_to({name}).inv")
    from tnet.distributions.constraint_registry import biject_to
    assert biject_to is D.biject_to


def test_native_dropout_returns_its_mask():
    """torch.native_dropout: (output, bool mask), the output input * mask / (1 - p) with its gradient; in eval a copy
    and a mask of every element; p = 1 zeros and no element kept, as torch's."""
    x = tnet.randn(40, 50, requires_grad=True)
    y, mask = tnet.native_dropout(x, 0.3, True)
    m = mask.memory.to(torch.float32)
    assert mask.dtype == torch.bool and 0.6 < m.mean().item() < 0.8
    assert torch.allclose(y.memory, x.memory * m / 0.7)
    y.sum().backward()
    assert torch.allclose(x.grad.memory, m / 0.7)
    y, mask = tnet.native_dropout(x, 0.3, False)
    assert torch.equal(y.memory, x.memory) and y.memory.data_ptr() != x.memory.data_ptr() and mask.memory.all()
    y, mask = tnet.native_dropout(x, 1.0, True)
    assert not y.memory.any() and not mask.memory.any()


def test_distribution_methods_a_law_lacks_raise_not_implemented_as_torch():
    """What a law does not define (StudentT's and Beta's cdf and icdf, Gamma's icdf, VonMises' and
    FisherSnedecor's entropy, ContinuousBernoulli's mode, a user's subclass's moments) raises
    NotImplementedError from the base, as torch's, where tnet raised AttributeError: a script's
    `except NotImplementedError` falls back (an entropy estimated from samples)."""
    def calls(d, lib):
        t = lib.tensor
        student, beta = d.StudentT(t([3.0, 5.0])), d.Beta(t([2.0, 3.0]), t([1.0, 0.5]))

        class Custom(d.Distribution):
            arg_constraints = {}

        custom = Custom(validate_args=False)
        return [lambda: student.cdf(t([0.1, 0.2])), lambda: student.icdf(t([0.1, 0.2])),
                lambda: beta.cdf(t([0.1, 0.2])), lambda: d.Gamma(2.0, 1.0).icdf(t(0.3)),
                lambda: d.VonMises(t(0.0), t(1.0)).entropy(), lambda: d.FisherSnedecor(2.0, 3.0).entropy(),
                lambda: d.ContinuousBernoulli(0.3).mode, lambda: custom.mean, lambda: custom.variance,
                lambda: custom.stddev, lambda: custom.log_prob(t(0.0)), lambda: custom.enumerate_support(),
                lambda: custom.perplexity()]

    for k, (call, ref) in enumerate(zip(calls(tnet.distributions, tnet), calls(torch.distributions, torch))):
        with pytest.raises(NotImplementedError) as caught:
            ref()
        with pytest.raises(NotImplementedError) as ours:
            call()
        assert str(ours.value).replace("tnet.distributions", "torch") == re.sub(
            r"torch\.distributions\.[a-z_]+", "torch", str(caught.value)), k

    def fallback(d, lib):  # a script's entropy: the law's own, else a Monte Carlo estimate
        law = d.VonMises(lib.tensor(0.0), lib.tensor(1.0))
        try:
            return law.entropy()
        except NotImplementedError:
            return -law.log_prob(lib.tensor([-0.5, 0.0, 0.5])).mean()
    assert_close(fallback(tnet.distributions, tnet), fallback(torch.distributions, torch), 1e-6, "fallback")


@pytest.mark.parametrize("name", ["dropout2d", "feature_alpha_dropout"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_feature_dropout_with_p_one_zeroes_every_rank_as_torch(name, shape):
    """p=1 in training drops everything before the rank's check: torch's input * 0 (a 0-D or 1-D input included,
    where p < 1 raises), with a zero gradient; tnet raised 'Feature dropout requires at least 2 dimensions'."""
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1
    got = []
    for lib, fn in ((torch, getattr(torch.nn.functional, name)), (tnet, getattr(F, name))):
        x = lib.tensor(a, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = fn(x, 1.0, True)
        y.sum().backward()
        got.append((np.asarray(y.detach().numpy() if lib is torch else y.numpy()), x.grad.numpy()))
    for a_, b_ in zip(*got):
        np.testing.assert_array_equal(b_, a_)


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout", "native_dropout"])
def test_aten_dropouts_raise_torchs_errors(name):
    """torch's top-level dropouts (aten's) raise a RuntimeError for p outside [0, 1], where F's raise a ValueError,
    and the parser's TypeError for a train that is not a bool; tnet's raised F's ValueError (native_dropout's even
    in eval, where torch's checks no p)."""
    for lib in (torch, tnet):
        x = lib.ones(2, 3)
        with pytest.raises(RuntimeError, match="between 0 and 1|expects p to be in"):
            getattr(lib, name)(x, 1.5, True)
        with pytest.raises(TypeError):
            getattr(lib, name)(x, 0.5, "yes")
    with pytest.raises(ValueError):
        F.dropout(tnet.ones(2), 1.5)
    assert tnet.native_dropout(tnet.ones(2), 1.5, False)[1].memory.all()


def test_randint_size_checks_as_torch():
    """randint's size: a tuple, list or torch.Size of ints (an int: torch's TypeError); a negative size is torch's
    RuntimeError, where tnet raised numpy's ValueError; a dtype that is none, torch's TypeError, and multinomial's
    replacement too."""
    assert tnet.randint(5, torch.Size([2])).shape == (2,) and tnet.randint(0, 5, [2, 3]).shape == (2, 3)
    for lib in (torch, tnet):
        with pytest.raises(RuntimeError):
            lib.randint(5, (-1,))
        with pytest.raises(TypeError):
            lib.randint(5, 3)
        with pytest.raises(TypeError):  # tnet's AttributeError
            lib.randint(0, 5, (2,), dtype=object())
        with pytest.raises(TypeError):  # the parser's, before the number's check (tnet's RuntimeError)
            lib.multinomial(lib.ones(4), 0, replacement=1.5)


def test_normal_checks_a_number_std_beside_a_tensor_mean_as_torch():
    """normal(mean tensor, std number): a negative or NaN std raises torch's RuntimeError (checked with number
    means only before; a tensor std is not read back, as torch's CUDA kernels do not check it either)."""
    for lib in (torch, tnet):
        for std in (-1.0, math.nan):
            with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
                lib.normal(lib.zeros(3), std)
        assert lib.normal(lib.zeros(3), 0.0).shape == (3,)


@pytest.mark.parametrize("make", [lambda m, d: m.empty(-1, 2, dtype=d), lambda m, d: m.rand(-1, dtype=d),
                                  lambda m, d: m.randn((-1, 2), dtype=d), lambda m, d: m.randperm(-1, dtype=d)])
def test_factories_check_the_dtype_before_the_sizes_as_torch(make):
    """A dtype that is none raises the parser's TypeError before a negative size's RuntimeError, as torch's (tnet
    checked the sizes first); float64 in rand and randn is the TypeError of every factory (a ValueError before)."""
    for lib in (torch, tnet):
        with pytest.raises(TypeError):
            make(lib, 1.5)
    for name in ("rand", "randn"):
        with pytest.raises(TypeError, match="float64"):
            getattr(tnet, name)(2, dtype=torch.float64)


@pytest.mark.parametrize("call", [lambda x: x.log_normal_(mean="x", std=-1.0), lambda x: x.cauchy_(median=[0.0], sigma=0.0),
                                  lambda x: x.exponential_(lambd="x"), lambda x: x.geometric_([0.5]),
                                  lambda x: x.index_put_((x.new_zeros(1, dtype=torch.int64),), x.new_ones(1, dtype=torch.float16),
                                                         accumulate=[1])])
def test_in_place_fills_check_argument_types_before_values_as_torch(call):
    """An argument of the wrong type raises the parser's TypeError before any value's check (tnet's std's, sigma's and
    the dtypes' RuntimeErrors came first); a tensor or numpy number still passes as a float."""
    for lib in (torch, tnet):
        with pytest.raises(TypeError):
            call(lib.ones(3))
    assert tnet.ones(3).exponential_(tnet.tensor(2.0)).shape == (3,) and tnet.ones(3).geometric_(np.float64(0.5)).shape == (3,)


def test_cuda_manual_seed_returns_none_as_torchs():
    """tnet.cuda.manual_seed and manual_seed_all seed tnet's one generator and return None, as torch.cuda's (a
    script's `g = torch.cuda.manual_seed(s)` gets None there too); tnet.manual_seed returns the Generator."""
    assert torch.cuda.manual_seed(3) is None and tnet.cuda.manual_seed(3) is None
    assert tnet.cuda.manual_seed_all(3) is None
    first = tnet.rand(4).numpy()
    assert tnet.manual_seed(3) is not None
    np.testing.assert_array_equal(tnet.rand(4).numpy(), first)


def test_rng_state_is_sixteen_bytes_as_torch_cudas():
    """get_rng_state: the seed and offset as a uint8 tensor of 16 bytes, torch.cuda.get_rng_state's form (scripts
    store it as a ByteTensor); set_rng_state takes it back, and the int64 pair of earlier tnet checkpoints too."""
    tnet.manual_seed(5)
    state = tnet.get_rng_state()
    assert state.dtype == torch.uint8 and state.shape == (16,)
    first = tnet.rand(3).numpy()
    tnet.set_rng_state(state)
    np.testing.assert_array_equal(tnet.rand(3).numpy(), first)
    tnet.set_rng_state(state.memory.view(torch.int64))
    np.testing.assert_array_equal(tnet.rand(3).numpy(), first)
    with pytest.raises(RuntimeError, match="uint8 tensor of 16"):
        tnet.set_rng_state(tnet.zeros(4))
