import math
from contextlib import nullcontext

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


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
