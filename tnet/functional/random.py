"""Dropout and torch's random draws (bernoulli, normal, multinomial, poisson, binomial, _standard_gamma,
_sample_dirichlet) (kernels/random.py), drawn from tnet's Philox generator on the device (multinomial, poisson,
binomial and the Gamma draws on the host)."""
import numbers
import warnings

import numpy as np
import torch

from .._device import DEVICE
from ..factory import host_draw, host_generator, is_global, ones, rng_state
from ..kernels import pointwise as _pw
from ..kernels import random as _random
from ..kernels.copy import copy_
from ..kernels.launch import check, check_type, is_flat
from ..tensor import Tensor, as_int, in_layout, linear_graph, named, record, record_composed, tape_mark
from .inputs import check_args, check_tensors
from .copy import scatter
from .pointwise import add, clamp_min, div, le, leaky_relu, log, log1p, mul, ne, neg, sub, where
from .reduce import argmax
from .softmax import softmax


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only; else
    the input itself). The mask comes from tnet's Philox generator (tnet.manual_seed), whose
    state the kernels advance on the device: a captured CUDA graph draws a new mask on each
    replay. The backward regenerates the mask from the forward's 16-byte snapshot of that
    state instead of keeping it (kernels/random.py). inplace=True is accepted and computed out
    of place: the result is a new tensor and the input is not modified (torch overwrites it);
    values and gradients are torch's."""
    check_args("dropout", "bool", train=training)
    check_tensors("dropout", input=input)
    check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:  # torch's input * 0: NaN and inf give NaN, as does a NaN gradient
        return mul(input, 0.0)
    return dropout_drawn(input, p, _random.take(rng_state(), input.numel()))


def dropout_drawn(input, p, snapshot):
    """dropout (p < 1, training) with the mask of the generator's snapshot (kernels/random.take's): element i of
    input's memory order (a strided view's contiguous copy) kept where its number, counter snapshot[1] + i, is >= p.
    Fused attention's kernels draw their weights' mask so, and their create_graph gradients redraw it here."""
    X = input.memory
    if not is_flat(X):  # a strided view: the mask is drawn over flat memory
        X = X.contiguous()
    y = _random.dropout(X, p, snapshot)
    mask = lambda g: _random.dropout(in_layout(g, y), p, snapshot)  # the gradient: the same mask and scale
    backward = lambda g: (mask(g),)
    # torch's node by device: its fused native_dropout's on a GPU, its mask product's (MulBackward0) on the CPU
    node = "native_dropout" if input.device.type == "cuda" else "mul"
    return record(node, y, (input,), backward, graph=linear_graph("dropout", backward, mask))


def native_dropout(input, p, train):
    """torch.native_dropout: (dropout's output, the bool mask of the elements kept), the output input times
    dropout's draw over ones (0 or 1 / (1 - p)); train=False: a copy of input and a mask of every element, as
    torch's."""
    check_args("native_dropout", "bool", train=train)
    check_tensors("native_dropout", input=input)
    if not train:  # p unchecked, as torch's
        return mul(input, 1), ones(*input.shape, dtype=torch.bool)
    check_p(p, RuntimeError)
    scale = dropout(ones(*input.shape, dtype=input.dtype), p)
    return mul(input, scale), ne(scale, 0)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels: each (sample, channel) map of a [N, C, H, W] input with probability p, the rest
    scaled by 1/(1-p), as torch's dropout2d, which is feature_dropout of any rank: a 3-D input is read as
    [N, C, L] (torch's channel-wise 1-D behaviour, not an unbatched [C, H, W]) and another rank drops each
    (dim 0, dim 1) slice (a 2-D [N, F] input element-wise, as pytorch/examples' mnist_rnn passes it), each
    with torch's warning. inplace=True is accepted and computed out of place, as dropout."""
    check_args("dropout2d", "bool", train=training)
    check_tensors("dropout2d", input=input)
    check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    return feature_dropout(input, p, training)


_SELU_ALPHA = 1.7580993408473766  # SELU's -alpha * scale: the value a dropped element takes


def check_p(p, error=ValueError):
    """p in [0, 1]: F's dropouts raise a ValueError, aten's (torch.dropout, torch.feature_dropout, ...) a RuntimeError."""
    if not 0.0 <= p <= 1.0:
        raise error(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, mask_shape):
    """1 kept, 0 dropped with probability p, in input's dtype, of mask_shape (broadcast to input)."""
    return mul(dropout(ones(*mask_shape, dtype=input.dtype), p), 1.0 - p)


def _alpha(input, p, mask_shape):
    """torch's alpha dropout with a mask of mask_shape: a dropped element becomes SELU's negative
    saturation value, then all are scaled and shifted (a, b) so that the mean and variance of a
    standard input stay."""
    if p == 1.0:
        return mul(input, 0.0)
    keep = _keep_mask(input, p, mask_shape)
    a = 1.0 / ((_SELU_ALPHA ** 2 * p + 1.0) * (1.0 - p)) ** 0.5
    return add(mul(input, mul(keep, a)), add(mul(keep, _SELU_ALPHA * a), _SELU_ALPHA * a * (p - 1.0)))


def _feature_shape(name, input):
    """The mask shape of torch's feature dropouts: one element per (sample, channel), [N, C, 1, ...]."""
    check(input.ndim >= 2, lambda: f"{name}: Feature dropout requires at least 2 dimensions in the input")
    return (*input.shape[:2], *(1,) * (input.ndim - 2))


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """torch's alpha_dropout (for SELU networks): each element is dropped with probability p to
    SELU's negative saturation value, then all are scaled and shifted (a, b) so that the mean and
    variance of a standard input stay; the mask from dropout's generator. Training only; else the
    input itself. inplace=True is computed out of place."""
    check_args("alpha_dropout", "bool", train=training)
    check_tensors("alpha_dropout", input=input)
    check_p(p)
    if not training or p == 0.0:
        return input
    return _alpha(input, p, input.shape)


def feature_dropout(input, p, train):
    """torch.feature_dropout: dropout of whole channels of [N, C, ...], one draw per (sample,
    channel), the kept ones scaled by 1/(1-p)."""
    check_args("feature_dropout", "bool", train=train)
    check_tensors("feature_dropout", input=input)
    check_p(p, RuntimeError)
    if not train or p == 0.0:
        return input
    if p == 1.0:  # every element dropped, before the rank's check: torch's input * 0 of any rank
        return mul(input, 0.0)
    return mul(input, dropout(ones(*_feature_shape("feature_dropout", input), dtype=input.dtype), p))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels of [N, C, ...] (one draw per sample and channel), as
    torch's. inplace=True is computed out of place."""
    check_args("feature_alpha_dropout", "bool", train=training)
    check_tensors("feature_alpha_dropout", input=input)
    check_p(p)
    if not training or p == 0.0:
        return input
    return _alpha(input, p, input.shape if p == 1.0 else _feature_shape("feature_alpha_dropout", input))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of [N, C, L] or [C, L] (each channel's signal zeroed with probability p, the
    rest scaled by 1/(1-p)), as torch's. inplace=True is computed out of place."""
    check_args("feature_dropout", "bool", train=training)  # torch's dropout1d and dropout3d call feature_dropout
    check_tensors("dropout1d", input=input)
    check_p(p)
    check(input.ndim in (2, 3), lambda: f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. "
                                        "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
                                        "spatial dimension, a channel dimension, and an optional batch dimension (i.e. "
                                        "2D or 3D inputs).")
    return _unbatched_feature_dropout(input, p, training, input.ndim == 3)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of [N, C, D, H, W] or [C, D, H, W], as torch's (another rank warns, as
    torch's, and drops along its first dim). inplace=True is computed out of place."""
    check_args("feature_dropout", "bool", train=training)
    check_tensors("dropout3d", input=input)
    check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    return _unbatched_feature_dropout(input, p, training, input.ndim == 5)


def _unbatched_feature_dropout(input, p, training, batched):
    """feature_dropout, an unbatched input taken as one sample (a draw per dim-0 slice)."""
    if not training or p == 0.0:
        return input
    lead = input.shape[:2] if batched else input.shape[:1]
    return mul(input, dropout(ones(*lead, *(1,) * (input.ndim - len(lead)), dtype=input.dtype), p))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """The randomized leaky ReLU, as torch's: x where x >= 0, else a * x with the slope a drawn
    uniformly from [lower, upper) per element in training (tnet's generator: other numbers than
    torch's), (lower + upper) / 2 in eval. The gradient is the slope used (1 where x > 0).
    inplace=True is computed out of place (F.rrelu_ writes the input)."""
    check_args("rrelu", "bool", training=training)
    check_tensors("rrelu", input=input)
    check(input.memory.is_floating_point(), lambda: f"rrelu: expected a float tensor, got {input.dtype}")
    check(lower <= upper, lambda: f"rrelu: Lower bound should be less than or equal to the upper bound, got {lower} > {upper}")
    mark = tape_mark()  # torch's node: rrelu_with_noise's, in eval too
    if not training:
        return named("rrelu_with_noise", mark, leaky_relu(input, (lower + upper) / 2.0))
    slope = add(mul(Tensor(draw(input.shape, input.device)), float(upper - lower)), float(lower))
    return named("rrelu_with_noise", mark, mul(input, where(le(input, 0.0), slope.to(input.dtype), 1.0)))


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau, dim), g Gumbel(0, 1) noise -log(E), E exponential draws of tnet's
    generator (other numbers than torch's), as torch's; hard=True: the one-hot of each argmax in the
    forward and the soft sample's gradient (straight through). eps is deprecated (a warning), as torch's."""
    check_tensors("gumbel_softmax", logits=logits)
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    u = Tensor(draw(logits.shape, logits.device))
    # E = -log(1 - u) in [0, inf): E = 0 (u = 0) would give an infinite noise, which torch's never is
    e = clamp_min(neg(log1p(neg(u))), float(torch.finfo(torch.float32).tiny))
    y_soft = softmax(div(sub(logits, log(e).to(logits.dtype)), tau), dim)
    if not hard:
        return y_soft
    index = argmax(y_soft, dim, keepdim=True)
    y_hard = scatter(Tensor(torch.zeros(logits.shape, dtype=logits.dtype, device=logits.device)), dim, index,
                     value=1.0)
    return add(sub(y_hard, y_soft.detach()), y_soft)


def draw(shape, device, normal=False, generator=None, name="draw"):
    """A float32 tensor of `shape` on device: uniform [0, 1) numbers (standard normal ones with
    normal) from tnet's generator, or on the host from generator= (a tnet.Generator; host_draw)."""
    if not is_global(generator):
        return torch.from_numpy(host_draw(name, generator, tuple(shape), normal)).to(device, torch.float32)
    return _random.fill_random_(torch.empty(tuple(shape), dtype=torch.float32, device=device), rng_state(), normal)


def bernoulli_draw(p, shape, dtype, device, generator=None, name="bernoulli"):
    """1 with probability p (a number or a torch tensor broadcast to shape), else 0: a torch tensor of
    shape and dtype (u < p, u uniform, so p = 0 never gives 1 and p = 1 always does)."""
    u = draw(shape, device, generator=generator, name=name)
    return copy_(torch.empty(tuple(shape), dtype=dtype, device=device), _pw.pointwise("lt", u, p))


def bernoulli(input, p=None, *, generator=None):
    """0 or 1 in input's dtype, 1 with the probability input holds (or p, a number, where given), from
    tnet's generator or generator= (draw; other numbers than torch's). No gradient (torch's is 0)."""
    check_tensors("bernoulli", input=input)
    host_generator("bernoulli", generator)  # a torch.Generator: TypeError
    check(input.memory.is_floating_point(), lambda: f"bernoulli: expected a float tensor, got {input.dtype}")
    return Tensor(bernoulli_draw(input.memory if p is None else float(p), input.shape, input.dtype, input.device,
                                 generator))


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """mean + std * (a standard normal draw), as torch.normal's forms: mean and std tensors or
    numbers (broadcast), or both numbers and a size; from tnet's generator (other numbers than
    torch's; or generator=, as draw takes it). Where mean or std are tensors the result carries no gradient
    (torch's is 0)."""
    host_generator("normal", generator)
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    for name, v in (("mean", mean), ("std", std)):
        check_type(isinstance(v, (Tensor, numbers.Real)),
              lambda: f"normal: {name} must be a tnet.Tensor or a number, got {type(v).__name__}")
    if not isinstance(std, Tensor):  # a number std is checked on the host (a tensor's would be a sync)
        check(std >= 0.0, lambda: f"normal expects std >= 0.0, but found std {std}")
    if not tensors:
        check(size is not None, "normal: with a number mean and std, size is required")
        shape, dev, dtype = tuple(size), None, dtype or torch.float32
    else:
        check(size is None, "normal: size is taken only with a number mean and std")
        shape = _pw.broadcast_shape("normal", *[v.shape for v in tensors])
        dev, dtype = tensors[0].device, _pw.result_type([v.memory for v in tensors])
    z = draw(shape, dev or DEVICE, normal=True, generator=generator, name="normal")
    m, s = (v.memory if isinstance(v, Tensor) else float(v) for v in (mean, std))
    return Tensor(_pw.pointwise("addcmul", m, z, s, 1.0, dtype=dtype), requires_grad=requires_grad and not tensors)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """num_samples indices (int64) per row of input (1-D or 2-D non-negative weights, not
    necessarily summing to 1), drawn with or without replacement, as torch.multinomial. Drawn on
    the host (a sync: the weights are read back) by numpy from the stream tnet.manual_seed reseeds
    (or generator, a numpy Generator): other numbers than torch's."""
    check_tensors("multinomial", input=input)
    check_args("multinomial", "bool", replacement=replacement)
    num_samples = as_int(num_samples)
    check(input.ndim in (1, 2), lambda: f"prob_dist must be 1 or 2 dim, got {input.ndim}")
    check(input.memory.is_floating_point(), lambda: f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    check(num_samples > 0, "cannot sample n_sample <= 0 samples")
    w = input.memory.detach().to("cpu", torch.float64).numpy().reshape(-1, input.shape[-1])
    check(np.isfinite(w).all() and (w >= 0).all(), "probability tensor contains either `inf`, `nan` or element < 0")
    check(replacement or num_samples <= w.shape[1], "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rng = host_generator("multinomial", generator)
    rows = []
    for row in w:
        total = row.sum()
        check(total > 0, "invalid multinomial distribution (sum of probabilities <= 0)")
        check(replacement or np.count_nonzero(row) >= num_samples,
              "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)")
        rows.append(rng.choice(len(row), num_samples, replace=replacement, p=row / total))
    out = np.stack(rows).reshape(*input.shape[:-1], num_samples)
    return Tensor(torch.from_numpy(out.astype(np.int64)).to(input.device))


def _host_counts(name, draw, like, generator):
    """draw(rng) (a numpy array of counts) as a tensor of like's dtype on its device, drawn from the
    stream tnet.manual_seed reseeds (or generator, a numpy Generator), as multinomial's."""
    out = draw(host_generator(name, generator))
    return Tensor(torch.from_numpy(np.asarray(out, np.float64)).to(like.device, like.dtype))


def poisson(input, generator=None):
    """A Poisson count for each rate in input (a float tensor, rates >= 0), in input's dtype, as
    torch.poisson (a denoising script's `torch.poisson(img * peak) / peak`). Drawn on the host (the
    rates are read back) by numpy: other numbers than torch's. No gradient (torch's is 0)."""
    check_tensors("poisson", input=input)
    check(input.memory.is_floating_point(), lambda: f"poisson: expected a float tensor of rates, got {input.dtype}")
    rates = input.memory.detach().to("cpu", torch.float64).numpy()
    check(bool((rates >= 0).all()), "invalid Poisson rate, expected rate to be non-negative")  # NaN too, as torch's
    return _host_counts("poisson", lambda rng: rng.poisson(rates), input, generator)


def standard_gamma(input, generator=None):
    """A Gamma(concentration, 1) draw for each concentration in input (a float tensor, concentrations > 0), in input's
    dtype, as torch._standard_gamma. Drawn on the host (the concentrations are read back) by numpy: other numbers
    than torch's. Its gradient in the concentration is torch's reparameterized one (standard_gamma_grad: the draw
    moved at a fixed CDF), through which Gamma.rsample differentiates."""
    out = _host_counts("_standard_gamma", lambda rng: rng.gamma(_concentrations("_standard_gamma", input)), input,
                       generator)
    alpha, x = input.memory, out.memory
    return record("_standard_gamma", x, (input,), lambda g: (standard_gamma_grad(g, alpha, x),), saved=(alpha, x))


def standard_gamma_grad(g, alpha, x):
    """g times dx / dalpha of Gamma(alpha, 1) draws x (torch tensors), as torch._standard_gamma_grad's."""
    return _pw.pointwise("standard_gamma_grad", g, alpha, x)


def sample_dirichlet(input, generator=None):
    """A Dirichlet draw along input's last dimension (a float tensor of concentrations > 0), in input's dtype, as
    torch._sample_dirichlet, which torchvision's classification reference draws RandomMixup's and RandomCutmix's
    weight with (`float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0])`): normalised Gamma draws on the
    host by numpy, other numbers than torch's. Its gradient in the concentrations is torch's reparameterized one
    (Dirichlet.rsample's, torch's _Dirichlet_backward): dirichlet_grad(x, alpha, total) (g - sum(x g)), through
    which Dirichlet.rsample and Beta.rsample differentiate."""
    def draw(rng):
        g = rng.gamma(_concentrations("_sample_dirichlet", input))
        return g / g.sum(-1, keepdims=True)
    x = _host_counts("_sample_dirichlet", draw, input, generator)
    alpha = input.detach()

    def grads(g):
        total = alpha.sum(-1, keepdim=True)
        grad = Tensor(_pw.pointwise("dirichlet_grad", x.memory, alpha.memory, total.memory))
        return [grad * (g - (x * g).sum(-1, keepdim=True))]
    return record_composed("_sample_dirichlet", x.memory, (input,), grads, saved=(x.memory, alpha.memory))


def _concentrations(name, input):
    check_tensors(name, input=input)
    if not input.memory.is_floating_point():
        raise NotImplementedError(f'"{name}" not implemented for {input.dtype}')  # torch's error
    a = input.memory.detach().to("cpu", torch.float64).numpy()
    check(not (a <= 0).any(), f"{name}: expected concentrations > 0")
    return a


def binomial(count, prob, generator=None):
    """A Binomial(count, prob) draw for each pair of elements (float tensors that broadcast), in
    count's dtype, as torch.binomial. Drawn on the host by numpy: other numbers than torch's. No
    gradient."""
    check_tensors("binomial", count=count, prob=prob)
    n, p = (t.memory.detach().to("cpu", torch.float64).numpy() for t in (count, prob))
    check(not ((p < 0) | (p > 1)).any() and not (n < 0).any(),
          "binomial: expected counts >= 0 and probabilities in [0, 1]")
    return _host_counts("binomial", lambda rng: rng.binomial(n.astype(np.int64), p), count, generator)
