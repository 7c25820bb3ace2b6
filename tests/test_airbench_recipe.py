"""train.py's airbench recipe, piece by piece against torch, and a tiny end-to-end run: the
reflect-padded batch gather, the alternating flip, the schedule, the parameter groups, the
lookahead kernel and test-time augmentation. A small stand-in for tnet.models.airbench94
(the same parameter names) serves where the model is needed."""
import json
import math
import os
import sys
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
from tnet import amp, data, models, nn, optim
from tnet import functional as F
from tnet.graph import EvalStep, tta_views
from tnet.kernels import optim as optim_kernels
from tnet.kernels.data import gather
from tnet.kernels.softmax import count_correct
from conftest import TOL, assert_close

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import train  # noqa: E402
from test_train import write_bin_pack  # noqa: E402

DEV = tnet.DEVICE


def dev(a):
    return torch.from_numpy(np.ascontiguousarray(a)).to(DEV)


@pytest.fixture(autouse=True)
def keep_precision():
    previous = tnet.get_precision()
    yield
    tnet.set_precision(previous)


# --- a stand-in for tnet.models.airbench94: its parameter names and layers, tiny widths ---

class _Block(nn.Module):
    def __init__(self, cin, cout, rng):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False, weight_filler=nn.gaussian(0.3), rng=rng)
        self.norm1 = nn.BatchNorm2d(cout, eps=1e-12, momentum=0.4)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False, weight_filler=nn.gaussian(0.3), rng=rng)
        self.norm2 = nn.BatchNorm2d(cout, eps=1e-12, momentum=0.4)
        self.norm1.weight.requires_grad = self.norm2.weight.requires_grad = False

    def forward(self, x):
        x = F.gelu(self.norm1(F.max_pool2d(self.conv1(x), 2)))
        return F.gelu(self.norm2(self.conv2(x)))


class StandIn(nn.Module):
    def __init__(self, seed=0, width=4):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.whiten = nn.Conv2d(3, 6, 2, weight_filler=nn.gaussian(0.3), rng=rng)
        self.whiten.weight.requires_grad = False
        self.block1, self.block2, self.block3 = _Block(6, width, rng), _Block(width, width, rng), _Block(width, width, rng)
        self.head = nn.Linear(width, 10, bias=False, weight_filler=nn.gaussian(0.5), rng=rng)

    def forward(self, x):
        x = self.block3(self.block2(self.block1(F.gelu(self.whiten(x)))))
        return self.head(F.max_pool2d(x, 3).flatten(1)) * (1 / 9)


def standin_whitening(model, images):
    """The stand-in's whitening init (in torch: a test helper): eigenvectors of the 2x2 patches'
    covariance, scaled by 1 / sqrt(eigenvalue + eps), and their negatives."""
    x = images.detach().cpu().double()
    patches = x.unfold(2, 2, 1).unfold(3, 2, 1).permute(0, 2, 3, 1, 4, 5).reshape(-1, 12)
    eigenvalues, eigenvectors = torch.linalg.eigh(torch.cov(patches.T))
    filters = (eigenvectors.T.flip(0) / (eigenvalues.flip(0) + 5e-4).sqrt()[:, None]).reshape(-1, 3, 2, 2)[:3]
    w = torch.cat([filters, -filters]).float()
    model.whiten.weight.data.copy_(w.to(DEV))
    amp.refresh_low_copies(model.whiten.weight)


@pytest.fixture
def standin(monkeypatch):
    """tnet.models.airbench94 and init_whitening as the stand-in's, until the real ones land."""
    monkeypatch.setattr(models, "airbench94", lambda seed=0: StandIn(seed), raising=False)
    monkeypatch.setattr(models, "init_whitening", standin_whitening, raising=False)


# --- data ---

def reference_views(images, shifts, flips, pad, mode):
    """torch: pad (reflect or zeros) by pad = (ph, pw) or an int, crop at pad + (dy, dx), mirror when flipped."""
    ph, pw = (pad, pad) if isinstance(pad, int) else pad
    x = torch.from_numpy(images).double()
    padded = tF.pad(x, (pw, pw, ph, ph), mode="reflect" if mode == "reflect" else "constant")
    h, w = images.shape[2:]
    out = [padded[i, :, ph + dy:ph + dy + h, pw + dx:pw + dx + w] for i, (dy, dx) in enumerate(shifts)]
    return torch.stack([o.flip(-1) if f else o for o, f in zip(out, flips)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_gather_reflect_padding_matches_torch(dtype):
    rng = np.random.default_rng(3)
    images = rng.standard_normal((13, 3, 5, 7)).astype(np.float32)
    labels, idx = rng.integers(0, 10, 13), rng.integers(0, 13, 11)
    shifts = np.stack([rng.integers(-4, 5, 11), rng.integers(-6, 7, 11)], 1).astype(np.int32)
    shifts[0], shifts[1] = (-4, 6), (4, -6)  # the farthest reflections: a pad one short of each side
    flips = (rng.random(11) < 0.5).astype(np.int32)
    out = (torch.empty(11, 3, 5, 7, dtype=dtype, device=DEV), torch.empty(11, dtype=torch.int64, device=DEV))
    x, y = gather(dev(images), dev(labels), dev(idx), dev(shifts), dev(flips), out=out, padding_mode="reflect")
    assert_close(x, reference_views(images[idx], shifts, flips, (4, 6), "reflect"), TOL["fp16"] if dtype != torch.float32
                 else 0, "reflect-padded views")
    np.testing.assert_array_equal(y.cpu().numpy(), labels[idx])
    with pytest.raises(ValueError, match="padding_mode"):
        gather(dev(images), dev(labels), dev(idx), dev(shifts), dev(flips), padding_mode="circular")


def test_loader_alternating_flip_reflect_and_drop_last():
    """flip="alternate": each image's flip is its first epoch's coin XOR (epoch odd), whatever its
    place in the shuffle; shifts within [-2, 2], reflect padding; 21 images at batch 8: two batches."""
    rng = np.random.default_rng(4)
    images = rng.standard_normal((21, 3, 8, 8)).astype(np.float32)
    labels = np.arange(21)  # the label names the image
    loader = data.Loader(images, labels, 8, augment=True, seed=5, pad=2, padding_mode="reflect", flip="alternate",
                         drop_last=True)
    assert len(loader) == 2
    draws = np.random.default_rng(5)
    first = None
    for epoch in range(3):
        perm = draws.permutation(21)
        shifts = draws.integers(-2, 3, size=(21, 2), dtype=np.int32)
        if first is None:
            first = (draws.random(21) < 0.5).astype(np.int32)
        flips = first[perm] ^ (epoch % 2)
        batches = list(loader)
        assert [len(y) for _, y in batches] == [8, 8]
        y = np.concatenate([b[1].cpu().numpy() for b in batches])
        np.testing.assert_array_equal(y, perm[:16])
        x = np.concatenate([b[0].cpu().numpy() for b in batches])
        ref = reference_views(images[perm[:16]], shifts[:16], flips[:16], 2, "reflect")
        assert_close(x, ref, 0, f"epoch {epoch}")
    # every image flips between epochs: its coin, by image, is kept in the state for a resume
    state = loader.state()
    np.testing.assert_array_equal(state["first_flips"], first)
    again = data.Loader(images, labels, 8, augment=True, seed=99, pad=2, padding_mode="reflect", flip="alternate",
                        drop_last=True)
    again.set_state(state)
    perm = draws.permutation(21)
    shifts = draws.integers(-2, 3, size=(21, 2), dtype=np.int32)
    x = np.concatenate([b[0].cpu().numpy() for b in again])
    assert_close(x, reference_views(images[perm[:16]], shifts[:16], first[perm[:16]] ^ 1, 2, "reflect"), 0,
                 "epoch 3 after a resume")


def test_normalize():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (3, 3, 4, 5), dtype=np.uint8)
    mean, std = torch.tensor(data.CIFAR10_MEAN).view(1, 3, 1, 1), torch.tensor(data.CIFAR10_STD).view(1, 3, 1, 1)
    ref = (torch.from_numpy(images).double() / 255 - mean.double()) / std.double()
    out = data.normalize(images)
    assert out.dtype == np.float32
    assert_close(out, ref, 1e-6, "normalised")
