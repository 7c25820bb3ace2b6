"""Networks: Caffe's cifar10_quick, and airbench94 (the CIFAR-10 speed run's net)."""
import math
from collections import OrderedDict

import numpy as np
import torch

from . import amp, nn
from .kernels import gemm as _gemm
from .kernels.launch import check
from .tensor import memory_of


def cifar10_quick(seed=0, width=1):
    """Caffe's cifar10_quick_train_test.prototxt, layer for layer (without the loss layer;
    use tnet.functional.cross_entropy). Shapes: 32 -> 16 -> 8 -> 4, so ip1 sees 64*4*4.
    width multiplies every channel count (1 is Caffe's net). The biases learn at twice the
    rate (Caffe's lr_mult 2 in that file). Caffe's fillers, as that file asks: gaussian weights,
    zero biases (not torch's default init)."""
    rng = np.random.default_rng(seed)
    c1, c2, c3, hidden = 32 * width, 32 * width, 64 * width, 64 * width
    caffe = lambda std: dict(weight_filler=nn.gaussian(std), bias_filler=nn.constant(0.0), rng=rng, bias_lr_mult=2)
    return nn.Sequential(OrderedDict([
        ("conv1", nn.Conv2d(3, c1, 5, padding=2, **caffe(1e-4))),
        ("pool1", nn.MaxPool2d(3, 2, ceil_mode=True)),
        ("relu1", nn.ReLU()),
        ("conv2", nn.Conv2d(c1, c2, 5, padding=2, **caffe(0.01))),
        ("relu2", nn.ReLU()),
        ("pool2", nn.AvgPool2d(3, 2, ceil_mode=True)),
        ("conv3", nn.Conv2d(c2, c3, 5, padding=2, **caffe(0.01))),
        ("relu3", nn.ReLU()),
        ("pool3", nn.AvgPool2d(3, 2, ceil_mode=True)),
        ("flatten", nn.Flatten()),
        ("ip1", nn.Linear(c3 * 4 * 4, hidden, **caffe(0.1))),
        ("ip2", nn.Linear(hidden, 10, **caffe(0.1))),
    ]))


def _uniform(bound):
    """A filler drawing uniform(-bound, bound) from numpy's generator (the same values on CPU
    and GPU)."""
    return lambda shape, rng: rng.uniform(-bound, bound, size=shape).astype(np.float32)


def _torch_default(shape, rng):
    """PyTorch's default init of a conv or linear weight [out, in, ...] (kaiming_uniform with
    a=sqrt(5)): uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in * kh * kw."""
    return _uniform(1 / math.sqrt(math.prod(shape[1:])))(shape, rng)


def _dirac(shape, rng):
    """PyTorch's default init, then the first in_channels filters set to identity (Dirac)
    filters: output channel i passes input channel i through the kernel's centre."""
    w = _torch_default(shape, rng)
    cout, cin, kh, kw = shape
    w[:cin] = 0.0
    for i in range(min(cout, cin)):
        w[i, i, kh // 2, kw // 2] = 1.0
    return w


def _batch_norm(channels):
    """airbench's BatchNorm: eps 1e-12, running statistics new = 0.6 old + 0.4 batch, the
    scale frozen at 1, the shift trained."""
    bn = nn.BatchNorm2d(channels, eps=1e-12, momentum=0.4)
    bn.weight.requires_grad = False
    return bn


class ConvGroup(nn.Module):
    """airbench's conv group: conv 3x3 -> max pool 2 -> BatchNorm -> GELU -> conv 3x3 ->
    BatchNorm -> GELU (the convs padded 1, without bias, their first in_channels filters Dirac)."""

    def __init__(self, in_channels, out_channels, rng):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False, weight_filler=_dirac, rng=rng)
        self.pool = nn.MaxPool2d(2)
        self.norm1 = _batch_norm(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False, weight_filler=_dirac, rng=rng)
        self.norm2 = _batch_norm(out_channels)
        self.activ = nn.GELU()

    def forward(self, x):
        # self.activ(self.norm1(x)), with the GELU fused into the norm's passes (nn.BatchNorm2d's activation)
        x = self.norm1(self.pool(self.conv1(x)), activation=self.activ)
        return self.norm2(self.conv2(x), activation=self.activ)


class Airbench94(nn.Module):
    """The airbench94 network (see airbench94())."""

    def __init__(self, seed=0, widths=(64, 256, 256)):
        super().__init__()
        rng = np.random.default_rng(seed)
        w1, w2, w3 = widths
        whiten = 2 * 3 * 2 * 2  # a 2x2x3 patch's 12 whitening filters and their negatives
        self.whiten = nn.Conv2d(3, whiten, 2, padding=0, weight_filler=_torch_default,
                                bias_filler=_uniform(1 / math.sqrt(3 * 2 * 2)), rng=rng)  # torch's bias init
        self.whiten.weight.requires_grad = False
        self.activ = nn.GELU()
        self.block1 = ConvGroup(whiten, w1, rng)
        self.block2 = ConvGroup(w1, w2, rng)
        self.block3 = ConvGroup(w2, w3, rng)
        self.pool = nn.MaxPool2d(3)
        self.head = nn.Linear(w3, 10, bias=False, weight_filler=_torch_default, rng=rng)
        self.scale = 1 / 9

    def forward(self, x):
        x = self.activ(self.whiten(x))
        x = self.block3(self.block2(self.block1(x)))
        x = self.pool(x)
        return self.head(x.reshape(x.shape[0], -1)) * self.scale


def airbench94(seed=0, widths=(64, 256, 256)):
    """The network of the CIFAR-10 speed run airbench94, for [N, 3, 32, 32] images:
    `whiten`, a 2x2 conv 3 -> 24 with bias (its weight frozen: set it with init_whitening), GELU;
    `block1`..`block3`, ConvGroups of widths[0..2] (32 -> 31 -> 15 -> 7 -> 3); max pool 3,
    flatten, `head` = Linear(widths[2], 10, bias=False), times 1/9. Weights channels-last, drawn
    by PyTorch's default init from numpy's generator seeded with `seed`; the first in_channels
    filters of each block conv are Dirac. Frozen (requires_grad False): whiten.weight and the
    BatchNorm weights; parameters() lists them too, as torch's does."""
    return Airbench94(seed, widths)


def init_whitening(model, images, eps=5e-4, center=True):
    """Set model.whiten's weight (a 2x2 conv 3 -> 24) to whiten the 2x2x3 patches of
    `images` (a torch or tnet float tensor [N, 3, 32, 32] on tnet's device, in any layout;
    airbench takes 5,000 normalised training images): with C the patches' covariance (12x12,
    over every patch of every image; center=False: their second moment X^T X / P, the mean
    not removed, as airbench94's code computes it; centred scored higher on --val 5000, see
    docs/results.md), L its eigenvalues (largest first) and V its
    eigenvectors, filter i is V_i / sqrt(L_i + eps) for i < 12 and filter i + 12 its negative.

    The 12x12 products run on tnet's GEMM, split over the images (one batched GEMM summed
    over the batch); the eigendecomposition runs on the host in numpy (a host sync)."""
    x = memory_of(images)
    weight = model.whiten.weight
    cout, c, kh, kw = weight.shape
    k = c * kh * kw
    check(x.dim() == 4 and x.shape[1] == c and x.is_floating_point() and x.device == weight.device and cout == 2 * k,
          lambda: f"init_whitening: images must be float [N, {c}, H, W] on {weight.device} for a whitening conv of "
                  f"{2 * k} filters, got {x.dtype} {tuple(x.shape)} on {x.device} and a weight {weight.shape}")
    n, _, h, w = x.shape
    oh, ow = h - kh + 1, w - kw + 1
    sn, sc, sh, sw = x.stride()
    # every patch as a row of X, (c, i, j) in the weight's order, then a column of ones (its
    # products are the patch sums), zero-padded to 16 columns, a tile of the GEMM's
    rows = torch.empty((n, oh, ow, 16), device=x.device, dtype=torch.float32)
    patches = x.as_strided((n, oh, ow, c, kh, kw), (sn, sh, sw, sc, sh, sw), x.storage_offset())
    rows[..., :k].view(n, oh, ow, c, kh, kw).copy_(patches)
    rows[..., k].fill_(1.0)
    rows[..., k + 1:].zero_()
    per_image = rows.view(n, oh * ow, 16)
    # X^T X, as one GEMM per image summed over the images (split-K over the batch); fp32
    # products: tf32's would blur the small eigenvalues
    moments = _gemm.matmul(per_image.transpose(1, 2), per_image, sum_batch=True, precision="ieee")
    moments = moments.cpu().numpy().astype(np.float64)
    count = n * oh * ow
    cov = moments[:k, :k] / count
    if center:
        mean = moments[k, :k] / count
        cov -= np.outer(mean, mean)
    eigenvalues, eigenvectors = np.linalg.eigh(cov)
    eigenvalues, eigenvectors = eigenvalues[::-1], eigenvectors[:, ::-1]
    filters = (eigenvectors / np.sqrt(eigenvalues + eps)).T.reshape(k, c, kh, kw)
    filters = np.concatenate([filters, -filters]).astype(np.float32)
    weight.memory.copy_(torch.from_numpy(filters).to(weight.device))
    amp.refresh_low_copies(weight)  # the 16-bit copy a layer reads under autocast
    return model
