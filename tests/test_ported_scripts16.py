"""Public research code the earlier files leave out, written from memory in its repositories' styles and ported by its
imports alone, as test_ported_scripts.py: rosinality's Glow (ActNorm's data-dependent init behind a uint8 buffer,
the LU-decomposed invertible 1x1 convolution (scipy's LU, here numpy's), affine couplings with zero-initialised convolutions,
squeeze and split with a learned prior); mamba-minimal's selective scan (a depthwise causal Conv1d, softplus, split
by split_size=, einsum of three operands, tied embeddings); efficient-kan's KANLinear (B-spline bases, curve2coeff
by a batched torch.linalg.lstsq, update_grid with torch.concatenate, the regulariser); a BiLSTM-CRF tagger over
pytorch-crf (scores by advanced indexing, the normaliser by logsumexp and a bool mask, Viterbi decoding); DINO
(MultiCropWrapper's unique_consecutive and list slices by 0-d tensors, a weight-normed last layer with a frozen g,
the centred teacher, numpy schedules as lr and weight decay, clip_gradients, cancel_gradients_last_layer, the
momentum teacher); OpenAI's TopK sparse autoencoder (scatter_ of the top-k, unit-norm decoder and its gradient
projection, the AuxK loss on dead latents, a geometric-median pre-bias); the growing neural cellular automaton
(Sobel perception by grouped conv2d on a transposed NHWC state, alive masks by max pooling, the sample pool and
normalised gradients); ndrplz's ConvLSTM; sgrvinod's Show, Attend and Tell (LSTMCell over shrinking batches,
pack_padded_sequence of scores and targets, the doubly stochastic attention penalty, beam search); and DeepSurv as
pycox writes it (the Cox partial likelihood over durations sorted descending, a log-cumsum-exp by method chains,
Harrell's C by broadcast comparisons). Each runs in tnet, then in torch from tnet's initial weights (state_dict
through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy draws what a script draws;
shapes are tiny and runs 1-2 steps, few launches: the interpreter pays for each (CycleGAN's generators and
discriminators ported as they are, but took 26 s on the CPU, and are left out)."""
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def lu(a):
    """scipy.linalg.lu's (P, L, U), a = P @ L @ U, by partial pivoting in numpy: the scripts' scipy call, which
    is no dependency of tnet's tests."""
    n = a.shape[0]
    u, low, perm = a.copy(), np.eye(n, dtype=a.dtype), np.arange(n)
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        u[[k, p]], perm[[k, p]], low[[k, p], :k] = u[[p, k]], perm[[p, k]], low[[p, k], :k]
        low[k + 1:, k] = u[k + 1:, k] / u[k, k]
        u[k + 1:] -= low[k + 1:, k:k + 1] * u[k]
    p_mat = np.zeros_like(a)
    p_mat[perm, np.arange(n)] = 1
    return p_mat, low, np.triu(u)


# (a) rosinality/glow-pytorch's model.py and train.py: ActNorm initialised from the first batch's statistics
# behind a uint8 "initialized" buffer, InvConv2dLU (scipy's QR and LU at init, numpy's here; P, L, U and log|s| with their
# masks as buffers and parameters), ZeroConv2d padded with ones, AffineCoupling with a sigmoid scale, Block's
# squeeze by view/permute and its split with a learned prior, gaussian_log_p, and calc_loss in bits per dimension;
# the first batch runs under no_grad to initialise ActNorm, as train.py's first iteration does (without it, the
# step's batch would be the one ActNorm centred, and the gradients of its loc exactly zero but for rounding)
def glow(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from math import log, pi

    logabs = lambda x: torch.log(torch.abs(x))  # noqa: E731

    class ActNorm(nn.Module):
        def __init__(self, in_channel, logdet=True):
            super().__init__()
            self.loc = nn.Parameter(torch.zeros(1, in_channel, 1, 1))
            self.scale = nn.Parameter(torch.ones(1, in_channel, 1, 1))
            self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))
            self.logdet = logdet

        def initialize(self, input):
            with torch.no_grad():
                flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
                mean = (flatten.mean(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3))
                std = (flatten.std(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3))
                self.loc.data.copy_(-mean)
                self.scale.data.copy_(1 / (std + 1e-6))

        def forward(self, input):
            _, _, height, width = input.shape
            if self.initialized.item() == 0:
                self.initialize(input)
                self.initialized.fill_(1)
            log_abs = logabs(self.scale)
            logdet = height * width * torch.sum(log_abs)
            if self.logdet:
                return self.scale * (input + self.loc), logdet
            else:
                return self.scale * (input + self.loc)

    class InvConv2dLU(nn.Module):
        def __init__(self, in_channel):
            super().__init__()
            weight = np_rng.standard_normal((in_channel, in_channel))
            q, _ = np.linalg.qr(weight)
            w_p, w_l, w_u = lu(q.astype(np.float32))
            w_s = np.diag(w_u)
            w_u = np.triu(w_u, 1)
            u_mask = np.triu(np.ones_like(w_u), 1)
            l_mask = u_mask.T
            w_p = torch.from_numpy(w_p)
            w_l = torch.from_numpy(w_l)
            w_s = torch.from_numpy(w_s)
            w_u = torch.from_numpy(w_u)
            self.register_buffer("w_p", w_p)
            self.register_buffer("u_mask", torch.from_numpy(u_mask))
            self.register_buffer("l_mask", torch.from_numpy(l_mask))
            self.register_buffer("s_sign", torch.sign(w_s))
            self.register_buffer("l_eye", torch.eye(l_mask.shape[0]))
            self.w_l = nn.Parameter(w_l)
            self.w_s = nn.Parameter(logabs(w_s))
            self.w_u = nn.Parameter(w_u)

        def forward(self, input):
            _, _, height, width = input.shape
            weight = self.calc_weight()
            out = F.conv2d(input, weight)
            logdet = height * width * torch.sum(self.w_s)
            return out, logdet

        def calc_weight(self):
            weight = (
                self.w_p
                @ (self.w_l * self.l_mask + self.l_eye)
                @ ((self.w_u * self.u_mask) + torch.diag(self.s_sign * torch.exp(self.w_s)))
            )
            return weight.unsqueeze(2).unsqueeze(3)

    class ZeroConv2d(nn.Module):
        def __init__(self, in_channel, out_channel, padding=1):
            super().__init__()
            self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
            self.conv.weight.data.zero_()
            self.conv.bias.data.zero_()
            self.scale = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

        def forward(self, input):
            out = F.pad(input, [1, 1, 1, 1], value=1)
            out = self.conv(out)
            out = out * torch.exp(self.scale * 3)
            return out

    class AffineCoupling(nn.Module):
        def __init__(self, in_channel, filter_size=512, affine=True):
            super().__init__()
            self.affine = affine
            self.net = nn.Sequential(
                nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(filter_size, filter_size, 1),
                nn.ReLU(inplace=True),
                ZeroConv2d(filter_size, in_channel if self.affine else in_channel // 2),
            )
            self.net[0].weight.data.normal_(0, 0.05)
            self.net[0].bias.data.zero_()
            self.net[2].weight.data.normal_(0, 0.05)
            self.net[2].bias.data.zero_()

        def forward(self, input):
            in_a, in_b = input.chunk(2, 1)
            if self.affine:
                log_s, t = self.net(in_a).chunk(2, 1)
                s = F.sigmoid(log_s + 2)
                out_b = (in_b + t) * s
                logdet = torch.sum(torch.log(s).view(input.shape[0], -1), 1)
            else:
                net_out = self.net(in_a)
                out_b = in_b + net_out
                logdet = None
            return torch.cat([in_a, out_b], 1), logdet

    class Flow(nn.Module):
        def __init__(self, in_channel, affine=True, conv_lu=True):
            super().__init__()
            self.actnorm = ActNorm(in_channel)
            self.invconv = InvConv2dLU(in_channel)
            self.coupling = AffineCoupling(in_channel, filter_size=4, affine=affine)

        def forward(self, input):
            out, logdet = self.actnorm(input)
            out, det1 = self.invconv(out)
            out, det2 = self.coupling(out)
            logdet = logdet + det1
            if det2 is not None:
                logdet = logdet + det2
            return out, logdet

    def gaussian_log_p(x, mean, log_sd):
        return -0.5 * log(2 * pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)

    class Block(nn.Module):
        def __init__(self, in_channel, n_flow, split=True, affine=True, conv_lu=True):
            super().__init__()
            squeeze_dim = in_channel * 4
            self.flows = nn.ModuleList()
            for i in range(n_flow):
                self.flows.append(Flow(squeeze_dim, affine=affine, conv_lu=conv_lu))
            self.split = split
            if split:
                self.prior = ZeroConv2d(in_channel * 2, in_channel * 4)
            else:
                self.prior = ZeroConv2d(in_channel * 4, in_channel * 8)

        def forward(self, input):
            b_size, n_channel, height, width = input.shape
            squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
            squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
            out = squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)
            logdet = 0
            for flow in self.flows:
                out, det = flow(out)
                logdet = logdet + det
            if self.split:
                out, z_new = out.chunk(2, 1)
                mean, log_sd = self.prior(out).chunk(2, 1)
                log_p = gaussian_log_p(z_new, mean, log_sd)
                log_p = log_p.view(b_size, -1).sum(1)
            else:
                zero = torch.zeros_like(out)
                mean, log_sd = self.prior(zero).chunk(2, 1)
                log_p = gaussian_log_p(out, mean, log_sd)
                log_p = log_p.view(b_size, -1).sum(1)
                z_new = out
            return out, logdet, log_p, z_new

    class Glow(nn.Module):
        def __init__(self, in_channel, n_flow, n_block, affine=True, conv_lu=True):
            super().__init__()
            self.blocks = nn.ModuleList()
            n_channel = in_channel
            for i in range(n_block - 1):
                self.blocks.append(Block(n_channel, n_flow, affine=affine, conv_lu=conv_lu))
                n_channel *= 2
            self.blocks.append(Block(n_channel, n_flow, split=False, affine=affine))

        def forward(self, input):
            log_p_sum = 0
            logdet = 0
            out = input
            z_outs = []
            for block in self.blocks:
                out, det, log_p, z_new = block(out)
                z_outs.append(z_new)
                logdet = logdet + det
                if log_p is not None:
                    log_p_sum = log_p_sum + log_p
            return log_p_sum, logdet, z_outs

    def calc_loss(log_p, logdet, image_size, n_bins):
        n_pixel = image_size * image_size * 3
        loss = -log(n_bins) * n_pixel
        loss = loss + logdet + log_p
        return (
            (-loss / (log(2) * n_pixel)).mean(),
            (log_p / (log(2) * n_pixel)).mean(),
            (logdet / (log(2) * n_pixel)).mean(),
        )

    np_rng = np.random.default_rng(5)  # np.random.randn in InvConv2dLU: the same draws in both runs
    model = Glow(3, n_flow=1, n_block=2, affine=True, conv_lu=True)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_bits, image_size = 5, 8
    n_bins = 2.0 ** n_bits
    rng = np.random.default_rng(6)
    losses = []
    for i in range(2):
        image = torch.tensor(rng.uniform(0, 1, (2, 3, image_size, image_size)).astype(np.float32))
        image = image * 255
        if n_bits < 8:
            image = torch.floor(image / 2 ** (8 - n_bits))
        image = image / n_bins - 0.5
        noise = torch.tensor(rng.uniform(0, 1, (2, 3, image_size, image_size)).astype(np.float32))
        if i == 0:
            with torch.no_grad():
                log_p, logdet, _ = model(image + noise / n_bins)
                continue
        else:
            log_p, logdet, _ = model(image + noise / n_bins)
        logdet = logdet.mean()
        loss, log_p, log_det = calc_loss(log_p, logdet, image_size, n_bins)
        model.zero_grad()
        loss.backward()
        warmup_lr = 1e-3 * min(1, i / 2)
        optimizer.param_groups[0]["lr"] = warmup_lr
        optimizer.step()
        losses += [loss.item(), log_p.item(), log_det.item()]
    assert all(int(b.flows[0].actnorm.initialized) == 1 for b in model.blocks)
    return init, losses + summary(model.parameters())


def test_glow():
    compare(glow)


# (b) johnma2006/mamba-minimal's model.py with its einops calls written as torch's (the form ports of it take):
# ModelArgs' vocabulary padding, RMSNorm, MambaBlock's in_proj split by split_size=, a depthwise Conv1d padded
# d_conv - 1 and cut to the length, softplus of dt_proj, A = -exp(A_log) from a repeated arange, the sequential
# selective scan by einsum (three operands for deltaB_u), y * silu(res), the LM head tied to the embedding;
# AdamW steps on next-token cross-entropy, then greedy generation by argmax
def mamba_minimal(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from dataclasses import dataclass
    from typing import Union

    @dataclass
    class ModelArgs:
        d_model: int
        n_layer: int
        vocab_size: int
        d_state: int = 16
        expand: int = 2
        dt_rank: Union[int, str] = 'auto'
        d_conv: int = 4
        pad_vocab_size_multiple: int = 8
        conv_bias: bool = True
        bias: bool = False

        def __post_init__(self):
            self.d_inner = int(self.expand * self.d_model)
            if self.dt_rank == 'auto':
                self.dt_rank = math.ceil(self.d_model / 16)
            if self.vocab_size % self.pad_vocab_size_multiple != 0:
                self.vocab_size += (self.pad_vocab_size_multiple - self.vocab_size % self.pad_vocab_size_multiple)

    class RMSNorm(nn.Module):
        def __init__(self, d_model: int, eps: float = 1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(d_model))

        def forward(self, x):
            output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
            return output

    class MambaBlock(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)
            self.conv1d = nn.Conv1d(in_channels=args.d_inner, out_channels=args.d_inner, bias=args.conv_bias,
                                    kernel_size=args.d_conv, groups=args.d_inner, padding=args.d_conv - 1)
            self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)
            self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)
            A = torch.arange(1, args.d_state + 1).repeat(args.d_inner, 1)  # repeat(arange, 'n -> d n')
            self.A_log = nn.Parameter(torch.log(A))
            self.D = nn.Parameter(torch.ones(args.d_inner))
            self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

        def forward(self, x):
            (b, l, d) = x.shape
            x_and_res = self.in_proj(x)  # shape (b, l, 2 * d_in)
            (x, res) = x_and_res.split(split_size=[self.args.d_inner, self.args.d_inner], dim=-1)
            x = x.transpose(1, 2)  # rearrange(x, 'b l d_in -> b d_in l')
            x = self.conv1d(x)[:, :, :l]
            x = x.transpose(1, 2)
            x = F.silu(x)
            y = self.ssm(x)
            y = y * F.silu(res)
            output = self.out_proj(y)
            return output

        def ssm(self, x):
            (d_in, n) = self.A_log.shape
            A = -torch.exp(self.A_log.float())  # shape (d_in, n)
            D = self.D.float()
            x_dbl = self.x_proj(x)  # (b, l, dt_rank + 2*n)
            (delta, B, C) = x_dbl.split(split_size=[self.args.dt_rank, n, n], dim=-1)
            delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)
            y = self.selective_scan(x, delta, A, B, C, D)
            return y

        def selective_scan(self, u, delta, A, B, C, D):
            (b, l, d_in) = u.shape
            n = A.shape[1]
            deltaA = torch.exp(torch.einsum('bld,dn->bldn', delta, A))
            deltaB_u = torch.einsum('bld,bln,bld->bldn', delta, B, u)
            x = torch.zeros((b, d_in, n), device=deltaA.device)
            ys = []
            for i in range(l):
                x = deltaA[:, i] * x + deltaB_u[:, i]
                y = torch.einsum('bdn,bn->bd', x, C[:, i, :])
                ys.append(y)
            y = torch.stack(ys, dim=1)  # shape (b, l, d_in)
            y = y + u * D
            return y

    class ResidualBlock(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.mixer = MambaBlock(args)
            self.norm = RMSNorm(args.d_model)

        def forward(self, x):
            output = self.mixer(self.norm(x)) + x
            return output

    class Mamba(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.embedding = nn.Embedding(args.vocab_size, args.d_model)
            self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
            self.norm_f = RMSNorm(args.d_model)
            self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
            self.lm_head.weight = self.embedding.weight  # Tie output projection to embedding weights.

        def forward(self, input_ids):
            x = self.embedding(input_ids)
            for layer in self.layers:
                x = layer(x)
            x = self.norm_f(x)
            logits = self.lm_head(x)
            return logits

    args = ModelArgs(d_model=8, n_layer=1, vocab_size=13, d_state=4, d_conv=3)
    assert args.vocab_size == 16 and args.dt_rank == 1
    model = Mamba(args)
    assert len(model.state_dict()) == len(list(model.parameters())) + 1  # the tied head: one parameter, two keys
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    rng = np.random.default_rng(7)
    losses = []
    for _ in range(1):
        data = torch.tensor(rng.integers(0, 13, (2, 5)))
        x, y = data[:, :-1], data[:, 1:]
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    input_ids = torch.tensor([[1, 2]])
    with torch.no_grad():
        for _ in range(2):
            next_token_logits = model(input_ids)[:, -1]
            probs = F.softmax(next_token_logits, dim=-1)
            next_indices = torch.argmax(probs, dim=-1, keepdim=True)
            input_ids = torch.cat([input_ids, next_indices], dim=1)
    assert model.lm_head.weight is model.embedding.weight
    return init, losses + input_ids.flatten().tolist() + summary(model.parameters())


def test_mamba_minimal_selective_scan():
    compare(mamba_minimal)


# (c) Blealtan/efficient-kan's kan.py and its MNIST example: KANLinear's grid buffer from an expanded arange,
# parameters made as torch.Tensor(out, in) and filled by reset_parameters (kaiming_uniform_ and, under no_grad,
# curve2coeff of uniform noise by a batched torch.linalg.lstsq), b_splines' recursion over bool masks,
# scaled_spline_weight, update_grid (sort, a linspace of int64 indices, torch.concatenate, bmm) under
# @torch.no_grad(), and regularization_loss; AdamW with ExponentialLR on cross-entropy plus the regulariser
def efficient_kan(m, state=None):
    torch, F = m.torch, m.F

    class KANLinear(torch.nn.Module):
        def __init__(self, in_features, out_features, grid_size=5, spline_order=3, scale_noise=0.1, scale_base=1.0,
                     scale_spline=1.0, enable_standalone_scale_spline=True, base_activation=torch.nn.SiLU,
                     grid_eps=0.02, grid_range=[-1, 1]):
            super(KANLinear, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.grid_size = grid_size
            self.spline_order = spline_order
            h = (grid_range[1] - grid_range[0]) / grid_size
            grid = (
                (torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0])
                .expand(in_features, -1)
                .contiguous()
            )
            self.register_buffer("grid", grid)
            self.base_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features))
            self.spline_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features, grid_size + spline_order))
            if enable_standalone_scale_spline:
                self.spline_scaler = torch.nn.Parameter(torch.Tensor(out_features, in_features))
            self.scale_noise = scale_noise
            self.scale_base = scale_base
            self.scale_spline = scale_spline
            self.enable_standalone_scale_spline = enable_standalone_scale_spline
            self.base_activation = base_activation()
            self.grid_eps = grid_eps
            self.reset_parameters()

        def reset_parameters(self):
            torch.nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
            with torch.no_grad():
                noise = (
                    (torch.rand(self.grid_size + 1, self.in_features, self.out_features) - 1 / 2)
                    * self.scale_noise
                    / self.grid_size
                )
                self.spline_weight.data.copy_(
                    (self.scale_spline if not self.enable_standalone_scale_spline else 1.0)
                    * self.curve2coeff(self.grid.T[self.spline_order: -self.spline_order], noise)
                )
                if self.enable_standalone_scale_spline:
                    torch.nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

        def b_splines(self, x):
            assert x.dim() == 2 and x.size(1) == self.in_features
            grid = self.grid  # (in_features, grid_size + 2 * spline_order + 1)
            x = x.unsqueeze(-1)
            bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
            for k in range(1, self.spline_order + 1):
                bases = (
                    (x - grid[:, : -(k + 1)])
                    / (grid[:, k:-1] - grid[:, : -(k + 1)])
                    * bases[:, :, :-1]
                ) + (
                    (grid[:, k + 1:] - x)
                    / (grid[:, k + 1:] - grid[:, 1:(-k)])
                    * bases[:, :, 1:]
                )
            assert bases.size() == (x.size(0), self.in_features, self.grid_size + self.spline_order)
            return bases.contiguous()

        def curve2coeff(self, x, y):
            assert x.dim() == 2 and x.size(1) == self.in_features
            assert y.size() == (x.size(0), self.in_features, self.out_features)
            A = self.b_splines(x).transpose(0, 1)  # (in_features, batch_size, grid_size + spline_order)
            B = y.transpose(0, 1)  # (in_features, batch_size, out_features)
            solution = torch.linalg.lstsq(A, B).solution  # (in_features, grid_size + spline_order, out_features)
            result = solution.permute(2, 0, 1)  # (out_features, in_features, grid_size + spline_order)
            assert result.size() == (self.out_features, self.in_features, self.grid_size + self.spline_order)
            return result.contiguous()

        @property
        def scaled_spline_weight(self):
            return self.spline_weight * (
                self.spline_scaler.unsqueeze(-1) if self.enable_standalone_scale_spline else 1.0
            )

        def forward(self, x):
            assert x.size(-1) == self.in_features
            original_shape = x.shape
            x = x.reshape(-1, self.in_features)
            base_output = F.linear(self.base_activation(x), self.base_weight)
            spline_output = F.linear(
                self.b_splines(x).view(x.size(0), -1),
                self.scaled_spline_weight.view(self.out_features, -1),
            )
            output = base_output + spline_output
            output = output.reshape(*original_shape[:-1], self.out_features)
            return output

        @torch.no_grad()
        def update_grid(self, x, margin=0.01):
            assert x.dim() == 2 and x.size(1) == self.in_features
            batch = x.size(0)
            splines = self.b_splines(x)  # (batch, in, coeff)
            splines = splines.permute(1, 0, 2)  # (in, batch, coeff)
            orig_coeff = self.scaled_spline_weight  # (out, in, coeff)
            orig_coeff = orig_coeff.permute(1, 2, 0)  # (in, coeff, out)
            unreduced_spline_output = torch.bmm(splines, orig_coeff)  # (in, batch, out)
            unreduced_spline_output = unreduced_spline_output.permute(1, 0, 2)  # (batch, in, out)
            x_sorted = torch.sort(x, dim=0)[0]
            grid_adaptive = x_sorted[
                torch.linspace(0, batch - 1, self.grid_size + 1, dtype=torch.int64, device=x.device)
            ]
            uniform_step = (x_sorted[-1] - x_sorted[0] + 2 * margin) / self.grid_size
            grid_uniform = (
                torch.arange(self.grid_size + 1, dtype=torch.float32, device=x.device).unsqueeze(1)
                * uniform_step
                + x_sorted[0]
                - margin
            )
            grid = self.grid_eps * grid_uniform + (1 - self.grid_eps) * grid_adaptive
            grid = torch.concatenate(
                [
                    grid[:1] - uniform_step * torch.arange(self.spline_order, 0, -1, device=x.device).unsqueeze(1),
                    grid,
                    grid[-1:] + uniform_step * torch.arange(1, self.spline_order + 1, device=x.device).unsqueeze(1),
                ],
                dim=0,
            )
            self.grid.copy_(grid.T)
            self.spline_weight.data.copy_(self.curve2coeff(x, unreduced_spline_output))

        def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
            l1_fake = self.spline_weight.abs().mean(-1)
            regularization_loss_activation = l1_fake.sum()
            p = l1_fake / regularization_loss_activation
            regularization_loss_entropy = -torch.sum(p * p.log())
            return (
                regularize_activation * regularization_loss_activation
                + regularize_entropy * regularization_loss_entropy
            )

    class KAN(torch.nn.Module):
        def __init__(self, layers_hidden, grid_size=5, spline_order=3, scale_noise=0.1, scale_base=1.0,
                     scale_spline=1.0, base_activation=torch.nn.SiLU, grid_eps=0.02, grid_range=[-1, 1]):
            super(KAN, self).__init__()
            self.grid_size = grid_size
            self.spline_order = spline_order
            self.layers = torch.nn.ModuleList()
            for in_features, out_features in zip(layers_hidden, layers_hidden[1:]):
                self.layers.append(
                    KANLinear(in_features, out_features, grid_size=grid_size, spline_order=spline_order,
                              scale_noise=scale_noise, scale_base=scale_base, scale_spline=scale_spline,
                              base_activation=base_activation, grid_eps=grid_eps, grid_range=grid_range))

        def forward(self, x, update_grid=False):
            for layer in self.layers:
                if update_grid:
                    layer.update_grid(x)
                x = layer(x)
            return x

        def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
            return sum(layer.regularization_loss(regularize_activation, regularize_entropy) for layer in self.layers)

    model = KAN([6, 3], grid_size=4)
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
    criterion = torch.nn.CrossEntropyLoss()
    rng = np.random.default_rng(8)
    losses = []
    for step in range(1):
        images = torch.tensor(np.tanh(normal(rng, 8, 6)))
        labels = torch.tensor(rng.integers(0, 3, 8))
        optimizer.zero_grad()
        output = model(images, update_grid=step % 10 == 0)
        loss = criterion(output, labels) + 1e-3 * model.regularization_loss()
        loss.backward()
        optimizer.step()
        scheduler.step()
        accuracy = (output.argmax(dim=1) == labels).float().mean()
        losses += [loss.item(), accuracy.item()]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_efficient_kan():
    compare(efficient_kan)


# (d) a BiLSTM-CRF tagger as NER repositories write it over kmkurn/pytorch-crf's CRF module: start, end and
# transition scores, _validate, _compute_score by advanced indexing (emissions[i, torch.arange(batch), tags[i]],
# transitions[tags[i - 1], tags[i]], tags[seq_ends, torch.arange(batch)]) with in-place += on the score,
# _compute_normalizer by logsumexp over broadcast scores and torch.where on a bool mask, and _viterbi_decode
# (max with indices, history sliced by a 0-d tensor, backtracking by .item()); the LSTM is bidirectional and
# batch_first over a padded batch whose mask the CRF reads
def bilstm_crf(m, state=None):
    torch, nn = m.torch, m.nn

    class CRF(nn.Module):
        def __init__(self, num_tags: int, batch_first: bool = False) -> None:
            if num_tags <= 0:
                raise ValueError(f'invalid number of tags: {num_tags}')
            super().__init__()
            self.num_tags = num_tags
            self.batch_first = batch_first
            self.start_transitions = nn.Parameter(torch.empty(num_tags))
            self.end_transitions = nn.Parameter(torch.empty(num_tags))
            self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
            self.reset_parameters()

        def reset_parameters(self) -> None:
            nn.init.uniform_(self.start_transitions, -0.1, 0.1)
            nn.init.uniform_(self.end_transitions, -0.1, 0.1)
            nn.init.uniform_(self.transitions, -0.1, 0.1)

        def forward(self, emissions, tags, mask=None, reduction='sum'):
            self._validate(emissions, tags=tags, mask=mask)
            if reduction not in ('none', 'sum', 'mean', 'token_mean'):
                raise ValueError(f'invalid reduction: {reduction}')
            if mask is None:
                mask = torch.ones_like(tags, dtype=torch.uint8)
            if self.batch_first:
                emissions = emissions.transpose(0, 1)
                tags = tags.transpose(0, 1)
                mask = mask.transpose(0, 1)
            numerator = self._compute_score(emissions, tags, mask)
            denominator = self._compute_normalizer(emissions, mask)
            llh = numerator - denominator
            if reduction == 'none':
                return llh
            if reduction == 'sum':
                return llh.sum()
            if reduction == 'mean':
                return llh.mean()
            assert reduction == 'token_mean'
            return llh.sum() / mask.float().sum()

        def decode(self, emissions, mask=None):
            self._validate(emissions, mask=mask)
            if mask is None:
                mask = emissions.new_ones(emissions.shape[:2], dtype=torch.uint8)
            if self.batch_first:
                emissions = emissions.transpose(0, 1)
                mask = mask.transpose(0, 1)
            return self._viterbi_decode(emissions, mask)

        def _validate(self, emissions, tags=None, mask=None):
            if emissions.dim() != 3:
                raise ValueError(f'emissions must have dimension of 3, got {emissions.dim()}')
            if emissions.size(2) != self.num_tags:
                raise ValueError(f'expected last dimension of emissions is {self.num_tags}, got {emissions.size(2)}')
            if tags is not None:
                if emissions.shape[:2] != tags.shape:
                    raise ValueError('the first two dimensions of emissions and tags must match, '
                                     f'got {tuple(emissions.shape[:2])} and {tuple(tags.shape)}')
            if mask is not None:
                if emissions.shape[:2] != mask.shape:
                    raise ValueError('the first two dimensions of emissions and mask must match, '
                                     f'got {tuple(emissions.shape[:2])} and {tuple(mask.shape)}')
                no_empty_seq = not self.batch_first and mask[0].all()
                no_empty_seq_bf = self.batch_first and mask[:, 0].all()
                if not no_empty_seq and not no_empty_seq_bf:
                    raise ValueError('mask of the first timestep must all be on')

        def _compute_score(self, emissions, tags, mask):
            assert emissions.dim() == 3 and tags.dim() == 2
            assert emissions.shape[:2] == tags.shape
            assert emissions.size(2) == self.num_tags
            assert mask.shape == tags.shape
            assert mask[0].all()
            seq_length, batch_size = tags.shape
            mask = mask.float()
            score = self.start_transitions[tags[0]]
            score += emissions[0, torch.arange(batch_size), tags[0]]
            for i in range(1, seq_length):
                score += self.transitions[tags[i - 1], tags[i]] * mask[i]
                score += emissions[i, torch.arange(batch_size), tags[i]] * mask[i]
            seq_ends = mask.long().sum(dim=0) - 1
            last_tags = tags[seq_ends, torch.arange(batch_size)]
            score += self.end_transitions[last_tags]
            return score

        def _compute_normalizer(self, emissions, mask):
            assert emissions.dim() == 3 and mask.dim() == 2
            assert emissions.shape[:2] == mask.shape
            assert emissions.size(2) == self.num_tags
            assert mask[0].all()
            seq_length = emissions.size(0)
            score = self.start_transitions + emissions[0]
            for i in range(1, seq_length):
                broadcast_score = score.unsqueeze(2)
                broadcast_emissions = emissions[i].unsqueeze(1)
                next_score = broadcast_score + self.transitions + broadcast_emissions
                next_score = torch.logsumexp(next_score, dim=1)
                score = torch.where(mask[i].unsqueeze(1), next_score, score)
            score += self.end_transitions
            return torch.logsumexp(score, dim=1)

        def _viterbi_decode(self, emissions, mask):
            assert emissions.dim() == 3 and mask.dim() == 2
            assert emissions.shape[:2] == mask.shape
            assert emissions.size(2) == self.num_tags
            assert mask[0].all()
            seq_length, batch_size = mask.shape
            score = self.start_transitions + emissions[0]
            history = []
            for i in range(1, seq_length):
                broadcast_score = score.unsqueeze(2)
                broadcast_emission = emissions[i].unsqueeze(1)
                next_score = broadcast_score + self.transitions + broadcast_emission
                next_score, indices = next_score.max(dim=1)
                score = torch.where(mask[i].unsqueeze(1), next_score, score)
                history.append(indices)
            score += self.end_transitions
            seq_ends = mask.long().sum(dim=0) - 1
            best_tags_list = []
            for idx in range(batch_size):
                _, best_last_tag = score[idx].max(dim=0)
                best_tags = [best_last_tag.item()]
                for hist in reversed(history[:seq_ends[idx]]):
                    best_last_tag = hist[idx][best_tags[-1]]
                    best_tags.append(best_last_tag.item())
                best_tags.reverse()
                best_tags_list.append(best_tags)
            return best_tags_list

    class BiLSTM_CRF(nn.Module):
        def __init__(self, vocab_size, num_tags, embedding_dim, hidden_dim):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True, batch_first=True)
            self.hidden2tag = nn.Linear(hidden_dim, num_tags)
            self.crf = CRF(num_tags, batch_first=True)

        def _get_emissions(self, input_ids):
            lstm_out, _ = self.lstm(self.embedding(input_ids))
            return self.hidden2tag(lstm_out)

        def forward(self, input_ids, tags, mask):
            return -self.crf(self._get_emissions(input_ids), tags, mask=mask, reduction='mean')

        def predict(self, input_ids, mask):
            return self.crf.decode(self._get_emissions(input_ids), mask=mask)

    tag_to_ix = {"O": 0, "B-PER": 1, "I-PER": 2, "B-LOC": 3}
    model = BiLSTM_CRF(vocab_size=9, num_tags=len(tag_to_ix), embedding_dim=6, hidden_dim=8)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=1e-4)
    input_ids = torch.tensor([[3, 5, 7], [4, 8, 0]])  # 0 pads the shorter sentence
    tags = torch.tensor([[1, 2, 3], [3, 0, 0]])
    mask = input_ids != 0
    losses = []
    for _ in range(1):
        model.zero_grad()
        loss = model(input_ids, tags, mask)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        paths = model.predict(input_ids, mask)
    assert [len(p) for p in paths] == [3, 2]
    return init, losses + sum(paths, []) + summary(model.parameters())


def test_bilstm_crf():
    compare(bilstm_crf)


# (e) facebookresearch/dino's main_dino.py, vision_transformer.py's DINOHead and utils.py, over a small
# convolutional backbone: MultiCropWrapper's crops grouped by resolution (torch.unique_consecutive with
# return_counts, cumsum, the list sliced by 0-d tensors, an empty output grown by torch.cat), DINOHead's
# trunc_normal_ init and its nn.utils.weight_norm last layer with weight_g filled with 1 and frozen, DINOLoss's
# centre buffer and numpy teacher-temperature schedule, get_params_groups, cosine_scheduler's lr, weight-decay and
# momentum schedules written into the param groups each iteration, clip_gradients per parameter,
# cancel_gradients_last_layer, and the teacher's EMA by param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
def dino(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    dist = m.torch.distributed

    def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0, start_warmup_value=0):
        warmup_schedule = np.array([])
        warmup_iters = warmup_epochs * niter_per_ep
        if warmup_epochs > 0:
            warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)
        iters = np.arange(epochs * niter_per_ep - warmup_iters)
        schedule = final_value + 0.5 * (base_value - final_value) * (1 + np.cos(np.pi * iters / len(iters)))
        schedule = np.concatenate((warmup_schedule, schedule))
        assert len(schedule) == epochs * niter_per_ep
        return schedule

    def get_params_groups(model):
        regularized = []
        not_regularized = []
        for name, param in model.named_parameters():
            if not param.requires_grad:
                continue
            # we do not regularize biases nor Norm parameters
            if name.endswith(".bias") or len(param.shape) == 1:
                not_regularized.append(param)
            else:
                regularized.append(param)
        return [{'params': regularized}, {'params': not_regularized, 'weight_decay': 0.}]

    def clip_gradients(model, clip):
        norms = []
        for name, p in model.named_parameters():
            if p.grad is not None:
                param_norm = p.grad.data.norm(2)
                norms.append(param_norm.item())
                clip_coef = clip / (param_norm + 1e-6)
                if clip_coef < 1:
                    p.grad.data.mul_(clip_coef)
        return norms

    def cancel_gradients_last_layer(epoch, model, freeze_last_layer):
        if epoch >= freeze_last_layer:
            return
        for n, p in model.named_parameters():
            if "last_layer" in n:
                p.grad = None

    class Backbone(nn.Module):  # a ResNet's shape: features, global pooling, an fc that the wrapper removes
        def __init__(self, embed_dim=6):
            super().__init__()
            self.conv = nn.Conv2d(3, embed_dim, 3, stride=2, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(embed_dim)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(embed_dim, 10)

        def forward(self, x):
            x = self.avgpool(F.relu(self.bn(self.conv(x))))
            return self.fc(torch.flatten(x, 1))

    class DINOHead(nn.Module):
        def __init__(self, in_dim, out_dim, use_bn=False, norm_last_layer=True, nlayers=3, hidden_dim=2048,
                     bottleneck_dim=256):
            super().__init__()
            nlayers = max(nlayers, 1)
            if nlayers == 1:
                self.mlp = nn.Linear(in_dim, bottleneck_dim)
            else:
                layers = [nn.Linear(in_dim, hidden_dim)]
                if use_bn:
                    layers.append(nn.BatchNorm1d(hidden_dim))
                layers.append(nn.GELU())
                for _ in range(nlayers - 2):
                    layers.append(nn.Linear(hidden_dim, hidden_dim))
                    if use_bn:
                        layers.append(nn.BatchNorm1d(hidden_dim))
                    layers.append(nn.GELU())
                layers.append(nn.Linear(hidden_dim, bottleneck_dim))
                self.mlp = nn.Sequential(*layers)
            self.apply(self._init_weights)
            self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
            self.last_layer.weight_g.data.fill_(1)
            if norm_last_layer:
                self.last_layer.weight_g.requires_grad = False

        def _init_weights(self, m):
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.constant_(m.bias, 0)

        def forward(self, x):
            x = self.mlp(x)
            x = nn.functional.normalize(x, dim=-1, p=2)
            x = self.last_layer(x)
            return x

    class MultiCropWrapper(nn.Module):
        def __init__(self, backbone, head):
            super(MultiCropWrapper, self).__init__()
            # disable layers dedicated to ImageNet labels classification
            backbone.fc, backbone.head = nn.Identity(), nn.Identity()
            self.backbone = backbone
            self.head = head

        def forward(self, x):
            # convert to list
            if not isinstance(x, list):
                x = [x]
            idx_crops = torch.cumsum(torch.unique_consecutive(
                torch.tensor([inp.shape[-1] for inp in x]),
                return_counts=True,
            )[1], 0)
            start_idx, output = 0, torch.empty(0).to(x[0].device)
            for end_idx in idx_crops:
                _out = self.backbone(torch.cat(x[start_idx: end_idx]))
                # The output is a tuple with XCiT model. See:
                # https://github.com/facebookresearch/xcit/blob/master/xcit.py#L404-L405
                if isinstance(_out, tuple):
                    _out = _out[0]
                # accumulate outputs
                output = torch.cat((output, _out))
                start_idx = end_idx
            # Run the head forward on the concatenated features.
            return self.head(output)

    class DINOLoss(nn.Module):
        def __init__(self, out_dim, ncrops, warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs, nepochs,
                     student_temp=0.1, center_momentum=0.9):
            super().__init__()
            self.student_temp = student_temp
            self.center_momentum = center_momentum
            self.ncrops = ncrops
            self.register_buffer("center", torch.zeros(1, out_dim))
            # we apply a warm up for the teacher temperature because
            # a too high temperature makes the training instable at the beginning
            self.teacher_temp_schedule = np.concatenate((
                np.linspace(warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs),
                np.ones(nepochs - warmup_teacher_temp_epochs) * teacher_temp
            ))

        def forward(self, student_output, teacher_output, epoch):
            student_out = student_output / self.student_temp
            student_out = student_out.chunk(self.ncrops)
            # teacher centering and sharpening
            temp = self.teacher_temp_schedule[epoch]
            teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1)
            teacher_out = teacher_out.detach().chunk(2)
            total_loss = 0
            n_loss_terms = 0
            for iq, q in enumerate(teacher_out):
                for v in range(len(student_out)):
                    if v == iq:
                        # we skip cases where student and teacher operate on the same view
                        continue
                    loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                    total_loss += loss.mean()
                    n_loss_terms += 1
            total_loss /= n_loss_terms
            self.update_center(teacher_output)
            return total_loss

        @torch.no_grad()
        def update_center(self, teacher_output):
            batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
            world_size = 1
            if dist.is_available() and dist.is_initialized():
                dist.all_reduce(batch_center)
                world_size = dist.get_world_size()
            batch_center = batch_center / (len(teacher_output) * world_size)
            # ema update
            self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)

    out_dim, local_crops_number, epochs, niter_per_ep = 5, 2, 1, 1
    student = MultiCropWrapper(Backbone(), DINOHead(6, out_dim, nlayers=2, hidden_dim=8, bottleneck_dim=4))
    teacher = MultiCropWrapper(Backbone(), DINOHead(6, out_dim, nlayers=2, hidden_dim=8, bottleneck_dim=4))
    init = load(m, student, state)
    teacher.load_state_dict(student.state_dict())
    for p in teacher.parameters():
        p.requires_grad = False
    assert "head.last_layer.weight_g" in student.state_dict()
    dino_loss = DINOLoss(out_dim, local_crops_number + 2, 0.04, 0.07, 1, epochs)
    params_groups = get_params_groups(student)
    optimizer = torch.optim.AdamW(params_groups)
    lr_schedule = cosine_scheduler(5e-3, 1e-6, epochs, niter_per_ep, warmup_epochs=0)
    wd_schedule = cosine_scheduler(0.04, 0.4, epochs, niter_per_ep)
    momentum_schedule = cosine_scheduler(0.996, 1, epochs, niter_per_ep)
    rng = np.random.default_rng(9)
    losses = []
    for epoch in range(epochs):
        images = [torch.tensor(normal(rng, 2, 3, 8, 8)) for _ in range(2)]
        images += [torch.tensor(normal(rng, 2, 3, 4, 4)) for _ in range(local_crops_number)]
        it = niter_per_ep * epoch
        for i, param_group in enumerate(optimizer.param_groups):
            param_group["lr"] = lr_schedule[it]
            if i == 0:  # only the first group is regularized
                param_group["weight_decay"] = wd_schedule[it]
        images = [im.cuda(non_blocking=True) if torch.cuda.is_available() else im for im in images]
        teacher_output = teacher(images[:2])  # only the 2 global views pass through the teacher
        student_output = student(images)
        loss = dino_loss(student_output, teacher_output, epoch)
        if not math.isfinite(loss.item()):
            raise SystemExit(1)
        optimizer.zero_grad()
        loss.backward()
        param_norms = clip_gradients(student, 0.5)
        cancel_gradients_last_layer(epoch, student, 1)
        optimizer.step()
        with torch.no_grad():
            m_ = momentum_schedule[it]  # momentum parameter
            for param_q, param_k in zip(student.parameters(), teacher.parameters()):
                param_k.data.mul_(m_).add_((1 - m_) * param_q.detach().data)
        losses += [loss.item()] + param_norms[:3]
    return init, losses + summary(student.parameters()) + summary(teacher.parameters()) + summary(dino_loss.buffers())


def test_dino():
    compare(dino)


# (f) openai/sparse_autoencoder's model.py and loss.py with the training loop of its TopK paper: Autoencoder with a
# pre-bias, a latent bias and stats buffers (stats_last_nonzero updated by (latents == 0).all(dim=0).long()),
# TopK (torch.topk, then scatter_ of the activated values into zeros_like), the normalized MSE and L1 losses, the
# AuxK loss on dead latents (torch.where with -inf, topk, scatter_), the decoder's columns kept at unit norm
# with their gradients' parallel components removed (einsum), and the pre-bias set to the geometric median
# (Weiszfeld's iterations) of the first batch
def topk_sparse_autoencoder(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class TopK(nn.Module):
        def __init__(self, k: int, postact_fn=nn.ReLU()) -> None:
            super().__init__()
            self.k = k
            self.postact_fn = postact_fn

        def forward(self, x):
            topk = torch.topk(x, k=self.k, dim=-1)
            values = self.postact_fn(topk.values)
            # make all other values 0
            result = torch.zeros_like(x)
            result.scatter_(-1, topk.indices, values)
            return result

    class Autoencoder(nn.Module):
        def __init__(self, n_latents: int, n_inputs: int, activation=nn.ReLU(), tied: bool = False,
                     normalize: bool = False) -> None:
            super().__init__()
            self.pre_bias = nn.Parameter(torch.zeros(n_inputs))
            self.encoder = nn.Linear(n_inputs, n_latents, bias=False)
            self.latent_bias = nn.Parameter(torch.zeros(n_latents))
            self.activation = activation
            self.decoder = nn.Linear(n_latents, n_inputs, bias=False)
            self.normalize = normalize
            self.register_buffer("stats_last_nonzero", torch.zeros(n_latents, dtype=torch.long))
            self.register_buffer("latents_activation_frequency", torch.ones(n_latents, dtype=torch.float))
            self.register_buffer("latents_mean_square", torch.zeros(n_latents, dtype=torch.float))

        def encode_pre_act(self, x, latent_slice: slice = slice(None)):
            x = x - self.pre_bias
            latents_pre_act = F.linear(x, self.encoder.weight[latent_slice], self.latent_bias[latent_slice])
            return latents_pre_act

        def preprocess(self, x):
            if not self.normalize:
                return x, dict()
            x, mu, std = LN(x)
            return x, dict(mu=mu, std=std)

        def decode(self, latents, info=None):
            ret = self.decoder(latents) + self.pre_bias
            if self.normalize:
                assert info is not None
                ret = ret * info["std"] + info["mu"]
            return ret

        def forward(self, x):
            x, info = self.preprocess(x)
            latents_pre_act = self.encode_pre_act(x)
            latents = self.activation(latents_pre_act)
            recons = self.decode(latents, info)
            # set all indices of self.stats_last_nonzero where (latents != 0) to 0
            self.stats_last_nonzero *= (latents == 0).all(dim=0).long()
            self.stats_last_nonzero += 1
            return latents_pre_act, latents, recons

    def LN(x, eps: float = 1e-5):
        mu = x.mean(dim=-1, keepdim=True)
        x = x - mu
        std = x.std(dim=-1, keepdim=True)
        x = x / (std + eps)
        return x, mu, std

    def normalized_mean_squared_error(reconstruction, original_input):
        return (((reconstruction - original_input) ** 2).mean(dim=1) / (original_input ** 2).mean(dim=1)).mean()

    def normalized_L1_loss(latent_activations, original_input):
        return (latent_activations.abs().sum(dim=1) / original_input.norm(dim=1)).mean()

    @torch.no_grad()
    def unit_norm_decoder_(autoencoder):
        autoencoder.decoder.weight.data /= autoencoder.decoder.weight.data.norm(dim=0)

    @torch.no_grad()
    def unit_norm_decoder_grad_adjustment_(autoencoder):
        assert autoencoder.decoder.weight.grad is not None
        W, G = autoencoder.decoder.weight.data, autoencoder.decoder.weight.grad
        G -= torch.einsum("bn,bn->n", W, G) * W

    def geometric_median(points, max_iter=100, tol=1e-5):
        guess = points.mean(dim=0)
        weights = torch.ones(len(points), device=points.device)
        for _ in range(max_iter):
            prev = guess
            weights = 1 / torch.norm(points - guess, dim=1)
            weights /= weights.sum()
            guess = (weights.unsqueeze(1) * points).sum(dim=0)
            if torch.norm(guess - prev) < tol:
                break
        return guess

    n_inputs, n_latents, k, auxk, dead_steps_threshold = 6, 12, 3, 4, 1
    ae = Autoencoder(n_latents, n_inputs, activation=TopK(k), normalize=True)
    init = load(m, ae, state)
    rng = np.random.default_rng(10)
    first = torch.tensor(normal(rng, 8, n_inputs))
    ae.pre_bias.data = geometric_median(LN(first)[0], max_iter=4)
    unit_norm_decoder_(ae)
    opt = torch.optim.Adam(ae.parameters(), lr=1e-2, eps=6.25e-10)
    losses = []
    for step in range(2):
        x = first if step == 0 else torch.tensor(normal(rng, 8, n_inputs))
        latents_pre_act, latents, recons = ae(x)
        xn = LN(x)[0]
        mse = normalized_mean_squared_error(recons, x)
        l1 = normalized_L1_loss(latents, x)
        dead_mask = ae.stats_last_nonzero > dead_steps_threshold
        auxk_latents = torch.where(dead_mask[None], latents_pre_act, -torch.inf)
        auxk_topk = auxk_latents.topk(auxk, sorted=False)
        auxk_acts = torch.zeros_like(latents_pre_act).scatter_(-1, auxk_topk.indices, F.relu(auxk_topk.values))
        residual = xn - (ae.decoder(latents) + ae.pre_bias).detach()
        auxk_loss = normalized_mean_squared_error(ae.decoder(auxk_acts), residual)
        loss = mse + 1e-3 * l1 + 1 / 32 * auxk_loss
        opt.zero_grad()
        loss.backward()
        unit_norm_decoder_grad_adjustment_(ae)
        opt.step()
        unit_norm_decoder_(ae)
        losses += [loss.item(), mse.item(), auxk_loss.item(), int(dead_mask.sum())]
    return init, losses + ae.stats_last_nonzero.tolist() + summary(ae.parameters())


def test_topk_sparse_autoencoder():
    compare(topk_sparse_autoencoder)


# (g) "Growing Neural Cellular Automata" (Distill) as its PyTorch ports write it: CAModel on an NHWC state,
# transposed to NCHW views for perceive (Sobel filters rotated by an angle, from numpy, repeated per channel and
# run as a grouped conv2d) and alive (max_pool2d of the alpha channel > 0.1), the zero-initialised fc1, the
# stochastic fire mask (numpy draws), pre- and post-update life masks by &; the SamplePool of seeds, the batch
# sorted by loss_f (a mean over dims [-2, -3, -1]) with numpy's reversed argsort and its worst replaced by the
# seed, each gradient divided by its norm before Adam, ExponentialLR, and the batch committed back to the pool
def neural_ca(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rng = np.random.default_rng(11)

    class CAModel(nn.Module):
        def __init__(self, channel_n, fire_rate, device, hidden_size=128):
            super(CAModel, self).__init__()
            self.device = device
            self.channel_n = channel_n
            self.fc0 = nn.Linear(channel_n * 3, hidden_size)
            self.fc1 = nn.Linear(hidden_size, channel_n, bias=False)
            with torch.no_grad():
                self.fc1.weight.zero_()
            self.fire_rate = fire_rate
            self.to(self.device)

        def alive(self, x):
            return F.max_pool2d(x[:, 3:4, :, :], kernel_size=3, stride=1, padding=1) > 0.1

        def perceive(self, x, angle):
            def _perceive_with(x, weight):
                conv_weights = torch.from_numpy(weight.astype(np.float32)).to(self.device)
                conv_weights = conv_weights.view(1, 1, 3, 3).repeat(self.channel_n, 1, 1, 1)
                return F.conv2d(x, conv_weights, padding=1, groups=self.channel_n)

            dx = np.outer([1, 2, 1], [-1, 0, 1]) / 8.0  # Sobel filter
            dy = dx.T
            c = np.cos(angle * np.pi / 180)
            s = np.sin(angle * np.pi / 180)
            w1 = c * dx - s * dy
            w2 = s * dx + c * dy
            y1 = _perceive_with(x, w1)
            y2 = _perceive_with(x, w2)
            y = torch.cat((x, y1, y2), 1)
            return y

        def update(self, x, fire_rate, angle):
            x = x.transpose(1, 3)
            pre_life_mask = self.alive(x)
            dx = self.perceive(x, angle)
            dx = dx.transpose(1, 3)
            dx = self.fc0(dx)
            dx = F.relu(dx)
            dx = self.fc1(dx)
            if fire_rate is None:
                fire_rate = self.fire_rate
            stochastic = torch.tensor(rng.random([dx.size(0), dx.size(1), dx.size(2), 1])) > fire_rate
            stochastic = stochastic.float().to(self.device)
            dx = dx * stochastic
            x = x + dx.transpose(1, 3)
            post_life_mask = self.alive(x)
            life_mask = (pre_life_mask & post_life_mask).float()
            x = x * life_mask
            return x.transpose(1, 3)

        def forward(self, x, steps=1, fire_rate=None, angle=0.0):
            for step in range(steps):
                x = self.update(x, fire_rate, angle)
            return x

    class SamplePool:
        def __init__(self, *, _parent=None, _parent_idx=None, **slots):
            self._parent = _parent
            self._parent_idx = _parent_idx
            self._slot_names = slots.keys()
            self._size = None
            for k, v in slots.items():
                if self._size is None:
                    self._size = len(v)
                assert self._size == len(v)
                setattr(self, k, np.asarray(v))

        def sample(self, n):
            idx = rng.choice(self._size, n, False)
            batch = {k: getattr(self, k)[idx] for k in self._slot_names}
            batch = SamplePool(**batch, _parent=self, _parent_idx=idx)
            return batch

        def commit(self):
            for k in self._slot_names:
                getattr(self._parent, k)[self._parent_idx] = getattr(self, k)

    def make_seed(shape, n_channels):
        seed = np.zeros([shape[0], shape[1], n_channels], np.float32)
        seed[shape[0] // 2, shape[1] // 2, 3:] = 1.0
        return seed

    def loss_f(x, target):
        return torch.mean(torch.pow(x[..., :4] - target, 2), [-2, -3, -1])

    CHANNEL_N, TARGET_PADDING, TARGET_SIZE, BATCH_SIZE, POOL_SIZE, CELL_FIRE_RATE = 6, 1, 4, 2, 4, 0.5
    target_img = np.clip(rng.uniform(0, 1, (TARGET_SIZE, TARGET_SIZE, 4)), 0, 1).astype(np.float32)
    p = TARGET_PADDING
    pad_target = np.pad(target_img, [(p, p), (p, p), (0, 0)])
    h, w = pad_target.shape[:2]
    pad_target = np.expand_dims(pad_target, axis=0)
    pad_target = torch.from_numpy(pad_target.astype(np.float32)).to(device)
    seed = make_seed((h, w), CHANNEL_N)
    pool = SamplePool(x=np.repeat(seed[None, ...], POOL_SIZE, 0))
    ca = CAModel(CHANNEL_N, CELL_FIRE_RATE, device, hidden_size=8)
    init = load(m, ca, state)
    optimizer = optim.Adam(ca.parameters(), lr=2e-3, betas=(0.5, 0.5))
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, 0.9999)
    losses = []
    for i in range(2):
        batch = pool.sample(BATCH_SIZE)
        x0 = torch.from_numpy(batch.x.astype(np.float32)).to(device)
        loss_rank = loss_f(x0, pad_target).detach().cpu().numpy().argsort()[::-1]
        x0 = batch.x[loss_rank]
        x0[:1] = seed
        x0 = torch.from_numpy(x0.astype(np.float32)).to(device)
        x = ca(x0, steps=2)
        loss = F.mse_loss(x[:, :, :, :4], pad_target.expand(BATCH_SIZE, -1, -1, -1))
        optimizer.zero_grad()
        loss.backward()
        for p in ca.parameters():
            p.grad.data = p.grad.data / (p.grad.data.norm() + 1e-8)
        optimizer.step()
        scheduler.step()
        batch.x[:] = x.detach().cpu().numpy()
        batch.commit()
        losses.append(loss.item())
    return init, losses + [float(pool.x.sum())] + summary(ca.parameters())


def test_neural_cellular_automata():
    compare(neural_ca)


# (h) ndrplz/ConvLSTM_pytorch's convlstm.py: ConvLSTMCell (torch.cat of input and h, one convolution split into
# four gates by torch.split), ConvLSTM's kernel-size check and _extend_for_multilayer, batch_first input of
# [b, t, c, h, w] sliced per time step, layers stacked by torch.stack(dim=1), return_all_layers; trained as a
# next-frame predictor with a 1x1 convolution head on the last layer's outputs
def convlstm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class ConvLSTMCell(nn.Module):
        def __init__(self, input_dim, hidden_dim, kernel_size, bias):
            super(ConvLSTMCell, self).__init__()
            self.input_dim = input_dim
            self.hidden_dim = hidden_dim
            self.kernel_size = kernel_size
            self.padding = kernel_size[0] // 2, kernel_size[1] // 2
            self.bias = bias
            self.conv = nn.Conv2d(in_channels=self.input_dim + self.hidden_dim, out_channels=4 * self.hidden_dim,
                                  kernel_size=self.kernel_size, padding=self.padding, bias=self.bias)

        def forward(self, input_tensor, cur_state):
            h_cur, c_cur = cur_state
            combined = torch.cat([input_tensor, h_cur], dim=1)  # concatenate along channel axis
            combined_conv = self.conv(combined)
            cc_i, cc_f, cc_o, cc_g = torch.split(combined_conv, self.hidden_dim, dim=1)
            i = torch.sigmoid(cc_i)
            f = torch.sigmoid(cc_f)
            o = torch.sigmoid(cc_o)
            g = torch.tanh(cc_g)
            c_next = f * c_cur + i * g
            h_next = o * torch.tanh(c_next)
            return h_next, c_next

        def init_hidden(self, batch_size, image_size):
            height, width = image_size
            return (torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device),
                    torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device))

    class ConvLSTM(nn.Module):
        def __init__(self, input_dim, hidden_dim, kernel_size, num_layers, batch_first=False, bias=True,
                     return_all_layers=False):
            super(ConvLSTM, self).__init__()
            self._check_kernel_size_consistency(kernel_size)
            # Make sure that both `kernel_size` and `hidden_dim` are lists having len == num_layers
            kernel_size = self._extend_for_multilayer(kernel_size, num_layers)
            hidden_dim = self._extend_for_multilayer(hidden_dim, num_layers)
            if not len(kernel_size) == len(hidden_dim) == num_layers:
                raise ValueError('Inconsistent list length.')
            self.input_dim = input_dim
            self.hidden_dim = hidden_dim
            self.kernel_size = kernel_size
            self.num_layers = num_layers
            self.batch_first = batch_first
            self.bias = bias
            self.return_all_layers = return_all_layers
            cell_list = []
            for i in range(0, self.num_layers):
                cur_input_dim = self.input_dim if i == 0 else self.hidden_dim[i - 1]
                cell_list.append(ConvLSTMCell(input_dim=cur_input_dim, hidden_dim=self.hidden_dim[i],
                                              kernel_size=self.kernel_size[i], bias=self.bias))
            self.cell_list = nn.ModuleList(cell_list)

        def forward(self, input_tensor, hidden_state=None):
            if not self.batch_first:
                # (t, b, c, h, w) -> (b, t, c, h, w)
                input_tensor = input_tensor.permute(1, 0, 2, 3, 4)
            b, _, _, h, w = input_tensor.size()
            if hidden_state is not None:
                raise NotImplementedError()
            else:
                hidden_state = self._init_hidden(batch_size=b, image_size=(h, w))
            layer_output_list = []
            last_state_list = []
            seq_len = input_tensor.size(1)
            cur_layer_input = input_tensor
            for layer_idx in range(self.num_layers):
                h, c = hidden_state[layer_idx]
                output_inner = []
                for t in range(seq_len):
                    h, c = self.cell_list[layer_idx](input_tensor=cur_layer_input[:, t, :, :, :], cur_state=[h, c])
                    output_inner.append(h)
                layer_output = torch.stack(output_inner, dim=1)
                cur_layer_input = layer_output
                layer_output_list.append(layer_output)
                last_state_list.append([h, c])
            if not self.return_all_layers:
                layer_output_list = layer_output_list[-1:]
                last_state_list = last_state_list[-1:]
            return layer_output_list, last_state_list

        def _init_hidden(self, batch_size, image_size):
            init_states = []
            for i in range(self.num_layers):
                init_states.append(self.cell_list[i].init_hidden(batch_size, image_size))
            return init_states

        @staticmethod
        def _check_kernel_size_consistency(kernel_size):
            if not (isinstance(kernel_size, tuple) or
                    (isinstance(kernel_size, list) and all([isinstance(elem, tuple) for elem in kernel_size]))):
                raise ValueError('`kernel_size` must be tuple or list of tuples')

        @staticmethod
        def _extend_for_multilayer(param, num_layers):
            if not isinstance(param, list):
                param = [param] * num_layers
            return param

    class NextFrame(nn.Module):
        def __init__(self):
            super().__init__()
            self.convlstm = ConvLSTM(2, [4, 3], (3, 3), 2, batch_first=True, bias=True, return_all_layers=False)
            self.head = nn.Conv2d(3, 2, 1)

        def forward(self, frames):
            layer_output_list, last_state_list = self.convlstm(frames)
            out = layer_output_list[0]
            assert torch.equal(last_state_list[0][0], out[:, -1])  # the last h is the last output
            b, t = out.shape[:2]
            return self.head(out.flatten(0, 1)).view(b, t, -1, *out.shape[-2:]), last_state_list

    model = NextFrame()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(12)
    video = torch.tensor(np.tanh(normal(rng, 2, 4, 2, 5, 5)))
    pred, last_states = model(video[:, :-1])
    loss = F.mse_loss(pred, video[:, 1:])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    h, c = last_states[0]
    assert h.shape == (2, 3, 5, 5)
    return init, [loss.item(), c.sum().item()] + summary(model.parameters())


def test_convlstm():
    compare(convlstm)


# (i) sgrvinod/a-PyTorch-Tutorial-to-Image-Captioning's models.py, train.py and caption.py: an Encoder whose
# backbone's first children are frozen by fine_tune (a small CNN for the ResNet), AdaptiveAvgPool2d and permute;
# Attention and DecoderWithAttention (captions sorted by length with sort(descending=True), LSTMCell over the
# shrinking batch of the still-unfinished captions, the f_beta gate, predictions and alphas written into zeros
# by index), pack_padded_sequence(...).data of scores and targets, the doubly stochastic attention penalty,
# clip_gradient by clamp_ on the grads, top-5 accuracy; then caption_image_beam_search's beam of k over
# scores.view(-1).topk, word indices by floor division and remainder, and the finished beams set aside. The summary
# leaves out the attention's biases, as the script's end says
def show_attend_tell(m, state=None):
    torch, nn = m.torch, m.nn
    rnn_utils = m.torch.nn.utils.rnn
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    class Encoder(nn.Module):
        def __init__(self, encoded_image_size=14):
            super(Encoder, self).__init__()
            self.enc_image_size = encoded_image_size
            modules = [nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                       nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.Conv2d(4, 5, 1),
                       nn.ReLU(inplace=True)]  # resnet101's children()[:-2], in miniature
            self.resnet = nn.Sequential(*modules)
            self.adaptive_pool = nn.AdaptiveAvgPool2d((encoded_image_size, encoded_image_size))
            self.fine_tune()

        def forward(self, images):
            out = self.resnet(images)  # (batch_size, 2048, image_size/32, image_size/32)
            out = self.adaptive_pool(out)  # (batch_size, 2048, encoded_image_size, encoded_image_size)
            out = out.permute(0, 2, 3, 1)  # (batch_size, encoded_image_size, encoded_image_size, 2048)
            return out

        def fine_tune(self, fine_tune=True):
            for p in self.resnet.parameters():
                p.requires_grad = False
            # If fine-tuning, only fine-tune convolutional blocks 2 through 4
            for c in list(self.resnet.children())[5:]:
                for p in c.parameters():
                    p.requires_grad = fine_tune

    class Attention(nn.Module):
        def __init__(self, encoder_dim, decoder_dim, attention_dim):
            super(Attention, self).__init__()
            self.encoder_att = nn.Linear(encoder_dim, attention_dim)
            self.decoder_att = nn.Linear(decoder_dim, attention_dim)
            self.full_att = nn.Linear(attention_dim, 1)
            self.relu = nn.ReLU()
            self.softmax = nn.Softmax(dim=1)

        def forward(self, encoder_out, decoder_hidden):
            att1 = self.encoder_att(encoder_out)  # (batch_size, num_pixels, attention_dim)
            att2 = self.decoder_att(decoder_hidden)  # (batch_size, attention_dim)
            att = self.full_att(self.relu(att1 + att2.unsqueeze(1))).squeeze(2)  # (batch_size, num_pixels)
            alpha = self.softmax(att)  # (batch_size, num_pixels)
            attention_weighted_encoding = (encoder_out * alpha.unsqueeze(2)).sum(dim=1)  # (batch_size, encoder_dim)
            return attention_weighted_encoding, alpha

    class DecoderWithAttention(nn.Module):
        def __init__(self, attention_dim, embed_dim, decoder_dim, vocab_size, encoder_dim=2048, dropout=0.5):
            super(DecoderWithAttention, self).__init__()
            self.encoder_dim = encoder_dim
            self.attention_dim = attention_dim
            self.embed_dim = embed_dim
            self.decoder_dim = decoder_dim
            self.vocab_size = vocab_size
            self.dropout = dropout
            self.attention = Attention(encoder_dim, decoder_dim, attention_dim)  # attention network
            self.embedding = nn.Embedding(vocab_size, embed_dim)  # embedding layer
            self.dropout = nn.Dropout(p=self.dropout)
            self.decode_step = nn.LSTMCell(embed_dim + encoder_dim, decoder_dim, bias=True)  # decoding LSTMCell
            self.init_h = nn.Linear(encoder_dim, decoder_dim)  # linear layer to find initial hidden state of LSTMCell
            self.init_c = nn.Linear(encoder_dim, decoder_dim)  # linear layer to find initial cell state of LSTMCell
            self.f_beta = nn.Linear(decoder_dim, encoder_dim)  # linear layer to create a sigmoid-activated gate
            self.sigmoid = nn.Sigmoid()
            self.fc = nn.Linear(decoder_dim, vocab_size)  # linear layer to find scores over vocabulary
            self.init_weights()  # initialize some layers with the uniform distribution

        def init_weights(self):
            self.embedding.weight.data.uniform_(-0.1, 0.1)
            self.fc.bias.data.fill_(0)
            self.fc.weight.data.uniform_(-0.1, 0.1)

        def init_hidden_state(self, encoder_out):
            mean_encoder_out = encoder_out.mean(dim=1)
            h = self.init_h(mean_encoder_out)  # (batch_size, decoder_dim)
            c = self.init_c(mean_encoder_out)
            return h, c

        def forward(self, encoder_out, encoded_captions, caption_lengths):
            batch_size = encoder_out.size(0)
            encoder_dim = encoder_out.size(-1)
            vocab_size = self.vocab_size
            # Flatten image
            encoder_out = encoder_out.view(batch_size, -1, encoder_dim)  # (batch_size, num_pixels, encoder_dim)
            num_pixels = encoder_out.size(1)
            # Sort input data by decreasing lengths; why? apparent below
            caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
            encoder_out = encoder_out[sort_ind]
            encoded_captions = encoded_captions[sort_ind]
            embeddings = self.embedding(encoded_captions)  # (batch_size, max_caption_length, embed_dim)
            h, c = self.init_hidden_state(encoder_out)  # (batch_size, decoder_dim)
            # We won't decode at the <end> position, since we've finished generating as soon as we generate <end>
            decode_lengths = (caption_lengths - 1).tolist()
            predictions = torch.zeros(batch_size, max(decode_lengths), vocab_size).to(device)
            alphas = torch.zeros(batch_size, max(decode_lengths), num_pixels).to(device)
            for t in range(max(decode_lengths)):
                batch_size_t = sum([l > t for l in decode_lengths])
                attention_weighted_encoding, alpha = self.attention(encoder_out[:batch_size_t], h[:batch_size_t])
                gate = self.sigmoid(self.f_beta(h[:batch_size_t]))  # gating scalar, (batch_size_t, encoder_dim)
                attention_weighted_encoding = gate * attention_weighted_encoding
                h, c = self.decode_step(
                    torch.cat([embeddings[:batch_size_t, t, :], attention_weighted_encoding], dim=1),
                    (h[:batch_size_t], c[:batch_size_t]))  # (batch_size_t, decoder_dim)
                preds = self.fc(self.dropout(h))  # (batch_size_t, vocab_size)
                predictions[:batch_size_t, t, :] = preds
                alphas[:batch_size_t, t, :] = alpha
            return predictions, encoded_captions, decode_lengths, alphas, sort_ind

    def clip_gradient(optimizer, grad_clip):
        for group in optimizer.param_groups:
            for param in group['params']:
                if param.grad is not None:
                    param.grad.data.clamp_(-grad_clip, grad_clip)

    def accuracy(scores, targets, k):
        batch_size = targets.size(0)
        _, ind = scores.topk(k, 1, True, True)
        correct = ind.eq(targets.view(-1, 1).expand_as(ind))
        correct_total = correct.view(-1).float().sum()  # 0D tensor
        return correct_total.item() * (100.0 / batch_size)

    word_map = {"<pad>": 0, "a": 1, "cat": 2, "on": 3, "mat": 4, "<start>": 5, "<end>": 6}
    vocab_size = len(word_map)
    encoder = Encoder(encoded_image_size=2)
    decoder = DecoderWithAttention(attention_dim=4, embed_dim=4, decoder_dim=6, vocab_size=vocab_size, encoder_dim=5,
                                   dropout=0.0)
    models = nn.ModuleList([encoder, decoder])
    init = load(m, models, state)
    decoder_optimizer = torch.optim.Adam(params=filter(lambda p: p.requires_grad, decoder.parameters()), lr=4e-3)
    encoder_optimizer = torch.optim.Adam(params=filter(lambda p: p.requires_grad, encoder.parameters()), lr=1e-3)
    criterion = nn.CrossEntropyLoss().to(device)
    alpha_c, grad_clip = 1., 0.05
    rng = np.random.default_rng(13)
    imgs = torch.tensor(normal(rng, 2, 3, 4, 4))
    caps = torch.tensor([[5, 6, 0], [5, 2, 6]])
    caplens = torch.tensor([[2], [3]])
    decoder.train()
    encoder.train()
    imgs = encoder(imgs)
    scores, caps_sorted, decode_lengths, alphas, sort_ind = decoder(imgs, caps, caplens)
    targets = caps_sorted[:, 1:]
    scores = rnn_utils.pack_padded_sequence(scores, decode_lengths, batch_first=True).data
    targets = rnn_utils.pack_padded_sequence(targets, decode_lengths, batch_first=True).data
    loss = criterion(scores, targets)
    loss += alpha_c * ((1. - alphas.sum(dim=1)) ** 2).mean()
    decoder_optimizer.zero_grad()
    encoder_optimizer.zero_grad()
    loss.backward()
    clip_gradient(decoder_optimizer, grad_clip)
    clip_gradient(encoder_optimizer, grad_clip)
    decoder_optimizer.step()
    encoder_optimizer.step()
    top5 = accuracy(scores, targets, 5)
    assert sort_ind.tolist() == [1, 0] and decode_lengths == [2, 1]
    losses = [loss.item(), top5]

    # caption.py's beam search, k = 2, over one image
    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        k = 2
        image = imgs.new_tensor(normal(rng, 1, 3, 4, 4))
        encoder_out = encoder(image)  # (1, enc_image_size, enc_image_size, encoder_dim)
        encoder_dim = encoder_out.size(3)
        encoder_out = encoder_out.view(1, -1, encoder_dim)  # (1, num_pixels, encoder_dim)
        num_pixels = encoder_out.size(1)
        encoder_out = encoder_out.expand(k, num_pixels, encoder_dim)  # (k, num_pixels, encoder_dim)
        k_prev_words = torch.LongTensor([[word_map['<start>']]] * k).to(device)  # (k, 1)
        seqs = k_prev_words  # (k, 1)
        top_k_scores = torch.zeros(k, 1).to(device)  # (k, 1)
        complete_seqs = list()
        complete_seqs_scores = list()
        step = 1
        h, c = decoder.init_hidden_state(encoder_out)
        while True:
            embeddings = decoder.embedding(k_prev_words).squeeze(1)  # (s, embed_dim)
            awe, alpha = decoder.attention(encoder_out, h)  # (s, encoder_dim), (s, num_pixels)
            gate = decoder.sigmoid(decoder.f_beta(h))  # gating scalar, (s, encoder_dim)
            awe = gate * awe
            h, c = decoder.decode_step(torch.cat([embeddings, awe], dim=1), (h, c))  # (s, decoder_dim)
            scores = decoder.fc(h)  # (s, vocab_size)
            scores = nn.functional.log_softmax(scores, dim=1)
            scores = top_k_scores.expand_as(scores) + scores  # (s, vocab_size)
            if step == 1:
                top_k_scores, top_k_words = scores[0].topk(k, 0, True, True)  # (s)
            else:
                top_k_scores, top_k_words = scores.view(-1).topk(k, 0, True, True)  # (s)
            prev_word_inds = torch.div(top_k_words, vocab_size, rounding_mode='floor')  # (s)
            next_word_inds = top_k_words % vocab_size  # (s)
            seqs = torch.cat([seqs[prev_word_inds], next_word_inds.unsqueeze(1)], dim=1)  # (s, step+1)
            incomplete_inds = [ind for ind, next_word in enumerate(next_word_inds) if
                               next_word != word_map['<end>']]
            complete_inds = list(set(range(len(next_word_inds))) - set(incomplete_inds))
            if len(complete_inds) > 0:
                complete_seqs.extend(seqs[complete_inds].tolist())
                complete_seqs_scores.extend(top_k_scores[complete_inds])
            k -= len(complete_inds)  # reduce beam length accordingly
            if k == 0:
                break
            seqs = seqs[incomplete_inds]
            h = h[prev_word_inds[incomplete_inds]]
            c = c[prev_word_inds[incomplete_inds]]
            encoder_out = encoder_out[prev_word_inds[incomplete_inds]]
            top_k_scores = top_k_scores[incomplete_inds].unsqueeze(1)
            k_prev_words = next_word_inds[incomplete_inds].unsqueeze(1)
            if step > 1:
                break
            step += 1
        complete_seqs += seqs.tolist()
        complete_seqs_scores += list(top_k_scores.view(-1))
        i = complete_seqs_scores.index(max(complete_seqs_scores))
        best = complete_seqs[i]
    # the attention's biases shift every pixel's score alike (where the ReLU passes all of them), which softmax
    # ignores: their gradients are rounding alone, which Adam turns into full steps of either sign
    kept = [p for n, p in models.named_parameters() if not n.endswith(("_att.bias", "full_att.bias"))]
    return init, losses + best + [float(s) for s in complete_seqs_scores] + summary(kept)


def test_show_attend_and_tell():
    compare(show_attend_tell)


# (j) DeepSurv as pycox and torchtuples write it: MLPVanilla's DenseVanillaBlock (Linear, ReLU, BatchNorm1d,
# kaiming_normal_ init through .data, `if self.batch_norm:` on a module), pycox's cox_ph_loss (durations sorted
# descending, the partial likelihood's log-cumsum-exp by method chains from the max), Nesterov SGD with weight decay,
# and Harrell's concordance index by broadcast comparisons in eval mode. The loss ignores a shift of every log_h,
# so the gradients of the biases (the BatchNorm's, before the bias-free output layer) are rounding alone: SGD, not
# pycox's usual Adam, which would turn them into full steps of either sign
def deepsurv(m, state=None):
    torch, nn = m.torch, m.nn

    class DenseVanillaBlock(nn.Module):
        def __init__(self, in_features, out_features, bias=True, batch_norm=True, dropout=0., activation=nn.ReLU,
                     w_init_=lambda w: nn.init.kaiming_normal_(w, nonlinearity='relu')):
            super().__init__()
            self.linear = nn.Linear(in_features, out_features, bias)
            if w_init_:
                w_init_(self.linear.weight.data)
            self.activation = activation()
            self.batch_norm = nn.BatchNorm1d(out_features) if batch_norm else None
            self.dropout = nn.Dropout(dropout) if dropout else None

        def forward(self, input):
            input = self.activation(self.linear(input))
            if self.batch_norm:
                input = self.batch_norm(input)
            if self.dropout:
                input = self.dropout(input)
            return input

    class MLPVanilla(nn.Module):
        def __init__(self, in_features, num_nodes, out_features, batch_norm=True, dropout=None, activation=nn.ReLU,
                     output_activation=None, output_bias=True,
                     w_init_=lambda w: nn.init.kaiming_normal_(w, nonlinearity='relu')):
            super().__init__()
            num_nodes = [in_features] + list(num_nodes)
            if not hasattr(dropout, '__iter__'):
                dropout = [dropout for _ in range(len(num_nodes) - 1)]
            net = []
            for n_in, n_out, p in zip(num_nodes[:-1], num_nodes[1:], dropout):
                net.append(DenseVanillaBlock(n_in, n_out, True, batch_norm, p, activation, w_init_))
            net.append(nn.Linear(num_nodes[-1], out_features, output_bias))
            if output_activation:
                net.append(output_activation)
            self.net = nn.Sequential(*net)

        def forward(self, input):
            return self.net(input)

    def cox_ph_loss_sorted(log_h, events, eps: float = 1e-7):
        if events.dtype is torch.bool:
            events = events.float()
        events = events.view(-1)
        log_h = log_h.view(-1)
        gamma = log_h.max()
        log_cumsum_h = log_h.sub(gamma).exp().cumsum(0).add(eps).log().add(gamma)
        return - log_h.sub(log_cumsum_h).mul(events).sum().div(events.sum())

    def cox_ph_loss(log_h, durations, events, eps: float = 1e-7):
        idx = durations.sort(descending=True)[1]
        events = events[idx]
        log_h = log_h[idx]
        return cox_ph_loss_sorted(log_h, events, eps)

    class CoxPHLoss(torch.nn.Module):
        def forward(self, log_h, durations, events):
            return cox_ph_loss(log_h, durations, events)

    def concordance_index(risk, durations, events):
        comparable = (durations[:, None] < durations[None, :]) & events[:, None].bool()
        concordant = ((risk[:, None] > risk[None, :]) & comparable).sum()
        return (concordant.float() / comparable.sum()).item()

    net = MLPVanilla(5, [6], 1, batch_norm=True, dropout=0.0, output_bias=False)
    init = load(m, net, state)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    loss_fn = CoxPHLoss()
    rng = np.random.default_rng(14)
    x = torch.tensor(normal(rng, 10, 5))
    durations = torch.tensor(rng.permutation(10).astype(np.float32) + 1)  # distinct times: one sort order
    events = torch.tensor(rng.random(10) < 0.7)
    losses = []
    net.train()
    for _ in range(2):
        optimizer.zero_grad()
        loss = loss_fn(net(x), durations, events)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    net.eval()
    with torch.no_grad():
        risk = net(x).view(-1)
    losses.append(concordance_index(risk, durations, events))
    return init, losses + summary(net.parameters()) + summary(net.buffers())


def test_deepsurv_cox_partial_likelihood():
    compare(deepsurv)
