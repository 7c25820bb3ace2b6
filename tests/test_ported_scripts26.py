"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: a fastText-style bag-of-n-grams classifier (hashed bigrams, nn.EmbeddingBag with
max_norm, padding_idx, include_last_offset and TF-IDF per_sample_weights, which found that tnet's EmbeddingBag lacked
max_norm); the PyTorch DQN tutorial as it reads since 2023 (Transition, ReplayMemory over a deque and random.sample,
the epsilon schedule, a bool non-final mask, max(1).values, SmoothL1Loss, AdamW(amsgrad=True), clip_grad_value_, the
target net's soft update through state_dict and load_state_dict); a training loop that skips a batch whose
gradients are not finite (clip_grad_norm_'s error_if_nonfinite raising RuntimeError, foreach=True, the inf norm);
joeylitalien's Noise2Noise U-Net (LeakyReLU(0.1), ConvTranspose2d with output_padding, kaiming_normal_ of .data,
reflect padding to even sides and a crop, noisy targets, PSNR); Blundell's Bayes by Backprop (softplus-parameterised
weights, a scale-mixture prior by torch.distributions.Normal's log_prob, the ELBO over samples, kl_divergence of
Normals on a bias); Jacobian regularisation by torch.autograd.functional.vjp(create_graph=True), with jvp, hvp and
vhp of a small energy; logistic regression fitted by LBFGS(line_search_fn="strong_wolfe") and its closure; a
Set-Transformer-style pooling head over nn.MultiheadAttention(kdim=, vdim=, batch_first=True) with a
key_padding_mask and per-head weights (average_attn_weights=False); PyTorch Geometric's GatedGraphConv written inline
(an nn.GRUCell over messages summed by index_add_); and a comparison of nn's rarer losses (MultiLabelMarginLoss,
GaussianNLLLoss(full=True), PoissonNLLLoss(log_input=False), KLDivLoss(log_target=True), HingeEmbeddingLoss,
MultiMarginLoss(p=2, weight=), TripletMarginWithDistanceLoss(swap=True)); CleanRL's ppo.py (orthogonal layer_init,
Categorical(logits=), GAE by a reversed loop, clipped surrogate and value losses, approx_kl, the lr annealed through
param_groups; whose `advantages[t] = delta` of a [1, n] delta into [n] found that tnet's setitem refused a value's
leading size-1 dims, which torch drops); and PyTorch3D's rotation_conversions (quaternion_to_matrix, the 6-D
representation by torch.cross, so3_relative_angle) under a pose regressor. Each runs in tnet, then in torch from
tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers, agree.
Numpy (or Python's random, seeded alike on both sides) draws what a script draws; shapes are tiny and runs take one
or two steps. Each script seeds torch first, as its source's main does. Where Adam would normalise a gradient that is
rounding alone (an attention key's bias), the script takes SGD, as it says."""
import math
import random
from collections import deque, namedtuple

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) a fastText-style classifier (the torchtext text-classification tutorial's TextClassificationModel grown into
# fastText's bag of hashed n-grams): a collate_batch building one flat tensor of ids with offsets (here with the last
# offset included), TF-IDF weights per id as per_sample_weights, EmbeddingBag(mode="sum", max_norm=, padding_idx=0)
# so that rows are renormed in place at each lookup, init_weights by uniform_ of .data, SGD with a StepLR
def fasttext_bag(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    VOCAB, BUCKETS, PAD = 12, 8, 0

    def ngrams(tokens):
        bigrams = [VOCAB + (a * 31 + b) % BUCKETS for a, b in zip(tokens, tokens[1:])]
        return tokens + bigrams

    class FastText(nn.Module):
        def __init__(self, vocab_size, embed_dim, num_class):
            super().__init__()
            self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, max_norm=1.0, mode="sum", padding_idx=PAD,
                                             include_last_offset=True)
            self.fc = nn.Linear(embed_dim, num_class)
            self.init_weights()

        def init_weights(self):
            initrange = 0.5
            self.embedding.weight.data.uniform_(-initrange, initrange)
            self.fc.weight.data.uniform_(-initrange, initrange)
            self.fc.bias.data.zero_()

        def forward(self, text, offsets, weights):
            return self.fc(self.embedding(text, offsets, per_sample_weights=weights))

    def collate_batch(batch):
        label_list, text_list, weight_list, offsets = [], [], [], [0]
        for _label, _text in batch:
            ids = ngrams(_text)
            label_list.append(_label)
            processed_text = torch.tensor(ids, dtype=torch.int64)
            text_list.append(processed_text)
            weight_list.append(torch.tensor([1.0 / math.log(2 + ids.count(i)) for i in ids]))
            offsets.append(offsets[-1] + processed_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        return label_list, torch.cat(text_list), torch.tensor(offsets), torch.cat(weight_list)

    model = FastText(VOCAB + BUCKETS, 6, 3)
    # scale the table up so that max_norm binds on most rows (the tutorial's uniform_ draws short rows)
    table = normal(rng, VOCAB + BUCKETS, 6)
    init = load(m, model, state if state is not None else {
        **{k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}, "embedding.weight": table})
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.1)
    criterion = torch.nn.CrossEntropyLoss()
    data = [(int(rng.integers(0, 3)), [int(t) for t in rng.integers(0, VOCAB, int(rng.integers(2, 6)))])
            for _ in range(4)]
    data[1][1][1] = PAD  # a padding token inside a text
    losses = []
    for idx in range(2):
        label, text, offsets, weights = collate_batch(data[2 * idx:2 * idx + 2])
        optimizer.zero_grad()
        predicted_label = model(text, offsets, weights)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    norms = model.embedding.weight.detach().norm(dim=1)
    return init, losses + norms.tolist() + summary(model.parameters())


def test_fasttext_bag():
    compare(fasttext_bag)


# (b) the PyTorch DQN tutorial (intermediate/reinforcement_q_learning.py, 2023 on): Transition namedtuple,
# ReplayMemory over deque(maxlen=) and random.sample, select_action's decaying epsilon with
# policy_net(state).max(1).indices.view(1, 1), optimize_model's bool non_final_mask by tuple(map(...)), gather of
# the actions, target_net(...).max(1).values under no_grad, SmoothL1Loss, AdamW(lr, amsgrad=True),
# clip_grad_value_(100), and the soft update of the target net's state_dict by a dict loop and load_state_dict;
# random data from numpy stand in for CartPole, Python's random seeded on both sides
def dqn_tutorial(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    optim = m.optim
    torch.manual_seed(2)
    random.seed(2)
    rng = np.random.default_rng(2)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward'))

    class ReplayMemory(object):
        def __init__(self, capacity):
            self.memory = deque([], maxlen=capacity)

        def push(self, *args):
            """Save a transition"""
            self.memory.append(Transition(*args))

        def sample(self, batch_size):
            return random.sample(self.memory, batch_size)

        def __len__(self):
            return len(self.memory)

    class DQN(nn.Module):
        def __init__(self, n_observations, n_actions):
            super(DQN, self).__init__()
            self.layer1 = nn.Linear(n_observations, 16)
            self.layer2 = nn.Linear(16, 16)
            self.layer3 = nn.Linear(16, n_actions)

        def forward(self, x):
            x = F.relu(self.layer1(x))
            x = F.relu(self.layer2(x))
            return self.layer3(x)

    BATCH_SIZE, GAMMA, EPS_START, EPS_END, EPS_DECAY, TAU, LR = 4, 0.99, 0.9, 0.05, 1000, 0.005, 1e-4
    n_actions, n_observations = 2, 4
    policy_net = DQN(n_observations, n_actions).to(device)
    target_net = DQN(n_observations, n_actions).to(device)
    init = load(m, policy_net, state)
    target_net.load_state_dict(policy_net.state_dict())
    optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
    memory = ReplayMemory(10000)
    steps_done = 0

    def select_action(state):
        nonlocal steps_done
        sample = random.random()
        eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
        steps_done += 1
        if sample > eps_threshold:
            with torch.no_grad():
                return policy_net(state).max(1).indices.view(1, 1)
        else:
            return torch.tensor([[random.randrange(n_actions)]], device=device, dtype=torch.long)

    def optimize_model():
        if len(memory) < BATCH_SIZE:
            return None
        transitions = memory.sample(BATCH_SIZE)
        batch = Transition(*zip(*transitions))
        non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)), device=device,
                                      dtype=torch.bool)
        non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)
        state_action_values = policy_net(state_batch).gather(1, action_batch)
        next_state_values = torch.zeros(BATCH_SIZE, device=device)
        with torch.no_grad():
            next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
        expected_state_action_values = (next_state_values * GAMMA) + reward_batch
        criterion = nn.SmoothL1Loss()
        loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        return loss.item()

    losses, actions = [], []
    state_np = normal(rng, n_observations)
    for t in range(8):
        obs = torch.tensor(state_np, dtype=torch.float32, device=device).unsqueeze(0)
        action = select_action(obs)
        actions.append(action.item())
        observation, reward = normal(rng, n_observations), float(rng.random())
        terminated = t in (3, 6)
        reward = torch.tensor([reward], device=device)
        next_state = None if terminated else torch.tensor(observation, dtype=torch.float32, device=device).unsqueeze(0)
        memory.push(obs, action, next_state, reward)
        state_np = normal(rng, n_observations) if terminated else observation
        loss = optimize_model()
        if loss is not None:
            losses.append(loss)
        target_net_state_dict = target_net.state_dict()
        policy_net_state_dict = policy_net.state_dict()
        for key in policy_net_state_dict:
            target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
        target_net.load_state_dict(target_net_state_dict)
    return init, losses + actions + summary(policy_net.parameters()) + summary(target_net.parameters())


def test_dqn_tutorial():
    compare(dqn_tutorial)


# (c) a loop that survives a poisoned batch: clip_grad_norm_(..., error_if_nonfinite=True) raises RuntimeError on an
# inf gradient, the loop zeroes the gradients and skips the step; the clean batches clip by the inf norm with
# foreach=True, the returned total norms logged with .item()
def skip_nonfinite(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    losses, norms, skipped = [], [], 0
    for step in range(3):
        x, y = normal(rng, 4, 5), rng.integers(0, 3, 4)
        if step == 1:
            x[2, 3] = np.inf
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        try:
            total = torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0, error_if_nonfinite=True)
        except RuntimeError:
            skipped += 1
            optimizer.zero_grad()
            continue
        norms.append(total.item())
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05, norm_type='inf', foreach=True).item())
        optimizer.step()
        losses.append(loss.item())
    assert skipped == 1
    return init, losses + norms + summary(model.parameters())


def test_skip_nonfinite():
    compare(skip_nonfinite)


# (d) joeylitalien/noise2noise-pytorch's unet.py (narrowed: 48 channels to 4, one pooling level fewer) and its
# train loop: _block1 to _block6 with LeakyReLU(0.1), ConvTranspose2d(stride=2, padding=1, output_padding=1),
# skips by torch.cat, _init_weights by kaiming_normal_ of .data, Adam(betas=(0.9, 0.99), eps=1e-8), MSELoss between
# two noisy copies of one image, PSNR against the clean image; odd sides reflect-padded to even and cropped back
def noise2noise(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(4)
    rng = np.random.default_rng(4)

    class UNet(nn.Module):
        def __init__(self, in_channels=3, out_channels=3, c=4):
            super(UNet, self).__init__()
            self._block1 = nn.Sequential(
                nn.Conv2d(in_channels, c, 3, stride=1, padding=1),
                nn.LeakyReLU(0.1),
                nn.Conv2d(c, c, 3, padding=1),
                nn.LeakyReLU(0.1),
                nn.MaxPool2d(2))
            self._block2 = nn.Sequential(
                nn.Conv2d(c, c, 3, stride=1, padding=1),
                nn.LeakyReLU(0.1),
                nn.MaxPool2d(2))
            self._block3 = nn.Sequential(
                nn.Conv2d(c, c, 3, stride=1, padding=1),
                nn.LeakyReLU(0.1),
                nn.ConvTranspose2d(c, c, 3, stride=2, padding=1, output_padding=1))
            self._block5 = nn.Sequential(
                nn.Conv2d(2 * c, 2 * c, 3, stride=1, padding=1),
                nn.LeakyReLU(0.1),
                nn.Conv2d(2 * c, 2 * c, 3, stride=1, padding=1),
                nn.LeakyReLU(0.1),
                nn.ConvTranspose2d(2 * c, 2 * c, 3, stride=2, padding=1, output_padding=1))
            self._block6 = nn.Sequential(
                nn.Conv2d(2 * c + in_channels, 8, 3, stride=1, padding=1),
                nn.LeakyReLU(0.1),
                nn.Conv2d(8, 4, 3, stride=1, padding=1),
                nn.LeakyReLU(0.1),
                nn.Conv2d(4, out_channels, 3, stride=1, padding=1),
                nn.LeakyReLU(0.1))
            self._init_weights()

        def _init_weights(self):
            for m in self.modules():
                if isinstance(m, nn.ConvTranspose2d) or isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight.data)
                    m.bias.data.zero_()

        def forward(self, x):
            pool1 = self._block1(x)
            pool2 = self._block2(pool1)
            upsample2 = self._block3(pool2)
            concat2 = torch.cat((upsample2, pool1), dim=1)
            upsample1 = self._block5(concat2)
            concat1 = torch.cat((upsample1, x), dim=1)
            return self._block6(concat1)

    def psnr(input, target):
        return 10 * torch.log10(1 / F.mse_loss(input, target))

    model = UNet()
    init = load(m, model, state)
    optim = torch.optim.Adam(model.parameters(), lr=0.001, betas=(0.9, 0.99), eps=1e-8)
    loss_fn = nn.MSELoss()
    clean = torch.from_numpy(rng.random((2, 3, 7, 7)).astype(np.float32))
    losses = []
    for _ in range(2):
        source = clean + torch.from_numpy(normal(rng, 2, 3, 7, 7) * 0.1)
        target = clean + torch.from_numpy(normal(rng, 2, 3, 7, 7) * 0.1)
        h, w = source.shape[-2:]
        padded = F.pad(source, (0, -w % 4, 0, -h % 4), mode='reflect')  # to a multiple of 4 (8 x 8)
        source_denoised = model(padded)[..., :h, :w]
        loss = loss_fn(source_denoised, target)
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses += [loss.item(), psnr(source_denoised.detach().clamp(0, 1), clean).item()]
    return init, losses + summary(model.parameters())


def test_noise2noise():
    compare(noise2noise)


# (e) Bayes by Backprop (Blundell et al.; the nitarshan and Piero Esposito (blitz) ports): a Gaussian variational
# posterior with sigma = log1p(exp(rho)), weights w = mu + sigma * epsilon (epsilon from numpy, as `sample` would
# draw), the log variational posterior by Normal(mu, sigma).log_prob, a scale-mixture prior by the exp of two
# Normal log_probs, the ELBO as log q - log p + NLL(reduction="sum") averaged over two samples; the bias's KL by
# torch.distributions.kl_divergence against a Normal(0, 1) prior instead, as blitz's closed-form option
def bayes_by_backprop(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Normal = torch.distributions.Normal
    torch.manual_seed(5)
    rng = np.random.default_rng(5)
    PI, SIGMA_1, SIGMA_2 = 0.5, math.exp(-0), math.exp(-6)

    class ScaleMixtureGaussian(object):
        def __init__(self, pi, sigma1, sigma2):
            self.pi = pi
            self.gaussian1 = Normal(0, sigma1)
            self.gaussian2 = Normal(0, sigma2)

        def log_prob(self, input):
            prob1 = torch.exp(self.gaussian1.log_prob(input))
            prob2 = torch.exp(self.gaussian2.log_prob(input))
            return (torch.log(self.pi * prob1 + (1 - self.pi) * prob2)).sum()

    class BayesianLinear(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-0.2, 0.2))
            self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-5, -4))
            self.bias_mu = nn.Parameter(torch.Tensor(out_features).uniform_(-0.2, 0.2))
            self.bias_rho = nn.Parameter(torch.Tensor(out_features).uniform_(-5, -4))
            self.weight_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
            self.log_prior = 0
            self.log_variational_posterior = 0
            self.kl = 0

        def forward(self, input, eps_w, eps_b):
            w_sigma = torch.log1p(torch.exp(self.weight_rho))
            b_sigma = torch.log1p(torch.exp(self.bias_rho))
            weight = self.weight_mu + w_sigma * torch.from_numpy(eps_w)
            bias = self.bias_mu + b_sigma * torch.from_numpy(eps_b)
            self.log_prior = self.weight_prior.log_prob(weight)
            self.log_variational_posterior = Normal(self.weight_mu, w_sigma).log_prob(weight).sum()
            self.kl = torch.distributions.kl_divergence(Normal(self.bias_mu, b_sigma),
                                                        Normal(torch.zeros_like(self.bias_mu), 1.0)).sum()
            return F.linear(input, weight, bias)

    class BayesianNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = BayesianLinear(6, 8)
            self.l2 = BayesianLinear(8, 3)

        def forward(self, x, eps):
            x = F.relu(self.l1(x, *eps[0]))
            return F.log_softmax(self.l2(x, *eps[1]), dim=1)

        def log_prior(self):
            return self.l1.log_prior + self.l2.log_prior

        def log_variational_posterior(self):
            return self.l1.log_variational_posterior + self.l2.log_variational_posterior

        def kl(self):
            return self.l1.kl + self.l2.kl

        def sample_elbo(self, input, target, samples=2, num_batches=4):
            outputs = torch.zeros(samples, input.size(0), 3)
            log_priors = torch.zeros(samples)
            log_variational_posteriors = torch.zeros(samples)
            kls = torch.zeros(samples)
            for i in range(samples):
                eps = [(normal(rng, 8, 6), normal(rng, 8)), (normal(rng, 3, 8), normal(rng, 3))]
                outputs[i] = self(input, eps)
                log_priors[i] = self.log_prior()
                log_variational_posteriors[i] = self.log_variational_posterior()
                kls[i] = self.kl()
            log_prior = log_priors.mean()
            log_variational_posterior = log_variational_posteriors.mean()
            negative_log_likelihood = F.nll_loss(outputs.mean(0), target, reduction='sum')
            loss = (log_variational_posterior - log_prior + kls.mean()) / num_batches + negative_log_likelihood
            return loss, log_prior, log_variational_posterior, negative_log_likelihood

    net = BayesianNetwork()
    init = load(m, net, state)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    losses = []
    for _ in range(2):
        data, target = torch.from_numpy(normal(rng, 5, 6)), torch.from_numpy(rng.integers(0, 3, 5))
        net.zero_grad()
        loss, log_prior, log_variational_posterior, nll = net.sample_elbo(data, target)
        loss.backward()
        optimizer.step()
        losses += [loss.item() / 100, log_prior.item() / 100, log_variational_posterior.item() / 100, nll.item()]
    return init, losses + summary(net.parameters())


def test_bayes_by_backprop():
    compare(bayes_by_backprop)


# (f) Jacobian regularisation (Hoffman, Roberts and Yaida's random projections, as its public ports write it): the
# input-output Jacobian's Frobenius norm estimated by vjp of the model with a unit random projection,
# create_graph=True so that the penalty trains the weights; then jvp, hvp and vhp of a small energy at a point
def jacobian_reg(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    AF = import_module(torch.__name__ + ".autograd.functional")
    torch.manual_seed(6)
    rng = np.random.default_rng(6)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(2):
        x, y = torch.from_numpy(normal(rng, 5, 4)), torch.from_numpy(rng.integers(0, 3, 5))
        x.requires_grad = True
        out = model(x)
        v = torch.from_numpy(normal(rng, 5, 3))
        v = v / torch.norm(v, 2, dim=1, keepdim=True)
        _, Jv = AF.vjp(model, x, v, create_graph=True)
        reg = 3 * Jv.pow(2).sum() / x.shape[0]
        loss = F.cross_entropy(out, y) + 0.1 * reg
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), reg.item()]

    def energy(p):
        return (torch.tanh(p) ** 2).sum() + (p[0] * p[1]) ** 2

    p, u = torch.from_numpy(normal(rng, 3)), torch.from_numpy(normal(rng, 3))
    _, jv = AF.jvp(lambda q: torch.sin(q) * q.sum(), p, u)
    _, hv = AF.hvp(energy, p, u)
    _, vh = AF.vhp(energy, p, u)
    return init, losses + jv.tolist() + hv.tolist() + vh.tolist() + summary(model.parameters())


def test_jacobian_reg():
    compare(jacobian_reg)


# (g) logistic regression fitted by L-BFGS as scikit-learn users write it in PyTorch: a closure that zeroes the
# gradients, adds an L2 penalty on the weight and returns the loss; LBFGS(lr=1, max_iter=10, history_size=5,
# line_search_fn="strong_wolfe"), two outer steps, the loss each step returns
def lbfgs_logreg(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(7)
    rng = np.random.default_rng(7)
    X = normal(rng, 12, 3)
    y = (X @ np.array([1.5, -2.0, 0.5], np.float32) + 0.3 * normal(rng, 12) > 0).astype(np.float32)
    X, y = torch.from_numpy(X), torch.from_numpy(y)
    model = nn.Linear(3, 1)
    init = load(m, model, state)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=10, history_size=5,
                                  line_search_fn="strong_wolfe")
    C = 1.0

    def closure():
        optimizer.zero_grad()
        logits = model(X).squeeze(1)
        loss = F.binary_cross_entropy_with_logits(logits, y) + 0.5 / C / len(y) * model.weight.pow(2).sum()
        loss.backward()
        return loss

    losses = []
    for _ in range(2):
        losses.append(optimizer.step(closure).item())
    with torch.no_grad():
        acc = ((model(X).squeeze(1) > 0).float() == y).float().mean().item()
    return init, losses + [acc] + summary(model.parameters())


def test_lbfgs_logreg():
    compare(lbfgs_logreg)


# (h) a Set-Transformer-style pooling head (PMA) over nn.MultiheadAttention with learned seeds as queries, keys and
# values of other widths (kdim=, vdim=), batch_first=True, a key_padding_mask of the padded set elements, and the
# per-head attention maps (need_weights=True, average_attn_weights=False) whose entropy is a regulariser; SGD (an
# attention key's bias has a gradient of rounding alone, which Adam would normalise)
def mha_pooling(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(8)
    rng = np.random.default_rng(8)

    class PMA(nn.Module):
        def __init__(self, dim, num_heads, num_seeds, kdim, vdim):
            super().__init__()
            self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
            nn.init.xavier_uniform_(self.S)
            self.mha = nn.MultiheadAttention(dim, num_heads, kdim=kdim, vdim=vdim, batch_first=True)
            self.ln = nn.LayerNorm(dim)

        def forward(self, keys, values, key_padding_mask):
            q = self.S.repeat(keys.size(0), 1, 1)
            out, weights = self.mha(q, keys, values, key_padding_mask=key_padding_mask, need_weights=True,
                                    average_attn_weights=False)
            return self.ln(q + out), weights

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.key_enc = nn.Linear(3, 5)
            self.value_enc = nn.Linear(3, 6)
            self.pool = PMA(8, 2, 2, 5, 6)
            self.head = nn.Linear(16, 3)

        def forward(self, x, mask):
            pooled, weights = self.pool(torch.tanh(self.key_enc(x)), self.value_enc(x), mask)
            return self.head(pooled.flatten(1)), weights

    model = Model()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    lengths = [4, 2, 3]
    x = torch.from_numpy(normal(rng, 3, 4, 3))
    mask = torch.arange(4)[None, :] >= torch.tensor(lengths)[:, None]
    y = torch.from_numpy(rng.integers(0, 3, 3))
    losses = []
    for _ in range(2):
        logits, weights = model(x, mask)
        assert tuple(weights.shape) == (3, 2, 2, 4)
        entropy = -(weights * torch.log(weights + 1e-9)).sum(-1).mean()
        loss = F.cross_entropy(logits, y) + 0.01 * entropy
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), entropy.item(), weights[1, :, :, 2:].abs().sum().item()]
    return init, losses + summary(model.parameters())


def test_mha_pooling():
    compare(mha_pooling)


# (i) PyTorch Geometric's GatedGraphConv (Li et al.'s gated graph sequence networks) written inline: node features
# zero-padded to out_channels by new_zeros and cat, a weight Parameter [num_layers, out, out] by uniform_, per layer
# m = x @ weight[i] summed at the target nodes by index_add_ of m[source], x = GRUCell(m, x); a global add pool over
# a batch vector by index_add_ and a Linear readout, Adam
def gated_graph_conv(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(9)
    rng = np.random.default_rng(9)

    class GatedGraphConv(nn.Module):
        def __init__(self, out_channels, num_layers, aggr='add', bias=True):
            super().__init__()
            self.out_channels = out_channels
            self.num_layers = num_layers
            self.weight = nn.Parameter(torch.Tensor(num_layers, out_channels, out_channels))
            self.rnn = torch.nn.GRUCell(out_channels, out_channels, bias=bias)
            self.reset_parameters()

        def reset_parameters(self):
            bound = 1.0 / math.sqrt(self.out_channels)
            self.weight.data.uniform_(-bound, bound)
            self.rnn.reset_parameters()

        def forward(self, x, edge_index):
            if x.size(-1) > self.out_channels:
                raise ValueError('The number of input channels is not allowed to be larger than the number of '
                                 'output channels')
            if x.size(-1) < self.out_channels:
                zero = x.new_zeros(x.size(0), self.out_channels - x.size(-1))
                x = torch.cat([x, zero], dim=1)
            src, dst = edge_index
            for i in range(self.num_layers):
                m = torch.matmul(x, self.weight[i])
                m = torch.zeros_like(m).index_add_(0, dst, m[src])
                x = self.rnn(m, x)
            return x

        def __repr__(self):
            return '{}({}, num_layers={})'.format(self.__class__.__name__, self.out_channels, self.num_layers)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = GatedGraphConv(6, num_layers=2)
            self.lin = nn.Linear(6, 2)

        def forward(self, x, edge_index, batch, num_graphs):
            h = self.conv(x, edge_index)
            pooled = h.new_zeros(num_graphs, h.size(1)).index_add_(0, batch, h)
            return self.lin(pooled)

    model = Net()
    init = load(m, model, state)
    assert repr(model.conv) == 'GatedGraphConv(6, num_layers=2)'
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x = torch.from_numpy(normal(rng, 7, 4))
    edges = [(0, 1), (1, 0), (1, 2), (2, 0), (3, 4), (4, 5), (5, 6), (6, 3), (4, 3)]
    edge_index = torch.tensor(edges, dtype=torch.long).t().contiguous()
    batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    y = torch.tensor([1, 0])
    losses = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x, edge_index, batch, 2), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_gated_graph_conv():
    compare(gated_graph_conv)


# (j) a comparison of nn's rarer losses on one multi-head model, as a loss-zoo notebook writes it: each loss module
# built once, called in a dict comprehension, summed; MultiLabelMarginLoss's -1-terminated targets,
# GaussianNLLLoss(full=True) with a softplus variance, PoissonNLLLoss(log_input=False, full=True),
# KLDivLoss(reduction="batchmean", log_target=True), HingeEmbeddingLoss(margin=0.5) on distances,
# MultiMarginLoss(p=2, margin=0.5, weight=), TripletMarginWithDistanceLoss(distance_function=cosine, swap=True)
def loss_zoo(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(10)
    rng = np.random.default_rng(10)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 12))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    criteria = {
        "multilabel_margin": nn.MultiLabelMarginLoss(),
        "gaussian_nll": nn.GaussianNLLLoss(full=True, eps=1e-4),
        "poisson_nll": nn.PoissonNLLLoss(log_input=False, full=True),
        "kl_div": nn.KLDivLoss(reduction="batchmean", log_target=True),
        "hinge_embedding": nn.HingeEmbeddingLoss(margin=0.5),
        "multi_margin": nn.MultiMarginLoss(p=2, margin=0.5, weight=torch.tensor([1.0, 2.0, 0.5])),
        "triplet": nn.TripletMarginWithDistanceLoss(
            distance_function=lambda a, b: 1.0 - F.cosine_similarity(a, b), margin=0.3, swap=True),
    }
    x = torch.from_numpy(normal(rng, 4, 4))
    labels = torch.tensor([[2, 0, -1], [1, -1, 0], [0, 1, 2], [1, -1, 2]])  # after a -1, entries are ignored
    target = torch.from_numpy(normal(rng, 4, 2))
    counts = torch.from_numpy(rng.poisson(2.0, (4, 2)).astype(np.float32))
    log_q = F.log_softmax(torch.from_numpy(normal(rng, 4, 3)), dim=1)
    similar = torch.tensor([1.0, -1.0, 1.0, -1.0])
    classes = torch.from_numpy(rng.integers(0, 3, 4))
    losses = []
    for _ in range(2):
        out = model(x)
        scores, mean, var = out[:, :3], out[:, 3:5], F.softplus(out[:, 5:7])
        rate = F.softplus(out[:, 7:9]) + 0.1
        anchor, positive, negative = out[:, 9:], out[[1, 2, 3, 0], 9:], out[[2, 3, 0, 1], 9:]
        inputs = {
            "multilabel_margin": (scores, labels),
            "gaussian_nll": (mean, target, var),
            "poisson_nll": (rate, counts),
            "kl_div": (F.log_softmax(scores, dim=1), log_q),
            "hinge_embedding": ((anchor - positive).norm(dim=1), similar),
            "multi_margin": (scores, classes),
            "triplet": (anchor, positive, negative),
        }
        parts = {name: fn(*inputs[name]) for name, fn in criteria.items()}
        loss = sum(parts.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [v.item() for v in parts.values()]
    return init, losses + summary(model.parameters())


def test_loss_zoo():
    compare(loss_zoo)


# (k) CleanRL's ppo.py (one update, narrowed): layer_init by orthogonal_(std) and constant_ biases, an Agent with
# get_value and get_action_and_value over Categorical(logits=), the rollout buffers of torch.zeros((num_steps,
# num_envs)), GAE by a reversed loop with nextnonterminal, flattened batches, minibatches of a numpy permutation,
# advantages normalised, the clipped surrogate by torch.max, the clipped value loss, approx_kl, clipfracs, the lr
# annealed through param_groups, Adam(eps=1e-5), clip_grad_norm_, and the explained variance by numpy; numpy stands in
# for the vectorised environment and torch replays tnet's sampled actions
def cleanrl_ppo(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    from importlib import import_module
    Categorical = import_module(torch.__name__ + ".distributions.categorical").Categorical
    torch.manual_seed(11)
    rng = np.random.default_rng(11)
    device = torch.device("cpu")
    num_envs, num_steps, obs_dim, n_act = 2, 4, 3, 2
    batch_size, minibatch_size, update_epochs = num_envs * num_steps, 4, 1
    gamma, gae_lambda, clip_coef, ent_coef, vf_coef, max_grad_norm, learning_rate = 0.99, 0.95, 0.2, 0.01, 0.5, 0.5, 2.5e-4

    def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
        torch.nn.init.orthogonal_(layer.weight, std)
        torch.nn.init.constant_(layer.bias, bias_const)
        return layer

    class Agent(nn.Module):
        def __init__(self):
            super().__init__()
            self.critic = nn.Sequential(
                layer_init(nn.Linear(obs_dim, 8)), nn.Tanh(),
                layer_init(nn.Linear(8, 8)), nn.Tanh(),
                layer_init(nn.Linear(8, 1), std=1.0))
            self.actor = nn.Sequential(
                layer_init(nn.Linear(obs_dim, 8)), nn.Tanh(),
                layer_init(nn.Linear(8, 8)), nn.Tanh(),
                layer_init(nn.Linear(8, n_act), std=0.01))

        def get_value(self, x):
            return self.critic(x)

        def get_action_and_value(self, x, action=None):
            logits = self.actor(x)
            probs = Categorical(logits=logits)
            if action is None:
                action = probs.sample()
            return action, probs.log_prob(action), probs.entropy(), self.critic(x)

    agent = Agent().to(device)
    init = load(m, agent, state)
    optimizer = torch.optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)
    obs = torch.zeros((num_steps, num_envs, obs_dim)).to(device)
    actions = torch.zeros((num_steps, num_envs)).to(device)
    logprobs = torch.zeros((num_steps, num_envs)).to(device)
    rewards = torch.zeros((num_steps, num_envs)).to(device)
    dones = torch.zeros((num_steps, num_envs)).to(device)
    values = torch.zeros((num_steps, num_envs)).to(device)
    next_obs = torch.Tensor(normal(rng, num_envs, obs_dim)).to(device)
    next_done = torch.zeros(num_envs).to(device)
    num_updates = 2
    log = []
    for update in range(1, num_updates + 1):
        frac = 1.0 - (update - 1.0) / num_updates
        optimizer.param_groups[0]["lr"] = frac * learning_rate
        for step in range(0, num_steps):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                action = torch.tensor(replay.setdefault((update, step), action.tolist()))
                _, logprob, _, value = agent.get_action_and_value(next_obs, action)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs_np, reward, done = normal(rng, num_envs, obs_dim), rng.random(num_envs), rng.random(num_envs) < 0.3
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs, next_done = torch.Tensor(next_obs_np).to(device), torch.Tensor(done.astype(np.float32)).to(device)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                if t == num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values
        b_obs = obs.reshape((-1, obs_dim))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)
        b_inds = np.arange(batch_size)
        clipfracs = []
        for epoch in range(update_epochs):
            rng.shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                end = start + minibatch_size
                mb_inds = b_inds[start:end]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions.long()[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()
                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]
                mb_advantages = b_advantages[mb_inds]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()
                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds], -clip_coef, clip_coef)
                v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                v_loss = 0.5 * v_loss_max.mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()
                log += [loss.item(), v_loss.item(), approx_kl.item(), old_approx_kl.item()]
        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        log += [float(explained_var), float(np.mean(clipfracs))]
    return init, log + summary(agent.parameters())


def test_cleanrl_ppo():
    compare(cleanrl_ppo, replay={})


# (l) PyTorch3D's rotation_conversions (quaternion_to_matrix by unbind and stack, rotation_6d_to_matrix by
# F.normalize and torch.cross, matrix_to_rotation_6d, so3_relative_angle by the trace's acos, clamped) under a pose
# regressor: a Linear predicts Zhou et al.'s 6-D representation, trained on the geodesic distance to rotations from
# random unit quaternions, with torch.linalg.det and torch.linalg.vector_norm as checks and atan2 of the yaw logged
def pytorch3d_rotations(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(12)
    rng = np.random.default_rng(12)

    def quaternion_to_matrix(quaternions):
        r, i, j, k = torch.unbind(quaternions, -1)
        two_s = 2.0 / (quaternions * quaternions).sum(-1)
        o = torch.stack(
            (
                1 - two_s * (j * j + k * k),
                two_s * (i * j - k * r),
                two_s * (i * k + j * r),
                two_s * (i * j + k * r),
                1 - two_s * (i * i + k * k),
                two_s * (j * k - i * r),
                two_s * (i * k - j * r),
                two_s * (j * k + i * r),
                1 - two_s * (i * i + j * j),
            ),
            -1,
        )
        return o.reshape(quaternions.shape[:-1] + (3, 3))

    def rotation_6d_to_matrix(d6):
        a1, a2 = d6[..., :3], d6[..., 3:]
        b1 = F.normalize(a1, dim=-1)
        b2 = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
        b2 = F.normalize(b2, dim=-1)
        b3 = torch.cross(b1, b2, dim=-1)
        return torch.stack((b1, b2, b3), dim=-2)

    def matrix_to_rotation_6d(matrix):
        batch_dim = matrix.size()[:-2]
        return matrix[..., :2, :].clone().reshape(batch_dim + (6,))

    def so3_relative_angle(R1, R2, eps=1e-4):
        R12 = torch.bmm(R1, R2.permute(0, 2, 1))
        rot_trace = R12[:, 0, 0] + R12[:, 1, 1] + R12[:, 2, 2]
        phi_cos = ((rot_trace - 1.0) * 0.5).clamp(-1.0 + eps, 1.0 - eps)
        return torch.acos(phi_cos)

    q = torch.from_numpy(normal(rng, 5, 4))
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    R_gt = quaternion_to_matrix(q)
    assert torch.allclose(torch.linalg.det(R_gt), torch.ones(5), atol=1e-5)
    assert torch.allclose(rotation_6d_to_matrix(matrix_to_rotation_6d(R_gt)), R_gt, atol=1e-5)
    x = torch.cat([q, torch.from_numpy(normal(rng, 5, 2))], dim=1)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 6))
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(2):
        R_pred = rotation_6d_to_matrix(model(x))
        angle = so3_relative_angle(R_pred, R_gt)
        loss = angle.mean() + 0.1 * torch.linalg.matrix_norm(R_pred - R_gt).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        yaw = torch.atan2(R_pred[:, 1, 0], R_pred[:, 0, 0])
        losses += [loss.item()] + yaw.tolist() + torch.linalg.det(R_pred).tolist()
    return init, losses + summary(model.parameters())


def test_pytorch3d_rotations():
    compare(pytorch3d_rotations)
