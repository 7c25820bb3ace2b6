"""The training loop's utility surface as CIFAR, MNIST and small-model scripts use it, written from memory in their
sources' styles and ported by their imports alone, as test_ported_scripts47.py: (a) the SWA recipe of
torch.optim.swa_utils (CosineAnnealingLR until swa_start, then AveragedModel.update_parameters and SWALR's linear
anneal, update_bn over a DataLoader) beside EMA models by get_ema_multi_avg_fn and by an avg_fn with use_buffers=True,
updated by an optimizer step post-hook, gradient noise added by a step pre-hook removed after an epoch, and a
checkpoint taken mid-SWA (model, optimizer, both schedulers, the averaged models) resumed into fresh objects; (b) the
pruning tutorial (random_unstructured, l1_unstructured by an int amount, ln_structured over it and the
PruningContainer's history, prune.remove, layer-wise and global_unstructured pruning, a BasePruningMethod subclass,
the pruned net fine-tuned); (c) activation checkpointing (checkpoint_sequential, Hugging Face's
create_custom_forward loop, the reentrant form's dummy input, preserve_rng_state) with an input-gradient penalty
through the checkpoints; (d) sthalles' SimCLR info_nce_loss beside Spijkervet's NT_Xent (fill_diagonal_,
CosineSimilarity(dim=2), torch.diag offsets) and the linear evaluation from renamed 'backbone.' keys; (e) the AMP
examples page with the GradScaler on (unscale_ and clip_grad_norm_, a gradient penalty on scaled gradients by
get_scale, two models and optimizers on one scaler, accumulation, a skipped step on an inf and the scale's
backoff and growth, the scaler's state_dict resumed); (f) pytorch-optimizer's viz loop over torch.optim with options
off their defaults (nesterov, dampening, amsgrad, maximize, centered RMSprop, Adagrad's lr_decay, NAdam's and RAdam's
decoupled_weight_decay, ASGD, Rprop, Adafactor, LBFGS's history_size and max_iter with a closure); (g) a notebook
plotting the schedulers with options off their defaults (ReduceLROnPlateau's threshold_mode, cooldown and per-group
min_lr, CyclicLR's exp_range, custom scale_fn and momentum cycling, PolynomialLR, ChainedScheduler, a three-phase
linear OneCycleLR on Adam's beta1, warm restarts, per-group LambdaLR), each resumed from its state_dict mid-run;
(h) davidtvs' torch-lr-finder (_LRScheduler subclasses, a StateCacher of deep-copied state_dicts, the smoothed range
test with accumulation, the suggestion by np.gradient) then OneCycleLR at the suggested lr; (i) an orthogonal RNN
trained under parametrizations (orthogonal's three maps, weight_norm(dim=None), spectral_norm's power iteration in
train() and not in eval(), parametrize.cached()) and deployed by remove_parametrizations(leave_parametrized=True) and
fuse_conv_bn_eval / fuse_linear_bn_eval through get_submodule; (j) bhanML's Co-teaching (reduce=False, np.argsort of
a tensor, betas written into param_groups) and richardaecn's class-balanced focal loss; (k) mixup, CutMix and
manifold mixup (a forward hook returning the mixed output) from torch.distributions.Beta and torch.randperm under
Hinton's distillation by KLDivLoss(reduction="batchmean", log_target=True); (l) a streaming pipeline (a CSV
IterableDataset sharded by get_worker_info, a shuffle buffer, ChainDataset, a batch stream read with batch_size=None,
StackDataset, ufoym's ImbalancedDatasetSampler). Each runs in tnet, then in torch from tnet's initial weights
(state_dict through numpy), and the losses, metrics, learning rates and the weights summed into a few numbers agree.
Numpy draws the data; torch replays tnet's draws where the sources draw with the library's generator (`replayed`:
the pruning tutorial's random mask, the gradient noise, mixup's lam and permutations, the sampler's multinomial).
Where a bias sits before a BatchNorm its gradient is rounding alone, which Adam and RMSprop normalise, so those layers
have none here (the Co-teaching CNN's has one in its source). Shapes are tiny and runs one to sixteen steps.

Fixed in tnet on the way (each with its unit test): a backward with create_graph=True through
torch.utils.checkpoint (a gradient penalty or a Hessian-vector product of a checkpointed model) raised
NotImplementedError; the checkpoint entry now has a graph function that differentiates the recomputation on the
tape, on aliases of its arguments at which the walk stops, so the second backward reaches the layers before the
checkpoint as torch's non-reentrant form does (test_checkpoint.py). SequentialLR given a ReduceLROnPlateau raised a
bare NotImplementedError where torch raises its ValueError ("does not support `ReduceLROnPlateau`"), as tnet's
ChainedScheduler did: the two composites' checks are one method now (test_lr_scheduler.py). The scripts themselves
ran in tnet as in torch at their first run, but for their own mistakes (a lambda binding its loop's module late, a
bias before BatchNorm under Adam). Probes beside them (the data utilities and default_collate, GradScaler's errors,
getters and disabled form, SWALR's cos anneal and errors, AveragedModel over parametrized and BatchNorm models,
update_bn with momentum=None, the pruning methods and amounts, importance_scores, the optimizers' param_group keys,
step and state_dict hooks, add_param_group, schedulers stepped with an explicit epoch, hooks and BatchNorm
inside checkpoints, the losses these scripts take with their rarer arguments) found tnet as torch but for the ones
below.

Found and left as they are: ufoym's sampler builds its weights by torch.DoubleTensor, which tnet refuses (no float64,
README), so it reads torch.FloatTensor here. tnet's optimizers keep a state for every parameter from the start and a
Python float 'step' in state_dict (README), so the lr finder's reset keeps zeros where torch's has no state.
GradScaler.step(optimizer, closure) with the closure passed positionally raises in tnet, where torch passes it on to
optimizer.step after unscaling (the closure's new gradients then stepped unscaled); torch's reentrant checkpoint
refuses keyword arguments and gives parameters no gradient where no input requires grad, where tnet's (one form for
both) takes them and gives the gradients; a deep copy of a pruned module is refused by torch (its weight is not a
leaf) and allowed by tnet; torch.jit.save, torch.utils.benchmark, torch.onnx, torch.export, torch.fx and
torch.ao.quantization are not in tnet."""
import copy
import importlib
import io
import math

import numpy as np

from helpers import compare, load, replayed, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def sub(m, name):
    """`from torch.<name> import ...` of the library a script runs on (torch.optim.swa_utils, torch.nn.utils.prune)."""
    return importlib.import_module(f"{m.torch.__name__}.{name}")


# (a) the SWA blog post's recipe and torch.optim.swa_utils' documentation: a model with BatchNorm trained by SGD under
# CosineAnnealingLR until swa_start, then AveragedModel.update_parameters once an epoch and SWALR(swa_lr,
# anneal_epochs, anneal_strategy="linear") in its place, update_bn(loader, swa_model) over a DataLoader of
# (input, target) pairs, the averaged model evaluated; beside it EMA models the documentation's ways
# (multi_avg_fn=get_ema_multi_avg_fn, an avg_fn lambda with use_buffers=True) updated by an optimizer step post-hook,
# gradient noise (Neelakantan et al.) added by a step pre-hook whose handle is removed after an epoch, and the
# averaged model's state_dict with its n_averaged loaded into a fresh AveragedModel; a checkpoint taken in the
# middle of SWA (the model, optimizer, both schedulers and the three averaged models, through torch.save into an
# io.BytesIO) resumed into freshly built objects, the post-hook registered again on the new optimizer
def swa(m, state=None, replay=None):
    torch, nn, data, optim = m.torch, m.nn, m.data, m.optim
    swa_utils = sub(m, "optim.swa_utils")
    AveragedModel, SWALR, update_bn = swa_utils.AveragedModel, swa_utils.SWALR, swa_utils.update_bn
    rng = np.random.default_rng(0)
    X, Y = normal(rng, 24, 6), rng.integers(0, 3, 24)
    loader = data.DataLoader(data.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y)), batch_size=8)

    def build():
        model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        swa_model = AveragedModel(model)
        ema_model = AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))
        ema_buffers = AveragedModel(
            model, avg_fn=lambda averaged, current, num_averaged: 0.8 * averaged + 0.2 * current, use_buffers=True)
        scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)
        swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=2, anneal_strategy="linear")
        return model, optimizer, swa_model, ema_model, ema_buffers, scheduler, swa_scheduler

    torch.manual_seed(0)
    model, optimizer, swa_model, ema_model, ema_buffers, scheduler, swa_scheduler = build()
    init = load(m, model, state)
    for averaged in (swa_model, ema_model, ema_buffers):
        averaged.module.load_state_dict(model.state_dict())
    swa_start = 2
    loss_fn = nn.CrossEntropyLoss()

    def ema_hook(opt, args, kwargs):
        ema_model.update_parameters(model)
        ema_buffers.update_parameters(model)

    step = [0]

    def noise_hook(opt, args, kwargs):
        std = 0.01 / (1 + step[0]) ** 0.55
        for group in opt.param_groups:
            for p in group['params']:
                if p.grad is not None:
                    draw = replayed(m, replay, f"noise {step[0]} {tuple(p.shape)}", torch.randn_like(p.grad))
                    p.grad.add_(draw * std)
        step[0] += 1

    optimizer.register_step_post_hook(ema_hook)
    noise = optimizer.register_step_pre_hook(noise_hook)
    record = []
    for epoch in range(4):
        for input, target in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            loss.backward()
            optimizer.step()
            record.append(loss.item())
        if epoch == 0:
            noise.remove()
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
        record.append(optimizer.param_groups[0]["lr"])
        if epoch == 2:  # a checkpoint in the middle of SWA, resumed into fresh objects
            buffer = io.BytesIO()
            torch.save({'epoch': epoch, 'model': model.state_dict(), 'optimizer': optimizer.state_dict(),
                        'scheduler': scheduler.state_dict(), 'swa_scheduler': swa_scheduler.state_dict(),
                        'swa_model': swa_model.state_dict(), 'ema_model': ema_model.state_dict(),
                        'ema_buffers': ema_buffers.state_dict()}, buffer)
            buffer.seek(0)
            checkpoint = torch.load(buffer, weights_only=False)
            model, optimizer, swa_model, ema_model, ema_buffers, scheduler, swa_scheduler = build()
            for name, obj in (('model', model), ('optimizer', optimizer), ('scheduler', scheduler),
                              ('swa_scheduler', swa_scheduler), ('swa_model', swa_model), ('ema_model', ema_model),
                              ('ema_buffers', ema_buffers)):
                obj.load_state_dict(checkpoint[name])
            optimizer.register_step_post_hook(ema_hook)
            record.append(optimizer.param_groups[0]["lr"])
    assert step[0] == len(loader)
    update_bn(loader, swa_model)
    swa_model.eval()
    ema_model.eval()
    ema_buffers.eval()
    test = torch.from_numpy(normal(rng, 5, 6))
    with torch.no_grad():
        for averaged in (swa_model, ema_model, ema_buffers):
            record += averaged(test).flatten().tolist()
    record += [int(swa_model.n_averaged), int(ema_model.n_averaged)]
    record += summary(swa_model.module.parameters()) + summary(ema_model.parameters())
    record += summary(b for n, b in swa_model.named_buffers() if "running" in n)
    record += summary(b for n, b in ema_buffers.named_buffers() if "running" in n)

    restored = build()[2]
    restored.load_state_dict(swa_model.state_dict())
    assert sorted(swa_model.state_dict())[:3] == ['module.0.bias', 'module.0.weight', 'module.1.bias']
    assert "n_averaged" in swa_model.state_dict()
    restored.eval()
    with torch.no_grad():
        record += restored(test).flatten().tolist() + [int(restored.n_averaged)]
    return init, record


def test_swa():
    compare(swa, replay={})


# (b) the official pruning tutorial on a shrunk LeNet: named_parameters and named_buffers before and after,
# random_unstructured (torch replays tnet's mask: the draws differ), l1_unstructured by an int amount, ln_structured
# on top of it and the PruningContainer's history read from _forward_pre_hooks, the pruned state_dict's keys,
# prune.remove; a second LeNet pruned layer by layer through named_modules and isinstance; global_unstructured with
# L1Unstructured over a tuple of (module, name) pairs and the sparsity printout by torch.sum(w == 0) and nelement();
# the FooBarPruningMethod subclass of BasePruningMethod (PRUNING_TYPE, compute_mask by mask.view(-1)[::2] = 0);
# then fine-tuning the globally pruned net for two SGD steps, its pruned weights staying zero, and prune.remove
# before saving
def prune_tutorial(m, state=None, replay=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    prune = sub(m, "nn.utils.prune")

    class LeNet(nn.Module):
        def __init__(self):
            super(LeNet, self).__init__()
            self.conv1 = nn.Conv2d(1, 3, 3)
            self.conv2 = nn.Conv2d(3, 4, 3)
            self.fc1 = nn.Linear(4 * 1 * 1, 8)
            self.fc2 = nn.Linear(8, 6)
            self.fc3 = nn.Linear(6, 3)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = x.view(-1, int(x.nelement() / x.shape[0]))
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    torch.manual_seed(0)
    model = LeNet()
    second = LeNet()
    states = (state or {}).get("model"), (state or {}).get("second")
    init = {"model": load(m, model, states[0]), "second": load(m, second, states[1])}
    record = []

    module = model.conv1
    assert [n for n, _ in module.named_parameters()] == ["weight", "bias"] and list(module.named_buffers()) == []
    prune.random_unstructured(module, name="weight", amount=0.3)
    assert [n for n, _ in module.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in module.named_buffers()] == ["weight_mask"]
    with torch.no_grad():  # torch's draw is its own: it takes tnet's mask
        module.weight_mask.copy_(replayed(m, replay, "random mask", module.weight_mask))
    record.append(float(torch.sum(module.weight_mask == 0)))
    assert len(module._forward_pre_hooks) == 1
    prune.l1_unstructured(module, name="bias", amount=1)
    record += module.bias_mask.tolist()
    prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
    for hook in module._forward_pre_hooks.values():
        if hook._tensor_name == "weight":
            break
    assert [type(h).__name__ for h in hook] == ["RandomUnstructured", "LnStructured"]
    record += module.weight_mask.flatten().tolist()
    assert list(model.state_dict().keys()) == [
        'conv1.weight_orig', 'conv1.bias_orig', 'conv1.weight_mask', 'conv1.bias_mask', 'conv2.weight', 'conv2.bias',
        'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'fc3.weight', 'fc3.bias']
    prune.remove(module, 'weight')
    assert [n for n, _ in module.named_parameters()] == ["bias_orig", "weight"]
    record.append(float(module.weight.abs().sum()))

    for name, module in second.named_modules():
        if isinstance(module, torch.nn.Conv2d):
            prune.l1_unstructured(module, name='weight', amount=0.2)
        elif isinstance(module, torch.nn.Linear):
            prune.l1_unstructured(module, name='weight', amount=0.4)
    assert sorted(dict(second.named_buffers()).keys()) == [
        'conv1.weight_mask', 'conv2.weight_mask', 'fc1.weight_mask', 'fc2.weight_mask', 'fc3.weight_mask']
    record += [float(b.sum()) for b in second.buffers()]

    model = LeNet()
    model.load_state_dict({k: torch.tensor(v) for k, v in init["model"].items()})
    parameters_to_prune = (
        (model.conv1, 'weight'), (model.conv2, 'weight'), (model.fc1, 'weight'), (model.fc2, 'weight'),
        (model.fc3, 'weight'))
    prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
    for name in ("conv1", "conv2", "fc1", "fc2", "fc3"):
        w = getattr(model, name).weight
        record.append(100. * float(torch.sum(w == 0)) / float(w.nelement()))
    total = sum(float(torch.sum(getattr(model, n).weight == 0)) for n in ("conv1", "conv2", "fc1", "fc2", "fc3"))
    record.append(total)

    class FooBarPruningMethod(prune.BasePruningMethod):
        """Prune every other entry in a tensor"""
        PRUNING_TYPE = 'unstructured'

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask

    def foobar_unstructured(module, name):
        FooBarPruningMethod.apply(module, name)
        return module

    foobar_unstructured(model.fc3, name='bias')
    record += model.fc3.bias_mask.tolist()

    rng = np.random.default_rng(1)
    x, y = torch.from_numpy(normal(rng, 4, 1, 10, 10)), torch.from_numpy(rng.integers(0, 3, 4))
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    record.append(float(torch.sum(model.conv2.weight_orig.grad[model.conv2.weight_mask == 0] != 0)))
    model(x)
    record.append(total - sum(float(torch.sum(getattr(model, n).weight == 0))
                              for n in ("conv1", "conv2", "fc1", "fc2", "fc3")))
    for module, name in parameters_to_prune + ((model.fc3, 'bias'),):
        prune.remove(module, name)
    assert sorted(model.state_dict()) == sorted(LeNet().state_dict())
    record += summary(model.parameters())
    return init, record


def test_prune_tutorial():
    compare(prune_tutorial, replay={})


# (c) activation checkpointing as scripts turn it on: a deep MLP whose nn.Sequential runs through
# checkpoint_sequential(self.layers, segments, x, use_reentrant=False) in training and plainly in eval; Hugging Face's
# `if self.gradient_checkpointing and self.training:` loop over blocks with the create_custom_forward closure and
# keyword-free extra arguments (an attention-style mask); the old reentrant checkpoint that needs an input requiring
# grad (the `dummy = torch.ones(1, requires_grad=True)` trick, its grad None); preserve_rng_state=False; each
# checked against the same weights run without checkpointing, then trained by Adam for two steps and a third whose
# loss adds an input-gradient penalty by autograd.grad(create_graph=True) through the checkpoints (double backprop)
def checkpointing(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    cp = sub(m, "utils.checkpoint")
    checkpoint, checkpoint_sequential = cp.checkpoint, cp.checkpoint_sequential

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 2 * d)
            self.fc2 = nn.Linear(2 * d, d)

        def forward(self, hidden_states, mask):
            h = self.fc2(F.gelu(self.fc1(self.norm(hidden_states))))
            return hidden_states + h * mask.unsqueeze(-1)

    class Net(nn.Module):
        def __init__(self, d=8, n_blocks=3, segments=2):
            super().__init__()
            self.segments = segments
            self.stem = nn.Sequential(nn.Linear(5, d), nn.ReLU(), nn.Linear(d, d), nn.Tanh(), nn.Linear(d, d),
                                      nn.ReLU())
            self.blocks = nn.ModuleList([Block(d) for _ in range(n_blocks)])
            self.head = nn.Linear(d, 3)
            self.gradient_checkpointing = False
            self.reentrant = False

        def forward(self, x, mask):
            if self.gradient_checkpointing and self.training:
                x = checkpoint_sequential(self.stem, self.segments, x, use_reentrant=False)
            else:
                x = self.stem(x)
            for i, layer_module in enumerate(self.blocks):
                if self.gradient_checkpointing and self.training:
                    def create_custom_forward(module):
                        def custom_forward(*inputs):
                            return module(*inputs[:2])  # past the dummy
                        return custom_forward
                    if self.reentrant and i == 0:
                        dummy = torch.ones(1, dtype=torch.float32, requires_grad=True)
                        x = checkpoint(create_custom_forward(layer_module), x, mask, dummy, use_reentrant=True)
                        self.dummy = dummy
                    else:
                        x = checkpoint(create_custom_forward(layer_module), x, mask, use_reentrant=False,
                                       preserve_rng_state=(i % 2 == 0))
                else:
                    x = layer_module(x, mask)
            return self.head(x.mean(1))

    rng = np.random.default_rng(0)
    x = torch.from_numpy(normal(rng, 4, 6, 5))
    mask = torch.from_numpy((rng.random((4, 6)) > 0.3).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, 4))
    torch.manual_seed(0)
    model = Net()
    init = load(m, model, state)
    record = []
    grads = []
    for mode in ("plain", "checkpointed", "reentrant"):
        model.gradient_checkpointing = mode != "plain"
        model.reentrant = mode == "reentrant"
        model.zero_grad()
        loss = F.cross_entropy(model(x, mask), y)
        loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        record.append(loss.item())
    assert model.dummy.grad is None or float(model.dummy.grad.abs().sum()) == 0
    for a, b, c in zip(*grads):
        assert torch.allclose(a, b, atol=1e-5) and torch.allclose(a, c, atol=1e-5)
    record += [float(g.abs().sum()) for g in grads[1]]
    model.gradient_checkpointing, model.reentrant = True, False
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(2):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x, mask), y)
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    # an input-gradient penalty (double backprop) through the checkpoints
    optimizer.zero_grad()
    x_ = x.clone().requires_grad_(True)
    out = model(x_, mask)
    grad, = torch.autograd.grad(out.logsumexp(1).sum(), x_, create_graph=True)
    penalty = grad.pow(2).sum(dim=(1, 2)).mean()
    (F.cross_entropy(out, y) + penalty).backward()
    optimizer.step()
    record += [penalty.item()] + [float(p.grad.abs().sum()) for p in model.parameters()]
    model.eval()
    with torch.no_grad():
        record += model(x, mask).flatten().tolist()
    return init, record + summary(model.parameters())


def test_checkpointing():
    compare(checkpointing)


# (d) sthalles' SimCLR: a ResNet-style backbone whose fc becomes the projection head by
# `dim_mlp = self.backbone.fc.in_features; self.backbone.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(),
# self.backbone.fc)`, two views stacked by torch.cat(images, dim=0), info_nce_loss (labels by
# `(labels.unsqueeze(0) == labels.unsqueeze(1)).float()`, the diagonal dropped by `[~mask].view(n, -1)` with
# torch.eye(dtype=torch.bool), positives and negatives by boolean indexing, logits with zeros as labels, a
# temperature), accuracy(output, target, topk=(1, 5)) by topk, t() and eq(expand_as), Adam under CosineAnnealingLR
# past its warmup epochs; Spijkervet's NT_Xent beside it (mask_correlated_samples by fill_diagonal_(0) and a loop,
# nn.CosineSimilarity(dim=2) of z.unsqueeze(1) and z.unsqueeze(0), torch.diag(sim, batch_size) and its negative
# offset, CrossEntropyLoss(reduction="sum") / N), the two losses agreeing; then the linear evaluation: the
# checkpoint's 'state_dict' renamed from 'backbone.' keys with backbone.fc dropped, load_state_dict(strict=False)'s
# missing_keys asserted, every parameter but fc frozen, `assert len(parameters) == 2`
def simclr(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(0)

    class TinyResNet(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.layer1 = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU())
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(4, num_classes)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = x + self.layer1(x)
            return self.fc(torch.flatten(self.avgpool(x), 1))

    class ResNetSimCLR(nn.Module):
        def __init__(self, out_dim):
            super(ResNetSimCLR, self).__init__()
            self.backbone = TinyResNet(num_classes=out_dim)
            dim_mlp = self.backbone.fc.in_features
            self.backbone.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.backbone.fc)

        def forward(self, x):
            return self.backbone(x)

    def accuracy(output, target, topk=(1,)):
        with torch.no_grad():
            maxk = max(topk)
            batch_size = target.size(0)
            _, pred = output.topk(maxk, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))
            res = []
            for k in topk:
                correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
                res.append(correct_k.mul_(100.0 / batch_size))
            return res

    class Args:
        batch_size, n_views, temperature, device = 4, 2, 0.5, "cpu"

    args = Args()

    def info_nce_loss(features):
        labels = torch.cat([torch.arange(args.batch_size) for i in range(args.n_views)], dim=0)
        labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
        labels = labels.to(args.device)
        features = F.normalize(features, dim=1)
        similarity_matrix = torch.matmul(features, features.T)
        mask = torch.eye(labels.shape[0], dtype=torch.bool).to(args.device)
        labels = labels[~mask].view(labels.shape[0], -1)
        similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
        positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
        negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
        logits = torch.cat([positives, negatives], dim=1)
        labels = torch.zeros(logits.shape[0], dtype=torch.long).to(args.device)
        logits = logits / args.temperature
        return logits, labels

    class NT_Xent(nn.Module):
        def __init__(self, batch_size, temperature, world_size=1):
            super(NT_Xent, self).__init__()
            self.batch_size, self.temperature, self.world_size = batch_size, temperature, world_size
            self.mask = self.mask_correlated_samples(batch_size, world_size)
            self.criterion = nn.CrossEntropyLoss(reduction="sum")
            self.similarity_f = nn.CosineSimilarity(dim=2)

        def mask_correlated_samples(self, batch_size, world_size):
            N = 2 * batch_size * world_size
            mask = torch.ones((N, N), dtype=bool)
            mask = mask.fill_diagonal_(0)
            for i in range(batch_size * world_size):
                mask[i, batch_size * world_size + i] = 0
                mask[batch_size * world_size + i, i] = 0
            return mask

        def forward(self, z_i, z_j):
            N = 2 * self.batch_size * self.world_size
            z = torch.cat((z_i, z_j), dim=0)
            sim = self.similarity_f(z.unsqueeze(1), z.unsqueeze(0)) / self.temperature
            sim_i_j = torch.diag(sim, self.batch_size * self.world_size)
            sim_j_i = torch.diag(sim, -self.batch_size * self.world_size)
            positive_samples = torch.cat((sim_i_j, sim_j_i), dim=0).reshape(N, 1)
            negative_samples = sim[self.mask].reshape(N, -1)
            labels = torch.zeros(N).to(positive_samples.device).long()
            logits = torch.cat((positive_samples, negative_samples), dim=1)
            loss = self.criterion(logits, labels)
            loss /= N
            return loss

    torch.manual_seed(0)
    model = ResNetSimCLR(out_dim=6)
    init = {"model": load(m, model, state and state["model"])}
    optimizer = optim.Adam(model.parameters(), 3e-3, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4, eta_min=0, last_epoch=-1)
    criterion = torch.nn.CrossEntropyLoss().to(args.device)
    nt_xent = NT_Xent(args.batch_size, args.temperature)
    record = []
    n_iter = 0
    for epoch_counter in range(2):
        base = normal(rng, args.batch_size, 3, 6, 6)
        views = [base[..., ::-1].copy() + 0.1 * normal(rng, *base.shape), base + 0.1 * normal(rng, *base.shape)]
        images = torch.cat([torch.from_numpy(v) for v in views], dim=0)
        images = images.to(args.device)
        features = model(images)
        logits, labels = info_nce_loss(features)
        loss = criterion(logits, labels)
        other = nt_xent(features[:args.batch_size], features[args.batch_size:])
        assert abs(loss.item() - other.item()) < 1e-5
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        top1, top5 = accuracy(logits, labels, topk=(1, 5))
        record += [loss.item(), other.item(), top1[0].item(), top5[0].item()]
        n_iter += 1
        if epoch_counter >= 1:
            scheduler.step()
        record.append(scheduler.get_last_lr()[0])
    checkpoint = {'epoch': 2, 'arch': 'resnet18', 'state_dict': model.state_dict(),
                  'optimizer': optimizer.state_dict()}

    classifier = TinyResNet(num_classes=3)
    state_dict = checkpoint['state_dict']
    for k in list(state_dict.keys()):
        if k.startswith('backbone.'):
            if k.startswith('backbone') and not k.startswith('backbone.fc'):
                state_dict[k[len("backbone."):]] = state_dict[k]
        del state_dict[k]
    log = classifier.load_state_dict(state_dict, strict=False)
    assert log.missing_keys == ['fc.weight', 'fc.bias']
    for name, param in classifier.named_parameters():
        if name not in ['fc.weight', 'fc.bias']:
            param.requires_grad = False
    parameters = list(filter(lambda p: p.requires_grad, classifier.parameters()))
    assert len(parameters) == 2
    init["fc"] = load(m, classifier.fc, state and state["fc"])
    optimizer = optim.Adam(classifier.parameters(), lr=3e-3, weight_decay=0.0008)
    classifier.eval()
    x, y = torch.from_numpy(normal(rng, 6, 3, 6, 6)), torch.from_numpy(rng.integers(0, 3, 6))
    for _ in range(2):
        logits = classifier(x)
        loss = criterion(logits, y)
        top1 = accuracy(logits, y, topk=(1,))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record += [loss.item(), top1[0].item()]
    return init, record + summary(model.parameters()) + summary(classifier.fc.parameters())


def test_simclr():
    compare(simclr)


# (e) the Automatic Mixed Precision examples page with the scaler on and autocast off (enabled=use_amp, False: fp32
# on both sides, where a scale that is a power of two changes no digit): the typical loop with scaler.unscale_ before
# clip_grad_norm_; the gradient penalty by autograd.grad of scaler.scale(loss) with create_graph=True, unscaled by
# `inv_scale = 1./scaler.get_scale()`, the penalty's norm added to the loss; two models, two losses and two optimizers
# on one scaler (backward(retain_graph=True), unscale_ of one optimizer, both stepped, one update); gradient
# accumulation by iters_to_accumulate; a corrupt batch (an inf in the input) whose step the scaler skips
# (scaler.step returning None, the weights kept) and whose scale it backs off, the growth after growth_interval good
# steps; the scaler's state_dict resumed into a fresh GradScaler
def amp_examples(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    use_amp = False
    rng = np.random.default_rng(0)

    def make_model():
        return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))

    torch.manual_seed(0)
    model, model0, model1 = make_model(), make_model(), make_model()
    states = state or {}
    init = {name: load(m, net, states.get(name)) for name, net in (("model", model), ("model0", model0),
                                                                    ("model1", model1))}
    loss_fn = nn.MSELoss()
    data = [(torch.from_numpy(normal(rng, 4, 5)), torch.from_numpy(normal(rng, 4, 3))) for _ in range(4)]
    record = []

    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.**10, growth_interval=2)
    for epoch in range(2):
        for input, target in data[:2]:
            optimizer.zero_grad()
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
                output = model(input)
                loss = loss_fn(output, target)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            scaler.step(optimizer)
            scaler.update()
            record += [loss.item(), norm.item(), scaler.get_scale()]

    for input, target in data[2:]:
        optimizer.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
            output = model(input)
            loss = loss_fn(output, target)
        scaled_grad_params = torch.autograd.grad(outputs=scaler.scale(loss), inputs=model.parameters(),
                                                 create_graph=True)
        inv_scale = 1. / scaler.get_scale()
        grad_params = [p * inv_scale for p in scaled_grad_params]
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
            grad_norm = 0
            for grad in grad_params:
                grad_norm += grad.pow(2).sum()
            grad_norm = grad_norm.sqrt()
            loss = loss + grad_norm
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        record += [loss.item(), grad_norm.item(), scaler.get_scale()]

    corrupt = data[0][0].clone()
    corrupt[1, 2] = float("inf")
    before = [p.detach().clone() for p in model.parameters()]
    optimizer.zero_grad()
    loss = loss_fn(model(corrupt), data[0][1])
    scaler.scale(loss).backward()
    retval = scaler.step(optimizer)
    scaler.update()
    assert retval is None and all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    record += [scaler.get_scale(), float(math.isfinite(loss.item()))]
    saved = scaler.state_dict()
    assert sorted(saved) == ['_growth_tracker', 'backoff_factor', 'growth_factor', 'growth_interval', 'scale']
    resumed = torch.amp.GradScaler("cpu")
    resumed.load_state_dict(saved)
    record += [resumed.get_scale(), float(saved["_growth_tracker"]), float(resumed.is_enabled())]

    optimizer0 = optim.Adam(model0.parameters(), lr=1e-2)
    optimizer1 = optim.SGD(model1.parameters(), lr=0.1)
    for input, target in data[:2]:
        optimizer0.zero_grad()
        optimizer1.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
            output0 = model0(input)
            output1 = model1(input)
            loss0 = loss_fn(2 * output0 + 3 * output1, target)
            loss1 = loss_fn(3 * output0 - 5 * output1, target)
        scaler.scale(loss0).backward(retain_graph=True)
        scaler.scale(loss1).backward()
        scaler.unscale_(optimizer0)
        scaler.step(optimizer0)
        scaler.step(optimizer1)
        scaler.update()
        record += [loss0.item(), loss1.item(), scaler.get_scale()]

    iters_to_accumulate = 2
    optimizer1.zero_grad()
    for i, (input, target) in enumerate(data):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
            output = model1(input)
            loss = loss_fn(output, target)
            loss = loss / iters_to_accumulate
        scaler.scale(loss).backward()
        if (i + 1) % iters_to_accumulate == 0:
            scaler.step(optimizer1)
            scaler.update()
            optimizer1.zero_grad()
        record += [loss.item(), scaler.get_scale()]
    for net in (model, model0, model1):
        record += summary(net.parameters())
    return init, record


def test_amp_examples():
    compare(amp_examples)


# (f) jettify/pytorch-optimizer's examples/viz_optimizers.py over torch.optim with options off their defaults:
# rosenbrock and rastrigin on `x, y = tensor` (a 2-vector unpacked into two 0-d tensors), execute_steps from
# torch.Tensor(initial_state).requires_grad_(True) with f.backward(create_graph=True, retain_graph=True),
# clip_grad_norm_ of the one tensor and `steps[:, i] = x.detach().numpy()`, a small search over lr keeping the best
# by the distance to the minimum (for the first four); SGD with nesterov and with dampening, Adam with amsgrad and
# with maximize=True on the negated function, AdamW with amsgrad, RMSprop centered with momentum and weight decay,
# Adagrad with lr_decay and initial_accumulator_value, Adadelta's rho, NAdam's momentum_decay and
# decoupled_weight_decay, RAdam's decoupled_weight_decay past its rectification's start, Adamax, ASGD's t0 and lambd
# (its ax average read from the state), Rprop's etas and step_sizes, Adafactor, and LBFGS(history_size, max_iter,
# tolerance_change) stepped with a closure
def optimizer_zoo(m, state=None):
    torch, optim = m.torch, m.optim

    def rosenbrock(tensor):
        x, y = tensor
        return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2

    def rastrigin(tensor, lib=torch):
        x, y = tensor
        A = 10
        f = (A * 2 + (x ** 2 - A * lib.cos(x * math.pi * 2)) + (y ** 2 - A * lib.cos(y * math.pi * 2)))
        return f

    def execute_steps(func, initial_state, optimizer_class, optimizer_config, num_iter=6):
        x = torch.Tensor(initial_state).requires_grad_(True)
        optimizer = optimizer_class([x], **optimizer_config)
        steps = np.zeros((2, num_iter + 1))
        steps[:, 0] = np.array(initial_state)
        for i in range(1, num_iter + 1):
            optimizer.zero_grad()
            f = func(x)
            f.backward(create_graph=True, retain_graph=True)
            torch.nn.utils.clip_grad_norm_(x, 1.0)
            optimizer.step()
            steps[:, i] = x.detach().numpy()
        return steps, optimizer

    configs = [
        (optim.SGD, dict(momentum=0.9, nesterov=True)),
        (optim.SGD, dict(momentum=0.9, dampening=0.1, weight_decay=0.01)),
        (optim.Adam, dict(amsgrad=True)),
        (optim.AdamW, dict(weight_decay=0.1, amsgrad=True)),
        (optim.RMSprop, dict(alpha=0.9, centered=True, momentum=0.5, weight_decay=0.01)),
        (optim.Adagrad, dict(lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.01)),
        (optim.Adadelta, dict(rho=0.8, weight_decay=0.01)),
        (optim.NAdam, dict(momentum_decay=0.002, decoupled_weight_decay=True, weight_decay=0.01)),
        (optim.RAdam, dict(decoupled_weight_decay=True, weight_decay=0.01)),
        (optim.Adamax, dict(weight_decay=0.01)),
        (optim.ASGD, dict(lambd=1e-3, alpha=0.5, t0=3)),
        (optim.Rprop, dict(etas=(0.4, 1.3), step_sizes=(1e-4, 1.0))),
        (optim.Adafactor, dict(beta2_decay=-0.7, eps=(None, 1e-3))),
    ]
    record = []
    for k, (optimizer_class, config) in enumerate(configs):
        best = None
        for lr in ((1e-2, 1e-1) if k < 4 else (5e-2,)):  # the search for the first few, to keep the test short
            steps, optimizer = execute_steps(rosenbrock, (-2.0, 2.0), optimizer_class, dict(config, lr=lr))
            loss = (steps[0][-1] - 1.0) ** 2 + (steps[1][-1] - 1.0) ** 2
            record += steps.flatten().tolist()
            if best is None or loss < best[0]:
                best = (loss, lr)
        record.append(best[1])
        if optimizer_class is optim.ASGD:
            record += [float(np.sum(np.asarray(v))) for k, v in sorted(optimizer.state_dict()['state'][0].items())]
    steps, _ = execute_steps(lambda t: -rastrigin(t), (-2.0, 3.5), optim.Adam, dict(lr=0.1, maximize=True))
    record += steps.flatten().tolist()
    steps, _ = execute_steps(rastrigin, (-2.0, 3.5), optim.Adam, dict(lr=0.1))
    record += steps.flatten().tolist()

    x = torch.Tensor([-1.5, 2.0]).requires_grad_(True)
    optimizer = optim.LBFGS([x], lr=0.5, history_size=3, max_iter=4, tolerance_change=1e-12)
    evaluations = []

    def closure():
        optimizer.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        evaluations.append(loss.item())
        return loss

    for _ in range(2):
        record.append(optimizer.step(closure).item())
        record += x.detach().numpy().tolist()
    record += evaluations + [len(evaluations), optimizer.state_dict()['state'][0]['n_iter']]
    return {}, record


def test_optimizer_zoo():
    compare(optimizer_zoo)


# (g) a notebook plotting learning-rate schedules, each with options off its defaults, lr and momentum read every
# step by get_last_lr() and param_groups: ReduceLROnPlateau(mode='max', threshold_mode='abs', cooldown, min_lr per
# group, eps) fed an accuracy curve, its num_bad_epochs and cooldown_counter; CyclicLR in 'exp_range' with gamma,
# step_size_down and cycle_momentum between base_momentum and max_momentum, and with a custom scale_fn over
# scale_mode='iterations'; PolynomialLR(power=2.0); ChainedScheduler of ConstantLR and ExponentialLR given
# optimizer=; OneCycleLR(three_phase=True, anneal_strategy='linear') cycling Adam's beta1; CosineAnnealingWarmRestarts
# (T_mult=2, eta_min); LambdaLR with one lambda per param group; MultiplicativeLR; LinearLR into StepLR by
# SequentialLR; each scheduler's state_dict (less its lambdas) loaded into a fresh one that goes on as the first
def lr_schedules(m, state=None):
    nn, optim = m.nn, m.optim
    lr_scheduler = m.lr_scheduler
    model = nn.Linear(2, 1)
    head = nn.Linear(1, 1)
    record = []

    def plot(make, steps, opt="sgd", metrics=None, resume_at=None):
        if opt == "sgd":
            optimizer = optim.SGD([{'params': model.parameters()}, {'params': head.parameters(), 'lr': 0.05}],
                                  lr=0.1, momentum=0.9)
        else:
            optimizer = optim.Adam([{'params': model.parameters()}, {'params': head.parameters(), 'lr': 0.05}],
                                   lr=0.1, betas=(0.9, 0.99))
        scheduler = make(optimizer)
        for epoch in range(steps):
            optimizer.step()
            group = optimizer.param_groups[0]
            record.extend(list(scheduler.get_last_lr()) + [optimizer.param_groups[1]['lr']])
            record.append(group['momentum'] if opt == "sgd" else group['betas'][0])
            if metrics is not None:
                scheduler.step(metrics[epoch])
                record.extend([scheduler.num_bad_epochs, scheduler.cooldown_counter])
            else:
                scheduler.step()
            if epoch == resume_at:
                fresh = make(optimizer)
                fresh.load_state_dict(scheduler.state_dict())
                scheduler = fresh
        return scheduler

    accuracy = [0.50, 0.60, 0.605, 0.606, 0.61, 0.64, 0.641, 0.642, 0.643, 0.644]
    plot(lambda o: lr_scheduler.ReduceLROnPlateau(o, mode='max', factor=0.5, patience=1, threshold=0.01,
                                                  threshold_mode='abs', cooldown=1, min_lr=[0.02, 0.04], eps=1e-3),
         10, metrics=accuracy, resume_at=4)
    plot(lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=2, step_size_down=3,
                                         mode='exp_range', gamma=0.9, cycle_momentum=True, base_momentum=0.8,
                                         max_momentum=0.95), 12, resume_at=5)
    plot(lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                         scale_fn=lambda x: 1 / (2. ** (x / 4)), scale_mode='iterations',
                                         cycle_momentum=False), 9)
    plot(lambda o: lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0), 6, resume_at=2)
    plot(lambda o: lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2),
                                                  lr_scheduler.ExponentialLR(o, gamma=0.9)], optimizer=o), 5)
    plot(lambda o: lr_scheduler.OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=10, pct_start=0.3,
                                           anneal_strategy='linear', three_phase=True, div_factor=10,
                                           final_div_factor=100, base_momentum=0.85, max_momentum=0.95),
         10, opt="adam", resume_at=3)
    plot(lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.001), 9, resume_at=4)
    plot(lambda o: lr_scheduler.LambdaLR(o, lr_lambda=[lambda e: 0.9 ** e, lambda e: 1.0 / (1 + e)]), 5)
    plot(lambda o: lr_scheduler.MultiplicativeLR(o, lr_lambda=lambda epoch: 0.95), 4)
    plot(lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.LinearLR(o, start_factor=0.25, end_factor=1.0,
                                                                       total_iters=3),
                                                 lr_scheduler.StepLR(o, step_size=2, gamma=0.5)], milestones=[3]),
         9, resume_at=5)
    return {}, record


def test_lr_schedules():
    compare(lr_schedules, atol=1e-7)


# (h) davidtvs' torch-lr-finder: LinearLR and ExponentialLR written as _LRScheduler subclasses (get_lr from
# self.last_epoch and self.base_lrs, read by get_lr() after each step), the StateCacher keeping deep copies of the
# model's and optimizer's state_dicts and reset() loading them back, _check_for_scheduler refusing an optimizer that
# has an initial_lr, a DataLoaderIter that restarts its loader on StopIteration, range_test with accumulation_steps,
# the smoothed loss and the stop on divergence, the suggestion by np.gradient's argmin between skip_start and
# skip_end; then the run it suggests: OneCycleLR at that max_lr
def lr_finder(m, state=None):
    torch, nn, optim, data = m.torch, m.nn, m.optim, m.data
    _LRScheduler = m.lr_scheduler._LRScheduler

    class LinearLR(_LRScheduler):
        def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
            self.end_lr = end_lr
            if num_iter <= 1:
                raise ValueError("`num_iter` must be larger than 1")
            self.num_iter = num_iter
            super(LinearLR, self).__init__(optimizer, last_epoch)

        def get_lr(self):
            r = self.last_epoch / (self.num_iter - 1)
            return [base_lr + r * (self.end_lr - base_lr) for base_lr in self.base_lrs]

    class ExponentialLR(_LRScheduler):
        def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
            self.end_lr = end_lr
            if num_iter <= 1:
                raise ValueError("`num_iter` must be larger than 1")
            self.num_iter = num_iter
            super(ExponentialLR, self).__init__(optimizer, last_epoch)

        def get_lr(self):
            r = self.last_epoch / (self.num_iter - 1)
            return [base_lr * (self.end_lr / base_lr) ** r for base_lr in self.base_lrs]

    class StateCacher(object):
        def __init__(self, in_memory, cache_dir=None):
            self.in_memory = in_memory
            self.cached = {}

        def store(self, key, state_dict):
            self.cached.update({key: copy.deepcopy(state_dict)})

        def retrieve(self, key):
            if key not in self.cached:
                raise KeyError("Target {} was not cached.".format(key))
            return self.cached.get(key)

    class DataLoaderIter(object):
        def __init__(self, data_loader, auto_reset=True):
            self.data_loader = data_loader
            self._iterator = iter(data_loader)
            self.auto_reset = auto_reset

        def __iter__(self):
            return self

        def __next__(self):
            try:
                batch = next(self._iterator)
            except StopIteration:
                if not self.auto_reset:
                    raise
                self._iterator = iter(self.data_loader)
                batch = next(self._iterator)
            return batch[0], batch[1]

    class LRFinder(object):
        def __init__(self, model, optimizer, criterion, device=None, memory_cache=True):
            self.optimizer = optimizer
            self._check_for_scheduler()
            self.model = model
            self.criterion = criterion
            self.history = {"lr": [], "loss": []}
            self.best_loss = None
            self.state_cacher = StateCacher(memory_cache)
            self.state_cacher.store("model", self.model.state_dict())
            self.state_cacher.store("optimizer", self.optimizer.state_dict())

        def reset(self):
            self.model.load_state_dict(self.state_cacher.retrieve("model"))
            self.optimizer.load_state_dict(self.state_cacher.retrieve("optimizer"))

        def range_test(self, train_loader, start_lr=None, end_lr=10, num_iter=100, step_mode="exp", smooth_f=0.05,
                       diverge_th=5, accumulation_steps=1):
            self.history = {"lr": [], "loss": []}
            self.best_loss = None
            if start_lr:
                self._set_learning_rate(start_lr)
            if step_mode.lower() == "exp":
                lr_schedule = ExponentialLR(self.optimizer, end_lr, num_iter)
            elif step_mode.lower() == "linear":
                lr_schedule = LinearLR(self.optimizer, end_lr, num_iter)
            else:
                raise ValueError("expected one of (exp, linear), got {}".format(step_mode))
            train_iter = DataLoaderIter(train_loader)
            for iteration in range(num_iter):
                loss = self._train_batch(train_iter, accumulation_steps)
                lr_schedule.step()
                self.history["lr"].append(lr_schedule.get_lr()[0])
                if iteration == 0:
                    self.best_loss = loss
                else:
                    if smooth_f > 0:
                        loss = smooth_f * loss + (1 - smooth_f) * self.history["loss"][-1]
                    if loss < self.best_loss:
                        self.best_loss = loss
                self.history["loss"].append(loss)
                if loss > diverge_th * self.best_loss:
                    break

        def _set_learning_rate(self, new_lrs):
            if not isinstance(new_lrs, list):
                new_lrs = [new_lrs] * len(self.optimizer.param_groups)
            for param_group, new_lr in zip(self.optimizer.param_groups, new_lrs):
                param_group["lr"] = new_lr

        def _check_for_scheduler(self):
            for param_group in self.optimizer.param_groups:
                if "initial_lr" in param_group:
                    raise RuntimeError("Optimizer already has a scheduler attached to it")

        def _train_batch(self, train_iter, accumulation_steps):
            self.model.train()
            total_loss = None
            self.optimizer.zero_grad()
            for i in range(accumulation_steps):
                inputs, labels = next(train_iter)
                outputs = self.model(inputs)
                loss = self.criterion(outputs, labels)
                loss /= accumulation_steps
                loss.backward()
                if total_loss is None:
                    total_loss = loss
                else:
                    total_loss += loss
            self.optimizer.step()
            return total_loss.item()

        def suggestion(self, skip_start=1, skip_end=1):
            lrs = self.history["lr"][skip_start:-skip_end]
            losses = self.history["loss"][skip_start:-skip_end]
            min_grad_idx = (np.gradient(np.array(losses))).argmin()
            return lrs[min_grad_idx]

    rng = np.random.default_rng(0)
    X, Y = normal(rng, 12, 4), rng.integers(0, 3, 12)
    train_loader = data.DataLoader(data.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y)), batch_size=4)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-7, weight_decay=1e-2)
    lr_finder = LRFinder(model, optimizer, criterion)
    lr_finder.range_test(train_loader, start_lr=1e-3, end_lr=3, num_iter=8, accumulation_steps=2)
    record = lr_finder.history["lr"] + lr_finder.history["loss"] + [lr_finder.best_loss]
    suggested_lr = lr_finder.suggestion()
    lr_finder.range_test(train_loader, end_lr=1, num_iter=3, step_mode="linear", smooth_f=0)
    record += lr_finder.history["lr"] + lr_finder.history["loss"] + [suggested_lr]
    lr_finder.reset()
    assert optimizer.param_groups[0]["lr"] == 1e-7
    assert all(np.array_equal(v.detach().cpu().numpy(), init[k]) for k, v in model.state_dict().items())

    scheduled = optim.Adam(model.parameters())
    scheduler = optim.lr_scheduler.OneCycleLR(scheduled, max_lr=suggested_lr, epochs=2,
                                              steps_per_epoch=len(train_loader))
    try:
        LRFinder(model, scheduled, criterion)
        raise AssertionError("LRFinder took an optimizer with a scheduler")
    except RuntimeError:
        pass
    for epoch in range(2):
        for inputs, labels in train_loader:
            scheduled.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            scheduled.step()
            scheduler.step()
            record += [loss.item(), scheduler.get_last_lr()[0]]
    return init, record + summary(model.parameters())


def test_lr_finder():
    compare(lr_finder)


# (i) a model trained under torch.nn.utils.parametrizations and then prepared for deployment: an orthogonal
# recurrent cell (Lezcano's expRNN style) under orthogonal(orthogonal_map=...) for each of "matrix_exp", "cayley" and
# "householder", a weight_norm(dim=None) readout and a spectral_norm(n_power_iterations=2) critic whose power
# iteration updates its _u and _v buffers in train() and not in eval(); trained by RMSprop, the orthogonality
# checked by W @ W.T, parametrize.cached() around each training forward (the recurrent weight computed once for all
# the time steps, as the parametrizations tutorial advises for RNNs); then deployment: parametrize.cached() for a
# batched evaluation, remove_parametrizations(..., leave_parametrized=True) on each, a Conv2d/BatchNorm2d trunk
# (convolutions without bias) folded by torch.nn.utils.fusion.fuse_conv_bn_eval and a Linear/BatchNorm1d pair by
# fuse_linear_bn_eval, found through named_modules() and replaced through get_submodule and setattr on the parent
# (the BatchNorms becoming nn.Identity), the deployed model's outputs equal to the trained one's in eval()
def deploy(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    P = sub(m, "nn.utils.parametrizations")
    parametrize = sub(m, "nn.utils.parametrize")
    fusion = sub(m, "nn.utils.fusion")

    class OrthoRNN(nn.Module):
        def __init__(self, n_in, n_hid, n_out, orthogonal_map):
            super().__init__()
            self.trunk = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1, bias=False), nn.BatchNorm2d(3), nn.ReLU(),
                                       nn.Conv2d(3, n_in, 3, padding=1, bias=False), nn.BatchNorm2d(n_in), nn.ReLU())
            self.input_kernel = nn.Linear(n_in, n_hid, bias=False)
            self.recurrent_kernel = P.orthogonal(nn.Linear(n_hid, n_hid, bias=False), orthogonal_map=orthogonal_map)
            self.proj = nn.Linear(n_hid, n_hid, bias=False)  # before a BatchNorm, as such code writes it
            self.proj_bn = nn.BatchNorm1d(n_hid)
            self.readout = P.weight_norm(nn.Linear(n_hid, n_out), dim=None)
            self.critic = P.spectral_norm(nn.Linear(n_hid, 1), n_power_iterations=2)
            self.n_hid = n_hid

        def forward(self, x):
            feats = self.trunk(x).mean(3).permute(2, 0, 1)  # rows as time steps: [T, N, C]
            h = x.new_zeros(x.shape[0], self.n_hid)
            for t in range(feats.shape[0]):
                h = torch.tanh(self.input_kernel(feats[t]) + self.recurrent_kernel(h))
            h = F.relu(self.proj_bn(self.proj(h)))
            return self.readout(h), self.critic(h).squeeze(1)

    rng = np.random.default_rng(0)
    x = torch.from_numpy(normal(rng, 4, 1, 3, 2))
    y = torch.from_numpy(rng.integers(0, 3, 4))
    record = []
    init = {}
    for orthogonal_map in ("matrix_exp", "cayley", "householder"):
        torch.manual_seed(0)
        model = OrthoRNN(2, 4, 3, orthogonal_map)
        init[orthogonal_map] = load(m, model, state and state[orthogonal_map])
        optimizer = optim.RMSprop(model.parameters(), lr=1e-2)
        for _ in range(2):
            optimizer.zero_grad()
            with parametrize.cached():  # the recurrent weight computed once for all the time steps
                logits, score = model(x)
            loss = F.cross_entropy(logits, y) + 0.1 * score.pow(2).mean()
            loss.backward()
            optimizer.step()
            record.append(loss.item())
        W = model.recurrent_kernel.weight
        assert torch.allclose(W @ W.T, torch.eye(4), atol=1e-5)
        u = model.critic.parametrizations.weight[0]._u.clone()
        model.eval()
        with torch.no_grad(), parametrize.cached():
            logits, score = model(x)
            again, _ = model(x)
        assert torch.equal(u, model.critic.parametrizations.weight[0]._u) and torch.equal(logits, again)
        record += logits.flatten().tolist() + score.tolist()
        power = model.critic.parametrizations.weight[0]
        record += power._u.tolist() + power._v.tolist()

        for module, name in ((model.recurrent_kernel, "weight"), (model.readout, "weight"), (model.critic, "weight")):
            parametrize.remove_parametrizations(module, name, leave_parametrized=True)
        assert not any(parametrize.is_parametrized(mod) for mod in model.modules())
        modules = dict(model.named_modules())
        for name, module in list(modules.items()):
            if isinstance(module, nn.BatchNorm2d):
                parent, index = name.rsplit(".", 1)
                conv_name = f"{parent}.{int(index) - 1}"
                conv = model.get_submodule(conv_name)
                setattr(model.get_submodule(parent), str(int(index) - 1), fusion.fuse_conv_bn_eval(conv, module))
                setattr(model.get_submodule(parent), index, nn.Identity())
        model.proj = fusion.fuse_linear_bn_eval(model.proj, model.proj_bn)
        model.proj_bn = nn.Identity()
        assert sum(isinstance(mod, nn.Identity) for mod in model.modules()) == 3
        with torch.no_grad():
            deployed, deployed_score = model(x)
        assert torch.allclose(deployed, logits, atol=1e-5) and torch.allclose(deployed_score, score, atol=1e-5)
        assert sorted(model.state_dict()) == [
            'critic.bias', 'critic.weight', 'input_kernel.weight', 'proj.bias', 'proj.weight', 'readout.bias',
            'readout.weight', 'recurrent_kernel.weight', 'trunk.0.bias', 'trunk.0.weight', 'trunk.3.bias',
            'trunk.3.weight']
        record += summary(model.parameters())
    return init, record


def test_deploy():
    compare(deploy)


# (j) bhanML's Co-teaching on noisy labels: labels flipped by a symmetric noise transition drawn in numpy and the
# noise_or_not mask, two CNNs each with its own Adam, adjust_learning_rate writing alpha_plan's lr and beta1_plan's
# betas into param_groups, rate_schedule by np.linspace of the forget rate; loss_coteaching with
# F.cross_entropy(..., reduce=False) (the deprecated argument), np.argsort(loss.data) of a tensor, each net's
# small-loss indices feeding the other net's update, pure_ratio by np.sum over noise_or_not[ind[...]]; then the
# same two nets fine-tuned with richardaecn's class-balanced focal loss (effective numbers by np.power, weights
# repeated to the batch by torch.tensor(weights).float().unsqueeze(0).repeat, F.one_hot, the modulator by
# torch.exp(-gamma * labels * logits - gamma * torch.log(1 + torch.exp(-1.0 * logits))),
# binary_cross_entropy_with_logits(weight=, reduction="none")) and the softmax variant by F.binary_cross_entropy
def coteaching(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rng = np.random.default_rng(0)
    n, num_classes, noise_rate, forget_rate = 16, 3, 0.4, 0.25
    clean = rng.integers(0, num_classes, n)
    P = np.ones((num_classes, num_classes)) * noise_rate / (num_classes - 1)
    np.fill_diagonal(P, 1 - noise_rate)
    noisy = np.array([rng.choice(num_classes, p=P[c]) for c in clean])
    noise_or_not = np.transpose(noisy) == np.transpose(clean)
    images = normal(rng, n, 1, 5, 5)

    class CNN(nn.Module):
        def __init__(self, input_channel=1, n_outputs=3, dropout_rate=0.0):
            self.dropout_rate = dropout_rate
            super(CNN, self).__init__()
            # no bias before the BatchNorm (the source's has one): its gradient is rounding alone, which Adam steps on
            self.c1 = nn.Conv2d(input_channel, 4, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.l_c1 = nn.Linear(4, n_outputs)

        def forward(self, x):
            h = F.leaky_relu(self.bn1(self.c1(x)), negative_slope=0.01)
            h = F.max_pool2d(h, kernel_size=2, stride=2)
            h = F.dropout2d(h, p=self.dropout_rate)
            h = F.avg_pool2d(h, kernel_size=h.data.shape[2])
            return self.l_c1(h.view(h.size(0), h.size(1)))

    def loss_coteaching(y_1, y_2, t, forget_rate, ind, noise_or_not):
        loss_1 = F.cross_entropy(y_1, t, reduce=False)
        ind_1_sorted = np.argsort(loss_1.data.cpu())
        loss_1_sorted = loss_1[ind_1_sorted]
        loss_2 = F.cross_entropy(y_2, t, reduce=False)
        ind_2_sorted = np.argsort(loss_2.data.cpu())
        remember_rate = 1 - forget_rate
        num_remember = int(remember_rate * len(loss_1_sorted))
        pure_ratio_1 = np.sum(noise_or_not[ind[ind_1_sorted[:num_remember]]]) / float(num_remember)
        pure_ratio_2 = np.sum(noise_or_not[ind[ind_2_sorted[:num_remember]]]) / float(num_remember)
        ind_1_update = ind_1_sorted[:num_remember]
        ind_2_update = ind_2_sorted[:num_remember]
        loss_1_update = F.cross_entropy(y_1[ind_2_update], t[ind_2_update])
        loss_2_update = F.cross_entropy(y_2[ind_1_update], t[ind_1_update])
        return (torch.sum(loss_1_update) / num_remember, torch.sum(loss_2_update) / num_remember,
                pure_ratio_1, pure_ratio_2)

    n_epoch, epoch_decay_start, learning_rate, mom1, mom2 = 3, 1, 0.01, 0.9, 0.1
    alpha_plan = [learning_rate] * n_epoch
    beta1_plan = [mom1] * n_epoch
    for i in range(epoch_decay_start, n_epoch):
        alpha_plan[i] = float(n_epoch - i) / (n_epoch - epoch_decay_start) * learning_rate
        beta1_plan[i] = mom2

    def adjust_learning_rate(optimizer, epoch):
        for param_group in optimizer.param_groups:
            param_group['lr'] = alpha_plan[epoch]
            param_group['betas'] = (beta1_plan[epoch], 0.999)

    rate_schedule = np.ones(n_epoch) * forget_rate
    rate_schedule[:2] = np.linspace(0, forget_rate, 2)

    torch.manual_seed(0)
    cnn1, cnn2 = CNN(), CNN()
    init = {"cnn1": load(m, cnn1, state and state["cnn1"]), "cnn2": load(m, cnn2, state and state["cnn2"])}
    optimizer1 = torch.optim.Adam(cnn1.parameters(), lr=learning_rate)
    optimizer2 = torch.optim.Adam(cnn2.parameters(), lr=learning_rate)
    record = []
    batch_size = 8
    for epoch in range(n_epoch):
        cnn1.train()
        adjust_learning_rate(optimizer1, epoch)
        cnn2.train()
        adjust_learning_rate(optimizer2, epoch)
        for i in range(n // batch_size):
            ind = np.arange(i * batch_size, (i + 1) * batch_size)
            images_b = torch.from_numpy(images[ind])
            labels = torch.from_numpy(noisy[ind]).long()
            logits1 = cnn1(images_b)
            logits2 = cnn2(images_b)
            loss_1, loss_2, pure_ratio_1, pure_ratio_2 = loss_coteaching(logits1, logits2, labels,
                                                                       rate_schedule[epoch], ind, noise_or_not)
            optimizer1.zero_grad()
            loss_1.backward()
            optimizer1.step()
            optimizer2.zero_grad()
            loss_2.backward()
            optimizer2.step()
            record += [loss_1.item(), loss_2.item(), 100 * pure_ratio_1, 100 * pure_ratio_2]

    def focal_loss(labels, logits, alpha, gamma):
        BCLoss = F.binary_cross_entropy_with_logits(input=logits, target=labels, reduction="none")
        if gamma == 0.0:
            modulator = 1.0
        else:
            modulator = torch.exp(-gamma * labels * logits - gamma * torch.log(1 + torch.exp(-1.0 * logits)))
        loss = modulator * BCLoss
        weighted_loss = alpha * loss
        focal_loss = torch.sum(weighted_loss)
        focal_loss /= torch.sum(labels)
        return focal_loss

    def CB_loss(labels, logits, samples_per_cls, no_of_classes, loss_type, beta, gamma):
        effective_num = 1.0 - np.power(beta, samples_per_cls)
        weights = (1.0 - beta) / np.array(effective_num)
        weights = weights / np.sum(weights) * no_of_classes
        labels_one_hot = F.one_hot(labels, no_of_classes).float()
        weights = torch.tensor(weights).float()
        weights = weights.unsqueeze(0)
        weights = weights.repeat(labels_one_hot.shape[0], 1) * labels_one_hot
        weights = weights.sum(1)
        weights = weights.unsqueeze(1)
        weights = weights.repeat(1, no_of_classes)
        if loss_type == "focal":
            cb_loss = focal_loss(labels_one_hot, logits, weights, gamma)
        elif loss_type == "sigmoid":
            cb_loss = F.binary_cross_entropy_with_logits(input=logits, target=labels_one_hot, weight=weights)
        elif loss_type == "softmax":
            pred = logits.softmax(dim=1)
            cb_loss = F.binary_cross_entropy(input=pred, target=labels_one_hot, weight=weights)
        return cb_loss

    samples_per_cls = np.bincount(noisy, minlength=num_classes).tolist()
    for loss_type, net, optimizer in (("focal", cnn1, optimizer1), ("softmax", cnn2, optimizer2),
                                      ("sigmoid", cnn1, optimizer1)):
        logits = net(torch.from_numpy(images[:batch_size]))
        loss = CB_loss(torch.from_numpy(noisy[:batch_size]), logits, samples_per_cls, num_classes, loss_type,
                       0.9999, 2.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    return init, record + summary(cnn1.parameters()) + summary(cnn2.parameters())


def test_coteaching():
    compare(coteaching)


# (k) a CIFAR distillation script with regularisers drawn from torch.distributions: mixup by
# torch.distributions.Beta(alpha, alpha).sample() of floats (a 0-d tensor, .item()) and of 1-element tensors, the
# permutation by torch.randperm (torch replays tnet's draws), mixup_criterion; CutMix's box from the same Beta's lam
# with the area-corrected lam; manifold mixup through a forward hook on a randomly chosen block that returns the mixed
# output (the hook's handle removed after the forward); Hinton's distillation by nn.KLDivLoss(reduction="batchmean",
# log_target=True) between log_softmax(student / T) and log_softmax(teacher / T), times T * T, beside
# F.kl_div(reduction="batchmean") on probabilities and the teacher in eval() under torch.no_grad(); SGD with Nesterov
def mixup_distill(m, state=None, replay=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    Beta = m.torch.distributions.Beta
    rng = np.random.default_rng(0)

    def make(width):
        return nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1),
                             nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 4))

    torch.manual_seed(0)
    teacher, student = make(6), make(3)
    init = {"teacher": load(m, teacher, state and state["teacher"]),
            "student": load(m, student, state and state["student"])}
    teacher.eval()
    optimizer = optim.SGD(student.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()
    kd_criterion = nn.KLDivLoss(reduction="batchmean", log_target=True)
    T, alpha_kd = 4.0, 0.7

    def mixup_data(x, y, alpha, step):
        lam = Beta(alpha, alpha).sample()
        assert lam.dim() == 0
        lam = float(replayed(m, replay, f"lam {step}", lam))
        index = replayed(m, replay, f"perm {step}", torch.randperm(x.size()[0])).long()
        mixed_x = lam * x + (1 - lam) * x[index, :]
        y_a, y_b = y, y[index]
        return mixed_x, y_a, y_b, lam

    def mixup_criterion(criterion, pred, y_a, y_b, lam):
        return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)

    def rand_bbox(size, lam, step):
        W, H = size[2], size[3]
        cut_rat = np.sqrt(1. - lam)
        cut_w, cut_h = int(W * cut_rat), int(H * cut_rat)
        cx, cy = [int(v) for v in replay.setdefault(f"box {step}", rng.integers(0, [W, H]).tolist())]
        bbx1, bby1 = np.clip(cx - cut_w // 2, 0, W), np.clip(cy - cut_h // 2, 0, H)
        bbx2, bby2 = np.clip(cx + cut_w // 2, 0, W), np.clip(cy + cut_h // 2, 0, H)
        return bbx1, bby1, bbx2, bby2

    def distill(outputs, teacher_outputs):
        soft = kd_criterion(F.log_softmax(outputs / T, dim=1), F.log_softmax(teacher_outputs / T, dim=1)) * T * T
        old = F.kl_div(F.log_softmax(outputs / T, dim=1), F.softmax(teacher_outputs / T, dim=1),
                       reduction="batchmean") * T * T
        assert abs(soft.item() - old.item()) < 1e-5
        return soft

    record = []
    for step in range(3):
        x = torch.from_numpy(normal(rng, 4, 3, 6, 6))
        y = torch.from_numpy(rng.integers(0, 4, 4))
        with torch.no_grad():
            teacher_outputs = teacher(x)
        if step == 0:
            inputs, targets_a, targets_b, lam = mixup_data(x, y, 1.0, step)
            outputs = student(inputs)
            loss = mixup_criterion(criterion, outputs, targets_a, targets_b, lam)
        elif step == 1:
            lam = Beta(torch.tensor([1.0]), torch.tensor([1.0])).sample()
            assert tuple(lam.shape) == (1,)
            lam = float(replayed(m, replay, f"lam {step}", lam)[0])
            rand_index = replayed(m, replay, f"perm {step}", torch.randperm(x.size()[0])).long()
            target_a, target_b = y, y[rand_index]
            bbx1, bby1, bbx2, bby2 = rand_bbox(x.size(), lam, step)
            x[:, :, bbx1:bbx2, bby1:bby2] = x[rand_index, :, bbx1:bbx2, bby1:bby2]
            lam = 1 - ((bbx2 - bbx1) * (bby2 - bby1) / (x.size()[-1] * x.size()[-2]))
            outputs = student(x)
            loss = criterion(outputs, target_a) * lam + criterion(outputs, target_b) * (1. - lam)
        else:
            lam = float(replayed(m, replay, f"lam {step}", Beta(2.0, 2.0).sample()))
            index = replayed(m, replay, f"perm {step}", torch.randperm(x.size(0))).long()
            k = int(replay.setdefault("layer", int(rng.integers(0, 2))))
            layer = student[2 * k + 1]

            def hook(module, input, output):
                return lam * output + (1 - lam) * output[index]

            handle = layer.register_forward_hook(hook)
            outputs = student(x)
            handle.remove()
            loss = mixup_criterion(criterion, outputs, y, y[index], lam)
        loss = (1 - alpha_kd) * loss + alpha_kd * distill(outputs, teacher_outputs)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record += [loss.item(), lam]
    assert len(student[1]._forward_hooks) == 0
    return init, record + summary(student.parameters())


def test_mixup_distill():
    compare(mixup_distill, replay={})


# (l) a streaming data pipeline as tabular and log-processing scripts write one: an IterableDataset over a CSV file
# read line by line (open() inside __iter__, torch.tensor of the parsed row), sharded by get_worker_info() (None in the
# main process) as the documentation's MyIterableDataset, a shuffle buffer by random.Random(seed), ChainDataset of two
# files, DataLoader(batch_size=4, drop_last=True) collating (tensor, int) rows; a stream that yields whole batches
# read by DataLoader(batch_size=None); StackDataset(features=..., label=...) collated into a dict of batches; ufoym's
# ImbalancedDatasetSampler (a Sampler subclass whose __iter__ draws torch.multinomial(weights, num_samples,
# replacement=True), torch replaying tnet's draws) inside a DataLoader with a collate_fn; a linear model trained on
# each, the losses compared
def streaming(m, state=None, replay=None, tmp_path=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    import random
    rng = np.random.default_rng(0)
    paths = []
    for k in range(2):
        path = tmp_path / f"part{k}.csv"
        rows = np.round(normal(rng, 10, 3), 3)
        labels = rng.integers(0, 2, 10)
        path.write_text("".join(",".join(str(v) for v in row) + f",{lab}\n" for row, lab in zip(rows, labels)))
        paths.append(str(path))

    class CSVStream(data.IterableDataset):
        def __init__(self, path):
            super(CSVStream, self).__init__()
            self.path = path

        def __iter__(self):
            worker_info = data.get_worker_info()
            with open(self.path) as f:
                for i, line in enumerate(f):
                    if worker_info is not None and i % worker_info.num_workers != worker_info.id:
                        continue
                    *x, y = line.strip().split(",")
                    yield torch.tensor([float(v) for v in x]), int(y)

    class ShuffleBuffer(data.IterableDataset):
        def __init__(self, dataset, buffer_size, seed=0):
            super().__init__()
            self.dataset, self.buffer_size, self.seed = dataset, buffer_size, seed

        def __iter__(self):
            rnd = random.Random(self.seed)
            buf = []
            for item in self.dataset:
                if len(buf) < self.buffer_size:
                    buf.append(item)
                else:
                    i = rnd.randrange(self.buffer_size)
                    yield buf[i]
                    buf[i] = item
            rnd.shuffle(buf)
            yield from buf

    class BatchStream(data.IterableDataset):
        def __init__(self, features, labels, batch_size):
            self.features, self.labels, self.batch_size = features, labels, batch_size

        def __iter__(self):
            for i in range(0, len(self.labels), self.batch_size):
                yield self.features[i:i + self.batch_size], self.labels[i:i + self.batch_size]

    class ImbalancedDatasetSampler(data.sampler.Sampler):
        def __init__(self, dataset, labels, indices=None, num_samples=None):
            self.indices = list(range(len(dataset))) if indices is None else indices
            self.num_samples = len(self.indices) if num_samples is None else num_samples
            label_to_count = {}
            for idx in self.indices:
                label_to_count[labels[idx]] = label_to_count.get(labels[idx], 0) + 1
            weights = [1.0 / label_to_count[labels[idx]] for idx in self.indices]
            self.weights = torch.FloatTensor(weights)  # the source's DoubleTensor: tnet refuses float64 (README)
            self.epoch = 0

        def __iter__(self):
            drawn = torch.multinomial(self.weights, self.num_samples, replacement=True)
            drawn = replayed(m, replay, f"sampler {self.epoch}", drawn)
            self.epoch += 1
            return (self.indices[i] for i in drawn.tolist())

        def __len__(self):
            return self.num_samples

    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    init = load(m, model, state)
    optimizer = optim.Adagrad(model.parameters(), lr=0.1)
    record = []

    def train_step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        record.append(loss.item())

    stream = ShuffleBuffer(data.ChainDataset([CSVStream(p) for p in paths]), buffer_size=5, seed=3)
    loader = data.DataLoader(stream, batch_size=4, drop_last=True)
    n_batches = 0
    for x, y in loader:
        assert tuple(x.shape) == (4, 3) and y.dtype == torch.int64
        train_step(x, y)
        n_batches += 1
    assert n_batches == 5

    features, labels = torch.from_numpy(normal(rng, 10, 3)), torch.from_numpy(rng.integers(0, 2, 10))
    for x, y in data.DataLoader(BatchStream(features, labels, 4), batch_size=None):
        train_step(x, y)

    stacked = data.StackDataset(features=data.TensorDataset(features), label=labels.tolist())
    for batch in data.DataLoader(stacked, batch_size=5):
        assert sorted(batch) == ["features", "label"]
        train_step(batch["features"][0], batch["label"])

    labels_list = [0] * 8 + [1] * 2
    dataset = data.TensorDataset(features, torch.tensor(labels_list))

    def collate_fn(batch):
        xs, ys = zip(*batch)
        return torch.stack(xs), torch.stack(ys)

    sampler = ImbalancedDatasetSampler(dataset, labels_list, num_samples=8)
    loader = data.DataLoader(dataset, sampler=sampler, batch_size=4, collate_fn=collate_fn)
    for epoch in range(2):
        for x, y in loader:
            train_step(x, y)
            record.append(float(y.float().mean()))
    return init, record + summary(model.parameters())


def test_streaming(tmp_path):
    compare(streaming, replay={}, tmp_path=tmp_path)
