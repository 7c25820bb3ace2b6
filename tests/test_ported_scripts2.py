"""More CIFAR/MNIST networks and training-loop idioms in the styles of popular public repositories
(WideResNet, DenseNet-BC, PyramidNet's zero-padded shortcut, Shake-Shake, ConvMixer, MLP-Mixer,
LeNet-5, VGG from cfg lists, an attention net with warmup and no-decay groups, top-k accuracy and
confusion matrices, knowledge distillation, SAM, Cutout, CutMix), written from memory and ported by
their imports alone, as in test_ported_scripts.py (helpers.py runs both). Random data
of dataset shapes, tiny widths, 1-2 steps; where cheap, the same code in torch from the same
weights gives the same losses."""
import math

import numpy as np
import pytest

import tnet
from helpers import batches, compare, imports, load


# (a) WideResNet (xternalz's style): F.dropout, self.modules() init loop, MultiStepLR with nesterov
def wide_resnet(m, state=None, drop=0.0):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class BasicBlock(nn.Module):
        def __init__(self, in_planes, out_planes, stride, dropRate=0.0):
            super(BasicBlock, self).__init__()
            self.bn1 = nn.BatchNorm2d(in_planes)
            self.relu1 = nn.ReLU(inplace=True)
            self.conv1 = nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(out_planes)
            self.relu2 = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(out_planes, out_planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.droprate = dropRate
            self.equalInOut = (in_planes == out_planes)
            self.convShortcut = (not self.equalInOut) and nn.Conv2d(in_planes, out_planes, kernel_size=1,
                                                                    stride=stride, padding=0, bias=False) or None

        def forward(self, x):
            if not self.equalInOut:
                x = self.relu1(self.bn1(x))
            else:
                out = self.relu1(self.bn1(x))
            out = self.relu2(self.bn2(self.conv1(out if self.equalInOut else x)))
            if self.droprate > 0:
                out = F.dropout(out, p=self.droprate, training=self.training)
            out = self.conv2(out)
            return torch.add(x if self.equalInOut else self.convShortcut(x), out)

    class NetworkBlock(nn.Module):
        def __init__(self, nb_layers, in_planes, out_planes, block, stride, dropRate=0.0):
            super(NetworkBlock, self).__init__()
            self.layer = self._make_layer(block, in_planes, out_planes, nb_layers, stride, dropRate)

        def _make_layer(self, block, in_planes, out_planes, nb_layers, stride, dropRate):
            layers = []
            for i in range(int(nb_layers)):
                layers.append(block(i == 0 and in_planes or out_planes, out_planes, i == 0 and stride or 1, dropRate))
            return nn.Sequential(*layers)

        def forward(self, x):
            return self.layer(x)

    class WideResNet(nn.Module):
        def __init__(self, depth, num_classes, widen_factor=1, dropRate=0.0):
            super(WideResNet, self).__init__()
            nChannels = [4, 4 * widen_factor, 8 * widen_factor, 16 * widen_factor]
            assert ((depth - 4) % 6 == 0)
            n = (depth - 4) / 6
            block = BasicBlock
            self.conv1 = nn.Conv2d(3, nChannels[0], kernel_size=3, stride=1, padding=1, bias=False)
            self.block1 = NetworkBlock(n, nChannels[0], nChannels[1], block, 1, dropRate)
            self.block2 = NetworkBlock(n, nChannels[1], nChannels[2], block, 2, dropRate)
            self.block3 = NetworkBlock(n, nChannels[2], nChannels[3], block, 2, dropRate)
            self.bn1 = nn.BatchNorm2d(nChannels[3])
            self.relu = nn.ReLU(inplace=True)
            self.fc = nn.Linear(nChannels[3], num_classes)
            self.nChannels = nChannels[3]
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    nn.init.kaiming_normal_(mod.weight, mode='fan_out', nonlinearity='relu')
                elif isinstance(mod, nn.BatchNorm2d):
                    mod.weight.data.fill_(1)
                    mod.bias.data.zero_()
                elif isinstance(mod, nn.Linear):
                    nn.init.constant_(mod.bias, 0)

        def forward(self, x):
            out = self.conv1(x)
            out = self.block3(self.block2(self.block1(out)))
            out = self.relu(self.bn1(out))
            out = F.avg_pool2d(out, 2)
            out = out.view(-1, self.nChannels)
            return self.fc(out)

    model = WideResNet(10, 10, widen_factor=1, dropRate=drop)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.2)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(2):
        for x, y in batches(10 + epoch, 1, (2, 3, 8, 8)):
            input, target = torch.tensor(x), torch.tensor(y)
            output = model(input)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    assert optimizer.param_groups[0]['lr'] == pytest.approx(0.1 * 0.2 * 0.2)
    return init, losses


def test_wide_resnet():
    wide_resnet(imports("tnet"), drop=0.3)
    compare(wide_resnet)


# (b) DenseNet-BC (bamos's style): torch.cat of the growing feature maps, transitions with avg_pool2d
def densenet_bc(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class Bottleneck(nn.Module):
        def __init__(self, nChannels, growthRate):
            super(Bottleneck, self).__init__()
            interChannels = 4 * growthRate
            self.bn1 = nn.BatchNorm2d(nChannels)
            self.conv1 = nn.Conv2d(nChannels, interChannels, kernel_size=1, bias=False)
            self.bn2 = nn.BatchNorm2d(interChannels)
            self.conv2 = nn.Conv2d(interChannels, growthRate, kernel_size=3, padding=1, bias=False)

        def forward(self, x):
            out = self.conv1(F.relu(self.bn1(x)))
            out = self.conv2(F.relu(self.bn2(out)))
            out = torch.cat((x, out), 1)
            return out

    class Transition(nn.Module):
        def __init__(self, nChannels, nOutChannels):
            super(Transition, self).__init__()
            self.bn1 = nn.BatchNorm2d(nChannels)
            self.conv1 = nn.Conv2d(nChannels, nOutChannels, kernel_size=1, bias=False)

        def forward(self, x):
            out = self.conv1(F.relu(self.bn1(x)))
            out = F.avg_pool2d(out, 2)
            return out

    class DenseNet(nn.Module):
        def __init__(self, growthRate, depth, reduction, nClasses, bottleneck):
            super(DenseNet, self).__init__()
            nDenseBlocks = (depth - 4) // 6
            nChannels = 2 * growthRate
            self.conv1 = nn.Conv2d(3, nChannels, kernel_size=3, padding=1, bias=False)
            self.dense1 = self._make_dense(nChannels, growthRate, nDenseBlocks, bottleneck)
            nChannels += nDenseBlocks * growthRate
            nOutChannels = int(math.floor(nChannels * reduction))
            self.trans1 = Transition(nChannels, nOutChannels)
            nChannels = nOutChannels
            self.dense2 = self._make_dense(nChannels, growthRate, nDenseBlocks, bottleneck)
            nChannels += nDenseBlocks * growthRate
            self.bn1 = nn.BatchNorm2d(nChannels)
            self.fc = nn.Linear(nChannels, nClasses)
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    n = mod.kernel_size[0] * mod.kernel_size[1] * mod.out_channels
                    mod.weight.data.normal_(0, math.sqrt(2. / n))
                elif isinstance(mod, nn.BatchNorm2d):
                    mod.weight.data.fill_(1)
                    mod.bias.data.zero_()
                elif isinstance(mod, nn.Linear):
                    mod.bias.data.zero_()

        def _make_dense(self, nChannels, growthRate, nDenseBlocks, bottleneck):
            layers = []
            for i in range(int(nDenseBlocks)):
                layers.append(Bottleneck(nChannels, growthRate))
                nChannels += growthRate
            return nn.Sequential(*layers)

        def forward(self, x):
            out = self.conv1(x)
            out = self.trans1(self.dense1(out))
            out = self.dense2(out)
            out = torch.squeeze(F.adaptive_avg_pool2d(F.relu(self.bn1(out)), 1))
            out = F.log_softmax(self.fc(out), dim=1)
            return out

    net = DenseNet(growthRate=2, depth=10, reduction=0.5, bottleneck=True, nClasses=10)
    init = load(m, net, state)
    print('  + Number of params: {}'.format(sum([p.data.nelement() for p in net.parameters()])))
    optimizer = optim.SGD(net.parameters(), lr=1e-1, momentum=0.9, weight_decay=1e-4)
    losses = []
    for x, y in batches(12, 1, (3, 3, 8, 8)):
        data, target = torch.tensor(x), torch.tensor(y)
        optimizer.zero_grad()
        output = net(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        pred = output.data.max(1)[1]
        incorrect = pred.ne(target.data).cpu().sum()
        err = 100. * incorrect / len(data)
        losses += [loss.item(), float(err)]
    return init, losses


def test_densenet_bc():
    compare(densenet_bc)


# (c) PyramidNet / akamaster's ResNet: zero-padded shortcuts, by torch.cat of zeros and by F.pad in a LambdaLayer
def zero_padded_shortcut(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class LambdaLayer(nn.Module):
        def __init__(self, lambd):
            super(LambdaLayer, self).__init__()
            self.lambd = lambd

        def forward(self, x):
            return self.lambd(x)

    class PadBlock(nn.Module):  # akamaster's option A
        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != planes:
                self.shortcut = LambdaLayer(lambda x: F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, planes // 4, planes // 4),
                                                            "constant", 0))

        def forward(self, x):
            return F.relu(self.bn1(self.conv1(x)) + self.shortcut(x))

    class PyramidBlock(nn.Module):  # dyhan0920's PyramidNet
        outchannel_ratio = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.bn1 = nn.BatchNorm2d(inplanes)
            self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            out = self.bn2(self.conv1(self.bn1(x)))
            if self.downsample is not None:
                shortcut = self.downsample(x)
                featuremap_size = shortcut.size()[2:4]
            else:
                shortcut = x
                featuremap_size = out.size()[2:4]
            batch_size = out.size()[0]
            residual_channel = out.size()[1]
            shortcut_channel = shortcut.size()[1]
            if residual_channel != shortcut_channel:
                # torch.cuda.FloatTensor in the original (tnet.cuda has it; torch's needs a GPU)
                padding = torch.autograd.Variable(torch.FloatTensor(batch_size, residual_channel - shortcut_channel,
                                                                    featuremap_size[0], featuremap_size[1]).fill_(0))
                out += torch.cat((shortcut, padding), 1)
            else:
                out += shortcut
            return out

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                          PadBlock(4, 8, stride=2), PyramidBlock(8, 10, stride=2, downsample=nn.AvgPool2d((2, 2))),
                          PyramidBlock(10, 12), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(12, 10))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)
    losses = []
    for x, y in batches(13, 2, (2, 3, 8, 8)):
        loss = F.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses


def test_zero_padded_shortcut():
    compare(zero_padded_shortcut)


# (d) Shake-Shake: a custom autograd.Function with ctx.save_for_backward
def shake_shake(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class ShakeShake(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x1, x2, training=True):
            if training:
                # torch.rand in the original
                alpha = torch.ones(x1.size(0), 1, 1, 1, dtype=x1.dtype, device=x1.device) * 0.3
            else:
                alpha = torch.FloatTensor(x1.size(0), 1, 1, 1).fill_(0.5)
            ctx.save_for_backward(alpha)
            return alpha * x1 + (1 - alpha) * x2

        @staticmethod
        def backward(ctx, grad_output):
            alpha, = ctx.saved_tensors
            beta = torch.ones(grad_output.size(0), 1, 1, 1, dtype=grad_output.dtype) * 0.6
            return beta * grad_output, (1 - beta) * grad_output, None

    class Branch(nn.Sequential):
        def __init__(self, c):
            super().__init__(nn.ReLU(), nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))

    class ShakeBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.branch1, self.branch2 = Branch(c), Branch(c)

        def forward(self, x):
            h = ShakeShake.apply(self.branch1(x), self.branch2(x), self.training)
            return h + x

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), ShakeBlock(4), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 10))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in batches(14, 2, (2, 3, 6, 6)):
        loss = F.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append(F.cross_entropy(model(torch.tensor(x)), torch.tensor(y)).item())
    return init, losses


def test_shake_shake():
    compare(shake_shake)


# (e) ConvMixer and MLP-Mixer: nn.GELU, a Residual wrapper, patches rearranged by hand with reshape/permute
def mixers(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class Residual(nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x):
            return self.fn(x) + x

    def ConvMixer(dim, depth, kernel_size=3, patch_size=2, n_classes=10):
        return nn.Sequential(
            nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size), nn.GELU(), nn.BatchNorm2d(dim),
            *[nn.Sequential(Residual(nn.Sequential(nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"),
                                                   nn.GELU(), nn.BatchNorm2d(dim))),
                            nn.Conv2d(dim, dim, kernel_size=1), nn.GELU(), nn.BatchNorm2d(dim))
              for i in range(depth)],
            nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(dim, n_classes))

    class PreNormResidual(nn.Module):
        def __init__(self, dim, fn):
            super().__init__()
            self.fn = fn
            self.norm = nn.LayerNorm(dim)

        def forward(self, x):
            return self.fn(self.norm(x)) + x

    class TokenMix(nn.Module):  # einops' Rearrange('b n c -> b c n') by hand, with Linear on the tokens
        def __init__(self, n, hidden):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(n, hidden), nn.GELU(), nn.Dropout(0.), nn.Linear(hidden, n))

        def forward(self, x):
            return self.net(x.transpose(1, 2)).transpose(1, 2)

    class MLPMixer(nn.Module):
        def __init__(self, image_size, channels, patch_size, dim, depth, num_classes):
            super().__init__()
            self.p = patch_size
            n = (image_size // patch_size) ** 2
            self.embed = nn.Linear(patch_size * patch_size * channels, dim)
            self.layers = nn.Sequential(*[nn.Sequential(
                PreNormResidual(dim, TokenMix(n, 4)),
                PreNormResidual(dim, nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))))
                for _ in range(depth)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, num_classes)

        def forward(self, img):
            b, c, h, w = img.shape
            p = self.p  # Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)')
            x = img.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, -1, p * p * c)
            x = self.layers(self.embed(x))
            return self.head(self.norm(x).mean(dim=1))

    models = [ConvMixer(4, 1), MLPMixer(8, 3, 4, 6, 1, 10)]
    init = {}
    for i, model in enumerate(models):
        init.update({f"{i}.{k}": v for k, v in load(m, model, state and {k[2:]: v for k, v in state.items()
                                                                         if k.startswith(f"{i}.")}).items()})
    losses = []
    for model in models:
        optimizer = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05)
        for x, y in batches(15, 2, (2, 3, 8, 8)):
            loss = F.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return init, losses


def test_mixers():
    compare(mixers)


# (f) LeNet-5 from an MNIST tutorial: num_flat_features, log_softmax + nll_loss, StepLR, saving the state_dict
def lenet5(m, state=None, path=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class LeNet(nn.Module):
        def __init__(self):
            super(LeNet, self).__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 12)
            self.fc2 = nn.Linear(12, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = x.view(-1, self.num_flat_features(x))
            x = F.relu(self.fc1(x))
            return F.log_softmax(self.fc2(x), dim=1)

        def num_flat_features(self, x):
            size = x.size()[1:]
            num_features = 1
            for s in size:
                num_features *= s
            return num_features

    model = LeNet()
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    losses = []
    for x, y in batches(16, 2, (2, 1, 28, 28)):
        data, target = torch.from_numpy(x), torch.from_numpy(y)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    torch.save(model.state_dict(), path)
    model2 = LeNet()
    model2.load_state_dict(torch.load(path))
    model2.eval()
    with torch.no_grad():
        out = model2(data)
        losses.append(F.nll_loss(out, target, reduction='sum').item())
        pred = out.max(1, keepdim=True)[1]
        losses.append(pred.eq(target.view_as(pred)).sum().item())
    assert scheduler.get_last_lr() == [0.0025]
    return init, losses


def test_lenet5(tmp_path):
    compare(lenet5, path=str(tmp_path / "mnist_cnn.pt"))


# (g) VGG from cfg lists with nn.Sequential(*layers), the script's setup lines, parameter count, checkpoints
def vgg_cfg(m, state=None, ckpt=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    cfg = {'VGG11': [4, 'M', 8, 'M', 8, 8, 'M']}

    class VGG(nn.Module):
        def __init__(self, vgg_name):
            super(VGG, self).__init__()
            self.features = self._make_layers(cfg[vgg_name])
            self.classifier = nn.Sequential(nn.Dropout(p=0.0), nn.Linear(8, 8), nn.ReLU(True), nn.Linear(8, 10))
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    nn.init.kaiming_normal_(mod.weight, mode='fan_out', nonlinearity='relu')
                    if mod.bias is not None:
                        nn.init.constant_(mod.bias, 0)
                elif isinstance(mod, nn.BatchNorm2d):
                    nn.init.constant_(mod.weight, 1)
                    nn.init.constant_(mod.bias, 0)
                elif isinstance(mod, nn.Linear):
                    nn.init.normal_(mod.weight, 0, 0.01)
                    nn.init.constant_(mod.bias, 0)

        def forward(self, x):
            out = self.features(x)
            out = out.view(out.size(0), -1)
            return self.classifier(out)

        def _make_layers(self, cfg):
            layers = []
            in_channels = 3
            for x in cfg:
                if x == 'M':
                    layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
                else:
                    layers += [nn.Conv2d(in_channels, x, kernel_size=3, padding=1), nn.BatchNorm2d(x),
                               nn.ReLU(inplace=True)]
                    in_channels = x
            layers += [nn.AvgPool2d(kernel_size=1, stride=1)]
            return nn.Sequential(*layers)

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    model = VGG('VGG11').to(device)
    init = load(m, model, state)
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"{n_params:,} trainable parameters")
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    losses = [n_params]
    for epoch in range(1):
        model.train()
        for i, (x, y) in enumerate(batches(17, 2, (2, 3, 8, 8))):
            inputs, targets = torch.tensor(x).to(device), torch.tensor(y).to(device, non_blocking=True)
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        torch.save({'epoch': epoch + 1, 'model_state_dict': model.state_dict(),
                    'optimizer_state_dict': optimizer.state_dict(), 'loss': loss, 'best_acc1': 12.5}, ckpt)
    model = VGG('VGG11').to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    checkpoint = torch.load(ckpt, map_location=device)
    model.load_state_dict(checkpoint['model_state_dict'])
    optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
    start_epoch, best_acc1 = checkpoint['epoch'], checkpoint['best_acc1']
    assert start_epoch == 1 and best_acc1 == 12.5
    losses.append(float(checkpoint['loss']))
    loss = criterion(model(inputs), targets)  # the resumed run's next step: momentum taken from the checkpoint
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        losses.append(criterion(model(inputs), targets).item())
    return init, losses


def test_vgg_cfg(tmp_path):
    compare(vgg_cfg, ckpt=str(tmp_path / "checkpoint.pth.tar"))


# (h) an attention net: MultiheadAttention(batch_first=True), LayerNorm, model.apply(init), no-decay param
# groups, label smoothing, clip_grad_norm_, cosine schedule with linear warmup by LambdaLR
def attention_net(m, state=None):
    torch, nn = m.torch, m.nn

    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.ln1 = nn.LayerNorm(dim)
            self.attn = nn.MultiheadAttention(dim, heads, dropout=0.0, batch_first=True)
            self.ln2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def forward(self, x):
            h = self.ln1(x)
            x = x + self.attn(h, h, h)[0]
            return x + self.mlp(self.ln2(x))

    class Net(nn.Module):
        def __init__(self, dim=8, heads=2, patch=4, num_classes=10):
            super().__init__()
            self.to_patch = nn.Conv2d(3, dim, patch, patch)
            self.pos = nn.Parameter(torch.zeros(1, 4, dim))
            self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(2)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, num_classes)
            self.apply(self._init_weights)

        @staticmethod
        def _init_weights(mod):
            if isinstance(mod, nn.Linear):
                nn.init.trunc_normal_(mod.weight, std=.02)
                if mod.bias is not None:
                    nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.LayerNorm):
                nn.init.ones_(mod.weight)
                nn.init.zeros_(mod.bias)

        def forward(self, x):
            x = self.to_patch(x).flatten(2).permute(0, 2, 1) + self.pos
            x = self.norm(self.blocks(x))
            return self.head(x.mean(1))

    model = Net()
    init = load(m, model, state)
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in {"pos"}:
            no_decay.append(param)
        else:
            decay.append(param)
    optimizer = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.05}, {'params': no_decay, 'weight_decay': 0.0}],
                                  lr=1e-2, betas=(0.9, 0.999))
    warmup, total = 2, 10

    def lr_lambda(step):
        if step < warmup:
            return float(step + 1) / float(max(1, warmup))
        progress = float(step - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for x, y in batches(18, 3, (2, 3, 8, 8)):
        inputs, targets = torch.tensor(x), torch.tensor(y)
        loss = criterion(model(inputs), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), norm.item(), scheduler.get_last_lr()[0]]
    return init, losses


def test_attention_net():
    compare(attention_net)


# (i) evaluation: top-k accuracy (pytorch/examples' imagenet), an AverageMeter, confusion matrices by bincount and
# by indexing, per-class accuracy
def evaluation(m, state=None):
    torch, nn = m.torch, m.nn

    class AverageMeter(object):
        def __init__(self, name, fmt=':f'):
            self.name, self.fmt = name, fmt
            self.reset()

        def reset(self):
            self.val = self.avg = self.sum = self.count = 0

        def update(self, val, n=1):
            self.val = val
            self.sum += val * n
            self.count += n
            self.avg = self.sum / self.count

        def __str__(self):
            fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
            return fmtstr.format(**self.__dict__)

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

    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 10))
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    losses, top1, top5 = AverageMeter('Loss', ':.4e'), AverageMeter('Acc@1', ':6.2f'), AverageMeter('Acc@5', ':6.2f')
    num_classes = 10
    confusion = torch.zeros(num_classes, num_classes)
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    all_preds, all_targets = [], []
    model.eval()
    with torch.no_grad():
        for images, target in batches(19, 2, (7, 3, 2, 2)):
            images, target = torch.tensor(images), torch.tensor(target)
            output = model(images)
            loss = criterion(output, target)
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0], images.size(0))
            top5.update(acc5[0], images.size(0))
            _, preds = torch.max(output, 1)
            for t, p in zip(target.view(-1), preds.view(-1)):
                confusion[t.long(), p.long()] += 1
            cm += torch.bincount(num_classes * target + preds, minlength=num_classes ** 2).reshape(num_classes,
                                                                                                    num_classes)
            all_preds.append(preds.cpu())
            all_targets.append(target.cpu())
    print(' * Acc@1 {top1.avg:.3f} Acc@5 {top5.avg:.3f}'.format(top1=top1, top5=top5), str(losses))
    per_class = confusion.diag() / confusion.sum(1).clamp(min=1)
    preds, targets = torch.cat(all_preds).numpy(), torch.cat(all_targets).numpy()
    assert (cm.float() == confusion).all() and int(confusion.sum()) == 14
    assert np.array_equal(cm.numpy(), np.bincount(10 * targets + preds, minlength=100).reshape(10, 10))
    return init, [losses.avg, float(top1.avg), float(top5.avg), *per_class.tolist()]


def test_evaluation():
    compare(evaluation)


# (j) knowledge distillation (Hinton's loss as people write it): a frozen teacher, F.kl_div on temperature softmaxes
def distillation(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    teacher = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                            nn.Flatten(), nn.Linear(6, 10))
    student = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                            nn.Linear(4, 10))
    both = nn.ModuleDict({'teacher': teacher, 'student': student})
    init = load(m, both, state)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad = False

    def loss_fn_kd(outputs, labels, teacher_outputs, alpha=0.9, T=4):
        return nn.KLDivLoss(reduction='batchmean')(F.log_softmax(outputs / T, dim=1),
                                                   F.softmax(teacher_outputs / T, dim=1)) * (alpha * T * T) + \
            F.cross_entropy(outputs, labels) * (1. - alpha)

    optimizer = optim.Adam(filter(lambda p: p.requires_grad, both.parameters()), lr=1e-2)
    losses = []
    for x, y in batches(20, 2, (3, 3, 6, 6)):
        inputs, labels = torch.tensor(x), torch.tensor(y)
        with torch.no_grad():
            teacher_outputs = teacher(inputs)
        outputs = student(inputs)
        loss = loss_fn_kd(outputs, labels, teacher_outputs)
        soft = F.kl_div(F.log_softmax(outputs / 2, dim=-1), F.softmax(teacher_outputs / 2, dim=-1),
                        reduction='batchmean')
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), soft.item()]
    assert all(p.grad is None for p in teacher.parameters())
    return init, losses


def test_distillation():
    compare(distillation)


# (k) SAM (davda54's style): an Optimizer subclass wrapping a base optimizer, with its own steps and state
def sam(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class SAM(torch.optim.Optimizer):
        def __init__(self, params, base_optimizer, rho=0.05, adaptive=False, **kwargs):
            assert rho >= 0.0, f"Invalid rho, should be non-negative: {rho}"
            defaults = dict(rho=rho, adaptive=adaptive, **kwargs)
            super(SAM, self).__init__(params, defaults)
            self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
            self.param_groups = self.base_optimizer.param_groups
            self.defaults.update(self.base_optimizer.defaults)

        @torch.no_grad()
        def first_step(self, zero_grad=False):
            grad_norm = self._grad_norm()
            for group in self.param_groups:
                scale = group["rho"] / (grad_norm + 1e-12)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    self.state[p]["old_p"] = p.data.clone()
                    e_w = (torch.pow(p, 2) if group["adaptive"] else 1.0) * p.grad * scale.to(p)
                    p.add_(e_w)
            if zero_grad:
                self.zero_grad()

        @torch.no_grad()
        def second_step(self, zero_grad=False):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.data = self.state[p]["old_p"]
            self.base_optimizer.step()
            if zero_grad:
                self.zero_grad()

        @torch.no_grad()
        def step(self, closure=None):
            assert closure is not None, "Sharpness Aware Minimization requires closure, but it was not provided"
            closure = torch.enable_grad()(closure)
            self.first_step(zero_grad=True)
            closure()
            self.second_step()

        def _grad_norm(self):
            shared_device = self.param_groups[0]["params"][0].device
            norm = torch.norm(torch.stack([((torch.abs(p) if group["adaptive"] else 1.0) * p.grad).norm(p=2)
                                           .to(shared_device)
                                           for group in self.param_groups for p in group["params"]
                                           if p.grad is not None]), p=2)
            return norm

    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 10))
    init = load(m, model, state)
    optimizer = SAM(model.parameters(), torch.optim.SGD, rho=0.05, lr=0.1, momentum=0.9)
    losses = []
    for x, y in batches(21, 2, (4, 6)):
        inputs, targets = torch.tensor(x), torch.tensor(y)
        loss = F.cross_entropy(model(inputs), targets)  # the first forward-backward pass
        loss.backward()
        optimizer.first_step(zero_grad=True)
        F.cross_entropy(model(inputs), targets).backward()  # the second, at the perturbed weights
        optimizer.second_step(zero_grad=True)

        def closure():
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            return loss

        loss2 = F.cross_entropy(model(inputs), targets)
        loss2.backward()
        optimizer.step(closure)
        optimizer.zero_grad()
        losses += [loss.item(), loss2.item()]
    return init, losses


def test_sam():
    compare(sam)


# (l) data augmentation on the batch: Cutout with numpy masks, CutMix with np.random.beta and randperm,
# mixup with torch.distributions.Beta
def cutout_cutmix(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    rng = np.random.RandomState(0)

    class Cutout(object):
        def __init__(self, n_holes, length):
            self.n_holes, self.length = n_holes, length

        def __call__(self, img):
            h, w = img.size(1), img.size(2)
            mask = np.ones((h, w), np.float32)
            for n in range(self.n_holes):
                y, x = rng.randint(h), rng.randint(w)
                y1, y2 = np.clip(y - self.length // 2, 0, h), np.clip(y + self.length // 2, 0, h)
                x1, x2 = np.clip(x - self.length // 2, 0, w), np.clip(x + self.length // 2, 0, w)
                mask[y1: y2, x1: x2] = 0.
            mask = torch.from_numpy(mask)
            mask = mask.expand_as(img)
            return img * mask

    def rand_bbox(size, lam):
        W, H = size[2], size[3]
        cut_rat = np.sqrt(1. - lam)
        cut_w, cut_h = int(W * cut_rat), int(H * cut_rat)
        cx, cy = rng.randint(W), rng.randint(H)
        bbx1, bby1 = np.clip(cx - cut_w // 2, 0, W), np.clip(cy - cut_h // 2, 0, H)
        bbx2, bby2 = np.clip(cx + cut_w // 2, 0, W), np.clip(cy + cut_h // 2, 0, H)
        return bbx1, bby1, bbx2, bby2

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(4, 10))
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    cutout = Cutout(1, 4)
    losses = []
    for x, y in batches(22, 2, (4, 3, 8, 8)):
        input = torch.stack([cutout(img) for img in torch.tensor(x)])
        target = torch.tensor(y)
        lam = rng.beta(1.0, 1.0)
        rand_index = torch.arange(input.size()[0] - 1, -1, -1)  # torch.randperm(input.size()[0]) in the original
        target_a, target_b = target, target[rand_index]
        bbx1, bby1, bbx2, bby2 = rand_bbox(input.size(), lam)
        input[:, :, bbx1:bbx2, bby1:bby2] = input[rand_index, :, bbx1:bbx2, bby1:bby2]
        lam = 1 - ((bbx2 - bbx1) * (bby2 - bby1) / (input.size()[-1] * input.size()[-2]))
        output = model(input)
        loss = criterion(output, target_a) * lam + criterion(output, target_b) * (1. - lam)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses


def test_cutout_cutmix():
    compare(cutout_cutmix)


def test_random_mixing():
    """torch.randperm on the batch's device and torch.distributions.Beta draw from tnet's streams (other
    numbers than torch's): each is a permutation, a number in (0, 1)."""
    torch = tnet
    x = torch.randn(5, 3)
    index = torch.randperm(x.size(0), device=x.device)
    assert sorted(index.tolist()) == list(range(5)) and torch.equal(x[index][index.argsort()], x)
    lam = torch.distributions.beta.Beta(torch.tensor([0.4]), torch.tensor([0.4])).sample()
    assert lam.shape == (1,) and 0 <= lam.item() <= 1
    lam = float(np.random.beta(0.4, 0.4))
    mixed = lam * x + (1 - lam) * x[index, :]
    assert mixed.shape == (5, 3)


# (m) fine-tuning as the transfer-learning tutorial writes it: frozen features, a new head sized by in_features,
# set_grad_enabled per phase, running_corrects, the best weights kept by copy.deepcopy(state_dict())
def transfer_learning(m, state=None):
    import copy
    torch, nn, optim = m.torch, m.nn, m.optim

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU(inplace=True)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(4, 1000)

        def forward(self, x):
            x = self.avgpool(self.relu(self.bn1(self.conv1(x))))
            return self.fc(torch.flatten(x, 1))

    model_conv = Backbone()
    for param in model_conv.parameters():
        param.requires_grad = False
    num_ftrs = model_conv.fc.in_features
    model_conv.fc = nn.Linear(num_ftrs, 2)
    init = load(m, model_conv, state)
    criterion = nn.CrossEntropyLoss()
    optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.001, momentum=0.9)
    exp_lr_scheduler = optim.lr_scheduler.StepLR(optimizer_conv, step_size=7, gamma=0.1)
    dataloaders = {phase: [(torch.tensor(x), torch.tensor(y)) for x, y in batches(23 + i, 2, (3, 3, 6, 6), classes=2)]
                   for i, phase in enumerate(['train', 'val'])}
    dataset_sizes = {phase: 6 for phase in dataloaders}
    best_model_wts = copy.deepcopy(model_conv.state_dict())
    best_acc = 0.0
    losses = []
    for epoch in range(1):
        for phase in ['train', 'val']:
            if phase == 'train':
                model_conv.train()
            else:
                model_conv.eval()
            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                optimizer_conv.zero_grad()
                with torch.set_grad_enabled(phase == 'train'):
                    outputs = model_conv(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == 'train':
                        loss.backward()
                        optimizer_conv.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == 'train':
                exp_lr_scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.float() / dataset_sizes[phase]  # .double() in the tutorial: no float64
            print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')
            losses += [epoch_loss, epoch_acc.item()]
            if phase == 'val' and epoch_acc >= best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model_conv.state_dict())
    model_conv.load_state_dict(best_model_wts)
    assert model_conv.conv1.weight.grad is None and not model_conv.bn1.weight.requires_grad
    return init, losses


def test_transfer_learning():
    compare(transfer_learning)


# (n) a Dataset subclass over numpy arrays, DataLoader's worker options, gradient accumulation, the lr set by hand
# (adjust_learning_rate), torch.amp's newer names switched off, model.zero_grad()
def dataset_loop(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    rng = np.random.default_rng(24)

    class NumpyDataset(data.Dataset):
        def __init__(self, images, labels, transform=None):
            self.images, self.labels, self.transform = images, labels, transform

        def __len__(self):
            return len(self.images)

        def __getitem__(self, idx):
            img = self.images[idx].astype(np.float32) / 255.0
            img = (img - 0.5) / 0.25
            if self.transform is not None:
                img = self.transform(img)
            return torch.from_numpy(img.transpose(2, 0, 1).copy()), int(self.labels[idx])

    dataset = NumpyDataset(rng.integers(0, 256, (8, 6, 6, 3), dtype=np.uint8), rng.integers(0, 10, 8),
                           transform=lambda a: a[:, ::-1])  # a horizontal flip
    loader = data.DataLoader(dataset, batch_size=2, shuffle=False, num_workers=2, pin_memory=True,
                             persistent_workers=True, drop_last=False)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 10))
    init = load(m, model, state)
    if torch.cuda.is_available():
        model.cuda()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scaler = torch.amp.GradScaler('cuda', enabled=False)

    def adjust_learning_rate(optimizer, epoch, lr=0.1):
        lr = lr * (0.1 ** (epoch // 1))
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr

    accum_steps, losses = 2, []
    for epoch in range(2):
        adjust_learning_rate(optimizer, epoch)
        model.zero_grad()
        for i, (images, target) in enumerate(loader):
            if torch.cuda.is_available():
                images, target = images.cuda(non_blocking=True), target.cuda(non_blocking=True)
            with torch.autocast(device_type='cuda', dtype=torch.float16, enabled=False):
                output = model(images)
                loss = F.cross_entropy(output, target) / accum_steps
            scaler.scale(loss).backward()
            if (i + 1) % accum_steps == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            losses.append(loss.item())
    assert optimizer.param_groups[0]['lr'] == pytest.approx(0.01)
    return init, losses


def test_dataset_loop():
    compare(dataset_loop)


# (o) losses and init written by hand: focal loss by gather, label smoothing by scatter_, one_hot soft targets,
# class weights, zero-init of the last BN in each block, calculate_gain, ReduceLROnPlateau, clip_grad_value_
def handmade_losses(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))

    class Net(nn.Module):
        def __init__(self, zero_init_residual=True):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU())
            self.block = Block(4)
            self.fc = nn.Linear(4, 10)
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    nn.init.xavier_uniform_(mod.weight, gain=nn.init.calculate_gain('relu'))
                elif isinstance(mod, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.constant_(mod.weight, 1)
                    nn.init.constant_(mod.bias, 0)
            if zero_init_residual:
                for mod in self.modules():
                    if isinstance(mod, Block):
                        nn.init.constant_(mod.bn2.weight, 0)
            self.fc.weight.data.uniform_(-0.1, 0.1)
            self.fc.bias.data.fill_(0.01)

        def forward(self, x):
            return self.fc(F.adaptive_avg_pool2d(self.block(self.stem(x)), 1).view(x.size(0), -1))

    class FocalLoss(nn.Module):
        def __init__(self, gamma=2.0):
            super(FocalLoss, self).__init__()
            self.gamma = gamma

        def forward(self, input, target):
            logpt = F.log_softmax(input, dim=1)
            logpt = logpt.gather(1, target.view(-1, 1)).view(-1)
            pt = logpt.exp()
            return (-1 * (1 - pt) ** self.gamma * logpt).mean()

    class LabelSmoothingLoss(nn.Module):
        def __init__(self, classes, smoothing=0.1, dim=-1):
            super(LabelSmoothingLoss, self).__init__()
            self.confidence, self.smoothing, self.cls, self.dim = 1.0 - smoothing, smoothing, classes, dim

        def forward(self, pred, target):
            pred = pred.log_softmax(dim=self.dim)
            with torch.no_grad():
                true_dist = torch.zeros_like(pred)
                true_dist.fill_(self.smoothing / (self.cls - 1))
                true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
            return torch.mean(torch.sum(-true_dist * pred, dim=self.dim))

    model = Net()
    init = load(m, model, state)
    weights = torch.tensor([1.0, 2.0] * 5)
    criteria = [FocalLoss(), LabelSmoothingLoss(10), nn.CrossEntropyLoss(weight=weights)]
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'min', factor=0.5, patience=0)
    losses = []
    for x, y in batches(25, 3, (3, 3, 6, 6)):
        inputs, targets = torch.tensor(x), torch.tensor(y)
        outputs = model(inputs)
        soft = F.one_hot(targets, num_classes=10).float() * 0.9 + 0.01
        loss = sum(c(outputs, targets) for c in criteria) + \
            torch.sum(-soft * F.log_softmax(outputs, dim=-1), dim=-1).mean()
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
        optimizer.step()
        scheduler.step(10.0)  # a validation loss that never improves
        losses += [loss.item(), optimizer.param_groups[0]['lr']]
    return init, losses


def test_handmade_losses():
    compare(handmade_losses)


# (p) checkpoints across a DataParallel wrapper: model.module.state_dict(), map_location as a lambda and as a
# string, strict=False with a new head, the GradScaler's and scheduler's state
def checkpoint_styles(m, state=None, path=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
    init = load(m, net, state)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    model = nn.DataParallel(net.to(device))
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    losses = []
    for x, y in batches(26, 1, (2, 3, 6, 6)):
        inputs, targets = torch.tensor(x).to(device), torch.tensor(y).to(device)
        loss = F.cross_entropy(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    torch.save({'state_dict': model.module.state_dict(), 'optimizer': optimizer.state_dict(),
                'scheduler': scheduler.state_dict(), 'scaler': scaler.state_dict(), 'epoch': 3}, path)
    checkpoint = torch.load(path, map_location=lambda storage, loc: storage)
    fresh = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10)).to(device)
    fresh.load_state_dict(checkpoint['state_dict'])
    optimizer2 = optim.Adam(fresh.parameters(), lr=1e-2)
    optimizer2.load_state_dict(checkpoint['optimizer'])
    scheduler2 = optim.lr_scheduler.CosineAnnealingLR(optimizer2, T_max=4)
    scheduler2.load_state_dict(checkpoint['scheduler'])
    scaler.load_state_dict(checkpoint['scaler'])
    loss = F.cross_entropy(fresh(inputs), targets)
    optimizer2.zero_grad()
    loss.backward()
    optimizer2.step()
    losses += [loss.item(), scheduler2.get_last_lr()[0], F.cross_entropy(fresh(inputs), targets).item()]
    headless = torch.load(path, map_location='cpu')['state_dict']
    headless = {k: v for k, v in headless.items() if not k.startswith('4.')}
    other = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    missing, unexpected = other.load_state_dict(headless, strict=False)
    assert sorted(missing) == ['4.bias', '4.weight'] and not unexpected
    return init, losses


def test_checkpoint_styles(tmp_path):
    compare(checkpoint_styles, path=str(tmp_path / "model_best.pth.tar"))


# (q) adversarial training (FGSM from the tutorial, PGD in madry's style): the input's gradient, sign(), the
# perturbation written through .data, delta.grad.zero_()
def adversarial(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 10))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    epsilon, alpha, losses = 8 / 255, 2 / 255, []

    def fgsm_attack(image, epsilon, data_grad):
        sign_data_grad = data_grad.sign()
        perturbed_image = image + epsilon * sign_data_grad
        perturbed_image = torch.clamp(perturbed_image, 0, 1)
        return perturbed_image

    def pgd_linf(model, X, y, epsilon, alpha, num_iter):
        delta = torch.zeros_like(X, requires_grad=True)
        for t in range(num_iter):
            loss = nn.CrossEntropyLoss()(model(X + delta), y)
            loss.backward()
            delta.data = (delta + alpha * delta.grad.detach().sign()).clamp(-epsilon, epsilon)
            delta.grad.zero_()
        return delta.detach()

    for x, y in batches(27, 2, (2, 3, 6, 6)):
        data, target = torch.tensor((x + 3) / 6), torch.tensor(y)
        data.requires_grad = True
        output = model(data)
        loss = F.nll_loss(F.log_softmax(output, dim=1), target)
        model.zero_grad()
        loss.backward()
        data_grad = data.grad.data
        perturbed_data = fgsm_attack(data, epsilon, data_grad)
        delta = pgd_linf(model, data.detach(), target, epsilon, alpha, 2)
        adv_loss = F.cross_entropy(model(perturbed_data), target) + \
            F.cross_entropy(model(data.detach() + delta), target)
        optimizer.zero_grad()
        adv_loss.backward()
        optimizer.step()
        losses += [loss.item(), adv_loss.item(), delta.abs().max().item()]
    return init, losses


def test_adversarial():
    compare(adversarial)


# (r) SimCLR's NT-Xent loss: F.normalize, a similarity matrix, the diagonal masked by an eye, labels by arange
def simclr(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    encoder = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    projector = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
    model = nn.Sequential(encoder, projector)
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)

    def info_nce_loss(features, batch_size, n_views=2, temperature=0.5):
        labels = torch.cat([torch.arange(batch_size) for i in range(n_views)], dim=0)
        labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
        features = F.normalize(features, dim=1)
        similarity_matrix = torch.matmul(features, features.T)
        mask = torch.eye(labels.shape[0], dtype=torch.bool)
        labels = labels[~mask].view(labels.shape[0], -1)
        similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
        positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
        negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
        logits = torch.cat([positives, negatives], dim=1)
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        return logits / temperature, labels

    def nt_xent(z1, z2, temperature=0.5):  # the other common form
        n = z1.size(0)
        z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
        sim = z @ z.t() / temperature
        sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), -9e15)
        targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
        return F.cross_entropy(sim, targets)

    losses = []
    for x, _ in batches(28, 2, (3, 3, 6, 6)):
        images = torch.tensor(x)
        views = torch.cat([images, torch.flip(images, dims=[3])], dim=0)
        features = model(views)
        logits, labels = info_nce_loss(features, 3)
        loss = F.cross_entropy(logits, labels)
        z1, z2 = features.chunk(2)
        loss2 = nt_xent(z1, z2)
        optimizer.zero_grad()
        (loss + loss2).backward()
        optimizer.step()
        losses += [loss.item(), loss2.item()]
    return init, losses


def test_simclr():
    compare(simclr)


# (s) FixMatch-style semi-supervision: interleave by reshape/transpose, chunk, confidence masks by ge(), per-sample
# losses, timm's drop_path by bernoulli_, BatchNorm frozen by named_modules(), an EMA by AveragedModel
def fixmatch(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    from importlib import import_module
    swa_utils = import_module(torch.__name__ + ".optim.swa_utils")

    def drop_path(x, drop_prob: float = 0., training: bool = False, scale_by_keep: bool = True):
        if drop_prob == 0. or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0 and scale_by_keep:
            random_tensor.div_(keep_prob)
        return x * random_tensor

    class DropPath(nn.Module):
        def __init__(self, drop_prob=None):
            super(DropPath, self).__init__()
            self.drop_prob = drop_prob

        def forward(self, x):
            return drop_path(x, self.drop_prob, self.training)

    class Net(nn.Module):
        def __init__(self, drop=0.0):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.drop_path = DropPath(drop)
            self.fc = nn.Linear(4, 10)

        def forward(self, x):
            h = F.relu(self.bn(self.conv(x)))
            h = h + self.drop_path(h)
            return self.fc(h.mean((2, 3)))

    def interleave(x, size):
        s = list(x.shape)
        return x.reshape([-1, size] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])

    def de_interleave(x, size):
        s = list(x.shape)
        return x.reshape([size, -1] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])

    model = Net()
    init = load(m, model, state)
    ema_model = swa_utils.AveragedModel(model, avg_fn=lambda avg, p, n: 0.9 * avg + 0.1 * p)
    no_decay = ['bias', 'bn']
    grouped_parameters = [
        {'params': [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         'weight_decay': 5e-4},
        {'params': [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], 'weight_decay': 0.0}]
    optimizer = optim.SGD(grouped_parameters, lr=0.03, momentum=0.9, nesterov=True)
    mu, threshold, losses = 2, 0.1, []
    for (xl, yl), (xw, _), (xs, _) in zip(*[batches(29 + i, 2, (n, 3, 6, 6)) for i, n in enumerate((2, 4, 4))]):
        inputs_x, targets_x = torch.tensor(xl), torch.tensor(yl)
        inputs = interleave(torch.cat((inputs_x, torch.tensor(xw), torch.tensor(xs))), 2 * mu + 1)
        logits = de_interleave(model(inputs), 2 * mu + 1)
        logits_x = logits[:2]
        logits_u_w, logits_u_s = logits[2:].chunk(2)
        Lx = F.cross_entropy(logits_x, targets_x, reduction='mean')
        pseudo_label = torch.softmax(logits_u_w.detach() / 1.0, dim=-1)
        max_probs, targets_u = torch.max(pseudo_label, dim=-1)
        mask = max_probs.ge(threshold).float()
        Lu = (F.cross_entropy(logits_u_s, targets_u, reduction='none') * mask).mean()
        loss = Lx + 1.0 * Lu
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema_model.update_parameters(model)
        losses += [Lx.item(), Lu.item(), mask.mean().item()]
    for name, module in model.named_modules():
        if isinstance(module, nn.BatchNorm2d):
            module.eval()
            module.weight.requires_grad_(False)
    with torch.no_grad():
        losses.append(F.cross_entropy(ema_model(inputs_x), targets_x).item())
    dropped = Net(drop=0.5)
    dropped(inputs_x).sum().backward()
    return init, losses


def test_fixmatch():
    compare(fixmatch)


# idioms these scripts found missing, each now as torch's
FOUND_MISSING = {
    "fill_diagonal_": lambda torch: torch.zeros(3, 3).fill_diagonal_(-9e15),
    "byte": lambda torch: (torch.ones(2) > 0).byte(),
    "gumbel_softmax": lambda torch: torch.nn.functional.gumbel_softmax(torch.zeros(2, 3), tau=1, hard=True),
    "set_printoptions": lambda torch: torch.set_printoptions(precision=4),
    "manual_seed returns a Generator": lambda torch: torch.manual_seed(0).initial_seed(),
}


@pytest.mark.parametrize("name", FOUND_MISSING)
def test_idioms_found_missing(name):
    fn = FOUND_MISSING[name]
    try:
        fn(imports("torch").torch)
        fn(tnet)
    finally:
        for torch in (imports("torch").torch, tnet):
            torch.set_printoptions(profile="default")
