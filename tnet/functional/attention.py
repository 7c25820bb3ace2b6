"""Attention, as torch.nn.functional has it: scaled_dot_product_attention and
multi_head_attention_forward (nn.MultiheadAttention's and the Transformer layers'). Without the
weights, one node on kernels/attention.py's fused kernels, dropout included (FUSED_DROPOUT); else (and
for what those kernels do not take) composed of matmul, softmax, dropout and the element-wise ops,
whose backwards are its gradient. Both draw the same dropout mask from the same generator state."""
import math
import warnings

import torch

from .. import amp, factory
from ..factory import rng_state
from ..kernels import attention as _attention
from ..kernels import random as _random
from ..kernels.gemm import pick_precision
from ..kernels.launch import check, check_type
from ..tensor import Tensor, record
from .copy import cat, chunk, expand, permute, repeat_interleave, reshape, split, squeeze, transpose, unsqueeze
from .pad import pad
from .gemm import linear, matmul, same_dtype
from .inputs import check_args, check_tensors
from .pointwise import add, logical_not, masked_fill, mul, sub, tril
from .random import dropout, dropout_drawn
from .reduce import mean, sum
from .softmax import safe_softmax, softmax

FUSED = True  # attention on kernels/attention.py where it takes the inputs (else composed: for A/B timing)
FUSED_DROPOUT = True  # and with dropout_p > 0 (else composed: for A/B timing)


def _causal(L, S):
    """The bool [L, S] mask of is_causal: True on and below the diagonal (query i sees keys 0..i)."""
    return tril(factory.ones(L, S, dtype=torch.bool))


def _attend(query, key, value, attn_mask, dropout_p, scale, zero_masked_rows, causal=False, group=1):
    """softmax(query @ key^T * scale + mask) @ value over the last two dims (the leading dims
    broadcast); attn_mask bool (True: takes part) or float (added); causal: query i sees keys 0..i
    (with no attn_mask); group: key and value have 1 / group of query's heads (dim -3), each read by
    group query heads in turn (grouped-query attention). zero_masked_rows: a query that no key may see
    (its scores all -inf) gets zero weights (SDPA's safe softmax), else NaN (the softmax of -inf's, as
    torch's MultiheadAttention with need_weights). Returns (output, weights after dropout), the
    weights None where the fused kernels ran (zero_masked_rows, without dropout unless FUSED_DROPOUT: _fused)."""
    if FUSED and zero_masked_rows and (dropout_p == 0.0 or FUSED_DROPOUT):
        out = _fused(query, key, value, attn_mask, dropout_p, scale, causal, group)
        if out is not None:
            return out, None
    return _composed(query, key, value, attn_mask, dropout_p, scale, zero_masked_rows, causal, group)


def _composed(query, key, value, attn_mask, dropout_p, scale, zero_masked_rows, causal, group):
    """_attend as tnet's ops: (output, weights after dropout)."""
    if group > 1:
        key, value = (repeat_interleave(x, group, -3) for x in (key, value))
    if causal:
        attn_mask = _causal(query.shape[-2], key.shape[-2])
    lead = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    query, key, value = (x if x.shape[:-2] == lead else expand(x, *lead, *x.shape[-2:]) for x in (query, key, value))
    weights = _masked_softmax(mul(matmul(query, transpose(key, -2, -1)), scale), attn_mask, zero_masked_rows)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return matmul(weights, value), weights


def _masked_softmax(scores, attn_mask, zero_masked_rows):
    """The weights of scores under attn_mask (bool: -inf where False; float: added), in the scores' dtype: a
    float32 mask of 16-bit scores (SDPA takes one, as torch's) is added and the softmax taken in float32 (a -1e9
    stays finite), then cast. zero_masked_rows: a row of -inf's (masked, or -inf scores of an unmasked inf
    query) has zero weights (SDPA's safe softmax), else NaN."""
    dtype = scores.dtype
    if attn_mask is not None:
        scores = masked_fill(scores, logical_not(attn_mask), -math.inf) if attn_mask.dtype == torch.bool \
            else add(scores, attn_mask)
    weights = safe_softmax(scores, -1) if zero_masked_rows else softmax(scores, -1)
    return weights if weights.dtype == dtype else weights.to(dtype)


def _fused(query, key, value, attn_mask, dropout_p, scale, causal, group):
    """_attend's output through kernels/attention.py, one node named as torch's CUDA SDPA nodes; its dropout's mask
    drawn from tnet's generator as the composition's dropout of the [*lead, L, S] weights draws it (so a seed gives
    the same run on either path; kernels/attention.py says how); None where those
    kernels do not take the inputs: query, key and value of other leading dims than query's (but key's and value's
    heads for group), another dtype or rank than they take (kernels/attention.takes), a mask that does not broadcast
    to the scores' shape or requires grad. The leading dims are viewed as [B, H] (copied where they cannot be). Under
    autocast the inputs are cast to its dtype first, as torch's autocast casts SDPA's."""
    low = amp.get_autocast_dtype()
    if low is not None:
        query, key, value = (x.to(low) if x.dtype == torch.float32 else x for x in (query, key, value))
        if attn_mask is not None and attn_mask.dtype == torch.float32:
            attn_mask = attn_mask.to(low)
    lead, L, (S, EV) = query.shape[:-2], query.shape[-2], value.shape[-2:]
    kv_lead = lead if group == 1 else (*lead[:-1], lead[-1] // group)
    if key.shape[:-2] != kv_lead or value.shape[:-2] != kv_lead or key.shape[-2] != S:
        return None
    if attn_mask is not None and (attn_mask.requires_grad or attn_mask.ndim > len(lead) + 2 or any(
            m not in (1, n) for m, n in zip(reversed(attn_mask.shape), (S, L, *reversed(lead))))):
        return None
    if not _attention.takes(query.memory, key.memory, value.memory, None if attn_mask is None else attn_mask.memory):
        return None
    B, H = math.prod(lead[:-1]), (lead[-1] if lead else 1)
    q, k, v = (x.memory.reshape(B, n, *x.shape[-2:]) for x, n in ((query, H), (key, H // group), (value, H // group)))
    mask = None if attn_mask is None else attn_mask.memory.expand(*lead, L, S).reshape(B, H, L, S)
    precision = pick_precision("scaled_dot_product_attention", None, query)
    snapshot = _random.take(rng_state(), B * H * L * S) if dropout_p else None
    o, lse = _attention.attention(q, k, v, mask, causal, scale, precision, dropout_p, snapshot)

    def backward(g):
        grads = _attention.attention_backward(q, k, v, mask, causal, scale, precision, o, lse, g.reshape(o.shape),
                                              dropout_p, snapshot)
        return [d.view(x.shape) for d, x in zip(grads, (query, key, value))]

    def graph(g, out):  # the composition's gradients in tnet's ops, for create_graph
        return _attention_grads(g, query, key, value, attn_mask, scale, causal, group, dropout_p, snapshot)
    # torch's CUDA nodes of 4-D inputs: flash attention for 16-bit without a mask, else the memory-efficient one;
    # other ranks run torch's math path, whose last op is the weights' product with value (mm, bmm or a view)
    op = ("scaled_dot_product_flash_attention" if query.dtype != torch.float32 and attn_mask is None else
          "scaled_dot_product_efficient_attention") if query.ndim == 4 else {2: "sdpa_mm", 3: "sdpa_bmm"}.get(
        query.ndim, "sdpa_view")
    return record(op, o.view(*lead, L, EV), [query, key, value], backward,
                  saved=(query, key, value, attn_mask, o), graph=graph)


def _attention_grads(g, query, key, value, attn_mask, scale, causal, group, dropout_p, snapshot):
    """(dquery, dkey, dvalue) of _composed (rows that see no key zero) for the output's gradient g, in tnet's ops:
    with p = safe_softmax(s) and drop the forward's dropout (its snapshot's mask; none for dropout_p 0), dvalue =
    drop(p)^T g, ds = p * (dp - sum(p * dp)) with dp = drop(g v^T), dquery = ds key * scale, dkey = ds^T query *
    scale; key and value's gradients summed over each group's heads."""
    keys, values = (x if group == 1 else repeat_interleave(x, group, -3) for x in (key, value))
    if causal:
        attn_mask = _causal(query.shape[-2], key.shape[-2])
    p = _masked_softmax(mul(matmul(query, transpose(keys, -2, -1)), scale), attn_mask, True)
    dp = matmul(g, transpose(values, -2, -1))
    dropped = p
    if dropout_p:  # p and dp [*lead, L, S], contiguous: the forward kernels' counters are their memory order's
        drop = (lambda x: mul(x, 0.0)) if dropout_p == 1 else (lambda x: dropout_drawn(x, dropout_p, snapshot))
        dropped, dp = drop(p), drop(dp)
    ds = mul(p, sub(dp, sum(mul(p, dp), -1, keepdim=True)))
    dq = mul(matmul(ds, keys), scale)
    dk, dv = mul(matmul(transpose(ds, -2, -1), query), scale), matmul(transpose(dropped, -2, -1), g)
    if group > 1:
        dk, dv = (sum(reshape(d, *x.shape[:-2], group, *x.shape[-2:]), -3) for d, x in ((dk, key), (dv, value)))
    return dq, dk, dv


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """torch's: softmax(query @ key^T * scale + mask) @ value, query [..., L, E], key [..., S, E],
    value [..., S, Ev] (leading dims broadcast); scale 1/sqrt(E) by default; attn_mask bool (True:
    takes part) or float (added), broadcast to [..., L, S]; is_causal: the lower-triangular mask;
    dropout_p > 0 drops attention weights (always, as torch's: pass 0.0 in eval). A query row that
    no key may see gives zeros (and zero gradients), as torch's. enable_gqa: key and value of
    fewer heads (dim -3) than query are repeated to query's."""
    check_tensors("scaled_dot_product_attention", query=query, key=key, value=value)
    if attn_mask is not None:  # every argument's type before any shape, as torch's parser
        check_tensors("scaled_dot_product_attention", attn_mask=attn_mask)
    check_args("scaled_dot_product_attention", "float", dropout_p=dropout_p)
    check_args("scaled_dot_product_attention", "bool", enable_gqa=enable_gqa)
    if scale is not None:
        check_args("scaled_dot_product_attention", "float", scale=scale)
    check_type(isinstance(is_causal, bool), lambda: f"scaled_dot_product_attention(): argument 'is_causal' must be bool, "
                                                    f"not {type(is_causal).__name__}")
    same_dtype("scaled_dot_product_attention", query, key, value)
    check(query.ndim >= 2 and key.ndim >= 2 and value.ndim >= 2,
          lambda: f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                  f"{query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead.")
    check(query.shape[-1] == key.shape[-1] and key.shape[-2] == value.shape[-2],
          lambda: f"scaled_dot_product_attention: query {query.shape}, key {key.shape} and value {value.shape} must "
                  f"be [..., L, E], [..., S, E] and [..., S, Ev]")
    if attn_mask is not None:
        check(attn_mask.dtype in (torch.bool, torch.float32, query.dtype),
              lambda: f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                      f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
        check(not is_causal, "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    group = 1
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        check(key.shape[-3] == value.shape[-3] and heads % kv_heads == 0,
              lambda: f"scaled_dot_product_attention: with enable_gqa, query's heads ({heads}) must be a multiple "
                      f"of key's ({kv_heads}) and value's ({value.shape[-3]})")
        group = heads // kv_heads
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    return _attend(query, key, value, attn_mask, dropout_p, scale, True, is_causal, group)[0]


def _additive(mask, dtype, name):
    """An MHA mask as floats to add: a bool mask's True (not allowed) as -inf, a float mask itself."""
    if mask is None or mask.dtype != torch.bool:
        check(mask is None or mask.memory.is_floating_point(),
              lambda: f"only bool and floating types of {name} are supported")
        return mask
    return masked_fill(factory.zeros(mask.shape, dtype=dtype), mask, -math.inf)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch's: query [L, N, E] (or unbatched [L, E]), key and value [S, N, kdim/vdim]; projected
    by in_proj_weight [3E, E] (or q/k/v_proj_weight), split into num_heads heads, attended, joined
    and projected by out_proj. key_padding_mask [N, S] and attn_mask [L, S] or [N * heads, L, S]:
    bool True = not allowed (the opposite of scaled_dot_product_attention's), float = added.
    Returns (output [L, N, E], weights [N, L, S] (averaged over heads, else [N, heads, L, S]) or
    None). With need_weights a query row that no key may see gives NaN, without it zeros, as
    torch's. bias_k and bias_v [1, 1, E] add a key and a value, add_zero_attn a zero one, as
    torch's; static_k and static_v raise NotImplementedError."""
    check_tensors("multi_head_attention_forward", query=query, key=key, value=value)
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k and static_v are not supported")
    batched = query.ndim == 3
    check(query.ndim in (2, 3) and key.ndim == query.ndim and value.ndim == query.ndim,
          lambda: f"multi_head_attention_forward: query, key and value must be all 3-D (batched) or all 2-D, got "
                  f"{query.shape}, {key.shape} and {value.shape}")
    if not batched:
        query, key, value = (unsqueeze(x, 1) for x in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = unsqueeze(key_padding_mask, 0)
    L, N, E = query.shape
    S = key.shape[0]
    check(E == embed_dim_to_check, lambda: f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    check(E % num_heads == 0, lambda: f"embed_dim {E} not divisible by num_heads {num_heads}")
    check(key.shape[:2] == value.shape[:2] and key.shape[1] == N,
          lambda: f"key shape {key.shape} does not match value shape {value.shape}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    head = E // num_heads

    if not use_separate_proj_weight and query is key and key is value:  # self-attention: one GEMM
        q, k, v = chunk(linear(query, in_proj_weight, in_proj_bias), 3, -1)
    else:
        w_q, w_k, w_v = ((q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight
                         else chunk(in_proj_weight, 3))
        b_q, b_k, b_v = (None,) * 3 if in_proj_bias is None else chunk(in_proj_bias, 3)
        q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)

    key_padding = None
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint: the mask given is the causal one
    else:
        is_causal = False
        attn_mask = _additive(attn_mask, q.dtype, "attn_mask")
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                check(attn_mask.shape == (L, S),
                      lambda: f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be {(L, S)}.")
                attn_mask = unsqueeze(attn_mask, 0)
            else:
                check(attn_mask.ndim == 3 and attn_mask.shape == (N * num_heads, L, S),
                      lambda: f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                              f"{(N * num_heads, L, S)}.")
        if key_padding_mask is not None:
            check(key_padding_mask.shape == (N, S),
                  lambda: f"expecting key_padding_mask shape of {(N, S)}, but got {key_padding_mask.shape}")
            key_padding = _additive(key_padding_mask, q.dtype, "key_padding_mask")

    def one_more_key(k, v, new_k, new_v, dim):
        """k and v with one more key (bias_k or zeros) at the end of dim, which the masks let through."""
        nonlocal attn_mask, key_padding
        attn_mask, key_padding = (None if m is None else pad(m, (0, 1)) for m in (attn_mask, key_padding))
        return cat([k, new_k], dim), cat([v, new_v], dim)

    check((bias_k is None) == (bias_v is None), "multi_head_attention_forward: give both bias_k and bias_v or neither")
    if bias_k is not None:  # [1, 1, E]: one more key for every sequence
        k, v = one_more_key(k, v, expand(bias_k, 1, N, E), expand(bias_v, 1, N, E), 0)
    # [L, N, E] -> [N, heads, L, head], a view: each head a batch of the GEMMs (the fused kernels read the strides)
    q, k, v = (permute(reshape(x, x.shape[0], N, num_heads, head), (1, 2, 0, 3)) for x in (q, k, v))
    if add_zero_attn:
        zero = factory.zeros(N, num_heads, 1, head, dtype=k.dtype)
        k, v = one_more_key(k, v, zero, zero, 2)
    S = k.shape[2]
    if attn_mask is not None:  # [1, L, S] or [N * heads, L, S] -> [1 or N, 1 or heads, L, S]
        attn_mask = reshape(attn_mask, -1 if attn_mask.shape[0] > 1 else 1, num_heads if attn_mask.shape[0] > 1 else 1,
                            L, S)
    if key_padding is not None:  # [N, S] -> [N, 1, 1, S]
        key_padding = reshape(key_padding, N, 1, 1, S)
        attn_mask = key_padding if attn_mask is None else add(attn_mask, key_padding)
    p = dropout_p if training else 0.0
    out, weights = _attend(q, k, v, attn_mask, p, 1.0 / math.sqrt(head), not need_weights, is_causal)
    # [N, heads, L, head] -> [L * N, E]: a view of the fused kernel's output (laid out as q), a copy of a GEMM's
    out = linear(reshape(permute(out, (2, 0, 1, 3)), L * N, E), out_proj_weight, out_proj_bias)
    out = reshape(out, L, N, E)
    if need_weights:
        weights = reshape(weights, N, num_heads, L, S)
        if average_attn_weights:
            weights = mean(weights, 1)
        if not batched:
            weights = squeeze(weights, 0)
    else:
        weights = None
    return (out if batched else squeeze(out, 1)), weights


# torch.nn.functional's private helpers of multi_head_attention_forward, under torch's names in tnet.functional, for
# the forks of it that attention papers carry (their errors AssertionError, as torch's)

def mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """torch's _mha_shape_check: whether query is batched (3-D; 2-D unbatched), checking key, value and the
    masks' ranks against it."""
    if query.ndim not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query "
                             f"tensor")
    batched = query.ndim == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {query.ndim}-D but found "
                             f"{key.ndim}-D and {value.ndim}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or {query.ndim - 1}-D "
                             f"but found {key_padding_mask.ndim}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.ndim}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return batched


def canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """torch's _canonical_mask: a bool mask as target_type's zeros with -inf where True, a float mask itself;
    other dtypes raise, and a mask whose dtype differs from other_type's warns, as torch's."""
    if mask is None:
        return None
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      f"instead.", stacklevel=2)
    return _additive(mask, target_type, mask_name)


def none_or_dtype(input):
    """torch's _none_or_dtype: input's dtype, None for None."""
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def in_projection_packed(q, k, v, w, b=None):
    """torch's _in_projection_packed: q, k and v [..., E] projected by w [3E, E] (b [3E]) packed in q, k, v
    order; one GEMM where q, k and v are one tensor, two where k is v."""
    E = q.shape[-1]
    if k is v and q is k:
        return chunk(linear(q, w, b), 3, -1)
    if k is v:
        (w_q, w_kv), (b_q, b_kv) = split(w, [E, 2 * E]), (None, None) if b is None else split(b, [E, 2 * E])
        return (linear(q, w_q, b_q), *chunk(linear(k, w_kv, b_kv), 2, -1))
    (w_q, w_k, w_v), (b_q, b_k, b_v) = chunk(w, 3), (None,) * 3 if b is None else chunk(b, 3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """torch's _in_projection: q [..., Eq], k [..., Ek] and v [..., Ev] projected by w_q [Eq, Eq], w_k [Eq, Ek]
    and w_v [Eq, Ev] (biases [Eq])."""
    Eq = q.shape[-1]
    for name, weight, bias, width in (("query", w_q, b_q, Eq), ("key", w_k, b_k, k.shape[-1]),
                                      ("value", w_v, b_v, v.shape[-1])):
        if tuple(weight.shape) != (Eq, width):
            raise AssertionError(f"expecting {name} weights shape of {(Eq, width)}, but got {weight.shape}")
        if bias is not None and tuple(bias.shape) != (Eq,):
            raise AssertionError(f"expecting {name} bias shape of {(Eq,)}, but got {bias.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)
