"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: BlinkDL's RWKV-v4 (token shift by a negatively padded ZeroPad2d, the WKV recurrence with its
running maximum, L2Wrap's custom backward, the trainer's lr schedule written into param groups); rosinality's
StyleGAN2 at 4x4 (modulated, demodulated grouped convolutions, noise injection, minibatch stddev, the R1 and path
length penalties by autograd.grad(create_graph=True), lazy regularisation, the EMA by mul_ and add_); vgsatorras' EGNN
(segment sums by scatter_add_, an E(n) check); NVlabs' EDM (preconditioning, the log-normal sigma loss,
nan_to_num(..., out=param.grad), which found that tnet's top-level functions lacked out= where torch's take it, the
EMA by lerp, Heun's sampler); facebookresearch's schedule-free AdamW reference (a torch.optim.Optimizer subclass with
train() and eval()); amdegroot's SSD MultiBoxLoss (matching, hard negative mining by a double sort); SchNet trained on
energies and forces (a double backward through index_add_, which found that create_graph did not go through
index_add, scatter_add, scatter, scatter_reduce, index_copy nor Tensor.unfold); dreamquark's TabNet (ghost batch norm,
entmax15 as a Function); mklimasz's TransE (in-place renormalisation through .data, MarginRankingLoss with a long
target, torch.arange(end=n), which tnet refused); lucidrains' FSQ in an autoencoder; RexYing's DiffPool (a fresh
BatchNorm1d per forward, the link prediction loss); Informer's ProbSparse attention (advanced-index reads and writes,
topk(sorted=False), circular Conv1d embeddings, distilling); LSTNet (its own Optim wrapper, size_average criteria);
and fairseq's wav2vec 2.0 pretraining step (masking by mask_emb, the Gumbel quantizer's hard codes, sampled negatives,
logits[1:][neg_is_pos] = -inf). Each runs in tnet, then in torch from tnet's initial weights (state_dict through
numpy), and the losses, and the weights summed into a few numbers, agree. Numpy (or Python's random, seeded alike on
both sides) draws what a script draws, or torch replays tnet's draws (`replayed`); shapes are tiny and runs take one
or two steps. Where Adam would normalise a gradient that is rounding alone (a key projection's bias, a bias before a
BatchNorm), the summary leaves that parameter out or the layer has no bias, as the script says."""
import itertools
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def replayed(m, replay, key, t):
    """t as tnet drew it: tnet's run keeps its draw under key, torch's run takes that draw in place of its own."""
    return m.torch.tensor(replay.setdefault(key, t.detach().cpu().numpy().copy()))


# (a) BlinkDL/RWKV-LM's RWKV-v4 src/model.py and trainer.py, with the WKV recurrence written in PyTorch as its CPU
# ports write it (the running max pp for stability, torch.maximum, exp of differences): RWKV_TimeMix and
# RWKV_ChannelMix shifting tokens by nn.ZeroPad2d((0, 0, 1, -1)) (a negative pad crops the last step), the "fancy
# init" under torch.no_grad() (decay_speed filled element by element, a zigzag, time_mix by torch.pow of a ramp),
# squared ReLU, ln0 in the first block only, L2Wrap (a custom Function whose backward scatters the logits' max into a
# gradient), _init_weights through apply, Adam over one no-decay group with betas (0.9, 0.99) and eps=1e-8, the
# trainer's lr warmup then exponential decay written into each param_group, clip_grad_norm_, ppl by math.exp
def rwkv_v4(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    np.random.seed(0)

    class Config:
        vocab_size, ctx_len, n_embd, n_layer = 11, 3, 8, 2

    class RWKV_TimeMix(nn.Module):
        def __init__(self, config, layer_id):
            super().__init__()
            self.layer_id = layer_id
            self.ctx_len = config.ctx_len
            self.n_embd = config.n_embd
            attn_sz = config.n_embd
            with torch.no_grad():  # fancy init
                ratio_0_to_1 = (layer_id / (config.n_layer - 1))  # 0 to 1
                ratio_1_to_almost0 = (1.0 - (layer_id / config.n_layer))  # 1 to ~0
                # fancy time_decay
                decay_speed = torch.ones(attn_sz)
                for h in range(attn_sz):
                    decay_speed[h] = -5 + 8 * (h / (attn_sz - 1)) ** (0.7 + 1.3 * ratio_0_to_1)
                self.time_decay = nn.Parameter(decay_speed)
                # fancy time_first
                zigzag = (torch.tensor([(i + 1) % 3 - 1 for i in range(attn_sz)]) * 0.5)
                self.time_first = nn.Parameter(torch.ones(attn_sz) * math.log(0.3) + zigzag)
                # fancy time_mix
                x = torch.ones(1, 1, config.n_embd)
                for i in range(config.n_embd):
                    x[0, 0, i] = i / config.n_embd
                self.time_mix_k = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
                self.time_mix_v = nn.Parameter(torch.pow(x, ratio_1_to_almost0) + 0.3 * ratio_0_to_1)
                self.time_mix_r = nn.Parameter(torch.pow(x, 0.5 * ratio_1_to_almost0))
            self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
            self.key = nn.Linear(config.n_embd, attn_sz, bias=False)
            self.value = nn.Linear(config.n_embd, attn_sz, bias=False)
            self.receptance = nn.Linear(config.n_embd, attn_sz, bias=False)
            self.output = nn.Linear(attn_sz, config.n_embd, bias=False)
            self.key.scale_init = 0
            self.receptance.scale_init = 0
            self.output.scale_init = 0

        def forward(self, x):
            B, T, C = x.size()  # x = (Batch,Time,Channel)
            # Mix x with the previous timestep to produce xk, xv, xr
            xx = self.time_shift(x)
            xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
            xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
            xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
            k = self.key(xk)
            v = self.value(xv)
            r = self.receptance(xr)
            sr = torch.sigmoid(r)
            rwkv = sr * wkv(-torch.exp(self.time_decay), self.time_first, k, v)
            rwkv = self.output(rwkv)
            return rwkv

    def wkv(w, u, k, v):
        B, T, C = k.size()
        aa = torch.zeros(B, C, device=k.device)
        bb = torch.zeros(B, C, device=k.device)
        pp = torch.full((B, C), -1e38, device=k.device)
        out = []
        for t in range(T):
            kk, vv = k[:, t], v[:, t]
            ww = u + kk
            p = torch.maximum(pp, ww)
            e1 = torch.exp(pp - p)
            e2 = torch.exp(ww - p)
            out.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
            ww = w + pp
            p = torch.maximum(ww, kk)
            e1 = torch.exp(ww - p)
            e2 = torch.exp(kk - p)
            aa = e1 * aa + e2 * vv
            bb = e1 * bb + e2
            pp = p
        return torch.stack(out, dim=1)

    class RWKV_ChannelMix(nn.Module):
        def __init__(self, config, layer_id):
            super().__init__()
            self.layer_id = layer_id
            self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
            with torch.no_grad():  # fancy init of time_mix
                ratio_1_to_almost0 = (1.0 - (layer_id / config.n_layer))  # 1 to ~0
                x = torch.ones(1, 1, config.n_embd)
                for i in range(config.n_embd):
                    x[0, 0, i] = i / config.n_embd
                self.time_mix_k = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
                self.time_mix_r = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
            hidden_sz = 4 * config.n_embd
            self.key = nn.Linear(config.n_embd, hidden_sz, bias=False)
            self.receptance = nn.Linear(config.n_embd, config.n_embd, bias=False)
            self.value = nn.Linear(hidden_sz, config.n_embd, bias=False)
            self.value.scale_init = 0
            self.receptance.scale_init = 0

        def forward(self, x):
            xx = self.time_shift(x)
            xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
            xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
            k = self.key(xk)
            k = torch.square(torch.relu(k))
            kv = self.value(k)
            rkv = torch.sigmoid(self.receptance(xr)) * kv
            return rkv

    class Block(nn.Module):
        def __init__(self, config, layer_id):
            super().__init__()
            self.config = config
            self.layer_id = layer_id
            self.ln1 = nn.LayerNorm(config.n_embd)
            self.ln2 = nn.LayerNorm(config.n_embd)
            if self.layer_id == 0:
                self.ln0 = nn.LayerNorm(config.n_embd)
            self.att = RWKV_TimeMix(config, layer_id)
            self.ffn = RWKV_ChannelMix(config, layer_id)

        def forward(self, x):
            if self.layer_id == 0:
                x = self.ln0(x)
            x = x + self.att(self.ln1(x))
            x = x + self.ffn(self.ln2(x))
            return x

    class L2Wrap(torch.autograd.Function):
        @staticmethod
        def forward(ctx, loss, y):
            ctx.save_for_backward(y)
            return loss

        @staticmethod
        def backward(ctx, grad_output):
            y = ctx.saved_tensors[0]
            # to encourage the logits to be close to 0
            factor = 1e-4 / (y.shape[0] * y.shape[1])
            maxx, ids = torch.max(y, -1, keepdim=True)
            gy = torch.zeros_like(y)
            gy.scatter_(-1, ids, maxx * factor)
            return (grad_output, gy)

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.step = 0
            self.config = config
            self.emb = nn.Embedding(config.vocab_size, config.n_embd)
            self.blocks = nn.Sequential(*[Block(config, i) for i in range(config.n_layer)])
            self.ln_out = nn.LayerNorm(config.n_embd)
            self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.ctx_len = config.ctx_len
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.data.normal_(mean=0.0, std=0.01 if getattr(module, 'scale_init', 1) else 0.02)

        def configure_optimizers(self, train_config):
            no_decay = set()
            for mn, m_ in self.named_modules():  # here we disable weight_decay
                for pn, p in m_.named_parameters():
                    fpn = '%s.%s' % (mn, pn) if mn else pn  # full param name
                    no_decay.add(fpn)
            param_dict = {pn: p for pn, p in self.named_parameters()}
            optim_groups = [
                {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
            ]
            return torch.optim.Adam(optim_groups, lr=train_config.learning_rate, betas=train_config.betas,
                                    eps=train_config.eps)

        def forward(self, idx, targets=None):
            idx = idx.to(self.emb.weight.device)
            self.step += 1
            B, T = idx.size()
            assert T <= self.ctx_len, "Cannot forward, because len(input) > model ctx_len."
            x = self.emb(idx)
            x = self.blocks(x)
            x = self.ln_out(x)
            x = self.head(x)
            loss = None
            if targets is not None:
                loss = F.cross_entropy(x.view(-1, x.size(-1)), targets.to(x.device).view(-1))
            return L2Wrap.apply(loss, x)

    class Dataset(m.data.Dataset):
        def __init__(self, data, ctx_len, epoch_length_fixed):
            self.ctx_len = ctx_len
            self.epoch_length_fixed = epoch_length_fixed
            unique = sorted(list(set(data)))
            self.vocab_size = len(unique)
            self.stoi = {ch: i for i, ch in enumerate(unique)}
            self.itos = {i: ch for i, ch in enumerate(unique)}
            self.data_size = len(data)
            self.data = data

        def __len__(self):
            return self.epoch_length_fixed

        def __getitem__(self, idx):
            # cheat: pick a random spot in dataset
            i = np.random.randint(0, len(self.data) - (self.ctx_len + 1))
            chunk = self.data[i:i + self.ctx_len + 1]
            dix = [self.stoi[s] for s in chunk]
            x = torch.tensor(dix[:-1], dtype=torch.long)
            y = torch.tensor(dix[1:], dtype=torch.long)
            return x, y

    class TrainerConfig:
        max_epochs, batch_size, learning_rate, lr_final = 1, 2, 4e-3, 1e-3
        betas, eps, grad_norm_clip, warmup_tokens, final_tokens = (0.9, 0.99), 1e-8, 1.0, 12, 48

    text = "the quick brown fox jumps over the lazy dog " * 2
    train_dataset = Dataset(text, Config.ctx_len, epoch_length_fixed=2)
    config = Config()
    config.vocab_size = train_dataset.vocab_size
    model = GPT(config)
    init = load(m, model, state)
    tc = TrainerConfig()
    optimizer = model.configure_optimizers(tc)
    loader = m.data.DataLoader(train_dataset, shuffle=False, pin_memory=True, batch_size=tc.batch_size)
    tokens, losses = 0, []
    model.train(True)
    for it, (x, y) in enumerate(loader):
        loss = model(x, y)  # forward the model
        model.zero_grad()
        loss.backward()
        if tc.grad_norm_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_norm_clip)
        optimizer.step()
        tokens += (y >= 0).sum()  # number of tokens processed this step (i.e. label is not -100)
        lr_final_factor = tc.lr_final / tc.learning_rate
        if tokens < tc.warmup_tokens:
            # linear warmup
            lr_mult = lr_final_factor + (1 - lr_final_factor) * float(tokens) / float(tc.warmup_tokens)
            progress = 0
        else:
            # exponential learning rate decay
            progress = float(tokens - tc.warmup_tokens) / float(max(1, tc.final_tokens - tc.warmup_tokens))
            lr_mult = (0.5 + lr_final_factor / 2) + (0.5 - lr_final_factor / 2) * math.cos(math.pi * progress)
        lr = tc.learning_rate * lr_mult
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
        losses += [loss.item(), math.exp(loss.item()), lr]
    return init, losses + summary(model.parameters())


def test_rwkv_v4():
    compare(rwkv_v4)


# (b) rosinality/stylegan2-pytorch's model.py and train.py at 4x4 (no up- or downsampling blur: the discriminator's
# downsampling convolution has stride 2 alone): PixelNorm by torch.rsqrt, EqualLinear with lr_mul and
# fused_leaky_relu written in PyTorch (F.leaky_relu of input + bias.view, times sqrt(2)), ModulatedConv2d (a style
# modulates a [batch * out, in, k, k] weight, demodulated by rsqrt, run as one conv of groups=batch), NoiseInjection
# (image.new_empty(...).normal_() when no noise is given; a zero-initialised weight), ConstantInput's repeat, ToRGB's
# skip, style mixing by random.random() < prob and a latent index; the discriminator's minibatch stddev (var(0,
# unbiased=False), mean over [2, 3, 4] with keepdims=, repeat); the losses d_logistic_loss by F.softplus, d_r1_loss
# by autograd.grad(create_graph=True) of real_img.requires_grad = True, g_nonsaturating_loss, g_path_regularize over
# the latents with its running mean; lazy regularisation (d_reg_every, g_reg_every, `+ 0 * real_pred[0]`), Adam
# with lr * ratio and betas (0 ** ratio, 0.99 ** ratio), requires_grad(model, flag), accumulate() into g_ema by
# mul_ and add_(alpha=). torch replays tnet's normal draws
def stylegan2(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    autograd = torch.autograd
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    import random
    random.seed(0)
    counter = itertools.count()

    def draw(t):
        return replayed(m, replay, next(counter), t)

    def fused_leaky_relu(input, bias, negative_slope=0.2, scale=2 ** 0.5):
        rest_dim = [1] * (input.ndim - bias.ndim - 1)
        return F.leaky_relu(input + bias.view(1, bias.shape[0], *rest_dim), negative_slope=negative_slope) * scale

    class PixelNorm(nn.Module):
        def forward(self, input):
            return input * torch.rsqrt(torch.mean(input ** 2, dim=1, keepdim=True) + 1e-8)

    class EqualConv2d(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, stride=1, padding=0, bias=True):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(out_channel, in_channel, kernel_size, kernel_size))
            self.scale = 1 / math.sqrt(in_channel * kernel_size ** 2)
            self.stride = stride
            self.padding = padding
            self.bias = nn.Parameter(torch.zeros(out_channel)) if bias else None

        def forward(self, input):
            return F.conv2d(input, self.weight * self.scale, bias=self.bias, stride=self.stride, padding=self.padding)

    class EqualLinear(nn.Module):
        def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
            self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init)) if bias else None
            self.activation = activation
            self.scale = (1 / math.sqrt(in_dim)) * lr_mul
            self.lr_mul = lr_mul

        def forward(self, input):
            if self.activation:
                out = F.linear(input, self.weight * self.scale)
                out = fused_leaky_relu(out, self.bias * self.lr_mul)
            else:
                out = F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)
            return out

    class ModulatedConv2d(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True):
            super().__init__()
            self.eps = 1e-8
            self.kernel_size = kernel_size
            self.in_channel = in_channel
            self.out_channel = out_channel
            fan_in = in_channel * kernel_size ** 2
            self.scale = 1 / math.sqrt(fan_in)
            self.padding = kernel_size // 2
            self.weight = nn.Parameter(torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
            self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)
            self.demodulate = demodulate

        def forward(self, input, style):
            batch, in_channel, height, width = input.shape
            style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
            weight = self.scale * self.weight * style
            if self.demodulate:
                demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
                weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
            weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size)
            input = input.view(1, batch * in_channel, height, width)
            out = F.conv2d(input, weight, padding=self.padding, groups=batch)
            _, _, height, width = out.shape
            return out.view(batch, self.out_channel, height, width)

    class NoiseInjection(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(1))

        def forward(self, image, noise=None):
            if noise is None:
                batch, _, height, width = image.shape
                noise = draw(image.new_empty(batch, 1, height, width).normal_())
            return image + self.weight * noise

    class ConstantInput(nn.Module):
        def __init__(self, channel, size=4):
            super().__init__()
            self.input = nn.Parameter(torch.randn(1, channel, size, size))

        def forward(self, input):
            batch = input.shape[0]
            return self.input.repeat(batch, 1, 1, 1)

    class StyledConv(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True):
            super().__init__()
            self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim, demodulate=demodulate)
            self.noise = NoiseInjection()
            self.activate_bias = nn.Parameter(torch.zeros(out_channel))

        def forward(self, input, style, noise=None):
            out = self.conv(input, style)
            out = self.noise(out, noise=noise)
            return fused_leaky_relu(out, self.activate_bias)

    class ToRGB(nn.Module):
        def __init__(self, in_channel, style_dim):
            super().__init__()
            self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
            self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

        def forward(self, input, style, skip=None):
            out = self.conv(input, style)
            out = out + self.bias
            if skip is not None:
                out = out + skip
            return out

    class Generator(nn.Module):
        def __init__(self, style_dim, n_mlp, channel, lr_mlp=0.01):
            super().__init__()
            self.style_dim = style_dim
            layers = [PixelNorm()]
            for i in range(n_mlp):
                layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp, activation='fused_lrelu'))
            self.style = nn.Sequential(*layers)
            self.input = ConstantInput(channel)
            self.conv1 = StyledConv(channel, channel, 3, style_dim)
            self.to_rgb1 = ToRGB(channel, style_dim)
            self.to_rgb2 = ToRGB(channel, style_dim)
            self.n_latent = 3

        def forward(self, styles, return_latents=False, inject_index=None):
            styles = [self.style(s) for s in styles]
            if len(styles) < 2:
                inject_index = self.n_latent
                if styles[0].ndim < 3:
                    latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
                else:
                    latent = styles[0]
            else:
                if inject_index is None:
                    inject_index = random.randint(1, self.n_latent - 1)
                latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
                latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)
                latent = torch.cat([latent, latent2], 1)
            out = self.input(latent)
            out = self.conv1(out, latent[:, 0])
            skip = self.to_rgb1(out, latent[:, 1])
            image = self.to_rgb2(out, latent[:, 2], skip)
            if return_latents:
                return image, latent
            return image, None

    class Discriminator(nn.Module):
        def __init__(self, channel):
            super().__init__()
            self.conv0 = EqualConv2d(3, channel, 1)
            self.conv2 = EqualConv2d(channel, channel, 3, stride=2, padding=1)
            self.stddev_group = 4
            self.stddev_feat = 1
            self.final_conv = EqualConv2d(channel + 1, channel, 3, padding=1)
            self.final_linear = nn.Sequential(EqualLinear(channel * 2 * 2, channel, activation='fused_lrelu'),
                                              EqualLinear(channel, 1))

        def forward(self, input):
            out = F.leaky_relu(self.conv0(input), 0.2) * math.sqrt(2)
            out = F.leaky_relu(self.conv2(out), 0.2) * math.sqrt(2)
            batch, channel, height, width = out.shape
            group = min(batch, self.stddev_group)
            stddev = out.view(group, -1, self.stddev_feat, channel // self.stddev_feat, height, width)
            stddev = torch.sqrt(stddev.var(0, unbiased=False) + 1e-8)
            stddev = stddev.mean([2, 3, 4], keepdims=True).squeeze(2)
            stddev = stddev.repeat(group, 1, height, width)
            out = torch.cat([out, stddev], 1)
            out = F.leaky_relu(self.final_conv(out), 0.2) * math.sqrt(2)
            out = out.view(batch, -1)
            return self.final_linear(out)

    def requires_grad(model, flag=True):
        for p in model.parameters():
            p.requires_grad = flag

    def accumulate(model1, model2, decay=0.999):
        par1 = dict(model1.named_parameters())
        par2 = dict(model2.named_parameters())
        for k in par1.keys():
            par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)

    def d_logistic_loss(real_pred, fake_pred):
        real_loss = F.softplus(-real_pred)
        fake_loss = F.softplus(fake_pred)
        return real_loss.mean() + fake_loss.mean()

    def d_r1_loss(real_pred, real_img):
        grad_real, = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
        grad_penalty = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()
        return grad_penalty

    def g_nonsaturating_loss(fake_pred):
        return F.softplus(-fake_pred).mean()

    def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
        noise = draw(torch.randn_like(fake_img)) / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
        grad, = autograd.grad(outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True)
        path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))
        path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)
        path_penalty = (path_lengths - path_mean).pow(2).mean()
        return path_penalty, path_mean.detach(), path_lengths

    def make_noise(batch, latent_dim, n_noise):
        if n_noise == 1:
            return draw(torch.randn(batch, latent_dim))
        return draw(torch.randn(n_noise, batch, latent_dim)).unbind(0)

    def mixing_noise(batch, latent_dim, prob):
        if prob > 0 and random.random() < prob:
            return make_noise(batch, latent_dim, 2)
        else:
            return [make_noise(batch, latent_dim, 1)]

    class args:
        batch, latent, n_mlp, channel, lr, r1, path_regularize, path_batch_shrink = 4, 8, 1, 4, 0.002, 10, 2, 2
        d_reg_every, g_reg_every, mixing, iters = 2, 2, 0.9, 1

    generator = Generator(args.latent, args.n_mlp, args.channel)
    discriminator = Discriminator(args.channel)
    g_ema = Generator(args.latent, args.n_mlp, args.channel)
    g_ema.eval()
    init = load(m, nn.ModuleDict({'g': generator, 'd': discriminator}), state)
    accumulate(g_ema, generator, 0)
    g_reg_ratio = args.g_reg_every / (args.g_reg_every + 1)
    d_reg_ratio = args.d_reg_every / (args.d_reg_every + 1)
    g_optim = torch.optim.Adam(generator.parameters(), lr=args.lr * g_reg_ratio,
                               betas=(0 ** g_reg_ratio, 0.99 ** g_reg_ratio))
    d_optim = torch.optim.Adam(discriminator.parameters(), lr=args.lr * d_reg_ratio,
                               betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio))
    images = torch.tensor(np.tanh(normal(rng, 8, 3, 4, 4)))
    loader = iter(m.data.DataLoader(m.data.TensorDataset(images), batch_size=args.batch, drop_last=True))
    mean_path_length = 0
    accum = 0.5 ** (32 / (10 * 1000))
    losses = []
    for idx in range(args.iters):
        i = idx
        real_img, = next(loader)
        requires_grad(generator, False)
        requires_grad(discriminator, True)
        noise = mixing_noise(args.batch, args.latent, args.mixing)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img)
        d_loss = d_logistic_loss(real_pred, fake_pred)
        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()
        d_regularize = i % args.d_reg_every == 0
        if d_regularize:
            real_img.requires_grad = True
            real_pred = discriminator(real_img)
            r1_loss = d_r1_loss(real_pred, real_img)
            discriminator.zero_grad()
            (args.r1 / 2 * r1_loss * args.d_reg_every + 0 * real_pred[0]).backward()
            d_optim.step()
            losses.append(r1_loss.item())
        requires_grad(generator, True)
        requires_grad(discriminator, False)
        noise = mixing_noise(args.batch, args.latent, args.mixing)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)
        generator.zero_grad()
        g_loss.backward()
        g_optim.step()
        g_regularize = i % args.g_reg_every == 0
        if g_regularize:
            path_batch_size = max(1, args.batch // args.path_batch_shrink)
            noise = mixing_noise(path_batch_size, args.latent, args.mixing)
            fake_img, latents = generator(noise, return_latents=True)
            path_loss, mean_path_length, path_lengths = g_path_regularize(fake_img, latents, mean_path_length)
            generator.zero_grad()
            weighted_path_loss = args.path_regularize * args.g_reg_every * path_loss
            if args.path_batch_shrink:
                weighted_path_loss += 0 * fake_img[0, 0, 0, 0]
            weighted_path_loss.backward()
            g_optim.step()
            losses += [path_loss.item(), path_lengths.mean().item()]
        accumulate(g_ema, generator, accum)
        losses += [d_loss.item(), g_loss.item(), real_pred.mean().item(), fake_pred.mean().item()]
    return init, losses + summary(g_ema.parameters()) + summary(discriminator.parameters())


def test_stylegan2():
    compare(stylegan2, replay={})


# (c) vgsatorras/egnn's models/egnn_clean/egnn_clean.py and main_nbody.py: E_GCL (edge_model over torch.cat of source,
# target, radial and edge attributes, coord_model's coord_diff * coord_mlp(edge_feat) averaged per node, node_model's
# residual), the coordinate MLP's last layer by xavier_uniform_(gain=0.001), nn.SiLU, coord2radial with normalize's
# detached norm, unsorted_segment_sum and _mean by data.new_full and scatter_add_ of expanded segment ids, layers by
# add_module("gcl_%d" % i) and self._modules[...], get_edges_batch (fully connected graphs offset per graph,
# LongTensor lists, torch.cat), the n-body loop (batches flattened by view(-1, d.size(2)), nodes from the velocity
# norm, edge_attr from charges and squared distances, detached), Adam with weight_decay=1e-12, MSELoss; then the
# E(n) check: a rotated and translated input moves the output coordinates alike
def egnn(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class E_GCL(nn.Module):
        def __init__(self, input_nf, output_nf, hidden_nf, edges_in_d=0, act_fn=nn.SiLU(), residual=True,
                     attention=False, normalize=False, coords_agg='mean', tanh=False):
            super(E_GCL, self).__init__()
            input_edge = input_nf * 2
            self.residual = residual
            self.attention = attention
            self.normalize = normalize
            self.coords_agg = coords_agg
            self.tanh = tanh
            self.epsilon = 1e-8
            edge_coords_nf = 1
            self.edge_mlp = nn.Sequential(
                nn.Linear(input_edge + edge_coords_nf + edges_in_d, hidden_nf),
                act_fn,
                nn.Linear(hidden_nf, hidden_nf),
                act_fn)
            self.node_mlp = nn.Sequential(
                nn.Linear(hidden_nf + input_nf, hidden_nf),
                act_fn,
                nn.Linear(hidden_nf, output_nf))
            layer = nn.Linear(hidden_nf, 1, bias=False)
            torch.nn.init.xavier_uniform_(layer.weight, gain=0.001)
            coord_mlp = []
            coord_mlp.append(nn.Linear(hidden_nf, hidden_nf))
            coord_mlp.append(act_fn)
            coord_mlp.append(layer)
            if self.tanh:
                coord_mlp.append(nn.Tanh())
            self.coord_mlp = nn.Sequential(*coord_mlp)
            if self.attention:
                self.att_mlp = nn.Sequential(nn.Linear(hidden_nf, 1), nn.Sigmoid())

        def edge_model(self, source, target, radial, edge_attr):
            if edge_attr is None:  # Unused.
                out = torch.cat([source, target, radial], dim=1)
            else:
                out = torch.cat([source, target, radial, edge_attr], dim=1)
            out = self.edge_mlp(out)
            if self.attention:
                att_val = self.att_mlp(out)
                out = out * att_val
            return out

        def node_model(self, x, edge_index, edge_attr, node_attr):
            row, col = edge_index
            agg = unsorted_segment_sum(edge_attr, row, num_segments=x.size(0))
            if node_attr is not None:
                agg = torch.cat([x, agg, node_attr], dim=1)
            else:
                agg = torch.cat([x, agg], dim=1)
            out = self.node_mlp(agg)
            if self.residual:
                out = x + out
            return out, agg

        def coord_model(self, coord, edge_index, coord_diff, edge_feat):
            row, col = edge_index
            trans = coord_diff * self.coord_mlp(edge_feat)
            if self.coords_agg == 'sum':
                agg = unsorted_segment_sum(trans, row, num_segments=coord.size(0))
            elif self.coords_agg == 'mean':
                agg = unsorted_segment_mean(trans, row, num_segments=coord.size(0))
            else:
                raise Exception('Wrong coords_agg parameter' % self.coords_agg)
            coord = coord + agg
            return coord

        def coord2radial(self, edge_index, coord):
            row, col = edge_index
            coord_diff = coord[row] - coord[col]
            radial = torch.sum(coord_diff**2, 1).unsqueeze(1)
            if self.normalize:
                norm = torch.sqrt(radial).detach() + self.epsilon
                coord_diff = coord_diff / norm
            return radial, coord_diff

        def forward(self, h, edge_index, coord, edge_attr=None, node_attr=None):
            row, col = edge_index
            radial, coord_diff = self.coord2radial(edge_index, coord)
            edge_feat = self.edge_model(h[row], h[col], radial, edge_attr)
            coord = self.coord_model(coord, edge_index, coord_diff, edge_feat)
            h, agg = self.node_model(h, edge_index, edge_feat, node_attr)
            return h, coord, edge_attr

    class EGNN(nn.Module):
        def __init__(self, in_node_nf, hidden_nf, out_node_nf, in_edge_nf=0, device='cpu', act_fn=nn.SiLU(),
                     n_layers=4, residual=True, attention=False, normalize=False, tanh=False):
            super(EGNN, self).__init__()
            self.hidden_nf = hidden_nf
            self.device = device
            self.n_layers = n_layers
            self.embedding_in = nn.Linear(in_node_nf, self.hidden_nf)
            self.embedding_out = nn.Linear(self.hidden_nf, out_node_nf)
            for i in range(0, n_layers):
                self.add_module("gcl_%d" % i, E_GCL(self.hidden_nf, self.hidden_nf, self.hidden_nf,
                                                    edges_in_d=in_edge_nf, act_fn=act_fn, residual=residual,
                                                    attention=attention, normalize=normalize, tanh=tanh))
            self.to(self.device)

        def forward(self, h, x, edges, edge_attr):
            h = self.embedding_in(h)
            for i in range(0, self.n_layers):
                h, x, _ = self._modules["gcl_%d" % i](h, edges, x, edge_attr=edge_attr)
            h = self.embedding_out(h)
            return h, x

    def unsorted_segment_sum(data, segment_ids, num_segments):
        result_shape = (num_segments, data.size(1))
        result = data.new_full(result_shape, 0)  # Init empty result tensor.
        segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
        result.scatter_add_(0, segment_ids, data)
        return result

    def unsorted_segment_mean(data, segment_ids, num_segments):
        result_shape = (num_segments, data.size(1))
        segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
        result = data.new_full(result_shape, 0)  # Init empty result tensor.
        count = data.new_full(result_shape, 0)
        result.scatter_add_(0, segment_ids, data)
        count.scatter_add_(0, segment_ids, torch.ones_like(data))
        return result / count.clamp(min=1)

    def get_edges(n_nodes):
        rows, cols = [], []
        for i in range(n_nodes):
            for j in range(n_nodes):
                if i != j:
                    rows.append(i)
                    cols.append(j)
        edges = [rows, cols]
        return edges

    def get_edges_batch(n_nodes, batch_size):
        edges = get_edges(n_nodes)
        edge_attr = torch.ones(len(edges[0]) * batch_size, 1)
        edges = [torch.LongTensor(edges[0]), torch.LongTensor(edges[1])]
        if batch_size == 1:
            return edges, edge_attr
        elif batch_size > 1:
            rows, cols = [], []
            for i in range(batch_size):
                rows.append(edges[0] + n_nodes * i)
                cols.append(edges[1] + n_nodes * i)
            edges = [torch.cat(rows), torch.cat(cols)]
        return edges, edge_attr

    batch_size, n_nodes, device = 2, 4, torch.device("cpu")
    model = EGNN(in_node_nf=1, hidden_nf=8, out_node_nf=1, in_edge_nf=2, device=device, n_layers=2, normalize=True)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-12)
    loss_mse = nn.MSELoss()
    res = {'epoch': 0, 'loss': 0, 'counter': 0}
    losses = []
    for batch_idx in range(2):
        data = [torch.tensor(normal(rng, batch_size, n_nodes, 3)), torch.tensor(normal(rng, batch_size, n_nodes, 3)),
                torch.tensor(rng.choice([-1.0, 1.0], (batch_size, n_nodes, 1)).astype(np.float32)),
                torch.tensor(normal(rng, batch_size, n_nodes, 3))]
        data = [d.to(device) for d in data]
        data = [d.view(-1, d.size(2)) for d in data]
        loc, vel, charges, loc_end = data
        edges, _ = get_edges_batch(n_nodes, batch_size)
        edges = [edges[0].to(device), edges[1].to(device)]
        optimizer.zero_grad()
        nodes = torch.sqrt(torch.sum(vel ** 2, dim=1)).unsqueeze(1).detach()
        rows, cols = edges
        loc_dist = torch.sum((loc[rows] - loc[cols])**2, 1).unsqueeze(1)  # relative distances among locations
        edge_attr = torch.cat([charges[rows] * charges[cols], loc_dist], 1).detach()  # concatenate all edge properties
        _, loc_pred = model(nodes, loc.detach(), edges, edge_attr)
        loss = loss_mse(loc_pred, loc_end)
        loss.backward()
        optimizer.step()
        res['loss'] += loss.item() * batch_size
        res['counter'] += batch_size
        losses.append(loss.item())
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    rot, shift = torch.tensor(q.astype(np.float32)), torch.tensor(normal(rng, 1, 3))
    with torch.no_grad():
        h, x = model(nodes, loc, edges, edge_attr)
        h2, x2 = model(nodes, loc @ rot + shift, edges, edge_attr)
    equivariance = ((x @ rot + shift - x2).abs().max() + (h - h2).abs().max()).item()
    assert equivariance < 1e-5, equivariance
    return init, losses + [res['loss'] / res['counter']] + summary([x, h]) + summary(model.parameters())


def test_egnn():
    compare(egnn)


# (d) NVlabs/edm's training/networks.py, loss.py, training_loop.py and generate.py: weight_init by np.sqrt(...) *
# torch.randn(*shape) (a numpy float times a tensor), Linear by x @ weight.to(x.dtype).t() and add_ of the bias,
# Conv2d with register_buffer('resample_filter', None) where it does not resample and x.add_(b.reshape(1, -1, 1, 1)),
# GroupNorm with min_channels_per_group, PositionalEmbedding by (1 / max_positions) ** freqs and x.ger, the
# embedding's sin and cos swapped by reshape and flip(1), a one-block network in SongUNet's manner (x.add_ of the
# affine embedding, SiLU); EDMPrecond (c_skip, c_out, c_in, c_noise = sigma.log() / 4, assert F_x.dtype == dtype,
# round_sigma by torch.as_tensor), EDMLoss (log-normal sigma of torch.randn([N, 1, 1, 1]), weight, randn_like noise),
# the loop (ema = copy.deepcopy(net).eval().requires_grad_(False), loss.sum().mul(loss_scaling / batch).backward(),
# the lr ramp-up into param groups, torch.nan_to_num(param.grad, nan=0, posinf=1e5, neginf=-1e5, out=param.grad),
# the EMA half-life with its ramp-up by p_ema.copy_(p_net.detach().lerp(p_ema, ema_beta))), Adam from an options
# dict with betas as a list; edm_sampler (the rho schedule, t_steps closed by zeros_like(t_steps[:1]), S_churn's
# gamma by chained comparison with 0-d tensors, Heun's second-order correction). The sampler's float64 is float32
# here (tnet refuses float64); torch replays tnet's normal draws
def edm(m, state=None, replay=None):
    import copy
    torch = m.torch
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    counter = itertools.count()

    def draw(t):
        return replayed(m, replay, next(counter), t)

    def weight_init(shape, mode, fan_in, fan_out):
        if mode == 'xavier_uniform':
            return np.sqrt(6 / (fan_in + fan_out)) * (torch.rand(*shape) * 2 - 1)
        if mode == 'xavier_normal':
            return np.sqrt(2 / (fan_in + fan_out)) * torch.randn(*shape)
        if mode == 'kaiming_uniform':
            return np.sqrt(3 / fan_in) * (torch.rand(*shape) * 2 - 1)
        if mode == 'kaiming_normal':
            return np.sqrt(1 / fan_in) * torch.randn(*shape)
        raise ValueError(f'Invalid init mode "{mode}"')

    class Linear(torch.nn.Module):
        def __init__(self, in_features, out_features, bias=True, init_mode='kaiming_normal', init_weight=1,
                     init_bias=0):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            init_kwargs = dict(mode=init_mode, fan_in=in_features, fan_out=out_features)
            self.weight = torch.nn.Parameter(weight_init([out_features, in_features], **init_kwargs) * init_weight)
            self.bias = torch.nn.Parameter(weight_init([out_features], **init_kwargs) * init_bias) if bias else None

        def forward(self, x):
            x = x @ self.weight.to(x.dtype).t()
            if self.bias is not None:
                x = x.add_(self.bias.to(x.dtype))
            return x

    class Conv2d(torch.nn.Module):
        def __init__(self, in_channels, out_channels, kernel, bias=True, up=False, down=False, resample_filter=[1, 1],
                     init_mode='kaiming_normal', init_weight=1, init_bias=0):
            super().__init__()
            self.in_channels = in_channels
            self.out_channels = out_channels
            init_kwargs = dict(mode=init_mode, fan_in=in_channels * kernel * kernel,
                               fan_out=out_channels * kernel * kernel)
            self.weight = torch.nn.Parameter(weight_init([out_channels, in_channels, kernel, kernel], **init_kwargs)
                                             * init_weight) if kernel else None
            self.bias = torch.nn.Parameter(weight_init([out_channels], **init_kwargs) * init_bias) \
                if kernel and bias else None
            f = torch.as_tensor(resample_filter, dtype=torch.float32)
            f = f.ger(f).unsqueeze(0).unsqueeze(1) / f.sum().square()
            self.register_buffer('resample_filter', f if up or down else None)

        def forward(self, x):
            w = self.weight.to(x.dtype) if self.weight is not None else None
            b = self.bias.to(x.dtype) if self.bias is not None else None
            w_pad = w.shape[-1] // 2 if w is not None else 0
            if w is not None:
                x = torch.nn.functional.conv2d(x, w, padding=w_pad)
            if b is not None:
                x = x.add_(b.reshape(1, -1, 1, 1))
            return x

    class GroupNorm(torch.nn.Module):
        def __init__(self, num_channels, num_groups=32, min_channels_per_group=4, eps=1e-5):
            super().__init__()
            self.num_groups = min(num_groups, num_channels // min_channels_per_group)
            self.eps = eps
            self.weight = torch.nn.Parameter(torch.ones(num_channels))
            self.bias = torch.nn.Parameter(torch.zeros(num_channels))

        def forward(self, x):
            return torch.nn.functional.group_norm(x, num_groups=self.num_groups, weight=self.weight.to(x.dtype),
                                                  bias=self.bias.to(x.dtype), eps=self.eps)

    class PositionalEmbedding(torch.nn.Module):
        def __init__(self, num_channels, max_positions=10000, endpoint=False):
            super().__init__()
            self.num_channels = num_channels
            self.max_positions = max_positions
            self.endpoint = endpoint

        def forward(self, x):
            freqs = torch.arange(start=0, end=self.num_channels // 2, dtype=torch.float32, device=x.device)
            freqs = freqs / (self.num_channels // 2 - (1 if self.endpoint else 0))
            freqs = (1 / self.max_positions) ** freqs
            x = x.ger(freqs.to(x.dtype))
            x = torch.cat([x.cos(), x.sin()], dim=1)
            return x

    class TinyUNet(torch.nn.Module):  # SongUNet's mapping network and one UNetBlock's conditioning
        def __init__(self, img_resolution, in_channels, out_channels, label_dim=0, model_channels=8,
                     channel_mult_emb=2):
            super().__init__()
            emb_channels = model_channels * channel_mult_emb
            init = dict(init_mode='xavier_uniform')
            init_zero = dict(init_mode='xavier_uniform', init_weight=1e-5)
            self.map_noise = PositionalEmbedding(num_channels=model_channels, endpoint=True)
            self.map_layer0 = Linear(in_features=model_channels, out_features=emb_channels, **init)
            self.map_layer1 = Linear(in_features=emb_channels, out_features=emb_channels, **init)
            self.conv0 = Conv2d(in_channels, model_channels, kernel=3, **init)
            self.affine = Linear(in_features=emb_channels, out_features=model_channels, **init)
            self.norm1 = GroupNorm(num_channels=model_channels)
            self.conv1 = Conv2d(model_channels, out_channels, kernel=3, **init_zero)

        def forward(self, x, noise_labels, class_labels, augment_labels=None):
            emb = self.map_noise(noise_labels)
            emb = emb.reshape(emb.shape[0], 2, -1).flip(1).reshape(*emb.shape)  # swap sin/cos
            emb = torch.nn.functional.silu(self.map_layer0(emb))
            emb = torch.nn.functional.silu(self.map_layer1(emb))
            x = self.conv0(x)
            params = self.affine(emb).unsqueeze(2).unsqueeze(3).to(x.dtype)
            x = torch.nn.functional.silu(self.norm1(x.add_(params)))
            return self.conv1(x)

    class EDMPrecond(torch.nn.Module):
        def __init__(self, img_resolution, img_channels, label_dim=0, use_fp16=False, sigma_min=0,
                     sigma_max=float('inf'), sigma_data=0.5, **model_kwargs):
            super().__init__()
            self.img_resolution = img_resolution
            self.img_channels = img_channels
            self.label_dim = label_dim
            self.use_fp16 = use_fp16
            self.sigma_min = sigma_min
            self.sigma_max = sigma_max
            self.sigma_data = sigma_data
            self.model = TinyUNet(img_resolution=img_resolution, in_channels=img_channels, out_channels=img_channels,
                                  label_dim=label_dim, **model_kwargs)

        def forward(self, x, sigma, class_labels=None, force_fp32=False, **model_kwargs):
            x = x.to(torch.float32)
            sigma = sigma.to(torch.float32).reshape(-1, 1, 1, 1)
            class_labels = None if self.label_dim == 0 else torch.zeros([1, self.label_dim], device=x.device) \
                if class_labels is None else class_labels.to(torch.float32).reshape(-1, self.label_dim)
            dtype = torch.float16 if (self.use_fp16 and not force_fp32 and x.device.type == 'cuda') else torch.float32
            c_skip = self.sigma_data ** 2 / (sigma ** 2 + self.sigma_data ** 2)
            c_out = sigma * self.sigma_data / (sigma ** 2 + self.sigma_data ** 2).sqrt()
            c_in = 1 / (self.sigma_data ** 2 + sigma ** 2).sqrt()
            c_noise = sigma.log() / 4
            F_x = self.model((c_in * x).to(dtype), c_noise.flatten(), class_labels=class_labels, **model_kwargs)
            assert F_x.dtype == dtype
            D_x = c_skip * x + c_out * F_x.to(torch.float32)
            return D_x

        def round_sigma(self, sigma):
            return torch.as_tensor(sigma)

    class EDMLoss:
        def __init__(self, P_mean=-1.2, P_std=1.2, sigma_data=0.5):
            self.P_mean = P_mean
            self.P_std = P_std
            self.sigma_data = sigma_data

        def __call__(self, net, images, labels=None, augment_pipe=None):
            rnd_normal = draw(torch.randn([images.shape[0], 1, 1, 1], device=images.device))
            sigma = (rnd_normal * self.P_std + self.P_mean).exp()
            weight = (sigma ** 2 + self.sigma_data ** 2) / (sigma * self.sigma_data) ** 2
            y, augment_labels = augment_pipe(images) if augment_pipe is not None else (images, None)
            n = draw(torch.randn_like(y)) * sigma
            D_yn = net(y + n, sigma, labels, augment_labels=augment_labels)
            loss = weight * ((D_yn - y) ** 2)
            return loss

    def edm_sampler(net, latents, class_labels=None, randn_like=torch.randn_like, num_steps=18, sigma_min=0.002,
                    sigma_max=80, rho=7, S_churn=0, S_min=0, S_max=float('inf'), S_noise=1):
        # Adjust noise levels based on what's supported by the network.
        sigma_min = max(sigma_min, net.sigma_min)
        sigma_max = min(sigma_max, net.sigma_max)
        # Time step discretization.
        step_indices = torch.arange(num_steps, dtype=torch.float32, device=latents.device)
        t_steps = (sigma_max ** (1 / rho) + step_indices / (num_steps - 1)
                   * (sigma_min ** (1 / rho) - sigma_max ** (1 / rho))) ** rho
        t_steps = torch.cat([net.round_sigma(t_steps), torch.zeros_like(t_steps[:1])])  # t_N = 0
        # Main sampling loop.
        x_next = latents.to(torch.float32) * t_steps[0]
        for i, (t_cur, t_next) in enumerate(zip(t_steps[:-1], t_steps[1:])):  # 0, ..., N-1
            x_cur = x_next
            # Increase noise temporarily.
            gamma = min(S_churn / num_steps, np.sqrt(2) - 1) if S_min <= t_cur <= S_max else 0
            t_hat = net.round_sigma(t_cur + gamma * t_cur)
            x_hat = x_cur + (t_hat ** 2 - t_cur ** 2).sqrt() * S_noise * randn_like(x_cur)
            # Euler step.
            denoised = net(x_hat, t_hat, class_labels).to(torch.float32)
            d_cur = (x_hat - denoised) / t_hat
            x_next = x_hat + (t_next - t_hat) * d_cur
            # Apply 2nd order correction.
            if i < num_steps - 1:
                denoised = net(x_next, t_next, class_labels).to(torch.float32)
                d_prime = (x_next - denoised) / t_next
                x_next = x_hat + (t_next - t_hat) * (0.5 * d_cur + 0.5 * d_prime)
        return x_next

    batch_size, lr_rampup_kimg, ema_halflife_kimg, ema_rampup_ratio, loss_scaling = 4, 0.006, 0.5, 0.05, 1
    optimizer_kwargs = dict(class_name='torch.optim.Adam', lr=10e-4, betas=[0.9, 0.999], eps=1e-8)
    net = EDMPrecond(img_resolution=4, img_channels=2)
    init = load(m, net, state)
    assert net.model.conv0.resample_filter is None and 'model.conv0.resample_filter' not in net.state_dict()
    net.train().requires_grad_(True)
    optimizer = torch.optim.Adam(params=net.parameters(), **{k: v for k, v in optimizer_kwargs.items()
                                                             if k != 'class_name'})
    ema = copy.deepcopy(net).eval().requires_grad_(False)
    loss_fn = EDMLoss()
    cur_nimg, losses = 0, []
    images = torch.tensor(np.tanh(normal(rng, 8, 2, 4, 4)))
    for images_batch in images.split(batch_size):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(net=net, images=images_batch, labels=None, augment_pipe=None)
        loss.sum().mul(loss_scaling / batch_size).backward()
        for g in optimizer.param_groups:
            g['lr'] = optimizer_kwargs['lr'] * min(cur_nimg / max(lr_rampup_kimg * 1000, 1e-8), 1)
        for param in net.parameters():
            if param.grad is not None:
                torch.nan_to_num(param.grad, nan=0, posinf=1e5, neginf=-1e5, out=param.grad)
        optimizer.step()
        cur_nimg += batch_size
        ema_halflife_nimg = ema_halflife_kimg * 1000
        if ema_rampup_ratio is not None:
            ema_halflife_nimg = min(ema_halflife_nimg, cur_nimg * ema_rampup_ratio)
        ema_beta = 0.5 ** (batch_size / max(ema_halflife_nimg, 1e-8))
        for p_ema, p_net in zip(ema.parameters(), net.parameters()):
            p_ema.copy_(p_net.detach().lerp(p_ema, ema_beta))
        losses += [loss.mean().item(), optimizer.param_groups[0]['lr'], ema_beta]

    def randn_like(x):
        return draw(torch.randn_like(x))

    latents = draw(torch.randn([2, net.img_channels, net.img_resolution, net.img_resolution]))
    with torch.no_grad():
        sample = edm_sampler(ema, latents, randn_like=randn_like, num_steps=3, S_churn=1)
    return init, losses + summary([sample]) + summary(net.parameters()) + summary(ema.parameters())


def test_edm():
    compare(edm, replay={})


# (e) facebookresearch/schedule_free's AdamWScheduleFreeReference and its README's usage: a torch.optim.Optimizer
# subclass whose defaults carry its own keys (k, train_mode, weight_sum, lr_max, scheduled_lr ...), eval() and
# train() under @torch.no_grad() swapping each parameter between its x and y by p.copy_(state[...]), step() raising
# where the optimizer is not in train mode, a closure under torch.enable_grad(), its warmup, weight and ckp1 with
# the ZeroDivisionError guard, state made on demand by torch.clone(p, memory_format=torch.preserve_format) and
# zeros_like, weight decay at y, exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=), denom by div, sqrt_, add_,
# z.addcdiv_(value=-lr), x.mul_(1 - ckp1).add_(z, alpha=ckp1), y.copy_(x.mul(beta1).add_(z, alpha=1 - beta1)); the
# loop calling model.train(); optimizer.train() and model.eval(); optimizer.eval(), and the README's BatchNorm
# statistics recomputed at x (model.train(), optimizer.eval(), forwards under no_grad over itertools.islice)
def schedule_free(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)

    class AdamWScheduleFreeReference(torch.optim.Optimizer):
        def __init__(self, params, lr=0.0025, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, warmup_steps=0, r=0,
                     weight_lr_power=2.0, decay_at_z=False, foreach=False):
            defaults = dict(lr=lr, betas=betas, eps=eps, r=r, k=0, warmup_steps=warmup_steps, train_mode=False,
                            weight_sum=0.0, lr_max=-1.0, scheduled_lr=0.0, weight_lr_power=weight_lr_power,
                            decay_at_z=decay_at_z, weight_decay=weight_decay, foreach=foreach)
            super().__init__(params, defaults)

        @torch.no_grad()
        def eval(self):
            for group in self.param_groups:
                train_mode = group['train_mode']
                if train_mode:
                    for p in group['params']:
                        state = self.state[p]
                        if 'x' in state:
                            # Switch p to x
                            p.copy_(state['x'])
                    group['train_mode'] = False

        @torch.no_grad()
        def train(self):
            for group in self.param_groups:
                train_mode = group['train_mode']
                if not train_mode:
                    for p in group['params']:
                        state = self.state[p]
                        if 'y' in state:
                            p.copy_(state['y'])
                    group['train_mode'] = True

        @torch.no_grad()
        def step(self, closure=None):
            if not self.param_groups[0]['train_mode']:
                raise Exception("Optimizer was not in train mode when step is called. Please insert .train() and "
                                ".eval() calls on the optimizer. See documentation for details.")
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                eps = group['eps']
                decay = group['weight_decay']
                beta1, beta2 = group['betas']
                k = group['k']
                r = group['r']
                warmup_steps = group['warmup_steps']
                weight_lr_power = group['weight_lr_power']
                decay_at_z = group['decay_at_z']
                if k < warmup_steps:
                    sched = (k + 1) / warmup_steps
                else:
                    sched = 1.0
                bias_correction2 = 1 - beta2 ** (k + 1)
                lr = group['lr'] * sched
                group['scheduled_lr'] = lr  # For logging purposes
                lr_max = group['lr_max'] = max(lr, group['lr_max'])
                weight = ((k + 1) ** r) * (lr_max ** weight_lr_power)
                weight_sum = group['weight_sum'] = group['weight_sum'] + weight
                try:
                    ckp1 = weight / weight_sum
                except ZeroDivisionError:
                    ckp1 = 0
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    state = self.state[p]
                    if 'z' not in state:
                        state['z'] = torch.clone(p, memory_format=torch.preserve_format)
                        state['exp_avg_sq'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        state['x'] = torch.clone(p, memory_format=torch.preserve_format)
                        state['y'] = torch.clone(p, memory_format=torch.preserve_format)
                    exp_avg_sq = state['exp_avg_sq']
                    z = state['z']
                    x = state['x']
                    y = state['y']
                    # Weight decay
                    if decay != 0:
                        decay_point = z if decay_at_z else y
                        z.sub_(decay_point, alpha=lr * decay)
                    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                    denom = exp_avg_sq.div(bias_correction2).sqrt_().add_(eps)
                    z.addcdiv_(grad, denom, value=-lr)
                    x.mul_(1 - ckp1).add_(z, alpha=ckp1)
                    y.copy_(x.mul(beta1).add_(z, alpha=1 - beta1))
                    p.copy_(y)
                group['k'] = k + 1
            return loss

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1, bias=False)  # a bias before BatchNorm: its gradient is rounding
            self.bn1 = nn.BatchNorm2d(4)
            self.fc1 = nn.Linear(4 * 3 * 3, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
            x = torch.flatten(x, 1)
            return F.log_softmax(self.fc1(x), dim=1)

    model = Net()
    init = load(m, model, state)
    optimizer = AdamWScheduleFreeReference(model.parameters(), lr=0.01, warmup_steps=2, weight_decay=0.01)
    rng = np.random.default_rng(1)
    ds = m.data.TensorDataset(torch.tensor(normal(rng, 12, 1, 8, 8)), torch.tensor(rng.integers(0, 10, 12)))
    train_loader = m.data.DataLoader(ds, batch_size=4)
    losses = []
    try:
        optimizer.step()
    except Exception as e:
        assert "not in train mode" in str(e)
    for epoch in range(1):
        model.train()
        optimizer.train()
        for data, target in train_loader:
            def closure():
                optimizer.zero_grad()
                loss = F.nll_loss(model(data), target)
                loss.backward()
                return loss
            losses.append(optimizer.step(closure).item())
            losses.append(optimizer.param_groups[0]['scheduled_lr'])
        model.eval()
        optimizer.eval()
        with torch.no_grad():
            losses.append(sum(F.nll_loss(model(d), t, reduction='sum').item() for d, t in train_loader))
        # the BatchNorm statistics recomputed at x
        model.train()
        optimizer.eval()
        with torch.no_grad():
            for batch, _ in itertools.islice(train_loader, 2):
                model(batch)
        model.eval()
    z = [optimizer.state[p]['z'] for p in model.parameters()]
    return init, losses + summary(model.parameters()) + summary(z) + summary(model.buffers())


def test_schedule_free():
    compare(schedule_free)


# (f) amdegroot/ssd.pytorch's layers/box_utils.py, layers/modules/multibox_loss.py and l2norm.py, layers/functions/
# prior_box.py, ssd.py, data/__init__.py and train.py on a two-source SSD: PriorBox by itertools.product and sqrt
# into torch.Tensor(mean).view(-1, 4).clamp_(max=1, min=0), L2Norm (torch.Tensor(n) filled by init.constant_, the
# weight unsqueezed thrice and expand_as), heads by ModuleList over permute(0, 2, 3, 1).contiguous() and view,
# point_form, intersect by torch.min / torch.max of expanded boxes, jaccard, match (max(1, keepdim=True),
# squeeze_, index_fill_(0, idx, 2), the per-truth loop writing best_truth_idx[best_prior_idx[j]] = j, conf[overlap <
# threshold] = 0, loc_t[idx] = loc into torch.Tensor(num, num_priors, 4) and torch.LongTensor), encode, log_sum_exp
# by x.data.max(), MultiBoxLoss's hard negative mining (loss_c[pos] = 0, the double sort for ranks, torch.clamp of
# negpos_ratio * num_pos with max=, bool masks added and .gt(0), smooth_l1_loss and cross_entropy with
# size_average=False, loss_l /= N of a tensor count), detection_collate's list of FloatTensor targets, weights_init
# by xavier_uniform_ through apply, SGD with momentum and weight decay, adjust_learning_rate
def ssd(m, state=None):
    import warnings
    torch, nn, F = m.torch, m.nn, m.F
    init_ = nn.init
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    cfg = {'num_classes': 3, 'feature_maps': [8, 4], 'min_dim': 16, 'steps': [2, 4], 'min_sizes': [4, 8],
           'max_sizes': [8, 12], 'aspect_ratios': [[2], [2]], 'variance': [0.1, 0.2], 'clip': True}

    class PriorBox(object):
        def __init__(self, cfg):
            super(PriorBox, self).__init__()
            self.image_size = cfg['min_dim']
            self.num_priors = len(cfg['aspect_ratios'])
            self.variance = cfg['variance'] or [0.1]
            self.feature_maps = cfg['feature_maps']
            self.min_sizes = cfg['min_sizes']
            self.max_sizes = cfg['max_sizes']
            self.steps = cfg['steps']
            self.aspect_ratios = cfg['aspect_ratios']
            self.clip = cfg['clip']
            for v in self.variance:
                if v <= 0:
                    raise ValueError('Variances must be greater than 0')

        def forward(self):
            mean = []
            for k, f in enumerate(self.feature_maps):
                for i, j in itertools.product(range(f), repeat=2):
                    f_k = self.image_size / self.steps[k]
                    # unit center x,y
                    cx = (j + 0.5) / f_k
                    cy = (i + 0.5) / f_k
                    # aspect_ratio: 1, rel size: min_size
                    s_k = self.min_sizes[k] / self.image_size
                    mean += [cx, cy, s_k, s_k]
                    # aspect_ratio: 1, rel size: sqrt(s_k * s_(k+1))
                    s_k_prime = math.sqrt(s_k * (self.max_sizes[k] / self.image_size))
                    mean += [cx, cy, s_k_prime, s_k_prime]
                    # rest of aspect ratios
                    for ar in self.aspect_ratios[k]:
                        mean += [cx, cy, s_k * math.sqrt(ar), s_k / math.sqrt(ar)]
                        mean += [cx, cy, s_k / math.sqrt(ar), s_k * math.sqrt(ar)]
            # back to torch land
            output = torch.Tensor(mean).view(-1, 4)
            if self.clip:
                output.clamp_(max=1, min=0)
            return output

    class L2Norm(nn.Module):
        def __init__(self, n_channels, scale):
            super(L2Norm, self).__init__()
            self.n_channels = n_channels
            self.gamma = scale or None
            self.eps = 1e-10
            self.weight = nn.Parameter(torch.Tensor(self.n_channels))
            self.reset_parameters()

        def reset_parameters(self):
            init_.constant_(self.weight, self.gamma)

        def forward(self, x):
            norm = x.pow(2).sum(dim=1, keepdim=True).sqrt() + self.eps
            x = torch.div(x, norm)
            out = self.weight.unsqueeze(0).unsqueeze(2).unsqueeze(3).expand_as(x) * x
            return out

    class SSD(nn.Module):
        def __init__(self, phase, size, base, extras, head, num_classes):
            super(SSD, self).__init__()
            self.phase = phase
            self.num_classes = num_classes
            self.cfg = cfg
            self.priorbox = PriorBox(self.cfg)
            with torch.no_grad():
                self.priors = self.priorbox.forward()
            self.size = size
            self.vgg = nn.ModuleList(base)
            self.L2Norm = L2Norm(8, 20)
            self.extras = nn.ModuleList(extras)
            self.loc = nn.ModuleList(head[0])
            self.conf = nn.ModuleList(head[1])

        def forward(self, x):
            sources = list()
            loc = list()
            conf = list()
            for k in range(len(self.vgg)):
                x = self.vgg[k](x)
            s = self.L2Norm(x)
            sources.append(s)
            for k, v in enumerate(self.extras):
                x = F.relu(v(x), inplace=True)
                sources.append(x)
            for (x, l, c) in zip(sources, self.loc, self.conf):
                loc.append(l(x).permute(0, 2, 3, 1).contiguous())
                conf.append(c(x).permute(0, 2, 3, 1).contiguous())
            loc = torch.cat([o.view(o.size(0), -1) for o in loc], 1)
            conf = torch.cat([o.view(o.size(0), -1) for o in conf], 1)
            output = (loc.view(loc.size(0), -1, 4), conf.view(conf.size(0), -1, self.num_classes), self.priors)
            return output

    def point_form(boxes):
        return torch.cat((boxes[:, :2] - boxes[:, 2:] / 2,  # xmin, ymin
                          boxes[:, :2] + boxes[:, 2:] / 2), 1)  # xmax, ymax

    def intersect(box_a, box_b):
        A = box_a.size(0)
        B = box_b.size(0)
        max_xy = torch.min(box_a[:, 2:].unsqueeze(1).expand(A, B, 2), box_b[:, 2:].unsqueeze(0).expand(A, B, 2))
        min_xy = torch.max(box_a[:, :2].unsqueeze(1).expand(A, B, 2), box_b[:, :2].unsqueeze(0).expand(A, B, 2))
        inter = torch.clamp((max_xy - min_xy), min=0)
        return inter[:, :, 0] * inter[:, :, 1]

    def jaccard(box_a, box_b):
        inter = intersect(box_a, box_b)
        area_a = ((box_a[:, 2] - box_a[:, 0]) * (box_a[:, 3] - box_a[:, 1])).unsqueeze(1).expand_as(inter)  # [A,B]
        area_b = ((box_b[:, 2] - box_b[:, 0]) * (box_b[:, 3] - box_b[:, 1])).unsqueeze(0).expand_as(inter)  # [A,B]
        union = area_a + area_b - inter
        return inter / union  # [A,B]

    def encode(matched, priors, variances):
        # dist b/t match center and prior's center
        g_cxcy = (matched[:, :2] + matched[:, 2:]) / 2 - priors[:, :2]
        # encode variance
        g_cxcy /= (variances[0] * priors[:, 2:])
        # match wh / prior wh
        g_wh = (matched[:, 2:] - matched[:, :2]) / priors[:, 2:]
        g_wh = torch.log(g_wh) / variances[1]
        # return target for smooth_l1_loss
        return torch.cat([g_cxcy, g_wh], 1)  # [num_priors,4]

    def match(threshold, truths, priors, variances, labels, loc_t, conf_t, idx):
        # jaccard index
        overlaps = jaccard(truths, point_form(priors))
        # (Bipartite Matching)
        # [1,num_objects] best prior for each ground truth
        best_prior_overlap, best_prior_idx = overlaps.max(1, keepdim=True)
        # [1,num_priors] best ground truth for each prior
        best_truth_overlap, best_truth_idx = overlaps.max(0, keepdim=True)
        best_truth_idx.squeeze_(0)
        best_truth_overlap.squeeze_(0)
        best_prior_idx.squeeze_(1)
        best_prior_overlap.squeeze_(1)
        best_truth_overlap.index_fill_(0, best_prior_idx, 2)  # ensure best prior
        # TODO refactor: index  best_prior_idx with long tensor
        # ensure every gt matches with its prior of max overlap
        for j in range(best_prior_idx.size(0)):
            best_truth_idx[best_prior_idx[j]] = j
        matches = truths[best_truth_idx]  # Shape: [num_priors,4]
        conf = labels[best_truth_idx] + 1  # Shape: [num_priors]
        conf[best_truth_overlap < threshold] = 0  # label as background
        loc = encode(matches, priors, variances)
        loc_t[idx] = loc  # [num_priors,4] encoded offsets to learn
        conf_t[idx] = conf  # [num_priors] top class label for each prior

    def log_sum_exp(x):
        x_max = x.data.max()
        return torch.log(torch.sum(torch.exp(x - x_max), 1, keepdim=True)) + x_max

    class MultiBoxLoss(nn.Module):
        def __init__(self, num_classes, overlap_thresh, prior_for_matching, bkg_label, neg_mining, neg_pos,
                     neg_overlap, encode_target, use_gpu=True):
            super(MultiBoxLoss, self).__init__()
            self.use_gpu = use_gpu
            self.num_classes = num_classes
            self.threshold = overlap_thresh
            self.background_label = bkg_label
            self.encode_target = encode_target
            self.use_prior_for_matching = prior_for_matching
            self.do_neg_mining = neg_mining
            self.negpos_ratio = neg_pos
            self.neg_overlap = neg_overlap
            self.variance = cfg['variance']

        def forward(self, predictions, targets):
            loc_data, conf_data, priors = predictions
            num = loc_data.size(0)
            priors = priors[:loc_data.size(1), :]
            num_priors = (priors.size(0))
            # match priors (default boxes) and ground truth boxes
            loc_t = torch.Tensor(num, num_priors, 4)
            conf_t = torch.LongTensor(num, num_priors)
            for idx in range(num):
                truths = targets[idx][:, :-1].data
                labels = targets[idx][:, -1].data
                defaults = priors.data
                match(self.threshold, truths, defaults, self.variance, labels, loc_t, conf_t, idx)
            if self.use_gpu:
                loc_t = loc_t.cuda()
                conf_t = conf_t.cuda()
            # wrap targets
            loc_t = m.torch.autograd.Variable(loc_t, requires_grad=False)
            conf_t = m.torch.autograd.Variable(conf_t, requires_grad=False)
            pos = conf_t > 0
            num_pos = pos.sum(dim=1, keepdim=True)
            # Localization Loss (Smooth L1)
            # Shape: [batch,num_priors,4]
            pos_idx = pos.unsqueeze(pos.dim()).expand_as(loc_data)
            loc_p = loc_data[pos_idx].view(-1, 4)
            loc_t = loc_t[pos_idx].view(-1, 4)
            loss_l = F.smooth_l1_loss(loc_p, loc_t, size_average=False)
            # Compute max conf across batch for hard negative mining
            batch_conf = conf_data.view(-1, self.num_classes)
            loss_c = log_sum_exp(batch_conf) - batch_conf.gather(1, conf_t.view(-1, 1))
            # Hard Negative Mining
            loss_c = loss_c.view(num, -1)
            loss_c[pos] = 0  # filter out pos boxes for now
            _, loss_idx = loss_c.sort(1, descending=True)
            _, idx_rank = loss_idx.sort(1)
            num_pos = pos.long().sum(1, keepdim=True)
            num_neg = torch.clamp(self.negpos_ratio * num_pos, max=pos.size(1) - 1)
            neg = idx_rank < num_neg.expand_as(idx_rank)
            # Confidence Loss Including Positive and Negative Examples
            pos_idx = pos.unsqueeze(2).expand_as(conf_data)
            neg_idx = neg.unsqueeze(2).expand_as(conf_data)
            conf_p = conf_data[(pos_idx + neg_idx).gt(0)].view(-1, self.num_classes)
            targets_weighted = conf_t[(pos + neg).gt(0)]
            loss_c = F.cross_entropy(conf_p, targets_weighted, size_average=False)
            # Sum of losses: L(x,c) = L(x,c) + L(x,c)
            N = num_pos.data.sum()
            loss_l /= N
            loss_c /= N
            return loss_l, loss_c

    def weights_init(m_):
        if isinstance(m_, nn.Conv2d):
            init_.xavier_uniform_(m_.weight.data)
            m_.bias.data.zero_()

    def detection_collate(batch):
        targets = []
        imgs = []
        for sample in batch:
            imgs.append(sample[0])
            targets.append(torch.FloatTensor(sample[1]))
        return torch.stack(imgs, 0), targets

    class Detection(m.data.Dataset):  # VOCDetection's (img, target) with target rows [xmin, ymin, xmax, ymax, label]
        def __init__(self, n):
            self.images = normal(rng, n, 3, 16, 16)
            xy = rng.uniform(0.0, 0.6, (n, 2, 2))
            wh = rng.uniform(0.2, 0.4, (n, 2, 2))
            self.targets = np.concatenate([xy, xy + wh, rng.integers(0, 2, (n, 2, 1))], 2).astype(np.float32)

        def __len__(self):
            return len(self.images)

        def __getitem__(self, index):
            return torch.from_numpy(self.images[index]), self.targets[index]

    base = [nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2)]
    extras = [nn.Conv2d(8, 8, 3, stride=2, padding=1)]
    mbox = [4, 4]
    head = ([nn.Conv2d(8, k * 4, 3, padding=1) for k in mbox], [nn.Conv2d(8, k * cfg['num_classes'], 3, padding=1)
                                                                for k in mbox])
    net = SSD('train', 16, base, extras, head, cfg['num_classes'])
    net.extras.apply(weights_init)
    net.loc.apply(weights_init)
    net.conf.apply(weights_init)
    init = load(m, net, state)
    assert net.priors.shape == (8 * 8 * 4 + 4 * 4 * 4, 4)
    lr, gamma = 1e-3, 0.1
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    criterion = MultiBoxLoss(cfg['num_classes'], 0.5, True, 0, True, 3, 0.5, False, torch.cuda.is_available())

    def adjust_learning_rate(optimizer, gamma, step):
        lr_ = lr * (gamma ** (step))
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr_

    data_loader = m.data.DataLoader(Detection(4), 2, num_workers=0, shuffle=False, collate_fn=detection_collate,
                                    pin_memory=False)
    net.train()
    losses = []
    step_index = 0
    for iteration, (images, targets) in enumerate(data_loader):
        if iteration in (1,):
            step_index += 1
            adjust_learning_rate(optimizer, gamma, step_index)
        out = net(images)
        optimizer.zero_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # size_average's deprecation
            loss_l, loss_c = criterion(out, targets)
        loss = loss_l + loss_c
        loss.backward()
        optimizer.step()
        losses += [loss_l.item(), loss_c.item()]
    return init, losses + summary(net.parameters())


def test_ssd():
    compare(ssd)


# (g) SchNet as torch_geometric's models/schnet.py writes it (GaussianSmearing's linspace buffer and coeff by .item(),
# ShiftedSoftplus by torch.log(torch.tensor(2.0)).item(), CFConv's cosine cutoff weighting a filter network's output,
# messages x[row] * W summed at col by index_add_, InteractionBlock's reset_parameters by xavier_uniform_ and
# bias.data.fill_(0), h = h + interaction(...), mean and std scaling, an atomref Embedding from a numpy table, a sum
# readout per molecule), radius_graph written in PyTorch (same-molecule mask & ~eye & cdist < cutoff, nonzero(as_tuple=
# True)), edge weights by (pos[row] - pos[col]).norm(dim=-1); trained on energies and forces as MD17 scripts do (pos.
# requires_grad_(True), forces = -autograd.grad(energy, pos, grad_outputs=ones_like, create_graph=True)[0], a
# rho-weighted sum of the two MSEs: a double backward through norm, cos, exp, softplus and index_add_), Adam and
# ReduceLROnPlateau stepped on a validation loss computed with gradients on (forces need them)
def schnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    PI = math.pi

    class GaussianSmearing(nn.Module):
        def __init__(self, start=0.0, stop=5.0, num_gaussians=50):
            super().__init__()
            offset = torch.linspace(start, stop, num_gaussians)
            self.coeff = -0.5 / (offset[1] - offset[0]).item()**2
            self.register_buffer('offset', offset)

        def forward(self, dist):
            dist = dist.view(-1, 1) - self.offset.view(1, -1)
            return torch.exp(self.coeff * torch.pow(dist, 2))

    class ShiftedSoftplus(nn.Module):
        def __init__(self):
            super().__init__()
            self.shift = torch.log(torch.tensor(2.0)).item()

        def forward(self, x):
            return F.softplus(x) - self.shift

    class CFConv(nn.Module):
        def __init__(self, in_channels, out_channels, num_filters, nn_, cutoff):
            super().__init__()
            self.lin1 = nn.Linear(in_channels, num_filters, bias=False)
            self.lin2 = nn.Linear(num_filters, out_channels)
            self.nn = nn_
            self.cutoff = cutoff
            self.reset_parameters()

        def reset_parameters(self):
            torch.nn.init.xavier_uniform_(self.lin1.weight)
            torch.nn.init.xavier_uniform_(self.lin2.weight)
            self.lin2.bias.data.fill_(0)

        def forward(self, x, edge_index, edge_weight, edge_attr):
            C = 0.5 * (torch.cos(edge_weight * PI / self.cutoff) + 1.0)
            W = self.nn(edge_attr) * C.view(-1, 1)
            x = self.lin1(x)
            row, col = edge_index
            x = torch.zeros_like(x).index_add_(0, col, x[row] * W)  # propagate: x_j * W summed at i
            x = self.lin2(x)
            return x

    class InteractionBlock(nn.Module):
        def __init__(self, hidden_channels, num_gaussians, num_filters, cutoff):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(num_gaussians, num_filters), ShiftedSoftplus(),
                                     nn.Linear(num_filters, num_filters))
            self.conv = CFConv(hidden_channels, hidden_channels, num_filters, self.mlp, cutoff)
            self.act = ShiftedSoftplus()
            self.lin = nn.Linear(hidden_channels, hidden_channels)
            self.reset_parameters()

        def reset_parameters(self):
            torch.nn.init.xavier_uniform_(self.mlp[0].weight)
            self.mlp[0].bias.data.fill_(0)
            torch.nn.init.xavier_uniform_(self.mlp[2].weight)
            self.mlp[2].bias.data.fill_(0)
            self.conv.reset_parameters()
            torch.nn.init.xavier_uniform_(self.lin.weight)
            self.lin.bias.data.fill_(0)

        def forward(self, x, edge_index, edge_weight, edge_attr):
            x = self.conv(x, edge_index, edge_weight, edge_attr)
            x = self.act(x)
            x = self.lin(x)
            return x

    def radius_graph(pos, r, batch):
        with torch.no_grad():
            n = pos.size(0)
            mask = (batch.view(-1, 1) == batch.view(1, -1)) & ~torch.eye(n, dtype=torch.bool, device=pos.device)
            mask &= torch.cdist(pos, pos) < r
            row, col = mask.nonzero(as_tuple=True)
        return torch.stack([row, col], dim=0)

    class SchNet(nn.Module):
        def __init__(self, hidden_channels=128, num_filters=128, num_interactions=6, num_gaussians=50, cutoff=10.0,
                     readout='add', mean=None, std=None, atomref=None):
            super().__init__()
            self.hidden_channels = hidden_channels
            self.cutoff = cutoff
            self.readout = readout
            self.mean = mean
            self.std = std
            self.embedding = nn.Embedding(100, hidden_channels, padding_idx=0)
            self.distance_expansion = GaussianSmearing(0.0, cutoff, num_gaussians)
            self.interactions = nn.ModuleList()
            for _ in range(num_interactions):
                block = InteractionBlock(hidden_channels, num_gaussians, num_filters, cutoff)
                self.interactions.append(block)
            self.lin1 = nn.Linear(hidden_channels, hidden_channels // 2)
            self.act = ShiftedSoftplus()
            self.lin2 = nn.Linear(hidden_channels // 2, 1)
            self.register_buffer('initial_atomref', atomref)
            self.atomref = None
            if atomref is not None:
                self.atomref = nn.Embedding(100, 1)
                self.atomref.weight.data.copy_(atomref)

        def forward(self, z, pos, batch=None):
            batch = torch.zeros_like(z) if batch is None else batch
            h = self.embedding(z)
            edge_index = radius_graph(pos, r=self.cutoff, batch=batch)
            row, col = edge_index
            edge_weight = (pos[row] - pos[col]).norm(dim=-1)
            edge_attr = self.distance_expansion(edge_weight)
            for interaction in self.interactions:
                h = h + interaction(h, edge_index, edge_weight, edge_attr)
            h = self.lin1(h)
            h = self.act(h)
            h = self.lin2(h)
            if self.mean is not None and self.std is not None:
                h = h * self.std + self.mean
            if self.atomref is not None:
                h = h + self.atomref(z)
            num_graphs = int(batch.max()) + 1
            out = torch.zeros(num_graphs, 1, device=h.device).index_add_(0, batch, h)
            return out

    atomref = torch.from_numpy(rng.standard_normal((100, 1)).astype(np.float32) * 0.1)
    model = SchNet(hidden_channels=8, num_filters=8, num_interactions=1, num_gaussians=6, cutoff=2.5, mean=0.5,
                   std=2.0, atomref=atomref)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.8, patience=0, min_lr=1e-5)
    rho = 0.9

    def molecules(seed):
        r = np.random.default_rng(seed)
        z = torch.tensor(r.integers(1, 10, 7))
        batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        pos = torch.tensor(r.uniform(0, 2, (7, 3)).astype(np.float32))
        return z, pos, batch, torch.tensor(normal(r, 2, 1)), torch.tensor(normal(r, 7, 3))

    def loss_of(z, pos, batch, energy_true, forces_true):
        pos.requires_grad_(True)
        energy = model(z, pos, batch)
        forces = -torch.autograd.grad(energy, pos, grad_outputs=torch.ones_like(energy), create_graph=True,
                                      retain_graph=True)[0]
        return (1 - rho) * F.mse_loss(energy, energy_true) + rho * F.mse_loss(forces, forces_true)

    losses = []
    for step in range(2):
        model.train()
        optimizer.zero_grad()
        loss = loss_of(*molecules(step))
        loss.backward()
        optimizer.step()
        model.eval()
        val_loss = loss_of(*molecules(10)).item()
        scheduler.step(val_loss)
        losses += [loss.item(), val_loss, optimizer.param_groups[0]['lr']]
    return init, losses + summary(model.parameters())


def test_schnet():
    compare(schnet)


# (h) dreamquark-ai/tabnet's pytorch_tabnet/tab_network.py, sparsemax.py and abstract_model.py: initialize_glu and
# initialize_non_glu (xavier_normal_ with a numpy gain), GBN (ghost batch norm: x.chunk(int(np.ceil(n / vbs)), 0),
# each chunk through one BatchNorm1d, torch.cat), GLU_Layer (x[:, :od] * sigmoid(x[:, od:])), GLU_Block with shared
# Linear layers and scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device)), FeatTransformer, AttentiveTransformer
# with Entmax15 (a Function: max-shift, sort descending, cumsum over _make_ix_like's arange view transposed, support
# by comparison, gather at support_size - 1, clamp ** 2; its backward by Y.sqrt()), TabNetEncoder's prior update
# torch.mul(gamma - M, prior), M_loss of M * log(M + eps), M @ group_attention_matrix (torch.eye), ReLU()(...) made
# inline, steps summed by torch.sum(torch.stack(...), dim=0); the fit loop's loss - lambda_sparse * M_loss,
# clip_grad_norm_, Adam and StepLR; forward_masks' explanations summed with axis= into feature importances
def tabnet(m, state=None):
    torch, nn = m.torch, m.nn
    Function = torch.autograd.Function
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def initialize_non_glu(module, input_dim, output_dim):
        gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(4 * input_dim))
        torch.nn.init.xavier_normal_(module.weight, gain=gain_value)
        return

    def initialize_glu(module, input_dim, output_dim):
        gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(input_dim))
        torch.nn.init.xavier_normal_(module.weight, gain=gain_value)
        return

    def _make_ix_like(input, dim=0):
        d = input.size(dim)
        rho = torch.arange(1, d + 1, device=input.device, dtype=input.dtype)
        view = [1] * input.dim()
        view[0] = -1
        return rho.view(view).transpose(0, dim)

    class Entmax15Function(Function):
        @staticmethod
        def forward(ctx, input, dim=-1):
            ctx.dim = dim
            max_val, _ = input.max(dim=dim, keepdim=True)
            input = input - max_val  # same numerical stability trick as for softmax
            input = input / 2  # divide by 2 to solve actual Entmax
            tau_star, _ = Entmax15Function._threshold_and_support(input, dim)
            output = torch.clamp(input - tau_star, min=0) ** 2
            ctx.save_for_backward(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            Y, = ctx.saved_tensors
            gppr = Y.sqrt()  # = 1 / g'' (Y)
            dX = grad_output * gppr
            q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
            q = q.unsqueeze(ctx.dim)
            dX -= q * gppr
            return dX, None

        @staticmethod
        def _threshold_and_support(input, dim=-1):
            Xsrt, _ = torch.sort(input, descending=True, dim=dim)
            rho = _make_ix_like(input, dim)
            mean = Xsrt.cumsum(dim) / rho
            mean_sq = (Xsrt ** 2).cumsum(dim) / rho
            ss = rho * (mean_sq - mean ** 2)
            delta = (1 - ss) / rho
            # NOTE this is not exactly the same as in reference algo
            delta_nz = torch.clamp(delta, 0)
            tau = mean - torch.sqrt(delta_nz)
            support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
            tau_star = tau.gather(dim, support_size - 1)
            return tau_star, support_size

    entmax15 = Entmax15Function.apply

    class Entmax15(nn.Module):
        def __init__(self, dim=-1):
            self.dim = dim
            super(Entmax15, self).__init__()

        def forward(self, input):
            return entmax15(input, self.dim)

    class GBN(torch.nn.Module):
        def __init__(self, input_dim, virtual_batch_size=128, momentum=0.01):
            super(GBN, self).__init__()
            self.input_dim = input_dim
            self.virtual_batch_size = virtual_batch_size
            self.bn = nn.BatchNorm1d(self.input_dim, momentum=momentum)

        def forward(self, x):
            chunks = x.chunk(int(np.ceil(x.shape[0] / self.virtual_batch_size)), 0)
            res = [self.bn(x_) for x_ in chunks]
            return torch.cat(res, dim=0)

    class GLU_Layer(torch.nn.Module):
        def __init__(self, input_dim, output_dim, fc=None, virtual_batch_size=128, momentum=0.02):
            super(GLU_Layer, self).__init__()
            self.output_dim = output_dim
            if fc:
                self.fc = fc
            else:
                self.fc = nn.Linear(input_dim, 2 * output_dim, bias=False)
            initialize_glu(self.fc, input_dim, 2 * output_dim)
            self.bn = GBN(2 * output_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

        def forward(self, x):
            x = self.fc(x)
            x = self.bn(x)
            out = torch.mul(x[:, : self.output_dim], torch.sigmoid(x[:, self.output_dim:]))
            return out

    class GLU_Block(torch.nn.Module):
        def __init__(self, input_dim, output_dim, n_glu=2, first=False, shared_layers=None, virtual_batch_size=128,
                     momentum=0.02):
            super(GLU_Block, self).__init__()
            self.first = first
            self.shared_layers = shared_layers
            self.n_glu = n_glu
            self.glu_layers = torch.nn.ModuleList()
            params = {"virtual_batch_size": virtual_batch_size, "momentum": momentum}
            fc = shared_layers[0] if shared_layers else None
            self.glu_layers.append(GLU_Layer(input_dim, output_dim, fc=fc, **params))
            for glu_id in range(1, self.n_glu):
                fc = shared_layers[glu_id] if shared_layers else None
                self.glu_layers.append(GLU_Layer(output_dim, output_dim, fc=fc, **params))

        def forward(self, x):
            scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device))
            if self.first:  # the first layer of the block has no scale multiplication
                x = self.glu_layers[0](x)
                layers_left = range(1, self.n_glu)
            else:
                layers_left = range(self.n_glu)
            for glu_id in layers_left:
                x = torch.add(x, self.glu_layers[glu_id](x))
                x = x * scale
            return x

    class FeatTransformer(torch.nn.Module):
        def __init__(self, input_dim, output_dim, shared_layers, n_glu_independent, virtual_batch_size=128,
                     momentum=0.02):
            super(FeatTransformer, self).__init__()
            params = {"n_glu": n_glu_independent, "virtual_batch_size": virtual_batch_size, "momentum": momentum}
            if shared_layers is None:
                # no shared layers
                self.shared = torch.nn.Identity()
                is_first = True
            else:
                self.shared = GLU_Block(input_dim, output_dim, first=True, shared_layers=shared_layers,
                                        n_glu=len(shared_layers), virtual_batch_size=virtual_batch_size,
                                        momentum=momentum)
                is_first = False
            if n_glu_independent == 0:
                # no independent layers
                self.specifics = torch.nn.Identity()
            else:
                spec_input_dim = input_dim if is_first else output_dim
                self.specifics = GLU_Block(spec_input_dim, output_dim, first=is_first, **params)

        def forward(self, x):
            x = self.shared(x)
            x = self.specifics(x)
            return x

    class AttentiveTransformer(torch.nn.Module):
        def __init__(self, input_dim, group_dim, group_matrix, virtual_batch_size=128, momentum=0.02,
                     mask_type="sparsemax"):
            super(AttentiveTransformer, self).__init__()
            self.fc = nn.Linear(input_dim, group_dim, bias=False)
            initialize_non_glu(self.fc, input_dim, group_dim)
            self.bn = GBN(group_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)
            if mask_type == "entmax":
                self.selector = Entmax15(dim=-1)
            else:
                raise NotImplementedError("Please choose either sparsemax" + "or entmax as masktype")

        def forward(self, priors, processed_feat):
            x = self.fc(processed_feat)
            x = self.bn(x)
            x = torch.mul(x, priors)
            x = self.selector(x)
            return x

    class TabNetEncoder(torch.nn.Module):
        def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3, n_independent=2, n_shared=2,
                     epsilon=1e-15, virtual_batch_size=128, momentum=0.02, mask_type="sparsemax",
                     group_attention_matrix=None):
            super(TabNetEncoder, self).__init__()
            self.input_dim = input_dim
            self.output_dim = output_dim
            self.n_d = n_d
            self.n_a = n_a
            self.n_steps = n_steps
            self.gamma = gamma
            self.epsilon = epsilon
            self.n_independent = n_independent
            self.n_shared = n_shared
            self.virtual_batch_size = virtual_batch_size
            self.mask_type = mask_type
            self.initial_bn = nn.BatchNorm1d(self.input_dim, momentum=0.01)
            self.group_attention_matrix = group_attention_matrix
            if self.group_attention_matrix is None:
                # no groups
                self.group_attention_matrix = torch.eye(self.input_dim)
                self.attention_dim = self.input_dim
            else:
                self.attention_dim = self.group_attention_matrix.shape[0]
            if self.n_shared > 0:
                shared_feat_transform = torch.nn.ModuleList()
                for i in range(self.n_shared):
                    if i == 0:
                        shared_feat_transform.append(nn.Linear(self.input_dim, 2 * (n_d + n_a), bias=False))
                    else:
                        shared_feat_transform.append(nn.Linear(n_d + n_a, 2 * (n_d + n_a), bias=False))
            else:
                shared_feat_transform = None
            self.initial_splitter = FeatTransformer(self.input_dim, n_d + n_a, shared_feat_transform,
                                                    n_glu_independent=self.n_independent,
                                                    virtual_batch_size=self.virtual_batch_size, momentum=momentum)
            self.feat_transformers = torch.nn.ModuleList()
            self.att_transformers = torch.nn.ModuleList()
            for step in range(n_steps):
                transformer = FeatTransformer(self.input_dim, n_d + n_a, shared_feat_transform,
                                              n_glu_independent=self.n_independent,
                                              virtual_batch_size=self.virtual_batch_size, momentum=momentum)
                attention = AttentiveTransformer(n_a, self.attention_dim, group_matrix=group_attention_matrix,
                                                 virtual_batch_size=self.virtual_batch_size, momentum=momentum,
                                                 mask_type=self.mask_type)
                self.feat_transformers.append(transformer)
                self.att_transformers.append(attention)

        def forward(self, x, prior=None):
            x = self.initial_bn(x)
            bs = x.shape[0]  # batch size
            if prior is None:
                prior = torch.ones((bs, self.attention_dim)).to(x.device)
            M_loss = 0
            att = self.initial_splitter(x)[:, self.n_d:]
            steps_output = []
            for step in range(self.n_steps):
                M = self.att_transformers[step](prior, att)
                M_loss += torch.mean(torch.sum(torch.mul(M, torch.log(M + self.epsilon)), dim=1))
                # update prior
                prior = torch.mul(self.gamma - M, prior)
                # output
                M_feature_level = torch.matmul(M, self.group_attention_matrix)
                masked_x = torch.mul(M_feature_level, x)
                out = self.feat_transformers[step](masked_x)
                d = nn.ReLU()(out[:, : self.n_d])
                steps_output.append(d)
                # update attention
                att = out[:, self.n_d:]
            M_loss /= self.n_steps
            return steps_output, M_loss

        def forward_masks(self, x):
            x = self.initial_bn(x)
            bs = x.shape[0]  # batch size
            prior = torch.ones((bs, self.attention_dim)).to(x.device)
            M_explain = torch.zeros(x.shape).to(x.device)
            att = self.initial_splitter(x)[:, self.n_d:]
            masks = {}
            for step in range(self.n_steps):
                M = self.att_transformers[step](prior, att)
                M_feature_level = torch.matmul(M, self.group_attention_matrix)
                masks[step] = M_feature_level
                # update prior
                prior = torch.mul(self.gamma - M, prior)
                # output
                masked_x = torch.mul(M_feature_level, x)
                out = self.feat_transformers[step](masked_x)
                d = nn.ReLU()(out[:, : self.n_d])
                # explain
                step_importance = torch.sum(d, axis=1)
                M_explain += torch.mul(M_feature_level, step_importance.unsqueeze(dim=1))
                # update attention
                att = out[:, self.n_d:]
            return M_explain, masks

    class TabNetNoEmbeddings(torch.nn.Module):
        def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, **kwargs):
            super(TabNetNoEmbeddings, self).__init__()
            self.encoder = TabNetEncoder(input_dim=input_dim, output_dim=output_dim, n_d=n_d, n_a=n_a,
                                         n_steps=n_steps, **kwargs)
            self.final_mapping = nn.Linear(n_d, output_dim, bias=False)
            initialize_non_glu(self.final_mapping, n_d, output_dim)

        def forward(self, x):
            steps_output, M_loss = self.encoder(x)
            res = torch.sum(torch.stack(steps_output, dim=0), dim=0)
            out = self.final_mapping(res)
            return out, M_loss

    network = TabNetNoEmbeddings(5, 3, n_d=4, n_a=4, n_steps=2, gamma=1.3, n_independent=1, n_shared=1,
                                 virtual_batch_size=4, momentum=0.02, mask_type="entmax")
    init = load(m, network, state)
    optimizer = torch.optim.Adam(network.parameters(), lr=2e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    loss_fn = torch.nn.functional.cross_entropy
    lambda_sparse, clip_value = 1e-3, 1.0
    X = normal(rng, 8, 5)
    y = rng.integers(0, 3, 8)
    loader = m.data.DataLoader(m.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(y)), batch_size=8)
    losses = []
    network.train()
    for X_batch, y_batch in loader:
        for param in network.parameters():
            param.grad = None
        output, M_loss = network(X_batch)
        loss = loss_fn(output, y_batch.long())
        # Add the overall sparsity loss
        loss = loss - lambda_sparse * M_loss
        loss.backward()
        if clip_value:
            torch.nn.utils.clip_grad_norm_(network.parameters(), clip_value)
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), M_loss.item()]
    network.eval()
    with torch.no_grad():
        M_explain, masks = network.encoder.forward_masks(torch.from_numpy(X[:8]))
    sum_explain = M_explain.cpu().detach().numpy().sum(axis=0)
    feature_importances_ = sum_explain / np.sum(sum_explain)
    return init, losses + list(feature_importances_) + summary(network.parameters()) + summary(network.buffers())


def test_tabnet():
    compare(tabnet)


# (i) mklimasz/TransE-PyTorch's model.py, main.py, metric.py and data.py: embeddings with padding_idx for the
# out-of-vocabulary id, weight.data.uniform_ of 6 / np.sqrt(dim), the relations' rows and, at every forward, the
# entities' rows normalised in place through .data[:-1, :].div_(... .norm(p=, dim=1, keepdim=True)),
# MarginRankingLoss(reduction='none') against torch.tensor([-1], dtype=torch.long), distances by norm(p=1, dim=1);
# the loop's negatives (torch.randint(high=2, size=...), torch.where(head_or_tail == 1, ...), torch.stack(dim=1)),
# loss.mean().backward(), loss.data.cpu().nonzero().size()[0]; test()'s every head and tail candidate by repeat,
# stack(dim=2).reshape(-1, 3), hit_at_k by topk(largest=False) and torch.where of one- and zero-element tensors,
# mrr by argsort and nonzero()[:, 1].float().add(1.0). torch replays tnet's integer draws
def transe(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(1234)
    counter = itertools.count()

    def draw(t):
        return replayed(m, replay, next(counter), t)

    class TransE(nn.Module):
        def __init__(self, entity_count, relation_count, device, norm=1, dim=100, margin=1.0):
            super(TransE, self).__init__()
            self.entity_count = entity_count
            self.relation_count = relation_count
            self.device = device
            self.norm = norm
            self.dim = dim
            self.entities_emb = self._init_enitity_emb()
            self.relations_emb = self._init_relation_emb()
            self.criterion = nn.MarginRankingLoss(margin=margin, reduction='none')

        def _init_enitity_emb(self):
            entities_emb = nn.Embedding(num_embeddings=self.entity_count + 1, embedding_dim=self.dim,
                                        padding_idx=self.entity_count)
            uniform_range = 6 / np.sqrt(self.dim)
            entities_emb.weight.data.uniform_(-uniform_range, uniform_range)
            return entities_emb

        def _init_relation_emb(self):
            relations_emb = nn.Embedding(num_embeddings=self.relation_count + 1, embedding_dim=self.dim,
                                         padding_idx=self.relation_count)
            uniform_range = 6 / np.sqrt(self.dim)
            relations_emb.weight.data.uniform_(-uniform_range, uniform_range)
            # -1 to avoid nan for OOV vector
            relations_emb.weight.data[:-1, :].div_(relations_emb.weight.data[:-1, :].norm(p=1, dim=1, keepdim=True))
            return relations_emb

        def forward(self, positive_triplets, negative_triplets):
            # -1 to avoid nan for OOV vector
            self.entities_emb.weight.data[:-1, :].div_(
                self.entities_emb.weight.data[:-1, :].norm(p=2, dim=1, keepdim=True))
            assert positive_triplets.size()[1] == 3
            positive_distances = self._distance(positive_triplets)
            assert negative_triplets.size()[1] == 3
            negative_distances = self._distance(negative_triplets)
            return self.loss(positive_distances, negative_distances), positive_distances, negative_distances

        def predict(self, triplets):
            return self._distance(triplets)

        def loss(self, positive_distances, negative_distances):
            target = torch.tensor([-1], dtype=torch.long, device=self.device)
            return self.criterion(positive_distances, negative_distances, target)

        def _distance(self, triplets):
            assert triplets.size()[1] == 3
            heads = triplets[:, 0]
            relations = triplets[:, 1]
            tails = triplets[:, 2]
            return (self.entities_emb(heads) + self.relations_emb(relations)
                    - self.entities_emb(tails)).norm(p=self.norm, dim=1)

    def hit_at_k(predictions, ground_truth_idx, device, k=10):
        assert predictions.size(0) == ground_truth_idx.size(0)
        zero_tensor = torch.tensor([0], device=device)
        one_tensor = torch.tensor([1], device=device)
        _, indices = predictions.topk(k=k, largest=False)
        return torch.where(indices == ground_truth_idx, one_tensor, zero_tensor).sum().item()

    def mrr(predictions, ground_truth_idx):
        indices = predictions.argsort()
        return (1.0 / (indices == ground_truth_idx).nonzero()[:, 1].float().add(1.0)).sum().item()

    class FB15KDataset(m.data.Dataset):
        def __init__(self, triples):
            self.data = triples

        def __len__(self):
            return len(self.data)

        def __getitem__(self, index):
            head_id, relation_id, tail_id = self.data[index]
            return head_id, relation_id, tail_id

    rng = np.random.default_rng(0)
    entity2id, relation2id = {f"e{i}": i for i in range(7)}, {f"r{i}": i for i in range(3)}
    triples = [tuple(int(v) for v in t) for t in zip(rng.integers(0, 7, 12), rng.integers(0, 3, 12),
                                                      rng.integers(0, 7, 12))]
    device = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')
    model = TransE(entity_count=len(entity2id), relation_count=len(relation2id), dim=6, device=device, norm=1,
                   margin=1.0)
    model = model.to(device)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    train_generator = m.data.DataLoader(FB15KDataset(triples[:8]), batch_size=4)
    losses = []
    loss_impacting_samples_count, samples_count = 0, 0
    model.train()
    for local_heads, local_relations, local_tails in train_generator:
        local_heads, local_relations, local_tails = (local_heads.to(device), local_relations.to(device),
                                                     local_tails.to(device))
        positive_triples = torch.stack((local_heads, local_relations, local_tails), dim=1)
        # Preparing negatives.
        # Generate binary tensor to replace either head or tail. 1 means replace head, 0 means replace tail.
        head_or_tail = draw(torch.randint(high=2, size=local_heads.size(), device=device))
        random_entities = draw(torch.randint(high=len(entity2id), size=local_heads.size(), device=device))
        broken_heads = torch.where(head_or_tail == 1, random_entities, local_heads)
        broken_tails = torch.where(head_or_tail == 0, random_entities, local_tails)
        negative_triples = torch.stack((broken_heads, local_relations, broken_tails), dim=1)
        optimizer.zero_grad()
        loss, pd, nd = model(positive_triples, negative_triples)
        loss.mean().backward()
        loss = loss.data.cpu()
        loss_impacting_samples_count += loss.nonzero().size()[0]
        samples_count += loss.size()[0]
        optimizer.step()
        losses += [loss.mean().item(), pd.sum().item(), nd.sum().item()]
    losses.append(loss_impacting_samples_count / samples_count * 100)
    model.eval()
    hits_at_1, hits_at_3, mrr_ = 0.0, 0.0, 0.0
    entity_ids = torch.arange(end=len(entity2id), device=device).unsqueeze(0)
    with torch.no_grad():
        for head, relation, tail in m.data.DataLoader(FB15KDataset(triples[8:]), batch_size=4):
            current_batch_size = head.size()[0]
            head, relation, tail = head.to(device), relation.to(device), tail.to(device)
            all_entities = entity_ids.repeat(current_batch_size, 1)
            heads = head.reshape(-1, 1).repeat(1, all_entities.size()[1])
            relations = relation.reshape(-1, 1).repeat(1, all_entities.size()[1])
            tails = tail.reshape(-1, 1).repeat(1, all_entities.size()[1])
            # Check all possible tails
            triplets = torch.stack((heads, relations, all_entities), dim=2).reshape(-1, 3)
            tails_predictions = model.predict(triplets).reshape(current_batch_size, -1)
            # Check all possible heads
            triplets = torch.stack((all_entities, relations, tails), dim=2).reshape(-1, 3)
            heads_predictions = model.predict(triplets).reshape(current_batch_size, -1)
            # Concat predictions
            predictions = torch.cat((tails_predictions, heads_predictions), dim=0)
            ground_truth_entity_id = torch.cat((tail.reshape(-1, 1), head.reshape(-1, 1)))
            hits_at_1 += hit_at_k(predictions, ground_truth_entity_id, device=device, k=1)
            hits_at_3 += hit_at_k(predictions, ground_truth_entity_id, device=device, k=3)
            mrr_ += mrr(predictions, ground_truth_entity_id)
    return init, losses + [hits_at_1, hits_at_3, mrr_] + summary(model.parameters())


def test_transe():
    compare(transe, replay={})


# (j) lucidrains/vector-quantize-pytorch's finite_scalar_quantization.py (FSQ) with its einops rearranges and pack
# written as permute and reshape (einops is not among the test dependencies): round_ste by z + (z.round() -
# z).detach(), _levels and _basis as int32 buffers with persistent=False (torch.cumprod of torch.tensor([1] +
# levels[:-1]) with dim=0, dtype=int32), bound by torch.where(levels % 2 == 0, 0.5, 0.0) and atanh, quantize's
# division by levels // 2, codes_to_indices ((zhat * basis).sum(dim=-1).to(int32)), indices_to_level_indices by //
# and %, the implicit codebook from torch.arange(codebook_size) and self._levels.prod().item(), project_in and
# project_out Linears, forward under @torch.amp.autocast('cuda', enabled=False) with codes.type(orig_dtype); in a
# small convolutional autoencoder trained with MSE and Adam, with codebook usage by indices.unique().numel()
def fsq(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    int32 = torch.int32
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def round_ste(z):
        """Round with straight through gradients."""
        zhat = z.round()
        return z + (zhat - z).detach()

    class FSQ(nn.Module):
        def __init__(self, levels, dim=None, num_codebooks=1, keep_num_codebooks_dim=None, scale=None,
                     allowed_dtypes=(torch.float32, torch.float64), channel_first=False, projection_has_bias=True,
                     return_indices=True, force_quantization_f32=True):
            super().__init__()
            _levels = torch.tensor(levels, dtype=int32)
            self.register_buffer("_levels", _levels, persistent=False)
            _basis = torch.cumprod(torch.tensor([1] + levels[:-1]), dim=0, dtype=int32)
            self.register_buffer("_basis", _basis, persistent=False)
            self.scale = scale
            codebook_dim = len(levels)
            self.codebook_dim = codebook_dim
            effective_codebook_dim = codebook_dim * num_codebooks
            self.num_codebooks = num_codebooks
            self.effective_codebook_dim = effective_codebook_dim
            keep_num_codebooks_dim = num_codebooks > 1 if keep_num_codebooks_dim is None else keep_num_codebooks_dim
            assert not (num_codebooks > 1 and not keep_num_codebooks_dim)
            self.keep_num_codebooks_dim = keep_num_codebooks_dim
            self.dim = len(_levels) * num_codebooks if dim is None else dim
            self.channel_first = channel_first
            has_projections = self.dim != effective_codebook_dim
            self.project_in = nn.Linear(self.dim, effective_codebook_dim, bias=projection_has_bias) \
                if has_projections else nn.Identity()
            self.project_out = nn.Linear(effective_codebook_dim, self.dim, bias=projection_has_bias) \
                if has_projections else nn.Identity()
            self.has_projections = has_projections
            self.return_indices = return_indices
            if return_indices:
                self.codebook_size = self._levels.prod().item()
                implicit_codebook = self._indices_to_codes(torch.arange(self.codebook_size))
                self.register_buffer("implicit_codebook", implicit_codebook, persistent=False)
            self.allowed_dtypes = allowed_dtypes
            self.force_quantization_f32 = force_quantization_f32

        def bound(self, z, eps=1e-3):
            """ Bound `z`, an array of shape (..., d). """
            half_l = (self._levels - 1) * (1 + eps) / 2
            offset = torch.where(self._levels % 2 == 0, 0.5, 0.0)
            shift = (offset / half_l).atanh()
            return (z + shift).tanh() * half_l - offset

        def quantize(self, z):
            """ Quantizes z, returns quantized zhat, same shape as z. """
            quantized = round_ste(self.bound(z))
            half_width = self._levels // 2  # Renormalize to [-1, 1].
            return quantized / half_width

        def _scale_and_shift(self, zhat_normalized):
            half_width = self._levels // 2
            return (zhat_normalized * half_width) + half_width

        def _scale_and_shift_inverse(self, zhat):
            half_width = self._levels // 2
            return (zhat - half_width) / half_width

        def _indices_to_codes(self, indices):
            level_indices = self.indices_to_level_indices(indices)
            codes = self._scale_and_shift_inverse(level_indices)
            return codes

        def codes_to_indices(self, zhat):
            """ Converts a `code` to an index in the codebook. """
            assert zhat.shape[-1] == self.codebook_dim
            zhat = self._scale_and_shift(zhat)
            return (zhat * self._basis).sum(dim=-1).to(int32)

        def indices_to_level_indices(self, indices):
            """ Converts indices to indices at each level, perhaps needed for a transformer with factorized
            embeddings """
            indices = indices.unsqueeze(-1)  # rearrange(indices, '... -> ... 1')
            codes_non_centered = (indices // self._basis) % self._levels
            return codes_non_centered

        def indices_to_codes(self, indices):
            """ Inverse of `codes_to_indices`. """
            is_img_or_video = indices.ndim >= (3 + int(self.keep_num_codebooks_dim))
            codes = self._indices_to_codes(indices)
            codes = self.project_out(codes)
            if is_img_or_video or self.channel_first:
                codes = codes.permute(0, 3, 1, 2)  # rearrange(codes, 'b ... d -> b d ...')
            return codes

        @torch.amp.autocast('cuda', enabled=False)
        def forward(self, z):
            is_img_or_video = z.ndim >= 4
            need_move_channel_last = is_img_or_video or self.channel_first
            # standardize image or video into (batch, seq, dimension)
            if need_move_channel_last:
                ps = z.shape[2:]
                z = z.permute(0, 2, 3, 1)  # rearrange(z, 'b d ... -> b ... d')
                z = z.reshape(z.shape[0], -1, z.shape[-1])  # pack_one(z, 'b * d')
            assert z.shape[-1] == self.dim, f'expected dimension of {self.dim} but found dimension of {z.shape[-1]}'
            z = self.project_in(z)
            z = z.reshape(*z.shape[:2], self.num_codebooks, -1)  # rearrange(z, 'b n (c d) -> b n c d')
            orig_dtype = z.dtype
            if self.force_quantization_f32 and orig_dtype not in self.allowed_dtypes:
                z = z.float()
            codes = self.quantize(z)
            # returning indices could be optional
            indices = None
            if self.return_indices:
                indices = self.codes_to_indices(codes)
            codes = codes.flatten(2)  # rearrange(codes, 'b n c d -> b n (c d)')
            codes = codes.type(orig_dtype)
            # project out
            out = self.project_out(codes)
            # reconstitute image or video dimensions
            if need_move_channel_last:
                out = out.reshape(out.shape[0], *ps, out.shape[-1]).permute(0, 3, 1, 2)
                indices = indices.reshape(indices.shape[0], *ps, indices.shape[-1])
            if not self.keep_num_codebooks_dim and self.return_indices:
                indices = indices.squeeze(-1)  # rearrange(indices, '... 1 -> ...')
            # return quantized output and indices
            return out, indices

    class AutoEncoder(nn.Module):
        def __init__(self, levels):
            super().__init__()
            self.encoder = nn.Sequential(nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.GELU(),
                                         nn.Conv2d(8, 8, 3, padding=1))
            self.fsq = FSQ(levels=levels, dim=8)
            self.decoder = nn.Sequential(nn.ConvTranspose2d(8, 8, 4, stride=2, padding=1), nn.GELU(),
                                         nn.Conv2d(8, 1, 3, padding=1))

        def forward(self, x):
            x = self.encoder(x)
            x, indices = self.fsq(x)
            return self.decoder(x).clamp(-1, 1), indices

    model = AutoEncoder(levels=[8, 5, 5, 3])
    init = load(m, model, state)
    assert set(model.state_dict()) == {k for k, _ in model.named_parameters()}  # the buffers are not persistent
    assert model.fsq.codebook_size == 600 and tuple(model.fsq.implicit_codebook.shape) == (600, 4)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    images = torch.tensor(np.tanh(normal(rng, 4, 1, 8, 8)))
    losses = []
    for x in images.split(2):
        opt.zero_grad()
        out, indices = model(x)
        rec_loss = F.mse_loss(out, x)
        rec_loss.backward()
        opt.step()
        losses += [rec_loss.item(), indices.unique().numel() / model.fsq.codebook_size * 100]
    with torch.no_grad():
        out, indices = model.fsq(model.encoder(images))
        codes = model.fsq.indices_to_codes(indices)
    assert indices.dtype == int32 and (codes - out).abs().max().item() < 1e-5
    return init, losses + summary([out, indices.float()]) + summary(model.parameters())


def test_fsq():
    compare(fsq)


# (k) RexYing/diffpool's encoders.py (GcnEncoderGraph, SoftPoolingGcnEncoder), graph_sampler.py and train.py at one
# pooling: GraphConv by torch.matmul(adj, x), y += x for self-loops, weights as nn.Parameter(torch.FloatTensor(in,
# out)) initialised by init.xavier_uniform_(gain=nn.init.calculate_gain('relu')) and init.constant_ through
# self.modules(), F.normalize(p=2, dim=2); apply_bn making a fresh nn.BatchNorm1d(x.size()[1]) at every forward
# (over the nodes, as the source does); construct_mask by slices of ones written into zeros; the assignment
# nn.Softmax(dim=-1)(...) made inline, x pooled by transpose(1, 2) @ and adj by S^T @ adj @ S, max readouts
# torch.max(x, dim=1) concatenated; the link prediction loss (torch.min against torch.ones(1), the log terms,
# link_loss[(1 - adj_mask).bool()] = 0.0, np.sum of the node counts squared); GraphSampler's dicts of padded numpy
# arrays through the default collate, Variable(data['adj'].float(), requires_grad=False), data['num_nodes'].int()
# .numpy(), Adam over filter(lambda p: p.requires_grad, ...), clip_grad_norm_. The source's .cuda() calls are
# .to(device) here (torch runs on the CPU)
def diffpool(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_ = nn.init
    Variable = torch.autograd.Variable
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'

    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, add_self=False, normalize_embedding=False, dropout=0.0,
                     bias=True):
            super(GraphConv, self).__init__()
            self.add_self = add_self
            self.dropout = dropout
            self.normalize_embedding = normalize_embedding
            self.input_dim = input_dim
            self.output_dim = output_dim
            self.weight = nn.Parameter(torch.FloatTensor(input_dim, output_dim).to(device))
            if bias:
                self.bias = nn.Parameter(torch.FloatTensor(output_dim).to(device))
            else:
                self.bias = None

        def forward(self, x, adj):
            y = torch.matmul(adj, x)
            if self.add_self:
                y += x
            y = torch.matmul(y, self.weight)
            if self.bias is not None:
                y = y + self.bias
            if self.normalize_embedding:
                y = F.normalize(y, p=2, dim=2)
            return y

    class GcnEncoderGraph(nn.Module):
        def __init__(self, input_dim, hidden_dim, embedding_dim, label_dim, num_layers, pred_hidden_dims=[],
                     concat=True, bn=True, dropout=0.0, args=None):
            super(GcnEncoderGraph, self).__init__()
            self.concat = concat
            add_self = not concat
            self.bn = bn
            self.num_layers = num_layers
            self.num_aggs = 1
            self.bias = True
            self.conv_first, self.conv_block, self.conv_last = self.build_conv_layers(
                input_dim, hidden_dim, embedding_dim, num_layers, add_self, normalize=True, dropout=dropout)
            self.act = nn.ReLU()
            self.label_dim = label_dim
            for m_ in self.modules():
                if isinstance(m_, GraphConv):
                    m_.weight.data = init_.xavier_uniform_(m_.weight.data, gain=nn.init.calculate_gain('relu'))
                    if m_.bias is not None:
                        m_.bias.data = init_.constant_(m_.bias.data, 0.0)

        def build_conv_layers(self, input_dim, hidden_dim, embedding_dim, num_layers, add_self, normalize=False,
                              dropout=0.0):
            conv_first = GraphConv(input_dim=input_dim, output_dim=hidden_dim, add_self=add_self,
                                   normalize_embedding=normalize, bias=self.bias)
            conv_block = nn.ModuleList(
                [GraphConv(input_dim=hidden_dim, output_dim=hidden_dim, add_self=add_self,
                           normalize_embedding=normalize, dropout=dropout, bias=self.bias)
                 for i in range(num_layers - 2)])
            conv_last = GraphConv(input_dim=hidden_dim, output_dim=embedding_dim, add_self=add_self,
                                  normalize_embedding=normalize, bias=self.bias)
            return conv_first, conv_block, conv_last

        def build_pred_layers(self, pred_input_dim, pred_hidden_dims, label_dim, num_aggs=1):
            pred_input_dim = pred_input_dim * num_aggs
            return nn.Linear(pred_input_dim, label_dim)

        def construct_mask(self, max_nodes, batch_num_nodes):
            # masks
            packed_masks = [torch.ones(int(num)) for num in batch_num_nodes]
            batch_size = len(batch_num_nodes)
            out_tensor = torch.zeros(batch_size, max_nodes)
            for i, mask in enumerate(packed_masks):
                out_tensor[i, :batch_num_nodes[i]] = mask
            return out_tensor.unsqueeze(2).to(device)

        def apply_bn(self, x):
            ''' Batch normalization of 3D tensor x
            '''
            bn_module = nn.BatchNorm1d(x.size()[1]).to(device)
            return bn_module(x)

        def gcn_forward(self, x, adj, conv_first, conv_block, conv_last, embedding_mask=None):
            x = conv_first(x, adj)
            x = self.act(x)
            if self.bn:
                x = self.apply_bn(x)
            x_all = [x]
            for i in range(len(conv_block)):
                x = conv_block[i](x, adj)
                x = self.act(x)
                if self.bn:
                    x = self.apply_bn(x)
                x_all.append(x)
            x = conv_last(x, adj)
            x_all.append(x)
            # x_tensor: [batch_size x num_nodes x embedding]
            x_tensor = torch.cat(x_all, dim=2)
            if embedding_mask is not None:
                x_tensor = x_tensor * embedding_mask
            return x_tensor

        def loss(self, pred, label, type='softmax'):
            return F.cross_entropy(pred, label, reduction='mean')

    class SoftPoolingGcnEncoder(GcnEncoderGraph):
        def __init__(self, max_num_nodes, input_dim, hidden_dim, embedding_dim, label_dim, num_layers,
                     assign_hidden_dim, assign_ratio=0.25, num_pooling=1, pred_hidden_dims=[50], concat=True,
                     bn=True, dropout=0.0, linkpred=True, assign_input_dim=-1, args=None):
            super(SoftPoolingGcnEncoder, self).__init__(input_dim, hidden_dim, embedding_dim, label_dim, num_layers,
                                                        pred_hidden_dims=pred_hidden_dims, concat=concat, args=args)
            add_self = not concat
            self.num_pooling = num_pooling
            self.linkpred = linkpred
            self.assign_ent = True
            self.pred_input_dim = hidden_dim * (num_layers - 1) + embedding_dim
            # GC (no biases here: on this tiny graph their first gradient is rounding alone, which Adam normalises)
            self.bias = False
            self.conv_first_after_pool = nn.ModuleList()
            self.conv_block_after_pool = nn.ModuleList()
            self.conv_last_after_pool = nn.ModuleList()
            for i in range(num_pooling):
                conv_first2, conv_block2, conv_last2 = self.build_conv_layers(
                    self.pred_input_dim, hidden_dim, embedding_dim, num_layers, add_self, normalize=True,
                    dropout=dropout)
                self.conv_first_after_pool.append(conv_first2)
                self.conv_block_after_pool.append(conv_block2)
                self.conv_last_after_pool.append(conv_last2)
            self.bias = True
            # assignment
            assign_dims = []
            if assign_input_dim == -1:
                assign_input_dim = input_dim
            self.assign_conv_first_modules = nn.ModuleList()
            self.assign_conv_block_modules = nn.ModuleList()
            self.assign_conv_last_modules = nn.ModuleList()
            self.assign_pred_modules = nn.ModuleList()
            assign_dim = int(max_num_nodes * assign_ratio)
            for i in range(num_pooling):
                assign_dims.append(assign_dim)
                assign_conv_first, assign_conv_block, assign_conv_last = self.build_conv_layers(
                    assign_input_dim, assign_hidden_dim, assign_dim, num_layers, add_self, normalize=True)
                assign_pred_input_dim = assign_hidden_dim * (num_layers - 1) + assign_dim if concat else assign_dim
                assign_pred = self.build_pred_layers(assign_pred_input_dim, [], assign_dim, num_aggs=1)
                # next pooling layer
                assign_input_dim = self.pred_input_dim
                assign_dim = int(assign_dim * assign_ratio)
                self.assign_conv_first_modules.append(assign_conv_first)
                self.assign_conv_block_modules.append(assign_conv_block)
                self.assign_conv_last_modules.append(assign_conv_last)
                self.assign_pred_modules.append(assign_pred)
            self.pred_model = self.build_pred_layers(self.pred_input_dim * (num_pooling + 1), pred_hidden_dims,
                                                     label_dim, num_aggs=self.num_aggs)
            for m_ in self.modules():
                if isinstance(m_, GraphConv):
                    m_.weight.data = init_.xavier_uniform_(m_.weight.data, gain=nn.init.calculate_gain('relu'))
                    if m_.bias is not None:
                        m_.bias.data = init_.constant_(m_.bias.data, 0.0)

        def forward(self, x, adj, batch_num_nodes, **kwargs):
            if 'assign_x' in kwargs:
                x_a = kwargs['assign_x']
            else:
                x_a = x
            # mask
            max_num_nodes = adj.size()[1]
            if batch_num_nodes is not None:
                embedding_mask = self.construct_mask(max_num_nodes, batch_num_nodes)
            else:
                embedding_mask = None
            out_all = []
            embedding_tensor = self.gcn_forward(x, adj, self.conv_first, self.conv_block, self.conv_last,
                                                embedding_mask)
            out, _ = torch.max(embedding_tensor, dim=1)
            out_all.append(out)
            for i in range(self.num_pooling):
                if batch_num_nodes is not None and i == 0:
                    embedding_mask = self.construct_mask(max_num_nodes, batch_num_nodes)
                else:
                    embedding_mask = None
                self.assign_tensor = self.gcn_forward(x_a, adj, self.assign_conv_first_modules[i],
                                                      self.assign_conv_block_modules[i],
                                                      self.assign_conv_last_modules[i], embedding_mask)
                # [batch_size x num_nodes x next_lvl_num_nodes]
                self.assign_tensor = nn.Softmax(dim=-1)(self.assign_pred_modules[i](self.assign_tensor))
                if embedding_mask is not None:
                    self.assign_tensor = self.assign_tensor * embedding_mask
                # update pooled features and adj matrix
                x = torch.matmul(torch.transpose(self.assign_tensor, 1, 2), embedding_tensor)
                adj = torch.transpose(self.assign_tensor, 1, 2) @ adj @ self.assign_tensor
                x_a = x
                embedding_tensor = self.gcn_forward(x, adj, self.conv_first_after_pool[i],
                                                    self.conv_block_after_pool[i], self.conv_last_after_pool[i])
                out, _ = torch.max(embedding_tensor, dim=1)
                out_all.append(out)
            if self.concat:
                output = torch.cat(out_all, dim=1)
            else:
                output = out
            ypred = self.pred_model(output)
            return ypred

        def loss(self, pred, label, adj=None, batch_num_nodes=None, adj_hop=1):
            eps = 1e-7
            loss = super(SoftPoolingGcnEncoder, self).loss(pred, label)
            if self.linkpred:
                max_num_nodes = adj.size()[1]
                pred_adj0 = self.assign_tensor @ torch.transpose(self.assign_tensor, 1, 2)
                tmp = pred_adj0
                pred_adj = pred_adj0
                for adj_pow in range(adj_hop - 1):
                    tmp = tmp @ pred_adj0
                    pred_adj = pred_adj + tmp
                pred_adj = torch.min(pred_adj, torch.ones(1, dtype=pred_adj.dtype).to(device))
                self.link_loss = -adj * torch.log(pred_adj + eps) - (1 - adj) * torch.log(1 - pred_adj + eps)
                if batch_num_nodes is None:
                    num_entries = max_num_nodes * max_num_nodes * adj.size()[0]
                else:
                    num_entries = np.sum(batch_num_nodes * batch_num_nodes)
                    embedding_mask = self.construct_mask(max_num_nodes, batch_num_nodes)
                    adj_mask = embedding_mask @ torch.transpose(embedding_mask, 1, 2)
                    self.link_loss[(1 - adj_mask).bool()] = 0.0
                self.link_loss = torch.sum(self.link_loss) / float(num_entries)
                return loss + self.link_loss
            return loss

    class GraphSampler(m.data.Dataset):
        def __init__(self, graphs, max_num_nodes):
            self.adj_all, self.len_all, self.feature_all, self.label_all = [], [], [], []
            self.max_num_nodes = max_num_nodes
            for adj, feats, label in graphs:
                self.adj_all.append(adj)
                self.len_all.append(adj.shape[0])
                self.feature_all.append(feats)
                self.label_all.append(label)

        def __len__(self):
            return len(self.adj_all)

        def __getitem__(self, idx):
            adj = self.adj_all[idx]
            num_nodes = adj.shape[0]
            adj_padded = np.zeros((self.max_num_nodes, self.max_num_nodes))
            adj_padded[:num_nodes, :num_nodes] = adj
            f = np.zeros((self.max_num_nodes, self.feature_all[idx].shape[1]), dtype=np.float32)
            f[:num_nodes] = self.feature_all[idx]
            return {'adj': adj_padded, 'feats': f, 'label': self.label_all[idx], 'num_nodes': num_nodes,
                    'assign_feats': f.copy()}

    def graph(n):
        a = np.triu((rng.uniform(size=(n, n)) < 0.5).astype(np.float64), 1)
        return a + a.T, normal(rng, n, 3), int(rng.integers(0, 2))

    max_num_nodes = 6
    dataset_loader = m.data.DataLoader(GraphSampler([graph(6), graph(4), graph(5), graph(6)], max_num_nodes),
                                       batch_size=2, shuffle=False)
    model = SoftPoolingGcnEncoder(max_num_nodes, 3, 4, 4, 2, 2, 4, assign_ratio=0.5, num_pooling=1, bn=True,
                                  linkpred=True, assign_input_dim=3).to(device)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
    model.train()
    losses = []
    for batch_idx, data in enumerate(dataset_loader):
        model.zero_grad()
        adj = Variable(data['adj'].float(), requires_grad=False).to(device)
        h0 = Variable(data['feats'].float()).to(device)
        label = Variable(data['label'].long()).to(device)
        batch_num_nodes = data['num_nodes'].int().numpy()
        assign_input = Variable(data['assign_feats'].float(), requires_grad=False).to(device)
        ypred = model(h0, adj, batch_num_nodes, assign_x=assign_input)
        loss = model.loss(ypred, label, adj, batch_num_nodes)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        optimizer.step()
        losses += [loss.item(), model.link_loss.item()]
    return init, losses + summary(model.parameters())


def test_diffpool():
    compare(diffpool)


# (l) zhouhaoyi/Informer2020's models (attn.py, embed.py, encoder.py, decoder.py, model.py), utils/masking.py and
# exp/exp_informer.py: ProbAttention's _prob_QK (K.unsqueeze(-3).expand, torch.randint(L_K, (L_Q, sample_k)),
# K_expand[:, :, torch.arange(L_Q).unsqueeze(1), index_sample, :], the sparsity measure by max(-1)[0] and torch.div,
# M.topk(n_top, sorted=False)[1], Q[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], M_top, :]),
# U_part by np.ceil(np.log(L_K)).astype('int').item(), the initial context (V.mean(...).unsqueeze(-2).expand(...)
# .clone() or V.cumsum(dim=-2)), _update_context writing context_in[arange, arange, index, :] = ... .type_as(...),
# ProbMask (ones(..., dtype=torch.bool).triu(1), [None, None, :].expand, the same advanced index), masked_fill_ with
# -np.inf; FullAttention by torch.einsum("blhe,bshe->bhls"), AttentionLayer's mix (transpose(2, 1).contiguous()
# before view); DataEmbedding (Conv1d with padding_mode='circular' and kaiming_normal_(mode='fan_in',
# nonlinearity='leaky_relu'), a PositionalEmbedding buffer filled by pe[:, 0::2] = torch.sin(...), FixedEmbedding's
# nn.Parameter(w, requires_grad=False) and .detach(), time marks by x.long() with `else 0.`), ConvLayer's distilling
# (circular Conv1d, BatchNorm1d, ELU, MaxPool1d(3, 2, 1)), the encoder and decoder layers' 1x1 Conv1d feed-forwards;
# _process_one_batch's decoder input (zeros of pred_len after label_len of batch_y, torch.cat(...).float()), MSELoss,
# Adam and adjust_learning_rate's type1 halving. Dropout 0 (as a deterministic run); torch replays tnet's randint draws.
# The source's `padding = 1 if torch.__version__ >= '1.5.0' else 2` reads 1 in tnet too (its __version__: README)
def informer(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    sqrt = math.sqrt
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    counter = itertools.count()

    def draw(t):
        return replayed(m, replay, next(counter), t)

    class TriangularCausalMask():
        def __init__(self, B, L, device="cpu"):
            mask_shape = [B, 1, L, L]
            with torch.no_grad():
                self._mask = torch.triu(torch.ones(mask_shape, dtype=torch.bool), diagonal=1).to(device)

        @property
        def mask(self):
            return self._mask

    class ProbMask():
        def __init__(self, B, H, L, index, scores, device="cpu"):
            _mask = torch.ones(L, scores.shape[-1], dtype=torch.bool).to(device).triu(1)
            _mask_ex = _mask[None, None, :].expand(B, H, L, scores.shape[-1])
            indicator = _mask_ex[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :].to(device)
            self._mask = indicator.view(scores.shape).to(device)

        @property
        def mask(self):
            return self._mask

    class FullAttention(nn.Module):
        def __init__(self, mask_flag=True, factor=5, scale=None, attention_dropout=0.1, output_attention=False):
            super(FullAttention, self).__init__()
            self.scale = scale
            self.mask_flag = mask_flag
            self.output_attention = output_attention
            self.dropout = nn.Dropout(attention_dropout)

        def forward(self, queries, keys, values, attn_mask):
            B, L, H, E = queries.shape
            _, S, _, D = values.shape
            scale = self.scale or 1. / sqrt(E)
            scores = torch.einsum("blhe,bshe->bhls", queries, keys)
            if self.mask_flag:
                if attn_mask is None:
                    attn_mask = TriangularCausalMask(B, L, device=queries.device)
                scores.masked_fill_(attn_mask.mask, -np.inf)
            A = self.dropout(torch.softmax(scale * scores, dim=-1))
            V = torch.einsum("bhls,bshd->blhd", A, values)
            if self.output_attention:
                return (V.contiguous(), A)
            else:
                return (V.contiguous(), None)

    class ProbAttention(nn.Module):
        def __init__(self, mask_flag=True, factor=5, scale=None, attention_dropout=0.1, output_attention=False):
            super(ProbAttention, self).__init__()
            self.factor = factor
            self.scale = scale
            self.mask_flag = mask_flag
            self.output_attention = output_attention
            self.dropout = nn.Dropout(attention_dropout)

        def _prob_QK(self, Q, K, sample_k, n_top):  # n_top: c*ln(L_q)
            # Q [B, H, L, D]
            B, H, L_K, E = K.shape
            _, _, L_Q, _ = Q.shape
            # calculate the sampled Q_K
            K_expand = K.unsqueeze(-3).expand(B, H, L_Q, L_K, E)
            index_sample = draw(torch.randint(L_K, (L_Q, sample_k)))  # real U = U_part(factor*ln(L_k))*L_q
            K_sample = K_expand[:, :, torch.arange(L_Q).unsqueeze(1), index_sample, :]
            Q_K_sample = torch.matmul(Q.unsqueeze(-2), K_sample.transpose(-2, -1)).squeeze(-2)
            # find the Top_k query with sparisty measurement
            M = Q_K_sample.max(-1)[0] - torch.div(Q_K_sample.sum(-1), L_K)
            M_top = M.topk(n_top, sorted=False)[1]
            # use the reduced Q to calculate Q_K
            Q_reduce = Q[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], M_top, :]  # factor*ln(L_q)
            Q_K = torch.matmul(Q_reduce, K.transpose(-2, -1))  # factor*ln(L_q)*L_k
            return Q_K, M_top

        def _get_initial_context(self, V, L_Q):
            B, H, L_V, D = V.shape
            if not self.mask_flag:
                V_sum = V.mean(dim=-2)
                contex = V_sum.unsqueeze(-2).expand(B, H, L_Q, V_sum.shape[-1]).clone()
            else:  # use mask
                assert (L_Q == L_V)  # requires that L_Q == L_V, i.e. for self-attention only
                contex = V.cumsum(dim=-2)
            return contex

        def _update_context(self, context_in, V, scores, index, L_Q, attn_mask):
            B, H, L_V, D = V.shape
            if self.mask_flag:
                attn_mask = ProbMask(B, H, L_Q, index, scores, device=V.device)
                scores.masked_fill_(attn_mask.mask, -np.inf)
            attn = torch.softmax(scores, dim=-1)  # nn.Softmax(dim=-1)(scores)
            context_in[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :] = \
                torch.matmul(attn, V).type_as(context_in)
            if self.output_attention:
                attns = (torch.ones([B, H, L_V, L_V]) / L_V).type_as(attn).to(attn.device)
                attns[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :] = attn
                return (context_in, attns)
            else:
                return (context_in, None)

        def forward(self, queries, keys, values, attn_mask):
            B, L_Q, H, D = queries.shape
            _, L_K, _, _ = keys.shape
            queries = queries.transpose(2, 1)
            keys = keys.transpose(2, 1)
            values = values.transpose(2, 1)
            U_part = self.factor * np.ceil(np.log(L_K)).astype('int').item()  # c*ln(L_k)
            u = self.factor * np.ceil(np.log(L_Q)).astype('int').item()  # c*ln(L_q)
            U_part = U_part if U_part < L_K else L_K
            u = u if u < L_Q else L_Q
            scores_top, index = self._prob_QK(queries, keys, sample_k=U_part, n_top=u)
            # add scale factor
            scale = self.scale or 1. / sqrt(D)
            if scale is not None:
                scores_top = scores_top * scale
            # get the context
            context = self._get_initial_context(values, L_Q)
            # update the context with selected top_k queries
            context, attn = self._update_context(context, values, scores_top, index, L_Q, attn_mask)
            return context.transpose(2, 1).contiguous(), attn

    class AttentionLayer(nn.Module):
        def __init__(self, attention, d_model, n_heads, d_keys=None, d_values=None, mix=False):
            super(AttentionLayer, self).__init__()
            d_keys = d_keys or (d_model // n_heads)
            d_values = d_values or (d_model // n_heads)
            self.inner_attention = attention
            self.query_projection = nn.Linear(d_model, d_keys * n_heads)
            self.key_projection = nn.Linear(d_model, d_keys * n_heads)
            self.value_projection = nn.Linear(d_model, d_values * n_heads)
            self.out_projection = nn.Linear(d_values * n_heads, d_model)
            self.n_heads = n_heads
            self.mix = mix

        def forward(self, queries, keys, values, attn_mask):
            B, L, _ = queries.shape
            _, S, _ = keys.shape
            H = self.n_heads
            queries = self.query_projection(queries).view(B, L, H, -1)
            keys = self.key_projection(keys).view(B, S, H, -1)
            values = self.value_projection(values).view(B, S, H, -1)
            out, attn = self.inner_attention(queries, keys, values, attn_mask)
            if self.mix:
                out = out.transpose(2, 1).contiguous()
            out = out.view(B, L, -1)
            return self.out_projection(out), attn

    class PositionalEmbedding(nn.Module):
        def __init__(self, d_model, max_len=5000):
            super(PositionalEmbedding, self).__init__()
            # Compute the positional encodings once in log space.
            pe = torch.zeros(max_len, d_model).float()
            pe.require_grad = False
            position = torch.arange(0, max_len).float().unsqueeze(1)
            div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0)
            self.register_buffer('pe', pe)

        def forward(self, x):
            return self.pe[:, :x.size(1)]

    class TokenEmbedding(nn.Module):
        def __init__(self, c_in, d_model):
            super(TokenEmbedding, self).__init__()
            padding = 1 if torch.__version__ >= '1.5.0' else 2
            self.tokenConv = nn.Conv1d(in_channels=c_in, out_channels=d_model, kernel_size=3, padding=padding,
                                       padding_mode='circular')
            for m_ in self.modules():
                if isinstance(m_, nn.Conv1d):
                    nn.init.kaiming_normal_(m_.weight, mode='fan_in', nonlinearity='leaky_relu')

        def forward(self, x):
            x = self.tokenConv(x.permute(0, 2, 1)).transpose(1, 2)
            return x

    class FixedEmbedding(nn.Module):
        def __init__(self, c_in, d_model):
            super(FixedEmbedding, self).__init__()
            w = torch.zeros(c_in, d_model).float()
            w.require_grad = False
            position = torch.arange(0, c_in).float().unsqueeze(1)
            div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
            w[:, 0::2] = torch.sin(position * div_term)
            w[:, 1::2] = torch.cos(position * div_term)
            self.emb = nn.Embedding(c_in, d_model)
            self.emb.weight = nn.Parameter(w, requires_grad=False)

        def forward(self, x):
            return self.emb(x).detach()

    class TemporalEmbedding(nn.Module):
        def __init__(self, d_model, embed_type='fixed', freq='h'):
            super(TemporalEmbedding, self).__init__()
            minute_size = 4
            hour_size = 24
            weekday_size = 7
            day_size = 32
            month_size = 13
            Embed = FixedEmbedding if embed_type == 'fixed' else nn.Embedding
            if freq == 't':
                self.minute_embed = Embed(minute_size, d_model)
            self.hour_embed = Embed(hour_size, d_model)
            self.weekday_embed = Embed(weekday_size, d_model)
            self.day_embed = Embed(day_size, d_model)
            self.month_embed = Embed(month_size, d_model)

        def forward(self, x):
            x = x.long()
            minute_x = self.minute_embed(x[:, :, 4]) if hasattr(self, 'minute_embed') else 0.
            hour_x = self.hour_embed(x[:, :, 3])
            weekday_x = self.weekday_embed(x[:, :, 2])
            day_x = self.day_embed(x[:, :, 1])
            month_x = self.month_embed(x[:, :, 0])
            return hour_x + weekday_x + day_x + month_x + minute_x

    class DataEmbedding(nn.Module):
        def __init__(self, c_in, d_model, embed_type='fixed', freq='h', dropout=0.1):
            super(DataEmbedding, self).__init__()
            self.value_embedding = TokenEmbedding(c_in=c_in, d_model=d_model)
            self.position_embedding = PositionalEmbedding(d_model=d_model)
            self.temporal_embedding = TemporalEmbedding(d_model=d_model, embed_type=embed_type, freq=freq)
            self.dropout = nn.Dropout(p=dropout)

        def forward(self, x, x_mark):
            x = self.value_embedding(x) + self.position_embedding(x) + self.temporal_embedding(x_mark)
            return self.dropout(x)

    class ConvLayer(nn.Module):
        def __init__(self, c_in):
            super(ConvLayer, self).__init__()
            padding = 1 if torch.__version__ >= '1.5.0' else 2
            self.downConv = nn.Conv1d(in_channels=c_in, out_channels=c_in, kernel_size=3, padding=padding,
                                      padding_mode='circular')
            self.norm = nn.BatchNorm1d(c_in)
            self.activation = nn.ELU()
            self.maxPool = nn.MaxPool1d(kernel_size=3, stride=2, padding=1)

        def forward(self, x):
            x = self.downConv(x.permute(0, 2, 1))
            x = self.norm(x)
            x = self.activation(x)
            x = self.maxPool(x)
            x = x.transpose(1, 2)
            return x

    class EncoderLayer(nn.Module):
        def __init__(self, attention, d_model, d_ff=None, dropout=0.1, activation="relu"):
            super(EncoderLayer, self).__init__()
            d_ff = d_ff or 4 * d_model
            self.attention = attention
            self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1)
            self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1)
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)
            self.dropout = nn.Dropout(dropout)
            self.activation = F.relu if activation == "relu" else F.gelu

        def forward(self, x, attn_mask=None):
            new_x, attn = self.attention(x, x, x, attn_mask=attn_mask)
            x = x + self.dropout(new_x)
            y = x = self.norm1(x)
            y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
            y = self.dropout(self.conv2(y).transpose(-1, 1))
            return self.norm2(x + y), attn

    class Encoder(nn.Module):
        def __init__(self, attn_layers, conv_layers=None, norm_layer=None):
            super(Encoder, self).__init__()
            self.attn_layers = nn.ModuleList(attn_layers)
            self.conv_layers = nn.ModuleList(conv_layers) if conv_layers is not None else None
            self.norm = norm_layer

        def forward(self, x, attn_mask=None):
            attns = []
            if self.conv_layers is not None:
                for attn_layer, conv_layer in zip(self.attn_layers, self.conv_layers):
                    x, attn = attn_layer(x, attn_mask=attn_mask)
                    x = conv_layer(x)
                    attns.append(attn)
                x, attn = self.attn_layers[-1](x, attn_mask=attn_mask)
                attns.append(attn)
            else:
                for attn_layer in self.attn_layers:
                    x, attn = attn_layer(x, attn_mask=attn_mask)
                    attns.append(attn)
            if self.norm is not None:
                x = self.norm(x)
            return x, attns

    class DecoderLayer(nn.Module):
        def __init__(self, self_attention, cross_attention, d_model, d_ff=None, dropout=0.1, activation="relu"):
            super(DecoderLayer, self).__init__()
            d_ff = d_ff or 4 * d_model
            self.self_attention = self_attention
            self.cross_attention = cross_attention
            self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1)
            self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1)
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)
            self.norm3 = nn.LayerNorm(d_model)
            self.dropout = nn.Dropout(dropout)
            self.activation = F.relu if activation == "relu" else F.gelu

        def forward(self, x, cross, x_mask=None, cross_mask=None):
            x = x + self.dropout(self.self_attention(x, x, x, attn_mask=x_mask)[0])
            x = self.norm1(x)
            x = x + self.dropout(self.cross_attention(x, cross, cross, attn_mask=cross_mask)[0])
            y = x = self.norm2(x)
            y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
            y = self.dropout(self.conv2(y).transpose(-1, 1))
            return self.norm3(x + y)

    class Decoder(nn.Module):
        def __init__(self, layers, norm_layer=None):
            super(Decoder, self).__init__()
            self.layers = nn.ModuleList(layers)
            self.norm = norm_layer

        def forward(self, x, cross, x_mask=None, cross_mask=None):
            for layer in self.layers:
                x = layer(x, cross, x_mask=x_mask, cross_mask=cross_mask)
            if self.norm is not None:
                x = self.norm(x)
            return x

    class Informer(nn.Module):
        def __init__(self, enc_in, dec_in, c_out, seq_len, label_len, out_len, factor=5, d_model=512, n_heads=8,
                     e_layers=3, d_layers=2, d_ff=512, dropout=0.0, attn='prob', embed='fixed', freq='h',
                     activation='gelu', output_attention=False, distil=True, mix=True):
            super(Informer, self).__init__()
            self.pred_len = out_len
            self.attn = attn
            self.output_attention = output_attention
            # Encoding
            self.enc_embedding = DataEmbedding(enc_in, d_model, embed, freq, dropout)
            self.dec_embedding = DataEmbedding(dec_in, d_model, embed, freq, dropout)
            # Attention
            Attn = ProbAttention if attn == 'prob' else FullAttention
            # Encoder
            self.encoder = Encoder(
                [EncoderLayer(AttentionLayer(Attn(False, factor, attention_dropout=dropout,
                                                  output_attention=output_attention), d_model, n_heads, mix=False),
                              d_model, d_ff, dropout=dropout, activation=activation) for l in range(e_layers)],
                [ConvLayer(d_model) for l in range(e_layers - 1)] if distil else None,
                norm_layer=torch.nn.LayerNorm(d_model))
            # Decoder
            self.decoder = Decoder(
                [DecoderLayer(AttentionLayer(Attn(True, factor, attention_dropout=dropout, output_attention=False),
                                             d_model, n_heads, mix=mix),
                              AttentionLayer(FullAttention(False, factor, attention_dropout=dropout,
                                                           output_attention=False), d_model, n_heads, mix=False),
                              d_model, d_ff, dropout=dropout, activation=activation) for l in range(d_layers)],
                norm_layer=torch.nn.LayerNorm(d_model))
            self.projection = nn.Linear(d_model, c_out, bias=True)

        def forward(self, x_enc, x_mark_enc, x_dec, x_mark_dec, enc_self_mask=None, dec_self_mask=None,
                    dec_enc_mask=None):
            enc_out = self.enc_embedding(x_enc, x_mark_enc)
            enc_out, attns = self.encoder(enc_out, attn_mask=enc_self_mask)
            dec_out = self.dec_embedding(x_dec, x_mark_dec)
            dec_out = self.decoder(dec_out, enc_out, x_mask=dec_self_mask, cross_mask=dec_enc_mask)
            dec_out = self.projection(dec_out)
            if self.output_attention:
                return dec_out[:, -self.pred_len:, :], attns
            else:
                return dec_out[:, -self.pred_len:, :]  # [B, L, D]

    class args:
        seq_len, label_len, pred_len, learning_rate, padding, features, inverse, lradj = 8, 4, 4, 1e-3, 0, 'M', \
            False, 'type1'

    def adjust_learning_rate(optimizer, epoch, args):
        if args.lradj == 'type1':
            lr_adjust = {epoch: args.learning_rate * (0.5 ** ((epoch - 1) // 1))}
        if epoch in lr_adjust.keys():
            lr = lr_adjust[epoch]
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr

    model = Informer(enc_in=2, dec_in=2, c_out=2, seq_len=args.seq_len, label_len=args.label_len,
                     out_len=args.pred_len, factor=2, d_model=8, n_heads=2, e_layers=2, d_layers=1, d_ff=8)
    init = load(m, model, state)
    device = torch.device('cpu')

    def marks(n, length):
        return np.stack([rng.integers(1, 13, (n, length)), rng.integers(1, 32, (n, length)),
                         rng.integers(0, 7, (n, length)), rng.integers(0, 24, (n, length))], -1).astype(np.float32)

    series = normal(rng, 2, args.seq_len + args.pred_len, 2)
    loader = m.data.DataLoader(m.data.TensorDataset(
        torch.tensor(series[:, :args.seq_len]), torch.tensor(series[:, args.seq_len - args.label_len:]),
        torch.tensor(marks(2, args.seq_len)), torch.tensor(marks(2, args.label_len + args.pred_len))), batch_size=2)
    model_optim = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    criterion = nn.MSELoss()
    losses = []
    model.train()
    for epoch in range(1):
        for i, (batch_x, batch_y, batch_x_mark, batch_y_mark) in enumerate(loader):
            model_optim.zero_grad()
            batch_x = batch_x.float().to(device)
            batch_y = batch_y.float()
            batch_x_mark = batch_x_mark.float().to(device)
            batch_y_mark = batch_y_mark.float().to(device)
            # decoder input
            if args.padding == 0:
                dec_inp = torch.zeros([batch_y.shape[0], args.pred_len, batch_y.shape[-1]]).float()
            elif args.padding == 1:
                dec_inp = torch.ones([batch_y.shape[0], args.pred_len, batch_y.shape[-1]]).float()
            dec_inp = torch.cat([batch_y[:, :args.label_len, :], dec_inp], dim=1).float().to(device)
            outputs = model(batch_x, batch_x_mark, dec_inp, batch_y_mark)
            f_dim = -1 if args.features == 'MS' else 0
            batch_y = batch_y[:, -args.pred_len:, f_dim:].to(device)
            loss = criterion(outputs, batch_y)
            loss.backward()
            model_optim.step()
            losses.append(loss.item())
        adjust_learning_rate(model_optim, epoch + 1, args)
    losses.append(model_optim.param_groups[0]['lr'])
    # each key projection's bias (softmax and the sparsity measure ignore it) and what a BatchNorm follows (the first
    # encoder layer's norm2, the distilling conv's bias) have gradients of rounding alone, which Adam normalises
    rounding_alone = ('key_projection.bias', 'attn_layers.0.norm2.bias', 'downConv.bias')
    return init, losses + summary(p for n, p in model.named_parameters() if not n.endswith(rounding_alone))


def test_informer():
    compare(informer, replay={})


# (m) laiguokun/LSTNet's models/LSTNet.py, utils.py, Optim.py and main.py: Data_utility (numpy float64 series
# normalised by each column's max, _batchify into torch.zeros filled by X[i, :, :] = torch.from_numpy(...), scale as
# torch.from_numpy(...).float(), rse by x.std() * np.sqrt(...), rae by torch.mean(torch.abs(...)), get_batches over
# torch.randperm or torch.LongTensor(range(n)) yielding Variables); the model's Conv2d of kernel (Ck, m) over
# x.view(-1, 1, P, m), squeeze(c, 3), GRU over permute(2, 0, 1).contiguous(), the skip-GRU's slicing by int(-pt *
# skip) of a float pt and its view/permute/view, the highway over x[:, -hw:, :], the output F.sigmoid; Optim's own
# gradient norm by math.pow(param.grad.data.norm(), 2) and grad.data.mul_(shrinkage) over list(params); criterion
# nn.MSELoss(size_average=False) and the L1 one for evaluation; evaluate's predictions gathered by torch.cat from
# None, scale.expand, and the correlation in numpy with index = (sigma_g != 0). torch replays tnet's randperm draws
def lstnet(m, state=None, replay=None):
    import warnings
    torch, nn, F = m.torch, m.nn, m.F
    optim = m.optim
    Variable = torch.autograd.Variable
    torch.manual_seed(54321)
    counter = itertools.count()

    def draw(t):
        return replayed(m, replay, next(counter), t)

    def normal_std(x):
        return x.std() * np.sqrt((len(x) - 1.) / (len(x)))

    class Data_utility(object):
        # train and valid is the ratio of training set and validation set. test = 1 - train - valid
        def __init__(self, rawdat, train, valid, cuda, horizon, window, normalize=2):
            self.cuda = cuda
            self.P = window
            self.h = horizon
            self.rawdat = rawdat
            self.dat = np.zeros(self.rawdat.shape)
            self.n, self.m = self.dat.shape
            self.normalize = 2
            self.scale = np.ones(self.m)
            self._normalized(normalize)
            self._split(int(train * self.n), int((train + valid) * self.n), self.n)
            self.scale = torch.from_numpy(self.scale).float()
            tmp = self.test[1] * self.scale.expand(self.test[1].size(0), self.m)
            if self.cuda:
                self.scale = self.scale.cuda()
                self.scale = Variable(self.scale)
            self.rse = normal_std(tmp)
            self.rae = torch.mean(torch.abs(tmp - torch.mean(tmp)))

        def _normalized(self, normalize):
            # normalized by the maximum value of each row(sensor).
            if (normalize == 2):
                for i in range(self.m):
                    self.scale[i] = np.max(np.abs(self.rawdat[:, i]))
                    self.dat[:, i] = self.rawdat[:, i] / np.max(np.abs(self.rawdat[:, i]))

        def _split(self, train, valid, test):
            train_set = range(self.P + self.h - 1, train)
            valid_set = range(train, valid)
            test_set = range(valid, self.n)
            self.train = self._batchify(train_set, self.h)
            self.valid = self._batchify(valid_set, self.h)
            self.test = self._batchify(test_set, self.h)

        def _batchify(self, idx_set, horizon):
            n = len(idx_set)
            X = torch.zeros((n, self.P, self.m))
            Y = torch.zeros((n, self.m))
            for i in range(n):
                end = idx_set[i] - self.h + 1
                start = end - self.P
                X[i, :, :] = torch.from_numpy(self.dat[start:end, :])
                Y[i, :] = torch.from_numpy(self.dat[idx_set[i], :])
            return [X, Y]

        def get_batches(self, inputs, targets, batch_size, shuffle=True):
            length = len(inputs)
            if shuffle:
                index = draw(torch.randperm(length))
            else:
                index = torch.LongTensor(range(length))
            start_idx = 0
            while (start_idx < length):
                end_idx = min(length, start_idx + batch_size)
                excerpt = index[start_idx:end_idx]
                X = inputs[excerpt]
                Y = targets[excerpt]
                if (self.cuda):
                    X = X.cuda()
                    Y = Y.cuda()
                yield Variable(X), Variable(Y)
                start_idx += batch_size

    class Model(nn.Module):
        def __init__(self, args, data):
            super(Model, self).__init__()
            self.use_cuda = args.cuda
            self.P = args.window
            self.m = data.m
            self.hidR = args.hidRNN
            self.hidC = args.hidCNN
            self.hidS = args.hidSkip
            self.Ck = args.CNN_kernel
            self.skip = args.skip
            self.pt = (self.P - self.Ck) / self.skip
            self.hw = args.highway_window
            self.conv1 = nn.Conv2d(1, self.hidC, kernel_size=(self.Ck, self.m))
            self.GRU1 = nn.GRU(self.hidC, self.hidR)
            self.dropout = nn.Dropout(p=args.dropout)
            if (self.skip > 0):
                self.GRUskip = nn.GRU(self.hidC, self.hidS)
                self.linear1 = nn.Linear(self.hidR + self.skip * self.hidS, self.m)
            else:
                self.linear1 = nn.Linear(self.hidR, self.m)
            if (self.hw > 0):
                self.highway = nn.Linear(self.hw, 1)
            self.output = None
            if (args.output_fun == 'sigmoid'):
                self.output = F.sigmoid
            if (args.output_fun == 'tanh'):
                self.output = F.tanh

        def forward(self, x):
            batch_size = x.size(0)
            # CNN
            c = x.view(-1, 1, self.P, self.m)
            c = F.relu(self.conv1(c))
            c = self.dropout(c)
            c = torch.squeeze(c, 3)
            # RNN
            r = c.permute(2, 0, 1).contiguous()
            _, r = self.GRU1(r)
            r = self.dropout(torch.squeeze(r, 0))
            # skip-rnn
            if (self.skip > 0):
                s = c[:, :, int(-self.pt * self.skip):].contiguous()
                s = s.view(batch_size, self.hidC, int(self.pt), self.skip)
                s = s.permute(2, 0, 3, 1).contiguous()
                s = s.view(int(self.pt), batch_size * self.skip, self.hidC)
                _, s = self.GRUskip(s)
                s = s.view(batch_size, self.skip * self.hidS)
                s = self.dropout(s)
                r = torch.cat((r, s), 1)
            res = self.linear1(r)
            # highway
            if (self.hw > 0):
                z = x[:, -self.hw:, :]
                z = z.permute(0, 2, 1).contiguous().view(-1, self.hw)
                z = self.highway(z)
                z = z.view(-1, self.m)
                res = res + z
            if (self.output):
                res = self.output(res)
            return res

    class Optim(object):
        def _makeOptimizer(self):
            if self.method == 'sgd':
                self.optimizer = optim.SGD(self.params, lr=self.lr)
            elif self.method == 'adam':
                self.optimizer = optim.Adam(self.params, lr=self.lr)
            else:
                raise RuntimeError("Invalid optim method: " + self.method)

        def __init__(self, params, method, lr, max_grad_norm, lr_decay=1, start_decay_at=None):
            self.params = list(params)  # careful: params may be a generator
            self.last_ppl = None
            self.lr = lr
            self.max_grad_norm = max_grad_norm
            self.method = method
            self.lr_decay = lr_decay
            self.start_decay_at = start_decay_at
            self.start_decay = False
            self._makeOptimizer()

        def step(self):
            # Compute gradients norm.
            grad_norm = 0
            for param in self.params:
                grad_norm += math.pow(param.grad.data.norm(), 2)
            grad_norm = math.sqrt(grad_norm)
            if grad_norm > 0:
                shrinkage = self.max_grad_norm / grad_norm
            else:
                shrinkage = 1.
            for param in self.params:
                if shrinkage < 1:
                    param.grad.data.mul_(shrinkage)
            self.optimizer.step()
            return grad_norm

    def evaluate(data, X, Y, model, evaluateL2, evaluateL1, batch_size):
        model.eval()
        total_loss = 0
        total_loss_l1 = 0
        n_samples = 0
        predict = None
        test = None
        for X, Y in data.get_batches(X, Y, batch_size, False):
            output = model(X)
            if predict is None:
                predict = output
                test = Y
            else:
                predict = torch.cat((predict, output))
                test = torch.cat((test, Y))
            scale = data.scale.expand(output.size(0), data.m)
            total_loss += evaluateL2(output * scale, Y * scale).item()
            total_loss_l1 += evaluateL1(output * scale, Y * scale).item()
            n_samples += (output.size(0) * data.m)
        rse = math.sqrt(total_loss / n_samples) / data.rse
        rae = (total_loss_l1 / n_samples) / data.rae
        predict = predict.data.cpu().numpy()
        Ytest = test.data.cpu().numpy()
        sigma_p = (predict).std(axis=0)
        sigma_g = (Ytest).std(axis=0)
        mean_p = predict.mean(axis=0)
        mean_g = Ytest.mean(axis=0)
        index = (sigma_g != 0)
        correlation = ((predict - mean_p) * (Ytest - mean_g)).mean(axis=0) / (sigma_p * sigma_g)
        correlation = (correlation[index]).mean()
        return rse, rae, correlation

    def train(data, X, Y, model, criterion, optim, batch_size):
        model.train()
        total_loss = 0
        n_samples = 0
        for X, Y in data.get_batches(X, Y, batch_size, True):
            model.zero_grad()
            output = model(X)
            scale = data.scale.expand(output.size(0), data.m)
            loss = criterion(output * scale, Y * scale)
            loss.backward()
            optim.step()
            total_loss += loss.item()
            n_samples += (output.size(0) * data.m)
        return total_loss / n_samples

    class args:
        cuda, window, horizon, hidRNN, hidCNN, hidSkip, CNN_kernel, skip, highway_window = False, 5, 1, 4, 4, 2, 3, 2, 2
        dropout, output_fun, optim, lr, clip, batch_size, L1Loss = 0.0, 'sigmoid', 'adam', 0.01, 10., 4, False

    rawdat = np.abs(np.random.default_rng(0).standard_normal((12, 3))) + 0.1
    Data = Data_utility(rawdat, 0.6, 0.2, args.cuda, args.horizon, args.window)
    model = Model(args, Data)
    init = load(m, model, state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # size_average's deprecation
        if args.L1Loss:
            criterion = nn.L1Loss(size_average=False)
        else:
            criterion = nn.MSELoss(size_average=False)
        evaluateL2 = nn.MSELoss(size_average=False)
        evaluateL1 = nn.L1Loss(size_average=False)
    optimizer = Optim(model.parameters(), args.optim, args.lr, args.clip)
    train_loss = train(Data, Data.train[0], Data.train[1], model, criterion, optimizer, args.batch_size)
    val_loss, val_rae, val_corr = evaluate(Data, Data.valid[0], Data.valid[1], model, evaluateL2, evaluateL1,
                                           args.batch_size)
    return init, [train_loss, float(val_loss), float(val_rae), float(val_corr)] + summary(model.parameters())


def test_lstnet():
    compare(lstnet, replay={})


# (n) facebookresearch/fairseq's wav2vec2 pretraining as models/wav2vec/wav2vec2.py, modules/gumbel_vector_quantizer.py,
# data/data_utils.py and criterions/wav2vec_criterion.py write it, reduced: ConvFeatureExtractionModel's "default"
# mode (Conv1d without bias, a GroupNorm of one channel per group on the first layer, GELU), features_pen by
# .float().pow(2).mean(), LayerNorm after transpose(1, 2), unmasked_features by clone(), post_extract_proj,
# compute_mask_indices in numpy (np.random.choice, min_len across the batch), apply_mask's x[mask_indices] = mask_emb
# (a Parameter of torch.FloatTensor(dim).uniform_() written through a boolean mask), the positional Conv1d under
# weight_norm(name="weight", dim=2) with SamePad's crop, one nn.TransformerEncoderLayer, GumbelVectorQuantizer (hard
# codes by new_zeros(...).scatter_(-1, k.view(-1, 1), 1.0), code and prob perplexities by exp(-sum(p * log(p +
# 1e-7))), vars.repeat and x.unsqueeze(-1) * vars summed), sample_negatives (buffered_arange by resize_ and
# torch.arange(max, out=buf), torch.randint(low=0, high=high - 1, size=...), neg_idxs[neg_idxs >= tszs] += 1, y[neg_idxs
# .view(-1)] and permute), compute_preds (neg_is_pos by (y == negatives).all(-1), torch.cosine_similarity over the
# targets stacked by torch.cat, logits[1:][neg_is_pos] = float("-inf") where any), and the criterion (logits by
# transpose(0, 2).reshape, targets x.new_zeros(..., dtype=torch.long), cross_entropy with reduction="sum", the
# diversity and feature penalties scaled by the sample size), Adam. The quantizer runs in eval mode (its hard codes):
# F.gumbel_softmax's draws in training are tnet's own; torch replays tnet's randint draws
def wav2vec2(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(1)
    np.random.seed(1)
    rng = np.random.default_rng(1)
    counter = itertools.count()

    def draw(t):
        return replayed(m, replay, next(counter), t)

    class Fp32GroupNorm(nn.GroupNorm):
        def forward(self, input):
            output = F.group_norm(input.float(), self.num_groups, self.weight.float() if self.weight is not None
                                  else None, self.bias.float() if self.bias is not None else None, self.eps)
            return output.type_as(input)

    class TransposeLast(nn.Module):
        def __init__(self, deconstruct_idx=None):
            super().__init__()
            self.deconstruct_idx = deconstruct_idx

        def forward(self, x):
            if self.deconstruct_idx is not None:
                x = x[self.deconstruct_idx]
            return x.transpose(-2, -1)

    class ConvFeatureExtractionModel(nn.Module):
        def __init__(self, conv_layers, dropout=0.0, mode="default", conv_bias=False):
            super().__init__()

            def block(n_in, n_out, k, stride, is_layer_norm=False, is_group_norm=False, conv_bias=False):
                def make_conv():
                    conv = nn.Conv1d(n_in, n_out, k, stride=stride, bias=conv_bias)
                    nn.init.kaiming_normal_(conv.weight)
                    return conv
                if is_group_norm:
                    return nn.Sequential(make_conv(), nn.Dropout(p=dropout), Fp32GroupNorm(n_out, n_out, affine=True),
                                         nn.GELU())
                else:
                    return nn.Sequential(make_conv(), nn.Dropout(p=dropout), nn.GELU())
            in_d = 1
            self.conv_layers = nn.ModuleList()
            for i, cl in enumerate(conv_layers):
                assert len(cl) == 3, "invalid conv definition: " + str(cl)
                (dim, k, stride) = cl
                self.conv_layers.append(block(in_d, dim, k, stride, is_group_norm=mode == "default" and i == 0,
                                              conv_bias=conv_bias))
                in_d = dim

        def forward(self, x):
            # BxT -> BxCxT
            x = x.unsqueeze(1)
            for conv in self.conv_layers:
                x = conv(x)
            return x

    class SamePad(nn.Module):
        def __init__(self, kernel_size, causal=False):
            super().__init__()
            self.remove = 1 if kernel_size % 2 == 0 else 0

        def forward(self, x):
            if self.remove > 0:
                x = x[:, :, : -self.remove]
            return x

    class GumbelVectorQuantizer(nn.Module):
        def __init__(self, dim, num_vars, temp, groups, combine_groups, vq_dim, time_first, weight_proj_depth=1,
                     weight_proj_factor=1):
            super().__init__()
            self.groups = groups
            self.combine_groups = combine_groups
            self.input_dim = dim
            self.num_vars = num_vars
            self.time_first = time_first
            assert (vq_dim % groups == 0), f"dim {vq_dim} must be divisible by groups {groups} for concatenation"
            var_dim = vq_dim // groups
            num_groups = groups if not combine_groups else 1
            self.vars = nn.Parameter(torch.FloatTensor(1, num_groups * num_vars, var_dim))
            nn.init.uniform_(self.vars)
            self.weight_proj = nn.Linear(self.input_dim, groups * num_vars)
            nn.init.normal_(self.weight_proj.weight, mean=0, std=1)
            nn.init.zeros_(self.weight_proj.bias)
            if isinstance(temp, str):
                import ast
                temp = ast.literal_eval(temp)
            assert len(temp) == 3, f"{temp}, {len(temp)}"
            self.max_temp, self.min_temp, self.temp_decay = temp
            self.curr_temp = self.max_temp
            self.codebook_indices = None

        def forward(self, x, produce_targets=False):
            result = {"num_vars": self.num_vars * self.groups}
            if not self.time_first:
                x = x.transpose(1, 2)
            bsz, tsz, fsz = x.shape
            x = x.reshape(-1, fsz)
            x = self.weight_proj(x)
            x = x.view(bsz * tsz * self.groups, -1)
            _, k = x.max(-1)
            hard_x = (x.new_zeros(*x.shape).scatter_(-1, k.view(-1, 1), 1.0).view(bsz * tsz, self.groups, -1))
            hard_probs = torch.mean(hard_x.float(), dim=0)
            result["code_perplexity"] = torch.exp(-torch.sum(hard_probs * torch.log(hard_probs + 1e-7), dim=-1)).sum()
            avg_probs = torch.softmax(x.view(bsz * tsz, self.groups, -1).float(), dim=-1).mean(dim=0)
            result["prob_perplexity"] = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-7), dim=-1)).sum()
            result["temp"] = self.curr_temp
            if self.training:
                x = F.gumbel_softmax(x.float(), tau=self.curr_temp, hard=True).type_as(x)
            else:
                x = hard_x
            x = x.view(bsz * tsz, -1)
            vars = self.vars
            if self.combine_groups:
                vars = vars.repeat(1, self.groups, 1)
            if produce_targets:
                result["targets"] = (x.view(bsz * tsz * self.groups, -1).argmax(dim=-1).view(bsz, tsz, self.groups)
                                     .detach())
            x = x.unsqueeze(-1) * vars
            x = x.view(bsz * tsz, self.groups, self.num_vars, -1)
            x = x.sum(-2)
            x = x.view(bsz, tsz, -1)
            if not self.time_first:
                x = x.transpose(1, 2)  # BTC -> BCT
            result["x"] = x
            return result

    def compute_mask_indices(shape, padding_mask, mask_prob, mask_length, mask_type="static", mask_other=0.0,
                             min_masks=0, no_overlap=False, min_space=0):
        bsz, all_sz = shape
        mask = np.full((bsz, all_sz), False)
        all_num_mask = int(
            # add a random number for probabilistic rounding
            mask_prob * all_sz / float(mask_length) + np.random.rand())
        all_num_mask = max(min_masks, all_num_mask)
        mask_idcs = []
        for i in range(bsz):
            sz = all_sz
            num_mask = all_num_mask
            lengths = np.full(num_mask, mask_length)
            if sum(lengths) == 0:
                lengths[0] = min(mask_length, sz - 1)
            min_len = min(lengths)
            if sz - min_len <= num_mask:
                min_len = sz - num_mask - 1
            mask_idc = np.random.choice(sz - min_len, num_mask, replace=False)
            mask_idc = np.asarray([mask_idc[j] + offset for j in range(len(mask_idc)) for offset in range(lengths[j])])
            mask_idcs.append(np.unique(mask_idc[mask_idc < sz]))
        min_len = min([len(m_) for m_ in mask_idcs])
        for i, mask_idc in enumerate(mask_idcs):
            if len(mask_idc) > min_len:
                mask_idc = np.random.choice(mask_idc, min_len, replace=False)
            mask[i, mask_idc] = True
        return mask

    class Wav2Vec2Model(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.cfg = cfg
            feature_enc_layers = cfg.conv_feature_layers
            self.embed = feature_enc_layers[-1][0]
            self.feature_extractor = ConvFeatureExtractionModel(conv_layers=feature_enc_layers, dropout=0.0,
                                                                mode="default", conv_bias=False)
            self.post_extract_proj = nn.Linear(self.embed, cfg.encoder_embed_dim)
            self.mask_prob, self.mask_length = cfg.mask_prob, cfg.mask_length
            self.n_negatives = cfg.num_negatives
            self.cross_sample_negatives = 0
            self.logit_temp = cfg.logit_temp
            final_dim = cfg.final_dim
            self.quantizer = GumbelVectorQuantizer(dim=self.embed, num_vars=cfg.latent_vars, temp=cfg.latent_temp,
                                                   groups=cfg.latent_groups, combine_groups=False, vq_dim=final_dim,
                                                   time_first=True)
            self.project_q = nn.Linear(final_dim, final_dim)
            self.mask_emb = nn.Parameter(torch.FloatTensor(cfg.encoder_embed_dim).uniform_())
            k = cfg.conv_pos
            self.pos_conv = nn.Conv1d(cfg.encoder_embed_dim, cfg.encoder_embed_dim, kernel_size=k, padding=k // 2,
                                      groups=cfg.conv_pos_groups)
            std = math.sqrt((4 * (1.0 - 0.0)) / (k * cfg.encoder_embed_dim))
            nn.init.normal_(self.pos_conv.weight, mean=0, std=std)
            nn.init.constant_(self.pos_conv.bias, 0)
            self.pos_conv = nn.utils.weight_norm(self.pos_conv, name="weight", dim=2)
            self.pos_conv = nn.Sequential(self.pos_conv, SamePad(k), nn.GELU())
            self.encoder = nn.TransformerEncoderLayer(cfg.encoder_embed_dim, 2, dim_feedforward=16, dropout=0.0,
                                                      activation="gelu", batch_first=True)
            self.layer_norm = nn.LayerNorm(self.embed)
            self.final_proj = nn.Linear(cfg.encoder_embed_dim, final_dim)

        def apply_mask(self, x, padding_mask):
            B, T, C = x.shape
            mask_indices = compute_mask_indices((B, T), padding_mask, self.mask_prob, self.mask_length, min_masks=2)
            mask_indices = torch.from_numpy(mask_indices).to(x.device)
            x[mask_indices] = self.mask_emb
            return x, mask_indices

        def sample_negatives(self, y, num, padding_count=None):
            bsz, tsz, fsz = y.shape
            y = y.view(-1, fsz)  # BTC => (BxT)C
            high = tsz - (padding_count or 0)
            with torch.no_grad():
                assert high > 1, f"{bsz, tsz, fsz}"
                tszs = (buffered_arange(num).unsqueeze(-1).expand(-1, self.n_negatives).flatten())
                neg_idxs = draw(torch.randint(low=0, high=high - 1, size=(bsz, self.n_negatives * num)))
                neg_idxs[neg_idxs >= tszs] += 1
            neg_idxs = neg_idxs + (torch.arange(bsz).unsqueeze(1) * high)
            negs = y[neg_idxs.view(-1)]
            negs = negs.view(bsz, num, self.n_negatives + self.cross_sample_negatives, fsz).permute(2, 0, 1, 3)
            return negs, neg_idxs

        def compute_preds(self, x, y, negatives):
            neg_is_pos = (y == negatives).all(-1)
            y = y.unsqueeze(0)
            targets = torch.cat([y, negatives], dim=0)
            logits = torch.cosine_similarity(x.float(), targets.float(), dim=-1).type_as(x)
            logits = logits / self.logit_temp
            if neg_is_pos.any():
                logits[1:][neg_is_pos] = float("-inf")
            return logits

        def forward(self, source, padding_mask=None, mask=True):
            features = self.feature_extractor(source)
            features_pen = features.float().pow(2).mean()
            features = features.transpose(1, 2)
            features = self.layer_norm(features)
            unmasked_features = features.clone()
            features = self.post_extract_proj(features)
            x, mask_indices = self.apply_mask(features, padding_mask)
            y = unmasked_features[mask_indices].view(unmasked_features.size(0), -1, unmasked_features.size(-1))
            x_conv = self.pos_conv(x.transpose(1, 2))
            x = x + x_conv.transpose(1, 2)
            x = self.encoder(x)
            q = self.quantizer(y, produce_targets=False)
            y = q["x"]
            num_vars = q["num_vars"]
            code_ppl = q["code_perplexity"]
            prob_ppl = q["prob_perplexity"]
            y = self.project_q(y)
            negs, _ = self.sample_negatives(y, y.size(1))
            x = x[mask_indices].view(x.size(0), -1, x.size(-1))
            x = self.final_proj(x)
            x = self.compute_preds(x, y, negs)
            return {"x": x, "padding_mask": padding_mask, "features_pen": features_pen, "prob_perplexity": prob_ppl,
                    "code_perplexity": code_ppl, "num_vars": num_vars}

        def get_logits(self, net_output):
            logits = net_output["x"]
            logits = logits.transpose(0, 2)
            logits = logits.reshape(-1, logits.size(-1))
            return logits

        def get_targets(self, sample, net_output, expand_steps=True):
            x = net_output["x"]
            return x.new_zeros(x.size(1) * x.size(2), dtype=torch.long)

        def get_extra_losses(self, net_output):
            pen = []
            pen.append((net_output["num_vars"] - net_output["prob_perplexity"]) / net_output["num_vars"])
            pen.append(net_output["features_pen"])
            return pen

    def buffered_arange(max):
        if not hasattr(buffered_arange, "buf"):
            buffered_arange.buf = torch.LongTensor()
        if max > buffered_arange.buf.numel():
            buffered_arange.buf.resize_(max)
            torch.arange(max, out=buffered_arange.buf)
        return buffered_arange.buf[:max]

    class cfg:
        conv_feature_layers, encoder_embed_dim, final_dim, mask_prob, mask_length = [(8, 4, 2), (8, 3, 2)], 8, 4, \
            0.5, 2
        num_negatives, logit_temp, latent_vars, latent_temp, latent_groups, conv_pos, conv_pos_groups = 3, 0.1, 2, \
            (2, 0.5, 0.999995), 2, 4, 2

    model = Wav2Vec2Model(cfg)
    init = load(m, model, state)
    model.quantizer.eval()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    loss_weights = [0.1, 10]
    source = torch.tensor(normal(rng, 2, 40))
    optimizer.zero_grad()
    net_output = model(source)
    logits = model.get_logits(net_output).float()
    target = model.get_targets(None, net_output)
    loss = F.cross_entropy(logits, target, reduction="sum")
    sample_size = target.numel()
    extra_losses = model.get_extra_losses(net_output)
    for p, coef in zip(extra_losses, loss_weights):
        if coef != 0 and p is not None:
            p = coef * p.float() * sample_size
            loss += p
    loss.backward()
    optimizer.step()
    correct = (logits.argmax(-1) == 0).sum().item()
    losses = [loss.item(), sample_size, correct, net_output["prob_perplexity"].item(),
              net_output["code_perplexity"].item(), net_output["features_pen"].item()]
    # the attention's in_proj_bias holds the keys' bias, whose gradient is rounding alone (softmax ignores it)
    return init, losses + summary(p for n, p in model.named_parameters() if n != "encoder.self_attn.in_proj_bias")


def test_wav2vec2():
    compare(wav2vec2, replay={})
