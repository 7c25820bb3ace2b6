"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports
alone, as test_ported_scripts.py: torchvision's references/classification (ExponentialMovingAverage over
AveragedModel(use_buffers=True), set_weight_decay's norm classes and custom keys, RandomMixup and RandomCutmix in a
collate_fn, SequentialLR warmup, label smoothing); caogang's WGAN-GP toy (backward(mone), autograd.grad with
only_inputs) and yunjey's StarGAN; cure-lab's DLinear with ts-kim's RevIN in Time-Series-Library's loop;
philipperemy's N-BEATS (whose `self.parameters = nn.ParameterList(...)` found that a tnet submodule named as a
Module method hid the method); pytorch-forecasting's Temporal Fusion Transformer blocks (GLU, GRN, variable
selection, quantile loss); WangYueFT's DGCNN and yanx27's PointNet++ utilities; facebookresearch's SwAV (Sinkhorn-Knopp,
the queue, frozen prototypes); Eromera's ERFNet; xuebinqin's U-2-Net; junyanz's pix2pix (UnetSkipConnectionBlock's
in-place skip, PatchGAN, GANLoss); sooftware's Conformer with CTC and SpecAugment; xinntao's ESRGAN (RRDB, the
relativistic GAN loss, PSNR); lucidrains' Linformer. Each runs in tnet, then in torch from tnet's initial weights
(state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy draws what a
script draws; shapes are tiny and runs take one or two steps. Each script seeds torch first, as its source's main
does, so that its initial weights do not hang on the tests run before it. Where Adam would normalise a gradient that
is rounding alone (a bias before a BatchNorm, an attention key's bias), that bias is frozen, or the script takes
its source's SGD option, as each says; ERFNet's iouEval counts in float32 where its source has .double() (tnet has
no float64)."""
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
# 0), mul_ and add_ in place; lambdas by torch._sample_dirichlet, the box by torch.randint(W, (1,)) and int(torch.clamp(
# r_x - r_w_half, min=0)), torch replaying tnet's draws), evaluate under torch.inference_mode with
# utils.accuracy's topk and the EMA model's eval
def torchvision_reference(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
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

        def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False):
            super().__init__()
            if num_classes < 1:
                raise ValueError(f"Please provide a valid positive value for the num_classes. Got num_classes={num_classes}")
            if alpha <= 0:
                raise ValueError("Alpha param can't be zero.")
            self.num_classes = num_classes
            self.p = p
            self.alpha = alpha
            self.inplace = inplace

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

            # Implemented as on:
            # https://github.com/rwightman/pytorch-image-models/blob/4b4d3c1/timm/data/mixup.py#L131
            lambda_param = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
            lambda_param = replay.setdefault("mixup", lambda_param)  # torch replays tnet's draw
            batch_rolled.mul_(1.0 - lambda_param)
            batch.mul_(lambda_param).add_(batch_rolled)

            target_rolled.mul_(1.0 - lambda_param)
            target.mul_(lambda_param).add_(target_rolled)

            return batch, target

    class RandomCutmix(torch.nn.Module):
        def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False):
            super().__init__()
            self.num_classes = num_classes
            self.p = p
            self.alpha = alpha
            self.inplace = inplace

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

            lambda_param = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
            _, H, W = batch.shape[-3:]

            r_x = torch.randint(W, (1,))
            r_y = torch.randint(H, (1,))
            lambda_param, r_x, r_y = replay.setdefault("cutmix", (lambda_param, r_x.tolist(), r_y.tolist()))  # tnet's
            r_x, r_y = torch.tensor(r_x), torch.tensor(r_y)

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
    mixup = RandomMixup(num_classes, p=1.0, alpha=0.2)
    cutmix = RandomCutmix(num_classes, p=1.0, alpha=1.0)
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
    compare(torchvision_reference, replay={})


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
    DataLoader, Dataset = m.data.DataLoader, m.data.Dataset  # from torch.utils.data import DataLoader, Dataset
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
            if i == 1:
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
    x = {name: torch.tensor(normal(rng, 2, 3, 1)) for name in ("price", "volume", "promo")}
    target = torch.tensor(normal(rng, 2, 3))
    criterion = QuantileLoss()
    losses = []
    for _ in range(1):
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
    dist = m.torch.distributed  # import torch.distributed as dist
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


# (k) xuebinqin's U-2-Net (model/u2net.py: REBNCONV with dilation=1*dirate, _upsample_like by the deprecated
# F.upsample(src, size=tar.shape[2:], mode='bilinear') to sizes of no integer ratio, RSU4's MaxPool2d(2, stride=2,
# ceil_mode=True) on odd sizes and RSU4F's dilations, side outputs fused by a 1x1 conv and F.sigmoid; u2net_train.py's
# muti_bce_loss_fusion over nn.BCELoss(size_average=True), Variable(..., requires_grad=False), loss.data.item() and
# del of the outputs; u2net_test.py's normPRED by torch.max and torch.min). The convolutions before BatchNorm keep the
# source's biases but frozen: Adam would normalise their gradients, which are rounding alone
def u2net(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Variable = m.torch.autograd.Variable  # from torch.autograd import Variable
    torch.manual_seed(10)
    rng = np.random.default_rng(10)

    class REBNCONV(nn.Module):
        def __init__(self, in_ch=3, out_ch=3, dirate=1):
            super(REBNCONV, self).__init__()

            self.conv_s1 = nn.Conv2d(in_ch, out_ch, 3, padding=1 * dirate, dilation=1 * dirate)
            self.bn_s1 = nn.BatchNorm2d(out_ch)
            self.relu_s1 = nn.ReLU(inplace=True)

        def forward(self, x):

            hx = x
            xout = self.relu_s1(self.bn_s1(self.conv_s1(hx)))

            return xout

    ## upsample tensor 'src' to have the same spatial size with tensor 'tar'
    def _upsample_like(src, tar):

        src = F.upsample(src, size=tar.shape[2:], mode='bilinear')

        return src

    ### RSU-4 ###
    class RSU4(nn.Module):  # UNet04DRES(nn.Module):

        def __init__(self, in_ch=3, mid_ch=12, out_ch=3):
            super(RSU4, self).__init__()

            self.rebnconvin = REBNCONV(in_ch, out_ch, dirate=1)

            self.rebnconv1 = REBNCONV(out_ch, mid_ch, dirate=1)
            self.pool1 = nn.MaxPool2d(2, stride=2, ceil_mode=True)

            self.rebnconv2 = REBNCONV(mid_ch, mid_ch, dirate=1)

            self.rebnconv3 = REBNCONV(mid_ch, mid_ch, dirate=2)

            self.rebnconv2d = REBNCONV(mid_ch * 2, mid_ch, dirate=1)
            self.rebnconv1d = REBNCONV(mid_ch * 2, out_ch, dirate=1)

        def forward(self, x):

            hx = x

            hxin = self.rebnconvin(hx)

            hx1 = self.rebnconv1(hxin)
            hx = self.pool1(hx1)

            hx2 = self.rebnconv2(hx)

            hx3 = self.rebnconv3(hx2)

            hx2d = self.rebnconv2d(torch.cat((hx3, hx2), 1))
            hx2dup = _upsample_like(hx2d, hx1)

            hx1d = self.rebnconv1d(torch.cat((hx2dup, hx1), 1))

            return hx1d + hxin

    ### RSU-4F ###
    class RSU4F(nn.Module):  # UNet04FRES(nn.Module):

        def __init__(self, in_ch=3, mid_ch=12, out_ch=3):
            super(RSU4F, self).__init__()

            self.rebnconvin = REBNCONV(in_ch, out_ch, dirate=1)

            self.rebnconv1 = REBNCONV(out_ch, mid_ch, dirate=1)
            self.rebnconv2 = REBNCONV(mid_ch, mid_ch, dirate=2)

            self.rebnconv1d = REBNCONV(mid_ch * 2, out_ch, dirate=1)

        def forward(self, x):

            hx = x

            hxin = self.rebnconvin(hx)

            hx1 = self.rebnconv1(hxin)
            hx2 = self.rebnconv2(hx1)

            hx1d = self.rebnconv1d(torch.cat((hx2, hx1), 1))

            return hx1d + hxin

    ##### U^2-Net small ####
    class U2NETP(nn.Module):

        def __init__(self, in_ch=3, out_ch=1):
            super(U2NETP, self).__init__()

            self.stage1 = RSU4(in_ch, 4, 6)
            self.pool12 = nn.MaxPool2d(2, stride=2, ceil_mode=True)

            self.stage2 = RSU4F(6, 4, 6)

            # decoder
            self.stage1d = RSU4F(12, 4, 6)

            self.side1 = nn.Conv2d(6, out_ch, 3, padding=1)
            self.side2 = nn.Conv2d(6, out_ch, 3, padding=1)

            self.outconv = nn.Conv2d(2 * out_ch, out_ch, 1)

        def forward(self, x):

            hx = x

            # stage 1
            hx1 = self.stage1(hx)
            hx = self.pool12(hx1)

            # stage 2
            hx2 = self.stage2(hx)
            hx2up = _upsample_like(hx2, hx1)

            # decoder
            hx1d = self.stage1d(torch.cat((hx2up, hx1), 1))

            # side output
            d1 = self.side1(hx1d)

            d2 = self.side2(hx2)
            d2 = _upsample_like(d2, d1)

            d0 = self.outconv(torch.cat((d1, d2), 1))

            return F.sigmoid(d0), F.sigmoid(d1), F.sigmoid(d2)

    bce_loss = nn.BCELoss(size_average=True)

    def muti_bce_loss_fusion(d0, d1, d2, labels_v):

        loss0 = bce_loss(d0, labels_v)
        loss1 = bce_loss(d1, labels_v)
        loss2 = bce_loss(d2, labels_v)

        loss = loss0 + loss1 + loss2
        print("l0: %3f, l1: %3f, l2: %3f\n" % (loss0.data.item(), loss1.data.item(), loss2.data.item()))

        return loss0, loss

    # normalize the predicted SOD probability map
    def normPRED(d):
        ma = torch.max(d)
        mi = torch.min(d)

        dn = (d - mi) / (ma - mi)

        return dn

    net = U2NETP(3, 1)
    init = load(m, net, state)
    for module in net.modules():
        if isinstance(module, REBNCONV):
            module.conv_s1.bias.requires_grad_(False)  # before BatchNorm: a gradient of rounding, which Adam scales up
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, net.parameters()), lr=0.001, betas=(0.9, 0.999),
                                 eps=1e-08, weight_decay=0)
    image = normal(rng, 2, 3, 7, 7)
    label = (rng.random((2, 1, 7, 7)) > 0.5).astype(np.float32)
    losses = []
    for i in range(1):
        inputs, labels = torch.tensor(image), torch.tensor(label)
        inputs = inputs.type(torch.FloatTensor)
        labels = labels.type(torch.FloatTensor)
        inputs_v, labels_v = Variable(inputs, requires_grad=False), Variable(labels, requires_grad=False)

        # y zero the parameter gradients
        optimizer.zero_grad()

        # forward + backward + optimize
        d0, d1, d2 = net(inputs_v)
        loss2, loss = muti_bce_loss_fusion(d0, d1, d2, labels_v)

        loss.backward()
        optimizer.step()

        # # print statistics
        running_loss = loss.data.item()
        running_tar_loss = loss2.data.item()

        # del temporary outputs and loss
        del d0, d1, d2, loss2, loss
        losses += [running_loss, running_tar_loss]
    net.eval()
    with torch.no_grad():
        d1, d2, d3 = net(torch.tensor(image))
        pred = normPRED(d1[:, 0, :, :])
    losses += [pred.mean().item(), pred.max().item()]
    return init, losses + summary(net.parameters())


def test_u2net():
    compare(u2net)


# (l) junyanz's pytorch-CycleGAN-and-pix2pix, pix2pix's half: get_norm_layer by functools.partial(nn.BatchNorm2d,
# affine=True, track_running_stats=True), UnetGenerator built inside out of UnetSkipConnectionBlocks (use_bias from
# norm_layer.func == nn.InstanceNorm2d, the innermost block's LeakyReLU(0.2, True) writing in place into the input that
# its parent's torch.cat([x, self.model(x)], 1) then reads), NLayerDiscriminator (PatchGAN), GANLoss('vanilla') with
# its label buffers expand_as'd into BCEWithLogitsLoss, init_weights by net.apply(init_func) over classname.find,
# Pix2PixModel's backward_D (fake_AB.detach(), the average of both terms) and backward_G (GAN plus lambda_L1 * L1),
# set_requires_grad, LambdaLR's linear decay rule, get_current_losses by getattr(self, 'loss_' + name)
def pix2pix(m, state=None):
    torch, nn = m.torch, m.nn
    import functools
    torch.manual_seed(11)
    rng = np.random.default_rng(11)

    def get_norm_layer(norm_type='instance'):
        if norm_type == 'batch':
            norm_layer = functools.partial(nn.BatchNorm2d, affine=True, track_running_stats=True)
        elif norm_type == 'instance':
            norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
        elif norm_type == 'none':
            def norm_layer(x):
                return nn.Identity()
        else:
            raise NotImplementedError('normalization layer [%s] is not found' % norm_type)
        return norm_layer

    def init_weights(net, init_type='normal', init_gain=0.02):
        def init_func(m_):  # define the initialization function
            classname = m_.__class__.__name__
            if hasattr(m_, 'weight') and (classname.find('Conv') != -1 or classname.find('Linear') != -1):
                if init_type == 'normal':
                    nn.init.normal_(m_.weight.data, 0.0, init_gain)
                elif init_type == 'xavier':
                    nn.init.xavier_normal_(m_.weight.data, gain=init_gain)
                if hasattr(m_, 'bias') and m_.bias is not None:
                    nn.init.constant_(m_.bias.data, 0.0)
            elif classname.find('BatchNorm2d') != -1:  # BatchNorm Layer's weight is not a matrix; only normal distribution applies.
                nn.init.normal_(m_.weight.data, 1.0, init_gain)
                nn.init.constant_(m_.bias.data, 0.0)

        net.apply(init_func)  # apply the initialization function <init_func>

    class UnetGenerator(nn.Module):
        """Create a Unet-based generator"""

        def __init__(self, input_nc, output_nc, num_downs, ngf=64, norm_layer=nn.BatchNorm2d, use_dropout=False):
            super(UnetGenerator, self).__init__()
            # construct unet structure
            unet_block = UnetSkipConnectionBlock(ngf * 4, ngf * 4, input_nc=None, submodule=None, norm_layer=norm_layer, innermost=True)  # add the innermost layer
            for i in range(num_downs - 4):          # add intermediate layers with ngf * 8 filters
                unet_block = UnetSkipConnectionBlock(ngf * 4, ngf * 4, input_nc=None, submodule=unet_block, norm_layer=norm_layer, use_dropout=use_dropout)
            # gradually reduce the number of filters from ngf * 8 to ngf
            unet_block = UnetSkipConnectionBlock(ngf * 2, ngf * 4, input_nc=None, submodule=unet_block, norm_layer=norm_layer)
            unet_block = UnetSkipConnectionBlock(ngf, ngf * 2, input_nc=None, submodule=unet_block, norm_layer=norm_layer)
            self.model = UnetSkipConnectionBlock(output_nc, ngf, input_nc=input_nc, submodule=unet_block, outermost=True, norm_layer=norm_layer)  # add the outermost layer

        def forward(self, input):
            """Standard forward"""
            return self.model(input)

    class UnetSkipConnectionBlock(nn.Module):
        """Defines the Unet submodule with skip connection.
            X -------------------identity----------------------
            |-- downsampling -- |submodule| -- upsampling --|
        """

        def __init__(self, outer_nc, inner_nc, input_nc=None,
                     submodule=None, outermost=False, innermost=False, norm_layer=nn.BatchNorm2d, use_dropout=False):
            super(UnetSkipConnectionBlock, self).__init__()
            self.outermost = outermost
            if type(norm_layer) == functools.partial:
                use_bias = norm_layer.func == nn.InstanceNorm2d
            else:
                use_bias = norm_layer == nn.InstanceNorm2d
            if input_nc is None:
                input_nc = outer_nc
            downconv = nn.Conv2d(input_nc, inner_nc, kernel_size=4,
                                 stride=2, padding=1, bias=use_bias)
            downrelu = nn.LeakyReLU(0.2, True)
            downnorm = norm_layer(inner_nc)
            uprelu = nn.ReLU(True)
            upnorm = norm_layer(outer_nc)

            if outermost:
                upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc,
                                            kernel_size=4, stride=2,
                                            padding=1)
                down = [downconv]
                up = [uprelu, upconv, nn.Tanh()]
                model = down + [submodule] + up
            elif innermost:
                upconv = nn.ConvTranspose2d(inner_nc, outer_nc,
                                            kernel_size=4, stride=2,
                                            padding=1, bias=use_bias)
                down = [downrelu, downconv]
                up = [uprelu, upconv, upnorm]
                model = down + up
            else:
                upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc,
                                            kernel_size=4, stride=2,
                                            padding=1, bias=use_bias)
                down = [downrelu, downconv, downnorm]
                up = [uprelu, upconv, upnorm]

                if use_dropout:
                    model = down + [submodule] + up + [nn.Dropout(0.5)]
                else:
                    model = down + [submodule] + up

            self.model = nn.Sequential(*model)

        def forward(self, x):
            if self.outermost:
                return self.model(x)
            else:   # add skip connections
                return torch.cat([x, self.model(x)], 1)

    class NLayerDiscriminator(nn.Module):
        """Defines a PatchGAN discriminator"""

        def __init__(self, input_nc, ndf=64, n_layers=3, norm_layer=nn.BatchNorm2d):
            super(NLayerDiscriminator, self).__init__()
            if type(norm_layer) == functools.partial:  # no need to use bias as BatchNorm2d has affine parameters
                use_bias = norm_layer.func == nn.InstanceNorm2d
            else:
                use_bias = norm_layer == nn.InstanceNorm2d

            kw = 4
            padw = 1
            sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
            nf_mult = 1
            nf_mult_prev = 1
            for n in range(1, n_layers):  # gradually increase the number of filters
                nf_mult_prev = nf_mult
                nf_mult = min(2 ** n, 8)
                sequence += [
                    nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw, bias=use_bias),
                    norm_layer(ndf * nf_mult),
                    nn.LeakyReLU(0.2, True)
                ]

            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n_layers, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=1, padding=padw, bias=use_bias),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]

            sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]  # output 1 channel prediction map
            self.model = nn.Sequential(*sequence)

        def forward(self, input):
            """Standard forward."""
            return self.model(input)

    class GANLoss(nn.Module):
        def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0):
            super(GANLoss, self).__init__()
            self.register_buffer('real_label', torch.tensor(target_real_label))
            self.register_buffer('fake_label', torch.tensor(target_fake_label))
            self.gan_mode = gan_mode
            if gan_mode == 'lsgan':
                self.loss = nn.MSELoss()
            elif gan_mode == 'vanilla':
                self.loss = nn.BCEWithLogitsLoss()
            elif gan_mode in ['wgangp']:
                self.loss = None
            else:
                raise NotImplementedError('gan mode %s not implemented' % gan_mode)

        def get_target_tensor(self, prediction, target_is_real):
            if target_is_real:
                target_tensor = self.real_label
            else:
                target_tensor = self.fake_label
            return target_tensor.expand_as(prediction)

        def __call__(self, prediction, target_is_real):
            if self.gan_mode in ['lsgan', 'vanilla']:
                target_tensor = self.get_target_tensor(prediction, target_is_real)
                loss = self.loss(prediction, target_tensor)
            elif self.gan_mode == 'wgangp':
                if target_is_real:
                    loss = -prediction.mean()
                else:
                    loss = prediction.mean()
            return loss

    class Opt:
        n_epochs, n_epochs_decay, epoch_count, lambda_L1, lr, beta1 = 1, 2, 1, 100.0, 0.0002, 0.5

    opt = Opt()

    class Pix2PixModel:
        def __init__(self, opt):
            self.opt = opt
            self.loss_names = ['G_GAN', 'G_L1', 'D_real', 'D_fake']
            norm_layer = get_norm_layer('batch')
            self.netG = UnetGenerator(3, 3, 4, ngf=2, norm_layer=norm_layer, use_dropout=False)
            self.netD = NLayerDiscriminator(3 + 3, ndf=2, n_layers=1, norm_layer=norm_layer)
            init_weights(self.netG)
            init_weights(self.netD)
            self.criterionGAN = GANLoss('vanilla')
            self.criterionL1 = torch.nn.L1Loss()
            self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
            self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
            self.optimizers = [self.optimizer_G, self.optimizer_D]

            def lambda_rule(epoch):
                lr_l = 1.0 - max(0, epoch + opt.epoch_count - opt.n_epochs) / float(opt.n_epochs_decay + 1)
                return lr_l
            self.schedulers = [torch.optim.lr_scheduler.LambdaLR(o, lr_lambda=lambda_rule) for o in self.optimizers]

        def set_input(self, input):
            self.real_A = input['A']
            self.real_B = input['B']

        def forward(self):
            self.fake_B = self.netG(self.real_A)  # G(A)

        def backward_D(self):
            """Calculate GAN loss for the discriminator"""
            # Fake; stop backprop to the generator by detaching fake_B
            fake_AB = torch.cat((self.real_A, self.fake_B), 1)  # we use conditional GANs; we need to feed both input and output to the discriminator
            pred_fake = self.netD(fake_AB.detach())
            self.loss_D_fake = self.criterionGAN(pred_fake, False)
            # Real
            real_AB = torch.cat((self.real_A, self.real_B), 1)
            pred_real = self.netD(real_AB)
            self.loss_D_real = self.criterionGAN(pred_real, True)
            # combine loss and calculate gradients
            self.loss_D = (self.loss_D_fake + self.loss_D_real) * 0.5
            self.loss_D.backward()

        def backward_G(self):
            """Calculate GAN and L1 loss for the generator"""
            # First, G(A) should fake the discriminator
            fake_AB = torch.cat((self.real_A, self.fake_B), 1)
            pred_fake = self.netD(fake_AB)
            self.loss_G_GAN = self.criterionGAN(pred_fake, True)
            # Second, G(A) = B
            self.loss_G_L1 = self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_L1
            # combine loss and calculate gradients
            self.loss_G = self.loss_G_GAN + self.loss_G_L1
            self.loss_G.backward()

        def set_requires_grad(self, nets, requires_grad=False):
            if not isinstance(nets, list):
                nets = [nets]
            for net in nets:
                if net is not None:
                    for param in net.parameters():
                        param.requires_grad = requires_grad

        def optimize_parameters(self):
            self.forward()                   # compute fake images: G(A)
            # update D
            self.set_requires_grad(self.netD, True)  # enable backprop for D
            self.optimizer_D.zero_grad()     # set D's gradients to zero
            self.backward_D()                # calculate gradients for D
            self.optimizer_D.step()          # update D's weights
            # update G
            self.set_requires_grad(self.netD, False)  # D requires no gradients when optimizing G
            self.optimizer_G.zero_grad()        # set G's gradients to zero
            self.backward_G()                   # calculate graidents for G
            self.optimizer_G.step()             # update G's weights

        def update_learning_rate(self):
            old_lr = self.optimizers[0].param_groups[0]['lr']
            for scheduler in self.schedulers:
                scheduler.step()
            lr = self.optimizers[0].param_groups[0]['lr']
            return old_lr, lr

        def get_current_losses(self):
            from collections import OrderedDict
            errors_ret = OrderedDict()
            for name in self.loss_names:
                if isinstance(name, str):
                    errors_ret[name] = float(getattr(self, 'loss_' + name))  # float(...) works for both scalar tensor and float number
            return errors_ret

    model = Pix2PixModel(opt)
    both = nn.ModuleList([model.netG, model.netD])
    init = load(m, both, state)
    data = {'A': torch.tensor(np.tanh(normal(rng, 2, 3, 16, 16))), 'B': torch.tensor(np.tanh(normal(rng, 2, 3, 16, 16)))}
    losses = []
    for epoch in range(opt.epoch_count, 3):
        model.set_input(data)
        model.optimize_parameters()
        losses += list(model.get_current_losses().values())
        losses += list(model.update_learning_rate())
    return init, losses + summary(both.parameters()) + summary(both.buffers())


def test_pix2pix():
    compare(pix2pix)


# (m) sooftware's conformer (modules.py, convolution.py, attention.py, feed_forward.py, encoder.py): Linear with
# xavier_uniform_ and zeros_, Swish, GLU by chunk(2, dim=) and sigmoid, Transpose(shape=(1, 2)), DepthwiseConv1d
# (groups=in_channels) and PointwiseConv1d, ConformerConvModule's LayerNorm, GLU, BatchNorm1d and Swish,
# FeedForwardModule as a half-step ResidualConnectionModule(module_factor=0.5), PositionalEncoding's pe buffer
# (pe[:, 0::2] = torch.sin(position * div_term)), RelativeMultiHeadAttention with u_bias and v_bias as
# nn.Parameter(torch.Tensor(heads, d_head)) under xavier_uniform_, _relative_shift by new_zeros, cat and view, a
# masked_fill_ of padded keys; Conv2dSubampling's output_lengths = input_lengths >> 2 and -= 1 in place; a CTC head
# (log_softmax, transpose(0, 1), nn.CTCLoss(blank=0, zero_infinity=True)); SpecAugment's masks from numpy. The key
# projection's bias is frozen: softmax ignores it, so its gradient is rounding alone, which Adam would scale up
def conformer(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_ = nn.init
    torch.manual_seed(12)
    rng = np.random.default_rng(12)

    class Linear(nn.Module):
        """
        Wrapper class of torch.nn.Linear
        Weight initialize by xavier initialization and bias initialize to zeros.
        """
        def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
            super(Linear, self).__init__()
            self.linear = nn.Linear(in_features, out_features, bias=bias)
            init_.xavier_uniform_(self.linear.weight)
            if bias:
                init_.zeros_(self.linear.bias)

        def forward(self, x):
            return self.linear(x)

    class Swish(nn.Module):
        def __init__(self):
            super(Swish, self).__init__()

        def forward(self, inputs):
            return inputs * inputs.sigmoid()

    class GLU(nn.Module):
        def __init__(self, dim: int) -> None:
            super(GLU, self).__init__()
            self.dim = dim

        def forward(self, inputs):
            outputs, gate = inputs.chunk(2, dim=self.dim)
            return outputs * gate.sigmoid()

    class Transpose(nn.Module):
        """ Wrapper class of torch.transpose() for Sequential module. """
        def __init__(self, shape: tuple):
            super(Transpose, self).__init__()
            self.shape = shape

        def forward(self, x):
            return x.transpose(*self.shape)

    class ResidualConnectionModule(nn.Module):
        def __init__(self, module: nn.Module, module_factor: float = 1.0, input_factor: float = 1.0):
            super(ResidualConnectionModule, self).__init__()
            self.module = module
            self.module_factor = module_factor
            self.input_factor = input_factor

        def forward(self, inputs):
            return (self.module(inputs) * self.module_factor) + (inputs * self.input_factor)

    class DepthwiseConv1d(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=False):
            super(DepthwiseConv1d, self).__init__()
            assert out_channels % in_channels == 0, "out_channels should be constant multiple of in_channels"
            self.conv = nn.Conv1d(
                in_channels=in_channels,
                out_channels=out_channels,
                kernel_size=kernel_size,
                groups=in_channels,
                stride=stride,
                padding=padding,
                bias=bias,
            )

        def forward(self, inputs):
            return self.conv(inputs)

    class PointwiseConv1d(nn.Module):
        def __init__(self, in_channels, out_channels, stride=1, padding=0, bias=True):
            super(PointwiseConv1d, self).__init__()
            self.conv = nn.Conv1d(
                in_channels=in_channels,
                out_channels=out_channels,
                kernel_size=1,
                stride=stride,
                padding=padding,
                bias=bias,
            )

        def forward(self, inputs):
            return self.conv(inputs)

    class ConformerConvModule(nn.Module):
        def __init__(self, in_channels, kernel_size=31, expansion_factor=2, dropout_p=0.1):
            super(ConformerConvModule, self).__init__()
            assert (kernel_size - 1) % 2 == 0, "kernel_size should be a odd number for 'SAME' padding"
            assert expansion_factor == 2, "Currently, Only Supports expansion_factor 2"

            self.sequential = nn.Sequential(
                nn.LayerNorm(in_channels),
                Transpose(shape=(1, 2)),
                PointwiseConv1d(in_channels, in_channels * expansion_factor, stride=1, padding=0, bias=True),
                GLU(dim=1),
                DepthwiseConv1d(in_channels, in_channels, kernel_size, stride=1, padding=(kernel_size - 1) // 2),
                nn.BatchNorm1d(in_channels),
                Swish(),
                PointwiseConv1d(in_channels, in_channels, stride=1, padding=0, bias=True),
                nn.Dropout(p=dropout_p),
            )

        def forward(self, inputs):
            return self.sequential(inputs).transpose(1, 2)

    class Conv2dSubampling(nn.Module):
        def __init__(self, in_channels: int, out_channels: int) -> None:
            super(Conv2dSubampling, self).__init__()
            self.sequential = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=2),
                nn.ReLU(),
                nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=2),
                nn.ReLU(),
            )

        def forward(self, inputs, input_lengths):
            outputs = self.sequential(inputs.unsqueeze(1))
            batch_size, channels, subsampled_lengths, sumsampled_dim = outputs.size()

            outputs = outputs.permute(0, 2, 1, 3)
            outputs = outputs.contiguous().view(batch_size, subsampled_lengths, channels * sumsampled_dim)

            output_lengths = input_lengths >> 2
            output_lengths -= 1

            return outputs, output_lengths

    class FeedForwardModule(nn.Module):
        def __init__(self, encoder_dim: int = 512, expansion_factor: int = 4, dropout_p: float = 0.1) -> None:
            super(FeedForwardModule, self).__init__()
            self.sequential = nn.Sequential(
                nn.LayerNorm(encoder_dim),
                Linear(encoder_dim, encoder_dim * expansion_factor, bias=True),
                Swish(),
                nn.Dropout(p=dropout_p),
                Linear(encoder_dim * expansion_factor, encoder_dim, bias=True),
                nn.Dropout(p=dropout_p),
            )

        def forward(self, inputs):
            return self.sequential(inputs)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model: int = 512, max_len: int = 10000) -> None:
            super(PositionalEncoding, self).__init__()
            pe = torch.zeros(max_len, d_model, requires_grad=False)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0)
            self.register_buffer('pe', pe)

        def forward(self, length: int):
            return self.pe[:, :length]

    class RelativeMultiHeadAttention(nn.Module):
        def __init__(self, d_model: int = 512, num_heads: int = 16, dropout_p: float = 0.1):
            super(RelativeMultiHeadAttention, self).__init__()
            assert d_model % num_heads == 0, "d_model % num_heads should be zero."
            self.d_model = d_model
            self.d_head = int(d_model / num_heads)
            self.num_heads = num_heads
            self.sqrt_dim = math.sqrt(d_model)

            self.query_proj = Linear(d_model, d_model)
            self.key_proj = Linear(d_model, d_model)
            self.value_proj = Linear(d_model, d_model)
            self.pos_proj = Linear(d_model, d_model, bias=False)

            self.dropout = nn.Dropout(p=dropout_p)
            self.u_bias = nn.Parameter(torch.Tensor(self.num_heads, self.d_head))
            self.v_bias = nn.Parameter(torch.Tensor(self.num_heads, self.d_head))
            torch.nn.init.xavier_uniform_(self.u_bias)
            torch.nn.init.xavier_uniform_(self.v_bias)

            self.out_proj = Linear(d_model, d_model)

        def forward(self, query, key, value, pos_embedding, mask=None):
            batch_size = value.size(0)

            query = self.query_proj(query).view(batch_size, -1, self.num_heads, self.d_head)
            key = self.key_proj(key).view(batch_size, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
            value = self.value_proj(value).view(batch_size, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
            pos_embedding = self.pos_proj(pos_embedding).view(batch_size, -1, self.num_heads, self.d_head)

            content_score = torch.matmul((query + self.u_bias).transpose(1, 2), key.transpose(2, 3))
            pos_score = torch.matmul((query + self.v_bias).transpose(1, 2), pos_embedding.permute(0, 2, 3, 1))
            pos_score = self._relative_shift(pos_score)

            score = (content_score + pos_score) / self.sqrt_dim

            if mask is not None:
                mask = mask.unsqueeze(1)
                score.masked_fill_(mask, -1e9)

            attn = F.softmax(score, -1)
            attn = self.dropout(attn)

            context = torch.matmul(attn, value).transpose(1, 2)
            context = context.contiguous().view(batch_size, -1, self.d_model)

            return self.out_proj(context)

        def _relative_shift(self, pos_score):
            batch_size, num_heads, seq_length1, seq_length2 = pos_score.size()
            zeros = pos_score.new_zeros(batch_size, num_heads, seq_length1, 1)
            padded_pos_score = torch.cat([zeros, pos_score], dim=-1)

            padded_pos_score = padded_pos_score.view(batch_size, num_heads, seq_length2 + 1, seq_length1)
            pos_score = padded_pos_score[:, :, 1:].view_as(pos_score)

            return pos_score

    class MultiHeadedSelfAttentionModule(nn.Module):
        def __init__(self, d_model: int, num_heads: int, dropout_p: float = 0.1):
            super(MultiHeadedSelfAttentionModule, self).__init__()
            self.positional_encoding = PositionalEncoding(d_model)
            self.layer_norm = nn.LayerNorm(d_model)
            self.attention = RelativeMultiHeadAttention(d_model, num_heads, dropout_p)
            self.dropout = nn.Dropout(p=dropout_p)

        def forward(self, inputs, mask=None):
            batch_size, seq_length, _ = inputs.size()
            pos_embedding = self.positional_encoding(seq_length)
            pos_embedding = pos_embedding.repeat(batch_size, 1, 1)

            inputs = self.layer_norm(inputs)
            outputs = self.attention(inputs, inputs, inputs, pos_embedding=pos_embedding, mask=mask)

            return self.dropout(outputs)

    class ConformerBlock(nn.Module):
        def __init__(self, encoder_dim=512, num_attention_heads=8, feed_forward_expansion_factor=4,
                     conv_expansion_factor=2, feed_forward_dropout_p=0.1, attention_dropout_p=0.1,
                     conv_dropout_p=0.1, conv_kernel_size=31, half_step_residual=True):
            super(ConformerBlock, self).__init__()
            if half_step_residual:
                self.feed_forward_residual_factor = 0.5
            else:
                self.feed_forward_residual_factor = 1

            self.sequential = nn.Sequential(
                ResidualConnectionModule(
                    module=FeedForwardModule(encoder_dim=encoder_dim, expansion_factor=feed_forward_expansion_factor,
                                             dropout_p=feed_forward_dropout_p),
                    module_factor=self.feed_forward_residual_factor,
                ),
                ResidualConnectionModule(
                    module=MultiHeadedSelfAttentionModule(d_model=encoder_dim, num_heads=num_attention_heads,
                                                          dropout_p=attention_dropout_p),
                ),
                ResidualConnectionModule(
                    module=ConformerConvModule(in_channels=encoder_dim, kernel_size=conv_kernel_size,
                                               expansion_factor=conv_expansion_factor, dropout_p=conv_dropout_p),
                ),
                ResidualConnectionModule(
                    module=FeedForwardModule(encoder_dim=encoder_dim, expansion_factor=feed_forward_expansion_factor,
                                             dropout_p=feed_forward_dropout_p),
                    module_factor=self.feed_forward_residual_factor,
                ),
                nn.LayerNorm(encoder_dim),
            )

        def forward(self, inputs):
            return self.sequential(inputs)

    class Conformer(nn.Module):
        def __init__(self, num_classes, input_dim=80, encoder_dim=512):
            super(Conformer, self).__init__()
            self.conv_subsample = Conv2dSubampling(in_channels=1, out_channels=encoder_dim)
            self.input_projection = nn.Sequential(
                Linear(encoder_dim * (((input_dim - 1) // 2 - 1) // 2), encoder_dim),
                nn.Dropout(p=0.0),
            )
            self.layers = nn.ModuleList([ConformerBlock(encoder_dim=encoder_dim, num_attention_heads=2,
                                                        feed_forward_expansion_factor=2, conv_kernel_size=3,
                                                        feed_forward_dropout_p=0.0, attention_dropout_p=0.0,
                                                        conv_dropout_p=0.0)])
            self.fc = Linear(encoder_dim, num_classes, bias=False)

        def forward(self, inputs, input_lengths):
            outputs, output_lengths = self.conv_subsample(inputs, input_lengths)
            outputs = self.input_projection(outputs)
            for layer in self.layers:
                outputs = layer(outputs)
            outputs = self.fc(outputs)
            outputs = nn.functional.log_softmax(outputs, dim=-1)
            return outputs, output_lengths

    def spec_augment(feature, freq_mask_para=3, time_mask_num=1, freq_mask_num=1):
        time_axis_length = feature.size(0)
        freq_axis_length = feature.size(1)
        time_mask_para = time_axis_length / 20  # Refer to "Specaugment on large scale dataset" paper

        # time mask
        for _ in range(time_mask_num):
            t = int(rng.uniform(low=0.0, high=max(time_mask_para, 2)))
            t0 = rng.integers(0, time_axis_length - t)
            feature[t0: t0 + t, :] = 0

        # freq mask
        for _ in range(freq_mask_num):
            f = int(rng.uniform(low=0.0, high=freq_mask_para))
            f0 = rng.integers(0, freq_axis_length - f)
            feature[:, f0: f0 + f] = 0

        return feature

    model = Conformer(num_classes=5, input_dim=11, encoder_dim=4)
    init = load(m, model, state)
    for block in model.layers:
        block.sequential[1].module.attention.key_proj.linear.bias.requires_grad_(False)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3, betas=(0.9, 0.98),
                                 eps=1e-9)
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)
    feats = [spec_augment(torch.tensor(normal(rng, 21, 11))) for _ in range(2)]
    inputs = torch.stack(feats)
    input_lengths = torch.LongTensor([21, 17])
    targets = torch.LongTensor([[1, 2], [3, 3]])
    target_lengths = torch.LongTensor([2, 1])
    losses = []
    for _ in range(1):
        outputs, output_lengths = model(inputs, input_lengths)
        loss = criterion(outputs.transpose(0, 1), targets, output_lengths, target_lengths)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()] + output_lengths.tolist()
    pad_mask = torch.arange(4)[None, None, :] >= output_lengths[:, None, None]
    attention = model.layers[0].sequential[1].module
    hidden = torch.tensor(normal(rng, 2, 4, 4))
    masked = attention.attention(hidden, hidden, hidden, attention.positional_encoding(4).repeat(2, 1, 1), pad_mask)
    losses += [masked.abs().sum().item(), input_lengths.tolist()[1]]
    return init, losses + summary(model.parameters())


def test_conformer():
    compare(conformer)


# (n) xinntao's ESRGAN and BasicSR (RRDBNet_arch.py: ResidualDenseBlock_5C's dense torch.cat((x, x1, x2, ...), 1)
# under LeakyReLU(negative_slope=0.2, inplace=True) and x5 * 0.2 + x, RRDB of three blocks, make_layer over
# functools.partial(RRDB, nf=nf, gc=gc), F.interpolate(scale_factor=2, mode='nearest') twice; module_util's
# initialize_weights (kaiming_normal_(a=0, mode='fan_in') then m.weight.data *= scale and bias.data.zero_()); SRGAN_model's
# relativistic GAN losses (cri_gan(pred_d_real - torch.mean(pred_g_fake), False), pred_d_real's .detach()), the pixel
# L1 with l_pix_w, Adam(betas=(0.9, 0.99)) under MultiStepLR, the discriminator's step on fake_H.detach(); util's
# calculate_psnr of np.uint8 images by tensor2img's clamp_, (max - min) scaling and transpose to HWC
def esrgan(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import functools
    torch.manual_seed(13)
    rng = np.random.default_rng(13)

    def initialize_weights(net_l, scale=1):
        if not isinstance(net_l, list):
            net_l = [net_l]
        for net in net_l:
            for m_ in net.modules():
                if isinstance(m_, nn.Conv2d):
                    nn.init.kaiming_normal_(m_.weight, a=0, mode='fan_in')
                    m_.weight.data *= scale  # for residual block
                    if m_.bias is not None:
                        m_.bias.data.zero_()
                elif isinstance(m_, nn.Linear):
                    nn.init.kaiming_normal_(m_.weight, a=0, mode='fan_in')
                    m_.weight.data *= scale
                    if m_.bias is not None:
                        m_.bias.data.zero_()

    def make_layer(block, n_layers):
        layers = []
        for _ in range(n_layers):
            layers.append(block())
        return nn.Sequential(*layers)

    class ResidualDenseBlock_5C(nn.Module):
        def __init__(self, nf=64, gc=32, bias=True):
            super(ResidualDenseBlock_5C, self).__init__()
            # gc: growth channel, i.e. intermediate channels
            self.conv1 = nn.Conv2d(nf, gc, 3, 1, 1, bias=bias)
            self.conv2 = nn.Conv2d(nf + gc, gc, 3, 1, 1, bias=bias)
            self.conv3 = nn.Conv2d(nf + 2 * gc, gc, 3, 1, 1, bias=bias)
            self.conv4 = nn.Conv2d(nf + 3 * gc, gc, 3, 1, 1, bias=bias)
            self.conv5 = nn.Conv2d(nf + 4 * gc, nf, 3, 1, 1, bias=bias)
            self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

            # initialization
            initialize_weights([self.conv1, self.conv2, self.conv3, self.conv4, self.conv5], 0.1)

        def forward(self, x):
            x1 = self.lrelu(self.conv1(x))
            x2 = self.lrelu(self.conv2(torch.cat((x, x1), 1)))
            x3 = self.lrelu(self.conv3(torch.cat((x, x1, x2), 1)))
            x4 = self.lrelu(self.conv4(torch.cat((x, x1, x2, x3), 1)))
            x5 = self.conv5(torch.cat((x, x1, x2, x3, x4), 1))
            return x5 * 0.2 + x

    class RRDB(nn.Module):
        '''Residual in Residual Dense Block'''

        def __init__(self, nf, gc=32):
            super(RRDB, self).__init__()
            self.RDB1 = ResidualDenseBlock_5C(nf, gc)
            self.RDB2 = ResidualDenseBlock_5C(nf, gc)
            self.RDB3 = ResidualDenseBlock_5C(nf, gc)

        def forward(self, x):
            out = self.RDB1(x)
            out = self.RDB2(out)
            out = self.RDB3(out)
            return out * 0.2 + x

    class RRDBNet(nn.Module):
        def __init__(self, in_nc, out_nc, nf, nb, gc=32):
            super(RRDBNet, self).__init__()
            RRDB_block_f = functools.partial(RRDB, nf=nf, gc=gc)

            self.conv_first = nn.Conv2d(in_nc, nf, 3, 1, 1, bias=True)
            self.RRDB_trunk = make_layer(RRDB_block_f, nb)
            self.trunk_conv = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
            #### upsampling
            self.upconv1 = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
            self.upconv2 = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
            self.HRconv = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
            self.conv_last = nn.Conv2d(nf, out_nc, 3, 1, 1, bias=True)

            self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

        def forward(self, x):
            fea = self.conv_first(x)
            trunk = self.trunk_conv(self.RRDB_trunk(fea))
            fea = fea + trunk

            fea = self.lrelu(self.upconv1(F.interpolate(fea, scale_factor=2, mode='nearest')))
            fea = self.lrelu(self.upconv2(F.interpolate(fea, scale_factor=2, mode='nearest')))
            out = self.conv_last(self.lrelu(self.HRconv(fea)))

            return out

    class Discriminator(nn.Module):
        def __init__(self, in_nc, nf):
            super(Discriminator, self).__init__()
            self.conv0_0 = nn.Conv2d(in_nc, nf, 3, 1, 1, bias=True)
            self.conv0_1 = nn.Conv2d(nf, nf, 4, 2, 1, bias=True)
            self.linear1 = nn.Linear(nf * 4 * 4, 1)
            self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

        def forward(self, x):
            fea = self.lrelu(self.conv0_0(x))
            fea = self.lrelu(self.conv0_1(fea))
            fea = fea.view(fea.size(0), -1)
            return self.linear1(fea)

    class GANLoss(nn.Module):
        def __init__(self, gan_type, real_label_val=1.0, fake_label_val=0.0):
            super(GANLoss, self).__init__()
            self.gan_type = gan_type.lower()
            self.real_label_val = real_label_val
            self.fake_label_val = fake_label_val
            if self.gan_type == 'gan' or self.gan_type == 'ragan':
                self.loss = nn.BCEWithLogitsLoss()
            elif self.gan_type == 'lsgan':
                self.loss = nn.MSELoss()

        def get_target_label(self, input, target_is_real):
            if target_is_real:
                return torch.empty_like(input).fill_(self.real_label_val)
            else:
                return torch.empty_like(input).fill_(self.fake_label_val)

        def forward(self, input, target_is_real):
            target_label = self.get_target_label(input, target_is_real)
            loss = self.loss(input, target_label)
            return loss

    def tensor2img(tensor, out_type=np.uint8, min_max=(0, 1)):
        tensor = tensor.squeeze().float().cpu().clamp_(*min_max)  # clamp
        tensor = (tensor - min_max[0]) / (min_max[1] - min_max[0])  # to range [0,1]
        img_np = tensor.numpy()
        img_np = np.transpose(img_np[[2, 1, 0], :, :], (1, 2, 0))  # HWC, BGR
        if out_type == np.uint8:
            img_np = (img_np * 255.0).round()
        return img_np.astype(out_type)

    def calculate_psnr(img1, img2):
        # img1 and img2 have range [0, 255]
        img1 = img1.astype(np.float64)
        img2 = img2.astype(np.float64)
        mse = np.mean((img1 - img2)**2)
        if mse == 0:
            return float('inf')
        return 20 * math.log10(255.0 / math.sqrt(mse))

    netG = RRDBNet(3, 3, nf=4, nb=1, gc=2)
    netD = Discriminator(3, 2)
    both = nn.ModuleList([netG, netD])
    init = load(m, both, state)
    cri_pix = nn.L1Loss()
    l_pix_w, l_gan_w = 1e-2, 5e-3
    cri_gan = GANLoss('ragan', 1.0, 0.0)
    optimizer_G = torch.optim.Adam(netG.parameters(), lr=1e-4, weight_decay=0, betas=(0.9, 0.99))
    optimizer_D = torch.optim.Adam(netD.parameters(), lr=1e-4, weight_decay=0, betas=(0.9, 0.99))
    schedulers = [torch.optim.lr_scheduler.MultiStepLR(o, [1], 0.5) for o in (optimizer_G, optimizer_D)]
    var_L = torch.tensor(rng.random((2, 3, 2, 2)).astype(np.float32))
    var_ref = torch.tensor(rng.random((2, 3, 8, 8)).astype(np.float32))
    losses = []
    for step in range(1):
        # G
        for p in netD.parameters():
            p.requires_grad = False

        optimizer_G.zero_grad()
        fake_H = netG(var_L)

        l_g_total = 0
        l_g_pix = l_pix_w * cri_pix(fake_H, var_ref)
        l_g_total += l_g_pix
        pred_g_fake = netD(fake_H)
        pred_d_real = netD(var_ref).detach()
        l_g_gan = l_gan_w * (cri_gan(pred_d_real - torch.mean(pred_g_fake), False) +
                             cri_gan(pred_g_fake - torch.mean(pred_d_real), True)) / 2
        l_g_total += l_g_gan

        l_g_total.backward()
        optimizer_G.step()

        # D
        for p in netD.parameters():
            p.requires_grad = True

        optimizer_D.zero_grad()
        pred_d_real = netD(var_ref)
        pred_d_fake = netD(fake_H.detach())  # detach to avoid BP to G
        l_d_real = cri_gan(pred_d_real - torch.mean(pred_d_fake), True)
        l_d_fake = cri_gan(pred_d_fake - torch.mean(pred_d_real), False)
        l_d_total = (l_d_real + l_d_fake) / 2
        l_d_total.backward()
        optimizer_D.step()
        for scheduler in schedulers:
            scheduler.step()
        losses += [l_g_pix.item(), l_g_gan.item(), l_d_real.item(), l_d_fake.item(),
                   torch.mean(pred_d_real.detach()).item(), optimizer_G.param_groups[0]['lr']]
    with torch.no_grad():
        sr_img = tensor2img(netG(var_L)[0])
    gt_img = tensor2img(var_ref[0])
    losses += [calculate_psnr(sr_img, gt_img), float(sr_img.sum())]
    return init, losses + summary(both.parameters())


def test_esrgan():
    compare(esrgan)


# (o) lucidrains' linformer (linformer.py and reversible.py): init_ by tensor.uniform_(-std, std) on torch.zeros(seq_len,
# k) wrapped in nn.Parameter, keys and values projected along the sequence by torch.einsum('bnd,nk->bkd', *args) over a
# map of zip((keys, values), kv_projs), projections sliced for a shorter sequence by map(lambda t: t[:kv_len], ...),
# one_kv_head and share_kv (keys reshaped to one head and expand(-1, h, -1, -1)), attention by einsum with
# dots.softmax(dim=-1), FeedForward with glu=True (chunk(2, dim=-1)), GELU = nn.GELU if hasattr(nn, 'GELU') else a
# tanh approximation, PreNorm, SequentialSequence's x = x + f(x) over (f, g) pairs of a ModuleList, LinformerLM's
# token and position embeddings (pos_emb(torch.arange(x.shape[1], device=x.device))); a language-model step by
# F.cross_entropy(logits.transpose(1, 2), targets) over the (N, C, L) layout
def linformer(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(14)
    rng = np.random.default_rng(14)

    def default(val, default_val):
        return val if val is not None else default_val

    def init_(tensor):
        dim = tensor.shape[-1]
        std = 1 / math.sqrt(dim)
        tensor.uniform_(-std, std)
        return tensor

    class PreNorm(nn.Module):
        def __init__(self, dim, fn):
            super().__init__()
            self.fn = fn
            self.norm = nn.LayerNorm(dim)

        def forward(self, x):
            x = self.norm(x)
            return self.fn(x)

    class GELU_(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))

    GELU = nn.GELU if hasattr(nn, 'GELU') else GELU_

    class FeedForward(nn.Module):
        def __init__(self, dim, mult=4, dropout=0., activation=None, glu=False):
            super().__init__()
            activation = default(activation, GELU)

            self.glu = glu
            self.w1 = nn.Linear(dim, dim * mult * (2 if glu else 1))
            self.act = activation()
            self.dropout = nn.Dropout(dropout)
            self.w2 = nn.Linear(dim * mult, dim)

        def forward(self, x, **kwargs):
            if not self.glu:
                x = self.w1(x)
                x = self.act(x)
            else:
                x, v = self.w1(x).chunk(2, dim=-1)
                x = self.act(x) * v

            x = self.dropout(x)
            x = self.w2(x)
            return x

    class LinformerSelfAttention(nn.Module):
        def __init__(self, dim, seq_len, k=256, heads=8, dim_head=None, one_kv_head=False, share_kv=False, dropout=0.):
            super().__init__()
            assert (dim % heads) == 0, 'dimension must be divisible by the number of heads'

            self.seq_len = seq_len
            self.k = k

            self.heads = heads

            dim_head = default(dim_head, dim // heads)
            self.dim_head = dim_head

            self.to_q = nn.Linear(dim, dim_head * heads, bias=False)

            kv_dim = dim_head if one_kv_head else (dim_head * heads)
            self.to_k = nn.Linear(dim, kv_dim, bias=False)
            self.proj_k = nn.Parameter(init_(torch.zeros(seq_len, k)))

            self.share_kv = share_kv
            if not share_kv:
                self.to_v = nn.Linear(dim, kv_dim, bias=False)
                self.proj_v = nn.Parameter(init_(torch.zeros(seq_len, k)))

            self.dropout = nn.Dropout(dropout)
            self.to_out = nn.Linear(dim_head * heads, dim)

        def forward(self, x, context=None, **kwargs):
            b, n, _, d_h, h, k = *x.shape, self.dim_head, self.heads, self.k

            kv_len = n if context is None else context.shape[1]
            assert kv_len <= self.seq_len, f'the sequence length of the key / values must be {self.seq_len} - {kv_len} given'

            queries = self.to_q(x)

            proj_seq_len = lambda args: torch.einsum('bnd,nk->bkd', *args)  # noqa: E731 (the source's spelling)

            kv_input = x if context is None else context

            keys = self.to_k(kv_input)
            values = self.to_v(kv_input) if not self.share_kv else keys

            kv_projs = (self.proj_k, self.proj_v if not self.share_kv else self.proj_k)

            # allow for variable sequence lengths (less than maximum sequence length) by slicing projections

            if kv_len < self.seq_len:
                kv_projs = map(lambda t: t[:kv_len], kv_projs)

            # project keys and values along the sequence length dimension to k

            keys, values = map(proj_seq_len, zip((keys, values), kv_projs))

            # merge head into batch for queries and key / values

            queries = queries.reshape(b, n, h, -1).transpose(1, 2)

            merge_key_values = lambda t: t.reshape(b, k, -1, d_h).transpose(1, 2).expand(-1, h, -1, -1)  # noqa: E731
            keys, values = map(merge_key_values, (keys, values))

            # attention

            dots = torch.einsum('bhnd,bhkd->bhnk', queries, keys) * (d_h ** -0.5)
            attn = dots.softmax(dim=-1)
            attn = self.dropout(attn)
            out = torch.einsum('bhnk,bhkd->bhnd', attn, values)

            # split heads
            out = out.transpose(1, 2).reshape(b, n, -1)
            return self.to_out(out)

    class SequentialSequence(nn.Module):
        def __init__(self, layers):
            super().__init__()
            self.layers = layers

        def forward(self, x):
            for (f, g) in self.layers:
                x = x + f(x)
                x = x + g(x)
            return x

    class Linformer(nn.Module):
        def __init__(self, dim, seq_len, depth, k=256, heads=8, dim_head=None, one_kv_head=False, share_kv=False,
                     reversible=False, dropout=0.):
            super().__init__()
            layers = nn.ModuleList([])
            for _ in range(depth):
                attn = LinformerSelfAttention(dim, seq_len, k=k, heads=heads, dim_head=dim_head,
                                              one_kv_head=one_kv_head, share_kv=share_kv, dropout=dropout)
                ff = FeedForward(dim, dropout=dropout, glu=True)

                layers.append(nn.ModuleList([
                    PreNorm(dim, attn),
                    PreNorm(dim, ff)
                ]))

            execute_type = SequentialSequence
            self.net = execute_type(layers)

        def forward(self, x):
            return self.net(x)

    class LinformerLM(nn.Module):
        def __init__(self, num_tokens, dim, seq_len, depth, k=256, heads=8, dim_head=None, one_kv_head=False,
                     share_kv=False, reversible=False, dropout=0.):
            super().__init__()
            self.token_emb = nn.Embedding(num_tokens, dim)
            self.pos_emb = nn.Embedding(seq_len, dim)
            self.linformer = Linformer(dim, seq_len, depth, k=k, heads=heads, dim_head=dim_head,
                                       one_kv_head=one_kv_head, share_kv=share_kv, reversible=reversible,
                                       dropout=dropout)
            self.to_logits = nn.Linear(dim, num_tokens)

        def forward(self, x):
            x = self.token_emb(x)
            x = self.pos_emb(torch.arange(x.shape[1], device=x.device)) + x
            x = self.linformer(x)
            out = self.to_logits(x)
            return out

    model = LinformerLM(num_tokens=11, dim=8, seq_len=8, depth=1, k=3, heads=2, one_kv_head=True, share_kv=True)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    tokens = torch.tensor(rng.integers(0, 11, (2, 7)))  # shorter than seq_len: the projections are sliced
    losses = []
    for _ in range(2):
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        logits = model(inputs)
        loss = F.cross_entropy(logits.transpose(1, 2), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        losses.append(model(tokens).argmax(dim=-1).float().mean().item())
    return init, losses + summary(model.parameters())


def test_linformer():
    compare(linformer)
