"""A user's ResNet-style net, written as a PyTorch user would, trained step for step against
the same net in PyTorch float64: losses, weights and BatchNorm's running statistics, with SGD
(Nesterov) and with AdamW, then eval mode on the running statistics. Exact fp32 GEMMs."""
import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
import tnet.nn as nn
from tnet import optim
from helpers import assert_close

TOL = 1e-4  # fp32 against float64 through a few steps of training


def make(lib, c):
    """The same net in tnet (lib = tnet.nn) or PyTorch (lib = torch.nn)."""
    class Block(lib.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = lib.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = lib.BatchNorm2d(c)
            self.conv2 = lib.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = lib.BatchNorm2d(c)
            self.act = lib.GELU()

        def forward(self, x):
            y = self.act(self.bn1(self.conv1(x)))
            return self.act(x + self.bn2(self.conv2(y)))

    class Net(lib.Module):
        def __init__(self, c):
            super().__init__()
            self.stem = lib.Conv2d(3, c, 3, padding=1, bias=False)  # BN follows: a bias would get no gradient
            self.bn = lib.BatchNorm2d(c)
            self.act = lib.GELU(approximate="tanh")
            self.block = Block(c)
            self.head = lib.Linear(c, 10)

        def forward(self, x):
            x = self.block(self.act(self.bn(self.stem(x))))
            return self.head(x.mean((2, 3)))
    return Net(c)


def paired(c, seed=0):
    rng = np.random.default_rng(seed)
    net, ref = make(nn, c), make(torch.nn, c).double()
    state = {k: rng.standard_normal(v.shape).astype(np.float32) * (0.3 if v.ndim > 1 else 0.1)
             for k, v in net.state_dict().items() if v.dtype == np.float32}
    state.update({k: v for k, v in net.state_dict().items() if v.dtype != np.float32})
    for k in state:
        if k.endswith("running_var"):
            state[k] = np.abs(state[k]) + 0.5
    net.load_state_dict(state)
    ref.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in state.items()})
    return net, ref


OPTIMIZERS = {
    "sgd-nesterov": (lambda p: optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True)),
    "adamw": (lambda p: optim.AdamW(p, lr=1e-2, weight_decay=0.05),
              lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05)),
}


@pytest.mark.parametrize("c", [16, 6])  # channels-last (NHWC kernels) and NCHW activations
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_resnet_trains_step_for_step_like_pytorch(name, c, ieee):
    net, ref = paired(c)
    make_opt, make_ref_opt = OPTIMIZERS[name]
    opt, ref_opt = make_opt(net.parameters()), make_ref_opt(ref.parameters())
    rng = np.random.default_rng(1)
    for step in range(3):
        x = rng.standard_normal((4, 3, 8, 8))
        y = rng.integers(0, 10, 4)
        loss = F.cross_entropy(net(tnet.tensor(x)), tnet.tensor(y), label_smoothing=0.1)
        ref_loss = torch.nn.functional.cross_entropy(ref(torch.tensor(x)), torch.tensor(y), label_smoothing=0.1)
        assert_close(loss, ref_loss, TOL, f"{name} step {step}: loss")
        opt.zero_grad()
        ref_opt.zero_grad()
        loss.backward()
        ref_loss.backward()
        opt.step()
        ref_opt.step()
    ref_state = ref.state_dict()
    for k, v in net.state_dict().items():
        if k.endswith("num_batches_tracked"):
            assert int(v) == int(ref_state[k]) == 3, k
        else:
            assert_close(v, ref_state[k], TOL, f"{name}: {k} after 3 steps")
    net.eval()
    ref.eval()
    x = rng.standard_normal((5, 3, 8, 8))
    with tnet.no_grad(), torch.no_grad():
        assert_close(net(tnet.tensor(x)), ref(torch.tensor(x)), TOL, f"{name}: eval logits")
