"""Public model and training code the earlier files leave out, written from memory in its sources' styles and ported
by its imports alone, as test_ported_scripts.py: lukemelas's EfficientNet-PyTorch (namedtuple BlockArgs and
GlobalParams, Conv2dStaticSamePadding, MemoryEfficientSwish as an autograd.Function, MBConv with squeeze-excitation and
drop_connect by a float `+=` a uniform draw and torch.floor, set_swish); bentrevett's seq2seq with Bahdanau attention (a
bidirectional GRU's last states joined, additive attention by repeat and bmm, predictions written into
torch.zeros(...)[t], teacher forcing by Python's seeded coin, ignore_index, greedy translation keeping attentions);
NVlabs' SPADE (a config string parsed by re, parameter-free InstanceNorm modulated by convolutions of a nearest-resized
label map, spectral_norm'd residual blocks, the one-hot by FloatTensor(...).zero_().scatter_, instance edges by a
ByteTensor or-ed with comparisons, a bias removed by delattr and register_parameter('bias', None), the hinge GANLoss
with its expanded zero tensor, feature matching, TTUR Adams); PVTv2 with SegFormer's all-MLP head (overlapping patch
embeddings, spatial-reduction attention, a Mix-FFN's view of a transposed tensor, timm's DropPath and trunc_normal_,
bilinear fusion, ignore_index=255, a poly LambdaLR); kekmodel's FixMatch (a WideResNet whose shortcut is `and ... or
None`, interleave and de_interleave, thresholded pseudo-labels, no-decay groups by name, a cosine LambdaLR, ModelEMA
through state_dict() copy_); deit's CaiT (talking-heads attention by permuted Linears over the heads, LayerScale
gammas, class attention joining the token late, no_weight_decay under @torch.jit.ignore); triplet attention, VAN's
dilated large-kernel attention and HorNet's recursive gnconv on a small trunk; SimpleBaseline's pose heatmaps
(ConvTranspose2d deconvolutions, JointsMSELoss by split(1, 1) with target weights, get_max_preds by % and floor,
flip test by fancy-index joint swaps and a shifted clone, integral regression by a softmax's marginals); a Lagrangian
neural network (torch.autograd.functional.hessian and jacobian with create_graph=True per sample, linalg.pinv, a loss
through third derivatives); a ProdLDA topic model in plain torch.distributions (LogisticNormal posterior and prior,
their kl_divergence, BatchNorm1d(affine=False) encoder heads and decoder, perplexity, top words by topk);
Segment Anything's modeling files (windowed ViT attention with decomposed relative positions by F.interpolate and
einsum, PositionEmbeddingRandom, prompt embeddings written by `+=` at boolean masks, sparse embeddings grown from
torch.empty((bs, 0, C)), the two-way transformer, hypernetwork masks, a refinement from a mask prompt); and Whisper
(dtype-casting LayerNorm, Linear and Conv1d subclasses with a _conv_forward override, a -inf triu_ mask buffer with
persistent=False, greedy decoding through forward hooks that keep a key-value cache keyed by module, suppressed
tokens and the timestamp rule's logsumexp). Each runs in tnet, then in torch from tnet's initial weights (state_dict
through numpy), and the losses, metrics and the weights summed into a few numbers agree. Numpy draws what a script
draws (drop_connect's uniform, ProdLDA's posterior noise); dropout is 0 where a source has it; shapes are tiny and
runs take one to three steps.
Where Adam would normalise a gradient that is rounding alone (a bias that an InstanceNorm or BatchNorm cancels, a key's
bias that softmax ignores, a discriminator's last bias inside the hinge's margin), the layer has no bias, its bias is
frozen or the script takes SGD, as each says.

Fixed in tnet on the way (with its unit test in test_random.py): torch.distributions.LogisticNormal was missing
(ProdLDA's AttributeError), and TransformedDistribution took shape-keeping transforms only: it now reshapes as torch's
(the base's batch dims that the transforms' event dims take become an Independent's event dims, the shapes forward
through ComposeTransform.forward_shape), so StickBreakingTransform's K - 1 to K serves it. The other scripts ran in
tnet as in torch at their first run (SPADE's and the SegFormer head's first versions disagreed for the reason above,
in torch as much as in tnet: two runs of torch's SPADE disagreed with each other there); so did torchvision's
Inception v3 with the fine-tuning tutorial's aux loss, written first for (j). Probes of the same sources' less
common calls beside them (MultiheadAttention's average_attn_weights=False, Transformer.generate_square_subsequent_mask,
scatter_'s reduce=, unravel_index, autograd.grad's materialize_grads, backward(inputs=), get_total_norm and
clip_grads_with_norm_, ctx.mark_dirty, the rng state and fork_rng around checkpointed dropout, scheduler.step(epoch),
a train() override that keeps BatchNorm in eval, Whisper's decoding in float16, spectral_norm and the
parametrizations' train and eval, torch.func's transforms, the distributions' log_prob, cdf and KL pairs) found tnet
as torch too.

Found and left as they are: torch.distributions' LKJCholesky and Wishart, the transforms CorrCholeskyTransform,
ReshapeTransform, CatTransform, StackTransform and CumulativeDistributionTransform, and the constraints corr_cholesky,
cat and stack are not in tnet (tnet's transforms keep one event_dim for domain and codomain, which ReshapeTransform's
differ); torch.amp.custom_fwd(device_type='cuda', cast_inputs=torch.float32) casts under a CPU autocast in tnet, where
torch's leaves the inputs alone (its CUDA autocast is off): tnet keeps one autocast state for its one device, which
"cpu" names too (README)."""
import collections
import copy
import math
import random
import re
from functools import partial

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) lukemelas/EfficientNet-PyTorch's model.py and utils.py: BlockArgs and GlobalParams as namedtuples with
# __new__.__defaults__, round_filters, Conv2dStaticSamePadding (a Conv2d subclass that overwrites self.stride with a
# list and pads by a ZeroPad2d worked out from math.ceil, or nn.Identity), MemoryEfficientSwish as an autograd.Function
# saving its input, MBConvBlock's expansion, depthwise convolution, squeeze-and-excitation by F.adaptive_avg_pool2d(x,
# 1) and drop_connect (keep_prob as a float that `+=` a uniform draw turns into a tensor, torch.floor, inputs /
# keep_prob * binary_tensor; numpy draws the uniform here), BatchNorm with TensorFlow's momentum (1 - 0.99) and eps,
# drop_connect_rate scaled by the block's index, then set_swish(memory_efficient=False) for a plain Swish step
def efficientnet_lukemelas(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(0)
    draws = np.random.default_rng(10)

    GlobalParams = collections.namedtuple('GlobalParams', [
        'width_coefficient', 'depth_coefficient', 'image_size', 'dropout_rate', 'num_classes', 'batch_norm_momentum',
        'batch_norm_epsilon', 'drop_connect_rate', 'depth_divisor', 'min_depth', 'include_top'])
    BlockArgs = collections.namedtuple('BlockArgs', [
        'num_repeat', 'kernel_size', 'stride', 'expand_ratio', 'input_filters', 'output_filters', 'se_ratio',
        'id_skip'])
    GlobalParams.__new__.__defaults__ = (None,) * len(GlobalParams._fields)
    BlockArgs.__new__.__defaults__ = (None,) * len(BlockArgs._fields)

    class SwishImplementation(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i * torch.sigmoid(i)
            ctx.save_for_backward(i)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            i = ctx.saved_tensors[0]
            sigmoid_i = torch.sigmoid(i)
            return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))

    class MemoryEfficientSwish(nn.Module):
        def forward(self, x):
            return SwishImplementation.apply(x)

    class Swish(nn.Module):
        def forward(self, x):
            return x * torch.sigmoid(x)

    def round_filters(filters, global_params):
        multiplier = global_params.width_coefficient
        if not multiplier:
            return filters
        divisor = global_params.depth_divisor
        min_depth = global_params.min_depth
        filters *= multiplier
        min_depth = min_depth or divisor
        new_filters = max(min_depth, int(filters + divisor / 2) // divisor * divisor)
        if new_filters < 0.9 * filters:  # prevent rounding by more than 10%
            new_filters += divisor
        return int(new_filters)

    def drop_connect(inputs, p, training):
        assert 0 <= p <= 1, 'p must be in range of [0,1]'
        if not training:
            return inputs
        batch_size = inputs.shape[0]
        keep_prob = 1 - p
        # generate binary_tensor mask according to probability (p for 0, 1-p for 1)
        random_tensor = keep_prob
        uniform = torch.from_numpy(draws.random((batch_size, 1, 1, 1)).astype(np.float32))  # torch.rand's place
        random_tensor += uniform.to(dtype=inputs.dtype, device=inputs.device)
        binary_tensor = torch.floor(random_tensor)
        output = inputs / keep_prob * binary_tensor
        return output

    def calculate_output_image_size(input_image_size, stride):
        if input_image_size is None:
            return None
        image_height, image_width = (input_image_size, input_image_size) if isinstance(input_image_size, int) \
            else input_image_size
        stride = stride if isinstance(stride, int) else stride[0]
        image_height = int(math.ceil(image_height / stride))
        image_width = int(math.ceil(image_width / stride))
        return [image_height, image_width]

    class Conv2dStaticSamePadding(nn.Conv2d):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, image_size=None, **kwargs):
            super().__init__(in_channels, out_channels, kernel_size, stride, **kwargs)
            self.stride = self.stride if len(self.stride) == 2 else [self.stride[0]] * 2
            assert image_size is not None
            ih, iw = (image_size, image_size) if isinstance(image_size, int) else image_size
            kh, kw = self.weight.size()[-2:]
            sh, sw = self.stride
            oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
            pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
            pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
            if pad_h > 0 or pad_w > 0:
                self.static_padding = nn.ZeroPad2d((pad_w // 2, pad_w - pad_w // 2,
                                                    pad_h // 2, pad_h - pad_h // 2))
            else:
                self.static_padding = nn.Identity()

        def forward(self, x):
            x = self.static_padding(x)
            x = F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
            return x

    def get_same_padding_conv2d(image_size=None):
        return partial(Conv2dStaticSamePadding, image_size=image_size)

    class MBConvBlock(nn.Module):
        def __init__(self, block_args, global_params, image_size=None):
            super().__init__()
            self._block_args = block_args
            self._bn_mom = 1 - global_params.batch_norm_momentum  # pytorch's difference from tensorflow
            self._bn_eps = global_params.batch_norm_epsilon
            self.has_se = (self._block_args.se_ratio is not None) and (0 < self._block_args.se_ratio <= 1)
            self.id_skip = block_args.id_skip  # whether to use skip connection and drop connect
            inp = self._block_args.input_filters
            oup = self._block_args.input_filters * self._block_args.expand_ratio
            if self._block_args.expand_ratio != 1:
                Conv2d = get_same_padding_conv2d(image_size=image_size)
                self._expand_conv = Conv2d(in_channels=inp, out_channels=oup, kernel_size=1, bias=False)
                self._bn0 = nn.BatchNorm2d(num_features=oup, momentum=self._bn_mom, eps=self._bn_eps)
            k = self._block_args.kernel_size
            s = self._block_args.stride
            Conv2d = get_same_padding_conv2d(image_size=image_size)
            self._depthwise_conv = Conv2d(in_channels=oup, out_channels=oup, groups=oup, kernel_size=k, stride=s,
                                          bias=False)
            self._bn1 = nn.BatchNorm2d(num_features=oup, momentum=self._bn_mom, eps=self._bn_eps)
            image_size = calculate_output_image_size(image_size, s)
            if self.has_se:
                Conv2d = get_same_padding_conv2d(image_size=(1, 1))
                num_squeezed_channels = max(1, int(self._block_args.input_filters * self._block_args.se_ratio))
                self._se_reduce = Conv2d(in_channels=oup, out_channels=num_squeezed_channels, kernel_size=1)
                self._se_expand = Conv2d(in_channels=num_squeezed_channels, out_channels=oup, kernel_size=1)
            final_oup = self._block_args.output_filters
            Conv2d = get_same_padding_conv2d(image_size=image_size)
            self._project_conv = Conv2d(in_channels=oup, out_channels=final_oup, kernel_size=1, bias=False)
            self._bn2 = nn.BatchNorm2d(num_features=final_oup, momentum=self._bn_mom, eps=self._bn_eps)
            self._swish = MemoryEfficientSwish()

        def forward(self, inputs, drop_connect_rate=None):
            x = inputs
            if self._block_args.expand_ratio != 1:
                x = self._expand_conv(inputs)
                x = self._bn0(x)
                x = self._swish(x)
            x = self._depthwise_conv(x)
            x = self._bn1(x)
            x = self._swish(x)
            if self.has_se:
                x_squeezed = F.adaptive_avg_pool2d(x, 1)
                x_squeezed = self._se_reduce(x_squeezed)
                x_squeezed = self._swish(x_squeezed)
                x_squeezed = self._se_expand(x_squeezed)
                x = torch.sigmoid(x_squeezed) * x
            x = self._project_conv(x)
            x = self._bn2(x)
            input_filters, output_filters = self._block_args.input_filters, self._block_args.output_filters
            if self.id_skip and self._block_args.stride == 1 and input_filters == output_filters:
                if drop_connect_rate:
                    x = drop_connect(x, p=drop_connect_rate, training=self.training)
                x = x + inputs  # skip connection
            return x

        def set_swish(self, memory_efficient=True):
            self._swish = MemoryEfficientSwish() if memory_efficient else Swish()

    class EfficientNet(nn.Module):
        def __init__(self, blocks_args=None, global_params=None):
            super().__init__()
            assert isinstance(blocks_args, list), 'blocks_args should be a list'
            assert len(blocks_args) > 0, 'block args must be greater than 0'
            self._global_params = global_params
            self._blocks_args = blocks_args
            bn_mom = 1 - self._global_params.batch_norm_momentum
            bn_eps = self._global_params.batch_norm_epsilon
            image_size = global_params.image_size
            Conv2d = get_same_padding_conv2d(image_size=image_size)
            in_channels = 3
            out_channels = round_filters(8, self._global_params)
            self._conv_stem = Conv2d(in_channels, out_channels, kernel_size=3, stride=2, bias=False)
            self._bn0 = nn.BatchNorm2d(num_features=out_channels, momentum=bn_mom, eps=bn_eps)
            image_size = calculate_output_image_size(image_size, 2)
            self._blocks = nn.ModuleList([])
            for block_args in self._blocks_args:
                block_args = block_args._replace(
                    input_filters=round_filters(block_args.input_filters, self._global_params),
                    output_filters=round_filters(block_args.output_filters, self._global_params))
                self._blocks.append(MBConvBlock(block_args, self._global_params, image_size=image_size))
                image_size = calculate_output_image_size(image_size, block_args.stride)
                if block_args.num_repeat > 1:  # modify block_args to keep same output size
                    block_args = block_args._replace(input_filters=block_args.output_filters, stride=1)
                for _ in range(block_args.num_repeat - 1):
                    self._blocks.append(MBConvBlock(block_args, self._global_params, image_size=image_size))
            in_channels = block_args.output_filters
            out_channels = round_filters(16, self._global_params)
            Conv2d = get_same_padding_conv2d(image_size=image_size)
            self._conv_head = Conv2d(in_channels, out_channels, kernel_size=1, bias=False)
            self._bn1 = nn.BatchNorm2d(num_features=out_channels, momentum=bn_mom, eps=bn_eps)
            self._avg_pooling = nn.AdaptiveAvgPool2d(1)
            if self._global_params.include_top:
                self._dropout = nn.Dropout(self._global_params.dropout_rate)
                self._fc = nn.Linear(out_channels, self._global_params.num_classes)
            self._swish = MemoryEfficientSwish()

        def set_swish(self, memory_efficient=True):
            self._swish = MemoryEfficientSwish() if memory_efficient else Swish()
            for block in self._blocks:
                block.set_swish(memory_efficient)

        def extract_features(self, inputs):
            x = self._swish(self._bn0(self._conv_stem(inputs)))
            for idx, block in enumerate(self._blocks):
                drop_connect_rate = self._global_params.drop_connect_rate
                if drop_connect_rate:
                    drop_connect_rate *= float(idx) / len(self._blocks)  # scale drop connect_rate
                x = block(x, drop_connect_rate=drop_connect_rate)
            x = self._swish(self._bn1(self._conv_head(x)))
            return x

        def forward(self, inputs):
            x = self.extract_features(inputs)
            x = self._avg_pooling(x)
            if self._global_params.include_top:
                x = x.flatten(start_dim=1)
                x = self._dropout(x)
                x = self._fc(x)
            return x

    blocks_args = [BlockArgs(num_repeat=1, kernel_size=3, stride=1, expand_ratio=1, input_filters=8, output_filters=4,
                             se_ratio=0.25, id_skip=True),
                   BlockArgs(num_repeat=2, kernel_size=5, stride=2, expand_ratio=2, input_filters=4, output_filters=8,
                             se_ratio=0.25, id_skip=True)]
    global_params = GlobalParams(width_coefficient=1.0, depth_coefficient=1.0, image_size=9, dropout_rate=0.0,
                                 num_classes=5, batch_norm_momentum=0.99, batch_norm_epsilon=1e-3,
                                 drop_connect_rate=0.5, depth_divisor=4, min_depth=None, include_top=True)
    model = EfficientNet(blocks_args, global_params)
    assert isinstance(model._conv_stem.static_padding, nn.ZeroPad2d) and model._conv_stem.stride == (2, 2)
    assert isinstance(model._blocks[0]._se_reduce.static_padding, nn.Identity)
    init = load(m, model, state)
    optimizer = optim.RMSprop(model.parameters(), lr=0.01, alpha=0.9, eps=1e-3, momentum=0.9, weight_decay=1e-5)
    criterion = nn.CrossEntropyLoss()
    record = []
    x, y = torch.from_numpy(normal(rng, 4, 3, 9, 9)), torch.from_numpy(rng.integers(0, 5, 4))
    for it in range(2):
        if it == 1:
            model.set_swish(memory_efficient=False)
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    model.eval()
    with torch.no_grad():
        record += model(x).flatten().tolist()
    return init, record + summary(model.parameters()) + summary(model.buffers())


def test_efficientnet_lukemelas():
    compare(efficientnet_lukemelas)


# (b) bentrevett/pytorch-seq2seq's third notebook (Bahdanau attention): a bidirectional GRU encoder whose last forward
# and backward states go through tanh(fc(cat(hidden[-2, :, :], hidden[-1, :, :]))), the additive attention (the
# decoder state repeated over the source by unsqueeze(1).repeat(1, src_len, 1), energy by tanh(attn(cat(...))), v
# without bias, softmax over the source), the decoder's weighted context by bmm of permuted encoder outputs, its GRU
# fed cat(embedded, weighted), fc_out over cat(output, weighted, embedded); Seq2Seq writing each step's prediction into
# torch.zeros(trg_len, batch, vocab) by outputs[t] = output, teacher forcing by random.random() < ratio (Python's seeded
# generator: the same coins in both runs), init_weights by named_parameters, count_parameters, CrossEntropyLoss with
# ignore_index on output[1:].view(-1, output_dim), clip_grad_norm_, evaluation without teacher forcing and the
# greedy translate_sentence that keeps each step's attention in attentions[i] = attention. Dropout is 0 (tnet draws
# other masks)
def seq2seq_bahdanau(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(1)
    random.seed(1234)
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

    class Encoder(nn.Module):
        def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout):
            super().__init__()
            self.embedding = nn.Embedding(input_dim, emb_dim)
            self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional=True)
            self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
            self.dropout = nn.Dropout(dropout)

        def forward(self, src):
            # src = [src len, batch size]
            embedded = self.dropout(self.embedding(src))
            outputs, hidden = self.rnn(embedded)
            # initial decoder hidden is final hidden state of the forwards and backwards encoder RNNs fed through a
            # linear layer
            hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
            return outputs, hidden

    class Attention(nn.Module):
        def __init__(self, enc_hid_dim, dec_hid_dim):
            super().__init__()
            self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
            self.v = nn.Linear(dec_hid_dim, 1, bias=False)

        def forward(self, hidden, encoder_outputs):
            batch_size = encoder_outputs.shape[1]
            src_len = encoder_outputs.shape[0]
            # repeat decoder hidden state src_len times
            hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
            encoder_outputs = encoder_outputs.permute(1, 0, 2)
            energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
            attention = self.v(energy).squeeze(2)
            assert attention.shape == (batch_size, src_len)
            return F.softmax(attention, dim=1)

    class Decoder(nn.Module):
        def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
            super().__init__()
            self.output_dim = output_dim
            self.attention = attention
            self.embedding = nn.Embedding(output_dim, emb_dim)
            self.rnn = nn.GRU((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
            self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)
            self.dropout = nn.Dropout(dropout)

        def forward(self, input, hidden, encoder_outputs):
            input = input.unsqueeze(0)
            embedded = self.dropout(self.embedding(input))
            a = self.attention(hidden, encoder_outputs)
            a = a.unsqueeze(1)
            encoder_outputs = encoder_outputs.permute(1, 0, 2)
            weighted = torch.bmm(a, encoder_outputs)
            weighted = weighted.permute(1, 0, 2)
            rnn_input = torch.cat((embedded, weighted), dim=2)
            output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))
            # seq len, n layers and n directions will always be 1 in this decoder, therefore:
            assert (output == hidden).all()
            embedded = embedded.squeeze(0)
            output = output.squeeze(0)
            weighted = weighted.squeeze(0)
            prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
            return prediction, hidden.squeeze(0), a.squeeze(1)

    class Seq2Seq(nn.Module):
        def __init__(self, encoder, decoder, device):
            super().__init__()
            self.encoder = encoder
            self.decoder = decoder
            self.device = device

        def forward(self, src, trg, teacher_forcing_ratio=0.5):
            batch_size = src.shape[1]
            trg_len = trg.shape[0]
            trg_vocab_size = self.decoder.output_dim
            # tensor to store decoder outputs
            outputs = torch.zeros(trg_len, batch_size, trg_vocab_size).to(self.device)
            encoder_outputs, hidden = self.encoder(src)
            # first input to the decoder is the <sos> tokens
            input = trg[0, :]
            for t in range(1, trg_len):
                output, hidden, _ = self.decoder(input, hidden, encoder_outputs)
                outputs[t] = output
                teacher_force = random.random() < teacher_forcing_ratio
                top1 = output.argmax(1)
                input = trg[t] if teacher_force else top1
            return outputs

    INPUT_DIM, OUTPUT_DIM, SRC_PAD_IDX, TRG_PAD_IDX, SOS, EOS = 9, 8, 1, 1, 2, 3
    ENC_EMB_DIM = DEC_EMB_DIM = 4
    ENC_HID_DIM = DEC_HID_DIM = 6
    ENC_DROPOUT = DEC_DROPOUT = 0.0
    attn = Attention(ENC_HID_DIM, DEC_HID_DIM)
    enc = Encoder(INPUT_DIM, ENC_EMB_DIM, ENC_HID_DIM, DEC_HID_DIM, ENC_DROPOUT)
    dec = Decoder(OUTPUT_DIM, DEC_EMB_DIM, ENC_HID_DIM, DEC_HID_DIM, DEC_DROPOUT, attn)
    model = Seq2Seq(enc, dec, device).to(device)

    def init_weights(m):
        for name, param in m.named_parameters():
            if 'weight' in name:
                nn.init.normal_(param.data, mean=0, std=0.3)
            else:
                nn.init.constant_(param.data, 0)

    model.apply(init_weights)

    def count_parameters(model):
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss(ignore_index=TRG_PAD_IDX)

    def batch(n):
        src = rng.integers(4, INPUT_DIM, (4, n))
        src[0], src[-1, 0], src[-1, 1:] = SOS, SRC_PAD_IDX, EOS
        trg = rng.integers(4, OUTPUT_DIM, (3, n))
        trg[0], trg[-1, :1], trg[-1, 1:] = SOS, TRG_PAD_IDX, EOS
        return torch.from_numpy(src).to(device), torch.from_numpy(trg).to(device)

    iterator = [batch(3)]

    def train(model, iterator, optimizer, criterion, clip):
        model.train()
        epoch_loss = 0
        for i, (src, trg) in enumerate(iterator):
            optimizer.zero_grad()
            output = model(src, trg)
            # trg = [trg len, batch size]; output = [trg len, batch size, output dim]
            output_dim = output.shape[-1]
            output = output[1:].view(-1, output_dim)
            trg = trg[1:].view(-1)
            loss = criterion(output, trg)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            epoch_loss += loss.item()
        return epoch_loss / len(iterator)

    def evaluate(model, iterator, criterion):
        model.eval()
        epoch_loss = 0
        with torch.no_grad():
            for i, (src, trg) in enumerate(iterator):
                output = model(src, trg, 0)  # turn off teacher forcing
                output_dim = output.shape[-1]
                output = output[1:].view(-1, output_dim)
                trg = trg[1:].view(-1)
                loss = criterion(output, trg)
                epoch_loss += loss.item()
        return epoch_loss / len(iterator)

    def translate_sentence(src_indexes, model, device, max_len=4):
        model.eval()
        src_tensor = torch.LongTensor(src_indexes).unsqueeze(1).to(device)
        with torch.no_grad():
            encoder_outputs, hidden = model.encoder(src_tensor)
        trg_indexes = [SOS]
        attentions = torch.zeros(max_len, 1, len(src_indexes)).to(device)
        for i in range(max_len):
            trg_tensor = torch.LongTensor([trg_indexes[-1]]).to(device)
            with torch.no_grad():
                output, hidden, attention = model.decoder(trg_tensor, hidden, encoder_outputs)
            attentions[i] = attention
            pred_token = output.argmax(1).item()
            trg_indexes.append(pred_token)
            if pred_token == EOS:
                break
        return trg_indexes, attentions[:len(trg_indexes) - 1]

    CLIP = 1
    record = [count_parameters(model)]
    for epoch in range(2):
        record.append(train(model, iterator, optimizer, criterion, CLIP))
    record.append(evaluate(model, iterator, criterion))
    tokens, attentions = translate_sentence([SOS, 5, 6, EOS], model, device, max_len=2)
    record += tokens + attentions.flatten().tolist()
    return init, record + summary(model.parameters())


def test_seq2seq_bahdanau():
    compare(seq2seq_bahdanau)


# (c) NVlabs/SPADE's generator and discriminator: SPADE parsing its config string by re.search (a parameter-free
# InstanceNorm2d, the label map resized by F.interpolate(mode='nearest') to each activation, gamma and beta
# convolutions, normalized * (1 + gamma) + beta), SPADEResnetBlock with spectral_norm'd convolutions and a learned
# shortcut, F.leaky_relu(x, 2e-1), nn.Upsample(scale_factor=2); the label map one-hot by torch.FloatTensor(bs, nc, h,
# w).zero_() and scatter_(1, label_map, 1.0), the instance edges by a torch.ByteTensor(t.size()).zero_() or-ed with
# shifted comparisons; get_nonspade_norm_layer removing a convolution's bias by delattr and register_parameter('bias',
# None) before a spectral-normed, instance-normed discriminator that returns its intermediate features, run once on fake
# and real concatenated and split by divide_pred; the hinge GANLoss with its zero tensor by self.Tensor(1).fill_(0)
# expanded, the feature-matching L1 over detached real features, and TTUR's two Adam optimizers with betas (0, 0.9). A
# convolution whose output reaches the loss through InstanceNorms alone has no bias here (conv_0, fc), as the
# discriminator's, nor has the discriminator's last (its outputs all inside the hinge's margin, the gradient to its bias
# is -1 + 1): Adam would normalise their gradients, rounding alone
def spade(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    spectral_norm = nn.utils.spectral_norm
    rng = np.random.default_rng(2)

    class SPADE(nn.Module):
        def __init__(self, config_text, norm_nc, label_nc):
            super().__init__()
            assert config_text.startswith('spade')
            parsed = re.search(r'spade(\D+)(\d)x\d', config_text)
            param_free_norm_type = str(parsed.group(1))
            ks = int(parsed.group(2))
            if param_free_norm_type == 'instance':
                self.param_free_norm = nn.InstanceNorm2d(norm_nc, affine=False)
            elif param_free_norm_type == 'batch':
                self.param_free_norm = nn.BatchNorm2d(norm_nc, affine=False)
            else:
                raise ValueError('%s is not a recognized param-free norm type in SPADE' % param_free_norm_type)
            # The dimension of the intermediate embedding space. Yes, hardcoded.
            nhidden = 4
            pw = ks // 2
            self.mlp_shared = nn.Sequential(nn.Conv2d(label_nc, nhidden, kernel_size=ks, padding=pw), nn.ReLU())
            self.mlp_gamma = nn.Conv2d(nhidden, norm_nc, kernel_size=ks, padding=pw)
            self.mlp_beta = nn.Conv2d(nhidden, norm_nc, kernel_size=ks, padding=pw)

        def forward(self, x, segmap):
            # Part 1. generate parameter-free normalized activations
            normalized = self.param_free_norm(x)
            # Part 2. produce scaling and bias conditioned on semantic map
            segmap = F.interpolate(segmap, size=x.size()[2:], mode='nearest')
            actv = self.mlp_shared(segmap)
            gamma = self.mlp_gamma(actv)
            beta = self.mlp_beta(actv)
            # apply scale and bias
            out = normalized * (1 + gamma) + beta
            return out

    class SPADEResnetBlock(nn.Module):
        def __init__(self, fin, fout, opt):
            super().__init__()
            self.learned_shortcut = (fin != fout)
            fmiddle = min(fin, fout)
            self.conv_0 = nn.Conv2d(fin, fmiddle, kernel_size=3, padding=1, bias=False)
            self.conv_1 = nn.Conv2d(fmiddle, fout, kernel_size=3, padding=1)
            if self.learned_shortcut:
                self.conv_s = nn.Conv2d(fin, fout, kernel_size=1, bias=False)
            if 'spectral' in opt.norm_G:
                self.conv_0 = spectral_norm(self.conv_0)
                self.conv_1 = spectral_norm(self.conv_1)
                if self.learned_shortcut:
                    self.conv_s = spectral_norm(self.conv_s)
            spade_config_str = opt.norm_G.replace('spectral', '')
            self.norm_0 = SPADE(spade_config_str, fin, opt.semantic_nc)
            self.norm_1 = SPADE(spade_config_str, fmiddle, opt.semantic_nc)
            if self.learned_shortcut:
                self.norm_s = SPADE(spade_config_str, fin, opt.semantic_nc)

        def forward(self, x, seg):
            x_s = self.shortcut(x, seg)
            dx = self.conv_0(self.actvn(self.norm_0(x, seg)))
            dx = self.conv_1(self.actvn(self.norm_1(dx, seg)))
            out = x_s + dx
            return out

        def shortcut(self, x, seg):
            if self.learned_shortcut:
                x_s = self.conv_s(self.norm_s(x, seg))
            else:
                x_s = x
            return x_s

        def actvn(self, x):
            return F.leaky_relu(x, 2e-1)

    class SPADEGenerator(nn.Module):
        def __init__(self, opt):
            super().__init__()
            self.opt = opt
            nf = opt.ngf
            self.sw, self.sh = opt.crop_size // 2, opt.crop_size // 2
            self.fc = nn.Conv2d(self.opt.semantic_nc, 2 * nf, 3, padding=1, bias=False)
            self.head_0 = SPADEResnetBlock(2 * nf, 1 * nf, opt)
            self.up_0 = SPADEResnetBlock(1 * nf, 1 * nf, opt)
            self.conv_img = nn.Conv2d(nf, 3, 3, padding=1)
            self.up = nn.Upsample(scale_factor=2)

        def forward(self, input, z=None):
            seg = input
            # we downsample segmap and run convolution
            x = F.interpolate(seg, size=(self.sh, self.sw))
            x = self.fc(x)
            x = self.head_0(x, seg)
            x = self.up(x)
            x = self.up_0(x, seg)
            x = self.conv_img(F.leaky_relu(x, 2e-1))
            x = F.tanh(x)
            return x

    def get_nonspade_norm_layer(opt, norm_type='instance'):
        # helper function to get # output channels of the previous layer
        def get_out_channel(layer):
            if hasattr(layer, 'out_channels'):
                return getattr(layer, 'out_channels')
            return layer.weight.size(0)

        # this function will be returned
        def add_norm_layer(layer):
            if norm_type.startswith('spectral'):
                layer = spectral_norm(layer)
                subnorm_type = norm_type[len('spectral'):]
            else:
                subnorm_type = norm_type
            if subnorm_type == 'none' or len(subnorm_type) == 0:
                return layer
            # remove bias in the previous layer, which is meaningless
            # since it has no effect after normalization
            if getattr(layer, 'bias', None) is not None:
                delattr(layer, 'bias')
                layer.register_parameter('bias', None)
            if subnorm_type == 'instance':
                norm_layer = nn.InstanceNorm2d(get_out_channel(layer), affine=False)
            else:
                raise ValueError('normalization layer %s is not recognized' % subnorm_type)
            return nn.Sequential(layer, norm_layer)

        return add_norm_layer

    class NLayerDiscriminator(nn.Module):
        def __init__(self, opt):
            super().__init__()
            self.opt = opt
            kw = 4
            padw = int(np.ceil((kw - 1.0) / 2))
            nf = opt.ndf
            input_nc = opt.semantic_nc + 3
            norm_layer = get_nonspade_norm_layer(opt, opt.norm_D)
            sequence = [[nn.Conv2d(input_nc, nf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, False)]]
            for n in range(1, opt.n_layers_D):
                nf_prev = nf
                nf = min(nf * 2, 512)
                stride = 1 if n == opt.n_layers_D - 1 else 2
                sequence += [[norm_layer(nn.Conv2d(nf_prev, nf, kernel_size=kw, stride=stride, padding=padw)),
                              nn.LeakyReLU(0.2, False)]]
            sequence += [[nn.Conv2d(nf, 1, kernel_size=kw, stride=1, padding=padw, bias=False)]]
            # We divide the layers into groups to extract intermediate layer outputs
            for n in range(len(sequence)):
                self.add_module('model' + str(n), nn.Sequential(*sequence[n]))

        def forward(self, input):
            results = [input]
            for submodel in self.children():
                intermediate_output = submodel(results[-1])
                results.append(intermediate_output)
            get_intermediate_features = not self.opt.no_ganFeat_loss
            if get_intermediate_features:
                return results[1:]
            else:
                return results[-1]

    class GANLoss(nn.Module):
        def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0, tensor=torch.FloatTensor, opt=None):
            super().__init__()
            self.real_label = target_real_label
            self.fake_label = target_fake_label
            self.zero_tensor = None
            self.Tensor = tensor
            self.gan_mode = gan_mode
            self.opt = opt

        def get_zero_tensor(self, input):
            if self.zero_tensor is None:
                self.zero_tensor = self.Tensor(1).fill_(0)
                self.zero_tensor.requires_grad_(False)
            return self.zero_tensor.expand_as(input)

        def loss(self, input, target_is_real, for_discriminator=True):
            if for_discriminator:
                if target_is_real:
                    minval = torch.min(input - 1, self.get_zero_tensor(input))
                    loss = -torch.mean(minval)
                else:
                    minval = torch.min(-input - 1, self.get_zero_tensor(input))
                    loss = -torch.mean(minval)
            else:
                assert target_is_real, "The generator's hinge loss must be aiming for real"
                loss = -torch.mean(input)
            return loss

        def __call__(self, input, target_is_real, for_discriminator=True):
            # computing loss is a bit complicated because |input| may not be a tensor, but list of tensors
            if isinstance(input, list):
                loss = 0
                for pred_i in input:
                    if isinstance(pred_i, list):
                        pred_i = pred_i[-1]
                    loss_tensor = self.loss(pred_i, target_is_real, for_discriminator)
                    bs = 1 if len(loss_tensor.size()) == 0 else loss_tensor.size(0)
                    new_loss = torch.mean(loss_tensor.view(bs, -1), dim=1)
                    loss += new_loss
                return loss / len(input)
            return self.loss(input, target_is_real, for_discriminator)

    opt = collections.namedtuple('Opt', 'label_nc contain_dontcare_label no_instance semantic_nc ngf ndf crop_size '
                                 'norm_G norm_D n_layers_D no_ganFeat_loss lambda_feat lr beta1 beta2')(
        3, False, False, 4, 4, 4, 8, 'spectralspadeinstance3x3', 'spectralinstance', 3, False, 10.0, 0.002, 0.0, 0.9)
    netG = SPADEGenerator(opt)
    netD = NLayerDiscriminator(opt)
    assert netD.model1[0][0].bias is None and 'bias' not in dict(netD.model1.named_parameters())
    init = load(m, nn.ModuleDict({'G': netG, 'D': netD}), state)
    FloatTensor, ByteTensor = torch.FloatTensor, torch.ByteTensor
    criterionGAN = GANLoss('hinge', tensor=FloatTensor, opt=opt)
    criterionFeat = torch.nn.L1Loss()

    def get_edges(t):
        edge = ByteTensor(t.size()).zero_()
        edge[:, :, :, 1:] = edge[:, :, :, 1:] | (t[:, :, :, 1:] != t[:, :, :, :-1])
        edge[:, :, :, :-1] = edge[:, :, :, :-1] | (t[:, :, :, 1:] != t[:, :, :, :-1])
        edge[:, :, 1:, :] = edge[:, :, 1:, :] | (t[:, :, 1:, :] != t[:, :, :-1, :])
        edge[:, :, :-1, :] = edge[:, :, :-1, :] | (t[:, :, 1:, :] != t[:, :, :-1, :])
        return edge.float()

    def preprocess_input(data):
        label_map = data['label']
        bs, _, h, w = label_map.size()
        nc = opt.label_nc + 1 if opt.contain_dontcare_label else opt.label_nc
        input_label = FloatTensor(bs, nc, h, w).zero_()
        input_semantics = input_label.scatter_(1, label_map, 1.0)
        # concatenate instance map if it exists
        if not opt.no_instance:
            inst_map = data['instance']
            instance_edge_map = get_edges(inst_map)
            input_semantics = torch.cat((input_semantics, instance_edge_map), dim=1)
        return input_semantics, data['image']

    def divide_pred(pred):
        # the prediction contains the intermediate outputs of multiscale GAN, so it's usually a list
        if type(pred) == list:
            fake = []
            real = []
            for p in pred:
                fake.append(p[:p.size(0) // 2])
                real.append(p[p.size(0) // 2:])
        else:
            fake = pred[:pred.size(0) // 2]
            real = pred[pred.size(0) // 2:]
        return fake, real

    def discriminate(input_semantics, fake_image, real_image):
        fake_concat = torch.cat([input_semantics, fake_image], dim=1)
        real_concat = torch.cat([input_semantics, real_image], dim=1)
        # In Batch Normalization, the fake and real images are recommended to be in the same batch to avoid
        # disparate statistics in fake and real images. So both fake and real images are fed to D all at once.
        fake_and_real = torch.cat([fake_concat, real_concat], dim=0)
        discriminator_out = netD(fake_and_real)
        pred_fake, pred_real = divide_pred(discriminator_out)
        return pred_fake, pred_real

    optimizer_G = optim.Adam(list(netG.parameters()), lr=opt.lr / 2, betas=(opt.beta1, opt.beta2))
    optimizer_D = optim.Adam(list(netD.parameters()), lr=opt.lr * 2, betas=(opt.beta1, opt.beta2))
    inst = rng.integers(0, 2, (2, 1, 8, 8))
    data = {'label': torch.from_numpy(rng.integers(0, 3, (2, 1, 8, 8))), 'instance': torch.from_numpy(inst),
            'image': torch.from_numpy(np.tanh(normal(rng, 2, 3, 8, 8)))}
    input_semantics, real_image = preprocess_input(data)
    record = [input_semantics.sum().item()]
    # generator step
    optimizer_G.zero_grad()
    fake_image = netG(input_semantics)
    pred_fake, pred_real = discriminate(input_semantics, fake_image, real_image)
    G_losses = {'GAN': criterionGAN(pred_fake, True, for_discriminator=False)}
    num_D = 1
    GAN_Feat_loss = FloatTensor(1).fill_(0)
    for i in range(num_D):  # for each discriminator
        # last output is the final prediction, so we exclude it
        num_intermediate_outputs = len(pred_fake) - 1
        for j in range(num_intermediate_outputs):  # for each layer output
            unweighted_loss = criterionFeat(pred_fake[j], pred_real[j].detach())
            GAN_Feat_loss += unweighted_loss * opt.lambda_feat / num_D
    G_losses['GAN_Feat'] = GAN_Feat_loss
    g_loss = sum(G_losses.values()).mean()
    g_loss.backward()
    optimizer_G.step()
    record += [v.sum().item() for v in G_losses.values()]
    # discriminator step
    optimizer_D.zero_grad()
    with torch.no_grad():
        fake_image = netG(input_semantics)
        fake_image = fake_image.detach()
        fake_image.requires_grad_()
    pred_fake, pred_real = discriminate(input_semantics, fake_image, real_image)
    D_losses = {'D_Fake': criterionGAN(pred_fake, False, for_discriminator=True),
                'D_real': criterionGAN(pred_real, True, for_discriminator=True)}
    d_loss = sum(D_losses.values()).mean()
    d_loss.backward()
    optimizer_D.step()
    record += [v.sum().item() for v in D_losses.values()]
    return init, record + summary(netG.parameters()) + summary(netD.parameters()) + summary(netG.buffers())


def test_spade():
    compare(spade)


# (d) whai362/PVT's PVTv2 with NVlabs/SegFormer's all-MLP decode head: OverlapPatchEmbed (a strided Conv2d with
# padding patch_size // 2, flatten(2).transpose(1, 2), LayerNorm, returning H and W), the spatial-reduction attention
# (x.permute(0, 2, 1).reshape(B, C, H, W) through a strided sr Conv2d and a LayerNorm, kv reshaped to (B, -1, 2,
# heads, C // heads).permute(2, 0, 3, 1, 4), q @ k.transpose(-2, -1) * scale), the Mix-FFN's DWConv by
# x.transpose(1, 2).view(B, C, H, W) (a view of a transposed tensor), timm's DropPath with a drop_path_rate of 0 and
# the dpr list by torch.linspace(...).item(), _init_weights by self.apply (trunc_normal_, fan_out normal_ on
# conv.weight.data), stages' outputs by reshape(B, H, W, -1).permute(0, 3, 1, 2).contiguous(); the decode head's MLP
# (flatten(2).transpose(1, 2) and back by permute(0, 2, 1).reshape(n, -1, h, w)), bilinear F.interpolate with
# align_corners=False to the first stage's size, a 1x1 ConvModule fuse with BatchNorm, the logits resized to the
# labels and a cross_entropy with ignore_index=255, a poly LambdaLR schedule. mmseg's SGD here: SegFormer's AdamW
# would normalise the gradients of the last stage's LayerNorm bias and the MLPs' biases, which the head's BatchNorm
# cancels (rounding alone)
def pvt_segformer(m, state=None):
    torch, nn, F, optim, lr_scheduler = m.torch, m.nn, m.F, m.optim, m.lr_scheduler
    rng = np.random.default_rng(3)
    trunc_normal_ = nn.init.trunc_normal_

    def to_2tuple(x):
        return tuple(x) if isinstance(x, (tuple, list)) else (x, x)

    def drop_path(x, drop_prob: float = 0., training: bool = False):
        if drop_prob == 0. or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # work with diff dim tensors, not just 2D ConvNets
        random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
        random_tensor.floor_()  # binarize
        output = x.div(keep_prob) * random_tensor
        return output

    class DropPath(nn.Module):
        def __init__(self, drop_prob=None):
            super(DropPath, self).__init__()
            self.drop_prob = drop_prob

        def forward(self, x):
            return drop_path(x, self.drop_prob, self.training)

    def _init_weights(m):
        if isinstance(m, nn.Linear):
            trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)
        elif isinstance(m, nn.Conv2d):
            fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
            fan_out //= m.groups
            m.weight.data.normal_(0, math.sqrt(2.0 / fan_out))
            if m.bias is not None:
                m.bias.data.zero_()

    class DWConv(nn.Module):
        def __init__(self, dim=768):
            super(DWConv, self).__init__()
            self.dwconv = nn.Conv2d(dim, dim, 3, 1, 1, bias=True, groups=dim)

        def forward(self, x, H, W):
            B, N, C = x.shape
            x = x.transpose(1, 2).view(B, C, H, W)
            x = self.dwconv(x)
            x = x.flatten(2).transpose(1, 2)
            return x

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.dwconv = DWConv(hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop = nn.Dropout(drop)
            self.apply(_init_weights)

        def forward(self, x, H, W):
            x = self.fc1(x)
            x = self.dwconv(x, H, W)
            x = self.act(x)
            x = self.drop(x)
            x = self.fc2(x)
            x = self.drop(x)
            return x

    class Attention(nn.Module):
        def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0., sr_ratio=1):
            super().__init__()
            assert dim % num_heads == 0, f"dim {dim} should be divided by num_heads {num_heads}."
            self.dim = dim
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = qk_scale or head_dim ** -0.5
            self.q = nn.Linear(dim, dim, bias=qkv_bias)
            self.kv = nn.Linear(dim, dim * 2, bias=qkv_bias)
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)
            self.sr_ratio = sr_ratio
            if sr_ratio > 1:
                self.sr = nn.Conv2d(dim, dim, kernel_size=sr_ratio, stride=sr_ratio)
                self.norm = nn.LayerNorm(dim)
            self.apply(_init_weights)

        def forward(self, x, H, W):
            B, N, C = x.shape
            q = self.q(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
            if self.sr_ratio > 1:
                x_ = x.permute(0, 2, 1).reshape(B, C, H, W)
                x_ = self.sr(x_).reshape(B, C, -1).permute(0, 2, 1)
                x_ = self.norm(x_)
                kv = self.kv(x_).reshape(B, -1, 2, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            else:
                kv = self.kv(x).reshape(B, -1, 2, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            k, v = kv[0], kv[1]
            attn = (q @ k.transpose(-2, -1)) * self.scale
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = (attn @ v).transpose(1, 2).reshape(B, N, C)
            x = self.proj(x)
            x = self.proj_drop(x)
            return x

    class Block(nn.Module):
        def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, qk_scale=None, drop=0., attn_drop=0.,
                     drop_path=0., act_layer=nn.GELU, norm_layer=nn.LayerNorm, sr_ratio=1):
            super().__init__()
            self.norm1 = norm_layer(dim)
            self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_scale=qk_scale,
                                  attn_drop=attn_drop, proj_drop=drop, sr_ratio=sr_ratio)
            # NOTE: drop path for stochastic depth, we shall see if this is better than dropout here
            self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()
            self.norm2 = norm_layer(dim)
            mlp_hidden_dim = int(dim * mlp_ratio)
            self.mlp = Mlp(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)
            self.apply(_init_weights)

        def forward(self, x, H, W):
            x = x + self.drop_path(self.attn(self.norm1(x), H, W))
            x = x + self.drop_path(self.mlp(self.norm2(x), H, W))
            return x

    class OverlapPatchEmbed(nn.Module):
        """ Image to Patch Embedding
        """
        def __init__(self, img_size=224, patch_size=7, stride=4, in_chans=3, embed_dim=768):
            super().__init__()
            img_size = to_2tuple(img_size)
            patch_size = to_2tuple(patch_size)
            self.img_size = img_size
            self.patch_size = patch_size
            self.H, self.W = img_size[0] // patch_size[0], img_size[1] // patch_size[1]
            self.num_patches = self.H * self.W
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=stride,
                                  padding=(patch_size[0] // 2, patch_size[1] // 2))
            self.norm = nn.LayerNorm(embed_dim)
            self.apply(_init_weights)

        def forward(self, x):
            x = self.proj(x)
            _, _, H, W = x.shape
            x = x.flatten(2).transpose(1, 2)
            x = self.norm(x)
            return x, H, W

    class PyramidVisionTransformerV2(nn.Module):
        def __init__(self, img_size=224, in_chans=3, embed_dims=[8, 16], num_heads=[1, 2], mlp_ratios=[2, 2],
                     qkv_bias=False, drop_path_rate=0., norm_layer=nn.LayerNorm, depths=[1, 1], sr_ratios=[2, 1],
                     num_stages=2):
            super().__init__()
            self.depths = depths
            self.num_stages = num_stages
            dpr = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]  # stochastic depth decay rule
            cur = 0
            for i in range(num_stages):
                patch_embed = OverlapPatchEmbed(img_size=img_size if i == 0 else img_size // (2 ** (i + 1)),
                                                patch_size=7 if i == 0 else 3, stride=4 if i == 0 else 2,
                                                in_chans=in_chans if i == 0 else embed_dims[i - 1],
                                                embed_dim=embed_dims[i])
                block = nn.ModuleList([Block(dim=embed_dims[i], num_heads=num_heads[i], mlp_ratio=mlp_ratios[i],
                                             qkv_bias=qkv_bias, drop_path=dpr[cur + j], norm_layer=norm_layer,
                                             sr_ratio=sr_ratios[i]) for j in range(depths[i])])
                norm = norm_layer(embed_dims[i])
                cur += depths[i]
                setattr(self, f"patch_embed{i + 1}", patch_embed)
                setattr(self, f"block{i + 1}", block)
                setattr(self, f"norm{i + 1}", norm)
            self.apply(_init_weights)

        def forward_features(self, x):
            B = x.shape[0]
            outs = []
            for i in range(self.num_stages):
                patch_embed = getattr(self, f"patch_embed{i + 1}")
                block = getattr(self, f"block{i + 1}")
                norm = getattr(self, f"norm{i + 1}")
                x, H, W = patch_embed(x)
                for blk in block:
                    x = blk(x, H, W)
                x = norm(x)
                x = x.reshape(B, H, W, -1).permute(0, 3, 1, 2).contiguous()
                outs.append(x)
            return outs

        def forward(self, x):
            return self.forward_features(x)

    class MLP(nn.Module):
        """
        Linear Embedding
        """
        def __init__(self, input_dim=2048, embed_dim=768):
            super().__init__()
            self.proj = nn.Linear(input_dim, embed_dim)

        def forward(self, x):
            x = x.flatten(2).transpose(1, 2)
            x = self.proj(x)
            return x

    class ConvModule(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)
            self.bn = nn.BatchNorm2d(out_channels)
            self.activate = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.activate(self.bn(self.conv(x)))

    class SegFormerHead(nn.Module):
        def __init__(self, in_channels, embedding_dim, num_classes, dropout_ratio=0.1):
            super().__init__()
            c1_in_channels, c2_in_channels = in_channels
            self.linear_c2 = MLP(input_dim=c2_in_channels, embed_dim=embedding_dim)
            self.linear_c1 = MLP(input_dim=c1_in_channels, embed_dim=embedding_dim)
            self.linear_fuse = ConvModule(in_channels=embedding_dim * 2, out_channels=embedding_dim, kernel_size=1)
            self.dropout = nn.Dropout2d(dropout_ratio)
            self.linear_pred = nn.Conv2d(embedding_dim, num_classes, kernel_size=1)

        def forward(self, inputs):
            c1, c2 = inputs
            n, _, h, w = c2.shape
            _c2 = self.linear_c2(c2).permute(0, 2, 1).reshape(n, -1, c2.shape[2], c2.shape[3])
            _c2 = F.interpolate(_c2, size=c1.size()[2:], mode='bilinear', align_corners=False)
            _c1 = self.linear_c1(c1).permute(0, 2, 1).reshape(n, -1, c1.shape[2], c1.shape[3])
            _c = self.linear_fuse(torch.cat([_c2, _c1], dim=1))
            x = self.dropout(_c)
            x = self.linear_pred(x)
            return x

    class EncoderDecoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = PyramidVisionTransformerV2(img_size=16)
            self.decode_head = SegFormerHead([8, 16], 8, num_classes=3, dropout_ratio=0.0)

        def forward(self, img):
            seg_logits = self.decode_head(self.backbone(img))
            return F.interpolate(seg_logits, size=img.shape[2:], mode='bilinear', align_corners=False)

    model = EncoderDecoder()
    init = load(m, model, state)
    max_iters = 3
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    scheduler = lr_scheduler.LambdaLR(optimizer, lambda it: (1 - it / max_iters) ** 1.0)
    img = torch.from_numpy(normal(rng, 2, 3, 16, 16))
    label = rng.integers(0, 3, (2, 16, 16))
    label[:, :3, :3] = 255
    label = torch.from_numpy(label)
    record = []
    for it in range(2):
        model.train()
        seg_logit = model(img)
        loss = F.cross_entropy(seg_logit, label, ignore_index=255)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        record += [loss.item(), optimizer.param_groups[0]['lr']]
    model.eval()
    with torch.no_grad():
        pred = model(img).argmax(dim=1)
        valid = label != 255
        record.append(((pred == label) & valid).sum().item() / valid.sum().item())
    return init, record + summary(model.parameters()) + summary(model.buffers())


def test_pvt_segformer():
    compare(pvt_segformer)


# (e) kekmodel/FixMatch-pytorch's train.py and models/wideresnet.py: the WideResNet BasicBlock (BatchNorm momentum
# 0.001, LeakyReLU(0.1, inplace=True), convShortcut by `(not equalInOut) and nn.Conv2d(...) or None`,
# activate_before_residual, torch.add of the shortcut), its init loop (kaiming_normal_ with mode='fan_out' and
# nonlinearity='leaky_relu', xavier_normal_ on weight.data), parameter groups by name (no_decay = ['bias', 'bn']),
# SGD with Nesterov, get_cosine_schedule_with_warmup as a LambdaLR, interleave and de_interleave by reshape and
# transpose around one forward of cat((inputs_x, inputs_u_w, inputs_u_s)), logits[batch_size:].chunk(2), pseudo-labels
# by torch.softmax(logits_u_w.detach() / T) and torch.max, the mask by max_probs.ge(threshold).float() weighting a
# reduction='none' cross-entropy, ModelEMA (a deepcopy updated through state_dict() entries by copy_, buffers copied),
# and the EMA model's top-k test accuracy
def fixmatch(m, state=None):
    torch, nn, F, optim, lr_scheduler = m.torch, m.nn, m.F, m.optim, m.lr_scheduler
    rng = np.random.default_rng(4)
    args = collections.namedtuple('Args', 'device mu T threshold lambda_u lr wdecay nesterov ema_decay batch_size')(
        torch.device('cuda' if torch.cuda.is_available() else 'cpu'), 2, 1.0, 0.4, 1.0, 0.03, 5e-4, True, 0.9, 2)

    class BasicBlock(nn.Module):
        def __init__(self, in_planes, out_planes, stride, drop_rate=0.0, activate_before_residual=False):
            super(BasicBlock, self).__init__()
            self.bn1 = nn.BatchNorm2d(in_planes, momentum=0.001)
            self.relu1 = nn.LeakyReLU(negative_slope=0.1, inplace=True)
            self.conv1 = nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(out_planes, momentum=0.001)
            self.relu2 = nn.LeakyReLU(negative_slope=0.1, inplace=True)
            self.conv2 = nn.Conv2d(out_planes, out_planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.drop_rate = drop_rate
            self.equalInOut = (in_planes == out_planes)
            self.convShortcut = (not self.equalInOut) and nn.Conv2d(in_planes, out_planes, kernel_size=1,
                                                                    stride=stride, padding=0, bias=False) or None
            self.activate_before_residual = activate_before_residual

        def forward(self, x):
            if not self.equalInOut and self.activate_before_residual == True:  # noqa: E712 (as the repository)
                x = self.relu1(self.bn1(x))
            else:
                out = self.relu1(self.bn1(x))
            out = self.relu2(self.bn2(self.conv1(out if self.equalInOut else x)))
            if self.drop_rate > 0:
                out = F.dropout(out, p=self.drop_rate, training=self.training)
            out = self.conv2(out)
            return torch.add(x if self.equalInOut else self.convShortcut(x), out)

    class NetworkBlock(nn.Module):
        def __init__(self, nb_layers, in_planes, out_planes, block, stride, drop_rate=0.0,
                     activate_before_residual=False):
            super(NetworkBlock, self).__init__()
            self.layer = self._make_layer(block, in_planes, out_planes, nb_layers, stride, drop_rate,
                                          activate_before_residual)

        def _make_layer(self, block, in_planes, out_planes, nb_layers, stride, drop_rate, activate_before_residual):
            layers = []
            for i in range(int(nb_layers)):
                layers.append(block(i == 0 and in_planes or out_planes, out_planes, i == 0 and stride or 1,
                                    drop_rate, activate_before_residual))
            return nn.Sequential(*layers)

        def forward(self, x):
            return self.layer(x)

    class WideResNet(nn.Module):
        def __init__(self, num_classes, depth=28, widen_factor=2, drop_rate=0.0):
            super(WideResNet, self).__init__()
            channels = [4, 4 * widen_factor, 8 * widen_factor, 16 * widen_factor]
            assert((depth - 4) % 6 == 0)
            n = (depth - 4) / 6
            block = BasicBlock
            # 1st conv before any network block
            self.conv1 = nn.Conv2d(3, channels[0], kernel_size=3, stride=1, padding=1, bias=False)
            # 1st block
            self.block1 = NetworkBlock(n, channels[0], channels[1], block, 1, drop_rate, activate_before_residual=True)
            # 2nd block
            self.block2 = NetworkBlock(n, channels[1], channels[2], block, 2, drop_rate)
            # 3rd block
            self.block3 = NetworkBlock(n, channels[2], channels[3], block, 2, drop_rate)
            # global average pooling and classifier
            self.bn1 = nn.BatchNorm2d(channels[3], momentum=0.001)
            self.relu = nn.LeakyReLU(negative_slope=0.1, inplace=True)
            self.fc = nn.Linear(channels[3], num_classes)
            self.channels = channels[3]
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='leaky_relu')
                elif isinstance(m, nn.BatchNorm2d):
                    m.weight.data.fill_(1.0)
                    m.bias.data.zero_()
                elif isinstance(m, nn.Linear):
                    nn.init.xavier_normal_(m.weight.data)
                    m.bias.data.zero_()

        def forward(self, x):
            out = self.conv1(x)
            out = self.block1(out)
            out = self.block2(out)
            out = self.block3(out)
            out = self.relu(self.bn1(out))
            out = F.adaptive_avg_pool2d(out, 1)
            out = out.view(-1, self.channels)
            return self.fc(out)

    class ModelEMA(object):
        def __init__(self, args, model, decay):
            self.ema = copy.deepcopy(model)
            self.ema.to(args.device)
            self.ema.eval()
            self.decay = decay
            self.ema_has_module = hasattr(self.ema, 'module')
            # Fix EMA. https://github.com/valencebond/FixMatch_pytorch thank you!
            self.param_keys = [k for k, _ in self.ema.named_parameters()]
            self.buffer_keys = [k for k, _ in self.ema.named_buffers()]
            for p in self.ema.parameters():
                p.requires_grad_(False)

        def update(self, model):
            needs_module = hasattr(model, 'module') and not self.ema_has_module
            with torch.no_grad():
                msd = model.state_dict()
                esd = self.ema.state_dict()
                for k in self.param_keys:
                    if needs_module:
                        j = 'module.' + k
                    else:
                        j = k
                    model_v = msd[j].detach()
                    ema_v = esd[k]
                    esd[k].copy_(ema_v * self.decay + (1. - self.decay) * model_v)
                for k in self.buffer_keys:
                    if needs_module:
                        j = 'module.' + k
                    else:
                        j = k
                    esd[k].copy_(msd[j])

    def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=7. / 16.,
                                        last_epoch=-1):
        def _lr_lambda(current_step):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            no_progress = float(current_step - num_warmup_steps) / \
                float(max(1, num_training_steps - num_warmup_steps))
            return max(0., math.cos(math.pi * num_cycles * no_progress))
        return lr_scheduler.LambdaLR(optimizer, _lr_lambda, last_epoch)

    def interleave(x, size):
        s = list(x.shape)
        return x.reshape([-1, size] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])

    def de_interleave(x, size):
        s = list(x.shape)
        return x.reshape([size, -1] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])

    def accuracy(output, target, topk=(1,)):
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.reshape(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res

    model = WideResNet(num_classes=4, depth=10, widen_factor=1)
    assert model.block1.layer[0].convShortcut is None and model.block2.layer[0].convShortcut is not None
    init = load(m, model, state)
    model.to(args.device)
    no_decay = ['bias', 'bn']
    grouped_parameters = [
        {'params': [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         'weight_decay': args.wdecay},
        {'params': [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], 'weight_decay': 0.0}]
    optimizer = optim.SGD(grouped_parameters, lr=args.lr, momentum=0.9, nesterov=args.nesterov)
    scheduler = get_cosine_schedule_with_warmup(optimizer, 0, 4)
    ema_model = ModelEMA(args, model, args.ema_decay)
    record = []
    model.zero_grad()
    for batch_idx in range(2):
        inputs_x = torch.from_numpy(normal(rng, args.batch_size, 3, 8, 8))
        targets_x = torch.from_numpy(rng.integers(0, 4, args.batch_size))
        inputs_u = normal(rng, args.batch_size * args.mu, 3, 8, 8)
        inputs_u_w = torch.from_numpy(inputs_u + 0.1 * normal(rng, *inputs_u.shape))
        inputs_u_s = torch.from_numpy(inputs_u[..., ::-1] + 0.5 * normal(rng, *inputs_u.shape))
        model.train()
        batch_size = inputs_x.shape[0]
        inputs = interleave(torch.cat((inputs_x, inputs_u_w, inputs_u_s)), 2 * args.mu + 1).to(args.device)
        targets_x = targets_x.to(args.device)
        logits = model(inputs)
        logits = de_interleave(logits, 2 * args.mu + 1)
        logits_x = logits[:batch_size]
        logits_u_w, logits_u_s = logits[batch_size:].chunk(2)
        del logits
        Lx = F.cross_entropy(logits_x, targets_x, reduction='mean')
        pseudo_label = torch.softmax(logits_u_w.detach() / args.T, dim=-1)
        max_probs, targets_u = torch.max(pseudo_label, dim=-1)
        mask = max_probs.ge(args.threshold).float()
        Lu = (F.cross_entropy(logits_u_s, targets_u, reduction='none') * mask).mean()
        loss = Lx + args.lambda_u * Lu
        loss.backward()
        optimizer.step()
        scheduler.step()
        ema_model.update(model)
        model.zero_grad()
        record += [loss.item(), Lx.item(), Lu.item(), mask.mean().item(), scheduler.get_last_lr()[0]]
        record += targets_u.tolist()
    test_model = ema_model.ema
    test_model.eval()
    with torch.no_grad():
        inputs, targets = torch.from_numpy(normal(rng, 4, 3, 8, 8)), torch.from_numpy(rng.integers(0, 4, 4))
        outputs = test_model(inputs)
        loss = F.cross_entropy(outputs, targets)
        prec1, prec3 = accuracy(outputs, targets, topk=(1, 3))
        record += [loss.item(), prec1.item(), prec3.item()]
    return init, record + summary(model.parameters()) + summary(test_model.parameters()) + summary(
        test_model.buffers())


def test_fixmatch():
    compare(fixmatch)


# (f) facebookresearch/deit's cait_models.py: talking-heads attention (proj_l and proj_w mixing the heads through
# attn.permute(0, 2, 3, 1) and back by permute(0, 3, 1, 2) before and after the softmax), LayerScale gammas made as
# nn.Parameter(init_values * torch.ones((dim)), requires_grad=True), class attention (the query from x[:, 0] alone
# by unsqueeze(1).reshape(B, 1, heads, C // heads), x_cls by (attn @ v).transpose(1, 2).reshape(B, 1, C)), the class
# token joined late by torch.cat((x_cls, x), dim=1) in each class-attention block, trunc_normal_ on pos_embed and
# cls_token, the no_weight_decay set under @torch.jit.ignore read by timm's param_groups_weight_decay (ndim <= 1,
# .bias, the set), AdamW, the model's norm of torch.cat((cls_tokens, x), dim=1) and x[:, 0]. The attention layers take
# qkv_bias=False, their classes' default, and proj_l's bias is frozen by requires_grad_(False) (so left out of the
# groups): a key's bias and a bias added to each head's logits, which softmax ignores, have gradients of rounding
# alone, which Adam would normalise
def cait(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    rng = np.random.default_rng(5)
    trunc_normal_ = nn.init.trunc_normal_

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop = nn.Dropout(drop)

        def forward(self, x):
            return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))

    class PatchEmbed(nn.Module):
        def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
            super().__init__()
            self.num_patches = (img_size // patch_size) * (img_size // patch_size)
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

        def forward(self, x):
            return self.proj(x).flatten(2).transpose(1, 2)

    class Class_Attention(nn.Module):
        # taken from https://github.com/rwightman/pytorch-image-models/blob/master/timm/models/vision_transformer.py
        # with slight modifications to do CA
        def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0.):
            super().__init__()
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = qk_scale or head_dim ** -0.5
            self.q = nn.Linear(dim, dim, bias=qkv_bias)
            self.k = nn.Linear(dim, dim, bias=qkv_bias)
            self.v = nn.Linear(dim, dim, bias=qkv_bias)
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)

        def forward(self, x):
            B, N, C = x.shape
            q = self.q(x[:, 0]).unsqueeze(1).reshape(B, 1, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
            k = self.k(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
            q = q * self.scale
            v = self.v(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
            attn = (q @ k.transpose(-2, -1))
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x_cls = (attn @ v).transpose(1, 2).reshape(B, 1, C)
            x_cls = self.proj(x_cls)
            x_cls = self.proj_drop(x_cls)
            return x_cls

    class LayerScale_Block_CA(nn.Module):
        # taken from https://github.com/rwightman/pytorch-image-models/blob/master/timm/models/vision_transformer.py
        # with slight modifications to add CA and LayerScale
        def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, qk_scale=None, drop=0., attn_drop=0.,
                     drop_path=0., act_layer=nn.GELU, norm_layer=nn.LayerNorm, Attention_block=Class_Attention,
                     Mlp_block=Mlp, init_values=1e-4):
            super().__init__()
            self.norm1 = norm_layer(dim)
            self.attn = Attention_block(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_scale=qk_scale,
                                        attn_drop=attn_drop, proj_drop=drop)
            self.drop_path = nn.Identity()
            self.norm2 = norm_layer(dim)
            mlp_hidden_dim = int(dim * mlp_ratio)
            self.mlp = Mlp_block(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)
            self.gamma_1 = nn.Parameter(init_values * torch.ones((dim)), requires_grad=True)
            self.gamma_2 = nn.Parameter(init_values * torch.ones((dim)), requires_grad=True)

        def forward(self, x, x_cls):
            u = torch.cat((x_cls, x), dim=1)
            x_cls = x_cls + self.drop_path(self.gamma_1 * self.attn(self.norm1(u)))
            x_cls = x_cls + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x_cls)))
            return x_cls

    class Attention_talking_head(nn.Module):
        # taken from https://github.com/rwightman/pytorch-image-models/blob/master/timm/models/vision_transformer.py
        # with slight modifications to add Talking Heads Attention (https://arxiv.org/pdf/2003.02436v1.pdf)
        def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0.):
            super().__init__()
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = qk_scale or head_dim ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_l = nn.Linear(num_heads, num_heads)
            self.proj_w = nn.Linear(num_heads, num_heads)
            self.proj_drop = nn.Dropout(proj_drop)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
            attn = (q @ k.transpose(-2, -1))
            attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            attn = attn.softmax(dim=-1)
            attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            attn = self.attn_drop(attn)
            x = (attn @ v).transpose(1, 2).reshape(B, N, C)
            x = self.proj(x)
            x = self.proj_drop(x)
            return x

    class LayerScale_Block(nn.Module):
        def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, qk_scale=None, drop=0., attn_drop=0.,
                     drop_path=0., act_layer=nn.GELU, norm_layer=nn.LayerNorm, Attention_block=Attention_talking_head,
                     Mlp_block=Mlp, init_values=1e-4):
            super().__init__()
            self.norm1 = norm_layer(dim)
            self.attn = Attention_block(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_scale=qk_scale,
                                        attn_drop=attn_drop, proj_drop=drop)
            self.drop_path = nn.Identity()
            self.norm2 = norm_layer(dim)
            mlp_hidden_dim = int(dim * mlp_ratio)
            self.mlp = Mlp_block(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)
            self.gamma_1 = nn.Parameter(init_values * torch.ones((dim)), requires_grad=True)
            self.gamma_2 = nn.Parameter(init_values * torch.ones((dim)), requires_grad=True)

        def forward(self, x):
            x = x + self.drop_path(self.gamma_1 * self.attn(self.norm1(x)))
            x = x + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x)))
            return x

    class cait_models(nn.Module):
        # taken from https://github.com/rwightman/pytorch-image-models/blob/master/timm/models/vision_transformer.py
        # with slight modifications to adapt to our cait models
        def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, embed_dim=768, depth=12,
                     num_heads=12, mlp_ratio=4., qkv_bias=False, qk_scale=None, drop_rate=0., attn_drop_rate=0.,
                     drop_path_rate=0., norm_layer=nn.LayerNorm, global_pool=None, block_layers=LayerScale_Block,
                     block_layers_token=LayerScale_Block_CA, Patch_layer=PatchEmbed, act_layer=nn.GELU,
                     Attention_block=Attention_talking_head, Mlp_block=Mlp, init_scale=1e-4,
                     Attention_block_token_only=Class_Attention, Mlp_block_token_only=Mlp, depth_token_only=2,
                     mlp_ratio_clstk=4.0):
            super().__init__()
            self.num_classes = num_classes
            self.num_features = self.embed_dim = embed_dim
            self.patch_embed = Patch_layer(img_size=img_size, patch_size=patch_size, in_chans=in_chans,
                                           embed_dim=embed_dim)
            num_patches = self.patch_embed.num_patches
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, embed_dim))
            self.pos_drop = nn.Dropout(p=drop_rate)
            dpr = [drop_path_rate for i in range(depth)]
            self.blocks = nn.ModuleList([
                block_layers(dim=embed_dim, num_heads=num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                             qk_scale=qk_scale, drop=drop_rate, attn_drop=attn_drop_rate, drop_path=dpr[i],
                             norm_layer=norm_layer, act_layer=act_layer, Attention_block=Attention_block,
                             Mlp_block=Mlp_block, init_values=init_scale)
                for i in range(depth)])
            self.blocks_token_only = nn.ModuleList([
                block_layers_token(dim=embed_dim, num_heads=num_heads, mlp_ratio=mlp_ratio_clstk, qkv_bias=qkv_bias,
                                   qk_scale=qk_scale, drop=0.0, attn_drop=0.0, drop_path=0.0, norm_layer=norm_layer,
                                   act_layer=act_layer, Attention_block=Attention_block_token_only,
                                   Mlp_block=Mlp_block_token_only, init_values=init_scale)
                for i in range(depth_token_only)])
            self.norm = norm_layer(embed_dim)
            self.feature_info = [dict(num_chs=embed_dim, reduction=0, module='head')]
            self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
            trunc_normal_(self.pos_embed, std=.02)
            trunc_normal_(self.cls_token, std=.02)
            self.apply(self._init_weights)

        def _init_weights(self, m):
            if isinstance(m, nn.Linear):
                trunc_normal_(m.weight, std=.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.LayerNorm):
                nn.init.constant_(m.bias, 0)
                nn.init.constant_(m.weight, 1.0)

        @torch.jit.ignore
        def no_weight_decay(self):
            return {'pos_embed', 'cls_token'}

        def forward_features(self, x):
            B = x.shape[0]
            x = self.patch_embed(x)
            cls_tokens = self.cls_token.expand(B, -1, -1)
            x = x + self.pos_embed
            x = self.pos_drop(x)
            for i, blk in enumerate(self.blocks):
                x = blk(x)
            for i, blk in enumerate(self.blocks_token_only):
                cls_tokens = blk(x, cls_tokens)
            x = torch.cat((cls_tokens, x), dim=1)
            x = self.norm(x)
            return x[:, 0]

        def forward(self, x):
            x = self.forward_features(x)
            x = self.head(x)
            return x

    def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
        no_weight_decay_list = set(no_weight_decay_list)
        decay = []
        no_decay = []
        for name, param in model.named_parameters():
            if not param.requires_grad:
                continue
            if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
                no_decay.append(param)
            else:
                decay.append(param)
        return [{'params': no_decay, 'weight_decay': 0.}, {'params': decay, 'weight_decay': weight_decay}]

    model = cait_models(img_size=8, patch_size=4, num_classes=3, embed_dim=8, depth=2, num_heads=2, mlp_ratio=2,
                        qkv_bias=False, norm_layer=partial(nn.LayerNorm, eps=1e-6), init_scale=0.1,
                        depth_token_only=1, mlp_ratio_clstk=2)
    for blk in model.blocks:
        blk.attn.proj_l.bias.requires_grad_(False)
    init = load(m, model, state)
    skip = model.no_weight_decay()
    optimizer = optim.AdamW(param_groups_weight_decay(model, 0.05, skip), lr=1e-3)
    record = [len(g['params']) for g in optimizer.param_groups]
    x = torch.from_numpy(normal(rng, 3, 3, 8, 8))
    y = torch.from_numpy(rng.integers(0, 3, 3))
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    for it in range(2):
        model.train()
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    return init, record + summary(model.parameters())


def test_cait():
    compare(cait)


# (g) three attention blocks of 2021-2022 papers on a small CIFAR trunk, as their repositories write them:
# landskape/triplet-attention (ZPool by torch.cat of torch.max(x, 1)[0].unsqueeze(1) and torch.mean(x, 1).unsqueeze(1),
# a 7x7 BasicConv with BatchNorm(momentum=0.01) and torch.sigmoid_ in place, the channel-height and channel-width
# branches on x.permute(0, 2, 1, 3).contiguous() and x.permute(0, 3, 2, 1).contiguous(), 1 / 3 * their sum);
# Visual-Attention-Network's large kernel attention (u = x.clone(), a 5x5 depthwise convolution, a 7x7 depthwise one
# with dilation 3 and padding 9, a pointwise one, u * attn) in a VAN Block with BatchNorm norms and layer scales
# applied by layer_scale_1.unsqueeze(-1).unsqueeze(-1); raoyongming/HorNet's gnconv (dims halved and reversed, proj_in
# split by torch.split(fused_x, (dims[0], sum(dims)), dim=1), a 7x7 depthwise convolution times a scale, split again by
# the list of dims, the recursive gating through ModuleList pws) beside ConvNeXt's channels_first LayerNorm written
# out (mean, pow(2).mean, weight[:, None, None]) and the channels-last MLP by permute(0, 2, 3, 1), with gamma1 by
# view(C, 1, 1)
def triplet_van_hornet(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(6)

    class BasicConv(nn.Module):
        def __init__(self, in_planes, out_planes, kernel_size, stride=1, padding=0, dilation=1, groups=1, relu=True,
                     bn=True, bias=False):
            super(BasicConv, self).__init__()
            self.out_channels = out_planes
            self.conv = nn.Conv2d(in_planes, out_planes, kernel_size=kernel_size, stride=stride, padding=padding,
                                  dilation=dilation, groups=groups, bias=bias)
            self.bn = nn.BatchNorm2d(out_planes, eps=1e-5, momentum=0.01, affine=True) if bn else None
            self.relu = nn.ReLU() if relu else None

        def forward(self, x):
            x = self.conv(x)
            if self.bn is not None:
                x = self.bn(x)
            if self.relu is not None:
                x = self.relu(x)
            return x

    class ZPool(nn.Module):
        def forward(self, x):
            return torch.cat((torch.max(x, 1)[0].unsqueeze(1), torch.mean(x, 1).unsqueeze(1)), dim=1)

    class AttentionGate(nn.Module):
        def __init__(self):
            super(AttentionGate, self).__init__()
            kernel_size = 7
            self.compress = ZPool()
            self.conv = BasicConv(2, 1, kernel_size, stride=1, padding=(kernel_size - 1) // 2, relu=False)

        def forward(self, x):
            x_compress = self.compress(x)
            x_out = self.conv(x_compress)
            scale = torch.sigmoid_(x_out)
            return x * scale

    class TripletAttention(nn.Module):
        def __init__(self, no_spatial=False):
            super(TripletAttention, self).__init__()
            self.cw = AttentionGate()
            self.hc = AttentionGate()
            self.no_spatial = no_spatial
            if not no_spatial:
                self.hw = AttentionGate()

        def forward(self, x):
            x_perm1 = x.permute(0, 2, 1, 3).contiguous()
            x_out1 = self.cw(x_perm1)
            x_out11 = x_out1.permute(0, 2, 1, 3).contiguous()
            x_perm2 = x.permute(0, 3, 2, 1).contiguous()
            x_out2 = self.hc(x_perm2)
            x_out21 = x_out2.permute(0, 3, 2, 1).contiguous()
            if not self.no_spatial:
                x_out = self.hw(x)
                x_out = 1 / 3 * (x_out + x_out11 + x_out21)
            else:
                x_out = 1 / 2 * (x_out11 + x_out21)
            return x_out

    class DWConv(nn.Module):
        def __init__(self, dim=768):
            super(DWConv, self).__init__()
            self.dwconv = nn.Conv2d(dim, dim, 3, 1, 1, bias=True, groups=dim)

        def forward(self, x):
            return self.dwconv(x)

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Conv2d(in_features, hidden_features, 1)
            self.dwconv = DWConv(hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Conv2d(hidden_features, out_features, 1)
            self.drop = nn.Dropout(drop)

        def forward(self, x):
            x = self.fc1(x)
            x = self.dwconv(x)
            x = self.act(x)
            x = self.drop(x)
            x = self.fc2(x)
            x = self.drop(x)
            return x

    class LKA(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.conv0 = nn.Conv2d(dim, dim, 5, padding=2, groups=dim)
            self.conv_spatial = nn.Conv2d(dim, dim, 7, stride=1, padding=9, groups=dim, dilation=3)
            self.conv1 = nn.Conv2d(dim, dim, 1)

        def forward(self, x):
            u = x.clone()
            attn = self.conv0(x)
            attn = self.conv_spatial(attn)
            attn = self.conv1(attn)
            return u * attn

    class SpatialAttention(nn.Module):
        def __init__(self, d_model):
            super().__init__()
            self.proj_1 = nn.Conv2d(d_model, d_model, 1)
            self.activation = nn.GELU()
            self.spatial_gating_unit = LKA(d_model)
            self.proj_2 = nn.Conv2d(d_model, d_model, 1)

        def forward(self, x):
            shorcut = x.clone()
            x = self.proj_1(x)
            x = self.activation(x)
            x = self.spatial_gating_unit(x)
            x = self.proj_2(x)
            x = x + shorcut
            return x

    class VANBlock(nn.Module):
        def __init__(self, dim, mlp_ratio=4., drop=0., drop_path=0., act_layer=nn.GELU):
            super().__init__()
            self.norm1 = nn.BatchNorm2d(dim)
            self.attn = SpatialAttention(dim)
            self.drop_path = nn.Identity()
            self.norm2 = nn.BatchNorm2d(dim)
            mlp_hidden_dim = int(dim * mlp_ratio)
            self.mlp = Mlp(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)
            layer_scale_init_value = 1e-2
            self.layer_scale_1 = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)
            self.layer_scale_2 = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)

        def forward(self, x):
            x = x + self.drop_path(self.layer_scale_1.unsqueeze(-1).unsqueeze(-1) * self.attn(self.norm1(x)))
            x = x + self.drop_path(self.layer_scale_2.unsqueeze(-1).unsqueeze(-1) * self.mlp(self.norm2(x)))
            return x

    def get_dwconv(dim, kernel, bias):
        return nn.Conv2d(dim, dim, kernel_size=kernel, padding=(kernel - 1) // 2, bias=bias, groups=dim)

    class gnconv(nn.Module):
        def __init__(self, dim, order=5, gflayer=None, h=14, w=8, s=1.0):
            super().__init__()
            self.order = order
            self.dims = [dim // 2 ** i for i in range(order)]
            self.dims.reverse()
            self.proj_in = nn.Conv2d(dim, 2 * dim, 1)
            if gflayer is None:
                self.dwconv = get_dwconv(sum(self.dims), 7, True)
            else:
                self.dwconv = gflayer(sum(self.dims), h=h, w=w)
            self.proj_out = nn.Conv2d(dim, dim, 1)
            self.pws = nn.ModuleList([nn.Conv2d(self.dims[i], self.dims[i + 1], 1) for i in range(order - 1)])
            self.scale = s

        def forward(self, x, mask=None, dummy=False):
            B, C, H, W = x.shape
            fused_x = self.proj_in(x)
            pwa, abc = torch.split(fused_x, (self.dims[0], sum(self.dims)), dim=1)
            dw_abc = self.dwconv(abc) * self.scale
            dw_list = torch.split(dw_abc, self.dims, dim=1)
            x = pwa * dw_list[0]
            for i in range(self.order - 1):
                x = self.pws[i](x) * dw_list[i + 1]
            x = self.proj_out(x)
            return x

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

    class HorBlock(nn.Module):
        def __init__(self, dim, drop_path=0., layer_scale_init_value=1e-6, gnconv=gnconv):
            super().__init__()
            self.norm1 = LayerNorm(dim, eps=1e-6, data_format='channels_first')
            self.gnconv = gnconv(dim)  # depthwise conv
            self.norm2 = LayerNorm(dim, eps=1e-6)
            self.pwconv1 = nn.Linear(dim, 4 * dim)  # pointwise/1x1 convs, implemented with linear layers
            self.act = nn.GELU()
            self.pwconv2 = nn.Linear(4 * dim, dim)
            self.gamma1 = nn.Parameter(layer_scale_init_value * torch.ones(dim),
                                       requires_grad=True) if layer_scale_init_value > 0 else None
            self.gamma2 = nn.Parameter(layer_scale_init_value * torch.ones((dim)),
                                       requires_grad=True) if layer_scale_init_value > 0 else None
            self.drop_path = nn.Identity()

        def forward(self, x):
            B, C, H, W = x.shape
            if self.gamma1 is not None:
                gamma1 = self.gamma1.view(C, 1, 1)
            else:
                gamma1 = 1
            x = x + self.drop_path(gamma1 * self.gnconv(self.norm1(x)))
            input = x
            x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
            x = self.norm2(x)
            x = self.pwconv1(x)
            x = self.act(x)
            x = self.pwconv2(x)
            if self.gamma2 is not None:
                x = self.gamma2 * x
            x = x.permute(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W)
            x = input + self.drop_path(x)
            return x

    class Net(nn.Module):
        def __init__(self, num_classes=4):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
            self.triplet = TripletAttention()
            self.van = VANBlock(8, mlp_ratio=2)
            self.hor = HorBlock(8, layer_scale_init_value=0.1, gnconv=partial(gnconv, order=3, s=1.0 / 3.0))
            self.head = nn.Linear(8, num_classes)

        def forward(self, x):
            x = self.triplet(self.stem(x))
            x = self.hor(self.van(x))
            return self.head(x.mean([-2, -1]))

    model = Net()
    init = load(m, model, state)
    optimizer = optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    x = torch.from_numpy(normal(rng, 2, 3, 6, 6))
    y = torch.from_numpy(rng.integers(0, 4, 2))
    record = []
    for it in range(2):
        model.train()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    return init, record + summary(model.parameters()) + summary(model.buffers())


def test_triplet_van_hornet():
    compare(triplet_van_hornet)


# (h) microsoft/human-pose-estimation.pytorch's SimpleBaseline head and its lib/core utilities: _get_deconv_cfg, the
# deconvolution layers (ConvTranspose2d kernel 4, stride 2, padding 1, output_padding 0, bias=False) with BatchNorm
# and the final 1x1 layer, init by nn.init.normal_ and constant_; numpy Gaussian target heatmaps; JointsMSELoss
# (the heatmaps reshaped and split(1, 1) per joint, squeeze(), multiplied by target_weight[:, idx], 0.5 * MSE);
# get_max_preds on the torch side (torch.max over the flattened heatmap, % width and floor(/ width), a mask by
# torch.gt(maxvals, 0.0).repeat(1, 1, 2).float()); the flip test (the input flipped by torch.flip(x, [3]), the joints
# swapped by fancy indexing with the flip pairs, the shift by output_flipped[:, :, :, 1:] = output_flipped.clone()[:, :,
# :, 0:-1], the average); and JimmySuen's integral regression on the same heatmaps (softmax over the flattened map,
# marginal sums times torch.arange(...).float(), an L1 loss to the joints' coordinates), Adam under MultiStepLR
def pose_heatmaps(m, state=None):
    torch, nn, F, optim, lr_scheduler = m.torch, m.nn, m.F, m.optim, m.lr_scheduler
    rng = np.random.default_rng(7)
    num_joints, heatmap_size, sigma = 3, (8, 8), 1.0
    flip_pairs = [[0, 1]]

    class PoseHead(nn.Module):
        def __init__(self, inplanes=8, num_deconv_layers=2, num_deconv_filters=(6, 6), num_deconv_kernels=(4, 4),
                     final_conv_kernel=1, deconv_with_bias=False):
            super().__init__()
            self.inplanes = inplanes
            self.deconv_with_bias = deconv_with_bias
            self.backbone = nn.Sequential(nn.Conv2d(3, inplanes, 3, stride=2, padding=1, bias=False),
                                          nn.BatchNorm2d(inplanes), nn.ReLU(inplace=True),
                                          nn.Conv2d(inplanes, inplanes, 3, stride=2, padding=1, bias=False),
                                          nn.BatchNorm2d(inplanes), nn.ReLU(inplace=True))
            self.deconv_layers = self._make_deconv_layer(num_deconv_layers, num_deconv_filters, num_deconv_kernels)
            self.final_layer = nn.Conv2d(in_channels=num_deconv_filters[-1], out_channels=num_joints,
                                         kernel_size=final_conv_kernel, stride=1,
                                         padding=1 if final_conv_kernel == 3 else 0)

        def _get_deconv_cfg(self, deconv_kernel, index):
            if deconv_kernel == 4:
                padding = 1
                output_padding = 0
            elif deconv_kernel == 3:
                padding = 1
                output_padding = 1
            elif deconv_kernel == 2:
                padding = 0
                output_padding = 0
            return deconv_kernel, padding, output_padding

        def _make_deconv_layer(self, num_layers, num_filters, num_kernels):
            assert num_layers == len(num_filters), 'ERROR: num_deconv_layers is different len(num_deconv_filters)'
            assert num_layers == len(num_kernels), 'ERROR: num_deconv_layers is different len(num_deconv_filters)'
            layers = []
            for i in range(num_layers):
                kernel, padding, output_padding = self._get_deconv_cfg(num_kernels[i], i)
                planes = num_filters[i]
                layers.append(nn.ConvTranspose2d(in_channels=self.inplanes, out_channels=planes, kernel_size=kernel,
                                                 stride=2, padding=padding, output_padding=output_padding,
                                                 bias=self.deconv_with_bias))
                layers.append(nn.BatchNorm2d(planes, momentum=0.1))
                layers.append(nn.ReLU(inplace=True))
                self.inplanes = planes
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.backbone(x)
            x = self.deconv_layers(x)
            x = self.final_layer(x)
            return x

        def init_weights(self):
            for name, m in self.deconv_layers.named_modules():
                if isinstance(m, nn.ConvTranspose2d):
                    nn.init.normal_(m.weight, std=0.1)
                    if self.deconv_with_bias:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
            for m in self.final_layer.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.normal_(m.weight, std=0.1)
                    nn.init.constant_(m.bias, 0)

    class JointsMSELoss(nn.Module):
        def __init__(self, use_target_weight):
            super(JointsMSELoss, self).__init__()
            self.criterion = nn.MSELoss(reduction='mean')
            self.use_target_weight = use_target_weight

        def forward(self, output, target, target_weight):
            batch_size = output.size(0)
            num_joints = output.size(1)
            heatmaps_pred = output.reshape((batch_size, num_joints, -1)).split(1, 1)
            heatmaps_gt = target.reshape((batch_size, num_joints, -1)).split(1, 1)
            loss = 0
            for idx in range(num_joints):
                heatmap_pred = heatmaps_pred[idx].squeeze()
                heatmap_gt = heatmaps_gt[idx].squeeze()
                if self.use_target_weight:
                    loss += 0.5 * self.criterion(heatmap_pred.mul(target_weight[:, idx]),
                                                 heatmap_gt.mul(target_weight[:, idx]))
                else:
                    loss += 0.5 * self.criterion(heatmap_pred, heatmap_gt)
            return loss / num_joints

    def generate_target(joints, joints_vis):
        target_weight = np.ones((num_joints, 1), dtype=np.float32)
        target_weight[:, 0] = joints_vis[:, 0]
        target = np.zeros((num_joints, heatmap_size[1], heatmap_size[0]), dtype=np.float32)
        xs, ys = np.meshgrid(np.arange(heatmap_size[0]), np.arange(heatmap_size[1]))
        for joint_id in range(num_joints):
            mu_x, mu_y = joints[joint_id]
            target[joint_id] = np.exp(-((xs - mu_x) ** 2 + (ys - mu_y) ** 2) / (2 * sigma ** 2))
        return target, target_weight

    def get_max_preds(batch_heatmaps):
        batch_size = batch_heatmaps.shape[0]
        num_joints = batch_heatmaps.shape[1]
        width = batch_heatmaps.shape[3]
        heatmaps_reshaped = batch_heatmaps.reshape((batch_size, num_joints, -1))
        maxvals, idx = torch.max(heatmaps_reshaped, 2)
        maxvals = maxvals.unsqueeze(2)
        idx = idx.unsqueeze(2)
        preds = idx.repeat(1, 1, 2).float()
        preds[:, :, 0] = (preds[:, :, 0]) % width
        preds[:, :, 1] = torch.floor((preds[:, :, 1]) / width)
        pred_mask = torch.gt(maxvals, 0.0).repeat(1, 1, 2).float()
        preds *= pred_mask
        return preds, maxvals

    def flip_back(output_flipped, matched_parts):
        output_flipped = output_flipped.flip(3)
        perm = list(range(output_flipped.shape[1]))
        for pair in matched_parts:
            perm[pair[0]], perm[pair[1]] = pair[1], pair[0]
        return output_flipped[:, perm]

    def softmax_integral_tensor(preds, num_joints, hm_width, hm_height):
        preds = preds.reshape((preds.shape[0], num_joints, -1))
        preds = F.softmax(preds, 2)
        heatmaps = preds.reshape((preds.shape[0], num_joints, hm_height, hm_width))
        accu_x = heatmaps.sum(dim=2)
        accu_y = heatmaps.sum(dim=3)
        accu_x = accu_x * torch.arange(hm_width).float().to(accu_x.device)
        accu_y = accu_y * torch.arange(hm_height).float().to(accu_y.device)
        accu_x = accu_x.sum(dim=2, keepdim=True)
        accu_y = accu_y.sum(dim=2, keepdim=True)
        return torch.cat((accu_x, accu_y), dim=2)

    model = PoseHead()
    model.init_weights()
    init = load(m, model, state)
    criterion = JointsMSELoss(use_target_weight=True)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    scheduler = lr_scheduler.MultiStepLR(optimizer, [1], 0.1)
    joints = rng.uniform(1, 7, (2, num_joints, 2))
    vis = np.ones((2, num_joints, 1), np.float32)
    vis[1, 2] = 0
    targets = [generate_target(j, v) for j, v in zip(joints, vis)]
    input = torch.from_numpy(normal(rng, 2, 3, 8, 8))
    target = torch.from_numpy(np.stack([t for t, _ in targets]))
    target_weight = torch.from_numpy(np.stack([w for _, w in targets]))
    joints_t = torch.from_numpy(joints.astype(np.float32))
    record = []
    for epoch in range(2):
        model.train()
        output = model(input)
        loss = criterion(output, target, target_weight)
        coords = softmax_integral_tensor(output, num_joints, *heatmap_size)
        loss_int = (torch.abs(coords - joints_t) * target_weight).mean()
        optimizer.zero_grad()
        (loss + 0.01 * loss_int).backward()
        optimizer.step()
        scheduler.step()
        record += [loss.item(), loss_int.item()]
    model.eval()
    with torch.no_grad():
        output = model(input)
        input_flipped = torch.flip(input, [3])
        output_flipped = flip_back(model(input_flipped), flip_pairs)
        # feature is not aligned, shift flipped heatmap for higher accuracy
        output_flipped[:, :, :, 1:] = output_flipped.clone()[:, :, :, 0:-1]
        output = (output + output_flipped) * 0.5
        preds, maxvals = get_max_preds(output)
        record += preds.flatten().tolist() + maxvals.flatten().tolist()
    return init, record + summary(model.parameters()) + summary(model.buffers())


def test_pose_heatmaps():
    compare(pose_heatmaps)


# (i) a Lagrangian neural network (Cranmer et al.) as its PyTorch ports write it: a softplus MLP giving the scalar
# L(q, q_t) of one state, torch.autograd.functional.hessian and jacobian of it with create_graph=True per sample, the
# Euler-Lagrange accelerations q_tt = torch.linalg.pinv(H[n:, n:]) @ (J[:n] - H[n:, :n] @ q_t), torch.stack of the
# samples' derivatives, an L1 loss to a double pendulum's analytic derivatives (numpy) backpropagated through the
# Hessian (third derivatives of the softplus network), Adam with clip_grad_norm_
def lagrangian_nn(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(8)

    def analytical_fn(state, m1=1, m2=1, l1=1, l2=1, g=9.8):
        t1, t2, w1, w2 = state
        a1 = (l2 / l1) * (m2 / (m1 + m2)) * np.cos(t1 - t2)
        a2 = (l1 / l2) * np.cos(t1 - t2)
        f1 = -(l2 / l1) * (m2 / (m1 + m2)) * (w2 ** 2) * np.sin(t1 - t2) - (g / l1) * np.sin(t1)
        f2 = (l1 / l2) * (w1 ** 2) * np.sin(t1 - t2) - (g / l2) * np.sin(t2)
        g1 = (f1 - a1 * f2) / (1 - a1 * a2)
        g2 = (f2 - a2 * f1) / (1 - a1 * a2)
        return np.stack([w1, w2, g1, g2])

    class LNN(nn.Module):
        def __init__(self, input_dim=4, hidden_dim=8, n_layers=2):
            super().__init__()
            layers = [nn.Linear(input_dim, hidden_dim), nn.Softplus()]
            for _ in range(n_layers - 1):
                layers += [nn.Linear(hidden_dim, hidden_dim), nn.Softplus()]
            layers.append(nn.Linear(hidden_dim, 1))
            self.net = nn.Sequential(*layers)
            for i, layer in enumerate(self.net):
                if isinstance(layer, nn.Linear):
                    nn.init.normal_(layer.weight, std=1.0 / math.sqrt(layer.in_features) * (2.2 if i == 0 else 1.0))
                    nn.init.zeros_(layer.bias)

        def lagrangian(self, x):
            return self.net(x).squeeze(-1)

        def forward(self, x):
            n = x.shape[1] // 2
            out = []
            for xi in x:
                H = torch.autograd.functional.hessian(self.lagrangian, xi, create_graph=True)
                J = torch.autograd.functional.jacobian(self.lagrangian, xi, create_graph=True)
                A = J[:n]
                B = H[n:, n:]
                C = H[n:, :n]
                q_tt = torch.linalg.pinv(B) @ (A - C @ xi[n:])
                out.append(torch.cat([xi[n:], q_tt]))
            return torch.stack(out)

    model = LNN(n_layers=1)
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    states = np.concatenate([rng.uniform(-1, 1, (2, 2)), rng.uniform(-0.5, 0.5, (2, 2))], 1).astype(np.float32)
    targets = np.stack([analytical_fn(s) for s in states.astype(np.float64)]).astype(np.float32)
    x, y = torch.from_numpy(states), torch.from_numpy(targets)
    record = []
    for it in range(2):
        optimizer.zero_grad()
        pred = model(x)
        loss = F.l1_loss(pred, y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        record += [loss.item(), norm.item()]
    record += pred.detach().flatten().tolist()
    return init, record + summary(model.parameters())


def test_lagrangian_nn():
    compare(lagrangian_nn)


# (j) a ProdLDA neural topic model (Srivastava and Sutton's AVITM, as Pyro's tutorial writes its networks) in plain
# torch.distributions: an encoder of softplus layers whose topic-logit mean and log-variance go through
# BatchNorm1d(affine=False), the posterior torch.distributions.LogisticNormal(loc, (0.5 * logvar).exp()) over K - 1
# logits (its rsample on the K-simplex by the stick-breaking transform), a LogisticNormal(0, 1) prior and
# kl_divergence(q, p) between the two (their base Normals' KL), the decoder's softmax of a BatchNorm1d(affine=False)
# of a bias-free Linear as the word distribution, the reconstruction -(bow * word_dists.log()).sum(-1), Adam with
# betas (0.99, 0.999) as AVITM's, the perplexity of held-out documents from the posterior mean by softmax, and each
# topic's top words by beta.topk. Dropout is 0 and the Linears before the encoder's BatchNorms have no bias (a bias
# that BatchNorm cancels has a gradient of rounding alone, which Adam would normalise); the posterior's draw is
# numpy's, put through rsample's formula (loc + scale * eps, then the distribution's transforms)
def prodlda(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    dist = torch.distributions
    rng = np.random.default_rng(9)
    vocab_size, num_topics, hidden = 12, 4, 8

    class Encoder(nn.Module):
        def __init__(self, vocab_size, num_topics, hidden, dropout):
            super().__init__()
            self.drop = nn.Dropout(dropout)
            self.fc1 = nn.Linear(vocab_size, hidden)
            self.fc2 = nn.Linear(hidden, hidden)
            self.fcmu = nn.Linear(hidden, num_topics - 1, bias=False)
            self.fclv = nn.Linear(hidden, num_topics - 1, bias=False)
            # NB: here we set `affine=False` to reduce the number of learning parameters
            self.bnmu = nn.BatchNorm1d(num_topics - 1, affine=False)
            self.bnlv = nn.BatchNorm1d(num_topics - 1, affine=False)

        def forward(self, inputs):
            h = F.softplus(self.fc1(inputs))
            h = F.softplus(self.fc2(h))
            h = self.drop(h)
            # μ and Σ are the outputs
            logtheta_loc = self.bnmu(self.fcmu(h))
            logtheta_logvar = self.bnlv(self.fclv(h))
            logtheta_scale = (0.5 * logtheta_logvar).exp()  # Enforces positivity
            return logtheta_loc, logtheta_scale

    class Decoder(nn.Module):
        # Base class for the decoder net, used in the model
        def __init__(self, vocab_size, num_topics, dropout):
            super().__init__()
            self.beta = nn.Linear(num_topics, vocab_size, bias=False)
            self.bn = nn.BatchNorm1d(vocab_size, affine=False)
            self.drop = nn.Dropout(dropout)

        def forward(self, inputs):
            inputs = self.drop(inputs)
            # the output is σ(βθ)
            return F.softmax(self.bn(self.beta(inputs)), dim=1)

    class ProdLDA(nn.Module):
        def __init__(self, vocab_size, num_topics, hidden, dropout):
            super().__init__()
            self.vocab_size = vocab_size
            self.num_topics = num_topics
            self.encoder = Encoder(vocab_size, num_topics, hidden, dropout)
            self.decoder = Decoder(vocab_size, num_topics, dropout)

        def posterior(self, docs):
            logtheta_loc, logtheta_scale = self.encoder(docs)
            return dist.LogisticNormal(logtheta_loc, logtheta_scale)

        def prior(self, batch_size):
            loc = torch.zeros(batch_size, self.num_topics - 1)
            return dist.LogisticNormal(loc, torch.ones_like(loc))

        def forward(self, docs, eps):
            q = self.posterior(docs)
            assert q.batch_shape == (docs.shape[0],) and q.event_shape == (self.num_topics,)
            # rsample's formula with numpy's draw: the base Normal's loc + scale * eps, then the transforms
            base = q.base_dist.base_dist
            theta = base.loc + base.scale * eps
            for transform in q.transforms:
                theta = transform(theta)
            word_dists = self.decoder(theta)
            recon = -(docs * word_dists.log()).sum(-1)
            kl = dist.kl_divergence(q, self.prior(docs.shape[0]))
            return recon, kl, q.log_prob(theta)

        def beta(self):
            # beta matrix elements are the weights of the FC layer on the decoder
            return self.decoder.beta.weight.cpu().detach().T

    prodLDA = ProdLDA(vocab_size=vocab_size, num_topics=num_topics, hidden=hidden, dropout=0.0)
    init = load(m, prodLDA, state)
    optimizer = optim.Adam(prodLDA.parameters(), lr=0.01, betas=(0.99, 0.999))
    docs = torch.from_numpy(rng.poisson(1.5, (6, vocab_size)).astype(np.float32))
    held_out = torch.from_numpy(rng.poisson(1.5, (3, vocab_size)).astype(np.float32))
    record = []
    for epoch in range(2):
        prodLDA.train()
        eps = torch.from_numpy(normal(rng, 6, num_topics - 1))
        recon, kl, log_q = prodLDA(docs, eps)
        loss = (recon + kl).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record += [loss.item(), kl.mean().item(), log_q.mean().item()]
    prodLDA.eval()
    with torch.no_grad():
        q = prodLDA.posterior(held_out)
        theta = torch.softmax(F.pad(q.loc, (0, 1)), -1)
        word_dists = prodLDA.decoder(theta)
        perplexity = torch.exp(-(held_out * word_dists.log()).sum() / held_out.sum())
        top_words = prodLDA.beta().topk(3, dim=1).indices
    record += [perplexity.item()] + top_words.flatten().tolist()
    return init, record + summary(prodLDA.parameters()) + summary(prodLDA.buffers())


def test_prodlda():
    compare(prodlda)


# (k) facebookresearch/segment-anything's modeling files at toy widths: the image encoder's ViT blocks (PatchEmbed
# permuted to B H W C, windowed attention by window_partition's F.pad and view/permute and window_unpartition's crop,
# the decomposed relative positions: get_rel_pos resizing rel_pos by F.interpolate(mode="linear") and indexing it by
# relative_coords.long(), add_decomposed_rel_pos by two einsums broadcast into the attention, qkv reshaped to (3, B *
# heads, H * W, -1).unbind(0)), the neck's LayerNorm2d; PositionEmbeddingRandom (a randn Gaussian matrix buffer, 2 *
# np.pi * coords, grid.cumsum(dim=0) - 0.5, forward_with_coords normalising a clone in place); the PromptEncoder's
# _embed_points (a padding point and label -1 by -torch.ones, point_embedding[labels == -1] = 0.0 and `+=` of
# not_a_point_embed.weight and point_embeddings[i].weight at boolean masks), _embed_boxes (corner_embedding[:, 0, :]
# +=), sparse embeddings started as torch.empty((bs, 0, embed_dim)) and the no-mask dense embedding by reshape(1, -1, 1,
# 1).expand; the MaskDecoder (output tokens by cat of the iou token and mask tokens expanded over the batch,
# torch.repeat_interleave of the image embedding, a TwoWayTransformer with downsampled cross attention, ConvTranspose2d
# upscaling with LayerNorm2d and GELU, hypernetwork MLPs stacked, (hyper_in @ upscaled.view(b, c, h * w)).view(b, -1, h,
# w), the multimask slice or the single mask); trained as SAM's fine-tuning scripts do: the best of the multimask
# outputs by the predicted IoU's argmax, a sigmoid focal loss and a dice loss on the masks resized by
# F.interpolate(bilinear), an MSE to the masks' actual IoU, the image encoder frozen, a last round refining from the
# chosen low-resolution logits as the mask prompt (mask_downscaling's strided convolutions and LayerNorm2d). The
# decoder's k_proj has no bias here: softmax ignores a key's bias, whose gradient, rounding alone, Adam would normalise
def segment_anything(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(11)

    class MLPBlock(nn.Module):
        def __init__(self, embedding_dim, mlp_dim, act=nn.GELU):
            super().__init__()
            self.lin1 = nn.Linear(embedding_dim, mlp_dim)
            self.lin2 = nn.Linear(mlp_dim, embedding_dim)
            self.act = act()

        def forward(self, x):
            return self.lin2(self.act(self.lin1(x)))

    class LayerNorm2d(nn.Module):
        def __init__(self, num_channels, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(num_channels))
            self.bias = nn.Parameter(torch.zeros(num_channels))
            self.eps = eps

        def forward(self, x):
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            x = self.weight[:, None, None] * x + self.bias[:, None, None]
            return x

    def window_partition(x, window_size):
        B, H, W, C = x.shape
        pad_h = (window_size - H % window_size) % window_size
        pad_w = (window_size - W % window_size) % window_size
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
        Hp, Wp = H + pad_h, W + pad_w
        x = x.view(B, Hp // window_size, window_size, Wp // window_size, window_size, C)
        windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)
        return windows, (Hp, Wp)

    def window_unpartition(windows, window_size, pad_hw, hw):
        Hp, Wp = pad_hw
        H, W = hw
        B = windows.shape[0] // (Hp * Wp // window_size // window_size)
        x = windows.view(B, Hp // window_size, Wp // window_size, window_size, window_size, -1)
        x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, Hp, Wp, -1)
        if Hp > H or Wp > W:
            x = x[:, :H, :W, :].contiguous()
        return x

    def get_rel_pos(q_size, k_size, rel_pos):
        max_rel_dist = int(2 * max(q_size, k_size) - 1)
        # Interpolate rel pos if needed.
        if rel_pos.shape[0] != max_rel_dist:
            rel_pos_resized = F.interpolate(rel_pos.reshape(1, rel_pos.shape[0], -1).permute(0, 2, 1),
                                            size=max_rel_dist, mode="linear")
            rel_pos_resized = rel_pos_resized.reshape(-1, max_rel_dist).permute(1, 0)
        else:
            rel_pos_resized = rel_pos
        # Scale the coords with short length if shapes for q and k are different.
        q_coords = torch.arange(q_size)[:, None] * max(k_size / q_size, 1.0)
        k_coords = torch.arange(k_size)[None, :] * max(q_size / k_size, 1.0)
        relative_coords = (q_coords - k_coords) + (k_size - 1) * max(q_size / k_size, 1.0)
        return rel_pos_resized[relative_coords.long()]

    def add_decomposed_rel_pos(attn, q, rel_pos_h, rel_pos_w, q_size, k_size):
        q_h, q_w = q_size
        k_h, k_w = k_size
        Rh = get_rel_pos(q_h, k_h, rel_pos_h)
        Rw = get_rel_pos(q_w, k_w, rel_pos_w)
        B, _, dim = q.shape
        r_q = q.reshape(B, q_h, q_w, dim)
        rel_h = torch.einsum("bhwc,hkc->bhwk", r_q, Rh)
        rel_w = torch.einsum("bhwc,wkc->bhwk", r_q, Rw)
        attn = (attn.view(B, q_h, q_w, k_h, k_w) + rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]).view(
            B, q_h * q_w, k_h * k_w)
        return attn

    class EncoderAttention(nn.Module):
        def __init__(self, dim, num_heads=8, qkv_bias=True, use_rel_pos=False, input_size=None):
            super().__init__()
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = head_dim ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.proj = nn.Linear(dim, dim)
            self.use_rel_pos = use_rel_pos
            if self.use_rel_pos:
                assert input_size is not None, "Input size must be provided if using relative positional encoding."
                # initialize relative positional embeddings
                self.rel_pos_h = nn.Parameter(torch.zeros(2 * input_size[0] - 1, head_dim))
                self.rel_pos_w = nn.Parameter(torch.zeros(2 * input_size[1] - 1, head_dim))

        def forward(self, x):
            B, H, W, _ = x.shape
            # qkv with shape (3, B, nHead, H * W, C)
            qkv = self.qkv(x).reshape(B, H * W, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
            # q, k, v with shape (B * nHead, H * W, C)
            q, k, v = qkv.reshape(3, B * self.num_heads, H * W, -1).unbind(0)
            attn = (q * self.scale) @ k.transpose(-2, -1)
            if self.use_rel_pos:
                attn = add_decomposed_rel_pos(attn, q, self.rel_pos_h, self.rel_pos_w, (H, W), (H, W))
            attn = attn.softmax(dim=-1)
            x = (attn @ v).view(B, self.num_heads, H, W, -1).permute(0, 2, 3, 1, 4).reshape(B, H, W, -1)
            x = self.proj(x)
            return x

    class EncoderBlock(nn.Module):
        def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=True, norm_layer=nn.LayerNorm,
                     act_layer=nn.GELU, use_rel_pos=False, window_size=0, input_size=None):
            super().__init__()
            self.norm1 = norm_layer(dim)
            self.attn = EncoderAttention(dim, num_heads=num_heads, qkv_bias=qkv_bias, use_rel_pos=use_rel_pos,
                                         input_size=input_size if window_size == 0 else (window_size, window_size))
            self.norm2 = norm_layer(dim)
            self.mlp = MLPBlock(embedding_dim=dim, mlp_dim=int(dim * mlp_ratio), act=act_layer)
            self.window_size = window_size

        def forward(self, x):
            shortcut = x
            x = self.norm1(x)
            # Window partition
            if self.window_size > 0:
                H, W = x.shape[1], x.shape[2]
                x, pad_hw = window_partition(x, self.window_size)
            x = self.attn(x)
            # Reverse window partition
            if self.window_size > 0:
                x = window_unpartition(x, self.window_size, pad_hw, (H, W))
            x = shortcut + x
            x = x + self.mlp(self.norm2(x))
            return x

    class PatchEmbed(nn.Module):
        def __init__(self, kernel_size=(16, 16), stride=(16, 16), padding=(0, 0), in_chans=3, embed_dim=768):
            super().__init__()
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=kernel_size, stride=stride, padding=padding)

        def forward(self, x):
            x = self.proj(x)
            # B C H W -> B H W C
            x = x.permute(0, 2, 3, 1)
            return x

    class ImageEncoderViT(nn.Module):
        def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=8, depth=2, num_heads=2, mlp_ratio=2.0,
                     out_chans=8, window_size=3, global_attn_indexes=(1,)):
            super().__init__()
            self.img_size = img_size
            self.patch_embed = PatchEmbed(kernel_size=(patch_size, patch_size), stride=(patch_size, patch_size),
                                          in_chans=in_chans, embed_dim=embed_dim)
            self.pos_embed = nn.Parameter(torch.zeros(1, img_size // patch_size, img_size // patch_size, embed_dim))
            self.blocks = nn.ModuleList()
            for i in range(depth):
                block = EncoderBlock(dim=embed_dim, num_heads=num_heads, mlp_ratio=mlp_ratio,
                                     norm_layer=partial(nn.LayerNorm, eps=1e-6), use_rel_pos=True,
                                     window_size=window_size if i not in global_attn_indexes else 0,
                                     input_size=(img_size // patch_size, img_size // patch_size))
                self.blocks.append(block)
            self.neck = nn.Sequential(nn.Conv2d(embed_dim, out_chans, kernel_size=1, bias=False),
                                      LayerNorm2d(out_chans),
                                      nn.Conv2d(out_chans, out_chans, kernel_size=3, padding=1, bias=False),
                                      LayerNorm2d(out_chans))

        def forward(self, x):
            x = self.patch_embed(x)
            if self.pos_embed is not None:
                x = x + self.pos_embed
            for blk in self.blocks:
                x = blk(x)
            x = self.neck(x.permute(0, 3, 1, 2))
            return x

    class PositionEmbeddingRandom(nn.Module):
        def __init__(self, num_pos_feats=64, scale=None):
            super().__init__()
            if scale is None or scale <= 0.0:
                scale = 1.0
            self.register_buffer("positional_encoding_gaussian_matrix", scale * torch.randn((2, num_pos_feats)))

        def _pe_encoding(self, coords):
            # assuming coords are in [0, 1]^2 square and have d_1 x ... x d_n x 2 shape
            coords = 2 * coords - 1
            coords = coords @ self.positional_encoding_gaussian_matrix
            coords = 2 * np.pi * coords
            # outputs d_1 x ... x d_n x C shape
            return torch.cat([torch.sin(coords), torch.cos(coords)], dim=-1)

        def forward(self, size):
            h, w = size
            device = self.positional_encoding_gaussian_matrix.device
            grid = torch.ones((h, w), device=device, dtype=torch.float32)
            y_embed = grid.cumsum(dim=0) - 0.5
            x_embed = grid.cumsum(dim=1) - 0.5
            y_embed = y_embed / h
            x_embed = x_embed / w
            pe = self._pe_encoding(torch.stack([x_embed, y_embed], dim=-1))
            return pe.permute(2, 0, 1)  # C x H x W

        def forward_with_coords(self, coords_input, image_size):
            coords = coords_input.clone()
            coords[:, :, 0] = coords[:, :, 0] / image_size[1]
            coords[:, :, 1] = coords[:, :, 1] / image_size[0]
            return self._pe_encoding(coords.to(torch.float))  # B x N x C

    class PromptEncoder(nn.Module):
        def __init__(self, embed_dim, image_embedding_size, input_image_size, mask_in_chans, activation=nn.GELU):
            super().__init__()
            self.embed_dim = embed_dim
            self.input_image_size = input_image_size
            self.image_embedding_size = image_embedding_size
            self.pe_layer = PositionEmbeddingRandom(embed_dim // 2)
            self.num_point_embeddings = 4  # pos/neg point + 2 box corners
            point_embeddings = [nn.Embedding(1, embed_dim) for i in range(self.num_point_embeddings)]
            self.point_embeddings = nn.ModuleList(point_embeddings)
            self.not_a_point_embed = nn.Embedding(1, embed_dim)
            self.mask_input_size = (4 * image_embedding_size[0], 4 * image_embedding_size[1])
            self.mask_downscaling = nn.Sequential(
                nn.Conv2d(1, mask_in_chans // 4, kernel_size=2, stride=2), LayerNorm2d(mask_in_chans // 4),
                activation(), nn.Conv2d(mask_in_chans // 4, mask_in_chans, kernel_size=2, stride=2),
                LayerNorm2d(mask_in_chans), activation(), nn.Conv2d(mask_in_chans, embed_dim, kernel_size=1))
            self.no_mask_embed = nn.Embedding(1, embed_dim)

        def get_dense_pe(self):
            return self.pe_layer(self.image_embedding_size).unsqueeze(0)

        def _embed_points(self, points, labels, pad):
            points = points + 0.5  # Shift to center of pixel
            if pad:
                padding_point = torch.zeros((points.shape[0], 1, 2), device=points.device)
                padding_label = -torch.ones((labels.shape[0], 1), device=labels.device)
                points = torch.cat([points, padding_point], dim=1)
                labels = torch.cat([labels, padding_label], dim=1)
            point_embedding = self.pe_layer.forward_with_coords(points, self.input_image_size)
            point_embedding[labels == -1] = 0.0
            point_embedding[labels == -1] += self.not_a_point_embed.weight
            point_embedding[labels == 0] += self.point_embeddings[0].weight
            point_embedding[labels == 1] += self.point_embeddings[1].weight
            return point_embedding

        def _embed_boxes(self, boxes):
            boxes = boxes + 0.5  # Shift to center of pixel
            coords = boxes.reshape(-1, 2, 2)
            corner_embedding = self.pe_layer.forward_with_coords(coords, self.input_image_size)
            corner_embedding[:, 0, :] += self.point_embeddings[2].weight
            corner_embedding[:, 1, :] += self.point_embeddings[3].weight
            return corner_embedding

        def _embed_masks(self, masks):
            return self.mask_downscaling(masks)

        def _get_batch_size(self, points, boxes, masks):
            if points is not None:
                return points[0].shape[0]
            elif boxes is not None:
                return boxes.shape[0]
            elif masks is not None:
                return masks.shape[0]
            else:
                return 1

        def _get_device(self):
            return self.point_embeddings[0].weight.device

        def forward(self, points, boxes, masks):
            bs = self._get_batch_size(points, boxes, masks)
            sparse_embeddings = torch.empty((bs, 0, self.embed_dim), device=self._get_device())
            if points is not None:
                coords, labels = points
                point_embeddings = self._embed_points(coords, labels, pad=(boxes is None))
                sparse_embeddings = torch.cat([sparse_embeddings, point_embeddings], dim=1)
            if boxes is not None:
                box_embeddings = self._embed_boxes(boxes)
                sparse_embeddings = torch.cat([sparse_embeddings, box_embeddings], dim=1)
            if masks is not None:
                dense_embeddings = self._embed_masks(masks)
            else:
                dense_embeddings = self.no_mask_embed.weight.reshape(1, -1, 1, 1).expand(
                    bs, -1, self.image_embedding_size[0], self.image_embedding_size[1])
            return sparse_embeddings, dense_embeddings

    class Attention(nn.Module):
        def __init__(self, embedding_dim, num_heads, downsample_rate=1):
            super().__init__()
            self.embedding_dim = embedding_dim
            self.internal_dim = embedding_dim // downsample_rate
            self.num_heads = num_heads
            assert self.internal_dim % num_heads == 0, "num_heads must divide embedding_dim."
            self.q_proj = nn.Linear(embedding_dim, self.internal_dim)
            self.k_proj = nn.Linear(embedding_dim, self.internal_dim, bias=False)
            self.v_proj = nn.Linear(embedding_dim, self.internal_dim)
            self.out_proj = nn.Linear(self.internal_dim, embedding_dim)

        def _separate_heads(self, x, num_heads):
            b, n, c = x.shape
            x = x.reshape(b, n, num_heads, c // num_heads)
            return x.transpose(1, 2)  # B x N_heads x N_tokens x C_per_head

        def _recombine_heads(self, x):
            b, n_heads, n_tokens, c_per_head = x.shape
            x = x.transpose(1, 2)
            return x.reshape(b, n_tokens, n_heads * c_per_head)  # B x N_tokens x C

        def forward(self, q, k, v):
            q = self.q_proj(q)
            k = self.k_proj(k)
            v = self.v_proj(v)
            q = self._separate_heads(q, self.num_heads)
            k = self._separate_heads(k, self.num_heads)
            v = self._separate_heads(v, self.num_heads)
            _, _, _, c_per_head = q.shape
            attn = q @ k.permute(0, 1, 3, 2)  # B x N_heads x N_tokens x N_tokens
            attn = attn / math.sqrt(c_per_head)
            attn = torch.softmax(attn, dim=-1)
            out = attn @ v
            out = self._recombine_heads(out)
            out = self.out_proj(out)
            return out

    class TwoWayAttentionBlock(nn.Module):
        def __init__(self, embedding_dim, num_heads, mlp_dim=2048, activation=nn.ReLU,
                     attention_downsample_rate=2, skip_first_layer_pe=False):
            super().__init__()
            self.self_attn = Attention(embedding_dim, num_heads)
            self.norm1 = nn.LayerNorm(embedding_dim)
            self.cross_attn_token_to_image = Attention(embedding_dim, num_heads,
                                                       downsample_rate=attention_downsample_rate)
            self.norm2 = nn.LayerNorm(embedding_dim)
            self.mlp = MLPBlock(embedding_dim, mlp_dim, activation)
            self.norm3 = nn.LayerNorm(embedding_dim)
            self.norm4 = nn.LayerNorm(embedding_dim)
            self.cross_attn_image_to_token = Attention(embedding_dim, num_heads,
                                                       downsample_rate=attention_downsample_rate)
            self.skip_first_layer_pe = skip_first_layer_pe

        def forward(self, queries, keys, query_pe, key_pe):
            # Self attention block
            if self.skip_first_layer_pe:
                queries = self.self_attn(q=queries, k=queries, v=queries)
            else:
                q = queries + query_pe
                attn_out = self.self_attn(q=q, k=q, v=queries)
                queries = queries + attn_out
            queries = self.norm1(queries)
            # Cross attention block, tokens attending to image embedding
            q = queries + query_pe
            k = keys + key_pe
            attn_out = self.cross_attn_token_to_image(q=q, k=k, v=keys)
            queries = queries + attn_out
            queries = self.norm2(queries)
            # MLP block
            mlp_out = self.mlp(queries)
            queries = queries + mlp_out
            queries = self.norm3(queries)
            # Cross attention block, image embedding attending to tokens
            q = queries + query_pe
            k = keys + key_pe
            attn_out = self.cross_attn_image_to_token(q=k, k=q, v=queries)
            keys = keys + attn_out
            keys = self.norm4(keys)
            return queries, keys

    class TwoWayTransformer(nn.Module):
        def __init__(self, depth, embedding_dim, num_heads, mlp_dim, activation=nn.ReLU,
                     attention_downsample_rate=2):
            super().__init__()
            self.depth = depth
            self.embedding_dim = embedding_dim
            self.num_heads = num_heads
            self.mlp_dim = mlp_dim
            self.layers = nn.ModuleList()
            for i in range(depth):
                self.layers.append(TwoWayAttentionBlock(embedding_dim=embedding_dim, num_heads=num_heads,
                                                        mlp_dim=mlp_dim, activation=activation,
                                                        attention_downsample_rate=attention_downsample_rate,
                                                        skip_first_layer_pe=(i == 0)))
            self.final_attn_token_to_image = Attention(embedding_dim, num_heads,
                                                       downsample_rate=attention_downsample_rate)
            self.norm_final_attn = nn.LayerNorm(embedding_dim)

        def forward(self, image_embedding, image_pe, point_embedding):
            # BxCxHxW -> BxHWxC == B x N_image_tokens x C
            bs, c, h, w = image_embedding.shape
            image_embedding = image_embedding.flatten(2).permute(0, 2, 1)
            image_pe = image_pe.flatten(2).permute(0, 2, 1)
            # Prepare queries
            queries = point_embedding
            keys = image_embedding
            # Apply transformer blocks and final layernorm
            for layer in self.layers:
                queries, keys = layer(queries=queries, keys=keys, query_pe=point_embedding, key_pe=image_pe)
            # Apply the final attention layer from the points to the image
            q = queries + point_embedding
            k = keys + image_pe
            attn_out = self.final_attn_token_to_image(q=q, k=k, v=keys)
            queries = queries + attn_out
            queries = self.norm_final_attn(queries)
            return queries, keys

    class MLP(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, num_layers, sigmoid_output=False):
            super().__init__()
            self.num_layers = num_layers
            h = [hidden_dim] * (num_layers - 1)
            self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))
            self.sigmoid_output = sigmoid_output

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = F.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
            if self.sigmoid_output:
                x = F.sigmoid(x)
            return x

    class MaskDecoder(nn.Module):
        def __init__(self, *, transformer_dim, transformer, num_multimask_outputs=3, activation=nn.GELU,
                     iou_head_depth=3, iou_head_hidden_dim=256):
            super().__init__()
            self.transformer_dim = transformer_dim
            self.transformer = transformer
            self.num_multimask_outputs = num_multimask_outputs
            self.iou_token = nn.Embedding(1, transformer_dim)
            self.num_mask_tokens = num_multimask_outputs + 1
            self.mask_tokens = nn.Embedding(self.num_mask_tokens, transformer_dim)
            self.output_upscaling = nn.Sequential(
                nn.ConvTranspose2d(transformer_dim, transformer_dim // 2, kernel_size=2, stride=2),
                LayerNorm2d(transformer_dim // 2), activation(),
                nn.ConvTranspose2d(transformer_dim // 2, transformer_dim // 4, kernel_size=2, stride=2), activation())
            self.output_hypernetworks_mlps = nn.ModuleList([
                MLP(transformer_dim, transformer_dim, transformer_dim // 4, 3) for i in range(self.num_mask_tokens)])
            self.iou_prediction_head = MLP(transformer_dim, iou_head_hidden_dim, self.num_mask_tokens,
                                           iou_head_depth)

        def forward(self, image_embeddings, image_pe, sparse_prompt_embeddings, dense_prompt_embeddings,
                    multimask_output):
            masks, iou_pred = self.predict_masks(image_embeddings=image_embeddings, image_pe=image_pe,
                                                 sparse_prompt_embeddings=sparse_prompt_embeddings,
                                                 dense_prompt_embeddings=dense_prompt_embeddings)
            # Select the correct mask or masks for output
            if multimask_output:
                mask_slice = slice(1, None)
            else:
                mask_slice = slice(0, 1)
            masks = masks[:, mask_slice, :, :]
            iou_pred = iou_pred[:, mask_slice]
            return masks, iou_pred

        def predict_masks(self, image_embeddings, image_pe, sparse_prompt_embeddings, dense_prompt_embeddings):
            # Concatenate output tokens
            output_tokens = torch.cat([self.iou_token.weight, self.mask_tokens.weight], dim=0)
            output_tokens = output_tokens.unsqueeze(0).expand(sparse_prompt_embeddings.size(0), -1, -1)
            tokens = torch.cat((output_tokens, sparse_prompt_embeddings), dim=1)
            # Expand per-image data in batch direction to be per-mask
            src = torch.repeat_interleave(image_embeddings, tokens.shape[0], dim=0)
            src = src + dense_prompt_embeddings
            pos_src = torch.repeat_interleave(image_pe, tokens.shape[0], dim=0)
            b, c, h, w = src.shape
            # Run the transformer
            hs, src = self.transformer(src, pos_src, tokens)
            iou_token_out = hs[:, 0, :]
            mask_tokens_out = hs[:, 1: (1 + self.num_mask_tokens), :]
            # Upscale mask embeddings and predict masks using the mask tokens
            src = src.transpose(1, 2).view(b, c, h, w)
            upscaled_embedding = self.output_upscaling(src)
            hyper_in_list = []
            for i in range(self.num_mask_tokens):
                hyper_in_list.append(self.output_hypernetworks_mlps[i](mask_tokens_out[:, i, :]))
            hyper_in = torch.stack(hyper_in_list, dim=1)
            b, c, h, w = upscaled_embedding.shape
            masks = (hyper_in @ upscaled_embedding.view(b, c, h * w)).view(b, -1, h, w)
            # Generate mask quality predictions
            iou_pred = self.iou_prediction_head(iou_token_out)
            return masks, iou_pred

    class Sam(nn.Module):
        def __init__(self, image_encoder, prompt_encoder, mask_decoder):
            super().__init__()
            self.image_encoder = image_encoder
            self.prompt_encoder = prompt_encoder
            self.mask_decoder = mask_decoder

    def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2):
        prob = inputs.sigmoid()
        ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
        p_t = prob * targets + (1 - prob) * (1 - targets)
        loss = ce_loss * ((1 - p_t) ** gamma)
        if alpha >= 0:
            alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
            loss = alpha_t * loss
        return loss.mean()

    def dice_loss(inputs, targets):
        inputs = inputs.sigmoid().flatten(1)
        targets = targets.flatten(1)
        numerator = 2 * (inputs * targets).sum(-1)
        denominator = inputs.sum(-1) + targets.sum(-1)
        return (1 - (numerator + 1) / (denominator + 1)).mean()

    sam = Sam(ImageEncoderViT(),
              PromptEncoder(embed_dim=8, image_embedding_size=(4, 4), input_image_size=(16, 16), mask_in_chans=8),
              MaskDecoder(num_multimask_outputs=3, transformer=TwoWayTransformer(depth=1, embedding_dim=8,
                                                                                 mlp_dim=16, num_heads=2),
                          transformer_dim=8, iou_head_depth=2, iou_head_hidden_dim=8))
    for blk in sam.image_encoder.blocks:
        nn.init.normal_(blk.attn.rel_pos_h, std=0.1)
        nn.init.normal_(blk.attn.rel_pos_w, std=0.1)
    init = load(m, sam, state)
    for p in sam.image_encoder.parameters():
        p.requires_grad = False
    optimizer = optim.Adam([p for p in sam.parameters() if p.requires_grad], lr=1e-3)
    image = torch.from_numpy(normal(rng, 1, 3, 16, 16))
    gt = np.zeros((1, 1, 16, 16), np.float32)
    gt[:, :, 3:11, 5:13] = 1
    gt_mask = torch.from_numpy(gt)
    point_coords = torch.from_numpy(np.array([[[7.0, 6.0], [2.0, 14.0]]], np.float32))
    point_labels = torch.from_numpy(np.array([[1, 0]]))
    box = torch.from_numpy(np.array([[4.0, 2.0, 13.0, 11.0]], np.float32))
    record = []
    with torch.no_grad():
        image_embedding = sam.image_encoder(image)
    mask_input = None
    for it in range(3):
        prompts = dict(points=(point_coords, point_labels), boxes=None) if it == 0 else \
            dict(points=(point_coords, point_labels), boxes=box)
        sparse_embeddings, dense_embeddings = sam.prompt_encoder(masks=mask_input, **prompts)
        low_res_masks, iou_predictions = sam.mask_decoder(
            image_embeddings=image_embedding, image_pe=sam.prompt_encoder.get_dense_pe(),
            sparse_prompt_embeddings=sparse_embeddings, dense_prompt_embeddings=dense_embeddings,
            multimask_output=mask_input is None)
        best = iou_predictions.argmax(dim=1)
        low_res = low_res_masks[torch.arange(low_res_masks.shape[0]), best].unsqueeze(1)
        masks = F.interpolate(low_res, (16, 16), mode="bilinear", align_corners=False)
        with torch.no_grad():
            pred = (masks > 0).float()
            inter = (pred * gt_mask).sum((1, 2, 3))
            union = pred.sum((1, 2, 3)) + gt_mask.sum((1, 2, 3)) - inter
            iou = inter / union.clamp(min=1)
        loss = 20 * sigmoid_focal_loss(masks, gt_mask) + dice_loss(masks, gt_mask) + \
            F.mse_loss(iou_predictions[torch.arange(1), best], iou)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record += [loss.item(), sparse_embeddings.shape[1]] + best.tolist()
        # the next round refines with the chosen low-resolution logits as the mask prompt, one mask out
        mask_input = low_res.detach()
    return init, record + summary(sam.parameters())


def test_segment_anything():
    compare(segment_anything)


# (l) openai/whisper's model.py and decoding.py at toy sizes: sinusoids (np.log, -increment * torch.arange, [:,
# np.newaxis]), the LayerNorm, Linear and Conv1d subclasses that cast to x.dtype (LayerNorm's super().forward(
# x.float()).type(x.dtype), Conv1d's _conv_forward override calling super()._conv_forward), MultiHeadAttention with
# q.view(*q.shape[:2], n_head, -1).permute(0, 2, 1, 3) and the (n_state // n_head) ** -0.25 scale on q and k, a causal
# mask buffer by torch.empty(n_ctx, n_ctx).fill_(-np.inf).triu_(1) registered with persistent=False, the encoder's
# GELU convolutions and positional buffer checked by x.shape[1:] == positional_embedding.shape, the decoder's tied
# logits x @ torch.transpose(token_embedding.weight, 0, 1); a teacher-forced training step, then greedy decoding with
# install_kv_cache_hooks (forward hooks on the key and value Linears keyed by module in a dict, returning
# torch.cat([cache[module], output], dim=1).detach()), the offset read from next(iter(kv_cache.values())).shape[1],
# logits[:, suppress_tokens] = -np.inf, sum_logprobs += current_logprobs * (tokens[:, -1] != eot) and
# logprobs[torch.arange(n), next_tokens], (tokens[:, -1] == eot).all(), and the timestamp rule's logsumexp against a
# max over slices of logprobs
def whisper(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(12)
    Dims = collections.namedtuple('ModelDimensions', 'n_mels n_audio_ctx n_audio_state n_audio_head n_audio_layer '
                                  'n_vocab n_text_ctx n_text_state n_text_head n_text_layer')

    class LayerNorm(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.float()).type(x.dtype)

    class Linear(nn.Linear):
        def forward(self, x):
            return F.linear(x, self.weight.to(x.dtype), None if self.bias is None else self.bias.to(x.dtype))

    class Conv1d(nn.Conv1d):
        def _conv_forward(self, x, weight, bias):
            return super()._conv_forward(x, weight.to(x.dtype), None if bias is None else bias.to(x.dtype))

    def sinusoids(length, channels, max_timescale=10000):
        """Returns sinusoids for positional embedding"""
        assert channels % 2 == 0
        log_timescale_increment = np.log(max_timescale) / (channels // 2 - 1)
        inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
        scaled_time = torch.arange(length)[:, np.newaxis] * inv_timescales[np.newaxis, :]
        return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)

    class MultiHeadAttention(nn.Module):
        def __init__(self, n_state, n_head):
            super().__init__()
            self.n_head = n_head
            self.query = Linear(n_state, n_state)
            self.key = Linear(n_state, n_state, bias=False)
            self.value = Linear(n_state, n_state)
            self.out = Linear(n_state, n_state)

        def forward(self, x, xa=None, mask=None, kv_cache=None):
            q = self.query(x)
            if kv_cache is None or xa is None or self.key not in kv_cache:
                # hooks, if installed (i.e. kv_cache is not None), will prepend the cached kv tensors;
                # otherwise, perform key/value projections for self- or cross-attention as usual.
                k = self.key(x if xa is None else xa)
                v = self.value(x if xa is None else xa)
            else:
                # for cross-attention, calculate keys and values once and reuse in subsequent calls.
                k = kv_cache[self.key]
                v = kv_cache[self.value]
            wv, qk = self.qkv_attention(q, k, v, mask)
            return self.out(wv), qk

        def qkv_attention(self, q, k, v, mask=None):
            n_batch, n_ctx, n_state = q.shape
            scale = (n_state // self.n_head) ** -0.25
            q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
            k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
            v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
            qk = q @ k
            if mask is not None:
                qk = qk + mask[:n_ctx, :n_ctx]
            qk = qk.float()
            w = F.softmax(qk, dim=-1).to(q.dtype)
            return (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2), qk.detach()

    class ResidualAttentionBlock(nn.Module):
        def __init__(self, n_state, n_head, cross_attention=False):
            super().__init__()
            self.attn = MultiHeadAttention(n_state, n_head)
            self.attn_ln = LayerNorm(n_state)
            self.cross_attn = MultiHeadAttention(n_state, n_head) if cross_attention else None
            self.cross_attn_ln = LayerNorm(n_state) if cross_attention else None
            n_mlp = n_state * 4
            self.mlp = nn.Sequential(Linear(n_state, n_mlp), nn.GELU(), Linear(n_mlp, n_state))
            self.mlp_ln = LayerNorm(n_state)

        def forward(self, x, xa=None, mask=None, kv_cache=None):
            x = x + self.attn(self.attn_ln(x), mask=mask, kv_cache=kv_cache)[0]
            if self.cross_attn:
                x = x + self.cross_attn(self.cross_attn_ln(x), xa, kv_cache=kv_cache)[0]
            x = x + self.mlp(self.mlp_ln(x))
            return x

    class AudioEncoder(nn.Module):
        def __init__(self, n_mels, n_ctx, n_state, n_head, n_layer):
            super().__init__()
            self.conv1 = Conv1d(n_mels, n_state, kernel_size=3, padding=1)
            self.conv2 = Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
            self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))
            self.blocks = nn.ModuleList([ResidualAttentionBlock(n_state, n_head) for _ in range(n_layer)])
            self.ln_post = LayerNorm(n_state)

        def forward(self, x):
            """x : torch.Tensor, shape = (batch_size, n_mels, n_ctx) the mel spectrogram of the audio"""
            x = F.gelu(self.conv1(x))
            x = F.gelu(self.conv2(x))
            x = x.permute(0, 2, 1)
            assert x.shape[1:] == self.positional_embedding.shape, "incorrect audio shape"
            x = (x + self.positional_embedding).to(x.dtype)
            for block in self.blocks:
                x = block(x)
            x = self.ln_post(x)
            return x

    class TextDecoder(nn.Module):
        def __init__(self, n_vocab, n_ctx, n_state, n_head, n_layer):
            super().__init__()
            self.token_embedding = nn.Embedding(n_vocab, n_state)
            self.positional_embedding = nn.Parameter(torch.empty(n_ctx, n_state))
            self.blocks = nn.ModuleList([ResidualAttentionBlock(n_state, n_head, cross_attention=True)
                                         for _ in range(n_layer)])
            self.ln = LayerNorm(n_state)
            mask = torch.empty(n_ctx, n_ctx).fill_(-np.inf).triu_(1)
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, x, xa, kv_cache=None):
            offset = next(iter(kv_cache.values())).shape[1] if kv_cache else 0
            x = self.token_embedding(x) + self.positional_embedding[offset: offset + x.shape[-1]]
            x = x.to(xa.dtype)
            for block in self.blocks:
                x = block(x, xa, mask=self.mask, kv_cache=kv_cache)
            x = self.ln(x)
            logits = (x @ torch.transpose(self.token_embedding.weight.to(x.dtype), 0, 1)).float()
            return logits

    class Whisper(nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.dims = dims
            self.encoder = AudioEncoder(self.dims.n_mels, self.dims.n_audio_ctx, self.dims.n_audio_state,
                                        self.dims.n_audio_head, self.dims.n_audio_layer)
            self.decoder = TextDecoder(self.dims.n_vocab, self.dims.n_text_ctx, self.dims.n_text_state,
                                       self.dims.n_text_head, self.dims.n_text_layer)

        def embed_audio(self, mel):
            return self.encoder(mel)

        def logits(self, tokens, audio_features):
            return self.decoder(tokens, audio_features)

        def forward(self, mel, tokens):
            return self.decoder(tokens, self.encoder(mel))

        def install_kv_cache_hooks(self, cache=None):
            cache = {**cache} if cache is not None else {}
            hooks = []

            def save_to_cache(module, _, output):
                if module not in cache or output.shape[1] > self.dims.n_text_ctx:
                    # save as-is, for the first token or cross attention
                    cache[module] = output
                else:
                    cache[module] = torch.cat([cache[module], output], dim=1).detach()
                return cache[module]

            def install_hooks(layer):
                if isinstance(layer, MultiHeadAttention):
                    hooks.append(layer.key.register_forward_hook(save_to_cache))
                    hooks.append(layer.value.register_forward_hook(save_to_cache))

            self.decoder.apply(install_hooks)
            return cache, hooks

    dims = Dims(n_mels=4, n_audio_ctx=4, n_audio_state=8, n_audio_head=2, n_audio_layer=1, n_vocab=10, n_text_ctx=6,
                n_text_state=8, n_text_head=2, n_text_layer=1)
    model = Whisper(dims)
    nn.init.normal_(model.decoder.positional_embedding, std=0.1)
    nn.init.normal_(model.decoder.token_embedding.weight, std=0.5)
    init = load(m, model, state)
    assert 'decoder.mask' not in model.state_dict()
    sot, eot, timestamp_begin = 1, 2, 7
    mel = torch.from_numpy(normal(rng, 2, 4, 8))
    tokens = torch.from_numpy(np.concatenate([np.full((2, 1), sot), rng.integers(3, 7, (2, 4)),
                                              np.full((2, 1), eot)], 1))
    optimizer = optim.AdamW(model.parameters(), lr=3e-3)
    record = []
    for it in range(1):
        logits = model(mel, tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, dims.n_vocab), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    # greedy decoding with the key-value cache, as decoding.py's PyTorchInference
    class PyTorchInference:
        def __init__(self, model, initial_token_length):
            self.model = model
            self.initial_token_length = initial_token_length
            self.kv_cache = {}
            self.hooks = []

        def logits(self, tokens, audio_features):
            if not self.kv_cache:
                self.kv_cache, self.hooks = self.model.install_kv_cache_hooks()
            if tokens.shape[-1] > self.initial_token_length:
                # only need to use the last token except in the first forward pass
                tokens = tokens[:, -1:]
            return self.model.decoder(tokens, audio_features, kv_cache=self.kv_cache)

        def cleanup_caching(self):
            for hook in self.hooks:
                hook.remove()
            self.kv_cache = {}
            self.hooks = []

    model.eval()
    suppress_tokens = [0, sot, 5]
    with torch.no_grad():
        audio_features = model.embed_audio(mel)
        inference = PyTorchInference(model, 1)
        n_audio = mel.shape[0]
        tokens = torch.tensor([[sot]]).repeat(n_audio, 1)
        sum_logprobs = torch.zeros(n_audio)
        for i in range(3):
            logits = inference.logits(tokens, audio_features)
            logits = logits[:, -1]
            logits[:, suppress_tokens] = -np.inf
            logprobs = F.log_softmax(logits.float(), dim=-1)
            for k in range(tokens.shape[0]):
                timestamp_logprob = logprobs[k, timestamp_begin:].logsumexp(dim=-1)
                max_text_token_logprob = logprobs[k, :timestamp_begin].max()
                if timestamp_logprob > max_text_token_logprob:
                    logits[k, :timestamp_begin] = -np.inf
            logprobs = F.log_softmax(logits.float(), dim=-1)
            next_tokens = logits.argmax(dim=-1)
            current_logprobs = logprobs[torch.arange(logprobs.shape[0]), next_tokens]
            sum_logprobs += current_logprobs * (tokens[:, -1] != eot)
            next_tokens[tokens[:, -1] == eot] = eot
            tokens = torch.cat([tokens, next_tokens[:, None]], dim=-1)
            completed = (tokens[:, -1] == eot).all()
            if completed:
                break
        cached = [v.shape[1] for v in inference.kv_cache.values()]
        inference.cleanup_caching()
        # the decoded tokens through a full forward, without the cache
        full = model.logits(tokens[:, :-1], audio_features)
    record += tokens.flatten().tolist() + sum_logprobs.tolist() + full.flatten().tolist() + cached
    return init, record + summary(model.parameters())


def test_whisper():
    compare(whisper)
