"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: lucidrains' minGRU (Heinsen's log-space scan by logcumsumexp, torch.lerp's sequential
step, the two against each other); davidmrau's sparsely-gated mixture of experts (SparseDispatcher by nonzero, sort,
split and index_add, noisy top-k gating, Normal.cdf's load); deep-spin's entmax15 as a Function with classmethod
forward and backward, beside the PyTorch docs' Functions with ctx.mark_non_differentiable, set_materialize_grads(False)
and once_differentiable; Hugging Face's PreTrainedModel machinery (post_init's apply, tied weights dropped by a
_register_state_dict_hook, save_pretrained by torch.save, from_pretrained by load_state_dict(strict=False) with
_keys_to_ignore regexes and a register_load_state_dict_post_hook, a persistent=False buffer, named_modules(
remove_duplicate=False)); detectron2's Conv2d and FrozenBatchNorm2d (_load_from_state_dict, convert_frozen_batchnorm)
beside a cosine head in torch.nn's own Linear style (factory_kwargs, torch.empty, reset_parameters) built on the meta
device and brought back by to_empty, which found that tnet's factories refused device="meta" (they now allocate on
tnet's device, as its layers do); ULMFiT's gradual unfreezing (add_param_group per epoch, discriminative rates,
ReduceLROnPlateau on a @torch.no_grad() evaluation, inference_mode); a timm-style loop's gradient accumulation with
GradScaler (unscale_, clip, step, update, the scale's growth) and SGDR stepped by fractional epochs over per-group
options; DeepFM fed by random_split, Subset, ConcatDataset, WeightedRandomSampler and a BatchSampler with a
generator, a collate_fn and a worker_init_fn; min-decision-transformer with minGPT's configure_optimizers; a
conditional neural process on GP curves (a Cholesky factor, torch.randperm with a generator, the decoder under
checkpoint(use_reentrant=False), OneCycleLR); EM for a Gaussian mixture then a mixture density head
(MixtureSameFamily of MultivariateNormal), which found that torch.cov's aweights (and fweights) raised
NotImplementedError (they are torch's now); and evolution strategies on a flat parameter vector
(parameters_to_vector, vector_to_parameters, centred ranks, Adam on a hand-set .grad) with a normaliser kept by
get_extra_state/set_extra_state through torch.save into a BytesIO. Each runs in tnet, then in torch from tnet's
initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy
draws what a script draws, or torch replays tnet's draws (`replayed`, and `replayed_list` for a split's or a sampler's
indices); shapes are tiny and runs take one or two steps; dropout is 0 where a script has it. Where a script computes
in float64 (the GP kernel's Cholesky), the line reads .float(): tnet refuses float64."""
import math
import os
import re
import tempfile

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def replayed(m, replay, key, t):
    """t as tnet drew it: tnet's run keeps its draw under key, torch's run takes that draw in place of its own."""
    return m.torch.tensor(replay.setdefault(key, t.detach().cpu().numpy().copy()))


def replayed_list(replay, key, values):
    """An index list as tnet drew it (a sampler's order, a split's indices): torch's run takes tnet's."""
    return replay.setdefault(key, [int(i) for i in values])


# (a) lucidrains' minGRU-pytorch ("Were RNNs All We Needed?"): minGRU in log space, its parallel form by Heinsen's
# associative scan (log_coeffs.cumsum, (log_values - a_star).logcumsumexp(dim=1), exp), g and log_g by torch.where with
# F.softplus, the prev_hidden's log concatenated and log_coeffs padded by F.pad; its sequential step by torch.lerp;
# minLM's residual blocks with nn.RMSNorm and a causal depthwise conv, the parallel logits against the step-by-step
# decode, one Adam step of the next-token loss
def min_gru_lm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Module, Linear, Identity = nn.Module, nn.Linear, nn.Identity
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def exists(v):
        return v is not None

    def heinsen_associative_scan_log(log_coeffs, log_values):
        a_star = log_coeffs.cumsum(dim=1)
        log_h0_plus_b_star = (log_values - a_star).logcumsumexp(dim=1)
        log_h = a_star + log_h0_plus_b_star
        return log_h.exp()

    def g(x):
        return torch.where(x >= 0, x + 0.5, x.sigmoid())

    def log_g(x):
        return torch.where(x >= 0, (F.relu(x) + 0.5).log(), -F.softplus(-x))

    class minGRU(Module):
        def __init__(self, dim, expansion_factor=1.):
            super().__init__()
            dim_inner = int(dim * expansion_factor)
            self.to_hidden_and_gate = Linear(dim, dim_inner * 2, bias=False)
            self.to_out = Linear(dim_inner, dim, bias=False) if expansion_factor != 1. else Identity()

        def forward(self, x, prev_hidden=None, return_next_prev_hidden=False):
            seq_len = x.shape[1]
            hidden, gate = self.to_hidden_and_gate(x).chunk(2, dim=-1)
            if seq_len == 1:
                # handle sequential
                hidden = g(hidden)
                gate = gate.sigmoid()
                out = torch.lerp(prev_hidden, hidden, gate) if exists(prev_hidden) else (hidden * gate)
            else:
                # parallel
                log_coeffs = -F.softplus(gate)
                log_z = -F.softplus(-gate)
                log_tilde_h = log_g(hidden)
                log_values = log_z + log_tilde_h
                if exists(prev_hidden):
                    log_values = torch.cat((prev_hidden.log(), log_values), dim=1)
                    log_coeffs = F.pad(log_coeffs, (0, 0, 1, 0))
                out = heinsen_associative_scan_log(log_coeffs, log_values)
                out = out[:, -seq_len:]
            next_prev_hidden = out[:, -1:]
            out = self.to_out(out)
            if not return_next_prev_hidden:
                return out
            return out, next_prev_hidden

    class CausalDepthWiseConv1d(Module):
        def __init__(self, dim, kernel_size):
            super().__init__()
            self.kernel_size = kernel_size
            self.net = nn.Sequential(nn.Conv1d(dim, dim, kernel_size=kernel_size, groups=dim),
                                     nn.Conv1d(dim, dim, kernel_size=1))

        def forward(self, x):
            x = x.transpose(1, 2)  # b n d -> b d n
            x = F.pad(x, (self.kernel_size - 1, 0), value=0.)
            x = self.net(x)
            return x.transpose(1, 2)  # b d n -> b n d

    class minLM(Module):
        def __init__(self, *, num_tokens, dim, depth, ff_mult=2, expansion=1.5, conv_kernel_size=3):
            super().__init__()
            self.token_emb = nn.Embedding(num_tokens, dim)
            self.layers = nn.ModuleList([])
            for _ in range(depth):
                self.layers.append(nn.ModuleList([
                    CausalDepthWiseConv1d(dim, conv_kernel_size),
                    nn.RMSNorm(dim), minGRU(dim, expansion_factor=expansion),
                    nn.RMSNorm(dim), nn.Sequential(Linear(dim, dim * ff_mult), nn.GELU(), Linear(dim * ff_mult, dim))]))
            self.norm = nn.RMSNorm(dim)
            self.to_logits = Linear(dim, num_tokens, bias=False)

        def forward(self, x, return_loss=False):
            if return_loss:
                x, labels = x[:, :-1], x[:, 1:]
            x = self.token_emb(x)
            for conv, norm, mingru, ff_norm, ff in self.layers:
                x = conv(x) + x
                x = mingru(norm(x)) + x
                x = ff(ff_norm(x)) + x
            logits = self.to_logits(self.norm(x))
            if not return_loss:
                return logits
            return F.cross_entropy(logits.transpose(1, 2), labels)

    model = minLM(num_tokens=11, dim=8, depth=1)
    init = load(m, model, state)
    optim = torch.optim.Adam(model.parameters(), lr=1e-2)
    data = torch.tensor(rng.integers(0, 11, (2, 7)))
    losses = []
    for _ in range(2):
        loss = model(data, return_loss=True)
        loss.backward()
        optim.step()
        optim.zero_grad()
        losses.append(loss.item())
    # the parallel scan against the sequential step, on one layer's minGRU with a given starting hidden state
    gru = model.layers[0][2]
    with torch.no_grad():
        x = torch.tensor(normal(rng, 2, 5, 8))
        h0 = torch.tensor(rng.uniform(0.2, 0.9, (2, 1, 12)).astype(np.float32))
        parallel, last = gru(x, prev_hidden=h0, return_next_prev_hidden=True)
        prev, steps = h0, []
        for t in range(5):
            out, prev = gru(x[:, t:t + 1], prev_hidden=prev, return_next_prev_hidden=True)
            steps.append(out)
        assert (torch.cat(steps, dim=1) - parallel).abs().max().item() < 1e-4
        assert (prev - last).abs().max().item() < 1e-5
    return init, losses + summary(model.parameters()) + [float(parallel.sum())]


def test_min_gru_lm():
    compare(min_gru_lm)


# (b) davidmrau's mixture-of-experts (Shazeer et al.'s sparsely-gated MoE): SparseDispatcher (torch.nonzero(gates)
# .sort(0), sorted_experts.split(1, dim=1), the batch index by advanced indexing, (gates > 0).sum(0).tolist() as the
# part sizes, torch.gather of the nonzero gates, dispatch by torch.split, combine by .exp(), mul, index_add on zeros,
# combined[combined == 0] = np.finfo(float).eps and log()), noisy top-k gating (w_gate and w_noise as nn.Parameter of
# torch.zeros, F.softplus noise scale, torch.randn_like noise, topk of min(k + 1, num_experts), scatter of the softmaxed
# top-k gates into zeros_like), _prob_in_top_k by Normal(self.mean, self.std).cdf with register_buffer'd mean and std
# and torch.gt, _gates_to_load, cv_squared load-balancing loss; the noise replayed for torch
def moe_dispatcher(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    from importlib import import_module
    Normal = import_module(torch.__name__ + ".distributions.normal").Normal
    torch.manual_seed(0)
    rng = np.random.default_rng(1)

    class SparseDispatcher(object):
        def __init__(self, num_experts, gates):
            """Create a SparseDispatcher."""
            self._gates = gates
            self._num_experts = num_experts
            # sort experts
            sorted_experts, index_sorted_experts = torch.nonzero(gates).sort(0)
            # drop indices
            _, self._expert_index = sorted_experts.split(1, dim=1)
            # get according batch index for each expert
            self._batch_index = torch.nonzero(gates)[index_sorted_experts[:, 1], 0]
            # calculate num samples that each expert gets
            self._part_sizes = (gates > 0).sum(0).tolist()
            # expand gates to match with self._batch_index
            gates_exp = gates[self._batch_index.flatten()]
            self._nonzero_gates = torch.gather(gates_exp, 1, self._expert_index)

        def dispatch(self, inp):
            # assigns samples to experts whose gate is nonzero
            # expand according to batch index so we can just split by _part_sizes
            inp_exp = inp[self._batch_index].squeeze(1)
            return torch.split(inp_exp, self._part_sizes, dim=0)

        def combine(self, expert_out, multiply_by_gates=True):
            # apply exp to expert outputs, so we are not longer in log space
            stitched = torch.cat(expert_out, 0).exp()
            if multiply_by_gates:
                stitched = stitched.mul(self._nonzero_gates)
            zeros = torch.zeros(self._gates.size(0), expert_out[-1].size(1), requires_grad=True, device=stitched.device)
            # combine samples that have been processed by the same k experts
            combined = zeros.index_add(0, self._batch_index, stitched.float())
            # add eps to all zero values in order to avoid nans when going back to log space
            combined[combined == 0] = np.finfo(float).eps
            # back to log space
            return combined.log()

        def expert_to_gates(self):
            # split nonzero gates for each expert
            return torch.split(self._nonzero_gates, self._part_sizes, dim=0)

    class MLP(nn.Module):
        def __init__(self, input_size, output_size, hidden_size):
            super(MLP, self).__init__()
            self.fc1 = nn.Linear(input_size, hidden_size)
            self.fc2 = nn.Linear(hidden_size, output_size)
            self.relu = nn.ReLU()
            self.soft = nn.Softmax(1)

        def forward(self, x):
            out = self.fc1(x)
            out = self.relu(out)
            out = self.fc2(out)
            out = self.soft(out)
            return out

    class MoE(nn.Module):
        def __init__(self, input_size, output_size, num_experts, hidden_size, noisy_gating=True, k=4):
            super(MoE, self).__init__()
            self.noisy_gating = noisy_gating
            self.num_experts = num_experts
            self.output_size = output_size
            self.input_size = input_size
            self.hidden_size = hidden_size
            self.k = k
            # instantiate experts
            self.experts = nn.ModuleList([MLP(self.input_size, self.output_size, self.hidden_size)
                                          for i in range(self.num_experts)])
            self.w_gate = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)
            self.w_noise = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)
            self.softplus = nn.Softplus()
            self.softmax = nn.Softmax(1)
            self.register_buffer("mean", torch.tensor([0.0]))
            self.register_buffer("std", torch.tensor([1.0]))
            assert (self.k <= self.num_experts)

        def cv_squared(self, x):
            eps = 1e-10
            # if only num_experts = 1
            if x.shape[0] == 1:
                return torch.tensor([0], device=x.device, dtype=x.dtype)
            return x.float().var() / (x.float().mean() ** 2 + eps)

        def _gates_to_load(self, gates):
            return (gates > 0).sum(0)

        def _prob_in_top_k(self, clean_values, noisy_values, noise_stddev, noisy_top_values):
            batch = clean_values.size(0)
            m = noisy_top_values.size(1)
            top_values_flat = noisy_top_values.flatten()
            threshold_positions_if_in = torch.arange(batch, device=clean_values.device) * m + self.k
            threshold_if_in = torch.unsqueeze(torch.gather(top_values_flat, 0, threshold_positions_if_in), 1)
            is_in = torch.gt(noisy_values, threshold_if_in)
            threshold_positions_if_out = threshold_positions_if_in - 1
            threshold_if_out = torch.unsqueeze(torch.gather(top_values_flat, 0, threshold_positions_if_out), 1)
            # is each value currently in the top k.
            normal = Normal(self.mean, self.std)
            prob_if_in = normal.cdf((clean_values - threshold_if_in) / noise_stddev)
            prob_if_out = normal.cdf((clean_values - threshold_if_out) / noise_stddev)
            prob = torch.where(is_in, prob_if_in, prob_if_out)
            return prob

        def noisy_top_k_gating(self, x, train, noise_epsilon=1e-2):
            clean_logits = x @ self.w_gate
            if self.noisy_gating and train:
                raw_noise_stddev = x @ self.w_noise
                noise_stddev = ((self.softplus(raw_noise_stddev) + noise_epsilon))
                noise = replayed(m, replay, "noise", torch.randn_like(clean_logits))
                noisy_logits = clean_logits + (noise * noise_stddev)
                logits = noisy_logits
            else:
                logits = clean_logits
            # calculate topk + 1 that will be needed for the noisy gates
            logits = self.softmax(logits)
            top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
            top_k_logits = top_logits[:, :self.k]
            top_k_indices = top_indices[:, :self.k]
            top_k_gates = top_k_logits / (top_k_logits.sum(1, keepdim=True) + 1e-6)  # normalization
            zeros = torch.zeros_like(logits, requires_grad=True)
            gates = zeros.scatter(1, top_k_indices, top_k_gates)
            if self.noisy_gating and self.k < self.num_experts and train:
                load = (self._prob_in_top_k(clean_logits, noisy_logits, noise_stddev, top_logits)).sum(0)
            else:
                load = self._gates_to_load(gates)
            return gates, load

        def forward(self, x, loss_coef=1e-2):
            gates, load = self.noisy_top_k_gating(x, self.training)
            # calculate importance loss
            importance = gates.sum(0)
            loss = self.cv_squared(importance) + self.cv_squared(load)
            loss *= loss_coef
            dispatcher = SparseDispatcher(self.num_experts, gates)
            expert_inputs = dispatcher.dispatch(x)
            gates = dispatcher.expert_to_gates()
            expert_outputs = [self.experts[i](expert_inputs[i]) for i in range(self.num_experts)]
            y = dispatcher.combine(expert_outputs)
            return y, loss

    net = MoE(input_size=6, output_size=3, num_experts=4, hidden_size=8, noisy_gating=True, k=2)
    # the gates start at zero as the script has them; a draw gives them something to route on
    with torch.no_grad():
        net.w_gate.copy_(torch.tensor(normal(rng, 6, 4)))
        net.w_noise.copy_(torch.tensor(normal(rng, 6, 4) * 0.5))
    init = load(m, net, state)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    criterion = nn.NLLLoss()
    x = torch.tensor(normal(rng, 5, 6))
    y = torch.tensor(rng.integers(0, 3, 5))
    net.train()
    optimizer.zero_grad()
    y_hat, aux_loss = net(x)
    loss = criterion(y_hat, y)
    total_loss = loss + aux_loss
    total_loss.backward()
    optimizer.step()
    net.eval()
    y_eval, aux_eval = net(x)
    return init, [loss.item(), aux_loss.item(), y_eval.sum().item(), aux_eval.item()] + summary(net.parameters())


def test_moe_dispatcher():
    compare(moe_dispatcher, replay={})


# (c) deep-spin's entmax (Entmax15Function as a Function with @classmethod forward and backward, X / 2 after the max,
# _entmax_threshold_and_support by a descending sort, _make_ix_like's arange view and transpose, the cumsum moments,
# tau.gather(dim, support_size - 1), the backward through Y.sqrt()) as the attention of a small classifier, beside the
# PyTorch docs' "Extending torch.autograd" Functions: a sort returning its indices under ctx.mark_non_differentiable
# whose @once_differentiable backward still takes their gradient, and one with ctx.set_materialize_grads(False) whose
# backward sees None for the output nobody used
def entmax_attention(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    Function = import_module(torch.__name__ + ".autograd").Function
    once_differentiable = import_module(torch.__name__ + ".autograd.function").once_differentiable
    torch.manual_seed(0)
    rng = np.random.default_rng(2)

    def _make_ix_like(X, dim):
        d = X.size(dim)
        rho = torch.arange(1, d + 1, device=X.device, dtype=X.dtype)
        view = [1] * X.dim()
        view[0] = -1
        return rho.view(view).transpose(0, dim)

    def _entmax_threshold_and_support(X, dim=-1, k=None):
        if k is None or k >= X.shape[dim]:  # do full sort
            Xsrt, _ = torch.sort(X, dim=dim, descending=True)
        else:
            Xsrt, _ = torch.topk(X, k=k, dim=dim)
        rho = _make_ix_like(Xsrt, dim)
        mean = Xsrt.cumsum(dim) / rho
        mean_sq = (Xsrt ** 2).cumsum(dim) / rho
        ss = rho * (mean_sq - mean ** 2)
        delta = (1 - ss) / rho
        # NOTE this is not exactly the same as in reference algo
        # Fortunately it seems the clamped values never wrongly
        # get selected by tau <= sorted_z. Prove this!
        delta_nz = torch.clamp(delta, 0)
        tau = mean - torch.sqrt(delta_nz)
        support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
        tau_star = tau.gather(dim, support_size - 1)
        return tau_star, support_size

    class Entmax15Function(Function):
        @classmethod
        def forward(cls, ctx, X, dim=0, k=None):
            ctx.dim = dim
            max_val, _ = X.max(dim=dim, keepdim=True)
            X = X - max_val  # same numerical stability trick as for softmax
            X = X / 2  # divide by 2 to solve actual Entmax
            tau_star, _ = _entmax_threshold_and_support(X, dim=dim, k=k)
            Y = torch.clamp(X - tau_star, min=0) ** 2
            ctx.save_for_backward(Y)
            return Y

        @classmethod
        def backward(cls, ctx, dY):
            Y, = ctx.saved_tensors
            gppr = Y.sqrt()  # = 1 / g'' (Y)
            dX = dY * gppr
            q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
            q = q.unsqueeze(ctx.dim)
            dX -= q * gppr
            return dX, None, None

    def entmax15(X, dim=-1, k=None):
        return Entmax15Function.apply(X, dim, k)

    class SortFunc(Function):
        @staticmethod
        def forward(ctx, x):
            sorted, idx = x.sort()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, idx)
            return sorted, idx

        @staticmethod
        @once_differentiable
        def backward(ctx, g1, g2):  # still need to accept g2
            x, idx = ctx.saved_tensors
            grad_input = torch.zeros_like(x)
            grad_input.index_add_(0, idx, g1)
            return grad_input

    class SimpleFunc(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x.clone(), x.clone()

        @staticmethod
        @once_differentiable
        def backward(ctx, g1, g2):
            x, = ctx.saved_tensors
            grad_input = torch.zeros_like(x)
            if g1 is not None:  # We must check for None now
                grad_input += g1
            if g2 is not None:
                grad_input += g2
            return grad_input

    class EntmaxAttentionClassifier(nn.Module):
        def __init__(self, vocab, dim, n_classes):
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.query = nn.Parameter(torch.randn(dim) / math.sqrt(dim))
            self.proj = nn.Linear(dim, dim)
            self.out = nn.Linear(dim, n_classes)

        def forward(self, tokens):
            h = torch.tanh(self.proj(self.emb(tokens)))  # b n d
            scores = h @ self.query  # b n
            p = entmax15(scores, dim=-1)
            pooled = (p.unsqueeze(-1) * h).sum(1)
            kept, _unused = SimpleFunc.apply(pooled)
            return self.out(kept), p

    model = EntmaxAttentionClassifier(vocab=13, dim=6, n_classes=3)
    init = load(m, model, state)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    tokens = torch.tensor(rng.integers(0, 13, (4, 7)))
    y = torch.tensor(rng.integers(0, 3, 4))
    losses = []
    for _ in range(2):
        opt.zero_grad()
        logits, p = model(tokens)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        losses += [loss.item(), (p > 0).sum().item(), p.sum().item()]
    x = torch.tensor(normal(rng, 6), requires_grad=True)
    s, idx = SortFunc.apply(x)
    assert not idx.requires_grad and s.requires_grad
    (s * torch.arange(6, dtype=torch.float32)).sum().backward()
    return init, losses + summary(model.parameters()) + [float(v) for v in x.grad.tolist()]


def test_entmax_attention():
    compare(entmax_attention)


# (d) Hugging Face transformers' PreTrainedModel machinery in small: a PretrainedConfig written as config.json by
# to_dict, post_init's self.apply(self._init_weights), position_ids as register_buffer(..., persistent=False) of
# torch.arange(...).expand((1, -1)), tie_weights (lm_head.weight = embeddings' weight), _tied_weights_keys dropped at
# save by a _register_state_dict_hook, save_pretrained by torch.save of the state_dict (tnet.save: no pickle),
# from_pretrained by cls(config), torch.load(weights_only=True), load_state_dict(strict=False)'s missing and unexpected
# keys, _keys_to_ignore_on_load_missing / _unexpected as regexes, a register_load_state_dict_post_hook that clears the
# tied keys from the missing ones in place; a step before the save and one after the load, named_modules(
# remove_duplicate=False) seeing the tied module twice
def hf_save_pretrained(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import json
    torch.manual_seed(0)
    rng = np.random.default_rng(3)

    class PretrainedConfig:
        model_type = "tiny"

        def __init__(self, vocab_size=17, hidden_size=8, max_position_embeddings=12, initializer_range=0.02,
                     tie_word_embeddings=True, **kwargs):
            self.vocab_size = vocab_size
            self.hidden_size = hidden_size
            self.max_position_embeddings = max_position_embeddings
            self.initializer_range = initializer_range
            self.tie_word_embeddings = tie_word_embeddings
            for key, value in kwargs.items():
                setattr(self, key, value)

        def to_dict(self):
            output = dict(self.__dict__)
            output["model_type"] = self.__class__.model_type
            return output

        def save_pretrained(self, save_directory):
            with open(os.path.join(save_directory, "config.json"), "w", encoding="utf-8") as writer:
                writer.write(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

        @classmethod
        def from_pretrained(cls, save_directory):
            with open(os.path.join(save_directory, "config.json"), encoding="utf-8") as reader:
                config_dict = json.load(reader)
            config_dict.pop("model_type", None)
            return cls(**config_dict)

    class PreTrainedModel(nn.Module):
        config_class = PretrainedConfig
        _keys_to_ignore_on_load_missing = None
        _keys_to_ignore_on_load_unexpected = None
        _tied_weights_keys = None

        def __init__(self, config):
            super().__init__()
            self.config = config

        def post_init(self):
            self.apply(self._init_weights)
            self.tie_weights()

        def tie_weights(self):
            if getattr(self.config, "tie_word_embeddings", True):
                self.get_output_embeddings().weight = self.get_input_embeddings().weight

        def save_pretrained(self, save_directory, state_dict=None):
            os.makedirs(save_directory, exist_ok=True)
            self.config.save_pretrained(save_directory)
            if state_dict is None:
                state_dict = self.state_dict()
            torch.save(state_dict, os.path.join(save_directory, "pytorch_model.bin"))

        @classmethod
        def from_pretrained(cls, save_directory):
            config = cls.config_class.from_pretrained(save_directory)
            model = cls(config)
            state_dict = torch.load(os.path.join(save_directory, "pytorch_model.bin"), map_location="cpu",
                                    weights_only=True)
            missing_keys, unexpected_keys = model.load_state_dict(state_dict, strict=False)
            if cls._keys_to_ignore_on_load_missing is not None:
                for pat in cls._keys_to_ignore_on_load_missing:
                    missing_keys = [k for k in missing_keys if re.search(pat, k) is None]
            if cls._keys_to_ignore_on_load_unexpected is not None:
                for pat in cls._keys_to_ignore_on_load_unexpected:
                    unexpected_keys = [k for k in unexpected_keys if re.search(pat, k) is None]
            model.tie_weights()
            model.eval()
            return model, {"missing_keys": missing_keys, "unexpected_keys": unexpected_keys}

    class TinyEmbeddings(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=1e-12)
            self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
                                 persistent=False)

        def forward(self, input_ids):
            seq_length = input_ids.size(1)
            position_ids = self.position_ids[:, :seq_length]
            return self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(position_ids))

    class TinyForMaskedLM(PreTrainedModel):
        _keys_to_ignore_on_load_missing = [r"position_ids", r"lm_head.weight"]
        _keys_to_ignore_on_load_unexpected = [r"pooler"]
        _tied_weights_keys = ["lm_head.weight"]

        def __init__(self, config):
            super().__init__(config)
            self.embeddings = TinyEmbeddings(config)
            self.dense = nn.Linear(config.hidden_size, config.hidden_size)
            self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)
            self._register_state_dict_hook(self._drop_tied_weights)
            self.register_load_state_dict_post_hook(self._tied_keys_are_not_missing)
            self.post_init()

        @staticmethod
        def _drop_tied_weights(module, state_dict, prefix, local_metadata):
            for key in module._tied_weights_keys:
                state_dict.pop(prefix + key, None)
            return state_dict

        @staticmethod
        def _tied_keys_are_not_missing(module, incompatible_keys):
            for key in module._tied_weights_keys:
                if key in incompatible_keys.missing_keys:
                    incompatible_keys.missing_keys.remove(key)

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
                if module.padding_idx is not None:
                    module.weight.data[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        def get_input_embeddings(self):
            return self.embeddings.word_embeddings

        def get_output_embeddings(self):
            return self.lm_head

        def forward(self, input_ids, labels=None):
            hidden = F.gelu(self.dense(self.embeddings(input_ids)))
            logits = self.lm_head(hidden)
            loss = None
            if labels is not None:
                loss = F.cross_entropy(logits.view(-1, self.config.vocab_size), labels.view(-1), ignore_index=-100)
            return loss, logits

    config = PretrainedConfig()
    model = TinyForMaskedLM(config)
    # torch.load and the state_dict: the tied weight is saved once, under the embeddings' name
    init = load(m, model, state)
    assert "lm_head.weight" not in init and "embeddings.position_ids" not in init
    assert model.lm_head.weight is model.embeddings.word_embeddings.weight
    names = [n for n, _ in model.named_modules(remove_duplicate=False)]
    assert len(names) == len(set(names)) == len(list(model.named_modules())) == 7
    assert len(list(model.named_parameters(remove_duplicate=False))) == len(list(model.parameters())) + 1
    input_ids = torch.tensor(rng.integers(0, 17, (2, 6)))
    labels = input_ids.masked_fill(torch.tensor(rng.random((2, 6)) < 0.5), -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss, _ = model(input_ids, labels=labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses = [loss.item()]
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, state_dict={**model.state_dict(), "pooler.dense.weight": torch.zeros(2)})
        loaded, info = TinyForMaskedLM.from_pretrained(tmp)
    assert info == {"missing_keys": [], "unexpected_keys": []}, info
    assert loaded.lm_head.weight is loaded.embeddings.word_embeddings.weight
    result = loaded.load_state_dict(model.state_dict(), strict=False)
    assert result.missing_keys == [] and result.unexpected_keys == [], result
    with torch.inference_mode():
        _, a = model(input_ids)
        _, b = loaded(input_ids)
    assert (a - b).abs().max().item() == 0
    loaded.train()
    optimizer = torch.optim.AdamW(loaded.parameters(), lr=1e-2)
    loss, _ = loaded(input_ids, labels=labels)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    return init, losses + summary(loaded.parameters())


def test_hf_save_pretrained():
    compare(hf_save_pretrained)


# (e) detectron2's layers and torchvision's FrozenBatchNorm2d: detectron2's Conv2d subclassing nn.Conv2d with norm and
# activation popped from kwargs, F.conv2d with the module's own stride/padding/dilation/groups, fvcore's c2_msra_fill
# (kaiming_normal_ fan_out) by apply; FrozenBatchNorm2d's four buffers, its _load_from_state_dict override deleting
# num_batches_tracked, rsqrt's scale, convert_frozen_batchnorm as a classmethod recursing by named_children and
# add_module; a pretrained checkpoint of the plain BatchNorm model (train-mode statistics, num_batches_tracked) loaded
# strictly into the frozen one, the stem frozen by requires_grad = False; and a cosine classifier head in torch.nn's
# own Linear style (factory_kwargs of device and dtype, torch.empty, reset_parameters by kaiming_uniform_(a=sqrt(5))
# and _calculate_fan_in_and_fan_out, extra_repr), built on the meta device and brought back by to_empty and
# reset_parameters as deferred initialisation does
def detectron2_frozen_bn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_, Parameter = nn.init, nn.Parameter
    torch.manual_seed(0)
    rng = np.random.default_rng(4)

    def c2_msra_fill(module):
        nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        if module.bias is not None:
            nn.init.constant_(module.bias, 0)

    class Conv2d(nn.Conv2d):
        def __init__(self, *args, **kwargs):
            norm = kwargs.pop("norm", None)
            activation = kwargs.pop("activation", None)
            super().__init__(*args, **kwargs)
            self.norm = norm
            self.activation = activation

        def forward(self, x):
            x = F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
            if self.norm is not None:
                x = self.norm(x)
            if self.activation is not None:
                x = self.activation(x)
            return x

    class FrozenBatchNorm2d(nn.Module):
        _version = 3

        def __init__(self, num_features, eps=1e-5):
            super().__init__()
            self.num_features = num_features
            self.eps = eps
            self.register_buffer("weight", torch.ones(num_features))
            self.register_buffer("bias", torch.zeros(num_features))
            self.register_buffer("running_mean", torch.zeros(num_features))
            self.register_buffer("running_var", torch.ones(num_features) - eps)

        def forward(self, x):
            scale = self.weight * (self.running_var + self.eps).rsqrt()
            bias = self.bias - self.running_mean * scale
            scale = scale.reshape(1, -1, 1, 1)
            bias = bias.reshape(1, -1, 1, 1)
            out_dtype = x.dtype  # may be half
            return x * scale.to(out_dtype) + bias.to(out_dtype)

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                  error_msgs):
            num_batches_tracked_key = prefix + "num_batches_tracked"
            if num_batches_tracked_key in state_dict:
                del state_dict[num_batches_tracked_key]
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                          error_msgs)

        def __repr__(self):
            return "FrozenBatchNorm2d(num_features={}, eps={})".format(self.num_features, self.eps)

        @classmethod
        def convert_frozen_batchnorm(cls, module):
            bn_module = nn.modules.batchnorm
            bn_module = (bn_module.BatchNorm2d, bn_module.SyncBatchNorm)
            res = module
            if isinstance(module, bn_module):
                res = cls(module.num_features)
                if module.affine:
                    res.weight.data = module.weight.data.clone().detach()
                    res.bias.data = module.bias.data.clone().detach()
                res.running_mean.data = module.running_mean.data
                res.running_var.data = module.running_var.data
                res.eps = module.eps
            else:
                for name, child in module.named_children():
                    new_child = cls.convert_frozen_batchnorm(child)
                    if new_child is not child:
                        res.add_module(name, new_child)
            return res

    class CosineLinear(nn.Module):
        __constants__ = ["in_features", "out_features"]

        def __init__(self, in_features, out_features, bias=True, scale=10.0, device=None, dtype=None):
            factory_kwargs = {"device": device, "dtype": dtype}
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.init_scale = scale
            self.weight = Parameter(torch.empty((out_features, in_features), **factory_kwargs))
            self.scale = Parameter(torch.empty((), **factory_kwargs))
            if bias:
                self.bias = Parameter(torch.empty(out_features, **factory_kwargs))
            else:
                self.register_parameter("bias", None)
            self.reset_parameters()

        def reset_parameters(self):
            init_.kaiming_uniform_(self.weight, a=math.sqrt(5))
            init_.constant_(self.scale, self.init_scale)
            if self.bias is not None:
                fan_in, _ = init_._calculate_fan_in_and_fan_out(self.weight)
                bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                init_.uniform_(self.bias, -bound, bound)

        def forward(self, input):
            return self.scale * F.linear(F.normalize(input, dim=-1), F.normalize(self.weight, dim=-1), self.bias)

        def extra_repr(self):
            return "in_features={}, out_features={}, bias={}".format(
                self.in_features, self.out_features, self.bias is not None)

    class TinyBackbone(nn.Module):
        def __init__(self, num_classes=3):
            super().__init__()
            self.stem = Conv2d(3, 4, kernel_size=3, stride=2, padding=1, bias=False, norm=nn.BatchNorm2d(4),
                               activation=F.relu)
            self.res2 = Conv2d(4, 6, kernel_size=3, padding=1, bias=False, norm=nn.BatchNorm2d(6), activation=F.relu)
            for layer in [self.stem, self.res2]:
                c2_msra_fill(layer)
            self.head = CosineLinear(6, num_classes, device="meta")

        def forward(self, x):
            x = self.res2(self.stem(x))
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    model = TinyBackbone()
    assert model.head.weight.shape == (3, 6) and "in_features=6, out_features=3, bias=True" in repr(model.head)
    model.head.to_empty(device="cpu")
    model.head.reset_parameters()
    init = load(m, model, state)
    with torch.no_grad():  # the "pretrained" statistics
        model.train()
        model(torch.tensor(normal(rng, 4, 3, 8, 8) * 2 + 1))
    checkpoint = {k: v.clone() for k, v in model.state_dict().items()}
    assert checkpoint["stem.norm.num_batches_tracked"].item() == 1
    model = FrozenBatchNorm2d.convert_frozen_batchnorm(model)
    assert isinstance(model.stem.norm, FrozenBatchNorm2d) and "FrozenBatchNorm2d(num_features=4" in repr(model)
    model.load_state_dict(checkpoint)
    for p in model.stem.parameters():
        p.requires_grad = False
    params = [p for p in model.parameters() if p.requires_grad]
    assert len(params) == 4
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)
    x, y = torch.tensor(normal(rng, 4, 3, 8, 8)), torch.tensor(rng.integers(0, 3, 4))
    losses = []
    for _ in range(2):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_detectron2_frozen_bn():
    compare(detectron2_frozen_bn)


# (f) ULMFiT-style gradual unfreezing in plain PyTorch (the fine-tuning recipe of many text-classification tutorials):
# every layer frozen but the head, an optimizer over the head alone, each epoch unfreezing the next layer down and
# optimizer.add_param_group({'params': ..., 'lr': lr / 2.6 ** depth}) (discriminative learning rates), the validation
# loss from an evaluate() decorated with @torch.no_grad() under model.eval(), accuracy under torch.inference_mode(),
# ReduceLROnPlateau(mode="min", min_lr=1e-4) stepped on it (a float min_lr: groups added later get it), the learning rates
# of every group logged
def ulmfit_unfreezing(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(5)

    class LSTMClassifier(nn.Module):
        def __init__(self, vocab_size, emb_dim, hid_dim, n_classes):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
            self.rnns = nn.ModuleList([nn.LSTM(emb_dim if i == 0 else hid_dim, hid_dim, batch_first=True)
                                       for i in range(2)])
            self.head = nn.Sequential(nn.Linear(2 * hid_dim, hid_dim), nn.ReLU(), nn.Linear(hid_dim, n_classes))

        def layer_groups(self):
            return [self.embedding, self.rnns[0], self.rnns[1], self.head]

        def forward(self, text):
            x = self.embedding(text)
            for rnn in self.rnns:
                x, _ = rnn(x)
            # concat pooling: the last step beside the max over time
            pooled = torch.cat([x[:, -1], x.max(dim=1)[0]], dim=1)
            return self.head(pooled)

    def freeze_to(model, n):
        for i, group in enumerate(model.layer_groups()):
            for p in group.parameters():
                p.requires_grad = i >= n

    @torch.no_grad()
    def evaluate(model, batches):
        model.eval()
        total = 0.0
        for text, label in batches:
            total += F.cross_entropy(model(text), label, reduction="sum").item()
        return total / sum(len(label) for _, label in batches)

    def accuracy(model, batches):
        with torch.inference_mode():
            correct = sum((model(text).argmax(1) == label).sum().item() for text, label in batches)
        return correct / sum(len(label) for _, label in batches)

    model = LSTMClassifier(vocab_size=20, emb_dim=6, hid_dim=5, n_classes=3)
    init = load(m, model, state)
    train = [(torch.tensor(rng.integers(1, 20, (3, 4))), torch.tensor(rng.integers(0, 3, 3))) for _ in range(3)]
    valid = [(torch.tensor(rng.integers(1, 20, (3, 4))), torch.tensor(rng.integers(0, 3, 3)))]
    groups = model.layer_groups()
    lr = 0.05
    freeze_to(model, len(groups) - 1)
    optimizer = torch.optim.Adam(model.head.parameters(), lr=lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=0, min_lr=1e-4)
    losses = []
    for epoch, (text, label) in enumerate(train):
        if epoch > 0:  # unfreeze the next layer group down
            depth = len(groups) - 1 - epoch
            for p in groups[depth].parameters():
                p.requires_grad = True
            optimizer.add_param_group({"params": groups[depth].parameters(), "lr": lr / 2.6 ** (epoch)})
        model.train()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(text), label)
        loss.backward()
        optimizer.step()
        val_loss = evaluate(model, valid)
        scheduler.step(val_loss)
        losses += [loss.item(), val_loss, accuracy(model, valid)] + [g["lr"] for g in optimizer.param_groups]
    assert len(optimizer.param_groups) == 3
    assert not model.embedding.weight.requires_grad
    return init, losses + summary(model.parameters())


def test_ulmfit_unfreezing():
    compare(ulmfit_unfreezing)


# (g) a timm/Hugging Face-style training loop's accumulation and loss scaling: torch.amp.GradScaler(device) with
# init_scale=2.**20 and growth_interval=2 (the scale doubling after two finite steps), loss / accum_steps scaled and
# backpropagated per micro-batch, at each boundary scaler.unscale_(optimizer), clip_grad_norm_'s returned norm,
# scaler.step, scaler.update, zero_grad(set_to_none=True);
# SGDR's CosineAnnealingWarmRestarts stepped by fractional epochs (epoch + i / iters), per-parameter-group options
# (no weight decay on biases and norms, a head learning rate), the scaler's state_dict
def accumulate_scaler_sgdr(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(6)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    accum_steps, epochs, iters = 2, 2, 2

    model = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 3)).to(device)
    init = load(m, model, state)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if name.startswith("3."):
            continue
        (no_decay if p.ndim <= 1 else decay).append(p)
    optimizer = torch.optim.AdamW([
        {"params": decay, "weight_decay": 0.05},
        {"params": no_decay, "weight_decay": 0.0},
        {"params": model[3].parameters(), "lr": 2e-2, "weight_decay": 0.01}], lr=1e-2, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=1, T_mult=2, eta_min=1e-4)
    scaler = torch.amp.GradScaler(device, init_scale=2.**20, growth_interval=2)
    losses = []
    for epoch in range(epochs):
        for i in range(iters):
            for micro in range(accum_steps):
                x = torch.tensor(normal(rng, 3, 6), device=device)
                y = torch.tensor(rng.integers(0, 3, 3), device=device)
                loss = F.cross_entropy(model(x), y)
                scaler.scale(loss / accum_steps).backward()
                losses.append(loss.item())
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step(epoch + i / iters)
            losses += [norm.item(), scaler.get_scale()]
            losses += [g["lr"] for g in optimizer.param_groups]
    assert all(p.grad is None for p in model.parameters())
    assert scaler.state_dict()["scale"] == scaler.get_scale() == 2.**22
    return init, losses + summary(model.parameters())


def test_accumulate_scaler_sgdr():
    compare(accumulate_scaler_sgdr)


# (h) DeepFM for CTR prediction (chenxijun1029/DeepFM_with_PyTorch's model: first- and second-order embeddings in
# nn.ModuleLists, (torch.sum(emb(Xi[:, i, :]), 1).t() * Xv[:, i]).t(), the FM term by Python's sum over a list of
# tensors, linear_i/batchNorm_i/dropout_i by setattr and getattr, the bias as nn.Parameter(torch.randn(1))) fed by
# torch.utils.data's pipeline: a Dataset subclass, random_split([0.75, 0.25], generator=g), ConcatDataset with a
# Subset, WeightedRandomSampler balancing the classes with the same generator, a BatchSampler over the sampler's
# order, a custom collate_fn and worker_init_fn; torch replays tnet's split and sampled order
def deepfm_pipeline(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    data = m.data
    torch.manual_seed(0)
    rng = np.random.default_rng(7)

    class DeepFM(nn.Module):
        def __init__(self, feature_sizes, embedding_size=4, hidden_dims=[8, 8], num_classes=1, dropout=[0.0, 0.0]):
            super().__init__()
            self.field_size = len(feature_sizes)
            self.feature_sizes = feature_sizes
            self.embedding_size = embedding_size
            self.hidden_dims = hidden_dims
            self.num_classes = num_classes
            self.bias = torch.nn.Parameter(torch.randn(1))
            self.fm_first_order_embeddings = nn.ModuleList(
                [nn.Embedding(feature_size, 1) for feature_size in self.feature_sizes])
            self.fm_second_order_embeddings = nn.ModuleList(
                [nn.Embedding(feature_size, self.embedding_size) for feature_size in self.feature_sizes])
            all_dims = [self.field_size * self.embedding_size] + self.hidden_dims + [self.num_classes]
            for i in range(1, len(hidden_dims) + 1):
                setattr(self, 'linear_' + str(i), nn.Linear(all_dims[i - 1], all_dims[i]))
                setattr(self, 'batchNorm_' + str(i), nn.BatchNorm1d(all_dims[i]))
                setattr(self, 'dropout_' + str(i), nn.Dropout(dropout[i - 1]))

        def forward(self, Xi, Xv):
            fm_first_order_emb_arr = [(torch.sum(emb(Xi[:, i, :]), 1).t() * Xv[:, i]).t() for i, emb in
                                      enumerate(self.fm_first_order_embeddings)]
            fm_first_order = torch.cat(fm_first_order_emb_arr, 1)
            fm_second_order_emb_arr = [(torch.sum(emb(Xi[:, i, :]), 1).t() * Xv[:, i]).t() for i, emb in
                                       enumerate(self.fm_second_order_embeddings)]
            fm_sum_second_order_emb = sum(fm_second_order_emb_arr)
            fm_sum_second_order_emb_square = fm_sum_second_order_emb * fm_sum_second_order_emb  # (x+y)^2
            fm_second_order_emb_square = [item * item for item in fm_second_order_emb_arr]
            fm_second_order_emb_square_sum = sum(fm_second_order_emb_square)  # x^2+y^2
            fm_second_order = (fm_sum_second_order_emb_square - fm_second_order_emb_square_sum) * 0.5
            deep_emb = torch.cat(fm_second_order_emb_arr, 1)
            deep_out = deep_emb
            for i in range(1, len(self.hidden_dims) + 1):
                deep_out = getattr(self, 'linear_' + str(i))(deep_out)
                deep_out = getattr(self, 'batchNorm_' + str(i))(deep_out)
                deep_out = getattr(self, 'dropout_' + str(i))(deep_out)
            total_sum = torch.sum(fm_first_order, 1) + torch.sum(fm_second_order, 1) + torch.sum(deep_out, 1) + \
                self.bias
            return total_sum

    class CriteoDataset(data.Dataset):
        def __init__(self, Xi, Xv, target):
            self.Xi, self.Xv, self.target = Xi, Xv, target

        def __getitem__(self, idx):
            return self.Xi[idx], self.Xv[idx], self.target[idx]

        def __len__(self):
            return len(self.target)

    def collate(batch):
        Xi, Xv, target = zip(*batch)
        return (torch.tensor(np.stack(Xi)).long(), torch.tensor(np.stack(Xv)), torch.tensor(np.array(target)).float())

    def seed_worker(worker_id):
        worker_seed = torch.initial_seed() % 2 ** 32
        np.random.seed(worker_seed)

    feature_sizes = [5, 7, 3]
    n = 16
    Xi = np.stack([rng.integers(0, s, (n, 1)) for s in feature_sizes], axis=1)
    Xv = rng.uniform(0.5, 1.5, (n, 3)).astype(np.float32)
    target = (rng.random(n) < 0.3).astype(np.float32)
    dataset = CriteoDataset(Xi, Xv, target)
    g = torch.Generator()
    g.manual_seed(42)
    train_set, val_set = data.random_split(dataset, [0.75, 0.25], generator=g)
    assert len(train_set) == 12 and len(val_set) == 4
    split = replayed_list(replay, "split", list(train_set.indices) + list(val_set.indices))
    train_set, val_set = data.Subset(dataset, split[:12]), data.Subset(dataset, split[12:])
    extra = data.Subset(dataset, [0, 1])
    train_all = data.ConcatDataset([train_set, extra])
    labels = np.array([train_all[i][2] for i in range(len(train_all))])
    class_count = np.bincount(labels.astype(np.int64), minlength=2)
    weights = 1.0 / class_count[labels.astype(np.int64)]
    sampler = data.WeightedRandomSampler(weights.tolist(), num_samples=8, replacement=True, generator=g)
    order = replayed_list(replay, "order", list(sampler))
    loader = data.DataLoader(train_all, batch_sampler=data.BatchSampler(order, batch_size=4, drop_last=True),
                             collate_fn=collate, worker_init_fn=seed_worker, num_workers=0)
    assert len(loader) == 2

    model = DeepFM(feature_sizes)
    init = load(m, model, state)
    # SGD where the script has Adam: the biases before each BatchNorm (and the first BatchNorm's, before the second's
    # linear) get gradients of rounding alone, which Adam would normalise
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for t, (xi, xv, y) in enumerate(loader):
        model.train()
        total = model(xi, xv)
        criterion = F.binary_cross_entropy_with_logits
        loss = criterion(total, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    xi, xv, y = collate([val_set.dataset[i] for i in val_set.indices])
    with torch.no_grad():
        losses.append(F.binary_cross_entropy_with_logits(model(xi, xv), y).item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_deepfm_pipeline():
    compare(deepfm_pipeline, replay={})


# (i) nikhilbarhate99's min-decision-transformer (MaskedCausalAttention with its tril mask as a register_buffer and
# masked_fill(self.mask[..., :T, :T] == 0, float('-inf')), post-LN Blocks in an nn.Sequential, the (R, s, a) tokens by
# torch.stack(dim=1).permute(0, 2, 1, 3).reshape(B, 3 * T, h_dim) and back, the action loss over
# action_preds.view(-1, act_dim)[traj_mask.view(-1,) > 0], LambdaLR's linear warmup, clip_grad_norm_(0.25)) with
# the optimizer of kzl/decision-transformer's Atari code, minGPT's configure_optimizers (decay and no_decay by
# module type over named_modules and named_parameters, '%s.%s' % (mn, pn) names, the intersection and union
# asserts, AdamW groups by sorted names); the returns-to-go by discount_cumsum in numpy
def decision_transformer(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(8)

    def discount_cumsum(x, gamma):
        disc_cumsum = np.zeros_like(x)
        disc_cumsum[-1] = x[-1]
        for t in reversed(range(x.shape[0] - 1)):
            disc_cumsum[t] = x[t] + gamma * disc_cumsum[t + 1]
        return disc_cumsum

    class MaskedCausalAttention(nn.Module):
        def __init__(self, h_dim, max_T, n_heads, drop_p):
            super().__init__()
            self.n_heads = n_heads
            self.max_T = max_T
            self.q_net = nn.Linear(h_dim, h_dim)
            self.k_net = nn.Linear(h_dim, h_dim)
            self.v_net = nn.Linear(h_dim, h_dim)
            self.proj_net = nn.Linear(h_dim, h_dim)
            self.att_drop = nn.Dropout(drop_p)
            self.proj_drop = nn.Dropout(drop_p)
            ones = torch.ones((max_T, max_T))
            mask = torch.tril(ones).view(1, 1, max_T, max_T)
            # register buffer makes sure mask does not get updated
            # during backpropagation
            self.register_buffer('mask', mask)

        def forward(self, x):
            B, T, C = x.shape  # batch size, seq length, h_dim * n_heads
            N, D = self.n_heads, C // self.n_heads  # N = num heads, D = attention dim
            # rearrange q, k, v as (B, N, T, D)
            q = self.q_net(x).view(B, T, N, D).transpose(1, 2)
            k = self.k_net(x).view(B, T, N, D).transpose(1, 2)
            v = self.v_net(x).view(B, T, N, D).transpose(1, 2)
            # weights (B, N, T, T)
            weights = q @ k.transpose(2, 3) / math.sqrt(D)
            # causal mask applied to weights
            weights = weights.masked_fill(self.mask[..., :T, :T] == 0, float('-inf'))
            # normalize weights, all -inf -> 0 after softmax
            normalized_weights = F.softmax(weights, dim=-1)
            # attention (B, N, T, D)
            attention = self.att_drop(normalized_weights @ v)
            # gather heads and project (B, N, T, D) -> (B, T, N*D)
            attention = attention.transpose(1, 2).contiguous().view(B, T, N * D)
            out = self.proj_drop(self.proj_net(attention))
            return out

    class Block(nn.Module):
        def __init__(self, h_dim, max_T, n_heads, drop_p):
            super().__init__()
            self.attention = MaskedCausalAttention(h_dim, max_T, n_heads, drop_p)
            self.mlp = nn.Sequential(nn.Linear(h_dim, 4 * h_dim), nn.GELU(), nn.Linear(4 * h_dim, h_dim),
                                     nn.Dropout(drop_p))
            self.ln1 = nn.LayerNorm(h_dim)
            self.ln2 = nn.LayerNorm(h_dim)

        def forward(self, x):
            # Attention -> LayerNorm -> MLP -> LayerNorm
            x = x + self.attention(x)  # residual
            x = self.ln1(x)
            x = x + self.mlp(x)  # residual
            x = self.ln2(x)
            return x

    class DecisionTransformer(nn.Module):
        def __init__(self, state_dim, act_dim, n_blocks, h_dim, context_len, n_heads, drop_p, max_timestep=4096):
            super().__init__()
            self.state_dim = state_dim
            self.act_dim = act_dim
            self.h_dim = h_dim
            # transformer blocks
            input_seq_len = 3 * context_len
            blocks = [Block(h_dim, input_seq_len, n_heads, drop_p) for _ in range(n_blocks)]
            self.transformer = nn.Sequential(*blocks)
            # projection heads (project to embedding)
            self.embed_ln = nn.LayerNorm(h_dim)
            self.embed_timestep = nn.Embedding(max_timestep, h_dim)
            self.embed_rtg = torch.nn.Linear(1, h_dim)
            self.embed_state = torch.nn.Linear(state_dim, h_dim)
            # continuous actions
            self.embed_action = torch.nn.Linear(act_dim, h_dim)
            use_action_tanh = True  # True for continuous actions
            # prediction heads
            self.predict_rtg = torch.nn.Linear(h_dim, 1)
            self.predict_state = torch.nn.Linear(h_dim, state_dim)
            self.predict_action = nn.Sequential(
                *([nn.Linear(h_dim, act_dim)] + ([nn.Tanh()] if use_action_tanh else [])))

        def forward(self, timesteps, states, actions, returns_to_go):
            B, T, _ = states.shape
            time_embeddings = self.embed_timestep(timesteps)
            # time embeddings are treated similar to positional embeddings
            state_embeddings = self.embed_state(states) + time_embeddings
            action_embeddings = self.embed_action(actions) + time_embeddings
            returns_embeddings = self.embed_rtg(returns_to_go) + time_embeddings
            # stack rtg, states and actions and reshape sequence as
            # (r1, s1, a1, r2, s2, a2 ...)
            h = torch.stack(
                (returns_embeddings, state_embeddings, action_embeddings), dim=1
            ).permute(0, 2, 1, 3).reshape(B, 3 * T, self.h_dim)
            h = self.embed_ln(h)
            # transformer and prediction
            h = self.transformer(h)
            # get h reshaped such that its size = (B x 3 x T x h_dim) and
            # h[:, 0, t] is conditioned on r_0, s_0, a_0 ... r_t
            # h[:, 1, t] is conditioned on r_0, s_0, a_0 ... r_t, s_t
            # h[:, 2, t] is conditioned on r_0, s_0, a_0 ... r_t, s_t, a_t
            h = h.reshape(B, T, 3, self.h_dim).permute(0, 2, 1, 3)
            # get predictions
            return_preds = self.predict_rtg(h[:, 2])  # predict next rtg given r, s, a
            state_preds = self.predict_state(h[:, 2])  # predict next state given r, s, a
            action_preds = self.predict_action(h[:, 1])  # predict action given r, s
            return state_preds, action_preds, return_preds

        def configure_optimizers(self, train_config):
            # separate out all parameters to those that will and won't experience regularizing weight decay
            decay = set()
            no_decay = set()
            whitelist_weight_modules = (torch.nn.Linear, )
            blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
            for mn, m_ in self.named_modules():
                for pn, p in m_.named_parameters():
                    fpn = '%s.%s' % (mn, pn) if mn else pn  # full param name
                    if pn.endswith('bias'):
                        # all biases will not be decayed
                        no_decay.add(fpn)
                    elif pn.endswith('weight') and isinstance(m_, whitelist_weight_modules):
                        # weights of whitelist modules will be weight decayed
                        decay.add(fpn)
                    elif pn.endswith('weight') and isinstance(m_, blacklist_weight_modules):
                        # weights of blacklist modules will NOT be weight decayed
                        no_decay.add(fpn)
            # validate that we considered every parameter
            param_dict = {pn: p for pn, p in self.named_parameters()}
            inter_params = decay & no_decay
            union_params = decay | no_decay
            assert len(inter_params) == 0, "parameters %s made it into both decay/no_decay sets!" % (str(inter_params), )
            assert len(param_dict.keys() - union_params) == 0, \
                "parameters %s were not separated into either decay/no_decay set!" % (
                    str(param_dict.keys() - union_params), )
            # create the pytorch optimizer object
            optim_groups = [
                {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": train_config.weight_decay},
                {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
            ]
            optimizer = torch.optim.AdamW(optim_groups, lr=train_config.learning_rate, betas=train_config.betas)
            return optimizer

    class TrainConfig:
        learning_rate, betas, weight_decay, warmup_steps = 1e-3, (0.9, 0.95), 0.1, 4

    state_dim, act_dim, context_len, batch_size = 3, 2, 4, 2
    model = DecisionTransformer(state_dim=state_dim, act_dim=act_dim, n_blocks=2, h_dim=8, context_len=context_len,
                                n_heads=2, drop_p=0.0, max_timestep=20)
    init = load(m, model, state)
    optimizer = model.configure_optimizers(TrainConfig)
    assert [len(g["params"]) for g in optimizer.param_groups] == [18, 29]
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda steps: min((steps + 1) / TrainConfig.warmup_steps, 1))
    losses = []
    for _ in range(2):
        timesteps = torch.tensor(np.stack([np.arange(s, s + context_len) for s in rng.integers(0, 10, batch_size)]))
        states = torch.tensor(normal(rng, batch_size, context_len, state_dim))
        actions = torch.tensor(np.tanh(normal(rng, batch_size, context_len, act_dim)))
        rewards = rng.random((batch_size, context_len)).astype(np.float32)
        returns_to_go = torch.tensor(np.stack([discount_cumsum(r, 1.0) for r in rewards])[..., None] / 10.0)
        traj_mask = torch.tensor(np.array([[1, 1, 1, 1], [0, 1, 1, 1]]))
        action_target = torch.clone(actions).detach()
        state_preds, action_preds, return_preds = model.forward(
            timesteps=timesteps, states=states, actions=actions, returns_to_go=returns_to_go)
        # only consider non padded elements
        action_preds = action_preds.view(-1, act_dim)[traj_mask.view(-1,) > 0]
        action_target = action_target.view(-1, act_dim)[traj_mask.view(-1,) > 0]
        action_loss = F.mse_loss(action_preds, action_target, reduction='mean')
        optimizer.zero_grad()
        action_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        scheduler.step()
        losses += [action_loss.detach().cpu().item(), scheduler.get_last_lr()[0]]
    return init, losses + summary(model.parameters())


def test_decision_transformer():
    compare(decision_transformer)


# (j) a conditional neural process on GP curves (the PyTorch ports of DeepMind's neural-processes notebook): the
# GPCurvesReader's _gaussian_kernel by broadcast differences, torch.square and sum(-1), the noise by torch.eye, the
# Cholesky factor in float64 (torch.linalg.cholesky(kernel.double()).float()) times the standard normal draws, the
# context points chosen by torch.randperm(num_target, generator=g), the deterministic encoder's mean over the context,
# the decoder's 0.1 + 0.9 * F.softplus(log_sigma), Independent(Normal(mu, sigma), 1).log_prob's negative mean,
# the decoder run through torch.utils.checkpoint.checkpoint(..., use_reentrant=False); torch replays the curves'
# draws and the context choice
def conditional_np(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    distributions = import_module(torch.__name__ + ".distributions")
    checkpoint = import_module(torch.__name__ + ".utils.checkpoint").checkpoint
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(11)

    class GPCurvesReader(object):
        def __init__(self, batch_size, max_num_context, x_size=1, y_size=1, l1_scale=0.6, sigma_scale=1.0):
            self._batch_size = batch_size
            self._max_num_context = max_num_context
            self._x_size = x_size
            self._y_size = y_size
            self._l1_scale = l1_scale
            self._sigma_scale = sigma_scale

        def _gaussian_kernel(self, xdata, l1, sigma_f, sigma_noise=2e-2):
            num_total_points = xdata.shape[1]
            # Expand and take the difference
            xdata1 = xdata.unsqueeze(1)  # [B, 1, num_total_points, x_size]
            xdata2 = xdata.unsqueeze(2)  # [B, num_total_points, 1, x_size]
            diff = xdata1 - xdata2  # [B, num_total_points, num_total_points, x_size]
            # [B, y_size, num_total_points, num_total_points, x_size]
            norm = torch.square(diff[:, None, :, :, :] / l1[:, :, None, None, :])
            norm = norm.sum(-1)  # [B, data_size, num_total_points, num_total_points]
            # [B, y_size, num_total_points, num_total_points]
            kernel = torch.square(sigma_f)[:, :, None, None] * torch.exp(-0.5 * norm)
            # Add some noise to the diagonal to make the cholesky work.
            kernel += (sigma_noise ** 2) * torch.eye(num_total_points)
            return kernel

        def generate_curves(self, num_context, num_target):
            num_total_points = num_target
            x_values = torch.tensor(np.random.default_rng(12).uniform(-2, 2, (
                self._batch_size, num_total_points, self._x_size)).astype(np.float32))
            l1 = torch.ones(self._batch_size, self._y_size, self._x_size) * self._l1_scale
            sigma_f = torch.ones(self._batch_size, self._y_size) * self._sigma_scale
            kernel = self._gaussian_kernel(x_values, l1, sigma_f)
            cholesky = torch.linalg.cholesky(kernel.float())  # kernel.double() in the notebook: tnet refuses float64
            eps = replayed(m, replay, "eps", torch.randn(self._batch_size, self._y_size, num_total_points, 1))
            y_values = torch.matmul(cholesky, eps)  # [batch_size, num_total_points, y_size]
            y_values = y_values.squeeze(3).permute(0, 2, 1)
            idx = torch.tensor(replayed_list(replay, "idx", torch.randperm(num_target, generator=g).tolist()))
            context_x = x_values[:, idx[:num_context]]
            context_y = y_values[:, idx[:num_context]]
            return (context_x, context_y, x_values), y_values

    class DeterministicEncoder(nn.Module):
        def __init__(self, sizes):
            super(DeterministicEncoder, self).__init__()
            self.linears = nn.ModuleList()
            for i in range(len(sizes) - 1):
                self.linears.append(nn.Linear(sizes[i], sizes[i + 1]))

        def forward(self, context_x, context_y):
            encoder_input = torch.cat((context_x, context_y), dim=-1)
            batch_size, set_size, filter_size = encoder_input.shape
            x = encoder_input.view(batch_size * set_size, -1)
            for i, linear in enumerate(self.linears[:-1]):
                x = torch.relu(linear(x))
            x = self.linears[-1](x)
            x = x.view(batch_size, set_size, -1)
            representation = x.mean(dim=1)
            return representation

    class DeterministicDecoder(nn.Module):
        def __init__(self, sizes):
            super(DeterministicDecoder, self).__init__()
            self.linears = nn.ModuleList()
            for i in range(len(sizes) - 1):
                self.linears.append(nn.Linear(sizes[i], sizes[i + 1]))

        def forward(self, representation, target_x):
            batch_size, num_total_points, _ = target_x.shape
            representation = representation.unsqueeze(1).repeat([1, num_total_points, 1])
            input = torch.cat((representation, target_x), dim=-1)
            hidden = input.view(batch_size * num_total_points, -1)
            for i, linear in enumerate(self.linears[:-1]):
                hidden = torch.relu(linear(hidden))
            hidden = self.linears[-1](hidden)
            hidden = hidden.view(batch_size, num_total_points, -1)
            mu, log_sigma = torch.split(hidden, 1, dim=-1)
            sigma = 0.1 + 0.9 * F.softplus(log_sigma)
            dist = distributions.Independent(distributions.Normal(loc=mu, scale=sigma), 1)
            return dist, mu, sigma

    class DeterministicModel(nn.Module):
        def __init__(self, encoder_sizes, decoder_sizes):
            super(DeterministicModel, self).__init__()
            self._encoder = DeterministicEncoder(encoder_sizes)
            self._decoder = DeterministicDecoder(decoder_sizes)

        def forward(self, query, target_y=None):
            (context_x, context_y), target_x = query
            representation = self._encoder(context_x, context_y)
            mu, sigma = checkpoint(lambda r, x: self._decoder(r, x)[1:], representation, target_x, use_reentrant=False)
            dist = distributions.Independent(distributions.Normal(loc=mu, scale=sigma), 1)
            if target_y is not None:
                log_p = dist.log_prob(target_y)
            else:
                log_p = None
            return log_p, mu, sigma

    dataset_train = GPCurvesReader(batch_size=2, max_num_context=5)
    model = DeterministicModel(encoder_sizes=[2, 8, 8], decoder_sizes=[9, 8, 2])
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=4)
    (context_x, context_y, target_x), target_y = dataset_train.generate_curves(num_context=4, num_target=7)
    query = ((context_x, context_y), target_x)
    losses = []
    for it in range(2):
        optimizer.zero_grad()
        log_prob, _, _ = model(query, target_y)
        loss = -log_prob.mean()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), scheduler.get_last_lr()[0]]
    return init, losses + summary(model.parameters())


def test_conditional_np():
    compare(conditional_np, replay={})


# (k) EM for a Gaussian mixture in plain PyTorch, then a mixture density head trained by its likelihood (the
# k-means-initialised GMM of many tutorials and gists): the E-step by MultivariateNormal(means, covariance_matrix=)
# .log_prob on x.unsqueeze(1), torch.logsumexp and .exp() responsibilities, the M-step's weighted covariances by
# torch.cov(x.T, aweights=resp[:, k]) plus a diagonal jitter stacked by torch.stack, the mixture's log-likelihood;
# then MixtureSameFamily(Categorical(logits), MultivariateNormal(loc, scale_tril=torch.diag_embed(...))) as a
# network's output distribution, initialised from the EM fit by copy_ under torch.no_grad, two Adam steps of its
# negative log-likelihood
def gmm_em_mdn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    D = import_module(torch.__name__ + ".distributions")
    torch.manual_seed(0)
    rng = np.random.default_rng(9)
    centres = np.array([[-2.0, 0.0], [2.0, 1.0], [0.0, -2.0]], np.float32)
    x = torch.tensor(np.concatenate([c + 0.5 * normal(rng, 8, 2) for c in centres]))
    K, n_iter = 3, 3

    def e_step(x, weights, means, covs):
        log_prob = D.MultivariateNormal(means, covariance_matrix=covs).log_prob(x.unsqueeze(1))  # [N, K]
        weighted = log_prob + torch.log(weights)
        log_norm = torch.logsumexp(weighted, dim=1, keepdim=True)
        return (weighted - log_norm).exp(), log_norm.mean()

    def m_step(x, resp, reg=1e-3):
        nk = resp.sum(0)
        weights = nk / x.shape[0]
        means = resp.t() @ x / nk.unsqueeze(1)
        covs = torch.stack([torch.cov(x.T, aweights=resp[:, k]) + reg * torch.eye(x.shape[1]) for k in range(K)])
        return weights, means, covs

    weights = torch.full((K,), 1.0 / K)
    means = x[torch.tensor([0, 8, 16])].clone()
    covs = torch.eye(2).expand(K, 2, 2).clone()
    log_liks = []
    for _ in range(n_iter):
        resp, log_lik = e_step(x, weights, means, covs)
        weights, means, covs = m_step(x, resp)
        log_liks.append(log_lik.item())

    class MDN(nn.Module):
        def __init__(self, in_dim, K, out_dim=2):
            super().__init__()
            self.K, self.out_dim = K, out_dim
            self.body = nn.Sequential(nn.Linear(in_dim, 8), nn.Tanh())
            self.logits = nn.Linear(8, K)
            self.loc = nn.Linear(8, K * out_dim)
            self.log_scale = nn.Linear(8, K * out_dim)

        def forward(self, h):
            z = self.body(h)
            loc = self.loc(z).view(-1, self.K, self.out_dim)
            scale = F.softplus(self.log_scale(z)).view(-1, self.K, self.out_dim) + 1e-3
            comp = D.MultivariateNormal(loc, scale_tril=torch.diag_embed(scale))
            return D.MixtureSameFamily(D.Categorical(logits=self.logits(z)), comp)

    model = MDN(in_dim=1, K=K)
    init = load(m, model, state)
    with torch.no_grad():  # start the mixture where EM left it
        model.loc.bias.copy_(means.flatten())
        model.logits.bias.copy_(weights.log())
        model.log_scale.bias.copy_(torch.log(torch.expm1(torch.diagonal(covs, dim1=-2, dim2=-1).sqrt())).flatten())
    h = torch.tensor(rng.uniform(-1, 1, (24, 1)).astype(np.float32))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        loss = -model(h).log_prob(x).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return init, log_liks + summary([weights, means, covs]) + losses + summary(model.parameters())


def test_gmm_em_mdn():
    compare(gmm_em_mdn)


# (l) OpenAI's evolution strategies in PyTorch (Salimans et al.; the pytorch-es scripts): a policy with no gradients,
# its weights as one flat vector by nn.utils.parameters_to_vector and written back by vector_to_parameters, antithetic
# Gaussian perturbations from a torch.Generator (replayed for torch), fitness under a @torch.no_grad()-decorated
# rollout, centred ranks by argsort of argsort, the ES gradient estimate handed to Adam as the flat parameter's .grad;
# the policy's running observation normaliser kept by get_extra_state / set_extra_state (a dict of counts and lists)
# beside a non-persistent buffer, saved with torch.save into a BytesIO and loaded into a fresh policy
def evolution_strategies(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    import io
    torch.manual_seed(0)
    rng = np.random.default_rng(10)
    g = torch.Generator().manual_seed(123)

    class Policy(nn.Module):
        def __init__(self, obs_dim, act_dim):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(obs_dim, 8), nn.Tanh(), nn.Linear(8, act_dim))
            self.obs_count, self.obs_sum, self.obs_sumsq = 0, [0.0] * obs_dim, [0.0] * obs_dim
            self.register_buffer("scratch", torch.zeros(obs_dim), persistent=False)

        def observe(self, obs):
            self.obs_count += obs.shape[0]
            self.obs_sum = [a + b for a, b in zip(self.obs_sum, obs.sum(0).tolist())]
            self.obs_sumsq = [a + b for a, b in zip(self.obs_sumsq, (obs ** 2).sum(0).tolist())]

        def normalise(self, obs):
            mean = torch.tensor([s / self.obs_count for s in self.obs_sum])
            var = torch.tensor([q / self.obs_count for q in self.obs_sumsq]) - mean ** 2
            return (obs - mean) / (var.clamp(min=1e-2)).sqrt()

        def forward(self, obs):
            return self.net(self.normalise(obs))

        def get_extra_state(self):
            return {"count": self.obs_count, "sum": self.obs_sum, "sumsq": self.obs_sumsq}

        def set_extra_state(self, state):
            self.obs_count, self.obs_sum, self.obs_sumsq = state["count"], list(state["sum"]), list(state["sumsq"])

    obs = torch.tensor(normal(rng, 16, 3) * 2 + 1)
    target = torch.tensor(np.tanh(normal(rng, 16, 2)))
    policy = Policy(3, 2)
    policy.observe(obs)
    init = load(m, policy.net, state)  # the weights alone: the extra state is no tensor
    assert set(policy.state_dict()) == {"net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias", "_extra_state"}

    @torch.no_grad()
    def fitness(model):
        return -((model(obs) - target) ** 2).mean().item()

    def centered_ranks(x):
        ranks = torch.argsort(torch.argsort(x)).float()
        return ranks / (len(x) - 1) - 0.5

    flat = nn.Parameter(nn.utils.parameters_to_vector(policy.parameters()).detach().clone())
    optimizer = torch.optim.Adam([flat], lr=0.05)
    npop, sigma = 4, 0.1
    history = []
    for generation in range(2):
        eps = replayed(m, replay, generation, torch.randn(npop, flat.numel(), generator=g))
        eps = torch.cat([eps, -eps])
        returns = []
        for e in eps:
            nn.utils.vector_to_parameters(flat.detach() + sigma * e, policy.parameters())
            returns.append(fitness(policy))
        returns = torch.tensor(returns)
        weights = centered_ranks(returns)
        grad = (weights.unsqueeze(1) * eps).sum(0) / (len(eps) * sigma)
        optimizer.zero_grad()
        flat.grad = -grad
        optimizer.step()
        nn.utils.vector_to_parameters(flat.detach(), policy.parameters())
        history += [returns.max().item(), fitness(policy)]
    buffer = io.BytesIO()
    torch.save(policy.state_dict(), buffer)
    buffer.seek(0)
    restored = Policy(3, 2)
    result = restored.load_state_dict(torch.load(buffer, weights_only=True))
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert restored.obs_count == 16 and restored.obs_sum == policy.obs_sum
    assert fitness(restored) == fitness(policy)
    return init, history + summary(restored.parameters())


def test_evolution_strategies():
    compare(evolution_strategies, replay={})
