"""torchvision's and other public ImageNet/CIFAR model files, written from memory in their repositories'
styles as functions of the names a model file imports, `build(torch, nn, F, **size)`, and ported to tnet
by those imports alone (helpers.lib). Each is built in tnet at reduced widths and depths, its initial
weights are copied into the same model in PyTorch float32 and float64 (state_dict), and each trains two
SGD steps (Nesterov, weight decay) on one small batch: tnet's losses, logits, gradients, weight changes
and BatchNorm statistics match float64's within max(1e-4, 10 x PyTorch fp32's own error), at a batch
whose float64 run stays clear of every ReLU and max-pooling kink (helpers.train_beside_torch, as
tests/test_zoo.py). Training mode, unless the test says eval mode (where dropout or stochastic depth
would draw different masks in tnet and torch)."""


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
