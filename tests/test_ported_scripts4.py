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


# (b) Swin Transformer for CIFAR (microsoft/Swin-Transformer style): window_partition/window_reverse,
# cyclic shift by torch.roll, the attention mask from slices and masked_fill, the relative position
# bias table indexed by a registered buffer built with meshgrid, stack and flatten
def swin(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def window_partition(x, window_size):
        B, H, W, C = x.shape
        x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
        windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)
        return windows

    def window_reverse(windows, window_size, H, W):
        B = int(windows.shape[0] / (H * W / window_size / window_size))
        x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
        x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)
        return x

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop = nn.Dropout(drop)

        def forward(self, x):
            return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))

    class WindowAttention(nn.Module):
        def __init__(self, dim, window_size, num_heads, qkv_bias=True, qk_scale=None, attn_drop=0., proj_drop=0.):
            super().__init__()
            self.dim = dim
            self.window_size = window_size  # Wh, Ww
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = qk_scale or head_dim ** -0.5
            self.relative_position_bias_table = nn.Parameter(
                torch.zeros((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads))
            coords_h = torch.arange(self.window_size[0])
            coords_w = torch.arange(self.window_size[1])
            coords = torch.stack(torch.meshgrid([coords_h, coords_w], indexing="ij"))  # 2, Wh, Ww
            coords_flatten = torch.flatten(coords, 1)  # 2, Wh*Ww
            relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]  # 2, Wh*Ww, Wh*Ww
            relative_coords = relative_coords.permute(1, 2, 0).contiguous()  # Wh*Ww, Wh*Ww, 2
            relative_coords[:, :, 0] += self.window_size[0] - 1  # shift to start from 0
            relative_coords[:, :, 1] += self.window_size[1] - 1
            relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
            relative_position_index = relative_coords.sum(-1)  # Wh*Ww, Wh*Ww
            self.register_buffer("relative_position_index", relative_position_index)
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)
            nn.init.trunc_normal_(self.relative_position_bias_table, std=.02)
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, x, mask=None):
            B_, N, C = x.shape
            qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            q = q * self.scale
            attn = (q @ k.transpose(-2, -1))
            relative_position_bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(
                self.window_size[0] * self.window_size[1], self.window_size[0] * self.window_size[1], -1)
            relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()  # nH, Wh*Ww, Wh*Ww
            attn = attn + relative_position_bias.unsqueeze(0)
            if mask is not None:
                nW = mask.shape[0]
                attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
                attn = attn.view(-1, self.num_heads, N, N)
                attn = self.softmax(attn)
            else:
                attn = self.softmax(attn)
            attn = self.attn_drop(attn)
            x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
            x = self.proj(x)
            x = self.proj_drop(x)
            return x

    class SwinTransformerBlock(nn.Module):
        def __init__(self, dim, input_resolution, num_heads, window_size=2, shift_size=0, mlp_ratio=2.,
                     norm_layer=nn.LayerNorm):
            super().__init__()
            self.dim, self.input_resolution, self.num_heads = dim, input_resolution, num_heads
            self.window_size, self.shift_size = window_size, shift_size
            if min(self.input_resolution) <= self.window_size:
                self.shift_size = 0
                self.window_size = min(self.input_resolution)
            assert 0 <= self.shift_size < self.window_size, "shift_size must in 0-window_size"
            self.norm1 = norm_layer(dim)
            self.attn = WindowAttention(dim, window_size=(self.window_size, self.window_size), num_heads=num_heads)
            self.drop_path = nn.Identity()
            self.norm2 = norm_layer(dim)
            self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio))
            if self.shift_size > 0:
                H, W = self.input_resolution
                img_mask = torch.zeros((1, H, W, 1))  # 1 H W 1
                h_slices = (slice(0, -self.window_size), slice(-self.window_size, -self.shift_size),
                            slice(-self.shift_size, None))
                w_slices = (slice(0, -self.window_size), slice(-self.window_size, -self.shift_size),
                            slice(-self.shift_size, None))
                cnt = 0
                for h in h_slices:
                    for w in w_slices:
                        img_mask[:, h, w, :] = cnt
                        cnt += 1
                mask_windows = window_partition(img_mask, self.window_size)  # nW, window_size, window_size, 1
                mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
                attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
                attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))
            else:
                attn_mask = None
            self.register_buffer("attn_mask", attn_mask)

        def forward(self, x):
            H, W = self.input_resolution
            B, L, C = x.shape
            assert L == H * W, "input feature has wrong size"
            shortcut = x
            x = self.norm1(x)
            x = x.view(B, H, W, C)
            if self.shift_size > 0:
                shifted_x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
            else:
                shifted_x = x
            x_windows = window_partition(shifted_x, self.window_size)  # nW*B, window_size, window_size, C
            x_windows = x_windows.view(-1, self.window_size * self.window_size, C)
            attn_windows = self.attn(x_windows, mask=self.attn_mask)
            attn_windows = attn_windows.view(-1, self.window_size, self.window_size, C)
            shifted_x = window_reverse(attn_windows, self.window_size, H, W)  # B H' W' C
            if self.shift_size > 0:
                x = torch.roll(shifted_x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
            else:
                x = shifted_x
            x = x.view(B, H * W, C)
            x = shortcut + self.drop_path(x)
            x = x + self.drop_path(self.mlp(self.norm2(x)))
            return x

    class PatchMerging(nn.Module):
        def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm):
            super().__init__()
            self.input_resolution = input_resolution
            self.dim = dim
            self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
            self.norm = norm_layer(4 * dim)

        def forward(self, x):
            H, W = self.input_resolution
            B, L, C = x.shape
            x = x.view(B, H, W, C)
            x0 = x[:, 0::2, 0::2, :]  # B H/2 W/2 C
            x1 = x[:, 1::2, 0::2, :]
            x2 = x[:, 0::2, 1::2, :]
            x3 = x[:, 1::2, 1::2, :]
            x = torch.cat([x0, x1, x2, x3], -1)  # B H/2 W/2 4*C
            x = x.view(B, -1, 4 * C)
            return self.reduction(self.norm(x))

    class PatchEmbed(nn.Module):
        def __init__(self, img_size=8, patch_size=2, in_chans=3, embed_dim=8):
            super().__init__()
            self.patches_resolution = [img_size // patch_size, img_size // patch_size]
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
            self.norm = nn.LayerNorm(embed_dim)

        def forward(self, x):
            x = self.proj(x).flatten(2).transpose(1, 2)  # B Ph*Pw C
            return self.norm(x)

    class SwinTransformer(nn.Module):
        def __init__(self, num_classes=10, embed_dim=8, num_heads=(2, 2), window_size=2):
            super().__init__()
            self.patch_embed = PatchEmbed(embed_dim=embed_dim)
            res = self.patch_embed.patches_resolution  # 4x4
            self.absolute_pos_embed = nn.Parameter(torch.zeros(1, res[0] * res[1], embed_dim))
            nn.init.trunc_normal_(self.absolute_pos_embed, std=.02)
            self.pos_drop = nn.Dropout(p=0.)
            self.layers = nn.ModuleList([
                nn.Sequential(SwinTransformerBlock(embed_dim, res, num_heads[0], window_size, 0),
                              SwinTransformerBlock(embed_dim, res, num_heads[0], window_size, window_size // 2)),
                PatchMerging(res, embed_dim),
            ])
            self.num_features = 2 * embed_dim
            self.norm = nn.LayerNorm(self.num_features)
            self.avgpool = nn.AdaptiveAvgPool1d(1)
            self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
            self.apply(self._init_weights)

        def _init_weights(self, m):
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.LayerNorm):
                nn.init.constant_(m.bias, 0)
                nn.init.constant_(m.weight, 1.0)

        def no_weight_decay(self):
            return {'absolute_pos_embed'}

        def no_weight_decay_keywords(self):
            return {'relative_position_bias_table'}

        def forward(self, x):
            x = self.patch_embed(x)
            x = x + self.absolute_pos_embed
            x = self.pos_drop(x)
            for layer in self.layers:
                x = layer(x)
            x = self.norm(x)  # B L C
            x = self.avgpool(x.transpose(1, 2))  # B C 1
            x = torch.flatten(x, 1)
            return self.head(x)

    model = SwinTransformer()
    init = load(m, model, state)
    # timm's parameter groups: no weight decay for 1-D parameters and the named ones
    skip, skip_keywords = model.no_weight_decay(), model.no_weight_decay_keywords()
    has_decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if len(param.shape) == 1 or name.endswith(".bias") or (name in skip) or \
                any(k in name for k in skip_keywords):
            no_decay.append(param)
        else:
            has_decay.append(param)
    opt = m.optim.AdamW([{'params': has_decay}, {'params': no_decay, 'weight_decay': 0.}], lr=1e-3,
                        betas=(0.9, 0.999), eps=1e-8, weight_decay=0.05)
    losses = []
    for x, y in batches(0, 2, (2, 3, 8, 8)):
        out = model(torch.tensor(x))
        loss = F.cross_entropy(out, torch.tensor(y), label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        losses.append(loss.item())
    losses.append(model.layers[0][1].attn_mask.sum().item())
    return init, losses


def test_swin():
    compare(swin)


# (c) ViT (lucidrains / timm style): a class token expanded over the batch, torch.cat before the
# position embedding, the head switched off by nn.Identity for features
def vit(m, state=None):
    torch, nn = m.torch, m.nn

    class Attention(nn.Module):
        def __init__(self, dim, heads=2, dim_head=4, dropout=0.):
            super().__init__()
            inner_dim = dim_head * heads
            project_out = not (heads == 1 and dim_head == dim)
            self.heads = heads
            self.scale = dim_head ** -0.5
            self.attend = nn.Softmax(dim=-1)
            self.dropout = nn.Dropout(dropout)
            self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
            self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout)) if project_out \
                else nn.Identity()

        def forward(self, x):
            qkv = self.to_qkv(x).chunk(3, dim=-1)
            b, n, _ = x.shape
            q, k, v = map(lambda t: t.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3), qkv)
            dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
            attn = self.dropout(self.attend(dots))
            out = torch.matmul(attn, v)
            out = out.permute(0, 2, 1, 3).reshape(b, n, -1)
            return self.to_out(out)

    class ViT(nn.Module):
        def __init__(self, image_size=8, patch_size=4, num_classes=10, dim=8, depth=1, mlp_dim=16, pool='cls'):
            super().__init__()
            num_patches = (image_size // patch_size) ** 2
            self.patch_size = patch_size
            self.to_patch_embedding = nn.Conv2d(3, dim, patch_size, patch_size)
            self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
            self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
            self.dropout = nn.Dropout(0.)
            self.layers = nn.ModuleList([])
            for _ in range(depth):
                self.layers.append(nn.ModuleList([
                    nn.LayerNorm(dim), Attention(dim),
                    nn.LayerNorm(dim), nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim)),
                ]))
            self.pool = pool
            self.to_latent = nn.Identity()
            self.mlp_head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_classes))

        def forward(self, img):
            x = self.to_patch_embedding(img).flatten(2).transpose(1, 2)
            b, n, _ = x.shape
            cls_tokens = self.cls_token.expand(b, -1, -1)
            x = torch.cat((cls_tokens, x), dim=1)
            x += self.pos_embedding[:, :(n + 1)]
            x = self.dropout(x)
            for norm1, attn, norm2, ff in self.layers:
                x = attn(norm1(x)) + x
                x = ff(norm2(x)) + x
            x = x.mean(dim=1) if self.pool == 'mean' else x[:, 0]
            x = self.to_latent(x)
            return self.mlp_head(x)

    model = ViT()
    init, losses = train(m, model, state, steps=2)
    model.mlp_head = nn.Identity()  # a feature extractor
    with torch.no_grad():
        feats = model(torch.tensor(batches(3, 1, (2, 3, 8, 8))[0][0]))
    assert tuple(feats.shape) == (2, 8)
    losses.append(feats.abs().sum().item())
    model.pool = 'mean'
    with torch.no_grad():
        losses.append(model(torch.tensor(batches(3, 1, (2, 3, 8, 8))[0][0])).abs().sum().item())
    return init, losses


def test_vit():
    compare(vit)


# (d) CBAM (Jongchan/attention-module style): channel attention from average and max pooling through
# a shared MLP, spatial attention from the channel mean and max concatenated
def cbam(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Flatten(nn.Module):
        def forward(self, x):
            return x.view(x.size(0), -1)

    class ChannelGate(nn.Module):
        def __init__(self, gate_channels, reduction_ratio=2, pool_types=['avg', 'max']):
            super(ChannelGate, self).__init__()
            self.gate_channels = gate_channels
            self.mlp = nn.Sequential(
                Flatten(),
                nn.Linear(gate_channels, gate_channels // reduction_ratio),
                nn.ReLU(),
                nn.Linear(gate_channels // reduction_ratio, gate_channels)
            )
            self.pool_types = pool_types

        def forward(self, x):
            channel_att_sum = None
            for pool_type in self.pool_types:
                if pool_type == 'avg':
                    avg_pool = F.avg_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                    channel_att_raw = self.mlp(avg_pool)
                elif pool_type == 'max':
                    max_pool = F.max_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                    channel_att_raw = self.mlp(max_pool)
                elif pool_type == 'lse':
                    tensor_flatten = x.view(x.size(0), x.size(1), -1)
                    s, _ = torch.max(tensor_flatten, dim=2, keepdim=True)
                    outputs = s + (tensor_flatten - s).exp().sum(dim=2, keepdim=True).log()
                    channel_att_raw = self.mlp(outputs)
                if channel_att_sum is None:
                    channel_att_sum = channel_att_raw
                else:
                    channel_att_sum = channel_att_sum + channel_att_raw
            scale = torch.sigmoid(channel_att_sum).unsqueeze(2).unsqueeze(3).expand_as(x)
            return x * scale

    class ChannelPool(nn.Module):
        def forward(self, x):
            return torch.cat((torch.max(x, 1)[0].unsqueeze(1), torch.mean(x, 1).unsqueeze(1)), dim=1)

    class SpatialGate(nn.Module):
        def __init__(self):
            super(SpatialGate, self).__init__()
            kernel_size = 7
            self.compress = ChannelPool()
            self.spatial = nn.Sequential(nn.Conv2d(2, 1, kernel_size, stride=1, padding=(kernel_size - 1) // 2,
                                                   bias=False), nn.BatchNorm2d(1, eps=1e-5, momentum=0.01, affine=True))

        def forward(self, x):
            x_out = self.spatial(self.compress(x))
            scale = torch.sigmoid(x_out)  # broadcasting
            return x * scale

    class CBAM(nn.Module):
        def __init__(self, gate_channels, reduction_ratio=2, pool_types=['avg', 'max', 'lse']):
            super(CBAM, self).__init__()
            self.ChannelGate = ChannelGate(gate_channels, reduction_ratio, pool_types)
            self.SpatialGate = SpatialGate()

        def forward(self, x):
            return self.SpatialGate(self.ChannelGate(x))

    # the other common form (luuuyi/CBAM.PyTorch): 1x1 convs on AdaptiveAvg/MaxPool2d, torch.mean/max with keepdim
    class ChannelAttention(nn.Module):
        def __init__(self, in_planes, ratio=2):
            super(ChannelAttention, self).__init__()
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.max_pool = nn.AdaptiveMaxPool2d(1)
            self.fc = nn.Sequential(nn.Conv2d(in_planes, in_planes // ratio, 1, bias=False), nn.ReLU(),
                                    nn.Conv2d(in_planes // ratio, in_planes, 1, bias=False))
            self.sigmoid = nn.Sigmoid()

        def forward(self, x):
            return self.sigmoid(self.fc(self.avg_pool(x)) + self.fc(self.max_pool(x)))

    class SpatialAttention(nn.Module):
        def __init__(self, kernel_size=7):
            super(SpatialAttention, self).__init__()
            self.conv1 = nn.Conv2d(2, 1, kernel_size, padding=kernel_size // 2, bias=False)
            self.sigmoid = nn.Sigmoid()

        def forward(self, x):
            avg_out = torch.mean(x, dim=1, keepdim=True)
            max_out, _ = torch.max(x, dim=1, keepdim=True)
            x = torch.cat([avg_out, max_out], dim=1)
            return self.sigmoid(self.conv1(x))

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None, use_cbam=True):
            super(BasicBlock, self).__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.ca = ChannelAttention(planes)
            self.sa = SpatialAttention()
            self.cbam = CBAM(planes, 2) if use_cbam else None
            self.downsample = downsample

        def forward(self, x):
            residual = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out = self.ca(out) * out
            out = self.sa(out) * out
            if self.cbam is not None:
                out = self.cbam(out)
            if self.downsample is not None:
                residual = self.downsample(x)
            out += residual
            return self.relu(out)

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                          BasicBlock(4, 8, 2, nn.Sequential(nn.Conv2d(4, 8, 1, 2, bias=False), nn.BatchNorm2d(8))),
                          nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(8, 10))
    for mod in model.modules():
        if isinstance(mod, nn.Conv2d):
            n = mod.kernel_size[0] * mod.kernel_size[1] * mod.out_channels
            mod.weight.data.normal_(0, math.sqrt(2. / n))
        elif isinstance(mod, nn.BatchNorm2d):
            mod.weight.data.fill_(1)
            mod.bias.data.zero_()
    return train(m, model, state)


def test_cbam():
    compare(cbam)


# (e) SENet and SKNet (moskomule/senet.pytorch, pppLang/SKNet styles): squeeze-excitation by
# AdaptiveAvgPool2d and Linears, selective kernels with torch.stack over branches, sum(dim=1) and
# a softmax over the branch dim
def se_sk(m, state=None):
    torch, nn = m.torch, m.nn

    class SELayer(nn.Module):
        def __init__(self, channel, reduction=2):
            super(SELayer, self).__init__()
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Sequential(nn.Linear(channel, channel // reduction, bias=False), nn.ReLU(inplace=True),
                                    nn.Linear(channel // reduction, channel, bias=False), nn.Sigmoid())

        def forward(self, x):
            b, c, _, _ = x.size()
            y = self.avg_pool(x).view(b, c)
            y = self.fc(y).view(b, c, 1, 1)
            return x * y.expand_as(x)

    class SKConv(nn.Module):
        def __init__(self, features, M=2, G=2, r=2, stride=1, L=4):
            super(SKConv, self).__init__()
            d = max(int(features / r), L)
            self.M = M
            self.features = features
            self.convs = nn.ModuleList([])
            for i in range(M):
                self.convs.append(nn.Sequential(
                    nn.Conv2d(features, features, kernel_size=3, stride=stride, padding=1 + i, dilation=1 + i,
                              groups=G, bias=False),
                    nn.BatchNorm2d(features), nn.ReLU(inplace=True)))
            self.gap = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Sequential(nn.Conv2d(features, d, kernel_size=1, stride=1, bias=False),
                                    nn.BatchNorm2d(d), nn.ReLU(inplace=True))
            self.fcs = nn.ModuleList([])
            for i in range(M):
                self.fcs.append(nn.Conv2d(d, features, kernel_size=1, stride=1))
            self.softmax = nn.Softmax(dim=1)

        def forward(self, x):
            batch_size = x.shape[0]
            feats = [conv(x) for conv in self.convs]
            feats = torch.cat(feats, dim=1)
            feats = feats.view(batch_size, self.M, self.features, feats.shape[2], feats.shape[3])
            feats_U = torch.sum(feats, dim=1)
            feats_S = self.gap(feats_U)
            feats_Z = self.fc(feats_S)
            attention_vectors = [fc(feats_Z) for fc in self.fcs]
            attention_vectors = torch.cat(attention_vectors, dim=1)
            attention_vectors = attention_vectors.view(batch_size, self.M, self.features, 1, 1)
            attention_vectors = self.softmax(attention_vectors)
            return torch.sum(feats * attention_vectors, dim=1)

    class SKUnitOld(nn.Module):  # the older form: unsqueeze_(dim=1), torch.stack-free cat, sum(dim=1)
        def __init__(self, features, M=2):
            super().__init__()
            self.convs = nn.ModuleList([nn.Conv2d(features, features, 3, padding=1 + i, dilation=1 + i)
                                        for i in range(M)])
            self.fc = nn.Linear(features, 4)
            self.fcs = nn.ModuleList([nn.Linear(4, features) for _ in range(M)])
            self.softmax = nn.Softmax(dim=1)

        def forward(self, x):
            feas = attention_vectors = None
            for i, conv in enumerate(self.convs):
                fea = conv(x).unsqueeze_(dim=1)
                feas = fea if i == 0 else torch.cat([feas, fea], dim=1)
            fea_U = torch.sum(feas, dim=1)
            fea_s = fea_U.mean(-1).mean(-1)
            fea_z = self.fc(fea_s)
            for i, fc in enumerate(self.fcs):
                vector = fc(fea_z).unsqueeze_(dim=1)
                attention_vectors = vector if i == 0 else torch.cat([attention_vectors, vector], dim=1)
            attention_vectors = self.softmax(attention_vectors)
            attention_vectors = attention_vectors.unsqueeze(-1).unsqueeze(-1)
            return (feas * attention_vectors).sum(dim=1)

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), SELayer(4), SKConv(4), SKUnitOld(4),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
    return train(m, model, state)


def test_se_sk():
    compare(se_sk)


# (f) MobileNetV3 (d-li14/mobilenetv3.pytorch style): _make_divisible, h_sigmoid/h_swish by hand and
# as nn.Hardsigmoid/Hardswish, SE with AdaptiveAvgPool2d, inverted residuals from a cfg table
def mobilenetv3(m, state=None):
    nn = m.nn

    def _make_divisible(v, divisor, min_value=None):
        if min_value is None:
            min_value = divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        if new_v < 0.9 * v:
            new_v += divisor
        return new_v

    class h_sigmoid(nn.Module):
        def __init__(self, inplace=True):
            super(h_sigmoid, self).__init__()
            self.relu = nn.ReLU6(inplace=inplace)

        def forward(self, x):
            return self.relu(x + 3) / 6

    class h_swish(nn.Module):
        def __init__(self, inplace=True):
            super(h_swish, self).__init__()
            self.sigmoid = h_sigmoid(inplace=inplace)

        def forward(self, x):
            return x * self.sigmoid(x)

    class SELayer(nn.Module):
        def __init__(self, channel, reduction=4):
            super(SELayer, self).__init__()
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Sequential(nn.Linear(channel, _make_divisible(channel // reduction, 4)), nn.ReLU(inplace=True),
                                    nn.Linear(_make_divisible(channel // reduction, 4), channel), nn.Hardsigmoid())

        def forward(self, x):
            b, c, _, _ = x.size()
            y = self.avg_pool(x).view(b, c)
            y = self.fc(y).view(b, c, 1, 1)
            return x * y

    def conv_3x3_bn(inp, oup, stride):
        return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup), h_swish())

    class InvertedResidual(nn.Module):
        def __init__(self, inp, hidden_dim, oup, kernel_size, stride, use_se, use_hs):
            super(InvertedResidual, self).__init__()
            assert stride in [1, 2]
            self.identity = stride == 1 and inp == oup
            self.conv = nn.Sequential(
                nn.Conv2d(inp, hidden_dim, 1, 1, 0, bias=False), nn.BatchNorm2d(hidden_dim),
                nn.Hardswish() if use_hs else nn.ReLU(inplace=True),
                nn.Conv2d(hidden_dim, hidden_dim, kernel_size, stride, (kernel_size - 1) // 2, groups=hidden_dim,
                          bias=False),
                nn.BatchNorm2d(hidden_dim),
                SELayer(hidden_dim) if use_se else nn.Identity(),
                h_swish() if use_hs else nn.ReLU(inplace=True),
                nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup))

        def forward(self, x):
            return x + self.conv(x) if self.identity else self.conv(x)

    class MobileNetV3(nn.Module):
        def __init__(self, cfgs, num_classes=10, width_mult=1.):
            super(MobileNetV3, self).__init__()
            self.cfgs = cfgs
            input_channel = _make_divisible(8 * width_mult, 4)
            layers = [conv_3x3_bn(3, input_channel, 1)]
            block = InvertedResidual
            for k, t, c, use_se, use_hs, s in self.cfgs:
                output_channel = _make_divisible(c * width_mult, 4)
                exp_size = _make_divisible(input_channel * t, 4)
                layers.append(block(input_channel, exp_size, output_channel, k, s, use_se, use_hs))
                input_channel = output_channel
            self.features = nn.Sequential(*layers)
            self.conv = nn.Sequential(nn.Conv2d(input_channel, exp_size, 1, 1, 0, bias=False),
                                      nn.BatchNorm2d(exp_size), h_swish())
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.classifier = nn.Sequential(nn.Linear(exp_size, 16), h_swish(), nn.Dropout(0.0),
                                            nn.Linear(16, num_classes))
            self._initialize_weights()

        def forward(self, x):
            x = self.features(x)
            x = self.conv(x)
            x = self.avgpool(x)
            x = x.view(x.size(0), -1)
            return self.classifier(x)

        def _initialize_weights(self):
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                    m.weight.data.normal_(0, math.sqrt(2. / n))
                    if m.bias is not None:
                        m.bias.data.zero_()
                elif isinstance(m, nn.BatchNorm2d):
                    m.weight.data.fill_(1)
                    m.bias.data.zero_()
                elif isinstance(m, nn.Linear):
                    m.weight.data.normal_(0, 0.01)
                    m.bias.data.zero_()

    cfgs = [[3, 1, 8, 1, 0, 2], [5, 2, 8, 0, 1, 1], [3, 2, 12, 1, 1, 1]]
    return train(m, MobileNetV3(cfgs), state)


def test_mobilenetv3():
    compare(mobilenetv3)


# (g) ResNeSt's split attention (rSoftMax over the radix) and Res2Net's scales (torch.split by
# width, a loop of convs, torch.cat); GhostNet's cheap operations sliced to out[:, :self.oup]
def split_nets(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

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
        def __init__(self, in_channels, channels, kernel_size, padding=0, groups=1, radix=2, reduction_factor=2):
            super(SplAtConv2d, self).__init__()
            inter_channels = max(in_channels * radix // reduction_factor, 4)
            self.radix, self.cardinality, self.channels = radix, groups, channels
            self.conv = nn.Conv2d(in_channels, channels * radix, kernel_size, 1, padding, groups=groups * radix,
                                  bias=False)
            self.bn0 = nn.BatchNorm2d(channels * radix)
            self.relu = nn.ReLU(inplace=True)
            self.fc1 = nn.Conv2d(channels, inter_channels, 1, groups=self.cardinality)
            self.bn1 = nn.BatchNorm2d(inter_channels)
            self.fc2 = nn.Conv2d(inter_channels, channels * radix, 1, groups=self.cardinality)
            self.rsoftmax = rSoftMax(radix, groups)

        def forward(self, x):
            x = self.relu(self.bn0(self.conv(x)))
            batch, rchannel = x.shape[:2]
            if self.radix > 1:
                splited = torch.split(x, rchannel // self.radix, dim=1)
                gap = sum(splited)
            else:
                gap = x
            gap = F.adaptive_avg_pool2d(gap, 1)
            gap = self.relu(self.bn1(self.fc1(gap)))
            atten = self.fc2(gap)
            atten = self.rsoftmax(atten).view(batch, -1, 1, 1)
            if self.radix > 1:
                attens = torch.split(atten, rchannel // self.radix, dim=1)
                out = sum([att * split for (att, split) in zip(attens, splited)])
            else:
                out = atten * x
            return out.contiguous()

    class Bottle2neck(nn.Module):
        expansion = 2

        def __init__(self, inplanes, planes, stride=1, downsample=None, baseWidth=8, scale=3, stype='normal'):
            super(Bottle2neck, self).__init__()
            width = int(math.floor(planes * (baseWidth / 16.0)))
            self.conv1 = nn.Conv2d(inplanes, width * scale, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(width * scale)
            self.nums = 1 if scale == 1 else scale - 1
            if stype == 'stage':
                self.pool = nn.AvgPool2d(kernel_size=3, stride=stride, padding=1)
            convs, bns = [], []
            for i in range(self.nums):
                convs.append(nn.Conv2d(width, width, kernel_size=3, stride=stride, padding=1, bias=False))
                bns.append(nn.BatchNorm2d(width))
            self.convs = nn.ModuleList(convs)
            self.bns = nn.ModuleList(bns)
            self.conv3 = nn.Conv2d(width * scale, planes * self.expansion, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * self.expansion)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stype, self.scale, self.width = stype, scale, width

        def forward(self, x):
            residual = x
            out = self.relu(self.bn1(self.conv1(x)))
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
            out = self.bn3(self.conv3(out))
            if self.downsample is not None:
                residual = self.downsample(x)
            out += residual
            return self.relu(out)

    class GhostModule(nn.Module):
        def __init__(self, inp, oup, kernel_size=1, ratio=2, dw_size=3, stride=1, relu=True):
            super(GhostModule, self).__init__()
            self.oup = oup
            init_channels = math.ceil(oup / ratio)
            new_channels = init_channels * (ratio - 1)
            self.primary_conv = nn.Sequential(
                nn.Conv2d(inp, init_channels, kernel_size, stride, kernel_size // 2, bias=False),
                nn.BatchNorm2d(init_channels), nn.ReLU(inplace=True) if relu else nn.Sequential())
            self.cheap_operation = nn.Sequential(
                nn.Conv2d(init_channels, new_channels, dw_size, 1, dw_size // 2, groups=init_channels, bias=False),
                nn.BatchNorm2d(new_channels), nn.ReLU(inplace=True) if relu else nn.Sequential())

        def forward(self, x):
            x1 = self.primary_conv(x)
            x2 = self.cheap_operation(x1)
            out = torch.cat([x1, x2], dim=1)
            return out[:, :self.oup, :, :]

    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                          SplAtConv2d(8, 4, 3, padding=1, groups=2),
                          Bottle2neck(4, 4, downsample=nn.Sequential(nn.Conv2d(4, 8, 1, bias=False), nn.BatchNorm2d(8))),
                          Bottle2neck(8, 4, stride=2, stype='stage',
                                      downsample=nn.Sequential(nn.Conv2d(8, 8, 1, 2, bias=False), nn.BatchNorm2d(8))),
                          GhostModule(8, 7), GhostModule(7, 5, relu=False),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(5, 10))
    return train(m, model, state)


def test_split_nets():
    compare(split_nets)


# (h) EfficientNet (lukemelas/EfficientNet-PyTorch style): a memory-efficient Swish as an
# autograd.Function, static same padding by a Conv2d subclass reading self.stride, MBConv with SE
# and drop connect (stochastic depth from torch.rand < survival)
def efficientnet(m, state=None, drop_connect_rate=0.0):
    torch, nn, F = m.torch, m.nn, m.F

    class SwishImplementation(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i * torch.sigmoid(i)
            ctx.save_for_backward(i)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            i = ctx.saved_tensors[0]
            sigmoid_i = torch.sigmoid(i)
            return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))

    class MemoryEfficientSwish(nn.Module):
        def forward(self, x):
            return SwishImplementation.apply(x)

    def drop_connect(inputs, p, training):
        assert 0 <= p <= 1, 'p must be in range of [0,1]'
        if not training:
            return inputs
        batch_size = inputs.shape[0]
        keep_prob = 1 - p
        random_tensor = keep_prob
        random_tensor += torch.rand([batch_size, 1, 1, 1], dtype=inputs.dtype, device=inputs.device)
        binary_tensor = torch.floor(random_tensor)
        return inputs / keep_prob * binary_tensor

    def stochastic_depth(x, survival, training):  # torchvision's form
        if not training:
            return x
        binary_tensor = torch.rand([x.shape[0], 1, 1, 1], dtype=x.dtype, device=x.device) < survival
        return x / survival * binary_tensor

    class Conv2dStaticSamePadding(nn.Conv2d):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, image_size=None, **kwargs):
            super().__init__(in_channels, out_channels, kernel_size, stride, **kwargs)
            self.stride = self.stride if len(self.stride) == 2 else [self.stride[0]] * 2
            ih, iw = (image_size, image_size) if isinstance(image_size, int) else image_size
            kh, kw = self.weight.size()[-2:]
            sh, sw = self.stride
            oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
            pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
            pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
            if pad_h > 0 or pad_w > 0:
                self.static_padding = nn.ZeroPad2d((pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2))
            else:
                self.static_padding = nn.Identity()

        def forward(self, x):
            x = self.static_padding(x)
            return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    class MBConvBlock(nn.Module):
        def __init__(self, inp, oup, expand_ratio, kernel_size, stride, image_size, se_ratio=0.25):
            super().__init__()
            self._bn_mom, self._bn_eps = 1 - 0.99, 1e-3
            self.id_skip = stride == 1 and inp == oup
            hidden = inp * expand_ratio
            self._expand_conv = Conv2dStaticSamePadding(inp, hidden, 1, bias=False, image_size=image_size)
            self._bn0 = nn.BatchNorm2d(num_features=hidden, momentum=self._bn_mom, eps=self._bn_eps)
            self._depthwise_conv = Conv2dStaticSamePadding(hidden, hidden, kernel_size, stride, groups=hidden,
                                                           bias=False, image_size=image_size)
            self._bn1 = nn.BatchNorm2d(num_features=hidden, momentum=self._bn_mom, eps=self._bn_eps)
            squeezed = max(1, int(inp * se_ratio))
            self._se_reduce = Conv2dStaticSamePadding(hidden, squeezed, 1, image_size=1)
            self._se_expand = Conv2dStaticSamePadding(squeezed, hidden, 1, image_size=1)
            self._project_conv = Conv2dStaticSamePadding(hidden, oup, 1, bias=False, image_size=image_size)
            self._bn2 = nn.BatchNorm2d(num_features=oup, momentum=self._bn_mom, eps=self._bn_eps)
            self._swish = MemoryEfficientSwish()

        def forward(self, inputs, drop_connect_rate=None):
            x = self._swish(self._bn0(self._expand_conv(inputs)))
            x = self._swish(self._bn1(self._depthwise_conv(x)))
            x_squeezed = F.adaptive_avg_pool2d(x, 1)
            x_squeezed = self._se_expand(self._swish(self._se_reduce(x_squeezed)))
            x = torch.sigmoid(x_squeezed) * x
            x = self._bn2(self._project_conv(x))
            if self.id_skip:
                if drop_connect_rate:
                    x = drop_connect(x, p=drop_connect_rate, training=self.training)
                    x = stochastic_depth(x, 1 - drop_connect_rate, self.training)
                x = x + inputs
            return x

    class EfficientNet(nn.Module):
        def __init__(self, drop_connect_rate):
            super().__init__()
            self._conv_stem = Conv2dStaticSamePadding(3, 8, 3, 2, bias=False, image_size=8)
            self._bn0 = nn.BatchNorm2d(8, momentum=0.01, eps=1e-3)
            self._blocks = nn.ModuleList([MBConvBlock(8, 8, 2, 3, 2, 4), MBConvBlock(8, 8, 2, 5, 1, 2)])
            self._avg_pooling = nn.AdaptiveAvgPool2d(1)
            self._dropout = nn.Dropout(0.0)
            self._fc = nn.Linear(8, 10)
            self._swish = MemoryEfficientSwish()
            self.drop_connect_rate = drop_connect_rate

        def forward(self, inputs):
            x = self._swish(self._bn0(self._conv_stem(inputs)))
            for idx, block in enumerate(self._blocks):
                drop_connect_rate = self.drop_connect_rate
                if drop_connect_rate:
                    drop_connect_rate *= float(idx) / len(self._blocks)  # scale drop connect_rate
                x = block(x, drop_connect_rate=drop_connect_rate)
            x = self._avg_pooling(x).flatten(start_dim=1)
            return self._fc(self._dropout(x))

    return train(m, EfficientNet(drop_connect_rate), state, noisy=lambda: EfficientNet(0.5))


def test_efficientnet():
    compare(efficientnet)


# (i) a training script around SqueezeNet's fire module and NiN's mlpconv: a Dataset over numpy
# arrays with transforms as callables, a warmup _LRScheduler then CosineAnnealingWarmRestarts stepped
# by fractional epochs, autocast and GradScaler, gradient accumulation, module surgery through
# named_modules and setattr, parameter and FLOP counts from forward hooks, top-1/top-5, a confusion
# matrix, an EMA of the weights, and a checkpoint of model, optimizer, scheduler and scaler resumed
def training_idioms(m, state=None, tmp_path=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    _LRScheduler = m.lr_scheduler._LRScheduler

    class Fire(nn.Module):
        def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
            super(Fire, self).__init__()
            self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
            self.squeeze_activation = nn.ReLU(inplace=True)
            self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
            self.expand1x1_activation = nn.ReLU(inplace=True)
            self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
            self.expand3x3_activation = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.squeeze_activation(self.squeeze(x))
            return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                              self.expand3x3_activation(self.expand3x3(x))], 1)

    class Net(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1), nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(8, 2, 4, 4))
            self.mlpconv = nn.Sequential(  # NiN
                nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1), nn.ReLU(inplace=True),
                nn.Conv2d(8, num_classes, kernel_size=1), nn.ReLU(inplace=True),
                nn.AvgPool2d(kernel_size=3, stride=2, padding=1))
            self.gap = nn.AdaptiveAvgPool2d((1, 1))

        def forward(self, x):
            return torch.flatten(self.gap(self.mlpconv(self.features(x))), 1)

    class NumpyDataset(data.Dataset):
        def __init__(self, images, labels, transform=None):
            self.images, self.labels, self.transform = images, labels, transform

        def __len__(self):
            return len(self.images)

        def __getitem__(self, index):
            img, target = self.images[index], int(self.labels[index])
            if self.transform is not None:
                img = self.transform(img)
            return img, target

    class ToTensor:
        def __call__(self, pic):
            return torch.from_numpy(np.ascontiguousarray(pic.transpose((2, 0, 1)))).float().div(255)

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = mean, std

        def __call__(self, tensor):
            mean = torch.as_tensor(self.mean, dtype=tensor.dtype).view(-1, 1, 1)
            std = torch.as_tensor(self.std, dtype=tensor.dtype).view(-1, 1, 1)
            return tensor.sub(mean).div(std)

    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, img):
            for t in self.transforms:
                img = t(img)
            return img

    class WarmUpLR(_LRScheduler):
        def __init__(self, optimizer, total_iters, last_epoch=-1):
            self.total_iters = total_iters
            super().__init__(optimizer, last_epoch)

        def get_lr(self):
            return [base_lr * self.last_epoch / (self.total_iters + 1e-8) for base_lr in self.base_lrs]

    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, (4, 8, 8, 3), dtype=np.uint8), rng.integers(0, 10, 4)
    transform = Compose([ToTensor(), Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26))])
    loader = data.DataLoader(NumpyDataset(images, labels, transform), batch_size=2, shuffle=False, num_workers=0,
                             pin_memory=True, drop_last=True)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    model = Net().to(device)
    for name, module in list(model.named_modules()):  # surgery: the classifier's last ReLU goes
        if name == 'mlpconv.5':
            setattr(model.mlpconv, '5', nn.Identity())
    init = load(m, model, state)
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    flops, hooks = [], []

    def conv_flops(module, input, output):
        flops.append(output.numel() * module.weight[0].numel() // input[0].shape[0])

    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            hooks.append(module.register_forward_hook(conv_flops))
    model(torch.zeros(1, 3, 8, 8, device=device))
    for h in hooks:
        h.remove()
    ema = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
    warmup = WarmUpLR(optimizer, total_iters=2)
    scheduler = optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=1, T_mult=2, eta_min=1e-3)
    scaler = torch.cuda.amp.GradScaler(enabled=device == 'cuda')
    accumulation, losses = 2, [float(n_params), float(sum(flops))]
    for epoch in range(2):
        model.train()
        for i, (inputs, targets) in enumerate(loader):
            inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
            with torch.cuda.amp.autocast(enabled=device == 'cuda'):
                outputs = model(inputs)
                loss = F.cross_entropy(outputs, targets) / accumulation
            scaler.scale(loss).backward()
            if (i + 1) % accumulation == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
                with torch.no_grad():
                    for name, p in model.named_parameters():
                        ema[name].mul_(0.9).add_(p.detach(), alpha=1 - 0.9)
            if epoch == 0:
                warmup.step()
            else:
                scheduler.step(epoch - 1 + i / len(loader))
            losses.append(loss.item() * accumulation)
        losses.append(optimizer.param_groups[0]['lr'])
    # evaluation: top-1/top-5 and a confusion matrix
    model.eval()
    correct_1 = correct_5 = total = 0
    confusion = torch.zeros(10, 10, dtype=torch.long, device=device)
    with torch.no_grad():
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            outputs = model(inputs)
            _, pred = outputs.topk(5, 1, largest=True, sorted=True)
            correct = pred.eq(targets.view(targets.size(0), -1).expand_as(pred)).float()
            correct_5 += correct[:, :5].sum().item()
            correct_1 += correct[:, :1].sum().item()
            total += targets.size(0)
            for t, p in zip(targets.view(-1), outputs.argmax(1).view(-1)):
                confusion[t.long(), p.long()] += 1
    per_class = confusion.diag().float() / confusion.sum(1).clamp(min=1).float()
    losses += [correct_1 / total, correct_5 / total, per_class.sum().item(), float(confusion.sum())]
    # checkpoint and resume
    path = str(tmp_path / 'ckpt.pth')
    torch.save({'epoch': 2, 'state_dict': model.state_dict(), 'optimizer': optimizer.state_dict(),
                'scheduler': scheduler.state_dict(), 'scaler': scaler.state_dict(),
                'ema': {k: v.cpu() for k, v in ema.items()}}, path)
    checkpoint = torch.load(path, map_location=device)
    resumed = Net().to(device)
    resumed.mlpconv[5] = nn.Identity()
    resumed.load_state_dict(checkpoint['state_dict'])
    optimizer = optim.SGD(resumed.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
    optimizer.load_state_dict(checkpoint['optimizer'])
    scheduler = optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=1, T_mult=2, eta_min=1e-3)
    scheduler.load_state_dict(checkpoint['scheduler'])
    scaler.load_state_dict(checkpoint['scaler'])
    start_epoch = checkpoint['epoch']
    inputs, targets = (t.to(device) for t in next(iter(loader)))
    loss = F.cross_entropy(resumed(inputs), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step(start_epoch)
    losses += [loss.item(), optimizer.param_groups[0]['lr']]
    with torch.no_grad():  # the EMA weights into the model
        for name, p in resumed.named_parameters():
            p.copy_(checkpoint['ema'][name])
    losses.append(resumed(inputs).sum().item())
    return init, losses


def test_training_idioms(tmp_path):
    compare(training_idioms, tmp_path=tmp_path)
