"""Attention: F.scaled_dot_product_attention, nn.MultiheadAttention and the Transformer layers
against torch in float64: torch's weights loaded through its state_dict, eval mode (no dropout),
forward, input and parameter gradients, with bool and float masks, key padding and is_causal."""
import copy

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from helpers import TOL, assert_close, check, leaf

TF = torch.nn.functional
E, HEADS, L, S, N = 8, 2, 5, 7, 3


def masks(rng, shape, lib_tensor):
    """A bool mask of shape with one row all False, and a float mask with -inf, as (tnet, torch) pairs."""
    keep = rng.random(shape) > 0.3
    keep[..., 1, :] = False
    bias = np.where(rng.random(shape) > 0.3, rng.standard_normal(shape), -np.inf)
    bias[..., :, 0] = 0.0  # every row sees a key
    return (tnet.tensor(keep), torch.tensor(keep)), (tnet.tensor(bias), torch.tensor(bias))


def test_sdpa_as_torch(rng, ieee):
    q, k, v = leaf(rng, N, L, E), leaf(rng, N, S, E), leaf(rng, N, S, 6)
    (b, br), (f, fr) = masks(rng, (L, S), None)
    for kwargs, ref_kwargs in [({"attn_mask": b}, {"attn_mask": br}),  # a fully masked row: zeros
                               ({"attn_mask": f}, {"attn_mask": fr}),
                               ({"is_causal": True, "scale": 0.4}, {"is_causal": True, "scale": 0.4})]:
        for x, xr in (q, k, v):
            x.grad = xr.grad = None
        check(lambda *a: F.scaled_dot_product_attention(*a, **kwargs),
              lambda *a: TF.scaled_dot_product_attention(*a, **ref_kwargs), [q, k, v], rng)
    # leading dims broadcast; grouped-query heads
    q4, k4, v4 = leaf(rng, 2, 4, L, E), leaf(rng, 1, 2, S, E), leaf(rng, 2, S, E)
    check(lambda *a: F.scaled_dot_product_attention(*a, enable_gqa=True),
          lambda *a: TF.scaled_dot_product_attention(*a, enable_gqa=True), [q4, k4, v4], rng)
    with pytest.raises(RuntimeError, match="should not be set when is_causal"):
        F.scaled_dot_product_attention(q[0], k[0], v[0], attn_mask=b, is_causal=True)
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        F.scaled_dot_product_attention(q[0][0, 0], k[0], v[0])


def load_torch(ours, theirs):
    """torch's float64 module's state_dict into ours (numpy arrays); both in eval mode."""
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours.eval(), theirs.double().eval()


def compare(ours, theirs, run, inputs, rng, tol=TOL["ieee"]):
    """run(module, *inputs) -> output (or (output, weights)) of both: forward, weights, the gradients
    of the inputs (pairs from leaf) and of every parameter, by name."""
    out, ref = run(ours, *[t for t, _ in inputs]), run(theirs, *[r for _, r in inputs])
    out, weights = out if isinstance(out, tuple) else (out, None)
    ref, ref_weights = ref if isinstance(ref, tuple) else (ref, None)
    assert_close(out, ref, tol, "forward")
    assert (weights is None) == (ref_weights is None)
    if weights is not None:
        assert_close(weights, ref_weights, tol, "weights")
    g = rng.standard_normal(ref.shape)
    out.backward(g)
    ref.backward(torch.tensor(g))
    for i, (t, r) in enumerate(inputs):
        assert_close(t.grad, r.grad, tol, f"gradient of input {i}")
        t.grad = r.grad = None
    params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        assert_close(params[name].grad, p.grad, tol, f"gradient of {name}")
    ours.zero_grad(), theirs.zero_grad()


def test_multihead_attention_as_torch(rng, ieee):
    ours, theirs = load_torch(nn.MultiheadAttention(E, HEADS), torch.nn.MultiheadAttention(E, HEADS))
    x, k, v = leaf(rng, L, N, E), leaf(rng, S, N, E), leaf(rng, S, N, E)
    pad = rng.random((N, S)) > 0.7
    pad[:, 0] = False
    kpm = tnet.tensor(pad), torch.tensor(pad)
    _, (f, fr) = masks(rng, (L, S), None)
    # self-attention with its weights, per head
    compare(ours, theirs, lambda m, a: m(a, a, a, average_attn_weights=False), [x], rng)
    # cross-attention: a bool key_padding_mask and a float attn_mask
    compare(ours, theirs, lambda m, a, b, c: m(a, b, c, key_padding_mask=kpm[m is theirs],
                                                 attn_mask=fr if m is theirs else f), [x, k, v], rng)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        ours(x[0], x[0], x[0], is_causal=True)


def test_multihead_attention_kdim_batch_first_as_torch(rng, ieee):
    settings = {"kdim": 4, "vdim": 6, "batch_first": True, "bias": False, "add_bias_kv": True, "add_zero_attn": True}
    ours, theirs = load_torch(nn.MultiheadAttention(E, HEADS, **settings), torch.nn.MultiheadAttention(E, HEADS, **settings))
    q, k, v = leaf(rng, N, L, E), leaf(rng, N, S, 4), leaf(rng, N, S, 6)
    pad = rng.random((N, S)) > 0.7
    compare(ours, theirs, lambda m, a, b, c: m(a, b, c, key_padding_mask=torch.tensor(pad) if m is theirs
                                                 else tnet.tensor(pad)), [q, k, v], rng)
    # a query row that no key may see: NaN with the weights, zeros without, as torch's
    x = tnet.tensor(rng.standard_normal((L, E)))
    mask = np.zeros((L, L), bool)
    mask[2] = True
    full = nn.MultiheadAttention(E, HEADS)
    out, w = full(x, x, x, attn_mask=tnet.tensor(mask))
    assert np.isnan(out.numpy()[2]).all() and np.isnan(w.numpy()[2]).all() and not np.isnan(out.numpy()[3]).any()
    out, _ = full(x, x, x, attn_mask=tnet.tensor(mask), need_weights=False)
    assert np.allclose(out.numpy()[2], full.out_proj.bias.numpy())
    p = dict(nn.MultiheadAttention(E, HEADS).named_parameters())
    assert p["in_proj_weight"].shape == (3 * E, E) and not p["in_proj_bias"].numpy().any()


def test_transformer_encoder_as_torch(rng, ieee):
    def build(lib):
        layer = lib.nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12)
        return lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(E), enable_nested_tensor=False)
    ours, theirs = load_torch(build(tnet), build(torch))
    assert ours.layers[0].linear1.weight is not ours.layers[1].linear1.weight  # deep copies
    x = leaf(rng, L, N, E)
    pad = rng.random((N, L)) > 0.7
    pad[:, 0] = False
    causal = nn.Transformer.generate_square_subsequent_mask(L)
    causal_ref = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    assert np.array_equal(causal.numpy(), causal_ref.numpy())
    compare(ours, theirs, lambda m, a: m(a, mask=causal_ref if m is theirs else causal,
                                         src_key_padding_mask=torch.tensor(pad) if m is theirs else tnet.tensor(pad),
                                         is_causal=True), [x], rng)


def test_transformer_decoder_as_torch(rng, ieee):
    def build(lib):
        layer = lib.nn.TransformerDecoderLayer(E, HEADS, dim_feedforward=12, activation="gelu", batch_first=True,
                                               norm_first=True)
        return lib.nn.TransformerDecoder(layer, 1)
    ours, theirs = load_torch(build(tnet), build(torch))
    tgt, mem = leaf(rng, N, L, E), leaf(rng, N, S, E)
    causal = np.triu(np.ones((L, L), bool), 1)
    # tgt_is_causal with its mask (bool: True = not allowed, torch's MHA convention): the is_causal path
    compare(ours, theirs, lambda m, a, b: m(a, b, tgt_mask=torch.tensor(causal) if m is theirs else tnet.tensor(causal),
                                            tgt_is_causal=True), [tgt, mem], rng)
    clone = copy.deepcopy(ours)
    assert [n for n, _ in clone.named_modules()] == [n for n, _ in theirs.named_modules()]
    whole = nn.Transformer(E, HEADS, 2, 1, 12)
    assert list(whole.state_dict()) == list(torch.nn.Transformer(E, HEADS, 2, 1, 12).state_dict())
