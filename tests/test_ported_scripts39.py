"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: megvii-research's NAFNet (a LayerNorm2d by a torch.autograd.Function with a hand-written
backward reading ctx.saved_variables, SimpleGate by chunk, simplified channel attention, padding to the U-Net's
multiple and cropping back, basicsr's PSNRLoss in Y); HarryVolek's GE2E speaker-verification loss (utterance centroids
that leave the utterance out, cos_diff[same_idx, :, same_idx] = ... through two index lists around a slice, an in-place
log_, w and b in their own param group); jefflai108's CPC (a one-element long tensor as an index and a slice end, rows
of torch.empty written by autograd outputs, a GRU initialised through _all_weights, softmax's implicit dim, numpy
learning rates written into param_groups); jankrepl's PonderNet (halting steps by torch.maximum of long tensors, a
loop that breaks on a tensor condition, y[halting_step - 1, torch.arange(n)]); JiahuiYu's slimmable networks (weights
sliced to the width in forward, in_channels set on a Conv2d, a soft cross-entropy on nn.modules.loss._Loss, four
widths' gradients in one step); facebookresearch's DeepSDF (an auto-decoder's Embedding(max_norm=), weight-normed
layers with the latent fed in again, chunked backward); nmhkahn's MemN2N (embeddings by add_module and an AttrProxy,
size_average=False, the deprecated clip_grad_norm); salesforce's QRNN (ForgetMult by split and stack, the previous
input kept across batches, a tied decoder); gitabcworld's Matching Networks (cosine attention by bmm and rsqrt, a
bidirectional LSTM's state cut by isinstance(h, Variable), a one-hot by scatter_); yaringal's concrete dropout
(learnt rates, regularisers written into torch.empty(5) by tuple unpacking, MC samples); DmitryUlyanov's deep image
prior (`torch.nn.Module.add = add_module`, Concat cropping to the smaller branch, ReflectionPad2d, Module.type(dtype),
a fall back to saved parameters by .data.copy_); zalandoresearch's pytorch-ts DeepVAR (lagged subsequences by negative
slices, a mean scaler against a 0-d buffer, a LowRankMultivariateNormal under AffineTransform(event_dim=1) in a
TransformedDistribution subclass with mean and variance properties); coetaur0's ESIM (Embedding(_weight=), a 0-d max
length as a size and a slice end, sequences sorted and restored by index_select around pack_padded_sequence, masked
softmax attention, LSTM biases written through .data slices, ReduceLROnPlateau on accuracy).

What failed in tnet, fixed there the way torch behaves:
- a layer's in_channels, out_channels, kernel_size, in_features and out_features were read-only properties (read from
  the weight), so SlimmableConv2d's `self.in_channels = ...` raised AttributeError; they are plain attributes in torch:
  now assignable, read from the weight until set (nn._SizeFromWeight; tests/test_modules.py).
- torch.autograd.Variable was a function, so Matching Networks' `isinstance(h, Variable)` raised TypeError; it is a
  class whose isinstance holds for every tensor, as torch's, with Variable._execution_engine.queue_callback
  (tests/test_idioms.py).

Each runs in tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the
weights summed into a few numbers, agree. Numpy draws what a script draws (torch.randn, rand_like, randint, bernoulli,
uniform_ and normal_ are replaced by numpy's draws); shapes are tiny and runs take one to three steps."""

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) megvii-research/NAFNet (basicsr/models/archs/NAFNet_arch.py, arch_util.py's LayerNormFunction and LayerNorm2d,
# basicsr/models/losses/losses.py's PSNRLoss with toY, basicsr/models/image_restoration_model.py's optimize_parameters
# with use_grad_clip): a custom autograd Function's forward and backward, ctx.eps, ctx.saved_variables
def nafnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(1)

    class LayerNormFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, eps):
            ctx.eps = eps
            N, C, H, W = x.size()
            mu = x.mean(1, keepdim=True)
            var = (x - mu).pow(2).mean(1, keepdim=True)
            y = (x - mu) / (var + eps).sqrt()
            ctx.save_for_backward(y, var, weight)
            y = weight.view(1, C, 1, 1) * y + bias.view(1, C, 1, 1)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            eps = ctx.eps
            N, C, H, W = grad_output.size()
            y, var, weight = ctx.saved_variables
            g = grad_output * weight.view(1, C, 1, 1)
            mean_g = g.mean(dim=1, keepdim=True)
            mean_gy = (g * y).mean(dim=1, keepdim=True)
            gx = 1. / torch.sqrt(var + eps) * (g - y * mean_gy - mean_g)
            return gx, (grad_output * y).sum(dim=3).sum(dim=2).sum(dim=0), grad_output.sum(dim=3).sum(dim=2).sum(
                dim=0), None

    class LayerNorm2d(nn.Module):
        def __init__(self, channels, eps=1e-6):
            super(LayerNorm2d, self).__init__()
            self.register_parameter('weight', nn.Parameter(torch.ones(channels)))
            self.register_parameter('bias', nn.Parameter(torch.zeros(channels)))
            self.eps = eps

        def forward(self, x):
            return LayerNormFunction.apply(x, self.weight, self.bias, self.eps)

    class SimpleGate(nn.Module):
        def forward(self, x):
            x1, x2 = x.chunk(2, dim=1)
            return x1 * x2

    class NAFBlock(nn.Module):
        def __init__(self, c, DW_Expand=2, FFN_Expand=2, drop_out_rate=0.):
            super().__init__()
            dw_channel = c * DW_Expand
            self.conv1 = nn.Conv2d(in_channels=c, out_channels=dw_channel, kernel_size=1, padding=0, stride=1, groups=1,
                                   bias=True)
            self.conv2 = nn.Conv2d(in_channels=dw_channel, out_channels=dw_channel, kernel_size=3, padding=1, stride=1,
                                   groups=dw_channel, bias=True)
            self.conv3 = nn.Conv2d(in_channels=dw_channel // 2, out_channels=c, kernel_size=1, padding=0, stride=1,
                                   groups=1, bias=True)
            self.sca = nn.Sequential(
                nn.AdaptiveAvgPool2d(1),
                nn.Conv2d(in_channels=dw_channel // 2, out_channels=dw_channel // 2, kernel_size=1, padding=0, stride=1,
                          groups=1, bias=True),
            )
            self.sg = SimpleGate()
            ffn_channel = FFN_Expand * c
            self.conv4 = nn.Conv2d(in_channels=c, out_channels=ffn_channel, kernel_size=1, padding=0, stride=1,
                                   groups=1, bias=True)
            self.conv5 = nn.Conv2d(in_channels=ffn_channel // 2, out_channels=c, kernel_size=1, padding=0, stride=1,
                                   groups=1, bias=True)
            self.norm1 = LayerNorm2d(c)
            self.norm2 = LayerNorm2d(c)
            self.dropout1 = nn.Dropout(drop_out_rate) if drop_out_rate > 0. else nn.Identity()
            self.dropout2 = nn.Dropout(drop_out_rate) if drop_out_rate > 0. else nn.Identity()
            self.beta = nn.Parameter(torch.zeros((1, c, 1, 1)), requires_grad=True)
            self.gamma = nn.Parameter(torch.zeros((1, c, 1, 1)), requires_grad=True)

        def forward(self, inp):
            x = inp
            x = self.norm1(x)
            x = self.conv1(x)
            x = self.conv2(x)
            x = self.sg(x)
            x = x * self.sca(x)
            x = self.conv3(x)
            x = self.dropout1(x)
            y = inp + x * self.beta
            x = self.conv4(self.norm2(y))
            x = self.sg(x)
            x = self.conv5(x)
            x = self.dropout2(x)
            return y + x * self.gamma

    class NAFNet(nn.Module):
        def __init__(self, img_channel=3, width=16, middle_blk_num=1, enc_blk_nums=[], dec_blk_nums=[]):
            super().__init__()
            self.intro = nn.Conv2d(in_channels=img_channel, out_channels=width, kernel_size=3, padding=1, stride=1,
                                   groups=1, bias=True)
            self.ending = nn.Conv2d(in_channels=width, out_channels=img_channel, kernel_size=3, padding=1, stride=1,
                                    groups=1, bias=True)
            self.encoders = nn.ModuleList()
            self.decoders = nn.ModuleList()
            self.middle_blks = nn.ModuleList()
            self.ups = nn.ModuleList()
            self.downs = nn.ModuleList()
            chan = width
            for num in enc_blk_nums:
                self.encoders.append(nn.Sequential(*[NAFBlock(chan) for _ in range(num)]))
                self.downs.append(nn.Conv2d(chan, 2 * chan, 2, 2))
                chan = chan * 2
            self.middle_blks = nn.Sequential(*[NAFBlock(chan) for _ in range(middle_blk_num)])
            for num in dec_blk_nums:
                self.ups.append(nn.Sequential(nn.Conv2d(chan, chan * 2, 1, bias=False), nn.PixelShuffle(2)))
                chan = chan // 2
                self.decoders.append(nn.Sequential(*[NAFBlock(chan) for _ in range(num)]))
            self.padder_size = 2 ** len(self.encoders)

        def forward(self, inp):
            B, C, H, W = inp.shape
            inp = self.check_image_size(inp)
            x = self.intro(inp)
            encs = []
            for encoder, down in zip(self.encoders, self.downs):
                x = encoder(x)
                encs.append(x)
                x = down(x)
            x = self.middle_blks(x)
            for decoder, up, enc_skip in zip(self.decoders, self.ups, encs[::-1]):
                x = up(x)
                x = x + enc_skip
                x = decoder(x)
            x = self.ending(x)
            x = x + inp
            return x[:, :, :H, :W]

        def check_image_size(self, x):
            _, _, h, w = x.size()
            mod_pad_h = (self.padder_size - h % self.padder_size) % self.padder_size
            mod_pad_w = (self.padder_size - w % self.padder_size) % self.padder_size
            x = F.pad(x, (0, mod_pad_w, 0, mod_pad_h))
            return x

    class PSNRLoss(nn.Module):
        def __init__(self, loss_weight=1.0, reduction='mean', toY=False):
            super(PSNRLoss, self).__init__()
            assert reduction == 'mean'
            self.loss_weight = loss_weight
            self.scale = 10 / np.log(10)
            self.toY = toY
            self.coef = torch.tensor([65.481, 128.553, 24.966]).reshape(1, 3, 1, 1)
            self.first = True

        def forward(self, pred, target):
            assert len(pred.size()) == 4
            if self.toY:
                if self.first:
                    self.coef = self.coef.to(pred.device)
                    self.first = False
                pred = (pred * self.coef).sum(dim=1).unsqueeze(dim=1) + 16.
                target = (target * self.coef).sum(dim=1).unsqueeze(dim=1) + 16.
                pred, target = pred / 255., target / 255.
            return self.loss_weight * self.scale * torch.log(((pred - target) ** 2).mean(dim=(1, 2, 3)) + 1e-8).mean()

    net_g = NAFNet(img_channel=3, width=4, middle_blk_num=1, enc_blk_nums=[1], dec_blk_nums=[1])
    init = load(m, net_g, state)
    cri_pix = PSNRLoss(toY=True)
    optim_params = [v for k, v in net_g.named_parameters() if v.requires_grad]
    optimizer_g = torch.optim.AdamW(optim_params, lr=1e-3, weight_decay=0., betas=(0.9, 0.9))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer_g, T_max=4, eta_min=1e-7)
    losses = []
    for step in range(2):
        gt = torch.tensor(rng.uniform(0, 1, (2, 3, 5, 5)).astype(np.float32))
        lq = (gt + torch.tensor(normal(rng, 2, 3, 5, 5)) * 0.1).clamp(0, 1)
        optimizer_g.zero_grad()
        preds = net_g(lq)
        if not isinstance(preds, list):
            preds = [preds]
        output = preds[-1]
        l_total = 0
        for pred in preds:
            l_total += cri_pix(pred, gt)
        l_total = l_total + 0. * sum(p.sum() for p in net_g.parameters())
        l_total.backward()
        torch.nn.utils.clip_grad_norm_(net_g.parameters(), 0.01)
        optimizer_g.step()
        scheduler.step()
        losses += [l_total.item(), output.mean().item()]
    return init, losses + summary(net_g.parameters())


def test_nafnet():
    compare(nafnet)


# (b) HarryVolek/PyTorch_Speaker_Verification (speech_embedder_net.py's SpeechEmbedder and GE2ELoss, utils.py's
# get_centroids, get_utterance_centroids, get_cossim and calc_loss, train_speech_embedder.py's loop): the batch
# permuted by random.sample's list (numpy's here) and put back by its inverse list
def ge2e_speaker_verification(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(2)
    N, M, T, n_mels, hidden, proj = 3, 4, 5, 6, 8, 5
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def get_centroids(embeddings):
        centroids = embeddings.mean(dim=1)
        return centroids

    def get_utterance_centroids(embeddings):
        sum_centroids = embeddings.sum(dim=1)
        sum_centroids = sum_centroids.reshape(sum_centroids.shape[0], 1, sum_centroids.shape[-1])
        num_utterances = embeddings.shape[1] - 1
        centroids = (sum_centroids - embeddings) / num_utterances
        return centroids

    def get_cossim(embeddings, centroids):
        num_utterances = embeddings.shape[1]
        utterance_centroids = get_utterance_centroids(embeddings)
        utterance_centroids_flat = utterance_centroids.view(utterance_centroids.shape[0] * utterance_centroids.shape[1],
                                                            -1)
        embeddings_flat = embeddings.view(embeddings.shape[0] * num_utterances, -1)
        cos_same = F.cosine_similarity(embeddings_flat, utterance_centroids_flat)
        centroids_expand = centroids.repeat((num_utterances * embeddings.shape[0], 1))
        embeddings_expand = embeddings_flat.unsqueeze(1).repeat(1, embeddings.shape[0], 1)
        embeddings_expand = embeddings_expand.view(embeddings_expand.shape[0] * embeddings_expand.shape[1],
                                                   embeddings_expand.shape[-1])
        cos_diff = F.cosine_similarity(embeddings_expand, centroids_expand)
        cos_diff = cos_diff.view(embeddings.size(0), num_utterances, centroids.size(0))
        same_idx = list(range(embeddings.size(0)))
        cos_diff[same_idx, :, same_idx] = cos_same.view(embeddings.shape[0], num_utterances)
        cos_diff = cos_diff + 1e-6
        return cos_diff

    def calc_loss(sim_matrix):
        same_idx = list(range(sim_matrix.size(0)))
        pos = sim_matrix[same_idx, :, same_idx]
        neg = (torch.exp(sim_matrix).sum(dim=2) + 1e-6).log_()
        per_embedding_loss = -1 * (pos - neg)
        loss = per_embedding_loss.sum()
        return loss, per_embedding_loss

    class SpeechEmbedder(nn.Module):
        def __init__(self):
            super(SpeechEmbedder, self).__init__()
            self.LSTM_stack = nn.LSTM(n_mels, hidden, num_layers=2, batch_first=True)
            for name, param in self.LSTM_stack.named_parameters():
                if 'bias' in name:
                    nn.init.constant_(param, 0.0)
                elif 'weight' in name:
                    nn.init.xavier_normal_(param)
            self.projection = nn.Linear(hidden, proj)

        def forward(self, x):
            x, _ = self.LSTM_stack(x.float())
            x = x[:, x.size(1) - 1]
            x = self.projection(x.float())
            x = x / torch.norm(x, dim=1).unsqueeze(1)
            return x

    class GE2ELoss(nn.Module):
        def __init__(self, device):
            super(GE2ELoss, self).__init__()
            self.w = nn.Parameter(torch.tensor(10.0).to(device), requires_grad=True)
            self.b = nn.Parameter(torch.tensor(-5.0).to(device), requires_grad=True)
            self.device = device

        def forward(self, embeddings):
            torch.clamp(self.w, 1e-6)
            centroids = get_centroids(embeddings)
            cossim = get_cossim(embeddings, centroids)
            sim_matrix = self.w * cossim.to(self.device) + self.b
            loss, _ = calc_loss(sim_matrix)
            return loss

    embedder_net = SpeechEmbedder().to(device)
    ge2e_loss = GE2ELoss(device)
    init = load(m, embedder_net, state)
    optimizer = torch.optim.SGD([{'params': embedder_net.parameters()}, {'params': ge2e_loss.parameters()}], lr=0.01)
    embedder_net.train()
    losses = []
    for step in range(2):
        mel_db_batch = torch.tensor(normal(rng, N, M, T, n_mels)).to(device)
        mel_db_batch = torch.reshape(mel_db_batch, (N * M, mel_db_batch.size(2), mel_db_batch.size(3)))
        perm = [int(i) for i in rng.permutation(N * M)]
        unperm = list(perm)
        for i, j in enumerate(perm):
            unperm[j] = i
        mel_db_batch = mel_db_batch[perm]
        optimizer.zero_grad()
        embeddings = embedder_net(mel_db_batch)
        embeddings = embeddings[unperm]
        embeddings = torch.reshape(embeddings, (N, M, embeddings.size(1)))
        loss = ge2e_loss(embeddings)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(embedder_net.parameters(), 3.0)
        torch.nn.utils.clip_grad_norm_(ge2e_loss.parameters(), 1.0)
        optimizer.step()
        losses += [loss.item()]
    return init, losses + summary(embedder_net.parameters()) + summary(ge2e_loss.parameters())


def test_ge2e_speaker_verification():
    compare(ge2e_speaker_verification)


# (c) jefflai108/Contrastive-Predictive-Coding-PyTorch (src/model/model.py's CDCK2, src/training_v1.py's train,
# main.py's ScheduledOptim): the encoder's strides 5, 4, 2 (the original's 160 shortened to 40), InfoNCE over
# torch.mm(encode_samples[i], torch.transpose(pred[i], 0, 1)), the diagonal of its log-softmax
def cpc_cdck2(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    width, gru_size, down = 12, 8, 40

    class CDCK2(nn.Module):
        def __init__(self, timestep, batch_size, seq_len):
            super(CDCK2, self).__init__()
            self.batch_size = batch_size
            self.seq_len = seq_len
            self.timestep = timestep
            self.encoder = nn.Sequential(
                nn.Conv1d(1, width, kernel_size=10, stride=5, padding=3, bias=False),
                nn.BatchNorm1d(width),
                nn.ReLU(inplace=True),
                nn.Conv1d(width, width, kernel_size=8, stride=4, padding=2, bias=False),
                nn.BatchNorm1d(width),
                nn.ReLU(inplace=True),
                nn.Conv1d(width, width, kernel_size=4, stride=2, padding=1, bias=False),
                nn.BatchNorm1d(width),
                nn.ReLU(inplace=True),
            )
            self.gru = nn.GRU(width, gru_size, num_layers=1, bidirectional=False, batch_first=True)
            self.Wk = nn.ModuleList([nn.Linear(gru_size, width) for i in range(timestep)])
            self.softmax = nn.Softmax()
            self.lsoftmax = nn.LogSoftmax()

            def _weights_init(m):
                if isinstance(m, nn.Linear):
                    nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
                if isinstance(m, nn.Conv1d):
                    nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
                elif isinstance(m, nn.BatchNorm1d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

            for layer_p in self.gru._all_weights:
                for p in layer_p:
                    if 'weight' in p:
                        nn.init.kaiming_normal_(self.gru.__getattr__(p), mode='fan_out', nonlinearity='relu')
            self.apply(_weights_init)

        def init_hidden(self, batch_size, use_gpu=True):
            if use_gpu:
                return torch.zeros(1, batch_size, gru_size).cuda()
            else:
                return torch.zeros(1, batch_size, gru_size)

        def forward(self, x, hidden):
            batch = x.size()[0]
            t_samples = torch.from_numpy(rng.integers(self.seq_len / down - self.timestep, size=(1,))).long()
            z = self.encoder(x)
            z = z.transpose(1, 2)
            nce = 0
            encode_samples = torch.empty((self.timestep, batch, width)).float()
            for i in np.arange(1, self.timestep + 1):
                encode_samples[i - 1] = z[:, t_samples + i, :].view(batch, width)
            forward_seq = z[:, :t_samples + 1, :]
            output, hidden = self.gru(forward_seq, hidden)
            c_t = output[:, t_samples, :].view(batch, gru_size)
            pred = torch.empty((self.timestep, batch, width)).float()
            for i in np.arange(0, self.timestep):
                linear = self.Wk[i]
                pred[i] = linear(c_t)
            for i in np.arange(0, self.timestep):
                total = torch.mm(encode_samples[i], torch.transpose(pred[i], 0, 1))
                correct = torch.sum(torch.eq(torch.argmax(self.softmax(total), dim=0), torch.arange(0, batch)))
                nce += torch.sum(torch.diag(self.lsoftmax(total)))
            nce /= -1. * batch * self.timestep
            accuracy = 1. * correct.item() / batch
            return accuracy, nce, hidden

    class ScheduledOptim(object):
        def __init__(self, optimizer, n_warmup_steps):
            self.optimizer = optimizer
            self.d_model = 128
            self.n_warmup_steps = n_warmup_steps
            self.n_current_steps = 0
            self.delta = 1

        def state_dict(self):
            self.optimizer.state_dict()

        def step(self):
            self.optimizer.step()

        def zero_grad(self):
            self.optimizer.zero_grad()

        def increase_delta(self):
            self.delta *= 2

        def update_learning_rate(self):
            self.n_current_steps += self.delta
            new_lr = np.power(self.d_model, -0.5) * np.min([
                np.power(self.n_current_steps, -0.5),
                np.power(self.n_warmup_steps, -1.5) * self.n_current_steps])
            for param_group in self.optimizer.param_groups:
                param_group['lr'] = new_lr
            return new_lr

    use_cuda = torch.cuda.is_available()
    batch_size, seq_len = 4, 240
    model = CDCK2(timestep=2, batch_size=batch_size, seq_len=seq_len)
    init = load(m, model, state)
    optimizer = ScheduledOptim(torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), betas=(0.9, 0.98),
                                                eps=1e-09, weight_decay=1e-4, amsgrad=True), 50)
    model.train()
    losses = []
    for batch_idx in range(2):
        data = torch.tensor(normal(rng, batch_size, 1, seq_len))
        optimizer.zero_grad()
        hidden = model.init_hidden(len(data), use_gpu=use_cuda)
        acc, loss, hidden = model(data, hidden)
        loss.backward()
        optimizer.step()
        lr = optimizer.update_learning_rate()
        losses += [loss.item(), acc, lr]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_cpc_cdck2():
    compare(cpc_cdck2)


# (d) jankrepl/mildlyoverfitted's PonderNet (github_adventures/pondernet/utils.py's ParityDataset, PonderNet,
# ReconstructionLoss, RegularizationLoss; train.py's loop): a halting step by torch.maximum of long tensors built from
# n * (halting_step == 0) * a Bernoulli draw, a geometric prior's buffer filled by a loop, KLDivLoss(batchmean) of
# p.log(), and evaluation with allow_halting that breaks out once (halting_step > 0).sum() == batch_size, then picks
# y[halting_step - 1, torch.arange(batch_size)]
def pondernet(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    n_elems, max_steps = 6, 5

    def parity_batch(batch_size):
        x = np.zeros((batch_size, n_elems), np.float32)
        for row in x:
            n_non_zero = rng.integers(1, n_elems + 1)
            row[:n_non_zero] = rng.integers(0, 2, n_non_zero) * 2 - 1
            rng.shuffle(row)
        x = torch.from_numpy(x)
        y = (x == 1.0).sum(dim=1) % 2
        return x, y

    class PonderNet(nn.Module):
        def __init__(self, n_elems, n_hidden=64, max_steps=20, allow_halting=False):
            super().__init__()
            self.max_steps = max_steps
            self.n_hidden = n_hidden
            self.allow_halting = allow_halting
            self.cell = nn.GRUCell(n_elems, n_hidden)
            self.output_layer = nn.Linear(n_hidden, 1)
            self.lambda_layer = nn.Linear(n_hidden, 1)

        def forward(self, x):
            batch_size, _ = x.shape
            device = x.device
            h = x.new_zeros(batch_size, self.n_hidden)
            un_halted_prob = x.new_ones(batch_size)
            y_list = []
            p_list = []
            halting_step = torch.zeros(batch_size, dtype=torch.long, device=device)
            for n in range(1, self.max_steps + 1):
                if n == self.max_steps:
                    lambda_n = x.new_ones(batch_size)
                else:
                    lambda_n = torch.sigmoid(self.lambda_layer(h))[:, 0]
                y_list.append(self.output_layer(h)[:, 0])
                p_list.append(un_halted_prob * lambda_n)
                draw = torch.from_numpy(rng.random(batch_size).astype(np.float32))  # torch.bernoulli(lambda_n)'s
                halting_step = torch.maximum(n * (halting_step == 0) * (draw < lambda_n).to(torch.long), halting_step)
                un_halted_prob = un_halted_prob * (1 - lambda_n)
                h = self.cell(x, h)
                if self.allow_halting and (halting_step > 0).sum() == batch_size:
                    break
            y = torch.stack(y_list)
            p = torch.stack(p_list)
            return y, p, halting_step

    class ReconstructionLoss(nn.Module):
        def __init__(self, loss_func):
            super().__init__()
            self.loss_func = loss_func

        def forward(self, p, y_pred, y_true):
            max_steps, _ = p.shape
            total_loss = p.new_tensor(0.0)
            for n in range(max_steps):
                loss_per_sample = p[n] * self.loss_func(y_pred[n], y_true)
                total_loss = total_loss + loss_per_sample.mean()
            return total_loss

    class RegularizationLoss(nn.Module):
        def __init__(self, lambda_p, max_steps=20):
            super().__init__()
            p_g = torch.zeros((max_steps,))
            not_halted = 1.0
            for k in range(max_steps):
                p_g[k] = not_halted * lambda_p
                not_halted = not_halted * (1 - lambda_p)
            self.register_buffer("p_g", p_g)
            self.kl_div = nn.KLDivLoss(reduction="batchmean")

        def forward(self, p):
            steps, batch_size = p.shape
            p = p.transpose(0, 1)
            p_g_batch = self.p_g[None, :steps].expand_as(p)
            return self.kl_div(p.log(), p_g_batch)

    module = PonderNet(n_elems=n_elems, n_hidden=8, max_steps=max_steps, allow_halting=False)
    init = load(m, module, state)
    loss_rec_inst = ReconstructionLoss(nn.BCEWithLogitsLoss(reduction="none"))
    loss_reg_inst = RegularizationLoss(lambda_p=0.2, max_steps=max_steps)
    optimizer = torch.optim.Adam(module.parameters(), lr=3e-3, weight_decay=1e-5)
    beta = 0.01
    losses = []
    for step in range(2):
        x_batch, y_true_batch = parity_batch(6)
        y_true_batch = y_true_batch.to(torch.float32)
        y_pred_batch, p, halting_step = module(x_batch)
        loss_rec = loss_rec_inst(p, y_pred_batch, y_true_batch)
        loss_reg = loss_reg_inst(p)
        loss_overall = loss_rec + beta * loss_reg
        optimizer.zero_grad()
        loss_overall.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1)
        optimizer.step()
        losses += [loss_rec.item(), loss_reg.item(), halting_step.to(torch.float32).mean().item()]
    module.allow_halting = True
    module.eval()
    with torch.no_grad():
        x, y_true = parity_batch(5)
        y_pred, p, halting_step = module(x)
        y_halted = y_pred[halting_step - 1, torch.arange(5)]
        accuracy = ((y_halted > 0) == y_true).to(torch.float32).mean()
        p_halted = p.gather(dim=0, index=(halting_step - 1)[None, :])[0]
    losses += [accuracy.item(), y_halted.sum().item(), p_halted.sum().item(), float(y_pred.shape[0])]
    return init, losses + summary(module.parameters())


def test_pondernet():
    compare(pondernet)


# (e) JiahuiYu/slimmable_networks (models/slimmable_ops.py's SwitchableBatchNorm2d, SlimmableConv2d, SlimmableLinear;
# models/s_mobilenet_v2.py's InvertedResidual; train.py's sandwich rule with inplace distillation and
# utils/loss_ops.py's CrossEntropyLossSoft on torch.nn.modules.loss._Loss): weights sliced to the width in forward and
# given to nn.functional.conv2d, depthwise groups_list, model.apply(lambda m: setattr(m, 'width_mult', w)), gradients
# of four widths summed before one step
def slimmable_networks(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(5)

    class FLAGS:
        width_mult_list = [0.25, 0.5, 0.75, 1.0]

    def make_divisible(v, divisor=2, min_value=1):
        if min_value is None:
            min_value = divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        if new_v < 0.9 * v:
            new_v += divisor
        return new_v

    class SwitchableBatchNorm2d(nn.Module):
        def __init__(self, num_features_list):
            super(SwitchableBatchNorm2d, self).__init__()
            self.num_features_list = num_features_list
            self.num_features = max(num_features_list)
            bns = []
            for i in num_features_list:
                bns.append(nn.BatchNorm2d(i))
            self.bn = nn.ModuleList(bns)
            self.width_mult = max(FLAGS.width_mult_list)
            self.ignore_model_profiling = True

        def forward(self, input):
            idx = FLAGS.width_mult_list.index(self.width_mult)
            y = self.bn[idx](input)
            return y

    class SlimmableConv2d(nn.Conv2d):
        def __init__(self, in_channels_list, out_channels_list, kernel_size, stride=1, padding=0, dilation=1,
                     groups_list=[1], bias=True):
            super(SlimmableConv2d, self).__init__(max(in_channels_list), max(out_channels_list), kernel_size,
                                                  stride=stride, padding=padding, dilation=dilation,
                                                  groups=max(groups_list), bias=bias)
            self.in_channels_list = in_channels_list
            self.out_channels_list = out_channels_list
            self.groups_list = groups_list
            if self.groups_list == [1]:
                self.groups_list = [1 for _ in range(len(in_channels_list))]
            self.width_mult = max(FLAGS.width_mult_list)

        def forward(self, input):
            idx = FLAGS.width_mult_list.index(self.width_mult)
            self.in_channels = self.in_channels_list[idx]
            self.out_channels = self.out_channels_list[idx]
            self.groups = self.groups_list[idx]
            weight = self.weight[:self.out_channels, :self.in_channels, :, :]
            if self.bias is not None:
                bias = self.bias[:self.out_channels]
            else:
                bias = self.bias
            y = nn.functional.conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
            return y

    class SlimmableLinear(nn.Linear):
        def __init__(self, in_features_list, out_features_list, bias=True):
            super(SlimmableLinear, self).__init__(max(in_features_list), max(out_features_list), bias=bias)
            self.in_features_list = in_features_list
            self.out_features_list = out_features_list
            self.width_mult = max(FLAGS.width_mult_list)

        def forward(self, input):
            idx = FLAGS.width_mult_list.index(self.width_mult)
            self.in_features = self.in_features_list[idx]
            self.out_features = self.out_features_list[idx]
            weight = self.weight[:self.out_features, :self.in_features]
            if self.bias is not None:
                bias = self.bias[:self.out_features]
            else:
                bias = self.bias
            return nn.functional.linear(input, weight, bias)

    class InvertedResidual(nn.Module):
        def __init__(self, inp, outp, stride, expand_ratio):
            super(InvertedResidual, self).__init__()
            assert stride in [1, 2]
            self.residual_connection = stride == 1 and inp == outp
            layers = []
            expand_inp = [i * expand_ratio for i in inp]
            if expand_ratio != 1:
                layers += [SlimmableConv2d(inp, expand_inp, 1, 1, 0, bias=False), SwitchableBatchNorm2d(expand_inp),
                           nn.ReLU6(inplace=True)]
            layers += [SlimmableConv2d(expand_inp, expand_inp, 3, stride, 1, groups_list=expand_inp, bias=False),
                       SwitchableBatchNorm2d(expand_inp), nn.ReLU6(inplace=True),
                       SlimmableConv2d(expand_inp, outp, 1, 1, 0, bias=False), SwitchableBatchNorm2d(outp)]
            self.body = nn.Sequential(*layers)

        def forward(self, x):
            if self.residual_connection:
                res = self.body(x)
                res += x
            else:
                res = self.body(x)
            return res

    class Model(nn.Module):
        def __init__(self, num_classes=5):
            super(Model, self).__init__()
            channels = [make_divisible(8 * w) for w in FLAGS.width_mult_list]
            self.features = nn.Sequential(
                SlimmableConv2d([3 for _ in range(len(channels))], channels, 3, 2, 1, bias=False),
                SwitchableBatchNorm2d(channels), nn.ReLU6(inplace=True),
                InvertedResidual(channels, channels, 1, 2),
                nn.AdaptiveAvgPool2d(1))
            self.classifier = nn.Sequential(nn.Dropout(0.0), SlimmableLinear(channels, [num_classes] * len(channels)))

        def forward(self, x):
            x = self.features(x)
            x = x.view(x.size(0), -1)
            return self.classifier(x)

    class CrossEntropyLossSoft(torch.nn.modules.loss._Loss):
        def forward(self, output, target):
            output_log_prob = torch.nn.functional.log_softmax(output, dim=1)
            target = target.unsqueeze(1)
            output_log_prob = output_log_prob.unsqueeze(2)
            cross_entropy_loss = -torch.bmm(target, output_log_prob)
            return cross_entropy_loss

    model = Model()
    init = load(m, model, state)
    criterion = torch.nn.CrossEntropyLoss(reduction='none')
    soft_criterion = CrossEntropyLossSoft(reduction='none')
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, nesterov=True, weight_decay=4e-5)
    max_width, min_width = max(FLAGS.width_mult_list), min(FLAGS.width_mult_list)
    losses = []
    for step in range(2):
        input = torch.tensor(normal(rng, 4, 3, 6, 6))
        target = torch.tensor(rng.integers(0, 5, 4))
        optimizer.zero_grad()
        widths_train = [max_width, min_width, float(rng.choice([0.5, 0.75]))]
        for width_mult in widths_train:
            model.apply(lambda m: setattr(m, 'width_mult', width_mult))
            if width_mult == max_width:
                output = model(input)
                loss = torch.mean(criterion(output, target))
                soft_target = torch.nn.functional.softmax(output, dim=1)
                loss.backward()
                soft_target = soft_target.detach()
            else:
                output = model(input)
                loss = torch.mean(soft_criterion(output, soft_target))
                loss.backward()
            losses += [loss.item()]
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for width_mult in sorted(FLAGS.width_mult_list, reverse=True):
            model.apply(lambda m: setattr(m, 'width_mult', width_mult))
            losses += [model(input).sum().item()]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_slimmable_networks():
    compare(slimmable_networks)


# (f) facebookresearch/DeepSDF (networks/deep_sdf_decoder.py's Decoder with weight_norm, latent_in and tanh;
# train_deep_sdf.py's auto-decoder loop): latent codes in nn.Embedding(max_norm=code_bound) initialised by
# torch.nn.init.normal_(lat_vecs.weight.data, ...), two param groups whose lr a StepLearningRateSchedule writes, the
# batch torch.chunk'ed into batch_split parts whose losses backward one by one, clamped SDFs, code regularisation
def deepsdf(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(6)
    latent_size, num_scenes, num_samp_per_scene = 4, 5, 6

    class Decoder(nn.Module):
        def __init__(self, latent_size, dims, dropout=None, dropout_prob=0.0, norm_layers=(), latent_in=(),
                     weight_norm=False, xyz_in_all=None, use_tanh=False, latent_dropout=False):
            super(Decoder, self).__init__()
            dims = [latent_size + 3] + dims + [1]
            self.num_layers = len(dims)
            self.norm_layers = norm_layers
            self.latent_in = latent_in
            self.latent_dropout = latent_dropout
            if self.latent_dropout:
                self.lat_dp = nn.Dropout(0.2)
            self.xyz_in_all = xyz_in_all
            self.weight_norm = weight_norm
            for layer in range(0, self.num_layers - 1):
                if layer + 1 in latent_in:
                    out_dim = dims[layer + 1] - dims[0]
                else:
                    out_dim = dims[layer + 1]
                    if self.xyz_in_all and layer != self.num_layers - 2:
                        out_dim -= 3
                if weight_norm and layer in self.norm_layers:
                    setattr(self, "lin" + str(layer), nn.utils.weight_norm(nn.Linear(dims[layer], out_dim)))
                else:
                    setattr(self, "lin" + str(layer), nn.Linear(dims[layer], out_dim))
                if (not weight_norm) and self.norm_layers is not None and layer in self.norm_layers:
                    setattr(self, "bn" + str(layer), nn.LayerNorm(out_dim))
            self.use_tanh = use_tanh
            if use_tanh:
                self.tanh = nn.Tanh()
            self.relu = nn.ReLU()
            self.dropout_prob = dropout_prob
            self.dropout = dropout
            self.th = nn.Tanh()

        def forward(self, input):
            xyz = input[:, -3:]
            if input.shape[1] > 3 and self.latent_dropout:
                latent_vecs = input[:, :-3]
                latent_vecs = F.dropout(latent_vecs, p=0.2, training=self.training)
                x = torch.cat([latent_vecs, xyz], 1)
            else:
                x = input
            for layer in range(0, self.num_layers - 1):
                lin = getattr(self, "lin" + str(layer))
                if layer in self.latent_in:
                    x = torch.cat([x, input], 1)
                elif layer != 0 and self.xyz_in_all:
                    x = torch.cat([x, xyz], 1)
                x = lin(x)
                if layer == self.num_layers - 2 and self.use_tanh:
                    x = self.tanh(x)
                if layer < self.num_layers - 2:
                    if self.norm_layers is not None and layer in self.norm_layers and not self.weight_norm:
                        bn = getattr(self, "bn" + str(layer))
                        x = bn(x)
                    x = self.relu(x)
                    if self.dropout is not None and layer in self.dropout:
                        x = F.dropout(x, p=self.dropout_prob, training=self.training)
            if hasattr(self, "th"):
                x = self.th(x)
            return x

    class StepLearningRateSchedule:
        def __init__(self, initial, interval, factor):
            self.initial, self.interval, self.factor = initial, interval, factor

        def get_learning_rate(self, epoch):
            return self.initial * (self.factor ** (epoch // self.interval))

    class SDFSamples(m.data.Dataset):
        def __init__(self):
            self.samples = [np.concatenate([rng.uniform(-1, 1, (num_samp_per_scene, 3)),
                                            rng.uniform(-0.2, 0.2, (num_samp_per_scene, 1))], 1).astype(np.float32)
                            for _ in range(num_scenes)]

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, idx):
            return torch.from_numpy(self.samples[idx]), idx

    def adjust_learning_rate(lr_schedules, optimizer, epoch):
        for i, param_group in enumerate(optimizer.param_groups):
            param_group["lr"] = lr_schedules[i].get_learning_rate(epoch)

    decoder = Decoder(latent_size, dims=[8, 8, 8, 8], dropout=[0, 1, 2, 3], dropout_prob=0.0,
                      norm_layers=[0, 1, 2, 3], latent_in=[2], weight_norm=True, xyz_in_all=False, use_tanh=False,
                      latent_dropout=False)
    code_bound, clamp_dist, batch_split, code_reg_lambda, grad_clip = 1.0, 0.1, 2, 1e-4, 1.0
    minT, maxT = -clamp_dist, clamp_dist
    lat_vecs = torch.nn.Embedding(num_scenes, latent_size, max_norm=code_bound)
    torch.nn.init.normal_(lat_vecs.weight.data, 0.0, 1.2 / np.sqrt(latent_size))
    init = load(m, nn.ModuleDict({"decoder": decoder, "lat_vecs": lat_vecs}), state)
    sdf_loader = m.data.DataLoader(SDFSamples(), batch_size=3, shuffle=False, num_workers=0, drop_last=True)
    lr_schedules = [StepLearningRateSchedule(5e-3, 1, 0.5), StepLearningRateSchedule(1e-2, 1, 0.5)]
    loss_l1 = torch.nn.L1Loss(reduction="sum")
    optimizer_all = torch.optim.Adam([
        {"params": decoder.parameters(), "lr": lr_schedules[0].get_learning_rate(0)},
        {"params": lat_vecs.parameters(), "lr": lr_schedules[1].get_learning_rate(0)},
    ])
    losses = []
    for epoch in range(1, 3):
        decoder.train()
        adjust_learning_rate(lr_schedules, optimizer_all, epoch)
        for sdf_data, indices in sdf_loader:
            sdf_data = sdf_data.reshape(-1, 4)
            num_sdf_samples = sdf_data.shape[0]
            sdf_data.requires_grad = False
            xyz = sdf_data[:, 0:3]
            sdf_gt = sdf_data[:, 3].unsqueeze(1)
            sdf_gt = torch.clamp(sdf_gt, minT, maxT)
            xyz = torch.chunk(xyz, batch_split)
            indices = torch.chunk(indices.unsqueeze(-1).repeat(1, num_samp_per_scene).view(-1), batch_split)
            sdf_gt = torch.chunk(sdf_gt, batch_split)
            batch_loss = 0.0
            optimizer_all.zero_grad()
            for i in range(batch_split):
                batch_vecs = lat_vecs(indices[i])
                input = torch.cat([batch_vecs, xyz[i]], dim=1)
                pred_sdf = decoder(input)
                pred_sdf = torch.clamp(pred_sdf, minT, maxT)
                chunk_loss = loss_l1(pred_sdf, sdf_gt[i]) / num_sdf_samples
                l2_size_loss = torch.sum(torch.norm(batch_vecs, dim=1))
                reg_loss = (code_reg_lambda * min(1, epoch / 100) * l2_size_loss) / num_sdf_samples
                chunk_loss = chunk_loss + reg_loss
                chunk_loss.backward()
                batch_loss += chunk_loss.item()
            torch.nn.utils.clip_grad_norm_(decoder.parameters(), grad_clip)
            optimizer_all.step()
            losses += [batch_loss]
    norms = lat_vecs.weight.detach().norm(dim=1)
    return init, losses + [norms.max().item()] + summary(decoder.parameters()) + summary(lat_vecs.parameters())


def test_deepsdf():
    compare(deepsdf)


# (g) nmhkahn/MemN2N-pytorch (memn2n/model.py's MemN2N with adjacent weight tying, position_encoding and AttrProxy;
# memn2n/trainer.py's loop): hop embeddings registered by add_module("C{}".format(hop)) and read back through
# getattr, C.weight.data.normal_(0, 0.1), a FloatTensor built from a numpy array in a Variable, the answer by
# u[-1] @ C.weight.transpose(0, 1), the deprecated CrossEntropyLoss(size_average=False) and nn.utils.clip_grad_norm,
# the learning rate halved by writing param_groups
def memn2n(m, state=None):
    torch, nn = m.torch, m.nn
    from_autograd = m.torch.autograd
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    num_vocab, embedding_dim, sentence_size, memory_size = 12, 6, 4, 5

    def position_encoding(sentence_size, embedding_dim):
        encoding = np.ones((embedding_dim, sentence_size), dtype=np.float32)
        ls = sentence_size + 1
        le = embedding_dim + 1
        for i in range(1, le):
            for j in range(1, ls):
                encoding[i - 1, j - 1] = (i - (le - 1) / 2) * (j - (ls - 1) / 2)
        encoding = 1 + 4 * encoding / embedding_dim / sentence_size
        encoding[:, -1] = 1.0
        return np.transpose(encoding)

    class AttrProxy(object):
        def __init__(self, module, prefix):
            self.module = module
            self.prefix = prefix

        def __getitem__(self, i):
            return getattr(self.module, self.prefix + str(i))

    class MemN2N(nn.Module):
        def __init__(self, settings):
            super(MemN2N, self).__init__()
            use_cuda = settings["use_cuda"]
            num_vocab = settings["num_vocab"]
            embedding_dim = settings["embedding_dim"]
            sentence_size = settings["sentence_size"]
            self.max_hops = settings["max_hops"]
            for hop in range(self.max_hops + 1):
                C = nn.Embedding(num_vocab, embedding_dim, padding_idx=0)
                C.weight.data.normal_(0, 0.1)
                self.add_module("C{}".format(hop), C)
            self.C = AttrProxy(self, "C")
            self.softmax = nn.Softmax(dim=1)
            self.encoding = from_autograd.Variable(torch.FloatTensor(position_encoding(sentence_size, embedding_dim)),
                                                   requires_grad=False)
            if use_cuda:
                self.encoding = self.encoding.cuda()

        def forward(self, story, query):
            story_size = story.size()
            u = list()
            query_embed = self.C[0](query)
            encoding = self.encoding.unsqueeze(0).expand_as(query_embed)
            u.append(torch.sum(query_embed * encoding, 1))
            for hop in range(self.max_hops):
                embed_A = self.C[hop](story.view(story.size(0), -1))
                embed_A = embed_A.view(story_size + (embed_A.size(-1),))
                encoding = self.encoding.unsqueeze(0).unsqueeze(1).expand_as(embed_A)
                m_A = torch.sum(embed_A * encoding, 2)
                u_temp = u[-1].unsqueeze(1).expand_as(m_A)
                prob = self.softmax(torch.sum(m_A * u_temp, 2))
                embed_C = self.C[hop + 1](story.view(story.size(0), -1))
                embed_C = embed_C.view(story_size + (embed_C.size(-1),))
                m_C = torch.sum(embed_C * encoding, 2)
                prob = prob.unsqueeze(2).expand_as(m_C)
                o_k = torch.sum(m_C * prob, 1)
                u_k = u[-1] + o_k
                u.append(u_k)
            a_hat = u[-1] @ self.C[self.max_hops].weight.transpose(0, 1)
            return a_hat, self.softmax(a_hat)

    settings = {"use_cuda": False, "num_vocab": num_vocab, "embedding_dim": embedding_dim,
                "sentence_size": sentence_size, "max_hops": 3}
    mem_n2n = MemN2N(settings)
    init = load(m, mem_n2n, state)
    ce_fn = nn.CrossEntropyLoss(size_average=False)
    opt = torch.optim.SGD(mem_n2n.parameters(), lr=0.01)
    losses = []
    for epoch in range(3):
        story = np.zeros((3, memory_size, sentence_size), np.int64)
        for b in range(3):  # padded sentences, word 0 the pad, as the bAbI loader leaves them
            for s_ in range(rng.integers(2, memory_size + 1)):
                n = rng.integers(1, sentence_size + 1)
                story[b, s_, :n] = rng.integers(1, num_vocab, n)
        query = np.zeros((3, sentence_size), np.int64)
        query[:, :3] = rng.integers(1, num_vocab, (3, 3))
        answer = rng.integers(1, num_vocab, 3)
        story = from_autograd.Variable(torch.LongTensor(story))
        query = from_autograd.Variable(torch.LongTensor(query))
        answer = from_autograd.Variable(torch.LongTensor(answer))
        opt.zero_grad()
        loss = ce_fn(mem_n2n(story, query)[0], answer)
        loss.backward()
        nn.utils.clip_grad_norm(mem_n2n.parameters(), 40.0)
        opt.step()
        if epoch % 2 == 1:
            for pg in opt.param_groups:
                pg["lr"] = pg["lr"] / 2
        losses += [loss.item()]
    return init, losses + summary(mem_n2n.parameters())


def test_memn2n():
    compare(memn2n)


# (h) salesforce/pytorch-qrnn (torchqrnn/qrnn.py's QRNNLayer with window=2 and save_prev_x, forget_mult.py's
# CPUForgetMult; the awd-lstm-lm style language model around it): f * x split into time steps, h + (1 - forgets[i])
# * prev_h, torch.stack of the steps, the previous input kept by self.prevX = Xm1[-1:].detach(), Y.chunk(3, dim=2),
# output gates by torch.sigmoid, hidden states repackaged between batches, Xm1 built from X[:1, :, :] * 0
def qrnn_language_model(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(8)
    ntoken, ninp, nhid, bptt, bsz = 11, 6, 7, 4, 3

    class CPUForgetMult(torch.nn.Module):
        def __init__(self):
            super(CPUForgetMult, self).__init__()

        def forward(self, f, x, hidden_init=None):
            result = []
            forgets = f.split(1, dim=0)
            prev_h = hidden_init
            for i, h in enumerate((f * x).split(1, dim=0)):
                if prev_h is not None:
                    h = h + (1 - forgets[i]) * prev_h
                h = h.view(h.size()[1:])
                result.append(h)
                prev_h = h
            return torch.stack(result)

    class QRNNLayer(nn.Module):
        def __init__(self, input_size, hidden_size=None, save_prev_x=False, zoneout=0, window=1, output_gate=True,
                     use_cuda=True):
            super(QRNNLayer, self).__init__()
            assert window in [1, 2], "This QRNN implementation currently only handles convolutional window of size 1 or size 2"
            self.window = window
            self.input_size = input_size
            self.hidden_size = hidden_size if hidden_size else input_size
            self.zoneout = zoneout
            self.save_prev_x = save_prev_x
            self.prevX = None
            self.output_gate = output_gate
            self.use_cuda = use_cuda
            self.linear = nn.Linear(self.window * self.input_size,
                                    3 * self.hidden_size if self.output_gate else 2 * self.hidden_size)

        def reset(self):
            self.prevX = None

        def forward(self, X, hidden=None):
            seq_len, batch_size, _ = X.size()
            source = None
            if self.window == 1:
                source = X
            elif self.window == 2:
                Xm1 = []
                Xm1.append(self.prevX if self.prevX is not None else X[:1, :, :] * 0)
                if len(X) > 1:
                    Xm1.append(X[:-1, :, :])
                Xm1 = torch.cat(Xm1, 0)
                source = torch.cat([X, Xm1], 2)
            Y = self.linear(source)
            if self.output_gate:
                Y = Y.view(seq_len, batch_size, 3 * self.hidden_size)
                Z, F, O = Y.chunk(3, dim=2)
            else:
                Y = Y.view(seq_len, batch_size, 2 * self.hidden_size)
                Z, F = Y.chunk(2, dim=2)
            Z = torch.nn.functional.tanh(Z)
            F = torch.nn.functional.sigmoid(F)
            if self.zoneout:
                if self.training:
                    mask = F.new_empty(F.size(), requires_grad=False).bernoulli_(1 - self.zoneout)
                    F = F * mask
                else:
                    F *= 1 - self.zoneout
            Z = Z.contiguous()
            F = F.contiguous()
            C = CPUForgetMult()(F, Z, hidden)
            if self.output_gate:
                H = torch.sigmoid(O) * C
            else:
                H = C
            if self.window > 1 and self.save_prev_x:
                self.prevX = Xm1[-1:, :, :].detach()
            return H, C[-1:, :, :]

    class QRNN(torch.nn.Module):
        def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0,
                     bidirectional=False, layers=None, **kwargs):
            assert bidirectional is False, 'Bidirectional QRNN is not yet supported'
            assert batch_first is False, 'Batch first mode is not yet supported'
            assert bias is True, 'Removing underlying bias is not yet supported'
            super(QRNN, self).__init__()
            self.layers = torch.nn.ModuleList(layers if layers else [
                QRNNLayer(input_size if l == 0 else hidden_size, hidden_size, **kwargs) for l in range(num_layers)])
            self.input_size = input_size
            self.hidden_size = hidden_size
            self.num_layers = len(layers) if layers else num_layers
            self.bias = bias
            self.batch_first = batch_first
            self.dropout = dropout
            self.bidirectional = bidirectional

        def reset(self):
            [layer.reset() for layer in self.layers]

        def forward(self, input, hidden=None):
            next_hidden = []
            for i, layer in enumerate(self.layers):
                input, hn = layer(input, None if hidden is None else hidden[i])
                next_hidden.append(hn)
                if self.dropout != 0 and i < len(self.layers) - 1:
                    input = torch.nn.functional.dropout(input, p=self.dropout, training=self.training, inplace=False)
            next_hidden = torch.cat(next_hidden, 0).view(self.num_layers, *next_hidden[0].size()[-2:])
            return input, next_hidden

    class RNNModel(nn.Module):
        def __init__(self, ntoken, ninp, nhid, nlayers):
            super(RNNModel, self).__init__()
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnns = [QRNNLayer(input_size=ninp if l == 0 else nhid, hidden_size=nhid if l != nlayers - 1 else ninp,
                                   save_prev_x=True, zoneout=0, window=2 if l == 0 else 1, output_gate=True)
                         for l in range(nlayers)]
            self.rnns = torch.nn.ModuleList(self.rnns)
            self.decoder = nn.Linear(ninp, ntoken)
            self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.nlayers = nlayers

        def reset(self):
            [r.reset() for r in self.rnns]

        def init_weights(self):
            initrange = 0.1
            self.encoder.weight.data.uniform_(-initrange, initrange)
            self.decoder.bias.data.fill_(0)

        def forward(self, input, hidden):
            raw_output = self.encoder(input)
            new_hidden = []
            for l, rnn in enumerate(self.rnns):
                raw_output, new_h = rnn(raw_output, hidden[l])
                new_hidden.append(new_h)
            return self.decoder(raw_output), new_hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters()).data
            return [weight.new(1, bsz, nhid if l != self.nlayers - 1 else ninp).zero_() for l in range(self.nlayers)]

    def repackage_hidden(h):
        if isinstance(h, torch.Tensor):
            return h.detach()
        else:
            return tuple(repackage_hidden(v) for v in h)

    model = RNNModel(ntoken, ninp, nhid, nlayers=2)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0, weight_decay=1.2e-6)
    train_data = torch.tensor(rng.integers(0, ntoken, (3 * bptt + 1, bsz)))
    model.train()
    model.reset()
    hidden = model.init_hidden(bsz)
    losses = []
    for i in range(0, 3 * bptt, bptt):
        data, targets = train_data[i:i + bptt], train_data[i + 1:i + 1 + bptt].view(-1)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, ntoken), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        losses += [loss.item()]
    return init, losses + summary(model.parameters()) + [model.rnns[0].prevX.sum().item()]


def test_qrnn_language_model():
    compare(qrnn_language_model)


# (i) gitabcworld/MatchingNetworks (models/MatchingNetwork.py, Classifier.py, DistanceNetwork.py,
# AttentionalClassify.py, BidirectionalLSTM.py; datasets/omniglotNShot.py's batches; option/experiments' loop):
# init.xavier_uniform and init.constant (the deprecated names), cosine similarities by bmm and
# sum_support.clamp(eps, float("inf")).rsqrt(), nn.Softmax() with its implicit dim, support labels one-hot by
# FloatTensor(...).zero_().scatter_(2, y.data, 1), the NHWC batch put to NCHW by view (as the original does), a full
# context embedding by a bidirectional LSTM whose hidden state repackage_hidden cuts through isinstance(h, Variable)
def matching_networks(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_ = m.nn.init
    Variable = m.torch.autograd.Variable
    torch.manual_seed(0)
    rng = np.random.default_rng(9)
    classes_per_set, samples_per_class, batch_size, image_size = 2, 1, 2, 8

    def convLayer(in_planes, out_planes, useDropout=False):
        seq = nn.Sequential(
            nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=1, padding=1, bias=True),
            nn.BatchNorm2d(out_planes),
            nn.ReLU(True),
            nn.MaxPool2d(kernel_size=2, stride=2))
        if useDropout:
            seq.add_module('dropout', nn.Dropout(0.1))
        return seq

    class Classifier(nn.Module):
        def __init__(self, layer_size=64, num_channels=1, keep_prob=1.0, image_size=28):
            super(Classifier, self).__init__()
            self.layer1 = convLayer(num_channels, layer_size, keep_prob < 1.0)
            self.layer2 = convLayer(layer_size, layer_size, keep_prob < 1.0)
            self.layer3 = convLayer(layer_size, layer_size, keep_prob < 1.0)
            finalSize = int(np.floor(image_size / (2 * 2 * 2)))
            self.outSize = finalSize * finalSize * layer_size
            self.weights_init(self.layer1)
            self.weights_init(self.layer2)
            self.weights_init(self.layer3)

        def weights_init(self, module):
            for m_ in module.modules():
                if isinstance(m_, nn.Conv2d):
                    init_.xavier_uniform(m_.weight, gain=np.sqrt(2))
                    init_.constant(m_.bias, 0)
                elif isinstance(m_, nn.BatchNorm2d):
                    m_.weight.data.fill_(1)
                    m_.bias.data.zero_()

        def forward(self, image_input):
            x = self.layer1(image_input)
            x = self.layer2(x)
            x = self.layer3(x)
            x = x.view(x.size()[0], -1)
            return x

    class DistanceNetwork(nn.Module):
        def __init__(self):
            super(DistanceNetwork, self).__init__()

        def forward(self, support_set, input_image):
            eps = 1e-10
            similarities = []
            for support_image in support_set:
                sum_support = torch.sum(torch.pow(support_image, 2), 1)
                support_magnitude = sum_support.clamp(eps, float("inf")).rsqrt()
                dot_product = input_image.unsqueeze(1).bmm(support_image.unsqueeze(2)).squeeze()
                cosine_similarity = dot_product * support_magnitude
                similarities.append(cosine_similarity)
            similarities = torch.stack(similarities)
            return similarities

    class AttentionalClassify(nn.Module):
        def __init__(self):
            super(AttentionalClassify, self).__init__()

        def forward(self, similarities, support_set_y):
            softmax = nn.Softmax()
            softmax_similarities = softmax(similarities)
            preds = softmax_similarities.unsqueeze(1).bmm(support_set_y).squeeze()
            return preds

    class BidirectionalLSTM(nn.Module):
        def __init__(self, layer_sizes, batch_size, vector_dim, use_cuda):
            super(BidirectionalLSTM, self).__init__()
            self.batch_size = batch_size
            self.hidden_size = layer_sizes[0]
            self.vector_dim = vector_dim
            self.num_layers = len(layer_sizes)
            self.use_cuda = use_cuda
            self.lstm = nn.LSTM(input_size=self.vector_dim, num_layers=self.num_layers, hidden_size=self.hidden_size,
                                bidirectional=True)
            self.hidden = self.init_hidden(self.use_cuda)

        def init_hidden(self, use_cuda):
            return (Variable(torch.zeros(self.lstm.num_layers * 2, self.batch_size, self.lstm.hidden_size),
                             requires_grad=False),
                    Variable(torch.zeros(self.lstm.num_layers * 2, self.batch_size, self.lstm.hidden_size),
                             requires_grad=False))

        def repackage_hidden(self, h):
            if isinstance(h, Variable):
                return Variable(h.data)
            else:
                return tuple(self.repackage_hidden(v) for v in h)

        def forward(self, inputs):
            self.hidden = self.repackage_hidden(self.hidden)
            output, self.hidden = self.lstm(inputs, self.hidden)
            return output

    class MatchingNetwork(nn.Module):
        def __init__(self, keep_prob, batch_size=100, num_channels=1, learning_rate=0.001, fce=False,
                     num_classes_per_set=5, num_samples_per_class=1, nClasses=0, image_size=28, use_cuda=True):
            super(MatchingNetwork, self).__init__()
            self.batch_size = batch_size
            self.fce = fce
            self.g = Classifier(layer_size=8, num_channels=num_channels, keep_prob=keep_prob, image_size=image_size)
            if fce:
                self.lstm = BidirectionalLSTM(layer_sizes=[4], batch_size=self.batch_size, vector_dim=self.g.outSize,
                                              use_cuda=use_cuda)
            self.dn = DistanceNetwork()
            self.classify = AttentionalClassify()

        def forward(self, support_set_images, support_set_labels_one_hot, target_image, target_label):
            encoded_images = []
            for i in np.arange(support_set_images.size(1)):
                gen_encode = self.g(support_set_images[:, i, :, :, :])
                encoded_images.append(gen_encode)
            for i in np.arange(target_image.size(1)):
                gen_encode = self.g(target_image[:, i, :, :, :])
                encoded_images.append(gen_encode)
                outputs = torch.stack(encoded_images)
                if self.fce:
                    outputs = self.lstm(outputs)
                similarities = self.dn(support_set=outputs[:-1], input_image=outputs[-1])
                similarities = similarities.t()
                preds = self.classify(similarities, support_set_y=support_set_labels_one_hot)
                values, indices = preds.max(1)
                if i == 0:
                    accuracy = torch.mean((indices.squeeze() == target_label[:, i]).float())
                    crossentropy_loss = F.cross_entropy(preds, target_label[:, i].long())
                else:
                    accuracy = accuracy + torch.mean((indices.squeeze() == target_label[:, i]).float())
                    crossentropy_loss = crossentropy_loss + F.cross_entropy(preds, target_label[:, i].long())
                encoded_images.pop()
            return accuracy / target_image.size(1), crossentropy_loss / target_image.size(1)

    def get_batch():  # omniglotNShot's sample_new_batch: NHWC images, labels 0..classes_per_set-1
        n_support = classes_per_set * samples_per_class
        x_support_set = rng.random((batch_size, n_support, image_size, image_size, 1)).astype(np.float32)
        y_support_set = np.stack([rng.permutation(classes_per_set) for _ in range(batch_size)])
        x_target = rng.random((batch_size, 2, image_size, image_size, 1)).astype(np.float32)
        y_target = rng.integers(0, classes_per_set, (batch_size, 2))
        return x_support_set, y_support_set, x_target, y_target

    matchingNet = MatchingNetwork(batch_size=batch_size, keep_prob=1.0, num_channels=1, fce=True,
                                  num_classes_per_set=classes_per_set, num_samples_per_class=samples_per_class,
                                  nClasses=0, image_size=image_size, use_cuda=False)
    init = load(m, matchingNet, state)
    optimizer = torch.optim.Adam(matchingNet.parameters(), lr=1e-3, weight_decay=1e-6)
    losses = []
    for i in range(2):
        x_support_set, y_support_set, x_target, y_target = get_batch()
        x_support_set = Variable(torch.from_numpy(x_support_set)).float()
        y_support_set = Variable(torch.from_numpy(y_support_set), requires_grad=False).long()
        x_target = Variable(torch.from_numpy(x_target)).float()
        y_target = Variable(torch.from_numpy(y_target), requires_grad=False).long()
        y_support_set = y_support_set.unsqueeze(2)
        sequence_length = y_support_set.size()[1]
        batch_size_ = y_support_set.size()[0]
        y_support_set_one_hot = torch.FloatTensor(batch_size_, sequence_length, classes_per_set).zero_()
        y_support_set_one_hot.scatter_(2, y_support_set.data, 1)
        y_support_set_one_hot = Variable(y_support_set_one_hot)
        size = x_support_set.size()
        x_support_set = x_support_set.view(size[0], size[1], size[4], size[2], size[3])
        size = x_target.size()
        x_target = x_target.view(size[0], size[1], size[4], size[2], size[3])
        acc, c_loss_value = matchingNet(x_support_set, y_support_set_one_hot, x_target, y_target)
        optimizer.zero_grad()
        c_loss_value.backward()
        optimizer.step()
        losses += [c_loss_value.item(), acc.item()]
    # the conv biases before batch norm have a zero gradient but for rounding, which Adam's steps normalise to lr
    return init, losses + summary(p for n, p in matchingNet.named_parameters() if not n.endswith("0.bias")) + \
        summary(matchingNet.buffers())


def test_matching_networks():
    compare(matching_networks)


# (j) yaringal/ConcreteDropout (concrete-dropout-pytorch.ipynb): a learnt dropout rate, p_logit a Parameter of
# torch.empty(1).uniform_(init_min, init_max), the relaxed Bernoulli mask from a uniform draw (torch.rand_like's,
# numpy's here), x /= retain_prob on a non-leaf, the regularisers summed over layer.parameters() from a python 0,
# five regularisation terms written into torch.empty(5) by tuple unpacking, the heteroscedastic loss, MC samples at
# evaluation and the dropout rates read back through modules() and hasattr(module, 'p_logit')
def concrete_dropout(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(10)
    nb_features, N = 8, 10
    l = 1e-4
    wr = l ** 2. / N
    dr = 2. / N

    class ConcreteDropout(nn.Module):
        def __init__(self, weight_regularizer=1e-6, dropout_regularizer=1e-5, init_min=0.1, init_max=0.1):
            super(ConcreteDropout, self).__init__()
            self.weight_regularizer = weight_regularizer
            self.dropout_regularizer = dropout_regularizer
            init_min = np.log(init_min) - np.log(1. - init_min)
            init_max = np.log(init_max) - np.log(1. - init_max)
            self.p_logit = nn.Parameter(torch.empty(1).uniform_(init_min, init_max))

        def forward(self, x, layer):
            p = torch.sigmoid(self.p_logit)
            out = layer(self._concrete_dropout(x, p))
            sum_of_square = 0
            for param in layer.parameters():
                sum_of_square += torch.sum(torch.pow(param, 2))
            weights_regularizer = self.weight_regularizer * sum_of_square / (1 - p)
            dropout_regularizer = p * torch.log(p)
            dropout_regularizer += (1. - p) * torch.log(1. - p)
            input_dimensionality = x[0].numel()
            dropout_regularizer *= self.dropout_regularizer * input_dimensionality
            regularization = weights_regularizer + dropout_regularizer
            return out, regularization

        def _concrete_dropout(self, x, p):
            eps = 1e-7
            temp = 0.1
            unif_noise = torch.from_numpy(rng.random(tuple(x.shape)).astype(np.float32))  # torch.rand_like(x)'s
            drop_prob = (torch.log(p + eps) - torch.log(1 - p + eps) + torch.log(unif_noise + eps)
                         - torch.log(1 - unif_noise + eps))
            drop_prob = torch.sigmoid(drop_prob / temp)
            random_tensor = 1 - drop_prob
            retain_prob = 1 - p
            x = torch.mul(x, random_tensor)
            x /= retain_prob
            return x

    class Model(nn.Module):
        def __init__(self, weight_regularizer, dropout_regularizer):
            super(Model, self).__init__()
            self.linear1 = nn.Linear(1, nb_features)
            self.linear2 = nn.Linear(nb_features, nb_features)
            self.linear3 = nn.Linear(nb_features, nb_features)
            self.linear4_mu = nn.Linear(nb_features, 1)
            self.linear4_logvar = nn.Linear(nb_features, 1)
            self.conc_drop1 = ConcreteDropout(weight_regularizer=weight_regularizer,
                                              dropout_regularizer=dropout_regularizer)
            self.conc_drop2 = ConcreteDropout(weight_regularizer=weight_regularizer,
                                              dropout_regularizer=dropout_regularizer)
            self.conc_drop3 = ConcreteDropout(weight_regularizer=weight_regularizer,
                                              dropout_regularizer=dropout_regularizer)
            self.conc_drop_mu = ConcreteDropout(weight_regularizer=weight_regularizer,
                                                dropout_regularizer=dropout_regularizer)
            self.conc_drop_logvar = ConcreteDropout(weight_regularizer=weight_regularizer,
                                                    dropout_regularizer=dropout_regularizer)
            self.relu = nn.ReLU()

        def forward(self, x):
            regularization = torch.empty(5, device=x.device)
            x1, regularization[0] = self.conc_drop1(x, nn.Sequential(self.linear1, self.relu))
            x2, regularization[1] = self.conc_drop2(x1, nn.Sequential(self.linear2, self.relu))
            x3, regularization[2] = self.conc_drop3(x2, nn.Sequential(self.linear3, self.relu))
            mean, regularization[3] = self.conc_drop_mu(x3, self.linear4_mu)
            log_var, regularization[4] = self.conc_drop_logvar(x3, self.linear4_logvar)
            return mean, log_var, regularization.sum()

    def heteroscedastic_loss(true, mean, log_var):
        precision = torch.exp(-log_var)
        return torch.mean(torch.sum(precision * (true - mean) ** 2 + log_var, 1), 0)

    def gen_data(N):
        X = rng.standard_normal((N, 1))
        w, b = 2., 8.
        Y = X.dot(np.array([[w]])) + b + 1.0 * rng.standard_normal((N, 1))
        return X.astype(np.float32), Y.astype(np.float32)

    X, Y = gen_data(N)
    model = Model(wr, dr)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters())
    losses = []
    batch_size = 10
    for i in range(2):
        old_batch = 0
        for batch in range(int(np.ceil(X.shape[0] / batch_size))):
            batch = (batch + 1)
            _x = X[old_batch: batch_size * batch]
            _y = Y[old_batch: batch_size * batch]
            x = torch.FloatTensor(_x)
            y = torch.FloatTensor(_y)
            mean, log_var, regularization = model(x)
            loss = heteroscedastic_loss(y, mean, log_var) + regularization
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            old_batch = batch_size * batch
            losses += [loss.item()]
    model.eval()
    X_val, _ = gen_data(4)
    MC_samples = [model(torch.FloatTensor(X_val)) for _ in range(3)]
    means = torch.stack([tup[0] for tup in MC_samples]).view(3, X_val.shape[0]).cpu().data.numpy()
    logvar = torch.stack([tup[1] for tup in MC_samples]).view(3, X_val.shape[0]).cpu().data.numpy()
    ps = np.array([torch.sigmoid(module.p_logit).cpu().data.numpy()[0] for module in model.modules()
                   if hasattr(module, 'p_logit')])
    losses += [float(means.mean()), float(np.exp(logvar).mean())] + [float(p) for p in ps]
    return init, losses + summary(model.parameters())


def test_concrete_dropout():
    compare(concrete_dropout)


# (k) DmitryUlyanov/deep-image-prior (denoising.ipynb; models/skip.py, models/common.py's Concat, conv, bn, act and
# the `torch.nn.Module.add = add_module` patch; utils/common_utils.py's get_noise, fill_noise, get_params, optimize):
# a Sequential nested by adding a Concat(1, skip, deeper) before its branches are filled, Concat cropping the larger
# branch to the smaller's centre, ReflectionPad2d, bilinear nn.Upsample, .type(dtype) on a model, a loss module and
# tensors, the input re-noised by noise.normal_() (numpy's draw here) at each step, an exponential average of the
# output, PSNR on the host, and the fall back to the last parameters by net_param.data.copy_
def deep_image_prior(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(11)
    dtype = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor

    def add_module(self, module):
        self.add_module(str(len(self) + 1), module)

    torch.nn.Module.add = add_module

    class Concat(nn.Module):
        def __init__(self, dim, *args):
            super(Concat, self).__init__()
            self.dim = dim
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

        def forward(self, input):
            inputs = []
            for module in self._modules.values():
                inputs.append(module(input))
            inputs_shapes2 = [x.shape[2] for x in inputs]
            inputs_shapes3 = [x.shape[3] for x in inputs]
            if np.all(np.array(inputs_shapes2) == min(inputs_shapes2)) and \
                    np.all(np.array(inputs_shapes3) == min(inputs_shapes3)):
                inputs_ = inputs
            else:
                target_shape2 = min(inputs_shapes2)
                target_shape3 = min(inputs_shapes3)
                inputs_ = []
                for inp in inputs:
                    diff2 = (inp.size(2) - target_shape2) // 2
                    diff3 = (inp.size(3) - target_shape3) // 2
                    inputs_.append(inp[:, :, diff2: diff2 + target_shape2, diff3:diff3 + target_shape3])
            return torch.cat(inputs_, dim=self.dim)

        def __len__(self):
            return len(self._modules)

    def act(act_fun='LeakyReLU'):
        if isinstance(act_fun, str):
            if act_fun == 'LeakyReLU':
                return nn.LeakyReLU(0.2, inplace=True)
            elif act_fun == 'ELU':
                return nn.ELU()
            elif act_fun == 'none':
                return nn.Sequential()
            else:
                assert False
        else:
            return act_fun()

    def bn(num_features):
        return nn.BatchNorm2d(num_features)

    def conv(in_f, out_f, kernel_size, stride=1, bias=True, pad='zero', downsample_mode='stride'):
        downsampler = None
        if stride != 1 and downsample_mode != 'stride':
            if downsample_mode == 'avg':
                downsampler = nn.AvgPool2d(stride, stride)
            elif downsample_mode == 'max':
                downsampler = nn.MaxPool2d(stride, stride)
            else:
                assert False
            stride = 1
        padder = None
        to_pad = int((kernel_size - 1) / 2)
        if pad == 'reflection':
            padder = nn.ReflectionPad2d(to_pad)
            to_pad = 0
        convolver = nn.Conv2d(in_f, out_f, kernel_size, stride, padding=to_pad, bias=bias)
        layers = filter(lambda x: x is not None, [padder, convolver, downsampler])
        return nn.Sequential(*layers)

    def skip(num_input_channels=2, num_output_channels=3, num_channels_down=[16, 32, 64, 128, 128],
             num_channels_up=[16, 32, 64, 128, 128], num_channels_skip=[4, 4, 4, 4, 4], filter_size_down=3,
             filter_size_up=3, filter_skip_size=1, need_sigmoid=True, need_bias=True, pad='zero',
             upsample_mode='nearest', downsample_mode='stride', act_fun='LeakyReLU', need1x1_up=True):
        assert len(num_channels_down) == len(num_channels_up) == len(num_channels_skip)
        n_scales = len(num_channels_down)
        if not (isinstance(upsample_mode, list) or isinstance(upsample_mode, tuple)):
            upsample_mode = [upsample_mode] * n_scales
        if not (isinstance(downsample_mode, list) or isinstance(downsample_mode, tuple)):
            downsample_mode = [downsample_mode] * n_scales
        if not (isinstance(filter_size_down, list) or isinstance(filter_size_down, tuple)):
            filter_size_down = [filter_size_down] * n_scales
        if not (isinstance(filter_size_up, list) or isinstance(filter_size_up, tuple)):
            filter_size_up = [filter_size_up] * n_scales
        last_scale = n_scales - 1
        model = nn.Sequential()
        model_tmp = model
        input_depth = num_input_channels
        for i in range(len(num_channels_down)):
            deeper = nn.Sequential()
            skip = nn.Sequential()
            if num_channels_skip[i] != 0:
                model_tmp.add(Concat(1, skip, deeper))
            else:
                model_tmp.add(deeper)
            model_tmp.add(bn(num_channels_skip[i] + (num_channels_up[i + 1] if i < last_scale else
                                                     num_channels_down[i])))
            if num_channels_skip[i] != 0:
                skip.add(conv(input_depth, num_channels_skip[i], filter_skip_size, bias=need_bias, pad=pad))
                skip.add(bn(num_channels_skip[i]))
                skip.add(act(act_fun))
            deeper.add(conv(input_depth, num_channels_down[i], filter_size_down[i], 2, bias=need_bias, pad=pad,
                            downsample_mode=downsample_mode[i]))
            deeper.add(bn(num_channels_down[i]))
            deeper.add(act(act_fun))
            deeper.add(conv(num_channels_down[i], num_channels_down[i], filter_size_down[i], bias=need_bias, pad=pad))
            deeper.add(bn(num_channels_down[i]))
            deeper.add(act(act_fun))
            deeper_main = nn.Sequential()
            if i == len(num_channels_down) - 1:
                k = num_channels_down[i]
            else:
                deeper.add(deeper_main)
                k = num_channels_up[i + 1]
            deeper.add(nn.Upsample(scale_factor=2, mode=upsample_mode[i]))
            model_tmp.add(conv(num_channels_skip[i] + k, num_channels_up[i], filter_size_up[i], 1, bias=need_bias,
                               pad=pad))
            model_tmp.add(bn(num_channels_up[i]))
            model_tmp.add(act(act_fun))
            if need1x1_up:
                model_tmp.add(conv(num_channels_up[i], num_channels_up[i], 1, bias=need_bias, pad=pad))
                model_tmp.add(bn(num_channels_up[i]))
                model_tmp.add(act(act_fun))
            input_depth = num_channels_down[i]
            model_tmp = deeper_main
        model.add(conv(num_channels_up[0], num_output_channels, 1, bias=need_bias, pad=pad))
        if need_sigmoid:
            model.add(nn.Sigmoid())
        return model

    def fill_noise(x, noise_type):
        if noise_type == 'u':
            x.copy_(torch.from_numpy(rng.random(tuple(x.shape)).astype(np.float32)))  # x.uniform_()'s
        elif noise_type == 'n':
            x.copy_(torch.from_numpy(normal(rng, *x.shape)))  # x.normal_()'s
        else:
            assert False

    def get_noise(input_depth, method, spatial_size, noise_type='u', var=1. / 10):
        if isinstance(spatial_size, int):
            spatial_size = (spatial_size, spatial_size)
        if method == 'noise':
            shape = [1, input_depth, spatial_size[0], spatial_size[1]]
            net_input = torch.zeros(shape)
            fill_noise(net_input, noise_type)
            net_input *= var
        else:
            assert False
        return net_input

    def compare_psnr(image_true, image_test):
        return 10 * np.log10(1. / np.mean((image_true - image_test) ** 2))

    try:
        img_np = rng.random((3, 7, 7)).astype(np.float32)
        img_noisy_np = np.clip(img_np + rng.normal(0, 25 / 255., img_np.shape), 0, 1).astype(np.float32)
        INPUT, pad, input_depth, reg_noise_std, exp_weight, LR = 'noise', 'reflection', 4, 1. / 30., 0.99, 0.01
        net = skip(input_depth, 3, num_channels_down=[4, 4], num_channels_up=[4, 4], num_channels_skip=[2, 2],
                   upsample_mode='bilinear', need_sigmoid=True, need_bias=True, pad=pad, act_fun='LeakyReLU')
        net = net.type(dtype)
        init = load(m, net, state)
        net_input = get_noise(input_depth, INPUT, (img_np.shape[1], img_np.shape[2])).type(dtype).detach()
        s = sum([np.prod(list(p.size())) for p in net.parameters()])
        mse = torch.nn.MSELoss().type(dtype)
        img_noisy_torch = torch.from_numpy(img_noisy_np)[None, :].type(dtype)
        net_input_saved = net_input.detach().clone()
        noise = net_input.detach().clone()
        run = {"i": 0, "out_avg": None, "psrn_noisy_last": 0, "last_net": None}
        losses = [float(s)]

        def closure():
            net_input = net_input_saved + (noise.copy_(torch.from_numpy(normal(rng, *noise.shape))) * reg_noise_std)
            out = net(net_input)
            if run["out_avg"] is None:
                run["out_avg"] = out.detach()
            else:
                run["out_avg"] = run["out_avg"] * exp_weight + out.detach() * (1 - exp_weight)
            total_loss = mse(out, img_noisy_torch)
            total_loss.backward()
            psrn_noisy = compare_psnr(img_noisy_np, out.detach().cpu().numpy()[0])
            psrn_gt_sm = compare_psnr(img_np, run["out_avg"].detach().cpu().numpy()[0])
            losses.extend([total_loss.item(), psrn_noisy, psrn_gt_sm])
            if psrn_noisy - run["psrn_noisy_last"] < -5:
                for new_param, net_param in zip(run["last_net"], net.parameters()):
                    net_param.data.copy_(new_param)
                return total_loss * 0
            else:
                run["last_net"] = [x.detach().cpu() for x in net.parameters()]
                run["psrn_noisy_last"] = psrn_noisy
            run["i"] += 1
            return total_loss

        def optimize(optimizer_type, parameters, closure, LR, num_iter):
            if optimizer_type == 'adam':
                optimizer = torch.optim.Adam(parameters, lr=LR)
                for j in range(num_iter):
                    optimizer.zero_grad()
                    closure()
                    optimizer.step()
            else:
                assert False

        p = [x for x in net.parameters()]
        optimize('adam', p, closure, LR, 3)
        for new_param, net_param in zip(run["last_net"], net.parameters()):  # the closure's fall back, once
            net_param.data.copy_(new_param)
    finally:
        del torch.nn.Module.add
    # the weights alone: many biases here have a zero gradient but for rounding (a conv's before a batch norm, a batch
    # norm's before a reflection-padded conv and a batch norm), which Adam's steps normalise to +-lr, and the batch
    # norms' running means take them in
    return init, losses + summary(p for p in net.parameters() if p.dim() > 1)


def test_deep_image_prior():
    compare(deep_image_prior)


# (l) zalandoresearch/pytorch-ts's DeepVAR (pts/model/deepvar/deepvar_network.py's DeepVARTrainingNetwork;
# pts/modules/distribution_output.py's LowRankMultivariateNormalOutput, PtArgProj and AffineTransformed;
# pts/modules/scaler.py's MeanScaler; pts/model/utils.py's weighted_average): lagged subsequences by negative slices,
# a per-series scale by torch.max against a 0-d buffer and torch.where to a default scale, a low-rank multivariate
# normal under an AffineTransform(event_dim=1) in a TransformedDistribution subclass whose mean and variance are
# properties, observed-value weights by min(dim=-1, keepdim=True), inv_softplus on the host
def deepvar(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    distributions = m.torch.distributions
    LowRankMultivariateNormal, TransformedDistribution = (distributions.LowRankMultivariateNormal,
                                                          distributions.TransformedDistribution)
    AffineTransform = distributions.AffineTransform
    torch.manual_seed(0)
    rng = np.random.default_rng(12)
    B, target_dim, rank, context_length, prediction_length, lags_seq, n_time_feat = 3, 3, 2, 4, 2, [2, 1], 2
    history_length = context_length + max(lags_seq)

    def inv_softplus(y):
        if y < 20.0:
            return np.log(np.exp(y) - 1.0)
        return y

    def weighted_average(x, weights=None, dim=None):
        if weights is not None:
            weighted_tensor = torch.where(weights != 0, x * weights, torch.zeros_like(x))
            sum_weights = torch.clamp(weights.sum(dim=dim) if dim else weights.sum(), min=1.0)
            return (weighted_tensor.sum(dim=dim) if dim else weighted_tensor.sum()) / sum_weights
        else:
            return x.mean(dim=dim)

    class MeanScaler(nn.Module):
        def __init__(self, minimum_scale=1e-10, keepdim=False):
            super().__init__()
            self.keepdim = keepdim
            self.register_buffer("minimum_scale", torch.tensor(minimum_scale))

        def compute_scale(self, data, observed_indicator):
            num_observed = observed_indicator.sum(dim=1)
            sum_observed = (data.abs() * observed_indicator).sum(dim=1)
            total_observed = num_observed.sum(dim=0)
            denominator = torch.max(total_observed, torch.ones_like(total_observed))
            default_scale = sum_observed.sum(dim=0) / denominator
            scale = sum_observed / torch.max(num_observed, torch.ones_like(num_observed))
            scale = torch.where(sum_observed > torch.zeros_like(sum_observed), scale,
                                default_scale * torch.ones_like(num_observed))
            return torch.max(scale, self.minimum_scale).detach()

        def forward(self, data, observed_indicator):
            scale = self.compute_scale(data, observed_indicator)
            if self.keepdim:
                scale = scale.unsqueeze(1)
                return data / scale, scale
            return data / scale.unsqueeze(1), scale

    class AffineTransformed(TransformedDistribution):
        def __init__(self, base_distribution, loc=None, scale=None, event_dim=0):
            self.scale = 1.0 if scale is None else scale
            self.loc = 0.0 if loc is None else loc
            super().__init__(base_distribution, [AffineTransform(self.loc, self.scale, event_dim=event_dim)])

        @property
        def mean(self):
            return self.base_dist.mean * self.scale + self.loc

        @property
        def variance(self):
            return self.base_dist.variance * self.scale ** 2

        @property
        def stddev(self):
            return self.variance.sqrt()

    class PtArgProj(nn.Module):
        def __init__(self, in_features, args_dim, domain_map, dtype=np.float32, prefix=None, **kwargs):
            super().__init__(**kwargs)
            self.args_dim = args_dim
            self.proj = nn.ModuleList([nn.Linear(in_features, dim) for dim in args_dim.values()])
            self.domain_map = domain_map

        def forward(self, x):
            params_unbounded = [proj(x) for proj in self.proj]
            return self.domain_map(*params_unbounded)

    class LowRankMultivariateNormalOutput:
        def __init__(self, dim, rank, sigma_init=1.0, sigma_minimum=1e-3):
            self.distr_cls = LowRankMultivariateNormal
            self.dim = dim
            self.rank = rank
            self.sigma_init = sigma_init
            self.sigma_minimum = sigma_minimum
            self.args_dim = {"loc": dim, "cov_factor": dim * rank, "cov_diag": dim}

        def get_args_proj(self, in_features):
            return PtArgProj(in_features=in_features, args_dim=self.args_dim, domain_map=self.domain_map)

        def domain_map(self, loc, cov_factor, cov_diag):
            diag_bias = inv_softplus(self.sigma_init ** 2) if self.sigma_init > 0.0 else 0.0
            shape = cov_factor.shape[:-1] + (self.dim, self.rank)
            cov_factor = cov_factor.reshape(shape)
            cov_diag = F.softplus(cov_diag + diag_bias) + self.sigma_minimum ** 2
            return loc, cov_factor, cov_diag

        def distribution(self, distr_args, loc=None, scale=None):
            distr = self.distr_cls(*distr_args)
            if loc is None and scale is None:
                return distr
            return AffineTransformed(distr, loc=loc, scale=scale, event_dim=1)

    class DeepVARTrainingNetwork(nn.Module):
        def __init__(self, input_size, num_layers, num_cells, cell_type, history_length, context_length,
                     prediction_length, distr_output, dropout_rate, lags_seq, target_dim, scaling=True, **kwargs):
            super().__init__(**kwargs)
            self.num_layers = num_layers
            self.num_cells = num_cells
            self.cell_type = cell_type
            self.history_length = history_length
            self.context_length = context_length
            self.prediction_length = prediction_length
            self.dropout_rate = dropout_rate
            self.scaling = scaling
            assert len(set(lags_seq)) == len(lags_seq), "no duplicated lags allowed!"
            lags_seq.sort()
            self.lags_seq = lags_seq
            self.distr_output = distr_output
            self.target_dim = target_dim
            self.embed_dim = 1
            self.embed = nn.Embedding(num_embeddings=self.target_dim, embedding_dim=self.embed_dim)
            rnn = {"LSTM": nn.LSTM, "GRU": nn.GRU}[self.cell_type]
            self.rnn = rnn(input_size=input_size, hidden_size=num_cells, num_layers=num_layers, dropout=dropout_rate,
                           batch_first=True)
            self.proj_dist_args = distr_output.get_args_proj(num_cells)
            self.scaler = MeanScaler(keepdim=True)

        @staticmethod
        def get_lagged_subsequences(sequence, sequence_length, indices, subsequences_length=1):
            assert max(indices) + subsequences_length <= sequence_length, (
                f"lags cannot go further than history length, found lag {max(indices)} "
                f"while history length is only {sequence_length}")
            assert all(lag_index >= 0 for lag_index in indices)
            lagged_values = []
            for lag_index in indices:
                begin_index = -lag_index - subsequences_length
                end_index = -lag_index if lag_index > 0 else None
                lagged_values.append(sequence[:, begin_index:end_index, ...].unsqueeze(1))
            return torch.cat(lagged_values, dim=1).permute(0, 2, 3, 1)

        def unroll(self, lags, scale, time_feat, target_dimension_indicator, unroll_length, begin_state=None):
            lags_scaled = lags / scale.unsqueeze(-1)
            input_lags = lags_scaled.reshape((-1, unroll_length, len(self.lags_seq) * self.target_dim))
            index_embeddings = self.embed(target_dimension_indicator)
            repeated_index_embeddings = (index_embeddings.unsqueeze(1).expand(-1, unroll_length, -1, -1)
                                         .reshape((-1, unroll_length, self.target_dim * self.embed_dim)))
            inputs = torch.cat((input_lags, repeated_index_embeddings, time_feat), dim=-1)
            outputs, state = self.rnn(inputs, begin_state)
            return outputs, state, lags_scaled, inputs

        def unroll_encoder(self, past_time_feat, past_target_cdf, past_observed_values, past_is_pad,
                           future_time_feat, future_target_cdf, target_dimension_indicator):
            past_observed_values = torch.min(past_observed_values, 1 - past_is_pad.unsqueeze(-1))
            if future_time_feat is None or future_target_cdf is None:
                time_feat = past_time_feat[:, -self.context_length:, ...]
                sequence = past_target_cdf
                sequence_length = self.history_length
                subsequences_length = self.context_length
            else:
                time_feat = torch.cat((past_time_feat[:, -self.context_length:, ...], future_time_feat), dim=1)
                sequence = torch.cat((past_target_cdf, future_target_cdf), dim=1)
                sequence_length = self.history_length + self.prediction_length
                subsequences_length = self.context_length + self.prediction_length
            lags = self.get_lagged_subsequences(sequence=sequence, sequence_length=sequence_length,
                                                indices=self.lags_seq, subsequences_length=subsequences_length)
            _, scale = self.scaler(past_target_cdf[:, -self.context_length:, ...],
                                   past_observed_values[:, -self.context_length:, ...])
            outputs, states, lags_scaled, inputs = self.unroll(
                lags=lags, scale=scale, time_feat=time_feat, target_dimension_indicator=target_dimension_indicator,
                unroll_length=subsequences_length, begin_state=None)
            return outputs, states, scale, lags_scaled, inputs

        def distr(self, rnn_outputs, scale):
            distr_args = self.proj_dist_args(rnn_outputs)
            return self.distr_output.distribution(distr_args, scale=scale), distr_args

        def forward(self, target_dimension_indicator, past_time_feat, past_target_cdf, past_observed_values,
                    past_is_pad, future_time_feat, future_target_cdf, future_observed_values):
            rnn_outputs, _, scale, lags_scaled, inputs = self.unroll_encoder(
                past_time_feat=past_time_feat, past_target_cdf=past_target_cdf,
                past_observed_values=past_observed_values, past_is_pad=past_is_pad,
                future_time_feat=future_time_feat, future_target_cdf=future_target_cdf,
                target_dimension_indicator=target_dimension_indicator)
            target = torch.cat((past_target_cdf[:, -self.context_length:, ...], future_target_cdf), dim=1)
            distr, distr_args = self.distr(rnn_outputs=rnn_outputs, scale=scale)
            likelihoods = -distr.log_prob(target).unsqueeze(-1)
            past_observed_values = torch.min(past_observed_values, 1 - past_is_pad.unsqueeze(-1))
            observed_values = torch.cat((past_observed_values[:, -self.context_length:, ...],
                                         future_observed_values), dim=1)
            loss_weights, _ = observed_values.min(dim=-1, keepdim=True)
            loss = weighted_average(likelihoods, weights=loss_weights, dim=1)
            return (loss.mean(), likelihoods, distr_args, distr)

    input_size = len(lags_seq) * target_dim + target_dim + n_time_feat
    net = DeepVARTrainingNetwork(input_size=input_size, num_layers=2, num_cells=6, cell_type="LSTM",
                                 history_length=history_length, context_length=context_length,
                                 prediction_length=prediction_length,
                                 distr_output=LowRankMultivariateNormalOutput(dim=target_dim, rank=rank),
                                 dropout_rate=0.0, lags_seq=lags_seq, target_dim=target_dim)
    init = load(m, net, state)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-8)
    losses = []
    for step in range(2):
        level = rng.uniform(1, 5, (B, 1, target_dim))
        series = (level * (1 + 0.3 * rng.standard_normal((B, history_length + prediction_length, target_dim))))
        observed = (rng.random(series.shape) > 0.1).astype(np.float32)
        observed[0, :, 1] = 0.0  # a series never observed: the default scale
        is_pad = np.zeros((B, history_length), np.float32)
        is_pad[1, :2] = 1.0
        time_feat = rng.standard_normal((B, history_length + prediction_length, n_time_feat))
        batch = {"target_dimension_indicator": torch.arange(target_dim).repeat(B, 1),
                 "past_time_feat": torch.tensor(time_feat[:, :history_length], dtype=torch.float32),
                 "past_target_cdf": torch.tensor(series[:, :history_length], dtype=torch.float32),
                 "past_observed_values": torch.tensor(observed[:, :history_length]),
                 "past_is_pad": torch.tensor(is_pad),
                 "future_time_feat": torch.tensor(time_feat[:, history_length:], dtype=torch.float32),
                 "future_target_cdf": torch.tensor(series[:, history_length:], dtype=torch.float32),
                 "future_observed_values": torch.tensor(observed[:, history_length:])}
        optimizer.zero_grad()
        loss, likelihoods, distr_args, distr = net(**batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 10.0)
        optimizer.step()
        losses += [loss.item(), likelihoods.max().item(), distr.mean.sum().item(), distr.variance.sum().item(),
                   distr.stddev.max().item()]
    return init, losses + summary(net.parameters())


def test_deepvar():
    compare(deepvar)


# (m) coetaur0/ESIM (esim/model.py's ESIM, esim/layers.py's RNNDropout, Seq2SeqEncoder and SoftmaxAttention,
# esim/utils.py's sort_by_seq_lens, get_mask, masked_softmax, weighted_sum, replace_masked and correct_predictions;
# scripts/training/train_snli.py's loop with ReduceLROnPlateau on accuracy, the training batches' here): Embedding(_weight=embeddings),
# issubclass(rnn_type, nn.RNNBase), a 0-d max length as a size and a slice end, mask[batch == 0] = 0.0, lengths.new_tensor
# of a tensor, sorting and restoring by index_select, an LSTM's forget-gate bias written through .data[h:2 * h] = 1.0
def esim(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(13)
    vocab_size, embedding_dim, hidden_size, batch = 12, 5, 4, 3

    def sort_by_seq_lens(batch, sequences_lengths, descending=True):
        sorted_seq_lens, sorting_index = sequences_lengths.sort(0, descending=descending)
        sorted_batch = batch.index_select(0, sorting_index)
        idx_range = sequences_lengths.new_tensor(torch.arange(0, len(sequences_lengths)))
        _, reverse_mapping = sorting_index.sort(0, descending=False)
        restoration_index = idx_range.index_select(0, reverse_mapping)
        return sorted_batch, sorted_seq_lens, sorting_index, restoration_index

    def get_mask(sequences_batch, sequences_lengths):
        batch_size = sequences_batch.size()[0]
        max_length = torch.max(sequences_lengths)
        mask = torch.ones(batch_size, max_length, dtype=torch.float)
        mask[sequences_batch[:, :max_length] == 0] = 0.0
        return mask

    def masked_softmax(tensor, mask):
        tensor_shape = tensor.size()
        reshaped_tensor = tensor.view(-1, tensor_shape[-1])
        while mask.dim() < tensor.dim():
            mask = mask.unsqueeze(1)
        mask = mask.expand_as(tensor).contiguous().float()
        reshaped_mask = mask.view(-1, mask.size()[-1])
        result = nn.functional.softmax(reshaped_tensor * reshaped_mask, dim=-1)
        result = result * reshaped_mask
        result = result / (result.sum(dim=-1, keepdim=True) + 1e-13)
        return result.view(*tensor_shape)

    def weighted_sum(tensor, weights, mask):
        weighted_sum = weights.bmm(tensor)
        while mask.dim() < weighted_sum.dim():
            mask = mask.unsqueeze(1)
        mask = mask.transpose(-1, -2)
        mask = mask.expand_as(weighted_sum).contiguous().float()
        return weighted_sum * mask

    def replace_masked(tensor, mask, value):
        mask = mask.unsqueeze(1).transpose(2, 1)
        reverse_mask = 1.0 - mask
        values_to_add = value * reverse_mask
        return tensor * mask + values_to_add

    def correct_predictions(output_probabilities, targets):
        _, out_classes = output_probabilities.max(dim=1)
        correct = (out_classes == targets).sum()
        return correct.item()

    class RNNDropout(nn.Dropout):
        def forward(self, sequences_batch):
            ones = sequences_batch.data.new_ones(sequences_batch.shape[0], sequences_batch.shape[-1])
            dropout_mask = nn.functional.dropout(ones, self.p, self.training, inplace=False)
            return dropout_mask.unsqueeze(1) * sequences_batch

    class Seq2SeqEncoder(nn.Module):
        def __init__(self, rnn_type, input_size, hidden_size, num_layers=1, bias=True, dropout=0.0,
                     bidirectional=False):
            assert issubclass(rnn_type, nn.RNNBase), "rnn_type must be a class inheriting from torch.nn.RNNBase"
            super(Seq2SeqEncoder, self).__init__()
            self.rnn_type = rnn_type
            self.input_size = input_size
            self.hidden_size = hidden_size
            self.num_layers = num_layers
            self.bias = bias
            self.dropout = dropout
            self.bidirectional = bidirectional
            self._encoder = rnn_type(input_size, hidden_size, num_layers=num_layers, bias=bias, batch_first=True,
                                     dropout=dropout, bidirectional=bidirectional)

        def forward(self, sequences_batch, sequences_lengths):
            sorted_batch, sorted_lengths, _, restoration_idx = sort_by_seq_lens(sequences_batch, sequences_lengths)
            packed_batch = nn.utils.rnn.pack_padded_sequence(sorted_batch, sorted_lengths, batch_first=True)
            outputs, _ = self._encoder(packed_batch, None)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
            reordered_outputs = outputs.index_select(0, restoration_idx)
            return reordered_outputs

    class SoftmaxAttention(nn.Module):
        def forward(self, premise_batch, premise_mask, hypothesis_batch, hypothesis_mask):
            similarity_matrix = premise_batch.bmm(hypothesis_batch.transpose(2, 1).contiguous())
            prem_hyp_attn = masked_softmax(similarity_matrix, hypothesis_mask)
            hyp_prem_attn = masked_softmax(similarity_matrix.transpose(1, 2).contiguous(), premise_mask)
            attended_premises = weighted_sum(hypothesis_batch, prem_hyp_attn, premise_mask)
            attended_hypotheses = weighted_sum(premise_batch, hyp_prem_attn, hypothesis_mask)
            return attended_premises, attended_hypotheses

    def _init_esim_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight.data)
            nn.init.constant_(module.bias.data, 0.0)
        elif isinstance(module, nn.LSTM):
            nn.init.xavier_uniform_(module.weight_ih_l0.data)
            nn.init.orthogonal_(module.weight_hh_l0.data)
            nn.init.constant_(module.bias_ih_l0.data, 0.0)
            nn.init.constant_(module.bias_hh_l0.data, 0.0)
            hidden_size = module.bias_hh_l0.data.shape[0] // 4
            module.bias_hh_l0.data[hidden_size:(2 * hidden_size)] = 1.0
            if module.bidirectional:
                nn.init.xavier_uniform_(module.weight_ih_l0_reverse.data)
                nn.init.orthogonal_(module.weight_hh_l0_reverse.data)
                nn.init.constant_(module.bias_ih_l0_reverse.data, 0.0)
                nn.init.constant_(module.bias_hh_l0_reverse.data, 0.0)
                module.bias_hh_l0_reverse.data[hidden_size:(2 * hidden_size)] = 1.0

    class ESIM(nn.Module):
        def __init__(self, vocab_size, embedding_dim, hidden_size, embeddings=None, padding_idx=0, dropout=0.5,
                     num_classes=3, device="cpu"):
            super(ESIM, self).__init__()
            self.vocab_size = vocab_size
            self.embedding_dim = embedding_dim
            self.hidden_size = hidden_size
            self.num_classes = num_classes
            self.dropout = dropout
            self.device = device
            self._word_embedding = nn.Embedding(self.vocab_size, self.embedding_dim, padding_idx=padding_idx,
                                                _weight=embeddings)
            if self.dropout:
                self._rnn_dropout = RNNDropout(p=self.dropout)
            self._encoding = Seq2SeqEncoder(nn.LSTM, self.embedding_dim, self.hidden_size, bidirectional=True)
            self._attention = SoftmaxAttention()
            self._projection = nn.Sequential(nn.Linear(4 * 2 * self.hidden_size, self.hidden_size), nn.ReLU())
            self._composition = Seq2SeqEncoder(nn.LSTM, self.hidden_size, self.hidden_size, bidirectional=True)
            self._classification = nn.Sequential(nn.Dropout(p=self.dropout),
                                                 nn.Linear(2 * 4 * self.hidden_size, self.hidden_size), nn.Tanh(),
                                                 nn.Dropout(p=self.dropout),
                                                 nn.Linear(self.hidden_size, self.num_classes))
            self.apply(_init_esim_weights)

        def forward(self, premises, premises_lengths, hypotheses, hypotheses_lengths):
            premises_mask = get_mask(premises, premises_lengths).to(self.device)
            hypotheses_mask = get_mask(hypotheses, hypotheses_lengths).to(self.device)
            embedded_premises = self._word_embedding(premises)
            embedded_hypotheses = self._word_embedding(hypotheses)
            if self.dropout:
                embedded_premises = self._rnn_dropout(embedded_premises)
                embedded_hypotheses = self._rnn_dropout(embedded_hypotheses)
            encoded_premises = self._encoding(embedded_premises, premises_lengths)
            encoded_hypotheses = self._encoding(embedded_hypotheses, hypotheses_lengths)
            attended_premises, attended_hypotheses = self._attention(encoded_premises, premises_mask,
                                                                     encoded_hypotheses, hypotheses_mask)
            enhanced_premises = torch.cat([encoded_premises, attended_premises, encoded_premises - attended_premises,
                                           encoded_premises * attended_premises], dim=-1)
            enhanced_hypotheses = torch.cat([encoded_hypotheses, attended_hypotheses,
                                             encoded_hypotheses - attended_hypotheses,
                                             encoded_hypotheses * attended_hypotheses], dim=-1)
            projected_premises = self._projection(enhanced_premises)
            projected_hypotheses = self._projection(enhanced_hypotheses)
            if self.dropout:
                projected_premises = self._rnn_dropout(projected_premises)
                projected_hypotheses = self._rnn_dropout(projected_hypotheses)
            v_ai = self._composition(projected_premises, premises_lengths)
            v_bj = self._composition(projected_hypotheses, hypotheses_lengths)
            v_a_avg = torch.sum(v_ai * premises_mask.unsqueeze(1).transpose(2, 1), dim=1) / \
                torch.sum(premises_mask, dim=1, keepdim=True)
            v_b_avg = torch.sum(v_bj * hypotheses_mask.unsqueeze(1).transpose(2, 1), dim=1) / \
                torch.sum(hypotheses_mask, dim=1, keepdim=True)
            v_a_max, _ = replace_masked(v_ai, premises_mask, -1e7).max(dim=1)
            v_b_max, _ = replace_masked(v_bj, hypotheses_mask, -1e7).max(dim=1)
            v = torch.cat([v_a_avg, v_a_max, v_b_avg, v_b_max], dim=1)
            logits = self._classification(v)
            probabilities = nn.functional.softmax(logits, dim=-1)
            return logits, probabilities

    def padded(lengths, width):
        out = np.zeros((len(lengths), width), np.int64)
        for i, n in enumerate(lengths):
            out[i, :n] = rng.integers(1, vocab_size, n)
        return out

    embeddings = torch.tensor(normal(rng, vocab_size, embedding_dim) * 0.5)
    model = ESIM(vocab_size, embedding_dim, hidden_size, embeddings=embeddings, dropout=0.0, num_classes=3)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(parameters, lr=4e-4)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=0.5, patience=0)
    losses = []
    for epoch in range(2):
        model.train()
        premises_lengths, hypotheses_lengths = rng.integers(1, 4, batch), rng.integers(1, 3, batch)
        premises = torch.tensor(padded(premises_lengths, 4))
        hypotheses = torch.tensor(padded(hypotheses_lengths, 3))
        premises_lengths, hypotheses_lengths = torch.tensor(premises_lengths), torch.tensor(hypotheses_lengths)
        labels = torch.tensor(rng.integers(0, 3, batch))
        optimizer.zero_grad()
        logits, probs = model(premises, premises_lengths, hypotheses, hypotheses_lengths)
        loss = criterion(logits, labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        accuracy = correct_predictions(probs, labels) / batch  # train()'s running accuracy, in place of validate()'s
        scheduler.step(accuracy)
        losses += [loss.item(), accuracy, optimizer.param_groups[0]["lr"], probs.max().item()]
    return init, losses + summary(model.parameters())


def test_esim():
    compare(esim)
