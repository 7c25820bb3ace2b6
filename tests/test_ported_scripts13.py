"""Domains the earlier files leave out, as their public code writes them: diffusion (the annotated DDPM with its
GroupNorm UNet, schedules, gather by timestep and sampling loop; NCSN's denoising and sliced score matching with
Langevin sampling; diffusers' timestep embedding, v-prediction with min-SNR weights, classifier-free guidance
and a DDIM step), Hugging Face transformers' model files (GPT-2's Conv1D, gelu_new, causal-mask buffer and
past_key_values; BERT's embeddings, extended attention mask and MLM masking; LLaMA's RMSNorm, rotary embeddings
and repeat_kv with T5's relative position buckets; BART's shifted labels, causal and expanded masks and
cross-attention; PreTrainedModel's tying, resizing, legacy-key load hooks and accelerate's keyword pre-hook),
parameter-efficient fine-tuning (loralib's merging LoRA Linear, adapters and prefix tuning), mixtures of experts
(Mixtral's top-2 block with index_add_, a Switch layer with a capacity), NeRF (positional encoding, volume
rendering, hierarchical sampling by searchsorted), segmentation (DeepLabV3's ASPP, an FCN with dice losses and
IoU), detection written inline (a RetinaNet's box utilities, anchors, matcher, box coder and sigmoid focal loss;
a YOLOv3-style head with CIoU and NMS), margin losses (ArcFace, CosFace, SphereFace), audio and time series (M5
and a 1-D ECG net, WaveNet, HiFi-GAN's weight-normed generator and discriminator, an LSTM seq2seq forecaster,
DeepSpeech2 with CTC), quantisation-aware training by hand (straight-through rounding, observers,
torch.fake_quantize_*), VQ-VAE's quantisers, CLIP's and SigLIP's losses with MAE's masking, and recommenders
(FM, NeuMF, DLRM). Written from memory in their sources' styles and ported by their imports alone, as
test_ported_scripts.py: each runs in tnet, then in torch from tnet's initial weights (state_dict through numpy),
and the losses, and the weights summed into a few numbers, agree. Numpy draws what a script draws (noise,
timesteps, masks); shapes are tiny and runs 1-3 steps. Where Adam would normalise a gradient that is rounding
alone (an attention key's bias, which softmax ignores; a bias before a BatchNorm) the layer has no bias or the
script takes SGD, as each says."""
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- diffusion ------------------------------------------------------------------------------

# (a) "The Annotated Diffusion Model" (a DDPM on MNIST-size images): linear_beta_schedule by torch.linspace and
# cosine_beta_schedule by torch.cos and torch.clip, alphas_cumprod by torch.cumprod, F.pad(alphas_cumprod[:-1],
# (1, 0), value=1.0), extract(a, t, x_shape) by a.gather(-1, t.cpu()).reshape(batch_size, *((1,) * ...)),
# SinusoidalPositionEmbeddings, a small UNet of Residual/PreNorm wrappers, Block (Conv2d, GroupNorm, SiLU,
# scale-shift from the time MLP), an Attention block by einsum over q, k, v from a 1x1 conv's chunk(3),
# Downsample by a stride-2 conv and Upsample by nn.Upsample + conv, p_losses by F.smooth_l1_loss (huber), and
# the sampling loop under torch.no_grad() (p_sample with the posterior variance); numpy draws t and the noise
def ddpm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    timesteps = 20

    def linear_beta_schedule(timesteps):
        beta_start = 0.0001
        beta_end = 0.02
        return torch.linspace(beta_start, beta_end, timesteps)

    def cosine_beta_schedule(timesteps, s=0.008):
        steps = timesteps + 1
        x = torch.linspace(0, timesteps, steps)
        alphas_cumprod = torch.cos(((x / timesteps) + s) / (1 + s) * torch.pi * 0.5) ** 2
        alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
        betas = 1 - (alphas_cumprod[1:] / alphas_cumprod[:-1])
        return torch.clip(betas, 0.0001, 0.9999)

    betas = linear_beta_schedule(timesteps=timesteps)
    alphas = 1. - betas
    alphas_cumprod = torch.cumprod(alphas, axis=0)
    alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
    sqrt_recip_alphas = torch.sqrt(1.0 / alphas)
    sqrt_alphas_cumprod = torch.sqrt(alphas_cumprod)
    sqrt_one_minus_alphas_cumprod = torch.sqrt(1. - alphas_cumprod)
    posterior_variance = betas * (1. - alphas_cumprod_prev) / (1. - alphas_cumprod)
    cosine = cosine_beta_schedule(timesteps)

    def extract(a, t, x_shape):
        batch_size = t.shape[0]
        out = a.gather(-1, t.cpu())
        return out.reshape(batch_size, *((1,) * (len(x_shape) - 1))).to(t.device)

    class Residual(nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x, *args, **kwargs):
            return self.fn(x, *args, **kwargs) + x

    class SinusoidalPositionEmbeddings(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim

        def forward(self, time):
            device = time.device
            half_dim = self.dim // 2
            embeddings = math.log(10000) / (half_dim - 1)
            embeddings = torch.exp(torch.arange(half_dim, device=device) * -embeddings)
            embeddings = time[:, None] * embeddings[None, :]
            embeddings = torch.cat((embeddings.sin(), embeddings.cos()), dim=-1)
            return embeddings

    class Block(nn.Module):
        def __init__(self, dim, dim_out, groups=4):
            super().__init__()
            self.proj = nn.Conv2d(dim, dim_out, 3, padding=1)
            self.norm = nn.GroupNorm(groups, dim_out)
            self.act = nn.SiLU()

        def forward(self, x, scale_shift=None):
            x = self.proj(x)
            x = self.norm(x)
            if scale_shift is not None:
                scale, shift = scale_shift
                x = x * (scale + 1) + shift
            x = self.act(x)
            return x

    class ResnetBlock(nn.Module):
        def __init__(self, dim, dim_out, *, time_emb_dim=None, groups=4):
            super().__init__()
            self.mlp = (nn.Sequential(nn.SiLU(), nn.Linear(time_emb_dim, dim_out * 2)) if time_emb_dim is not None else None)
            self.block1 = Block(dim, dim_out, groups=groups)
            self.block2 = Block(dim_out, dim_out, groups=groups)
            self.res_conv = nn.Conv2d(dim, dim_out, 1) if dim != dim_out else nn.Identity()

        def forward(self, x, time_emb=None):
            scale_shift = None
            if self.mlp is not None and time_emb is not None:
                time_emb = self.mlp(time_emb)
                time_emb = time_emb[:, :, None, None]  # rearrange(time_emb, "b c -> b c 1 1")
                scale_shift = time_emb.chunk(2, dim=1)
            h = self.block1(x, scale_shift=scale_shift)
            h = self.block2(h)
            return h + self.res_conv(x)

    class Attention(nn.Module):
        def __init__(self, dim, heads=2, dim_head=4):
            super().__init__()
            self.scale = dim_head ** -0.5
            self.heads = heads
            hidden_dim = dim_head * heads
            self.to_qkv = nn.Conv2d(dim, hidden_dim * 3, 1, bias=False)
            self.to_out = nn.Conv2d(hidden_dim, dim, 1)

        def forward(self, x):
            b, c, h, w = x.shape
            qkv = self.to_qkv(x).chunk(3, dim=1)
            q, k, v = map(lambda t: t.reshape(b, self.heads, -1, h * w), qkv)  # "b (h c) x y -> b h c (x y)"
            q = q * self.scale
            sim = torch.einsum("b h d i, b h d j -> b h i j", q, k)
            sim = sim - sim.amax(dim=-1, keepdim=True).detach()
            attn = sim.softmax(dim=-1)
            out = torch.einsum("b h i j, b h d j -> b h i d", attn, v)
            out = out.permute(0, 1, 3, 2).reshape(b, -1, h, w)  # "b h (x y) d -> b (h d) x y"
            return self.to_out(out)

    class PreNorm(nn.Module):
        def __init__(self, dim, fn):
            super().__init__()
            self.fn = fn
            self.norm = nn.GroupNorm(1, dim)

        def forward(self, x):
            x = self.norm(x)
            return self.fn(x)

    class Unet(nn.Module):
        def __init__(self, dim=8, channels=1):
            super().__init__()
            time_dim = dim * 4
            self.init_conv = nn.Conv2d(channels, dim, 1, padding=0)
            self.time_mlp = nn.Sequential(SinusoidalPositionEmbeddings(dim), nn.Linear(dim, time_dim), nn.GELU(),
                                          nn.Linear(time_dim, time_dim))
            self.down = ResnetBlock(dim, dim, time_emb_dim=time_dim)
            self.downsample = nn.Conv2d(dim, dim, 4, 2, 1)
            self.mid_attn = Residual(PreNorm(dim, Attention(dim)))
            self.upsample = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(dim, dim, 3, padding=1))
            self.up = ResnetBlock(dim * 2, dim, time_emb_dim=time_dim)
            self.final_conv = nn.Conv2d(dim, channels, 1)

        def forward(self, x, time):
            x = self.init_conv(x)
            t = self.time_mlp(time)
            h = self.down(x, t)
            x = self.downsample(h)
            x = self.mid_attn(x)
            x = self.upsample(x)
            x = torch.cat((x, h), dim=1)
            x = self.up(x, t)
            return self.final_conv(x)

    torch.manual_seed(0)
    model = Unet()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)

    def q_sample(x_start, t, noise=None):
        sqrt_alphas_cumprod_t = extract(sqrt_alphas_cumprod, t, x_start.shape)
        sqrt_one_minus_alphas_cumprod_t = extract(sqrt_one_minus_alphas_cumprod, t, x_start.shape)
        return sqrt_alphas_cumprod_t * x_start + sqrt_one_minus_alphas_cumprod_t * noise

    def p_losses(denoise_model, x_start, t, noise, loss_type="huber"):
        x_noisy = q_sample(x_start=x_start, t=t, noise=noise)
        predicted_noise = denoise_model(x_noisy, t)
        if loss_type == 'l1':
            loss = F.l1_loss(noise, predicted_noise)
        elif loss_type == 'l2':
            loss = F.mse_loss(noise, predicted_noise)
        elif loss_type == "huber":
            loss = F.smooth_l1_loss(noise, predicted_noise)
        else:
            raise NotImplementedError()
        return loss

    @torch.no_grad()
    def p_sample(model, x, t, t_index, noise):
        betas_t = extract(betas, t, x.shape)
        sqrt_one_minus_alphas_cumprod_t = extract(sqrt_one_minus_alphas_cumprod, t, x.shape)
        sqrt_recip_alphas_t = extract(sqrt_recip_alphas, t, x.shape)
        model_mean = sqrt_recip_alphas_t * (x - betas_t * model(x, t) / sqrt_one_minus_alphas_cumprod_t)
        if t_index == 0:
            return model_mean
        posterior_variance_t = extract(posterior_variance, t, x.shape)
        return model_mean + torch.sqrt(posterior_variance_t) * noise

    losses = [float(cosine.sum()), float(alphas_cumprod_prev[1])]
    batch_size = 2
    for step, loss_type in enumerate(["huber", "l2"]):
        optimizer.zero_grad()
        batch = torch.tensor(normal(rng, batch_size, 1, 6, 6))
        t = torch.tensor(rng.integers(0, timesteps, (batch_size,))).long()
        loss = p_losses(model, batch, t, torch.tensor(normal(rng, batch_size, 1, 6, 6)), loss_type=loss_type)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    img = torch.tensor(normal(rng, 1, 1, 6, 6))
    for i in reversed(range(0, 2)):
        img = p_sample(model, img, torch.full((1,), i, dtype=torch.long), i, torch.tensor(normal(rng, 1, 1, 6, 6)))
    assert not img.requires_grad
    losses += [float(img.mean()), float(img.std())]
    return init, losses + summary(model.parameters())


def test_ddpm_annotated_diffusion():
    compare(ddpm)


# (b) Song and Ermon's NCSN on 2-D toy data: sigmas as a geometric sequence (torch.exp(torch.linspace(log, log, L))),
# a noise-conditional MLP that divides its output by the used sigma, anneal_dsm_score_estimation (used_sigmas =
# sigmas[labels].view(...), perturbed = samples + noise * used_sigmas, target = -noise / used_sigmas ** 2, the loss
# 0.5 * ((scores - target) ** 2).sum(dim=-1) * used_sigmas.squeeze() ** 2), sliced score matching (a random
# projection v, grad1 = scores, gradv = v * grad1, loss1 = 0.5 * (v * grad1).sum(-1) ** 2, loss2 =
# torch.autograd.grad(gradv.sum(), x, create_graph=True)[0] * v summed), and annealed Langevin dynamics under
# torch.no_grad() (step_size = lr * (sigma / sigmas[-1]) ** 2, x + step_size * grad + noise * sqrt(step_size * 2));
# numpy draws the noise and the labels
def score_matching(m, state=None):
    torch, nn = m.torch, m.nn
    sigma_begin, sigma_end, num_classes = 1.0, 0.01, 4
    sigmas = torch.tensor(np.exp(np.linspace(np.log(sigma_begin), np.log(sigma_end), num_classes))).float()
    sigmas_t = torch.exp(torch.linspace(math.log(sigma_begin), math.log(sigma_end), num_classes))

    class ScoreNet(nn.Module):
        def __init__(self, hidden=16):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(2, hidden), nn.Softplus(), nn.Linear(hidden, hidden), nn.Softplus(), nn.Linear(hidden, 2))

        def forward(self, x, y):
            used_sigmas = sigmas[y].view(x.shape[0], *([1] * len(x.shape[1:])))
            return self.net(x) / used_sigmas

    def anneal_dsm_score_estimation(scorenet, samples, labels, noise, anneal_power=2.):
        used_sigmas = sigmas[labels].view(samples.shape[0], *([1] * len(samples.shape[1:])))
        perturbed_samples = samples + noise * used_sigmas
        target = - 1 / (used_sigmas ** 2) * (perturbed_samples - samples)
        scores = scorenet(perturbed_samples, labels)
        target = target.view(target.shape[0], -1)
        scores = scores.view(scores.shape[0], -1)
        loss = 1 / 2. * ((scores - target) ** 2).sum(dim=-1) * used_sigmas.squeeze() ** anneal_power
        return loss.mean(dim=0)

    def sliced_score_estimation(score_net, samples, labels, vectors):
        samples.requires_grad_(True)
        grad1 = score_net(samples, labels)
        gradv = torch.sum(grad1 * vectors)
        loss1 = torch.sum(grad1 * vectors, dim=-1) ** 2 * 0.5
        grad2 = torch.autograd.grad(gradv, samples, create_graph=True)[0]
        loss2 = torch.sum(vectors * grad2, dim=-1)
        loss = loss1 + loss2
        return loss.mean(), loss1.mean(), loss2.mean()

    torch.manual_seed(0)
    score = ScoreNet()
    init = load(m, score, state)
    optimizer = torch.optim.Adam(score.parameters(), lr=1e-3, betas=(0.9, 0.999), weight_decay=0.0)
    rng = np.random.default_rng(1)
    losses = [float(torch.abs(sigmas_t - sigmas).max() < 1e-6)]
    for step in range(2):
        X = torch.tensor(normal(rng, 8, 2) * 0.5 + 1.0)
        labels = torch.tensor(rng.integers(0, num_classes, 8))  # torch.randint(0, len(sigmas), (X.shape[0],))
        loss = anneal_dsm_score_estimation(score, X, labels, torch.tensor(normal(rng, 8, 2)))
        ssm, l1, l2 = sliced_score_estimation(score, X.clone(), labels, torch.tensor(normal(rng, 8, 2)))
        optimizer.zero_grad()
        (loss + 0.1 * ssm).backward()
        optimizer.step()
        losses += [loss.item(), ssm.item(), l1.item(), l2.item()]

    @torch.no_grad()
    def anneal_langevin_dynamics(x_mod, scorenet, sigmas, n_steps_each=2, step_lr=0.00002):
        images = []
        for c, sigma in enumerate(sigmas):
            labels = torch.ones(x_mod.shape[0], dtype=torch.long) * c
            step_size = step_lr * (sigma / sigmas[-1]) ** 2
            for s in range(n_steps_each):
                images.append(torch.clamp(x_mod, -3.0, 3.0))
                noise = torch.tensor(normal(rng, *x_mod.shape)) * torch.sqrt(step_size * 2)
                grad = scorenet(x_mod, labels)
                x_mod = x_mod + step_size * grad + noise
        return images

    images = anneal_langevin_dynamics(torch.tensor(normal(rng, 4, 2)), score, sigmas)
    losses += [float(images[-1].sum()), float(images[-1].norm()), len(images)]
    return init, losses + summary(score.parameters())


def test_ncsn_score_matching():
    compare(score_matching)


# (c) diffusers-style training and sampling: get_timestep_embedding (exponent = -math.log(max_period) *
# torch.arange(half_dim, dtype=torch.float32) / (half_dim - downscale_freq_shift), flip_sin_to_cos by torch.cat of the
# halves swapped, F.pad for an odd dim), betas_for_alpha_bar's squaredcos_cap_v2 schedule built in a loop and
# torch.tensor(betas, dtype=torch.float32), add_noise's sqrt_alpha_prod flattened and unsqueezed to the sample's
# dims, v-prediction targets (alpha * noise - sigma * sample), min-SNR-gamma loss weights (torch.stack([snr, gamma *
# torch.ones_like(timesteps)], dim=1).min(dim=1)[0] / snr) on a reduction="none" MSE meaned over all but the
# batch dim, classifier-free guidance's label dropout by torch.where(drop, null_class, labels), and a DDIM step
# (eta = 0: pred_original_sample, pred_epsilon, the "direction pointing to x_t") with guidance by chunk(2)
def diffusers_ddim(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    num_train_timesteps, num_classes = 50, 3

    def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1,
                               max_period=10000):
        assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"
        half_dim = embedding_dim // 2
        exponent = -math.log(max_period) * torch.arange(start=0, end=half_dim, dtype=torch.float32, device=timesteps.device)
        exponent = exponent / (half_dim - downscale_freq_shift)
        emb = torch.exp(exponent)
        emb = timesteps[:, None].float() * emb[None, :]
        emb = scale * emb
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
        if flip_sin_to_cos:
            emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
        if embedding_dim % 2 == 1:
            emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
        return emb

    def betas_for_alpha_bar(num_diffusion_timesteps, max_beta=0.999):
        def alpha_bar_fn(t):
            return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
        betas = []
        for i in range(num_diffusion_timesteps):
            t1 = i / num_diffusion_timesteps
            t2 = (i + 1) / num_diffusion_timesteps
            betas.append(min(1 - alpha_bar_fn(t2) / alpha_bar_fn(t1), max_beta))
        return torch.tensor(betas, dtype=torch.float32)

    betas = betas_for_alpha_bar(num_train_timesteps)
    alphas = 1.0 - betas
    alphas_cumprod = torch.cumprod(alphas, dim=0)

    def add_noise(original_samples, noise, timesteps):
        sqrt_alpha_prod = alphas_cumprod[timesteps] ** 0.5
        sqrt_alpha_prod = sqrt_alpha_prod.flatten()
        while len(sqrt_alpha_prod.shape) < len(original_samples.shape):
            sqrt_alpha_prod = sqrt_alpha_prod.unsqueeze(-1)
        sqrt_one_minus_alpha_prod = (1 - alphas_cumprod[timesteps]) ** 0.5
        sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.flatten()
        while len(sqrt_one_minus_alpha_prod.shape) < len(original_samples.shape):
            sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.unsqueeze(-1)
        return sqrt_alpha_prod * original_samples + sqrt_one_minus_alpha_prod * noise

    def get_velocity(sample, noise, timesteps):
        sqrt_alpha_prod = (alphas_cumprod[timesteps] ** 0.5).flatten()[:, None]
        sqrt_one_minus_alpha_prod = ((1 - alphas_cumprod[timesteps]) ** 0.5).flatten()[:, None]
        return sqrt_alpha_prod * noise - sqrt_one_minus_alpha_prod * sample

    def compute_snr(timesteps):
        alpha = alphas_cumprod[timesteps]
        return alpha / (1.0 - alpha)

    class Denoiser(nn.Module):
        def __init__(self, dim=4, emb_dim=9, hidden=16):
            super().__init__()
            self.emb_dim = emb_dim
            self.class_embedding = nn.Embedding(num_classes + 1, emb_dim)  # the last row is the null class
            self.time_proj = nn.Sequential(nn.Linear(emb_dim + 1, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
            self.net = nn.Sequential(nn.Linear(dim + hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

        def forward(self, sample, timestep, class_labels):
            t_emb = get_timestep_embedding(timestep, self.emb_dim + 1, flip_sin_to_cos=True, downscale_freq_shift=0)
            emb = self.time_proj(t_emb + F.pad(self.class_embedding(class_labels), (0, 1)))
            return self.net(torch.cat([sample, emb], dim=-1))

    torch.manual_seed(0)
    model = Denoiser()
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    rng = np.random.default_rng(20)
    losses = [float(alphas_cumprod[-1]), float(get_timestep_embedding(torch.arange(3), 5).sum())]
    snr_gamma = 5.0
    for step in range(2):
        clean = torch.tensor(normal(rng, 6, 4))
        labels = torch.tensor(rng.integers(0, num_classes, 6))
        drop = torch.tensor(rng.random(6) < 0.3)
        labels = torch.where(drop, torch.full_like(labels, num_classes), labels)
        noise = torch.tensor(normal(rng, 6, 4))
        timesteps = torch.tensor(rng.integers(0, num_train_timesteps, 6)).long()
        noisy = add_noise(clean, noise, timesteps)
        target = get_velocity(clean, noise, timesteps)
        model_pred = model(noisy, timesteps, labels)
        snr = compute_snr(timesteps)
        mse_loss_weights = torch.stack([snr, snr_gamma * torch.ones_like(timesteps)], dim=1).min(dim=1)[0] / (snr + 1)
        loss = F.mse_loss(model_pred.float(), target.float(), reduction="none")
        loss = loss.mean(dim=list(range(1, len(loss.shape)))) * mse_loss_weights
        loss = loss.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    @torch.no_grad()
    def ddim_sample(n=2, num_inference_steps=3, guidance_scale=2.0):
        step_ratio = num_train_timesteps // num_inference_steps
        timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.int64)
        sample = torch.tensor(normal(rng, n, 4))
        cond = torch.tensor([0, 2])
        for t in timesteps:
            latent_model_input = torch.cat([sample] * 2)
            t_batch = torch.full((2 * n,), int(t), dtype=torch.long)
            labels = torch.cat([torch.full_like(cond, num_classes), cond])
            v = model(latent_model_input, t_batch, labels)
            v_uncond, v_cond = v.chunk(2)
            v = v_uncond + guidance_scale * (v_cond - v_uncond)
            prev_t = t - step_ratio
            alpha_prod_t = alphas_cumprod[t]
            alpha_prod_t_prev = alphas_cumprod[prev_t] if prev_t >= 0 else torch.tensor(1.0)
            beta_prod_t = 1 - alpha_prod_t
            pred_original_sample = (alpha_prod_t ** 0.5) * sample - (beta_prod_t ** 0.5) * v
            pred_epsilon = (alpha_prod_t ** 0.5) * v + (beta_prod_t ** 0.5) * sample
            pred_sample_direction = (1 - alpha_prod_t_prev) ** (0.5) * pred_epsilon
            sample = alpha_prod_t_prev ** (0.5) * pred_original_sample + pred_sample_direction
        return sample

    sample = ddim_sample()
    return init, losses + [float(sample.sum()), float(sample.abs().max())] + summary(model.parameters())


def test_diffusers_ddim_guidance():
    compare(diffusers_ddim)


# ---- Hugging Face-style transformer code ----------------------------------------------------

# (d) transformers' modeling_gpt2: Conv1D (a weight of (nx, nf), torch.addmm(self.bias, x.view(-1, x.size(-1)),
# self.weight), size_out = x.size()[:-1] + (self.nf,)), gelu_new in its tanh form, the causal mask as a bool
# buffer torch.tril(torch.ones(...)).view(1, 1, n, n) (persistent=False) sliced [:, :, k - q:k, :k], torch.where
# against torch.full([], torch.finfo(dtype).min), the scale by torch.full([], v.size(-1) ** 0.5), _split_heads
# and _merge_heads, attention_mask[:, None, None, :] as (1.0 - mask) * torch.finfo(dtype).min, position_ids by
# torch.arange(past_length, ...).unsqueeze(0), lm_head tied to wte, _init_weights (normal_(std=0.02), c_proj's
# scaled by 1/sqrt(2 * n_layer)), the LM loss on shift_logits/shift_labels with -100 on the padding, AdamW over
# no_decay groups with get_linear_schedule_with_warmup as a LambdaLR, and greedy generation with past_key_values
def gpt2(m, state=None):
    torch, nn = m.torch, m.nn

    def gelu_new(input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))

    class Conv1D(nn.Module):
        def __init__(self, nf, nx):
            super().__init__()
            self.nf = nf
            self.weight = nn.Parameter(torch.empty(nx, nf))
            self.bias = nn.Parameter(torch.zeros(nf))
            nn.init.normal_(self.weight, std=0.02)

        def forward(self, x):
            size_out = x.size()[:-1] + (self.nf,)
            x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
            x = x.view(size_out)
            return x

    class GPT2Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            max_positions = config['n_positions']
            self.register_buffer("bias", torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions), persistent=False)
            self.embed_dim = config['n_embd']
            self.num_heads = config['n_head']
            self.head_dim = self.embed_dim // self.num_heads
            self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
            self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
            self.attn_dropout = nn.Dropout(0.0)
            self.resid_dropout = nn.Dropout(0.0)

        def _attn(self, query, key, value, attention_mask=None):
            attn_weights = torch.matmul(query, key.transpose(-1, -2))
            attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype,
                                                     device=attn_weights.device)
            query_length, key_length = query.size(-2), key.size(-2)
            causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
            mask_value = torch.finfo(attn_weights.dtype).min
            mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
            attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            attn_weights = attn_weights.type(value.dtype)
            attn_weights = self.attn_dropout(attn_weights)
            attn_output = torch.matmul(attn_weights, value)
            return attn_output, attn_weights

        def _split_heads(self, tensor, num_heads, attn_head_size):
            new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
            tensor = tensor.view(new_shape)
            return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

        def _merge_heads(self, tensor, num_heads, attn_head_size):
            tensor = tensor.permute(0, 2, 1, 3).contiguous()
            new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
            return tensor.view(new_shape)

        def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
            query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
            query = self._split_heads(query, self.num_heads, self.head_dim)
            key = self._split_heads(key, self.num_heads, self.head_dim)
            value = self._split_heads(value, self.num_heads, self.head_dim)
            if layer_past is not None:
                past_key, past_value = layer_past
                key = torch.cat((past_key, key), dim=-2)
                value = torch.cat((past_value, value), dim=-2)
            present = (key, value) if use_cache is True else None
            attn_output, attn_weights = self._attn(query, key, value, attention_mask)
            attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
            attn_output = self.c_proj(attn_output)
            attn_output = self.resid_dropout(attn_output)
            return attn_output, present

    class GPT2MLP(nn.Module):
        def __init__(self, intermediate_size, config):
            super().__init__()
            embed_dim = config['n_embd']
            self.c_fc = Conv1D(intermediate_size, embed_dim)
            self.c_proj = Conv1D(embed_dim, intermediate_size)
            self.act = gelu_new
            self.dropout = nn.Dropout(0.0)

        def forward(self, hidden_states):
            hidden_states = self.c_fc(hidden_states)
            hidden_states = self.act(hidden_states)
            hidden_states = self.c_proj(hidden_states)
            return self.dropout(hidden_states)

    class GPT2Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            hidden_size = config['n_embd']
            self.ln_1 = nn.LayerNorm(hidden_size, eps=config['layer_norm_epsilon'])
            self.attn = GPT2Attention(config)
            self.ln_2 = nn.LayerNorm(hidden_size, eps=config['layer_norm_epsilon'])
            self.mlp = GPT2MLP(4 * hidden_size, config)

        def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
            residual = hidden_states
            hidden_states = self.ln_1(hidden_states)
            attn_output, present = self.attn(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                                             use_cache=use_cache)
            hidden_states = attn_output + residual
            residual = hidden_states
            hidden_states = self.ln_2(hidden_states)
            feed_forward_hidden_states = self.mlp(hidden_states)
            hidden_states = residual + feed_forward_hidden_states
            return hidden_states, present

    class GPT2LMHeadModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.wte = nn.Embedding(config['vocab_size'], config['n_embd'])
            self.wpe = nn.Embedding(config['n_positions'], config['n_embd'])
            self.drop = nn.Dropout(0.0)
            self.h = nn.ModuleList([GPT2Block(config) for _ in range(config['n_layer'])])
            self.ln_f = nn.LayerNorm(config['n_embd'], eps=config['layer_norm_epsilon'])
            self.lm_head = nn.Linear(config['n_embd'], config['vocab_size'], bias=False)
            self.apply(self._init_weights)
            self.lm_head.weight = self.wte.weight

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, Conv1D)):
                module.weight.data.normal_(mean=0.0, std=0.02)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=0.02)
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)
            for name, p in module.named_parameters():
                if name == "c_proj.weight":
                    p.data.normal_(mean=0.0, std=(0.02 / math.sqrt(2 * self.config['n_layer'])))

        def forward(self, input_ids, past_key_values=None, attention_mask=None, labels=None, use_cache=False):
            input_shape = input_ids.size()
            input_ids = input_ids.view(-1, input_shape[-1])
            batch_size = input_ids.shape[0]
            if past_key_values is None:
                past_length = 0
                past_key_values = tuple([None] * len(self.h))
            else:
                past_length = past_key_values[0][0].size(-2)
            position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long, device=input_ids.device)
            position_ids = position_ids.unsqueeze(0)
            if attention_mask is not None:
                attention_mask = attention_mask.view(batch_size, -1)
                attention_mask = attention_mask[:, None, None, :]
                attention_mask = attention_mask.to(dtype=self.wte.weight.dtype)  # fp16 compatibility
                attention_mask = (1.0 - attention_mask) * torch.finfo(self.wte.weight.dtype).min
            hidden_states = self.drop(self.wte(input_ids) + self.wpe(position_ids))
            presents = () if use_cache else None
            for block, layer_past in zip(self.h, past_key_values):
                hidden_states, present = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                                               use_cache=use_cache)
                if use_cache is True:
                    presents = presents + (present,)
            hidden_states = self.ln_f(hidden_states)
            lm_logits = self.lm_head(hidden_states)
            loss = None
            if labels is not None:
                shift_logits = lm_logits[..., :-1, :].contiguous()
                shift_labels = labels[..., 1:].contiguous()
                loss_fct = nn.CrossEntropyLoss()
                loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
            return loss, lm_logits, presents

    config = dict(vocab_size=23, n_positions=16, n_embd=8, n_layer=1, n_head=2, layer_norm_epsilon=1e-5)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    init = load(m, model, state)
    assert "h.0.attn.bias" not in model.state_dict() and model.lm_head.weight is model.wte.weight
    no_decay = ["bias", "LayerNorm.weight", "ln_"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=5e-3, eps=1e-8)

    def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
        def lr_lambda(current_step):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)

    scheduler = get_linear_schedule_with_warmup(optimizer, 1, 4)
    rng = np.random.default_rng(2)
    input_ids = torch.tensor(rng.integers(0, config['vocab_size'], (2, 7)))
    attention_mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2])
    labels = input_ids.clone()
    labels[attention_mask == 0] = -100
    losses = []
    model.train()
    for step in range(2):
        loss, logits, _ = model(input_ids, attention_mask=attention_mask, labels=labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses += [loss.item(), scheduler.get_last_lr()[0]]
    model.eval()
    with torch.no_grad():
        generated = input_ids[:1, :3]
        past, next_input = None, generated
        for _ in range(2):
            _, logits, past = model(next_input, past_key_values=past, use_cache=True)
            next_token = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
            generated = torch.cat([generated, next_token], dim=-1)
            next_input = next_token
        _, full_logits, _ = model(generated[:, :-1])
    assert torch.allclose(full_logits[:, -1], logits[:, -1], atol=1e-5)
    return init, losses + generated.flatten().tolist() + summary(model.parameters())


def test_hf_gpt2():
    compare(gpt2)


# (e) transformers' modeling_bert: BertEmbeddings with a position_ids buffer torch.arange(n).expand((1, -1)) and a
# token_type_ids zeros buffer (persistent=False), padding_idx=0 on the word embeddings, LayerNorm(eps=1e-12),
# transpose_for_scores (x.size()[:-1] + (heads, head_size), view, permute(0, 2, 1, 3)), scores / math.sqrt(head
# size) + the extended attention mask (attention_mask[:, None, None, :], (1.0 - mask) * -10000.0), ACT2FN["gelu"],
# BertPooler's tanh on the first token, the MLM head's decoder tied to the word embeddings with its own bias
# Parameter, _init_weights (normal_(std=0.02), the padding row zeroed), DataCollatorForLanguageModeling's 15%
# masking with 80% [MASK], 10% random and -100 labels elsewhere (numpy draws), and a sequence-classification head
def bert(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    ACT2FN = {"gelu": F.gelu, "relu": F.relu, "gelu_new": lambda x: F.gelu(x, approximate="tanh")}
    config = dict(vocab_size=20, hidden_size=8, num_attention_heads=2, intermediate_size=16, max_position_embeddings=12,
                  type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0, hidden_act="gelu", num_labels=3)

    class BertEmbeddings(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.word_embeddings = nn.Embedding(config['vocab_size'], config['hidden_size'], padding_idx=config['pad_token_id'])
            self.position_embeddings = nn.Embedding(config['max_position_embeddings'], config['hidden_size'])
            self.token_type_embeddings = nn.Embedding(config['type_vocab_size'], config['hidden_size'])
            self.LayerNorm = nn.LayerNorm(config['hidden_size'], eps=config['layer_norm_eps'])
            self.dropout = nn.Dropout(0.0)
            self.register_buffer("position_ids", torch.arange(config['max_position_embeddings']).expand((1, -1)),
                                 persistent=False)
            self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                                 persistent=False)

        def forward(self, input_ids, token_type_ids=None):
            seq_length = input_ids.size()[1]
            position_ids = self.position_ids[:, 0:seq_length]
            if token_type_ids is None:
                buffered_token_type_ids = self.token_type_ids[:, :seq_length]
                token_type_ids = buffered_token_type_ids.expand(input_ids.size()[0], seq_length)
            embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
            embeddings += self.position_embeddings(position_ids)
            embeddings = self.LayerNorm(embeddings)
            return self.dropout(embeddings)

    class BertSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.num_attention_heads = config['num_attention_heads']
            self.attention_head_size = int(config['hidden_size'] / config['num_attention_heads'])
            self.all_head_size = self.num_attention_heads * self.attention_head_size
            self.query = nn.Linear(config['hidden_size'], self.all_head_size)
            self.key = nn.Linear(config['hidden_size'], self.all_head_size, bias=False)  # no key bias: as BART's below
            self.value = nn.Linear(config['hidden_size'], self.all_head_size)
            self.dropout = nn.Dropout(0.0)

        def transpose_for_scores(self, x):
            new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
            x = x.view(new_x_shape)
            return x.permute(0, 2, 1, 3)

        def forward(self, hidden_states, attention_mask=None):
            query_layer = self.transpose_for_scores(self.query(hidden_states))
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
            attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
            attention_scores = attention_scores / math.sqrt(self.attention_head_size)
            if attention_mask is not None:
                attention_scores = attention_scores + attention_mask
            attention_probs = nn.functional.softmax(attention_scores, dim=-1)
            attention_probs = self.dropout(attention_probs)
            context_layer = torch.matmul(attention_probs, value_layer)
            context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
            new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
            return context_layer.view(new_context_layer_shape)

    class BertLayer(nn.Module):
        def __init__(self, config):
            super().__init__()
            h = config['hidden_size']
            self.attention = BertSelfAttention(config)
            self.attention_output = nn.Linear(h, h)
            self.attention_norm = nn.LayerNorm(h, eps=config['layer_norm_eps'])
            self.intermediate = nn.Linear(h, config['intermediate_size'])
            self.intermediate_act_fn = ACT2FN[config['hidden_act']]
            self.output = nn.Linear(config['intermediate_size'], h)
            self.output_norm = nn.LayerNorm(h, eps=config['layer_norm_eps'])

        def forward(self, hidden_states, attention_mask):
            attention_output = self.attention_norm(self.attention_output(self.attention(hidden_states, attention_mask)) + hidden_states)
            intermediate_output = self.intermediate_act_fn(self.intermediate(attention_output))
            return self.output_norm(self.output(intermediate_output) + attention_output)

    class BertForMaskedLMAndClassification(nn.Module):
        def __init__(self, config):
            super().__init__()
            h = config['hidden_size']
            self.embeddings = BertEmbeddings(config)
            self.layer = BertLayer(config)
            self.pooler = nn.Linear(h, h)
            self.transform = nn.Linear(h, h)
            self.transform_norm = nn.LayerNorm(h, eps=config['layer_norm_eps'])
            self.decoder = nn.Linear(h, config['vocab_size'], bias=False)
            self.bias = nn.Parameter(torch.zeros(config['vocab_size']))
            self.decoder.bias = self.bias
            self.classifier = nn.Linear(h, config['num_labels'])
            self.apply(self._init_weights)
            self.decoder.weight = self.embeddings.word_embeddings.weight

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                module.weight.data.normal_(mean=0.0, std=0.02)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=0.02)
                if module.padding_idx is not None:
                    module.weight.data[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        def get_extended_attention_mask(self, attention_mask, dtype=torch.float32):
            extended_attention_mask = attention_mask[:, None, None, :]
            extended_attention_mask = extended_attention_mask.to(dtype=dtype)  # fp16 compatibility
            return (1.0 - extended_attention_mask) * -10000.0

        def forward(self, input_ids, attention_mask, labels=None, cls_labels=None):
            extended_attention_mask = self.get_extended_attention_mask(attention_mask)
            sequence_output = self.layer(self.embeddings(input_ids), extended_attention_mask)
            pooled_output = torch.tanh(self.pooler(sequence_output[:, 0]))
            prediction_scores = self.decoder(self.transform_norm(F.gelu(self.transform(sequence_output))))
            loss_fct = nn.CrossEntropyLoss()  # -100 index = padding token
            masked_lm_loss = loss_fct(prediction_scores.view(-1, config['vocab_size']), labels.view(-1))
            logits = self.classifier(pooled_output)
            cls_loss = loss_fct(logits.view(-1, config['num_labels']), cls_labels.view(-1))
            return masked_lm_loss, cls_loss

    def torch_mask_tokens(inputs, special_tokens_mask, rng, mlm_probability=0.15, mask_token_id=1):
        labels = inputs.clone()
        probability_matrix = torch.full(labels.shape, mlm_probability)
        probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
        masked_indices = torch.tensor(rng.random(labels.shape) < probability_matrix.numpy())  # torch.bernoulli
        labels[~masked_indices] = -100  # We only compute loss on masked tokens
        indices_replaced = torch.tensor(rng.random(labels.shape) < 0.8) & masked_indices
        inputs[indices_replaced] = mask_token_id
        indices_random = torch.tensor(rng.random(labels.shape) < 0.5) & masked_indices & ~indices_replaced
        random_words = torch.tensor(rng.integers(0, config['vocab_size'], labels.shape))
        inputs[indices_random] = random_words[indices_random]
        return inputs, labels

    torch.manual_seed(0)
    model = BertForMaskedLMAndClassification(config)
    init = load(m, model, state)
    assert model.embeddings.word_embeddings.weight[0].abs().sum().item() == 0
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    rng = np.random.default_rng(3)
    ids = rng.integers(2, config['vocab_size'], (3, 8))
    ids[1, 6:] = 0
    input_ids = torch.tensor(ids)
    attention_mask = (input_ids != config['pad_token_id']).long()
    special = input_ids == 0
    losses = []
    for step in range(2):
        inputs, labels = torch_mask_tokens(input_ids.clone(), special, rng, mlm_probability=0.4)
        mlm, cls = model(inputs, attention_mask, labels, torch.tensor([0, 2, 1]))
        optimizer.zero_grad()
        (mlm + cls).backward()
        optimizer.step()
        losses += [mlm.item(), cls.item(), int((labels != -100).sum())]
    return init, losses + summary(model.parameters())


def test_hf_bert():
    compare(bert)


# (f) the LLaMA and T5 files of transformers: T5LayerNorm / LlamaRMSNorm (variance = hidden_states.to(torch.float32)
# .pow(2).mean(-1, keepdim=True), hidden_states * torch.rsqrt(variance + eps), back to the input dtype), rotary
# embeddings (inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)) as a buffer, torch.outer, cos and
# sin of cat((freqs, freqs), -1), rotate_half by slicing and cat((-x2, x1))), repeat_kv's expand + reshape for
# grouped-query attention, a causal mask by torch.full((n, n), torch.finfo(dtype).min).triu(1), SwiGLU's
# down_proj(act_fn(gate_proj(x)) * up_proj(x)) with F.silu, and T5's _relative_position_bucket (torch.abs,
# torch.log of a float ratio, .to(torch.long), torch.min against torch.full_like, torch.where) for a bias table
def llama_t5(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    hidden, n_heads, n_kv_heads, seq = 8, 4, 2, 6
    head_dim = hidden // n_heads

    class LlamaRMSNorm(nn.Module):
        def __init__(self, hidden_size, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden_size))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            input_dtype = hidden_states.dtype
            hidden_states = hidden_states.to(torch.float32)
            variance = hidden_states.pow(2).mean(-1, keepdim=True)
            hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
            return self.weight * hidden_states.to(input_dtype)

    class LlamaRotaryEmbedding(nn.Module):
        def __init__(self, dim, max_position_embeddings=16, base=10000):
            super().__init__()
            inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
            self.register_buffer("inv_freq", inv_freq, persistent=False)
            t = torch.arange(max_position_embeddings, dtype=self.inv_freq.dtype)
            freqs = torch.outer(t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self.register_buffer("cos_cached", emb.cos().to(torch.get_default_dtype()), persistent=False)
            self.register_buffer("sin_cached", emb.sin().to(torch.get_default_dtype()), persistent=False)

        def forward(self, x, seq_len=None):
            return self.cos_cached[:seq_len].to(dtype=x.dtype), self.sin_cached[:seq_len].to(dtype=x.dtype)

    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def apply_rotary_pos_emb(q, k, cos, sin, position_ids, unsqueeze_dim=1):
        cos = cos[position_ids].unsqueeze(unsqueeze_dim)
        sin = sin[position_ids].unsqueeze(unsqueeze_dim)
        q_embed = (q * cos) + (rotate_half(q) * sin)
        k_embed = (k * cos) + (rotate_half(k) * sin)
        return q_embed, k_embed

    def repeat_kv(hidden_states, n_rep):
        batch, num_key_value_heads, slen, head_dim = hidden_states.shape
        if n_rep == 1:
            return hidden_states
        hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
        return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)

    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=8, max_distance=16):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = LlamaRMSNorm(hidden)
            self.q_proj = nn.Linear(hidden, n_heads * head_dim, bias=False)
            self.k_proj = nn.Linear(hidden, n_kv_heads * head_dim, bias=False)
            self.v_proj = nn.Linear(hidden, n_kv_heads * head_dim, bias=False)
            self.o_proj = nn.Linear(n_heads * head_dim, hidden, bias=False)
            self.rotary_emb = LlamaRotaryEmbedding(head_dim)
            self.relative_attention_bias = nn.Embedding(8, n_heads)
            self.post_attention_layernorm = LlamaRMSNorm(hidden)
            self.gate_proj = nn.Linear(hidden, 12, bias=False)
            self.up_proj = nn.Linear(hidden, 12, bias=False)
            self.down_proj = nn.Linear(12, hidden, bias=False)
            self.act_fn = F.silu

        def compute_bias(self, query_length, key_length):
            context_position = torch.arange(query_length, dtype=torch.long)[:, None]
            memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
            relative_position = memory_position - context_position  # shape (query_length, key_length)
            relative_position_bucket = _relative_position_bucket(relative_position, bidirectional=False)
            values = self.relative_attention_bias(relative_position_bucket)
            return values.permute([2, 0, 1]).unsqueeze(0)  # shape (1, num_heads, query_length, key_length)

        def forward(self, x, position_ids):
            bsz, q_len, _ = x.size()
            residual = x
            x = self.input_layernorm(x)
            q = self.q_proj(x).view(bsz, q_len, n_heads, head_dim).transpose(1, 2)
            k = self.k_proj(x).view(bsz, q_len, n_kv_heads, head_dim).transpose(1, 2)
            v = self.v_proj(x).view(bsz, q_len, n_kv_heads, head_dim).transpose(1, 2)
            cos, sin = self.rotary_emb(v, seq_len=q_len)
            q, k = apply_rotary_pos_emb(q, k, cos, sin, position_ids)
            k, v = repeat_kv(k, n_heads // n_kv_heads), repeat_kv(v, n_heads // n_kv_heads)
            attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head_dim)
            causal_mask = torch.full((q_len, q_len), torch.finfo(x.dtype).min).triu(1)
            attn_weights = attn_weights + causal_mask[None, None] + self.compute_bias(q_len, q_len)
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
            attn_output = torch.matmul(attn_weights, v).transpose(1, 2).contiguous().reshape(bsz, q_len, hidden)
            x = residual + self.o_proj(attn_output)
            residual = x
            x = self.post_attention_layernorm(x)
            return residual + self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

    torch.manual_seed(0)
    model = nn.ModuleDict(dict(embed_tokens=nn.Embedding(16, hidden), layer=Block(), norm=LlamaRMSNorm(hidden)))
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1)
    rng = np.random.default_rng(4)
    ids = torch.tensor(rng.integers(0, 16, (2, seq)))
    position_ids = torch.arange(0, seq, dtype=torch.long).unsqueeze(0)
    losses = [_relative_position_bucket(torch.arange(-20, 20)[None, :], bidirectional=True).sum().item()]
    for step in range(2):
        h = model['norm'](model['layer'](model['embed_tokens'](ids), position_ids))
        logits = F.linear(h, model['embed_tokens'].weight)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, 16), ids[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_hf_llama_t5():
    compare(llama_t5)


# (g) transformers' BART/Marian pieces: shift_tokens_right (input_ids.new_zeros, a clone of input_ids[:, :-1] into
# [:, 1:], the decoder start token, masked_fill_(shifted == -100, pad_token_id)), _make_causal_mask (torch.full((tgt_len,
# tgt_len), torch.finfo(dtype).min), mask_cond < (mask_cond + 1).view(mask.size(-1), 1), masked_fill_ with 0,
# [None, None, :, :].expand), _expand_mask (inverted_mask = 1.0 - expanded_mask, masked_fill(inverted_mask.to(
# torch.bool), torch.finfo(dtype).min)), scaled queries (q_proj(x) * self.scaling), _shape by view + transpose +
# contiguous, bmm over (bsz * num_heads, tgt_len, head_dim), cross-attention over the encoder's states, the
# decoder's learned positions with an offset of 2, scale_embedding's sqrt(d_model), and final_logits_bias as a
# registered buffer of zeros added to the tied lm_head's logits; the loss with labels of -100 at the padding
def bart(m, state=None):
    torch, nn = m.torch, m.nn
    d_model, heads, vocab, pad_token_id, decoder_start_token_id = 8, 2, 15, 1, 2

    def shift_tokens_right(input_ids, pad_token_id, decoder_start_token_id):
        shifted_input_ids = input_ids.new_zeros(input_ids.shape)
        shifted_input_ids[:, 1:] = input_ids[:, :-1].clone()
        shifted_input_ids[:, 0] = decoder_start_token_id
        shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)
        return shifted_input_ids

    def _make_causal_mask(input_ids_shape, dtype, past_key_values_length=0):
        bsz, tgt_len = input_ids_shape
        mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
        mask_cond = torch.arange(mask.size(-1))
        mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
        mask = mask.to(dtype)
        return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)

    def _expand_mask(mask, dtype, tgt_len=None):
        bsz, src_len = mask.size()
        tgt_len = tgt_len if tgt_len is not None else src_len
        expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
        inverted_mask = 1.0 - expanded_mask
        return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)

    class BartAttention(nn.Module):
        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads = embed_dim, num_heads
            self.head_dim = embed_dim // num_heads
            self.scaling = self.head_dim ** -0.5
            # no key bias (BART's has one): softmax ignores it, so its gradient is rounding alone, which Adam
            # would turn into full steps of different signs in tnet and torch
            self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
            self.v_proj = nn.Linear(embed_dim, embed_dim)
            self.q_proj = nn.Linear(embed_dim, embed_dim)
            self.out_proj = nn.Linear(embed_dim, embed_dim)

        def _shape(self, tensor, seq_len, bsz):
            return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

        def forward(self, hidden_states, key_value_states=None, attention_mask=None):
            bsz, tgt_len, _ = hidden_states.size()
            query_states = self.q_proj(hidden_states) * self.scaling
            kv = hidden_states if key_value_states is None else key_value_states
            key_states = self._shape(self.k_proj(kv), -1, bsz)
            value_states = self._shape(self.v_proj(kv), -1, bsz)
            proj_shape = (bsz * self.num_heads, -1, self.head_dim)
            query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
            key_states = key_states.reshape(*proj_shape)
            value_states = value_states.reshape(*proj_shape)
            src_len = key_states.size(1)
            attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
            if attention_mask is not None:
                attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
                attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            attn_output = torch.bmm(attn_weights, value_states)
            attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2)
            attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
            return self.out_proj(attn_output)

    class BartLearnedPositionalEmbedding(nn.Embedding):
        def __init__(self, num_embeddings, embedding_dim):
            self.offset = 2
            super().__init__(num_embeddings + self.offset, embedding_dim)

        def forward(self, input_ids, past_key_values_length=0):
            bsz, seq_len = input_ids.shape[:2]
            positions = torch.arange(past_key_values_length, past_key_values_length + seq_len, dtype=torch.long,
                                     device=self.weight.device).expand(bsz, -1)
            return super().forward(positions + self.offset)

    class Bart(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = nn.Embedding(vocab, d_model, pad_token_id)
            self.embed_scale = math.sqrt(d_model)
            self.enc_pos = BartLearnedPositionalEmbedding(16, d_model)
            self.dec_pos = BartLearnedPositionalEmbedding(16, d_model)
            self.enc_attn, self.enc_ln = BartAttention(d_model, heads), nn.LayerNorm(d_model)
            self.self_attn, self.self_ln = BartAttention(d_model, heads), nn.LayerNorm(d_model)
            self.cross_attn, self.cross_ln = BartAttention(d_model, heads), nn.LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab, bias=False)
            self.lm_head.weight = self.shared.weight
            self.register_buffer("final_logits_bias", torch.zeros((1, vocab)))

        def forward(self, input_ids, attention_mask, labels):
            x = self.shared(input_ids) * self.embed_scale + self.enc_pos(input_ids)
            enc_mask = _expand_mask(attention_mask, x.dtype)
            enc = self.enc_ln(x + self.enc_attn(x, attention_mask=enc_mask))
            decoder_input_ids = shift_tokens_right(labels, pad_token_id, decoder_start_token_id)
            y = self.shared(decoder_input_ids) * self.embed_scale + self.dec_pos(decoder_input_ids)
            causal = _make_causal_mask(decoder_input_ids.shape, y.dtype)
            y = self.self_ln(y + self.self_attn(y, attention_mask=causal))
            cross_mask = _expand_mask(attention_mask, y.dtype, tgt_len=decoder_input_ids.shape[-1])
            y = self.cross_ln(y + self.cross_attn(y, key_value_states=enc, attention_mask=cross_mask))
            lm_logits = self.lm_head(y) + self.final_logits_bias.to(y.device)
            loss_fct = nn.CrossEntropyLoss()
            return loss_fct(lm_logits.view(-1, vocab), labels.view(-1)), lm_logits

    torch.manual_seed(0)
    model = Bart()
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(21)
    input_ids = torch.tensor(rng.integers(3, vocab, (2, 6)))
    input_ids[1, 4:] = pad_token_id
    attention_mask = input_ids.ne(pad_token_id).long()
    labels = torch.tensor(rng.integers(3, vocab, (2, 5)))
    labels[0, 4:] = -100
    losses = []
    for step in range(2):
        loss, logits = model(input_ids, attention_mask, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + shift_tokens_right(labels, pad_token_id, decoder_start_token_id).flatten().tolist() + \
        summary(model.parameters())


def test_hf_bart_masks():
    compare(bart)


# (h) transformers' PreTrainedModel machinery around a tiny model: post_init's self.apply(self._init_weights),
# tie_weights (output_embeddings.weight = input_embeddings.weight), resize_token_embeddings (a new nn.Embedding
# with the old rows copied through .data and the new ones at their mean, then re-tied), the legacy key fixes
# of from_pretrained as a load_state_dict pre-hook (LayerNorm's "gamma"/"beta" renamed to weight/bias), the tied
# lm_head's key taken out of missing_keys by a post-hook (_tied_weights_keys), accelerate's forward pre-hook with
# kwargs (with_kwargs=True: it fills in attention_mask), is_torchdynamo_compiling() by torch.compiler.is_compiling(),
# torch.jit.is_tracing(), gradient checkpointing by torch.utils.checkpoint.checkpoint(..., use_reentrant=False),
# num_parameters(exclude_embeddings=True), and get_input_embeddings / get_output_embeddings
def pretrained_machinery(m, state=None):
    import importlib
    torch, nn, F = m.torch, m.nn, m.F
    checkpoint = importlib.import_module(torch.__name__ + ".utils.checkpoint").checkpoint
    hidden = 6

    def is_torchdynamo_compiling():
        return torch.compiler.is_compiling()

    class TinyPreTrainedModel(nn.Module):
        _tied_weights_keys = ["lm_head.weight"]

        def __init__(self, vocab_size=9):
            super().__init__()
            self.vocab_size = vocab_size
            self.gradient_checkpointing = False
            self.embed_tokens = nn.Embedding(vocab_size, hidden)
            self.layers = nn.ModuleList([nn.Sequential(nn.Linear(hidden, hidden), nn.GELU()) for _ in range(2)])
            self.norm = nn.LayerNorm(hidden)
            self.lm_head = nn.Linear(hidden, vocab_size, bias=False)
            self.post_init()

        def post_init(self):
            self.apply(self._init_weights)
            self.tie_weights()

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                module.weight.data.normal_(mean=0.0, std=0.2)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=0.2)

        def get_input_embeddings(self):
            return self.embed_tokens

        def get_output_embeddings(self):
            return self.lm_head

        def tie_weights(self):
            self.get_output_embeddings().weight = self.get_input_embeddings().weight

        def resize_token_embeddings(self, new_num_tokens):
            old_embeddings = self.get_input_embeddings()
            old_num_tokens, old_embedding_dim = old_embeddings.weight.size()
            new_embeddings = nn.Embedding(new_num_tokens, old_embedding_dim)
            self._init_weights(new_embeddings)
            n = min(old_num_tokens, new_num_tokens)
            new_embeddings.weight.data[:n, :] = old_embeddings.weight.data[:n, :]
            # the added tokens start at the old embeddings' mean (a common choice for new special tokens)
            new_embeddings.weight.data[n:, :] = old_embeddings.weight.data.mean(dim=0, keepdim=True)
            self.embed_tokens = new_embeddings
            self.lm_head = nn.Linear(old_embedding_dim, new_num_tokens, bias=False)
            self.vocab_size = new_num_tokens
            self.tie_weights()
            return self.get_input_embeddings()

        def num_parameters(self, only_trainable=False, exclude_embeddings=False):
            embedding_param_names = [f"{name}.weight" for name, module_type in self.named_modules()
                                     if isinstance(module_type, nn.Embedding)] if exclude_embeddings else []
            return sum(p.numel() for n, p in self.named_parameters()
                       if n not in embedding_param_names and (p.requires_grad or not only_trainable))

        def forward(self, input_ids, attention_mask=None, labels=None):
            assert attention_mask is not None  # accelerate's hook fills it in
            assert not is_torchdynamo_compiling() and not torch.jit.is_tracing()
            h = self.embed_tokens(input_ids)
            for layer in self.layers:
                if self.gradient_checkpointing and self.training:
                    h = h + checkpoint(layer, h, use_reentrant=False)
                else:
                    h = h + layer(h)
            h = self.norm(h) * attention_mask[..., None]
            logits = self.lm_head(h)
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, self.vocab_size), labels[:, 1:].reshape(-1), ignore_index=-100)
            return loss, logits

    def _fix_key(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        for key in list(state_dict):
            if key.startswith(prefix) and key.endswith("gamma"):
                state_dict[key[:-len("gamma")] + "weight"] = state_dict.pop(key)
            elif key.startswith(prefix) and key.endswith("beta"):
                state_dict[key[:-len("beta")] + "bias"] = state_dict.pop(key)

    def _drop_tied(module, incompatible_keys):
        for key in module._tied_weights_keys:
            if key in incompatible_keys.missing_keys:
                incompatible_keys.missing_keys.remove(key)

    def align_hook(module, args, kwargs):  # accelerate's AlignDevicesHook.pre_forward, in spirit
        if kwargs.get("attention_mask") is None:
            kwargs["attention_mask"] = torch.ones_like(args[0] if args else kwargs["input_ids"]).float()
        return args, kwargs

    torch.manual_seed(0)
    model = TinyPreTrainedModel()
    init = load(m, model, state)
    # a checkpoint in the legacy spelling, without the tied head
    legacy = {k.replace("norm.weight", "norm.gamma").replace("norm.bias", "norm.beta"): v.clone()
              for k, v in model.state_dict().items() if k != "lm_head.weight"}
    model.norm._register_load_state_dict_pre_hook(_fix_key)
    model.register_load_state_dict_post_hook(_drop_tied)
    result = model.load_state_dict(legacy, strict=True)
    assert result.missing_keys == [] and result.unexpected_keys == []
    model.register_forward_pre_hook(align_hook, with_kwargs=True)
    n_params = [model.num_parameters(), model.num_parameters(exclude_embeddings=True)]
    model.resize_token_embeddings(11)
    assert model.lm_head.weight is model.embed_tokens.weight
    model.gradient_checkpointing = True
    model.train()
    rng = np.random.default_rng(25)
    ids = torch.tensor(rng.integers(0, 11, (2, 5)))
    labels = ids.clone()
    labels[1, 3:] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = n_params
    for step in range(2):
        loss, _ = model(ids, labels=labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_hf_pretrained_machinery():
    compare(pretrained_machinery)


# ---- parameter-efficient fine-tuning ----------------------------------------------------------

# (i) microsoft/LoRA's loralib: LoRALayer's bookkeeping, Linear(nn.Linear, LoRALayer) with lora_A and lora_B as
# weight.new_zeros((r, in)) Parameters, scaling = lora_alpha / r, reset_parameters (nn.Linear's, then
# kaiming_uniform_(lora_A, a=math.sqrt(5)) and zeros_(lora_B)), fan_in_fan_out's transpose helper T, train(mode)
# that unmerges and eval() that merges (self.weight.data += T(lora_B @ lora_A) * scaling), forward by F.linear plus
# (dropout(x) @ A.transpose(0, 1) @ B.transpose(0, 1)) * scaling, mark_only_lora_as_trainable (requires_grad by
# name, bias='lora_only'), lora_state_dict's filtered dict, and PEFT's requires_grad_(False) on a frozen base
def lora(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class LoRALayer():
        def __init__(self, r, lora_alpha, lora_dropout, merge_weights):
            self.r = r
            self.lora_alpha = lora_alpha
            self.lora_dropout = nn.Dropout(p=lora_dropout) if lora_dropout > 0. else (lambda x: x)
            self.merged = False
            self.merge_weights = merge_weights

    class Linear(nn.Linear, LoRALayer):
        def __init__(self, in_features, out_features, r=0, lora_alpha=1, lora_dropout=0., fan_in_fan_out=False,
                     merge_weights=True, **kwargs):
            nn.Linear.__init__(self, in_features, out_features, **kwargs)
            LoRALayer.__init__(self, r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout, merge_weights=merge_weights)
            self.fan_in_fan_out = fan_in_fan_out
            if r > 0:
                self.lora_A = nn.Parameter(self.weight.new_zeros((r, in_features)))
                self.lora_B = nn.Parameter(self.weight.new_zeros((out_features, r)))
                self.scaling = self.lora_alpha / self.r
                self.weight.requires_grad = False  # Freezing the pre-trained weight matrix
            self.reset_parameters()
            if fan_in_fan_out:
                self.weight.data = self.weight.data.transpose(0, 1)

        def reset_parameters(self):
            nn.Linear.reset_parameters(self)
            if hasattr(self, 'lora_A'):
                nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
                nn.init.zeros_(self.lora_B)

        def train(self, mode=True):
            def T(w):
                return w.transpose(0, 1) if self.fan_in_fan_out else w
            nn.Linear.train(self, mode)
            if mode:
                if self.merge_weights and self.merged:
                    if self.r > 0:  # Make sure that the weights are not merged
                        self.weight.data -= T(self.lora_B @ self.lora_A) * self.scaling
                    self.merged = False
            else:
                if self.merge_weights and not self.merged:
                    if self.r > 0:  # Merge the weights and mark it
                        self.weight.data += T(self.lora_B @ self.lora_A) * self.scaling
                    self.merged = True
            return self

        def forward(self, x):
            def T(w):
                return w.transpose(0, 1) if self.fan_in_fan_out else w
            if self.r > 0 and not self.merged:
                result = F.linear(x, T(self.weight), bias=self.bias)
                result += (self.lora_dropout(x) @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling
                return result
            return F.linear(x, T(self.weight), bias=self.bias)

    def mark_only_lora_as_trainable(model, bias='none'):
        for n, p in model.named_parameters():
            if 'lora_' not in n:
                p.requires_grad = False
        if bias == 'lora_only':
            for mod in model.modules():
                if isinstance(mod, LoRALayer) and hasattr(mod, 'bias') and mod.bias is not None:
                    mod.bias.requires_grad = True

    def lora_state_dict(model, bias='none'):
        my_state_dict = model.state_dict()
        return {k: my_state_dict[k] for k in my_state_dict if 'lora_' in k}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(6, 8)
            self.q = Linear(8, 8, r=2, lora_alpha=4)
            self.c_attn = Linear(8, 8, r=2, lora_alpha=8, fan_in_fan_out=True)
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            h = torch.tanh(self.embed(x))
            return self.head(F.gelu(self.q(h)) + self.c_attn(h))

    torch.manual_seed(0)
    model = Net()
    with torch.no_grad():  # a "fine-tuned" B, so that merging changes the weights
        model.q.lora_B.copy_(torch.full((8, 2), 0.05))
    init = load(m, model, state)
    mark_only_lora_as_trainable(model, bias='lora_only')
    model.head.requires_grad_(True)
    model.embed.requires_grad_(False)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable == ['q.bias', 'q.lora_A', 'q.lora_B', 'c_attn.bias', 'c_attn.lora_A', 'c_attn.lora_B',
                         'head.weight', 'head.bias'], trainable
    optimizer = torch.optim.AdamW(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-2)
    rng = np.random.default_rng(5)
    x, y = torch.tensor(normal(rng, 5, 6)), torch.tensor(rng.integers(0, 3, 5))
    losses = []
    frozen = model.q.weight.detach().clone()
    for step in range(2):
        model.train()
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        assert model.q.weight.grad is None and model.embed.weight.grad is None
        model.eval()
        with torch.no_grad():
            merged_out = model(x)
        losses.append(float(merged_out.sum()))
    assert model.q.merged and not torch.equal(model.q.weight, frozen)
    model.train()
    assert torch.allclose(model.q.weight, frozen, atol=1e-6)
    sd = lora_state_dict(model)
    assert sorted(sd) == ['c_attn.lora_A', 'c_attn.lora_B', 'q.lora_A', 'q.lora_B']
    return init, losses + summary(model.parameters())


def test_loralib_lora():
    compare(lora)


# (j) Houlsby adapters and prefix tuning (Li and Liang, PEFT's PrefixEncoder): a frozen base encoder layer
# (base.requires_grad_(False)), a bottleneck adapter (down_project, an activation, up_project initialised to
# zeros, a residual) after attention and after the feed-forward, and a prefix encoder: an nn.Embedding of
# num_virtual_tokens rows through a Linear-Tanh-Linear reparameterisation, viewed as (batch, tokens, layers * 2,
# heads, head_dim), permute([2, 0, 3, 1, 4]).split(2) into per-layer past keys and values concatenated in front
# of the keys and values; the attention mask is extended with ones for the prefix, and only the new parameters
# (sum(p.numel() for p if p.requires_grad) counted, as print_trainable_parameters) are trained
def adapters_prefix(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    hidden, heads, num_virtual_tokens, n_layers = 8, 2, 3, 1
    head_dim = hidden // heads

    class Adapter(nn.Module):
        def __init__(self, size, bottleneck=3):
            super().__init__()
            self.down_project = nn.Linear(size, bottleneck)
            self.activation = nn.ReLU()
            self.up_project = nn.Linear(bottleneck, size)
            nn.init.normal_(self.down_project.weight, std=1e-2)
            nn.init.zeros_(self.down_project.bias)
            nn.init.zeros_(self.up_project.weight)
            nn.init.zeros_(self.up_project.bias)

        def forward(self, x):
            return x + self.up_project(self.activation(self.down_project(x)))

    class PrefixEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(num_virtual_tokens, hidden)
            self.transform = nn.Sequential(nn.Linear(hidden, 12), nn.Tanh(), nn.Linear(12, n_layers * 2 * hidden))

        def forward(self, prefix):
            prefix_tokens = self.embedding(prefix)
            return self.transform(prefix_tokens)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.out = nn.Linear(hidden, hidden)
            self.norm1 = nn.LayerNorm(hidden)
            self.ff = nn.Sequential(nn.Linear(hidden, 16), nn.GELU(), nn.Linear(16, hidden))
            self.norm2 = nn.LayerNorm(hidden)
            self.adapter1 = Adapter(hidden)
            self.adapter2 = Adapter(hidden)

        def forward(self, x, mask, past_key_value):
            B, L, _ = x.shape
            q, k, v = self.qkv(x).view(B, L, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
            if past_key_value is not None:
                k = torch.cat([past_key_value[0], k], dim=2)
                v = torch.cat([past_key_value[1], v], dim=2)
            scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
            scores = scores.masked_fill(mask[:, None, None, :] == 0, float('-inf'))
            a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, L, hidden)
            x = self.norm1(x + self.adapter1(self.out(a)))
            return self.norm2(x + self.adapter2(self.ff(x)))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(12, hidden)
            self.layer = Layer()
            self.classifier = nn.Linear(hidden, 2)
            self.prefix_encoder = PrefixEncoder()
            self.register_buffer("prefix_tokens", torch.arange(num_virtual_tokens).long())

        def get_prompt(self, batch_size):
            prefix_tokens = self.prefix_tokens.unsqueeze(0).expand(batch_size, -1)
            past_key_values = self.prefix_encoder(prefix_tokens)
            past_key_values = past_key_values.view(batch_size, num_virtual_tokens, n_layers * 2, heads, head_dim)
            past_key_values = past_key_values.permute([2, 0, 3, 1, 4]).split(2)
            return past_key_values

        def forward(self, ids, attention_mask):
            batch_size = ids.shape[0]
            past_key_values = self.get_prompt(batch_size=batch_size)
            prefix_attention_mask = torch.ones(batch_size, num_virtual_tokens)
            attention_mask = torch.cat((prefix_attention_mask, attention_mask), dim=1)
            h = self.layer(self.embed(ids), attention_mask, past_key_values[0])
            pooled = (h * attention_mask[:, num_virtual_tokens:, None]).sum(1) / attention_mask[:, num_virtual_tokens:].sum(1, keepdim=True)
            return self.classifier(pooled)

    torch.manual_seed(0)
    model = Model()
    init = load(m, model, state)
    for n, p in model.named_parameters():
        p.requires_grad_('adapter' in n or 'prefix_encoder' in n or 'classifier' in n or 'norm' in n)
    model.embed.requires_grad_(False)
    trainable_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    all_param = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    rng = np.random.default_rng(6)
    ids = torch.tensor(rng.integers(0, 12, (3, 5)))
    attention_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]).float()
    y = torch.tensor([0, 1, 1])
    losses = [trainable_params, all_param]
    for step in range(2):
        loss = F.cross_entropy(model(ids, attention_mask), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert model.layer.qkv.weight.grad is None
    return init, losses + summary(model.parameters())


def test_adapters_prefix_tuning():
    compare(adapters_prefix)


# ---- mixture of experts ---------------------------------------------------------------------

# (k) transformers' MixtralSparseMoeBlock: router logits by a Linear, routing_weights = F.softmax(router_logits,
# dim=1, dtype=torch.float), torch.topk, renormalised by their sum, expert_mask = F.one_hot(selected_experts,
# num_classes=n).permute(2, 1, 0), for each expert idx, top_x = torch.where(expert_mask[expert_idx]), the tokens
# hidden_states[None, top_x].reshape(-1, hidden_dim) through the expert, scaled by routing_weights[top_x, idx,
# None] and final_hidden_states.index_add_(0, top_x, ...), plus load_balancing_loss_func (the mean of the one-hot
# selections times the mean router probability, summed, times num_experts) and the router z-loss (logsumexp ** 2)
def mixtral_moe(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    hidden_dim, ffn_dim, num_experts, top_k = 8, 12, 4, 2

    class MixtralBlockSparseTop2MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Linear(hidden_dim, ffn_dim, bias=False)
            self.w2 = nn.Linear(ffn_dim, hidden_dim, bias=False)
            self.w3 = nn.Linear(hidden_dim, ffn_dim, bias=False)
            self.act_fn = nn.SiLU()

        def forward(self, hidden_states):
            current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
            return self.w2(current_hidden_states)

    class MixtralSparseMoeBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(hidden_dim, num_experts, bias=False)
            self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP() for _ in range(num_experts)])

        def forward(self, hidden_states):
            batch_size, sequence_length, hidden_dim = hidden_states.shape
            hidden_states = hidden_states.view(-1, hidden_dim)
            router_logits = self.gate(hidden_states)
            routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
            routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
            routing_weights = routing_weights.to(hidden_states.dtype)
            final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype,
                                              device=hidden_states.device)
            expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=num_experts).permute(2, 1, 0)
            for expert_idx in range(num_experts):
                expert_layer = self.experts[expert_idx]
                idx, top_x = torch.where(expert_mask[expert_idx])
                if top_x.shape[0] == 0:
                    continue
                current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
                current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
                final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
            final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
            return final_hidden_states, router_logits

    def load_balancing_loss_func(gate_logits, num_experts=None, top_k=2):
        compute_device = gate_logits[0].device
        concatenated_gate_logits = torch.cat([layer_gate.to(compute_device) for layer_gate in gate_logits], dim=0)
        routing_weights = torch.nn.functional.softmax(concatenated_gate_logits, dim=-1)
        _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_experts)
        tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
        router_prob_per_expert = torch.mean(routing_weights, dim=0)
        overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
        return overall_loss * num_experts

    torch.manual_seed(0)
    model = nn.ModuleDict(dict(embed=nn.Embedding(10, hidden_dim), moe=MixtralSparseMoeBlock(), head=nn.Linear(hidden_dim, 10)))
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(7)
    ids = torch.tensor(rng.integers(0, 10, (2, 5)))
    losses = []
    for step in range(2):
        h, router_logits = model['moe'](model['embed'](ids))
        logits = model['head'](h)
        ce = F.cross_entropy(logits.view(-1, 10), ids.view(-1))
        aux = load_balancing_loss_func((router_logits,), num_experts, top_k)
        z_loss = torch.logsumexp(router_logits, dim=-1).pow(2).mean()
        loss = ce + 0.02 * aux + 1e-3 * z_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [ce.item(), aux.item(), z_loss.item()]
    return init, losses + summary(model.parameters())


def test_mixtral_moe():
    compare(mixtral_moe)


# (l) a Switch Transformer / GShard layer with an expert capacity: top-1 gating (softmax, argmax, max), the
# position of each token in its expert's queue by torch.cumsum(mask, dim=0) * mask, tokens past the capacity
# dropped (mask *= torch.lt(locations, capacity)), a dispatch tensor built with scatter_ of ones at the location
# (one_hot of the locations by F.one_hot), the combine weights by einsum("se,sc->sec"), dispatch by
# einsum("sec,sm->ecm"), each expert as a batched weight applied by torch.bmm (experts' weights in one Parameter),
# the output combined by einsum("sec,ecm->sm"), a gather of the gate's probabilities, and the Switch loss
# (num_experts * sum(density * density_proxy)); a dropped token falls back to the residual by torch.where
def switch_moe(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    d_model, d_ff, num_experts, capacity_factor = 6, 10, 3, 1.0

    class SwitchFFN(nn.Module):
        def __init__(self):
            super().__init__()
            self.wg = nn.Linear(d_model, num_experts, bias=False)
            self.w_in = nn.Parameter(torch.randn(num_experts, d_model, d_ff) * 0.2)
            self.w_out = nn.Parameter(torch.randn(num_experts, d_ff, d_model) * 0.2)

        def forward(self, x):
            S = x.shape[0]
            capacity = int(capacity_factor * S / num_experts)
            logits = self.wg(x)
            gates = F.softmax(logits, dim=1)
            indices1_s = torch.argmax(gates, dim=1)
            mask1 = F.one_hot(indices1_s, num_classes=num_experts)
            density = torch.mean(mask1.float(), dim=0)
            density_proxy = torch.mean(gates, dim=0)
            l_aux = torch.sum(density * density_proxy) * num_experts
            locations1 = torch.cumsum(mask1, dim=0) - 1
            mask1 = mask1 * torch.lt(locations1, capacity)
            locations1_s = torch.sum(locations1 * mask1, dim=1)
            gates1_s = torch.gather(gates, 1, indices1_s.unsqueeze(1)).squeeze(1)
            gates1 = torch.einsum("s,se->se", gates1_s, mask1.float())
            locations1_sc = torch.zeros(S, capacity, dtype=gates.dtype)
            locations1_sc.scatter_(1, locations1_s.unsqueeze(1), 1.0)
            combine_weights = torch.einsum("se,sc->sec", gates1, locations1_sc)
            dispatch_mask = combine_weights.bool()
            dispatched = torch.einsum("sec,sm->ecm", dispatch_mask.type_as(x), x)
            h = F.relu(torch.bmm(dispatched, self.w_in))
            expert_output = torch.bmm(h, self.w_out)
            combined = torch.einsum("sec,ecm->sm", combine_weights, expert_output)
            kept = mask1.sum(dim=1, keepdim=True) > 0
            return torch.where(kept, combined, x), l_aux, kept.sum()

    torch.manual_seed(0)
    model = nn.ModuleDict(dict(inp=nn.Linear(4, d_model), moe=SwitchFFN(), out=nn.Linear(d_model, 3)))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(8)
    x, y = torch.tensor(normal(rng, 9, 4)), torch.tensor(rng.integers(0, 3, 9))
    losses = []
    for step in range(2):
        h, l_aux, kept = model['moe'](torch.tanh(model['inp'](x)))
        loss = F.cross_entropy(model['out'](h), y) + 0.01 * l_aux
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), l_aux.item(), int(kept)]
    return init, losses + summary(model.parameters())


def test_switch_moe_capacity():
    compare(switch_moe)


# ---- neural fields ---------------------------------------------------------------------------

# (m) yenchenlin's nerf-pytorch: the Embedder (embed_fns of sin and cos over freq_bands = 2. ** torch.linspace(0.,
# max_freq, steps=N_freqs), include_input, torch.cat([fn(inputs) for fn in self.embed_fns], -1)), the NeRF MLP with
# a skip connection (torch.cat([input_pts, h], -1)) and use_viewdirs (torch.split into points and views, alpha,
# feature, rgb heads), get_rays by torch.meshgrid(torch.linspace(...), torch.linspace(...)) then .t(), dirs by
# torch.stack, rays_d = torch.sum(dirs[..., np.newaxis, :] * c2w[:3, :3], -1), stratified z_vals (mids, upper,
# lower, t_rand from numpy), raw2outputs (dists with torch.Tensor([1e10]).expand, times torch.norm of rays_d,
# alpha = 1 - exp(-relu(raw) * dists), weights by an exclusive torch.cumprod via torch.cat of ones, rgb_map,
# depth_map, disp_map = 1. / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1)),
# NaN in both where a ray's weights are all 0, so its mean by torch.nanmean, acc_map), hierarchical sampling by sample_pdf (pdf, cdf by cumsum, torch.searchsorted(cdf, u, right=True),
# below/above by torch.max/torch.min against zeros_like/ones_like, gather of the expanded cdf and bins,
# denom where < 1e-5), img2mse and mse2psnr (-10. * torch.log(x) / torch.log(torch.Tensor([10.])))
def nerf(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Embedder:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.create_embedding_fn()

        def create_embedding_fn(self):
            embed_fns = []
            d = self.kwargs['input_dims']
            out_dim = 0
            if self.kwargs['include_input']:
                embed_fns.append(lambda x: x)
                out_dim += d
            max_freq = self.kwargs['max_freq_log2']
            N_freqs = self.kwargs['num_freqs']
            if self.kwargs['log_sampling']:
                freq_bands = 2. ** torch.linspace(0., max_freq, steps=N_freqs)
            else:
                freq_bands = torch.linspace(2. ** 0., 2. ** max_freq, steps=N_freqs)
            for freq in freq_bands:
                for p_fn in self.kwargs['periodic_fns']:
                    embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
                    out_dim += d
            self.embed_fns = embed_fns
            self.out_dim = out_dim

        def embed(self, inputs):
            return torch.cat([fn(inputs) for fn in self.embed_fns], -1)

    def get_embedder(multires):
        embed_kwargs = {'include_input': True, 'input_dims': 3, 'max_freq_log2': multires - 1, 'num_freqs': multires,
                        'log_sampling': True, 'periodic_fns': [torch.sin, torch.cos]}
        embedder_obj = Embedder(**embed_kwargs)
        return (lambda x, eo=embedder_obj: eo.embed(x)), embedder_obj.out_dim

    class NeRF(nn.Module):
        def __init__(self, D=3, W=16, input_ch=3, input_ch_views=3, output_ch=4, skips=[1], use_viewdirs=True):
            super().__init__()
            self.D, self.W, self.input_ch, self.input_ch_views = D, W, input_ch, input_ch_views
            self.skips = skips
            self.use_viewdirs = use_viewdirs
            self.pts_linears = nn.ModuleList(
                [nn.Linear(input_ch, W)] + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W) for i in range(D - 1)])
            self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
            if use_viewdirs:
                self.feature_linear = nn.Linear(W, W)
                self.alpha_linear = nn.Linear(W, 1)
                self.rgb_linear = nn.Linear(W // 2, 3)
            else:
                self.output_linear = nn.Linear(W, output_ch)

        def forward(self, x):
            input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
            h = input_pts
            for i, l in enumerate(self.pts_linears):
                h = self.pts_linears[i](h)
                h = F.relu(h)
                if i in self.skips:
                    h = torch.cat([input_pts, h], -1)
            alpha = self.alpha_linear(h)
            feature = self.feature_linear(h)
            h = torch.cat([feature, input_views], -1)
            for i, l in enumerate(self.views_linears):
                h = self.views_linears[i](h)
                h = F.relu(h)
            rgb = self.rgb_linear(h)
            return torch.cat([rgb, alpha], -1)

    def get_rays(H, W, K, c2w):
        i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H))  # pytorch's meshgrid has indexing='ij'
        i = i.t()
        j = j.t()
        dirs = torch.stack([(i - K[0][2]) / K[0][0], -(j - K[1][2]) / K[1][1], -torch.ones_like(i)], -1)
        rays_d = torch.sum(dirs[..., np.newaxis, :] * c2w[:3, :3], -1)  # dot product, equals to: [c2w.dot(dir) for dir in dirs]
        rays_o = c2w[:3, -1].expand(rays_d.shape)
        return rays_o, rays_d

    def raw2outputs(raw, z_vals, rays_d, raw_noise_std=0, white_bkgd=False):
        raw2alpha = lambda raw, dists, act_fn=F.relu: 1. - torch.exp(-act_fn(raw) * dists)
        dists = z_vals[..., 1:] - z_vals[..., :-1]
        dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)  # [N_rays, N_samples]
        dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
        rgb = torch.sigmoid(raw[..., :3])  # [N_rays, N_samples, 3]
        alpha = raw2alpha(raw[..., 3], dists)  # [N_rays, N_samples]
        weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1. - alpha + 1e-10], -1), -1)[:, :-1]
        rgb_map = torch.sum(weights[..., None] * rgb, -2)  # [N_rays, 3]
        depth_map = torch.sum(weights * z_vals, -1)
        disp_map = 1. / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1))
        acc_map = torch.sum(weights, -1)
        if white_bkgd:
            rgb_map = rgb_map + (1. - acc_map[..., None])
        return rgb_map, disp_map, acc_map, weights, depth_map

    def sample_pdf(bins, weights, N_samples, u):
        weights = weights + 1e-5  # prevent nans
        pdf = weights / torch.sum(weights, -1, keepdim=True)
        cdf = torch.cumsum(pdf, -1)
        cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)  # (batch, len(bins))
        u = u.contiguous()
        inds = torch.searchsorted(cdf, u, right=True)
        below = torch.max(torch.zeros_like(inds - 1), inds - 1)
        above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
        inds_g = torch.stack([below, above], -1)  # (batch, N_samples, 2)
        matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
        cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
        bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
        denom = (cdf_g[..., 1] - cdf_g[..., 0])
        denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
        t = (u - cdf_g[..., 0]) / denom
        samples = bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])
        return samples

    img2mse = lambda x, y: torch.mean((x - y) ** 2)
    mse2psnr = lambda x: -10. * torch.log(x) / torch.log(torch.Tensor([10.]))

    embed_fn, input_ch = get_embedder(3)
    embeddirs_fn, input_ch_views = get_embedder(2)
    torch.manual_seed(0)
    model = NeRF(input_ch=input_ch, input_ch_views=input_ch_views)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(params=model.parameters(), lr=5e-3, betas=(0.9, 0.999))
    rng = np.random.default_rng(9)
    H, W, focal, N_samples, N_importance, near, far = 3, 4, 3.0, 6, 4, 2., 6.
    K = np.array([[focal, 0, 0.5 * W], [0, focal, 0.5 * H], [0, 0, 1]])
    c2w = torch.tensor(np.concatenate([np.eye(3), [[0.1], [-0.2], [4.0]]], 1).astype(np.float32))
    rays_o, rays_d = get_rays(H, W, K, c2w)
    rays_o, rays_d = rays_o.reshape(-1, 3), rays_d.reshape(-1, 3)
    viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
    target = torch.tensor(rng.random((H * W, 3)).astype(np.float32))
    N_rays = rays_o.shape[0]

    def run_network(pts, z_vals):
        inputs_flat = torch.reshape(pts, [-1, pts.shape[-1]])
        embedded = embed_fn(inputs_flat)
        input_dirs = viewdirs[:, None].expand(pts.shape)
        input_dirs_flat = torch.reshape(input_dirs, [-1, input_dirs.shape[-1]])
        embedded = torch.cat([embedded, embeddirs_fn(input_dirs_flat)], -1)
        outputs_flat = model(embedded)
        return torch.reshape(outputs_flat, list(pts.shape[:-1]) + [outputs_flat.shape[-1]])

    losses = []
    for step in range(2):
        t_vals = torch.linspace(0., 1., steps=N_samples)
        z_vals = near * (1. - t_vals) + far * (t_vals)
        z_vals = z_vals.expand([N_rays, N_samples])
        mids = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        t_rand = torch.tensor(rng.random(z_vals.shape).astype(np.float32))  # stratified samples in those intervals
        z_vals = lower + (upper - lower) * t_rand
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]  # [N_rays, N_samples, 3]
        raw = run_network(pts, z_vals)
        rgb_map_0, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rays_d)
        z_vals_mid = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
        u = torch.tensor(rng.random((N_rays, N_importance)).astype(np.float32))
        z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], N_importance, u)
        z_samples = z_samples.detach()
        z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(run_network(pts, z_vals), z_vals, rays_d)
        optimizer.zero_grad()
        img_loss = img2mse(rgb_map, target)
        loss = img_loss + img2mse(rgb_map_0, target)
        psnr = mse2psnr(img_loss)
        loss.backward()
        optimizer.step()
        losses += [loss.item(), psnr.item(), float(torch.nanmean(disp_map.detach())), float(acc_map.mean()), float(z_samples.sum())]
    return init, losses + summary(model.parameters())


def test_nerf_pytorch():
    compare(nerf)


# ---- segmentation -----------------------------------------------------------------------------

# (n) torchvision's DeepLabV3 head as segmentation repositories copy it: ASPPConv (a dilated 3x3 conv, BatchNorm,
# ReLU), ASPPPooling (AdaptiveAvgPool2d(1), a 1x1 conv, then F.interpolate(x, size=size, mode="bilinear",
# align_corners=False)), ASPP's torch.cat of the branches and its project with Dropout(0.5) (off here), the
# logits upsampled to the input size (bilinear, align_corners=False), the inputs resized as torchvision's Resize
# resizes tensors (F.interpolate(..., antialias=True)), nn.CrossEntropyLoss(ignore_index=255) on
# NCHW logits with 255 marking the void border, a poly learning-rate schedule by LambdaLR ((1 - it / max_it) **
# 0.9), and the mIoU metric from a confusion matrix by np.bincount over label * n + pred (fast_hist) on the host
def deeplab_aspp(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    num_classes = 3

    class ASPPConv(nn.Sequential):
        def __init__(self, in_channels, out_channels, dilation):
            modules = [nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False),
                       nn.BatchNorm2d(out_channels), nn.ReLU()]
            super().__init__(*modules)

    class ASPPPooling(nn.Sequential):
        def __init__(self, in_channels, out_channels):
            super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(in_channels, out_channels, 1, bias=False),
                             nn.BatchNorm2d(out_channels), nn.ReLU())

        def forward(self, x):
            size = x.shape[-2:]
            for mod in self:
                x = mod(x)
            return F.interpolate(x, size=size, mode="bilinear", align_corners=False)

    class ASPP(nn.Module):
        def __init__(self, in_channels, atrous_rates, out_channels=4):
            super().__init__()
            modules = [nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels), nn.ReLU())]
            rates = tuple(atrous_rates)
            for rate in rates:
                modules.append(ASPPConv(in_channels, out_channels, rate))
            modules.append(ASPPPooling(in_channels, out_channels))
            self.convs = nn.ModuleList(modules)
            self.project = nn.Sequential(nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
                                         nn.BatchNorm2d(out_channels), nn.ReLU(), nn.Dropout(0.0))

        def forward(self, x):
            _res = []
            for conv in self.convs:
                _res.append(conv(x))
            res = torch.cat(_res, dim=1)
            return self.project(res)

    class DeepLabV3(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 6, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(6), nn.ReLU())
            self.classifier = nn.Sequential(ASPP(6, [2]), nn.Conv2d(4, num_classes, 1))

        def forward(self, x):
            input_shape = x.shape[-2:]
            features = self.backbone(x)
            x = self.classifier(features)
            x = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
            return {"out": x}

    def fast_hist(label_true, label_pred, n_class):
        mask = (label_true >= 0) & (label_true < n_class)
        return np.bincount(n_class * label_true[mask].astype(int) + label_pred[mask], minlength=n_class ** 2).reshape(n_class, n_class)

    torch.manual_seed(0)
    model = DeepLabV3()
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss(ignore_index=255)
    max_iter = 4
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda it: (1 - it / max_iter) ** 0.9)
    rng = np.random.default_rng(10)
    # the batch resized as torchvision's Resize does on tensors (antialiased bilinear; nearest for the mask)
    images = F.interpolate(torch.tensor(normal(rng, 2, 3, 11, 12)), size=(7, 7), mode="bilinear", align_corners=False,
                           antialias=True)
    target = rng.integers(0, num_classes, (2, 7, 7))
    target[:, 0, :] = 255
    targets = torch.tensor(target)
    losses = []
    hist = np.zeros((num_classes, num_classes))
    for step in range(2):
        model.train()
        output = model(images)["out"]
        loss = criterion(output, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), optimizer.param_groups[0]["lr"]]
        preds = output.detach().max(dim=1)[1].cpu().numpy()
        hist += fast_hist(target.flatten(), preds.flatten(), num_classes)
    iu = np.diag(hist) / (hist.sum(axis=1) + hist.sum(axis=0) - np.diag(hist))
    model.eval()
    with torch.no_grad():
        out = model(images)["out"]
    return init, losses + [float(np.nanmean(iu)), float(out.sum())] + summary(model.parameters())


def test_deeplabv3_aspp():
    compare(deeplab_aspp)


# (o) a U-Net-style binary and multi-class segmentation notebook: an FCN whose ConvTranspose2d is initialised as
# bilinear upsampling (get_upsampling_weight from numpy's ogrid), a decoder upsampled with align_corners=True and
# by nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True), the DiceLoss class (softmax, one_hot of
# the target by F.one_hot(...).permute(0, 3, 1, 2).float(), intersection and cardinality summed over dims (0, 2, 3),
# (2 * intersection + smooth) / (cardinality + smooth)), BCE-with-logits plus soft dice for the binary mask
# (sigmoid, flatten by view(-1)), and per-class IoU by torch.logical_and / torch.logical_or with sum over (1, 2)
def fcn_dice(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    n_classes = 3

    def get_upsampling_weight(in_channels, out_channels, kernel_size):
        factor = (kernel_size + 1) // 2
        center = factor - 1 if kernel_size % 2 == 1 else factor - 0.5
        og = np.ogrid[:kernel_size, :kernel_size]
        filt = (1 - abs(og[0] - center) / factor) * (1 - abs(og[1] - center) / factor)
        weight = np.zeros((in_channels, out_channels, kernel_size, kernel_size), dtype=np.float64)
        weight[range(in_channels), range(out_channels), :, :] = filt
        return torch.from_numpy(weight).float()

    class FCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2))
            self.score = nn.Conv2d(4, n_classes, 1)
            self.upscore = nn.ConvTranspose2d(n_classes, n_classes, 4, stride=2, padding=1, bias=False)
            self.upscore.weight.data.copy_(get_upsampling_weight(n_classes, n_classes, 4))
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.mask_head = nn.Conv2d(4, 1, 1)

        def forward(self, x):
            h = self.enc(x)
            logits = self.upscore(self.score(h))
            mask = self.mask_head(self.up(h))
            aux = F.interpolate(self.score(h), size=x.shape[-2:], mode='bilinear', align_corners=True)
            return logits, mask, aux

    class DiceLoss(nn.Module):
        def __init__(self, smooth=1.0):
            super().__init__()
            self.smooth = smooth

        def forward(self, logits, true):
            num_classes = logits.shape[1]
            true_1_hot = F.one_hot(true, num_classes).permute(0, 3, 1, 2).float()
            probas = F.softmax(logits, dim=1)
            true_1_hot = true_1_hot.type(logits.type())
            dims = (0,) + tuple(range(2, true.ndimension() + 1))
            intersection = torch.sum(probas * true_1_hot, dims)
            cardinality = torch.sum(probas + true_1_hot, dims)
            dice_loss = ((2. * intersection + self.smooth) / (cardinality + self.smooth)).mean()
            return 1 - dice_loss

    def dice_coeff_binary(inputs, targets, smooth=1):
        inputs = torch.sigmoid(inputs)
        inputs = inputs.view(-1)
        targets = targets.view(-1)
        intersection = (inputs * targets).sum()
        return (2. * intersection + smooth) / (inputs.sum() + targets.sum() + smooth)

    def iou_per_class(pred, target, n):
        ious = []
        for cls in range(n):
            p, t = pred == cls, target == cls
            inter = torch.logical_and(p, t).sum(dim=(1, 2)).float()
            union = torch.logical_or(p, t).sum(dim=(1, 2)).float()
            ious.append(((inter + 1e-6) / (union + 1e-6)).mean().item())
        return ious

    torch.manual_seed(0)
    model = FCN()
    init = load(m, model, state)
    dice = DiceLoss()
    bce = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9)
    rng = np.random.default_rng(11)
    x = torch.tensor(normal(rng, 2, 1, 6, 6))
    y = torch.tensor(rng.integers(0, n_classes, (2, 6, 6)))
    mask = (y > 0).float().unsqueeze(1)
    losses = []
    for step in range(2):
        logits, mask_logits, aux = model(x)
        loss = F.cross_entropy(logits, y) + dice(logits, y) + 0.4 * F.cross_entropy(aux, y)
        loss = loss + bce(mask_logits, mask) + (1 - dice_coeff_binary(mask_logits, mask))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()] + iou_per_class(logits.argmax(dim=1), y, n_classes)
    return init, losses + summary(model.parameters())


def test_fcn_dice_iou():
    compare(fcn_dice)


# ---- detection --------------------------------------------------------------------------------

# (p) a RetinaNet written inline: torchvision's box_area and box_iou (lt = torch.max(boxes1[:, None, :2],
# boxes2[:, :2]), wh = (rb - lt).clamp(min=0)) and generalized_box_iou, anchors from a meshgrid of shifts
# (torch.meshgrid(shifts_y, shifts_x, indexing="ij"), stacked, (shifts.view(-1, 1, 4) + base_anchors.view(1, -1,
# 4)).reshape(-1, 4)), the Matcher's max over IoUs with below-threshold anchors set to -1 and ignored between, the
# BoxCoder's encode (log of the width/height ratios, weights (1, 1, 1, 1)) and decode (torch.exp clamped by
# math.log(1000. / 16)), torchvision.ops.sigmoid_focal_loss as it is written (p = sigmoid, ce by
# binary_cross_entropy_with_logits(reduction="none"), p_t, ce * ((1 - p_t) ** gamma), alpha_t) summed over the
# valid anchors / max(1, num_foreground), and F.smooth_l1_loss(beta=1 / 9, reduction="sum") plus a GIoU loss on
# the foreground's decoded boxes
def retinanet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    num_classes, A = 2, 3

    def box_area(boxes):
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])

    def _box_inter_union(boxes1, boxes2):
        area1 = box_area(boxes1)
        area2 = box_area(boxes2)
        lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])  # [N,M,2]
        rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])  # [N,M,2]
        wh = (rb - lt).clamp(min=0)  # [N,M,2]
        inter = wh[:, :, 0] * wh[:, :, 1]  # [N,M]
        union = area1[:, None] + area2 - inter
        return inter, union

    def box_iou(boxes1, boxes2):
        inter, union = _box_inter_union(boxes1, boxes2)
        return inter / union

    def generalized_box_iou(boxes1, boxes2):
        inter, union = _box_inter_union(boxes1, boxes2)
        iou = inter / union
        lti = torch.min(boxes1[:, None, :2], boxes2[:, :2])
        rbi = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
        whi = (rbi - lti).clamp(min=0)  # [N,M,2]
        areai = whi[:, :, 0] * whi[:, :, 1]
        return iou - (areai - union) / areai

    def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction="none"):
        p = torch.sigmoid(inputs)
        ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        loss = ce_loss * ((1 - p_t) ** gamma)
        if alpha >= 0:
            alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
            loss = alpha_t * loss
        if reduction == "none":
            pass
        elif reduction == "mean":
            loss = loss.mean()
        elif reduction == "sum":
            loss = loss.sum()
        return loss

    def grid_anchors(feature_h, feature_w, stride, sizes=(6., 10., 14.)):
        scales = torch.as_tensor(sizes)
        ws, hs = scales, scales * torch.tensor([1.0, 0.5, 2.0]).sqrt()
        base_anchors = (torch.stack([-ws, -hs, ws, hs], dim=1) / 2).round()
        shifts_x = torch.arange(0, feature_w, dtype=torch.int32) * stride
        shifts_y = torch.arange(0, feature_h, dtype=torch.int32) * stride
        shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
        shift_x = shift_x.reshape(-1)
        shift_y = shift_y.reshape(-1)
        shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
        return (shifts.view(-1, 1, 4) + base_anchors.view(1, -1, 4)).reshape(-1, 4)

    def encode(reference_boxes, proposals):
        ex_widths = proposals[:, 2] - proposals[:, 0]
        ex_heights = proposals[:, 3] - proposals[:, 1]
        ex_ctr_x = proposals[:, 0] + 0.5 * ex_widths
        ex_ctr_y = proposals[:, 1] + 0.5 * ex_heights
        gt_widths = reference_boxes[:, 2] - reference_boxes[:, 0]
        gt_heights = reference_boxes[:, 3] - reference_boxes[:, 1]
        gt_ctr_x = reference_boxes[:, 0] + 0.5 * gt_widths
        gt_ctr_y = reference_boxes[:, 1] + 0.5 * gt_heights
        targets_dx = (gt_ctr_x - ex_ctr_x) / ex_widths
        targets_dy = (gt_ctr_y - ex_ctr_y) / ex_heights
        targets_dw = torch.log(gt_widths / ex_widths)
        targets_dh = torch.log(gt_heights / ex_heights)
        return torch.stack((targets_dx, targets_dy, targets_dw, targets_dh), dim=1)

    def decode(rel_codes, boxes, bbox_xform_clip=math.log(1000.0 / 16)):
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        dx, dy, dw, dh = rel_codes.unbind(1)
        dw = torch.clamp(dw, max=bbox_xform_clip)
        dh = torch.clamp(dh, max=bbox_xform_clip)
        pred_ctr_x = dx * widths + ctr_x
        pred_ctr_y = dy * heights + ctr_y
        pred_w = torch.exp(dw) * widths
        pred_h = torch.exp(dh) * heights
        return torch.stack((pred_ctr_x - 0.5 * pred_w, pred_ctr_y - 0.5 * pred_h, pred_ctr_x + 0.5 * pred_w,
                            pred_ctr_y + 0.5 * pred_h), dim=1)

    def match(match_quality_matrix, high=0.5, low=0.4):
        matched_vals, matches = match_quality_matrix.max(dim=0)
        below_low_threshold = matched_vals < low
        between_thresholds = (matched_vals >= low) & (matched_vals < high)
        matches[below_low_threshold] = -1
        matches[between_thresholds] = -2
        return matches

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4, padding=1), nn.ReLU())
            self.cls_logits = nn.Conv2d(8, A * num_classes, 3, padding=1)
            self.bbox_reg = nn.Conv2d(8, A * 4, 3, padding=1)
            prior_probability = 0.01
            nn.init.normal_(self.cls_logits.weight, std=0.01)
            nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability))

        def forward(self, x):
            f = self.backbone(x)
            N, _, H, W = f.shape
            cls = self.cls_logits(f).view(N, -1, num_classes, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, num_classes)
            reg = self.bbox_reg(f).view(N, -1, 4, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, 4)
            return cls, reg, (H, W)

    torch.manual_seed(0)
    model = Head()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    rng = np.random.default_rng(12)
    images = torch.tensor(normal(rng, 2, 3, 12, 12))
    targets = [{"boxes": torch.tensor([[1., 2., 9., 8.], [4., 0., 11., 10.]]), "labels": torch.tensor([0, 1])},
               {"boxes": torch.tensor([[0., 0., 6., 7.]]), "labels": torch.tensor([1])}]
    losses = []
    for step in range(2):
        cls_logits, bbox_regression, (H, W) = model(images)
        anchors = grid_anchors(H, W, stride=4).float()
        cls_losses, reg_losses = [], []
        for i, t in enumerate(targets):
            iou = box_iou(t["boxes"], anchors)
            matched_idxs = match(iou)
            foreground_idxs_per_image = matched_idxs >= 0
            num_foreground = foreground_idxs_per_image.sum()
            gt_classes_target = torch.zeros_like(cls_logits[i])
            gt_classes_target[foreground_idxs_per_image, t["labels"][matched_idxs[foreground_idxs_per_image]]] = 1.0
            valid_idxs_per_image = matched_idxs != -2
            cls_losses.append(sigmoid_focal_loss(cls_logits[i][valid_idxs_per_image], gt_classes_target[valid_idxs_per_image],
                                                 reduction="sum") / max(1, num_foreground))
            matched_gt_boxes_per_image = t["boxes"][matched_idxs[foreground_idxs_per_image]]
            bbox_regression_per_image = bbox_regression[i][foreground_idxs_per_image, :]
            anchors_per_image = anchors[foreground_idxs_per_image, :]
            target_regression = encode(matched_gt_boxes_per_image, anchors_per_image)
            l1 = F.smooth_l1_loss(bbox_regression_per_image, target_regression, beta=1 / 9, reduction="sum")
            decoded = decode(bbox_regression_per_image, anchors_per_image)
            giou = torch.diag(generalized_box_iou(decoded, matched_gt_boxes_per_image))
            reg_losses.append((l1 + (1 - giou).sum()) / max(1, num_foreground))
        loss = sum(cls_losses) / len(targets) + sum(reg_losses) / len(targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), int(num_foreground)]
    return init, losses + summary(model.parameters())


def test_retinanet_inline():
    compare(retinanet)


# (q) a YOLOv3-style head (eriklindernoren's and ultralytics' early yolo.py): the conv output viewed as
# (bs, na, no, ny, nx).permute(0, 1, 3, 4, 2).contiguous(), _make_grid by torch.meshgrid([torch.arange(ny),
# torch.arange(nx)], indexing='ij') stacked (xv, yv) and .view((1, 1, ny, nx, 2)).float(), inference's
# y[..., 0:2] = (y[..., 0:2].sigmoid() * 2 - 0.5 + grid) * stride and y[..., 2:4] = (sigmoid * 2) ** 2 * anchor_grid,
# build_targets (gxy, gij = gxy.long(), gi, gj = gij.T, tbox as torch.cat((gxy - gij, gwh), 1)), the BCEWithLogits
# objectness with tobj[b, a, gj, gi] = iou.detach().clamp(0).type(tobj.dtype), the class loss on ps[:, 5:] against
# torch.full_like(..., cn) with t[range(n), tcls] = cp, bbox_iou's CIoU (torch.atan, torch.no_grad() alpha), and
# a greedy NMS by hand (argsort by score, box IoU, keep)
def yolo_head(m, state=None):
    torch, nn = m.torch, m.nn
    nc, na, stride = 2, 2, 4
    no = nc + 5
    anchors = torch.tensor([[1.5, 2.0], [3.0, 2.5]])  # in grid units

    def bbox_iou(box1, box2, xywh=True, CIoU=False, eps=1e-7):
        (x1, y1, w1, h1), (x2, y2, w2, h2) = box1.chunk(4, -1), box2.chunk(4, -1)
        w1_, h1_, w2_, h2_ = w1 / 2, h1 / 2, w2 / 2, h2 / 2
        b1_x1, b1_x2, b1_y1, b1_y2 = x1 - w1_, x1 + w1_, y1 - h1_, y1 + h1_
        b2_x1, b2_x2, b2_y1, b2_y2 = x2 - w2_, x2 + w2_, y2 - h2_, y2 + h2_
        inter = (b1_x2.minimum(b2_x2) - b1_x1.maximum(b2_x1)).clamp(0) * \
                (b1_y2.minimum(b2_y2) - b1_y1.maximum(b2_y1)).clamp(0)
        union = w1 * h1 + w2 * h2 - inter + eps
        iou = inter / union
        if CIoU:
            cw = b1_x2.maximum(b2_x2) - b1_x1.minimum(b2_x1)  # convex (smallest enclosing box) width
            ch = b1_y2.maximum(b2_y2) - b1_y1.minimum(b2_y1)  # convex height
            c2 = cw ** 2 + ch ** 2 + eps  # convex diagonal squared
            rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2) ** 2 + (b2_y1 + b2_y2 - b1_y1 - b1_y2) ** 2) / 4  # center dist ** 2
            v = (4 / math.pi ** 2) * torch.pow(torch.atan(w2 / (h2 + eps)) - torch.atan(w1 / (h1 + eps)), 2)
            with torch.no_grad():
                alpha = v / (v - iou + (1 + eps))
            return iou - (rho2 / c2 + v * alpha)  # CIoU
        return iou

    class Detect(nn.Module):
        def __init__(self, ch=6):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, ch, 3, stride=stride, padding=1), nn.SiLU())
            self.m = nn.Conv2d(ch, no * na, 1)
            self.register_buffer('anchors', anchors.clone().view(na, 2))

        @staticmethod
        def _make_grid(nx=20, ny=20):
            yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing='ij')
            return torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()

        def forward(self, x):
            x = self.m(self.backbone(x))
            bs, _, ny, nx = x.shape
            x = x.view(bs, na, no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if self.training:
                return x
            grid = self._make_grid(nx, ny)
            anchor_grid = (self.anchors * stride).view((1, na, 1, 1, 2))
            y = x.sigmoid()
            xy = (y[..., 0:2] * 2 - 0.5 + grid) * stride
            wh = (y[..., 2:4] * 2) ** 2 * anchor_grid
            y = torch.cat((xy, wh, y[..., 4:]), -1)
            return y.view(bs, -1, no)

    def nms(boxes, scores, iou_thres):
        order = scores.argsort(descending=True)
        keep = []
        while order.numel() > 0:
            i = order[0]
            keep.append(int(i))
            if order.numel() == 1:
                break
            ious = bbox_iou(boxes[i].unsqueeze(0), boxes[order[1:]]).squeeze(-1)
            order = order[1:][ious <= iou_thres]
        return torch.tensor(keep, dtype=torch.long)

    torch.manual_seed(0)
    model = Detect()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937, nesterov=True)
    BCEcls, BCEobj = nn.BCEWithLogitsLoss(), nn.BCEWithLogitsLoss()
    rng = np.random.default_rng(13)
    imgs = torch.tensor(normal(rng, 2, 3, 12, 12))
    # targets: image, class, x, y, w, h in grid units
    targets = torch.tensor([[0, 1, 1.3, 0.6, 1.2, 1.9], [1, 0, 2.2, 2.7, 2.9, 2.1], [1, 1, 0.4, 1.5, 1.6, 2.2]])
    losses = []
    for step in range(2):
        model.train()
        p = model(imgs)
        b, gxy, gwh, tcls = targets[:, 0].long(), targets[:, 2:4], targets[:, 4:6], targets[:, 1].long()
        r = gwh[:, None] / anchors[None]  # wh ratio to each anchor
        a = torch.max(r, 1 / r).max(2)[0].argmin(1)  # best anchor
        gij = gxy.long()
        gi, gj = gij.T
        tbox = torch.cat((gxy - gij, gwh), 1)
        ps = p[b, a, gj, gi]
        pxy = ps[:, :2].sigmoid() * 2 - 0.5
        pwh = (ps[:, 2:4].sigmoid() * 2) ** 2 * anchors[a]
        pbox = torch.cat((pxy, pwh), 1)
        iou = bbox_iou(pbox, tbox, CIoU=True).squeeze()
        lbox = (1.0 - iou).mean()
        tobj = torch.zeros(p.shape[:4], dtype=p.dtype)
        tobj[b, a, gj, gi] = iou.detach().clamp(0).type(tobj.dtype)
        lobj = BCEobj(p[..., 4], tobj)
        t = torch.full_like(ps[:, 5:], 0.0)
        t[range(len(b)), tcls] = 1.0
        lcls = BCEcls(ps[:, 5:], t)
        loss = (lbox * 0.05 + lobj * 1.0 + lcls * 0.5) * imgs.shape[0]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), lbox.item(), lobj.item(), lcls.item()]
    model.eval()
    with torch.no_grad():
        pred = model(imgs)[0]
    conf = pred[:, 4] * pred[:, 5:].max(1)[0]
    keep = nms(pred[:, :4], conf, 0.3)
    return init, losses + [float(pred.sum()), len(keep)] + summary(model.parameters())


def test_yolo_head():
    compare(yolo_head)


# ---- metric learning --------------------------------------------------------------------------

# (r) ronghuaiyang/arcface-pytorch's metrics.py and focal loss: ArcMarginProduct (cosine = F.linear(F.normalize
# (input), F.normalize(self.weight)), sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1)), phi = cosine *
# cos_m - sine * sin_m, torch.where(cosine > th, phi, cosine - mm), one_hot by torch.zeros(cosine.size()).scatter_
# (1, label.view(-1, 1).long(), 1), output *= s), AddMarginProduct (CosFace: cosine - m), SphereFace's
# cos(m * theta) by the Chebyshev lambdas and a lambda annealed by max(LambdaMin, base * (1 + gamma * iter) **
# -power), insightface's acos form (torch.acos(torch.clamp(cos, -1 + 1e-7, 1 - 1e-7)), cos(theta + m)), their
# FocalLoss (logp = CE(input, target), p = torch.exp(-logp), (1 - p) ** gamma * logp), xavier_uniform_ weights
# and a backbone ending in BatchNorm1d features
def arcface(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    in_features, out_features = 6, 5

    class ArcMarginProduct(nn.Module):
        def __init__(self, in_features, out_features, s=30.0, m=0.50, easy_margin=False):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.s = s
            self.m = m
            self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
            nn.init.xavier_uniform_(self.weight)
            self.easy_margin = easy_margin
            self.cos_m = math.cos(m)
            self.sin_m = math.sin(m)
            self.th = math.cos(math.pi - m)
            self.mm = math.sin(math.pi - m) * m

        def forward(self, input, label):
            cosine = F.linear(F.normalize(input), F.normalize(self.weight))
            sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
            phi = cosine * self.cos_m - sine * self.sin_m
            if self.easy_margin:
                phi = torch.where(cosine > 0, phi, cosine)
            else:
                phi = torch.where(cosine > self.th, phi, cosine - self.mm)
            one_hot = torch.zeros(cosine.size(), device='cpu')
            one_hot.scatter_(1, label.view(-1, 1).long(), 1)
            output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
            output *= self.s
            return output

    class AddMarginProduct(nn.Module):
        def __init__(self, in_features, out_features, s=30.0, m=0.40):
            super().__init__()
            self.s, self.m = s, m
            self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
            nn.init.xavier_uniform_(self.weight)

        def forward(self, input, label):
            cosine = F.linear(F.normalize(input), F.normalize(self.weight))
            phi = cosine - self.m
            one_hot = torch.zeros(cosine.size())
            one_hot.scatter_(1, label.view(-1, 1).long(), 1)
            return ((one_hot * phi) + ((1.0 - one_hot) * cosine)) * self.s

    class SphereProduct(nn.Module):
        def __init__(self, in_features, out_features, m=4):
            super().__init__()
            self.m = m
            self.base, self.gamma, self.power, self.LambdaMin, self.iter = 1000.0, 0.12, 1, 5.0, 0
            self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
            nn.init.xavier_uniform_(self.weight)
            self.mlambda = [lambda x: x ** 0, lambda x: x ** 1, lambda x: 2 * x ** 2 - 1, lambda x: 4 * x ** 3 - 3 * x,
                            lambda x: 8 * x ** 4 - 8 * x ** 2 + 1, lambda x: 16 * x ** 5 - 20 * x ** 3 + 5 * x]

        def forward(self, input, label):
            self.iter += 1
            self.lamb = max(self.LambdaMin, self.base * (1 + self.gamma * self.iter) ** (-1 * self.power))
            cos_theta = F.linear(F.normalize(input), F.normalize(self.weight))
            cos_theta = cos_theta.clamp(-1, 1)
            cos_m_theta = self.mlambda[self.m](cos_theta)
            theta = cos_theta.data.acos()
            k = (self.m * theta / 3.14159265).floor()
            phi_theta = ((-1.0) ** k) * cos_m_theta - 2 * k
            NormOfFeature = torch.norm(input, 2, 1)
            one_hot = torch.zeros(cos_theta.size())
            one_hot.scatter_(1, label.view(-1, 1), 1)
            output = (one_hot * (phi_theta - cos_theta) / (1 + self.lamb)) + cos_theta
            output *= NormOfFeature.view(-1, 1)
            return output

    def insightface_arc(embeddings, weight, label, s=16.0, margin=0.3):
        cos = F.normalize(embeddings) @ F.normalize(weight, dim=1).t()
        theta = torch.acos(torch.clamp(cos, -1.0 + 1e-7, 1.0 - 1e-7))
        target = torch.cos(theta + margin)
        one_hot = F.one_hot(label, num_classes=weight.shape[0]).bool()
        return s * torch.where(one_hot, target, cos)

    class FocalLoss(nn.Module):
        def __init__(self, gamma=0, eps=1e-7):
            super().__init__()
            self.gamma = gamma
            self.eps = eps
            self.ce = torch.nn.CrossEntropyLoss()

        def forward(self, input, target):
            logp = self.ce(input, target)
            p = torch.exp(-logp)
            loss = (1 - p) ** self.gamma * logp
            return loss.mean()

    torch.manual_seed(0)
    model = nn.ModuleDict(dict(
        backbone=nn.Sequential(nn.Linear(8, 12), nn.PReLU(), nn.Dropout(0.0), nn.Linear(12, in_features), nn.BatchNorm1d(in_features)),
        arc=ArcMarginProduct(in_features, out_features, s=30, m=0.5, easy_margin=False),
        cos=AddMarginProduct(in_features, out_features), sphere=SphereProduct(in_features, out_features)))
    init = load(m, model, state)
    criterion = FocalLoss(gamma=2)
    optimizer = torch.optim.SGD([{'params': model.parameters()}], lr=1e-2, weight_decay=5e-4)
    rng = np.random.default_rng(14)
    data_input, label = torch.tensor(normal(rng, 6, 8)), torch.tensor(rng.integers(0, out_features, 6))
    losses = []
    for step in range(2):
        feature = model['backbone'](data_input)
        output = model['arc'](feature, label)
        loss = criterion(output, label) + F.cross_entropy(model['cos'](feature, label), label)
        loss = loss + 0.1 * F.cross_entropy(model['sphere'](feature, label), label)
        loss = loss + F.cross_entropy(insightface_arc(feature, model['arc'].weight, label), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        acc = np.mean((np.argmax(output.data.cpu().numpy(), axis=1) == label.data.cpu().numpy()).astype(int))
        losses += [loss.item(), float(acc)]
    return init, losses + summary(model.parameters())


def test_arcface_cosface_sphereface():
    compare(arcface)


# ---- audio and time series ----------------------------------------------------------------------

# (s) torchaudio's speech-command tutorial M5 and a 1-D ECG classifier: Conv1d with a long stride-16 first kernel,
# BatchNorm1d, MaxPool1d(4), F.avg_pool1d(x, x.shape[-1]), x.permute(0, 2, 1), F.log_softmax(x, dim=2),
# F.nll_loss(output.squeeze(), target), count_parameters, get_likely_index by argmax(dim=-1), number_of_correct
# by pred.squeeze().eq(target).sum().item(); the ECG net's Conv1d blocks with padding='same', Dropout, an
# AdaptiveAvgPool1d(1) and AdaptiveMaxPool1d(1) concatenated, flattened, a weighted CrossEntropyLoss, and a
# StepLR scheduler; the inputs as torchaudio's Resample would leave them (numpy waveforms)
def audio_conv1d(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class M5(nn.Module):
        def __init__(self, n_input=1, n_output=4, stride=16, n_channel=4):
            super().__init__()
            self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=80, stride=stride)
            self.bn1 = nn.BatchNorm1d(n_channel)
            self.pool1 = nn.MaxPool1d(4)
            self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
            self.bn2 = nn.BatchNorm1d(n_channel)
            self.pool2 = nn.MaxPool1d(2)
            self.fc1 = nn.Linear(n_channel, n_output)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(self.bn1(x))
            x = self.pool1(x)
            x = self.conv2(x)
            x = F.relu(self.bn2(x))
            x = self.pool2(x)
            x = F.avg_pool1d(x, x.shape[-1])
            x = x.permute(0, 2, 1)
            x = self.fc1(x)
            return F.log_softmax(x, dim=2)

    class ECGNet(nn.Module):
        def __init__(self, n_classes=3):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv1d(1, 4, kernel_size=7, padding='same', bias=False), nn.BatchNorm1d(4), nn.ELU(), nn.Dropout(0.0),
                nn.Conv1d(4, 6, kernel_size=5, padding=2, dilation=1, bias=False), nn.BatchNorm1d(6), nn.ELU())
            self.avg = nn.AdaptiveAvgPool1d(1)
            self.max = nn.AdaptiveMaxPool1d(1)
            self.fc = nn.Linear(12, n_classes)

        def forward(self, x):
            x = self.features(x)
            x = torch.cat([self.avg(x), self.max(x)], dim=1)
            return self.fc(torch.flatten(x, 1))

    def count_parameters(model):
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    def number_of_correct(pred, target):
        return pred.squeeze().eq(target).sum().item()

    def get_likely_index(tensor):
        return tensor.argmax(dim=-1)

    torch.manual_seed(0)
    model = nn.ModuleDict(dict(m5=M5(), ecg=ECGNet()))
    init = load(m, model, state)
    # SGD where the tutorial has Adam: the conv biases before the BatchNorms, and bn1's bias (a shift the next
    # BatchNorm takes out), have gradients of rounding alone, which Adam would turn into full steps
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=0.0001)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]))
    rng = np.random.default_rng(15)
    losses = [count_parameters(model['m5'])]
    for epoch in range(2):
        data = torch.tensor(normal(rng, 3, 1, 400) * 0.3)
        target = torch.tensor(rng.integers(0, 4, 3))
        output = model['m5'](data)
        loss = F.nll_loss(output.squeeze(), target)
        ecg = torch.tensor(normal(rng, 3, 1, 25))
        loss = loss + criterion(model['ecg'](ecg), target.clamp(max=2))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        pred = get_likely_index(output)
        losses += [loss.item(), number_of_correct(pred, target)]
    return init, losses + summary(model.parameters())


def test_audio_m5_ecg_conv1d():
    compare(audio_conv1d)


# (t) a WaveNet (vincentherrmann's and r9y9's styles): CausalConv1d as a Conv1d whose input is F.pad(x, (self.pad,
# 0)) left-padded by (kernel_size - 1) * dilation, residual blocks with a gated activation torch.tanh(f) *
# torch.sigmoid(g) from one conv's output split by chunk(2, dim=1), 1x1 residual and skip convs, the skips summed,
# dilations 2 ** i over layers, mu-law companding (torch.sign(x) * torch.log1p(mu * torch.abs(x)) / math.log1p(mu))
# and quantisation ((x + 1) / 2 * mu + 0.5).long(), F.cross_entropy over (B, C, T) logits against the next sample,
# the receptive field, and a fast generation loop under torch.no_grad() that feeds back the argmax one-hot
def wavenet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    mu, channels, layers = 15, 6, 3

    class CausalConv1d(nn.Conv1d):
        def __init__(self, in_channels, out_channels, kernel_size, dilation=1, **kwargs):
            super().__init__(in_channels, out_channels, kernel_size, padding=0, dilation=dilation, **kwargs)
            self.pad = (kernel_size - 1) * dilation

        def forward(self, x):
            return super().forward(F.pad(x, (self.pad, 0)))

    class ResidualBlock(nn.Module):
        def __init__(self, res_channels, skip_channels, dilation):
            super().__init__()
            self.dilated = CausalConv1d(res_channels, 2 * res_channels, kernel_size=2, dilation=dilation)
            self.conv_res = nn.Conv1d(res_channels, res_channels, 1)
            self.conv_skip = nn.Conv1d(res_channels, skip_channels, 1)

        def forward(self, x):
            f, g = self.dilated(x).chunk(2, dim=1)
            gated = torch.tanh(f) * torch.sigmoid(g)
            return self.conv_res(gated) + x, self.conv_skip(gated)

    class WaveNet(nn.Module):
        def __init__(self, quantization_channels=mu + 1):
            super().__init__()
            self.causal = CausalConv1d(quantization_channels, channels, kernel_size=2)
            self.blocks = nn.ModuleList([ResidualBlock(channels, channels, 2 ** i) for i in range(layers)])
            self.end = nn.Sequential(nn.ReLU(), nn.Conv1d(channels, channels, 1), nn.ReLU(), nn.Conv1d(channels, quantization_channels, 1))
            self.receptive_field = 1 + sum(b.dilated.pad for b in self.blocks) + self.causal.pad

        def forward(self, x):
            x = self.causal(x)
            skip_connections = []
            for block in self.blocks:
                x, skip = block(x)
                skip_connections.append(skip)
            return self.end(sum(skip_connections))

    def mu_law_encoding(x, quantization_channels):
        mu = quantization_channels - 1.0
        x_mu = torch.sign(x) * torch.log1p(mu * torch.abs(x)) / math.log1p(mu)
        return ((x_mu + 1) / 2 * mu + 0.5).to(torch.int64)

    def mu_law_decoding(x_mu, quantization_channels):
        mu = quantization_channels - 1.0
        x = ((x_mu.float()) / mu) * 2 - 1.0
        return torch.sign(x) * (torch.exp(torch.abs(x) * math.log1p(mu)) - 1.0) / mu

    torch.manual_seed(0)
    model = WaveNet()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(16)
    t = np.arange(24)
    audio = torch.tensor((0.6 * np.sin(t[None] * np.array([[0.3], [0.7]])) + 0.05 * rng.standard_normal((2, 24))).astype(np.float32))
    q = mu_law_encoding(audio, mu + 1)
    x = F.one_hot(q[:, :-1], mu + 1).permute(0, 2, 1).float()
    target = q[:, 1:]
    losses = [model.receptive_field, float(mu_law_decoding(q, mu + 1).sub(audio).abs().max() < 0.1)]
    for step in range(2):
        logits = model(x)
        loss = F.cross_entropy(logits, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        seq = x[:1, :, :model.receptive_field]
        generated = []
        for _ in range(3):
            nxt = model(seq[:, :, -model.receptive_field:])[:, :, -1].argmax(dim=1)
            generated.append(int(nxt))
            seq = torch.cat([seq, F.one_hot(nxt, mu + 1).float().unsqueeze(-1)], dim=2)
    return init, losses + generated + summary(model.parameters())


def test_wavenet_causal_conv():
    compare(wavenet)


# (u) jik876's HiFi-GAN and descript's MelGAN pieces: get_padding(kernel_size, dilation) = int((kernel_size * dilation -
# dilation) / 2), weight_norm'd Conv1d and ConvTranspose1d (the older nn.utils.weight_norm, init_weights' normal_(0.0,
# 0.01) on m.weight.data), ResBlock1's dilated convs with F.leaky_relu(x, LRELU_SLOPE) and residual adds, the
# generator's conv_pre, upsampling and averaged resblocks ending in torch.tanh, a discriminator of Conv1d's with
# padding_mode='reflect' and grouped strided convs returning its feature maps (fmap), and the losses: feature_loss
# (torch.mean(torch.abs(rl - gl)) summed * 2), discriminator_loss (torch.mean((1 - dr) ** 2) + torch.mean(dg ** 2)),
# generator_loss, and an L1 on the waveforms; remove_weight_norm before inference
def hifigan(m, state=None):
    import importlib
    torch, nn, F = m.torch, m.nn, m.F
    utils = importlib.import_module(torch.__name__ + ".nn.utils")
    weight_norm, remove_weight_norm = utils.weight_norm, utils.remove_weight_norm
    LRELU_SLOPE = 0.1

    def init_weights(m, mean=0.0, std=0.01):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            m.weight.data.normal_(mean, std)

    def get_padding(kernel_size, dilation=1):
        return int((kernel_size * dilation - dilation) / 2)

    class ResBlock1(nn.Module):
        def __init__(self, channels, kernel_size=3, dilation=(3,)):
            super().__init__()
            self.convs1 = nn.ModuleList([weight_norm(nn.Conv1d(channels, channels, kernel_size, 1, dilation=d,
                                                               padding=get_padding(kernel_size, d))) for d in dilation])
            self.convs1.apply(init_weights)
            self.convs2 = nn.ModuleList([weight_norm(nn.Conv1d(channels, channels, kernel_size, 1, dilation=1,
                                                               padding=get_padding(kernel_size, 1))) for _ in dilation])
            self.convs2.apply(init_weights)

        def forward(self, x):
            for c1, c2 in zip(self.convs1, self.convs2):
                xt = F.leaky_relu(x, LRELU_SLOPE)
                xt = c1(xt)
                xt = F.leaky_relu(xt, LRELU_SLOPE)
                xt = c2(xt)
                x = xt + x
            return x

        def remove_weight_norm(self):
            for l in self.convs1:
                remove_weight_norm(l)
            for l in self.convs2:
                remove_weight_norm(l)

    class Generator(nn.Module):
        def __init__(self, n_mels=4, ch=6, upsample_rates=(2,), upsample_kernel_sizes=(4,), resblock_kernel_sizes=(3,)):
            super().__init__()
            self.num_kernels = len(resblock_kernel_sizes)
            self.conv_pre = weight_norm(nn.Conv1d(n_mels, ch, 7, 1, padding=3))
            self.ups = nn.ModuleList()
            for i, (u, k) in enumerate(zip(upsample_rates, upsample_kernel_sizes)):
                self.ups.append(weight_norm(nn.ConvTranspose1d(ch // (2 ** i), ch // (2 ** (i + 1)), k, u, padding=(k - u) // 2)))
            self.resblocks = nn.ModuleList()
            for i in range(len(self.ups)):
                c = ch // (2 ** (i + 1))
                for k in resblock_kernel_sizes:
                    self.resblocks.append(ResBlock1(c, k))
            self.conv_post = weight_norm(nn.Conv1d(c, 1, 7, 1, padding=3))
            self.ups.apply(init_weights)
            self.conv_post.apply(init_weights)

        def forward(self, x):
            x = self.conv_pre(x)
            for i, up in enumerate(self.ups):
                x = F.leaky_relu(x, LRELU_SLOPE)
                x = up(x)
                xs = None
                for j in range(self.num_kernels):
                    if xs is None:
                        xs = self.resblocks[i * self.num_kernels + j](x)
                    else:
                        xs += self.resblocks[i * self.num_kernels + j](x)
                x = xs / self.num_kernels
            x = F.leaky_relu(x)
            x = self.conv_post(x)
            return torch.tanh(x)

        def remove_weight_norm(self):
            for l in self.ups:
                remove_weight_norm(l)
            for l in self.resblocks:
                l.remove_weight_norm()
            remove_weight_norm(self.conv_pre)
            remove_weight_norm(self.conv_post)

    class DiscriminatorS(nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = nn.ModuleList([
                weight_norm(nn.Conv1d(1, 4, 15, 1, padding=7, padding_mode='reflect')),
                weight_norm(nn.Conv1d(4, 8, 5, 2, groups=4, padding=2, padding_mode='reflect')),
            ])
            self.conv_post = weight_norm(nn.Conv1d(8, 1, 3, 1, padding=1))

        def forward(self, x):
            fmap = []
            for l in self.convs:
                x = l(x)
                x = F.leaky_relu(x, LRELU_SLOPE)
                fmap.append(x)
            x = self.conv_post(x)
            fmap.append(x)
            x = torch.flatten(x, 1, -1)
            return x, fmap

    def feature_loss(fmap_r, fmap_g):
        loss = 0
        for rl, gl in zip(fmap_r, fmap_g):
            loss += torch.mean(torch.abs(rl - gl))
        return loss * 2

    def discriminator_loss(disc_real_output, disc_generated_output):
        r_loss = torch.mean((1 - disc_real_output) ** 2)
        g_loss = torch.mean(disc_generated_output ** 2)
        return r_loss + g_loss

    def generator_loss(disc_output):
        return torch.mean((1 - disc_output) ** 2)

    torch.manual_seed(0)
    model = nn.ModuleDict(dict(generator=Generator(), msd=DiscriminatorS()))
    init = load(m, model, state)
    generator, msd = model['generator'], model['msd']
    optim_g = torch.optim.AdamW(generator.parameters(), 2e-3, betas=(0.8, 0.99))
    optim_d = torch.optim.AdamW(msd.parameters(), 2e-3, betas=(0.8, 0.99))
    rng = np.random.default_rng(26)
    x = torch.tensor(normal(rng, 2, 4, 10))
    y = torch.tensor(np.tanh(normal(rng, 2, 1, 20)))
    losses = []
    for step in range(1):
        y_g_hat = generator(x)
        optim_d.zero_grad()
        y_ds_hat_r, _ = msd(y)
        y_ds_hat_g, _ = msd(y_g_hat.detach())
        loss_disc_s = discriminator_loss(y_ds_hat_r, y_ds_hat_g)
        loss_disc_s.backward()
        optim_d.step()
        optim_g.zero_grad()
        loss_wave = F.l1_loss(y, y_g_hat) * 45
        y_ds_hat_r, fmap_s_r = msd(y)
        y_ds_hat_g, fmap_s_g = msd(y_g_hat)
        loss_gen_all = generator_loss(y_ds_hat_g) + feature_loss(fmap_s_r, fmap_s_g) + loss_wave
        loss_gen_all.backward()
        optim_g.step()
        losses += [loss_disc_s.item(), loss_gen_all.item()]
    generator.eval()
    generator.remove_weight_norm()
    with torch.no_grad():
        y_g_hat = generator(x)
    return init, losses + [float(y_g_hat.sum())] + summary(model.parameters())


def test_hifigan_weight_norm_gan():
    compare(hifigan)


# (v) an LSTM seq2seq forecaster as time-series tutorials write it: a sliding window by tensor.unfold(0, window,
# 1), min-max scaling by hand, an Encoder (nn.LSTM(batch_first=True), returning hidden and cell), a Decoder stepping
# an nn.LSTM one step at a time from the last observed value, teacher forcing (the true value fed back when a numpy
# draw is below teacher_forcing_ratio, else the prediction), outputs collected in torch.zeros(batch, horizon, 1)
# by index assignment, nn.MSELoss, clip_grad_norm_, and an autoregressive forecast under torch.no_grad()
def lstm_forecaster(m, state=None):
    torch, nn = m.torch, m.nn
    window, horizon, hidden = 4, 2, 5

    class Encoder(nn.Module):
        def __init__(self, input_size=1, hidden_size=hidden, num_layers=1):
            super().__init__()
            self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)

        def forward(self, x):
            outputs, (hidden, cell) = self.lstm(x)
            return hidden, cell

    class Decoder(nn.Module):
        def __init__(self, output_size=1, hidden_size=hidden, num_layers=1):
            super().__init__()
            self.lstm = nn.LSTM(output_size, hidden_size, num_layers, batch_first=True)
            self.fc = nn.Linear(hidden_size, output_size)

        def forward(self, x, hidden, cell):
            output, (hidden, cell) = self.lstm(x.unsqueeze(1), (hidden, cell))
            prediction = self.fc(output.squeeze(1))
            return prediction, hidden, cell

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder()
            self.decoder = Decoder()

        def forward(self, source, target=None, teacher_forcing_ratio=0.5, draws=None):
            batch_size = source.shape[0]
            target_len = horizon
            outputs = torch.zeros(batch_size, target_len, 1)
            hidden, cell = self.encoder(source)
            decoder_input = source[:, -1, :]
            for t in range(target_len):
                output, hidden, cell = self.decoder(decoder_input, hidden, cell)
                outputs[:, t, :] = output
                teacher_force = target is not None and draws[t] < teacher_forcing_ratio
                decoder_input = target[:, t, :] if teacher_force else output
            return outputs

    rng = np.random.default_rng(17)
    series = np.sin(np.arange(20) * 0.4) + 0.1 * rng.standard_normal(20)
    lo, hi = series.min(), series.max()
    scaled = torch.tensor(((series - lo) / (hi - lo)).astype(np.float32))
    windows = scaled.unfold(0, window + horizon, 1)  # (n, window + horizon)
    X, Y = windows[:, :window].unsqueeze(-1), windows[:, window:].unsqueeze(-1)
    torch.manual_seed(0)
    model = Seq2Seq()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    losses = [X.shape[0]]
    for epoch in range(2):
        model.train()
        optimizer.zero_grad()
        output = model(X[:6], Y[:6], teacher_forcing_ratio=0.5, draws=rng.random(horizon))
        loss = criterion(output, Y[:6])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        forecast = model(X[6:])
        losses += [criterion(forecast, Y[6:]).item(), float(forecast.sum() * (hi - lo) + lo)]
    return init, losses + summary(model.parameters())


def test_lstm_seq2seq_forecaster():
    compare(lstm_forecaster)


# (w) a DeepSpeech2-style speech recogniser trained with CTC: a spectrogram-like input through a 2-D conv over
# (freq, time), its output reshaped (sizes[0], sizes[1] * sizes[2], sizes[3]) and transposed to (T, N, H), a
# bidirectional GRU whose directions are summed (x.view(T, N, 2, -1).sum(2)), a Linear to the alphabet with the
# blank last, log_softmax(-1), output lengths from the conv's arithmetic ((length + 2 * pad - kernel) // stride +
# 1) as an int tensor, the targets concatenated in one 1-D tensor with their lengths, nn.CTCLoss(blank=..., reduction
# ='sum', zero_infinity=True) divided by the batch size (one sample's target is too long to fit: its infinite loss
# zeroed), and greedy decoding by argmax, torch.unique_consecutive and dropping blanks
def deepspeech_ctc(m, state=None):
    torch, nn = m.torch, m.nn
    labels = "_abc '"[1:] + "_"  # blank last
    blank = len(labels) - 1

    class DeepSpeech(nn.Module):
        def __init__(self, n_freq=6, rnn_hidden=5):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(1, 2, kernel_size=(3, 3), stride=(2, 1), padding=(1, 1)), nn.Hardtanh(0, 20, inplace=True))
            self.rnn = nn.GRU(2 * (n_freq // 2), rnn_hidden, bidirectional=True)
            self.fc = nn.Linear(rnn_hidden, len(labels), bias=False)

        def get_seq_lens(self, input_length):
            seq_len = input_length
            for mod in self.conv.modules():
                if type(mod) == nn.modules.conv.Conv2d:
                    seq_len = ((seq_len + 2 * mod.padding[1] - mod.dilation[1] * (mod.kernel_size[1] - 1) - 1) // mod.stride[1] + 1)
            return seq_len.int()

        def forward(self, x, lengths):
            output_lengths = self.get_seq_lens(lengths)
            x = self.conv(x)
            sizes = x.size()
            x = x.view(sizes[0], sizes[1] * sizes[2], sizes[3])  # Collapse feature dimension
            x = x.transpose(1, 2).transpose(0, 1).contiguous()  # TxNxH
            x, _ = self.rnn(x)
            x = x.view(x.size(0), x.size(1), 2, -1).sum(2).view(x.size(0), x.size(1), -1)  # (TxNxH*2) -> (TxNxH) by sum
            x = self.fc(x)
            return x.log_softmax(-1), output_lengths

    def greedy_decode(log_probs, lengths):
        out = []
        best = log_probs.argmax(-1).transpose(0, 1)
        for seq, n in zip(best, lengths.tolist()):
            collapsed = torch.unique_consecutive(seq[:n])
            out.append("".join(labels[i] for i in collapsed.tolist() if i != blank))
        return out

    torch.manual_seed(0)
    model = DeepSpeech()
    init = load(m, model, state)
    criterion = nn.CTCLoss(blank=blank, reduction='sum', zero_infinity=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True)
    rng = np.random.default_rng(18)
    inputs = torch.tensor(normal(rng, 3, 1, 6, 5))
    input_sizes = torch.tensor([5, 4, 3])
    transcripts = ["ab", "c'", "abcab"]  # the last has more labels than frames: an infinite loss, zeroed
    targets = torch.tensor([labels.index(c) for t in transcripts for c in t], dtype=torch.long)
    target_sizes = torch.tensor([len(t) for t in transcripts], dtype=torch.int)
    losses = []
    for step in range(2):
        out, output_sizes = model(inputs, input_sizes)
        loss = criterion(out, targets, output_sizes, target_sizes)
        loss = loss / inputs.size(0)  # average the loss by minibatch
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 400)
        optimizer.step()
        losses.append(loss.item())
    losses += [len(s) for s in greedy_decode(out.detach(), output_sizes)]
    return init, losses + output_sizes.tolist() + summary(model.parameters())


def test_deepspeech_ctc():
    compare(deepspeech_ctc)


# ---- quantisation-aware training by hand ---------------------------------------------------------

# (x) a QAT script without torch.ao: a symmetric per-channel weight quantiser (scale from w.abs().amax(dim=(1, 2,
# 3), keepdim=True) / qmax, clamp_min(1e-8), torch.round, clamp, the straight-through estimator x + (q - x).detach()),
# an asymmetric activation quantiser with an EMA observer in buffers (running_min and running_max updated under
# torch.no_grad() in training, an `initialized` flag buffer), scale and zero_point from them (torch.round of
# -min / scale, clamped to the range), torch.fake_quantize_per_tensor_affine for the activations and
# torch.fake_quantize_per_channel_affine for the head's weights (int32 zero points), QConv2d and QLinear
# subclasses whose forward quantises self.weight before F.conv2d / F.linear, and a convert step that stores int8
# weights (torch.clamp(torch.round(w / scale), -128, 127).to(torch.int8)) and runs the dequantised model in eval
def qat_by_hand(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def round_ste(x):
        return x + (torch.round(x) - x).detach()

    def quantize_weight_per_channel(w, num_bits=8):
        qmax = 2 ** (num_bits - 1) - 1
        dims = tuple(range(1, w.dim()))
        scale = (w.detach().abs().amax(dim=dims, keepdim=True) / qmax).clamp_min(1e-8)
        q = torch.clamp(round_ste(w / scale), -qmax - 1, qmax)
        return q * scale, scale

    class ActQuant(nn.Module):
        def __init__(self, num_bits=8, momentum=0.1):
            super().__init__()
            self.quant_min, self.quant_max = 0, 2 ** num_bits - 1
            self.momentum = momentum
            self.register_buffer('running_min', torch.zeros(1))
            self.register_buffer('running_max', torch.zeros(1))
            self.register_buffer('initialized', torch.tensor(0, dtype=torch.uint8))

        def qparams(self):
            scale = (self.running_max - self.running_min).clamp_min(1e-8) / float(self.quant_max - self.quant_min)
            zero_point = torch.clamp(self.quant_min - torch.round(self.running_min / scale), self.quant_min, self.quant_max)
            return float(scale), int(zero_point)

        def forward(self, x):
            if self.training:
                with torch.no_grad():
                    cur_min, cur_max = x.min().clamp(max=0.0), x.max().clamp(min=0.0)
                    if self.initialized.item() == 0:
                        self.running_min.fill_(cur_min.item())
                        self.running_max.fill_(cur_max.item())
                        self.initialized.fill_(1)
                    else:
                        self.running_min.mul_(1 - self.momentum).add_(self.momentum * cur_min)
                        self.running_max.mul_(1 - self.momentum).add_(self.momentum * cur_max)
            scale, zero_point = self.qparams()
            return torch.fake_quantize_per_tensor_affine(x, scale, zero_point, self.quant_min, self.quant_max)

    class QConv2d(nn.Conv2d):
        def forward(self, x):
            w_q, _ = quantize_weight_per_channel(self.weight)
            return F.conv2d(x, w_q, self.bias, self.stride, self.padding, self.dilation, self.groups)

    class QLinear(nn.Linear):
        def forward(self, x):
            scale = (self.weight.detach().abs().amax(dim=1) / 127).clamp_min(1e-8)
            w_q = torch.fake_quantize_per_channel_affine(self.weight, scale, torch.zeros(self.out_features, dtype=torch.int32),
                                                         0, -128, 127)
            return F.linear(x, w_q, self.bias)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant_in = ActQuant()
            self.conv = QConv2d(1, 4, 3, padding=1)
            self.act_q = ActQuant()
            self.fc = QLinear(4 * 3 * 3, 5)

        def forward(self, x):
            x = self.quant_in(x)
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            x = self.act_q(x)
            return self.fc(torch.flatten(x, 1))

    torch.manual_seed(0)
    model = Net()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(19)
    losses = []
    for step in range(3):
        x, y = torch.tensor(normal(rng, 4, 1, 6, 6)), torch.tensor(rng.integers(0, 5, 4))
        model.train()
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), float(model.act_q.running_max), float(model.quant_in.running_min)]
    # convert: int8 weights and their scales; the dequantised model in eval mode
    with torch.no_grad():
        w = model.conv.weight
        scale = (w.abs().amax(dim=(1, 2, 3), keepdim=True) / 127).clamp_min(1e-8)
        w_int8 = torch.clamp(torch.round(w / scale), -128, 127).to(torch.int8)
        assert w_int8.dtype == torch.int8 and int(w_int8.abs().max()) == 127
        model.conv.weight.copy_(w_int8.float() * scale)
    model.eval()
    with torch.no_grad():
        out = model(x)
    losses += [float(out.sum()), int(w_int8.sum()), model.act_q.qparams()[1]]
    return init, losses + summary(model.parameters())


def test_qat_by_hand():
    compare(qat_by_hand)


# ---- representation learning beyond the earlier files --------------------------------------------

# (y) VQ-VAE's vector quantiser as zalandoresearch's notebook and rosinality's vqvae.py write it: inputs permuted
# to channels-last (permute(0, 2, 3, 1).contiguous()), distances (torch.sum(flat_input ** 2, dim=1, keepdim=True) +
# torch.sum(self._embedding.weight ** 2, dim=1) - 2 * torch.matmul(flat_input, self._embedding.weight.t())),
# torch.argmin(...).unsqueeze(1), encodings by torch.zeros(...).scatter_(1, encoding_indices, 1), quantized by
# torch.matmul(encodings, weight).view(input_shape), e_latent_loss and q_latent_loss with .detach() on either side,
# the straight-through inputs + (quantized - inputs).detach(), the perplexity torch.exp(-torch.sum(avg_probs *
# torch.log(avg_probs + 1e-10))); and the EMA variant's buffers (cluster_size and embed_avg updated with mul_ and
# add_ under torch.no_grad(), embed_sum = flat.t() @ onehot, Laplace smoothing, embed.copy_(embed_avg / n))
def vq_vae(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class VectorQuantizer(nn.Module):
        def __init__(self, num_embeddings, embedding_dim, commitment_cost):
            super().__init__()
            self._embedding_dim = embedding_dim
            self._num_embeddings = num_embeddings
            self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
            self._embedding.weight.data.uniform_(-1 / self._num_embeddings, 1 / self._num_embeddings)
            self._commitment_cost = commitment_cost

        def forward(self, inputs):
            inputs = inputs.permute(0, 2, 3, 1).contiguous()
            input_shape = inputs.shape
            flat_input = inputs.view(-1, self._embedding_dim)
            distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True) + torch.sum(self._embedding.weight ** 2, dim=1)
                         - 2 * torch.matmul(flat_input, self._embedding.weight.t()))
            encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
            encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings, device=inputs.device)
            encodings.scatter_(1, encoding_indices, 1)
            quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
            e_latent_loss = F.mse_loss(quantized.detach(), inputs)
            q_latent_loss = F.mse_loss(quantized, inputs.detach())
            loss = q_latent_loss + self._commitment_cost * e_latent_loss
            quantized = inputs + (quantized - inputs).detach()
            avg_probs = torch.mean(encodings, dim=0)
            perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
            return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings

    class QuantizeEMA(nn.Module):
        def __init__(self, dim, n_embed, decay=0.9, eps=1e-5):
            super().__init__()
            self.dim, self.n_embed, self.decay, self.eps = dim, n_embed, decay, eps
            embed = torch.randn(dim, n_embed)
            self.register_buffer("embed", embed)
            self.register_buffer("cluster_size", torch.zeros(n_embed))
            self.register_buffer("embed_avg", embed.clone())

        def forward(self, input):
            flatten = input.reshape(-1, self.dim)
            dist = (flatten.pow(2).sum(1, keepdim=True) - 2 * flatten @ self.embed + self.embed.pow(2).sum(0, keepdim=True))
            _, embed_ind = (-dist).max(1)
            embed_onehot = F.one_hot(embed_ind, self.n_embed).type(flatten.dtype)
            embed_ind = embed_ind.view(*input.shape[:-1])
            quantize = F.embedding(embed_ind, self.embed.transpose(0, 1))
            if self.training:
                embed_onehot_sum = embed_onehot.sum(0)
                embed_sum = flatten.transpose(0, 1) @ embed_onehot
                with torch.no_grad():
                    self.cluster_size.data.mul_(self.decay).add_(embed_onehot_sum, alpha=1 - self.decay)
                    self.embed_avg.data.mul_(self.decay).add_(embed_sum, alpha=1 - self.decay)
                    n = self.cluster_size.sum()
                    cluster_size = ((self.cluster_size + self.eps) / (n + self.n_embed * self.eps) * n)
                    embed_normalized = self.embed_avg / cluster_size.unsqueeze(0)
                    self.embed.data.copy_(embed_normalized)
            diff = (quantize.detach() - input).pow(2).mean()
            quantize = input + (quantize - input).detach()
            return quantize, diff, embed_ind

    class Model(nn.Module):
        def __init__(self, num_embeddings=6, embedding_dim=3, commitment_cost=0.25):
            super().__init__()
            self._encoder = nn.Sequential(nn.Conv2d(1, 4, 4, stride=2, padding=1), nn.ReLU(), nn.Conv2d(4, embedding_dim, 1))
            self._vq_vae = VectorQuantizer(num_embeddings, embedding_dim, commitment_cost)
            self._ema = QuantizeEMA(embedding_dim, num_embeddings)
            self._decoder = nn.Sequential(nn.ConvTranspose2d(embedding_dim, 4, 4, stride=2, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 3, padding=1))

        def forward(self, x):
            z = self._encoder(x)
            loss, quantized, perplexity, _ = self._vq_vae(z)
            q_ema, diff, _ = self._ema(z.permute(0, 2, 3, 1))
            x_recon = self._decoder(quantized + q_ema.permute(0, 3, 1, 2))
            return loss + 0.25 * diff, x_recon, perplexity

    torch.manual_seed(0)
    model = Model()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=False)
    rng = np.random.default_rng(22)
    data = torch.tensor(normal(rng, 2, 1, 6, 6))
    data_variance = float(np.var(data.numpy()))
    losses = []
    for i in range(2):
        optimizer.zero_grad()
        vq_loss, data_recon, perplexity = model(data)
        recon_error = F.mse_loss(data_recon, data) / data_variance
        loss = recon_error + vq_loss
        loss.backward()
        optimizer.step()
        losses += [recon_error.item(), vq_loss.item(), perplexity.item()]
    buffers = [float(model._ema.cluster_size.sum()), float(model._ema.embed.sum())]
    return init, losses + buffers + summary(model.parameters())


def test_vq_vae():
    compare(vq_vae)


# (z) CLIP's and MAE's training pieces: open_clip's ClipLoss (logit_scale = nn.Parameter(torch.ones([]) * np.log(1 /
# 0.07)), logit_scale.exp(), image and text features F.normalize'd, logits_per_image = logit_scale * image_features
# @ text_features.T, labels by torch.arange, the mean of the two cross-entropies), the clamp of the logit scale under
# torch.no_grad() (model.logit_scale.clamp_(0, math.log(100))), SigLIP's sigmoid loss (labels 2 * torch.eye(n) -
# torch.ones(n, n), -F.logsigmoid(labels * logits).sum() / n, a logit_bias), and MAE's random_masking (noise
# argsort'd twice for ids_restore, torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D)), the binary
# mask by torch.ones then mask[:, :len_keep] = 0 and a gather by ids_restore) with its per-patch normalised MSE
# (mean and var over the last dim, (pred - target) ** 2 .mean(dim=-1), (loss * mask).sum() / mask.sum()); the
# noise is numpy's
def clip_mae(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    L, D, embed_dim = 6, 4, 5

    def random_masking(x, mask_ratio, noise):
        N, L, D = x.shape  # batch, length, dim
        len_keep = int(L * (1 - mask_ratio))
        ids_shuffle = torch.argsort(noise, dim=1)  # ascend: small is keep, large is remove
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]
        x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))
        mask = torch.ones([N, L], device=x.device)
        mask[:, :len_keep] = 0
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return x_masked, mask, ids_restore

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embed = nn.Linear(D, 8)
            self.pos_embed = nn.Parameter(torch.zeros(1, L, 8))
            self.mask_token = nn.Parameter(torch.zeros(1, 1, 8))
            torch.nn.init.normal_(self.mask_token, std=.02)
            torch.nn.init.normal_(self.pos_embed, std=.02)
            self.encoder = nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8), nn.GELU())
            self.decoder_pred = nn.Linear(8, D)
            self.visual_proj = nn.Linear(8, embed_dim, bias=False)
            self.text = nn.EmbeddingBag(10, embed_dim, mode='mean')
            self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))
            self.logit_bias = nn.Parameter(torch.ones([]) * -2.0)

        def forward_encoder(self, x, mask_ratio, noise):
            x = self.patch_embed(x) + self.pos_embed
            x, mask, ids_restore = random_masking(x, mask_ratio, noise)
            return self.encoder(x), mask, ids_restore

        def forward_decoder(self, x, ids_restore):
            mask_tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] - x.shape[1], 1)
            x_ = torch.cat([x, mask_tokens], dim=1)
            x_ = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))
            return self.decoder_pred(x_ + self.pos_embed)

    def forward_loss(target, pred, mask, norm_pix_loss=True):
        if norm_pix_loss:
            mean = target.mean(dim=-1, keepdim=True)
            var = target.var(dim=-1, keepdim=True)
            target = (target - mean) / (var + 1.e-6) ** .5
        loss = (pred - target) ** 2
        loss = loss.mean(dim=-1)  # [N, L], mean loss per patch
        return (loss * mask).sum() / mask.sum()  # mean loss on removed patches

    def clip_loss(image_features, text_features, logit_scale):
        logits_per_image = logit_scale * image_features @ text_features.T
        logits_per_text = logit_scale * text_features @ image_features.T
        labels = torch.arange(logits_per_image.shape[0], device=image_features.device, dtype=torch.long)
        return (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2

    def siglip_loss(image_features, text_features, logit_scale, logit_bias):
        logits = logit_scale * image_features @ text_features.T + logit_bias
        n = logits.shape[0]
        labels = 2 * torch.eye(n, device=logits.device, dtype=logits.dtype) - torch.ones(n, n)
        return -F.logsigmoid(labels * logits).sum() / n

    torch.manual_seed(0)
    model = Model()
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.2)
    rng = np.random.default_rng(23)
    imgs = torch.tensor(normal(rng, 3, L, D))
    text = torch.tensor(rng.integers(0, 10, 9))
    offsets = torch.tensor([0, 2, 5])
    losses = []
    for step in range(2):
        latent, mask, ids_restore = model.forward_encoder(imgs, 0.5, torch.tensor(rng.random((3, L)).astype(np.float32)))
        pred = model.forward_decoder(latent, ids_restore)
        mae = forward_loss(imgs, pred, mask)
        image_features = F.normalize(model.visual_proj(latent.mean(dim=1)), dim=-1)
        text_features = F.normalize(model.text(text, offsets), dim=-1)
        contrastive = clip_loss(image_features, text_features, model.logit_scale.exp())
        sig = siglip_loss(image_features, text_features, model.logit_scale.exp(), model.logit_bias)
        loss = mae + contrastive + 0.1 * sig
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        losses += [mae.item(), contrastive.item(), sig.item(), float(mask.sum())]
    return init, losses + summary(model.parameters())


def test_clip_siglip_mae():
    compare(clip_mae)


# ---- recommendation ----------------------------------------------------------------------------

# (aa) recommender models as tutorials write them: a factorization machine (the linear part by an nn.Embedding of
# one column plus a bias, the pairwise part by 0.5 * (square_of_sum - sum_of_square) over field embeddings indexed
# with x + x.new_tensor(offsets).unsqueeze(0)), NCF's NeuMF (GMF's element-wise product beside an MLP over the
# concatenated user and item embeddings), DLRM's dot interaction (torch.bmm(T, T.transpose(1, 2)), the strictly
# lower triangle by torch.tril_indices(n, n, offset=-1), cat with the dense features), an nn.EmbeddingBag(mode='sum')
# over multi-hot features with offsets and per_sample_weights, BCEWithLogits on clicks, and BPR's
# -F.logsigmoid(pos - neg).mean() with L2 on the batch's embeddings; Adagrad as DLRM's and SparseAdam-free
def recsys(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    field_dims = np.array([4, 3, 5])
    n_users, n_items, k = 5, 7, 4

    class FeaturesEmbedding(nn.Module):
        def __init__(self, field_dims, embed_dim):
            super().__init__()
            self.embedding = nn.Embedding(sum(field_dims), embed_dim)
            self.offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)
            nn.init.xavier_uniform_(self.embedding.weight.data)

        def forward(self, x):
            x = x + x.new_tensor(self.offsets).unsqueeze(0)
            return self.embedding(x)

    class FactorizationMachineModel(nn.Module):
        def __init__(self, field_dims, embed_dim):
            super().__init__()
            self.embedding = FeaturesEmbedding(field_dims, embed_dim)
            self.fc = nn.Embedding(sum(field_dims), 1)
            self.bias = nn.Parameter(torch.zeros((1,)))
            self.offsets = self.embedding.offsets

        def forward(self, x):
            linear = torch.sum(self.fc(x + x.new_tensor(self.offsets).unsqueeze(0)), dim=1) + self.bias
            embed_x = self.embedding(x)
            square_of_sum = torch.sum(embed_x, dim=1) ** 2
            sum_of_square = torch.sum(embed_x ** 2, dim=1)
            ix = 0.5 * torch.sum(square_of_sum - sum_of_square, dim=1, keepdim=True)
            return (linear + ix).squeeze(1)

    class NeuMF(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_user_GMF = nn.Embedding(n_users, k)
            self.embed_item_GMF = nn.Embedding(n_items, k)
            self.embed_user_MLP = nn.Embedding(n_users, k)
            self.embed_item_MLP = nn.Embedding(n_items, k)
            self.MLP_layers = nn.Sequential(nn.Dropout(p=0.0), nn.Linear(2 * k, k), nn.ReLU())
            self.predict_layer = nn.Linear(2 * k, 1)
            nn.init.normal_(self.embed_user_GMF.weight, std=0.01)
            nn.init.normal_(self.embed_item_GMF.weight, std=0.01)
            nn.init.kaiming_uniform_(self.predict_layer.weight, a=1, nonlinearity='sigmoid')

        def forward(self, user, item):
            output_GMF = self.embed_user_GMF(user) * self.embed_item_GMF(item)
            interaction = torch.cat((self.embed_user_MLP(user), self.embed_item_MLP(item)), -1)
            output_MLP = self.MLP_layers(interaction)
            concat = torch.cat((output_GMF, output_MLP), -1)
            return self.predict_layer(concat).view(-1)

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.bot_l = nn.Sequential(nn.Linear(3, k), nn.ReLU())
            self.emb_l = nn.ModuleList([nn.EmbeddingBag(n, k, mode="sum") for n in (6, 4)])
            num_int = 3 * 2 // 2 + k
            self.top_l = nn.Sequential(nn.Linear(num_int, 4), nn.ReLU(), nn.Linear(4, 1))

        def interact_features(self, x, ly):
            (batch_size, d) = x.shape
            T = torch.cat([x] + ly, dim=1).view((batch_size, -1, d))
            Z = torch.bmm(T, torch.transpose(T, 1, 2))
            _, ni, nj = Z.shape
            li, lj = torch.tril_indices(ni, nj, offset=-1)
            Zflat = Z[:, li, lj]
            return torch.cat([x] + [Zflat], dim=1)

        def forward(self, dense_x, lS_o, lS_i, weights):
            x = self.bot_l(dense_x)
            ly = [E(lS_i[i], lS_o[i], per_sample_weights=weights[i]) for i, E in enumerate(self.emb_l)]
            return self.top_l(self.interact_features(x, ly)).squeeze(1)

    torch.manual_seed(0)
    model = nn.ModuleDict(dict(fm=FactorizationMachineModel(field_dims, k), ncf=NeuMF(), dlrm=DLRM()))
    init = load(m, model, state)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05, initial_accumulator_value=0.1)
    criterion = torch.nn.BCEWithLogitsLoss()
    rng = np.random.default_rng(24)
    losses = []
    for step in range(2):
        fields = torch.tensor(np.stack([rng.integers(0, d, 6) for d in field_dims], 1))
        clicks = torch.tensor(rng.integers(0, 2, 6)).float()
        user, pos, neg = (torch.tensor(rng.integers(0, n, 6)) for n in (n_users, n_items, n_items))
        pos_score, neg_score = model['ncf'](user, pos), model['ncf'](user, neg)
        bpr = -F.logsigmoid(pos_score - neg_score).mean()
        reg = (model['ncf'].embed_user_GMF(user).norm(2).pow(2) + model['ncf'].embed_item_GMF(pos).norm(2).pow(2)) / 6
        lS_i = [torch.tensor(rng.integers(0, 6, 9)), torch.tensor(rng.integers(0, 4, 8))]
        lS_o = [torch.tensor([0, 1, 3, 4, 6, 8]), torch.tensor([0, 2, 3, 5, 6, 7])]
        weights = [torch.tensor(rng.random(9).astype(np.float32)), torch.tensor(rng.random(8).astype(np.float32))]
        dense = torch.tensor(normal(rng, 6, 3))
        loss = criterion(model['fm'](fields), clicks) + bpr + 1e-2 * reg + criterion(model['dlrm'](dense, lS_o, lS_i, weights), clicks)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), bpr.item()]
    return init, losses + summary(model.parameters())


def test_recsys_fm_ncf_dlrm():
    compare(recsys)
