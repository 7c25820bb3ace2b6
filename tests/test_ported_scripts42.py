"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: ming024's FastSpeech2 (durations expanded by .item() and padded by F.pad, masks from
arange >= lengths, losses over masked_select, bucketize'd pitch embeddings); facebookresearch's pytorch_GAN_zoo
progressive GAN (equalised learning rate, pixel norm, a mini-batch stddev feature by torch.var, fade-in by alpha, the
WGAN-GP penalty's own backward(retain_graph=True), the epsilon drift term); GRU4Rec (one-hot by scatter_ into a
buffer, hidden[:, mask, :] = 0, in-batch logits by logit[:, target], TOP1/BPR losses); DeepCTR-Torch's DIN and
xDeepFM (Dice, masked attention pooling by torch.where, the CIN's einsum and torch.split halves, L2 terms); galsang's
BiDAF (char CNN, highway by getattr, sorted packed LSTMs, the similarity loop, span search under a -inf tril mask, an
EMA of the weights, Adadelta); DaehanKim's VGAE (a sparse.FloatTensor adjacency, BCE weighted through a bool mask);
RexYing's DiffPool (a BatchNorm1d made in forward, soft assignments, the link-prediction loss); laiguokun's LSTNet
(skip-GRU by view/permute, the highway, the Optim wrapper's manual clipping); pytorch-softdtw (a Function running
numpy between torch.Tensor(...).to(dev).type(dtype)); ermongroup's NeuralSort and SoftSort (a hard permutation by
P[b, r, c] = 1 and the straight-through trick); taesungp's CUT (PatchNCE with a bool eye, MLPs made in the sampler's
first forward, the mask dtype by torch.__version__); invertible-resnet / residual-flows (a power-series log
determinant by autograd.grad(create_graph=True), spectral norm by hand with F.normalize(out=)); Demucs v2 (GLU, Conv-
Transpose1d, center_trim, augmentations by gather); a Double DQN with prioritised replay (a numpy SumTree, copy.deepcopy
for the target network); the Music Transformer's relative attention (the pad-and-reshape skew); FCOS's loss (targets
by meshgrid locations, areas[is_in_boxes == 0] = INF, GIoU, centerness); a LAS listener-speller with SpecAugment masks;
Deformable DETR's multi-scale deformable attention in pure PyTorch (grid_sample per level, reference points over valid
ratios); Swin V2's window attention (log-spaced continuous position bias, cosine attention with a clamped logit
scale, a persistent=False index buffer); timm's fine-tuning machinery (a model registry, checkpoint_filter_fn's key
remapping and bicubic pos_embed resize, load_state_dict(strict=False)'s result, named_apply, layer-wise lr decay);
MelGAN (weight-normed Conv1d/ConvTranspose1d, AvgPool1d(count_include_pad=False), hinge and feature-matching losses);
wolny's 3D U-Net (layers from an order string, GroupNorm, ConvTranspose3d with output_size, 3-D nearest interpolation,
per-channel Dice, a uint8 MeanIoU); a device-side augmentation pipeline beside Graham's fractional max-pooling (affine
grids sampled with reflection and border padding, area and nearest-exact resizes, an unfold/fold average,
FractionalMaxPool2d given its _random_samples, LPPool2d, Softmax2d, InstanceNorm1d, Dropout1d); a Bayesian-optimisation
loop written by hand (an exact GP fitted by Adam, cholesky_solve and solve_triangular posteriors, Expected Improvement
by Normal's cdf and log_prob, the acquisition maximised by LBFGS(line_search_fn="strong_wolfe") from several starts);
the implicit-layers tutorial's Deep Equilibrium model (Anderson acceleration under no_grad, an implicit backward by a
tensor hook that calls autograd.grad inside the backward).

Each runs in tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the
weights summed into a few numbers, agree. Numpy draws what a script draws (torch.randn, rand, randint and random
are replaced by numpy's draws); shapes are tiny and runs take one to three steps. Where a parameter's gradient is
rounding noise in both libraries (an attention key bias, a bias before a normalisation, a shift-invariant score) and
Adam's step makes it lr-sized, its sum is left out, as each script says.

What failed in tnet, fixed there the way torch behaves:
- F.normalize(..., out=) raised (the residual flow's spectral norm by hand, as torch.nn.utils.spectral_norm writes
  its power iteration): it writes as torch.div(..., out=out) (tests/test_idioms.py).
Found beside them by probing torch's API surface, and fixed:
- copy.deepcopy of a Parameter kept its gradient and attributes; torch's copies the values and requires_grad only, so
  a deep-copied target network has no gradients (tests/test_nn.py).
- Python's bool and int as dtypes (torch.zeros(n, dtype=bool), x.to(int), sum(dtype=int)) raised TypeError; they are
  torch.bool and torch.int64, as torch's parser reads them (tests/test_tensor.py).
- the messages of an integer mean (Got: Long) and of a subtraction of two bools are torch's (test_reduce.py,
  test_pointwise.py)."""
import math
from collections import OrderedDict

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) ming024/FastSpeech2 (model/modules.py's VarianceAdaptor, LengthRegulator and VariancePredictor, utils/tools.py's
# get_mask_from_lengths and pad, model/loss.py's FastSpeech2Loss; transformer/ 's FFT block by nn.MultiheadAttention
# here): a mask by torch.arange(0, max_len).unsqueeze(0).expand(batch_size, -1) >= lengths, each phoneme's vector
# expanded by its duration's .item() and cat, padded by F.pad to the longest and stacked, log durations by
# torch.log(d.float() + 1), losses over masked_select, durations at inference by clamp(round(exp(log_d) - 1), min=0)
def fastspeech2(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    n_vocab, d_model, n_mel = 10, 8, 5

    def get_mask_from_lengths(lengths, max_len=None):
        batch_size = lengths.shape[0]
        if max_len is None:
            max_len = torch.max(lengths).item()
        ids = torch.arange(0, max_len).unsqueeze(0).expand(batch_size, -1)
        mask = ids >= lengths.unsqueeze(1).expand(-1, max_len)
        return mask

    def pad(input_ele, mel_max_length=None):
        if mel_max_length:
            max_len = mel_max_length
        else:
            max_len = max([input_ele[i].size(0) for i in range(len(input_ele))])
        out_list = list()
        for i, batch in enumerate(input_ele):
            if len(batch.shape) == 1:
                one_batch_padded = F.pad(batch, (0, max_len - batch.size(0)), "constant", 0.0)
            elif len(batch.shape) == 2:
                one_batch_padded = F.pad(batch, (0, 0, 0, max_len - batch.size(0)), "constant", 0.0)
            out_list.append(one_batch_padded)
        out_padded = torch.stack(out_list)
        return out_padded

    def get_sinusoid_encoding_table(n_position, d_hid):
        def cal_angle(position, hid_idx):
            return position / np.power(10000, 2 * (hid_idx // 2) / d_hid)
        table = np.array([[cal_angle(pos, j) for j in range(d_hid)] for pos in range(n_position)])
        table[:, 0::2] = np.sin(table[:, 0::2])
        table[:, 1::2] = np.cos(table[:, 1::2])
        return torch.FloatTensor(table)

    class FFTBlock(nn.Module):
        def __init__(self, d_model, n_head, d_inner, kernel_size):
            super().__init__()
            self.slf_attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
            self.norm1 = nn.LayerNorm(d_model)
            self.w_1 = nn.Conv1d(d_model, d_inner, kernel_size[0], padding=(kernel_size[0] - 1) // 2)
            self.w_2 = nn.Conv1d(d_inner, d_model, kernel_size[1], padding=(kernel_size[1] - 1) // 2)
            self.norm2 = nn.LayerNorm(d_model)

        def forward(self, enc_input, mask=None):
            out, attn = self.slf_attn(enc_input, enc_input, enc_input, key_padding_mask=mask)
            out = self.norm1(out + enc_input)
            out = out.masked_fill(mask.unsqueeze(-1), 0)
            residual = out
            x = self.w_2(F.relu(self.w_1(out.transpose(1, 2)))).transpose(1, 2)
            x = self.norm2(x + residual)
            return x.masked_fill(mask.unsqueeze(-1), 0), attn

    class VariancePredictor(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.conv_layer = nn.Sequential(OrderedDict([
                ("conv1d_1", nn.Conv1d(d, d, kernel_size=3, padding=1)), ("relu_1", nn.ReLU())]))
            self.layer_norm = nn.LayerNorm(d)
            self.linear_layer = nn.Linear(d, 1)

        def forward(self, encoder_output, mask):
            out = self.conv_layer(encoder_output.contiguous().transpose(1, 2)).contiguous().transpose(1, 2)
            out = self.layer_norm(out)
            out = self.linear_layer(out)
            out = out.squeeze(-1)
            if mask is not None:
                out = out.masked_fill(mask, 0.0)
            return out

    class LengthRegulator(nn.Module):
        def LR(self, x, duration, max_len):
            output = list()
            mel_len = list()
            for batch, expand_target in zip(x, duration):
                expanded = self.expand(batch, expand_target)
                output.append(expanded)
                mel_len.append(expanded.shape[0])
            if max_len is not None:
                output = pad(output, max_len)
            else:
                output = pad(output)
            return output, torch.LongTensor(mel_len)

        def expand(self, batch, predicted):
            out = list()
            for i, vec in enumerate(batch):
                expand_size = predicted[i].item()
                out.append(vec.expand(max(int(expand_size), 0), -1))
            out = torch.cat(out, 0)
            return out

        def forward(self, x, duration, max_len):
            output, mel_len = self.LR(x, duration, max_len)
            return output, mel_len

    class FastSpeech2(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_word_emb = nn.Embedding(n_vocab, d_model, padding_idx=0)
            self.position_enc = nn.Parameter(get_sinusoid_encoding_table(20, d_model).unsqueeze(0), requires_grad=False)
            self.encoder = FFTBlock(d_model, 2, 12, (3, 1))
            self.duration_predictor = VariancePredictor(d_model)
            self.pitch_predictor = VariancePredictor(d_model)
            self.pitch_bins = nn.Parameter(torch.linspace(-1.0, 1.0, 4 - 1), requires_grad=False)
            self.pitch_embedding = nn.Embedding(4, d_model)
            self.length_regulator = LengthRegulator()
            self.decoder = FFTBlock(d_model, 2, 12, (3, 1))
            self.mel_linear = nn.Linear(d_model, n_mel)

        def forward(self, texts, src_lens, max_src_len, mel_lens=None, max_mel_len=None, p_targets=None,
                    d_targets=None, d_control=1.0):
            src_masks = get_mask_from_lengths(src_lens, max_src_len)
            mel_masks = get_mask_from_lengths(mel_lens, max_mel_len) if mel_lens is not None else None
            x = self.src_word_emb(texts) + self.position_enc[:, :max_src_len, :].expand(texts.shape[0], -1, -1)
            output, _ = self.encoder(x, src_masks)
            log_duration_prediction = self.duration_predictor(output, src_masks)
            pitch_prediction = self.pitch_predictor(output, src_masks)
            target = p_targets if p_targets is not None else pitch_prediction
            output = output + self.pitch_embedding(torch.bucketize(target, self.pitch_bins))
            if d_targets is not None:
                x, mel_len = self.length_regulator(output, d_targets, max_mel_len)
                duration_rounded = d_targets
            else:
                duration_rounded = torch.clamp((torch.round(torch.exp(log_duration_prediction) - 1) * d_control),
                                               min=0)
                x, mel_len = self.length_regulator(output, duration_rounded, None)
                mel_masks = get_mask_from_lengths(mel_len)
            output, _ = self.decoder(x + self.position_enc[:, :x.size(1), :], mel_masks)
            output = self.mel_linear(output)
            return output, pitch_prediction, log_duration_prediction, duration_rounded, src_masks, mel_masks, mel_len

    class FastSpeech2Loss(nn.Module):
        def __init__(self):
            super().__init__()
            self.mse_loss = nn.MSELoss()
            self.mae_loss = nn.L1Loss()

        def forward(self, inputs, predictions):
            mel_targets, pitch_targets, duration_targets = inputs
            mel_predictions, pitch_predictions, log_duration_predictions, _, src_masks, mel_masks, _ = predictions
            src_masks = ~src_masks
            mel_masks = ~mel_masks
            log_duration_targets = torch.log(duration_targets.float() + 1)
            mel_targets = mel_targets[:, : mel_masks.shape[1], :]
            log_duration_targets.requires_grad = False
            pitch_targets.requires_grad = False
            mel_targets.requires_grad = False
            pitch_predictions = pitch_predictions.masked_select(src_masks)
            pitch_targets = pitch_targets.masked_select(src_masks)
            log_duration_predictions = log_duration_predictions.masked_select(src_masks)
            log_duration_targets = log_duration_targets.masked_select(src_masks)
            mel_predictions = mel_predictions.masked_select(mel_masks.unsqueeze(-1))
            mel_targets = mel_targets.masked_select(mel_masks.unsqueeze(-1))
            mel_loss = self.mae_loss(mel_predictions, mel_targets)
            pitch_loss = self.mse_loss(pitch_predictions, pitch_targets)
            duration_loss = self.mse_loss(log_duration_predictions, log_duration_targets)
            total_loss = mel_loss + duration_loss + pitch_loss
            return total_loss, mel_loss, pitch_loss, duration_loss

    model = FastSpeech2()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9, lr=1e-3)
    Loss = FastSpeech2Loss()
    losses = []
    for step in range(2):
        src_lens = np.array([5, 3])
        texts = np.zeros((2, 5), np.int64)
        durations = np.zeros((2, 5), np.int64)
        for b, n in enumerate(src_lens):
            texts[b, :n] = rng.integers(1, n_vocab, n)
            durations[b, :n] = rng.integers(0, 3, n)
        mel_lens = durations.sum(1)
        max_mel_len = int(mel_lens.max())
        mels = torch.from_numpy(normal(rng, 2, max_mel_len, n_mel))
        pitches = torch.from_numpy(normal(rng, 2, 5) * (texts > 0))
        batch = (torch.from_numpy(texts), torch.from_numpy(src_lens), 5, torch.from_numpy(mel_lens), max_mel_len)
        output = model(*batch, p_targets=pitches, d_targets=torch.from_numpy(durations))
        total_loss, mel_loss, pitch_loss, duration_loss = Loss((mels, pitches, torch.from_numpy(durations)), output)
        total_loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        losses += [total_loss.item(), mel_loss.item(), pitch_loss.item(), duration_loss.item()]
    model.eval()
    with torch.no_grad():
        output = model(batch[0], batch[1], 5, d_control=2.0)
    losses += [output[0].sum().item(), float(output[3].sum()), float(output[6].sum())]
    # the attention's key bias has no gradient but rounding's (softmax ignores a shift of a query's scores), which
    # Adam's eps of 1e-9 turns into steps of lr: its sum is noise in either library
    return init, losses + summary(p for n, p in model.named_parameters() if not n.endswith("in_proj_bias"))


def test_fastspeech2():
    compare(fastspeech2)


# (b) facebookresearch/pytorch_GAN_zoo's progressive GAN (models/networks/custom_layers.py's EqualizedConv2d and
# NormalizationLayer, mini_batch_stddev, upscale2D; progressive_conv_net.py's fade-in by alpha; loss_criterions/
# gradient_losses.py's WGANGPGradientPenalty; base_GAN.py's epsilon drift term and Adam(betas=(0, 0.99))): weights
# scaled by He's constant after the convolution, the upscale by view/expand/contiguous, a stddev feature by torch.var
# over a subgroup, the penalty's torch.autograd.grad(create_graph=True) backed by its own backward(retain_graph=True)
def progressive_gan(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(2)

    def getLayerNormalizationFactor(x):
        size = x.weight.size()
        fan_in = np.prod(size[1:])
        return math.sqrt(2.0 / fan_in)

    class ConstrainedLayer(nn.Module):
        def __init__(self, module, equalized=True, lrMul=1.0, initBiasToZero=True):
            super(ConstrainedLayer, self).__init__()
            self.module = module
            self.equalized = equalized
            if initBiasToZero:
                self.module.bias.data.fill_(0)
            if self.equalized:
                self.module.weight.data.normal_(0, 1)
                self.module.weight.data /= lrMul
                self.weight = getLayerNormalizationFactor(self.module) * lrMul

        def forward(self, x):
            x = self.module(x)
            if self.equalized:
                x *= self.weight
            return x

    class EqualizedConv2d(ConstrainedLayer):
        def __init__(self, nChannelsPrevious, nChannels, kernelSize, padding=0, bias=True, **kwargs):
            ConstrainedLayer.__init__(self, nn.Conv2d(nChannelsPrevious, nChannels, kernelSize, padding=padding,
                                                      bias=bias), **kwargs)

    class EqualizedLinear(ConstrainedLayer):
        def __init__(self, nChannelsPrevious, nChannels, bias=True, **kwargs):
            ConstrainedLayer.__init__(self, nn.Linear(nChannelsPrevious, nChannels, bias=bias), **kwargs)

    class NormalizationLayer(nn.Module):
        def forward(self, x, epsilon=1e-8):
            return x * (((x**2).mean(dim=1, keepdim=True) + epsilon).rsqrt())

    def Upscale2d(x, factor=2):
        assert isinstance(factor, int) and factor >= 1
        if factor == 1:
            return x
        s = x.size()
        x = x.view(-1, s[1], s[2], 1, s[3], 1)
        x = x.expand(-1, s[1], s[2], factor, s[3], factor)
        x = x.contiguous().view(-1, s[1], s[2] * factor, s[3] * factor)
        return x

    def miniBatchStdDev(x, subGroupSize=4):
        size = x.size()
        subGroupSize = min(size[0], subGroupSize)
        if size[0] % subGroupSize != 0:
            subGroupSize = size[0]
        G = int(size[0] / subGroupSize)
        if subGroupSize > 1:
            y = x.view(-1, subGroupSize, size[1], size[2], size[3])
            y = torch.var(y, 1)
            y = torch.sqrt(y + 1e-8)
            y = y.view(G, -1)
            y = torch.mean(y, 1).view(G, 1)
            y = y.expand(G, size[2] * size[3]).view((G, 1, 1, size[2], size[3]))
            y = y.expand(G, subGroupSize, -1, -1, -1)
            y = y.contiguous().view((-1, 1, size[2], size[3]))
        else:
            y = torch.zeros(x.size(0), 1, x.size(2), x.size(3), device=x.device)
        return torch.cat([x, y], dim=1)

    class GNet(nn.Module):
        def __init__(self, dimLatent=6, depth=4):
            super().__init__()
            self.dimLatent = dimLatent
            self.formatLayer = EqualizedLinear(dimLatent, 16 * depth)
            self.scaleLayers = nn.ModuleList()
            self.toRGBLayers = nn.ModuleList([EqualizedConv2d(depth, 3, 1)])
            self.groupScale0 = nn.ModuleList([EqualizedConv2d(depth, depth, 3, padding=1)])
            self.alpha = 0
            self.depth = depth
            self.normalizationLayer = NormalizationLayer()
            self.leakyRelu = torch.nn.LeakyReLU(0.2)

        def addScale(self, depthNewScale):
            self.scaleLayers.append(nn.ModuleList())
            self.scaleLayers[-1].append(EqualizedConv2d(self.depth, depthNewScale, 3, padding=1))
            self.scaleLayers[-1].append(EqualizedConv2d(depthNewScale, depthNewScale, 3, padding=1))
            self.toRGBLayers.append(EqualizedConv2d(depthNewScale, 3, 1))

        def setNewAlpha(self, alpha):
            self.alpha = alpha

        def forward(self, x):
            x = self.normalizationLayer(x)
            x = x.view(-1, num_flat_features(x))
            x = self.leakyRelu(self.formatLayer(x))
            x = x.view(x.size()[0], -1, 4, 4)
            x = self.normalizationLayer(x)
            for convLayer in self.groupScale0:
                x = self.leakyRelu(convLayer(x))
                x = self.normalizationLayer(x)
            if self.alpha > 0 and len(self.scaleLayers) == 1:
                y = self.toRGBLayers[-2](x)
                y = Upscale2d(y)
            for scale, layerGroup in enumerate(self.scaleLayers, 0):
                x = Upscale2d(x)
                for convLayer in layerGroup:
                    x = self.leakyRelu(convLayer(x))
                    x = self.normalizationLayer(x)
                if self.alpha > 0 and scale == (len(self.scaleLayers) - 2):
                    y = self.toRGBLayers[-2](x)
                    y = Upscale2d(y)
            x = self.toRGBLayers[-1](x)
            if self.alpha > 0:
                x = self.alpha * y + (1.0 - self.alpha) * x
            return x

    class DNet(nn.Module):
        def __init__(self, depth=4):
            super().__init__()
            self.scaleLayers = nn.ModuleList()
            self.fromRGBLayers = nn.ModuleList([EqualizedConv2d(3, depth, 1)])
            self.groupScaleZero = nn.ModuleList([EqualizedConv2d(depth + 1, depth, 3, padding=1),
                                                 EqualizedLinear(depth * 16, depth)])
            self.decisionLayer = EqualizedLinear(depth, 1)
            self.leakyRelu = torch.nn.LeakyReLU(0.2)
            self.alpha = 0
            self.depth = depth

        def addScale(self, depthNewScale):
            self.scaleLayers.append(nn.ModuleList())
            self.scaleLayers[-1].append(EqualizedConv2d(depthNewScale, depthNewScale, 3, padding=1))
            self.scaleLayers[-1].append(EqualizedConv2d(depthNewScale, self.depth, 3, padding=1))
            self.fromRGBLayers.append(EqualizedConv2d(3, depthNewScale, 1))

        def setNewAlpha(self, alpha):
            self.alpha = alpha

        def forward(self, x, getFeature=False):
            if self.alpha > 0 and len(self.fromRGBLayers) > 1:
                y = F.avg_pool2d(x, (2, 2))
                y = self.leakyRelu(self.fromRGBLayers[-2](y))
            x = self.leakyRelu(self.fromRGBLayers[-1](x))
            mergeLayer = self.alpha > 0 and len(self.scaleLayers) > 1
            shift = len(self.fromRGBLayers) - 2
            for groupLayer in reversed(self.scaleLayers):
                for layer in groupLayer:
                    x = self.leakyRelu(layer(x))
                x = nn.AvgPool2d((2, 2))(x)
                if mergeLayer:
                    mergeLayer = False
                    x = self.alpha * y + (1 - self.alpha) * x
                shift -= 1
            if self.alpha > 0 and len(self.scaleLayers) == 1:
                x = self.alpha * y + (1 - self.alpha) * x
            x = miniBatchStdDev(x)
            x = self.leakyRelu(self.groupScaleZero[0](x))
            x = x.view(-1, num_flat_features(x))
            x = self.leakyRelu(self.groupScaleZero[1](x))
            out = self.decisionLayer(x)
            if not getFeature:
                return out
            return out, x

    def num_flat_features(x):
        size = x.size()[1:]
        num_features = 1
        for s in size:
            num_features *= s
        return num_features

    def WGANGPGradientPenalty(input, fake, discriminator, weight, backward=True):
        batchSize = input.size(0)
        alpha = torch.from_numpy(rng.random((batchSize, 1), dtype=np.float32))
        alpha = alpha.expand(batchSize, int(input.nelement() / batchSize)).contiguous().view(input.size())
        interpolates = alpha * input + ((1 - alpha) * fake)
        interpolates = torch.autograd.Variable(interpolates, requires_grad=True)
        decisionInterpolate = discriminator(interpolates, False)
        decisionInterpolate = decisionInterpolate[:, 0].sum()
        gradients = torch.autograd.grad(outputs=decisionInterpolate, inputs=interpolates, create_graph=True,
                                        retain_graph=True)
        gradients = gradients[0].view(batchSize, -1)
        gradients = (gradients * gradients).sum(dim=1).sqrt()
        gradient_penalty = (((gradients - 1.0)**2)).sum() * weight
        if backward:
            gradient_penalty.backward(retain_graph=True)
        return gradient_penalty.item()

    netG, netD = GNet(), DNet()
    netG.addScale(4)
    netD.addScale(4)
    init = load(m, nn.ModuleDict({"G": netG, "D": netD}), state)
    # the source's betas=[0, 0.99]: torch 2's Adam refuses mixed int and float betas (ValueError), tnet's too
    optimizerD = torch.optim.Adam(filter(lambda p: p.requires_grad, netD.parameters()), betas=[0.0, 0.99], lr=1e-3)
    optimizerG = torch.optim.Adam(filter(lambda p: p.requires_grad, netG.parameters()), betas=[0.0, 0.99], lr=1e-3)
    losses = []
    for step, alpha in enumerate([0.5, 0.0]):
        netG.setNewAlpha(alpha)
        netD.setNewAlpha(alpha)
        input_real = torch.from_numpy(normal(rng, 4, 3, 8, 8))
        optimizerD.zero_grad()
        predRealD = netD(input_real, False)
        lossD = -predRealD[:, 0].sum()
        inputLatent = torch.from_numpy(normal(rng, 4, netG.dimLatent))
        predFakeG = netG(inputLatent).detach()
        predFakeD = netD(predFakeG, False)
        lossD = lossD + predFakeD[:, 0].sum()
        lossD_Grad = WGANGPGradientPenalty(input_real, predFakeG, netD, 10.0, backward=True)
        lossEpsilon = (predRealD[:, 0] ** 2).sum() * 0.001
        lossD = lossD + lossEpsilon
        lossD.backward(retain_graph=True)
        optimizerD.step()
        optimizerD.zero_grad()
        optimizerG.zero_grad()
        inputNoise = torch.from_numpy(normal(rng, 4, netG.dimLatent))
        predFakeG = netG(inputNoise)
        predFakeD, phiGFake = netD(predFakeG, True)
        lossGFake = -predFakeD[:, 0].sum()
        lossGFake.backward(retain_graph=True)
        optimizerG.step()
        losses += [lossD.item(), lossD_Grad, lossGFake.item(), phiGFake.sum().item()]
    return init, losses + summary(netG.parameters()) + summary(netD.parameters())


def test_progressive_gan():
    compare(progressive_gan)


# (c) hungthanhpham94/GRU4REC-pytorch (modules/model.py's GRU4REC with onehot_buffer, modules/loss.py's TOP1Loss,
# BPRLoss and TOP1_max, modules/trainer.py's session-parallel loop): the one-hot input by scatter_ into a zeroed
# buffer, hidden states of ended sessions zeroed by hidden[:, mask, :] = 0 with a Python list, the in-batch sampled
# logits by logit[:, target.view(-1)], diag.view(-1, 1).expand_as(logit), F.logsigmoid, softmax over the negatives
def gru4rec(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    n_items, hidden_size, batch_size = 9, 6, 4

    class GRU4REC(nn.Module):
        def __init__(self, input_size, hidden_size, output_size, num_layers=1, final_act='tanh', dropout_hidden=0.0,
                     batch_size=50, embedding_dim=-1, use_cuda=False):
            super(GRU4REC, self).__init__()
            self.input_size = input_size
            self.hidden_size = hidden_size
            self.output_size = output_size
            self.num_layers = num_layers
            self.batch_size = batch_size
            self.embedding_dim = embedding_dim
            self.device = torch.device('cuda' if use_cuda else 'cpu')
            self.onehot_buffer = self.init_emb()
            self.h2o = nn.Linear(hidden_size, output_size)
            self.create_final_activation(final_act)
            self.gru = nn.GRU(self.input_size, self.hidden_size, self.num_layers, dropout=dropout_hidden)
            self = self.to(self.device)

        def create_final_activation(self, final_act):
            if final_act == 'tanh':
                self.final_activation = nn.Tanh()
            elif final_act.startswith('elu-'):
                self.final_activation = nn.ELU(alpha=float(final_act.split('-')[1]))

        def forward(self, input, hidden):
            embedded = self.onehot_encode(input)
            embedded = embedded.unsqueeze(0)
            output, hidden = self.gru(embedded, hidden)
            output = output.view(-1, output.size(-1))
            logit = self.final_activation(self.h2o(output))
            return logit, hidden

        def init_emb(self):
            onehot_buffer = torch.FloatTensor(self.batch_size, self.output_size)
            onehot_buffer = onehot_buffer.to(self.device)
            return onehot_buffer

        def onehot_encode(self, input):
            self.onehot_buffer.zero_()
            index = input.view(-1, 1)
            one_hot = self.onehot_buffer.scatter_(1, index, 1)
            return one_hot

        def init_hidden(self):
            return torch.zeros(self.num_layers, self.batch_size, self.hidden_size).to(self.device)

    class BPRLoss(nn.Module):
        def forward(self, logit):
            diff = logit.diag().view(-1, 1).expand_as(logit) - logit
            return -torch.mean(F.logsigmoid(diff))

    class TOP1Loss(nn.Module):
        def forward(self, logit):
            diff = -(logit.diag().view(-1, 1).expand_as(logit) - logit)
            return torch.sigmoid(diff).mean() + torch.sigmoid(logit ** 2).mean()

    class TOP1_max(nn.Module):
        def forward(self, logit):
            logit_softmax = F.softmax(logit, dim=1)
            diff = -(logit.diag().view(-1, 1).expand_as(logit) - logit)
            loss = torch.mean(logit_softmax * (torch.sigmoid(diff) + torch.sigmoid(logit ** 2)))
            return loss

    model = GRU4REC(n_items, hidden_size, n_items, final_act='elu-0.5', batch_size=batch_size)
    init = load(m, model, state)
    optim = torch.optim.Adagrad(model.parameters(), lr=0.05, weight_decay=0)
    losses = []
    hidden = model.init_hidden()
    sessions = [list(rng.integers(0, n_items, n)) for n in (3, 5, 2, 4, 3, 6)]
    iters, nxt = list(range(batch_size)), batch_size
    pos = [0] * batch_size
    for step, loss_function in enumerate([TOP1Loss(), BPRLoss(), TOP1_max(), BPRLoss()]):
        input = torch.LongTensor([sessions[s][p] for s, p in zip(iters, pos)])
        target = torch.LongTensor([sessions[s][p + 1] for s, p in zip(iters, pos)])
        optim.zero_grad()
        hidden = hidden.detach()
        logit, hidden = model(input, hidden)
        logit_sampled = logit[:, target.view(-1)]
        loss = loss_function(logit_sampled)
        loss.backward()
        optim.step()
        losses += [loss.item()]
        mask = []  # sessions that ended start over in the same row with a zeroed hidden state
        for i in range(batch_size):
            pos[i] += 1
            if pos[i] + 1 >= len(sessions[iters[i]]):
                iters[i], pos[i] = nxt % len(sessions), 0
                nxt += 1
                mask.append(i)
        if len(mask) != 0:
            hidden[:, mask, :] = 0
        losses += [hidden.sum().item()]
    model.eval()
    with torch.no_grad():
        logit, _ = model(input, hidden)
        recall = (torch.topk(logit, 3, -1)[1] == target.view(-1, 1).expand(-1, 3)).nonzero()
        mrr = torch.reciprocal((recall[:, -1] + 1).float()).sum() / target.size(0)
    losses += [float(len(recall)), mrr.item()]
    return init, losses + summary(model.parameters())


def test_gru4rec():
    compare(gru4rec)


# (d) shenweichen/DeepCTR-Torch's DIN (deepctr_torch/layers/sequence.py's AttentionSequencePoolingLayer,
# layers/core.py's LocalActivationUnit and DNN, layers/activation.py's Dice, models/basemodel.py's regularisation and
# fit step): the query expanded over the behaviours and concatenated with keys, q - k and q * k; Dice by a
# BatchNorm1d(eps=1e-8) over a transposed 3-D input and a learnt alpha of shape (emb_size, 1); a key mask by
# torch.arange(...).repeat(batch_size, 1) < keys_length.view(-1, 1), torch.where against zeros_like; L2 by torch.norm
# summed into the loss; F.binary_cross_entropy(reduction='sum') on a sigmoid output; Adagrad
def din(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    emb, n_items, n_cates, T = 4, 7, 3, 5

    class Dice(nn.Module):
        def __init__(self, emb_size, dim=2, epsilon=1e-8, device='cpu'):
            super(Dice, self).__init__()
            assert dim == 2 or dim == 3
            self.bn = nn.BatchNorm1d(emb_size, eps=epsilon)
            self.sigmoid = nn.Sigmoid()
            self.dim = dim
            if self.dim == 2:
                self.alpha = nn.Parameter(torch.zeros((emb_size,)).to(device))
            else:
                self.alpha = nn.Parameter(torch.zeros((emb_size, 1)).to(device))

        def forward(self, x):
            assert x.dim() == self.dim
            if self.dim == 2:
                x_p = self.sigmoid(self.bn(x))
                out = self.alpha * (1 - x_p) * x + x_p * x
            else:
                x = torch.transpose(x, 1, 2)
                x_p = self.sigmoid(self.bn(x))
                out = self.alpha * (1 - x_p) * x + x_p * x
                out = torch.transpose(out, 1, 2)
            return out

    class DNN(nn.Module):
        def __init__(self, inputs_dim, hidden_units, activation='relu', dice_dim=3, init_std=0.0001):
            super(DNN, self).__init__()
            hidden_units = [inputs_dim] + list(hidden_units)
            self.linears = nn.ModuleList(
                [nn.Linear(hidden_units[i], hidden_units[i + 1]) for i in range(len(hidden_units) - 1)])
            self.activation_layers = nn.ModuleList(
                [Dice(hidden_units[i + 1], dice_dim) if activation == 'dice' else nn.ReLU(inplace=True)
                 for i in range(len(hidden_units) - 1)])
            for name, tensor in self.linears.named_parameters():
                if 'weight' in name:
                    nn.init.normal_(tensor, mean=0, std=init_std)

        def forward(self, inputs):
            deep_input = inputs
            for i in range(len(self.linears)):
                fc = self.linears[i](deep_input)
                fc = self.activation_layers[i](fc)
                deep_input = fc
            return deep_input

    class LocalActivationUnit(nn.Module):
        def __init__(self, hidden_units=(64, 32), embedding_dim=4, activation='sigmoid'):
            super(LocalActivationUnit, self).__init__()
            self.dnn = DNN(inputs_dim=4 * embedding_dim, hidden_units=hidden_units, activation=activation,
                           init_std=0.5)
            self.dense = nn.Linear(hidden_units[-1], 1)

        def forward(self, query, user_behavior):
            user_behavior_len = user_behavior.size(1)
            queries = query.expand(-1, user_behavior_len, -1)
            attention_input = torch.cat([queries, user_behavior, queries - user_behavior, queries * user_behavior],
                                        dim=-1)
            attention_output = self.dnn(attention_input)
            attention_score = self.dense(attention_output)
            return attention_score

    class AttentionSequencePoolingLayer(nn.Module):
        def __init__(self, att_hidden_units=(80, 40), att_activation='sigmoid', weight_normalization=False,
                     return_score=False, supports_masking=False, embedding_dim=4, **kwargs):
            super(AttentionSequencePoolingLayer, self).__init__()
            self.return_score = return_score
            self.weight_normalization = weight_normalization
            self.supports_masking = supports_masking
            self.local_att = LocalActivationUnit(hidden_units=att_hidden_units, embedding_dim=embedding_dim,
                                                 activation=att_activation)

        def forward(self, query, keys, keys_length, mask=None):
            batch_size, max_length, _ = keys.size()
            keys_masks = torch.arange(max_length, device=keys_length.device,
                                      dtype=keys_length.dtype).repeat(batch_size, 1)
            keys_masks = keys_masks < keys_length.view(-1, 1)
            keys_masks = keys_masks.unsqueeze(1)
            attention_score = self.local_att(query, keys)
            outputs = torch.transpose(attention_score, 1, 2)
            if self.weight_normalization:
                paddings = torch.ones_like(outputs) * (-2 ** 32 + 1)
            else:
                paddings = torch.zeros_like(outputs)
            outputs = torch.where(keys_masks, outputs, paddings)
            if self.weight_normalization:
                outputs = F.softmax(outputs, dim=-1)
            if not self.return_score:
                outputs = torch.matmul(outputs, keys)
            return outputs

    class DIN(nn.Module):
        def __init__(self, weight_normalization):
            super().__init__()
            self.embedding_dict = nn.ModuleDict({"item": nn.Embedding(n_items, emb, padding_idx=0),
                                                 "cate": nn.Embedding(n_cates, emb, padding_idx=0)})
            for tensor in self.embedding_dict.values():
                nn.init.normal_(tensor.weight, mean=0, std=0.01)
            self.attention = AttentionSequencePoolingLayer(att_hidden_units=(6, 5), embedding_dim=2 * emb,
                                                           att_activation='dice',
                                                           weight_normalization=weight_normalization)
            self.dnn = DNN(4 * emb + 1, (8, 6), activation='relu', dice_dim=2, init_std=0.1)
            self.dnn_linear = nn.Linear(6, 1, bias=False)
            self.regularization_weight = []
            self.add_regularization_weight(self.embedding_dict.parameters(), l2=1e-2)
            self.add_regularization_weight(filter(lambda x: 'weight' in x[0] and 'bn' not in x[0],
                                                  self.dnn.named_parameters()), l2=1e-3)

        def add_regularization_weight(self, weight_list, l1=0.0, l2=0.0):
            if isinstance(weight_list, torch.nn.parameter.Parameter):
                weight_list = [weight_list]
            else:
                weight_list = list(weight_list)
            self.regularization_weight.append((weight_list, l1, l2))

        def get_regularization_loss(self):
            total_reg_loss = torch.zeros((1,))
            for weight_list, l1, l2 in self.regularization_weight:
                for w in weight_list:
                    if isinstance(w, tuple):
                        parameter = w[1]
                    else:
                        parameter = w
                    if l1 > 0:
                        total_reg_loss += torch.sum(l1 * torch.abs(parameter))
                    if l2 > 0:
                        try:
                            total_reg_loss += torch.sum(l2 * torch.square(parameter))
                        except AttributeError:
                            total_reg_loss += torch.sum(l2 * parameter * parameter)
            return total_reg_loss

        def forward(self, X):
            query_emb = torch.cat([self.embedding_dict["item"](X[:, 0:1].long()),
                                   self.embedding_dict["cate"](X[:, 1:2].long())], dim=-1)
            keys_emb = torch.cat([self.embedding_dict["item"](X[:, 2:2 + T].long()),
                                  self.embedding_dict["cate"](X[:, 2 + T:2 + 2 * T].long())], dim=-1)
            keys_length = torch.squeeze(X[:, -1:], 1).long()
            hist = self.attention(query_emb, keys_emb, keys_length)
            deep_input_emb = torch.cat((query_emb, hist), dim=-1)
            deep_input_emb = deep_input_emb.view(deep_input_emb.size(0), -1)
            dnn_input = torch.cat([deep_input_emb, X[:, -2:-1]], dim=-1)
            dnn_output = self.dnn(dnn_input)
            y_pred = torch.sigmoid(self.dnn_linear(dnn_output))
            return y_pred

    losses = []
    models = [DIN(False), DIN(True)]
    init = load(m, nn.ModuleList(models), state)
    for model in models:
        optim = torch.optim.Adagrad(model.parameters(), lr=0.05)
        loss_func = F.binary_cross_entropy
        for step in range(2):
            lengths = rng.integers(1, T + 1, 4)
            hist_item = rng.integers(1, n_items, (4, T)) * (np.arange(T) < lengths[:, None])
            hist_cate = rng.integers(1, n_cates, (4, T)) * (np.arange(T) < lengths[:, None])
            X = np.concatenate([rng.integers(1, n_items, (4, 1)), rng.integers(1, n_cates, (4, 1)), hist_item,
                                hist_cate, rng.random((4, 1)), lengths[:, None]], 1).astype(np.float32)
            x = torch.from_numpy(X).float()
            y = torch.from_numpy(rng.integers(0, 2, (4, 1)).astype(np.float32))
            y_pred = model(x).squeeze()
            optim.zero_grad()
            loss = loss_func(y_pred, y.squeeze(), reduction='sum')
            reg_loss = model.get_regularization_loss()
            total_loss = loss + reg_loss
            total_loss.backward()
            optim.step()
            losses += [loss.item(), reg_loss.item(), total_loss.item()]
        losses += summary(model.parameters()) + summary(model.buffers())
    return init, losses


def test_din():
    compare(din)


# (e) galsang/BiDAF-pytorch (model/model.py's BiDAF with char_emb_layer, highway_network, att_flow_layer and
# output_layer; model/ema.py's EMA; run.py's train step and its span search): characters by Conv2d(1, C, (dim,
# width)) and F.max_pool1d(x, x.size(2)), highway layers reached by getattr(self, 'highway_linear{}'.format(i)),
# LSTMs over pack_padded_sequence of sorted lengths and unsorted back by index_select, the similarity matrix by a
# Python loop over q.select(1, i) and torch.stack(dim=-1), q2c by torch.max(s, dim=2)[0], the best span under a
# tril(-1) mask of -inf and torch.gather, shadow weights by (1 - mu) * x + mu * shadow and .clone(), Adadelta
def bidaf(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(5)
    char_vocab, char_dim, char_channel_width, char_channel_size = 8, 3, 2, 4
    word_vocab, word_dim, hidden_size = 12, 4, 4

    class Linear(nn.Module):
        def __init__(self, in_features, out_features, dropout=0.0):
            super(Linear, self).__init__()
            self.linear = nn.Linear(in_features=in_features, out_features=out_features)
            if dropout > 0:
                self.dropout = nn.Dropout(p=dropout)
            self.reset_params()

        def reset_params(self):
            nn.init.kaiming_normal_(self.linear.weight)
            nn.init.constant_(self.linear.bias, 0)

        def forward(self, x):
            if hasattr(self, 'dropout'):
                x = self.dropout(x)
            x = self.linear(x)
            return x

    class LSTM(nn.Module):
        def __init__(self, input_size, hidden_size, batch_first=False, num_layers=1, bidirectional=False, dropout=0.2):
            super(LSTM, self).__init__()
            self.rnn = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers,
                               bidirectional=bidirectional, batch_first=batch_first)
            self.reset_params()
            self.dropout = nn.Dropout(p=dropout)

        def reset_params(self):  # under no_grad: torch 2 refuses the source's fill_ of a chunk of a leaf
            for i in range(self.rnn.num_layers):
                nn.init.orthogonal_(getattr(self.rnn, f'weight_hh_l{i}'))
                nn.init.kaiming_normal_(getattr(self.rnn, f'weight_ih_l{i}'))
                nn.init.constant_(getattr(self.rnn, f'bias_hh_l{i}'), val=0)
                nn.init.constant_(getattr(self.rnn, f'bias_ih_l{i}'), val=0)
                with torch.no_grad():
                    getattr(self.rnn, f'bias_hh_l{i}').chunk(4)[1].fill_(1)
                if self.rnn.bidirectional:
                    nn.init.orthogonal_(getattr(self.rnn, f'weight_hh_l{i}_reverse'))
                    nn.init.kaiming_normal_(getattr(self.rnn, f'weight_ih_l{i}_reverse'))
                    nn.init.constant_(getattr(self.rnn, f'bias_hh_l{i}_reverse'), val=0)
                    nn.init.constant_(getattr(self.rnn, f'bias_ih_l{i}_reverse'), val=0)
                    with torch.no_grad():
                        getattr(self.rnn, f'bias_hh_l{i}_reverse').chunk(4)[1].fill_(1)

        def forward(self, x):
            x, x_len = x
            x = self.dropout(x)
            x_len_sorted, x_idx = torch.sort(x_len, descending=True)
            x_sorted = x.index_select(dim=0, index=x_idx)
            _, x_ori_idx = torch.sort(x_idx)
            x_packed = nn.utils.rnn.pack_padded_sequence(x_sorted, x_len_sorted, batch_first=True)
            x_packed, (h, c) = self.rnn(x_packed)
            x = nn.utils.rnn.pad_packed_sequence(x_packed, batch_first=True)[0]
            x = x.index_select(dim=0, index=x_ori_idx)
            h = h.permute(1, 0, 2).contiguous().view(-1, h.size(0) * h.size(2)).squeeze()
            h = h.index_select(dim=0, index=x_ori_idx)
            return x, h

    class BiDAF(nn.Module):
        def __init__(self):
            super(BiDAF, self).__init__()
            self.char_emb = nn.Embedding(char_vocab, char_dim, padding_idx=1)
            nn.init.uniform_(self.char_emb.weight, -0.001, 0.001)
            self.char_conv = nn.Sequential(nn.Conv2d(1, char_channel_size, (char_dim, char_channel_width)), nn.ReLU())
            self.word_emb = nn.Embedding.from_pretrained(torch.from_numpy(normal(rng, word_vocab, word_dim)),
                                                         freeze=True)
            assert hidden_size * 2 == (char_channel_size + word_dim)
            for i in range(2):
                setattr(self, 'highway_linear{}'.format(i),
                        nn.Sequential(Linear(hidden_size * 2, hidden_size * 2), nn.ReLU()))
                setattr(self, 'highway_gate{}'.format(i),
                        nn.Sequential(Linear(hidden_size * 2, hidden_size * 2), nn.Sigmoid()))
            self.context_LSTM = LSTM(hidden_size * 2, hidden_size, batch_first=True, bidirectional=True, dropout=0.0)
            self.att_weight_c = Linear(hidden_size * 2, 1)
            self.att_weight_q = Linear(hidden_size * 2, 1)
            self.att_weight_cq = Linear(hidden_size * 2, 1)
            self.modeling_LSTM1 = LSTM(hidden_size * 8, hidden_size, batch_first=True, bidirectional=True,
                                       dropout=0.0)
            self.p1_weight_g = Linear(hidden_size * 8, 1)
            self.p1_weight_m = Linear(hidden_size * 2, 1)
            self.p2_weight_g = Linear(hidden_size * 8, 1)
            self.p2_weight_m = Linear(hidden_size * 2, 1)
            self.output_LSTM = LSTM(hidden_size * 2, hidden_size, batch_first=True, bidirectional=True, dropout=0.0)

        def forward(self, c_char, c_word, c_lens, q_char, q_word, q_lens):
            def char_emb_layer(x):
                batch_size = x.size(0)
                x = self.char_emb(x)
                x = x.view(-1, char_dim, x.size(3)).unsqueeze(1)
                x = self.char_conv(x).squeeze()
                x = F.max_pool1d(x, x.size(2)).squeeze()
                x = x.view(batch_size, -1, char_channel_size)
                return x

            def highway_network(x1, x2):
                x = torch.cat([x1, x2], dim=-1)
                for i in range(2):
                    h = getattr(self, 'highway_linear{}'.format(i))(x)
                    g = getattr(self, 'highway_gate{}'.format(i))(x)
                    x = g * h + (1 - g) * x
                return x

            def att_flow_layer(c, q):
                c_len = c.size(1)
                q_len = q.size(1)
                cq = []
                for i in range(q_len):
                    qi = q.select(1, i).unsqueeze(1)
                    ci = self.att_weight_cq(c * qi).squeeze()
                    cq.append(ci)
                cq = torch.stack(cq, dim=-1)
                s = self.att_weight_c(c).expand(-1, -1, q_len) + \
                    self.att_weight_q(q).permute(0, 2, 1).expand(-1, c_len, -1) + cq
                a = F.softmax(s, dim=2)
                c2q_att = torch.bmm(a, q)
                b = F.softmax(torch.max(s, dim=2)[0], dim=1).unsqueeze(1)
                q2c_att = torch.bmm(b, c).squeeze()
                q2c_att = q2c_att.unsqueeze(1).expand(-1, c_len, -1)
                x = torch.cat([c, c2q_att, c * c2q_att, c * q2c_att], dim=-1)
                return x

            def output_layer(g, m, l):
                p1 = (self.p1_weight_g(g) + self.p1_weight_m(m)).squeeze()
                m2 = self.output_LSTM((m, l))[0]
                p2 = (self.p2_weight_g(g) + self.p2_weight_m(m2)).squeeze()
                return p1, p2

            c_char = char_emb_layer(c_char)
            q_char = char_emb_layer(q_char)
            c_word = self.word_emb(c_word)
            q_word = self.word_emb(q_word)
            c = highway_network(c_char, c_word)
            q = highway_network(q_char, q_word)
            c = self.context_LSTM((c, c_lens))[0]
            q = self.context_LSTM((q, q_lens))[0]
            g = att_flow_layer(c, q)
            m = self.modeling_LSTM1((g, c_lens))[0]
            p1, p2 = output_layer(g, m, c_lens)
            return p1, p2

    class EMA():
        def __init__(self, mu):
            self.mu = mu
            self.shadow = {}

        def register(self, name, val):
            self.shadow[name] = val.clone()

        def get(self, name):
            return self.shadow[name]

        def update(self, name, x):
            assert name in self.shadow
            new_average = (1.0 - self.mu) * x + self.mu * self.shadow[name]
            self.shadow[name] = new_average.clone()

    model = BiDAF()
    init = load(m, model, state)
    ema = EMA(0.999)
    for name, param in model.named_parameters():
        if param.requires_grad:
            ema.register(name, param.data)
    parameters = filter(lambda p: p.requires_grad, model.parameters())
    optimizer = torch.optim.Adadelta(parameters, lr=0.5)
    criterion = nn.CrossEntropyLoss()
    B, Tc, Tq, W = 2, 3, 2, 3
    losses = []
    for step in range(1):
        c_lens, q_lens = np.array([3, 2]), np.array([1, 2])
        c_word = rng.integers(2, word_vocab, (B, Tc)) * (np.arange(Tc) < c_lens[:, None])
        q_word = rng.integers(2, word_vocab, (B, Tq)) * (np.arange(Tq) < q_lens[:, None])
        c_char = torch.from_numpy(rng.integers(1, char_vocab, (B, Tc, W)))
        q_char = torch.from_numpy(rng.integers(1, char_vocab, (B, Tq, W)))
        s_idx = rng.integers(0, 2, B)
        e_idx = s_idx + rng.integers(0, 2, B)
        p1, p2 = model(c_char, torch.from_numpy(c_word), torch.from_numpy(c_lens), q_char, torch.from_numpy(q_word),
                       torch.from_numpy(q_lens))
        optimizer.zero_grad()
        batch_loss = criterion(p1, torch.from_numpy(s_idx)) + criterion(p2, torch.from_numpy(e_idx))
        loss = batch_loss.item()
        batch_loss.backward()
        optimizer.step()
        for name, param in model.named_parameters():
            if param.requires_grad:
                ema.update(name, param.data)
        losses += [loss]
    backup_params = EMA(0)
    for name, param in model.named_parameters():
        if param.requires_grad:
            backup_params.register(name, param.data)
            param.data.copy_(ema.get(name))
    with torch.set_grad_enabled(False):
        p1, p2 = model(c_char, torch.from_numpy(c_word), torch.from_numpy(c_lens), q_char, torch.from_numpy(q_word),
                       torch.from_numpy(q_lens))
        batch_size, c_len = p1.size()
        ls = nn.LogSoftmax(dim=1)
        mask = (torch.ones(c_len, c_len) * float('-inf')).tril(-1).unsqueeze(0).expand(batch_size, -1, -1)
        score = (ls(p1).unsqueeze(2) + ls(p2).unsqueeze(1)) + mask
        score, s_idx = score.max(dim=1)
        score, e_idx = score.max(dim=1)
        s_idx = torch.gather(s_idx, 1, e_idx.view(-1, 1)).squeeze()
    losses += [score.sum().item(), float(s_idx.sum()), float(e_idx.sum())]
    for name, param in model.named_parameters():
        if param.requires_grad:
            param.data.copy_(backup_params.get(name))
    return init, losses + summary(model.parameters()) + summary(ema.shadow.values())


def test_bidaf():
    compare(bidaf)


# (f) DaehanKim/vgae_pytorch (model.py's VGAE and GraphConvSparse with glorot_init, train.py's weighted loss and
# get_scores/get_acc; preprocessing's normalised sparse adjacency): torch.sparse.FloatTensor(indices, values, size)
# built from scipy-style numpy COO, weight_tensor[weight_mask] = pos_weight through a bool mask of to_dense().view(-1),
# norm * F.binary_cross_entropy(weight=), the KL of a log std, glorot weights by torch.rand * 2r - r, the inner
# product decoder, accuracy by (A_pred > 0.5).view(-1).long() == labels
def vgae(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(6)
    n, input_dim, hidden1_dim, hidden2_dim = 7, 5, 4, 3

    def glorot_init(input_dim, output_dim):
        init_range = np.sqrt(6.0 / (input_dim + output_dim))
        initial = torch.from_numpy(rng.random((input_dim, output_dim), dtype=np.float32)) * 2 * init_range - init_range
        return nn.Parameter(initial)

    class GraphConvSparse(nn.Module):
        def __init__(self, input_dim, output_dim, adj, activation=torch.relu, **kwargs):
            super(GraphConvSparse, self).__init__(**kwargs)
            self.weight = glorot_init(input_dim, output_dim)
            self.adj = adj
            self.activation = activation

        def forward(self, inputs):
            x = inputs
            x = torch.mm(x, self.weight)
            x = torch.mm(self.adj, x)
            outputs = self.activation(x)
            return outputs

    def dot_product_decode(Z):
        A_pred = torch.sigmoid(torch.matmul(Z, Z.t()))
        return A_pred

    class VGAE(nn.Module):
        def __init__(self, adj):
            super(VGAE, self).__init__()
            self.base_gcn = GraphConvSparse(input_dim, hidden1_dim, adj)
            self.gcn_mean = GraphConvSparse(hidden1_dim, hidden2_dim, adj, activation=lambda x: x)
            self.gcn_logstddev = GraphConvSparse(hidden1_dim, hidden2_dim, adj, activation=lambda x: x)

        def encode(self, X, noise):
            hidden = self.base_gcn(X)
            self.mean = self.gcn_mean(hidden)
            self.logstd = self.gcn_logstddev(hidden)
            gaussian_noise = noise
            sampled_z = gaussian_noise * torch.exp(self.logstd) + self.mean
            return sampled_z

        def forward(self, X, noise):
            Z = self.encode(X, noise)
            A_pred = dot_product_decode(Z)
            return A_pred

    upper = np.triu(rng.random((n, n)) < 0.35, 1)
    adj = (upper | upper.T).astype(np.float64)  # scipy's float64 (torch refuses to assign a numpy.float32)
    adj_label = adj + np.eye(n)
    deg = adj_label.sum(1)
    adj_norm = adj_label / np.sqrt(deg)[:, None] / np.sqrt(deg)[None, :]

    def sparse_to_tuple(a):
        r, c = np.nonzero(a)
        return np.vstack((r, c)), a[r, c], a.shape

    adj_norm = sparse_to_tuple(adj_norm)
    adj_label = sparse_to_tuple(adj_label)
    adj_norm = torch.sparse.FloatTensor(torch.LongTensor(adj_norm[0]), torch.FloatTensor(adj_norm[1]),
                                        torch.Size(adj_norm[2]))
    adj_label = torch.sparse.FloatTensor(torch.LongTensor(adj_label[0]), torch.FloatTensor(adj_label[1]),
                                         torch.Size(adj_label[2]))
    features = torch.from_numpy(normal(rng, n, input_dim))
    pos_weight = float(adj.shape[0] * adj.shape[0] - adj.sum()) / adj.sum()
    norm = adj.shape[0] * adj.shape[0] / float((adj.shape[0] * adj.shape[0] - adj.sum()) * 2)
    weight_mask = adj_label.to_dense().view(-1) == 1
    weight_tensor = torch.ones(weight_mask.size(0))
    weight_tensor[weight_mask] = pos_weight

    def get_acc(adj_rec, adj_label):
        labels_all = adj_label.to_dense().view(-1).long()
        preds_all = (adj_rec > 0.5).view(-1).long()
        accuracy = (preds_all == labels_all).sum().float() / labels_all.size(0)
        return accuracy

    model = VGAE(adj_norm)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(3):
        A_pred = model(features, torch.from_numpy(normal(rng, n, hidden2_dim)))
        optimizer.zero_grad()
        loss = log_lik = norm * F.binary_cross_entropy(A_pred.view(-1), adj_label.to_dense().view(-1),
                                                      weight=weight_tensor)
        kl_divergence = 0.5 / A_pred.size(0) * (1 + 2 * model.logstd - model.mean**2
                                                - torch.exp(model.logstd)**2).sum(1).mean()
        loss -= kl_divergence
        loss.backward()
        optimizer.step()
        train_acc = get_acc(A_pred, adj_label)
        losses += [loss.item(), log_lik.item(), train_acc.item()]
    return init, losses + summary(model.parameters())


def test_vgae():
    compare(vgae)


# (g) RexYing/diffpool (encoders.py's GraphConv, GcnEncoderGraph.apply_bn/construct_mask and SoftPoolingGcnEncoder
# with its link-prediction loss; train.py's step with the deprecated nn.utils.clip_grad_norm): a BatchNorm1d made
# anew inside forward for each call, embedding masks built as a float tensor from a Python list of ones and unsqueezed,
# assignments by nn.Softmax(dim=-1)(...) called inline, pooled adjacency by transpose(S, 1, 2) @ adj @ S, adjacency
# powers summed and capped by torch.min(pred_adj, torch.ones(1)), the link loss's -adj * log - (1 - adj) * log(1 - .)
def diffpool(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    max_nodes, input_dim, hidden_dim, embedding_dim, label_dim = 6, 3, 4, 4, 2

    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, add_self=False, normalize_embedding=False, dropout=0.0, bias=True):
            super(GraphConv, self).__init__()
            self.add_self = add_self
            self.dropout = dropout
            if dropout > 0.001:
                self.dropout_layer = nn.Dropout(p=dropout)
            self.normalize_embedding = normalize_embedding
            self.input_dim = input_dim
            self.output_dim = output_dim
            self.weight = nn.Parameter(torch.FloatTensor(input_dim, output_dim))
            if bias:
                self.bias = nn.Parameter(torch.FloatTensor(output_dim))
            else:
                self.bias = None

        def forward(self, x, adj):
            if self.dropout > 0.001:
                x = self.dropout_layer(x)
            y = torch.matmul(adj, x)
            if self.add_self:
                y += x
            y = torch.matmul(y, self.weight)
            if self.bias is not None:
                y = y + self.bias
            if self.normalize_embedding:
                y = F.normalize(y, p=2, dim=2)
            return y

    class GcnEncoderGraph(nn.Module):
        def __init__(self, input_dim, hidden_dim, embedding_dim, label_dim, num_layers, pred_hidden_dims=[],
                     concat=True, bn=True, dropout=0.0, args=None):
            super(GcnEncoderGraph, self).__init__()
            self.concat = concat
            add_self = not concat
            self.bn = bn
            self.num_layers = num_layers
            self.num_aggs = 1
            self.bias = True
            self.act = nn.ReLU()
            self.conv_first, self.conv_block, self.conv_last = self.build_conv_layers(
                input_dim, hidden_dim, embedding_dim, num_layers, add_self, normalize=True, dropout=dropout)
            self.label_dim = label_dim
            if concat:
                self.pred_input_dim = hidden_dim * (num_layers - 1) + embedding_dim
            else:
                self.pred_input_dim = embedding_dim
            self.pred_model = self.build_pred_layers(self.pred_input_dim, pred_hidden_dims, label_dim,
                                                     num_aggs=self.num_aggs)
            for m_ in self.modules():
                if isinstance(m_, GraphConv):
                    m_.weight.data = nn.init.xavier_uniform_(m_.weight.data, gain=nn.init.calculate_gain('relu'))
                    if m_.bias is not None:
                        m_.bias.data = nn.init.constant_(m_.bias.data, 0.0)

        def build_conv_layers(self, input_dim, hidden_dim, embedding_dim, num_layers, add_self, normalize=False,
                              dropout=0.0):
            conv_first = GraphConv(input_dim=input_dim, output_dim=hidden_dim, add_self=add_self,
                                   normalize_embedding=normalize, bias=self.bias)
            conv_block = nn.ModuleList([GraphConv(input_dim=hidden_dim, output_dim=hidden_dim, add_self=add_self,
                                                  normalize_embedding=normalize, dropout=dropout, bias=self.bias)
                                        for i in range(num_layers - 2)])
            conv_last = GraphConv(input_dim=hidden_dim, output_dim=embedding_dim, add_self=add_self,
                                  normalize_embedding=normalize, bias=self.bias)
            return conv_first, conv_block, conv_last

        def build_pred_layers(self, pred_input_dim, pred_hidden_dims, label_dim, num_aggs=1):
            pred_input_dim = pred_input_dim * num_aggs
            if len(pred_hidden_dims) == 0:
                pred_model = nn.Linear(pred_input_dim, label_dim)
            else:
                pred_layers = []
                for pred_dim in pred_hidden_dims:
                    pred_layers.append(nn.Linear(pred_input_dim, pred_dim))
                    pred_layers.append(self.act)
                    pred_input_dim = pred_dim
                pred_layers.append(nn.Linear(pred_dim, label_dim))
                pred_model = nn.Sequential(*pred_layers)
            return pred_model

        def construct_mask(self, max_nodes, batch_num_nodes):
            packed_masks = [torch.ones(int(num)) for num in batch_num_nodes]
            batch_size = len(batch_num_nodes)
            out_tensor = torch.zeros(batch_size, max_nodes)
            for i, mask in enumerate(packed_masks):
                out_tensor[i, :batch_num_nodes[i]] = mask
            return out_tensor.unsqueeze(2)

        def apply_bn(self, x):
            bn_module = nn.BatchNorm1d(x.size()[1])
            return bn_module(x)

        def gcn_forward(self, x, adj, conv_first, conv_block, conv_last, embedding_mask=None):
            x = conv_first(x, adj)
            x = self.act(x)
            if self.bn:
                x = self.apply_bn(x)
            x_all = [x]
            for i in range(len(conv_block)):
                x = conv_block[i](x, adj)
                x = self.act(x)
                if self.bn:
                    x = self.apply_bn(x)
                x_all.append(x)
            x = conv_last(x, adj)
            x_all.append(x)
            x_tensor = torch.cat(x_all, dim=2)
            if embedding_mask is not None:
                x_tensor = x_tensor * embedding_mask
            return x_tensor

        def loss(self, pred, label, type='softmax'):
            return F.cross_entropy(pred, label, reduction='mean')

    class SoftPoolingGcnEncoder(GcnEncoderGraph):
        def __init__(self, max_num_nodes, input_dim, hidden_dim, embedding_dim, label_dim, num_layers,
                     assign_hidden_dim, assign_ratio=0.25, assign_num_layers=-1, num_pooling=1, pred_hidden_dims=[6],
                     concat=True, bn=True, dropout=0.0, linkpred=True, assign_input_dim=-1, args=None):
            super(SoftPoolingGcnEncoder, self).__init__(input_dim, hidden_dim, embedding_dim, label_dim, num_layers,
                                                        pred_hidden_dims=pred_hidden_dims, concat=concat, args=args)
            add_self = not concat
            self.num_pooling = num_pooling
            self.linkpred = linkpred
            self.assign_ent = True
            self.conv_first_after_pool, self.conv_block_after_pool, self.conv_last_after_pool = \
                self.build_conv_layers(self.pred_input_dim, hidden_dim, embedding_dim, num_layers, add_self,
                                       normalize=True, dropout=dropout)
            assign_dims = []
            if assign_num_layers == -1:
                assign_num_layers = num_layers
            if assign_input_dim == -1:
                assign_input_dim = input_dim
            assign_dim = int(max_num_nodes * assign_ratio)
            self.assign_conv_first, self.assign_conv_block, self.assign_conv_last = self.build_conv_layers(
                assign_input_dim, assign_hidden_dim, assign_dim, assign_num_layers, add_self, normalize=True)
            assign_pred_input_dim = assign_hidden_dim * (num_layers - 1) + assign_dim if concat else assign_dim
            self.assign_pred = self.build_pred_layers(assign_pred_input_dim, [], assign_dim, num_aggs=1)
            assign_dims.append(assign_dim)
            self.pred_model = self.build_pred_layers(self.pred_input_dim * (num_pooling + 1), pred_hidden_dims,
                                                     label_dim, num_aggs=self.num_aggs)
            for m_ in self.modules():
                if isinstance(m_, GraphConv):
                    m_.weight.data = nn.init.xavier_uniform_(m_.weight.data, gain=nn.init.calculate_gain('relu'))
                    if m_.bias is not None:
                        m_.bias.data = nn.init.constant_(m_.bias.data, 0.0)

        def forward(self, x, adj, batch_num_nodes, **kwargs):
            x_a = x
            if batch_num_nodes is not None:
                embedding_mask = self.construct_mask(max_nodes, batch_num_nodes)
            else:
                embedding_mask = None
            out_all = []
            embedding_tensor = self.gcn_forward(x, adj, self.conv_first, self.conv_block, self.conv_last,
                                                embedding_mask)
            out, _ = torch.max(embedding_tensor, dim=1)
            out_all.append(out)
            for i in range(self.num_pooling):
                if batch_num_nodes is not None and i == 0:
                    embedding_mask = self.construct_mask(max_nodes, batch_num_nodes)
                else:
                    embedding_mask = None
                self.assign_tensor = self.gcn_forward(x_a, adj, self.assign_conv_first, self.assign_conv_block,
                                                      self.assign_conv_last, embedding_mask)
                self.assign_tensor = nn.Softmax(dim=-1)(self.assign_pred(self.assign_tensor))
                if embedding_mask is not None:
                    self.assign_tensor = self.assign_tensor * embedding_mask
                x = torch.matmul(torch.transpose(self.assign_tensor, 1, 2), embedding_tensor)
                adj = torch.transpose(self.assign_tensor, 1, 2) @ adj @ self.assign_tensor
                x_a = x
                embedding_tensor = self.gcn_forward(x, adj, self.conv_first_after_pool, self.conv_block_after_pool,
                                                    self.conv_last_after_pool)
                out, _ = torch.max(embedding_tensor, dim=1)
                out_all.append(out)
            output = torch.cat(out_all, dim=1)
            ypred = self.pred_model(output)
            return ypred

        def loss(self, pred, label, adj=None, batch_num_nodes=None, adj_hop=1):
            eps = 1e-7
            loss = super(SoftPoolingGcnEncoder, self).loss(pred, label)
            if self.linkpred:
                max_num_nodes = adj.size()[1]
                pred_adj0 = self.assign_tensor @ torch.transpose(self.assign_tensor, 1, 2)
                tmp = pred_adj0
                pred_adj = pred_adj0
                for adj_pow in range(adj_hop - 1):
                    tmp = tmp @ pred_adj0
                    pred_adj = pred_adj + tmp
                pred_adj = torch.min(pred_adj, torch.ones(1, dtype=pred_adj.dtype))
                self.link_loss = -adj * torch.log(pred_adj + eps) - (1 - adj) * torch.log(1 - pred_adj + eps)
                if batch_num_nodes is None:
                    num_entries = max_num_nodes * max_num_nodes * adj.size()[0]
                else:
                    num_entries = np.sum(batch_num_nodes * batch_num_nodes)
                    embedding_mask = self.construct_mask(max_num_nodes, batch_num_nodes)
                    adj_mask = embedding_mask @ torch.transpose(embedding_mask, 1, 2)
                    self.link_loss[(1 - adj_mask).bool()] = 0.0
                self.link_loss = torch.sum(self.link_loss) / float(num_entries)
                return loss + self.link_loss
            return loss

    model = SoftPoolingGcnEncoder(max_nodes, input_dim, hidden_dim, embedding_dim, label_dim, 3, hidden_dim,
                                  assign_ratio=0.5)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=0.001)
    losses = []
    for step in range(2):
        batch_num_nodes = np.array([6, 4, 5])
        adj = np.zeros((3, max_nodes, max_nodes), np.float32)
        for b, k in enumerate(batch_num_nodes):
            u = np.triu(rng.random((k, k)) < 0.5, 1)
            adj[b, :k, :k] = u | u.T
        h0 = torch.from_numpy(normal(rng, 3, max_nodes, input_dim) * (np.arange(max_nodes) < batch_num_nodes[:, None])[
            ..., None].astype(np.float32)).requires_grad_(False)
        label = torch.from_numpy(rng.integers(0, label_dim, 3)).long()
        adj = torch.autograd.Variable(torch.Tensor(adj), requires_grad=False)
        model.zero_grad()
        ypred = model(h0, adj, batch_num_nodes, assign_x=h0)
        loss = model.loss(ypred, label, adj, batch_num_nodes)
        loss.backward()
        nn.utils.clip_grad_norm(model.parameters(), 2.0)
        optimizer.step()
        losses += [loss.item(), model.link_loss.item()]
    # at the second step the last pooled layer's bias has a gradient of rounding noise (1e-8, in torch too), which
    # Adam turns into steps of lr: its sum is left out
    return init, losses + summary(p for n, p in model.named_parameters() if n != "conv_last_after_pool.bias")


def test_diffpool():
    compare(diffpool)


# (h) shenweichen/DeepCTR-Torch's xDeepFM (layers/interaction.py's CIN and FM, models/basemodel.py's Linear and
# input_from_feature_columns, models/xdeepfm.py): embeddings in an nn.ModuleDict sliced out of one float input by
# X[:, start:end].long(), the CIN's torch.einsum('bhd,bmd->bhmd', ...) reshaped into a Conv1d's channels, split in
# halves by torch.split(curr_out, 2 * [size // 2], 1), FM's square_of_sum - sum_of_square, a dense feature's
# torch.cat(..., dim=-1).matmul(self.weight), regularisation collected by filter over named_parameters
def xdeepfm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(8)
    vocab = {"user": 5, "item": 6, "cate": 3}
    emb_dim, n_dense = 4, 2

    class CIN(nn.Module):
        def __init__(self, field_size, layer_size=(6, 4), activation='relu', split_half=True, l2_reg=1e-5, seed=1024,
                     device='cpu'):
            super(CIN, self).__init__()
            if len(layer_size) == 0:
                raise ValueError("layer_size must be a list(tuple) of length greater than 1")
            self.layer_size = layer_size
            self.field_nums = [field_size]
            self.split_half = split_half
            self.activation = nn.ReLU() if activation == 'relu' else nn.Identity()
            self.l2_reg = l2_reg
            self.seed = seed
            self.conv1ds = nn.ModuleList()
            for i, size in enumerate(self.layer_size):
                self.conv1ds.append(nn.Conv1d(self.field_nums[-1] * self.field_nums[0], size, 1))
                if self.split_half:
                    if i != len(self.layer_size) - 1 and size % 2 > 0:
                        raise ValueError("layer_size must be even number except for the last layer when "
                                         "split_half=True")
                    self.field_nums.append(size // 2)
                else:
                    self.field_nums.append(size)

        def forward(self, inputs):
            if len(inputs.shape) != 3:
                raise ValueError("Unexpected inputs dimensions %d, expect to be 3 dimensions" % (len(inputs.shape)))
            batch_size = inputs.shape[0]
            dim = inputs.shape[-1]
            hidden_nn_layers = [inputs]
            final_result = []
            for i, size in enumerate(self.layer_size):
                x = torch.einsum('bhd,bmd->bhmd', hidden_nn_layers[-1], hidden_nn_layers[0])
                x = x.reshape(batch_size, hidden_nn_layers[-1].shape[1] * hidden_nn_layers[0].shape[1], dim)
                x = self.conv1ds[i](x)
                if self.activation is None or self.activation == 'linear':
                    curr_out = x
                else:
                    curr_out = self.activation(x)
                if self.split_half:
                    if i != len(self.layer_size) - 1:
                        next_hidden, direct_connect = torch.split(curr_out, 2 * [size // 2], 1)
                    else:
                        direct_connect = curr_out
                        next_hidden = 0
                else:
                    direct_connect = curr_out
                    next_hidden = curr_out
                final_result.append(direct_connect)
                hidden_nn_layers.append(next_hidden)
            result = torch.cat(final_result, dim=1)
            result = torch.sum(result, -1)
            return result

    class FM(nn.Module):
        def forward(self, inputs):
            fm_input = inputs
            square_of_sum = torch.pow(torch.sum(fm_input, dim=1, keepdim=True), 2)
            sum_of_square = torch.sum(fm_input * fm_input, dim=1, keepdim=True)
            cross_term = square_of_sum - sum_of_square
            cross_term = 0.5 * torch.sum(cross_term, dim=2, keepdim=False)
            return cross_term

    class xDeepFM(nn.Module):
        def __init__(self, dnn_hidden_units=(8, 8), cin_layer_size=(6, 4), init_std=0.0001, l2_reg_embedding=1e-5,
                     l2_reg_linear=1e-5, l2_reg_dnn=0):
            super().__init__()
            self.feature_index = OrderedDict()
            start = 0
            for name in vocab:
                self.feature_index[name] = (start, start + 1)
                start += 1
            self.feature_index["dense"] = (start, start + n_dense)
            self.embedding_dict = nn.ModuleDict({name: nn.Embedding(v, emb_dim, sparse=False)
                                                 for name, v in vocab.items()})
            for tensor in self.embedding_dict.values():
                nn.init.normal_(tensor.weight, mean=0, std=init_std)
            self.linear_embedding_dict = nn.ModuleDict({name: nn.Embedding(v, 1) for name, v in vocab.items()})
            for tensor in self.linear_embedding_dict.values():
                nn.init.normal_(tensor.weight, mean=0, std=init_std)
            self.linear_weight = nn.Parameter(torch.Tensor(n_dense, 1))
            torch.nn.init.normal_(self.linear_weight, mean=0, std=init_std)
            self.cin = CIN(len(vocab), cin_layer_size)
            self.cin_linear = nn.Linear(sum(cin_layer_size[:-1]) // 2 + cin_layer_size[-1], 1, bias=False)
            dims = [len(vocab) * emb_dim + n_dense] + list(dnn_hidden_units)
            self.dnn = nn.ModuleList([nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1)])
            for name, tensor in self.dnn.named_parameters():
                if 'weight' in name:
                    nn.init.normal_(tensor, mean=0, std=init_std)
            self.dnn_linear = nn.Linear(dnn_hidden_units[-1], 1, bias=False)
            self.fm = FM()
            self.bias = nn.Parameter(torch.zeros((1,)))
            self.regularization_weight = []
            self.regularization_weight.append((list(self.embedding_dict.parameters()), 0.0, l2_reg_embedding))
            self.regularization_weight.append((list(self.linear_embedding_dict.parameters()), 0.0, l2_reg_linear))
            self.regularization_weight.append(
                (list(filter(lambda x: 'weight' in x[0] and 'bn' not in x[0], self.dnn.named_parameters())), 0.0,
                 1e-4))
            self.regularization_weight.append((list(self.cin.named_parameters()), 0.0, 1e-4))

        def forward(self, X):
            sparse_embedding_list = [self.embedding_dict[name](
                X[:, self.feature_index[name][0]:self.feature_index[name][1]].long()) for name in vocab]
            dense_value_list = [X[:, self.feature_index["dense"][0]:self.feature_index["dense"][1]]]
            sparse_linear = [self.linear_embedding_dict[name](
                X[:, self.feature_index[name][0]:self.feature_index[name][1]].long()) for name in vocab]
            linear_logit = torch.zeros([X.shape[0], 1]).to(X.device)
            sparse_embedding_cat = torch.cat(sparse_linear, dim=-1)
            linear_logit += torch.sum(sparse_embedding_cat, dim=-1, keepdim=False)
            linear_logit += torch.cat(dense_value_list, dim=-1).matmul(self.linear_weight)
            fm_input = torch.cat(sparse_embedding_list, dim=1)
            logit = linear_logit + self.fm(fm_input)
            cin_output = self.cin(fm_input)
            logit = logit + self.cin_linear(cin_output)
            dnn_input = torch.cat([torch.flatten(torch.cat(sparse_embedding_list, dim=-1), start_dim=1)]
                                  + [torch.flatten(torch.cat(dense_value_list, dim=-1), start_dim=1)], dim=-1)
            deep_input = dnn_input
            for lin in self.dnn:
                deep_input = F.relu(lin(deep_input))
            logit = logit + self.dnn_linear(deep_input)
            return torch.sigmoid(logit + self.bias)

        def get_regularization_loss(self):
            total_reg_loss = torch.zeros((1,))
            for weight_list, l1, l2 in self.regularization_weight:
                for w in weight_list:
                    parameter = w[1] if isinstance(w, tuple) else w
                    if l1 > 0:
                        total_reg_loss += torch.sum(l1 * torch.abs(parameter))
                    if l2 > 0:
                        total_reg_loss += torch.sum(l2 * torch.square(parameter))
            return total_reg_loss

    model = xDeepFM()
    init = load(m, model, state)
    optim = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(2):
        X = np.concatenate([rng.integers(0, v, (5, 1)) for v in vocab.values()] + [rng.random((5, n_dense))], 1)
        x = torch.from_numpy(X).float()
        y = torch.from_numpy(rng.integers(0, 2, (5, 1))).float()
        y_pred = model(x).squeeze()
        optim.zero_grad()
        loss = F.binary_cross_entropy(y_pred, y.squeeze(), reduction='sum')
        reg_loss = model.get_regularization_loss()
        total_loss = loss + reg_loss
        total_loss.backward()
        optim.step()
        losses += [loss.item(), reg_loss.item()]
    return init, losses + summary(model.parameters())


def test_xdeepfm():
    compare(xdeepfm)


# (i) laiguokun/LSTNet (models/LSTNet.py, Optim.py, main.py's train and evaluate): a Conv2d over (P, m) windows
# squeezed on dim 3, a GRU over c.permute(2, 0, 1), the skip-GRU's view(batch, hidC, pt, skip).permute(2, 0, 3, 1),
# the autoregressive highway over x[:, -hw:, :], the deprecated L1Loss(size_average=False) on outputs scaled by
# scale.expand(...), the Optim wrapper's clip_grad_norm and lr decay, RSE and CORR in numpy from .data.cpu().numpy()
def lstnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(9)

    class Args:
        window, hidRNN, hidCNN, hidSkip, CNN_kernel, skip, highway_window, dropout = 8, 5, 4, 3, 3, 2, 3, 0.0
        output_fun = 'sigmoid'

    class Data:
        m = 3

    class Model(nn.Module):
        def __init__(self, args, data):
            super(Model, self).__init__()
            self.P = args.window
            self.m = data.m
            self.hidR = args.hidRNN
            self.hidC = args.hidCNN
            self.hidS = args.hidSkip
            self.Ck = args.CNN_kernel
            self.skip = args.skip
            self.pt = (self.P - self.Ck) // self.skip
            self.hw = args.highway_window
            self.conv1 = nn.Conv2d(1, self.hidC, kernel_size=(self.Ck, self.m))
            self.GRU1 = nn.GRU(self.hidC, self.hidR)
            self.dropout = nn.Dropout(p=args.dropout)
            if self.skip > 0:
                self.GRUskip = nn.GRU(self.hidC, self.hidS)
                self.linear1 = nn.Linear(self.hidR + self.skip * self.hidS, self.m)
            else:
                self.linear1 = nn.Linear(self.hidR, self.m)
            if self.hw > 0:
                self.highway = nn.Linear(self.hw, 1)
            self.output = None
            if args.output_fun == 'sigmoid':
                self.output = F.sigmoid
            if args.output_fun == 'tanh':
                self.output = F.tanh

        def forward(self, x):
            batch_size = x.size(0)
            c = x.view(-1, 1, self.P, self.m)
            c = F.relu(self.conv1(c))
            c = self.dropout(c)
            c = torch.squeeze(c, 3)
            r = c.permute(2, 0, 1).contiguous()
            _, r = self.GRU1(r)
            r = self.dropout(torch.squeeze(r, 0))
            if self.skip > 0:
                s = c[:, :, int(-self.pt * self.skip):].contiguous()
                s = s.view(batch_size, self.hidC, self.pt, self.skip)
                s = s.permute(2, 0, 3, 1).contiguous()
                s = s.view(self.pt, batch_size * self.skip, self.hidC)
                _, s = self.GRUskip(s)
                s = s.view(batch_size, self.skip * self.hidS)
                s = self.dropout(s)
                r = torch.cat((r, s), 1)
            res = self.linear1(r)
            if self.hw > 0:
                z = x[:, -self.hw:, :]
                z = z.permute(0, 2, 1).contiguous().view(-1, self.hw)
                z = self.highway(z)
                z = z.view(-1, self.m)
                res = res + z
            if self.output:
                res = self.output(res)
            return res

    class Optim(object):
        def _makeOptimizer(self):
            if self.method == 'sgd':
                self.optimizer = torch.optim.SGD(self.params, lr=self.lr)
            elif self.method == 'adam':
                self.optimizer = torch.optim.Adam(self.params, lr=self.lr)
            else:
                raise RuntimeError("Invalid optim method: " + self.method)

        def __init__(self, params, method, lr, max_grad_norm, lr_decay=1, start_decay_at=None):
            self.params = list(params)
            self.last_ppl = None
            self.lr = lr
            self.max_grad_norm = max_grad_norm
            self.method = method
            self.lr_decay = lr_decay
            self.start_decay_at = start_decay_at
            self.start_decay = False
            self._makeOptimizer()

        def step(self):
            grad_norm = 0
            for param in self.params:
                grad_norm += math.pow(param.grad.data.norm(), 2)
            grad_norm = math.sqrt(grad_norm)
            if grad_norm > 0:
                shrinkage = self.max_grad_norm / grad_norm
            else:
                shrinkage = 1.
            for param in self.params:
                if shrinkage < 1:
                    param.grad.data.mul_(shrinkage)
            self.optimizer.step()
            return grad_norm

        def updateLearningRate(self, ppl, epoch):
            if self.start_decay_at is not None and epoch >= self.start_decay_at:
                self.start_decay = True
            if self.last_ppl is not None and ppl > self.last_ppl:
                self.start_decay = True
            if self.start_decay:
                self.lr = self.lr * self.lr_decay
                print("Decaying learning rate to %g" % self.lr)
            self.last_ppl = ppl
            self._makeOptimizer()

    args, data = Args(), Data()
    model = Model(args, data)
    init = load(m, model, state)
    criterion = nn.L1Loss(size_average=False)
    evaluateL2 = nn.MSELoss(size_average=False)
    evaluateL1 = nn.L1Loss(size_average=False)
    optim = Optim(model.parameters(), 'adam', 0.01, 0.5, lr_decay=0.5, start_decay_at=1)
    scale = torch.from_numpy(rng.random(data.m, dtype=np.float32) + 0.5)
    losses = []
    for epoch in range(2):
        model.train()
        X = torch.from_numpy(rng.random((4, args.window, data.m), dtype=np.float32))
        Y = torch.from_numpy(rng.random((4, data.m), dtype=np.float32))
        model.zero_grad()
        output = model(X)
        scale_ = scale.expand(output.size(0), data.m)
        loss = criterion(output * scale_, Y * scale_)
        loss.backward()
        grad_norm = optim.step()
        total_loss = loss.item()
        model.eval()
        output = model(X)
        predict = output.data.cpu().numpy()
        Ytest = Y.data.cpu().numpy()
        rse = math.sqrt(evaluateL2(output * scale_, Y * scale_).item() / (4 * data.m))
        rae = evaluateL1(output * scale_, Y * scale_).item() / (4 * data.m)
        sigma_p = (predict).std(axis=0)
        sigma_g = (Ytest).std(axis=0)
        mean_p = predict.mean(axis=0)
        mean_g = Ytest.mean(axis=0)
        correlation = ((predict - mean_p) * (Ytest - mean_g)).mean(axis=0) / (sigma_p * sigma_g)
        optim.updateLearningRate(rse, epoch)
        losses += [total_loss, grad_norm, rse, rae, float(correlation.mean()), optim.lr]
    return init, losses + summary(model.parameters())


def test_lstnet():
    compare(lstnet)


# (j) Sleepwalking/pytorch-softdtw (soft_dtw.py's SoftDTW, a torch.autograd.Function whose forward and backward run
# the dynamic programme in numpy on .detach().cpu().numpy() and come back by torch.Tensor(...).to(dev).type(dtype);
# gamma passed as torch.Tensor([gamma]) and read by .item(); grad_output.view(-1, 1, 1).expand_as(E) * E), the
# pairwise squared distances by unsqueeze/expand, training a small GRU forecaster on the soft-DTW loss
def soft_dtw(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(10)

    def compute_softdtw(D, gamma):
        B = D.shape[0]
        N = D.shape[1]
        M = D.shape[2]
        R = np.ones((B, N + 2, M + 2)) * np.inf
        R[:, 0, 0] = 0
        for k in range(B):
            for j in range(1, M + 1):
                for i in range(1, N + 1):
                    r0 = -R[k, i - 1, j - 1] / gamma
                    r1 = -R[k, i - 1, j] / gamma
                    r2 = -R[k, i, j - 1] / gamma
                    rmax = max(max(r0, r1), r2)
                    rsum = np.exp(r0 - rmax) + np.exp(r1 - rmax) + np.exp(r2 - rmax)
                    softmin = - gamma * (np.log(rsum) + rmax)
                    R[k, i, j] = D[k, i - 1, j - 1] + softmin
        return R

    def compute_softdtw_backward(D_, R, gamma):
        B = D_.shape[0]
        N = D_.shape[1]
        M = D_.shape[2]
        D = np.zeros((B, N + 2, M + 2))
        E = np.zeros((B, N + 2, M + 2))
        D[:, 1:N + 1, 1:M + 1] = D_
        E[:, -1, -1] = 1
        R[:, :, -1] = -np.inf
        R[:, -1, :] = -np.inf
        R[:, -1, -1] = R[:, -2, -2]
        for k in range(B):
            for j in range(M, 0, -1):
                for i in range(N, 0, -1):
                    a0 = (R[k, i + 1, j] - R[k, i, j] - D[k, i + 1, j]) / gamma
                    b0 = (R[k, i, j + 1] - R[k, i, j] - D[k, i, j + 1]) / gamma
                    c0 = (R[k, i + 1, j + 1] - R[k, i, j] - D[k, i + 1, j + 1]) / gamma
                    a = np.exp(a0)
                    b = np.exp(b0)
                    c = np.exp(c0)
                    E[k, i, j] = E[k, i + 1, j] * a + E[k, i, j + 1] * b + E[k, i + 1, j + 1] * c
        return E[:, 1:N + 1, 1:M + 1]

    class _SoftDTW(torch.autograd.Function):
        @staticmethod
        def forward(ctx, D, gamma):
            dev = D.device
            dtype = D.dtype
            gamma = torch.Tensor([gamma]).to(dev).type(dtype)
            D_ = D.detach().cpu().numpy()
            g_ = gamma.item()
            R = torch.Tensor(compute_softdtw(D_, g_)).to(dev).type(dtype)
            ctx.save_for_backward(D, R, gamma)
            return R[:, -2, -2]

        @staticmethod
        def backward(ctx, grad_output):
            dev = grad_output.device
            dtype = grad_output.dtype
            D, R, gamma = ctx.saved_tensors
            D_ = D.detach().cpu().numpy()
            R_ = R.detach().cpu().numpy()
            g_ = gamma.item()
            E = torch.Tensor(compute_softdtw_backward(D_, R_, g_)).to(dev).type(dtype)
            return grad_output.view(-1, 1, 1).expand_as(E) * E, None

    class SoftDTW(torch.nn.Module):
        def __init__(self, gamma=1.0, normalize=False):
            super(SoftDTW, self).__init__()
            self.normalize = normalize
            self.gamma = gamma
            self.func_dtw = _SoftDTW.apply

        def calc_distance_matrix(self, x, y):
            n = x.size(1)
            m_ = y.size(1)
            d = x.size(2)
            x = x.unsqueeze(2).expand(-1, n, m_, d)
            y = y.unsqueeze(1).expand(-1, n, m_, d)
            dist = torch.pow(x - y, 2).sum(3)
            return dist

        def forward(self, x, y):
            assert len(x.shape) == len(y.shape)
            squeeze = False
            if len(x.shape) < 3:
                x = x.unsqueeze(0)
                y = y.unsqueeze(0)
                squeeze = True
            if self.normalize:
                D_xy = self.calc_distance_matrix(x, y)
                out_xy = self.func_dtw(D_xy, self.gamma)
                D_xx = self.calc_distance_matrix(x, x)
                out_xx = self.func_dtw(D_xx, self.gamma)
                D_yy = self.calc_distance_matrix(y, y)
                out_yy = self.func_dtw(D_yy, self.gamma)
                result = out_xy - 1 / 2 * (out_xx + out_yy)
            else:
                D_xy = self.calc_distance_matrix(x, y)
                out_xy = self.func_dtw(D_xy, self.gamma)
                result = out_xy
            return result.squeeze(0) if squeeze else result

    class Forecaster(nn.Module):
        def __init__(self, horizon=4, hidden=5):
            super().__init__()
            self.horizon = horizon
            self.gru = nn.GRU(2, hidden, batch_first=True)
            self.head = nn.Linear(hidden, horizon * 2)

        def forward(self, x):
            _, h = self.gru(x)
            return self.head(h[-1]).view(x.size(0), self.horizon, 2)

    model = Forecaster()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for i, criterion in enumerate([SoftDTW(gamma=0.1), SoftDTW(gamma=1.0, normalize=True)]):
        t = np.linspace(0, 2 * np.pi, 10)[None, :, None] + rng.random((3, 1, 1))
        series = torch.from_numpy(np.concatenate([np.sin(t), np.cos(2 * t)], 2).astype(np.float32))
        x, y = series[:, :6], series[:, 6:]
        optimizer.zero_grad()
        loss = criterion(model(x), y).mean()
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    return init, losses + summary(model.parameters())


def test_soft_dtw():
    compare(soft_dtw)


# (k) ermongroup/neuralsort (pytorch/neuralsort.py's NeuralSort with the hard straight-through permutation,
# utils's the sorting task's loss) and sleepinyourhat's SoftSort (its SoftSort module): |s_i - s_j| by scores -
# scores.permute(0, 2, 1), B by matmuls with a ones column, the scaling by (n + 1 - 2(arange + 1)).type(FloatTensor),
# the hard permutation written by P[brc_idx[0], brc_idx[1], brc_idx[2]] = 1 from stacked arange/repeat/argmax index
# lists, (P - P_hat).detach() + P_hat; SoftSort's scores.sort(descending=True, dim=1)[0] and .abs().neg() / tau
def neuralsort(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(11)

    class NeuralSort(torch.nn.Module):
        def __init__(self, tau=1.0, hard=False):
            super(NeuralSort, self).__init__()
            self.hard = hard
            self.tau = tau

        def forward(self, scores):
            scores = scores.unsqueeze(-1)
            bsize = scores.size()[0]
            dim = scores.size()[1]
            one = torch.FloatTensor(dim, 1).fill_(1)
            A_scores = torch.abs(scores - scores.permute(0, 2, 1))
            B = torch.matmul(A_scores, torch.matmul(one, torch.transpose(one, 0, 1)))
            scaling = (dim + 1 - 2 * (torch.arange(dim) + 1)).type(torch.FloatTensor)
            C = torch.matmul(scores, scaling.unsqueeze(0))
            P_max = (C - B).permute(0, 2, 1)
            sm = torch.nn.Softmax(-1)
            P_hat = sm(P_max / self.tau)
            if self.hard:
                P = torch.zeros_like(P_hat)
                b_idx = torch.arange(bsize).repeat([1, dim]).view(dim, bsize).transpose(dim0=1, dim1=0).flatten().type(
                    torch.LongTensor)
                r_idx = torch.arange(dim).repeat([bsize, 1]).flatten().type(torch.LongTensor)
                c_idx = torch.argmax(P_hat, dim=-1).flatten()
                brc_idx = torch.stack((b_idx, r_idx, c_idx))
                P[brc_idx[0], brc_idx[1], brc_idx[2]] = 1
                P_hat = (P - P_hat).detach() + P_hat
            return P_hat

    class SoftSort(torch.nn.Module):
        def __init__(self, tau=1.0, hard=False, pow=1.0):
            super(SoftSort, self).__init__()
            self.hard = hard
            self.tau = tau
            self.pow = pow

        def forward(self, scores):
            scores = scores.unsqueeze(-1)
            sorted = scores.sort(descending=True, dim=1)[0]
            pairwise_diff = (scores.transpose(1, 2) - sorted).abs().pow(self.pow).neg() / self.tau
            P_hat = pairwise_diff.softmax(-1)
            if self.hard:
                P = torch.zeros_like(P_hat, device=P_hat.device)
                P.scatter_(-1, P_hat.topk(1, -1)[1], value=1)
                P_hat = (P - P_hat).detach() + P_hat
            return P_hat

    class ScoreNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 3, 3)
            self.fc = nn.Linear(3 * 4 * 4, 1, bias=False)  # sorting ignores a shift: a bias would learn noise

        def forward(self, x):
            b, n = x.shape[:2]
            h = F.max_pool2d(F.relu(self.conv(x.view(b * n, 1, 6, 6))), 1)
            return self.fc(h.view(b * n, -1)).view(b, n)

    net = ScoreNet()
    init = load(m, net, state)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    losses = []
    n = 4
    for step, sorter in enumerate([NeuralSort(tau=1.0, hard=True), SoftSort(tau=0.5, hard=True),
                                   NeuralSort(tau=2.0), SoftSort(tau=1.0, pow=2.0)]):
        values = rng.permutation(10)[:2 * n].reshape(2, n)
        images = torch.from_numpy(normal(rng, 2, n, 6, 6) * 0.2 + values[:, :, None, None].astype(np.float32) / 10)
        true_scores = torch.from_numpy(values.astype(np.float32))
        true_perms = NeuralSort(tau=1e-3, hard=False)(true_scores).detach()  # sorted order of the true values
        scores = net(images)
        perms = sorter(scores)
        loss = -torch.sum(true_perms * torch.log(perms + 1e-20), dim=-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        prop_correct = torch.eq(torch.argmax(true_perms, dim=-1), torch.argmax(perms, dim=-1)).float().mean()
        losses += [loss.item(), prop_correct.item()]
    return init, losses + summary(net.parameters())


def test_neuralsort():
    compare(neuralsort)


# (l) taesungp/contrastive-unpaired-translation (models/patchnce.py's PatchNCELoss, models/networks.py's PatchSampleF,
# Normalize and GANLoss('lsgan'), models/cut_model.py's data_dependent_initialize and optimize_parameters): the mask
# dtype chosen by torch.__version__ (the source parses it with packaging), the sampler's MLPs made lazily in its first
# forward and its optimizer made after it, patches by feat.permute(0, 2, 3, 1).flatten(1, 2)[:, patch_id, :] with
# numpy's permutation, l_neg_curbatch.masked_fill_(diagonal, -10.0) with a bool eye, CrossEntropyLoss(reduction='none')
# against zeros, GANLoss's targets as register_buffer(torch.tensor(1.0)) and .expand_as(prediction)
def cut(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(12)

    class PatchNCELoss(nn.Module):
        def __init__(self, opt):
            super().__init__()
            self.opt = opt
            self.cross_entropy_loss = torch.nn.CrossEntropyLoss(reduction='none')
            # the source's version.parse(torch.__version__) < version.parse('1.2.0'), without packaging
            version = tuple(int(v) for v in torch.__version__.split('+')[0].split('.')[:2])
            self.mask_dtype = torch.uint8 if version < (1, 2) else torch.bool

        def forward(self, feat_q, feat_k):
            num_patches = feat_q.shape[0]
            dim = feat_q.shape[1]
            feat_k = feat_k.detach()
            l_pos = torch.bmm(feat_q.view(num_patches, 1, -1), feat_k.view(num_patches, -1, 1))
            l_pos = l_pos.view(num_patches, 1)
            if self.opt.nce_includes_all_negatives_from_minibatch:
                batch_dim_for_bmm = 1
            else:
                batch_dim_for_bmm = self.opt.batch_size
            feat_q = feat_q.view(batch_dim_for_bmm, -1, dim)
            feat_k = feat_k.view(batch_dim_for_bmm, -1, dim)
            npatches = feat_q.size(1)
            l_neg_curbatch = torch.bmm(feat_q, feat_k.transpose(2, 1))
            diagonal = torch.eye(npatches, device=feat_q.device, dtype=self.mask_dtype)[None, :, :]
            l_neg_curbatch.masked_fill_(diagonal, -10.0)
            l_neg = l_neg_curbatch.view(-1, npatches)
            out = torch.cat((l_pos, l_neg), dim=1) / self.opt.nce_T
            loss = self.cross_entropy_loss(out, torch.zeros(out.size(0), dtype=torch.long, device=feat_q.device))
            return loss

    class Normalize(nn.Module):
        def __init__(self, power=2):
            super(Normalize, self).__init__()
            self.power = power

        def forward(self, x):
            norm = x.pow(self.power).sum(1, keepdim=True).pow(1. / self.power)
            out = x.div(norm + 1e-7)
            return out

    def init_weights(net, init_type='normal', init_gain=0.02):
        def init_func(m_):
            classname = m_.__class__.__name__
            if hasattr(m_, 'weight') and (classname.find('Conv') != -1 or classname.find('Linear') != -1):
                if init_type == 'normal':
                    nn.init.normal_(m_.weight.data, 0.0, init_gain)
                elif init_type == 'xavier':
                    nn.init.xavier_normal_(m_.weight.data, gain=init_gain)
                if hasattr(m_, 'bias') and m_.bias is not None:
                    nn.init.constant_(m_.bias.data, 0.0)
            elif classname.find('BatchNorm2d') != -1:
                nn.init.normal_(m_.weight.data, 1.0, init_gain)
                nn.init.constant_(m_.bias.data, 0.0)
        net.apply(init_func)

    class PatchSampleF(nn.Module):
        def __init__(self, use_mlp=False, init_type='normal', init_gain=0.02, nc=6, gpu_ids=[]):
            super(PatchSampleF, self).__init__()
            self.l2norm = Normalize(2)
            self.use_mlp = use_mlp
            self.nc = nc
            self.mlp_init = False
            self.init_type = init_type
            self.init_gain = init_gain
            self.gpu_ids = gpu_ids

        def create_mlp(self, feats):
            for mlp_id, feat in enumerate(feats):
                input_nc = feat.shape[1]
                mlp = nn.Sequential(*[nn.Linear(input_nc, self.nc), nn.ReLU(), nn.Linear(self.nc, self.nc)])
                if len(self.gpu_ids) > 0:
                    mlp.cuda()
                setattr(self, 'mlp_%d' % mlp_id, mlp)
            init_weights(self, self.init_type, self.init_gain)
            self.mlp_init = True

        def forward(self, feats, num_patches=64, patch_ids=None):
            return_ids = []
            return_feats = []
            if self.use_mlp and not self.mlp_init:
                self.create_mlp(feats)
            for feat_id, feat in enumerate(feats):
                B, H, W = feat.shape[0], feat.shape[2], feat.shape[3]
                feat_reshape = feat.permute(0, 2, 3, 1).flatten(1, 2)
                if num_patches > 0:
                    if patch_ids is not None:
                        patch_id = patch_ids[feat_id]
                    else:
                        patch_id = rng.permutation(feat_reshape.shape[1])
                        patch_id = patch_id[:int(min(num_patches, patch_id.shape[0]))]
                        patch_id = torch.tensor(patch_id, dtype=torch.long, device=feat.device)
                    x_sample = feat_reshape[:, patch_id, :].flatten(0, 1)
                else:
                    x_sample = feat_reshape
                    patch_id = []
                if self.use_mlp:
                    mlp = getattr(self, 'mlp_%d' % feat_id)
                    x_sample = mlp(x_sample)
                return_ids.append(patch_id)
                x_sample = self.l2norm(x_sample)
                if num_patches == 0:
                    x_sample = x_sample.permute(0, 2, 1).reshape([B, x_sample.shape[-1], H, W])
                return_feats.append(x_sample)
            return return_feats, return_ids

    class GANLoss(nn.Module):
        def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0):
            super(GANLoss, self).__init__()
            self.register_buffer('real_label', torch.tensor(target_real_label))
            self.register_buffer('fake_label', torch.tensor(target_fake_label))
            self.gan_mode = gan_mode
            if gan_mode == 'lsgan':
                self.loss = nn.MSELoss()

        def get_target_tensor(self, prediction, target_is_real):
            if target_is_real:
                target_tensor = self.real_label
            else:
                target_tensor = self.fake_label
            return target_tensor.expand_as(prediction)

        def __call__(self, prediction, target_is_real):
            target_tensor = self.get_target_tensor(prediction, target_is_real)
            return self.loss(prediction, target_tensor)

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(3, 4, 3), nn.InstanceNorm2d(4), nn.ReLU(True),
                                       nn.Conv2d(4, 6, 3, stride=2, padding=1), nn.InstanceNorm2d(6), nn.ReLU(True),
                                       nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1),
                                       nn.InstanceNorm2d(4), nn.ReLU(True), nn.ReflectionPad2d(1), nn.Conv2d(4, 3, 3),
                                       nn.Tanh())

        def forward(self, input, layers=[], encode_only=False):
            if len(layers) > 0:
                feat = input
                feats = []
                for layer_id, layer in enumerate(self.model):
                    feat = layer(feat)
                    if layer_id in layers:
                        feats.append(feat)
                    if layer_id == layers[-1] and encode_only:
                        return feats
                return feat, feats
            return self.model(input)

    class Opt:
        nce_includes_all_negatives_from_minibatch = False
        batch_size = 2
        nce_T = 0.07
        num_patches = 5
        lambda_NCE = 1.0
        lambda_GAN = 1.0
        nce_layers = [1, 4]

    opt = Opt()
    netG = Generator()
    netD = nn.Sequential(nn.Conv2d(3, 4, 4, stride=2, padding=1), nn.LeakyReLU(0.2, True),
                         nn.Conv2d(4, 1, 3, padding=1))
    netF = PatchSampleF(use_mlp=True, nc=16)  # with few units a patch whose ReLUs all die gives a zero vector, NaN
    init_weights(netG)
    init_weights(netD)
    init = load(m, nn.ModuleList([netG, netD]), state and {k: v for k, v in state.items() if k[0] != "F"})
    criterionGAN = GANLoss('lsgan')
    criterionNCE = [PatchNCELoss(opt) for _ in opt.nce_layers]
    optimizer_G = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))

    def set_requires_grad(nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad

    def calculate_NCE_loss(src, tgt):
        n_layers = len(opt.nce_layers)
        feat_q = netG(tgt, opt.nce_layers, encode_only=True)
        feat_k = netG(src, opt.nce_layers, encode_only=True)
        feat_k_pool, sample_ids = netF(feat_k, opt.num_patches, None)
        feat_q_pool, _ = netF(feat_q, opt.num_patches, sample_ids)
        total_nce_loss = 0.0
        for f_q, f_k, crit, nce_layer in zip(feat_q_pool, feat_k_pool, criterionNCE, opt.nce_layers):
            loss = crit(f_q, f_k) * opt.lambda_NCE
            total_nce_loss += loss.mean()
        return total_nce_loss / n_layers

    losses = []
    optimizer_F = None
    for step in range(2):
        real_A = torch.from_numpy(normal(rng, 2, 3, 6, 6))
        real_B = torch.from_numpy(normal(rng, 2, 3, 6, 6))
        real = torch.cat((real_A, real_B), dim=0)
        if optimizer_F is None:  # data_dependent_initialize: netF's MLPs exist after a first NCE loss
            calculate_NCE_loss(real_A, netG(real_A)).backward()
            init_weights(netF)
            init.update(("F" + k, v) for k, v in load(m, netF, state and {k[1:]: v for k, v in state.items()
                                                                            if k[0] == "F"}).items())
            optimizer_F = torch.optim.Adam(netF.parameters(), lr=2e-3, betas=(0.5, 0.999))
            netG.zero_grad()
            losses += [sum(p.numel() for p in netF.parameters())]
        fake = netG(real)
        fake_B = fake[:real_A.size(0)]
        idt_B = fake[real_A.size(0):]
        set_requires_grad(netD, True)
        optimizer_D.zero_grad()
        loss_D_fake = criterionGAN(netD(fake_B.detach()), False).mean()
        loss_D_real = criterionGAN(netD(real_B), True).mean()
        loss_D = (loss_D_fake + loss_D_real) * 0.5
        loss_D.backward()
        optimizer_D.step()
        set_requires_grad(netD, False)
        optimizer_G.zero_grad()
        optimizer_F.zero_grad()
        loss_G_GAN = criterionGAN(netD(fake_B), True).mean() * opt.lambda_GAN
        loss_NCE = calculate_NCE_loss(real_A, fake_B)
        loss_NCE_Y = calculate_NCE_loss(real_B, idt_B)
        loss_G = loss_G_GAN + (loss_NCE + loss_NCE_Y) * 0.5
        loss_G.backward()
        optimizer_G.step()
        optimizer_F.step()
        losses += [loss_D.item(), loss_G_GAN.item(), loss_NCE.item(), loss_NCE_Y.item()]
    # a bias before an InstanceNorm2d has a gradient of rounding noise, which Adam turns into steps of lr
    normed = ("model.1.bias", "model.4.bias", "model.7.bias")
    return init, losses + summary(p for n, p in netG.named_parameters() if n not in normed) + summary(
        netD.parameters())


def test_cut():
    compare(cut)


# (m) jhjacobsen/invertible-resnet and rtqichen/residual-flows in a small 2-D flow (models/conv_iResNet.py's
# power-series log-determinant with a Hutchinson estimator, spectral_norm_fc.py's power iteration kept in buffers;
# residual-flows' LipSwish): v-Jacobian products by torch.autograd.grad(Fx, x, w, retain_graph=True,
# create_graph=True) summed as a series, sigma by torch.dot(u, torch.mv(weight, v)) under torch.no_grad() with
# F.normalize updates written into buffers, weight / torch.max(torch.ones(1), sigma / coeff), x * sigmoid(x *
# softplus(beta)) / 1.1, the standard normal log density, an inverse by fixed-point iteration
def iresnet_flow(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(13)

    class SpectralNormLinear(nn.Module):
        def __init__(self, in_features, out_features, coeff=0.9, n_power_iterations=2, eps=1e-12):
            super().__init__()
            self.linear = nn.Linear(in_features, out_features)
            self.coeff = coeff
            self.n_power_iterations = n_power_iterations
            self.eps = eps
            h, w = self.linear.weight.size()
            u = F.normalize(self.linear.weight.new_empty(h).normal_(0, 1), dim=0, eps=self.eps)
            v = F.normalize(self.linear.weight.new_empty(w).normal_(0, 1), dim=0, eps=self.eps)
            self.register_buffer('u', u)
            self.register_buffer('v', v)
            self.register_buffer('sigma', torch.ones(1))

        def compute_weight(self, do_power_iteration):
            weight = self.linear.weight
            u, v = self.u, self.v
            if do_power_iteration:
                with torch.no_grad():
                    for _ in range(self.n_power_iterations):
                        v.copy_(F.normalize(torch.mv(weight.t(), u), dim=0, eps=self.eps, out=v))
                        u.copy_(F.normalize(torch.mv(weight, v), dim=0, eps=self.eps, out=u))
            sigma = torch.dot(u, torch.mv(weight, v))
            factor = torch.max(torch.ones(1), sigma / self.coeff)
            self.sigma.copy_(sigma.detach().view(1))
            return weight / factor

        def forward(self, x):
            return F.linear(x, self.compute_weight(self.training), self.linear.bias)

    class LipSwish(nn.Module):
        def __init__(self):
            super().__init__()
            self.beta = nn.Parameter(torch.ones([1]) * 0.5)

        def forward(self, x):
            return (x * torch.sigmoid(x * F.softplus(self.beta))).div_(1.1)

    def power_series_matrix_logarithm_trace(Fx, x, k, n, vs):
        outSum = Fx.sum(dim=0)
        dim = list(outSum.shape)
        dim.insert(0, n)
        assert list(vs.shape) == [n] + list(x.shape)
        logdet = 0.0
        for j in range(n):
            v = vs[j]
            w = v
            for i in range(1, k + 1):
                w = torch.autograd.grad(Fx, x, w, retain_graph=True, create_graph=True)[0]
                logdet = logdet + (-1) ** (i + 1) * (w * v).sum(dim=1) / i
        return logdet / n

    class iResBlock(nn.Module):
        def __init__(self, dim, hidden):
            super().__init__()
            self.nnet = nn.Sequential(SpectralNormLinear(dim, hidden), LipSwish(), SpectralNormLinear(hidden, dim))

        def forward(self, x, vs):
            x = x.requires_grad_(True) if not x.requires_grad else x
            Fx = self.nnet(x)
            trace = power_series_matrix_logarithm_trace(Fx, x, 3, vs.shape[0], vs)
            return x + Fx, trace

        def inverse(self, y, maxIter=5):
            with torch.no_grad():
                x = y
                for iter_index in range(maxIter):
                    summand = self.nnet(x)
                    x = y - summand
            return x

    class iResNet(nn.Module):
        def __init__(self, n_blocks=2):
            super().__init__()
            self.blocks = nn.ModuleList([iResBlock(2, 6) for _ in range(n_blocks)])

        def forward(self, x, vs):
            z = x
            traces = []
            for i, block in enumerate(self.blocks):
                z, tr = block(z, vs[i])
                traces.append(tr)
            return z, sum(traces)

        def inverse(self, z):
            for block in reversed(self.blocks):
                z = block.inverse(z)
            return z

    def standard_normal_logprob(z):
        logZ = -0.5 * math.log(2 * math.pi)
        return logZ - z.pow(2) / 2

    flow = iResNet()
    init = load(m, flow, state)
    optimizer = torch.optim.Adamax(flow.parameters(), lr=0.01)
    losses = []
    for itr in range(2):
        t = rng.random(6) * np.pi
        x = np.stack([np.cos(t), np.sin(t)], 1) + 0.1 * rng.standard_normal((6, 2))
        x = torch.from_numpy(x.astype(np.float32)).requires_grad_(True)
        vs = torch.from_numpy(normal(rng, 2, 1, 6, 2))
        optimizer.zero_grad()
        z, delta_logp = flow(x, vs)
        logpz = standard_normal_logprob(z).sum(1)
        logpx = logpz + delta_logp
        loss = -torch.mean(logpx)
        loss.backward()
        optimizer.step()
        losses += [loss.item(), delta_logp.mean().item()]
    flow.eval()
    z = torch.from_numpy(normal(rng, 4, 2))
    x_rec = flow.inverse(z)
    losses += [x_rec.sum().item()] + [float(b.nnet[0].sigma) for b in flow.blocks]
    return init, losses + summary(flow.parameters()) + summary(flow.buffers())


def test_iresnet_flow():
    compare(iresnet_flow)


# (n) facebookresearch/demucs v2 (demucs/model.py's Demucs with BLSTM, rescale_module, upsample-free encoder/decoder,
# valid_length and normalize; utils.py's center_trim; augment.py's FlipChannels, FlipSign and Remix; train.py's
# L1 step): Conv1d + GLU(dim=1) encoders, ConvTranspose1d decoders, the skip cropped by center_trim's
# tensor[..., delta // 2:-(delta - delta // 2)], the LSTM over x.permute(2, 0, 1), weights rescaled by
# (conv.weight.std().detach() / reference) ** 0.5 through .data /=, the mix standardised by its mono mean and std,
# augmentations by torch.gather with a stacked index, sign flips and a remix by a permutation along the batch
def demucs(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(14)

    class BLSTM(nn.Module):
        def __init__(self, dim, layers=1):
            super().__init__()
            self.lstm = nn.LSTM(bidirectional=True, num_layers=layers, hidden_size=dim, input_size=dim)
            self.linear = nn.Linear(2 * dim, dim)

        def forward(self, x):
            x = x.permute(2, 0, 1)
            x = self.lstm(x)[0]
            x = self.linear(x)
            x = x.permute(1, 2, 0)
            return x

    def rescale_conv(conv, reference):
        std = conv.weight.std().detach()
        scale = (std / reference)**0.5
        conv.weight.data /= scale
        if conv.bias is not None:
            conv.bias.data /= scale

    def rescale_module(module, reference):
        for sub in module.modules():
            if isinstance(sub, (nn.Conv1d, nn.ConvTranspose1d)):
                rescale_conv(sub, reference)

    def center_trim(tensor, reference):
        if hasattr(reference, "size"):
            reference = reference.size(-1)
        delta = tensor.size(-1) - reference
        if delta < 0:
            raise ValueError("tensor must be larger than reference. " f"Delta is {delta}.")
        if delta:
            tensor = tensor[..., delta // 2:-(delta - delta // 2)]
        return tensor

    class Demucs(nn.Module):
        def __init__(self, sources=2, audio_channels=2, channels=4, depth=2, rewrite=True, glu=True, rescale=0.1,
                     kernel_size=8, stride=4, growth=2., lstm_layers=1, context=3, normalize=True):
            super().__init__()
            self.audio_channels = audio_channels
            self.sources = sources
            self.kernel_size = kernel_size
            self.context = context
            self.stride = stride
            self.depth = depth
            self.channels = channels
            self.normalize = normalize
            self.encoder = nn.ModuleList()
            self.decoder = nn.ModuleList()
            if glu:
                activation = nn.GLU(dim=1)
                ch_scale = 2
            else:
                activation = nn.ReLU()
                ch_scale = 1
            in_channels = audio_channels
            for index in range(depth):
                encode = []
                encode += [nn.Conv1d(in_channels, channels, kernel_size, stride), nn.ReLU()]
                if rewrite:
                    encode += [nn.Conv1d(channels, ch_scale * channels, 1), activation]
                self.encoder.append(nn.Sequential(*encode))
                decode = []
                if index > 0:
                    out_channels = in_channels
                else:
                    out_channels = sources * audio_channels
                if rewrite:
                    decode += [nn.Conv1d(channels, ch_scale * channels, context), activation]
                decode += [nn.ConvTranspose1d(channels, out_channels, kernel_size, stride)]
                if index > 0:
                    decode.append(nn.ReLU())
                self.decoder.insert(0, nn.Sequential(*decode))
                in_channels = channels
                channels = int(growth * channels)
            channels = in_channels
            if lstm_layers:
                self.lstm = BLSTM(channels, lstm_layers)
            else:
                self.lstm = None
            if rescale:
                rescale_module(self, reference=rescale)

        def valid_length(self, length):
            for _ in range(self.depth):
                length = math.ceil((length - self.kernel_size) / self.stride) + 1
                length = max(1, length)
                length += self.context - 1
            for _ in range(self.depth):
                length = (length - 1) * self.stride + self.kernel_size
            return int(length)

        def forward(self, mix):
            x = mix
            if self.normalize:
                mono = mix.mean(dim=1, keepdim=True)
                mean = mono.mean(dim=-1, keepdim=True)
                std = mono.std(dim=-1, keepdim=True)
            else:
                mean = 0
                std = 1
            x = (x - mean) / (1e-5 + std)
            saved = [x]
            for encode in self.encoder:
                x = encode(x)
                saved.append(x)
            if self.lstm:
                x = self.lstm(x)
            for decode in self.decoder:
                skip = center_trim(saved.pop(-1), x)
                x = x + skip
                x = decode(x)
            x = x * std + mean
            x = x.view(x.size(0), self.sources, self.audio_channels, x.size(-1))
            return x

    class FlipChannels(nn.Module):
        def forward(self, wav):
            batch, sources, channels, time = wav.size()
            if self.training and wav.size(2) == 2:
                left = torch.from_numpy(rng.integers(2, size=(batch, sources, 1, 1)))
                left = left.expand(-1, -1, -1, time)
                right = 1 - left
                wav = torch.cat([wav.gather(2, left), wav.gather(2, right)], dim=2)
            return wav

    class FlipSign(nn.Module):
        def forward(self, wav):
            batch, sources, channels, time = wav.size()
            if self.training:
                signs = torch.from_numpy(rng.integers(2, size=(batch, sources, 1, 1)).astype(np.float32))
                wav = wav * (2 * signs - 1)
            return wav

    class Remix(nn.Module):
        def __init__(self, group_size=2):
            super().__init__()
            self.group_size = group_size

        def forward(self, wav):
            batch, streams, channels, time = wav.size()
            if self.training:
                group_size = self.group_size or batch
                groups = batch // group_size
                wav = wav.view(groups, group_size, streams, channels, time)
                permutations = torch.from_numpy(np.argsort(rng.random((groups, group_size, streams, 1, 1)), axis=1))
                wav = wav.gather(1, permutations.expand(-1, -1, -1, channels, time))
                wav = wav.view(batch, streams, channels, time)
            return wav

    model = Demucs()
    init = load(m, model, state)
    augment = nn.Sequential(FlipSign(), FlipChannels(), Remix(group_size=2))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    length = model.valid_length(40)
    losses = [float(length)]
    for step in range(2):
        sources = torch.from_numpy(normal(rng, 2, 2, 2, length) * 0.3)
        sources = augment(sources)
        mix = sources.sum(dim=1)
        estimates = model(mix)
        sources = center_trim(sources, estimates)
        loss = F.l1_loss(estimates, sources)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), mix.std().item()]
    model.eval()
    with torch.no_grad():
        mix = torch.from_numpy(normal(rng, 1, 2, 50))
        delta = model.valid_length(50) - 50
        padded = F.pad(mix, (delta // 2, delta - delta // 2))
        out = center_trim(model(padded), mix)
    losses += [out.sum().item(), float(out.shape[-1])]
    return init, losses + summary(model.parameters())


def test_demucs():
    compare(demucs)


# (o) a Double DQN with prioritised experience replay in the style of rlcode/per and Kaixhin's Rainbow memory
# (a numpy SumTree; the target network by copy.deepcopy and load_state_dict; importance weights
# (n * P)^-beta / max; per-sample F.smooth_l1_loss(reduction='none') * weights; |TD| written back as new priorities
# through .detach().cpu().numpy()): q.gather(1, a.unsqueeze(1)), the online argmax(1, keepdim=True) evaluated by the
# target's gather, (1 - done) masks, epsilon-greedy actions by .max(1)[1].view(1, 1), clip_grad_norm_
def per_double_dqn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import copy
    torch.manual_seed(0)
    rng = np.random.default_rng(15)
    n_obs, n_actions = 4, 3

    class SumTree:
        write = 0

        def __init__(self, capacity):
            self.capacity = capacity
            self.tree = np.zeros(2 * capacity - 1)
            self.data = np.zeros(capacity, dtype=object)
            self.n_entries = 0

        def _propagate(self, idx, change):
            parent = (idx - 1) // 2
            self.tree[parent] += change
            if parent != 0:
                self._propagate(parent, change)

        def _retrieve(self, idx, s):
            left = 2 * idx + 1
            right = left + 1
            if left >= len(self.tree):
                return idx
            if s <= self.tree[left]:
                return self._retrieve(left, s)
            else:
                return self._retrieve(right, s - self.tree[left])

        def total(self):
            return self.tree[0]

        def add(self, p, data):
            idx = self.write + self.capacity - 1
            self.data[self.write] = data
            self.update(idx, p)
            self.write += 1
            if self.write >= self.capacity:
                self.write = 0
            if self.n_entries < self.capacity:
                self.n_entries += 1

        def update(self, idx, p):
            change = p - self.tree[idx]
            self.tree[idx] = p
            self._propagate(idx, change)

        def get(self, s):
            idx = self._retrieve(0, s)
            dataIdx = idx - self.capacity + 1
            return (idx, self.tree[idx], self.data[dataIdx])

    class Memory:
        e = 0.01
        a = 0.6
        beta = 0.4
        beta_increment_per_sampling = 0.1

        def __init__(self, capacity):
            self.tree = SumTree(capacity)
            self.capacity = capacity

        def _get_priority(self, error):
            return (np.abs(error) + self.e) ** self.a

        def add(self, error, sample):
            p = self._get_priority(error)
            self.tree.add(p, sample)

        def sample(self, n):
            batch = []
            idxs = []
            segment = self.tree.total() / n
            priorities = []
            self.beta = np.min([1., self.beta + self.beta_increment_per_sampling])
            for i in range(n):
                a = segment * i
                b = segment * (i + 1)
                s = rng.uniform(a, b)
                (idx, p, data) = self.tree.get(s)
                priorities.append(p)
                batch.append(data)
                idxs.append(idx)
            sampling_probabilities = priorities / self.tree.total()
            is_weight = np.power(self.tree.n_entries * sampling_probabilities, -self.beta)
            is_weight /= is_weight.max()
            return batch, idxs, is_weight

        def update(self, idx, error):
            p = self._get_priority(error)
            self.tree.update(idx, p)

    class DQN(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Sequential(nn.Linear(n_obs, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, n_actions))
            for m_ in self.modules():
                if isinstance(m_, nn.Linear):
                    nn.init.xavier_uniform_(m_.weight)

        def forward(self, x):
            return self.fc(x)

    model = DQN()
    init = load(m, model, state)
    target_model = copy.deepcopy(model)
    target_model.eval()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    memory = Memory(16)
    gamma, batch_size = 0.99, 4

    def get_action(state, epsilon):
        if rng.random() <= epsilon:
            return torch.tensor([[rng.integers(n_actions)]], dtype=torch.long)
        with torch.no_grad():
            return model(state).max(1)[1].view(1, 1)

    def append_sample(state, action, reward, next_state, done):
        q = model(torch.from_numpy(state[None])).data
        old_val = q[0][action]
        target_val = target_model(torch.from_numpy(next_state[None])).data
        if done:
            target = reward
        else:
            target = reward + gamma * torch.max(target_val)
        error = abs(float(old_val) - float(target))
        memory.add(error, (state, action, reward, next_state, done))

    losses = []
    obs = normal(rng, n_obs)
    for t in range(10):
        action = get_action(torch.from_numpy(obs[None]), epsilon=0.5).item()
        next_obs = (obs + 0.1 * normal(rng, n_obs)).astype(np.float32)
        reward, done = float(next_obs[0] > 0), t % 5 == 4
        append_sample(obs, action, reward, next_obs, done)
        obs = normal(rng, n_obs) if done else next_obs
    for step in range(3):
        mini_batch, idxs, is_weights = memory.sample(batch_size)
        mini_batch = np.array(mini_batch, dtype=object).transpose()
        states = torch.from_numpy(np.vstack(mini_batch[0]))
        actions = torch.LongTensor(list(mini_batch[1]))
        rewards = torch.FloatTensor(list(mini_batch[2]))
        next_states = torch.from_numpy(np.vstack(mini_batch[3]))
        dones = torch.FloatTensor(mini_batch[4].astype(int))
        pred = model(states).gather(1, actions.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            best = model(next_states).argmax(1, keepdim=True)
            next_pred = target_model(next_states).gather(1, best).squeeze(1)
        target = rewards + (1 - dones) * gamma * next_pred
        errors = torch.abs(pred - target).data.cpu().numpy()
        for i in range(batch_size):
            memory.update(idxs[i], errors[i])
        optimizer.zero_grad()
        loss = (torch.FloatTensor(is_weights) * F.smooth_l1_loss(pred, target, reduction='none')).mean()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        if step == 1:
            target_model.load_state_dict(model.state_dict())
        losses += [loss.item(), float(memory.tree.total()), float(is_weights.sum())]
    return init, losses + summary(model.parameters()) + summary(target_model.parameters())


def test_per_double_dqn():
    compare(per_double_dqn)


# (p) the Music Transformer's relative global attention (jason9693/MusicTransformer-pytorch's RelativeGlobalAttention
# and gwinndr's _skew): a learnt relative embedding E sliced to the last len_q positions, QE^T by einsum, the lower
# mask written by a sequence_mask of reversed arange, the skew by F.pad(qe, [1, 0]) and reshape to (B, H, L + 1, L)
# then [:, :, 1:, ...]; a causal mask by torch.triu(torch.ones(...), diagonal=1) * -1e9 added to the logits; a
# CustomSchedule-style Noam rate through LambdaLR; label smoothing on a padded target by CrossEntropyLoss(
# ignore_index=pad, label_smoothing=0.1)
def music_transformer(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(16)
    vocab, d, h, max_seq, pad = 11, 8, 2, 6, 0

    def sequence_mask(length, max_length=None):
        if max_length is None:
            max_length = length.max()
        x = torch.arange(max_length, dtype=length.dtype, device=length.device)
        return x.unsqueeze(0) < length.unsqueeze(1)

    class RelativeGlobalAttention(nn.Module):
        def __init__(self, h=4, d=256, add_emb=False, max_seq=2048, **kwargs):
            super().__init__()
            self.len_k = None
            self.max_seq = max_seq
            self.E = None
            self.h = h
            self.d = d
            self.dh = d // h
            self.Wq = nn.Linear(self.d, self.d)
            self.Wk = nn.Linear(self.d, self.d)
            self.Wv = nn.Linear(self.d, self.d)
            self.fc = nn.Linear(d, d)
            self.additional = add_emb
            self.E = nn.Parameter(torch.randn([self.max_seq, int(self.dh)]))

        def forward(self, inputs, mask=None, **kwargs):
            q = inputs[0]
            q = self.Wq(q)
            q = torch.reshape(q, (q.size(0), q.size(1), self.h, -1))
            q = q.permute(0, 2, 1, 3)
            k = inputs[1]
            k = self.Wk(k)
            k = torch.reshape(k, (k.size(0), k.size(1), self.h, -1))
            k = k.permute(0, 2, 1, 3)
            v = inputs[2]
            v = self.Wv(v)
            v = torch.reshape(v, (v.size(0), v.size(1), self.h, -1))
            v = v.permute(0, 2, 1, 3)
            self.len_k = k.size(2)
            self.len_q = q.size(2)
            E = self._get_left_embedding(self.len_q, self.len_k).to(q.device)
            QE = torch.einsum('bhld,md->bhlm', [q, E])
            QE = self._qe_masking(QE)
            Srel = self._skewing(QE)
            Kt = k.permute(0, 1, 3, 2)
            QKt = torch.matmul(q, Kt)
            logits = QKt + Srel
            logits = logits / math.sqrt(self.dh)
            if mask is not None:
                logits += (mask.to(torch.int64) * -1e9).to(logits.dtype)
            attention_weights = F.softmax(logits, -1)
            attention = torch.matmul(attention_weights, v)
            out = attention.permute(0, 2, 1, 3)
            out = torch.reshape(out, (out.size(0), -1, self.d))
            out = self.fc(out)
            return out, attention_weights

        def _get_left_embedding(self, len_q, len_k):
            starting_point = max(0, self.max_seq - len_q)
            e = self.E[starting_point:, :]
            return e

        def _skewing(self, tensor):
            padded = F.pad(tensor, [1, 0, 0, 0, 0, 0, 0, 0])
            reshaped = torch.reshape(padded, shape=[padded.size(0), padded.size(1), padded.size(-1), padded.size(-2)])
            Srel = reshaped[:, :, 1:, :]
            if self.len_k > self.len_q:
                Srel = F.pad(Srel, [0, 0, 0, 0, 0, 0, 0, self.len_k - self.len_q])
            elif self.len_k < self.len_q:
                Srel = Srel[:, :, :, :self.len_k]
            return Srel

        @staticmethod
        def _qe_masking(qe):
            mask = sequence_mask(torch.arange(qe.size()[-1] - 1, qe.size()[-1] - qe.size()[-2] - 1, -1).to(qe.device),
                                 qe.size()[-1])
            mask = ~mask.to(mask.device)
            return mask.to(qe.dtype) * qe

    class DecoderLayer(nn.Module):
        def __init__(self, d_model, rate=0.0, h=4, additional=False, max_seq=2048):
            super().__init__()
            self.rga = RelativeGlobalAttention(h=h, d=d_model, max_seq=max_seq, add_emb=additional)
            self.FFN_pre = nn.Linear(d_model, d_model // 2)
            self.FFN_suf = nn.Linear(d_model // 2, d_model)
            self.layernorm1 = nn.LayerNorm(d_model, eps=1e-6)
            self.layernorm2 = nn.LayerNorm(d_model, eps=1e-6)
            self.dropout1 = nn.Dropout(rate)
            self.dropout2 = nn.Dropout(rate)

        def forward(self, x, mask=None, **kwargs):
            attn_out, w = self.rga([x, x, x], mask)
            attn_out = self.dropout1(attn_out)
            out1 = self.layernorm1(attn_out + x)
            ffn_out = F.relu(self.FFN_pre(out1))
            ffn_out = self.FFN_suf(ffn_out)
            ffn_out = self.dropout2(ffn_out)
            out2 = self.layernorm2(out1 + ffn_out)
            return out2, w

    class MusicTransformer(nn.Module):
        def __init__(self, embedding_dim=8, vocab_size=11, num_layer=2, max_seq=6, dropout=0.0):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embedding_dim)
            self.layers = nn.ModuleList([DecoderLayer(embedding_dim, dropout, h, max_seq=max_seq)
                                         for _ in range(num_layer)])
            self.fc = nn.Linear(embedding_dim, vocab_size)
            self.d_model = embedding_dim

        def forward(self, x, length=None):
            look_ahead_mask = torch.triu(torch.ones(x.size(1), x.size(1)), diagonal=1)[None, None]
            pad_mask = (x == pad)[:, None, None, :]
            mask = torch.maximum(look_ahead_mask, pad_mask.float())
            x = self.embedding(x.to(torch.long))
            x *= math.sqrt(self.d_model)
            weights = []
            for layer in self.layers:
                x, w = layer(x, mask)
                weights.append(w)
            return self.fc(x), weights

    mt = MusicTransformer()
    with torch.no_grad():  # the source draws E by torch.randn; here numpy's draw for both libraries
        for layer in mt.layers:
            layer.rga.E.copy_(torch.from_numpy(normal(rng, max_seq, d // h)))
    init = load(m, mt, state)
    opt = torch.optim.Adam(mt.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    warmup = 4
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: d ** -0.5 * min((step + 1) ** -0.5, (step + 1) * warmup ** -1.5))
    criterion = nn.CrossEntropyLoss(ignore_index=pad, label_smoothing=0.1)
    losses = []
    for step in range(2):
        seq = rng.integers(1, vocab, (3, max_seq + 1))
        seq[0, 5:] = pad
        seq[2, 3:] = pad
        x, y = torch.from_numpy(seq[:, :-1]), torch.from_numpy(seq[:, 1:])
        mt.train()
        opt.zero_grad()
        sample, w = mt(x)
        loss = criterion(sample.view(-1, sample.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        scheduler.step()
        acc = (sample.argmax(-1) == y).masked_select(y != pad).float().mean()
        losses += [loss.item(), acc.item(), scheduler.get_last_lr()[0], w[-1].sum().item()]
    # the key bias has no gradient but rounding's (softmax ignores a shift of a query's logits), which Adam's eps of
    # 1e-9 turns into steps of lr: its sum is noise in either library
    return init, losses + summary(p for n, p in mt.named_parameters() if not n.endswith("Wk.bias"))


def test_music_transformer():
    compare(music_transformer)


# (q) tianzhi0549/FCOS (fcos_core/modeling/rpn/fcos/loss.py's FCOSLossComputation with prepare_targets,
# compute_targets_for_locations and compute_centerness_targets; iou_loss.py's IOULoss('giou'); sigmoid_focal_loss's
# pure-PyTorch form; inference.py's compute_locations and Scale): locations by torch.meshgrid of arange strides,
# l/t/r/b by xs[:, None] - bboxes[:, 0][None] stacked on dim 2, is_in_boxes by .min(dim=2)[0] > 0, areas set to INF
# by areas[is_in_boxes == 0] = INF, the gt per location by .min(dim=1), labels[locations_to_min_area == INF] = 0,
# positives by torch.nonzero(labels > 0).squeeze(1), per-level splits by torch.split and cat, exp(Scale * x)
def fcos_loss(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(17)
    INF = 100000000
    num_classes, fpn_strides = 3, [4, 8]

    def sigmoid_focal_loss_cpu(logits, targets, gamma, alpha):
        num_classes = logits.shape[1]
        dtype = targets.dtype
        device = targets.device
        class_range = torch.arange(1, num_classes + 1, dtype=dtype, device=device).unsqueeze(0)
        t = targets.unsqueeze(1)
        p = torch.sigmoid(logits)
        term1 = (1 - p) ** gamma * torch.log(p)
        term2 = p ** gamma * torch.log(1 - p)
        return -(t == class_range).float() * term1 * alpha - ((t != class_range) * (t >= 0)).float() * term2 * (
            1 - alpha)

    class IOULoss(nn.Module):
        def __init__(self, loss_type="iou"):
            super(IOULoss, self).__init__()
            self.loss_type = loss_type

        def forward(self, pred, target, weight=None):
            pred_left = pred[:, 0]
            pred_top = pred[:, 1]
            pred_right = pred[:, 2]
            pred_bottom = pred[:, 3]
            target_left = target[:, 0]
            target_top = target[:, 1]
            target_right = target[:, 2]
            target_bottom = target[:, 3]
            target_aera = (target_left + target_right) * (target_top + target_bottom)
            pred_aera = (pred_left + pred_right) * (pred_top + pred_bottom)
            w_intersect = torch.min(pred_left, target_left) + torch.min(pred_right, target_right)
            h_intersect = torch.min(pred_bottom, target_bottom) + torch.min(pred_top, target_top)
            g_w_intersect = torch.max(pred_left, target_left) + torch.max(pred_right, target_right)
            g_h_intersect = torch.max(pred_bottom, target_bottom) + torch.max(pred_top, target_top)
            ac_uion = g_w_intersect * g_h_intersect + 1e-7
            area_intersect = w_intersect * h_intersect
            area_union = target_aera + pred_aera - area_intersect
            ious = (area_intersect + 1.0) / (area_union + 1.0)
            gious = ious - (ac_uion - area_union) / ac_uion
            if self.loss_type == 'iou':
                losses = -torch.log(ious)
            elif self.loss_type == 'linear_iou':
                losses = 1 - ious
            elif self.loss_type == 'giou':
                losses = 1 - gious
            else:
                raise NotImplementedError
            if weight is not None and weight.sum() > 0:
                return (losses * weight).sum()
            else:
                assert losses.numel() != 0
                return losses.sum()

    class Scale(nn.Module):
        def __init__(self, init_value=1.0):
            super(Scale, self).__init__()
            self.scale = nn.Parameter(torch.FloatTensor([init_value]))

        def forward(self, input):
            return input * self.scale

    class FCOSHead(nn.Module):
        def __init__(self, in_channels=4):
            super().__init__()
            self.cls_tower = nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1),
                                           nn.GroupNorm(2, in_channels), nn.ReLU())
            self.cls_logits = nn.Conv2d(in_channels, num_classes, 3, padding=1)
            self.bbox_pred = nn.Conv2d(in_channels, 4, 3, padding=1)
            self.centerness = nn.Conv2d(in_channels, 1, 3, padding=1)
            for modules in [self.cls_tower, self.cls_logits, self.bbox_pred, self.centerness]:
                for l in modules.modules():
                    if isinstance(l, nn.Conv2d):
                        torch.nn.init.normal_(l.weight, std=0.01)
                        torch.nn.init.constant_(l.bias, 0)
            prior_prob = 0.01
            bias_value = -math.log((1 - prior_prob) / prior_prob)
            torch.nn.init.constant_(self.cls_logits.bias, bias_value)
            self.scales = nn.ModuleList([Scale(init_value=1.0) for _ in range(2)])

        def forward(self, x):
            logits, bbox_reg, centerness = [], [], []
            for l, feature in enumerate(x):
                cls_tower = self.cls_tower(feature)
                logits.append(self.cls_logits(cls_tower))
                centerness.append(self.centerness(cls_tower))
                bbox_reg.append(torch.exp(self.scales[l](self.bbox_pred(feature))))
            return logits, bbox_reg, centerness

    def compute_locations_per_level(h, w, stride, device):
        shifts_x = torch.arange(0, w * stride, step=stride, dtype=torch.float32, device=device)
        shifts_y = torch.arange(0, h * stride, step=stride, dtype=torch.float32, device=device)
        shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
        shift_x = shift_x.reshape(-1)
        shift_y = shift_y.reshape(-1)
        locations = torch.stack((shift_x, shift_y), dim=1) + stride // 2
        return locations

    def compute_locations(features):
        locations = []
        for level, feature in enumerate(features):
            h, w = feature.size()[-2:]
            locations.append(compute_locations_per_level(h, w, fpn_strides[level], feature.device))
        return locations

    class FCOSLossComputation(object):
        def __init__(self):
            self.cls_loss_func = lambda logits, targets: sigmoid_focal_loss_cpu(logits, targets, 2.0, 0.25).sum()
            self.box_reg_loss_func = IOULoss("giou")
            self.centerness_loss_func = nn.BCEWithLogitsLoss(reduction="sum")

        def prepare_targets(self, points, targets):
            object_sizes_of_interest = [[-1, 12], [12, INF]]
            expanded_object_sizes_of_interest = []
            for l, points_per_level in enumerate(points):
                object_sizes_of_interest_per_level = points_per_level.new_tensor(object_sizes_of_interest[l])
                expanded_object_sizes_of_interest.append(
                    object_sizes_of_interest_per_level[None].expand(len(points_per_level), -1))
            expanded_object_sizes_of_interest = torch.cat(expanded_object_sizes_of_interest, dim=0)
            num_points_per_level = [len(points_per_level) for points_per_level in points]
            points_all_level = torch.cat(points, dim=0)
            labels, reg_targets = self.compute_targets_for_locations(points_all_level, targets,
                                                                     expanded_object_sizes_of_interest)
            for i in range(len(labels)):
                labels[i] = torch.split(labels[i], num_points_per_level, dim=0)
                reg_targets[i] = torch.split(reg_targets[i], num_points_per_level, dim=0)
            labels_level_first = []
            reg_targets_level_first = []
            for level in range(len(points)):
                labels_level_first.append(torch.cat([labels_per_im[level] for labels_per_im in labels], dim=0))
                reg_targets_level_first.append(
                    torch.cat([reg_targets_per_im[level] for reg_targets_per_im in reg_targets], dim=0))
            return labels_level_first, reg_targets_level_first

        def compute_targets_for_locations(self, locations, targets, object_sizes_of_interest):
            labels = []
            reg_targets = []
            xs, ys = locations[:, 0], locations[:, 1]
            for im_i in range(len(targets)):
                bboxes, labels_per_im = targets[im_i]
                area = (bboxes[:, 2] - bboxes[:, 0]) * (bboxes[:, 3] - bboxes[:, 1])
                l = xs[:, None] - bboxes[:, 0][None]
                t = ys[:, None] - bboxes[:, 1][None]
                r = bboxes[:, 2][None] - xs[:, None]
                b = bboxes[:, 3][None] - ys[:, None]
                reg_targets_per_im = torch.stack([l, t, r, b], dim=2)
                is_in_boxes = reg_targets_per_im.min(dim=2)[0] > 0
                max_reg_targets_per_im = reg_targets_per_im.max(dim=2)[0]
                is_cared_in_the_level = (max_reg_targets_per_im >= object_sizes_of_interest[:, [0]]) & \
                                        (max_reg_targets_per_im <= object_sizes_of_interest[:, [1]])
                locations_to_gt_area = area[None].repeat(len(locations), 1)
                locations_to_gt_area[is_in_boxes == 0] = INF
                locations_to_gt_area[is_cared_in_the_level == 0] = INF
                locations_to_min_area, locations_to_gt_inds = locations_to_gt_area.min(dim=1)
                reg_targets_per_im = reg_targets_per_im[range(len(locations)), locations_to_gt_inds]
                labels_per_im = labels_per_im[locations_to_gt_inds]
                labels_per_im[locations_to_min_area == INF] = 0
                labels.append(labels_per_im)
                reg_targets.append(reg_targets_per_im)
            return labels, reg_targets

        def compute_centerness_targets(self, reg_targets):
            left_right = reg_targets[:, [0, 2]]
            top_bottom = reg_targets[:, [1, 3]]
            centerness = (left_right.min(dim=-1)[0] / left_right.max(dim=-1)[0]) * \
                         (top_bottom.min(dim=-1)[0] / top_bottom.max(dim=-1)[0])
            return torch.sqrt(centerness)

        def __call__(self, locations, box_cls, box_regression, centerness, targets):
            N = box_cls[0].size(0)
            num_classes = box_cls[0].size(1)
            labels, reg_targets = self.prepare_targets(locations, targets)
            box_cls_flatten = []
            box_regression_flatten = []
            centerness_flatten = []
            labels_flatten = []
            reg_targets_flatten = []
            for l in range(len(labels)):
                box_cls_flatten.append(box_cls[l].permute(0, 2, 3, 1).reshape(-1, num_classes))
                box_regression_flatten.append(box_regression[l].permute(0, 2, 3, 1).reshape(-1, 4))
                labels_flatten.append(labels[l].reshape(-1))
                reg_targets_flatten.append(reg_targets[l].reshape(-1, 4))
                centerness_flatten.append(centerness[l].reshape(-1))
            box_cls_flatten = torch.cat(box_cls_flatten, dim=0)
            box_regression_flatten = torch.cat(box_regression_flatten, dim=0)
            centerness_flatten = torch.cat(centerness_flatten, dim=0)
            labels_flatten = torch.cat(labels_flatten, dim=0)
            reg_targets_flatten = torch.cat(reg_targets_flatten, dim=0)
            pos_inds = torch.nonzero(labels_flatten > 0).squeeze(1)
            cls_loss = self.cls_loss_func(box_cls_flatten, labels_flatten.int()) / (pos_inds.numel() + N)
            box_regression_flatten = box_regression_flatten[pos_inds]
            reg_targets_flatten = reg_targets_flatten[pos_inds]
            centerness_flatten = centerness_flatten[pos_inds]
            if pos_inds.numel() > 0:
                centerness_targets = self.compute_centerness_targets(reg_targets_flatten)
                reg_loss = self.box_reg_loss_func(box_regression_flatten, reg_targets_flatten, centerness_targets)
                centerness_loss = self.centerness_loss_func(centerness_flatten, centerness_targets)
            else:
                reg_loss = box_regression_flatten.sum()
                centerness_loss = centerness_flatten.sum()
            return cls_loss, reg_loss, centerness_loss

    head = FCOSHead()
    init = load(m, head, state)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_evaluator = FCOSLossComputation()
    losses = []
    for step in range(2):
        features = [torch.from_numpy(normal(rng, 2, 4, 6, 6)), torch.from_numpy(normal(rng, 2, 4, 3, 3))]
        targets = []
        for i in range(2):
            xy = rng.uniform(0, 14, (2, 2))
            wh = rng.uniform(4, 16, (2, 2))
            boxes = np.concatenate([xy, xy + wh], 1).astype(np.float32)
            targets.append((torch.from_numpy(boxes), torch.from_numpy(rng.integers(1, num_classes + 1, 2))))
        box_cls, box_regression, centerness = head(features)
        locations = compute_locations(box_cls)
        loss_box_cls, loss_box_reg, loss_centerness = loss_evaluator(locations, box_cls, box_regression, centerness,
                                                                     targets)
        loss_dict = {"loss_cls": loss_box_cls, "loss_reg": loss_box_reg, "loss_centerness": loss_centerness}
        losses_ = sum(loss for loss in loss_dict.values())
        optimizer.zero_grad()
        losses_.backward()
        optimizer.step()
        losses += [v.item() for v in loss_dict.values()]
    return init, losses + summary(head.parameters())


def test_fcos_loss():
    compare(fcos_loss)


# (r) Alexander-H-Liu/End-to-end-ASR-Pytorch and the SpecAugment papers' masking (its Listener's pyramidal BLSTM, its
# Speller's location-free attention with teacher forcing, its time and frequency masks): masks written by
# spec[:, f0:f0 + f, :] = 0 on a clone with numpy-drawn widths, padded frames zeroed by arange < lengths; the pyramid
# by x[:, :T - T % 2].contiguous().view(B, T // 2, 2 * D) and lengths // 2; energies by torch.bmm with an unsqueezed
# decoder state, masked_fill(~mask, -float("inf")) then softmax; an LSTMCell decoder fed by torch.cat of the previous
# embedding and context, teacher forcing by a numpy coin, per-step logits stacked on dim 1; CE with ignore_index
def las_specaugment(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(18)
    n_mels, hid, vocab, pad, sos = 6, 4, 7, 0, 1

    def spec_augment(spec, lengths, F_=2, T_=3, num_freq=1, num_time=1):
        spec = spec.clone()
        B, T, D = spec.shape
        for b in range(B):
            for _ in range(num_freq):
                f = int(rng.integers(0, F_ + 1))
                f0 = int(rng.integers(0, D - f + 1))
                spec[b, :, f0:f0 + f] = 0
            for _ in range(num_time):
                t = int(rng.integers(0, T_ + 1))
                t0 = int(rng.integers(0, max(1, int(lengths[b]) - t)))
                spec[b, t0:t0 + t, :] = 0
        mask = torch.arange(T)[None, :] < lengths[:, None]
        return spec * mask.unsqueeze(-1).float()

    class pBLSTMLayer(nn.Module):
        def __init__(self, input_dim, hidden_dim):
            super().__init__()
            self.layer = nn.LSTM(input_dim * 2, hidden_dim, bidirectional=True, batch_first=True)

        def forward(self, x, x_len):
            B, T, D = x.shape
            x = x[:, :T - T % 2].contiguous().view(B, T // 2, 2 * D)
            x_len = x_len // 2
            packed = nn.utils.rnn.pack_padded_sequence(x, x_len.cpu(), batch_first=True, enforce_sorted=False)
            out, _ = self.layer(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T // 2)
            return out, x_len

    class Listener(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([pBLSTMLayer(n_mels, hid), pBLSTMLayer(2 * hid, hid)])

        def forward(self, x, x_len):
            for layer in self.layers:
                x, x_len = layer(x, x_len)
            return x, x_len

    class Speller(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, hid)
            self.cell = nn.LSTMCell(hid + 2 * hid, 2 * hid)
            self.query = nn.Linear(2 * hid, 2 * hid)
            self.out = nn.Linear(4 * hid, vocab)

        def forward(self, enc, enc_len, y, tf_rate=1.0):
            B, L = y.shape
            mask = torch.arange(enc.size(1))[None, :] < enc_len[:, None]
            h = enc.new_zeros(B, 2 * hid)
            c = enc.new_zeros(B, 2 * hid)
            context = enc.new_zeros(B, 2 * hid)
            prev = torch.full((B,), sos, dtype=torch.long)
            logits, attns = [], []
            for t in range(L):
                h, c = self.cell(torch.cat([self.emb(prev), context], dim=-1), (h, c))
                energy = torch.bmm(enc, self.query(h).unsqueeze(2)).squeeze(2)
                energy = energy.masked_fill(~mask, -float("inf"))
                attn = F.softmax(energy, dim=-1)
                context = torch.bmm(attn.unsqueeze(1), enc).squeeze(1)
                logit = self.out(torch.cat([h, context], dim=-1))
                logits.append(logit)
                attns.append(attn)
                if rng.random() < tf_rate:
                    prev = y[:, t]
                else:
                    prev = logit.argmax(-1)
            return torch.stack(logits, dim=1), torch.stack(attns, dim=1)

    listener, speller = Listener(), Speller()
    model = nn.ModuleDict({"listener": listener, "speller": speller})
    init = load(m, model, state)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0, eps=1e-8)
    criterion = nn.CrossEntropyLoss(ignore_index=pad)
    losses = []
    for step, tf_rate in enumerate([1.0, 0.5]):
        lengths = torch.from_numpy(np.array([8, 5, 7]))
        spec = torch.from_numpy(normal(rng, 3, 8, n_mels))
        y = rng.integers(2, vocab, (3, 4))
        y[1, 2:] = pad
        y = torch.from_numpy(y)
        x = spec_augment(spec, lengths)
        enc, enc_len = listener(x, lengths)
        logits, attns = speller(enc, enc_len, y, tf_rate)
        loss = criterion(logits.reshape(-1, vocab), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        if math.isnan(grad_norm):
            print("Error : grad norm is NaN")
        else:
            optimizer.step()
        losses += [loss.item(), float(grad_norm), attns.sum().item(), float(enc_len.sum())]
    return init, losses + summary(model.parameters())


def test_las_specaugment():
    compare(las_specaugment)


# (s) fundamentalvision/Deformable-DETR (models/ops/functions/ms_deform_attn_func.py's ms_deform_attn_core_pytorch,
# models/ops/modules/ms_deform_attn.py's MSDeformAttn with its _reset_parameters, deformable_transformer.py's
# get_reference_points and get_valid_ratio): values split per level by value.split([H_ * W_ ...], dim=1), sampling
# locations 2 * loc - 1 into F.grid_sample(..., padding_mode='zeros', align_corners=False), torch.stack(..., dim=-2)
# .flatten(-2) weighted and summed, offsets' bias initialised from a grid of thetas by torch.stack([cos, sin]) / abs
# .max(-1, keepdim=True)[0] and .repeat, reference points by torch.meshgrid(torch.linspace(0.5, H - 0.5, H), ...)
# over valid ratios, attention weights by softmax over levels x points then view
def deformable_attention(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    xavier_uniform_, constant_ = nn.init.xavier_uniform_, nn.init.constant_  # from torch.nn.init import ...
    torch.manual_seed(0)
    rng = np.random.default_rng(19)
    d_model, n_levels, n_heads, n_points = 8, 2, 2, 2
    shapes = [(4, 4), (2, 2)]

    def ms_deform_attn_core_pytorch(value, value_spatial_shapes, sampling_locations, attention_weights):
        N_, S_, M_, D_ = value.shape
        _, Lq_, M_, L_, P_, _ = sampling_locations.shape
        value_list = value.split([H_ * W_ for H_, W_ in value_spatial_shapes], dim=1)
        sampling_grids = 2 * sampling_locations - 1
        sampling_value_list = []
        for lid_, (H_, W_) in enumerate(value_spatial_shapes):
            value_l_ = value_list[lid_].flatten(2).transpose(1, 2).reshape(N_ * M_, D_, H_, W_)
            sampling_grid_l_ = sampling_grids[:, :, :, lid_].transpose(1, 2).flatten(0, 1)
            sampling_value_l_ = F.grid_sample(value_l_, sampling_grid_l_, mode='bilinear', padding_mode='zeros',
                                              align_corners=False)
            sampling_value_list.append(sampling_value_l_)
        attention_weights = attention_weights.transpose(1, 2).reshape(N_ * M_, 1, Lq_, L_ * P_)
        output = (torch.stack(sampling_value_list, dim=-2).flatten(-2) * attention_weights).sum(-1).view(N_, M_ * D_,
                                                                                                         Lq_)
        return output.transpose(1, 2).contiguous()

    class MSDeformAttn(nn.Module):
        def __init__(self, d_model=256, n_levels=4, n_heads=8, n_points=4):
            super().__init__()
            if d_model % n_heads != 0:
                raise ValueError('d_model must be divisible by n_heads, but got {} and {}'.format(d_model, n_heads))
            self.im2col_step = 64
            self.d_model = d_model
            self.n_levels = n_levels
            self.n_heads = n_heads
            self.n_points = n_points
            self.sampling_offsets = nn.Linear(d_model, n_heads * n_levels * n_points * 2)
            self.attention_weights = nn.Linear(d_model, n_heads * n_levels * n_points)
            self.value_proj = nn.Linear(d_model, d_model)
            self.output_proj = nn.Linear(d_model, d_model)
            self._reset_parameters()

        def _reset_parameters(self):
            constant_(self.sampling_offsets.weight.data, 0.)
            thetas = torch.arange(self.n_heads, dtype=torch.float32) * (2.0 * math.pi / self.n_heads)
            grid_init = torch.stack([thetas.cos(), thetas.sin()], -1)
            grid_init = (grid_init / grid_init.abs().max(-1, keepdim=True)[0]).view(self.n_heads, 1, 1, 2).repeat(
                1, self.n_levels, self.n_points, 1)
            for i in range(self.n_points):
                grid_init[:, :, i, :] *= i + 1
            with torch.no_grad():
                self.sampling_offsets.bias = nn.Parameter(grid_init.view(-1))
            constant_(self.attention_weights.weight.data, 0.)
            constant_(self.attention_weights.bias.data, 0.)
            xavier_uniform_(self.value_proj.weight.data)
            constant_(self.value_proj.bias.data, 0.)
            xavier_uniform_(self.output_proj.weight.data)
            constant_(self.output_proj.bias.data, 0.)

        def forward(self, query, reference_points, input_flatten, input_spatial_shapes, input_level_start_index,
                    input_padding_mask=None):
            N, Len_q, _ = query.shape
            N, Len_in, _ = input_flatten.shape
            assert (input_spatial_shapes[:, 0] * input_spatial_shapes[:, 1]).sum() == Len_in
            value = self.value_proj(input_flatten)
            if input_padding_mask is not None:
                value = value.masked_fill(input_padding_mask[..., None], float(0))
            value = value.view(N, Len_in, self.n_heads, self.d_model // self.n_heads)
            sampling_offsets = self.sampling_offsets(query).view(N, Len_q, self.n_heads, self.n_levels, self.n_points,
                                                                 2)
            attention_weights = self.attention_weights(query).view(N, Len_q, self.n_heads,
                                                                   self.n_levels * self.n_points)
            attention_weights = F.softmax(attention_weights, -1).view(N, Len_q, self.n_heads, self.n_levels,
                                                                      self.n_points)
            if reference_points.shape[-1] == 2:
                offset_normalizer = torch.stack([input_spatial_shapes[..., 1], input_spatial_shapes[..., 0]], -1)
                sampling_locations = reference_points[:, :, None, :, None, :] \
                    + sampling_offsets / offset_normalizer[None, None, None, :, None, :]
            else:
                raise ValueError('Last dim of reference_points must be 2 or 4, but get {} instead.'.format(
                    reference_points.shape[-1]))
            output = ms_deform_attn_core_pytorch(value, input_spatial_shapes.tolist(), sampling_locations,
                                                 attention_weights)
            output = self.output_proj(output)
            return output

    def get_reference_points(spatial_shapes, valid_ratios, device):
        reference_points_list = []
        for lvl, (H_, W_) in enumerate(spatial_shapes):
            ref_y, ref_x = torch.meshgrid(torch.linspace(0.5, H_ - 0.5, H_, dtype=torch.float32, device=device),
                                          torch.linspace(0.5, W_ - 0.5, W_, dtype=torch.float32, device=device),
                                          indexing="ij")
            ref_y = ref_y.reshape(-1)[None] / (valid_ratios[:, None, lvl, 1] * H_)
            ref_x = ref_x.reshape(-1)[None] / (valid_ratios[:, None, lvl, 0] * W_)
            ref = torch.stack((ref_x, ref_y), -1)
            reference_points_list.append(ref)
        reference_points = torch.cat(reference_points_list, 1)
        reference_points = reference_points[:, :, None] * valid_ratios[:, None]
        return reference_points

    def get_valid_ratio(mask):
        _, H, W = mask.shape
        valid_H = torch.sum(~mask[:, :, 0], 1)
        valid_W = torch.sum(~mask[:, 0, :], 1)
        valid_ratio_h = valid_H.float() / H
        valid_ratio_w = valid_W.float() / W
        valid_ratio = torch.stack([valid_ratio_w, valid_ratio_h], -1)
        return valid_ratio

    class EncoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn = MSDeformAttn(d_model, n_levels, n_heads, n_points)
            self.norm1 = nn.LayerNorm(d_model)
            self.linear1 = nn.Linear(d_model, 16)
            self.linear2 = nn.Linear(16, d_model)
            self.norm2 = nn.LayerNorm(d_model)

        @staticmethod
        def with_pos_embed(tensor, pos):
            return tensor if pos is None else tensor + pos

        def forward(self, src, pos, reference_points, spatial_shapes, level_start_index, padding_mask=None):
            src2 = self.self_attn(self.with_pos_embed(src, pos), reference_points, src, spatial_shapes,
                                  level_start_index, padding_mask)
            src = self.norm1(src + src2)
            src = self.norm2(src + self.linear2(F.relu(self.linear1(src))))
            return src

    layer = EncoderLayer()
    head = nn.Linear(d_model, 3)
    level_embed = nn.Parameter(torch.Tensor(n_levels, d_model))
    nn.init.normal_(level_embed)
    model = nn.ModuleDict({"layer": layer, "head": head})
    model.register_parameter("level_embed", level_embed)
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    losses = []
    for step in range(2):
        srcs = [torch.from_numpy(normal(rng, 2, d_model, h, w)) for h, w in shapes]
        masks = []
        for h, w in shapes:
            mask = np.zeros((2, h, w), bool)
            mask[1, :, w // 2:] = True  # the second image padded on the right
            masks.append(torch.from_numpy(mask))
        src_flatten, mask_flatten, lvl_pos_embed_flatten, spatial_shapes = [], [], [], []
        for lvl, (src, mask) in enumerate(zip(srcs, masks)):
            bs, c, h, w = src.shape
            spatial_shapes.append((h, w))
            src = src.flatten(2).transpose(1, 2)
            mask = mask.flatten(1)
            lvl_pos_embed = model.level_embed[lvl].view(1, 1, -1)
            lvl_pos_embed_flatten.append(lvl_pos_embed.expand(bs, h * w, -1))
            src_flatten.append(src)
            mask_flatten.append(mask)
        src_flatten = torch.cat(src_flatten, 1)
        mask_flatten = torch.cat(mask_flatten, 1)
        lvl_pos_embed_flatten = torch.cat(lvl_pos_embed_flatten, 1)
        spatial_shapes = torch.as_tensor(spatial_shapes, dtype=torch.long, device=src_flatten.device)
        level_start_index = torch.cat((spatial_shapes.new_zeros((1,)), spatial_shapes.prod(1).cumsum(0)[:-1]))
        valid_ratios = torch.stack([get_valid_ratio(mk) for mk in masks], 1)
        reference_points = get_reference_points(shapes, valid_ratios, device=src_flatten.device)
        memory = layer(src_flatten, lvl_pos_embed_flatten, reference_points, spatial_shapes, level_start_index,
                       mask_flatten)
        logits = head(memory[~mask_flatten])
        labels = torch.from_numpy(rng.integers(0, 3, logits.shape[0]))
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), valid_ratios.sum().item(), float(level_start_index[-1])]
    return init, losses + summary(model.parameters())


def test_deformable_attention():
    compare(deformable_attention)


# (t) microsoft/Swin-Transformer's Swin V2 WindowAttention (models/swin_transformer_v2.py): the continuous position
# bias's log-spaced table by torch.sign(t) * torch.log2(torch.abs(t) + 1.0) / np.log2(8) from a stacked meshgrid,
# the cpb_mlp's output indexed by a relative_position_index buffer registered with persistent=False, 16 *
# torch.sigmoid of it; cosine attention by F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1) scaled by
# torch.clamp(self.logit_scale, max=torch.log(torch.tensor(1. / 0.01))).exp(); q and v biases joined with a zeros_like
# k bias by torch.cat and F.linear; window partition by view/permute and a shifted window's torch.roll mask
def swin_v2_attention(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(20)
    dim, num_heads, ws = 8, 2, 2

    def window_partition(x, window_size):
        B, H, W, C = x.shape
        x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
        windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)
        return windows

    def window_reverse(windows, window_size, H, W):
        B = int(windows.shape[0] / (H * W / window_size / window_size))
        x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
        x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)
        return x

    class WindowAttention(nn.Module):
        def __init__(self, dim, window_size, num_heads, qkv_bias=True, attn_drop=0., proj_drop=0.,
                     pretrained_window_size=[0, 0]):
            super().__init__()
            self.dim = dim
            self.window_size = window_size
            self.pretrained_window_size = pretrained_window_size
            self.num_heads = num_heads
            self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((num_heads, 1, 1))), requires_grad=True)
            self.cpb_mlp = nn.Sequential(nn.Linear(2, 16, bias=True), nn.ReLU(inplace=True),
                                         nn.Linear(16, num_heads, bias=False))
            relative_coords_h = torch.arange(-(self.window_size[0] - 1), self.window_size[0], dtype=torch.float32)
            relative_coords_w = torch.arange(-(self.window_size[1] - 1), self.window_size[1], dtype=torch.float32)
            relative_coords_table = torch.stack(
                torch.meshgrid([relative_coords_h, relative_coords_w], indexing="ij")).permute(1, 2, 0).contiguous(
            ).unsqueeze(0)
            if pretrained_window_size[0] > 0:
                relative_coords_table[:, :, :, 0] /= (pretrained_window_size[0] - 1)
                relative_coords_table[:, :, :, 1] /= (pretrained_window_size[1] - 1)
            else:
                relative_coords_table[:, :, :, 0] /= (self.window_size[0] - 1)
                relative_coords_table[:, :, :, 1] /= (self.window_size[1] - 1)
            relative_coords_table *= 8
            relative_coords_table = torch.sign(relative_coords_table) * torch.log2(
                torch.abs(relative_coords_table) + 1.0) / np.log2(8)
            self.register_buffer("relative_coords_table", relative_coords_table, persistent=False)
            coords_h = torch.arange(self.window_size[0])
            coords_w = torch.arange(self.window_size[1])
            coords = torch.stack(torch.meshgrid([coords_h, coords_w], indexing="ij"))
            coords_flatten = torch.flatten(coords, 1)
            relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
            relative_coords = relative_coords.permute(1, 2, 0).contiguous()
            relative_coords[:, :, 0] += self.window_size[0] - 1
            relative_coords[:, :, 1] += self.window_size[1] - 1
            relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
            relative_position_index = relative_coords.sum(-1)
            self.register_buffer("relative_position_index", relative_position_index, persistent=False)
            self.qkv = nn.Linear(dim, dim * 3, bias=False)
            if qkv_bias:
                self.q_bias = nn.Parameter(torch.zeros(dim))
                self.v_bias = nn.Parameter(torch.zeros(dim))
            else:
                self.q_bias = None
                self.v_bias = None
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, x, mask=None):
            B_, N, C = x.shape
            qkv_bias = None
            if self.q_bias is not None:
                qkv_bias = torch.cat((self.q_bias, torch.zeros_like(self.v_bias, requires_grad=False), self.v_bias))
            qkv = F.linear(input=x, weight=self.qkv.weight, bias=qkv_bias)
            qkv = qkv.reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1))
            logit_scale = torch.clamp(self.logit_scale, max=torch.log(torch.tensor(1. / 0.01))).exp()
            attn = attn * logit_scale
            relative_position_bias_table = self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads)
            relative_position_bias = relative_position_bias_table[self.relative_position_index.view(-1)].view(
                self.window_size[0] * self.window_size[1], self.window_size[0] * self.window_size[1], -1)
            relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()
            relative_position_bias = 16 * torch.sigmoid(relative_position_bias)
            attn = attn + relative_position_bias.unsqueeze(0)
            if mask is not None:
                nW = mask.shape[0]
                attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
                attn = attn.view(-1, self.num_heads, N, N)
                attn = self.softmax(attn)
            else:
                attn = self.softmax(attn)
            attn = self.attn_drop(attn)
            x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
            x = self.proj(x)
            x = self.proj_drop(x)
            return x

    class SwinTransformerBlock(nn.Module):
        def __init__(self, dim, input_resolution, num_heads, window_size=2, shift_size=0):
            super().__init__()
            self.input_resolution = input_resolution
            self.window_size = window_size
            self.shift_size = shift_size
            self.norm1 = nn.LayerNorm(dim)
            self.attn = WindowAttention(dim, window_size=(window_size, window_size), num_heads=num_heads)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
            if self.shift_size > 0:
                H, W = self.input_resolution
                img_mask = torch.zeros((1, H, W, 1))
                h_slices = (slice(0, -self.window_size), slice(-self.window_size, -self.shift_size),
                            slice(-self.shift_size, None))
                w_slices = (slice(0, -self.window_size), slice(-self.window_size, -self.shift_size),
                            slice(-self.shift_size, None))
                cnt = 0
                for h in h_slices:
                    for w in w_slices:
                        img_mask[:, h, w, :] = cnt
                        cnt += 1
                mask_windows = window_partition(img_mask, self.window_size)
                mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
                attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
                attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))
            else:
                attn_mask = None
            self.register_buffer("attn_mask", attn_mask)

        def forward(self, x):
            H, W = self.input_resolution
            B, L, C = x.shape
            shortcut = x
            x = x.view(B, H, W, C)
            if self.shift_size > 0:
                shifted_x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
            else:
                shifted_x = x
            x_windows = window_partition(shifted_x, self.window_size)
            x_windows = x_windows.view(-1, self.window_size * self.window_size, C)
            attn_windows = self.attn(x_windows, mask=self.attn_mask)
            attn_windows = attn_windows.view(-1, self.window_size, self.window_size, C)
            shifted_x = window_reverse(attn_windows, self.window_size, H, W)
            if self.shift_size > 0:
                x = torch.roll(shifted_x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
            else:
                x = shifted_x
            x = x.view(B, H * W, C)
            x = shortcut + self.norm1(x)  # Swin V2's res-post-norm
            x = x + self.norm2(self.mlp(x))
            return x

    blocks = nn.Sequential(SwinTransformerBlock(dim, (4, 4), num_heads, ws, 0),
                           SwinTransformerBlock(dim, (4, 4), num_heads, ws, 1))
    head = nn.Linear(dim, 5)
    model = nn.Sequential(OrderedDict([("blocks", blocks), ("head", head)]))
    assert "blocks.0.attn.relative_position_index" not in model.state_dict()
    init = load(m, model, state)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim <= 1 or name.endswith("logit_scale") or "cpb_mlp" in name else decay).append(p)
    optimizer = torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.}], lr=2e-3,
                                  weight_decay=0.05)
    losses = []
    for step in range(2):
        x = torch.from_numpy(normal(rng, 2, 16, dim))
        y = torch.from_numpy(rng.integers(0, 5, 2))
        out = model.head(model.blocks(x).mean(1))
        loss = nn.CrossEntropyLoss(label_smoothing=0.1)(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    return init, losses + summary(model.parameters())


def test_swin_v2_attention():
    compare(swin_v2_attention)


# (u) rwightman's timm machinery around a ViT (timm/models/_registry.py's register_model and create_model,
# vision_transformer.py's checkpoint_filter_fn and resize_pos_embed, _manipulate.py's named_apply, the fine-tuning
# recipe of loading with strict=False and re-initialising the head): models registered in a dict by a decorator,
# a checkpoint's keys remapped and its position embedding resized to a new grid by F.interpolate(mode='bicubic',
# align_corners=False) after reshape/permute, load_state_dict's (missing_keys, unexpected_keys) result, named_apply
# visiting modules depth-first with their names, trunc_normal_ and zeros_ by name, layer-wise lr decay groups
def timm_finetune(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(21)
    _model_entrypoints = {}

    def register_model(fn):
        _model_entrypoints[fn.__name__] = fn
        return fn

    def create_model(model_name, pretrained=False, **kwargs):
        return _model_entrypoints[model_name](pretrained=pretrained, **kwargs)

    def named_apply(fn, module, name='', depth_first=True, include_root=False):
        if not depth_first and include_root:
            fn(module=module, name=name)
        for child_name, child_module in module.named_children():
            child_name = '.'.join((name, child_name)) if name else child_name
            named_apply(fn=fn, module=child_module, name=child_name, depth_first=depth_first, include_root=True)
        if depth_first and include_root:
            fn(module=module, name=name)
        return module

    def init_weights_vit_timm(module, name=''):
        if isinstance(module, nn.Linear):
            nn.init.trunc_normal_(module.weight, std=.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    class Block(nn.Module):
        def __init__(self, dim, num_heads):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(OrderedDict([("fc1", nn.Linear(dim, 2 * dim)), ("act", nn.GELU()),
                                                  ("fc2", nn.Linear(2 * dim, dim))]))

        def forward(self, x):
            h = self.norm1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.norm2(x))

    class VisionTransformer(nn.Module):
        def __init__(self, img_size=8, patch_size=4, num_classes=10, embed_dim=8, depth=2, num_heads=2):
            super().__init__()
            self.num_classes = num_classes
            self.patch_embed = nn.Conv2d(3, embed_dim, patch_size, patch_size)
            self.grid_size = img_size // patch_size
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
            self.pos_embed = nn.Parameter(torch.randn(1, self.grid_size ** 2 + 1, embed_dim) * .02)
            self.blocks = nn.Sequential(*[Block(embed_dim, num_heads) for _ in range(depth)])
            self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
            self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
            nn.init.trunc_normal_(self.pos_embed, std=.02)
            nn.init.normal_(self.cls_token, std=1e-6)
            named_apply(init_weights_vit_timm, self)

        def reset_classifier(self, num_classes):
            self.num_classes = num_classes
            self.head = nn.Linear(self.norm.normalized_shape[0], num_classes)

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
            x = x + self.pos_embed
            x = self.norm(self.blocks(x))
            return self.head(x[:, 0])

    def resize_pos_embed(posemb, posemb_new, num_prefix_tokens=1, gs_new=()):
        ntok_new = posemb_new.shape[1]
        posemb_prefix, posemb_grid = posemb[:, :num_prefix_tokens], posemb[0, num_prefix_tokens:]
        ntok_new -= num_prefix_tokens
        gs_old = int(math.sqrt(len(posemb_grid)))
        if not len(gs_new):
            gs_new = [int(math.sqrt(ntok_new))] * 2
        assert len(gs_new) >= 2
        posemb_grid = posemb_grid.reshape(1, gs_old, gs_old, -1).permute(0, 3, 1, 2)
        posemb_grid = F.interpolate(posemb_grid, size=gs_new, mode='bicubic', align_corners=False)
        posemb_grid = posemb_grid.permute(0, 2, 3, 1).reshape(1, gs_new[0] * gs_new[1], -1)
        posemb = torch.cat([posemb_prefix, posemb_grid], dim=1)
        return posemb

    def checkpoint_filter_fn(state_dict, model):
        out_dict = {}
        if 'model' in state_dict:
            state_dict = state_dict['model']
        for k, v in state_dict.items():
            k = k.replace('mlp.w1', 'mlp.fc1').replace('mlp.w2', 'mlp.fc2')
            if k == 'pos_embed' and v.shape[1] != model.pos_embed.shape[1]:
                v = resize_pos_embed(v, model.pos_embed, 1, (model.grid_size, model.grid_size))
            out_dict[k] = v
        return out_dict

    pretrained_checkpoint = {}

    @register_model
    def vit_tiny_patch4(pretrained=False, **kwargs):
        model = VisionTransformer(**dict(dict(patch_size=4, embed_dim=8, depth=2, num_heads=2), **kwargs))
        if pretrained:
            ckpt = checkpoint_filter_fn(pretrained_checkpoint, model)
            num_classes = kwargs.get("num_classes", 10)
            if num_classes != ckpt["head.weight"].shape[0]:
                del ckpt["head.weight"], ckpt["head.bias"]
            incompatible = model.load_state_dict(ckpt, strict=False)
            model.incompatible = incompatible
        return model

    source = create_model("vit_tiny_patch4", img_size=8)  # "pretrained" at 8 x 8, its MLP keys renamed as old ones
    init = {"source." + k: v for k, v in load(m, source, state and {k[7:]: v for k, v in state.items()
                                                                    if k.startswith("source.")}).items()}
    sd = source.state_dict()
    pretrained_checkpoint["model"] = {k.replace("mlp.fc1", "mlp.w1").replace("mlp.fc2", "mlp.w2"): v
                                      for k, v in sd.items()}
    pretrained_checkpoint["model"]["extra.running_stat"] = torch.zeros(2)
    model = create_model("vit_tiny_patch4", pretrained=True, img_size=12, num_classes=4)
    losses = [float(len(model.incompatible.missing_keys)), float(len(model.incompatible.unexpected_keys)),
              model.pos_embed.sum().item(), float(model.pos_embed.shape[1])]
    init.update(load(m, model, state and {k: v for k, v in state.items() if not k.startswith("source.")}))
    layer_decay, num_layers = 0.75, 2 + 1

    def layer_id(name):
        if name.startswith(("cls_token", "pos_embed", "patch_embed")):
            return 0
        if name.startswith("blocks."):
            return int(name.split(".")[1]) + 1
        return num_layers

    groups = {}
    for name, p in model.named_parameters():
        lid = layer_id(name)
        wd = 0.0 if p.ndim == 1 or name in ("cls_token", "pos_embed") else 0.05
        key = (lid, wd)
        if key not in groups:
            groups[key] = {"params": [], "weight_decay": wd, "lr_scale": layer_decay ** (num_layers - lid)}
        groups[key]["params"].append(p)
    optimizer = torch.optim.AdamW(list(groups.values()), lr=1e-3)
    for g in optimizer.param_groups:
        g["lr"] = g["lr"] * g["lr_scale"]
    for step in range(2):
        x = torch.from_numpy(normal(rng, 2, 3, 12, 12))
        y = torch.from_numpy(rng.integers(0, 4, 2))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    # the attention's key bias has no gradient but rounding's, which Adam turns into steps of lr: left out
    return init, losses + summary(p for n, p in model.named_parameters() if not n.endswith("in_proj_bias"))


def test_timm_finetune():
    compare(timm_finetune)


# (v) descriptinc/melgan-neurips (mel2wav/modules.py's Generator with ResnetBlock, NLayerDiscriminator and
# Discriminator; scripts/train.py's hinge losses and feature matching): weight-normed Conv1d and ConvTranspose1d by
# a WNConv1d wrapper (nn.utils.weight_norm), ReflectionPad1d, grouped strided Conv1d discriminators, downsampling by
# nn.AvgPool1d(4, stride=2, padding=1, count_include_pad=False), F.relu(1 - D(x)).mean() and F.relu(1 + D(G(z))),
# feature matching by F.l1_loss over every layer's detached real features, weights_init by classname.find('Conv')
def melgan(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    weight_norm = nn.utils.weight_norm  # from torch.nn.utils import weight_norm
    torch.manual_seed(0)
    rng = np.random.default_rng(22)

    def weights_init(m_):
        classname = m_.__class__.__name__
        if classname.find("Conv") != -1:
            m_.weight.data.normal_(0.0, 0.02)
        elif classname.find("BatchNorm2d") != -1:
            m_.weight.data.normal_(1.0, 0.02)
            m_.bias.data.fill_(0)

    def WNConv1d(*args, **kwargs):
        return weight_norm(nn.Conv1d(*args, **kwargs))

    def WNConvTranspose1d(*args, **kwargs):
        return weight_norm(nn.ConvTranspose1d(*args, **kwargs))

    class ResnetBlock(nn.Module):
        def __init__(self, dim, dilation=1):
            super().__init__()
            self.block = nn.Sequential(nn.LeakyReLU(0.2), nn.ReflectionPad1d(dilation),
                                       WNConv1d(dim, dim, kernel_size=3, dilation=dilation), nn.LeakyReLU(0.2),
                                       WNConv1d(dim, dim, kernel_size=1))
            self.shortcut = WNConv1d(dim, dim, kernel_size=1)

        def forward(self, x):
            return self.shortcut(x) + self.block(x)

    class Generator(nn.Module):
        def __init__(self, input_size, ngf, n_residual_layers, ratios=(4, 2)):
            super().__init__()
            self.hop_length = np.prod(ratios)
            mult = int(2 ** len(ratios))
            model = [nn.ReflectionPad1d(3), WNConv1d(input_size, mult * ngf, kernel_size=7, padding=0)]
            for i, r in enumerate(ratios):
                model += [nn.LeakyReLU(0.2),
                          WNConvTranspose1d(mult * ngf, mult * ngf // 2, kernel_size=r * 2, stride=r,
                                            padding=r // 2 + r % 2, output_padding=r % 2)]
                for j in range(n_residual_layers):
                    model += [ResnetBlock(mult * ngf // 2, dilation=3 ** j)]
                mult //= 2
            model += [nn.LeakyReLU(0.2), nn.ReflectionPad1d(3), WNConv1d(ngf, 1, kernel_size=7, padding=0), nn.Tanh()]
            self.model = nn.Sequential(*model)
            self.apply(weights_init)

        def forward(self, x):
            return self.model(x)

    class NLayerDiscriminator(nn.Module):
        def __init__(self, ndf, n_layers, downsampling_factor):
            super().__init__()
            model = nn.ModuleDict()
            model["layer_0"] = nn.Sequential(nn.ReflectionPad1d(7), WNConv1d(1, ndf, kernel_size=15),
                                             nn.LeakyReLU(0.2, True))
            nf = ndf
            stride = downsampling_factor
            for n in range(1, n_layers + 1):
                nf_prev = nf
                nf = min(nf * stride, 16)
                model["layer_%d" % n] = nn.Sequential(
                    WNConv1d(nf_prev, nf, kernel_size=stride * 4 + 1, stride=stride, padding=stride * 2,
                             groups=nf_prev // 2), nn.LeakyReLU(0.2, True))
            nf_prev = nf
            nf = min(nf * 2, 16)
            model["layer_%d" % (n_layers + 1)] = nn.Sequential(WNConv1d(nf_prev, nf, kernel_size=5, stride=1,
                                                                        padding=2), nn.LeakyReLU(0.2, True))
            model["layer_%d" % (n_layers + 2)] = WNConv1d(nf, 1, kernel_size=3, stride=1, padding=1)
            self.model = model

        def forward(self, x):
            results = []
            for key, layer in self.model.items():
                x = layer(x)
                results.append(x)
            return results

    class Discriminator(nn.Module):
        def __init__(self, num_D, ndf, n_layers, downsampling_factor):
            super().__init__()
            self.model = nn.ModuleDict()
            for i in range(num_D):
                self.model[f"disc_{i}"] = NLayerDiscriminator(ndf, n_layers, downsampling_factor)
            self.downsample = nn.AvgPool1d(4, stride=2, padding=1, count_include_pad=False)
            self.apply(weights_init)

        def forward(self, x):
            results = []
            for key, disc in self.model.items():
                results.append(disc(x))
                x = self.downsample(x)
            return results

    netG = Generator(4, 4, 1)
    netD = Discriminator(2, 4, 1, 2)
    init = load(m, nn.ModuleList([netG, netD]), state)
    optG = torch.optim.Adam(netG.parameters(), lr=1e-3, betas=(0.5, 0.9))
    optD = torch.optim.Adam(netD.parameters(), lr=1e-3, betas=(0.5, 0.9))
    losses = []
    for step in range(1):
        s_t_ = torch.from_numpy(normal(rng, 2, 4, 4))
        x_t = torch.from_numpy(np.tanh(normal(rng, 2, 1, 32)))
        x_pred_t = netG(s_t_)
        D_fake_det = netD(x_pred_t.detach())
        D_real = netD(x_t)
        loss_D = 0
        for scale in D_fake_det:
            loss_D += F.relu(1 + scale[-1]).mean()
        for scale in D_real:
            loss_D += F.relu(1 - scale[-1]).mean()
        netD.zero_grad()
        loss_D.backward()
        optD.step()
        D_fake = netD(x_pred_t)
        loss_G = 0
        for scale in D_fake:
            loss_G += -scale[-1].mean()
        loss_feat = 0
        feat_weights = 4.0 / (2 + 1)
        D_weights = 1.0 / 2
        wt = D_weights * feat_weights
        for i in range(2):
            for j in range(len(D_fake[i]) - 1):
                loss_feat += wt * F.l1_loss(D_fake[i][j], D_real[i][j].detach())
        netG.zero_grad()
        (loss_G + 10 * loss_feat).backward()
        optG.step()
        losses += [loss_D.item(), loss_G.item(), loss_feat.item(), float(x_pred_t.shape[-1])]
    return init, losses + summary(netG.parameters()) + summary(netD.parameters())


def test_melgan():
    compare(melgan)


# (w) wolny/pytorch-3dunet (pytorch3dunet/unet3d/buildingblocks.py's SingleConv with order 'gcr', DoubleConv, Encoder
# with MaxPool3d, Decoder upsampling by ConvTranspose3d or InterpolateUpsampling's F.interpolate(size=, mode=
# 'nearest'); losses.py's DiceLoss with flatten's permute(1, 0, 2, 3, 4) and compute_per_channel_dice, its
# _MaskingLossWrapper for an ignore_index; metrics' MeanIoU by argmax and one-hot expansion): modules built from an
# order string by add_module, GroupNorm with num_groups shrunk to the channels, the final activation nn.Softmax(dim=1)
# applied only in eval, the decoder's joining by torch.cat((encoder_features, x), dim=1)
def unet3d(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from functools import partial
    torch.manual_seed(0)
    rng = np.random.default_rng(23)

    def create_conv(in_channels, out_channels, kernel_size, order, num_groups, padding):
        modules = []
        for i, char in enumerate(order):
            if char == 'r':
                modules.append(('ReLU', nn.ReLU(inplace=True)))
            elif char == 'e':
                modules.append(('ELU', nn.ELU(inplace=True)))
            elif char == 'c':
                bias = not ('g' in order or 'b' in order)
                modules.append(('conv', nn.Conv3d(in_channels, out_channels, kernel_size, padding=padding, bias=bias)))
            elif char == 'g':
                is_before_conv = i < order.index('c')
                num_channels = in_channels if is_before_conv else out_channels
                if num_channels < num_groups:
                    num_groups = 1
                assert num_channels % num_groups == 0, 'Expected number of channels to be divisible by num_groups'
                modules.append(('groupnorm', nn.GroupNorm(num_groups=num_groups, num_channels=num_channels)))
            elif char == 'b':
                is_before_conv = i < order.index('c')
                modules.append(('batchnorm', nn.BatchNorm3d(in_channels if is_before_conv else out_channels)))
            else:
                raise ValueError(f"Unsupported layer type '{char}'")
        return modules

    class SingleConv(nn.Sequential):
        def __init__(self, in_channels, out_channels, kernel_size=3, order='gcr', num_groups=8, padding=1):
            super(SingleConv, self).__init__()
            for name, module in create_conv(in_channels, out_channels, kernel_size, order, num_groups, padding):
                self.add_module(name, module)

    class DoubleConv(nn.Sequential):
        def __init__(self, in_channels, out_channels, encoder, kernel_size=3, order='gcr', num_groups=8, padding=1):
            super(DoubleConv, self).__init__()
            if encoder:
                conv1_in_channels = in_channels
                conv1_out_channels = out_channels // 2
                if conv1_out_channels < in_channels:
                    conv1_out_channels = in_channels
                conv2_in_channels, conv2_out_channels = conv1_out_channels, out_channels
            else:
                conv1_in_channels, conv1_out_channels = in_channels, out_channels
                conv2_in_channels, conv2_out_channels = out_channels, out_channels
            self.add_module('SingleConv1', SingleConv(conv1_in_channels, conv1_out_channels, kernel_size, order,
                                                      num_groups, padding=padding))
            self.add_module('SingleConv2', SingleConv(conv2_in_channels, conv2_out_channels, kernel_size, order,
                                                      num_groups, padding=padding))

    class Encoder(nn.Module):
        def __init__(self, in_channels, out_channels, apply_pooling=True, pool_kernel_size=2, **kwargs):
            super(Encoder, self).__init__()
            self.pooling = nn.MaxPool3d(kernel_size=pool_kernel_size) if apply_pooling else None
            self.basic_module = DoubleConv(in_channels, out_channels, encoder=True, **kwargs)

        def forward(self, x):
            if self.pooling is not None:
                x = self.pooling(x)
            return self.basic_module(x)

    class InterpolateUpsampling(nn.Module):
        def __init__(self, mode='nearest'):
            super().__init__()
            self.upsample = partial(self._interpolate, mode=mode)

        def forward(self, encoder_features, x):
            output_size = encoder_features.size()[2:]
            return self.upsample(x, output_size)

        @staticmethod
        def _interpolate(x, size, mode):
            return F.interpolate(x, size=size, mode=mode)

    class TransposeConvUpsampling(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size=3, scale_factor=2):
            super().__init__()
            self.upsample = nn.ConvTranspose3d(in_channels, out_channels, kernel_size=kernel_size, stride=scale_factor,
                                               padding=1)

        def forward(self, encoder_features, x):
            output_size = encoder_features.size()[2:]
            return self.upsample(x, output_size=output_size)

    class Decoder(nn.Module):
        def __init__(self, in_channels, out_channels, transposed, **kwargs):
            super().__init__()
            if transposed:
                self.upsampling = TransposeConvUpsampling(in_channels - out_channels, in_channels - out_channels)
            else:
                self.upsampling = InterpolateUpsampling()
            self.basic_module = DoubleConv(in_channels, out_channels, encoder=False, **kwargs)

        def forward(self, encoder_features, x):
            x = self.upsampling(encoder_features=encoder_features, x=x)
            x = torch.cat((encoder_features, x), dim=1)
            return self.basic_module(x)

    class UNet3D(nn.Module):
        def __init__(self, in_channels, out_channels, f_maps=(4, 8), num_groups=2, transposed=False):
            super().__init__()
            self.encoders = nn.ModuleList([Encoder(in_channels, f_maps[0], apply_pooling=False, num_groups=num_groups),
                                           Encoder(f_maps[0], f_maps[1], num_groups=num_groups)])
            self.decoders = nn.ModuleList([Decoder(f_maps[0] + f_maps[1], f_maps[0], transposed,
                                                   num_groups=num_groups)])
            self.final_conv = nn.Conv3d(f_maps[0], out_channels, 1)
            self.final_activation = nn.Softmax(dim=1)

        def forward(self, x):
            encoders_features = []
            for encoder in self.encoders:
                x = encoder(x)
                encoders_features.insert(0, x)
            encoders_features = encoders_features[1:]
            for decoder, encoder_features in zip(self.decoders, encoders_features):
                x = decoder(encoder_features, x)
            x = self.final_conv(x)
            if not self.training:
                x = self.final_activation(x)
            return x

    def flatten(tensor):
        C = tensor.size(1)
        axis_order = (1, 0) + tuple(range(2, tensor.dim()))
        transposed = tensor.permute(axis_order)
        return transposed.contiguous().view(C, -1)

    def compute_per_channel_dice(input, target, epsilon=1e-6, weight=None):
        assert input.size() == target.size(), "'input' and 'target' must have the same shape"
        input = flatten(input)
        target = flatten(target)
        target = target.float()
        intersect = (input * target).sum(-1)
        if weight is not None:
            intersect = weight * intersect
        denominator = (input * input).sum(-1) + (target * target).sum(-1)
        return 2 * (intersect / denominator.clamp(min=epsilon))

    class DiceLoss(nn.Module):
        def __init__(self, weight=None, normalization='softmax'):
            super().__init__()
            self.register_buffer('weight', weight)
            self.normalization = nn.Softmax(dim=1) if normalization == 'softmax' else nn.Sigmoid()

        def forward(self, input, target):
            input = self.normalization(input)
            per_channel_dice = compute_per_channel_dice(input, target, weight=self.weight)
            return 1. - torch.mean(per_channel_dice)

    def expand_as_one_hot(input, C, ignore_index=None):
        assert input.dim() == 4
        input = input.unsqueeze(1)
        shape = list(input.size())
        shape[1] = C
        if ignore_index is not None:
            mask = input.expand(shape) == ignore_index
            input = input.clone()
            input[input == ignore_index] = 0
            result = torch.zeros(shape).to(input.device).scatter_(1, input, 1)
            result[mask] = ignore_index
            return result
        return torch.zeros(shape).to(input.device).scatter_(1, input, 1)

    class MeanIoU:
        def __init__(self, skip_channels=(), ignore_index=None):
            self.ignore_index = ignore_index
            self.skip_channels = skip_channels

        def __call__(self, input, target):
            n_classes = input.size(1)
            binary_prediction = self._binarize_predictions(input[0], n_classes)
            t = target[0].byte()
            per_channel_iou = []
            for c in range(n_classes):
                if c in self.skip_channels:
                    continue
                per_channel_iou.append(self._jaccard_index(binary_prediction[c], t[c]))
            assert per_channel_iou, "All channels were ignored from the computation"
            return torch.mean(torch.tensor(per_channel_iou))

        def _binarize_predictions(self, input, n_classes):
            _, max_index = torch.max(input, dim=0, keepdim=True)
            return torch.zeros_like(input, dtype=torch.uint8).scatter_(0, max_index, 1)

        def _jaccard_index(self, prediction, target):
            return torch.sum(prediction & target).float() / torch.clamp(torch.sum(prediction | target).float(),
                                                                        min=1e-8)

    losses = []
    models = [UNet3D(1, 3, transposed=False), UNet3D(1, 3, transposed=True)]
    init = load(m, nn.ModuleList(models), state)
    for model, steps in zip(models, (2, 1)):
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, weight_decay=1e-5)
        loss_criterion = DiceLoss(weight=torch.tensor([0.5, 1.0, 1.5]))
        for step in range(steps):
            x = torch.from_numpy(normal(rng, 1, 1, 4, 4, 4))
            labels = torch.from_numpy(rng.integers(0, 3, (1, 4, 4, 4)))
            target = expand_as_one_hot(labels, 3)
            output = model(x)
            loss = loss_criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses += [loss.item()]
        model.eval()
        with torch.no_grad():
            probs = model(x)
            iou = MeanIoU()(probs, expand_as_one_hot(labels, 3).long())
        losses += [iou.item(), probs.sum().item()]
    ignored = expand_as_one_hot(torch.tensor([[[[0, 2], [-1, 1]]]]), 3, ignore_index=-1)
    losses += [float(ignored.sum())]
    return init, losses + summary(models[0].parameters()) + summary(models[1].parameters())


def test_unet3d():
    compare(unet3d)


# (x) a batch augmentation pipeline on the device in kornia's and Graham's style beside a fractional max-pooling
# network: a random affine per image by F.affine_grid(theta, size, align_corners=False) and F.grid_sample(...,
# padding_mode='reflection' or 'border'), a resize by F.interpolate(mode='area') and another by mode='nearest-exact'
# with recompute_scale_factor=True, nn.FractionalMaxPool2d(2, output_ratio=...) given its _random_samples (numpy's
# here), nn.LPPool2d, nn.Softmax2d, an unfold/fold round trip that averages overlapping patches by a fold of ones,
# Dropout1d and InstanceNorm1d over a sequence of row features
def device_augment_fmp(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(24)

    def random_affine(x, degrees=15.0, translate=0.1, scale=(0.9, 1.1)):
        B = x.shape[0]
        angle = np.deg2rad(rng.uniform(-degrees, degrees, B))
        s = rng.uniform(*scale, B)
        t = rng.uniform(-translate, translate, (B, 2))
        theta = np.stack([np.stack([s * np.cos(angle), -s * np.sin(angle), t[:, 0]], 1),
                          np.stack([s * np.sin(angle), s * np.cos(angle), t[:, 1]], 1)], 1).astype(np.float32)
        grid = F.affine_grid(torch.from_numpy(theta), list(x.size()), align_corners=False)
        return F.grid_sample(x, grid, mode='bilinear', padding_mode='reflection', align_corners=False)

    def unfold_fold_smooth(x, k=3):
        B, C, H, W = x.shape
        patches = F.unfold(x, kernel_size=k, padding=1)
        patches = patches.view(B, C, k * k, -1).mean(2, keepdim=True).expand(-1, -1, k * k, -1).reshape(B, C * k * k,
                                                                                                         -1)
        out = F.fold(patches, (H, W), kernel_size=k, padding=1)
        norm = F.fold(torch.ones_like(patches), (H, W), kernel_size=k, padding=1)
        return out / norm

    class FMPNet(nn.Module):
        def __init__(self, n_classes=4):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
            self.fmp = nn.FractionalMaxPool2d(2, output_ratio=(0.7, 0.7), return_indices=False)
            self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
            self.lp = nn.LPPool2d(2, 2, stride=2)
            self.attn = nn.Sequential(nn.Conv2d(6, 6, 1), nn.Softmax2d())
            self.row_norm = nn.InstanceNorm1d(6, affine=True)
            self.drop = nn.Dropout1d(p=0.0)
            self.fc = nn.Linear(6, n_classes)

        def forward(self, x, samples):
            x = F.relu(self.conv1(x))
            self.fmp._random_samples = samples
            x = self.fmp(x)
            x = F.relu(self.conv2(x))
            x = self.lp(x)
            x = x * self.attn(x)
            rows = x.mean(3)
            rows = self.drop(self.row_norm(rows))
            return self.fc(rows.mean(2))

    net = FMPNet()
    init = load(m, net, state)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step, pad_mode in enumerate(['reflection', 'border']):
        x = torch.from_numpy(normal(rng, 2, 3, 12, 12))
        y = torch.from_numpy(rng.integers(0, 4, 2))
        with torch.no_grad():
            x = random_affine(x)
            if pad_mode == 'border':
                x = F.grid_sample(x, F.affine_grid(torch.eye(2, 3).unsqueeze(0).repeat(2, 1, 1) * 1.1, [2, 3, 12, 12],
                                                   align_corners=False), padding_mode='border', align_corners=False)
            small = F.interpolate(x, size=(8, 8), mode='area')
            x = F.interpolate(small, scale_factor=1.5, mode='nearest-exact', recompute_scale_factor=True)
            x = unfold_fold_smooth(x)
        samples = torch.from_numpy(rng.random((2, 6, 2), dtype=np.float32))
        loss = F.cross_entropy(net(x, samples), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), x.sum().item(), small.abs().sum().item()]
    return init, losses + summary(net.parameters())


def test_device_augment_fmp():
    compare(device_augment_fmp)


# (y) a Bayesian-optimisation loop as BoTorch's tutorials write it by hand (an exact GP with an RBF kernel whose log
# hyper-parameters are fitted by Adam on the marginal likelihood; the posterior by torch.linalg.cholesky with jitter and
# torch.cholesky_solve; Expected Improvement by torch.distributions.Normal(0, 1)'s cdf and log_prob(...).exp(); the
# acquisition maximised over the input from several starts by optim.LBFGS(line_search_fn="strong_wolfe") with a closure,
# clamped to the box under torch.no_grad()): torch.cdist for distances, 2 * log(diag(L)).sum() for the log-determinant,
# best = argmax of acquisition values by torch.stack
def bayes_opt(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Normal = torch.distributions.Normal
    torch.manual_seed(0)
    rng = np.random.default_rng(25)

    def objective(x):
        return np.sin(3 * x[:, 0]) + 0.5 * np.cos(5 * x[:, 1]) - (x ** 2).sum(1)

    class ExactGP(nn.Module):
        def __init__(self):
            super().__init__()
            self.raw_lengthscale = nn.Parameter(torch.zeros(2))
            self.raw_outputscale = nn.Parameter(torch.tensor(0.0))
            self.raw_noise = nn.Parameter(torch.tensor(-2.0))

        def kernel(self, a, b):
            ls = F.softplus(self.raw_lengthscale)
            d2 = torch.cdist(a / ls, b / ls).pow(2)
            return F.softplus(self.raw_outputscale) * torch.exp(-0.5 * d2)

        def mll(self, X, y):
            n = X.shape[0]
            K = self.kernel(X, X) + (F.softplus(self.raw_noise) + 1e-4) * torch.eye(n)
            L = torch.linalg.cholesky(K)
            alpha = torch.cholesky_solve(y.unsqueeze(-1), L)
            return (-0.5 * (y.unsqueeze(0) @ alpha).squeeze() - torch.log(torch.diagonal(L)).sum()
                    - 0.5 * n * math.log(2 * math.pi)) / n

        def posterior(self, X, y, Xs):
            n = X.shape[0]
            K = self.kernel(X, X) + (F.softplus(self.raw_noise) + 1e-4) * torch.eye(n)
            L = torch.linalg.cholesky(K)
            Ks = self.kernel(X, Xs)
            mean = (Ks.transpose(0, 1) @ torch.cholesky_solve(y.unsqueeze(-1), L)).squeeze(-1)
            v = torch.linalg.solve_triangular(L, Ks, upper=False)
            var = (F.softplus(self.raw_outputscale) - (v * v).sum(0)).clamp_min(1e-9)
            return mean, var

    def expected_improvement(gp, X, y, Xs, best_f):
        mean, var = gp.posterior(X, y, Xs)
        sigma = var.sqrt()
        u = (mean - best_f) / sigma
        normal = Normal(torch.zeros_like(u), torch.ones_like(u))
        ucdf = normal.cdf(u)
        updf = torch.exp(normal.log_prob(u))
        return sigma * (updf + u * ucdf)

    gp = ExactGP()
    init = load(m, gp, state)
    X_np = rng.uniform(-1, 1, (5, 2))
    losses = []
    for it in range(2):
        X = torch.from_numpy(X_np.astype(np.float32))
        y_np = objective(X_np)
        y = torch.from_numpy(((y_np - y_np.mean()) / y_np.std()).astype(np.float32))
        optimizer = torch.optim.Adam(gp.parameters(), lr=0.1)
        for step in range(2):
            optimizer.zero_grad()
            loss = -gp.mll(X, y)
            loss.backward()
            optimizer.step()
        losses += [loss.item()]
        best_f = y.max()
        starts = torch.from_numpy(rng.uniform(-1, 1, (2 - it, 2)).astype(np.float32))
        candidates, values = [], []
        for x0 in starts:
            x = x0.clone().unsqueeze(0).requires_grad_(True)
            lbfgs = torch.optim.LBFGS([x], lr=0.5, max_iter=2, line_search_fn="strong_wolfe")

            def closure():
                lbfgs.zero_grad()
                acq = -expected_improvement(gp, X, y, x, best_f).sum()
                acq.backward()
                return acq

            lbfgs.step(closure)
            with torch.no_grad():
                x.clamp_(-1, 1)
                candidates.append(x.detach().clone())
                values.append(expected_improvement(gp, X, y, x, best_f).sum())
        best = torch.stack(values).argmax()
        new_x = candidates[int(best)]
        losses += [torch.stack(values).max().item(), new_x.sum().item()]
        X_np = np.concatenate([X_np, new_x.detach().cpu().numpy().astype(np.float64)], 0)
    return init, losses + summary(gp.parameters())


def test_bayes_opt():
    compare(bayes_opt)


# (z) the Deep Equilibrium model of locuslab's implicit-layers tutorial (chapter 4's ResNetLayer, anderson solver and
# DEQFixedPoint): a fixed point found under torch.no_grad() by Anderson acceleration (histories written by X[:, k % m]
# = ..., a bordered H by bmm plus lam * eye, alpha by torch.linalg.solve for the removed torch.solve, residuals read by
# .norm().item()), the tape re-engaged by one more f call, and the implicit backward by a hook on z that runs the
# solver again on autograd.grad(f0, z0, y, retain_graph=True)[0] + grad inside the backward
def deq_anderson(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    autograd = torch.autograd
    torch.manual_seed(0)
    rng = np.random.default_rng(26)

    class ResNetLayer(nn.Module):
        def __init__(self, n_channels, n_inner_channels, kernel_size=3, num_groups=2):
            super().__init__()
            self.conv1 = nn.Conv2d(n_channels, n_inner_channels, kernel_size, padding=kernel_size // 2, bias=False)
            self.conv2 = nn.Conv2d(n_inner_channels, n_channels, kernel_size, padding=kernel_size // 2, bias=False)
            self.norm1 = nn.GroupNorm(num_groups, n_inner_channels)
            self.norm2 = nn.GroupNorm(num_groups, n_channels)
            self.norm3 = nn.GroupNorm(num_groups, n_channels)
            self.conv1.weight.data.normal_(0, 0.01)
            self.conv2.weight.data.normal_(0, 0.01)

        def forward(self, z, x):
            y = self.norm1(F.relu(self.conv1(z)))
            return self.norm3(F.relu(z + self.norm2(x + self.conv2(y))))

    def anderson(f, x0, m=3, lam=1e-4, max_iter=6, tol=1e-9, beta=1.0):
        bsz, d, H, W = x0.shape
        X = torch.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
        F_ = torch.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
        X[:, 0], F_[:, 0] = x0.view(bsz, -1), f(x0).view(bsz, -1)
        X[:, 1], F_[:, 1] = F_[:, 0], f(F_[:, 0].view_as(x0)).view(bsz, -1)
        H = torch.zeros(bsz, m + 1, m + 1, dtype=x0.dtype, device=x0.device)
        H[:, 0, 1:] = H[:, 1:, 0] = 1
        y = torch.zeros(bsz, m + 1, 1, dtype=x0.dtype, device=x0.device)
        y[:, 0] = 1
        res = []
        for k in range(2, max_iter):
            n = min(k, m)
            G = F_[:, :n] - X[:, :n]
            H[:, 1:n + 1, 1:n + 1] = torch.bmm(G, G.transpose(1, 2)) + lam * torch.eye(n, dtype=x0.dtype,
                                                                                      device=x0.device)[None]
            alpha = torch.linalg.solve(H[:, :n + 1, :n + 1], y[:, :n + 1])[:, 1:n + 1, 0]
            X[:, k % m] = beta * (alpha[:, None] @ F_[:, :n])[:, 0] + (1 - beta) * (alpha[:, None] @ X[:, :n])[:, 0]
            F_[:, k % m] = f(X[:, k % m].view_as(x0)).view(bsz, -1)
            res.append((F_[:, k % m] - X[:, k % m]).norm().item() / (1e-5 + F_[:, k % m].norm().item()))
            if res[-1] < tol:
                break
        return X[:, k % m].view_as(x0), res

    class DEQFixedPoint(nn.Module):
        def __init__(self, f, solver, **kwargs):
            super().__init__()
            self.f = f
            self.solver = solver
            self.kwargs = kwargs

        def forward(self, x):
            with torch.no_grad():
                z, self.forward_res = self.solver(lambda z: self.f(z, x), torch.zeros_like(x), **self.kwargs)
            z = self.f(z, x)
            z0 = z.clone().detach().requires_grad_()
            f0 = self.f(z0, x)

            def backward_hook(grad):
                g, self.backward_res = self.solver(lambda y: autograd.grad(f0, z0, y, retain_graph=True)[0] + grad,
                                                   grad, **self.kwargs)
                return g
            z.register_hook(backward_hook)
            return z

    chan = 4
    f = ResNetLayer(chan, 6, kernel_size=3)
    model = nn.Sequential(nn.Conv2d(1, chan, kernel_size=3, bias=True, padding=1), nn.BatchNorm2d(chan),
                          DEQFixedPoint(f, anderson, tol=1e-9, max_iter=4, m=3), nn.BatchNorm2d(chan),
                          nn.AvgPool2d(4, 4), nn.Flatten(), nn.Linear(chan * 1 * 1, 3))
    init = load(m, model, state)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 2, eta_min=1e-6)
    losses = []
    for step in range(2):
        X = torch.from_numpy(normal(rng, 2, 1, 4, 4))
        y = torch.from_numpy(rng.integers(0, 3, 2))
        yp = model(X)
        loss = nn.CrossEntropyLoss()(yp, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        scheduler.step()
        deq = model[2]
        losses += [loss.item(), len(deq.forward_res), len(deq.backward_res), deq.forward_res[-1]]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_deq_anderson():
    compare(deq_anderson)
