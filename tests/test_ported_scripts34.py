"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: weiaicunzhi's pytorch-cifar100 (its ResNeXt bottleneck of grouped convolutions, WarmUpLR
as an _LRScheduler subclass stepped per iteration in the warm epoch beside MultiStepLR stepped by epoch, accuracy by
preds.eq(labels).sum()); AutoAugment-style policies written on uint8 image tensors (posterize by bitwise_and,
solarize by torch.where, invert, autocontrast by amin/amax, equalize by a per-channel histc and cumsum lookup, a
shear by affine_grid and grid_sample) feeding a small CNN; eriklindernoren's InfoGAN (Tensor = torch.FloatTensor,
Variable, BatchNorm2d(c, 0.8), to_categorical by numpy, an info optimizer over itertools.chain of both nets) and
BEGAN (an autoencoder discriminator, k_t updated from the balance each step); Laine and Aila's temporal ensembling
(a Gaussian ramp-up, the ensemble Z updated in place with index_copy_ and its start-up bias corrected); Salimans'
minibatch discrimination layer with feature matching; magnitude pruning by hand (masks as buffers applied by a
register_forward_pre_hook, the gradients masked by a tensor hook); UDA's training signal annealing and confidence-
masked KL consistency (torch.max against a 0-d one); Huang et al.'s snapshot ensembles (a cyclic cosine LambdaLR,
copy.deepcopy of state_dicts loaded in turn); and clcarwin's FocalLoss (alpha by torch.Tensor, type() and type_as,
Variable(logpt.data.exp())) on a segmentation head. None found a gap in tnet. Each runs in tnet, then in torch from
tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers, agree.
Numpy draws what a script draws; shapes are tiny and runs take one or two steps. Where a bias sits right ahead of a
BatchNorm its gradient is zero but for rounding and Adam turns that noise into steps of +-lr, so the GANs' and the
temporal ensembling's summaries leave those biases out."""
import itertools

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) weiaicunzhi's pytorch-cifar100: models/resnext.py's bottleneck (1x1, a grouped 3x3 of cardinality C, 1x1,
# a projection shortcut), utils.WarmUpLR(_LRScheduler) whose get_lr scales base_lrs by last_epoch / total_iters,
# train.py's loop stepping it per batch while epoch <= args.warm and MultiStepLR(milestones, gamma=0.2) after
def cifar100_resnext_warmup(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    from_sched = m.lr_scheduler
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    CARDINALITY, DEPTH, BASEWIDTH = 2, 4, 4

    class ResNextBottleNeckC(nn.Module):
        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            C = CARDINALITY
            D = int(DEPTH * out_channels / BASEWIDTH)
            self.split_transforms = nn.Sequential(
                nn.Conv2d(in_channels, C * D, kernel_size=1, groups=C, bias=False),
                nn.BatchNorm2d(C * D),
                nn.ReLU(inplace=True),
                nn.Conv2d(C * D, C * D, kernel_size=3, stride=stride, groups=C, padding=1, bias=False),
                nn.BatchNorm2d(C * D),
                nn.ReLU(inplace=True),
                nn.Conv2d(C * D, out_channels * 4, kernel_size=1, bias=False),
                nn.BatchNorm2d(out_channels * 4),
            )
            self.shortcut = nn.Sequential()
            if stride != 1 or in_channels != out_channels * 4:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_channels, out_channels * 4, stride=stride, kernel_size=1, bias=False),
                    nn.BatchNorm2d(out_channels * 4))

        def forward(self, x):
            return nn.functional.relu(self.split_transforms(x) + self.shortcut(x))

    class ResNext(nn.Module):
        def __init__(self, block, num_blocks, class_names=10):
            super().__init__()
            self.in_channels = 8
            self.conv1 = nn.Sequential(nn.Conv2d(3, 8, 3, stride=1, padding=1, bias=False),
                                       nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            self.conv2 = self._make_layer(block, num_blocks[0], 2, 1)
            self.conv3 = self._make_layer(block, num_blocks[1], 4, 2)
            self.avg = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(4 * 4, class_names)

        def forward(self, x):
            x = self.conv1(x)
            x = self.conv2(x)
            x = self.conv3(x)
            x = self.avg(x)
            x = x.view(x.size(0), -1)
            return self.fc(x)

        def _make_layer(self, block, num_block, out_channels, stride):
            strides = [stride] + [1] * (num_block - 1)
            layers = []
            for stride in strides:
                layers.append(block(self.in_channels, out_channels, stride))
                self.in_channels = out_channels * 4
            return nn.Sequential(*layers)

    class WarmUpLR(from_sched._LRScheduler):
        """warmup_training learning rate scheduler
        Args:
            optimizer: optimzier(e.g. SGD)
            total_iters: totoal_iters of warmup phase
        """
        def __init__(self, optimizer, total_iters, last_epoch=-1):
            self.total_iters = total_iters
            super().__init__(optimizer, last_epoch)

        def get_lr(self):
            """we will use the first m batches, and set the learning
            rate to base_lr * m / total_iters
            """
            return [base_lr * self.last_epoch / (self.total_iters + 1e-8) for base_lr in self.base_lrs]

    net = ResNext(ResNextBottleNeckC, [1, 1])
    init = load(m, net, state)
    loss_function = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    train_scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.2)
    iter_per_epoch = 2
    warm = 1
    warmup_scheduler = WarmUpLR(optimizer, iter_per_epoch * warm)
    losses = []
    for epoch in range(1, 3):
        if epoch > warm:
            train_scheduler.step(epoch)
        net.train()
        for batch_index in range(iter_per_epoch):
            images = torch.tensor(normal(rng, 4, 3, 8, 8))
            labels = torch.tensor(rng.integers(0, 10, 4))
            optimizer.zero_grad()
            outputs = net(images)
            loss = loss_function(outputs, labels)
            loss.backward()
            optimizer.step()
            losses += [loss.item(), optimizer.param_groups[0]['lr']]
            if epoch <= warm:
                warmup_scheduler.step()
        net.eval()
        correct = 0.0
        with torch.no_grad():
            images = torch.tensor(normal(rng, 4, 3, 8, 8))
            labels = torch.tensor(rng.integers(0, 10, 4))
            outputs = net(images)
            _, preds = outputs.max(1)
            correct += preds.eq(labels).sum()
        losses += [float(correct) / 4, outputs.sum().item()]
    return init, losses + summary(net.parameters())


def test_cifar100_resnext_warmup():
    compare(cifar100_resnext_warmup)


# (b) AutoAugment / RandAugment operations as torchvision's functional_tensor writes them on uint8 (C, H, W) images:
# posterize img & -int(2 ** (8 - bits)) by bitwise_and, solarize torch.where(img >= threshold, 255 - img, img),
# invert 255 - img, autocontrast by the per-channel amin/amax and a clamp, equalize by a per-channel torch.histc,
# a cumulative lookup table and gather, a shear by F.affine_grid and F.grid_sample; a sub-policy picked by numpy;
# then the augmented batch normalised to float and one Adam step of a small CNN
def autoaugment_tensor_ops(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(2)

    def posterize(img, bits):
        mask = -int(2 ** (8 - bits))  # JIT-friendly for: ~(2 ** (8 - bits) - 1)
        return img & mask

    def solarize(img, threshold):
        return torch.where(img >= threshold, 255 - img, img)

    def invert(img):
        return 255 - img

    def autocontrast(img):
        bound = 255.0
        dtype = torch.float32
        minimum = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
        maximum = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
        scale = bound / (maximum - minimum)
        eq_idxs = torch.isfinite(scale).logical_not()
        minimum[eq_idxs] = 0.0
        scale[eq_idxs] = 1.0
        return ((img.to(dtype) - minimum) * scale).clamp(0, bound).to(img.dtype)

    def _scale_channel(img_chan):
        hist = torch.histc(img_chan.to(torch.float32), bins=256, min=0, max=255)
        nonzero_hist = hist[hist != 0]
        step = torch.div(nonzero_hist[:-1].sum(), 255, rounding_mode="floor")
        if step == 0:
            return img_chan
        lut = torch.div(torch.cumsum(hist, 0) + torch.div(step, 2, rounding_mode="floor"), step,
                        rounding_mode="floor")
        lut = torch.nn.functional.pad(lut, [1, 0])[:-1].clamp(0, 255)
        return lut[img_chan.to(torch.int64)].to(torch.uint8)

    def equalize(img):
        return torch.stack([_scale_channel(img[c]) for c in range(img.size(0))])

    def shear_x(img, magnitude):
        x = img.to(torch.float32).unsqueeze(0)
        theta = torch.tensor([[1.0, magnitude, 0.0], [0.0, 1.0, 0.0]]).unsqueeze(0)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        out = F.grid_sample(x, grid, mode="nearest", padding_mode="zeros", align_corners=False)
        return out.round().clamp(0, 255).to(torch.uint8).squeeze(0)

    policies = [
        [(posterize, 4), (solarize, 128)],
        [(lambda img, _: invert(img), None), (lambda img, _: equalize(img), None)],
        [(lambda img, _: autocontrast(img), None), (shear_x, 0.3)],
    ]

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 3))
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(3, 1, 1)
    std = torch.tensor([0.2470, 0.2435, 0.2616]).view(3, 1, 1)
    losses = []
    for step in range(2):
        raw = torch.tensor(rng.integers(0, 256, (3, 3, 6, 6)).astype(np.uint8))
        images = []
        for i in range(raw.size(0)):
            img = raw[i]
            for op, magnitude in policies[(step + i) % len(policies)]:
                img = op(img, magnitude)
            assert img.dtype == torch.uint8
            losses.append(int(img.to(torch.int64).sum()))
            images.append((img.float() / 255.0 - mean) / std)
        x = torch.stack(images)
        y = torch.tensor(rng.integers(0, 3, 3))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_autoaugment_tensor_ops():
    compare(autoaugment_tensor_ops)


# (c) eriklindernoren's PyTorch-GAN implementations/infogan: Tensor = torch.cuda.FloatTensor if cuda else
# torch.FloatTensor, Variable(Tensor(...).fill_(1.0), requires_grad=False) targets, to_categorical by numpy's
# one-hot, weights_init_normal through apply with classname.find, BatchNorm2d(c, 0.8) (eps given positionally),
# nn.Upsample(scale_factor=2), Dropout2d(0.25) (here 0), the discriminator's three heads, the info loss's optimizer
# over itertools.chain(generator.parameters(), discriminator.parameters())
def infogan(m, state=None):
    torch, nn = m.torch, m.nn
    from importlib import import_module
    Variable = import_module(torch.__name__ + ".autograd").Variable
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    latent_dim, n_classes, code_dim, img_size, channels, batch = 4, 3, 2, 8, 1, 3
    cuda = True if torch.cuda.is_available() else False

    def weights_init_normal(m_):
        classname = m_.__class__.__name__
        if classname.find("Conv") != -1:
            torch.nn.init.normal_(m_.weight.data, 0.0, 0.02)
        elif classname.find("BatchNorm") != -1:
            torch.nn.init.normal_(m_.weight.data, 1.0, 0.02)
            torch.nn.init.constant_(m_.bias.data, 0.0)

    def to_categorical(y, num_columns):
        """Returns one-hot encoded Variable"""
        y_cat = np.zeros((y.shape[0], num_columns))
        y_cat[range(y.shape[0]), y] = 1.0
        return Variable(FloatTensor(y_cat))

    class Generator(nn.Module):
        def __init__(self):
            super(Generator, self).__init__()
            input_dim = latent_dim + n_classes + code_dim
            self.init_size = img_size // 4
            self.l1 = nn.Sequential(nn.Linear(input_dim, 8 * self.init_size ** 2))
            self.conv_blocks = nn.Sequential(
                nn.BatchNorm2d(8),
                nn.Upsample(scale_factor=2),
                nn.Conv2d(8, 8, 3, stride=1, padding=1),
                nn.BatchNorm2d(8, 0.8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Upsample(scale_factor=2),
                nn.Conv2d(8, 4, 3, stride=1, padding=1),
                nn.BatchNorm2d(4, 0.8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(4, channels, 3, stride=1, padding=1),
                nn.Tanh(),
            )

        def forward(self, noise, labels, code):
            gen_input = torch.cat((noise, labels, code), -1)
            out = self.l1(gen_input)
            out = out.view(out.shape[0], 8, self.init_size, self.init_size)
            img = self.conv_blocks(out)
            return img

    class Discriminator(nn.Module):
        def __init__(self):
            super(Discriminator, self).__init__()

            def discriminator_block(in_filters, out_filters, bn=True):
                """Returns layers of each discriminator block"""
                block = [nn.Conv2d(in_filters, out_filters, 3, 2, 1), nn.LeakyReLU(0.2, inplace=True),
                         nn.Dropout2d(0.0)]
                if bn:
                    block.append(nn.BatchNorm2d(out_filters, 0.8))
                return block

            self.conv_blocks = nn.Sequential(
                *discriminator_block(channels, 4, bn=False),
                *discriminator_block(4, 8),
            )
            ds_size = img_size // 2 ** 2
            self.adv_layer = nn.Sequential(nn.Linear(8 * ds_size ** 2, 1))
            self.aux_layer = nn.Sequential(nn.Linear(8 * ds_size ** 2, n_classes), nn.Softmax())
            self.latent_layer = nn.Sequential(nn.Linear(8 * ds_size ** 2, code_dim))

        def forward(self, img):
            out = self.conv_blocks(img)
            out = out.view(out.shape[0], -1)
            validity = self.adv_layer(out)
            label = self.aux_layer(out)
            latent_code = self.latent_layer(out)
            return validity, label, latent_code

    adversarial_loss = torch.nn.MSELoss()
    categorical_loss = torch.nn.CrossEntropyLoss()
    continuous_loss = torch.nn.MSELoss()
    lambda_cat, lambda_con = 1, 0.1

    generator = Generator()
    discriminator = Discriminator()
    generator.apply(weights_init_normal)
    discriminator.apply(weights_init_normal)
    both = nn.ModuleList([generator, discriminator])
    init = load(m, both, state)

    optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizer_info = torch.optim.Adam(itertools.chain(generator.parameters(), discriminator.parameters()),
                                      lr=2e-3, betas=(0.5, 0.999))
    FloatTensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    LongTensor = torch.cuda.LongTensor if cuda else torch.LongTensor
    losses = []
    for i in range(2):
        imgs = torch.tensor(np.tanh(normal(rng, batch, channels, img_size, img_size)))
        labels = torch.tensor(rng.integers(0, n_classes, batch))
        batch_size = imgs.shape[0]
        valid = Variable(FloatTensor(batch_size, 1).fill_(1.0), requires_grad=False)
        fake = Variable(FloatTensor(batch_size, 1).fill_(0.0), requires_grad=False)
        real_imgs = Variable(imgs.type(FloatTensor))
        labels = to_categorical(labels.numpy(), num_columns=n_classes)

        optimizer_G.zero_grad()
        z = Variable(FloatTensor(np.random.default_rng(10 + i).normal(0, 1, (batch_size, latent_dim))))
        label_input = to_categorical(rng.integers(0, n_classes, batch_size), num_columns=n_classes)
        code_input = Variable(FloatTensor(rng.uniform(-1, 1, (batch_size, code_dim))))
        gen_imgs = generator(z, label_input, code_input)
        validity, _, _ = discriminator(gen_imgs)
        g_loss = adversarial_loss(validity, valid)
        g_loss.backward()
        optimizer_G.step()

        optimizer_D.zero_grad()
        real_pred, _, _ = discriminator(real_imgs)
        d_real_loss = adversarial_loss(real_pred, valid)
        fake_pred, _, _ = discriminator(gen_imgs.detach())
        d_fake_loss = adversarial_loss(fake_pred, fake)
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()

        optimizer_info.zero_grad()
        sampled_labels = rng.integers(0, n_classes, batch_size)
        gt_labels = Variable(LongTensor(sampled_labels), requires_grad=False)
        z = Variable(FloatTensor(np.random.default_rng(20 + i).normal(0, 1, (batch_size, latent_dim))))
        label_input = to_categorical(sampled_labels, num_columns=n_classes)
        code_input = Variable(FloatTensor(rng.uniform(-1, 1, (batch_size, code_dim))))
        gen_imgs = generator(z, label_input, code_input)
        _, pred_label, pred_code = discriminator(gen_imgs)
        info_loss = lambda_cat * categorical_loss(pred_label, gt_labels) + lambda_con * continuous_loss(
            pred_code, code_input)
        info_loss.backward()
        optimizer_info.step()
        losses += [d_loss.item(), g_loss.item(), info_loss.item(), float(labels.sum())]
    # the convolutions' biases ahead of a BatchNorm get gradients that are zero but for rounding (the 0.02-scale
    # weights leave each channel's outputs on its bias's side of LeakyReLU's kink, a shift BatchNorm removes), and
    # Adam turns that noise into steps of +-lr: the summary leaves them out
    shifted = {"0.conv_blocks.2.bias", "0.conv_blocks.6.bias", "1.conv_blocks.3.bias"}
    return init, losses + summary(p for name, p in both.named_parameters() if name not in shifted)


def test_infogan():
    compare(infogan)


# (d) eriklindernoren's BEGAN: the discriminator an autoencoder (down by a strided conv, a bottleneck Linear, up by
# nn.Upsample), the losses L1 distances to its reconstructions, gamma's balance diff = (gamma * d_loss_real -
# d_loss_fake), k = k + lambda_k * diff.item() clamped by min(max(k, 0), 1), the convergence measure M
def began(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    latent_dim, img_size, channels, batch = 4, 8, 1, 3

    class Generator(nn.Module):
        def __init__(self):
            super(Generator, self).__init__()
            self.init_size = img_size // 4
            self.l1 = nn.Sequential(nn.Linear(latent_dim, 8 * self.init_size ** 2))
            self.conv_blocks = nn.Sequential(
                nn.BatchNorm2d(8),
                nn.Upsample(scale_factor=2),
                nn.Conv2d(8, 8, 3, stride=1, padding=1),
                nn.BatchNorm2d(8, 0.8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Upsample(scale_factor=2),
                nn.Conv2d(8, 4, 3, stride=1, padding=1),
                nn.BatchNorm2d(4, 0.8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(4, channels, 3, stride=1, padding=1),
                nn.Tanh(),
            )

        def forward(self, noise):
            out = self.l1(noise)
            out = out.view(out.shape[0], 8, self.init_size, self.init_size)
            return self.conv_blocks(out)

    class Discriminator(nn.Module):
        def __init__(self):
            super(Discriminator, self).__init__()
            self.down = nn.Sequential(nn.Conv2d(channels, 4, 3, 2, 1), nn.ReLU())
            self.down_size = img_size // 2
            down_dim = 4 * (img_size // 2) ** 2
            self.fc = nn.Sequential(
                nn.Linear(down_dim, 6),
                nn.BatchNorm1d(6, 0.8),
                nn.ReLU(inplace=True),
                nn.Linear(6, down_dim),
                nn.BatchNorm1d(down_dim),
                nn.ReLU(inplace=True),
            )
            self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(4, channels, 3, 1, 1))

        def forward(self, img):
            out = self.down(img)
            out = self.fc(out.view(out.size(0), -1))
            out = self.up(out.view(out.size(0), 4, self.down_size, self.down_size))
            return out

    generator = Generator()
    discriminator = Discriminator()
    both = nn.ModuleList([generator, discriminator])
    init = load(m, both, state)
    optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    Tensor = torch.FloatTensor
    gamma, lambda_k, k = 0.75, 0.1, 0.0
    losses = []
    for i in range(2):
        real_imgs = torch.tensor(np.tanh(normal(rng, batch, channels, img_size, img_size))).type(Tensor)
        optimizer_G.zero_grad()
        z = torch.tensor(rng.normal(0, 1, (batch, latent_dim))).type(Tensor)
        gen_imgs = generator(z)
        g_loss = torch.mean(torch.abs(discriminator(gen_imgs) - gen_imgs))
        g_loss.backward()
        optimizer_G.step()

        optimizer_D.zero_grad()
        d_real = discriminator(real_imgs)
        d_fake = discriminator(gen_imgs.detach())
        d_loss_real = torch.mean(torch.abs(d_real - real_imgs))
        d_loss_fake = torch.mean(torch.abs(d_fake - gen_imgs.detach()))
        d_loss = d_loss_real - k * d_loss_fake
        d_loss.backward()
        optimizer_D.step()

        diff = torch.mean(gamma * d_loss_real - d_loss_fake)
        k = k + lambda_k * diff.item()
        k = min(max(k, 0), 1)
        M = (d_loss_real + torch.abs(diff)).data.item()
        losses += [d_loss.item(), g_loss.item(), M, k]
    # the biases right ahead of a BatchNorm get gradients that are zero but for rounding, which Adam turns into
    # steps of +-lr: the summary leaves them out
    shifted = {"0.conv_blocks.2.bias", "0.conv_blocks.6.bias", "1.fc.0.bias", "1.fc.3.bias"}
    return init, losses + summary(p for name, p in both.named_parameters() if name not in shifted)


def test_began():
    compare(began)


# (e) Laine and Aila's temporal ensembling (ferretj/temporal-ensembling's style): the unsupervised weight's Gaussian
# ramp-up exp(-5 (1 - T)^2), the per-sample ensemble Z = alpha Z + (1 - alpha) outputs kept across epochs with its
# start-up bias corrected (z = Z / (1 - alpha^(epoch + 1))), targets taken by index; the loss a masked
# cross-entropy on the labelled few (masked_select's count guarding an empty batch) plus the weighted MSE of the
# softmax to the targets; Gaussian input noise by a module's .data.normal_ stand-in drawn by numpy
def temporal_ensembling(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(5)
    n, n_classes, batch_size, num_epochs, alpha, max_val, ramp_up = 6, 3, 3, 2, 0.6, 30., 2

    def ramp_up_weight(epoch, max_epochs=ramp_up, max_val=max_val, mult=-5.):
        if epoch == 0:
            return 0.
        elif epoch >= max_epochs:
            return max_val
        return max_val * np.exp(mult * (1. - float(epoch) / max_epochs) ** 2)

    def weight_schedule(epoch, max_epochs, max_val, mult, n_labeled, n_samples):
        max_val = max_val * (float(n_labeled) / n_samples)
        return ramp_up_weight(epoch, max_epochs, max_val, mult)

    def temporal_loss(out1, out2, w, labels):
        def mse_loss(out1, out2):
            quad_diff = torch.sum((F.softmax(out1, dim=1) - F.softmax(out2, dim=1)) ** 2)
            return quad_diff / out1.data.nelement()

        def masked_crossentropy(out, labels):
            cond = (labels >= 0)
            nnz = torch.nonzero(cond)
            nbsup = len(nnz)
            if nbsup > 0:
                masked_outputs = torch.index_select(out, 0, nnz.view(nbsup))
                masked_labels = labels[cond]
                loss = F.cross_entropy(masked_outputs, masked_labels)
                return loss, nbsup
            return torch.tensor([0.], requires_grad=False), 0

        sup_loss, nbsup = masked_crossentropy(out1, labels)
        unsup_loss = mse_loss(out1, out2)
        return sup_loss + w * unsup_loss, sup_loss, unsup_loss, nbsup

    class CNN(nn.Module):
        def __init__(self, std):
            super(CNN, self).__init__()
            self.std = std
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(4)
            self.mp = nn.MaxPool2d(2, stride=2)
            self.fc = nn.Linear(4 * 3 * 3, n_classes)

        def forward(self, x, noise):
            if self.training:
                x = x + noise * self.std
            x = self.mp(F.leaky_relu(self.bn1(self.conv1(x)), 0.1))
            return self.fc(x.view(x.size(0), -1))

    model = CNN(std=0.15)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.99))
    images = torch.tensor(normal(rng, n, 1, 6, 6))
    labels = torch.tensor(np.array([0, -1, 2, -1, -1, 1]))
    ntrain, n_labeled = n, 3
    Z = torch.zeros(ntrain, n_classes).float()
    z = torch.zeros(ntrain, n_classes).float()
    outputs = torch.zeros(ntrain, n_classes).float()
    losses = []
    for epoch in range(num_epochs):
        model.train()
        w = weight_schedule(epoch, ramp_up, max_val, -5., n_labeled, ntrain)
        w = torch.autograd.Variable(torch.FloatTensor([w]), requires_grad=False)
        for i in range(ntrain // batch_size):
            idx = torch.arange(i * batch_size, (i + 1) * batch_size)
            x, y = images[idx], labels[idx]
            noise = torch.tensor(normal(rng, batch_size, 1, 6, 6))
            optimizer.zero_grad()
            out = model(x, noise)
            zcomp = z[i * batch_size: (i + 1) * batch_size]
            loss, suploss, unsuploss, nbsup = temporal_loss(out, zcomp, w, y)
            outputs[i * batch_size: (i + 1) * batch_size] = out.data.clone()
            loss.backward()
            optimizer.step()
            losses += [loss.item(), suploss.item(), unsuploss.item(), nbsup]
        Z = alpha * Z + (1. - alpha) * outputs
        z = Z * (1. / (1. - alpha ** (epoch + 1)))
        losses += [float(w), z.abs().sum().item()]
    # conv1's bias, right ahead of a BatchNorm, gets a gradient that is zero but for rounding, which Adam turns
    # into steps of +-lr: the summary leaves it out
    return init, losses + summary(p for name, p in model.named_parameters() if name != "conv1.bias")


def test_temporal_ensembling():
    compare(temporal_ensembling)


# (f) Salimans et al.'s improved GAN techniques on MNIST-like data: a MinibatchDiscrimination layer (a Parameter T of
# (in, out, kernel) by torch.Tensor and init.normal_, M = x.mm(T.view(in, -1)).view(-1, out, kernel), the L1
# distances between samples by M.unsqueeze(0) - M_T.unsqueeze(1) where M_T = M.permute(1, 0, 2), exp(-norm) summed
# less the self term, torch.cat onto the features), the generator trained by feature matching (the mean intermediate
# features' MSE), the discriminator by BCEWithLogitsLoss with one-sided label smoothing (0.9)
def minibatch_discrimination(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_ = nn.init
    torch.manual_seed(0)
    rng = np.random.default_rng(6)

    class MinibatchDiscrimination(nn.Module):
        def __init__(self, in_features, out_features, kernel_dims, mean=False):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.kernel_dims = kernel_dims
            self.mean = mean
            self.T = nn.Parameter(torch.Tensor(in_features, out_features, kernel_dims))
            init_.normal_(self.T, 0, 1)

        def forward(self, x):
            # x is NxA, T is AxBxC
            matrices = x.mm(self.T.view(self.in_features, -1))
            matrices = matrices.view(-1, self.out_features, self.kernel_dims)
            M = matrices.unsqueeze(0)  # 1xNxBxC
            M_T = M.permute(1, 0, 2, 3)  # Nx1xBxC
            norm = torch.abs(M - M_T).sum(3)  # NxNxB
            expnorm = torch.exp(-norm)
            o_b = (expnorm.sum(0) - 1)  # NxB, subtract self distance
            if self.mean:
                o_b /= x.size(0) - 1
            return torch.cat([x, o_b], 1)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Linear(16, 8), nn.LeakyReLU(0.2))
            self.mbd = MinibatchDiscrimination(8, 4, 3, mean=True)
            self.out = nn.Linear(8 + 4, 1)

        def forward(self, x, feature=False):
            f = self.features(x.view(x.size(0), -1))
            if feature:
                return f
            return self.out(self.mbd(f))

    G = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 16), nn.Tanh())
    D = Discriminator()
    both = nn.ModuleList([G, D])
    init = load(m, both, state)
    g_opt = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
    d_opt = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()
    losses = []
    for step in range(2):
        real = torch.tensor(np.tanh(normal(rng, 4, 1, 4, 4)))
        z = torch.tensor(normal(rng, 4, 5))
        fake = G(z)
        d_opt.zero_grad()
        d_loss = criterion(D(real), torch.full((4, 1), 0.9)) + criterion(D(fake.detach()), torch.zeros(4, 1))
        d_loss.backward()
        d_opt.step()
        g_opt.zero_grad()
        real_features = D(real, feature=True).detach().mean(0)
        fake_features = D(fake, feature=True).mean(0)
        g_loss = F.mse_loss(fake_features, real_features)
        g_loss.backward()
        g_opt.step()
        losses += [d_loss.item(), g_loss.item()]
    return init, losses + summary(both.parameters())


def test_minibatch_discrimination():
    compare(minibatch_discrimination)


# (g) magnitude pruning by hand, as pruning repositories wrote it before torch.nn.utils.prune: a global threshold
# from torch.cat of every weight's abs().view(-1) and kthvalue, masks registered as buffers, a
# register_forward_pre_hook that multiplies the weight by its mask in place under no_grad, a tensor hook
# (p.register_hook(lambda g: g * mask)) that keeps pruned weights' gradients zero, the sparsity reported by
# (mask == 0).sum(); fine-tuning by SGD with momentum, then the hooks removed by their handles
def mask_pruning_hooks(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(7)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3)
            self.fc1 = nn.Linear(4 * 2 * 2, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = torch.flatten(x, 1)
            return self.fc2(F.relu(self.fc1(x)))

    def apply_mask(module, inputs):
        with torch.no_grad():
            module.weight.mul_(module.weight_mask)

    model = Net()
    init = load(m, model, state)
    prunable = [mod for mod in model.modules() if isinstance(mod, (nn.Conv2d, nn.Linear))]
    all_weights = torch.cat([mod.weight.data.abs().view(-1) for mod in prunable])
    k = int(0.5 * all_weights.numel())
    threshold = all_weights.kthvalue(k).values.item()
    handles = []
    for mod in prunable:
        mask = (mod.weight.data.abs() > threshold).float()
        mod.register_buffer("weight_mask", mask)
        handles.append(mod.register_forward_pre_hook(apply_mask))
        handles.append(mod.weight.register_hook(lambda grad, mask=mask: grad * mask))
    total = sum(mod.weight_mask.numel() for mod in prunable)
    zeros = sum(int((mod.weight_mask == 0).sum()) for mod in prunable)
    losses = [threshold, zeros / total]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(2):
        x = torch.tensor(normal(rng, 4, 1, 6, 6))
        y = torch.tensor(rng.integers(0, 3, 4))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        losses += [float((mod.weight.grad * (1 - mod.weight_mask)).abs().sum()) for mod in prunable]
    for handle in handles:
        handle.remove()
    model(torch.tensor(normal(rng, 1, 1, 6, 6)))
    losses += [float((mod.weight * (1 - mod.weight_mask)).abs().sum()) for mod in prunable]
    assert "conv1.weight_mask" in model.state_dict()
    return init, losses + summary(model.parameters())


def test_mask_pruning_hooks():
    compare(mask_pruning_hooks)


# (h) Google's UDA (Xie et al.) as its PyTorch ports write it: training signal annealing (a linear, exp or log
# schedule of the global step, the threshold = schedule * (1 - 1 / K) + 1 / K), the supervised examples whose
# correct-class probability exp(-loss) exceeds it masked out, the masked sum over torch.max(mask.sum(), one) where
# one is a 0-d tensor on the device; the unlabelled loss the KL of the augmented prediction's log_softmax to the
# original's sharpened softmax (temperature 0.4, no gradient), masked where the original's confidence passes 0.8
def uda_tsa(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(8)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    num_labels, total_steps, uda_softmax_temp, uda_confidence_thresh, uda_coeff = 3, 4, 0.4, 0.8, 1.0

    def torch_device_one():
        return torch.tensor(1.).to(device)

    def get_tsa_thresh(schedule, global_step, num_train_steps, start, end):
        training_progress = torch.tensor(float(global_step) / float(num_train_steps))
        if schedule == 'linear_schedule':
            threshold = training_progress
        elif schedule == 'exp_schedule':
            scale = 5
            threshold = torch.exp((training_progress - 1) * scale)
        elif schedule == 'log_schedule':
            scale = 5
            threshold = 1 - torch.exp((-training_progress) * scale)
        output = threshold * (end - start) + start
        return output.to(device)

    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, num_labels)).to(device)
    init = load(m, model, state)
    sup_criterion = nn.CrossEntropyLoss(reduction='none')
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for global_step, schedule in enumerate(['linear_schedule', 'exp_schedule', 'log_schedule'], start=1):
        input_ids = torch.tensor(normal(rng, 3, 5), device=device)
        label_ids = torch.tensor(rng.integers(0, num_labels, 3), device=device)
        ori_input_ids = torch.tensor(normal(rng, 4, 5), device=device)
        aug_input_ids = ori_input_ids + 0.3 * torch.tensor(normal(rng, 4, 5), device=device)
        sup_size = label_ids.shape[0]
        input_ids = torch.cat((input_ids, aug_input_ids), dim=0)
        logits = model(input_ids)

        sup_loss = sup_criterion(logits[:sup_size], label_ids)
        tsa_thresh = get_tsa_thresh(schedule, global_step, total_steps, start=1. / logits.shape[-1], end=1)
        larger_than_threshold = torch.exp(-sup_loss) > tsa_thresh
        loss_mask = torch.ones_like(label_ids, dtype=torch.float32) * (1 - larger_than_threshold.type(torch.float32))
        sup_loss = torch.sum(sup_loss * loss_mask, dim=-1) / torch.max(torch.sum(loss_mask, dim=-1),
                                                                       torch_device_one())

        uda_softmax_temp_ = uda_softmax_temp if uda_softmax_temp > 0 else 1.
        with torch.no_grad():
            ori_logits = model(ori_input_ids)
            ori_prob = F.softmax(ori_logits, dim=-1)
            if uda_confidence_thresh != -1:
                unsup_loss_mask = torch.max(ori_prob, dim=-1)[0] > uda_confidence_thresh
                unsup_loss_mask = unsup_loss_mask.type(torch.float32)
            else:
                unsup_loss_mask = torch.ones(len(logits) - sup_size, dtype=torch.float32)
            unsup_loss_mask = unsup_loss_mask.to(device)
            sharp_prob = F.softmax(ori_logits / uda_softmax_temp_, dim=-1)
        aug_log_prob = F.log_softmax(logits[sup_size:], dim=-1)
        unsup_loss = torch.sum(nn.KLDivLoss(reduction='none')(aug_log_prob, sharp_prob), dim=-1)
        unsup_loss = torch.sum(unsup_loss * unsup_loss_mask, dim=-1) / torch.max(torch.sum(unsup_loss_mask, dim=-1),
                                                                                 torch_device_one())
        final_loss = sup_loss + uda_coeff * unsup_loss
        optimizer.zero_grad()
        final_loss.backward()
        optimizer.step()
        losses += [final_loss.item(), sup_loss.item(), unsup_loss.item(), tsa_thresh.item(),
                   loss_mask.sum().item(), unsup_loss_mask.sum().item()]
    return init, losses + summary(model.parameters())


def test_uda_tsa():
    compare(uda_tsa)


# (i) Huang et al.'s snapshot ensembles: a cyclic cosine learning rate by LambdaLR (lr restarting at each cycle's
# start), a snapshot copy.deepcopy(model.state_dict()) at each cycle's end, the ensemble's prediction the mean of
# each snapshot's softmax, loaded in turn into one model by load_state_dict, its accuracy by argmax and eq
def snapshot_ensemble(m, state=None):
    import copy
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(9)
    cycles, iters_per_cycle = 2, 2

    def proposed_lr(initial_lr, iteration, epoch_per_cycle):
        return initial_lr * (np.cos(np.pi * iteration / epoch_per_cycle) + 1) / 2

    model = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 4))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda it: proposed_lr(1.0, it % iters_per_cycle, iters_per_cycle))
    snapshots = []
    losses = []
    for cycle in range(cycles):
        for it in range(iters_per_cycle):
            x = torch.tensor(normal(rng, 5, 6))
            y = torch.tensor(rng.integers(0, 4, 5))
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses += [loss.item(), optimizer.param_groups[0]["lr"]]
        snapshots.append(copy.deepcopy(model.state_dict()))
    assert snapshots[0]["0.weight"].data_ptr() != model.state_dict()["0.weight"].data_ptr()
    x = torch.tensor(normal(rng, 5, 6))
    y = torch.tensor(rng.integers(0, 4, 5))
    model.eval()
    probs = []
    with torch.no_grad():
        for snapshot in snapshots:
            model.load_state_dict(snapshot)
            probs.append(F.softmax(model(x), dim=1))
        ensemble = torch.stack(probs).mean(0)
    correct = ensemble.argmax(1).eq(y).sum().item()
    losses += [p.sum().item() for p in probs] + [ensemble.max().item(), correct,
                                                   snapshots[0]["2.bias"].sum().item()]
    return init, losses + summary(model.parameters())


def test_snapshot_ensemble():
    compare(snapshot_ensemble)


# (j) clcarwin's focal_loss_pytorch: FocalLoss(nn.Module) with alpha a list made torch.Tensor, N,C,H,W inputs
# flattened by view, transpose(1, 2), contiguous, logpt gathered at the target, pt = Variable(logpt.data.exp()),
# alpha moved by type_as and gathered by target.data.view(-1), size_average's mean or sum; a 1x1-conv segmentation
# head trained two steps
def focal_loss_segmentation(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    Variable = import_module(torch.__name__ + ".autograd").Variable
    torch.manual_seed(0)
    rng = np.random.default_rng(10)

    class FocalLoss(nn.Module):
        def __init__(self, gamma=0, alpha=None, size_average=True):
            super(FocalLoss, self).__init__()
            self.gamma = gamma
            self.alpha = alpha
            if isinstance(alpha, (float, int)):
                self.alpha = torch.Tensor([alpha, 1 - alpha])
            if isinstance(alpha, list):
                self.alpha = torch.Tensor(alpha)
            self.size_average = size_average

        def forward(self, input, target):
            if input.dim() > 2:
                input = input.view(input.size(0), input.size(1), -1)  # N,C,H,W => N,C,H*W
                input = input.transpose(1, 2)  # N,C,H*W => N,H*W,C
                input = input.contiguous().view(-1, input.size(2))  # N,H*W,C => N*H*W,C
            target = target.view(-1, 1)

            logpt = F.log_softmax(input, dim=1)
            logpt = logpt.gather(1, target)
            logpt = logpt.view(-1)
            pt = Variable(logpt.data.exp())

            if self.alpha is not None:
                if self.alpha.type() != input.data.type():
                    self.alpha = self.alpha.type_as(input.data)
                at = self.alpha.gather(0, target.data.view(-1))
                logpt = logpt * Variable(at)

            loss = -1 * (1 - pt) ** self.gamma * logpt
            if self.size_average:
                return loss.mean()
            else:
                return loss.sum()

    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 3, 1))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for criterion in (FocalLoss(gamma=2, alpha=[0.25, 0.5, 0.25]), FocalLoss(gamma=0.5, alpha=0.3,
                                                                           size_average=False)):
        x = torch.tensor(normal(rng, 2, 3, 4, 4))
        target = torch.tensor(rng.integers(0, 3 if criterion.alpha.numel() == 3 else 2, (2, 4, 4)))
        optimizer.zero_grad()
        loss = criterion(model(x), target)
        loss.backward()
        optimizer.step()
        losses += [loss.item(), criterion.alpha.sum().item()]
    return init, losses + summary(model.parameters())


def test_focal_loss_segmentation():
    compare(focal_loss_segmentation)
