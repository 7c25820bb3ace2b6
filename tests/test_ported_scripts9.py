"""Self-supervised, metric-learning and distillation code on CIFAR (HobbitLong's SupContrast and
RepDistiller, facebookresearch's SimSiam and MoCo, BYOL's EMA target, Barlow Twins, VICReg) and
bearpaw/pytorch-classification's models and utilities, written from memory in their repositories'
styles and ported by their imports alone, as test_ported_scripts.py: each runs in tnet, then in torch
from tnet's initial weights (state_dict through numpy), and the losses, and the gradients and
weights summed into a few numbers, agree; shapes are tiny and runs 1-3 steps."""
import numpy as np

from helpers import batches, compare, load


def summary(params):
    """A few numbers of the weights after the steps: each parameter's sum and sum of squares."""
    out = []
    for p in params:
        out += [float(p.detach().sum().item()), float((p.detach() ** 2).sum().item())]
    return out


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
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

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
    # SGD, not the Adam that some CIFAR repositories use: the Linear biases before BatchNorm1d have zero
    # gradients up to rounding, which Adam scales up to lr-sized steps in different directions
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
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

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


def barlow_twins(m, state=None, method="barlow"):
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

    torch.manual_seed(0)
    batch_size = 6
    model = (BarlowTwins if method == "barlow" else VICReg)(batch_size)
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    losses = []
    for x, _ in batches(11, 2, (batch_size, 3, 8, 8)):
        y1, y2 = two_views(torch, torch.tensor(x))
        optimizer.zero_grad()
        loss = model.forward(y1, y2)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_barlow_twins():
    compare(barlow_twins)


def test_vicreg():
    compare(barlow_twins, method="vicreg")
