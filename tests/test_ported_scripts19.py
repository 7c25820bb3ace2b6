"""Public code the earlier files leave out, written from memory in its repositories' styles and ported by its imports
alone, as test_ported_scripts.py: ildoonet's GradualWarmupScheduler (an _LRScheduler subclass stepped with the deprecated
epoch argument, ReduceLROnPlateau after warmup); CyclicLR, SequentialLR, ChainedScheduler, PolynomialLR,
CosineAnnealingWarmRestarts and MultiplicativeLR resumed from torch.save'd state_dicts; Adamax, NAdam, ASGD, Rprop and
Adagrad with add_param_group; gpleiss' temperature scaling and ECE, a Mahalanobis detector and ODIN; EWC on permuted
MNIST; Carlini-Wagner L2 and DeepFool; P4 group convolutions by rot90 and RotNet; NFNet's ScaledStdConv2d and adaptive
gradient clipping; PCGrad; network slimming and the lottery ticket; LDAM-DRW with focal and label-smoothed losses;
torchvision's to_tensor (isinstance(img, torch.ByteTensor) on uint8 data) and a torch.Generator's get_state/set_state;
SASA, involution, MAE's patchify (reshape(shape=)) and F.fold, YOLOv5's Focus; Bayes by Backprop; IRNN, an LSTM with
proj_size and a packed bidirectional GRU; dynamic convolution, CoordConv and octave convolution; a SELU network with
LocalResponseNorm, MultiMarginLoss, GaussianNLLLoss, HingeEmbeddingLoss, TripletMarginWithDistanceLoss and ZCA
whitening; model surgery by set_submodule with backward pre-hooks under a gradient penalty; a StyleGAN2 discriminator
with its R1 penalty through avg_pool2d and the minibatch stddev; and restricted Boltzmann machines. Each runs in tnet,
then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few
numbers, agree. Numpy draws what a script draws; shapes are tiny and runs 1-3 steps."""
import copy
import io
import math
import random

import numpy as np

from helpers import TORCH_BEFORE_2_13, compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) ildoonet/pytorch-gradual-warmup-lr's GradualWarmupScheduler: an _LRScheduler subclass wrapping an after_scheduler
# (CosineAnnealingLR handed its base_lrs once warm; ReduceLROnPlateau stepped with metrics and an epoch), stepped as its
# README does, scheduler.step(epoch) with the deprecated epoch argument, and get_last_lr() logged each epoch
def gradual_warmup(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    from_sched = m.lr_scheduler
    _LRScheduler, ReduceLROnPlateau = from_sched._LRScheduler, from_sched.ReduceLROnPlateau

    class GradualWarmupScheduler(_LRScheduler):
        def __init__(self, optimizer, multiplier, total_epoch, after_scheduler=None):
            self.multiplier = multiplier
            if self.multiplier < 1.:
                raise ValueError('multiplier should be greater thant or equal to 1.')
            self.total_epoch = total_epoch
            self.after_scheduler = after_scheduler
            self.finished = False
            super(GradualWarmupScheduler, self).__init__(optimizer)

        def get_lr(self):
            if self.last_epoch > self.total_epoch:
                if self.after_scheduler:
                    if not self.finished:
                        self.after_scheduler.base_lrs = [base_lr * self.multiplier for base_lr in self.base_lrs]
                        self.finished = True
                    return self.after_scheduler.get_last_lr()
                return [base_lr * self.multiplier for base_lr in self.base_lrs]
            if self.multiplier == 1.0:
                return [base_lr * (float(self.last_epoch) / self.total_epoch) for base_lr in self.base_lrs]
            else:
                return [base_lr * ((self.multiplier - 1.) * self.last_epoch / self.total_epoch + 1.)
                        for base_lr in self.base_lrs]

        def step_ReduceLROnPlateau(self, metrics, epoch=None):
            if epoch is None:
                epoch = self.last_epoch + 1
            self.last_epoch = epoch if epoch != 0 else 1
            if self.last_epoch <= self.total_epoch:
                warmup_lr = [base_lr * ((self.multiplier - 1.) * self.last_epoch / self.total_epoch + 1.)
                             for base_lr in self.base_lrs]
                for param_group, lr in zip(self.optimizer.param_groups, warmup_lr):
                    param_group['lr'] = lr
            else:
                if epoch is None:
                    self.after_scheduler.step(metrics, None)
                else:
                    self.after_scheduler.step(metrics, epoch - self.total_epoch)

        def step(self, epoch=None, metrics=None):
            if type(self.after_scheduler) != ReduceLROnPlateau:
                if self.finished and self.after_scheduler:
                    if epoch is None:
                        self.after_scheduler.step(None)
                    else:
                        self.after_scheduler.step(epoch - self.total_epoch)
                    self._last_lr = self.after_scheduler.get_last_lr()
                else:
                    return super(GradualWarmupScheduler, self).step(epoch)
            else:
                self.step_ReduceLROnPlateau(metrics, epoch)

    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    init = load(m, model, state)
    rng = np.random.default_rng(0)
    x, y = torch.tensor(normal(rng, 5, 6)), torch.tensor(rng.integers(0, 3, 5))
    criterion = nn.CrossEntropyLoss()
    losses = []
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    cosine = from_sched.CosineAnnealingLR(optimizer, T_max=6)
    scheduler_warmup = GradualWarmupScheduler(optimizer, multiplier=8, total_epoch=2, after_scheduler=cosine)
    optimizer.zero_grad()
    optimizer.step()
    for epoch in range(1, 7):
        scheduler_warmup.step(epoch)
        lr = optimizer.param_groups[0]['lr']
        if epoch <= 2:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        losses += [lr, scheduler_warmup.get_last_lr()[0]]
    # the ReduceLROnPlateau variant, stepped at each epoch's end with the validation loss
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    plateau = ReduceLROnPlateau(optimizer, 'min', factor=0.5, patience=0)
    scheduler = GradualWarmupScheduler(optimizer, multiplier=2, total_epoch=2, after_scheduler=plateau)
    for epoch, val_loss in enumerate([1.0, 0.9, 0.95, 0.97, 0.5]):
        scheduler.step(epoch, metrics=val_loss)
        losses.append(optimizer.param_groups[0]['lr'])
    return init, losses + summary(model.parameters())


def test_gradual_warmup():
    compare(gradual_warmup)


# (b) schedulers of today's training scripts, resumed from a checkpoint: CyclicLR in triangular2 mode cycling SGD's
# momentum, SequentialLR of LinearLR warmup then PolynomialLR, ChainedScheduler of ConstantLR and ExponentialLR,
# CosineAnnealingWarmRestarts(T_mult=2) stepped by fractional epochs (epoch + i / iters, as its docstring shows),
# MultiplicativeLR; each saved with the optimizer by torch.save into a buffer, loaded into fresh ones, and continued
def scheduler_resume(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    sched = m.lr_scheduler
    model = nn.Linear(4, 2)
    init = load(m, model, state)
    rng = np.random.default_rng(1)
    x, y = torch.tensor(normal(rng, 6, 4)), torch.tensor(normal(rng, 6, 2))

    def build(kind, last_epoch=-1):
        if kind == "cyclic":
            opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            return opt, sched.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2",
                                       cycle_momentum=True, base_momentum=0.8, max_momentum=0.9)
        if kind == "sequential":
            opt = optim.SGD(model.parameters(), lr=0.1)
            warm = sched.LinearLR(opt, start_factor=0.1, total_iters=2)
            decay = sched.PolynomialLR(opt, total_iters=4, power=2.0)
            return opt, sched.SequentialLR(opt, schedulers=[warm, decay], milestones=[2])
        if kind == "chained":
            opt = optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.05)
            return opt, sched.ChainedScheduler([sched.ConstantLR(opt, factor=0.5, total_iters=2),
                                                sched.ExponentialLR(opt, gamma=0.9)])
        if kind == "restarts":
            opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
            return opt, sched.CosineAnnealingWarmRestarts(opt, T_0=1, T_mult=2, eta_min=1e-4)
        opt = optim.SGD(model.parameters(), lr=0.05)
        return opt, sched.MultiplicativeLR(opt, lr_lambda=lambda epoch: 0.95)

    losses = []
    iters = 2
    for kind in ["cyclic", "sequential", "chained", "restarts", "multiplicative"]:
        optimizer, scheduler = build(kind)
        for epoch in range(4):
            if epoch == 2:  # resume: a checkpoint of both, loaded into fresh ones
                buffer = io.BytesIO()
                torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                            "epoch": epoch}, buffer)
                buffer.seek(0)
                checkpoint = torch.load(buffer)
                optimizer, scheduler = build(kind)
                optimizer.load_state_dict(checkpoint["optimizer"])
                scheduler.load_state_dict(checkpoint["scheduler"])
            for i in range(iters):
                optimizer.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                if kind == "restarts":
                    scheduler.step(epoch + i / iters)
                elif kind == "cyclic":
                    scheduler.step()
                losses.append(loss.item())
            if kind not in ("restarts", "cyclic"):
                scheduler.step()
            group = optimizer.param_groups[0]
            losses += [group["lr"], scheduler.get_last_lr()[0], group.get("momentum", 0.0)]
    return init, losses + summary(model.parameters())


def test_scheduler_resume():
    compare(scheduler_resume)


# (c) the optimizers of the older MNIST examples beside progressive unfreezing: Adamax, NAdam (momentum_decay),
# ASGD (its ax averages read from the state), Rprop (etas, step_sizes), Adagrad (lr_decay, initial_accumulator_value);
# a frozen backbone's parameters added later by add_param_group with their own lr; the optimizer's state_dict through
# torch.save into a fresh optimizer, and optimizer.state[p]['step'] read back
def optimizer_zoo(m, state=None):
    torch, nn, optim, F = m.torch, m.nn, m.optim, m.F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(8, 6), nn.Tanh())
            self.head = nn.Linear(6, 4)

        def forward(self, x):
            return self.head(self.backbone(x))

    model = Net()
    init = load(m, model, state)
    rng = np.random.default_rng(2)
    x, y = torch.tensor(normal(rng, 6, 8)), torch.tensor(rng.integers(0, 4, 6))
    makers = [
        lambda params: optim.Adamax(params, lr=0.02, betas=(0.9, 0.99)),
        lambda params: optim.NAdam(params, lr=0.01, momentum_decay=4e-3, weight_decay=1e-4),
        lambda params: optim.ASGD(params, lr=0.05, lambd=1e-4, alpha=0.75, t0=1),
        lambda params: optim.Rprop(params, lr=0.01, etas=(0.5, 1.2), step_sizes=(1e-6, 50)),
        lambda params: optim.Adagrad(params, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
    ]
    if TORCH_BEFORE_2_13:  # torch 2.11's Adagrad (the GPU machine's) keeps no state for a group added later: KeyError
        makers.pop()
    losses = []
    for make in makers:
        for p in model.backbone.parameters():
            p.requires_grad = False
        optimizer = make(model.head.parameters())
        for step in range(3):
            if step == 1:  # unfreeze the backbone at a tenth of the lr
                for p in model.backbone.parameters():
                    p.requires_grad = True
                optimizer.add_param_group({"params": model.backbone.parameters(), "lr": optimizer.defaults["lr"] / 10})
            if step == 2:
                buffer = io.BytesIO()
                torch.save(optimizer.state_dict(), buffer)
                buffer.seek(0)
                fresh = make(model.head.parameters())
                fresh.add_param_group({"params": list(model.backbone.parameters()), "lr": 0.0})
                fresh.load_state_dict(torch.load(buffer))
                optimizer = fresh
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        losses += [float(optimizer.state[model.head.weight]["step"]), optimizer.param_groups[1]["lr"],
                   len(optimizer.param_groups[1]["params"])]
        if isinstance(optimizer, optim.ASGD):
            losses.append(optimizer.state[model.head.weight]["ax"].sum().item())
    return init, losses + summary(model.parameters())


def test_optimizer_zoo():
    compare(optimizer_zoo)


# (d) gpleiss/temperature_scaling's ModelWithTemperature (a temperature nn.Parameter(torch.ones(1) * 1.5) expanded to
# the logits, LBFGS(lr=0.01, max_iter=50) on the validation NLL, _ECELoss's bins by torch.linspace, confidences by
# torch.max(softmaxes, 1), in_bin by gt/le and .float().mean()); then pokaxoel's Mahalanobis detector (class means of
# penultimate features, a shared covariance inverted by torch.linalg.pinv, scores by diag of (x - mu) S^-1 (x - mu)^T)
# and ODIN's input preprocessing (the sign of the input's gradient by torch.ge(...).float() - 0.5) * 2)
def calibration_ood(m, state=None):
    torch, nn, optim, F = m.torch, m.nn, m.optim, m.F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
            self.fc = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc(self.features(x))

        def penultimate(self, x):
            return self.features(x)

    class ModelWithTemperature(nn.Module):
        def __init__(self, model):
            super(ModelWithTemperature, self).__init__()
            self.model = model
            self.temperature = nn.Parameter(torch.ones(1) * 1.5)

        def forward(self, input):
            logits = self.model(input)
            return self.temperature_scale(logits)

        def temperature_scale(self, logits):
            temperature = self.temperature.unsqueeze(1).expand(logits.size(0), logits.size(1))
            return logits / temperature

        def set_temperature(self, valid_loader):
            nll_criterion = nn.CrossEntropyLoss()
            ece_criterion = _ECELoss()
            logits_list = []
            labels_list = []
            with torch.no_grad():
                for input, label in valid_loader:
                    logits = self.model(input)
                    logits_list.append(logits)
                    labels_list.append(label)
                logits = torch.cat(logits_list)
                labels = torch.cat(labels_list)
            before_temperature_nll = nll_criterion(logits, labels).item()
            before_temperature_ece = ece_criterion(logits, labels).item()
            optimizer = optim.LBFGS([self.temperature], lr=0.01, max_iter=4)

            def eval():
                optimizer.zero_grad()
                loss = nll_criterion(self.temperature_scale(logits), labels)
                loss.backward()
                return loss
            optimizer.step(eval)
            after_temperature_nll = nll_criterion(self.temperature_scale(logits), labels).item()
            after_temperature_ece = ece_criterion(self.temperature_scale(logits), labels).item()
            return [before_temperature_nll, before_temperature_ece, after_temperature_nll, after_temperature_ece,
                    self.temperature.item()]

    class _ECELoss(nn.Module):
        def __init__(self, n_bins=5):
            super(_ECELoss, self).__init__()
            bin_boundaries = torch.linspace(0, 1, n_bins + 1)
            self.bin_lowers = bin_boundaries[:-1]
            self.bin_uppers = bin_boundaries[1:]

        def forward(self, logits, labels):
            softmaxes = F.softmax(logits, dim=1)
            confidences, predictions = torch.max(softmaxes, 1)
            accuracies = predictions.eq(labels)
            ece = torch.zeros(1, device=logits.device)
            for bin_lower, bin_upper in zip(self.bin_lowers, self.bin_uppers):
                in_bin = confidences.gt(bin_lower.item()) * confidences.le(bin_upper.item())
                prop_in_bin = in_bin.float().mean()
                if prop_in_bin.item() > 0:
                    accuracy_in_bin = accuracies[in_bin].float().mean()
                    avg_confidence_in_bin = confidences[in_bin].mean()
                    ece += torch.abs(avg_confidence_in_bin - accuracy_in_bin) * prop_in_bin
            return ece

    net = Net()
    init = load(m, net, state)
    rng = np.random.default_rng(3)
    x, y = torch.tensor(normal(rng, 12, 6) * 3), torch.tensor(rng.integers(0, 3, 12))
    valid_loader = m.data.DataLoader(m.data.TensorDataset(x, y), batch_size=5)
    scaled = ModelWithTemperature(net)
    losses = scaled.set_temperature(valid_loader)

    # Mahalanobis: tied covariance of the penultimate features
    net.eval()
    with torch.no_grad():
        feats = net.penultimate(x)
        class_means = torch.stack([feats[y == c].mean(0) if (y == c).any() else torch.zeros(8) for c in range(3)])
        centered = feats - class_means[y]
        cov = centered.t() @ centered / feats.size(0)
        precision = torch.linalg.pinv(cov + 0.1 * torch.eye(8), hermitian=True)
    test = torch.tensor(normal(rng, 4, 6), requires_grad=True)
    out = net.penultimate(test)
    gaussian_score = []
    for c in range(3):
        zero_f = out - class_means[c]
        term_gau = -0.5 * torch.mm(torch.mm(zero_f, precision), zero_f.t()).diag()
        gaussian_score.append(term_gau.view(-1, 1))
    gaussian_score = torch.cat(gaussian_score, 1)
    sample_pred = gaussian_score.max(1)[1]
    batch_sample_mean = class_means.index_select(0, sample_pred)
    zero_f = out - batch_sample_mean
    pure_gau = -0.5 * torch.mm(torch.mm(zero_f, precision), zero_f.t()).diag()
    loss = torch.mean(-pure_gau)
    loss.backward()
    gradient = torch.ge(test.grad.data, 0)
    gradient = (gradient.float() - 0.5) * 2
    tempInputs = torch.add(test.data, gradient, alpha=-0.01)
    with torch.no_grad():
        noise_out = net.penultimate(tempInputs)
        noise_score = torch.stack([(-0.5 * ((noise_out - class_means[c]) @ precision * (noise_out - class_means[c]))
                                   .sum(1)) for c in range(3)], 1)
    losses += [loss.item(), torch.max(noise_score, dim=1)[0].sum().item()]

    # ODIN: temperature 1000 and a perturbation against the max softmax's NLL
    inputs = torch.tensor(normal(rng, 4, 6), requires_grad=True)
    outputs = net(inputs)
    temper = 1000
    maxIndexTemp = np.argmax(outputs.data.cpu().numpy(), axis=1)
    outputs = outputs / temper
    labels = torch.LongTensor(maxIndexTemp)
    loss = nn.CrossEntropyLoss()(outputs, labels)
    loss.backward()
    gradient = torch.ge(inputs.grad.data, 0)
    gradient = (gradient.float() - 0.5) * 2
    tempInputs = torch.add(inputs.data, -0.0014, gradient)
    outputs = net(tempInputs) / temper
    nnOutputs = outputs.data.cpu().numpy()
    nnOutputs = nnOutputs - np.max(nnOutputs, axis=1, keepdims=True)
    nnOutputs = np.exp(nnOutputs) / np.sum(np.exp(nnOutputs), axis=1, keepdims=True)
    losses.append(float(np.max(nnOutputs, axis=1).sum()))
    return init, losses + summary(net.parameters())


def test_calibration_ood():
    compare(calibration_ood)


# (e) moskomule/ewc.pytorch's EWC on permuted MNIST: tasks by a fixed pixel permutation (x.view(-1, 784)[:, perm]),
# the old task's parameters kept as {n: p.clone().detach()} of requires_grad ones, the diagonal Fisher from squared
# gradients of the model's own predicted labels (F.log_softmax, .max(1)[1], nll_loss), Variable-era .data copies,
# and the penalty importance * sum(F_i * (p - p*)^2) added to each new task's loss
def ewc(m, state=None):
    torch, nn, optim, F = m.torch, m.nn, m.optim, m.F
    from_autograd = m.torch.autograd

    def variable(t: torch.Tensor, use_cuda=False, **kwargs):
        if torch.cuda.is_available() and use_cuda:
            t = t.cuda()
        return from_autograd.Variable(t, **kwargs)

    class EWC(object):
        def __init__(self, model: nn.Module, dataset: list):
            self.model = model
            self.dataset = dataset
            self.params = {n: p for n, p in self.model.named_parameters() if p.requires_grad}
            self._means = {}
            self._precision_matrices = self._diag_fisher()
            for n, p in copy.deepcopy(self.params).items():
                self._means[n] = variable(p.data)

        def _diag_fisher(self):
            precision_matrices = {}
            for n, p in copy.deepcopy(self.params).items():
                p.data.zero_()
                precision_matrices[n] = variable(p.data)
            self.model.eval()
            for input in self.dataset:
                self.model.zero_grad()
                input = variable(input)
                output = self.model(input).view(1, -1)
                label = output.max(1)[1].view(-1)
                loss = F.nll_loss(F.log_softmax(output, dim=1), label)
                loss.backward()
                for n, p in self.model.named_parameters():
                    precision_matrices[n].data += p.grad.data ** 2 / len(self.dataset)
            precision_matrices = {n: p for n, p in precision_matrices.items()}
            return precision_matrices

        def penalty(self, model: nn.Module):
            loss = 0
            for n, p in model.named_parameters():
                _loss = self._precision_matrices[n] * (p - self._means[n]) ** 2
                loss += _loss.sum()
            return loss

    class MLP(nn.Module):
        def __init__(self, hidden_size=10):
            super(MLP, self).__init__()
            self.fc1 = nn.Linear(16, hidden_size)
            self.fc2 = nn.Linear(hidden_size, hidden_size)
            self.fc3 = nn.Linear(hidden_size, 10)

        def forward(self, input):
            x = F.relu(self.fc1(input))
            x = F.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    model = MLP()
    init = load(m, model, state)
    rng = np.random.default_rng(4)
    images = torch.tensor(rng.random((6, 1, 4, 4)).astype(np.float32))
    labels = torch.tensor(rng.integers(0, 10, 6))
    perms = [torch.arange(16)] + [torch.from_numpy(rng.permutation(16)) for _ in range(1)]
    tasks = [(images.view(-1, 16)[:, perm], labels) for perm in perms]
    optimizer = optim.SGD(params=model.parameters(), lr=0.1)
    importance = 1000
    losses = []
    ewc_obj = None
    for task, (input, target) in enumerate(tasks):
        model.train()
        for _ in range(1):
            optimizer.zero_grad()
            output = model(input)
            loss = F.cross_entropy(output, target)
            if ewc_obj is not None:
                loss = loss + importance * ewc_obj.penalty(model)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        old_tasks = [t[0][i] for t in tasks[:task + 1] for i in range(2)]
        ewc_obj = EWC(model, old_tasks)
        losses.append(sum(v.sum().item() for v in ewc_obj._precision_matrices.values()))
    return init, losses + summary(model.parameters())


def test_ewc():
    compare(ewc)


# (f) Carlini-Wagner's L2 attack as the torchattacks/cleverhans ports write it: a tanh-space variable w optimised by
# Adam, one-hot labels by torch.eye(n)[labels], the best adversarial kept through masks, torch.max(real - other, -kappa)
# with torch.clamp and the flattened L2 by nn.MSELoss(reduction='none'); then DeepFool's linearised steps (per class
# autograd.grad with retain_graph, the minimum of |f_k| / ||w_k|| over classes, overshoot 0.02)
def cw_deepfool(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim

    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 4))
    init = load(m, model, state)
    model.eval()
    rng = np.random.default_rng(5)
    images = torch.tensor(rng.random((3, 1, 6, 6)).astype(np.float32))
    with torch.no_grad():
        labels = model(images).argmax(1)

    def tanh_space(x):
        return 1 / 2 * (torch.tanh(x) + 1)

    def inverse_tanh_space(x):
        return 0.5 * torch.log((1 + x.clamp(-1 + 1e-6, 1 - 1e-6)) / (1 - x.clamp(-1 + 1e-6, 1 - 1e-6)))

    def f(outputs, labels, kappa=0):
        one_hot_labels = torch.eye(outputs.shape[1])[labels]
        other = torch.max((1 - one_hot_labels) * outputs, dim=1)[0]
        real = torch.max(one_hot_labels * outputs, dim=1)[0]
        return torch.clamp((real - other), min=-kappa)

    c, steps, lr = 1.0, 3, 0.05
    w = inverse_tanh_space(images * 2 - 1).detach()
    w.requires_grad = True
    best_adv_images = images.clone().detach()
    best_L2 = 1e10 * torch.ones((len(images)))
    prev_cost = 1e10
    dim = len(images.shape)
    MSELoss = nn.MSELoss(reduction='none')
    Flatten = nn.Flatten()
    optimizer = optim.Adam([w], lr=lr)
    losses = []
    for step in range(steps):
        adv_images = tanh_space(w)
        current_L2 = MSELoss(Flatten(adv_images), Flatten(images)).sum(dim=1)
        L2_loss = current_L2.sum()
        outputs = model(adv_images)
        f_loss = f(outputs, labels).sum()
        cost = L2_loss + c * f_loss
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        pre = torch.argmax(outputs.detach(), 1)
        condition = (pre != labels).float()
        mask = condition * (best_L2 > current_L2.detach())
        best_L2 = mask * current_L2.detach() + (1 - mask) * best_L2
        mask = mask.view([-1] + [1] * (dim - 1))
        best_adv_images = mask * adv_images.detach() + (1 - mask) * best_adv_images
        if step % max(steps // 10, 1) == 0:
            if cost.item() > prev_cost:
                break
            prev_cost = cost.item()
        losses.append(cost.item())
    losses += [best_adv_images.sum().item(), w.sum().item()]

    def deepfool(image, net, num_classes=4, overshoot=0.02, max_iter=3):
        f_image = net(image[None]).data.numpy().flatten()
        I = f_image.argsort()[::-1]
        I = I[0:num_classes]
        label = I[0]
        input_shape = image.shape
        pert_image = copy.deepcopy(image)
        r_tot = np.zeros(input_shape)
        loop_i = 0
        x = pert_image[None].clone().requires_grad_(True)
        fs = net.forward(x)
        k_i = label
        while k_i == label and loop_i < max_iter:
            pert = np.inf
            grad_orig = torch.autograd.grad(fs[0, I[0]], x, retain_graph=True)[0].data.numpy().copy()
            for k in range(1, num_classes):
                cur_grad = torch.autograd.grad(fs[0, I[k]], x, retain_graph=True)[0].data.numpy().copy()
                w_k = cur_grad - grad_orig
                f_k = (fs[0, I[k]] - fs[0, I[0]]).data.numpy()
                pert_k = abs(f_k) / np.linalg.norm(w_k.flatten())
                if pert_k < pert:
                    pert = pert_k
                    w = w_k
            r_i = (pert + 1e-4) * w / np.linalg.norm(w)
            r_tot = np.float32(r_tot + r_i)
            pert_image = image + (1 + overshoot) * torch.from_numpy(r_tot)[0]
            x = pert_image[None].clone().detach().requires_grad_(True)
            fs = net.forward(x)
            k_i = np.argmax(fs.data.numpy().flatten())
            loop_i += 1
        return (1 + overshoot) * r_tot, loop_i, label, k_i, pert_image

    for image in images[:1]:
        r_tot, loop_i, label, k_i, pert_image = deepfool(image, model)
        losses += [float(np.linalg.norm(r_tot)), loop_i, int(label), int(k_i), pert_image.sum().item()]
    return init, losses


def test_cw_deepfool():
    compare(cw_deepfool)


# (g) tscohen's group-equivariant CNNs on rotated MNIST as P4 convolutions written in plain torch: the filter bank
# rotated by torch.rot90(w, k, dims=(-2, -1)), the group axis rolled by torch.roll, stacked and viewed into one conv
# weight; invariance by a max over rotations; then RotNet's self-supervision (the four rotations of a batch by
# torch.rot90 cat'ed, labels by torch.arange(4).repeat_interleave), and rotation TTA by flip and rot90 averaging
def p4_rotnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Z2P4Conv(nn.Module):
        def __init__(self, cin, cout, k=3):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(cout, cin, k, k) / math.sqrt(cin * k * k))
            self.bias = nn.Parameter(torch.zeros(cout))

        def forward(self, x):
            w = torch.stack([torch.rot90(self.weight, r, dims=(-2, -1)) for r in range(4)], dim=1)
            cout = w.shape[0]
            y = F.conv2d(x, w.reshape(cout * 4, *w.shape[2:]), padding=1)
            return y.view(x.shape[0], cout, 4, *y.shape[-2:]) + self.bias.view(1, -1, 1, 1, 1)

    class P4P4Conv(nn.Module):
        def __init__(self, cin, cout, k=3):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(cout, cin, 4, k, k) / math.sqrt(cin * 4 * k * k))

        def forward(self, x):
            ws = []
            for r in range(4):
                w = torch.rot90(self.weight, r, dims=(-2, -1))
                ws.append(torch.roll(w, shifts=r, dims=2))
            w = torch.stack(ws, dim=1)
            cout, cin = w.shape[0], w.shape[2]
            b, _, _, h, wd = x.shape
            y = F.conv2d(x.reshape(b, cin * 4, h, wd), w.reshape(cout * 4, cin * 4, *w.shape[-2:]), padding=1)
            return y.view(b, cout, 4, h, wd)

    class P4CNN(nn.Module):
        def __init__(self, n_classes=4):
            super().__init__()
            self.c1 = Z2P4Conv(1, 2)
            self.c2 = P4P4Conv(2, 3)
            self.fc = nn.Linear(3, n_classes)

        def forward(self, x):
            x = F.relu(self.c1(x))
            x = F.relu(self.c2(x))
            x = x.amax(dim=2)
            x = F.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.fc(x)

    model = P4CNN()
    init = load(m, model, state)
    rng = np.random.default_rng(6)
    x = torch.tensor(normal(rng, 2, 1, 5, 5))
    model.eval()
    with torch.no_grad():
        invariance = (model(x) - model(torch.rot90(x, 1, [2, 3]))).abs().max().item()
    assert invariance < 1e-4, invariance
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(1):
        rotated = torch.cat([torch.rot90(x, k, (2, 3)) for k in range(4)], dim=0)
        rot_labels = torch.arange(4).repeat_interleave(x.size(0))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(rotated), rot_labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        tta = (model(x) + model(torch.flip(x, dims=[3])) + model(x.rot90(2, [-2, -1]))) / 3
    losses.append(tta.sum().item())
    return init, losses + summary(model.parameters())


def test_p4_rotnet():
    compare(p4_rotnet)


# (h) timm's NFNet pieces on CIFAR: ScaledStdConv2d (the weight standardised in forward by F.batch_norm of the
# reshaped weight with gain * fan_in ** -0.5, eps as a float), the NF block's alpha/beta variance bookkeeping with
# a skip-init gain nn.Parameter(torch.tensor(0.)), gamma-scaled GELU; and adaptive gradient clipping (timm's agc.py:
# unitwise_norm by p.norm(dim=tuple(range(1, ndim)), keepdim=True), max_norm from clamp_(min=eps), torch.where of the
# trigger, p.grad.detach().copy_) applied to all but the final layer, filtered by name
def nfnet_agc(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class ScaledStdConv2d(nn.Conv2d):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=None, dilation=1, groups=1,
                     bias=True, gamma=1.0, eps=1e-6, gain_init=1.0):
            if padding is None:
                padding = ((stride - 1) + dilation * (kernel_size - 1)) // 2
            super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                             dilation=dilation, groups=groups, bias=bias)
            self.gain = nn.Parameter(torch.full((self.out_channels, 1, 1, 1), gain_init))
            self.scale = gamma * self.weight[0].numel() ** -0.5
            self.eps = eps

        def forward(self, x):
            weight = F.batch_norm(
                self.weight.reshape(1, self.out_channels, -1), None, None,
                weight=(self.gain * self.scale).view(-1),
                training=True, momentum=0., eps=self.eps).reshape_as(self.weight)
            return F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    class GammaAct(nn.Module):
        def __init__(self, gamma=1.7015043497085571):
            super().__init__()
            self.gamma = gamma

        def forward(self, x):
            return F.gelu(x).mul_(self.gamma)

    class NormFreeBlock(nn.Module):
        def __init__(self, in_chs, out_chs, alpha=0.2, beta=1.0):
            super().__init__()
            self.alpha, self.beta = alpha, beta
            self.act1 = GammaAct()
            self.conv1 = ScaledStdConv2d(in_chs, out_chs, 1)
            self.act2 = GammaAct()
            self.conv2 = ScaledStdConv2d(out_chs, out_chs, 3)
            self.downsample = ScaledStdConv2d(in_chs, out_chs, 1) if in_chs != out_chs else None
            self.skipinit_gain = nn.Parameter(torch.tensor(0.))

        def forward(self, x):
            out = self.act1(x) * self.beta
            shortcut = x if self.downsample is None else self.downsample(out)
            out = self.conv1(out)
            out = self.conv2(self.act2(out))
            out.mul_(self.skipinit_gain)
            return out * self.alpha + shortcut

    class NFNet(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.stem = ScaledStdConv2d(3, 4, 3, stride=2)
            expected_var = 1.0
            blocks = []
            for in_chs, out_chs in [(4, 6), (6, 6)]:
                beta = 1. / expected_var ** 0.5
                blocks.append(NormFreeBlock(in_chs, out_chs, beta=beta))
                expected_var += 0.2 ** 2
            self.stages = nn.Sequential(*blocks)
            self.head = nn.Linear(6, num_classes)
            nn.init.zeros_(self.head.weight)

        def forward(self, x):
            x = self.stages(self.stem(x))
            return self.head(x.mean((2, 3)))

    def unitwise_norm(x, norm_type=2.0):
        if x.ndim <= 1:
            return x.norm(norm_type)
        else:
            return x.norm(norm_type, dim=tuple(range(1, x.ndim)), keepdim=True)

    def adaptive_clip_grad(parameters, clip_factor=0.01, eps=1e-3, norm_type=2.0):
        if isinstance(parameters, torch.Tensor):
            parameters = [parameters]
        for p in parameters:
            if p.grad is None:
                continue
            p_data = p.detach()
            g_data = p.grad.detach()
            max_norm = unitwise_norm(p_data, norm_type=norm_type).clamp_(min=eps).mul_(clip_factor)
            grad_norm = unitwise_norm(g_data, norm_type=norm_type)
            clipped_grad = g_data * (max_norm / grad_norm.clamp(min=1e-6))
            new_grads = torch.where(grad_norm < max_norm, g_data, clipped_grad)
            p.grad.detach().copy_(new_grads)

    model = NFNet()
    init = load(m, model, state)
    rng = np.random.default_rng(7)
    x, y = torch.tensor(normal(rng, 2, 3, 6, 6)), torch.tensor(rng.integers(0, 10, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    losses = []
    for step in range(1):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        adaptive_clip_grad([p for n, p in model.named_parameters() if not n.startswith('head')], clip_factor=0.02)
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_nfnet_agc():
    compare(nfnet_agc)


# (i) WeiChengTseng/Pytorch-PCGrad on MultiMNIST: a shared trunk with two heads, each task's gradients retrieved
# after its own backward (p.grad.clone() or zeros where None, has_grad masks), flattened by torch.cat, conflicting
# ones projected (g_i -= (g_i . g_j) g_j / ||g_j||^2 in a random.shuffle'd order, seeded alike on both sides), merged
# by the shared mask (mean) and written back by split views; optimizer.zero_grad(set_to_none=True) between tasks
def pcgrad(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class PCGrad():
        def __init__(self, optimizer, reduction='mean'):
            self._optim, self._reduction = optimizer, reduction

        @property
        def optimizer(self):
            return self._optim

        def zero_grad(self):
            return self._optim.zero_grad(set_to_none=True)

        def step(self):
            return self._optim.step()

        def pc_backward(self, objectives):
            grads, shapes, has_grads = self._pack_grad(objectives)
            pc_grad = self._project_conflicting(grads, has_grads)
            pc_grad = self._unflatten_grad(pc_grad, shapes[0])
            self._set_grad(pc_grad)
            return

        def _project_conflicting(self, grads, has_grads, shapes=None):
            shared = torch.stack(has_grads).prod(0).bool()
            pc_grad = copy.deepcopy(grads)
            for g_i in pc_grad:
                random.shuffle(grads)
                for g_j in grads:
                    g_i_g_j = torch.dot(g_i, g_j)
                    if g_i_g_j < 0:
                        g_i -= (g_i_g_j) * g_j / (g_j.norm() ** 2)
            merged_grad = torch.zeros_like(grads[0]).to(grads[0].device)
            if self._reduction:
                merged_grad[shared] = torch.stack([g[shared] for g in pc_grad]).mean(dim=0)
            merged_grad[~shared] = torch.stack([g[~shared] for g in pc_grad]).sum(dim=0)
            return merged_grad

        def _set_grad(self, grads):
            idx = 0
            for group in self._optim.param_groups:
                for p in group['params']:
                    p.grad = grads[idx]
                    idx += 1
            return

        def _pack_grad(self, objectives):
            grads, shapes, has_grads = [], [], []
            for obj in objectives:
                self._optim.zero_grad(set_to_none=True)
                obj.backward(retain_graph=True)
                grad, shape, has_grad = self._retrieve_grad()
                grads.append(self._flatten_grad(grad, shape))
                has_grads.append(self._flatten_grad(has_grad, shape))
                shapes.append(shape)
            return grads, shapes, has_grads

        def _unflatten_grad(self, grads, shapes):
            unflatten_grad, idx = [], 0
            for shape in shapes:
                length = np.prod(shape)
                unflatten_grad.append(grads[idx:idx + length].view(shape).clone())
                idx += length
            return unflatten_grad

        def _flatten_grad(self, grads, shapes):
            flatten_grad = torch.cat([g.flatten() for g in grads])
            return flatten_grad

        def _retrieve_grad(self):
            grad, shape, has_grad = [], [], []
            for group in self._optim.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        shape.append(p.shape)
                        grad.append(torch.zeros_like(p).to(p.device))
                        has_grad.append(torch.zeros_like(p).to(p.device))
                        continue
                    shape.append(p.grad.shape)
                    grad.append(p.grad.clone())
                    has_grad.append(torch.ones_like(p).to(p.device))
            return grad, shape, has_grad

    class MultiLeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                       nn.Linear(3 * 3 * 3, 8), nn.ReLU())
            self.left = nn.Linear(8, 10)
            self.right = nn.Linear(8, 10)

        def forward(self, x):
            h = self.trunk(x)
            return self.left(h), self.right(h)

    net = MultiLeNet()
    init = load(m, net, state)
    rng = np.random.default_rng(8)
    x = torch.tensor(normal(rng, 4, 1, 8, 8))
    y_l, y_r = torch.tensor(rng.integers(0, 10, 4)), torch.tensor(rng.integers(0, 10, 4))
    optimizer = PCGrad(torch.optim.Adam(net.parameters(), lr=1e-2))
    random.seed(0)
    losses = []
    for step in range(2):
        optimizer.zero_grad()
        out_l, out_r = net(x)
        loss1, loss2 = F.cross_entropy(out_l, y_l), F.cross_entropy(out_r, y_r)
        optimizer.pc_backward([loss1, loss2])
        optimizer.step()
        losses += [loss1.item(), loss2.item()]
    return init, losses + summary(net.parameters())


def test_pcgrad():
    compare(pcgrad)


# (j) Eric-mingjie/network-slimming on CIFAR (the sparsity subgradient m.weight.grad.data.add_(s * torch.sign(...)) on
# every BatchNorm2d, the global threshold from the sorted absolute BN weights, masks by .gt(thre).float(), channels
# kept by np.argwhere(np.asarray(mask.cpu().numpy())), and the pruned model's weights copied by index slices);
# then rahulvigneswaran's lottery ticket (magnitude masks by np.percentile of the nonzero weights, grads masked in
# place by np.where on the host, the original init restored by mask * initial state, a second round)
def slimming_lottery(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class VGGish(nn.Module):
        def __init__(self, cfg=(4, 'M', 6)):
            super().__init__()
            layers, in_channels = [], 3
            for v in cfg:
                if v == 'M':
                    layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
                else:
                    layers += [nn.Conv2d(in_channels, v, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(v),
                               nn.ReLU(inplace=True)]
                    in_channels = v
            self.feature = nn.Sequential(*layers)
            self.classifier = nn.Linear(cfg[-1], 10)
            for mm in self.modules():
                if isinstance(mm, nn.BatchNorm2d):
                    mm.weight.data.fill_(0.5)
                    mm.bias.data.zero_()

        def forward(self, x):
            x = self.feature(x)
            x = nn.AvgPool2d(2)(x)
            x = x.view(x.size(0), -1)
            return self.classifier(x)

    def updateBN(model, s=1e-2):
        for mm in model.modules():
            if isinstance(mm, nn.BatchNorm2d):
                mm.weight.grad.data.add_(s * torch.sign(mm.weight.data))

    model = VGGish()
    init = load(m, model, state)
    rng = np.random.default_rng(9)
    x, y = torch.tensor(normal(rng, 4, 3, 4, 4)), torch.tensor(rng.integers(0, 10, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    losses = []
    for step in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        updateBN(model)
        optimizer.step()
        losses.append(loss.item())
    # prune: a global threshold on |gamma|
    total = sum(mm.weight.data.shape[0] for mm in model.modules() if isinstance(mm, nn.BatchNorm2d))
    bn = torch.zeros(total)
    index = 0
    for mm in model.modules():
        if isinstance(mm, nn.BatchNorm2d):
            size = mm.weight.data.shape[0]
            bn[index:(index + size)] = mm.weight.data.abs().clone()
            index += size
    y_sorted, i = torch.sort(bn)
    thre_index = int(total * 0.4)
    thre = y_sorted[thre_index]
    cfg, cfg_mask = [], []
    for k, mm in enumerate(model.modules()):
        if isinstance(mm, nn.BatchNorm2d):
            weight_copy = mm.weight.data.abs().clone()
            mask = weight_copy.gt(thre).float()
            cfg.append(int(torch.sum(mask)))
            cfg_mask.append(mask.clone())
        elif isinstance(mm, nn.MaxPool2d):
            cfg.append('M')
    newmodel = VGGish(cfg=tuple(cfg))
    layer_id_in_cfg, start_mask, end_mask = 0, torch.ones(3), cfg_mask[0]
    for m0, m1 in zip(model.modules(), newmodel.modules()):
        if isinstance(m0, nn.BatchNorm2d):
            idx1 = np.squeeze(np.argwhere(np.asarray(end_mask.cpu().numpy())))
            if idx1.size == 1:
                idx1 = np.resize(idx1, (1,))
            m1.weight.data = m0.weight.data[idx1.tolist()].clone()
            m1.bias.data = m0.bias.data[idx1.tolist()].clone()
            m1.running_mean = m0.running_mean[idx1.tolist()].clone()
            m1.running_var = m0.running_var[idx1.tolist()].clone()
            layer_id_in_cfg += 1
            start_mask = end_mask.clone()
            if layer_id_in_cfg < len(cfg_mask):
                end_mask = cfg_mask[layer_id_in_cfg]
        elif isinstance(m0, nn.Conv2d):
            idx0 = np.squeeze(np.argwhere(np.asarray(start_mask.cpu().numpy())))
            idx1 = np.squeeze(np.argwhere(np.asarray(end_mask.cpu().numpy())))
            if idx0.size == 1:
                idx0 = np.resize(idx0, (1,))
            if idx1.size == 1:
                idx1 = np.resize(idx1, (1,))
            w1 = m0.weight.data[:, idx0.tolist(), :, :].clone()
            w1 = w1[idx1.tolist(), :, :, :].clone()
            m1.weight.data = w1.clone()
        elif isinstance(m0, nn.Linear):
            idx0 = np.squeeze(np.argwhere(np.asarray(start_mask.cpu().numpy())))
            if idx0.size == 1:
                idx0 = np.resize(idx0, (1,))
            m1.weight.data = m0.weight.data[:, idx0].clone()
            m1.bias.data = m0.bias.data.clone()
    model.eval()
    newmodel.eval()
    with torch.no_grad():
        losses += cfg[:1] + cfg[2:] + [model(x).sum().item(), newmodel(x).sum().item()]

    # lottery ticket: prune 20% of each conv/linear weight by magnitude, rewind to the init, retrain
    net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    rng2 = np.random.default_rng(10)
    net.load_state_dict({k: torch.tensor(normal(rng2, *v.shape) * 0.3) for k, v in net.state_dict().items()})
    xs, ys = torch.tensor(normal(rng2, 6, 6)), torch.tensor(rng2.integers(0, 3, 6))
    initial_state_dict = copy.deepcopy(net.state_dict())
    mask = [np.ones_like(p.data.cpu().numpy()) for name, p in net.named_parameters() if 'weight' in name]
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _round in range(2):
        for step in range(2):
            opt.zero_grad()
            loss = F.cross_entropy(net(xs), ys)
            loss.backward()
            k = 0
            for name, p in net.named_parameters():
                if 'weight' in name:
                    tensor = p.data.cpu().numpy()
                    grad_tensor = p.grad.data.cpu().numpy()
                    grad_tensor = np.where(tensor == 0, 0, grad_tensor)
                    p.grad.data = torch.from_numpy(grad_tensor).to(p.device)
                    k += 1
            opt.step()
            losses.append(loss.item())
        step = 0
        for name, param in net.named_parameters():
            if 'weight' in name:
                tensor = param.data.cpu().numpy()
                alive = tensor[np.nonzero(tensor)]
                percentile_value = np.percentile(abs(alive), 20)
                new_mask = np.where(abs(tensor) < percentile_value, 0, mask[step])
                param.data = torch.from_numpy(tensor * new_mask).to(param.device)
                mask[step] = new_mask
                step += 1
        step = 0
        for name, param in net.named_parameters():
            if "weight" in name:
                param.data = torch.from_numpy(mask[step] * initial_state_dict[name].cpu().numpy()).to(param.device)
                step = step + 1
            if "bias" in name:
                param.data = initial_state_dict[name]
        losses.append(float(sum(mk.sum() for mk in mask)))
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    return init, losses + summary(model.parameters()) + summary(net.parameters())


def test_slimming_lottery():
    compare(slimming_lottery)


# (k) kaidic/LDAM-DRW on long-tailed CIFAR: the imbalanced class counts by an exponential profile, LDAM's margins
# m_list = 1 / n^(1/4) rescaled to max_m, the one-hot index by torch.zeros_like(x, dtype=torch.uint8).scatter_ and
# .type(torch.FloatTensor), batch margins by torch.matmul(m_list[None, :], index_float.transpose(0, 1)),
# torch.where of a bool index, s=30 logits, and DRW's class-balanced weights from the effective number
# (1 - beta^n) / (1 - beta) passed as F.cross_entropy(weight=) after a milestone; then a focal loss with a per-class
# alpha by gather and label smoothing CE with class weights
def ldam_drw(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def get_img_num_per_cls(cls_num, img_max, imb_factor):
        img_num_per_cls = []
        for cls_idx in range(cls_num):
            num = img_max * (imb_factor ** (cls_idx / (cls_num - 1.0)))
            img_num_per_cls.append(int(num))
        return img_num_per_cls

    class LDAMLoss(nn.Module):
        def __init__(self, cls_num_list, max_m=0.5, weight=None, s=30):
            super(LDAMLoss, self).__init__()
            m_list = 1.0 / np.sqrt(np.sqrt(cls_num_list))
            m_list = m_list * (max_m / np.max(m_list))
            m_list = torch.FloatTensor(m_list)
            self.m_list = m_list
            assert s > 0
            self.s = s
            self.weight = weight

        def forward(self, x, target):
            index = torch.zeros_like(x, dtype=torch.uint8)
            index.scatter_(1, target.data.view(-1, 1), 1)
            index_float = index.type(torch.FloatTensor)
            batch_m = torch.matmul(self.m_list[None, :], index_float.transpose(0, 1))
            batch_m = batch_m.view((-1, 1))
            x_m = x - batch_m
            output = torch.where(index.bool(), x_m, x)
            return F.cross_entropy(self.s * output, target, weight=self.weight)

    class FocalLoss(nn.Module):
        def __init__(self, alpha=None, gamma=2.0):
            super().__init__()
            self.alpha, self.gamma = alpha, gamma

        def forward(self, input, target):
            logpt = F.log_softmax(input, dim=1).gather(1, target.view(-1, 1)).view(-1)
            pt = logpt.exp()
            if self.alpha is not None:
                logpt = logpt * self.alpha.gather(0, target.view(-1))
            return (-1 * (1 - pt) ** self.gamma * logpt).mean()

    class NormedLinear(nn.Module):
        def __init__(self, in_features, out_features):
            super(NormedLinear, self).__init__()
            self.weight = nn.Parameter(torch.Tensor(in_features, out_features))
            self.weight.data.uniform_(-1, 1).renorm_(2, 1, 1e-5).mul_(1e5)

        def forward(self, x):
            return F.normalize(x, dim=1).mm(F.normalize(self.weight, dim=0))

    cls_num_list = get_img_num_per_cls(4, 50, 0.1)
    model = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), NormedLinear(6, 4))
    init = load(m, model, state)
    rng = np.random.default_rng(11)
    x, y = torch.tensor(normal(rng, 8, 5)), torch.tensor(rng.integers(0, 4, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=2e-4)
    losses = []
    for epoch in range(3):
        idx = epoch // 2
        betas = [0, 0.9999]
        effective_num = 1.0 - np.power(betas[idx], cls_num_list)
        per_cls_weights = (1.0 - betas[idx]) / np.array(effective_num)
        per_cls_weights = per_cls_weights / np.sum(per_cls_weights) * len(cls_num_list)
        per_cls_weights = torch.FloatTensor(per_cls_weights)
        criterion = LDAMLoss(cls_num_list=cls_num_list, max_m=0.5, s=30, weight=per_cls_weights)
        optimizer.zero_grad()
        output = model(x)
        loss = criterion(output, y)
        focal = FocalLoss(alpha=torch.tensor([0.25, 0.5, 0.75, 1.0]))(output * 5, y)
        smooth = F.cross_entropy(output * 5, y, weight=per_cls_weights, label_smoothing=0.1)
        (loss + focal + smooth).backward()
        optimizer.step()
        losses += [loss.item(), focal.item(), smooth.item()]
    return init, losses + cls_num_list + summary(model.parameters())


def test_ldam_drw():
    compare(ldam_drw)


# (l) torchvision's tensor transforms copied into a script that has no torchvision: to_tensor from a numpy HWC uint8
# image (torch.from_numpy(pic.transpose((2, 0, 1))).contiguous(), then isinstance(img, torch.ByteTensor) before
# .to(dtype=torch.get_default_dtype()).div(255)), normalize by torch.as_tensor(mean, dtype=..., device=...) with
# mean.ndim == 1 views and tensor.sub_(mean).div_(std), RandomCrop by F.pad and slicing, hflip by tensor.flip(-1),
# Compose; a CIFAR-style Dataset over uint8 arrays, seed_worker by torch.initial_seed() % 2**32, a DataLoader with a
# torch.Generator whose get_state is saved and restored to replay the same order; uint8 labels straight into
# F.cross_entropy; a model assembled by Sequential + and *
def tensor_transforms(m, state=None):
    torch, nn, F, data = m.torch, m.nn, m.F, m.data

    def to_tensor(pic):
        if not isinstance(pic, np.ndarray):
            raise TypeError(f"pic should be ndarray. Got {type(pic)}")
        default_float_dtype = torch.get_default_dtype()
        if pic.ndim == 2:
            pic = pic[:, :, None]
        img = torch.from_numpy(pic.transpose((2, 0, 1))).contiguous()
        if isinstance(img, torch.ByteTensor):
            return img.to(dtype=default_float_dtype).div(255)
        else:
            return img

    def normalize(tensor, mean, std, inplace=False):
        if not inplace:
            tensor = tensor.clone()
        dtype = tensor.dtype
        mean = torch.as_tensor(mean, dtype=dtype, device=tensor.device)
        std = torch.as_tensor(std, dtype=dtype, device=tensor.device)
        if (std == 0).any():
            raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to division by zero.")
        if mean.ndim == 1:
            mean = mean.view(-1, 1, 1)
        if std.ndim == 1:
            std = std.view(-1, 1, 1)
        return tensor.sub_(mean).div_(std)

    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, img):
            for t in self.transforms:
                img = t(img)
            return img

    class RandomCrop:
        def __init__(self, size, padding, rng):
            self.size, self.padding, self.rng = size, padding, rng

        def __call__(self, img):
            img = F.pad(img[None], (self.padding,) * 4, mode='reflect')[0]
            _, h, w = img.shape
            i = int(self.rng.integers(0, h - self.size + 1))
            j = int(self.rng.integers(0, w - self.size + 1))
            return img[..., i:i + self.size, j:j + self.size]

    class RandomHorizontalFlip:
        def __init__(self, rng, p=0.5):
            self.rng, self.p = rng, p

        def __call__(self, img):
            if self.rng.random() < self.p:
                return img.flip(-1)
            return img

    class CIFAR(data.Dataset):
        def __init__(self, images, targets, transform=None):
            self.data, self.targets, self.transform = images, list(targets), transform

        def __getitem__(self, index):
            img, target = self.data[index], self.targets[index]
            if self.transform is not None:
                img = self.transform(img)
            return img, target

        def __len__(self):
            return len(self.data)

    def seed_worker(worker_id):
        worker_seed = torch.initial_seed() % 2 ** 32
        np.random.seed(worker_seed)
        random.seed(worker_seed)

    rng = np.random.default_rng(12)
    images = rng.integers(0, 256, (6, 6, 6, 3), dtype=np.uint8)
    targets = rng.integers(0, 10, 6).astype(np.uint8)  # as np.frombuffer reads MNIST's idx labels
    aug = np.random.default_rng(13)
    transform = Compose([to_tensor, RandomCrop(6, 2, aug), RandomHorizontalFlip(aug),
                         lambda t: normalize(t, (0.49, 0.48, 0.45), (0.25, 0.24, 0.26))])
    dataset = CIFAR(images, targets, transform)
    first, _ = dataset[0]
    assert first.dtype == torch.float32 and float(first.abs().max()) < 3.0
    features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
    block = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
    model = features + block * 2 + head
    assert len(model) == 2 + 6 + 3 and model[2] is model[5]
    init = load(m, model, state)
    g = torch.Generator()
    g.manual_seed(0)
    loader = data.DataLoader(CIFAR(images, targets, Compose([to_tensor, lambda t: normalize(t, 0.5, 0.25)])),
                             batch_size=3, shuffle=True, num_workers=0, worker_init_fn=seed_worker, generator=g)
    saved = g.get_state()
    order = [y.tolist() for _, y in loader]
    g.set_state(saved)
    assert [y.tolist() for _, y in loader] == order
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    batch = torch.stack([dataset[i][0] for i in range(4)])
    labels = torch.as_tensor(np.asarray(dataset.targets[:4]))
    assert labels.dtype == torch.uint8
    for step in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(batch), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    plain = torch.stack([to_tensor(images[i]) for i in range(6)])
    losses += [batch.sum().item(), plain.sum().item(), sum(len(o) for o in order)]
    return init, losses + summary(model.parameters())


def test_tensor_transforms():
    compare(tensor_transforms)


# (m) unfold-based layers of CIFAR repos: leaderj1001's stand-alone self-attention (SASA: keys and values by
# F.pad then x.unfold(2, k, s).unfold(3, k, s), relative embeddings split by .split(out_channels // 2, dim=1),
# einsum of the local windows), d-li14's involution (kernels generated per pixel, nn.Unfold then view and sum over the
# window), MAE's patchify / unpatchify written as F.unfold and F.fold (and checked against the einsum
# reshapes), and YOLOv5's Focus (space-to-depth by strided slices) beside nn.PixelUnshuffle
def unfold_layers(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class AttentionConv(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, groups=1, bias=False):
            super(AttentionConv, self).__init__()
            self.out_channels = out_channels
            self.kernel_size = kernel_size
            self.stride = stride
            self.padding = padding
            self.groups = groups
            assert self.out_channels % self.groups == 0
            self.rel_h = nn.Parameter(torch.randn(out_channels // 2, 1, 1, kernel_size, 1), requires_grad=True)
            self.rel_w = nn.Parameter(torch.randn(out_channels // 2, 1, 1, 1, kernel_size), requires_grad=True)
            self.key_conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)
            self.query_conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)
            self.value_conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)
            self.reset_parameters()

        def forward(self, x):
            batch, channels, height, width = x.size()
            padded_x = F.pad(x, [self.padding, self.padding, self.padding, self.padding])
            q_out = self.query_conv(x)
            k_out = self.key_conv(padded_x)
            v_out = self.value_conv(padded_x)
            k_out = k_out.unfold(2, self.kernel_size, self.stride).unfold(3, self.kernel_size, self.stride)
            v_out = v_out.unfold(2, self.kernel_size, self.stride).unfold(3, self.kernel_size, self.stride)
            k_out_h, k_out_w = k_out.split(self.out_channels // 2, dim=1)
            k_out = torch.cat((k_out_h + self.rel_h, k_out_w + self.rel_w), dim=1)
            k_out = k_out.contiguous().view(batch, self.groups, self.out_channels // self.groups, height, width, -1)
            v_out = v_out.contiguous().view(batch, self.groups, self.out_channels // self.groups, height, width, -1)
            q_out = q_out.view(batch, self.groups, self.out_channels // self.groups, height, width, 1)
            out = q_out * k_out
            out = F.softmax(out, dim=-1)
            out = torch.einsum('bnchwk,bnchwk -> bnchw', out, v_out).view(batch, -1, height, width)
            return out

        def reset_parameters(self):
            nn.init.kaiming_normal_(self.key_conv.weight, mode='fan_out', nonlinearity='relu')
            nn.init.kaiming_normal_(self.value_conv.weight, mode='fan_out', nonlinearity='relu')
            nn.init.kaiming_normal_(self.query_conv.weight, mode='fan_out', nonlinearity='relu')
            nn.init.normal_(self.rel_h, 0, 1)
            nn.init.normal_(self.rel_w, 0, 1)

    class Involution(nn.Module):
        def __init__(self, channels, kernel_size, stride, group_channels=2, reduction_ratio=2):
            super(Involution, self).__init__()
            self.kernel_size, self.stride, self.channels = kernel_size, stride, channels
            self.group_channels = group_channels
            self.groups = self.channels // self.group_channels
            self.conv1 = nn.Sequential(nn.Conv2d(channels, channels // reduction_ratio, 1, bias=False),
                                       nn.BatchNorm2d(channels // reduction_ratio), nn.ReLU())
            self.conv2 = nn.Conv2d(channels // reduction_ratio, kernel_size ** 2 * self.groups, 1, 1)
            if stride > 1:
                self.avgpool = nn.AvgPool2d(stride, stride)
            self.unfold = nn.Unfold(kernel_size, 1, (kernel_size - 1) // 2, stride)

        def forward(self, x):
            weight = self.conv2(self.conv1(x if self.stride == 1 else self.avgpool(x)))
            b, c, h, w = weight.shape
            weight = weight.view(b, self.groups, self.kernel_size ** 2, h, w).unsqueeze(2)
            out = self.unfold(x).view(b, self.groups, self.group_channels, self.kernel_size ** 2, h, w)
            out = (weight * out).sum(dim=3).view(b, self.channels, h, w)
            return out

    class Focus(nn.Module):
        def __init__(self, c1, c2, k=1):
            super().__init__()
            self.conv = nn.Conv2d(c1 * 4, c2, k, 1, k // 2, bias=False)

        def forward(self, x):
            return self.conv(torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.focus = Focus(3, 4)
            self.sasa = AttentionConv(4, 4, kernel_size=3, padding=1, groups=2)
            self.inv = Involution(4, 3, 1)
            self.unshuffle = nn.PixelUnshuffle(2)
            self.fc = nn.Linear(16, 10)

        def forward(self, x):
            x = self.focus(x)
            x = F.relu(self.sasa(x))
            x = self.inv(x)
            x = self.unshuffle(x)
            return self.fc(x.mean((2, 3)))

    p = 2

    def patchify(imgs):
        h = w = imgs.shape[2] // p
        x = imgs.reshape(shape=(imgs.shape[0], 3, h, p, w, p))
        x = torch.einsum('nchpwq->nhwpqc', x)
        return x.reshape(shape=(imgs.shape[0], h * w, p ** 2 * 3))

    def unpatchify_fold(x, size):
        cols = x.view(x.shape[0], x.shape[1], p, p, 3).permute(0, 4, 2, 3, 1).reshape(x.shape[0], 3 * p * p, -1)
        return F.fold(cols, output_size=size, kernel_size=p, stride=p)

    model = Net()
    init = load(m, model, state)
    rng = np.random.default_rng(14)
    x, y = torch.tensor(normal(rng, 2, 3, 4, 4)), torch.tensor(rng.integers(0, 10, 2))
    focus_ref = model.focus.conv(F.pixel_unshuffle(x, 2).view(2, 3, 4, 2, 2).transpose(1, 2).reshape(2, 12, 2, 2))
    assert focus_ref.shape == model.focus(x).shape
    patches = patchify(x)
    cols = F.unfold(x, kernel_size=p, stride=p)
    assert (cols.view(2, 3, p, p, -1).permute(0, 4, 2, 3, 1).reshape(2, -1, p * p * 3) - patches).abs().max() < 1e-6
    assert (unpatchify_fold(patches, (4, 4)) - x).abs().max() < 1e-6
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05)
    losses = []
    for step in range(1):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y) + 0.1 * (unpatchify_fold(patches * 0.5, (4, 4)) - x).pow(2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    ones = F.fold(F.unfold(torch.ones(1, 1, 5, 5), 3, padding=1), (5, 5), 3, padding=1)
    losses.append(ones.sum().item())
    return init, losses + summary(model.parameters())


def test_unfold_layers():
    compare(unfold_layers)


# (n) Blundell's Bayes by Backprop on MNIST as nitarshan's notebook writes it: Gaussian(mu, rho) with sigma =
# torch.log1p(torch.exp(rho)) and the sample mu + sigma * epsilon (epsilon from a torch.distributions.Normal(0, 1)
# here drawn by numpy and fed in), a ScaleMixtureGaussian prior (two torch.distributions.Normal log_probs mixed by
# torch.log(pi * exp + (1 - pi) * exp)), BayesianLinear's log_prior and log_variational_posterior, the ELBO with
# F.nll_loss(reduction='sum') averaged over samples, plus logits_to_probs from torch.distributions.utils
def bayes_by_backprop(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    distributions = m.torch.distributions
    from_utils = m.torch.distributions.utils

    class Gaussian(object):
        def __init__(self, mu, rho):
            super().__init__()
            self.mu = mu
            self.rho = rho
            self.normal = distributions.Normal(0, 1)

        @property
        def sigma(self):
            return torch.log1p(torch.exp(self.rho))

        def sample(self, epsilon):
            return self.mu + self.sigma * epsilon

        def log_prob(self, input):
            return (-math.log(math.sqrt(2 * math.pi)) - torch.log(self.sigma)
                    - ((input - self.mu) ** 2) / (2 * self.sigma ** 2)).sum()

    class ScaleMixtureGaussian(object):
        def __init__(self, pi, sigma1, sigma2):
            super().__init__()
            self.pi = pi
            self.sigma1 = sigma1
            self.sigma2 = sigma2
            self.gaussian1 = distributions.Normal(0, sigma1)
            self.gaussian2 = distributions.Normal(0, sigma2)

        def log_prob(self, input):
            prob1 = torch.exp(self.gaussian1.log_prob(input))
            prob2 = torch.exp(self.gaussian2.log_prob(input))
            return (torch.log(self.pi * prob1 + (1 - self.pi) * prob2)).sum()

    PI = 0.5
    SIGMA_1 = torch.FloatTensor([math.exp(-0)])
    SIGMA_2 = torch.FloatTensor([math.exp(-6)])

    class BayesianLinear(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-0.2, 0.2))
            self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-5, -4))
            self.weight = Gaussian(self.weight_mu, self.weight_rho)
            self.bias_mu = nn.Parameter(torch.Tensor(out_features).uniform_(-0.2, 0.2))
            self.bias_rho = nn.Parameter(torch.Tensor(out_features).uniform_(-5, -4))
            self.bias = Gaussian(self.bias_mu, self.bias_rho)
            self.weight_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
            self.bias_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
            self.log_prior = 0
            self.log_variational_posterior = 0

        def forward(self, input, eps, sample=False, calculate_log_probs=False):
            if self.training or sample:
                weight = self.weight.sample(eps[0])
                bias = self.bias.sample(eps[1])
            else:
                weight = self.weight.mu
                bias = self.bias.mu
            if self.training or calculate_log_probs:
                self.log_prior = self.weight_prior.log_prob(weight) + self.bias_prior.log_prob(bias)
                self.log_variational_posterior = self.weight.log_prob(weight) + self.bias.log_prob(bias)
            else:
                self.log_prior, self.log_variational_posterior = 0, 0
            return F.linear(input, weight, bias)

    class BayesianNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = BayesianLinear(16, 8)
            self.l2 = BayesianLinear(8, 10)

        def forward(self, x, eps, sample=False):
            x = x.view(-1, 16)
            x = F.relu(self.l1(x, eps[0], sample))
            x = F.log_softmax(self.l2(x, eps[1], sample), dim=1)
            return x

        def log_prior(self):
            return self.l1.log_prior + self.l2.log_prior

        def log_variational_posterior(self):
            return self.l1.log_variational_posterior + self.l2.log_variational_posterior

        def sample_elbo(self, input, target, noises, num_batches=10):
            samples = len(noises)
            outputs = torch.zeros(samples, input.shape[0], 10)
            log_priors = torch.zeros(samples)
            log_variational_posteriors = torch.zeros(samples)
            for i in range(samples):
                outputs[i] = self(input, noises[i], sample=True)
                log_priors[i] = self.log_prior()
                log_variational_posteriors[i] = self.log_variational_posterior()
            log_prior = log_priors.mean()
            log_variational_posterior = log_variational_posteriors.mean()
            negative_log_likelihood = F.nll_loss(outputs.mean(0), target, reduction='sum')
            loss = (log_variational_posterior - log_prior) / num_batches + negative_log_likelihood
            return loss, log_prior, log_variational_posterior, negative_log_likelihood

    net = BayesianNetwork()
    init = load(m, net, state)
    rng = np.random.default_rng(15)
    x, y = torch.tensor(rng.random((4, 1, 4, 4)).astype(np.float32)), torch.tensor(rng.integers(0, 10, 4))

    def noise():
        return [(torch.tensor(normal(rng, 8, 16)), torch.tensor(normal(rng, 8))),
                (torch.tensor(normal(rng, 10, 8)), torch.tensor(normal(rng, 10)))]

    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    net.train()
    for step in range(1):
        net.zero_grad()
        loss, log_prior, log_variational_posterior, nll = net.sample_elbo(x, y, [noise()])
        loss.backward()
        optimizer.step()
        losses += [loss.item(), log_prior.item(), log_variational_posterior.item(), nll.item()]
    net.eval()
    with torch.no_grad():
        outputs = torch.stack([net(x, noise(), sample=True) for _ in range(1)])
        mean_probs = from_utils.logits_to_probs(outputs.mean(0))
        pred = net(x, noise()).argmax(1)
    losses += [mean_probs.sum().item(), pred.eq(y).sum().item()]
    return init, losses + summary(net.parameters())


def test_bayes_by_backprop():
    compare(bayes_by_backprop)


# (o) recurrent classifiers of sequential MNIST beside each other: Le et al.'s IRNN (nn.RNN(nonlinearity='relu') with
# nn.init.eye_ on weight_hh_l0 and zeroed biases, gradient clipping by clip_grad_norm_ with norm_type=2); an LSTM with
# proj_size (its h of the projected size, the last layer's output[:, -1, :]); a bidirectional GRU with an explicit h0 by
# torch.zeros(num_layers * 2, batch, hidden), its final states joined by torch.cat((h_n[-2], h_n[-1]), dim=1); rows of
# variable length through pack_padded_sequence(enforce_sorted=False) and pad_packed_sequence(total_length=)
def rnn_family(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rnn_utils = m.nn.utils.rnn

    class IRNN(nn.Module):
        def __init__(self, input_size, hidden_size, num_classes):
            super().__init__()
            self.rnn = nn.RNN(input_size, hidden_size, num_layers=1, nonlinearity='relu', batch_first=True)
            nn.init.eye_(self.rnn.weight_hh_l0)
            nn.init.normal_(self.rnn.weight_ih_l0, 0, 0.001)
            self.rnn.bias_ih_l0.data.zero_()
            self.rnn.bias_hh_l0.data.zero_()
            self.fc = nn.Linear(hidden_size, num_classes)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.fc(out[:, -1, :])

    class ProjLSTM(nn.Module):
        def __init__(self, input_size, hidden_size, proj_size, num_classes):
            super().__init__()
            self.lstm = nn.LSTM(input_size, hidden_size, num_layers=1, batch_first=True, proj_size=proj_size)
            self.fc = nn.Linear(proj_size, num_classes)

        def forward(self, x):
            out, (h_n, c_n) = self.lstm(x)
            assert h_n.shape[-1] == self.lstm.proj_size and c_n.shape[-1] == self.lstm.hidden_size
            return self.fc(out[:, -1, :])

    class BiGRU(nn.Module):
        def __init__(self, input_size, hidden_size, num_classes, num_layers=1):
            super().__init__()
            self.hidden_size, self.num_layers = hidden_size, num_layers
            self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(hidden_size * 2, num_classes)

        def forward(self, x, lengths):
            h0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(x.device)
            packed = rnn_utils.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, h_n = self.gru(packed, h0)
            out, out_lengths = rnn_utils.pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
            return self.fc(torch.cat((h_n[-2], h_n[-1]), dim=1)), out, out_lengths

    models = nn.ModuleDict({"irnn": IRNN(4, 6, 10), "lstm": ProjLSTM(4, 6, 3, 10), "gru": BiGRU(4, 5, 10)})
    init = load(m, models, state)
    rng = np.random.default_rng(16)
    images = torch.tensor(rng.random((3, 1, 4, 4)).astype(np.float32))
    labels = torch.tensor(rng.integers(0, 10, 3))
    x = images.view(-1, 4, 4)[:, :3]
    lengths = torch.tensor([3, 2, 3])
    optimizer = torch.optim.RMSprop(models.parameters(), lr=1e-3)
    losses = []
    for step in range(1):
        optimizer.zero_grad()
        logits_gru, out, out_lengths = models["gru"](x, lengths)
        loss = (F.cross_entropy(models["irnn"](x), labels) + F.cross_entropy(models["lstm"](x), labels)
                + F.cross_entropy(logits_gru, labels))
        loss.backward()
        norm = nn.utils.clip_grad_norm_(models.parameters(), max_norm=1.0, norm_type=2)
        optimizer.step()
        losses += [loss.item(), norm.item(), out.abs().sum().item()]
    losses += out_lengths.tolist() + [float(out[1, 2:].abs().sum())]
    return init, losses + summary(models.parameters())


def test_rnn_family():
    compare(rnn_family)


# (p) convolutions that build their weights per sample or per position: CondConv / dynamic convolution (routing by
# sigmoid or a temperature softmax of pooled features, the experts' weights mixed by torch.mm, the batch folded into
# groups: F.conv2d(x.view(1, -1, h, w), weight.view(b * out, in, k, k), groups=b)), CoordConv's AddCoords (torch.arange
# grids by repeat and transpose, scaled to [-1, 1], torch.cat of an r channel), and the octave convolution's high and
# low frequency paths (F.avg_pool2d and F.interpolate(scale_factor=2, mode='nearest'))
def dynamic_convs(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Attention2d(nn.Module):
        def __init__(self, in_planes, K, temperature):
            super().__init__()
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(in_planes, K + 1, 1)
            self.fc2 = nn.Conv2d(K + 1, K, 1)
            self.temperature = temperature

        def updata_temperature(self):
            if self.temperature != 1:
                self.temperature -= 3

        def forward(self, x):
            x = self.avgpool(x)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.fc2(x).view(x.size(0), -1)
            return F.softmax(x / self.temperature, 1)

    class Dynamic_conv2d(nn.Module):
        def __init__(self, in_planes, out_planes, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     K=3, temperature=34):
            super().__init__()
            assert in_planes % groups == 0
            self.in_planes, self.out_planes, self.kernel_size = in_planes, out_planes, kernel_size
            self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
            self.K = K
            self.attention = Attention2d(in_planes, K, temperature)
            self.weight = nn.Parameter(torch.randn(K, out_planes, in_planes // groups, kernel_size, kernel_size),
                                       requires_grad=True)
            self.bias = nn.Parameter(torch.zeros(K, out_planes)) if bias else None
            for i in range(self.K):
                nn.init.kaiming_uniform_(self.weight[i])

        def forward(self, x):
            softmax_attention = self.attention(x)
            batch_size, in_planes, height, width = x.size()
            x = x.view(1, -1, height, width)
            weight = self.weight.view(self.K, -1)
            aggregate_weight = torch.mm(softmax_attention, weight).view(
                batch_size * self.out_planes, self.in_planes // self.groups, self.kernel_size, self.kernel_size)
            if self.bias is not None:
                aggregate_bias = torch.mm(softmax_attention, self.bias).view(-1)
                output = F.conv2d(x, weight=aggregate_weight, bias=aggregate_bias, stride=self.stride,
                                  padding=self.padding, dilation=self.dilation, groups=self.groups * batch_size)
            else:
                output = F.conv2d(x, weight=aggregate_weight, bias=None, stride=self.stride, padding=self.padding,
                                  dilation=self.dilation, groups=self.groups * batch_size)
            return output.view(batch_size, self.out_planes, output.size(-2), output.size(-1))

    class AddCoords(nn.Module):
        def __init__(self, with_r=False):
            super().__init__()
            self.with_r = with_r

        def forward(self, input_tensor):
            batch_size, _, x_dim, y_dim = input_tensor.size()
            xx_channel = torch.arange(x_dim).repeat(1, y_dim, 1)
            yy_channel = torch.arange(y_dim).repeat(1, x_dim, 1).transpose(1, 2)
            xx_channel = xx_channel.float() / (x_dim - 1)
            yy_channel = yy_channel.float() / (y_dim - 1)
            xx_channel = xx_channel * 2 - 1
            yy_channel = yy_channel * 2 - 1
            xx_channel = xx_channel.repeat(batch_size, 1, 1, 1).transpose(2, 3)
            yy_channel = yy_channel.repeat(batch_size, 1, 1, 1).transpose(2, 3)
            ret = torch.cat([input_tensor, xx_channel.type_as(input_tensor), yy_channel.type_as(input_tensor)], dim=1)
            if self.with_r:
                rr = torch.sqrt(torch.pow(xx_channel.type_as(input_tensor) - 0.5, 2)
                                + torch.pow(yy_channel.type_as(input_tensor) - 0.5, 2))
                ret = torch.cat([ret, rr], dim=1)
            return ret

    class OctaveConv(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, alpha_in=0.5, alpha_out=0.5, padding=1):
            super().__init__()
            self.downsample = nn.AvgPool2d(kernel_size=(2, 2), stride=2)
            self.upsample = nn.Upsample(scale_factor=2, mode='nearest')
            lin, lout = int(alpha_in * in_channels), int(alpha_out * out_channels)
            hin, hout = in_channels - lin, out_channels - lout
            self.conv_l2l = nn.Conv2d(lin, lout, kernel_size, 1, padding, bias=False)
            self.conv_l2h = nn.Conv2d(lin, hout, kernel_size, 1, padding, bias=False)
            self.conv_h2l = nn.Conv2d(hin, lout, kernel_size, 1, padding, bias=False)
            self.conv_h2h = nn.Conv2d(hin, hout, kernel_size, 1, padding, bias=False)

        def forward(self, x):
            x_h, x_l = x if type(x) is tuple else (x, None)
            x_h2h = self.conv_h2h(x_h)
            x_h2l = self.conv_h2l(self.downsample(x_h))
            x_l2h = self.upsample(self.conv_l2h(x_l))
            x_l2l = self.conv_l2l(x_l)
            return x_l2h + x_h2h, x_h2l + x_l2l

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.coords = AddCoords(with_r=True)
            self.dyn = Dynamic_conv2d(3 + 3, 4, 3, padding=1, K=3, temperature=4)
            self.oct = OctaveConv(4, 4, 3)
            self.fc = nn.Linear(4, 10)

        def forward(self, x):
            x = F.relu(self.dyn(self.coords(x)))
            x_h, x_l = x[:, :2], F.avg_pool2d(x[:, 2:], 2)
            y_h, y_l = self.oct((x_h, x_l))
            y = torch.cat([y_h, F.interpolate(y_l, scale_factor=2, mode='nearest')], dim=1)
            return self.fc(y.mean((2, 3)))

    model = Net()
    init = load(m, model, state)
    rng = np.random.default_rng(17)
    x, y = torch.tensor(normal(rng, 2, 3, 4, 4)), torch.tensor(rng.integers(0, 10, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        model.dyn.attention.updata_temperature()
        losses += [loss.item(), model.dyn.attention.temperature]
    return init, losses + summary(model.parameters())


def test_dynamic_convs():
    compare(dynamic_convs)


# (q) the classic MNIST losses and activations beside each other: a self-normalizing network (SELU, AlphaDropout,
# LeCun normal init by kaiming_normal_(mode='fan_in', nonlinearity='linear')), a multi-class SVM head trained by
# nn.MultiMarginLoss(p=2, margin=1), AlexNet's LocalResponseNorm, a heteroscedastic regression head by
# nn.GaussianNLLLoss (softplus variance), a siamese pair under HingeEmbeddingLoss of pairwise distances and
# TripletMarginWithDistanceLoss with a cosine distance, and CIFAR's ZCA whitening (the covariance's torch.linalg.svd,
# U diag(1 / sqrt(S + eps)) U^T) computed once and applied by F.linear
def classic_losses(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class SNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 4, 3), nn.LocalResponseNorm(size=3, alpha=1e-4, beta=0.75, k=2.0),
                                          nn.SELU(), nn.Flatten())
            self.body = nn.Sequential(nn.Linear(4 * 4 * 4, 8), nn.SELU(), nn.AlphaDropout(p=0.1), nn.Linear(8, 8), nn.SELU())
            self.svm = nn.Linear(8, 10)
            self.reg = nn.Linear(8, 2)
            for mod in self.body.modules():
                if isinstance(mod, nn.Linear):
                    nn.init.kaiming_normal_(mod.weight, mode='fan_in', nonlinearity='linear')
                    nn.init.zeros_(mod.bias)

        def forward(self, x):
            h = self.body(self.features(x))
            mean, raw_var = self.reg(h).chunk(2, dim=1)
            return self.svm(h), h, mean.squeeze(1), F.softplus(raw_var).squeeze(1) + 1e-6

    model = SNN()
    init = load(m, model, state)
    rng = np.random.default_rng(18)
    x = torch.tensor(rng.random((4, 1, 6, 6)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 10, 4))
    target = torch.tensor(normal(rng, 4))
    flat = x.view(4, -1)
    flat = flat - flat.mean(dim=0)
    cov = flat.t() @ flat / (flat.size(0) - 1)
    U, S, V = torch.linalg.svd(cov)
    zca = U @ torch.diag(1.0 / torch.sqrt(S + 0.1)) @ U.t()
    whitened = F.linear(flat, zca).view_as(x)
    svm_loss = nn.MultiMarginLoss(p=2, margin=1.0)
    gnll = nn.GaussianNLLLoss(full=True)
    hinge = nn.HingeEmbeddingLoss(margin=1.0)
    triplet = nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: 1.0 - F.cosine_similarity(a, b),
                                               margin=0.3)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = [whitened.sum().item(), float((whitened.view(4, -1) ** 2).sum())]
    model.eval()
    for step in range(1):
        optimizer.zero_grad()
        scores, emb, mean, var = model(whitened)
        same = (y[:2] == y[2:]).float() * 2 - 1
        dist = F.pairwise_distance(emb[:2], emb[2:])
        loss = (svm_loss(scores, y) + gnll(mean, target, var) + hinge(dist, same)
                + triplet(emb[0:1], emb[1:2], emb[2:3]))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_classic_losses():
    compare(classic_losses)


# (r) model surgery and debugging as fine-tuning scripts do it: swap every ReLU for SiLU by named_modules and
# get_submodule / set_submodule on dotted names, a new head by set_submodule, the backbone frozen by
# requires_grad_(False) and a param-group optimizer printed (print(model), print(optimizer): torch's repr), a
# full_backward_pre_hook scaling the head's output gradient, forward_pre_hook(with_kwargs=True), training under
# torch.autograd.detect_anomaly(), autograd.grad(allow_unused=True) for a gradient penalty on an unused input,
# torch.autograd.backward of two losses with grad_tensors, and a ParameterDict of per-class temperatures
def model_surgery(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(c)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(self.bn(self.conv(x))) + x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
            self.layer1 = nn.Sequential(Block(4), Block(4))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(4, 10)
            self.temps = nn.ParameterDict({"old": nn.Parameter(torch.ones(1)), "new": nn.Parameter(torch.ones(1) * 2)})

        def forward(self, x, task="new"):
            x = self.pool(self.layer1(self.stem(x))).flatten(1)
            return self.fc(x) / self.temps[task]

    model = Net()
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.ReLU):
            model.set_submodule(name, nn.SiLU(inplace=module.inplace))
    assert isinstance(model.get_submodule("layer1.1.act"), nn.SiLU)
    model.set_submodule("fc", nn.Linear(4, 5))
    init = load(m, model, state)
    model.stem.requires_grad_(False)
    head_params = [p for n, p in model.named_parameters() if n.startswith("fc") or n.startswith("temps")]
    body_params = [p for n, p in model.named_parameters() if n.startswith("layer1")]
    optimizer = torch.optim.SGD([{"params": body_params, "lr": 0.01}, {"params": head_params}], lr=0.1, momentum=0.9)
    # the repr of a device's tensors names it ("torch.cuda.FloatTensor ... (cuda:0)"): compare would read tnet's GPU
    # against torch's CPU
    # torch 2.13's norms name their bias= (2.11's, the GPU machine's, do not)
    text = repr(model).replace("torch.cuda.", "torch.").replace(" (cuda:0)", "").replace(" bias=True,", "")
    shapes = [float(len(text)), float(len(repr(optimizer))), float(text.count("SiLU"))]
    model.fc.register_full_backward_pre_hook(lambda module, grad_output: (grad_output[0] * 0.5,))
    calls = []

    def pre_hook(module, args, kwargs):
        calls.append(kwargs.get("task", "new"))
        return args, kwargs

    model.register_forward_pre_hook(pre_hook, with_kwargs=True)
    rng = np.random.default_rng(19)
    x, y = torch.tensor(normal(rng, 2, 3, 4, 4)), torch.tensor(rng.integers(0, 5, 2))
    extra = torch.tensor(normal(rng, 2), requires_grad=True)
    losses = []
    with torch.autograd.detect_anomaly():
        for step in range(1):
            optimizer.zero_grad()
            inputs = x.clone().requires_grad_(True)
            out_new = model(inputs, task="new")
            out_old = model(inputs, task="old")
            grad_x, grad_extra = torch.autograd.grad(out_new.sum(), [inputs, extra], create_graph=True,
                                                     allow_unused=True)
            assert grad_extra is None
            penalty = grad_x.pow(2).sum()
            loss_new = F.cross_entropy(out_new, y)
            loss_old = F.kl_div(F.log_softmax(out_old, 1), F.softmax(out_new.detach(), 1), reduction="batchmean")
            torch.autograd.backward([loss_new + 0.01 * penalty, loss_old], grad_tensors=[torch.tensor(1.0),
                                                                                         torch.tensor(0.5)])
            optimizer.step()
            losses += [loss_new.item(), loss_old.item(), penalty.item()]
    assert calls == ["new", "old"] and model.stem[0].weight.grad is None
    return init, losses + shapes + summary(model.parameters())


def test_model_surgery():
    compare(model_surgery)


# (s) ProGAN / StyleGAN2 discriminators on CIFAR as rosinality's stylegan2-pytorch and the ProGAN ports write them:
# EqualConv2d / EqualLinear (weights scaled by 1 / sqrt(fan_in) in forward, lr_mul), blocks downsampled by
# F.avg_pool2d, the minibatch standard deviation layer (group view, torch.sqrt(var(0, unbiased=False) + 1e-8),
# mean over [2, 3, 4], repeat and cat), the non-saturating loss by F.softplus, the R1 penalty on real images
# (autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True), grad.pow(2).reshape(n, -1).sum(1)
# .mean()) with lazy regularisation every other step (d_reg_ratio scaling Adam's lr and betas)
def stylegan_discriminator(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class EqualConv2d(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, stride=1, padding=0, bias=True):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(out_channel, in_channel, kernel_size, kernel_size))
            self.scale = 1 / math.sqrt(in_channel * kernel_size ** 2)
            self.stride = stride
            self.padding = padding
            self.bias = nn.Parameter(torch.zeros(out_channel)) if bias else None

        def forward(self, input):
            return F.conv2d(input, self.weight * self.scale, bias=self.bias, stride=self.stride, padding=self.padding)

    class EqualLinear(nn.Module):
        def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
            self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init)) if bias else None
            self.scale = (1 / math.sqrt(in_dim)) * lr_mul
            self.lr_mul = lr_mul

        def forward(self, input):
            return F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)

    class ResBlock(nn.Module):
        def __init__(self, in_channel, out_channel):
            super().__init__()
            self.conv1 = EqualConv2d(in_channel, in_channel, 3, padding=1)
            self.conv2 = EqualConv2d(in_channel, out_channel, 3, padding=1)
            self.skip = EqualConv2d(in_channel, out_channel, 1, bias=False)

        def forward(self, input):
            out = F.leaky_relu(self.conv1(input), 0.2) * math.sqrt(2)
            out = F.avg_pool2d(F.leaky_relu(self.conv2(out), 0.2) * math.sqrt(2), 2)
            skip = self.skip(F.avg_pool2d(input, 2))
            return (out + skip) / math.sqrt(2)

    class Discriminator(nn.Module):
        def __init__(self, channels=4):
            super().__init__()
            self.convs = nn.Sequential(ResBlock(3, channels))
            self.stddev_group = 2
            self.stddev_feat = 1
            self.final_conv = EqualConv2d(channels + 1, channels, 3, padding=1)
            self.final_linear = nn.Sequential(EqualLinear(channels * 2 * 2, channels), nn.LeakyReLU(0.2),
                                              EqualLinear(channels, 1))

        def forward(self, input):
            out = self.convs(input)
            batch, channel, height, width = out.shape
            group = min(batch, self.stddev_group)
            stddev = out.view(group, -1, self.stddev_feat, channel // self.stddev_feat, height, width)
            stddev = torch.sqrt(stddev.var(0, unbiased=False) + 1e-8)
            stddev = stddev.mean([2, 3, 4], keepdims=True).squeeze(2)
            stddev = stddev.repeat(group, 1, height, width)
            out = torch.cat([out, stddev], 1)
            out = F.leaky_relu(self.final_conv(out), 0.2)
            out = out.view(batch, -1)
            return self.final_linear(out)

    def d_logistic_loss(real_pred, fake_pred):
        real_loss = F.softplus(-real_pred)
        fake_loss = F.softplus(fake_pred)
        return real_loss.mean() + fake_loss.mean()

    def d_r1_loss(real_pred, real_img):
        grad_real, = torch.autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
        return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()

    discriminator = Discriminator()
    init = load(m, discriminator, state)
    d_reg_every = 2
    d_reg_ratio = d_reg_every / (d_reg_every + 1)
    d_optim = torch.optim.Adam(discriminator.parameters(), lr=2e-3 * d_reg_ratio,
                               betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio))
    rng = np.random.default_rng(20)
    real = torch.tensor(normal(rng, 4, 3, 4, 4))
    fake = torch.tensor(normal(rng, 4, 3, 4, 4))
    losses = []
    for i in range(1):
        d_loss = d_logistic_loss(discriminator(real), discriminator(fake))
        d_optim.zero_grad()
        d_loss.backward()
        d_optim.step()
        losses.append(d_loss.item())
        if i % d_reg_every == 0:
            real.requires_grad = True
            real_pred = discriminator(real)
            r1_loss = d_r1_loss(real_pred, real)
            d_optim.zero_grad()
            (10 / 2 * r1_loss * d_reg_every + 0 * real_pred[0]).backward()
            d_optim.step()
            real.requires_grad = False
            losses.append(r1_loss.item())
    return init, losses + summary(discriminator.parameters())


def test_stylegan_discriminator():
    compare(stylegan_discriminator)


# (t) restricted Boltzmann machines on binarised MNIST, two ways: odie2630463's RBM module (sample_from_p as
# F.relu(torch.sign(p - u)) with the uniforms u drawn by numpy and fed in, v_to_h / h_to_v by F.linear with
# W.t(), Gibbs steps, the free energy by v.mv(v_bias) and wx_b.exp().add(1).log().sum(1), trained by SGD on
# free_energy(v) - free_energy(v1) through autograd), and GabrielBianconi's contrastive divergence written out as
# tensor updates (positive and negative associations by torch.matmul(v.t(), h), momentum buffers updated in place,
# weight decay on the weights, reconstruction error by torch.sum((v - v_k) ** 2))
def rbm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class RBM(nn.Module):
        def __init__(self, n_vis=16, n_hin=6, k=1):
            super(RBM, self).__init__()
            self.W = nn.Parameter(torch.randn(n_hin, n_vis) * 1e-2)
            self.v_bias = nn.Parameter(torch.zeros(n_vis))
            self.h_bias = nn.Parameter(torch.zeros(n_hin))
            self.k = k

        def sample_from_p(self, p, u):
            return F.relu(torch.sign(p - u))

        def v_to_h(self, v, u):
            p_h = torch.sigmoid(F.linear(v, self.W, self.h_bias))
            sample_h = self.sample_from_p(p_h, u)
            return p_h, sample_h

        def h_to_v(self, h, u):
            p_v = torch.sigmoid(F.linear(h, self.W.t(), self.v_bias))
            sample_v = self.sample_from_p(p_v, u)
            return p_v, sample_v

        def forward(self, v, noise):
            pre_h1, h1 = self.v_to_h(v, noise[0])
            h_ = h1
            for i in range(self.k):
                pre_v_, v_ = self.h_to_v(h_, noise[2 * i + 1])
                pre_h_, h_ = self.v_to_h(v_, noise[2 * i + 2])
            return v, v_

        def free_energy(self, v):
            vbias_term = v.mv(self.v_bias)
            wx_b = F.linear(v, self.W, self.h_bias)
            hidden_term = wx_b.exp().add(1).log().sum(1)
            return (-hidden_term - vbias_term).mean()

    rbm_net = RBM()
    init = load(m, rbm_net, state)
    rng = np.random.default_rng(21)
    data = torch.tensor((rng.random((5, 16)) > 0.5).astype(np.float32))
    train_op = torch.optim.SGD(rbm_net.parameters(), 0.1)
    losses = []
    for epoch in range(1):
        noise = [torch.tensor(rng.random((5, n)).astype(np.float32)) for n in (6, 16, 6)]
        v, v1 = rbm_net(data.view(-1, 16), noise)
        loss = rbm_net.free_energy(v) - rbm_net.free_energy(v1)
        losses.append(loss.item())
        train_op.zero_grad()
        loss.backward()
        train_op.step()

    class CDRBM():
        def __init__(self, num_visible, num_hidden, k, learning_rate=1e-3, momentum_coefficient=0.5,
                     weight_decay=1e-4, use_cuda=False):
            self.num_visible, self.num_hidden, self.k = num_visible, num_hidden, k
            self.learning_rate, self.momentum_coefficient, self.weight_decay = learning_rate, momentum_coefficient, weight_decay
            self.weights = torch.tensor(normal(np.random.default_rng(22), num_visible, num_hidden)) * 0.1
            self.visible_bias = torch.ones(num_visible) * 0.5
            self.hidden_bias = torch.zeros(num_hidden)
            self.weights_momentum = torch.zeros(num_visible, num_hidden)
            self.visible_bias_momentum = torch.zeros(num_visible)
            self.hidden_bias_momentum = torch.zeros(num_hidden)

        def sample_hidden(self, visible_probabilities):
            return self._sigmoid(torch.matmul(visible_probabilities, self.weights) + self.hidden_bias)

        def sample_visible(self, hidden_probabilities):
            return self._sigmoid(torch.matmul(hidden_probabilities, self.weights.t()) + self.visible_bias)

        def contrastive_divergence(self, input_data, uniforms):
            positive_hidden_probabilities = self.sample_hidden(input_data)
            positive_hidden_activations = (positive_hidden_probabilities >= uniforms[0]).float()
            positive_associations = torch.matmul(input_data.t(), positive_hidden_activations)
            hidden_activations = positive_hidden_activations
            for step in range(self.k):
                visible_probabilities = self.sample_visible(hidden_activations)
                hidden_probabilities = self.sample_hidden(visible_probabilities)
                hidden_activations = (hidden_probabilities >= uniforms[step + 1]).float()
            negative_visible_probabilities = visible_probabilities
            negative_hidden_probabilities = hidden_probabilities
            negative_associations = torch.matmul(negative_visible_probabilities.t(), negative_hidden_probabilities)
            self.weights_momentum *= self.momentum_coefficient
            self.weights_momentum += (positive_associations - negative_associations)
            self.visible_bias_momentum *= self.momentum_coefficient
            self.visible_bias_momentum += torch.sum(input_data - negative_visible_probabilities, dim=0)
            self.hidden_bias_momentum *= self.momentum_coefficient
            self.hidden_bias_momentum += torch.sum(positive_hidden_probabilities - negative_hidden_probabilities, dim=0)
            batch_size = input_data.size(0)
            self.weights += self.weights_momentum * self.learning_rate / batch_size
            self.visible_bias += self.visible_bias_momentum * self.learning_rate / batch_size
            self.hidden_bias += self.hidden_bias_momentum * self.learning_rate / batch_size
            self.weights -= self.weights * self.weight_decay
            error = torch.sum((input_data - negative_visible_probabilities) ** 2)
            return error

        def _sigmoid(self, x):
            return 1 / (1 + torch.exp(-x))

    cd = CDRBM(16, 6, k=2, learning_rate=0.1)
    for epoch in range(1):
        uniforms = [torch.tensor(rng.random((5, 6)).astype(np.float32)) for _ in range(3)]
        losses.append(cd.contrastive_divergence(data, uniforms).item())
    losses += [cd.weights.sum().item(), cd.hidden_bias.sum().item(), cd.visible_bias_momentum.abs().sum().item()]
    return init, losses + summary(rbm_net.parameters())


def test_rbm():
    compare(rbm)
