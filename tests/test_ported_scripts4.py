"""Modern CIFAR architectures and training idioms as popular repositories write them (ConvNeXt, Swin,
ViT, CBAM, SK/SE nets, MobileNetV3, ResNeSt's rSoftMax, Res2Net, GhostNet, EfficientNet with
stochastic depth, SqueezeNet, NiN; a custom Dataset, warmup and restart schedulers, autocast and
GradScaler, gradient accumulation, module surgery, FLOP hooks, top-k, a confusion matrix, EMA,
checkpoint and resume), written once and ported to tnet by their imports alone, as in
test_ported_scripts.py. Where a network draws noise (DropPath, stochastic depth), the compared run
switches it off and tnet alone runs it once more with the noise; widths are tiny and runs 1-2 steps."""
import math

import numpy as np

from helpers import batches, compare, load


def step(m, model, opt, x, y):
    out = model(m.torch.tensor(x))
    loss = m.F.cross_entropy(out, m.torch.tensor(y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def train(m, model, state, steps=1, shape=(2, 3, 8, 8), noisy=None, lr=0.05):
    """steps SGD steps on random data; `noisy` (tnet only) builds the model with its noise on and
    runs a training forward and backward."""
    init = load(m, model, state)
    opt = m.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    losses = [step(m, model, opt, x, y) for x, y in batches(0, steps, shape)]
    model.eval()
    with m.torch.no_grad():
        losses.append(model(m.torch.tensor(batches(1, 1, shape)[0][0])).sum().item())
    if noisy is not None and m.torch.__name__ == "tnet":
        net = noisy()
        net.train()
        net(m.torch.tensor(batches(2, 1, shape)[0][0])).sum().backward()
    return init, losses


# (a) ConvNeXt (facebookresearch/ConvNeXt style): a LayerNorm with data_format, depthwise 7x7,
# permute to channels-last for nn.LayerNorm and the pointwise Linears, layer-scale gamma, DropPath
def convnext(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def drop_path(x, drop_prob: float = 0., training: bool = False):
        if drop_prob == 0. or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0:
            random_tensor.div_(keep_prob)
        return x * random_tensor

    class DropPath(nn.Module):
        def __init__(self, drop_prob=None):
            super(DropPath, self).__init__()
            self.drop_prob = drop_prob

        def forward(self, x):
            return drop_path(x, self.drop_prob, self.training)

    class LayerNorm(nn.Module):
        def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(normalized_shape))
            self.bias = nn.Parameter(torch.zeros(normalized_shape))
            self.eps = eps
            self.data_format = data_format
            if self.data_format not in ["channels_last", "channels_first"]:
                raise NotImplementedError
            self.normalized_shape = (normalized_shape, )

        def forward(self, x):
            if self.data_format == "channels_last":
                return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
            elif self.data_format == "channels_first":
                u = x.mean(1, keepdim=True)
                s = (x - u).pow(2).mean(1, keepdim=True)
                x = (x - u) / torch.sqrt(s + self.eps)
                x = self.weight[:, None, None] * x + self.bias[:, None, None]
                return x

    class Block(nn.Module):
        def __init__(self, dim, drop_path=0., layer_scale_init_value=1e-6):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
            self.norm = LayerNorm(dim, eps=1e-6)
            self.pwconv1 = nn.Linear(dim, 4 * dim)
            self.act = nn.GELU()
            self.pwconv2 = nn.Linear(4 * dim, dim)
            self.gamma = nn.Parameter(layer_scale_init_value * torch.ones((dim)),
                                      requires_grad=True) if layer_scale_init_value > 0 else None
            self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()

        def forward(self, x):
            input = x
            x = self.dwconv(x)
            x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
            x = self.norm(x)
            x = self.pwconv1(x)
            x = self.act(x)
            x = self.pwconv2(x)
            if self.gamma is not None:
                x = self.gamma * x
            x = x.permute(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W)
            x = input + self.drop_path(x)
            return x

    class ConvNeXt(nn.Module):
        def __init__(self, in_chans=3, num_classes=10, depths=[1, 1], dims=[4, 8], drop_path_rate=0.,
                     layer_scale_init_value=1e-6, head_init_scale=1.):
            super().__init__()
            self.downsample_layers = nn.ModuleList()
            stem = nn.Sequential(
                nn.Conv2d(in_chans, dims[0], kernel_size=2, stride=2),
                LayerNorm(dims[0], eps=1e-6, data_format="channels_first")
            )
            self.downsample_layers.append(stem)
            for i in range(len(dims) - 1):
                downsample_layer = nn.Sequential(
                    LayerNorm(dims[i], eps=1e-6, data_format="channels_first"),
                    nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2),
                )
                self.downsample_layers.append(downsample_layer)
            self.stages = nn.ModuleList()
            dp_rates = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
            cur = 0
            for i in range(len(dims)):
                stage = nn.Sequential(
                    *[Block(dim=dims[i], drop_path=dp_rates[cur + j],
                            layer_scale_init_value=layer_scale_init_value) for j in range(depths[i])]
                )
                self.stages.append(stage)
                cur += depths[i]
            self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
            self.head = nn.Linear(dims[-1], num_classes)
            self.apply(self._init_weights)
            self.head.weight.data.mul_(head_init_scale)
            self.head.bias.data.mul_(head_init_scale)

        def _init_weights(self, m):
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=.02)
                nn.init.constant_(m.bias, 0)

        def forward_features(self, x):
            for i in range(len(self.stages)):
                x = self.downsample_layers[i](x)
                x = self.stages[i](x)
            return self.norm(x.mean([-2, -1]))  # global average pooling, (N, C, H, W) -> (N, C)

        def forward(self, x):
            x = self.forward_features(x)
            x = self.head(x)
            return x

    # layer scale 0.5 so that the blocks change the loss visibly
    return train(m, ConvNeXt(layer_scale_init_value=0.5), state,
                 noisy=lambda: ConvNeXt(drop_path_rate=0.5))


def test_convnext():
    compare(convnext)
