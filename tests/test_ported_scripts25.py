"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: lucidrains' performer-pytorch (FAVOR+ features from QR-orthogonal blocks, the softmax and
generalized kernels, causal linear attention by cumsum); a word-level LSTM language model over
nn.AdaptiveLogSoftmaxWithLoss; an image captioner over nn.TransformerDecoder; PyTorch Geometric's QM9 NNConv example
(edge networks, a GRU, Set2Set) written inline; the parametrizations tutorial (register_parametrization,
right_inverse, matrix_exp, a Cayley map, cached, remove_parametrizations); d2l.ai 1.0's ResNet of lazy modules;
AMLab's attention-based deep multiple-instance learning; DeepAR's Gaussian LSTM; YOLOv5's torch_utils
(smart_optimizer, ModelEMA, fuse_conv_and_bn, the np.interp warmup); apple/ml-cvnets' MobileViT block; a comparison
of nn's activations; SaoYan's DnCNN; a neural system-identification model under PoissonNLLLoss; shirgur's PointerNet
(whose `x[mask.byte()]` found that tnet refused torch's deprecated uint8 masks); the self-organising textures'
neural CA (circular padding, a pool of states); torchvision's video ResNet (R(2+1)D's Conv2Plus1D); Hugging Face
Trainer's training step (LabelSmoother, the CPU bf16 autocast by torch.cpu.amp.autocast, which tnet lacked); and
Captum's LayerIntegratedGradients (whose hook handle in a `with` block and torch.utils.hooks.RemovableHandle tnet
lacked). DeepAR's forget-gate init through `lstm._all_weights` found that tnet's LSTM lacked that list. Each runs in
tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed
into a few numbers, agree. Numpy draws what a script draws, or torch replays tnet's draws (`replay`); shapes are
tiny and runs take one or two steps. Each script seeds torch first, as its source's main does. Where Adam would
normalise a gradient that is rounding alone (an attention key's bias, a bias before a BatchNorm), the script takes
SGD, as each says."""
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) lucidrains' performer-pytorch (performer_pytorch.py): orthogonal_matrix_chunk by torch.linalg.qr of a randn
# block on the CPU, gaussian_orthogonal_random_matrix (full blocks, a remainder of rows, the multiplier by
# randn(...).norm(dim=1), torch.diag(multiplier) @ final_matrix) kept as a buffer, softmax_kernel (the data normaliser,
# the ratio, diag_data, torch.amax(..., keepdim=True).detach() over the last dim for queries and the last two for
# keys), generalized_kernel with kernel_fn=nn.ReLU(), linear_attention and causal_linear_attention_noncuda (chunks,
# k.cumsum(dim=-2), context.cumsum(dim=-3), the last cumsums carried) by einsum with ellipses, the projection redrawn
# under torch.no_grad() by copy_, PreLayerNorm, Chunk over the feed-forward, a GLU FeedForward, PerformerLM's
# AbsolutePositionalEmbedding; einops' rearrange and repeat written as view, transpose and expand
def performer(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    from functools import partial

    def exists(val):
        return val is not None

    def default(val, d):
        return val if exists(val) else d

    def orthogonal_matrix_chunk(cols, device=None):
        unstructured_block = torch.randn((cols, cols), device=device)
        q, r = torch.linalg.qr(unstructured_block.cpu(), mode='reduced')
        q, r = map(lambda t: t.to(device), (q, r))
        return q.t()

    def gaussian_orthogonal_random_matrix(nb_rows, nb_columns, scaling=0, device=None):
        nb_full_blocks = int(nb_rows / nb_columns)

        block_list = []

        for _ in range(nb_full_blocks):
            q = orthogonal_matrix_chunk(nb_columns, device=device)
            block_list.append(q)

        remaining_rows = nb_rows - nb_full_blocks * nb_columns
        if remaining_rows > 0:
            q = orthogonal_matrix_chunk(nb_columns, device=device)
            block_list.append(q[:remaining_rows])

        final_matrix = torch.cat(block_list)

        if scaling == 0:
            multiplier = torch.randn((nb_rows, nb_columns), device=device).norm(dim=1)
        elif scaling == 1:
            multiplier = math.sqrt((float(nb_columns))) * torch.ones((nb_rows,), device=device)
        else:
            raise ValueError(f'Invalid scaling {scaling}')

        return torch.diag(multiplier) @ final_matrix

    def softmax_kernel(data, *, projection_matrix, is_query, normalize_data=True, eps=1e-4, device=None):
        b, h, *_ = data.shape

        data_normalizer = (data.shape[-1] ** -0.25) if normalize_data else 1.

        ratio = (projection_matrix.shape[0] ** -0.5)

        projection = projection_matrix.expand(b, h, *projection_matrix.shape)  # repeat(.., 'j d -> b h j d')
        projection = projection.type_as(data)

        data_dash = torch.einsum('...id,...jd->...ij', (data_normalizer * data), projection)

        diag_data = data ** 2
        diag_data = torch.sum(diag_data, dim=-1)
        diag_data = (diag_data / 2.0) * (data_normalizer ** 2)
        diag_data = diag_data.unsqueeze(dim=-1)

        if is_query:
            data_dash = ratio * (
                torch.exp(data_dash - diag_data -
                          torch.amax(data_dash, dim=-1, keepdim=True).detach()) + eps)
        else:
            data_dash = ratio * (
                torch.exp(data_dash - diag_data - torch.amax(data_dash, dim=(-1, -2), keepdim=True).detach()) + eps)

        return data_dash.type_as(data)

    def generalized_kernel(data, *, projection_matrix, kernel_fn=nn.ReLU(), kernel_epsilon=0.001, normalize_data=True,
                           device=None):
        b, h, *_ = data.shape

        data_normalizer = (data.shape[-1] ** -0.25) if normalize_data else 1.

        if projection_matrix is None:
            return kernel_fn(data_normalizer * data) + kernel_epsilon

        projection = projection_matrix.expand(b, h, *projection_matrix.shape)
        projection = projection.type_as(data)

        data_dash = torch.einsum('...id,...jd->...ij', (data_normalizer * data), projection)

        data_prime = kernel_fn(data_dash) + kernel_epsilon
        return data_prime.type_as(data)

    def linear_attention(q, k, v):
        k_cumsum = k.sum(dim=-2)
        D_inv = 1. / torch.einsum('...nd,...d->...n', q, k_cumsum.type_as(q))
        context = torch.einsum('...nd,...ne->...de', k, v)
        out = torch.einsum('...de,...nd,...n->...ne', context, q, D_inv)
        return out

    def causal_linear_attention_noncuda(q, k, v, chunk_size=128, eps=1e-6):
        last_k_cumsum = 0
        last_context_cumsum = 0
        outs = []

        for q, k, v in zip(*map(lambda t: t.chunk(chunk_size, dim=-2), (q, k, v))):
            k_cumsum = last_k_cumsum + k.cumsum(dim=-2)

            D_inv = 1. / torch.einsum('...nd,...nd->...n', q, k_cumsum.type_as(q) + eps)
            context = torch.einsum('...nd,...ne->...nde', k, v)
            context_cumsum = last_context_cumsum + context.cumsum(dim=-3)
            out = torch.einsum('...nde,...nd,...n->...ne', context_cumsum, q, D_inv)

            last_k_cumsum = k_cumsum[:, :, -1:]
            last_context_cumsum = context_cumsum[:, :, -1:]
            outs.append(out)

        return torch.cat(outs, dim=-2)

    class FastAttention(nn.Module):
        def __init__(self, dim_heads, nb_features=None, ortho_scaling=0, causal=False, generalized_attention=False,
                     kernel_fn=nn.ReLU(), no_projection=False):
            super().__init__()
            nb_features = default(nb_features, int(dim_heads * math.log(dim_heads)))

            self.dim_heads = dim_heads
            self.nb_features = nb_features
            self.ortho_scaling = ortho_scaling

            self.create_projection = partial(gaussian_orthogonal_random_matrix, nb_rows=self.nb_features,
                                             nb_columns=dim_heads, scaling=ortho_scaling)
            projection_matrix = self.create_projection()
            self.register_buffer('projection_matrix', projection_matrix)

            self.generalized_attention = generalized_attention
            self.kernel_fn = kernel_fn
            self.no_projection = no_projection
            self.causal = causal
            if causal:
                self.causal_linear_fn = partial(causal_linear_attention_noncuda, chunk_size=2)

        @torch.no_grad()
        def redraw_projection_matrix(self, device):
            projections = self.create_projection(device=device)
            self.projection_matrix.copy_(projections)
            del projections

        def forward(self, q, k, v):
            device = q.device

            if self.no_projection:
                q = q.softmax(dim=-1)
                k = torch.exp(k) if self.causal else k.softmax(dim=-2)

            elif self.generalized_attention:
                create_kernel = partial(generalized_kernel, kernel_fn=self.kernel_fn,
                                        projection_matrix=self.projection_matrix, device=device)
                q, k = map(create_kernel, (q, k))

            else:
                create_kernel = partial(softmax_kernel, projection_matrix=self.projection_matrix, device=device)
                q = create_kernel(q, is_query=True)
                k = create_kernel(k, is_query=False)

            attn_fn = linear_attention if not self.causal else self.causal_linear_fn
            out = attn_fn(q, k, v)
            return out

    class PreLayerNorm(nn.Module):
        def __init__(self, dim, fn):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.fn = fn

        def forward(self, x, **kwargs):
            return self.fn(self.norm(x), **kwargs)

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

    class FeedForward(nn.Module):
        def __init__(self, dim, mult=4, dropout=0., activation=None, glu=False):
            super().__init__()
            activation = default(activation, nn.GELU)

            self.glu = glu
            self.w1 = nn.Linear(dim, dim * mult * (2 if glu else 1))
            self.act = activation()
            self.dropout = nn.Dropout(dropout)
            self.w2 = nn.Linear(dim * mult, dim)

        def forward(self, x, **kwargs):
            if not self.glu:
                x = self.w1(x)
                x = self.act(x)
            else:
                x, v = self.w1(x).chunk(2, dim=-1)
                x = self.act(x) * v

            x = self.dropout(x)
            x = self.w2(x)
            return x

    class SelfAttention(nn.Module):
        def __init__(self, dim, causal=False, heads=8, dim_head=64, nb_features=None, generalized_attention=False,
                     kernel_fn=nn.ReLU(), dropout=0., no_projection=False, qkv_bias=False, attn_out_bias=True):
            super().__init__()
            assert dim % heads == 0, 'dimension must be divisible by number of heads'
            dim_head = default(dim_head, dim // heads)
            inner_dim = dim_head * heads
            self.fast_attention = FastAttention(dim_head, nb_features, causal=causal,
                                                generalized_attention=generalized_attention, kernel_fn=kernel_fn,
                                                no_projection=no_projection)

            self.heads = heads
            self.to_q = nn.Linear(dim, inner_dim, bias=qkv_bias)
            self.to_k = nn.Linear(dim, inner_dim, bias=qkv_bias)
            self.to_v = nn.Linear(dim, inner_dim, bias=qkv_bias)
            self.to_out = nn.Linear(inner_dim, dim, bias=attn_out_bias)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x, **kwargs):
            b, n, _, h = *x.shape, self.heads

            q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
            # rearrange(t, 'b n (h d) -> b h n d', h=h)
            q, k, v = map(lambda t: t.view(b, n, h, -1).transpose(1, 2), (q, k, v))

            out = self.fast_attention(q, k, v)
            out = out.transpose(1, 2).reshape(b, n, -1)  # rearrange(out, 'b h n d -> b n (h d)')
            out = self.to_out(out)
            return self.dropout(out)

    class AbsolutePositionalEmbedding(nn.Module):
        def __init__(self, dim, max_seq_len):
            super().__init__()
            self.emb = nn.Embedding(max_seq_len, dim)

        def forward(self, x):
            t = torch.arange(x.shape[1], device=x.device)
            return self.emb(t)

    class ProjectionUpdater(nn.Module):
        def __init__(self, instance, feature_redraw_interval):
            super().__init__()
            self.instance = instance
            self.feature_redraw_interval = feature_redraw_interval
            self.register_buffer('calls_since_last_redraw', torch.tensor(0))

        def fix_projections_(self):
            self.feature_redraw_interval = None

        def redraw_projections(self):
            model = self.instance

            if not self.training:
                return

            if exists(self.feature_redraw_interval) and self.calls_since_last_redraw >= self.feature_redraw_interval:
                device = next(model.parameters()).device

                fast_attentions = [module for module in model.modules() if isinstance(module, FastAttention)]
                for fast_attention in fast_attentions:
                    fast_attention.redraw_projection_matrix(device)

                self.calls_since_last_redraw.zero_()
                return

            self.calls_since_last_redraw += 1

        def forward(self, x):
            raise NotImplementedError

    class Performer(nn.Module):
        def __init__(self, dim, depth, heads, dim_head, causal=False, ff_mult=4, nb_features=None,
                     feature_redraw_interval=1000, ff_chunks=1, generalized_attention=False, kernel_fn=nn.ReLU(),
                     ff_glu=False):
            super().__init__()
            layers = nn.ModuleList([])

            for _ in range(depth):
                layers.append(nn.ModuleList([
                    PreLayerNorm(dim, SelfAttention(dim, causal=causal, heads=heads, dim_head=dim_head,
                                                    nb_features=nb_features,
                                                    generalized_attention=generalized_attention,
                                                    kernel_fn=kernel_fn)),
                    PreLayerNorm(dim, Chunk(ff_chunks, FeedForward(dim, mult=ff_mult, glu=ff_glu), along_dim=1))
                ]))

            self.net = layers
            self.proj_updater = ProjectionUpdater(self.net, feature_redraw_interval)

        def fix_projection_matrices_(self):
            self.proj_updater.feature_redraw_interval = None

        def forward(self, x, **kwargs):
            if self.auto_check_redraw:
                self.proj_updater.redraw_projections()
            for f, g in self.net:
                x = x + f(x)
                x = x + g(x)
            return x

        auto_check_redraw = True

    class PerformerLM(nn.Module):
        def __init__(self, *, num_tokens, max_seq_len, dim, depth, heads, dim_head=64, causal=False, ff_mult=4,
                     nb_features=None, feature_redraw_interval=1000, ff_chunks=1, ff_glu=False):
            super().__init__()
            self.max_seq_len = max_seq_len
            self.token_emb = nn.Embedding(num_tokens, dim)
            self.pos_emb = AbsolutePositionalEmbedding(dim, max_seq_len)
            self.dropout = nn.Dropout(0.)
            self.performer = Performer(dim, depth, heads, dim_head, causal, ff_mult, nb_features,
                                       feature_redraw_interval, ff_chunks, ff_glu=ff_glu)
            self.norm = nn.LayerNorm(dim)
            self.to_out = nn.Linear(dim, num_tokens)

        def forward(self, x, return_encodings=False, **kwargs):
            n = x.shape[1]
            assert n <= self.max_seq_len, f'sequence length {n} must be less than the max sequence length {self.max_seq_len}'

            x = self.token_emb(x)
            x += self.pos_emb(x)
            x = self.dropout(x)

            x = self.performer(x, **kwargs)

            x = self.norm(x)
            if return_encodings:
                return x
            return self.to_out(x)

    model = PerformerLM(num_tokens=13, max_seq_len=8, dim=8, depth=1, heads=2, dim_head=4, causal=True, ff_mult=2,
                        ff_chunks=2, ff_glu=True)
    generalized = FastAttention(4, nb_features=6, generalized_attention=True)
    both = nn.ModuleList([model, generalized])
    init = load(m, both, state)
    assert model.performer.net[0][0].fn.fast_attention.projection_matrix.shape == (5, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    tokens = torch.tensor(rng.integers(0, 13, (2, 8)))
    losses = []
    for _ in range(2):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 13), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    q, k, v = (torch.tensor(normal(rng, 2, 2, 5, 4)) for _ in range(3))
    losses += [generalized(q, k, v).sum().item(), model.performer.proj_updater.calls_since_last_redraw.item()]
    return init, losses + summary(both.parameters()) + summary(both.buffers())


def test_performer():
    compare(performer)


# (b) a word-level language model in pytorch/examples' word_language_model style, its decoder an
# nn.AdaptiveLogSoftmaxWithLoss (cutoffs, div_value, head_bias): batchify by narrow and view(bsz, -1).t().contiguous(),
# get_batch's bptt slices, the hidden state repackaged between batches, the returned namedtuple's .output and .loss,
# clip_grad_norm_ and plain SGD by p.data.add_(p.grad, alpha=-lr), perplexity by math.exp, and evaluation by log_prob
# and predict under torch.no_grad()
def adaptive_softmax_lm(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(1111)
    rng = np.random.default_rng(1)

    class RNNModel(nn.Module):
        def __init__(self, ntoken, ninp, nhid, nlayers, cutoffs, dropout=0.5):
            super(RNNModel, self).__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
            self.decoder = nn.AdaptiveLogSoftmaxWithLoss(nhid, ntoken, cutoffs=cutoffs, div_value=2.0, head_bias=True)
            self.init_weights()
            self.nhid = nhid
            self.nlayers = nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)

        def forward(self, input, target, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            out = self.decoder(output.view(-1, output.size(2)), target.view(-1))
            return out.output, out.loss, hidden, output

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        data = data.view(bsz, -1).t().contiguous()
        return data

    def repackage_hidden(h):
        if isinstance(h, torch.Tensor):
            return h.detach()
        else:
            return tuple(repackage_hidden(v) for v in h)

    bptt = 4

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        data = source[i:i + seq_len]
        target = source[i + 1:i + 1 + seq_len].view(-1)
        return data, target

    ntokens = 12
    model = RNNModel(ntokens, 6, 6, 2, cutoffs=[4, 8], dropout=0.0)
    init = load(m, model, state)
    # every batch's targets reach both tail clusters (a cluster without targets leaves its weights' grad None, in torch
    # too, and p.data.add_(None) fails)
    train_data = batchify(torch.tensor((np.arange(19) * 5 + rng.integers(0, 2, 19) * 4) % ntokens), 2)
    lr, clip = 2.0, 0.25
    losses = []
    model.train()
    hidden = model.init_hidden(2)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, loss, hidden, _ = model(data, targets, hidden)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses += [loss.item(), math.exp(loss.item()), output.sum().item()]
    model.eval()
    with torch.no_grad():
        hidden = model.init_hidden(2)
        data, targets = get_batch(train_data, 0)
        _, loss, hidden, features = model(data, targets, hidden)
        features = features.view(-1, 6)
        log_probs = model.decoder.log_prob(features)
        predicted = model.decoder.predict(features)
        losses += [loss.item(), log_probs.exp().sum(dim=1).mean().item(), log_probs.sum().item()]
        losses += predicted.tolist()
    return init, losses + summary(model.parameters())


def test_adaptive_softmax_lm():
    compare(adaptive_softmax_lm)


# (c) an image captioner in the style of the captioning repositories on nn.TransformerDecoder (CATR's caption model
# shrunk): a CNN backbone's feature map flattened to a memory by flatten(2).permute(0, 2, 1) and projected, a
# sinusoidal PositionalEncoding buffer, nn.TransformerDecoder(nn.TransformerDecoderLayer(batch_first=True), num_layers,
# norm=nn.LayerNorm), the causal mask by nn.Transformer.generate_square_subsequent_mask, a tgt_key_padding_mask by
# captions == PAD, CrossEntropyLoss(ignore_index=PAD) over shifted captions, SGD with momentum (Adam would normalise
# the key bias's rounding-only gradient inside in_proj_bias), and greedy decoding by argmax with torch.cat
def captioning(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(42)
    rng = np.random.default_rng(42)
    PAD, BOS, EOS = 0, 1, 2

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=50):
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            position = torch.arange(max_len).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
            pe = torch.zeros(1, max_len, d_model)
            pe[0, :, 0::2] = torch.sin(position * div_term)
            pe[0, :, 1::2] = torch.cos(position * div_term)
            self.register_buffer('pe', pe)

        def forward(self, x):
            x = x + self.pe[:, :x.size(1)]
            return self.dropout(x)

    class CaptionModel(nn.Module):
        def __init__(self, vocab_size, d_model=8, nhead=2, num_layers=1, dim_feedforward=16):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ReLU(inplace=True))
            self.input_proj = nn.Linear(4, d_model)
            self.embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
            self.pos = PositionalEncoding(d_model, dropout=0.0)
            layer = nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout=0.0, batch_first=True)
            self.decoder = nn.TransformerDecoder(layer, num_layers=num_layers, norm=nn.LayerNorm(d_model))
            self.mlp = nn.Linear(d_model, vocab_size)
            self.d_model = d_model

        def encode(self, images):
            features = self.backbone(images)
            memory = features.flatten(2).permute(0, 2, 1)
            return self.input_proj(memory)

        def decode(self, captions, memory, pad_mask=None):
            tgt = self.pos(self.embed(captions) * math.sqrt(self.d_model))
            tgt_mask = nn.Transformer.generate_square_subsequent_mask(captions.size(1))
            hs = self.decoder(tgt, memory, tgt_mask=tgt_mask, tgt_key_padding_mask=pad_mask)
            return self.mlp(hs)

        def forward(self, images, captions, pad_mask):
            return self.decode(captions, self.encode(images), pad_mask)

    vocab_size = 9
    model = CaptionModel(vocab_size)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.tensor(normal(rng, 2, 3, 4, 4))
    captions = torch.tensor([[BOS, 5, 6, 3, EOS, PAD], [BOS, 4, 7, EOS, PAD, PAD]])
    losses = []
    model.train()
    for _ in range(2):
        inputs, targets = captions[:, :-1], captions[:, 1:]
        pad_mask = inputs == PAD
        outputs = model(images, inputs, pad_mask)
        loss = criterion(outputs.reshape(-1, vocab_size), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        memory = model.encode(images)
        caption = torch.full((2, 1), BOS, dtype=torch.long)
        for _ in range(3):
            logits = model.decode(caption, memory)
            next_word = logits[:, -1].argmax(dim=-1, keepdim=True)
            caption = torch.cat([caption, next_word], dim=1)
            losses.append(F.softmax(logits[:, -1], dim=-1).max().item())
    return init, losses + caption.flatten().tolist() + summary(model.parameters())


def test_captioning():
    compare(captioning)


# (d) PyTorch Geometric's examples/qm9_nn_conv.py with its library written inline: NNConv(aggr='mean') (an edge network's
# per-edge weight matrices by x[src].unsqueeze(1) @ weight, the mean by index_add_ over a bincount clamped to one, the
# root weight), a GRU over one step with out.squeeze(0), Set2Set (an LSTM over q_star, the segment softmax by
# scatter_reduce(reduce='amax', include_self=False) and index_add_, readout by index_add_), the targets standardised
# by their mean and std, F.mse_loss, ReduceLROnPlateau(factor=0.7, patience=5, min_lr=0.00001), and the test error
# by (model(data) * std - y * std).abs().sum().item()
def mpnn_qm9(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(12345)
    rng = np.random.default_rng(3)
    from collections import namedtuple

    Data = namedtuple('Data', 'x edge_index edge_attr batch y num_graphs')

    def scatter_add(src, index, dim_size):
        return src.new_zeros((dim_size,) + tuple(src.shape[1:])).index_add_(0, index, src)

    def scatter_mean(src, index, dim_size):
        out = scatter_add(src, index, dim_size)
        count = torch.bincount(index, minlength=dim_size).clamp(min=1).to(src.dtype)
        return out / count.view(-1, *([1] * (src.dim() - 1)))

    def softmax(src, index, num_nodes):
        src_max = src.new_zeros((num_nodes,) + tuple(src.shape[1:])).scatter_reduce(
            0, index.view(-1, 1).expand_as(src), src, reduce='amax', include_self=False)
        out = (src - src_max.index_select(0, index)).exp()
        out_sum = scatter_add(out, index, num_nodes).index_select(0, index)
        return out / (out_sum + 1e-16)

    class NNConv(nn.Module):
        def __init__(self, in_channels, out_channels, nn, aggr='add', root_weight=True, bias=True):
            super().__init__()
            self.in_channels, self.out_channels = in_channels, out_channels
            self.nn = nn
            self.aggr = aggr
            if root_weight:
                self.lin = torch.nn.Linear(in_channels, out_channels, bias=False)
            else:
                self.register_parameter('lin', None)
            if bias:
                self.bias = torch.nn.Parameter(torch.zeros(out_channels))
            else:
                self.register_parameter('bias', None)

        def forward(self, x, edge_index, edge_attr):
            src, dst = edge_index[0], edge_index[1]
            weight = self.nn(edge_attr)
            weight = weight.view(-1, self.in_channels, self.out_channels)
            msg = torch.matmul(x[src].unsqueeze(1), weight).squeeze(1)
            if self.aggr == 'mean':
                out = scatter_mean(msg, dst, x.size(0))
            else:
                out = scatter_add(msg, dst, x.size(0))
            if self.lin is not None:
                out = out + self.lin(x)
            if self.bias is not None:
                out = out + self.bias
            return out

    class Set2Set(torch.nn.Module):
        def __init__(self, in_channels, processing_steps):
            super().__init__()
            self.in_channels = in_channels
            self.out_channels = 2 * in_channels
            self.processing_steps = processing_steps
            self.lstm = torch.nn.LSTM(self.out_channels, in_channels, num_layers=1)

        def forward(self, x, batch):
            batch_size = int(batch.max()) + 1

            h = (x.new_zeros((1, batch_size, self.in_channels)),
                 x.new_zeros((1, batch_size, self.in_channels)))
            q_star = x.new_zeros(batch_size, self.out_channels)

            for _ in range(self.processing_steps):
                q, h = self.lstm(q_star.unsqueeze(0), h)
                q = q.view(batch_size, self.in_channels)
                e = (x * q[batch]).sum(dim=-1, keepdim=True)
                a = softmax(e, batch, num_nodes=batch_size)
                r = scatter_add(a * x, batch, batch_size)
                q_star = torch.cat([q, r], dim=-1)

            return q_star

    dim = 4

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin0 = torch.nn.Linear(5, dim)

            nn_ = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, dim * dim))
            self.conv = NNConv(dim, dim, nn_, aggr='mean')
            self.gru = torch.nn.GRU(dim, dim)

            self.set2set = Set2Set(dim, processing_steps=2)
            self.lin1 = torch.nn.Linear(2 * dim, dim)
            self.lin2 = torch.nn.Linear(dim, 1)

        def forward(self, data):
            out = F.relu(self.lin0(data.x))
            h = out.unsqueeze(0)

            for i in range(2):
                m_ = F.relu(self.conv(out, data.edge_index, data.edge_attr))
                out, h = self.gru(m_.unsqueeze(0), h)
                out = out.squeeze(0)

            out = self.set2set(out, data.batch)
            out = F.relu(self.lin1(out))
            out = self.lin2(out)
            return out.view(-1)

    # two molecules of 3 and 4 atoms, bonds both ways
    bonds = [(0, 1), (1, 2), (3, 4), (4, 5), (5, 6), (6, 3)]
    edge_index = torch.tensor([[a for a, b in bonds] + [b for a, b in bonds], [b for a, b in bonds] + [a for a, b in bonds]])
    y_all = torch.tensor(normal(rng, 2) * 3 + 1)
    mean, std = y_all.mean(dim=0).item(), y_all.std(dim=0).item()
    data = Data(x=torch.tensor(normal(rng, 7, 5)), edge_index=edge_index,
                edge_attr=torch.tensor(normal(rng, 12, 3)), batch=torch.tensor([0, 0, 0, 1, 1, 1, 1]),
                y=(y_all - mean) / std, num_graphs=2)
    model = Net()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.7, patience=5,
                                                           min_lr=0.00001)
    losses = []
    for epoch in range(2):
        lr = scheduler.optimizer.param_groups[0]['lr']
        model.train()
        loss_all = 0
        optimizer.zero_grad()
        loss = F.mse_loss(model(data), data.y)
        loss.backward()
        loss_all += loss.item() * data.num_graphs
        optimizer.step()
        train_loss = loss_all / 2
        model.eval()
        error = 0
        error += (model(data) * std - data.y * std).abs().sum().item()  # MAE
        scheduler.step(error)
        losses += [train_loss, error, lr]
    return init, losses + summary(model.parameters())


def test_mpnn_qm9():
    compare(mpnn_qm9)


# (e) pytorch/tutorials' intermediate/parametrizations.py: Symmetric (X.triu() + X.triu(1).transpose(-1, -2)) with a
# right_inverse, Skew, MatrixExponential by torch.matrix_exp stacked over Skew into an orthogonal weight, a CayleyMap by
# torch.linalg.solve over an identity buffer, parametrize.register_parametrization, is_parametrized, the
# parametrizations ModuleDict and .original, assigning a weight through right_inverse, parametrize.cached(), and
# remove_parametrizations(leave_parametrized=False), then a model of parametrized layers trained by SGD
def parametrizations(m, state=None):
    torch, nn = m.torch, m.nn
    import importlib
    P = importlib.import_module(m.torch.__name__ + ".nn.utils.parametrize")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    class Skew(nn.Module):
        def forward(self, X):
            A = X.triu(1)
            return A - A.transpose(-1, -2)

    class MatrixExponential(nn.Module):
        def forward(self, X):
            return torch.matrix_exp(X)

    class CayleyMap(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.register_buffer("Id", torch.eye(n))

        def forward(self, X):
            # (I + X)(I - X)^{-1}
            return torch.linalg.solve(self.Id - X, self.Id + X)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.sym = nn.Linear(3, 3)
            self.ortho = nn.Linear(3, 3)
            self.cayley = nn.Linear(3, 3)
            self.conv = nn.Conv2d(2, 2, 3)
            P.register_parametrization(self.sym, "weight", Symmetric())
            P.register_parametrization(self.ortho, "weight", Skew())
            P.register_parametrization(self.ortho, "weight", MatrixExponential())
            P.register_parametrization(self.cayley, "weight", Skew())
            P.register_parametrization(self.cayley, "weight", CayleyMap(3))
            P.register_parametrization(self.conv, "weight", Skew())  # batched over the kernel's leading dims

        def forward(self, x, img):
            y = self.cayley(torch.tanh(self.ortho(torch.tanh(self.sym(x)))))
            return y.sum(dim=1) + self.conv(img).flatten(1).mean(dim=1)

    model = Model()
    init = load(m, model, state)
    assert P.is_parametrized(model.sym) and P.is_parametrized(model.sym, "weight")
    assert not P.is_parametrized(model.sym, "bias")
    A = model.sym.weight
    out = [float((A - A.T).abs().max())]
    X = model.ortho.weight
    out.append(torch.dist(X.T @ X, torch.eye(3)).item())
    out.append(torch.dist(model.cayley.weight.T @ model.cayley.weight, torch.eye(3)).item())
    out.append(model.sym.parametrizations.weight.original.sum().item())
    assert isinstance(model.ortho.parametrizations.weight[1], MatrixExponential)
    assert type(model.sym).__name__ == "ParametrizedLinear"
    x, img, y = torch.tensor(normal(rng, 4, 3)), torch.tensor(normal(rng, 4, 2, 4, 4)), torch.tensor(normal(rng, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(2):
        with P.cached():
            loss = ((model(x, img) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    # initialising a parametrized weight goes through right_inverse
    with torch.no_grad():
        S = torch.tensor(normal(rng, 3, 3))
        model.sym.weight = S + S.T
    out.append(model.sym.parametrizations.weight.original.sum().item())
    out.append(model.sym.weight.sum().item())
    P.remove_parametrizations(model.ortho, "weight", leave_parametrized=False)
    P.remove_parametrizations(model.sym, "weight")
    assert not P.is_parametrized(model.sym) and type(model.sym).__name__ == "Linear"
    out.append(float(model.ortho.weight.sum()))
    return init, losses + out + summary(model.parameters())


def test_parametrizations():
    compare(parametrizations)


# (f) d2l.ai 1.0's chapter 8.6 ResNet of lazy modules: Residual of nn.LazyConv2d and nn.LazyBatchNorm2d (`if
# self.conv3:` on a module), b1 and block as methods, modules added by add_module, the head's nn.LazyLinear,
# d2l.init_cnn by type(module) == nn.Conv2d (true only after the first forward has materialised each lazy module),
# apply_init's dummy forward, layer_summary's shapes, Classifier's loss by F.cross_entropy over reshaped logits and
# accuracy by argmax(axis=1).type(Y.dtype), SGD from configure_optimizers
def d2l_lazy_resnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def init_cnn(module):
        """Initialize weights for CNNs."""
        if type(module) == nn.Linear or type(module) == nn.Conv2d:
            nn.init.xavier_uniform_(module.weight)

    class Residual(nn.Module):
        """The Residual block of ResNet models."""
        def __init__(self, num_channels, use_1x1conv=False, strides=1):
            super().__init__()
            self.conv1 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1, stride=strides)
            self.conv2 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1)
            if use_1x1conv:
                self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1, stride=strides)
            else:
                self.conv3 = None
            self.bn1 = nn.LazyBatchNorm2d()
            self.bn2 = nn.LazyBatchNorm2d()

        def forward(self, X):
            Y = F.relu(self.bn1(self.conv1(X)))
            Y = self.bn2(self.conv2(Y))
            if self.conv3:
                X = self.conv3(X)
            Y += X
            return F.relu(Y)

    class Classifier(nn.Module):
        def loss(self, Y_hat, Y, averaged=True):
            Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
            Y = Y.reshape((-1,))
            return F.cross_entropy(Y_hat, Y, reduction='mean' if averaged else 'none')

        def accuracy(self, Y_hat, Y, averaged=True):
            Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
            preds = Y_hat.argmax(axis=1).type(Y.dtype)
            compare = (preds == Y.reshape(-1)).type(torch.float32)
            return compare.mean() if averaged else compare

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), self.lr)

        def forward(self, X):
            return self.net(X)

        def apply_init(self, inputs, init=None):
            self.forward(*inputs)
            if init is not None:
                self.net.apply(init)

        def layer_summary(self, X_shape):
            X = torch.randn(*X_shape)
            shapes = []
            for layer in self.net:
                X = layer(X)
                shapes.append((layer.__class__.__name__, tuple(X.shape)))
            return shapes

    class ResNet(Classifier):
        def b1(self):
            return nn.Sequential(
                nn.LazyConv2d(4, kernel_size=7, stride=2, padding=3),
                nn.LazyBatchNorm2d(), nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2, padding=1))

        def block(self, num_residuals, num_channels, first_block=False):
            blk = []
            for i in range(num_residuals):
                if i == 0 and not first_block:
                    blk.append(Residual(num_channels, use_1x1conv=True, strides=2))
                else:
                    blk.append(Residual(num_channels))
            return nn.Sequential(*blk)

        def __init__(self, arch, lr=0.1, num_classes=10):
            super(ResNet, self).__init__()
            self.lr = lr
            self.net = nn.Sequential(self.b1())
            for i, b in enumerate(arch):
                self.net.add_module(f'b{i+2}', self.block(*b, first_block=(i == 0)))
            self.net.add_module('last', nn.Sequential(
                nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
                nn.LazyLinear(num_classes)))
            self.net.apply(init_cnn)

    model = ResNet(arch=((1, 4), (1, 6)), lr=0.05, num_classes=5)
    X = torch.tensor(normal(rng, 4, 1, 12, 12))
    Y = torch.tensor(rng.integers(0, 5, 4))
    model.apply_init([X], init_cnn)
    assert type(model.net[0][0]) == nn.Conv2d and type(model.net.last[2]) == nn.Linear
    shapes = model.layer_summary((1, 1, 12, 12))
    assert shapes == [('Sequential', (1, 4, 3, 3)), ('Sequential', (1, 4, 3, 3)), ('Sequential', (1, 6, 2, 2)),
                      ('Sequential', (1, 5))], shapes
    init = load(m, model, state)
    optimizer = model.configure_optimizers()
    losses = []
    model.train()
    for _ in range(2):
        Y_hat = model(X)
        loss = model.loss(Y_hat, Y)
        optimizer.zero_grad()
        with torch.no_grad():
            loss.backward()
        optimizer.step()
        losses += [loss.item(), model.accuracy(Y_hat, Y).item()]
    model.eval()
    with torch.no_grad():
        losses.append(model.loss(model(X), Y).item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_d2l_lazy_resnet():
    compare(d2l_lazy_resnet)


# (g) AMLab-Amsterdam's AttentionDeepMIL (model.py's GatedAttention, main.py's train and test): a LeNet feature
# extractor over a bag of instances after x.squeeze(0), gated attention (Tanh and Sigmoid branches multiplied, then
# torch.transpose(A, 1, 0) and softmax over the instances), Z = torch.mm(A, H), Y_hat by torch.ge(Y_prob, 0.5).float(),
# the objective's Y_prob clamped to [1e-5, 1 - 1e-5] and the Bernoulli negative log-likelihood by hand, the error by
# Y_hat.eq(Y).cpu().float().mean().data.item(), a DataLoader of bags at batch_size=1 whose label is label[0], Variable
# wrapping, train_loss += loss.data[0], and Adam with weight_decay=10e-5
def attention_mil(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Variable = m.torch.autograd.Variable  # the source's `from torch.autograd import Variable`
    torch.manual_seed(1)
    rng = np.random.default_rng(1)

    class GatedAttention(nn.Module):
        def __init__(self):
            super(GatedAttention, self).__init__()
            self.M = 8
            self.L = 4
            self.ATTENTION_BRANCHES = 1

            self.feature_extractor_part1 = nn.Sequential(
                nn.Conv2d(1, 4, kernel_size=3),
                nn.ReLU(),
                nn.MaxPool2d(2, stride=2),
                nn.Conv2d(4, 6, kernel_size=3),
                nn.ReLU(),
                nn.MaxPool2d(2, stride=2)
            )

            self.feature_extractor_part2 = nn.Sequential(
                nn.Linear(6 * 1 * 1, self.M),
                nn.ReLU(),
            )

            self.attention_V = nn.Sequential(
                nn.Linear(self.M, self.L),  # matrix V
                nn.Tanh()
            )

            self.attention_U = nn.Sequential(
                nn.Linear(self.M, self.L),  # matrix U
                nn.Sigmoid()
            )

            self.attention_w = nn.Linear(self.L, self.ATTENTION_BRANCHES)  # matrix w (or vector w if self.ATTENTION_BRANCHES==1)

            self.classifier = nn.Sequential(
                nn.Linear(self.M * self.ATTENTION_BRANCHES, 1),
                nn.Sigmoid()
            )

        def forward(self, x):
            x = x.squeeze(0)

            H = self.feature_extractor_part1(x)
            H = H.view(-1, 6 * 1 * 1)
            H = self.feature_extractor_part2(H)  # KxM

            A_V = self.attention_V(H)  # KxL
            A_U = self.attention_U(H)  # KxL
            A = self.attention_w(A_V * A_U)  # element wise multiplication # KxATTENTION_BRANCHES
            A = torch.transpose(A, 1, 0)  # ATTENTION_BRANCHESxK
            A = F.softmax(A, dim=1)  # softmax over K

            Z = torch.mm(A, H)  # ATTENTION_BRANCHESxM

            Y_prob = self.classifier(Z)
            Y_hat = torch.ge(Y_prob, 0.5).float()

            return Y_prob, Y_hat, A

        # AUXILIARY METHODS
        def calculate_classification_error(self, X, Y):
            Y = Y.float()
            _, Y_hat, _ = self.forward(X)
            error = 1. - Y_hat.eq(Y).cpu().float().mean().data.item()

            return error, Y_hat

        def calculate_objective(self, X, Y):
            Y = Y.float()
            Y_prob, _, A = self.forward(X)
            Y_prob = torch.clamp(Y_prob, min=1e-5, max=1. - 1e-5)
            neg_log_likelihood = -1. * (Y * torch.log(Y_prob) + (1. - Y) * torch.log(1. - Y_prob))  # negative log bernoulli

            return neg_log_likelihood, A

    class MnistBags(torch.utils.data.Dataset):
        def __init__(self, bags, labels):
            self.bags, self.labels = bags, labels

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, index):
            bag = torch.tensor(self.bags[index])
            instance_labels = torch.tensor(self.labels[index])
            label = [max(self.labels[index]), instance_labels]
            return bag, label

    bags = [normal(rng, k, 1, 10, 10) for k in (3, 5)]
    labels = [np.array([0, 1, 0]), np.array([0, 0, 0, 0, 0])]
    train_loader = torch.utils.data.DataLoader(MnistBags(bags, labels), batch_size=1, shuffle=False)
    model = GatedAttention()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0005, betas=(0.9, 0.999), weight_decay=10e-5)
    losses = []
    model.train()
    train_loss = 0.
    train_error = 0.
    for batch_idx, (data, label) in enumerate(train_loader):
        bag_label = label[0]
        data, bag_label = Variable(data), Variable(bag_label)

        # reset gradients
        optimizer.zero_grad()
        # calculate loss and metrics
        loss, _ = model.calculate_objective(data, bag_label)
        train_loss += loss.data[0]
        error, _ = model.calculate_classification_error(data, bag_label)
        train_error += error
        # backward pass
        loss.backward()
        # step
        optimizer.step()
        losses.append(loss.item())

    train_loss /= len(train_loader)
    train_error /= len(train_loader)
    losses += [float(train_loss.cpu().numpy()[0]), train_error]

    model.eval()
    with torch.no_grad():
        for batch_idx, (data, label) in enumerate(train_loader):
            bag_label = label[0]
            instance_labels = label[1]
            loss, attention_weights = model.calculate_objective(data, bag_label)
            error, predicted_label = model.calculate_classification_error(data, bag_label)
            losses += [loss.item(), error] + np.round(attention_weights.cpu().data.numpy()[0], decimals=3).tolist()
            assert instance_labels.shape == (1, len(labels[batch_idx]))
    return init, losses + summary(model.parameters())


def test_attention_mil():
    compare(attention_mil)


# (h) DeepAR as zhykoties/TimeSeries writes it (model/net.py and train.py): a series-id nn.Embedding concatenated to
# the lagged value and covariates, an LSTM whose forget-gate biases are set to 1 through self.lstm._all_weights and
# getattr, the last layers' hidden states by hidden.permute(1, 2, 0).contiguous().view(...), mu by a Linear and sigma
# by nn.Softplus, the loss by torch.distributions.normal.Normal(mu[zero_index], sigma[zero_index]).log_prob over
# non-zero labels, missing lagged inputs replaced in place by the model's own mu (train_batch[t, zero_index, 0] =
# mu[zero_index], which puts train_batch in the graph), loss accumulated in torch.zeros(1), the test's ancestral
# sampling by gaussian.sample() (torch replays tnet's draws), samples rescaled by v_batch, and torch.median of the
# samples
def deepar(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(230)
    rng = np.random.default_rng(230)
    from types import SimpleNamespace

    params = SimpleNamespace(num_class=3, embedding_dim=2, cov_dim=2, lstm_hidden_dim=4, lstm_layers=2,
                             lstm_dropout=0.0, train_window=4, test_predict_start=2, predict_steps=2,
                             predict_start=2, sample_times=2, device=torch.device('cpu'))

    class Net(nn.Module):
        def __init__(self, params):
            super(Net, self).__init__()
            self.params = params
            self.embedding = nn.Embedding(params.num_class, params.embedding_dim)

            self.lstm = nn.LSTM(input_size=1 + params.cov_dim + params.embedding_dim,
                                hidden_size=params.lstm_hidden_dim,
                                num_layers=params.lstm_layers,
                                bias=True,
                                batch_first=False,
                                dropout=params.lstm_dropout)
            # initialize LSTM forget gate bias to be 1 as recommanded by http://proceedings.mlr.press/v37/jozefowicz15.pdf
            for names in self.lstm._all_weights:
                for name in filter(lambda n: "bias" in n, names):
                    bias = getattr(self.lstm, name)
                    n = bias.size(0)
                    start, end = n // 4, n // 2
                    bias.data[start:end].fill_(1.)

            self.relu = nn.ReLU()
            self.distribution_mu = nn.Linear(params.lstm_hidden_dim * params.lstm_layers, 1)
            self.distribution_presigma = nn.Linear(params.lstm_hidden_dim * params.lstm_layers, 1)
            self.distribution_sigma = nn.Softplus()

        def forward(self, x, idx, hidden, cell):
            onehot_embed = self.embedding(idx)
            lstm_input = torch.cat((x, onehot_embed), dim=2)
            output, (hidden, cell) = self.lstm(lstm_input, (hidden, cell))
            # use h from all three layers to calculate mu and sigma
            hidden_permute = hidden.permute(1, 2, 0).contiguous().view(hidden.shape[1], -1)
            pre_sigma = self.distribution_presigma(hidden_permute)
            mu = self.distribution_mu(hidden_permute)
            sigma = self.distribution_sigma(pre_sigma)  # softplus to make sure standard deviation is positive
            return torch.squeeze(mu), torch.squeeze(sigma), hidden, cell

        def init_hidden(self, input_size):
            return torch.zeros(self.params.lstm_layers, input_size, self.params.lstm_hidden_dim, device=self.params.device)

        def init_cell(self, input_size):
            return torch.zeros(self.params.lstm_layers, input_size, self.params.lstm_hidden_dim, device=self.params.device)

        def test(self, x, v_batch, id_batch, hidden, cell, sampling=False):
            batch_size = x.shape[1]
            if sampling:
                samples = torch.zeros(self.params.sample_times, batch_size, self.params.predict_steps,
                                      device=self.params.device)
                for j in range(self.params.sample_times):
                    decoder_hidden = hidden
                    decoder_cell = cell
                    for t in range(self.params.predict_steps):
                        mu_de, sigma_de, decoder_hidden, decoder_cell = self(x[self.params.predict_start + t].unsqueeze(0),
                                                                             id_batch, decoder_hidden, decoder_cell)
                        gaussian = torch.distributions.normal.Normal(mu_de, sigma_de)
                        pred = gaussian.sample()  # not scaled
                        pred = torch.tensor(replay.setdefault(("pred", j, t), pred.tolist()))  # torch replays tnet's
                        samples[j, :, t] = pred * v_batch[:, 0] + v_batch[:, 1]
                        if t < (self.params.predict_steps - 1):
                            x[self.params.predict_start + t + 1, :, 0] = pred

                sample_mu = torch.median(samples, dim=0)[0]
                sample_sigma = samples.std(dim=0)
                return samples, sample_mu, sample_sigma

    def loss_fn(mu, sigma, labels):
        zero_index = (labels != 0)
        distribution = torch.distributions.normal.Normal(mu[zero_index], sigma[zero_index])
        likelihood = distribution.log_prob(labels[zero_index])
        return -torch.mean(likelihood)

    model = Net(params)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    batch_size = 3
    series = np.abs(normal(rng, batch_size, params.train_window + 1)) + 0.5
    series[0, 2] = 0.0  # a missing value: its lagged input is filled by the model's mu, its label skipped
    train_batch = np.concatenate([series[:, :-1, None], normal(rng, batch_size, params.train_window, params.cov_dim)], 2)
    labels_batch = series[:, 1:]
    idx = rng.integers(0, params.num_class, batch_size)
    losses = []
    model.train()
    for _ in range(2):
        optimizer.zero_grad()
        train_batch_t = torch.tensor(train_batch).permute(1, 0, 2).to(torch.float32).to(params.device)  # not scaled
        labels_batch_t = torch.tensor(labels_batch).permute(1, 0).to(torch.float32).to(params.device)  # not scaled
        idx_t = torch.tensor(idx).unsqueeze(0).to(params.device)

        loss = torch.zeros(1, device=params.device)
        mu = None  # read from t = 1 on
        hidden = model.init_hidden(batch_size)
        cell = model.init_cell(batch_size)

        for t in range(params.train_window):
            # if z_t is missing, replace it by output mu from the last time step
            zero_index = (train_batch_t[t, :, 0] == 0)
            if t > 0 and torch.sum(zero_index) > 0:
                train_batch_t[t, zero_index, 0] = mu[zero_index]
            mu, sigma, hidden, cell = model(train_batch_t[t].unsqueeze_(0).clone(), idx_t, hidden, cell)
            loss += loss_fn(mu, sigma, labels_batch_t[t])

        loss.backward()
        optimizer.step()
        losses.append(loss.item() / params.train_window)  # loss per timestep
    model.eval()
    with torch.no_grad():
        test_batch = torch.tensor(train_batch).permute(1, 0, 2).to(torch.float32)
        test_batch[1:, :, 0] = torch.where(test_batch[1:, :, 0] == 0, torch.ones_like(test_batch[1:, :, 0]),
                                           test_batch[1:, :, 0])
        v_batch = torch.tensor([[2.0, 0.5]]).expand(batch_size, 2)
        hidden = model.init_hidden(batch_size)
        cell = model.init_cell(batch_size)
        for t in range(params.test_predict_start):
            mu, sigma, hidden, cell = model(test_batch[t].unsqueeze(0), idx_t, hidden, cell)
        samples, sample_mu, sample_sigma = model.test(test_batch, v_batch, idx_t, hidden, cell, sampling=True)
    losses += samples.flatten().tolist() + sample_mu.flatten().tolist() + sample_sigma.flatten().tolist()
    return init, losses + summary(model.parameters())


def test_deepar():
    compare(deepar, replay={})


# (i) ultralytics/yolov5's utils/torch_utils.py, models/common.py and train.py's loop: autopad, Conv (Conv2d without
# bias, BatchNorm2d, default_act = nn.SiLU(), forward_fuse), Bottleneck, C3 and SPPF (one MaxPool2d applied thrice
# under warnings.catch_warnings), initialize_weights (BatchNorm eps=1e-3 and momentum=0.03, activations inplace),
# the detection bias init by b.data[:, 4] += math.log(...), smart_optimizer's three groups (norm classes by
# `'Norm' in k` over nn.__dict__, biases first in nesterov SGD, add_param_group), one_cycle by LambdaLR, the warmup by
# np.interp of every group's lr and momentum from its initial_lr (numpy floats as hyperparameters), accumulate,
# a disabled GradScaler and autocast, clip_grad_norm_(max_norm=10.0), ModelEMA (a deepcopy, the decay ramp,
# state_dict values updated in place where v.dtype.is_floating_point, de_parallel), BCEWithLogitsLoss(pos_weight=),
# and Model.fuse() by fuse_conv_and_bn (torch.diag, torch.mm, copy_ into a requires_grad_(False) Conv2d, delattr,
# m.forward = m.forward_fuse)
def yolov5_utils(m, state=None):
    torch, nn = m.torch, m.nn
    import warnings
    from copy import deepcopy
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def autopad(k, p=None, d=1):  # kernel, padding, dilation
        # Pad to 'same' shape outputs
        if d > 1:
            k = d * (k - 1) + 1 if isinstance(k, int) else [d * (x - 1) + 1 for x in k]  # actual kernel-size
        if p is None:
            p = k // 2 if isinstance(k, int) else [x // 2 for x in k]  # auto-pad
        return p

    class Conv(nn.Module):
        # Standard convolution with args(ch_in, ch_out, kernel, stride, padding, groups, dilation, activation)
        default_act = nn.SiLU()  # default activation

        def __init__(self, c1, c2, k=1, s=1, p=None, g=1, d=1, act=True):
            super().__init__()
            self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p, d), groups=g, dilation=d, bias=False)
            self.bn = nn.BatchNorm2d(c2)
            self.act = self.default_act if act is True else act if isinstance(act, nn.Module) else nn.Identity()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

        def forward_fuse(self, x):
            return self.act(self.conv(x))

    class Bottleneck(nn.Module):
        # Standard bottleneck
        def __init__(self, c1, c2, shortcut=True, g=1, e=0.5):  # ch_in, ch_out, shortcut, groups, expansion
            super().__init__()
            c_ = int(c2 * e)  # hidden channels
            self.cv1 = Conv(c1, c_, 1, 1)
            self.cv2 = Conv(c_, c2, 3, 1, g=g)
            self.add = shortcut and c1 == c2

        def forward(self, x):
            return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))

    class C3(nn.Module):
        # CSP Bottleneck with 3 convolutions
        def __init__(self, c1, c2, n=1, shortcut=True, g=1, e=0.5):  # ch_in, ch_out, number, shortcut, groups, expansion
            super().__init__()
            c_ = int(c2 * e)  # hidden channels
            self.cv1 = Conv(c1, c_, 1, 1)
            self.cv2 = Conv(c1, c_, 1, 1)
            self.cv3 = Conv(2 * c_, c2, 1)  # optional act=FReLU(c2)
            self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut, g, e=1.0) for _ in range(n)))

        def forward(self, x):
            return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))

    class SPPF(nn.Module):
        # Spatial Pyramid Pooling - Fast (SPPF) layer for YOLOv5 by Glenn Jocher
        def __init__(self, c1, c2, k=5):  # equivalent to SPP(k=(5, 9, 13))
            super().__init__()
            c_ = c1 // 2  # hidden channels
            self.cv1 = Conv(c1, c_, 1, 1)
            self.cv2 = Conv(c_ * 4, c2, 1, 1)
            self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

        def forward(self, x):
            x = self.cv1(x)
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')  # suppress torch 1.9.0 max_pool2d() warning
                y1 = self.m(x)
                y2 = self.m(y1)
                return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))

    def fuse_conv_and_bn(conv, bn):
        # Fuse Conv2d() and BatchNorm2d() layers https://tehnokv.com/posts/fusing-batchnorm-and-conv/
        fusedconv = nn.Conv2d(conv.in_channels,
                              conv.out_channels,
                              kernel_size=conv.kernel_size,
                              stride=conv.stride,
                              padding=conv.padding,
                              dilation=conv.dilation,
                              groups=conv.groups,
                              bias=True).requires_grad_(False).to(conv.weight.device)

        # Prepare filters
        w_conv = conv.weight.clone().view(conv.out_channels, -1)
        w_bn = torch.diag(bn.weight.div(torch.sqrt(bn.eps + bn.running_var)))
        fusedconv.weight.copy_(torch.mm(w_bn, w_conv).view(fusedconv.weight.shape))

        # Prepare spatial bias
        b_conv = torch.zeros(conv.weight.size(0), device=conv.weight.device) if conv.bias is None else conv.bias
        b_bn = bn.bias - bn.weight.mul(bn.running_mean).div(torch.sqrt(bn.running_var + bn.eps))
        fusedconv.bias.copy_(torch.mm(w_bn, b_conv.reshape(-1, 1)).reshape(-1) + b_bn)

        return fusedconv

    class Model(nn.Module):
        def __init__(self, na=3, no=6):
            super().__init__()
            self.model = nn.Sequential(C3(3, 4, 1), SPPF(4, 4, 3))  # k=3: the interpreter's pools are slow
            self.detect = nn.Conv2d(4, na * no, 1)
            self.na, self.no, self.stride = na, no, 1
            self._initialize_biases()

        def _initialize_biases(self, cf=None):
            mi, s = self.detect, self.stride
            b = mi.bias.view(self.na, -1)  # conv.bias(255) to (3,85)
            b.data[:, 4] += math.log(8 / (640 / s) ** 2)  # obj (8 objects per 640 image)
            b.data[:, 5:5 + 1] += math.log(0.6 / (1 - 0.99999))  # cls
            mi.bias = torch.nn.Parameter(b.view(-1), requires_grad=True)

        def forward(self, x):
            p = self.detect(self.model(x))
            bs, _, ny, nx = p.shape
            return p.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()

        def fuse(self):  # fuse model Conv2d() + BatchNorm2d() layers
            for m_ in self.model.modules():
                if isinstance(m_, Conv) and hasattr(m_, 'bn'):
                    m_.conv = fuse_conv_and_bn(m_.conv, m_.bn)  # update conv
                    delattr(m_, 'bn')  # remove batchnorm
                    m_.forward = m_.forward_fuse  # update forward
            return self

    def initialize_weights(model):
        for m_ in model.modules():
            t = type(m_)
            if t is nn.Conv2d:
                pass  # nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
            elif t is nn.BatchNorm2d:
                m_.eps = 1e-3
                m_.momentum = 0.03
            elif t in [nn.Hardswish, nn.LeakyReLU, nn.ReLU, nn.ReLU6, nn.SiLU]:
                m_.inplace = True

    def smart_optimizer(model, name='Adam', lr=0.001, momentum=0.9, decay=1e-5):
        # YOLOv5 3-param group optimizer: 0) weights with decay, 1) weights no decay, 2) biases no decay
        g = [], [], []  # optimizer parameter groups
        bn = tuple(v for k, v in nn.__dict__.items() if 'Norm' in k)  # normalization layers, i.e. BatchNorm2d()
        for v in model.modules():
            for p_name, p in v.named_parameters(recurse=0):
                if p_name == 'bias':  # bias (no decay)
                    g[2].append(p)
                elif p_name == 'weight' and isinstance(v, bn):  # weight (no decay)
                    g[1].append(p)
                else:
                    g[0].append(p)  # weight (with decay)

        if name == 'Adam':
            optimizer = torch.optim.Adam(g[2], lr=lr, betas=(momentum, 0.999))  # adjust beta1 to momentum
        elif name == 'SGD':
            optimizer = torch.optim.SGD(g[2], lr=lr, momentum=momentum, nesterov=True)
        else:
            raise NotImplementedError(f'Optimizer {name} not implemented.')

        optimizer.add_param_group({'params': g[0], 'weight_decay': decay})  # add g0 with weight_decay
        optimizer.add_param_group({'params': g[1], 'weight_decay': 0.0})  # add g1 (BatchNorm2d weights)
        return optimizer

    def is_parallel(model):
        # Returns True if model is of type DP or DDP
        return type(model) in (nn.parallel.DataParallel, nn.parallel.DistributedDataParallel)

    def de_parallel(model):
        # De-parallelize a model: returns single-GPU model if model is of type DP or DDP
        return model.module if is_parallel(model) else model

    class ModelEMA:
        """ Updated Exponential Moving Average (EMA) from https://github.com/rwightman/pytorch-image-models
        Keeps a moving average of everything in the model state_dict (parameters and buffers)
        """

        def __init__(self, model, decay=0.9999, tau=2000, updates=0):
            # Create EMA
            self.ema = deepcopy(de_parallel(model)).eval()  # FP32 EMA
            self.updates = updates  # number of EMA updates
            self.decay = lambda x: decay * (1 - math.exp(-x / tau))  # decay exponential ramp (to help early epochs)
            for p in self.ema.parameters():
                p.requires_grad_(False)

        def update(self, model):
            # Update EMA parameters
            self.updates += 1
            d = self.decay(self.updates)

            msd = de_parallel(model).state_dict()  # model state_dict
            for k, v in self.ema.state_dict().items():
                if v.dtype.is_floating_point:  # true for FP16 and FP32
                    v *= d
                    v += (1 - d) * msd[k].detach()

    def one_cycle(y1=0.0, y2=1.0, steps=100):
        # lambda function for sinusoidal ramp from y1 to y2 https://arxiv.org/pdf/1812.01187.pdf
        return lambda x: ((1 - math.cos(x * math.pi / steps)) / 2) * (y2 - y1) + y1

    hyp = {'lr0': 0.01, 'lrf': 0.01, 'momentum': 0.937, 'weight_decay': 0.0005, 'warmup_epochs': 3.0,
           'warmup_momentum': 0.8, 'warmup_bias_lr': 0.1, 'obj_pw': 1.0}
    model = Model()
    initialize_weights(model)
    init = load(m, model, state)
    amp = False
    nbs, batch_size, epochs, nb = 4, 2, 3, 2  # nominal batch size, batch size, epochs, batches per epoch
    accumulate = max(round(nbs / batch_size), 1)
    hyp['weight_decay'] *= batch_size * accumulate / nbs  # scale weight_decay
    optimizer = smart_optimizer(model, 'SGD', hyp['lr0'], hyp['momentum'], hyp['weight_decay'])
    assert [len(g['params']) for g in optimizer.param_groups] == [8, 8, 7]
    lf = one_cycle(1, hyp['lrf'], epochs)  # cosine 1->hyp['lrf']
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lf)
    ema = ModelEMA(model)
    scaler = torch.cuda.amp.GradScaler(enabled=amp)
    BCEobj = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([hyp['obj_pw']], device='cpu'))
    imgs = torch.tensor(normal(rng, 2, batch_size, 3, 8, 8))
    tobj = torch.tensor((rng.random((2, batch_size, 3, 8, 8)) < 0.2).astype(np.float32))
    nw = 3  # warmup iterations
    last_opt_step = -1
    losses = []
    optimizer.zero_grad()
    for epoch in range(2):
        model.train()
        scheduler.last_epoch = epoch - 1  # do not move
        for i in range(nb):
            ni = i + nb * epoch  # number integrated batches (since train start)
            # Warmup
            if ni <= nw:
                xi = [0, nw]  # x interp
                accumulate = max(1, np.interp(ni, xi, [1, nbs / batch_size]).round())
                for j, x in enumerate(optimizer.param_groups):
                    # bias lr falls from 0.1 to lr0, all other lrs rise from 0.0 to lr0
                    x['lr'] = np.interp(ni, xi, [hyp['warmup_bias_lr'] if j == 0 else 0.0, x['initial_lr'] * lf(epoch)])
                    if 'momentum' in x:
                        x['momentum'] = np.interp(ni, xi, [hyp['warmup_momentum'], hyp['momentum']])
            with torch.cuda.amp.autocast(amp):
                pred = model(imgs[i])  # forward
                loss = BCEobj(pred[..., 4], tobj[i]) * batch_size  # loss scaled by batch_size
            scaler.scale(loss).backward()
            if ni - last_opt_step >= accumulate:
                scaler.unscale_(optimizer)  # unscale gradients
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)  # clip gradients
                scaler.step(optimizer)  # optimizer.step
                scaler.update()
                optimizer.zero_grad()
                if ema:
                    ema.update(model)
                last_opt_step = ni
            losses += [loss.item(), float(accumulate)] + [float(x['lr']) for x in optimizer.param_groups]
        scheduler.step()
    model.eval()
    with torch.no_grad():
        before = model(imgs[0])
        model.fuse()
        after = model(imgs[0])
        losses += [before.sum().item(), (after - before).abs().max().item() < 1e-4]
    return init, losses + summary(model.parameters()) + summary(ema.ema.state_dict().values())


def test_yolov5_utils():
    compare(yolov5_utils)


# (j) apple/ml-cvnets' MobileViT block (cvnets/modules/mobilevit_block.py): local representations by a 3x3 and a 1x1
# ConvLayer, unfolding into patches by reshape and transpose (the feature map bilinearly resized up to a multiple of the
# patch size, align_corners=False, and back in folding), a global representation of pre-norm TransformerEncoder blocks
# (its MultiHeadAttention by one qkv_proj, torch.chunk, the scaled query, softmax and the out projection; a SiLU FFN),
# the fusion of the projected features with the input by torch.cat, inside a MobileNetV2 InvertedResidual
# backbone; SGD (Adam would normalise the key bias's rounding-only gradient)
def mobilevit(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def conv_layer(in_channels, out_channels, kernel_size, stride=1, use_norm=True, use_act=True, groups=1):
        padding = (kernel_size - 1) // 2
        block = nn.Sequential()
        block.add_module(name="conv", module=nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                                                       groups=groups, bias=not use_norm))
        if use_norm:
            block.add_module(name="norm", module=nn.BatchNorm2d(out_channels, momentum=0.1))
        if use_act:
            block.add_module(name="act", module=nn.SiLU())
        return block

    class InvertedResidual(nn.Module):
        def __init__(self, in_channels, out_channels, stride, expand_ratio):
            super().__init__()
            hidden_dim = int(round(in_channels * expand_ratio))
            block = nn.Sequential()
            if expand_ratio != 1:
                block.add_module(name="exp_1x1", module=conv_layer(in_channels, hidden_dim, 1))
            block.add_module(name="conv_3x3", module=conv_layer(hidden_dim, hidden_dim, 3, stride, groups=hidden_dim))
            block.add_module(name="red_1x1", module=conv_layer(hidden_dim, out_channels, 1, use_act=False))
            self.block = block
            self.use_res_connect = stride == 1 and in_channels == out_channels

        def forward(self, x):
            if self.use_res_connect:
                return x + self.block(x)
            return self.block(x)

    class MultiHeadAttention(nn.Module):
        def __init__(self, embed_dim, num_heads, attn_dropout=0.0, bias=True):
            super().__init__()
            self.qkv_proj = nn.Linear(in_features=embed_dim, out_features=3 * embed_dim, bias=bias)
            self.attn_dropout = nn.Dropout(p=attn_dropout)
            self.out_proj = nn.Linear(in_features=embed_dim, out_features=embed_dim, bias=bias)
            self.head_dim = embed_dim // num_heads
            self.scaling = self.head_dim ** -0.5
            self.softmax = nn.Softmax(dim=-1)
            self.num_heads = num_heads
            self.embed_dim = embed_dim

        def forward(self, x_q):
            # [N, P, C]
            b_sz, n_patches, in_channels = x_q.shape
            # self-attention
            # [N, P, C] -> [N, P, 3C] -> [N, P, 3, h, c] where C = hc
            qkv = self.qkv_proj(x_q).reshape(b_sz, n_patches, 3, self.num_heads, -1)
            # [N, P, 3, h, c] -> [N, h, 3, P, C]
            qkv = qkv.transpose(1, 3).contiguous()
            # [N, h, 3, P, C] -> [N, h, P, C] x 3
            query, key, value = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            query = query * self.scaling
            # [N h, P, c] -> [N, h, c, P]
            key = key.transpose(-1, -2)
            # QK^T
            # [N, h, P, c] x [N, h, c, P] -> [N, h, P, P]
            attn = torch.matmul(query, key)
            attn = self.softmax(attn)
            attn = self.attn_dropout(attn)
            # weighted sum
            # [N, h, P, P] x [N, h, P, c] -> [N, h, P, c]
            out = torch.matmul(attn, value)
            # [N, h, P, c] -> [N, P, h, c] -> [N, P, C]
            out = out.transpose(1, 2).reshape(b_sz, n_patches, -1)
            out = self.out_proj(out)
            return out

    class TransformerEncoder(nn.Module):
        def __init__(self, embed_dim, ffn_latent_dim, num_heads=8, attn_dropout=0.0, dropout=0.0, ffn_dropout=0.0):
            super().__init__()
            self.pre_norm_mha = nn.Sequential(
                nn.LayerNorm(embed_dim),
                MultiHeadAttention(embed_dim, num_heads, attn_dropout=attn_dropout, bias=True),
                nn.Dropout(p=dropout))
            self.pre_norm_ffn = nn.Sequential(
                nn.LayerNorm(embed_dim),
                nn.Linear(in_features=embed_dim, out_features=ffn_latent_dim, bias=True),
                nn.SiLU(),
                nn.Dropout(p=ffn_dropout),
                nn.Linear(in_features=ffn_latent_dim, out_features=embed_dim, bias=True),
                nn.Dropout(p=dropout))

        def forward(self, x):
            # multi-head attention
            x = x + self.pre_norm_mha(x)
            # feed forward network
            x = x + self.pre_norm_ffn(x)
            return x

    class MobileViTBlock(nn.Module):
        def __init__(self, in_channels, transformer_dim, ffn_dim, n_transformer_blocks=2, head_dim=32,
                     patch_h=8, patch_w=8, conv_ksize=3):
            super().__init__()
            conv_3x3_in = conv_layer(in_channels, in_channels, conv_ksize)
            conv_1x1_in = conv_layer(in_channels, transformer_dim, 1, use_norm=False, use_act=False)
            conv_1x1_out = conv_layer(transformer_dim, in_channels, 1)
            conv_3x3_out = conv_layer(2 * in_channels, in_channels, conv_ksize)

            self.local_rep = nn.Sequential()
            self.local_rep.add_module(name="conv_3x3", module=conv_3x3_in)
            self.local_rep.add_module(name="conv_1x1", module=conv_1x1_in)

            assert transformer_dim % head_dim == 0
            num_heads = transformer_dim // head_dim

            global_rep = [TransformerEncoder(embed_dim=transformer_dim, ffn_latent_dim=ffn_dim, num_heads=num_heads)
                          for _ in range(n_transformer_blocks)]
            global_rep.append(nn.LayerNorm(transformer_dim))
            self.global_rep = nn.Sequential(*global_rep)

            self.conv_proj = conv_1x1_out
            self.fusion = conv_3x3_out

            self.patch_h = patch_h
            self.patch_w = patch_w
            self.patch_area = self.patch_w * self.patch_h

        def unfolding(self, feature_map):
            patch_w, patch_h = self.patch_w, self.patch_h
            patch_area = int(patch_w * patch_h)
            batch_size, in_channels, orig_h, orig_w = feature_map.shape

            new_h = int(math.ceil(orig_h / self.patch_h) * self.patch_h)
            new_w = int(math.ceil(orig_w / self.patch_w) * self.patch_w)

            interpolate = False
            if new_w != orig_w or new_h != orig_h:
                # Note: Padding can be done, but then it needs to be handled in attention function.
                feature_map = F.interpolate(feature_map, size=(new_h, new_w), mode="bilinear", align_corners=False)
                interpolate = True

            # number of patches along width and height
            num_patch_w = new_w // patch_w  # n_w
            num_patch_h = new_h // patch_h  # n_h
            num_patches = num_patch_h * num_patch_w  # N

            # [B, C, H, W] --> [B * C * n_h, p_h, n_w, p_w]
            reshaped_fm = feature_map.reshape(batch_size * in_channels * num_patch_h, patch_h, num_patch_w, patch_w)
            # [B * C * n_h, p_h, n_w, p_w] --> [B * C * n_h, n_w, p_h, p_w]
            transposed_fm = reshaped_fm.transpose(1, 2)
            # [B * C * n_h, n_w, p_h, p_w] --> [B, C, N, P] where P = p_h * p_w and N = n_h * n_w
            reshaped_fm = transposed_fm.reshape(batch_size, in_channels, num_patches, patch_area)
            # [B, C, N, P] --> [B, P, N, C]
            transposed_fm = reshaped_fm.transpose(1, 3)
            # [B, P, N, C] --> [BP, N, C]
            patches = transposed_fm.reshape(batch_size * patch_area, num_patches, -1)

            info_dict = {
                "orig_size": (orig_h, orig_w),
                "batch_size": batch_size,
                "interpolate": interpolate,
                "total_patches": num_patches,
                "num_patches_w": num_patch_w,
                "num_patches_h": num_patch_h,
            }

            return patches, info_dict

        def folding(self, patches, info_dict):
            n_dim = patches.dim()
            assert n_dim == 3, "Tensor should be of shape BPxNxC. Got: {}".format(patches.shape)
            # [BP, N, C] --> [B, P, N, C]
            patches = patches.contiguous().view(info_dict["batch_size"], self.patch_area, info_dict["total_patches"], -1)

            batch_size, pixels, num_patches, channels = patches.size()
            num_patch_h = info_dict["num_patches_h"]
            num_patch_w = info_dict["num_patches_w"]

            # [B, P, N, C] --> [B, C, N, P]
            patches = patches.transpose(1, 3)

            # [B, C, N, P] --> [B*C*n_h, n_w, p_h, p_w]
            feature_map = patches.reshape(batch_size * channels * num_patch_h, num_patch_w, self.patch_h, self.patch_w)
            # [B*C*n_h, n_w, p_h, p_w] --> [B*C*n_h, p_h, n_w, p_w]
            feature_map = feature_map.transpose(1, 2)
            # [B*C*n_h, p_h, n_w, p_w] --> [B, C, H, W]
            feature_map = feature_map.reshape(batch_size, channels, num_patch_h * self.patch_h, num_patch_w * self.patch_w)
            if info_dict["interpolate"]:
                feature_map = F.interpolate(feature_map, size=info_dict["orig_size"], mode="bilinear",
                                            align_corners=False)
            return feature_map

        def forward(self, x):
            res = x

            fm = self.local_rep(x)

            # convert feature map to patches
            patches, info_dict = self.unfolding(fm)

            # learn global representations
            patches = self.global_rep(patches)

            # [B x Patch x Patches x C] --> [B x C x Patches x Patch]
            fm = self.folding(patches=patches, info_dict=info_dict)

            fm = self.conv_proj(fm)

            fm = self.fusion(torch.cat((res, fm), dim=1))
            return fm

    model = nn.Sequential(conv_layer(3, 4, 3, stride=2), InvertedResidual(4, 4, 1, 2),
                          MobileViTBlock(4, 8, 16, n_transformer_blocks=1, head_dim=4, patch_h=2, patch_w=2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.tensor(normal(rng, 2, 3, 10, 10))  # a 5x5 feature map: resized to 6x6 for 2x2 patches
    y = torch.tensor(rng.integers(0, 3, 2))
    losses = []
    model.train()
    for _ in range(2):
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append(model(x).sum().item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_mobilevit():
    compare(mobilevit)


# (k) a notebook comparing nn's activations on one MLP (the "which activation function?" posts): a dict of activation
# modules with their arguments (ELU(alpha=), CELU, SELU, GELU(approximate='tanh'), Softplus(beta=, threshold=),
# Softsign, Tanhshrink, LogSigmoid, Hardshrink, Softshrink, Threshold, Hardsigmoid, Hardswish, ReLU6, Mish, SiLU,
# PReLU(num_parameters=), GLU over a doubled width, Softmin(dim=1) and RReLU, whose eval mode is the fixed mean slope),
# the model built per activation with copy.deepcopy of the module, one SGD step each on the same batch, and the test
# loss and accuracy per activation in eval mode
def activation_zoo(m, state=None):
    torch, nn = m.torch, m.nn
    import copy
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    activations = {
        'elu': nn.ELU(alpha=0.5),
        'celu': nn.CELU(alpha=1.5),
        'selu': nn.SELU(),
        'gelu_tanh': nn.GELU(approximate='tanh'),
        'softplus': nn.Softplus(beta=2, threshold=1),
        'softsign': nn.Softsign(),
        'tanhshrink': nn.Tanhshrink(),
        'logsigmoid': nn.LogSigmoid(),
        'hardshrink': nn.Hardshrink(lambd=0.3),
        'softshrink': nn.Softshrink(lambd=0.3),
        'threshold': nn.Threshold(0.1, -1.0),
        'hardsigmoid': nn.Hardsigmoid(),
        'hardswish': nn.Hardswish(),
        'relu6': nn.ReLU6(),
        'mish': nn.Mish(),
        'silu': nn.SiLU(),
        'prelu': nn.PReLU(num_parameters=6, init=0.1),
        'glu': nn.GLU(dim=-1),
        'softmin': nn.Softmin(dim=1),
        'rrelu': nn.RReLU(0.1, 0.3),
    }

    class Net(nn.Module):
        def __init__(self, act, hidden=6):
            super().__init__()
            width = hidden * 2 if isinstance(act, nn.GLU) else hidden
            self.fc1 = nn.Linear(4, width)
            self.act = copy.deepcopy(act)
            self.fc2 = nn.Linear(hidden, 3)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    models = nn.ModuleDict({name: Net(act) for name, act in activations.items()})
    init = load(m, models, state)
    x = torch.tensor(normal(rng, 8, 4) * 2)
    y = torch.tensor(rng.integers(0, 3, 8))
    criterion = nn.CrossEntropyLoss()
    losses = []
    for name, model in models.items():
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        model.train(name != 'rrelu')  # RReLU's training mode draws its slopes
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            out = model(x)
            acc = (out.argmax(1) == y).float().mean().item()
        losses += [loss.item(), criterion(out, y).item(), acc]
    assert repr(models['softplus'].act) == 'Softplus(beta=2, threshold=1)', repr(models['softplus'].act)
    assert repr(models['threshold'].act) == 'Threshold(threshold=0.1, value=-1.0)', repr(models['threshold'].act)
    return init, losses + summary(models.parameters())


def test_activation_zoo():
    compare(activation_zoo)


# (l) SaoYan's DnCNN-PyTorch (models.py, utils.py, train.py): DnCNN's Sequential of bias-free convolutions with
# BatchNorm and ReLU(inplace=True) built by a list, weights_init_kaiming by classname.find (the deprecated
# nn.init.kaiming_normal and nn.init.constant, BatchNorm weights by .data.normal_(mean=0, std=...).clamp_(-0.025, 0.025)),
# net.apply, nn.MSELoss(size_average=False), nn.DataParallel on the CPU, Adam with its lr set by hand in param_groups
# after a milestone, the noise by torch.FloatTensor(img_train.size()).normal_(mean=0, std=noiseL/255.) (torch replays
# tnet's draw), Variable wrapping, the residual loss / (imgn_train.size()[0]*2), batch_PSNR on numpy copies through
# .data.cpu().numpy(), and torch.clamp(imgn_train - model(imgn_train), 0., 1.) in eval mode
def dncnn(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    Variable = m.torch.autograd.Variable
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class DnCNN(nn.Module):
        def __init__(self, channels, num_of_layers=17):
            super(DnCNN, self).__init__()
            kernel_size = 3
            padding = 1
            features = 4
            layers = []
            layers.append(nn.Conv2d(in_channels=channels, out_channels=features, kernel_size=kernel_size,
                                    padding=padding, bias=False))
            layers.append(nn.ReLU(inplace=True))
            for _ in range(num_of_layers - 2):
                layers.append(nn.Conv2d(in_channels=features, out_channels=features, kernel_size=kernel_size,
                                        padding=padding, bias=False))
                layers.append(nn.BatchNorm2d(features))
                layers.append(nn.ReLU(inplace=True))
            layers.append(nn.Conv2d(in_channels=features, out_channels=channels, kernel_size=kernel_size,
                                    padding=padding, bias=False))
            self.dncnn = nn.Sequential(*layers)

        def forward(self, x):
            out = self.dncnn(x)
            return out

    def weights_init_kaiming(m_):
        classname = m_.__class__.__name__
        if classname.find('Conv') != -1:
            nn.init.kaiming_normal(m_.weight.data, a=0, mode='fan_in')
        elif classname.find('Linear') != -1:
            nn.init.kaiming_normal(m_.weight.data, a=0, mode='fan_in')
        elif classname.find('BatchNorm') != -1:
            # nn.init.uniform(m.weight.data, 1.0, 0.02)
            m_.weight.data.normal_(mean=0, std=math.sqrt(2. / 9. / 64.)).clamp_(-0.025, 0.025)
            nn.init.constant(m_.bias.data, 0.0)

    def compare_psnr(im_true, im_test, data_range=None):  # skimage.measure.compare_psnr
        err = np.mean((im_true.astype(np.float64) - im_test.astype(np.float64)) ** 2)
        return 10 * np.log10((data_range ** 2) / err)

    def batch_PSNR(img, imclean, data_range):
        Img = img.data.cpu().numpy().astype(np.float32)
        Iclean = imclean.data.cpu().numpy().astype(np.float32)
        PSNR = 0
        for i in range(Img.shape[0]):
            PSNR += compare_psnr(Iclean[i, :, :, :], Img[i, :, :, :], data_range=data_range)
        return (PSNR / Img.shape[0])

    class Opt:
        num_of_layers, lr, milestone, noiseL, epochs = 4, 1e-3, 1, 25, 2

    opt = Opt()
    net = DnCNN(channels=1, num_of_layers=opt.num_of_layers)
    net.apply(weights_init_kaiming)
    init = load(m, net, state)
    criterion = nn.MSELoss(size_average=False)
    # Move to GPU
    model = nn.DataParallel(net)
    # Optimizer
    optimizer = torch.optim.Adam(model.parameters(), lr=opt.lr)
    loader_train = [torch.tensor(rng.random((2, 1, 6, 6)).astype(np.float32))]
    losses = []
    for epoch in range(opt.epochs):
        if epoch < opt.milestone:
            current_lr = opt.lr
        else:
            current_lr = opt.lr / 10.
        # set learning rate
        for param_group in optimizer.param_groups:
            param_group["lr"] = current_lr
        # train
        for i, data in enumerate(loader_train, 0):
            # training step
            model.train()
            model.zero_grad()
            optimizer.zero_grad()
            img_train = data
            noise = torch.FloatTensor(img_train.size()).normal_(mean=0, std=opt.noiseL / 255.)
            noise = torch.tensor(replay.setdefault(("noise", epoch, i), noise.numpy().copy()))  # torch replays tnet's
            imgn_train = img_train + noise
            img_train, imgn_train = Variable(img_train), Variable(imgn_train)
            noise = Variable(noise)
            out_train = model(imgn_train)
            loss = criterion(out_train, noise) / (imgn_train.size()[0] * 2)
            loss.backward()
            optimizer.step()
            # results
            model.eval()
            out_train = torch.clamp(imgn_train - model(imgn_train), 0., 1.)
            psnr_train = batch_PSNR(out_train, img_train, 1.)
            losses += [loss.item(), psnr_train, optimizer.param_groups[0]["lr"]]
    return init, losses + summary(net.parameters()) + summary(net.buffers())


def test_dncnn():
    compare(dncnn, replay={})


# (m) a neural system-identification model in the style of the Sinz lab's neuralpredictors and Klindt et al.'s
# factorized readout: a convolutional core (BatchNorm, ELU) with a Laplace smoothness regulariser (a fixed Laplacian
# kernel buffer by F.conv2d over the first layer's weights), SpatialXFeatureLinear (a unit-norm spatial mask by
# pow(2).sum(...).sqrt().expand_as, features clamped non-negative in place through .data, einsum('ncwh,owh->nco')),
# rates by F.elu(x) + 1, nn.PoissonNLLLoss(log_input=False) for training and full=True with reduction='sum' for the
# report, L1 regularisers, Adam, and the per-neuron correlation on numpy copies
def neural_encoding(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class LaplaceL2(nn.Module):
        def __init__(self, padding=0):
            super().__init__()
            self.padding = padding
            self.register_buffer('filter', torch.tensor([[0, -1, 0], [-1, 4, -1], [0, -1, 0]],
                                                        dtype=torch.float32)[None, None, ...])

        def forward(self, x):
            ic, oc, k1, k2 = x.size()
            return F.conv2d(x.view(ic * oc, 1, k1, k2), self.filter, padding=self.padding).pow(2).mean() / 2

    class Core(nn.Module):
        def __init__(self, input_channels=1, hidden_channels=4, input_kern=5, hidden_kern=3, gamma_input=0.1):
            super().__init__()
            self._input_weights_regularizer = LaplaceL2()
            self.gamma_input = gamma_input
            self.features = nn.Sequential()
            self.features.add_module('layer0', nn.Sequential(
                nn.Conv2d(input_channels, hidden_channels, input_kern, padding=0, bias=False),
                nn.BatchNorm2d(hidden_channels, momentum=0.9), nn.ELU(inplace=True)))
            self.features.add_module('layer1', nn.Sequential(
                nn.Conv2d(hidden_channels, hidden_channels, hidden_kern, padding=hidden_kern // 2, bias=False),
                nn.BatchNorm2d(hidden_channels, momentum=0.9), nn.ELU(inplace=True)))

        def forward(self, x):
            return self.features(x)

        def laplace(self):
            return self._input_weights_regularizer(self.features[0][0].weight)

        def regularizer(self):
            return self.gamma_input * self.laplace()

    class SpatialXFeatureLinear(nn.Module):
        def __init__(self, in_shape, outdims, bias=True, normalize=True, init_noise=1e-3, constrain_pos=True):
            super().__init__()
            self.in_shape = in_shape
            self.outdims = outdims
            self.normalize = normalize
            self.constrain_pos = constrain_pos
            c, w, h = in_shape
            self.spatial = nn.Parameter(torch.Tensor(self.outdims, w, h))
            self.features = nn.Parameter(torch.Tensor(self.outdims, c))
            if bias:
                bias = nn.Parameter(torch.Tensor(self.outdims))
                self.register_parameter('bias', bias)
            else:
                self.register_parameter('bias', None)
            self.init_noise = init_noise
            self.initialize()

        @property
        def normalized_spatial(self):
            if self.normalize:
                norm = self.spatial.pow(2).sum(dim=1, keepdim=True)
                norm = norm.sum(dim=2, keepdim=True).sqrt().expand_as(self.spatial) + 1e-6
                weight = self.spatial / norm
            else:
                weight = self.spatial
            return weight

        def initialize(self, init_noise=1e-3):
            self.spatial.data.normal_(0, self.init_noise)
            self.features.data.normal_(0, self.init_noise)
            if self.bias is not None:
                self.bias.data.fill_(0)

        def regularizer(self, gamma_readout=0.01):
            return (self.spatial.abs().sum() + self.features.abs().sum()) * gamma_readout

        def forward(self, x, shift=None):
            if self.constrain_pos:
                self.features.data.clamp_min_(0.0)
            N, c, w, h = x.size()
            weight = self.normalized_spatial
            y = torch.einsum('ncwh,owh->nco', x, weight)
            y = torch.einsum('nco,oc->no', y, self.features)
            if self.bias is not None:
                y = y + self.bias
            return y

    class Encoder(nn.Module):
        def __init__(self, core, readout):
            super().__init__()
            self.core = core
            self.readout = readout

        def forward(self, x):
            x = self.core(x)
            x = self.readout(x)
            return F.elu(x) + 1

        def regularizer(self):
            return self.core.regularizer() + self.readout.regularizer()

    def corr(y1, y2, axis=-1, eps=1e-8, **kwargs):
        y1 = (y1 - y1.mean(axis=axis, keepdims=True)) / (y1.std(axis=axis, keepdims=True, ddof=0) + eps)
        y2 = (y2 - y2.mean(axis=axis, keepdims=True)) / (y2.std(axis=axis, keepdims=True, ddof=0) + eps)
        return (y1 * y2).mean(axis=axis, **kwargs)

    n_neurons = 5
    model = Encoder(Core(), SpatialXFeatureLinear((4, 4, 4), n_neurons))
    model.readout.features.data.normal_(0, 0.5)  # a wider start than the source's 1e-3, for a visible step
    model.readout.spatial.data.normal_(0, 0.5)
    init = load(m, model, state)
    images = torch.tensor(normal(rng, 6, 1, 8, 8))
    responses = torch.tensor(rng.poisson(1.5, (6, n_neurons)).astype(np.float32))
    criterion = nn.PoissonNLLLoss(log_input=False)
    report = nn.PoissonNLLLoss(log_input=False, full=True, reduction='sum')
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(2):
        model.train()
        optimizer.zero_grad()
        output = model(images)
        loss = criterion(output, responses) + model.regularizer()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), report(output, responses).item()]
    model.eval()
    with torch.no_grad():
        output = model(images)
        losses.append(report(output, responses).item())
    losses += corr(output.cpu().numpy(), responses.cpu().numpy(), axis=0).tolist()
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_neural_encoding():
    compare(neural_encoding)


# (n) shirgur's PointerNet (PointerNet.py, Train.py) sorting numbers: Parameters with requires_grad=False as constants
# (a -inf, a mask of ones, a runner of zeros, the first decoder input by the deprecated nn.init.uniform), the encoder's
# hidden state by Parameter(torch.zeros(1)).unsqueeze(0).unsqueeze(0).repeat(...), an LSTM over permute(1, 0, 2),
# the decoder's LSTM step by hand (gates.chunk(4, 1), F.sigmoid and F.tanh), attention through a Conv1d context
# projection and torch.bmm, masked scores by att[mask] = self.inf[mask], nn.Softmax() without dim, the runner filled by
# runner.data[i] = i, pointers by masked_outs.max(1), one-hot pointers by comparing with the runner, the next decoder
# input by indexing with a .byte() mask, CrossEntropyLoss over the decoder's probabilities (as the source), and Adam
def pointer_net(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Parameter = nn.Parameter
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class Encoder(nn.Module):
        def __init__(self, embedding_dim, hidden_dim, n_layers, dropout, bidir):
            super(Encoder, self).__init__()
            self.hidden_dim = hidden_dim // 2 if bidir else hidden_dim
            self.n_layers = n_layers * 2 if bidir else n_layers
            self.bidir = bidir
            self.lstm = nn.LSTM(embedding_dim, self.hidden_dim, n_layers, dropout=dropout, bidirectional=bidir)

            # Used for propagating .cuda() command
            self.h0 = Parameter(torch.zeros(1), requires_grad=False)
            self.c0 = Parameter(torch.zeros(1), requires_grad=False)

        def forward(self, embedded_inputs, hidden):
            embedded_inputs = embedded_inputs.permute(1, 0, 2)
            outputs, hidden = self.lstm(embedded_inputs, hidden)
            return outputs.permute(1, 0, 2), hidden

        def init_hidden(self, embedded_inputs):
            batch_size = embedded_inputs.size(0)

            # Reshaping (Expanding)
            h0 = self.h0.unsqueeze(0).unsqueeze(0).repeat(self.n_layers, batch_size, self.hidden_dim)
            c0 = self.h0.unsqueeze(0).unsqueeze(0).repeat(self.n_layers, batch_size, self.hidden_dim)
            return h0, c0

    class Attention(nn.Module):
        def __init__(self, input_dim, hidden_dim):
            super(Attention, self).__init__()
            self.input_dim = input_dim
            self.hidden_dim = hidden_dim
            self.input_linear = nn.Linear(input_dim, hidden_dim)
            self.context_linear = nn.Conv1d(input_dim, hidden_dim, 1, 1)
            self.V = Parameter(torch.FloatTensor(hidden_dim), requires_grad=True)
            self._inf = Parameter(torch.FloatTensor([float('-inf')]), requires_grad=False)
            self.tanh = nn.Tanh()
            self.softmax = nn.Softmax()

            # Initialize vector V
            nn.init.uniform(self.V, -1, 1)

        def forward(self, input, context, mask):
            # (batch, hidden_dim, seq_len)
            inp = self.input_linear(input).unsqueeze(2).expand(-1, -1, context.size(1))

            # (batch, hidden_dim, seq_len)
            context = context.permute(0, 2, 1)
            ctx = self.context_linear(context)

            # (batch, 1, hidden_dim)
            V = self.V.unsqueeze(0).expand(context.size(0), -1).unsqueeze(1)

            # (batch, seq_len)
            att = torch.bmm(V, self.tanh(inp + ctx)).squeeze(1)
            if len(att[mask]) > 0:
                att[mask] = self.inf[mask]
            alpha = self.softmax(att)

            hidden_state = torch.bmm(ctx, alpha.unsqueeze(2)).squeeze(2)

            return hidden_state, alpha

        def init_inf(self, mask_size):
            self.inf = self._inf.unsqueeze(1).expand(*mask_size)

    class Decoder(nn.Module):
        def __init__(self, embedding_dim, hidden_dim):
            super(Decoder, self).__init__()
            self.embedding_dim = embedding_dim
            self.hidden_dim = hidden_dim

            self.input_to_hidden = nn.Linear(embedding_dim, 4 * hidden_dim)
            self.hidden_to_hidden = nn.Linear(hidden_dim, 4 * hidden_dim)
            self.hidden_out = nn.Linear(hidden_dim * 2, hidden_dim)
            self.att = Attention(hidden_dim, hidden_dim)

            # Used for propagating .cuda() command
            self.mask = Parameter(torch.ones(1), requires_grad=False)
            self.runner = Parameter(torch.zeros(1), requires_grad=False)

        def forward(self, embedded_inputs, decoder_input, hidden, context):
            batch_size = embedded_inputs.size(0)
            input_length = embedded_inputs.size(1)

            # (batch, seq_len)
            mask = self.mask.repeat(input_length).unsqueeze(0).repeat(batch_size, 1)
            self.att.init_inf(mask.size())

            # Generating arang(input_length), broadcasted across batch_size
            runner = self.runner.repeat(input_length)
            for i in range(input_length):
                runner.data[i] = i
            runner = runner.unsqueeze(0).expand(batch_size, -1).long()

            outputs = []
            pointers = []

            def step(x, hidden):
                # Regular LSTM
                h, c = hidden

                gates = self.input_to_hidden(x) + self.hidden_to_hidden(h)
                input, forget, cell, out = gates.chunk(4, 1)

                input = F.sigmoid(input)
                forget = F.sigmoid(forget)
                cell = F.tanh(cell)
                out = F.sigmoid(out)

                c_t = (forget * c) + (input * cell)
                h_t = out * F.tanh(c_t)

                # Attention section
                hidden_t, output = self.att(h_t, context, torch.eq(mask, 0))
                hidden_t = F.tanh(self.hidden_out(torch.cat((hidden_t, h_t), 1)))

                return hidden_t, c_t, output

            # Recurrence loop
            for _ in range(input_length):
                h_t, c_t, outs = step(decoder_input, hidden)
                hidden = (h_t, c_t)

                # Masking selected inputs
                masked_outs = outs * mask

                # Get maximum probabilities and indices
                max_probs, indices = masked_outs.max(1)
                one_hot_pointers = (runner == indices.unsqueeze(1).expand(-1, outs.size()[1])).float()

                # Update mask to ignore seen indices
                mask = mask * (1 - one_hot_pointers)

                # Get embedded inputs by max indices
                embedding_mask = one_hot_pointers.unsqueeze(2).expand(-1, -1, self.embedding_dim).byte()
                decoder_input = embedded_inputs[embedding_mask.data].view(batch_size, self.embedding_dim)

                outputs.append(outs.unsqueeze(0))
                pointers.append(indices.unsqueeze(1))

            outputs = torch.cat(outputs).permute(1, 0, 2)
            pointers = torch.cat(pointers, 1)

            return (outputs, pointers), hidden

    class PointerNet(nn.Module):
        def __init__(self, embedding_dim, hidden_dim, lstm_layers, dropout, bidir=False):
            super(PointerNet, self).__init__()
            self.embedding_dim = embedding_dim
            self.bidir = bidir
            self.embedding = nn.Linear(2, embedding_dim)
            self.encoder = Encoder(embedding_dim, hidden_dim, lstm_layers, dropout, bidir)
            self.decoder = Decoder(embedding_dim, hidden_dim)
            self.decoder_input0 = Parameter(torch.FloatTensor(embedding_dim), requires_grad=False)

            # Initialize decoder_input0
            nn.init.uniform(self.decoder_input0, -1, 1)

        def forward(self, inputs):
            batch_size = inputs.size(0)
            input_length = inputs.size(1)

            # (batch, embedding)
            decoder_input0 = self.decoder_input0.unsqueeze(0).expand(batch_size, -1)

            # (batch*seq_len, embedding)
            inputs = inputs.view(batch_size * input_length, -1)
            embedded_inputs = self.embedding(inputs).view(batch_size, input_length, -1)

            encoder_hidden0 = self.encoder.init_hidden(embedded_inputs)
            encoder_outputs, encoder_hidden = self.encoder(embedded_inputs, encoder_hidden0)
            if self.bidir:
                decoder_hidden0 = (torch.cat(tuple(encoder_hidden[0][-2:]), dim=-1),
                                   torch.cat(tuple(encoder_hidden[1][-2:]), dim=-1))
            else:
                decoder_hidden0 = (encoder_hidden[0][-1], encoder_hidden[1][-1])
            (outputs, pointers), decoder_hidden = self.decoder(embedded_inputs, decoder_input0, decoder_hidden0,
                                                               encoder_outputs)

            return outputs, pointers

    model = PointerNet(4, 6, 1, 0., bidir=True)
    init = load(m, model, state)
    CCE = torch.nn.CrossEntropyLoss()
    model_optim = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)
    points = rng.random((2, 3, 2)).astype(np.float32)
    targets = np.argsort(points[:, :, 0], axis=1)  # sort by the first coordinate
    train_batch, target_batch = torch.tensor(points), torch.tensor(targets)
    losses = []
    for _ in range(2):
        o, p = model(train_batch)
        o = o.contiguous().view(-1, o.size()[-1])
        target_batch = target_batch.view(-1)
        loss = CCE(o, target_batch)
        model_optim.zero_grad()
        loss.backward()
        model_optim.step()
        losses += [loss.item()] + p.flatten().tolist()
    return init, losses + summary(p for p in model.parameters() if p.requires_grad)  # not the constant -inf


def test_pointer_net():
    compare(pointer_net)


# (o) the Self-Organising Textures colab's neural CA in PyTorch (Niklasson, Mordvintsev et al.): perchannel_conv by
# reshape(b*ch, 1, h, w), F.pad(..., 'circular') and conv2d with filters[:, None], perception from torch.stack of the
# identity, Sobel and Laplacian kernels (sobel_x.T), a CA of 1x1 convolutions with w2.weight.data.zero_(), the
# stochastic update mask by (rand + update_rate).floor() (numpy draws it), a pool of states indexed by numpy's
# choice and written back, the seed replacing x[:1], the overflow loss by clamp, a target's MSE, loss.backward()
# under torch.no_grad(), each gradient normalised in place by p.grad /= (p.grad.norm() + 1e-8), Adam and MultiStepLR
def neural_ca(m, state=None):
    torch = m.torch
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    ident = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    sobel_x = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
    lap = torch.tensor([[1.0, 2.0, 1.0], [2.0, -12, 2.0], [1.0, 2.0, 1.0]])

    def perchannel_conv(x, filters):
        '''filters: [filter_n, h, w]'''
        b, ch, h, w = x.shape
        y = x.reshape(b * ch, 1, h, w)
        y = torch.nn.functional.pad(y, [1, 1, 1, 1], 'circular')
        y = torch.nn.functional.conv2d(y, filters[:, None])
        return y.reshape(b, -1, h, w)

    def perception(x):
        filters = torch.stack([ident, sobel_x, sobel_x.T, lap])
        return perchannel_conv(x, filters)

    class CA(torch.nn.Module):
        def __init__(self, chn=12, hidden_n=96):
            super().__init__()
            self.chn = chn
            self.w1 = torch.nn.Conv2d(chn * 4, hidden_n, 1)
            self.w2 = torch.nn.Conv2d(hidden_n, chn, 1, bias=False)
            self.w2.weight.data.zero_()

        def forward(self, x, update_rate=0.5, noise=None):
            y = perception(x)
            y = self.w2(torch.relu(self.w1(y)))
            b, c, h, w = y.shape
            udpate_mask = (noise + update_rate).floor()
            return x + y * udpate_mask

        def seed(self, n, sz=8):
            return torch.zeros(n, self.chn, sz, sz)

    def to_rgb(x):
        return x[..., :3, :, :] + 0.5

    ca = CA(chn=4, hidden_n=8)
    init = load(m, ca, state)
    opt = torch.optim.Adam(ca.parameters(), 1e-3)
    lr_sched = torch.optim.lr_scheduler.MultiStepLR(opt, [1], 0.3)
    with torch.no_grad():
        pool = ca.seed(6, 6)
        pool += torch.tensor(normal(rng, 6, 4, 6, 6) * 0.1)
    target = torch.tensor(rng.random((3, 6, 6)).astype(np.float32) - 0.5)
    losses = []
    for i in range(2):
        with torch.no_grad():
            batch_idx = rng.choice(len(pool), 2, replace=False)
            x = pool[batch_idx]
            if i % 8 == 0:
                x[:1] = ca.seed(1, 6)
        step_n = int(rng.integers(2, 4))
        for k in range(step_n):
            x = ca(x, noise=torch.tensor(rng.random((2, 1, 6, 6)).astype(np.float32)))
        overflow_loss = (x - x.clamp(-1.0, 1.0)).abs().sum()
        loss = ((to_rgb(x) - target) ** 2).mean() + overflow_loss
        with torch.no_grad():
            loss.backward()
            for p in ca.parameters():
                p.grad /= (p.grad.norm() + 1e-8)  # normalize gradients
            opt.step()
            opt.zero_grad()
            lr_sched.step()
            pool[batch_idx] = x  # update pool
        losses += [loss.item(), overflow_loss.item(), step_n, opt.param_groups[0]['lr']]
    return init, losses + summary(ca.parameters()) + summary([pool])


def test_neural_ca():
    compare(neural_ca)


# (p) torchvision's models/video/resnet.py at reduced widths (its 64-512 planes as a parameter): Conv3DSimple and
# Conv2Plus1D (an nn.Sequential subclass with a get_downsample_stride staticmethod, midplanes by the parameter-matching
# formula, (1, 3, 3) then (3, 1, 1) kernels), BasicBlock with a conv_builder, R2Plus1dStem, VideoResNet's _make_layer
# (a Conv3d downsample of stride ds_stride), AdaptiveAvgPool3d and flatten(1), its kaiming_normal_(mode="fan_out")
# init; trained on a clip batch of shape (N, C, T, H, W) by SGD with nesterov momentum and CrossEntropyLoss
def video_resnet(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class Conv3DSimple(nn.Conv3d):
        def __init__(self, in_planes, out_planes, midplanes=None, stride=1, padding=1):
            super().__init__(
                in_channels=in_planes,
                out_channels=out_planes,
                kernel_size=(3, 3, 3),
                stride=stride,
                padding=padding,
                bias=False,
            )

        @staticmethod
        def get_downsample_stride(stride):
            return stride, stride, stride

    class Conv2Plus1D(nn.Sequential):
        def __init__(self, in_planes, out_planes, midplanes, stride=1, padding=1):
            super().__init__(
                nn.Conv3d(
                    in_planes,
                    midplanes,
                    kernel_size=(1, 3, 3),
                    stride=(1, stride, stride),
                    padding=(0, padding, padding),
                    bias=False,
                ),
                nn.BatchNorm3d(midplanes),
                nn.ReLU(inplace=True),
                nn.Conv3d(
                    midplanes, out_planes, kernel_size=(3, 1, 1), stride=(stride, 1, 1), padding=(padding, 0, 0),
                    bias=False
                ),
            )

        @staticmethod
        def get_downsample_stride(stride):
            return stride, stride, stride

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, conv_builder, stride=1, downsample=None):
            midplanes = (inplanes * planes * 3 * 3 * 3) // (inplanes * 3 * 3 + 3 * planes)

            super().__init__()
            self.conv1 = nn.Sequential(
                conv_builder(inplanes, planes, midplanes, stride), nn.BatchNorm3d(planes), nn.ReLU(inplace=True)
            )
            self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes), nn.BatchNorm3d(planes))
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            residual = x

            out = self.conv1(x)
            out = self.conv2(out)
            if self.downsample is not None:
                residual = self.downsample(x)

            out += residual
            out = self.relu(out)

            return out

    class R2Plus1dStem(nn.Sequential):
        """R(2+1)D stem is different than the default one as it uses separated 3D convolution"""

        def __init__(self, widths):
            super().__init__(
                nn.Conv3d(3, widths[1], kernel_size=(1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False),
                nn.BatchNorm3d(widths[1]),
                nn.ReLU(inplace=True),
                nn.Conv3d(widths[1], widths[0], kernel_size=(3, 1, 1), stride=(1, 1, 1), padding=(1, 0, 0),
                          bias=False),
                nn.BatchNorm3d(widths[0]),
                nn.ReLU(inplace=True),
            )

    class VideoResNet(nn.Module):
        def __init__(self, block, conv_makers, layers, stem, num_classes=400, zero_init_residual=False,
                     widths=(64, 128, 256, 512)):
            super().__init__()
            self.inplanes = widths[0]

            self.stem = stem(widths)

            self.layer1 = self._make_layer(block, conv_makers[0], widths[0], layers[0], stride=1)
            self.layer2 = self._make_layer(block, conv_makers[1], widths[1], layers[1], stride=2)
            self.layer3 = self._make_layer(block, conv_makers[2], widths[2], layers[2], stride=2)
            self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
            self.fc = nn.Linear(widths[2] * block.expansion, num_classes)

            # init weights
            for m_ in self.modules():
                if isinstance(m_, nn.Conv3d):
                    nn.init.kaiming_normal_(m_.weight, mode="fan_out", nonlinearity="relu")
                    if m_.bias is not None:
                        nn.init.constant_(m_.bias, 0)
                elif isinstance(m_, nn.BatchNorm3d):
                    nn.init.constant_(m_.weight, 1)
                    nn.init.constant_(m_.bias, 0)
                elif isinstance(m_, nn.Linear):
                    nn.init.normal_(m_.weight, 0, 0.01)
                    nn.init.constant_(m_.bias, 0)

        def forward(self, x):
            x = self.stem(x)

            x = self.layer1(x)
            x = self.layer2(x)
            x = self.layer3(x)

            x = self.avgpool(x)
            # Flatten the layer to fc
            x = x.flatten(1)
            x = self.fc(x)

            return x

        def _make_layer(self, block, conv_builder, planes, blocks, stride=1):
            downsample = None

            if stride != 1 or self.inplanes != planes * block.expansion:
                ds_stride = conv_builder.get_downsample_stride(stride)
                downsample = nn.Sequential(
                    nn.Conv3d(self.inplanes, planes * block.expansion, kernel_size=1, stride=ds_stride, bias=False),
                    nn.BatchNorm3d(planes * block.expansion),
                )
            layers = []
            layers.append(block(self.inplanes, planes, conv_builder, stride, downsample))

            self.inplanes = planes * block.expansion
            for i in range(1, blocks):
                layers.append(block(self.inplanes, planes, conv_builder))

            return nn.Sequential(*layers)

    # r2plus1d_18's builders, its first three stages; one stage of Conv3DSimple, as mixed convolutions (mc3) do
    model = VideoResNet(BasicBlock, [Conv3DSimple, Conv2Plus1D, Conv2Plus1D], [1, 1, 1], R2Plus1dStem, num_classes=3,
                        widths=(2, 3, 4))
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4, nesterov=True)
    clips = torch.tensor(normal(rng, 2, 3, 4, 8, 8))
    target = torch.tensor([0, 2])
    losses = []
    model.train()
    for _ in range(2):
        output = model(clips)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_video_resnet():
    compare(video_resnet)


# (q) Hugging Face transformers' Trainer reduced to its training step (trainer.py and trainer_pt_utils.py): the CPU
# bf16 path (use_cpu_amp: autocast_smart_context_manager's torch.cpu.amp.autocast(cache_enabled=, dtype=torch.bfloat16)
# when torch.cuda.is_available() is False, else torch.cuda.amp.autocast), _prepare_input's recursion over Mappings,
# tuples and lists with .to(**kwargs), compute_loss reading outputs["loss"] from a dict-like ModelOutput, LabelSmoother
# (padding_mask by labels.eq(ignore_index), labels.clamp(min=0), log_probs.gather, sum(dim=-1, keepdim=True,
# dtype=torch.float32), masked_fill_, num_active_elements by numel() - long().sum()), loss / gradient_accumulation_steps,
# clip_grad_norm_, AdamW over get_parameter_names' no-decay split, get_linear_schedule_with_warmup as a LambdaLR, and
# model.zero_grad() after each optimizer step
def hf_trainer_step(m, state=None):
    torch, nn = m.torch, m.nn
    import contextlib
    from collections.abc import Mapping
    from dataclasses import dataclass
    torch.manual_seed(42)
    rng = np.random.default_rng(42)

    @dataclass
    class LabelSmoother:
        epsilon: float = 0.1
        ignore_index: int = -100

        def __call__(self, model_output, labels, shift_labels=False):
            logits = model_output["logits"] if isinstance(model_output, dict) else model_output[0]
            if shift_labels:
                logits = logits[..., :-1, :].contiguous()
                labels = labels[..., 1:].contiguous()

            log_probs = -nn.functional.log_softmax(logits, dim=-1)
            if labels.dim() == log_probs.dim() - 1:
                labels = labels.unsqueeze(-1)

            padding_mask = labels.eq(self.ignore_index)
            # In case the ignore_index is -100, the gather will fail, so we replace labels by 0. The padding_mask
            # will ignore them in any case.
            labels = torch.clamp(labels, min=0)
            nll_loss = log_probs.gather(dim=-1, index=labels)
            # works for fp16 input tensor too, by internally upcasting it to fp32
            smoothed_loss = log_probs.sum(dim=-1, keepdim=True, dtype=torch.float32)

            nll_loss.masked_fill_(padding_mask, 0.0)
            smoothed_loss.masked_fill_(padding_mask, 0.0)

            # Take the mean over the label dimensions, then divide by the number of active elements (i.e. not-padded):
            num_active_elements = padding_mask.numel() - padding_mask.long().sum()
            nll_loss = nll_loss.sum() / num_active_elements
            smoothed_loss = smoothed_loss.sum() / (num_active_elements * log_probs.shape[-1])
            return (1 - self.epsilon) * nll_loss + self.epsilon * smoothed_loss

    def get_parameter_names(model, forbidden_layer_types):
        result = []
        for name, child in model.named_children():
            result += [
                f"{name}.{n}"
                for n in get_parameter_names(child, forbidden_layer_types)
                if not isinstance(child, tuple(forbidden_layer_types))
            ]
        # Add model specific parameters (defined with nn.Parameter) since they are not in any child.
        result += list(model._parameters.keys())
        return result

    def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
        def lr_lambda(current_step):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

        return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)

    class TokenTagger(nn.Module):
        def __init__(self, vocab=10, hidden=8, num_labels=4):
            super().__init__()
            self.embeddings = nn.Embedding(vocab, hidden)
            self.norm = nn.LayerNorm(hidden)
            self.dense = nn.Linear(hidden, hidden)
            self.classifier = nn.Linear(hidden, num_labels)

        def forward(self, input_ids, attention_mask=None, labels=None):
            h = self.norm(self.embeddings(input_ids))
            h = torch.tanh(self.dense(h)) * attention_mask.unsqueeze(-1)
            logits = self.classifier(h)
            return {"logits": logits}

    class Trainer:
        def __init__(self, model, args, train_batches):
            self.model, self.args, self.train_batches = model, args, train_batches
            self.label_smoother = LabelSmoother(epsilon=args["label_smoothing_factor"])
            self.use_cpu_amp = args["bf16"] and not torch.cuda.is_available()
            self.amp_dtype = torch.bfloat16
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def create_optimizer(self):
            decay_parameters = get_parameter_names(self.model, [nn.LayerNorm])
            decay_parameters = [name for name in decay_parameters if "bias" not in name]
            optimizer_grouped_parameters = [
                {"params": [p for n, p in self.model.named_parameters() if (n in decay_parameters and p.requires_grad)],
                 "weight_decay": self.args["weight_decay"]},
                {"params": [p for n, p in self.model.named_parameters() if (n not in decay_parameters and p.requires_grad)],
                 "weight_decay": 0.0},
            ]
            self.optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=self.args["learning_rate"],
                                               betas=(0.9, 0.999), eps=1e-8)
            self.lr_scheduler = get_linear_schedule_with_warmup(self.optimizer, 1, self.args["max_steps"])
            return [len(g["params"]) for g in optimizer_grouped_parameters]

        def autocast_smart_context_manager(self, cache_enabled=True):
            if self.use_cpu_amp:
                ctx_manager = torch.cpu.amp.autocast(cache_enabled=cache_enabled, dtype=self.amp_dtype)
            elif self.args["bf16"]:
                ctx_manager = torch.cuda.amp.autocast(cache_enabled=cache_enabled, dtype=self.amp_dtype)
            else:
                ctx_manager = contextlib.nullcontext()
            return ctx_manager

        def _prepare_input(self, data):
            if isinstance(data, Mapping):
                return type(data)({k: self._prepare_input(v) for k, v in data.items()})
            elif isinstance(data, (tuple, list)):
                return type(data)(self._prepare_input(v) for v in data)
            elif isinstance(data, torch.Tensor):
                kwargs = {"device": self.device}
                return data.to(**kwargs)
            return data

        def compute_loss(self, model, inputs, return_outputs=False):
            labels = inputs.pop("labels")
            outputs = model(**inputs)
            loss = self.label_smoother(outputs, labels)
            return (loss, outputs) if return_outputs else loss

        def training_step(self, model, inputs):
            model.train()
            inputs = self._prepare_input(inputs)
            with self.autocast_smart_context_manager():
                loss = self.compute_loss(model, inputs)
            if self.args["gradient_accumulation_steps"] > 1:
                loss = loss / self.args["gradient_accumulation_steps"]
            loss.backward()
            return loss.detach()

        def train(self):
            groups = self.create_optimizer()
            tr_loss, logs = torch.tensor(0.0).to(self.device), []
            self.model.zero_grad()
            for step, inputs in enumerate(self.train_batches):
                tr_loss_step = self.training_step(self.model, inputs)
                tr_loss += tr_loss_step
                if (step + 1) % self.args["gradient_accumulation_steps"] == 0:
                    nn.utils.clip_grad_norm_(self.model.parameters(), self.args["max_grad_norm"])
                    self.optimizer.step()
                    self.lr_scheduler.step()
                    self.model.zero_grad()
                    logs += [tr_loss.item(), self.lr_scheduler.get_last_lr()[0]]
            return groups, logs

    model = TokenTagger()
    init = load(m, model, state)
    args = {"bf16": True, "label_smoothing_factor": 0.1, "weight_decay": 0.01, "learning_rate": 5e-3, "max_steps": 3,
            "gradient_accumulation_steps": 2, "max_grad_norm": 1.0}
    batches = []
    for _ in range(4):
        labels = rng.integers(0, 4, (2, 5))
        labels[1, 3:] = -100
        batches.append({"input_ids": torch.tensor(rng.integers(0, 10, (2, 5))),
                        "attention_mask": torch.tensor((labels != -100).astype(np.int64)),
                        "labels": torch.tensor(labels)})
    trainer = Trainer(model, args, batches)
    groups, logs = trainer.train()
    assert groups == [3, 4], groups
    return init, logs + summary(model.parameters())


def test_hf_trainer_step():
    compare(hf_trainer_step)


# (r) Captum's LayerIntegratedGradients in miniature (captum/attr/_core/layer/layer_integrated_gradients.py,
# _utils/gradient.py and approximation_methods.py): _forward_layer_eval capturing a layer's output by a forward hook
# under torch.no_grad(), the hooks kept as `all_hooks: List[RemovableHandle]` (torch.utils.hooks' type), the
# Gauss-Legendre alphas and weights from np.polynomial.legendre.leggauss, the scaled features torch.cat'ed over
# the alphas with requires_grad_(), a forward hook that returns them in place of the layer's output, registered in a
# `with` block (the handle removes it on exit), torch.autograd.grad of torch.unbind(output) to the scaled features, the
# attributions as the weighted sum times (input - baseline), and the convergence delta; after a training step
def layer_integrated_gradients(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import importlib
    from typing import List
    RemovableHandle = importlib.import_module(m.torch.__name__ + ".utils.hooks").RemovableHandle
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def gauss_legendre_builders():
        def step_sizes(n):
            return list(0.5 * np.polynomial.legendre.leggauss(n)[1])

        def alphas(n):
            return list(0.5 * (1 + np.polynomial.legendre.leggauss(n)[0]))

        return step_sizes, alphas

    def _forward_layer_eval(forward_fn, inputs, layer):
        saved_layer = {}

        def forward_hook(module, inp, out):
            saved_layer[module] = out.clone()

        all_hooks: List[RemovableHandle] = []
        try:
            all_hooks.append(layer.register_forward_hook(forward_hook))
            with torch.no_grad():
                output = forward_fn(inputs)
        finally:
            for hook in all_hooks:
                hook.remove()
        return saved_layer[layer], output

    class LayerIntegratedGradients:
        def __init__(self, forward_func, layer):
            self.forward_func, self.layer = forward_func, layer

        def attribute(self, inputs, baselines, target, n_steps=8, return_convergence_delta=False):
            inputs_layer, _ = _forward_layer_eval(self.forward_func, inputs, self.layer)
            baselines_layer, _ = _forward_layer_eval(self.forward_func, baselines, self.layer)
            step_sizes_func, alphas_func = gauss_legendre_builders()
            step_sizes, alphas = step_sizes_func(n_steps), alphas_func(n_steps)
            scaled_features = torch.cat(
                [baselines_layer + alpha * (inputs_layer - baselines_layer) for alpha in alphas], dim=0
            ).requires_grad_()
            num_examples = inputs.shape[0]

            def layer_forward_hook(module, hook_inputs, out=None):
                return scaled_features

            expanded = torch.cat([inputs] * n_steps, dim=0)
            expanded_target = torch.cat([target] * n_steps, dim=0)
            with self.layer.register_forward_hook(layer_forward_hook):
                output = self.forward_func(expanded)
                output = output.gather(1, expanded_target.unsqueeze(1)).squeeze(1)
                grads = torch.autograd.grad(torch.unbind(output), scaled_features)[0]
            scaled_grads = grads.contiguous().view(n_steps, -1) * torch.tensor(step_sizes).float().view(n_steps, 1)
            total_grads = scaled_grads.reshape((n_steps, num_examples) + grads.shape[1:]).sum(dim=0)
            attributions = total_grads * (inputs_layer - baselines_layer)
            if not return_convergence_delta:
                return attributions
            with torch.no_grad():
                start = self.forward_func(baselines).gather(1, target.unsqueeze(1)).squeeze(1)
                end = self.forward_func(inputs).gather(1, target.unsqueeze(1)).squeeze(1)
            row_sums = attributions.reshape(num_examples, -1).sum(dim=1)
            return attributions, end - start - row_sums

    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 6), nn.Softplus(), nn.Linear(6, 3))
    init = load(m, model, state)
    x, y = torch.tensor(normal(rng, 3, 4)), torch.tensor(rng.integers(0, 3, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.eval()
    lig = LayerIntegratedGradients(model, model[2])
    attributions, delta = lig.attribute(x, torch.zeros_like(x), target=y, return_convergence_delta=True)
    assert len(model[2]._forward_hooks) == 0
    return init, [loss.item()] + attributions.flatten().tolist() + delta.tolist() + summary(model.parameters())


def test_layer_integrated_gradients():
    compare(layer_integrated_gradients)
