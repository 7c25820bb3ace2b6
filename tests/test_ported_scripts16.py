"""Public research code the earlier files leave out, written from memory in its repositories' styles and ported
by its imports alone, as test_ported_scripts.py: junyanz's CycleGAN (ResnetGenerator with ReflectionPad2d and
InstanceNorm2d, the PatchGAN discriminator, GANLoss's label buffers, the ImagePool, one Adam over
itertools.chain of two generators, set_requires_grad, LambdaLR's linear decay); rosinality's Glow (ActNorm's
data-dependent init behind a uint8 buffer, the LU-decomposed invertible 1x1 convolution from scipy, affine
couplings with zero-initialised convolutions, squeeze and split with a learned prior); mamba-minimal's selective
scan (a depthwise causal Conv1d, softplus, einsum of three operands, tied embeddings); efficient-kan's KANLinear
(B-spline bases, curve2coeff by torch.linalg.lstsq, update_grid, the regulariser); the official BiLSTM-CRF
tutorial (forward algorithm and Viterbi over python loops); DINO (MultiCropWrapper's unique_consecutive,
a weight-normed last layer with a frozen g, the centred teacher, numpy schedules, clip_gradients,
cancel_gradients_last_layer, the momentum teacher); OpenAI's TopK sparse autoencoder (scatter_ of the top-k,
unit-norm decoder and its gradient projection, the AuxK loss on dead latents, a geometric-median pre-bias);
the growing neural cellular automaton (Sobel perception by grouped conv2d on a transposed NHWC state, alive
masks by max pooling, the sample pool and normalised gradients); ndrplz's ConvLSTM; and sgrvinod's Show,
Attend and Tell (LSTMCell over shrinking batches, pack_padded_sequence of scores and targets, the doubly
stochastic attention penalty, beam search). Each runs in tnet, then in torch from tnet's initial weights
(state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy draws what
a script draws; shapes are tiny and runs 1-3 steps."""
import functools
import itertools
import math
import random as py_random

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) junyanz/pytorch-CycleGAN-and-pix2pix: networks.py's ResnetGenerator and NLayerDiscriminator under
# functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False), GANLoss("lsgan") with its label
# buffers expanded to the prediction, image_pool.py's ImagePool, and cycle_gan_model.py's optimize_parameters
# (generators with the discriminators frozen by set_requires_grad, identity and cycle losses, one Adam over
# itertools.chain of both generators, LambdaLR's linear decay). A bias before an InstanceNorm gets a gradient
# of rounding alone, which Adam turns into a full step of either sign: the summary takes the weights only.
def cyclegan(m, state=None):
    torch, nn = m.torch, m.nn
    random = py_random.Random(0)  # the script's `random` module, seeded alike for both runs

    class ResnetBlock(nn.Module):
        def __init__(self, dim, padding_type, norm_layer, use_dropout, use_bias):
            super(ResnetBlock, self).__init__()
            self.conv_block = self.build_conv_block(dim, padding_type, norm_layer, use_dropout, use_bias)

        def build_conv_block(self, dim, padding_type, norm_layer, use_dropout, use_bias):
            conv_block = []
            p = 0
            if padding_type == 'reflect':
                conv_block += [nn.ReflectionPad2d(1)]
            elif padding_type == 'replicate':
                conv_block += [nn.ReplicationPad2d(1)]
            elif padding_type == 'zero':
                p = 1
            else:
                raise NotImplementedError('padding [%s] is not implemented' % padding_type)
            conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim), nn.ReLU(True)]
            if use_dropout:
                conv_block += [nn.Dropout(0.5)]
            p = 0
            if padding_type == 'reflect':
                conv_block += [nn.ReflectionPad2d(1)]
            elif padding_type == 'replicate':
                conv_block += [nn.ReplicationPad2d(1)]
            elif padding_type == 'zero':
                p = 1
            conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim)]
            return nn.Sequential(*conv_block)

        def forward(self, x):
            out = x + self.conv_block(x)
            return out

    class ResnetGenerator(nn.Module):
        def __init__(self, input_nc, output_nc, ngf=64, norm_layer=nn.BatchNorm2d, use_dropout=False, n_blocks=6,
                     padding_type='reflect'):
            assert (n_blocks >= 0)
            super(ResnetGenerator, self).__init__()
            if type(norm_layer) == functools.partial:
                use_bias = norm_layer.func == nn.InstanceNorm2d
            else:
                use_bias = norm_layer == nn.InstanceNorm2d
            model = [nn.ReflectionPad2d(3),
                     nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0, bias=use_bias),
                     norm_layer(ngf),
                     nn.ReLU(True)]
            n_downsampling = 2
            for i in range(n_downsampling):
                mult = 2 ** i
                model += [nn.Conv2d(ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1, bias=use_bias),
                          norm_layer(ngf * mult * 2),
                          nn.ReLU(True)]
            mult = 2 ** n_downsampling
            for i in range(n_blocks):
                model += [ResnetBlock(ngf * mult, padding_type=padding_type, norm_layer=norm_layer,
                                      use_dropout=use_dropout, use_bias=use_bias)]
            for i in range(n_downsampling):
                mult = 2 ** (n_downsampling - i)
                model += [nn.ConvTranspose2d(ngf * mult, int(ngf * mult / 2), kernel_size=3, stride=2, padding=1,
                                             output_padding=1, bias=use_bias),
                          norm_layer(int(ngf * mult / 2)),
                          nn.ReLU(True)]
            model += [nn.ReflectionPad2d(3)]
            model += [nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0)]
            model += [nn.Tanh()]
            self.model = nn.Sequential(*model)

        def forward(self, input):
            return self.model(input)

    class NLayerDiscriminator(nn.Module):
        def __init__(self, input_nc, ndf=64, n_layers=3, norm_layer=nn.BatchNorm2d):
            super(NLayerDiscriminator, self).__init__()
            if type(norm_layer) == functools.partial:
                use_bias = norm_layer.func == nn.InstanceNorm2d
            else:
                use_bias = norm_layer == nn.InstanceNorm2d
            kw = 4
            padw = 1
            sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
            nf_mult = 1
            nf_mult_prev = 1
            for n in range(1, n_layers):
                nf_mult_prev = nf_mult
                nf_mult = min(2 ** n, 8)
                sequence += [
                    nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw, bias=use_bias),
                    norm_layer(ndf * nf_mult),
                    nn.LeakyReLU(0.2, True)
                ]
            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n_layers, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=1, padding=padw, bias=use_bias),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]
            sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]
            self.model = nn.Sequential(*sequence)

        def forward(self, input):
            return self.model(input)

    class GANLoss(nn.Module):
        def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0):
            super(GANLoss, self).__init__()
            self.register_buffer('real_label', torch.tensor(target_real_label))
            self.register_buffer('fake_label', torch.tensor(target_fake_label))
            self.gan_mode = gan_mode
            if gan_mode == 'lsgan':
                self.loss = nn.MSELoss()
            elif gan_mode == 'vanilla':
                self.loss = nn.BCEWithLogitsLoss()
            else:
                raise NotImplementedError('gan mode %s not implemented' % gan_mode)

        def get_target_tensor(self, prediction, target_is_real):
            if target_is_real:
                target_tensor = self.real_label
            else:
                target_tensor = self.fake_label
            return target_tensor.expand_as(prediction)

        def __call__(self, prediction, target_is_real):
            target_tensor = self.get_target_tensor(prediction, target_is_real)
            return self.loss(prediction, target_tensor)

    class ImagePool():
        def __init__(self, pool_size):
            self.pool_size = pool_size
            if self.pool_size > 0:
                self.num_imgs = 0
                self.images = []

        def query(self, images):
            if self.pool_size == 0:
                return images
            return_images = []
            for image in images:
                image = torch.unsqueeze(image.data, 0)
                if self.num_imgs < self.pool_size:
                    self.num_imgs = self.num_imgs + 1
                    self.images.append(image)
                    return_images.append(image)
                else:
                    p = random.uniform(0, 1)
                    if p > 0.5:
                        random_id = random.randint(0, self.pool_size - 1)
                        tmp = self.images[random_id].clone()
                        self.images[random_id] = image
                        return_images.append(tmp)
                    else:
                        return_images.append(image)
            return_images = torch.cat(return_images, 0)
            return return_images

    def set_requires_grad(nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad

    norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    netG_A = ResnetGenerator(3, 3, 2, norm_layer=norm_layer, n_blocks=1)
    netG_B = ResnetGenerator(3, 3, 2, norm_layer=norm_layer, n_blocks=1)
    netD_A = NLayerDiscriminator(3, 4, n_layers=1, norm_layer=norm_layer)
    netD_B = NLayerDiscriminator(3, 4, n_layers=1, norm_layer=norm_layer)
    nets = nn.ModuleList([netG_A, netG_B, netD_A, netD_B])
    init = load(m, nets, state)
    lambda_A, lambda_B, lambda_idt = 10.0, 10.0, 0.0  # --lambda_identity 0: two generator passes fewer
    fake_A_pool, fake_B_pool = ImagePool(2), ImagePool(2)
    criterionGAN = GANLoss('lsgan')
    criterionCycle = torch.nn.L1Loss()
    criterionIdt = torch.nn.L1Loss()
    optimizer_G = torch.optim.Adam(itertools.chain(netG_A.parameters(), netG_B.parameters()), lr=2e-3, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(itertools.chain(netD_A.parameters(), netD_B.parameters()), lr=2e-3, betas=(0.5, 0.999))
    epoch_count, n_epochs, n_epochs_decay = 1, 1, 1

    def lambda_rule(epoch):
        lr_l = 1.0 - max(0, epoch + epoch_count - n_epochs) / float(n_epochs_decay + 1)
        return lr_l

    schedulers = [torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lambda_rule) for optimizer in [optimizer_G, optimizer_D]]

    def backward_D_basic(netD, real, fake):
        pred_real = netD(real)
        loss_D_real = criterionGAN(pred_real, True)
        pred_fake = netD(fake.detach())
        loss_D_fake = criterionGAN(pred_fake, False)
        loss_D = (loss_D_real + loss_D_fake) * 0.5
        loss_D.backward()
        return loss_D

    rng = np.random.default_rng(0)
    losses = []
    for epoch in range(epoch_count, n_epochs + n_epochs_decay):
        real_A = torch.tensor(np.tanh(normal(rng, 1, 3, 8, 8)))
        real_B = torch.tensor(np.tanh(normal(rng, 1, 3, 8, 8)))
        fake_B = netG_A(real_A)
        rec_A = netG_B(fake_B)
        fake_A = netG_B(real_B)
        rec_B = netG_A(fake_A)
        set_requires_grad([netD_A, netD_B], False)
        optimizer_G.zero_grad()
        if lambda_idt > 0:
            idt_A = netG_A(real_B)
            loss_idt_A = criterionIdt(idt_A, real_B) * lambda_B * lambda_idt
            idt_B = netG_B(real_A)
            loss_idt_B = criterionIdt(idt_B, real_A) * lambda_A * lambda_idt
        else:
            loss_idt_A = 0
            loss_idt_B = 0
        loss_G_A = criterionGAN(netD_A(fake_B), True)
        loss_G_B = criterionGAN(netD_B(fake_A), True)
        loss_cycle_A = criterionCycle(rec_A, real_A) * lambda_A
        loss_cycle_B = criterionCycle(rec_B, real_B) * lambda_B
        loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
        loss_G.backward()
        optimizer_G.step()
        set_requires_grad([netD_A, netD_B], True)
        optimizer_D.zero_grad()
        loss_D_A = backward_D_basic(netD_A, real_B, fake_B_pool.query(fake_B))
        loss_D_B = backward_D_basic(netD_B, real_A, fake_A_pool.query(fake_A))
        optimizer_D.step()
        for scheduler in schedulers:
            scheduler.step()
        losses += [loss_G.item(), loss_D_A.item(), loss_D_B.item(), optimizer_G.param_groups[0]['lr']]
    return init, losses + summary(p for p in nets.parameters() if p.ndim > 1)


def test_cyclegan():
    compare(cyclegan)


# (b) rosinality/glow-pytorch's model.py and train.py: ActNorm initialised from the first batch's statistics
# behind a uint8 "initialized" buffer, InvConv2dLU (scipy's QR and LU at init; P, L, U and log|s| with their
# masks as buffers and parameters), ZeroConv2d padded with ones, AffineCoupling with a sigmoid scale, Block's
# squeeze by view/permute and its split with a learned prior, gaussian_log_p, and calc_loss in bits per dimension;
# the first batch runs under no_grad to initialise ActNorm, as train.py's first iteration does
def glow(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from scipy import linalg as la
    from math import log, pi

    logabs = lambda x: torch.log(torch.abs(x))  # noqa: E731

    class ActNorm(nn.Module):
        def __init__(self, in_channel, logdet=True):
            super().__init__()
            self.loc = nn.Parameter(torch.zeros(1, in_channel, 1, 1))
            self.scale = nn.Parameter(torch.ones(1, in_channel, 1, 1))
            self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))
            self.logdet = logdet

        def initialize(self, input):
            with torch.no_grad():
                flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
                mean = (flatten.mean(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3))
                std = (flatten.std(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3))
                self.loc.data.copy_(-mean)
                self.scale.data.copy_(1 / (std + 1e-6))

        def forward(self, input):
            _, _, height, width = input.shape
            if self.initialized.item() == 0:
                self.initialize(input)
                self.initialized.fill_(1)
            log_abs = logabs(self.scale)
            logdet = height * width * torch.sum(log_abs)
            if self.logdet:
                return self.scale * (input + self.loc), logdet
            else:
                return self.scale * (input + self.loc)

    class InvConv2dLU(nn.Module):
        def __init__(self, in_channel):
            super().__init__()
            weight = np_rng.standard_normal((in_channel, in_channel))
            q, _ = la.qr(weight)
            w_p, w_l, w_u = la.lu(q.astype(np.float32))
            w_s = np.diag(w_u)
            w_u = np.triu(w_u, 1)
            u_mask = np.triu(np.ones_like(w_u), 1)
            l_mask = u_mask.T
            w_p = torch.from_numpy(w_p)
            w_l = torch.from_numpy(w_l)
            w_s = torch.from_numpy(w_s)
            w_u = torch.from_numpy(w_u)
            self.register_buffer("w_p", w_p)
            self.register_buffer("u_mask", torch.from_numpy(u_mask))
            self.register_buffer("l_mask", torch.from_numpy(l_mask))
            self.register_buffer("s_sign", torch.sign(w_s))
            self.register_buffer("l_eye", torch.eye(l_mask.shape[0]))
            self.w_l = nn.Parameter(w_l)
            self.w_s = nn.Parameter(logabs(w_s))
            self.w_u = nn.Parameter(w_u)

        def forward(self, input):
            _, _, height, width = input.shape
            weight = self.calc_weight()
            out = F.conv2d(input, weight)
            logdet = height * width * torch.sum(self.w_s)
            return out, logdet

        def calc_weight(self):
            weight = (
                self.w_p
                @ (self.w_l * self.l_mask + self.l_eye)
                @ ((self.w_u * self.u_mask) + torch.diag(self.s_sign * torch.exp(self.w_s)))
            )
            return weight.unsqueeze(2).unsqueeze(3)

    class ZeroConv2d(nn.Module):
        def __init__(self, in_channel, out_channel, padding=1):
            super().__init__()
            self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
            self.conv.weight.data.zero_()
            self.conv.bias.data.zero_()
            self.scale = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

        def forward(self, input):
            out = F.pad(input, [1, 1, 1, 1], value=1)
            out = self.conv(out)
            out = out * torch.exp(self.scale * 3)
            return out

    class AffineCoupling(nn.Module):
        def __init__(self, in_channel, filter_size=512, affine=True):
            super().__init__()
            self.affine = affine
            self.net = nn.Sequential(
                nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(filter_size, filter_size, 1),
                nn.ReLU(inplace=True),
                ZeroConv2d(filter_size, in_channel if self.affine else in_channel // 2),
            )
            self.net[0].weight.data.normal_(0, 0.05)
            self.net[0].bias.data.zero_()
            self.net[2].weight.data.normal_(0, 0.05)
            self.net[2].bias.data.zero_()

        def forward(self, input):
            in_a, in_b = input.chunk(2, 1)
            if self.affine:
                log_s, t = self.net(in_a).chunk(2, 1)
                s = F.sigmoid(log_s + 2)
                out_b = (in_b + t) * s
                logdet = torch.sum(torch.log(s).view(input.shape[0], -1), 1)
            else:
                net_out = self.net(in_a)
                out_b = in_b + net_out
                logdet = None
            return torch.cat([in_a, out_b], 1), logdet

    class Flow(nn.Module):
        def __init__(self, in_channel, affine=True, conv_lu=True):
            super().__init__()
            self.actnorm = ActNorm(in_channel)
            self.invconv = InvConv2dLU(in_channel)
            self.coupling = AffineCoupling(in_channel, filter_size=4, affine=affine)

        def forward(self, input):
            out, logdet = self.actnorm(input)
            out, det1 = self.invconv(out)
            out, det2 = self.coupling(out)
            logdet = logdet + det1
            if det2 is not None:
                logdet = logdet + det2
            return out, logdet

    def gaussian_log_p(x, mean, log_sd):
        return -0.5 * log(2 * pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)

    class Block(nn.Module):
        def __init__(self, in_channel, n_flow, split=True, affine=True, conv_lu=True):
            super().__init__()
            squeeze_dim = in_channel * 4
            self.flows = nn.ModuleList()
            for i in range(n_flow):
                self.flows.append(Flow(squeeze_dim, affine=affine, conv_lu=conv_lu))
            self.split = split
            if split:
                self.prior = ZeroConv2d(in_channel * 2, in_channel * 4)
            else:
                self.prior = ZeroConv2d(in_channel * 4, in_channel * 8)

        def forward(self, input):
            b_size, n_channel, height, width = input.shape
            squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
            squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
            out = squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)
            logdet = 0
            for flow in self.flows:
                out, det = flow(out)
                logdet = logdet + det
            if self.split:
                out, z_new = out.chunk(2, 1)
                mean, log_sd = self.prior(out).chunk(2, 1)
                log_p = gaussian_log_p(z_new, mean, log_sd)
                log_p = log_p.view(b_size, -1).sum(1)
            else:
                zero = torch.zeros_like(out)
                mean, log_sd = self.prior(zero).chunk(2, 1)
                log_p = gaussian_log_p(out, mean, log_sd)
                log_p = log_p.view(b_size, -1).sum(1)
                z_new = out
            return out, logdet, log_p, z_new

    class Glow(nn.Module):
        def __init__(self, in_channel, n_flow, n_block, affine=True, conv_lu=True):
            super().__init__()
            self.blocks = nn.ModuleList()
            n_channel = in_channel
            for i in range(n_block - 1):
                self.blocks.append(Block(n_channel, n_flow, affine=affine, conv_lu=conv_lu))
                n_channel *= 2
            self.blocks.append(Block(n_channel, n_flow, split=False, affine=affine))

        def forward(self, input):
            log_p_sum = 0
            logdet = 0
            out = input
            z_outs = []
            for block in self.blocks:
                out, det, log_p, z_new = block(out)
                z_outs.append(z_new)
                logdet = logdet + det
                if log_p is not None:
                    log_p_sum = log_p_sum + log_p
            return log_p_sum, logdet, z_outs

    def calc_loss(log_p, logdet, image_size, n_bins):
        n_pixel = image_size * image_size * 3
        loss = -log(n_bins) * n_pixel
        loss = loss + logdet + log_p
        return (
            (-loss / (log(2) * n_pixel)).mean(),
            (log_p / (log(2) * n_pixel)).mean(),
            (logdet / (log(2) * n_pixel)).mean(),
        )

    np_rng = np.random.default_rng(5)  # np.random.randn in InvConv2dLU: the same draws in both runs
    model = Glow(3, n_flow=1, n_block=2, affine=True, conv_lu=True)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_bits, image_size = 5, 8
    n_bins = 2.0 ** n_bits
    rng = np.random.default_rng(6)
    losses = []
    for i in range(2):
        image = torch.tensor(rng.uniform(0, 1, (2, 3, image_size, image_size)).astype(np.float32))
        image = image * 255
        if n_bits < 8:
            image = torch.floor(image / 2 ** (8 - n_bits))
        image = image / n_bins - 0.5
        noise = torch.tensor(rng.uniform(0, 1, (2, 3, image_size, image_size)).astype(np.float32))
        if i == 0:
            with torch.no_grad():
                log_p, logdet, _ = model(image + noise / n_bins)
                continue
        else:
            log_p, logdet, _ = model(image + noise / n_bins)
        logdet = logdet.mean()
        loss, log_p, log_det = calc_loss(log_p, logdet, image_size, n_bins)
        model.zero_grad()
        loss.backward()
        warmup_lr = 1e-3 * min(1, i / 2)
        optimizer.param_groups[0]["lr"] = warmup_lr
        optimizer.step()
        losses += [loss.item(), log_p.item(), log_det.item()]
    assert all(int(b.flows[0].actnorm.initialized) == 1 for b in model.blocks)
    return init, losses + summary(model.parameters())


def test_glow():
    compare(glow)


# (c) johnma2006/mamba-minimal's model.py with its einops calls written as torch's (the form ports of it take):
# ModelArgs' vocabulary padding, RMSNorm, MambaBlock's in_proj split by split_size=, a depthwise Conv1d padded
# d_conv - 1 and cut to the length, softplus of dt_proj, A = -exp(A_log) from a repeated arange, the sequential
# selective scan by einsum (three operands for deltaB_u), y * silu(res), the LM head tied to the embedding;
# AdamW steps on next-token cross-entropy, then greedy generation by argmax
def mamba_minimal(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from dataclasses import dataclass
    from typing import Union

    @dataclass
    class ModelArgs:
        d_model: int
        n_layer: int
        vocab_size: int
        d_state: int = 16
        expand: int = 2
        dt_rank: Union[int, str] = 'auto'
        d_conv: int = 4
        pad_vocab_size_multiple: int = 8
        conv_bias: bool = True
        bias: bool = False

        def __post_init__(self):
            self.d_inner = int(self.expand * self.d_model)
            if self.dt_rank == 'auto':
                self.dt_rank = math.ceil(self.d_model / 16)
            if self.vocab_size % self.pad_vocab_size_multiple != 0:
                self.vocab_size += (self.pad_vocab_size_multiple - self.vocab_size % self.pad_vocab_size_multiple)

    class RMSNorm(nn.Module):
        def __init__(self, d_model: int, eps: float = 1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(d_model))

        def forward(self, x):
            output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
            return output

    class MambaBlock(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)
            self.conv1d = nn.Conv1d(in_channels=args.d_inner, out_channels=args.d_inner, bias=args.conv_bias,
                                    kernel_size=args.d_conv, groups=args.d_inner, padding=args.d_conv - 1)
            self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)
            self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)
            A = torch.arange(1, args.d_state + 1).repeat(args.d_inner, 1)  # repeat(arange, 'n -> d n')
            self.A_log = nn.Parameter(torch.log(A))
            self.D = nn.Parameter(torch.ones(args.d_inner))
            self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

        def forward(self, x):
            (b, l, d) = x.shape
            x_and_res = self.in_proj(x)  # shape (b, l, 2 * d_in)
            (x, res) = x_and_res.split(split_size=[self.args.d_inner, self.args.d_inner], dim=-1)
            x = x.transpose(1, 2)  # rearrange(x, 'b l d_in -> b d_in l')
            x = self.conv1d(x)[:, :, :l]
            x = x.transpose(1, 2)
            x = F.silu(x)
            y = self.ssm(x)
            y = y * F.silu(res)
            output = self.out_proj(y)
            return output

        def ssm(self, x):
            (d_in, n) = self.A_log.shape
            A = -torch.exp(self.A_log.float())  # shape (d_in, n)
            D = self.D.float()
            x_dbl = self.x_proj(x)  # (b, l, dt_rank + 2*n)
            (delta, B, C) = x_dbl.split(split_size=[self.args.dt_rank, n, n], dim=-1)
            delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)
            y = self.selective_scan(x, delta, A, B, C, D)
            return y

        def selective_scan(self, u, delta, A, B, C, D):
            (b, l, d_in) = u.shape
            n = A.shape[1]
            deltaA = torch.exp(torch.einsum('bld,dn->bldn', delta, A))
            deltaB_u = torch.einsum('bld,bln,bld->bldn', delta, B, u)
            x = torch.zeros((b, d_in, n), device=deltaA.device)
            ys = []
            for i in range(l):
                x = deltaA[:, i] * x + deltaB_u[:, i]
                y = torch.einsum('bdn,bn->bd', x, C[:, i, :])
                ys.append(y)
            y = torch.stack(ys, dim=1)  # shape (b, l, d_in)
            y = y + u * D
            return y

    class ResidualBlock(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.mixer = MambaBlock(args)
            self.norm = RMSNorm(args.d_model)

        def forward(self, x):
            output = self.mixer(self.norm(x)) + x
            return output

    class Mamba(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.embedding = nn.Embedding(args.vocab_size, args.d_model)
            self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
            self.norm_f = RMSNorm(args.d_model)
            self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
            self.lm_head.weight = self.embedding.weight  # Tie output projection to embedding weights.

        def forward(self, input_ids):
            x = self.embedding(input_ids)
            for layer in self.layers:
                x = layer(x)
            x = self.norm_f(x)
            logits = self.lm_head(x)
            return logits

    args = ModelArgs(d_model=8, n_layer=1, vocab_size=13, d_state=4, d_conv=3)
    assert args.vocab_size == 16 and args.dt_rank == 1
    model = Mamba(args)
    assert len(model.state_dict()) == len(list(model.parameters())) + 1  # the tied head: one parameter, two keys
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    rng = np.random.default_rng(7)
    losses = []
    for _ in range(2):
        data = torch.tensor(rng.integers(0, 13, (2, 5)))
        x, y = data[:, :-1], data[:, 1:]
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    input_ids = torch.tensor([[1, 2]])
    with torch.no_grad():
        for _ in range(2):
            next_token_logits = model(input_ids)[:, -1]
            probs = F.softmax(next_token_logits, dim=-1)
            next_indices = torch.argmax(probs, dim=-1, keepdim=True)
            input_ids = torch.cat([input_ids, next_indices], dim=1)
    assert model.lm_head.weight is model.embedding.weight
    return init, losses + input_ids.flatten().tolist() + summary(model.parameters())


def test_mamba_minimal_selective_scan():
    compare(mamba_minimal)


# (d) Blealtan/efficient-kan's kan.py and its MNIST example: KANLinear's grid buffer from an expanded arange,
# parameters made as torch.Tensor(out, in) and filled by reset_parameters (kaiming_uniform_ and, under no_grad,
# curve2coeff of uniform noise by a batched torch.linalg.lstsq), b_splines' recursion over bool masks,
# scaled_spline_weight, update_grid (sort, a linspace of int64 indices, torch.concatenate, bmm) under
# @torch.no_grad(), and regularization_loss; AdamW with ExponentialLR on cross-entropy plus the regulariser
def efficient_kan(m, state=None):
    torch, F = m.torch, m.F

    class KANLinear(torch.nn.Module):
        def __init__(self, in_features, out_features, grid_size=5, spline_order=3, scale_noise=0.1, scale_base=1.0,
                     scale_spline=1.0, enable_standalone_scale_spline=True, base_activation=torch.nn.SiLU,
                     grid_eps=0.02, grid_range=[-1, 1]):
            super(KANLinear, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.grid_size = grid_size
            self.spline_order = spline_order
            h = (grid_range[1] - grid_range[0]) / grid_size
            grid = (
                (torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0])
                .expand(in_features, -1)
                .contiguous()
            )
            self.register_buffer("grid", grid)
            self.base_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features))
            self.spline_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features, grid_size + spline_order))
            if enable_standalone_scale_spline:
                self.spline_scaler = torch.nn.Parameter(torch.Tensor(out_features, in_features))
            self.scale_noise = scale_noise
            self.scale_base = scale_base
            self.scale_spline = scale_spline
            self.enable_standalone_scale_spline = enable_standalone_scale_spline
            self.base_activation = base_activation()
            self.grid_eps = grid_eps
            self.reset_parameters()

        def reset_parameters(self):
            torch.nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
            with torch.no_grad():
                noise = (
                    (torch.rand(self.grid_size + 1, self.in_features, self.out_features) - 1 / 2)
                    * self.scale_noise
                    / self.grid_size
                )
                self.spline_weight.data.copy_(
                    (self.scale_spline if not self.enable_standalone_scale_spline else 1.0)
                    * self.curve2coeff(self.grid.T[self.spline_order: -self.spline_order], noise)
                )
                if self.enable_standalone_scale_spline:
                    torch.nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

        def b_splines(self, x):
            assert x.dim() == 2 and x.size(1) == self.in_features
            grid = self.grid  # (in_features, grid_size + 2 * spline_order + 1)
            x = x.unsqueeze(-1)
            bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
            for k in range(1, self.spline_order + 1):
                bases = (
                    (x - grid[:, : -(k + 1)])
                    / (grid[:, k:-1] - grid[:, : -(k + 1)])
                    * bases[:, :, :-1]
                ) + (
                    (grid[:, k + 1:] - x)
                    / (grid[:, k + 1:] - grid[:, 1:(-k)])
                    * bases[:, :, 1:]
                )
            assert bases.size() == (x.size(0), self.in_features, self.grid_size + self.spline_order)
            return bases.contiguous()

        def curve2coeff(self, x, y):
            assert x.dim() == 2 and x.size(1) == self.in_features
            assert y.size() == (x.size(0), self.in_features, self.out_features)
            A = self.b_splines(x).transpose(0, 1)  # (in_features, batch_size, grid_size + spline_order)
            B = y.transpose(0, 1)  # (in_features, batch_size, out_features)
            solution = torch.linalg.lstsq(A, B).solution  # (in_features, grid_size + spline_order, out_features)
            result = solution.permute(2, 0, 1)  # (out_features, in_features, grid_size + spline_order)
            assert result.size() == (self.out_features, self.in_features, self.grid_size + self.spline_order)
            return result.contiguous()

        @property
        def scaled_spline_weight(self):
            return self.spline_weight * (
                self.spline_scaler.unsqueeze(-1) if self.enable_standalone_scale_spline else 1.0
            )

        def forward(self, x):
            assert x.size(-1) == self.in_features
            original_shape = x.shape
            x = x.reshape(-1, self.in_features)
            base_output = F.linear(self.base_activation(x), self.base_weight)
            spline_output = F.linear(
                self.b_splines(x).view(x.size(0), -1),
                self.scaled_spline_weight.view(self.out_features, -1),
            )
            output = base_output + spline_output
            output = output.reshape(*original_shape[:-1], self.out_features)
            return output

        @torch.no_grad()
        def update_grid(self, x, margin=0.01):
            assert x.dim() == 2 and x.size(1) == self.in_features
            batch = x.size(0)
            splines = self.b_splines(x)  # (batch, in, coeff)
            splines = splines.permute(1, 0, 2)  # (in, batch, coeff)
            orig_coeff = self.scaled_spline_weight  # (out, in, coeff)
            orig_coeff = orig_coeff.permute(1, 2, 0)  # (in, coeff, out)
            unreduced_spline_output = torch.bmm(splines, orig_coeff)  # (in, batch, out)
            unreduced_spline_output = unreduced_spline_output.permute(1, 0, 2)  # (batch, in, out)
            x_sorted = torch.sort(x, dim=0)[0]
            grid_adaptive = x_sorted[
                torch.linspace(0, batch - 1, self.grid_size + 1, dtype=torch.int64, device=x.device)
            ]
            uniform_step = (x_sorted[-1] - x_sorted[0] + 2 * margin) / self.grid_size
            grid_uniform = (
                torch.arange(self.grid_size + 1, dtype=torch.float32, device=x.device).unsqueeze(1)
                * uniform_step
                + x_sorted[0]
                - margin
            )
            grid = self.grid_eps * grid_uniform + (1 - self.grid_eps) * grid_adaptive
            grid = torch.concatenate(
                [
                    grid[:1] - uniform_step * torch.arange(self.spline_order, 0, -1, device=x.device).unsqueeze(1),
                    grid,
                    grid[-1:] + uniform_step * torch.arange(1, self.spline_order + 1, device=x.device).unsqueeze(1),
                ],
                dim=0,
            )
            self.grid.copy_(grid.T)
            self.spline_weight.data.copy_(self.curve2coeff(x, unreduced_spline_output))

        def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
            l1_fake = self.spline_weight.abs().mean(-1)
            regularization_loss_activation = l1_fake.sum()
            p = l1_fake / regularization_loss_activation
            regularization_loss_entropy = -torch.sum(p * p.log())
            return (
                regularize_activation * regularization_loss_activation
                + regularize_entropy * regularization_loss_entropy
            )

    class KAN(torch.nn.Module):
        def __init__(self, layers_hidden, grid_size=5, spline_order=3, scale_noise=0.1, scale_base=1.0,
                     scale_spline=1.0, base_activation=torch.nn.SiLU, grid_eps=0.02, grid_range=[-1, 1]):
            super(KAN, self).__init__()
            self.grid_size = grid_size
            self.spline_order = spline_order
            self.layers = torch.nn.ModuleList()
            for in_features, out_features in zip(layers_hidden, layers_hidden[1:]):
                self.layers.append(
                    KANLinear(in_features, out_features, grid_size=grid_size, spline_order=spline_order,
                              scale_noise=scale_noise, scale_base=scale_base, scale_spline=scale_spline,
                              base_activation=base_activation, grid_eps=grid_eps, grid_range=grid_range))

        def forward(self, x, update_grid=False):
            for layer in self.layers:
                if update_grid:
                    layer.update_grid(x)
                x = layer(x)
            return x

        def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
            return sum(layer.regularization_loss(regularize_activation, regularize_entropy) for layer in self.layers)

    model = KAN([6, 5, 3], grid_size=4)
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
    criterion = torch.nn.CrossEntropyLoss()
    rng = np.random.default_rng(8)
    losses = []
    for step in range(2):
        images = torch.tensor(np.tanh(normal(rng, 8, 6)))
        labels = torch.tensor(rng.integers(0, 3, 8))
        optimizer.zero_grad()
        output = model(images, update_grid=step == 1)
        loss = criterion(output, labels) + 1e-3 * model.regularization_loss()
        loss.backward()
        optimizer.step()
        scheduler.step()
        accuracy = (output.argmax(dim=1) == labels).float().mean()
        losses += [loss.item(), accuracy.item()]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_efficient_kan():
    compare(efficient_kan)
