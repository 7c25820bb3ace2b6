"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: Hugging Face's sampling loop (left-padded prompts, position_ids from the attention mask's
cumsum, the past_key_values cache grown by torch.cat, the repetition penalty by gather/where/scatter_, temperature,
top-k and top-p warpers, torch.multinomial, the eos bookkeeping); denisyarats' pytorch_sac (its own TanhTransform
subclassing Transform with cache_size=1, SquashedNormal as a TransformedDistribution subclass, the learned
temperature); Lugosch's transducer notebook (the RNN-T loss's forward variable written cell by cell with logsumexp,
greedy search); NX-AI's xLSTM (the mLSTM's stabilised parallel form against its recurrent steps, q.squeeze_(2) on a
view, einsum head-wise projections, group_norm over heads); LightGCN (a sparse adjacency's coalesce(), indices() and
values() for edge dropout, torch.sparse.mm, BPR), which found that tnet's sparse tensors, stored dense, answered none
of the COO accessors (indices, values, _indices, _values, _nnz, is_coalesced, coalesce, sparse_dim, dense_dim);
pyGAT's sparse model (a custom Function building torch.sparse_coo_tensor in forward and reading a._indices() in
backward), which runs on them; ParallelWaveGAN's multi-resolution STFT loss and HiFi-GAN's mel_spectrogram training a
small vocoder, which found that torch.stft was missing (tnet has no complex dtypes: it now gives return_complex=False's
real form); Kool's attention model for TSP (a NamedTuple state updated by _replace, masked glimpses, tanh clipping,
REINFORCE with an exponential baseline, clip_grad_norms over param_groups); Sophia-G in its nanoGPT loop (an
Optimizer subclass with a Hessian EMA, a disabled GradScaler's step(optimizer, bs=...), Categorical(logits).sample()
labels) and pytorch-lamb (a tensor trust ratio as add_'s alpha, both the LAMB and the adam=True ablation); Jamie
Stirling's RetNet (xPos by einsum with spaces, the decay matrix with D[D != D] = 0, parallel against recurrent);
gordicaleksa's pytorch-GAT (edge-list attention by scatter_add_ and index_select), checked against
torch.sparse.softmax, which tnet lacked; Lizhi-sjtu's PPO-continuous with a Beta policy (GAE in numpy, BatchSampler
over SubsetRandomSampler, the learning rates decayed by hand); ESPnet's hybrid CTC/attention recogniser
(Conv2dSubsampling, CTCLoss(zero_infinity=True), a label-smoothing KL loss, nn.TransformerEncoder/Decoder with boolean
masks, Noam's warmup, CTC greedy decoding by unique_consecutive); and variational inference with a Gamma-latent VAE
for counts, a Student-t posterior and a Dirichlet-VAE topic model, which found that Gamma.rsample (so Chi2's,
StudentT's and InverseGamma's) and Dirichlet.rsample (so Beta's) raised NotImplementedError (they now carry torch's
reparameterized gradients). Each runs in tnet, then in torch from tnet's
initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy
draws what a script draws, or torch replays tnet's draws (`replayed`, and `replayed_draws` for the standard normal,
Gamma and Dirichlet draws inside torch.distributions); shapes are tiny and runs take one or two steps; dropout is 0
where a script has it. Where Adam would normalise a gradient that is rounding alone (the attention keys' bias in
in_proj_bias, a bias before a BatchNorm), the summary leaves that parameter out."""
import contextlib
import itertools
import math
from unittest import mock

import numpy as np
import pytest

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def replayed(m, replay, key, t):
    """t as tnet drew it: tnet's run keeps its draw under key, torch's run takes that draw in place of its own."""
    return m.torch.tensor(replay.setdefault(key, t.detach().cpu().numpy().copy()))


@contextlib.contextmanager
def replayed_draws(m, replay):
    """torch.distributions' draws as tnet drew them: tnet's standard normal, standard Gamma and Dirichlet draws inside
    its distributions (rsample's eps, a Gamma's or a Chi2's draw, a Dirichlet's) are kept in order, and torch's run
    takes them in place of its own, a Gamma draw with torch's reparameterized gradient (torch._standard_gamma_grad),
    a Dirichlet draw inside torch's own _Dirichlet Function; the scripts do not change."""
    counter = itertools.count()
    if m.torch.__name__ == "tnet":
        import tnet.distributions as dist
        randn, standard_gamma, sample_dirichlet = dist.randn, dist.standard_gamma, dist.sample_dirichlet

        def keep(draw):
            def drawn(*args, **kwargs):
                t = draw(*args, **kwargs)
                replay.setdefault(next(counter), t.detach().cpu().numpy().copy())
                return t
            return drawn
        with mock.patch.object(dist, "randn", keep(randn)), \
                mock.patch.object(dist, "standard_gamma", keep(standard_gamma)), \
                mock.patch.object(dist, "sample_dirichlet", keep(sample_dirichlet)):
            yield
    else:
        import torch.distributions as dist
        torch = m.torch

        class Replayed(torch.autograd.Function):
            @staticmethod
            def forward(ctx, concentration):
                x = torch.tensor(replay[next(counter)], dtype=concentration.dtype).view(concentration.shape)
                ctx.save_for_backward(concentration, x)
                return x

            @staticmethod
            def backward(ctx, grad):
                concentration, x = ctx.saved_tensors
                return grad * torch._standard_gamma_grad(concentration, x)

        def normal(shape, dtype, device):
            return torch.tensor(replay[next(counter)], dtype=dtype).view(shape)

        def dirichlet(concentration):  # inside torch's _Dirichlet, whose backward is torch's
            return torch.tensor(replay[next(counter)], dtype=concentration.dtype).view(concentration.shape)
        with mock.patch.object(dist.normal, "_standard_normal", normal), \
                mock.patch.object(dist.studentT, "_standard_normal", normal), \
                mock.patch.object(dist.gamma, "_standard_gamma", Replayed.apply), \
                mock.patch.object(torch, "_sample_dirichlet", dirichlet):
            yield


# (a) Hugging Face transformers' generation utilities around a small GPT-2-like model: a batch of prompts padded on
# the left, position_ids from attention_mask.long().cumsum(-1) - 1 with masked_fill_(attention_mask == 0, 1), the
# past_key_values cache grown by torch.cat on the sequence axis and the attention mask by torch.cat of new_ones, the
# logits processors as LogitsProcessorList classes (RepetitionPenaltyLogitsProcessor by gather, torch.where and
# scatter_; TemperatureLogitsWarper; TopKLogitsWarper by topk(...)[0][..., -1, None]; TopPLogitsWarper by an ascending
# sort, softmax().cumsum(), the kept tail written by [..., -min_tokens_to_keep:] = 0 and scattered back;
# MinLengthLogitsProcessor), _sample's torch.multinomial(probs, num_samples=1).squeeze(1), unfinished_sequences and
# the eos/pad bookkeeping, the stopping criteria; before it one AdamW step of the causal LM loss with labels -100 at
# the padding. torch replays tnet's multinomial draws; the cached logits match a forward of the whole sequence
def hf_generation(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    counter = itertools.count()

    class Config:
        vocab_size, n_positions, n_embd, n_layer, n_head = 13, 16, 8, 2, 2
        pad_token_id, eos_token_id, bos_token_id = 0, 1, 2

    class Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            max_positions = config.n_positions
            self.register_buffer("bias", torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions), persistent=False)
            self.embed_dim = config.n_embd
            self.num_heads = config.n_head
            self.head_dim = self.embed_dim // self.num_heads
            self.c_attn = nn.Linear(self.embed_dim, 3 * self.embed_dim)
            self.c_proj = nn.Linear(self.embed_dim, self.embed_dim)

        def _split_heads(self, tensor, num_heads, attn_head_size):
            new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
            tensor = tensor.view(new_shape)
            return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

        def _merge_heads(self, tensor, num_heads, attn_head_size):
            tensor = tensor.permute(0, 2, 1, 3).contiguous()
            new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
            return tensor.view(new_shape)

        def _attn(self, query, key, value, attention_mask=None):
            attn_weights = torch.matmul(query, key.transpose(-1, -2))
            attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype,
                                                     device=attn_weights.device)
            query_length, key_length = query.size(-2), key.size(-2)
            causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
            mask_value = torch.finfo(attn_weights.dtype).min
            mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
            attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            attn_weights = attn_weights.type(value.dtype)
            return torch.matmul(attn_weights, value), attn_weights

        def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
            query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
            query = self._split_heads(query, self.num_heads, self.head_dim)
            key = self._split_heads(key, self.num_heads, self.head_dim)
            value = self._split_heads(value, self.num_heads, self.head_dim)
            if layer_past is not None:
                past_key, past_value = layer_past
                key = torch.cat((past_key, key), dim=-2)
                value = torch.cat((past_value, value), dim=-2)
            present = (key, value) if use_cache is True else None
            attn_output, _ = self._attn(query, key, value, attention_mask)
            attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
            return self.c_proj(attn_output), present

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd, eps=1e-5)
            self.attn = Attention(config)
            self.ln_2 = nn.LayerNorm(config.n_embd, eps=1e-5)
            self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * config.n_embd, config.n_embd))

        def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
            attn_output, present = self.attn(self.ln_1(hidden_states), layer_past=layer_past,
                                             attention_mask=attention_mask, use_cache=use_cache)
            hidden_states = attn_output + hidden_states
            hidden_states = hidden_states + self.mlp(self.ln_2(hidden_states))
            return hidden_states, present

    class GPT2LMHeadModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.wpe = nn.Embedding(config.n_positions, config.n_embd)
            self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
            self.ln_f = nn.LayerNorm(config.n_embd, eps=1e-5)
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight  # tied
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                module.weight.data.normal_(mean=0.0, std=0.2)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=0.2)
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        def forward(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None, labels=None,
                    use_cache=None):
            if past_key_values is None:
                past_length = 0
                past_key_values = tuple([None] * len(self.h))
            else:
                past_length = past_key_values[0][0].size(-2)
            if position_ids is None:
                position_ids = torch.arange(past_length, input_ids.size(-1) + past_length, dtype=torch.long)
                position_ids = position_ids.unsqueeze(0)
            if attention_mask is not None:
                attention_mask = attention_mask.view(input_ids.shape[0], -1)
                attention_mask = attention_mask[:, None, None, :]
                attention_mask = attention_mask.to(dtype=self.wte.weight.dtype)  # fp16 compatibility
                attention_mask = (1.0 - attention_mask) * torch.finfo(self.wte.weight.dtype).min
            hidden_states = self.wte(input_ids) + self.wpe(position_ids)
            presents = () if use_cache else None
            for block, layer_past in zip(self.h, past_key_values):
                hidden_states, present = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                                               use_cache=use_cache)
                if use_cache is True:
                    presents = presents + (present,)
            lm_logits = self.lm_head(self.ln_f(hidden_states))
            loss = None
            if labels is not None:
                shift_logits = lm_logits[..., :-1, :].contiguous()
                shift_labels = labels[..., 1:].contiguous()
                loss_fct = nn.CrossEntropyLoss()
                loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
            return loss, lm_logits, presents

        def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
            if past_key_values:
                input_ids = input_ids[:, -1].unsqueeze(-1)
            attention_mask = kwargs.get("attention_mask", None)
            position_ids = None
            if attention_mask is not None:
                # create position_ids on the fly for batch generation
                position_ids = attention_mask.long().cumsum(-1) - 1
                position_ids.masked_fill_(attention_mask == 0, 1)
                if past_key_values:
                    position_ids = position_ids[:, -1].unsqueeze(-1)
            return {"input_ids": input_ids, "past_key_values": past_key_values, "use_cache": True,
                    "position_ids": position_ids, "attention_mask": attention_mask}

    class LogitsProcessorList(list):
        def __call__(self, input_ids, scores):
            for processor in self:
                scores = processor(input_ids, scores)
            return scores

    class MinLengthLogitsProcessor:
        def __init__(self, min_length, eos_token_id):
            self.min_length, self.eos_token_id = min_length, eos_token_id

        def __call__(self, input_ids, scores):
            if input_ids.shape[-1] < self.min_length:
                scores[:, self.eos_token_id] = -float("inf")
            return scores

    class RepetitionPenaltyLogitsProcessor:
        def __init__(self, penalty):
            if not isinstance(penalty, float) or not (penalty > 0):
                raise ValueError(f"`penalty` has to be a strictly positive float, but is {penalty}")
            self.penalty = penalty

        def __call__(self, input_ids, scores):
            score = torch.gather(scores, 1, input_ids)
            # if score < 0 then repetition penalty has to be multiplied to reduce the token probabilities
            score = torch.where(score < 0, score * self.penalty, score / self.penalty)
            scores.scatter_(1, input_ids, score)
            return scores

    class TemperatureLogitsWarper:
        def __init__(self, temperature):
            self.temperature = temperature

        def __call__(self, input_ids, scores):
            scores = scores / self.temperature
            return scores

    class TopKLogitsWarper:
        def __init__(self, top_k, filter_value=-float("Inf"), min_tokens_to_keep=1):
            self.top_k = max(top_k, min_tokens_to_keep)
            self.filter_value = filter_value

        def __call__(self, input_ids, scores):
            top_k = min(self.top_k, scores.size(-1))  # Safety check
            # Remove all tokens with a probability less than the last token of the top-k
            indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
            scores = scores.masked_fill(indices_to_remove, self.filter_value)
            return scores

    class TopPLogitsWarper:
        def __init__(self, top_p, filter_value=-float("Inf"), min_tokens_to_keep=1):
            top_p = float(top_p)
            if top_p < 0 or top_p > 1.0:
                raise ValueError(f"`top_p` has to be a float > 0 and < 1, but is {top_p}")
            self.top_p, self.filter_value, self.min_tokens_to_keep = top_p, filter_value, min_tokens_to_keep

        def __call__(self, input_ids, scores):
            sorted_logits, sorted_indices = torch.sort(scores, descending=False)
            cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
            # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
            sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
            # Keep at least min_tokens_to_keep
            sorted_indices_to_remove[..., -self.min_tokens_to_keep:] = 0
            # scatter sorted tensors to original indexing
            indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
            scores = scores.masked_fill(indices_to_remove, self.filter_value)
            return scores

    def sample(model, input_ids, attention_mask, logits_processor, logits_warper, max_length, pad_token_id,
               eos_token_id):
        model_kwargs = {"attention_mask": attention_mask, "past_key_values": None}
        unfinished_sequences = torch.ones(input_ids.shape[0], dtype=torch.long, device=input_ids.device)
        while True:
            model_inputs = model.prepare_inputs_for_generation(input_ids, **model_kwargs)
            _, logits, past = model(**model_inputs)
            next_token_logits = logits[:, -1, :]
            # pre-process distribution
            next_token_scores = logits_processor(input_ids, next_token_logits)
            next_token_scores = logits_warper(input_ids, next_token_scores)
            # sample
            probs = nn.functional.softmax(next_token_scores, dim=-1)
            next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
            next_tokens = replayed(m, replay, next(counter), next_tokens)
            # finished sentences should have their next token be a padding token
            next_tokens = next_tokens * unfinished_sequences + pad_token_id * (1 - unfinished_sequences)
            # update generated ids, model inputs, and length for next step
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            model_kwargs["past_key_values"] = past
            attention_mask = model_kwargs["attention_mask"]
            model_kwargs["attention_mask"] = torch.cat(
                [attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
            unfinished_sequences = unfinished_sequences.mul((next_tokens != eos_token_id).long())
            if unfinished_sequences.max() == 0 or input_ids.shape[-1] >= max_length:
                break
        return input_ids, model_kwargs["attention_mask"]

    config = Config()
    model = GPT2LMHeadModel(config)
    init = load(m, model, state)
    # left-padded prompts, as a tokenizer with padding_side="left" gives them
    prompts = [[2, 5, 7, 3], [2, 9, 4]]
    width = max(len(p) for p in prompts)
    input_ids = torch.tensor([[config.pad_token_id] * (width - len(p)) + p for p in prompts])
    attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    model.train()
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    position_ids = attention_mask.long().cumsum(-1) - 1
    position_ids.masked_fill_(attention_mask == 0, 1)
    loss, _, _ = model(input_ids, attention_mask=attention_mask, position_ids=position_ids, labels=labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    losses = [loss.item()]
    model.eval()
    logits_processor = LogitsProcessorList([MinLengthLogitsProcessor(6, config.eos_token_id),
                                            RepetitionPenaltyLogitsProcessor(penalty=1.3)])
    logits_warper = LogitsProcessorList([TemperatureLogitsWarper(0.7), TopKLogitsWarper(top_k=6),
                                         TopPLogitsWarper(top_p=0.9)])
    with torch.no_grad():
        output_ids, full_mask = sample(model, input_ids, attention_mask, logits_processor, logits_warper,
                                       max_length=9, pad_token_id=config.pad_token_id,
                                       eos_token_id=config.eos_token_id)
        # the cache's last logits against one forward of the whole sequence
        position_ids = full_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(full_mask == 0, 1)
        _, full_logits, _ = model(output_ids, attention_mask=full_mask, position_ids=position_ids)
        scores = logits_warper(output_ids, logits_processor(output_ids, full_logits[:, -1, :].clone()))
    assert tuple(output_ids.shape) == (2, 9)
    kept = torch.isfinite(scores).sum(-1)
    return init, losses + [float(v) for v in output_ids.flatten().tolist()] + [float(v) for v in kept.tolist()] + \
        summary([scores.masked_fill(~torch.isfinite(scores), 0.0)]) + summary(model.parameters())


def test_hf_generation():
    compare(hf_generation, replay={})


# (b) denisyarats/pytorch_sac's agent/actor.py, critic.py and sac.py: its own TanhTransform, a subclass of
# torch.distributions.transforms.Transform (domain and codomain constraints, bijective, sign, cache_size=1 through
# super().__init__, __eq__, _call, _inverse by an atanh of log1p's, log_abs_det_jacobian by softplus), SquashedNormal
# as a TransformedDistribution subclass whose mean property runs the transforms, DiagGaussianActor (log_std bounded by
# tanh into [log_std_min, log_std_max], chunk(2, dim=-1)), DoubleQCritic on torch.cat([obs, action], dim=-1), util's
# mlp and weight_init (orthogonal_ on .data, bias.data.fill_(0.0)) and soft_update_params, the temperature by
# log_alpha with its target entropy -action_dim, update_critic with the target under the next policy's
# dist.rsample() and log_prob(...).sum(-1, keepdim=True), update_actor_and_alpha, and act() by dist.mean clamped.
# torch replays tnet's standard normal draws (rsample's eps)
def pytorch_sac(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    pyd = torch.distributions
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def weight_init(m_):
        """Custom weight init for Conv2D and Linear layers."""
        if isinstance(m_, nn.Linear):
            nn.init.orthogonal_(m_.weight.data)
            if hasattr(m_.bias, 'data'):
                m_.bias.data.fill_(0.0)

    def mlp(input_dim, hidden_dim, output_dim, hidden_depth, output_mod=None):
        if hidden_depth == 0:
            mods = [nn.Linear(input_dim, output_dim)]
        else:
            mods = [nn.Linear(input_dim, hidden_dim), nn.ReLU(inplace=True)]
            for i in range(hidden_depth - 1):
                mods += [nn.Linear(hidden_dim, hidden_dim), nn.ReLU(inplace=True)]
            mods.append(nn.Linear(hidden_dim, output_dim))
        if output_mod is not None:
            mods.append(output_mod)
        trunk = nn.Sequential(*mods)
        return trunk

    def soft_update_params(net, target_net, tau):
        for param, target_param in zip(net.parameters(), target_net.parameters()):
            target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)

    class TanhTransform(pyd.transforms.Transform):
        domain = pyd.constraints.real
        codomain = pyd.constraints.interval(-1.0, 1.0)
        bijective = True
        sign = +1

        def __init__(self, cache_size=1):
            super().__init__(cache_size=cache_size)

        @staticmethod
        def atanh(x):
            return 0.5 * (x.log1p() - (-x).log1p())

        def __eq__(self, other):
            return isinstance(other, TanhTransform)

        def _call(self, x):
            return x.tanh()

        def _inverse(self, y):
            # We do not clamp to the boundary here as it may degrade the performance of certain algorithms.
            # one should use `cache_size=1` instead
            return self.atanh(y)

        def log_abs_det_jacobian(self, x, y):
            # We use a formula that is more numerically stable, see details in the following link
            # https://github.com/tensorflow/probability/commit/ef6bb176e0ebd1cf6e25c6b5cecdd2428c22963f#diff-e120f70e92e6741bca649f04fcd907b7
            return 2. * (math.log(2.) - x - F.softplus(-2. * x))

    class SquashedNormal(pyd.transformed_distribution.TransformedDistribution):
        def __init__(self, loc, scale):
            self.loc = loc
            self.scale = scale
            self.base_dist = pyd.Normal(loc, scale)
            transforms = [TanhTransform()]
            super().__init__(self.base_dist, transforms)

        @property
        def mean(self):
            mu = self.loc
            for tr in self.transforms:
                mu = tr(mu)
            return mu

    class DiagGaussianActor(nn.Module):
        """torch.distributions implementation of an diagonal Gaussian policy."""
        def __init__(self, obs_dim, action_dim, hidden_dim, hidden_depth, log_std_bounds):
            super().__init__()
            self.log_std_bounds = log_std_bounds
            self.trunk = mlp(obs_dim, hidden_dim, 2 * action_dim, hidden_depth)
            self.outputs = dict()
            self.apply(weight_init)

        def forward(self, obs):
            mu, log_std = self.trunk(obs).chunk(2, dim=-1)
            # constrain log_std inside [log_std_min, log_std_max]
            log_std = torch.tanh(log_std)
            log_std_min, log_std_max = self.log_std_bounds
            log_std = log_std_min + 0.5 * (log_std_max - log_std_min) * (log_std + 1)
            std = log_std.exp()
            self.outputs['mu'] = mu
            self.outputs['std'] = std
            dist = SquashedNormal(mu, std)
            return dist

    class DoubleQCritic(nn.Module):
        """Critic network, employes double Q-learning."""
        def __init__(self, obs_dim, action_dim, hidden_dim, hidden_depth):
            super().__init__()
            self.Q1 = mlp(obs_dim + action_dim, hidden_dim, 1, hidden_depth)
            self.Q2 = mlp(obs_dim + action_dim, hidden_dim, 1, hidden_depth)
            self.outputs = dict()
            self.apply(weight_init)

        def forward(self, obs, action):
            assert obs.size(0) == action.size(0)
            obs_action = torch.cat([obs, action], dim=-1)
            q1 = self.Q1(obs_action)
            q2 = self.Q2(obs_action)
            self.outputs['q1'] = q1
            self.outputs['q2'] = q2
            return q1, q2

    class SACAgent:
        """SAC algorithm."""
        def __init__(self, obs_dim, action_dim, action_range, device, discount, init_temperature, alpha_lr,
                     alpha_betas, actor_lr, actor_betas, actor_update_frequency, critic_lr, critic_betas, critic_tau,
                     critic_target_update_frequency, batch_size, learnable_temperature):
            self.action_range = action_range
            self.device = torch.device(device)
            self.discount = discount
            self.critic_tau = critic_tau
            self.actor_update_frequency = actor_update_frequency
            self.critic_target_update_frequency = critic_target_update_frequency
            self.batch_size = batch_size
            self.learnable_temperature = learnable_temperature
            self.critic = DoubleQCritic(obs_dim, action_dim, 16, 2).to(self.device)
            self.critic_target = DoubleQCritic(obs_dim, action_dim, 16, 2).to(self.device)
            self.critic_target.load_state_dict(self.critic.state_dict())
            self.actor = DiagGaussianActor(obs_dim, action_dim, 16, 2, [-5, 2]).to(self.device)
            self.log_alpha = torch.tensor(np.log(init_temperature)).to(self.device)
            self.log_alpha.requires_grad = True
            # set target entropy to -|A|
            self.target_entropy = -action_dim
            # optimizers
            self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=actor_lr, betas=actor_betas)
            self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=critic_lr, betas=critic_betas)
            self.log_alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=alpha_lr, betas=alpha_betas)
            self.train()
            self.critic_target.train()

        def train(self, training=True):
            self.training = training
            self.actor.train(training)
            self.critic.train(training)

        @property
        def alpha(self):
            return self.log_alpha.exp()

        def act(self, obs, sample=False):
            obs = torch.FloatTensor(obs).to(self.device)
            obs = obs.unsqueeze(0)
            dist = self.actor(obs)
            action = dist.sample() if sample else dist.mean
            action = action.clamp(*self.action_range)
            assert action.ndim == 2 and action.shape[0] == 1
            return action[0].detach().cpu().numpy()

        def update_critic(self, obs, action, reward, next_obs, not_done, logger, step):
            dist = self.actor(next_obs)
            next_action = dist.rsample()
            log_prob = dist.log_prob(next_action).sum(-1, keepdim=True)
            target_Q1, target_Q2 = self.critic_target(next_obs, next_action)
            target_V = torch.min(target_Q1, target_Q2) - self.alpha.detach() * log_prob
            target_Q = reward + (not_done * self.discount * target_V)
            target_Q = target_Q.detach()
            # get current Q estimates
            current_Q1, current_Q2 = self.critic(obs, action)
            critic_loss = F.mse_loss(current_Q1, target_Q) + F.mse_loss(current_Q2, target_Q)
            logger['train_critic/loss'] = critic_loss.item()
            # Optimize the critic
            self.critic_optimizer.zero_grad()
            critic_loss.backward()
            self.critic_optimizer.step()

        def update_actor_and_alpha(self, obs, logger, step):
            dist = self.actor(obs)
            action = dist.rsample()
            log_prob = dist.log_prob(action).sum(-1, keepdim=True)
            actor_Q1, actor_Q2 = self.critic(obs, action)
            actor_Q = torch.min(actor_Q1, actor_Q2)
            actor_loss = (self.alpha.detach() * log_prob - actor_Q).mean()
            logger['train_actor/loss'] = actor_loss.item()
            logger['train_actor/target_entropy'] = self.target_entropy
            logger['train_actor/entropy'] = -log_prob.mean().item()
            # optimize the actor
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
            if self.learnable_temperature:
                self.log_alpha_optimizer.zero_grad()
                alpha_loss = (self.alpha * (-log_prob - self.target_entropy).detach()).mean()
                logger['train_alpha/loss'] = alpha_loss.item()
                logger['train_alpha/value'] = self.alpha.item()
                alpha_loss.backward()
                self.log_alpha_optimizer.step()

        def update(self, batch, logger, step):
            obs, action, reward, next_obs, not_done, not_done_no_max = batch
            logger['train/batch_reward'] = reward.mean().item()
            self.update_critic(obs, action, reward, next_obs, not_done_no_max, logger, step)
            if step % self.actor_update_frequency == 0:
                self.update_actor_and_alpha(obs, logger, step)
            if step % self.critic_target_update_frequency == 0:
                soft_update_params(self.critic, self.critic_target, self.critic_tau)

    obs_dim, action_dim, batch = 5, 2, 6
    agent = SACAgent(obs_dim, action_dim, [-1.0, 1.0], "cpu", discount=0.99, init_temperature=0.1, alpha_lr=1e-2,
                     alpha_betas=[0.9, 0.999], actor_lr=1e-2, actor_betas=[0.9, 0.999], actor_update_frequency=1,
                     critic_lr=1e-2, critic_betas=[0.9, 0.999], critic_tau=0.05, critic_target_update_frequency=2,
                     batch_size=batch, learnable_temperature=True)
    modules = nn.ModuleDict({"actor": agent.actor, "critic": agent.critic, "critic_target": agent.critic_target})
    init = load(m, modules, state)
    with torch.no_grad():
        agent.log_alpha.fill_(float(np.log(0.1)))
    dist = agent.actor(torch.zeros(1, obs_dim))
    assert isinstance(dist.transforms[0], TanhTransform) and dist.transforms[0] == TanhTransform()
    x = torch.tensor([0.3])
    assert dist.transforms[0].inv(dist.transforms[0](x)) is x  # cache_size=1: the inverse of the last call
    losses = []
    with replayed_draws(m, replay):
        for step in range(2):
            obs = torch.as_tensor(normal(rng, batch, obs_dim))
            action = torch.as_tensor(np.tanh(normal(rng, batch, action_dim)))
            reward = torch.as_tensor(normal(rng, batch, 1))
            next_obs = torch.as_tensor(normal(rng, batch, obs_dim))
            not_done = torch.as_tensor((rng.random((batch, 1)) > 0.2).astype(np.float32))
            logger = {}
            agent.update((obs, action, reward, next_obs, not_done, not_done), logger, step)
            losses += [logger[k] for k in sorted(logger)]
    acted = agent.act(normal(rng, obs_dim))
    return init, losses + [float(v) for v in acted] + [agent.log_alpha.item()] + summary(modules.parameters())


def test_pytorch_sac():
    replay = {}
    compare(pytorch_sac, replay=replay)
    assert len(replay) == 4  # four rsamples, each replayed


# (c) Loren Lugosch's "Sequence-to-sequence learning with Transducers" notebook: an Encoder (a bidirectional GRU,
# batch_first, and a Linear), a Predictor (Embedding, GRUCell stepped from an nn.Parameter initial_state stacked per
# batch, the start symbol NULL_INDEX), a Joiner on encoder_out.unsqueeze(2) + predictor_out.unsqueeze(1), the RNN-T
# loss by its forward variable written into a torch.zeros tensor cell by cell (log_alpha[:, t, u] = ... with
# torch.logsumexp of a torch.stack, torch.gather of the label's log-probability), each utterance's log-likelihood
# read at its own (T, U) and stacked; Adam, clip_grad_norm_ and greedy_search's loop (argmax, t += 1 on the blank)
def transducer(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    NULL_INDEX = 0

    class Encoder(nn.Module):
        def __init__(self, num_inputs, num_hidden, num_outputs):
            super().__init__()
            self.rnn = nn.GRU(input_size=num_inputs, hidden_size=num_hidden, num_layers=1, batch_first=True,
                              bidirectional=True)
            self.linear = nn.Linear(num_hidden * 2, num_outputs)

        def forward(self, x):
            out = self.rnn(x)[0]
            out = self.linear(out)
            return out

    class Predictor(nn.Module):
        def __init__(self, num_outputs, num_hidden):
            super().__init__()
            self.embed = nn.Embedding(num_outputs, num_hidden)
            self.rnn = nn.GRUCell(input_size=num_hidden, hidden_size=num_hidden)
            self.linear = nn.Linear(num_hidden, num_hidden)
            self.initial_state = nn.Parameter(torch.randn(num_hidden))
            self.start_symbol = NULL_INDEX  # In the original paper, a vector of 0s is used; just use the null index

        def forward_one_step(self, input, previous_state):
            embedding = self.embed(input)
            state = self.rnn.forward(embedding, previous_state)
            out = self.linear(state)
            return out, state

        def forward(self, y):
            batch_size = y.shape[0]
            U = y.shape[1]
            outs = []
            state = torch.stack([self.initial_state] * batch_size).to(y.device)
            for u in range(U + 1):  # need U+1 to get null output for final timestep
                if u == 0:
                    decoder_input = torch.tensor([self.start_symbol] * batch_size, device=y.device)
                else:
                    decoder_input = y[:, u - 1]
                out, state = self.forward_one_step(decoder_input, state)
                outs.append(out)
            out = torch.stack(outs, dim=1)
            return out

    class Joiner(nn.Module):
        def __init__(self, num_inputs, num_outputs):
            super().__init__()
            self.linear = nn.Linear(num_inputs, num_outputs)

        def forward(self, encoder_out, predictor_out):
            out = encoder_out + predictor_out
            out = torch.nn.functional.relu(out)
            out = self.linear(out)
            return out

    class Transducer(nn.Module):
        def __init__(self, num_inputs, num_outputs, num_hidden=8):
            super().__init__()
            self.encoder = Encoder(num_inputs=num_inputs, num_hidden=num_hidden, num_outputs=num_hidden)
            self.predictor = Predictor(num_outputs=num_outputs, num_hidden=num_hidden)
            self.joiner = Joiner(num_inputs=num_hidden, num_outputs=num_outputs)

        def compute_forward_prob(self, joiner_out, T, U, y):
            """joiner_out: tensor of shape (B, T_max, U_max+1, #labels); T: list of input lengths; U: list of
            output lengths; y: label tensor (B, U_max+1)"""
            B = joiner_out.shape[0]
            T_max = joiner_out.shape[1]
            U_max = joiner_out.shape[2] - 1
            log_alpha = torch.zeros(B, T_max, U_max + 1, device=joiner_out.device)
            for t in range(T_max):
                for u in range(U_max + 1):
                    if u == 0:
                        if t == 0:
                            log_alpha[:, t, u] = 0.
                        else:  # t > 0
                            log_alpha[:, t, u] = log_alpha[:, t - 1, u] + joiner_out[:, t - 1, 0, NULL_INDEX]
                    else:  # u > 0
                        if t == 0:
                            log_alpha[:, t, u] = log_alpha[:, t, u - 1] + torch.gather(
                                joiner_out[:, t, u - 1], dim=1, index=y[:, u - 1].view(-1, 1)).reshape(-1)
                        else:  # t > 0
                            log_alpha[:, t, u] = torch.logsumexp(torch.stack([
                                log_alpha[:, t - 1, u] + joiner_out[:, t - 1, u, NULL_INDEX],
                                log_alpha[:, t, u - 1] + torch.gather(joiner_out[:, t, u - 1], dim=1,
                                                                      index=y[:, u - 1].view(-1, 1)).reshape(-1)
                            ]), dim=0)
            log_probs = []
            for b in range(B):
                log_prob = log_alpha[b, T[b] - 1, U[b]] + joiner_out[b, T[b] - 1, U[b], NULL_INDEX]
                log_probs.append(log_prob)
            log_probs = torch.stack(log_probs)
            return log_probs

        def compute_loss(self, x, y, T, U):
            encoder_out = self.encoder.forward(x)
            predictor_out = self.predictor.forward(y)
            joiner_out = self.joiner.forward(encoder_out.unsqueeze(2), predictor_out.unsqueeze(1)).log_softmax(3)
            loss = -self.compute_forward_prob(joiner_out, T, U, y).mean()
            return loss

        def greedy_search(self, x, T):
            y_batch = []
            B = len(x)
            encoder_out = self.encoder.forward(x)
            U_max = 4
            for b in range(B):
                t = 0
                u = 0
                y = [self.predictor.start_symbol]
                predictor_state = self.predictor.initial_state.unsqueeze(0)
                while t < T[b] and u < U_max:
                    predictor_input = torch.tensor([y[-1]], device=x.device)
                    g_u, predictor_state = self.predictor.forward_one_step(predictor_input, predictor_state)
                    f_t = encoder_out[b, t]
                    h_t_u = self.joiner.forward(f_t, g_u)
                    argmax = h_t_u.max(-1)[1].item()
                    if argmax == NULL_INDEX:
                        t += 1
                    else:  # argmax == a label
                        u += 1
                        y.append(argmax)
                y_batch.append(y[1:])  # remove start symbol
            return y_batch

    model = Transducer(num_inputs=3, num_outputs=5)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.tensor(normal(rng, 2, 4, 3))
    y = torch.tensor([[1, 3, 2], [4, 2, 0]])
    T, U = [4, 3], [3, 2]
    losses = []
    for step in range(2):
        optimizer.zero_grad()
        loss = model.compute_loss(x, y, T, U)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        losses += [loss.item(), norm.item()]
    with torch.no_grad():
        guesses = model.greedy_search(x, T)
    return init, losses + [float(len(g)) for g in guesses] + [float(v) for g in guesses for v in g] + \
        summary(model.parameters())


def test_transducer():
    compare(transducer)


# (d) NX-AI's xLSTM (xlstm/blocks/mlstm/backends.py and layer.py, with its components): parallel_stabilized_simple
# (F.logsigmoid forget gates, torch.cumsum behind a torch.cat of zeros, the (S+1, S+1) repeat minus its transpose,
# torch.where over a boolean tril with -float("inf"), the row-wise max stabiliser, torch.maximum of |C.sum| and
# exp(-max)), recurrent_step_stabilized_simple (q.squeeze_(2).unsqueeze(-1) in place on a view, the running max
# m_state) stepped over the sequence with torch.zeros states, the mLSTM layer (an up-projection chunked into x and z,
# CausalConv1d by padding and a slice, SiLU, LinearHeadwiseExpand's einsum over a (heads, out, in) weight, the gates
# on torch.cat of q, k, v with the forget bias by torch.linspace(3.0, 6.0), MultiHeadLayerNorm by F.group_norm on the
# heads, a learnable skip, the output gate z, small_init_init_ and wang_init_ by torch.nn.init.normal_); AdamW for one
# step of next-token prediction, then the recurrent form against the parallel one
def xlstm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def parallel_stabilized_simple(queries, keys, values, igate_preact, fgate_preact, lower_triangular_matrix=None,
                                   stabilize_rowwise=True, eps=1e-6, **kwargs):
        B, NH, S, DH = queries.shape
        _dtype, _device = queries.dtype, queries.device
        # forget gate matrix
        log_fgates = torch.nn.functional.logsigmoid(fgate_preact)  # (B, NH, S, 1)
        if lower_triangular_matrix is None or S < lower_triangular_matrix.size(-1):
            ltr = torch.tril(torch.ones((S, S), dtype=torch.bool, device=_device))
        else:
            ltr = lower_triangular_matrix
        assert ltr.dtype == torch.bool, f"lower_triangular_matrix must be of dtype bool, got {ltr.dtype}"
        log_fgates_cumsum = torch.cat([torch.zeros((B, NH, 1, 1), dtype=_dtype, device=_device),
                                       torch.cumsum(log_fgates, dim=-2)], dim=-2)  # (B, NH, S+1, 1)
        # for each batch/head this is a matrix of shape (S+1, S+1) containing the cumsum of the log forget gate
        # values in the second dimension (colum dimension). Each row has the same is a copy of the first row.
        rep_log_fgates_cumsum = log_fgates_cumsum.repeat(1, 1, 1, S + 1)  # (B, NH, S+1, S+1)
        _log_fg_matrix = rep_log_fgates_cumsum - rep_log_fgates_cumsum.transpose(-2, -1)  # (B, NH, S+1, S+1)
        # causal masking & selection of the correct submatrix, such that forgetgate at timestep t is not applied
        # to the input at timestep t
        log_fg_matrix = torch.where(ltr, _log_fg_matrix[:, :, 1:, 1:], -float("inf"))  # (B, NH, S, S)
        # gate decay matrix D (combination of forget gate and input gate)
        log_D_matrix = log_fg_matrix + igate_preact.transpose(-2, -1)  # (B, NH, S, S)
        # D matrix stabilization
        if stabilize_rowwise:
            max_log_D, _ = torch.max(log_D_matrix, dim=-1, keepdim=True)  # (B, NH, S, 1)
        else:
            max_log_D = torch.max(log_D_matrix.view(B, NH, -1), dim=-1, keepdim=True)[0].unsqueeze(-1)
        log_D_matrix_stabilized = log_D_matrix - max_log_D  # (B, NH, S, S)
        D_matrix = torch.exp(log_D_matrix_stabilized)  # (B, NH, S, S)
        keys_scaled = keys / math.sqrt(DH)
        # combination matrix C
        qk_matrix = queries @ keys_scaled.transpose(-2, -1)  # (B, NH, S, S)
        C_matrix = qk_matrix * D_matrix  # (B, NH, S, S)
        normalizer = torch.maximum(C_matrix.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_D))  # (B, NH, S, 1)
        C_matrix_normalized = C_matrix / (normalizer + eps)
        # retrieved values
        h_tilde_state = C_matrix_normalized @ values  # (B, NH, S, DH)
        return h_tilde_state

    def recurrent_step_stabilized_simple(c_state, n_state, m_state, q, k, v, igate_preact, fgate_preact, eps=1e-6,
                                         **kwargs):
        B, NH, S, DH = q.shape
        # projections
        q, k, v = q.squeeze_(2).unsqueeze(-1), k.squeeze_(2).unsqueeze(-1), v.squeeze_(2).unsqueeze(-1)  # (B,NH,DH,1)
        # gates
        log_fg_act = torch.nn.functional.logsigmoid(fgate_preact)  # (B, NH, 1, 1)
        # update rule
        m_state_new = torch.max(log_fg_act + m_state, igate_preact)  # (B, NH, 1, 1)
        fg_act = torch.exp(log_fg_act + m_state - m_state_new)  # (B, NH, 1, 1)
        ig_act = torch.exp(igate_preact - m_state_new)  # (B, NH, 1, 1)
        k_scaled = k / math.sqrt(DH)
        c_state_new = fg_act * c_state + ig_act * (k_scaled @ v.transpose(-1, -2))  # (B, NH, DH, DH)
        n_state_new = fg_act * n_state + ig_act * k_scaled  # (B, NH, DH, 1)
        h_num = q.transpose(-1, -2) @ c_state_new  # (B, NH, 1, DH)
        qn_dotproduct = q.transpose(-1, -2) @ n_state_new  # (B, NH, 1, 1)
        max_val = torch.exp(-m_state_new)  # (B, NH, 1, 1)
        h_denom = torch.maximum(qn_dotproduct.abs(), max_val) + eps
        h = h_num / h_denom  # (B, NH, 1, DH) / (B, NH, 1, 1) = (B, NH, 1, DH)
        return h, (c_state_new, n_state_new, m_state_new)

    def small_init_init_(param, dim):
        std = math.sqrt(2 / (5 * dim))
        torch.nn.init.normal_(param, mean=0.0, std=std)
        return param

    def wang_init_(param, dim, num_blocks):
        std = 2 / num_blocks / dim
        torch.nn.init.normal_(param, mean=0.0, std=std)
        return param

    def bias_linspace_init_(param, start=3.4, end=6.0):
        assert param.dim() == 1, f"param must be 1-dimensional (typically a bias), got {param.dim()}"
        n_dims = param.shape[0]
        init_vals = torch.linspace(start, end, n_dims)
        with torch.no_grad():
            param.copy_(init_vals)
        return param

    class CausalConv1d(nn.Module):
        def __init__(self, feature_dim, kernel_size=4):
            super().__init__()
            self.pad = kernel_size - 1  # padding of this size assures temporal causality.
            self.conv = nn.Conv1d(in_channels=feature_dim, out_channels=feature_dim, kernel_size=kernel_size,
                                  padding=self.pad, groups=feature_dim, bias=True)

        def forward(self, x):
            x = x.transpose(2, 1)  # (B, F, T) tensor - now in the right shape for conv layer.
            y = self.conv(x)  # (B, F, T+pad) tensor
            y = y[:, :, : -self.pad]
            return y.transpose(2, 1)

    class LinearHeadwiseExpand(nn.Module):
        def __init__(self, in_features, num_heads, bias=False):
            super().__init__()
            self.num_heads = num_heads
            in_features_per_head = in_features // num_heads
            self.weight = nn.Parameter(torch.empty(num_heads, in_features_per_head, in_features_per_head))
            self.bias = nn.Parameter(torch.empty(in_features)) if bias else None
            self.reset_parameters()

        def reset_parameters(self, **kwargs):
            nn.init.normal_(self.weight.data, mean=0.0, std=math.sqrt(2 / 5 / self.weight.shape[-1]))
            if self.bias is not None:
                nn.init.zeros_(self.bias.data)

        def forward(self, x):
            shape = x.shape
            x = x.view(*shape[:-1], self.num_heads, -1)
            x = torch.einsum("...hd,hod->...ho", x, self.weight)
            x = x.reshape(*shape[:-1], -1)
            if self.bias is not None:
                x = x + self.bias
            return x

    class MultiHeadLayerNorm(nn.Module):
        def __init__(self, ndim, weight=True, bias=False, eps=1e-5):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(ndim)) if weight else None  # residual weight: 1 + weight
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None
            self.eps = eps

        @property
        def weight_proxy(self):
            return None if self.weight is None else 1.0 + self.weight

        def forward(self, input):
            assert input.dim() == 4, "Input must be 4D tensor (B, NH, S, DH)"
            B, NH, S, DH = input.shape
            gn_in_1 = input.transpose(1, 2)  # (B, S, NH, DH)
            gn_in_2 = gn_in_1.reshape(B * S, NH * DH)  # (B * S, NH * DH)
            out = F.group_norm(gn_in_2, num_groups=NH, weight=self.weight_proxy, bias=self.bias, eps=self.eps)
            # (B * S), (NH * DH) -> (B, S, NH, DH) -> (B, NH, S, DH)
            out = out.view(B, S, NH, DH).transpose(1, 2)
            return out

    class mLSTMCell(nn.Module):
        def __init__(self, embedding_dim, num_heads, context_length):
            super().__init__()
            self.num_heads = num_heads
            self.igate = nn.Linear(3 * embedding_dim, num_heads)
            self.fgate = nn.Linear(3 * embedding_dim, num_heads)
            self.outnorm = MultiHeadLayerNorm(ndim=embedding_dim, weight=True, bias=False)
            self.register_buffer("causal_mask", torch.tril(torch.ones(context_length, context_length,
                                                                      dtype=torch.bool)), persistent=False)
            self.reset_parameters()

        def forward(self, q, k, v, recurrent=False):
            B, S, _ = q.shape  # (B, S, H)
            if_gate_input = torch.cat([q, k, v], dim=-1)
            q = q.view(B, S, self.num_heads, -1)  # (B, S, NH, DH)
            k = k.view(B, S, self.num_heads, -1)  # (B, S, NH, DH)
            v = v.view(B, S, self.num_heads, -1)  # (B, S, NH, DH)
            q = q.transpose(1, 2)  # (B, NH, S, DH)
            k = k.transpose(1, 2)  # (B, NH, S, DH)
            v = v.transpose(1, 2)  # (B, NH, S, DH)
            # compute input and forget gate pre-activations
            igate_preact = self.igate(if_gate_input)  # (B, S, NH)
            igate_preact = igate_preact.transpose(-1, -2).unsqueeze(-1)  # (B, NH, S, 1)
            fgate_preact = self.fgate(if_gate_input)  # (B, S, NH)
            fgate_preact = fgate_preact.transpose(-1, -2).unsqueeze(-1)  # (B, NH, S, 1)#
            if recurrent:
                DH = q.shape[-1]
                c_state = torch.zeros(B, self.num_heads, DH, DH)
                n_state = torch.zeros(B, self.num_heads, DH, 1)
                m_state = torch.zeros(B, self.num_heads, 1, 1)
                hs = []
                for t in range(S):
                    h, (c_state, n_state, m_state) = recurrent_step_stabilized_simple(
                        c_state, n_state, m_state, q[:, :, t:t + 1], k[:, :, t:t + 1], v[:, :, t:t + 1],
                        igate_preact[:, :, t:t + 1], fgate_preact[:, :, t:t + 1])
                    hs.append(h)
                h_state = torch.cat(hs, dim=2)
            else:
                h_state = parallel_stabilized_simple(queries=q, keys=k, values=v, igate_preact=igate_preact,
                                                     fgate_preact=fgate_preact,
                                                     lower_triangular_matrix=self.causal_mask)  # (B, NH, S, DH)
            h_state_norm = self.outnorm(h_state)  # (B, NH, S, DH)
            h_state_norm = h_state_norm.transpose(1, 2).reshape(B, S, -1)  # (B, NH, S, DH) -> (B, S, H)
            return h_state_norm

        def reset_parameters(self):
            self.outnorm.reset_parameters() if hasattr(self.outnorm, "reset_parameters") else None
            # forget gate initialization
            torch.nn.init.zeros_(self.fgate.weight)
            bias_linspace_init_(self.fgate.bias, start=3.0, end=6.0)
            # input gate initialization
            torch.nn.init.zeros_(self.igate.weight)
            torch.nn.init.normal_(self.igate.bias, mean=0.0, std=0.1)

    class mLSTMLayer(nn.Module):
        def __init__(self, embedding_dim, num_heads, context_length, proj_factor=2.0, num_blocks=1):
            super().__init__()
            self.inner_embedding_dim = int(proj_factor * embedding_dim)
            self.proj_up = nn.Linear(embedding_dim, 2 * self.inner_embedding_dim, bias=False)
            self.q_proj = LinearHeadwiseExpand(self.inner_embedding_dim, num_heads)
            self.k_proj = LinearHeadwiseExpand(self.inner_embedding_dim, num_heads)
            self.v_proj = LinearHeadwiseExpand(self.inner_embedding_dim, num_heads)
            self.conv1d = CausalConv1d(feature_dim=self.inner_embedding_dim, kernel_size=4)
            self.conv_act_fn = nn.SiLU()
            self.mlstm_cell = mLSTMCell(self.inner_embedding_dim, num_heads, context_length)
            self.ogate_act_fn = nn.SiLU()
            self.learnable_skip = nn.Parameter(torch.ones(self.inner_embedding_dim, requires_grad=True))
            self.proj_down = nn.Linear(self.inner_embedding_dim, embedding_dim, bias=False)
            self.dropout = nn.Dropout(0.0)
            small_init_init_(self.proj_up.weight, dim=embedding_dim)
            wang_init_(self.proj_down.weight, dim=embedding_dim, num_blocks=num_blocks)

        def forward(self, x, recurrent=False):
            B, S, _ = x.shape
            # up-projection
            x_inner = self.proj_up(x)
            x_mlstm, z = torch.split(x_inner, split_size_or_sections=self.inner_embedding_dim, dim=-1)
            # mlstm branch
            x_mlstm_conv = self.conv1d(x_mlstm)
            x_mlstm_conv_act = self.conv_act_fn(x_mlstm_conv)
            q = self.q_proj(x_mlstm_conv_act)
            k = self.k_proj(x_mlstm_conv_act)
            v = self.v_proj(x_mlstm)
            h_tilde_state = self.mlstm_cell(q=q, k=k, v=v, recurrent=recurrent)
            h_tilde_state_skip = h_tilde_state + (self.learnable_skip * x_mlstm_conv_act)
            # output / z branch
            h_state = h_tilde_state_skip * self.ogate_act_fn(z)
            # down-projection
            y = self.dropout(self.proj_down(h_state))
            return y

    class xLSTMLM(nn.Module):
        def __init__(self, vocab_size, embedding_dim, num_heads, context_length):
            super().__init__()
            self.token_embedding = nn.Embedding(vocab_size, embedding_dim)
            self.norm = nn.LayerNorm(embedding_dim, bias=False)
            self.block = mLSTMLayer(embedding_dim, num_heads, context_length)
            self.post_blocks_norm = nn.LayerNorm(embedding_dim, bias=False)
            self.lm_head = nn.Linear(embedding_dim, vocab_size, bias=False)

        def forward(self, idx, recurrent=False):
            x = self.token_embedding(idx)
            x = x + self.block(self.norm(x), recurrent=recurrent)
            return self.lm_head(self.post_blocks_norm(x))

    model = xLSTMLM(vocab_size=11, embedding_dim=8, num_heads=2, context_length=8)
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    tokens = torch.tensor(rng.integers(0, 11, (2, 7)))
    losses = []
    for step in range(2):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        parallel = model(tokens)
        recurrent = model(tokens, recurrent=True)
    assert (parallel - recurrent).abs().max().item() < 1e-4
    return init, losses + summary([parallel, recurrent]) + summary(model.parameters())


def test_xlstm():
    compare(xlstm)


# (e) gusye1234/LightGCN-PyTorch's model.py, dataloader.py's getSparseGraph and Procedure.py: the normalised
# bipartite adjacency D^-1/2 A D^-1/2 (built in numpy where the source takes scipy) through
# _convert_sp_mat_to_sp_tensor (torch.Tensor(coo.row).long(), torch.stack, torch.sparse.FloatTensor(index, data,
# torch.Size(coo.shape))) and .coalesce(); __dropout_x reading the graph's x.indices().t() and x.values(), keeping
# edges by (torch.rand(len(values)) + keep_prob).int().bool() and rebuilding a sparse tensor from the kept ones;
# computer()'s torch.sparse.mm propagation, torch.stack of the layers' embeddings and their mean, torch.split into
# users and items; bpr_loss by softplus(neg - pos) with the ego embeddings' norm(2).pow(2) regulariser; Adam; the
# test's getUsersRating, the training items masked by rating[exclude_index, exclude_items] = -(1 << 10), topk and
# recall/precision in numpy. torch replays tnet's torch.rand draws. tnet found: a sparse tensor's indices(), values(),
# is_coalesced() and _nnz() were missing (tnet stores sparse tensors dense; they now keep their COO structure)
def lightgcn(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    counter = itertools.count()

    class Loader:
        def __init__(self, n_users, m_items, train_pairs):
            self.n_users, self.m_items = n_users, m_items
            self.trainUser, self.trainItem = train_pairs[:, 0], train_pairs[:, 1]
            self.allPos = [self.trainItem[self.trainUser == u] for u in range(n_users)]
            self.Graph = None

        def _convert_sp_mat_to_sp_tensor(self, X):
            row, col = np.nonzero(X)  # coo = X.tocoo().astype(np.float32)
            row = torch.Tensor(row).long()
            col = torch.Tensor(col).long()
            index = torch.stack([row, col])
            data = torch.FloatTensor(X[np.nonzero(X)].astype(np.float32))
            return torch.sparse.FloatTensor(index, data, torch.Size(X.shape))

        def getSparseGraph(self):
            if self.Graph is None:
                n = self.n_users + self.m_items
                adj_mat = np.zeros((n, n), dtype=np.float32)
                R = np.zeros((self.n_users, self.m_items), dtype=np.float32)
                R[self.trainUser, self.trainItem] = 1.0
                adj_mat[:self.n_users, self.n_users:] = R
                adj_mat[self.n_users:, :self.n_users] = R.T
                rowsum = np.array(adj_mat.sum(axis=1))
                d_inv = np.power(rowsum, -0.5).flatten()
                d_inv[np.isinf(d_inv)] = 0.
                d_mat = np.diag(d_inv)
                norm_adj = d_mat.dot(adj_mat).dot(d_mat)
                self.Graph = self._convert_sp_mat_to_sp_tensor(norm_adj)
                self.Graph = self.Graph.coalesce()
            return self.Graph

    class LightGCN(nn.Module):
        def __init__(self, config, dataset):
            super().__init__()
            self.config = config
            self.dataset = dataset
            self.num_users = self.dataset.n_users
            self.num_items = self.dataset.m_items
            self.latent_dim = self.config['latent_dim_rec']
            self.n_layers = self.config['lightGCN_n_layers']
            self.keep_prob = self.config['keep_prob']
            self.embedding_user = torch.nn.Embedding(num_embeddings=self.num_users, embedding_dim=self.latent_dim)
            self.embedding_item = torch.nn.Embedding(num_embeddings=self.num_items, embedding_dim=self.latent_dim)
            nn.init.normal_(self.embedding_user.weight, std=0.1)
            nn.init.normal_(self.embedding_item.weight, std=0.1)
            self.f = nn.Sigmoid()
            self.Graph = self.dataset.getSparseGraph()

        def __dropout_x(self, x, keep_prob):
            size = x.size()
            index = x.indices().t()
            values = x.values()
            random_index = replayed(m, replay, next(counter), torch.rand(len(values))) + keep_prob
            random_index = random_index.int().bool()
            index = index[random_index]
            values = values[random_index] / keep_prob
            g = torch.sparse.FloatTensor(index.t(), values, size)
            return g

        def __dropout(self, keep_prob):
            return self.__dropout_x(self.Graph, keep_prob)

        def computer(self):
            users_emb = self.embedding_user.weight
            items_emb = self.embedding_item.weight
            all_emb = torch.cat([users_emb, items_emb])
            embs = [all_emb]
            if self.config['dropout'] and self.training:
                g_droped = self.__dropout(self.keep_prob)
            else:
                g_droped = self.Graph
            for layer in range(self.n_layers):
                all_emb = torch.sparse.mm(g_droped, all_emb)
                embs.append(all_emb)
            embs = torch.stack(embs, dim=1)
            light_out = torch.mean(embs, dim=1)
            users, items = torch.split(light_out, [self.num_users, self.num_items])
            return users, items

        def getUsersRating(self, users):
            all_users, all_items = self.computer()
            users_emb = all_users[users.long()]
            items_emb = all_items
            rating = self.f(torch.matmul(users_emb, items_emb.t()))
            return rating

        def getEmbedding(self, users, pos_items, neg_items):
            all_users, all_items = self.computer()
            users_emb = all_users[users]
            pos_emb = all_items[pos_items]
            neg_emb = all_items[neg_items]
            users_emb_ego = self.embedding_user(users)
            pos_emb_ego = self.embedding_item(pos_items)
            neg_emb_ego = self.embedding_item(neg_items)
            return users_emb, pos_emb, neg_emb, users_emb_ego, pos_emb_ego, neg_emb_ego

        def bpr_loss(self, users, pos, neg):
            (users_emb, pos_emb, neg_emb, userEmb0, posEmb0, negEmb0) = self.getEmbedding(users.long(), pos.long(),
                                                                                         neg.long())
            reg_loss = (1 / 2) * (userEmb0.norm(2).pow(2) + posEmb0.norm(2).pow(2) + negEmb0.norm(2).pow(2)) / float(
                len(users))
            pos_scores = torch.mul(users_emb, pos_emb)
            pos_scores = torch.sum(pos_scores, dim=1)
            neg_scores = torch.mul(users_emb, neg_emb)
            neg_scores = torch.sum(neg_scores, dim=1)
            loss = torch.mean(torch.nn.functional.softplus(neg_scores - pos_scores))
            return loss, reg_loss

    n_users, m_items = 4, 6
    pairs = np.array([[0, 0], [0, 2], [1, 1], [1, 2], [1, 5], [2, 3], [3, 0], [3, 4], [3, 5]])
    dataset = Loader(n_users, m_items, pairs)
    config = {'latent_dim_rec': 8, 'lightGCN_n_layers': 2, 'keep_prob': 0.7, 'dropout': True, 'decay': 1e-3}
    model = LightGCN(config, dataset)
    init = load(m, model, state)
    graph = model.Graph
    assert graph.is_coalesced() and graph._nnz() == 2 * len(pairs) and tuple(graph.indices().shape) == (2, 18)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    model.train()
    for step in range(2):  # UniformSample_original_python
        users = rng.integers(0, n_users, 5)
        pos = np.array([rng.choice(dataset.allPos[u]) for u in users])
        neg = np.array([rng.choice(np.setdiff1d(np.arange(m_items), dataset.allPos[u])) for u in users])
        users, pos, neg = torch.Tensor(users).long(), torch.Tensor(pos).long(), torch.Tensor(neg).long()
        loss, reg_loss = model.bpr_loss(users, pos, neg)
        reg_loss = reg_loss * config['decay']
        loss = loss + reg_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses += [loss.cpu().item(), reg_loss.item()]
    model.eval()
    with torch.no_grad():
        batch_users = torch.arange(n_users)
        rating = model.getUsersRating(batch_users)
        exclude_index, exclude_items = pairs[:, 0], pairs[:, 1]
        rating[exclude_index, exclude_items] = -(1 << 10)
        _, rating_K = torch.topk(rating, k=2)
    rating_K = rating_K.cpu().numpy()
    test = [[1], [4], [0, 1], [2]]
    hits = [sum(i in t for i in r) for r, t in zip(rating_K, test)]
    recall = np.mean([h / len(t) for h, t in zip(hits, test)])
    precision = np.mean(hits) / 2
    return init, losses + [float(recall), float(precision)] + summary([rating]) + summary(model.parameters())


def test_lightgcn():
    compare(lightgcn, replay={})


# (f) Diego999/pyGAT's sparse model (layers.py's SpecialSpmmFunction, SpecialSpmm and SpGraphAttentionLayer, models.py's
# SpGAT, train.py with --sparse): the edges by adj.nonzero().t(), edge_h by torch.cat of h[edge[0, :], :] and
# h[edge[1, :], :] then .t(), edge_e = torch.exp(-leakyrelu(a.mm(edge_h).squeeze())), the row sums and the
# aggregation through a custom Function whose forward builds torch.sparse_coo_tensor(indices, values, shape), saves it
# by ctx.save_for_backward(a, b) and returns torch.matmul(a, b), and whose backward reads a._indices() for the edges'
# flat positions in grad_output.matmul(b.t()) and returns a.t().matmul(grad_output) for b (needs_input_grad[1] and
# [3]); xavier_normal_ on .data with gain 1.414, the heads registered by add_module, F.elu, log_softmax, nll_loss on
# idx_train, Adam with weight decay, accuracy by max(1)[1].type_as(labels).eq(labels) (its .double() reads .float():
# tnet refuses float64). Dropout 0. It runs on the COO accessors LightGCN's port brought (a._indices())
def pygat_sparse(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class SpecialSpmmFunction(torch.autograd.Function):
        """Special function for only sparse region backpropataion layer."""
        @staticmethod
        def forward(ctx, indices, values, shape, b):
            assert indices.requires_grad == False  # noqa: E712 (the source's)
            a = torch.sparse_coo_tensor(indices, values, shape)
            ctx.save_for_backward(a, b)
            ctx.N = shape[0]
            return torch.matmul(a, b)

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            grad_values = grad_b = None
            if ctx.needs_input_grad[1]:
                grad_a_dense = grad_output.matmul(b.t())
                edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
                grad_values = grad_a_dense.view(-1)[edge_idx]
            if ctx.needs_input_grad[3]:
                grad_b = a.t().matmul(grad_output)
            return None, grad_values, None, grad_b

    class SpecialSpmm(nn.Module):
        def forward(self, indices, values, shape, b):
            return SpecialSpmmFunction.apply(indices, values, shape, b)

    class SpGraphAttentionLayer(nn.Module):
        """Sparse version GAT layer, similar to https://arxiv.org/abs/1710.10903"""
        def __init__(self, in_features, out_features, dropout, alpha, concat=True):
            super(SpGraphAttentionLayer, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.alpha = alpha
            self.concat = concat
            self.W = nn.Parameter(torch.zeros(size=(in_features, out_features)))
            nn.init.xavier_normal_(self.W.data, gain=1.414)
            self.a = nn.Parameter(torch.zeros(size=(1, 2 * out_features)))
            nn.init.xavier_normal_(self.a.data, gain=1.414)
            self.dropout = nn.Dropout(dropout)
            self.leakyrelu = nn.LeakyReLU(self.alpha)
            self.special_spmm = SpecialSpmm()

        def forward(self, input, adj):
            dv = 'cuda' if input.is_cuda else 'cpu'
            N = input.size()[0]
            edge = adj.nonzero().t()
            h = torch.mm(input, self.W)
            # h: N x out
            assert not torch.isnan(h).any()
            # Self-attention on the nodes - Shared attention mechanism
            edge_h = torch.cat((h[edge[0, :], :], h[edge[1, :], :]), dim=1).t()
            # edge: 2*D x E
            edge_e = torch.exp(-self.leakyrelu(self.a.mm(edge_h).squeeze()))
            assert not torch.isnan(edge_e).any()
            # edge_e: E
            e_rowsum = self.special_spmm(edge, edge_e, torch.Size([N, N]), torch.ones(size=(N, 1), device=dv))
            # e_rowsum: N x 1
            edge_e = self.dropout(edge_e)
            # edge_e: E
            h_prime = self.special_spmm(edge, edge_e, torch.Size([N, N]), h)
            assert not torch.isnan(h_prime).any()
            # h_prime: N x out
            h_prime = h_prime.div(e_rowsum)
            # h_prime: N x out
            assert not torch.isnan(h_prime).any()
            if self.concat:
                # if this layer is not last layer,
                return F.elu(h_prime)
            else:
                # if this layer is last layer,
                return h_prime

    class SpGAT(nn.Module):
        def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
            """Sparse version of GAT."""
            super(SpGAT, self).__init__()
            self.dropout = dropout
            self.attentions = [SpGraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True)
                               for _ in range(nheads)]
            for i, attention in enumerate(self.attentions):
                self.add_module('attention_{}'.format(i), attention)
            self.out_att = SpGraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False)

        def forward(self, x, adj):
            x = F.dropout(x, self.dropout, training=self.training)
            x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
            x = F.dropout(x, self.dropout, training=self.training)
            x = F.elu(self.out_att(x, adj))
            return F.log_softmax(x, dim=1)

    def accuracy(output, labels):
        preds = output.max(1)[1].type_as(labels)
        correct = preds.eq(labels).float()  # the source's .double(): tnet refuses float64 (README)
        correct = correct.sum()
        return correct / len(labels)

    n = 7
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [0, 3], [2, 6]])
    adj = np.zeros((n, n), np.float32)
    adj[edges[:, 0], edges[:, 1]] = 1
    adj = adj + adj.T + np.eye(n, dtype=np.float32)  # build symmetric adjacency matrix, self loops
    adj = adj / adj.sum(1, keepdims=True)  # normalize_adj
    features = torch.FloatTensor(normal(rng, n, 5))
    adj = torch.FloatTensor(adj)
    labels = torch.LongTensor(rng.integers(0, 3, n))
    idx_train, idx_val = torch.LongTensor(range(4)), torch.LongTensor(range(4, 7))
    model = SpGAT(nfeat=features.shape[1], nhid=4, nclass=int(labels.max()) + 1, dropout=0.0, nheads=2, alpha=0.2)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
    losses = []
    for epoch in range(2):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        model.eval()
        output = model(features, adj)
        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        losses += [loss_train.data.item(), acc_train.data.item(), loss_val.data.item()]
    return init, losses + summary(model.parameters())


def test_pygat_sparse():
    compare(pygat_sparse)


# (g) A vocoder trained on spectral losses alone: kan-bayashi's ParallelWaveGAN stft_loss.py (stft() by
# torch.stft(x, fft_size, hop_size, win_length, window, return_complex=False), real and imag by [..., 0] and
# [..., 1], the magnitude by sqrt(clamp(real ** 2 + imag ** 2, min=1e-7)).transpose(2, 1); SpectralConvergengeLoss
# by torch.norm(..., p="fro") quotients; LogSTFTMagnitudeLoss; STFTLoss's window by
# register_buffer("window", getattr(torch, window)(win_length)); MultiResolutionSTFTLoss's ModuleList summed with +=
# and /= len) and jik876/hifi-gan's meldataset.mel_spectrogram (the module-level mel_basis and hann_window dicts keyed
# by str(fmax) + '_' + str(y.device), F.pad(y.unsqueeze(1), ..., mode='reflect').squeeze(1), torch.stft with
# center=False, torch.sqrt(spec.pow(2).sum(-1) + 1e-9), torch.matmul by the mel basis, the log of the clamp) around a
# small HiFi-GAN-like generator (conv_pre, a ConvTranspose1d upsampling by the hop, leaky_relu, conv_post, tanh);
# the mel L1 loss times 45 plus the STFT losses, AdamW with betas (0.8, 0.99) and ExponentialLR. librosa's mel filters
# are written in numpy (HTK's scale). tnet found: torch.stft was missing (tnet has no complex dtypes; it now gives
# return_complex=False's real form)
def vocoder_stft_losses(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def librosa_mel_fn(sr, n_fft, n_mels, fmin, fmax):
        hz_to_mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
        mel_to_hz = lambda mm: 700.0 * (10 ** (mm / 2595.0) - 1.0)  # noqa: E731
        fftfreqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
        mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
        fdiff = np.diff(mel_f)
        ramps = np.subtract.outer(mel_f, fftfreqs)
        lower = -ramps[:-2] / fdiff[:-1, None]
        upper = ramps[2:] / fdiff[1:, None]
        weights = np.maximum(0, np.minimum(lower, upper))
        enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])  # Slaney-style mel is scaled to be approx constant energy
        return (weights * enorm[:, None]).astype(np.float32)

    def dynamic_range_compression_torch(x, C=1, clip_val=1e-5):
        return torch.log(torch.clamp(x, min=clip_val) * C)

    def spectral_normalize_torch(magnitudes):
        output = dynamic_range_compression_torch(magnitudes)
        return output

    mel_basis = {}
    hann_window = {}

    def mel_spectrogram(y, n_fft, num_mels, sampling_rate, hop_size, win_size, fmin, fmax, center=False):
        if torch.min(y) < -1.:
            print('min value is ', torch.min(y))
        if torch.max(y) > 1.:
            print('max value is ', torch.max(y))
        if fmax not in mel_basis:
            mel = librosa_mel_fn(sampling_rate, n_fft, num_mels, fmin, fmax)
            mel_basis[str(fmax) + '_' + str(y.device)] = torch.from_numpy(mel).float().to(y.device)
            hann_window[str(y.device)] = torch.hann_window(win_size).to(y.device)
        y = torch.nn.functional.pad(y.unsqueeze(1), (int((n_fft - hop_size) / 2), int((n_fft - hop_size) / 2)),
                                    mode='reflect')
        y = y.squeeze(1)
        spec = torch.stft(y, n_fft, hop_length=hop_size, win_length=win_size, window=hann_window[str(y.device)],
                          center=center, pad_mode='reflect', normalized=False, onesided=True, return_complex=False)
        spec = torch.sqrt(spec.pow(2).sum(-1) + (1e-9))
        spec = torch.matmul(mel_basis[str(fmax) + '_' + str(y.device)], spec)
        spec = spectral_normalize_torch(spec)
        return spec

    def stft(x, fft_size, hop_size, win_length, window):
        """Perform STFT and convert to magnitude spectrogram."""
        x_stft = torch.stft(x, fft_size, hop_size, win_length, window, return_complex=False)
        real = x_stft[..., 0]
        imag = x_stft[..., 1]
        # NOTE(kan-bayashi): clamp is needed to avoid nan or inf
        return torch.sqrt(torch.clamp(real ** 2 + imag ** 2, min=1e-7)).transpose(2, 1)

    class SpectralConvergengeLoss(torch.nn.Module):
        """Spectral convergence loss module."""
        def forward(self, x_mag, y_mag):
            return torch.norm(y_mag - x_mag, p="fro") / torch.norm(y_mag, p="fro")

    class LogSTFTMagnitudeLoss(torch.nn.Module):
        """Log STFT magnitude loss module."""
        def forward(self, x_mag, y_mag):
            return F.l1_loss(torch.log(y_mag), torch.log(x_mag))

    class STFTLoss(torch.nn.Module):
        """STFT loss module."""
        def __init__(self, fft_size=1024, shift_size=120, win_length=600, window="hann_window"):
            super(STFTLoss, self).__init__()
            self.fft_size = fft_size
            self.shift_size = shift_size
            self.win_length = win_length
            self.spectral_convergenge_loss = SpectralConvergengeLoss()
            self.log_stft_magnitude_loss = LogSTFTMagnitudeLoss()
            # NOTE(kan-bayashi): Use register_buffer to fix #223
            self.register_buffer("window", getattr(torch, window)(win_length))

        def forward(self, x, y):
            x_mag = stft(x, self.fft_size, self.shift_size, self.win_length, self.window)
            y_mag = stft(y, self.fft_size, self.shift_size, self.win_length, self.window)
            sc_loss = self.spectral_convergenge_loss(x_mag, y_mag)
            mag_loss = self.log_stft_magnitude_loss(x_mag, y_mag)
            return sc_loss, mag_loss

    class MultiResolutionSTFTLoss(torch.nn.Module):
        """Multi resolution STFT loss module."""
        def __init__(self, fft_sizes=[1024, 2048, 512], hop_sizes=[120, 240, 50], win_lengths=[600, 1200, 240],
                     window="hann_window"):
            super(MultiResolutionSTFTLoss, self).__init__()
            assert len(fft_sizes) == len(hop_sizes) == len(win_lengths)
            self.stft_losses = torch.nn.ModuleList()
            for fs, ss, wl in zip(fft_sizes, hop_sizes, win_lengths):
                self.stft_losses += [STFTLoss(fs, ss, wl, window)]

        def forward(self, x, y):
            if len(x.shape) == 3:
                x = x.view(-1, x.size(2))  # (B, C, T) -> (B x C, T)
                y = y.view(-1, y.size(2))  # (B, C, T) -> (B x C, T)
            sc_loss = 0.0
            mag_loss = 0.0
            for f in self.stft_losses:
                sc_l, mag_l = f(x, y)
                sc_loss += sc_l
                mag_loss += mag_l
            sc_loss /= len(self.stft_losses)
            mag_loss /= len(self.stft_losses)
            return sc_loss, mag_loss

    class Generator(torch.nn.Module):
        def __init__(self, num_mels, hop, ch=8):
            super().__init__()
            self.conv_pre = nn.Conv1d(num_mels, ch, 7, 1, padding=3)
            self.ups = nn.ModuleList([nn.ConvTranspose1d(ch, ch // 2, 2 * hop, hop, padding=hop // 2)])
            self.conv_post = nn.Conv1d(ch // 2, 1, 7, 1, padding=3)

        def forward(self, x):
            x = self.conv_pre(x)
            for up in self.ups:
                x = F.leaky_relu(x, 0.1)
                x = up(x)
            x = F.leaky_relu(x)
            x = self.conv_post(x)
            x = torch.tanh(x)
            return x

    h = dict(n_fft=64, num_mels=8, sampling_rate=8000, hop_size=16, win_size=64, fmin=0, fmax=4000)
    generator = Generator(h["num_mels"], h["hop_size"])
    init = load(m, generator, state)
    stft_criterion = MultiResolutionSTFTLoss(fft_sizes=[64, 32, 16], hop_sizes=[8, 4, 2], win_lengths=[32, 16, 8])
    optim_g = torch.optim.AdamW(generator.parameters(), 2e-3, betas=[0.8, 0.99])
    scheduler_g = torch.optim.lr_scheduler.ExponentialLR(optim_g, gamma=0.999)
    t = np.arange(256) / h["sampling_rate"]
    audio = 0.5 * np.sin(2 * np.pi * np.array([[440.0], [1000.0]]) * t) + 0.05 * normal(rng, 2, 256)
    y = torch.FloatTensor(audio.astype(np.float32))
    losses = []
    for step in range(2):
        x = mel_spectrogram(y, **h)
        y_g_hat = generator(x)
        y_g_hat_mel = mel_spectrogram(y_g_hat.squeeze(1), **h)
        optim_g.zero_grad()
        loss_mel = F.l1_loss(x, y_g_hat_mel) * 45
        sc_loss, mag_loss = stft_criterion(y_g_hat, y.unsqueeze(1))
        loss_gen_all = loss_mel + sc_loss + mag_loss
        loss_gen_all.backward()
        optim_g.step()
        scheduler_g.step()
        losses += [loss_mel.item(), sc_loss.item(), mag_loss.item()]
    assert tuple(x.shape) == (2, 8, 16) and tuple(y_g_hat.shape) == (2, 1, 256)
    return init, losses + summary([x]) + summary(generator.parameters())


def test_vocoder_stft_losses():
    compare(vocoder_stft_losses)


# (h) wouterkool/attention-learn-to-route's AttentionModel on TSP (nets/attention_model.py, nets/graph_encoder.py,
# problems/tsp/state_tsp.py, train.py, reinforce_baselines.py): MultiHeadAttention with W_query/W_key/W_val of shape
# (n_heads, input_dim, key_dim) initialised by uniform_(-stdv, stdv) over self.parameters(), SkipConnection,
# Normalization's BatchNorm1d on input.view(-1, input.size(-1)), a StateTSP NamedTuple (visited_ by scatter of
# prev_a, first_a, lengths by (cur_coord - prev).norm(p=2, dim=-1), update by _replace), the AttentionModelFixed
# precompute (graph embedding's mean, project_node_embeddings(...).chunk(3, dim=-1), _make_heads by view/permute),
# the step context by torch.gather of the current and first nodes (W_placeholder first), the glimpse with
# compatibility[mask[None, :, :, None, :].expand_as(compatibility)] = -math.inf, tanh clipping, logits[mask] =
# -math.inf, log_softmax; _select_node by probs.multinomial(1).squeeze(1) (torch replays tnet's draws) with
# mask.gather(1, selected.unsqueeze(-1)).data.any(); get_costs by gather and norm; _calc_log_likelihood; the
# ExponentialBaseline; train_batch's REINFORCE loss with clip_grad_norms over param_groups (math.inf first)
def attention_model_tsp(m, state=None, replay=None):
    import typing
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    counter = itertools.count()

    class SkipConnection(nn.Module):
        def __init__(self, module):
            super(SkipConnection, self).__init__()
            self.module = module

        def forward(self, input):
            return input + self.module(input)

    class MultiHeadAttention(nn.Module):
        def __init__(self, n_heads, input_dim, embed_dim, val_dim=None, key_dim=None):
            super(MultiHeadAttention, self).__init__()
            if val_dim is None:
                val_dim = embed_dim // n_heads
            if key_dim is None:
                key_dim = val_dim
            self.n_heads = n_heads
            self.input_dim = input_dim
            self.embed_dim = embed_dim
            self.val_dim = val_dim
            self.key_dim = key_dim
            self.norm_factor = 1 / math.sqrt(key_dim)  # See Attention is all you need
            self.W_query = nn.Parameter(torch.Tensor(n_heads, input_dim, key_dim))
            self.W_key = nn.Parameter(torch.Tensor(n_heads, input_dim, key_dim))
            self.W_val = nn.Parameter(torch.Tensor(n_heads, input_dim, val_dim))
            self.W_out = nn.Parameter(torch.Tensor(n_heads, val_dim, embed_dim))
            self.init_parameters()

        def init_parameters(self):
            for param in self.parameters():
                stdv = 1. / math.sqrt(param.size(-1))
                param.data.uniform_(-stdv, stdv)

        def forward(self, q, h=None, mask=None):
            if h is None:
                h = q  # compute self-attention
            # h should be (batch_size, graph_size, input_dim)
            batch_size, graph_size, input_dim = h.size()
            n_query = q.size(1)
            hflat = h.contiguous().view(-1, input_dim)
            qflat = q.contiguous().view(-1, input_dim)
            # last dimension can be different for keys and values
            shp = (self.n_heads, batch_size, graph_size, -1)
            shp_q = (self.n_heads, batch_size, n_query, -1)
            # Calculate queries, (n_heads, n_query, graph_size, key/val_size)
            Q = torch.matmul(qflat, self.W_query).view(shp_q)
            # Calculate keys and values (n_heads, batch_size, graph_size, key/val_size)
            K = torch.matmul(hflat, self.W_key).view(shp)
            V = torch.matmul(hflat, self.W_val).view(shp)
            # Calculate compatibility (n_heads, batch_size, n_query, graph_size)
            compatibility = self.norm_factor * torch.matmul(Q, K.transpose(2, 3))
            attn = torch.softmax(compatibility, dim=-1)
            heads = torch.matmul(attn, V)
            out = torch.mm(
                heads.permute(1, 2, 0, 3).contiguous().view(-1, self.n_heads * self.val_dim),
                self.W_out.view(-1, self.embed_dim)
            ).view(batch_size, n_query, self.embed_dim)
            return out

    class Normalization(nn.Module):
        def __init__(self, embed_dim, normalization='batch'):
            super(Normalization, self).__init__()
            self.normalizer = nn.BatchNorm1d(embed_dim, affine=True)

        def forward(self, input):
            return self.normalizer(input.view(-1, input.size(-1))).view(*input.size())

    class MultiHeadAttentionLayer(nn.Sequential):
        def __init__(self, n_heads, embed_dim, feed_forward_hidden=512, normalization='batch'):
            super(MultiHeadAttentionLayer, self).__init__(
                SkipConnection(MultiHeadAttention(n_heads, input_dim=embed_dim, embed_dim=embed_dim)),
                Normalization(embed_dim, normalization),
                SkipConnection(
                    nn.Sequential(
                        nn.Linear(embed_dim, feed_forward_hidden),
                        nn.ReLU(),
                        nn.Linear(feed_forward_hidden, embed_dim)
                    ) if feed_forward_hidden > 0 else nn.Linear(embed_dim, embed_dim)
                ),
                Normalization(embed_dim, normalization)
            )

    class GraphAttentionEncoder(nn.Module):
        def __init__(self, n_heads, embed_dim, n_layers, node_dim=None, normalization='batch',
                     feed_forward_hidden=512):
            super(GraphAttentionEncoder, self).__init__()
            # To map input to embedding space
            self.init_embed = nn.Linear(node_dim, embed_dim) if node_dim is not None else None
            self.layers = nn.Sequential(*(
                MultiHeadAttentionLayer(n_heads, embed_dim, feed_forward_hidden, normalization)
                for _ in range(n_layers)
            ))

        def forward(self, x, mask=None):
            assert mask is None, "TODO mask not yet supported!"
            # Batch multiply to get initial embeddings of nodes
            h = self.init_embed(x.view(-1, x.size(-1))).view(*x.size()[:2], -1) if self.init_embed is not None else x
            h = self.layers(h)
            return (
                h,  # (batch_size, graph_size, embed_dim)
                h.mean(dim=1),  # average to get embedding of graph, (batch_size, embed_dim)
            )

    class StateTSP(typing.NamedTuple):
        loc: typing.Any
        dist: typing.Any
        ids: typing.Any
        first_a: typing.Any
        prev_a: typing.Any
        visited_: typing.Any
        lengths: typing.Any
        cur_coord: typing.Any
        i: typing.Any

        @property
        def visited(self):
            return self.visited_

        @staticmethod
        def initialize(loc, visited_dtype=torch.uint8):
            batch_size, n_loc, _ = loc.size()
            prev_a = torch.zeros(batch_size, 1, dtype=torch.long, device=loc.device)
            return StateTSP(
                loc=loc,
                dist=(loc[:, :, None, :] - loc[:, None, :, :]).norm(p=2, dim=-1),
                ids=torch.arange(batch_size, dtype=torch.int64, device=loc.device)[:, None],  # Add steps dimension
                first_a=prev_a,
                prev_a=prev_a,
                # Keep visited with depot so we can scatter efficiently (if there is an action for depot)
                visited_=torch.zeros(batch_size, 1, n_loc, dtype=torch.uint8, device=loc.device),
                lengths=torch.zeros(batch_size, 1, device=loc.device),
                cur_coord=None,
                i=torch.zeros(1, dtype=torch.int64, device=loc.device)  # Vector with length num_steps
            )

        def update(self, selected):
            # Update the state
            prev_a = selected[:, None]  # Add dimension for step
            # Add the length
            cur_coord = self.loc[self.ids, prev_a]
            lengths = self.lengths
            if self.cur_coord is not None:  # Don't add length for first action (selection of start node)
                lengths = self.lengths + (cur_coord - self.cur_coord).norm(p=2, dim=-1)  # (batch_dim, 1)
            # Update should only be called with just 1 parallel step, in which case we can check this way if we
            # should update
            first_a = prev_a if self.i.item() == 0 else self.first_a
            visited_ = self.visited_.scatter(-1, prev_a[:, :, None], 1)
            return self._replace(first_a=first_a, prev_a=prev_a, visited_=visited_,
                                 lengths=lengths, cur_coord=cur_coord, i=self.i + 1)

        def all_finished(self):
            # Exactly n steps
            return self.i.item() >= self.loc.size(-2)

        def get_current_node(self):
            return self.prev_a

        def get_mask(self):
            return self.visited > 0  # Hacky way to return bool or uint8 depending on pytorch version

    class AttentionModelFixed(typing.NamedTuple):
        node_embeddings: typing.Any
        context_node_projected: typing.Any
        glimpse_key: typing.Any
        glimpse_val: typing.Any
        logit_key: typing.Any

    class AttentionModel(nn.Module):
        def __init__(self, embedding_dim, hidden_dim, n_encode_layers=2, tanh_clipping=10., normalization='batch',
                     n_heads=8):
            super(AttentionModel, self).__init__()
            self.embedding_dim = embedding_dim
            self.hidden_dim = hidden_dim
            self.n_encode_layers = n_encode_layers
            self.decode_type = None
            self.temp = 1.0
            self.tanh_clipping = tanh_clipping
            self.n_heads = n_heads
            # Problem specific context parameters (placeholder and step context dimension)
            step_context_dim = 2 * embedding_dim  # Embedding of first and last node
            node_dim = 2  # x, y
            # Learned input symbols for first action
            self.W_placeholder = nn.Parameter(torch.Tensor(2 * embedding_dim))
            self.W_placeholder.data.uniform_(-1, 1)  # Placeholder should be in range of activations
            self.init_embed = nn.Linear(node_dim, embedding_dim)
            self.embedder = GraphAttentionEncoder(n_heads=n_heads, embed_dim=embedding_dim,
                                                  n_layers=self.n_encode_layers, normalization=normalization,
                                                  feed_forward_hidden=hidden_dim)
            # For each node we compute (glimpse key, glimpse value, logit key) so 3 * embedding_dim
            self.project_node_embeddings = nn.Linear(embedding_dim, 3 * embedding_dim, bias=False)
            self.project_fixed_context = nn.Linear(embedding_dim, embedding_dim, bias=False)
            self.project_step_context = nn.Linear(step_context_dim, embedding_dim, bias=False)
            assert embedding_dim % n_heads == 0
            # Note n_heads * val_dim == embedding_dim so input to project_out is embedding_dim
            self.project_out = nn.Linear(embedding_dim, embedding_dim, bias=False)

        def set_decode_type(self, decode_type, temp=None):
            self.decode_type = decode_type
            if temp is not None:  # Do not change temperature if not provided
                self.temp = temp

        def forward(self, input, return_pi=False):
            embeddings, _ = self.embedder(self._init_embed(input))
            _log_p, pi = self._inner(input, embeddings)
            cost, mask = get_costs(input, pi)
            # Log likelyhood is calculated within the model since returning it per action does not work well with
            # DataParallel since sequences can be of different lengths
            ll = self._calc_log_likelihood(_log_p, pi, mask)
            if return_pi:
                return cost, ll, pi
            return cost, ll

        def _calc_log_likelihood(self, _log_p, a, mask):
            # Get log_p corresponding to selected actions
            log_p = _log_p.gather(2, a.unsqueeze(-1)).squeeze(-1)
            # Optional: mask out actions irrelevant to objective so they do not get reinforced
            if mask is not None:
                log_p[mask] = 0
            assert (log_p > -1000).data.all(), "Logprobs should not be -inf, check sampling procedure!"
            # Calculate log_likelihood
            return log_p.sum(1)

        def _init_embed(self, input):
            return self.init_embed(input)

        def _inner(self, input, embeddings):
            outputs = []
            sequences = []
            state = StateTSP.initialize(input)
            # Compute keys, values for the glimpse and keys for the logits once as they can be reused in every step
            fixed = self._precompute(embeddings)
            # Perform decoding steps (the source reads batch_size = state.ids.size(0) here, for its shrinking)
            i = 0
            while not state.all_finished():
                log_p, mask = self._get_log_p(fixed, state)
                # Select the indices of the next nodes in the sequences, result (batch_size) long
                selected = self._select_node(log_p.exp()[:, 0, :], mask[:, 0, :])  # Squeeze out steps dimension
                state = state.update(selected)
                # Collect output of step
                outputs.append(log_p[:, 0, :])
                sequences.append(selected)
                i += 1
            # Collected lists, return Tensor
            return torch.stack(outputs, 1), torch.stack(sequences, 1)

        def _select_node(self, probs, mask):
            assert (probs == probs).all(), "Probs should not contain any nans"
            if self.decode_type == "greedy":
                _, selected = probs.max(1)
                assert not mask.gather(1, selected.unsqueeze(-1)).data.any(), \
                    "Decode greedy: infeasible action has maximum probability"
            elif self.decode_type == "sampling":
                selected = replayed(m, replay, next(counter), probs.multinomial(1).squeeze(1))
                # Check if sampling went OK, can go wrong due to bug on GPU
                # See https://discuss.pytorch.org/t/bad-behavior-of-multinomial-function/10232
                while mask.gather(1, selected.unsqueeze(-1)).data.any():
                    print('Sampled bad values, resampling!')
                    selected = probs.multinomial(1).squeeze(1)
            else:
                assert False, "Unknown decode type"
            return selected

        def _precompute(self, embeddings, num_steps=1):
            # The fixed context projection of the graph embedding is calculated only once for efficiency
            graph_embed = embeddings.mean(1)
            # fixed context = (batch_size, 1, embed_dim) to make broadcastable with parallel timesteps
            fixed_context = self.project_fixed_context(graph_embed)[:, None, :]
            # The projection of the node embeddings for the attention is calculated once up front
            glimpse_key_fixed, glimpse_val_fixed, logit_key_fixed = \
                self.project_node_embeddings(embeddings[:, None, :, :]).chunk(3, dim=-1)
            # No need to rearrange key for logit as there is a single head
            fixed_attention_node_data = (
                self._make_heads(glimpse_key_fixed, num_steps),
                self._make_heads(glimpse_val_fixed, num_steps),
                logit_key_fixed.contiguous()
            )
            return AttentionModelFixed(embeddings, fixed_context, *fixed_attention_node_data)

        def _get_log_p(self, fixed, state, normalize=True):
            # Compute query = context node embedding
            query = fixed.context_node_projected + \
                self.project_step_context(self._get_parallel_step_context(fixed.node_embeddings, state))
            # Compute keys and values for the nodes
            glimpse_K, glimpse_V, logit_K = fixed.glimpse_key, fixed.glimpse_val, fixed.logit_key
            # Compute the mask
            mask = state.get_mask()
            # Compute logits (unnormalized log_p)
            log_p, glimpse = self._one_to_many_logits(query, glimpse_K, glimpse_V, logit_K, mask)
            if normalize:
                log_p = torch.log_softmax(log_p / self.temp, dim=-1)
            assert not torch.isnan(log_p).any()
            return log_p, mask

        def _get_parallel_step_context(self, embeddings, state, from_depot=False):
            current_node = state.get_current_node()
            batch_size, num_steps = current_node.size()
            # TSP
            if num_steps == 1:  # We need to special case if we have only 1 step, may be the first or not
                if state.i.item() == 0:
                    # First and only step, ignore prev_a (this is a placeholder)
                    return self.W_placeholder[None, None, :].expand(batch_size, 1, self.W_placeholder.size(-1))
                else:
                    return embeddings.gather(
                        1,
                        torch.cat((state.first_a, current_node), 1)[:, :, None].expand(batch_size, 2,
                                                                                        embeddings.size(-1))
                    ).view(batch_size, 1, -1)

        def _one_to_many_logits(self, query, glimpse_K, glimpse_V, logit_K, mask):
            batch_size, num_steps, embed_dim = query.size()
            key_size = val_size = embed_dim // self.n_heads
            # Compute the glimpse, rearrange dimensions so the dimensions are (n_heads, batch_size, num_steps, 1,
            # key_size)
            glimpse_Q = query.view(batch_size, num_steps, self.n_heads, 1, key_size).permute(2, 0, 1, 3, 4)
            # Batch matrix multiplication to compute compatibilities (n_heads, batch_size, num_steps, graph_size)
            compatibility = torch.matmul(glimpse_Q, glimpse_K.transpose(-2, -1)) / math.sqrt(glimpse_Q.size(-1))
            compatibility[mask[None, :, :, None, :].expand_as(compatibility)] = -math.inf
            # Batch matrix multiplication to compute heads (n_heads, batch_size, num_steps, val_size)
            heads = torch.matmul(torch.softmax(compatibility, dim=-1), glimpse_V)
            # Project to get glimpse/updated context node embedding (batch_size, num_steps, embedding_dim)
            glimpse = self.project_out(
                heads.permute(1, 2, 3, 0, 4).contiguous().view(-1, num_steps, 1, self.n_heads * val_size))
            # Now projecting the glimpse is not needed since this can be absorbed into project_out
            # logits = 'compatibility'
            final_Q = glimpse
            logits = torch.matmul(final_Q, logit_K.transpose(-2, -1)).squeeze(-2) / math.sqrt(final_Q.size(-1))
            # From the logits compute the probabilities by clipping, masking and softmax
            if self.tanh_clipping > 0:
                logits = torch.tanh(logits) * self.tanh_clipping
            logits[mask] = -math.inf
            return logits, glimpse.squeeze(-2)

        def _make_heads(self, v, num_steps=None):
            assert num_steps is None or v.size(1) == 1 or v.size(1) == num_steps
            return (
                v.contiguous().view(v.size(0), v.size(1), v.size(2), self.n_heads, -1)
                .expand(v.size(0), v.size(1) if num_steps is None else num_steps, v.size(2), self.n_heads, -1)
                .permute(3, 0, 1, 2, 4)  # (n_heads, batch_size, num_steps, graph_size, head_dim)
            )

    def get_costs(dataset, pi):
        # Check that tours are valid, i.e. contain 0 to n -1
        assert (
            torch.arange(pi.size(1), out=pi.data.new()).view(1, -1).expand_as(pi) ==
            pi.data.sort(1)[0]
        ).all(), "Invalid tour"
        # Gather dataset in order of tour
        d = dataset.gather(1, pi.unsqueeze(-1).expand_as(dataset))
        # Length is distance (L2-norm of difference) from each next location from its prev and of last from first
        return (d[:, 1:] - d[:, :-1]).norm(p=2, dim=2).sum(1) + (d[:, 0] - d[:, -1]).norm(p=2, dim=1), None

    class ExponentialBaseline:
        def __init__(self, beta):
            self.beta = beta
            self.v = None

        def eval(self, x, c):
            if self.v is None:
                v = c.mean()
            else:
                v = self.beta * self.v + (1. - self.beta) * c.mean()
            self.v = v.detach()  # Detach since we never want to backprop
            return self.v, 0  # No loss

    def clip_grad_norms(param_groups, max_norm=math.inf):
        grad_norms = [
            torch.nn.utils.clip_grad_norm_(
                group['params'],
                max_norm if max_norm > 0 else math.inf,  # Inf so no clipping but still call to calc
                norm_type=2
            )
            for group in param_groups
        ]
        grad_norms_clipped = [min(g_norm, max_norm) for g_norm in grad_norms] if max_norm > 0 else grad_norms
        return grad_norms, grad_norms_clipped

    model = AttentionModel(embedding_dim=8, hidden_dim=16, n_encode_layers=1, n_heads=2)
    init = load(m, model, state)
    baseline = ExponentialBaseline(beta=0.8)
    optimizer = torch.optim.Adam([{'params': model.parameters(), 'lr': 1e-3}])
    model.train()
    model.set_decode_type("sampling")
    losses = []
    for step in range(2):
        x = torch.tensor(rng.random((3, 4, 2)).astype(np.float32))
        cost, log_likelihood = model(x)
        bl_val, bl_loss = baseline.eval(x, cost)
        reinforce_loss = ((cost - bl_val) * log_likelihood).mean()
        loss = reinforce_loss + bl_loss
        optimizer.zero_grad()
        loss.backward()
        grad_norms = clip_grad_norms(optimizer.param_groups, 1.0)
        optimizer.step()
        losses += [cost.mean().item(), reinforce_loss.item(), float(grad_norms[0][0])]
    model.eval()
    model.set_decode_type("greedy")
    with torch.no_grad():
        cost, _, pi = model(x, return_pi=True)
    return init, losses + [float(v) for v in cost.tolist()] + [float(v) for v in pi.flatten().tolist()] + \
        summary(model.parameters())


def test_attention_model_tsp():
    compare(attention_model_tsp, replay={})


# (i) Liuhong99/Sophia's sophia.py (SophiaG: a torch.optim.Optimizer subclass with __setstate__ turning steps into
# tensors, @torch.no_grad() update_hessian's EMA of grad * grad by mul_ and addcmul_, step(closure=None, bs=...) under
# torch.enable_grad() for the closure, _single_tensor_sophiag's step_t += 1 on a tensor step, param.mul_(1 - lr *
# weight_decay), the ratio (exp_avg.abs() / (rho * bs * hess + 1e-15)).clamp(None, 1) and param.addcmul_(exp_avg.sign(),
# ratio, value=-lr)) in its nanoGPT training loop (train_sophiag.py): configure_optimizers' decay and no-decay groups
# by p.dim() >= 2, get_lr's warmup and cosine decay written into each param_group, gradient accumulation with a
# disabled GradScaler (scale, unscale_, step, update) and clip_grad_norm_, the Hessian estimate every hess_interval
# iterations from y_sample = torch.distributions.Categorical(logits=logits).sample() (torch replays tnet's draws) and
# cross_entropy(..., ignore_index=-1); the optimizer's state_dict into a new SophiaG by load_state_dict
def sophia_nanogpt(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    Optimizer = torch.optim.Optimizer
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    counter = itertools.count()

    class SophiaG(Optimizer):
        def __init__(self, params, lr=1e-4, betas=(0.965, 0.99), rho=0.04, weight_decay=1e-1, *, maximize=False,
                     capturable=False):
            if not 0.0 <= lr:
                raise ValueError("Invalid learning rate: {}".format(lr))
            if not 0.0 <= betas[0] < 1.0:
                raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
            if not 0.0 <= betas[1] < 1.0:
                raise ValueError("Invalid beta parameter at index 1: {}".format(betas[1]))
            if not 0.0 <= rho:
                raise ValueError("Invalid rho parameter at index 1: {}".format(rho))
            if not 0.0 <= weight_decay:
                raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
            defaults = dict(lr=lr, betas=betas, rho=rho, weight_decay=weight_decay, maximize=maximize,
                            capturable=capturable)
            super(SophiaG, self).__init__(params, defaults)

        def __setstate__(self, state):
            super().__setstate__(state)
            for group in self.param_groups:
                group.setdefault('maximize', False)
                group.setdefault('capturable', False)
            state_values = list(self.state.values())
            step_is_tensor = (len(state_values) != 0) and torch.is_tensor(state_values[0]['step'])
            if not step_is_tensor:
                for s in state_values:
                    s['step'] = torch.tensor(float(s['step']))

        @torch.no_grad()
        def update_hessian(self):
            for group in self.param_groups:
                beta1, beta2 = group['betas']
                for p in group['params']:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state['step'] = torch.zeros((1,), dtype=torch.float, device=p.device) \
                            if self.defaults['capturable'] else torch.tensor(0.)
                        state['exp_avg'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        state['hessian'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    if 'hessian' not in state.keys():
                        state['hessian'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state['hessian'].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)

        @torch.no_grad()
        def step(self, closure=None, bs=5120):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                params_with_grad = []
                grads = []
                exp_avgs = []
                state_steps = []
                hessian = []
                beta1, beta2 = group['betas']
                for p in group['params']:
                    if p.grad is None:
                        continue
                    params_with_grad.append(p)
                    if p.grad.is_sparse:
                        raise RuntimeError('Hero does not support sparse gradients')
                    grads.append(p.grad)
                    state = self.state[p]
                    # State initialization
                    if len(state) == 0:
                        state['step'] = torch.zeros((1,), dtype=torch.float, device=p.device) \
                            if self.defaults['capturable'] else torch.tensor(0.)
                        state['exp_avg'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        state['hessian'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    if 'hessian' not in state.keys():
                        state['hessian'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    exp_avgs.append(state['exp_avg'])
                    state_steps.append(state['step'])
                    hessian.append(state['hessian'])
                    if self.defaults['capturable']:
                        bs = torch.ones((1,), dtype=torch.float, device=p.device) * bs
                _single_tensor_sophiag(params_with_grad, grads, exp_avgs, hessian, state_steps, bs=bs, beta1=beta1,
                                       beta2=beta2, rho=group['rho'], lr=group['lr'],
                                       weight_decay=group['weight_decay'], maximize=group['maximize'],
                                       capturable=group['capturable'])
            return loss

    def _single_tensor_sophiag(params, grads, exp_avgs, hessian, state_steps, *, bs, beta1, beta2, rho, lr,
                               weight_decay, maximize, capturable):
        for i, param in enumerate(params):
            grad = grads[i] if not maximize else -grads[i]
            exp_avg = exp_avgs[i]
            hess = hessian[i]
            step_t = state_steps[i]
            if torch.is_complex(param):
                grad = torch.view_as_real(grad)
                exp_avg = torch.view_as_real(exp_avg)
                hess = torch.view_as_real(hess)
                param = torch.view_as_real(param)
            # update step
            step_t += 1
            # Perform stepweight decay
            param.mul_(1 - lr * weight_decay)
            # Decay the first and second moment running average coefficient
            exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
            step_size_neg = - lr
            ratio = (exp_avg.abs() / (rho * bs * hess + 1e-15)).clamp(None, 1)
            param.addcmul_(exp_avg.sign(), ratio, value=step_size_neg)

    class TinyLM(nn.Module):
        def __init__(self, vocab_size=11, block_size=6, n_embd=8):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.ln_f = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.wte.weight = self.lm_head.weight

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            x = x + self.mlp(x)
            logits = self.lm_head(self.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas, rho, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters()}
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [
                {'params': decay_params, 'weight_decay': weight_decay},
                {'params': nodecay_params, 'weight_decay': 0.0}
            ]
            return SophiaG(optim_groups, lr=learning_rate, betas=betas, rho=rho, weight_decay=weight_decay)

    learning_rate, min_lr, warmup_iters, lr_decay_iters = 3e-2, 3e-3, 1, 4
    gradient_accumulation_steps, grad_clip, hess_interval, bs = 2, 1.0, 2, 4 * 6

    def get_lr(it):
        if it < warmup_iters:
            return learning_rate * it / warmup_iters
        if it > lr_decay_iters:
            return min_lr
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        assert 0 <= decay_ratio <= 1
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # coeff ranges 0..1
        return min_lr + coeff * (learning_rate - min_lr)

    data = rng.integers(0, 11, 200)

    def get_batch():
        ix = rng.integers(0, len(data) - 6, 2)
        x = torch.stack([torch.from_numpy((data[i:i + 6]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + 6]).astype(np.int64)) for i in ix])
        return x, y

    model = TinyLM()
    init = load(m, model, state)
    optimizer = model.configure_optimizers(0.2, learning_rate, (0.965, 0.99), 0.05, 'cpu')
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    X, Y = get_batch()
    losses = []
    for iter_num in range(1, 3):
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
        for micro_step in range(gradient_accumulation_steps):
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
            X, Y = get_batch()
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        scaler.step(optimizer, bs=bs)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        if iter_num % hess_interval == hess_interval - 1:
            # update hessian EMA
            logits, _ = model(X, None)
            samp_dist = torch.distributions.Categorical(logits=logits)
            y_sample = replayed(m, replay, next(counter), samp_dist.sample())
            loss_sampled = F.cross_entropy(logits.view(-1, logits.size(-1)), y_sample.view(-1), ignore_index=-1)
            loss_sampled.backward()
            optimizer.update_hessian()
            optimizer.zero_grad(set_to_none=True)
            model.zero_grad()
            losses.append(loss_sampled.item())
        losses += [loss.item() * gradient_accumulation_steps, total_norm.item(), lr]
    saved = optimizer.state_dict()
    resumed = model.configure_optimizers(0.2, learning_rate, (0.965, 0.99), 0.05, 'cpu')
    resumed.load_state_dict(saved)
    hess = [resumed.state[p]['hessian'] for p in model.parameters()]
    steps = [float(resumed.state[p]['step']) for p in model.parameters()]
    return init, losses + steps + summary(hess) + summary(model.parameters())


def test_sophia_nanogpt():
    compare(sophia_nanogpt, replay={})


# (j) cybertronai/pytorch-lamb's lamb.py and test_lamb.py: Lamb as a torch.optim.Optimizer subclass (state['step'] an
# int, grad = p.grad.data, the unbiased moments by mul_/add_(alpha=)/addcmul_(value=), weight_norm by
# p.data.pow(2).sum().sqrt().clamp(0, 10), adam_step.add_(p.data, alpha=weight_decay), trust_ratio a tensor compared
# with == 0 and kept in state, p.data.add_(adam_step, alpha=-step_size * trust_ratio) with a tensor alpha), the
# adam=True ablation, and log_lamb_rs's histogram of state['trust_ratio'] values; on an MNIST-like MLP whose
# closure-taking step returns the loss
def pytorch_lamb(m, state=None, adam=False):
    torch, nn, F = m.torch, m.nn, m.F
    Optimizer = torch.optim.Optimizer
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class Lamb(Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0, adam=False):
            if not 0.0 <= lr:
                raise ValueError("Invalid learning rate: {}".format(lr))
            if not 0.0 <= eps:
                raise ValueError("Invalid epsilon value: {}".format(eps))
            if not 0.0 <= betas[0] < 1.0:
                raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
            if not 0.0 <= betas[1] < 1.0:
                raise ValueError("Invalid beta parameter at index 1: {}".format(betas[1]))
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
            self.adam = adam
            super(Lamb, self).__init__(params, defaults)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    if grad.is_sparse:
                        raise RuntimeError('Lamb does not support sparse gradients, consider SparseAdam instad.')
                    state = self.state[p]
                    # State initialization
                    if len(state) == 0:
                        state['step'] = 0
                        # Exponential moving average of gradient values
                        state['exp_avg'] = torch.zeros_like(p.data)
                        # Exponential moving average of squared gradient values
                        state['exp_avg_sq'] = torch.zeros_like(p.data)
                    exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                    beta1, beta2 = group['betas']
                    state['step'] += 1
                    # Decay the first and second moment running average coefficient
                    # m_t
                    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                    # v_t
                    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                    # Paper v3 does not use debiasing.
                    # Apply bias to lr to avoid broadcast.
                    step_size = group['lr']  # * math.sqrt(bias_correction2) / bias_correction1
                    weight_norm = p.data.pow(2).sum().sqrt().clamp(0, 10)
                    adam_step = exp_avg / exp_avg_sq.sqrt().add(group['eps'])
                    if group['weight_decay'] != 0:
                        adam_step.add_(p.data, alpha=group['weight_decay'])
                    adam_norm = adam_step.pow(2).sum().sqrt()
                    if weight_norm == 0 or adam_norm == 0:
                        trust_ratio = 1
                    else:
                        trust_ratio = weight_norm / adam_norm
                    state['weight_norm'] = weight_norm
                    state['adam_norm'] = adam_norm
                    state['trust_ratio'] = trust_ratio
                    if self.adam:
                        trust_ratio = 1
                    p.data.add_(adam_step, alpha=-step_size * trust_ratio)
            return loss

    def log_lamb_rs(optimizer, event_writer=None, token_count=0):
        """Log a histogram of trust ratio scalars in across layers."""
        results = {'weight_norm': [], 'adam_norm': [], 'trust_ratio': []}
        for group in optimizer.param_groups:
            for p in group['params']:
                state = optimizer.state[p]
                for i in ('weight_norm', 'adam_norm', 'trust_ratio'):
                    if i in state:
                        results[i].append(state[i])
        for k, v in results.items():
            results[k] = torch.tensor(v)
        return results

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
            self.fc1 = nn.Linear(4 * 3 * 3, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = x.view(-1, 4 * 3 * 3)
            x = F.relu(self.fc1(x))
            x = self.fc2(x)
            return F.log_softmax(x, dim=1)

    model = Net()
    init = load(m, model, state)
    optimizer = Lamb(model.parameters(), lr=0.02, weight_decay=0.01, betas=(.9, .999), adam=adam)
    losses = []
    for batch_idx in range(2):
        data = torch.tensor(normal(rng, 4, 1, 8, 8))
        target = torch.tensor(rng.integers(0, 10, 4))

        def closure():
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            return loss
        loss = optimizer.step(closure)
        rs = log_lamb_rs(optimizer)
        losses += [loss.item()] + [float(v) for v in rs['trust_ratio'].tolist()]
    assert all(optimizer.state[p]['step'] == 2 for p in model.parameters())
    return init, losses + summary(model.parameters())


@pytest.mark.parametrize("adam", [False, True])
def test_pytorch_lamb(adam):
    compare(pytorch_lamb, adam=adam)


# (k) Jamie-Stirling/RetNet (src/xpos.py, retention.py, retnet.py and its test of the recurrent form): XPOS with a
# registered scale buffer raised to torch.arange(...).to(self.scale).div(scale_base)[:, None], fixed_pos_embedding by
# torch.einsum("i , j -> i j", ...) (spaces in the equation), rotate_every_two by x[:, :, ::2] and x[:, :, 1::2]
# stacked as (-x2, x1) and flatten(-2), duplicate_interleave by view/repeat/view, SimpleRetention's decay matrix D =
# (gamma ** (n - m)) * (n >= m).float() with D[D != D] = 0, its recurrent step s_n = gamma * s_n_1 + K^T V,
# MultiScaleRetention's gammas from 1 - torch.exp(torch.linspace(log(1/32), log(1/512), heads)) through .tolist(),
# a swish lambda, GroupNorm over the heads' concatenation, parameters by torch.randn(...) / hidden_size; a RetNet
# language model trained one AdamW step, then its recurrent form stepped token by token from torch.zeros states
# against the parallel one
def retnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def fixed_pos_embedding(x):
        seq_len, dim = x.shape
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim) / dim))
        sinusoid_inp = (torch.einsum("i , j -> i j", torch.arange(0, seq_len, dtype=torch.float), inv_freq).to(x))
        return torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)

    def rotate_every_two(x):
        x1 = x[:, :, ::2]
        x2 = x[:, :, 1::2]
        x = torch.stack((-x2, x1), dim=-1)
        return x.flatten(-2)  # in einsum notation: rearrange(x, '... d j -> ... (d j)')

    def duplicate_interleave(m_):
        """A simple version of `torch.repeat_interleave` for duplicating a matrix while interleaving the copy."""
        dim0 = m_.shape[0]
        m_ = m_.view(-1, 1)  # flatten the matrix
        m_ = m_.repeat(1, 2)  # repeat all elements into the 2nd dimension
        m_ = m_.view(dim0, -1)  # reshape into a matrix, interleaving the copy
        return m_

    def apply_rotary_pos_emb(x, sin, cos, scale=1):
        sin, cos = map(lambda t: duplicate_interleave(t * scale), (sin, cos))
        # einsum notation for lambda t: repeat(t[offset:x.shape[1]+offset,:], "n d -> () n () (d j)", j=2)
        return (x * cos) + (rotate_every_two(x) * sin)

    class XPOS(nn.Module):
        def __init__(self, head_dim, scale_base=512):
            super().__init__()
            self.head_dim = head_dim
            self.scale_base = scale_base
            self.register_buffer("scale", (torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim))

        def forward(self, x, offset=0, downscale=False):
            length = x.shape[1]
            min_pos = 0
            max_pos = length + offset + min_pos
            scale = self.scale ** torch.arange(min_pos, max_pos, 1).to(self.scale).div(self.scale_base)[:, None]
            sin, cos = fixed_pos_embedding(scale)
            if scale.shape[0] > length:
                scale = scale[-length:]
                sin = sin[-length:]
                cos = cos[-length:]
            if downscale:
                scale = 1 / scale
            x = apply_rotary_pos_emb(x, sin, cos, scale)
            return x

    class SimpleRetention(nn.Module):
        def __init__(self, hidden_size, gamma, head_size=None, double_v_dim=False):
            super(SimpleRetention, self).__init__()
            self.hidden_size = hidden_size
            if head_size is None:
                head_size = hidden_size
            self.head_size = head_size
            self.v_dim = head_size * 2 if double_v_dim else head_size
            self.gamma = gamma
            self.W_Q = nn.Parameter(torch.randn(hidden_size, head_size) / hidden_size)
            self.W_K = nn.Parameter(torch.randn(hidden_size, head_size) / hidden_size)
            self.W_V = nn.Parameter(torch.randn(hidden_size, self.v_dim) / hidden_size)
            self.xpos = XPOS(head_size)

        def forward(self, X):
            sequence_length = X.shape[1]
            D = self._get_D(sequence_length).to(self.W_Q.device)
            Q = (X @ self.W_Q)
            K = (X @ self.W_K)
            Q = self.xpos(Q)
            K = self.xpos(K, downscale=True)
            V = X @ self.W_V
            ret = (Q @ K.permute(0, 2, 1)) * D.unsqueeze(0)
            return ret @ V

        def forward_recurrent(self, x_n, s_n_1, n):
            Q = (x_n @ self.W_Q)
            K = (x_n @ self.W_K)
            Q = self.xpos(Q, n)
            K = self.xpos(K, n, downscale=True)
            V = x_n @ self.W_V
            # K: (batch_size, 1, hidden_size)
            # V: (batch_size, 1, v_dim)
            # s_n = gamma * s_n_1 + K^T @ V
            s_n = self.gamma * s_n_1 + (K.transpose(-1, -2) @ V)
            return (Q @ s_n), s_n

        def _get_D(self, sequence_length):
            n = torch.arange(sequence_length).unsqueeze(1)
            m_ = torch.arange(sequence_length).unsqueeze(0)
            # Broadcast self.gamma ** (n - m) with appropriate masking to set values where n < m to 0
            D = (self.gamma ** (n - m_)) * (n >= m_).float()  # this results in some NaN when n is much larger than m
            # fill the NaN with 0
            D[D != D] = 0
            return D

    class MultiScaleRetention(nn.Module):
        def __init__(self, hidden_size, heads, double_v_dim=False):
            super(MultiScaleRetention, self).__init__()
            self.hidden_size = hidden_size
            self.v_dim = hidden_size * 2 if double_v_dim else hidden_size
            self.heads = heads
            assert hidden_size % heads == 0, "hidden_size must be divisible by heads"
            self.head_size = hidden_size // heads
            self.head_v_dim = hidden_size * 2 if double_v_dim else hidden_size
            self.gammas = (1 - torch.exp(torch.linspace(math.log(1 / 32), math.log(1 / 512), heads))).detach().cpu(
            ).tolist()
            self.swish = lambda x: x * torch.sigmoid(x)
            self.W_G = nn.Parameter(torch.randn(hidden_size, self.v_dim) / hidden_size)
            self.W_O = nn.Parameter(torch.randn(self.v_dim, hidden_size) / hidden_size)
            self.group_norm = nn.GroupNorm(heads, self.v_dim)
            self.retentions = nn.ModuleList([
                SimpleRetention(self.hidden_size, gamma, self.head_size, double_v_dim) for gamma in self.gammas
            ])

        def forward(self, X):
            # apply each individual retention mechanism to X
            Y = []
            for i in range(self.heads):
                Y.append(self.retentions[i](X))
            Y = torch.cat(Y, dim=2)
            Y_shape = Y.shape
            Y = self.group_norm(Y.reshape(-1, self.v_dim)).reshape(Y_shape)
            return (self.swish(X @ self.W_G) * Y) @ self.W_O

        def forward_recurrent(self, x_n, s_n_1s, n):
            # apply each individual retention mechanism to a slice of X
            Y = []
            s_ns = []
            for i in range(self.heads):
                y, s_n = self.retentions[i].forward_recurrent(x_n[:, :, :], s_n_1s[i], n)
                Y.append(y)
                s_ns.append(s_n)
            Y = torch.cat(Y, dim=2)
            Y_shape = Y.shape
            Y = self.group_norm(Y.reshape(-1, self.v_dim)).reshape(Y_shape)
            return (self.swish(x_n @ self.W_G) * Y) @ self.W_O, s_ns

    class RetNet(nn.Module):
        def __init__(self, layers, hidden_dim, ffn_size, heads, double_v_dim=False):
            super(RetNet, self).__init__()
            self.layers = layers
            self.hidden_dim = hidden_dim
            self.ffn_size = ffn_size
            self.heads = heads
            self.v_dim = hidden_dim * 2 if double_v_dim else hidden_dim
            self.retentions = nn.ModuleList([MultiScaleRetention(hidden_dim, heads, double_v_dim)
                                             for _ in range(layers)])
            self.ffns = nn.ModuleList([nn.Sequential(nn.Linear(hidden_dim, ffn_size), nn.GELU(),
                                                     nn.Linear(ffn_size, hidden_dim)) for _ in range(layers)])
            self.layer_norms_1 = nn.ModuleList([nn.LayerNorm(hidden_dim) for _ in range(layers)])
            self.layer_norms_2 = nn.ModuleList([nn.LayerNorm(hidden_dim) for _ in range(layers)])

        def forward(self, X):
            for i in range(self.layers):
                Y = self.retentions[i](self.layer_norms_1[i](X)) + X
                X = self.ffns[i](self.layer_norms_2[i](Y)) + Y
            return X

        def forward_recurrent(self, x_n, s_n_1s, n):
            s_ns = []
            for i in range(self.layers):
                # list index out of range
                o_n, s_n = self.retentions[i].forward_recurrent(self.layer_norms_1[i](x_n), s_n_1s[i], n)
                y_n = o_n + x_n
                s_ns.append(s_n)
                x_n = self.ffns[i](self.layer_norms_2[i](y_n)) + y_n
            return x_n, s_ns

    class RetNetLM(nn.Module):
        def __init__(self, vocab, layers, hidden_dim, ffn_size, heads):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden_dim)
            self.retnet = RetNet(layers, hidden_dim, ffn_size, heads)
            self.head = nn.Linear(hidden_dim, vocab)

        def forward(self, idx):
            return self.head(self.retnet(self.embed(idx)))

    layers, hidden_size, ffn_size, heads = 2, 8, 16, 2
    model = RetNetLM(11, layers, hidden_size, ffn_size, heads)
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    tokens = torch.tensor(rng.integers(0, 11, (2, 4)))
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        X = model.embed(tokens)
        Y_parallel = model.retnet(X)
        batch_size, sequence_length = tokens.shape
        s_n_1s = [[torch.zeros(hidden_size // heads, hidden_size // heads).unsqueeze(0).repeat(batch_size, 1, 1)
                   for _ in range(heads)] for _ in range(layers)]
        Y_recurrent = []
        for i in range(sequence_length):
            y_n, s_ns = model.retnet.forward_recurrent(X[:, i:i + 1, :], s_n_1s, i)
            Y_recurrent.append(y_n)
            s_n_1s = s_ns
        Y_recurrent = torch.concat(Y_recurrent, dim=1)
    assert (Y_parallel - Y_recurrent).abs().max() < 1e-4
    return init, [loss.item()] + model.retnet.retentions[0].gammas + summary([Y_parallel, Y_recurrent]) + \
        summary(model.parameters())


def test_retnet():
    compare(retnet)


# (l) gordicaleksa/pytorch-GAT's edge-list GATLayer (implementation #3) and GAT, with its training loop on a small
# Cora-like graph: class attributes for the axes, scoring_fn_source/target as nn.Parameter(torch.Tensor(1, heads, F))
# under xavier_uniform_, register_parameter('bias', None) and ('skip_proj', None), lift() by index_select of the
# source and target nodes, the neighbourhood-aware softmax (scores minus their global max, exp, denominators by
# scatter_add_ of an explicit_broadcast (unsqueeze then expand_as) target index into torch.zeros(size, dtype=, device=),
# read back by index_select, + 1e-16), aggregate_neighbors' scatter_add_, skip_concat_bias's in-place += of the skip
# projection and the bias, the heads concatenated or averaged, layers chained through nn.Sequential on (features,
# edge_index) tuples; CrossEntropyLoss on index_select'ed nodes, Adam with weight decay, accuracy by torch.argmax and
# torch.sum(torch.eq(...).long()).item(). Dropout 0. After training, the logged attention weights are checked against
# torch.sparse.softmax over a torch.sparse_coo_tensor of the edge scores (tnet found: torch.sparse.softmax was missing)
def pytorch_gat(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class GATLayer(torch.nn.Module):
        src_nodes_dim = 0  # position of source nodes in edge index
        trg_nodes_dim = 1  # position of target nodes in edge index
        nodes_dim = 0      # node dimension/axis
        head_dim = 1       # attention head dimension/axis

        def __init__(self, num_in_features, num_out_features, num_of_heads, concat=True, activation=nn.ELU(),
                     dropout_prob=0.6, add_skip_connection=True, bias=True, log_attention_weights=False):
            super().__init__()
            self.num_of_heads = num_of_heads
            self.num_out_features = num_out_features
            self.concat = concat  # whether we should concatenate or average the attention heads
            self.add_skip_connection = add_skip_connection
            self.linear_proj = nn.Linear(num_in_features, num_of_heads * num_out_features, bias=False)
            self.scoring_fn_target = nn.Parameter(torch.Tensor(1, num_of_heads, num_out_features))
            self.scoring_fn_source = nn.Parameter(torch.Tensor(1, num_of_heads, num_out_features))
            if bias and concat:
                self.bias = nn.Parameter(torch.Tensor(num_of_heads * num_out_features))
            elif bias and not concat:
                self.bias = nn.Parameter(torch.Tensor(num_out_features))
            else:
                self.register_parameter('bias', None)
            if add_skip_connection:
                self.skip_proj = nn.Linear(num_in_features, num_of_heads * num_out_features, bias=False)
            else:
                self.register_parameter('skip_proj', None)
            self.leakyReLU = nn.LeakyReLU(0.2)  # using 0.2 as in the paper, no need to expose every setting
            self.activation = activation
            self.dropout = nn.Dropout(p=dropout_prob)
            self.log_attention_weights = log_attention_weights  # whether we should log the attention weights
            self.attention_weights = None  # for later visualization purposes, I cache the weights here
            self.init_params()

        def forward(self, data):
            in_nodes_features, edge_index = data  # unpack data
            num_of_nodes = in_nodes_features.shape[self.nodes_dim]
            assert edge_index.shape[0] == 2, f'Expected edge index with shape=(2,E) got {edge_index.shape}'
            in_nodes_features = self.dropout(in_nodes_features)
            nodes_features_proj = self.linear_proj(in_nodes_features).view(-1, self.num_of_heads,
                                                                           self.num_out_features)
            nodes_features_proj = self.dropout(nodes_features_proj)  # in the official GAT imp they did dropout here
            scores_source = (nodes_features_proj * self.scoring_fn_source).sum(dim=-1)
            scores_target = (nodes_features_proj * self.scoring_fn_target).sum(dim=-1)
            scores_source_lifted, scores_target_lifted, nodes_features_proj_lifted = self.lift(
                scores_source, scores_target, nodes_features_proj, edge_index)
            scores_per_edge = self.leakyReLU(scores_source_lifted + scores_target_lifted)
            self.scores_per_edge = scores_per_edge
            attentions_per_edge = self.neighborhood_aware_softmax(scores_per_edge, edge_index[self.trg_nodes_dim],
                                                                  num_of_nodes)
            attentions_per_edge = self.dropout(attentions_per_edge)
            nodes_features_proj_lifted_weighted = nodes_features_proj_lifted * attentions_per_edge
            out_nodes_features = self.aggregate_neighbors(nodes_features_proj_lifted_weighted, edge_index,
                                                          in_nodes_features, num_of_nodes)
            out_nodes_features = self.skip_concat_bias(attentions_per_edge, in_nodes_features, out_nodes_features)
            return (out_nodes_features, edge_index)

        def neighborhood_aware_softmax(self, scores_per_edge, trg_index, num_of_nodes):
            # Calculate the numerator. Make logits <= 0 so that e^logit <= 1 (this will improve the numerical
            # stability)
            scores_per_edge = scores_per_edge - scores_per_edge.max()
            exp_scores_per_edge = scores_per_edge.exp()  # softmax
            # Calculate the denominator. shape = (E, NH)
            neigborhood_aware_denominator = self.sum_edge_scores_neighborhood_aware(exp_scores_per_edge, trg_index,
                                                                                    num_of_nodes)
            # 1e-16 is theoretically not needed but is only there for numerical stability (avoid div by 0)
            attentions_per_edge = exp_scores_per_edge / (neigborhood_aware_denominator + 1e-16)
            # shape = (E, NH) -> (E, NH, 1) so that we can do element-wise multiplication with projected node
            # features
            return attentions_per_edge.unsqueeze(-1)

        def sum_edge_scores_neighborhood_aware(self, exp_scores_per_edge, trg_index, num_of_nodes):
            # The shape must be the same as in exp_scores_per_edge (required by scatter_add_) i.e. from E -> (E, NH)
            trg_index_broadcasted = self.explicit_broadcast(trg_index, exp_scores_per_edge)
            # shape = (N, NH), where N is the number of nodes and NH the number of attention heads
            size = list(exp_scores_per_edge.shape)  # convert to list otherwise assignment is not possible
            size[self.nodes_dim] = num_of_nodes
            neighborhood_sums = torch.zeros(size, dtype=exp_scores_per_edge.dtype, device=exp_scores_per_edge.device)
            # position i will contain a sum of exp scores of all the nodes that point to the node i (as dictated by
            # the target index)
            neighborhood_sums.scatter_add_(self.nodes_dim, trg_index_broadcasted, exp_scores_per_edge)
            # Expand again so that we can use it as a softmax denominator. e.g. node i's sum will be copied to
            # all the locations where the source nodes pointed to i (as dictated by the target index)
            # shape = (N, NH) -> (E, NH)
            return neighborhood_sums.index_select(self.nodes_dim, trg_index)

        def aggregate_neighbors(self, nodes_features_proj_lifted_weighted, edge_index, in_nodes_features,
                                num_of_nodes):
            size = list(nodes_features_proj_lifted_weighted.shape)  # convert to list otherwise assignment is not
            size[self.nodes_dim] = num_of_nodes  # shape = (N, NH, FOUT)
            out_nodes_features = torch.zeros(size, dtype=in_nodes_features.dtype, device=in_nodes_features.device)
            # shape = (E) -> (E, NH, FOUT)
            trg_index_broadcasted = self.explicit_broadcast(edge_index[self.trg_nodes_dim],
                                                            nodes_features_proj_lifted_weighted)
            # aggregation step - we accumulate projected, weighted node features for all the attention heads
            # shape = (E, NH, FOUT) -> (N, NH, FOUT)
            out_nodes_features.scatter_add_(self.nodes_dim, trg_index_broadcasted,
                                            nodes_features_proj_lifted_weighted)
            return out_nodes_features

        def lift(self, scores_source, scores_target, nodes_features_matrix_proj, edge_index):
            """Lifts i.e. duplicates certain vectors depending on the edge index. One of the tensor dims goes
            from N -> E (that's where the "lift" comes from)."""
            src_nodes_index = edge_index[self.src_nodes_dim]
            trg_nodes_index = edge_index[self.trg_nodes_dim]
            # Using index_select is faster than "normal" indexing (scores_source[src_nodes_index]) in PyTorch!
            scores_source = scores_source.index_select(self.nodes_dim, src_nodes_index)
            scores_target = scores_target.index_select(self.nodes_dim, trg_nodes_index)
            nodes_features_matrix_proj_lifted = nodes_features_matrix_proj.index_select(self.nodes_dim,
                                                                                        src_nodes_index)
            return scores_source, scores_target, nodes_features_matrix_proj_lifted

        def explicit_broadcast(self, this, other):
            # Append singleton dimensions until this.dim() == other.dim()
            for _ in range(this.dim(), other.dim()):
                this = this.unsqueeze(-1)
            # Explicitly expand so that shapes are the same
            return this.expand_as(other)

        def init_params(self):
            nn.init.xavier_uniform_(self.linear_proj.weight)
            nn.init.xavier_uniform_(self.scoring_fn_target)
            nn.init.xavier_uniform_(self.scoring_fn_source)
            if self.bias is not None:
                torch.nn.init.zeros_(self.bias)

        def skip_concat_bias(self, attention_coefficients, in_nodes_features, out_nodes_features):
            if self.log_attention_weights:  # potentially log for later visualization in playground.py
                self.attention_weights = attention_coefficients
            if self.add_skip_connection:  # add skip or residual connection
                if out_nodes_features.shape[-1] == in_nodes_features.shape[-1]:  # if FIN == FOUT
                    # unsqueeze does this: (N, FIN) -> (N, 1, FIN), out features are (N, NH, FOUT) so 1->NH
                    out_nodes_features += in_nodes_features.unsqueeze(1)
                else:
                    # FIN != FOUT so we need to project input feature vectors into dimension that can be added to
                    # output feature vectors. skip_proj adds lots of additional capacity which may cause overfitting.
                    out_nodes_features += self.skip_proj(in_nodes_features).view(-1, self.num_of_heads,
                                                                                 self.num_out_features)
            if self.concat:
                # shape = (N, NH, FOUT) -> (N, NH*FOUT)
                out_nodes_features = out_nodes_features.view(-1, self.num_of_heads * self.num_out_features)
            else:
                # shape = (N, NH, FOUT) -> (N, FOUT)
                out_nodes_features = out_nodes_features.mean(dim=self.head_dim)
            if self.bias is not None:
                out_nodes_features += self.bias
            return out_nodes_features if self.activation is None else self.activation(out_nodes_features)

    class GAT(torch.nn.Module):
        def __init__(self, num_of_layers, num_heads_per_layer, num_features_per_layer, add_skip_connection=True,
                     bias=True, dropout=0.6, log_attention_weights=False):
            super().__init__()
            assert num_of_layers == len(num_heads_per_layer) == len(num_features_per_layer) - 1, \
                'Enter valid arch params.'
            num_heads_per_layer = [1] + num_heads_per_layer  # trick - so that I can nicely create GAT layers below
            gat_layers = []  # collect GAT layers
            for i in range(num_of_layers):
                layer = GATLayer(
                    num_in_features=num_features_per_layer[i] * num_heads_per_layer[i],  # consequence of concat
                    num_out_features=num_features_per_layer[i + 1],
                    num_of_heads=num_heads_per_layer[i + 1],
                    concat=True if i < num_of_layers - 1 else False,  # last GAT layer does mean avg, the others do
                    activation=nn.ELU() if i < num_of_layers - 1 else None,  # last layer just outputs raw scores
                    dropout_prob=dropout,
                    add_skip_connection=add_skip_connection,
                    bias=bias,
                    log_attention_weights=log_attention_weights
                )
                gat_layers.append(layer)
            self.gat_net = nn.Sequential(*gat_layers,)

        def forward(self, data):
            return self.gat_net(data)

    num_of_nodes, num_features, num_classes = 8, 6, 3
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 0), (0, 4), (2, 6)]
    edge_index = np.array(edges + [(b, a) for a, b in edges] + [(i, i) for i in range(num_of_nodes)]).T
    edge_index = torch.tensor(edge_index, dtype=torch.long)  # (2, E), self edges included as the loader adds them
    node_features = torch.tensor(normal(rng, num_of_nodes, num_features))
    node_labels = torch.tensor(rng.integers(0, num_classes, num_of_nodes), dtype=torch.long)
    train_indices, val_indices = torch.arange(0, 5, dtype=torch.long), torch.arange(5, 8, dtype=torch.long)
    gat = GAT(num_of_layers=2, num_heads_per_layer=[2, 1], num_features_per_layer=[num_features, 4, num_classes],
              add_skip_connection=True, bias=True, dropout=0.0, log_attention_weights=True)
    init = load(m, gat, state)
    loss_fn = nn.CrossEntropyLoss(reduction='mean')
    optimizer = torch.optim.Adam(gat.parameters(), lr=5e-3, weight_decay=5e-4)
    node_dim = 0
    graph_data = (node_features, edge_index)
    losses = []
    for epoch, (phase, node_indices) in enumerate([("train", train_indices), ("train", train_indices),
                                                   ("val", val_indices)]):
        gat.train() if phase == "train" else gat.eval()
        gt_node_labels = node_labels.index_select(node_dim, node_indices)
        nodes_unnormalized_scores = gat(graph_data)[0].index_select(node_dim, node_indices)
        loss = loss_fn(nodes_unnormalized_scores, gt_node_labels)
        if phase == "train":
            optimizer.zero_grad()  # clean the trainable weights gradients in the computational graph (.grad fields)
            loss.backward()  # compute the gradients for every trainable weight in the computational graph
            optimizer.step()  # apply the gradients to weights
        class_predictions = torch.argmax(nodes_unnormalized_scores, dim=-1)
        accuracy = torch.sum(torch.eq(class_predictions, gt_node_labels).long()).item() / len(gt_node_labels)
        losses += [loss.item(), accuracy]
    layer = gat.gat_net[0]
    for head in range(layer.num_of_heads):  # softmax over each target's incoming edges: rows of the (trg, src) matrix
        scores = torch.sparse_coo_tensor(edge_index.flip(0), layer.scores_per_edge[:, head],
                                         (num_of_nodes, num_of_nodes))
        attention = torch.sparse.softmax(scores, dim=1).coalesce()
        dense = torch.zeros(num_of_nodes, num_of_nodes)
        dense[edge_index[1], edge_index[0]] = layer.attention_weights[:, head, 0]
        assert (attention.to_dense() - dense).abs().max().item() < 1e-5
    return init, losses + summary([layer.attention_weights]) + summary(gat.parameters())


def test_pytorch_gat():
    compare(pytorch_gat)


# (m) Lizhi-sjtu/DRL-code-pytorch's PPO-continuous with its Beta policy (ppo_continuous.py, normalization.py,
# replaybuffer.py, PPO_continuous_main.py): orthogonal_init with gain 0.01 on the heads, Actor_Beta's alpha and beta
# by F.softplus(...) + 1.0, torch.distributions.Beta's sample() and log_prob under torch.no_grad() in choose_action
# (torch replays tnet's draws), the mean alpha / (alpha + beta) in evaluate, the numpy ReplayBuffer through
# torch.tensor(..., dtype=torch.float), GAE over reversed(deltas.flatten().numpy()) with adv.insert(0, gae), the
# advantage normalised by adv.std() + 1e-5, K epochs over BatchSampler(SubsetRandomSampler(range(batch_size)),
# mini_batch_size, False) (one mini-batch: the order of its rows is the sampler's, the sums nearly alike), the clipped
# surrogate with dist_now.entropy().sum(1, keepdim=True), Adam with eps=1e-5, clip_grad_norm_(..., 0.5), the
# learning rates decayed by hand into param_groups, state normalisation by a numpy RunningMeanStd and RewardScaling,
# on a toy point-mass environment in numpy
def ppo_beta(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    Beta = torch.distributions.Beta
    BatchSampler, SubsetRandomSampler = m.data.BatchSampler, m.data.SubsetRandomSampler
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    counter = itertools.count()

    class RunningMeanStd:
        # Dynamically calculate mean and std
        def __init__(self, shape):  # shape:the dimension of input data
            self.n = 0
            self.mean = np.zeros(shape)
            self.S = np.zeros(shape)
            self.std = np.sqrt(self.S)

        def update(self, x):
            x = np.array(x)
            self.n += 1
            if self.n == 1:
                self.mean = x
                self.std = x
            else:
                old_mean = self.mean.copy()
                self.mean = old_mean + (x - old_mean) / self.n
                self.S = self.S + (x - old_mean) * (x - self.mean)
                self.std = np.sqrt(self.S / self.n)

    class Normalization:
        def __init__(self, shape):
            self.running_ms = RunningMeanStd(shape=shape)

        def __call__(self, x, update=True):
            # Whether to update the mean and std,during the evaluating,update=False
            if update:
                self.running_ms.update(x)
            x = (x - self.running_ms.mean) / (self.running_ms.std + 1e-8)
            return x

    class RewardScaling:
        def __init__(self, shape, gamma):
            self.shape = shape  # reward shape=1
            self.gamma = gamma  # discount factor
            self.running_ms = RunningMeanStd(shape=self.shape)
            self.R = np.zeros(self.shape)

        def __call__(self, x):
            self.R = self.gamma * self.R + x
            self.running_ms.update(self.R)
            x = x / (self.running_ms.std + 1e-8)  # Only divided std
            return x

        def reset(self):  # When an episode is done,we should reset 'self.R'
            self.R = np.zeros(self.shape)

    class ReplayBuffer:
        def __init__(self, args):
            self.s = np.zeros((args.batch_size, args.state_dim))
            self.a = np.zeros((args.batch_size, args.action_dim))
            self.a_logprob = np.zeros((args.batch_size, args.action_dim))
            self.r = np.zeros((args.batch_size, 1))
            self.s_ = np.zeros((args.batch_size, args.state_dim))
            self.dw = np.zeros((args.batch_size, 1))
            self.done = np.zeros((args.batch_size, 1))
            self.count = 0

        def store(self, s, a, a_logprob, r, s_, dw, done):
            self.s[self.count] = s
            self.a[self.count] = a
            self.a_logprob[self.count] = a_logprob
            self.r[self.count] = r
            self.s_[self.count] = s_
            self.dw[self.count] = dw
            self.done[self.count] = done
            self.count += 1

        def numpy_to_tensor(self):
            s = torch.tensor(self.s, dtype=torch.float)
            a = torch.tensor(self.a, dtype=torch.float)
            a_logprob = torch.tensor(self.a_logprob, dtype=torch.float)
            r = torch.tensor(self.r, dtype=torch.float)
            s_ = torch.tensor(self.s_, dtype=torch.float)
            dw = torch.tensor(self.dw, dtype=torch.float)
            done = torch.tensor(self.done, dtype=torch.float)
            return s, a, a_logprob, r, s_, dw, done

    # Trick 8: orthogonal initialization
    def orthogonal_init(layer, gain=1.0):
        nn.init.orthogonal_(layer.weight, gain=gain)
        nn.init.constant_(layer.bias, 0)

    class Actor_Beta(nn.Module):
        def __init__(self, args):
            super(Actor_Beta, self).__init__()
            self.fc1 = nn.Linear(args.state_dim, args.hidden_width)
            self.fc2 = nn.Linear(args.hidden_width, args.hidden_width)
            self.alpha_layer = nn.Linear(args.hidden_width, args.action_dim)
            self.beta_layer = nn.Linear(args.hidden_width, args.action_dim)
            self.activate_func = [nn.ReLU(), nn.Tanh()][args.use_tanh]  # Trick10: use tanh
            if args.use_orthogonal_init:
                orthogonal_init(self.fc1)
                orthogonal_init(self.fc2)
                orthogonal_init(self.alpha_layer, gain=0.01)
                orthogonal_init(self.beta_layer, gain=0.01)

        def forward(self, s):
            s = self.activate_func(self.fc1(s))
            s = self.activate_func(self.fc2(s))
            # alpha and beta need to be larger than 1,so we use 'softplus' as the activation function and then plus 1
            alpha = F.softplus(self.alpha_layer(s)) + 1.0
            beta = F.softplus(self.beta_layer(s)) + 1.0
            return alpha, beta

        def get_dist(self, s):
            alpha, beta = self.forward(s)
            dist = Beta(alpha, beta)
            return dist

        def mean(self, s):
            alpha, beta = self.forward(s)
            mean = alpha / (alpha + beta)  # The mean of the beta distribution
            return mean

    class Critic(nn.Module):
        def __init__(self, args):
            super(Critic, self).__init__()
            self.fc1 = nn.Linear(args.state_dim, args.hidden_width)
            self.fc2 = nn.Linear(args.hidden_width, args.hidden_width)
            self.fc3 = nn.Linear(args.hidden_width, 1)
            self.activate_func = [nn.ReLU(), nn.Tanh()][args.use_tanh]  # Trick10: use tanh
            if args.use_orthogonal_init:
                orthogonal_init(self.fc1)
                orthogonal_init(self.fc2)
                orthogonal_init(self.fc3)

        def forward(self, s):
            s = self.activate_func(self.fc1(s))
            s = self.activate_func(self.fc2(s))
            v_s = self.fc3(s)
            return v_s

    class PPO_continuous():
        def __init__(self, args):
            self.policy_dist = args.policy_dist
            self.max_action = args.max_action
            self.batch_size = args.batch_size
            self.mini_batch_size = args.mini_batch_size
            self.max_train_steps = args.max_train_steps
            self.lr_a = args.lr_a  # Learning rate of actor
            self.lr_c = args.lr_c  # Learning rate of critic
            self.gamma = args.gamma  # Discount factor
            self.lamda = args.lamda  # GAE parameter
            self.epsilon = args.epsilon  # PPO clip parameter
            self.K_epochs = args.K_epochs  # PPO parameter
            self.entropy_coef = args.entropy_coef  # Entropy coefficient
            self.set_adam_eps = args.set_adam_eps
            self.use_grad_clip = args.use_grad_clip
            self.use_lr_decay = args.use_lr_decay
            self.use_adv_norm = args.use_adv_norm
            self.actor = Actor_Beta(args)
            self.critic = Critic(args)
            if self.set_adam_eps:  # Trick 9: set Adam epsilon=1e-5
                self.optimizer_actor = torch.optim.Adam(self.actor.parameters(), lr=self.lr_a, eps=1e-5)
                self.optimizer_critic = torch.optim.Adam(self.critic.parameters(), lr=self.lr_c, eps=1e-5)
            else:
                self.optimizer_actor = torch.optim.Adam(self.actor.parameters(), lr=self.lr_a)
                self.optimizer_critic = torch.optim.Adam(self.critic.parameters(), lr=self.lr_c)

        def evaluate(self, s):  # When evaluating the policy, we only use the mean
            s = torch.unsqueeze(torch.tensor(s, dtype=torch.float), 0)
            a = self.actor.mean(s).detach().numpy().flatten()
            return a

        def choose_action(self, s):
            s = torch.unsqueeze(torch.tensor(s, dtype=torch.float), 0)
            with torch.no_grad():
                dist = self.actor.get_dist(s)
                a = replayed(m, replay, next(counter), dist.sample())  # Sample the action according to the dist
                a_logprob = dist.log_prob(a)  # The log probability density of the action
            return a.numpy().flatten(), a_logprob.numpy().flatten()

        def update(self, replay_buffer, total_steps, record):
            s, a, a_logprob, r, s_, dw, done = replay_buffer.numpy_to_tensor()  # Get training data
            adv = []
            gae = 0
            with torch.no_grad():  # adv and v_target have no gradient
                vs = self.critic(s)
                vs_ = self.critic(s_)
                deltas = r + self.gamma * (1.0 - dw) * vs_ - vs
                for delta, d in zip(reversed(deltas.flatten().numpy()), reversed(done.flatten().numpy())):
                    gae = delta + self.gamma * self.lamda * gae * (1.0 - d)
                    adv.insert(0, gae)
                adv = torch.tensor(adv, dtype=torch.float).view(-1, 1)
                v_target = adv + vs
                if self.use_adv_norm:  # Trick 1:advantage normalization
                    adv = ((adv - adv.mean()) / (adv.std() + 1e-5))
            # Optimize policy for K epochs:
            for _ in range(self.K_epochs):
                # Random sampling and no repetition. 'False' indicates that training will continue even if the
                # number of samples in the last time is less than mini_batch_size
                for index in BatchSampler(SubsetRandomSampler(range(self.batch_size)), self.mini_batch_size, False):
                    dist_now = self.actor.get_dist(s[index])
                    dist_entropy = dist_now.entropy().sum(1, keepdim=True)  # shape(mini_batch_size X 1)
                    a_logprob_now = dist_now.log_prob(a[index])
                    # a/b=exp(log(a)-log(b))  In multi-dimensional continuous action space，we need to sum up the
                    # log_prob
                    ratios = torch.exp(a_logprob_now.sum(1, keepdim=True) - a_logprob[index].sum(1, keepdim=True))
                    surr1 = ratios * adv[index]  # Only calculate the gradient of 'a_logprob_now' in ratios
                    surr2 = torch.clamp(ratios, 1 - self.epsilon, 1 + self.epsilon) * adv[index]
                    actor_loss = -torch.min(surr1, surr2) - self.entropy_coef * dist_entropy  # Trick 5: entropy
                    # Update actor
                    self.optimizer_actor.zero_grad()
                    actor_loss.mean().backward()
                    if self.use_grad_clip:  # Trick 7: Gradient clip
                        torch.nn.utils.clip_grad_norm_(self.actor.parameters(), 0.5)
                    self.optimizer_actor.step()
                    v_s = self.critic(s[index])
                    critic_loss = F.mse_loss(v_target[index], v_s)
                    # Update critic
                    self.optimizer_critic.zero_grad()
                    critic_loss.backward()
                    if self.use_grad_clip:  # Trick 7: Gradient clip
                        torch.nn.utils.clip_grad_norm_(self.critic.parameters(), 0.5)
                    self.optimizer_critic.step()
                    record += [actor_loss.mean().item(), critic_loss.item(), dist_entropy.mean().item()]
            if self.use_lr_decay:  # Trick 6:learning rate Decay
                self.lr_decay(total_steps)

        def lr_decay(self, total_steps):
            lr_a_now = self.lr_a * (1 - total_steps / self.max_train_steps)
            lr_c_now = self.lr_c * (1 - total_steps / self.max_train_steps)
            for p in self.optimizer_actor.param_groups:
                p['lr'] = lr_a_now
            for p in self.optimizer_critic.param_groups:
                p['lr'] = lr_c_now

    class Args:
        state_dim, action_dim, max_action, hidden_width = 3, 2, 1.0, 16
        batch_size, mini_batch_size, max_train_steps, K_epochs = 8, 8, 32, 2
        lr_a, lr_c, gamma, lamda, epsilon, entropy_coef = 3e-3, 3e-3, 0.99, 0.95, 0.2, 0.01
        policy_dist, use_tanh, use_orthogonal_init, set_adam_eps = "Beta", 1, True, True
        use_grad_clip, use_lr_decay, use_adv_norm = True, True, True

    args = Args()
    agent = PPO_continuous(args)
    init = load(m, nn.ModuleDict({"actor": agent.actor, "critic": agent.critic}), state)
    state_norm = Normalization(shape=args.state_dim)  # Trick 2:state normalization
    reward_scaling = RewardScaling(shape=1, gamma=args.gamma)  # Trick 4:reward scaling
    replay_buffer = ReplayBuffer(args)
    env_state = rng.standard_normal(args.state_dim)
    s = state_norm(env_state)
    record = []
    total_steps = 0
    for episode_steps in range(1, 2 * args.batch_size + 1):
        a, a_logprob = agent.choose_action(s)  # Action and the corresponding log probability
        action = 2 * (a - 0.5) * args.max_action  # [0,1]->[-max,max]
        env_state = env_state + 0.3 * np.concatenate([action, action[:1]])
        r = -float(np.abs(env_state).sum())
        done = episode_steps % 6 == 0
        dw = done
        s_ = state_norm(env_state)
        r = reward_scaling(r)
        replay_buffer.store(s, a, a_logprob, r, s_, dw, done)
        s = s_
        if done:
            env_state = rng.standard_normal(args.state_dim)
            s = state_norm(env_state)
            reward_scaling.reset()
        total_steps += 1
        if replay_buffer.count == args.batch_size:
            agent.update(replay_buffer, total_steps, record)
            replay_buffer.count = 0
    record += [float(v) for v in agent.evaluate(s)]
    return init, record + summary(agent.actor.parameters()) + summary(agent.critic.parameters())


def test_ppo_beta():
    compare(ppo_beta, replay={})


# (n) ESPnet's hybrid CTC/attention speech recogniser (espnet/nets/pytorch_backend: e2e_asr_transformer.py,
# ctc.py, transformer/label_smoothing_loss.py, subsampling.py, mask.py, nets_utils.py, transformer/add_sos_eos.py):
# Conv2dSubsampling (two stride-2 Conv2d and ReLU, a Linear over c * f, the positional encoding's xscale and pe buffer
# of sin and cos by exp(arange * -(log(10000) / d))), the masks x_mask[:, :, :-2:2][:, :, :-2:2] and make_pad_mask by
# torch.arange(...).expand(...) >= lengths.unsqueeze(-1), subsequent_mask by torch.tril(torch.ones(...,
# dtype=torch.bool)), add_sos_eos over [y[y != ignore_id] for y in ys] with pad_list, an nn.TransformerEncoder and
# nn.TransformerDecoder with boolean masks (~mask), CTC's torch.nn.CTCLoss(reduction="sum", zero_infinity=True) on
# ys_hat.transpose(0, 1).log_softmax(2) with hlens and olens, divided by the batch size, LabelSmoothingLoss (a
# true_dist filled with smoothing / (size - 1), masked_fill of ignore, scatter_ of the confidence, KLDivLoss(reduction=
# "none") on torch.log_softmax, masked_fill(ignore.unsqueeze(1), 0).sum() / denom), th_accuracy, the mixed loss
# mtlalpha * loss_ctc + (1 - mtlalpha) * loss_att, Noam's warmup into param_groups, clip_grad_norm_ with a
# math.isnan check, and CTC greedy decoding by argmax and torch.unique_consecutive
def espnet_hybrid_ctc(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    IGNORE_ID = -1

    def make_pad_mask(lengths, maxlen=None):
        if not isinstance(lengths, list):
            lengths = lengths.tolist()
        bs = int(len(lengths))
        if maxlen is None:
            maxlen = int(max(lengths))
        seq_range = torch.arange(0, maxlen, dtype=torch.int64)
        seq_range_expand = seq_range.unsqueeze(0).expand(bs, maxlen)
        seq_length_expand = seq_range_expand.new(lengths).unsqueeze(-1)
        mask = seq_range_expand >= seq_length_expand
        return mask

    def subsequent_mask(size, device="cpu", dtype=torch.bool):
        ret = torch.ones(size, size, device=device, dtype=dtype)
        return torch.tril(ret, out=ret)

    def pad_list(xs, pad_value):
        n_batch = len(xs)
        max_len = max(x.size(0) for x in xs)
        pad = xs[0].new(n_batch, max_len, *xs[0].size()[1:]).fill_(pad_value)
        for i in range(n_batch):
            pad[i, : xs[i].size(0)] = xs[i]
        return pad

    def add_sos_eos(ys_pad, sos, eos, ignore_id):
        _sos = ys_pad.new([sos])
        _eos = ys_pad.new([eos])
        ys = [y[y != ignore_id] for y in ys_pad]  # parse padded ys
        ys_in = [torch.cat([_sos, y], dim=0) for y in ys]
        ys_out = [torch.cat([y, _eos], dim=0) for y in ys]
        return pad_list(ys_in, eos), pad_list(ys_out, ignore_id)

    def th_accuracy(pad_outputs, pad_targets, ignore_label):
        pad_pred = pad_outputs.view(pad_targets.size(0), pad_targets.size(1), pad_outputs.size(1)).argmax(2)
        mask = pad_targets != ignore_label
        numerator = torch.sum(pad_pred.masked_select(mask) == pad_targets.masked_select(mask))
        denominator = torch.sum(mask)
        return float(numerator) / float(denominator)

    class PositionalEncoding(torch.nn.Module):
        def __init__(self, d_model, dropout_rate, max_len=5000):
            super(PositionalEncoding, self).__init__()
            self.d_model = d_model
            self.xscale = math.sqrt(self.d_model)
            self.dropout = torch.nn.Dropout(p=dropout_rate)
            self.pe = None
            self.extend_pe(torch.tensor(0.0).expand(1, max_len))

        def extend_pe(self, x):
            if self.pe is not None:
                if self.pe.size(1) >= x.size(1):
                    if self.pe.dtype != x.dtype or self.pe.device != x.device:
                        self.pe = self.pe.to(dtype=x.dtype, device=x.device)
                    return
            pe = torch.zeros(x.size(1), self.d_model)
            position = torch.arange(0, x.size(1), dtype=torch.float32).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, self.d_model, 2, dtype=torch.float32)
                                 * -(math.log(10000.0) / self.d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0)
            self.pe = pe.to(device=x.device, dtype=x.dtype)

        def forward(self, x):
            self.extend_pe(x)
            x = x * self.xscale + self.pe[:, : x.size(1)]
            return self.dropout(x)

    class Conv2dSubsampling(torch.nn.Module):
        def __init__(self, idim, odim, dropout_rate, pos_enc=None):
            super(Conv2dSubsampling, self).__init__()
            self.conv = torch.nn.Sequential(
                torch.nn.Conv2d(1, odim, 3, 2),
                torch.nn.ReLU(),
                torch.nn.Conv2d(odim, odim, 3, 2),
                torch.nn.ReLU(),
            )
            self.out = torch.nn.Sequential(
                torch.nn.Linear(odim * (((idim - 1) // 2 - 1) // 2), odim),
                pos_enc if pos_enc is not None else PositionalEncoding(odim, dropout_rate),
            )

        def forward(self, x, x_mask):
            x = x.unsqueeze(1)  # (b, c, t, f)
            x = self.conv(x)
            b, c, t, f = x.size()
            x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
            if x_mask is None:
                return x, None
            return x, x_mask[:, :, :-2:2][:, :, :-2:2]

    class CTC(torch.nn.Module):
        def __init__(self, odim, eprojs, dropout_rate, reduce=True):
            super().__init__()
            self.dropout_rate = dropout_rate
            self.loss = None
            self.ctc_lo = torch.nn.Linear(eprojs, odim)
            self.dropout = torch.nn.Dropout(dropout_rate)
            self.probs = None  # for visualization
            reduction_type = "sum" if reduce else "none"
            self.ctc_loss = torch.nn.CTCLoss(reduction=reduction_type, zero_infinity=True)
            self.ignore_id = -1
            self.reduce = reduce

        def loss_fn(self, th_pred, th_target, th_ilen, th_olen):
            th_pred = th_pred.log_softmax(2)
            loss = self.ctc_loss(th_pred, th_target, th_ilen, th_olen)
            # Batch-size average
            loss = loss / th_pred.size(1)
            return loss

        def forward(self, hs_pad, hlens, ys_pad):
            # TODO(kan-bayashi): need to make more smart way
            ys = [y[y != self.ignore_id] for y in ys_pad]  # parse padded ys
            self.loss = None
            hlens = torch.from_numpy(np.fromiter(hlens, dtype=np.int32))
            olens = torch.from_numpy(np.fromiter((x.size(0) for x in ys), dtype=np.int32))
            # zero padding for hs
            ys_hat = self.ctc_lo(self.dropout(hs_pad))
            ys_hat = ys_hat.transpose(0, 1)
            # get ctc loss
            ys_true = torch.cat(ys).cpu().int()  # batch x olen
            self.loss = self.loss_fn(ys_hat, ys_true, hlens, olens)
            return self.loss

        def argmax(self, hs_pad):
            return torch.argmax(self.ctc_lo(hs_pad), dim=2)

    class LabelSmoothingLoss(nn.Module):
        def __init__(self, size, padding_idx, smoothing, normalize_length=False, criterion=nn.KLDivLoss(
                reduction="none")):
            super(LabelSmoothingLoss, self).__init__()
            self.criterion = criterion
            self.padding_idx = padding_idx
            self.confidence = 1.0 - smoothing
            self.smoothing = smoothing
            self.size = size
            self.true_dist = None
            self.normalize_length = normalize_length

        def forward(self, x, target):
            assert x.size(2) == self.size
            batch_size = x.size(0)
            x = x.view(-1, self.size)
            target = target.view(-1)
            with torch.no_grad():
                true_dist = x.clone()
                true_dist.fill_(self.smoothing / (self.size - 1))
                ignore = target == self.padding_idx  # (B,)
                total = len(target) - ignore.sum().item()
                target = target.masked_fill(ignore, 0)  # avoid -1 index
                true_dist.scatter_(1, target.unsqueeze(1), self.confidence)
            kl = self.criterion(torch.log_softmax(x, dim=1), true_dist)
            denom = total if self.normalize_length else batch_size
            return kl.masked_fill(ignore.unsqueeze(1), 0).sum() / denom

    class E2E(torch.nn.Module):
        def __init__(self, idim, odim, adim=8, aheads=2, eunits=16, elayers=1, dlayers=1, mtlalpha=0.3,
                     lsm_weight=0.1):
            super(E2E, self).__init__()
            self.embed = Conv2dSubsampling(idim, adim, 0.0)
            self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(adim, aheads, eunits, dropout=0.0,
                                                                            batch_first=True, norm_first=True),
                                                 elayers, norm=nn.LayerNorm(adim))
            self.dec_embed = torch.nn.Sequential(torch.nn.Embedding(odim, adim), PositionalEncoding(adim, 0.0))
            self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(adim, aheads, eunits, dropout=0.0,
                                                                            batch_first=True, norm_first=True),
                                                 dlayers, norm=nn.LayerNorm(adim))
            self.output_layer = torch.nn.Linear(adim, odim)
            self.sos = odim - 1
            self.eos = odim - 1
            self.odim = odim
            self.ignore_id = IGNORE_ID
            self.mtlalpha = mtlalpha
            self.criterion = LabelSmoothingLoss(self.odim, self.ignore_id, lsm_weight, False)
            self.ctc = CTC(odim, adim, 0.0, reduce=True)

        def forward(self, xs_pad, ilens, ys_pad):
            # 1. forward encoder
            xs_pad = xs_pad[:, : max(ilens)]  # for data parallel
            src_mask = (~make_pad_mask(ilens.tolist())).unsqueeze(-2)
            xs_pad, hs_mask = self.embed(xs_pad, src_mask)
            hs_pad = self.encoder(xs_pad, src_key_padding_mask=~hs_mask.squeeze(1))
            self.hs_pad = hs_pad
            # 2. forward decoder
            ys_in_pad, ys_out_pad = add_sos_eos(ys_pad, self.sos, self.eos, self.ignore_id)
            ys_mask = subsequent_mask(ys_in_pad.size(-1)).unsqueeze(0)
            pred_pad = self.decoder(self.dec_embed(ys_in_pad), hs_pad, tgt_mask=~ys_mask[0],
                                    memory_key_padding_mask=~hs_mask.squeeze(1))
            pred_pad = self.output_layer(pred_pad)
            self.pred_pad = pred_pad
            # 3. compute attention loss
            loss_att = self.criterion(pred_pad, ys_out_pad)
            self.acc = th_accuracy(pred_pad.view(-1, self.odim), ys_out_pad, ignore_label=self.ignore_id)
            # 4. compute ctc loss
            batch_size = xs_pad.size(0)
            hs_len = hs_mask.view(batch_size, -1).sum(1)
            loss_ctc = self.ctc(hs_pad.view(batch_size, -1, hs_pad.size(-1)), hs_len, ys_pad)
            alpha = self.mtlalpha
            self.loss = alpha * loss_ctc + (1 - alpha) * loss_att
            return self.loss, loss_ctc, loss_att

    idim, odim = 13, 6
    model = E2E(idim, odim)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0, betas=(0.9, 0.98), eps=1e-9)
    model_size, warmup, factor = 8, 25, 5.0
    xs = torch.tensor(normal(rng, 2, 20, idim))
    ilens = torch.tensor([20, 16])
    ys_pad = torch.tensor([[1, 2, 3], [4, 2, IGNORE_ID]])
    losses = []
    for step in range(1, 3):
        rate = factor * model_size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5))  # Noam's rate()
        for p in optimizer.param_groups:
            p["lr"] = rate
        loss, loss_ctc, loss_att = model(xs, ilens, ys_pad)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        if math.isnan(grad_norm):
            raise RuntimeError("grad norm is nan. Do not update model.")
        optimizer.step()
        losses += [loss.item(), loss_ctc.item(), loss_att.item(), model.acc, float(grad_norm)]
    model.eval()
    with torch.no_grad():
        model(xs, ilens, ys_pad)
        best = model.ctc.argmax(model.hs_pad)
        hyps = [[int(t) for t in torch.unique_consecutive(b) if int(t) != 0] for b in best]
    # in_proj_bias holds the attention keys' bias, whose gradient softmax makes rounding alone, which Adam normalises
    kept = [p for n, p in model.named_parameters() if not n.endswith("in_proj_bias")]
    return init, losses + [float(len(h)) for h in hyps] + summary([model.pred_pad]) + summary(kept)


def test_espnet_hybrid_ctc():
    compare(espnet_hybrid_ctc)


# (o) Variational inference with reparameterized Gamma, Student-t and Dirichlet draws, in the style of the implicit
# reparameterization gradients examples (Figurnov et al.) written with torch.distributions: a Gamma-latent VAE for
# counts (Poisson matrix factorisation's likelihood, rate = z @ softplus(W).t(), its shape and rate heads by
# F.softplus(...) + 1e-3, z = Gamma(alpha, beta).rsample(), the KL to a Gamma prior registered as buffers by
# torch.distributions.kl_divergence, Poisson(rate).log_prob(x).sum(-1)); Bayesian linear regression with a
# heavy-tailed mean-field posterior q(w) = StudentT(softplus(raw_df) + 2, loc, softplus(raw_scale)), its Monte Carlo
# ELBO from q.rsample((S,)) against a Normal prior; and a Dirichlet-VAE topic model as Burkhardt and Kramer's DVAE
# writes ProdLDA (Softplus encoder, the concentrations through an affine-free BatchNorm1d, softplus and clamp,
# theta = Dirichlet(alpha).rsample(), an affine-free BatchNorm1d on the decoder's word logits, the bag of words'
# reconstruction by log_softmax, the KL to a sparse Dirichlet prior); Adam for each. torch replays tnet's standard
# normal, Gamma and Dirichlet draws. tnet found: Gamma.rsample (and so Chi2's, StudentT's and InverseGamma's) and
# Dirichlet.rsample (and so Beta's) raised NotImplementedError
def gamma_vi(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    distributions = import_module(torch.__name__ + ".distributions")
    Dirichlet, Gamma, Normal, Poisson, StudentT = (distributions.Dirichlet, distributions.Gamma,
                                                   distributions.Normal, distributions.Poisson, distributions.StudentT)
    kl_divergence = distributions.kl_divergence
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class GammaVAE(nn.Module):
        def __init__(self, n_features, n_latent=3, n_hidden=16):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(n_features, n_hidden), nn.ReLU())
            self.shape_head = nn.Linear(n_hidden, n_latent)
            self.rate_head = nn.Linear(n_hidden, n_latent)
            self.loadings = nn.Parameter(torch.randn(n_features, n_latent) * 0.1)
            self.register_buffer("prior_shape", torch.full((n_latent,), 0.3))
            self.register_buffer("prior_rate", torch.full((n_latent,), 0.3))

        def forward(self, x):
            h = self.encoder(torch.log1p(x))
            alpha = F.softplus(self.shape_head(h)) + 1e-3
            beta = F.softplus(self.rate_head(h)) + 1e-3
            q = Gamma(alpha, beta)
            z = q.rsample()
            rate = z @ F.softplus(self.loadings).t() + 1e-4  # non-negative loadings: Poisson matrix factorisation
            log_lik = Poisson(rate).log_prob(x).sum(-1)
            kl = kl_divergence(q, Gamma(self.prior_shape, self.prior_rate)).sum(-1)
            return -(log_lik - kl).mean(), z

    class StudentTRegression(nn.Module):
        def __init__(self, n_features):
            super().__init__()
            self.loc = nn.Parameter(torch.zeros(n_features))
            self.raw_scale = nn.Parameter(torch.full((n_features,), -2.0))
            self.raw_df = nn.Parameter(torch.full((n_features,), 1.0))
            self.log_noise = nn.Parameter(torch.tensor(0.0))

        def posterior(self):
            return StudentT(F.softplus(self.raw_df) + 2.0, self.loc, F.softplus(self.raw_scale))

        def elbo(self, X, y, num_samples=4):
            q = self.posterior()
            w = q.rsample((num_samples,))  # (S, D)
            pred = X @ w.t()  # (N, S)
            log_lik = Normal(pred, self.log_noise.exp()).log_prob(y.unsqueeze(-1)).sum(0).mean()
            prior = Normal(torch.zeros_like(self.loc), torch.ones_like(self.loc))
            log_ratio = (prior.log_prob(w) - q.log_prob(w)).sum(-1).mean()
            return log_lik + log_ratio

    class DirichletVAE(nn.Module):
        def __init__(self, vocab_size, num_topics, hidden, prior_alpha=0.02):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(vocab_size, hidden), nn.Softplus(), nn.Linear(hidden, hidden),
                                         nn.Softplus(), nn.Dropout(0.0))
            self.alpha_layer = nn.Linear(hidden, num_topics)
            self.alpha_bn = nn.BatchNorm1d(num_topics, affine=False)
            self.decoder = nn.Linear(num_topics, vocab_size, bias=False)
            self.decoder_bn = nn.BatchNorm1d(vocab_size, affine=False)
            self.register_buffer("prior_alpha", torch.full((1, num_topics), prior_alpha))

        def forward(self, bow):
            alpha = F.softplus(self.alpha_bn(self.alpha_layer(self.encoder(bow)))).clamp(min=1e-3)
            posterior = Dirichlet(alpha)
            theta = posterior.rsample()
            word_logits = F.log_softmax(self.decoder_bn(self.decoder(theta)), dim=1)
            nll = -(bow * word_logits).sum(1)
            kl = kl_divergence(posterior, Dirichlet(self.prior_alpha.expand_as(alpha)))
            return (nll + kl).mean(), theta

    counts = torch.tensor(rng.poisson(3.0, (6, 5)).astype(np.float32))
    vae = GammaVAE(5)
    X = torch.tensor(normal(rng, 10, 3))
    y = X @ torch.tensor([1.0, -2.0, 0.5]) + 0.1 * torch.tensor(normal(rng, 10))
    reg = StudentTRegression(3)
    bows = torch.tensor(rng.poisson(1.0, (6, 9)).astype(np.float32))
    dvae = DirichletVAE(9, 3, 8)
    models = nn.ModuleDict({"vae": vae, "reg": reg, "dvae": dvae})
    init = load(m, models, state)
    opt_vae = torch.optim.Adam(vae.parameters(), lr=1e-2)
    opt_reg = torch.optim.Adam(reg.parameters(), lr=5e-2)
    opt_dvae = torch.optim.Adam(dvae.parameters(), lr=1e-2)
    losses = []
    with replayed_draws(m, replay):
        for step in range(2):
            loss, z = vae(counts)
            opt_vae.zero_grad()
            loss.backward()
            opt_vae.step()
            elbo = reg.elbo(X, y)
            opt_reg.zero_grad()
            (-elbo).backward()
            opt_reg.step()
            topic_loss, theta = dvae(bows)
            opt_dvae.zero_grad()
            topic_loss.backward()
            opt_dvae.step()
            losses += [loss.item(), float(z.mean()), elbo.item(), topic_loss.item(), float(theta.max())]
    # alpha_layer's bias comes before a BatchNorm, which removes it: its gradient is rounding alone, which Adam normalises
    kept = [p for n, p in dvae.named_parameters() if n != "alpha_layer.bias"]
    return init, losses + summary(vae.parameters()) + summary(reg.parameters()) + summary(kept)


def test_gamma_vi():
    replay = {}
    compare(gamma_vi, replay=replay)
    assert len(replay) == 8  # each step: the VAE's Gamma draw, StudentT's normal and chi-squared, the Dirichlet
