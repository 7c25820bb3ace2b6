"""torchvision's and other public ImageNet/CIFAR model files, written from memory in their repositories'
styles as functions of the names a model file imports, `build(torch, nn, F, **size)`, and ported to tnet
by those imports alone (helpers.lib). Each is built in tnet at reduced widths and depths, its initial
weights are copied into the same model in PyTorch float32 and float64 (state_dict), and each trains two
SGD steps (Nesterov, weight decay) on one small batch: tnet's losses, logits, gradients, weight changes
and BatchNorm statistics match float64's within max(1e-4, 10 x PyTorch fp32's own error), at a batch
whose float64 run stays clear of every ReLU and max-pooling kink (helpers.train_beside_torch, as
tests/test_zoo.py). Training mode, unless the test says eval mode (where dropout or stochastic depth
would draw different masks in tnet and torch). tnet runs with exact fp32 GEMMs (the `ieee` fixture): at its
default tf32 the GPU's errors are 1e-3 to 5e-2."""
import copy
import math
from dataclasses import dataclass
from functools import partial
from typing import Callable, List, Optional, Sequence, Union

import numpy as np
import pytest

import tnet
from helpers import TOL, Side, initial_state, rel_err, train_beside_torch

pytestmark = pytest.mark.usefixtures("ieee")


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


# ---- torchvision/models/inception.py (Inception v3) -----------------------------------------------

def inception_v3(torch, nn, F, div=32, num_classes=10, aux_logits=True, transform_input=True, dropout=0.5,
                 mixed=("5b", "6a", "6b", "7a", "7b")):
    """Inception3 with every width divided by `div`, its stem cut to one 3x3 convolution (as CIFAR
    ports do) and at most one block of each kind: those of `mixed` (Mixed_5b, 6a, 6b, 7a, 7b; the
    others nn.Identity), the aux head after 6b."""
    from collections import namedtuple
    from typing import Callable, List, Optional

    Tensor = torch.Tensor
    InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])

    def c(n):
        return max(1, n // div)

    class BasicConv2d(nn.Module):
        def __init__(self, in_channels: int, out_channels: int, **kwargs) -> None:
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
            self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

        def forward(self, x: Tensor) -> Tensor:
            x = self.conv(x)
            x = self.bn(x)
            return F.relu(x, inplace=True)

    class InceptionA(nn.Module):
        def __init__(self, in_channels: int, pool_features: int,
                     conv_block: Optional[Callable[..., nn.Module]] = None) -> None:
            super().__init__()
            if conv_block is None:
                conv_block = BasicConv2d
            self.branch1x1 = conv_block(in_channels, c(64), kernel_size=1)
            self.branch5x5_1 = conv_block(in_channels, c(48), kernel_size=1)
            self.branch5x5_2 = conv_block(c(48), c(64), kernel_size=5, padding=2)
            self.branch3x3dbl_1 = conv_block(in_channels, c(64), kernel_size=1)
            self.branch3x3dbl_2 = conv_block(c(64), c(96), kernel_size=3, padding=1)
            self.branch3x3dbl_3 = conv_block(c(96), c(96), kernel_size=3, padding=1)
            self.branch_pool = conv_block(in_channels, pool_features, kernel_size=1)

        def _forward(self, x: Tensor) -> List[Tensor]:
            branch1x1 = self.branch1x1(x)
            branch5x5 = self.branch5x5_1(x)
            branch5x5 = self.branch5x5_2(branch5x5)
            branch3x3dbl = self.branch3x3dbl_1(x)
            branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
            branch3x3dbl = self.branch3x3dbl_3(branch3x3dbl)
            branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
            branch_pool = self.branch_pool(branch_pool)
            outputs = [branch1x1, branch5x5, branch3x3dbl, branch_pool]
            return outputs

        def forward(self, x: Tensor) -> Tensor:
            outputs = self._forward(x)
            return torch.cat(outputs, 1)

    class InceptionB(nn.Module):
        def __init__(self, in_channels: int, conv_block=None) -> None:
            super().__init__()
            if conv_block is None:
                conv_block = BasicConv2d
            self.branch3x3 = conv_block(in_channels, c(384), kernel_size=3, stride=2)
            self.branch3x3dbl_1 = conv_block(in_channels, c(64), kernel_size=1)
            self.branch3x3dbl_2 = conv_block(c(64), c(96), kernel_size=3, padding=1)
            self.branch3x3dbl_3 = conv_block(c(96), c(96), kernel_size=3, stride=2)

        def _forward(self, x: Tensor) -> List[Tensor]:
            branch3x3 = self.branch3x3(x)
            branch3x3dbl = self.branch3x3dbl_1(x)
            branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
            branch3x3dbl = self.branch3x3dbl_3(branch3x3dbl)
            branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
            outputs = [branch3x3, branch3x3dbl, branch_pool]
            return outputs

        def forward(self, x: Tensor) -> Tensor:
            outputs = self._forward(x)
            return torch.cat(outputs, 1)

    class InceptionC(nn.Module):
        def __init__(self, in_channels: int, channels_7x7: int, conv_block=None) -> None:
            super().__init__()
            if conv_block is None:
                conv_block = BasicConv2d
            self.branch1x1 = conv_block(in_channels, c(192), kernel_size=1)
            c7 = channels_7x7
            self.branch7x7_1 = conv_block(in_channels, c7, kernel_size=1)
            self.branch7x7_2 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
            self.branch7x7_3 = conv_block(c7, c(192), kernel_size=(7, 1), padding=(3, 0))
            self.branch7x7dbl_1 = conv_block(in_channels, c7, kernel_size=1)
            self.branch7x7dbl_2 = conv_block(c7, c7, kernel_size=(7, 1), padding=(3, 0))
            self.branch7x7dbl_3 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
            self.branch7x7dbl_4 = conv_block(c7, c7, kernel_size=(7, 1), padding=(3, 0))
            self.branch7x7dbl_5 = conv_block(c7, c(192), kernel_size=(1, 7), padding=(0, 3))
            self.branch_pool = conv_block(in_channels, c(192), kernel_size=1)

        def _forward(self, x: Tensor) -> List[Tensor]:
            branch1x1 = self.branch1x1(x)
            branch7x7 = self.branch7x7_1(x)
            branch7x7 = self.branch7x7_2(branch7x7)
            branch7x7 = self.branch7x7_3(branch7x7)
            branch7x7dbl = self.branch7x7dbl_1(x)
            branch7x7dbl = self.branch7x7dbl_2(branch7x7dbl)
            branch7x7dbl = self.branch7x7dbl_3(branch7x7dbl)
            branch7x7dbl = self.branch7x7dbl_4(branch7x7dbl)
            branch7x7dbl = self.branch7x7dbl_5(branch7x7dbl)
            branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
            branch_pool = self.branch_pool(branch_pool)
            outputs = [branch1x1, branch7x7, branch7x7dbl, branch_pool]
            return outputs

        def forward(self, x: Tensor) -> Tensor:
            outputs = self._forward(x)
            return torch.cat(outputs, 1)

    class InceptionD(nn.Module):
        def __init__(self, in_channels: int, conv_block=None) -> None:
            super().__init__()
            if conv_block is None:
                conv_block = BasicConv2d
            self.branch3x3_1 = conv_block(in_channels, c(192), kernel_size=1)
            self.branch3x3_2 = conv_block(c(192), c(320), kernel_size=3, stride=2)
            self.branch7x7x3_1 = conv_block(in_channels, c(192), kernel_size=1)
            self.branch7x7x3_2 = conv_block(c(192), c(192), kernel_size=(1, 7), padding=(0, 3))
            self.branch7x7x3_3 = conv_block(c(192), c(192), kernel_size=(7, 1), padding=(3, 0))
            self.branch7x7x3_4 = conv_block(c(192), c(192), kernel_size=3, stride=2)

        def _forward(self, x: Tensor) -> List[Tensor]:
            branch3x3 = self.branch3x3_1(x)
            branch3x3 = self.branch3x3_2(branch3x3)
            branch7x7x3 = self.branch7x7x3_1(x)
            branch7x7x3 = self.branch7x7x3_2(branch7x7x3)
            branch7x7x3 = self.branch7x7x3_3(branch7x7x3)
            branch7x7x3 = self.branch7x7x3_4(branch7x7x3)
            branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
            outputs = [branch3x3, branch7x7x3, branch_pool]
            return outputs

        def forward(self, x: Tensor) -> Tensor:
            outputs = self._forward(x)
            return torch.cat(outputs, 1)

    class InceptionE(nn.Module):
        def __init__(self, in_channels: int, conv_block=None) -> None:
            super().__init__()
            if conv_block is None:
                conv_block = BasicConv2d
            self.branch1x1 = conv_block(in_channels, c(320), kernel_size=1)
            self.branch3x3_1 = conv_block(in_channels, c(384), kernel_size=1)
            self.branch3x3_2a = conv_block(c(384), c(384), kernel_size=(1, 3), padding=(0, 1))
            self.branch3x3_2b = conv_block(c(384), c(384), kernel_size=(3, 1), padding=(1, 0))
            self.branch3x3dbl_1 = conv_block(in_channels, c(448), kernel_size=1)
            self.branch3x3dbl_2 = conv_block(c(448), c(384), kernel_size=3, padding=1)
            self.branch3x3dbl_3a = conv_block(c(384), c(384), kernel_size=(1, 3), padding=(0, 1))
            self.branch3x3dbl_3b = conv_block(c(384), c(384), kernel_size=(3, 1), padding=(1, 0))
            self.branch_pool = conv_block(in_channels, c(192), kernel_size=1)

        def _forward(self, x: Tensor) -> List[Tensor]:
            branch1x1 = self.branch1x1(x)
            branch3x3 = self.branch3x3_1(x)
            branch3x3 = [self.branch3x3_2a(branch3x3), self.branch3x3_2b(branch3x3)]
            branch3x3 = torch.cat(branch3x3, 1)
            branch3x3dbl = self.branch3x3dbl_1(x)
            branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
            branch3x3dbl = [self.branch3x3dbl_3a(branch3x3dbl), self.branch3x3dbl_3b(branch3x3dbl)]
            branch3x3dbl = torch.cat(branch3x3dbl, 1)
            branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
            branch_pool = self.branch_pool(branch_pool)
            outputs = [branch1x1, branch3x3, branch3x3dbl, branch_pool]
            return outputs

        def forward(self, x: Tensor) -> Tensor:
            outputs = self._forward(x)
            return torch.cat(outputs, 1)

    class InceptionAux(nn.Module):
        def __init__(self, in_channels: int, num_classes: int, conv_block=None) -> None:
            super().__init__()
            if conv_block is None:
                conv_block = BasicConv2d
            self.conv0 = conv_block(in_channels, c(128), kernel_size=1)
            self.conv1 = conv_block(c(128), c(768), kernel_size=5)
            self.conv1.stddev = 0.01  # type: ignore[assignment]
            self.fc = nn.Linear(c(768), num_classes)
            self.fc.stddev = 0.001  # type: ignore[assignment]

        def forward(self, x: Tensor) -> Tensor:
            x = F.avg_pool2d(x, kernel_size=5, stride=3)
            x = self.conv0(x)
            x = self.conv1(x)
            x = F.adaptive_avg_pool2d(x, (1, 1))
            x = torch.flatten(x, 1)
            x = self.fc(x)
            return x

    class Inception3(nn.Module):
        def __init__(self, num_classes: int = 1000, aux_logits: bool = True, transform_input: bool = False,
                     init_weights: Optional[bool] = None, dropout: float = 0.5) -> None:
            super().__init__()
            if init_weights is None:
                init_weights = True
            conv_block = BasicConv2d
            self.aux_logits = aux_logits
            self.transform_input = transform_input
            ch = c(192)
            self.Conv2d_1a_3x3 = conv_block(3, ch, kernel_size=3, padding=1)
            self.Mixed_5b, ch = (InceptionA(ch, pool_features=c(32)), c(64) + c(64) + c(96) + c(32)) if "5b" in mixed \
                else (nn.Identity(), ch)
            self.Mixed_6a, ch = (InceptionB(ch), c(384) + c(96) + ch) if "6a" in mixed else (nn.Identity(), ch)
            self.Mixed_6b, ch = (InceptionC(ch, channels_7x7=c(128)), 4 * c(192)) if "6b" in mixed else (nn.Identity(), ch)
            self.AuxLogits: Optional[nn.Module] = None
            if aux_logits:
                self.AuxLogits = InceptionAux(ch, num_classes)
            self.Mixed_7a, ch = (InceptionD(ch), c(320) + c(192) + ch) if "7a" in mixed else (nn.Identity(), ch)
            self.Mixed_7b, ch = (InceptionE(ch), c(320) + 4 * c(384) + c(192)) if "7b" in mixed else (nn.Identity(), ch)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.dropout = nn.Dropout(p=dropout)
            self.fc = nn.Linear(ch, num_classes)
            if init_weights:
                for m in self.modules():
                    if isinstance(m, nn.Conv2d) or isinstance(m, nn.Linear):
                        stddev = float(m.stddev) if hasattr(m, "stddev") else 0.1  # type: ignore
                        torch.nn.init.trunc_normal_(m.weight, mean=0.0, std=stddev, a=-2, b=2)
                    elif isinstance(m, nn.BatchNorm2d):
                        nn.init.constant_(m.weight, 1)
                        nn.init.constant_(m.bias, 0)

        def _transform_input(self, x: Tensor) -> Tensor:
            if self.transform_input:
                x_ch0 = torch.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
                x_ch1 = torch.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
                x_ch2 = torch.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
                x = torch.cat((x_ch0, x_ch1, x_ch2), 1)
            return x

        def _forward(self, x: Tensor):
            x = self.Conv2d_1a_3x3(x)
            x = self.Mixed_5b(x)
            x = self.Mixed_6a(x)
            x = self.Mixed_6b(x)
            aux: Optional[Tensor] = None
            if self.AuxLogits is not None:
                if self.training:
                    aux = self.AuxLogits(x)
            x = self.Mixed_7a(x)
            x = self.Mixed_7b(x)
            x = self.avgpool(x)
            x = self.dropout(x)
            x = torch.flatten(x, 1)
            x = self.fc(x)
            return x, aux

        @torch.jit.unused
        def eager_outputs(self, x: Tensor, aux: Optional[Tensor]):
            if self.training and self.aux_logits:
                return InceptionOutputs(x, aux)
            else:
                return x  # type: ignore[return-value]

        def forward(self, x: Tensor):
            x = self._transform_input(x)
            x, aux = self._forward(x)
            aux_defined = self.training and self.aux_logits
            if torch.jit.is_scripting():
                return InceptionOutputs(x, aux) if aux_defined else x
            else:
                return self.eager_outputs(x, aux)

    return Inception3(num_classes=num_classes, aux_logits=aux_logits, transform_input=transform_input,
                      dropout=dropout)


def inception_loss(F, outputs, labels):
    """torchvision's reference recipe: the main loss plus 0.4 x the aux head's."""
    if isinstance(outputs, tuple):
        outputs, aux_outputs = outputs
        return F.cross_entropy(outputs, labels) + 0.4 * F.cross_entropy(aux_outputs, labels)
    return F.cross_entropy(outputs, labels)


def test_inception_v3():
    """Training mode (dropout 0): transform_input, the aux head's logits in the loss; Mixed_6a turns
    the 35-pixel images into the 17x17 maps that the aux head's pooling needs."""
    train_beside_torch("Inception v3", inception_v3, dict(div=16, dropout=0.0, mixed=("6a", "6b")),
                       Side((2, 3, 35, 35), loss_fn=inception_loss))


def test_inception_v3_eval_mode():
    """Eval mode: plain logits, dropout 0.5 off; InceptionA, D and E on 15-pixel images."""
    train_beside_torch("Inception v3 (eval)", inception_v3, dict(transform_input=False, mixed=("5b", "7a", "7b")),
                       Side((1, 3, 15, 15), train=False))


# ---- torchvision/models/mnasnet.py ----------------------------------------------------------------

def mnasnet(torch, nn, F, alpha=0.1, repeats=(3, 3, 3, 2, 4, 1), last=1280, num_classes=10, dropout=0.2):
    """MNASNet with torchvision's code; `repeats` (the stacks' depths) and `last` (its 1280) are cut."""
    _BN_MOMENTUM = 1 - 0.9997

    class _InvertedResidual(nn.Module):
        def __init__(self, in_ch: int, out_ch: int, kernel_size: int, stride: int, expansion_factor: int,
                     bn_momentum: float = 0.1) -> None:
            super().__init__()
            if stride not in [1, 2]:
                raise ValueError(f"stride should be 1 or 2 instead of {stride}")
            if kernel_size not in [3, 5]:
                raise ValueError(f"kernel_size should be 3 or 5 instead of {kernel_size}")
            mid_ch = in_ch * expansion_factor
            self.apply_residual = in_ch == out_ch and stride == 1
            self.layers = nn.Sequential(
                # Pointwise
                nn.Conv2d(in_ch, mid_ch, 1, bias=False),
                nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
                nn.ReLU(inplace=True),
                # Depthwise
                nn.Conv2d(mid_ch, mid_ch, kernel_size, padding=kernel_size // 2, stride=stride, groups=mid_ch, bias=False),
                nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
                nn.ReLU(inplace=True),
                # Linear pointwise. Note that there's no activation.
                nn.Conv2d(mid_ch, out_ch, 1, bias=False),
                nn.BatchNorm2d(out_ch, momentum=bn_momentum),
            )

        def forward(self, input):
            if self.apply_residual:
                return self.layers(input) + input
            else:
                return self.layers(input)

    def _stack(in_ch, out_ch, kernel_size, stride, exp_factor, repeats, bn_momentum):
        """Creates a stack of inverted residuals."""
        if repeats < 1:
            raise ValueError(f"repeats should be >= 1, instead got {repeats}")
        # First one has no skip, because feature map size changes.
        first = _InvertedResidual(in_ch, out_ch, kernel_size, stride, exp_factor, bn_momentum=bn_momentum)
        remaining = []
        for _ in range(1, repeats):
            remaining.append(_InvertedResidual(out_ch, out_ch, kernel_size, 1, exp_factor, bn_momentum=bn_momentum))
        return nn.Sequential(first, *remaining)

    def _round_to_multiple_of(val: float, divisor: int, round_up_bias: float = 0.9) -> int:
        """Asymmetric rounding to make `val` divisible by `divisor`."""
        if not 0.0 < round_up_bias < 1.0:
            raise ValueError(f"round_up_bias should be greater than 0.0 and smaller than 1.0 instead of {round_up_bias}")
        new_val = max(divisor, int(val + divisor / 2) // divisor * divisor)
        return new_val if new_val >= round_up_bias * val else new_val + divisor

    def _get_depths(alpha: float) -> List[int]:
        """Scales tensor depths as in reference MobileNet code, prefers rounding up rather than down."""
        depths = [32, 16, 24, 40, 80, 96, 192, 320]
        return [_round_to_multiple_of(depth * alpha, 8) for depth in depths]

    class MNASNet(torch.nn.Module):
        _version = 2

        def __init__(self, alpha: float, num_classes: int = 1000, dropout: float = 0.2) -> None:
            super().__init__()
            if alpha <= 0.0:
                raise ValueError(f"alpha should be greater than 0.0 instead of {alpha}")
            self.alpha = alpha
            self.num_classes = num_classes
            depths = _get_depths(alpha)
            layers = [
                # First layer: regular conv.
                nn.Conv2d(3, depths[0], 3, padding=1, stride=2, bias=False),
                nn.BatchNorm2d(depths[0], momentum=_BN_MOMENTUM),
                nn.ReLU(inplace=True),
                # Depthwise separable, no skip.
                nn.Conv2d(depths[0], depths[0], 3, padding=1, stride=1, groups=depths[0], bias=False),
                nn.BatchNorm2d(depths[0], momentum=_BN_MOMENTUM),
                nn.ReLU(inplace=True),
                nn.Conv2d(depths[0], depths[1], 1, padding=0, stride=1, bias=False),
                nn.BatchNorm2d(depths[1], momentum=_BN_MOMENTUM),
                # MNASNet blocks: stacks of inverted residuals.
                _stack(depths[1], depths[2], 3, 2, 3, repeats[0], _BN_MOMENTUM),
                _stack(depths[2], depths[3], 5, 2, 3, repeats[1], _BN_MOMENTUM),
                _stack(depths[3], depths[4], 5, 2, 6, repeats[2], _BN_MOMENTUM),
                _stack(depths[4], depths[5], 3, 1, 6, repeats[3], _BN_MOMENTUM),
                _stack(depths[5], depths[6], 5, 2, 6, repeats[4], _BN_MOMENTUM),
                _stack(depths[6], depths[7], 3, 1, 6, repeats[5], _BN_MOMENTUM),
                # Final mapping to classifier input.
                nn.Conv2d(depths[7], last, 1, padding=0, stride=1, bias=False),
                nn.BatchNorm2d(last, momentum=_BN_MOMENTUM),
                nn.ReLU(inplace=True),
            ]
            self.layers = nn.Sequential(*layers)
            self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(last, num_classes))

            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Linear):
                    nn.init.kaiming_uniform_(m.weight, mode="fan_out", nonlinearity="sigmoid")
                    nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.layers(x)
            # Equivalent to global avgpool and removing H and W dimensions.
            x = x.mean([2, 3])
            return self.classifier(x)

    return MNASNet(alpha, num_classes=num_classes, dropout=dropout)


def test_mnasnet():
    """Training mode (dropout 0): BatchNorm at momentum 1 - 0.9997; four 16-pixel images, down to
    1x1 maps (at two, a BatchNorm over 1x1 maps outputs +-1 whatever its input, and the gradients
    before it are rounding noise)."""
    train_beside_torch("MNASNet", mnasnet, dict(repeats=(2, 1, 1, 1, 1, 1), last=32, dropout=0.0), Side((4, 3, 16, 16)))


# ---- torchvision/models/efficientnet.py, with torchvision.ops' pieces -----------------------------

def torchvision_ops(torch, nn, F):
    """torchvision.ops.misc's Conv2dNormActivation, SqueezeExcitation and Permute and
    torchvision.ops.stochastic_depth, as torchvision writes them."""

    class ConvNormActivation(torch.nn.Sequential):
        def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None, groups: int = 1,
                     norm_layer: Optional[Callable[..., torch.nn.Module]] = torch.nn.BatchNorm2d,
                     activation_layer: Optional[Callable[..., torch.nn.Module]] = torch.nn.ReLU,
                     dilation=1, inplace: Optional[bool] = True, bias: Optional[bool] = None,
                     conv_layer: Callable[..., torch.nn.Module] = torch.nn.Conv2d) -> None:
            if padding is None:
                if isinstance(kernel_size, int) and isinstance(dilation, int):
                    padding = (kernel_size - 1) // 2 * dilation
                else:
                    _conv_dim = len(kernel_size) if isinstance(kernel_size, Sequence) else len(dilation)
                    kernel_size = (kernel_size,) * _conv_dim if isinstance(kernel_size, int) else kernel_size
                    dilation = (dilation,) * _conv_dim if isinstance(dilation, int) else dilation
                    padding = tuple((kernel_size[i] - 1) // 2 * dilation[i] for i in range(_conv_dim))
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

    class Conv2dNormActivation(ConvNormActivation):
        def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                     norm_layer=torch.nn.BatchNorm2d, activation_layer=torch.nn.ReLU, dilation=1, inplace=True,
                     bias=None) -> None:
            super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                             activation_layer, dilation, inplace, bias, torch.nn.Conv2d)

    class SqueezeExcitation(torch.nn.Module):
        def __init__(self, input_channels: int, squeeze_channels: int,
                     activation: Callable[..., torch.nn.Module] = torch.nn.ReLU,
                     scale_activation: Callable[..., torch.nn.Module] = torch.nn.Sigmoid) -> None:
            super().__init__()
            self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
            self.fc1 = torch.nn.Conv2d(input_channels, squeeze_channels, 1)
            self.fc2 = torch.nn.Conv2d(squeeze_channels, input_channels, 1)
            self.activation = activation()
            self.scale_activation = scale_activation()

        def _scale(self, input):
            scale = self.avgpool(input)
            scale = self.fc1(scale)
            scale = self.activation(scale)
            scale = self.fc2(scale)
            return self.scale_activation(scale)

        def forward(self, input):
            scale = self._scale(input)
            return scale * input

    class Permute(torch.nn.Module):
        def __init__(self, dims: List[int]):
            super().__init__()
            self.dims = dims

        def forward(self, x):
            return torch.permute(x, self.dims)

    def stochastic_depth(input, p: float, mode: str, training: bool = True):
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

        def forward(self, input):
            return stochastic_depth(input, self.p, self.mode, self.training)

        def __repr__(self) -> str:
            return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"

    return Conv2dNormActivation, SqueezeExcitation, Permute, StochasticDepth


def test_stochastic_depth_row_mode_draws_per_sample():
    """torchvision's stochastic_depth in tnet: in training, each sample's rows all kept (scaled by
    1 / survival) or all dropped, the gradient through the same mask; in eval mode the identity."""
    *_, StochasticDepth = torchvision_ops(tnet, tnet.nn, tnet.nn.functional)
    tnet.manual_seed(0)
    layer = StochasticDepth(0.5, "row")
    x = tnet.ones(64, 3, 2, 2, requires_grad=True)
    y = layer(x)
    y.sum().backward()
    rows = y.memory.cpu().numpy().reshape(64, -1)
    assert set(np.unique(rows)) == {0.0, 2.0} and all(len(set(r)) == 1 for r in rows)
    np.testing.assert_array_equal(x.grad.memory.cpu().numpy().reshape(64, -1), rows)
    assert layer.eval()(x) is x


def efficientnet(torch, nn, F, version="b0", width_mult=1.0, depth_mult=1.0, stages=7, last_channel=None,
                 stochastic_depth_prob=0.2, num_classes=10, dropout=0.2):
    """torchvision's EfficientNet: B0's MBConv stages or V2-S's FusedMBConv and MBConv ones, the
    first `stages` of them."""
    Conv2dNormActivation, SqueezeExcitation, _, StochasticDepth = torchvision_ops(torch, nn, F)
    Tensor = torch.Tensor

    def _make_divisible(v: float, divisor: int, min_value: Optional[int] = None) -> int:
        if min_value is None:
            min_value = divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        # Make sure that round down does not go down by more than 10%.
        if new_v < 0.9 * v:
            new_v += divisor
        return new_v

    @dataclass
    class _MBConvConfig:
        expand_ratio: float
        kernel: int
        stride: int
        input_channels: int
        out_channels: int
        num_layers: int
        block: Callable[..., nn.Module]

        @staticmethod
        def adjust_channels(channels: int, width_mult: float, min_value: Optional[int] = None) -> int:
            return _make_divisible(channels * width_mult, 8, min_value)

    class MBConvConfig(_MBConvConfig):
        # Stores information listed at Table 1 of the EfficientNet paper & Table 4 of the EfficientNetV2 paper
        def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                     num_layers: int, width_mult: float = 1.0, depth_mult: float = 1.0,
                     block: Optional[Callable[..., nn.Module]] = None) -> None:
            input_channels = self.adjust_channels(input_channels, width_mult)
            out_channels = self.adjust_channels(out_channels, width_mult)
            num_layers = self.adjust_depth(num_layers, depth_mult)
            if block is None:
                block = MBConv
            super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block)

        @staticmethod
        def adjust_depth(num_layers: int, depth_mult: float):
            return int(math.ceil(num_layers * depth_mult))

    class FusedMBConvConfig(_MBConvConfig):
        # Stores information listed at Table 4 of the EfficientNetV2 paper
        def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                     num_layers: int, block: Optional[Callable[..., nn.Module]] = None) -> None:
            if block is None:
                block = FusedMBConv
            super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block)

    class MBConv(nn.Module):
        def __init__(self, cnf: MBConvConfig, stochastic_depth_prob: float, norm_layer: Callable[..., nn.Module],
                     se_layer: Callable[..., nn.Module] = SqueezeExcitation) -> None:
            super().__init__()
            if not (1 <= cnf.stride <= 2):
                raise ValueError("illegal stride value")
            self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
            layers: List[nn.Module] = []
            activation_layer = nn.SiLU
            # expand
            expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
            if expanded_channels != cnf.input_channels:
                layers.append(Conv2dNormActivation(cnf.input_channels, expanded_channels, kernel_size=1,
                                                   norm_layer=norm_layer, activation_layer=activation_layer))
            # depthwise
            layers.append(Conv2dNormActivation(expanded_channels, expanded_channels, kernel_size=cnf.kernel,
                                               stride=cnf.stride, groups=expanded_channels, norm_layer=norm_layer,
                                               activation_layer=activation_layer))
            # squeeze and excitation
            squeeze_channels = max(1, cnf.input_channels // 4)
            layers.append(se_layer(expanded_channels, squeeze_channels, activation=partial(nn.SiLU, inplace=True)))
            # project
            layers.append(Conv2dNormActivation(expanded_channels, cnf.out_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=None))
            self.block = nn.Sequential(*layers)
            self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
            self.out_channels = cnf.out_channels

        def forward(self, input: Tensor) -> Tensor:
            result = self.block(input)
            if self.use_res_connect:
                result = self.stochastic_depth(result)
                result += input
            return result

    class FusedMBConv(nn.Module):
        def __init__(self, cnf: FusedMBConvConfig, stochastic_depth_prob: float,
                     norm_layer: Callable[..., nn.Module]) -> None:
            super().__init__()
            if not (1 <= cnf.stride <= 2):
                raise ValueError("illegal stride value")
            self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
            layers: List[nn.Module] = []
            activation_layer = nn.SiLU
            expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
            if expanded_channels != cnf.input_channels:
                # fused expand
                layers.append(Conv2dNormActivation(cnf.input_channels, expanded_channels, kernel_size=cnf.kernel,
                                                   stride=cnf.stride, norm_layer=norm_layer,
                                                   activation_layer=activation_layer))
                # project
                layers.append(Conv2dNormActivation(expanded_channels, cnf.out_channels, kernel_size=1,
                                                   norm_layer=norm_layer, activation_layer=None))
            else:
                layers.append(Conv2dNormActivation(cnf.input_channels, cnf.out_channels, kernel_size=cnf.kernel,
                                                   stride=cnf.stride, norm_layer=norm_layer,
                                                   activation_layer=activation_layer))
            self.block = nn.Sequential(*layers)
            self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
            self.out_channels = cnf.out_channels

        def forward(self, input: Tensor) -> Tensor:
            result = self.block(input)
            if self.use_res_connect:
                result = self.stochastic_depth(result)
                result += input
            return result

    class EfficientNet(nn.Module):
        def __init__(self, inverted_residual_setting: Sequence[Union[MBConvConfig, FusedMBConvConfig]],
                     dropout: float, stochastic_depth_prob: float = 0.2, num_classes: int = 1000,
                     norm_layer: Optional[Callable[..., nn.Module]] = None, last_channel: Optional[int] = None) -> None:
            super().__init__()
            if not inverted_residual_setting:
                raise ValueError("The inverted_residual_setting should not be empty")
            elif not (isinstance(inverted_residual_setting, Sequence)
                      and all([isinstance(s, _MBConvConfig) for s in inverted_residual_setting])):
                raise TypeError("The inverted_residual_setting should be List[MBConvConfig]")
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            layers: List[nn.Module] = []
            # building first layer
            firstconv_output_channels = inverted_residual_setting[0].input_channels
            layers.append(Conv2dNormActivation(3, firstconv_output_channels, kernel_size=3, stride=2,
                                               norm_layer=norm_layer, activation_layer=nn.SiLU))
            # building inverted residual blocks
            total_stage_blocks = sum(cnf.num_layers for cnf in inverted_residual_setting)
            stage_block_id = 0
            for cnf in inverted_residual_setting:
                stage: List[nn.Module] = []
                for _ in range(cnf.num_layers):
                    # copy to avoid modifications. shallow copy is enough
                    block_cnf = copy.copy(cnf)
                    # overwrite info if not the first conv in the stage
                    if stage:
                        block_cnf.input_channels = block_cnf.out_channels
                        block_cnf.stride = 1
                    # adjust stochastic depth probability based on the depth of the stage block
                    sd_prob = stochastic_depth_prob * float(stage_block_id) / total_stage_blocks
                    stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer))
                    stage_block_id += 1
                layers.append(nn.Sequential(*stage))
            # building last several layers
            lastconv_input_channels = inverted_residual_setting[-1].out_channels
            lastconv_output_channels = last_channel if last_channel is not None else 4 * lastconv_input_channels
            layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=nn.SiLU))
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                            nn.Linear(lastconv_output_channels, num_classes))
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out")
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
                elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Linear):
                    init_range = 1.0 / math.sqrt(m.out_features)
                    nn.init.uniform_(m.weight, -init_range, init_range)
                    nn.init.zeros_(m.bias)

        def _forward_impl(self, x: Tensor) -> Tensor:
            x = self.features(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

        def forward(self, x: Tensor) -> Tensor:
            return self._forward_impl(x)

    norm_layer = None
    if version == "b0":
        bneck_conf = partial(MBConvConfig, width_mult=width_mult, depth_mult=depth_mult)
        setting = [bneck_conf(1, 3, 1, 32, 16, 1), bneck_conf(6, 3, 2, 16, 24, 2), bneck_conf(6, 5, 2, 24, 40, 2),
                   bneck_conf(6, 3, 2, 40, 80, 3), bneck_conf(6, 5, 1, 80, 112, 3), bneck_conf(6, 5, 2, 112, 192, 4),
                   bneck_conf(6, 3, 1, 192, 320, 1)]
    else:  # v2_s, its widths divided by 4 as width_mult would
        setting = [FusedMBConvConfig(1, 3, 1, 8, 8, 2), FusedMBConvConfig(4, 3, 2, 8, 12, 4),
                   FusedMBConvConfig(4, 3, 2, 12, 16, 4), MBConvConfig(4, 3, 2, 16, 32, 6),
                   MBConvConfig(6, 3, 1, 32, 40, 9), MBConvConfig(6, 3, 2, 40, 64, 15)]
        norm_layer = partial(nn.BatchNorm2d, eps=1e-03)
    return EfficientNet(setting[:stages], dropout, stochastic_depth_prob, num_classes, norm_layer, last_channel)


def test_efficientnet_b0():
    """Training mode (dropout and stochastic depth 0): B0's first three MBConv stages at width 0.25
    and one block each (depth 0.1), SiLU, squeeze-excite, uniform_ init on the head."""
    train_beside_torch("EfficientNet-B0", efficientnet, dict(width_mult=0.25, depth_mult=0.1, stages=3, last_channel=32,
                                                             stochastic_depth_prob=0.0, dropout=0.0), Side((2, 3, 16, 16)))


def test_efficientnet_v2_eval_mode():
    """Eval mode: stochastic depth 0.2 and dropout off; V2-S's first two stages, FusedMBConv with and
    without expansion (the residual through StochasticDepth), BatchNorm eps 1e-3."""
    train_beside_torch("EfficientNet-V2", efficientnet, dict(version="v2_s", stages=2, last_channel=32),
                       Side((1, 3, 16, 16), train=False))


# ---- torchvision/models/convnext.py -----------------------------------------------------------------

def convnext(torch, nn, F, dims=(96, 192, 384, 768), depths=(3, 3, 9, 3), stochastic_depth_prob=0.0,
             layer_scale=1e-6, num_classes=10):
    """torchvision's ConvNeXt over the block setting of `dims` and `depths` (convnext_tiny's by default)."""
    Conv2dNormActivation, _, Permute, StochasticDepth = torchvision_ops(torch, nn, F)
    Tensor = torch.Tensor

    class LayerNorm2d(nn.LayerNorm):
        def forward(self, x: Tensor) -> Tensor:
            x = x.permute(0, 2, 3, 1)
            x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
            x = x.permute(0, 3, 1, 2)
            return x

    class CNBlock(nn.Module):
        def __init__(self, dim, layer_scale: float, stochastic_depth_prob: float,
                     norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
            super().__init__()
            if norm_layer is None:
                norm_layer = partial(nn.LayerNorm, eps=1e-6)
            self.block = nn.Sequential(
                nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
                Permute([0, 2, 3, 1]),
                norm_layer(dim),
                nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
                nn.GELU(),
                nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
                Permute([0, 3, 1, 2]),
            )
            self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale)
            self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

        def forward(self, input: Tensor) -> Tensor:
            result = self.layer_scale * self.block(input)
            result = self.stochastic_depth(result)
            result += input
            return result

    class CNBlockConfig:
        # Stores information listed at Section 3 of the ConvNeXt paper
        def __init__(self, input_channels: int, out_channels: Optional[int], num_layers: int) -> None:
            self.input_channels = input_channels
            self.out_channels = out_channels
            self.num_layers = num_layers

    class ConvNeXt(nn.Module):
        def __init__(self, block_setting: List[CNBlockConfig], stochastic_depth_prob: float = 0.0,
                     layer_scale: float = 1e-6, num_classes: int = 1000,
                     block: Optional[Callable[..., nn.Module]] = None,
                     norm_layer: Optional[Callable[..., nn.Module]] = None, **kwargs) -> None:
            super().__init__()
            if not block_setting:
                raise ValueError("The block_setting should not be empty")
            if block is None:
                block = CNBlock
            if norm_layer is None:
                norm_layer = partial(LayerNorm2d, eps=1e-6)
            layers: List[nn.Module] = []
            # Stem
            firstconv_output_channels = block_setting[0].input_channels
            layers.append(Conv2dNormActivation(3, firstconv_output_channels, kernel_size=4, stride=4, padding=0,
                                               norm_layer=norm_layer, activation_layer=None, bias=True))
            total_stage_blocks = sum(cnf.num_layers for cnf in block_setting)
            stage_block_id = 0
            for cnf in block_setting:
                # Bottlenecks
                stage: List[nn.Module] = []
                for _ in range(cnf.num_layers):
                    # adjust stochastic depth probability based on the depth of the stage block
                    sd_prob = stochastic_depth_prob * stage_block_id / (total_stage_blocks - 1.0)
                    stage.append(block(cnf.input_channels, layer_scale, sd_prob))
                    stage_block_id += 1
                layers.append(nn.Sequential(*stage))
                if cnf.out_channels is not None:
                    # Downsampling
                    layers.append(nn.Sequential(norm_layer(cnf.input_channels),
                                                nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2)))
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            lastblock = block_setting[-1]
            lastconv_output_channels = (lastblock.out_channels if lastblock.out_channels is not None
                                        else lastblock.input_channels)
            self.classifier = nn.Sequential(norm_layer(lastconv_output_channels), nn.Flatten(1),
                                            nn.Linear(lastconv_output_channels, num_classes))
            for m in self.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.trunc_normal_(m.weight, std=0.02)
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)

        def _forward_impl(self, x: Tensor) -> Tensor:
            x = self.features(x)
            x = self.avgpool(x)
            x = self.classifier(x)
            return x

        def forward(self, x: Tensor) -> Tensor:
            return self._forward_impl(x)

    block_setting = [CNBlockConfig(d, dims[i + 1] if i + 1 < len(dims) else None, n)
                     for i, (d, n) in enumerate(zip(dims, depths))]
    return ConvNeXt(block_setting, stochastic_depth_prob=stochastic_depth_prob, layer_scale=layer_scale,
                    num_classes=num_classes)


def test_convnext():
    """Training mode (stochastic depth 0), convnext_tiny's layout cut to two stages of widths 8
    and 16; layer_scale 0.5 rather than 1e-6, so that the blocks weigh in the logits."""
    train_beside_torch("ConvNeXt", convnext, dict(dims=(8, 16), depths=(2, 1), layer_scale=0.5), Side((2, 3, 16, 16)))


def test_convnext_eval_mode():
    """Eval mode: stochastic depth 0.1 off, torchvision's layer_scale 1e-6."""
    train_beside_torch("ConvNeXt (eval)", convnext, dict(dims=(8, 16), depths=(1, 1), stochastic_depth_prob=0.1),
                       Side((1, 3, 16, 16), train=False))


# ---- torchvision/models/swin_transformer.py (v1) ---------------------------------------------------

def swin_t(torch, nn, F, patch_size=(4, 4), embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24),
           window_size=(7, 7), stochastic_depth_prob=0.2, num_classes=10):
    """torchvision's SwinTransformer (v1: PatchMerging, ShiftedWindowAttention), swin_t's by default."""
    _, _, Permute, StochasticDepth = torchvision_ops(torch, nn, F)
    Tensor = torch.Tensor

    class MLP(torch.nn.Sequential):
        def __init__(self, in_channels: int, hidden_channels: List[int], norm_layer=None,
                     activation_layer=torch.nn.ReLU, inplace: Optional[bool] = None, bias: bool = True,
                     dropout: float = 0.0):
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

    def _patch_merging_pad(x: Tensor) -> Tensor:
        H, W, _ = x.shape[-3:]
        x = F.pad(x, (0, 0, 0, W % 2, 0, H % 2))
        x0 = x[..., 0::2, 0::2, :]  # ... H/2 W/2 C
        x1 = x[..., 1::2, 0::2, :]  # ... H/2 W/2 C
        x2 = x[..., 0::2, 1::2, :]  # ... H/2 W/2 C
        x3 = x[..., 1::2, 1::2, :]  # ... H/2 W/2 C
        x = torch.cat([x0, x1, x2, x3], -1)  # ... H/2 W/2 4*C
        return x

    class PatchMerging(nn.Module):
        def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm):
            super().__init__()
            self.dim = dim
            self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
            self.norm = norm_layer(4 * dim)

        def forward(self, x: Tensor):
            x = _patch_merging_pad(x)
            x = self.norm(x)
            x = self.reduction(x)  # ... H/2 W/2 2*C
            return x

    def _get_relative_position_bias(relative_position_bias_table: Tensor, relative_position_index: Tensor,
                                    window_size: List[int]) -> Tensor:
        N = window_size[0] * window_size[1]
        relative_position_bias = relative_position_bias_table[relative_position_index]  # type: ignore[index]
        relative_position_bias = relative_position_bias.view(N, N, -1)
        relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous().unsqueeze(0)
        return relative_position_bias

    def shifted_window_attention(input: Tensor, qkv_weight: Tensor, proj_weight: Tensor,
                                 relative_position_bias: Tensor, window_size: List[int], num_heads: int,
                                 shift_size: List[int], attention_dropout: float = 0.0, dropout: float = 0.0,
                                 qkv_bias: Optional[Tensor] = None, proj_bias: Optional[Tensor] = None,
                                 logit_scale: Optional[torch.Tensor] = None, training: bool = True) -> Tensor:
        B, H, W, C = input.shape
        # pad feature maps to multiples of window size
        pad_r = (window_size[1] - W % window_size[1]) % window_size[1]
        pad_b = (window_size[0] - H % window_size[0]) % window_size[0]
        x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
        _, pad_H, pad_W, _ = x.shape

        shift_size = shift_size.copy()
        # If window size is larger than feature size, there is no need to shift window
        if window_size[0] >= pad_H:
            shift_size[0] = 0
        if window_size[1] >= pad_W:
            shift_size[1] = 0

        # cyclic shift
        if sum(shift_size) > 0:
            x = torch.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))

        # partition windows
        num_windows = (pad_H // window_size[0]) * (pad_W // window_size[1])
        x = x.view(B, pad_H // window_size[0], window_size[0], pad_W // window_size[1], window_size[1], C)
        x = x.permute(0, 1, 3, 2, 4, 5).reshape(B * num_windows, window_size[0] * window_size[1], C)  # B*nW, Ws*Ws, C

        # multi-head attention
        if logit_scale is not None and qkv_bias is not None:
            qkv_bias = qkv_bias.clone()
            length = qkv_bias.numel() // 3
            qkv_bias[length: 2 * length].zero_()
        qkv = F.linear(x, qkv_weight, qkv_bias)
        qkv = qkv.reshape(x.size(0), x.size(1), 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if logit_scale is not None:
            # cosine attention
            attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
            logit_scale = torch.clamp(logit_scale, max=math.log(100.0)).exp()
            attn = attn * logit_scale
        else:
            q = q * (C // num_heads) ** -0.5
            attn = q.matmul(k.transpose(-2, -1))
        # add relative position bias
        attn = attn + relative_position_bias

        if sum(shift_size) > 0:
            # generate attention mask
            attn_mask = x.new_zeros((pad_H, pad_W))
            h_slices = ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None))
            w_slices = ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None))
            count = 0
            for h in h_slices:
                for w in w_slices:
                    attn_mask[h[0]: h[1], w[0]: w[1]] = count
                    count += 1
            attn_mask = attn_mask.view(pad_H // window_size[0], window_size[0], pad_W // window_size[1], window_size[1])
            attn_mask = attn_mask.permute(0, 2, 1, 3).reshape(num_windows, window_size[0] * window_size[1])
            attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))
            attn = attn.view(x.size(0) // num_windows, num_windows, num_heads, x.size(1), x.size(1))
            attn = attn + attn_mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, num_heads, x.size(1), x.size(1))

        attn = F.softmax(attn, dim=-1)
        attn = F.dropout(attn, p=attention_dropout, training=training)

        x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), C)
        x = F.linear(x, proj_weight, proj_bias)
        x = F.dropout(x, p=dropout, training=training)

        # reverse windows
        x = x.view(B, pad_H // window_size[0], pad_W // window_size[1], window_size[0], window_size[1], C)
        x = x.permute(0, 1, 3, 2, 4, 5).reshape(B, pad_H, pad_W, C)

        # reverse cyclic shift
        if sum(shift_size) > 0:
            x = torch.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))

        # unpad features
        x = x[:, :H, :W, :].contiguous()
        return x

    class ShiftedWindowAttention(nn.Module):
        def __init__(self, dim: int, window_size: List[int], shift_size: List[int], num_heads: int,
                     qkv_bias: bool = True, proj_bias: bool = True, attention_dropout: float = 0.0,
                     dropout: float = 0.0):
            super().__init__()
            if len(window_size) != 2 or len(shift_size) != 2:
                raise ValueError("window_size and shift_size must be of length 2")
            self.window_size = window_size
            self.shift_size = shift_size
            self.num_heads = num_heads
            self.attention_dropout = attention_dropout
            self.dropout = dropout
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.proj = nn.Linear(dim, dim, bias=proj_bias)
            self.define_relative_position_bias_table()
            self.define_relative_position_index()

        def define_relative_position_bias_table(self):
            # define a parameter table of relative position bias
            self.relative_position_bias_table = nn.Parameter(
                torch.zeros((2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1), self.num_heads))  # 2*Wh-1 * 2*Ww-1, nH
            nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

        def define_relative_position_index(self):
            # get pair-wise relative position index for each token inside the window
            coords_h = torch.arange(self.window_size[0])
            coords_w = torch.arange(self.window_size[1])
            coords = torch.stack(torch.meshgrid(coords_h, coords_w, indexing="ij"))  # 2, Wh, Ww
            coords_flatten = torch.flatten(coords, 1)  # 2, Wh*Ww
            relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]  # 2, Wh*Ww, Wh*Ww
            relative_coords = relative_coords.permute(1, 2, 0).contiguous()  # Wh*Ww, Wh*Ww, 2
            relative_coords[:, :, 0] += self.window_size[0] - 1  # shift to start from 0
            relative_coords[:, :, 1] += self.window_size[1] - 1
            relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
            relative_position_index = relative_coords.sum(-1).flatten()  # Wh*Ww*Wh*Ww
            self.register_buffer("relative_position_index", relative_position_index)

        def get_relative_position_bias(self) -> torch.Tensor:
            return _get_relative_position_bias(self.relative_position_bias_table, self.relative_position_index,
                                               self.window_size)  # type: ignore[arg-type]

        def forward(self, x: Tensor) -> Tensor:
            relative_position_bias = self.get_relative_position_bias()
            return shifted_window_attention(x, self.qkv.weight, self.proj.weight, relative_position_bias,
                                            self.window_size, self.num_heads, shift_size=self.shift_size,
                                            attention_dropout=self.attention_dropout, dropout=self.dropout,
                                            qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, training=self.training)

    class SwinTransformerBlock(nn.Module):
        def __init__(self, dim: int, num_heads: int, window_size: List[int], shift_size: List[int],
                     mlp_ratio: float = 4.0, dropout: float = 0.0, attention_dropout: float = 0.0,
                     stochastic_depth_prob: float = 0.0, norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
                     attn_layer: Callable[..., nn.Module] = ShiftedWindowAttention):
            super().__init__()
            self.norm1 = norm_layer(dim)
            self.attn = attn_layer(dim, window_size, shift_size, num_heads, attention_dropout=attention_dropout,
                                   dropout=dropout)
            self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
            self.norm2 = norm_layer(dim)
            self.mlp = MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
            for m in self.mlp.modules():
                if isinstance(m, nn.Linear):
                    nn.init.xavier_uniform_(m.weight)
                    if m.bias is not None:
                        nn.init.normal_(m.bias, std=1e-6)

        def forward(self, x: Tensor):
            x = x + self.stochastic_depth(self.attn(self.norm1(x)))
            x = x + self.stochastic_depth(self.mlp(self.norm2(x)))
            return x

    class SwinTransformer(nn.Module):
        def __init__(self, patch_size: List[int], embed_dim: int, depths: List[int], num_heads: List[int],
                     window_size: List[int], mlp_ratio: float = 4.0, dropout: float = 0.0,
                     attention_dropout: float = 0.0, stochastic_depth_prob: float = 0.1, num_classes: int = 1000,
                     norm_layer: Optional[Callable[..., nn.Module]] = None,
                     block: Optional[Callable[..., nn.Module]] = None,
                     downsample_layer: Callable[..., nn.Module] = PatchMerging):
            super().__init__()
            self.num_classes = num_classes
            if block is None:
                block = SwinTransformerBlock
            if norm_layer is None:
                norm_layer = partial(nn.LayerNorm, eps=1e-5)
            layers: List[nn.Module] = []
            # split image into non-overlapping patches
            layers.append(nn.Sequential(
                nn.Conv2d(3, embed_dim, kernel_size=(patch_size[0], patch_size[1]),
                          stride=(patch_size[0], patch_size[1])),
                Permute([0, 2, 3, 1]),
                norm_layer(embed_dim)))
            total_stage_blocks = sum(depths)
            stage_block_id = 0
            # build SwinTransformer blocks
            for i_stage in range(len(depths)):
                stage: List[nn.Module] = []
                dim = embed_dim * 2 ** i_stage
                for i_layer in range(depths[i_stage]):
                    # adjust stochastic depth probability based on the depth of the stage block
                    sd_prob = stochastic_depth_prob * float(stage_block_id) / (total_stage_blocks - 1)
                    stage.append(block(dim, num_heads[i_stage], window_size=window_size,
                                       shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                                       mlp_ratio=mlp_ratio, dropout=dropout, attention_dropout=attention_dropout,
                                       stochastic_depth_prob=sd_prob, norm_layer=norm_layer))
                    stage_block_id += 1
                layers.append(nn.Sequential(*stage))
                # add patch merging layer
                if i_stage < (len(depths) - 1):
                    layers.append(downsample_layer(dim, norm_layer))
            self.features = nn.Sequential(*layers)
            num_features = embed_dim * 2 ** (len(depths) - 1)
            self.norm = norm_layer(num_features)
            self.permute = Permute([0, 3, 1, 2])  # B H W C -> B C H W
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.flatten = nn.Flatten(1)
            self.head = nn.Linear(num_features, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    nn.init.trunc_normal_(m.weight, std=0.02)
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.features(x)
            x = self.norm(x)
            x = self.permute(x)
            x = self.avgpool(x)
            x = self.flatten(x)
            x = self.head(x)
            return x

    return SwinTransformer(list(patch_size), embed_dim, list(depths), list(num_heads), list(window_size),
                           stochastic_depth_prob=stochastic_depth_prob, num_classes=num_classes)


def test_swin_t():
    """Training mode (stochastic depth 0): 14-pixel images in 2x2 patches, 7x7 maps padded to the
    4x4 windows, the second block's shifted windows with their mask, PatchMerging's pad of the odd map,
    a second stage whose window covers its map (no shift)."""
    train_beside_torch("Swin-T", swin_t, dict(patch_size=(2, 2), embed_dim=8, depths=(2, 1), num_heads=(2, 4),
                                              window_size=(4, 4), stochastic_depth_prob=0.0), Side((2, 3, 14, 14)))


def test_swin_t_eval_mode():
    """Eval mode: stochastic depth 0.2 off."""
    train_beside_torch("Swin-T (eval)", swin_t, dict(patch_size=(2, 2), embed_dim=8, depths=(2,), num_heads=(2,),
                                                     window_size=(4, 4)), Side((1, 3, 16, 16), train=False))


# ---- weiaicunzai/pytorch-cifar100: NASNet-A, Attention-56, stochastic-depth ResNet, SqueezeNet --------

def nasnet(torch, nn, F, repeat_cell_num=4, reduction_num=2, filters=44, stemfilter=44, class_num=10):
    """models/nasnet.py: separable branches, cells that concatenate them, Fit's ConstantPad2d pair
    that shifts the previous cell's map by a pixel (a negative pad crops) before a strided 1x1 pool."""

    class SeperableConv2d(nn.Module):
        def __init__(self, input_channels, output_channels, kernel_size, **kwargs):
            super().__init__()
            self.depthwise = nn.Conv2d(input_channels, input_channels, kernel_size, groups=input_channels, **kwargs)
            self.pointwise = nn.Conv2d(input_channels, output_channels, 1)

        def forward(self, x):
            x = self.depthwise(x)
            x = self.pointwise(x)
            return x

    class SeperableBranch(nn.Module):
        def __init__(self, input_channels, output_channels, kernel_size, **kwargs):
            """Adds 2 blocks of [relu-separable conv-batchnorm]."""
            super().__init__()
            self.block1 = nn.Sequential(nn.ReLU(), SeperableConv2d(input_channels, output_channels, kernel_size, **kwargs),
                                        nn.BatchNorm2d(output_channels))
            self.block2 = nn.Sequential(nn.ReLU(), SeperableConv2d(output_channels, output_channels, kernel_size, stride=1,
                                                                   padding=int(kernel_size / 2)),
                                        nn.BatchNorm2d(output_channels))

        def forward(self, x):
            x = self.block1(x)
            x = self.block2(x)
            return x

    class Fit(nn.Module):
        """Make the cell outputs compatible"""

        def __init__(self, prev_filters, filters):
            super().__init__()
            self.relu = nn.ReLU()
            self.p1 = nn.Sequential(nn.AvgPool2d(1, stride=2), nn.Conv2d(prev_filters, int(filters / 2), 1))
            # make sure there is no information loss
            self.p2 = nn.Sequential(nn.ConstantPad2d((0, 1, 0, 1), 0), nn.ConstantPad2d((-1, 0, -1, 0), 0),  # cropping
                                    nn.AvgPool2d(1, stride=2), nn.Conv2d(prev_filters, int(filters / 2), 1))
            self.bn = nn.BatchNorm2d(filters)
            self.dim_reduce = nn.Sequential(nn.ReLU(), nn.Conv2d(prev_filters, filters, 1), nn.BatchNorm2d(filters))
            self.filters = filters

        def forward(self, inputs):
            x, prev = inputs
            if prev is None:
                return x
            # image size does not match
            elif x.size(2) != prev.size(2):
                prev = self.relu(prev)
                p1 = self.p1(prev)
                p2 = self.p2(prev)
                prev = torch.cat([p1, p2], 1)
                prev = self.bn(prev)
            elif prev.size(1) != self.filters:
                prev = self.dim_reduce(prev)
            return prev

    class NormalCell(nn.Module):
        def __init__(self, x_in, prev_in, output_channels):
            super().__init__()
            self.dem_reduce = nn.Sequential(nn.ReLU(), nn.Conv2d(x_in, output_channels, 1, bias=False),
                                            nn.BatchNorm2d(output_channels))
            self.block1_left = SeperableBranch(output_channels, output_channels, kernel_size=3, padding=1, bias=False)
            self.block1_right = nn.Sequential()
            self.block2_left = SeperableBranch(output_channels, output_channels, kernel_size=3, padding=1, bias=False)
            self.block2_right = SeperableBranch(output_channels, output_channels, kernel_size=5, padding=2, bias=False)
            self.block3_left = nn.AvgPool2d(3, stride=1, padding=1)
            self.block3_right = nn.Sequential()
            self.block4_left = nn.AvgPool2d(3, stride=1, padding=1)
            self.block4_right = nn.AvgPool2d(3, stride=1, padding=1)
            self.block5_left = SeperableBranch(output_channels, output_channels, kernel_size=5, padding=2, bias=False)
            self.block5_right = SeperableBranch(output_channels, output_channels, kernel_size=3, padding=1, bias=False)
            self.fit = Fit(prev_in, output_channels)

        def forward(self, x):
            x, prev = x
            # return transformed x as new x, and original x as prev
            # only prev tensor needs to be modified
            prev = self.fit((x, prev))
            h = self.dem_reduce(x)
            x1 = self.block1_left(h) + self.block1_right(h)
            x2 = self.block2_left(prev) + self.block2_right(h)
            x3 = self.block3_left(h) + self.block3_right(h)
            x4 = self.block4_left(prev) + self.block4_right(prev)
            x5 = self.block5_left(prev) + self.block5_right(prev)
            return torch.cat([prev, x1, x2, x3, x4, x5], 1), x

    class ReductionCell(nn.Module):
        def __init__(self, x_in, prev_in, output_channels):
            super().__init__()
            self.dim_reduce = nn.Sequential(nn.ReLU(), nn.Conv2d(x_in, output_channels, 1),
                                            nn.BatchNorm2d(output_channels))
            # block1
            self.layer1block1_left = SeperableBranch(output_channels, output_channels, 7, stride=2, padding=3)
            self.layer1block1_right = SeperableBranch(output_channels, output_channels, 5, stride=2, padding=2)
            # block2
            self.layer1block2_left = nn.MaxPool2d(3, stride=2, padding=1)
            self.layer1block2_right = SeperableBranch(output_channels, output_channels, 7, stride=2, padding=3)
            # block3
            self.layer1block3_left = nn.AvgPool2d(3, 2, 1)
            self.layer1block3_right = SeperableBranch(output_channels, output_channels, 5, stride=2, padding=2)
            # block5
            self.layer2block1_left = nn.MaxPool2d(3, 2, 1)
            self.layer2block1_right = SeperableBranch(output_channels, output_channels, 3, stride=1, padding=1)
            # block4
            self.layer2block2_left = nn.AvgPool2d(3, 1, 1)
            self.layer2block2_right = nn.Sequential()
            self.fit = Fit(prev_in, output_channels)

        def forward(self, x):
            x, prev = x
            prev = self.fit((x, prev))
            h = self.dim_reduce(x)
            layer1block1 = self.layer1block1_left(prev) + self.layer1block1_right(h)
            layer1block2 = self.layer1block2_left(h) + self.layer1block2_right(prev)
            layer1block3 = self.layer1block3_left(h) + self.layer1block3_right(prev)
            layer2block1 = self.layer2block1_left(h) + self.layer2block1_right(layer1block1)
            layer2block2 = self.layer2block2_left(layer1block1) + self.layer2block2_right(layer1block2)
            return torch.cat([layer1block2, layer1block3, layer2block1, layer2block2], 1), x

    class NasNetA(nn.Module):
        def __init__(self, repeat_cell_num, reduction_num, filters, stemfilter, class_num=100):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, stemfilter, 3, padding=1, bias=False), nn.BatchNorm2d(stemfilter))
            self.prev_filters = stemfilter
            self.x_filters = stemfilter
            self.filters = filters
            self.cell_layers = self._make_layers(repeat_cell_num, reduction_num)
            self.relu = nn.ReLU()
            self.avg = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(self.filters * 6, class_num)

        def _make_normal(self, block, repeat, output):
            layers = []
            for r in range(repeat):
                layers.append(block(self.x_filters, self.prev_filters, output))
                self.prev_filters = self.x_filters
                self.x_filters = output * 6  # concatenate 6 branches
            return layers

        def _make_reduction(self, block, output):
            reduction = block(self.x_filters, self.prev_filters, output)
            self.prev_filters = self.x_filters
            self.x_filters = output * 4  # stack for 4 branches
            return reduction

        def _make_layers(self, repeat_cell_num, reduction_num):
            layers = []
            for i in range(reduction_num):
                layers.extend(self._make_normal(NormalCell, repeat_cell_num, self.filters))
                self.filters *= 2
                layers.append(self._make_reduction(ReductionCell, self.filters))
            layers.extend(self._make_normal(NormalCell, repeat_cell_num, self.filters))
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.stem(x)
            prev = None
            x, prev = self.cell_layers((x, prev))
            x = self.relu(x)
            x = self.avg(x)
            x = x.view(x.size(0), -1)
            x = self.fc(x)
            return x

    return NasNetA(repeat_cell_num, reduction_num, filters, stemfilter, class_num)


def test_nasnet():
    """Training mode: NASNet-A(1, 1, 4, 4) on 8-pixel images: a normal cell, a reduction cell, and
    the normal cell after it whose Fit shifts and pools the reduction's input."""
    train_beside_torch("NASNet-A", nasnet, dict(repeat_cell_num=1, reduction_num=1, filters=4, stemfilter=4),
                       Side((2, 3, 8, 8)))


def attention(torch, nn, F, widths=(64, 256, 512, 1024), block_num=(1, 1), mask_size=(14, 14), class_num=10):
    """models/attention.py (Attention-56): pre-activation bottlenecks, attention modules whose mask
    branch pools down and upsamples back (F.interpolate to a size, or nn.UpsamplingBilinear2d as the
    original Residual Attention Network code) before `(1 + mask) * trunk`; `widths` cut."""

    class PreActResidualUnit(nn.Module):
        """PreAct Residual Unit
        Args:
            in_channels: residual unit input channel number
            out_channels: residual unit output channel numebr
            stride: stride of residual unit when stride = 2 downsample the featuremap
        """

        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            bottleneck_channels = int(out_channels / 4)
            self.residual_function = nn.Sequential(
                # 1x1 conv
                nn.BatchNorm2d(in_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(in_channels, bottleneck_channels, 1, stride),
                # 3x3 conv
                nn.BatchNorm2d(bottleneck_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(bottleneck_channels, bottleneck_channels, 3, padding=1),
                # 1x1 conv
                nn.BatchNorm2d(bottleneck_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(bottleneck_channels, out_channels, 1))
            self.shortcut = nn.Sequential()
            if stride != 2 or (in_channels != out_channels):
                self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride=stride)

        def forward(self, x):
            res = self.residual_function(x)
            shortcut = self.shortcut(x)
            return res + shortcut

    def _make_residual(in_channels, out_channels, p):
        layers = []
        for _ in range(p):
            layers.append(PreActResidualUnit(in_channels, out_channels, 1))
        return nn.Sequential(*layers)

    def _mask_head(out_channels):
        return nn.Sequential(
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, kernel_size=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, kernel_size=1),
            nn.Sigmoid())

    class AttentionModule1(nn.Module):
        def __init__(self, in_channels, out_channels, p=1, t=2, r=1):
            super().__init__()
            # """The hyperparameter p denotes the number of preprocessing Residual
            # Units before splitting into trunk branch and mask branch. t denotes
            # the number of Residual Units in trunk branch. r denotes the number of
            # Residual Units between adjacent pooling layer in the mask branch."""
            assert in_channels == out_channels
            self.pre = _make_residual(in_channels, out_channels, p)
            self.trunk = _make_residual(in_channels, out_channels, t)
            self.soft_resdown1 = _make_residual(in_channels, out_channels, r)
            self.soft_resdown2 = _make_residual(in_channels, out_channels, r)
            self.soft_resup1 = _make_residual(in_channels, out_channels, r)
            self.soft_resup2 = _make_residual(in_channels, out_channels, r)
            self.shortcut = PreActResidualUnit(in_channels, out_channels, 1)
            self.sigmoid = _mask_head(out_channels)
            self.last = _make_residual(in_channels, out_channels, p)

        def forward(self, x):
            x = self.pre(x)
            input_size = (x.size(2), x.size(3))
            x_t = self.trunk(x)
            # first downsample
            x_s = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)
            x_s = self.soft_resdown1(x_s)
            shape1 = (x_s.size(2), x_s.size(3))
            shortcut = self.shortcut(x_s)
            # second downsample
            x_s = F.max_pool2d(x_s, kernel_size=3, stride=2, padding=1)
            x_s = self.soft_resdown2(x_s)
            x_s = self.soft_resup1(x_s)
            # first upsample
            x_s = F.interpolate(x_s, size=shape1)
            x_s += shortcut
            # second upsample
            x_s = self.soft_resup2(x_s)
            x_s = F.interpolate(x_s, size=input_size)
            x_s = self.sigmoid(x_s)
            x = (1 + x_s) * x_t
            x = self.last(x)
            return x

    class AttentionModule2(nn.Module):
        def __init__(self, in_channels, out_channels, p=1, t=2, r=1, size=mask_size):
            super().__init__()
            assert in_channels == out_channels
            self.pre = _make_residual(in_channels, out_channels, p)
            self.trunk = _make_residual(in_channels, out_channels, t)
            self.mpool1 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.soft_resdown1 = _make_residual(in_channels, out_channels, r)
            self.soft_resup1 = _make_residual(in_channels, out_channels, r)
            self.interpolation1 = nn.UpsamplingBilinear2d(size=size)
            self.sigmoid = _mask_head(out_channels)
            self.last = _make_residual(in_channels, out_channels, p)

        def forward(self, x):
            x = self.pre(x)
            x_t = self.trunk(x)
            x_s = self.mpool1(x)
            x_s = self.soft_resdown1(x_s)
            x_s = self.soft_resup1(x_s)
            x_s = self.interpolation1(x_s) + x_t
            x_s = self.sigmoid(x_s)
            x = (1 + x_s) * x_t
            x = self.last(x)
            return x

    class Attention(nn.Module):
        """residual attention netowrk
        Args:
            block_num: attention module number for each stage
        """

        def __init__(self, block_num, class_num=100):
            super().__init__()
            w = widths
            self.pre_conv = nn.Sequential(nn.Conv2d(3, w[0], kernel_size=3, stride=1, padding=1), nn.BatchNorm2d(w[0]),
                                          nn.ReLU(inplace=True))
            self.stage1 = self._make_stage(w[0], w[1], block_num[0], AttentionModule1)
            self.stage2 = self._make_stage(w[1], w[2], block_num[1], AttentionModule2)
            self.stage3 = nn.Sequential(PreActResidualUnit(w[2], w[3], 2), PreActResidualUnit(w[3], w[3], 1))
            self.avg = nn.AdaptiveAvgPool2d(1)
            self.linear = nn.Linear(w[3], class_num)

        def forward(self, x):
            x = self.pre_conv(x)
            x = self.stage1(x)
            x = self.stage2(x)
            x = self.stage3(x)
            x = self.avg(x)
            x = x.view(x.size(0), -1)
            x = self.linear(x)
            return x

        def _make_stage(self, in_channels, out_channels, num, block):
            layers = []
            layers.append(PreActResidualUnit(in_channels, out_channels, 2))
            for _ in range(num):
                layers.append(block(out_channels, out_channels))
            return nn.Sequential(*layers)

    return Attention(block_num, class_num)


def test_attention56_eval_mode():
    """Eval mode, on an 8-pixel image: a module of each kind (the first masks 4x4 maps through 2x2
    and 1x1, the second 2x2 maps through 1x1, upsampled bilinearly with aligned corners). Not in
    training mode: the mask branch's BatchNorms over a few values each (1x1 maps) leave the net so
    ill-conditioned that PyTorch fp32's own gradients are off float64 by 1e-4 to 1e-2, and no batch
    of the 16 tried keeps clear of the ReLUs' kinks."""
    train_beside_torch("Attention-56", attention, dict(widths=(4, 8, 12, 16), mask_size=(2, 2)),
                       Side((1, 3, 8, 8), train=False))


def stochastic_depth_resnet(torch, nn, F, widths=(64, 128, 256, 512), num_block=(2, 2, 2, 2), num_classes=10):
    """models/stochasticdepth.py: the block a legacy torch.jit.ScriptModule whose scripted forward
    draws its survival with torch.bernoulli in training, and scales its residual by the survival
    probability in eval mode."""

    class StochasticDepthBasicBlock(torch.jit.ScriptModule):
        expansion = 1

        def __init__(self, p, in_channels, out_channels, stride=1):
            super().__init__()
            self.p = p
            self.residual = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, stride=stride),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(out_channels, out_channels * StochasticDepthBasicBlock.expansion, kernel_size=3, padding=1),
                nn.BatchNorm2d(out_channels))
            self.shortcut = nn.Sequential()
            if stride != 1 or in_channels != out_channels * StochasticDepthBasicBlock.expansion:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_channels, out_channels * StochasticDepthBasicBlock.expansion, kernel_size=1, stride=stride),
                    nn.BatchNorm2d(out_channels))

        def survival(self):
            var = torch.bernoulli(torch.tensor(self.p).float())
            return torch.equal(var, torch.tensor(1).float().to(var.device))

        @torch.jit.script_method
        def forward(self, x):
            if self.training:
                if self.survival():
                    # official torch implementation
                    # function ResidualDrop:updateOutput(input)
                    #    local skip_forward = self.skip:forward(input)
                    #    self.output:resizeAs(skip_forward):copy(skip_forward)
                    #    if self.train then
                    #        if self.gate then -- only compute convolutional output when gate is open
                    #            self.output:add(self.net:forward(input))
                    #        end
                    #    else
                    #            self.output:add(self.net:forward(input):mul(1-self.deathRate))
                    #        end
                    #    return self.output
                    # end
                    x = self.residual(x) + self.shortcut(x)
                else:
                    x = self.shortcut(x)
            else:
                x = self.residual(x) * self.p + self.shortcut(x)
            return x

    class StochasticDepthResNet(nn.Module):
        def __init__(self, block, num_block, num_classes=100):
            super().__init__()
            self.in_channels = widths[0]
            self.conv1 = nn.Sequential(nn.Conv2d(3, widths[0], kernel_size=3, padding=1, bias=False),
                                       nn.BatchNorm2d(widths[0]), nn.ReLU(inplace=True))
            self.step = (1 - 0.5) / (sum(num_block) - 1)
            self.pl = 1
            self.layers = nn.Sequential(*[self._make_layer(block, w, n, 1 if i == 0 else 2)
                                          for i, (w, n) in enumerate(zip(widths, num_block))])
            self.avg_pool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(widths[-1] * block.expansion, num_classes)

        def _make_layer(self, block, out_channels, num_blocks, stride):
            strides = [stride] + [1] * (num_blocks - 1)
            layers = []
            for stride in strides:
                layers.append(block(self.pl, self.in_channels, out_channels, stride))
                self.in_channels = out_channels * block.expansion
                self.pl -= self.step
            return nn.Sequential(*layers)

        def forward(self, x):
            output = self.conv1(x)
            output = self.layers(output)
            output = self.avg_pool(output)
            output = output.view(output.size(0), -1)
            output = self.fc(output)
            return output

    return StochasticDepthResNet(StochasticDepthBasicBlock, num_block, num_classes)


def test_stochastic_depth_resnet_eval_mode():
    """Eval mode: each residual scaled by its survival probability (1 down to 0.5)."""
    train_beside_torch("Stochastic-depth ResNet", stochastic_depth_resnet, dict(widths=(4, 8), num_block=(2, 1)),
                       Side((1, 3, 8, 8), train=False))


def test_stochastic_depth_resnet_trains_in_tnet():
    """Training mode in tnet: each block draws its survival (torch.bernoulli of a 0-d tensor,
    torch.equal) and runs its residual or only its shortcut; the last block (survival 0.5) does both
    over a few draws, and every step trains."""
    tnet.manual_seed(0)
    model = stochastic_depth_resnet(tnet, tnet.nn, tnet.nn.functional, widths=(4, 8), num_block=(2, 1))
    last = model.layers[-1][-1]
    assert last.p == 0.5 and isinstance(last, tnet.nn.Module)
    survived = [last.survival() for _ in range(32)]
    assert set(survived) == {True, False}
    opt = tnet.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    x, y = tnet.randn(2, 3, 8, 8), tnet.tensor([1, 2])
    for _ in range(3):
        opt.zero_grad()
        loss = tnet.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        assert math.isfinite(loss.item())


def squeezenet(torch, nn, F, widths=(96, 128, 256, 384, 512), squeeze=(16, 32, 48, 64), class_num=10):
    """models/squeezenet.py: fire modules, the simple bypass (`self.fire3(f2) + f2`), a 1x1
    convolution to the classes and global average pooling; `widths` and `squeeze` cut."""
    w, s = widths, squeeze

    class Fire(nn.Module):
        def __init__(self, in_channel, out_channel, squzee_channel):
            super().__init__()
            self.squeeze = nn.Sequential(nn.Conv2d(in_channel, squzee_channel, 1), nn.BatchNorm2d(squzee_channel),
                                         nn.ReLU(inplace=True))
            self.expand_1x1 = nn.Sequential(nn.Conv2d(squzee_channel, int(out_channel / 2), 1),
                                            nn.BatchNorm2d(int(out_channel / 2)), nn.ReLU(inplace=True))
            self.expand_3x3 = nn.Sequential(nn.Conv2d(squzee_channel, int(out_channel / 2), 3, padding=1),
                                            nn.BatchNorm2d(int(out_channel / 2)), nn.ReLU(inplace=True))

        def forward(self, x):
            x = self.squeeze(x)
            x = torch.cat([self.expand_1x1(x), self.expand_3x3(x)], 1)
            return x

    class SqueezeNet(nn.Module):
        """mobile net with simple bypass"""

        def __init__(self, class_num=100):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, w[0], 3, padding=1), nn.BatchNorm2d(w[0]), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(2, 2))
            self.fire2 = Fire(w[0], w[1], s[0])
            self.fire3 = Fire(w[1], w[1], s[0])
            self.fire4 = Fire(w[1], w[2], s[1])
            self.fire5 = Fire(w[2], w[2], s[1])
            self.fire6 = Fire(w[2], w[3], s[2])
            self.fire7 = Fire(w[3], w[3], s[2])
            self.fire8 = Fire(w[3], w[4], s[3])
            self.fire9 = Fire(w[4], w[4], s[3])
            self.conv10 = nn.Conv2d(w[4], class_num, 1)
            self.avg = nn.AdaptiveAvgPool2d(1)
            self.maxpool = nn.MaxPool2d(2, 2)

        def forward(self, x):
            x = self.stem(x)
            f2 = self.fire2(x)
            f3 = self.fire3(f2) + f2
            f4 = self.fire4(f3)
            f4 = self.maxpool(f4)
            f5 = self.fire5(f4) + f4
            f6 = self.fire6(f5)
            f7 = self.fire7(f6) + f6
            f8 = self.fire8(f7)
            f8 = self.maxpool(f8)
            f9 = self.fire9(f8)
            c10 = self.conv10(f9)
            x = self.avg(c10)
            x = x.view(x.size(0), -1)
            return x

    return SqueezeNet(class_num)


def test_squeezenet():
    """Training mode: four 8-pixel images (down to 1x1 maps after the third pooling)."""
    train_beside_torch("SqueezeNet", squeezenet, dict(widths=(8, 8, 16, 16, 16), squeeze=(4, 4, 8, 8)),
                       Side((4, 3, 8, 8)))


def inception_v4_blocks(torch, nn, F, div=32, k=192, l=224, m=256, n=384, class_nums=10):
    """models/inceptionv4.py's pieces: BasicConv2d, the stem (3x3 convolutions, 7x1 and 1x7, max
    pools concatenated with convolutions), Inception-v4's InceptionA and ReductionA, and
    Inception-ResNet-v2's A block (the sum through a BatchNorm) and B block (its residual scaled by
    0.1), stacked by add_module into an empty nn.Sequential, then AvgPool2d over the final map,
    Dropout2d (keep 0.8) and `x.view(-1, C)`; every width divided by `div`."""

    def c(ch):
        return max(1, ch // div)

    class BasicConv2d(nn.Module):
        def __init__(self, input_channels, output_channels, **kwargs):
            super().__init__()
            self.conv = nn.Conv2d(input_channels, output_channels, bias=False, **kwargs)
            self.bn = nn.BatchNorm2d(output_channels)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.conv(x)
            x = self.bn(x)
            x = self.relu(x)
            return x

    class Inception_Stem(nn.Module):
        # """Figure 3. The schema for stem of the pure Inception-v4 and
        # Inception-ResNet-v2 networks. This is the input part of those
        # networks."""
        def __init__(self, input_channels):
            super().__init__()
            self.conv1 = nn.Sequential(
                BasicConv2d(input_channels, c(32), kernel_size=3),
                BasicConv2d(c(32), c(32), kernel_size=3, padding=1),
                BasicConv2d(c(32), c(64), kernel_size=3, padding=1))
            self.branch3x3_conv = BasicConv2d(c(64), c(96), kernel_size=3, padding=1)
            self.branch3x3_pool = nn.MaxPool2d(3, stride=1, padding=1)
            self.branch7x7a = nn.Sequential(
                BasicConv2d(c(160), c(64), kernel_size=1),
                BasicConv2d(c(64), c(64), kernel_size=(7, 1), padding=(3, 0)),
                BasicConv2d(c(64), c(64), kernel_size=(1, 7), padding=(0, 3)),
                BasicConv2d(c(64), c(96), kernel_size=3, padding=1))
            self.branch7x7b = nn.Sequential(
                BasicConv2d(c(160), c(64), kernel_size=1),
                BasicConv2d(c(64), c(96), kernel_size=3, padding=1))
            self.branchpoola = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
            self.branchpoolb = BasicConv2d(c(192), c(192), kernel_size=3, stride=1, padding=1)

        def forward(self, x):
            x = self.conv1(x)
            x = [self.branch3x3_conv(x), self.branch3x3_pool(x)]
            x = torch.cat(x, 1)
            x = [self.branch7x7a(x), self.branch7x7b(x)]
            x = torch.cat(x, 1)
            x = [self.branchpoola(x), self.branchpoolb(x)]
            x = torch.cat(x, 1)
            return x

    class InceptionA(nn.Module):
        # """Figure 4. The schema for 35 × 35 grid modules of the pure
        # Inception-v4 network. This is the Inception-A block of Figure 9."""
        def __init__(self, input_channels):
            super().__init__()
            self.branch3x3stack = nn.Sequential(
                BasicConv2d(input_channels, c(64), kernel_size=1),
                BasicConv2d(c(64), c(96), kernel_size=3, padding=1),
                BasicConv2d(c(96), c(96), kernel_size=3, padding=1))
            self.branch3x3 = nn.Sequential(
                BasicConv2d(input_channels, c(64), kernel_size=1),
                BasicConv2d(c(64), c(96), kernel_size=3, padding=1))
            self.branch1x1 = BasicConv2d(input_channels, c(96), kernel_size=1)
            self.branchpool = nn.Sequential(
                nn.AvgPool2d(kernel_size=3, stride=1, padding=1),
                BasicConv2d(input_channels, c(96), kernel_size=1))

        def forward(self, x):
            input = [self.branch3x3stack(x), self.branch3x3(x), self.branch1x1(x), self.branchpool(x)]
            return torch.cat(input, 1)

    class InceptionReductionA(nn.Module):
        # """Figure 7. The schema for 35 × 35 to 17 × 17 reduction module.
        # Different variants of this blocks (with various number of filters)
        # are used in Figure 9, and 15 in each of the new Inception(-v4, - ResNet-v1,
        # -ResNet-v2) variants presented in this paper. The k, l, m, n numbers
        # represent filter bank sizes which can be looked up in Table 1."""
        def __init__(self, input_channels, k, l, m, n):
            super().__init__()
            self.branch3x3stack = nn.Sequential(
                BasicConv2d(input_channels, k, kernel_size=1),
                BasicConv2d(k, l, kernel_size=3, padding=1),
                BasicConv2d(l, m, kernel_size=3, stride=2))
            self.branch3x3 = BasicConv2d(input_channels, n, kernel_size=3, stride=2)
            self.branchpool = nn.MaxPool2d(kernel_size=3, stride=2)
            self.output_channels = input_channels + n + m

        def forward(self, x):
            x = [self.branch3x3stack(x), self.branch3x3(x), self.branchpool(x)]
            return torch.cat(x, 1)

    class InceptionResNetA(nn.Module):
        # """Figure 16. The schema for 35 × 35 grid (Inception-ResNet-A)
        # module of the Inception-ResNet-v2 network."""
        def __init__(self, input_channels):
            super().__init__()
            self.branch3x3stack = nn.Sequential(
                BasicConv2d(input_channels, c(32), kernel_size=1),
                BasicConv2d(c(32), c(48), kernel_size=3, padding=1),
                BasicConv2d(c(48), c(64), kernel_size=3, padding=1))
            self.branch3x3 = nn.Sequential(
                BasicConv2d(input_channels, c(32), kernel_size=1),
                BasicConv2d(c(32), c(32), kernel_size=3, padding=1))
            self.branch1x1 = BasicConv2d(input_channels, c(32), kernel_size=1)
            self.reduction1x1 = nn.Conv2d(c(32) + c(32) + c(64), c(384), kernel_size=1)
            self.shortcut = nn.Conv2d(input_channels, c(384), kernel_size=1)
            self.bn = nn.BatchNorm2d(c(384))
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            residual = [self.branch1x1(x), self.branch3x3(x), self.branch3x3stack(x)]
            residual = torch.cat(residual, 1)
            residual = self.reduction1x1(residual)
            shortcut = self.shortcut(x)
            output = self.bn(shortcut + residual)
            output = self.relu(output)
            return output

    class InceptionResNetB(nn.Module):
        # """Figure 17. The schema for 17 × 17 grid (Inception-ResNet-B) module of
        # the Inception-ResNet-v2 network."""
        def __init__(self, input_channels):
            super().__init__()
            self.branch7x7 = nn.Sequential(
                BasicConv2d(input_channels, c(128), kernel_size=1),
                BasicConv2d(c(128), c(160), kernel_size=(1, 7), padding=(0, 3)),
                BasicConv2d(c(160), c(192), kernel_size=(7, 1), padding=(3, 0)))
            self.branch1x1 = BasicConv2d(input_channels, c(192), kernel_size=1)
            self.reduction1x1 = nn.Conv2d(2 * c(192), c(1154), kernel_size=1)
            self.shortcut = nn.Conv2d(input_channels, c(1154), kernel_size=1)
            self.bn = nn.BatchNorm2d(c(1154))
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            residual = [self.branch1x1(x), self.branch7x7(x)]
            residual = torch.cat(residual, 1)
            # """In general we picked some scaling factors between 0.1 and 0.3 to scale the residuals
            # before their being added to the accumulated layer activations (cf. Figure 20)."""
            residual = self.reduction1x1(residual) * 0.1
            shortcut = self.shortcut(x)
            output = self.bn(residual + shortcut)
            output = self.relu(output)
            return output

    class Net(nn.Module):
        def __init__(self, A=1, B=1, k=192, l=224, m=256, n=384, class_nums=100):
            super().__init__()
            self.stem = Inception_Stem(3)
            self.inception_a = self._generate_inception_module(2 * c(192), c(384), A, InceptionA)
            self.inception_resnet_a = self._generate_inception_module(4 * c(96), c(384), A, InceptionResNetA)
            self.reduction_a = InceptionReductionA(c(384), c(k), c(l), c(m), c(n))
            output_channels = self.reduction_a.output_channels
            self.inception_resnet_b = self._generate_inception_module(output_channels, c(1154), B, InceptionResNetB)
            self.avgpool = nn.AvgPool2d(4)
            # """Dropout (keep 0.8)"""
            self.dropout = nn.Dropout2d(1 - 0.8)
            self.linear = nn.Linear(c(1154), class_nums)

        def forward(self, x):
            x = self.stem(x)
            x = self.inception_a(x)
            x = self.inception_resnet_a(x)
            x = self.reduction_a(x)
            x = self.inception_resnet_b(x)
            x = self.avgpool(x)
            x = self.dropout(x)
            x = x.view(-1, c(1154))
            x = self.linear(x)
            return x

        @staticmethod
        def _generate_inception_module(input_channels, output_channels, block_num, block):
            layers = nn.Sequential()
            for l in range(block_num):
                layers.add_module("{}_{}".format(block.__name__, l), block(input_channels))
                input_channels = output_channels
            return layers

    return Net(k=k, l=l, m=m, n=n, class_nums=class_nums)


def test_inception_v4_blocks_eval_mode():
    """Eval mode (Dropout2d off): 12-pixel images, 10x10 after the stem, 4x4 after ReductionA."""
    train_beside_torch("Inception-v4 blocks", inception_v4_blocks, {}, Side((1, 3, 12, 12), train=False))


# ---- a CIFAR-10 speed-run script (Keller Jordan's airbench94 and hlb-cifar10 style) ----------------

def airbench(torch, nn, F, widths=(64, 256, 256), batchnorm_momentum=0.6, scaling_factor=1 / 9, half=False):
    """airbench94's net as its script builds it: BatchNorm subclassed with a frozen weight, Conv with
    padding='same' and a dirac init in reset_parameters, ConvGroup with GELU, a Mul(scale) head, the
    first (whitening) layer frozen, `net.half()` then `mod.float()` on every BatchNorm (half=True),
    channels_last, torch.compile."""

    class BatchNorm(nn.BatchNorm2d):
        def __init__(self, num_features, momentum=0.6, eps=1e-12, weight=False, bias=True):
            super().__init__(num_features, eps=eps, momentum=1 - momentum)
            self.weight.requires_grad = weight
            self.bias.requires_grad = bias
            # Note that PyTorch already initializes the weights to one and bias to zero

    class Conv(nn.Conv2d):
        def __init__(self, in_channels, out_channels):
            super().__init__(in_channels, out_channels, kernel_size=3, padding="same", bias=False)

        def reset_parameters(self):
            super().reset_parameters()
            w = self.weight.data
            torch.nn.init.dirac_(w[:w.size(1)])

    class ConvGroup(nn.Module):
        def __init__(self, channels_in, channels_out, batchnorm_momentum):
            super().__init__()
            self.conv1 = Conv(channels_in, channels_out)
            self.pool = nn.MaxPool2d(2)
            self.norm1 = BatchNorm(channels_out, batchnorm_momentum)
            self.conv2 = Conv(channels_out, channels_out)
            self.norm2 = BatchNorm(channels_out, batchnorm_momentum)
            self.activ = nn.GELU()

        def forward(self, x):
            x = self.conv1(x)
            x = self.pool(x)
            x = self.norm1(x)
            x = self.activ(x)
            x = self.conv2(x)
            x = self.norm2(x)
            x = self.activ(x)
            return x

    class Mul(nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale

        def forward(self, x):
            return x * self.scale

    def make_net():
        whiten_kernel_size = 2
        whiten_width = 2 * 3 * whiten_kernel_size ** 2
        net = nn.Sequential(
            nn.Conv2d(3, whiten_width, whiten_kernel_size, padding=0, bias=True),
            nn.GELU(),
            ConvGroup(whiten_width, widths[0], batchnorm_momentum),
            ConvGroup(widths[0], widths[1], batchnorm_momentum),
            ConvGroup(widths[1], widths[2], batchnorm_momentum),
            nn.MaxPool2d(3),
            nn.Flatten(),
            nn.Linear(widths[2], 10, bias=False),
            Mul(scaling_factor),
        )
        net[0].weight.requires_grad = False
        if half:
            net = net.half()
        net = net.to(memory_format=torch.channels_last)
        for mod in net.modules():
            if isinstance(mod, BatchNorm):
                mod.float()
        return net

    return torch.compile(make_net(), mode="max-autotune")


def get_patches(torch, x, patch_shape):
    c, (h, w) = x.shape[1], patch_shape
    return x.unfold(2, h, 1).unfold(3, w, 1).transpose(1, 3).reshape(-1, c, h, w).float()


def get_whitening_parameters(torch, patches):
    n, c, h, w = patches.shape
    patches_flat = patches.view(n, -1)
    est_patch_covariance = (patches_flat.T @ patches_flat) / n
    eigenvalues, eigenvectors = torch.linalg.eigh(est_patch_covariance, UPLO="U")
    return eigenvalues.flip(0).view(-1, 1, 1, 1), eigenvectors.T.reshape(c * h * w, c, h, w).flip(0)


def init_whitening_conv(torch, layer, train_set, eps=5e-4):
    patches = get_patches(torch, train_set, patch_shape=layer.weight.data.shape[2:])
    eigenvalues, eigenvectors = get_whitening_parameters(torch, patches)
    eigenvectors_scaled = eigenvectors / torch.sqrt(eigenvalues + eps)
    layer.weight.data[:] = torch.cat((eigenvectors_scaled, -eigenvectors_scaled))


def label_smoothing_sum(F, outputs, labels):
    """airbench's loss: nn.CrossEntropyLoss(label_smoothing=0.2, reduction='none'), summed."""
    return F.cross_entropy(outputs, labels, label_smoothing=0.2, reduction="none").sum()


AIRBENCH_WIDTHS = dict(widths=(8, 12, 16))


def test_airbench_script():
    """Training mode: the net at narrow widths on two 32-pixel images (the pools need them), its
    BatchNorm weights and whitening layer frozen, the summed label-smoothed loss."""
    train_beside_torch("airbench94", airbench, AIRBENCH_WIDTHS, Side((2, 3, 32, 32), loss_fn=label_smoothing_sum))


def test_airbench_whitening_init():
    """init_whitening_conv from the patches of a batch (unfold, transpose, reshape, eigh with
    UPLO='U', flip): tnet's whitening filters are torch's, each eigenvector up to its sign."""
    import torch as pt
    x = np.random.default_rng(0).standard_normal((4, 3, 6, 6)).astype(np.float32)
    layers = {}
    for lib_ in (tnet, pt):
        lib_.manual_seed(0)
        layers[lib_] = lib_.nn.Conv2d(3, 24, 2, padding=0, bias=True)
        init_whitening_conv(lib_, layers[lib_], lib_.tensor(x))
    ours = layers[tnet].weight.detach().numpy().reshape(24, -1)
    ref = layers[pt].weight.detach().double().numpy().reshape(24, -1)
    signs = np.sign((ours * ref).sum(1, keepdims=True))
    np.testing.assert_allclose(ours * signs, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())


def test_airbench_half_with_float_batch_norm():
    """`net.half()`, then every BatchNorm back to float: in tnet the parameters stay fp32 masters
    (README: .half() runs the module under autocast) and the BatchNorms compute in fp32 again; the
    fp16 logits stay within fp16's error of torch float64's, and a step trains."""
    import torch as pt
    tnet.manual_seed(0)
    net = airbench(tnet, tnet.nn, tnet.nn.functional, half=True, **AIRBENCH_WIDTHS)
    assert {p.dtype for p in net.parameters()} == {pt.float32} and not net._orig_mod[2].norm1.weight.requires_grad
    ref = airbench(pt, pt.nn, pt.nn.functional, **AIRBENCH_WIDTHS).double()
    ref.load_state_dict({k: pt.tensor(v).double() for k, v in initial_state(net).items()})
    x, y = Side((2, 3, 32, 32)).batch(0)
    logits = net(tnet.tensor(x).half().to(memory_format=tnet.channels_last))
    assert logits.dtype == pt.float16
    assert rel_err(logits.float(), ref(x.double())) <= TOL["fp16"]
    opt = tnet.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.01, momentum=0.9, nesterov=True)
    loss = label_smoothing_sum(tnet.nn.functional, logits, tnet.tensor(y))
    loss.backward()
    opt.step()
    assert math.isfinite(loss.item())
