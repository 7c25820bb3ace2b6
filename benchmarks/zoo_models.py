"""The model zoo: the architectures of kuangliu/pytorch-cifar's models/ folder, written afresh for
tnet (nothing copied) in the idioms those files use: `import torch.nn as nn`, `import
torch.nn.functional as F`, `class X(nn.Module)`, `nn.Sequential`, `out += self.shortcut(x)`,
`x.view(x.size(0), -1)`, `torch.cat([...], 1)`, `F.avg_pool2d(out, 4)`, `nn.ReLU(inplace=True)`,
`groups=`, `out.sigmoid()`...

Each model is written once, as a function of the three names a PyTorch model file imports,
`build(torch, nn, F, **size)`, whose body uses only those names (and `math`). Called with torch's
modules it builds the PyTorch model; with tnet's (`tnet`, `tnet.nn`, `tnet.functional`) the same
source ported by changing its imports (`build(*lib("tnet"), ...)`). ZOO names each model's full
size (pytorch-cifar's) and the reduced one that tests/test_zoo.py trains on the CPU; bench.py zoo
times the full ones on the GPU (benchmarks/zoo.py). This module imports neither torch nor tnet:
bench.py checks for a GPU before tnet is imported."""
import importlib
import math
from typing import Callable, NamedTuple


def lib(name):
    """(torch, nn, F) of "torch" or "tnet": the names a model file imports."""
    top = importlib.import_module(name)
    return top, importlib.import_module(f"{name}.nn"), importlib.import_module(
        "torch.nn.functional" if name == "torch" else "tnet.functional")


# ---- LeNet ----------------------------------------------------------------------------------

def lenet(torch, nn, F):
    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            out = F.relu(self.conv1(x))
            out = F.max_pool2d(out, 2)
            out = F.relu(self.conv2(out))
            out = F.max_pool2d(out, 2)
            out = out.view(out.size(0), -1)
            out = F.relu(self.fc1(out))
            out = F.relu(self.fc2(out))
            return self.fc3(out)
    return LeNet()


# ---- VGG ------------------------------------------------------------------------------------

VGG_CFG = {
    "VGG11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "VGG16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "VGG19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def vgg(torch, nn, F, cfg=VGG_CFG["VGG19"]):
    class VGG(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.features = self._make_layers(cfg)
            self.classifier = nn.Linear([c for c in cfg if c != "M"][-1], 10)

        def forward(self, x):
            out = self.features(x)
            out = out.view(out.size(0), -1)
            return self.classifier(out)

        def _make_layers(self, cfg):
            layers = []
            in_channels = 3
            for c in cfg:
                if c == "M":
                    layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
                else:
                    layers += [nn.Conv2d(in_channels, c, kernel_size=3, padding=1),
                               nn.BatchNorm2d(c),
                               nn.ReLU(inplace=True)]
                    in_channels = c
            layers += [nn.AvgPool2d(kernel_size=1, stride=1)]
            return nn.Sequential(*layers)
    return VGG(cfg)


# ---- ResNet (BasicBlock and Bottleneck), shared with SimpleDLA and DLA ---------------------

def resnet_blocks(torch, nn, F):
    """(BasicBlock, Bottleneck): ResNet's residual blocks."""
    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != self.expansion * planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(self.expansion * planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.shortcut(x)
            out = F.relu(out)
            return out

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, self.expansion * planes, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(self.expansion * planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != self.expansion * planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(self.expansion * planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            out += self.shortcut(x)
            out = F.relu(out)
            return out
    return BasicBlock, Bottleneck


def resnet(torch, nn, F, block="basic", num_blocks=(2, 2, 2, 2), widths=(64, 128, 256, 512), num_classes=10):
    BasicBlock, Bottleneck = resnet_blocks(torch, nn, F)

    class ResNet(nn.Module):
        def __init__(self, block, num_blocks, num_classes=10):
            super().__init__()
            self.in_planes = widths[0]
            self.conv1 = nn.Conv2d(3, widths[0], kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(widths[0])
            self.layer1 = self._make_layer(block, widths[0], num_blocks[0], stride=1)
            self.layer2 = self._make_layer(block, widths[1], num_blocks[1], stride=2)
            self.layer3 = self._make_layer(block, widths[2], num_blocks[2], stride=2)
            self.layer4 = self._make_layer(block, widths[3], num_blocks[3], stride=2)
            self.linear = nn.Linear(widths[3] * block.expansion, num_classes)

        def _make_layer(self, block, planes, num_blocks, stride):
            strides = [stride] + [1] * (num_blocks - 1)
            layers = []
            for stride in strides:
                layers.append(block(self.in_planes, planes, stride))
                self.in_planes = planes * block.expansion
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = self.layer4(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return ResNet(BasicBlock if block == "basic" else Bottleneck, num_blocks, num_classes)


# ---- PreActResNet ---------------------------------------------------------------------------

def preact_resnet(torch, nn, F, num_blocks=(2, 2, 2, 2), widths=(64, 128, 256, 512), num_classes=10):
    class PreActBlock(nn.Module):
        """Pre-activation: BatchNorm and ReLU before each convolution."""
        expansion = 1

        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.bn1 = nn.BatchNorm2d(in_planes)
            self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            if stride != 1 or in_planes != self.expansion * planes:
                self.shortcut = nn.Sequential(nn.Conv2d(in_planes, self.expansion * planes, 1, stride, bias=False))

        def forward(self, x):
            out = F.relu(self.bn1(x))
            shortcut = self.shortcut(out) if hasattr(self, "shortcut") else x
            out = self.conv1(out)
            out = self.conv2(F.relu(self.bn2(out)))
            out += shortcut
            return out

    class PreActResNet(nn.Module):
        def __init__(self, block, num_blocks, num_classes=10):
            super().__init__()
            self.in_planes = widths[0]
            self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
            self.layer1 = self._make_layer(block, widths[0], num_blocks[0], 1)
            self.layer2 = self._make_layer(block, widths[1], num_blocks[1], 2)
            self.layer3 = self._make_layer(block, widths[2], num_blocks[2], 2)
            self.layer4 = self._make_layer(block, widths[3], num_blocks[3], 2)
            self.bn = nn.BatchNorm2d(widths[3] * block.expansion)
            self.linear = nn.Linear(widths[3] * block.expansion, num_classes)

        def _make_layer(self, block, planes, num_blocks, stride):
            layers = []
            for s in [stride] + [1] * (num_blocks - 1):
                layers.append(block(self.in_planes, planes, s))
                self.in_planes = planes * block.expansion
            return nn.Sequential(*layers)

        def forward(self, x):
            out = self.conv1(x)
            out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
            out = F.relu(self.bn(out))
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            return self.linear(out)
    return PreActResNet(PreActBlock, num_blocks, num_classes)


# ---- GoogLeNet ------------------------------------------------------------------------------

GOOGLENET_CELLS = [  # Inception(n1x1, n3x3red, n3x3, n5x5red, n5x5, pool_planes), or "M": max pooling
    (64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "M",
    (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
    (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128), "M",
    (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128)]


def googlenet(torch, nn, F, stem=192, cells=GOOGLENET_CELLS):
    class Inception(nn.Module):
        def __init__(self, in_planes, n1x1, n3x3red, n3x3, n5x5red, n5x5, pool_planes):
            super().__init__()
            self.b1 = nn.Sequential(  # 1x1 conv branch
                nn.Conv2d(in_planes, n1x1, kernel_size=1),
                nn.BatchNorm2d(n1x1),
                nn.ReLU(True))
            self.b2 = nn.Sequential(  # 1x1 conv -> 3x3 conv branch
                nn.Conv2d(in_planes, n3x3red, kernel_size=1),
                nn.BatchNorm2d(n3x3red),
                nn.ReLU(True),
                nn.Conv2d(n3x3red, n3x3, kernel_size=3, padding=1),
                nn.BatchNorm2d(n3x3),
                nn.ReLU(True))
            self.b3 = nn.Sequential(  # 1x1 conv -> 5x5 conv branch, the 5x5 as two 3x3
                nn.Conv2d(in_planes, n5x5red, kernel_size=1),
                nn.BatchNorm2d(n5x5red),
                nn.ReLU(True),
                nn.Conv2d(n5x5red, n5x5, kernel_size=3, padding=1),
                nn.BatchNorm2d(n5x5),
                nn.ReLU(True),
                nn.Conv2d(n5x5, n5x5, kernel_size=3, padding=1),
                nn.BatchNorm2d(n5x5),
                nn.ReLU(True))
            self.b4 = nn.Sequential(  # 3x3 pool -> 1x1 conv branch
                nn.MaxPool2d(3, stride=1, padding=1),
                nn.Conv2d(in_planes, pool_planes, kernel_size=1),
                nn.BatchNorm2d(pool_planes),
                nn.ReLU(True))

        def forward(self, x):
            y1 = self.b1(x)
            y2 = self.b2(x)
            y3 = self.b3(x)
            y4 = self.b4(x)
            return torch.cat([y1, y2, y3, y4], 1)

    class GoogLeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.pre_layers = nn.Sequential(
                nn.Conv2d(3, stem, kernel_size=3, padding=1),
                nn.BatchNorm2d(stem),
                nn.ReLU(True))
            layers, in_planes = [], stem
            for cell in cells:
                if cell == "M":
                    layers.append(nn.MaxPool2d(3, stride=2, padding=1))
                else:
                    layers.append(Inception(in_planes, *cell))
                    in_planes = cell[0] + cell[2] + cell[4] + cell[5]
            self.layers = nn.Sequential(*layers)
            self.avgpool = nn.AvgPool2d(8, stride=1)
            self.linear = nn.Linear(in_planes, 10)

        def forward(self, x):
            out = self.pre_layers(x)
            out = self.layers(out)
            out = self.avgpool(out)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return GoogLeNet()


# ---- DenseNet -------------------------------------------------------------------------------

def densenet(torch, nn, F, nblocks=(6, 12, 24, 16), growth_rate=32, reduction=0.5, num_classes=10):
    class Bottleneck(nn.Module):
        def __init__(self, in_planes, growth_rate):
            super().__init__()
            self.bn1 = nn.BatchNorm2d(in_planes)
            self.conv1 = nn.Conv2d(in_planes, 4 * growth_rate, kernel_size=1, bias=False)
            self.bn2 = nn.BatchNorm2d(4 * growth_rate)
            self.conv2 = nn.Conv2d(4 * growth_rate, growth_rate, kernel_size=3, padding=1, bias=False)

        def forward(self, x):
            out = self.conv1(F.relu(self.bn1(x)))
            out = self.conv2(F.relu(self.bn2(out)))
            out = torch.cat([out, x], 1)
            return out

    class Transition(nn.Module):
        def __init__(self, in_planes, out_planes):
            super().__init__()
            self.bn = nn.BatchNorm2d(in_planes)
            self.conv = nn.Conv2d(in_planes, out_planes, kernel_size=1, bias=False)

        def forward(self, x):
            out = self.conv(F.relu(self.bn(x)))
            out = F.avg_pool2d(out, 2)
            return out

    class DenseNet(nn.Module):
        def __init__(self, block, nblocks, growth_rate=12, reduction=0.5, num_classes=10):
            super().__init__()
            self.growth_rate = growth_rate
            num_planes = 2 * growth_rate
            self.conv1 = nn.Conv2d(3, num_planes, kernel_size=3, padding=1, bias=False)

            self.dense1 = self._make_dense_layers(block, num_planes, nblocks[0])
            num_planes += nblocks[0] * growth_rate
            out_planes = int(math.floor(num_planes * reduction))
            self.trans1 = Transition(num_planes, out_planes)
            num_planes = out_planes

            self.dense2 = self._make_dense_layers(block, num_planes, nblocks[1])
            num_planes += nblocks[1] * growth_rate
            out_planes = int(math.floor(num_planes * reduction))
            self.trans2 = Transition(num_planes, out_planes)
            num_planes = out_planes

            self.dense3 = self._make_dense_layers(block, num_planes, nblocks[2])
            num_planes += nblocks[2] * growth_rate
            out_planes = int(math.floor(num_planes * reduction))
            self.trans3 = Transition(num_planes, out_planes)
            num_planes = out_planes

            self.dense4 = self._make_dense_layers(block, num_planes, nblocks[3])
            num_planes += nblocks[3] * growth_rate

            self.bn = nn.BatchNorm2d(num_planes)
            self.linear = nn.Linear(num_planes, num_classes)

        def _make_dense_layers(self, block, in_planes, nblock):
            layers = []
            for i in range(nblock):
                layers.append(block(in_planes, self.growth_rate))
                in_planes += self.growth_rate
            return nn.Sequential(*layers)

        def forward(self, x):
            out = self.conv1(x)
            out = self.trans1(self.dense1(out))
            out = self.trans2(self.dense2(out))
            out = self.trans3(self.dense3(out))
            out = self.dense4(out)
            out = F.avg_pool2d(F.relu(self.bn(out)), 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return DenseNet(Bottleneck, nblocks, growth_rate, reduction, num_classes)


# ---- ResNeXt --------------------------------------------------------------------------------

def resnext(torch, nn, F, num_blocks=(3, 3, 3), cardinality=32, bottleneck_width=4, stem=64, num_classes=10):
    class Block(nn.Module):
        """Grouped convolution block."""
        expansion = 2

        def __init__(self, in_planes, cardinality=32, bottleneck_width=4, stride=1):
            super().__init__()
            group_width = cardinality * bottleneck_width
            self.conv1 = nn.Conv2d(in_planes, group_width, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(group_width)
            self.conv2 = nn.Conv2d(group_width, group_width, kernel_size=3, stride=stride, padding=1,
                                   groups=cardinality, bias=False)
            self.bn2 = nn.BatchNorm2d(group_width)
            self.conv3 = nn.Conv2d(group_width, self.expansion * group_width, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(self.expansion * group_width)

            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != self.expansion * group_width:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, self.expansion * group_width, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(self.expansion * group_width))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            out += self.shortcut(x)
            out = F.relu(out)
            return out

    class ResNeXt(nn.Module):
        def __init__(self, num_blocks, cardinality, bottleneck_width, num_classes=10):
            super().__init__()
            self.cardinality = cardinality
            self.bottleneck_width = bottleneck_width
            self.in_planes = stem

            self.conv1 = nn.Conv2d(3, stem, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(stem)
            self.layer1 = self._make_layer(num_blocks[0], 1)
            self.layer2 = self._make_layer(num_blocks[1], 2)
            self.layer3 = self._make_layer(num_blocks[2], 2)
            self.linear = nn.Linear(cardinality * bottleneck_width * 8, num_classes)

        def _make_layer(self, num_blocks, stride):
            strides = [stride] + [1] * (num_blocks - 1)
            layers = []
            for stride in strides:
                layers.append(Block(self.in_planes, self.cardinality, self.bottleneck_width, stride))
                self.in_planes = Block.expansion * self.cardinality * self.bottleneck_width
            self.bottleneck_width *= 2  # the next stage's groups are twice as wide
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = F.avg_pool2d(out, 8)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return ResNeXt(num_blocks, cardinality, bottleneck_width, num_classes)


# ---- MobileNet ------------------------------------------------------------------------------

MOBILENET_CFG = [64, (128, 2), 128, (256, 2), 256, (512, 2), 512, 512, 512, 512, 512, (1024, 2), 1024]


def mobilenet(torch, nn, F, cfg=MOBILENET_CFG, stem=32, num_classes=10):
    class Block(nn.Module):
        """Depthwise conv + pointwise conv."""

        def __init__(self, in_planes, out_planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, in_planes, kernel_size=3, stride=stride, padding=1, groups=in_planes,
                                   bias=False)
            self.bn1 = nn.BatchNorm2d(in_planes)
            self.conv2 = nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn2 = nn.BatchNorm2d(out_planes)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            return out

    class MobileNet(nn.Module):
        # (128, 2): 128 channels out, stride 2; a bare number: stride 1
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, stem, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(stem)
            self.layers = self._make_layers(in_planes=stem)
            self.linear = nn.Linear([c if isinstance(c, int) else c[0] for c in cfg][-1], num_classes)

        def _make_layers(self, in_planes):
            layers = []
            for x in cfg:
                out_planes = x if isinstance(x, int) else x[0]
                stride = 1 if isinstance(x, int) else x[1]
                layers.append(Block(in_planes, out_planes, stride))
                in_planes = out_planes
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layers(out)
            out = F.avg_pool2d(out, 2)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return MobileNet(num_classes)


# ---- MobileNetV2 ----------------------------------------------------------------------------

MOBILENETV2_CFG = [(1, 16, 1, 1),  # (expansion, out_planes, num_blocks, stride)
                   (6, 24, 2, 1),  # stride 1 instead of ImageNet's 2, for CIFAR-10
                   (6, 32, 3, 2),
                   (6, 64, 4, 2),
                   (6, 96, 3, 1),
                   (6, 160, 3, 2),
                   (6, 320, 1, 1)]


def mobilenet_v2(torch, nn, F, cfg=MOBILENETV2_CFG, stem=32, head=1280, num_classes=10):
    class Block(nn.Module):
        """Expand + depthwise + pointwise."""

        def __init__(self, in_planes, out_planes, expansion, stride):
            super().__init__()
            self.stride = stride
            planes = expansion * in_planes
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, groups=planes, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn3 = nn.BatchNorm2d(out_planes)

            self.shortcut = nn.Sequential()
            if stride == 1 and in_planes != out_planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False),
                    nn.BatchNorm2d(out_planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            out = out + self.shortcut(x) if self.stride == 1 else out
            return out

    class MobileNetV2(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, stem, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(stem)
            self.layers = self._make_layers(in_planes=stem)
            self.conv2 = nn.Conv2d(cfg[-1][1], head, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn2 = nn.BatchNorm2d(head)
            self.linear = nn.Linear(head, num_classes)

        def _make_layers(self, in_planes):
            layers = []
            for expansion, out_planes, num_blocks, stride in cfg:
                strides = [stride] + [1] * (num_blocks - 1)
                for stride in strides:
                    layers.append(Block(in_planes, out_planes, expansion, stride))
                    in_planes = out_planes
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layers(out)
            out = F.relu(self.bn2(self.conv2(out)))
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return MobileNetV2(num_classes)


# ---- DPN ------------------------------------------------------------------------------------

DPN92 = dict(in_planes=(96, 192, 384, 768), out_planes=(256, 512, 1024, 2048), num_blocks=(3, 4, 20, 3),
             dense_depth=(16, 32, 24, 128))
DPN26 = dict(DPN92, num_blocks=(2, 2, 2, 2))


def dpn(torch, nn, F, in_planes, out_planes, num_blocks, dense_depth, groups=32, stem=64, num_classes=10):
    class Bottleneck(nn.Module):
        def __init__(self, last_planes, in_planes, out_planes, dense_depth, stride, first_layer):
            super().__init__()
            self.out_planes = out_planes
            self.dense_depth = dense_depth

            self.conv1 = nn.Conv2d(last_planes, in_planes, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(in_planes)
            self.conv2 = nn.Conv2d(in_planes, in_planes, kernel_size=3, stride=stride, padding=1, groups=groups,
                                   bias=False)
            self.bn2 = nn.BatchNorm2d(in_planes)
            self.conv3 = nn.Conv2d(in_planes, out_planes + dense_depth, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(out_planes + dense_depth)

            self.shortcut = nn.Sequential()
            if first_layer:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(last_planes, out_planes + dense_depth, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(out_planes + dense_depth))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            x = self.shortcut(x)
            d = self.out_planes
            # residual path: the first d channels add; dense path: the rest concatenate
            out = torch.cat([x[:, :d, :, :] + out[:, :d, :, :], x[:, d:, :, :], out[:, d:, :, :]], 1)
            out = F.relu(out)
            return out

    class DPN(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, stem, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(stem)
            self.last_planes = stem
            self.layer1 = self._make_layer(in_planes[0], out_planes[0], num_blocks[0], dense_depth[0], stride=1)
            self.layer2 = self._make_layer(in_planes[1], out_planes[1], num_blocks[1], dense_depth[1], stride=2)
            self.layer3 = self._make_layer(in_planes[2], out_planes[2], num_blocks[2], dense_depth[2], stride=2)
            self.layer4 = self._make_layer(in_planes[3], out_planes[3], num_blocks[3], dense_depth[3], stride=2)
            self.linear = nn.Linear(out_planes[3] + (num_blocks[3] + 1) * dense_depth[3], num_classes)

        def _make_layer(self, in_planes, out_planes, num_blocks, dense_depth, stride):
            strides = [stride] + [1] * (num_blocks - 1)
            layers = []
            for i, stride in enumerate(strides):
                layers.append(Bottleneck(self.last_planes, in_planes, out_planes, dense_depth, stride, i == 0))
                self.last_planes = out_planes + (i + 2) * dense_depth
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = self.layer4(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return DPN(num_classes)


# ---- ShuffleNet (v1) ------------------------------------------------------------------------

def shufflenet(torch, nn, F, out_planes=(200, 400, 800), num_blocks=(4, 8, 4), groups=2, stem=24, num_classes=10):
    class ShuffleBlock(nn.Module):
        def __init__(self, groups):
            super().__init__()
            self.groups = groups

        def forward(self, x):
            """Channel shuffle: [N, C, H, W] -> [N, g, C/g, H, W] -> [N, C/g, g, H, W] -> [N, C, H, W]."""
            N, C, H, W = x.size()
            g = self.groups
            return x.view(N, g, C // g, H, W).permute(0, 2, 1, 3, 4).reshape(N, C, H, W)

    class Bottleneck(nn.Module):
        def __init__(self, in_planes, out_planes, stride, groups, first=False):
            super().__init__()
            self.stride = stride

            mid_planes = out_planes // 4
            g = 1 if first else groups  # the stem's few channels are not grouped
            self.conv1 = nn.Conv2d(in_planes, mid_planes, kernel_size=1, groups=g, bias=False)
            self.bn1 = nn.BatchNorm2d(mid_planes)
            self.shuffle1 = ShuffleBlock(groups=g)
            self.conv2 = nn.Conv2d(mid_planes, mid_planes, kernel_size=3, stride=stride, padding=1, groups=mid_planes,
                                   bias=False)
            self.bn2 = nn.BatchNorm2d(mid_planes)
            self.conv3 = nn.Conv2d(mid_planes, out_planes, kernel_size=1, groups=groups, bias=False)
            self.bn3 = nn.BatchNorm2d(out_planes)

            self.shortcut = nn.Sequential()
            if stride == 2:
                self.shortcut = nn.Sequential(nn.AvgPool2d(3, stride=2, padding=1))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.shuffle1(out)
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            res = self.shortcut(x)
            out = F.relu(torch.cat([out, res], 1)) if self.stride == 2 else F.relu(out + res)
            return out

    class ShuffleNet(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, stem, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(stem)
            self.in_planes = stem
            self.layer1 = self._make_layer(out_planes[0], num_blocks[0], groups, first=True)
            self.layer2 = self._make_layer(out_planes[1], num_blocks[1], groups)
            self.layer3 = self._make_layer(out_planes[2], num_blocks[2], groups)
            self.linear = nn.Linear(out_planes[2], num_classes)

        def _make_layer(self, out_planes, num_blocks, groups, first=False):
            layers = []
            for i in range(num_blocks):
                stride = 2 if i == 0 else 1
                cat_planes = self.in_planes if i == 0 else 0  # a downsampling block concatenates its input
                layers.append(Bottleneck(self.in_planes, out_planes - cat_planes, stride, groups, first and i == 0))
                self.in_planes = out_planes
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return ShuffleNet(num_classes)


# ---- ShuffleNetV2 ---------------------------------------------------------------------------

def shufflenet_v2(torch, nn, F, out_channels=(116, 232, 464, 1024), num_blocks=(3, 7, 3), stem=24, num_classes=10):
    class ShuffleBlock(nn.Module):
        def __init__(self, groups=2):
            super().__init__()
            self.groups = groups

        def forward(self, x):
            N, C, H, W = x.size()
            g = self.groups
            return x.view(N, g, C // g, H, W).permute(0, 2, 1, 3, 4).reshape(N, C, H, W)

    class SplitBlock(nn.Module):
        def __init__(self, ratio):
            super().__init__()
            self.ratio = ratio

        def forward(self, x):
            c = int(x.size(1) * self.ratio)
            return x[:, :c, :, :], x[:, c:, :, :]

    class BasicBlock(nn.Module):
        def __init__(self, in_channels, split_ratio=0.5):
            super().__init__()
            self.split = SplitBlock(split_ratio)
            in_channels = int(in_channels * split_ratio)
            self.conv1 = nn.Conv2d(in_channels, in_channels, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(in_channels)
            self.conv2 = nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1, groups=in_channels,
                                   bias=False)
            self.bn2 = nn.BatchNorm2d(in_channels)
            self.conv3 = nn.Conv2d(in_channels, in_channels, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(in_channels)
            self.shuffle = ShuffleBlock()

        def forward(self, x):
            x1, x2 = self.split(x)
            out = F.relu(self.bn1(self.conv1(x2)))
            out = self.bn2(self.conv2(out))
            out = F.relu(self.bn3(self.conv3(out)))
            out = torch.cat([x1, out], 1)
            out = self.shuffle(out)
            return out

    class DownBlock(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            mid_channels = out_channels // 2
            # left
            self.conv1 = nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=2, padding=1, groups=in_channels,
                                   bias=False)
            self.bn1 = nn.BatchNorm2d(in_channels)
            self.conv2 = nn.Conv2d(in_channels, mid_channels, kernel_size=1, bias=False)
            self.bn2 = nn.BatchNorm2d(mid_channels)
            # right
            self.conv3 = nn.Conv2d(in_channels, mid_channels, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(mid_channels)
            self.conv4 = nn.Conv2d(mid_channels, mid_channels, kernel_size=3, stride=2, padding=1, groups=mid_channels,
                                   bias=False)
            self.bn4 = nn.BatchNorm2d(mid_channels)
            self.conv5 = nn.Conv2d(mid_channels, mid_channels, kernel_size=1, bias=False)
            self.bn5 = nn.BatchNorm2d(mid_channels)

            self.shuffle = ShuffleBlock()

        def forward(self, x):
            # left
            out1 = self.bn1(self.conv1(x))
            out1 = F.relu(self.bn2(self.conv2(out1)))
            # right
            out2 = F.relu(self.bn3(self.conv3(x)))
            out2 = self.bn4(self.conv4(out2))
            out2 = F.relu(self.bn5(self.conv5(out2)))
            # concat
            out = torch.cat([out1, out2], 1)
            out = self.shuffle(out)
            return out

    class ShuffleNetV2(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, stem, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(stem)

            self.in_channels = stem
            self.layer1 = self._make_layer(out_channels[0], num_blocks[0])
            self.layer2 = self._make_layer(out_channels[1], num_blocks[1])
            self.layer3 = self._make_layer(out_channels[2], num_blocks[2])
            self.conv2 = nn.Conv2d(out_channels[2], out_channels[3], kernel_size=1, stride=1, padding=0, bias=False)
            self.bn2 = nn.BatchNorm2d(out_channels[3])
            self.linear = nn.Linear(out_channels[3], num_classes)

        def _make_layer(self, out_channels, num_blocks):
            layers = [DownBlock(self.in_channels, out_channels)]
            for i in range(num_blocks):
                layers.append(BasicBlock(out_channels))
            self.in_channels = out_channels
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = F.relu(self.bn2(self.conv2(out)))
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return ShuffleNetV2(num_classes)


# ---- SENet ----------------------------------------------------------------------------------

def senet(torch, nn, F, num_blocks=(2, 2, 2, 2), widths=(64, 128, 256, 512), num_classes=10):
    class BasicBlock(nn.Module):
        """A residual block whose output channels are weighted by squeeze-and-excitation."""

        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)

            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(planes))

            # SE layers: 1x1 convolutions over the squeezed channels
            self.fc1 = nn.Conv2d(planes, planes // 16, kernel_size=1)
            self.fc2 = nn.Conv2d(planes // 16, planes, kernel_size=1)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))

            # squeeze
            w = F.avg_pool2d(out, out.size(2))
            w = F.relu(self.fc1(w))
            w = F.sigmoid(self.fc2(w))
            # excitation
            out = out * w

            out += self.shortcut(x)
            out = F.relu(out)
            return out

    class SENet(nn.Module):
        def __init__(self, block, num_blocks, num_classes=10):
            super().__init__()
            self.in_planes = widths[0]
            self.conv1 = nn.Conv2d(3, widths[0], kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(widths[0])
            self.layer1 = self._make_layer(block, widths[0], num_blocks[0], stride=1)
            self.layer2 = self._make_layer(block, widths[1], num_blocks[1], stride=2)
            self.layer3 = self._make_layer(block, widths[2], num_blocks[2], stride=2)
            self.layer4 = self._make_layer(block, widths[3], num_blocks[3], stride=2)
            self.linear = nn.Linear(widths[3], num_classes)

        def _make_layer(self, block, planes, num_blocks, stride):
            strides = [stride] + [1] * (num_blocks - 1)
            layers = []
            for stride in strides:
                layers.append(block(self.in_planes, planes, stride))
                self.in_planes = planes
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = self.layer4(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return SENet(BasicBlock, num_blocks, num_classes)


# ---- EfficientNet ---------------------------------------------------------------------------

EFFICIENTNET_B0 = dict(num_blocks=(1, 2, 2, 3, 3, 4, 1), expansion=(1, 6, 6, 6, 6, 6, 6),
                       out_channels=(16, 24, 40, 80, 112, 192, 320), kernel_size=(3, 3, 5, 3, 5, 5, 3),
                       stride=(1, 2, 2, 2, 1, 2, 1), dropout_rate=0.2, drop_connect_rate=0.2)


def efficientnet(torch, nn, F, num_blocks, expansion, out_channels, kernel_size, stride, dropout_rate,
                 drop_connect_rate, stem=32, num_classes=10):
    cfg = dict(num_blocks=num_blocks, expansion=expansion, out_channels=out_channels, kernel_size=kernel_size,
               stride=stride, dropout_rate=dropout_rate, drop_connect_rate=drop_connect_rate)

    def swish(x):
        return x * x.sigmoid()

    def drop_connect(x, drop_ratio):
        keep_ratio = 1.0 - drop_ratio
        mask = torch.empty([x.shape[0], 1, 1, 1], dtype=x.dtype, device=x.device)
        mask.bernoulli_(keep_ratio)
        x.div_(keep_ratio)
        x.mul_(mask)
        return x

    class SE(nn.Module):
        """Squeeze-and-Excitation block with Swish."""

        def __init__(self, in_channels, se_channels):
            super().__init__()
            self.se1 = nn.Conv2d(in_channels, se_channels, kernel_size=1, bias=True)
            self.se2 = nn.Conv2d(se_channels, in_channels, kernel_size=1, bias=True)

        def forward(self, x):
            out = F.adaptive_avg_pool2d(x, (1, 1))
            out = swish(self.se1(out))
            out = self.se2(out).sigmoid()
            out = x * out
            return out

    class Block(nn.Module):
        """expansion + depthwise + pointwise + squeeze-excitation"""

        def __init__(self, in_channels, out_channels, kernel_size, stride, expand_ratio=1, se_ratio=0.0,
                     drop_rate=0.0):
            super().__init__()
            self.stride = stride
            self.drop_rate = drop_rate
            self.expand_ratio = expand_ratio

            # Expansion
            channels = expand_ratio * in_channels
            self.conv1 = nn.Conv2d(in_channels, channels, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)

            # Depthwise conv
            self.conv2 = nn.Conv2d(channels, channels, kernel_size=kernel_size, stride=stride,
                                   padding=(1 if kernel_size == 3 else 2), groups=channels, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

            # SE layers
            se_channels = int(in_channels * se_ratio)
            self.se = SE(channels, se_channels)

            # Output
            self.conv3 = nn.Conv2d(channels, out_channels, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn3 = nn.BatchNorm2d(out_channels)

            # Skip connection if in and out shapes are the same (MV-V2 style)
            self.has_skip = (stride == 1) and (in_channels == out_channels)

        def forward(self, x):
            out = x if self.expand_ratio == 1 else swish(self.bn1(self.conv1(x)))
            out = swish(self.bn2(self.conv2(out)))
            out = self.se(out)
            out = self.bn3(self.conv3(out))
            if self.has_skip:
                if self.training and self.drop_rate > 0:
                    out = drop_connect(out, self.drop_rate)
                out = out + x
            return out

    class EfficientNet(nn.Module):
        def __init__(self, cfg, num_classes=10):
            super().__init__()
            self.cfg = cfg
            self.conv1 = nn.Conv2d(3, stem, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(stem)
            self.layers = self._make_layers(in_channels=stem)
            self.linear = nn.Linear(cfg["out_channels"][-1], num_classes)

        def _make_layers(self, in_channels):
            layers = []
            cfg = [self.cfg[k] for k in ["expansion", "out_channels", "num_blocks", "kernel_size", "stride"]]
            b = 0
            blocks = sum(self.cfg["num_blocks"])
            for expansion, out_channels, num_blocks, kernel_size, stride in zip(*cfg):
                strides = [stride] + [1] * (num_blocks - 1)
                for stride in strides:
                    drop_rate = self.cfg["drop_connect_rate"] * b / blocks
                    layers.append(Block(in_channels, out_channels, kernel_size, stride, expansion, se_ratio=0.25,
                                        drop_rate=drop_rate))
                    in_channels = out_channels
            return nn.Sequential(*layers)

        def forward(self, x):
            out = swish(self.bn1(self.conv1(x)))
            out = self.layers(out)
            out = F.adaptive_avg_pool2d(out, 1)
            out = out.view(out.size(0), -1)
            dropout_rate = self.cfg["dropout_rate"]
            if self.training and dropout_rate > 0:
                out = F.dropout(out, p=dropout_rate)
            out = self.linear(out)
            return out
    return EfficientNet(cfg, num_classes)


# ---- RegNet ---------------------------------------------------------------------------------

REGNETX_200MF = dict(depths=(1, 1, 4, 7), widths=(24, 56, 152, 368), strides=(1, 1, 2, 2), group_width=8,
                     bottleneck_ratio=1, se_ratio=0)


def regnet(torch, nn, F, depths, widths, strides, group_width, bottleneck_ratio, se_ratio, stem=64, num_classes=10):
    cfg = dict(depths=depths, widths=widths, strides=strides, group_width=group_width,
               bottleneck_ratio=bottleneck_ratio, se_ratio=se_ratio)

    class SE(nn.Module):
        """Squeeze-and-Excitation block."""

        def __init__(self, in_planes, se_planes):
            super().__init__()
            self.se1 = nn.Conv2d(in_planes, se_planes, kernel_size=1, bias=True)
            self.se2 = nn.Conv2d(se_planes, in_planes, kernel_size=1, bias=True)

        def forward(self, x):
            out = F.adaptive_avg_pool2d(x, (1, 1))
            out = F.relu(self.se1(out))
            out = self.se2(out).sigmoid()
            out = x * out
            return out

    class Block(nn.Module):
        def __init__(self, w_in, w_out, stride, group_width, bottleneck_ratio, se_ratio):
            super().__init__()
            # 1x1
            w_b = int(round(w_out * bottleneck_ratio))
            self.conv1 = nn.Conv2d(w_in, w_b, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(w_b)
            # 3x3, grouped
            num_groups = w_b // group_width
            self.conv2 = nn.Conv2d(w_b, w_b, kernel_size=3, stride=stride, padding=1, groups=num_groups, bias=False)
            self.bn2 = nn.BatchNorm2d(w_b)
            # se
            self.with_se = se_ratio > 0
            if self.with_se:
                w_se = int(round(w_in * se_ratio))
                self.se = SE(w_b, w_se)
            # 1x1
            self.conv3 = nn.Conv2d(w_b, w_out, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(w_out)

            self.shortcut = nn.Sequential()
            if stride != 1 or w_in != w_out:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(w_in, w_out, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(w_out))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            if self.with_se:
                out = self.se(out)
            out = self.bn3(self.conv3(out))
            out += self.shortcut(x)
            out = F.relu(out)
            return out

    class RegNet(nn.Module):
        def __init__(self, cfg, num_classes=10):
            super().__init__()
            self.cfg = cfg
            self.in_planes = stem
            self.conv1 = nn.Conv2d(3, stem, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(stem)
            self.layer1 = self._make_layer(0)
            self.layer2 = self._make_layer(1)
            self.layer3 = self._make_layer(2)
            self.layer4 = self._make_layer(3)
            self.linear = nn.Linear(self.cfg["widths"][-1], num_classes)

        def _make_layer(self, idx):
            depth = self.cfg["depths"][idx]
            width = self.cfg["widths"][idx]
            stride = self.cfg["strides"][idx]
            layers = []
            for i in range(depth):
                s = stride if i == 0 else 1
                layers.append(Block(self.in_planes, width, s, self.cfg["group_width"], self.cfg["bottleneck_ratio"],
                                    self.cfg["se_ratio"]))
                self.in_planes = width
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = self.layer4(out)
            out = F.adaptive_avg_pool2d(out, (1, 1))
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return RegNet(cfg, num_classes)


# ---- DLA and SimpleDLA ----------------------------------------------------------------------

def dla_root(torch, nn, F):
    class Root(nn.Module):
        """Aggregates its inputs: concatenation, then a convolution."""

        def __init__(self, in_channels, out_channels, kernel_size=1):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=(kernel_size - 1) // 2,
                                  bias=False)
            self.bn = nn.BatchNorm2d(out_channels)

        def forward(self, xs):
            x = torch.cat(xs, 1)
            out = F.relu(self.bn(self.conv(x)))
            return out
    return Root


def dla_base(nn, widths):
    """DLA's first three layers (3x3 convolutions, BatchNorm, ReLU) to widths[0], widths[1], widths[2]."""
    def conv_bn_relu(in_channels, out_channels):
        return nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(True))
    return conv_bn_relu(3, widths[0]), conv_bn_relu(widths[0], widths[1]), conv_bn_relu(widths[1], widths[2])


def simple_dla(torch, nn, F, widths=(16, 16, 32, 64, 128, 256, 512), levels=(1, 2, 2, 1), num_classes=10):
    BasicBlock, _ = resnet_blocks(torch, nn, F)
    Root = dla_root(torch, nn, F)

    class Tree(nn.Module):
        def __init__(self, block, in_channels, out_channels, level=1, stride=1):
            super().__init__()
            self.root = Root(2 * out_channels, out_channels)
            if level == 1:
                self.left_tree = block(in_channels, out_channels, stride=stride)
                self.right_tree = block(out_channels, out_channels, stride=1)
            else:
                self.left_tree = Tree(block, in_channels, out_channels, level=level - 1, stride=stride)
                self.right_tree = Tree(block, out_channels, out_channels, level=level - 1, stride=1)

        def forward(self, x):
            out1 = self.left_tree(x)
            out2 = self.right_tree(out1)
            out = self.root([out1, out2])
            return out

    class SimpleDLA(nn.Module):
        def __init__(self, block=BasicBlock, num_classes=10):
            super().__init__()
            self.base, self.layer1, self.layer2 = dla_base(nn, widths)
            self.layer3 = Tree(block, widths[2], widths[3], level=levels[0], stride=1)
            self.layer4 = Tree(block, widths[3], widths[4], level=levels[1], stride=2)
            self.layer5 = Tree(block, widths[4], widths[5], level=levels[2], stride=2)
            self.layer6 = Tree(block, widths[5], widths[6], level=levels[3], stride=2)
            self.linear = nn.Linear(widths[6], num_classes)

        def forward(self, x):
            out = self.base(x)
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = self.layer4(out)
            out = self.layer5(out)
            out = self.layer6(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return SimpleDLA(num_classes=num_classes)


def dla(torch, nn, F, widths=(16, 16, 32, 64, 128, 256, 512), levels=(1, 2, 2, 1), num_classes=10):
    BasicBlock, _ = resnet_blocks(torch, nn, F)
    Root = dla_root(torch, nn, F)

    class Tree(nn.Module):
        """Deep layer aggregation: a level-L tree chains subtrees of levels L-1 ... 1 and two blocks, and
        its root aggregates every one of their outputs (and, above level 1, its first block's)."""

        def __init__(self, block, in_channels, out_channels, level=1, stride=1):
            super().__init__()
            self.level = level
            if level == 1:
                self.root = Root(2 * out_channels, out_channels)
                self.left_node = block(in_channels, out_channels, stride=stride)
                self.right_node = block(out_channels, out_channels, stride=1)
            else:
                self.root = Root((level + 2) * out_channels, out_channels)
                for i in reversed(range(1, level)):
                    first = i == level - 1
                    subtree = Tree(block, in_channels if first else out_channels, out_channels, level=i,
                                   stride=stride if first else 1)
                    self.__setattr__("level_%d" % i, subtree)
                self.prev_root = block(in_channels, out_channels, stride=stride)
                self.left_node = block(out_channels, out_channels, stride=1)
                self.right_node = block(out_channels, out_channels, stride=1)

        def forward(self, x):
            xs = [self.prev_root(x)] if self.level > 1 else []
            for i in reversed(range(1, self.level)):
                level_i = getattr(self, "level_%d" % i)
                x = level_i(x)
                xs.append(x)
            x = self.left_node(x)
            xs.append(x)
            x = self.right_node(x)
            xs.append(x)
            out = self.root(xs)
            return out

    class DLA(nn.Module):
        def __init__(self, block=BasicBlock, num_classes=10):
            super().__init__()
            self.base, self.layer1, self.layer2 = dla_base(nn, widths)
            self.layer3 = Tree(block, widths[2], widths[3], level=levels[0], stride=1)
            self.layer4 = Tree(block, widths[3], widths[4], level=levels[1], stride=2)
            self.layer5 = Tree(block, widths[4], widths[5], level=levels[2], stride=2)
            self.layer6 = Tree(block, widths[5], widths[6], level=levels[3], stride=2)
            self.linear = nn.Linear(widths[6], num_classes)

        def forward(self, x):
            out = self.base(x)
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = self.layer4(out)
            out = self.layer5(out)
            out = self.layer6(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out
    return DLA(num_classes=num_classes)


# ---- PNASNet --------------------------------------------------------------------------------

def pnasnet(torch, nn, F, cell="B", num_cells=6, num_planes=32, num_classes=10):
    class SepConv(nn.Module):
        """Separable convolution: each input channel convolved on its own (groups=in_planes)."""

        def __init__(self, in_planes, out_planes, kernel_size, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding=(kernel_size - 1) // 2,
                                   bias=False, groups=in_planes)
            self.bn1 = nn.BatchNorm2d(out_planes)

        def forward(self, x):
            return self.bn1(self.conv1(x))

    class CellA(nn.Module):
        def __init__(self, in_planes, out_planes, stride=1):
            super().__init__()
            self.stride = stride
            self.sep_conv1 = SepConv(in_planes, out_planes, kernel_size=7, stride=stride)
            if stride == 2:
                self.conv1 = nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False)
                self.bn1 = nn.BatchNorm2d(out_planes)

        def forward(self, x):
            y1 = self.sep_conv1(x)
            y2 = F.max_pool2d(x, kernel_size=3, stride=self.stride, padding=1)
            if self.stride == 2:
                y2 = self.bn1(self.conv1(y2))
            return F.relu(y1 + y2)

    class CellB(nn.Module):
        def __init__(self, in_planes, out_planes, stride=1):
            super().__init__()
            self.stride = stride
            # left branch
            self.sep_conv1 = SepConv(in_planes, out_planes, kernel_size=7, stride=stride)
            self.sep_conv2 = SepConv(in_planes, out_planes, kernel_size=3, stride=stride)
            # right branch
            self.sep_conv3 = SepConv(in_planes, out_planes, kernel_size=5, stride=stride)
            if stride == 2:
                self.conv1 = nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False)
                self.bn1 = nn.BatchNorm2d(out_planes)
            # reduce channels
            self.conv2 = nn.Conv2d(2 * out_planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn2 = nn.BatchNorm2d(out_planes)

        def forward(self, x):
            # left branch
            y1 = self.sep_conv1(x)
            y2 = self.sep_conv2(x)
            # right branch
            y3 = F.max_pool2d(x, kernel_size=3, stride=self.stride, padding=1)
            if self.stride == 2:
                y3 = self.bn1(self.conv1(y3))
            y4 = self.sep_conv3(x)
            # concat and reduce channels
            b1 = F.relu(y1 + y2)
            b2 = F.relu(y3 + y4)
            y = torch.cat([b1, b2], 1)
            return F.relu(self.bn2(self.conv2(y)))

    class PNASNet(nn.Module):
        def __init__(self, cell_type, num_cells, num_planes, num_classes=10):
            super().__init__()
            self.in_planes = num_planes
            self.cell_type = cell_type

            self.conv1 = nn.Conv2d(3, num_planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(num_planes)

            self.layer1 = self._make_layer(num_planes, num_cells=num_cells)
            self.layer2 = self._downsample(num_planes * 2)
            self.layer3 = self._make_layer(num_planes * 2, num_cells=num_cells)
            self.layer4 = self._downsample(num_planes * 4)
            self.layer5 = self._make_layer(num_planes * 4, num_cells=num_cells)

            self.linear = nn.Linear(num_planes * 4, num_classes)

        def _make_layer(self, planes, num_cells):
            layers = []
            for _ in range(num_cells):
                layers.append(self.cell_type(self.in_planes, planes, stride=1))
                self.in_planes = planes
            return nn.Sequential(*layers)

        def _downsample(self, planes):
            layer = self.cell_type(self.in_planes, planes, stride=2)
            self.in_planes = planes
            return layer

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = self.layer3(out)
            out = self.layer4(out)
            out = self.layer5(out)
            out = F.avg_pool2d(out, 8)
            out = self.linear(out.view(out.size(0), -1))
            return out
    return PNASNet(CellA if cell == "A" else CellB, num_cells, num_planes, num_classes)


# ---- the zoo --------------------------------------------------------------------------------

class Spec(NamedTuple):
    """A model of the zoo: build(torch, nn, F, **size), at full size (pytorch-cifar's) and reduced
    for the CPU test (tests/test_zoo.py), with the reduced one's image size and what it keeps."""
    build: Callable
    full: dict
    reduced: dict
    image: int  # the reduced model's input height and width (32, or 16 where the network allows)
    reduction: str


ZOO = {
    "LeNet": Spec(lenet, {}, {}, 32, "full size"),
    "VGG19": Spec(vgg, dict(cfg=VGG_CFG["VGG19"]), dict(cfg=[8, "M", 16, "M", 16, "M", 32, "M", 32, "M"]), 32,
                  "5 convolutions of 8-32 channels, 5 max pools"),
    "ResNet18": Spec(resnet, {}, dict(num_blocks=(1, 1, 1, 1), widths=(8, 16, 16, 32)), 32,
                     "one BasicBlock per stage, widths 8-32"),
    "ResNet50": Spec(resnet, dict(block="bottleneck", num_blocks=(3, 4, 6, 3)),
                     dict(block="bottleneck", num_blocks=(1, 1, 1, 1), widths=(4, 4, 8, 8)), 32,
                     "one Bottleneck per stage, widths 4-8 (x4 expansion)"),
    "PreActResNet18": Spec(preact_resnet, {}, dict(num_blocks=(1, 1, 1, 1), widths=(8, 16, 16, 32)), 32,
                           "one block per stage, widths 8-32"),
    "GoogLeNet": Spec(googlenet, {}, dict(stem=8, cells=[(4, 4, 8, 2, 4, 4), "M", (8, 4, 8, 2, 4, 4), "M"]), 32,
                      "2 Inception modules (of 9), 4-8 channels a branch"),
    "DenseNet121": Spec(densenet, dict(nblocks=(6, 12, 24, 16), growth_rate=32),
                        dict(nblocks=(1, 1, 1, 1), growth_rate=4), 32, "one dense layer per stage, growth rate 4"),
    "ResNeXt29_2x64d": Spec(resnext, dict(cardinality=2, bottleneck_width=64),
                            dict(num_blocks=(1, 1, 1), cardinality=4, bottleneck_width=2, stem=8), 32,
                            "one block per stage, cardinality 4, bottleneck width 2"),
    "MobileNet": Spec(mobilenet, {}, dict(cfg=[8, (16, 2), (32, 2), (32, 2), (64, 2)], stem=8), 32,
                      "5 blocks (of 13), widths 8-64"),
    "MobileNetV2": Spec(mobilenet_v2, {}, dict(cfg=[(1, 4, 1, 1), (6, 8, 2, 2), (6, 16, 1, 2), (6, 24, 1, 2)],
                                                stem=8, head=64), 32, "4 stages (of 7), 5 blocks, widths 4-24"),
    "DPN92": Spec(dpn, DPN92, dict(in_planes=(8, 8, 16, 16), out_planes=(8, 16, 16, 32), num_blocks=(2, 1, 1, 1),
                                   dense_depth=(4, 4, 8, 8), groups=4, stem=8), 32,
                  "5 blocks, groups 4, widths 8-32"),
    "ShuffleNetG2": Spec(shufflenet, {}, dict(out_planes=(24, 48, 96), num_blocks=(2, 1, 1), stem=8), 32,
                         "4 blocks, widths 24-96"),
    "ShuffleNetV2": Spec(shufflenet_v2, {}, dict(out_channels=(16, 32, 32, 64), num_blocks=(1, 0, 0), stem=8), 32,
                         "a basic block in the first stage only, widths 8-64"),
    "SENet18": Spec(senet, {}, dict(num_blocks=(1, 1, 1, 1), widths=(16, 16, 32, 32)), 32,
                    "one block per stage, widths 16-32"),
    "EfficientNetB0": Spec(efficientnet, EFFICIENTNET_B0,
                           dict(num_blocks=(1, 2, 1), expansion=(1, 6, 6), out_channels=(4, 8, 16),
                                kernel_size=(3, 3, 5), stride=(1, 2, 2), dropout_rate=0.2, drop_connect_rate=0.2,
                                stem=8), 16, "3 stages (of 7), 4 blocks, widths 4-16"),
    "RegNetX_200MF": Spec(regnet, REGNETX_200MF,
                          dict(REGNETX_200MF, depths=(1, 1, 1, 1), widths=(8, 16, 16, 32), group_width=4, stem=8), 16,
                          "one block per stage, group width 4, widths 8-32"),
    "SimpleDLA": Spec(simple_dla, {}, dict(widths=(4, 4, 4, 4, 8, 16, 32), levels=(1, 1, 1, 1)), 32,
                      "level-1 trees, widths 4-32"),
    "DLA": Spec(dla, {}, dict(widths=(4, 4, 4, 4, 8, 16, 32), levels=(1, 2, 1, 1)), 32,
                "one level-2 tree, widths 4-32"),
    "PNASNetB": Spec(pnasnet, dict(cell="B", num_cells=6, num_planes=32), dict(cell="B", num_cells=1, num_planes=4),
                     32, "one cell per stage, 4-16 channels"),
}


def build(name, library, full=False):
    """The zoo's model `name` built with "torch" or "tnet", at full or reduced size."""
    spec = ZOO[name]
    return spec.build(*lib(library), **(spec.full if full else spec.reduced))
