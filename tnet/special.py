"""torch.special's functions that tnet computes: the element-wise ones of tnet's top level under
torch.special's names, erfcx, log_ndtr, ndtri and the modified Bessel functions i0, i0e, i1 and i1e
and the regularized incomplete gamma functions gammainc and gammaincc (kernels/pointwise.py), and a few
composed of them (ndtr, entr, xlog1py, multigammaln). Others (the other Bessel functions, zeta, the
orthogonal polynomials, ...) are not there: using one raises AttributeError."""
import math
import numbers

import torch

from .functional import softmax as _softmax
from .functional import log_softmax as _log_softmax
from .functional.pointwise import (digamma, eq, erf, erfc, erfinv, exp2, expm1, gt, lgamma, log1p, logit, lt, mul, neg,
                                   polygamma, round, sigmoid, sinc, where, xlogy)
from .functional.pointwise import erfcx, i0, i0e, i1, i1e, log_ndtr, ndtri
from .functional.pointwise import igamma as gammainc, igammac as gammaincc
from .functional.reduce import logsumexp
from .kernels.launch import check
from .tensor import Tensor, tensor

expit = sigmoid
gammaln = lgamma
psi = digamma
modified_bessel_i0, modified_bessel_i1 = i0, i1  # torch's other names of I0 and I1

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p", "log_softmax",
           "logit", "logsumexp", "ndtr", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy",
           "erfcx", "i0", "i0e", "i1", "i1e", "log_ndtr", "modified_bessel_i0", "modified_bessel_i1", "multigammaln",
           "ndtri", "gammainc", "gammaincc"]


def multigammaln(input, p):
    """The log of the multivariate gamma function of dimension p: p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2),
    j < p, as torch.special.multigammaln (elements at or below (p - 1) / 2 give lgamma's poles and values, as
    torch's, which no longer checks them); RuntimeError for p < 1."""
    check(isinstance(p, int) and p >= 1, "p has to be greater than or equal to 1")
    out = lgamma(input)
    for j in range(1, p):
        out = out + lgamma(input - j / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


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
    """x * log1p(y), 0 where x is 0 (unless y is NaN), as torch.special.xlog1py; a number beside a
    tensor is a 0-d tensor of its float dtype (float32 beside integers), as torch takes it."""
    input, other = (tensor(float(v), dtype=w.dtype if w.is_floating_point() else torch.float32, device=w.device)
                    if isinstance(v, numbers.Real) and isinstance(w, Tensor) else v for v, w in ((input, other), (other, input)))
    return where(eq(input, 0.0), where(eq(other, other), 0.0, other), mul(input, log1p(other)))

