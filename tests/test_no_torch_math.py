"""tnet uses torch for memory only: a forward, backward and SGD step may dispatch no aten
operator but allocation, fill, copy and views."""
import numpy as np

import tnet
import tnet.functional as F
from tnet import optim
from tnet.models import cifar10_quick
from helpers import MEMORY_OPS, Recorder


def test_training_step_uses_torch_for_memory_only(monkeypatch):
    from tnet.kernels import gemm
    monkeypatch.setattr(gemm, "TRANSPOSE_MIN", 8)  # small tf32 products take the K-major copy path too
    rng = np.random.default_rng(0)
    model = cifar10_quick(seed=0)
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=0.004)
    x = tnet.tensor(rng.standard_normal((4, 3, 32, 32)))
    y = tnet.tensor(rng.integers(0, 10, 4))
    with Recorder() as rec:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with tnet.no_grad():
            F.softmax(model(x), dim=1)
        F.max_pool2d(F.relu(x), 2).reshape(4, -1)
        xs, w = (tnet.tensor(rng.standard_normal(s), requires_grad=True) for s in ((2, 3, 9, 9), (2, 3, 3, 3)))
        F.conv2d(xs, w, stride=2).backward(np.ones((2, 2, 4, 4)))  # a strided input gradient
        xg, wg, wd = (tnet.tensor(rng.standard_normal(s), requires_grad=True)
                      for s in ((2, 4, 7, 7), (4, 2, 2, 2), (8, 1, 3, 3)))
        F.conv2d(xg, wg, None, 1, "same", 2, 2).backward(np.ones((2, 4, 7, 7)))  # grouped, dilated, uneven 'same'
        F.conv2d(xg, wd, None, 2, 1, 1, 4).backward(np.ones((2, 8, 4, 4)))  # depthwise, channel multiplier 2
    assert rec.ops, "the recorder saw nothing"
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_shape_ops_casts_random_and_dropout_use_torch_for_memory_only():
    import torch
    from tnet import nn
    rng = np.random.default_rng(0)
    with Recorder() as rec:
        tnet.manual_seed(3)
        x = tnet.tensor(rng.standard_normal((4, 16, 5, 3)), requires_grad=True)
        x.memory = x.memory.contiguous(memory_format=torch.channels_last)
        y = F.dropout(x[1:, ::2, None, 1:][..., 0, :, :], 0.3)  # slices of a channels-last tensor
        h = y.flatten(1).T.to(tnet.float16).float().t().view(3, -1)
        F.matmul(h, h.T).backward(np.ones((3, 3)))
        nn.Dropout(0.5)(tnet.randn(6, 7, requires_grad=True)).backward(np.ones((6, 7)))
        tnet.zeros(2, 3), tnet.ones(4), tnet.full((2,), 7), tnet.rand(5, 2)
        x.to(tnet.int64).float(), x[0, 0, 0].tolist(), float(x[0, 0, 0, 0]), int(x.size(1))
        # the shape ops of issue 26, on the channels-last x, and their backwards
        parts = [tnet.cat(x.split([5, 11], 1)[::-1], 1), tnet.stack(x.chunk(2, 0)).flatten(0, 1), x.flip(1, -1),
                 x.permute(0, 2, 3, 1).transpose(1, 3).swapaxes(2, 3), x.clone(), x.repeat(1, 1, 1, 1),
                 x[:, :1].expand(4, 16, 5, 3), tnet.index_select(x, 1, tnet.tensor([3, 3, 0] * 5 + [1])),
                 x.unfold(2, 2, 1).unfold(3, 2, 1).sum((-2, -1)).narrow(2, 0, 4).unsqueeze(0).squeeze(0).select(-1, 0)
                 .unsqueeze(-1).expand(4, 16, 4, 3).contiguous(), x.view(4, -1).view(4, 16, 5, 3),
                 # advanced indexing: device and host indices, a mask, apart and adjacent, x[index] = v
                 x[tnet.tensor([1, -1]), 2:, tnet.tensor([[0], [4]])], x[range(3), ..., tnet.tensor([0, 1, -1])],
                 x[:, [3, 0], 1][tnet.tensor([True, False, True, True])]]
        y = x * 1
        y[tnet.tensor([0, -1]), :, [1, 2], tnet.tensor([2])] = parts[0][:1, :, 0, :1].sum() * tnet.ones(16)
        parts.append(y)
        sum(p.sum() for p in parts).backward()
        tnet.empty(2, 3), tnet.zeros_like(x), tnet.full_like(x, 2), tnet.arange(5), tnet.randperm(4)
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_optimizers_use_torch_for_memory_only():
    """Each optimizer built, stepped (a channels-last parameter, a gradient in the other
    layout, one parameter without gradient, an lr schedule) and its state saved and loaded."""
    import torch
    from tnet import nn
    rng = np.random.default_rng(0)
    for make in (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
                 lambda ps: optim.Adam(ps, weight_decay=0.01), lambda ps: optim.AdamW(ps)):
        with Recorder() as rec:
            params = [nn.Parameter(rng.standard_normal(s)) for s in ((3, 5, 2, 2), (7,), (2,))]
            params[0].memory = params[0].memory.contiguous(memory_format=torch.channels_last)
            opt = make([{"params": params[:2]}, {"params": params[2:], "lr": 0.5}])
            schedule = optim.LambdaLR(opt, lambda it: 0.5 ** it)
            for p in params[:2]:
                p.grad = tnet.tensor(rng.standard_normal(p.shape))
            opt.step()
            schedule.step()
            opt.load_state_dict(opt.state_dict())
            opt.zero_grad(set_to_none=False)
        assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_init_modules_and_schedulers_use_torch_for_memory_only():
    """Layers built with torch's default init, every nn.init function, reset_parameters, a
    half() model's forward, Parameter.data assignment, and torch's schedulers stepping."""
    import torch
    import tnet.nn.init as init
    from tnet import amp, nn
    with Recorder() as rec:
        net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(16, 3))
        amp.low_copy(net[0].weight, torch.float16)
        w, fc = net[0].weight, net[4].weight
        for fill in (lambda t: init.uniform_(t, -1, 1), init.normal_, init.trunc_normal_, lambda t: init.constant_(t, 2),
                     init.ones_, init.zeros_, init.dirac_, init.xavier_uniform_, init.xavier_normal_,
                     init.kaiming_uniform_, init.kaiming_normal_, init.orthogonal_):
            fill(w)
        init.eye_(fc), init.sparse_(fc, 0.5)
        net.apply(lambda m: m.reset_parameters() if hasattr(m, "reset_parameters") else None)
        net.half()(tnet.randn(2, 3, 2, 2)).float().sum().backward()
        w.memory = w.memory.contiguous(memory_format=torch.channels_last)
        opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        scheds = [optim.lr_scheduler.OneCycleLR(opt, 0.5, total_steps=5), optim.lr_scheduler.CosineAnnealingLR(opt, 4)]
        opt.step()
        for s in scheds:
            s.step()
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_batch_norm_uses_torch_for_memory_only():
    """BatchNorm2d's training forward (running statistics and count updated on the device,
    momentum and cumulative) and backward, on NCHW and channels-last input, then eval mode;
    each also with GELU fused."""
    import torch
    from tnet import nn
    rng = np.random.default_rng(0)
    layers = [nn.BatchNorm2d(3), nn.BatchNorm2d(3, momentum=None)]
    xs = [tnet.tensor(rng.standard_normal((4, 3, 5, 5)), requires_grad=True) for _ in range(2)]
    xs[1].memory = xs[1].memory.contiguous(memory_format=torch.channels_last)
    g = np.ones((4, 3, 5, 5))
    with Recorder() as rec:
        for bn, x in zip(layers, xs):
            bn(x).backward(g)
            bn(x, activation=nn.GELU()).backward(g)  # GELU fused
            bn.eval()
            bn(x).backward(g)
            bn(x, activation=nn.GELU()).backward(g)
            with tnet.no_grad():
                bn(x)
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_pointwise_ops_and_reductions_use_torch_for_memory_only():
    import warnings

    import torch
    rng = np.random.default_rng(0)
    x, y = (tnet.tensor(rng.standard_normal(s) + 3, requires_grad=True) for s in ((2, 16, 3, 5), (16, 1, 1)))
    x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    with Recorder() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the interpreter's numpy on masked lanes (log of 0)
        h = (2 - x * y / 3 + x) ** 2
        h = F.gelu(h.sqrt().log(), approximate="tanh") + F.gelu(-h) + F.sigmoid(h) * F.tanh(h) - F.silu(h.exp() * 0.01)
        pooled = F.adaptive_avg_pool2d(h, 1)
        loss = h.mean((2, 3)).sum(0).max() + F.mse_loss(pooled, x.max(2, keepdim=True).values.mean(3, True))
        loss.backward()
        F.argmax(h, 1), F.argmax(h)
    assert rec.ops, "the recorder saw nothing"
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_training_step_of_a_modern_net_uses_torch_for_memory_only():
    """A user's net with every new layer (BatchNorm, a residual add, GELU, SiLU, Sigmoid, Tanh,
    Dropout, global pooling, BatchNorm1d), trained one AdamW step and run in eval mode."""
    import torch
    from tnet import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(16)
            self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
            self.acts = nn.Sequential(nn.GELU(), nn.SiLU(), nn.Identity())
            self.drop = nn.Dropout(0.2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.bn1d = nn.BatchNorm1d(16)
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            x = self.acts(self.bn(self.conv(x)))
            x = x + nn.Tanh()(self.conv2(x)) * nn.Sigmoid()(x)
            x = self.drop(x).mean((2, 3)) + self.pool(x).flatten(1)
            return self.head(self.bn1d(x))

    rng = np.random.default_rng(0)
    model = Net()
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    x = tnet.tensor(rng.standard_normal((4, 3, 8, 8)))
    y = tnet.tensor(rng.integers(0, 10, 4))
    with Recorder() as rec:
        logits = model(x)
        loss = nn.CrossEntropyLoss(label_smoothing=0.1)(logits, y) + F.mse_loss(logits, tnet.zeros(4, 10)) * 0.1
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.eval()
        with tnet.no_grad():
            model(x).argmax(1)
    assert torch.is_tensor(loss.memory) and rec.ops, "the recorder saw nothing"
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_16_bit_ops_use_torch_for_memory_only():
    """bf16 and fp16 activations through BatchNorm, GELU, pooling, a mixed-dtype sum, a mean, and
    the losses under tnet.autocast (fp32 outputs, 16-bit gradients cast back on the tape)."""
    import warnings

    import torch
    from tnet import nn
    rng = np.random.default_rng(0)
    bn = nn.BatchNorm2d(16)
    x = tnet.tensor(rng.standard_normal((2, 16, 5, 5)), requires_grad=True, dtype=torch.bfloat16)
    x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    logits = tnet.tensor(rng.standard_normal((4, 10)), requires_grad=True, dtype=torch.float16)
    with Recorder() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the interpreter's numpy on masked lanes
        h = F.max_pool2d(F.gelu(bn(x)), 2) + tnet.ones(16, 1, 1)  # bf16 + fp32: fp32
        h.mean().backward()
        with tnet.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(logits, tnet.tensor([1, 2, 3, 4])) + F.mse_loss(logits, logits.detach())
            F.log_softmax(logits).sum().backward()
        loss.backward()
        x.half().bfloat16().float().sum().backward()
    assert rec.ops, "the recorder saw nothing"
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_mixed_precision_step_uses_torch_for_memory_only():
    """A step under float16 autocast with a GradScaler: the parameters' copies (bfloat16 ones made
    here, float16 ones by the layers), written by the optimizer, refreshed by load_state_dict."""
    import torch
    from tnet import amp, nn
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.GELU(), nn.Linear(5, 3))
    opt, scaler = optim.Adam(model.parameters()), amp.GradScaler()
    x, y = tnet.tensor(rng.standard_normal((4, 6))), tnet.tensor(rng.integers(0, 3, 4))
    with Recorder() as rec:
        for p in model.parameters():
            amp.low_copy(p, torch.bfloat16)
        with tnet.autocast(dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scaler.load_state_dict(scaler.state_dict())
        model.load_state_dict(model.state_dict())
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_airbench94_whitening_and_step_use_torch_for_memory_only():
    """airbench94's whitening init, then a forward and backward in training mode (narrow widths:
    the same ops as the full net's, block1 gathered, block2 and block3 read as channel vectors)."""
    from tnet.models import airbench94, init_whitening
    rng = np.random.default_rng(0)
    model = airbench94(widths=(16, 32, 32))
    x = tnet.tensor(rng.standard_normal((2, 3, 32, 32)))
    with Recorder() as rec:
        init_whitening(model, x)
        F.cross_entropy(model(x), tnet.tensor([1, 2]), label_smoothing=0.2, reduction="sum").backward()
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_airbench_recipe_pieces_use_torch_for_memory_only():
    """The lookahead (its clock, update, finish, state), the reflect-padded gather with alternating
    flips, a per-group LambdaLR and test-time augmentation's weighted count."""
    from tnet import data, nn
    from tnet.graph import EvalStep
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 8 * 8, 10))
    images, labels = rng.standard_normal((6, 3, 8, 8)).astype(np.float32), rng.integers(0, 10, 6)
    with Recorder() as rec:
        opt = optim.SGD([{"params": list(model.parameters())[:2]}, {"params": list(model.parameters())[2:]}],
                        lr=0.1, momentum=0.85, nesterov=True)
        schedule = optim.LambdaLR(opt, [optim.warmup_decay(10), lambda it: 0.0])
        lookahead = optim.Lookahead(model, 10, every=1)
        loader = data.Loader(images, labels, 4, augment=True, pad=2, padding_mode="reflect", flip="alternate",
                             drop_last=True)
        for _ in range(2):
            for x, y in loader:
                loss = F.cross_entropy(model(tnet.Tensor(x)), tnet.Tensor(y), label_smoothing=0.2, reduction="sum")
                opt.zero_grad()
                loss.backward()
                opt.step()
                schedule.step()
                lookahead.step()
        lookahead.finish()
        lookahead.load_state_dict(lookahead.state_dict())
        model.eval()
        step = EvalStep(model, x, y, flip=True, translate=True)
        step(x, y)
    assert rec.ops, "the recorder saw nothing"
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_issue_26_element_wise_ops_and_layers_use_torch_for_memory_only():
    """Comparisons and the accuracy idiom, where, the new activations (on a channel slice too),
    pad in each mode, amax/var/std, softmax over dim 1, nll_loss and cross_entropy's other forms,
    adaptive pooling, batched matmul and 3-D linear, forward and backward."""
    import warnings

    import torch
    from tnet import nn
    rng = np.random.default_rng(0)
    x = tnet.tensor(rng.standard_normal((2, 16, 5, 6)), requires_grad=True)
    x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    labels = tnet.tensor(rng.integers(0, 16, (2, 5, 6)))
    w = tnet.tensor(rng.standard_normal((4, 6)), requires_grad=True)
    with Recorder() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        h = F.relu(x[:, :8]) + F.relu6(x[:, 8:] * 1, inplace=True) * F.hardswish(x[:, 8:]) - F.leaky_relu(x[:, :8], 0.1)
        h = F.where(h > 0, h, F.elu(h) * 0.5) + F.hardsigmoid(h).abs().clamp(0.1, 0.9)
        h = F.pad(h, (1, 1, 2, 0), "reflect") + F.pad(h, (1, 1, 2, 0), "replicate") + F.pad(h, (1, 1, 2, 0))
        loss = F.cross_entropy(x, labels, label_smoothing=0.1) + F.nll_loss(F.log_softmax(x, 1), labels)
        loss = loss + tnet.amax(h, (1, 3)).sum() + h.std(1).mean() + h.var((0, 2, 3)).sum()
        loss = loss + F.adaptive_avg_pool2d(h, (3, 2)).mean() + F.adaptive_max_pool2d(h, 2).mean()
        loss = loss + F.cross_entropy(x.mean((2, 3)), F.softmax(x.amin((2, 3)), 1))
        loss = loss + F.linear(h[:, :, :4, :6], w).sum() + F.matmul(h[:, :, :4, :6], w.t()).mean()
        loss.backward()
        y = tnet.tensor(rng.integers(0, 8, 2))
        (x.mean((2, 3)).argmax(1) == y).float().mean().item(), (x > 0).sum().item(), (~(x < 0) & (x != 1)).sum()
        nn.BatchNorm2d(4)(x[:, 2:6]).sum().backward()
    assert rec.ops, "the recorder saw nothing"
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_data_loading_uses_torch_for_memory_only():
    """tnet.utils.data's DataLoader: a TensorDataset's batches gathered on the device (shuffled),
    and samples of numpy arrays, torch tensors, numbers and tnet rows collated."""
    import torch
    from tnet.utils.data import DataLoader, TensorDataset
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((7, 2, 3)), rng.integers(0, 5, 7)
    samples = [(x[i], torch.from_numpy(y)[i], float(i), {"n": i}) for i in range(7)]
    with Recorder() as rec:
        tnet.manual_seed(0)
        for _ in DataLoader(TensorDataset(x, torch.from_numpy(y)), batch_size=3, shuffle=True):
            pass
        list(DataLoader(samples, batch_size=4))
        list(DataLoader(TensorDataset(tnet.tensor(x, requires_grad=True)), batch_size=4))
    assert rec.ops, "the recorder saw nothing"
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def test_ops3_tensor_surface_uses_torch_for_memory_only():
    """The eighth session's tensor surface (ops3): matrix products, scatter_reduce and index_reduce,
    shifts, frexp, nextafter, polygamma, trapezoid rules, draws, windows, as_strided and apply_,
    forward and backward."""
    import warnings
    rng = np.random.default_rng(0)
    leaf = lambda *shape: tnet.tensor(rng.standard_normal(shape), requires_grad=True)  # noqa: E731
    a, b, m, v = leaf(2, 3, 4), leaf(2, 4, 5), leaf(3, 5), leaf(5)
    x, src = leaf(4, 3), leaf(5, 3)
    index = tnet.tensor(rng.integers(0, 4, (5, 3)))
    with Recorder() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = tnet.addbmm(m[:, :5].t()[:3, :3].sum() * tnet.ones(3, 5), a, b).sum() + tnet.addmv(m[:, 0], m, v).sum()
        loss = loss + tnet.addr(m, m[:, 1], v, beta=0.5).sum() + tnet.chain_matmul(m, m.t(), m).sum() + tnet.vdot(v, v)
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            loss = loss + tnet.scatter_reduce(x, 0, index, src, reduce, include_self=reduce != "sum").sum()
        loss = loss + tnet.index_reduce(x, 0, tnet.tensor([0, 2, 0, 1, 3]), src, "amax").sum()
        loss = loss + tnet.frexp(v).mantissa.sum() + tnet.nextafter(v, m[0]).sum() + tnet.polygamma(2, v.abs() + 1).sum()
        loss = loss + tnet.mvlgamma(v.abs() + 2, 2).sum() + tnet.trapezoid(m, v[:3], dim=0).sum()
        loss = loss + tnet.cumulative_trapezoid(m, dx=0.5).sum() + tnet.as_strided(m, (2, 2), (1, 2)).sum()
        loss.backward()
        i = tnet.tensor([1, 2, -8])
        (i << 2) >> tnet.tensor([1, 0, 65])
        tnet.zeros(6).cauchy_().geometric_(0.3).log_normal_()
        tnet.hann_window(5), tnet.kaiser_window(6), tnet.logspace(0, 1, 3), tnet.zeros(3).apply_(lambda e: e + 1)
    assert rec.ops, "the recorder saw nothing"
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"
