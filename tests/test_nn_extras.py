"""The torch.nn layers and functional ops of the eighth session: channel dropouts, 1-D transposed
convolution, lazy layers, LP pooling, RReLU, 1-D and circular pads, the multi-label, margin, Poisson
and Gaussian losses, gumbel_softmax, the *_with_indices poolings, pdist, EmbeddingBag, nn.Buffer,
the torch.nn.modules import paths and the top-level forms. Forward and gradients against torch in
float64, on small odd shapes."""
import re

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from helpers import TOL, TORCH_BEFORE_2_13, assert_close, check, leaf

TF = torch.nn.functional


def long(values):
    """A tnet int64 tensor and its torch twin."""
    a = np.asarray(values, dtype=np.int64)
    return tnet.tensor(a), torch.tensor(a)


# ---- functional ------------------------------------------------------------------------------

def test_channel_dropouts_drop_whole_channels():
    tnet.manual_seed(3)
    x = tnet.ones(4, 6, 3, requires_grad=True)
    y = F.dropout1d(x, 0.5)
    rows = y.numpy()
    assert np.all((rows == 0) | np.isclose(rows, 2.0)) and np.all(rows == rows[..., :1])
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), rows)
    u = F.dropout1d(tnet.ones(7, 5), 0.5).numpy()  # unbatched [C, L]: a draw per channel
    assert np.all(u == u[:, :1])
    v = F.dropout3d(tnet.ones(2, 5, 2, 2, 3), 0.5).numpy().reshape(10, 12)
    assert np.all(v == v[:, :1]) and 0 < (v[:, 0] == 0).sum() < 10
    w = F.dropout3d(tnet.ones(5, 2, 2, 3), 0.5).numpy().reshape(5, 12)
    assert np.all(w == w[:, :1])
    assert F.dropout1d(x, 0.5, training=False) is x and nn.Dropout3d().eval()(x) is x
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(tnet.ones(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input"):
        F.dropout3d(tnet.ones(2, 3, 4))
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout1d(1.5)
    assert repr(nn.Dropout1d(0.2)) == repr(torch.nn.Dropout1d(0.2)) == "Dropout1d(p=0.2, inplace=False)"


def test_feature_alpha_dropout_keeps_channels_and_statistics():
    tnet.manual_seed(5)
    x = tnet.tensor(np.random.default_rng(0).standard_normal((64, 32, 8)), requires_grad=True)
    y = F.feature_alpha_dropout(x, 0.2, training=True)
    a = 1.0 / ((1.7580993408473766 ** 2 * 0.2 + 1.0) * 0.8) ** 0.5
    kept = np.isclose(y.numpy(), a * x.numpy() + 1.7580993408473766 * a * 0.2, atol=1e-5)
    per_channel = kept.all(-1) | (~kept).all(-1)
    assert per_channel.all() and 0.1 < 1 - kept[..., 0].mean() < 0.3
    y.sum().backward()
    assert np.allclose(x.grad.numpy(), np.where(kept, a, 0.0), atol=1e-6)
    assert F.feature_alpha_dropout(x, 0.2) is x
    assert np.allclose(F.feature_alpha_dropout(x, 1.0, True).numpy(), 0.0)
    assert abs(float(nn.FeatureAlphaDropout(0.3).train()(tnet.randn(2000, 20)).std().item()) - 1.0) < 0.05


def test_rrelu_eval_slope_and_training_slopes(rng):
    x, xr = leaf(rng, 3, 17)
    check(lambda a: F.rrelu(a, 0.1, 0.3), lambda a: TF.rrelu(a, 0.1, 0.3), [(x, xr)], rng)
    m = nn.RReLU(0.1, 0.3).eval()
    check(m, torch.nn.RReLU(0.1, 0.3).eval(), [(x, xr)], rng)
    tnet.manual_seed(1)
    z = tnet.tensor(-np.abs(rng.standard_normal((50, 40))) - 0.1, requires_grad=True)
    y = F.rrelu(z, 0.1, 0.3, training=True)
    slope = y.numpy() / z.numpy()
    assert slope.min() >= 0.1 and slope.max() < 0.3 and slope.std() > 0.04
    y.sum().backward()
    assert np.allclose(z.grad.numpy(), slope, rtol=1e-5)
    pos = tnet.tensor(np.abs(rng.standard_normal(9)) + 0.1)
    assert np.array_equal(F.rrelu(pos, training=True).numpy(), pos.numpy())
    w = tnet.tensor(-np.ones(5))
    assert F.rrelu_(w) is w and np.allclose(w.numpy(), -(1 / 8 + 1 / 3) / 2)
    assert repr(nn.RReLU(0.1, 0.3)) == repr(torch.nn.RReLU(0.1, 0.3))


@pytest.mark.parametrize("norm_type", [2.0, 1.5, float("inf")])
def test_lp_pool_as_torch(rng, norm_type):
    """torch before 2.12 gives 1 for norm_type inf (its x ** inf average), later torch the max of |x|,
    as tnet: the reference for inf is that max."""
    inf = norm_type == float("inf")
    x, xr = leaf(rng, 2, 3, 5, 7, positive=True)
    check(lambda a: F.lp_pool2d(a, norm_type, (2, 3), 2),
          lambda a: TF.max_pool2d(a.abs(), (2, 3), 2) if inf else TF.lp_pool2d(a, norm_type, (2, 3), 2), [(x, xr)], rng)
    s, sr = leaf(rng, 2, 3, 9, positive=True)
    check(nn.LPPool1d(norm_type, 3, ceil_mode=True), (lambda a: TF.max_pool1d(a.abs(), 3, ceil_mode=True)) if inf else
          torch.nn.LPPool1d(norm_type, 3, ceil_mode=True), [(s, sr)], rng)
    check(nn.LPPool2d(norm_type, 2), (lambda a: TF.max_pool2d(a.abs(), 2)) if inf else torch.nn.LPPool2d(norm_type, 2),
          [(x, xr)], rng)
    assert repr(nn.LPPool2d(norm_type, 2)) == repr(torch.nn.LPPool2d(norm_type, 2))


def test_with_indices_poolings_return_pairs(rng):
    x, xr = leaf(rng, 2, 3, 5, 7)
    for ours, theirs, args in [(F.max_pool2d_with_indices, TF.max_pool2d_with_indices, (3, 2, 1)),
                               (F.adaptive_max_pool2d_with_indices, TF.adaptive_max_pool2d_with_indices, ((2, 3),))]:
        (y, i), (yr, ir) = ours(x, *args), theirs(xr, *args)
        assert_close(y, yr, TOL["ieee"], "values")
        assert np.array_equal(i.numpy(), ir.numpy())
    s, sr = leaf(rng, 3, 11)
    for ours, theirs, args in [(F.max_pool1d_with_indices, TF.max_pool1d_with_indices, (3, 2, 1)),
                               (F.adaptive_max_pool1d_with_indices, TF.adaptive_max_pool1d_with_indices, (4,))]:
        (y, i), (yr, ir) = ours(s, *args), theirs(sr, *args)
        assert_close(y, yr, TOL["ieee"], "values")
        assert np.array_equal(i.numpy(), ir.numpy())


def test_conv_transpose1d_as_torch(rng, ieee):
    x, xr = leaf(rng, 2, 4, 7)
    w, wr = leaf(rng, 4, 3, 3)
    b, br = leaf(rng, 6)
    check(lambda a, c, d: F.conv_transpose1d(a, c, d, 2, 1, 1, 2),
          lambda a, c, d: TF.conv_transpose1d(a, c, d, 2, 1, 1, 2), [(x, xr), (w, wr), (b, br)], rng)
    u, ur = leaf(rng, 4, 5)  # unbatched
    check(lambda a, c: F.conv_transpose1d(a, c, dilation=2), lambda a, c: TF.conv_transpose1d(a, c, dilation=2),
          [(u, ur), (w, wr)], rng)
    k, kr = leaf(rng, 2, 4, 3)  # conv1d of an unbatched input
    check(lambda a, c: F.conv1d(a, c), lambda a, c: TF.conv1d(a, c), [(u, ur), (k, kr)], rng)


def test_gumbel_softmax_samples_and_straight_through(rng):
    tnet.manual_seed(2)
    logits = tnet.tensor(np.log([[0.7, 0.2, 0.1]] * 3000), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5)
    assert np.allclose(y.numpy().sum(1), 1.0, atol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(1) == 1)
    assert np.allclose(h.mean(0), [0.7, 0.2, 0.1], atol=0.03)  # Gumbel-max draws the categories
    (hard * tnet.tensor(np.array([1.0, 2.0, 3.0]))).sum().backward()
    assert np.isfinite(logits.grad.numpy()).all() and np.abs(logits.grad.numpy()).sum() > 0
    with pytest.warns(UserWarning, match="deprecated"):
        F.gumbel_softmax(logits, eps=1e-5)


def test_pdist_as_torch(rng):
    x, xr = leaf(rng, 5, 3)
    for p in (2.0, 1.0, 3.0, float("inf")):
        check(lambda a: F.pdist(a, p), lambda a: TF.pdist(a, p), [(x, xr)], rng)
    assert tnet.pdist(tnet.ones(1, 3)).shape == (0,)


# ---- losses ----------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_margin_losses_as_torch(rng, reduction):
    x, xr = leaf(rng, 4, 5)
    t, tr = long([1, 0, 4, 1])
    wt, wtr = leaf(rng, 5, positive=True)
    for p, margin in ((1, 1.0), (2, 0.5)):
        check(lambda a, w: F.multi_margin_loss(a, t, p, margin, w, reduction=reduction),
              lambda a, w: TF.multi_margin_loss(a, tr, p, margin, w.detach(), reduction=reduction),
              [(x, xr), (wt, wtr.detach())], rng)
    check(lambda a: nn.MultiMarginLoss(reduction=reduction)(a, t),
          lambda a: torch.nn.MultiMarginLoss(reduction=reduction)(a, tr), [(x, xr)], rng)
    labels, labels_r = long([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 2, 3, 4], [2, 2, -1, 0, 0]])
    check(lambda a: F.multilabel_margin_loss(a, labels, reduction=reduction),
          lambda a: TF.multilabel_margin_loss(a, labels_r, reduction=reduction), [(x, xr)], rng)
    check(lambda a: nn.MultiLabelMarginLoss(reduction=reduction)(a[0], labels[0]),
          lambda a: torch.nn.MultiLabelMarginLoss(reduction=reduction)(a[0], labels_r[0]), [(x, xr)], rng)
    y = rng.integers(0, 2, (4, 5)).astype(np.float64)
    wt, wtr = leaf(rng, 5, positive=True)
    check(lambda a, w: F.multilabel_soft_margin_loss(a, tnet.tensor(y), w, reduction=reduction),
          lambda a, w: TF.multilabel_soft_margin_loss(a, torch.tensor(y), w, reduction=reduction),
          [(x, xr), (wt, wtr)], rng)
    check(lambda a: nn.MultiLabelSoftMarginLoss(reduction=reduction)(a, tnet.tensor(y)),
          lambda a: torch.nn.MultiLabelSoftMarginLoss(reduction=reduction)(a, torch.tensor(y)), [(x, xr)], rng)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x, t, p=3)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_poisson_and_gaussian_nll_as_torch(rng, reduction):
    x, xr = leaf(rng, 3, 5)
    target = np.abs(rng.standard_normal((3, 5))) * 3
    tt, ttr = tnet.tensor(target), torch.tensor(target)
    for log_input, full in ((True, False), (False, True), (True, True)):
        xp, xpr = (x, xr) if log_input else leaf(rng, 3, 5, positive=True)
        check(lambda a: F.poisson_nll_loss(a, tt, log_input, full, reduction=reduction),
              lambda a: TF.poisson_nll_loss(a, ttr, log_input, full, reduction=reduction), [(xp, xpr)], rng)
    check(lambda a: nn.PoissonNLLLoss(reduction=reduction)(a, tt),
          lambda a: torch.nn.PoissonNLLLoss(reduction=reduction)(a, ttr), [(x, xr)], rng)
    var = np.abs(rng.standard_normal((3, 5))) + 1e-8  # below eps: clamped, the gradient passes
    var[0, 0] = 1e-9
    v, vr = leaf(rng, 3, 5, values=var)
    for full in (False, True):
        check(lambda a, b: F.gaussian_nll_loss(a, tt, b, full, reduction=reduction),
              lambda a, b: TF.gaussian_nll_loss(a, ttr, b, full, reduction=reduction), [(x, xr), (v, vr)], rng)
    h, hr = leaf(rng, 3, positive=True)  # homoscedastic: one variance per row
    check(lambda a, b: nn.GaussianNLLLoss(reduction=reduction)(a, tt, b),
          lambda a, b: torch.nn.GaussianNLLLoss(reduction=reduction)(a, ttr, b), [(x, xr), (h, hr)], rng)
    check(lambda a: F.gaussian_nll_loss(a, tt, 0.5), lambda a: TF.gaussian_nll_loss(a, ttr, 0.5), [(x, xr)], rng)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, tt, F.neg(v))
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(x, tt, tnet.ones(2))


def test_triplet_margin_with_distance_and_nll2d(rng):
    (a, ar), (p, pr), (n, nr) = leaf(rng, 4, 6), leaf(rng, 4, 6), leaf(rng, 4, 6)
    check(lambda x, y, z: nn.TripletMarginWithDistanceLoss(swap=True)(x, y, z),
          lambda x, y, z: torch.nn.TripletMarginWithDistanceLoss(swap=True)(x, y, z), [(a, ar), (p, pr), (n, nr)], rng)
    cos = lambda lib: (lambda x, y: 1.0 - lib.cosine_similarity(x, y))
    check(lambda x, y, z: F.triplet_margin_with_distance_loss(x, y, z, distance_function=cos(F), margin=0.5,
                                                              reduction="none"),
          lambda x, y, z: TF.triplet_margin_with_distance_loss(x, y, z, distance_function=cos(TF), margin=0.5,
                                                               reduction="none"), [(a, ar), (p, pr), (n, nr)], rng)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_with_distance_loss(a, p, n, margin=0)
    logp, logpr = leaf(rng, 2, 3, 4, 5)
    t, tr = long(rng.integers(0, 3, (2, 4, 5)))
    assert issubclass(nn.NLLLoss2d, nn.NLLLoss)
    check(lambda x: nn.NLLLoss2d()(x, t), lambda x: torch.nn.NLLLoss2d()(x, tr), [(logp, logpr)], rng)


# ---- EmbeddingBag ----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_as_torch(rng, mode):
    w, wr = leaf(rng, 7, 3)
    flat, flat_r = long([1, 4, 4, 0, 6, 2, 5, 3])
    offsets, offsets_r = long([0, 3, 3, 5])  # the second bag is empty
    check(lambda a: F.embedding_bag(flat, a, offsets, mode=mode),
          lambda a: TF.embedding_bag(flat_r, a, offsets_r, mode=mode), [(w, wr)], rng)
    check(lambda a: F.embedding_bag(flat, a, offsets, mode=mode, padding_idx=4),
          lambda a: TF.embedding_bag(flat_r, a, offsets_r, mode=mode, padding_idx=4), [(w, wr)], rng)
    last, last_r = long([0, 2, 5, 8])
    check(lambda a: F.embedding_bag(flat, a, last, mode=mode, include_last_offset=True),
          lambda a: TF.embedding_bag(flat_r, a, last_r, mode=mode, include_last_offset=True), [(w, wr)], rng)
    rows, rows_r = long([[1, 2, 6], [0, 0, 3]])
    check(lambda a: F.embedding_bag(rows, a, mode=mode, padding_idx=0),
          lambda a: TF.embedding_bag(rows_r, a, mode=mode, padding_idx=0), [(w, wr)], rng)
    if mode == "sum":
        s, sr = leaf(rng, 8)
        check(lambda a, b: F.embedding_bag(flat, a, offsets, mode="sum", per_sample_weights=b),
              lambda a, b: TF.embedding_bag(flat_r, a, offsets_r, mode="sum", per_sample_weights=b),
              [(w, wr), (s, sr)], rng)


def test_embedding_bag_module_as_torch(rng):
    m, ref = nn.EmbeddingBag(9, 4, mode="max"), torch.nn.EmbeddingBag(9, 4, mode="max")
    assert repr(m) == repr(ref) and list(m.state_dict()) == list(ref.state_dict())
    m.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    rows, rows_r = long([[1, 2, 8], [0, 5, 3]])
    assert_close(m(rows), ref(rows_r), TOL["ieee"], "forward")
    assert repr(nn.EmbeddingBag(9, 4, padding_idx=2)) == repr(torch.nn.EmbeddingBag(9, 4, padding_idx=2))
    assert float(np.abs(nn.EmbeddingBag(9, 4, padding_idx=2).weight.numpy()[2]).max()) == 0.0
    with pytest.raises(ValueError, match="offsets has to be None"):
        m(rows, rows[0])
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        m(rows, per_sample_weights=tnet.ones(2, 3))
    e = nn.EmbeddingBag.from_pretrained(tnet.tensor(np.eye(3)), mode="sum")
    assert not e.weight.requires_grad and e(long([[0, 2]])[0]).numpy().tolist() == [[1.0, 0.0, 1.0]]


@pytest.mark.parametrize("flat_input", [True, False])
def test_embedding_bag_max_norm_renorms_the_rows_looked_up_in_place_as_torch(rng, flat_input):
    # every row input names is scaled to max_norm before the bags, padding_idx's too, as torch's embedding_renorm_
    table = rng.standard_normal((6, 3)) * 2
    m = nn.EmbeddingBag(6, 3, max_norm=1.5, norm_type=1.0, mode="sum", padding_idx=1)
    ref = torch.nn.EmbeddingBag(6, 3, max_norm=1.5, norm_type=1.0, mode="sum", padding_idx=1).double()
    assert repr(m) == repr(ref)
    m.load_state_dict({"weight": table.astype(np.float32)})
    ref.load_state_dict({"weight": torch.tensor(table)})
    pairs = [long([0, 1, 4, 0]), long([0, 2])] if flat_input else [long([[0, 1], [4, 0]])]
    out, out_r = m(*[t for t, _ in pairs]), ref(*[r for _, r in pairs])
    assert_close(out, out_r.detach(), TOL["ieee"], "forward")
    assert_close(m.weight.detach(), ref.weight.detach(), TOL["ieee"], "renormed table")
    out.sum().backward()
    out_r.sum().backward()
    assert_close(m.weight.grad, ref.weight.grad, TOL["ieee"], "gradient")


# ---- modules ---------------------------------------------------------------------------------

def test_pads_1d_and_circular_as_torch(rng):
    x, xr = leaf(rng, 2, 3, 5)
    for name, args in [("ZeroPad1d", (2,)), ("ConstantPad1d", ((1, 3), 0.5)), ("ReflectionPad1d", ((2, 1),)),
                       ("ReplicationPad1d", (3,)), ("CircularPad1d", ((1, 2),))]:
        ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(ours) == repr(theirs)
        check(ours, theirs, [(x, xr)], rng)
    y, yr = leaf(rng, 2, 3, 4, 5)
    check(nn.CircularPad2d((1, 2, 2, 1)), torch.nn.CircularPad2d((1, 2, 2, 1)), [(y, yr)], rng)
    assert repr(nn.ConstantPad2d(1, 2.0)) == repr(torch.nn.ConstantPad2d(1, 2.0))
    assert repr(nn.ZeroPad2d(1)) == repr(torch.nn.ZeroPad2d(1))
    for ours, theirs in [(nn.LocalResponseNorm(2), torch.nn.LocalResponseNorm(2)), (nn.CosineSimilarity(0), torch.nn.CosineSimilarity(0)),
                         (nn.PairwiseDistance(), torch.nn.PairwiseDistance()), (nn.AdaptiveMaxPool1d(2), torch.nn.AdaptiveMaxPool1d(2))]:
        assert repr(ours) == repr(theirs)
    with pytest.raises(ValueError, match="expected 2D or 3D"):
        nn.CircularPad1d(1)(y)


def test_conv_transpose1d_and_instance_norm1d_modules(rng, ieee):
    m, ref = nn.ConvTranspose1d(4, 6, 3, stride=2, groups=2), torch.nn.ConvTranspose1d(4, 6, 3, stride=2, groups=2)
    assert list(m.state_dict()) == list(ref.state_dict()) and m.weight.shape == tuple(ref.weight.shape)
    m.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    x, xr = leaf(rng, 2, 4, 5)
    check(m, ref.double(), [(x, xr)], rng)
    n, nref = nn.InstanceNorm1d(4, affine=True), torch.nn.InstanceNorm1d(4, affine=True).double()
    assert repr(n).replace(" bias=True,", "") == repr(torch.nn.InstanceNorm1d(4, affine=True)).replace(" bias=True,", "") and list(n.state_dict()) == list(nref.state_dict())
    check(n, nref, [(x, xr)], rng)
    u, ur = leaf(rng, 4, 6)  # unbatched
    check(n, nref, [(u, ur)], rng)
    check(nn.InstanceNorm2d(4), torch.nn.InstanceNorm2d(4), [leaf(rng, 4, 3, 5)], rng)


def test_lazy_layers_take_their_sizes_from_the_first_call(rng, ieee):
    x, xr = leaf(rng, 2, 5, 7)
    for lazy, full in [(nn.LazyConv1d(3, 2), nn.Conv1d), (nn.LazyConvTranspose1d(6, 3, groups=1), nn.ConvTranspose1d),
                       (nn.LazyBatchNorm1d(), nn.BatchNorm1d), (nn.LazyInstanceNorm1d(affine=True), nn.InstanceNorm1d)]:
        assert isinstance(lazy.weight, nn.UninitializedParameter) and lazy.has_uninitialized_params()
        y = lazy(x)
        assert type(lazy) is full and type(lazy.weight) is nn.Parameter and y.shape[0] == 2
    bn = nn.LazyBatchNorm2d()
    assert isinstance(bn.running_mean, nn.UninitializedBuffer)
    bn(tnet.randn(3, 4, 2, 2))
    assert type(bn) is nn.BatchNorm2d and bn.num_features == 4 and bn.running_var.numpy().shape == (4,)
    assert list(bn.state_dict()) == list(torch.nn.BatchNorm2d(4).state_dict())
    t = nn.LazyConvTranspose2d(6, 3, stride=2)
    w = t.weight
    out = t(tnet.randn(2, 4, 3, 3))
    assert type(t) is nn.ConvTranspose2d and t.weight is w and w.shape == (4, 6, 3, 3) and out.shape == (2, 6, 7, 7)
    inorm = nn.LazyInstanceNorm2d()
    inorm(tnet.randn(5, 3, 4))  # unbatched [C, H, W]
    assert type(inorm) is nn.InstanceNorm2d and inorm.num_features == 5


def test_lazy_and_1d_pool_reprs_and_defaults_as_torch():
    """print(model) before the first call, and the lazy instance norms' own defaults (affine and running statistics
    on, unlike InstanceNorm's), as torch's."""
    for name, args in [("LazyLinear", (3,)), ("LazyConv2d", (4, 3)), ("LazyConvTranspose1d", (2, 3)),
                       ("LazyInstanceNorm2d", ()), ("LazyBatchNorm1d", ()), ("AvgPool1d", (3, 1, 1)), ("AvgPool1d", (2,)),
                       ("MaxPool1d", (2,))]:
        ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        # torch 2.13's norms name their bias= (2.11's, the GPU machine's, do not)
        assert repr(ours).replace(" bias=True,", "") == repr(theirs).replace(" bias=True,", ""), name
    lazy = nn.LazyInstanceNorm1d()
    assert lazy.affine and lazy.track_running_stats
    lazy(tnet.randn(2, 3, 5))
    assert type(lazy) is nn.InstanceNorm1d and list(lazy.state_dict()) == list(torch.nn.LazyInstanceNorm1d().state_dict())
    if TORCH_BEFORE_2_13:
        return  # the norms' bias= keyword is torch 2.13's
    for name in ("LazyBatchNorm2d", "LazyInstanceNorm2d", "SyncBatchNorm"):  # torch 2's bias= keyword
        args = (3,) if name == "SyncBatchNorm" else ()
        ours, theirs = getattr(nn, name)(*args, bias=False), getattr(torch.nn, name)(*args, bias=False)
        ours(tnet.randn(2, 3, 2, 2))
        theirs(torch.randn(2, 3, 2, 2))
        assert ours.bias is None and repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())


def test_buffer_registers_on_assignment():
    ours, theirs = nn.Module(), torch.nn.Module()
    for lib, m in ((nn, ours), (torch.nn, theirs)):
        m.a = lib.Buffer(tnet.ones(2) if lib is nn else torch.ones(2))
        m.b = lib.Buffer(tnet.zeros(3) if lib is nn else torch.zeros(3), persistent=False)
        m.c = tnet.ones(1) if lib is nn else torch.ones(1)  # a plain tensor is no buffer
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["a"]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()] == ["a", "b"]
    assert isinstance(ours.a, nn.Buffer) and not isinstance(ours.c, nn.Buffer)
    ours.a = tnet.full((2,), 3.0)  # a tensor assigned to a buffer's name stays the buffer
    assert ours.state_dict()["a"].numpy().tolist() == [3.0, 3.0]
    p = nn.UninitializedParameter()
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.requires_grad


def test_torch_import_paths_and_isinstance_checks():
    from tnet.nn.common_types import _size_2_t
    from tnet.nn.modules.batchnorm import _BatchNorm, _NormBase
    from tnet.nn.modules.conv import _ConvNd
    from tnet.nn.modules.loss import _Loss, _WeightedLoss
    from tnet.nn.modules.module import Module
    from tnet.nn.modules.utils import _ntuple, _pair, _quadruple, _single, _triple
    from tnet.nn.parameter import Buffer, Parameter, UninitializedParameter
    assert (Buffer, Parameter, UninitializedParameter) == (nn.Buffer, nn.Parameter, nn.UninitializedParameter)
    assert _size_2_t is not None
    assert all(isinstance(m, _BatchNorm) for m in (nn.BatchNorm1d(2), nn.BatchNorm2d(2), nn.SyncBatchNorm(2)))
    assert isinstance(nn.InstanceNorm1d(2), _NormBase) and not isinstance(nn.InstanceNorm1d(2), _BatchNorm)
    assert all(isinstance(m, _ConvNd) for m in (nn.Conv1d(2, 2, 1), nn.Conv2d(2, 2, 1), nn.ConvTranspose1d(2, 2, 1),
                                                 nn.ConvTranspose2d(2, 2, 1)))
    assert isinstance(nn.CrossEntropyLoss(), _WeightedLoss) and isinstance(nn.MSELoss(), _Loss)
    assert isinstance(nn.modules.dropout._DropoutNd(), Module) and nn.modules.Conv2d is nn.Conv2d
    assert (_single(2), _pair(3), _triple((1, 2, 3)), _quadruple(0), _ntuple(5)(1)) == (
        (2,), (3, 3), (1, 2, 3), (0, 0, 0, 0), (1,) * 5)
    w = tnet.ones(3)
    assert list(nn.CrossEntropyLoss(w).state_dict()) == list(torch.nn.CrossEntropyLoss(torch.ones(3)).state_dict())
    # BCELoss's weight and BCEWithLogitsLoss's pos_weight are buffers too: a model holding its criterion saves them
    # (torch's checkpoint of it loaded into tnet's with unexpected keys)
    for make in (lambda m, t: m.nn.BCELoss(weight=t), lambda m, t: m.nn.BCEWithLogitsLoss(weight=t, pos_weight=t * 2)):
        theirs = torch.nn.Sequential(torch.nn.Linear(3, 3), make(torch, torch.ones(3)))
        mine = nn.Sequential(nn.Linear(3, 3), make(tnet, tnet.zeros(3)))
        mine.load_state_dict({k: tnet.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
        assert list(mine.state_dict()) == list(theirs.state_dict()) and mine[1].weight.tolist() == [1.0] * 3
    for name in ("MultiMarginLoss", "PoissonNLLLoss", "HuberLoss", "MSELoss"):
        assert repr(getattr(nn, name)()) == repr(getattr(torch.nn, name)())


def test_top_level_forms_take_torchs_arguments(rng, ieee):
    x, xr = leaf(rng, 2, 3, 5, 5)
    w, wr = leaf(rng, 3, positive=True)
    b, br = leaf(rng, 3)
    m, v = tnet.zeros(3), tnet.ones(3)
    check(lambda a, c, d: tnet.batch_norm(a, c, d, m, v, False, 0.1, 1e-5, True),
          lambda a, c, d: torch.batch_norm(a, c, d, torch.zeros(3).double(), torch.ones(3).double(), False, 0.1, 1e-5,
                                           True), [(x, xr), (w, wr), (b, br)], rng)
    check(lambda a: tnet.layer_norm(a, (5,)), lambda a: torch.layer_norm(a, (5,)), [(x, xr)], rng)
    check(lambda a: tnet.group_norm(a, 3), lambda a: torch.group_norm(a, 3), [(x, xr)], rng)
    check(lambda a: tnet.instance_norm(a, None, None, None, None, True, 0.1, 1e-5, True),
          lambda a: torch.instance_norm(a, None, None, None, None, True, 0.1, 1e-5, True), [(x, xr)], rng)
    check(lambda a: tnet.max_pool2d(a, 2), lambda a: torch.max_pool2d(a, 2), [(x, xr)], rng)
    s, sr = leaf(rng, 2, 3, 7)
    check(lambda a: tnet.max_pool1d(a, 3, 2), lambda a: torch.max_pool1d(a, 3, 2), [(s, sr)], rng)
    (y, i), (yr, ir) = tnet.adaptive_max_pool1d(s, 3), torch.adaptive_max_pool1d(sr, 3)
    assert_close(y, yr, TOL["ieee"], "adaptive_max_pool1d") and np.array_equal(i.numpy(), ir.numpy())
    table, table_r = leaf(rng, 6, 4)
    idx, idx_r = long([[1, 5], [0, 2]])
    check(lambda t: tnet.embedding(t, idx), lambda t: torch.embedding(t, idx_r), [(table, table_r)], rng)
    p, pr = leaf(rng, 4, 5)
    q, qr = leaf(rng, 4, 5)
    tgt = rng.standard_normal((4, 5)) > 0
    for r in (0, 1, 2):
        check(lambda a: tnet.binary_cross_entropy_with_logits(a, tnet.tensor(tgt.astype(np.float32)), None, None, r),
              lambda a: torch.binary_cross_entropy_with_logits(a, torch.tensor(tgt).double(), None, None, r),
              [(p, pr)], rng)
        check(lambda a, c: tnet.kl_div(F.log_softmax(a, 1), F.softmax(c, 1), r),
              lambda a, c: torch.kl_div(TF.log_softmax(a, 1), TF.softmax(c, 1), r), [(p, pr), (q, qr)], rng)
    check(lambda a: tnet.poisson_nll_loss(a, tnet.tensor(np.abs(tgt) * 2.0), True, False, 1e-8, 1),
          lambda a: torch.poisson_nll_loss(a, torch.tensor(np.abs(tgt) * 2.0), True, False, 1e-8, 1), [(p, pr)], rng)
    assert tnet.dropout(p, 0.5, False) is p and tnet.feature_dropout(p, 0.5, False) is p
    check(lambda a: tnet.rrelu(a), lambda a: torch.rrelu(a), [(p, pr)], rng)
    z = tnet.tensor(-np.ones(3))
    assert tnet.rrelu_(z) is z and tnet.selu_(tnet.ones(2)).shape == (2,)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_as_torch(rng, reduction):
    """F.ctc_loss and nn.CTCLoss against torch's after log_softmax, values and the logits' gradients:
    padded and concatenated targets, repeated labels (no skip between them), a target longer than its
    input can align (inf, or 0 and no gradient with zero_infinity), an empty target, an unbatched input."""
    T, N, C = 7, 3, 5
    x = rng.standard_normal((T, N, C)).astype(np.float32)
    cases = [(np.array([[1, 2, 2], [3, 0, 0], [4, 1, 0]]), [3, 1, 2], [7, 5, 6]),
             (np.array([1, 2, 2, 3, 4, 1]), [3, 1, 2], [7, 7, 4]),
             (np.array([[1, 1, 1], [2, 2, 2], [3, 4, 3]]), [3, 3, 0], [7, 3, 6])]
    for i, (targets, target_lengths, input_lengths) in enumerate(cases):
        # zero_infinity on the last case alone: it holds a finite, an infinite and an empty target
        for zero_infinity in (False, True) if i == len(cases) - 1 else (False,):
            xt, xr = tnet.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            out = F.ctc_loss(F.log_softmax(xt, 2), tnet.tensor(targets), input_lengths, target_lengths,
                             reduction=reduction, zero_infinity=zero_infinity)
            ref = torch.nn.functional.ctc_loss(torch.log_softmax(xr, 2), torch.tensor(targets), input_lengths,
                                               target_lengths, reduction=reduction, zero_infinity=zero_infinity)
            np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
            if not np.isfinite(ref.detach().numpy()).all():
                continue
            seed = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
            out.backward(tnet.tensor(seed))
            ref.backward(torch.tensor(seed))
            assert_close(xt.grad, xr.grad, 1e-5, f"ctc_loss gradient {reduction} zero_infinity={zero_infinity}")
    x1 = rng.standard_normal((6, 4)).astype(np.float32)
    out = nn.CTCLoss(blank=3, reduction=reduction)(F.log_softmax(tnet.tensor(x1), 1), tnet.tensor([0, 1]), [6], [2])
    ref = torch.nn.CTCLoss(blank=3, reduction=reduction)(torch.log_softmax(torch.tensor(x1), 1), torch.tensor([0, 1]),
                                                         [6], [2])
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5)


# ---- 3-D layers: convolutions as kd 2-D ones over depth slices, poolings as a 2-D pass then a depth pass ----

@pytest.mark.parametrize("args", [dict(), dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2),
                                  dict(padding="same", dilation=(3, 1, 2)), dict(padding="valid", stride=2)])
def test_conv3d_as_torch(rng, args, ieee):
    x, w, b = leaf(rng, 2, 4, 5, 6, 7), leaf(rng, 6, 4 // args.get("groups", 1), 3, 2, 3), leaf(rng, 6)
    check(lambda *t: F.conv3d(*t, **args), lambda *t: TF.conv3d(*t, **args), [x, w, b], rng, 1e-5)
    check(lambda a, c: tnet.conv3d(a[0], c, **args), lambda a, c: torch.conv3d(a[0], c, **args), [x, w], rng, 1e-5)


@pytest.mark.parametrize("args", [dict(), dict(stride=(2, 2, 1), padding=(1, 0, 1), output_padding=(1, 1, 0),
                                               groups=2, dilation=(1, 1, 2)), dict(stride=3, padding=2)])
def test_conv_transpose3d_as_torch(rng, args, ieee):
    x, w, b = leaf(rng, 2, 4, 3, 4, 5), leaf(rng, 4, 3, 3, 2, 3), leaf(rng, 3 * args.get("groups", 1))
    check(lambda *t: F.conv_transpose3d(*t, **args), lambda *t: TF.conv_transpose3d(*t, **args), [x, w, b], rng, 1e-5)
    check(lambda a, c: F.conv_transpose3d(a[1], c, **args), lambda a, c: TF.conv_transpose3d(a[1], c, **args),
          [x, w], rng, 1e-5)


def test_conv3d_errors_as_torch():
    x = tnet.ones(1, 4, 3, 3, 3)
    with pytest.raises(RuntimeError):
        F.conv3d(x, tnet.ones(2, 3, 1, 1, 1))  # channels
    with pytest.raises(RuntimeError):
        F.conv3d(x, tnet.ones(2, 4, 1, 1))  # a 4-D weight
    with pytest.raises(RuntimeError, match="strided"):
        F.conv3d(x, tnet.ones(2, 4, 1, 1, 1), stride=2, padding="same")
    with pytest.raises(RuntimeError):
        F.conv3d(x, tnet.ones(2, 4, 5, 1, 1))  # a kernel deeper than the input
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        F.conv_transpose3d(x, tnet.ones(4, 2, 1, 1, 1), output_padding=(1, 0, 0))
    with pytest.raises(TypeError):
        F.conv3d(x, tnet.ones(2, 4, 1, 1, 1), stride="2")


@pytest.mark.parametrize("layer", ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                                   "ConvTranspose3d"])
@pytest.mark.parametrize("args", [dict(groups=0), dict(in_channels=3, groups=2), dict(out_channels=3, groups=2),
                                  dict(padding="same", stride=2), dict(padding="foo"), dict(padding_mode="foo"),
                                  dict(padding_mode="reflect")])
def test_conv_layer_arguments_as_torch(layer, args):
    """A conv layer's bad arguments fail at construction with torch's error type and message, or construct
    where torch's do (a transposed layer's padding string fails at its forward in torch, at construction in
    tnet, a TypeError in both)."""
    args = dict(dict(in_channels=4, out_channels=4, kernel_size=3), **args)
    try:
        getattr(torch.nn, layer)(**args)
    except ValueError as e:
        with pytest.raises(ValueError) as got:
            getattr(nn, layer)(**args)
        # torch's message lists a set, whose order depends on the process (string hashes): compared as a set
        unordered = lambda text: (re.sub(r"\{.*?\}", "{}", text), sorted(re.findall(r"'(\w+)'", text)))
        assert unordered(str(got.value)) == unordered(str(e))
        return
    try:
        getattr(nn, layer)(**args)
    except TypeError:  # a transposed layer's padding string
        assert isinstance(args.get("padding"), str) and layer.startswith("ConvTranspose")


@pytest.mark.parametrize("args", [dict(kernel_size=(2, 3, 2), stride=(2, 2, 1), padding=(1, 1, 0), ceil_mode=True),
                                  dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1)])
def test_pool3d_as_torch(rng, args):
    x = leaf(rng, 2, 3, 5, 6, 7)
    check(lambda a: F.max_pool3d(a, **args), lambda a: TF.max_pool3d(a, **args), [x], rng)
    check(nn.MaxPool3d(**args), torch.nn.MaxPool3d(**args), [x], rng)
    check(lambda a: F.avg_pool3d(a[0], **args), lambda a: TF.avg_pool3d(a[0], **args), [x], rng)
    for extra in (dict(count_include_pad=False), dict(divisor_override=5)):
        check(nn.AvgPool3d(**args, **extra), torch.nn.AvgPool3d(**args, **extra), [x], rng)
    ties = np.round(rng.standard_normal((2, 3, 5, 6, 7)))  # ties: the first maximum in (d, h, w) order
    y, i = F.max_pool3d(tnet.tensor(ties, requires_grad=True), return_indices=True, **args)
    ref, ref_i = TF.max_pool3d(torch.tensor(ties, requires_grad=True), return_indices=True, **args)
    assert np.array_equal(i.numpy(), ref_i.numpy()) and i.dtype == torch.int64
    assert repr(nn.MaxPool3d(**args)) == repr(torch.nn.MaxPool3d(**args))
    assert repr(nn.AvgPool3d(**args)) == repr(torch.nn.AvgPool3d(**args))
    dilated = dict(args, dilation=(2, 1, 2))  # by its taps (pool.py's _dilated_max_pool): ties, indices, gradient
    y, i = F.max_pool3d(tnet.tensor(ties[0], requires_grad=True), return_indices=True, **dilated)
    ref, ref_i = TF.max_pool3d(torch.tensor(ties[0], requires_grad=True), return_indices=True, **dilated)
    assert np.array_equal(i.numpy(), ref_i.numpy()) and i.dtype == torch.int64
    check(lambda a: F.max_pool3d(a, **dilated), lambda a: TF.max_pool3d(a, **dilated), [x], rng)
    with pytest.raises(RuntimeError):
        F.avg_pool3d(x[0], 2, divisor_override=0)
    with pytest.raises(RuntimeError):
        F.max_pool3d(tnet.ones(2, 3, 4), 2)


@pytest.mark.parametrize("size", [(3, None, 4), (3, 4, 4), 1, (5, 6, 7)])
def test_adaptive_pool3d_as_torch(rng, size):
    x = leaf(rng, 2, 3, 5, 6, 7)
    check(nn.AdaptiveAvgPool3d(size), torch.nn.AdaptiveAvgPool3d(size), [x], rng)
    check(nn.AdaptiveMaxPool3d(size), torch.nn.AdaptiveMaxPool3d(size), [x], rng)
    ties = np.round(rng.standard_normal((3, 5, 6, 7)))
    y, i = F.adaptive_max_pool3d(tnet.tensor(ties), size, return_indices=True)
    ref, ref_i = TF.adaptive_max_pool3d(torch.tensor(ties), size, return_indices=True)
    assert np.array_equal(y.numpy(), ref.numpy()) and np.array_equal(i.numpy(), ref_i.numpy())


def test_3d_modules_as_torch(rng, ieee):
    """Conv3d (every padding_mode), ConvTranspose3d (output_size), BatchNorm3d (running statistics),
    InstanceNorm3d, the 3-D pads and the lazy forms, from torch's state_dict, with torch's reprs."""
    x = leaf(rng, 2, 4, 5, 6, 7)
    for mode in ("zeros", "reflect", "replicate", "circular"):
        ours, theirs = nn.Conv3d(4, 6, (3, 2, 3), 1, (1, 1, 2), padding_mode=mode), \
            torch.nn.Conv3d(4, 6, (3, 2, 3), 1, (1, 1, 2), padding_mode=mode).double()
        ours.load_state_dict({k: v.float() for k, v in theirs.state_dict().items()})
        check(ours, theirs, [x], rng)
        assert repr(ours) == repr(theirs)
    theirs = torch.nn.Conv3d(4, 6, 3, padding="same", padding_mode="reflect", bias=False).double()
    ours = nn.Conv3d(4, 6, 3, padding="same", padding_mode="reflect", bias=False)
    ours.load_state_dict({k: v.float() for k, v in theirs.state_dict().items()})
    check(ours, theirs, [x], rng)
    theirs = torch.nn.ConvTranspose3d(4, 3, 3, stride=2, padding=1).double()
    ours = nn.ConvTranspose3d(4, 3, 3, stride=2, padding=1)
    ours.load_state_dict({k: v.float() for k, v in theirs.state_dict().items()})
    check(lambda a: ours(a, output_size=(10, 12, 14)), lambda a: theirs(a, output_size=(10, 12, 14)), [x], rng)
    assert repr(ours) == repr(theirs) and ours.kernel_size == theirs.kernel_size
    ours, theirs = nn.BatchNorm3d(4), torch.nn.BatchNorm3d(4).double()
    check(ours, theirs, [x], rng)
    assert_close(ours.running_var, theirs.running_var, 1e-5, "running_var")
    check(ours.eval(), theirs.eval(), [x], rng)
    with pytest.raises(ValueError):
        nn.BatchNorm3d(4)(tnet.ones(2, 4, 3, 3))
    check(nn.InstanceNorm3d(4, affine=True), torch.nn.InstanceNorm3d(4, affine=True).double(), [x], rng)
    for name, args in (("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 2.5)), ("ZeroPad3d", (1,)),
                       ("ReflectionPad3d", ((1, 0, 2, 1, 0, 1),)), ("ReplicationPad3d", (2,)),
                       ("CircularPad3d", ((1, 0, 2, 1, 0, 1),))):
        ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        check(ours, theirs, [x], rng)
        assert repr(ours) == repr(theirs)
    lazy = nn.LazyConv3d(6, 2)
    assert lazy(x[0]).shape == (2, 6, 4, 5, 6) and type(lazy) is nn.Conv3d and lazy.in_channels == 4
    for lazy, full in ((nn.LazyConvTranspose3d(3, 2), nn.ConvTranspose3d), (nn.LazyBatchNorm3d(), nn.BatchNorm3d),
                       (nn.LazyInstanceNorm3d(), nn.InstanceNorm3d)):
        lazy(x[0])
        assert type(lazy) is full
    assert tnet.max_pool3d(x[0], 2).shape == torch.max_pool3d(x[1], 2).shape
    from tnet.nn.modules.conv import Conv3d  # torch's import paths
    assert Conv3d is nn.Conv3d and nn.modules.MaxPool3d is nn.MaxPool3d


def test_lp_pool3d_and_max_unpool3d_as_torch(rng):
    x = leaf(rng, 2, 3, 4, 5, 6, positive=True)
    for norm_type in (2.0, 1.5):
        check(nn.LPPool3d(norm_type, (2, 3, 2), stride=(1, 2, 2)),
              torch.nn.LPPool3d(norm_type, (2, 3, 2), stride=(1, 2, 2)), [x], rng)
    check(lambda a: F.lp_pool3d(a[0], 2.0, 2, ceil_mode=True), lambda a: TF.lp_pool3d(a[0], 2.0, 2, ceil_mode=True),
          [x], rng)
    y, i = F.max_pool3d(x[0].detach(), 2, return_indices=True)
    ry, ri = TF.max_pool3d(x[1].detach(), 2, return_indices=True)
    yl, ryl = leaf(rng, *y.shape, values=y.numpy())
    check(lambda a: nn.MaxUnpool3d(2)(a, i, (4, 5, 6)), lambda a: torch.nn.MaxUnpool3d(2)(a, ri, (4, 5, 6)),
          [(yl, ryl)], rng)
    check(lambda a: F.max_unpool3d(a, i, 2, output_size=(5, 5, 7)),
          lambda a: TF.max_unpool3d(a, ri, 2, output_size=(5, 5, 7)), [(yl, ryl)], rng)
    with pytest.raises(ValueError):
        F.max_unpool3d(y, i, 2, output_size=(9, 9, 9))
    for name in ("MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"):  # sizes as tuples, as torch's
        assert repr(getattr(nn, name)(2, 1)) == repr(getattr(torch.nn, name)(2, 1))


def test_adaptive_log_softmax_with_loss_as_torch(rng, ieee):
    """From torch's state_dict: output, loss, log_prob and predict, and the gradients of the input and of
    every parameter, on a batch whose targets fall in the shortlist and both clusters; torch's errors."""
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 13, [4, 9], div_value=2.0, head_bias=True).double()
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 13, [4, 9], div_value=2.0, head_bias=True)
    ours.load_state_dict({k: v.float() for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x, rx = leaf(rng, 7, 8)
    target = np.array([0, 5, 12, 3, 9, 4, 11])
    out, ref = ours(x, tnet.tensor(target)), theirs(rx, torch.tensor(target))
    assert_close(out.output, ref.output.detach(), 1e-5, "output")
    assert_close(out.loss, ref.loss.detach(), 1e-5, "loss")
    out.loss.backward()
    ref.loss.backward()
    assert_close(x.grad, rx.grad, 1e-5, "input gradient")
    for (name, p), (_, r) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, r.grad, 1e-5, name)
    with tnet.no_grad(), torch.no_grad():
        assert_close(ours.log_prob(x), theirs.log_prob(rx), 1e-5, "log_prob")
        assert np.array_equal(ours.predict(x).numpy(), theirs.predict(rx).numpy())
        one = ours(x[0], tnet.tensor(target[0]))
        assert one.output.shape == () and np.isclose(one.output.item(), out.output[0].item(), atol=1e-6)
    with pytest.raises(RuntimeError, match="Target values should be in"):
        ours(x, tnet.tensor(np.array([0, 1, 2, 3, 4, 5, 13])))
    with pytest.raises(RuntimeError, match="same size"):
        ours(x, tnet.tensor(target[:3]))
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 13, [9, 4])
    from tnet.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss
    assert AdaptiveLogSoftmaxWithLoss is nn.AdaptiveLogSoftmaxWithLoss


def test_top_level_ctc_loss_as_torch():
    """torch.ctc_loss, aten's form: the reduction an int, none by default; a name is the parser's TypeError."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 2, 5)).astype(np.float32)
    lp = torch.tensor(logits).log_softmax(2)
    t, il, tl = [[1, 2, 3], [4, 4, 0]], [6, 5], [3, 2]
    for args in ((), (0, 1), (0, 2, True)):
        got = tnet.ctc_loss(tnet.tensor(lp.numpy()), tnet.tensor(t), tnet.tensor(il), tnet.tensor(tl), *args)
        ref = torch.ctc_loss(lp, torch.tensor(t), torch.tensor(il), torch.tensor(tl), *args)
        assert got.shape == ref.shape and np.allclose(got.numpy(), ref.numpy(), rtol=1e-5), (args, got, ref)
    with pytest.raises(TypeError):
        tnet.ctc_loss(tnet.tensor(lp.numpy()), tnet.tensor(t), il, tl, reduction="mean")
    for lib, F_ in ((torch, torch.nn.functional), (tnet, tnet.functional)):  # the parser's TypeError before the lengths'
        for kw in ({"zero_infinity": "x"}, {"blank": 0.5}, {"blank": True}):  # check (tnet's RuntimeError first)
            with pytest.raises(TypeError):
                F_.ctc_loss(lib.tensor(lp.numpy()), lib.tensor(t), (6, 9), (3, 2), **kw)


def test_bce_with_logits_and_kl_div_refuse_integer_targets_as_torch():
    """A beginner's long labels as BCEWithLogitsLoss's target, or an integer tensor into kl_div, raise torch's
    RuntimeError (tnet computed a loss that torch refuses)."""
    x = tnet.tensor([0.3, -0.2])
    for target in (tnet.tensor([1, 0]), tnet.tensor([1, 0], dtype=tnet.int32)):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            tnet.nn.BCEWithLogitsLoss()(x, target)
    with pytest.raises(RuntimeError, match="Integral inputs not supported"):
        F.kl_div(x, tnet.tensor([1, 0]), reduction="sum")
    with pytest.raises(RuntimeError, match="Integral inputs not supported"):
        F.kl_div(tnet.tensor([1, 0]), x, reduction="sum")
    assert F.binary_cross_entropy_with_logits(x, tnet.tensor([1.0, 0.0])).dtype == tnet.float32


@pytest.mark.skipif(TORCH_BEFORE_2_13, reason="torch 2.13's nn.LinearCrossEntropyLoss")
@pytest.mark.parametrize("case", [
    {},  # class indices, mean
    {"bias": True, "out_features": (2,), "ignore_index": 1, "reduction": "sum", "class_weight": True},
    {"bias": True, "label_smoothing": 0.2, "reduction": "none", "probabilities": True},
    {"options": "chunked", "reduction": "sum"},  # torch's chunked path; tnet's reference one
])
def test_linear_cross_entropy_loss_as_torch(rng, case):
    """nn.LinearCrossEntropyLoss (and F.linear_cross_entropy) from torch's state_dict: the loss and the
    gradients of the input and of the linear layer, K-dimensional, weighted, ignored, smoothed and
    probability targets; torch's repr and errors."""
    case = dict(case)
    probabilities, class_weight = case.pop("probabilities", False), case.pop("class_weight", False)
    chunked = case.pop("options", None) is not None
    w = rng.uniform(0.5, 2.0, 5).astype(np.float32) if class_weight else None
    theirs = torch.nn.LinearCrossEntropyLoss(
        4, 5, weight=None if w is None else torch.tensor(w, dtype=torch.float64),
        options=torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2) if chunked else None, **case).double()
    ours = nn.LinearCrossEntropyLoss(4, 5, weight=None if w is None else tnet.tensor(w),
                                     options=nn.LinearCrossEntropyOptions(batch_chunk_size=2) if chunked else None,
                                     **case)
    ours.load_state_dict({k: v.float() for k, v in theirs.state_dict().items()})
    assert repr(ours) == repr(theirs)
    x, rx = leaf(rng, 3, 4)
    shape = (3, 5, *case.get("out_features", ()))
    if probabilities:
        target = rng.dirichlet(np.ones(5), 3).astype(np.float32)
        t, rt = tnet.tensor(target), torch.tensor(target, dtype=torch.float64)
    else:
        target = rng.integers(0, 5, (shape[0], *shape[2:]))
        t, rt = tnet.tensor(target), torch.tensor(target)
    out, ref = ours(x, t), theirs(rx, rt)
    assert_close(out, ref.detach(), 1e-5, "loss")
    out.sum().backward()
    ref.sum().backward()
    assert_close(x.grad, rx.grad, 1e-5, "input gradient")
    for (name, p), (_, r) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, r.grad, 1e-5, name)
    with pytest.raises(RuntimeError, match="expected weight shape"):
        nn.LinearCrossEntropyLoss(4, 5, weight=tnet.ones(4))
    with pytest.raises(RuntimeError, match="requires batched input"):
        F.linear_cross_entropy(x[0], tnet.ones(5, 2, 4), tnet.tensor(np.array([1, 2])))


@pytest.mark.parametrize("dims, transposed", [(1, False), (2, False), (2, True), (3, True)])
def test_top_level_convolution_as_torch(rng, ieee, dims, transposed):
    """torch.convolution, aten's one entry for every convolution (copied decompositions and exported graphs call it):
    the 1-, 2- and 3-D convolutions and their transposes by the weight's dims, with gradients."""
    size = (5, 4, 3)[dims - 1]
    x, w, b = leaf(rng, 2, 4, *(size,) * dims), leaf(rng, *((4, 3) if transposed else (6, 2)), *(3,) * dims), leaf(
        rng, 6)
    stride, padding, dilation, output_padding = [2] * dims, [1] * dims, [1] * dims, [int(transposed)] * dims
    check(lambda a, c, d: tnet.convolution(a, c, d, stride, padding, dilation, transposed, output_padding, 2),
          lambda a, c, d: torch.convolution(a, c, d, stride, padding, dilation, transposed, output_padding, 2),
          [x, w, b], rng)
    if not transposed:
        with pytest.raises(RuntimeError, match="output_padding is not supported"):
            tnet.convolution(x[0], w[0], None, stride, padding, dilation, False, [1] * dims, 2)


def test_top_level_grid_sampler_and_norm_except_dim_as_torch(rng, ieee):
    """torch.affine_grid_generator, grid_sampler (aten's int modes) and norm_except_dim, with gradients."""
    theta = leaf(rng, 2, 2, 3)
    check(lambda t: tnet.affine_grid_generator(t, [2, 3, 4, 5], False),
          lambda t: torch.affine_grid_generator(t, [2, 3, 4, 5], False), [theta], rng)
    x, grid = leaf(rng, 2, 3, 4, 5), leaf(rng, 2, 3, 2, 2)
    for mode, padding in ((0, 0), (1, 1), (0, 2)):
        for name in ("grid_sampler", "grid_sampler_2d"):
            check(lambda a, g: getattr(tnet, name)(a, g, mode, padding, True),
                  lambda a, g: getattr(torch, name)(a, g, mode, padding, True), [x, grid], rng)
    for p, dim in ((2, 0), (3, 1), (2, -1)):
        check(lambda a: tnet.norm_except_dim(a, p, dim), lambda a: torch.norm_except_dim(a, p, dim), [leaf(rng, 3, 4, 5)],
              rng)


def test_top_level_embedding_renorm_as_torch(rng):
    """torch.embedding_renorm_: the rows looked up past max_norm scaled in place, weight returned, as torch's."""
    values = rng.standard_normal((6, 4)).astype(np.float32) * 2
    ours, theirs = tnet.tensor(values), torch.tensor(values)
    idx = [4, 1, 4, 0]
    assert tnet.embedding_renorm_(ours, tnet.tensor(idx), 1.5, 2.0) is ours
    torch.embedding_renorm_(theirs, torch.tensor(idx), 1.5, 2.0)
    assert_close(ours, theirs, TOL["ieee"], "embedding_renorm_")
