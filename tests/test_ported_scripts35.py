"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: amdegroot's ssd.pytorch (PriorBox, L2Norm, box_utils' point_form / jaccard / match /
encode / log_sum_exp / nms with index_select(out=) and resize_as_, MultiBoxLoss's hard negative mining by a double
sort); kaituoxu's Conv-TasNet (an encoder Conv1d, a TCN of depthwise dilated convolutions with PReLU and gLN/cLN,
overlap_and_add by unfold and index_add_, SI-SNR with permutation invariant training by einsum over one-hot
permutations); rosinality's stylegan2-pytorch (modulated convolutions grouped by the batch, upfirdn2d_native's 6-d
pad, lazy R1 and the path length penalty, the EMA generator); lucidrains' reformer reversible layers (an autograd
Function that replays its blocks backward under fork_rng, which found torch.utils.checkpoint's get_device_states /
set_device_states missing in tnet). Writing StyleGAN2's optimizers found torch's Adam refusing betas of mixed types
(0, 0.99), which tnet took. Each runs in tnet, then in torch from tnet's initial weights (state_dict through numpy),
and the losses, and the weights summed into a few numbers, agree. Numpy draws what a script draws (the noise inputs
of the GANs too); shapes are tiny and runs take one or two steps."""
import itertools
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) amdegroot's ssd.pytorch: layers/functions/prior_box.py (itertools.product over the feature maps, clamp_),
# layers/modules/l2norm.py, layers/box_utils.py (point_form, intersect by expand and torch.min/max, jaccard, match
# with squeeze_, index_fill_ and a loop of 0-d index assignments, encode, log_sum_exp on x.data.max(), nms with
# scores.new(), boxes.new(), torch.index_select(..., out=xx1), w.resize_as_(xx2), clamp(min=a 0-d tensor)),
# layers/modules/multibox_loss.py (torch.Tensor(num, num_priors, 4), torch.LongTensor, loss_c[pos] = 0, the double
# sort, (pos_idx + neg_idx).gt(0) on bools, cross_entropy and smooth_l1_loss with size_average=False), and the
# head's permute(0, 2, 3, 1).contiguous() and cat of views; one SGD step, then decoding and nms in eval
def ssd_multibox(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    Variable = import_module(torch.__name__ + ".autograd").Variable
    init_ = import_module(torch.__name__ + ".nn.init")
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    num_classes, variance = 3, [0.1, 0.2]
    cfg = {'feature_maps': [4, 2], 'min_dim': 16, 'steps': [4, 8], 'min_sizes': [4, 8], 'max_sizes': [8, 12],
           'aspect_ratios': [[2], [2]], 'clip': True}

    class PriorBox(object):
        def __init__(self, cfg):
            self.image_size = cfg['min_dim']
            self.feature_maps = cfg['feature_maps']
            self.min_sizes, self.max_sizes = cfg['min_sizes'], cfg['max_sizes']
            self.steps, self.aspect_ratios, self.clip = cfg['steps'], cfg['aspect_ratios'], cfg['clip']

        def forward(self):
            mean = []
            for k, f in enumerate(self.feature_maps):
                for i, j in itertools.product(range(f), repeat=2):
                    f_k = self.image_size / self.steps[k]
                    cx = (j + 0.5) / f_k
                    cy = (i + 0.5) / f_k
                    s_k = self.min_sizes[k] / self.image_size
                    mean += [cx, cy, s_k, s_k]
                    s_k_prime = math.sqrt(s_k * (self.max_sizes[k] / self.image_size))
                    mean += [cx, cy, s_k_prime, s_k_prime]
                    for ar in self.aspect_ratios[k]:
                        mean += [cx, cy, s_k * math.sqrt(ar), s_k / math.sqrt(ar)]
                        mean += [cx, cy, s_k / math.sqrt(ar), s_k * math.sqrt(ar)]
            output = torch.Tensor(mean).view(-1, 4)
            if self.clip:
                output.clamp_(max=1, min=0)
            return output

    class L2Norm(nn.Module):
        def __init__(self, n_channels, scale):
            super(L2Norm, self).__init__()
            self.n_channels = n_channels
            self.gamma = scale or None
            self.eps = 1e-10
            self.weight = nn.Parameter(torch.Tensor(self.n_channels))
            self.reset_parameters()

        def reset_parameters(self):
            init_.constant_(self.weight, self.gamma)

        def forward(self, x):
            norm = x.pow(2).sum(dim=1, keepdim=True).sqrt() + self.eps
            x = torch.div(x, norm)
            out = self.weight.unsqueeze(0).unsqueeze(2).unsqueeze(3).expand_as(x) * x
            return out

    def point_form(boxes):
        return torch.cat((boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2), 1)

    def intersect(box_a, box_b):
        A = box_a.size(0)
        B = box_b.size(0)
        max_xy = torch.min(box_a[:, 2:].unsqueeze(1).expand(A, B, 2), box_b[:, 2:].unsqueeze(0).expand(A, B, 2))
        min_xy = torch.max(box_a[:, :2].unsqueeze(1).expand(A, B, 2), box_b[:, :2].unsqueeze(0).expand(A, B, 2))
        inter = torch.clamp((max_xy - min_xy), min=0)
        return inter[:, :, 0] * inter[:, :, 1]

    def jaccard(box_a, box_b):
        inter = intersect(box_a, box_b)
        area_a = ((box_a[:, 2] - box_a[:, 0]) * (box_a[:, 3] - box_a[:, 1])).unsqueeze(1).expand_as(inter)
        area_b = ((box_b[:, 2] - box_b[:, 0]) * (box_b[:, 3] - box_b[:, 1])).unsqueeze(0).expand_as(inter)
        union = area_a + area_b - inter
        return inter / union

    def encode(matched, priors, variances):
        g_cxcy = (matched[:, :2] + matched[:, 2:]) / 2 - priors[:, :2]
        g_cxcy /= (variances[0] * priors[:, 2:])
        g_wh = (matched[:, 2:] - matched[:, :2]) / priors[:, 2:]
        g_wh = torch.log(g_wh) / variances[1]
        return torch.cat([g_cxcy, g_wh], 1)

    def decode(loc, priors, variances):
        boxes = torch.cat((priors[:, :2] + loc[:, :2] * variances[0] * priors[:, 2:],
                           priors[:, 2:] * torch.exp(loc[:, 2:] * variances[1])), 1)
        boxes[:, :2] -= boxes[:, 2:] / 2
        boxes[:, 2:] += boxes[:, :2]
        return boxes

    def match(threshold, truths, priors, variances, labels, loc_t, conf_t, idx):
        overlaps = jaccard(truths, point_form(priors))
        best_prior_overlap, best_prior_idx = overlaps.max(1, keepdim=True)
        best_truth_overlap, best_truth_idx = overlaps.max(0, keepdim=True)
        best_truth_idx.squeeze_(0)
        best_truth_overlap.squeeze_(0)
        best_prior_idx.squeeze_(1)
        best_prior_overlap.squeeze_(1)
        best_truth_overlap.index_fill_(0, best_prior_idx, 2)  # ensure best prior
        for j in range(best_prior_idx.size(0)):
            best_truth_idx[best_prior_idx[j]] = j
        matches = truths[best_truth_idx]
        conf = labels[best_truth_idx] + 1
        conf[best_truth_overlap < threshold] = 0  # label as background
        loc = encode(matches, priors, variances)
        loc_t[idx] = loc
        conf_t[idx] = conf

    def log_sum_exp(x):
        x_max = x.data.max()
        return torch.log(torch.sum(torch.exp(x - x_max), 1, keepdim=True)) + x_max

    def nms(boxes, scores, overlap=0.5, top_k=200):
        keep = scores.new(scores.size(0)).zero_().long()
        if boxes.numel() == 0:
            return keep
        x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
        area = torch.mul(x2 - x1, y2 - y1)
        v, idx = scores.sort(0)  # sort in ascending order
        idx = idx[-top_k:]
        xx1, yy1, xx2, yy2 = boxes.new(), boxes.new(), boxes.new(), boxes.new()
        w = boxes.new()
        h = boxes.new()
        count = 0
        while idx.numel() > 0:
            i = idx[-1]
            keep[count] = i
            count += 1
            if idx.size(0) == 1:
                break
            idx = idx[:-1]
            torch.index_select(x1, 0, idx, out=xx1)
            torch.index_select(y1, 0, idx, out=yy1)
            torch.index_select(x2, 0, idx, out=xx2)
            torch.index_select(y2, 0, idx, out=yy2)
            xx1 = torch.clamp(xx1, min=x1[i])
            yy1 = torch.clamp(yy1, min=y1[i])
            xx2 = torch.clamp(xx2, max=x2[i])
            yy2 = torch.clamp(yy2, max=y2[i])
            w.resize_as_(xx2)
            h.resize_as_(yy2)
            w = xx2 - xx1
            h = yy2 - yy1
            w = torch.clamp(w, min=0.0)
            h = torch.clamp(h, min=0.0)
            inter = w * h
            rem_areas = torch.index_select(area, 0, idx)
            union = (rem_areas - inter) + area[i]
            IoU = inter / union
            idx = idx[IoU.le(overlap)]
        return keep, count

    class MultiBoxLoss(nn.Module):
        def __init__(self, num_classes, overlap_thresh, neg_pos):
            super(MultiBoxLoss, self).__init__()
            self.num_classes = num_classes
            self.threshold = overlap_thresh
            self.negpos_ratio = neg_pos
            self.variance = variance

        def forward(self, predictions, targets):
            loc_data, conf_data, priors = predictions
            num = loc_data.size(0)
            priors = priors[:loc_data.size(1), :]
            num_priors = (priors.size(0))
            loc_t = torch.Tensor(num, num_priors, 4)
            conf_t = torch.LongTensor(num, num_priors)
            for idx in range(num):
                truths = targets[idx][:, :-1].data
                labels = targets[idx][:, -1].data
                defaults = priors.data
                match(self.threshold, truths, defaults, self.variance, labels, loc_t, conf_t, idx)
            loc_t = Variable(loc_t, requires_grad=False)
            conf_t = Variable(conf_t, requires_grad=False)
            pos = conf_t > 0
            pos_idx = pos.unsqueeze(pos.dim()).expand_as(loc_data)
            loc_p = loc_data[pos_idx].view(-1, 4)
            loc_t = loc_t[pos_idx].view(-1, 4)
            loss_l = F.smooth_l1_loss(loc_p, loc_t, size_average=False)
            batch_conf = conf_data.view(-1, self.num_classes)
            loss_c = log_sum_exp(batch_conf) - batch_conf.gather(1, conf_t.view(-1, 1))
            loss_c = loss_c.view(num, -1)
            loss_c[pos] = 0  # filter out pos boxes for now
            _, loss_idx = loss_c.sort(1, descending=True)
            _, idx_rank = loss_idx.sort(1)
            num_pos = pos.long().sum(1, keepdim=True)
            num_neg = torch.clamp(self.negpos_ratio * num_pos, max=pos.size(1) - 1)
            neg = idx_rank < num_neg.expand_as(idx_rank)
            pos_idx = pos.unsqueeze(2).expand_as(conf_data)
            neg_idx = neg.unsqueeze(2).expand_as(conf_data)
            conf_p = conf_data[(pos_idx + neg_idx).gt(0)].view(-1, self.num_classes)
            targets_weighted = conf_t[(pos + neg).gt(0)]
            loss_c = F.cross_entropy(conf_p, targets_weighted, size_average=False)
            N = num_pos.data.sum()
            loss_l /= N
            loss_c /= N
            return loss_l, loss_c

    class SSD(nn.Module):
        def __init__(self, num_classes):
            super(SSD, self).__init__()
            self.num_classes = num_classes
            self.priorbox = PriorBox(cfg)
            with torch.no_grad():
                self.priors = Variable(self.priorbox.forward())
            self.vgg = nn.ModuleList([nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(2, 2), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(kernel_size=2, stride=2, ceil_mode=True)])
            self.L2Norm = L2Norm(4, 20)
            self.extras = nn.ModuleList([nn.Conv2d(4, 4, kernel_size=3, stride=2, padding=1)])
            self.loc = nn.ModuleList([nn.Conv2d(4, 4 * 4, kernel_size=3, padding=1) for _ in range(2)])
            self.conf = nn.ModuleList([nn.Conv2d(4, 4 * num_classes, kernel_size=3, padding=1) for _ in range(2)])

        def forward(self, x):
            sources, loc, conf = list(), list(), list()
            for k in range(len(self.vgg)):
                x = self.vgg[k](x)
            sources.append(self.L2Norm(x))
            for k, v in enumerate(self.extras):
                x = F.relu(v(x), inplace=True)
                sources.append(x)
            for (x, l, c) in zip(sources, self.loc, self.conf):
                loc.append(l(x).permute(0, 2, 3, 1).contiguous())
                conf.append(c(x).permute(0, 2, 3, 1).contiguous())
            loc = torch.cat([o.view(o.size(0), -1) for o in loc], 1)
            conf = torch.cat([o.view(o.size(0), -1) for o in conf], 1)
            return (loc.view(loc.size(0), -1, 4), conf.view(conf.size(0), -1, self.num_classes), self.priors)

    net = SSD(num_classes)
    init = load(m, net, state)
    assert net.priors.shape == (80, 4)
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-2, momentum=0.9, weight_decay=5e-4)
    criterion = MultiBoxLoss(num_classes, 0.5, 3)
    losses = []
    for step in range(2):
        images = Variable(torch.tensor(normal(rng, 2, 3, 16, 16)))
        targets = []
        for _ in range(2):
            xy = rng.uniform(0.0, 0.6, (2, 2))
            wh = rng.uniform(0.2, 0.4, (2, 2))
            label = rng.integers(0, num_classes - 1, (2, 1))
            targets.append(Variable(torch.FloatTensor(np.concatenate([xy, xy + wh, label], 1).astype(np.float32)),
                                    volatile=True))
        out = net(images)
        optimizer.zero_grad()
        loss_l, loss_c = criterion(out, targets)
        loss = loss_l + loss_c
        loss.backward()
        optimizer.step()
        losses += [loss_l.item(), loss_c.item()]
    net.eval()
    with torch.no_grad():
        loc, conf, priors = net(torch.tensor(normal(rng, 1, 3, 16, 16)))
        conf_scores = F.softmax(conf[0], dim=-1).t().contiguous()
        decoded_boxes = decode(loc[0], priors, variance)
        for cl in range(1, num_classes):
            c_mask = conf_scores[cl].gt(0.2)
            scores = conf_scores[cl][c_mask]
            l_mask = c_mask.unsqueeze(1).expand_as(decoded_boxes)
            boxes = decoded_boxes[l_mask].view(-1, 4)
            ids, count = nms(boxes, scores, 0.45, 20)
            losses += [count, scores[ids[:count]].sum().item(), boxes[ids[:count]].sum().item()]
    return init, losses + summary(net.parameters())


def test_ssd_multibox():
    compare(ssd_multibox)


# (b) kaituoxu's Conv-TasNet (src/conv_tasnet.py, src/utils.py, src/pit_criterion.py): the encoder Conv1d(1, N, L,
# stride=L // 2) and ReLU, the separator's cLN (torch.var(unbiased=False)) and a TCN of TemporalBlocks (1x1 conv,
# PReLU, gLN by mean of means, a depthwise dilated Conv1d with groups=in_channels and its Chomp1d when causal), the
# mask's view(M, C, N, K) and softmax over speakers, the decoder's nn.Linear basis and overlap_and_add (math.gcd,
# torch.arange(...).unfold(0, size, step), signal.new_tensor(frame).long(), new_zeros, index_add_ on dim -2), F.pad
# to the mixture's length; the loss's get_mask by slice assignment, estimate_source *= mask in place on the model's
# output, SI-SNR pairs, perms = source.new_tensor(list(permutations(range(C))), dtype=torch.long), a one-hot by
# new_zeros(...).scatter_(2, index, 1), torch.einsum('bij,pij->bp', [a list]), argmax and max over permutations,
# reorder_source by index_select and per-element assignment; xavier_normal_ on every matrix, Adam and gradient
# clipping
def conv_tasnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from itertools import permutations
    torch.manual_seed(0)
    rng = np.random.default_rng(5)
    EPS = 1e-8

    def overlap_and_add(signal, frame_step):
        outer_dimensions = signal.size()[:-2]
        frames, frame_length = signal.size()[-2:]
        subframe_length = math.gcd(frame_length, frame_step)  # gcd=Greatest Common Divisor
        subframe_step = frame_step // subframe_length
        subframes_per_frame = frame_length // subframe_length
        output_size = frame_step * (frames - 1) + frame_length
        output_subframes = output_size // subframe_length
        subframe_signal = signal.view(*outer_dimensions, -1, subframe_length)
        frame = torch.arange(0, output_subframes).unfold(0, subframes_per_frame, subframe_step)
        frame = signal.new_tensor(frame).long()  # signal may in GPU or CPU
        frame = frame.contiguous().view(-1)
        result = signal.new_zeros(*outer_dimensions, output_subframes, subframe_length)
        result.index_add_(-2, frame, subframe_signal)
        result = result.view(*outer_dimensions, -1)
        return result

    class ChannelwiseLayerNorm(nn.Module):
        def __init__(self, channel_size):
            super(ChannelwiseLayerNorm, self).__init__()
            self.gamma = nn.Parameter(torch.Tensor(1, channel_size, 1))  # [1, N, 1]
            self.beta = nn.Parameter(torch.Tensor(1, channel_size, 1))  # [1, N, 1]
            self.reset_parameters()

        def reset_parameters(self):
            self.gamma.data.fill_(1)
            self.beta.data.zero_()

        def forward(self, y):
            mean = torch.mean(y, dim=1, keepdim=True)  # [M, 1, K]
            var = torch.var(y, dim=1, keepdim=True, unbiased=False)  # [M, 1, K]
            cLN_y = self.gamma * (y - mean) / torch.pow(var + EPS, 0.5) + self.beta
            return cLN_y

    class GlobalLayerNorm(ChannelwiseLayerNorm):
        def forward(self, y):
            mean = y.mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)  # [M, 1, 1]
            var = (torch.pow(y - mean, 2)).mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
            gLN_y = self.gamma * (y - mean) / torch.pow(var + EPS, 0.5) + self.beta
            return gLN_y

    def chose_norm(norm_type, channel_size):
        if norm_type == "gLN":
            return GlobalLayerNorm(channel_size)
        elif norm_type == "cLN":
            return ChannelwiseLayerNorm(channel_size)
        else:  # norm_type == "BN"
            return nn.BatchNorm1d(channel_size)

    class Chomp1d(nn.Module):
        def __init__(self, chomp_size):
            super(Chomp1d, self).__init__()
            self.chomp_size = chomp_size

        def forward(self, x):
            return x[:, :, :-self.chomp_size].contiguous()

    class DepthwiseSeparableConv(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, norm_type, causal):
            super(DepthwiseSeparableConv, self).__init__()
            depthwise_conv = nn.Conv1d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                       dilation=dilation, groups=in_channels, bias=False)
            prelu = nn.PReLU()
            norm = chose_norm(norm_type, in_channels)
            pointwise_conv = nn.Conv1d(in_channels, out_channels, 1, bias=False)
            if causal:
                self.net = nn.Sequential(depthwise_conv, Chomp1d(padding), prelu, norm, pointwise_conv)
            else:
                self.net = nn.Sequential(depthwise_conv, prelu, norm, pointwise_conv)

        def forward(self, x):
            return self.net(x)

    class TemporalBlock(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, norm_type, causal):
            super(TemporalBlock, self).__init__()
            conv1x1 = nn.Conv1d(in_channels, out_channels, 1, bias=False)
            prelu = nn.PReLU()
            norm = chose_norm(norm_type, out_channels)
            dsconv = DepthwiseSeparableConv(out_channels, in_channels, kernel_size, stride, padding, dilation,
                                            norm_type, causal)
            self.net = nn.Sequential(conv1x1, prelu, norm, dsconv)

        def forward(self, x):
            residual = x
            out = self.net(x)
            return out + residual  # look like w/o F.relu is better than w/ F.relu

    class TemporalConvNet(nn.Module):
        def __init__(self, N, B, H, P, X, R, C, norm_type="gLN", causal=False, mask_nonlinear='relu'):
            super(TemporalConvNet, self).__init__()
            self.C = C
            self.mask_nonlinear = mask_nonlinear
            layer_norm = ChannelwiseLayerNorm(N)
            bottleneck_conv1x1 = nn.Conv1d(N, B, 1, bias=False)
            repeats = []
            for r in range(R):
                blocks = []
                for x in range(X):
                    dilation = 2 ** x
                    padding = (P - 1) * dilation if causal else (P - 1) * dilation // 2
                    blocks += [TemporalBlock(B, H, P, stride=1, padding=padding, dilation=dilation,
                                             norm_type=norm_type, causal=causal)]
                repeats += [nn.Sequential(*blocks)]
            temporal_conv_net = nn.Sequential(*repeats)
            mask_conv1x1 = nn.Conv1d(B, C * N, 1, bias=False)
            self.network = nn.Sequential(layer_norm, bottleneck_conv1x1, temporal_conv_net, mask_conv1x1)

        def forward(self, mixture_w):
            M, N, K = mixture_w.size()
            score = self.network(mixture_w)  # [M, N, K] -> [M, C*N, K]
            score = score.view(M, self.C, N, K)  # [M, C*N, K] -> [M, C, N, K]
            if self.mask_nonlinear == 'softmax':
                est_mask = F.softmax(score, dim=1)
            elif self.mask_nonlinear == 'relu':
                est_mask = F.relu(score)
            return est_mask

    class ConvTasNet(nn.Module):
        def __init__(self, N, L, B, H, P, X, R, C, norm_type="gLN", causal=False, mask_nonlinear='relu'):
            super(ConvTasNet, self).__init__()
            self.N, self.L, self.C = N, L, C
            self.encoder = nn.Conv1d(1, N, kernel_size=L, stride=L // 2, bias=False)
            self.separator = TemporalConvNet(N, B, H, P, X, R, C, norm_type, causal, mask_nonlinear)
            self.basis_signals = nn.Linear(N, L, bias=False)
            for p in self.parameters():
                if p.dim() > 1:
                    nn.init.xavier_normal_(p)

        def forward(self, mixture):
            mixture_w = F.relu(self.encoder(torch.unsqueeze(mixture, 1)))  # [M, N, K]
            est_mask = self.separator(mixture_w)
            source_w = torch.unsqueeze(mixture_w, 1) * est_mask  # [M, C, N, K]
            source_w = torch.transpose(source_w, 2, 3)  # [M, C, K, N]
            est_source = self.basis_signals(source_w)  # [M, C, K, L]
            est_source = overlap_and_add(est_source, self.L // 2)  # M x C x T
            T_origin = mixture.size(-1)
            T_conv = est_source.size(-1)
            est_source = F.pad(est_source, (0, T_origin - T_conv))
            return est_source

    def get_mask(source, source_lengths):
        B, _, T = source.size()
        mask = source.new_ones((B, 1, T))
        for i in range(B):
            mask[i, :, source_lengths[i]:] = 0
        return mask

    def cal_si_snr_with_pit(source, estimate_source, source_lengths):
        assert source.size() == estimate_source.size()
        B, C, T = source.size()
        mask = get_mask(source, source_lengths)
        estimate_source *= mask
        num_samples = source_lengths.view(-1, 1, 1).float()  # [B, 1, 1]
        mean_target = torch.sum(source, dim=2, keepdim=True) / num_samples
        mean_estimate = torch.sum(estimate_source, dim=2, keepdim=True) / num_samples
        zero_mean_target = source - mean_target
        zero_mean_estimate = estimate_source - mean_estimate
        zero_mean_target *= mask
        zero_mean_estimate *= mask
        s_target = torch.unsqueeze(zero_mean_target, dim=1)  # [B, 1, C, T]
        s_estimate = torch.unsqueeze(zero_mean_estimate, dim=2)  # [B, C, 1, T]
        pair_wise_dot = torch.sum(s_estimate * s_target, dim=3, keepdim=True)  # [B, C, C, 1]
        s_target_energy = torch.sum(s_target ** 2, dim=3, keepdim=True) + EPS  # [B, 1, C, 1]
        pair_wise_proj = pair_wise_dot * s_target / s_target_energy  # [B, C, C, T]
        e_noise = s_estimate - pair_wise_proj  # [B, C, C, T]
        pair_wise_si_snr = torch.sum(pair_wise_proj ** 2, dim=3) / (torch.sum(e_noise ** 2, dim=3) + EPS)
        pair_wise_si_snr = 10 * torch.log10(pair_wise_si_snr + EPS)  # [B, C, C]
        perms = source.new_tensor(list(permutations(range(C))), dtype=torch.long)
        index = torch.unsqueeze(perms, 2)
        perms_one_hot = source.new_zeros((*perms.size(), C)).scatter_(2, index, 1)
        snr_set = torch.einsum('bij,pij->bp', [pair_wise_si_snr, perms_one_hot])
        max_snr_idx = torch.argmax(snr_set, dim=1)  # [B]
        max_snr, _ = torch.max(snr_set, dim=1, keepdim=True)
        max_snr /= C
        return max_snr, perms, max_snr_idx

    def reorder_source(source, perms, max_snr_idx):
        B, C, *_ = source.size()
        max_snr_perm = torch.index_select(perms, dim=0, index=max_snr_idx)
        reorder_source = torch.zeros_like(source)
        for b in range(B):
            for c in range(C):
                reorder_source[b, c] = source[b, max_snr_perm[b][c]]
        return reorder_source

    def cal_loss(source, estimate_source, source_lengths):
        max_snr, perms, max_snr_idx = cal_si_snr_with_pit(source, estimate_source, source_lengths)
        loss = 0 - torch.mean(max_snr)
        reorder_estimate_source = reorder_source(estimate_source, perms, max_snr_idx)
        return loss, max_snr, estimate_source, reorder_estimate_source

    losses, inits = [], {}
    for norm_type, causal, nonlinear in (("gLN", False, "relu"), ("cLN", True, "softmax")):
        model = ConvTasNet(N=6, L=4, B=4, H=5, P=3, X=2, R=1, C=2, norm_type=norm_type, causal=causal,
                           mask_nonlinear=nonlinear)
        inits[norm_type] = load(m, model, state and state[norm_type])
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.0)
        for step in range(2):
            padded_source = torch.tensor(normal(rng, 2, 2, 22))
            mixture_lengths = torch.tensor([22, 17])
            padded_mixture = padded_source.sum(1)
            padded_mixture[1, 17:] = 0
            estimate_source = model(padded_mixture)
            loss, max_snr, estimate_source, reorder_estimate_source = cal_loss(padded_source, estimate_source,
                                                                             mixture_lengths)
            optimizer.zero_grad()
            loss.backward()
            total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5)
            optimizer.step()
            losses += [loss.item(), float(total_norm), reorder_estimate_source.abs().sum().item()]
        losses += summary(model.parameters())
    return inits, losses


def test_conv_tasnet():
    compare(conv_tasnet)


# (c) rosinality's stylegan2-pytorch (model.py with op/*'s native fallbacks, train.py): make_kernel (k[None, :] *
# k[:, None], k /= k.sum()), upfirdn2d_native (a 6-d F.pad of eight values, negative pads cropping by slices, the
# kernel torch.flip(kernel, [0, 1]), a stride slice ::down_y), Upsample/Downsample/Blur buffers, EqualLinear with
# lr_mul and fused_leaky_relu's leaky_relu(input + bias) * sqrt(2), PixelNorm by torch.rsqrt, ModulatedConv2d
# (demodulation by rsqrt of weight.pow(2).sum([2, 3, 4]), conv2d with groups=batch, conv_transpose2d with
# groups=batch for upsampling), NoiseInjection given noise, ConstantInput's repeat, ToRGB's skip upsampling, style
# mixing by random.randint, the synthesis loop over zip(self.convs[::2], self.convs[1::2], noise[1::2], noise[2::2],
# self.to_rgbs); the discriminator's blurred strided EqualConv2d, ResBlocks / sqrt(2), minibatch stddev (var(0,
# unbiased=False), mean([2, 3, 4], keepdims=True)), train.py's requires_grad helper, d_logistic_loss by softplus,
# lazy R1 by autograd.grad(create_graph=True), the path length penalty through the generator's latents and its
# running mean, Adam with betas (0, 0.99) and the lazy regularization ratio, accumulate(g_ema, generator) through
# dict(named_parameters()) with mul_(decay).add_(..., alpha=1 - decay)
def stylegan2(m, state=None, phase="d"):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    autograd = import_module(torch.__name__ + ".autograd")
    import random
    torch.manual_seed(0)
    random.seed(0)
    rng = np.random.default_rng(6)
    size, style_dim, n_mlp, batch = 8, 8, 2, 2
    channels = {4: 4, 8: 4}

    def make_kernel(k):
        k = torch.tensor(k, dtype=torch.float32)
        if k.ndim == 1:
            k = k[None, :] * k[:, None]
        k /= k.sum()
        return k

    def upfirdn2d_native(input, kernel, up_x, up_y, down_x, down_y, pad_x0, pad_x1, pad_y0, pad_y1):
        _, channel, in_h, in_w = input.shape
        input = input.reshape(-1, in_h, in_w, 1)
        _, in_h, in_w, minor = input.shape
        kernel_h, kernel_w = kernel.shape
        out = input.view(-1, in_h, 1, in_w, 1, minor)
        out = F.pad(out, [0, 0, 0, up_x - 1, 0, 0, 0, up_y - 1])
        out = out.view(-1, in_h * up_y, in_w * up_x, minor)
        out = F.pad(out, [0, 0, max(pad_x0, 0), max(pad_x1, 0), max(pad_y0, 0), max(pad_y1, 0)])
        out = out[:, max(-pad_y0, 0): out.shape[1] - max(-pad_y1, 0),
                  max(-pad_x0, 0): out.shape[2] - max(-pad_x1, 0), :]
        out = out.permute(0, 3, 1, 2)
        out = out.reshape([-1, 1, in_h * up_y + pad_y0 + pad_y1, in_w * up_x + pad_x0 + pad_x1])
        w = torch.flip(kernel, [0, 1]).view(1, 1, kernel_h, kernel_w)
        out = F.conv2d(out, w)
        out = out.reshape(-1, minor, in_h * up_y + pad_y0 + pad_y1 - kernel_h + 1,
                          in_w * up_x + pad_x0 + pad_x1 - kernel_w + 1)
        out = out.permute(0, 2, 3, 1)
        out = out[:, ::down_y, ::down_x, :]
        out_h = (in_h * up_y + pad_y0 + pad_y1 - kernel_h + down_y) // down_y
        out_w = (in_w * up_x + pad_x0 + pad_x1 - kernel_w + down_x) // down_x
        return out.view(-1, channel, out_h, out_w)

    def upfirdn2d(input, kernel, up=1, down=1, pad=(0, 0)):
        return upfirdn2d_native(input, kernel, up, up, down, down, pad[0], pad[1], pad[0], pad[1])

    def fused_leaky_relu(input, bias, negative_slope=0.2, scale=2 ** 0.5):
        rest_dim = [1] * (input.ndim - bias.ndim - 1)
        return F.leaky_relu(input + bias.view(1, bias.shape[0], *rest_dim), negative_slope=negative_slope) * scale

    class FusedLeakyReLU(nn.Module):
        def __init__(self, channel, bias=True, negative_slope=0.2, scale=2 ** 0.5):
            super().__init__()
            self.bias = nn.Parameter(torch.zeros(channel))
            self.negative_slope = negative_slope
            self.scale = scale

        def forward(self, input):
            return fused_leaky_relu(input, self.bias, self.negative_slope, self.scale)

    class PixelNorm(nn.Module):
        def forward(self, input):
            return input * torch.rsqrt(torch.mean(input ** 2, dim=1, keepdim=True) + 1e-8)

    class Upsample(nn.Module):
        def __init__(self, kernel, factor=2):
            super().__init__()
            self.factor = factor
            kernel = make_kernel(kernel) * (factor ** 2)
            self.register_buffer("kernel", kernel)
            p = kernel.shape[0] - factor
            self.pad = ((p + 1) // 2 + factor - 1, p // 2)

        def forward(self, input):
            return upfirdn2d(input, self.kernel, up=self.factor, down=1, pad=self.pad)

    class Blur(nn.Module):
        def __init__(self, kernel, pad, upsample_factor=1):
            super().__init__()
            kernel = make_kernel(kernel)
            if upsample_factor > 1:
                kernel = kernel * (upsample_factor ** 2)
            self.register_buffer("kernel", kernel)
            self.pad = pad

        def forward(self, input):
            return upfirdn2d(input, self.kernel, pad=self.pad)

    class EqualConv2d(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, stride=1, padding=0, bias=True):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(out_channel, in_channel, kernel_size, kernel_size))
            self.scale = 1 / math.sqrt(in_channel * kernel_size ** 2)
            self.stride, self.padding = stride, padding
            self.bias = nn.Parameter(torch.zeros(out_channel)) if bias else None

        def forward(self, input):
            return F.conv2d(input, self.weight * self.scale, bias=self.bias, stride=self.stride,
                            padding=self.padding)

    class EqualLinear(nn.Module):
        def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
            self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init)) if bias else None
            self.activation = activation
            self.scale = (1 / math.sqrt(in_dim)) * lr_mul
            self.lr_mul = lr_mul

        def forward(self, input):
            if self.activation:
                out = F.linear(input, self.weight * self.scale)
                out = fused_leaky_relu(out, self.bias * self.lr_mul)
            else:
                out = F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)
            return out

    class ModulatedConv2d(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True, upsample=False,
                     blur_kernel=[1, 3, 3, 1]):
            super().__init__()
            self.eps = 1e-8
            self.kernel_size, self.in_channel, self.out_channel = kernel_size, in_channel, out_channel
            self.upsample = upsample
            if upsample:
                factor = 2
                p = (len(blur_kernel) - factor) - (kernel_size - 1)
                pad0 = (p + 1) // 2 + factor - 1
                pad1 = p // 2 + 1
                self.blur = Blur(blur_kernel, pad=(pad0, pad1), upsample_factor=factor)
            fan_in = in_channel * kernel_size ** 2
            self.scale = 1 / math.sqrt(fan_in)
            self.padding = kernel_size // 2
            self.weight = nn.Parameter(torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
            self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)
            self.demodulate = demodulate

        def forward(self, input, style):
            batch, in_channel, height, width = input.shape
            style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
            weight = self.scale * self.weight * style
            if self.demodulate:
                demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
                weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
            weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size)
            if self.upsample:
                input = input.view(1, batch * in_channel, height, width)
                weight = weight.view(batch, self.out_channel, in_channel, self.kernel_size, self.kernel_size)
                weight = weight.transpose(1, 2).reshape(batch * in_channel, self.out_channel, self.kernel_size,
                                                        self.kernel_size)
                out = F.conv_transpose2d(input, weight, padding=0, stride=2, groups=batch)
                _, _, height, width = out.shape
                out = out.view(batch, self.out_channel, height, width)
                out = self.blur(out)
            else:
                input = input.view(1, batch * in_channel, height, width)
                out = F.conv2d(input, weight, padding=self.padding, groups=batch)
                _, _, height, width = out.shape
                out = out.view(batch, self.out_channel, height, width)
            return out

    class NoiseInjection(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(1))

        def forward(self, image, noise=None):
            if noise is None:
                batch, _, height, width = image.shape
                noise = image.new_empty(batch, 1, height, width).normal_()
            return image + self.weight * noise

    class ConstantInput(nn.Module):
        def __init__(self, channel, size=4):
            super().__init__()
            self.input = nn.Parameter(torch.randn(1, channel, size, size))

        def forward(self, input):
            batch = input.shape[0]
            return self.input.repeat(batch, 1, 1, 1)

    class StyledConv(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, style_dim, upsample=False, demodulate=True):
            super().__init__()
            self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim, upsample=upsample,
                                        demodulate=demodulate)
            self.noise = NoiseInjection()
            self.activate = FusedLeakyReLU(out_channel)

        def forward(self, input, style, noise=None):
            out = self.conv(input, style)
            out = self.noise(out, noise=noise)
            return self.activate(out)

    class ToRGB(nn.Module):
        def __init__(self, in_channel, style_dim, upsample=True, blur_kernel=[1, 3, 3, 1]):
            super().__init__()
            if upsample:
                self.upsample = Upsample(blur_kernel)
            self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
            self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

        def forward(self, input, style, skip=None):
            out = self.conv(input, style)
            out = out + self.bias
            if skip is not None:
                skip = self.upsample(skip)
                out = out + skip
            return out

    class Generator(nn.Module):
        def __init__(self, size, style_dim, n_mlp, lr_mlp=0.01):
            super().__init__()
            self.style_dim = style_dim
            layers = [PixelNorm()]
            for i in range(n_mlp):
                layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp, activation="fused_lrelu"))
            self.style = nn.Sequential(*layers)
            self.channels = channels
            self.input = ConstantInput(self.channels[4])
            self.conv1 = StyledConv(self.channels[4], self.channels[4], 3, style_dim)
            self.to_rgb1 = ToRGB(self.channels[4], style_dim, upsample=False)
            self.log_size = int(math.log(size, 2))
            self.num_layers = (self.log_size - 2) * 2 + 1
            self.convs = nn.ModuleList()
            self.to_rgbs = nn.ModuleList()
            in_channel = self.channels[4]
            for i in range(3, self.log_size + 1):
                out_channel = self.channels[2 ** i]
                self.convs.append(StyledConv(in_channel, out_channel, 3, style_dim, upsample=True))
                self.convs.append(StyledConv(out_channel, out_channel, 3, style_dim))
                self.to_rgbs.append(ToRGB(out_channel, style_dim))
                in_channel = out_channel
            self.n_latent = self.log_size * 2 - 2

        def forward(self, styles, return_latents=False, noise=None, randomize_noise=True):
            styles = [self.style(s) for s in styles]
            if len(styles) < 2:
                inject_index = self.n_latent
                if styles[0].ndim < 3:
                    latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
                else:
                    latent = styles[0]
            else:
                inject_index = random.randint(1, self.n_latent - 1)
                latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
                latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)
                latent = torch.cat([latent, latent2], 1)
            out = self.input(latent)
            out = self.conv1(out, latent[:, 0], noise=noise[0])
            skip = self.to_rgb1(out, latent[:, 1])
            i = 1
            for conv1, conv2, noise1, noise2, to_rgb in zip(self.convs[::2], self.convs[1::2], noise[1::2],
                                                            noise[2::2], self.to_rgbs):
                out = conv1(out, latent[:, i], noise=noise1)
                out = conv2(out, latent[:, i + 1], noise=noise2)
                skip = to_rgb(out, latent[:, i + 2], skip)
                i += 2
            image = skip
            if return_latents:
                return image, latent
            return image, None

    class ConvLayer(nn.Sequential):
        def __init__(self, in_channel, out_channel, kernel_size, downsample=False, blur_kernel=[1, 3, 3, 1],
                     bias=True, activate=True):
            layers = []
            if downsample:
                factor = 2
                p = (len(blur_kernel) - factor) + (kernel_size - 1)
                pad0 = (p + 1) // 2
                pad1 = p // 2
                layers.append(Blur(blur_kernel, pad=(pad0, pad1)))
                stride = 2
                self.padding = 0
            else:
                stride = 1
                self.padding = kernel_size // 2
            layers.append(EqualConv2d(in_channel, out_channel, kernel_size, padding=self.padding, stride=stride,
                                      bias=bias and not activate))
            if activate:
                layers.append(FusedLeakyReLU(out_channel, bias=bias))
            super().__init__(*layers)

    class ResBlock(nn.Module):
        def __init__(self, in_channel, out_channel, blur_kernel=[1, 3, 3, 1]):
            super().__init__()
            self.conv1 = ConvLayer(in_channel, in_channel, 3)
            self.conv2 = ConvLayer(in_channel, out_channel, 3, downsample=True)
            self.skip = ConvLayer(in_channel, out_channel, 1, downsample=True, activate=False, bias=False)

        def forward(self, input):
            out = self.conv1(input)
            out = self.conv2(out)
            skip = self.skip(input)
            return (out + skip) / math.sqrt(2)

    class Discriminator(nn.Module):
        def __init__(self, size):
            super().__init__()
            convs = [ConvLayer(3, channels[size], 1)]
            log_size = int(math.log(size, 2))
            in_channel = channels[size]
            for i in range(log_size, 2, -1):
                out_channel = channels[2 ** (i - 1)]
                convs.append(ResBlock(in_channel, out_channel))
                in_channel = out_channel
            self.convs = nn.Sequential(*convs)
            self.stddev_group = 2
            self.stddev_feat = 1
            self.final_conv = ConvLayer(in_channel + 1, channels[4], 3)
            self.final_linear = nn.Sequential(EqualLinear(channels[4] * 4 * 4, channels[4], activation="fused_lrelu"),
                                              EqualLinear(channels[4], 1))

        def forward(self, input):
            out = self.convs(input)
            batch, channel, height, width = out.shape
            group = min(batch, self.stddev_group)
            stddev = out.view(group, -1, self.stddev_feat, channel // self.stddev_feat, height, width)
            stddev = torch.sqrt(stddev.var(0, unbiased=False) + 1e-8)
            stddev = stddev.mean([2, 3, 4], keepdims=True).squeeze(2)
            stddev = stddev.repeat(group, 1, height, width)
            out = torch.cat([out, stddev], 1)
            out = self.final_conv(out)
            out = out.view(batch, -1)
            return self.final_linear(out)

    def requires_grad(model, flag=True):
        for p in model.parameters():
            p.requires_grad = flag

    def accumulate(model1, model2, decay=0.999):
        par1 = dict(model1.named_parameters())
        par2 = dict(model2.named_parameters())
        for k in par1.keys():
            par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)

    def d_logistic_loss(real_pred, fake_pred):
        real_loss = F.softplus(-real_pred)
        fake_loss = F.softplus(fake_pred)
        return real_loss.mean() + fake_loss.mean()

    def d_r1_loss(real_pred, real_img):
        grad_real, = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
        grad_penalty = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()
        return grad_penalty

    def g_nonsaturating_loss(fake_pred):
        return F.softplus(-fake_pred).mean()

    def g_path_regularize(fake_img, latents, mean_path_length, path_noise, decay=0.01):
        noise = torch.tensor(path_noise) / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
        grad, = autograd.grad(outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True)
        path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))
        path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)
        path_penalty = (path_lengths - path_mean).pow(2).mean()
        return path_penalty, path_mean.detach(), path_lengths

    def noises():
        return [torch.tensor(normal(rng, batch, 1, s, s)) for s in (4, 8, 8)]

    generator = Generator(size, style_dim, n_mlp)
    discriminator = Discriminator(size)
    g_ema = Generator(size, style_dim, n_mlp)
    g_ema.eval()
    both = nn.ModuleList([generator, discriminator])
    init = load(m, both, state)
    for layer in [generator.conv1, *generator.convs]:  # the noise strengths start at zero; a trained model's are not
        layer.noise.weight.data.fill_(0.1)
    accumulate(g_ema, generator, 0)
    g_reg_ratio = 4 / (4 + 1)
    d_reg_ratio = 16 / (16 + 1)
    g_optim = torch.optim.Adam(generator.parameters(), lr=0.002 * g_reg_ratio, betas=(0 ** g_reg_ratio, 0.99 ** g_reg_ratio))
    d_optim = torch.optim.Adam(discriminator.parameters(), lr=0.002 * d_reg_ratio, betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio))
    mean_path_length = 0
    losses = []
    real_img = torch.tensor(normal(rng, batch, 3, size, size))
    if phase == "d":  # the discriminator's step and its lazy R1 step
        requires_grad(generator, False)
        requires_grad(discriminator, True)
        noise = [torch.tensor(normal(rng, batch, style_dim)) for _ in range(2)]
        fake_img, _ = generator(noise, noise=noises())
        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img)
        d_loss = d_logistic_loss(real_pred, fake_pred)
        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()
        real_img.requires_grad = True
        real_pred = discriminator(real_img)
        r1_loss = d_r1_loss(real_pred, real_img)
        discriminator.zero_grad()
        (10 / 2 * r1_loss * 16 + 0 * real_pred[0]).backward()
        d_optim.step()
        losses += [d_loss.item(), r1_loss.item()]
    else:  # the generator's step, its lazy path length step, the EMA and a sample of it
        requires_grad(generator, True)
        requires_grad(discriminator, False)
        noise = [torch.tensor(normal(rng, batch, style_dim))]
        fake_img, _ = generator(noise, noise=noises())
        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)
        generator.zero_grad()
        g_loss.backward()
        g_optim.step()
        noise = [torch.tensor(normal(rng, batch // 2 + 1, style_dim))]
        fake_img, latents = generator(noise, return_latents=True, noise=[n[:2] for n in noises()])
        path_loss, mean_path_length, path_lengths = g_path_regularize(fake_img, latents, mean_path_length,
                                                                      normal(rng, *fake_img.shape))
        generator.zero_grad()
        weighted_path_loss = 2 * 4 * path_loss
        weighted_path_loss += 0 * fake_img[0, 0, 0, 0]
        weighted_path_loss.backward()
        g_optim.step()
        accumulate(g_ema, generator, 0.5 ** (32 / (10 * 1000)))
        losses += [g_loss.item(), path_loss.item(), mean_path_length.item(), path_lengths.mean().item()]
        with torch.no_grad():
            sample, _ = g_ema([torch.tensor(normal(rng, batch, style_dim))], noise=noises())
        losses += [sample.sum().item(), sample.pow(2).sum().item()]
    return init, losses + summary(both.parameters()) + summary(g_ema.parameters())


def test_stylegan2_discriminator_r1():
    compare(stylegan2, phase="d")


def test_stylegan2_generator_path_length_ema():
    compare(stylegan2, phase="g")


# (d) lucidrains' reformer-pytorch (reformer_pytorch/reversible.py, reformer_pytorch.py): Deterministic records
# torch.get_rng_state() (and, once torch.cuda._initialized, get_device_states(*args) from torch.utils.checkpoint) and
# replays it under torch.random.fork_rng with set_rng_state / set_device_states; ReversibleBlock's forward under
# no_grad on torch.chunk halves and its backward_pass (requires_grad set on chunks of the saved output, backward
# under enable_grad by torch.autograd.backward(gy1, dy2), x2.grad read and set to None); _ReversibleFunction (an
# autograd Function given a ModuleList and a dict of kwargs, ctx.y kept, the blocks walked in [::-1]); the
# IrreversibleBlock twin beside it; x = torch.cat([x, x], dim=-1) and torch.stack(x.chunk(2, dim=-1)).mean(dim=0);
# a Chunk(FeedForward) by x.chunk and torch.cat, its hand-written tanh GELU, attention by einsum with a causal
# triu_ mask and masked_fill_ of -torch.finfo(dtype).max, the autoregressive wrapper's cross_entropy on
# logits.transpose(1, 2). With dropout, the reversible backward's gradients equal the irreversible twin's from the
# same seed in each library; the runs compared with torch's then set each Dropout's p to 0
def reformer_reversible(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    Function = import_module(torch.__name__ + ".autograd.function").Function
    get_device_states = import_module(torch.__name__ + ".utils.checkpoint").get_device_states
    set_device_states = import_module(torch.__name__ + ".utils.checkpoint").set_device_states
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    num_tokens, dim, depth, heads, seq_len = 11, 8, 2, 2, 4

    class Deterministic(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.cpu_state = None
            self.cuda_in_fwd = None
            self.gpu_devices = None
            self.gpu_states = None

        def record_rng(self, *args):
            self.cpu_state = torch.get_rng_state()
            if torch.cuda._initialized:
                self.cuda_in_fwd = True
                self.gpu_devices, self.gpu_states = get_device_states(*args)

        def forward(self, *args, record_rng=False, set_rng=False, **kwargs):
            if record_rng:
                self.record_rng(*args)
            if not set_rng:
                return self.net(*args, **kwargs)
            rng_devices = []
            if self.cuda_in_fwd:
                rng_devices = self.gpu_devices
            with torch.random.fork_rng(devices=rng_devices, enabled=True):
                torch.set_rng_state(self.cpu_state)
                if self.cuda_in_fwd:
                    set_device_states(self.gpu_devices, self.gpu_states)
                return self.net(*args, **kwargs)

    class ReversibleBlock(nn.Module):
        def __init__(self, f, g):
            super().__init__()
            self.f = Deterministic(f)
            self.g = Deterministic(g)

        def forward(self, x, f_args={}, g_args={}):
            x1, x2 = torch.chunk(x, 2, dim=2)
            y1, y2 = None, None
            with torch.no_grad():
                y1 = x1 + self.f(x2, record_rng=self.training, **f_args)
                y2 = x2 + self.g(y1, record_rng=self.training, **g_args)
            return torch.cat([y1, y2], dim=2)

        def backward_pass(self, y, dy, f_args={}, g_args={}):
            y1, y2 = torch.chunk(y, 2, dim=2)
            del y
            dy1, dy2 = torch.chunk(dy, 2, dim=2)
            del dy
            with torch.enable_grad():
                y1.requires_grad = True
                gy1 = self.g(y1, set_rng=True, **g_args)
                torch.autograd.backward(gy1, dy2)
            with torch.no_grad():
                x2 = y2 - gy1
                del y2, gy1
                dx1 = dy1 + y1.grad
                del dy1
                y1.grad = None
            with torch.enable_grad():
                x2.requires_grad = True
                fx2 = self.f(x2, set_rng=True, **f_args)
                torch.autograd.backward(fx2, dx1, retain_graph=True)
            with torch.no_grad():
                x1 = y1 - fx2
                del y1, fx2
                dx2 = dy2 + x2.grad
                del dy2
                x2.grad = None
                x = torch.cat([x1, x2.detach()], dim=2)
                dx = torch.cat([dx1, dx2], dim=2)
            return x, dx

    class IrreversibleBlock(nn.Module):
        def __init__(self, f, g):
            super().__init__()
            self.f = f
            self.g = g

        def forward(self, x, f_args, g_args):
            x1, x2 = torch.chunk(x, 2, dim=2)
            y1 = x1 + self.f(x2, **f_args)
            y2 = x2 + self.g(y1, **g_args)
            return torch.cat([y1, y2], dim=2)

    class _ReversibleFunction(Function):
        @staticmethod
        def forward(ctx, x, blocks, kwargs):
            ctx.kwargs = kwargs
            for block in blocks:
                x = block(x, **kwargs)
            ctx.y = x.detach()
            ctx.blocks = blocks
            return x

        @staticmethod
        def backward(ctx, dy):
            y = ctx.y
            kwargs = ctx.kwargs
            for block in ctx.blocks[::-1]:
                y, dy = block.backward_pass(y, dy, **kwargs)
            return dy, None, None

    class ReversibleSequence(nn.Module):
        def __init__(self, blocks, reverse_thres=0):
            super().__init__()
            self.reverse_thres = reverse_thres
            self.blocks = nn.ModuleList([ReversibleBlock(f, g) for f, g in blocks])
            self.irrev_blocks = nn.ModuleList([IrreversibleBlock(f=f, g=g) for f, g in blocks])

        def forward(self, x, **kwargs):
            reverse = x.shape[1] > self.reverse_thres
            blocks = self.blocks if reverse else self.irrev_blocks
            block_kwargs = {'f_args': {}, 'g_args': {}}
            if not reverse:
                for block in blocks:
                    x = block(x, **block_kwargs)
                return x
            return _ReversibleFunction.apply(x, blocks, block_kwargs)

    class GELU_(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))

    class Chunk(nn.Module):
        def __init__(self, chunks, fn, along_dim=-1):
            super().__init__()
            self.dim = along_dim
            self.chunks = chunks
            self.fn = fn

        def forward(self, x, **kwargs):
            if self.chunks == 1:
                return self.fn(x, **kwargs)
            chunks = x.chunk(self.chunks, dim=self.dim)
            return torch.cat([self.fn(c, **kwargs) for c in chunks], dim=self.dim)

    class PreNorm(nn.Module):
        def __init__(self, norm_class, dim, fn):
            super().__init__()
            self.norm = norm_class(dim)
            self.fn = fn

        def forward(self, x, **kwargs):
            x = self.norm(x)
            return self.fn(x, **kwargs)

    class FeedForward(nn.Module):
        def __init__(self, dim, mult=2, dropout=0.):
            super().__init__()
            self.w1 = nn.Linear(dim, dim * mult)
            self.act = GELU_()
            self.dropout = nn.Dropout(dropout)
            self.w2 = nn.Linear(dim * mult, dim)

        def forward(self, x, **kwargs):
            x = self.w1(x)
            x = self.act(x)
            x = self.dropout(x)
            return self.w2(x)

    class FullQKAttention(nn.Module):
        def __init__(self, dim, heads, causal=True, dropout=0.):
            super().__init__()
            self.heads, self.causal = heads, causal
            self.scale = (dim // heads) ** -0.5
            self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
            self.to_out = nn.Linear(dim, dim)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x, **kwargs):
            b, n, _, h = *x.shape, self.heads
            q, k, v = self.to_qkv(x).chunk(3, dim=-1)
            q, k, v = (t.reshape(b, n, h, -1).transpose(1, 2) for t in (q, k, v))
            dots = torch.einsum('bhid,bhjd->bhij', q, k) * self.scale
            if self.causal:
                i, j = dots.shape[-2:]
                mask = torch.ones(i, j, device=x.device, dtype=torch.bool).triu_(j - i + 1)
                dots.masked_fill_(mask, -torch.finfo(dots.dtype).max)
            attn = dots.softmax(dim=-1)
            attn = self.dropout(attn)
            out = torch.einsum('bhij,bhjd->bhid', attn, v)
            out = out.transpose(1, 2).reshape(b, n, -1)
            return self.to_out(out)

    class ReformerLM(nn.Module):
        def __init__(self, num_tokens, dim, depth, max_seq_len, heads, ff_chunks=2, dropout=0.1):
            super().__init__()
            self.token_emb = nn.Embedding(num_tokens, dim)
            self.pos_emb = nn.Embedding(max_seq_len, dim)
            blocks = []
            for _ in range(depth):
                attn = FullQKAttention(dim, heads, dropout=dropout)
                parallel_net = FeedForward(dim, dropout=dropout)
                f = PreNorm(nn.LayerNorm, dim, attn)
                g = PreNorm(nn.LayerNorm, dim, Chunk(ff_chunks, parallel_net, along_dim=-2))
                blocks.append(nn.ModuleList([f, g]))
            self.layers = ReversibleSequence(nn.ModuleList(blocks))
            self.norm = nn.LayerNorm(dim)
            self.to_logits = nn.Linear(dim, num_tokens)

        def forward(self, x, **kwargs):
            t = torch.arange(x.shape[1], device=x.device)
            x = self.token_emb(x) + self.pos_emb(t)
            x = torch.cat([x, x], dim=-1)
            x = self.layers(x, **kwargs)
            x = torch.stack(x.chunk(2, dim=-1)).mean(dim=0)
            return self.to_logits(self.norm(x))

    model = ReformerLM(num_tokens, dim, depth, seq_len, heads)
    init = load(m, model, state)

    def loss_of(seq):
        xi, xo = seq[:, :-1], seq[:, 1:]
        out = model(xi)
        return F.cross_entropy(out.transpose(1, 2), xo)

    def grads():
        return [np.array(p.grad.detach().cpu().numpy()) for p in model.parameters()]

    seq = torch.tensor(rng.integers(0, num_tokens, (2, seq_len + 1)))
    model.train()
    results = []
    for reverse_thres in (0, 10 ** 6):  # reversible, then irreversible, from the same seed
        model.layers.reverse_thres = reverse_thres
        model.zero_grad()
        torch.manual_seed(1)
        loss = loss_of(seq)
        loss.backward()
        results.append((loss.item(), grads()))
    (loss_rev, g_rev), (loss_irr, g_irr) = results
    losses = [loss_rev - loss_irr, max(float(np.abs(a - b).max()) for a, b in zip(g_rev, g_irr))]
    assert max(abs(v) for v in losses) < 1e-5, losses
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    model.layers.reverse_thres = 0
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1):
        seq = torch.tensor(rng.integers(0, num_tokens, (2, seq_len + 1)))
        loss = loss_of(seq)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_reformer_reversible():
    compare(reformer_reversible)
