"""torch.distributions, as far as MNIST/CIFAR scripts use it: Beta (mixup's weight), Normal (a VAE's posterior and
prior, rsample for the reparameterization trick), Bernoulli (a VAE's pixel likelihood), Categorical
(a mixture's component, a sampled class), OneHotCategorical, Uniform, MixtureSameFamily, Independent,
and kl_divergence between two of a kind.
The formulas are torch's, written with tnet's differentiable operators, so log_prob, entropy, rsample
and kl_divergence carry gradients to the parameters. Samples come from tnet's streams (other numbers
than torch's). validate_args is accepted and ignored: values are not checked against the support."""
import math
import sys
import types

import numpy as np
import torch

from . import functional as F
from .factory import arange, full, init_generator, rand, randn
from .nn import functional as nnF
from .tensor import Tensor, no_grad, tensor

Size = torch.Size


def _as_tensor(value, like=None):
    if isinstance(value, Tensor):
        return value
    return tensor(float(value), dtype=like.dtype if like is not None else None)


def _broadcast_all(*values):
    """Numbers and tensors broadcast to one shape (numbers take the first tensor's dtype)."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    return F.broadcast_tensors(*[_as_tensor(v, like) for v in values])


class Distribution:
    """torch.distributions.Distribution: batch_shape, event_shape, and sample as a detached rsample."""
    has_rsample = False
    arg_constraints = {}

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=Size()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape=Size()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample (rsample)")

    def sample_n(self, n):
        return self.sample(Size((n,)))

    @property
    def stddev(self):
        return self.variance.sqrt()

    def perplexity(self):
        return self.entropy().exp()

    def __repr__(self):
        return f"{type(self).__name__}()"


class Normal(Distribution):
    """Normal(loc, scale): numbers or tensors that broadcast to batch_shape."""
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=Size()):
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        return -((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        return 0.5 * (1 + F.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * F.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def __repr__(self):
        return f"Normal(loc: {self.loc}, scale: {self.scale})"


def _probs_and_logits(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return probs, logits


class Bernoulli(Distribution):
    """Bernoulli(probs=None, logits=None): one of the two, numbers or tensors; samples are 0.0/1.0 in
    the parameter's dtype."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        probs, logits = _probs_and_logits(probs, logits)
        if probs is not None:
            self.probs, = _broadcast_all(probs)
            # torch's probs_to_logits: log(p) - log1p(-p) of p clamped into (0, 1)
            eps = torch.finfo(self.probs.dtype).eps
            clamped = self.probs.clamp(eps, 1 - eps)
            self.logits = clamped.log() - (-clamped).log1p()
        else:
            self.logits, = _broadcast_all(logits)
            self.probs = self.logits.sigmoid()
        super().__init__(self.probs.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        with no_grad():
            return F.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        logits, value = _broadcast_all(self.logits, value)
        return -nnF.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return nnF.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def __repr__(self):
        return f"Bernoulli(probs: {self.probs})"


class Categorical(Distribution):
    """Categorical(probs=None, logits=None): one of the two, [..., K] over K classes (unnormalized);
    batch_shape is the parameter's shape without its last dimension, samples are int64 class indices."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        probs, logits = _probs_and_logits(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            eps = torch.finfo(self.probs.dtype).eps
            self.logits = self.probs.clamp(eps, 1 - eps).log()
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            self.probs = F.softmax(self.logits, -1)
        self._num_events = self.probs.shape[-1]
        super().__init__(self.probs.shape[:-1], validate_args=validate_args)

    @property
    def param_shape(self):
        return self.probs.shape

    @property
    def mean(self):
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=Size()):
        n = math.prod(sample_shape)
        with no_grad():
            draws = F.multinomial(self.probs.reshape(-1, self._num_events), n, replacement=True)
            return draws.t().reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        value = value.long().unsqueeze(-1)
        value, log_pmf = F.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=torch.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = arange(self._num_events).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    def __repr__(self):
        return f"Categorical(probs: {self.probs})"


class Independent(Distribution):
    """Independent(base_distribution, reinterpreted_batch_ndims): the base's last batch dims become
    event dims, so that log_prob and entropy sum over them."""

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        self.has_rsample = base_distribution.has_rsample
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args)

    def _sum_rightmost(self, value):
        n = self.reinterpreted_batch_ndims
        return value.sum(tuple(range(-n, 0))) if n else value

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=Size()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return self._sum_rightmost(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum_rightmost(self.base_dist.entropy())

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


class Uniform(Distribution):
    """Uniform(low, high): numbers or tensors that broadcast to batch_shape; log_prob is -inf outside
    [low, high)."""
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = _broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=Size()):
        u = rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        inside = (self.low <= value).type_as(self.low) * (self.high > value).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value):
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def entropy(self):
        return (self.high - self.low).log()

    def __repr__(self):
        return f"Uniform(low: {self.low}, high: {self.high})"


class OneHotCategorical(Distribution):
    """OneHotCategorical(probs=None, logits=None): a Categorical whose samples are one-hot vectors of
    the parameter's dtype (event_shape [K])."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        super().__init__(self._categorical.batch_shape, self.probs.shape[-1:], validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        classes = self._categorical.sample(sample_shape)
        return nnF.one_hot(classes, self.probs.shape[-1]).to(self.probs.dtype)

    def log_prob(self, value):
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def __repr__(self):
        return f"OneHotCategorical(probs: {self.probs})"


class MixtureSameFamily(Distribution):
    """MixtureSameFamily(mixture_distribution, component_distribution): a Categorical over the
    components' last batch dim; log_prob is the logsumexp of the weighted components' log_probs."""

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution, self._component_distribution = mixture_distribution, component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of torch.distributions.Categorical")
        components = component_distribution.batch_shape
        if components[-1] != mixture_distribution.probs.shape[-1]:
            raise ValueError(f"`mixture_distribution component` ({mixture_distribution.probs.shape[-1]}) does not "
                             f"equal `component_distribution.batch_shape[-1]` ({components[-1]})")
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(components[:-1], component_distribution.event_shape, validate_args)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _pad_mixture(self, probs):
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    def log_prob(self, value):
        value = value.unsqueeze(-1 - self._event_ndims)  # against each component
        log_prob_x = self._component_distribution.log_prob(value)
        return (log_prob_x + self._mixture_distribution.logits).logsumexp(dim=-1)

    def sample(self, sample_shape=Size()):
        with no_grad():
            k = self._mixture_distribution.sample(sample_shape)  # sample_shape + batch_shape
            x = self._component_distribution.sample(sample_shape)  # ... + [K] + event_shape
            index = k.reshape(tuple(k.shape) + (1,) * (1 + self._event_ndims))
            index = index.expand(tuple(k.shape) + (1,) + tuple(self._event_shape))
            return x.gather(len(k.shape), index).squeeze(len(k.shape))

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  {self._component_distribution!r})"


class Beta(Distribution):
    """Beta(concentration1, concentration0), for mixup's and CutMix's mixing weight
    (`torch.distributions.beta.Beta(a, a).sample()`): numbers or tensors that broadcast to
    batch_shape. Drawn on the host by numpy from the stream tnet.manual_seed reseeds (as randint):
    a host read of tensor parameters, no rsample and no log_prob."""

    def __init__(self, concentration1, concentration0, validate_args=None):
        host = lambda v: np.asarray(v.numpy() if isinstance(v, Tensor) else v, np.float64)
        self._a, self._b = np.broadcast_arrays(host(concentration1), host(concentration0))
        if validate_args is not False and not (np.all(self._a > 0) and np.all(self._b > 0)):
            raise ValueError("Expected parameters concentration1 and concentration0 of Beta to be positive, got "
                             f"{self._a.tolist()} and {self._b.tolist()}")
        super().__init__(self._a.shape)

    concentration1 = property(lambda self: tensor(self._a.astype(np.float32)))
    concentration0 = property(lambda self: tensor(self._b.astype(np.float32)))
    mean = property(lambda self: tensor((self._a / (self._a + self._b)).astype(np.float32)))

    def sample(self, sample_shape=Size()):
        draw = init_generator().beta(self._a, self._b, size=tuple(self._extended_shape(sample_shape)))
        return tensor(np.asarray(draw, np.float32))


def kl_divergence(p, q):
    """KL(p || q) for two Normals, Bernoullis, Categoricals, or Independents of those with the same
    reinterpreted dims; other pairs raise NotImplementedError, as torch's unregistered pairs do."""
    if type(p) is Normal and type(q) is Normal:
        var_ratio = (p.scale / q.scale).pow(2)
        t1 = ((p.loc - q.loc) / q.scale).pow(2)
        return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())
    if type(p) is Bernoulli and type(q) is Bernoulli:
        return (p.probs * (nnF.softplus(-q.logits) - nnF.softplus(-p.logits)) +
                (1 - p.probs) * (nnF.softplus(q.logits) - nnF.softplus(p.logits)))
    if type(p) is Categorical and type(q) is Categorical:
        return (p.probs * (p.logits - q.logits)).sum(-1)
    if type(p) is Independent and type(q) is Independent:
        if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
            raise NotImplementedError("kl_divergence of Independents with different reinterpreted_batch_ndims")
        return p._sum_rightmost(kl_divergence(p.base_dist, q.base_dist))
    raise NotImplementedError(f"kl_divergence({type(p).__name__}, {type(q).__name__}) is not implemented")


__all__ = ["Bernoulli", "Beta", "Categorical", "Distribution", "Independent", "MixtureSameFamily", "Normal",
           "OneHotCategorical", "Uniform", "kl_divergence"]

# torch.distributions' submodules, modules of their own in sys.modules: `from torch.distributions.normal import
# Normal` ports
for _name, _names in (("distribution", ["Distribution"]), ("normal", ["Normal"]), ("bernoulli", ["Bernoulli"]),
                      ("beta", ["Beta"]),
                      ("categorical", ["Categorical"]), ("independent", ["Independent"]), ("kl", ["kl_divergence"]),
                      ("uniform", ["Uniform"]), ("one_hot_categorical", ["OneHotCategorical"]),
                      ("mixture_same_family", ["MixtureSameFamily"])):
    _module = types.ModuleType(f"{__name__}.{_name}", f"torch.distributions.{_name}'s {', '.join(_names)}")
    for _n in _names:
        setattr(_module, _n, globals()[_n])
    sys.modules[_module.__name__] = _module
    globals()[_name] = _module
