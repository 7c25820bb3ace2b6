"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports
alone, as test_ported_scripts.py: michuanhaohao's reid-strong-baseline (euclidean_dist by the old addmm_(1, -2, ...),
batch-hard mining, TripletLoss on MarginRankingLoss, CrossEntropyLabelSmooth) over filipradenovic's GeM pooling;
hszhao's PSPNet pyramid pooling module; torchvision's FeaturePyramidNetwork written inline; LeeJunHyun's Attention
U-Net with a focal Tversky loss; heykeetae's SAGAN self-attention with christiancosgrove's SpectralNorm wrapper and
the hinge loss; naoto0804's AdaIN; AlexHex7's non-local block, Andrew-Qibin's coordinate attention and SimAM;
Alibaba's asymmetric loss, PolyLoss and MultiLabelSoftMarginLoss; Deep CORAL and the MMD loss of domain adaptation;
Aladdin Persson's Transformer from scratch and YOLOv1 loss; a class-conditional BatchNorm with FiLM; karpathy's
pytorch-normalizing-flows (AffineHalfFlow under a logistic prior of torch.distributions); timm's JsdCrossEntropy
of AugMix; HRNet's OhemCrossEntropy. Each runs in
tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed
into a few numbers, agree. Numpy draws what a script draws; shapes are tiny and runs take one step. Each script
seeds torch first, as its source's main does, so that its initial weights do not hang on the tests run before it: at
another state, one of Attention U-Net's BatchNorm outputs fell within fp32's rounding of ReLU's kink (1.7e-7), and
the flipped gradient moved every weight by 10%; at these seeds every ReLU input keeps 2.8e-5 or more from zero."""
import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) michuanhaohao/reid-strong-baseline's layers/triplet_loss.py and a GeM head: normalize(x, axis) by
# torch.norm(x, 2, axis, keepdim=True).expand_as(x), euclidean_dist by xx + yy and the deprecated dist.addmm_(1, -2, x,
# y.t()), hard_example_mining (is_pos by labels.expand(N, N).eq(labels.expand(N, N).t()), torch.max and torch.min of
# dist_mat[is_pos].contiguous().view(N, -1)), TripletLoss calling MarginRankingLoss with y =
# dist_an.new().resize_as_(dist_an).fill_(1), CrossEntropyLabelSmooth by scatter_ of targets.unsqueeze(1).data.cpu();
# filipradenovic's cnnimageretrieval gem() (x.clamp(min=eps).pow(p) average-pooled over (x.size(-2), x.size(-1)),
# pow(1./p)) with GeM's learnable p and __repr__ by self.p.data.tolist()[0]; an Adam step on both losses
def reid_gem(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def normalize(x, axis=-1):
        x = 1. * x / (torch.norm(x, 2, axis, keepdim=True).expand_as(x) + 1e-12)
        return x

    def euclidean_dist(x, y):
        m_, n = x.size(0), y.size(0)
        xx = torch.pow(x, 2).sum(1, keepdim=True).expand(m_, n)
        yy = torch.pow(y, 2).sum(1, keepdim=True).expand(n, m_).t()
        dist = xx + yy
        dist.addmm_(1, -2, x, y.t())
        dist = dist.clamp(min=1e-12).sqrt()  # for numerical stability
        return dist

    def hard_example_mining(dist_mat, labels, return_inds=False):
        assert len(dist_mat.size()) == 2
        assert dist_mat.size(0) == dist_mat.size(1)
        N = dist_mat.size(0)

        # shape [N, N]
        is_pos = labels.expand(N, N).eq(labels.expand(N, N).t())
        is_neg = labels.expand(N, N).ne(labels.expand(N, N).t())

        # `dist_ap` means distance(anchor, positive)
        # both `dist_ap` and `relative_p_inds` with shape [N, 1]
        dist_ap, relative_p_inds = torch.max(
            dist_mat[is_pos].contiguous().view(N, -1), 1, keepdim=True)
        # `dist_an` means distance(anchor, negative)
        # both `dist_an` and `relative_n_inds` with shape [N, 1]
        dist_an, relative_n_inds = torch.min(
            dist_mat[is_neg].contiguous().view(N, -1), 1, keepdim=True)
        # shape [N]
        dist_ap = dist_ap.squeeze(1)
        dist_an = dist_an.squeeze(1)
        return dist_ap, dist_an

    class TripletLoss(object):
        """Modified from Tong Xiao's open-reid (https://github.com/Cysu/open-reid).
        Related Triplet Loss theory can be found in paper 'In Defense of the Triplet
        Loss for Person Re-Identification'."""

        def __init__(self, margin=None):
            self.margin = margin
            if margin is not None:
                self.ranking_loss = nn.MarginRankingLoss(margin=margin)
            else:
                self.ranking_loss = nn.SoftMarginLoss()

        def __call__(self, global_feat, labels, normalize_feature=False):
            if normalize_feature:
                global_feat = normalize(global_feat, axis=-1)
            dist_mat = euclidean_dist(global_feat, global_feat)
            dist_ap, dist_an = hard_example_mining(
                dist_mat, labels)
            y = dist_an.new().resize_as_(dist_an).fill_(1)
            if self.margin is not None:
                loss = self.ranking_loss(dist_an, dist_ap, y)
            else:
                loss = self.ranking_loss(dist_an - dist_ap, y)
            return loss, dist_ap, dist_an

    class CrossEntropyLabelSmooth(nn.Module):
        def __init__(self, num_classes, epsilon=0.1, use_gpu=True):
            super(CrossEntropyLabelSmooth, self).__init__()
            self.num_classes = num_classes
            self.epsilon = epsilon
            self.use_gpu = use_gpu
            self.logsoftmax = nn.LogSoftmax(dim=1)

        def forward(self, inputs, targets):
            log_probs = self.logsoftmax(inputs)
            targets = torch.zeros(log_probs.size()).scatter_(1, targets.unsqueeze(1).data.cpu(), 1)
            if self.use_gpu: targets = targets.cuda()
            targets = (1 - self.epsilon) * targets + self.epsilon / self.num_classes
            loss = (- targets * log_probs).mean(0).sum()
            return loss

    def gem(x, p=3, eps=1e-6):
        return F.avg_pool2d(x.clamp(min=eps).pow(p), (x.size(-2), x.size(-1))).pow(1./p)

    class GeM(nn.Module):

        def __init__(self, p=3, eps=1e-6):
            super(GeM, self).__init__()
            self.p = nn.Parameter(torch.ones(1)*p)
            self.eps = eps

        def forward(self, x):
            return gem(x, p=self.p, eps=self.eps)

        def __repr__(self):
            return self.__class__.__name__ + '(' + 'p=' + '{:.4f}'.format(self.p.data.tolist()[0]) + ', ' + 'eps=' + str(self.eps) + ')'

    class Baseline(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.base = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            self.gap = GeM()
            self.bottleneck = nn.BatchNorm1d(8)
            self.bottleneck.bias.requires_grad_(False)  # no shift
            self.classifier = nn.Linear(8, num_classes, bias=False)

        def forward(self, x):
            global_feat = self.gap(self.base(x))
            global_feat = global_feat.view(global_feat.shape[0], -1)
            feat = self.bottleneck(global_feat)
            return self.classifier(feat), global_feat

    use_gpu = torch.cuda.is_available()
    model = Baseline(3)
    init = load(m, model, state)
    assert repr(model.gap) == 'GeM(p=3.0000, eps=1e-06)'
    triplet = TripletLoss(0.3)
    xent = CrossEntropyLabelSmooth(num_classes=3, use_gpu=use_gpu)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    img = torch.tensor(normal(rng, 6, 3, 5, 5))
    target = torch.tensor([0, 0, 1, 1, 2, 2])
    losses = []
    for _ in range(1):
        score, feat = model(img)
        loss = xent(score, target) + triplet(feat, target)[0]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        acc = (score.max(1)[1] == target).float().mean()
        losses += [loss.item(), acc.item()]
    _, dist_ap, dist_an = triplet(feat.detach(), target, normalize_feature=True)
    losses += dist_ap.tolist() + dist_an.tolist()
    return init, losses + summary(model.parameters())


def test_reid_gem():
    compare(reid_gem)


# (b) hszhao/semseg's PSPNet pyramid pooling module (PPM: one Sequential of AdaptiveAvgPool2d(bin), a 1x1 conv,
# BatchNorm and ReLU(inplace=True) per bin in a ModuleList, each upsampled by F.interpolate(f(x), x_size[2:],
# mode='bilinear', align_corners=True) and torch.cat(out, 1)), the classifier with Dropout2d(p=dropout), the output
# interpolated back to the input, the aux head and main_loss + 0.4 * aux_loss with CrossEntropyLoss(ignore_index=255)
def psp_ppm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(1)
    rng = np.random.default_rng(1)

    class PPM(nn.Module):
        def __init__(self, in_dim, reduction_dim, bins):
            super(PPM, self).__init__()
            self.features = []
            for bin in bins:
                self.features.append(nn.Sequential(
                    nn.AdaptiveAvgPool2d(bin),
                    nn.Conv2d(in_dim, reduction_dim, kernel_size=1, bias=False),
                    nn.BatchNorm2d(reduction_dim),
                    nn.ReLU(inplace=True)
                ))
            self.features = nn.ModuleList(self.features)

        def forward(self, x):
            x_size = x.size()
            out = [x]
            for f in self.features:
                out.append(F.interpolate(f(x), x_size[2:], mode='bilinear', align_corners=True))
            return torch.cat(out, 1)

    class PSPNet(nn.Module):
        def __init__(self, bins=(1, 2, 3, 6), dropout=0.1, classes=2, zoom_factor=8, use_ppm=True,
                     criterion=nn.CrossEntropyLoss(ignore_index=255)):
            super(PSPNet, self).__init__()
            assert 2048 % len(bins) == 0
            assert classes > 1
            assert zoom_factor in [1, 2, 4, 8]
            self.zoom_factor = zoom_factor
            self.use_ppm = use_ppm
            self.criterion = criterion
            self.layer0 = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True))
            self.layer3 = nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(inplace=True))
            self.layer4 = nn.Sequential(nn.Conv2d(6, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            fea_dim = 8
            if use_ppm:
                self.ppm = PPM(fea_dim, int(fea_dim/len(bins)), bins)
                fea_dim *= 2
            self.cls = nn.Sequential(
                nn.Conv2d(fea_dim, 8, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(8),
                nn.ReLU(inplace=True),
                nn.Dropout2d(p=dropout),
                nn.Conv2d(8, classes, kernel_size=1)
            )
            if self.training:
                self.aux = nn.Sequential(
                    nn.Conv2d(6, 4, kernel_size=3, padding=1, bias=False),
                    nn.BatchNorm2d(4),
                    nn.ReLU(inplace=True),
                    nn.Dropout2d(p=dropout),
                    nn.Conv2d(4, classes, kernel_size=1)
                )

        def forward(self, x, y=None):
            x_size = x.size()
            h = int((x_size[2] - 1) / 8 * self.zoom_factor + 1)
            w = int((x_size[3] - 1) / 8 * self.zoom_factor + 1)

            x = self.layer0(x)
            x_tmp = self.layer3(x)
            x = self.layer4(x_tmp)
            if self.use_ppm:
                x = self.ppm(x)
            x = self.cls(x)
            if self.zoom_factor != 1:
                x = F.interpolate(x, size=(h, w), mode='bilinear', align_corners=True)

            if self.training:
                aux = self.aux(x_tmp)
                if self.zoom_factor != 1:
                    aux = F.interpolate(aux, size=(h, w), mode='bilinear', align_corners=True)
                main_loss = self.criterion(x, y)
                aux_loss = self.criterion(aux, y)
                return x.max(1)[1], main_loss, aux_loss
            else:
                return x

    model = PSPNet(bins=(1, 2), dropout=0.0, zoom_factor=8)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.tensor(normal(rng, 2, 3, 9, 9))
    target = rng.integers(0, 2, (2, 9, 9))
    target[:, 0, :] = 255
    y = torch.tensor(target)
    losses = []
    for _ in range(1):
        output, main_loss, aux_loss = model(x, y)
        main_loss, aux_loss = torch.mean(main_loss), torch.mean(aux_loss)
        loss = main_loss + 0.4 * aux_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [main_loss.item(), aux_loss.item(), (output == y).sum().item()]
    return init, losses + summary(model.parameters())


def test_psp_ppm():
    compare(psp_ppm)


# (c) torchvision.ops.feature_pyramid_network written inline: inner_blocks and layer_blocks in ModuleLists with
# kaiming_uniform_(a=1) and zero biases over self.modules(), get_result_from_inner_blocks by a loop over enumerate
# (idx < 0 turned positive), the top-down path by F.interpolate(size=feat_shape, mode="nearest") and results.insert(0,
# ...), LastLevelMaxPool's F.max_pool2d(x[-1], 1, 2, 0), the OrderedDict of outputs; a tiny backbone returning
# an OrderedDict of stages and an SGD step on a loss over every level
def fpn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(2)
    from collections import OrderedDict
    rng = np.random.default_rng(2)

    class LastLevelMaxPool(nn.Module):
        def forward(self, x, y, names):
            names.append("pool")
            x.append(F.max_pool2d(x[-1], 1, 2, 0))
            return x, names

    class FeaturePyramidNetwork(nn.Module):
        def __init__(self, in_channels_list, out_channels, extra_blocks=None):
            super().__init__()
            self.inner_blocks = nn.ModuleList()
            self.layer_blocks = nn.ModuleList()
            for in_channels in in_channels_list:
                if in_channels == 0:
                    raise ValueError("in_channels=0 is currently not supported")
                inner_block_module = nn.Conv2d(in_channels, out_channels, 1)
                layer_block_module = nn.Conv2d(out_channels, out_channels, 3, padding=1)
                self.inner_blocks.append(inner_block_module)
                self.layer_blocks.append(layer_block_module)

            # initialize parameters now to avoid modifying the initialization of top_blocks
            for m_ in self.modules():
                if isinstance(m_, nn.Conv2d):
                    nn.init.kaiming_uniform_(m_.weight, a=1)
                    if m_.bias is not None:
                        nn.init.constant_(m_.bias, 0)

            self.extra_blocks = extra_blocks

        def get_result_from_inner_blocks(self, x, idx):
            num_blocks = len(self.inner_blocks)
            if idx < 0:
                idx += num_blocks
            out = x
            for i, module in enumerate(self.inner_blocks):
                if i == idx:
                    out = module(x)
            return out

        def get_result_from_layer_blocks(self, x, idx):
            num_blocks = len(self.layer_blocks)
            if idx < 0:
                idx += num_blocks
            out = x
            for i, module in enumerate(self.layer_blocks):
                if i == idx:
                    out = module(x)
            return out

        def forward(self, x):
            # unpack OrderedDict into two lists for easier handling
            names = list(x.keys())
            x = list(x.values())

            last_inner = self.get_result_from_inner_blocks(x[-1], -1)
            results = []
            results.append(self.get_result_from_layer_blocks(last_inner, -1))

            for idx in range(len(x) - 2, -1, -1):
                inner_lateral = self.get_result_from_inner_blocks(x[idx], idx)
                feat_shape = inner_lateral.shape[-2:]
                inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
                last_inner = inner_lateral + inner_top_down
                results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))

            if self.extra_blocks is not None:
                results, names = self.extra_blocks(results, x, names)

            # make it back an OrderedDict
            out = OrderedDict([(k, v) for k, v in zip(names, results)])

            return out

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = nn.Sequential(nn.Conv2d(3, 4, 3, 2, 1), nn.ReLU())
            self.layer2 = nn.Sequential(nn.Conv2d(4, 6, 3, 2, 1), nn.ReLU())
            self.layer3 = nn.Sequential(nn.Conv2d(6, 8, 3, 2, 1), nn.ReLU())

        def forward(self, x):
            out = OrderedDict()
            x = self.layer1(x)
            out['feat0'] = x
            x = self.layer2(x)
            out['feat1'] = x
            out['feat2'] = self.layer3(x)
            return out

    model = nn.Sequential(Backbone(), FeaturePyramidNetwork([4, 6, 8], 5, extra_blocks=LastLevelMaxPool()))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.tensor(normal(rng, 2, 3, 11, 13))
    losses = []
    for _ in range(1):
        output = model(x)
        assert [k for k in output.keys()] == ['feat0', 'feat1', 'feat2', 'pool']
        loss = sum((v ** 2).mean() for v in output.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()] + [float(v.shape[-1]) for k, v in output.items()]
    return init, losses + summary(model.parameters())


def test_fpn():
    compare(fpn)


# (d) LeeJunHyun/Image_Segmentation's AttU_Net at two levels: conv_block (two conv-BN-ReLU(inplace=True)), up_conv by
# nn.Upsample(scale_factor=2), Attention_block (W_g, W_x, psi with Sigmoid, relu(g1 + x1), x * psi), torch.cat((x2, d3),
# dim=1) skips, init_weights' init_type 'normal' by init.normal_(m.weight.data, 0.0, gain) over classname.find('Conv');
# trained (by SGD: Adam would blow the conv biases' zero gradients before BatchNorm up to steps) by nabsabraham's focal Tversky loss (inputs.view(-1), TP/FP/FN by sums, (1 - Tversky)**gamma) on a sigmoid
def attention_unet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(3)
    init_ = m.nn.init
    rng = np.random.default_rng(3)

    def init_weights(net, init_type='normal', gain=0.02):
        def init_func(m):
            classname = m.__class__.__name__
            if hasattr(m, 'weight') and (classname.find('Conv') != -1 or classname.find('Linear') != -1):
                if init_type == 'normal':
                    init_.normal_(m.weight.data, 0.0, gain)
                elif init_type == 'kaiming':
                    init_.kaiming_normal_(m.weight.data, a=0, mode='fan_in')
                else:
                    raise NotImplementedError('initialization method [%s] is not implemented' % init_type)
                if hasattr(m, 'bias') and m.bias is not None:
                    init_.constant_(m.bias.data, 0.0)
            elif classname.find('BatchNorm2d') != -1:
                init_.normal_(m.weight.data, 1.0, gain)
                init_.constant_(m.bias.data, 0.0)

        net.apply(init_func)

    class conv_block(nn.Module):
        def __init__(self, ch_in, ch_out):
            super(conv_block, self).__init__()
            self.conv = nn.Sequential(
                nn.Conv2d(ch_in, ch_out, kernel_size=3, stride=1, padding=1, bias=True),
                nn.BatchNorm2d(ch_out),
                nn.ReLU(inplace=True),
                nn.Conv2d(ch_out, ch_out, kernel_size=3, stride=1, padding=1, bias=True),
                nn.BatchNorm2d(ch_out),
                nn.ReLU(inplace=True)
            )

        def forward(self, x):
            x = self.conv(x)
            return x

    class up_conv(nn.Module):
        def __init__(self, ch_in, ch_out):
            super(up_conv, self).__init__()
            self.up = nn.Sequential(
                nn.Upsample(scale_factor=2),
                nn.Conv2d(ch_in, ch_out, kernel_size=3, stride=1, padding=1, bias=True),
                nn.BatchNorm2d(ch_out),
                nn.ReLU(inplace=True)
            )

        def forward(self, x):
            x = self.up(x)
            return x

    class Attention_block(nn.Module):
        def __init__(self, F_g, F_l, F_int):
            super(Attention_block, self).__init__()
            self.W_g = nn.Sequential(
                nn.Conv2d(F_g, F_int, kernel_size=1, stride=1, padding=0, bias=True),
                nn.BatchNorm2d(F_int)
            )

            self.W_x = nn.Sequential(
                nn.Conv2d(F_l, F_int, kernel_size=1, stride=1, padding=0, bias=True),
                nn.BatchNorm2d(F_int)
            )

            self.psi = nn.Sequential(
                nn.Conv2d(F_int, 1, kernel_size=1, stride=1, padding=0, bias=True),
                nn.BatchNorm2d(1),
                nn.Sigmoid()
            )

            self.relu = nn.ReLU(inplace=True)

        def forward(self, g, x):
            g1 = self.W_g(g)
            x1 = self.W_x(x)
            psi = self.relu(g1+x1)
            psi = self.psi(psi)

            return x*psi

    class AttU_Net(nn.Module):
        def __init__(self, img_ch=3, output_ch=1):
            super(AttU_Net, self).__init__()

            self.Maxpool = nn.MaxPool2d(kernel_size=2, stride=2)

            self.Conv1 = conv_block(ch_in=img_ch, ch_out=4)
            self.Conv2 = conv_block(ch_in=4, ch_out=8)

            self.Up2 = up_conv(ch_in=8, ch_out=4)
            self.Att2 = Attention_block(F_g=4, F_l=4, F_int=2)
            self.Up_conv2 = conv_block(ch_in=8, ch_out=4)

            self.Conv_1x1 = nn.Conv2d(4, output_ch, kernel_size=1, stride=1, padding=0)

        def forward(self, x):
            # encoding path
            x1 = self.Conv1(x)

            x2 = self.Maxpool(x1)
            x2 = self.Conv2(x2)

            # decoding + concat path
            d2 = self.Up2(x2)
            x1 = self.Att2(g=d2, x=x1)
            d2 = torch.cat((x1, d2), dim=1)
            d2 = self.Up_conv2(d2)

            d1 = self.Conv_1x1(d2)

            return d1

    ALPHA, BETA, GAMMA = 0.5, 0.5, 1

    class FocalTverskyLoss(nn.Module):
        def __init__(self, weight=None, size_average=True):
            super(FocalTverskyLoss, self).__init__()

        def forward(self, inputs, targets, smooth=1, alpha=ALPHA, beta=BETA, gamma=GAMMA):

            # comment out if your model contains a sigmoid or equivalent activation layer
            inputs = F.sigmoid(inputs)

            # flatten label and prediction tensors
            inputs = inputs.view(-1)
            targets = targets.view(-1)

            # True Positives, False Positives & False Negatives
            TP = (inputs * targets).sum()
            FP = ((1-targets) * inputs).sum()
            FN = (targets * (1-inputs)).sum()

            Tversky = (TP + smooth) / (TP + alpha*FP + beta*FN + smooth)
            FocalTversky = (1 - Tversky)**gamma

            return FocalTversky

    model = AttU_Net(img_ch=3, output_ch=1)
    if state is None:
        init_weights(model, init_type='kaiming')
    init = load(m, model, state)
    criterion = FocalTverskyLoss()
    optimizer = torch.optim.SGD(list(model.parameters()), 0.01, momentum=0.9)
    images = torch.tensor(normal(rng, 2, 3, 6, 6))
    GT = torch.tensor((rng.random((2, 1, 6, 6)) > 0.5).astype(np.float32))
    losses = []
    for _ in range(1):
        SR = model(images)
        SR_probs = F.sigmoid(SR)
        SR_flat = SR_probs.view(SR_probs.size(0), -1)
        GT_flat = GT.view(GT.size(0), -1)
        loss = criterion(SR, GT) + nn.BCELoss()(SR_flat, GT_flat)
        model.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_attention_unet():
    compare(attention_unet)


# (e) heykeetae/Self-Attention-GAN's Self_Attn (query and key 1x1 convs to in_dim // 8, proj_query permuted,
# torch.bmm, softmax(dim=-1), gamma an nn.Parameter(torch.zeros(1)), returning out and the attention) under
# christiancosgrove/pytorch-spectral-normalization-gan's SpectralNorm wrapper (l2normalize, _make_params deleting
# module._parameters[self.name] and registering name + "_u", "_v", "_bar", _update_u_v's power iteration on
# w.view(height, -1).data and setattr of w / sigma.expand_as(w); _made_params' getattr calls without the
# unused names u, v, w, which pyflakes flags), and the hinge loss of SAGAN's trainer
# (nn.ReLU()(1.0 - d_out_real).mean() and nn.ReLU()(1.0 + d_out_fake).mean(),
# the discriminator's step alone); u and v, drawn by normal_, reach torch as parameters in the state_dict
def sagan(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(4)
    rng = np.random.default_rng(4)

    def l2normalize(v, eps=1e-12):
        return v / (v.norm() + eps)

    class SpectralNorm(nn.Module):
        def __init__(self, module, name='weight', power_iterations=1):
            super(SpectralNorm, self).__init__()
            self.module = module
            self.name = name
            self.power_iterations = power_iterations
            if not self._made_params():
                self._make_params()

        def _update_u_v(self):
            u = getattr(self.module, self.name + "_u")
            v = getattr(self.module, self.name + "_v")
            w = getattr(self.module, self.name + "_bar")

            height = w.data.shape[0]
            for _ in range(self.power_iterations):
                v.data = l2normalize(torch.mv(torch.t(w.view(height, -1).data), u.data))
                u.data = l2normalize(torch.mv(w.view(height, -1).data, v.data))

            # sigma = torch.dot(u.data, torch.mv(w.view(height,-1).data, v.data))
            sigma = u.dot(w.view(height, -1).mv(v))
            setattr(self.module, self.name, w / sigma.expand_as(w))

        def _made_params(self):
            try:
                getattr(self.module, self.name + "_u")
                getattr(self.module, self.name + "_v")
                getattr(self.module, self.name + "_bar")
                return True
            except AttributeError:
                return False

        def _make_params(self):
            w = getattr(self.module, self.name)

            height = w.data.shape[0]
            width = w.view(height, -1).data.shape[1]

            u = nn.Parameter(w.data.new(height).normal_(0, 1), requires_grad=False)
            v = nn.Parameter(w.data.new(width).normal_(0, 1), requires_grad=False)
            u.data = l2normalize(u.data)
            v.data = l2normalize(v.data)
            w_bar = nn.Parameter(w.data)

            del self.module._parameters[self.name]

            self.module.register_parameter(self.name + "_u", u)
            self.module.register_parameter(self.name + "_v", v)
            self.module.register_parameter(self.name + "_bar", w_bar)

        def forward(self, *args):
            self._update_u_v()
            return self.module.forward(*args)

    class Self_Attn(nn.Module):
        """ Self attention Layer"""
        def __init__(self, in_dim, activation):
            super(Self_Attn, self).__init__()
            self.chanel_in = in_dim
            self.activation = activation

            self.query_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim//8, kernel_size=1)
            self.key_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim//8, kernel_size=1)
            self.value_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim, kernel_size=1)
            self.gamma = nn.Parameter(torch.zeros(1))

            self.softmax = nn.Softmax(dim=-1)

        def forward(self, x):
            """
                inputs :
                    x : input feature maps( B X C X W X H)
                returns :
                    out : self attention value + input feature
                    attention: B X N X N (N is Width*Height)
            """
            m_batchsize, C, width, height = x.size()
            proj_query = self.query_conv(x).view(m_batchsize, -1, width*height).permute(0, 2, 1)  # B X CX(N)
            proj_key = self.key_conv(x).view(m_batchsize, -1, width*height)  # B X C x (*W*H)
            energy = torch.bmm(proj_query, proj_key)  # transpose check
            attention = self.softmax(energy)  # BX (N) X (N)
            proj_value = self.value_conv(x).view(m_batchsize, -1, width*height)  # B X C X N

            out = torch.bmm(proj_value, attention.permute(0, 2, 1))
            out = out.view(m_batchsize, C, width, height)

            out = self.gamma*out + x
            return out, attention

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Sequential(SpectralNorm(nn.Conv2d(3, 16, 4, 2, 1)), nn.LeakyReLU(0.1))
            self.attn1 = Self_Attn(16, 'relu')
            self.last = nn.Sequential(nn.Conv2d(16, 1, 4))

        def forward(self, x):
            out = self.l1(x)
            out, p1 = self.attn1(out)
            out = self.last(out)
            return out.squeeze(), p1

    D = Discriminator()
    init = load(m, D, state)
    d_optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, D.parameters()), 0.0004, [0.0, 0.9])
    real_images = torch.tensor(normal(rng, 3, 3, 8, 8))
    fake_images = torch.tensor(normal(rng, 3, 3, 8, 8))
    losses = []
    for _ in range(1):
        d_out_real, dr1 = D(real_images)
        d_loss_real = torch.nn.ReLU()(1.0 - d_out_real).mean()
        d_out_fake, df1 = D(fake_images)
        d_loss_fake = torch.nn.ReLU()(1.0 + d_out_fake).mean()
        d_loss = d_loss_real + d_loss_fake
        d_optimizer.zero_grad()
        d_loss.backward()
        d_optimizer.step()
        losses += [d_loss.item(), D.attn1.gamma.item(), dr1.sum(-1).mean().item(), df1.max().item()]
    return init, losses + summary(D.parameters())


def test_sagan():
    compare(sagan)


# (f) naoto0804/pytorch-AdaIN's function.py and net.py at a reduced size: calc_mean_std (feat.view(N, C, -1).var(dim=2)
# + eps, sqrt and mean viewed as (N, C, 1, 1)), adaptive_instance_normalization by expand(size), the decoder of
# ReflectionPad2d((1, 1, 1, 1)), convs and nn.Upsample(scale_factor=2, mode='nearest'), Net's encoder split in slices
# by list(enc_layers.children())[:n] with the encoder frozen (param.requires_grad = False), encode_with_intermediate,
# calc_content_loss and calc_style_loss by MSELoss on the statistics, adjust_learning_rate by lr / (1.0 + lr_decay *
# iteration_count) on param_groups; content_weight 1.0, style_weight 10.0
def adain(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(5)
    rng = np.random.default_rng(5)

    def calc_mean_std(feat, eps=1e-5):
        # eps is a small value added to the variance to avoid divide-by-zero.
        size = feat.size()
        assert (len(size) == 4)
        N, C = size[:2]
        feat_var = feat.view(N, C, -1).var(dim=2) + eps
        feat_std = feat_var.sqrt().view(N, C, 1, 1)
        feat_mean = feat.view(N, C, -1).mean(dim=2).view(N, C, 1, 1)
        return feat_mean, feat_std

    def adaptive_instance_normalization(content_feat, style_feat):
        assert (content_feat.size()[:2] == style_feat.size()[:2])
        size = content_feat.size()
        style_mean, style_std = calc_mean_std(style_feat)
        content_mean, content_std = calc_mean_std(content_feat)

        normalized_feat = (content_feat - content_mean.expand(
            size)) / content_std.expand(size)
        return normalized_feat * style_std.expand(size) + style_mean.expand(size)

    decoder = nn.Sequential(
        nn.ReflectionPad2d((1, 1, 1, 1)),
        nn.Conv2d(8, 4, (3, 3)),
        nn.ReLU(),
        nn.Upsample(scale_factor=2, mode='nearest'),
        nn.ReflectionPad2d((1, 1, 1, 1)),
        nn.Conv2d(4, 3, (3, 3)),
    )

    vgg = nn.Sequential(
        nn.Conv2d(3, 3, (1, 1)),
        nn.ReflectionPad2d((1, 1, 1, 1)),
        nn.Conv2d(3, 4, (3, 3)),
        nn.ReLU(),  # relu1-1
        nn.MaxPool2d((2, 2), (2, 2), (0, 0), ceil_mode=True),
        nn.ReflectionPad2d((1, 1, 1, 1)),
        nn.Conv2d(4, 8, (3, 3)),
        nn.ReLU(),  # relu2-1
    )

    class Net(nn.Module):
        def __init__(self, encoder, decoder):
            super(Net, self).__init__()
            enc_layers = list(encoder.children())
            self.enc_1 = nn.Sequential(*enc_layers[:4])  # input -> relu1_1
            self.enc_2 = nn.Sequential(*enc_layers[4:8])  # relu1_1 -> relu2_1
            self.decoder = decoder
            self.mse_loss = nn.MSELoss()

            # fix the encoder
            for name in ['enc_1', 'enc_2']:
                for param in getattr(self, name).parameters():
                    param.requires_grad = False

        # extract relu1_1, relu2_1 from input image
        def encode_with_intermediate(self, input):
            results = [input]
            for i in range(2):
                func = getattr(self, 'enc_{:d}'.format(i + 1))
                results.append(func(results[-1]))
            return results[1:]

        # extract relu2_1 from input image
        def encode(self, input):
            for i in range(2):
                input = getattr(self, 'enc_{:d}'.format(i + 1))(input)
            return input

        def calc_content_loss(self, input, target):
            assert (input.size() == target.size())
            assert (target.requires_grad is False)
            return self.mse_loss(input, target)

        def calc_style_loss(self, input, target):
            assert (input.size() == target.size())
            assert (target.requires_grad is False)
            input_mean, input_std = calc_mean_std(input)
            target_mean, target_std = calc_mean_std(target)
            return self.mse_loss(input_mean, target_mean) + \
                self.mse_loss(input_std, target_std)

        def forward(self, content, style, alpha=1.0):
            assert 0 <= alpha <= 1
            style_feats = self.encode_with_intermediate(style)
            content_feat = self.encode(content)
            t = adaptive_instance_normalization(content_feat, style_feats[-1])
            t = alpha * t + (1 - alpha) * content_feat

            g_t = self.decoder(t)
            g_t_feats = self.encode_with_intermediate(g_t)

            loss_c = self.calc_content_loss(g_t_feats[-1], t)
            loss_s = self.calc_style_loss(g_t_feats[0], style_feats[0])
            for i in range(1, 2):
                loss_s += self.calc_style_loss(g_t_feats[i], style_feats[i])
            return loss_c, loss_s

    network = Net(vgg, decoder)
    network.train()
    init = load(m, network, state)
    lr, lr_decay = 1e-2, 5e-5

    def adjust_learning_rate(optimizer, iteration_count):
        """Imitating the original implementation"""
        lr_ = lr / (1.0 + lr_decay * iteration_count)
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr_

    optimizer = torch.optim.Adam(network.decoder.parameters(), lr=lr)
    content_images = torch.tensor(rng.random((2, 3, 8, 8)).astype(np.float32))
    style_images = torch.tensor(rng.random((2, 3, 8, 8)).astype(np.float32))
    losses = []
    for i in range(1):
        adjust_learning_rate(optimizer, iteration_count=i)
        loss_c, loss_s = network(content_images, style_images)
        loss_c = 1.0 * loss_c
        loss_s = 10.0 * loss_s
        loss = loss_c + loss_s

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss_c.item(), loss_s.item()]
    return init, losses + summary(network.parameters())


def test_adain():
    compare(adain)


# (g) attention blocks as their repositories write them, in one small CNN: AlexHex7/Non-local_pytorch's
# _NonLocalBlockND in its embedded Gaussian form (g, theta and phi 1x1 convs, sub_sample by MaxPool2d(kernel_size=(2,
# 2)), W a conv and BatchNorm whose weight and bias start at nn.init.constant_(..., 0), f by torch.matmul and
# F.softmax(f, dim=-1), y.permute(0, 2, 1).contiguous()); Andrew-Qibin's CoordAtt (h_sigmoid by ReLU6(x + 3) / 6,
# h_swish, pooling by AdaptiveAvgPool2d((None, 1)) and ((1, None)), torch.cat then torch.split([h, w], dim=2));
# ZjjConan's SimAM (x_minus_mu_square over h * w - 1 and a sigmoid); an SGD step with Nesterov momentum
def attention_blocks(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(6)
    rng = np.random.default_rng(6)

    class _NonLocalBlockND(nn.Module):
        def __init__(self, in_channels, inter_channels=None, dimension=2, sub_sample=True, bn_layer=True):
            super(_NonLocalBlockND, self).__init__()

            assert dimension in [1, 2, 3]

            self.dimension = dimension
            self.sub_sample = sub_sample

            self.in_channels = in_channels
            self.inter_channels = inter_channels

            if self.inter_channels is None:
                self.inter_channels = in_channels // 2
                if self.inter_channels == 0:
                    self.inter_channels = 1

            if dimension == 3:
                conv_nd = nn.Conv3d
                max_pool_layer = nn.MaxPool3d(kernel_size=(1, 2, 2))
                bn = nn.BatchNorm3d
            elif dimension == 2:
                conv_nd = nn.Conv2d
                max_pool_layer = nn.MaxPool2d(kernel_size=(2, 2))
                bn = nn.BatchNorm2d
            else:
                conv_nd = nn.Conv1d
                max_pool_layer = nn.MaxPool1d(kernel_size=(2))
                bn = nn.BatchNorm1d

            self.g = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels,
                             kernel_size=1, stride=1, padding=0)

            if bn_layer:
                self.W = nn.Sequential(
                    conv_nd(in_channels=self.inter_channels, out_channels=self.in_channels,
                            kernel_size=1, stride=1, padding=0),
                    bn(self.in_channels)
                )
                nn.init.constant_(self.W[1].weight, 0)
                nn.init.constant_(self.W[1].bias, 0)
            else:
                self.W = conv_nd(in_channels=self.inter_channels, out_channels=self.in_channels,
                                 kernel_size=1, stride=1, padding=0)
                nn.init.constant_(self.W.weight, 0)
                nn.init.constant_(self.W.bias, 0)

            self.theta = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels,
                                 kernel_size=1, stride=1, padding=0)
            self.phi = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels,
                               kernel_size=1, stride=1, padding=0)

            if sub_sample:
                self.g = nn.Sequential(self.g, max_pool_layer)
                self.phi = nn.Sequential(self.phi, max_pool_layer)

        def forward(self, x, return_nl_map=False):
            """
            :param x: (b, c, t, h, w)
            :param return_nl_map: if True return z, f_div_C
            :return:
            """

            batch_size = x.size(0)

            g_x = self.g(x).view(batch_size, self.inter_channels, -1)
            g_x = g_x.permute(0, 2, 1)

            theta_x = self.theta(x).view(batch_size, self.inter_channels, -1)
            theta_x = theta_x.permute(0, 2, 1)
            phi_x = self.phi(x).view(batch_size, self.inter_channels, -1)
            f = torch.matmul(theta_x, phi_x)
            f_div_C = F.softmax(f, dim=-1)

            y = torch.matmul(f_div_C, g_x)
            y = y.permute(0, 2, 1).contiguous()
            y = y.view(batch_size, self.inter_channels, *x.size()[2:])
            W_y = self.W(y)
            z = W_y + x

            if return_nl_map:
                return z, f_div_C
            return z

    class NONLocalBlock2D(_NonLocalBlockND):
        def __init__(self, in_channels, inter_channels=None, sub_sample=True, bn_layer=True):
            super(NONLocalBlock2D, self).__init__(in_channels,
                                                  inter_channels=inter_channels,
                                                  dimension=2, sub_sample=sub_sample,
                                                  bn_layer=bn_layer,)

    class h_sigmoid(nn.Module):
        def __init__(self, inplace=True):
            super(h_sigmoid, self).__init__()
            self.relu = nn.ReLU6(inplace=inplace)

        def forward(self, x):
            return self.relu(x + 3) / 6

    class h_swish(nn.Module):
        def __init__(self, inplace=True):
            super(h_swish, self).__init__()
            self.sigmoid = h_sigmoid(inplace=inplace)

        def forward(self, x):
            return x * self.sigmoid(x)

    class CoordAtt(nn.Module):
        def __init__(self, inp, oup, reduction=32):
            super(CoordAtt, self).__init__()
            self.pool_h = nn.AdaptiveAvgPool2d((None, 1))
            self.pool_w = nn.AdaptiveAvgPool2d((1, None))

            mip = max(8, inp // reduction)

            self.conv1 = nn.Conv2d(inp, mip, kernel_size=1, stride=1, padding=0)
            self.bn1 = nn.BatchNorm2d(mip)
            self.act = h_swish()

            self.conv_h = nn.Conv2d(mip, oup, kernel_size=1, stride=1, padding=0)
            self.conv_w = nn.Conv2d(mip, oup, kernel_size=1, stride=1, padding=0)

        def forward(self, x):
            identity = x

            n, c, h, w = x.size()
            x_h = self.pool_h(x)
            x_w = self.pool_w(x).permute(0, 1, 3, 2)

            y = torch.cat([x_h, x_w], dim=2)
            y = self.conv1(y)
            y = self.bn1(y)
            y = self.act(y)

            x_h, x_w = torch.split(y, [h, w], dim=2)
            x_w = x_w.permute(0, 1, 3, 2)

            a_h = self.conv_h(x_h).sigmoid()
            a_w = self.conv_w(x_w).sigmoid()

            out = identity * a_w * a_h

            return out

    class simam_module(torch.nn.Module):
        def __init__(self, channels=None, e_lambda=1e-4):
            super(simam_module, self).__init__()

            self.activaton = nn.Sigmoid()
            self.e_lambda = e_lambda

        def __repr__(self):
            s = self.__class__.__name__ + '('
            s += ('lambda=%f)' % self.e_lambda)
            return s

        @staticmethod
        def get_module_name():
            return "simam"

        def forward(self, x):

            b, c, h, w = x.size()

            n = w * h - 1

            x_minus_mu_square = (x - x.mean(dim=[2, 3], keepdim=True)).pow(2)
            y = x_minus_mu_square / (4 * (x_minus_mu_square.sum(dim=[2, 3], keepdim=True) / n + self.e_lambda)) + 0.5

            return x * self.activaton(y)

    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), NONLocalBlock2D(6), CoordAtt(6, 6), simam_module(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 3))
    init = load(m, model, state)
    assert repr(model[3]) == 'simam_module(lambda=0.000100)'
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    x = torch.tensor(normal(rng, 2, 3, 6, 5))
    target = torch.tensor([0, 2])
    losses = []
    for _ in range(1):
        loss = F.cross_entropy(model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    z, nl_map = model[1](model[0](x), return_nl_map=True)
    losses += [z.sum().item(), nl_map.sum().item()]
    return init, losses + summary(model.parameters())


def test_attention_blocks():
    compare(attention_blocks)


# (h) multi-label losses as their repositories write them: Alibaba-MIIL/ASL's AsymmetricLoss (xs_neg clipped by
# (xs_neg + clip).clamp(max=1), logs of clamp(min=eps), the focusing weight computed under
# torch.set_grad_enabled(False) when disable_torch_grad_focal_loss, -loss.sum()), yiming-leng-style poly1 cross
# entropy (labels one-hot by F.one_hot, pt by torch.sum(labels_onehot * F.softmax(logits, dim=-1), dim=-1), CE by
# reduction='none'), and nn.MultiLabelSoftMarginLoss; an AdamW step on a small multi-label head
def multilabel_losses(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(7)
    rng = np.random.default_rng(7)

    class AsymmetricLoss(nn.Module):
        def __init__(self, gamma_neg=4, gamma_pos=1, clip=0.05, eps=1e-8, disable_torch_grad_focal_loss=True):
            super(AsymmetricLoss, self).__init__()

            self.gamma_neg = gamma_neg
            self.gamma_pos = gamma_pos
            self.clip = clip
            self.disable_torch_grad_focal_loss = disable_torch_grad_focal_loss
            self.eps = eps

        def forward(self, x, y):
            """"
            Parameters
            ----------
            x: input logits
            y: targets (multi-label binarized vector)
            """

            # Calculating Probabilities
            x_sigmoid = torch.sigmoid(x)
            xs_pos = x_sigmoid
            xs_neg = 1 - x_sigmoid

            # Asymmetric Clipping
            if self.clip is not None and self.clip > 0:
                xs_neg = (xs_neg + self.clip).clamp(max=1)

            # Basic CE calculation
            los_pos = y * torch.log(xs_pos.clamp(min=self.eps))
            los_neg = (1 - y) * torch.log(xs_neg.clamp(min=self.eps))
            loss = los_pos + los_neg

            # Asymmetric Focusing
            if self.gamma_neg > 0 or self.gamma_pos > 0:
                if self.disable_torch_grad_focal_loss:
                    torch.set_grad_enabled(False)
                pt0 = xs_pos * y
                pt1 = xs_neg * (1 - y)  # pt = p if t > 0 else 1-p
                pt = pt0 + pt1
                one_sided_gamma = self.gamma_pos * y + self.gamma_neg * (1 - y)
                one_sided_w = torch.pow(1 - pt, one_sided_gamma)
                if self.disable_torch_grad_focal_loss:
                    torch.set_grad_enabled(True)
                loss *= one_sided_w

            return -loss.sum()

    class Poly1CrossEntropyLoss(nn.Module):
        def __init__(self, num_classes, epsilon=1.0, reduction="none", weight=None):
            super(Poly1CrossEntropyLoss, self).__init__()
            self.num_classes = num_classes
            self.epsilon = epsilon
            self.reduction = reduction
            self.weight = weight
            return

        def forward(self, logits, labels):
            labels_onehot = F.one_hot(labels, num_classes=self.num_classes).to(device=logits.device,
                                                                               dtype=logits.dtype)
            pt = torch.sum(labels_onehot * F.softmax(logits, dim=-1), dim=-1)
            CE = F.cross_entropy(input=logits,
                                 target=labels,
                                 reduction='none',
                                 weight=self.weight)
            poly1 = CE + self.epsilon * (1 - pt)
            if self.reduction == "mean":
                poly1 = poly1.mean()
            elif self.reduction == "sum":
                poly1 = poly1.sum()
            return poly1

    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 5))
    init = load(m, model, state)
    asl = AsymmetricLoss()
    poly = Poly1CrossEntropyLoss(num_classes=5, reduction='mean')
    mlsm = nn.MultiLabelSoftMarginLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=1e-4)
    x = torch.tensor(normal(rng, 4, 6))
    y = torch.tensor((rng.random((4, 5)) > 0.6).astype(np.float32))
    labels = torch.tensor([1, 4, 0, 3])
    losses = []
    for _ in range(1):
        output = model(x)
        loss_asl, loss_poly, loss_mlsm = asl(output, y), poly(output, labels), mlsm(output, y)
        loss = loss_asl + loss_poly + loss_mlsm
        assert torch.is_grad_enabled()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss_asl.item(), loss_poly.item(), loss_mlsm.item()]
    return init, losses + summary(model.parameters())


def test_multilabel_losses():
    compare(multilabel_losses)


# (i) domain adaptation losses: SSARCandy/DeepCORAL's CORAL (d = source.data.shape[1], the covariances by xm.t() @ xm,
# torch.mean(torch.mul((xc - xct), (xc - xct))) / (4 * d * d)) and ZongxianLee/MMD_Loss.Pytorch's MMD_loss
# (guassian_kernel by unsqueeze(0).expand of torch.cat([source, target], dim=0), the bandwidth from
# torch.sum(L2_distance.data), kernel_mul ** (kernel_num // 2), the sum of the kernel list, XX + YY - XY - YX);
# a shared feature net trained by cross entropy on the source plus both losses, SGD with momentum
def domain_adaptation(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(8)
    rng = np.random.default_rng(8)

    def CORAL(source, target):
        d = source.data.shape[1]

        # source covariance
        xm = torch.mean(source, 0, keepdim=True) - source
        xc = xm.t() @ xm

        # target covariance
        xmt = torch.mean(target, 0, keepdim=True) - target
        xct = xmt.t() @ xmt

        # frobenius norm between source and target
        loss = torch.mean(torch.mul((xc - xct), (xc - xct)))
        loss = loss/(4*d*d)

        return loss

    class MMD_loss(nn.Module):
        def __init__(self, kernel_mul=2.0, kernel_num=5):
            super(MMD_loss, self).__init__()
            self.kernel_num = kernel_num
            self.kernel_mul = kernel_mul
            self.fix_sigma = None
            return

        def guassian_kernel(self, source, target, kernel_mul=2.0, kernel_num=5, fix_sigma=None):
            n_samples = int(source.size()[0])+int(target.size()[0])
            total = torch.cat([source, target], dim=0)

            total0 = total.unsqueeze(0).expand(int(total.size(0)), int(total.size(0)), int(total.size(1)))
            total1 = total.unsqueeze(1).expand(int(total.size(0)), int(total.size(0)), int(total.size(1)))
            L2_distance = ((total0-total1)**2).sum(2)
            if fix_sigma:
                bandwidth = fix_sigma
            else:
                bandwidth = torch.sum(L2_distance.data) / (n_samples**2-n_samples)
            bandwidth /= kernel_mul ** (kernel_num // 2)
            bandwidth_list = [bandwidth * (kernel_mul**i) for i in range(kernel_num)]
            kernel_val = [torch.exp(-L2_distance / bandwidth_temp) for bandwidth_temp in bandwidth_list]
            return sum(kernel_val)

        def forward(self, source, target):
            batch_size = int(source.size()[0])
            kernels = self.guassian_kernel(source, target, kernel_mul=self.kernel_mul, kernel_num=self.kernel_num,
                                           fix_sigma=self.fix_sigma)
            XX = kernels[:batch_size, :batch_size]
            YY = kernels[batch_size:, batch_size:]
            XY = kernels[:batch_size, batch_size:]
            YX = kernels[batch_size:, :batch_size]
            loss = torch.mean(XX + YY - XY - YX)
            return loss

    class DeepCORAL(nn.Module):
        def __init__(self, num_classes=3):
            super(DeepCORAL, self).__init__()
            self.sharedNet = nn.Sequential(nn.Linear(5, 8), nn.ReLU(inplace=True), nn.Linear(8, 6))
            self.fc = nn.Linear(6, num_classes)

            # initialize according to CORAL paper experiment
            self.fc.weight.data.normal_(0, 0.005)

        def forward(self, source, target):
            source = self.sharedNet(source)
            source = self.fc(source)

            target = self.sharedNet(target)
            target = self.fc(target)
            return source, target

    model = DeepCORAL()
    init = load(m, model, state)
    optimizer = torch.optim.SGD([
        {'params': model.sharedNet.parameters()},
        {'params': model.fc.parameters(), 'lr': 10 * 0.01},
    ], lr=0.01, momentum=0.9)
    mmd = MMD_loss()
    source_data = torch.tensor(normal(rng, 4, 5))
    target_data = torch.tensor(normal(rng, 4, 5) + 0.5)
    source_label = torch.tensor([0, 1, 2, 1])
    losses = []
    for _ in range(1):
        out1, out2 = model(source_data, target_data)
        classification_loss = torch.nn.functional.cross_entropy(out1, source_label)
        coral_loss = CORAL(out1, out2)
        mmd_loss = mmd(out1, out2)
        sum_loss = 1.0 * coral_loss + classification_loss + 0.5 * mmd_loss
        optimizer.zero_grad()
        sum_loss.backward()
        optimizer.step()
        losses += [classification_loss.item(), coral_loss.item(), mmd_loss.item()]
    return init, losses + summary(model.parameters())


def test_domain_adaptation():
    compare(domain_adaptation)


# (j) Aladdin Persson's "Transformer from scratch" (Machine-Learning-Collection's transformer_from_scratch.py):
# SelfAttention's head split by reshape, energy by torch.einsum("nqhd,nkhd->nhqk"), masked_fill(mask == 0,
# float("-1e20")), softmax of energy / (self.embed_size ** (1 / 2)) over dim=3, einsum("nhql,nlhd->nqhd");
# TransformerBlock, Encoder with positions by torch.arange(0, seq_length).expand(N, seq_length).to(self.device),
# DecoderBlock, Decoder, make_src_mask by (src != pad).unsqueeze(1).unsqueeze(2) and make_trg_mask by
# torch.tril(torch.ones((trg_len, trg_len))).expand(N, 1, trg_len, trg_len); dropout 0 (the libraries' masks
# differ), the __main__ block's shapes, then an Adam step on cross entropy with ignore_index=0
def transformer_from_scratch(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(9)

    class SelfAttention(nn.Module):
        def __init__(self, embed_size, heads):
            super(SelfAttention, self).__init__()
            self.embed_size = embed_size
            self.heads = heads
            self.head_dim = embed_size // heads

            assert (
                self.head_dim * heads == embed_size
            ), "Embedding size needs to be divisible by heads"

            self.values = nn.Linear(embed_size, embed_size)
            self.keys = nn.Linear(embed_size, embed_size)
            self.queries = nn.Linear(embed_size, embed_size)
            self.fc_out = nn.Linear(embed_size, embed_size)

        def forward(self, values, keys, query, mask):
            # Get number of training examples
            N = query.shape[0]

            value_len, key_len, query_len = values.shape[1], keys.shape[1], query.shape[1]

            values = self.values(values)  # (N, value_len, embed_size)
            keys = self.keys(keys)  # (N, key_len, embed_size)
            queries = self.queries(query)  # (N, query_len, embed_size)

            # Split the embedding into self.heads different pieces
            values = values.reshape(N, value_len, self.heads, self.head_dim)
            keys = keys.reshape(N, key_len, self.heads, self.head_dim)
            queries = queries.reshape(N, query_len, self.heads, self.head_dim)

            # Einsum does matrix mult. for query*keys for each training example
            # with every other training example, don't be confused by einsum
            # it's just how I like doing matrix multiplication & bmm

            energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])
            # queries shape: (N, query_len, heads, heads_dim),
            # keys shape: (N, key_len, heads, heads_dim)
            # energy: (N, heads, query_len, key_len)

            # Mask padded indices so their weights become 0
            if mask is not None:
                energy = energy.masked_fill(mask == 0, float("-1e20"))

            # Normalize energy values similarly to seq2seq + attention
            # so that they sum to 1. Also divide by scaling factor for
            # better stability
            attention = torch.softmax(energy / (self.embed_size ** (1 / 2)), dim=3)
            # attention shape: (N, heads, query_len, key_len)

            out = torch.einsum("nhql,nlhd->nqhd", [attention, values]).reshape(
                N, query_len, self.heads * self.head_dim
            )
            # attention shape: (N, heads, query_len, key_len)
            # values shape: (N, value_len, heads, heads_dim)
            # out after matrix multiply: (N, query_len, heads, head_dim), then
            # we reshape and flatten the last two dimensions.

            out = self.fc_out(out)
            # Linear layer doesn't modify the shape, final shape will be
            # (N, query_len, embed_size)

            return out

    class TransformerBlock(nn.Module):
        def __init__(self, embed_size, heads, dropout, forward_expansion):
            super(TransformerBlock, self).__init__()
            self.attention = SelfAttention(embed_size, heads)
            self.norm1 = nn.LayerNorm(embed_size)
            self.norm2 = nn.LayerNorm(embed_size)

            self.feed_forward = nn.Sequential(
                nn.Linear(embed_size, forward_expansion * embed_size),
                nn.ReLU(),
                nn.Linear(forward_expansion * embed_size, embed_size),
            )

            self.dropout = nn.Dropout(dropout)

        def forward(self, value, key, query, mask):
            attention = self.attention(value, key, query, mask)

            # Add skip connection, run through normalization and finally dropout
            x = self.dropout(self.norm1(attention + query))
            forward = self.feed_forward(x)
            out = self.dropout(self.norm2(forward + x))
            return out

    class Encoder(nn.Module):
        def __init__(self, src_vocab_size, embed_size, num_layers, heads, device, forward_expansion, dropout,
                     max_length):
            super(Encoder, self).__init__()
            self.embed_size = embed_size
            self.device = device
            self.word_embedding = nn.Embedding(src_vocab_size, embed_size)
            self.position_embedding = nn.Embedding(max_length, embed_size)

            self.layers = nn.ModuleList(
                [
                    TransformerBlock(
                        embed_size,
                        heads,
                        dropout=dropout,
                        forward_expansion=forward_expansion,
                    )
                    for _ in range(num_layers)
                ]
            )

            self.dropout = nn.Dropout(dropout)

        def forward(self, x, mask):
            N, seq_length = x.shape
            positions = torch.arange(0, seq_length).expand(N, seq_length).to(self.device)
            out = self.dropout(
                (self.word_embedding(x) + self.position_embedding(positions))
            )

            # In the Encoder the query, key, value are all the same, it's in the
            # decoder this will change. This might look a bit odd in this case.
            for layer in self.layers:
                out = layer(out, out, out, mask)

            return out

    class DecoderBlock(nn.Module):
        def __init__(self, embed_size, heads, forward_expansion, dropout, device):
            super(DecoderBlock, self).__init__()
            self.norm = nn.LayerNorm(embed_size)
            self.attention = SelfAttention(embed_size, heads=heads)
            self.transformer_block = TransformerBlock(
                embed_size, heads, dropout, forward_expansion
            )
            self.dropout = nn.Dropout(dropout)

        def forward(self, x, value, key, src_mask, trg_mask):
            attention = self.attention(x, x, x, trg_mask)
            query = self.dropout(self.norm(attention + x))
            out = self.transformer_block(value, key, query, src_mask)
            return out

    class Decoder(nn.Module):
        def __init__(self, trg_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout, device,
                     max_length):
            super(Decoder, self).__init__()
            self.device = device
            self.word_embedding = nn.Embedding(trg_vocab_size, embed_size)
            self.position_embedding = nn.Embedding(max_length, embed_size)

            self.layers = nn.ModuleList(
                [
                    DecoderBlock(embed_size, heads, forward_expansion, dropout, device)
                    for _ in range(num_layers)
                ]
            )
            self.fc_out = nn.Linear(embed_size, trg_vocab_size)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x, enc_out, src_mask, trg_mask):
            N, seq_length = x.shape
            positions = torch.arange(0, seq_length).expand(N, seq_length).to(self.device)
            x = self.dropout((self.word_embedding(x) + self.position_embedding(positions)))

            for layer in self.layers:
                x = layer(x, enc_out, enc_out, src_mask, trg_mask)

            out = self.fc_out(x)

            return out

    class Transformer(nn.Module):
        def __init__(self, src_vocab_size, trg_vocab_size, src_pad_idx, trg_pad_idx, embed_size=512, num_layers=6,
                     forward_expansion=4, heads=8, dropout=0, device="cpu", max_length=100):

            super(Transformer, self).__init__()

            self.encoder = Encoder(
                src_vocab_size,
                embed_size,
                num_layers,
                heads,
                device,
                forward_expansion,
                dropout,
                max_length,
            )

            self.decoder = Decoder(
                trg_vocab_size,
                embed_size,
                num_layers,
                heads,
                forward_expansion,
                dropout,
                device,
                max_length,
            )

            self.src_pad_idx = src_pad_idx
            self.trg_pad_idx = trg_pad_idx
            self.device = device

        def make_src_mask(self, src):
            src_mask = (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)
            # (N, 1, 1, src_len)
            return src_mask.to(self.device)

        def make_trg_mask(self, trg):
            N, trg_len = trg.shape
            trg_mask = torch.tril(torch.ones((trg_len, trg_len))).expand(
                N, 1, trg_len, trg_len
            )

            return trg_mask.to(self.device)

        def forward(self, src, trg):
            src_mask = self.make_src_mask(src)
            trg_mask = self.make_trg_mask(trg)
            enc_src = self.encoder(src, src_mask)
            out = self.decoder(trg, enc_src, src_mask, trg_mask)
            return out

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    x = torch.tensor([[1, 5, 6, 4, 3, 9, 5, 2, 0], [1, 8, 7, 3, 4, 5, 6, 7, 2]]).to(
        device
    )
    trg = torch.tensor([[1, 7, 4, 3, 5, 9, 2, 0], [1, 5, 6, 2, 4, 7, 6, 2]]).to(device)

    src_pad_idx = 0
    trg_pad_idx = 0
    src_vocab_size = 10
    trg_vocab_size = 10
    model = Transformer(src_vocab_size, trg_vocab_size, src_pad_idx, trg_pad_idx, embed_size=8, num_layers=1,
                        forward_expansion=2, heads=2, device=device, max_length=12).to(
        device
    )
    init = load(m, model, state)
    out = model(x, trg[:, :-1])
    assert out.shape == (2, 7, 10)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    criterion = nn.CrossEntropyLoss(ignore_index=trg_pad_idx)
    loss = criterion(out.reshape(-1, out.shape[2]), trg[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return init, [loss.item(), out.sum().item()] + summary(model.parameters())


def test_transformer_from_scratch():
    compare(transformer_from_scratch)


# (k) Aladdin Persson's YOLOv1 (Machine-Learning-Collection's object_detection/YOLO): intersection_over_union in
# "midpoint" format (corners by box[..., 0:1] - box[..., 2:3] / 2, (x2 - x1).clamp(0) * (y2 - y1).clamp(0), + 1e-6),
# YoloLoss (predictions.reshape(-1, S, S, C + B * 5), ious by torch.cat([iou_b1.unsqueeze(0), iou_b2.unsqueeze(0)],
# dim=0) and torch.max(ious, dim=0), exists_box = target[..., C].unsqueeze(3), box sizes by torch.sign(...) *
# torch.sqrt(torch.abs(... + 1e-6)), MSELoss(reduction="sum") over torch.flatten(..., end_dim=-2) and
# torch.flatten(..., start_dim=1), lambda_noobj and lambda_coord) on a small head with split_size S=2, B=2, C=3
def yolov1(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(10)
    rng = np.random.default_rng(9)

    def intersection_over_union(boxes_preds, boxes_labels, box_format="midpoint"):
        if box_format == "midpoint":
            box1_x1 = boxes_preds[..., 0:1] - boxes_preds[..., 2:3] / 2
            box1_y1 = boxes_preds[..., 1:2] - boxes_preds[..., 3:4] / 2
            box1_x2 = boxes_preds[..., 0:1] + boxes_preds[..., 2:3] / 2
            box1_y2 = boxes_preds[..., 1:2] + boxes_preds[..., 3:4] / 2
            box2_x1 = boxes_labels[..., 0:1] - boxes_labels[..., 2:3] / 2
            box2_y1 = boxes_labels[..., 1:2] - boxes_labels[..., 3:4] / 2
            box2_x2 = boxes_labels[..., 0:1] + boxes_labels[..., 2:3] / 2
            box2_y2 = boxes_labels[..., 1:2] + boxes_labels[..., 3:4] / 2

        if box_format == "corners":
            box1_x1 = boxes_preds[..., 0:1]
            box1_y1 = boxes_preds[..., 1:2]
            box1_x2 = boxes_preds[..., 2:3]
            box1_y2 = boxes_preds[..., 3:4]  # (N, 1)
            box2_x1 = boxes_labels[..., 0:1]
            box2_y1 = boxes_labels[..., 1:2]
            box2_x2 = boxes_labels[..., 2:3]
            box2_y2 = boxes_labels[..., 3:4]

        x1 = torch.max(box1_x1, box2_x1)
        y1 = torch.max(box1_y1, box2_y1)
        x2 = torch.min(box1_x2, box2_x2)
        y2 = torch.min(box1_y2, box2_y2)

        # .clamp(0) is for the case when they do not intersect
        intersection = (x2 - x1).clamp(0) * (y2 - y1).clamp(0)

        box1_area = abs((box1_x2 - box1_x1) * (box1_y2 - box1_y1))
        box2_area = abs((box2_x2 - box2_x1) * (box2_y2 - box2_y1))

        return intersection / (box1_area + box2_area - intersection + 1e-6)

    class YoloLoss(nn.Module):
        """
        Calculate the loss for yolo (v1) model
        """

        def __init__(self, S=7, B=2, C=20):
            super(YoloLoss, self).__init__()
            self.mse = nn.MSELoss(reduction="sum")

            """
            S is split size of image (in paper 7),
            B is number of boxes (in paper 2),
            C is number of classes (in paper and VOC dataset is 20),
            """
            self.S = S
            self.B = B
            self.C = C

            # These are from Yolo paper, signifying how much we should
            # pay loss for no object (noobj) and the box coordinates (coord)
            self.lambda_noobj = 0.5
            self.lambda_coord = 5

        def forward(self, predictions, target):
            C = self.C
            # predictions are shaped (BATCH_SIZE, S*S(C+B*5) when inputted
            predictions = predictions.reshape(-1, self.S, self.S, self.C + self.B * 5)

            # Calculate IoU for the two predicted bounding boxes with target bbox
            iou_b1 = intersection_over_union(predictions[..., C + 1:C + 5], target[..., C + 1:C + 5])
            iou_b2 = intersection_over_union(predictions[..., C + 6:C + 10], target[..., C + 1:C + 5])
            ious = torch.cat([iou_b1.unsqueeze(0), iou_b2.unsqueeze(0)], dim=0)

            # Take the box with highest IoU out of the two prediction
            # Note that bestbox will be indices of 0, 1 for which bbox was best
            iou_maxes, bestbox = torch.max(ious, dim=0)
            exists_box = target[..., C].unsqueeze(3)  # in paper this is Iobj_i

            # ======================== #
            #   FOR BOX COORDINATES    #
            # ======================== #

            # Set boxes with no object in them to 0. We only take out one of the two
            # predictions, which is the one with highest Iou calculated previously.
            box_predictions = exists_box * (
                (
                    bestbox * predictions[..., C + 6:C + 10]
                    + (1 - bestbox) * predictions[..., C + 1:C + 5]
                )
            )

            box_targets = exists_box * target[..., C + 1:C + 5]

            # Take sqrt of width, height of boxes to ensure that
            box_predictions[..., 2:4] = torch.sign(box_predictions[..., 2:4]) * torch.sqrt(
                torch.abs(box_predictions[..., 2:4] + 1e-6)
            )
            box_targets[..., 2:4] = torch.sqrt(box_targets[..., 2:4])

            box_loss = self.mse(
                torch.flatten(box_predictions, end_dim=-2),
                torch.flatten(box_targets, end_dim=-2),
            )

            # ==================== #
            #   FOR OBJECT LOSS    #
            # ==================== #

            # pred_box is the confidence score for the bbox with highest IoU
            pred_box = (
                bestbox * predictions[..., C + 5:C + 6] + (1 - bestbox) * predictions[..., C:C + 1]
            )

            object_loss = self.mse(
                torch.flatten(exists_box * pred_box),
                torch.flatten(exists_box * target[..., C:C + 1]),
            )

            # ======================= #
            #   FOR NO OBJECT LOSS    #
            # ======================= #

            no_object_loss = self.mse(
                torch.flatten((1 - exists_box) * predictions[..., C:C + 1], start_dim=1),
                torch.flatten((1 - exists_box) * target[..., C:C + 1], start_dim=1),
            )

            no_object_loss += self.mse(
                torch.flatten((1 - exists_box) * predictions[..., C + 5:C + 6], start_dim=1),
                torch.flatten((1 - exists_box) * target[..., C:C + 1], start_dim=1)
            )

            # ================== #
            #   FOR CLASS LOSS   #
            # ================== #

            class_loss = self.mse(
                torch.flatten(exists_box * predictions[..., :C], end_dim=-2,),
                torch.flatten(exists_box * target[..., :C], end_dim=-2,),
            )

            loss = (
                self.lambda_coord * box_loss  # first two rows in paper
                + object_loss  # third row in paper
                + self.lambda_noobj * no_object_loss  # forth row in paper
                + class_loss  # fifth row
            )

            return loss

    S, B, C = 2, 2, 3
    model = nn.Sequential(nn.Conv2d(3, 4, 3, 2, 1), nn.LeakyReLU(0.1), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 16), nn.LeakyReLU(0.1), nn.Linear(16, S * S * (C + B * 5)))
    init = load(m, model, state)
    loss_fn = YoloLoss(S=S, B=B, C=C)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-5, weight_decay=0)
    x = torch.tensor(normal(rng, 2, 3, 8, 8))
    target = np.zeros((2, S, S, C + 5), np.float32)
    target[..., :C] = np.eye(C, dtype=np.float32)[rng.integers(0, C, (2, S, S))]
    target[..., C] = rng.random((2, S, S)) > 0.5
    target[..., C + 1:C + 5] = rng.uniform(0.2, 0.8, (2, S, S, 4))
    y = torch.tensor(target)
    mean_loss = []
    for _ in range(1):
        out = model(x)
        loss = loss_fn(out, y)
        mean_loss.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return init, mean_loss + summary(model.parameters())


def test_yolov1():
    compare(yolov1)


# (l) a class-conditional BatchNorm as BigGAN-style and pytorch/pytorch#8985's gist write it (BatchNorm2d(affine=False),
# nn.Embedding(num_classes, num_features * 2) with embed.weight.data[:, :num_features].normal_(1, 0.02) and the rest
# zero_(), gamma, beta = self.embed(y).chunk(2, 1), gamma.view(-1, self.num_features, 1, 1)) and ethanjperez's FiLM
# generator (film params by a Linear, torch.split into gammas and betas, unsqueeze(2).unsqueeze(3).expand_as(x)) in
# a small conditional classifier; the embedding's init draws are numpy's for torch
def conditional_bn_film(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(11)
    rng = np.random.default_rng(10)

    class ConditionalBatchNorm2d(nn.Module):
        def __init__(self, num_features, num_classes):
            super().__init__()
            self.num_features = num_features
            self.bn = nn.BatchNorm2d(num_features, affine=False)
            self.embed = nn.Embedding(num_classes, num_features * 2)
            self.embed.weight.data[:, :num_features].normal_(1, 0.02)  # Initialise scale at N(1, 0.02)
            self.embed.weight.data[:, num_features:].zero_()  # Initialise bias at 0

        def forward(self, x, y):
            out = self.bn(x)
            gamma, beta = self.embed(y).chunk(2, 1)
            out = gamma.view(-1, self.num_features, 1, 1) * out + beta.view(-1, self.num_features, 1, 1)
            return out

    class FiLM(nn.Module):
        """
        A Feature-wise Linear Modulation Layer from
        'FiLM: Visual Reasoning with a General Conditioning Layer'
        """
        def forward(self, x, gammas, betas):
            gammas = gammas.unsqueeze(2).unsqueeze(3).expand_as(x)
            betas = betas.unsqueeze(2).unsqueeze(3).expand_as(x)
            return (gammas * x) + betas

    class Net(nn.Module):
        def __init__(self, num_classes=3, cond_dim=4):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1, bias=False)
            self.cbn = ConditionalBatchNorm2d(6, num_classes)
            self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
            self.film_generator = nn.Linear(cond_dim, 2 * 6)
            self.film = FiLM()
            self.fc = nn.Linear(6, num_classes)

        def forward(self, x, y, q):
            x = F.relu(self.cbn(self.conv1(x), y))
            film_params = self.film_generator(q)
            gammas, betas = torch.split(film_params, 6, dim=-1)
            x = F.relu(self.film(self.conv2(x), gammas, betas))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    model = Net()
    init = load(m, model, state)
    assert init['cbn.embed.weight'][:, 6:].sum() == 0 and abs(init['cbn.embed.weight'][:, :6].mean() - 1) < 0.05
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.tensor(normal(rng, 3, 3, 5, 5))
    y = torch.tensor([0, 2, 1])
    q = torch.tensor(normal(rng, 3, 4))
    losses = []
    for _ in range(1):
        loss = F.cross_entropy(model(x, y, q), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append(model(x, y, q).sum().item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_conditional_bn_film():
    compare(conditional_bn_film)


# (m) karpathy/pytorch-normalizing-flows' nflib/flows.py and its notebook: MLP of LeakyReLU(0.2), AffineHalfFlow
# (halves by x[:, ::2] and x[:, 1::2] swapped by parity, s_cond and t_cond nets, z1 = torch.exp(s) * x1 + t, log_det
# by torch.sum(s, dim=1), its own backward method inverting the flow), NormalizingFlow accumulating log_det += ld
# from torch.zeros(m), NormalizingFlowModel with the notebook's logistic prior TransformedDistribution(Uniform(
# torch.zeros(2), torch.ones(2)), SigmoidTransform().inv) read by log_prob(zs[-1]).view(x.size(0), -1).sum(1), the
# loss -torch.sum(prior_logprob + log_det) under Adam(weight_decay=1e-5), and the inverse by model.backward
def normalizing_flows(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    torch.manual_seed(12)
    Uniform = torch.distributions.Uniform
    TransformedDistribution = torch.distributions.TransformedDistribution
    SigmoidTransform = torch.distributions.transforms.SigmoidTransform
    rng = np.random.default_rng(11)

    class MLP(nn.Module):
        """ a simple 4-layer MLP """

        def __init__(self, nin, nout, nh):
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(nin, nh),
                nn.LeakyReLU(0.2),
                nn.Linear(nh, nh),
                nn.LeakyReLU(0.2),
                nn.Linear(nh, nh),
                nn.LeakyReLU(0.2),
                nn.Linear(nh, nout),
            )

        def forward(self, x):
            return self.net(x)

    class AffineHalfFlow(nn.Module):
        """
        As seen in RealNVP, affine autoregressive flow (z = x * exp(s) + t), where half of the
        dimensions in x are linearly scaled/transfromed as a function of the other half.
        Which half is which is determined by the parity bit.
        - RealNVP both scales and shifts (default)
        - NICE only shifts
        """
        def __init__(self, dim, parity, net_class=MLP, nh=24, scale=True, shift=True):
            super().__init__()
            self.dim = dim
            self.parity = parity
            self.s_cond = lambda x: x.new_zeros(x.size(0), self.dim // 2)
            self.t_cond = lambda x: x.new_zeros(x.size(0), self.dim // 2)
            if scale:
                self.s_cond = net_class(self.dim // 2, self.dim // 2, nh)
            if shift:
                self.t_cond = net_class(self.dim // 2, self.dim // 2, nh)

        def forward(self, x):
            x0, x1 = x[:, ::2], x[:, 1::2]
            if self.parity:
                x0, x1 = x1, x0
            s = self.s_cond(x0)
            t = self.t_cond(x0)
            z0 = x0  # untouched half
            z1 = torch.exp(s) * x1 + t  # transform this half as a function of the other
            if self.parity:
                z0, z1 = z1, z0
            z = torch.cat([z0, z1], dim=1)
            log_det = torch.sum(s, dim=1)
            return z, log_det

        def backward(self, z):
            z0, z1 = z[:, ::2], z[:, 1::2]
            if self.parity:
                z0, z1 = z1, z0
            s = self.s_cond(z0)
            t = self.t_cond(z0)
            x0 = z0  # this was the same
            x1 = (z1 - t) * torch.exp(-s)  # reverse the transform on this half
            if self.parity:
                x0, x1 = x1, x0
            x = torch.cat([x0, x1], dim=1)
            log_det = torch.sum(-s, dim=1)
            return x, log_det

    class NormalizingFlow(nn.Module):
        """ A sequence of Normalizing Flows is a Normalizing Flow """

        def __init__(self, flows):
            super().__init__()
            self.flows = nn.ModuleList(flows)

        def forward(self, x):
            m_, _ = x.shape
            log_det = torch.zeros(m_)
            zs = [x]
            for flow in self.flows:
                x, ld = flow.forward(x)
                log_det += ld
                zs.append(x)
            return zs, log_det

        def backward(self, z):
            m_, _ = z.shape
            log_det = torch.zeros(m_)
            xs = [z]
            for flow in self.flows[::-1]:
                z, ld = flow.backward(z)
                log_det += ld
                xs.append(z)
            return xs, log_det

    class NormalizingFlowModel(nn.Module):
        """ A Normalizing Flow Model is a (prior, flow) pair """

        def __init__(self, prior, flows):
            super().__init__()
            self.prior = prior
            self.flow = NormalizingFlow(flows)

        def forward(self, x):
            zs, log_det = self.flow.forward(x)
            prior_logprob = self.prior.log_prob(zs[-1]).view(x.size(0), -1).sum(1)
            return zs, prior_logprob, log_det

        def backward(self, z):
            xs, log_det = self.flow.backward(z)
            return xs, log_det

    prior = TransformedDistribution(Uniform(torch.zeros(2), torch.ones(2)), SigmoidTransform().inv)  # Logistic
    flows = [AffineHalfFlow(dim=2, parity=i % 2, nh=8) for i in range(2)]
    model = NormalizingFlowModel(prior, flows)
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    x = torch.tensor(normal(rng, 6, 2))
    losses = []
    model.train()
    for k in range(1):
        zs, prior_logprob, log_det = model(x)
        logprob = prior_logprob + log_det
        loss = -torch.sum(logprob)  # NLL

        model.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        zs, prior_logprob, log_det = model(x)
        xs, back_det = model.backward(zs[-1])
    assert float((xs[-1] - x).abs().max()) < 1e-4 and float((log_det + back_det).abs().max()) < 1e-4
    return init, losses + zs[-1].view(-1).tolist() + prior_logprob.tolist() + summary(model.parameters())


def test_normalizing_flows():
    compare(normalizing_flows)


# (n) timm's loss/jsd.py and loss/cross_entropy.py as AugMix's training writes them: LabelSmoothingCrossEntropy
# (logprobs.gather(dim=-1, index=target.unsqueeze(1)), the smooth term by -logprobs.mean(dim=-1)), JsdCrossEntropy
# (torch.split(output, split_size), cross entropy on the clean split, the mixture by torch.clamp(torch.stack(probs)
# .mean(axis=0), 1e-7, 1).log() and alpha * sum of F.kl_div(..., reduction='batchmean') / len(probs)), on a batch
# of torch.cat of the clean images and two augmented copies (numpy noise standing for AugMix's PIL operations)
def jsd_augmix(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(13)
    rng = np.random.default_rng(12)

    class LabelSmoothingCrossEntropy(nn.Module):
        """ NLL loss with label smoothing.
        """
        def __init__(self, smoothing=0.1):
            super(LabelSmoothingCrossEntropy, self).__init__()
            assert smoothing < 1.0
            self.smoothing = smoothing
            self.confidence = 1. - smoothing

        def forward(self, x, target):
            logprobs = F.log_softmax(x, dim=-1)
            nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
            nll_loss = nll_loss.squeeze(1)
            smooth_loss = -logprobs.mean(dim=-1)
            loss = self.confidence * nll_loss + self.smoothing * smooth_loss
            return loss.mean()

    class JsdCrossEntropy(nn.Module):
        """ Jensen-Shannon Divergence + Cross-Entropy Loss

        Based on impl here: https://github.com/google-research/augmix/blob/master/imagenet.py
        From paper: 'AugMix: A Simple Data Processing Method to Improve Robustness and Uncertainty -
        https://arxiv.org/abs/1912.02781

        Hacked together by / Copyright 2020 Ross Wightman
        """
        def __init__(self, num_splits=3, alpha=12, smoothing=0.1):
            super().__init__()
            self.num_splits = num_splits
            self.alpha = alpha
            if smoothing is not None and smoothing > 0:
                self.cross_entropy_loss = LabelSmoothingCrossEntropy(smoothing)
            else:
                self.cross_entropy_loss = torch.nn.CrossEntropyLoss()

        def __call__(self, output, target):
            split_size = output.shape[0] // self.num_splits
            assert split_size * self.num_splits == output.shape[0]
            logits_split = torch.split(output, split_size)

            # Cross-entropy is only computed on clean images
            loss = self.cross_entropy_loss(logits_split[0], target[:split_size])
            probs = [F.softmax(logits, dim=1) for logits in logits_split]

            # Clamp mixture distribution to avoid exploding KL divergence
            logp_mixture = torch.clamp(torch.stack(probs).mean(axis=0), 1e-7, 1).log()
            loss += self.alpha * sum([F.kl_div(
                logp_mixture, p_split, reduction='batchmean') for p_split in probs]) / len(probs)
            return loss

    model = nn.Sequential(nn.Conv2d(3, 4, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))
    init = load(m, model, state)
    train_loss_fn = JsdCrossEntropy(num_splits=3, smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    clean = normal(rng, 3, 3, 6, 6)
    images = [torch.tensor(clean), torch.tensor(clean + 0.3 * normal(rng, 3, 3, 6, 6)),
              torch.tensor(clean * 0.8)]
    target = torch.tensor([1, 4, 2])
    losses = []
    for _ in range(1):
        input = torch.cat(images, 0)
        output = model(input)
        loss = train_loss_fn(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_jsd_augmix():
    compare(jsd_augmix)


# (o) HRNet-Semantic-Segmentation's lib/core/criterion.py: OhemCrossEntropy (CrossEntropyLoss(weight=,
# ignore_index=, reduction='none'), the score brought to the label's size by the deprecated F.upsample(input=score,
# size=(h, w), mode='bilinear'), tmp_target[tmp_target == self.ignore_label] = 0, pred.gather(1,
# tmp_target.unsqueeze(1)), the kept pixels by .sort(), min_value = pred[min(self.min_kept, pred.numel() - 1)] and
# Python's max of a 0-d tensor and the threshold, pixel_losses[mask][ind][pred < threshold].mean()) with its plain
# CrossEntropy twin, on a small segmentation head
def ohem_hrnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(14)
    rng = np.random.default_rng(13)

    class CrossEntropy(nn.Module):
        def __init__(self, ignore_label=-1, weight=None):
            super(CrossEntropy, self).__init__()
            self.ignore_label = ignore_label
            self.criterion = nn.CrossEntropyLoss(
                weight=weight,
                ignore_index=ignore_label
            )

        def forward(self, score, target):
            ph, pw = score.size(2), score.size(3)
            h, w = target.size(1), target.size(2)
            if ph != h or pw != w:
                score = F.upsample(
                        input=score, size=(h, w), mode='bilinear')

            loss = self.criterion(score, target)

            return loss

    class OhemCrossEntropy(nn.Module):
        def __init__(self, ignore_label=-1, thres=0.7,
                     min_kept=100000, weight=None):
            super(OhemCrossEntropy, self).__init__()
            self.thresh = thres
            self.min_kept = max(1, min_kept)
            self.ignore_label = ignore_label
            self.criterion = nn.CrossEntropyLoss(
                weight=weight,
                ignore_index=ignore_label,
                reduction='none'
            )

        def forward(self, score, target, **kwargs):
            ph, pw = score.size(2), score.size(3)
            h, w = target.size(1), target.size(2)
            if ph != h or pw != w:
                score = F.upsample(input=score, size=(h, w), mode='bilinear')
            pred = F.softmax(score, dim=1)
            pixel_losses = self.criterion(score, target).contiguous().view(-1)
            mask = target.contiguous().view(-1) != self.ignore_label

            tmp_target = target.clone()
            tmp_target[tmp_target == self.ignore_label] = 0
            pred = pred.gather(1, tmp_target.unsqueeze(1))
            pred, ind = pred.contiguous().view(-1,)[mask].contiguous().sort()
            min_value = pred[min(self.min_kept, pred.numel() - 1)]
            threshold = max(min_value, self.thresh)

            pixel_losses = pixel_losses[mask][ind]
            pixel_losses = pixel_losses[pred < threshold]
            return pixel_losses.mean()

    model = nn.Sequential(nn.Conv2d(3, 6, 3, 2, 1), nn.ReLU(inplace=True), nn.Conv2d(6, 3, 1))
    init = load(m, model, state)
    weight = torch.FloatTensor([0.8, 1.0, 1.2])
    ohem = OhemCrossEntropy(ignore_label=255, thres=0.7, min_kept=20, weight=weight)
    plain = CrossEntropy(ignore_label=255, weight=weight)
    optimizer = torch.optim.SGD([{'params': filter(lambda p: p.requires_grad, model.parameters()), 'lr': 0.01}],
                                lr=0.01, momentum=0.9, weight_decay=5e-4, nesterov=False)
    image = torch.tensor(normal(rng, 2, 3, 8, 8))
    label = rng.integers(0, 3, (2, 8, 8))
    label[:, :, :2] = 255
    labels = torch.tensor(label)
    losses = []
    for _ in range(1):
        pred = model(image)
        loss = ohem(pred, labels)
        reduced_loss = plain(pred, labels)
        model.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), reduced_loss.item()]
    return init, losses + summary(model.parameters())


def test_ohem_hrnet():
    compare(ohem_hrnet)
