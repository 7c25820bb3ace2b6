"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: rtqichen's beta-TCVAE (minibatch stratified sampling: a log importance weight matrix
written through strided views of its flat view, pairwise log densities by broadcasting, a hand-made logsumexp);
lucidrains' slot-attention with google-research's soft position embedding and spatial-broadcast decoder (a numpy grid
by np.meshgrid, einsum attention normalised over the slots, a GRUCell over flattened slots, alpha masks split off and
softmaxed over the slots); pclucas14's pixel-cnn-pp (the discretized mixture of logistics loss by float masks, and
its sampler: a Gumbel argmax, a one-hot by scatter_ into torch.FloatTensor(size)); toshikwa's fqf-iqn-qrdqn IQN
(cosine tau embeddings, quantiles gathered at actions, the quantile Huber loss, a frozen target network). Each runs in
tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed
into a few numbers, agree. Numpy draws what a script draws (torch.randn, rand, uniform_ are replaced by numpy's
draws); shapes are tiny and runs take one or two steps."""

import math

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
