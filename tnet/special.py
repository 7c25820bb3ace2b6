"""torch.special's functions that tnet computes: the element-wise ones of tnet's top level under
torch.special's names, and a few composed of them. Others (Bessel functions, zeta, the orthogonal
polynomials, ndtri, log_ndtr, ...) are not there: using one raises AttributeError."""
import math

from .functional import softmax as _softmax
from .functional import log_softmax as _log_softmax
from .functional.pointwise import (digamma, eq, erf, erfc, erfinv, exp2, expm1, gt, lgamma, log1p, logit, lt, mul, neg,
                                   polygamma, round, sigmoid, sinc, where, xlogy)
from .functional.reduce import logsumexp

expit = sigmoid
gammaln = lgamma
psi = digamma

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p", "log_softmax",
           "logit", "logsumexp", "ndtr", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]


def softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _log_softmax(input, dim, dtype=dtype)


def ndtr(input):
    """The standard normal CDF, (1 + erf(x / sqrt(2))) / 2, as erfc(-x / sqrt(2)) / 2 (accurate in
    the lower tail)."""
    return mul(erfc(mul(input, -1.0 / math.sqrt(2.0))), 0.5)


def entr(input):
    """-x log(x) for x > 0, 0 at 0, -inf below (NaN kept), as torch.special.entr."""
    return where(lt(input, 0.0), -math.inf, where(gt(input, 0.0), neg(xlogy(input, input)), mul(input, 0.0)))


def xlog1py(input, other):
    """x * log1p(y), 0 where x is 0 (unless y is NaN), as torch.special.xlog1py."""
    return where(eq(input, 0.0), where(eq(other, other), 0.0, other), mul(input, log1p(other)))

