"""Training scripts of domains the earlier files left out, written from memory in their sources' styles and ported by
their imports alone, as test_ported_scripts47.py: DDPG with an Ornstein-Uhlenbeck process (a list replay buffer with a
wrapping pointer, torch.FloatTensor of numpy batches, the critic on a cat of state and action, targets made by
load_state_dict and copy.deepcopy and soft-updated through .data.copy_); a PointNet autoencoder's Chamfer distance
written with bmm and diagonals by advanced indexing (checked against torch.cdist) beside Deep Sets over padded, masked
sets; coral-pytorch's CORAL layer, levels and loss and the CORN loss over bool-masked conditional subsets with cumprod
labels; shaoxiongji's FedAvg over deepcopied state_dicts (an int64 num_batches_tracked averaged to float and loaded
back) with FedProx's proximal term; an echo state network (a sparse random reservoir scaled to a spectral radius, the
leaky update step by step, the ridge readout by linalg.solve written into a Linear through .data); quantile regression
with a GRU over Tensor.unfold windows, pytorch-forecasting's QuantileLoss and split-conformal calibration by
torch.quantile(interpolation='higher'); hcnoh's DKT (one_hot of the next questions, masked_select, a pad_sequence
collate_fn); MWCNN's Haar transforms (strided slices and strided slice assignment into torch.zeros, with gradients);
attention-based deep multiple-instance learning beside a modern Hopfield pooling; and angle regression with von Mises
likelihoods (VonMises and a MixtureSameFamily of them, the hand-written form by special.i0e, an entropy that falls back
on `except NotImplementedError`, rad2deg errors). Each runs in tnet, then in torch from tnet's initial weights
(state_dict through numpy), and the losses, metrics and the weights summed into a few numbers agree. Numpy draws the
data and the environment's noise; torch replays tnet's draws where the sources draw with torch (the reservoir). Shapes
are tiny and runs take one to sixteen steps. Probes beside them (quantile's interpolations and gradients, unfold,
masked_select and strided setitem gradients, pad_sequence's padding_side, one_hot, the rarer losses, modules and
module hooks, data utilities, custom autograd Functions, double backward through the common ops, every law's moments,
log_prob, cdf, icdf, entropy and KL pairs, optimizers and schedulers, dtype promotion, casts and shape ops) found tnet
as torch but for the two below.

Fixed in tnet on the way (with its unit test in test_random.py): a law's method it does not define raised
AttributeError in tnet ('VonMises' object has no attribute 'entropy'; StudentT's and Beta's cdf and icdf, Gamma's icdf,
FisherSnedecor's entropy, ContinuousBernoulli's mode, a user subclass's moments), where torch's Distribution base
raises NotImplementedError: the von Mises script's entropy, which falls back on a numerical integral by `except
NotImplementedError`, stopped in tnet. The base now defines them as torch's does. And Tensor.to ignored copy=True
(in test_copy.py): where the dtype and device were x's already it returned x itself, so FedProx's global weights kept
by p.detach().to(p.device, copy=True) were the parameters' own memory and its proximal term stayed 0; it now makes a
fresh tensor, on the tape, as torch's (torch's positional non_blocking, copy too). The other scripts ran in tnet as in
torch at their first run.

Found and left as they are: the echo state network's torch.linalg.eigvals(W).abs().max() raises NotImplementedError in
tnet, which has no complex dtypes (README), so the script takes the spectral radius from numpy's eigvals of
W.cpu().numpy(), as numpy-first ESN code does. torch.from_numpy of a float64 array gives float32 in tnet (no float64,
README), where torch's is float64 until .float(); the scripts convert as torch.FloatTensor does. A second derivative
through grid_sample raises NotImplementedError in tnet (its higher-order gradients cover the ops its README lists),
where torch's gives None for its input (the gradient is linear in it); cdist's second derivative, which torch refuses,
is tnet's and right. distributions' LKJCholesky and Wishart are not in tnet (README)."""
import copy
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def replayed(m, replay, key, t):
    """t as tnet drew it: tnet's run keeps its draw under key, torch's run takes that draw in place of its own."""
    return m.torch.tensor(replay.setdefault(key, t.detach().cpu().numpy().copy()))


# (a) sfujim's DDPG.py with an Ornstein-Uhlenbeck process as the DDPG ports write it (OUNoise's reset and sample with
# copy.copy of mu), a list ReplayBuffer with a wrapping ptr whose sample stacks np.asarray(X) rows,
# select_action by torch.FloatTensor(state.reshape(1, -1)) and .cpu().data.numpy().flatten(), the critic on
# torch.cat([state, action], 1), max_action * torch.tanh, the target Q by reward + (not_done * discount *
# target_Q).detach(), the actor target made by load_state_dict and the critic target by copy.deepcopy, and the soft
# update target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data); a linear toy environment in numpy
def ddpg(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rng = np.random.default_rng(0)
    state_dim, action_dim, max_action = 3, 2, 2.0

    class Actor(nn.Module):
        def __init__(self, state_dim, action_dim, max_action):
            super(Actor, self).__init__()
            self.l1 = nn.Linear(state_dim, 16)
            self.l2 = nn.Linear(16, 16)
            self.l3 = nn.Linear(16, action_dim)
            self.max_action = max_action

        def forward(self, state):
            a = F.relu(self.l1(state))
            a = F.relu(self.l2(a))
            return self.max_action * torch.tanh(self.l3(a))

    class Critic(nn.Module):
        def __init__(self, state_dim, action_dim):
            super(Critic, self).__init__()
            self.l1 = nn.Linear(state_dim + action_dim, 16)
            self.l2 = nn.Linear(16, 16)
            self.l3 = nn.Linear(16, 1)

        def forward(self, state, action):
            q = F.relu(self.l1(torch.cat([state, action], 1)))
            q = F.relu(self.l2(q))
            return self.l3(q)

    class OUNoise(object):
        def __init__(self, size, mu=0., theta=0.15, sigma=0.2):
            self.mu = mu * np.ones(size)
            self.theta = theta
            self.sigma = sigma
            self.reset()

        def reset(self):
            self.state = copy.copy(self.mu)

        def sample(self):
            x = self.state
            dx = self.theta * (self.mu - x) + self.sigma * rng.standard_normal(len(x))
            self.state = x + dx
            return self.state

    class ReplayBuffer(object):
        def __init__(self, max_size=1e6):
            self.storage = []
            self.max_size = max_size
            self.ptr = 0

        def add(self, data):
            if len(self.storage) == self.max_size:
                self.storage[int(self.ptr)] = data
                self.ptr = (self.ptr + 1) % self.max_size
            else:
                self.storage.append(data)

        def sample(self, batch_size):
            ind = rng.integers(0, len(self.storage), size=batch_size)
            x, y, u, r, d = [], [], [], [], []
            for i in ind:
                X, Y, U, R, D = self.storage[i]
                x.append(np.asarray(X))
                y.append(np.asarray(Y))
                u.append(np.asarray(U))
                r.append(np.asarray(R))
                d.append(np.asarray(D))
            return np.array(x), np.array(y), np.array(u), np.array(r).reshape(-1, 1), np.array(d).reshape(-1, 1)

    class DDPG(object):
        def __init__(self, state_dim, action_dim, max_action, discount=0.99, tau=0.005):
            self.actor = Actor(state_dim, action_dim, max_action)
            self.actor_target = Actor(state_dim, action_dim, max_action)
            self.critic = Critic(state_dim, action_dim)
            self.init = load(m, nn.ModuleDict({"actor": self.actor, "critic": self.critic}), state)
            self.actor_target.load_state_dict(self.actor.state_dict())
            self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=1e-3)
            self.critic_target = copy.deepcopy(self.critic)
            self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), weight_decay=1e-2)
            self.discount, self.tau = discount, tau

        def select_action(self, state):
            state = torch.FloatTensor(state.reshape(1, -1))
            return self.actor(state).cpu().data.numpy().flatten()

        def train(self, replay_buffer, iterations, batch_size=8):
            losses = []
            for it in range(iterations):
                x, y, u, r, d = replay_buffer.sample(batch_size)
                state = torch.FloatTensor(x)
                action = torch.FloatTensor(u)
                next_state = torch.FloatTensor(y)
                not_done = torch.FloatTensor(1 - d)
                reward = torch.FloatTensor(r)
                target_Q = self.critic_target(next_state, self.actor_target(next_state))
                target_Q = reward + (not_done * self.discount * target_Q).detach()
                current_Q = self.critic(state, action)
                critic_loss = F.mse_loss(current_Q, target_Q)
                self.critic_optimizer.zero_grad()
                critic_loss.backward()
                self.critic_optimizer.step()
                actor_loss = -self.critic(state, self.actor(state)).mean()
                self.actor_optimizer.zero_grad()
                actor_loss.backward()
                self.actor_optimizer.step()
                for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
                    target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
                for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
                    target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
                losses += [critic_loss.item(), actor_loss.item()]
            return losses

    A = normal(rng, state_dim, action_dim).astype(np.float64) * 0.3
    policy = DDPG(state_dim, action_dim, max_action)
    noise = OUNoise(action_dim)
    replay_buffer = ReplayBuffer(max_size=12)
    obs, record, episode_reward = rng.uniform(-1, 1, state_dim), [], 0.0
    for t in range(16):
        action = policy.select_action(np.array(obs, dtype=np.float32))
        action = (action + noise.sample()).clip(-max_action, max_action)
        new_obs = 0.9 * obs + A @ action
        reward = float(-np.sum(new_obs ** 2) - 0.1 * np.sum(action ** 2))
        done = t % 8 == 7
        replay_buffer.add((obs, new_obs, action, reward, float(done)))
        episode_reward += reward
        obs = new_obs
        if done:
            record.append(episode_reward)
            obs, episode_reward = rng.uniform(-1, 1, state_dim), 0.0
            noise.reset()
            record += policy.train(replay_buffer, 2)
    return policy.init, record + summary(list(policy.actor.parameters()) + list(policy.critic.parameters()) +
                                         list(policy.actor_target.parameters()) +
                                         list(policy.critic_target.parameters()))


def test_ddpg():
    compare(ddpg)


# (b) a point-cloud autoencoder in the style of charlesq34/pointnet-autoencoder's PyTorch ports: the PointNet encoder
# (Conv1d(3, C, 1) with BatchNorm1d on [B, 3, N], torch.max(x, 2, keepdim=True)[0].view(-1, C)), a Linear decoder to
# N * 3 viewed [B, N, 3], augmentation by numpy rotation matrices through torch.bmm, and the Chamfer distance written
# as the ports write it (xx, yy, zz by bmm, the diagonals by advanced indexing xx[:, diag_ind, diag_ind],
# unsqueeze(1).expand_as(zz), P.min(1)[0] and P.min(2)[0]) checked against torch.cdist(...) ** 2; beside it Zaheer et
# al.'s Deep Sets summing digits of sets padded to one length (phi on each element, the padding masked out by mask
# .unsqueeze(-1) before .sum(1), rho on the sum), L1 loss, SGD with momentum
def pointnet_ae_deepsets(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(1)
    N, C = 10, 16

    class PointNetAE(nn.Module):
        def __init__(self, num_points=N, latent=C):
            super(PointNetAE, self).__init__()
            self.num_points = num_points
            self.conv1 = torch.nn.Conv1d(3, 8, 1)
            self.conv2 = torch.nn.Conv1d(8, latent, 1)
            self.bn1 = nn.BatchNorm1d(8)
            self.bn2 = nn.BatchNorm1d(latent)
            self.latent = latent
            self.fc1 = nn.Linear(latent, 32)
            self.fc2 = nn.Linear(32, num_points * 3)

        def forward(self, x):
            batchsize = x.size()[0]
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.bn2(self.conv2(x))
            x = torch.max(x, 2, keepdim=True)[0]
            x = x.view(-1, self.latent)
            x = F.relu(self.fc1(x))
            x = self.fc2(x)
            return x.view(batchsize, self.num_points, 3)

    def batch_pairwise_dist(x, y):
        bs, num_points_x, points_dim = x.size()
        _, num_points_y, _ = y.size()
        xx = torch.bmm(x, x.transpose(2, 1))
        yy = torch.bmm(y, y.transpose(2, 1))
        zz = torch.bmm(x, y.transpose(2, 1))
        diag_ind_x = torch.arange(0, num_points_x)
        diag_ind_y = torch.arange(0, num_points_y)
        rx = xx[:, diag_ind_x, diag_ind_x].unsqueeze(1).expand_as(zz.transpose(2, 1))
        ry = yy[:, diag_ind_y, diag_ind_y].unsqueeze(1).expand_as(zz)
        P = rx.transpose(2, 1) + ry - 2 * zz
        return P

    def chamfer_loss(preds, gts):
        P = batch_pairwise_dist(gts, preds)
        mins, _ = torch.min(P, 1)
        loss_1 = torch.sum(mins)
        mins, _ = torch.min(P, 2)
        loss_2 = torch.sum(mins)
        return loss_1 + loss_2

    class DeepSet(nn.Module):
        def __init__(self, in_features=1, set_features=8):
            super(DeepSet, self).__init__()
            self.feature_extractor = nn.Sequential(nn.Linear(in_features, 16), nn.ELU(inplace=True),
                                                   nn.Linear(16, set_features))
            self.regressor = nn.Sequential(nn.Linear(set_features, 16), nn.ELU(inplace=True), nn.Linear(16, 1))

        def forward(self, x, mask):
            x = self.feature_extractor(x)
            x = (x * mask.unsqueeze(-1)).sum(dim=1)
            return self.regressor(x).squeeze(-1)

    ae, ds = PointNetAE(), DeepSet()
    init = load(m, nn.ModuleDict({"ae": ae, "ds": ds}), state)
    # SGD: the convolutions' biases before BatchNorm get gradients of rounding noise alone, which Adam's division by
    # their root mean square would blow up into steps of lr either way
    optimizer = optim.SGD(list(ae.parameters()) + list(ds.parameters()), lr=0.01, momentum=0.9)
    record = []
    for step in range(3):
        points = normal(rng, 4, N, 3)
        theta = rng.uniform(0, 2 * np.pi, 4)
        rot = np.zeros((4, 3, 3), np.float32)
        rot[:, 0, 0], rot[:, 0, 2], rot[:, 1, 1] = np.cos(theta), np.sin(theta), 1
        rot[:, 2, 0], rot[:, 2, 2] = -np.sin(theta), np.cos(theta)
        points = torch.bmm(torch.from_numpy(points), torch.from_numpy(rot))
        lengths = rng.integers(1, 6, 4)
        digits = rng.integers(0, 10, (4, 5))
        mask = torch.from_numpy((np.arange(5)[None] < lengths[:, None]).astype(np.float32))
        sets = torch.from_numpy(digits).float().unsqueeze(-1) / 10
        target = (torch.from_numpy(digits).float() * mask).sum(1) / 10
        ae.train()
        optimizer.zero_grad()
        recon = ae(points.transpose(2, 1))
        loss = chamfer_loss(recon, points) / points.size(0)
        with torch.no_grad():
            ref = torch.cdist(points, recon) ** 2
            assert torch.allclose(batch_pairwise_dist(points, recon), ref, atol=1e-4)
            record.append(ref.min(2)[0].sum().item())
        pred = ds(sets, mask)
        set_loss = F.l1_loss(pred, target)
        (loss + set_loss).backward()
        optimizer.step()
        record += [loss.item(), set_loss.item()]
    ae.eval()
    with torch.no_grad():
        record.append(chamfer_loss(ae(points.transpose(2, 1)), points).item())
    return init, record + summary(ae.parameters()) + summary(ds.parameters()) + summary(ae.buffers())


def test_pointnet_ae_deepsets():
    compare(pointnet_ae_deepsets)


# (c) Raschka-research-group's coral-pytorch (coral_pytorch/layers.py's CoralLayer with a shared bias-free Linear and
# the preinit bias torch.arange(num_classes - 1, 0, -1).float() / (num_classes - 1), dataset.py's label_to_levels and
# levels_from_labelbatch (an isinstance check and label.item(), lists of ones and zeros through torch.tensor(...,
# dtype=dtype), torch.stack), losses.py's coral_loss with importance weights and its shape check, proba_to_label by
# torch.sum(probas > 0.5, dim=1)) and CORN (corn_loss's conditional subsets by a bool mask y_train > i - 1 and
# logits[train_examples, task_index], corn_label_from_logits by torch.cumprod of sigmoids); MAE and MSE metrics over
# int64 labels, SGD with momentum
def coral_corn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rng = np.random.default_rng(2)
    K = 5

    class CoralLayer(torch.nn.Module):
        def __init__(self, size_in, num_classes, preinit_bias=True):
            super().__init__()
            self.size_in, self.size_out = size_in, 1
            self.coral_weights = torch.nn.Linear(self.size_in, 1, bias=False)
            if preinit_bias:
                self.coral_bias = torch.nn.Parameter(
                    torch.arange(num_classes - 1, 0, -1).float() / (num_classes - 1))
            else:
                self.coral_bias = torch.nn.Parameter(torch.zeros(num_classes - 1).float())

        def forward(self, x):
            return self.coral_weights(x) + self.coral_bias

    def label_to_levels(label, num_classes, dtype=torch.float32):
        if not label <= num_classes - 1:
            raise ValueError('Class label must be smaller or equal to %d (num_classes-1). Got %d.'
                             % (num_classes - 1, label))
        if isinstance(label, torch.Tensor):
            int_label = label.item()
        else:
            int_label = label
        levels = [1] * int_label + [0] * (num_classes - 1 - int_label)
        levels = torch.tensor(levels, dtype=dtype)
        return levels

    def levels_from_labelbatch(labels, num_classes, dtype=torch.float32):
        levels = []
        for label in labels:
            levels_from_label = label_to_levels(label=label, num_classes=num_classes, dtype=dtype)
            levels.append(levels_from_label)
        levels = torch.stack(levels)
        return levels

    def coral_loss(logits, levels, importance_weights=None, reduction='mean'):
        if not logits.shape == levels.shape:
            raise ValueError("Please ensure that logits (%s) has the same shape as levels (%s). "
                             % (logits.shape, levels.shape))
        term1 = (F.logsigmoid(logits) * levels + (F.logsigmoid(logits) - logits) * (1 - levels))
        if importance_weights is not None:
            term1 *= importance_weights
        val = (-torch.sum(term1, dim=1))
        if reduction == 'mean':
            loss = torch.mean(val)
        elif reduction == 'sum':
            loss = torch.sum(val)
        elif reduction is None:
            loss = val
        else:
            raise ValueError('Invalid value for `reduction`. Should be "mean", "sum", or None. Got %s' % reduction)
        return loss

    def proba_to_label(probas):
        predict_levels = probas > 0.5
        predicted_labels = torch.sum(predict_levels, dim=1)
        return predicted_labels

    def corn_loss(logits, y_train, num_classes):
        sets = []
        for i in range(num_classes - 1):
            label_mask = y_train > i - 1
            label_tensor = (y_train[label_mask] > i).to(torch.int64)
            sets.append((label_mask, label_tensor))
        num_examples = 0
        losses = 0.
        for task_index, s in enumerate(sets):
            train_examples = s[0]
            train_labels = s[1]
            if len(train_labels) < 1:
                continue
            num_examples += len(train_labels)
            pred = logits[train_examples, task_index]
            loss = -torch.sum(F.logsigmoid(pred) * train_labels + (F.logsigmoid(pred) - pred) * (1 - train_labels))
            losses += loss
        return losses / num_examples

    def corn_label_from_logits(logits):
        probas = torch.sigmoid(logits)
        probas = torch.cumprod(probas, dim=1)
        predict_levels = probas > 0.5
        predicted_labels = torch.sum(predict_levels, dim=1)
        return predicted_labels

    class CoralMLP(torch.nn.Module):
        def __init__(self, in_features, num_classes):
            super().__init__()
            self.features = torch.nn.Sequential(torch.nn.Linear(in_features, 16), torch.nn.LeakyReLU(),
                                                torch.nn.Linear(16, 8), torch.nn.LeakyReLU())
            self.fc = CoralLayer(size_in=8, num_classes=num_classes)

        def forward(self, x):
            x = self.features(x)
            logits = self.fc(x)
            probas = torch.sigmoid(logits)
            return logits, probas

    class CornMLP(torch.nn.Module):
        def __init__(self, in_features, num_classes):
            super().__init__()
            self.features = torch.nn.Sequential(torch.nn.Linear(in_features, 16), torch.nn.LeakyReLU(),
                                                torch.nn.Linear(16, num_classes - 1))

        def forward(self, x):
            return self.features(x)

    coral, corn = CoralMLP(6, K), CornMLP(6, K)
    init = load(m, nn.ModuleDict({"coral": coral, "corn": corn}), state)
    optimizer = torch.optim.SGD(list(coral.parameters()) + list(corn.parameters()), lr=0.05, momentum=0.9)
    record = []
    try:
        label_to_levels(torch.tensor(K), K)
        raise AssertionError("no ValueError")
    except ValueError as e:
        assert "Got 5." in str(e)
    weights = torch.tensor([1.0, 0.8, 0.6, 0.4])
    for epoch in range(3):
        features = torch.from_numpy(normal(rng, 8, 6))
        class_labels = torch.from_numpy(rng.integers(0, K, 8))
        levels = levels_from_labelbatch(class_labels, num_classes=K)
        logits, probas = coral(features)
        loss = coral_loss(logits, levels, importance_weights=weights)
        loss2 = corn_loss(corn(features), class_labels, K)
        optimizer.zero_grad()
        (loss + loss2).backward()
        optimizer.step()
        record += [loss.item(), loss2.item(), coral_loss(logits, levels, reduction='sum').item()]
    with torch.no_grad():
        mae, mse, num_examples = 0., 0., 0
        corn_mae = 0
        for i in range(2):
            features = torch.from_numpy(normal(rng, 8, 6))
            targets = torch.from_numpy(rng.integers(0, K, 8))
            logits, probas = coral(features)
            predicted_labels = proba_to_label(probas).float()
            num_examples += targets.size(0)
            mae += torch.sum(torch.abs(predicted_labels - targets))
            mse += torch.sum((predicted_labels - targets) ** 2)
            corn_mae += torch.sum(torch.abs(corn_label_from_logits(corn(features)) - targets))
        assert corn_mae.dtype == torch.int64
        record += [(mae / num_examples).item(), (mse / num_examples).item(), corn_mae.item()]
    return init, record + summary(coral.parameters()) + summary(corn.parameters())


def test_coral_corn():
    compare(coral_corn)


# (d) shaoxiongji/federated-learning (models/Fed.py's FedAvg over deepcopied state_dicts, w_avg[k] += w[i][k] then
# torch.div(w_avg[k], len(w)); models/Update.py's DatasetSplit and LocalUpdate.train returning net.state_dict() and
# the mean of the batch losses; utils/sampling.py's mnist_iid by np.random.choice without replacement and set
# differences; models/test.py's test_img with reduction='sum' and .long().cpu().sum()), its CNN with a BatchNorm2d
# whose int64 num_batches_tracked the average turns float before load_state_dict copies it back, and FedProx's
# proximal term (mu / 2) * (w - w_t).norm(2) ** 2 over the global weights kept by p.detach().to(p.device, copy=True)
# (tnet's to() returned the parameter's own memory until this file, so the term stayed 0)
def fedavg(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rng = np.random.default_rng(3)
    Dataset, DataLoader = m.data.Dataset, m.data.DataLoader

    class Args:
        num_users, frac, local_ep, local_bs, lr, momentum, epochs, mu = 4, 0.5, 2, 3, 0.05, 0.5, 2, 0.01

    args = Args()

    class CNNMnist(nn.Module):
        def __init__(self, args):
            super(CNNMnist, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
            self.bn1 = nn.BatchNorm2d(4)
            self.fc1 = nn.Linear(4 * 3 * 3, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.bn1(self.conv1(x)), 2))
            x = x.view(-1, x.shape[1] * x.shape[2] * x.shape[3])
            return self.fc1(x)

    def FedAvg(w):
        w_avg = copy.deepcopy(w[0])
        for k in w_avg.keys():
            for i in range(1, len(w)):
                w_avg[k] += w[i][k]
            w_avg[k] = torch.div(w_avg[k], len(w))
        return w_avg

    def mnist_iid(dataset, num_users):
        num_items = int(len(dataset) / num_users)
        dict_users, all_idxs = {}, [i for i in range(len(dataset))]
        for i in range(num_users):
            dict_users[i] = set(rng.choice(all_idxs, num_items, replace=False))
            all_idxs = list(set(all_idxs) - dict_users[i])
        return dict_users

    class DatasetSplit(Dataset):
        def __init__(self, dataset, idxs):
            self.dataset = dataset
            self.idxs = sorted(idxs)

        def __len__(self):
            return len(self.idxs)

        def __getitem__(self, item):
            image, label = self.dataset[self.idxs[item]]
            return image, label

    class LocalUpdate(object):
        def __init__(self, args, dataset=None, idxs=None):
            self.args = args
            self.loss_func = nn.CrossEntropyLoss()
            self.proximal_terms = []
            self.ldr_train = DataLoader(DatasetSplit(dataset, idxs), batch_size=self.args.local_bs, shuffle=False)

        def train(self, net, prox=False):
            net.train()
            global_weights = [p.detach().to(p.device, copy=True) for p in net.parameters()]
            optimizer = torch.optim.SGD(net.parameters(), lr=self.args.lr, momentum=self.args.momentum)
            epoch_loss = []
            for iter in range(self.args.local_ep):
                batch_loss = []
                for batch_idx, (images, labels) in enumerate(self.ldr_train):
                    net.zero_grad()
                    log_probs = net(images)
                    loss = self.loss_func(log_probs, labels)
                    if prox:
                        proximal_term = 0.0
                        for w, w_t in zip(net.parameters(), global_weights):
                            proximal_term += (w - w_t).norm(2) ** 2
                        loss = loss + (self.args.mu / 2) * proximal_term
                        self.proximal_terms.append(proximal_term.item())
                    loss.backward()
                    optimizer.step()
                    batch_loss.append(loss.item())
                epoch_loss.append(sum(batch_loss) / len(batch_loss))
            return net.state_dict(), sum(epoch_loss) / len(epoch_loss)

    def test_img(net_g, datatest):
        net_g.eval()
        test_loss = 0
        correct = 0
        data_loader = DataLoader(datatest, batch_size=4)
        for idx, (data, target) in enumerate(data_loader):
            log_probs = net_g(data)
            test_loss += F.cross_entropy(log_probs, target, reduction='sum').item()
            y_pred = log_probs.data.max(1, keepdim=True)[1]
            correct += y_pred.eq(target.data.view_as(y_pred)).long().cpu().sum()
        test_loss /= len(data_loader.dataset)
        accuracy = 100.00 * correct / len(data_loader.dataset)
        return accuracy, test_loss

    dataset_train = m.data.TensorDataset(torch.from_numpy(normal(rng, 16, 1, 8, 8)),
                                         torch.from_numpy(rng.integers(0, 10, 16)))
    dataset_test = m.data.TensorDataset(torch.from_numpy(normal(rng, 8, 1, 8, 8)),
                                        torch.from_numpy(rng.integers(0, 10, 8)))
    dict_users = mnist_iid(dataset_train, args.num_users)
    net_glob = CNNMnist(args=args)
    init = load(m, net_glob, state)
    net_glob.train()
    w_glob = net_glob.state_dict()
    record = []
    for iter in range(args.epochs):
        loss_locals, w_locals = [], []
        m_users = max(int(args.frac * args.num_users), 1)
        idxs_users = rng.choice(range(args.num_users), m_users, replace=False)
        for idx in idxs_users:
            local = LocalUpdate(args=args, dataset=dataset_train, idxs=dict_users[idx])
            w, loss = local.train(net=copy.deepcopy(net_glob), prox=iter == 1)
            w_locals.append(copy.deepcopy(w))
            loss_locals.append(copy.deepcopy(loss))
            record += local.proximal_terms
        w_glob = FedAvg(w_locals)
        assert w_glob['bn1.num_batches_tracked'].dtype == torch.float32
        net_glob.load_state_dict(w_glob)
        assert net_glob.bn1.num_batches_tracked.dtype == torch.int64
        loss_avg = sum(loss_locals) / len(loss_locals)
        acc_test, loss_test = test_img(net_glob, dataset_test)
        net_glob.train()
        record += [loss_avg, acc_test.item(), loss_test, w_glob['bn1.num_batches_tracked'].item()]
    return init, record + summary(net_glob.parameters()) + summary(net_glob.buffers())


def test_fedavg():
    compare(fedavg)


# (e) an echo state network as reservoir-computing tutorials write it in torch: the reservoir drawn by torch.rand
# (torch replays tnet's draws), made sparse by W[mask] = 0 and scaled to a spectral radius by numpy's eigvals of
# W.cpu().numpy() (torch.linalg.eigvals is complex, which tnet has not: README), W_in and W kept by register_buffer, the leaky tanh update over
# torch.cat([torch.ones(1), u_t]) one step at a time, the washout, the ridge readout in closed form by
# torch.linalg.solve(X.T @ X + ridge * torch.eye(n), X.T @ Y) copied into a Linear's weight and bias through .data,
# then a few Adam steps of that readout on the NRMSE's square; a sum of sines as the series to predict one step on
def echo_state(m, state=None, replay=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    n_in, n_res, T, washout = 1, 12, 24, 4

    class ESN(nn.Module):
        def __init__(self, input_size, reservoir_size, output_size, spectral_radius=0.9, leaking_rate=0.3,
                     sparsity=0.5, input_scaling=1.0):
            super().__init__()
            self.reservoir_size, self.leaking_rate = reservoir_size, leaking_rate
            W = replayed(m, replay, "W", torch.rand(reservoir_size, reservoir_size)) - 0.5
            mask = replayed(m, replay, "mask", torch.rand(reservoir_size, reservoir_size)) < sparsity
            W[mask] = 0
            # torch.linalg.eigvals(W).abs().max() in torch: complex eigenvalues, which tnet has not (README)
            eigenvalues = np.linalg.eigvals(W.cpu().numpy())
            W *= spectral_radius / np.abs(eigenvalues).max()
            self.register_buffer('W', W)
            W_in = (replayed(m, replay, "W_in", torch.rand(reservoir_size, 1 + input_size)) - 0.5) * input_scaling
            self.register_buffer('W_in', W_in)
            self.readout = nn.Linear(1 + input_size + reservoir_size, output_size)

        def states(self, u, washout=0):
            x = torch.zeros(self.reservoir_size)
            states = []
            for t in range(u.size(0)):
                x_new = torch.tanh(self.W_in @ torch.cat([torch.ones(1), u[t]]) + self.W @ x)
                x = (1 - self.leaking_rate) * x + self.leaking_rate * x_new
                states.append(torch.cat([torch.ones(1), u[t], x]))
            return torch.stack(states[washout:])

        def fit(self, X, Y, ridge=1e-4):
            n = X.size(1)
            W_out = torch.linalg.solve(X.T @ X + ridge * torch.eye(n), X.T @ Y).T
            self.readout.weight.data = W_out[:, 1:].contiguous()
            self.readout.bias.data = W_out[:, 0].clone()

        def forward(self, X):
            return self.readout(X[:, 1:])

    t = np.arange(T + 1, dtype=np.float32)
    series = (np.sin(0.3 * t) + 0.5 * np.sin(0.11 * t + 1.0)).astype(np.float32)
    u, y = torch.from_numpy(series[:-1, None]), torch.from_numpy(series[1:, None])
    esn = ESN(n_in, n_res, 1)
    init = load(m, esn, state)
    radius = np.abs(np.linalg.eigvals(esn.W.cpu().numpy())).max()
    if m.torch.__name__ == "tnet":
        try:
            torch.linalg.eigvals(esn.W)
            raise AssertionError("tnet.linalg.eigvals gave a result")
        except NotImplementedError as e:
            assert "complex" in str(e)
    X = esn.states(u, washout)
    Y = y[washout:]
    esn.fit(X, Y)

    def nrmse(pred, target):
        return torch.sqrt(torch.mean((pred - target) ** 2) / torch.var(target))

    record = [float(radius), nrmse(esn(X), Y).item()]
    optimizer = optim.Adam(esn.readout.parameters(), lr=1e-3)
    for step in range(2):
        optimizer.zero_grad()
        loss = nrmse(esn(X), Y) ** 2
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    return init, record + summary(esn.parameters())


def test_echo_state():
    compare(echo_state, replay={})


# (f) quantile forecasting with split-conformal calibration: windows cut from a series by Tensor.unfold(0, L + H, 1),
# a GRU encoder whose last hidden state a Linear maps to H * Q quantiles viewed [B, H, Q] and sorted along the last
# dim (no crossing), pytorch-forecasting's QuantileLoss in its loop form (torch.max((q - 1) * errors, q * errors)
# .unsqueeze(1) per quantile, cat, sum, mean) checked against the broadcast form over a quantile tensor, the
# conformalized quantile regression of Romano et al. (scores torch.maximum(lo - y, y - hi), qhat by
# torch.quantile(scores, level, interpolation='higher'), the coverage of the widened band), Adam with clip_grad_norm_
def quantile_conformal(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    rng = np.random.default_rng(5)
    L, H, quantiles = 6, 2, [0.1, 0.5, 0.9]

    class QuantileLoss(nn.Module):
        def __init__(self, quantiles):
            super().__init__()
            self.quantiles = quantiles

        def forward(self, preds, target):
            assert not target.requires_grad
            assert preds.size(0) == target.size(0)
            losses = []
            for i, q in enumerate(self.quantiles):
                errors = target - preds[:, i]
                losses.append(torch.max((q - 1) * errors, q * errors).unsqueeze(1))
            loss = torch.mean(torch.sum(torch.cat(losses, dim=1), dim=1))
            return loss

    class Forecaster(nn.Module):
        def __init__(self, hidden=8, horizon=H, n_quantiles=len(quantiles)):
            super().__init__()
            self.horizon, self.n_quantiles = horizon, n_quantiles
            self.rnn = nn.GRU(1, hidden, batch_first=True)
            self.head = nn.Linear(hidden, horizon * n_quantiles)

        def forward(self, x):
            _, h = self.rnn(x.unsqueeze(-1))
            out = self.head(h[-1]).view(-1, self.horizon, self.n_quantiles)
            return torch.sort(out, dim=-1)[0]

    t = np.arange(60, dtype=np.float32)
    series = torch.from_numpy((np.sin(0.4 * t) + 0.3 * rng.standard_normal(60)).astype(np.float32))
    windows = series.unfold(0, L + H, 1)
    assert windows.shape == (60 - L - H + 1, L + H)
    train, calib = windows[:24], windows[24:44]
    model = Forecaster()
    init = load(m, model, state)
    criterion = QuantileLoss(quantiles)
    q_tensor = torch.tensor(quantiles)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    record = []
    for epoch in range(3):
        for batch in train.split(12):
            x, y = batch[:, :L], batch[:, L:]
            preds = model(x)
            loss = criterion(preds.reshape(-1, len(quantiles)), y.reshape(-1))
            errors = y.unsqueeze(-1) - preds
            vectorized = torch.max((q_tensor - 1) * errors, q_tensor * errors).sum(-1).mean()
            assert torch.allclose(loss, vectorized, atol=1e-6)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            record.append(loss.item())
    model.eval()
    with torch.no_grad():
        preds = model(calib[:, :L])
        y = calib[:, L:]
        lo, hi = preds[..., 0], preds[..., -1]
        scores = torch.maximum(lo - y, y - hi).flatten()
        n, alpha = scores.numel(), 0.2
        level = math.ceil((n + 1) * (1 - alpha)) / n
        qhat = torch.quantile(scores, level, interpolation='higher')
        # the score equal to qhat lies on the band's edge, where lo - qhat rounds either way: its coverage by the scores
        covered = (scores <= qhat).float().mean()
        record += [qhat.item(), covered.item(), torch.quantile(scores, torch.tensor([0.25, 0.5]), dim=0).sum().item()]
    return init, record + summary(model.parameters())


def test_quantile_conformal():
    compare(quantile_conformal)


# (g) hcnoh/knowledge-tracing-collection-pytorch's DKT (models/dkt.py: the interaction q + num_q * r through an
# Embedding, LSTM(batch_first=True), Linear, Dropout, sigmoid; the train loop's y * one_hot(qshft.long(), num_q)
# summed over the last dim, torch.masked_select of predictions and targets by the mask, binary_cross_entropy) with
# data_loaders' collate_fn (pad_sequence(batch_first=True, padding_value=-1) of the question and response sequences
# and their shifts, mask_seqs = (q_seqs != pad_val) * (qshft_seqs != pad_val), the sequences multiplied by the mask)
# and the ROC AUC computed from ranks in numpy (sklearn's roc_auc_score in the source); dropout 0 in the compared steps
def dkt(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    from_module = __import__(m.torch.__name__ + ".nn.utils.rnn", fromlist=["pad_sequence"])
    pad_sequence = from_module.pad_sequence
    one_hot, binary_cross_entropy = F.one_hot, F.binary_cross_entropy
    rng = np.random.default_rng(6)
    num_q = 5

    class DKT(nn.Module):
        def __init__(self, num_q, emb_size, hidden_size):
            super().__init__()
            self.num_q = num_q
            self.emb_size = emb_size
            self.hidden_size = hidden_size
            self.interaction_emb = nn.Embedding(self.num_q * 2, self.emb_size)
            self.lstm_layer = nn.LSTM(self.emb_size, self.hidden_size, batch_first=True)
            self.out_layer = nn.Linear(self.hidden_size, self.num_q)
            self.dropout_layer = nn.Dropout()

        def forward(self, q, r):
            x = q + self.num_q * r
            h, _ = self.lstm_layer(self.interaction_emb(x))
            y = self.out_layer(h)
            y = self.dropout_layer(y)
            y = torch.sigmoid(y)
            return y

    def collate_fn(batch, pad_val=-1):
        q_seqs, r_seqs, qshft_seqs, rshft_seqs = [], [], [], []
        for q_seq, r_seq in batch:
            q_seqs.append(torch.FloatTensor(q_seq[:-1]))
            r_seqs.append(torch.FloatTensor(r_seq[:-1]))
            qshft_seqs.append(torch.FloatTensor(q_seq[1:]))
            rshft_seqs.append(torch.FloatTensor(r_seq[1:]))
        q_seqs = pad_sequence(q_seqs, batch_first=True, padding_value=pad_val)
        r_seqs = pad_sequence(r_seqs, batch_first=True, padding_value=pad_val)
        qshft_seqs = pad_sequence(qshft_seqs, batch_first=True, padding_value=pad_val)
        rshft_seqs = pad_sequence(rshft_seqs, batch_first=True, padding_value=pad_val)
        mask_seqs = (q_seqs != pad_val) * (qshft_seqs != pad_val)
        q_seqs, r_seqs, qshft_seqs, rshft_seqs = \
            q_seqs * mask_seqs, r_seqs * mask_seqs, qshft_seqs * mask_seqs, rshft_seqs * mask_seqs
        return q_seqs, r_seqs, qshft_seqs, rshft_seqs, mask_seqs

    def roc_auc(y_true, y_score):
        order = np.argsort(y_score, kind="stable")
        ranks = np.empty(len(y_score))
        ranks[order] = np.arange(1, len(y_score) + 1)
        pos = y_true == 1
        n_pos, n_neg = pos.sum(), (~pos).sum()
        return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)

    sequences = []
    for length in (7, 5, 6, 4, 7, 3):
        q = rng.integers(0, num_q, length)
        sequences.append((q.astype(np.float32), (rng.uniform(size=length) < 0.3 + 0.1 * q).astype(np.float32)))
    loader = m.data.DataLoader(sequences, batch_size=3, shuffle=False, collate_fn=collate_fn)
    model = DKT(num_q, 6, 8)
    init = load(m, model, state)
    model.dropout_layer.p = 0.0
    opt = optim.Adam(model.parameters(), lr=1e-2)
    record = []
    for epoch in range(2):
        for data in loader:
            q, r, qshft, rshft, mask = data
            model.train()
            y = model(q.long(), r.long())
            y = (y * one_hot(qshft.long(), model.num_q)).sum(-1)
            y = torch.masked_select(y, mask)
            t = torch.masked_select(rshft, mask)
            opt.zero_grad()
            loss = binary_cross_entropy(y, t)
            loss.backward()
            opt.step()
            record.append(loss.detach().cpu().numpy())
        with torch.no_grad():
            ys, ts = [], []
            for data in loader:
                q, r, qshft, rshft, mask = data
                model.eval()
                y = model(q.long(), r.long())
                y = torch.masked_select((y * one_hot(qshft.long(), model.num_q)).sum(-1), mask).detach().cpu()
                ys.append(y.numpy())
                ts.append(torch.masked_select(rshft, mask).detach().cpu().numpy())
            record.append(roc_auc(np.concatenate(ts), np.concatenate(ys)))
    return init, [float(v) for v in record] + summary(model.parameters())


def test_dkt():
    compare(dkt)


# (h) lpj0/MWCNN_PyTorch's model/common.py (dwt_init by strided slices x[:, :, 0::2, :] / 2 and the four Haar bands
# cat on dim 1, iwt_init writing the bands into torch.zeros([...]).float() by strided slice assignment h[:, :, 0::2,
# 1::2] = ..., DWT and IWT modules with requires_grad = False) in a small denoiser (conv, DWT, conv, IWT, conv, a
# residual), the IWT(DWT(x)) == x check, an MSE loss on noisy images from numpy, Adam under StepLR, PSNR by
# 10 * torch.log10(1 / mse)
def mwcnn(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(7)

    def dwt_init(x):
        x01 = x[:, :, 0::2, :] / 2
        x02 = x[:, :, 1::2, :] / 2
        x1 = x01[:, :, :, 0::2]
        x2 = x02[:, :, :, 0::2]
        x3 = x01[:, :, :, 1::2]
        x4 = x02[:, :, :, 1::2]
        x_LL = x1 + x2 + x3 + x4
        x_HL = -x1 - x2 + x3 + x4
        x_LH = -x1 + x2 - x3 + x4
        x_HH = x1 - x2 - x3 + x4
        return torch.cat((x_LL, x_HL, x_LH, x_HH), 1)

    def iwt_init(x):
        r = 2
        in_batch, in_channel, in_height, in_width = x.size()
        out_batch, out_channel, out_height, out_width = in_batch, int(in_channel / (r ** 2)), r * in_height, \
            r * in_width
        x1 = x[:, 0:out_channel, :, :] / 2
        x2 = x[:, out_channel:out_channel * 2, :, :] / 2
        x3 = x[:, out_channel * 2:out_channel * 3, :, :] / 2
        x4 = x[:, out_channel * 3:out_channel * 4, :, :] / 2
        h = torch.zeros([out_batch, out_channel, out_height, out_width]).float()
        h[:, :, 0::2, 0::2] = x1 - x2 - x3 + x4
        h[:, :, 1::2, 0::2] = x1 - x2 + x3 - x4
        h[:, :, 0::2, 1::2] = x1 + x2 - x3 - x4
        h[:, :, 1::2, 1::2] = x1 + x2 + x3 + x4
        return h

    class DWT(nn.Module):
        def __init__(self):
            super(DWT, self).__init__()
            self.requires_grad = False

        def forward(self, x):
            return dwt_init(x)

    class IWT(nn.Module):
        def __init__(self):
            super(IWT, self).__init__()
            self.requires_grad = False

        def forward(self, x):
            return iwt_init(x)

    class Denoiser(nn.Module):
        def __init__(self, n_feats=4):
            super().__init__()
            self.head = nn.Conv2d(1, n_feats, 3, padding=1)
            self.DWT, self.IWT = DWT(), IWT()
            self.body = nn.Sequential(nn.Conv2d(n_feats * 4, n_feats * 4, 3, padding=1), nn.ReLU(True))
            self.tail = nn.Conv2d(n_feats, 1, 3, padding=1)

        def forward(self, x):
            h = F.relu(self.head(x))
            h = self.IWT(self.body(self.DWT(h))) + h
            return self.tail(h) + x

    model = Denoiser()
    init = load(m, model, state)
    x = torch.from_numpy(normal(rng, 2, 3, 6, 6))
    assert torch.allclose(iwt_init(dwt_init(x)), x, atol=1e-6)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    scheduler = m.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    record = []
    for step in range(3):
        clean = torch.from_numpy(rng.uniform(0, 1, (2, 1, 8, 8)).astype(np.float32))
        noisy = clean + torch.from_numpy(normal(rng, 2, 1, 8, 8)) * 0.1
        optimizer.zero_grad()
        loss = F.mse_loss(model(noisy), clean)
        loss.backward()
        optimizer.step()
        scheduler.step()
        with torch.no_grad():
            psnr = 10 * torch.log10(1 / F.mse_loss(model(noisy).clamp(0, 1), clean))
        record += [loss.item(), psnr.item(), scheduler.get_last_lr()[0]]
    return init, record + summary(model.parameters())


def test_mwcnn():
    compare(mwcnn)


# (i) attention-based deep multiple-instance learning (AMLab-Amsterdam/AttentionDeepMIL's model.py: GatedAttention
# with attention_V tanh and attention_U sigmoid multiplied, A = torch.transpose(A, 1, 0), F.softmax(A, dim=1),
# M = torch.mm(A, H), Y_prob and Y_hat by torch.ge(Y_prob, 0.5).float(), calculate_objective's clamp to [1e-5,
# 1 - 1e-5] and the hand-written negative log-likelihood, calculate_classification_error's .eq(Y).cpu().float()
# .mean().item(); main.py's bag loop with label.squeeze(0) and data.squeeze(0), Adam with betas (0.9, 0.999) and
# weight_decay) beside a modern Hopfield pooling of Ramsauer et al. (a learned query, xi <- X^T softmax(beta X xi)
# iterated a fixed number of times, beta = 1 / sqrt(d))
def attention_mil(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(8)

    class GatedAttention(nn.Module):
        def __init__(self):
            super(GatedAttention, self).__init__()
            self.M, self.L, self.ATTENTION_BRANCHES = 8, 6, 1
            self.feature_extractor_part1 = nn.Sequential(nn.Conv2d(1, 4, kernel_size=3), nn.ReLU(),
                                                         nn.MaxPool2d(2, stride=2))
            self.feature_extractor_part2 = nn.Sequential(nn.Linear(4 * 3 * 3, self.M), nn.ReLU())
            self.attention_V = nn.Sequential(nn.Linear(self.M, self.L), nn.Tanh())
            self.attention_U = nn.Sequential(nn.Linear(self.M, self.L), nn.Sigmoid())
            self.attention_w = nn.Linear(self.L, self.ATTENTION_BRANCHES)
            self.classifier = nn.Sequential(nn.Linear(self.M * self.ATTENTION_BRANCHES, 1), nn.Sigmoid())

        def forward(self, x):
            H = self.feature_extractor_part1(x)
            H = H.view(-1, 4 * 3 * 3)
            H = self.feature_extractor_part2(H)
            A_V = self.attention_V(H)
            A_U = self.attention_U(H)
            A = self.attention_w(A_V * A_U)
            A = torch.transpose(A, 1, 0)
            A = F.softmax(A, dim=1)
            Z = torch.mm(A, H)
            Y_prob = self.classifier(Z)
            Y_hat = torch.ge(Y_prob, 0.5).float()
            return Y_prob, Y_hat, A

        def calculate_classification_error(self, X, Y):
            Y = Y.float()
            _, Y_hat, _ = self.forward(X)
            error = 1. - Y_hat.eq(Y).cpu().float().mean().item()
            return error, Y_hat

        def calculate_objective(self, X, Y):
            Y = Y.float()
            Y_prob, _, A = self.forward(X)
            Y_prob = torch.clamp(Y_prob, min=1e-5, max=1. - 1e-5)
            neg_log_likelihood = -1. * (Y * torch.log(Y_prob) + (1. - Y) * torch.log(1. - Y_prob))
            return neg_log_likelihood, A

    class HopfieldPooling(nn.Module):
        def __init__(self, d, steps=3):
            super().__init__()
            self.query = nn.Parameter(torch.zeros(d))
            self.beta, self.steps = 1.0 / math.sqrt(d), steps
            self.out = nn.Linear(d, 1)

        def forward(self, X):
            xi = self.query
            for _ in range(self.steps):
                xi = X.t() @ torch.softmax(self.beta * (X @ xi), dim=0)
            return self.out(xi)

    model, hopfield = GatedAttention(), HopfieldPooling(8)
    init = load(m, nn.ModuleDict({"model": model, "hopfield": hopfield}), state)
    with torch.no_grad():
        hopfield.query.normal_()
    init["hopfield.query"] = hopfield.query.detach().cpu().numpy().copy() if state is None else state[
        "hopfield.query"]
    hopfield.query.data.copy_(torch.from_numpy(init["hopfield.query"]))
    optimizer = optim.Adam(list(model.parameters()) + list(hopfield.parameters()), lr=5e-3, betas=(0.9, 0.999),
                           weight_decay=1e-4)
    bags = [(torch.from_numpy(normal(rng, 1, n, 1, 8, 8)), torch.tensor([[float(n % 2)]]))
            for n in (3, 5, 4, 2)]
    record = []
    for epoch in range(2):
        model.train()
        train_loss, train_error = 0., 0.
        for batch_idx, (data, label) in enumerate(bags):
            bag_label = label[0]
            data = data.squeeze(0)
            optimizer.zero_grad()
            loss, attention = model.calculate_objective(data, bag_label)
            train_loss += loss.data[0]
            error, _ = model.calculate_classification_error(data, bag_label)
            train_error += error
            H = model.feature_extractor_part2(model.feature_extractor_part1(data).view(-1, 36))
            hop_loss = F.binary_cross_entropy_with_logits(hopfield(H), bag_label.view(1))
            (loss + hop_loss).backward()
            optimizer.step()
            record += [hop_loss.item(), attention.sum().item()]
        train_loss /= len(bags)
        train_error /= len(bags)
        record += [train_loss.cpu().numpy()[0], train_error]
    return init, [float(v) for v in record] + summary(model.parameters()) + summary(hopfield.parameters())


def test_attention_mil():
    compare(attention_mil)


# (j) angle regression with von Mises likelihoods as "deep directional statistics" (Prokudin et al.) and head-pose
# repositories write it: a small CNN whose head gives (cos, sin) normalised by F.normalize and a concentration by
# F.softplus(...) + eps, the loss -VonMises(torch.atan2(sin, cos), kappa).log_prob(angle) beside the hand-written
# -kappa * cos(angle - mu) + log(2 pi) + log(i0e(kappa)) + kappa by torch.special.i0e, a mixture of von Mises by
# MixtureSameFamily(Categorical(logits=...), VonMises(...)), the entropy by law.entropy() with the fallback of
# `except NotImplementedError` (torch's VonMises has none: a Riemann sum of -p log p over a grid of angles), the mean
# absolute angular error in degrees by torch.rad2deg of atan2(sin(d), cos(d)), Adam
def von_mises_angles(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    D = torch.distributions
    rng = np.random.default_rng(9)
    K = 2

    class AngleNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                                          nn.Flatten())
            self.direction = nn.Linear(16, 2)
            self.kappa = nn.Linear(16, 1)
            self.mixture = nn.Linear(16, 3 * K)

        def forward(self, x):
            h = self.features(x)
            direction = F.normalize(self.direction(h), dim=1)
            kappa = F.softplus(self.kappa(h)) + 1e-3
            logits, mix_cos, mix_sin = self.mixture(h).chunk(3, dim=1)
            return direction, kappa.squeeze(1), logits, torch.atan2(mix_sin, mix_cos)

    def von_mises_nll(mu, kappa, angle):
        log_bessel = torch.log(torch.special.i0e(kappa)) + kappa
        return (-kappa * torch.cos(angle - mu) + math.log(2 * math.pi) + log_bessel).mean()

    def entropy(law):
        try:
            return law.entropy()
        except NotImplementedError:
            grid = torch.linspace(-math.pi, math.pi, 65)[:-1]
            log_p = law.log_prob(grid.view(-1, *([1] * len(law.batch_shape))))
            return -(log_p.exp() * log_p).sum(0) * (2 * math.pi / 64)

    model = AngleNet()
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    record = []
    for step in range(3):
        images = torch.from_numpy(normal(rng, 4, 1, 6, 6))
        angle = torch.from_numpy(rng.uniform(-math.pi, math.pi, 4).astype(np.float32))
        direction, kappa, logits, mix_mu = model(images)
        mu = torch.atan2(direction[:, 1], direction[:, 0])
        law = D.VonMises(mu, kappa)
        loss = -law.log_prob(angle).mean()
        by_hand = von_mises_nll(mu, kappa, angle)
        assert torch.allclose(loss, by_hand, atol=1e-5)
        mixture = D.MixtureSameFamily(D.Categorical(logits=logits), D.VonMises(mix_mu, kappa.unsqueeze(1).expand(-1, K)))
        mix_loss = -mixture.log_prob(angle).mean()
        optimizer.zero_grad()
        (loss + mix_loss).backward()
        optimizer.step()
        with torch.no_grad():
            diff = mu - angle
            mae = torch.rad2deg(torch.abs(torch.atan2(torch.sin(diff), torch.cos(diff)))).mean()
            record += [loss.item(), mix_loss.item(), mae.item(), entropy(law).sum().item(),
                       entropy(D.Normal(mu, kappa)).sum().item()]
    return init, record + summary(model.parameters())


def test_von_mises_angles():
    compare(von_mises_angles)
