"""PyTorch 2.x idioms as scripts write them today: a training script's preamble (set_float32_matmul_precision,
the TF32 and cudnn flags, torch._dynamo and torch._inductor settings, torch.compile of the model and of the step
with mode="reduce-overhead", cudagraph_mark_step_begin, channels_last models and batches, AdamW's fused= and SGD's
foreach=, zero_grad(set_to_none=True), torch.amp.autocast and torch.amp.GradScaler("cuda"), the compiled model's
"_orig_mod." checkpoint keys stripped, an argparse.Namespace in the checkpoint loaded with weights_only=True after
torch.serialization.add_safe_globals, inference_mode); the compiled-optimizer tutorial's tensor lr under a
scheduler; torch.func (an ensemble trained by vmap of functional_call over stack_module_state with grad_and_value,
a PINN whose residual takes vmap(jacrev) and hessian of functional_call); activation checkpointing
(use_reentrant=False, timm's checkpoint_seq style) over TransformerEncoderLayer(norm_first=True, batch_first=True)
and MultiheadAttention(need_weights=False) with a causal mask and a key padding mask; a LLaMA-style GPT block
(nn.RMSNorm, SwiGLU, rotary embeddings by cos/sin and rotate_half, F.scaled_dot_product_attention with is_causal
and with a boolean mask, nanoGPT's configure_optimizers by inspect.signature and top-k greedy decoding);
parametrizations (orthogonal recurrent weight, the new weight_norm, spectral_norm on a critic,
parametrize.cached); the optimizer-in-backward tutorial (register_post_accumulate_grad_hook); today's data idioms
(an IterableDataset sharded by get_worker_info, dict and namedtuple samples through default_collate,
StackDataset, a padding collate_fn, persistent_workers, pin_memory, a generator, torch.utils._pytree.tree_map to
the device); and tensor idioms without einops (unflatten, movedim, einsum with an ellipsis, where with scalars,
broadcast masked_fill, stable sort and topk, nan_to_num, clamp with tensor bounds, bucketize, cumsum's dtype,
new_zeros/new_full, full_like's dtype, float aranges, linspace, meshgrid in "ij" and "xy"). Written from memory
in their sources' styles and ported by their imports alone, as test_ported_scripts.py: each runs in tnet, then in
torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few
numbers, agree. Numpy draws what a script draws; shapes are tiny and runs 1-3 steps. LLaMA's complex rotary
embeddings (torch.polar, view_as_complex) need complex tensors, which tnet does not have: that test is an
expected failure."""
import argparse
import collections
import functools
import importlib
import inspect
import io
import math

import numpy as np
import pytest

import tnet
from helpers import compare, imports, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def sub(m, name):
    """A submodule a script imports on its own line (`import torch.utils.checkpoint`)."""
    return importlib.import_module(f"{m.torch.__name__}.{name}")


# (a) a PyTorch 2.x training script's preamble and loop: TF32 switched on by set_float32_matmul_precision("high")
# and the backends' flags, torch._dynamo.config.cache_size_limit and torch._inductor.config settings, the device
# from torch.cuda.is_available(), the model moved with memory_format=torch.channels_last and compiled, AdamW with
# fused= where CUDA is there, the step compiled with mode="reduce-overhead" after cudagraph_mark_step_begin(), the
# batch moved non_blocking in channels_last, torch.amp.autocast(device_type, dtype, enabled) and
# torch.amp.GradScaler(device_type, enabled), zero_grad(set_to_none=True), a checkpoint whose "_orig_mod." keys
# are stripped (str.removeprefix), saved with the run's argparse.Namespace and loaded with weights_only=True after
# torch.serialization.add_safe_globals, into a fresh model evaluated under inference_mode. The compared
# run keeps exact fp32 products ("highest") and autocast off; tnet's own run takes "high" and float16 with the scaler.
def modern_training_script(m, state=None, precision="highest", amp_dtype=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.backends.cuda.matmul.allow_tf32 = precision != "highest"
    torch.backends.cudnn.allow_tf32 = precision != "highest"
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision(precision)
    torch._dynamo.config.cache_size_limit = 64
    sub(m, "_inductor.config").coordinate_descent_tuning = True
    device = "cuda" if torch.cuda.is_available() else "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"

    class Net(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.GELU(),
                nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.GELU(),
                nn.AdaptiveAvgPool2d(1))
            self.head = nn.Linear(16, num_classes)

        def forward(self, x):
            return self.head(torch.flatten(self.features(x), 1))

    model = Net().to(device, memory_format=torch.channels_last)
    init = load(m, model, state)
    compiled = torch.compile(model)
    use_fused = torch.cuda.is_available()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=1e-2, betas=(0.9, 0.95), fused=use_fused or None)
    scaler = torch.amp.GradScaler(device_type, enabled=amp_dtype == torch.float16)

    def train_step(images, labels):
        with torch.amp.autocast(device_type=device_type, dtype=amp_dtype or torch.bfloat16, enabled=amp_dtype is not None):
            logits = compiled(images)
            loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach(), norm

    step = torch.compile(train_step, mode="reduce-overhead", fullgraph=False)
    rng = np.random.default_rng(1)
    losses = []
    model.train()
    for _ in range(2):
        images = torch.tensor(normal(rng, 4, 3, 8, 8)).to(device, non_blocking=True).to(memory_format=torch.channels_last)
        labels = torch.tensor(rng.integers(0, 10, 4)).to(device, non_blocking=True)
        torch.compiler.cudagraph_mark_step_begin()
        loss, norm = step(images, labels)
        assert all(p.grad is None for p in model.parameters())  # set_to_none=True
        losses += [loss.item(), norm.item()]
    state_dict = {k.removeprefix("_orig_mod."): v for k, v in compiled.state_dict().items()}
    assert all(k.startswith("_orig_mod.") for k in compiled.state_dict())
    args = argparse.Namespace(lr=1e-2, precision=precision)
    buffer = io.BytesIO()
    torch.save({"model": state_dict, "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(), "args": args},
               buffer)
    buffer.seek(0)
    torch.serialization.add_safe_globals([argparse.Namespace])
    checkpoint = torch.load(buffer, map_location=device, weights_only=True)
    assert checkpoint["args"].precision == precision
    fresh = Net().to(device, memory_format=torch.channels_last)
    fresh.load_state_dict(checkpoint["model"])
    fresh.eval()
    with torch.inference_mode():
        out = fresh(torch.tensor(normal(rng, 2, 3, 8, 8)).to(memory_format=torch.channels_last))
    assert not out.requires_grad and torch.get_float32_matmul_precision() == precision
    torch.set_float32_matmul_precision("highest")
    return init, losses + [out.sum().item()] + summary(model.parameters())


@pytest.fixture
def torch_settings(monkeypatch):
    """The script's settings of torch's globals put back after the test; torch.compile by dynamo alone
    (backend="eager": inductor's C++ build would take tens of seconds on a CPU)."""
    import torch
    import torch._inductor.config
    monkeypatch.setattr(torch._dynamo.config, "cache_size_limit", torch._dynamo.config.cache_size_limit)
    monkeypatch.setattr(torch._inductor.config, "coordinate_descent_tuning", torch._inductor.config.coordinate_descent_tuning)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", torch.backends.cudnn.benchmark)
    compile_ = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model=None, **kwargs: compile_(model, backend="eager"))
    safe = torch.serialization.get_safe_globals()
    yield
    torch.serialization.clear_safe_globals()
    torch.serialization.add_safe_globals(safe)


def test_modern_training_script(torch_settings):
    compare(modern_training_script)


def test_modern_training_script_in_tf32_and_float16():
    """tnet alone at TF32 ("high") under float16 autocast with the "cuda" GradScaler (torch on a CPU
    turns both off): finite losses."""
    previous = tnet.get_precision()
    try:
        _, losses = modern_training_script(imports("tnet"), precision="high", amp_dtype=tnet.float16)
    finally:
        tnet.set_precision(previous)
    assert all(math.isfinite(v) for v in losses), losses


# (b) the "compiled optimizer with an LR scheduler" tutorial: Adam with lr=torch.tensor(0.01) (a tensor lr, so that
# a change of the lr needs no recompilation), LinearLR over it, opt.step() and sched.step() inside one function
# under @torch.compile(fullgraph=False); the lr tensor keeps its identity while the scheduler writes it
def compiled_optimizer_tutorial(m, state=None):
    torch, F = m.torch, m.F
    model = torch.nn.Sequential(*[torch.nn.Linear(6, 6) for _ in range(2)])
    init = load(m, model, state)
    lr = torch.tensor(0.01)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=False)
    sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=3)

    @torch.compile(fullgraph=False)
    def fn():
        opt.step()
        sched.step()

    rng = np.random.default_rng(10)
    losses = []
    for _ in range(3):
        x = torch.tensor(normal(rng, 4, 6))
        loss = F.mse_loss(model(x), torch.zeros_like(x))
        loss.backward()
        fn()
        opt.zero_grad(set_to_none=True)
        losses += [loss.item(), float(sched.get_last_lr()[0])]
    assert opt.param_groups[0]["lr"] is lr
    return init, losses + summary(model.parameters())


def test_compiled_optimizer_with_a_tensor_lr(torch_settings):
    compare(compiled_optimizer_tutorial)


# (c) torch.func's model ensembling, trained: the official tutorial's stack_module_state and a base model sent to
# the meta device, vmap of functional_call with in_dims=(0, 0, None) (one minibatch for every model) and a
# vmapped grad_and_value of each model's loss, the stacked parameters updated by hand (SGD under no_grad,
# in place), then each model's own forward with the trained slice copied back into it
def ensemble_training(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from copy import deepcopy
    func = sub(m, "func")

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            x = x.flatten(1)
            return self.fc2(F.relu(self.fc1(x)))

    num_models = 3
    models = nn.ModuleList([MLP() for _ in range(num_models)])
    init = load(m, models, state)
    params, buffers = func.stack_module_state(list(models))
    params = {k: v.detach() for k, v in params.items()}
    base_model = deepcopy(models[0]).to("meta")

    def fmodel(params, buffers, x):
        return func.functional_call(base_model, (params, buffers), (x,))

    def loss_fn(params, buffers, x, y):
        return F.cross_entropy(fmodel(params, buffers, x), y)

    rng = np.random.default_rng(2)
    losses = []
    for _ in range(2):
        x, y = torch.tensor(normal(rng, 5, 2, 3)), torch.tensor(rng.integers(0, 3, 5))
        predictions = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
        assert predictions.shape == (num_models, 5, 3)
        grads, loss = func.vmap(func.grad_and_value(loss_fn), in_dims=(0, 0, None, None))(params, buffers, x, y)
        with torch.no_grad():
            for k in params:
                params[k].sub_(0.5 * grads[k])
        losses += loss.tolist()
    with torch.no_grad():
        for i, model in enumerate(models):
            for name, p in model.named_parameters():
                p.copy_(params[name][i])
    x = torch.tensor(normal(rng, 4, 6))
    single = torch.stack([model(x) for model in models])
    assert torch.allclose(single, func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x), atol=1e-5)
    return init, losses + summary(models.parameters())


def test_ensemble_training_by_torch_func():
    compare(ensemble_training)


# (d) a physics-informed network (the PINN scripts' torch.func style): u(t, x) a tanh MLP called through
# functional_call on a dict of its parameters; the heat equation's residual u_t - k u_xx from vmap(jacrev) of u at
# each collocation point and vmap(hessian) for u_xx, the boundary loss, and Adam on the parameters by loss.backward()
# through the transforms (double backward)
def pinn_heat_equation(m, state=None):
    torch, nn = m.torch, m.nn
    func = sub(m, "func")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Linear(6, 1))

        def forward(self, tx):
            return self.layers(tx)

    model = Net()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    kappa = 0.1

    def u(params, tx):  # one point [2] -> a scalar
        return func.functional_call(model, params, (tx.unsqueeze(0),)).squeeze()

    rng = np.random.default_rng(3)
    pts = torch.tensor(rng.uniform(0, 1, (2, 2)).astype(np.float32))
    bnd = torch.tensor(np.stack([np.zeros(3), np.linspace(0, 1, 3)], 1).astype(np.float32))
    losses = []
    for _ in range(2):
        params = dict(model.named_parameters())
        grads = func.vmap(func.jacrev(u, argnums=1), in_dims=(None, 0))(params, pts)  # [N, 2]: u_t, u_x
        hess = func.vmap(func.hessian(u, argnums=1), in_dims=(None, 0))(params, pts)  # [N, 2, 2]
        u_t, u_xx = grads[:, 0], hess[:, 1, 1]
        residual = u_t - kappa * u_xx
        u0 = model(bnd).squeeze(-1)
        loss = residual.pow(2).mean() + (u0 - torch.sin(math.pi * bnd[:, 1])).pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_pinn_by_vmap_jacrev_hessian():
    compare(pinn_heat_equation)


# (e) activation checkpointing as timm and Hugging Face write it: a stack of
# nn.TransformerEncoderLayer(norm_first=True, batch_first=True, activation="gelu") run through
# torch.utils.checkpoint.checkpoint(layer, x, mask, ..., use_reentrant=False) when self.grad_checkpointing and
# training (functools.partial for the keyword arguments), a causal mask from
# nn.Transformer.generate_square_subsequent_mask and a key padding mask; an nn.MultiheadAttention pooling head
# (batch_first, a learned query, need_weights=False); checkpoint_sequential over an MLP head
def checkpointed_encoder(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    checkpoint = sub(m, "utils.checkpoint")

    class Encoder(nn.Module):
        def __init__(self, vocab=11, d=8, depth=1):
            super().__init__()
            self.embed = nn.Embedding(vocab, d, padding_idx=0)
            self.pos = nn.Parameter(torch.zeros(1, 6, d))
            self.layers = nn.ModuleList([
                nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=16, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True) for _ in range(depth)])
            self.norm = nn.LayerNorm(d)
            self.query = nn.Parameter(torch.zeros(1, 1, d))
            self.pool = nn.MultiheadAttention(d, 2, batch_first=True)
            self.head = nn.Sequential(nn.Linear(d, 16), nn.GELU(), nn.Linear(16, 3))
            self.grad_checkpointing = True
            nn.init.trunc_normal_(self.pos, std=0.02)

        def forward(self, ids):
            B, T = ids.shape
            x = self.embed(ids) + self.pos[:, :T]
            mask = nn.Transformer.generate_square_subsequent_mask(T)
            padding = ids == 0
            for layer in self.layers:
                if self.grad_checkpointing and self.training:
                    fn = functools.partial(layer, src_mask=mask, src_key_padding_mask=padding, is_causal=True)
                    x = checkpoint.checkpoint(fn, x, use_reentrant=False)
                else:
                    x = layer(x, src_mask=mask, src_key_padding_mask=padding, is_causal=True)
            x = self.norm(x)
            pooled, weights = self.pool(self.query.expand(B, -1, -1), x, x, key_padding_mask=padding,
                                        need_weights=False)
            assert weights is None
            if self.training:
                return checkpoint.checkpoint_sequential(self.head, 2, pooled.squeeze(1), use_reentrant=False)
            return self.head(pooled.squeeze(1))

    model = Encoder()
    init = load(m, model, state)
    # SGD: the keys' bias in in_proj_bias has a gradient of rounding alone (softmax ignores it), which Adam would
    # normalise into a full step (test_ported_scripts11.py's `but`)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
    rng = np.random.default_rng(4)
    ids = rng.integers(1, 11, (3, 6))
    ids[0, 4:] = 0  # padding at the end
    ids, labels = torch.tensor(ids), torch.tensor(rng.integers(0, 3, 3))
    losses = []
    for _ in range(1):
        model.train()
        loss = F.cross_entropy(model(ids), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append(F.cross_entropy(model(ids), labels).item())
    return init, losses + summary(model.parameters())


def test_checkpointed_transformer_encoder():
    compare(checkpointed_encoder)


# (f) a LLaMA-style GPT as today's small repositories write it (nanoGPT's layout with LLaMA's parts): nn.RMSNorm,
# SwiGLU (F.silu(w1(x)) * w3(x)), rotary embeddings from inv_freq by torch.outer and cat((freqs, freqs)) applied
# with rotate_half, F.scaled_dot_product_attention(is_causal=True) in training and with a boolean mask over a
# cache-less prefix in generation, tied embeddings, nanoGPT's init (normal_ std 0.02, c_proj scaled by
# 1/sqrt(2 n_layer)), configure_optimizers by dim (decay for 2-D tensors) with fused chosen by inspect.signature,
# clip_grad_norm_, and greedy decoding after top-k masking (logits[logits < v[:, [-1]]] = -float('Inf'))
def llama_style_gpt(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Rotary(nn.Module):
        def __init__(self, dim, base=10000.0):
            super().__init__()
            inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def forward(self, x, T):
            t = torch.arange(T, device=x.device, dtype=torch.float32)
            freqs = torch.outer(t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos()[None, None], emb.sin()[None, None]

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    class Attention(nn.Module):
        def __init__(self, d, n_head):
            super().__init__()
            self.n_head = n_head
            self.wqkv = nn.Linear(d, 3 * d, bias=False)
            self.c_proj = nn.Linear(d, d, bias=False)
            self.rotary = Rotary(d // n_head)

        def forward(self, x, mask=None):
            B, T, C = x.size()
            q, k, v = self.wqkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
            cos, sin = self.rotary(x, T)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            if mask is None:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class FeedForward(nn.Module):
        def __init__(self, d, hidden):
            super().__init__()
            self.w1 = nn.Linear(d, hidden, bias=False)
            self.w2 = nn.Linear(hidden, d, bias=False)
            self.w3 = nn.Linear(d, hidden, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):
        def __init__(self, d, n_head):
            super().__init__()
            self.attention_norm = nn.RMSNorm(d, eps=1e-5)
            self.attention = Attention(d, n_head)
            self.ffn_norm = nn.RMSNorm(d, eps=1e-5)
            self.feed_forward = FeedForward(d, 24)

        def forward(self, x, mask=None):
            h = x + self.attention(self.attention_norm(x), mask)
            return h + self.feed_forward(self.ffn_norm(h))

    class GPT(nn.Module):
        def __init__(self, vocab_size=13, d=8, n_head=2, n_layer=1):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab_size, d)
            self.layers = nn.ModuleList([Block(d, n_head) for _ in range(n_layer)])
            self.norm = nn.RMSNorm(d)
            self.output = nn.Linear(d, vocab_size, bias=False)
            self.tok_embeddings.weight = self.output.weight
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None, mask=None):
            x = self.tok_embeddings(idx)
            for layer in self.layers:
                x = layer(x, mask)
            logits = self.output(self.norm(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [{"params": decay_params, "weight_decay": weight_decay},
                            {"params": nodecay_params, "weight_decay": 0.0}]
            fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == "cuda"
            extra_args = dict(fused=True) if use_fused else dict()
            return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, top_k=None):
            for _ in range(max_new_tokens):
                T = idx.size(1)
                mask = torch.ones(T, T, dtype=torch.bool).tril(diagonal=0)  # the causal mask as a boolean tensor
                logits, _ = self(idx, mask=mask)
                logits = logits[:, -1, :]
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.argmax(probs, dim=-1, keepdim=True)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    model = GPT()
    assert model.tok_embeddings.weight is model.output.weight
    init = load(m, model, state)
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    optimizer = model.configure_optimizers(0.1, 1e-2, (0.9, 0.95), device_type)
    rng = np.random.default_rng(5)
    data = rng.integers(0, 13, 40)
    losses = []
    for it in range(2):
        ix = rng.integers(0, len(data) - 6, 2)
        x = torch.stack([torch.from_numpy(data[i:i + 5].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 6].astype(np.int64)) for i in ix])
        logits, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    model.eval()
    prompt = torch.tensor([[1, 2, 3]])
    causal, _ = model(prompt)
    masked, _ = model(prompt, mask=torch.ones(3, 3, dtype=torch.bool).tril())
    assert torch.allclose(causal, masked, atol=1e-6)
    out = model.generate(prompt, 1, top_k=5)
    return init, losses + out.flatten().tolist() + summary(model.parameters())


def test_llama_style_gpt():
    compare(llama_style_gpt)


# LLaMA's own rotary embeddings (facebookresearch/llama's model.py): precompute_freqs_cis by torch.polar and
# apply_rotary_emb through view_as_complex / view_as_real. tnet has no complex tensors
@pytest.mark.xfail(raises=NotImplementedError, strict=True,
                   reason="tnet has no complex dtypes: torch.polar, view_as_complex and view_as_real raise")
def test_llama_complex_rotary_embeddings():
    torch = imports("tnet").torch

    def precompute_freqs_cis(dim, end, theta=10000.0):
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = torch.arange(end, device=freqs.device, dtype=torch.float32)
        freqs = torch.outer(t, freqs)
        return torch.polar(torch.ones_like(freqs), freqs)

    def apply_rotary_emb(xq, freqs_cis):
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        return torch.view_as_real(xq_ * freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])).flatten(3)

    apply_rotary_emb(torch.randn(1, 4, 2, 8), precompute_freqs_cis(8, 4))


# (g) the parametrizations of today: an RNN cell whose recurrent weight is kept orthogonal
# (nn.utils.parametrizations.orthogonal, as the parametrization tutorial and expRNN write it), read once per
# sequence under parametrize.cached(); a 1-D conv encoder with the new parametrizations.weight_norm; a critic with
# parametrizations.spectral_norm on its first Linear layer (its power iteration's u and v, in the state_dict, load
# into torch's); Adam; then remove_parametrizations(leave_parametrized=True) for export, the orthogonality checked
def parametrized_rnn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    P = nn.utils.parametrizations
    parametrize = nn.utils.parametrize

    class OrthogonalRNN(nn.Module):
        def __init__(self, n_in=3, hidden=4):
            super().__init__()
            self.encoder = P.weight_norm(nn.Conv1d(n_in, hidden, 3, padding=1))
            self.recurrent = P.orthogonal(nn.Linear(hidden, hidden, bias=False))
            self.critic = nn.Sequential(P.spectral_norm(nn.Linear(hidden, 8)), nn.LeakyReLU(0.2), nn.Linear(8, 1))

        def forward(self, x):  # x [B, C, T]
            inputs = self.encoder(x).movedim(-1, 0)  # [T, B, H]
            h = inputs.new_zeros(inputs.shape[1:])
            with parametrize.cached():
                for x_t in inputs:
                    h = torch.tanh(x_t + self.recurrent(h))
            return self.critic(h).squeeze(-1)

    model = OrthogonalRNN()
    assert parametrize.is_parametrized(model.recurrent, "weight")
    assert type(model.recurrent).__name__ == "ParametrizedLinear"
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(6)
    losses = []
    for _ in range(2):
        x, y = torch.tensor(normal(rng, 2, 3, 3)), torch.tensor(normal(rng, 2))
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    W = model.recurrent.weight
    assert torch.dist(W.T @ W, torch.eye(4)).item() < 1e-5
    parametrize.remove_parametrizations(model.recurrent, "weight", leave_parametrized=True)
    assert not parametrize.is_parametrized(model.recurrent) and "weight" in model.recurrent.state_dict()
    model.eval()
    with torch.no_grad():
        losses.append(model(torch.tensor(normal(rng, 2, 3, 3))).sum().item())
    return init, losses + summary(model.parameters())


def test_parametrized_rnn_orthogonal_weight_norm_spectral_norm():
    compare(parametrized_rnn)


# (h) the "optimizer step in the backward pass" tutorial: one optimizer per parameter in a dict, each stepped and
# zeroed by a hook that register_post_accumulate_grad_hook puts on its parameter, so that no .grad outlives the
# backward; the same model trained the ordinary way (one Adam, foreach=False) reaches the same weights
def optimizer_in_backward(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def build():
        return nn.Sequential(nn.Linear(6, 8), nn.SiLU(), nn.LayerNorm(8), nn.Linear(8, 2))

    model, reference = build(), build()
    init = load(m, model, state)
    reference.load_state_dict(model.state_dict())
    optimizer_dict = {p: torch.optim.Adam([p], lr=1e-2, foreach=False) for p in model.parameters()}

    def optimizer_hook(parameter) -> None:
        optimizer_dict[parameter].step()
        optimizer_dict[parameter].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(optimizer_hook) for p in model.parameters()]
    ref_opt = torch.optim.Adam(reference.parameters(), lr=1e-2, foreach=False)
    rng = np.random.default_rng(7)
    losses = []
    for _ in range(3):
        x, y = torch.tensor(normal(rng, 4, 6)), torch.tensor(rng.integers(0, 2, 4))
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        assert all(p.grad is None for p in model.parameters())
        ref_loss = F.cross_entropy(reference(x), y)
        ref_opt.zero_grad(set_to_none=True)
        ref_loss.backward()
        ref_opt.step()
        losses += [loss.item(), ref_loss.item()]
    for h in handles:
        h.remove()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    return init, losses + summary(model.parameters())


def test_optimizer_step_in_backward():
    compare(optimizer_in_backward)


# (i) today's data pipeline: an IterableDataset that shards a stream among the DataLoader's workers by
# get_worker_info() (the documented example's per-worker ranges), dict samples with nested metadata and namedtuple
# samples through default_collate, a StackDataset of a TensorDataset and a label tensor, a padding collate_fn that
# calls default_collate on what it does not pad, DataLoader(num_workers=2, persistent_workers=True,
# pin_memory=True, prefetch_factor=2) in the loader of the stream and a seeded generator; a model trained on the
# dict batches, moved to the device by torch.utils._pytree.tree_map
def data_pipeline(m, state=None):
    torch, nn, F, data = m.torch, m.nn, m.F, m.data
    default_collate = data.default_collate

    class Stream(data.IterableDataset):
        def __init__(self, start, end):
            super().__init__()
            assert end > start
            self.start, self.end = start, end

        def __iter__(self):
            worker_info = data.get_worker_info()
            if worker_info is None:
                iter_start, iter_end = self.start, self.end
            else:
                per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
                worker_id = worker_info.id
                iter_start = self.start + worker_id * per_worker
                iter_end = min(iter_start + per_worker, self.end)
            return iter(range(iter_start, iter_end))

    stream = Stream(3, 10)
    single = [b.tolist() for b in data.DataLoader(stream, batch_size=3)]
    assert single == [[3, 4, 5], [6, 7, 8], [9]]
    if torch.__name__ == "tnet":  # tnet loads in the calling process: worker 0 of 1 sees the whole stream
        workers = data.DataLoader(stream, batch_size=3, num_workers=2, persistent_workers=True, pin_memory=True,
                                  prefetch_factor=2)
        assert sorted(sum((b.tolist() for b in workers), [])) == list(range(3, 10))

    Sample = collections.namedtuple("Sample", ["features", "target"])
    rng = np.random.default_rng(8)
    feats, labels, lengths = normal(rng, 6, 4), rng.integers(0, 3, 6), rng.integers(1, 4, 6)

    class DictDataset(data.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return {"x": torch.from_numpy(feats[i]), "label": int(labels[i]),
                    "meta": {"id": i, "name": f"sample_{i}"}, "tokens": torch.arange(1, int(lengths[i]) + 1)}

    def pad_collate(batch):
        tokens = [b.pop("tokens") for b in batch]
        out = default_collate(batch)
        out["tokens"] = nn.utils.rnn.pad_sequence(tokens, batch_first=True, padding_value=0)
        return out

    nt = default_collate([Sample(torch.ones(2), 1), Sample(torch.zeros(2), 2)])
    assert type(nt).__name__ == "Sample" and nt.features.shape == (2, 2) and nt.target.tolist() == [1, 2]
    stacked = data.StackDataset(data.TensorDataset(torch.from_numpy(feats)), torch.from_numpy(labels))
    first = next(iter(data.DataLoader(stacked, batch_size=2)))
    assert len(stacked) == 6 and first[0][0].shape == (2, 4) and first[1].tolist() == labels[:2].tolist()

    model = nn.Sequential(nn.Linear(4 + 1, 8), nn.ReLU(), nn.Linear(8, 3))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, foreach=True)
    g = torch.Generator()
    g.manual_seed(0)
    loader = data.DataLoader(DictDataset(), batch_size=3, shuffle=False, collate_fn=pad_collate, generator=g,
                             pin_memory=True, drop_last=True)
    losses = []
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for batch in loader:
        batch = torch.utils._pytree.tree_map(
            lambda t: t.to(device, non_blocking=True) if isinstance(t, torch.Tensor) else t, batch)
        assert batch["meta"]["name"][0].startswith("sample_") and batch["tokens"].shape[0] == 3
        length = (batch["tokens"] != 0).sum(1, keepdim=True).float()
        logits = model(torch.cat([batch["x"], length], 1))
        loss = F.cross_entropy(logits, batch["label"])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert len(losses) == 2
    return init, losses + summary(model.parameters())


def test_data_pipeline_of_today():
    compare(data_pipeline)


# (j) tensor idioms without einops, as detection and transformer code writes them today: a grid of anchor centres
# by meshgrid(indexing="ij") and ("xy") over float aranges and linspace, patches by unflatten/movedim, an attention
# score by einsum with an ellipsis, torch.where with scalar branches, masked_fill with a broadcast mask, stable
# sort and topk, nan_to_num, clamp with tensor bounds, T5-style buckets by bucketize, cumsum(dtype=), new_zeros/
# new_full/new_ones, full_like(dtype=), and a small model trained on what they make
def tensor_idioms(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    out = []
    ys, xs = torch.meshgrid(torch.arange(0.5, 3.0, 1.0), torch.linspace(-1, 1, steps=4), indexing="ij")
    gx, gy = torch.meshgrid(torch.linspace(-1, 1, steps=4), torch.arange(0.5, 3.0, 1.0), indexing="xy")
    assert ys.shape == xs.shape == gx.shape == (3, 4) and torch.equal(xs, gx) and torch.equal(ys, gy)
    centres = torch.stack([xs, ys], dim=-1).reshape(-1, 2)
    out += centres.sum(0).tolist()
    positions = torch.arange(6)
    relative = positions[None, :] - positions[:, None]
    boundaries = torch.tensor([-4, -2, -1, 0, 1, 2, 4])
    buckets = torch.bucketize(relative, boundaries, right=False)
    assert buckets.dtype == torch.int64
    out += [buckets.sum().item(), torch.bucketize(relative.float(), boundaries.float(), right=True).sum().item()]
    counts = (relative > 0).int().cumsum(dim=-1, dtype=torch.int64)
    assert counts.dtype == torch.int64
    fractions = torch.ones(6, dtype=torch.int32).cumsum(0, dtype=torch.float32) / 6
    assert fractions.dtype == torch.float32
    out += [counts.sum().item(), fractions.sum().item()]

    class PatchMixer(nn.Module):
        def __init__(self, patch=2, dim=8, classes=3):
            super().__init__()
            self.patch = patch
            self.proj = nn.Linear(patch * patch, dim)
            self.score = nn.Parameter(torch.zeros(dim))
            self.head = nn.Linear(dim, classes)

        def forward(self, img, valid):  # img [B, H, W]; valid [B, N] bool
            B, H, W = img.shape
            p = self.patch
            patches = img.unflatten(1, (H // p, p)).unflatten(3, (W // p, p))  # [B, h, p, w, p]
            patches = patches.movedim(2, 3).flatten(1, 2).flatten(2)  # [B, N, p*p]
            tokens = self.proj(patches)
            attn = torch.einsum("...nd,...md->...nm", tokens, tokens) / math.sqrt(tokens.size(-1))
            attn = attn.masked_fill(~valid[:, None, :], float("-inf"))
            mixed = torch.einsum("...nm,...md->...nd", attn.softmax(-1), tokens)
            gate = torch.where(mixed > 0, 1.0, 0.5)  # scalar branches
            mixed = torch.where(valid[..., None], mixed * gate, 0.0)
            pooled = mixed.sum(1) / valid.sum(1, keepdim=True)
            return self.head(pooled + self.score)

    model = PatchMixer()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, foreach=True)
    rng = np.random.default_rng(9)
    losses = []
    for _ in range(2):
        img = torch.tensor(normal(rng, 3, 4, 6))
        valid = torch.ones(3, 6, dtype=torch.bool)
        valid[0, 4:] = False
        labels = torch.tensor(rng.integers(0, 3, 3))
        logits = model(img, valid)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    scores = torch.tensor([[0.5, 2.0, 0.5, -1.0, 2.0], [1.0, 1.0, 1.0, 0.0, 3.0]])
    values, order = torch.sort(scores, dim=-1, descending=True, stable=True)  # ties in their order
    top_v, top_i = (scores + torch.arange(5) * 0.01).topk(3, dim=-1, largest=True, sorted=True)  # torch's ties: any
    out += order.flatten().tolist() + top_i.flatten().tolist() + values.sum(-1).tolist()
    raw = torch.tensor([float("nan"), float("inf"), -float("inf"), 2.5])
    out += torch.nan_to_num(raw, nan=0.0, posinf=1e4, neginf=-1e4).tolist() + torch.nan_to_num(raw).isfinite().tolist()
    low, high = scores.new_full((5,), -0.5), scores.new_ones(5) * 1.5
    clamped = scores.clamp(min=low, max=high)
    out += clamped.sum(-1).tolist() + torch.clamp(scores, low).sum(-1).tolist()
    z = scores.new_zeros((2, 3))
    f = torch.full_like(scores, 7, dtype=torch.long)
    assert z.dtype == torch.float32 and f.dtype == torch.int64 and scores.new_full((2,), 3).dtype == torch.float32
    steps = torch.arange(0, 1, 0.25)
    out += steps.tolist() + torch.arange(1.0, 2.0, 0.5).tolist() + torch.linspace(0, 1, 5).tolist()
    return init, out + losses + summary(model.parameters())


def test_tensor_idioms_of_today():
    compare(tensor_idioms)
