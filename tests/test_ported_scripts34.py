"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: weiaicunzhi's pytorch-cifar100 (its ResNeXt bottleneck of grouped convolutions, WarmUpLR
as an _LRScheduler subclass stepped per iteration in the warm epoch beside MultiStepLR stepped by epoch, accuracy by
preds.eq(labels).sum()); AutoAugment-style policies written on uint8 image tensors (posterize by bitwise_and,
solarize by torch.where, invert, autocontrast by amin/amax, equalize by a per-channel histc and cumsum lookup, a
shear by affine_grid and grid_sample) feeding a small CNN; eriklindernoren's InfoGAN (Tensor = torch.FloatTensor,
Variable, BatchNorm2d(c, 0.8), to_categorical by numpy, an info optimizer over itertools.chain of both nets) and
BEGAN (an autoencoder discriminator, k_t updated from the balance each step); Laine and Aila's temporal ensembling
(a Gaussian ramp-up, the ensemble Z updated in place with index_copy_ and its start-up bias corrected); Salimans'
minibatch discrimination layer with feature matching; and magnitude pruning by hand (masks as buffers applied by a
register_forward_pre_hook, the gradients masked by a tensor hook). Each runs in tnet, then in torch from tnet's
initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy
draws what a script draws; shapes are tiny and runs take one or two steps."""
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
