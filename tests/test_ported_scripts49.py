"""Transformer and sequence-model training as people write it now that tnet has fused attention and fused LSTM/GRU
cells, written from memory in their sources' styles and ported by their imports alone, as test_ported_scripts47.py:
karpathy's nanoGPT (causal self-attention by F.scaled_dot_product_attention(is_causal=True) with dropout_p by
self.training, the lm_head tied to wte, AdamW groups by p.dim(), the warmup-cosine lr written into param_groups,
gradient accumulation under a disabled GradScaler, estimate_loss in eval(), generate() with temperature and top-k by
topk and a -inf boolean-index write, torch.multinomial under manual_seed); a ViT over nn.TransformerEncoder(
batch_first=True, norm_first=True, activation="gelu") with a cls token and a final norm, label smoothing and
SequentialLR; the nn.Transformer translation tutorial with batch_first (generate_square_subsequent_mask, src/tgt/memory
key padding masks, teacher forcing, greedy decode through encoder and decoder); a batched BiLSTM-CRF (emissions packed
by pack_padded_sequence(enforce_sorted=False), the forward algorithm by logsumexp with masked updates by where, the
gold score by gather and advanced indexing of the transitions, Viterbi by max over a dim with backpointers); the
chatbot tutorial's GRU encoder-decoder with Luong attention (a packed, unsorted bidirectional GRU whose h_n feeds the
decoder, general and concat scores by bmm and expand, maskNLLLoss, teacher forcing by a seeded random()); a Conformer
block with LLaMA-style attention (macaron feed-forwards, nn.RMSNorm beside a hand-written one, rotary embeddings by
cos/sin caches and rotate_half's cat of halves, grouped-query attention by SDPA(enable_gqa=True) checked against
repeat_interleave, GLU, a depthwise Conv1d and BatchNorm1d, a Noam LambdaLR); and an LSTM language model over packed
sentences (pad_sequence collate, the PackedSequence's .data into a tied decoder against targets packed alike,
pad_packed_sequence and h_n in the batch's order); and Meta's llama model.py shrunk (rotary embeddings without
torch.polar by the interleaved pairs, repeat_kv by expand and reshape, a preallocated KV cache written by slice
assignment, the cache mask by triu and hstack, SDPA under sdpa_kernel(SDPBackend.MATH), SwiGLU, greedy decoding under
inference_mode checked against the full forward). Each runs in tnet, then in torch from tnet's initial weights
(state_dict through numpy), and the losses, metrics, decoded tokens and the weights summed into a few numbers agree.
The compared runs train at dropout 0; each script with dropout builds a copy at dropout > 0 and checks on each side
that eval() equals the compared model and train() draws (only shapes compared where randomness enters). Where a
parameter's gradient is mathematically zero (an attention key bias, the general score's bias: softmax is
shift-invariant), its rounding noise is what Adam steps on, so it is left out of the compared weights (and the
Conformer's depthwise convolution before BatchNorm has no bias, as such code writes it). Shapes are tiny and runs one
to three steps.

Fixed in tnet on the way: nothing; every script ran in tnet as in torch at its first run (the three first
differences, in the ViT's, the translation model's and the Luong decoder's weights and the Conformer's eval logits,
were each the rounding noise of a gradient that is zero in exact arithmetic, stepped on by Adam: see above). Probes
beside them (SDPA's grouped-query heads with causal, bool and broadcast float masks and their gradients, 3-D inputs,
fully masked rows, dropout's scaling and seeding, sdpa_kernel and the older sdp_kernel flags, MultiheadAttention's
kdim/vdim, add_bias_kv, add_zero_attn and per-head weights, the decoder layer's norm_first and bias=False, packed
bidirectional LSTMs with proj_size and GRUs with h0 and their gradients, pack_sequence, unpack_sequence,
unpad_sequence, rms_norm, logsumexp over several dims and -inf rows, the recurrent layers' dropout between layers and
their constructor errors, crop_block_size's buffer and parameter reassignment, the error types of wrong shapes) found
tnet as torch but for the ones below.

Found and left as they are: torch's CPU fast paths accept what its documentation and its math backend refuse, and
tnet raises as the documentation says: F.scaled_dot_product_attention with both attn_mask and is_causal=True runs on
torch's CPU for 4-D inputs (both masks applied) but raises the RuntimeError "Explicit attn_mask should not be set when
is_causal=True" for 3-D ones, as tnet does for all; pack_padded_sequence(enforce_sorted=False) with a length longer
than the input or fewer lengths than the batch packs on torch's CPU (reading past the input, or dropping sequences)
where tnet raises; torch.multinomial without replacement asked for more samples than nonzero categories returns the
zero-probability ones on torch's CPU where tnet raises torch's "invalid multinomial distribution" error.
"""
import math
from contextlib import nullcontext

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def attention_summary(model):
    """summary of model's parameters, of nn.MultiheadAttention's in_proj_bias its query and value thirds only: the key
    bias moves no output (softmax is shift-invariant), so its gradient is rounding noise that Adam scales up to
    lr-sized steps."""
    params = [p for n, p in model.named_parameters() if not n.endswith('in_proj_bias')]
    for n, p in model.named_parameters():
        if n.endswith('in_proj_bias'):
            d = p.shape[0] // 3
            params += [p[:d], p[2 * d:]]
    return summary(params)


# (a) karpathy's nanoGPT model.py and train.py: GPTConfig as a dataclass-like class, CausalSelfAttention with one
# c_attn Linear split by .split(n_embd, dim=2), heads by view and transpose(1, 2), F.scaled_dot_product_attention with
# attn_mask=None, dropout_p=self.dropout if self.training else 0 and is_causal=True, new_gelu MLP, the lm_head tied to
# wte (self.transformer.wte.weight = self.lm_head.weight), _init_weights through apply with c_proj.weight scaled by
# 0.02 / sqrt(2 * n_layer), targets=None returning logits[:, [-1], :], configure_optimizers splitting decay groups by
# p.dim() >= 2 over named_parameters (tied weight once), AdamW(betas=(0.9, 0.95)), get_lr's warmup and cosine decay
# written into param_groups, ctx = nullcontext(), GradScaler(enabled=False) with scale/unscale_/clip_grad_norm_/
# step/update, estimate_loss under torch.no_grad() in eval(), and generate() with temperature, top-k by
# torch.topk and logits[logits < v[:, [-1]]] = -float('Inf'), torch.multinomial under torch.manual_seed. The compared
# run trains with dropout 0; with dropout > 0, train() draws and eval() does not (checked on each side); sampling
# with top_k=1 is greedy and compared, sampling with top_k=5 is compared only for its shape and vocabulary range.
def nanogpt(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rng = np.random.default_rng(0)

    class GPTConfig:
        def __init__(self, **kw):
            self.block_size, self.vocab_size, self.n_layer, self.n_head, self.n_embd = 8, 17, 1, 2, 16
            self.dropout, self.bias = 0.0, True
            self.__dict__.update(kw)

    class LayerNorm(nn.Module):
        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout
            self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention')
            assert self.flash

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        def get_num_params(self, non_embedding=True):
            n_params = sum(p.numel() for p in self.parameters())
            if non_embedding:
                n_params -= self.transformer.wpe.weight.numel()
            return n_params

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters()}
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [{'params': decay_params, 'weight_decay': weight_decay},
                            {'params': nodecay_params, 'weight_decay': 0.0}]
            self.num_decay = sum(p.numel() for p in decay_params)
            use_fused = device_type == 'cuda'
            extra_args = dict(fused=True) if use_fused else dict()
            return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float('Inf')
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    torch.manual_seed(1337)
    config = GPTConfig()
    model = GPT(config)
    init = load(m, model, state)
    assert model.transformer.wte.weight is model.lm_head.weight
    assert len(list(model.parameters())) == len(model.state_dict()) - 1
    data = rng.integers(0, config.vocab_size, 200)

    def get_batch(split, batch_size=3):
        ix = rng.integers(0, len(data) - config.block_size, batch_size)
        x = torch.stack([torch.from_numpy((data[i:i + config.block_size]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + config.block_size]).astype(np.int64)) for i in ix])
        return x, y

    learning_rate, warmup_iters, lr_decay_iters, min_lr = 6e-3, 1, 3, 6e-4

    def get_lr(it):
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (learning_rate - min_lr)

    @torch.no_grad()
    def estimate_loss(eval_iters=1):
        out = {}
        model.eval()
        for split in ['train', 'val']:
            losses = torch.zeros(eval_iters)
            for k in range(eval_iters):
                X, Y = get_batch(split)
                logits, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    ctx = nullcontext()
    scaler = torch.amp.GradScaler('cuda', enabled=False)
    optimizer = model.configure_optimizers(0.1, learning_rate, (0.9, 0.95), 'cpu')
    gradient_accumulation_steps, grad_clip = 2, 1.0
    record = []
    X, Y = get_batch('train')
    for iter_num in range(2):
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
        if iter_num == 1:
            losses = estimate_loss()
            record += [float(losses['train']), float(losses['val'])]
        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps
            X, Y = get_batch('train')
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            record.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)))
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        record.append(loss.item() * gradient_accumulation_steps)
    model.eval()
    start = torch.tensor([[1, 2, 3]], dtype=torch.long)
    greedy = model.generate(start, 4, temperature=0.8, top_k=1)
    record += greedy[0].tolist()
    torch.manual_seed(42)
    sampled = model.generate(start.repeat(2, 1), 3, temperature=0.8, top_k=5)
    assert tuple(sampled.shape) == (2, 6) and 0 <= int(sampled.min()) and int(sampled.max()) < config.vocab_size
    assert sampled[:, :3].tolist() == [[1, 2, 3]] * 2
    logits, none = model(start)
    assert none is None and tuple(logits.shape) == (1, 1, config.vocab_size)
    record += logits.flatten().tolist()[:5]
    # dropout > 0: eval() is deterministic and equal to the same weights at dropout 0; train() draws
    dropped = GPT(GPTConfig(dropout=0.2))
    dropped.load_state_dict(model.state_dict())
    dropped.eval()
    a, _ = dropped(X, Y)
    b, _ = model(X, Y)
    assert torch.allclose(a, b, atol=1e-6)
    dropped.train()
    c, _ = dropped(X, Y)
    d, _ = dropped(X, Y)
    assert not torch.allclose(c, d) and tuple(c.shape) == tuple(a.shape)
    return init, record + [model.get_num_params(), model.num_decay] + summary(model.parameters())


def test_nanogpt():
    compare(nanogpt)


# (b) a small ViT as tutorials write it over nn.TransformerEncoder: PatchEmbedding by a strided Conv2d then
# flatten(2).transpose(1, 2), a cls token nn.Parameter(torch.zeros(1, 1, D)) expanded to the batch and cat'ed, the
# position embedding trunc_normal_'d, nn.TransformerEncoderLayer(batch_first=True, norm_first=True,
# activation="gelu") stacked with a final LayerNorm handed as norm= (enable_nested_tensor=False), the head on x[:, 0],
# AdamW with label_smoothing in CrossEntropyLoss, LinearLR warmup chained to CosineAnnealingLR by SequentialLR, top-1
# accuracy under eval() and torch.inference_mode(). The compared run trains at dropout 0; a copy at dropout 0.1 is
# equal in eval() and draws in train().
def vit(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    rng = np.random.default_rng(2)

    class PatchEmbedding(nn.Module):
        def __init__(self, img_size=8, patch_size=4, in_chans=3, embed_dim=16):
            super().__init__()
            self.num_patches = (img_size // patch_size) ** 2
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

        def forward(self, x):
            return self.proj(x).flatten(2).transpose(1, 2)

    class ViT(nn.Module):
        def __init__(self, num_classes=5, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0, dropout=0.0):
            super().__init__()
            self.patch_embed = PatchEmbedding(embed_dim=embed_dim)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, 1 + self.patch_embed.num_patches, embed_dim))
            self.pos_drop = nn.Dropout(p=dropout)
            layer = nn.TransformerEncoderLayer(d_model=embed_dim, nhead=num_heads,
                                               dim_feedforward=int(embed_dim * mlp_ratio), dropout=dropout,
                                               activation="gelu", batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=depth, norm=nn.LayerNorm(embed_dim),
                                                 enable_nested_tensor=False)
            self.head = nn.Linear(embed_dim, num_classes)
            nn.init.trunc_normal_(self.pos_embed, std=0.02)
            nn.init.trunc_normal_(self.cls_token, std=0.02)

        def forward(self, x):
            B = x.shape[0]
            x = self.patch_embed(x)
            cls_tokens = self.cls_token.expand(B, -1, -1)
            x = torch.cat((cls_tokens, x), dim=1)
            x = self.pos_drop(x + self.pos_embed)
            x = self.encoder(x)
            return self.head(x[:, 0])

    model = ViT()
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
    warmup = optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=1)
    cosine = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=2, eta_min=1e-5)
    scheduler = optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warmup, cosine], milestones=[1])
    images = torch.tensor(normal(rng, 3, 3, 8, 8))
    labels = torch.tensor(rng.integers(0, 5, 3))
    record = []
    model.train()
    for step in range(2):
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        record += [loss.item(), scheduler.get_last_lr()[0]]
    model.eval()
    with torch.inference_mode():
        logits = model(images)
        correct = (logits.argmax(dim=1) == labels).sum().item()
    record += [correct] + logits.flatten().tolist()
    dropped = ViT(dropout=0.1)
    dropped.load_state_dict(model.state_dict())
    dropped.eval()
    with torch.no_grad():
        assert torch.allclose(dropped(images), logits, atol=1e-5)
        dropped.train()
        assert not torch.allclose(dropped(images), dropped(images))
    return init, record + attention_summary(model)


def test_vit():
    compare(vit)


# (c) the nn.Transformer translation tutorial's Seq2SeqTransformer as people adapt it with batch_first=True:
# TokenEmbedding scaled by math.sqrt(emb_size), PositionalEncoding as a registered buffer of sin and cos over
# torch.exp(-torch.arange(0, E, 2) * math.log(10000) / E), create_mask by nn.Transformer
# .generate_square_subsequent_mask and `src == PAD_IDX` key padding masks, teacher forcing by tgt[:, :-1] in and
# tgt[:, 1:] out, CrossEntropyLoss(ignore_index=PAD_IDX), Adam(betas=(0.9, 0.98), eps=1e-9), and greedy_decode through
# model.encode / model.decode with a growing ys, ending at EOS.
def seq2seq_transformer(m, state=None):
    torch, nn = m.torch, m.nn
    rng = np.random.default_rng(3)
    PAD_IDX, BOS_IDX, EOS_IDX, V = 0, 1, 2, 11

    class PositionalEncoding(nn.Module):
        def __init__(self, emb_size, dropout, maxlen=16):
            super().__init__()
            den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
            pos = torch.arange(0, maxlen).reshape(maxlen, 1)
            pos_embedding = torch.zeros((maxlen, emb_size))
            pos_embedding[:, 0::2] = torch.sin(pos * den)
            pos_embedding[:, 1::2] = torch.cos(pos * den)
            pos_embedding = pos_embedding.unsqueeze(0)
            self.dropout = nn.Dropout(dropout)
            self.register_buffer('pos_embedding', pos_embedding)

        def forward(self, token_embedding):
            return self.dropout(token_embedding + self.pos_embedding[:, :token_embedding.size(1), :])

    class TokenEmbedding(nn.Module):
        def __init__(self, vocab_size, emb_size):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_size)
            self.emb_size = emb_size

        def forward(self, tokens):
            return self.embedding(tokens.long()) * math.sqrt(self.emb_size)

    class Seq2SeqTransformer(nn.Module):
        def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size, tgt_vocab_size,
                     dim_feedforward=32, dropout=0.0):
            super().__init__()
            self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                              num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                                              dropout=dropout, batch_first=True)
            self.generator = nn.Linear(emb_size, tgt_vocab_size)
            self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
            self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
            self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

        def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
            src_emb = self.positional_encoding(self.src_tok_emb(src))
            tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
            outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask,
                                    memory_key_padding_mask)
            return self.generator(outs)

        def encode(self, src, src_mask):
            return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

        def decode(self, tgt, memory, tgt_mask):
            return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)

    def create_mask(src, tgt):
        src_seq_len, tgt_seq_len = src.shape[1], tgt.shape[1]
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_seq_len)
        src_mask = torch.zeros((src_seq_len, src_seq_len)).type(torch.bool)
        src_padding_mask = (src == PAD_IDX)
        tgt_padding_mask = (tgt == PAD_IDX)
        return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

    def greedy_decode(model, src, src_mask, max_len, start_symbol):
        memory = model.encode(src, src_mask)
        ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long)
        for i in range(max_len - 1):
            tgt_mask = nn.Transformer.generate_square_subsequent_mask(ys.size(1)).type(torch.bool)
            out = model.decode(ys, memory, tgt_mask)
            prob = model.generator(out[:, -1])
            _, next_word = torch.max(prob, dim=1)
            next_word = next_word.item()
            ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=1)
            if next_word == EOS_IDX:
                break
        return ys

    def batch(lengths, T):
        out = np.full((len(lengths), T), PAD_IDX)
        for i, n in enumerate(lengths):
            out[i, 0], out[i, 1:n - 1], out[i, n - 1] = BOS_IDX, rng.integers(3, V, n - 2), EOS_IDX
        return torch.tensor(out)

    model = Seq2SeqTransformer(1, 1, 16, 2, V, V)
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    init = load(m, model, state)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    record = []
    src, tgt = batch([6, 4, 5], 6), batch([5, 6, 3], 6)
    model.train()
    for step in range(2):
        tgt_input = tgt[:, :-1]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        optimizer.zero_grad()
        tgt_out = tgt[:, 1:]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    model.eval()
    with torch.no_grad():
        one = src[1:2, :4]
        ys = greedy_decode(model, one, torch.zeros(4, 4).type(torch.bool), max_len=5, start_symbol=BOS_IDX)
        memory = model.encode(one, None)
    record += ys.flatten().tolist() + memory.sum(dim=(0, 2)).tolist()
    return init, record + attention_summary(model)


def test_seq2seq_transformer():
    compare(seq2seq_transformer)


# (d) a batched BiLSTM-CRF tagger in the style of the PyTorch "Advanced: Making Dynamic Decisions" tutorial as
# repositories batch it: the emissions of a bidirectional nn.LSTM packed by pack_padded_sequence(enforce_sorted=False)
# and pad_packed_sequence'd back, a transitions nn.Parameter with the START row and STOP column set to -10000 through
# .data, the forward algorithm by torch.logsumexp over broadcast scores with masked updates by torch.where, the gold
# path score by gather over tags shifted by one and cat'ed after a START column, Viterbi by max over dim 1 keeping
# backpointers, the best paths read back on the host; SGD with weight_decay
def bilstm_crf(m, state=None):
    torch, nn = m.torch, m.nn
    from importlib import import_module
    rnn_utils = import_module(torch.__name__ + ".nn.utils.rnn")
    rng = np.random.default_rng(4)
    V, T = 12, 3
    START, STOP = T, T + 1

    class BiLSTM_CRF(nn.Module):
        def __init__(self, vocab_size, tagset_size, embedding_dim=8, hidden_dim=8):
            super().__init__()
            self.tagset_size = tagset_size + 2
            self.word_embeds = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True, batch_first=True)
            self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
            self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))
            self.transitions.data[START, :] = -10000
            self.transitions.data[:, STOP] = -10000

        def _get_lstm_features(self, sentences, lengths):
            embeds = self.word_embeds(sentences)
            packed = rnn_utils.pack_padded_sequence(embeds, lengths, batch_first=True, enforce_sorted=False)
            lstm_out, _ = self.lstm(packed)
            lstm_out, _ = rnn_utils.pad_packed_sequence(lstm_out, batch_first=True, total_length=sentences.size(1))
            return self.hidden2tag(lstm_out)

        def _forward_alg(self, feats, mask):
            B, L, K = feats.shape
            alpha = torch.full((B, K), -10000.)
            alpha[:, START] = 0.
            for t in range(L):
                scores = alpha.unsqueeze(2) + self.transitions.t().unsqueeze(0) + feats[:, t].unsqueeze(1)
                new = torch.logsumexp(scores, dim=1)
                alpha = torch.where(mask[:, t].unsqueeze(1), new, alpha)
            return torch.logsumexp(alpha + self.transitions[STOP].unsqueeze(0), dim=1)

        def _score_sentence(self, feats, tags, mask):
            B = feats.size(0)
            tags = torch.cat([torch.full((B, 1), START, dtype=torch.long), tags], dim=1)
            emit = feats.gather(2, tags[:, 1:].unsqueeze(2)).squeeze(2)
            trans = self.transitions[tags[:, 1:], tags[:, :-1]]
            score = ((emit + trans) * mask.float()).sum(1)
            last = tags.gather(1, mask.long().sum(1, keepdim=True)).squeeze(1)
            return score + self.transitions[STOP, last]

        def neg_log_likelihood(self, sentences, tags, lengths):
            mask = sentences != 0
            feats = self._get_lstm_features(sentences, lengths)
            return (self._forward_alg(feats, mask) - self._score_sentence(feats, tags, mask)).mean()

        def _viterbi_decode(self, feats, mask):
            B, L, K = feats.shape
            score = torch.full((B, K), -10000.)
            score[:, START] = 0
            backpointers = []
            for t in range(L):
                next_score = score.unsqueeze(2) + self.transitions.t().unsqueeze(0)
                best, idx = next_score.max(dim=1)
                best = best + feats[:, t]
                backpointers.append(idx)
                score = torch.where(mask[:, t].unsqueeze(1), best, score)
            score = score + self.transitions[STOP]
            best_score, best_last = score.max(1)
            paths = []
            lengths = mask.sum(1).tolist()
            bps = torch.stack(backpointers, 1).cpu().numpy()
            for b in range(B):
                tag = int(best_last[b])
                path = [tag]
                for t in range(lengths[b] - 1, 0, -1):
                    tag = int(bps[b, t, tag])
                    path.append(tag)
                paths.append(path[::-1])
            return best_score, paths

        def forward(self, sentences, lengths):
            return self._viterbi_decode(self._get_lstm_features(sentences, lengths), sentences != 0)

    model = BiLSTM_CRF(V, T)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4)
    lengths = [4, 2, 3]
    sentences, tags = np.zeros((3, 4), np.int64), np.zeros((3, 4), np.int64)
    for i, n in enumerate(lengths):
        sentences[i, :n], tags[i, :n] = rng.integers(1, V, n), rng.integers(0, T, n)
    sentences, tags = torch.tensor(sentences), torch.tensor(tags)
    record = []
    for epoch in range(2):
        model.zero_grad()
        loss = model.neg_log_likelihood(sentences, tags, torch.tensor(lengths))
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    with torch.no_grad():
        best_score, paths = model(sentences, lengths)
    assert [len(p) for p in paths] == lengths
    return init, record + best_score.tolist() + sum(paths, []) + summary(model.parameters())


def test_bilstm_crf():
    compare(bilstm_crf)


# (e) a GRU encoder-decoder with Luong attention in the style of the PyTorch chatbot tutorial as repositories batch it:
# EncoderRNN over a bidirectional nn.GRU(n_layers=2, dropout=) fed by pack_padded_sequence(enforce_sorted=False), its
# two directions summed (outputs[:, :, :H] + outputs[:, :, H:]), the decoder started from encoder_hidden[:n_layers]
# (h_n in the batch's own order), Attn's general and concat scores (the general score by torch.bmm of the
# decoder state with self.attn(encoder_outputs), concat by expand and tanh), masked_fill of the padding with -1e10
# and softmax, the context by attn_weights.bmm(encoder_outputs), concat layer and tanh, teacher forcing decided per
# step by a seeded random.random(), maskNLLLoss by gather, masked_select and mean over real tokens,
# clip_grad_norm_ over each model's parameters and two Adam optimizers (the decoder's lr scaled by
# decoder_learning_ratio). The compared run trains at dropout 0; eval() greedy decoding is compared.
def gru_luong(m, state=None):
    import random
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    from importlib import import_module
    rnn_utils = import_module(torch.__name__ + ".nn.utils.rnn")
    np_rng = np.random.default_rng(5)
    PAD, SOS, V, H, n_layers = 0, 1, 10, 8, 2

    class EncoderRNN(nn.Module):
        def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
            super(EncoderRNN, self).__init__()
            self.n_layers, self.hidden_size, self.embedding = n_layers, hidden_size, embedding
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout),
                              bidirectional=True)

        def forward(self, input_seq, input_lengths, hidden=None):
            embedded = self.embedding(input_seq)
            packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths, enforce_sorted=False)
            outputs, hidden = self.gru(packed, hidden)
            outputs, _ = rnn_utils.pad_packed_sequence(outputs)
            outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
            return outputs, hidden

    class Attn(nn.Module):
        def __init__(self, method, hidden_size):
            super(Attn, self).__init__()
            self.method, self.hidden_size = method, hidden_size
            if self.method == 'general':
                self.attn = nn.Linear(self.hidden_size, hidden_size)
            elif self.method == 'concat':
                self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
                self.v = nn.Parameter(torch.FloatTensor(hidden_size).uniform_(-0.1, 0.1))

        def dot_score(self, hidden, encoder_output):
            return torch.sum(hidden * encoder_output, dim=2)

        def general_score(self, hidden, encoder_output):
            # [B, 1, H] x [B, H, L]
            energy = self.attn(encoder_output).transpose(0, 1)
            return torch.bmm(hidden.transpose(0, 1), energy.transpose(1, 2)).squeeze(1).t()

        def concat_score(self, hidden, encoder_output):
            energy = self.attn(torch.cat((hidden.expand(encoder_output.size(0), -1, -1), encoder_output), 2)).tanh()
            return torch.sum(self.v * energy, dim=2)

        def forward(self, hidden, encoder_outputs, mask):
            attn_energies = getattr(self, self.method + '_score')(hidden, encoder_outputs).t()
            attn_energies = attn_energies.masked_fill(mask == 0, -1e10)
            return F.softmax(attn_energies, dim=1).unsqueeze(1)

    class LuongAttnDecoderRNN(nn.Module):
        def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
            super(LuongAttnDecoderRNN, self).__init__()
            self.embedding = embedding
            self.embedding_dropout = nn.Dropout(dropout)
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout))
            self.concat = nn.Linear(hidden_size * 2, hidden_size)
            self.out = nn.Linear(hidden_size, output_size)
            self.attn = Attn(attn_model, hidden_size)

        def forward(self, input_step, last_hidden, encoder_outputs, mask):
            embedded = self.embedding_dropout(self.embedding(input_step))
            rnn_output, hidden = self.gru(embedded, last_hidden)
            attn_weights = self.attn(rnn_output, encoder_outputs, mask)
            context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
            rnn_output, context = rnn_output.squeeze(0), context.squeeze(1)
            concat_output = torch.tanh(self.concat(torch.cat((rnn_output, context), 1)))
            return F.softmax(self.out(concat_output), dim=1), hidden

    def maskNLLLoss(inp, target, mask):
        nTotal = mask.sum()
        crossEntropy = -torch.log(torch.gather(inp, 1, target.view(-1, 1)).squeeze(1))
        loss = crossEntropy.masked_select(mask).mean()
        return loss, nTotal.item()

    def seqs(lengths, T):
        out = np.full((T, len(lengths)), PAD)
        for i, n in enumerate(lengths):
            out[:n, i] = np_rng.integers(2, V, n)
        return torch.tensor(out)

    embedding = nn.Embedding(V, H)
    encoder = EncoderRNN(H, embedding, n_layers, 0.0)
    decoders = {method: LuongAttnDecoderRNN(method, embedding, H, V, n_layers, 0.0)
                for method in ('general', 'concat')}
    init = load(m, nn.ModuleDict({'encoder': encoder, **decoders}), state)
    lengths = [3, 5, 4]
    input_variable, target_variable = seqs(lengths, 5), seqs([4, 2, 3], 4)
    mask = target_variable != PAD
    src_mask = (input_variable != PAD).t()
    random.seed(0)
    record = []
    for method, decoder in decoders.items():
        encoder_optimizer = optim.Adam(encoder.parameters(), lr=1e-3)
        decoder_optimizer = optim.Adam(decoder.parameters(), lr=1e-3 * 5.0)
        encoder.train()
        decoder.train()
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        encoder_outputs, encoder_hidden = encoder(input_variable, torch.tensor(lengths))
        decoder_input = torch.LongTensor([[SOS for _ in range(3)]])
        decoder_hidden = encoder_hidden[:decoder.gru.num_layers]
        loss, print_losses, n_totals = 0, [], 0
        use_teacher_forcing = random.random() < 0.5
        for t in range(target_variable.size(0)):
            decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs, src_mask)
            if use_teacher_forcing:
                decoder_input = target_variable[t].view(1, -1)
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = torch.LongTensor([[topi[i][0] for i in range(3)]])
            mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
            loss += mask_loss
            print_losses.append(mask_loss.item() * nTotal)
            n_totals += nTotal
        loss.backward()
        record.append(float(nn.utils.clip_grad_norm_(encoder.parameters(), 50.0)))
        record.append(float(nn.utils.clip_grad_norm_(decoder.parameters(), 50.0)))
        encoder_optimizer.step()
        decoder_optimizer.step()
        record += [sum(print_losses) / n_totals, use_teacher_forcing]
        encoder.eval()
        decoder.eval()
        with torch.no_grad():
            encoder_outputs, encoder_hidden = encoder(input_variable[:, 1:2], [lengths[1]])
            decoder_hidden = encoder_hidden[:decoder.gru.num_layers]
            decoder_input = torch.ones(1, 1, dtype=torch.long) * SOS
            for _ in range(2):
                decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs,
                                                         src_mask[1:2])
                decoder_scores, decoder_input = torch.max(decoder_output, dim=1)
                record += [decoder_input.item(), decoder_scores.item()]
                decoder_input = torch.unsqueeze(decoder_input, 0)
    # the general score's bias adds one number to every position's energy, which softmax ignores: its gradient is
    # rounding noise that Adam scales up to lr-sized steps, so it is left out of the compared weights
    decoder_params = [p for d in decoders.values() for n, p in d.named_parameters() if n != 'attn.attn.bias'
                      or d.attn.method != 'general']
    return init, record + summary(encoder.parameters()) + summary(decoder_params)


def test_gru_luong():
    compare(gru_luong)


# (f) a Conformer block with a LLaMA-style attention in the style of lucidrains' conformer and of the LLaMA ports:
# two macaron half-step FeedForwards with SiLU (Swish), RMSNorm (nn.RMSNorm and one written by hand with
# torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)), rotary embeddings by cos/sin caches built from torch.outer of
# positions and inv_freq, cat'ed with themselves, and rotate_half by cat of the negated second half and the first,
# grouped-query attention with n_kv_heads < n_heads both by F.scaled_dot_product_attention(enable_gqa=True) and by
# repeat_kv written with repeat_interleave (checked equal), the convolution module (pointwise Conv1d to 2C,
# nn.GLU(dim=1), a depthwise Conv1d with padding K // 2 and no bias before BatchNorm1d, SiLU, pointwise Conv1d),
# CTC-free frame classification by cross_entropy over [B, C, T] logits, AdamW with a LambdaLR Noam schedule. train()
# and eval() differ by BatchNorm;
# dropout is 0 in the compared run and only drawn in a separate train() check.
def conformer_gqa(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(6)
    dim, n_heads, n_kv_heads, T, B = 16, 4, 2, 6, 2
    head_dim = dim // n_heads

    class RMSNorm(torch.nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def _norm(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

        def forward(self, x):
            return self._norm(x.float()).type_as(x) * self.weight

    def rotate_half(x):
        x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    class RotaryEmbedding(nn.Module):
        def __init__(self, dim, max_position_embeddings=32, base=10000):
            super().__init__()
            inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
            self.register_buffer("inv_freq", inv_freq, persistent=False)
            t = torch.arange(max_position_embeddings, dtype=self.inv_freq.dtype)
            freqs = torch.outer(t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self.register_buffer("cos_cached", emb.cos(), persistent=False)
            self.register_buffer("sin_cached", emb.sin(), persistent=False)

        def forward(self, x, seq_len):
            return self.cos_cached[:seq_len].to(dtype=x.dtype), self.sin_cached[:seq_len].to(dtype=x.dtype)

    def apply_rotary_pos_emb(q, k, cos, sin):
        cos, sin = cos[None, None], sin[None, None]
        return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)

    def repeat_kv(x, n_rep):
        if n_rep == 1:
            return x
        return torch.repeat_interleave(x, dim=1, repeats=n_rep)

    class Attention(nn.Module):
        def __init__(self, dropout=0.0):
            super().__init__()
            self.wq = nn.Linear(dim, n_heads * head_dim, bias=False)
            self.wk = nn.Linear(dim, n_kv_heads * head_dim, bias=False)
            self.wv = nn.Linear(dim, n_kv_heads * head_dim, bias=False)
            self.wo = nn.Linear(n_heads * head_dim, dim, bias=False)
            self.rotary = RotaryEmbedding(head_dim)
            self.dropout = dropout
            self.use_gqa = True

        def forward(self, x):
            bsz, seqlen, _ = x.shape
            xq = self.wq(x).view(bsz, seqlen, n_heads, head_dim).transpose(1, 2)
            xk = self.wk(x).view(bsz, seqlen, n_kv_heads, head_dim).transpose(1, 2)
            xv = self.wv(x).view(bsz, seqlen, n_kv_heads, head_dim).transpose(1, 2)
            cos, sin = self.rotary(xv, seq_len=seqlen)
            xq, xk = apply_rotary_pos_emb(xq, xk, cos, sin)
            p = self.dropout if self.training else 0.0
            if self.use_gqa:
                out = F.scaled_dot_product_attention(xq, xk, xv, dropout_p=p, enable_gqa=True)
            else:
                keys, values = repeat_kv(xk, n_heads // n_kv_heads), repeat_kv(xv, n_heads // n_kv_heads)
                scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(head_dim)
                scores = F.softmax(scores.float(), dim=-1).type_as(xq)
                out = torch.matmul(F.dropout(scores, p, self.training), values)
            return self.wo(out.transpose(1, 2).contiguous().view(bsz, seqlen, -1))

    class FeedForward(nn.Module):
        def __init__(self, mult=2, dropout=0.0):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(dim, dim * mult), nn.SiLU(), nn.Dropout(dropout),
                                     nn.Linear(dim * mult, dim), nn.Dropout(dropout))

        def forward(self, x):
            return self.net(x)

    class ConformerConvModule(nn.Module):
        def __init__(self, kernel_size=3, dropout=0.0):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.pointwise1 = nn.Conv1d(dim, dim * 2, 1)
            self.glu = nn.GLU(dim=1)
            self.depthwise = nn.Conv1d(dim, dim, kernel_size, padding=kernel_size // 2, groups=dim, bias=False)
            self.bn = nn.BatchNorm1d(dim)
            self.act = nn.SiLU()
            self.pointwise2 = nn.Conv1d(dim, dim, 1)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            x = self.norm(x).transpose(1, 2)
            x = self.glu(self.pointwise1(x))
            x = self.act(self.bn(self.depthwise(x)))
            return self.dropout(self.pointwise2(x).transpose(1, 2))

    class ConformerBlock(nn.Module):
        def __init__(self, dropout=0.0):
            super().__init__()
            self.ff1, self.ff2 = FeedForward(dropout=dropout), FeedForward(dropout=dropout)
            self.ff1_norm, self.ff2_norm = nn.RMSNorm(dim, eps=1e-6), RMSNorm(dim)
            self.attn_norm = RMSNorm(dim)
            self.attn = Attention(dropout)
            self.conv = ConformerConvModule(dropout=dropout)
            self.post_norm = nn.LayerNorm(dim)

        def forward(self, x):
            x = 0.5 * self.ff1(self.ff1_norm(x)) + x
            x = self.attn(self.attn_norm(x)) + x
            x = self.conv(x) + x
            x = 0.5 * self.ff2(self.ff2_norm(x)) + x
            return self.post_norm(x)

    class Model(nn.Module):
        def __init__(self, n_classes=5, dropout=0.0):
            super().__init__()
            self.input_proj = nn.Linear(8, dim)
            self.block = ConformerBlock(dropout)
            self.classifier = nn.Conv1d(dim, n_classes, 1)

        def forward(self, feats):
            return self.classifier(self.block(self.input_proj(feats)).transpose(1, 2))

    model = Model()
    init = load(m, model, state)
    feats = torch.tensor(normal(rng, B, T, 8))
    labels = torch.tensor(rng.integers(0, 5, (B, T)))
    warmup, d_model = 2, dim
    optimizer = optim.AdamW(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, weight_decay=1e-3)
    scheduler = optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: d_model ** -0.5 * min((step + 1) ** -0.5, (step + 1) * warmup ** -1.5))
    record = []
    model.train()
    for step in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(feats), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        record += [loss.item(), optimizer.param_groups[0]['lr']]
    model.eval()
    with torch.no_grad():
        logits = model(feats)
        model.block.attn.use_gqa = False
        assert torch.allclose(model(feats), logits, atol=1e-5)
        x = torch.tensor(normal(rng, B, n_kv_heads, T, head_dim))
        assert torch.equal(repeat_kv(x, 2)[:, 1], x[:, 0]) and torch.equal(repeat_kv(x, 2)[:, 2], x[:, 1])
    record += logits.sum(dim=(0, 2)).tolist() + model.block.conv.bn.running_var.tolist()
    dropped = Model(dropout=0.2)
    dropped.load_state_dict(model.state_dict())
    dropped.eval()
    with torch.no_grad():
        assert torch.allclose(dropped(feats), logits, atol=1e-5)
        dropped.train()
        a, b = dropped(feats), dropped(feats)
        assert not torch.allclose(a, b) and tuple(a.shape) == (B, 5, T)
    return init, record + summary(model.parameters())


def test_conformer_gqa():
    compare(conformer_gqa)


# (g) an LSTM language model over variable-length sentences as people write it with packed sequences: a collate_fn of
# pad_sequence(batch_first=True, padding_value=PAD) and a lengths tensor, inputs and targets shifted by one,
# pack_padded_sequence(enforce_sorted=False) of the embeddings, a 2-layer nn.LSTM whose PackedSequence output's .data
# goes straight into the tied decoder, the targets packed the same way so that their .data lines up, cross_entropy
# over the packed rows, perplexity by math.exp, clip_grad_norm_, SGD with momentum; an eval() pass through
# pad_packed_sequence checks the padded logits' real rows against the packed ones.
def packed_lstm_lm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    rnn_utils = import_module(torch.__name__ + ".nn.utils.rnn")
    rng = np.random.default_rng(7)
    PAD, V, E = 0, 13, 8

    class RNNLM(nn.Module):
        def __init__(self, vocab_size, embed_size, num_layers=2, dropout=0.0):
            super().__init__()
            self.embed = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
            self.lstm = nn.LSTM(embed_size, embed_size, num_layers, batch_first=True, dropout=dropout)
            self.linear = nn.Linear(embed_size, vocab_size)
            self.linear.weight = self.embed.weight

        def forward(self, x, lengths, h=None):
            packed = rnn_utils.pack_padded_sequence(self.embed(x), lengths.cpu(), batch_first=True,
                                                    enforce_sorted=False)
            out, (h, c) = self.lstm(packed, h)
            return self.linear(out.data), out, (h, c)

    def collate_fn(batch):
        seqs = [torch.tensor(s) for s in batch]
        lengths = torch.tensor([len(s) - 1 for s in seqs])
        padded = rnn_utils.pad_sequence(seqs, batch_first=True, padding_value=PAD)
        return padded[:, :-1], padded[:, 1:], lengths

    model = RNNLM(V, E)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    sentences = [rng.integers(1, V, n) for n in (5, 3, 6, 4)]
    record = []
    model.train()
    for step in range(2):
        inputs, targets, lengths = collate_fn(sentences[2 * step:2 * step + 2] + sentences[:1])
        logits, _, _ = model(inputs, lengths)
        packed_targets = rnn_utils.pack_padded_sequence(targets, lengths, batch_first=True, enforce_sorted=False)
        loss = F.cross_entropy(logits, packed_targets.data)
        optimizer.zero_grad()
        loss.backward()
        record.append(float(nn.utils.clip_grad_norm_(model.parameters(), 0.5)))
        optimizer.step()
        record += [loss.item(), math.exp(loss.item())]
    model.eval()
    with torch.no_grad():
        inputs, targets, lengths = collate_fn(sentences)
        logits, out, (h, c) = model(inputs, lengths)
        padded, out_lengths = rnn_utils.pad_packed_sequence(out, batch_first=True, padding_value=0.0)
        assert out_lengths.tolist() == lengths.tolist() and tuple(padded.shape) == (4, 5, E)
        # h_n is in the batch's order: each sentence's last real output
        last = padded[torch.arange(4), lengths - 1]
        assert torch.allclose(last, h[-1], atol=1e-6)
        assert float(padded[1, 2:].abs().sum()) == 0.0
        full = model.linear(padded)
        mask = inputs != PAD
        nll = F.cross_entropy(full[mask], targets[mask], reduction='sum')
    record += [nll.item(), float(h.sum()), float(c.sum())] + out.batch_sizes.tolist() + out.sorted_indices.tolist()
    return init, record + summary(model.parameters())


def test_packed_lstm_lm():
    compare(packed_lstm_lm)


# (h) Meta's llama model.py as people shrink it for their own training and inference: ModelArgs as a dataclass,
# precompute_freqs_cis written without torch.polar (cos and sin of torch.outer(t, freqs)) and the interleaved rotation
# of pairs by x[..., ::2] / x[..., 1::2] stacked and flatten(-2)'ed back, repeat_kv by x[:, :, :, None, :].expand
# (...).reshape(...), a preallocated KV cache (self.cache_k = self.cache_k.to(xq), slice assignment
# cache_k[:bsz, start_pos:start_pos + seqlen] = xk), the mask by torch.full(-inf).triu(1) and torch.hstack with
# zeros for the cached positions, F.scaled_dot_product_attention under torch.nn.attention.sdpa_kernel(
# SDPBackend.MATH), SwiGLU's FeedForward with multiple_of rounding, RMSNorm, tied nothing; one AdamW step on the
# full sequence (start_pos 0), then greedy decoding under torch.inference_mode() token by token through the cache,
# checked against the full forward's logits at each position.
def llama_kv_cache(m, state=None):
    from dataclasses import dataclass
    from importlib import import_module
    torch, nn, F = m.torch, m.nn, m.F
    attention = import_module(torch.__name__ + ".nn.attention")
    rng = np.random.default_rng(8)

    @dataclass
    class ModelArgs:
        dim: int = 16
        n_layers: int = 1
        n_heads: int = 4
        n_kv_heads: int = 2
        vocab_size: int = 11
        multiple_of: int = 8
        norm_eps: float = 1e-5
        max_batch_size: int = 2
        max_seq_len: int = 8

    class RMSNorm(torch.nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def precompute_freqs(dim, end, theta=10000.0):
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = torch.arange(end, device=freqs.device, dtype=torch.float32)
        freqs = torch.outer(t, freqs)
        return torch.cos(freqs), torch.sin(freqs)

    def apply_rotary_emb(x, cos, sin):
        x1, x2 = x[..., ::2], x[..., 1::2]
        cos, sin = cos[None, :, None, :], sin[None, :, None, :]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2).type_as(x)

    def repeat_kv(x, n_rep):
        bs, slen, n_kv_heads, head_dim = x.shape
        if n_rep == 1:
            return x
        return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(
            bs, slen, n_kv_heads * n_rep, head_dim)

    class Attention(nn.Module):
        def __init__(self, args):
            super().__init__()
            self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
            self.n_local_heads, self.n_rep = args.n_heads, args.n_heads // self.n_kv_heads
            self.head_dim = args.dim // args.n_heads
            self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
            self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
            self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
            self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
            self.cache_k = torch.zeros((args.max_batch_size, args.max_seq_len, self.n_kv_heads, self.head_dim))
            self.cache_v = torch.zeros((args.max_batch_size, args.max_seq_len, self.n_kv_heads, self.head_dim))

        def forward(self, x, start_pos, cos, sin, mask, use_cache):
            bsz, seqlen, _ = x.shape
            xq = self.wq(x).view(bsz, seqlen, self.n_local_heads, self.head_dim)
            xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
            xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
            xq, xk = apply_rotary_emb(xq, cos, sin), apply_rotary_emb(xk, cos, sin)
            if use_cache:
                self.cache_k = self.cache_k.to(xq)
                self.cache_v = self.cache_v.to(xq)
                self.cache_k[:bsz, start_pos: start_pos + seqlen] = xk
                self.cache_v[:bsz, start_pos: start_pos + seqlen] = xv
                keys = self.cache_k[:bsz, : start_pos + seqlen]
                values = self.cache_v[:bsz, : start_pos + seqlen]
            else:
                keys, values = xk, xv
            keys, values = repeat_kv(keys, self.n_rep), repeat_kv(values, self.n_rep)
            with attention.sdpa_kernel(attention.SDPBackend.MATH):
                output = F.scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2),
                                                        values.transpose(1, 2), attn_mask=mask)
            return self.wo(output.transpose(1, 2).contiguous().view(bsz, seqlen, -1))

    class FeedForward(nn.Module):
        def __init__(self, dim, hidden_dim, multiple_of):
            super().__init__()
            hidden_dim = int(2 * hidden_dim / 3)
            hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
            self.w1 = nn.Linear(dim, hidden_dim, bias=False)
            self.w2 = nn.Linear(hidden_dim, dim, bias=False)
            self.w3 = nn.Linear(dim, hidden_dim, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class TransformerBlock(nn.Module):
        def __init__(self, layer_id, args):
            super().__init__()
            self.attention = Attention(args)
            self.feed_forward = FeedForward(args.dim, 4 * args.dim, args.multiple_of)
            self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
            self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

        def forward(self, x, start_pos, cos, sin, mask, use_cache):
            h = x + self.attention(self.attention_norm(x), start_pos, cos, sin, mask, use_cache)
            return h + self.feed_forward(self.ffn_norm(h))

    class Transformer(nn.Module):
        def __init__(self, params):
            super().__init__()
            self.params = params
            self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
            self.layers = torch.nn.ModuleList([TransformerBlock(i, params) for i in range(params.n_layers)])
            self.norm = RMSNorm(params.dim, eps=params.norm_eps)
            self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
            cos, sin = precompute_freqs(params.dim // params.n_heads, params.max_seq_len * 2)
            self.register_buffer("freqs_cos", cos, persistent=False)
            self.register_buffer("freqs_sin", sin, persistent=False)

        def forward(self, tokens, start_pos=0, use_cache=False):
            _bsz, seqlen = tokens.shape
            h = self.tok_embeddings(tokens)
            cos = self.freqs_cos[start_pos: start_pos + seqlen]
            sin = self.freqs_sin[start_pos: start_pos + seqlen]
            mask = None
            if seqlen > 1:
                mask = torch.full((seqlen, seqlen), float("-inf"), device=tokens.device)
                mask = torch.triu(mask, diagonal=1)
                mask = torch.hstack([torch.zeros((seqlen, start_pos), device=tokens.device), mask]).type_as(h)
            for layer in self.layers:
                h = layer(h, start_pos, cos, sin, mask, use_cache)
            return self.output(self.norm(h)).float()

    args = ModelArgs()
    model = Transformer(args)
    init = load(m, model, state)
    assert set(init) == {k for k, _ in model.named_parameters()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    tokens = torch.tensor(rng.integers(0, args.vocab_size, (2, 6)))
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, args.vocab_size), tokens[:, 1:].reshape(-1))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    record = [loss.item()]
    with torch.inference_mode():
        prompt = tokens[:, :3]
        out = model(prompt, 0, use_cache=True)
        record += out[:, -1].sum(-1).tolist()
        generated, pos = prompt, 3
        next_token = torch.argmax(out[:, -1], dim=-1)
        for _ in range(3):
            generated = torch.cat([generated, next_token[:, None]], dim=1)
            step_logits = model(next_token[:, None], pos, use_cache=True)
            full = model(generated)
            assert torch.allclose(step_logits[:, -1], full[:, -1], atol=1e-4)
            next_token = torch.argmax(step_logits[:, -1], dim=-1)
            pos += 1
    record += generated.flatten().tolist() + [float(model.layers[0].attention.cache_k.abs().sum())]
    return init, record + summary(model.parameters())


def test_llama_kv_cache():
    compare(llama_kv_cache)
