"""DOCSTRING"""
import copy
import math
from collections import deque

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
# proximal term (mu / 2) * (w - w_t).norm(2) ** 2 over a list of the global weights
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
            self.ldr_train = DataLoader(DatasetSplit(dataset, idxs), batch_size=self.args.local_bs, shuffle=False)

        def train(self, net, prox=False):
            net.train()
            global_weights = [p.detach().clone() for p in net.parameters()]
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
