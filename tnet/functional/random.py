"""Dropout (kernels/random.py), its mask drawn from tnet's Philox generator."""
from ..factory import ones, rng_state
from ..kernels import random as _random
from ..kernels.launch import is_flat
from ..tensor import record
from .inputs import check_tensors
from .pointwise import mul


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only; else
    the input itself). The mask comes from tnet's Philox generator (tnet.manual_seed), whose
    state the kernels advance on the device: a captured CUDA graph draws a new mask on each
    replay. The backward regenerates the mask from the forward's 16-byte snapshot of that
    state instead of keeping it (kernels/random.py). inplace=True is accepted and computed out
    of place: the result is a new tensor and the input is not modified (torch overwrites it);
    values and gradients are torch's."""
    check_tensors("dropout", input=input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    X = input.memory
    if not is_flat(X):  # a strided view: the mask is drawn over flat memory
        X = X.contiguous()
    snapshot = _random.take(rng_state(), X.numel())
    y = _random.dropout(X, p, snapshot)
    return record("dropout", y, (input,), lambda g: (_random.dropout(g, p, snapshot),))


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels: each (sample, channel) map of a [N, C, H, W] input (a [C, H, W] one:
    each channel) with probability p, the rest scaled by 1/(1-p), as torch's dropout2d; the mask
    is dropout's over a tensor of ones shaped [N, C, 1, 1], in the input's dtype. inplace=True is
    accepted and computed out of place, as dropout."""
    check_tensors("dropout2d", input=input)
    if input.dim() not in (3, 4):
        raise ValueError(f"dropout2d: expected a 3-D or 4-D input, got {input.dim()}-D {input.shape}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    mask = dropout(ones(*input.shape[:-2], 1, 1, dtype=input.dtype), p)
    return mul(input, mask)
