"""tnet.models.airbench94 and init_whitening: the parameters, the init, and the net's forward
and gradients against the same net in PyTorch float64 (narrow widths: the interpreter is slow;
32x32 images, which the pools need: 31 -> 15 -> 7 -> 3 -> 1)."""
import math
import os
import sys

import numpy as np
import pytest
import torch

import tnet
from tnet import amp
from tnet.models import airbench94, init_whitening
from helpers import TOL, assert_close

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.airbench import torch_airbench94  # noqa: E402

WIDTHS = (32, 48, 64)  # block1 above 24 channels, block2 and block3 wide (channel vectors), yet cheap
NET_TOL = 1e-4  # fp32 against float64 through ten layers


def torch_twin(widths):
    """The same net in PyTorch, float64, named as tnet's (the state dicts load into each other):
    the train study's (benchmarks/airbench.py)."""
    return torch_airbench94(widths).double()


def paired(widths, seed=0):
    """tnet's airbench94 and its PyTorch twin holding the same values: the init's, with the
    BatchNorm shifts and running statistics made non-trivial."""
    net = airbench94(seed=0, widths=widths)
    rng = np.random.default_rng(seed)
    state = net.state_dict()
    for k, v in state.items():
        if k.endswith((".bias", "running_mean")) and not k.startswith("whiten"):
            state[k] = (0.2 * rng.standard_normal(v.shape)).astype(np.float32)
        elif k.endswith("running_var"):
            state[k] = (0.5 + rng.random(v.shape)).astype(np.float32)
    net.load_state_dict(state)
    ref = torch_twin(widths)
    ref.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in state.items()})
    return net, ref


def smooth_images(n, seed=0):
    """Correlated images (neighbouring pixels and channels alike, channel means apart from 0),
    so that the patch covariance has distinct eigenvalues and centering it matters."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3, 34, 34))
    x = x[:, :, :-2, :-2] + x[:, :, 1:-1, 1:-1] + x[:, :, 2:, 2:] + 0.5 * x[:, :, 1:-1, :-2]
    mix = np.array([[1.0, 0.5, 0.2], [0.3, 1.0, 0.4], [0.1, 0.6, 1.0]])
    return np.einsum("dc,nchw->ndhw", mix, x) + np.array([0.3, -0.2, 0.1])[:, None, None]


def test_parameters_names_shapes_frozen_and_layout():
    net = airbench94()
    w1, w2, w3 = 64, 256, 256
    expected = {"whiten.weight": (24, 3, 2, 2), "whiten.bias": (24,)}
    for b, (cin, cout) in enumerate([(24, w1), (w1, w2), (w2, w3)], 1):
        for i, c in ((1, cin), (2, cout)):
            expected[f"block{b}.conv{i}.weight"] = (cout, c, 3, 3)
            expected[f"block{b}.norm{i}.weight"] = expected[f"block{b}.norm{i}.bias"] = (cout,)
    expected["head.weight"] = (10, w3)
    params = dict(net.named_parameters())
    assert list(params) == list(expected), list(params)
    assert {k: p.shape for k, p in params.items()} == expected
    frozen = {k for k, p in params.items() if not p.requires_grad}
    assert frozen == {"whiten.weight"} | {f"block{b}.norm{i}.weight" for b in (1, 2, 3) for i in (1, 2)}
    buffers = [k for k, _ in net.named_buffers()]
    assert buffers == [f"block{b}.norm{i}.{s}" for b in (1, 2, 3) for i in (1, 2)
                       for s in ("running_mean", "running_var", "num_batches_tracked")]
    for name, module in net.named_modules():
        if isinstance(module, tnet.nn.BatchNorm2d):
            assert (module.eps, module.momentum) == (1e-12, 0.4), name
            assert np.all(module.weight.numpy() == 1) and np.all(module.bias.numpy() == 0), name
    for k, p in params.items():
        if p.ndim == 4:
            assert p.memory.is_contiguous(memory_format=torch.channels_last), k
        assert p.dtype == torch.float32, k


def test_init_is_dirac_and_pytorch_default_drawn_from_the_seed():
    net, state = airbench94(seed=3), {k: v.numpy() for k, v in airbench94(seed=3).state_dict().items()}
    for k, v in net.state_dict().items():
        assert np.array_equal(v, state[k]), f"{k}: another draw from the same seed"
    assert not np.array_equal(airbench94(seed=4).state_dict()["head.weight"], state["head.weight"])
    for k, w in state.items():
        if not k.endswith("weight") or w.ndim == 1:
            continue
        fan_in = math.prod(w.shape[1:])
        bound = 1 / math.sqrt(fan_in)
        cin = w.shape[1] if k.startswith("block") else 0
        if cin:
            dirac = np.zeros((cin, *w.shape[1:]), np.float32)
            dirac[np.arange(cin), np.arange(cin), 1, 1] = 1
            assert np.array_equal(w[:cin], dirac), f"{k}: the first {cin} filters are not Dirac filters"
        rest = w[cin:]
        if rest.size:  # uniform(-bound, bound): its range and its standard deviation bound / sqrt(3)
            assert np.abs(rest).max() <= bound and np.abs(rest).max() > 0.9 * bound, k
            assert abs(rest.std() / (bound / math.sqrt(3)) - 1) < 0.1, k
    bias = state["whiten.bias"]
    assert np.abs(bias).max() <= 1 / math.sqrt(12) and bias.std() > 0.1, "whiten.bias: torch's default init"


FULL = pytest.param((64, 256, 256), marks=pytest.mark.skipif(tnet.INTERPRET, reason="a minute on the interpreter"))


@pytest.mark.parametrize("widths", [WIDTHS, FULL], ids=["narrow", "full"])
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_forward_and_gradients_match_pytorch(train, widths, ieee):
    net, ref = paired(widths)
    net.train(train)
    ref.train(train)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 32, 32))
    out, ref_out = net(tnet.tensor(x)), ref(torch.tensor(x))
    assert out.shape == (2, 10) and out.dtype == torch.float32
    assert_close(out, ref_out, NET_TOL, "logits")
    g = rng.standard_normal((2, 10))
    out.backward(g)
    ref_out.backward(torch.tensor(g))
    ref_params = dict(ref.named_parameters())
    for k, p in net.named_parameters():
        if ref_params[k].requires_grad:
            assert_close(p.grad, ref_params[k].grad, NET_TOL, f"gradient of {k}")
        else:
            assert p.grad is None, f"{k} is frozen but got a gradient"
    ref_state = ref.state_dict()
    for k, v in net.state_dict().items():  # running statistics: momentum 0.4 in training mode only
        if k.endswith("num_batches_tracked"):
            assert int(v) == int(ref_state[k]) == int(train), k
        elif "running" in k:
            assert_close(v, ref_state[k], NET_TOL, k)


def test_conv_groups_fuse_gelu_into_batch_norm(monkeypatch):
    """Each ConvGroup's BatchNorm -> GELU runs as one op (F.batch_norm's activation) with the
    norm's own settings; F.gelu runs once, after the whitening conv."""
    calls, gelu, batch_norm = [], tnet.functional.gelu, tnet.functional.batch_norm

    def spy_batch_norm(*args, **kwargs):
        calls.append(("batch_norm", kwargs.get("activation"), args[6:8]))
        return batch_norm(*args, **kwargs)
    monkeypatch.setattr(tnet.functional, "gelu", lambda *a, **k: calls.append(("gelu",)) or gelu(*a, **k))
    monkeypatch.setattr(tnet.functional, "batch_norm", spy_batch_norm)
    net = airbench94(widths=(16, 32, 32))
    with tnet.no_grad():
        net(tnet.tensor(np.random.default_rng(0).standard_normal((2, 3, 32, 32))))
    assert calls == [("gelu",)] + [("batch_norm", "gelu", (0.4, 1e-12))] * 6, calls


def torch_patches(x):
    """Every 2x2x3 patch of x [N, 3, H, W] as a row, (c, i, j) ordered, in float64."""
    p = torch.as_tensor(x, dtype=torch.float64).unfold(2, 2, 1).unfold(3, 2, 1)  # [N, 3, H-1, W-1, 2, 2]
    return p.permute(0, 2, 3, 1, 4, 5).reshape(-1, 12)


@pytest.mark.parametrize("center,layout,dtype", [(True, "nchw", torch.float32), (False, "nchw", torch.float32),
                                                 (True, "channels_last", torch.bfloat16)])
def test_init_whitening_whitens_the_patches(center, layout, dtype):
    net = airbench94(widths=(16, 32, 32))
    low = amp.low_copy(net.whiten.weight, torch.bfloat16)  # made before: it must be rewritten
    x = smooth_images(3)
    images = torch.tensor(x, dtype=dtype)
    if layout == "channels_last":
        images = images.contiguous(memory_format=torch.channels_last)
    eps = 5e-4
    assert init_whitening(net, images.to(tnet.DEVICE), eps=eps, center=center) is net

    patches = torch_patches(images.to(torch.float64))
    if center:
        patches = patches - patches.mean(0)
    cov = (patches.T @ patches / len(patches)).numpy()
    eigenvalues = np.linalg.eigvalsh(cov)[::-1]
    w = net.whiten.weight.numpy().reshape(24, 12).astype(np.float64)
    assert np.array_equal(w[12:], -w[:12]), "filters 12..23 are the negatives of 0..11"
    # sign-insensitive: filter i is an eigenvector scaled by 1/sqrt(L_i + eps), largest L first,
    # so the whitened patches' covariance is diag(L / (L + eps)) ~ identity
    assert_close(np.linalg.norm(w[:12], axis=1), 1 / np.sqrt(eigenvalues + eps), 1e-5, "filter norms")
    assert_close(w[:12] @ cov @ w[:12].T, np.diag(eigenvalues / (eigenvalues + eps)), 1e-4,
                 "covariance of the whitened patches")
    assert net.whiten.weight.memory.is_contiguous(memory_format=torch.channels_last)
    assert_close(low, net.whiten.weight.memory.to(torch.bfloat16), 0, "the weight's bf16 copy, refreshed")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_gives_16_bit_logits_close_to_fp32(dtype):
    """Eval mode at init (BatchNorm's running statistics 0 and 1); then a backward under
    autocast gives fp32 gradients close to fp32's."""
    net = airbench94(widths=(16, 32, 32)).eval()
    init_whitening(net, tnet.tensor(smooth_images(4, seed=2)))
    x = tnet.tensor(np.random.default_rng(3).standard_normal((2, 3, 32, 32)))
    g = np.random.default_rng(4).standard_normal((2, 10))
    ref = net(x)
    ref.backward(g)
    ref_grads = {k: p.grad for k, p in net.named_parameters() if p.requires_grad}
    net.zero_grad()
    with tnet.autocast("cuda", dtype=dtype):
        out = net(x)
    assert out.dtype == dtype and out.shape == (2, 10)
    # bf16 stores round to nearest, in the interpreter too (docs/triton.md): over the net's ~20 stores, about 0.5%
    # on these logits on the GPU (the interpreter's own truncating casts gave 3%)
    tol = TOL["bf16"] if dtype == torch.bfloat16 else TOL["fp16"]
    assert_close(out, ref, tol, f"{dtype} logits against fp32")
    out.backward(g)
    for k, p in net.named_parameters():
        if p.requires_grad:
            assert p.grad.dtype == torch.float32, k
            assert_close(p.grad, ref_grads[k], 2 * tol, f"{dtype} gradient of {k} against fp32")
