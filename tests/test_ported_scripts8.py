"""torchvision's and other public ImageNet/CIFAR model files, written from memory in their repositories'
styles as functions of the names a model file imports, `build(torch, nn, F, **size)`, and ported to tnet
by those imports alone (helpers.lib). Each is built in tnet at reduced widths and depths, its initial
weights are copied into the same model in PyTorch float32 and float64 (state_dict), and each trains two
SGD steps (Nesterov, weight decay) on one small batch: tnet's losses, logits, gradients, weight changes
and BatchNorm statistics match float64's within max(1e-4, 10 x PyTorch fp32's own error), at a batch
whose float64 run stays clear of every ReLU and max-pooling kink (helpers.train_beside_torch, as
tests/test_zoo.py). Training mode, unless the test says eval mode (where dropout or stochastic depth
would draw different masks in tnet and torch)."""
import math
from functools import partial

import pytest

from helpers import Side, train_beside_torch


# ---- torchvision/models/alexnet.py and vgg.py --------------------------------------------------

def alexnet(torch, nn, F, width=64, hidden=4096, num_classes=10, dropout=0.5):
    class AlexNet(nn.Module):
        def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
            super().__init__()
            w = width
            self.features = nn.Sequential(
                nn.Conv2d(3, w, kernel_size=11, stride=4, padding=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
                nn.Conv2d(w, 3 * w, kernel_size=5, padding=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
                nn.Conv2d(3 * w, 6 * w, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(6 * w, 4 * w, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(4 * w, 4 * w, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
            )
            self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
            self.classifier = nn.Sequential(
                nn.Dropout(p=dropout),
                nn.Linear(4 * w * 6 * 6, hidden),
                nn.ReLU(inplace=True),
                nn.Dropout(p=dropout),
                nn.Linear(hidden, hidden),
                nn.ReLU(inplace=True),
                nn.Linear(hidden, num_classes),
            )

        def forward(self, x):
            x = self.features(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

    return AlexNet(num_classes=num_classes, dropout=dropout)


def test_alexnet_eval_mode():
    """Eval mode: its dropouts off. The 63-pixel image leaves 1x1 maps that AdaptiveAvgPool2d((6, 6))
    repeats."""
    train_beside_torch("AlexNet", alexnet, dict(width=4, hidden=32), Side((2, 3, 63, 63), train=False))


VGG_CFGS = {  # torchvision's cfgs, each width divided by 16
    "A": [4, "M", 8, "M", 16, 16, "M", 32, 32, "M", 32, 32, "M"],
    "small": [4, "M", 8, "M", 8, 8, "M"],
}


def vgg(torch, nn, F, cfg="small", batch_norm=True, hidden=4096, num_classes=10, dropout=0.5):
    from typing import List, Union, cast

    class VGG(nn.Module):
        def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                     dropout: float = 0.5) -> None:
            super().__init__()
            self.features = features
            self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
            self.classifier = nn.Sequential(
                nn.Linear(VGG_CFGS[cfg][-2] * 7 * 7, hidden),  # torchvision's 512 * 7 * 7
                nn.ReLU(True),
                nn.Dropout(p=dropout),
                nn.Linear(hidden, hidden),
                nn.ReLU(True),
                nn.Dropout(p=dropout),
                nn.Linear(hidden, num_classes),
            )
            if init_weights:
                for m in self.modules():
                    if isinstance(m, nn.Conv2d):
                        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                        if m.bias is not None:
                            nn.init.constant_(m.bias, 0)
                    elif isinstance(m, nn.BatchNorm2d):
                        nn.init.constant_(m.weight, 1)
                        nn.init.constant_(m.bias, 0)
                    elif isinstance(m, nn.Linear):
                        nn.init.normal_(m.weight, 0, 0.01)
                        nn.init.constant_(m.bias, 0)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.features(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

    def make_layers(cfg: List[Union[str, int]], batch_norm: bool = False) -> nn.Sequential:
        layers: List[nn.Module] = []
        in_channels = 3
        for v in cfg:
            if v == "M":
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

    return VGG(make_layers(VGG_CFGS[cfg], batch_norm=batch_norm), num_classes=num_classes, dropout=dropout)


def test_vgg_bn():
    """vgg11_bn's layout cut to three stages: training mode (dropout 0), 2x2 maps that
    AdaptiveAvgPool2d((7, 7)) spreads over overlapping windows."""
    train_beside_torch("VGG-BN", vgg, dict(hidden=32, dropout=0.0), Side((2, 3, 16, 16)))


def test_vgg_eval_mode():
    """vgg11 without BatchNorm in eval mode (dropout 0.5 off), 1x1 maps repeated to 7x7."""
    train_beside_torch("VGG", vgg, dict(cfg="A", batch_norm=False, hidden=32), Side((1, 3, 32, 32), train=False))
