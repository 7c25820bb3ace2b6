"""The modules and functional ops of CIFAR/MNIST scripts: parameter containers, pixel and channel
shuffles, 1-D pooling, the margin and embedding losses, matrix products, local response norm,
unfold/fold and Bilinear. Forward and gradients against torch in float64, on small odd shapes."""
import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from helpers import MEMORY_OPS, TOL, Recorder, assert_close, check, leaf

TF = torch.nn.functional


def test_parameter_list_and_dict_register_as_torchs():
    def build(lib, tensor):
        m = lib.nn.Module()
        m.pl = lib.nn.ParameterList([lib.nn.Parameter(tensor(np.ones(2))), tensor(np.zeros(3))])
        m.pl.append(tensor(np.ones(1)))
        m.pd = lib.nn.ParameterDict({"b": tensor(np.ones(1)), "a": tensor(np.ones(2))})
        m.pd["c"] = lib.nn.Parameter(tensor(np.ones(4)))
        m.pd.update([("b", tensor(np.zeros(5)))])
        del m.pd["a"]
        return m
    ours, theirs = build(tnet, tnet.tensor), build(torch, lambda a: torch.tensor(a, dtype=torch.float32))
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in ours.parameters())
    assert len(ours.pl) == 3 and ours.pl[-1].shape == (1,) and len(ours.pl[1:]) == 2
    assert list(ours.pd) == ["b", "c"] and "c" in ours.pd and ours.pd["b"].shape == (5,)
    ours.load_state_dict({k: np.full(v.shape, 2.0) for k, v in ours.state_dict().items()})
    assert ours.pd["c"].numpy().tolist() == [2.0] * 4


def test_train_and_eval_call_each_childs_train():
    """model.eval() calls each child's own train(False), as torch's: loralib's Linear overrides train to
    merge its low-rank weights in eval mode and unmerge them in training mode."""
    def build(lib):
        class Merging(lib.nn.Linear):
            calls = []

            def train(self, mode=True):
                self.calls.append(mode)
                return super().train(mode)
        return lib.nn.Sequential(lib.nn.Sequential(Merging(2, 2)), lib.nn.ReLU()), Merging.calls
    for lib in (tnet, torch):
        model, calls = build(lib)
        model.eval()
        model.train()
        assert calls == [False, True] and all(m.training for m in model.modules()), lib
        model.eval()
        assert not any(m.training for m in model.modules())


def test_pixel_and_channel_shuffles_as_torch(rng):
    x, xr = leaf(rng, 2, 18, 3, 5, channels_last=True)  # a channels-last activation reads as NCHW
    check(lambda a: F.pixel_shuffle(a, 3), lambda a: TF.pixel_shuffle(a, 3), [(x, xr)], rng)
    check(lambda a: nn.PixelUnshuffle(3)(nn.PixelShuffle(3)(a)) * 2, lambda a: a * 2, [(x, xr)], rng)
    y, yr = leaf(rng, 3, 2, 6, 9)
    check(lambda a: F.pixel_unshuffle(a, 3), lambda a: TF.pixel_unshuffle(a, 3), [(y, yr)], rng)
    check(lambda a: nn.ChannelShuffle(6)(a), lambda a: torch.nn.ChannelShuffle(6)(a), [(x, xr)], rng)
    with pytest.raises(RuntimeError, match="divisible by the square"):
        F.pixel_shuffle(y, 2)
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(y, 4)


@pytest.mark.parametrize("channels", [3, 17])  # 17: the 2-D kernels keep it channels-last
def test_pooling_1d_as_torch(rng, channels):
    x, xr = leaf(rng, 2, channels, 11)
    for ours, theirs in [(nn.AvgPool1d(3, 2, 1), torch.nn.AvgPool1d(3, 2, 1)),
                         (nn.AvgPool1d(4, 3, 2, True, False), torch.nn.AvgPool1d(4, 3, 2, True, False)),
                         (nn.MaxPool1d(4, 3, 2, ceil_mode=True), torch.nn.MaxPool1d(4, 3, 2, ceil_mode=True)),
                         (nn.AdaptiveAvgPool1d(4), torch.nn.AdaptiveAvgPool1d(4)),
                         (nn.AdaptiveMaxPool1d(5), torch.nn.AdaptiveMaxPool1d(5))]:
        check(ours, theirs, [(x, xr)], rng)
    _, i = F.max_pool1d(x, 3, 2, 1, return_indices=True)
    _, j = TF.max_pool1d(xr, 3, 2, 1, return_indices=True)
    _, k = nn.AdaptiveMaxPool1d(4, return_indices=True)(x)
    _, m = TF.adaptive_max_pool1d(xr, 4, return_indices=True)
    assert i.dtype == torch.int64 and np.array_equal(i.numpy(), j.numpy()) and np.array_equal(k.numpy(), m.numpy())
    u, ur = leaf(rng, channels, 7)  # unbatched [C, L]
    check(lambda a: F.avg_pool1d(a, 2), lambda a: TF.avg_pool1d(a, 2), [(u, ur)], rng)
    with pytest.raises(RuntimeError, match="at most half"):
        F.max_pool1d(x, 3, padding=2)


def test_losses_as_torch(rng):
    x, xr = leaf(rng, 4, 5)
    y, yr = leaf(rng, 4, 5)
    z, zr = leaf(rng, 4, 5)
    sign = np.sign(rng.standard_normal((4, 5)))
    s, sr = tnet.tensor(sign), torch.tensor(sign)
    s1, s1r = tnet.tensor(sign[:, 0]), torch.tensor(sign[:, 0])
    for reduction in ("mean", "sum", "none"):
        check(lambda a, b: nn.HuberLoss(reduction, 0.7)(a, b),
              lambda a, b: torch.nn.HuberLoss(reduction, 0.7)(a, b), [(x, xr), (y, yr)], rng)
    check(lambda a, b: nn.MarginRankingLoss(0.3)(a, b, s), lambda a, b: TF.margin_ranking_loss(a, b, sr, 0.3),
          [(x, xr), (y, yr)], rng)
    check(lambda a: nn.HingeEmbeddingLoss(0.5, reduction="sum")(a, s),
          lambda a: TF.hinge_embedding_loss(a, sr, 0.5, reduction="sum"), [(x, xr)], rng)
    check(lambda a: nn.SoftMarginLoss()(a, s), lambda a: TF.soft_margin_loss(a, sr), [(x, xr)], rng)
    check(lambda a, b: nn.CosineEmbeddingLoss(0.2, reduction="none")(a, b, s1),
          lambda a, b: TF.cosine_embedding_loss(a, b, s1r, 0.2, reduction="none"), [(x, xr), (y, yr)], rng)
    check(lambda a, b, c: nn.TripletMarginLoss(swap=True)(a, b, c),
          lambda a, b, c: TF.triplet_margin_loss(a, b, c, swap=True), [(x, xr), (y, yr), (z, zr)], rng)
    check(lambda a, b, c: F.triplet_margin_loss(a, b, c, 0.5, p=1, reduction="sum"),
          lambda a, b, c: TF.triplet_margin_loss(a, b, c, 0.5, p=1, reduction="sum"), [(x, xr), (y, yr), (z, zr)], rng)
    check(lambda a, b: nn.PairwiseDistance(keepdim=True)(a, b), lambda a, b: TF.pairwise_distance(a, b, keepdim=True),
          [(x, xr), (y, yr)], rng)
    check(lambda a, b: nn.CosineSimilarity(0)(a, b), lambda a, b: TF.cosine_similarity(a, b, 0), [(x, xr), (y, yr)],
          rng)
    logp = lambda t, mod: mod.log_softmax(t, 1)
    check(lambda a, b: nn.KLDivLoss(reduction="batchmean")(logp(a, F), F.softmax(b, 1)),
          lambda a, b: TF.kl_div(logp(a, torch), torch.softmax(b, 1), reduction="batchmean"), [(x, xr), (y, yr)], rng)
    with pytest.raises(RuntimeError, match="non-positive"):
        F.huber_loss(x, y, delta=0)


def test_matrix_products_as_torch(rng, ieee):
    a, ar = leaf(rng, 3, 5)
    b, br = leaf(rng, 5, 4)
    c, cr = leaf(rng, 4)
    v, vr = leaf(rng, 5)
    check(lambda p, q, r: tnet.addmm(r, p, q, beta=0.5, alpha=2), lambda p, q, r: torch.addmm(r, p, q, beta=0.5, alpha=2),
          [(a, ar), (b, br), (c, cr)], rng)
    check(lambda p, q, r: r.addmm(p, q, beta=0), lambda p, q, r: r.addmm(p, q, beta=0), [(a, ar), (b, br), (c, cr)], rng)
    check(lambda p, q: p.mm(q), lambda p, q: p.mm(q), [(a, ar), (b, br)], rng)
    check(lambda p, q: tnet.mv(p, q), lambda p, q: torch.mv(p, q), [(a, ar), (v, vr)], rng)
    check(lambda p, q: tnet.outer(p, q), lambda p, q: torch.outer(p, q), [(v, vr), (c, cr)], rng)
    check(lambda p: p.dot(p), lambda p: p.dot(p), [(v, vr)], rng)
    x, xr = leaf(rng, 2, 3, 5)
    y, yr = leaf(rng, 2, 5, 4)
    z, zr = leaf(rng, 3, 1)
    check(lambda p, q: tnet.bmm(p, q), lambda p, q: torch.bmm(p, q), [(x, xr), (y, yr)], rng)
    check(lambda p, q, r: tnet.baddbmm(r, p, q, alpha=0.5), lambda p, q, r: torch.baddbmm(r, p, q, alpha=0.5),
          [(x, xr), (y, yr), (z, zr)], rng)
    w, wr = leaf(rng, 3, 5, 4)
    h, hr = leaf(rng, 3)
    e, er = leaf(rng, 3, 4)
    check(lambda p, q, r, s: F.bilinear(p, q, r, s), lambda p, q, r, s: TF.bilinear(p, q, r, s),
          [(a, ar), (e, er), (w, wr), (h, hr)], rng)
    assert nn.Bilinear(5, 4, 3).weight.shape == (3, 5, 4)
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        tnet.mm(v, b)
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        tnet.dot(v, c)


def test_dot_is_fp32_at_tf32_precision(rng):
    """torch.dot is a BLAS dot, never tf32 (LBFGS's curvature pairs are dots): tnet's is an fp32 sum
    under the default tf32 precision too (tf32's operands would be ~1e-3 off; on the GPU only: the
    interpreter's products are fp32 anyway)."""
    previous = tnet.set_precision("tf32")
    try:
        v, vr = leaf(rng, 301)
        c, cr = leaf(rng, 301)
        check(lambda p, q: tnet.dot(p, q), lambda p, q: torch.dot(p, q), [(v, vr), (c, cr)], rng)
    finally:
        tnet.set_precision(previous)
    with pytest.raises(RuntimeError, match="same dtype"):
        tnet.dot(v, c.half())


def test_local_response_norm_as_torch(rng):
    x, xr = leaf(rng, 2, 7, 3, 4, channels_last=True)
    check(nn.LocalResponseNorm(3, alpha=0.01), torch.nn.LocalResponseNorm(3, alpha=0.01), [(x, xr)], rng, TOL["ieee"] * 10)
    y, yr = leaf(rng, 2, 5, 6)
    check(lambda a: F.local_response_norm(a, 4, 0.1, 0.5, 2.0), lambda a: TF.local_response_norm(a, 4, 0.1, 0.5, 2.0),
          [(y, yr)], rng, TOL["ieee"] * 10)
    with pytest.raises(ValueError, match="3D or higher"):
        F.local_response_norm(tnet.randn(2, 3), 2)


def test_unfold_fold_as_torch(rng):
    args = dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    x, xr = leaf(rng, 2, 3, 6, 5)
    check(lambda a: nn.Unfold(**args)(a), lambda a: torch.nn.Unfold(**args)(a), [(x, xr)], rng)
    cols, colsr = leaf(rng, 2, 18, 18)
    check(lambda a: nn.Fold((6, 5), **args)(a), lambda a: torch.nn.Fold((6, 5), **args)(a), [(cols, colsr)], rng)
    u, ur = leaf(rng, 3, 4, 4)  # unbatched
    check(lambda a: F.fold(F.unfold(a, 2), 4, 2), lambda a: TF.fold(TF.unfold(a, 2), 4, 2), [(u, ur)], rng)
    with pytest.raises(RuntimeError, match="sliding blocks"):
        F.fold(tnet.randn(2, 8, 5), (3, 3), 2)


def test_index_add_as_torch(rng):
    x, xr = leaf(rng, 3, 4)
    s, sr = leaf(rng, 3, 5)
    idx = [0, 3, 0, 1, 3]
    check(lambda a, b: tnet.index_add(a, 1, tnet.tensor(idx), b, alpha=2),
          lambda a, b: torch.index_add(a, 1, torch.tensor(idx), b, alpha=2), [(x, xr), (s, sr)], rng)
    with pytest.raises(IndexError):
        tnet.index_add(x, 1, tnet.tensor([0, 1, 2, 3, 4]), s)
    assert_close(x.index_add(0, tnet.tensor([2]), tnet.ones(1, 4)), xr.detach().index_add(0, torch.tensor([2]),
                                                                                         torch.ones(1, 4).double()),
                 TOL["ieee"])


def test_new_ops_use_torch_for_memory_only(rng):
    """The ops that allocate or cast beside their kernels (the rest compose tnet's ops)."""
    x = tnet.tensor(rng.standard_normal((2, 4, 4, 6)), requires_grad=True)
    v = tnet.tensor(rng.standard_normal(6), requires_grad=True)
    with Recorder() as rec:
        s = x.reshape(2, 4, 24)
        parts = [F.pixel_shuffle(x, 2), F.max_pool1d(s, 3, 2, 1, return_indices=True)[0],
                 F.avg_pool1d(s, 3, 2, 1, count_include_pad=False), F.fold(F.unfold(x, 2, padding=1), (4, 6), 2, padding=1),
                 tnet.addmm(v, x[0, 0].t(), x[0, 1], beta=0)]
        sum(p.sum() for p in parts).backward()
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_layer_size_attributes():
    """in_channels/out_channels/kernel_size and in_features/out_features, as torch's (init loops and
    `model.fc.in_features` read them), also on a lazy layer after its first call."""
    import torch
    for lib in (tnet, torch):
        c = lib.nn.Conv2d(4, 6, (3, 1), groups=2)
        t = lib.nn.ConvTranspose2d(4, 6, 3, groups=2)
        c1, fc = lib.nn.Conv1d(3, 5, 2), lib.nn.Linear(7, 2)
        assert (c.in_channels, c.out_channels, c.kernel_size) == (4, 6, (3, 1))
        assert (t.in_channels, t.out_channels, t.kernel_size) == (4, 6, (3, 3))
        assert (c1.in_channels, c1.out_channels, c1.kernel_size, fc.in_features, fc.out_features) == (3, 5, (2,), 7, 2)
        assert (c.transposed, c.output_padding, c1.output_padding, t.transposed, t.output_padding) == (
            False, (0, 0), (0,), True, (0, 0))
    lazy, lazy_fc = tnet.nn.LazyConv2d(3, 2), tnet.nn.LazyLinear(4)
    lazy(tnet.ones(1, 5, 4, 4))
    lazy_fc(tnet.ones(2, 6))
    assert (lazy.in_channels, lazy.kernel_size, lazy_fc.in_features) == (5, (2, 2), 6)



def test_layer_size_attributes_take_assignment():
    """torch's size attributes are plain attributes a script may set: slimmable networks' SlimmableConv2d sets
    in_channels, out_channels and groups before convolving a slice of its weight (it raised AttributeError: property
    has no setter); the value set is read back, as torch's, and a layer not written to still reads its weight."""
    import torch
    for lib in (tnet, torch):
        c, t, fc = lib.nn.Conv2d(4, 6, 3), lib.nn.ConvTranspose2d(4, 6, 3), lib.nn.Linear(7, 2)
        c.in_channels, c.out_channels, c.kernel_size = 2, 3, (1, 1)
        t.in_channels, t.out_channels, fc.in_features, fc.out_features = 1, 5, 3, 1
        assert (c.in_channels, c.out_channels, c.kernel_size, t.in_channels, t.out_channels) == (2, 3, (1, 1), 1, 5)
        assert (fc.in_features, fc.out_features, lib.nn.Linear(7, 2).in_features) == (3, 1, 7)
        assert tuple(c.weight.shape) == (6, 4, 3, 3)

def test_conv_argument_attributes_are_tuples():
    """stride, padding, dilation (and output_padding) as torch keeps them: tuples, or padding's string
    (EfficientNet's same-padding convs take len(self.stride))."""
    import torch
    for make in (lambda lib: lib.nn.Conv2d(2, 2, 3, 2, 1, dilation=(1, 2)),
                 lambda lib: lib.nn.Conv2d(2, 2, 3, padding="same"),
                 lambda lib: lib.nn.Conv1d(2, 2, 3, 2, 1), lambda lib: lib.nn.ConvTranspose2d(2, 2, 3, 2, 1, 1),
                 lambda lib: lib.nn.ConvTranspose1d(2, 2, 3, (2,), 1, 1)):
        mods = make(tnet), make(torch)
        names = ("stride", "padding", "dilation") + (("output_padding",) if "Transpose" in type(mods[1]).__name__ else ())
        values = [[getattr(m, a) for a in names] for m in mods]
        assert values[0] == values[1], values


def test_registries_edit_the_module():
    """_modules, _parameters and _buffers, which scripts read and edit for surgery, as torch's."""
    import torch
    for lib in (tnet, torch):
        net = lib.nn.Sequential(lib.nn.Conv2d(1, 2, 1), lib.nn.ReLU(), lib.nn.BatchNorm2d(2))
        net._modules["1"] = lib.nn.Identity()
        assert isinstance(net[1], lib.nn.Identity) and list(net._modules) == ["0", "1", "2"]
        del net._modules["2"]
        assert len(net) == 2 and list(net._modules.keys()) == ["0", "1"]
        conv = net[0]
        assert list(conv._parameters) == ["weight", "bias"] and conv._parameters["bias"] is conv.bias
        conv._parameters["bias"] = None
        assert conv.bias is None and len(list(conv.parameters())) == 1
        bn = lib.nn.BatchNorm2d(2)
        assert list(bn._buffers) == ["running_mean", "running_var", "num_batches_tracked"]
        bn._buffers["extra"] = lib.zeros(2)
        assert "extra" in bn.state_dict() and "extra" in dict(bn.named_buffers())


def test_members_do_not_hide_module_methods():
    """A submodule named as a Module method leaves the method in place, as torch's (N-BEATS'
    `self.parameters = nn.ParameterList(...)`); a parameter or buffer may not take the name, and any other attribute
    of it hides the method, as in torch."""
    import torch
    for lib in (tnet, torch):
        net = lib.nn.Module()
        net.parameters = [lib.nn.Parameter(lib.ones(2))]
        assert isinstance(net.parameters, list)
        net.parameters = lib.nn.ParameterList(net.parameters)
        net.train = lib.nn.Sequential(lib.nn.Linear(2, 2))
        assert callable(net.parameters) and len(list(net.parameters())) == 3 and net.train() is net
        assert list(net.state_dict()) == ["parameters.0", "train.0.weight", "train.0.bias"]
        with pytest.raises(KeyError, match="attribute 'buffers' already exists"):  # a parameter or buffer may not
            net.buffers = lib.nn.Parameter(lib.ones(3))
        with pytest.raises(KeyError, match="attribute 'buffers' already exists"):
            net.register_buffer("buffers", lib.ones(3))
        net.eval = lambda: "patched"
        assert net.eval() == "patched"
        del net.eval
        assert net.eval() is net


def test_assignments_to_registered_names_as_torch():
    """A parameter's name takes a Parameter or None, a submodule's a Module or None, a buffer's a tensor or None
    (TypeError otherwise, as torch's); a Parameter or Module assigned to a buffer's name takes it out of the buffers
    (a positional table made learnable by `m.pe = nn.Parameter(m.pe)`); a parameter or submodule set to None stays
    in _parameters or _modules (a layer's missing bias too), and del unregisters each kind, as torch's."""
    import torch
    for lib in (tnet, torch):
        m = lib.nn.Module()
        m.p, m.sub = lib.nn.Parameter(lib.ones(1)), lib.nn.Linear(1, 1)
        m.register_buffer("pe", lib.zeros(2))
        m.register_buffer("table", lib.zeros(2))
        for name, value, kind in [("p", lib.nn.Linear(1, 1), "parameter"), ("p", 3, "parameter"),
                                  ("sub", lib.ones(1), "child module"), ("sub", 5, "child module"), ("pe", 5, "buffer")]:
            with pytest.raises(TypeError, match=f"cannot assign '.*' as {kind} '{name}'"):
                setattr(m, name, value)
        m.pe = lib.nn.Parameter(m.pe)
        m.table = lib.nn.Identity()
        assert [n for n, _ in m.named_buffers()] == [] and sorted(n for n, _ in m.named_parameters()) == [
            "p", "pe", "sub.bias", "sub.weight"]
        assert sorted(m.state_dict()) == ["p", "pe", "sub.bias", "sub.weight"]
        m.p, m.sub = None, None  # still registered, as None, as a layer's missing bias is
        assert m.p is None and m.sub is None and sorted(m.state_dict()) == ["pe"]
        assert list(m._parameters) == ["p", "pe"] and list(m._modules) == ["sub", "table"] and m._parameters["p"] is None
        with pytest.raises(TypeError, match="as child module 'sub'"):
            m.sub = lib.ones(1)
        m.register_buffer("buf", lib.ones(1))
        del m.p, m.sub, m.buf
        assert list(m._parameters) == ["pe"] and list(m._modules) == ["table"]
        m.p, m.sub, m.buf = 1, 2, lib.ones(1)  # plain attributes after del, as torch's
        assert [n for n, _ in m.named_buffers()] == [] and sorted(m.state_dict()) == ["pe"]
        layers = [lib.nn.Linear(2, 2, bias=False), lib.nn.Conv2d(1, 1, 1, bias=False), lib.nn.LayerNorm(2, bias=False),
                  lib.nn.GroupNorm(1, 2, affine=False), lib.nn.LSTMCell(2, 2, bias=False),
                  lib.nn.MultiheadAttention(4, 2, bias=False, kdim=3, vdim=3)]
        assert [list(layer._parameters) for layer in layers] == [
            ["weight", "bias"], ["weight", "bias"], ["weight", "bias"], ["weight", "bias"],
            ["weight_ih", "weight_hh", "bias_ih", "bias_hh"],
            ["q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_weight", "in_proj_bias"]]


def test_layer_reprs_are_torchs():
    """print(model) shows torch's text for the common layers (the arguments that differ from defaults)."""
    import torch.nn as tnn
    for make in (lambda m: m.Conv1d(3, 4, 3, stride=2), lambda m: m.Conv2d(3, 4, 3, padding=1, bias=False),
                 lambda m: m.Conv2d(4, 8, 3, 2, 1, groups=2, dilation=2), lambda m: m.Conv2d(3, 4, 3, padding="same"),
                 lambda m: m.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"),
                 lambda m: m.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1), lambda m: m.Linear(3, 4, bias=False),
                 lambda m: m.MaxPool2d(3, 2, 1), lambda m: m.AvgPool2d(2),
                 # ModuleList's runs of equal reprs as "(0-2): 3 x ...", a module registered twice and a None
                 lambda m: m.ModuleList([m.Linear(2, 2) for _ in range(3)] + [m.ReLU()] + [m.Sequential(m.Tanh())] * 2),
                 lambda m: m.ModuleList(), lambda m: (lambda lin: m.Sequential(lin, lin))(m.Linear(1, 1)),
                 lambda m: (lambda s: (s.register_module("skip", None), s)[1])(m.Sequential(m.ReLU()))):
        assert repr(make(nn)) == repr(make(tnn))


def test_global_module_hooks_as_torch():
    """register_module_forward_pre_hook/_forward_hook/_full_backward_hook/_pre_hook run for every
    module's call, before its own hooks, in torch's order; a returned value replaces args/output."""
    def run(lib):
        mm = lib.nn.modules.module
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
        seen = []
        model[2].register_forward_hook(lambda m, a, o: seen.append("own"))
        handles = [mm.register_module_forward_pre_hook(lambda m, a: seen.append("pre " + type(m).__name__)),
                   mm.register_module_forward_hook(lambda m, a, o: seen.append("post " + type(m).__name__)),
                   mm.register_module_full_backward_pre_hook(lambda m, g: seen.append("bpre " + type(m).__name__)),
                   mm.register_module_full_backward_hook(lambda m, gi, go: seen.append("bwd " + type(m).__name__))]
        try:
            x = lib.ones(2, 3, requires_grad=True)
            model(x).sum().backward()
            doubled = mm.register_module_forward_hook(lambda m, a, o: o * 2 if isinstance(m, lib.nn.ReLU) else None)
            y = model[1](lib.ones(2))
            doubled.remove()
        finally:
            for h in handles:
                h.remove()
        seen_after = len(seen)
        model(x)
        return seen, seen_after == len(seen) - 1, y.tolist()
    ours, theirs = run(tnet), run(torch)
    assert ours == theirs
    with pytest.raises(NotImplementedError):
        nn.modules.module.register_module_forward_hook(lambda m, a, o: None, with_kwargs=True)


def test_state_dict_hooks_and_extra_state_as_torch():
    def run(lib):
        class Counter(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin, self.steps = lib.nn.Linear(2, 2), 7

            def get_extra_state(self):
                return {"steps": self.steps}

            def set_extra_state(self, state):
                self.steps = state["steps"]
        lib.manual_seed(0)
        model = lib.nn.Sequential(Counter(), lib.nn.Linear(2, 1))
        calls = []
        model[0].register_state_dict_pre_hook(lambda m, prefix, keep: calls.append(("pre", prefix, keep)))
        model[0].register_state_dict_post_hook(lambda m, sd, prefix, meta: sd.__delitem__(prefix + "lin.bias"))
        sd = model.state_dict()
        keys = list(sd)
        model[0].register_load_state_dict_pre_hook(
            lambda m, sd, prefix, *rest: sd.__setitem__(prefix + "lin.bias", lib.zeros(2)))
        model.register_load_state_dict_post_hook(lambda m, keys: calls.append(("post", list(keys.missing_keys))))
        model[0].steps = 0
        result = model.load_state_dict(sd)
        loaded = model[0].steps, model[0].lin.bias.tolist()
        del sd["0._extra_state"]
        missing = model.load_state_dict(sd, strict=False).missing_keys
        with pytest.raises(RuntimeError, match="_extra_state"):
            lib.nn.Linear(2, 2).get_extra_state()
        bad = lib.nn.Linear(1, 1)
        bad.register_state_dict_post_hook(lambda *a: {})
        with pytest.raises(RuntimeError, match="must return None"):
            bad.state_dict()
        # the private _register_state_dict_hook (older code's): a new dict returned is the root's result
        legacy = lib.nn.Sequential(lib.nn.Linear(1, 1))
        legacy[0]._register_state_dict_hook(lambda m, sd, prefix, meta: {"child": 1})
        child_ignored = list(legacy.state_dict())
        legacy._register_state_dict_hook(lambda m, sd, prefix, meta: {"root": 1})
        return keys, calls, repr(result), loaded, missing, child_ignored, list(legacy.state_dict())
    assert run(tnet) == run(torch)


def test_save_to_state_dict_and_child_state_dict_overrides_as_torch():
    """state_dict saves each module's own entries by its _save_to_state_dict and its children's by their state_dict,
    as torch's: a layer that overrides either (a quantised layer adding its scale, a wrapper renaming its keys) is
    heard (they were bypassed: the scale was missing and load_state_dict's own override then failed). _get_name too."""
    def run(lib):
        class Scaled(lib.nn.Linear):
            def _save_to_state_dict(self, destination, prefix, keep_vars):
                super()._save_to_state_dict(destination, prefix, keep_vars)
                destination[prefix + "scale"] = lib.tensor(self.scale)

            def _load_from_state_dict(self, state_dict, prefix, *rest):
                self.scale = float(state_dict.pop(prefix + "scale"))
                super()._load_from_state_dict(state_dict, prefix, *rest)

        class Renamed(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = lib.nn.Linear(1, 1)

            def state_dict(self, destination=None, prefix="", keep_vars=False):
                destination = super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
                destination[prefix + "renamed"] = destination.pop(prefix + "inner.bias")
                return destination

        model = lib.nn.Sequential(Scaled(2, 3), lib.nn.ReLU(), Renamed())
        model[0].scale = 2.5
        sd = model.state_dict()
        model[0].scale = 0.0
        del sd["2.renamed"]
        missing = model.load_state_dict(sd, strict=False).missing_keys
        return list(sd), list(sd._metadata), model[0].scale, missing, model[0]._get_name(), model[2]._get_name()
    assert run(tnet) == run(torch)


def test_set_submodule_to_empty_and_compile():
    def run(lib):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.ReLU()))
        model.set_submodule("1.0", lib.nn.Tanh())
        model.set_submodule("1.extra", lib.nn.Identity())
        errors = []
        for args in [("", lib.nn.ReLU()), ("0", 3), ("1.x", lib.nn.ReLU(), True), ("0.weight", lib.nn.ReLU()),
                     ("2.0", lib.nn.ReLU())]:
            with pytest.raises((ValueError, AttributeError)) as info:
                model.set_submodule(*args)
            errors.append(info.type)
        assert model.compile() is None and model.to_empty(device="cpu" if lib is torch else tnet.DEVICE) is model
        return repr(model), errors
    assert run(tnet) == run(torch)
    with pytest.raises(ValueError):
        nn.Linear(1, 1).to_empty(device="mps")
    assert nn.Module._hooked is False  # the hooks removed, calls take the fast path again


def test_meta_device_factory_kwargs_to_empty_and_reset_parameters_as_torch():
    """torch's deferred init: a module built with device="meta" (or under `with device("meta")`), then
    to_empty(device=...) and reset_parameters(); tnet builds it on its device with its values (no meta
    tensors), and the same parameter names, shapes and dtypes as torch's; after reset_parameters the norms'
    affine parameters, PReLU's slopes and an Embedding's padding row are torch's."""
    def build(lib, **kw):
        return lib.nn.Sequential(lib.nn.Linear(3, 4, **kw), lib.nn.Conv1d(4, 2, 3, **kw), lib.nn.LayerNorm(5, **kw),
                                 lib.nn.BatchNorm1d(2, **kw), lib.nn.GroupNorm(1, 2, **kw), lib.nn.RMSNorm(5, **kw),
                                 lib.nn.Embedding(6, 5, padding_idx=2, **kw), lib.nn.PReLU(2, 0.1, **kw),
                                 lib.nn.LSTM(3, 4, **kw), lib.nn.MultiheadAttention(4, 2, **kw),
                                 lib.nn.TransformerEncoderLayer(4, 2, 8, **kw))

    def layout(m):
        return [(n, tuple(t.shape), t.dtype) for n, t in [*m.named_parameters(), *m.named_buffers()]]
    ref = build(torch, device="meta")
    assert all(t.is_meta for t in ref.parameters())
    ours = build(tnet, device="meta")
    with tnet.device("meta"):
        ours_ctx = build(tnet)
    assert layout(ours) == layout(ours_ctx) == layout(ref)
    ref.to_empty(device="cpu")
    for m in (ours, ours_ctx):
        assert m.to_empty(device="meta") is m and m.to_empty(device=tnet.DEVICE) is m
        assert m.to("meta") is m and nn.Linear(2, 2, device=torch.device("meta"), dtype=torch.float32)
    kept = ours[0].weight.numpy().copy()
    for mods in (ref, ours):
        for m in mods.modules():
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()
    assert not np.array_equal(ours[0].weight.numpy(), kept)  # drawn anew
    for k in (2, 3, 4, 5, 7):  # the deterministic fills
        for (name, t), (_, r) in zip(ours[k].named_parameters(), ref[k].named_parameters()):
            assert np.array_equal(t.numpy(), r.detach().numpy()), (k, name)
    assert not ours[6].weight.numpy()[2].any() and ours[6].weight.numpy()[[0, 1, 3]].std() > 0.3
    assert ours[0](tnet.ones(2, 3)).shape == (2, 4)
    with pytest.raises(ValueError):
        nn.Linear(2, 2, device="mps")
    t = nn.Transformer(4, 2, 1, 1, 8, device="meta")
    kept = t.encoder.layers[0].linear1.weight.numpy().copy()
    t.to_empty(device=tnet.DEVICE)._reset_parameters()  # torch's Transformer's own reset, the matrices' xavier draw
    assert not np.array_equal(t.encoder.layers[0].linear1.weight.numpy(), kept)


def test_meta_device_factory_kwargs_of_a_custom_layer_as_torch():
    """A custom layer in torch.nn's own style (factory_kwargs of device and dtype into torch.empty, then
    reset_parameters) built on the meta device and brought back by to_empty and reset_parameters: tnet's factories
    allocate on its device for device="meta", as its layers do (ports 33: detectron2_frozen_bn's cosine head raised
    InputError at torch.empty(..., device="meta"))."""
    def build(lib, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        return [lib.empty((3, 2), **factory_kwargs), lib.zeros(3, **factory_kwargs), lib.ones((), **factory_kwargs),
                lib.full((2,), 0.5, **factory_kwargs), lib.arange(3, **factory_kwargs)]
    ref, ours = build(torch, device="meta"), build(tnet, device=torch.device("meta"))
    assert all(r.is_meta for r in ref) and not any(t.is_meta for t in ours)
    assert [(tuple(t.shape), t.dtype) for t in ours] == [(tuple(r.shape), r.dtype) for r in ref]
    assert ours[4].tolist() == [0, 1, 2] and ours[1].device == tnet.DEVICE
    with pytest.raises(ValueError):
        tnet.empty(2, device="mps")


def test_skip_init_memory_format_and_nn_utils_import_paths():
    m = nn.utils.skip_init(nn.Linear, 3, 2, bias=False)
    assert type(m) is nn.Linear and m.weight.shape == (2, 3) and m.bias is None
    for bad in (int, nn.ReLU):  # no Module; no device argument
        with pytest.raises(RuntimeError):
            nn.utils.skip_init(bad)
    with pytest.raises(RuntimeError):
        torch.nn.utils.skip_init(torch.nn.ReLU)
    conv = nn.Conv2d(3, 4, 3)
    assert nn.utils.convert_conv2d_weight_memory_format(conv, torch.channels_last) is conv
    assert nn.utils.convert_conv3d_weight_memory_format(conv, torch.contiguous_format) is conv
    from tnet.nn.utils.clip_grad import clip_grad_norm_
    from tnet.nn.utils.convert_parameters import parameters_to_vector
    from tnet.nn.utils.init import skip_init
    from tnet.nn.utils.memory_format import convert_conv2d_weight_memory_format
    assert (clip_grad_norm_, parameters_to_vector, skip_init, convert_conv2d_weight_memory_format) == (
        nn.utils.clip_grad_norm_, nn.utils.parameters_to_vector, nn.utils.skip_init,
        nn.utils.convert_conv2d_weight_memory_format)
    # modules of their own whose package attributes stay the functions, as torch's (SHOT's `import
    # torch.nn.utils.weight_norm as weightNorm` binds the function)
    import tnet.nn.utils.weight_norm as weightNorm
    import torch.nn.utils.weight_norm as torch_weight_norm
    from tnet.nn.utils.spectral_norm import SpectralNorm, spectral_norm
    from tnet.nn.utils.weight_norm import WeightNorm, remove_weight_norm
    assert weightNorm is nn.utils.weight_norm and callable(torch_weight_norm) and spectral_norm is nn.utils.spectral_norm
    assert (WeightNorm, SpectralNorm, remove_weight_norm) == (nn.utils.WeightNorm, nn.utils.SpectralNorm,
                                                              nn.utils.remove_weight_norm)


def test_global_registration_and_legacy_backward_hooks_as_torch():
    def run(lib):
        mm = lib.nn.modules.module
        seen = []

        def on_param(module, name, p):
            seen.append(("param", type(module).__name__, name))

        def on_module(module, name, sub):
            seen.append(("module", type(module).__name__, name))
            return lib.nn.Identity() if isinstance(sub, lib.nn.Tanh) else None

        def on_buffer(module, name, b):
            seen.append(("buffer", type(module).__name__, name))
        handles = [mm.register_module_parameter_registration_hook(on_param),
                   mm.register_module_module_registration_hook(on_module),
                   mm.register_module_buffer_registration_hook(on_buffer)]
        try:
            model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh(), lib.nn.BatchNorm1d(2))
            model.register_buffer("step", lib.zeros(1))
        finally:
            for h in handles:
                h.remove()
        return sorted(seen), type(model[1]).__name__
    assert run(tnet) == run(torch)
    # the legacy global backward hook (torch refuses it in a process that had a full one, as this test file's)
    model, grads = nn.Sequential(nn.Linear(2, 2), nn.ReLU()), []
    legacy = nn.modules.module.register_module_backward_hook(lambda m, gi, go: grads.append(type(m).__name__))
    try:
        model(tnet.ones(3, 2, requires_grad=True)).sum().backward()
    finally:
        legacy.remove()
    assert grads == ["ReLU", "Sequential", "Linear"] and nn.Module._hooked is False  # Sequential: on ReLU's op too


def test_forward_names_its_input_as_torchs():
    """layer(input=x) works where it works in torch: a forward written out names its first argument as
    torch's does (the losses' and functional wrappers' *inputs take torch's names through their functional)."""
    import inspect
    differ = []
    for name in dir(torch.nn):
        theirs, ours = getattr(torch.nn, name), getattr(nn, name, None)
        if inspect.isclass(theirs) and issubclass(theirs, torch.nn.Module) and ours is not None:
            first = [list(inspect.signature(m.forward).parameters)[1:2] for m in (theirs, ours)]
            if first[1] not in (first[0], ["inputs"], ["args"]):
                differ.append((name, *first))
    assert differ == []
    assert nn.Linear(3, 2)(input=tnet.randn(4, 3)).shape == (4, 2)


def test_private_apply_as_torchs():
    """Module._apply(fn), what libraries build their own .to on: fn of every parameter written into it (the same
    Parameter objects), of their gradients, and of the buffers, children first, as torch's."""
    calls = []
    for lib in (torch, tnet):
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2))
        model(lib.ones(4, 3)).sum().backward()
        params = list(model.parameters())
        before = [t.detach().numpy().copy() for t in [*params, *(p.grad for p in params), *model.buffers()]]
        seen = []
        assert model._apply(lambda t: (seen.append(tuple(t.shape)), t * 2)[1]) is model
        assert all(p is q for p, q in zip(params, model.parameters()))
        after = [t.detach().numpy() for t in [*params, *(p.grad for p in params), *model.buffers()]]
        for a, b in zip(after, before):
            np.testing.assert_array_equal(a, b * 2)
        calls.append(seen)
    assert calls[0] == calls[1]  # fn's calls in torch's order
