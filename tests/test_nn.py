"""nn.Module's features against torch.nn.Module: the module tree, parameters and buffers,
state_dict and load_state_dict, zero_grad and requires_grad_, layers without super().__init__(),
the containers (Sequential, ModuleList, ModuleDict), add_module, apply, to and the dtype casts,
Parameter.data assignment; nn.utils's gradient clipping against torch.nn.utils."""
import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import amp, nn
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
    assert "(bn): BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)" in repr(net)


def test_deepcopy_of_a_parameter_as_torch():
    """torch's Parameter.__deepcopy__ copies the values and requires_grad only: a deep-copied model (a DQN's target
    network, an EMA copy) has no gradients, even where the original had them."""
    for lib in (tnet, torch):
        model = lib.nn.Linear(2, 3)
        model(lib.ones(1, 2)).sum().backward()
        model.bias.requires_grad_(False)
        model.weight.note = "x"
        target = copy.deepcopy(model)
        assert all(p.grad is None for p in target.parameters())
        assert type(target.weight) is type(model.weight) and not hasattr(target.weight, "note")
        assert target.weight.requires_grad and not target.bias.requires_grad
        with lib.no_grad():
            target.weight.add_(1.0)
        assert np.allclose(target.weight.detach().numpy(), model.weight.detach().numpy() + 1.0)
    tied = tnet.nn.Sequential(tnet.nn.Linear(2, 2), tnet.nn.Linear(2, 2))
    tied[1].weight = tied[0].weight
    copied = copy.deepcopy(tied)
    assert copied[1].weight is copied[0].weight and copied[0].weight is not tied[0].weight


def test_deepcopy_through_a_subclass_setstate_as_torch():
    """A layer or optimizer whose own __setstate__ calls super().__setstate__(state) (torch's Transformer layers,
    copied into repositories with their backward-compatible activation; AdaBelief's and RAdam's group defaults)
    deep-copies (an EMA model, a saved optimizer), as with torch's Module and Optimizer."""
    for lib in (tnet, torch):
        class Layer(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = lib.nn.Linear(2, 2)
                self.activation = lib.nn.functional.relu

            def __setstate__(self, state):
                if "activation" not in state:
                    state["activation"] = lib.nn.functional.relu
                super().__setstate__(state)

        class SGD(lib.optim.SGD):
            def __setstate__(self, state):
                super().__setstate__(state)
                for group in self.param_groups:
                    group.setdefault("nesterov", False)

        model = lib.nn.Sequential(Layer(), lib.nn.Linear(2, 1))
        ema = copy.deepcopy(model)
        assert ema[0].activation is lib.nn.functional.relu and ema[0].linear.weight is not model[0].linear.weight
        assert np.array_equal(ema[0].linear.weight.detach().numpy(), model[0].linear.weight.detach().numpy())
        optimizer = SGD(model.parameters(), lr=0.1, momentum=0.9)
        copied = copy.deepcopy(optimizer)
        assert copied.param_groups[0]["lr"] == 0.1 and copied.param_groups[0]["params"][0] is not model[0].linear.weight


def test_module_state_dict_round_trip(rng, ieee):
    """A training step changes the running statistics; a copy of its state_dict (tensors on the
    module's memory, as torch's) loads into a fresh network, and so does torch's state_dict;
    eval outputs agree."""
    net = Net()
    x = tnet.tensor(rng.standard_normal((3, 3, 4, 4)))
    net(x).backward(np.ones((3, 3)))
    state = copy.deepcopy(net.state_dict())
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
    with pytest.raises(ValueError, match=r'for Net:\n\tMissing key\(s\) in state_dict: "stem.bias". \n\tUnexpected key\(s\) in '
                                         r'state_dict: "extra". \n\tsize mismatch for block.bn.running_mean: copying a param with '
                                         r"shape torch.Size\(\[5\]\) from checkpoint, the shape in current model is torch.Size\(\[4\]\).$"):
        net.load_state_dict(state)
    assert (net.block.bn.weight.numpy() == before).all()  # nothing copied
    with pytest.raises(ValueError, match="size mismatch"):
        net.load_state_dict(state, strict=False)
    state["block.bn.running_mean"] = np.ones(4, np.float32)
    missing, unexpected = net.load_state_dict(state, strict=False)
    assert missing == ["stem.bias"] and unexpected == ["extra"]
    assert (net.block.bn.running_mean.numpy() == 1).all() and (net.block.bn.weight.numpy() == before + 1).all()


def test_load_from_state_dict_is_torchs_protocol():
    """state_dict()._metadata holds each module's _version by name, as torch's; load_state_dict calls
    each module's _load_from_state_dict with its prefix, metadata and the keys under its prefix, so an
    override can rename a legacy checkpoint's keys (nothing copied when a check fails, still); a
    BatchNorm checkpoint of version 1 (no num_batches_tracked) loads, as torch's."""
    class Renaming(nn.Sequential):
        _version = 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                  error_msgs):
            if local_metadata.get("version", None) is None:
                for name in ("weight", "bias"):
                    if f"{prefix}old.{name}" in state_dict:
                        state_dict[f"{prefix}0.{name}"] = state_dict.pop(f"{prefix}old.{name}")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                          error_msgs)

    for lib in (tnet, torch):
        net = lib.nn.Sequential(Renaming(lib.nn.Linear(2, 3)) if lib is tnet else lib.nn.Sequential(lib.nn.Linear(2, 3)),
                                lib.nn.BatchNorm1d(3))
        meta = net.state_dict()._metadata
        assert list(meta) == ["", "0", "0.0", "1"] and meta["1"] == {"version": 2} and meta[""] == {"version": 1}
    legacy = {"0.old.weight": np.ones((3, 2), np.float32), "0.old.bias": np.zeros(3, np.float32),
              "1.weight": np.full(3, 2, np.float32), "1.bias": np.zeros(3, np.float32),
              "1.running_mean": np.zeros(3, np.float32), "1.running_var": np.ones(3, np.float32)}
    net = nn.Sequential(Renaming(nn.Linear(2, 3)), nn.BatchNorm1d(3))
    with pytest.raises(ValueError, match=r"size mismatch for 1.weight"):
        net.load_state_dict({**legacy, "1.weight": np.ones(4, np.float32)})
    assert (net[0][0].weight.numpy() != 1).any()  # nothing copied
    assert net.load_state_dict(legacy) == ([], [])
    assert (net[0][0].weight.numpy() == 1).all() and (net[1].weight.numpy() == 2).all()
    with pytest.raises(ValueError, match=r'Unexpected key\(s\) in state_dict: "0.old.weight"'):
        state = net.state_dict()  # version 2 in its _metadata: no renaming
        state["0.old.weight"] = state.pop("0.0.weight")
        net.load_state_dict(state)


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
    assert p.memory is t.memory and not p.requires_grad  # shares the memory, as torch's
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


def same_tree(net, ref):
    """The same submodule names and layer types, and the same parameter names, in tnet and torch."""
    names = lambda pairs: [name for name, _ in pairs]
    assert names(net.named_parameters()) == names(ref.named_parameters())
    kinds = lambda model: [(n, type(m).__name__.removeprefix("Torch")) for n, m in model.named_modules()]
    assert kinds(net) == kinds(ref)


def test_module_list_matches_torch():
    """The same edits on a tnet and a torch ModuleList give the same tree (registered "0", "1"...)."""
    for lib in (nn, torch.nn):
        m = lib.ModuleList([lib.Linear(2, 3), lib.ReLU()])
        m.append(lib.Linear(3, 4))
        m.extend([lib.Tanh(), lib.Linear(4, 5)])
        m.insert(1, lib.Sigmoid())
        m.insert(5, lib.Linear(4, 4))  # not -1: torch's ModuleList.insert fails on a negative index
        m += [lib.Identity()]
        del m[2]
        m[0] = lib.Linear(2, 2)
        popped = m.pop(3)
        if lib is nn:
            net, net_popped = m, popped
        else:
            ref, ref_popped = m, popped
    same_tree(net, ref)
    assert type(net_popped).__name__ == type(ref_popped).__name__
    assert len(net) == len(ref) and [type(x).__name__ for x in net] == [type(x).__name__ for x in ref]
    assert isinstance(net[1:3], nn.ModuleList) and [type(x).__name__ for x in net[1:3]] == ["Sigmoid", "Linear"]
    assert net[-1] is list(net)[-1] and isinstance(net + nn.ModuleList([nn.ReLU()]), nn.ModuleList)
    with pytest.raises(IndexError, match="index 9 is out of range"):
        net[9]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        net.extend(3)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        net.append(3)
    with pytest.raises(NotImplementedError):
        net(tnet.tensor(np.ones(2)))  # no forward, as torch's


def test_module_dict_matches_torch():
    for lib in (nn, torch.nn):
        d = lib.ModuleDict({"conv": lib.Conv2d(1, 2, 3), "act": lib.ReLU()})
        d["fc"] = lib.Linear(2, 3)
        d.update([("head", lib.Linear(3, 4)), ("act", lib.Tanh())])
        d.update(OrderedDict(drop=lib.Dropout()))
        popped = d.pop("conv")
        if lib is nn:
            net, net_popped = d, popped
        else:
            ref, ref_popped = d, popped
    same_tree(net, ref)
    assert list(net) == list(ref) == list(net.keys()) and type(net_popped).__name__ == type(ref_popped).__name__
    assert [type(v).__name__ for v in net.values()] == [type(v).__name__ for v in ref.values()]
    assert [k for k, _ in net.items()] == list(ref.keys()) and "fc" in net and "conv" not in net and len(net) == 4
    assert isinstance(net["act"], nn.Tanh) and list(net.state_dict()) == list(ref.state_dict())
    del net["drop"]
    with pytest.raises(KeyError):
        net["drop"]
    with pytest.raises(KeyError, match="attribute 'training' already exists"):
        net["training"] = nn.ReLU()
    with pytest.raises(KeyError, match=r'contain "\.", got: a\.b'):
        net["a.b"] = nn.ReLU()
    with pytest.raises(TypeError, match="should be called with an iterable"):
        net.update(3)
    net.clear()
    assert len(net) == 0 and list(net.parameters()) == []


def test_sequential_container_api_matches_torch_and_still_fuses(monkeypatch, ieee):
    """append, insert, extend, pop, del, item assignment and slices as torch's; a Conv2d -> ReLU
    -> MaxPool2d chain built by append still runs as one fused op. In IEEE fp32: its four outputs,
    from whatever weights the worker's earlier tests leave the RNG at, can cancel past tf32's
    tolerance."""
    for lib in (nn, torch.nn):
        s = lib.Sequential(lib.Conv2d(3, 4, 3, padding=1))
        s.append(lib.ReLU())
        s.add_module("2", lib.MaxPool2d(2))  # numbered: torch's insert needs numbered layers
        s.extend([lib.Flatten(), lib.Linear(16, 3)])
        s.insert(1, lib.Identity())
        del s[1]
        s.insert(-1, lib.Identity())
        s.pop(5)
        s[4] = lib.Linear(16, 2)
        if lib is nn:
            net = s
        else:
            ref = s
    same_tree(net, ref)
    assert [n for n, _ in net[1:3].named_children()] == [n for n, _ in ref[1:3].named_children()] == ["1", "2"]
    calls = []
    forward = nn.Conv2d.forward
    monkeypatch.setattr(nn.Conv2d, "forward", lambda self, x, relu=False, pool=None:
                        calls.append((relu, type(pool).__name__)) or forward(self, x, relu, pool))
    ref.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in net.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    assert_close(net(tnet.tensor(x)), ref(torch.tensor(x)), TOL["ieee"], "appended layers")
    assert calls == [(True, "MaxPool2d")]
    with pytest.raises(IndexError):
        net.insert(9, nn.ReLU())


def test_add_module_and_apply_as_torch():
    net, ref = Net(), TorchNet()
    net.add_module("extra", nn.Linear(2, 2))
    ref.add_module("extra", torch.nn.Linear(2, 2))
    same_tree(net, ref)
    seen, ref_seen = [], []
    names = {id(m): n for n, m in net.named_modules()}
    ref_names = {id(m): n for n, m in ref.named_modules()}
    assert net.apply(lambda m: seen.append(names[id(m)])) is net
    ref.apply(lambda m: ref_seen.append(ref_names[id(m)]))
    assert seen == ref_seen and seen[-1] == ""  # children first, then the module itself
    for bad, error in [((3, nn.ReLU()), TypeError), (("x", 3), TypeError), (("a.b", nn.ReLU()), KeyError),
                       (("", nn.ReLU()), KeyError), (("forward", nn.ReLU()), KeyError)]:
        with pytest.raises(error):
            net.add_module(*bad)


def test_to_and_dtype_casts(rng):
    """to() on tnet's device is a no-op returning the module; another device raises. half() and
    bfloat16() keep fp32 master parameters and run the forward under autocast (16-bit outputs,
    as torch's half model gives); an enclosing autocast block wins; float() goes back."""
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 5))
    x = tnet.tensor(rng.standard_normal((2, 3, 4, 4)))
    full = net(x).numpy()
    for call in (lambda: net.to(tnet.DEVICE), lambda: net.to(tnet.DEVICE.type), lambda: net.to(x),
                 lambda: net.to(memory_format=torch.channels_last), lambda: net.float(),
                 lambda: net.cuda() if tnet.DEVICE.type == "cuda" else net.cpu()):
        assert call() is net
    assert net.to("cpu") is net
    other = "mps" if tnet.DEVICE.type == "cuda" else "cuda"
    with pytest.raises(ValueError, match=f"tnet keeps tensors on {tnet.DEVICE}"):
        net.to(other)
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        net.double()
    with pytest.raises(TypeError, match="only accepts floating point"):
        net.to(torch.int64)
    assert net.half() is net
    out = net(x)
    assert out.dtype == torch.float16 and all(p.dtype == torch.float32 for p in net.parameters())
    assert_close(out, full, TOL["fp16"] * 2, "half model")
    with tnet.autocast(dtype=torch.bfloat16):
        assert net(x).dtype == torch.bfloat16
    out.float().sum().backward()
    assert net[0].weight.grad.dtype == torch.float32
    assert net.bfloat16()(x).dtype == torch.bfloat16 and net.to(torch.float32)(x).dtype == torch.float32
    # type(dst_type), as cs231n's model.type(dtype): a dtype, a typed constructor (tnet's or torch's) or its name
    for t in (torch.float16, tnet.HalfTensor, torch.HalfTensor, "torch.cuda.HalfTensor"):
        assert net.float().type(t) is net and net(x).dtype == torch.float16
    for t in (torch.FloatTensor, tnet.cuda.FloatTensor, "torch.FloatTensor"):
        assert net.half().type(t)(x).dtype == torch.float32
    with pytest.raises(ValueError, match="invalid type"):
        net.type("torch.NoSuchTensor")


def test_parameter_data_assignment():
    """p.data = t as torch's: a tnet tensor's or a torch tensor's memory and dtype; the 16-bit
    copies follow, or are dropped for a new shape."""
    p = nn.Parameter(np.zeros((2, 3), np.float32))
    low = amp.low_copy(p, torch.float16)
    t = tnet.tensor(np.ones((2, 3)))
    p.data = t
    assert p.memory is t.memory and p.requires_grad and (low.float().cpu().numpy() == 1).all()
    p.data = torch.full((2, 3), 2.0, dtype=torch.bfloat16, device=tnet.DEVICE)  # a 16-bit parameter, as torch's
    assert p.dtype == torch.bfloat16 and (p.float().numpy() == 2).all() and (low.float().cpu().numpy() == 2).all()
    p.data = torch.zeros(4, device=tnet.DEVICE)
    assert p.shape == (4,) and amp.low_copies(p) == []
    with pytest.raises(TypeError, match="Tensor.data: expected a tnet.Tensor"):
        p.data = np.ones(3)


def test_data_is_a_tensor_autograd_does_not_see():
    """x.data as torch's: a tnet Tensor on x's memory, without gradient, whose in-place writes
    x's version counter does not see; tnet's ops take it (torch.max(out.data, 1))."""
    x = tnet.tensor([[1.0, 3.0], [4.0, 2.0]], requires_grad=True)
    d = x.data
    assert isinstance(d, tnet.Tensor) and not d.requires_grad and d.memory.data_ptr() == x.memory.data_ptr()
    values, indices = tnet.max(x.data, 1)
    assert values.tolist() == [3.0, 4.0] and indices.tolist() == [1, 0]
    version = x._version
    d.memory.fill_(0.0)  # a write through .data
    assert x._version == version and x.sum().item() == 0.0


def test_nn_functional_is_tnet_functional():
    """torch's import path ports: `import tnet.nn.functional as F` is tnet.functional itself."""
    import tnet.nn.functional as F1
    from tnet.nn import functional as F2
    assert F1 is F2 is tnet.functional


# ---- nn.utils: gradient clipping ----

def grads_pair(rng, shapes=((5, 3), (7,), (2, 3, 1, 2))):
    """Parameters with gradients (the last without one), in tnet and in torch float32, same values;
    the second parameter's gradient is a transposed view, as a gradient set by hand may be."""
    params = [nn.Parameter(rng.standard_normal(s)) for s in shapes]
    refs = [torch.tensor(p.numpy(), requires_grad=True) for p in params]
    for i, (p, r) in enumerate(zip(params[:-1], refs)):
        r.grad = torch.tensor(rng.standard_normal(p.shape), dtype=torch.float32)
        p.grad = tnet.Tensor(r.grad.clone().to(tnet.DEVICE))
    params[1].grad = tnet.Tensor(torch.stack([refs[1].grad] * 2).to(tnet.DEVICE).t()[:, 0])  # stride 2
    return params, refs


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.0, 0.5, "inf", -float("inf"), 0])
@pytest.mark.parametrize("max_norm", [0.7, 1e4])
def test_clip_grad_norm_is_torchs(norm_type, max_norm, rng):
    """The total norm returned and the gradients scaled in place (their memory kept), clipping
    (max_norm 0.7) or not; a parameter without gradient skipped."""
    params, refs = grads_pair(rng)
    ptrs = [p.grad.memory.data_ptr() for p in params[:-1]]
    total = nn.utils.clip_grad_norm_(params, max_norm, norm_type)
    ref = torch.nn.utils.clip_grad_norm_(refs, max_norm, norm_type)
    assert isinstance(total, tnet.Tensor) and total.shape == ()
    assert_close(total, ref, TOL["ieee"], f"total {norm_type}-norm")
    for i, (p, r) in enumerate(zip(params[:-1], refs)):
        assert_close(p.grad, r.grad, TOL["ieee"], f"gradient {i}")
    assert [p.grad.memory.data_ptr() for p in params[:-1]] == ptrs and params[-1].grad is None


@pytest.mark.parametrize("case", ["clip", "no clip", "inf", "nan"])
def test_clip_grad_norm_fused_is_torchs(case, rng, monkeypatch):
    """The multi-tensor kernels (FUSED_CLIP): dense float32 gradients of order 2,
    more tensors than a launch takes (several launches of the sums and the scaling), a channels-last one; an inf
    or NaN gradient as torch's (NaN where inf * 0 or a NaN factor); what they do not take (a strided gradient)
    goes the other way, and so does error_if_nonfinite."""
    monkeypatch.setattr(nn.utils, "FUSED_CLIP", True)
    launched = []
    monkeypatch.setattr(nn.utils._optim, "clip_grad_norm2_",
                        lambda g, m, real=nn.utils._optim.clip_grad_norm2_: launched.append(len(g)) or real(g, m))
    shapes = [(5, 3), (7,), (2, 3, 4, 4), (1,), (3, 2), (9,), (2, 2)]
    refs = [torch.tensor(rng.standard_normal(s), dtype=torch.float32, requires_grad=True) for s in shapes]
    for r in refs:
        r.grad = torch.tensor(rng.standard_normal(r.shape), dtype=torch.float32)
    refs[2].grad = refs[2].grad.contiguous(memory_format=torch.channels_last)
    if case in ("inf", "nan"):
        refs[1].grad[3] = float(case)
    params = [nn.Parameter(r.detach().numpy()) for r in refs]
    for p, r in zip(params, refs):
        p.grad = tnet.Tensor(r.grad.clone().to(tnet.DEVICE))
    max_norm = 1e4 if case == "no clip" else 0.7
    total = nn.utils.clip_grad_norm_(params, max_norm)
    ref = torch.nn.utils.clip_grad_norm_(refs, max_norm)
    assert launched == [len(shapes)] and isinstance(total, tnet.Tensor) and total.shape == ()
    if case in ("inf", "nan"):
        assert np.isnan(total.item()) == np.isnan(ref.item()) and (case == "nan" or total.item() == float("inf"))
        for p, r in zip(params, refs):
            np.testing.assert_array_equal(p.grad.numpy(), r.grad.numpy())
    else:
        assert_close(total, ref, TOL["ieee"], "total norm")
        for i, (p, r) in enumerate(zip(params, refs)):
            assert_close(p.grad, r.grad, TOL["ieee"], f"gradient {i}")
    params[1].grad = tnet.Tensor(torch.ones(14, device=tnet.DEVICE)[::2])  # strided: the kernels per gradient
    nn.utils.clip_grad_norm_(params, 1.0)
    params[0].grad = tnet.ones(5, 3)
    nn.utils.clip_grad_norm_(params[:1], 1.0, error_if_nonfinite=True)
    assert launched == [len(shapes)]


def test_clip_grad_norm_stays_on_the_device(rng):
    """No host read (aten's _local_scalar_dense) and no torch math: the norm and the clip factor
    stay on the device, also through get_total_norm and clip_grads_with_norm_; one tensor, or a
    generator, is taken as torch's."""
    from helpers import MEMORY_OPS, Recorder
    params, refs = grads_pair(rng)
    with Recorder() as rec:
        total = nn.utils.clip_grad_norm_(iter(params), 0.5)
        nn.utils.clip_grad_norm_(params[0], 0.5, "inf")
        nn.utils.clip_grads_with_norm_(params, 0.5, nn.utils.get_total_norm([p.grad for p in params[:-1]], 3.0))
        nn.utils.clip_grad_value_(params, 0.1)
    assert "_local_scalar_dense" not in rec.ops and rec.ops <= MEMORY_OPS, sorted(rec.ops)
    ref = torch.nn.utils.clip_grad_norm_(iter(refs), 0.5)
    torch.nn.utils.clip_grad_norm_(refs[0], 0.5, "inf")
    torch.nn.utils.clip_grads_with_norm_(refs, 0.5, torch.nn.utils.get_total_norm([r.grad for r in refs[:-1]], 3.0))
    torch.nn.utils.clip_grad_value_(refs, 0.1)
    assert_close(total, ref, TOL["ieee"], "total norm")
    for i, (p, r) in enumerate(zip(params[:-1], refs)):
        assert_close(p.grad, r.grad, TOL["ieee"], f"gradient {i}")


def test_clip_grad_norm_of_nonfinite_and_missing_gradients(rng):
    """An infinite gradient: RuntimeError with error_if_nonfinite, else torch's NaN and zeros; no
    gradients: a zero norm (an empty generator warns, as torch's)."""
    params, refs = grads_pair(rng)
    refs[0].grad[1, 2] = float("inf")
    params[0].grad.memory[1, 2] = float("inf")
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    total = nn.utils.clip_grad_norm_(params, 1.0)
    assert total.item() == torch.nn.utils.clip_grad_norm_(refs, 1.0).item() == float("inf")
    for p, r in zip(params[:-1], refs):
        np.testing.assert_array_equal(p.grad.numpy(), r.grad.numpy())  # NaN where inf * 0, else 0
    assert nn.utils.clip_grad_norm_([params[-1]], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="empty generator"):
        assert nn.utils.clip_grad_norm_((p for p in []), 1.0).item() == 0.0


def test_clip_grad_value_is_torchs(rng):
    params, refs = grads_pair(rng)
    versions = [p.grad._version for p in params[:-1]]
    assert nn.utils.clip_grad_value_(params, 0.5) is None
    torch.nn.utils.clip_grad_value_(refs, 0.5)
    for i, (p, r) in enumerate(zip(params[:-1], refs)):
        assert_close(p.grad, r.grad, TOL["ieee"], f"gradient {i}")
        assert p.grad._version > versions[i]
    import tnet.nn.utils
    assert tnet.nn.utils is nn.utils and nn.utils.clip_grad_norm_ is tnet.nn.utils.clip_grad_norm_


@pytest.mark.parametrize("kind", ["conv", "conv_no_bias", "conv_transpose", "linear"])
def test_fuse_batch_norm_eval(rng, kind, ieee):
    """nn.utils.fuse_conv_bn_eval and fuse_linear_bn_eval against torch's from the same weights and
    running statistics: the fused layer's weight, bias (a Parameter, requires_grad as torch's) and
    output; the inputs untouched; training mode raises AssertionError."""
    def build(lib):
        layer, bn = {"conv": lambda: (lib.nn.Conv2d(3, 5, 3, padding=1), lib.nn.BatchNorm2d(5)),
                     "conv_no_bias": lambda: (lib.nn.Conv2d(3, 5, 3, bias=False), lib.nn.BatchNorm2d(5)),
                     "conv_transpose": lambda: (lib.nn.ConvTranspose2d(3, 5, 2, stride=2), lib.nn.BatchNorm2d(5)),
                     "linear": lambda: (lib.nn.Linear(3, 5), lib.nn.BatchNorm1d(5))}[kind]()
        return layer, bn
    layer, bn = build(tnet)
    state = {k: v.numpy().copy() for k, v in [*layer.state_dict().items(), *(("bn." + k, v) for k, v in bn.state_dict().items())]}
    rng_state = {"bn.running_mean": rng.standard_normal(5), "bn.running_var": rng.random(5) + 0.5,
                 "bn.weight": rng.standard_normal(5), "bn.bias": rng.standard_normal(5)}
    state.update({k: v.astype(np.float32) for k, v in rng_state.items()})
    x = rng.standard_normal((2, 3, 4, 4) if kind != "linear" else (4, 3)).astype(np.float32)
    outs = []
    for lib, (layer, bn) in ((tnet, (layer, bn)), (torch, build(torch))):
        layer.load_state_dict({k: lib.tensor(v) for k, v in state.items() if not k.startswith("bn.")})
        bn.load_state_dict({k[3:]: lib.tensor(v) for k, v in state.items() if k.startswith("bn.")})
        fuse = lib.nn.utils.fuse_linear_bn_eval if kind == "linear" else lib.nn.utils.fuse_conv_bn_eval
        with pytest.raises(AssertionError, match="Fusion only for eval"):
            fuse(layer, bn)
        layer.eval(), bn.eval()
        fused = fuse(layer, bn, transpose=True) if kind == "conv_transpose" else fuse(layer, bn)
        assert fused is not layer and isinstance(fused.bias, lib.nn.Parameter)
        with lib.no_grad():
            ref = bn(layer(lib.tensor(x)))
            out = fused(lib.tensor(x))
        outs.append((out.numpy(), ref.numpy(), fused.weight.detach().numpy(), fused.bias.detach().numpy(),
                     fused.bias.requires_grad, layer.weight.detach().numpy()))
    (out, ref, w, b, grad, orig), (out_t, _, w_t, b_t, grad_t, _) = outs
    assert_close(out, ref, TOL["ieee"] * 10, "fused against unfused")
    for a, r, what in ((out, out_t, "output"), (w, w_t, "weight"), (b, b_t, "bias")):
        assert_close(a, r, TOL["ieee"], what)
    assert grad == grad_t and (orig == state["weight"]).all()


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect"])
def test_conv_forward_of_a_subclass(rng, padding_mode, ieee):
    """Conv2d._conv_forward(input, weight, bias), which subclasses call with another weight (timm's
    StdConv2d weight standardisation; Conv1d's too), as torch's: the layer's stride, padding (and
    padding_mode), dilation and groups; the gradient reaches the weight through the standardisation."""
    def build(lib):
        class StdConv2d(lib.nn.Conv2d):
            def forward(self, x):
                w = self.weight
                v, mu = w.var(dim=[1, 2, 3], keepdim=True, unbiased=False), w.mean(dim=[1, 2, 3], keepdim=True)
                return self._conv_forward(x, (w - mu) / (v + 1e-5).sqrt(), self.bias)

        class StdConv1d(lib.nn.Conv1d):
            def forward(self, x):
                return self._conv_forward(x, self.weight * 2, None)
        return (StdConv2d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2, padding_mode=padding_mode),
                StdConv1d(3, 5, 3, padding=2, dilation=2))
    layers = build(tnet)
    x2, x1 = rng.standard_normal((2, 4, 7, 7)).astype(np.float32), rng.standard_normal((2, 3, 9)).astype(np.float32)
    outs = []
    for lib, (conv2, conv1) in ((tnet, layers), (torch, build(torch))):
        if lib is torch:
            for ref, layer in zip((conv2, conv1), layers):
                ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in layer.state_dict().items()})
        y2, y1 = conv2(lib.tensor(x2)), conv1(lib.tensor(x1))
        (y2.sum() + (y1 ** 2).sum()).backward()
        outs.append([y2.detach().numpy(), y1.detach().numpy(), conv2.weight.grad.numpy(), conv1.weight.grad.numpy()])
    for a, r, what in zip(*outs, ("2-d output", "1-d output", "2-d weight gradient", "1-d weight gradient")):
        assert_close(a, r, TOL["ieee"] * 10, what)


def test_load_state_dict_result_shows_as_torchs():
    """load_state_dict's result: (missing_keys, unexpected_keys), `<All keys matched successfully>`
    where both are empty, torch's repr otherwise."""
    from tnet import nn as tnn
    results = []
    for lib_nn in (tnn, torch.nn):
        model = lib_nn.Linear(2, 3)
        state = dict(model.state_dict())
        matched = model.load_state_dict(state)
        state["extra"] = state["bias"]
        del state["weight"]
        partial = model.load_state_dict(state, strict=False)
        results.append([repr(matched), str(matched), repr(partial), list(partial), partial.missing_keys])
    assert results[0] == results[1], results


def test_load_state_dict_assign_as_torchs():
    """assign=True: the module's tensors take the state dict's memory (a later write to the dict's
    tensor shows in the model), requires_grad the module's, as torch's; tnet keeps the Parameter
    objects (torch makes new ones) and their dtype, and a transposed value comes in dense."""
    for lib in (tnet, torch):
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2))
        model[0].bias.requires_grad_(False)
        state = {k: lib.zeros(v.shape) for k, v in model.state_dict().items() if "num_batches" not in k}
        state["0.weight"] = lib.ones(2, 3)
        assert model.load_state_dict(state, assign=True).missing_keys == []  # num_batches_tracked: 0, as torch
        state["0.weight"].add_(1)
        assert model[0].weight.sum().item() == 12 and model[0].weight.requires_grad
        assert not model[0].bias.requires_grad and model[1].running_mean.sum().item() == 0
        model(lib.ones(4, 3)).sum().backward()
        assert model[0].weight.grad.shape == (2, 3)
    linear = nn.Linear(3, 2)
    weight = linear.weight
    linear.load_state_dict({"weight": tnet.ones(3, 2).t(), "bias": tnet.zeros(2)}, assign=True)
    assert linear.weight is weight and weight.is_contiguous() and weight.sum().item() == 6


def test_assigning_a_tensor_to_a_parameter_raises_as_torchs():
    """`m.weight = tensor` raises torch's TypeError (a parameter takes a Parameter or None); a
    Parameter, None, `.data` and a deleted parameter's name take what they take in torch."""
    from tnet import nn as tnn
    for lib, lib_nn in ((tnet, tnn), (torch, torch.nn)):
        m = lib_nn.Linear(2, 2)
        with pytest.raises(TypeError, match="cannot assign .* as parameter 'weight'"):
            m.weight = lib.ones(2, 2)
        m.weight = lib_nn.Parameter(lib.zeros(2, 2))
        m.weight.data = lib.ones(2, 2)
        m.bias = None
        assert [n for n, _ in m.named_parameters()] == ["weight"] and m.weight.sum().item() == 4
        del m.weight
        m.weight = lib.ones(2, 2)  # a plain attribute once the parameter is gone (prune's and weight_norm's way)
        assert [n for n, _ in m.named_parameters()] == []
