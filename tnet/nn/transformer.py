"""torch's attention modules: MultiheadAttention, TransformerEncoderLayer and TransformerEncoder
(and the decoder's), with torch's parameter and submodule names, so that torch's state_dicts load
as they are. They compose F.multi_head_attention_forward, Linear, LayerNorm and Dropout."""
import copy
import math

import torch

from .. import factory
from .. import functional as F
from .._device import DEVICE
from ..tensor import Tensor
from . import Dropout, LayerNorm, Linear, Module, ModuleList, Parameter, factory_args, init


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for MultiheadAttention's out_proj: a Linear."""


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: in_proj_weight [3E, E] (q_proj_weight [E, E], k_proj_weight
    [E, kdim], v_proj_weight [E, vdim] where kdim or vdim differ from E) drawn by xavier_uniform_,
    in_proj_bias [3E] and out_proj.bias zero, out_proj a Linear (torch's init), bias_k and bias_v
    [1, 1, E] (add_bias_kv) by xavier_normal_, as torch's; drawn from tnet's init stream
    (tnet.manual_seed), so not torch's numbers. forward takes [L, N, E] (batch_first: [N, L, E];
    unbatched [L, E]) and returns (output, weights or None), as torch's
    (F.multi_head_attention_forward)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)  # the layer's name in the error, not a sublayer's
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        empty = lambda *shape: Parameter(Tensor(torch.empty(shape, device=DEVICE)))
        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        self.register_parameter("in_proj_bias", empty(3 * embed_dim) if bias else None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.bias_k, self.bias_v = (empty(1, 1, embed_dim), empty(1, 1, embed_dim)) if add_bias_kv else (None, None)
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            if w is not None:
                init.xavier_uniform_(w)
        for b in (self.in_proj_bias, self.out_proj.bias):
            if b is not None:
                init.constant_(b, 0.0)
        for b in (self.bias_k, self.bias_v):
            if b is not None:
                init.xavier_normal_(b)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        if self.batch_first and query.ndim == 3:  # sequence first inside; one tensor stays one (self-attention)
            q = F.transpose(query, 0, 1)
            k = q if key is query else F.transpose(key, 0, 1)
            query, key, value = q, k, q if value is query else k if value is key else F.transpose(value, 0, 1)
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        return (F.transpose(out, 0, 1) if self.batch_first and out.ndim == 3 else out), weights


def activation_fn(activation):
    """torch.nn.modules.transformer._get_activation_fn: F.relu for "relu", F.gelu for "gelu", else
    RuntimeError (custom transformer layers import it by that name)."""
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _activation(activation):
    """torch's activation= of the Transformer layers: "relu", "gelu" or a callable."""
    return activation_fn(activation) if isinstance(activation, str) else activation


class _Layer(Module):
    """What the encoder and decoder layers share: their sublayers, in torch's order (blocks 2: the
    encoder's; 3: the decoder's, with multihead_attn, norm3 and dropout3), and the self-attention
    block."""

    def __init__(self, blocks, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                 norm_first, bias, device, dtype):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        kwargs = {"bias": bias, "device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, **kwargs)
        if blocks == 3:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                     **kwargs)
        self.linear1 = Linear(d_model, dim_feedforward, **kwargs)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, **kwargs)
        self.norm_first = norm_first
        for i in range(1, blocks + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, **kwargs))
        for i in range(1, blocks + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)


class TransformerEncoderLayer(_Layer):
    """torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block (linear1,
    activation, dropout, linear2), each added to its input and normalised after (norm_first:
    before), with torch's submodule names (self_attn, linear1, dropout, linear2, norm1, norm2,
    dropout1, dropout2), so torch's state_dict loads. Inits as MultiheadAttention's and Linear's
    (tnet's init stream, not torch's numbers). No fast path: one code path in train and eval."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__(2, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                         norm_first, bias, device, dtype)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(_Layer):
    """torch.nn.TransformerDecoderLayer: self-attention, attention over memory (multihead_attn),
    then the feed-forward block, each added to its input and normalised after (norm_first:
    before), with torch's submodule names (norm3, dropout3 besides the encoder layer's)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__(3, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                         norm_first, bias, device, dtype)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder: num_layers deep copies of encoder_layer (layers.0, layers.1,
    ...), then norm if given. is_causal=None is taken as False (torch compares mask with the causal
    mask on the host; the outputs are the same either way: a causal mask given is used as it is).
    enable_nested_tensor and mask_check are accepted and ignored (no nested tensors in tnet)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """torch.nn.TransformerDecoder: num_layers deep copies of decoder_layer, then norm if given;
    tgt_is_causal=None is taken as False, as TransformerEncoder's is_causal."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=bool(tgt_is_causal),
                      memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """torch.nn.Transformer: a TransformerEncoder and a TransformerDecoder of the layers above (or
    custom_encoder, custom_decoder), each ending in a LayerNorm, every matrix parameter drawn by
    xavier_uniform_ (tnet's init stream), as torch's; forward(src, tgt, ...) returns the decoder's
    output."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        kwargs = {"bias": bias, "device": device, "dtype": dtype}
        layer = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*layer, **kwargs), num_encoder_layers, LayerNorm(d_model, layer_norm_eps, **kwargs))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*layer, **kwargs), num_decoder_layers, LayerNorm(d_model, layer_norm_eps, **kwargs))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def _reset_parameters(self):
        """Every matrix parameter drawn anew by xavier_uniform_, torch's (its init calls it; a deferred init's
        reset after to_empty may too)."""
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batch = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch] != tgt.shape[batch]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The float [sz, sz] causal mask: -inf above the diagonal (a later key), 0 elsewhere."""
        return F.triu(factory.full((sz, sz), -math.inf, dtype=dtype or torch.float32, device=device), 1)
