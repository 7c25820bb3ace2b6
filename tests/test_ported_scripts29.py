"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: facebookresearch's ConvNeXt-V2 (its LayerNorm written by hand for channels_first, GRN by
torch.norm over (1, 2) of a channels-last tensor, a timm LayerNorm2d by permute around F.layer_norm, trunc_normal_
through apply, AdamW with no-decay groups); DingXiaoH's ACNet (ACBlock's square, vertical and horizontal
convolutions with their BatchNorms, the cropping variant, BN folded into one kernel by in-place adds into its
centre, .data assigned and __delattr__ in switch_to_deploy); megvii's mdistiller DKD (gt masks by scatter_ and
.bool(), cat_mask, F.kl_div with size_average=False, 1000.0 * a bool mask, keepdims=, a Distiller whose train()
keeps the teacher in eval); Keller Jordan's airbench94 data pipeline (CifarLoader's uint8 to normalised
channels_last images, batch_flip_lr by torch.where, batch_crop by boolean masks of shifts over reflect-padded
images, flips every other epoch, the whitening layer's init by unfold, eigh(UPLO='U') and flip); Luolc's AdaBound
(the deprecated add(scalar, tensor) and addcmul_(value, t, t), torch.max(..., out=), which found that tnet's max,
min, maximum and minimum lacked out=; full_like step sizes clamped, base_lrs, __setstate__ through load_state_dict);
adobe's antialiased-cnns (BlurPool's binomial buffer repeated per channel, reflect, replicate and filt_size=1 paths,
MaxBlurPool); miguelvr's DropBlock (a mask by torch.rand < gamma of numpy's linspace, max_pool2d with even blocks,
numel() / sum()) with its LinearScheduler; owruby's ShakeDrop (a custom Function drawing its gate and its forward
and backward coefficients); multi-task weighting by learned uncertainty (Kendall's log_vars and Mikoto10032's
AutomaticWeightedLoss in its own param group); 4uiiurz1's UNet++ (NestedUNet with deep supervision,
Upsample(bilinear, align_corners=True), BCEDiceLoss, iou_score through .data.cpu().numpy()); NegatioN's online
batch-all triplet loss (distances zeroed in place by masks, the sqrt guarded by eq(0), 3-d masks of broadcast
comparisons and ~, the fraction of positive triplets); mit-han-lab's DiffAugment (colour, translation by meshgrid
and advanced indexing of a padded channels-last copy, cutout by a mask written at index grids; its meshgrid without
indexing= found that tnet's took no indexing=None and gave no warning) under a hinge GAN; KaiyangZhou's MixStyle
(instance statistics mixed by a Beta sample over a randperm, activated through model.apply); and wjmaddox's SWAG
(parameters popped from module._parameters into mean, second-moment and deviation buffers, weights sampled as plain
tensors set by __setattr__, bn_update's reset running buffers and b / (n + b) momenta). Each runs in tnet, then in
torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few
numbers, agree. Numpy (or Python's random, seeded alike on both sides) draws what a script draws, or torch replays
tnet's draws (`replayed`); shapes are tiny and runs take one to three steps. Each script seeds torch first, as its
source's main does. Where Adam would normalise a gradient that is rounding alone (a bias before a BatchNorm, an
embedding's bias under a distance), the script takes its source's SGD option or the layer has no bias, as it says."""
import math
import random

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def replayed(m, replay, key, t):
    """t as tnet drew it: tnet's run keeps its draw under key, torch's run takes that draw in place of its own."""
    return m.torch.tensor(replay.setdefault(key, t.detach().cpu().numpy().copy()))


# (a) facebookresearch/ConvNeXt-V2's models/convnextv2.py and utils.py: LayerNorm with data_format "channels_first"
# written by hand (mean, pow(2).mean, weight[:, None, None]), GRN on channels-last activations by torch.norm(p=2,
# dim=(1, 2)), the Block's permutes around Linear pointwise convolutions, ConvNeXtV2's downsample layers (here with
# timm's LayerNorm2d, an nn.LayerNorm subclass permuting around F.layer_norm), _init_weights by trunc_normal_ through
# apply, head_init_scale, forward_features' global mean; AdamW over decay and no-decay groups (1-d parameters and GRN's)
def convnext_v2(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class LayerNorm(nn.Module):
        def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(normalized_shape))
            self.bias = nn.Parameter(torch.zeros(normalized_shape))
            self.eps = eps
            self.data_format = data_format
            if self.data_format not in ["channels_last", "channels_first"]:
                raise NotImplementedError
            self.normalized_shape = (normalized_shape, )

        def forward(self, x):
            if self.data_format == "channels_last":
                return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
            elif self.data_format == "channels_first":
                u = x.mean(1, keepdim=True)
                s = (x - u).pow(2).mean(1, keepdim=True)
                x = (x - u) / torch.sqrt(s + self.eps)
                x = self.weight[:, None, None] * x + self.bias[:, None, None]
                return x

    class LayerNorm2d(nn.LayerNorm):
        """ LayerNorm for channels of '2D' spatial NCHW tensors """
        def __init__(self, num_channels, eps=1e-6, affine=True):
            super().__init__(num_channels, eps=eps, elementwise_affine=affine)

        def forward(self, x):
            x = x.permute(0, 2, 3, 1)
            x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
            x = x.permute(0, 3, 1, 2)
            return x

    class GRN(nn.Module):
        """ GRN (Global Response Normalization) layer """
        def __init__(self, dim):
            super().__init__()
            self.gamma = nn.Parameter(torch.zeros(1, 1, 1, dim))
            self.beta = nn.Parameter(torch.zeros(1, 1, 1, dim))

        def forward(self, x):
            Gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
            Nx = Gx / (Gx.mean(dim=-1, keepdim=True) + 1e-6)
            return self.gamma * (x * Nx) + self.beta + x

    class Block(nn.Module):
        def __init__(self, dim, drop_path=0.):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)  # depthwise conv
            self.norm = LayerNorm(dim, eps=1e-6)
            self.pwconv1 = nn.Linear(dim, 4 * dim)  # pointwise/1x1 convs, implemented with linear layers
            self.act = nn.GELU()
            self.grn = GRN(4 * dim)
            self.pwconv2 = nn.Linear(4 * dim, dim)
            self.drop_path = nn.Identity()

        def forward(self, x):
            input = x
            x = self.dwconv(x)
            x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
            x = self.norm(x)
            x = self.pwconv1(x)
            x = self.act(x)
            x = self.grn(x)
            x = self.pwconv2(x)
            x = x.permute(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W)
            x = input + self.drop_path(x)
            return x

    class ConvNeXtV2(nn.Module):
        def __init__(self, in_chans=3, num_classes=10, depths=[1, 1], dims=[8, 16], drop_path_rate=0.,
                     head_init_scale=1.):
            super().__init__()
            self.depths = depths
            self.downsample_layers = nn.ModuleList()  # stem and 3 intermediate downsampling conv layers
            stem = nn.Sequential(
                nn.Conv2d(in_chans, dims[0], kernel_size=2, stride=2),
                LayerNorm(dims[0], eps=1e-6, data_format="channels_first")
            )
            self.downsample_layers.append(stem)
            for i in range(len(dims) - 1):
                downsample_layer = nn.Sequential(
                    LayerNorm2d(dims[i], eps=1e-6),
                    nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2),
                )
                self.downsample_layers.append(downsample_layer)
            self.stages = nn.ModuleList()
            dp_rates = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
            cur = 0
            for i in range(len(dims)):
                stage = nn.Sequential(*[Block(dim=dims[i], drop_path=dp_rates[cur + j]) for j in range(depths[i])])
                self.stages.append(stage)
                cur += depths[i]
            self.norm = nn.LayerNorm(dims[-1], eps=1e-6)  # final norm layer
            self.head = nn.Linear(dims[-1], num_classes)
            self.apply(self._init_weights)
            self.head.weight.data.mul_(head_init_scale)
            self.head.bias.data.mul_(head_init_scale)

        def _init_weights(self, m):
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=.2)
                nn.init.constant_(m.bias, 0)

        def forward_features(self, x):
            for i in range(len(self.depths)):
                x = self.downsample_layers[i](x)
                x = self.stages[i](x)
            return self.norm(x.mean([-2, -1]))  # global average pooling, (N, C, H, W) -> (N, C)

        def forward(self, x):
            x = self.forward_features(x)
            x = self.head(x)
            return x

    model = ConvNeXtV2(num_classes=4, depths=[1, 0], head_init_scale=0.5)  # 7x7 depthwise: slow under the interpreter
    init = load(m, model, state)
    skip = {'gamma', 'beta'}
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if len(param.shape) == 1 or name.endswith(".bias") or name.split('.')[-1] in skip:
            no_decay.append(param)
        else:
            decay.append(param)
    optimizer = torch.optim.AdamW([{'params': no_decay, 'weight_decay': 0.},
                                   {'params': decay, 'weight_decay': 0.05}], lr=4e-3)
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for _ in range(2):
        x, y = torch.from_numpy(normal(rng, 3, 3, 4, 4)), torch.from_numpy(rng.integers(0, 4, 3))
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_convnext_v2():
    compare(convnext_v2)


# (b) DingXiaoH/ACNet's acnet/acb.py: ACBlock's KxK, Kx1 and 1xK convolutions (no bias) each with its BatchNorm, the
# asymmetric paddings aligned to the square's windows or, where padding < kernel_size // 2, the input cropped;
# _fuse_bn_tensor, _add_to_square_kernel's += into the centre slice of the fused kernel, switch_to_deploy assigning
# .data and __delattr__ of the branches (through model.modules(), as acnet_fusion does); trained in train mode,
# compared in eval mode before and after the fusion, then trained one step deployed
def acnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_ = nn.init
    torch.manual_seed(1)
    rng = np.random.default_rng(1)

    class ACBlock(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                     padding_mode='zeros', deploy=False, use_affine=True, reduce_gamma=False, gamma_init=None):
            super(ACBlock, self).__init__()
            self.deploy = deploy
            if deploy:
                self.fused_conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels,
                                            kernel_size=(kernel_size, kernel_size), stride=stride, padding=padding,
                                            dilation=dilation, groups=groups, bias=True, padding_mode=padding_mode)
            else:
                self.square_conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels,
                                             kernel_size=(kernel_size, kernel_size), stride=stride, padding=padding,
                                             dilation=dilation, groups=groups, bias=False,
                                             padding_mode=padding_mode)
                self.square_bn = nn.BatchNorm2d(num_features=out_channels, affine=use_affine)
                if padding - kernel_size // 2 >= 0:
                    #   Common use case. E.g., k=3, p=1 or k=5, p=2
                    self.crop = 0
                    #   Compared to the KxK layer, the padding of the 1xK layer and Kx1 layer should be adjust to
                    #   align the sliding windows (Fig 2 in the paper)
                    hor_padding = [padding - kernel_size // 2, padding]
                    ver_padding = [padding, padding - kernel_size // 2]
                else:
                    #   A negative "padding" (padding - kernel_size//2 < 0, which is not a common use case) is
                    #   cropping. Since nn.Conv2d does not support negative padding, we implement it manually
                    self.crop = kernel_size // 2 - padding
                    hor_padding = [0, padding]
                    ver_padding = [padding, 0]
                self.ver_conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels,
                                          kernel_size=(kernel_size, 1), stride=stride, padding=ver_padding,
                                          dilation=dilation, groups=groups, bias=False, padding_mode=padding_mode)
                self.hor_conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels,
                                          kernel_size=(1, kernel_size), stride=stride, padding=hor_padding,
                                          dilation=dilation, groups=groups, bias=False, padding_mode=padding_mode)
                self.ver_bn = nn.BatchNorm2d(num_features=out_channels, affine=use_affine)
                self.hor_bn = nn.BatchNorm2d(num_features=out_channels, affine=use_affine)
                if reduce_gamma:
                    self.init_gamma(1.0 / 3)
                if gamma_init is not None:
                    assert not reduce_gamma
                    self.init_gamma(gamma_init)

        def _fuse_bn_tensor(self, kernel, bn):
            std = (bn.running_var + bn.eps).sqrt()
            t = (bn.weight / std).reshape(-1, 1, 1, 1)
            return kernel * t, bn.bias - bn.running_mean * bn.weight / std

        def _add_to_square_kernel(self, square_kernel, asym_kernel):
            asym_h = asym_kernel.size(2)
            asym_w = asym_kernel.size(3)
            square_h = square_kernel.size(2)
            square_w = square_kernel.size(3)
            square_kernel[:, :, square_h // 2 - asym_h // 2: square_h // 2 - asym_h // 2 + asym_h,
                          square_w // 2 - asym_w // 2: square_w // 2 - asym_w // 2 + asym_w] += asym_kernel

        def get_equivalent_kernel_bias(self):
            hor_k, hor_b = self._fuse_bn_tensor(self.hor_conv.weight, self.hor_bn)
            ver_k, ver_b = self._fuse_bn_tensor(self.ver_conv.weight, self.ver_bn)
            square_k, square_b = self._fuse_bn_tensor(self.square_conv.weight, self.square_bn)
            self._add_to_square_kernel(square_k, hor_k)
            self._add_to_square_kernel(square_k, ver_k)
            return square_k, hor_b + ver_b + square_b

        def switch_to_deploy(self):
            deploy_k, deploy_b = self.get_equivalent_kernel_bias()
            self.deploy = True
            self.fused_conv = nn.Conv2d(in_channels=self.square_conv.in_channels,
                                        out_channels=self.square_conv.out_channels,
                                        kernel_size=self.square_conv.kernel_size, stride=self.square_conv.stride,
                                        padding=self.square_conv.padding, dilation=self.square_conv.dilation,
                                        groups=self.square_conv.groups, bias=True,
                                        padding_mode=self.square_conv.padding_mode)
            self.__delattr__('square_conv')
            self.__delattr__('square_bn')
            self.__delattr__('hor_conv')
            self.__delattr__('hor_bn')
            self.__delattr__('ver_conv')
            self.__delattr__('ver_bn')
            self.fused_conv.weight.data = deploy_k
            self.fused_conv.bias.data = deploy_b

        def init_gamma(self, gamma_value):
            init_.constant_(self.square_bn.weight, gamma_value)
            init_.constant_(self.ver_bn.weight, gamma_value)
            init_.constant_(self.hor_bn.weight, gamma_value)

        def forward(self, input):
            if self.deploy:
                return self.fused_conv(input)
            else:
                square_outputs = self.square_conv(input)
                square_outputs = self.square_bn(square_outputs)
                if self.crop > 0:
                    ver_input = input[:, :, :, self.crop:-self.crop]
                    hor_input = input[:, :, self.crop:-self.crop, :]
                else:
                    ver_input = input
                    hor_input = input
                vertical_outputs = self.ver_conv(ver_input)
                vertical_outputs = self.ver_bn(vertical_outputs)
                horizontal_outputs = self.hor_conv(hor_input)
                horizontal_outputs = self.hor_bn(horizontal_outputs)
                result = square_outputs + vertical_outputs + horizontal_outputs
                return result

    class Net(nn.Module):
        def __init__(self, num_classes=3):
            super().__init__()
            self.stem = ACBlock(3, 6, 3, padding=1, gamma_init=0.5)
            self.body = ACBlock(6, 6, 3, stride=1, padding=0)
            self.fc = nn.Linear(6, num_classes)

        def forward(self, x):
            x = torch.tanh(self.stem(x))
            x = torch.tanh(self.body(x))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    model = Net()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    losses = []
    for _ in range(2):
        x, y = torch.from_numpy(normal(rng, 4, 3, 6, 6)), torch.from_numpy(rng.integers(0, 3, 4))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    x = torch.from_numpy(normal(rng, 2, 3, 6, 6))
    before = model(x)
    for module in model.modules():
        if hasattr(module, 'switch_to_deploy'):
            module.switch_to_deploy()
    after = model(x)
    assert not hasattr(model.stem, 'square_conv') and model.stem.fused_conv.bias is not None
    assert (after - before).abs().max().item() < 1e-4
    losses += before.flatten().tolist()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.cross_entropy(model(x), torch.tensor([0, 2]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_acnet():
    compare(acnet)


# (c) megvii-research/mdistiller's mdistiller/distillers/DKD.py and _base.py: dkd_loss (target and non-target class
# KD: softmax at a temperature, _get_gt_mask and _get_other_mask by scatter_ into zeros_like/ones_like and .bool(),
# cat_mask by sums with keepdims=True, F.kl_div(size_average=False) * T ** 2 / batch, the non-target part by
# subtracting 1000.0 * gt_mask before the softmaxes); the Distiller base whose train() sets the teacher back to eval,
# get_learnable_parameters, forward(**kwargs) to forward_train with the warmup factor min(epoch / warmup, 1.0);
# CIFAR-style student and teacher returning (logits, feats)
def dkd(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(2)
    rng = np.random.default_rng(2)

    def dkd_loss(logits_student, logits_teacher, target, alpha, beta, temperature):
        gt_mask = _get_gt_mask(logits_student, target)
        other_mask = _get_other_mask(logits_student, target)
        pred_student = F.softmax(logits_student / temperature, dim=1)
        pred_teacher = F.softmax(logits_teacher / temperature, dim=1)
        pred_student = cat_mask(pred_student, gt_mask, other_mask)
        pred_teacher = cat_mask(pred_teacher, gt_mask, other_mask)
        log_pred_student = torch.log(pred_student)
        tckd_loss = (
            F.kl_div(log_pred_student, pred_teacher, size_average=False)
            * (temperature**2)
            / target.shape[0]
        )
        pred_teacher_part2 = F.softmax(
            logits_teacher / temperature - 1000.0 * gt_mask, dim=1
        )
        log_pred_student_part2 = F.log_softmax(
            logits_student / temperature - 1000.0 * gt_mask, dim=1
        )
        nckd_loss = (
            F.kl_div(log_pred_student_part2, pred_teacher_part2, size_average=False)
            * (temperature**2)
            / target.shape[0]
        )
        return alpha * tckd_loss + beta * nckd_loss

    def _get_gt_mask(logits, target):
        target = target.reshape(-1)
        mask = torch.zeros_like(logits).scatter_(1, target.unsqueeze(1), 1).bool()
        return mask

    def _get_other_mask(logits, target):
        target = target.reshape(-1)
        mask = torch.ones_like(logits).scatter_(1, target.unsqueeze(1), 0).bool()
        return mask

    def cat_mask(t, mask1, mask2):
        t1 = (t * mask1).sum(dim=1, keepdims=True)
        t2 = (t * mask2).sum(1, keepdims=True)
        rt = torch.cat([t1, t2], dim=1)
        return rt

    class Distiller(nn.Module):
        def __init__(self, student, teacher):
            super(Distiller, self).__init__()
            self.student = student
            self.teacher = teacher

        def train(self, mode=True):
            # teacher as eval mode by default
            if not isinstance(mode, bool):
                raise ValueError("training mode is expected to be boolean")
            self.training = mode
            for module in self.children():
                module.train(mode)
            self.teacher.eval()
            return self

        def get_learnable_parameters(self):
            return [v for k, v in self.student.named_parameters()]

        def get_extra_parameters(self):
            return 0

        def forward_train(self, **kwargs):
            raise NotImplementedError()

        def forward_test(self, image):
            return self.student(image)[0]

        def forward(self, **kwargs):
            if self.training:
                return self.forward_train(**kwargs)
            return self.forward_test(kwargs["image"])

    class DKD(Distiller):
        """Decoupled Knowledge Distillation(CVPR 2022)"""
        def __init__(self, student, teacher, cfg):
            super(DKD, self).__init__(student, teacher)
            self.ce_loss_weight = cfg["CE_WEIGHT"]
            self.alpha = cfg["ALPHA"]
            self.beta = cfg["BETA"]
            self.temperature = cfg["T"]
            self.warmup = cfg["WARMUP"]

        def forward_train(self, image, target, **kwargs):
            logits_student, _ = self.student(image)
            with torch.no_grad():
                logits_teacher, _ = self.teacher(image)
            # losses
            loss_ce = self.ce_loss_weight * F.cross_entropy(logits_student, target)
            loss_dkd = min(kwargs["epoch"] / self.warmup, 1.0) * dkd_loss(
                logits_student, logits_teacher, target, self.alpha, self.beta, self.temperature)
            losses_dict = {
                "loss_ce": loss_ce,
                "loss_kd": loss_dkd,
            }
            return logits_student, losses_dict

    class Net(nn.Module):
        def __init__(self, width, num_classes=5):
            super().__init__()
            self.conv = nn.Conv2d(3, width, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(width)
            self.fc = nn.Linear(width, num_classes)

        def forward(self, x):
            x = torch.tanh(self.bn(self.conv(x)))
            feat = F.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.fc(feat), {"pooled_feat": feat, "feats": [x]}

    distiller = DKD(Net(4), Net(8), {"CE_WEIGHT": 1.0, "ALPHA": 1.0, "BETA": 8.0, "T": 4.0, "WARMUP": 2})
    init = load(m, distiller, state)
    distiller.train()
    assert distiller.student.training and not distiller.teacher.training
    try:
        distiller.train(1)
    except ValueError:
        pass
    optimizer = torch.optim.SGD(distiller.get_learnable_parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    losses = []
    for epoch in range(1, 4):
        image, target = torch.from_numpy(normal(rng, 4, 3, 4, 4)), torch.from_numpy(rng.integers(0, 5, 4))
        preds, losses_dict = distiller(image=image, target=target, epoch=epoch)
        loss = sum([l.mean() for l in losses_dict.values()])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [losses_dict["loss_ce"].item(), losses_dict["loss_kd"].item()]
    distiller.eval()
    losses += distiller(image=image).flatten().tolist()
    return init, losses + summary(distiller.parameters()) + summary(distiller.buffers())


def test_dkd():
    compare(dkd)


# (d) KellerJordan/cifar10-airbench's airbench94.py data pipeline and whitening: CifarLoader (uint8 NHWC images to
# float, / 255, permute to NCHW and channels_last, normalised by mean and std; on the first epoch the flipped copy
# and the reflect-padded copy kept in proc_images; batch_crop by boolean masks of randint shifts, r <= 2 and r > 2
# paths; every other epoch all images flipped; torch.randperm order), batch_flip_lr by torch.where of a rand mask;
# init_whitening_conv by get_patches (two unfolds, transpose, reshape), the patch covariance, eigh(UPLO='U'), flips
# and the weight written by .data[:] = cat((v, -v)); the network's frozen whitening layer, BatchNorm with a frozen
# weight, the summed label-smoothed loss and Nesterov SGD over bias and non-bias groups. torch replays tnet's draws;
# torch loads tnet's whitening (eigenvectors' signs are free), the eigenvalues are compared
def airbench_loader(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    CIFAR_MEAN = torch.tensor((0.4914, 0.4822, 0.4465))
    CIFAR_STD = torch.tensor((0.2470, 0.2435, 0.2616))
    draws = iter(range(1000))

    def batch_flip_lr(inputs):
        flip_mask = (torch.rand(len(inputs), device=inputs.device) < 0.5).view(-1, 1, 1, 1)
        flip_mask = replayed(m, replay, next(draws), flip_mask)
        return torch.where(flip_mask, inputs.flip(-1), inputs)

    def batch_crop(images, crop_size):
        r = (images.size(-1) - crop_size) // 2
        shifts = torch.randint(-r, r + 1, size=(len(images), 2), device=images.device)
        shifts = replayed(m, replay, next(draws), shifts)
        images_out = torch.empty((len(images), 3, crop_size, crop_size), device=images.device, dtype=images.dtype)
        # The two cropping methods in this if-else produce equivalent results, but the second is faster for r > 2.
        if r <= 2:
            for sy in range(-r, r + 1):
                for sx in range(-r, r + 1):
                    mask = (shifts[:, 0] == sy) & (shifts[:, 1] == sx)
                    images_out[mask] = images[mask, :, r + sy:r + sy + crop_size, r + sx:r + sx + crop_size]
        else:
            images_tmp = torch.empty((len(images), 3, crop_size, crop_size + 2 * r), device=images.device,
                                     dtype=images.dtype)
            for s in range(-r, r + 1):
                mask = (shifts[:, 0] == s)
                images_tmp[mask] = images[mask, :, r + s:r + s + crop_size, :]
            for s in range(-r, r + 1):
                mask = (shifts[:, 1] == s)
                images_out[mask] = images_tmp[mask, :, :, r + s:r + s + crop_size]
        return images_out

    class CifarLoader:
        def __init__(self, data, train=True, batch_size=500, aug=None, drop_last=None, shuffle=None):
            self.images, self.labels, self.classes = data['images'], data['labels'], data['classes']
            # It's faster to load+process uint8 data than to load preprocessed fp16 data
            self.images = (self.images.float() / 255).permute(0, 3, 1, 2).to(memory_format=torch.channels_last)
            self.normalize = lambda x: (x - CIFAR_MEAN.view(-1, 1, 1)) / CIFAR_STD.view(-1, 1, 1)
            self.proc_images = {}  # Saved results of image processing to be done on the first epoch
            self.epoch = 0
            self.aug = aug or {}
            for k in self.aug.keys():
                assert k in ['flip', 'translate'], 'Unrecognized key: %s' % k
            self.batch_size = batch_size
            self.drop_last = train if drop_last is None else drop_last
            self.shuffle = train if shuffle is None else shuffle

        def __len__(self):
            return len(self.images) // self.batch_size if self.drop_last else math.ceil(
                len(self.images) / self.batch_size)

        def __iter__(self):
            if self.epoch == 0:
                images = self.proc_images['norm'] = self.normalize(self.images)
                # Pre-flip images in order to do every-other epoch flipping scheme
                if self.aug.get('flip', False):
                    images = self.proc_images['flip'] = batch_flip_lr(images)
                # Pre-pad images to save time when doing random translation
                pad = self.aug.get('translate', 0)
                if pad > 0:
                    self.proc_images['pad'] = F.pad(images, (pad,) * 4, 'reflect')
            if self.aug.get('translate', 0) > 0:
                images = batch_crop(self.proc_images['pad'], self.images.shape[-2])
            elif self.aug.get('flip', False):
                images = self.proc_images['flip']
            else:
                images = self.proc_images['norm']
            # Flip all images together every other epoch. This increases diversity relative to random flipping
            if self.aug.get('flip', False):
                if self.epoch % 2 == 1:
                    images = images.flip(-1)
            self.epoch += 1
            indices = (torch.randperm if self.shuffle else torch.arange)(len(images), device=images.device)
            indices = replayed(m, replay, next(draws), indices)
            for i in range(len(self)):
                idxs = indices[i * self.batch_size:(i + 1) * self.batch_size]
                yield (images[idxs], self.labels[idxs])

    def get_patches(x, patch_shape):
        c, (h, w) = x.shape[1], patch_shape
        return x.unfold(2, h, 1).unfold(3, w, 1).transpose(1, 3).reshape(-1, c, h, w).float()

    def get_whitening_parameters(patches):
        n, c, h, w = patches.shape
        patches_flat = patches.view(n, -1)
        est_patch_covariance = (patches_flat.T @ patches_flat) / n
        eigenvalues, eigenvectors = torch.linalg.eigh(est_patch_covariance, UPLO='U')
        return eigenvalues.flip(0).view(-1, 1, 1, 1), eigenvectors.T.reshape(c * h * w, c, h, w).flip(0)

    def init_whitening_conv(layer, train_set, eps=5e-4):
        patches = get_patches(train_set, patch_shape=layer.weight.data.shape[2:])
        eigenvalues, eigenvectors = get_whitening_parameters(patches)
        eigenvectors_scaled = eigenvectors / torch.sqrt(eigenvalues + eps)
        layer.weight.data[:] = torch.cat((eigenvectors_scaled, -eigenvectors_scaled))
        return eigenvalues

    class BatchNorm(nn.BatchNorm2d):
        def __init__(self, num_features, momentum=0.6, eps=1e-12, weight=False, bias=True):
            super().__init__(num_features, eps=eps, momentum=1 - momentum)
            self.weight.requires_grad = weight
            self.bias.requires_grad = bias

    class Mul(nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale

        def forward(self, x):
            return x * self.scale

    whiten_width = 2 * 3 * 2 ** 2
    net = nn.Sequential(
        nn.Conv2d(3, whiten_width, kernel_size=2, padding=0, bias=True),
        nn.GELU(),
        nn.Conv2d(whiten_width, 8, kernel_size=3, padding='same', bias=False),
        nn.MaxPool2d(2),
        BatchNorm(8),
        nn.GELU(),
        nn.MaxPool2d(3),
        nn.Flatten(),
        nn.Linear(8, 10, bias=False),
        Mul(1 / 9),
    )
    data = {'images': torch.tensor(rng.integers(0, 256, (6, 8, 8, 3), dtype=np.uint8)),
            'labels': torch.tensor(rng.integers(0, 10, 6)), 'classes': list(range(10))}
    train_loader = CifarLoader(data, train=True, batch_size=3, aug=dict(flip=True, translate=2))
    train_images = train_loader.normalize(train_loader.images[:5])
    eigenvalues = init_whitening_conv(net[0], train_images)
    net[0].weight.requires_grad = False
    init = load(m, net, state)
    net = net.to(memory_format=torch.channels_last)
    norm_biases = [p for mod in net.modules() if isinstance(mod, BatchNorm)
                   for p in mod.parameters() if p.requires_grad]
    other_params = [p for mod in net.modules() if not isinstance(mod, (BatchNorm, nn.Sequential))
                    for p in mod.parameters() if p.requires_grad]
    param_configs = [dict(params=norm_biases, lr=0.05, weight_decay=5e-4 / 0.05),
                     dict(params=other_params, lr=0.02, weight_decay=5e-4 / 0.02)]
    optimizer = torch.optim.SGD(param_configs, momentum=0.85, nesterov=True)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.2, reduction='none')
    losses = [float(eigenvalues.sum()), float(eigenvalues[0])]
    for epoch in range(2):
        for inputs, labels in train_loader:
            outputs = net(inputs)
            loss = loss_fn(outputs, labels).sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    test_loader = CifarLoader(data, train=False, batch_size=4)
    net.eval()
    with torch.no_grad():
        logits = torch.cat([net(inputs) for inputs, _ in test_loader])
    losses += logits.flatten().tolist()
    return init, losses + summary(net.parameters()) + summary(net.buffers())


def test_airbench_loader():
    compare(airbench_loader, replay={})


# (e) Luolc/AdaBound's adabound/adabound.py: AdaBound with its ValueErrors, base_lrs taken at construction,
# __setstate__'s amsbound default, the deprecated grad.add(weight_decay, p.data), exp_avg.add_(1 - beta1, grad) and
# addcmul_(1 - beta2, grad, grad), AMSBound's torch.max(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq), the
# bounds of the final lr scaled by group lr / base lr, step sizes by full_like, div_, clamp_ and mul_; a StepLR
# moving the lr; the optimizer's state_dict loaded back (which calls __setstate__)
def adabound(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Optimizer = torch.optim.Optimizer
    torch.manual_seed(4)
    rng = np.random.default_rng(4)

    class AdaBound(Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), final_lr=0.1, gamma=1e-3,
                     eps=1e-8, weight_decay=0, amsbound=False):
            if not 0.0 <= lr:
                raise ValueError("Invalid learning rate: {}".format(lr))
            if not 0.0 <= eps:
                raise ValueError("Invalid epsilon value: {}".format(eps))
            if not 0.0 <= betas[0] < 1.0:
                raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
            if not 0.0 <= betas[1] < 1.0:
                raise ValueError("Invalid beta parameter at index 1: {}".format(betas[1]))
            if not 0.0 <= final_lr:
                raise ValueError("Invalid final learning rate: {}".format(final_lr))
            if not 0.0 <= gamma < 1.0:
                raise ValueError("Invalid gamma parameter: {}".format(gamma))
            defaults = dict(lr=lr, betas=betas, final_lr=final_lr, gamma=gamma, eps=eps,
                            weight_decay=weight_decay, amsbound=amsbound)
            super(AdaBound, self).__init__(params, defaults)
            self.base_lrs = list(map(lambda group: group['lr'], self.param_groups))

        def __setstate__(self, state):
            super(AdaBound, self).__setstate__(state)
            for group in self.param_groups:
                group.setdefault('amsbound', False)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group, base_lr in zip(self.param_groups, self.base_lrs):
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    if grad.is_sparse:
                        raise RuntimeError(
                            'Adam does not support sparse gradients, please consider SparseAdam instead')
                    amsbound = group['amsbound']
                    state = self.state[p]
                    # State initialization
                    if len(state) == 0:
                        state['step'] = 0
                        # Exponential moving average of gradient values
                        state['exp_avg'] = torch.zeros_like(p.data)
                        # Exponential moving average of squared gradient values
                        state['exp_avg_sq'] = torch.zeros_like(p.data)
                        if amsbound:
                            # Maintains max of all exp. moving avg. of sq. grad. values
                            state['max_exp_avg_sq'] = torch.zeros_like(p.data)
                    exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                    if amsbound:
                        max_exp_avg_sq = state['max_exp_avg_sq']
                    beta1, beta2 = group['betas']
                    state['step'] += 1
                    if group['weight_decay'] != 0:
                        grad = grad.add(group['weight_decay'], p.data)
                    # Decay the first and second moment running average coefficient
                    exp_avg.mul_(beta1).add_(1 - beta1, grad)
                    exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                    if amsbound:
                        # Maintains the maximum of all 2nd moment running avg. till now
                        torch.max(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
                        # Use the max. for normalizing running avg. of gradient
                        denom = max_exp_avg_sq.sqrt().add_(group['eps'])
                    else:
                        denom = exp_avg_sq.sqrt().add_(group['eps'])
                    bias_correction1 = 1 - beta1 ** state['step']
                    bias_correction2 = 1 - beta2 ** state['step']
                    step_size = group['lr'] * math.sqrt(bias_correction2) / bias_correction1
                    # Applies bounds on actual learning rate
                    # lr_scheduler cannot affect final_lr, this is a workaround to apply lr decay
                    final_lr = group['final_lr'] * group['lr'] / base_lr
                    lower_bound = final_lr * (1 - 1 / (group['gamma'] * state['step'] + 1))
                    upper_bound = final_lr * (1 + 1 / (group['gamma'] * state['step']))
                    step_size = torch.full_like(denom, step_size)
                    step_size.div_(denom).clamp_(lower_bound, upper_bound).mul_(exp_avg)
                    p.data.add_(-step_size)
            return loss

    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    init = load(m, model, state)
    try:
        AdaBound(model.parameters(), gamma=1.0)
    except ValueError as e:
        assert "gamma" in str(e)
    optimizer = AdaBound([{'params': model[0].parameters(), 'amsbound': True},
                          {'params': model[2].parameters(), 'lr': 3e-3}], lr=1e-2, final_lr=0.05, gamma=0.1,
                         weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    losses = []
    for step in range(3):
        x, y = torch.from_numpy(normal(rng, 6, 5)), torch.from_numpy(rng.integers(0, 3, 6))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step == 0:
            optimizer.load_state_dict(optimizer.state_dict())
    assert optimizer.param_groups[1]['amsbound'] is False
    return init, losses + summary(model.parameters())


def test_adabound():
    compare(adabound)


# (f) adobe/antialiased-cnns' antialiased_cnns/blurpool.py and its ResNet changes: BlurPool with pad sizes by
# np.ceil, the binomial filter a[:, None] * a[None, :] as torch.Tensor normalised by torch.sum and registered as a
# buffer repeated per channel, get_pad_layer (ReflectionPad2d, ReplicationPad2d, ZeroPad2d), filt_size == 1's strided
# slicing, F.conv2d with groups=inp.shape[1]; MaxPool2d(kernel_size=2, stride=1) then BlurPool (MaxBlurPool) and a
# strided convolution as conv, ReLU, BlurPool
def blurpool(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(5)
    rng = np.random.default_rng(5)

    def get_pad_layer(pad_type):
        if(pad_type in ['refl', 'reflect']):
            PadLayer = nn.ReflectionPad2d
        elif(pad_type in ['repl', 'replicate']):
            PadLayer = nn.ReplicationPad2d
        elif(pad_type == 'zero'):
            PadLayer = nn.ZeroPad2d
        else:
            print('Pad type [%s] not recognized' % pad_type)
        return PadLayer

    class BlurPool(nn.Module):
        def __init__(self, channels, pad_type='reflect', filt_size=4, stride=2, pad_off=0):
            super(BlurPool, self).__init__()
            self.filt_size = filt_size
            self.pad_off = pad_off
            self.pad_sizes = [int(1. * (filt_size - 1) / 2), int(np.ceil(1. * (filt_size - 1) / 2)),
                              int(1. * (filt_size - 1) / 2), int(np.ceil(1. * (filt_size - 1) / 2))]
            self.pad_sizes = [pad_size + pad_off for pad_size in self.pad_sizes]
            self.stride = stride
            self.off = int((self.stride - 1) / 2.)
            self.channels = channels
            if(self.filt_size == 1):
                a = np.array([1., ])
            elif(self.filt_size == 2):
                a = np.array([1., 1.])
            elif(self.filt_size == 3):
                a = np.array([1., 2., 1.])
            elif(self.filt_size == 4):
                a = np.array([1., 3., 3., 1.])
            elif(self.filt_size == 5):
                a = np.array([1., 4., 6., 4., 1.])
            filt = torch.Tensor(a[:, None] * a[None, :])
            filt = filt / torch.sum(filt)
            self.register_buffer('filt', filt[None, None, :, :].repeat((self.channels, 1, 1, 1)))
            self.pad = get_pad_layer(pad_type)(self.pad_sizes)

        def forward(self, inp):
            if(self.filt_size == 1):
                if(self.pad_off == 0):
                    return inp[:, :, ::self.stride, ::self.stride]
                else:
                    return self.pad(inp)[:, :, ::self.stride, ::self.stride]
            else:
                return F.conv2d(self.pad(inp), self.filt, stride=self.stride, groups=inp.shape[1])

    class Net(nn.Module):
        def __init__(self, num_classes=4):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 6, 3, padding=1), nn.Tanh(),
                nn.MaxPool2d(kernel_size=2, stride=1), BlurPool(6, filt_size=4, stride=2),
                nn.Conv2d(6, 8, 3, padding=1), nn.Tanh(), BlurPool(8, pad_type='repl', filt_size=3, stride=2),
                BlurPool(8, pad_type='zero', filt_size=1, stride=1, pad_off=1),
                BlurPool(8, filt_size=1, stride=2),
            )
            self.fc = nn.Linear(8, num_classes)

        def forward(self, x):
            x = self.features(x)
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    model = Net()
    assert model.features[3].filt.shape == (6, 1, 4, 4) and model.features[3].pad_sizes == [1, 2, 1, 2]
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        x, y = torch.from_numpy(normal(rng, 3, 3, 9, 9)), torch.from_numpy(rng.integers(0, 4, 3))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_blurpool():
    compare(blurpool)


# (g) miguelvr/dropblock's dropblock/dropblock.py and scheduler.py: DropBlock2D (the 4-d assert, gamma =
# drop_prob / block_size ** 2, a mask by (torch.rand(N, H, W) < gamma).float(), _compute_block_mask by max_pool2d of
# mask[:, None] with padding block_size // 2 and the last row and column cut for even blocks, out * numel() / sum())
# and LinearScheduler over np.linspace drop values (a numpy float64 drop_prob) stepped each iteration, as in its
# examples' ResNet; torch replays tnet's masks
def dropblock(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(6)
    rng = np.random.default_rng(6)
    draws = iter(range(1000))

    class DropBlock2D(nn.Module):
        r"""Randomly zeroes 2D spatial blocks of the input tensor."""
        def __init__(self, drop_prob, block_size):
            super(DropBlock2D, self).__init__()
            self.drop_prob = drop_prob
            self.block_size = block_size

        def forward(self, x):
            # shape: (bsize, channels, height, width)
            assert x.dim() == 4, \
                "Expected input with 4 dimensions (bsize, channels, height, width)"
            if not self.training or self.drop_prob == 0.:
                return x
            else:
                # get gamma value
                gamma = self._compute_gamma(x)
                # sample mask
                mask = (torch.rand(x.shape[0], *x.shape[2:]) < gamma).float()
                mask = replayed(m, replay, next(draws), mask)
                # place mask on input device
                mask = mask.to(x.device)
                # compute block mask
                block_mask = self._compute_block_mask(mask)
                # apply block mask
                out = x * block_mask[:, None, :, :]
                # scale output
                out = out * block_mask.numel() / block_mask.sum()
                return out

        def _compute_block_mask(self, mask):
            block_mask = F.max_pool2d(input=mask[:, None, :, :],
                                      kernel_size=(self.block_size, self.block_size),
                                      stride=(1, 1),
                                      padding=self.block_size // 2)
            if self.block_size % 2 == 0:
                block_mask = block_mask[:, :, :-1, :-1]
            block_mask = 1 - block_mask.squeeze(1)
            return block_mask

        def _compute_gamma(self, x):
            return self.drop_prob / (self.block_size ** 2)

    class LinearScheduler(nn.Module):
        def __init__(self, dropblock, start_value, stop_value, nr_steps):
            super(LinearScheduler, self).__init__()
            self.dropblock = dropblock
            self.i = 0
            self.drop_values = np.linspace(start=start_value, stop=stop_value, num=int(nr_steps))

        def forward(self, x):
            return self.dropblock(x)

        def step(self):
            if self.i < len(self.drop_values):
                self.dropblock.drop_prob = self.drop_values[self.i]
            self.i += 1

    class Net(nn.Module):
        def __init__(self, drop_prob=0., block_size=3, num_classes=3):
            super().__init__()
            self.dropblock = LinearScheduler(DropBlock2D(block_size=block_size, drop_prob=0.),
                                             start_value=0., stop_value=drop_prob, nr_steps=3)
            self.dropblock2 = LinearScheduler(DropBlock2D(block_size=2, drop_prob=0.),
                                              start_value=0.2, stop_value=drop_prob, nr_steps=3)
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
            self.conv2 = nn.Conv2d(4, 6, 3, padding=1)
            self.fc = nn.Linear(6, num_classes)

        def forward(self, x):
            self.dropblock.step()  # increment number of iterations
            self.dropblock2.step()
            x = self.dropblock(torch.tanh(self.conv1(x)))
            x = self.dropblock2(torch.tanh(self.conv2(x)))
            return self.fc(x.mean((2, 3)))

    model = Net(drop_prob=0.5)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(3):
        x, y = torch.from_numpy(normal(rng, 2, 3, 6, 6)), torch.from_numpy(rng.integers(0, 3, 2))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    losses += model(x).flatten().tolist()
    assert model.dropblock.dropblock.drop_prob == 0.5
    return init, losses + summary(model.parameters())


def test_dropblock():
    compare(dropblock, replay={})


# (h) owruby/shake-drop_pytorch's models/shakedrop.py with PyramidNet's bottleneck-free block: ShakeDropFunction
# (forward draws the gate by FloatTensor([0]).bernoulli_(1 - p_drop), saves it, scales by alpha ~ U(-1, 1) per sample
# expanded as x where the gate is 0, else passes x; eval multiplies by 1 - p_drop; backward draws beta ~ U(0, 1) where
# the gate was 0, returning None for the other inputs), ShakeDrop as its module, the linearly growing p_drop over the
# blocks and the zero-padded shortcut by torch.cat; torch replays tnet's gates and coefficients
def shakedrop(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    Variable = torch.autograd.Variable
    torch.manual_seed(7)
    rng = np.random.default_rng(7)
    draws = iter(range(1000))

    class ShakeDropFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, training=True, p_drop=0.5, alpha_range=[-1, 1]):
            if training:
                gate = torch.FloatTensor([0]).bernoulli_(1 - p_drop).to(x.device)
                gate = replayed(m, replay, next(draws), gate)
                ctx.save_for_backward(gate)
                if gate.item() == 0:
                    alpha = torch.FloatTensor(x.size(0)).uniform_(*alpha_range).to(x.device)
                    alpha = replayed(m, replay, next(draws), alpha)
                    alpha = alpha.view(alpha.size(0), 1, 1, 1).expand_as(x)
                    return alpha * x
                else:
                    return x
            else:
                return (1 - p_drop) * x

        @staticmethod
        def backward(ctx, grad_output):
            gate = ctx.saved_tensors[0]
            if gate.item() == 0:
                beta = torch.FloatTensor(grad_output.size(0)).uniform_(0, 1).to(grad_output.device)
                beta = replayed(m, replay, next(draws), beta)
                beta = beta.view(beta.size(0), 1, 1, 1).expand_as(grad_output)
                beta = Variable(beta)
                return beta * grad_output, None, None, None
            else:
                return grad_output, None, None, None

    class ShakeDrop(nn.Module):
        def __init__(self, p_drop=0.5, alpha_range=[-1, 1]):
            super(ShakeDrop, self).__init__()
            self.p_drop = p_drop
            self.alpha_range = alpha_range

        def forward(self, x):
            return ShakeDropFunction.apply(x, self.training, self.p_drop, self.alpha_range)

    class ShakeBasicBlock(nn.Module):
        def __init__(self, in_ch, out_ch, stride=1, p_shakedrop=1.0):
            super(ShakeBasicBlock, self).__init__()
            self.downsampled = stride == 2
            self.branch = self._make_branch(in_ch, out_ch, stride=stride)
            self.shortcut = not self.downsampled and None or nn.AvgPool2d(2)
            self.shake_drop = ShakeDrop(p_shakedrop)

        def forward(self, x):
            h = self.branch(x)
            h = self.shake_drop(h)
            h0 = x if not self.downsampled else self.shortcut(x)
            pad_zero = Variable(torch.zeros(h0.size(0), h.size(1) - h0.size(1), h0.size(2), h0.size(3)).float())
            h0 = torch.cat([h0, pad_zero], dim=1)
            return h + h0

        def _make_branch(self, in_ch, out_ch, stride=1):
            return nn.Sequential(
                nn.BatchNorm2d(in_ch),
                nn.Conv2d(in_ch, out_ch, 3, padding=1, stride=stride, bias=False),
                nn.BatchNorm2d(out_ch),
                nn.Tanh(),
                nn.Conv2d(out_ch, out_ch, 3, padding=1, stride=1, bias=False),
                nn.BatchNorm2d(out_ch))

    class ShakePyramidNet(nn.Module):
        def __init__(self, depth=3, alpha=6, label=4):
            super(ShakePyramidNet, self).__init__()
            in_ch = 4
            n_units = depth
            self.in_chs, self.u_idx = [in_ch], 0
            self.ps_shakedrop = [1 - (1.0 - (0.5 / n_units) * (i + 1)) for i in range(n_units)]
            self.c_in = nn.Conv2d(3, in_ch, 3, padding=1)
            self.bn_in = nn.BatchNorm2d(in_ch)
            self.layers = self._make_layer(n_units, alpha / n_units, 1, 2)
            self.bn_out = nn.BatchNorm2d(self.in_chs[-1])
            self.fc_out = nn.Linear(self.in_chs[-1], label)

        def forward(self, x):
            h = self.bn_in(self.c_in(x))
            h = self.layers(h)
            h = torch.tanh(self.bn_out(h))
            h = F.avg_pool2d(h, h.size(2))
            h = h.view(h.size(0), -1)
            h = self.fc_out(h)
            return h

        def _make_layer(self, n_units, add_ch, block_stride, stride):
            layers = []
            for i in range(int(n_units)):
                in_ch = self.in_chs[-1]
                self.in_chs.append(int(round(in_ch + add_ch)))
                layers.append(ShakeBasicBlock(in_ch, self.in_chs[-1], stride if i == 0 else block_stride,
                                              self.ps_shakedrop[self.u_idx]))
                self.u_idx += 1
            return nn.Sequential(*layers)

    model = ShakePyramidNet()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)
    losses = []
    for _ in range(2):
        x, y = torch.from_numpy(normal(rng, 3, 3, 4, 4)), torch.from_numpy(rng.integers(0, 4, 3))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    losses += model(x).flatten().tolist()
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_shakedrop():
    compare(shakedrop, replay={})


# (i) Multi-task loss weighting by homoscedastic uncertainty as its public PyTorch ports write it: a
# MultiTaskLossWrapper holding log_vars = nn.Parameter(torch.zeros((task_num))), precision = torch.exp(-log_var) and
# torch.sum(precision * (target - output) ** 2. + log_var, -1), returning log_vars.data.tolist(); Mikoto10032's
# AutomaticWeightedLoss (torch.ones(num, requires_grad=True) wrapped in nn.Parameter, 0.5 / params[i] ** 2 * loss +
# torch.log(1 + params[i] ** 2)) over a classification and a regression head, in its own param group without decay
def uncertainty_weighting(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    optim = m.optim
    torch.manual_seed(8)
    rng = np.random.default_rng(8)

    class MultiTaskModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
            self.head1 = nn.Linear(8, 2)
            self.head2 = nn.Linear(8, 2)

        def forward(self, x):
            h = self.trunk(x)
            return [self.head1(h), self.head2(h)]

    class MultiTaskLossWrapper(nn.Module):
        def __init__(self, task_num, model):
            super(MultiTaskLossWrapper, self).__init__()
            self.model = model
            self.task_num = task_num
            self.log_vars = nn.Parameter(torch.zeros((task_num)))

        def forward(self, input, targets):
            outputs = self.model(input)
            precision1 = torch.exp(-self.log_vars[0])
            loss = torch.sum(precision1 * (targets[0] - outputs[0]) ** 2. + self.log_vars[0], -1)
            precision2 = torch.exp(-self.log_vars[1])
            loss += torch.sum(precision2 * (targets[1] - outputs[1]) ** 2. + self.log_vars[1], -1)
            loss = torch.mean(loss)
            return loss, self.log_vars.data.tolist()

    class AutomaticWeightedLoss(nn.Module):
        """automatically weighted multi-task loss"""
        def __init__(self, num=2):
            super(AutomaticWeightedLoss, self).__init__()
            params = torch.ones(num, requires_grad=True)
            self.params = torch.nn.Parameter(params)

        def forward(self, *x):
            loss_sum = 0
            for i, loss in enumerate(x):
                loss_sum += 0.5 / (self.params[i] ** 2) * loss + torch.log(1 + self.params[i] ** 2)
            return loss_sum

    mtl = MultiTaskLossWrapper(2, MultiTaskModel())
    net = nn.Sequential(nn.Linear(4, 6), nn.Tanh())
    cls_head, reg_head = nn.Linear(6, 3), nn.Linear(6, 1)
    awl = AutomaticWeightedLoss(2)
    modules = nn.ModuleDict({'mtl': mtl, 'net': net, 'cls': cls_head, 'reg': reg_head, 'awl': awl})
    init = load(m, modules, state)
    optimizer = optim.Adam(mtl.parameters(), lr=0.05)
    optimizer2 = optim.Adam([{'params': net.parameters()}, {'params': cls_head.parameters()},
                             {'params': reg_head.parameters()},
                             {'params': awl.parameters(), 'weight_decay': 0}], lr=0.02, weight_decay=1e-3)
    losses = []
    for _ in range(3):
        x = torch.from_numpy(normal(rng, 5, 4))
        targets = [torch.from_numpy(normal(rng, 5, 2)), torch.from_numpy(normal(rng, 5, 2))]
        loss, log_vars = mtl(x, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        h = net(x)
        y_cls, y_reg = torch.from_numpy(rng.integers(0, 3, 5)), torch.from_numpy(normal(rng, 5, 1))
        loss1 = F.cross_entropy(cls_head(h), y_cls)
        loss2 = F.mse_loss(reg_head(h), y_reg)
        loss_sum = awl(loss1, loss2)
        optimizer2.zero_grad()
        loss_sum.backward()
        optimizer2.step()
        losses += [loss.item(), loss_sum.item()] + log_vars
    return init, losses + summary(modules.parameters())


def test_uncertainty_weighting():
    compare(uncertainty_weighting)


# (j) 4uiiurz1/pytorch-nested-unet's archs.py, losses.py, metrics.py and train.py: VGGBlock (conv, BN,
# ReLU(inplace=True) twice), NestedUNet's nested skip nodes x0_1, x1_1, x0_2 by torch.cat of the same level's nodes
# and the level below upsampled by nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True), deep
# supervision's list of 1x1 heads, BCEDiceLoss (BCE with logits plus 1 - dice of per-sample flattened sigmoids),
# iou_score through torch.sigmoid(output).data.cpu().numpy() and numpy's & and |, the loss averaged over the
# outputs; its SGD option (momentum, nesterov), since the convolutions keep their biases before the BatchNorms
def nested_unet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    optim = m.optim
    torch.manual_seed(9)
    rng = np.random.default_rng(9)

    class VGGBlock(nn.Module):
        def __init__(self, in_channels, middle_channels, out_channels):
            super().__init__()
            self.relu = nn.ReLU(inplace=True)
            self.conv1 = nn.Conv2d(in_channels, middle_channels, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(middle_channels)
            self.conv2 = nn.Conv2d(middle_channels, out_channels, 3, padding=1)
            self.bn2 = nn.BatchNorm2d(out_channels)

        def forward(self, x):
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            out = self.relu(out)
            return out

    class NestedUNet(nn.Module):
        def __init__(self, num_classes, input_channels=3, deep_supervision=False, **kwargs):
            super().__init__()
            nb_filter = [4, 6, 8]
            self.deep_supervision = deep_supervision
            self.pool = nn.MaxPool2d(2, 2)
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.conv0_0 = VGGBlock(input_channels, nb_filter[0], nb_filter[0])
            self.conv1_0 = VGGBlock(nb_filter[0], nb_filter[1], nb_filter[1])
            self.conv2_0 = VGGBlock(nb_filter[1], nb_filter[2], nb_filter[2])
            self.conv0_1 = VGGBlock(nb_filter[0] + nb_filter[1], nb_filter[0], nb_filter[0])
            self.conv1_1 = VGGBlock(nb_filter[1] + nb_filter[2], nb_filter[1], nb_filter[1])
            self.conv0_2 = VGGBlock(nb_filter[0] * 2 + nb_filter[1], nb_filter[0], nb_filter[0])
            if self.deep_supervision:
                self.final1 = nn.Conv2d(nb_filter[0], num_classes, kernel_size=1)
                self.final2 = nn.Conv2d(nb_filter[0], num_classes, kernel_size=1)
            else:
                self.final = nn.Conv2d(nb_filter[0], num_classes, kernel_size=1)

        def forward(self, input):
            x0_0 = self.conv0_0(input)
            x1_0 = self.conv1_0(self.pool(x0_0))
            x0_1 = self.conv0_1(torch.cat([x0_0, self.up(x1_0)], 1))
            x2_0 = self.conv2_0(self.pool(x1_0))
            x1_1 = self.conv1_1(torch.cat([x1_0, self.up(x2_0)], 1))
            x0_2 = self.conv0_2(torch.cat([x0_0, x0_1, self.up(x1_1)], 1))
            if self.deep_supervision:
                output1 = self.final1(x0_1)
                output2 = self.final2(x0_2)
                return [output1, output2]
            else:
                output = self.final(x0_2)
                return output

    class BCEDiceLoss(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, input, target):
            bce = F.binary_cross_entropy_with_logits(input, target)
            smooth = 1e-5
            input = torch.sigmoid(input)
            num = target.size(0)
            input = input.view(num, -1)
            target = target.view(num, -1)
            intersection = (input * target)
            dice = (2. * intersection.sum(1) + smooth) / (input.sum(1) + target.sum(1) + smooth)
            dice = 1 - dice.sum() / num
            return 0.5 * bce + dice

    def iou_score(output, target):
        smooth = 1e-5
        if torch.is_tensor(output):
            output = torch.sigmoid(output).data.cpu().numpy()
        if torch.is_tensor(target):
            target = target.data.cpu().numpy()
        output_ = output > 0.5
        target_ = target > 0.5
        intersection = (output_ & target_).sum()
        union = (output_ | target_).sum()
        return (intersection + smooth) / (union + smooth)

    model = NestedUNet(1, deep_supervision=True)
    init = load(m, model, state)
    criterion = BCEDiceLoss()
    params = filter(lambda p: p.requires_grad, model.parameters())
    optimizer = optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    losses = []
    for _ in range(2):
        input = torch.from_numpy(normal(rng, 2, 3, 4, 4))
        target = torch.from_numpy((rng.random((2, 1, 4, 4)) > 0.5).astype(np.float32))
        outputs = model(input)
        loss = 0
        for output in outputs:
            loss += criterion(output, target)
        loss /= len(outputs)
        iou = iou_score(outputs[-1], target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), float(iou)]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_nested_unet():
    compare(nested_unet)


# (k) NegatioN/OnlineMiningTripletLoss's online_triplet_loss/losses.py: _pairwise_distances (diag of the Gram
# matrix, negatives zeroed by distances[distances < 0] = 0 in the graph, the sqrt's gradient guarded by eq(0).float()
# and 1e-16), _get_triplet_mask (torch.eye(...).bool(), ~, 3-d masks by unsqueeze and &), batch_all_triplet_loss
# (mask.float() * loss, triplet_loss[triplet_loss < 0] = 0, the positive triplets by a boolean gather, the fraction
# of positive triplets as an int over a float tensor), an embedding net trained on class-balanced batches by Adam
# (its last layer without a bias, as the script says)
def online_triplet(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(10)
    rng = np.random.default_rng(10)

    def _pairwise_distances(embeddings, squared=False):
        dot_product = torch.matmul(embeddings, embeddings.t())
        square_norm = torch.diag(dot_product)
        distances = square_norm.unsqueeze(0) - 2.0 * dot_product + square_norm.unsqueeze(1)
        distances[distances < 0] = 0
        if not squared:
            mask = distances.eq(0).float()
            distances = distances + mask * 1e-16
            distances = (1.0 - mask) * torch.sqrt(distances)
        return distances

    def _get_triplet_mask(labels):
        indices_equal = torch.eye(labels.size(0), device=labels.device).bool()
        indices_not_equal = ~indices_equal
        i_not_equal_j = indices_not_equal.unsqueeze(2)
        i_not_equal_k = indices_not_equal.unsqueeze(1)
        j_not_equal_k = indices_not_equal.unsqueeze(0)
        distinct_indices = (i_not_equal_j & i_not_equal_k) & j_not_equal_k
        label_equal = labels.unsqueeze(0) == labels.unsqueeze(1)
        i_equal_j = label_equal.unsqueeze(2)
        i_equal_k = label_equal.unsqueeze(1)
        valid_labels = ~i_equal_k & i_equal_j
        return valid_labels & distinct_indices

    def batch_all_triplet_loss(labels, embeddings, margin, squared=False):
        pairwise_dist = _pairwise_distances(embeddings, squared=squared)
        anchor_positive_dist = pairwise_dist.unsqueeze(2)
        anchor_negative_dist = pairwise_dist.unsqueeze(1)
        triplet_loss = anchor_positive_dist - anchor_negative_dist + margin
        mask = _get_triplet_mask(labels)
        triplet_loss = mask.float() * triplet_loss
        # Remove negative losses (i.e. the easy triplets)
        triplet_loss[triplet_loss < 0] = 0
        # Count number of positive triplets (where triplet_loss > 0)
        valid_triplets = triplet_loss[triplet_loss > 1e-16]
        num_positive_triplets = valid_triplets.size(0)
        num_valid_triplets = mask.sum()
        fraction_positive_triplets = num_positive_triplets / (num_valid_triplets.float() + 1e-16)
        # Get final mean triplet loss over the positive valid triplets
        triplet_loss = triplet_loss.sum() / (num_positive_triplets + 1e-16)
        return triplet_loss, fraction_positive_triplets

    # distances do not move with a shift of every embedding: the last layer's bias has a gradient of rounding alone,
    # which Adam would normalise, so that layer has none
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4, bias=False))
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for squared in (False, True, False):
        x = torch.from_numpy(normal(rng, 6, 6))
        labels = torch.tensor([0, 0, 1, 1, 2, 2])
        loss, fraction = batch_all_triplet_loss(labels, model(x), margin=1.0, squared=squared)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), fraction.item()]
    return init, losses + summary(model.parameters())


def test_online_triplet():
    compare(online_triplet)


# (l) mit-han-lab/data-efficient-gans' DiffAugment_pytorch.py: DiffAugment over a policy string (channels_first
# permutes, contiguous), rand_brightness, rand_saturation and rand_contrast by torch.rand(N, 1, 1, 1, dtype=, device=),
# rand_translation (randint shifts, torch.meshgrid of three aranges without indexing=, which found that tnet's
# meshgrid lacked torch's default of None and its warning; clamp, F.pad of eight values, advanced indexing of a
# permuted contiguous copy by three index grids), rand_cutout (a ones mask written 0 at index grids); applied to real
# and fake images alike in a hinge-loss GAN step (D on both, then G); torch replays tnet's draws
def diffaugment(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(11)
    rng = np.random.default_rng(11)
    draws = iter(range(1000))

    def DiffAugment(x, policy='', channels_first=True):
        if policy:
            if not channels_first:
                x = x.permute(0, 3, 1, 2)
            for p in policy.split(','):
                for f in AUGMENT_FNS[p]:
                    x = f(x)
            if not channels_first:
                x = x.permute(0, 2, 3, 1)
            x = x.contiguous()
        return x

    def rand_brightness(x):
        r = replayed(m, replay, next(draws), torch.rand(x.size(0), 1, 1, 1, dtype=x.dtype, device=x.device))
        x = x + (r - 0.5)
        return x

    def rand_saturation(x):
        x_mean = x.mean(dim=1, keepdim=True)
        r = replayed(m, replay, next(draws), torch.rand(x.size(0), 1, 1, 1, dtype=x.dtype, device=x.device))
        x = (x - x_mean) * (r * 2) + x_mean
        return x

    def rand_contrast(x):
        x_mean = x.mean(dim=[1, 2, 3], keepdim=True)
        r = replayed(m, replay, next(draws), torch.rand(x.size(0), 1, 1, 1, dtype=x.dtype, device=x.device))
        x = (x - x_mean) * (r + 0.5) + x_mean
        return x

    def rand_translation(x, ratio=0.125):
        shift_x, shift_y = int(x.size(2) * ratio + 0.5), int(x.size(3) * ratio + 0.5)
        translation_x = torch.randint(-shift_x, shift_x + 1, size=[x.size(0), 1, 1], device=x.device)
        translation_y = torch.randint(-shift_y, shift_y + 1, size=[x.size(0), 1, 1], device=x.device)
        translation_x = replayed(m, replay, next(draws), translation_x)
        translation_y = replayed(m, replay, next(draws), translation_y)
        grid_batch, grid_x, grid_y = torch.meshgrid(
            torch.arange(x.size(0), dtype=torch.long, device=x.device),
            torch.arange(x.size(2), dtype=torch.long, device=x.device),
            torch.arange(x.size(3), dtype=torch.long, device=x.device),
        )
        grid_x = torch.clamp(grid_x + translation_x + 1, 0, x.size(2) + 1)
        grid_y = torch.clamp(grid_y + translation_y + 1, 0, x.size(3) + 1)
        x_pad = F.pad(x, [1, 1, 1, 1, 0, 0, 0, 0])
        x = x_pad.permute(0, 2, 3, 1).contiguous()[grid_batch, grid_x, grid_y].permute(0, 3, 1, 2)
        return x

    def rand_cutout(x, ratio=0.5):
        cutout_size = int(x.size(2) * ratio + 0.5), int(x.size(3) * ratio + 0.5)
        offset_x = torch.randint(0, x.size(2) + (1 - cutout_size[0] % 2), size=[x.size(0), 1, 1], device=x.device)
        offset_y = torch.randint(0, x.size(3) + (1 - cutout_size[1] % 2), size=[x.size(0), 1, 1], device=x.device)
        offset_x = replayed(m, replay, next(draws), offset_x)
        offset_y = replayed(m, replay, next(draws), offset_y)
        grid_batch, grid_x, grid_y = torch.meshgrid(
            torch.arange(x.size(0), dtype=torch.long, device=x.device),
            torch.arange(cutout_size[0], dtype=torch.long, device=x.device),
            torch.arange(cutout_size[1], dtype=torch.long, device=x.device),
        )
        grid_x = torch.clamp(grid_x + offset_x - cutout_size[0] // 2, min=0, max=x.size(2) - 1)
        grid_y = torch.clamp(grid_y + offset_y - cutout_size[1] // 2, min=0, max=x.size(3) - 1)
        mask = torch.ones(x.size(0), x.size(2), x.size(3), dtype=x.dtype, device=x.device)
        mask[grid_batch, grid_x, grid_y] = 0
        x = x * mask.unsqueeze(1)
        return x

    AUGMENT_FNS = {
        'color': [rand_brightness, rand_saturation, rand_contrast],
        'translation': [rand_translation],
        'cutout': [rand_cutout],
    }

    G = nn.Sequential(nn.Linear(4, 3 * 8 * 8), nn.Tanh(), nn.Unflatten(1, (3, 8, 8)))
    D = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(64, 1))
    nets = nn.ModuleList([G, D])
    init = load(m, nets, state)
    optimizerG = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerD = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    policy = 'color,translation,cutout'
    losses = []
    for _ in range(2):
        reals = torch.from_numpy(normal(rng, 3, 8, 8, 3)).tanh()  # NHWC, as channels_first=False takes
        z = torch.from_numpy(normal(rng, 3, 4))
        fakes = G(z)
        real_out = D(DiffAugment(reals, policy=policy, channels_first=False).permute(0, 3, 1, 2))
        fake_out = D(DiffAugment(fakes.detach(), policy=policy))
        lossD = F.relu(1. - real_out).mean() + F.relu(1. + fake_out).mean()
        optimizerD.zero_grad()
        lossD.backward()
        optimizerD.step()
        lossG = -D(DiffAugment(fakes, policy=policy)).mean()
        optimizerG.zero_grad()
        lossG.backward()
        optimizerG.step()
        losses += [lossD.item(), lossG.item()]
    return init, losses + summary(nets.parameters())


def test_diffaugment():
    compare(diffaugment, replay={})


# (m) KaiyangZhou/mixstyle-release's imcls/models/mixstyle.py: MixStyle (p, a torch.distributions.Beta(alpha, alpha)
# built once, __repr__, set_activation_status, update_mix_method; random.random() > p skips; instance means and
# variances over dim=[2, 3] detached, lmda = beta.sample((B, 1, 1, 1)), 'random' mixing by randperm and
# 'crossdomain' by a reversed arange chunked in two halves each permuted), between the stages of a small ResNet-ish
# net and switched by model.apply(deactivate_mixstyle) and run_with_mixstyle's activate; Python's random seeded
# alike, torch replays tnet's Beta samples and permutations
def mixstyle(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(12)
    random.seed(12)
    rng = np.random.default_rng(12)
    draws = iter(range(1000))

    def deactivate_mixstyle(m_):
        if type(m_) == MixStyle:
            m_.set_activation_status(False)

    def activate_mixstyle(m_):
        if type(m_) == MixStyle:
            m_.set_activation_status(True)

    def crossdomain_mixstyle(m_):
        if type(m_) == MixStyle:
            m_.update_mix_method('crossdomain')

    class MixStyle(nn.Module):
        """MixStyle.
        Reference:
          Zhou et al. Domain Generalization with MixStyle. ICLR 2021.
        """
        def __init__(self, p=0.5, alpha=0.1, eps=1e-6, mix='random'):
            super().__init__()
            self.p = p
            self.beta = torch.distributions.Beta(alpha, alpha)
            self.eps = eps
            self.alpha = alpha
            self.mix = mix
            self._activated = True

        def __repr__(self):
            return f'MixStyle(p={self.p}, alpha={self.alpha}, eps={self.eps}, mix={self.mix})'

        def set_activation_status(self, status=True):
            self._activated = status

        def update_mix_method(self, mix='random'):
            self.mix = mix

        def forward(self, x):
            if not self.training or not self._activated:
                return x
            if random.random() > self.p:
                return x
            B = x.size(0)
            mu = x.mean(dim=[2, 3], keepdim=True)
            var = x.var(dim=[2, 3], keepdim=True)
            sig = (var + self.eps).sqrt()
            mu, sig = mu.detach(), sig.detach()
            x_normed = (x - mu) / sig
            lmda = self.beta.sample((B, 1, 1, 1))
            lmda = replayed(m, replay, next(draws), lmda)
            lmda = lmda.to(x.device)
            if self.mix == 'random':
                # random shuffle
                perm = torch.randperm(B)
                perm = replayed(m, replay, next(draws), perm)
            elif self.mix == 'crossdomain':
                # split into two halves and swap the order
                perm = torch.arange(B - 1, -1, -1)  # inverse index
                perm_b, perm_a = perm.chunk(2)
                perm_b = perm_b[replayed(m, replay, next(draws), torch.randperm(B // 2))]
                perm_a = perm_a[replayed(m, replay, next(draws), torch.randperm(B // 2))]
                perm = torch.cat([perm_b, perm_a], 0)
            else:
                raise NotImplementedError
            mu2, sig2 = mu[perm], sig[perm]
            mu_mix = mu * lmda + mu2 * (1 - lmda)
            sig_mix = sig * lmda + sig2 * (1 - lmda)
            return x_normed * sig_mix + mu_mix

    class Net(nn.Module):
        def __init__(self, num_classes=3):
            super().__init__()
            self.layer1 = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Tanh())
            self.layer2 = nn.Sequential(nn.Conv2d(4, 6, 3, stride=2, padding=1), nn.BatchNorm2d(6), nn.Tanh())
            self.mixstyle = MixStyle(p=0.5, alpha=0.1)
            self.fc = nn.Linear(6, num_classes)

        def forward(self, x):
            x = self.layer1(x)
            x = self.mixstyle(x)
            x = self.layer2(x)
            x = self.mixstyle(x)
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    model = Net()
    assert repr(model.mixstyle) == 'MixStyle(p=0.5, alpha=0.1, eps=1e-06, mix=random)'
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(3):
        if step == 1:
            model.apply(crossdomain_mixstyle)
        if step == 2:
            model.apply(deactivate_mixstyle)
        x, y = torch.from_numpy(normal(rng, 4, 3, 6, 6)), torch.from_numpy(rng.integers(0, 3, 4))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.apply(activate_mixstyle)
    model.eval()
    losses += model(x).flatten().tolist()
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_mixstyle():
    compare(mixstyle, replay={})


# (n) wjmaddox/swa_gaussian's swag/posteriors/swag.py and swag/utils.py: swag_parameters moving each module's
# parameters out of module._parameters into "%s_mean", "%s_sq_mean" and "%s_cov_mat_sqrt" buffers (data.new(...)
# .zero_(), new_empty((0, numel))), collect_model's running moments by n_models.item() and the deviation rows cat'ed
# and trimmed to max_num_models, sample_fullrank (flatten, clamp of the variance, randn_like, the low-rank sample by
# cov_mat_sqrt.t().matmul(new_empty(...).normal_()), unflatten_like, module.__setattr__ of plain tensors in the
# parameters' places), and bn_update (check_bn and reset_bn through _BatchNorm subclasses, running buffers replaced
# by zeros_like/ones_like, momenta b / (n + b) under no_grad, restored); torch replays tnet's draws
def swag(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(13)
    rng = np.random.default_rng(13)
    draws = iter(range(1000))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def flatten(lst):
        tmp = [i.contiguous().view(-1, 1) for i in lst]
        return torch.cat(tmp).view(-1)

    def unflatten_like(vector, likeTensorList):
        # Takes a flat torch.tensor and unflattens it to a list of torch.tensors
        #    shaped like likeTensorList
        outList = []
        i = 0
        for tensor in likeTensorList:
            n = tensor.numel()
            outList.append(vector[:, i: i + n].view(tensor.shape))
            i += n
        return outList

    def _check_bn(module, flag):
        if issubclass(module.__class__, torch.nn.modules.batchnorm._BatchNorm):
            flag[0] = True

    def check_bn(model):
        flag = [False]
        model.apply(lambda module: _check_bn(module, flag))
        return flag[0]

    def reset_bn(module):
        if issubclass(module.__class__, torch.nn.modules.batchnorm._BatchNorm):
            module.running_mean = torch.zeros_like(module.running_mean)
            module.running_var = torch.ones_like(module.running_var)

    def _get_momenta(module, momenta):
        if issubclass(module.__class__, torch.nn.modules.batchnorm._BatchNorm):
            momenta[module] = module.momentum

    def _set_momenta(module, momenta):
        if issubclass(module.__class__, torch.nn.modules.batchnorm._BatchNorm):
            module.momentum = momenta[module]

    def bn_update(loader, model, verbose=False, subset=None, **kwargs):
        if not check_bn(model):
            return
        model.train()
        momenta = {}
        model.apply(reset_bn)
        model.apply(lambda module: _get_momenta(module, momenta))
        n = 0
        with torch.no_grad():
            for input, _ in loader:
                input = input.to(device, non_blocking=True)
                input_var = torch.autograd.Variable(input)
                b = input_var.data.size(0)
                momentum = b / (n + b)
                for module in momenta.keys():
                    module.momentum = momentum
                model(input_var, **kwargs)
                n += b
        model.apply(lambda module: _set_momenta(module, momenta))

    def swag_parameters(module, params, no_cov_mat=True):
        for name in list(module._parameters.keys()):
            if module._parameters[name] is None:
                continue
            data = module._parameters[name].data
            module._parameters.pop(name)
            module.register_buffer("%s_mean" % name, data.new(data.size()).zero_())
            module.register_buffer("%s_sq_mean" % name, data.new(data.size()).zero_())
            if no_cov_mat is False:
                module.register_buffer("%s_cov_mat_sqrt" % name, data.new_empty((0, data.numel())).zero_())
            params.append((module, name))

    class SWAG(torch.nn.Module):
        def __init__(self, base, no_cov_mat=True, max_num_models=0, var_clamp=1e-30, *args, **kwargs):
            super(SWAG, self).__init__()
            self.register_buffer("n_models", torch.zeros([1], dtype=torch.long))
            self.params = list()
            self.no_cov_mat = no_cov_mat
            self.max_num_models = max_num_models
            self.var_clamp = var_clamp
            self.base = base(*args, **kwargs)
            self.base.apply(lambda module: swag_parameters(module=module, params=self.params,
                                                           no_cov_mat=self.no_cov_mat))

        def forward(self, *args, **kwargs):
            return self.base(*args, **kwargs)

        def sample(self, scale=1.0, cov=False, seed=None, block=False, fullrank=True):
            if seed is not None:
                torch.manual_seed(seed)
            self.sample_fullrank(scale, cov, fullrank)

        def sample_fullrank(self, scale, cov, fullrank):
            scale_sqrt = scale ** 0.5
            mean_list = []
            sq_mean_list = []
            if cov:
                cov_mat_sqrt_list = []
            for (module, name) in self.params:
                mean = module.__getattr__("%s_mean" % name)
                sq_mean = module.__getattr__("%s_sq_mean" % name)
                if cov:
                    cov_mat_sqrt = module.__getattr__("%s_cov_mat_sqrt" % name)
                    cov_mat_sqrt_list.append(cov_mat_sqrt.cpu())
                mean_list.append(mean.cpu())
                sq_mean_list.append(sq_mean.cpu())
            mean = flatten(mean_list)
            sq_mean = flatten(sq_mean_list)
            # draw diagonal variance sample
            var = torch.clamp(sq_mean - mean ** 2, self.var_clamp)
            var_sample = var.sqrt() * replayed(m, replay, next(draws), torch.randn_like(var, requires_grad=False))
            # if covariance draw low rank sample
            if cov:
                cov_mat_sqrt = torch.cat(cov_mat_sqrt_list, dim=1)
                z = cov_mat_sqrt.new_empty((cov_mat_sqrt.size(0),), requires_grad=False).normal_()
                cov_sample = cov_mat_sqrt.t().matmul(replayed(m, replay, next(draws), z))
                cov_sample /= (self.max_num_models - 1) ** 0.5
                rand_sample = var_sample + cov_sample
            else:
                rand_sample = var_sample
            # update sample with mean and scale
            sample = mean + scale_sqrt * rand_sample
            sample = sample.unsqueeze(0)
            # unflatten new sample like the mean sample
            samples_list = unflatten_like(sample, mean_list)
            for (module, name), sample in zip(self.params, samples_list):
                module.__setattr__(name, sample.to(device))

        def collect_model(self, base_model):
            for (module, name), base_param in zip(self.params, base_model.parameters()):
                mean = module.__getattr__("%s_mean" % name)
                sq_mean = module.__getattr__("%s_sq_mean" % name)
                # first moment
                mean = mean * self.n_models.item() / (
                    self.n_models.item() + 1.0
                ) + base_param.data / (self.n_models.item() + 1.0)
                # second moment
                sq_mean = sq_mean * self.n_models.item() / (
                    self.n_models.item() + 1.0
                ) + base_param.data ** 2 / (self.n_models.item() + 1.0)
                # square root of covariance matrix
                if self.no_cov_mat is False:
                    cov_mat_sqrt = module.__getattr__("%s_cov_mat_sqrt" % name)
                    # block covariance matrices, store deviation from current mean
                    dev = (base_param.data - mean).view(-1, 1)
                    cov_mat_sqrt = torch.cat((cov_mat_sqrt, dev.view(-1, 1).t()), dim=0)
                    # remove first column if we have stored too many models
                    if (self.n_models.item() + 1) > self.max_num_models:
                        cov_mat_sqrt = cov_mat_sqrt[1:, :]
                    module.__setattr__("%s_cov_mat_sqrt" % name, cov_mat_sqrt)
                module.__setattr__("%s_mean" % name, mean)
                module.__setattr__("%s_sq_mean" % name, sq_mean)
            self.n_models.add_(1)

    class MLP(nn.Module):
        def __init__(self, num_classes=3):
            super().__init__()
            self.fc1 = nn.Linear(5, 6)
            self.bn = nn.BatchNorm1d(6)
            self.fc2 = nn.Linear(6, num_classes)

        def forward(self, x):
            return self.fc2(torch.tanh(self.bn(self.fc1(x))))

    model = MLP()
    swag_model = SWAG(MLP, no_cov_mat=False, max_num_models=2)
    assert len(list(swag_model.parameters())) == 0 and len(swag_model.params) == 6
    both = nn.ModuleDict({'model': model, 'swag': swag_model})
    init = load(m, both, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=3e-4)
    loader = [(torch.from_numpy(normal(rng, 4, 5)), torch.from_numpy(rng.integers(0, 3, 4))) for _ in range(2)]
    losses = []
    for epoch in range(3):
        for input, target in loader[:1]:
            loss = F.cross_entropy(model(input), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        swag_model.collect_model(model)
    assert swag_model.base.fc1.weight_cov_mat_sqrt.shape == (2, 30)
    swag_model.sample(scale=0.5, cov=True)
    bn_update(loader, swag_model)
    assert swag_model.base.bn.momentum == 0.1
    swag_model.eval()
    with torch.no_grad():
        losses += swag_model(loader[1][0]).flatten().tolist()
    return init, losses + summary(model.parameters()) + summary(swag_model.buffers())


def test_swag():
    compare(swag, replay={})
