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
