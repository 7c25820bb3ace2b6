"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports
alone, as test_ported_scripts.py: DOCSTRING. Each runs in
tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed
into a few numbers, agree. Numpy draws what a script draws; shapes are tiny and runs take one or two steps. Each script
seeds torch first, as its source's main does, so that its initial weights do not hang on the tests run before it."""
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) torchvision's references/classification: train.py's train_one_epoch (autocast and a GradScaler enabled only with
# --amp, clip_grad_norm_ after scaler-less backward, the EMA updated every model_ema_steps and its n_averaged reset
# during warmup), utils.ExponentialMovingAverage (an AveragedModel subclass with use_buffers=True and an avg_fn closure),
# utils.set_weight_decay (norm_classes from torch.nn.modules.batchnorm._BatchNorm and instancenorm._InstanceNorm,
# custom_keys_weight_decay, named_parameters(recurse=False) under a recursive _add_params), the warmup by SequentialLR
# of LinearLR and CosineAnnealingLR with milestones=, CrossEntropyLoss(label_smoothing=), transforms.RandomMixup and
# RandomCutmix applied in a DataLoader's collate_fn through default_collate (F.one_hot(...).to(dtype=), batch.roll(1,
# 0), mul_ and add_ in place; numpy draws their lambdas and boxes), evaluate under torch.inference_mode with
# utils.accuracy's topk and the EMA model's eval
def torchvision_reference(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    from collections import defaultdict

    class ExponentialMovingAverage(torch.optim.swa_utils.AveragedModel):
        """Maintains moving averages of model parameters using an exponential decay.
        ``ema_avg = decay * avg_model_param + (1 - decay) * model_param``
        `torch.optim.swa_utils.AveragedModel <https://pytorch.org/docs/stable/optim.html#custom-averaging-strategies>`_
        is used to compute the EMA.
        """

        def __init__(self, model, decay, device="cpu"):
            def ema_avg(avg_model_param, model_param, num_averaged):
                return decay * avg_model_param + (1 - decay) * model_param

            super().__init__(model, device, ema_avg, use_buffers=True)

    def accuracy(output, target, topk=(1,)):
        """Computes the accuracy over the k top predictions for the specified values of k"""
        with torch.inference_mode():
            maxk = max(topk)
            batch_size = target.size(0)
            if target.ndim == 2:
                target = target.max(dim=1)[1]

            _, pred = output.topk(maxk, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target[None])

            res = []
            for k in topk:
                correct_k = correct[:k].flatten().sum(dtype=torch.float32)
                res.append(correct_k * (100.0 / batch_size))
            return res

    def set_weight_decay(model, weight_decay, norm_weight_decay=None, norm_classes=None,
                         custom_keys_weight_decay=None):
        if not norm_classes:
            norm_classes = [
                torch.nn.modules.batchnorm._BatchNorm,
                torch.nn.LayerNorm,
                torch.nn.GroupNorm,
                torch.nn.modules.instancenorm._InstanceNorm,
                torch.nn.LocalResponseNorm,
            ]
        norm_classes = tuple(norm_classes)

        params = {
            "other": [],
            "norm": [],
        }
        params_weight_decay = {
            "other": weight_decay,
            "norm": norm_weight_decay,
        }
        custom_keys = []
        if custom_keys_weight_decay is not None:
            for key, weight_decay in custom_keys_weight_decay:
                params[key] = []
                params_weight_decay[key] = weight_decay
                custom_keys.append(key)

        def _add_params(module, prefix=""):
            for name, p in module.named_parameters(recurse=False):
                if not p.requires_grad:
                    continue
                is_custom_key = False
                for key in custom_keys:
                    target_name = f"{prefix}.{name}" if prefix != "" and "." in key else name
                    if key == target_name:
                        params[key].append(p)
                        is_custom_key = True
                        break
                if not is_custom_key:
                    if norm_weight_decay is not None and isinstance(module, norm_classes):
                        params["norm"].append(p)
                    else:
                        params["other"].append(p)

            for child_name, child_module in module.named_children():
                child_prefix = f"{prefix}.{child_name}" if prefix != "" else child_name
                _add_params(child_module, prefix=child_prefix)

        _add_params(model)

        param_groups = []
        for key in params:
            if len(params[key]) > 0:
                param_groups.append({"params": params[key], "weight_decay": params_weight_decay[key]})
        return param_groups

    class RandomMixup(torch.nn.Module):
        """Randomly apply Mixup to the provided batch and targets."""

        def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False, lam=None):
            super().__init__()
            if num_classes < 1:
                raise ValueError(f"Please provide a valid positive value for the num_classes. Got num_classes={num_classes}")
            if alpha <= 0:
                raise ValueError("Alpha param can't be zero.")
            self.num_classes = num_classes
            self.p = p
            self.alpha = alpha
            self.inplace = inplace
            self.lam = lam  # numpy's draw, where torchvision takes torch._sample_dirichlet's

        def forward(self, batch, target):
            if batch.ndim != 4:
                raise ValueError(f"Batch ndim should be 4. Got {batch.ndim}")
            if target.ndim != 1:
                raise ValueError(f"Target ndim should be 1. Got {target.ndim}")
            if not batch.is_floating_point():
                raise TypeError(f"Batch dtype should be a float tensor. Got {batch.dtype}.")
            if target.dtype != torch.int64:
                raise TypeError(f"Target dtype should be torch.int64. Got {target.dtype}")

            if not self.inplace:
                batch = batch.clone()
                target = target.clone()

            if target.ndim == 1:
                target = torch.nn.functional.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)

            if torch.rand(1).item() >= self.p:
                return batch, target

            # It's faster to roll the batch by one instead of shuffling it to create image pairs
            batch_rolled = batch.roll(1, 0)
            target_rolled = target.roll(1, 0)

            lambda_param = float(self.lam)
            batch_rolled.mul_(1.0 - lambda_param)
            batch.mul_(lambda_param).add_(batch_rolled)

            target_rolled.mul_(1.0 - lambda_param)
            target.mul_(lambda_param).add_(target_rolled)

            return batch, target

    class RandomCutmix(torch.nn.Module):
        def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False, lam=None, r_xy=None):
            super().__init__()
            self.num_classes = num_classes
            self.p = p
            self.alpha = alpha
            self.inplace = inplace
            self.lam, self.r_xy = lam, r_xy  # numpy's draws, where torchvision takes torch's

        def forward(self, batch, target):
            if not self.inplace:
                batch = batch.clone()
                target = target.clone()

            if target.ndim == 1:
                target = torch.nn.functional.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)

            if torch.rand(1).item() >= self.p:
                return batch, target

            batch_rolled = batch.roll(1, 0)
            target_rolled = target.roll(1, 0)

            lambda_param = float(self.lam)
            _, H, W = batch.shape[-3:]

            r_x, r_y = torch.tensor(self.r_xy[0]), torch.tensor(self.r_xy[1])

            r = 0.5 * math.sqrt(1.0 - lambda_param)
            r_w_half = int(r * W)
            r_h_half = int(r * H)

            x1 = int(torch.clamp(r_x - r_w_half, min=0))
            y1 = int(torch.clamp(r_y - r_h_half, min=0))
            x2 = int(torch.clamp(r_x + r_w_half, max=W))
            y2 = int(torch.clamp(r_y + r_h_half, max=H))

            batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
            lambda_param = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))

            target_rolled.mul_(1.0 - lambda_param)
            target.mul_(lambda_param).add_(target_rolled)

            return batch, target

    class ImageSet(torch.utils.data.Dataset):
        def __init__(self, images, labels):
            self.images, self.labels = images, labels

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, idx):
            return torch.tensor(self.images[idx]), int(self.labels[idx])

    num_classes = 4
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6), nn.ReLU(inplace=True),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(6), nn.Linear(6, num_classes))
    init = load(m, model, state)
    model.class_token = nn.Parameter(torch.zeros(1))  # a custom key, as ViT's class_token
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    parameters = set_weight_decay(model, 1e-4, norm_weight_decay=0.0,
                                  custom_keys_weight_decay=[("class_token", 0.0)])
    assert [len(g["params"]) for g in parameters] == [3, 4, 1]
    optimizer = torch.optim.SGD(parameters, lr=0.5, momentum=0.9, weight_decay=1e-4, nesterov=True)
    scaler = torch.cuda.amp.GradScaler() if False else None
    epochs, lr_warmup_epochs = 4, 1
    main_lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs - lr_warmup_epochs,
                                                                   eta_min=0.0)
    warmup_lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01,
                                                            total_iters=lr_warmup_epochs)
    lr_scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warmup_lr_scheduler, main_lr_scheduler],
                                                         milestones=[lr_warmup_epochs])
    adjust = 1 * 4 * 1 / epochs
    alpha = 1.0 - 0.9
    alpha = min(1.0, alpha * adjust)
    model_ema = ExponentialMovingAverage(model, device="cpu", decay=1.0 - alpha)

    images, labels = normal(rng, 8, 3, 6, 6), rng.integers(0, num_classes, 8)
    mixup = RandomMixup(num_classes, p=1.0, alpha=0.2, lam=rng.beta(0.2, 0.2))
    cutmix = RandomCutmix(num_classes, p=1.0, alpha=1.0, lam=rng.beta(1.0, 1.0), r_xy=rng.integers(0, 6, 2).tolist())
    picks = iter([0, 1])

    def collate_fn(batch):
        return [mixup, cutmix][next(picks)](*torch.utils.data.dataloader.default_collate(batch))

    data_loader = torch.utils.data.DataLoader(ImageSet(images, labels), batch_size=4, shuffle=False,
                                              collate_fn=collate_fn)
    losses = []
    for epoch in range(2):
        model.train()
        metric = defaultdict(float)
        for i, (image, target) in enumerate(data_loader):
            with torch.cuda.amp.autocast(enabled=scaler is not None):
                output = model(image)
                loss = criterion(output, target)

            optimizer.zero_grad()
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()

            if i % 1 == 0:
                model_ema.update_parameters(model)
                if epoch < lr_warmup_epochs:
                    # Reset ema buffer to keep copying weights during warmup period
                    model_ema.n_averaged.fill_(0)

            acc1, acc2 = accuracy(output, target, topk=(1, 2))
            metric["loss"] += loss.item()
            metric["acc1"] += acc1.item()
            losses += [loss.item(), acc1.item(), acc2.item(), optimizer.param_groups[0]["lr"]]
        lr_scheduler.step()

    model_ema.eval()
    with torch.inference_mode():
        output = model_ema(torch.tensor(images))
        loss = nn.CrossEntropyLoss()(output, torch.tensor(labels))
    losses += [loss.item(), model_ema.n_averaged.item()]
    return init, losses + summary(model.parameters()) + summary(model_ema.module.buffers())


def test_torchvision_reference():
    compare(torchvision_reference)


# (b) caogang/wgan-gp's gan_toy.py: a ReLU MLP generator (FIXED_GENERATOR off) and critic, weights_init over apply
# by classname.find('Linear'), calc_gradient_penalty (alpha by rand(BATCH_SIZE, 1).expand(real_data.size()), numpy's
# draw here; autograd.Variable(interpolates, requires_grad=True); autograd.grad with grad_outputs=torch.ones(
# disc_interpolates.size()), create_graph=True, retain_graph=True, only_inputs=True; gradients.norm(2, dim=1)),
# CRITIC_ITERS steps with D_real.backward(mone) and D_fake.backward(one) (one = torch.tensor(1, dtype=torch.float), as
# today's forks spell it), p.requires_grad flipped around the generator's step, Adam(betas=(0.5, 0.9))
def wgan_gp_toy(m, state=None):
    torch, nn = m.torch, m.nn
    autograd = torch.autograd
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    DIM, LAMBDA, CRITIC_ITERS, BATCH_SIZE, FIXED_GENERATOR = 8, .1, 2, 6, False
    use_cuda = False

    class Generator(nn.Module):

        def __init__(self):
            super(Generator, self).__init__()

            main = nn.Sequential(
                nn.Linear(2, DIM),
                nn.ReLU(True),
                nn.Linear(DIM, DIM),
                nn.ReLU(True),
                nn.Linear(DIM, 2),
            )
            self.main = main

        def forward(self, noise, real_data):
            if FIXED_GENERATOR:
                return noise + real_data
            else:
                output = self.main(noise)
                return output

    class Discriminator(nn.Module):

        def __init__(self):
            super(Discriminator, self).__init__()

            main = nn.Sequential(
                nn.Linear(2, DIM),
                nn.ReLU(True),
                nn.Linear(DIM, DIM),
                nn.ReLU(True),
                nn.Linear(DIM, 1),
            )
            self.main = main

        def forward(self, inputs):
            output = self.main(inputs)
            return output.view(-1)

    def weights_init(m_):
        classname = m_.__class__.__name__
        if classname.find('Linear') != -1:
            m_.weight.data.normal_(0.0, 0.02)
            m_.bias.data.fill_(0)
        elif classname.find('BatchNorm') != -1:
            m_.weight.data.normal_(1.0, 0.02)
            m_.bias.data.fill_(0)

    def calc_gradient_penalty(netD, real_data, fake_data):
        alpha = torch.tensor(rng.random((BATCH_SIZE, 1)).astype(np.float32))
        alpha = alpha.expand(real_data.size())
        alpha = alpha.cuda() if use_cuda else alpha

        interpolates = alpha * real_data + ((1 - alpha) * fake_data)

        if use_cuda:
            interpolates = interpolates.cuda()
        interpolates = autograd.Variable(interpolates, requires_grad=True)

        disc_interpolates = netD(interpolates)

        gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                  grad_outputs=torch.ones(disc_interpolates.size()).cuda() if use_cuda else torch.ones(
                                      disc_interpolates.size()),
                                  create_graph=True, retain_graph=True, only_inputs=True)[0]

        gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA
        return gradient_penalty

    def inf_train_gen():
        scale = 2.
        centers = [(1, 0), (-1, 0), (0, 1), (0, -1)]
        centers = [(scale * x, scale * y) for x, y in centers]
        while True:
            dataset = []
            for i in range(BATCH_SIZE):
                point = rng.standard_normal(2) * .02
                center = centers[rng.integers(len(centers))]
                point[0] += center[0]
                point[1] += center[1]
                dataset.append(point)
            dataset = np.array(dataset, dtype='float32')
            dataset /= 1.414  # stdev
            yield dataset

    netG = Generator()
    netD = Discriminator()
    netD.apply(weights_init)
    netG.apply(weights_init)
    both = nn.ModuleList([netG, netD])
    init = load(m, both, state)

    optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-3, betas=(0.5, 0.9))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-3, betas=(0.5, 0.9))

    one = torch.tensor(1, dtype=torch.float)
    mone = one * -1
    data = inf_train_gen()
    losses = []
    for iteration in range(1):
        ############################
        # (1) Update D network
        ###########################
        for p in netD.parameters():  # reset requires_grad
            p.requires_grad = True  # they are set to False below in netG update

        for iter_d in range(CRITIC_ITERS):
            _data = next(data)
            real_data = torch.Tensor(_data)
            real_data_v = autograd.Variable(real_data)

            netD.zero_grad()

            # train with real
            D_real = netD(real_data_v)
            D_real = D_real.mean()
            D_real.backward(mone)

            # train with fake
            noise = torch.tensor(normal(rng, BATCH_SIZE, 2))
            noisev = autograd.Variable(noise, volatile=True)  # totally freeze netG
            fake = autograd.Variable(netG(noisev, real_data_v).data)
            inputv = fake
            D_fake = netD(inputv)
            D_fake = D_fake.mean()
            D_fake.backward(one)

            # train with gradient penalty
            gradient_penalty = calc_gradient_penalty(netD, real_data_v.data, fake.data)
            gradient_penalty.backward()

            D_cost = D_fake - D_real + gradient_penalty
            Wasserstein_D = D_real - D_fake
            optimizerD.step()
            losses += [D_cost.item(), Wasserstein_D.item(), gradient_penalty.item()]

        if not FIXED_GENERATOR:
            ############################
            # (2) Update G network
            ###########################
            for p in netD.parameters():
                p.requires_grad = False  # to avoid computation
            netG.zero_grad()

            _data = next(data)
            real_data = torch.Tensor(_data)
            real_data_v = autograd.Variable(real_data)

            noise = torch.tensor(normal(rng, BATCH_SIZE, 2))
            noisev = autograd.Variable(noise)
            fake = netG(noisev, real_data_v)
            G = netD(fake)
            G = G.mean()
            G.backward(mone)
            G_cost = -G
            optimizerG.step()
            losses.append(G_cost.item())
    assert all(p.grad is not None for p in netD.parameters())
    return init, losses + summary(both.parameters())


def test_wgan_gp_toy():
    compare(wgan_gp_toy)


# (c) yunjey/stargan's model.py and solver.py: ResidualBlock with InstanceNorm2d(affine=True,
# track_running_stats=True), the Generator's domain labels tiled by c.view(c.size(0), c.size(1), 1, 1).repeat(1, 1,
# x.size(2), x.size(3)) and cat'ed, ConvTranspose2d up-sampling and Tanh, the Discriminator's LeakyReLU(0.01) with its
# source and class heads (out_cls.view(out_cls.size(0), out_cls.size(1))); Solver's gradient_penalty (weight =
# torch.ones(y.size()), dydx.view(dydx.size(0), -1), sqrt of a sum of squares), label2onehot, classification_loss by
# binary_cross_entropy_with_logits(size_average=False) / size(0), x_hat by requires_grad_(True), reset_grad, the
# reconstruction's L1 by torch.mean(torch.abs()), n_critic, update_lr over param_groups; numpy draws the permutation
# of target labels and the interpolation weights
def stargan(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(2)
    rng = np.random.default_rng(2)

    class ResidualBlock(nn.Module):
        """Residual Block with instance normalization."""
        def __init__(self, dim_in, dim_out):
            super(ResidualBlock, self).__init__()
            self.main = nn.Sequential(
                nn.Conv2d(dim_in, dim_out, kernel_size=3, stride=1, padding=1, bias=False),
                nn.InstanceNorm2d(dim_out, affine=True, track_running_stats=True),
                nn.ReLU(inplace=True),
                nn.Conv2d(dim_out, dim_out, kernel_size=3, stride=1, padding=1, bias=False),
                nn.InstanceNorm2d(dim_out, affine=True, track_running_stats=True))

        def forward(self, x):
            return x + self.main(x)

    class Generator(nn.Module):
        """Generator network."""
        def __init__(self, conv_dim=64, c_dim=5, repeat_num=6):
            super(Generator, self).__init__()

            layers = []
            layers.append(nn.Conv2d(3+c_dim, conv_dim, kernel_size=7, stride=1, padding=3, bias=False))
            layers.append(nn.InstanceNorm2d(conv_dim, affine=True, track_running_stats=True))
            layers.append(nn.ReLU(inplace=True))

            # Down-sampling layers.
            curr_dim = conv_dim
            for i in range(1):
                layers.append(nn.Conv2d(curr_dim, curr_dim*2, kernel_size=4, stride=2, padding=1, bias=False))
                layers.append(nn.InstanceNorm2d(curr_dim*2, affine=True, track_running_stats=True))
                layers.append(nn.ReLU(inplace=True))
                curr_dim = curr_dim * 2

            # Bottleneck layers.
            for i in range(repeat_num):
                layers.append(ResidualBlock(dim_in=curr_dim, dim_out=curr_dim))

            # Up-sampling layers.
            for i in range(1):
                layers.append(nn.ConvTranspose2d(curr_dim, curr_dim//2, kernel_size=4, stride=2, padding=1, bias=False))
                layers.append(nn.InstanceNorm2d(curr_dim//2, affine=True, track_running_stats=True))
                layers.append(nn.ReLU(inplace=True))
                curr_dim = curr_dim // 2

            layers.append(nn.Conv2d(curr_dim, 3, kernel_size=7, stride=1, padding=3, bias=False))
            layers.append(nn.Tanh())
            self.main = nn.Sequential(*layers)

        def forward(self, x, c):
            # Replicate spatially and concatenate domain information.
            # Note that this type of label conditioning does not work at all if we use reflection padding in Conv2d.
            # This is because instance normalization ignores the shifting (or bias) effect.
            c = c.view(c.size(0), c.size(1), 1, 1)
            c = c.repeat(1, 1, x.size(2), x.size(3))
            x = torch.cat([x, c], dim=1)
            return self.main(x)

    class Discriminator(nn.Module):
        """Discriminator network with PatchGAN."""
        def __init__(self, image_size=128, conv_dim=64, c_dim=5, repeat_num=6):
            super(Discriminator, self).__init__()
            layers = []
            layers.append(nn.Conv2d(3, conv_dim, kernel_size=4, stride=2, padding=1))
            layers.append(nn.LeakyReLU(0.01))

            curr_dim = conv_dim
            for i in range(1, repeat_num):
                layers.append(nn.Conv2d(curr_dim, curr_dim*2, kernel_size=4, stride=2, padding=1))
                layers.append(nn.LeakyReLU(0.01))
                curr_dim = curr_dim * 2

            kernel_size = int(image_size / np.power(2, repeat_num))
            self.main = nn.Sequential(*layers)
            self.conv1 = nn.Conv2d(curr_dim, 1, kernel_size=3, stride=1, padding=1, bias=False)
            self.conv2 = nn.Conv2d(curr_dim, c_dim, kernel_size=kernel_size, bias=False)

        def forward(self, x):
            h = self.main(x)
            out_src = self.conv1(h)
            out_cls = self.conv2(h)
            return out_src, out_cls.view(out_cls.size(0), out_cls.size(1))

    c_dim, lambda_cls, lambda_rec, lambda_gp, n_critic = 3, 1, 10, 10, 1
    G = Generator(conv_dim=4, c_dim=c_dim, repeat_num=1)
    D = Discriminator(image_size=8, conv_dim=4, c_dim=c_dim, repeat_num=2)
    both = nn.ModuleList([G, D])
    init = load(m, both, state)
    g_lr = d_lr = 1e-3
    g_optimizer = torch.optim.Adam(G.parameters(), g_lr, [0.5, 0.999])
    d_optimizer = torch.optim.Adam(D.parameters(), d_lr, [0.5, 0.999])

    def update_lr(g_lr, d_lr):
        """Decay learning rates of the generator and discriminator."""
        for param_group in g_optimizer.param_groups:
            param_group['lr'] = g_lr
        for param_group in d_optimizer.param_groups:
            param_group['lr'] = d_lr

    def reset_grad():
        """Reset the gradient buffers."""
        g_optimizer.zero_grad()
        d_optimizer.zero_grad()

    def gradient_penalty(y, x):
        """Compute gradient penalty: (L2_norm(dy/dx) - 1)**2."""
        weight = torch.ones(y.size())
        dydx = torch.autograd.grad(outputs=y,
                                   inputs=x,
                                   grad_outputs=weight,
                                   retain_graph=True,
                                   create_graph=True,
                                   only_inputs=True)[0]

        dydx = dydx.view(dydx.size(0), -1)
        dydx_l2norm = torch.sqrt(torch.sum(dydx**2, dim=1))
        return torch.mean((dydx_l2norm-1)**2)

    def label2onehot(labels, dim):
        """Convert label indices to one-hot vectors."""
        batch_size = labels.size(0)
        out = torch.zeros(batch_size, dim)
        out[np.arange(batch_size), labels.long()] = 1
        return out

    def classification_loss(logit, target, dataset='CelebA'):
        """Compute binary or softmax cross entropy loss."""
        if dataset == 'CelebA':
            return F.binary_cross_entropy_with_logits(logit, target, size_average=False) / logit.size(0)
        elif dataset == 'RaFD':
            return F.cross_entropy(logit, target)

    x_real = torch.tensor(np.tanh(normal(rng, 4, 3, 8, 8)))
    label_org = torch.tensor(rng.integers(0, 2, (4, c_dim)).astype(np.float32))
    rand_idx = torch.tensor(rng.permutation(4))
    label_trg = label_org[rand_idx]
    c_org = label_org.clone()
    c_trg = label_trg.clone()
    assert label2onehot(torch.tensor([2, 0]), 3).tolist() == [[0, 0, 1], [1, 0, 0]]
    losses = []
    for i in range(1):
        # Compute loss with real images.
        out_src, out_cls = D(x_real)
        d_loss_real = - torch.mean(out_src)
        d_loss_cls = classification_loss(out_cls, label_org)

        # Compute loss with fake images.
        x_fake = G(x_real, c_trg)
        out_src, out_cls = D(x_fake.detach())
        d_loss_fake = torch.mean(out_src)

        # Compute loss for gradient penalty.
        alpha = torch.tensor(rng.random((x_real.size(0), 1, 1, 1)).astype(np.float32))
        x_hat = (alpha * x_real.data + (1 - alpha) * x_fake.data).requires_grad_(True)
        out_src, _ = D(x_hat)
        d_loss_gp = gradient_penalty(out_src, x_hat)

        # Backward and optimize.
        d_loss = d_loss_real + d_loss_fake + lambda_cls * d_loss_cls + lambda_gp * d_loss_gp
        reset_grad()
        d_loss.backward()
        d_optimizer.step()
        losses += [d_loss_real.item(), d_loss_fake.item(), d_loss_cls.item(), d_loss_gp.item()]

        if (i+1) % n_critic == 0:
            # Original-to-target domain.
            x_fake = G(x_real, c_trg)
            out_src, out_cls = D(x_fake)
            g_loss_fake = - torch.mean(out_src)
            g_loss_cls = classification_loss(out_cls, label_trg)

            # Target-to-original domain.
            x_reconst = G(x_fake, c_org)
            g_loss_rec = torch.mean(torch.abs(x_real - x_reconst))

            # Backward and optimize.
            g_loss = g_loss_fake + lambda_rec * g_loss_rec + lambda_cls * g_loss_cls
            reset_grad()
            g_loss.backward()
            g_optimizer.step()
            losses += [g_loss_fake.item(), g_loss_rec.item(), g_loss_cls.item()]
        g_lr -= (g_lr / float(10))
        d_lr -= (d_lr / float(10))
        update_lr(g_lr, d_lr)
    losses += [g_optimizer.param_groups[0]['lr']]
    return init, losses + summary(both.parameters()) + summary(both.buffers())


def test_stargan():
    compare(stargan)


# (d) cure-lab's LTSF-Linear (models/DLinear.py: moving_avg padding both ends by x[:, 0:1, :].repeat and AvgPool1d over
# permute(0, 2, 1), series_decomp, per-channel Linear layers in ModuleLists writing into torch.zeros([...],
# dtype=).to(device) by channel, NLinear's last-value subtraction by detach) with ts-kim's RevIN (affine parameters,
# statistics over dim2reduce = tuple(range(1, x.ndim - 1)) by torch.var(unbiased=False) kept as detached attributes,
# denormalisation by (affine_weight + eps * eps)); Time-Series-Library's exp_long_term_forecasting loop (a sliding-window
# Dataset with a StandardScaler in numpy, DataLoader(drop_last=True), the decoder input by zeros_like and cat,
# f_dim = -1 for 'MS', vali under no_grad with np.average, adjust_learning_rate's type1 halving)
def dlinear_revin(m, state=None):
    torch, nn = m.torch, m.nn
    from torch.utils.data import DataLoader, Dataset
    if m.torch.__name__ == "tnet":
        from tnet.utils.data import DataLoader, Dataset
    torch.manual_seed(3)
    rng = np.random.default_rng(3)

    class moving_avg(nn.Module):
        """
        Moving average block to highlight the trend of time series
        """
        def __init__(self, kernel_size, stride):
            super(moving_avg, self).__init__()
            self.kernel_size = kernel_size
            self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=0)

        def forward(self, x):
            # padding on the both ends of time series
            front = x[:, 0:1, :].repeat(1, (self.kernel_size - 1) // 2, 1)
            end = x[:, -1:, :].repeat(1, (self.kernel_size - 1) // 2, 1)
            x = torch.cat([front, x, end], dim=1)
            x = self.avg(x.permute(0, 2, 1))
            x = x.permute(0, 2, 1)
            return x

    class series_decomp(nn.Module):
        """
        Series decomposition block
        """
        def __init__(self, kernel_size):
            super(series_decomp, self).__init__()
            self.moving_avg = moving_avg(kernel_size, stride=1)

        def forward(self, x):
            moving_mean = self.moving_avg(x)
            res = x - moving_mean
            return res, moving_mean

    class RevIN(nn.Module):
        def __init__(self, num_features: int, eps=1e-5, affine=True):
            """
            :param num_features: the number of features or channels
            :param eps: a value added for numerical stability
            :param affine: if True, RevIN has learnable affine parameters
            """
            super(RevIN, self).__init__()
            self.num_features = num_features
            self.eps = eps
            self.affine = affine
            if self.affine:
                self._init_params()

        def forward(self, x, mode: str):
            if mode == 'norm':
                self._get_statistics(x)
                x = self._normalize(x)
            elif mode == 'denorm':
                x = self._denormalize(x)
            else:
                raise NotImplementedError
            return x

        def _init_params(self):
            # initialize RevIN params: (C,)
            self.affine_weight = nn.Parameter(torch.ones(self.num_features))
            self.affine_bias = nn.Parameter(torch.zeros(self.num_features))

        def _get_statistics(self, x):
            dim2reduce = tuple(range(1, x.ndim - 1))
            self.mean = torch.mean(x, dim=dim2reduce, keepdim=True).detach()
            self.stdev = torch.sqrt(torch.var(x, dim=dim2reduce, keepdim=True, unbiased=False) + self.eps).detach()

        def _normalize(self, x):
            x = x - self.mean
            x = x / self.stdev
            if self.affine:
                x = x * self.affine_weight
                x = x + self.affine_bias
            return x

        def _denormalize(self, x):
            if self.affine:
                x = x - self.affine_bias
                x = x / (self.affine_weight + self.eps * self.eps)
            x = x * self.stdev
            x = x + self.mean
            return x

    class Model(nn.Module):
        """
        Decomposition-Linear
        """
        def __init__(self, configs):
            super(Model, self).__init__()
            self.seq_len = configs.seq_len
            self.pred_len = configs.pred_len

            # Decompsition Kernel Size
            kernel_size = 5
            self.decompsition = series_decomp(kernel_size)
            self.individual = configs.individual
            self.channels = configs.enc_in
            self.revin = RevIN(configs.enc_in)

            if self.individual:
                self.Linear_Seasonal = nn.ModuleList()
                self.Linear_Trend = nn.ModuleList()

                for i in range(self.channels):
                    self.Linear_Seasonal.append(nn.Linear(self.seq_len, self.pred_len))
                    self.Linear_Trend.append(nn.Linear(self.seq_len, self.pred_len))
            else:
                self.Linear_Seasonal = nn.Linear(self.seq_len, self.pred_len)
                self.Linear_Trend = nn.Linear(self.seq_len, self.pred_len)
            self.NLinear = nn.Linear(self.seq_len, self.pred_len)

        def forward(self, x, x_mark_enc=None, x_dec=None, x_mark_dec=None):
            # x: [Batch, Input length, Channel]
            x = self.revin(x, 'norm')
            seasonal_init, trend_init = self.decompsition(x)
            seasonal_init, trend_init = seasonal_init.permute(0, 2, 1), trend_init.permute(0, 2, 1)
            if self.individual:
                seasonal_output = torch.zeros([seasonal_init.size(0), seasonal_init.size(1), self.pred_len],
                                              dtype=seasonal_init.dtype).to(seasonal_init.device)
                trend_output = torch.zeros([trend_init.size(0), trend_init.size(1), self.pred_len],
                                           dtype=trend_init.dtype).to(trend_init.device)
                for i in range(self.channels):
                    seasonal_output[:, i, :] = self.Linear_Seasonal[i](seasonal_init[:, i, :])
                    trend_output[:, i, :] = self.Linear_Trend[i](trend_init[:, i, :])
            else:
                seasonal_output = self.Linear_Seasonal(seasonal_init)
                trend_output = self.Linear_Trend(trend_init)

            x_d = (seasonal_output + trend_output).permute(0, 2, 1)
            # NLinear's normalisation by the last value, beside
            seq_last = x[:, -1:, :].detach()
            x_n = self.NLinear((x - seq_last).permute(0, 2, 1)).permute(0, 2, 1) + seq_last
            x = self.revin(0.5 * (x_d + x_n), 'denorm')
            return x  # to [Batch, Output length, Channel]

    class StandardScaler:
        def fit(self, data):
            self.mean, self.std = data.mean(0), data.std(0)

        def transform(self, data):
            return (data - self.mean) / self.std

    class Dataset_Custom(Dataset):
        def __init__(self, raw, size, flag='train'):
            self.seq_len, self.label_len, self.pred_len = size
            border1s = [0, 40 - self.seq_len]
            border2s = [40, 64]
            border1 = border1s[{'train': 0, 'val': 1}[flag]]
            border2 = border2s[{'train': 0, 'val': 1}[flag]]
            self.scaler = StandardScaler()
            self.scaler.fit(raw[border1s[0]:border2s[0]])
            data = self.scaler.transform(raw)
            self.data_x = data[border1:border2]
            self.data_y = data[border1:border2]

        def __getitem__(self, index):
            s_begin = index
            s_end = s_begin + self.seq_len
            r_begin = s_end - self.label_len
            r_end = r_begin + self.label_len + self.pred_len

            seq_x = self.data_x[s_begin:s_end]
            seq_y = self.data_y[r_begin:r_end]
            return seq_x, seq_y

        def __len__(self):
            return len(self.data_x) - self.seq_len - self.pred_len + 1

    class Configs:
        seq_len, label_len, pred_len, enc_in, individual, features = 12, 4, 4, 3, True, 'MS'
        learning_rate, batch_size = 0.01, 8

    args = Configs()
    model = Model(args)
    init = load(m, model, state)
    t = np.arange(64)[:, None]
    raw = (np.sin(t / 4 + np.arange(3)) + 0.05 * t + 0.1 * rng.standard_normal((64, 3))).astype(np.float32)
    train_loader = DataLoader(Dataset_Custom(raw, [12, 4, 4], 'train'), batch_size=args.batch_size, shuffle=False,
                              drop_last=True)
    vali_loader = DataLoader(Dataset_Custom(raw, [12, 4, 4], 'val'), batch_size=args.batch_size, shuffle=False,
                             drop_last=False)
    model_optim = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    criterion = nn.MSELoss()

    def adjust_learning_rate(optimizer, epoch, args):
        lr_adjust = {epoch: args.learning_rate * (0.5 ** ((epoch - 1) // 1))}
        if epoch in lr_adjust.keys():
            lr = lr_adjust[epoch]
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr

    def vali(vali_loader, criterion):
        total_loss = []
        model.eval()
        with torch.no_grad():
            for i, (batch_x, batch_y) in enumerate(vali_loader):
                batch_x = batch_x.float()
                batch_y = batch_y.float()
                dec_inp = torch.zeros_like(batch_y[:, -args.pred_len:, :]).float()
                dec_inp = torch.cat([batch_y[:, :args.label_len, :], dec_inp], dim=1).float()
                outputs = model(batch_x, None, dec_inp, None)
                f_dim = -1 if args.features == 'MS' else 0
                outputs = outputs[:, -args.pred_len:, f_dim:]
                batch_y = batch_y[:, -args.pred_len:, f_dim:]
                pred = outputs.detach().cpu()
                true = batch_y.detach().cpu()
                loss = criterion(pred, true)
                total_loss.append(loss)
        total_loss = np.average([v.item() for v in total_loss])
        model.train()
        return total_loss

    losses = []
    for epoch in range(2):
        train_loss = []
        model.train()
        for i, (batch_x, batch_y) in enumerate(train_loader):
            if i == 2:
                break
            model_optim.zero_grad()
            batch_x = batch_x.float()
            batch_y = batch_y.float()
            dec_inp = torch.zeros_like(batch_y[:, -args.pred_len:, :]).float()
            dec_inp = torch.cat([batch_y[:, :args.label_len, :], dec_inp], dim=1).float()
            outputs = model(batch_x, None, dec_inp, None)
            f_dim = -1 if args.features == 'MS' else 0
            outputs = outputs[:, -args.pred_len:, f_dim:]
            batch_y = batch_y[:, -args.pred_len:, f_dim:]
            loss = criterion(outputs, batch_y)
            train_loss.append(loss.item())
            loss.backward()
            model_optim.step()
        losses += [np.average(train_loss), vali(vali_loader, criterion)]
        adjust_learning_rate(model_optim, epoch + 1, args)
    return init, losses + summary(model.parameters())


def test_dlinear_revin():
    compare(dlinear_revin)


# (e) philipperemy's n-beats (nbeats_pytorch/model.py): NBeatsNet's `self.parameters = []` list of every block's
# parameters (blocks live in plain lists) turned into `self.parameters = nn.ParameterList(self.parameters)`, which
# nn.Module.__setattr__ moves out of the instance dict so that net.parameters() is the method again; TrendBlock's and
# SeasonalityBlock's bases from numpy (t ** i, cos and sin of 2 pi i t) by torch.tensor(...).float() and thetas.mm,
# share_thetas by one Linear under two names, squeeze_last_dim, the residual stacks (backcast - b, forecast + f), the
# example's train loop with F.mse_loss and a checkpoint of global_step and both state_dicts through torch.save/load
def nbeats(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import io
    torch.manual_seed(4)
    rng = np.random.default_rng(4)

    def squeeze_last_dim(tensor):
        if len(tensor.shape) == 3 and tensor.shape[-1] == 1:  # (128, 10, 1) => (128, 10).
            return tensor[..., 0]
        return tensor

    def seasonality_model(thetas, t, device):
        p = thetas.size()[-1]
        assert p <= thetas.shape[1], 'thetas_dim is too big.'
        p1, p2 = (p // 2, p // 2) if p % 2 == 0 else (p // 2, p // 2 + 1)
        s1 = torch.tensor(np.array([np.cos(2 * np.pi * i * t) for i in range(p1)])).float()  # H/2-1
        s2 = torch.tensor(np.array([np.sin(2 * np.pi * i * t) for i in range(p2)])).float()
        S = torch.cat([s1, s2])
        return thetas.mm(S.to(device))

    def trend_model(thetas, t, device):
        p = thetas.size()[-1]
        assert p <= 4, 'thetas_dim is too big.'
        T = torch.tensor(np.array([t ** i for i in range(p)])).float()
        return thetas.mm(T.to(device))

    def linear_space(backcast_length, forecast_length, is_forecast=True):
        horizon = forecast_length if is_forecast else backcast_length
        return np.arange(0, horizon) / horizon

    class Block(nn.Module):

        def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, share_thetas=False,
                     nb_harmonics=None):
            super(Block, self).__init__()
            self.units = units
            self.thetas_dim = thetas_dim
            self.backcast_length = backcast_length
            self.forecast_length = forecast_length
            self.share_thetas = share_thetas
            self.fc1 = nn.Linear(backcast_length, units)
            self.fc2 = nn.Linear(units, units)
            self.fc3 = nn.Linear(units, units)
            self.fc4 = nn.Linear(units, units)
            self.device = device
            self.backcast_linspace = linear_space(backcast_length, forecast_length, is_forecast=False)
            self.forecast_linspace = linear_space(backcast_length, forecast_length, is_forecast=True)
            if share_thetas:
                self.theta_f_fc = self.theta_b_fc = nn.Linear(units, thetas_dim, bias=False)
            else:
                self.theta_b_fc = nn.Linear(units, thetas_dim, bias=False)
                self.theta_f_fc = nn.Linear(units, thetas_dim, bias=False)

        def forward(self, x):
            x = squeeze_last_dim(x)
            x = F.relu(self.fc1(x.to(self.device)))
            x = F.relu(self.fc2(x))
            x = F.relu(self.fc3(x))
            x = F.relu(self.fc4(x))
            return x

        def __str__(self):
            block_type = type(self).__name__
            return f'{block_type}(units={self.units}, thetas_dim={self.thetas_dim}, ' \
                   f'backcast_length={self.backcast_length}, forecast_length={self.forecast_length}, ' \
                   f'share_thetas={self.share_thetas}) at @{id(self)}'

    class SeasonalityBlock(Block):

        def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, nb_harmonics=None):
            if nb_harmonics:
                super(SeasonalityBlock, self).__init__(units, nb_harmonics, device, backcast_length,
                                                       forecast_length, share_thetas=True)
            else:
                super(SeasonalityBlock, self).__init__(units, forecast_length, device, backcast_length,
                                                       forecast_length, share_thetas=True)

        def forward(self, x):
            x = super(SeasonalityBlock, self).forward(x)
            backcast = seasonality_model(self.theta_b_fc(x), self.backcast_linspace, self.device)
            forecast = seasonality_model(self.theta_f_fc(x), self.forecast_linspace, self.device)
            return backcast, forecast

    class TrendBlock(Block):

        def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, nb_harmonics=None):
            super(TrendBlock, self).__init__(units, thetas_dim, device, backcast_length,
                                             forecast_length, share_thetas=True)

        def forward(self, x):
            x = super(TrendBlock, self).forward(x)
            backcast = trend_model(self.theta_b_fc(x), self.backcast_linspace, self.device)
            forecast = trend_model(self.theta_f_fc(x), self.forecast_linspace, self.device)
            return backcast, forecast

    class GenericBlock(Block):

        def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, nb_harmonics=None):
            super(GenericBlock, self).__init__(units, thetas_dim, device, backcast_length, forecast_length)

            self.backcast_fc = nn.Linear(thetas_dim, backcast_length)
            self.forecast_fc = nn.Linear(thetas_dim, forecast_length)

        def forward(self, x):
            # no constraint for generic arch.
            x = super(GenericBlock, self).forward(x)

            theta_b = self.theta_b_fc(x)
            theta_f = self.theta_f_fc(x)

            backcast = self.backcast_fc(theta_b)  # generic. 3.3.
            forecast = self.forecast_fc(theta_f)  # generic. 3.3.

            return backcast, forecast

    class NBeatsNet(nn.Module):
        SEASONALITY_BLOCK = 'seasonality'
        TREND_BLOCK = 'trend'
        GENERIC_BLOCK = 'generic'

        def __init__(
                self,
                device=torch.device('cpu'),
                stack_types=(TREND_BLOCK, SEASONALITY_BLOCK),
                nb_blocks_per_stack=3,
                forecast_length=5,
                backcast_length=10,
                thetas_dim=(4, 8),
                share_weights_in_stack=False,
                hidden_layer_units=256,
                nb_harmonics=None
        ):
            super(NBeatsNet, self).__init__()
            self.forecast_length = forecast_length
            self.backcast_length = backcast_length
            self.hidden_layer_units = hidden_layer_units
            self.nb_blocks_per_stack = nb_blocks_per_stack
            self.share_weights_in_stack = share_weights_in_stack
            self.nb_harmonics = nb_harmonics
            self.stack_types = stack_types
            self.stacks = []
            self.thetas_dim = thetas_dim
            self.parameters = []
            self.device = device
            for stack_id in range(len(self.stack_types)):
                self.stacks.append(self.create_stack(stack_id))
            self.parameters = nn.ParameterList(self.parameters)
            self.to(self.device)
            self._loss = None
            self._opt = None
            self._gen_intermediate_outputs = False
            self._intermediary_outputs = []

        def create_stack(self, stack_id):
            stack_type = self.stack_types[stack_id]
            blocks = []
            for block_id in range(self.nb_blocks_per_stack):
                block_init = NBeatsNet.select_block(stack_type)
                if self.share_weights_in_stack and block_id != 0:
                    block = blocks[-1]  # pick up the last one when we share weights.
                else:
                    block = block_init(
                        self.hidden_layer_units, self.thetas_dim[stack_id],
                        self.device, self.backcast_length, self.forecast_length,
                        self.nb_harmonics
                    )
                    self.parameters.extend(block.parameters())
                blocks.append(block)
            return blocks

        @staticmethod
        def select_block(block_type):
            if block_type == NBeatsNet.SEASONALITY_BLOCK:
                return SeasonalityBlock
            elif block_type == NBeatsNet.TREND_BLOCK:
                return TrendBlock
            else:
                return GenericBlock

        def forward(self, backcast):
            self._intermediary_outputs = []
            backcast = squeeze_last_dim(backcast)
            forecast = torch.zeros(size=(backcast.size()[0], self.forecast_length,))  # maybe batch size here.
            for stack_id in range(len(self.stacks)):
                for block_id in range(len(self.stacks[stack_id])):
                    b, f = self.stacks[stack_id][block_id](backcast)
                    backcast = backcast.to(self.device) - b
                    forecast = forecast.to(self.device) + f
                    block_type = self.stacks[stack_id][block_id].__class__.__name__
                    layer_name = f'stack_{stack_id}-{block_type}_{block_id}'
                    if self._gen_intermediate_outputs:
                        self._intermediary_outputs.append({'value': f.detach().numpy(), 'layer': layer_name})
            return backcast, forecast

    device = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')
    forecast_length, backcast_length, batch_size = 4, 8, 6
    net = NBeatsNet(stack_types=(NBeatsNet.TREND_BLOCK, NBeatsNet.SEASONALITY_BLOCK, NBeatsNet.GENERIC_BLOCK),
                    forecast_length=forecast_length, backcast_length=backcast_length, thetas_dim=(3, 4, 5),
                    nb_blocks_per_stack=1, hidden_layer_units=8, share_weights_in_stack=True, device=device)
    assert not isinstance(net.parameters, nn.ParameterList)  # the method, not the submodule of its name
    assert len(list(net.parameters())) == 9 + 9 + 14  # a shared theta Linear counts once
    init = load(m, net, state)
    optimiser = torch.optim.Adam(lr=1e-2, params=net.parameters())

    series = np.sin(np.arange(40) / 3.0) + 0.1 * rng.standard_normal(40)
    x = np.stack([series[i:i + backcast_length] for i in range(batch_size)])
    y = np.stack([series[i + backcast_length:i + backcast_length + forecast_length] for i in range(batch_size)])
    data = [(x[:, :, None], y)]
    checkpoint = io.BytesIO()

    def save(model, optimiser, grad_step):
        checkpoint.seek(0)
        torch.save({
            'grad_step': grad_step,
            'model_state_dict': model.state_dict(),
            'optimizer_state_dict': optimiser.state_dict(),
        }, checkpoint)

    def load_checkpoint(model, optimiser):
        checkpoint.seek(0)
        checkpoint_dict = torch.load(checkpoint)
        grad_step = checkpoint_dict['grad_step']
        model.load_state_dict(checkpoint_dict['model_state_dict'])
        optimiser.load_state_dict(checkpoint_dict['optimizer_state_dict'])
        return grad_step

    losses = []
    global_step = 0
    for _ in range(2):
        for x_train_batch, y_train_batch in data:
            global_step += 1
            optimiser.zero_grad()
            net.train()
            _, forecast = net(torch.tensor(x_train_batch, dtype=torch.float).to(device))
            loss = F.mse_loss(forecast, torch.tensor(y_train_batch, dtype=torch.float).to(device))
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
        save(net, optimiser, global_step)
        global_step = load_checkpoint(net, optimiser)
    net.eval()
    backcast, forecast = net(torch.tensor(x, dtype=torch.float))
    losses += [global_step, backcast.abs().sum().item(), forecast.sum().item()]
    return init, losses + summary(net.parameters())


def test_nbeats():
    compare(nbeats)


# (f) pytorch-forecasting's temporal_fusion_transformer/sub_modules.py: TimeDistributedInterpolation (F.interpolate of
# x.unsqueeze(1) with mode="linear", align_corners=True over samples and timesteps squashed by contiguous().view),
# GatedLinearUnit (F.glu(x, dim=-1), init_weights by named_parameters with zeros_ and xavier_uniform_), AddNorm's and
# ResampleNorm's trainable gate (sigmoid of a zero mask times 2), GateAddNorm, GatedResidualNetwork (ELU, a context
# Linear without bias, kaiming_normal_(a=0, mode="fan_in", nonlinearity="leaky_relu")), VariableSelectionNetwork
# (prescalers and single-variable GRNs in ModuleDicts, properties input_size_total and num_inputs, softmax weights
# stacked over the variables); the model's LSTM encoder with a gated skip, QuantileLoss by torch.max of two tensors,
# Adam with gradient_clip_val by clip_grad_norm_. Three encoder variables: a LayerNorm over two variable weights gives
# +-1 whatever its input, and the gradients behind it are rounding alone, which Adam would normalise
def tft(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from typing import Dict
    torch.manual_seed(5)
    rng = np.random.default_rng(5)

    class TimeDistributedInterpolation(nn.Module):
        def __init__(self, output_size: int, batch_first: bool = False, trainable: bool = False):
            super().__init__()
            self.output_size = output_size
            self.batch_first = batch_first
            self.trainable = trainable
            if self.trainable:
                self.mask = nn.Parameter(torch.zeros(self.output_size, dtype=torch.float32))
                self.gate = nn.Sigmoid()

        def interpolate(self, x):
            upsampled = F.interpolate(x.unsqueeze(1), self.output_size, mode="linear", align_corners=True).squeeze(1)
            if self.trainable:
                upsampled = upsampled * self.gate(self.mask.unsqueeze(0)) * 2.0
            return upsampled

        def forward(self, x):
            if len(x.size()) <= 2:
                return self.interpolate(x)

            # Squash samples and timesteps into a single axis
            x_reshape = x.contiguous().view(-1, x.size(-1))  # (samples * timesteps, input_size)

            y = self.interpolate(x_reshape)

            # We have to reshape Y
            if self.batch_first:
                y = y.contiguous().view(x.size(0), -1, y.size(-1))  # (samples, timesteps, output_size)
            else:
                y = y.view(-1, x.size(1), y.size(-1))  # (timesteps, samples, output_size)

            return y

    class GatedLinearUnit(nn.Module):
        """Gated Linear Unit"""

        def __init__(self, input_size: int, hidden_size: int = None, dropout: float = None):
            super().__init__()

            if dropout is not None:
                self.dropout = nn.Dropout(dropout)
            else:
                self.dropout = dropout
            self.hidden_size = hidden_size or input_size
            self.fc = nn.Linear(input_size, self.hidden_size * 2)

            self.init_weights()

        def init_weights(self):
            for n, p in self.named_parameters():
                if "bias" in n:
                    torch.nn.init.zeros_(p)
                elif "fc" in n:
                    torch.nn.init.xavier_uniform_(p)

        def forward(self, x):
            if self.dropout is not None:
                x = self.dropout(x)
            x = self.fc(x)
            x = F.glu(x, dim=-1)
            return x

    class ResampleNorm(nn.Module):
        def __init__(self, input_size: int, output_size: int = None, trainable_add: bool = True):
            super().__init__()

            self.input_size = input_size
            self.trainable_add = trainable_add
            self.output_size = output_size or input_size

            if self.input_size != self.output_size:
                self.resample = TimeDistributedInterpolation(self.output_size, batch_first=True, trainable=False)

            if self.trainable_add:
                self.mask = nn.Parameter(torch.zeros(self.output_size, dtype=torch.float))
                self.gate = nn.Sigmoid()
            self.norm = nn.LayerNorm(self.output_size)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.input_size != self.output_size:
                x = self.resample(x)

            if self.trainable_add:
                x = x * self.gate(self.mask) * 2.0

            output = self.norm(x)
            return output

    class AddNorm(nn.Module):
        def __init__(self, input_size: int, skip_size: int = None, trainable_add: bool = True):
            super().__init__()

            self.input_size = input_size
            self.trainable_add = trainable_add
            self.skip_size = skip_size or input_size

            if self.input_size != self.skip_size:
                self.resample = TimeDistributedInterpolation(self.input_size, batch_first=True, trainable=False)

            if self.trainable_add:
                self.mask = nn.Parameter(torch.zeros(self.input_size, dtype=torch.float))
                self.gate = nn.Sigmoid()
            self.norm = nn.LayerNorm(self.input_size)

        def forward(self, x: torch.Tensor, skip: torch.Tensor):
            if self.input_size != self.skip_size:
                skip = self.resample(skip)

            if self.trainable_add:
                skip = skip * self.gate(self.mask) * 2.0

            output = self.norm(x + skip)
            return output

    class GateAddNorm(nn.Module):
        def __init__(self, input_size: int, hidden_size: int = None, skip_size: int = None,
                     trainable_add: bool = False, dropout: float = None):
            super().__init__()

            self.input_size = input_size
            self.hidden_size = hidden_size or input_size
            self.skip_size = skip_size or self.hidden_size
            self.dropout = dropout

            self.glu = GatedLinearUnit(self.input_size, hidden_size=self.hidden_size, dropout=self.dropout)
            self.add_norm = AddNorm(self.hidden_size, skip_size=self.skip_size, trainable_add=trainable_add)

        def forward(self, x, skip):
            output = self.glu(x)
            output = self.add_norm(output, skip)
            return output

    class GatedResidualNetwork(nn.Module):
        def __init__(self, input_size: int, hidden_size: int, output_size: int, dropout: float = 0.1,
                     context_size: int = None, residual: bool = False):
            super().__init__()
            self.input_size = input_size
            self.output_size = output_size
            self.context_size = context_size
            self.hidden_size = hidden_size
            self.dropout = dropout
            self.residual = residual

            if self.input_size != self.output_size and not self.residual:
                residual_size = self.input_size
            else:
                residual_size = self.output_size

            if self.output_size != residual_size:
                self.resample_norm = ResampleNorm(residual_size, self.output_size)

            self.fc1 = nn.Linear(self.input_size, self.hidden_size)
            self.elu = nn.ELU()

            if self.context_size is not None:
                self.context = nn.Linear(self.context_size, self.hidden_size, bias=False)

            self.fc2 = nn.Linear(self.hidden_size, self.hidden_size)
            self.init_weights()

            self.gate_norm = GateAddNorm(
                input_size=self.hidden_size,
                skip_size=self.output_size,
                hidden_size=self.output_size,
                dropout=self.dropout,
                trainable_add=False,
            )

        def init_weights(self):
            for name, p in self.named_parameters():
                if "bias" in name:
                    torch.nn.init.zeros_(p)
                elif "fc1" in name or "fc2" in name:
                    torch.nn.init.kaiming_normal_(p, a=0, mode="fan_in", nonlinearity="leaky_relu")
                elif "context" in name:
                    torch.nn.init.xavier_uniform_(p)

        def forward(self, x, context=None, residual=None):
            if residual is None:
                residual = x

            if self.input_size != self.output_size and not self.residual:
                residual = self.resample_norm(residual)

            x = self.fc1(x)
            if context is not None:
                context = self.context(context)
                x = x + context
            x = self.elu(x)
            x = self.fc2(x)
            x = self.gate_norm(x, residual)
            return x

    class VariableSelectionNetwork(nn.Module):
        def __init__(self, input_sizes: Dict[str, int], hidden_size: int, input_embedding_flags: Dict[str, bool] = {},
                     dropout: float = 0.1, context_size: int = None):
            super().__init__()

            self.hidden_size = hidden_size
            self.input_sizes = input_sizes
            self.input_embedding_flags = input_embedding_flags
            self.dropout = dropout
            self.context_size = context_size

            if self.num_inputs > 1:
                if self.context_size is not None:
                    self.flattened_grn = GatedResidualNetwork(
                        self.input_size_total,
                        min(self.hidden_size, self.num_inputs),
                        self.num_inputs,
                        self.dropout,
                        self.context_size,
                        residual=False,
                    )
                else:
                    self.flattened_grn = GatedResidualNetwork(
                        self.input_size_total,
                        min(self.hidden_size, self.num_inputs),
                        self.num_inputs,
                        self.dropout,
                        residual=False,
                    )

            self.single_variable_grns = nn.ModuleDict()
            self.prescalers = nn.ModuleDict()
            for name, input_size in self.input_sizes.items():
                if self.input_embedding_flags.get(name, False):
                    self.single_variable_grns[name] = ResampleNorm(input_size, self.hidden_size)
                else:
                    self.single_variable_grns[name] = GatedResidualNetwork(
                        input_size,
                        min(input_size, self.hidden_size),
                        output_size=self.hidden_size,
                        dropout=self.dropout,
                    )
                if not self.input_embedding_flags.get(name, False):
                    self.prescalers[name] = nn.Linear(1, input_size)

            self.softmax = nn.Softmax(dim=-1)

        @property
        def input_size_total(self):
            return sum(size if name in self.input_embedding_flags else size for name, size in self.input_sizes.items())

        @property
        def num_inputs(self):
            return len(self.input_sizes)

        def forward(self, x: Dict[str, torch.Tensor], context: torch.Tensor = None):
            if self.num_inputs > 1:
                # transform single variables
                var_outputs = []
                weight_inputs = []
                for name in self.input_sizes.keys():
                    # select embedding belonging to a single input
                    variable_embedding = x[name]
                    if name in self.prescalers:
                        variable_embedding = self.prescalers[name](variable_embedding)
                    weight_inputs.append(variable_embedding)
                    var_outputs.append(self.single_variable_grns[name](variable_embedding))
                var_outputs = torch.stack(var_outputs, dim=-1)

                # calculate variable weights
                flat_embedding = torch.cat(weight_inputs, dim=-1)
                sparse_weights = self.flattened_grn(flat_embedding, context)
                sparse_weights = self.softmax(sparse_weights).unsqueeze(-2)

                outputs = var_outputs * sparse_weights
                outputs = outputs.sum(dim=-1)
            else:  # for one input, do not perform variable selection but just encoding
                name = next(iter(self.single_variable_grns.keys()))
                variable_embedding = x[name]
                if name in self.prescalers:
                    variable_embedding = self.prescalers[name](variable_embedding)
                outputs = self.single_variable_grns[name](variable_embedding)  # fast forward if only one variable
                if outputs.ndim == 3:  # -> batch size, time, hidden size, n_variables
                    sparse_weights = torch.ones(outputs.size(0), outputs.size(1), 1, 1, device=outputs.device)
                else:  # ndim == 2 -> batch size, hidden size, n_variables
                    sparse_weights = torch.ones(outputs.size(0), 1, 1, device=outputs.device)
            return outputs, sparse_weights

    class QuantileLoss:
        def __init__(self, quantiles=[0.1, 0.5, 0.9]):
            self.quantiles = quantiles

        def loss(self, y_pred, target):
            # calculate quantile loss
            losses = []
            for i, q in enumerate(self.quantiles):
                errors = target - y_pred[..., i]
                losses.append(torch.max((q - 1) * errors, q * errors).unsqueeze(-1))
            losses = 2 * torch.cat(losses, dim=2)
            return losses

    class TinyTFT(nn.Module):
        def __init__(self, hidden_size=4, n_quantiles=3):
            super().__init__()
            self.static_variable_selection = VariableSelectionNetwork({"cat": 3}, hidden_size,
                                                                      input_embedding_flags={"cat": True}, dropout=None)
            self.static_context_variable_selection = GatedResidualNetwork(hidden_size, hidden_size, hidden_size,
                                                                          dropout=None)
            self.encoder_variable_selection = VariableSelectionNetwork({"price": 2, "volume": 3, "promo": 2}, hidden_size,
                                                                       dropout=None, context_size=hidden_size)
            self.lstm_encoder = nn.LSTM(input_size=hidden_size, hidden_size=hidden_size, num_layers=1,
                                        batch_first=True)
            self.post_lstm_gate_encoder = GateAddNorm(hidden_size, dropout=None, trainable_add=True)
            self.output_layer = nn.Linear(hidden_size, n_quantiles)

        def forward(self, static_cat, x):
            static_embedding, _ = self.static_variable_selection({"cat": static_cat})
            context = self.static_context_variable_selection(static_embedding)
            context = context[:, None].expand(-1, x["price"].size(1), -1)
            embeddings_varying_encoder, encoder_sparse_weights = self.encoder_variable_selection(x, context)
            encoder_output, (hidden, cell) = self.lstm_encoder(embeddings_varying_encoder)
            lstm_output = self.post_lstm_gate_encoder(encoder_output, embeddings_varying_encoder)
            return self.output_layer(lstm_output), encoder_sparse_weights

    model = TinyTFT()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
    static_cat = torch.tensor(normal(rng, 2, 3))
    x = {name: torch.tensor(normal(rng, 2, 5, 1)) for name in ("price", "volume", "promo")}
    target = torch.tensor(normal(rng, 2, 5))
    criterion = QuantileLoss()
    losses = []
    for _ in range(2):
        prediction, weights = model(static_cat, x)
        loss = criterion.loss(prediction, target).mean()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        losses += [loss.item(), weights.mean(dim=(0, 1, 2))[0].item()]
    return init, losses + summary(model.parameters())


def test_tft():
    compare(tft)


# (g) WangYueFT's dgcnn (pytorch/model.py and util.py): knn by -2 * matmul(x.transpose(2, 1), x) and the squared norms
# into a negative pairwise distance, topk(k=k, dim=-1)[1]; get_graph_feature (idx_base by arange(0, batch_size,
# device=device).view(-1, 1, 1) * num_points, rows picked by x.view(batch_size * num_points, -1)[idx, :], the centre
# repeated by view(..., 1, num_dims).repeat(1, 1, k, 1), cat((feature - x, x), dim=3).permute(0, 3, 1, 2)); EdgeConv
# stages of Conv2d, BatchNorm2d and LeakyReLU(negative_slope=0.2) with max(dim=-1, keepdim=False)[0]; adaptive max and
# average pooling in 1-D; cal_loss's label smoothing by zeros_like(pred).scatter(1, gold.view(-1, 1), 1); main.py's
# SGD with CosineAnnealingLR(eta_min=lr), the train accuracy by sklearn-style numpy over detach().cpu().numpy()
def dgcnn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(6)
    rng = np.random.default_rng(6)

    def knn(x, k):
        inner = -2 * torch.matmul(x.transpose(2, 1), x)
        xx = torch.sum(x ** 2, dim=1, keepdim=True)
        pairwise_distance = -xx - inner - xx.transpose(2, 1)

        idx = pairwise_distance.topk(k=k, dim=-1)[1]   # (batch_size, num_points, k)
        return idx

    def get_graph_feature(x, k=20, idx=None):
        batch_size = x.size(0)
        num_points = x.size(2)
        x = x.view(batch_size, -1, num_points)
        if idx is None:
            idx = knn(x, k=k)   # (batch_size, num_points, k)
        device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

        idx_base = torch.arange(0, batch_size, device=device).view(-1, 1, 1) * num_points

        idx = idx + idx_base

        idx = idx.view(-1)

        _, num_dims, _ = x.size()

        x = x.transpose(2, 1).contiguous()   # (batch_size, num_points, num_dims)  -> (batch_size*num_points, num_dims)
        feature = x.view(batch_size * num_points, -1)[idx, :]
        feature = feature.view(batch_size, num_points, k, num_dims)
        x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)

        feature = torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()

        return feature

    class DGCNN(nn.Module):
        def __init__(self, args, output_channels=40):
            super(DGCNN, self).__init__()
            self.args = args
            self.k = args.k

            self.bn1 = nn.BatchNorm2d(8)
            self.bn2 = nn.BatchNorm2d(8)
            self.bn5 = nn.BatchNorm1d(args.emb_dims)

            self.conv1 = nn.Sequential(nn.Conv2d(6, 8, kernel_size=1, bias=False),
                                       self.bn1,
                                       nn.LeakyReLU(negative_slope=0.2))
            self.conv2 = nn.Sequential(nn.Conv2d(8 * 2, 8, kernel_size=1, bias=False),
                                       self.bn2,
                                       nn.LeakyReLU(negative_slope=0.2))
            self.conv5 = nn.Sequential(nn.Conv1d(16, args.emb_dims, kernel_size=1, bias=False),
                                       self.bn5,
                                       nn.LeakyReLU(negative_slope=0.2))
            self.linear1 = nn.Linear(args.emb_dims * 2, 8, bias=False)
            self.bn6 = nn.BatchNorm1d(8)
            self.dp1 = nn.Dropout(p=args.dropout)
            self.linear3 = nn.Linear(8, output_channels)

        def forward(self, x):
            batch_size = x.size(0)
            x = get_graph_feature(x, k=self.k)
            x = self.conv1(x)
            x1 = x.max(dim=-1, keepdim=False)[0]

            x = get_graph_feature(x1, k=self.k)
            x = self.conv2(x)
            x2 = x.max(dim=-1, keepdim=False)[0]

            x = torch.cat((x1, x2), dim=1)

            x = self.conv5(x)
            x1 = F.adaptive_max_pool1d(x, 1).view(batch_size, -1)
            x2 = F.adaptive_avg_pool1d(x, 1).view(batch_size, -1)
            x = torch.cat((x1, x2), 1)

            x = F.leaky_relu(self.bn6(self.linear1(x)), negative_slope=0.2)
            x = self.dp1(x)
            x = self.linear3(x)
            return x

    def cal_loss(pred, gold, smoothing=True):
        ''' Calculate cross entropy loss, apply label smoothing if needed. '''

        gold = gold.contiguous().view(-1)

        if smoothing:
            eps = 0.2
            n_class = pred.size(1)

            one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
            one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (n_class - 1)
            log_prb = F.log_softmax(pred, dim=1)

            loss = -(one_hot * log_prb).sum(dim=1).mean()
        else:
            loss = F.cross_entropy(pred, gold, reduction='mean')

        return loss

    class Args:
        k, emb_dims, dropout, lr, epochs = 4, 8, 0.0, 0.1, 2

    args = Args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = DGCNN(args, output_channels=3).to(device)
    init = load(m, model, state)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr * 100, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.epochs, eta_min=args.lr)
    criterion = cal_loss
    points = normal(rng, 4, 10, 3)
    label = rng.integers(0, 3, (4, 1))
    losses = []
    for epoch in range(args.epochs):
        train_loss = 0.0
        count = 0.0
        model.train()
        train_pred = []
        train_true = []
        data, label_t = torch.tensor(points).to(device), torch.tensor(label).to(device).squeeze()
        data = data.permute(0, 2, 1)
        batch_size = data.size()[0]
        opt.zero_grad()
        logits = model(data)
        loss = criterion(logits, label_t)
        loss.backward()
        opt.step()
        preds = logits.max(dim=1)[1]
        count += batch_size
        train_loss += loss.item() * batch_size
        train_true.append(label_t.cpu().numpy())
        train_pred.append(preds.detach().cpu().numpy())
        scheduler.step()
        train_true = np.concatenate(train_true)
        train_pred = np.concatenate(train_pred)
        losses += [train_loss * 1.0 / count, float(np.mean(train_true == train_pred)), opt.param_groups[0]['lr']]
    model.eval()
    with torch.no_grad():
        losses.append(cal_loss(model(torch.tensor(points).permute(0, 2, 1)), torch.tensor(label), False).item())
    return init, losses + summary(model.parameters())


def test_dgcnn():
    compare(dgcnn)


# (h) yanx27's Pointnet_Pointnet2_pytorch (models/pointnet2_utils.py: square_distance by -2 * matmul plus the
# squared norms added in place, index_points by a batch index of arange(B).view(view_shape).repeat(repeat_shape) and
# points[batch_indices, idx, :], farthest_point_sample (long centroids written column by column, distance[mask] =
# dist[mask], torch.max(distance, -1)[1]; numpy draws the first point where the source takes torch.randint),
# query_ball_point (group_idx[sqrdists > radius ** 2] = N, sort(dim=-1)[0][:, :, :nsample], the first index
# repeated into the empty slots by a boolean mask), sample_and_group and sample_and_group_all, PointNetSetAbstraction's
# Conv2d/BatchNorm2d ModuleLists and torch.max(new_points, 2)[0]); pointnet2_cls_ssg's head with log_softmax and
# F.nll_loss; train_classification.py's provider-style numpy augmentation, its --optimizer SGD branch with StepLR, and
# pred.data.max(1)[1].eq(target.long().data).cpu().sum()
def pointnet2(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(7)
    rng = np.random.default_rng(7)

    def square_distance(src, dst):
        B, N, _ = src.shape
        _, M, _ = dst.shape
        dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
        dist += torch.sum(src ** 2, -1).view(B, N, 1)
        dist += torch.sum(dst ** 2, -1).view(B, 1, M)
        return dist

    def index_points(points, idx):
        device = points.device
        B = points.shape[0]
        view_shape = list(idx.shape)
        view_shape[1:] = [1] * (len(view_shape) - 1)
        repeat_shape = list(idx.shape)
        repeat_shape[0] = 1
        batch_indices = torch.arange(B, dtype=torch.long).to(device).view(view_shape).repeat(repeat_shape)
        new_points = points[batch_indices, idx, :]
        return new_points

    def farthest_point_sample(xyz, npoint):
        device = xyz.device
        B, N, C = xyz.shape
        centroids = torch.zeros(B, npoint, dtype=torch.long).to(device)
        distance = torch.ones(B, N).to(device) * 1e10
        farthest = torch.tensor(rng.integers(0, N, (B,)), dtype=torch.long).to(device)
        batch_indices = torch.arange(B, dtype=torch.long).to(device)
        for i in range(npoint):
            centroids[:, i] = farthest
            centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
            dist = torch.sum((xyz - centroid) ** 2, -1)
            mask = dist < distance
            distance[mask] = dist[mask]
            farthest = torch.max(distance, -1)[1]
        return centroids

    def query_ball_point(radius, nsample, xyz, new_xyz):
        device = xyz.device
        B, N, C = xyz.shape
        _, S, _ = new_xyz.shape
        group_idx = torch.arange(N, dtype=torch.long).to(device).view(1, 1, N).repeat([B, S, 1])
        sqrdists = square_distance(new_xyz, xyz)
        group_idx[sqrdists > radius ** 2] = N
        group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
        group_first = group_idx[:, :, 0].view(B, S, 1).repeat([1, 1, nsample])
        mask = group_idx == N
        group_idx[mask] = group_first[mask]
        return group_idx

    def sample_and_group(npoint, radius, nsample, xyz, points, returnfps=False):
        B, N, C = xyz.shape
        S = npoint
        fps_idx = farthest_point_sample(xyz, npoint)  # [B, npoint, C]
        new_xyz = index_points(xyz, fps_idx)
        idx = query_ball_point(radius, nsample, xyz, new_xyz)
        grouped_xyz = index_points(xyz, idx)  # [B, npoint, nsample, C]
        grouped_xyz_norm = grouped_xyz - new_xyz.view(B, S, 1, C)

        if points is not None:
            grouped_points = index_points(points, idx)
            new_points = torch.cat([grouped_xyz_norm, grouped_points], dim=-1)  # [B, npoint, nsample, C+D]
        else:
            new_points = grouped_xyz_norm
        if returnfps:
            return new_xyz, new_points, grouped_xyz, fps_idx
        else:
            return new_xyz, new_points

    def sample_and_group_all(xyz, points):
        device = xyz.device
        B, N, C = xyz.shape
        new_xyz = torch.zeros(B, 1, C).to(device)
        grouped_xyz = xyz.view(B, 1, N, C)
        if points is not None:
            new_points = torch.cat([grouped_xyz, points.view(B, 1, N, -1)], dim=-1)
        else:
            new_points = grouped_xyz
        return new_xyz, new_points

    class PointNetSetAbstraction(nn.Module):
        def __init__(self, npoint, radius, nsample, in_channel, mlp, group_all):
            super(PointNetSetAbstraction, self).__init__()
            self.npoint = npoint
            self.radius = radius
            self.nsample = nsample
            self.mlp_convs = nn.ModuleList()
            self.mlp_bns = nn.ModuleList()
            last_channel = in_channel
            for out_channel in mlp:
                self.mlp_convs.append(nn.Conv2d(last_channel, out_channel, 1))
                self.mlp_bns.append(nn.BatchNorm2d(out_channel))
                last_channel = out_channel
            self.group_all = group_all

        def forward(self, xyz, points):
            xyz = xyz.permute(0, 2, 1)
            if points is not None:
                points = points.permute(0, 2, 1)

            if self.group_all:
                new_xyz, new_points = sample_and_group_all(xyz, points)
            else:
                new_xyz, new_points = sample_and_group(self.npoint, self.radius, self.nsample, xyz, points)
            # new_xyz: sampled points position data, [B, npoint, C]
            # new_points: sampled points data, [B, npoint, nsample, C+D]
            new_points = new_points.permute(0, 3, 2, 1)  # [B, C+D, nsample,npoint]
            for i, conv in enumerate(self.mlp_convs):
                bn = self.mlp_bns[i]
                new_points = F.relu(bn(conv(new_points)))

            new_points = torch.max(new_points, 2)[0]
            new_xyz = new_xyz.permute(0, 2, 1)
            return new_xyz, new_points

    class get_model(nn.Module):
        def __init__(self, num_class, normal_channel=False):
            super(get_model, self).__init__()
            in_channel = 6 if normal_channel else 3
            self.normal_channel = normal_channel
            self.sa1 = PointNetSetAbstraction(npoint=4, radius=0.8, nsample=3, in_channel=in_channel, mlp=[4, 6],
                                              group_all=False)
            self.sa3 = PointNetSetAbstraction(npoint=None, radius=None, nsample=None, in_channel=6 + 3, mlp=[8],
                                              group_all=True)
            self.fc1 = nn.Linear(8, 6)
            self.bn1 = nn.BatchNorm1d(6)
            self.drop1 = nn.Dropout(0.0)
            self.fc3 = nn.Linear(6, num_class)

        def forward(self, xyz):
            B, _, _ = xyz.shape
            if self.normal_channel:
                norm = xyz[:, 3:, :]
                xyz = xyz[:, :3, :]
            else:
                norm = None
            l1_xyz, l1_points = self.sa1(xyz, norm)
            l3_xyz, l3_points = self.sa3(l1_xyz, l1_points)
            x = l3_points.view(B, 8)
            x = self.drop1(F.relu(self.bn1(self.fc1(x))))
            x = self.fc3(x)
            x = F.log_softmax(x, -1)
            return x, l3_points

    class get_loss(nn.Module):
        def __init__(self):
            super(get_loss, self).__init__()

        def forward(self, pred, target, trans_feat):
            total_loss = F.nll_loss(pred, target)
            return total_loss

    def random_scale_point_cloud(batch_data, scale_low=0.8, scale_high=1.25):
        B, N, C = batch_data.shape
        scales = rng.uniform(scale_low, scale_high, B)
        for batch_index in range(B):
            batch_data[batch_index, :, :] *= scales[batch_index]
        return batch_data

    def shift_point_cloud(batch_data, shift_range=0.1):
        B, N, C = batch_data.shape
        shifts = rng.uniform(-shift_range, shift_range, (B, 3))
        for batch_index in range(B):
            batch_data[batch_index, :, :] += shifts[batch_index, :]
        return batch_data

    classifier = get_model(3)
    init = load(m, classifier, state)
    criterion = get_loss()
    optimizer_name = 'SGD'  # --optimizer: Adam would normalise the gradients of the biases before BatchNorm, rounding
    if optimizer_name == 'Adam':
        optimizer = torch.optim.Adam(classifier.parameters(), lr=0.001, betas=(0.9, 0.999), eps=1e-08,
                                     weight_decay=1e-4)
    else:
        optimizer = torch.optim.SGD(classifier.parameters(), lr=0.01, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.7)
    pts = normal(rng, 3, 8, 3) * 0.5
    target = torch.tensor(rng.integers(0, 3, 3))
    losses = []
    for epoch in range(1):
        mean_correct = []
        classifier = classifier.train()
        scheduler.step()
        optimizer.zero_grad()
        points = random_scale_point_cloud(pts.copy())
        points = shift_point_cloud(points)
        points = torch.Tensor(points)
        points = points.transpose(2, 1)
        pred, trans_feat = classifier(points)
        loss = criterion(pred, target.long(), trans_feat)
        pred_choice = pred.data.max(1)[1]
        correct = pred_choice.eq(target.long().data).cpu().sum()
        mean_correct.append(correct.item() / float(points.size()[0]))
        loss.backward()
        optimizer.step()
        losses += [loss.item(), np.mean(mean_correct)]
    xyz = torch.tensor(pts)
    losses += farthest_point_sample(xyz, 3).flatten().tolist()
    losses += query_ball_point(0.8, 3, xyz, index_points(xyz, torch.tensor([[0, 1]] * 3))).flatten().tolist()
    return init, losses + summary(classifier.parameters())


def test_pointnet2():
    compare(pointnet2)


# (i) facebookresearch/swav's main_swav.py and src/resnet50.py: the model's projection head and prototypes
# (nn.Linear(output_dim, nmb_prototypes, bias=False)), forward_head's F.normalize(x, dim=1, p=2), multi-crop forward by
# torch.cumsum(torch.unique_consecutive(torch.tensor([inp.shape[-1] for inp in inputs]), return_counts=True)[1], 0);
# train(): the prototypes normalised under torch.no_grad() by w = model.prototypes.weight.data.clone() and copy_,
# embedding.detach() and output.detach(), distributed_sinkhorn (Q = torch.exp(out / epsilon).t(), the all_reduce guarded
# by dist.is_initialized(), Q /= sum_Q, rows and columns normalised in turn), the swapped prediction loss by
# torch.sum(q * F.log_softmax(x, dim=1), dim=1) over crops np.delete'd of the crop_id, freeze_prototypes_niters
# cancelling the prototypes' gradients by p.grad = None, a queue of embeddings cat'ed with the prototypes' scores
# (torch.mm(queue[i], model.module.prototypes.weight.t())) and rolled by queue[i, bs:] = queue[i, :-bs].clone()
def swav(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import torch.distributed as dist
    if m.torch.__name__ == "tnet":
        import tnet.distributed as dist
    torch.manual_seed(8)
    rng = np.random.default_rng(8)

    class Model(nn.Module):
        def __init__(self, output_dim=4, hidden_mlp=8, nmb_prototypes=5, normalize=True):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(3, 6, 3, 2, 1, bias=False), nn.BatchNorm2d(6), nn.ReLU(inplace=True))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.l2norm = normalize
            self.projection_head = nn.Sequential(
                nn.Linear(6, hidden_mlp),
                nn.BatchNorm1d(hidden_mlp),
                nn.ReLU(inplace=True),
                nn.Linear(hidden_mlp, output_dim),
            )
            self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)

        def forward_backbone(self, x):
            x = self.body(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            return x

        def forward_head(self, x):
            if self.projection_head is not None:
                x = self.projection_head(x)

            if self.l2norm:
                x = nn.functional.normalize(x, dim=1, p=2)

            if self.prototypes is not None:
                return x, self.prototypes(x)
            return x

        def forward(self, inputs):
            if not isinstance(inputs, list):
                inputs = [inputs]
            idx_crops = torch.cumsum(torch.unique_consecutive(
                torch.tensor([inp.shape[-1] for inp in inputs]),
                return_counts=True,
            )[1], 0)
            start_idx = 0
            for end_idx in idx_crops:
                _out = self.forward_backbone(torch.cat(inputs[start_idx: end_idx]).to(device, non_blocking=True))
                if start_idx == 0:
                    output = _out
                else:
                    output = torch.cat((output, _out))
                start_idx = end_idx
            return self.forward_head(output)

    class Args:
        crops_for_assign, nmb_crops, temperature, epsilon, sinkhorn_iterations = [0, 1], [2, 2], 0.1, 0.05, 3
        freeze_prototypes_niters, world_size, queue_length, epoch_queue_starts = 1, 1, 8, 0

    args = Args()

    @torch.no_grad()
    def distributed_sinkhorn(out):
        Q = torch.exp(out / args.epsilon).t()  # Q is K-by-B for consistency with notations from our paper
        B = Q.shape[1] * args.world_size  # number of samples to assign
        K = Q.shape[0]  # how many prototypes

        # make the matrix sums to 1
        sum_Q = torch.sum(Q)
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(sum_Q)
        Q /= sum_Q

        for it in range(args.sinkhorn_iterations):
            # normalize each row: total weight per prototype must be 1/K
            sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
            if dist.is_available() and dist.is_initialized():
                dist.all_reduce(sum_of_rows)
            Q /= sum_of_rows
            Q /= K

            # normalize each column: total weight per sample must be 1/B
            Q /= torch.sum(Q, dim=0, keepdim=True)
            Q /= B

        Q *= B  # the colomns must sum to 1 so that Q is an assignment
        return Q.t()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # the source's .cuda(non_blocking=True)
    model = Model().to(device)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9, weight_decay=1e-6)
    bs = 3
    queue = torch.zeros(len(args.crops_for_assign), args.queue_length // args.world_size, 4)
    big, small = normal(rng, 2, bs, 3, 8, 8), normal(rng, 2, bs, 3, 6, 6)
    losses = []
    for it, inputs in enumerate([[torch.tensor(v) for v in (*big, *small)]] * 2):
        # normalize the prototypes
        with torch.no_grad():
            w = model.prototypes.weight.data.clone()
            w = nn.functional.normalize(w, dim=1, p=2)
            model.prototypes.weight.copy_(w)

        # ============ multi-res forward passes ... ============
        embedding, output = model(inputs)
        embedding = embedding.detach()
        bs = inputs[0].size(0)

        # ============ swav loss ... ============
        loss = 0
        use_the_queue = False
        for i, crop_id in enumerate(args.crops_for_assign):
            with torch.no_grad():
                out = output[bs * crop_id: bs * (crop_id + 1)].detach()

                # time to use the queue
                if queue is not None:
                    if use_the_queue or not torch.all(queue[i, -1, :] == 0):
                        use_the_queue = True
                        out = torch.cat((torch.mm(
                            queue[i],
                            model.prototypes.weight.t()
                        ), out))
                    # fill the queue
                    queue[i, bs:] = queue[i, :-bs].clone()
                    queue[i, :bs] = embedding[crop_id * bs: (crop_id + 1) * bs]

                # get assignments
                q = distributed_sinkhorn(out)[-bs:]

            # cluster assignment prediction
            subloss = 0
            for v in np.delete(np.arange(np.sum(args.nmb_crops)), crop_id):
                x = output[bs * v: bs * (v + 1)] / args.temperature
                subloss -= torch.mean(torch.sum(q * F.log_softmax(x, dim=1), dim=1))
            loss += subloss / (np.sum(args.nmb_crops) - 1)
        loss /= len(args.crops_for_assign)

        # ============ backward and optim step ... ============
        optimizer.zero_grad()
        loss.backward()
        # cancel gradients for the prototypes
        if it < args.freeze_prototypes_niters:
            for name, p in model.named_parameters():
                if "prototypes" in name:
                    p.grad = None
        optimizer.step()
        losses += [loss.item(), use_the_queue]
    return init, losses + summary(model.parameters()) + summary([queue])


def test_swav():
    compare(swav)


# (j) Eromera's erfnet_pytorch (train/erfnet.py and main.py): DownsamplerBlock (a strided conv cat'ed with
# MaxPool2d(2, stride=2), BatchNorm2d(eps=1e-3)), non_bottleneck_1d (3x1 and 1x3 convolutions, the second pair dilated
# by padding=(1 * dilated, 0), Dropout2d, F.relu(output + input)), UpsamplerBlock (ConvTranspose2d(stride=2,
# padding=1, output_padding=1, bias=True)), the encoder's predict flag and output_conv; main.py's CrossEntropyLoss2d
# as NLLLoss(weight) of F.log_softmax(outputs, dim=1), the class weights of the paper's table, Adam(betas=(0.9, 0.999),
# eps=1e-08, weight_decay=1e-4) under LambdaLR's poly schedule pow((1 - (epoch - 1) / num_epochs), 0.9), the iou of
# argmax predictions by a hand-made iouEval over torch.zeros and scatter_ of one-hot labels (its counts in float32: tnet
# has no float64, so .double() is the one edit beyond the imports)
def erfnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(9)
    rng = np.random.default_rng(9)

    class DownsamplerBlock(nn.Module):
        def __init__(self, ninput, noutput):
            super().__init__()

            self.conv = nn.Conv2d(ninput, noutput - ninput, (3, 3), stride=2, padding=1, bias=True)
            self.pool = nn.MaxPool2d(2, stride=2)
            self.bn = nn.BatchNorm2d(noutput, eps=1e-3)

        def forward(self, input):
            output = torch.cat([self.conv(input), self.pool(input)], 1)
            output = self.bn(output)
            return F.relu(output)

    class non_bottleneck_1d(nn.Module):
        def __init__(self, chann, dropprob, dilated):
            super().__init__()

            self.conv3x1_1 = nn.Conv2d(chann, chann, (3, 1), stride=1, padding=(1, 0), bias=True)

            self.conv1x3_1 = nn.Conv2d(chann, chann, (1, 3), stride=1, padding=(0, 1), bias=True)

            self.bn1 = nn.BatchNorm2d(chann, eps=1e-03)

            self.conv3x1_2 = nn.Conv2d(chann, chann, (3, 1), stride=1, padding=(1 * dilated, 0), bias=True,
                                       dilation=(dilated, 1))

            self.conv1x3_2 = nn.Conv2d(chann, chann, (1, 3), stride=1, padding=(0, 1 * dilated), bias=True,
                                       dilation=(1, dilated))

            self.bn2 = nn.BatchNorm2d(chann, eps=1e-03)

            self.dropout = nn.Dropout2d(dropprob)

        def forward(self, input):

            output = self.conv3x1_1(input)
            output = F.relu(output)
            output = self.conv1x3_1(output)
            output = self.bn1(output)
            output = F.relu(output)

            output = self.conv3x1_2(output)
            output = F.relu(output)
            output = self.conv1x3_2(output)
            output = self.bn2(output)

            if (self.dropout.p != 0):
                output = self.dropout(output)

            return F.relu(output + input)  # +input = identity (residual connection)

    class Encoder(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.initial_block = DownsamplerBlock(3, 6)

            self.layers = nn.ModuleList()

            self.layers.append(DownsamplerBlock(6, 8))

            for x in range(0, 1):  # 5 times
                self.layers.append(non_bottleneck_1d(8, 0.03, 1))

            for x in range(0, 1):  # 2 times
                self.layers.append(non_bottleneck_1d(8, 0.3, 2))

            # Only in encoder mode:
            self.output_conv = nn.Conv2d(8, num_classes, 1, stride=1, padding=0, bias=True)

        def forward(self, input, predict=False):
            output = self.initial_block(input)

            for layer in self.layers:
                output = layer(output)

            if predict:
                output = self.output_conv(output)

            return output

    class UpsamplerBlock(nn.Module):
        def __init__(self, ninput, noutput):
            super().__init__()
            self.conv = nn.ConvTranspose2d(ninput, noutput, 3, stride=2, padding=1, output_padding=1, bias=True)
            self.bn = nn.BatchNorm2d(noutput, eps=1e-3)

        def forward(self, input):
            output = self.conv(input)
            output = self.bn(output)
            return F.relu(output)

    class Decoder(nn.Module):
        def __init__(self, num_classes):
            super().__init__()

            self.layers = nn.ModuleList()

            self.layers.append(UpsamplerBlock(8, 4))
            self.layers.append(non_bottleneck_1d(4, 0, 1))

            self.output_conv = nn.ConvTranspose2d(4, num_classes, 2, stride=2, padding=0, output_padding=0, bias=True)

        def forward(self, input):
            output = input

            for layer in self.layers:
                output = layer(output)

            output = self.output_conv(output)

            return output

    class Net(nn.Module):
        def __init__(self, num_classes, encoder=None):  # use encoder to pass pretrained encoder
            super().__init__()

            if (encoder == None):
                self.encoder = Encoder(num_classes)
            else:
                self.encoder = encoder
            self.decoder = Decoder(num_classes)

        def forward(self, input, only_encode=False):
            if only_encode:
                return self.encoder.forward(input, predict=True)
            else:
                output = self.encoder(input)  # predict=False by default
                return self.decoder.forward(output)

    class CrossEntropyLoss2d(torch.nn.Module):

        def __init__(self, weight=None):
            super().__init__()

            self.loss = torch.nn.NLLLoss(weight)

        def forward(self, outputs, targets):
            return self.loss(torch.nn.functional.log_softmax(outputs, dim=1), targets)

    class iouEval:

        def __init__(self, nClasses, ignoreIndex=19):
            self.nClasses = nClasses
            self.ignoreIndex = ignoreIndex if nClasses > ignoreIndex else -1  # if ignoreIndex is larger than nClasses, consider no ignoreIndex
            self.reset()

        def reset(self):
            classes = self.nClasses if self.ignoreIndex == -1 else self.nClasses - 1
            # .float() where the source has .double(): tnet has no float64 (README), the one edit beyond the imports
            self.tp = torch.zeros(classes).float()
            self.fp = torch.zeros(classes).float()
            self.fn = torch.zeros(classes).float()

        def addBatch(self, x, y):  # x=preds, y=targets
            # sizes should be "batch_size x nClasses x H x W"
            if (x.size(1) == 1):
                x_onehot = torch.zeros(x.size(0), self.nClasses, x.size(2), x.size(3))
                x_onehot.scatter_(1, x, 1).float()
            else:
                x_onehot = x.float()

            if (y.size(1) == 1):
                y_onehot = torch.zeros(y.size(0), self.nClasses, y.size(2), y.size(3))
                y_onehot.scatter_(1, y, 1).float()
            else:
                y_onehot = y.float()

            ignores = 0

            tpmult = x_onehot * y_onehot  # times prediction and gt coincide is 1
            tp = torch.sum(torch.sum(torch.sum(tpmult, dim=0, keepdim=True), dim=2, keepdim=True), dim=3,
                           keepdim=True).squeeze()
            fpmult = x_onehot * (1 - y_onehot - ignores)  # times prediction says its that class and gt says its not
            fp = torch.sum(torch.sum(torch.sum(fpmult, dim=0, keepdim=True), dim=2, keepdim=True), dim=3,
                           keepdim=True).squeeze()
            fnmult = (1 - x_onehot) * (y_onehot)  # times prediction says its not that class and gt says it is
            fn = torch.sum(torch.sum(torch.sum(fnmult, dim=0, keepdim=True), dim=2, keepdim=True), dim=3,
                           keepdim=True).squeeze()

            self.tp += tp.float().cpu()
            self.fp += fp.float().cpu()
            self.fn += fn.float().cpu()

        def getIoU(self):
            num = self.tp
            den = self.tp + self.fp + self.fn + 1e-15
            iou = num / den
            return torch.mean(iou), iou  # returns "iou mean", "iou per class"

    NUM_CLASSES = 3
    model = Net(NUM_CLASSES)
    init = load(m, model, state)
    weight = torch.ones(NUM_CLASSES)
    weight[0] = 2.8149201869965
    weight[1] = 6.9850029945374
    weight[2] = 3.7890393733978
    criterion = CrossEntropyLoss2d(weight)
    optimizer = torch.optim.Adam(model.parameters(), 5e-4, (0.9, 0.999), eps=1e-08, weight_decay=1e-4)
    num_epochs = 3

    def lambda1(epoch):
        return pow((1 - ((epoch - 1) / num_epochs)), 0.9)

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lambda1)
    images = torch.tensor(normal(rng, 2, 3, 8, 8))
    labels = torch.tensor(rng.integers(0, NUM_CLASSES, (2, 1, 8, 8)))
    model.eval()  # Dropout2d's draws off; the batch statistics of train mode are in the encoder-only pass below
    losses = []
    for epoch in range(1, 3):
        scheduler.step(epoch)  # scheduler 2
        inputs, targets = images, labels
        outputs = model(inputs, only_encode=False)
        optimizer.zero_grad()
        loss = criterion(outputs, targets[:, 0])
        loss.backward()
        optimizer.step()
        iouEvalTrain = iouEval(NUM_CLASSES)
        iouEvalTrain.addBatch(outputs.max(1)[1].unsqueeze(1).data, targets.data)
        iouTrain, iou_classes = iouEvalTrain.getIoU()
        losses += [loss.item(), iouTrain.item(), optimizer.param_groups[0]['lr']]
    model.train()
    for layer in model.modules():
        if isinstance(layer, nn.Dropout2d):
            layer.p = 0.0
    encoded = model(images, only_encode=True)
    losses += [encoded.abs().mean().item()]
    return init, losses + summary(model.parameters())


def test_erfnet():
    compare(erfnet)
