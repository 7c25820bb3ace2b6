"""torchvision's model definitions as people copy them into CIFAR repositories (ResNet with
norm_layer and zero_init_residual, DenseNet's memory-efficient checkpointed layers, GoogLeNet's
aux heads and namedtuple outputs, ShuffleNetV2, SqueezeNet, RegNet, ViT with nn.MultiheadAttention),
timm's DeiT distillation token, and the older script styles (Variable, .data[0], DataParallel,
bearpaw's AverageMeter and top-k accuracy, lr set by hand in param_groups, torch.save of a dict with
the epoch), ported to tnet by their imports alone, as in test_ported_scripts.py; widths are tiny
and runs 1-2 steps."""
import importlib
import warnings
import math
from collections import OrderedDict, namedtuple
from functools import partial
from typing import Dict, List, Optional

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
                                           dilate=replace_stride_with_dilation[0]) if len(layers) > 1 else nn.Identity()
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(len(layers) * inplanes * block.expansion, num_classes)
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

    basic = ResNet(BasicBlock, [1], zero_init_residual=True)
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

        # torchvision declares forward's two typed overloads (List[Tensor], Tensor) above it with
        # @torch.jit._overload_method; pyflakes takes those stubs for redefinitions, so one stands here
        @torch.jit._overload_method
        def forward_overload(self, input: List[Tensor]) -> Tensor:
            pass

        def forward(self, input: Tensor) -> Tensor:
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


# (d) torchvision's mobilenetv3.py over torchvision.ops' pieces: Conv2dNormActivation (a Sequential
# subclass built from layer classes, inplace passed as a keyword), SqueezeExcitation taking its
# activations as classes (partial(..., scale_activation=nn.Hardsigmoid)), _make_divisible,
# InvertedResidualConfig, partial(nn.BatchNorm2d, eps=0.001, momentum=0.01), `result += input`;
# and EfficientNet's StochasticDepth (torch.empty(size).bernoulli_(survival_rate), noise.div_)
def tv_mobilenetv3(m, state=None):
    torch, nn = m.torch, m.nn
    Tensor = torch.Tensor

    def _make_divisible(v, divisor, min_value=None):
        if min_value is None:
            min_value = divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        if new_v < 0.9 * v:  # make sure that round down does not go down by more than 10%
            new_v += divisor
        return new_v

    class Conv2dNormActivation(torch.nn.Sequential):
        def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                     norm_layer=torch.nn.BatchNorm2d, activation_layer=torch.nn.ReLU, dilation=1, inplace=True,
                     bias=None, conv_layer=torch.nn.Conv2d):
            if padding is None:
                padding = (kernel_size - 1) // 2 * dilation
            if bias is None:
                bias = norm_layer is None
            layers = [conv_layer(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                                 groups=groups, bias=bias)]
            if norm_layer is not None:
                layers.append(norm_layer(out_channels))
            if activation_layer is not None:
                params = {} if inplace is None else {"inplace": inplace}
                layers.append(activation_layer(**params))
            super().__init__(*layers)
            self.out_channels = out_channels

    class SqueezeExcitation(torch.nn.Module):
        def __init__(self, input_channels, squeeze_channels, activation=torch.nn.ReLU,
                     scale_activation=torch.nn.Sigmoid):
            super().__init__()
            self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
            self.fc1 = torch.nn.Conv2d(input_channels, squeeze_channels, 1)
            self.fc2 = torch.nn.Conv2d(squeeze_channels, input_channels, 1)
            self.activation = activation()
            self.scale_activation = scale_activation()

        def _scale(self, input: Tensor) -> Tensor:
            scale = self.avgpool(input)
            scale = self.fc1(scale)
            scale = self.activation(scale)
            scale = self.fc2(scale)
            return self.scale_activation(scale)

        def forward(self, input: Tensor) -> Tensor:
            scale = self._scale(input)
            return scale * input

    def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
        if p < 0.0 or p > 1.0:
            raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
        if mode not in ["batch", "row"]:
            raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
        if not training or p == 0.0:
            return input
        survival_rate = 1.0 - p
        if mode == "row":
            size = [input.shape[0]] + [1] * (input.ndim - 1)
        else:
            size = [1] * input.ndim
        noise = torch.empty(size, dtype=input.dtype, device=input.device)
        noise = noise.bernoulli_(survival_rate)
        if survival_rate > 0.0:
            noise.div_(survival_rate)
        return input * noise

    class StochasticDepth(nn.Module):
        def __init__(self, p: float, mode: str) -> None:
            super().__init__()
            self.p = p
            self.mode = mode

        def forward(self, input: Tensor) -> Tensor:
            return stochastic_depth(input, self.p, self.mode, self.training)

    class InvertedResidualConfig:
        def __init__(self, input_channels, kernel, expanded_channels, out_channels, use_se, activation, stride,
                     dilation, width_mult):
            self.input_channels = self.adjust_channels(input_channels, width_mult)
            self.kernel = kernel
            self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
            self.out_channels = self.adjust_channels(out_channels, width_mult)
            self.use_se = use_se
            self.use_hs = activation == "HS"
            self.stride = stride
            self.dilation = dilation

        @staticmethod
        def adjust_channels(channels: int, width_mult: float):
            return _make_divisible(channels * width_mult, 8)

    class InvertedResidual(nn.Module):
        def __init__(self, cnf, norm_layer, se_layer=partial(SqueezeExcitation, scale_activation=nn.Hardsigmoid),
                     stochastic_depth_prob=0.0):
            super().__init__()
            if not (1 <= cnf.stride <= 2):
                raise ValueError("illegal stride value")
            self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
            layers: List[nn.Module] = []
            activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
            if cnf.expanded_channels != cnf.input_channels:
                layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, kernel_size=1,
                                                   norm_layer=norm_layer, activation_layer=activation_layer))
            stride = 1 if cnf.dilation > 1 else cnf.stride
            layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels, kernel_size=cnf.kernel,
                                               stride=stride, dilation=cnf.dilation, groups=cnf.expanded_channels,
                                               norm_layer=norm_layer, activation_layer=activation_layer))
            if cnf.use_se:
                squeeze_channels = _make_divisible(cnf.expanded_channels // 4, 8)
                layers.append(se_layer(cnf.expanded_channels, squeeze_channels))
            layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=None))
            self.block = nn.Sequential(*layers)
            self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
            self.out_channels = cnf.out_channels
            self._is_cn = cnf.stride > 1

        def forward(self, input: Tensor) -> Tensor:
            result = self.block(input)
            if self.use_res_connect:
                result = self.stochastic_depth(result)
                result += input
            return result

    class MobileNetV3(nn.Module):
        def __init__(self, inverted_residual_setting, last_channel, num_classes=10, block=None, norm_layer=None,
                     dropout=0.2, stochastic_depth_prob=0.0):
            super().__init__()
            if block is None:
                block = InvertedResidual
            if norm_layer is None:
                norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
            layers: List[nn.Module] = []
            firstconv_output_channels = inverted_residual_setting[0].input_channels
            layers.append(Conv2dNormActivation(3, firstconv_output_channels, kernel_size=3, stride=2,
                                               norm_layer=norm_layer, activation_layer=nn.Hardswish))
            for cnf in inverted_residual_setting:
                layers.append(block(cnf, norm_layer, stochastic_depth_prob=stochastic_depth_prob))
            lastconv_input_channels = inverted_residual_setting[-1].out_channels
            lastconv_output_channels = 2 * lastconv_input_channels
            layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=nn.Hardswish))
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(
                nn.Linear(lastconv_output_channels, last_channel),
                nn.Hardswish(inplace=True),
                nn.Dropout(p=dropout, inplace=True),
                nn.Linear(last_channel, num_classes))
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    nn.init.kaiming_normal_(mod.weight, mode="fan_out")
                    if mod.bias is not None:
                        nn.init.zeros_(mod.bias)
                elif isinstance(mod, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.ones_(mod.weight)
                    nn.init.zeros_(mod.bias)
                elif isinstance(mod, nn.Linear):
                    nn.init.normal_(mod.weight, 0, 0.01)
                    nn.init.zeros_(mod.bias)

        def forward(self, x: Tensor) -> Tensor:
            x = self.features(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            return self.classifier(x)

    bneck_conf = partial(InvertedResidualConfig, width_mult=0.5)
    setting = [bneck_conf(16, 3, 16, 16, True, "RE", 2, 1), bneck_conf(16, 3, 32, 16, True, "HS", 1, 1)]
    model = MobileNetV3(setting, last_channel=16, dropout=0.0)
    assert [type(mod).__name__ for mod in model.features[1].block] == ["Conv2dNormActivation", "SqueezeExcitation",
                                                                       "Conv2dNormActivation"]
    init, losses = train(m, model, state, lr=0.1)
    if torch.__name__ == "tnet":  # the noise: every row kept whole or dropped, the kept ones scaled
        depth = StochasticDepth(0.5, "row")
        x = torch.ones(64, 2, 3)
        y = depth(x)
        assert set(y.sum((1, 2)).tolist()) <= {0.0, 12.0} and 0 < y.sum().item() < 64 * 12
        assert depth.eval()(x) is x
        noisy = MobileNetV3(setting, last_channel=16, stochastic_depth_prob=0.5)
        noisy(torch.tensor(batches(2, 1, (2, 3, 8, 8))[0][0])).sum().backward()
    return init, losses


def test_tv_mobilenetv3():
    compare(tv_mobilenetv3)


# (e) torchvision's shufflenetv2.py (channel_shuffle by view, torch.transpose and contiguous; x.chunk;
# stages made by setattr under annotated names; x.mean([2, 3])) and regnet.py (BlockParams' widths
# computed with torch.arange, log, round, pow and diff, then .int().tolist(); BottleneckTransform as a
# Sequential of an OrderedDict; AnyStage's blocks named "block1-0" by add_module; fan-out normal init)
def tv_shufflenet_regnet(m, state=None):
    torch, nn = m.torch, m.nn
    Tensor = torch.Tensor

    def channel_shuffle(x: Tensor, groups: int) -> Tensor:
        batchsize, num_channels, height, width = x.size()
        channels_per_group = num_channels // groups
        x = x.view(batchsize, groups, channels_per_group, height, width)
        x = torch.transpose(x, 1, 2).contiguous()
        x = x.view(batchsize, num_channels, height, width)
        return x

    class InvertedResidual(nn.Module):
        def __init__(self, inp: int, oup: int, stride: int) -> None:
            super().__init__()
            if not (1 <= stride <= 3):
                raise ValueError("illegal stride value")
            self.stride = stride
            branch_features = oup // 2
            if (self.stride == 1) and (inp != branch_features << 1):
                raise ValueError(f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values.")
            if self.stride > 1:
                self.branch1 = nn.Sequential(
                    self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1),
                    nn.BatchNorm2d(inp),
                    nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                    nn.BatchNorm2d(branch_features),
                    nn.ReLU(inplace=True))
            else:
                self.branch1 = nn.Sequential()
            self.branch2 = nn.Sequential(
                nn.Conv2d(inp if (self.stride > 1) else branch_features, branch_features, kernel_size=1, stride=1,
                          padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
                self.depthwise_conv(branch_features, branch_features, kernel_size=3, stride=self.stride, padding=1),
                nn.BatchNorm2d(branch_features),
                nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True))

        @staticmethod
        def depthwise_conv(i, o, kernel_size, stride=1, padding=0, bias=False):
            return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

        def forward(self, x: Tensor) -> Tensor:
            if self.stride == 1:
                x1, x2 = x.chunk(2, dim=1)
                out = torch.cat((x1, self.branch2(x2)), dim=1)
            else:
                out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
            out = channel_shuffle(out, 2)
            return out

    class ShuffleNetV2(nn.Module):
        def __init__(self, stages_repeats, stages_out_channels, num_classes=10):
            super().__init__()
            self._stage_out_channels = stages_out_channels
            input_channels = 3
            output_channels = self._stage_out_channels[0]
            self.conv1 = nn.Sequential(nn.Conv2d(input_channels, output_channels, 3, 1, 1, bias=False),
                                       nn.BatchNorm2d(output_channels), nn.ReLU(inplace=True))
            input_channels = output_channels
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.stage2: nn.Sequential
            self.stage3: nn.Sequential
            stage_names = [f"stage{i}" for i in [2, 3]]
            for name, repeats, output_channels in zip(stage_names, stages_repeats, self._stage_out_channels[1:]):
                seq = [InvertedResidual(input_channels, output_channels, 2)]
                for i in range(repeats - 1):
                    seq.append(InvertedResidual(output_channels, output_channels, 1))
                setattr(self, name, nn.Sequential(*seq))
                input_channels = output_channels
            output_channels = self._stage_out_channels[-1]
            self.conv5 = nn.Sequential(nn.Conv2d(input_channels, output_channels, 1, 1, 0, bias=False),
                                       nn.BatchNorm2d(output_channels), nn.ReLU(inplace=True))
            self.fc = nn.Linear(output_channels, num_classes)

        def forward(self, x: Tensor) -> Tensor:
            x = self.maxpool(self.conv1(x))
            x = self.stage3(self.stage2(x))
            x = self.conv5(x)
            x = x.mean([2, 3])  # globalpool
            return self.fc(x)

    def block_params(depth, w_0, w_a, w_m, group_width):
        QUANT = 8
        widths_cont = torch.arange(depth) * w_a + w_0
        block_capacity = torch.round(torch.log(widths_cont / w_0) / math.log(w_m))
        block_widths = (torch.round(torch.divide(w_0 * torch.pow(w_m, block_capacity), QUANT)) * QUANT).int().tolist()
        split_helper = zip(block_widths + [0], [0] + block_widths, block_widths + [0], [0] + block_widths)
        splits = [w != wp or r != rp for w, wp, r, rp in split_helper]
        stage_widths = [w for w, t in zip(block_widths, splits[:-1]) if t]
        stage_depths = torch.diff(torch.tensor([d for d, t in enumerate(splits) if t])).int().tolist()
        return stage_widths, stage_depths, [group_width] * len(stage_widths)

    class Conv2dNormActivation(nn.Sequential):
        def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1, activation_layer=nn.ReLU):
            layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2, groups=groups,
                                bias=False), nn.BatchNorm2d(out_channels)]
            if activation_layer is not None:
                layers.append(activation_layer(inplace=True))
            super().__init__(*layers)

    class BottleneckTransform(nn.Sequential):
        def __init__(self, width_in, width_out, stride, group_width, bottleneck_multiplier=1.0):
            layers: Dict[str, nn.Module] = OrderedDict()
            w_b = int(round(width_out * bottleneck_multiplier))
            g = w_b // group_width
            layers["a"] = Conv2dNormActivation(width_in, w_b, kernel_size=1)
            layers["b"] = Conv2dNormActivation(w_b, w_b, kernel_size=3, stride=stride, groups=g)
            layers["c"] = Conv2dNormActivation(w_b, width_out, kernel_size=1, activation_layer=None)
            super().__init__(layers)

    class ResBottleneckBlock(nn.Module):
        def __init__(self, width_in, width_out, stride, group_width):
            super().__init__()
            self.proj = None
            should_proj = (width_in != width_out) or (stride != 1)
            if should_proj:
                self.proj = Conv2dNormActivation(width_in, width_out, kernel_size=1, stride=stride,
                                                 activation_layer=None)
            self.f = BottleneckTransform(width_in, width_out, stride, group_width)
            self.activation = nn.ReLU(inplace=True)

        def forward(self, x: Tensor) -> Tensor:
            if self.proj is not None:
                x = self.proj(x) + self.f(x)
            else:
                x = x + self.f(x)
            return self.activation(x)

    class AnyStage(nn.Sequential):
        def __init__(self, width_in, width_out, stride, depth, group_width, stage_index=0):
            super().__init__()
            for i in range(depth):
                block = ResBottleneckBlock(width_in if i == 0 else width_out, width_out, stride if i == 0 else 1,
                                           group_width)
                self.add_module(f"block{stage_index}-{i}", block)

    class RegNet(nn.Module):
        def __init__(self, stem_width=8, num_classes=10):
            super().__init__()
            self.stem = Conv2dNormActivation(3, stem_width, kernel_size=3, stride=2)
            current_width = stem_width
            blocks = []
            widths, depths, group_widths = block_params(depth=3, w_0=8, w_a=4.0, w_m=2.0, group_width=4)
            for i, (width_out, stride, depth, group_width) in enumerate(zip(widths, [2] * len(widths), depths,
                                                                            group_widths)):
                blocks.append((f"block{i + 1}", AnyStage(current_width, width_out, stride, depth, group_width,
                                                          stage_index=i + 1)))
                current_width = width_out
            self.trunk_output = nn.Sequential(OrderedDict(blocks))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(in_features=current_width, out_features=num_classes)
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    fan_out = mod.kernel_size[0] * mod.kernel_size[1] * mod.out_channels
                    nn.init.normal_(mod.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
                elif isinstance(mod, nn.BatchNorm2d):
                    nn.init.ones_(mod.weight)
                    nn.init.zeros_(mod.bias)
                elif isinstance(mod, nn.Linear):
                    nn.init.normal_(mod.weight, mean=0.0, std=0.01)
                    nn.init.zeros_(mod.bias)

        def forward(self, x: Tensor) -> Tensor:
            x = self.trunk_output(self.stem(x))
            x = self.avgpool(x)
            x = x.flatten(start_dim=1)
            return self.fc(x)

    assert block_params(depth=6, w_0=8, w_a=6.0, w_m=2.0, group_width=4)[:2] == ([8, 16, 32], [1, 2, 3])
    regnet = RegNet()
    assert "trunk_output.block1.block1-0.f.b.0.weight" in regnet.state_dict()
    model = nn.Sequential(ShuffleNetV2([2, 1], [8, 8, 16, 16], num_classes=3 * 8 * 8), nn.Unflatten(1, (3, 8, 8)),
                          regnet)
    return train(m, model, state)


def test_tv_shufflenet_regnet():
    compare(tv_shufflenet_regnet)


# (f) torchvision's vision_transformer.py: MLP as a Sequential subclass, MLPBlock renaming a legacy
# checkpoint's keys in _load_from_state_dict, nn.MultiheadAttention(batch_first=True) called with
# need_weights=False, torch._assert on the input's shape, pos_embedding from torch.empty().normal_,
# trunc_normal_ by fan-in, a zero-initialised head behind a pre_logits Linear and Tanh
def tv_vit(m, state=None):
    torch, nn = m.torch, m.nn
    Tensor = torch.Tensor

    class MLP(torch.nn.Sequential):
        def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=torch.nn.ReLU, inplace=None,
                     bias=True, dropout=0.0):
            params = {} if inplace is None else {"inplace": inplace}
            layers = []
            in_dim = in_channels
            for hidden_dim in hidden_channels[:-1]:
                layers.append(torch.nn.Linear(in_dim, hidden_dim, bias=bias))
                if norm_layer is not None:
                    layers.append(norm_layer(hidden_dim))
                layers.append(activation_layer(**params))
                layers.append(torch.nn.Dropout(dropout, **params))
                in_dim = hidden_dim
            layers.append(torch.nn.Linear(in_dim, hidden_channels[-1], bias=bias))
            layers.append(torch.nn.Dropout(dropout, **params))
            super().__init__(*layers)

    class MLPBlock(MLP):
        _version = 2

        def __init__(self, in_dim: int, mlp_dim: int, dropout: float):
            super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
            for mod in self.modules():
                if isinstance(mod, nn.Linear):
                    nn.init.xavier_uniform_(mod.weight)
                    if mod.bias is not None:
                        nn.init.normal_(mod.bias, std=1e-6)

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                  error_msgs):
            version = local_metadata.get("version", None)
            if version is None or version < 2:
                # Replacing legacy MLPBlock with MLP. See https://github.com/pytorch/vision/pull/6053
                for i in range(2):
                    for type in ["weight", "bias"]:
                        old_key = f"{prefix}linear_{i+1}.{type}"
                        new_key = f"{prefix}{3*i}.{type}"
                        if old_key in state_dict:
                            state_dict[new_key] = state_dict.pop(old_key)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                          error_msgs)

    class EncoderBlock(nn.Module):
        def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                     norm_layer=partial(nn.LayerNorm, eps=1e-6)):
            super().__init__()
            self.num_heads = num_heads
            self.ln_1 = norm_layer(hidden_dim)
            self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout,
                                                        batch_first=True)
            self.dropout = nn.Dropout(dropout)
            self.ln_2 = norm_layer(hidden_dim)
            self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

        def forward(self, input: Tensor):
            torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
            x = self.ln_1(input)
            x, _ = self.self_attention(x, x, x, need_weights=False)
            x = self.dropout(x)
            x = x + input
            y = self.ln_2(x)
            y = self.mlp(y)
            return x + y

    class Encoder(nn.Module):
        def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                     norm_layer=partial(nn.LayerNorm, eps=1e-6)):
            super().__init__()
            self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, hidden_dim).normal_(std=0.02))  # from BERT
            self.dropout = nn.Dropout(dropout)
            layers: OrderedDict[str, nn.Module] = OrderedDict()
            for i in range(num_layers):
                layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                                                            norm_layer)
            self.layers = nn.Sequential(layers)
            self.ln = norm_layer(hidden_dim)

        def forward(self, input: Tensor):
            torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
            input = input + self.pos_embedding
            return self.ln(self.layers(self.dropout(input)))

    class VisionTransformer(nn.Module):
        def __init__(self, image_size=8, patch_size=4, num_layers=1, num_heads=2, hidden_dim=8, mlp_dim=16,
                     dropout=0.0, attention_dropout=0.0, num_classes=10, representation_size=8,
                     norm_layer=partial(nn.LayerNorm, eps=1e-6)):
            super().__init__()
            torch._assert(image_size % patch_size == 0, "Input shape indivisible by patch size!")
            self.image_size = image_size
            self.patch_size = patch_size
            self.hidden_dim = hidden_dim
            self.conv_proj = nn.Conv2d(in_channels=3, out_channels=hidden_dim, kernel_size=patch_size,
                                       stride=patch_size)
            seq_length = (image_size // patch_size) ** 2
            self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
            seq_length += 1
            self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout,
                                   attention_dropout, norm_layer)
            self.seq_length = seq_length
            heads_layers: OrderedDict[str, nn.Module] = OrderedDict()
            heads_layers["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads_layers["act"] = nn.Tanh()
            heads_layers["head"] = nn.Linear(representation_size, num_classes)
            self.heads = nn.Sequential(heads_layers)
            fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            if self.conv_proj.bias is not None:
                nn.init.zeros_(self.conv_proj.bias)
            if hasattr(self.heads, "pre_logits") and isinstance(self.heads.pre_logits, nn.Linear):
                fan_in = self.heads.pre_logits.in_features
                nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / fan_in))
                nn.init.zeros_(self.heads.pre_logits.bias)
            if isinstance(self.heads.head, nn.Linear):
                nn.init.zeros_(self.heads.head.weight)
                nn.init.zeros_(self.heads.head.bias)

        def _process_input(self, x: Tensor) -> Tensor:
            n, c, h, w = x.shape
            p = self.patch_size
            torch._assert(h == self.image_size, f"Wrong image height! Expected {self.image_size} but got {h}!")
            torch._assert(w == self.image_size, f"Wrong image width! Expected {self.image_size} but got {w}!")
            n_h = h // p
            n_w = w // p
            x = self.conv_proj(x)
            x = x.reshape(n, self.hidden_dim, n_h * n_w)
            x = x.permute(0, 2, 1)
            return x

        def forward(self, x: Tensor):
            x = self._process_input(x)
            n = x.shape[0]
            batch_class_token = self.class_token.expand(n, -1, -1)
            x = torch.cat([batch_class_token, x], dim=1)
            x = self.encoder(x)
            x = x[:, 0]
            return self.heads(x)

    model = VisionTransformer()
    init = load(m, model, state)
    try:
        model(torch.zeros(1, 3, 12, 12))
    except AssertionError as e:
        assert "Wrong image height! Expected 8 but got 12!" in str(e)
    else:
        raise AssertionError("torch._assert let a wrong size through")
    opt = m.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.3)
    losses = [step(m, model, opt, x, y) for x, y in batches(0, 2, (2, 3, 8, 8))]
    # a checkpoint from before torchvision renamed MLPBlock's layers: linear_1/linear_2, no version
    legacy = OrderedDict((k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."), v.clone() * 2)
                         for k, v in model.state_dict().items())
    model.load_state_dict(legacy)
    model.eval()
    with torch.no_grad():
        losses.append(model(torch.tensor(batches(1, 1, (2, 3, 8, 8))[0][0])).sum().item())
    return init, losses


def test_tv_vit():
    compare(tv_vit)


# (g) DARTS (quark0/darts, first-order search on CIFAR-10): MixedOp's softmax-weighted sum of candidate
# ops, Zero by x.mul(0.) on a strided slice, FactorizedReduce's x[:, :, 1:, 1:], avg pooling without
# the padding counted, architecture weights as Variables outside model.parameters() stepped by their
# own Adam, the old clip_grad_norm, drop_path in place (x.div_, x.mul_), the genotype read through
# .data.cpu().numpy(), a CosineAnnealingLR read by get_lr()
def darts(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Variable = torch.autograd.Variable
    # DARTS' list less max_pool_3x3 and sep_conv_3x3 (CPU time; dil_conv_3x3 has the same layers)
    PRIMITIVES = ['none', 'avg_pool_3x3', 'skip_connect', 'dil_conv_3x3']

    class ReLUConvBN(nn.Module):
        def __init__(self, C_in, C_out, kernel_size, stride, padding, affine=True):
            super(ReLUConvBN, self).__init__()
            self.op = nn.Sequential(nn.ReLU(inplace=False),
                                    nn.Conv2d(C_in, C_out, kernel_size, stride=stride, padding=padding, bias=False),
                                    nn.BatchNorm2d(C_out, affine=affine))

        def forward(self, x):
            return self.op(x)

    class DilConv(nn.Module):
        def __init__(self, C_in, C_out, kernel_size, stride, padding, dilation, affine=True):
            super(DilConv, self).__init__()
            self.op = nn.Sequential(
                nn.ReLU(inplace=False),
                nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                          groups=C_in, bias=False),
                nn.Conv2d(C_in, C_out, kernel_size=1, padding=0, bias=False),
                nn.BatchNorm2d(C_out, affine=affine))

        def forward(self, x):
            return self.op(x)

    class SepConv(nn.Module):
        def __init__(self, C_in, C_out, kernel_size, stride, padding, affine=True):
            super(SepConv, self).__init__()
            self.op = nn.Sequential(
                nn.ReLU(inplace=False),
                nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=stride, padding=padding, groups=C_in, bias=False),
                nn.Conv2d(C_in, C_in, kernel_size=1, padding=0, bias=False),
                nn.BatchNorm2d(C_in, affine=affine),
                nn.ReLU(inplace=False),
                nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=1, padding=padding, groups=C_in, bias=False),
                nn.Conv2d(C_in, C_out, kernel_size=1, padding=0, bias=False),
                nn.BatchNorm2d(C_out, affine=affine))

        def forward(self, x):
            return self.op(x)

    class Identity(nn.Module):
        def forward(self, x):
            return x

    class Zero(nn.Module):
        def __init__(self, stride):
            super(Zero, self).__init__()
            self.stride = stride

        def forward(self, x):
            if self.stride == 1:
                return x.mul(0.)
            return x[:, :, ::self.stride, ::self.stride].mul(0.)

    class FactorizedReduce(nn.Module):
        def __init__(self, C_in, C_out, affine=True):
            super(FactorizedReduce, self).__init__()
            assert C_out % 2 == 0
            self.relu = nn.ReLU(inplace=False)
            self.conv_1 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
            self.conv_2 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
            self.bn = nn.BatchNorm2d(C_out, affine=affine)

        def forward(self, x):
            x = self.relu(x)
            out = torch.cat([self.conv_1(x), self.conv_2(x[:, :, 1:, 1:])], dim=1)
            return self.bn(out)

    OPS = {
        'none': lambda C, stride, affine: Zero(stride),
        'avg_pool_3x3': lambda C, stride, affine: nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False),
        'max_pool_3x3': lambda C, stride, affine: nn.MaxPool2d(3, stride=stride, padding=1),
        'skip_connect': lambda C, stride, affine: Identity() if stride == 1 else FactorizedReduce(C, C, affine=affine),
        'sep_conv_3x3': lambda C, stride, affine: SepConv(C, C, 3, stride, 1, affine=affine),
        'dil_conv_3x3': lambda C, stride, affine: DilConv(C, C, 3, stride, 2, 2, affine=affine),
    }

    def drop_path(x, drop_prob):
        if drop_prob > 0.:
            keep_prob = 1. - drop_prob
            mask = Variable(torch.FloatTensor(x.size(0), 1, 1, 1).bernoulli_(keep_prob))
            x.div_(keep_prob)
            x.mul_(mask)
        return x

    class MixedOp(nn.Module):
        def __init__(self, C, stride):
            super(MixedOp, self).__init__()
            self._ops = nn.ModuleList()
            for primitive in PRIMITIVES:
                op = OPS[primitive](C, stride, False)
                if 'pool' in primitive:
                    op = nn.Sequential(op, nn.BatchNorm2d(C, affine=False))
                self._ops.append(op)

        def forward(self, x, weights):
            return sum(w * op(x) for w, op in zip(weights, self._ops))

    class Cell(nn.Module):
        def __init__(self, steps, multiplier, C_prev_prev, C_prev, C, reduction, reduction_prev):
            super(Cell, self).__init__()
            self.reduction = reduction
            if reduction_prev:
                self.preprocess0 = FactorizedReduce(C_prev_prev, C, affine=False)
            else:
                self.preprocess0 = ReLUConvBN(C_prev_prev, C, 1, 1, 0, affine=False)
            self.preprocess1 = ReLUConvBN(C_prev, C, 1, 1, 0, affine=False)
            self._steps = steps
            self._multiplier = multiplier
            self._ops = nn.ModuleList()
            for i in range(self._steps):
                for j in range(2 + i):
                    stride = 2 if reduction and j < 2 else 1
                    self._ops.append(MixedOp(C, stride))

        def forward(self, s0, s1, weights, drop_prob=0.):
            s0 = self.preprocess0(s0)
            s1 = self.preprocess1(s1)
            states = [s0, s1]
            offset = 0
            for i in range(self._steps):
                s = sum(drop_path(self._ops[offset + j](h, weights[offset + j]), drop_prob)
                        for j, h in enumerate(states))
                offset += len(states)
                states.append(s)
            return torch.cat(states[-self._multiplier:], dim=1)

    class Network(nn.Module):
        def __init__(self, C, num_classes, layers, criterion, steps=1, multiplier=1, stem_multiplier=2):
            super(Network, self).__init__()
            self._C, self._num_classes, self._layers = C, num_classes, layers
            self._criterion = criterion
            self._steps, self._multiplier = steps, multiplier
            self.drop_path_prob = 0.
            C_curr = stem_multiplier * C
            self.stem = nn.Sequential(nn.Conv2d(3, C_curr, 3, padding=1, bias=False), nn.BatchNorm2d(C_curr))
            C_prev_prev, C_prev, C_curr = C_curr, C_curr, C
            self.cells = nn.ModuleList()
            reduction_prev = False
            for i in range(layers):
                if i in [layers // 3, 2 * layers // 3]:
                    C_curr *= 2
                    reduction = True
                else:
                    reduction = False
                cell = Cell(steps, multiplier, C_prev_prev, C_prev, C_curr, reduction, reduction_prev)
                reduction_prev = reduction
                self.cells += [cell]
                C_prev_prev, C_prev = C_prev, multiplier * C_curr
            self.global_pooling = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Linear(C_prev, num_classes)
            self._initialize_alphas()

        def forward(self, input):
            s0 = s1 = self.stem(input)
            for i, cell in enumerate(self.cells):
                if cell.reduction:
                    weights = F.softmax(self.alphas_reduce, dim=-1)
                else:
                    weights = F.softmax(self.alphas_normal, dim=-1)
                s0, s1 = s1, cell(s0, s1, weights, self.drop_path_prob)
            out = self.global_pooling(s1)
            return self.classifier(out.view(out.size(0), -1))

        def _loss(self, input, target):
            logits = self(input)
            return self._criterion(logits, target)

        def _initialize_alphas(self):
            k = sum(1 for i in range(self._steps) for n in range(2 + i))
            num_ops = len(PRIMITIVES)
            self.alphas_normal = Variable(1e-3 * torch.randn(k, num_ops), requires_grad=True)
            self.alphas_reduce = Variable(1e-3 * torch.randn(k, num_ops), requires_grad=True)
            self._arch_parameters = [self.alphas_normal, self.alphas_reduce]

        def arch_parameters(self):
            return self._arch_parameters

        def genotype(self):
            def _parse(weights):
                gene = []
                n, start = 2, 0
                for i in range(self._steps):
                    end = start + n
                    W = weights[start:end].copy()
                    edges = sorted(range(i + 2), key=lambda x: -max(
                        W[x][k] for k in range(len(W[x])) if k != PRIMITIVES.index('none')))[:2]
                    for j in edges:
                        k_best = None
                        for k in range(len(W[j])):
                            if k != PRIMITIVES.index('none'):
                                if k_best is None or W[j][k] > W[j][k_best]:
                                    k_best = k
                        gene.append((PRIMITIVES[k_best], j))
                    start = end
                    n += 1
                return gene
            return (_parse(F.softmax(self.alphas_normal, dim=-1).data.cpu().numpy()),
                    _parse(F.softmax(self.alphas_reduce, dim=-1).data.cpu().numpy()))

    class Architect(object):
        def __init__(self, model):
            self.model = model
            self.optimizer = torch.optim.Adam(self.model.arch_parameters(), lr=3e-1, betas=(0.5, 0.999),
                                              weight_decay=1e-3)

        def step(self, input_valid, target_valid):
            self.optimizer.zero_grad()
            loss = self.model._loss(input_valid, target_valid)
            loss.backward()
            self.optimizer.step()

    criterion = nn.CrossEntropyLoss()  # DARTS moves both by .cuda(): here the CPU reference shares the code
    model = Network(4, 10, 2, criterion)
    init = load(m, model, state)
    alphas = np.random.default_rng(7).standard_normal((2, 2, len(PRIMITIVES))).astype(np.float32)
    for a, v in zip(model.arch_parameters(), alphas):  # Architect's model_new copy: x.data.copy_(y.data)
        a.data.copy_(torch.tensor(v))
    assert all(p is not a for p in model.parameters() for a in model.arch_parameters())  # not parameters
    optimizer = torch.optim.SGD(model.parameters(), 0.025, momentum=0.9, weight_decay=3e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, float(2), eta_min=0.001)
    architect = Architect(model)
    losses = []
    (x, y), (x_search, y_search) = batches(0, 2, (2, 3, 8, 8))
    for epoch in range(1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # get_lr() outside step() warns, in both libraries
            lr = scheduler.get_lr()[0]
        model.train()
        input = Variable(torch.tensor(x), requires_grad=False)
        target = Variable(torch.tensor(y), requires_grad=False)
        input_search = Variable(torch.tensor(x_search), requires_grad=False)
        target_search = Variable(torch.tensor(y_search), requires_grad=False)
        architect.step(input_search, target_search)
        optimizer.zero_grad()
        logits = model(input)
        loss = criterion(logits, target)
        loss.backward()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nn.utils.clip_grad_norm(model.parameters(), 5)
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), lr, scheduler.get_last_lr()[0]]
    losses.append(float(np.abs(model.alphas_normal.data.cpu().numpy()).sum()))
    genotype = model.genotype()
    if torch.__name__ == "tnet":  # drop_path's in-place writes on a non-leaf, with grad, tnet alone
        x = model.stem(input)
        before = x.detach().flatten(1).abs().sum(1).tolist()
        drop_path(x, 0.5).sum().backward()
        after = x.detach().flatten(1).abs().sum(1).tolist()
        assert all(a == 0 or abs(a - 2 * b) < 1e-4 * b for a, b in zip(after, before))  # dropped, or kept / 0.5
        assert model.stem[0].weight.grad is not None
    return init, losses + [PRIMITIVES.index(op) + 10 * j for cell in genotype for op, j in cell]


def test_darts():
    compare(darts)


# (h) DeiT's distillation (facebookresearch/deit over timm's layers): timm's Attention with a
# `fused_attn: Final[bool]` field (F.scaled_dot_product_attention) and qkv.unbind(0), LayerScale in
# place (x.mul_(gamma)), CaiT's talking-heads attention (Linears across the heads between permutes),
# a distillation token beside the class token, @torch.jit.ignore no_weight_decay, timm's weight-decay
# groups and LabelSmoothingCrossEntropy, DistillationLoss soft (kl_div with log_target) then hard
def deit(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Final = torch.jit.Final

    class Attention(nn.Module):
        fused_attn: Final[bool]

        def __init__(self, dim, num_heads=2, qkv_bias=False, attn_drop=0., proj_drop=0., fused_attn=True):
            super().__init__()
            assert dim % num_heads == 0, 'dim should be divisible by num_heads'
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.scale = self.head_dim ** -0.5
            self.fused_attn = fused_attn
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.q_norm = nn.Identity()
            self.k_norm = nn.Identity()
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            q, k = self.q_norm(q), self.k_norm(k)
            if self.fused_attn:
                x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.)
            else:
                q = q * self.scale
                attn = q @ k.transpose(-2, -1)
                attn = attn.softmax(dim=-1)
                attn = self.attn_drop(attn)
                x = attn @ v
            x = x.transpose(1, 2).reshape(B, N, C)
            return self.proj_drop(self.proj(x))

    class TalkingHeadAttn(nn.Module):
        def __init__(self, dim, num_heads=2, qkv_bias=False):
            super().__init__()
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = head_dim ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.proj = nn.Linear(dim, dim)
            self.proj_l = nn.Linear(num_heads, num_heads)
            self.proj_w = nn.Linear(num_heads, num_heads)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
            attn = q @ k.transpose(-2, -1)
            attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            attn = attn.softmax(dim=-1)
            attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            x = (attn @ v).transpose(1, 2).reshape(B, N, C)
            return self.proj(x)

    class LayerScale(nn.Module):
        def __init__(self, dim, init_values=1e-5, inplace=False):
            super().__init__()
            self.inplace = inplace
            self.gamma = nn.Parameter(init_values * torch.ones(dim))

        def forward(self, x):
            return x.mul_(self.gamma) if self.inplace else x * self.gamma

    class Block(nn.Module):
        def __init__(self, dim, attn, init_values=0.5):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            self.attn = attn
            self.ls1 = LayerScale(dim, init_values=init_values, inplace=True)
            self.drop_path1 = nn.Identity()
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Dropout(0.), nn.Linear(2 * dim, dim))
            self.ls2 = LayerScale(dim, init_values=init_values)
            self.drop_path2 = nn.Identity()

        def forward(self, x):
            x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
            x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
            return x

    class DistilledVisionTransformer(nn.Module):
        def __init__(self, img_size=8, patch_size=4, num_classes=10, embed_dim=8):
            super().__init__()
            self.num_classes, self.embed_dim = num_classes, embed_dim
            self.patch_embed = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)
            num_patches = (img_size // patch_size) ** 2
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
            self.dist_token = nn.Parameter(torch.zeros(1, 1, self.embed_dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 2, self.embed_dim))
            self.pos_drop = nn.Dropout(p=0.)
            self.blocks = nn.Sequential(Block(embed_dim, Attention(embed_dim)),
                                        Block(embed_dim, TalkingHeadAttn(embed_dim)))
            self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
            self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
            self.head_dist = nn.Linear(self.embed_dim, self.num_classes) if self.num_classes > 0 else nn.Identity()
            nn.init.trunc_normal_(self.dist_token, std=.02)
            nn.init.trunc_normal_(self.pos_embed, std=.02)
            nn.init.trunc_normal_(self.cls_token, std=.02)
            self.apply(self._init_weights)

        def _init_weights(self, m):
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.LayerNorm):
                nn.init.constant_(m.bias, 0)
                nn.init.constant_(m.weight, 1.0)

        @torch.jit.ignore
        def no_weight_decay(self):
            return {'pos_embed', 'cls_token', 'dist_token'}

        def forward_features(self, x):
            B = x.shape[0]
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            cls_tokens = self.cls_token.expand(B, -1, -1)
            dist_token = self.dist_token.expand(B, -1, -1)
            x = torch.cat((cls_tokens, dist_token, x), dim=1)
            x = x + self.pos_embed
            x = self.pos_drop(x)
            x = self.blocks(x)
            x = self.norm(x)
            return x[:, 0], x[:, 1]

        def forward(self, x):
            x, x_dist = self.forward_features(x)
            x = self.head(x)
            x_dist = self.head_dist(x_dist)
            if self.training:
                return x, x_dist
            else:
                return (x + x_dist) / 2

    class LabelSmoothingCrossEntropy(nn.Module):
        def __init__(self, smoothing=0.1):
            super(LabelSmoothingCrossEntropy, self).__init__()
            assert smoothing < 1.0
            self.smoothing = smoothing
            self.confidence = 1. - smoothing

        def forward(self, x, target):
            logprobs = F.log_softmax(x, dim=-1)
            nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
            nll_loss = nll_loss.squeeze(1)
            smooth_loss = -logprobs.mean(dim=-1)
            loss = self.confidence * nll_loss + self.smoothing * smooth_loss
            return loss.mean()

    class DistillationLoss(torch.nn.Module):
        def __init__(self, base_criterion, teacher_model, distillation_type, alpha, tau):
            super().__init__()
            self.base_criterion = base_criterion
            self.teacher_model = teacher_model
            assert distillation_type in ['none', 'soft', 'hard']
            self.distillation_type = distillation_type
            self.alpha = alpha
            self.tau = tau

        def forward(self, inputs, outputs, labels):
            outputs_kd = None
            if not isinstance(outputs, torch.Tensor):
                outputs, outputs_kd = outputs
            base_loss = self.base_criterion(outputs, labels)
            if self.distillation_type == 'none':
                return base_loss
            with torch.no_grad():
                teacher_outputs = self.teacher_model(inputs)
            if self.distillation_type == 'soft':
                T = self.tau
                distillation_loss = F.kl_div(F.log_softmax(outputs_kd / T, dim=1),
                                             F.log_softmax(teacher_outputs / T, dim=1),
                                             reduction='sum', log_target=True) * (T * T) / outputs_kd.numel()
            elif self.distillation_type == 'hard':
                distillation_loss = F.cross_entropy(outputs_kd, teacher_outputs.argmax(dim=1))
            return base_loss * (1 - self.alpha) + distillation_loss * self.alpha

    def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
        no_weight_decay_list = set(no_weight_decay_list)
        decay, no_decay = [], []
        for name, param in model.named_parameters():
            if not param.requires_grad:
                continue
            if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
                no_decay.append(param)
            else:
                decay.append(param)
        return [{'params': no_decay, 'weight_decay': 0.}, {'params': decay, 'weight_decay': weight_decay}]

    teacher = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(36, 10))
    model = nn.ModuleDict({"student": DistilledVisionTransformer(), "teacher": teacher})
    init = load(m, model, state)
    student = model["student"]
    teacher.eval()
    optimizer = torch.optim.AdamW(param_groups_weight_decay(student, 0.05, student.no_weight_decay()), lr=5e-3)
    losses = []
    for kind, (x, y) in zip(["soft", "hard"], batches(0, 2, (2, 3, 8, 8))):
        criterion = DistillationLoss(LabelSmoothingCrossEntropy(0.1), teacher, kind, alpha=0.5, tau=3.0)
        samples, targets = torch.tensor(x), torch.tensor(y)
        outputs = student(samples)
        loss = criterion(samples, outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    student.eval()
    with torch.no_grad():
        losses.append(student(torch.tensor(batches(1, 1, (2, 3, 8, 8))[0][0])).sum().item())
    return init, losses


def test_deit():
    compare(deit)
