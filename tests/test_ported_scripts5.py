"""torchvision's model definitions as people copy them into CIFAR repositories (ResNet with
norm_layer and zero_init_residual, DenseNet's memory-efficient checkpointed layers, GoogLeNet's
aux heads and namedtuple outputs, ShuffleNetV2, SqueezeNet, RegNet, ViT with nn.MultiheadAttention),
timm's DeiT distillation token, and the older script styles (Variable, .data[0], DataParallel,
bearpaw's AverageMeter and top-k accuracy, lr set by hand in param_groups, torch.save of a dict with
the epoch), ported to tnet by their imports alone, as in test_ported_scripts.py; widths are tiny
and runs 1-2 steps."""
import importlib
import math
from collections import OrderedDict, namedtuple
from functools import partial
from typing import List, Optional

import numpy as np

from helpers import batches, compare, load


def step(m, model, opt, x, y):
    out = model(m.torch.tensor(x))
    loss = m.F.cross_entropy(out, m.torch.tensor(y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def train(m, model, state, steps=1, shape=(2, 3, 8, 8), lr=0.05):
    """steps SGD steps on random data, then an eval-mode forward under no_grad."""
    init = load(m, model, state)
    opt = m.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    losses = [step(m, model, opt, x, y) for x, y in batches(0, steps, shape)]
    model.eval()
    with m.torch.no_grad():
        losses.append(model(m.torch.tensor(batches(1, 1, shape)[0][0])).sum().item())
    return init, losses


# (a) torchvision's resnet.py: conv3x3/conv1x1 helpers, BasicBlock and Bottleneck taking norm_layer,
# groups and width_per_group, kaiming_normal_ in fan_out mode, zero_init_residual on the last BN
# of each block, torch.flatten(x, 1), _forward_impl
def tv_resnet(m, state=None):
    torch, nn = m.torch, m.nn
    Tensor = torch.Tensor

    def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                         groups=groups, bias=False, dilation=dilation)

    def conv1x1(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)

    class BasicBlock(nn.Module):
        expansion: int = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                     dilation=1, norm_layer=None):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            if groups != 1 or base_width != 64:
                raise ValueError("BasicBlock only supports groups=1 and base_width=64")
            self.conv1 = conv3x3(inplanes, planes, stride)
            self.bn1 = norm_layer(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = conv3x3(planes, planes)
            self.bn2 = norm_layer(planes)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x: Tensor) -> Tensor:
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

    class Bottleneck(nn.Module):
        expansion: int = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                     dilation=1, norm_layer=None):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            width = int(planes * (base_width / 64.0)) * groups
            self.conv1 = conv1x1(inplanes, width)
            self.bn1 = norm_layer(width)
            self.conv2 = conv3x3(width, width, stride, groups, dilation)
            self.bn2 = norm_layer(width)
            self.conv3 = conv1x1(width, planes * self.expansion)
            self.bn3 = norm_layer(planes * self.expansion)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x: Tensor) -> Tensor:
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            return self.relu(out)

    class ResNet(nn.Module):
        def __init__(self, block, layers, num_classes=10, zero_init_residual=False, groups=1,
                     width_per_group=64, replace_stride_with_dilation=None, norm_layer=None, inplanes=8):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            self._norm_layer = norm_layer
            self.inplanes = inplanes
            self.dilation = 1
            if replace_stride_with_dilation is None:
                replace_stride_with_dilation = [False, False, False]
            self.groups = groups
            self.base_width = width_per_group
            # CIFAR stem: 3x3 stride 1, no max pooling
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = norm_layer(self.inplanes)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.Identity()
            self.layer1 = self._make_layer(block, inplanes, layers[0])
            self.layer2 = self._make_layer(block, 2 * inplanes, layers[1], stride=2,
                                           dilate=replace_stride_with_dilation[0])
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(2 * inplanes * block.expansion, num_classes)
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(mod, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.constant_(mod.weight, 1)
                    nn.init.constant_(mod.bias, 0)
            if zero_init_residual:
                for mod in self.modules():
                    if isinstance(mod, Bottleneck) and mod.bn3.weight is not None:
                        nn.init.constant_(mod.bn3.weight, 0)
                    elif isinstance(mod, BasicBlock) and mod.bn2.weight is not None:
                        nn.init.constant_(mod.bn2.weight, 0)

        def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
            norm_layer = self._norm_layer
            downsample = None
            previous_dilation = self.dilation
            if dilate:
                self.dilation *= stride
                stride = 1
            if stride != 1 or self.inplanes != planes * block.expansion:
                downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                           norm_layer(planes * block.expansion))
            layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                            previous_dilation, norm_layer)]
            self.inplanes = planes * block.expansion
            for _ in range(1, blocks):
                layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                    dilation=self.dilation, norm_layer=norm_layer))
            return nn.Sequential(*layers)

        def _forward_impl(self, x: Tensor) -> Tensor:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer2(self.layer1(x))
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            return self.fc(x)

        def forward(self, x: Tensor) -> Tensor:
            return self._forward_impl(x)

    basic = ResNet(BasicBlock, [1, 1], zero_init_residual=True)
    assert all(float(b.bn2.weight.abs().sum()) == 0 for b in basic.modules() if isinstance(b, BasicBlock))
    # ResNeXt-style bottlenecks with GroupNorm through norm_layer=partial(...), dilation in layer2
    basic.fc = nn.Linear(basic.fc.in_features, 3 * 8 * 8)  # a new head, as fine-tuning does
    model = nn.Sequential(basic, ResNet(Bottleneck, [1, 1], groups=2, width_per_group=32, inplanes=4,
                                        norm_layer=partial(nn.GroupNorm, 2), replace_stride_with_dilation=[True]))
    model.insert(1, nn.Unflatten(1, (3, 8, 8)))
    return train(m, model, state)


def test_tv_resnet():
    compare(tv_resnet)


# (b) torchvision's densenet.py: _DenseLayer with forward's typed overloads, torch.jit.unused on the
# checkpointed bottleneck (torch.utils.checkpoint, use_reentrant=False) behind torch.jit.is_scripting,
# _DenseBlock as a ModuleDict subclass iterating self.items(), _Transition as a Sequential subclass,
# features grown by add_module on an OrderedDict Sequential
def tv_densenet(m, state=None, memory_efficient=True):
    torch, nn, F = m.torch, m.nn, m.F
    cp = importlib.import_module(torch.__name__ + ".utils.checkpoint")
    Tensor = torch.Tensor

    class _DenseLayer(nn.Module):
        def __init__(self, num_input_features, growth_rate, bn_size, drop_rate, memory_efficient=False):
            super().__init__()
            self.norm1 = nn.BatchNorm2d(num_input_features)
            self.relu1 = nn.ReLU(inplace=True)
            self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
            self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
            self.relu2 = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
            self.drop_rate = float(drop_rate)
            self.memory_efficient = memory_efficient

        def bn_function(self, inputs: List[Tensor]) -> Tensor:
            concated_features = torch.cat(inputs, 1)
            bottleneck_output = self.conv1(self.relu1(self.norm1(concated_features)))
            return bottleneck_output

        def any_requires_grad(self, input: List[Tensor]) -> bool:
            for tensor in input:
                if tensor.requires_grad:
                    return True
            return False

        @torch.jit.unused
        def call_checkpoint_bottleneck(self, input: List[Tensor]) -> Tensor:
            def closure(*inputs):
                return self.bn_function(inputs)

            return cp.checkpoint(closure, *input, use_reentrant=False)

        @torch.jit._overload_method  # noqa: F811
        def forward(self, input: List[Tensor]) -> Tensor:
            pass

        @torch.jit._overload_method  # noqa: F811
        def forward(self, input: Tensor) -> Tensor:
            pass

        def forward(self, input: Tensor) -> Tensor:  # noqa: F811
            if isinstance(input, Tensor):
                prev_features = [input]
            else:
                prev_features = input
            if self.memory_efficient and self.any_requires_grad(prev_features):
                if torch.jit.is_scripting():
                    raise Exception("Memory Efficient not supported in JIT")
                bottleneck_output = self.call_checkpoint_bottleneck(prev_features)
            else:
                bottleneck_output = self.bn_function(prev_features)
            new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
            if self.drop_rate > 0:
                new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
            return new_features

    class _DenseBlock(nn.ModuleDict):
        _version = 2

        def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate, memory_efficient=False):
            super().__init__()
            for i in range(num_layers):
                layer = _DenseLayer(num_input_features + i * growth_rate, growth_rate=growth_rate, bn_size=bn_size,
                                    drop_rate=drop_rate, memory_efficient=memory_efficient)
                self.add_module("denselayer%d" % (i + 1), layer)

        def forward(self, init_features: Tensor) -> Tensor:
            features = [init_features]
            for name, layer in self.items():
                new_features = layer(features)
                features.append(new_features)
            return torch.cat(features, 1)

    class _Transition(nn.Sequential):
        def __init__(self, num_input_features, num_output_features):
            super().__init__()
            self.norm = nn.BatchNorm2d(num_input_features)
            self.relu = nn.ReLU(inplace=True)
            self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
            self.pool = nn.AvgPool2d(kernel_size=2, stride=2)

    class DenseNet(nn.Module):
        def __init__(self, growth_rate=4, block_config=(2, 1), num_init_features=8, bn_size=2, drop_rate=0,
                     num_classes=10, memory_efficient=False):
            super().__init__()
            self.features = nn.Sequential(OrderedDict([
                ("conv0", nn.Conv2d(3, num_init_features, kernel_size=3, stride=1, padding=1, bias=False)),
                ("norm0", nn.BatchNorm2d(num_init_features)),
                ("relu0", nn.ReLU(inplace=True)),
                ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))]))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                block = _DenseBlock(num_layers=num_layers, num_input_features=num_features, bn_size=bn_size,
                                    growth_rate=growth_rate, drop_rate=drop_rate, memory_efficient=memory_efficient)
                self.features.add_module("denseblock%d" % (i + 1), block)
                num_features = num_features + num_layers * growth_rate
                if i != len(block_config) - 1:
                    trans = _Transition(num_input_features=num_features, num_output_features=num_features // 2)
                    self.features.add_module("transition%d" % (i + 1), trans)
                    num_features = num_features // 2
            self.features.add_module("norm5", nn.BatchNorm2d(num_features))
            self.classifier = nn.Linear(num_features, num_classes)
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    nn.init.kaiming_normal_(mod.weight)
                elif isinstance(mod, nn.BatchNorm2d):
                    nn.init.constant_(mod.weight, 1)
                    nn.init.constant_(mod.bias, 0)
                elif isinstance(mod, nn.Linear):
                    nn.init.constant_(mod.bias, 0)

        def forward(self, x: Tensor) -> Tensor:
            features = self.features(x)
            out = F.relu(features, inplace=True)
            out = F.adaptive_avg_pool2d(out, (1, 1))
            out = torch.flatten(out, 1)
            out = self.classifier(out)
            return out

    model = DenseNet(memory_efficient=memory_efficient)
    assert list(model.features.denseblock1.keys()) == ["denselayer1", "denselayer2"]
    init, losses = train(m, model, state, steps=2)
    # torch's checkpoint runs the bottleneck again in backward, so its BatchNorms update their running
    # statistics twice per step; tnet's runs it once: the eval-mode output differs, the steps agree
    return init, losses[:2]


def test_tv_densenet():
    compare(tv_densenet)


# (c) torchvision's googlenet.py: BasicConv2d (BatchNorm eps=0.001), Inception branches joined by
# torch.cat, InceptionAux (adaptive_avg_pool2d to 4x4, F.dropout(training=)), transform_input from
# torch.unsqueeze(x[:, 0], 1), trunc_normal_(mean, std, a, b) init, ceil_mode max pooling, a
# GoogLeNetOutputs namedtuple in training and eager_outputs under torch.jit.unused, the aux losses
# weighted 0.3 as torchvision's reference training script does
def tv_googlenet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Tensor = torch.Tensor
    GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])

    class BasicConv2d(nn.Module):
        def __init__(self, in_channels, out_channels, **kwargs):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
            self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

        def forward(self, x: Tensor) -> Tensor:
            x = self.conv(x)
            x = self.bn(x)
            return F.relu(x, inplace=True)

    class Inception(nn.Module):
        def __init__(self, in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj, conv_block=None):
            super().__init__()
            if conv_block is None:
                conv_block = BasicConv2d
            self.branch1 = conv_block(in_channels, ch1x1, kernel_size=1)
            self.branch2 = nn.Sequential(conv_block(in_channels, ch3x3red, kernel_size=1),
                                         conv_block(ch3x3red, ch3x3, kernel_size=3, padding=1))
            self.branch3 = nn.Sequential(conv_block(in_channels, ch5x5red, kernel_size=1),
                                         # torchvision's known quirk: a 3x3 where the paper has 5x5
                                         conv_block(ch5x5red, ch5x5, kernel_size=3, padding=1))
            self.branch4 = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
                                         conv_block(in_channels, pool_proj, kernel_size=1))

        def _forward(self, x: Tensor) -> List[Tensor]:
            return [self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)]

        def forward(self, x: Tensor) -> Tensor:
            outputs = self._forward(x)
            return torch.cat(outputs, 1)

    class InceptionAux(nn.Module):
        def __init__(self, in_channels, num_classes, conv_block=None, dropout=0.7):
            super().__init__()
            if conv_block is None:
                conv_block = BasicConv2d
            self.conv = conv_block(in_channels, 4, kernel_size=1)
            self.fc1 = nn.Linear(4 * 4 * 4, 16)
            self.fc2 = nn.Linear(16, num_classes)
            self.dropout = nn.Dropout(p=dropout)

        def forward(self, x: Tensor) -> Tensor:
            x = F.adaptive_avg_pool2d(x, (4, 4))
            x = self.conv(x)
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x), inplace=True)
            x = self.dropout(x)
            return self.fc2(x)

    class GoogLeNet(nn.Module):
        __constants__ = ["aux_logits", "transform_input"]

        def __init__(self, num_classes=10, aux_logits=True, transform_input=True, init_weights=None,
                     blocks=None, dropout=0.2, dropout_aux=0.7):
            super().__init__()
            if blocks is None:
                blocks = [BasicConv2d, Inception, InceptionAux]
            conv_block, inception_block, inception_aux_block = blocks
            self.aux_logits = aux_logits
            self.transform_input = transform_input
            self.conv1 = conv_block(3, 8, kernel_size=3, stride=1, padding=1)
            self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
            self.inception3a = inception_block(8, 4, 4, 4, 2, 2, 2)
            self.inception4a = inception_block(12, 4, 4, 4, 2, 2, 2)
            self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
            self.inception5a = inception_block(12, 4, 4, 6, 2, 2, 4)
            if aux_logits:
                self.aux1 = inception_aux_block(12, num_classes, dropout=dropout_aux)
                self.aux2 = inception_aux_block(12, num_classes, dropout=dropout_aux)
            else:
                self.aux1 = None
                self.aux2 = None
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.dropout = nn.Dropout(p=dropout)
            self.fc = nn.Linear(16, num_classes)
            if init_weights:
                for mod in self.modules():
                    if isinstance(mod, (nn.Conv2d, nn.Linear)):
                        torch.nn.init.trunc_normal_(mod.weight, mean=0.0, std=0.01, a=-2, b=2)
                    elif isinstance(mod, nn.BatchNorm2d):
                        nn.init.constant_(mod.weight, 1)
                        nn.init.constant_(mod.bias, 0)

        def _transform_input(self, x: Tensor) -> Tensor:
            if self.transform_input:
                x_ch0 = torch.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
                x_ch1 = torch.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
                x_ch2 = torch.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
                x = torch.cat((x_ch0, x_ch1, x_ch2), 1)
            return x

        def _forward(self, x: Tensor):
            x = self.maxpool1(self.conv1(x))
            x = self.inception3a(x)
            aux1: Optional[Tensor] = None
            if self.aux1 is not None:
                if self.training:
                    aux1 = self.aux1(x)
            x = self.inception4a(x)
            aux2 = torch.jit.annotate(Optional[Tensor], None)
            if self.aux2 is not None:
                if self.training:
                    aux2 = self.aux2(x)
            x = self.maxpool4(x)
            x = self.inception5a(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            x = self.dropout(x)
            x = self.fc(x)
            return x, aux2, aux1

        @torch.jit.unused
        def eager_outputs(self, x: Tensor, aux2: Optional[Tensor], aux1: Optional[Tensor]):
            if self.training and self.aux_logits:
                return GoogLeNetOutputs(x, aux2, aux1)
            else:
                return x

        def forward(self, x: Tensor):
            x = self._transform_input(x)
            x, aux2, aux1 = self._forward(x)
            aux_defined = self.training and self.aux_logits
            if torch.jit.is_scripting():
                return GoogLeNetOutputs(x, aux2, aux1)
            else:
                return self.eager_outputs(x, aux2, aux1)

    model = GoogLeNet(init_weights=True, dropout=0.0, dropout_aux=0.0)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    losses = []
    for x, y in batches(0, 1, (2, 3, 8, 8)):
        x, y = torch.tensor(x), torch.tensor(y)
        output = model(x)
        assert isinstance(output, GoogLeNetOutputs)
        loss = criterion(output.logits, y) + 0.3 * criterion(output.aux_logits1, y) + \
            0.3 * criterion(output.aux_logits2, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.inference_mode():
        losses.append(model(torch.tensor(batches(1, 1, (2, 3, 8, 8))[0][0])).sum().item())
    return init, losses


def test_tv_googlenet():
    compare(tv_googlenet)
