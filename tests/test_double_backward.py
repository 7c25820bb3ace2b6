"""Higher-order gradients (create_graph=True): autograd.grad's gradients on the tape, then a
backward through them, against torch in float64: small expressions of each covered op, a
WGAN-GP critic step (conv, leaky_relu, linear, the gradient penalty), double backprop through a
CNN (batch norm, pooling, cross-entropy), and the errors for ops without a graph backward."""
import numpy as np
import pytest
import torch

import tnet
from helpers import assert_close, leaf

TNET = (tnet, tnet.nn.functional)
TORCH = (torch, torch.nn.functional)
TOL2 = 1e-4  # second derivatives chain several fp32 kernels


def second_order(rng, fn, *shapes, positive=False, tol=TOL2):
    """fn(T, F, *xs) -> a tensor; its gradients g_i (create_graph, seeded by fixed values) and then
    the gradients of sum_i sum(g_i * w_i) with respect to every x_i, against torch's."""
    pairs = [leaf(rng, *s, positive=positive) for s in shapes]
    xs, refs = [t for t, _ in pairs], [r for _, r in pairs]
    out, ref = fn(*TNET, *xs), fn(*TORCH, *refs)
    seed = rng.standard_normal(ref.shape)
    weights = [rng.standard_normal(s) for s in shapes]
    gs = tnet.autograd.grad(out, xs, grad_outputs=tnet.tensor(seed), create_graph=True)
    grs = torch.autograd.grad(ref, refs, grad_outputs=torch.tensor(seed), create_graph=True)
    for i, (g, gr) in enumerate(zip(gs, grs)):
        assert_close(g, gr, tol, f"gradient {i}")
    sum(((g * tnet.tensor(w)).sum() for g, w in zip(gs, weights)), tnet.tensor(0.0)).backward()
    sum(((g * torch.tensor(w)).sum() for g, w in zip(grs, weights)), torch.tensor(0.0)).backward()
    for i, (x, r) in enumerate(zip(xs, refs)):
        if r.grad is None:  # torch: no second-order path (a piecewise-linear op): tnet gives zeros or None
            assert x.grad is None or not np.any(x.grad.numpy()), f"second-order gradient {i}"
        else:
            assert_close(x.grad, r.grad, tol, f"second-order gradient {i}")


@pytest.mark.parametrize("name, fn", [
    ("add_sub", lambda T, F, x, y: (x + y) * (x - 2.5 * y) - (1.5 - x) * y),
    ("mul_div", lambda T, F, x, y: x * y / (x * x + 1.0) + 3.0 / (y * y + 2.0)),
    ("neg_pow", lambda T, F, x, y: -(x ** 3) + (y ** 2) * x + (x * y) ** 2 - x ** 0 * y),
    ("exp_log_sqrt", lambda T, F, x, y: T.exp(x * 0.3) * T.log(y * y + 1.0) + T.sqrt(x * x + 0.5)),
    ("tanh_sigmoid", lambda T, F, x, y: T.tanh(x) * T.sigmoid(y) + T.sigmoid(x * y)),
    ("abs_relu_leaky", lambda T, F, x, y: T.abs(x) * y * y + F.relu(x) * x * y + F.leaky_relu(y, 0.2) * x * x),
])
def test_second_order_pointwise(rng, name, fn):
    second_order(rng, fn, (2, 3), (2, 3))


def test_second_order_broadcasting(rng):
    """Operands of different shapes: each gradient (and its gradient) summed back to its shape."""
    second_order(rng, lambda T, F, x, y, z: x * y / (z * z + 1.0) + (x - y) * z, (2, 3), (3,), (2, 1))


def test_second_order_pow_sqrt_log(rng):
    second_order(rng, lambda T, F, x: T.sqrt(x) * T.log(x) + x ** -1.5 + x ** 2.5, (3, 2), positive=True)


def test_second_order_reductions_and_views(rng):
    def fn(T, F, x, y):  # x [4, 3], y [3]
        a = (x * x).sum(1, keepdim=True) * y.mean()
        b = x.view(2, 6).reshape(3, 4).flatten() * y.expand(4, 3).t().reshape(-1)
        c = x[1:3, ::2] * x[:2, 1:].sum()
        d = x.permute(1, 0)[0] * y.unsqueeze(0)[0, 1] + x.transpose(0, 1).unsqueeze(0).squeeze()[2]
        return a.sum() * b.mean() + (c * c).sum() + (d ** 2).sum() + (x.mean(0) * y).sum() ** 2
    second_order(rng, fn, (4, 3), (3,))


def test_second_order_norm(rng):
    """The gradient penalty's norm: Tensor.norm(2, dim=1) and linalg.vector_norm."""
    second_order(rng, lambda T, F, x: (x.norm(2, dim=1) - 1) ** 2 * T.linalg.vector_norm(x * x, dim=0)[0], (3, 4))


def test_second_order_linear_matmul(rng, ieee):
    second_order(rng, lambda T, F, x, w, b: T.tanh(F.linear(x, w, b)), (3, 4), (5, 4), (5,))
    second_order(rng, lambda T, F, a, b: T.sigmoid(T.matmul(a, b)) * T.mm(a, b), (3, 4), (4, 2))
    second_order(rng, lambda T, F, a, b: T.tanh(T.matmul(a, b)), (2, 3, 4), (4, 2))
    second_order(rng, lambda T, F, a, b: T.tanh(T.matmul(a, b)), (3, 4), (2, 4, 2))


@pytest.mark.parametrize("stride, padding, bias", [(1, 1, True), (2, 1, False), (2, 0, True)])
def test_second_order_conv2d(rng, ieee, stride, padding, bias):
    """The input's gradient (a transposed convolution) and the weight's (a convolution) on the tape;
    odd sizes, so that a stride leaves rows out."""
    shapes = [(2, 3, 7, 6), (4, 3, 3, 3)] + ([(4,)] if bias else [])
    second_order(rng, lambda T, F, x, w, *b: T.tanh(F.conv2d(x, w, *b, stride=stride, padding=padding)), *shapes)


def test_third_order(rng):
    """grad of grad of grad: the graph backwards' own ops give theirs."""
    x = tnet.tensor([0.7, -1.3], requires_grad=True)
    xr = torch.tensor([0.7, -1.3], dtype=torch.float64, requires_grad=True)
    for T, v in ((tnet, x), (torch, xr)):
        y = (T.tanh(v) * v ** 3).sum()
        for _ in range(2):
            y = T.autograd.grad(y, v, create_graph=True)[0].sum()
        y.backward()
    assert_close(x.grad, xr.grad, TOL2, "third derivative")


def test_backward_create_graph_keeps_leaf_graph(rng):
    """backward(create_graph=True): the leaves' .grad hold their graph, as torch's."""
    (x, xr), (w, wr) = leaf(rng, 3), leaf(rng, 3)
    for T, a, b in ((tnet, x, w), (torch, xr, wr)):
        (T.sigmoid(a * b).sum() * 2).backward(create_graph=True)
        assert a.grad.requires_grad
        g = a.grad
        a.grad = None
        (g * g).sum().backward()
    assert_close(x.grad, xr.grad, TOL2, "x")
    assert_close(w.grad, wr.grad, TOL2, "w")


def test_unsupported_op_raises(rng):
    x = tnet.tensor([[[0.5, -1.0, 2.0]]], requires_grad=True)
    y = tnet.cumprod(x, 2)[0, 0, 0]
    with pytest.raises(NotImplementedError, match="create_graph through cumprod"):
        tnet.autograd.grad(y, x, create_graph=True)
    x.grad = None
    (x * 2).sum().backward()  # without create_graph nothing changed
    assert x.grad.tolist() == [[[2.0, 2.0, 2.0]]]


def wgan_gp_step(T, F, params, real, fake, alpha):
    """A DCGAN-like critic (conv, leaky_relu, conv, leaky_relu, flatten, linear) and its WGAN-GP
    loss, the penalty's gradient with create_graph; backward."""
    w1, b1, w2, b2, w3, b3 = params

    def critic(x):
        h = F.leaky_relu(F.conv2d(x, w1, b1, stride=2, padding=1), 0.2)
        h = F.leaky_relu(F.conv2d(h, w2, b2, stride=2, padding=1), 0.2)
        return F.linear(h.flatten(1), w3, b3)
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_interp = critic(interp)
    gradients = T.autograd.grad(outputs=d_interp, inputs=interp, grad_outputs=T.ones_like(d_interp),
                                create_graph=True, retain_graph=True, only_inputs=True)[0]
    n = real.shape[0]
    gp = ((gradients.view(n, -1).norm(2, dim=1) - 1) ** 2).mean() * 10
    d_loss = critic(fake).mean() - critic(real).mean()
    (d_loss + gp).backward()
    return gp


def test_wgan_gp_critic_step(rng, ieee):
    """The parameters' .grad after (d_loss + gp).backward() match torch's."""
    shapes = [(4, 1, 3, 3), (4,), (6, 4, 3, 3), (6,), (1, 6 * 2 * 2), (1,)]
    pairs = [leaf(rng, *s) for s in shapes]
    data = [leaf(rng, 3, 1, 7, 7)[0].memory.cpu().numpy() for _ in range(2)] + [rng.random((3, 1, 1, 1))]
    gp = wgan_gp_step(*TNET, [p for p, _ in pairs], *(tnet.tensor(d) for d in data))
    gpr = wgan_gp_step(*TORCH, [r for _, r in pairs], *(torch.tensor(d, dtype=torch.float64) for d in data))
    assert_close(gp, gpr.detach(), TOL2, "penalty")
    for i, (p, r) in enumerate(pairs):
        assert_close(p.grad, r.grad, TOL2, f"parameter {i}")


def test_second_order_var_std_and_norm_layers(rng):
    """var and std, and LayerNorm, InstanceNorm and RMSNorm, composed of them and the element-wise ops."""
    second_order(rng, lambda T, F, x: T.var(x, 1) * T.std(x, 0, keepdim=True).sum() + T.var_mean(x)[0], (3, 4))
    second_order(rng, lambda T, F, x, w, b: T.tanh(F.layer_norm(x, (3, 2), w, b)), (2, 3, 2), (3, 2), (3, 2))
    second_order(rng, lambda T, F, x, w, b: T.tanh(F.instance_norm(x, weight=w, bias=b)), (2, 3, 2, 2), (3,), (3,))
    second_order(rng, lambda T, F, x, w: T.tanh(F.rms_norm(x, (3, 2), w, 1e-6)), (2, 3, 2), (3, 2))
    second_order(rng, lambda T, F, x: T.tanh(F.rms_norm(x, (4,), eps=1e-6)), (3, 4))


LABELS = np.array([1, 0, 3])


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.2},
                                {"ignore_index": 0}, {"weight": [0.5, 1.0, 2.0, 1.5]}])
def test_second_order_softmax_cross_entropy_and_nll(rng, kw):
    """softmax, log_softmax, the fused cross-entropy (2-D logits, no weight), the composed one and
    nll_loss: an input-gradient penalty's path (double backprop)."""
    def fn(T, F, x, loss):
        k = dict(kw, weight=T.tensor(np.array(kw["weight"]), dtype=x.dtype)) if "weight" in kw else kw
        if loss == "nll":
            k = {a: b for a, b in k.items() if a != "label_smoothing"}
            return F.nll_loss(F.log_softmax(x * x, 1), T.tensor(LABELS), **k) + (F.softmax(x, 0)[0] * x[1]).sum()
        return F.cross_entropy(x * x, T.tensor(LABELS), **k) * 1.0
    for loss in ("nll", "cross_entropy"):
        second_order(rng, lambda T, F, x: fn(T, F, x, loss), (3, 4))


def test_second_order_cross_entropy_of_images_and_probabilities(rng):
    t = np.array([[[1, 0], [2, 2]], [[0, 1], [1, 1]]])
    second_order(rng, lambda T, F, x: F.cross_entropy(x * x, T.tensor(t), reduction="none", label_smoothing=0.1),
                 (2, 3, 2, 2))
    second_order(rng, lambda T, F, x: F.cross_entropy(x * x, F.softmax(x.detach() * 2, 1)) * F.log_softmax(x, -1).sum(),
                 (2, 3))
    second_order(rng, lambda T, F, x: F.cross_entropy(x * x, T.tensor(np.array(2))) * 1.0, (3,))


@pytest.mark.parametrize("training", [True, False])
def test_second_order_batch_norm(rng, training):
    def fn(T, F, x, w, b):
        rm, rv = T.tensor(np.array([0.1, -0.2, 0.3]), dtype=x.dtype), T.tensor(np.array([1.5, 0.7, 2.0]), dtype=x.dtype)
        return T.tanh(F.batch_norm(x * x, rm, rv, w, b, training=training))
    second_order(rng, fn, (4, 3, 2, 2), (3,), (3,))
    second_order(rng, lambda T, F, x: T.tanh(F.batch_norm(x * x, None, None, training=True)), (5, 3))


@pytest.mark.parametrize("pool", [lambda F, x: F.max_pool2d(x, 2), lambda F, x: F.max_pool2d(x, 3, 1, 1),
                                  lambda F, x: F.max_pool2d(x[0], 2, ceil_mode=True), lambda F, x: F.avg_pool2d(x, 2),
                                  lambda F, x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False, ceil_mode=True),
                                  lambda F, x: F.avg_pool2d(x, 2, divisor_override=3)])
def test_second_order_pooling(rng, pool):
    second_order(rng, lambda T, F, x: T.tanh(pool(F, x)) * x.sum(), (2, 3, 5, 4), tol=1e-5)


def gradient_penalty_step(T, F, params, x, labels):
    """Double backprop (an input-gradient penalty) through a small CNN: conv, batch norm, ReLU, max
    pooling, conv, global average pooling, linear, cross-entropy."""
    w1, g1, b1, w2, w3, b3 = params
    h = F.max_pool2d(F.relu(F.batch_norm(F.conv2d(x, w1, padding=1), None, None, g1, b1, training=True)), 2)
    logits = F.linear(F.adaptive_avg_pool2d(F.conv2d(h, w2, padding=1), 1).flatten(1), w3, b3)
    loss = F.cross_entropy(logits, labels)
    (gx,) = T.autograd.grad(loss, x, create_graph=True)
    total = loss + 10 * (gx * gx).sum()
    total.backward()
    return total


def test_gradient_penalty_through_a_cnn_as_torch(rng, ieee):
    shapes = [(4, 3, 3, 3), (4,), (4,), (5, 4, 3, 3), (10, 5), (10,)]
    pairs = [leaf(rng, *s) for s in shapes]
    x, xr = leaf(rng, 2, 3, 6, 6)
    labels = np.array([3, 7])
    got = gradient_penalty_step(*TNET, [p for p, _ in pairs], x, tnet.tensor(labels))
    want = gradient_penalty_step(*TORCH, [r for _, r in pairs], xr, torch.tensor(labels))
    assert_close(got, want.detach(), TOL2, "loss")
    for i, (p, r) in enumerate(pairs):
        assert_close(p.grad, r.grad, TOL2, f"parameter {i}")


@pytest.mark.parametrize("name, fn", [
    ("gelu", lambda T, F, x: F.gelu(x * x - 0.5) * x + F.gelu(x, approximate="tanh") * x * x),
    ("silu", lambda T, F, x: F.silu(x * x - 0.5) * x),
    ("elu_celu", lambda T, F, x: F.elu(x * x - 0.5, 0.7) * x + F.celu(x * 2, 0.7) * x),
    ("softplus", lambda T, F, x: F.softplus(x * x - 0.5, 2.0, 1.0) * x + F.softplus(x) * x),
    ("hardtanh_relu6", lambda T, F, x: F.hardtanh(x * x - 0.5, -0.3, 0.6) * x + F.relu6(x * 3) * x),
])
def test_second_order_activations(rng, name, fn):
    second_order(rng, fn, (3, 5))


def test_second_order_dropout_keeps_its_mask(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    x = tnet.tensor(a, requires_grad=True)
    y = tnet.nn.functional.dropout(x * x, 0.3)
    (g,) = tnet.autograd.grad(y.sum(), x, create_graph=True)
    kept = (y.detach().numpy() != 0) / 0.7
    np.testing.assert_allclose(g.numpy(), 2 * a * kept, rtol=1e-6)
    (g * g).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * a * kept * kept, rtol=1e-5)


@pytest.mark.parametrize("name, fn", [
    ("cat_stack", lambda T, F, x: T.tanh(T.cat([x, x * 2], 1)).sum((0, 1)) + T.tanh(T.stack([x, x * x], 1)).sum((0, 1, 2))),
    ("pad", lambda T, F, x: T.tanh(F.pad(x, (1, 2, 0, 1), value=0.5)).sum((2, 3)) +
     T.tanh(F.pad(x, (1, 1, 1, 1), mode="reflect")).sum((2, 3)) + T.tanh(F.pad(x, (2, 0, 1, 1), mode="replicate")).sum((2, 3))),
    ("adaptive_avg_pool", lambda T, F, x: T.tanh(F.adaptive_avg_pool2d(x, (2, 3))) + T.tanh(F.adaptive_avg_pool2d(x[0], 2)).sum()),
    ("interpolate", lambda T, F, x: T.tanh(F.interpolate(x, scale_factor=2)).sum((2, 3)) +
     T.tanh(F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False)).sum((2, 3))),
    ("index_select_embedding", lambda T, F, x: T.tanh(x.index_select(1, T.tensor(np.array([0, 2, 2])))).sum((1, 2, 3)) +
     T.tanh(F.embedding(T.tensor(np.array([1, 0])), x.flatten(1))).sum(1)),
    ("clamp_logsumexp", lambda T, F, x: (T.tanh(x.clamp(-0.5, 0.5)) * x + x.clamp(min=0.2) * x).sum((2, 3)) +
     (x.logsumexp(1).sum((1, 2)) * x[:, 0, 0, 0]).unsqueeze(1)),
])
def test_second_order_shape_and_selection_ops(rng, name, fn):
    """cat, stack, pad, adaptive average pooling, interpolate, index_select (embedding, nearest
    upsampling, advanced indexing), clamp and logsumexp."""
    second_order(rng, fn, (2, 3, 4, 4))


@pytest.mark.parametrize("name, fn", [
    ("max_min_dim", lambda T, F, x: T.tanh(x.max(1).values) * x[:, 0] + x.min(2, keepdim=True).values.sum()),
    ("max_min_all", lambda T, F, x: x.max() * x * x + x.min() * x),
    ("amax_amin", lambda T, F, x: T.tanh(x.amax((1, 2))).reshape(2, 1, 1) * x + T.amin(x * x, 0).sum()),
    ("ties_and_steps", lambda T, F, x: (T.tanh(T.round(x).amax(1)) * x[:, 0]).sum() +
     T.tanh(x.clamp(max=0.0).amax(1, keepdim=True) * x).sum() + T.floor(x) * x),
])
def test_second_order_selections(rng, name, fn):
    """max/min (along a dim, and of all elements: ties share), amax/amin, and step functions (round,
    floor) whose gradients of every order are 0."""
    second_order(rng, fn, (2, 3, 4))


@pytest.mark.parametrize("name, fn", [
    ("repeat", lambda T, F, x: T.tanh(x.repeat(2, 1, 3)).sum(0) + T.tanh(x[0].repeat(1, 1, 1, 2)).sum()),
    ("smooth_l1_huber", lambda T, F, x: F.smooth_l1_loss(x * x, x.detach() * 0.5, beta=0.5) * x.sum() +
     F.huber_loss(x * x, x.detach(), reduction="sum")),
    ("binary_cross_entropy", lambda T, F, x: F.binary_cross_entropy(T.sigmoid(x), T.sigmoid(x.detach() * 2)) * x.sum() +
     F.binary_cross_entropy(T.sigmoid(x), T.sigmoid(x * 0.5), reduction="sum")),
])
def test_second_order_repeat_and_losses(rng, name, fn):
    second_order(rng, fn, (2, 3, 4))


@pytest.mark.parametrize("name", ["hardswish", "mish", "selu", "logsigmoid", "softsign"])
def test_second_order_more_activations(rng, name):
    second_order(rng, lambda T, F, x: getattr(F, name)(x * 3) * x * x, (4, 6))


def test_hardsigmoid_gradient_of_gradient_runs():
    """torch has no double backward for hardsigmoid; tnet's (piecewise linear) is zero."""
    x = tnet.tensor([[-4.0, -1.0, 0.5, 3.5]], requires_grad=True)
    (g,) = tnet.autograd.grad(tnet.nn.functional.hardsigmoid(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [[0.0, 1 / 6, 1 / 6, 0.0]], rtol=1e-6)
    (g * x).sum().backward()
    assert x.grad.tolist() == g.detach().tolist()


@pytest.mark.parametrize("args", [{}, {"stride": 2, "padding": 1, "output_padding": 1}, {"dilation": 2, "padding": 1}])
def test_second_order_conv_transpose2d_and_cumsum(rng, ieee, args):
    second_order(rng, lambda T, F, x, w, b: T.tanh(F.conv_transpose2d(x, w, b, **args)).sum() + T.tanh(x.cumsum(3)),
                 (2, 3, 4, 5), (3, 2, 3, 3), (2,), tol=2e-4)


@pytest.mark.parametrize("name", ["conv2d", "conv_transpose2d"])
def test_second_order_grouped_convolutions(rng, ieee, name):
    """groups 2: the weight's gradient on the tape is a convolution per group, joined along its channels."""
    shapes = [(2, 4, 6, 5), (6, 2, 3, 3)] if name == "conv2d" else [(2, 4, 4, 5), (4, 3, 3, 3)]
    second_order(rng, lambda T, F, x, w: T.tanh(getattr(F, name)(x, w, None, 2, 1, groups=2)), *shapes, tol=2e-4)


def _i(T, rows):
    return T.tensor(rows)


def _written(x, index, value):
    """x with x[index] = value (slices and ints, or index tensors), as a force field builds its features."""
    x[index] = value
    return x


@pytest.mark.parametrize("name, fn", [
    ("index_add", lambda T, F, x: T.tanh(T.index_add(x[:2] * x[:2], 0, _i(T, [1, 1, 0]), T.tanh(x), alpha=0.5)) * 2 +
     T.tanh(x.new_zeros(4, 4).index_add_(0, _i(T, [3, 0, 3]), x * x)).sum()),
    ("scatter_add", lambda T, F, x: T.tanh(x.new_zeros(3, 5).scatter_add(1, _i(T, [[4, 0], [1, 1], [0, 2]]), x[:, :2] * x[:, :2])).sum(1, True) +
     T.tanh(x.new_zeros(2, 4).scatter_add_(0, _i(T, [[1, 0, 1, 1], [1, 0, 0, 1]]), x[:2] * x[:2])).sum()),
    ("scatter_reduce", lambda T, F, x: T.tanh(x.scatter_reduce(1, _i(T, [[3, 0], [1, 1], [0, 3]]), x[:, :2] * x[:, 2:], "mean")) +
     T.tanh(x.new_zeros(3, 4).scatter_reduce(1, _i(T, [[3, 0, 0], [1, 1, 2], [0, 3, 3]]), T.tanh(x[:, 1:]), "amax",
                                             include_self=False))),
    ("scatter", lambda T, F, x: T.tanh(x.scatter(1, _i(T, [[3, 0], [1, 2], [0, 3]]), x[:, 1:3] * x[:, :2])) +
     T.tanh(x * x).scatter(0, _i(T, [[2, 0, 1, 0]]), 0.5)),
    ("index_copy", lambda T, F, x: T.tanh(T.index_copy(x * x, 1, _i(T, [3, 0]), T.tanh(x[:, 1:3])))),
    ("unfold_windows", lambda T, F, x: T.tanh(x.unfold(1, 2, 1) * x.unfold(1, 2, 1)).sum(-1) +
     T.tanh(x.unfold(0, 2, 2)).sum()),
    ("setitem_slices", lambda T, F, x: T.tanh(_written(x * x, (slice(None), slice(1, 3)), T.tanh(x[:, :2]))) +
     T.tanh(_written(x.new_zeros(3, 4), (1,), x[0] * x[2])) * x),
    ("setitem_advanced", lambda T, F, x: T.tanh(_written(T.tanh(x) * x, (_i(T, [2, 0]),), x[1:] * x[1:])) * x +
     T.tanh(_written(x * x, (slice(None), _i(T, [3, 1])), 0.5)) * x),
])
def test_second_order_scatters_and_windows(rng, name, fn):
    """index_add, scatter_add (SchNet's and EGNN's segment sums under forces by autograd), scatter_reduce, scatter,
    index_copy, Tensor.unfold and x[slices] = value: each gradient is a linear map of the output's, recorded on the
    tape."""
    second_order(rng, fn, (3, 4))


@pytest.mark.parametrize("name, fn", [
    ("sin_cos_log1p_expm1_reciprocal_rsqrt", lambda T, F, x: T.sin(x) * T.cos(x * x) + T.log1p(x * x) + T.expm1(x) * x +
     T.reciprocal(x * x + 1) + T.rsqrt(x * x + 1)),
    ("log2_log10_exp2_erf_frac", lambda T, F, x: T.log2(x * x + 1) + T.log10(x * x + 1) * x + T.exp2(x) * x + T.erf(x) * x +
     T.frac(x * 3) * x),
    ("hyperbolic_and_arcs", lambda T, F, x: T.sinh(x) * x + T.cosh(x) + T.asin(T.tanh(x) * 0.9) * x +
     T.acos(T.tanh(x) * 0.9) * x + T.atan(x) * x),
    ("tan_inverse_hyperbolic_erfc_erfinv", lambda T, F, x: T.tan(T.tanh(x)) * x + T.acosh(x * x + 1.5) + T.asinh(x) * x +
     T.atanh(T.tanh(x) * 0.9) * x + T.erfc(x) * x + T.erfinv(T.tanh(x) * 0.9) * x),
    ("contiguous_clone_flip", lambda T, F, x: T.tanh(x.t().contiguous()).t() * x + T.tanh(x.clone()) * x +
     T.tanh(T.flip(x, (0, 1)))),
    ("tanhshrink", lambda T, F, x: F.tanhshrink(x * 2) * x),
    ("special_functions", lambda T, F, x: T.special.i0(x) * x + T.special.i0e(x) * x + T.special.log_ndtr(x) * x +
     T.special.erfcx(x) * x + T.special.ndtri(T.sigmoid(x)) * x + T.special.i1(x) * x + T.special.i1e(x) * x +
     T.sinc(x) * x),
    ("p_norms", lambda T, F, x: T.linalg.vector_norm(x * x + x, 3.0, dim=1, keepdim=True) * x +
     T.linalg.vector_norm(x, 1.5) * x + T.linalg.vector_norm(x * x + 0.1, 0.5, dim=0) +
     T.linalg.vector_norm(x * x, float("inf"), dim=1, keepdim=True) * x + T.linalg.vector_norm(x, -float("inf")) * x),
    ("diag_embed_block_diag", lambda T, F, x: T.tanh(T.diag_embed(x * x, 1)).sum(-1)[:, :4] * x +
     T.tanh(T.block_diag(x * x, x[0], x[1:, :2] * x[0, 0])).sum() * x),
])
def test_second_order_math_and_copies(rng, name, fn):
    second_order(rng, fn, (3, 4))


def test_second_order_multi_head_attention(rng, ieee):
    """nn.MultiheadAttention (its projections, softmax and contiguous copies) in an input-gradient penalty."""
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    layer = tnet.nn.MultiheadAttention(4, 2, batch_first=True)
    ref = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()
    ref.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64) for k, v in layer.state_dict().items()})
    x, xr = tnet.tensor(a, requires_grad=True), torch.tensor(a, dtype=torch.float64, requires_grad=True)
    for lib, m, v in ((tnet, layer, x), (torch, ref, xr)):
        y = m(v, v, v)[0]
        (g,) = lib.autograd.grad((y * y).sum(), v, create_graph=True)
        (g * g).sum().backward()
    assert_close(x.grad, xr.grad, TOL2, "second-order gradient")
    assert_close(layer.in_proj_weight.grad, ref.in_proj_weight.grad, TOL2, "in_proj_weight")


@pytest.mark.parametrize("name, fn", [
    ("atan2_hypot", lambda T, F, x, y: T.atan2(x, y * y + 0.5) * x + T.hypot(x, y) * y),
    ("logaddexp_xlogy", lambda T, F, x, y: T.logaddexp(x, y * 2) * x + T.xlogy(x, y * y + 0.1) * y + T.xlogy(x, 2.0) * x),
    ("lerp", lambda T, F, x, y: T.lerp(x, y * y, 0.3) * x + T.lerp(x * x, y, T.sigmoid(y)) * y),
    ("addcmul_addcdiv", lambda T, F, x, y: T.addcmul(x, x, y * y, value=0.5) * y +
     T.addcdiv(x * x, y, x * x + 1.0, value=2.0) * x),
    # tensor bounds: each operand's gradient is g where it was taken (ports 31's reproducer raised NotImplementedError)
    # fmod's and remainder's other gradient -g * a step of x / y, copysign's g * (y / x) (ports 31's list)
    ("fmod_remainder_copysign", lambda T, F, x, y: T.fmod(x * x, y * y + 0.5) * y + T.remainder(x * x, y * y + 0.5) * x +
     T.remainder(x, 1.5) * x + T.copysign(x * x, y) * y + T.copysign(x, -1.0) * x),
    ("clamp_tensor_bounds", lambda T, F, x, y: T.tanh(x.clamp(min=y * 0.5, max=y * y + 0.5)) * x +
     T.tanh(x * x).clamp(max=T.tanh(y)) * y),
])
def test_second_order_binary_functions(rng, name, fn):
    second_order(rng, fn, (3, 4), (3, 4))


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "abs", "hardtanh"])
def test_piecewise_linear_ops_leave_a_zero_second_order_gradient_as_torch(act):
    """Their gradients read x only through a mask; torch still counts x as used: zeros, not None."""
    a, w = np.array([[1.0, -2.0]], np.float32), np.array([[0.5], [1.5]], np.float32)
    for lib in (tnet, torch):
        x, W = lib.tensor(a, requires_grad=True), lib.tensor(w, requires_grad=True)
        fn = getattr(lib.nn.functional, act) if act != "abs" else lib.abs
        (gx,) = lib.autograd.grad(fn(x @ W).sum(), x, create_graph=True)
        got = lib.autograd.grad((gx * gx).sum(), [x, W])
        assert got[0].tolist() == [[0.0, 0.0]]


@pytest.mark.parametrize("name, fn", [
    ("sort_topk", lambda T, F, x: T.tanh(x.sort(1).values) * x + T.tanh(x.topk(2, 0).values).sum() +
     T.tanh(T.sort(x * x, 0, descending=True)[0])),
    ("lgamma_digamma_polygamma", lambda T, F, x: T.lgamma(x * x + 0.5) * x + T.digamma(x * x + 0.5) * x +
     T.polygamma(1, x * x + 0.5) * x),
    ("logit", lambda T, F, x: T.logit(T.sigmoid(x)) * x + T.logit(T.sigmoid(x) * 0.5 + 0.25, eps=0.1) * x),
])
def test_second_order_sorts_gamma_functions_and_logit(rng, name, fn):
    """polygamma's series (the gradient of polygamma(1, x) is polygamma(2, x)) hold about 1e-4, and
    logit(sigmoid(x)) loses digits in float32's 1 - sigmoid(x)."""
    second_order(rng, fn, (3, 4), tol=TOL2 if name == "sort_topk" else 1e-3)


def test_second_order_adaptive_max_pooling(rng):
    second_order(rng, lambda T, F, x: T.tanh(F.adaptive_max_pool2d(x, (2, 3))) + T.tanh(F.adaptive_max_pool2d(x[0], 1)).sum() +
                 T.tanh(F.adaptive_max_pool1d(x[0], 2)).sum(), (2, 3, 5, 4), tol=1e-5)
