"""CIFAR/MNIST model-zoo code the earlier files leave out, written from memory in its sources' styles and ported by
its imports alone, as test_ported_scripts.py: weiaicunzai/pytorch-cifar100's less common models (RiR's two streams
passed as a tuple through nn.Sequential blocks named with spaces, ShuffleNet's ChannelShuffle and group pointwise
convolutions fused by add or cat, ShuffleNetV2's channel_split views, MobileNet's width multiplier, MobileNetV2's
in-place residual add, SEResNet's excitation by expand_as, PreActResNet, GoogLeNet's nn.BatchNorm2d(n, n) that passes
n as eps, DenseNet's add_module names); bearpaw/pytorch-classification's DenseNet (init by m.weight.data.normal_(0,
math.sqrt(2. / n))) and CIFAR AlexNet; huyvnphan/PyTorch_CIFAR10's GoogLeNet with transform_input, its WarmupCosineLR
(an _LRScheduler subclass whose get_lr reads self._get_lr_called_within_step) stepped per iteration, and its
Lightning module's step; chenyaofo/pytorch-cifar-models' entry points made by functools.partial (resnet20, vgg11_bn,
mobilenetv2); osmr's pytorchcv CIFAR ResNet, SE-ResNet and PreResNet (ConvBlock's activation lambdas, PreConvBlock's
pre-activation returned beside the output); gram-ai/capsule-networks (routing priors by a 5-D broadcast matmul, a
softmax over a transposed dimension, one-hot targets by torch.eye(...).index_select); akamaster's trainer
(DataParallel, checkpoints through torch.save and torch.load, MultiStepLR(last_epoch=start_epoch - 1) resuming from
initial_lr); erykml's and activatedgeek's LeNet-5s (tanh and AvgPool2d; OrderedDict stages, two summed C2 branches)
and the 1998 paper's (C3's connection table, trainable subsampling, RBF outputs, the MAP criterion); ResNeSt's
split attention, Res2Net's hierarchical splits and octave convolutions in small CIFAR networks. Each runs in
tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into
a few numbers, agree. Numpy draws the batches; shapes are tiny and runs take two steps; where a repository hard-codes
dropout, its probability is a parameter set to 0 here (tnet draws other masks).

Fixed in tnet on the way (each with its unit test):
- LRScheduler had no _get_lr_called_within_step (WarmupCosineLR's get_lr raised AttributeError); it is now True
  while step() calls get_lr, as torch's (test_lr_scheduler.py).
- softmax, log_softmax, softmin and gumbel_softmax over a dim not the last returned a permuted view of their rows,
  and kthvalue a slice of its sort: .view(...) of them raised where torch's contiguous results take it
  (test_softmax.py, test_sort_scan.py; found while checking the capsule routing's softmax over dim 2).
- conv1d's and conv_transpose1d's [N, C, L] outputs keep NLC memory, which .view(N, -1) refused; view now copies
  them as it does a channels-last activation (test_copy.py).
- Module.state_dict saved every module's entries itself, bypassing a class's _save_to_state_dict or a child's
  state_dict override (a quantised layer's extra entries went missing); it now calls them as torch's, and
  Module._get_name exists (test_modules.py).
Found and documented (README's porting section): an element-wise product of a transposed tensor is contiguous in
tnet, where torch's keeps the transposed layout, so the capsule network's .view, which torch refuses, works in tnet."""
import math

import numpy as np
import pytest

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def train_steps(m, model, rng, shape, steps=2, classes=10, **sgd):
    """weiaicunzai's train.py loop without its warm-up (test_ported_scripts34 runs that): SGD with nesterov momentum
    and weight decay, MultiStepLR(milestones, gamma=0.2) stepped each epoch, then an eval pass counting
    preds.eq(labels).sum() under torch.no_grad()."""
    torch, nn, optim = m.torch, m.nn, m.optim
    loss_function = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=sgd.get("lr", 0.05), momentum=0.9, weight_decay=5e-4, nesterov=True)
    train_scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1], gamma=0.2)
    losses = []
    for epoch in range(steps):
        model.train()
        images = torch.tensor(normal(rng, *shape))
        labels = torch.tensor(rng.integers(0, classes, shape[0]))
        optimizer.zero_grad()
        outputs = model(images)
        loss = loss_function(outputs, labels)
        loss.backward()
        optimizer.step()
        train_scheduler.step()
        losses += [loss.item(), optimizer.param_groups[0]['lr']]
    model.eval()
    correct = 0.0
    with torch.no_grad():
        images = torch.tensor(normal(rng, *shape))
        labels = torch.tensor(rng.integers(0, classes, shape[0]))
        outputs = model(images)
        _, preds = outputs.max(1)
        correct += preds.eq(labels).sum()
    return losses + [float(correct), outputs.sum().item()]


# (a) weiaicunzai/pytorch-cifar100's models/rir.py (ResNet in ResNet): ResnetInit's residual and transient streams,
# each fed by its own and the other's convolution, a shortcut on the residual stream only; RiRBlock's layers added by
# add_module("generalized layers{}".format(index), ...) and called with a tuple; the two streams concatenated
# before a strided conv; _weight_init by the deprecated torch.nn.init.kaiming_normal and m.bias.data.fill_(0.01)
def rir(m, state=None, base=4, num_classes=10, drop=0.0):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(1)

    class ResnetInit(nn.Module):
        def __init__(self, in_channel, out_channel, stride):
            super(ResnetInit, self).__init__()
            self.residual_stream_conv = nn.Conv2d(in_channel, out_channel, 3, padding=1, stride=stride)
            self.transient_stream_conv = nn.Conv2d(in_channel, out_channel, 3, padding=1, stride=stride)
            self.residual_stream_conv_across = nn.Conv2d(in_channel, out_channel, 3, padding=1, stride=stride)
            self.transient_stream_conv_across = nn.Conv2d(in_channel, out_channel, 3, padding=1, stride=stride)
            self.residual_bn_relu = nn.Sequential(nn.BatchNorm2d(out_channel), nn.ReLU(inplace=True))
            self.transient_bn_relu = nn.Sequential(nn.BatchNorm2d(out_channel), nn.ReLU(inplace=True))
            self.short_cut = nn.Sequential()
            if in_channel != out_channel or stride != 1:
                self.short_cut = nn.Sequential(nn.Conv2d(in_channel, out_channel, kernel_size=1, stride=stride))

        def forward(self, x):
            x_residual, x_transient = x
            residual_r_r = self.residual_stream_conv(x_residual)
            residual_r_t = self.residual_stream_conv_across(x_residual)
            residual_shortcut = self.short_cut(x_residual)
            transient_t_t = self.transient_stream_conv(x_transient)
            transient_t_r = self.transient_stream_conv_across(x_transient)
            x_residual = self.residual_bn_relu(residual_r_r + transient_t_r + residual_shortcut)
            x_transient = self.transient_bn_relu(residual_r_t + transient_t_t)
            return x_residual, x_transient

    class RiRBlock(nn.Module):
        def __init__(self, in_channel, out_channel, layer_num, stride, layer=ResnetInit):
            super().__init__()
            self.resnetinit = self._make_layers(in_channel, out_channel, layer_num, stride)

        def forward(self, x):
            x_residual, x_transient = self.resnetinit(x)
            return (x_residual, x_transient)

        def _make_layers(self, in_channel, out_channel, layer_num, stride, layer=ResnetInit):
            strides = [stride] + [1] * (layer_num - 1)
            layers = nn.Sequential()
            for index, s in enumerate(strides):
                layers.add_module("generalized layers{}".format(index), layer(in_channel, out_channel, s))
                in_channel = out_channel
            return layers

    class ResnetInResneet(nn.Module):
        def __init__(self, num_classes=100):
            super().__init__()
            self.residual_pre_conv = nn.Sequential(nn.Conv2d(3, base, 3, padding=1), nn.BatchNorm2d(base),
                                                   nn.ReLU(inplace=True))
            self.transient_pre_conv = nn.Sequential(nn.Conv2d(3, base, 3, padding=1), nn.BatchNorm2d(base),
                                                    nn.ReLU(inplace=True))
            self.rir1 = RiRBlock(base, base, 2, 1)
            self.rir2 = RiRBlock(base, base * 2, 1, 2)
            self.conv1 = nn.Sequential(
                nn.Conv2d(base * 4, num_classes, kernel_size=3, stride=2),  # without this convolution, loss will soon be nan
                nn.BatchNorm2d(num_classes),
                nn.ReLU(inplace=True),
            )
            self.classifier = nn.Sequential(
                nn.Linear(num_classes, 12),
                nn.ReLU(),
                nn.Dropout(drop),
                nn.Linear(12, num_classes),
            )
            self._weight_init()

        def forward(self, x):
            x_residual = self.residual_pre_conv(x)
            x_transient = self.transient_pre_conv(x)
            x_residual, x_transient = self.rir1((x_residual, x_transient))
            x_residual, x_transient = self.rir2((x_residual, x_transient))
            h = torch.cat([x_residual, x_transient], 1)
            h = self.conv1(h)
            h = h.view(h.size()[0], -1)
            h = self.classifier(h)
            return h

        def _weight_init(self):
            for m_ in self.modules():
                if isinstance(m_, nn.Conv2d):
                    torch.nn.init.kaiming_normal(m_.weight)
                    m_.bias.data.fill_(0.01)

    net = ResnetInResneet(num_classes)
    assert "rir1.resnetinit.generalized layers1.short_cut" in dict(net.named_modules())
    init = load(m, net, state)
    return init, train_steps(m, net, rng, (2, 3, 8, 8)) + summary(net.parameters()) + summary(net.buffers())


def test_weiaicunzai_rir():
    compare(rir)


# (b) weiaicunzai/pytorch-cifar100's models/shufflenet.py (ShuffleNet v1): ChannelShuffle by x.data.size(), view into
# (groups, channels_per_group), transpose(1, 2).contiguous() and view back; PointwiseConv2d of groups; a unit that
# adds (torch.add) its shortcut, or at stride 2 concatenates an AvgPool2d(3, stride=2, padding=1) of it; the stage
# builder passing its own list as stage= (as the source does)
def shufflenet(m, state=None, out_channels=(8, 24, 48), groups=2):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(2)

    class BasicConv2d(nn.Module):
        def __init__(self, input_channels, output_channels, kernel_size, **kwargs):
            super().__init__()
            self.conv = nn.Conv2d(input_channels, output_channels, kernel_size, **kwargs)
            self.bn = nn.BatchNorm2d(output_channels)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.conv(x)
            x = self.bn(x)
            x = self.relu(x)
            return x

    class ChannelShuffle(nn.Module):
        def __init__(self, groups):
            super().__init__()
            self.groups = groups

        def forward(self, x):
            batchsize, channels, height, width = x.data.size()
            channels_per_group = int(channels / self.groups)
            x = x.view(batchsize, self.groups, channels_per_group, height, width)
            x = x.transpose(1, 2).contiguous()
            x = x.view(batchsize, -1, height, width)
            return x

    class DepthwiseConv2d(nn.Module):
        def __init__(self, input_channels, output_channels, kernel_size, **kwargs):
            super().__init__()
            self.depthwise = nn.Sequential(nn.Conv2d(input_channels, output_channels, kernel_size, **kwargs),
                                           nn.BatchNorm2d(output_channels))

        def forward(self, x):
            return self.depthwise(x)

    class PointwiseConv2d(nn.Module):
        def __init__(self, input_channels, output_channels, **kwargs):
            super().__init__()
            self.pointwise = nn.Sequential(nn.Conv2d(input_channels, output_channels, 1, **kwargs),
                                           nn.BatchNorm2d(output_channels))

        def forward(self, x):
            return self.pointwise(x)

    class ShuffleNetUnit(nn.Module):
        def __init__(self, input_channels, output_channels, stage, stride, groups):
            super().__init__()
            self.bottlneck = nn.Sequential(PointwiseConv2d(input_channels, int(output_channels / 4), groups=groups),
                                           nn.ReLU(inplace=True))
            if stage == 2:
                self.bottlneck = nn.Sequential(PointwiseConv2d(input_channels, int(output_channels / 4), groups=groups),
                                               nn.ReLU(inplace=True))
            self.channel_shuffle = ChannelShuffle(groups)
            self.depthwise = DepthwiseConv2d(int(output_channels / 4), int(output_channels / 4), 3,
                                             groups=int(output_channels / 4), stride=stride, padding=1)
            self.expand = PointwiseConv2d(int(output_channels / 4), output_channels, groups=groups)
            self.relu = nn.ReLU(inplace=True)
            self.fusion = self._add
            self.shortcut = nn.Sequential()
            if stride != 1 or input_channels != output_channels:
                self.shortcut = nn.AvgPool2d(3, stride=2, padding=1)
                self.expand = PointwiseConv2d(int(output_channels / 4), output_channels - input_channels, groups=groups)
                self.fusion = self._cat

        def _add(self, x, y):
            return torch.add(x, y)

        def _cat(self, x, y):
            return torch.cat([x, y], dim=1)

        def forward(self, x):
            shortcut = self.shortcut(x)
            shuffled = self.bottlneck(x)
            shuffled = self.channel_shuffle(shuffled)
            shuffled = self.depthwise(shuffled)
            shuffled = self.expand(shuffled)
            output = self.fusion(shortcut, shuffled)
            output = self.relu(output)
            return output

    class ShuffleNet(nn.Module):
        def __init__(self, num_blocks, num_classes=100, groups=3):
            super().__init__()
            self.conv1 = BasicConv2d(3, out_channels[0], 3, padding=1, stride=1)
            self.input_channels = out_channels[0]
            self.stage2 = self._make_stage(ShuffleNetUnit, num_blocks[0], out_channels[1], stride=2, stage=2,
                                           groups=groups)
            self.stage3 = self._make_stage(ShuffleNetUnit, num_blocks[1], out_channels[2], stride=2, stage=3,
                                           groups=groups)
            self.avg = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(out_channels[2], num_classes)

        def forward(self, x):
            x = self.conv1(x)
            x = self.stage2(x)
            x = self.stage3(x)
            x = self.avg(x)
            x = x.view(x.size(0), -1)
            x = self.fc(x)
            return x

        def _make_stage(self, block, num_blocks, output_channels, stride, stage, groups):
            strides = [stride] + [1] * (num_blocks - 1)
            stage = []
            for stride in strides:
                stage.append(block(self.input_channels, output_channels, stride=stride, stage=stage, groups=groups))
                self.input_channels = output_channels
            return nn.Sequential(*stage)

    net = ShuffleNet([2, 1], num_classes=10, groups=groups)
    init = load(m, net, state)
    return init, train_steps(m, net, rng, (2, 3, 16, 16)) + summary(net.parameters())


def test_weiaicunzai_shufflenet():
    compare(shufflenet)


# (c) weiaicunzai/pytorch-cifar100's models/shufflenetv2.py: channel_split by torch.split (two channel views of the
# input, the residual's 1x1 convolution reading a non-contiguous half), channel_shuffle over 2 groups after the cat,
# the stride-2 unit's depthwise shortcut, F.adaptive_avg_pool2d(x, 1); widths from a ratio table, cut here
def shufflenetv2(m, state=None, out_channels=(8, 16, 32)):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(3)

    def channel_split(x, split):
        """split a tensor into two pieces along channel dimension
        Args:
            x: input tensor
            split:(int) channel size for each pieces
        """
        assert x.size(1) == split * 2
        return torch.split(x, split, dim=1)

    def channel_shuffle(x, groups):
        batch_size, channels, height, width = x.size()
        channels_per_group = int(channels // groups)
        x = x.view(batch_size, groups, channels_per_group, height, width)
        x = x.transpose(1, 2).contiguous()
        x = x.view(batch_size, -1, height, width)
        return x

    class ShuffleUnit(nn.Module):
        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            self.stride = stride
            self.in_channels = in_channels
            self.out_channels = out_channels
            if stride != 1 or in_channels != out_channels:
                self.residual = nn.Sequential(
                    nn.Conv2d(in_channels, in_channels, 1),
                    nn.BatchNorm2d(in_channels),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(in_channels, in_channels, 3, stride=stride, padding=1, groups=in_channels),
                    nn.BatchNorm2d(in_channels),
                    nn.Conv2d(in_channels, int(out_channels / 2), 1),
                    nn.BatchNorm2d(int(out_channels / 2)),
                    nn.ReLU(inplace=True)
                )
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_channels, in_channels, 3, stride=stride, padding=1, groups=in_channels),
                    nn.BatchNorm2d(in_channels),
                    nn.Conv2d(in_channels, int(out_channels / 2), 1),
                    nn.BatchNorm2d(int(out_channels / 2)),
                    nn.ReLU(inplace=True)
                )
            else:
                self.shortcut = nn.Sequential()
                in_channels = int(in_channels / 2)
                self.residual = nn.Sequential(
                    nn.Conv2d(in_channels, in_channels, 1),
                    nn.BatchNorm2d(in_channels),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(in_channels, in_channels, 3, stride=stride, padding=1, groups=in_channels),
                    nn.BatchNorm2d(in_channels),
                    nn.Conv2d(in_channels, in_channels, 1),
                    nn.BatchNorm2d(in_channels),
                    nn.ReLU(inplace=True)
                )

        def forward(self, x):
            if self.stride == 1 and self.out_channels == self.in_channels:
                shortcut, residual = channel_split(x, int(self.in_channels / 2))
            else:
                shortcut = x
                residual = x
            shortcut = self.shortcut(shortcut)
            residual = self.residual(residual)
            x = torch.cat([shortcut, residual], dim=1)
            x = channel_shuffle(x, 2)
            return x

    class ShuffleNetV2(nn.Module):
        def __init__(self, ratio=1, class_num=100):
            super().__init__()
            self.pre = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6))
            self.stage2 = self._make_stage(6, out_channels[0], 1)
            self.stage3 = self._make_stage(out_channels[0], out_channels[1], 1)
            self.conv5 = nn.Sequential(nn.Conv2d(out_channels[1], out_channels[2], 1), nn.BatchNorm2d(out_channels[2]),
                                       nn.ReLU(inplace=True))
            self.fc = nn.Linear(out_channels[2], class_num)

        def forward(self, x):
            x = self.pre(x)
            x = self.stage2(x)
            x = self.stage3(x)
            x = self.conv5(x)
            x = F.adaptive_avg_pool2d(x, 1)
            x = x.view(x.size(0), -1)
            x = self.fc(x)
            return x

        def _make_stage(self, in_channels, out_channels, repeat):
            layers = []
            layers.append(ShuffleUnit(in_channels, out_channels, 2))
            while repeat:
                layers.append(ShuffleUnit(out_channels, out_channels, 1))
                repeat -= 1
            return nn.Sequential(*layers)

    net = ShuffleNetV2(class_num=10)
    init = load(m, net, state)
    return init, train_steps(m, net, rng, (2, 3, 16, 16)) + summary(net.parameters())


def test_weiaicunzai_shufflenetv2():
    compare(shufflenetv2)


# (d) weiaicunzai/pytorch-cifar100's models/mobilenet.py (DepthSeperabelConv2d's depthwise and pointwise Sequentials,
# channels int(c * alpha) of a width_multiplier, bias=False through **kwargs) and models/mobilenetv2.py
# (LinearBottleNeck's ReLU6, `residual += x` in place on a BatchNorm's output, the stem's 1x1 conv with padding=1 that
# grows the map, a 1x1 conv as the classifier after F.adaptive_avg_pool2d); channel counts cut
def mobilenets(m, state=None, arch="mobilenet", alpha=1 / 16):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(4)

    class DepthSeperabelConv2d(nn.Module):
        def __init__(self, input_channels, output_channels, kernel_size, **kwargs):
            super().__init__()
            self.depthwise = nn.Sequential(
                nn.Conv2d(input_channels, input_channels, kernel_size, groups=input_channels, **kwargs),
                nn.BatchNorm2d(input_channels),
                nn.ReLU(inplace=True)
            )
            self.pointwise = nn.Sequential(
                nn.Conv2d(input_channels, output_channels, 1),
                nn.BatchNorm2d(output_channels),
                nn.ReLU(inplace=True)
            )

        def forward(self, x):
            x = self.depthwise(x)
            x = self.pointwise(x)
            return x

    class BasicConv2d(nn.Module):
        def __init__(self, input_channels, output_channels, kernel_size, **kwargs):
            super().__init__()
            self.conv = nn.Conv2d(input_channels, output_channels, kernel_size, **kwargs)
            self.bn = nn.BatchNorm2d(output_channels)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.conv(x)
            x = self.bn(x)
            x = self.relu(x)
            return x

    class MobileNet(nn.Module):
        def __init__(self, width_multiplier=1, class_num=100):
            super().__init__()
            alpha = width_multiplier
            self.stem = nn.Sequential(
                BasicConv2d(3, int(32 * alpha), 3, padding=1, bias=False),
                DepthSeperabelConv2d(int(32 * alpha), int(64 * alpha), 3, padding=1, bias=False)
            )
            self.conv1 = nn.Sequential(
                DepthSeperabelConv2d(int(64 * alpha), int(128 * alpha), 3, stride=2, padding=1, bias=False),
                DepthSeperabelConv2d(int(128 * alpha), int(128 * alpha), 3, padding=1, bias=False)
            )
            self.conv2 = nn.Sequential(
                DepthSeperabelConv2d(int(128 * alpha), int(256 * alpha), 3, stride=2, padding=1, bias=False),
                DepthSeperabelConv2d(int(256 * alpha), int(256 * alpha), 3, padding=1, bias=False)
            )
            self.conv3 = nn.Sequential(
                DepthSeperabelConv2d(int(256 * alpha), int(512 * alpha), 3, stride=2, padding=1, bias=False),
                DepthSeperabelConv2d(int(512 * alpha), int(512 * alpha), 3, padding=1, bias=False),
                DepthSeperabelConv2d(int(512 * alpha), int(512 * alpha), 3, padding=1, bias=False),
            )
            self.fc = nn.Linear(int(512 * alpha), class_num)
            self.avg = nn.AdaptiveAvgPool2d(1)

        def forward(self, x):
            x = self.stem(x)
            x = self.conv1(x)
            x = self.conv2(x)
            x = self.conv3(x)
            x = self.avg(x)
            x = x.view(x.size(0), -1)
            x = self.fc(x)
            return x

    class LinearBottleNeck(nn.Module):
        def __init__(self, in_channels, out_channels, stride, t=6, class_num=100):
            super().__init__()
            self.residual = nn.Sequential(
                nn.Conv2d(in_channels, in_channels * t, 1),
                nn.BatchNorm2d(in_channels * t),
                nn.ReLU6(inplace=True),
                nn.Conv2d(in_channels * t, in_channels * t, 3, stride=stride, padding=1, groups=in_channels * t),
                nn.BatchNorm2d(in_channels * t),
                nn.ReLU6(inplace=True),
                nn.Conv2d(in_channels * t, out_channels, 1),
                nn.BatchNorm2d(out_channels)
            )
            self.stride = stride
            self.in_channels = in_channels
            self.out_channels = out_channels

        def forward(self, x):
            residual = self.residual(x)
            if self.stride == 1 and self.in_channels == self.out_channels:
                residual += x
            return residual

    class MobileNetV2(nn.Module):
        def __init__(self, class_num=100):
            super().__init__()
            self.pre = nn.Sequential(nn.Conv2d(3, 8, 1, padding=1), nn.BatchNorm2d(8), nn.ReLU6(inplace=True))
            self.stage1 = LinearBottleNeck(8, 4, 1, 1)
            self.stage2 = self._make_stage(2, 4, 6, 2, 6)
            self.stage3 = self._make_stage(2, 6, 8, 2, 3)
            self.conv1 = nn.Sequential(nn.Conv2d(8, 32, 1), nn.BatchNorm2d(32), nn.ReLU6(inplace=True))
            self.conv2 = nn.Conv2d(32, class_num, 1)

        def forward(self, x):
            x = self.pre(x)
            x = self.stage1(x)
            x = self.stage2(x)
            x = self.stage3(x)
            x = self.conv1(x)
            x = F.adaptive_avg_pool2d(x, 1)
            x = self.conv2(x)
            x = x.view(x.size(0), -1)
            return x

        def _make_stage(self, repeat, in_channels, out_channels, stride, t):
            layers = []
            layers.append(LinearBottleNeck(in_channels, out_channels, stride, t))
            while repeat - 1:
                layers.append(LinearBottleNeck(out_channels, out_channels, 1, t))
                repeat -= 1
            return nn.Sequential(*layers)

    net = MobileNet(alpha, class_num=10) if arch == "mobilenet" else MobileNetV2(class_num=10)
    init = load(m, net, state)
    return init, train_steps(m, net, rng, (2, 3, 16, 16)) + summary(net.parameters())


@pytest.mark.parametrize("arch", ["mobilenet", "mobilenetv2"])
def test_weiaicunzai_mobilenets(arch):
    compare(mobilenets, arch=arch)


# (e) weiaicunzai/pytorch-cifar100's models/senet.py (BasicResidualSEBlock and BottleneckResidualSEBlock: squeeze by
# AdaptiveAvgPool2d(1) and view, excitation Linear-ReLU-Linear-Sigmoid viewed to (N, C, 1, 1), residual *
# excitation.expand_as(residual) + shortcut, F.relu) and models/preactresnet.py (PreActBasic and PreActBottleNeck:
# BatchNorm-ReLU before each conv, a conv shortcut, `while block_num - 1` building the stages)
def se_preact(m, state=None, arch="seresnet", block="basic"):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(5)

    class BasicResidualSEBlock(nn.Module):
        expansion = 1

        def __init__(self, in_channels, out_channels, stride, r=4):
            super().__init__()
            self.residual = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(out_channels, out_channels * self.expansion, 3, padding=1),
                nn.BatchNorm2d(out_channels * self.expansion),
                nn.ReLU(inplace=True)
            )
            self.shortcut = nn.Sequential()
            if stride != 1 or in_channels != out_channels * self.expansion:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_channels, out_channels * self.expansion, 1, stride=stride),
                    nn.BatchNorm2d(out_channels * self.expansion)
                )
            self.squeeze = nn.AdaptiveAvgPool2d(1)
            self.excitation = nn.Sequential(
                nn.Linear(out_channels * self.expansion, out_channels * self.expansion // r),
                nn.ReLU(inplace=True),
                nn.Linear(out_channels * self.expansion // r, out_channels * self.expansion),
                nn.Sigmoid()
            )

        def forward(self, x):
            shortcut = self.shortcut(x)
            residual = self.residual(x)
            squeeze = self.squeeze(residual)
            squeeze = squeeze.view(squeeze.size(0), -1)
            excitation = self.excitation(squeeze)
            excitation = excitation.view(residual.size(0), residual.size(1), 1, 1)
            x = residual * excitation.expand_as(residual) + shortcut
            return F.relu(x)

    class BottleneckResidualSEBlock(nn.Module):
        expansion = 4

        def __init__(self, in_channels, out_channels, stride, r=4):
            super().__init__()
            self.residual = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(out_channels, out_channels, 3, stride=stride, padding=1),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(out_channels, out_channels * self.expansion, 1),
                nn.BatchNorm2d(out_channels * self.expansion),
                nn.ReLU(inplace=True)
            )
            self.squeeze = nn.AdaptiveAvgPool2d(1)
            self.excitation = nn.Sequential(
                nn.Linear(out_channels * self.expansion, out_channels * self.expansion // r),
                nn.ReLU(inplace=True),
                nn.Linear(out_channels * self.expansion // r, out_channels * self.expansion),
                nn.Sigmoid()
            )
            self.shortcut = nn.Sequential()
            if stride != 1 or in_channels != out_channels * self.expansion:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_channels, out_channels * self.expansion, 1, stride=stride),
                    nn.BatchNorm2d(out_channels * self.expansion)
                )

        def forward(self, x):
            shortcut = self.shortcut(x)
            residual = self.residual(x)
            squeeze = self.squeeze(residual)
            squeeze = squeeze.view(squeeze.size(0), -1)
            excitation = self.excitation(squeeze)
            excitation = excitation.view(residual.size(0), residual.size(1), 1, 1)
            x = residual * excitation.expand_as(residual) + shortcut
            return F.relu(x)

    class SEResNet(nn.Module):
        def __init__(self, block, block_num, class_num=100):
            super().__init__()
            self.in_channels = 8
            self.pre = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            self.stage1 = self._make_stage(block, block_num[0], 8, 1)
            self.stage2 = self._make_stage(block, block_num[1], 16, 2)
            self.linear = nn.Linear(self.in_channels, class_num)

        def forward(self, x):
            x = self.pre(x)
            x = self.stage1(x)
            x = self.stage2(x)
            x = F.adaptive_avg_pool2d(x, 1)
            x = x.view(x.size(0), -1)
            x = self.linear(x)
            return x

        def _make_stage(self, block, num, out_channels, stride):
            layers = []
            layers.append(block(self.in_channels, out_channels, stride))
            self.in_channels = out_channels * block.expansion
            while num - 1:
                layers.append(block(self.in_channels, out_channels, 1))
                num -= 1
            return nn.Sequential(*layers)

    class PreActBasic(nn.Module):
        expansion = 1

        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            self.residual = nn.Sequential(
                nn.BatchNorm2d(in_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(out_channels, out_channels * PreActBasic.expansion, kernel_size=3, padding=1)
            )
            self.shortcut = nn.Sequential()
            if stride != 1 or in_channels != out_channels * PreActBasic.expansion:
                self.shortcut = nn.Conv2d(in_channels, out_channels * PreActBasic.expansion, 1, stride=stride)

        def forward(self, x):
            res = self.residual(x)
            shortcut = self.shortcut(x)
            return res + shortcut

    class PreActBottleNeck(nn.Module):
        expansion = 4

        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            self.residual = nn.Sequential(
                nn.BatchNorm2d(in_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(in_channels, out_channels, 1, stride=stride),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(out_channels, out_channels, 3, padding=1),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(out_channels, out_channels * PreActBottleNeck.expansion, 1)
            )
            self.shortcut = nn.Sequential()
            if stride != 1 or in_channels != out_channels * PreActBottleNeck.expansion:
                self.shortcut = nn.Conv2d(in_channels, out_channels * PreActBottleNeck.expansion, 1, stride=stride)

        def forward(self, x):
            res = self.residual(x)
            shortcut = self.shortcut(x)
            return res + shortcut

    class PreActResNet(nn.Module):
        def __init__(self, block, num_block, class_num=100):
            super().__init__()
            self.input_channels = 8
            self.pre = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            self.stage1 = self._make_layers(block, num_block[0], 8, 1)
            self.stage2 = self._make_layers(block, num_block[1], 16, 2)
            self.linear = nn.Linear(self.input_channels, class_num)

        def _make_layers(self, block, block_num, out_channels, stride):
            layers = []
            layers.append(block(self.input_channels, out_channels, stride))
            self.input_channels = out_channels * block.expansion
            while block_num - 1:
                layers.append(block(self.input_channels, out_channels, 1))
                self.input_channels = out_channels * block.expansion
                block_num -= 1
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.pre(x)
            x = self.stage1(x)
            x = self.stage2(x)
            x = F.adaptive_avg_pool2d(x, 1)
            x = x.view(x.size(0), -1)
            x = self.linear(x)
            return x

    blocks = {("seresnet", "basic"): BasicResidualSEBlock, ("seresnet", "bottleneck"): BottleneckResidualSEBlock,
              ("preactresnet", "basic"): PreActBasic, ("preactresnet", "bottleneck"): PreActBottleNeck}
    net = (SEResNet if arch == "seresnet" else PreActResNet)(blocks[arch, block], [2, 1], class_num=10)
    init = load(m, net, state)
    return init, train_steps(m, net, rng, (2, 3, 12, 12)) + summary(net.parameters())


@pytest.mark.parametrize("arch,block", [("seresnet", "basic"), ("seresnet", "bottleneck"), ("preactresnet", "basic"),
                                        ("preactresnet", "bottleneck")])
def test_weiaicunzai_seresnet_preactresnet(arch, block):
    compare(se_preact, arch=arch, block=block)


# (f) bearpaw/pytorch-classification's models/cifar/densenet.py (Bottleneck's torch.cat((x, out), 1), Transition's
# F.avg_pool2d(out, 2), compressionRate by math.floor(self.inplanes // compressionRate), AvgPool2d(8) over a 32x32
# input's last map, the init loop's m.weight.data.normal_(0, math.sqrt(2. / n)) with n = k * k * out_channels and
# BatchNorm's weight.data.fill_(1), bias.data.zero_()) and models/cifar/alexnet.py (an 11x11 stride-4 conv on 32x32,
# three MaxPool2d(2, 2), one Linear; its widths cut by 4), trained by cifar.py's adjust_learning_rate over a global state dict
def bearpaw_densenet_alexnet(m, state=None, arch="densenet"):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(6)

    class Bottleneck(nn.Module):
        def __init__(self, inplanes, expansion=4, growthRate=12, dropRate=0):
            super(Bottleneck, self).__init__()
            planes = expansion * growthRate
            self.bn1 = nn.BatchNorm2d(inplanes)
            self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, growthRate, kernel_size=3, padding=1, bias=False)
            self.relu = nn.ReLU(inplace=True)
            self.dropRate = dropRate

        def forward(self, x):
            out = self.bn1(x)
            out = self.relu(out)
            out = self.conv1(out)
            out = self.bn2(out)
            out = self.relu(out)
            out = self.conv2(out)
            if self.dropRate > 0:
                out = F.dropout(out, p=self.dropRate, training=self.training)
            out = torch.cat((x, out), 1)
            return out

    class Transition(nn.Module):
        def __init__(self, inplanes, outplanes):
            super(Transition, self).__init__()
            self.bn1 = nn.BatchNorm2d(inplanes)
            self.conv1 = nn.Conv2d(inplanes, outplanes, kernel_size=1, bias=False)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            out = self.bn1(x)
            out = self.relu(out)
            out = self.conv1(out)
            out = F.avg_pool2d(out, 2)
            return out

    class DenseNet(nn.Module):
        def __init__(self, depth=22, block=Bottleneck, dropRate=0, num_classes=10, growthRate=12, compressionRate=2):
            super(DenseNet, self).__init__()
            assert (depth - 4) % 3 == 0, 'depth should be 3n+4'
            n = (depth - 4) // 6
            self.growthRate = growthRate
            self.dropRate = dropRate
            # self.inplanes is a global variable used across multiple
            # helper functions
            self.inplanes = growthRate * 2
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=3, padding=1, bias=False)
            self.dense1 = self._make_denseblock(block, n)
            self.trans1 = self._make_transition(compressionRate)
            self.dense2 = self._make_denseblock(block, n)
            self.trans2 = self._make_transition(compressionRate)
            self.dense3 = self._make_denseblock(block, n)
            self.bn = nn.BatchNorm2d(self.inplanes)
            self.relu = nn.ReLU(inplace=True)
            self.avgpool = nn.AvgPool2d(8)
            self.fc = nn.Linear(self.inplanes, num_classes)

            # Weight initialization
            for m_ in self.modules():
                if isinstance(m_, nn.Conv2d):
                    n = m_.kernel_size[0] * m_.kernel_size[1] * m_.out_channels
                    m_.weight.data.normal_(0, math.sqrt(2. / n))
                elif isinstance(m_, nn.BatchNorm2d):
                    m_.weight.data.fill_(1)
                    m_.bias.data.zero_()

        def _make_denseblock(self, block, blocks):
            layers = []
            for i in range(blocks):
                # Currently we fix the expansion ratio as the default value
                layers.append(block(self.inplanes, growthRate=self.growthRate, dropRate=self.dropRate))
                self.inplanes += self.growthRate
            return nn.Sequential(*layers)

        def _make_transition(self, compressionRate):
            inplanes = self.inplanes
            outplanes = int(math.floor(self.inplanes // compressionRate))
            self.inplanes = outplanes
            return Transition(inplanes, outplanes)

        def forward(self, x):
            x = self.conv1(x)
            x = self.trans1(self.dense1(x))
            x = self.trans2(self.dense2(x))
            x = self.dense3(x)
            x = self.bn(x)
            x = self.relu(x)
            x = self.avgpool(x)
            x = x.view(x.size(0), -1)
            x = self.fc(x)
            return x

    class AlexNet(nn.Module):
        def __init__(self, num_classes=10):
            super(AlexNet, self).__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, kernel_size=11, stride=4, padding=5),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=2, stride=2),
                nn.Conv2d(16, 48, kernel_size=5, padding=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=2, stride=2),
                nn.Conv2d(48, 96, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(96, 64, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(64, 64, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=2, stride=2),
            )
            self.classifier = nn.Linear(64, num_classes)

        def forward(self, x):
            x = self.features(x)
            x = x.view(x.size(0), -1)
            x = self.classifier(x)
            return x

    model = DenseNet(depth=10, growthRate=4, compressionRate=2) if arch == "densenet" else AlexNet()
    init = load(m, model, state)
    state_ = {'lr': 0.1, 'schedule': [1], 'gamma': 0.1}
    optimizer = optim.SGD(model.parameters(), lr=state_['lr'], momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()

    def adjust_learning_rate(optimizer, epoch):
        if epoch in state_['schedule']:
            state_['lr'] *= state_['gamma']
            for param_group in optimizer.param_groups:
                param_group['lr'] = state_['lr']

    losses = []
    for epoch in range(2):
        adjust_learning_rate(optimizer, epoch)
        model.train()
        inputs = torch.tensor(normal(rng, 2, 3, 32, 32))
        targets = torch.tensor(rng.integers(0, 10, 2))
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), outputs.data.sum().item()]
    return init, losses + summary(model.parameters())


@pytest.mark.parametrize("arch", ["densenet", "alexnet"])
def test_bearpaw_densenet_alexnet(arch):
    compare(bearpaw_densenet_alexnet, arch=arch)


# (g) huyvnphan/PyTorch_CIFAR10: cifar10_models/googlenet.py (torchvision's GoogLeNet with a 3x3 stride-1 stem,
# BasicConv2d's BatchNorm2d(eps=0.001) and F.relu(x, inplace=True), Inception's pool branch MaxPool2d(3, stride=1,
# padding=1, ceil_mode=True), transform_input by torch.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + ...), schedule.py's
# WarmupCosineLR(_LRScheduler) (warns unless self._get_lr_called_within_step; warm-up, then cosine in its recursive
# form) stepped per iteration, module.py's CIFAR10Module whose forward takes the batch and returns loss and
# accuracy * 100, and the SGD(nesterov=True) of its configure_optimizers; widths cut by 8 and stages left out
def huyvnphan_googlenet(m, state=None, dropout=0.0):
    import warnings
    torch, nn, F = m.torch, m.nn, m.F
    _LRScheduler = m.lr_scheduler._LRScheduler
    torch.manual_seed(0)
    rng = np.random.default_rng(7)

    class BasicConv2d(nn.Module):
        def __init__(self, in_channels, out_channels, **kwargs):
            super(BasicConv2d, self).__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
            self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

        def forward(self, x):
            x = self.conv(x)
            x = self.bn(x)
            return F.relu(x, inplace=True)

    class Inception(nn.Module):
        def __init__(self, in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj):
            super(Inception, self).__init__()
            self.branch1 = BasicConv2d(in_channels, ch1x1, kernel_size=1)
            self.branch2 = nn.Sequential(BasicConv2d(in_channels, ch3x3red, kernel_size=1),
                                         BasicConv2d(ch3x3red, ch3x3, kernel_size=3, padding=1))
            self.branch3 = nn.Sequential(BasicConv2d(in_channels, ch5x5red, kernel_size=1),
                                         BasicConv2d(ch5x5red, ch5x5, kernel_size=3, padding=1))
            self.branch4 = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
                                         BasicConv2d(in_channels, pool_proj, kernel_size=1))

        def forward(self, x):
            branch1 = self.branch1(x)
            branch2 = self.branch2(x)
            branch3 = self.branch3(x)
            branch4 = self.branch4(x)
            outputs = [branch1, branch2, branch3, branch4]
            return torch.cat(outputs, 1)

    class GoogLeNet(nn.Module):
        ## CIFAR10: aux_logits True->False
        def __init__(self, num_classes=10, aux_logits=False, transform_input=False):
            super(GoogLeNet, self).__init__()
            self.aux_logits = aux_logits
            self.transform_input = transform_input
            ## CIFAR10: out_channels 64->192, kernel_size 7->3, stride 2->1, padding 3->1
            self.conv1 = BasicConv2d(3, 24, kernel_size=3, stride=1, padding=1)
            self.inception3a = Inception(24, 8, 12, 16, 2, 4, 4)
            self.inception3b = Inception(32, 16, 16, 24, 4, 12, 8)
            ## CIFAR10: padding 0->1, ciel_model True->False
            self.maxpool3 = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=False)
            self.inception4a = Inception(60, 24, 12, 26, 2, 6, 8)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.dropout = nn.Dropout(dropout)
            self.fc = nn.Linear(64, num_classes)

        def forward(self, x):
            if self.transform_input:
                x_ch0 = torch.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
                x_ch1 = torch.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
                x_ch2 = torch.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
                x = torch.cat((x_ch0, x_ch1, x_ch2), 1)
            x = self.conv1(x)
            x = self.inception3a(x)
            x = self.inception3b(x)
            x = self.maxpool3(x)
            x = self.inception4a(x)
            x = self.avgpool(x)
            x = x.view(x.size(0), -1)
            x = self.dropout(x)
            x = self.fc(x)
            return x

    class WarmupCosineLR(_LRScheduler):
        """
        Sets the learning rate of each parameter group to follow a linear warmup schedule
        between warmup_start_lr and base_lr followed by a cosine annealing schedule between
        base_lr and eta_min.
        """
        def __init__(self, optimizer, warmup_epochs, max_epochs, warmup_start_lr=1e-8, eta_min=1e-8, last_epoch=-1):
            self.warmup_epochs = warmup_epochs
            self.max_epochs = max_epochs
            self.warmup_start_lr = warmup_start_lr
            self.eta_min = eta_min
            super(WarmupCosineLR, self).__init__(optimizer, last_epoch)

        def get_lr(self):
            if not self._get_lr_called_within_step:
                warnings.warn("To get the last learning rate computed by the scheduler, "
                              "please use `get_last_lr()`.", UserWarning)
            if self.last_epoch == 0:
                return [self.warmup_start_lr] * len(self.base_lrs)
            elif self.last_epoch < self.warmup_epochs:
                return [group["lr"] + (base_lr - self.warmup_start_lr) / (self.warmup_epochs - 1)
                        for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups)]
            elif self.last_epoch == self.warmup_epochs:
                return self.base_lrs
            elif (self.last_epoch - 1 - self.max_epochs) % (2 * (self.max_epochs - self.warmup_epochs)) == 0:
                return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / (self.max_epochs - self.warmup_epochs))) / 2
                        for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups)]
            return [(1 + math.cos(math.pi * (self.last_epoch - self.warmup_epochs) / (self.max_epochs - self.warmup_epochs)))
                    / (1 + math.cos(math.pi * (self.last_epoch - self.warmup_epochs - 1) / (self.max_epochs - self.warmup_epochs)))
                    * (group["lr"] - self.eta_min) + self.eta_min for group in self.optimizer.param_groups]

    class CIFAR10Module(nn.Module):  # a pl.LightningModule in the repository; its Trainer's loop written out below
        def __init__(self, hparams):
            super().__init__()
            self.hparams = hparams
            self.criterion = torch.nn.CrossEntropyLoss()
            self.model = GoogLeNet(transform_input=True)

        def accuracy(self, predictions, labels):
            return (torch.argmax(predictions, dim=1) == labels).float().mean()

        def forward(self, batch):
            images, labels = batch
            predictions = self.model(images)
            loss = self.criterion(predictions, labels)
            accuracy = self.accuracy(predictions, labels)
            return loss, accuracy * 100

        def training_step(self, batch, batch_nb):
            loss, accuracy = self.forward(batch)
            return loss

        def configure_optimizers(self, steps_per_epoch):
            optimizer = torch.optim.SGD(self.model.parameters(), lr=self.hparams["learning_rate"],
                                        weight_decay=self.hparams["weight_decay"], momentum=0.9, nesterov=True)
            total_steps = self.hparams["max_epochs"] * steps_per_epoch
            scheduler = {"scheduler": WarmupCosineLR(optimizer, warmup_epochs=total_steps * 0.3, max_epochs=total_steps),
                         "interval": "step", "name": "learning_rate"}
            return [optimizer], [scheduler]

    module = CIFAR10Module({"learning_rate": 1e-2, "weight_decay": 1e-2, "max_epochs": 5})
    init = load(m, module.model, state)
    [optimizer], [scheduler] = module.configure_optimizers(steps_per_epoch=2)
    losses = []
    for batch_nb in range(2):
        module.train()
        batch = (torch.tensor(normal(rng, 2, 3, 16, 16)), torch.tensor(rng.integers(0, 10, 2)))
        optimizer.zero_grad()
        loss = module.training_step(batch, batch_nb)
        loss.backward()
        optimizer.step()
        scheduler["scheduler"].step()
        losses += [loss.item()]
    module.eval()
    with torch.no_grad():
        loss, accuracy = module((torch.tensor(normal(rng, 2, 3, 16, 16)), torch.tensor(rng.integers(0, 10, 2))))
    losses += [loss.item(), accuracy.item()]
    for _ in range(8):  # the rest of the schedule, past warm-up and through the cosine
        scheduler["scheduler"].step()
        losses += scheduler["scheduler"].get_last_lr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses += scheduler["scheduler"].get_lr()
    assert [str(w.message) for w in caught] == ["To get the last learning rate computed by the scheduler, "
                                                "please use `get_last_lr()`."]
    return init, losses + summary(module.parameters())


def test_huyvnphan_googlenet_warmup_cosine():
    compare(huyvnphan_googlenet)


# (h) gram-ai/capsule-networks' capsule_network.py: CapsuleLayer's primary capsules (a ModuleList of convolutions
# viewed to (B, -1, 1) and concatenated on the last dimension) and digit capsules (route_weights an nn.Parameter of
# torch.randn, priors = x[None, :, :, None, :] @ self.route_weights[:, None, :, :, :], logits of
# Variable(torch.zeros(*priors.size())), its own softmax over a transposed dimension, squash by (tensor ** 2).sum),
# CapsuleNet's forward masking by torch.eye(NUM_CLASSES).index_select(dim=0, index=max_length_indices.data) when no y is
# given, CapsuleLoss's margin terms with F.relu(..., inplace=True) ** 2 and nn.MSELoss(size_average=False), the
# processor's augmentation (a random shift written into torch.zeros(*x.size())) on uint8 images / 255; sizes and
# NUM_CLASSES cut. The source's (x * y[:, :, None]).view(x.size(0), -1) is a reshape here, as its forks write it:
# torch's product keeps the transposed x's layout, which view refuses (tnet's product is contiguous: README)
def capsule_network(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Variable = m.torch.autograd.Variable
    torch.manual_seed(0)
    rng = np.random.default_rng(8)
    NUM_CLASSES = 4
    NUM_ROUTING_ITERATIONS = 3
    cuda = torch.cuda.is_available()

    def softmax(input, dim=1):
        transposed_input = input.transpose(dim, len(input.size()) - 1)
        softmaxed_output = F.softmax(transposed_input.contiguous().view(-1, transposed_input.size(-1)), dim=-1)
        return softmaxed_output.view(*transposed_input.size()).transpose(dim, len(input.size()) - 1)

    def augmentation(x, max_shift=2):
        _, _, height, width = x.size()
        h_shift, w_shift = rng.integers(-max_shift, max_shift + 1, size=2)
        source_height_slice = slice(max(0, h_shift), h_shift + height)
        source_width_slice = slice(max(0, w_shift), w_shift + width)
        target_height_slice = slice(max(0, -h_shift), -h_shift + height)
        target_width_slice = slice(max(0, -w_shift), -w_shift + width)
        shifted_image = torch.zeros(*x.size())
        shifted_image[:, :, source_height_slice, source_width_slice] = x[:, :, target_height_slice, target_width_slice]
        return shifted_image.float()

    class CapsuleLayer(nn.Module):
        def __init__(self, num_capsules, num_route_nodes, in_channels, out_channels, kernel_size=None, stride=None,
                     num_iterations=NUM_ROUTING_ITERATIONS):
            super(CapsuleLayer, self).__init__()
            self.num_route_nodes = num_route_nodes
            self.num_iterations = num_iterations
            self.num_capsules = num_capsules
            if num_route_nodes != -1:
                self.route_weights = nn.Parameter(torch.randn(num_capsules, num_route_nodes, in_channels, out_channels))
            else:
                self.capsules = nn.ModuleList(
                    [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=0) for _ in
                     range(num_capsules)])

        def squash(self, tensor, dim=-1):
            squared_norm = (tensor ** 2).sum(dim=dim, keepdim=True)
            scale = squared_norm / (1 + squared_norm)
            return scale * tensor / torch.sqrt(squared_norm)

        def forward(self, x):
            if self.num_route_nodes != -1:
                priors = x[None, :, :, None, :] @ self.route_weights[:, None, :, :, :]
                logits = Variable(torch.zeros(*priors.size()))
                if cuda:
                    logits = logits.cuda()
                for i in range(self.num_iterations):
                    probs = softmax(logits, dim=2)
                    outputs = self.squash((probs * priors).sum(dim=2, keepdim=True))
                    if i != self.num_iterations - 1:
                        delta_logits = (priors * outputs).sum(dim=-1, keepdim=True)
                        logits = logits + delta_logits
            else:
                outputs = [capsule(x).view(x.size(0), -1, 1) for capsule in self.capsules]
                outputs = torch.cat(outputs, dim=-1)
                outputs = self.squash(outputs)
            return outputs

    class CapsuleNet(nn.Module):
        def __init__(self):
            super(CapsuleNet, self).__init__()
            self.conv1 = nn.Conv2d(in_channels=1, out_channels=8, kernel_size=3, stride=1)
            self.primary_capsules = CapsuleLayer(num_capsules=2, num_route_nodes=-1, in_channels=8, out_channels=2,
                                                 kernel_size=3, stride=2)
            self.digit_capsules = CapsuleLayer(num_capsules=NUM_CLASSES, num_route_nodes=2 * 2 * 2, in_channels=2,
                                               out_channels=4)
            self.decoder = nn.Sequential(
                nn.Linear(4 * NUM_CLASSES, 8),
                nn.ReLU(inplace=True),
                nn.Linear(8, 16),
                nn.ReLU(inplace=True),
                nn.Linear(16, 64),
                nn.Sigmoid()
            )

        def forward(self, x, y=None):
            x = F.relu(self.conv1(x), inplace=True)
            x = self.primary_capsules(x)
            x = self.digit_capsules(x).squeeze().transpose(0, 1)
            classes = (x ** 2).sum(dim=-1) ** 0.5
            classes = F.softmax(classes, dim=-1)
            if y is None:
                # In all batches, get the most active capsule.
                _, max_length_indices = classes.max(dim=1)
                y = Variable(torch.eye(NUM_CLASSES))
                y = (y.cuda() if cuda else y).index_select(dim=0, index=max_length_indices.data)
            reconstructions = self.decoder((x * y[:, :, None]).reshape(x.size(0), -1))
            return classes, reconstructions

    class CapsuleLoss(nn.Module):
        def __init__(self):
            super(CapsuleLoss, self).__init__()
            self.reconstruction_loss = nn.MSELoss(size_average=False)

        def forward(self, images, labels, classes, reconstructions):
            left = F.relu(0.9 - classes, inplace=True) ** 2
            right = F.relu(classes - 0.1, inplace=True) ** 2
            margin_loss = labels * left + 0.5 * (1. - labels) * right
            margin_loss = margin_loss.sum()
            assert torch.numel(images) == torch.numel(reconstructions)
            images = images.view(reconstructions.size()[0], -1)
            reconstruction_loss = self.reconstruction_loss(reconstructions, images)
            return (margin_loss + 0.0005 * reconstruction_loss) / images.size(0)

    model = CapsuleNet()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters())
    capsule_loss = CapsuleLoss()

    def processor(sample):
        data, labels, training = sample
        data = augmentation(data.unsqueeze(1).float() / 255.0)
        labels = torch.LongTensor(labels)
        labels = torch.eye(NUM_CLASSES).index_select(dim=0, index=labels)
        data = Variable(data)
        labels = Variable(labels)
        if training:
            classes, reconstructions = model(data, labels)
        else:
            classes, reconstructions = model(data)
        loss = capsule_loss(data, labels, classes, reconstructions)
        return loss, classes

    losses = []
    for training in (True, True, False):
        model.train(training)
        sample = (torch.tensor(rng.integers(0, 256, (2, 8, 8)).astype(np.uint8)), rng.integers(0, NUM_CLASSES, 2), training)
        optimizer.zero_grad()
        loss, classes = processor(sample)
        if training:
            loss.backward()
            optimizer.step()
        losses += [loss.item(), classes.max(dim=1)[0].sum().item()]
    return init, losses + summary(model.parameters())


def test_gram_ai_capsule_network():
    compare(capsule_network)


# (i) akamaster/pytorch_resnet_cifar10: resnet.py (_weights_init by init.kaiming_normal_ through self.apply, option A's
# LambdaLayer of F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, planes//4, planes//4), "constant", 0), option B's conv shortcut,
# `out += self.shortcut(x)`, F.avg_pool2d(out, out.size()[3]), the model_names list from resnet.__dict__ and test()'s
# parameter count by np.prod(x.data.numpy().shape)) and trainer.py (torch.nn.DataParallel, MultiStepLR(milestones,
# last_epoch=args.start_epoch - 1), the resnet110 warm-up lr written into param_groups, output.float(), accuracy by
# topk and pred.t(), save_checkpoint's torch.save of {'epoch', 'state_dict', 'best_prec1'} and the resume's torch.load
# of it); resuming at start_epoch 1 raises the KeyError for a missing initial_lr in both libraries, and the script goes
# on once it is set by hand
def akamaster_trainer(m, state=None, option="A", save_dir=None):
    import os
    import types
    torch, nn, F = m.torch, m.nn, m.F
    init_ = m.nn.init
    torch.manual_seed(0)
    rng = np.random.default_rng(9)

    def _weights_init(m_):
        if isinstance(m_, nn.Linear) or isinstance(m_, nn.Conv2d):
            init_.kaiming_normal_(m_.weight)

    class LambdaLayer(nn.Module):
        def __init__(self, lambd):
            super(LambdaLayer, self).__init__()
            self.lambd = lambd

        def forward(self, x):
            return self.lambd(x)

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, in_planes, planes, stride=1, option='A'):
            super(BasicBlock, self).__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != planes:
                if option == 'A':
                    """
                    For CIFAR10 ResNet paper uses option A.
                    """
                    self.shortcut = LambdaLayer(lambda x: F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, planes // 4, planes // 4),
                                                                "constant", 0))
                elif option == 'B':
                    self.shortcut = nn.Sequential(
                        nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                        nn.BatchNorm2d(self.expansion * planes)
                    )

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.shortcut(x)
            out = F.relu(out)
            return out

    class ResNet(nn.Module):
        def __init__(self, block, num_blocks, num_classes=10):
            super(ResNet, self).__init__()
            self.in_planes = 4
            self.conv1 = nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.layer1 = self._make_layer(block, 4, num_blocks[0], stride=1)
            self.layer2 = self._make_layer(block, 8, num_blocks[1], stride=2)
            self.layer3 = self._make_layer(block, 16, num_blocks[2], stride=2)
            self.linear = nn.Linear(16, num_classes)
            self.apply(_weights_init)

        def _make_layer(self, block, planes, num_blocks, stride):
            strides = [stride] + [1] * (num_blocks - 1)
            layers = []
            for stride in strides:
                layers.append(block(self.in_planes, planes, stride, option=option))
                self.in_planes = planes * block.expansion
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = F.avg_pool2d(out, out.size()[3])
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out

    def resnet8():
        return ResNet(BasicBlock, [1, 1, 1])

    resnet = types.SimpleNamespace(resnet8=resnet8, ResNet=ResNet, BasicBlock=BasicBlock)
    model_names = sorted(name for name in resnet.__dict__
                         if name.islower() and not name.startswith("__") and name.startswith("resnet")
                         and callable(resnet.__dict__[name]))
    args = types.SimpleNamespace(arch=model_names[0], lr=0.1, momentum=0.9, weight_decay=1e-4, start_epoch=0, epochs=2,
                                 save_dir=save_dir, save_every=1, resume=os.path.join(save_dir, 'checkpoint.th'))

    def save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):
        """
        Save the training model
        """
        torch.save(state, filename)

    def accuracy(output, target, topk=(1,)):
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].view(-1).float().sum(0)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res

    model = torch.nn.DataParallel(resnet.__dict__[args.arch]())
    if torch.cuda.is_available():
        model.cuda()
    init = load(m, model, state)
    total_params = 0
    for x in filter(lambda p: p.requires_grad, model.parameters()):
        total_params += np.prod(x.data.numpy().shape)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1], last_epoch=args.start_epoch - 1)
    for param_group in optimizer.param_groups:  # trainer.py's warm-up for resnet1202 and resnet110
        param_group['lr'] = args.lr * 0.1
    losses, best_prec1 = [float(total_params)], 0
    for epoch in range(args.start_epoch, args.epochs):
        model.train()
        input = torch.tensor(normal(rng, 4, 3, 16, 16))
        target = torch.tensor(rng.integers(0, 10, 4))
        output = model(input)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        output = output.float()
        loss = loss.float()
        prec1 = accuracy(output.data, target)[0]
        lr_scheduler.step()
        losses += [loss.item(), prec1.item(), optimizer.param_groups[0]['lr']]
        is_best = prec1.item() > best_prec1
        best_prec1 = max(prec1.item(), best_prec1)
        if epoch > 0 and epoch % args.save_every == 0:
            save_checkpoint({
                'epoch': epoch + 1,
                'state_dict': model.state_dict(),
                'best_prec1': best_prec1,
            }, is_best, filename=os.path.join(args.save_dir, 'checkpoint.th'))
        save_checkpoint({
            'state_dict': model.state_dict(),
            'best_prec1': best_prec1,
        }, is_best, filename=os.path.join(args.save_dir, 'model.th'))
    resumed = torch.nn.DataParallel(resnet.__dict__[args.arch]())
    if os.path.isfile(args.resume):
        checkpoint = torch.load(args.resume)
        args.start_epoch = checkpoint['epoch'] - 1
        best_prec1 = checkpoint['best_prec1']
        resumed.load_state_dict(checkpoint['state_dict'])
    assert sorted(torch.load(os.path.join(args.save_dir, 'model.th'))) == ['best_prec1', 'state_dict']
    optimizer = torch.optim.SGD(resumed.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    with pytest.raises(KeyError, match="initial_lr"):
        torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1], last_epoch=args.start_epoch - 1)
    for group in optimizer.param_groups:
        group.setdefault('initial_lr', group['lr'])
    lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1], last_epoch=args.start_epoch - 1)
    resumed.eval()
    with torch.no_grad():
        output = resumed(torch.tensor(normal(rng, 4, 3, 16, 16)))
    losses += [output.sum().item(), optimizer.param_groups[0]['lr'], float(is_best), best_prec1]
    return init, losses + summary(resumed.parameters()) + summary(resumed.buffers())


@pytest.mark.parametrize("option", ["A", "B"])
def test_akamaster_trainer(option, tmp_path):
    compare(akamaster_trainer, option=option, save_dir=str(tmp_path))


# (j) erykml's LeNet-5 for MNIST (the "Implementing Yann LeCun's LeNet-5 in PyTorch" post): nn.Tanh and
# nn.AvgPool2d(kernel_size=2), a 5x5 conv down to 120 channels of 1x1, torch.flatten(x, 1), forward returning
# (logits, F.softmax(logits, dim=1)); train()/validate() over DataLoaders with running_loss += loss.item() *
# X.size(0) divided by len(train_loader.dataset), get_accuracy's torch.max(y_prob, 1) and correct_pred.float() / n,
# DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu', Adam(lr=0.001); on 32x32 images
def erykml_lenet5(m, state=None):
    torch, nn, F, data = m.torch, m.nn, m.F, m.data
    rng = np.random.default_rng(10)
    DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'
    RANDOM_SEED = 42
    LEARNING_RATE = 0.001
    BATCH_SIZE = 4
    N_EPOCHS = 2
    N_CLASSES = 10

    class LeNet5(nn.Module):
        def __init__(self, n_classes):
            super(LeNet5, self).__init__()
            self.feature_extractor = nn.Sequential(
                nn.Conv2d(in_channels=1, out_channels=6, kernel_size=5, stride=1),
                nn.Tanh(),
                nn.AvgPool2d(kernel_size=2),
                nn.Conv2d(in_channels=6, out_channels=16, kernel_size=5, stride=1),
                nn.Tanh(),
                nn.AvgPool2d(kernel_size=2),
                nn.Conv2d(in_channels=16, out_channels=120, kernel_size=5, stride=1),
                nn.Tanh()
            )
            self.classifier = nn.Sequential(
                nn.Linear(in_features=120, out_features=84),
                nn.Tanh(),
                nn.Linear(in_features=84, out_features=n_classes),
            )

        def forward(self, x):
            x = self.feature_extractor(x)
            x = torch.flatten(x, 1)
            logits = self.classifier(x)
            probs = F.softmax(logits, dim=1)
            return logits, probs

    def get_accuracy(model, data_loader, device):
        correct_pred = 0
        n = 0
        with torch.no_grad():
            model.eval()
            for X, y_true in data_loader:
                X = X.to(device)
                y_true = y_true.to(device)
                _, y_prob = model(X)
                _, predicted_labels = torch.max(y_prob, 1)
                n += y_true.size(0)
                correct_pred += (predicted_labels == y_true).sum()
        return correct_pred.float() / n

    def train(train_loader, model, criterion, optimizer, device):
        model.train()
        running_loss = 0
        for X, y_true in train_loader:
            optimizer.zero_grad()
            X = X.to(device)
            y_true = y_true.to(device)
            y_hat, _ = model(X)
            loss = criterion(y_hat, y_true)
            running_loss += loss.item() * X.size(0)
            loss.backward()
            optimizer.step()
        epoch_loss = running_loss / len(train_loader.dataset)
        return model, optimizer, epoch_loss

    def validate(valid_loader, model, criterion, device):
        model.eval()
        running_loss = 0
        for X, y_true in valid_loader:
            X = X.to(device)
            y_true = y_true.to(device)
            y_hat, _ = model(X)
            loss = criterion(y_hat, y_true)
            running_loss += loss.item() * X.size(0)
        epoch_loss = running_loss / len(valid_loader.dataset)
        return model, epoch_loss

    def training_loop(model, criterion, optimizer, train_loader, valid_loader, epochs, device, print_every=1):
        train_losses, valid_losses, accuracies = [], [], []
        for epoch in range(0, epochs):
            model, optimizer, train_loss = train(train_loader, model, criterion, optimizer, device)
            train_losses.append(train_loss)
            with torch.no_grad():
                model, valid_loss = validate(valid_loader, model, criterion, device)
                valid_losses.append(valid_loss)
            if epoch % print_every == (print_every - 1):
                train_acc = get_accuracy(model, train_loader, device=device)
                valid_acc = get_accuracy(model, valid_loader, device=device)
                accuracies += [train_acc.item(), valid_acc.item()]
        return model, optimizer, (train_losses, valid_losses, accuracies)

    def dataset(n):
        images = rng.random((n, 1, 32, 32)).astype(np.float32)
        return data.TensorDataset(torch.tensor(images), torch.tensor(rng.integers(0, N_CLASSES, n)))

    train_loader = data.DataLoader(dataset=dataset(4), batch_size=BATCH_SIZE, shuffle=False)
    valid_loader = data.DataLoader(dataset=dataset(2), batch_size=BATCH_SIZE, shuffle=False)
    torch.manual_seed(RANDOM_SEED)
    model = LeNet5(N_CLASSES).to(DEVICE)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    criterion = nn.CrossEntropyLoss()
    model, _, (train_losses, valid_losses, accuracies) = training_loop(
        model, criterion, optimizer, train_loader, valid_loader, N_EPOCHS, DEVICE)
    return init, train_losses + valid_losses + accuracies + summary(model.parameters())


def test_erykml_lenet5():
    compare(erykml_lenet5)


# (k) weiaicunzai/pytorch-cifar100's models/googlenet.py (Inception's b3 of two stacked 3x3 convolutions with the
# source's nn.BatchNorm2d(n5x5, n5x5), which passes n5x5 as eps; a 3-conv prelayer; one MaxPool2d(3, stride=2,
# padding=1) called twice; nn.Dropout2d before the view) and models/densenet.py (features filled by add_module with
# "dense_block_layer_{}" and "transition_layer_{}", out_channels = int(reduction * inner_channels), a Transition of
# BatchNorm, 1x1 conv and AvgPool2d(2, stride=2)); widths cut
def weiaicunzai_googlenet_densenet(m, state=None, arch="googlenet", dropout=0.0):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(11)

    class Inception(nn.Module):
        def __init__(self, input_channels, n1x1, n3x3_reduce, n3x3, n5x5_reduce, n5x5, pool_proj):
            super().__init__()
            self.b1 = nn.Sequential(
                nn.Conv2d(input_channels, n1x1, kernel_size=1),
                nn.BatchNorm2d(n1x1),
                nn.ReLU(inplace=True)
            )
            self.b2 = nn.Sequential(
                nn.Conv2d(input_channels, n3x3_reduce, kernel_size=1),
                nn.BatchNorm2d(n3x3_reduce),
                nn.ReLU(inplace=True),
                nn.Conv2d(n3x3_reduce, n3x3, kernel_size=3, padding=1),
                nn.BatchNorm2d(n3x3),
                nn.ReLU(inplace=True)
            )
            self.b3 = nn.Sequential(
                nn.Conv2d(input_channels, n5x5_reduce, kernel_size=1),
                nn.BatchNorm2d(n5x5_reduce),
                nn.ReLU(inplace=True),
                nn.Conv2d(n5x5_reduce, n5x5, kernel_size=3, padding=1),
                nn.BatchNorm2d(n5x5, n5x5),
                nn.ReLU(inplace=True),
                nn.Conv2d(n5x5, n5x5, kernel_size=3, padding=1),
                nn.BatchNorm2d(n5x5),
                nn.ReLU(inplace=True)
            )
            self.b4 = nn.Sequential(
                nn.MaxPool2d(3, stride=1, padding=1),
                nn.Conv2d(input_channels, pool_proj, kernel_size=1),
                nn.BatchNorm2d(pool_proj),
                nn.ReLU(inplace=True)
            )

        def forward(self, x):
            return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], dim=1)

    class GoogleNet(nn.Module):
        def __init__(self, num_class=100):
            super().__init__()
            self.prelayer = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(8),
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(8),
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 24, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(24),
                nn.ReLU(inplace=True),
            )
            self.a3 = Inception(24, 8, 12, 16, 2, 4, 4)
            self.b3 = Inception(32, 16, 16, 24, 4, 12, 8)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.dropout = nn.Dropout2d(p=dropout)
            self.linear = nn.Linear(60, num_class)

        def forward(self, x):
            x = self.prelayer(x)
            x = self.maxpool(x)
            x = self.a3(x)
            x = self.b3(x)
            x = self.maxpool(x)
            x = self.avgpool(x)
            x = self.dropout(x)
            x = x.view(x.size()[0], -1)
            x = self.linear(x)
            return x

    class Bottleneck(nn.Module):
        def __init__(self, in_channels, growth_rate):
            super().__init__()
            inner_channel = 4 * growth_rate
            self.bottle_neck = nn.Sequential(
                nn.BatchNorm2d(in_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(in_channels, inner_channel, kernel_size=1, bias=False),
                nn.BatchNorm2d(inner_channel),
                nn.ReLU(inplace=True),
                nn.Conv2d(inner_channel, growth_rate, kernel_size=3, padding=1, bias=False)
            )

        def forward(self, x):
            return torch.cat([x, self.bottle_neck(x)], 1)

    class Transition(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.down_sample = nn.Sequential(
                nn.BatchNorm2d(in_channels),
                nn.Conv2d(in_channels, out_channels, 1, bias=False),
                nn.AvgPool2d(2, stride=2)
            )

        def forward(self, x):
            return self.down_sample(x)

    class DenseNet(nn.Module):
        def __init__(self, block, nblocks, growth_rate=12, reduction=0.5, num_class=100):
            super().__init__()
            self.growth_rate = growth_rate
            inner_channels = 2 * growth_rate
            self.conv1 = nn.Conv2d(3, inner_channels, kernel_size=3, padding=1, bias=False)
            self.features = nn.Sequential()
            for index in range(len(nblocks) - 1):
                self.features.add_module("dense_block_layer_{}".format(index),
                                         self._make_dense_layers(block, inner_channels, nblocks[index]))
                inner_channels += growth_rate * nblocks[index]
                out_channels = int(reduction * inner_channels)  # int() will automatic floor the value
                self.features.add_module("transition_layer_{}".format(index), Transition(inner_channels, out_channels))
                inner_channels = out_channels
            self.features.add_module("dense_block{}".format(len(nblocks) - 1),
                                     self._make_dense_layers(block, inner_channels, nblocks[len(nblocks) - 1]))
            inner_channels += growth_rate * nblocks[len(nblocks) - 1]
            self.features.add_module('bn', nn.BatchNorm2d(inner_channels))
            self.features.add_module('relu', nn.ReLU(inplace=True))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.linear = nn.Linear(inner_channels, num_class)

        def forward(self, x):
            output = self.conv1(x)
            output = self.features(output)
            output = self.avgpool(output)
            output = output.view(output.size()[0], -1)
            output = self.linear(output)
            return output

        def _make_dense_layers(self, block, in_channels, nblocks):
            dense_block = nn.Sequential()
            for index in range(nblocks):
                dense_block.add_module('bottle_neck_layer_{}'.format(index), block(in_channels, self.growth_rate))
                in_channels += self.growth_rate
            return dense_block

    if arch == "googlenet":
        net = GoogleNet(num_class=10)
        assert net.a3.b3[4].eps == 4 and net.a3.b3[4].num_features == 4
    else:
        net = DenseNet(Bottleneck, [2, 1, 1], growth_rate=4, num_class=10)
    init = load(m, net, state)
    return init, train_steps(m, net, rng, (2, 3, 12, 12)) + summary(net.parameters()) + summary(net.buffers())


@pytest.mark.parametrize("arch", ["googlenet", "densenet"])
def test_weiaicunzai_googlenet_densenet(arch):
    compare(weiaicunzai_googlenet_densenet, arch=arch)


# (l) chenyaofo/pytorch-cifar-models: resnet.py (conv3x3 and conv1x1 helpers, BasicBlock's downsample argument,
# kaiming_normal_(mode='fan_out', nonlinearity='relu') and constant_ init, the cifar10_resnet20-style entry points made
# by functools.partial(_resnet, arch=..., layers=..., model_urls=..., num_classes=...) and setattr on the module),
# vgg.py (cfgs with 'M', make_layers(cfg, batch_norm=True), typing.cast, Linear init normal_(0, 0.01)) and
# mobilenetv2.py (torchvision's _make_divisible, ConvBNActivation subclassing nn.Sequential and aliased ConvBNReLU,
# InvertedResidual's use_res_connect, the first stride changed to 1 for CIFAR, adaptive_avg_pool2d then torch.flatten);
# widths cut, their hard-coded dropouts a parameter set to 0
def chenyaofo_cifar_models(m, state=None, arch="cifar10_resnet20", dropout=0.0):
    import functools
    import types
    from typing import List, Optional, Union, cast
    torch, nn = m.torch, m.nn
    Tensor = m.torch.Tensor
    torch.manual_seed(0)
    rng = np.random.default_rng(12)

    def conv3x3(in_planes, out_planes, stride=1):
        """3x3 convolution with padding"""
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)

    def conv1x1(in_planes, out_planes, stride=1):
        """1x1 convolution"""
        return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super(BasicBlock, self).__init__()
            self.conv1 = conv3x3(inplanes, planes, stride)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = conv3x3(planes, planes)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            identity = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            out = self.relu(out)
            return out

    class CifarResNet(nn.Module):
        def __init__(self, block, layers, num_classes=10):
            super(CifarResNet, self).__init__()
            self.inplanes = 4
            self.conv1 = conv3x3(3, 4)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = self._make_layer(block, 4, layers[0])
            self.layer2 = self._make_layer(block, 8, layers[1], stride=2)
            self.layer3 = self._make_layer(block, 16, layers[2], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16 * block.expansion, num_classes)
            for m_ in self.modules():
                if isinstance(m_, nn.Conv2d):
                    nn.init.kaiming_normal_(m_.weight, mode='fan_out', nonlinearity='relu')
                elif isinstance(m_, nn.BatchNorm2d):
                    nn.init.constant_(m_.weight, 1)
                    nn.init.constant_(m_.bias, 0)

        def _make_layer(self, block, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes * block.expansion:
                downsample = nn.Sequential(
                    conv1x1(self.inplanes, planes * block.expansion, stride),
                    nn.BatchNorm2d(planes * block.expansion),
                )
            layers = []
            layers.append(block(self.inplanes, planes, stride, downsample))
            self.inplanes = planes * block.expansion
            for _ in range(1, blocks):
                layers.append(block(self.inplanes, planes))
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.conv1(x)
            x = self.bn1(x)
            x = self.relu(x)
            x = self.layer1(x)
            x = self.layer2(x)
            x = self.layer3(x)
            x = self.avgpool(x)
            x = x.view(x.size(0), -1)
            x = self.fc(x)
            return x

    def _resnet(arch, layers, model_urls, progress=True, pretrained=False, **kwargs):
        model = CifarResNet(BasicBlock, layers, **kwargs)
        if pretrained:
            raise RuntimeError("no downloads here")  # load_state_dict_from_url(model_urls[arch], progress=progress)
        return model

    class VGG(nn.Module):
        def __init__(self, features: nn.Module, num_classes: int = 10, init_weights: bool = True) -> None:
            super(VGG, self).__init__()
            self.features = features
            self.classifier = nn.Sequential(
                nn.Linear(32, 32),
                nn.ReLU(True),
                nn.Dropout(dropout),
                nn.Linear(32, 32),
                nn.ReLU(True),
                nn.Dropout(dropout),
                nn.Linear(32, num_classes),
            )
            if init_weights:
                self._initialize_weights()

        def forward(self, x: Tensor) -> Tensor:
            x = self.features(x)
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

        def _initialize_weights(self) -> None:
            for m_ in self.modules():
                if isinstance(m_, nn.Conv2d):
                    nn.init.kaiming_normal_(m_.weight, mode='fan_out', nonlinearity='relu')
                    if m_.bias is not None:
                        nn.init.constant_(m_.bias, 0)
                elif isinstance(m_, nn.BatchNorm2d):
                    nn.init.constant_(m_.weight, 1)
                    nn.init.constant_(m_.bias, 0)
                elif isinstance(m_, nn.Linear):
                    nn.init.normal_(m_.weight, 0, 0.01)
                    nn.init.constant_(m_.bias, 0)

    def make_layers(cfg: List[Union[str, int]], batch_norm: bool = False) -> nn.Sequential:
        layers: List[nn.Module] = []
        in_channels = 3
        for v in cfg:
            if v == 'M':
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                v = cast(int, v)
                conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
                if batch_norm:
                    layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                else:
                    layers += [conv2d, nn.ReLU(inplace=True)]
                in_channels = v
        return nn.Sequential(*layers)

    cfgs = {'vgg11': [4, 'M', 8, 'M', 16, 16, 'M', 32, 32, 'M']}

    def _vgg(arch, cfg, batch_norm, model_urls, progress=True, pretrained=False, **kwargs):
        if pretrained:
            kwargs['init_weights'] = False
        model = VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)
        return model

    def _make_divisible(v: float, divisor: int, min_value: Optional[int] = None) -> int:
        if min_value is None:
            min_value = divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        # Make sure that round down does not go down by more than 10%.
        if new_v < 0.9 * v:
            new_v += divisor
        return new_v

    class ConvBNActivation(nn.Sequential):
        def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1, norm_layer=None,
                     activation_layer=None, dilation=1):
            padding = (kernel_size - 1) // 2 * dilation
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            if activation_layer is None:
                activation_layer = nn.ReLU6
            super(ConvBNReLU, self).__init__(
                nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, dilation=dilation, groups=groups,
                          bias=False),
                norm_layer(out_planes),
                activation_layer(inplace=True)
            )
            self.out_channels = out_planes

    ConvBNReLU = ConvBNActivation

    class InvertedResidual(nn.Module):
        def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
            super(InvertedResidual, self).__init__()
            self.stride = stride
            assert stride in [1, 2]
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            hidden_dim = int(round(inp * expand_ratio))
            self.use_res_connect = self.stride == 1 and inp == oup
            layers: List[nn.Module] = []
            if expand_ratio != 1:
                # pw
                layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer))
            layers.extend([
                # dw
                ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, norm_layer=norm_layer),
                # pw-linear
                nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
                norm_layer(oup),
            ])
            self.conv = nn.Sequential(*layers)
            self.out_channels = oup
            self._is_cn = stride > 1

        def forward(self, x: Tensor) -> Tensor:
            if self.use_res_connect:
                return x + self.conv(x)
            else:
                return self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self, num_classes=10, width_mult=1.0, inverted_residual_setting=None, round_nearest=8, block=None,
                     norm_layer=None):
            super(MobileNetV2, self).__init__()
            if block is None:
                block = InvertedResidual
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            input_channel = 32
            last_channel = 64  # 1280 in the source
            if inverted_residual_setting is None:
                inverted_residual_setting = [
                    # t, c, n, s
                    [1, 16, 1, 1],
                    [6, 24, 2, 1],  # NOTE: change stride 2 -> 1 for CIFAR10/100
                    [6, 32, 1, 2],
                ]
            if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
                raise ValueError("inverted_residual_setting should be non-empty "
                                 "or a 4-element list, got {}".format(inverted_residual_setting))
            input_channel = _make_divisible(input_channel * width_mult, round_nearest)
            self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
            features: List[nn.Module] = [ConvBNReLU(3, input_channel, stride=1, norm_layer=norm_layer)]
            for t, c, n, s in inverted_residual_setting:
                output_channel = _make_divisible(c * width_mult, round_nearest)
                for i in range(n):
                    stride = s if i == 0 else 1
                    features.append(block(input_channel, output_channel, stride, expand_ratio=t, norm_layer=norm_layer))
                    input_channel = output_channel
            features.append(ConvBNReLU(input_channel, self.last_channel, kernel_size=1, norm_layer=norm_layer))
            self.features = nn.Sequential(*features)
            self.classifier = nn.Sequential(
                nn.Dropout(dropout),
                nn.Linear(self.last_channel, num_classes),
            )
            for m_ in self.modules():
                if isinstance(m_, nn.Conv2d):
                    nn.init.kaiming_normal_(m_.weight, mode='fan_out')
                    if m_.bias is not None:
                        nn.init.zeros_(m_.bias)
                elif isinstance(m_, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.ones_(m_.weight)
                    nn.init.zeros_(m_.bias)
                elif isinstance(m_, nn.Linear):
                    nn.init.normal_(m_.weight, 0, 0.01)
                    nn.init.zeros_(m_.bias)

        def _forward_impl(self, x: Tensor) -> Tensor:
            x = self.features(x)
            # Cannot use "squeeze" as batch-size can be 1
            x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

        def forward(self, x: Tensor) -> Tensor:
            return self._forward_impl(x)

    def _mobilenet_v2(arch, model_urls, progress=True, pretrained=False, **kwargs):
        return MobileNetV2(**kwargs)

    thismodule = types.SimpleNamespace()
    for dataset in ["cifar10", "cifar100"]:
        num_classes = 10 if dataset == "cifar10" else 100
        for layers, model_name in zip([[1] * 3, [2] * 3], ["resnet20", "resnet32"]):  # [3] * 3 ... in the source
            method_name = f"{dataset}_{model_name}"
            setattr(thismodule, method_name, functools.partial(_resnet, arch=method_name, layers=layers,
                                                               model_urls={}, num_classes=num_classes))
        setattr(thismodule, f"{dataset}_vgg11_bn", functools.partial(_vgg, arch=f"{dataset}_vgg11_bn", cfg="vgg11",
                                                                     batch_norm=True, model_urls={},
                                                                     num_classes=num_classes))
        setattr(thismodule, f"{dataset}_mobilenetv2_x0_25",
                functools.partial(_mobilenet_v2, arch=f"{dataset}_mobilenetv2_x0_25", model_urls={}, width_mult=0.25,
                                  num_classes=num_classes))
    net = getattr(thismodule, arch)()
    init = load(m, net, state)
    return init, train_steps(m, net, rng, (2, 3, 16, 16)) + summary(net.parameters()) + summary(net.buffers())


@pytest.mark.parametrize("arch", ["cifar10_resnet20", "cifar10_vgg11_bn", "cifar10_mobilenetv2_x0_25"])
def test_chenyaofo_cifar_models(arch):
    compare(chenyaofo_cifar_models, arch=arch)


# (m) osmr/imgclsmob's pytorchcv: common.py (get_activation_layer taking a function, a name or a module; ConvBlock with
# its activation=(lambda: nn.ReLU(inplace=True)) default, nn.ZeroPad2d for a 4-tuple padding, conv1x1_block and
# conv3x3_block; SEBlock with use_conv 1x1 convolutions or Linear layers and w.unsqueeze(2).unsqueeze(3)), resnet.py's
# ResUnit (resize_identity, identity_conv), preresnet.py's PreConvBlock returning (x, x_pre_activ) so that the
# identity convolution reads the pre-activation, and resnet_cifar.py's, seresnet_cifar.py's and preresnet_cifar.py's
# networks (features.add_module("stage{}".format(i + 1), ...), AvgPool2d(kernel_size=8, stride=1) as final_pool,
# _init_params by kaiming_uniform_ over named_modules(), get_resnet_cifar's channels = [[ci] * li for ...]); widths cut
def osmr_cifar(m, state=None, arch="resnet", use_conv=True):
    from inspect import isfunction
    torch, nn = m.torch, m.nn
    init = m.nn.init
    torch.manual_seed(0)
    rng = np.random.default_rng(13)

    def get_activation_layer(activation):
        assert (activation is not None)
        if isfunction(activation):
            return activation()
        elif isinstance(activation, str):
            if activation == "relu":
                return nn.ReLU(inplace=True)
            elif activation == "relu6":
                return nn.ReLU6(inplace=True)
            elif activation == "sigmoid":
                return nn.Sigmoid()
            else:
                raise NotImplementedError()
        else:
            assert (isinstance(activation, nn.Module))
            return activation

    def conv1x1(in_channels, out_channels, stride=1, groups=1, bias=False):
        return nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=1, stride=stride,
                         groups=groups, bias=bias)

    def conv3x3(in_channels, out_channels, stride=1, padding=1, dilation=1, groups=1, bias=False):
        return nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=3, stride=stride,
                         padding=padding, dilation=dilation, groups=groups, bias=bias)

    class ConvBlock(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation=1, groups=1, bias=False,
                     use_bn=True, bn_eps=1e-5, activation=(lambda: nn.ReLU(inplace=True))):
            super(ConvBlock, self).__init__()
            self.activate = (activation is not None)
            self.use_bn = use_bn
            self.use_pad = (isinstance(padding, (list, tuple)) and (len(padding) == 4))
            if self.use_pad:
                self.pad = nn.ZeroPad2d(padding=padding)
                padding = 0
            self.conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size,
                                  stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)
            if self.use_bn:
                self.bn = nn.BatchNorm2d(num_features=out_channels, eps=bn_eps)
            if self.activate:
                self.activ = get_activation_layer(activation)

        def forward(self, x):
            if self.use_pad:
                x = self.pad(x)
            x = self.conv(x)
            if self.use_bn:
                x = self.bn(x)
            if self.activate:
                x = self.activ(x)
            return x

    def conv1x1_block(in_channels, out_channels, stride=1, padding=0, groups=1, bias=False, use_bn=True, bn_eps=1e-5,
                      activation=(lambda: nn.ReLU(inplace=True))):
        return ConvBlock(in_channels=in_channels, out_channels=out_channels, kernel_size=1, stride=stride,
                         padding=padding, groups=groups, bias=bias, use_bn=use_bn, bn_eps=bn_eps, activation=activation)

    def conv3x3_block(in_channels, out_channels, stride=1, padding=1, dilation=1, groups=1, bias=False, use_bn=True,
                      bn_eps=1e-5, activation=(lambda: nn.ReLU(inplace=True))):
        return ConvBlock(in_channels=in_channels, out_channels=out_channels, kernel_size=3, stride=stride,
                         padding=padding, dilation=dilation, groups=groups, bias=bias, use_bn=use_bn, bn_eps=bn_eps,
                         activation=activation)

    class SEBlock(nn.Module):
        def __init__(self, channels, reduction=16, mid_channels=None, round_mid=False, use_conv=True,
                     mid_activation=(lambda: nn.ReLU(inplace=True)), out_activation=(lambda: nn.Sigmoid())):
            super(SEBlock, self).__init__()
            self.use_conv = use_conv
            if mid_channels is None:
                mid_channels = channels // reduction
            self.pool = nn.AdaptiveAvgPool2d(output_size=1)
            if use_conv:
                self.conv1 = conv1x1(in_channels=channels, out_channels=mid_channels, bias=True)
            else:
                self.fc1 = nn.Linear(in_features=channels, out_features=mid_channels)
            self.activ = get_activation_layer(mid_activation)
            if use_conv:
                self.conv2 = conv1x1(in_channels=mid_channels, out_channels=channels, bias=True)
            else:
                self.fc2 = nn.Linear(in_features=mid_channels, out_features=channels)
            self.sigmoid = get_activation_layer(out_activation)

        def forward(self, x):
            w = self.pool(x)
            if not self.use_conv:
                w = w.view(x.size(0), -1)
            w = self.conv1(w) if self.use_conv else self.fc1(w)
            w = self.activ(w)
            w = self.conv2(w) if self.use_conv else self.fc2(w)
            w = self.sigmoid(w)
            if not self.use_conv:
                w = w.unsqueeze(2).unsqueeze(3)
            x = x * w
            return x

    class ResBlock(nn.Module):
        def __init__(self, in_channels, out_channels, stride, bias=False, use_bn=True):
            super(ResBlock, self).__init__()
            self.conv1 = conv3x3_block(in_channels=in_channels, out_channels=out_channels, stride=stride, bias=bias,
                                       use_bn=use_bn)
            self.conv2 = conv3x3_block(in_channels=out_channels, out_channels=out_channels, bias=bias, use_bn=use_bn,
                                       activation=None)

        def forward(self, x):
            x = self.conv1(x)
            x = self.conv2(x)
            return x

    class ResUnit(nn.Module):
        def __init__(self, in_channels, out_channels, stride, bias=False, use_bn=True, bottleneck=False,
                     conv1_stride=False, use_se=False):
            super(ResUnit, self).__init__()
            self.resize_identity = (in_channels != out_channels) or (stride != 1)
            self.use_se = use_se
            self.body = ResBlock(in_channels=in_channels, out_channels=out_channels, stride=stride, bias=bias,
                                 use_bn=use_bn)
            if self.use_se:  # seresnet_cifar.py's SEResUnit
                self.se = SEBlock(channels=out_channels, reduction=4, use_conv=use_conv)
            if self.resize_identity:
                self.identity_conv = conv1x1_block(in_channels=in_channels, out_channels=out_channels, stride=stride,
                                                   bias=bias, use_bn=use_bn, activation=None)
            self.activ = nn.ReLU(inplace=True)

        def forward(self, x):
            if self.resize_identity:
                identity = self.identity_conv(x)
            else:
                identity = x
            x = self.body(x)
            if self.use_se:
                x = self.se(x)
            x = x + identity
            x = self.activ(x)
            return x

    class PreConvBlock(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation=1, bias=False,
                     use_bn=True, return_preact=False, activate=True):
            super(PreConvBlock, self).__init__()
            self.return_preact = return_preact
            self.activate = activate
            self.use_bn = use_bn
            if self.use_bn:
                self.bn = nn.BatchNorm2d(num_features=in_channels)
            if self.activate:
                self.activ = nn.ReLU(inplace=True)
            self.conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size,
                                  stride=stride, padding=padding, dilation=dilation, bias=bias)

        def forward(self, x):
            if self.use_bn:
                x = self.bn(x)
            if self.activate:
                x = self.activ(x)
            if self.return_preact:
                x_pre_activ = x
            x = self.conv(x)
            if self.return_preact:
                return x, x_pre_activ
            else:
                return x

    def pre_conv3x3_block(in_channels, out_channels, stride=1, padding=1, dilation=1, bias=False, use_bn=True,
                          return_preact=False, activate=True):
        return PreConvBlock(in_channels=in_channels, out_channels=out_channels, kernel_size=3, stride=stride,
                            padding=padding, dilation=dilation, bias=bias, use_bn=use_bn, return_preact=return_preact,
                            activate=activate)

    class PreResBlock(nn.Module):
        def __init__(self, in_channels, out_channels, stride, bias=False, use_bn=True):
            super(PreResBlock, self).__init__()
            self.conv1 = pre_conv3x3_block(in_channels=in_channels, out_channels=out_channels, stride=stride, bias=bias,
                                           use_bn=use_bn, return_preact=True)
            self.conv2 = pre_conv3x3_block(in_channels=out_channels, out_channels=out_channels, bias=bias,
                                           use_bn=use_bn)

        def forward(self, x):
            x, x_pre_activ = self.conv1(x)
            x = self.conv2(x)
            return x, x_pre_activ

    class PreResUnit(nn.Module):
        def __init__(self, in_channels, out_channels, stride, bias=False, use_bn=True, bottleneck=False,
                     conv1_stride=False):
            super(PreResUnit, self).__init__()
            self.resize_identity = (in_channels != out_channels) or (stride != 1)
            self.body = PreResBlock(in_channels=in_channels, out_channels=out_channels, stride=stride, bias=bias,
                                    use_bn=use_bn)
            if self.resize_identity:
                self.identity_conv = conv1x1(in_channels=in_channels, out_channels=out_channels, stride=stride,
                                             bias=bias)

        def forward(self, x):
            identity = x
            x, x_pre_activ = self.body(x)
            if self.resize_identity:
                identity = self.identity_conv(x_pre_activ)
            x = x + identity
            return x

    class PreResActivation(nn.Module):
        def __init__(self, in_channels, bn_eps=1e-5):
            super(PreResActivation, self).__init__()
            self.bn = nn.BatchNorm2d(num_features=in_channels, eps=bn_eps)
            self.activ = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.bn(x)
            x = self.activ(x)
            return x

    class CIFARResNet(nn.Module):
        def __init__(self, channels, init_block_channels, bottleneck, in_channels=3, in_size=(32, 32), num_classes=10,
                     preact=False, use_se=False):
            super(CIFARResNet, self).__init__()
            self.in_size = in_size
            self.num_classes = num_classes
            self.features = nn.Sequential()
            if preact:
                self.features.add_module("init_block", conv3x3(in_channels=in_channels,
                                                               out_channels=init_block_channels))
            else:
                self.features.add_module("init_block", conv3x3_block(in_channels=in_channels,
                                                                     out_channels=init_block_channels))
            in_channels = init_block_channels
            for i, channels_per_stage in enumerate(channels):
                stage = nn.Sequential()
                for j, out_channels in enumerate(channels_per_stage):
                    stride = 2 if (j == 0) and (i != 0) else 1
                    if preact:
                        unit = PreResUnit(in_channels=in_channels, out_channels=out_channels, stride=stride,
                                          bottleneck=bottleneck, conv1_stride=False)
                    else:
                        unit = ResUnit(in_channels=in_channels, out_channels=out_channels, stride=stride,
                                       bottleneck=bottleneck, conv1_stride=False, use_se=use_se)
                    stage.add_module("unit{}".format(j + 1), unit)
                    in_channels = out_channels
                self.features.add_module("stage{}".format(i + 1), stage)
            if preact:
                self.features.add_module("post_activ", PreResActivation(in_channels=in_channels))
            self.features.add_module("final_pool", nn.AvgPool2d(kernel_size=8, stride=1))
            self.output = nn.Linear(in_features=in_channels, out_features=num_classes)
            self._init_params()

        def _init_params(self):
            for name, module in self.named_modules():
                if isinstance(module, nn.Conv2d):
                    init.kaiming_uniform_(module.weight)
                    if module.bias is not None:
                        init.constant_(module.bias, 0)

        def forward(self, x):
            x = self.features(x)
            x = x.view(x.size(0), -1)
            x = self.output(x)
            return x

    def get_resnet_cifar(num_classes, blocks, bottleneck, model_name=None, pretrained=False, **kwargs):
        assert (num_classes in [10, 100])
        assert ((blocks - 2) % 6 == 0)
        layers = [(blocks - 2) // 6] * 3
        channels_per_layers = [8, 16, 32]  # [16, 32, 64] in the source
        init_block_channels = 8
        channels = [[ci] * li for (ci, li) in zip(channels_per_layers, layers)]
        net = CIFARResNet(channels=channels, init_block_channels=init_block_channels, bottleneck=bottleneck,
                          num_classes=num_classes, **kwargs)
        assert not pretrained
        return net

    kwargs = {"resnet": {}, "seresnet": {"use_se": True}, "preresnet": {"preact": True}}[arch]
    net = get_resnet_cifar(num_classes=10, blocks=8, bottleneck=False, model_name=f"{arch}8_cifar10", **kwargs)
    assert [name for name, _ in net.features.named_children()][-1] == "final_pool"
    init_ = load(m, net, state)
    return init_, train_steps(m, net, rng, (2, 3, 32, 32)) + summary(net.parameters()) + summary(net.buffers())


@pytest.mark.parametrize("arch,use_conv", [("resnet", True), ("seresnet", True), ("seresnet", False),
                                           ("preresnet", True)])
def test_osmr_cifar(arch, use_conv):
    compare(osmr_cifar, arch=arch, use_conv=use_conv)


# (n) activatedgeek/LeNet-5 (lenet.py, run.py): C1, C2, C3, F4 and F5 modules each an nn.Sequential of an OrderedDict,
# two C2 branches summed by `output += x` on a max-pooled map, F5 ending in nn.LogSoftmax(dim=-1) fed to
# nn.CrossEntropyLoss (as the source does), Adam(lr=2e-3), loss.detach().cpu().item() into a list, the test pass's
# output.detach().max(1)[1] and pred.eq(labels.view_as(pred)).sum(), avg_loss /= len(data_test), over DataLoaders
def activatedgeek_lenet5(m, state=None):
    from collections import OrderedDict
    torch, nn, optim, data = m.torch, m.nn, m.optim, m.data
    torch.manual_seed(0)
    rng = np.random.default_rng(14)

    class C1(nn.Module):
        def __init__(self):
            super(C1, self).__init__()
            self.c1 = nn.Sequential(OrderedDict([
                ('c1', nn.Conv2d(1, 6, kernel_size=(5, 5))),
                ('relu1', nn.ReLU()),
                ('s1', nn.MaxPool2d(kernel_size=(2, 2), stride=2))
            ]))

        def forward(self, img):
            output = self.c1(img)
            return output

    class C2(nn.Module):
        def __init__(self):
            super(C2, self).__init__()
            self.c2 = nn.Sequential(OrderedDict([
                ('c2', nn.Conv2d(6, 16, kernel_size=(5, 5))),
                ('relu2', nn.ReLU()),
                ('s2', nn.MaxPool2d(kernel_size=(2, 2), stride=2))
            ]))

        def forward(self, img):
            output = self.c2(img)
            return output

    class C3(nn.Module):
        def __init__(self):
            super(C3, self).__init__()
            self.c3 = nn.Sequential(OrderedDict([
                ('c3', nn.Conv2d(16, 120, kernel_size=(5, 5))),
                ('relu3', nn.ReLU())
            ]))

        def forward(self, img):
            output = self.c3(img)
            return output

    class F4(nn.Module):
        def __init__(self):
            super(F4, self).__init__()
            self.f4 = nn.Sequential(OrderedDict([
                ('f4', nn.Linear(120, 84)),
                ('relu4', nn.ReLU())
            ]))

        def forward(self, img):
            output = self.f4(img)
            return output

    class F5(nn.Module):
        def __init__(self):
            super(F5, self).__init__()
            self.f5 = nn.Sequential(OrderedDict([
                ('f5', nn.Linear(84, 10)),
                ('sig5', nn.LogSoftmax(dim=-1))
            ]))

        def forward(self, img):
            output = self.f5(img)
            return output

    class LeNet5(nn.Module):
        """
        Input - 1x32x32
        Output - 10
        """
        def __init__(self):
            super(LeNet5, self).__init__()
            self.c1 = C1()
            self.c2_1 = C2()
            self.c2_2 = C2()
            self.c3 = C3()
            self.f4 = F4()
            self.f5 = F5()

        def forward(self, img):
            output = self.c1(img)
            x = self.c2_1(output)
            output = self.c2_2(output)
            output += x
            output = self.c3(output)
            output = output.view(img.size(0), -1)
            output = self.f4(output)
            output = self.f5(output)
            return output

    def dataset(n):
        return data.TensorDataset(torch.tensor(rng.random((n, 1, 32, 32)).astype(np.float32)),
                                  torch.tensor(rng.integers(0, 10, n)))

    data_train, data_test = dataset(4), dataset(3)
    data_train_loader = data.DataLoader(data_train, batch_size=2, shuffle=False, num_workers=0)
    data_test_loader = data.DataLoader(data_test, batch_size=2, num_workers=0)
    net = LeNet5()
    init = load(m, net, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(net.parameters(), lr=2e-3)
    cur_batch_win = None
    loss_list, batch_list = [], []

    def train(epoch):
        net.train()
        for i, (images, labels) in enumerate(data_train_loader):
            optimizer.zero_grad()
            output = net(images)
            loss = criterion(output, labels)
            loss_list.append(loss.detach().cpu().item())
            batch_list.append(i + 1)
            loss.backward()
            optimizer.step()
        return cur_batch_win

    def test():
        net.eval()
        total_correct = 0
        avg_loss = 0.0
        for i, (images, labels) in enumerate(data_test_loader):
            output = net(images)
            avg_loss += criterion(output, labels).sum()
            pred = output.detach().max(1)[1]
            total_correct += pred.eq(labels.view_as(pred)).sum()
        avg_loss /= len(data_test)
        return avg_loss.detach().cpu().item(), float(total_correct) / len(data_test)

    train(1)
    return init, loss_list + list(test()) + summary(net.parameters())


def test_activatedgeek_lenet5():
    compare(activatedgeek_lenet5)


# (o) the 1998 paper's LeNet-5 as paper-faithful reproductions write it: the scaled tanh 1.7159 * tanh(2/3 x),
# trainable subsampling layers (a 2x2 sum by F.avg_pool2d(x, 2) * 4 times a per-channel Parameter of torch.Tensor(c)
# plus a bias, initialised by uniform_(-2.4 / fan_in, 2.4 / fan_in)), C3's partial connection table as a ModuleList
# of convolutions over x[:, m] for each list m of input maps, concatenated, an RBF output layer of fixed +-1 bitmaps
# in a buffer ((x.unsqueeze(1) - weight) ** 2).sum(-1), the MAP criterion (the correct class's penalty plus
# log(e^-j + sum e^-y_i)) and prediction by argmin; SGD with momentum 0 as in the paper, on 32x32 images
def lenet5_1998(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(15)
    C3_MAPPING = [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [0, 4, 5], [0, 1, 5], [0, 1, 2, 3], [1, 2, 3, 4],
                  [2, 3, 4, 5], [0, 3, 4, 5], [0, 1, 4, 5], [0, 1, 2, 5], [0, 1, 3, 4], [1, 2, 4, 5], [0, 2, 3, 5],
                  [0, 1, 2, 3, 4, 5]]

    class ScaledTanh(nn.Module):
        def forward(self, x):
            return 1.7159 * torch.tanh(2. / 3. * x)

    class Subsampling(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.weight = nn.Parameter(torch.Tensor(channels))
            self.bias = nn.Parameter(torch.Tensor(channels))
            self.reset_parameters()

        def reset_parameters(self):
            fan_in = 4
            nn.init.uniform_(self.weight, -2.4 / fan_in, 2.4 / fan_in)
            nn.init.uniform_(self.bias, -2.4 / fan_in, 2.4 / fan_in)

        def forward(self, x):
            x = F.avg_pool2d(x, 2) * 4
            return x * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)

    class C3(nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = nn.ModuleList([nn.Conv2d(len(m_), 1, 5) for m_ in C3_MAPPING])

        def forward(self, x):
            return torch.cat([conv(x[:, m_]) for conv, m_ in zip(self.convs, C3_MAPPING)], dim=1)

    class RBF(nn.Module):
        def __init__(self, bitmaps):
            super().__init__()
            self.register_buffer('weight', bitmaps)

        def forward(self, x):
            return ((x.unsqueeze(1) - self.weight.unsqueeze(0)) ** 2).sum(-1)

    class LeNet5(nn.Module):
        def __init__(self, bitmaps):
            super().__init__()
            self.c1 = nn.Conv2d(1, 6, 5)
            self.s2 = Subsampling(6)
            self.c3 = C3()
            self.s4 = Subsampling(16)
            self.c5 = nn.Conv2d(16, 120, 5)
            self.f6 = nn.Linear(120, 84)
            self.act = ScaledTanh()
            self.output = RBF(bitmaps)

        def forward(self, x):
            x = self.act(self.s2(self.c1(x)))
            x = self.act(self.s4(self.c3(x)))
            x = self.act(self.c5(x))
            x = x.view(-1, 120)
            x = self.act(self.f6(x))
            return self.output(x)

    def map_loss(output, target, j=0.1):
        correct = output.gather(1, target.unsqueeze(1)).squeeze(1)
        return (correct + torch.log(math.exp(-j) + torch.exp(-output).sum(1))).mean()

    bitmaps = torch.tensor(np.where(rng.random((10, 84)) < 0.5, -1.0, 1.0).astype(np.float32))
    model = LeNet5(bitmaps)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    losses = []
    for step in range(2):
        images = torch.tensor(rng.random((2, 1, 32, 32)).astype(np.float32) * 1.275 - 0.1)  # the paper's [-0.1, 1.175]
        labels = torch.tensor(rng.integers(0, 10, 2))
        optimizer.zero_grad()
        output = model(images)
        loss = map_loss(output, labels)
        loss.backward()
        optimizer.step()
        pred = output.detach().argmin(1)
        losses += [loss.item(), pred.eq(labels).sum().item(), output.sum().item()]
    return init, losses + summary(model.parameters())


def test_lenet5_1998():
    compare(lenet5_1998)


# (p) multi-branch blocks of CIFAR-sized ResNets as their repositories write them: zhanghang1989/ResNeSt's
# SplAtConv2d (a grouped conv of channels * radix, torch.split by rchannel // self.radix, gap = sum(splited) from
# Python's 0, the torch.__version__ < '1.5' branch, rSoftMax's view(batch, cardinality, radix, -1).transpose(1, 2)
# softmaxed over dim 1 then reshaped, out.contiguous()); Res2Net's Bottle2neck (torch.split(out, self.width, 1), the
# hierarchical sp = sp + spx[i] through a ModuleList of 3x3 convolutions, the 'stage' block's AvgPool2d on the last
# split); d-li14/octconv.pytorch's OctaveConv (high and low frequency maps passed as a tuple, nn.Conv2d's stride,
# padding, dilation, groups and bias passed by position, AvgPool2d((2, 2), stride=2) and nn.Upsample(scale_factor=2,
# mode='nearest') between them) inside Conv_BN_ACT; each in a two-block network on 8x8 images, widths cut
def multi_branch_blocks(m, state=None, arch="resnest"):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(16)

    class rSoftMax(nn.Module):
        def __init__(self, radix, cardinality):
            super().__init__()
            self.radix = radix
            self.cardinality = cardinality

        def forward(self, x):
            batch = x.size(0)
            if self.radix > 1:
                x = x.view(batch, self.cardinality, self.radix, -1).transpose(1, 2)
                x = F.softmax(x, dim=1)
                x = x.reshape(batch, -1)
            else:
                x = torch.sigmoid(x)
            return x

    class SplAtConv2d(nn.Module):
        """Split-Attention Conv2d"""
        def __init__(self, in_channels, channels, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                     bias=True, radix=2, reduction_factor=4, norm_layer=None, **kwargs):
            super(SplAtConv2d, self).__init__()
            inter_channels = max(in_channels * radix // reduction_factor, 8)  # 32 in the source
            self.radix = radix
            self.cardinality = groups
            self.channels = channels
            self.conv = nn.Conv2d(in_channels, channels * radix, kernel_size, stride, padding, dilation,
                                  groups=groups * radix, bias=bias, **kwargs)
            self.use_bn = norm_layer is not None
            if self.use_bn:
                self.bn0 = norm_layer(channels * radix)
            self.relu = nn.ReLU(inplace=True)
            self.fc1 = nn.Conv2d(channels, inter_channels, 1, groups=self.cardinality)
            if self.use_bn:
                self.bn1 = norm_layer(inter_channels)
            self.fc2 = nn.Conv2d(inter_channels, channels * radix, 1, groups=self.cardinality)
            self.rsoftmax = rSoftMax(radix, groups)

        def forward(self, x):
            x = self.conv(x)
            if self.use_bn:
                x = self.bn0(x)
            x = self.relu(x)
            batch, rchannel = x.shape[:2]
            if self.radix > 1:
                if torch.__version__ < '1.5':
                    splited = torch.split(x, int(rchannel // self.radix), dim=1)
                else:
                    splited = torch.split(x, rchannel // self.radix, dim=1)
                gap = sum(splited)
            else:
                gap = x
            gap = F.adaptive_avg_pool2d(gap, 1)
            gap = self.fc1(gap)
            if self.use_bn:
                gap = self.bn1(gap)
            gap = self.relu(gap)
            atten = self.fc2(gap)
            atten = self.rsoftmax(atten).view(batch, -1, 1, 1)
            if self.radix > 1:
                if torch.__version__ < '1.5':
                    attens = torch.split(atten, int(rchannel // self.radix), dim=1)
                else:
                    attens = torch.split(atten, rchannel // self.radix, dim=1)
                out = sum([att * split for (att, split) in zip(attens, splited)])
            else:
                out = atten * x
            return out.contiguous()

    class Bottle2neck(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None, baseWidth=26, scale=4, stype='normal'):
            super(Bottle2neck, self).__init__()
            width = int(math.floor(planes * (baseWidth / 64.0)))
            self.conv1 = nn.Conv2d(inplanes, width * scale, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(width * scale)
            if scale == 1:
                self.nums = 1
            else:
                self.nums = scale - 1
            if stype == 'stage':
                self.pool = nn.AvgPool2d(kernel_size=3, stride=stride, padding=1)
            convs = []
            bns = []
            for i in range(self.nums):
                convs.append(nn.Conv2d(width, width, kernel_size=3, stride=stride, padding=1, bias=False))
                bns.append(nn.BatchNorm2d(width))
            self.convs = nn.ModuleList(convs)
            self.bns = nn.ModuleList(bns)
            self.conv3 = nn.Conv2d(width * scale, planes * self.expansion, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * self.expansion)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stype = stype
            self.scale = scale
            self.width = width

        def forward(self, x):
            residual = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            spx = torch.split(out, self.width, 1)
            for i in range(self.nums):
                if i == 0 or self.stype == 'stage':
                    sp = spx[i]
                else:
                    sp = sp + spx[i]
                sp = self.convs[i](sp)
                sp = self.relu(self.bns[i](sp))
                if i == 0:
                    out = sp
                else:
                    out = torch.cat((out, sp), 1)
            if self.scale != 1 and self.stype == 'normal':
                out = torch.cat((out, spx[self.nums]), 1)
            elif self.scale != 1 and self.stype == 'stage':
                out = torch.cat((out, self.pool(spx[self.nums])), 1)
            out = self.conv3(out)
            out = self.bn3(out)
            if self.downsample is not None:
                residual = self.downsample(x)
            out += residual
            out = self.relu(out)
            return out

    class OctaveConv(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, alpha_in=0.5, alpha_out=0.5, stride=1, padding=0,
                     dilation=1, groups=1, bias=False):
            super(OctaveConv, self).__init__()
            self.downsample = nn.AvgPool2d(kernel_size=(2, 2), stride=2)
            self.upsample = nn.Upsample(scale_factor=2, mode='nearest')
            assert stride == 1 or stride == 2, "Stride should be 1 or 2."
            self.stride = stride
            self.is_dw = groups == in_channels
            assert 0 <= alpha_in <= 1 and 0 <= alpha_out <= 1, "Alphas should be in the interval from 0 to 1."
            self.alpha_in, self.alpha_out = alpha_in, alpha_out
            self.conv_l2l = None if alpha_in == 0 or alpha_out == 0 else \
                nn.Conv2d(int(alpha_in * in_channels), int(alpha_out * out_channels),
                          kernel_size, 1, padding, dilation, math.ceil(alpha_in * groups), bias)
            self.conv_l2h = None if alpha_in == 0 or alpha_out == 1 or self.is_dw else \
                nn.Conv2d(int(alpha_in * in_channels), out_channels - int(alpha_out * out_channels),
                          kernel_size, 1, padding, dilation, groups, bias)
            self.conv_h2l = None if alpha_in == 1 or alpha_out == 0 or self.is_dw else \
                nn.Conv2d(in_channels - int(alpha_in * in_channels), int(alpha_out * out_channels),
                          kernel_size, 1, padding, dilation, groups, bias)
            self.conv_h2h = None if alpha_in == 1 or alpha_out == 1 else \
                nn.Conv2d(in_channels - int(alpha_in * in_channels), out_channels - int(alpha_out * out_channels),
                          kernel_size, 1, padding, dilation, math.ceil(groups - alpha_in * groups), bias)

        def forward(self, x):
            x_h, x_l = x if type(x) is tuple else (x, None)
            x_h = self.downsample(x_h) if self.stride == 2 else x_h
            x_h2h = self.conv_h2h(x_h)
            x_h2l = self.conv_h2l(self.downsample(x_h)) if self.alpha_out > 0 and not self.is_dw else None
            if x_l is not None:
                x_l2l = self.downsample(x_l) if self.stride == 2 else x_l
                x_l2l = self.conv_l2l(x_l2l) if self.alpha_out > 0 else None
                if self.is_dw:
                    return x_h2h, x_l2l
                else:
                    x_l2h = self.conv_l2h(x_l)
                    x_l2h = self.upsample(x_l2h) if self.stride == 1 else x_l2h
                    x_h = x_l2h + x_h2h
                    x_l = x_h2l + x_l2l if x_h2l is not None and x_l2l is not None else None
                    return x_h, x_l
            else:
                return x_h2h, x_h2l

    class Conv_BN_ACT(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, alpha_in=0.5, alpha_out=0.5, stride=1, padding=0,
                     dilation=1, groups=1, bias=False, norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU):
            super(Conv_BN_ACT, self).__init__()
            self.conv = OctaveConv(in_channels, out_channels, kernel_size, alpha_in, alpha_out, stride, padding,
                                   dilation, groups, bias)
            self.bn_h = None if alpha_out == 1 else norm_layer(int(out_channels * (1 - alpha_out)))
            self.bn_l = None if alpha_out == 0 else norm_layer(int(out_channels * alpha_out))
            self.act = activation_layer(inplace=True)

        def forward(self, x):
            x_h, x_l = self.conv(x)
            x_h = self.act(self.bn_h(x_h))
            x_l = self.act(self.bn_l(x_l)) if x_l is not None else None
            return x_h, x_l

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            if arch == "resnest":
                self.blocks = nn.Sequential(SplAtConv2d(8, 8, 3, padding=1, groups=1, bias=False, radix=2,
                                                        norm_layer=nn.BatchNorm2d),
                                            SplAtConv2d(8, 8, 3, stride=2, padding=1, groups=2, bias=False, radix=2,
                                                        norm_layer=nn.BatchNorm2d))
                out = 8
            elif arch == "res2net":
                down = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
                self.blocks = nn.Sequential(Bottle2neck(8, 4, stride=2, downsample=down, baseWidth=32, scale=4,
                                                        stype='stage'),
                                            Bottle2neck(16, 4, baseWidth=32, scale=4))
                out = 16
            else:
                self.blocks = nn.Sequential(Conv_BN_ACT(8, 8, 3, alpha_in=0, alpha_out=0.5, padding=1),
                                            Conv_BN_ACT(8, 8, 3, padding=1),
                                            Conv_BN_ACT(8, 8, 3, alpha_out=0, padding=1))
                out = 8
            self.fc = nn.Linear(out, 10)

        def forward(self, x):
            x = self.blocks(self.stem(x))
            if isinstance(x, tuple):
                x = x[0]
            x = F.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.fc(x)

    net = Net()
    init = load(m, net, state)
    return init, train_steps(m, net, rng, (2, 3, 8, 8)) + summary(net.parameters()) + summary(net.buffers())


@pytest.mark.parametrize("arch", ["resnest", "res2net", "octconv"])
def test_multi_branch_blocks(arch):
    compare(multi_branch_blocks, arch=arch)
