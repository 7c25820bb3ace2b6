"""Public CIFAR networks whose ports found a difference from torch (tenth session), written from memory in
their repositories' styles and ported by their imports alone, as test_ported_scripts.py: Xception's middle
flow (weiaicunzai/pytorch-cifar100) reads x after nn.ReLU(inplace=True) wrote it; GhostNet's module
(huawei-noah) adds its shortcut in place into a channel slice of a concatenation, with grad; lucidrains'
ViT rearranges with einops (skipped where einops is not installed: tnet does not need it)."""
import math

import pytest

from helpers import batches, compare, load


def xception(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    class SeperableConv2d(nn.Module):
        def __init__(self, input_channels, output_channels, kernel_size, **kwargs):
            super().__init__()
            self.depthwise = nn.Conv2d(input_channels, input_channels, kernel_size, groups=input_channels, bias=False, **kwargs)
            self.pointwise = nn.Conv2d(input_channels, output_channels, 1, bias=False)
        def forward(self, x):
            return self.pointwise(self.depthwise(x))
    class EntryBlock(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.residual = nn.Sequential(
                SeperableConv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                SeperableConv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout),
                nn.MaxPool2d(3, stride=2, padding=1))
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2), nn.BatchNorm2d(cout))
        def forward(self, x):
            return self.residual(x) + self.shortcut(x)
    class Xception(nn.Module):
        def __init__(self, num_class=10):
            super().__init__()
            self.conv1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            self.entry = EntryBlock(8, 16)
            self.middle = nn.Sequential(*[nn.Sequential(nn.ReLU(inplace=True), SeperableConv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16)) for _ in range(1)])
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16, num_class)
        def forward(self, x):
            x = self.entry(self.conv1(x))
            x = self.middle(x) + x
            x = self.avgpool(x)
            x = x.view(x.size(0), -1)
            return self.fc(x)
    torch.manual_seed(0)
    net = Xception()
    init = load(m, net, state)
    opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    loss_function = nn.CrossEntropyLoss()
    losses = []
    for x, y in batches(1, 2, (2, 3, 6, 6)):
        images, labels = torch.tensor(x), torch.tensor(y)
        opt.zero_grad()
        outputs = net(images)
        loss = loss_function(outputs, labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return init, losses


def test_xception():
    compare(xception)


def ghostnet(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    def hard_sigmoid(x, inplace: bool = False):
        if inplace:
            return x.add_(3.).clamp_(0., 6.).div_(6.)
        else:
            return F.relu6(x + 3.) / 6.
    class SqueezeExcite(nn.Module):
        def __init__(self, in_chs, se_ratio=0.25):
            super().__init__()
            reduced_chs = max(1, int(in_chs * se_ratio))
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.conv_reduce = nn.Conv2d(in_chs, reduced_chs, 1, bias=True)
            self.act1 = nn.ReLU(inplace=True)
            self.conv_expand = nn.Conv2d(reduced_chs, in_chs, 1, bias=True)
        def forward(self, x):
            x_se = self.avg_pool(x)
            x_se = self.conv_reduce(x_se)
            x_se = self.act1(x_se)
            x_se = self.conv_expand(x_se)
            x = x * hard_sigmoid(x_se)
            return x
    class GhostModule(nn.Module):
        def __init__(self, inp, oup, kernel_size=1, ratio=2, dw_size=3, stride=1, relu=True):
            super().__init__()
            self.oup = oup
            init_channels = math.ceil(oup / ratio)
            new_channels = init_channels * (ratio - 1)
            self.primary_conv = nn.Sequential(nn.Conv2d(inp, init_channels, kernel_size, stride, kernel_size // 2, bias=False),
                                              nn.BatchNorm2d(init_channels), nn.ReLU(inplace=True) if relu else nn.Sequential())
            self.cheap_operation = nn.Sequential(nn.Conv2d(init_channels, new_channels, dw_size, 1, dw_size // 2, groups=init_channels, bias=False),
                                                 nn.BatchNorm2d(new_channels), nn.ReLU(inplace=True) if relu else nn.Sequential())
        def forward(self, x):
            x1 = self.primary_conv(x)
            x2 = self.cheap_operation(x1)
            out = torch.cat([x1, x2], dim=1)
            return out[:, :self.oup, :, :]
    class GhostBottleneck(nn.Module):
        def __init__(self, in_chs, mid_chs, out_chs):
            super().__init__()
            self.ghost1 = GhostModule(in_chs, mid_chs, relu=True)
            self.se = SqueezeExcite(mid_chs)
            self.ghost2 = GhostModule(mid_chs, out_chs, relu=False)
            self.shortcut = nn.Sequential(nn.Conv2d(in_chs, in_chs, 3, 1, 1, groups=in_chs, bias=False), nn.BatchNorm2d(in_chs),
                                          nn.Conv2d(in_chs, out_chs, 1, 1, 0, bias=False), nn.BatchNorm2d(out_chs))
        def forward(self, x):
            residual = x
            x = self.ghost1(x)
            x = self.se(x)
            x = self.ghost2(x)
            x += self.shortcut(residual)
            return x
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_stem = nn.Conv2d(3, 8, 3, 2, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.act1 = nn.ReLU(inplace=True)
            self.blocks = nn.Sequential(GhostBottleneck(8, 12, 10))
            self.global_pool = nn.AdaptiveAvgPool2d((1, 1))
            self.classifier = nn.Linear(10, 10)
        def forward(self, x):
            x = self.act1(self.bn1(self.conv_stem(x)))
            x = self.blocks(x)
            x = self.global_pool(x)
            x = x.view(x.size(0), -1)
            x = F.dropout(x, p=0.2, training=self.training)
            return self.classifier(x)
    torch.manual_seed(0)
    net = Net()
    init = load(m, net, state)
    opt = optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses = []
    net.eval()
    for x, y in batches(7, 2, (2, 3, 6, 6)):
        loss = F.cross_entropy(net(torch.tensor(x)), torch.tensor(y))
        opt.zero_grad(); loss.backward(); opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        losses.append(float(hard_sigmoid(torch.tensor(x), inplace=True).sum()))
    return init, losses


def test_ghostnet():
    compare(ghostnet)


def vit_einops(m, state=None):
    """lucidrains' vit-pytorch ViT, as CIFAR repositories copy it: einops' rearrange and repeat on the
    tensors, its Rearrange layer inside nn.Sequential."""
    from einops import rearrange, repeat
    from einops.layers.torch import Rearrange
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class FeedForward(nn.Module):
        def __init__(self, dim, hidden_dim, dropout=0.):
            super().__init__()
            self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, hidden_dim), nn.GELU(), nn.Dropout(dropout),
                                     nn.Linear(hidden_dim, dim), nn.Dropout(dropout))

        def forward(self, x):
            return self.net(x)

    class Attention(nn.Module):
        def __init__(self, dim, heads=2, dim_head=8, dropout=0.):
            super().__init__()
            inner_dim = dim_head * heads
            self.heads, self.scale = heads, dim_head ** -0.5
            self.norm = nn.LayerNorm(dim)
            self.attend = nn.Softmax(dim=-1)
            self.dropout = nn.Dropout(dropout)
            self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
            self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout))

        def forward(self, x):
            x = self.norm(x)
            qkv = self.to_qkv(x).chunk(3, dim=-1)
            q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), qkv)
            dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
            attn = self.dropout(self.attend(dots))
            out = rearrange(torch.matmul(attn, v), 'b h n d -> b n (h d)')
            return self.to_out(out)

    class ViT(nn.Module):
        def __init__(self, image_size=8, patch_size=4, num_classes=10, dim=16, depth=1, heads=2, mlp_dim=32, channels=3):
            super().__init__()
            num_patches, patch_dim = (image_size // patch_size) ** 2, channels * patch_size * patch_size
            self.to_patch_embedding = nn.Sequential(
                Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=patch_size, p2=patch_size),
                nn.LayerNorm(patch_dim), nn.Linear(patch_dim, dim), nn.LayerNorm(dim))
            self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
            self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
            self.layers = nn.ModuleList([nn.ModuleList([Attention(dim, heads), FeedForward(dim, mlp_dim)])
                                         for _ in range(depth)])
            self.norm = nn.LayerNorm(dim)
            self.to_latent = nn.Identity()
            self.mlp_head = nn.Linear(dim, num_classes)

        def forward(self, img):
            x = self.to_patch_embedding(img)
            b, n, _ = x.shape
            cls_tokens = repeat(self.cls_token, '1 1 d -> b 1 d', b=b)
            x = torch.cat((cls_tokens, x), dim=1)
            x += self.pos_embedding[:, :(n + 1)]
            for attn, ff in self.layers:
                x = attn(x) + x
                x = ff(x) + x
            x = self.norm(x)[:, 0]
            return self.mlp_head(self.to_latent(x))

    torch.manual_seed(0)
    net = ViT()
    init = load(m, net, state)
    opt = optim.Adam(net.parameters(), lr=1e-3)
    losses = []
    for x, y in batches(13, 2, (2, 3, 8, 8)):
        loss = F.cross_entropy(net(torch.tensor(x)), torch.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return init, losses


def test_vit_with_einops():
    pytest.importorskip("einops")
    compare(vit_einops)
