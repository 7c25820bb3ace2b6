"""The airbench recipe (tnet.recipes), piece by piece against torch, and a tiny end-to-end run: the
reflect-padded batch gather, the alternating flip, the schedule, the parameter groups, the
lookahead kernel and test-time augmentation. A small stand-in for tnet.models.airbench94
(the same parameter names) serves where the model is needed."""
import dataclasses
import inspect
import json
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
from tnet import amp, data, models, nn, optim, recipes, trainer
from tnet import functional as F
from tnet.graph import EvalStep, TrainStep, tta_views
from tnet.kernels import optim as optim_kernels
from tnet.kernels.data import gather
from tnet.kernels.softmax import count_correct
from helpers import TOL, assert_close, train_main, write_bin_pack

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
    model.whiten.weight.memory.copy_(w.to(DEV))
    amp.refresh_low_copies(model.whiten.weight)


@pytest.fixture
def standin(monkeypatch):
    """tnet.models.airbench94 and init_whitening as the stand-in's (the real net is slow on the CPU)."""
    monkeypatch.setattr(models, "airbench94", lambda seed=0: StandIn(seed), raising=False)
    monkeypatch.setattr(models, "init_whitening", standin_whitening, raising=False)


@pytest.fixture
def airbench94(monkeypatch):
    """The real tnet.models.airbench94 where it exists (narrow, if it takes widths: the full
    net is slow on the CPU), else the stand-in."""
    real = getattr(models, "airbench94", None)
    if real is None or not hasattr(models, "init_whitening"):
        monkeypatch.setattr(models, "airbench94", lambda seed=0: StandIn(seed), raising=False)
        monkeypatch.setattr(models, "init_whitening", standin_whitening, raising=False)
    elif "widths" in inspect.signature(real).parameters and tnet.DEVICE.type != "cuda":
        monkeypatch.setattr(models, "airbench94", lambda seed=0: real(seed, widths=(8, 8, 8)))


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


# --- optimizer, schedule, lookahead ---

def airbench_lr(step, total):
    """airbench94's get_lr."""
    warmup_steps = int(total * 0.23)
    if step < warmup_steps:
        frac = step / warmup_steps
        return 0.2 * (1 - frac) + 1.0 * frac
    frac = (step - warmup_steps) / (total - warmup_steps)
    return 1.0 * (1 - frac) + 0.07 * frac


def test_schedule_and_step_count():
    f = optim.warmup_decay(476)
    for it in (0, 1, 50, 108, 109, 110, 300, 475, 476):
        assert f(it) == pytest.approx(airbench_lr(it, 476), rel=1e-12), it
    assert f(0) == pytest.approx(0.2) and f(109) == pytest.approx(1.0) and f(476) == pytest.approx(0.07)
    args = trainer.parse_args(["--model", "airbench94"])
    assert (args.recipe, args.epochs, args.batch_size, args.precision, args.grad_scaler, args.tta) == \
        ("airbench", 9.9, 1024, "fp16", False, 2)
    assert args.checkpoint == "runs/airbench94.ckpt" and trainer.parse_args([]).recipe == "caffe"
    assert trainer.parse_args(["--model", "airbench94", "--recipe", "muon"]).checkpoint == "runs/airbench94-muon.ckpt"
    assert recipes.run_steps(9.9, 50000 // 1024) == 476 and recipes.run_steps(9.9, 10) == 99  # airbench: ceil(9.9 * 48)


def test_param_groups_match_torch_sgd(standin):
    """The airbench recipe's groups (Airbench.optimizer) against torch.optim.SGD with airbench94's groups, where
    the whitening bias stops after 3 epochs by losing its gradient (airbench's requires_grad = False):
    tnet's group lr falls to 0 through the device hyperparameters instead."""
    model = StandIn(seed=1)
    recipe = dataclasses.replace(recipes.RECIPES["airbench"], batch_size=20)
    steps_per_epoch, total = 2, 9
    opt, schedule = recipe.optimizer(model, steps_per_epoch, total)
    named = dict(model.named_parameters())
    s = 1024 * (1 + 1 / (1 - 0.85))
    lr, wd = 11.5 / s, 0.0153 * 20 / s
    groups = [[n for n, p in named.items() if any(p is q for q in g["params"])] for g in opt.param_groups]
    assert groups[1] == [f"block{b}.norm{i}.bias" for b in (1, 2, 3) for i in (1, 2)]
    assert groups[2] == ["whiten.bias"]
    assert groups[0] == ["block1.conv1.weight", "block1.conv2.weight", "block2.conv1.weight", "block2.conv2.weight",
                         "block3.conv1.weight", "block3.conv2.weight", "head.weight"]
    for g, group_lr in zip(opt.param_groups, (lr, 64 * lr, lr)):
        assert g["lr"] == pytest.approx(0.2 * group_lr) and g["nesterov"] and g["momentum"] == 0.85
        assert g["weight_decay"] == pytest.approx(wd / group_lr)

    ref = {n: torch.tensor(p.numpy(), dtype=torch.float64, requires_grad=True) for n, p in named.items()
           if p.requires_grad}
    torch_opt = torch.optim.SGD([dict(params=[ref[n] for n in g], lr=group_lr, weight_decay=wd / group_lr)
                                 for g, group_lr in zip(groups, (lr, 64 * lr, lr))], momentum=0.85, nesterov=True)
    torch_schedule = torch.optim.lr_scheduler.LambdaLR(torch_opt, lambda it: airbench_lr(it, total))
    rng = np.random.default_rng(0)
    whiten_before = None
    for it in range(total):
        grads = {n: rng.standard_normal(p.shape) * 50 for n, p in ref.items()}
        for n, g in grads.items():
            named[n].grad = tnet.tensor(g)
            ref[n].grad = torch.tensor(g)
        if it >= 3 * steps_per_epoch:  # airbench: model[0].bias.requires_grad = epoch < 3
            ref["whiten.bias"].grad = None
            whiten_before = whiten_before if whiten_before is not None else named["whiten.bias"].numpy().copy()
        assert opt._device_hyper[2][1][0].item() == pytest.approx(opt.param_groups[2]["lr"])  # the device's lr
        opt.step()
        schedule.step()
        torch_opt.step()
        torch_schedule.step()
    assert opt.param_groups[2]["lr"] == 0 and opt._device_hyper[2][1][0].item() == 0
    np.testing.assert_array_equal(named["whiten.bias"].numpy(), whiten_before)
    for n, r in ref.items():
        assert_close(named[n], r.detach(), 1e-5, n)


def test_muon_recipe_groups_schedule_and_steps():
    """The muon recipe (airbench94_muon's): Muon (renormalize, no decay, 3 steps) on the six block
    filters, SGD with Nesterov 0.85 on the whitening bias, the BatchNorm shifts and the head (its lr in
    tnet's head scale), a decay of 2e-6 per image; lrs linear to 0, the whitening bias's over 3
    epochs. Its captured steps train; the two optimizers' state round-trips through one
    state_dict."""
    args = trainer.parse_args(["--model", "airbench94", "--recipe", "muon"])
    assert (args.epochs, args.batch_size, args.lr, args.momentum, args.schedule, args.tta, args.precision) == \
        (8, 2000, 0.24, 0.6, "linear", 2, "fp16")
    recipe = dataclasses.replace(recipes.RECIPES["muon"], batch_size=2)
    assert recipe.check() is None and "--momentum" in dataclasses.replace(recipe, momentum=1.0).check()
    model = StandIn(seed=5)
    steps_per_epoch, total = 2, 9
    opt, schedule = recipe.optimizer(model, steps_per_epoch, total)
    sgd, muon = opt.members
    named = dict(model.named_parameters())
    names = lambda group: [n for n, p in named.items() if any(p is q for q in group["params"])]
    assert [names(g) for g in sgd.param_groups] == [
        ["whiten.bias"], [f"block{b}.norm{i}.bias" for b in (1, 2, 3) for i in (1, 2)], ["head.weight"]]
    assert names(muon.param_groups[0]) == [f"block{b}.conv{i}.weight" for b in (1, 2, 3) for i in (1, 2)]
    decay = 2e-6 * 2
    for g, lr in zip(sgd.param_groups, (0.053, 0.053, 0.67 * (9 / 256) ** 2)):
        assert g["lr"] == pytest.approx(lr) and g["weight_decay"] == pytest.approx(decay / lr)
        assert g["momentum"] == 0.85 and g["nesterov"]
    m = muon.param_groups[0]
    assert (m["lr"], m["momentum"], m["nesterov"], m["weight_decay"], m["ns_steps"], m["renormalize"]) == \
        (0.24, 0.6, True, 0.0, 3, True)
    assert opt.param_groups == [*sgd.param_groups, *muon.param_groups]
    for it in range(1, total):
        # the optimizers step at the first iteration and the last (whose lr, after seven changes,
        # the device's copy must hold): the lrs are the schedule's, and each step between costs
        # about a second of Muon's Newton-Schulz in the CPU's interpreter
        if it in (1, total - 1):
            for p in named.values():
                p.grad = tnet.tensor(np.ones(p.shape)) if p.requires_grad else None
            opt.step()
        schedule.step()
        assert sgd.param_groups[0]["lr"] == pytest.approx(0.053 * max(0.0, 1 - it / 6))
        assert m["lr"] == pytest.approx(0.24 * (1 - it / total))
    assert muon._device_hyper[0][1][0].item() == pytest.approx(m["lr"])  # the device's copy follows

    training = recipes.Training(recipe, StandIn(seed=6), steps_per_epoch, total)
    before = {n: p.numpy().copy() for n, p in training.model.named_parameters()}
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0)).to(DEV)
    y = torch.tensor([1, 7], device=DEV)
    training.capture(x, y)
    for it in range(2):
        training.step_at(it)(x, y)
        training.schedule.step()
    assert training.lookahead is None and np.isfinite(training.loss_sum.item())
    for n, p in training.model.named_parameters():
        assert (p.numpy() != before[n]).any() == p.requires_grad, n
    state = training.opt.state_dict()
    twin = recipes.Training(recipe, StandIn(seed=6), steps_per_epoch, total)
    twin.opt.load_state_dict(json.loads(json.dumps(state, default=lambda a: a.tolist())))
    for a, b in zip(twin.opt.members, training.opt.members):
        for p, q in zip(a._params, b._params):
            np.testing.assert_array_equal(a.state[p]["momentum_buffer"].cpu(), b.state[q]["momentum_buffer"].cpu())


def test_training_phases_and_settings():
    """Training's phases: the whitening bias trains for whiten_bias_epochs, then a second step,
    captured without it and sharing the loss sum, runs; a model without a whitening bias (the
    airbench recipe on cifar10_quick) has one step. The recipe's options are its fields, and
    its own check refuses settings its units cannot take."""
    recipe = dataclasses.replace(recipes.RECIPES["airbench"], batch_size=2)
    x, y = torch.zeros(2, 3, 32, 32, device=DEV), torch.zeros(2, dtype=torch.int64, device=DEV)
    model = StandIn(seed=4)
    training = recipes.Training(recipe, model, steps_per_epoch=2, total=9)
    training.capture(x, y)
    assert training.bias_steps == 6 and training.steps[False].loss_sum is training.loss_sum
    assert training.step_at(5) is training.steps[True] and model.whiten.bias.requires_grad
    assert training.step_at(6) is training.steps[False] and not model.whiten.bias.requires_grad
    quick = recipes.Training(recipe, models.cifar10_quick(), steps_per_epoch=2, total=9)
    quick.capture(x, y)
    assert list(quick.steps) == [True] and quick.step_at(8) is quick.steps[True]
    assert [g["lr"] for g in quick.opt.param_groups] == pytest.approx([0.2 * 11.5 / (1024 * (1 + 1 / 0.15))])
    assert set(recipes.OPTIONS) < {f.name for f in dataclasses.fields(recipes.Recipe)}
    assert recipes.RECIPES["caffe"].check() is None and recipe.check() is None
    assert "--momentum below 1" in dataclasses.replace(recipe, momentum=1.0).check()


def test_lookahead_matches_torch():
    """Every 5th step ema = lerp(ema, w, 1 - d), w = ema, d = 0.95**5 (step / total)**3, over the
    parameters (a 16-bit copy too) and the running statistics, 33 tensors in two launches; finish()
    sets w = ema; the state saves and loads."""
    model = StandIn(seed=2)
    low = amp.low_copy(model.head.weight, torch.float16)
    total = 12
    la = optim.Lookahead(model, total)
    tensors = la.tensors
    assert len(tensors) == 33 and "block1.norm1.running_var" in tensors and "block1.norm1.num_batches_tracked" not in tensors
    ema = {n: t.memory.double().clone() for n, t in tensors.items()}
    rng = np.random.default_rng(3)
    for step in range(1, total + 1):
        for n, t in tensors.items():  # the optimizer's move
            t.memory.copy_(t.memory + torch.from_numpy(rng.standard_normal(t.shape).astype(np.float32)).to(t.memory.device))
        amp.refresh_low_copies(model.head.weight)
        if step % 5 == 0:
            d = 0.95 ** 5 * (step / total) ** 3
            for n, t in tensors.items():
                ema[n] = torch.lerp(ema[n], t.memory.double(), 1 - d)
        la.step()
        for n, t in tensors.items():
            if step % 5 == 0:
                assert_close(t, ema[n], 1e-6, f"{n} at step {step}")
            assert_close(la.ema[n], ema[n], 1e-6, f"the average of {n} at step {step}")
        assert_close(low, model.head.weight, TOL["fp16"] / 10, "head's float16 copy")
    state = la.state_dict()
    assert state["step"] == total
    la.finish()
    for n, t in tensors.items():
        assert_close(t, ema[n], 1e-6, f"{n} after finish")
    assert_close(low, ema["head.weight"], TOL["fp16"] / 10, "head's float16 copy after finish")
    other = optim.Lookahead(StandIn(seed=3), total)
    other.load_state_dict(state)
    assert other.state_dict()["step"] == total
    for n in ema:
        assert_close(other.ema[n], ema[n], 1e-6, f"loaded average of {n}")


def test_lookahead_clock_on_the_device():
    """The clock counts each call and gives -1 (no update) except on every 5th step."""
    count, decay = torch.zeros(1, dtype=torch.int32, device=DEV), torch.zeros(1, device=DEV)
    for step in range(1, 11):
        optim_kernels.lookahead_clock_(count, decay, 10, 5, 0.95 ** 5)
        want = 0.95 ** 5 * (step / 10) ** 3 if step % 5 == 0 else -1.0
        assert count.item() == step and decay.item() == pytest.approx(want, rel=1e-6)


# --- test-time augmentation ---

def test_tta_weights_count_correct_against_torch():
    rng = np.random.default_rng(5)
    weights = [w for *_, w in tta_views(True, True)]
    assert weights == [0.25, 0.25, 0.125, 0.125, 0.125, 0.125]
    x = torch.from_numpy(rng.standard_normal((6 * 37, 10)).astype(np.float32))
    views = x.double().view(6, 37, 10)
    weighted = (torch.tensor(weights, dtype=torch.float64)[:, None, None] * views).sum(0).argmax(1)
    plain = views.sum(0).argmax(1)
    assert (weighted != plain).sum() >= 3  # the weights matter on these rows
    labels = torch.where(torch.arange(37) % 2 == 0, weighted, plain)
    count = torch.zeros((), dtype=torch.int32, device=DEV)
    count_correct(x.to(DEV), labels.to(DEV), count, weights)
    assert count.item() == (weighted == labels).sum().item()


def airbench_tta_logits(model, x):
    """airbench94's infer at tta_level 2, the views built by torch, the logits by model."""
    logits = lambda v: torch.from_numpy(model(tnet.tensor(v.float().contiguous())).numpy()).double()
    mirror = lambda v: 0.5 * logits(v) + 0.5 * logits(v.flip(-1))
    padded = tF.pad(x, (1,) * 4, "reflect")
    translated = [mirror(padded[:, :, 0:x.shape[2], 0:x.shape[3]]), mirror(padded[:, :, 2:, 2:])]
    return 0.5 * mirror(x) + 0.5 * torch.stack(translated).mean(0)


@pytest.mark.parametrize("translate", [False, True])
def test_eval_step_tta_matches_airbench(translate, ieee):
    rng = np.random.default_rng(6)
    model = nn.Sequential(OrderedDict([("conv", nn.Conv2d(3, 5, 3, padding=1, rng=rng, weight_filler=nn.gaussian(0.5))),
                                       ("flatten", nn.Flatten()),
                                       ("fc", nn.Linear(5 * 6 * 7, 10, rng=rng, weight_filler=nn.gaussian(0.5)))]))
    x = torch.from_numpy(rng.standard_normal((9, 3, 6, 7))).double()
    ref = airbench_tta_logits(model, x) if translate else \
        0.5 * torch.from_numpy(model(tnet.tensor(x.float())).numpy() + model(tnet.tensor(x.flip(-1).float())).numpy())
    labels = ref.argmax(1)
    labels[:3] = (labels[:3] + 1) % 10  # three wrong
    step = EvalStep(model, x.float().to(DEV), labels.to(DEV), flip=True, translate=translate)
    step(x.float().to(DEV), labels.to(DEV))
    assert step.correct.item() == 6
    with pytest.raises(ValueError, match="translate"):
        EvalStep(model, x.float().to(DEV), labels.to(DEV), translate=True)


# --- a run (tnet.trainer, as train.py makes it) ---

def test_train_airbench_end_to_end(tmp_path, capsys, airbench94):
    pack = write_bin_pack(tmp_path / "data", n_train=10, n_test=5)
    ck = tmp_path / "run" / "air.ckpt"
    train_main(["--model", "airbench94", "--data", str(pack), "--limit", "4", "--batch-size", "2",
                "--eval-batch-size", "2", "--epochs", "1", "--checkpoint", str(ck)])
    out = capsys.readouterr().out
    assert "whitening conv set from 4 training images" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("test accuracy: ") and "training time" in last and "evaluation" in last
    saved = tnet.load(str(ck))
    assert saved["settings"]["model"] == "airbench94" and saved["settings"]["recipe"] == "airbench"
    assert saved["lookahead"]["step"] == 2 and saved["schedule"]["iteration"] == 2
    log = json.load(open(ck.with_suffix(".json")))
    assert len(log) == 1 and 0 <= log[0]["test_accuracy"] <= 1 and np.isfinite(log[0]["loss"])


def test_train_airbench_resumes_on_a_validation_split(tmp_path, capsys, standin):
    """1.5 epochs (3 steps of 2 an epoch, 2 images a step), then --resume to 3 epochs (6 steps, in epochs 3 and 4):
    the lookahead's count and averages come back from the checkpoint; only the last epoch of
    each run is evaluated."""
    pack = write_bin_pack(tmp_path / "data", n_train=10, n_test=5)
    ck = tmp_path / "air.ckpt"
    common = ["--model", "airbench94", "--data", str(pack), "--limit", "6", "--batch-size", "2", "--val", "2",
              "--tta", "0", "--eval-batch-size", "2", "--checkpoint", str(ck)]
    train_main(common + ["--epochs", "1.5"])
    out = capsys.readouterr().out
    assert "epoch 2: loss" in out and "epoch 1: loss" in out and "validation accuracy" not in out.split("epoch 2")[0]
    assert tnet.load(str(ck))["lookahead"]["step"] == 3
    train_main(common + ["--epochs", "3", "--resume"])
    out = capsys.readouterr().out
    assert "resumed" in out and "epoch 4:" in out and out.strip().splitlines()[-1].startswith("validation accuracy: ")
    saved = tnet.load(str(ck))
    assert saved["lookahead"]["step"] == 6 and saved["schedule"]["iteration"] == 6 and saved["epoch"] == 4
    log = json.load(open(ck.with_suffix(".json")))
    assert [("validation_accuracy" in e) for e in log] == [False, True, False, True]


def test_train_airbench_freezes_the_whitening_bias_after_3_epochs(tmp_path, monkeypatch, standin):
    """Two captured steps: the first 3 epochs train the whitening bias, the rest run a step
    captured without its gradient (nor the input gradient of the conv after it)."""
    built, seen = [], []

    class Spy(TrainStep):
        def __init__(self, step, x, y, state=(), **kwargs):
            self.model = state[0]
            self.trains_bias = self.model.whiten.bias.requires_grad  # when captured (a GPU replays it so)
            super().__init__(step, x, y, state, **kwargs)
            built.append(self)

        def __call__(self, x, y):
            out = super().__call__(x, y)
            if tnet.DEVICE.type != "cuda":  # an eager step sets the gradients it computes
                assert (self.model.whiten.bias.grad is not None) == self.trains_bias
            seen.append((built.index(self), self.trains_bias))
            return out
    monkeypatch.setattr(recipes, "TrainStep", Spy)
    pack = write_bin_pack(tmp_path / "data", n_train=10, n_test=5)
    train_main(["--model", "airbench94", "--data", str(pack), "--limit", "2", "--batch-size", "2", "--epochs", "5",
                "--tta", "0", "--eval-batch-size", "2", "--checkpoint", str(tmp_path / "air.ckpt")])
    assert len(built) == 2 and built[1].loss_sum is built[0].loss_sum
    assert seen == [(0, True)] * 3 + [(1, False)] * 2
