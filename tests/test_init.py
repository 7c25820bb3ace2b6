"""tnet.nn.init against torch.nn.init: fans and gains exactly, the random fills' bounds, means
and standard deviations within statistical tolerance (tnet draws other numbers, from its own
stream), the deterministic fills exactly, in-place writes as torch's; the layers' default init
(torch's), their Caffe fillers, and the built-in models' weights, bit for bit."""
import hashlib
import math

import numpy as np
import pytest
import torch

import tnet
import tnet.nn.init as init
from tnet import amp, nn
from tnet.models import airbench94, cifar10_quick

SHAPES = [(7, 5), (6, 4, 3, 3), (5, 3, 4), (4, 2, 3, 2, 2)]
N = (300, 200)  # 60,000 draws: a sample std within 1% of the true one, 5 sigma


def leaf(shape, dtype=torch.float32):
    return tnet.Tensor(torch.empty(shape, dtype=dtype, device=tnet.DEVICE))


@pytest.mark.parametrize("shape", SHAPES)
def test_fans_match_torch(shape):
    t = torch.empty(shape)
    assert init.calculate_fan_in_and_fan_out(leaf(shape)) == torch.nn.init._calculate_fan_in_and_fan_out(t)
    assert init._calculate_fan_in_and_fan_out is init.calculate_fan_in_and_fan_out  # torch's private name
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.calculate_fan_in_and_fan_out(leaf((3,)))


def test_gains_match_torch():
    for args in [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
                 ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu",)]:
        assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args), args
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


# (function, its keyword arguments, the std of its distribution (from torch's formulas), the bound
# of its values or None) for a tensor of shape N: fan_in 200, fan_out 300
FAN_IN, FAN_OUT = N[1], N[0]
RANDOM = [
    ("uniform_", {"a": -0.5, "b": 1.5}, 2 / math.sqrt(12), (-0.5, 1.5)),
    ("normal_", {"mean": 0.3, "std": 0.2}, 0.2, None),
    ("trunc_normal_", {"std": 0.5, "a": -0.6, "b": 0.4}, None, (-0.6, 0.4)),
    ("xavier_uniform_", {"gain": 2.0}, 2 * math.sqrt(2 / (FAN_IN + FAN_OUT)), 2 * math.sqrt(6 / (FAN_IN + FAN_OUT))),
    ("xavier_normal_", {}, math.sqrt(2 / (FAN_IN + FAN_OUT)), None),
    ("kaiming_uniform_", {}, math.sqrt(2 / FAN_IN), math.sqrt(6 / FAN_IN)),  # a=0: leaky_relu's slope 0
    ("kaiming_uniform_", {"a": math.sqrt(5)}, 1 / math.sqrt(3 * FAN_IN), 1 / math.sqrt(FAN_IN)),  # torch's layers'
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2 / FAN_OUT), math.sqrt(6 / FAN_OUT)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2 / FAN_OUT), None),
    ("kaiming_normal_", {"a": 0.2, "nonlinearity": "leaky_relu"}, math.sqrt(2 / (1 + 0.04) / FAN_IN), None),
]


@pytest.mark.parametrize("name,kwargs,std,bounds", RANDOM, ids=[f"{n}-{'-'.join(k)}" for n, k, _, _ in RANDOM])
def test_random_fills_have_torchs_distribution(name, kwargs, std, bounds):
    """Bounds, mean and std against the formulas and torch's own draw of the same call."""
    t = leaf(N)
    ref = getattr(torch.nn.init, name)(torch.empty(N, dtype=torch.float64), **kwargs).numpy()
    got = getattr(init, name)(t, **kwargs).numpy().astype(np.float64)
    std = ref.std() if std is None else std
    assert abs(got.std() / std - 1) < 0.02 and abs(ref.std() / std - 1) < 0.02, (got.std(), ref.std(), std)
    assert abs(got.mean() - ref.mean()) < 5 * std / math.sqrt(got.size) * 1.5, (got.mean(), ref.mean())
    if bounds is not None:
        low, high = np.float32(bounds if isinstance(bounds, tuple) else (-bounds, bounds))  # as the draws round
        assert low <= got.min() and got.max() <= high
        assert got.min() < low + (high - low) * 1e-3 and got.max() > high - (high - low) * 1e-3  # the whole range


def test_fills_are_in_place_counted_and_repeat_under_a_seed():
    """The same object back, the same memory and layout, the version counted; the draws repeat
    under tnet.manual_seed or a numpy Generator given, and differ otherwise."""
    conv = nn.Conv2d(3, 5, 3)
    w = conv.weight
    ptr, version = w.memory.data_ptr(), w._version
    tnet.manual_seed(7)
    assert init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu") is w
    first = w.numpy().copy()
    assert w.memory.data_ptr() == ptr and w._version > version
    assert w.memory.is_contiguous(memory_format=torch.channels_last)
    assert not (init.kaiming_normal_(w).numpy() == first).all()
    tnet.manual_seed(7)
    assert (init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu").numpy() == first).all()
    a = init.normal_(leaf((4, 3)), generator=np.random.default_rng(3)).numpy()
    assert (init.normal_(leaf((4, 3)), generator=np.random.default_rng(3)).numpy() == a).all()
    with pytest.raises(TypeError, match="numpy Generator"):
        init.normal_(w, generator=torch.Generator())
    assert init.zeros_(torch.ones(3, device=tnet.DEVICE)).sum() == 0  # a torch tensor works too
    with pytest.raises(TypeError, match="tnet.Tensor or a torch tensor"):
        init.zeros_(np.ones(3))


def test_fills_rewrite_the_16_bit_copies():
    """A parameter's 16-bit copies (read by layers under autocast) follow an init, at their address."""
    p = nn.Parameter(np.zeros((3, 4), np.float32))
    low = amp.low_copy(p, torch.bfloat16)
    init.normal_(p)
    assert amp.low_copy(p, torch.bfloat16) is low
    np.testing.assert_array_equal(low.float().cpu().numpy(), p.memory.to(torch.bfloat16).float().cpu().numpy())
    init.constant_(p, 0.25)
    assert (low.float().cpu().numpy() == 0.25).all()
    h = init.uniform_(leaf((5,), torch.float16), 2.0, 3.0)  # a 16-bit tensor is filled in its dtype
    assert h.dtype == torch.float16 and ((h.numpy() >= 2) & (h.numpy() <= 3)).all()


@pytest.mark.parametrize("shape,groups", [((6, 4, 3, 3), 1), ((6, 4, 3, 3), 2), ((4, 6, 3), 1), ((4, 2, 3, 2, 3), 2),
                                          ((3, 5, 2, 2), 1)])
def test_dirac_matches_torch_exactly(shape, groups):
    got = init.dirac_(leaf(shape), groups).numpy()
    np.testing.assert_array_equal(got, torch.nn.init.dirac_(torch.empty(shape), groups).numpy())


def test_deterministic_fills_match_torch_exactly():
    for shape in [(3, 5), (5, 3), (4, 4)]:
        np.testing.assert_array_equal(init.eye_(leaf(shape)).numpy(), torch.nn.init.eye_(torch.empty(shape)).numpy())
    assert (init.constant_(leaf((2, 3)), 0.7).numpy() == np.float32(0.7)).all()
    assert (init.ones_(leaf((2, 3))).numpy() == 1).all() and (init.zeros_(leaf((4,))).numpy() == 0).all()
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(leaf((2, 2, 2)))
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(leaf((2, 2)))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(leaf((5, 2, 3, 3)), groups=2)


@pytest.mark.parametrize("shape", [(7, 5), (5, 7), (4, 3, 2, 2), (6, 6)])
def test_orthogonal(shape):
    w = init.orthogonal_(leaf(shape), gain=1.5).numpy().reshape(shape[0], -1).astype(np.float64)
    small = min(w.shape)
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(gram, 1.5 ** 2 * np.eye(small), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(leaf((4,)))


def test_sparse_and_deprecated_names():
    w = init.sparse_(leaf((10, 6)), sparsity=0.3, std=0.1).numpy()
    assert ((w == 0).sum(axis=0) == 3).all()
    with pytest.warns(FutureWarning, match="nn.init.kaiming_normal_"):
        init.kaiming_normal(leaf((3, 4)), mode="fan_out")  # old scripts (kuangliu's utils.py) use these
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(leaf((0, 3)))


def test_layers_draw_torchs_default_init():
    """Conv2d and Linear: the weight in +-1/sqrt(fan_in) (kaiming_uniform_, a = sqrt(5)), the bias
    too; reset_parameters draws anew; a seed repeats them; the Caffe fillers, keyword-only."""
    tnet.manual_seed(0)
    conv, fc = nn.Conv2d(16, 32, 3), nn.Linear(75, 40)
    for layer, fan_in in ((conv, 16 * 9), (fc, 75)):
        for p in (layer.weight, layer.bias):
            v = p.numpy()
            bound = 1 / math.sqrt(fan_in)
            assert np.abs(v).max() <= bound and np.abs(v).max() > 0.9 * bound and abs(v.std() * math.sqrt(3) / bound - 1) < 0.2
    tnet.manual_seed(0)
    again = nn.Conv2d(16, 32, 3)
    assert (again.weight.numpy() == conv.weight.numpy()).all() and (again.bias.numpy() == conv.bias.numpy()).all()
    before = conv.weight.numpy().copy()
    conv.reset_parameters()
    assert not (conv.weight.numpy() == before).all() and conv.weight.memory.is_contiguous(memory_format=torch.channels_last)
    caffe = nn.Conv2d(16, 32, 3, weight_filler=nn.gaussian(0.01), bias_filler=nn.constant(0.5))
    assert abs(caffe.weight.numpy().std() / 0.01 - 1) < 0.1 and (caffe.bias.numpy() == 0.5).all()
    with pytest.raises(TypeError):
        nn.Linear(3, 4, True, None, None, nn.gaussian(0.01))  # Caffe's fillers are keyword-only
    fc.rng = np.random.default_rng(5)  # rng= at construction: the stream reset_parameters draws from
    fc.reset_parameters()
    a = fc.weight.numpy().copy()
    fc.rng = np.random.default_rng(5)
    fc.reset_parameters()
    assert (fc.weight.numpy() == a).all()


def test_batch_norm_reset_parameters():
    bn = nn.BatchNorm2d(3)
    bn(tnet.tensor(np.random.default_rng(0).standard_normal((4, 3, 2, 2))))
    init.constant_(bn.weight, 2.0), init.constant_(bn.bias, 1.0)
    bn.reset_parameters()
    for t, value in ((bn.running_mean, 0), (bn.running_var, 1), (bn.num_batches_tracked, 0), (bn.weight, 1), (bn.bias, 0)):
        assert (t.numpy() == value).all()


def weights_hash(model):
    digest = hashlib.sha256()
    for name, value in model.state_dict().items():
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()[:16]


def test_builtin_models_keep_their_weights():
    """The built-in models' weights for a seed, bit for bit as before torch's default init came:
    cifar10_quick asks for Caffe's fillers (its recipe's accuracy rests on them), airbench94 for
    its own."""
    assert weights_hash(cifar10_quick(seed=0)) == "95064f0e968d4545"
    assert weights_hash(cifar10_quick(seed=1, width=2)) == "c27dca09fb8b247d"
    assert weights_hash(airbench94(seed=5, widths=(16, 32, 32))) == "7b9c8a34d30ba755"
