"""nn.Module's features against torch.nn.Module: the module tree, parameters and buffers,
state_dict and load_state_dict, zero_grad and requires_grad_, layers without super().__init__()."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from helpers import TOL, assert_close


# a user's network, and the same network in torch


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False, weight_filler=nn.gaussian(0.3))
        self.bn = nn.BatchNorm2d(c)
        self.scale = nn.Parameter(np.full(1, 0.5, np.float32))
        self.register_buffer("calls", tnet.tensor(np.zeros(1)), persistent=False)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1, weight_filler=nn.gaussian(0.3))
        self.block = Block(4)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 2 * 2, 3, weight_filler=nn.gaussian(0.3)))
        self.again = self.block  # a shared module: listed once

    def forward(self, x):
        return self.head(self.pool(self.block(self.stem(x))))


class TorchBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(c)
        self.scale = torch.nn.Parameter(torch.full((1,), 0.5))
        self.register_buffer("calls", torch.zeros(1), persistent=False)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.block = TorchBlock(4)
        self.pool = torch.nn.MaxPool2d(2)
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 2 * 2, 3))
        self.again = self.block

    def forward(self, x):
        return self.head(self.pool(self.block(self.stem(x))))


def test_module_tree_matches_torch():
    net, ref = Net(), TorchNet()
    names = lambda pairs: [name for name, _ in pairs]
    assert names(net.named_modules()) == names(ref.named_modules())
    assert names(net.named_children()) == names(ref.named_children()) == ["stem", "block", "pool", "head"]
    assert names(net.named_parameters()) == names(ref.named_parameters())
    assert names(net.named_buffers()) == names(ref.named_buffers())
    assert list(net.state_dict()) == list(ref.state_dict())  # no "calls": not persistent
    assert names(net.block.named_parameters(prefix="b", recurse=False)) == ["b.scale"]
    assert len(list(net.modules())) == len(list(ref.modules())) == 9
    assert [type(m).__name__ for m in net.children()] == ["Conv2d", "Block", "MaxPool2d", "Sequential"]
    assert next(net.parameters()) is net.stem.weight
    assert set(map(id, net.buffers())) == {id(b) for b in (net.block.bn.running_mean, net.block.bn.running_var,
                                                           net.block.bn.num_batches_tracked, net.block.calls)}
    assert net.eval() is net and not any(m.training for m in net.modules())
    assert all(m.training for m in net.train().modules())
    assert "(bn): BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)" in repr(net)


def test_module_state_dict_round_trip(rng, ieee):
    """A training step changes the running statistics; their state_dict (numpy copies) loads
    into a fresh network, and so does torch's state_dict (tensors); eval outputs agree."""
    net = Net()
    x = tnet.tensor(rng.standard_normal((3, 3, 4, 4)))
    net(x).backward(np.ones((3, 3)))
    state = net.state_dict()
    assert state["block.bn.num_batches_tracked"] == 1 and state["block.bn.num_batches_tracked"].shape == ()
    assert not (state["block.bn.running_mean"] == 0).all()
    net(x)
    assert net.state_dict()["block.bn.num_batches_tracked"] == 2 and state["block.bn.num_batches_tracked"] == 1
    fresh = Net()
    result = fresh.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(v, state[k], err_msg=k)
    ref = TorchNet().double()
    fresh.load_state_dict(ref.state_dict())  # torch tensors
    fresh.eval(), ref.eval()
    assert_close(fresh(x), ref(torch.tensor(x.numpy(), dtype=torch.float64)), TOL["ieee"], "eval after loading")
    fresh.load_state_dict({k: tnet.tensor(v) for k, v in state.items()})  # tnet tensors
    assert (fresh.block.bn.running_var.numpy() == state["block.bn.running_var"]).all()


def test_load_state_dict_reports_every_problem():
    net = Net()
    del net.again  # else "again.bn.weight" would load after "block.bn.weight", into the same tensor
    state = net.state_dict()
    state["block.bn.running_mean"] = np.zeros(5, np.float32)
    state["extra"] = np.zeros(1)
    del state["stem.bias"]
    before = net.block.bn.weight.numpy().copy()
    state["block.bn.weight"] = before + 1
    with pytest.raises(ValueError, match=r'Missing key\(s\) in state_dict: "stem.bias"; Unexpected key\(s\) in state_dict: "extra"; '
                                         r"size mismatch for block.bn.running_mean"):
        net.load_state_dict(state)
    assert (net.block.bn.weight.numpy() == before).all()  # nothing copied
    with pytest.raises(ValueError, match="size mismatch"):
        net.load_state_dict(state, strict=False)
    state["block.bn.running_mean"] = np.ones(4, np.float32)
    missing, unexpected = net.load_state_dict(state, strict=False)
    assert missing == ["stem.bias"] and unexpected == ["extra"]
    assert (net.block.bn.running_mean.numpy() == 1).all() and (net.block.bn.weight.numpy() == before + 1).all()


def test_zero_grad_requires_grad_and_parameters(rng):
    net = Net()
    x = tnet.tensor(rng.standard_normal((2, 3, 4, 4)))
    net(x).backward(np.ones((2, 3)))
    used = [p for name, p in net.named_parameters() if name != "block.scale"]  # forward does not use it
    assert all(p.grad is not None for p in used)
    net.zero_grad(set_to_none=False)
    assert all((p.grad.numpy() == 0).all() for p in used)
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.requires_grad_(False) is net and not net(x).requires_grad
    net.requires_grad_()
    assert all(p.requires_grad for p in net.parameters()) and net(x).requires_grad
    net.block.register_parameter("scale", None)
    assert "block.scale" not in dict(net.named_parameters())
    with pytest.raises(TypeError, match="nn.Parameter or None"):
        net.register_parameter("w", tnet.tensor(np.ones(2)))
    with pytest.raises(TypeError, match="tnet.Tensor or None"):
        net.register_buffer("b", np.ones(2))
    t = tnet.tensor(np.ones(3))
    p = nn.Parameter(t, requires_grad=False)
    assert p.data is t.data and not p.requires_grad  # shares the memory, as torch's
    assert nn.Parameter(np.ones(2), 2.0, 0.0).lr_mult == 2.0  # Caffe's multipliers, positional


def test_modules_without_super_init_still_work():
    """Layers written without super().__init__() (tnet's own, say) keep working."""
    class Scale(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.ones(2))

        def forward(self, x):
            return x

    m = nn.Sequential(OrderedDict([("a", Scale()), ("b", nn.ReLU())]))
    assert list(m.state_dict()) == ["a.w"] and list(m.buffers()) == [] and len(m) == 2 and isinstance(m[1], nn.ReLU)
    m.a.register_buffer("count", tnet.tensor(np.zeros(1)))
    assert list(m.state_dict()) == ["a.w", "a.count"] and not m.eval().a.training
    relu = nn.ReLU()
    assert len(nn.Sequential(relu, relu)) == 2  # a layer given twice runs twice, as in torch
