"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: rtqichen's beta-TCVAE (minibatch stratified sampling: a log importance weight matrix
written through strided views of its flat view, pairwise log densities by broadcasting, a hand-made logsumexp);
lucidrains' slot-attention with google-research's soft position embedding and spatial-broadcast decoder (a numpy grid
by np.meshgrid, einsum attention normalised over the slots, a GRUCell over flattened slots, alpha masks split off and
softmaxed over the slots); pclucas14's pixel-cnn-pp (the discretized mixture of logistics loss by float masks, and
its sampler: a Gumbel argmax, a one-hot by scatter_ into torch.FloatTensor(size)); toshikwa's fqf-iqn-qrdqn IQN
(cosine tau embeddings, quantiles gathered at actions, the quantile Huber loss, a frozen target network); NVIDIA's
WaveGlow (a jit.script gate, 1x1 convolutions initialised by torch.qr and torch.det, torch.logdet, a cached inverse,
weight_norm then remove_weight_norm, grouping by unfold); second.pytorch's PointPillars (pillar features under a
padding mask, a BEV canvas written by canvas[:, indices] = voxels.t()). All ran in tnet unchanged. Each runs in
tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed
into a few numbers, agree. Numpy draws what a script draws (torch.randn, rand, uniform_ are replaced by numpy's
draws); shapes are tiny and runs take one or two steps."""

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) rtqichen/beta-tcvae (vae_quant.py's VAE.elbo_decomposition-style objective with mss=True and
# _log_importance_weight_matrix; lib/dist.py's Normal.log_density; lib/utils.py's logsumexp): a reparameterised
# sample from z_params.view(B, z_dim, 2) by select(-1, i), _logqz of zs.view(B, 1, D) against z_params.view(1, B, D, 2),
# W.view(-1)[::M + 1] = 1 / N and W.view(-1)[1::M + 1] = strat_weight, the modified ELBO with beta and lamb
def beta_tcvae(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(3)

    def logsumexp(value, dim=None, keepdim=False):
        if dim is not None:
            m_, _ = torch.max(value, dim=dim, keepdim=True)
            value0 = value - m_
            if keepdim is False:
                m_ = m_.squeeze(dim)
            return m_ + torch.log(torch.sum(torch.exp(value0), dim=dim, keepdim=keepdim))
        m_ = torch.max(value)
        return m_ + torch.log(torch.sum(torch.exp(value - m_)))

    class Normal(nn.Module):
        def __init__(self):
            super(Normal, self).__init__()
            self.normalization = torch.Tensor([np.log(2 * np.pi)])

        def sample(self, params, eps):
            mu, logsigma = params.select(-1, 0), params.select(-1, 1)
            return eps * torch.exp(logsigma) + mu

        def log_density(self, sample, params):
            mu, logsigma = params.select(-1, 0), params.select(-1, 1)
            c = self.normalization.type_as(sample.data)
            inv_sigma = torch.exp(-logsigma)
            tmp = (sample - mu) * inv_sigma
            return -0.5 * (tmp * tmp + 2 * logsigma + c)

    class VAE(nn.Module):
        def __init__(self, z_dim, x_dim=12, beta=4.0, lamb=0.5):
            super(VAE, self).__init__()
            self.z_dim, self.beta, self.lamb = z_dim, beta, lamb
            self.encoder = nn.Sequential(nn.Linear(x_dim, 16), nn.ReLU(), nn.Linear(16, z_dim * 2))
            self.decoder = nn.Sequential(nn.Linear(z_dim, 16), nn.Tanh(), nn.Linear(16, x_dim))
            self.q_dist = Normal()
            self.register_buffer("prior_params", torch.zeros(self.z_dim, 2))

        def _log_importance_weight_matrix(self, batch_size, dataset_size):
            N = dataset_size
            M = batch_size - 1
            strat_weight = (N - M) / (N * M)
            W = torch.Tensor(batch_size, batch_size).fill_(1 / M)
            W.view(-1)[::M + 1] = 1 / N
            W.view(-1)[1::M + 1] = strat_weight
            W[M - 1, 0] = strat_weight
            return W.log()

        def elbo(self, x, eps, dataset_size):
            batch_size = x.size(0)
            x = x.view(batch_size, -1)
            z_params = self.encoder(x).view(batch_size, self.z_dim, 2)
            zs = self.q_dist.sample(z_params, eps)
            x_params = self.decoder(zs)
            logpx = -F.binary_cross_entropy_with_logits(x_params, x, reduction="none").view(batch_size, -1).sum(1)
            prior_params = self.prior_params.expand(batch_size, *self.prior_params.size())
            logpz = self.q_dist.log_density(zs, params=prior_params).view(batch_size, -1).sum(1)
            logqz_condx = self.q_dist.log_density(zs, params=z_params).view(batch_size, -1).sum(1)
            _logqz = self.q_dist.log_density(zs.view(batch_size, 1, self.z_dim),
                                             z_params.view(1, batch_size, self.z_dim, 2))
            logiw_matrix = self._log_importance_weight_matrix(batch_size, dataset_size).type_as(_logqz.data)
            logqz = logsumexp(logiw_matrix + _logqz.sum(2), dim=1, keepdim=False)
            logqz_prodmarginals = logsumexp(logiw_matrix.view(batch_size, batch_size, 1) + _logqz, dim=1,
                                            keepdim=False).sum(1)
            modified_elbo = logpx - (logqz_condx - logqz) - self.beta * (logqz - logqz_prodmarginals) - \
                (1 - self.lamb) * (logqz_prodmarginals - logpz)
            return modified_elbo, (logqz - logqz_prodmarginals).mean().detach()

    vae = VAE(z_dim=3)
    init = load(m, vae, state)
    optimizer = torch.optim.Adam(vae.parameters(), lr=1e-3)
    losses = []
    for step in range(2):
        x = torch.tensor((rng.random((6, 12)) > 0.5).astype(np.float32))
        eps = torch.tensor(normal(rng, 6, 3))
        optimizer.zero_grad()
        obj, tc = vae.elbo(x, eps, dataset_size=60)
        obj.mul(-1).mean().backward()
        optimizer.step()
        losses += [obj.mean().item(), tc.item()]
    return init, losses + summary(vae.parameters())


def test_beta_tcvae():
    compare(beta_tcvae)


# (b) lucidrains/slot-attention (slot_attention/slot_attention.py) with google-research's object-centric autoencoder
# (slot_attention/model.py, ported in PyTorch as in evelinehong/slot-attention-pytorch's model.py): slots drawn as
# mu + sigma * noise (the noise from numpy), dots.softmax(dim=1) + eps renormalised over the inputs, einsum updates,
# a GRUCell over slots.reshape(-1, d), build_grid by np.meshgrid through torch.from_numpy, a spatial broadcast by
# repeat, recons and masks split from one tensor, masks softmaxed over the slots, an MSE loss
def slot_attention(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_ = m.nn.init
    torch.manual_seed(0)
    rng = np.random.default_rng(5)

    class SlotAttention(nn.Module):
        def __init__(self, num_slots, dim, iters=3, eps=1e-8, hidden_dim=128):
            super().__init__()
            self.num_slots = num_slots
            self.iters = iters
            self.eps = eps
            self.scale = dim ** -0.5
            self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
            self.slots_logsigma = nn.Parameter(torch.zeros(1, 1, dim))
            init_.xavier_uniform_(self.slots_logsigma)
            self.to_q = nn.Linear(dim, dim)
            self.to_k = nn.Linear(dim, dim)
            self.to_v = nn.Linear(dim, dim)
            self.gru = nn.GRUCell(dim, dim)
            hidden_dim = max(dim, hidden_dim)
            self.mlp = nn.Sequential(nn.Linear(dim, hidden_dim), nn.ReLU(inplace=True), nn.Linear(hidden_dim, dim))
            self.norm_input = nn.LayerNorm(dim)
            self.norm_slots = nn.LayerNorm(dim)
            self.norm_pre_ff = nn.LayerNorm(dim)

        def forward(self, inputs, noise, num_slots=None):
            b, _, d, device, dtype = *inputs.shape, inputs.device, inputs.dtype  # the source names n, unused
            n_s = num_slots if num_slots is not None else self.num_slots
            mu = self.slots_mu.expand(b, n_s, -1)
            sigma = self.slots_logsigma.exp().expand(b, n_s, -1)
            slots = mu + sigma * noise.to(device=device, dtype=dtype)
            inputs = self.norm_input(inputs)
            k, v = self.to_k(inputs), self.to_v(inputs)
            for _ in range(self.iters):
                slots_prev = slots
                slots = self.norm_slots(slots)
                q = self.to_q(slots)
                dots = torch.einsum("bid,bjd->bij", q, k) * self.scale
                attn = dots.softmax(dim=1) + self.eps
                attn = attn / attn.sum(dim=-1, keepdim=True)
                updates = torch.einsum("bjd,bij->bid", v, attn)
                slots = self.gru(updates.reshape(-1, d), slots_prev.reshape(-1, d))
                slots = slots.reshape(b, -1, d)
                slots = slots + self.mlp(self.norm_pre_ff(slots))
            return slots

    def build_grid(resolution):
        ranges = [np.linspace(0., 1., num=res) for res in resolution]
        grid = np.meshgrid(*ranges, sparse=False, indexing="ij")
        grid = np.stack(grid, axis=-1)
        grid = np.reshape(grid, [resolution[0], resolution[1], -1])
        grid = np.expand_dims(grid, axis=0)
        grid = grid.astype(np.float32)
        return torch.from_numpy(np.concatenate([grid, 1.0 - grid], axis=-1))

    class SoftPositionEmbed(nn.Module):
        def __init__(self, hidden_size, resolution):
            super().__init__()
            self.embedding = nn.Linear(4, hidden_size, bias=True)
            self.grid = build_grid(resolution)

        def forward(self, inputs):
            grid = self.embedding(self.grid)
            return inputs + grid

    class SlotAttentionAutoEncoder(nn.Module):
        def __init__(self, resolution, num_slots, num_iterations, hid_dim):
            super().__init__()
            self.hid_dim, self.resolution, self.num_slots = hid_dim, resolution, num_slots
            self.conv1 = nn.Conv2d(3, hid_dim, 5, padding=2)
            self.conv2 = nn.Conv2d(hid_dim, hid_dim, 5, padding=2)
            self.encoder_pos = SoftPositionEmbed(hid_dim, resolution)
            self.decoder_initial_size = (4, 4)
            self.decoder_pos = SoftPositionEmbed(hid_dim, self.decoder_initial_size)
            self.conv5 = nn.ConvTranspose2d(hid_dim, hid_dim, 5, stride=(2, 2), padding=2, output_padding=1)
            self.conv6 = nn.ConvTranspose2d(hid_dim, 4, 3, stride=(1, 1), padding=1)
            self.fc1 = nn.Linear(hid_dim, hid_dim)
            self.fc2 = nn.Linear(hid_dim, hid_dim)
            self.layer_norm = nn.LayerNorm(hid_dim)
            self.slot_attention = SlotAttention(num_slots=num_slots, dim=hid_dim, iters=num_iterations, eps=1e-8,
                                                hidden_dim=32)

        def forward(self, image, noise):
            x = F.relu(self.conv1(image))
            x = F.relu(self.conv2(x))
            x = x.permute(0, 2, 3, 1)
            x = self.encoder_pos(x)
            x = torch.flatten(x, 1, 2)
            x = self.fc2(F.relu(self.fc1(self.layer_norm(x))))
            slots = self.slot_attention(x, noise)
            x = slots.reshape((-1, slots.shape[-1])).unsqueeze(1).unsqueeze(2)
            x = x.repeat((1, self.decoder_initial_size[0], self.decoder_initial_size[1], 1))
            x = self.decoder_pos(x)
            x = x.permute(0, 3, 1, 2)
            x = F.relu(self.conv5(x))
            x = self.conv6(x)
            x = x.permute(0, 2, 3, 1)
            recons, masks = x.reshape(image.shape[0], -1, x.shape[1], x.shape[2], x.shape[3]).split([3, 1], dim=-1)
            masks = nn.Softmax(dim=1)(masks)
            recon_combined = torch.sum(recons * masks, dim=1)
            recon_combined = recon_combined.permute(0, 3, 1, 2)
            return recon_combined, recons, masks, slots

    model = SlotAttentionAutoEncoder((8, 8), num_slots=3, num_iterations=2, hid_dim=8)
    init = load(m, model, state)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=4e-4)
    losses = []
    for step in range(2):
        image = torch.tensor(rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32))
        noise = torch.tensor(normal(rng, 2, 3, 8))
        recon_combined, recons, masks, slots = model(image, noise)
        loss = criterion(recon_combined, image)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), masks.max().item()]
    return init, losses + summary(model.parameters())


def test_slot_attention():
    # three GRU-updated attention rounds amplify the layer norms' last bits: a parameter sum near 0 moves past atol's
    # default between two summation orders of layer_norm's statistics, each as accurate as torch's (docs/results.md)
    compare(slot_attention, atol=1e-4)


# (c) pclucas14/pixel-cnn-pp (utils.py's concat_elu, log_sum_exp, log_prob_from_logits, discretized_mix_logistic_loss,
# to_one_hot, sample_from_discretized_mix_logistic; layers.py's down_shift and right_shift by ZeroPad2d): l[..., nr_mix:]
# .contiguous().view(xs + [nr_mix * 3]), x.unsqueeze(-1) + zeros(xs + [nr_mix]), means rebuilt by cat of views, the
# cdf branches chosen by float masks; the sampler's torch.FloatTensor(size) filled by uniform_ (here copy_ of numpy's
# draw), a Gumbel argmax by max(dim=3), one_hot.scatter_, clamps chained by min then max
def pixelcnn_pp_mixture(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(7)

    def concat_elu(x):
        axis = len(x.size()) - 3
        return F.elu(torch.cat([x, -x], dim=axis))

    def log_sum_exp(x):
        axis = len(x.size()) - 1
        m_, _ = torch.max(x, dim=axis)
        m2, _ = torch.max(x, dim=axis, keepdim=True)
        return m_ + torch.log(torch.sum(torch.exp(x - m2), dim=axis))

    def log_prob_from_logits(x):
        axis = len(x.size()) - 1
        m_, _ = torch.max(x, dim=axis, keepdim=True)
        return x - m_ - torch.log(torch.sum(torch.exp(x - m_), dim=axis, keepdim=True))

    def discretized_mix_logistic_loss(x, l):
        x = x.permute(0, 2, 3, 1)
        l = l.permute(0, 2, 3, 1)
        xs = [int(y) for y in x.size()]
        ls = [int(y) for y in l.size()]
        nr_mix = int(ls[-1] / 10)
        logit_probs = l[:, :, :, :nr_mix]
        l = l[:, :, :, nr_mix:].contiguous().view(xs + [nr_mix * 3])
        means = l[:, :, :, :, :nr_mix]
        log_scales = torch.clamp(l[:, :, :, :, nr_mix:2 * nr_mix], min=-7.)
        coeffs = torch.tanh(l[:, :, :, :, 2 * nr_mix:3 * nr_mix])
        x = x.contiguous()
        x = x.unsqueeze(-1) + torch.zeros(xs + [nr_mix], requires_grad=False)
        m2 = (means[:, :, :, 1, :] + coeffs[:, :, :, 0, :] * x[:, :, :, 0, :]).view(xs[0], xs[1], xs[2], 1, nr_mix)
        m3 = (means[:, :, :, 2, :] + coeffs[:, :, :, 1, :] * x[:, :, :, 0, :] +
              coeffs[:, :, :, 2, :] * x[:, :, :, 1, :]).view(xs[0], xs[1], xs[2], 1, nr_mix)
        means = torch.cat((means[:, :, :, 0, :].unsqueeze(3), m2, m3), dim=3)
        centered_x = x - means
        inv_stdv = torch.exp(-log_scales)
        plus_in = inv_stdv * (centered_x + 1. / 255.)
        cdf_plus = torch.sigmoid(plus_in)
        min_in = inv_stdv * (centered_x - 1. / 255.)
        cdf_min = torch.sigmoid(min_in)
        log_cdf_plus = plus_in - F.softplus(plus_in)
        log_one_minus_cdf_min = -F.softplus(min_in)
        cdf_delta = cdf_plus - cdf_min
        mid_in = inv_stdv * centered_x
        log_pdf_mid = mid_in - log_scales - 2. * F.softplus(mid_in)
        inner_inner_cond = (cdf_delta > 1e-5).float()
        inner_inner_out = inner_inner_cond * torch.log(torch.clamp(cdf_delta, min=1e-12)) + \
            (1. - inner_inner_cond) * (log_pdf_mid - np.log(127.5))
        inner_cond = (x > 0.999).float()
        inner_out = inner_cond * log_one_minus_cdf_min + (1. - inner_cond) * inner_inner_out
        cond = (x < -0.999).float()
        log_probs = cond * log_cdf_plus + (1. - cond) * inner_out
        log_probs = torch.sum(log_probs, dim=3) + log_prob_from_logits(logit_probs)
        return -torch.sum(log_sum_exp(log_probs))

    def to_one_hot(tensor, n, fill_with=1.):
        one_hot = torch.FloatTensor(tensor.size() + (n,)).zero_()
        one_hot.scatter_(len(tensor.size()), tensor.unsqueeze(-1), fill_with)
        return one_hot

    def sample_from_discretized_mix_logistic(l, nr_mix):
        l = l.permute(0, 2, 3, 1)
        ls = [int(y) for y in l.size()]
        xs = ls[:-1] + [3]
        logit_probs = l[:, :, :, :nr_mix]
        l = l[:, :, :, nr_mix:].contiguous().view(xs + [nr_mix * 3])
        temp = torch.FloatTensor(logit_probs.size())
        temp.copy_(torch.from_numpy(rng.uniform(1e-5, 1. - 1e-5, tuple(temp.shape)).astype(np.float32)))
        temp = logit_probs.data - torch.log(- torch.log(temp))
        _, argmax = temp.max(dim=3)
        one_hot = to_one_hot(argmax, nr_mix)
        sel = one_hot.view(xs[:-1] + [1, nr_mix])
        means = torch.sum(l[:, :, :, :, :nr_mix] * sel, dim=4)
        log_scales = torch.clamp(torch.sum(l[:, :, :, :, nr_mix:2 * nr_mix] * sel, dim=4), min=-7.)
        coeffs = torch.sum(torch.tanh(l[:, :, :, :, 2 * nr_mix:3 * nr_mix]) * sel, dim=4)
        u = torch.FloatTensor(means.size())
        u.copy_(torch.from_numpy(rng.uniform(1e-5, 1. - 1e-5, tuple(u.shape)).astype(np.float32)))
        x = means + torch.exp(log_scales) * (torch.log(u) - torch.log(1. - u))
        x0 = torch.clamp(torch.clamp(x[:, :, :, 0], min=-1.), max=1.)
        x1 = torch.clamp(torch.clamp(x[:, :, :, 1] + coeffs[:, :, :, 0] * x0, min=-1.), max=1.)
        x2 = torch.clamp(torch.clamp(x[:, :, :, 2] + coeffs[:, :, :, 1] * x0 + coeffs[:, :, :, 2] * x1, min=-1.),
                         max=1.)
        out = torch.cat([x0.view(xs[:-1] + [1]), x1.view(xs[:-1] + [1]), x2.view(xs[:-1] + [1])], dim=3)
        return out.permute(0, 3, 1, 2)

    def down_shift(x, pad=None):
        xs = [int(y) for y in x.size()]
        x = x[:, :, :xs[2] - 1, :]
        pad = nn.ZeroPad2d((0, 0, 1, 0)) if pad is None else pad
        return pad(x)

    def right_shift(x, pad=None):
        xs = [int(y) for y in x.size()]
        x = x[:, :, :, :xs[3] - 1]
        pad = nn.ZeroPad2d((1, 0, 0, 0)) if pad is None else pad
        return pad(x)

    class TinyShiftedNet(nn.Module):  # stands in for PixelCNN's stacks: causal by shifts, not its exact layout
        def __init__(self, nr_filters=6, nr_logistic_mix=2):
            super().__init__()
            self.u_init = nn.Conv2d(3, nr_filters, (2, 3), padding=(1, 1))
            self.ul_init = nn.Conv2d(3, nr_filters, (1, 3), padding=(0, 1))
            self.nin = nn.Conv2d(2 * nr_filters, nr_filters, 1)
            self.nin_out = nn.Conv2d(2 * nr_filters, 10 * nr_logistic_mix, 1)

        def forward(self, x):
            u = down_shift(self.u_init(x)[:, :, :x.shape[2], :])
            ul = right_shift(self.ul_init(x)) + u
            ul = ul + self.nin(concat_elu(ul))
            return self.nin_out(F.elu(torch.cat([ul, -ul], 1)))

    model = TinyShiftedNet()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.999995)
    losses = []
    for step in range(2):
        input = torch.tensor(np.round(rng.uniform(-1, 1, (2, 3, 6, 6)) * 127.5).astype(np.float32) / 127.5)
        input[0, 0, 0, :2] = 1.0  # the x > 0.999 and x < -0.999 branches
        input[1, 1, 2, 3:] = -1.0
        output = model(input)
        loss = discretized_mix_logistic_loss(input, output)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses += [loss.item() / (np.prod(input.size()) * np.log(2.))]
    model.eval()
    with torch.no_grad():
        data = torch.zeros(1, 3, 6, 6)
        for i in range(2):
            for j in range(6):
                out = model(data)
                out_sample = sample_from_discretized_mix_logistic(out, 2)
                data[:, :, i, j] = out_sample.data[:, :, i, j]
    losses += [data.sum().item(), data.abs().sum().item()]
    return init, losses + summary(model.parameters())


def test_pixelcnn_pp_mixture():
    compare(pixelcnn_pp_mixture)


# (d) toshikwa/fqf-iqn-qrdqn.pytorch (fqf_iqn_qrdqn/network.py's CosineEmbeddingNetwork and QuantileNetwork,
# fqf_iqn_qrdqn/model/iqn.py, fqf_iqn_qrdqn/agent/iqn_agent.py's calculate_loss, fqf_iqn_qrdqn/utils.py): cosines of
# taus.view(B, N, 1) * pi * arange(1, n + 1, dtype=taus.dtype).view(1, 1, n), state x tau embeddings, quantiles
# gathered at actions[..., None].expand(B, N, 1), double-Q next actions by argmax(keepdim=True), a target network
# frozen by requires_grad = False, the quantile Huber loss by torch.where and (td.detach() < 0).float(), PER weights
def iqn_quantile_huber(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(9)

    class CosineEmbeddingNetwork(nn.Module):
        def __init__(self, num_cosines=64, embedding_dim=7 * 7 * 64):
            super(CosineEmbeddingNetwork, self).__init__()
            self.net = nn.Sequential(nn.Linear(num_cosines, embedding_dim), nn.ReLU())
            self.num_cosines = num_cosines
            self.embedding_dim = embedding_dim

        def forward(self, taus):
            batch_size = taus.shape[0]
            N = taus.shape[1]
            i_pi = np.pi * torch.arange(start=1, end=self.num_cosines + 1, dtype=taus.dtype,
                                        device=taus.device).view(1, 1, self.num_cosines)
            cosines = torch.cos(taus.view(batch_size, N, 1) * i_pi).view(batch_size * N, self.num_cosines)
            return self.net(cosines).view(batch_size, N, self.embedding_dim)

    class QuantileNetwork(nn.Module):
        def __init__(self, num_actions, embedding_dim):
            super(QuantileNetwork, self).__init__()
            self.net = nn.Sequential(nn.Linear(embedding_dim, 16), nn.ReLU(), nn.Linear(16, num_actions))
            self.num_actions = num_actions
            self.embedding_dim = embedding_dim

        def forward(self, state_embeddings, tau_embeddings):
            assert state_embeddings.shape[0] == tau_embeddings.shape[0]
            assert state_embeddings.shape[1] == tau_embeddings.shape[2]
            batch_size = state_embeddings.shape[0]
            N = tau_embeddings.shape[1]
            state_embeddings = state_embeddings.view(batch_size, 1, self.embedding_dim)
            embeddings = (state_embeddings * tau_embeddings).view(batch_size * N, self.embedding_dim)
            return self.net(embeddings).view(batch_size, N, self.num_actions)

    class IQN(nn.Module):
        def __init__(self, num_channels, num_actions, K=32, num_cosines=8, embedding_dim=27):
            super(IQN, self).__init__()
            self.dqn_net = nn.Sequential(nn.Conv2d(num_channels, 3, kernel_size=3, stride=2), nn.ReLU(),
                                         nn.Flatten())  # stands in for DQNBase's three convolutions
            self.cosine_net = CosineEmbeddingNetwork(num_cosines=num_cosines, embedding_dim=embedding_dim)
            self.quantile_net = QuantileNetwork(num_actions=num_actions, embedding_dim=embedding_dim)
            self.K, self.num_actions = K, num_actions

        def calculate_state_embeddings(self, states):
            return self.dqn_net(states)

        def calculate_quantiles(self, taus, states=None, state_embeddings=None):
            assert states is not None or state_embeddings is not None
            if state_embeddings is None:
                state_embeddings = self.dqn_net(states)
            tau_embeddings = self.cosine_net(taus)
            return self.quantile_net(state_embeddings, tau_embeddings)

        def calculate_q(self, taus, states=None, state_embeddings=None):
            batch_size = states.shape[0] if states is not None else state_embeddings.shape[0]
            if state_embeddings is None:
                state_embeddings = self.dqn_net(states)
            quantiles = self.calculate_quantiles(taus, state_embeddings=state_embeddings)
            assert quantiles.shape == (batch_size, self.K, self.num_actions)
            return quantiles.mean(dim=1)

    def disable_gradients(network):
        for param in network.parameters():
            param.requires_grad = False

    def evaluate_quantile_at_action(s_quantiles, actions):
        assert s_quantiles.shape[0] == actions.shape[0]
        batch_size = s_quantiles.shape[0]
        N = s_quantiles.shape[1]
        action_index = actions[..., None].expand(batch_size, N, 1)
        return s_quantiles.gather(dim=2, index=action_index)

    def calculate_huber_loss(td_errors, kappa=1.0):
        return torch.where(td_errors.abs() <= kappa, 0.5 * td_errors.pow(2), kappa * (td_errors.abs() - 0.5 * kappa))

    def calculate_quantile_huber_loss(td_errors, taus, weights=None, kappa=1.0):
        assert not taus.requires_grad
        batch_size, N, N_dash = td_errors.shape
        element_wise_huber_loss = calculate_huber_loss(td_errors, kappa)
        assert element_wise_huber_loss.shape == (batch_size, N, N_dash)
        element_wise_quantile_huber_loss = torch.abs(
            taus[..., None] - (td_errors.detach() < 0).float()) * element_wise_huber_loss / kappa
        batch_quantile_huber_loss = element_wise_quantile_huber_loss.sum(dim=1).mean(dim=1, keepdim=True)
        if weights is not None:
            return (batch_quantile_huber_loss * weights).mean()
        return batch_quantile_huber_loss.mean()

    batch_size, N, N_dash, K, gamma_n, kappa = 4, 6, 5, 7, 0.99 ** 3, 1.0
    online_net = IQN(2, 3, K=K)
    target_net = IQN(2, 3, K=K)
    init = load(m, online_net, state)
    target_net.load_state_dict(online_net.state_dict())
    disable_gradients(target_net)
    optim = torch.optim.Adam(online_net.parameters(), lr=5e-5, eps=1e-2 / 32)
    losses = []
    for step in range(2):
        states = torch.tensor(rng.uniform(0, 1, (batch_size, 2, 7, 7)).astype(np.float32))
        next_states = torch.tensor(rng.uniform(0, 1, (batch_size, 2, 7, 7)).astype(np.float32))
        actions = torch.tensor(rng.integers(0, 3, (batch_size, 1)))
        rewards = torch.tensor(rng.standard_normal((batch_size, 1)).astype(np.float32))
        dones = torch.tensor((rng.random((batch_size, 1)) < 0.3).astype(np.float32))
        weights = torch.tensor(rng.uniform(0.5, 1, (batch_size, 1)).astype(np.float32))
        draw = {n: torch.tensor(rng.random((batch_size, n)).astype(np.float32)) for n in (N, N_dash, K)}

        state_embeddings = online_net.calculate_state_embeddings(states)
        taus = draw[N]
        current_sa_quantiles = evaluate_quantile_at_action(
            online_net.calculate_quantiles(taus, state_embeddings=state_embeddings), actions)
        assert current_sa_quantiles.shape == (batch_size, N, 1)
        with torch.no_grad():
            next_q = online_net.calculate_q(draw[K], states=next_states)
            next_actions = torch.argmax(next_q, dim=1, keepdim=True)
            next_state_embeddings = target_net.calculate_state_embeddings(next_states)
            tau_dashes = draw[N_dash]
            next_sa_quantiles = evaluate_quantile_at_action(target_net.calculate_quantiles(
                tau_dashes, state_embeddings=next_state_embeddings), next_actions).transpose(1, 2)
            assert next_sa_quantiles.shape == (batch_size, 1, N_dash)
            target_sa_quantiles = rewards[..., None] + (1.0 - dones[..., None]) * gamma_n * next_sa_quantiles
        td_errors = target_sa_quantiles - current_sa_quantiles
        quantile_huber_loss = calculate_quantile_huber_loss(td_errors, taus, weights, kappa)
        optim.zero_grad()
        quantile_huber_loss.backward(retain_graph=False)
        torch.nn.utils.clip_grad_norm_(online_net.parameters(), 5.0)
        optim.step()
        losses += [quantile_huber_loss.item(), next_q.detach().mean().item(), td_errors.detach().abs().sum().item()]
    return init, losses + summary(online_net.parameters())


def test_iqn_quantile_huber():
    compare(iqn_quantile_huber)


# (e) NVIDIA/waveglow (glow.py): a @torch.jit.script fused_add_tanh_sigmoid_multiply reading n_channels[0] of a
# torch.IntTensor, Invertible1x1Conv initialised by torch.qr of FloatTensor(c, c).normal_() with a column negated where
# torch.det(W) < 0, log|det| by torch.logdet, the inverse cached as W.float().inverse()[..., None] for F.conv1d, WN's
# weight_norm'd dilated Conv1d layers, an upsampling ConvTranspose1d, spect and audio grouped by unfold, early outputs,
# WaveGlowLoss, then infer() after remove_weightnorm (the sampler's normal_() noise drawn by numpy)
def waveglow(m, state=None):
    torch, F = m.torch, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(11)

    @torch.jit.script
    def fused_add_tanh_sigmoid_multiply(input_a, input_b, n_channels):
        n_channels_int = n_channels[0]
        in_act = input_a + input_b
        t_act = torch.tanh(in_act[:, :n_channels_int, :])
        s_act = torch.sigmoid(in_act[:, n_channels_int:, :])
        acts = t_act * s_act
        return acts

    class WaveGlowLoss(torch.nn.Module):
        def __init__(self, sigma=1.0):
            super(WaveGlowLoss, self).__init__()
            self.sigma = sigma

        def forward(self, model_output):
            z, log_s_list, log_det_W_list = model_output
            for i, log_s in enumerate(log_s_list):
                if i == 0:
                    log_s_total = torch.sum(log_s)
                    log_det_W_total = log_det_W_list[i]
                else:
                    log_s_total = log_s_total + torch.sum(log_s)
                    log_det_W_total += log_det_W_list[i]
            loss = torch.sum(z * z) / (2 * self.sigma * self.sigma) - log_s_total - log_det_W_total
            return loss / (z.size(0) * z.size(1) * z.size(2))

    class Invertible1x1Conv(torch.nn.Module):
        def __init__(self, c):
            super(Invertible1x1Conv, self).__init__()
            self.conv = torch.nn.Conv1d(c, c, kernel_size=1, stride=1, padding=0, bias=False)
            W = torch.qr(torch.FloatTensor(c, c).normal_())[0]
            if torch.det(W) < 0:
                W[:, 0] = -1 * W[:, 0]
            W = W.view(c, c, 1)
            self.conv.weight.data = W

        def forward(self, z, reverse=False):
            batch_size, group_size, n_of_groups = z.size()
            W = self.conv.weight.squeeze()
            if reverse:
                if not hasattr(self, "W_inverse"):
                    W_inverse = W.float().inverse()
                    W_inverse = W_inverse[..., None]
                    if z.type() == "torch.cuda.HalfTensor":
                        W_inverse = W_inverse.half()
                    self.W_inverse = W_inverse
                return F.conv1d(z, self.W_inverse, bias=None, stride=1, padding=0)
            log_det_W = batch_size * n_of_groups * torch.logdet(W)
            z = self.conv(z)
            return z, log_det_W

    class WN(torch.nn.Module):
        def __init__(self, n_in_channels, n_mel_channels, n_layers, n_channels, kernel_size):
            super(WN, self).__init__()
            assert kernel_size % 2 == 1
            assert n_channels % 2 == 0
            self.n_layers = n_layers
            self.n_channels = n_channels
            self.in_layers = torch.nn.ModuleList()
            self.res_skip_layers = torch.nn.ModuleList()
            start = torch.nn.Conv1d(n_in_channels, n_channels, 1)
            self.start = torch.nn.utils.weight_norm(start, name="weight")
            end = torch.nn.Conv1d(n_channels, 2 * n_in_channels, 1)
            end.weight.data.zero_()
            end.bias.data.zero_()
            self.end = end
            cond_layer = torch.nn.Conv1d(n_mel_channels, 2 * n_channels * n_layers, 1)
            self.cond_layer = torch.nn.utils.weight_norm(cond_layer, name="weight")
            for i in range(n_layers):
                dilation = 2 ** i
                padding = int((kernel_size * dilation - dilation) / 2)
                in_layer = torch.nn.Conv1d(n_channels, 2 * n_channels, kernel_size, dilation=dilation, padding=padding)
                self.in_layers.append(torch.nn.utils.weight_norm(in_layer, name="weight"))
                res_skip_channels = 2 * n_channels if i < n_layers - 1 else n_channels
                res_skip_layer = torch.nn.Conv1d(n_channels, res_skip_channels, 1)
                self.res_skip_layers.append(torch.nn.utils.weight_norm(res_skip_layer, name="weight"))

        def forward(self, forward_input):
            audio, spect = forward_input
            audio = self.start(audio)
            output = torch.zeros_like(audio)
            n_channels_tensor = torch.IntTensor([self.n_channels])
            spect = self.cond_layer(spect)
            for i in range(self.n_layers):
                spect_offset = i * 2 * self.n_channels
                acts = fused_add_tanh_sigmoid_multiply(
                    self.in_layers[i](audio), spect[:, spect_offset:spect_offset + 2 * self.n_channels, :],
                    n_channels_tensor)
                res_skip_acts = self.res_skip_layers[i](acts)
                if i < self.n_layers - 1:
                    audio = audio + res_skip_acts[:, :self.n_channels, :]
                    output = output + res_skip_acts[:, self.n_channels:, :]
                else:
                    output = output + res_skip_acts
            return self.end(output)

    class WaveGlow(torch.nn.Module):
        def __init__(self, n_mel_channels, n_flows, n_group, n_early_every, n_early_size, WN_config):
            super(WaveGlow, self).__init__()
            self.upsample = torch.nn.ConvTranspose1d(n_mel_channels, n_mel_channels, 8, stride=4)
            assert n_group % 2 == 0
            self.n_flows, self.n_group = n_flows, n_group
            self.n_early_every, self.n_early_size = n_early_every, n_early_size
            self.WN = torch.nn.ModuleList()
            self.convinv = torch.nn.ModuleList()
            n_half = int(n_group / 2)
            n_remaining_channels = n_group
            for k in range(n_flows):
                if k % self.n_early_every == 0 and k > 0:
                    n_half = n_half - int(self.n_early_size / 2)
                    n_remaining_channels = n_remaining_channels - self.n_early_size
                self.convinv.append(Invertible1x1Conv(n_remaining_channels))
                self.WN.append(WN(n_half, n_mel_channels * n_group, **WN_config))
            self.n_remaining_channels = n_remaining_channels

        def forward(self, forward_input):
            spect, audio = forward_input
            spect = self.upsample(spect)
            assert spect.size(2) >= audio.size(1)
            if spect.size(2) > audio.size(1):
                spect = spect[:, :, :audio.size(1)]
            spect = spect.unfold(2, self.n_group, self.n_group).permute(0, 2, 1, 3)
            spect = spect.contiguous().view(spect.size(0), spect.size(1), -1).permute(0, 2, 1)
            audio = audio.unfold(1, self.n_group, self.n_group).permute(0, 2, 1)
            output_audio, log_s_list, log_det_W_list = [], [], []
            for k in range(self.n_flows):
                if k % self.n_early_every == 0 and k > 0:
                    output_audio.append(audio[:, :self.n_early_size, :])
                    audio = audio[:, self.n_early_size:, :]
                audio, log_det_W = self.convinv[k](audio)
                log_det_W_list.append(log_det_W)
                n_half = int(audio.size(1) / 2)
                audio_0 = audio[:, :n_half, :]
                audio_1 = audio[:, n_half:, :]
                output = self.WN[k]((audio_0, spect))
                log_s = output[:, n_half:, :]
                b = output[:, :n_half, :]
                audio_1 = torch.exp(log_s) * audio_1 + b
                log_s_list.append(log_s)
                audio = torch.cat([audio_0, audio_1], 1)
            output_audio.append(audio)
            return torch.cat(output_audio, 1), log_s_list, log_det_W_list

        def infer(self, spect, sigma=1.0):
            spect = self.upsample(spect)
            time_cutoff = self.upsample.kernel_size[0] - self.upsample.stride[0]
            spect = spect[:, :, :-time_cutoff]
            spect = spect.unfold(2, self.n_group, self.n_group).permute(0, 2, 1, 3)
            spect = spect.contiguous().view(spect.size(0), spect.size(1), -1).permute(0, 2, 1)
            audio = torch.FloatTensor(spect.size(0), self.n_remaining_channels, spect.size(2))
            audio.copy_(torch.from_numpy(normal(rng, *audio.shape)))
            audio = torch.autograd.Variable(sigma * audio)
            for k in reversed(range(self.n_flows)):
                n_half = int(audio.size(1) / 2)
                audio_0 = audio[:, :n_half, :]
                audio_1 = audio[:, n_half:, :]
                output = self.WN[k]((audio_0, spect))
                s = output[:, n_half:, :]
                b = output[:, :n_half, :]
                audio_1 = (audio_1 - b) / torch.exp(s)
                audio = torch.cat([audio_0, audio_1], 1)
                audio = self.convinv[k](audio, reverse=True)
                if k % self.n_early_every == 0 and k > 0:
                    z = torch.FloatTensor(spect.size(0), self.n_early_size, spect.size(2))
                    z.copy_(torch.from_numpy(normal(rng, *z.shape)))
                    audio = torch.cat((sigma * z, audio), 1)
            return audio.permute(0, 2, 1).contiguous().view(audio.size(0), -1).data

        @staticmethod
        def remove_weightnorm(model):
            waveglow = model
            for WN_ in waveglow.WN:
                WN_.start = torch.nn.utils.remove_weight_norm(WN_.start)
                WN_.in_layers = remove(WN_.in_layers)
                WN_.cond_layer = torch.nn.utils.remove_weight_norm(WN_.cond_layer)
                WN_.res_skip_layers = remove(WN_.res_skip_layers)
            return waveglow

    def remove(conv_list):
        new_conv_list = torch.nn.ModuleList()
        for old_conv in conv_list:
            old_conv = torch.nn.utils.remove_weight_norm(old_conv)
            new_conv_list.append(old_conv)
        return new_conv_list

    model = WaveGlow(n_mel_channels=3, n_flows=4, n_group=4, n_early_every=2, n_early_size=2,
                     WN_config=dict(n_layers=2, n_channels=4, kernel_size=3))
    init = load(m, model, state)
    criterion = WaveGlowLoss(sigma=1.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step in range(2):
        mel = torch.tensor(normal(rng, 2, 3, 4))
        audio = torch.tensor(rng.uniform(-0.5, 0.5, (2, 16)).astype(np.float32))
        model.zero_grad()
        outputs = model((mel, audio))
        loss = criterion(outputs)
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    model = WaveGlow.remove_weightnorm(model)
    model.eval()
    with torch.no_grad():
        audio = model.infer(torch.tensor(normal(rng, 1, 3, 4)), sigma=0.6)
    losses += [audio.sum().item(), audio.abs().sum().item()]
    return init, losses + summary(model.parameters())


def test_waveglow():
    compare(waveglow)


# (f) nutonomy/second.pytorch's PointPillars (second/pytorch/models/pointpillars.py's PFNLayer, PillarFeatureNet,
# PointPillarsScatter; second/pytorch/core/box_torch_ops.py's get_paddings_indicator): pillar means over
# num_voxels.type_as(features).view(-1, 1, 1), f_center columns written into zeros_like, a padding mask of
# actual_num.int() > arange(dtype=torch.int), features *= mask, BatchNorm1d over a permuted copy, max over points then
# repeat, and the scatter into a BEV canvas by canvas[:, indices] = voxels.t() per sample of a coords[:, 0] == b mask;
# the voxels are built on the host as the original's numba points_to_voxel builds them
def pointpillars(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(13)
    nx = ny = 4
    vx = vy = 0.5
    max_points = 5

    def points_to_voxel(points, batch_itt):  # the host side: numpy, as the numba original
        ij = np.floor(points[:, :2] / [vx, vy]).astype(np.int64)
        keys, inverse = np.unique(ij, axis=0, return_inverse=True)
        voxels = np.zeros((len(keys), max_points, points.shape[1]), np.float32)
        num_points = np.zeros(len(keys), np.int32)
        for p, k in zip(points, inverse.reshape(-1)):
            if num_points[k] < max_points:
                voxels[k, num_points[k]] = p
                num_points[k] += 1
        coors = np.stack([np.full(len(keys), batch_itt), np.zeros(len(keys), np.int64), keys[:, 1], keys[:, 0]], 1)
        return voxels, num_points, coors.astype(np.int32)

    def get_paddings_indicator(actual_num, max_num, axis=0):
        actual_num = torch.unsqueeze(actual_num, axis + 1)
        max_num_shape = [1] * len(actual_num.shape)
        max_num_shape[axis + 1] = -1
        max_num = torch.arange(max_num, dtype=torch.int, device=actual_num.device).view(max_num_shape)
        paddings_indicator = actual_num.int() > max_num
        return paddings_indicator

    class PFNLayer(nn.Module):
        def __init__(self, in_channels, out_channels, use_norm=True, last_layer=False):
            super().__init__()
            self.name = "PFNLayer"
            self.last_vfe = last_layer
            if not self.last_vfe:
                out_channels = out_channels // 2
            self.units = out_channels
            self.linear = nn.Linear(in_channels, self.units, bias=False)
            self.norm = nn.BatchNorm1d(self.units, eps=1e-3, momentum=0.01)

        def forward(self, inputs):
            x = self.linear(inputs)
            x = self.norm(x.permute(0, 2, 1).contiguous()).permute(0, 2, 1).contiguous()
            x = F.relu(x)
            x_max = torch.max(x, dim=1, keepdim=True)[0]
            if self.last_vfe:
                return x_max
            x_repeat = x_max.repeat(1, inputs.shape[1], 1)
            return torch.cat([x, x_repeat], dim=2)

    class PillarFeatureNet(nn.Module):
        def __init__(self, num_input_features=4, num_filters=(8, 8), voxel_size=(vx, vy, 4), pc_range=(0, 0, -3, 2, 2, 1)):
            super().__init__()
            num_input_features += 5
            num_filters = [num_input_features] + list(num_filters)
            pfn_layers = []
            for i in range(len(num_filters) - 1):
                in_filters, out_filters = num_filters[i], num_filters[i + 1]
                last_layer = i >= len(num_filters) - 2
                pfn_layers.append(PFNLayer(in_filters, out_filters, True, last_layer=last_layer))
            self.pfn_layers = nn.ModuleList(pfn_layers)
            self.vx, self.vy = voxel_size[0], voxel_size[1]
            self.x_offset = self.vx / 2 + pc_range[0]
            self.y_offset = self.vy / 2 + pc_range[1]

        def forward(self, features, num_voxels, coors):
            points_mean = features[:, :, :3].sum(dim=1, keepdim=True) / num_voxels.type_as(features).view(-1, 1, 1)
            f_cluster = features[:, :, :3] - points_mean
            f_center = torch.zeros_like(features[:, :, :2])
            f_center[:, :, 0] = features[:, :, 0] - (coors[:, 3].float().unsqueeze(1) * self.vx + self.x_offset)
            f_center[:, :, 1] = features[:, :, 1] - (coors[:, 2].float().unsqueeze(1) * self.vy + self.y_offset)
            features = torch.cat([features, f_cluster, f_center], dim=-1)
            voxel_count = features.shape[1]
            mask = get_paddings_indicator(num_voxels, voxel_count, axis=0)
            mask = torch.unsqueeze(mask, -1).type_as(features)
            features *= mask
            for pfn in self.pfn_layers:
                features = pfn(features)
            return features.squeeze()

    class PointPillarsScatter(nn.Module):
        def __init__(self, output_shape, num_input_features=8):
            super().__init__()
            self.ny, self.nx = output_shape[2], output_shape[3]
            self.nchannels = num_input_features

        def forward(self, voxel_features, coords, batch_size):
            batch_canvas = []
            for batch_itt in range(batch_size):
                canvas = torch.zeros(self.nchannels, self.nx * self.ny, dtype=voxel_features.dtype,
                                     device=voxel_features.device)
                batch_mask = coords[:, 0] == batch_itt
                this_coords = coords[batch_mask, :]
                indices = this_coords[:, 2] * self.nx + this_coords[:, 3]
                indices = indices.type(torch.long)
                voxels = voxel_features[batch_mask, :]
                voxels = voxels.t()
                canvas[:, indices] = voxels
                batch_canvas.append(canvas)
            batch_canvas = torch.stack(batch_canvas, 0)
            return batch_canvas.view(batch_size, self.nchannels, self.ny, self.nx)

    class TinyPointPillars(nn.Module):
        def __init__(self):
            super().__init__()
            self.voxel_feature_extractor = PillarFeatureNet()
            self.middle_feature_extractor = PointPillarsScatter([1, 1, ny, nx, 8])
            self.rpn = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8, eps=1e-3, momentum=0.01),
                                     nn.ReLU(), nn.Conv2d(8, 2, 1))

        def forward(self, example):
            voxel_features = self.voxel_feature_extractor(example["voxels"], example["num_points"], example["coordinates"])
            spatial_features = self.middle_feature_extractor(voxel_features, example["coordinates"], 2)
            return self.rpn(spatial_features)

    model = TinyPointPillars()
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    losses = []
    for step in range(2):
        parts = [points_to_voxel(np.concatenate([rng.uniform(0, 2, (12, 2)), rng.uniform(-3, 1, (12, 1)),
                                                 rng.uniform(0, 1, (12, 1))], 1).astype(np.float32), b)
                 for b in range(2)]
        example = {"voxels": torch.tensor(np.concatenate([p[0] for p in parts])),
                   "num_points": torch.tensor(np.concatenate([p[1] for p in parts])),
                   "coordinates": torch.tensor(np.concatenate([p[2] for p in parts]))}
        target = torch.tensor((rng.random((2, 2, ny, nx)) < 0.2).astype(np.float32))
        preds = model(example)
        loss = F.binary_cross_entropy_with_logits(preds, target, pos_weight=torch.tensor([3.0, 3.0]).view(2, 1, 1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_pointpillars():
    compare(pointpillars)
