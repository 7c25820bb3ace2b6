"""Self-supervised, metric-learning and distillation code on CIFAR (HobbitLong's SupContrast and
RepDistiller, facebookresearch's SimSiam and MoCo, BYOL's EMA target, Barlow Twins, VICReg) and
bearpaw/pytorch-classification's models and utilities, written from memory in their repositories'
styles and ported by their imports alone, as test_ported_scripts.py: each runs in tnet, then in torch
from tnet's initial weights (state_dict through numpy), and the losses, and the gradients and
weights summed into a few numbers, agree; shapes are tiny and runs 1-3 steps."""
import numpy as np
import pytest

from helpers import batches, compare, load, summary


def cifar_encoder(nn, dim=8):
    """A small conv encoder standing in for the repositories' ResNet backbones."""
    return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(inplace=True),
                         nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(6, dim))


# (a) SupContrast (HobbitLong): SupConLoss on features [bsz, n_views, dim], the views unbound and
# concatenated, the positives' mask from torch.eq(labels, labels.T), the self-contrast removed by
# torch.scatter, logits_max detached, a two-crop batch through an encoder and a normalised head
def supcon(m, state=None, method="SupCon", contrast_mode="all"):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class SupConLoss(nn.Module):
        """Supervised Contrastive Learning: https://arxiv.org/pdf/2004.11362.pdf.
        It also supports the unsupervised contrastive loss in SimCLR"""
        def __init__(self, temperature=0.07, contrast_mode='all',
                     base_temperature=0.07):
            super(SupConLoss, self).__init__()
            self.temperature = temperature
            self.contrast_mode = contrast_mode
            self.base_temperature = base_temperature

        def forward(self, features, labels=None, mask=None):
            device = (torch.device('cuda')
                      if features.is_cuda
                      else torch.device('cpu'))

            if len(features.shape) < 3:
                raise ValueError('`features` needs to be [bsz, n_views, ...],'
                                 'at least 3 dimensions are required')
            if len(features.shape) > 3:
                features = features.view(features.shape[0], features.shape[1], -1)

            batch_size = features.shape[0]
            if labels is not None and mask is not None:
                raise ValueError('Cannot define both `labels` and `mask`')
            elif labels is None and mask is None:
                mask = torch.eye(batch_size, dtype=torch.float32).to(device)
            elif labels is not None:
                labels = labels.contiguous().view(-1, 1)
                if labels.shape[0] != batch_size:
                    raise ValueError('Num of labels does not match num of features')
                mask = torch.eq(labels, labels.T).float().to(device)
            else:
                mask = mask.float().to(device)

            contrast_count = features.shape[1]
            contrast_feature = torch.cat(torch.unbind(features, dim=1), dim=0)
            if self.contrast_mode == 'one':
                anchor_feature = features[:, 0]
                anchor_count = 1
            elif self.contrast_mode == 'all':
                anchor_feature = contrast_feature
                anchor_count = contrast_count
            else:
                raise ValueError('Unknown mode: {}'.format(self.contrast_mode))

            # compute logits
            anchor_dot_contrast = torch.div(
                torch.matmul(anchor_feature, contrast_feature.T),
                self.temperature)
            # for numerical stability
            logits_max, _ = torch.max(anchor_dot_contrast, dim=1, keepdim=True)
            logits = anchor_dot_contrast - logits_max.detach()

            # tile mask
            mask = mask.repeat(anchor_count, contrast_count)
            # mask-out self-contrast cases
            logits_mask = torch.scatter(
                torch.ones_like(mask),
                1,
                torch.arange(batch_size * anchor_count).view(-1, 1).to(device),
                0
            )
            mask = mask * logits_mask

            # compute log_prob
            exp_logits = torch.exp(logits) * logits_mask
            log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))

            # compute mean of log-likelihood over positive
            # modified to handle edge cases when there is no positives pair
            # for an anchor point.
            mask_pos_pairs = mask.sum(1)
            mask_pos_pairs = torch.where(mask_pos_pairs < 1e-6, 1, mask_pos_pairs)
            mean_log_prob_pos = (mask * log_prob).sum(1) / mask_pos_pairs

            # loss
            loss = - (self.temperature / self.base_temperature) * mean_log_prob_pos
            loss = loss.view(anchor_count, batch_size).mean()

            return loss

    class SupConNet(nn.Module):
        """backbone + projection head"""
        def __init__(self, head='mlp', feat_dim=8):
            super(SupConNet, self).__init__()
            self.encoder = cifar_encoder(nn, 12)
            dim_in = 12
            if head == 'linear':
                self.head = nn.Linear(dim_in, feat_dim)
            elif head == 'mlp':
                self.head = nn.Sequential(
                    nn.Linear(dim_in, dim_in),
                    nn.ReLU(inplace=True),
                    nn.Linear(dim_in, feat_dim)
                )

        def forward(self, x):
            feat = self.encoder(x)
            feat = F.normalize(self.head(feat), dim=1)
            return feat

    class TwoCropTransform:
        """Create two crops of the same image"""
        def __init__(self, transform):
            self.transform = transform

        def __call__(self, x):
            return [self.transform(x), self.transform(x)]

    torch.manual_seed(0)
    model = SupConNet()
    init = load(m, model, state)
    criterion = SupConLoss(temperature=0.1, contrast_mode=contrast_mode)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    # a deterministic "augmentation" so that both libraries see the same two views: the first call
    # flips, the second shifts by a pixel
    calls = []

    def augment(x):
        calls.append(x)
        return x.flip(3) if len(calls) % 2 else x.roll(1, 2)
    two_crop = TwoCropTransform(augment)
    losses = []
    for idx, (x, y) in enumerate(batches(5, 2, (6, 3, 8, 8), classes=3)):
        images = two_crop(torch.tensor(x))
        labels = torch.tensor(y)
        images = torch.cat([images[0], images[1]], dim=0)
        bsz = labels.shape[0]
        features = model(images)
        f1, f2 = torch.split(features, [bsz, bsz], dim=0)
        features = torch.cat([f1.unsqueeze(1), f2.unsqueeze(1)], dim=1)
        if method == 'SupCon':
            loss = criterion(features, labels)
        elif method == 'SimCLR':
            loss = criterion(features)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_supcon():
    compare(supcon)


def test_simclr_one_anchor():
    compare(supcon, method="SimCLR", contrast_mode="one")


def two_views(torch, x):
    """The two augmentations of a batch, deterministic so that tnet and torch see the same views."""
    return x.flip(3), x.roll(1, 2)


# (b) SimSiam (facebookresearch/simsiam): the projector ends in BatchNorm1d(affine=False) after a
# Linear whose bias is switched off through requires_grad = False, the predictor a bottleneck MLP,
# the loss the negative cosine similarity against z.detach(); SGD over the encoder and predictor
# groups with fix_lr on the predictor's
def simsiam(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim

    class SimSiam(nn.Module):
        """Build a SimSiam model."""
        def __init__(self, base_encoder, dim=16, pred_dim=4):
            super(SimSiam, self).__init__()
            # create the encoder; num_classes is the output fc dimension, zero-initialize last BNs
            self.encoder = base_encoder(num_classes=dim)

            # build a 3-layer projector
            prev_dim = self.encoder.fc.weight.shape[1]
            self.encoder.fc = nn.Sequential(nn.Linear(prev_dim, prev_dim, bias=False),
                                            nn.BatchNorm1d(prev_dim),
                                            nn.ReLU(inplace=True),  # first layer
                                            nn.Linear(prev_dim, prev_dim, bias=False),
                                            nn.BatchNorm1d(prev_dim),
                                            nn.ReLU(inplace=True),  # second layer
                                            self.encoder.fc,
                                            nn.BatchNorm1d(dim, affine=False))  # output layer
            self.encoder.fc[6].bias.requires_grad = False  # hack: not use bias as it is followed by BN

            # build a 2-layer predictor
            self.predictor = nn.Sequential(nn.Linear(dim, pred_dim, bias=False),
                                           nn.BatchNorm1d(pred_dim),
                                           nn.ReLU(inplace=True),  # hidden layer
                                           nn.Linear(pred_dim, dim))  # output layer

        def forward(self, x1, x2):
            # compute features for one view
            z1 = self.encoder(x1)  # NxC
            z2 = self.encoder(x2)  # NxC

            p1 = self.predictor(z1)  # NxC
            p2 = self.predictor(z2)  # NxC

            return p1, p2, z1.detach(), z2.detach()

    class TinyResNet(nn.Module):
        """Stands in for torchvision's resnet: a stem, a pool and an `fc`."""
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(6)
            self.relu = nn.ReLU(inplace=True)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(6, num_classes)

        def forward(self, x):
            x = self.avgpool(self.relu(self.bn1(self.conv1(x))))
            return self.fc(torch.flatten(x, 1))

    torch.manual_seed(0)
    model = SimSiam(TinyResNet)
    init = load(m, model, state)
    criterion = nn.CosineSimilarity(dim=1)
    init_lr = 0.05 * 4 / 256 * 64
    optim_params = [{'params': model.encoder.parameters(), 'fix_lr': False},
                    {'params': model.predictor.parameters(), 'fix_lr': True}]
    optimizer = optim.SGD(optim_params, init_lr, momentum=0.9, weight_decay=1e-4)

    def adjust_learning_rate(optimizer, init_lr, epoch, epochs):
        """Decay the learning rate based on schedule"""
        cur_lr = init_lr * 0.5 * (1. + np.cos(np.pi * epoch / epochs))
        for param_group in optimizer.param_groups:
            if 'fix_lr' in param_group and param_group['fix_lr']:
                param_group['lr'] = init_lr
            else:
                param_group['lr'] = cur_lr

    losses = []
    for epoch, (x, _) in enumerate(batches(7, 2, (6, 3, 8, 8))):
        adjust_learning_rate(optimizer, init_lr, epoch, 2)
        images = two_views(torch, torch.tensor(x))
        p1, p2, z1, z2 = model(x1=images[0], x2=images[1])
        loss = -(criterion(p1, z2).mean() + criterion(p2, z1).mean()) * 0.5
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    running = [float(b.sum().item()) for name, b in model.named_buffers() if "running" in name]
    return init, losses + summary(model.parameters()) + running


def test_simsiam():
    compare(simsiam)


# (c) BYOL as CIFAR repositories write it: online network = encoder + projector + predictor, a target
# network deep-copied with requires_grad = False and updated by EMA over zip(online, target) through
# .data, the normalised-MSE loss 2 - 2 * cos symmetrised over the two views
def byol(m, state=None):
    import copy
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    def MLP(dim, projection_size, hidden_size=12):
        return nn.Sequential(
            nn.Linear(dim, hidden_size),
            nn.BatchNorm1d(hidden_size),
            nn.ReLU(inplace=True),
            nn.Linear(hidden_size, projection_size)
        )

    def loss_fn(x, y):
        x = F.normalize(x, dim=-1, p=2)
        y = F.normalize(y, dim=-1, p=2)
        return 2 - 2 * (x * y).sum(dim=-1)

    class EMA():
        def __init__(self, beta):
            super().__init__()
            self.beta = beta

        def update_average(self, old, new):
            if old is None:
                return new
            return old * self.beta + (1 - self.beta) * new

    def update_moving_average(ema_updater, ma_model, current_model):
        for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
            old_weight, up_weight = ma_params.data, current_params.data
            ma_params.data = ema_updater.update_average(old_weight, up_weight)

    class BYOL(nn.Module):
        def __init__(self, projection_size=8, moving_average_decay=0.9):
            super().__init__()
            self.online_encoder = nn.Sequential(cifar_encoder(nn, 10), MLP(10, projection_size))
            self.target_encoder = None
            self.target_ema_updater = EMA(moving_average_decay)
            self.online_predictor = MLP(projection_size, projection_size)

        def _get_target_encoder(self):
            target_encoder = copy.deepcopy(self.online_encoder)
            for p in target_encoder.parameters():
                p.requires_grad = False
            return target_encoder

        def update_moving_average(self):
            assert self.target_encoder is not None, 'target encoder has not been created yet'
            update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

        def forward(self, image_one, image_two):
            online_proj_one = self.online_encoder(image_one)
            online_proj_two = self.online_encoder(image_two)
            online_pred_one = self.online_predictor(online_proj_one)
            online_pred_two = self.online_predictor(online_proj_two)
            with torch.no_grad():
                if self.target_encoder is None:
                    self.target_encoder = self._get_target_encoder()
                target_proj_one = self.target_encoder(image_one)
                target_proj_two = self.target_encoder(image_two)
                target_proj_one.detach_()
                target_proj_two.detach_()
            loss_one = loss_fn(online_pred_one, target_proj_two.detach())
            loss_two = loss_fn(online_pred_two, target_proj_one.detach())
            loss = loss_one + loss_two
            return loss.mean()

    torch.manual_seed(0)
    learner = BYOL()
    init = load(m, learner, state)
    # SGD, not the Adam that some CIFAR repositories use: under Adam torch's own float32 run ends 2% off
    # its float64 run (the Linear biases before BatchNorm1d have zero gradients up to rounding, which
    # Adam scales up to lr-sized steps), under SGD 2e-5
    opt = optim.SGD(learner.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, _ in batches(8, 2, (6, 3, 8, 8)):
        images = two_views(torch, torch.tensor(x))
        loss = learner(*images)
        opt.zero_grad()
        loss.backward()
        opt.step()
        learner.update_moving_average()  # update moving average of target encoder
        losses.append(loss.item())
    target = list(learner.target_encoder.parameters())
    assert not any(p.requires_grad for p in target)
    return init, losses + summary(target)


def test_byol():
    compare(byol)


# (d) MoCo v2 (facebookresearch/moco's builder, without torch.distributed): a key encoder copied
# from the query encoder and updated by momentum, the queue a registered buffer normalised along
# dim=0, _dequeue_and_enqueue through a slice assignment of keys.T at queue_ptr (a long buffer), the
# logits by einsum, zero labels; shuffle BN on one device by torch.randperm and argsort, which the
# BatchNorm over the whole batch cannot see (tnet's permutation differs from torch's, its result not)
def moco(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim

    class MoCo(nn.Module):
        """Build a MoCo model with: a query encoder, a key encoder, and a queue
        https://arxiv.org/abs/1911.05722"""
        def __init__(self, base_encoder, dim=8, K=12, m=0.999, T=0.07, mlp=False):
            super(MoCo, self).__init__()

            self.K = K
            self.m = m
            self.T = T

            # create the encoders
            # num_classes is the output fc dimension
            self.encoder_q = base_encoder(num_classes=dim)
            self.encoder_k = base_encoder(num_classes=dim)

            if mlp:  # hack: brute-force replacement
                dim_mlp = self.encoder_q.fc.weight.shape[1]
                self.encoder_q.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_q.fc)
                self.encoder_k.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_k.fc)

            for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                param_k.data.copy_(param_q.data)  # initialize
                param_k.requires_grad = False  # not update by gradient

            # create the queue
            self.register_buffer("queue", torch.randn(dim, K))
            self.queue = nn.functional.normalize(self.queue, dim=0)

            self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

        @torch.no_grad()
        def _momentum_update_key_encoder(self):
            """Momentum update of the key encoder"""
            for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                param_k.data = param_k.data * self.m + param_q.data * (1. - self.m)

        @torch.no_grad()
        def _dequeue_and_enqueue(self, keys):
            batch_size = keys.shape[0]

            ptr = int(self.queue_ptr)
            assert self.K % batch_size == 0  # for simplicity

            # replace the keys at ptr (dequeue and enqueue)
            self.queue[:, ptr:ptr + batch_size] = keys.T
            ptr = (ptr + batch_size) % self.K  # move pointer

            self.queue_ptr[0] = ptr

        @torch.no_grad()
        def _batch_shuffle_single_gpu(self, x):
            """Batch shuffle, for making use of BatchNorm."""
            # random shuffle index
            idx_shuffle = torch.randperm(x.shape[0]).to(x.device)

            # index for restoring
            idx_unshuffle = torch.argsort(idx_shuffle)

            return x[idx_shuffle], idx_unshuffle

        @torch.no_grad()
        def _batch_unshuffle_single_gpu(self, x, idx_unshuffle):
            """Undo batch shuffle."""
            return x[idx_unshuffle]

        def forward(self, im_q, im_k):
            # compute query features
            q = self.encoder_q(im_q)  # queries: NxC
            q = nn.functional.normalize(q, dim=1)

            # compute key features
            with torch.no_grad():  # no gradient to keys
                self._momentum_update_key_encoder()  # update the key encoder

                # shuffle for making use of BN
                im_k, idx_unshuffle = self._batch_shuffle_single_gpu(im_k)

                k = self.encoder_k(im_k)  # keys: NxC
                k = nn.functional.normalize(k, dim=1)

                # undo shuffle
                k = self._batch_unshuffle_single_gpu(k, idx_unshuffle)

            # compute logits
            # Einstein sum is more intuitive
            # positive logits: Nx1
            l_pos = torch.einsum('nc,nc->n', [q, k]).unsqueeze(-1)
            # negative logits: NxK
            l_neg = torch.einsum('nc,ck->nk', [q, self.queue.clone().detach()])

            # logits: Nx(1+K)
            logits = torch.cat([l_pos, l_neg], dim=1)

            # apply temperature
            logits /= self.T

            # labels: positive key indicators
            labels = torch.zeros(logits.shape[0], dtype=torch.long).to(logits.device)

            # dequeue and enqueue
            self._dequeue_and_enqueue(k)

            return logits, labels

    class TinyResNet(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.body = cifar_encoder(nn, 10)
            self.fc = nn.Linear(10, num_classes)

        def forward(self, x):
            return self.fc(self.body(x))

    def accuracy(output, target, topk=(1,)):
        with torch.no_grad():
            maxk = max(topk)
            batch_size = target.size(0)
            _, pred = output.topk(maxk, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))
            res = []
            for k in topk:
                correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
                res.append(correct_k.mul_(100.0 / batch_size))
            return res

    torch.manual_seed(0)
    model = MoCo(TinyResNet, m=0.9, mlp=True)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), 0.03, momentum=0.9, weight_decay=1e-4)
    losses = []
    for x, _ in batches(9, 3, (4, 3, 8, 8)):
        images = two_views(torch, torch.tensor(x))
        output, target = model(im_q=images[0], im_k=images[1])
        loss = criterion(output, target)
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), acc1[0].item(), acc5[0].item()]
    assert int(model.queue_ptr) == 0 and model.queue_ptr.dtype == torch.long
    return init, losses + summary(model.parameters()) + [float(model.queue.abs().sum())]


def test_moco_v2():
    compare(moco)


# (e) Barlow Twins (facebookresearch/barlowtwins): off_diagonal by flatten/view/slice, the
# cross-correlation of the BatchNorm1d(affine=False)-normalised embeddings, the on-diagonal term by
# torch.diagonal(c).add_(-1).pow_(2); VICReg (facebookresearch/vicreg): F.mse_loss invariance, the
# std term by torch.sqrt(x.var(dim=0) + 0.0001) and F.relu, the covariance's off-diagonal squares
def off_diagonal(x):
    # return a flattened view of the off-diagonal elements of a square matrix
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def barlow_twins(m, state=None, method="barlow", lars=False):
    import math
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    def Projector(embedding, mlp="16-16-12"):
        mlp_spec = f"{embedding}-{mlp}"
        layers = []
        f = list(map(int, mlp_spec.split("-")))
        for i in range(len(f) - 2):
            layers.append(nn.Linear(f[i], f[i + 1]))
            layers.append(nn.BatchNorm1d(f[i + 1]))
            layers.append(nn.ReLU(True))
        layers.append(nn.Linear(f[-2], f[-1], bias=False))
        return nn.Sequential(*layers)

    class BarlowTwins(nn.Module):
        def __init__(self, batch_size, lambd=0.0051):
            super().__init__()
            self.batch_size = batch_size
            self.lambd = lambd
            self.backbone = cifar_encoder(nn, 10)
            self.projector = Projector(10)
            # normalization layer for the representations z1 and z2
            self.bn = nn.BatchNorm1d(12, affine=False)

        def forward(self, y1, y2):
            z1 = self.projector(self.backbone(y1))
            z2 = self.projector(self.backbone(y2))

            # empirical cross-correlation matrix
            c = self.bn(z1).T @ self.bn(z2)

            # sum the cross-correlation matrix between all gpus
            c.div_(self.batch_size)

            on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
            off_diag = off_diagonal(c).pow_(2).sum()
            loss = on_diag + self.lambd * off_diag
            return loss

    class VICReg(nn.Module):
        def __init__(self, batch_size, sim_coeff=25.0, std_coeff=25.0, cov_coeff=1.0):
            super().__init__()
            self.batch_size = batch_size
            self.num_features = 12
            self.sim_coeff, self.std_coeff, self.cov_coeff = sim_coeff, std_coeff, cov_coeff
            self.backbone = cifar_encoder(nn, 10)
            self.projector = Projector(10)

        def forward(self, x, y):
            x = self.projector(self.backbone(x))
            y = self.projector(self.backbone(y))

            repr_loss = F.mse_loss(x, y)

            x = x - x.mean(dim=0)
            y = y - y.mean(dim=0)

            std_x = torch.sqrt(x.var(dim=0) + 0.0001)
            std_y = torch.sqrt(y.var(dim=0) + 0.0001)
            std_loss = torch.mean(F.relu(1 - std_x)) / 2 + torch.mean(F.relu(1 - std_y)) / 2

            cov_x = (x.T @ x) / (self.batch_size - 1)
            cov_y = (y.T @ y) / (self.batch_size - 1)
            cov_loss = off_diagonal(cov_x).pow_(2).sum().div(
                self.num_features
            ) + off_diagonal(cov_y).pow_(2).sum().div(self.num_features)

            loss = (
                self.sim_coeff * repr_loss
                + self.std_coeff * std_loss
                + self.cov_coeff * cov_loss
            )
            return loss

    class LARS(optim.Optimizer):
        def __init__(self, params, lr, weight_decay=0, momentum=0.9, eta=0.001,
                     weight_decay_filter=False, lars_adaptation_filter=False):
            defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                            eta=eta, weight_decay_filter=weight_decay_filter,
                            lars_adaptation_filter=lars_adaptation_filter)
            super().__init__(params, defaults)

        def exclude_bias_and_norm(self, p):
            return p.ndim == 1

        @torch.no_grad()
        def step(self):
            for g in self.param_groups:
                for p in g['params']:
                    dp = p.grad

                    if dp is None:
                        continue

                    if not g['weight_decay_filter'] or not self.exclude_bias_and_norm(p):
                        dp = dp.add(p, alpha=g['weight_decay'])

                    if not g['lars_adaptation_filter'] or not self.exclude_bias_and_norm(p):
                        param_norm = torch.norm(p)
                        update_norm = torch.norm(dp)
                        one = torch.ones_like(param_norm)
                        q = torch.where(param_norm > 0.,
                                        torch.where(update_norm > 0,
                                                    (g['eta'] * param_norm / update_norm), one), one)
                        dp = dp.mul(q)

                    param_state = self.state[p]
                    if 'mu' not in param_state:
                        param_state['mu'] = torch.zeros_like(p)
                    mu = param_state['mu']
                    mu.mul_(g['momentum']).add_(dp)

                    p.add_(mu, alpha=-g['lr'])

    def adjust_learning_rate(optimizer, loader, step, epochs=3, batch_size=2048,
                             learning_rate_weights=0.2, learning_rate_biases=0.0048):
        max_steps = epochs * len(loader)
        warmup_steps = 1 * len(loader)  # the repository's 10 epochs
        base_lr = batch_size / 256
        if step < warmup_steps:
            lr = base_lr * step / warmup_steps
        else:
            step -= warmup_steps
            max_steps -= warmup_steps
            q = 0.5 * (1 + math.cos(math.pi * step / max_steps))
            end_lr = base_lr * 0.001
            lr = base_lr * q + end_lr * (1 - q)
        optimizer.param_groups[0]['lr'] = lr * learning_rate_weights
        optimizer.param_groups[1]['lr'] = lr * learning_rate_biases

    torch.manual_seed(0)
    batch_size = 6
    model = (BarlowTwins if method == "barlow" else VICReg)(batch_size)
    init = load(m, model, state)
    loader = [two_views(torch, torch.tensor(x)) for x, _ in batches(11, 2, (batch_size, 3, 8, 8))]
    if not lars:
        optimizer = optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    else:
        param_weights = []
        param_biases = []
        for param in model.parameters():
            if param.ndim == 1:
                param_biases.append(param)
            else:
                param_weights.append(param)
        parameters = [{'params': param_weights}, {'params': param_biases}]
        optimizer = LARS(parameters, lr=0, weight_decay=1e-6,
                         weight_decay_filter=True,
                         lars_adaptation_filter=True)
    losses = []
    for step, (y1, y2) in enumerate(loader, start=1):
        if lars:
            adjust_learning_rate(optimizer, loader, step)
        optimizer.zero_grad()
        loss = model.forward(y1, y2)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    if lars:  # each weight's momentum buffer against the weight: the trust ratio's scale, about eta (not
        # the biases': those before a BatchNorm have zero gradients up to rounding, noise in either library)
        losses += [float(optimizer.state[p]['mu'].norm() / p.norm()) for p in model.parameters() if p.ndim > 1]
    return init, losses + summary(model.parameters())


def test_barlow_twins():
    compare(barlow_twins)


def test_vicreg():
    compare(barlow_twins, method="vicreg")


def test_barlow_twins_lars():
    """main.py's LARS (weight decay and trust ratio filtered off the 1-D parameters, two param groups)
    and its warmup-then-cosine schedule; without its torch.cuda.amp autocast and GradScaler, which
    PyTorch on a CPU turns off and tnet would run."""
    compare(barlow_twins, lars=True)


# (f) RepDistiller (HobbitLong): train_student's criterion list (cross-entropy, DistillKL, and one
# feature-distillation loss: FitNet's hint through a ConvReg 1x1 regressor, attention transfer, RKD's
# distance and angle, PKT, similarity-preserving, NST, VID, correlation congruence, CRD's contrast
# memory), a frozen eval-mode teacher whose features are detached, models that return ([features],
# logits) when is_feat=True
def repdistiller_losses(torch, nn, F):
    import math

    class DistillKL(nn.Module):
        """Distilling the Knowledge in a Neural Network"""
        def __init__(self, T):
            super(DistillKL, self).__init__()
            self.T = T

        def forward(self, y_s, y_t):
            p_s = F.log_softmax(y_s/self.T, dim=1)
            p_t = F.softmax(y_t/self.T, dim=1)
            loss = F.kl_div(p_s, p_t, size_average=False) * (self.T**2) / y_s.shape[0]
            return loss

    class HintLoss(nn.Module):
        """Fitnets: hints for thin deep nets, ICLR 2015"""
        def __init__(self):
            super(HintLoss, self).__init__()
            self.crit = nn.MSELoss()

        def forward(self, f_s, f_t):
            loss = self.crit(f_s, f_t)
            return loss

    class ConvReg(nn.Module):
        """Convolutional regression for FitNet"""
        def __init__(self, s_shape, t_shape, use_relu=True):
            super(ConvReg, self).__init__()
            self.use_relu = use_relu
            s_N, s_C, s_H, s_W = s_shape
            t_N, t_C, t_H, t_W = t_shape
            if s_H == 2 * t_H:
                self.conv = nn.Conv2d(s_C, t_C, kernel_size=3, stride=2, padding=1)
            elif s_H * 2 == t_H:
                self.conv = nn.ConvTranspose2d(s_C, t_C, kernel_size=4, stride=2, padding=1)
            elif s_H >= t_H:
                self.conv = nn.Conv2d(s_C, t_C, kernel_size=(1+s_H-t_H, 1+s_W-t_W))
            else:
                # the repository's `raise NotImplemented(...)`, a TypeError when reached
                raise NotImplementedError('student size {}, teacher size {}'.format(s_H, t_H))
            self.bn = nn.BatchNorm2d(t_C)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.conv(x)
            if self.use_relu:
                return self.relu(self.bn(x))
            else:
                return self.bn(x)

    class Attention(nn.Module):
        """Paying More Attention to Attention: Improving the Performance of Convolutional Neural Networks
        via Attention Transfer"""
        def __init__(self, p=2):
            super(Attention, self).__init__()
            self.p = p

        def forward(self, g_s, g_t):
            return [self.at_loss(f_s, f_t) for f_s, f_t in zip(g_s, g_t)]

        def at_loss(self, f_s, f_t):
            s_H, t_H = f_s.shape[2], f_t.shape[2]
            if s_H > t_H:
                f_s = F.adaptive_avg_pool2d(f_s, (t_H, t_H))
            elif s_H < t_H:
                f_t = F.adaptive_avg_pool2d(f_t, (s_H, s_H))
            else:
                pass
            return (self.at(f_s) - self.at(f_t)).pow(2).mean()

        def at(self, f):
            return F.normalize(f.pow(self.p).mean(1).view(f.size(0), -1))

    class RKDLoss(nn.Module):
        """Relational Knowledge Disitllation, CVPR2019"""
        def __init__(self, w_d=25, w_a=50):
            super(RKDLoss, self).__init__()
            self.w_d = w_d
            self.w_a = w_a

        def forward(self, f_s, f_t):
            student = f_s.view(f_s.shape[0], -1)
            teacher = f_t.view(f_t.shape[0], -1)

            # RKD distance loss
            with torch.no_grad():
                t_d = self.pdist(teacher, squared=False)
                mean_td = t_d[t_d > 0].mean()
                t_d = t_d / mean_td

            d = self.pdist(student, squared=False)
            mean_d = d[d > 0].mean()
            d = d / mean_d

            loss_d = F.smooth_l1_loss(d, t_d)

            # RKD Angle loss
            with torch.no_grad():
                td = (teacher.unsqueeze(0) - teacher.unsqueeze(1))
                norm_td = F.normalize(td, p=2, dim=2)
                t_angle = torch.bmm(norm_td, norm_td.transpose(1, 2)).view(-1)

            sd = (student.unsqueeze(0) - student.unsqueeze(1))
            norm_sd = F.normalize(sd, p=2, dim=2)
            s_angle = torch.bmm(norm_sd, norm_sd.transpose(1, 2)).view(-1)

            loss_a = F.smooth_l1_loss(s_angle, t_angle)

            loss = self.w_d * loss_d + self.w_a * loss_a

            return loss

        @staticmethod
        def pdist(e, squared=False, eps=1e-12):
            e_square = e.pow(2).sum(dim=1)
            prod = e @ e.t()
            res = (e_square.unsqueeze(1) + e_square.unsqueeze(0) - 2 * prod).clamp(min=eps)

            if not squared:
                res = res.sqrt()

            res = res.clone()
            res[range(len(e)), range(len(e))] = 0
            return res

    class PKT(nn.Module):
        """Probabilistic Knowledge Transfer for deep representation learning"""
        def __init__(self):
            super(PKT, self).__init__()

        def forward(self, f_s, f_t):
            return self.cosine_similarity_loss(f_s, f_t)

        @staticmethod
        def cosine_similarity_loss(output_net, target_net, eps=0.0000001):
            # Normalize each vector by its norm
            output_net_norm = torch.sqrt(torch.sum(output_net ** 2, dim=1, keepdim=True))
            output_net = output_net / (output_net_norm + eps)
            output_net[output_net != output_net] = 0

            target_net_norm = torch.sqrt(torch.sum(target_net ** 2, dim=1, keepdim=True))
            target_net = target_net / (target_net_norm + eps)
            target_net[target_net != target_net] = 0

            # Calculate the cosine similarity
            model_similarity = torch.mm(output_net, output_net.transpose(0, 1))
            target_similarity = torch.mm(target_net, target_net.transpose(0, 1))

            # Scale cosine similarity to 0..1
            model_similarity = (model_similarity + 1.0) / 2.0
            target_similarity = (target_similarity + 1.0) / 2.0

            # Transform them into probabilities
            model_similarity = model_similarity / torch.sum(model_similarity, dim=1, keepdim=True)
            target_similarity = target_similarity / torch.sum(target_similarity, dim=1, keepdim=True)

            # Calculate the KL-divergence
            loss = torch.mean(target_similarity * torch.log((target_similarity + eps) / (model_similarity + eps)))

            return loss

    class Similarity(nn.Module):
        """Similarity-Preserving Knowledge Distillation, ICCV2019"""
        def __init__(self):
            super(Similarity, self).__init__()

        def forward(self, g_s, g_t):
            return [self.similarity_loss(f_s, f_t) for f_s, f_t in zip(g_s, g_t)]

        def similarity_loss(self, f_s, f_t):
            bsz = f_s.shape[0]
            f_s = f_s.view(bsz, -1)
            f_t = f_t.view(bsz, -1)

            G_s = torch.mm(f_s, torch.t(f_s))
            # G_s = G_s / G_s.norm(2)
            G_s = torch.nn.functional.normalize(G_s)
            G_t = torch.mm(f_t, torch.t(f_t))
            # G_t = G_t / G_t.norm(2)
            G_t = torch.nn.functional.normalize(G_t)

            G_diff = G_t - G_s
            loss = (G_diff * G_diff).view(-1, 1).sum(0) / (bsz * bsz)
            return loss

    class AliasMethod(object):
        """From: https://hips.seas.harvard.edu/blog/2013/03/03/the-alias-method-efficient-sampling-with-many-discrete-outcomes/"""
        def __init__(self, probs):

            if probs.sum() > 1:
                probs.div_(probs.sum())
            K = len(probs)
            self.prob = torch.zeros(K)
            self.alias = torch.LongTensor([0]*K)

            # Sort the data into the outcomes with probabilities
            # that are larger and smaller than 1/K.
            smaller = []
            larger = []
            for kk, prob in enumerate(probs):
                self.prob[kk] = K*prob
                if self.prob[kk] < 1.0:
                    smaller.append(kk)
                else:
                    larger.append(kk)

            # Loop though and create little binary mixtures that
            # appropriately allocate the larger outcomes over the
            # overall uniform mixture.
            while len(smaller) > 0 and len(larger) > 0:
                small = smaller.pop()
                large = larger.pop()

                self.alias[small] = large
                self.prob[large] = (self.prob[large] - 1.0) + self.prob[small]

                if self.prob[large] < 1.0:
                    smaller.append(large)
                else:
                    larger.append(large)

            for last_one in smaller+larger:
                self.prob[last_one] = 1

        def cuda(self):
            self.prob = self.prob.cuda()
            self.alias = self.alias.cuda()

        def draw(self, N):
            """Draw N samples from multinomial"""
            K = self.alias.size(0)

            kk = torch.zeros(N, dtype=torch.long, device=self.prob.device).random_(0, K)
            prob = self.prob.index_select(0, kk)
            alias = self.alias.index_select(0, kk)
            # b is whether a random number is greater than q
            b = torch.bernoulli(prob)
            oq = kk.mul(b.long())
            oj = alias.mul((1-b).long())

            return oq + oj

    class ContrastMemory(nn.Module):
        """memory buffer that supplies large amount of negative samples."""
        def __init__(self, inputSize, outputSize, K, T=0.07, momentum=0.5):
            super(ContrastMemory, self).__init__()
            self.nLem = outputSize
            self.unigrams = torch.ones(self.nLem)
            self.multinomial = AliasMethod(self.unigrams)
            if torch.cuda.is_available():  # the repository calls .cuda() unconditionally
                self.multinomial.cuda()
            self.K = K

            self.register_buffer('params', torch.tensor([K, T, -1, -1, momentum]))
            stdv = 1. / math.sqrt(inputSize / 3)
            self.register_buffer('memory_v1', torch.rand(outputSize, inputSize).mul_(2 * stdv).add_(-stdv))
            self.register_buffer('memory_v2', torch.rand(outputSize, inputSize).mul_(2 * stdv).add_(-stdv))

        def forward(self, v1, v2, y, idx=None):
            K = int(self.params[0].item())
            T = self.params[1].item()
            Z_v1 = self.params[2].item()
            Z_v2 = self.params[3].item()

            momentum = self.params[4].item()
            batchSize = v1.size(0)
            outputSize = self.memory_v1.size(0)
            inputSize = self.memory_v1.size(1)

            # original score computation
            if idx is None:
                idx = self.multinomial.draw(batchSize * (self.K + 1)).view(batchSize, -1)
                idx.select(1, 0).copy_(y.data)
            # sample
            weight_v1 = torch.index_select(self.memory_v1, 0, idx.view(-1)).detach()
            weight_v1 = weight_v1.view(batchSize, K + 1, inputSize)
            out_v2 = torch.bmm(weight_v1, v2.view(batchSize, inputSize, 1))
            out_v2 = torch.exp(torch.div(out_v2, T))
            # sample
            weight_v2 = torch.index_select(self.memory_v2, 0, idx.view(-1)).detach()
            weight_v2 = weight_v2.view(batchSize, K + 1, inputSize)
            out_v1 = torch.bmm(weight_v2, v1.view(batchSize, inputSize, 1))
            out_v1 = torch.exp(torch.div(out_v1, T))

            # set Z if haven't been set yet
            if Z_v1 < 0:
                self.params[2] = out_v1.mean() * outputSize
                Z_v1 = self.params[2].clone().detach().item()
                print("normalization constant Z_v1 is set to {:.1f}".format(Z_v1))
            if Z_v2 < 0:
                self.params[3] = out_v2.mean() * outputSize
                Z_v2 = self.params[3].clone().detach().item()
                print("normalization constant Z_v2 is set to {:.1f}".format(Z_v2))

            # compute out_v1, out_v2
            out_v1 = torch.div(out_v1, Z_v1).contiguous()
            out_v2 = torch.div(out_v2, Z_v2).contiguous()

            # update memory
            with torch.no_grad():
                l_pos = torch.index_select(self.memory_v1, 0, y.view(-1))
                l_pos.mul_(momentum)
                l_pos.add_(torch.mul(v1, 1 - momentum))
                l_norm = l_pos.pow(2).sum(1, keepdim=True).pow(0.5)
                updated_v1 = l_pos.div(l_norm)
                self.memory_v1.index_copy_(0, y, updated_v1)

                ab_pos = torch.index_select(self.memory_v2, 0, y.view(-1))
                ab_pos.mul_(momentum)
                ab_pos.add_(torch.mul(v2, 1 - momentum))
                ab_norm = ab_pos.pow(2).sum(1, keepdim=True).pow(0.5)
                updated_v2 = ab_pos.div(ab_norm)
                self.memory_v2.index_copy_(0, y, updated_v2)

            return out_v1, out_v2

    class VIDLoss(nn.Module):
        """Variational Information Distillation for Knowledge Transfer (CVPR 2019),
        code from author: https://github.com/ssahn0215/variational-information-distillation"""
        def __init__(self,
                     num_input_channels,
                     num_mid_channel,
                     num_target_channels,
                     init_pred_var=5.0,
                     eps=1e-5):
            super(VIDLoss, self).__init__()

            def conv1x1(in_channels, out_channels, stride=1):
                return nn.Conv2d(
                    in_channels, out_channels,
                    kernel_size=1, padding=0,
                    bias=False, stride=stride)

            self.regressor = nn.Sequential(
                conv1x1(num_input_channels, num_mid_channel),
                nn.ReLU(),
                conv1x1(num_mid_channel, num_mid_channel),
                nn.ReLU(),
                conv1x1(num_mid_channel, num_target_channels),
            )
            self.log_scale = torch.nn.Parameter(
                np.log(np.exp(init_pred_var-eps)-1.0) * torch.ones(num_target_channels)
                )
            self.eps = eps

        def forward(self, input, target):
            # pool for dimentsion match
            s_H, t_H = input.shape[2], target.shape[2]
            if s_H > t_H:
                input = F.adaptive_avg_pool2d(input, (t_H, t_H))
            elif s_H < t_H:
                target = F.adaptive_avg_pool2d(target, (s_H, s_H))
            else:
                pass
            pred_mean = self.regressor(input)
            pred_var = torch.log(1.0+torch.exp(self.log_scale))+self.eps
            pred_var = pred_var.view(1, -1, 1, 1)
            neg_log_prob = 0.5*(
                (pred_mean-target)**2/pred_var+torch.log(pred_var)
                )
            loss = torch.mean(neg_log_prob)
            return loss

    class NSTLoss(nn.Module):
        """like what you like: knowledge distill via neuron selectivity transfer"""
        def __init__(self):
            super(NSTLoss, self).__init__()
            pass

        def forward(self, g_s, g_t):
            return [self.nst_loss(f_s, f_t) for f_s, f_t in zip(g_s, g_t)]

        def nst_loss(self, f_s, f_t):
            s_H, t_H = f_s.shape[2], f_t.shape[2]
            if s_H > t_H:
                f_s = F.adaptive_avg_pool2d(f_s, (t_H, t_H))
            elif s_H < t_H:
                f_t = F.adaptive_avg_pool2d(f_t, (s_H, s_H))
            else:
                pass

            f_s = f_s.view(f_s.shape[0], f_s.shape[1], -1)
            f_s = F.normalize(f_s, dim=2)
            f_t = f_t.view(f_t.shape[0], f_t.shape[1], -1)
            f_t = F.normalize(f_t, dim=2)

            # set full_loss as False to avoid unnecessary computation
            full_loss = True
            if full_loss:
                return (self.poly_kernel(f_t, f_t).mean().detach() + self.poly_kernel(f_s, f_s).mean()
                        - 2 * self.poly_kernel(f_s, f_t).mean())
            else:
                return self.poly_kernel(f_s, f_s).mean() - 2 * self.poly_kernel(f_s, f_t).mean()

        def poly_kernel(self, a, b):
            a = a.unsqueeze(1)
            b = b.unsqueeze(2)
            res = (a * b).sum(-1).pow(2)
            return res

    class Correlation(nn.Module):
        """Correlation Congruence for Knowledge Distillation, ICCV 2019."""
        def __init__(self):
            super(Correlation, self).__init__()

        def forward(self, f_s, f_t):
            delta = torch.abs(f_s - f_t)
            loss = torch.mean((delta[:-1] * delta[1:]).sum(1))
            return loss

    class LinearEmbed(nn.Module):
        """Linear Embedding"""
        def __init__(self, dim_in=1024, dim_out=128):
            super(LinearEmbed, self).__init__()
            self.linear = nn.Linear(dim_in, dim_out)

        def forward(self, x):
            x = x.view(x.shape[0], -1)
            x = self.linear(x)
            return x

    eps = 1e-7

    class ContrastLoss(nn.Module):
        """contrastive loss, corresponding to Eq (18)"""
        def __init__(self, n_data):
            super(ContrastLoss, self).__init__()
            self.n_data = n_data

        def forward(self, x):
            bsz = x.shape[0]
            m = x.size(1) - 1

            # noise distribution
            Pn = 1 / float(self.n_data)

            # loss for positive pair
            P_pos = x.select(1, 0)
            log_D1 = torch.div(P_pos, P_pos.add(m * Pn + eps)).log_()

            # loss for K negative pair
            P_neg = x.narrow(1, 1, m)
            log_D0 = torch.div(P_neg.clone().fill_(m * Pn), P_neg.add(m * Pn + eps)).log_()

            loss = - (log_D1.sum(0) + log_D0.view(-1, 1).sum(0)) / bsz

            return loss

    class Normalize(nn.Module):
        """normalization layer"""
        def __init__(self, power=2):
            super(Normalize, self).__init__()
            self.power = power

        def forward(self, x):
            norm = x.pow(self.power).sum(1, keepdim=True).pow(1. / self.power)
            out = x.div(norm)
            return out

    class Embed(nn.Module):
        """Embedding module"""
        def __init__(self, dim_in=1024, dim_out=128):
            super(Embed, self).__init__()
            self.linear = nn.Linear(dim_in, dim_out)
            self.l2norm = Normalize(2)

        def forward(self, x):
            x = x.view(x.shape[0], -1)
            x = self.linear(x)
            x = self.l2norm(x)
            return x

    class CRDLoss(nn.Module):
        """CRD Loss function"""
        def __init__(self, opt):
            super(CRDLoss, self).__init__()
            self.embed_s = Embed(opt.s_dim, opt.feat_dim)
            self.embed_t = Embed(opt.t_dim, opt.feat_dim)
            self.contrast = ContrastMemory(opt.feat_dim, opt.n_data, opt.nce_k, opt.nce_t, opt.nce_m)
            self.criterion_t = ContrastLoss(opt.n_data)
            self.criterion_s = ContrastLoss(opt.n_data)

        def forward(self, f_s, f_t, idx, contrast_idx=None):
            f_s = self.embed_s(f_s)
            f_t = self.embed_t(f_t)
            out_s, out_t = self.contrast(f_s, f_t, idx, contrast_idx)
            s_loss = self.criterion_s(out_s)
            t_loss = self.criterion_t(out_t)
            loss = s_loss + t_loss
            return loss

    return dict(DistillKL=DistillKL, HintLoss=HintLoss, ConvReg=ConvReg, Attention=Attention, RKDLoss=RKDLoss,
                PKT=PKT, Similarity=Similarity, AliasMethod=AliasMethod, ContrastMemory=ContrastMemory,
                CRDLoss=CRDLoss, VIDLoss=VIDLoss, NSTLoss=NSTLoss, Correlation=Correlation, LinearEmbed=LinearEmbed)


def repdistiller(m, state=None, distill="kd"):
    import types
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    L = types.SimpleNamespace(**repdistiller_losses(torch, nn, F))

    class Net(nn.Module):
        """A two-stage CIFAR net returning [f0, f1, f2] and the logits, as RepDistiller's models do."""
        def __init__(self, w, num_classes=10):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(3, w, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(w)
            self.conv2 = nn.Conv2d(w, 2 * w, 3, stride=2, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(2 * w)
            self.fc = nn.Linear(2 * w, num_classes)

        def forward(self, x, is_feat=False, preact=False):
            f0 = F.relu(self.bn1(self.conv1(x)))
            f1 = F.relu(self.bn2(self.conv2(f0)))
            f2 = F.adaptive_avg_pool2d(f1, 1).view(x.size(0), -1)
            out = self.fc(f2)
            if is_feat:
                return [f0, f1, f2], out
            return out

    class Opt:
        batch_size, n_data, feat_dim, nce_k, nce_t, nce_m = 4, 16, 6, 5, 0.07, 0.5
        hint_layer, gamma, alpha, beta, kd_T = 1, 0.1, 0.9, 1.0, 4
    opt = Opt()

    torch.manual_seed(0)
    model_s, model_t = Net(4), Net(6)
    data = torch.randn(2, 3, 8, 8)
    model_t.eval()
    model_s.eval()
    feat_t, _ = model_t(data, is_feat=True)
    feat_s, _ = model_s(data, is_feat=True)

    module_list = nn.ModuleList([])
    module_list.append(model_s)
    trainable_list = nn.ModuleList([])
    trainable_list.append(model_s)

    criterion_cls = nn.CrossEntropyLoss()
    criterion_div = L.DistillKL(opt.kd_T)
    if distill == 'kd':
        criterion_kd = L.DistillKL(opt.kd_T)
    elif distill == 'hint':
        criterion_kd = L.HintLoss()
        regress_s = L.ConvReg(feat_s[opt.hint_layer].shape, feat_t[opt.hint_layer].shape)
        module_list.append(regress_s)
        trainable_list.append(regress_s)
    elif distill == 'crd':
        opt.s_dim = feat_s[-1].shape[1]
        opt.t_dim = feat_t[-1].shape[1]
        criterion_kd = L.CRDLoss(opt)
        module_list.append(criterion_kd.embed_s)
        module_list.append(criterion_kd.embed_t)
        trainable_list.append(criterion_kd.embed_s)
        trainable_list.append(criterion_kd.embed_t)
    elif distill == 'attention':
        criterion_kd = L.Attention()
    elif distill == 'nst':
        criterion_kd = L.NSTLoss()
    elif distill == 'vid':
        s_n = [f.shape[1] for f in feat_s[1:-1]]
        t_n = [f.shape[1] for f in feat_t[1:-1]]
        criterion_kd = nn.ModuleList(
            [L.VIDLoss(s, t, t) for s, t in zip(s_n, t_n)]
        )
        # add this as some parameters in VIDLoss need to be updated
        trainable_list.append(criterion_kd)
    elif distill == 'correlation':
        criterion_kd = L.Correlation()
        embed_s = L.LinearEmbed(feat_s[-1].shape[1], opt.feat_dim)
        embed_t = L.LinearEmbed(feat_t[-1].shape[1], opt.feat_dim)
        module_list.append(embed_s)
        module_list.append(embed_t)
        trainable_list.append(embed_s)
        trainable_list.append(embed_t)
    elif distill == 'rkd':
        criterion_kd = L.RKDLoss()
    elif distill == 'pkt':
        criterion_kd = L.PKT()
    elif distill == 'similarity':
        criterion_kd = L.Similarity()
    criterion_list = nn.ModuleList([])
    criterion_list.append(criterion_cls)    # classification loss
    criterion_list.append(criterion_div)    # KL divergence loss, original knowledge distillation
    criterion_list.append(criterion_kd)     # other knowledge distillation loss

    # the teacher last, as train_student appends it after the optimizer is built; its weights and the
    # contrast memory's buffers travel in one state_dict
    everything = nn.ModuleDict({"trainable": trainable_list, "criterion": criterion_list, "teacher": model_t})
    init = load(m, everything, state)
    optimizer = optim.SGD(trainable_list.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    module_list.append(model_t)

    # train_student's epoch
    for module in module_list:
        module.train()
    module_list[-1].eval()
    criterion_cls, criterion_div, criterion_kd = criterion_list
    model_s, model_t = module_list[0], module_list[-1]
    losses = []
    rng = np.random.default_rng(12)
    for idx, (x, y) in enumerate(batches(13, 2, (opt.batch_size, 3, 8, 8))):
        input, target = torch.tensor(x), torch.tensor(y)
        # CIFAR100InstanceSample's indices: the samples' own, then nce_k negatives drawn by numpy
        index = torch.tensor(rng.permutation(opt.n_data)[:opt.batch_size])
        contrast_idx = torch.tensor(np.concatenate(
            [index.numpy()[:, None], rng.integers(0, opt.n_data, (opt.batch_size, opt.nce_k))], axis=1))
        preact = False
        feat_s, logit_s = model_s(input, is_feat=True, preact=preact)
        with torch.no_grad():
            feat_t, logit_t = model_t(input, is_feat=True, preact=preact)
            feat_t = [f.detach() for f in feat_t]

        loss_cls = criterion_cls(logit_s, target)
        loss_div = criterion_div(logit_s, logit_t)
        if distill == 'kd':
            loss_kd = 0
        elif distill == 'hint':
            f_s = module_list[1](feat_s[opt.hint_layer])
            f_t = feat_t[opt.hint_layer]
            loss_kd = criterion_kd(f_s, f_t)
        elif distill == 'crd':
            f_s = feat_s[-1]
            f_t = feat_t[-1]
            loss_kd = criterion_kd(f_s, f_t, index, contrast_idx)
        elif distill in ('attention', 'nst'):
            g_s = feat_s[1:-1]
            g_t = feat_t[1:-1]
            loss_group = criterion_kd(g_s, g_t)
            loss_kd = sum(loss_group)
        elif distill == 'vid':
            g_s = feat_s[1:-1]
            g_t = feat_t[1:-1]
            loss_group = [c(f_s, f_t) for f_s, f_t, c in zip(g_s, g_t, criterion_kd)]
            loss_kd = sum(loss_group)
        elif distill == 'correlation':
            f_s = module_list[1](feat_s[-1])
            f_t = module_list[2](feat_t[-1])
            loss_kd = criterion_kd(f_s, f_t)
        elif distill in ('rkd', 'pkt'):
            f_s = feat_s[-1]
            f_t = feat_t[-1]
            loss_kd = criterion_kd(f_s, f_t)
        elif distill == 'similarity':
            g_s = [feat_s[-2]]
            g_t = [feat_t[-2]]
            loss_group = criterion_kd(g_s, g_t)
            loss_kd = sum(loss_group)
        loss = opt.gamma * loss_cls + opt.alpha * loss_div + opt.beta * loss_kd

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    buffers = [float(b.abs().sum().item()) for name, b in everything.named_buffers()
               if "running" in name or "memory" in name or "params" in name]
    return init, losses + summary(trainable_list.parameters()) + buffers


@pytest.mark.parametrize("distill", ["kd", "hint", "attention", "nst", "vid", "correlation", "rkd", "pkt", "similarity",
                                     "crd"])
def test_repdistiller(distill):
    compare(repdistiller, distill=distill)


def test_repdistiller_alias_method():
    """CRD's AliasMethod: its table, built element by element with torch tensors, as torch's; its draws
    (random_ and bernoulli, whose streams differ from torch's) land in range, and a one-hot
    distribution always draws its outcome."""
    import tnet
    import torch
    probs = np.array([0.1, 0.05, 0.3, 0.15, 0.2, 0.2], dtype=np.float32)
    tables = []
    for lib in (tnet, torch):
        L = repdistiller_losses(lib, lib.nn, lib.nn.functional)
        alias = L["AliasMethod"](lib.tensor(probs * 2))  # unnormalised: divided in place by its sum
        tables.append((alias.prob.numpy(), alias.alias.numpy()))
        lib.manual_seed(0)
        draws = alias.draw(40)
        assert draws.dtype == lib.long and draws.shape == (40,)
        assert 0 <= int(draws.min()) and int(draws.max()) < len(probs)
        one_hot = L["AliasMethod"](lib.tensor([0.0, 0.0, 1.0, 0.0]))
        assert (one_hot.draw(20) == 2).all()
    np.testing.assert_allclose(tables[0][0], tables[1][0], rtol=1e-6)
    np.testing.assert_array_equal(tables[0][1], tables[1][1])


# (g) bearpaw/pytorch-classification: cifar.py's loop (state['lr'] from the parsed arguments,
# adjust_learning_rate on a schedule, AverageMeter, accuracy with pred.t() and correct[:k], its Logger
# writing a tab-separated log.txt, save_checkpoint by torch.save and shutil.copyfile, resuming from
# the checkpoint), over its CifarResNeXt (cardinality through groups, init by writing into
# self.state_dict()[key]) and PreResNet with Bottleneck blocks, at reduced widths and depths
def bearpaw_models(torch, nn, F, width=4):
    import math
    init = nn.init  # the repository's `import torch.nn.init as init`

    class ResNeXtBottleneck(nn.Module):
        """RexNeXt bottleneck type C (https://github.com/facebookresearch/ResNeXt/blob/master/models/resnext.lua)"""
        def __init__(self, in_channels, out_channels, stride, cardinality, widen_factor):
            super(ResNeXtBottleneck, self).__init__()
            D = cardinality * out_channels // widen_factor
            self.conv_reduce = nn.Conv2d(in_channels, D, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn_reduce = nn.BatchNorm2d(D)
            self.conv_conv = nn.Conv2d(D, D, kernel_size=3, stride=stride, padding=1, groups=cardinality, bias=False)
            self.bn = nn.BatchNorm2d(D)
            self.conv_expand = nn.Conv2d(D, out_channels, kernel_size=1, stride=1, padding=0, bias=False)
            self.bn_expand = nn.BatchNorm2d(out_channels)

            self.shortcut = nn.Sequential()
            if in_channels != out_channels:
                self.shortcut.add_module('shortcut_conv', nn.Conv2d(in_channels, out_channels, kernel_size=1,
                                                                    stride=stride, padding=0, bias=False))
                self.shortcut.add_module('shortcut_bn', nn.BatchNorm2d(out_channels))

        def forward(self, x):
            bottleneck = self.conv_reduce.forward(x)
            bottleneck = F.relu(self.bn_reduce.forward(bottleneck), inplace=True)
            bottleneck = self.conv_conv.forward(bottleneck)
            bottleneck = F.relu(self.bn.forward(bottleneck), inplace=True)
            bottleneck = self.conv_expand.forward(bottleneck)
            bottleneck = self.bn_expand.forward(bottleneck)
            residual = self.shortcut.forward(x)
            return F.relu(residual + bottleneck, inplace=True)

    class CifarResNeXt(nn.Module):
        """ResNext optimized for the Cifar dataset, as specified in https://arxiv.org/pdf/1611.05431.pdf"""
        def __init__(self, cardinality, depth, num_classes, widen_factor=4, dropRate=0):
            super(CifarResNeXt, self).__init__()
            self.cardinality = cardinality
            self.depth = depth
            self.block_depth = (self.depth - 2) // 9
            self.widen_factor = widen_factor
            self.num_classes = num_classes
            self.output_size = width  # the repository's 64
            self.stages = [width, width * self.widen_factor, 2 * width * self.widen_factor, 4 * width * self.widen_factor]

            self.conv_1_3x3 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
            self.bn_1 = nn.BatchNorm2d(width)
            self.stage_1 = self.block('stage_1', self.stages[0], self.stages[1], 1)
            self.stage_2 = self.block('stage_2', self.stages[1], self.stages[2], 2)
            self.stage_3 = self.block('stage_3', self.stages[2], self.stages[3], 2)
            self.classifier = nn.Linear(self.stages[3], num_classes)  # the repository's 1024
            init.kaiming_normal(self.classifier.weight)

            for key in self.state_dict():
                if key.split('.')[-1] == 'weight':
                    if 'conv' in key:
                        init.kaiming_normal(self.state_dict()[key], mode='fan_out')
                    if 'bn' in key:
                        self.state_dict()[key][...] = 1
                elif key.split('.')[-1] == 'bias':
                    self.state_dict()[key][...] = 0

        def block(self, name, in_channels, out_channels, pool_stride=2):
            block = nn.Sequential()
            for bottleneck in range(self.block_depth):
                name_ = '%s_bottleneck_%d' % (name, bottleneck)
                if bottleneck == 0:
                    block.add_module(name_, ResNeXtBottleneck(in_channels, out_channels, pool_stride, self.cardinality,
                                                              self.widen_factor))
                else:
                    block.add_module(name_,
                                     ResNeXtBottleneck(out_channels, out_channels, 1, self.cardinality, self.widen_factor))
            return block

        def forward(self, x):
            x = self.conv_1_3x3.forward(x)
            x = F.relu(self.bn_1.forward(x), inplace=True)
            x = self.stage_1.forward(x)
            x = self.stage_2.forward(x)
            x = self.stage_3.forward(x)
            x = F.avg_pool2d(x, 2, 1)  # the repository's 8: 32-pixel images
            x = x.view(-1, self.stages[3])
            return self.classifier(x)

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super(Bottleneck, self).__init__()
            self.bn1 = nn.BatchNorm2d(inplanes)
            self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, planes * 4, kernel_size=1, bias=False)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            residual = x

            out = self.bn1(x)
            out = self.relu(out)
            out = self.conv1(out)

            out = self.bn2(out)
            out = self.relu(out)
            out = self.conv2(out)

            out = self.bn3(out)
            out = self.relu(out)
            out = self.conv3(out)

            if self.downsample is not None:
                residual = self.downsample(x)

            out += residual

            return out

    class PreResNet(nn.Module):
        def __init__(self, depth, num_classes=1000, block_name='BasicBlock'):
            super(PreResNet, self).__init__()
            # Model type specifies number of layers for CIFAR-10 model
            if block_name.lower() == 'bottleneck':
                assert (depth - 2) % 9 == 0, 'When use bottleneck, depth should be 9n+2, e.g. 20, 29, 47, 56, 110, 1199'
                n = (depth - 2) // 9
                block = Bottleneck
            else:
                raise ValueError('block_name shoule be Basicblock or Bottleneck')

            self.inplanes = width  # the repository's 16, 32, 64
            self.conv1 = nn.Conv2d(3, width, kernel_size=3, padding=1, bias=False)
            self.layer1 = self._make_layer(block, width, n)
            self.layer2 = self._make_layer(block, 2 * width, n, stride=2)
            self.layer3 = self._make_layer(block, 4 * width, n, stride=2)
            self.bn = nn.BatchNorm2d(4 * width * block.expansion)
            self.relu = nn.ReLU(inplace=True)
            self.avgpool = nn.AvgPool2d(2)  # the repository's 8: 32-pixel images
            self.fc = nn.Linear(4 * width * block.expansion, num_classes)

            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                    m.weight.data.normal_(0, math.sqrt(2. / n))
                elif isinstance(m, nn.BatchNorm2d):
                    m.weight.data.fill_(1)
                    m.bias.data.zero_()

        def _make_layer(self, block, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes * block.expansion:
                downsample = nn.Sequential(
                    nn.Conv2d(self.inplanes, planes * block.expansion,
                              kernel_size=1, stride=stride, bias=False),
                )

            layers = []
            layers.append(block(self.inplanes, planes, stride, downsample))
            self.inplanes = planes * block.expansion
            for i in range(1, blocks):
                layers.append(block(self.inplanes, planes))

            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.conv1(x)
            x = self.layer1(x)
            x = self.layer2(x)
            x = self.layer3(x)
            x = self.bn(x)
            x = self.relu(x)
            x = self.avgpool(x)
            x = x.view(x.size(0), -1)
            x = self.fc(x)
            return x

    return dict(resnext=lambda num_classes: CifarResNeXt(cardinality=2, depth=11, num_classes=num_classes,
                                                          widen_factor=2),
                preresnet=lambda num_classes: PreResNet(depth=11, num_classes=num_classes, block_name='bottleneck'))


def bearpaw(m, state=None, arch="resnext", checkpoint=None):
    import argparse
    import os
    import shutil
    import time
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    checkpoint = os.path.join(checkpoint, torch.__name__)
    os.makedirs(checkpoint)

    class AverageMeter(object):
        """Computes and stores the average and current value
           Imported from https://github.com/pytorch/examples/blob/master/imagenet/main.py#L247-L262
        """
        def __init__(self):
            self.reset()

        def reset(self):
            self.val = 0
            self.avg = 0
            self.sum = 0
            self.count = 0

        def update(self, val, n=1):
            self.val = val
            self.sum += val * n
            self.count += n
            self.avg = self.sum / self.count

    def accuracy(output, target, topk=(1,)):
        """Computes the precision@k for the specified values of k"""
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res

    class Logger(object):
        '''Save training process to log file with simple plot function.'''
        def __init__(self, fpath, title=None, resume=False):
            self.file = None
            self.resume = resume
            self.title = '' if title == None else title  # noqa: E711
            if fpath is not None:
                if resume:
                    self.file = open(fpath, 'r')
                    name = self.file.readline()
                    self.names = name.rstrip().split('\t')
                    self.numbers = {}
                    for _, name in enumerate(self.names):
                        self.numbers[name] = []

                    for numbers in self.file:
                        numbers = numbers.rstrip().split('\t')
                        for i in range(0, len(numbers)):
                            self.numbers[self.names[i]].append(numbers[i])
                    self.file.close()
                    self.file = open(fpath, 'a')
                else:
                    self.file = open(fpath, 'w')

        def set_names(self, names):
            if self.resume:
                pass
            # initialize numbers as empty list
            self.numbers = {}
            self.names = names
            for _, name in enumerate(self.names):
                self.file.write(name)
                self.file.write('\t')
                self.numbers[name] = []
            self.file.write('\n')
            self.file.flush()

        def append(self, numbers):
            assert len(self.names) == len(numbers), 'Numbers do not match names'
            for index, num in enumerate(numbers):
                self.file.write("{0:.6f}".format(num))
                self.file.write('\t')
                self.numbers[self.names[index]].append(num)
            self.file.write('\n')
            self.file.flush()

        def close(self):
            if self.file is not None:
                self.file.close()

    parser = argparse.ArgumentParser(description='PyTorch CIFAR10/100 Training')
    parser.add_argument('--epochs', default=1, type=int, metavar='N', help='number of total epochs to run')
    parser.add_argument('--lr', '--learning-rate', default=0.1, type=float, metavar='LR', help='initial learning rate')
    parser.add_argument('--schedule', type=int, nargs='+', default=[0], help='Decrease learning rate at these epochs.')
    parser.add_argument('--gamma', type=float, default=0.1, help='LR is multiplied by gamma on schedule.')
    parser.add_argument('--momentum', default=0.9, type=float, metavar='M', help='momentum')
    parser.add_argument('--weight-decay', '--wd', default=5e-4, type=float, metavar='W', help='weight decay (default: 1e-4)')
    parser.add_argument('-c', '--checkpoint', default='checkpoint', type=str, metavar='PATH')
    parser.add_argument('--arch', '-a', metavar='ARCH', default='resnext')
    args = parser.parse_args(['--checkpoint', checkpoint, '--arch', arch])
    weights = state  # compare's initial weights; `state` is the repository's dict of the arguments
    state = {k: v for k, v in args._get_kwargs()}
    best_acc = 0  # best test accuracy

    def adjust_learning_rate(optimizer, epoch):
        if epoch in args.schedule:
            state['lr'] *= args.gamma
            for param_group in optimizer.param_groups:
                param_group['lr'] = state['lr']

    def save_checkpoint(state, is_best, checkpoint='checkpoint', filename='checkpoint.pth.tar'):
        filepath = os.path.join(checkpoint, filename)
        torch.save(state, filepath)
        if is_best:
            shutil.copyfile(filepath, os.path.join(checkpoint, 'model_best.pth.tar'))

    def train(trainloader, model, criterion, optimizer, epoch, use_cuda):
        # switch to train mode
        model.train()
        batch_time, data_time, losses, top1, top5 = (AverageMeter() for _ in range(5))
        end = time.time()
        for batch_idx, (inputs, targets) in enumerate(trainloader):
            # measure data loading time
            data_time.update(time.time() - end)
            inputs, targets = torch.autograd.Variable(inputs), torch.autograd.Variable(targets)
            # compute output
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            # measure accuracy and record loss
            prec1, prec5 = accuracy(outputs.data, targets.data, topk=(1, 5))
            losses.update(loss.item(), inputs.size(0))
            top1.update(prec1.item(), inputs.size(0))
            top5.update(prec5.item(), inputs.size(0))
            # compute gradient and do SGD step
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            # measure elapsed time
            batch_time.update(time.time() - end)
            end = time.time()
        return (losses.avg, top1.avg)

    def test(testloader, model, criterion, epoch, use_cuda):
        model.eval()
        losses, top1 = AverageMeter(), AverageMeter()
        with torch.no_grad():
            for batch_idx, (inputs, targets) in enumerate(testloader):
                outputs = model(inputs)
                loss = criterion(outputs, targets)
                prec1, prec5 = accuracy(outputs.data, targets.data, topk=(1, 5))
                losses.update(loss.item(), inputs.size(0))
                top1.update(prec1.item(), inputs.size(0))
        return (losses.avg, top1.avg)

    torch.manual_seed(0)
    model = bearpaw_models(torch, nn, F)[args.arch](num_classes=10)
    if args.arch == 'resnext':  # written through self.state_dict()[key][...]
        assert float(model.classifier.bias.data.abs().sum()) == 0 and float(model.bn_1.weight.data.sum()) == 4
    init = load(m, model, weights)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    data = [(torch.tensor(x), torch.tensor(y)) for x, y in batches(14, 2, (4, 3, 8, 8))]
    trainloader, testloader = data[:1], data[1:]

    title = 'cifar-10-' + args.arch
    logger = Logger(os.path.join(args.checkpoint, 'log.txt'), title=title)
    logger.set_names(['Learning Rate', 'Train Loss', 'Valid Loss', 'Train Acc.', 'Valid Acc.'])
    for epoch in range(0, args.epochs):
        adjust_learning_rate(optimizer, epoch)
        train_loss, train_acc = train(trainloader, model, criterion, optimizer, epoch, False)
        test_loss, test_acc = test(testloader, model, criterion, epoch, False)
        logger.append([state['lr'], train_loss, test_loss, train_acc, test_acc])
        is_best = test_acc > best_acc
        best_acc = max(test_acc, best_acc)
        save_checkpoint({
                'epoch': epoch + 1,
                'state_dict': model.state_dict(),
                'acc': test_acc,
                'best_acc': best_acc,
                'optimizer': optimizer.state_dict(),
            }, is_best, checkpoint=args.checkpoint)
    logger.close()

    # resume: the checkpoint into a new model and optimizer, the log reopened
    checkpoint = torch.load(os.path.join(args.checkpoint, 'checkpoint.pth.tar'))
    resumed = bearpaw_models(torch, nn, F)[args.arch](num_classes=10)
    resumed.load_state_dict(checkpoint['state_dict'])
    optimizer = optim.SGD(resumed.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    optimizer.load_state_dict(checkpoint['optimizer'])
    logger = Logger(os.path.join(args.checkpoint, 'log.txt'), title=title, resume=True)
    assert checkpoint['epoch'] == args.epochs and logger.names[:5] == ['Learning Rate', 'Train Loss', 'Valid Loss',
                                                                       'Train Acc.', 'Valid Acc.']
    logged = [float(v) for name in logger.names if name for v in logger.numbers[name]]
    logger.close()
    assert os.path.exists(os.path.join(args.checkpoint, 'model_best.pth.tar')) == (best_acc > 0)
    assert optimizer.param_groups[0]['lr'] == state['lr']
    return init, logged + summary(resumed.parameters())


@pytest.mark.parametrize("arch", ["resnext", "preresnet"])
def test_bearpaw_cifar(arch, tmp_path):
    compare(bearpaw, arch=arch, checkpoint=str(tmp_path))


# (h) SimSiam's main_lincls.py: a pretrained checkpoint (torch.save of a DataParallel model's
# 'module.'-prefixed state_dict) renamed key by key into a fresh model, load_state_dict(strict=False)
# and its missing_keys, every layer but fc frozen by requires_grad = False, fc initialised through
# .data, the trainable parameters by filter(), model.eval() while training (the backbone's BatchNorm
# frozen), sanity_check's comparison with the checkpoint; the optimizer MoCo v3's LARS (torch.norm,
# nested torch.where, a momentum buffer in self.state) on the repository's own Optimizer subclass
def simsiam_lincls(m, state=None, checkpoint=None):
    import os
    torch, nn = m.torch, m.nn

    class LARS(torch.optim.Optimizer):
        """LARS optimizer, no rate scaling or weight decay for parameters <= 1D."""
        def __init__(self, params, lr=0, weight_decay=0, momentum=0.9, trust_coefficient=0.001):
            defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, trust_coefficient=trust_coefficient)
            super().__init__(params, defaults)

        @torch.no_grad()
        def step(self):
            for g in self.param_groups:
                for p in g['params']:
                    dp = p.grad

                    if dp is None:
                        continue

                    if p.ndim > 1:  # if not normalization gamma/beta or bias
                        dp = dp.add(p, alpha=g['weight_decay'])
                        param_norm = torch.norm(p)
                        update_norm = torch.norm(dp)
                        one = torch.ones_like(param_norm)
                        q = torch.where(param_norm > 0.,
                                        torch.where(update_norm > 0,
                                                    (g['trust_coefficient'] * param_norm / update_norm), one),
                                        one)
                        dp = dp.mul(q)

                    param_state = self.state[p]
                    if 'mu' not in param_state:
                        param_state['mu'] = torch.zeros_like(p)
                    mu = param_state['mu']
                    mu.mul_(g['momentum']).add_(dp)
                    p.add_(mu, alpha=-g['lr'])

    class TinyResNet(nn.Module):
        """Stands in for torchvision's resnet50: a stem, a pool and an `fc`."""
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(6)
            self.relu = nn.ReLU(inplace=True)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(6, num_classes)

        def forward(self, x):
            x = self.avgpool(self.relu(self.bn1(self.conv1(x))))
            return self.fc(torch.flatten(x, 1))

    class Pretrained(nn.Module):
        """What main_simsiam.py saves: an encoder whose fc is the projector, and the predictor."""
        def __init__(self):
            super().__init__()
            self.encoder = TinyResNet(num_classes=8)
            self.encoder.fc = nn.Sequential(nn.Linear(6, 6, bias=False), nn.BatchNorm1d(6), nn.ReLU(inplace=True),
                                            self.encoder.fc)
            self.predictor = nn.Linear(8, 8)

    def sanity_check(state_dict, pretrained_weights):
        """Linear classifier should not change any weights other than the linear layer.
        This sanity check asserts nothing wrong happens (e.g., BN stats updated)."""
        print("=> loading '{}' for sanity check".format(pretrained_weights))
        checkpoint = torch.load(pretrained_weights, map_location="cpu")
        state_dict_pre = checkpoint['state_dict']

        for k in list(state_dict.keys()):
            # only ignore fc layer
            if 'fc.weight' in k or 'fc.bias' in k:
                continue

            # name in pretrained model
            k_pre = 'module.encoder.' + k[len('module.'):] \
                if k.startswith('module.') else 'module.encoder.' + k

            assert ((state_dict[k].cpu() == state_dict_pre[k_pre]).all()), \
                '{} is changed in linear classifier training.'.format(k)

        print("=> sanity check passed.")

    torch.manual_seed(0)
    pretrained = Pretrained()
    model = TinyResNet(num_classes=10)
    # freeze all layers but the last fc
    for name, param in model.named_parameters():
        if name not in ['fc.weight', 'fc.bias']:
            param.requires_grad = False
    # init the fc layer
    model.fc.weight.data.normal_(mean=0.0, std=0.01)
    model.fc.bias.data.zero_()
    init = load(m, nn.ModuleDict({"pretrained": pretrained, "model": model}), state)
    args_pretrained = os.path.join(checkpoint, torch.__name__ + '_checkpoint_0099.pth.tar')
    torch.save({'epoch': 100, 'arch': 'resnet50',
                'state_dict': {'module.' + k: v for k, v in pretrained.state_dict().items()}}, args_pretrained)

    # load from pre-trained, before DistributedDataParallel constructor
    if os.path.isfile(args_pretrained):
        print("=> loading checkpoint '{}'".format(args_pretrained))
        checkpoint = torch.load(args_pretrained, map_location="cpu")

        # rename moco pre-trained keys
        state_dict = checkpoint['state_dict']
        for k in list(state_dict.keys()):
            # retain only encoder up to before the embedding layer
            if k.startswith('module.encoder') and not k.startswith('module.encoder.fc'):
                # remove prefix
                state_dict[k[len("module.encoder."):]] = state_dict[k]
            # delete renamed or unused k
            del state_dict[k]

        msg = model.load_state_dict(state_dict, strict=False)
        assert set(msg.missing_keys) == {"fc.weight", "fc.bias"}

    # infer learning rate before changing batch size
    init_lr = 0.1 * 4 / 256 * 32
    criterion = nn.CrossEntropyLoss()
    # optimize only the linear classifier
    parameters = list(filter(lambda p: p.requires_grad, model.parameters()))
    assert len(parameters) == 2  # fc.weight, fc.bias
    optimizer = LARS(parameters, init_lr, weight_decay=1e-4, momentum=0.9)

    losses = []
    for images, target in batches(15, 3, (4, 3, 8, 8)):
        """
        Switch to eval mode:
        Under the protocol of linear classification on frozen features/models,
        it is not legitimate to change any part of the pre-trained model.
        BatchNorm in train mode may revise running mean/std (even if it receives
        no gradient), which are part of the model parameters too.
        """
        model.eval()
        output = model(torch.tensor(images))
        loss = criterion(output, torch.tensor(target))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    sanity_check(model.state_dict(), args_pretrained)
    mu = optimizer.state[model.fc.weight]['mu']
    return init, losses + summary(parameters) + [float(mu.abs().sum())]


def test_simsiam_linear_classification_with_lars(tmp_path):
    compare(simsiam_lincls, checkpoint=str(tmp_path))


# (i) SupContrast's util.py and main_linear.py: save_model's checkpoint holding the parsed options
# (`'opt': opt`, an argparse.Namespace), set_model's "module." prefixes stripped before
# load_state_dict, the frozen encoder under no_grad and features.detach() into a LinearClassifier,
# warmup_learning_rate then the cosine adjust_learning_rate, AverageMeters of 0-d tensors printed
# through str.format
def supcon_linear(m, state=None, checkpoint=None):
    import argparse
    import math
    import os
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class AverageMeter(object):
        """Computes and stores the average and current value"""
        def __init__(self):
            self.reset()

        def reset(self):
            self.val = 0
            self.avg = 0
            self.sum = 0
            self.count = 0

        def update(self, val, n=1):
            self.val = val
            self.sum += val * n
            self.count += n
            self.avg = self.sum / self.count

    def accuracy(output, target, topk=(1,)):
        """Computes the accuracy over the k top predictions for the specified values of k"""
        with torch.no_grad():
            maxk = max(topk)
            batch_size = target.size(0)

            _, pred = output.topk(maxk, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))

            res = []
            for k in topk:
                correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
                res.append(correct_k.mul_(100.0 / batch_size))
            return res

    def adjust_learning_rate(args, optimizer, epoch):
        lr = args.learning_rate
        if args.cosine:
            eta_min = lr * (args.lr_decay_rate ** 3)
            lr = eta_min + (lr - eta_min) * (
                    1 + math.cos(math.pi * epoch / args.epochs)) / 2
        else:
            steps = np.sum(epoch > np.asarray(args.lr_decay_epochs))
            if steps > 0:
                lr = lr * (args.lr_decay_rate ** steps)

        for param_group in optimizer.param_groups:
            param_group['lr'] = lr

    def warmup_learning_rate(args, epoch, batch_id, total_batches, optimizer):
        if args.warm and epoch <= args.warm_epochs:
            p = (batch_id + (epoch - 1) * total_batches) / \
                (args.warm_epochs * total_batches)
            lr = args.warmup_from + p * (args.warmup_to - args.warmup_from)

            for param_group in optimizer.param_groups:
                param_group['lr'] = lr

    def set_optimizer(opt, model):
        optimizer = optim.SGD(model.parameters(),
                              lr=opt.learning_rate,
                              momentum=opt.momentum,
                              weight_decay=opt.weight_decay)
        return optimizer

    def save_model(model, optimizer, opt, epoch, save_file):
        print('==> Saving...')
        state = {
            'opt': opt,
            'model': model.state_dict(),
            'optimizer': optimizer.state_dict(),
            'epoch': epoch,
        }
        torch.save(state, save_file)
        del state

    class SupConResNet(nn.Module):
        """backbone + projection head"""
        def __init__(self, name='resnet50', head='mlp', feat_dim=8):
            super(SupConResNet, self).__init__()
            self.encoder = cifar_encoder(nn, 12)
            self.head = nn.Sequential(nn.Linear(12, 12), nn.ReLU(inplace=True), nn.Linear(12, feat_dim))

        def forward(self, x):
            feat = self.encoder(x)
            feat = F.normalize(self.head(feat), dim=1)
            return feat

    class LinearClassifier(nn.Module):
        """Linear classifier"""
        def __init__(self, name='resnet50', num_classes=10):
            super(LinearClassifier, self).__init__()
            feat_dim = 12
            self.fc = nn.Linear(feat_dim, num_classes)

        def forward(self, features):
            return self.fc(features)

    opt = argparse.Namespace(model='resnet50', learning_rate=0.5, momentum=0.9, weight_decay=1e-4, cosine=True,
                             lr_decay_rate=0.1, lr_decay_epochs=[30, 40], epochs=3, warm=True, warm_epochs=1,
                             warmup_from=0.01, n_cls=10, save_folder=os.path.join(checkpoint, torch.__name__))
    opt.warmup_to = opt.learning_rate * (1 - math.cos(math.pi * opt.warm_epochs / opt.epochs)) / 2 + 0.001
    os.makedirs(opt.save_folder)

    torch.manual_seed(0)
    pretrained, classifier = SupConResNet(name=opt.model), LinearClassifier(name=opt.model, num_classes=opt.n_cls)
    init = load(m, nn.ModuleDict({"pretrained": pretrained, "classifier": classifier}), state)
    # main_supcon.py's last save, of a DataParallel encoder ("module." inside its keys)
    pretrained.encoder = nn.DataParallel(pretrained.encoder)
    save_file = os.path.join(opt.save_folder, 'last.pth')
    save_model(pretrained, set_optimizer(opt, pretrained), opt, opt.epochs, save_file)

    # main_linear.py's set_model, as on one GPU
    opt.ckpt = save_file
    model = SupConResNet(name=opt.model)
    criterion = torch.nn.CrossEntropyLoss()
    # weights_only=False: since torch 2.6 torch.load's default refuses the pickled Namespace; tnet's
    # load takes it either way (its files hold data, never pickle)
    ckpt = torch.load(opt.ckpt, map_location='cpu', weights_only=False)
    state_dict = ckpt['model']
    new_state_dict = {}
    for k, v in state_dict.items():
        k = k.replace("module.", "")
        new_state_dict[k] = v
    state_dict = new_state_dict
    model.load_state_dict(state_dict)
    assert ckpt['opt'].learning_rate == opt.learning_rate and ckpt['opt'].lr_decay_epochs == [30, 40]

    optimizer = set_optimizer(opt, classifier)
    train_loader = [(torch.tensor(x), torch.tensor(y)) for x, y in batches(16, 2, (6, 3, 8, 8))]
    out = []
    for epoch in range(1, 3):
        adjust_learning_rate(opt, optimizer, epoch)
        model.eval()
        classifier.train()
        losses, top1 = AverageMeter(), AverageMeter()
        for idx, (images, labels) in enumerate(train_loader):
            bsz = labels.shape[0]
            # warm-up learning rate
            warmup_learning_rate(opt, epoch, idx, len(train_loader), optimizer)
            # compute loss
            with torch.no_grad():
                features = model.encoder(images)
            output = classifier(features.detach())
            loss = criterion(output, labels)
            # update metric
            losses.update(loss.item(), bsz)
            acc1, acc5 = accuracy(output, labels, topk=(1, 5))
            top1.update(acc1[0], bsz)
            # SGD
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print('Train: [{0}][{1}/{2}]\t'
                  'loss {loss.val:.3f} ({loss.avg:.3f})\t'
                  'Acc@1 {top1.val:.3f} ({top1.avg:.3f})'.format(
                   epoch, idx + 1, len(train_loader), loss=losses, top1=top1))
            out += [loss.item(), optimizer.param_groups[0]['lr'], float('{:.3f}'.format(top1.avg))]
    return init, out + summary(classifier.parameters())


def test_supcon_linear_eval(tmp_path):
    compare(supcon_linear, checkpoint=str(tmp_path))
