"""torch.distributions, as far as MNIST/CIFAR scripts use it: Beta (mixup's weight), Normal (a VAE's posterior and
prior, rsample for the reparameterization trick), Bernoulli (a VAE's pixel likelihood), Categorical
(a mixture's component, a sampled class), OneHotCategorical, Uniform, MixtureSameFamily, Independent,
Laplace, Exponential, Gumbel, Cauchy, LogNormal, Gamma, Dirichlet, Poisson and StudentT (the last four
drawn on the host), MultivariateNormal, RelaxedBernoulli and RelaxedOneHotCategorical (Gumbel-softmax),
Binomial, Multinomial, Chi2 (drawn on the host), Geometric, HalfNormal, OneHotCategoricalStraightThrough,
LowRankMultivariateNormal, GeneralizedPareto, TransformedDistribution with the element-wise, affine, composed
and stick-breaking transforms (a SAC's squashed Normal, LogisticNormal), the common constraints, and kl_divergence
by torch's register_kl registry (every pair torch registers).
The formulas are torch's, written with tnet's differentiable operators, so log_prob, entropy, rsample
and kl_divergence carry gradients to the parameters. Samples come from tnet's streams (other numbers
than torch's). validate_args is torch's (on by default): parameters checked against arg_constraints at
construction, log_prob's and cdf's values against support, with torch's ValueError (Distribution)."""
import copy
import functools
import inspect
import math
import numbers
import sys
import types
import warnings
from operator import attrgetter

import numpy as np
import torch

from . import functional as F
from .factory import arange, empty, full, full_like, init_generator, ones_like, rand, randn, zeros_like
from .functional.random import sample_dirichlet, standard_gamma
from .kernels.launch import capturing
from .linalg import cholesky, solve_triangular
from .nn import functional as nnF
from .tensor import Tensor, no_grad, tensor

Size = torch.Size


def _as_tensor(value, like=None):
    if isinstance(value, Tensor):
        return value
    return tensor(float(value), dtype=like.dtype if like is not None else None)


def _broadcast_all(*values):
    """Numbers and tensors broadcast to one shape (numbers take the first tensor's dtype); a tensor made of a
    number keeps it, with its _version, as _number, which validate_args checks on the host (no launch, no
    sync) while no in-place write has changed the tensor."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    out = F.broadcast_tensors(*[_as_tensor(v, like) for v in values])
    for t, v in zip(out, values):
        if not isinstance(v, Tensor):
            t._number = (float(v), t._version)
    return out


# ---- constraints (torch.distributions.constraints): the sets that arg_constraints and support name ----

class Constraint:
    """torch.distributions.constraints' Constraint: check(value), a bool tensor of where value lies in
    the set (over the batch dims: event_dim dims are reduced); is_discrete and event_dim as torch's."""
    is_discrete, event_dim = False, 0

    def __init__(self, check=None, name=None, is_discrete=False, event_dim=0):
        self._check, self._name, self.is_discrete, self.event_dim = check, name, is_discrete, event_dim

    def check(self, value):
        return self._check(value)

    def _holds(self, value):
        """Whether all of value lies in the set (validate_args' question): check's all(), read on the host."""
        return bool(self.check(value).all())

    def __repr__(self):
        return self._name or type(self).__name__


class _Bounded(Constraint):
    """The numbers between bounds, each None (absent), open or closed (torch's Real, GreaterThan,
    GreaterThanEq, LessThan, Interval and HalfOpenInterval): NaN lies in none. Where the bounds are numbers,
    _holds reads one reduction of value (amin, amax or aminmax: NaN propagates), not check's comparisons and
    all(), as validate_args checks parameters at every construction."""

    def __init__(self, name, lower=None, upper=None, low_open=False, high_open=False):
        super().__init__(None, name)
        self._lower, self._upper, self._low_open, self._high_open = lower, upper, low_open, high_open

    # torch's GreaterThan, LessThan and Interval attributes (None where the set has no such bound)
    lower_bound = property(lambda self: self._lower)
    upper_bound = property(lambda self: self._upper)

    def _inside(self, lo, hi):
        """Whether lo and hi (tensors or numbers) clear the lower and the upper bound."""
        low = self._lower is None or (lo > self._lower if self._low_open else lo >= self._lower)
        high = self._upper is None or (hi < self._upper if self._high_open else hi <= self._upper)
        return low, high

    def check(self, value):
        if self._lower is None and self._upper is None:
            return value == value
        low, high = self._inside(value, value)
        return high if low is True else low if high is True else F.logical_and(low, high)

    def _holds(self, value):
        if not (isinstance(value, Tensor) and value.dtype != torch.bool
                and all(b is None or isinstance(b, (int, float)) for b in (self._lower, self._upper))):
            return super()._holds(value)
        if value.numel() == 0:
            return True
        number, version = getattr(value, "_number", (None, None))
        if number is not None and version == value._version:  # every element is that number (_broadcast_all)
            lo = hi = number
        elif self._upper is None:  # also Real(): amin is NaN where an element is
            lo = hi = value.amin().item()
        elif self._lower is None:
            lo = hi = value.amax().item()
        else:
            lo, hi = (v.item() for v in F.aminmax(value))
        low, high = self._inside(lo, hi)
        return bool(low and high and lo == lo)


def _holds(constraint, value):
    """validate_args' answer: whether all of value lies in constraint, read on the host; True inside a CUDA
    graph's capture, where no host read can run (torch.compile turns the checks off likewise)."""
    return (isinstance(value, Tensor) and capturing(value.memory)) or constraint._holds(value)


def _interval(lower, upper, low_open=False, high_open=False):
    kind = "HalfOpenInterval" if high_open else "Interval"
    return _Bounded(f"{kind}(lower_bound={lower}, upper_bound={upper})", lower, upper, low_open, high_open)


class _Dependent(Constraint):
    """torch's constraints.dependent: a set that depends on other variables; check raises ValueError."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        super().__init__(None, "Dependent()", is_discrete, event_dim)

    def __call__(self, *, is_discrete=False, event_dim=0):
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


class _DependentProperty(property, _Dependent):
    """torch's constraints.dependent_property: a property (a distribution's support) that is also a
    dependent constraint (is_dependent), usable with or without its keyword arguments."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _Independent(Constraint):
    """torch's constraints.independent: base's check reduced (all) over the last reinterpreted_batch_ndims
    dims; all of a value lies in it where all of it lies in base (base's _holds)."""

    def __init__(self, base, reinterpreted_batch_ndims):
        super().__init__(None, f"IndependentConstraint({base!r}, {reinterpreted_batch_ndims})", base.is_discrete,
                         base.event_dim + reinterpreted_batch_ndims)
        self.base_constraint, self.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims

    def check(self, value):
        result, n = self.base_constraint.check(value), self.reinterpreted_batch_ndims
        return result.reshape(tuple(result.shape[:result.ndim - n]) + (-1,)).all(-1) if n else result

    def _holds(self, value):
        if self.reinterpreted_batch_ndims:  # check's reshape, which torch refuses for an empty batch
            shape = tuple(value.shape)[:value.ndim - self.base_constraint.event_dim]
            _refuse_an_empty_batch(shape[:len(shape) - self.reinterpreted_batch_ndims])
        return self.base_constraint._holds(value)


def _refuse_an_empty_batch(batch_shape):
    """torch's independent constraint reshapes check's result to batch_shape + (-1,), a reshape torch refuses
    where batch_shape holds a 0 (the -1 is ambiguous): validate_args raises its RuntimeError for such a
    parameter or value (Dirichlet's or MultivariateNormal's of an empty batch, and Beta's, a Dirichlet in
    torch)."""
    if 0 in batch_shape:
        raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(batch_shape) + [-1]} because the "
                           "unspecified dimension size -1 can be any value and is ambiguous")


def _square(v):
    return full(tuple(v.shape[:-2]), v.shape[-2] == v.shape[-1], dtype=torch.bool)


def _symmetric(v):
    if v.shape[-2] != v.shape[-1]:
        return _square(v)
    return F.isclose(v, v.mT, atol=1e-6).reshape(tuple(v.shape[:-2]) + (-1,)).all(-1)


def _lower_triangular(v):
    return (v.tril() == v).reshape(tuple(v.shape[:-2]) + (-1,)).all(-1)


def _eigenvalues_above(v, bound):
    """Every eigenvalue above bound (> 0: definite) or at least 0 (semidefinite), by tnet.linalg.eigvalsh (on
    the host); as torch's, where some matrix of the batch is not symmetric, the symmetry check alone."""
    from .linalg import eigvalsh
    symmetric = _symmetric(v)
    if not bool(symmetric.all()):
        return symmetric
    values = eigvalsh(v).detach()
    return (values > 0).all(-1) if bound > 0 else (values >= 0).all(-1)


constraints = types.ModuleType(f"{__name__}.constraints", "torch.distributions.constraints' sets")
constraints.__dict__.update(
    Constraint=Constraint,
    real=_Bounded("Real()"),  # not NaN
    positive=_Bounded("GreaterThan(lower_bound=0.0)", 0.0, low_open=True),
    nonnegative=_Bounded("GreaterThanEq(lower_bound=0.0)", 0.0),
    unit_interval=_interval(0.0, 1.0),
    boolean=Constraint(lambda v: F.logical_or(v == 0, v == 1), "Boolean()", is_discrete=True),
    nonnegative_integer=Constraint(lambda v: F.logical_and(v >= 0, v == v.floor()), "IntegerGreaterThan(lower_bound=0)",
                                   is_discrete=True),
    positive_integer=Constraint(lambda v: F.logical_and(v >= 1, v == v.floor()), "IntegerGreaterThan(lower_bound=1)",
                                is_discrete=True),
    integer_interval=lambda lower, upper: Constraint(
        lambda v: F.logical_and(F.logical_and(v >= lower, v <= upper), v == v.floor()),
        f"IntegerInterval(lower_bound={lower}, upper_bound={upper})", is_discrete=True),
    interval=_interval,
    half_open_interval=lambda lower, upper: _interval(lower, upper, high_open=True),
    greater_than=lambda lower: _Bounded(f"GreaterThan(lower_bound={lower})", lower, low_open=True),
    greater_than_eq=lambda lower: _Bounded(f"GreaterThanEq(lower_bound={lower})", lower),
    less_than=lambda upper: _Bounded(f"LessThan(upper_bound={upper})", upper=upper, high_open=True),
    dependent=_Dependent(), dependent_property=_DependentProperty,
    is_dependent=lambda constraint: isinstance(constraint, _Dependent),
    independent=_Independent,
    square=Constraint(_square, "Square()", event_dim=2),
    symmetric=Constraint(_symmetric, "Symmetric()", event_dim=2),
    lower_triangular=Constraint(_lower_triangular, "LowerTriangular()", event_dim=2),
    lower_cholesky=Constraint(lambda v: F.logical_and(_lower_triangular(v), (v.diagonal(dim1=-2, dim2=-1) > 0).all(-1)),
                              "LowerCholesky()", event_dim=2),
    positive_definite=Constraint(lambda v: _eigenvalues_above(v, 1), "PositiveDefinite()", event_dim=2),
    positive_semidefinite=Constraint(lambda v: _eigenvalues_above(v, 0), "PositiveSemidefinite()", event_dim=2),
    one_hot=Constraint(lambda v: F.logical_and(F.logical_or(v == 0, v == 1).all(-1), v.sum(-1) == 1), "OneHot()",
                       is_discrete=True, event_dim=1),
    multinomial=lambda upper_bound: Constraint(lambda v: F.logical_and((v >= 0).all(-1), v.sum(-1) <= upper_bound),
                                               "Multinomial()", is_discrete=True,
                                               event_dim=1))
constraints.real_vector = _Independent(constraints.real, 1)
constraints.simplex = Constraint(lambda v: F.logical_and((v >= 0).all(-1), ((v.sum(-1) - 1).abs() < 1e-6)), "Simplex()",
                                 event_dim=1)


class Distribution:
    """torch.distributions.Distribution: batch_shape, event_shape, and sample as a detached rsample.
    validate_args (None: the default, torch's True, which Distribution.set_default_validate_args switches):
    the constructor checks each parameter against arg_constraints, and log_prob and cdf their value against
    support (tnet's laws through __init_subclass__, torch's each through _validate_sample), raising torch's
    ValueError; a host read per parameter or value (one reduction of it where the set is an interval of
    numbers, _Bounded), which validate_args=False skips."""
    has_rsample = False
    _validate_args = True
    _derived = ()  # parameters computed from the one given (logits from probs): torch's lazy ones, not checked

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if not self._validate_args:
            return
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                          "or initialize the distribution with `validate_args=False` to turn off validation.")
        for param, constraint in arg_constraints.items():
            if not (constraints.is_dependent(constraint) or param in self._derived):
                self._check_parameter(param, getattr(self, param), constraint)

    def _check_parameter(self, param, value, constraint):
        """torch's ValueError where value, the parameter param, leaves constraint."""
        if not _holds(constraint, value):
            raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"of distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                             f"values:\n{value}")

    def __init_subclass__(cls, **kwargs):
        """tnet's laws check the value of log_prob and cdf first where validate_args is on, as torch's each
        do (those of _UNVALIDATED but their base's); a script's subclass checks where its methods call
        _validate_sample, as torch's."""
        super().__init_subclass__(**kwargs)
        if cls.__module__ != __name__:
            return
        for name in ("log_prob", "cdf"):
            method = cls.__dict__.get(name)
            if method is not None and (cls.__name__, name) not in _UNVALIDATED:
                setattr(cls, name, _validating(method))

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    def _validate_sample(self, value):
        """torch's checks of a value to score: a tnet Tensor whose right-most sizes are event_shape, that
        broadcasts with batch_shape + event_shape, inside support (ValueError)."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if value.shape[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        actual_shape, expected_shape = value.shape, self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.")
            return
        if not _holds(support, value):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    @staticmethod
    def set_default_validate_args(value):
        """torch's switch of the default validate_args (True at import, as torch's)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

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

    # What a law does not define raises NotImplementedError, as torch's base does (not AttributeError): scripts
    # fall back by `except NotImplementedError` (an entropy estimated from samples, a cdf by numerical integration)
    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def sample_n(self, n):
        return self.sample(Size((n,)))

    def expand(self, batch_shape, _instance=None):
        """This law over a larger batch_shape, as torch's: each constructor parameter held as a tensor of this
        batch shape (and its own trailing dims) expanded, no copy, and each law it wraps (Independent's base, a
        mixture's components) expanded with the batch dims it has beyond this one's."""
        batch_shape, n = Size(batch_shape), len(self._batch_shape)
        params = set(inspect.signature(type(self).__init__).parameters)
        new = copy.copy(self) if _instance is None else _instance
        for name, value in vars(self).items():
            if isinstance(value, Distribution) and tuple(value.batch_shape[:n]) == tuple(self._batch_shape):
                setattr(new, name, value.expand(tuple(batch_shape) + tuple(value.batch_shape[n:])))
            elif (isinstance(value, Tensor) and name.lstrip("_") in params
                  and tuple(value.shape[:n]) == tuple(self._batch_shape)):
                setattr(new, name, value.expand(tuple(batch_shape) + tuple(value.shape[n:])))
        new._batch_shape = batch_shape
        return new

    @property
    def stddev(self):
        return self.variance.sqrt()

    def perplexity(self):
        return self.entropy().exp()

    def __repr__(self):
        """torch's: each parameter of arg_constraints held as an attribute (not one derived from the other
        given), its value if it has one element, else its size."""
        params = [k for k in self.arg_constraints if k in self.__dict__ and k not in self._derived]
        return type(self).__name__ + "(" + ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in params) + ")"


# (law, method) that torch's do not validate themselves (Independent's and TransformedDistribution's base does,
# GeneralizedPareto's log survival function; MixtureSameFamily's cdf does not)
_UNVALIDATED = {("Independent", "log_prob"), ("MixtureSameFamily", "cdf"), ("TransformedDistribution", "cdf"),
                ("GeneralizedPareto", "cdf")}


def _validating(method):
    """method(self, value, ...), after self._validate_sample(value) where self._validate_args."""
    @functools.wraps(method)
    def validated(self, value, *args, **kwargs):
        if self._validate_args:
            self._validate_sample(value)
        return method(self, value, *args, **kwargs)
    return validated


class ExponentialFamily(Distribution):
    """torch's base of exponential-family laws: a subclass gives _natural_params, _log_normalizer(*params) and
    _mean_carrier_measure; entropy is the log normalizer's Bregman form, through tnet.autograd.grad, as torch's."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        from .autograd import grad
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_normal = self._log_normalizer(*params)
        gradients = grad(log_normal.sum(), params, create_graph=True)
        result = result + log_normal
        for param, g in zip(params, gradients):
            result = result - (param * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result


class Normal(ExponentialFamily):
    """Normal(loc, scale): numbers or tensors that broadcast to batch_shape."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
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

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()


def _probs_and_logits(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return probs, logits


class _Stored:
    """A parameter that torch computes lazily (its lazy_property, a class attribute) and tnet at construction, held
    on the instance: a class attribute still, which gives the instance's value, so that a subclass reads
    super().logits as torch's (dreamerv3-torch's OneHotDist). It sets nothing: the instance's own attribute wins."""
    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        try:
            return instance.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"'{type(instance).__name__}' object has no attribute '{self.name}'") from None


def _lazy_one(probs):
    """The parameter of a law of probs or logits that the other was computed from: torch's lazy one, which
    validate_args does not check."""
    return ("logits",) if probs is not None else ("probs",)


def _binary_parameters(probs, logits):
    """(probs, logits) of a law of one success probability, from one of the two (numbers or tensors),
    the other derived: logits = log(p / (1 - p)), probs = sigmoid(logits)."""
    probs, logits = _probs_and_logits(probs, logits)
    if probs is not None:
        probs, = _broadcast_all(probs)
        return probs, _probs_to_logits(probs)
    logits, = _broadcast_all(logits)
    return logits.sigmoid(), logits


class Bernoulli(ExponentialFamily):
    """Bernoulli(probs=None, logits=None): one of the two, numbers or tensors; samples are 0.0/1.0 in
    the parameter's dtype."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean

    probs, logits = _Stored(), _Stored()  # torch's lazy ones, read through super() too

    def __init__(self, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _binary_parameters(probs, logits)
        self._derived = _lazy_one(probs)
        super().__init__(self.probs.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        """1 where probs > 1/2, 0 below, NaN at 1/2 (no single mode), as torch's."""
        return F.where(self.probs == 0.5, math.nan, (self.probs >= 0.5).to(self.probs.dtype))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        with no_grad():
            return F.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def enumerate_support(self, expand=True):
        values = arange(2, dtype=self.probs.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    def log_prob(self, value):
        logits, value = _broadcast_all(self.logits, value)
        return -nnF.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return nnF.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (F.logit(self.probs),)

    def _log_normalizer(self, x):
        return x.exp().log1p()


class ContinuousBernoulli(ExponentialFamily):
    """ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501)) on [0, 1] (Loaiza-Ganem and Cunningham's
    law for VAEs' pixel intensities): Bernoulli's log-likelihood plus the log normaliser
    log(2 atanh(1 - 2p) / (1 - 2p)), which is a Taylor series in (p - 1/2) where p lies within lims, as torch's
    (mean and variance too); probs given are clamped eps away from 0 and 1, as torch's; rsample by the icdf of
    uniforms."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    probs, logits = _Stored(), _Stored()  # torch's lazy ones, read through super() too

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        probs, logits = _probs_and_logits(probs, logits)
        if probs is not None:
            probs = _clamp_probs(_broadcast_all(probs)[0])
            self.probs, self.logits = probs, _probs_to_logits(probs)
        else:
            self.logits, = _broadcast_all(logits)
            self.probs = _clamp_probs(self.logits.sigmoid())
        self._lims, self._derived = lims, _lazy_one(probs)
        super().__init__(self.probs.shape, validate_args=validate_args)

    def _outside_unstable_region(self):
        return F.logical_or(F.le(self.probs, self._lims[0]), F.gt(self.probs, self._lims[1]))

    def _cut_probs(self):
        return F.where(self._outside_unstable_region(), self.probs, self._lims[0] * ones_like(self.probs))

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below_half = F.where(F.le(cut, 0.5), cut, zeros_like(cut))
        above_half = F.where(F.ge(cut, 0.5), cut, ones_like(cut))
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - F.where(
            F.le(cut, 0.5), (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return F.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return F.where(self._outside_unstable_region(), mus, taylor)

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / ((-cut).log1p() - cut.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return F.where(self._outside_unstable_region(), variances, taylor)

    def rsample(self, sample_shape=Size()):
        return self.icdf(rand(self._extended_shape(sample_shape), dtype=self.probs.dtype))

    def log_prob(self, value):
        logits, value = _broadcast_all(self.logits, value)
        return -nnF.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = F.where(self._outside_unstable_region(), cdfs, value)
        return F.where(F.le(value, 0.0), zeros_like(value), F.where(F.ge(value, 1.0), ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        return F.where(self._outside_unstable_region(),
                       ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / (cut.log() - (-cut).log1p()),
                       value)

    def entropy(self):
        log_probs0, log_probs1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = F.logical_or(F.le(x, self._lims[0] - 0.5), F.gt(x, self._lims[1] - 0.5))
        cut = F.where(outside, x, (self._lims[0] - 0.5) * ones_like(x))
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return F.where(outside, log_norm, taylor)


class Categorical(Distribution):
    """Categorical(probs=None, logits=None): one of the two, [..., K] over K classes (unnormalized);
    batch_shape is the parameter's shape without its last dimension, samples are int64 class indices."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.dependent_property(lambda self: constraints.integer_interval(0, self._num_events - 1),
                                             is_discrete=True)

    probs, logits = _Stored(), _Stored()  # torch's lazy ones, read through super() too

    def __init__(self, probs=None, logits=None, validate_args=None):
        probs, logits = _probs_and_logits(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = _probs_to_logits(self.probs, is_binary=False)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            self.probs = F.softmax(self.logits, -1)
        self._num_events, self._derived = self.probs.shape[-1], _lazy_one(probs)
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


class Independent(Distribution):
    """Independent(base_distribution, reinterpreted_batch_ndims): the base's last batch dims become
    event dims, so that log_prob and entropy sum over them."""
    arg_constraints = {}
    support = constraints.dependent_property(lambda self: constraints.independent(
        self.base_dist.support, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims else self.base_dist.support)

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
    def mode(self):
        return self.base_dist.mode

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

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
    arg_constraints = property(lambda self: {"low": constraints.less_than(self.high),
                                             "high": constraints.greater_than(self.low)})
    support = constraints.dependent_property(lambda self: constraints.interval(self.low, self.high))
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = _broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

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

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()


class OneHotCategorical(Distribution):
    """OneHotCategorical(probs=None, logits=None): a Categorical whose samples are one-hot vectors of
    the parameter's dtype (event_shape [K])."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    _derived = ("probs", "logits")  # the law inside checks the one given
    support = constraints.one_hot

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args)
        super().__init__(self._categorical.batch_shape, self.probs.shape[-1:], validate_args)

    # properties of the class reading the Categorical inside, as torch's: a subclass reads super().logits
    # (dreamerv3-torch's OneHotDist), and expand() expands the Categorical, which they follow
    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    @property
    def mode(self):
        return nnF.one_hot(self.probs.argmax(-1), self.probs.shape[-1]).to(self.probs.dtype)

    def sample(self, sample_shape=Size()):
        classes = self._categorical.sample(sample_shape)
        return nnF.one_hot(classes, self.probs.shape[-1]).to(self.probs.dtype)

    def enumerate_support(self, expand=True):
        n = self._event_shape[0]
        values = nnF.one_hot(arange(n), n).to(self.probs.dtype).view((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n,) + tuple(self._batch_shape) + (n,)) if expand else values

    def log_prob(self, value):
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()


class MixtureSameFamily(Distribution):
    """MixtureSameFamily(mixture_distribution, component_distribution): a Categorical over the
    components' last batch dim; log_prob is the logsumexp of the weighted components' log_probs."""
    arg_constraints = {}
    support = constraints.dependent_property(lambda self: self._component_distribution.support)

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

    @property
    def variance(self):
        """The law of total variance: the components' mean variance plus the variance of their means."""
        probs = self._pad_mixture(self._mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self._component_distribution.variance).sum(dim)
        var_cond_mean = (probs * (self._component_distribution.mean - self.mean.unsqueeze(dim)).pow(2.0)).sum(dim)
        return mean_cond_var + var_cond_mean

    def log_prob(self, value):
        value = value.unsqueeze(-1 - self._event_ndims)  # against each component
        log_prob_x = self._component_distribution.log_prob(value)
        return (log_prob_x + self._mixture_distribution.logits).logsumexp(dim=-1)

    def cdf(self, value):
        """The mixture's weights times the components' cdf at value, as torch's."""
        cdf_x = self._component_distribution.cdf(value.unsqueeze(-1 - self._event_ndims))
        return (cdf_x * self._mixture_distribution.probs).sum(-1 - self._event_ndims)

    def sample(self, sample_shape=Size()):
        with no_grad():
            k = self._mixture_distribution.sample(sample_shape)  # sample_shape + batch_shape
            x = self._component_distribution.sample(sample_shape)  # ... + [K] + event_shape
            index = k.reshape(tuple(k.shape) + (1,) * (1 + self._event_ndims))
            index = index.expand(tuple(k.shape) + (1,) + tuple(self._event_shape))
            return x.gather(len(k.shape), index).squeeze(len(k.shape))

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  {self._component_distribution!r})"


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0), for mixup's and CutMix's mixing weight
    (`torch.distributions.beta.Beta(a, a).sample()`): numbers or tensors that broadcast to
    batch_shape. Drawn on the host by numpy from the stream tnet.manual_seed reseeds (as randint):
    a host read of tensor parameters; log_prob, entropy and variance on the device, differentiable in the
    parameters given as tensors; rsample is torch's, the first part of a Dirichlet([a, b]) draw (reparameterized,
    as Dirichlet's)."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self._given = _broadcast_all(concentration1, concentration0)
        host = lambda v: np.asarray(v.numpy() if isinstance(v, Tensor) else v, np.float64)
        self._a, self._b = np.broadcast_arrays(host(concentration1), host(concentration0))
        if self._validate_args if validate_args is None else validate_args:  # torch's Dirichlet([a, b]) checks
            _refuse_an_empty_batch(self._a.shape)
        super().__init__(self._a.shape, validate_args=validate_args)

    concentration1 = property(lambda self: tensor(self._a.astype(np.float32)))
    concentration0 = property(lambda self: tensor(self._b.astype(np.float32)))
    mean = property(lambda self: tensor((self._a / (self._a + self._b)).astype(np.float32)))

    @property
    def mode(self):
        """(a - 1)+ / ((a - 1)+ + (b - 1)+), 1 where both are below 1 (torch's Dirichlet mode's first class: the
        argmax of two NaNs), NaN where both are 1, differentiable in the parameters given as tensors."""
        a, b = self._given
        am1, bm1 = (a - 1).clamp(min=0.0), (b - 1).clamp(min=0.0)
        return F.where(F.logical_and(a < 1, b < 1), 1.0, am1 / (am1 + bm1))

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        shape = tuple(new.batch_shape)
        new._a, new._b = np.broadcast_to(self._a, shape), np.broadcast_to(self._b, shape)
        new._given = tuple(v.expand(shape) for v in self._given)
        return new

    def sample(self, sample_shape=Size()):
        draw = init_generator().beta(self._a, self._b, size=tuple(self._extended_shape(sample_shape)))
        return tensor(np.asarray(draw, np.float32))

    def rsample(self, sample_shape=Size()):
        a, b = self._given
        return Dirichlet(F.stack([a, b], -1)).rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        a, b = self._given
        return (F.xlogy(a - 1, value) + F.xlogy(b - 1, 1 - value) + (a + b).lgamma() - a.lgamma() - b.lgamma())

    @property
    def variance(self):
        a, b = self._given
        total = a + b
        return a * b / (total.pow(2) * (total + 1))

    def entropy(self):
        """torch's (its Beta is a Dirichlet of [a, b]): ln B(a, b) - (a - 1) psi(a) - (b - 1) psi(b)
        + (a + b - 2) psi(a + b), differentiable in the parameters given as tensors (a policy's entropy bonus)."""
        a, b = self._given
        total = a + b
        return (a.lgamma() + b.lgamma() - total.lgamma() - (a - 1) * a.digamma() - (b - 1) * b.digamma()
                + (total - 2) * total.digamma())

    @property
    def _natural_params(self):
        return self._given  # concentration1 and concentration0 as given (differentiable)

    def _log_normalizer(self, x, y):
        return x.lgamma() + y.lgamma() - (x + y).lgamma()


def _clamp_probs(probs):
    """torch's clamp_probs: probs kept eps (of their dtype) away from 0 and 1."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(eps, 1 - eps)


class Laplace(Distribution):
    """Laplace(loc, scale): numbers or tensors that broadcast to batch_shape."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    variance = property(lambda self: 2 * self.scale.pow(2))
    stddev = property(lambda self: 2 ** 0.5 * self.scale)

    def rsample(self, sample_shape=Size()):
        eps = torch.finfo(self.loc.dtype).eps
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype) * (2 - eps) + (eps - 1)  # (eps - 1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        return 0.5 - 0.5 * (value - self.loc).sign() * (-(value - self.loc).abs() / self.scale).expm1()

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Exponential(ExponentialFamily):
    """Exponential(rate): a number or a tensor (batch_shape its shape)."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        self.rate, = _broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: zeros_like(self.rate))
    stddev = property(lambda self: self.rate.reciprocal())
    variance = property(lambda self: self.rate.pow(-2))

    def rsample(self, sample_shape=Size()):
        draws = empty(self._extended_shape(sample_shape), dtype=self.rate.dtype).exponential_()
        return draws / self.rate

    def log_prob(self, value):
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(-value).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()


_EULER_GAMMA = 0.57721566490153286060


class Gumbel(Distribution):
    """Gumbel(loc, scale): numbers or tensors that broadcast to batch_shape (torch's is a transformed
    Uniform; the same formulas)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: self.loc + self.scale * _EULER_GAMMA)
    mode = property(lambda self: self.loc)
    variance = property(lambda self: self.scale.pow(2) * (math.pi ** 2 / 6))
    stddev = property(lambda self: self.scale * (math.pi / math.sqrt(6)))

    def rsample(self, sample_shape=Size()):
        finfo = torch.finfo(self.loc.dtype)
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype).clamp(min=finfo.tiny, max=1 - finfo.eps)
        return self.loc - self.scale * (-u.log()).log()

    def log_prob(self, value):
        z = (value - self.loc) / self.scale
        return -(self.scale.log() + z + (-z).exp())

    def cdf(self, value):
        return (-(-(value - self.loc) / self.scale).exp()).exp()

    def icdf(self, value):
        return self.loc - self.scale * (-value.log()).log()

    def entropy(self):
        return self.scale.log() + (1 + _EULER_GAMMA)


class Cauchy(Distribution):
    """Cauchy(loc, scale): numbers or tensors that broadcast to batch_shape; mean NaN, variance inf, as torch's."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: full(tuple(self.loc.shape), math.nan, dtype=self.loc.dtype))
    mode = property(lambda self: self.loc)
    variance = property(lambda self: full(tuple(self.loc.shape), math.inf, dtype=self.loc.dtype))

    def rsample(self, sample_shape=Size()):
        eps = empty(self._extended_shape(sample_shape), dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        return -math.log(math.pi) - self.scale.log() - ((value - self.loc) / self.scale).pow(2).log1p()

    def cdf(self, value):
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class LogNormal(Distribution):
    """LogNormal(loc, scale): exp of Normal(loc, scale), whose parameters loc and scale are (as torch's
    transformed Normal)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _derived = ("loc", "scale")  # its Normal checks them

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale, validate_args)
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: (self.loc + self.scale.pow(2) / 2).exp())
    mode = property(lambda self: (self.loc - self.scale.pow(2)).exp())
    variance = property(lambda self: self.scale.pow(2).expm1() * (2 * self.loc + self.scale.pow(2)).exp())

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value):
        return self.base_dist.log_prob(value.log()) - value.log()

    def cdf(self, value):
        return self.base_dist.cdf(value.log())

    def icdf(self, value):
        return self.base_dist.icdf(value).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


def _host_draw(draw, like):
    """A numpy draw as a float tensor of like's dtype (the host stream tnet.manual_seed reseeds)."""
    return tensor(np.asarray(draw, np.float32)).to(like.dtype)


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): numbers or tensors that broadcast to batch_shape. log_prob,
    entropy, mean, variance and kl_divergence are differentiable; samples are drawn on the host by
    numpy (a host read of the parameters, the stream tnet.manual_seed reseeds, as Beta's), and
    rsample is torch's: _standard_gamma's draw (reparameterized in the concentration: the draw moved at
    a fixed CDF) over the rate, clamped in place to the dtype's tiny."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = _broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate.pow(2))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=torch.finfo(value.dtype).tiny)  # do not record in autograd graph
        return value

    def log_prob(self, value):
        return (F.xlogy(self.concentration, self.rate) + F.xlogy(self.concentration - 1, value) -
                self.rate * value - self.concentration.lgamma())

    def cdf(self, value):
        """P(concentration, rate * value), the regularized lower incomplete gamma function, as torch's (Chi2's
        too): differentiable in value and rate; concentration's gradient raises in backward, as torch's."""
        return F.igamma(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()


class Poisson(ExponentialFamily):
    """Poisson(rate): a number or a tensor (batch_shape its shape). log_prob is differentiable in rate;
    samples are drawn on the host by numpy (a host read of rate), as Gamma's."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        self.rate, = _broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())
    variance = property(lambda self: self.rate)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        draw = init_generator().poisson(self.rate.numpy().astype(np.float64), size=shape)
        return _host_draw(draw, self.rate)

    def log_prob(self, value):
        value = _as_tensor(value, self.rate)
        return F.xlogy(value, self.rate) - self.rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()


class StudentT(Distribution):
    """StudentT(df, loc=0, scale=1): numbers or tensors that broadcast to batch_shape. log_prob,
    entropy, mean and variance are differentiable (mean NaN for df <= 1; variance inf for 1 < df <= 2,
    NaN for df <= 1, as torch's); rsample is torch's, a standard normal over the root of its Chi2(df)'s
    reparameterized draw over df (the chi-squared drawn on the host, as Gamma's)."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = _broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self):
        return F.where(self.df > 1, self.loc, math.nan)

    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        return F.where(self.df > 2, finite, F.where(self.df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        X = randn(tuple(shape), dtype=self.df.dtype)
        Z = self._chi2.rsample(sample_shape)
        Y = X * F.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + (0.5 * self.df).lgamma() -
             (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - Z

    def entropy(self):
        half_df = 0.5 * self.df
        lbeta = half_df.lgamma() + math.lgamma(0.5) - (half_df + 0.5).lgamma()
        return (self.scale.log() + (half_df + 0.5) * ((half_df + 0.5).digamma() - half_df.digamma()) +
                0.5 * self.df.log() + lbeta)


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): [..., K] (event_shape [K]). log_prob, entropy, mean, variance and
    kl_divergence are differentiable; samples are drawn on the host by numpy (normalised Gamma
    draws; a host read of the concentration), and rsample is torch's: _sample_dirichlet's draw, reparameterized
    in the concentration (torch's dirichlet_grad)."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        """(c - 1)+ normalized; where every c < 1, the first class's one-hot vector (torch's argmax of the
        NaNs of 0 / 0)."""
        c = (self.concentration - 1).clamp(min=0.0)
        first = (arange(c.shape[-1]) == 0).to(c.dtype)
        return F.where((self.concentration < 1).all(-1, keepdim=True), first, c / c.sum(-1, keepdim=True))

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def rsample(self, sample_shape=Size()):
        return sample_dirichlet(self.concentration.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        c = self.concentration
        return F.xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    def entropy(self):
        c = self.concentration
        k, a0 = c.shape[-1], c.sum(-1)
        return c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma() - ((c - 1.0) * c.digamma()).sum(-1)

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()


def _batch_mahalanobis(scale_tril, x):
    """|L^-1 x|^2 over the last dim, L [..., n, n] lower-triangular, x [..., n], batch dims broadcast."""
    shape = F.broadcast_shapes(scale_tril.shape[:-1], x.shape)
    solved = solve_triangular(scale_tril, x.expand(shape).unsqueeze(-1), upper=False).squeeze(-1)
    return solved.pow(2).sum(-1)


def _eye_like(matrices):
    """The identity broadcast to matrices' shape [..., n, n], in their dtype."""
    return F.broadcast_to(tensor(np.eye(matrices.shape[-1], dtype=np.float32)).to(matrices.dtype), matrices.shape)


def _half_log_det(scale_tril):
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None, scale_tril=None): loc
    [..., n] and exactly one of the three [..., n, n], batch dims broadcast. The factor L (scale_tril)
    comes from tnet.linalg.cholesky, solves from linalg.solve_triangular (both on the host, with
    gradients); rsample is loc + L eps."""
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if sum(m is not None for m in (covariance_matrix, precision_matrix, scale_tril)) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        matrix = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        which = "scale_tril" if scale_tril is not None else "covariance_matrix" if covariance_matrix is not None \
            else "precision_matrix"
        if matrix.dim() < 2:
            raise ValueError(f"{which} matrix must be at least two-dimensional, with optional leading batch dimensions")
        self._derived = ("covariance_matrix", "precision_matrix", "scale_tril")  # the one given is checked here,
        if self._validate_args if validate_args is None else validate_args:  # before its factor
            self._check_parameter(which, matrix, self.arg_constraints[which])
        if scale_tril is not None:
            L = scale_tril
        elif covariance_matrix is not None:
            L = cholesky(covariance_matrix)
        else:  # torch's _precision_to_scale_tril: from the Cholesky factor of P flipped
            Lf = cholesky(precision_matrix.flip((-2, -1)))
            L = solve_triangular(Lf.flip((-2, -1)).transpose(-2, -1), _eye_like(Lf), upper=False)
        batch_shape = F.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        self._unbroadcasted_scale_tril = L
        super().__init__(batch_shape, loc.shape[-1:], validate_args)

    @property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril  # (L L^T)^-1 = L^-T L^-1: solves, where cholesky_inverse has no gradient
        inverse = solve_triangular(L, _eye_like(L), upper=False)
        return (inverse.mT @ inverse).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._extended_shape())

    def rsample(self, sample_shape=Size()):
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        L = self._unbroadcasted_scale_tril
        if L.dim() == 2:  # one GEMM for every draw
            return self.loc + eps @ L.mT
        return self.loc + (L * eps.unsqueeze(-2)).sum(-1)  # batched factors: no GEMM per small matrix

    def log_prob(self, value):
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - _half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + _half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(self._batch_shape)


class RelaxedBernoulli(Distribution):
    """RelaxedBernoulli(temperature, probs=None, logits=None): values in (0, 1), rsample the
    sigmoid of (logistic noise + logits) / temperature (torch's LogitRelaxedBernoulli through a
    sigmoid); log_prob torch's, with its change of variables."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    _derived = ("probs", "logits")  # the law inside checks the one given
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._bernoulli = Bernoulli(probs, logits, validate_args)
        self.probs, self.logits = self._bernoulli.probs, self._bernoulli.logits
        self.temperature = _as_tensor(temperature, self.logits)
        super().__init__(self.probs.shape, validate_args=validate_args)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        probs = _clamp_probs(self.probs.expand(shape))
        u = _clamp_probs(rand(shape, dtype=self.probs.dtype))
        return ((u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature).sigmoid()

    def log_prob(self, value):
        eps = torch.finfo(value.dtype)
        y = value.clamp(eps.tiny, 1 - eps.eps)
        x = y.log() - (-y).log1p()  # the logit, as torch's SigmoidTransform inverts
        logits, x = _broadcast_all(self.logits, x)
        diff = logits - x * self.temperature
        base = self.temperature.log() + diff - 2 * diff.exp().log1p()
        return base + nnF.softplus(-x) + nnF.softplus(x)


class RelaxedOneHotCategorical(Distribution):
    """RelaxedOneHotCategorical(temperature, probs=None, logits=None): points of the simplex
    (event_shape [K]), rsample the Gumbel-softmax softmax((logits + gumbel) / temperature) (torch's
    ExpRelaxedCategorical through exp); log_prob torch's, with its change of variables."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    _derived = ("probs", "logits")  # the law inside checks the one given
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args)
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        self.temperature = _as_tensor(temperature, self.logits)
        super().__init__(self._categorical.batch_shape, self.probs.shape[-1:], validate_args)

    def rsample(self, sample_shape=Size()):
        u = _clamp_probs(rand(self._extended_shape(sample_shape), dtype=self.logits.dtype))
        scores = (self.logits - (-u.log()).log()) / self.temperature
        return (scores - scores.logsumexp(dim=-1, keepdim=True)).exp()

    def log_prob(self, value):
        k = self._categorical._num_events
        log_value = value.log()
        log_scale = math.lgamma(k) - self.temperature.log() * -(k - 1)
        score = self.logits - log_value * self.temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale - log_value.sum(-1)


# ---- Binomial, Multinomial, Geometric, HalfNormal, Chi2, OneHotCategoricalStraightThrough and
# LowRankMultivariateNormal, torch's formulas ----

def _host(v):
    """A tensor's values on the host in float64 (a sync), for numpy's draws."""
    return v.detach().numpy().astype(np.float64)


def _clamp_by_zero(x):
    """torch's (x.clamp(min=0) + x - x.clamp(max=0)) / 2: max(x, 0) whose gradient at 0 is 1/2."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """Binomial(total_count=1, probs=None, logits=None): numbers or tensors that broadcast to batch_shape.
    log_prob, mean, variance and entropy are differentiable in probs/logits, as torch's; samples are
    drawn on the host by numpy (a host read of the parameters, the stream tnet.manual_seed reseeds), as
    Gamma's. entropy needs one total_count for the whole batch, as torch's."""
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    support = constraints.dependent_property(lambda self: constraints.integer_interval(0, self.total_count),
                                             is_discrete=True)

    probs, logits = _Stored(), _Stored()  # torch's lazy ones, read through super() too

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        probs, logits = _probs_and_logits(probs, logits)
        if probs is not None:
            self.total_count, self.probs = _broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            self.logits = _probs_to_logits(self.probs)
        else:
            self.total_count, self.logits = _broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            self.probs = self.logits.sigmoid()
        self._derived = _lazy_one(probs)
        super().__init__(self.probs.shape, validate_args=validate_args)

    mean = property(lambda self: self.total_count * self.probs)
    mode = property(lambda self: F.minimum(((self.total_count + 1) * self.probs).floor(), self.total_count))
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))
    param_shape = property(lambda self: self.probs.shape)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        n, p = np.broadcast_arrays(_host(self.total_count), _host(self.probs))
        return _host_draw(init_generator().binomial(n.astype(np.int64), p, size=shape), self.probs)

    def log_prob(self, value):
        value = _as_tensor(value, self.probs)
        n = self.total_count
        log_factorial_n, log_factorial_k = (n + 1).lgamma(), (value + 1).lgamma()
        log_factorial_nmk = (n - value + 1).lgamma()
        # k*log(p) + (n - k)*log(1 - p) in logits, stable for both signs (torch's)
        normalize_term = n * _clamp_by_zero(self.logits) + n * (-self.logits.abs()).exp().log1p() - log_factorial_n
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def enumerate_support(self, expand=True):
        total = self.total_count.numpy()
        if total.size and not (total == total.flat[0]).all():
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = arange(int(total.flat[0]) + 1 if total.size else 1).to(self.probs.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    def entropy(self):
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)


def _probs_to_logits(probs, is_binary=True):
    """torch's probs_to_logits: probs clamped eps (of their dtype) into (0, 1), then log(p) - log1p(-p)
    (binary) or log(p)."""
    clamped = _clamp_probs(probs)
    return clamped.log() - (-clamped).log1p() if is_binary else clamped.log()


class Multinomial(Distribution):
    """Multinomial(total_count=1, probs=None, logits=None): counts over K classes ([..., K] parameters,
    event_shape [K]) of total_count draws. log_prob, mean and variance are differentiable, as torch's;
    samples are drawn on the host by numpy (a host read of probs). total_count is an int, as torch's;
    entropy is torch's sum over each class's Binomial counts."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    _derived = ("probs", "logits")  # the law inside checks the one given
    support = constraints.dependent_property(lambda self: constraints.multinomial(self.total_count),
                                             is_discrete=True, event_dim=1)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        super().__init__(self._categorical.batch_shape, self.probs.shape[-1:], validate_args)

    mean = property(lambda self: self.probs * self.total_count)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))
    param_shape = property(lambda self: self.probs.shape)

    def sample(self, sample_shape=Size()):
        p = _host(self.probs)
        p = p / p.sum(-1, keepdims=True)
        draw = init_generator().multinomial(self.total_count, p, size=tuple(sample_shape) + p.shape[:-1])
        return _host_draw(draw, self.probs)

    def log_prob(self, value):
        logits, value = F.broadcast_tensors(self.logits, _as_tensor(value, self.logits))
        # 0 * -inf: a class of probability 0 that was never drawn adds nothing (torch's)
        logits = F.where(F.logical_and(value == 0, logits == -math.inf), 0.0, logits)
        log_factorial_n = math.lgamma(self.total_count + 1)
        return log_factorial_n - (value + 1).lgamma().sum(-1) + (logits * value).sum(-1)

    def entropy(self):
        """n H(categorical) - log n! + sum over classes and counts k >= 1 of Binomial(n, p_i)(k) log k!, as torch's."""
        n = self.total_count
        binomial = Binomial(n, self.probs, validate_args=False)
        support = binomial.enumerate_support(expand=False)[1:]
        weights = (support + 1).lgamma()
        term2 = (binomial.log_prob(support).exp() * weights).sum([0, -1])
        return n * self._categorical.entropy() - math.lgamma(n + 1) + term2


class Geometric(Distribution):
    """Geometric(probs=None, logits=None): the number of failures before the first success, {0, 1, ...};
    numbers or tensors. Samples are drawn on the device by inversion, floor(log(u) / log1p(-p)), as torch's
    (tnet's stream: other numbers)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    probs, logits = _Stored(), _Stored()  # torch's lazy ones, read through super() too

    def __init__(self, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _binary_parameters(probs, logits)
        self._derived = _lazy_one(probs)
        super().__init__(self.probs.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not _holds(constraints.positive, self.probs):
            # torch's check beyond unit_interval: no success ever at probs 0
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                             f"of distribution {self!r} to be positive but found invalid values:\n"
                             f"{self.probs[~(self.probs > 0)]}")

    mean = property(lambda self: 1.0 / self.probs - 1.0)
    mode = property(lambda self: zeros_like(self.probs))
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs)

    def sample(self, sample_shape=Size()):
        tiny = torch.finfo(self.probs.dtype).tiny
        with no_grad():
            u = rand(self._extended_shape(sample_shape), dtype=self.probs.dtype).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        value, probs = _broadcast_all(value, self.probs)
        probs = F.where(F.logical_and(probs == 1, value == 0), 0.0, probs)  # 0 * log(0) is 0 at p = 1
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return nnF.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class _Folded(Distribution):
    """|X| for X ~ base_dist, a symmetric law about 0 (Normal or Cauchy of loc 0): rsample, log_prob (-inf
    below 0), cdf, icdf and entropy from the base's, differentiable, as torch's HalfNormal and HalfCauchy
    (TransformedDistributions of their base by AbsTransform there: here plain Distributions with base_dist)."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, base_dist, validate_args=None):
        self.base_dist = base_dist
        super().__init__(base_dist.batch_shape, validate_args=validate_args)

    scale = property(lambda self: self.base_dist.scale)
    mode = property(lambda self: zeros_like(self.scale))

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value):
        value = _as_tensor(value, self.scale)
        return F.where(value >= 0, self.base_dist.log_prob(value) + math.log(2), -math.inf)

    def cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """HalfNormal(scale): |X| for X ~ Normal(0, scale), a number or a tensor (see _Folded)."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0.0, scale, validate_args=False), validate_args)

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    variance = property(lambda self: self.scale.pow(2) * (1 - 2 / math.pi))


class HalfCauchy(_Folded):
    """HalfCauchy(scale): |X| for X ~ Cauchy(0, scale) (see _Folded); mean inf, variance the Cauchy's (inf)."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0.0, scale, validate_args=False), validate_args)

    mean = property(lambda self: full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype))
    variance = property(lambda self: self.base_dist.variance)


class NegativeBinomial(Distribution):
    """NegativeBinomial(total_count, probs=None, logits=None): the successes before total_count failures (torch's
    convention: probs is each trial's success probability); numbers or tensors. log_prob, mean, mode and
    variance are differentiable, as torch's; samples are drawn on the host by numpy, Poisson of Gamma as
    torch's (a host read of the parameters)."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    probs, logits = _Stored(), _Stored()  # torch's lazy ones, read through super() too

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        probs, logits = _probs_and_logits(probs, logits)
        if probs is not None:
            self.total_count, self.probs = _broadcast_all(total_count, probs)
            self.logits = _probs_to_logits(self.probs)
        else:
            self.total_count, self.logits = _broadcast_all(total_count, logits)
            self.probs = self.logits.sigmoid()
        self.total_count, self._derived = self.total_count.to(self.probs.dtype), _lazy_one(probs)
        super().__init__(self.probs.shape, validate_args=validate_args)

    mean = property(lambda self: self.total_count * self.logits.exp())
    mode = property(lambda self: ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0))
    variance = property(lambda self: self.mean / (-self.logits).sigmoid())
    param_shape = property(lambda self: self.probs.shape)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        k, scale = np.broadcast_arrays(_host(self.total_count), np.exp(_host(self.logits)))
        rng = init_generator()
        return _host_draw(rng.poisson(rng.gamma(k, scale, size=shape)), self.probs)

    def log_prob(self, value):
        value = _as_tensor(value, self.probs)
        log_unnormalized = self.total_count * nnF.logsigmoid(-self.logits) + value * nnF.logsigmoid(self.logits)
        log_normalization = -(self.total_count + value).lgamma() + (1.0 + value).lgamma() + self.total_count.lgamma()
        log_normalization = F.where(self.total_count + value == 0.0, 0.0, log_normalization)
        return log_unnormalized - log_normalization


class VonMises(Distribution):
    """VonMises(loc, concentration): the circular normal on [-pi, pi); log_prob (through special.i0e) and the
    circular variance differentiable, as torch's; samples drawn on the host by numpy (a host read of the
    parameters), where torch's run Best and Fisher's rejection sampler."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = _broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    # 1 - I1(k) / I0(k), through the scaled functions (no overflow)
    variance = property(lambda self: 1 - nnF.i1e(self.concentration) / nnF.i0e(self.concentration))

    def log_prob(self, value):
        k = self.concentration
        return k * (_as_tensor(value, k) - self.loc).cos() - math.log(2 * math.pi) - (nnF.i0e(k).log() + k)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        loc, k = np.broadcast_arrays(_host(self.loc), _host(self.concentration))
        draw = init_generator().vonmises(loc, k, size=shape)
        return _host_draw((draw + np.pi) % (2 * np.pi) - np.pi, self.loc)


class FisherSnedecor(Distribution):
    """FisherSnedecor(df1, df2): the F law, numbers or tensors; log_prob, mean, mode and variance differentiable
    (NaN where torch's are undefined), as torch's; samples drawn on the host by numpy (no rsample)."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = _broadcast_all(df1, df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    mean = property(lambda self: F.where(self.df2 > 2, self.df2 / (self.df2 - 2), math.nan))
    mode = property(lambda self: F.where(self.df1 > 2, (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2),
                                         math.nan))

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        value = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return F.where(df2 > 4, value, math.nan)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        df1, df2 = np.broadcast_arrays(_host(self.df1), _host(self.df2))
        return _host_draw(init_generator().f(df1, df2, size=shape), self.df1)

    def log_prob(self, value):
        value = _as_tensor(value, self.df1)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3


class Chi2(Gamma):
    """Chi2(df): Gamma(df / 2, 1 / 2), as torch's (drawn on the host, as Gamma)."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        df, = _broadcast_all(df)
        super().__init__(0.5 * df, 0.5 * ones_like(df), validate_args)

    df = property(lambda self: self.concentration * 2)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample is the straight-through estimator: the one-hot sample forward, the
    gradient of probs backward (sample + probs - probs.detach()), as torch's (DreamerV2's latents)."""
    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        return samples + (self.probs - self.probs.detach())


def _batch_lowrank_logdet(D, capacitance_tril):
    """log det(W W^T + D) = 2 sum log diag(capacitance tril) + sum log D (the matrix determinant lemma)."""
    return 2 * _half_log_det(capacitance_tril) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x = x^T D^-1 x - |C^-1 W^T D^-1 x|^2 (Woodbury), C the capacitance's factor."""
    Wt_Dinv_x = (W.mT @ (x / D).unsqueeze(-1)).squeeze(-1)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """LowRankMultivariateNormal(loc, cov_factor, cov_diag): a normal of covariance W W^T + diag(D), loc
    [..., n], W [..., n, r], D [..., n], as torch's: log_prob and entropy through the Woodbury identity and
    the Cholesky factor of the r x r capacitance I + W^T D^-1 W (tnet.linalg.cholesky: on the host, with its
    gradient); rsample = loc + W eps_r + sqrt(D) eps_n."""
    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != (n,):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if tuple(cov_diag.shape[-1:]) != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {(n,)}")
        loc_, cov_diag_ = loc.unsqueeze(-1), cov_diag.unsqueeze(-1)
        loc_, self.cov_factor, cov_diag_ = F.broadcast_tensors(loc_, cov_factor, cov_diag_)
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        W = cov_factor / cov_diag.unsqueeze(-1).sqrt()  # D^-1/2 W
        self._capacitance_tril = cholesky(W.mT @ W + _eye_like(W.mT @ W))
        super().__init__(self.loc.shape[:-1], loc.shape[-1:], validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    variance = property(lambda self: (self._unbroadcasted_cov_factor.pow(2).sum(-1) +
                                      self._unbroadcasted_cov_diag).expand(tuple(self._batch_shape) +
                                                                          tuple(self._event_shape)))

    @property
    def covariance_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        cov = W @ W.mT + F.diag_embed(D)
        return cov.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps_w = randn(tuple(shape[:-1]) + (self.cov_factor.shape[-1],), dtype=self.loc.dtype)
        eps_d = randn(tuple(shape), dtype=self.loc.dtype)
        W = self._unbroadcasted_cov_factor
        # W eps_w for every draw: one GEMM of the draws' rows by W^T where W is one matrix (a batch of
        # draws-many tiny products otherwise)
        mixed = eps_w @ W.transpose(-1, -2) if W.dim() == 2 else (W @ eps_w.unsqueeze(-1)).squeeze(-1)
        return self.loc + mixed + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        m = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, value - self.loc,
                                       self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H.expand(self._batch_shape) if len(self._batch_shape) else H


# ---- transforms and TransformedDistribution (denisyarats' SquashedNormal, LogNormal by hand) ----


class Transform:
    """torch.distributions.transforms.Transform: y = t(x) by _call, x = t.inv(y) by _inverse, and
    log_abs_det_jacobian(x, y); cache_size=1 keeps the last pair, so that inv(t(x)) is x itself (a
    TanhTransform's atanh of a sample that rounded to +-1 stays finite), as torch's. Element-wise
    (event_dim 0) unless a subclass says."""
    bijective, sign, event_dim = False, 1, 0
    domain = codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size, self._cached = cache_size, None
        self._inv = None

    @property
    def inv(self):
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    def __call__(self, x):
        if self._cache_size and self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size and self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"

    # torch's equality (what kl_divergence of two TransformedDistributions compares): the transform itself, a
    # parameter-free one any of its class (_equal_by_class), a parameterized one by its parameters' values;
    # with __eq__ defined, transforms are unhashable, as torch's
    def __eq__(self, other):
        return self is other


def _equal_by_class(self, other):
    return isinstance(other, type(self))


def _same_values(a, b):
    """A transform parameter's equality: numbers by ==, tensors (or a number beside one) all elements equal."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return a == b
    return bool((a == b).all().item())


class _InverseTransform(Transform):
    """t.inv: t's inverse, sharing its cache."""

    def __init__(self, transform):
        super().__init__(transform._cache_size)
        self._inv, self.event_dim, self.sign = transform, transform.event_dim, transform.sign
        self.bijective, self.domain, self.codomain = transform.bijective, transform.codomain, transform.domain

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv


class ExpTransform(Transform):
    __eq__ = _equal_by_class
    bijective, codomain = True, constraints.positive
    _call, _inverse = staticmethod(lambda x: x.exp()), staticmethod(lambda y: y.log())

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    __eq__ = _equal_by_class
    bijective, codomain = True, constraints.unit_interval

    def _call(self, x):
        return x.sigmoid()

    def _inverse(self, y):
        finfo = torch.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -nnF.softplus(-x) - nnF.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); log|dy/dx| = 2 (log 2 - x - softplus(-2x)), torch's stable form."""
    __eq__ = _equal_by_class
    bijective, codomain = True, constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * (y.log1p() - (-y).log1p())  # atanh

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - nnF.softplus(-2.0 * x))


class AffineTransform(Transform):
    """y = loc + scale * x (numbers or tensors); event_dim dims summed in the Jacobian, as torch's."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size)
        self.loc, self.scale, self.event_dim = loc, scale, event_dim

    def __eq__(self, other):
        return isinstance(other, AffineTransform) and _same_values(self.loc, other.loc) and \
            _same_values(self.scale, other.scale)

    sign = property(lambda self: self.scale.sign() if isinstance(self.scale, Tensor) else math.copysign(1, self.scale))

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale if isinstance(self.scale, Tensor) else tensor(float(self.scale), dtype=x.dtype)
        result = scale.abs().log().expand(x.shape) if scale.ndim or x.ndim else scale.abs().log()
        return result.sum(tuple(range(-self.event_dim, 0))) if self.event_dim else result


class ComposeTransform(Transform):
    """The parts applied in order (ComposeTransform([]) is the identity, identity_transform); log|det J| the
    sum of the parts' at their own inputs, each summed over the dims its event_dim leaves to the compose's,
    as torch's."""

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size)
        self.parts = list(parts)
        self.event_dim = max((t.event_dim for t in self.parts), default=0)
        self.bijective = all(t.bijective for t in self.parts)
        if self.parts:
            self.domain, self.codomain = self.parts[0].domain, self.parts[-1].codomain

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    @property
    def sign(self):
        sign = 1
        for t in self.parts:
            sign = sign * t.sign
        return sign

    def _call(self, x):
        for t in self.parts:
            x = t(x)
        return x

    def _inverse(self, y):
        for t in reversed(self.parts):
            y = t.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return zeros_like(x)
        total = 0.0
        for t in self.parts:
            y_t = t(x)
            term = t.log_abs_det_jacobian(x, y_t)
            extra = self.event_dim - t.event_dim
            total = total + (term.sum(tuple(range(-extra, 0))) if extra > 0 else term)
            x = y_t
        return total

    def forward_shape(self, shape):
        for t in self.parts:
            shape = t.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for t in reversed(self.parts):
            shape = t.inverse_shape(shape)
        return shape

    def __repr__(self):
        return "ComposeTransform(\n    " + ",\n    ".join(repr(t) for t in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """base_transform with its last reinterpreted_batch_ndims batch dims taken as event dims: log|det J|
    summed over them, as torch's."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size)
        self.base_transform, self.reinterpreted_batch_ndims = base_transform, reinterpreted_batch_ndims
        self.event_dim = base_transform.event_dim + reinterpreted_batch_ndims
        self.bijective, self.sign = base_transform.bijective, base_transform.sign

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        term = self.base_transform.log_abs_det_jacobian(x, y)
        n = self.reinterpreted_batch_ndims
        return term.sum(tuple(range(-n, 0))) if n else term

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class AbsTransform(Transform):
    """y = |x|, not bijective (its inverse gives y back), as torch's."""
    __eq__ = _equal_by_class
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class PowerTransform(Transform):
    """y = x ** exponent on positive x; log|dy/dx| = log|exponent y / x|."""
    bijective, domain, codomain = True, constraints.positive, constraints.positive

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size)
        self.exponent = exponent

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and _same_values(self.exponent, other.exponent)

    sign = property(lambda self: self.exponent.sign() if isinstance(self.exponent, Tensor)
                    else math.copysign(1, self.exponent))

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def __repr__(self):
        return f"PowerTransform(exponent={self.exponent})"


class SoftplusTransform(Transform):
    """y = log(1 + exp(x)); its inverse y + log(-expm1(-y)); log|dy/dx| = -softplus(-x), as torch's."""
    __eq__ = _equal_by_class
    bijective, codomain = True, constraints.positive

    def _call(self, x):
        return nnF.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -nnF.softplus(-x)


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dim (event_dim 1), not bijective (its inverse is log y), as torch's."""
    __eq__ = _equal_by_class
    event_dim, codomain = 1, constraints.simplex

    def _call(self, x):
        return F.softmax(x, -1)

    def _inverse(self, y):
        return y.log()


class StickBreakingTransform(Transform):
    """x [..., K - 1] to a point y [..., K] of the simplex by stick breaking (z_i = sigmoid(x_i - log(K - i)),
    y_i = z_i prod_{j<i} (1 - z_j)), bijective, event_dim 1, as torch's (LogisticNormal's transform)."""
    __eq__ = _equal_by_class
    bijective, event_dim, codomain = True, 1, constraints.simplex

    def _offset(self, n, like):
        return (n + 1 - arange(1, n + 1).to(like.dtype)).log()

    def _call(self, x):
        z = (x - self._offset(x.shape[-1], x)).sigmoid()
        z_cumprod = (1 - z).cumprod(-1)
        return nnF.pad(z, [0, 1], value=1) * nnF.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = (y.shape[-1] - arange(1, y_crop.shape[-1] + 1).to(y.dtype)).log()
        sf = (1 - y_crop.cumsum(-1)).clamp(min=torch.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x.shape[-1], x)
        return (-x + nnF.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(Transform):
    """A square matrix to a lower-triangular one with a positive diagonal: its strict lower triangle kept, its
    diagonal exponentiated, as torch's (not bijective: the upper triangle is dropped)."""
    __eq__ = _equal_by_class
    event_dim, codomain = 2, constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """A square matrix to a positive-definite one, L L^T of its LowerCholeskyTransform; the inverse by a Cholesky
    factor, as torch's."""
    __eq__ = _equal_by_class
    event_dim, codomain = 2, constraints.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(cholesky(y))


def _constraint_kind(constraint):
    """The key of constraint (a Constraint, or a class of them) in a ConstraintRegistry: torch keys by the
    constraint's class, and tnet's sets share classes (_Bounded is real, positive, interval, ...), so a set of
    tnet's is keyed by torch's class name (its name's head: "_GreaterThan" for GreaterThan(lower_bound=0.0)), a
    user's subclass by itself."""
    if isinstance(constraint, type):
        return constraint
    if type(constraint) in (Constraint, _Bounded, _Independent, _Dependent):
        return "_" + repr(constraint).split("(")[0]
    return type(constraint)


class ConstraintRegistry:
    """torch.distributions.constraint_registry.ConstraintRegistry: factories from constraints to Transforms,
    register(constraint, factory) (or as a decorator) and registry(constraint) -> factory(constraint); a
    constraint with no factory raises torch's NotImplementedError."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        self._registry[_constraint_kind(constraint)] = factory
        return factory

    def __call__(self, constraint):
        kind = _constraint_kind(constraint)
        if kind not in self._registry:
            name = kind if isinstance(kind, str) else kind.__name__
            raise NotImplementedError(f"Cannot transform {name} constraints") from None
        return self._registry[kind](constraint)


# torch's two registries: biject_to(c) a bijection from the reals onto c (for HMC-like samplers that need
# log|det J|), transform_to(c) any map onto it (for optimizers); torch's factories for the sets whose transforms
# tnet has (lower_cholesky, corr_cholesky, positive_definite, cat and stack have none here: they raise)
biject_to, transform_to = ConstraintRegistry(), ConstraintRegistry()


def _to_identity(constraint):
    return identity_transform


def _to_independent(constraint):
    return IndependentTransform(biject_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


def _to_independent_any(constraint):
    return IndependentTransform(transform_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


def _to_greater_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


def _to_less_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


def _to_interval(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if isinstance(lower, numbers.Number) and lower == 0 and isinstance(upper, numbers.Number) and upper == 1:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(lower, upper - lower)])


for _registry, _independent in ((biject_to, _to_independent), (transform_to, _to_independent_any)):
    for _constraint, _factory in ((constraints.real, _to_identity), (constraints.real_vector, _independent),
                                  (constraints.positive, _to_greater_than), (constraints.nonnegative, _to_greater_than),
                                  (constraints.less_than(0.0), _to_less_than),
                                  (constraints.unit_interval, _to_interval),
                                  (constraints.half_open_interval(0.0, 1.0), _to_interval)):
        _registry.register(_constraint, _factory)  # each for the sets of _constraint's class, as torch's
biject_to.register(constraints.simplex, lambda constraint: StickBreakingTransform())
transform_to.register(constraints.simplex, lambda constraint: SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda constraint: LowerCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda constraint: PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite, lambda constraint: PositiveDefiniteTransform())


class TransformedDistribution(Distribution):
    """torch's TransformedDistribution(base_distribution, transforms): samples go through the transforms in
    order, log_prob back through their inverses, subtracting each log|det J|; cdf and icdf through the
    base's. As torch's, the base's last batch dims that the transforms' event dims take become event dims
    (an Independent), and the shapes go forward through the transforms (StickBreakingTransform's K - 1 to K)."""
    arg_constraints = {}
    support = constraints.dependent_property(lambda self: self._support())

    def _support(self):
        """torch's: the last transform's codomain, independent over the event dims beyond its own (no
        transform: the base's support)."""
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        extra = len(self.event_shape) - support.event_dim
        return constraints.independent(support, extra) if extra > 0 else support

    def __init__(self, base_distribution, transforms, validate_args=None):
        self.transforms = [transforms] if isinstance(transforms, Transform) else list(transforms)
        transform = ComposeTransform(self.transforms)
        base_shape = Size(tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape))
        base_event_dim = len(base_distribution.event_shape)
        if len(base_shape) < transform.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least {transform.event_dim}, "
                             f"but got {base_shape}.")
        forward_shape = transform.forward_shape(base_shape)
        expanded_base_shape = transform.inverse_shape(forward_shape)
        if base_shape != expanded_base_shape:
            batch_dims = len(expanded_base_shape) - base_event_dim
            base_distribution = base_distribution.expand(expanded_base_shape[:batch_dims])
        if transform.event_dim > base_event_dim:
            base_distribution = Independent(base_distribution, transform.event_dim - base_event_dim)
        self.base_dist = base_distribution
        self.has_rsample = base_distribution.has_rsample
        cut = len(forward_shape) - max(transform.event_dim, base_event_dim)
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args)

    def sample(self, sample_shape=Size()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        event_dim = len(self.event_shape)
        log_prob, y = 0.0, value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            term = transform.log_abs_det_jacobian(x, y)
            extra = event_dim - transform.event_dim
            log_prob = log_prob - (term.sum(tuple(range(-extra, 0))) if extra > 0 else term)
            y = x
        base = self.base_dist.log_prob(y)
        extra = event_dim - len(self.base_dist.event_shape)
        return log_prob + (base.sum(tuple(range(-extra, 0))) if extra > 0 else base)

    def _monotonize_cdf(self, value):
        """value, flipped about 1/2 where the transforms reverse the order (their signs' product -1), as torch's."""
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        """The base's cdf of value taken back through the transforms (its value checked by the base's cdf),
        as torch's (Weibull's, Pareto's, Kumaraswamy's and InverseGamma's too)."""
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value


# ---- torch's laws that are transformed simpler ones: Weibull, Pareto, Kumaraswamy, InverseGamma ----

_EULER = 0.5772156649015329


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): Exponential(1) by PowerTransform(1 / concentration) and
    AffineTransform(0, scale), as torch's; rsample, log_prob, mean, mode, variance and entropy differentiable."""
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = _broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        transforms = [PowerTransform(self.concentration_reciprocal), AffineTransform(0.0, self.scale)]
        super().__init__(Exponential(ones_like(self.scale), validate_args), transforms, validate_args)

    mean = property(lambda self: self.scale * (1 + self.concentration_reciprocal).lgamma().exp())
    mode = property(lambda self: self.scale * ((self.concentration - 1) / self.concentration)
                    .pow(self.concentration_reciprocal))
    variance = property(lambda self: self.scale.pow(2) * ((1 + 2 * self.concentration_reciprocal).lgamma().exp() -
                                                          (2 * (1 + self.concentration_reciprocal).lgamma()).exp()))

    def entropy(self):
        return (_EULER * (1 - self.concentration_reciprocal) + (self.scale * self.concentration_reciprocal).log()
                + 1)


class Pareto(TransformedDistribution):
    """Pareto(scale, alpha): Exponential(alpha) by ExpTransform and AffineTransform(0, scale), as torch's."""
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    support = constraints.dependent_property(lambda self: constraints.greater_than_eq(self.scale))

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = _broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args), [ExpTransform(), AffineTransform(0.0, self.scale)],
                         validate_args)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    mode = property(lambda self: self.scale)

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1, concentration0): Uniform(0, 1) by PowerTransform(1 / concentration0),
    AffineTransform(1, -1) and PowerTransform(1 / concentration1), as torch's."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = _broadcast_all(concentration1, concentration0)
        super().__init__(Uniform(zeros_like(self.concentration0), ones_like(self.concentration0), validate_args),
                         [PowerTransform(self.concentration0.reciprocal()), AffineTransform(1.0, -1.0),
                          PowerTransform(self.concentration1.reciprocal())], validate_args)

    def _moment(self, n):
        a, b = self.concentration1, self.concentration0
        return b * ((1 + n / a).lgamma() + b.lgamma() - (1 + n / a + b).lgamma()).exp()

    mean = property(lambda self: self._moment(1))
    variance = property(lambda self: self._moment(2) - self._moment(1).pow(2))

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return F.where(F.logical_or(b < 1, a < 1), math.nan, log_mode).exp()

    def entropy(self):
        t1, t0 = 1 - self.concentration1.reciprocal(), 1 - self.concentration0.reciprocal()
        H0 = (self.concentration0 + 1).digamma() + _EULER
        return t0 + t1 * H0 - self.concentration1.log() - self.concentration0.log()


class InverseGamma(TransformedDistribution):
    """InverseGamma(concentration, rate): 1 / X for X ~ Gamma(concentration, rate), as torch's (drawn on the
    host as Gamma, reparameterized through Gamma's rsample)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    _derived = ("concentration", "rate")  # its Gamma checks them

    def __init__(self, concentration, rate, validate_args=None):
        super().__init__(Gamma(concentration, rate, validate_args), PowerTransform(-1.0), validate_args)

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)
    mean = property(lambda self: F.where(self.concentration > 1, self.rate / (self.concentration - 1), math.inf))
    mode = property(lambda self: self.rate / (self.concentration + 1))
    variance = property(lambda self: F.where(self.concentration > 2, self.rate.pow(2) / (
        (self.concentration - 1).pow(2) * (self.concentration - 2)), math.inf))

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()


class LogisticNormal(TransformedDistribution):
    """LogisticNormal(loc, scale): Normal(loc, scale) over the last dim's K - 1 values taken to the K-simplex by
    StickBreakingTransform (that dim the event dim; a scalar law is one of one dim), as torch's."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    loc = property(lambda self: self.base_dist.base_dist.loc)
    scale = property(lambda self: self.base_dist.base_dist.scale)


class GeneralizedPareto(Distribution):
    """GeneralizedPareto(loc, scale, concentration): numbers or tensors that broadcast to batch_shape; log_prob,
    cdf (through the log survival function), icdf, rsample by the icdf of uniforms, mean and variance (NaN where
    undefined), entropy, as torch's (TensorFlow Probability's): a concentration within isclose of 0 takes the
    exponential limit."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True
    # [loc, loc - scale / concentration] for a negative concentration, else [loc, inf)
    support = constraints.dependent_property(lambda self: constraints.interval(
        self.loc, F.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)))

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = _broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def _safe_concentration(self):
        """(where the concentration is within isclose of 0, that concentration with 1 there)."""
        eq_zero = F.isclose(self.concentration, zeros_like(self.concentration))
        return eq_zero, F.where(eq_zero, 1.0, self.concentration)

    def rsample(self, sample_shape=Size()):
        return self.icdf(rand(self._extended_shape(sample_shape), dtype=self.loc.dtype))

    def log_prob(self, value):
        z = (value - self.loc) / self.scale
        eq_zero, c = self._safe_concentration()
        y = 1 / c + ones_like(z)
        return -self.scale.log() - F.where(eq_zero, z, F.where(y == 0, y, y * (c * z).log1p()))

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, c = self._safe_concentration()
        return F.where(eq_zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        eq_zero, c = self._safe_concentration()
        logu = (-value).log1p()
        return F.where(eq_zero, self.loc - self.scale * logu, self.loc + self.scale / c * (-c * logu).expm1())

    @property
    def mean(self):
        valid = self.concentration < 1
        return F.where(valid, self.loc + self.scale / (1 - F.where(valid, self.concentration, 0.5)), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        c = F.where(valid, self.concentration, 0.25)
        return F.where(valid, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)), math.nan)

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).expand(self._batch_shape)

    mode = property(lambda self: self.loc)


# ---- kl_divergence: torch's registry of pairs (register_kl), each pair's formula registered below ----

_KL = {}  # (type of p, type of q) -> fn(p, q)


def register_kl(type_p, type_q):
    """torch's decorator: @register_kl(P, Q) def kl(p, q) makes kl_divergence(p, q) call it for instances
    of P and Q (and their subclasses, where no closer pair is registered)."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)) or \
            not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_p and type_q to be subclasses of Distribution but got {type_p} and {type_q}")

    def decorator(fn):
        _KL[type_p, type_q] = fn
        return fn
    return decorator


def kl_divergence(p, q):
    """KL(p || q) by the registered pair closest to (type(p), type(q)) along their classes' orders (the
    fewest steps up both, p's first on a tie); an unregistered pair raises NotImplementedError, as
    torch's."""
    pairs = sorted(((i + j, i, P, Q) for i, P in enumerate(type(p).__mro__) for j, Q in enumerate(type(q).__mro__)
                    if (P, Q) in _KL), key=lambda m: m[:2])
    if not pairs:
        raise NotImplementedError(f"kl_divergence({type(p).__name__}, {type(q).__name__}) is not implemented")
    return _KL[pairs[0][2:]](p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    """Each outcome's term inf where q gives it probability 0 and 0 where p does (q's, as torch's: the
    logits of a 0 or 1 probability are clamped finite)."""
    t1 = F.where(q.probs == 0, math.inf, p.probs * (nnF.softplus(-q.logits) - nnF.softplus(-p.logits)))
    t2 = F.where(q.probs == 1, math.inf, (1 - p.probs) * (nnF.softplus(q.logits) - nnF.softplus(p.logits)))
    return F.where(p.probs == 0, 0.0, t1) + F.where(p.probs == 1, 0.0, t2)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + (-p.probs).log1p() - q._cont_bern_log_norm()
            - (-q.probs).log1p())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    """Each class's term inf where q gives it probability 0 and 0 where p does, as torch's."""
    t = F.where(q.probs == 0, math.inf, p.probs * (p.logits - q.logits))
    return F.where(p.probs == 0, 0.0, t).sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    """log of the width ratio; inf where p's support leaves q's, as torch's."""
    inside = F.logical_and(q.low <= p.low, q.high >= p.high)
    return F.where(inside, ((q.high - q.low) / (p.high - p.low)).log(), math.inf)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    (a1, b1), (a2, b2) = p._given, q._given
    lbeta = lambda a, b: a.lgamma() + b.lgamma() - (a + b).lgamma()
    return (lbeta(a2, b2) - lbeta(a1, b1) + (a1 - a2) * a1.digamma() + (b1 - b2) * b1.digamma() +
            (a2 - a1 + b2 - b1) * (a1 + b1).digamma())


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio, loc_abs_diff = p.scale / q.scale, (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    return (q.concentration * (p.rate / q.rate).log() + q.concentration.lgamma() - p.concentration.lgamma() +
            (p.concentration - q.concentration) * p.concentration.digamma() +
            (q.rate - p.rate) * (p.concentration / p.rate))


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):  # torch's transformed pair: the same exp of both, so their Normals' KL
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _EULER_GAMMA
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + t2 + t3 - (1 + _EULER_GAMMA)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p, sum_q = p.concentration.sum(-1), q.concentration.sum(-1)
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return (sum_p.lgamma() - sum_q.lgamma() - (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1) +
            ((p.concentration - q.concentration) * t4).sum(-1))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    pL, qL = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    shape = tuple(F.broadcast_shapes(pL.shape, qL.shape))
    term2 = solve_triangular(qL.expand(shape), pL.expand(shape), upper=False).pow(2).sum((-2, -1))
    term3 = _batch_mahalanobis(qL, q.loc - p.loc)
    return _half_log_det(qL) - _half_log_det(pL) + 0.5 * (term2 + term3 - p.event_shape[0])


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence of Independents with different reinterpreted_batch_ndims")
    return p._sum_rightmost(kl_divergence(p.base_dist, q.base_dist))


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    """Only for p.total_count <= q.total_count (else inf) with the same counts, as torch's; a larger
    p.total_count than q's is inf, unequal ones raise NotImplementedError."""
    if (p.total_count.numpy() < q.total_count.numpy()).any():
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return F.where(p.total_count > q.total_count, math.inf, kl)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):  # Chyzak and Nielsen (arXiv:1905.10965), as torch's
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return F.where(p.support.lower_bound < q.support.lower_bound, math.inf, result)


@register_kl(_Folded, _Folded)
def _kl_folded_folded(p, q):
    """torch's HalfNormal and HalfCauchy are TransformedDistributions by AbsTransform, whose pair (below) is their
    bases' KL: the same here (HalfCauchy's pair, and HalfNormal beside HalfCauchy's NotImplementedError)."""
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    """The bases' KL where both apply equal transforms (torch's transform equality) to the same event shape;
    else NotImplementedError, as torch's."""
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError("kl_divergence of TransformedDistributions by unequal transforms")
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer between two laws of one family, as torch's: p's natural
    parameters detached (no gradient reaches p's parameters through it, as torch's), the log normalizer's
    gradient by tnet.autograd.grad."""
    from .autograd import grad
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_nparams = [param.detach().requires_grad_() for param in p._natural_params]
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q._natural_params) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q._natural_params, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


# ---- the multivariate normals' pairs with a low-rank one (torch's: Woodbury's inverse of q's covariance) ----

def _batch_trace_XXT(m):
    """trace(m m^T) over the last two dims."""
    return m.pow(2).sum((-2, -1))


def _check_event_shapes(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between {type(p).__name__} and {type(q).__name__} with different event "
                         "shapes cannot be computed")


def _lowrank_inverse_factor(q):
    """A = C^-1 W^T D^-1 of a low-rank q (C its capacitance's factor): q's inverse covariance is D^-1 - A^T A."""
    Wt_Dinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return solve_triangular(q._capacitance_tril, Wt_Dinv, upper=False)


def _lowrank_logdet_and_mahalanobis(q, p):
    return (_batch_lowrank_logdet(q._unbroadcasted_cov_diag, q._capacitance_tril),
            _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc,
                                       q._capacitance_tril))


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    _check_event_shapes(p, q)
    q_logdet, term3 = _lowrank_logdet_and_mahalanobis(q, p)
    term1 = q_logdet - _batch_lowrank_logdet(p._unbroadcasted_cov_diag, p._capacitance_tril)
    # trace(inv(q cov) p cov) = trace([qD^-1 - A^T A] (pD + pW pW^T))
    pW, pD, qD = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, q._unbroadcasted_cov_diag
    A = _lowrank_inverse_factor(q)
    term2 = ((pD / qD).sum(-1) + _batch_trace_XXT(pW * qD.rsqrt().unsqueeze(-1)) -
             _batch_trace_XXT(A * pD.sqrt().unsqueeze(-2)) - _batch_trace_XXT(A @ pW))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    _check_event_shapes(p, q)
    q_logdet, term3 = _lowrank_logdet_and_mahalanobis(q, p)
    pL, qD = p._unbroadcasted_scale_tril, q._unbroadcasted_cov_diag
    term1 = q_logdet - 2 * _half_log_det(pL)
    # trace(inv(q cov) p cov) = trace([qD^-1 - A^T A] pL pL^T)
    term2 = _batch_trace_XXT(pL * qD.rsqrt().unsqueeze(-1)) - _batch_trace_XXT(_lowrank_inverse_factor(q) @ pL)
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    _check_event_shapes(p, q)
    qL, pW, pD = q._unbroadcasted_scale_tril, p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    term1 = 2 * _half_log_det(qL) - _batch_lowrank_logdet(pD, p._capacitance_tril)
    term3 = _batch_mahalanobis(qL, q.loc - p.loc)
    # trace(inv(qL qL^T) (pW pW^T + pD)), solve_triangular broadcasting the batch dims
    term2 = (_batch_trace_XXT(solve_triangular(qL, pW, upper=False)) +
             _batch_trace_XXT(solve_triangular(qL, F.diag_embed(pD.sqrt()), upper=False)))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


# ---- pairs of different laws (torch's; inf where p's support leaves q's) ----

def _infinite_like(t):
    return full_like(t, math.inf)


def _x_log_x(t):
    return F.xlogy(t, t)  # 0 at 0


def _beta_mean(p):
    """Beta's mean from the parameters as given (differentiable: Beta.mean is computed on the host)."""
    a, b = p._given
    return a / (a + b)


def _kl_infinity(parameter):
    """The pair's KL where p's support is not within q's: inf like p's parameter (p's batch shape and the
    parameter's dtype), as torch's."""
    return lambda p, q: _infinite_like(parameter(p))


for _p, _parameter, _qs in (
        (Beta, lambda p: p._given[0], [Pareto]), (ContinuousBernoulli, attrgetter("probs"), [Pareto]),
        (Poisson, attrgetter("rate"), [Bernoulli, Binomial]),
        (Pareto, attrgetter("scale"), [Beta, ContinuousBernoulli, Uniform]),
        (Exponential, attrgetter("rate"), [Beta, ContinuousBernoulli, Pareto, Uniform]),
        (Gamma, attrgetter("concentration"), [Beta, ContinuousBernoulli, Pareto, Uniform]),
        (Gumbel, attrgetter("loc"), [Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform]),
        (Laplace, attrgetter("loc"), [Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform]),
        (Normal, attrgetter("loc"), [Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform])):
    for _q in _qs:
        register_kl(_p, _q)(_kl_infinity(_parameter))


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() - _beta_mean(p) * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * _beta_mean(p)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    a, b = p._given
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (a.digamma() - (a + b).digamma())
    return -p.entropy() + t2 - t3 + q.rate * _beta_mean(p)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    a, b = p._given
    E_beta, var_normal = _beta_mean(p), q.scale.pow(2)
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    t3 = (E_beta * (1 - E_beta) / (a + b + 1) + E_beta.pow(2)) * 0.5
    return -p.entropy() + t2 + (t3 - q.loc * E_beta + q.loc.pow(2) * 0.5) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return F.where(F.logical_or(q.low > p.support.lower_bound, q.high < p.support.upper_bound), math.inf, result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + q.scale.log()
    t3 = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    """inf where q.low >= 0 or q.high <= 1: torch's condition (a q inside [0, 1] is inf, as one that leaves it
    would be)."""
    result = -p.entropy() + (q.high - q.low).log()
    return F.where(F.logical_or(q.low >= p.support.lower_bound, q.high <= p.support.upper_bound), math.inf, result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * ratio.log() + ratio + q.concentration.lgamma() + q.concentration * _EULER_GAMMA -
            (1 + _EULER_GAMMA))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    scale_rate_prod, loc_scale_ratio = p.rate * q.scale, q.loc / q.scale
    t2 = loc_scale_ratio.exp() * scale_rate_prod / (scale_rate_prod + 1)
    return scale_rate_prod.log() - 1 - loc_scale_ratio + t2 + scale_rate_prod.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal, rate_sqr = q.scale.pow(2), p.rate.pow(2)
    t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi).log()
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var_normal


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    c = p.concentration
    beta_scale_prod, loc_scale_ratio = p.rate * q.scale, q.loc / q.scale
    t1 = (c - 1) * c.digamma() - c.lgamma() - c
    t2 = beta_scale_prod.log() + c / beta_scale_prod
    t3 = loc_scale_ratio.exp() * (1 + beta_scale_prod.reciprocal()).pow(-c) - loc_scale_ratio
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    c = p.concentration
    var_normal, beta_sqr = q.scale.pow(2), p.rate.pow(2)
    t1 = 0.5 * (beta_sqr * var_normal * 2 * math.pi).log() - c - c.lgamma()
    t2 = 0.5 * (c.pow(2) + c) / beta_sqr
    return t1 + (c - 1) * c.digamma() + (t2 - q.loc * c / p.rate + 0.5 * q.loc.pow(2)) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    param_ratio = p.scale / q.scale
    t1 = (param_ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * param_ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_EULER_GAMMA + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var_normal = q.scale.pow(2)
    scale_sqr_var_ratio = p.scale.pow(2) / var_normal
    t1 = 0.5 * (2 * scale_sqr_var_ratio / math.pi).log()
    t2 = 0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)
    return -t1 + scale_sqr_var_ratio + t2 / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_scale_ratio, loc_scale_ratio = p.loc / q.scale, q.loc / q.scale
    var_scale_sqr_ratio = (p.scale / q.scale).pow(2)
    t3 = (-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio).exp()
    return (-var_scale_sqr_ratio.log() * 0.5 + mean_scale_ratio - loc_scale_ratio + t3 -
            0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    loc_diff_scale_ratio = loc_diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * loc_diff_scale_ratio.pow(2)).exp()
    t3 = loc_diff * F.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -(p.scale / q.scale).log() + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate_prod = p.scale * q.rate
    result = ((p.alpha / scale_rate_prod).log() - p.alpha.reciprocal() + p.alpha * scale_rate_prod / (p.alpha - 1)
              - 1)
    return F.where(p.alpha <= 1, math.inf, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common_term = p.scale.log() + p.alpha.reciprocal()
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = p.alpha.log() - common_term + t2 + (1 - q.concentration) * common_term + t4 - 1
    return F.where(p.alpha <= 1, math.inf, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal, common_term = 2 * q.scale.pow(2), p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common_term.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common_term - q.loc).pow(2)
    return F.where(p.alpha <= 2, math.inf, t1 - p.alpha.reciprocal() + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b = q._given
    common_term = p.high - p.low
    t2 = (a - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - common_term) / common_term
    t3 = (b - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + common_term) / common_term
    t4 = a.lgamma() + b.lgamma() - (a + b).lgamma()
    result = t3 + t4 - common_term.log() - t2
    return F.where(F.logical_or(p.high > q.support.upper_bound, p.low < q.support.lower_bound), math.inf, result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    """inf where p.high >= 1 or p.low <= 0, torch's condition."""
    result = -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()
    return F.where(F.logical_or(p.high >= q.support.upper_bound, p.low <= q.support.lower_bound), math.inf, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return F.where(p.low < q.support.lower_bound, math.inf, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    common_term = p.high - p.low
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - common_term) / common_term
    result = -common_term.log() + t2 + t3 + q.rate * (p.high + p.low) / 2
    return F.where(p.low < q.support.lower_bound, math.inf, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    common_term = q.scale / (p.high - p.low)
    high_loc_diff, low_loc_diff = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    t1 = common_term.log() + 0.5 * (high_loc_diff + low_loc_diff)
    return t1 - common_term * ((-high_loc_diff).exp() - (-low_loc_diff).exp())


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common_term = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (common_term.pow(2) / 12 + t3) / q.scale.pow(2)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    support_uniform = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * support_uniform).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - support_uniform) / support_uniform
    return F.where(p.low < q.support.lower_bound, math.inf, t2 * (q.alpha + 1) - t1)


__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "ConstraintRegistry", "ContinuousBernoulli", "Dirichlet", "Distribution", "ExpTransform", "Exponential", "ExponentialFamily",
           "FisherSnedecor",
           "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform",
           "InverseGamma", "Kumaraswamy", "Laplace", "LogNormal", "LogisticNormal", "LowRankMultivariateNormal",
           "LowerCholeskyTransform",
           "MixtureSameFamily", "PositiveDefiniteTransform",
           "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PowerTransform", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
           "StickBreakingTransform", "StudentT", "TanhTransform", "Transform", "TransformedDistribution", "Uniform",
           "VonMises", "Weibull", "biject_to", "constraints", "identity_transform", "kl_divergence", "register_kl",
           "transform_to"]

class lazy_property:
    """torch.distributions.utils.lazy_property: a method computed at its first read, then stored on the instance
    under its name (a plain attribute thereafter)."""
    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _logits_to_probs(logits, is_binary=False):
    """torch's logits_to_probs: sigmoid (binary) or softmax over the last dim."""
    return logits.sigmoid() if is_binary else nnF.softmax(logits, dim=-1)


def _standard_normal(shape, dtype=None, device=None):
    return randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1) if dim > 0 else value


utils = types.ModuleType(f"{__name__}.utils", "torch.distributions.utils' helpers")
utils.__dict__.update(broadcast_all=_broadcast_all, clamp_probs=_clamp_probs, logits_to_probs=_logits_to_probs,
                      probs_to_logits=lambda probs, is_binary=False: _probs_to_logits(probs, is_binary),
                      lazy_property=lazy_property, euler_constant=0.57721566490153286060,
                      _standard_normal=_standard_normal, _sum_rightmost=_sum_rightmost)
sys.modules[utils.__name__] = utils

# torch.distributions' submodules, modules of their own in sys.modules: `from torch.distributions.normal import
# Normal` ports
for _name, _names in (("distribution", ["Distribution"]), ("exp_family", ["ExponentialFamily"]),
                      ("normal", ["Normal"]), ("bernoulli", ["Bernoulli"]), ("beta", ["Beta"]),
                      ("continuous_bernoulli", ["ContinuousBernoulli"]),
                      ("categorical", ["Categorical"]), ("independent", ["Independent"]),
                      ("kl", ["kl_divergence", "register_kl"]), ("uniform", ["Uniform"]),
                      ("one_hot_categorical", ["OneHotCategorical", "OneHotCategoricalStraightThrough"]),
                      ("mixture_same_family", ["MixtureSameFamily"]), ("laplace", ["Laplace"]),
                      ("exponential", ["Exponential"]), ("gamma", ["Gamma"]), ("dirichlet", ["Dirichlet"]),
                      ("multivariate_normal", ["MultivariateNormal"]), ("relaxed_bernoulli", ["RelaxedBernoulli"]),
                      ("relaxed_categorical", ["RelaxedOneHotCategorical"]), ("gumbel", ["Gumbel"]),
                      ("cauchy", ["Cauchy"]), ("log_normal", ["LogNormal"]), ("poisson", ["Poisson"]),
                      ("logistic_normal", ["LogisticNormal"]),
                      ("studentT", ["StudentT"]), ("transformed_distribution", ["TransformedDistribution"]),
                      ("binomial", ["Binomial"]), ("multinomial", ["Multinomial"]), ("geometric", ["Geometric"]),
                      ("half_normal", ["HalfNormal"]), ("half_cauchy", ["HalfCauchy"]), ("chi2", ["Chi2"]),
                      ("negative_binomial", ["NegativeBinomial"]), ("weibull", ["Weibull"]), ("pareto", ["Pareto"]),
                      ("kumaraswamy", ["Kumaraswamy"]), ("inverse_gamma", ["InverseGamma"]),
                      ("von_mises", ["VonMises"]), ("fishersnedecor", ["FisherSnedecor"]),
                      ("generalized_pareto", ["GeneralizedPareto"]),
                      ("lowrank_multivariate_normal", ["LowRankMultivariateNormal"]),
                      ("constraint_registry", ["ConstraintRegistry", "biject_to", "transform_to"]),
                      ("transforms", ["Transform", "AbsTransform", "AffineTransform", "ComposeTransform",
                                      "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
                                      "PositiveDefiniteTransform", "PowerTransform", "SigmoidTransform",
                                      "SoftmaxTransform", "SoftplusTransform", "StickBreakingTransform",
                                      "TanhTransform", "identity_transform"])):
    _module = types.ModuleType(f"{__name__}.{_name}", f"torch.distributions.{_name}'s {', '.join(_names)}")
    for _n in _names:
        setattr(_module, _n, globals()[_n])
    sys.modules[_module.__name__] = _module
    globals()[_name] = _module
sys.modules[constraints.__name__] = constraints
