"""Attention: F.scaled_dot_product_attention, nn.MultiheadAttention and the Transformer layers
against torch in float64: torch's weights loaded through its state_dict, eval mode (no dropout),
forward, input and parameter gradients, with bool and float masks, key padding and is_causal. The
fused kernels (kernels/attention.py) on odd sizes with small blocks (their loops and tails), every
mask, grouped-query heads, strided inputs and 16-bit dtypes, their launches, and what still runs the
composition; their dropout against torch's composition under the kernels' own mask."""
import math
import copy

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from tnet.factory import rng_state
from tnet.functional import attention as attention_module
from tnet.kernels import attention as fused
from tnet.kernels import random as random_kernels
from helpers import TOL, assert_close, check, launches, leaf, tol_for

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


FUSED = ("attention_forward_kernel", "attention_dq_kernel", "attention_dkv_kernel")


@pytest.fixture
def small_blocks(monkeypatch):
    """16 query rows and 16 keys a block: the kernels' loops and masked tails run on small shapes."""
    monkeypatch.setattr(fused, "BLOCK_M", 16)
    monkeypatch.setattr(fused, "BLOCK_N", 16)


def fused_check(monkeypatch, rng, shapes, tol=TOL["ieee"], dtype=torch.float32, views=None, mask=None, **kwargs):
    """SDPA of leaves of shapes (q, k, v) against torch's in float64 (forward and the three gradients), through the
    fused kernels: each launched once. views: a function of each input, what SDPA takes (a transposed view);
    mask: an attn_mask as a (tnet, torch) pair. Standard normal values: leaf's spread to 5 makes scores in the
    hundreds, whose sharp softmax's dq and dk cancel in p * (dp - delta) past fp32's bound, the composition's too."""
    inputs = [leaf(rng, *shape, dtype=dtype, values=rng.standard_normal(shape)) for shape in shapes]
    view = views or (lambda x: x)

    def ours(*xs):
        return F.scaled_dot_product_attention(*map(view, xs), **kwargs, **({} if mask is None else {"attn_mask": mask[0]}))

    def theirs(*xs):
        return TF.scaled_dot_product_attention(*map(view, xs), **kwargs, **({} if mask is None else {"attn_mask": mask[1]}))
    counts = launches(monkeypatch, lambda: check(ours, theirs, inputs, rng, tol))
    assert all(counts[name] == 1 for name in FUSED), counts
    return counts


@pytest.mark.parametrize("lead, L, S, E, EV", [((2, 2), 7, 33, 16, 16), ((1, 3), 33, 7, 64, 32), ((3,), 33, 33, 16, 24),
                                               ((), 5, 17, 16, 16)])
def test_fused_sdpa_as_torch(monkeypatch, rng, ieee, small_blocks, lead, L, S, E, EV):
    """No mask, a bool mask with a row of no key (zeros, zero gradients), a float mask with -inf broadcast over the
    leading dims, causal with a scale (L > S: the later rows see every key; L < S: the first keys only)."""
    shapes = ((*lead, L, E), (*lead, S, E), (*lead, S, EV))
    fused_check(monkeypatch, rng, shapes)
    (b, br), (f, fr) = masks(rng, (L, S), None)
    fused_check(monkeypatch, rng, shapes, mask=(b, br))
    fused_check(monkeypatch, rng, shapes, mask=(f, fr))
    fused_check(monkeypatch, rng, shapes, is_causal=True, scale=0.4)


def test_fused_sdpa_strided_grouped(monkeypatch, rng, ieee, small_blocks):
    """q, k and v as MultiheadAttention makes them ([L, N * heads, E] transposed to [N * heads, L, E]), a per-head
    bool mask [N * heads, L, S] broadcast along L, and grouped-query heads (enable_gqa: key and value heads each read
    by 2 query heads, their gradients summed)."""
    keep = rng.random((4, 1, 9)) > 0.4
    keep[1] = False  # a head that sees no key at all
    fused_check(monkeypatch, rng, ((11, 4, 16), (9, 4, 16), (9, 4, 16)), views=lambda x: x.transpose(0, 1),
                mask=(tnet.tensor(keep), torch.tensor(keep)))
    fused_check(monkeypatch, rng, ((2, 4, 7, 16), (2, 2, 19, 16), (2, 2, 19, 16)), enable_gqa=True, is_causal=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_sdpa_16_bit(monkeypatch, rng, small_blocks, dtype):
    """16-bit q, k and v against torch's float64 of the same values: fp32 sums and softmax, the products' operands
    (the weights too) rounded to dtype, the outputs once; a float mask of dtype; the node torch's CUDA names."""
    (_, _), (f, fr) = masks(rng, (7, 33), None)
    shapes = ((2, 2, 7, 16), (2, 2, 33, 16), (2, 2, 33, 16))
    fused_check(monkeypatch, rng, shapes, tol_for(dtype), dtype, mask=(f.to(dtype), fr.to(dtype).double()))
    fused_check(monkeypatch, rng, shapes, tol_for(dtype), dtype, is_causal=True)
    q = tnet.randn(1, 2, 3, 16, dtype=dtype, requires_grad=True)
    assert type(F.scaled_dot_product_attention(q, q, q).grad_fn).__name__ == "ScaledDotProductFlashAttentionBackward0"
    assert F.scaled_dot_product_attention(q.float(), q.float(), q.float()).grad_fn.name() == \
        "ScaledDotProductEfficientAttentionBackward0"
    assert F.scaled_dot_product_attention(q[0], q[0], q[0]).grad_fn.name() == "BmmBackward0"  # torch's math path


def test_fused_sdpa_launches(monkeypatch, rng):
    """A forward and backward is three launches (forward, dq, dk and dv), where the composition made two GEMMs, a
    scale, the mask, a softmax and their backwards; MultiheadAttention without weights runs them too."""
    q, k, v = (tnet.randn(2, 2, 9, 16, requires_grad=True) for _ in range(3))
    counts = launches(monkeypatch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(
        tnet.ones(2, 2, 9, 16)))
    assert counts == {name: 1 for name in FUSED}, counts
    mha, x = nn.MultiheadAttention(E, HEADS), tnet.randn(L, N, E, requires_grad=True)
    counts = launches(monkeypatch, lambda: mha(x, x, x, need_weights=False)[0].sum().backward())
    assert all(counts[name] == 1 for name in FUSED) and not counts["softmax_kernel"], counts
    counts = launches(monkeypatch, lambda: mha(x, x, x)[0].sum().backward())  # the weights: the composition
    assert not any(counts[name] for name in FUSED), counts


def test_fused_sdpa_fallbacks(monkeypatch, rng, ieee):
    """What runs the composition, as torch's: dropout, a float mask that requires grad (its gradient), q, k or v
    broadcast over the leading dims, heads past MAX_HEAD, and create_graph (the gradients' own gradients)."""
    q, k, v = leaf(rng, 2, 5, 8), leaf(rng, 2, 7, 8), leaf(rng, 2, 7, 8)
    m = leaf(rng, 5, 7)
    counts = launches(monkeypatch, lambda: check(lambda a, b, c, d: F.scaled_dot_product_attention(a, b, c, d),
                                                 lambda a, b, c, d: TF.scaled_dot_product_attention(a, b, c, d),
                                                 [q, k, v, m], rng))
    assert not any(counts[name] for name in FUSED), counts
    q1 = leaf(rng, 1, 5, 8)
    counts = launches(monkeypatch, lambda: check(F.scaled_dot_product_attention, TF.scaled_dot_product_attention,
                                                 [q1, k, v], rng))
    assert not any(counts[name] for name in FUSED), counts
    wide = [leaf(rng, 1, 3, fused.MAX_HEAD + 8) for _ in range(3)]
    counts = launches(monkeypatch, lambda: check(F.scaled_dot_product_attention, TF.scaled_dot_product_attention,
                                                 wide, rng))
    assert not any(counts[name] for name in FUSED), counts
    monkeypatch.setattr(attention_module, "FUSED_DROPOUT", False)  # off (the A/B switch): dropout composed
    counts = launches(monkeypatch, lambda: F.scaled_dot_product_attention(q[0], k[0], v[0], dropout_p=0.5))
    assert not any(counts[name] for name in FUSED), counts
    monkeypatch.undo()
    # a second-order gradient through the fused node: its graph= runs the composition's gradients
    for (x, xr), (y, yr) in ((q, k), (k, v)):
        x.grad = xr.grad = y.grad = yr.grad = None
    gq, gqr = (lib.autograd.grad((fn(a, b, c, is_causal=True) ** 2).sum(), a, create_graph=True)[0]
               for lib, fn, a, b, c in ((tnet, F.scaled_dot_product_attention, q[0], k[0], v[0]),
                                        (torch, TF.scaled_dot_product_attention, q[1], k[1], v[1])))
    assert_close(gq, gqr, TOL["ieee"], "first-order gradient")
    (gq * gq).sum().backward()
    (gqr * gqr).sum().backward()
    for (x, xr), what in ((k, "key"), (v, "value")):
        assert_close(x.grad, xr.grad, TOL["ieee"], f"second-order gradient of {what}")


def test_fused_sdpa_nonfinite(monkeypatch, ieee):
    """A query whose scores are all -inf (an unmasked -inf query) gets zeros, one with +inf or NaN scores NaN, as
    torch's safe softmax (tests/test_fuzz_api.py's cases), through the fused kernel."""
    k = torch.tensor([[[1.0, 0.0], [2.0, 5.0]]])
    q = torch.tensor([[[-float("inf"), 1.0], [float("inf"), 1.0], [1.0, 2.0]]])
    v = torch.randn(1, 2, 3)
    ref = TF.scaled_dot_product_attention(q, k, v)
    counts = launches(monkeypatch, lambda: np.testing.assert_allclose(
        F.scaled_dot_product_attention(*map(tnet.tensor, (q, k, v))).numpy(), ref.numpy(), rtol=1e-5))
    assert counts["attention_forward_kernel"] == 1



def test_fused_sdpa_nan_row_leaves_later_keys_values_gradient_finite(monkeypatch, ieee):
    """is_causal: a query whose scores hold -inf and +inf (an inf in q) has a NaN row and log-sum-exp; the later
    keys, hidden from it, get none of its weights' gradient, as torch's flash kernel skips them: dv of those keys
    stays finite and torch's (tnet's dk/dv kernel carried exp(-inf - NaN) = NaN to them); dk is NaN in both (the
    row's NaN delta)."""
    q = torch.tensor([[[[0.3, 0.5], [-0.2, -float("inf")], [0.4, -0.7]]]])
    k = torch.tensor([[[[0.5, 1.7], [0.4, -0.4], [0.3, -0.8]]]])
    v = torch.tensor([[[[0.2, 1.1], [0.9, -0.5], [-0.3, 0.7]]]])
    seed = torch.tensor([[[[1.0, -0.5], [0.3, 0.8], [-1.2, 0.6]]]])
    ref = [x.clone().requires_grad_() for x in (q, k, v)]
    TF.scaled_dot_product_attention(*ref, is_causal=True).backward(seed)
    ours = [tnet.tensor(x, requires_grad=True) for x in (q, k, v)]
    counts = launches(monkeypatch, lambda: F.scaled_dot_product_attention(*ours, is_causal=True).backward(
        tnet.tensor(seed)))
    assert counts["attention_dkv_kernel"] == 1
    assert torch.isfinite(ref[2].grad[0, 0, 2]).all()  # key 2 is hidden from query 1, the NaN row
    for name, a, b in zip("qkv", ours, ref):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("path", ["fused", "composed"])
def test_sdpa_16bit_query_takes_a_float32_mask(monkeypatch, dtype, path):
    """A float32 attn_mask with 16-bit q/k/v is torch's too ("bool or float or ... query dtype"): added in float32,
    the output in q's dtype, through the fused kernel and the composition (a mask that requires grad); tnet raised."""
    rng = np.random.default_rng(5)
    a, g = rng.standard_normal((1, 2, 3, 4)), rng.standard_normal((1, 2, 3, 4))
    m = rng.standard_normal((3, 3)).astype(np.float32)
    m[1, 1] = -np.inf
    ref = torch.tensor(a).to(dtype).double().requires_grad_()
    TF.scaled_dot_product_attention(ref, ref, ref, attn_mask=torch.tensor(m).double()).backward(
        torch.tensor(g).to(dtype).double())
    x = tnet.tensor(torch.tensor(a).to(dtype), requires_grad=True)
    out = []
    counts = launches(monkeypatch, lambda: out.append(F.scaled_dot_product_attention(
        x, x, x, attn_mask=tnet.tensor(m, requires_grad=path == "composed"))) or out[0].backward(
            tnet.tensor(torch.tensor(g).to(dtype))))
    assert counts.get("attention_forward_kernel", 0) == (path == "fused")
    y = out[0]
    assert y.dtype == dtype and x.grad.dtype == dtype
    tol = tol_for(dtype)
    assert_close(y, TF.scaled_dot_product_attention(ref, ref, ref, attn_mask=torch.tensor(m).double()), tol, "output")
    assert_close(x.grad, ref.grad, tol, "gradient")


@pytest.mark.parametrize("kwargs", [{"attn_mask": object()}, {"attn_mask": 3}, {"dropout_p": "x"}, {"dropout_p": None},
                                    {"scale": "s"}, {"enable_gqa": object()}],
                         ids=lambda kw: "-".join(f"{k}={type(v).__name__}" for k, v in kw.items()))
def test_sdpa_argument_types_checked_before_shapes_as_torch(kwargs):
    """torch's parser raises its TypeError for an argument of the wrong type before any shape check: with q/k/v of
    mismatched head sizes too, tnet raised the shapes' RuntimeError."""
    q, k = np.ones((1, 2, 3, 4), np.float32), np.ones((1, 2, 5, 3), np.float32)
    with pytest.raises(TypeError):
        TF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(k), **kwargs)
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(tnet.tensor(q), tnet.tensor(k), tnet.tensor(k), **kwargs)


# ---- dropout in the fused kernels -------------------------------------------------------------

def keep_mask(snapshot, p, shape):
    """The fused kernels' dropout mask (bool [*lead, L, S], torch, on the CPU) under the generator snapshot (seed,
    offset): kernels/random.dropout's of ones of the weights' contiguous shape under it, whose counters the kernels
    share (kernels/attention.py)."""
    ones = torch.ones(shape, dtype=torch.float32, device=snapshot.device)
    return random_kernels.dropout(ones, p, snapshot).cpu() != 0


def sdpa_dropped(q, k, v, keep, p, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """torch's math SDPA with the dropout mask keep: (safe_softmax(q k^T * scale + mask) * keep / (1 - p)) @ v."""
    if enable_gqa:
        k, v = (x.repeat_interleave(q.shape[-3] // x.shape[-3], -3) for x in (k, v))
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        attn_mask = torch.ones(s.shape[-2:], dtype=torch.bool).tril()
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else s + attn_mask
    w = torch.softmax(s, -1).nan_to_num(0.0)  # a row that sees no key: zeros, as SDPA's
    return (w * keep * (0.0 if p == 1 else 1 / (1 - p))) @ v


def dropout_check(monkeypatch, rng, shapes, p=0.3, tol=TOL["ieee"], dtype=torch.float32, views=None, mask=None,
                  **kwargs):
    """SDPA with dropout_p=p of leaves of shapes (q, k, v) against sdpa_dropped in float64 under the mask the fused
    kernels draw (forward and the three gradients), each kernel launched once and no other dropout drawn; views
    and mask as fused_check's. Returns the mask."""
    inputs = [leaf(rng, *shape, dtype=dtype, values=rng.standard_normal(shape)) for shape in shapes]
    view = views or (lambda x: x)
    lead = torch.broadcast_shapes(view(inputs[0][1]).shape[:-2])
    keep = keep_mask(rng_state().clone(), p, (*lead, view(inputs[0][1]).shape[-2], view(inputs[1][1]).shape[-2]))
    theirs_mask = {} if mask is None else {"attn_mask": mask[1]}

    def ours(*xs):
        return F.scaled_dot_product_attention(*map(view, xs), dropout_p=p, **kwargs,
                                              **({} if mask is None else {"attn_mask": mask[0]}))
    counts = launches(monkeypatch, lambda: check(
        ours, lambda *xs: sdpa_dropped(*map(view, xs), keep, p, **kwargs, **theirs_mask), inputs, rng, tol))
    assert all(counts[name] == 1 for name in FUSED) and not counts["dropout_kernel"], counts
    return keep


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fused_dropout_as_torch_under_its_mask(monkeypatch, rng, ieee, small_blocks, dtype):
    """Dropout inside the fused kernels: the forward's softmax of the undropped weights, (p * keep / (1 - p)) @ v,
    and its gradients (dv from the dropped weights, ds from do v^T dropped and scaled) as torch's composition under
    the same mask, without a mask, with a bool mask that hides a whole row, a float mask, and causal (L < S and
    L > S): odd sizes, two blocks of keys and of queries."""
    tol = tol_for(dtype)
    (b, br), (f, fr) = masks(rng, (19, 33), None)
    shapes = ((2, 2, 19, 16), (2, 2, 33, 16), (2, 2, 33, 24))
    dropout_check(monkeypatch, rng, shapes, tol=tol, dtype=dtype)
    dropout_check(monkeypatch, rng, shapes, tol=tol, dtype=dtype, mask=(b, br))
    dropout_check(monkeypatch, rng, shapes, 0.6, tol=tol, dtype=dtype, mask=(f.to(dtype), fr.to(dtype).double()))
    dropout_check(monkeypatch, rng, shapes, tol=tol, dtype=dtype, is_causal=True, scale=0.4)
    dropout_check(monkeypatch, rng, ((3, 33, 16), (3, 7, 16), (3, 7, 16)), tol=tol, dtype=dtype, is_causal=True)


def test_fused_dropout_strided_grouped(monkeypatch, rng, ieee, small_blocks):
    """Dropout with MultiheadAttention's strided views and a per-head mask, and with grouped-query heads (each key
    head's dk and dv summed over its query heads' dropped weights), causal."""
    keep = rng.random((4, 1, 9)) > 0.4
    keep[1] = False
    dropout_check(monkeypatch, rng, ((11, 4, 16), (9, 4, 16), (9, 4, 16)), views=lambda x: x.transpose(0, 1),
                  mask=(tnet.tensor(keep), torch.tensor(keep)))
    dropout_check(monkeypatch, rng, ((2, 4, 7, 16), (2, 2, 19, 16), (2, 2, 19, 16)), 0.5, enable_gqa=True,
                  is_causal=True)


def test_fused_dropout_mask_draws(monkeypatch, ieee):
    """The kernels' own mask, read off their output (uniform weights over S keys, v the identity: o * S * (1 - p) is
    the mask): keep_mask's, kept at a rate near 1 - p; a seed (tnet.manual_seed, a ported torch.manual_seed)
    repeats a run, the next call draws another mask and advances the generator as the composition's dropout, which
    draws the same mask from the same state; p = 1 gives zeros and zero gradients; p = 0 draws nothing."""
    p, S = 0.3, 64
    q, k = tnet.zeros(2, 3, S, 16), tnet.randn(2, 3, S, 16)
    v = tnet.tensor(np.broadcast_to(np.eye(S, dtype=np.float32), (2, 3, S, S)).copy())

    def mask():
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy() * S * (1 - p)
    tnet.manual_seed(7)
    state = rng_state().clone()
    drawn = mask()
    np.testing.assert_allclose(drawn, keep_mask(state, p, (2, 3, S, S)).numpy(), atol=1e-5)
    assert abs(drawn.mean() - (1 - p)) < 0.02, drawn.mean()
    assert rng_state()[1].item() == state[1].item() + drawn.size  # as many numbers as the composition's dropout
    assert not np.array_equal(mask(), drawn)
    tnet.manual_seed(7)
    np.testing.assert_array_equal(mask(), drawn)
    monkeypatch.setattr(attention_module, "FUSED_DROPOUT", False)
    tnet.manual_seed(7)
    counts = launches(monkeypatch, lambda: np.testing.assert_allclose(mask(), drawn, atol=1e-5))
    assert counts["dropout_kernel"] == 1 and not counts["attention_forward_kernel"], counts
    monkeypatch.undo()
    x = [tnet.randn(1, 2, 5, 16, requires_grad=True) for _ in range(3)]
    out = F.scaled_dot_product_attention(*x, dropout_p=1.0)
    out.backward(tnet.ones(*out.shape))
    assert not out.numpy().any() and not any(t.grad.numpy().any() for t in x)
    before = rng_state().clone()
    counts = launches(monkeypatch, lambda: F.scaled_dot_product_attention(*x, dropout_p=0.0))
    assert torch.equal(rng_state(), before) and not counts["take_kernel"] and counts["attention_forward_kernel"] == 1


def test_fused_dropout_as_the_composition(monkeypatch, rng, ieee):
    """One seed, either path: the fused kernels and the composition (FUSED_DROPOUT off) give the same output and
    gradients, and the same second-order gradients (create_graph redraws the mask in the composition's ops);
    MultiheadAttention in training (need_weights=False) and a TransformerEncoderLayer's training step run the fused
    kernels with dropout."""
    def run(fused_dropout):
        monkeypatch.setattr(attention_module, "FUSED_DROPOUT", fused_dropout)
        tnet.manual_seed(11)
        xs = [tnet.tensor(a, requires_grad=True) for a in arrays]
        out = F.scaled_dot_product_attention(*xs, dropout_p=0.4, is_causal=True)
        gq = tnet.autograd.grad((out ** 2).sum(), xs[0], create_graph=True)[0]
        (gq * gq).sum().backward()
        return [out.numpy(), gq.numpy(), xs[1].grad.numpy(), xs[2].grad.numpy()]
    arrays = [rng.standard_normal((2, 2, 6, 16)).astype(np.float32) for _ in range(3)]
    for a, b, what in zip(run(True), run(False), ("output", "gradient", "key's second order", "value's second order")):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=what)
    monkeypatch.undo()
    mha, x = nn.MultiheadAttention(E, HEADS, dropout=0.2), tnet.randn(L, N, E, requires_grad=True)
    counts = launches(monkeypatch, lambda: mha(x, x, x, need_weights=False)[0].sum().backward())
    assert all(counts[name] == 1 for name in FUSED) and not counts["softmax_kernel"], counts
    layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12)  # dropout 0.1, training
    counts = launches(monkeypatch, lambda: layer(x).sum().backward())
    assert all(counts[name] == 1 for name in FUSED) and not counts["softmax_kernel"], counts
