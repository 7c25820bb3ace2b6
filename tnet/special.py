"""torch.special's functions: the element-wise ones of tnet's top level under torch.special's names, erfcx,
log_ndtr, ndtri, the modified Bessel functions i0, i0e, i1 and i1e and the regularized incomplete gamma functions
gammainc and gammaincc (kernels/pointwise.py), a few composed of them (ndtr, entr, xlog1py, multigammaln), and,
without gradients as torch's, the Bessel functions of the first and second kind, K0 and K1, Ai, the spherical j0,
Hurwitz's zeta and the orthogonal polynomials (each a kernel OP of its name: float64 inside for the Bessel and
Airy functions, whose series cancel; float32 for the polynomials, as torch's)."""
import math
import numbers

import torch

from .functional import softmax as _softmax
from .functional import log_softmax as _log_softmax
from .functional.pointwise import (add, digamma, div, eq, erf, erfc, erfinv, exp2, expm1, graph_sum_to, gt, le, lgamma,
                                   log, log1p, logical_and, logit, lt, mul, neg, polygamma, round, sigmoid, sinc, where,
                                   xlogy)
from .functional.pointwise import ints_as_float32, erfcx, i0, i0e, i1, i1e, log_ndtr, ndtri
from .functional.pointwise import igamma as gammainc, igammac as gammaincc
from .functional.reduce import logsumexp
from .functional.inputs import check_args, write_out
from .kernels import pointwise as _pw
from .kernels.launch import InputTypeError, check, not_implemented
from .tensor import Tensor, any_requires_grad, is_grad_enabled, no_grad, record, record_composed, tensor

expit = sigmoid
gammaln = lgamma
psi = digamma
modified_bessel_i0, modified_bessel_i1 = i0, i1  # torch's other names of I0 and I1

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p", "log_softmax",
           "logit", "logsumexp", "ndtr", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy",
           "erfcx", "i0", "i0e", "i1", "i1e", "log_ndtr", "modified_bessel_i0", "modified_bessel_i1", "multigammaln",
           "ndtri", "gammainc", "gammaincc", *_pw.POLYNOMIALS, "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "spherical_bessel_j0", "zeta"]


def multigammaln(input, p):
    """The log of the multivariate gamma function of dimension p: p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2),
    j < p, as torch.special.multigammaln (elements at or below (p - 1) / 2 give lgamma's poles and values, as
    torch's, which no longer checks them); RuntimeError for p < 1."""
    check_args("special_multigammaln", "int", p=p)  # the parser's TypeError (p=1.5) before the value's check
    check(p >= 1, "p has to be greater than or equal to 1")
    out = lgamma(input + 0.0)  # torch's x + 0.0 (its offsets' last): -0.0 is +0.0 there, digamma -inf
    for j in range(1, p):
        out = out + lgamma(input - j / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


def softmax(input, dim, *, dtype=None):
    check_args("special_softmax", "int", dim=dim)  # dim required, an int (torch's parser)
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    check_args("special_log_softmax", "int", dim=dim)
    return _log_softmax(input, dim, dtype=dtype)


def ndtr(input):
    """The standard normal CDF, (1 + erf(x / sqrt(2))) / 2, as erfc(-x / sqrt(2)) / 2 (accurate in
    the lower tail)."""
    return mul(erfc(mul(input, -1.0 / math.sqrt(2.0))), 0.5)


def entr(input):
    """-x log(x) for x > 0, 0 at 0, -inf below (NaN kept), as torch.special.entr; its gradient is torch's
    g (-(1 + log(x))) everywhere: NaN below 0, inf at 0 (the pieces' own gradients gave 0 there)."""
    with no_grad():
        y = where(lt(input, 0.0), -math.inf, where(gt(input, 0.0), neg(xlogy(input, input)), add(mul(input, 0.0), 0.0)))
    return record_composed("entr", y.memory, (input,), lambda g: (mul(g, neg(add(log(input), 1.0))),), (input,))


def xlog1py(input, other):
    """x * log1p(y), 0 where x is 0 (unless y is NaN), as torch.special.xlog1py; a number beside a
    tensor is a 0-d tensor of its float dtype (float32 beside integers), as torch takes it."""
    # torch's Scalar-other rule: input's gradient is 0 where input is 0 beside a number other not > -1 (NaN too)
    number_below = isinstance(other, numbers.Real) and not other > -1.0
    input, other = (tensor(float(v), dtype=w.dtype if w.is_floating_point() else torch.float32, device=w.device)
                    if isinstance(v, numbers.Real) and isinstance(w, Tensor) else v for v, w in ((input, other), (other, input)))
    def promoted(a, b):  # both in the promoted dtype first, as torch's kernels: log1p of a float16 other in float32
        if a.dtype == b.dtype:
            return a, b
        floats = [v.memory for v in (a, b) if v.is_floating_point()]
        dtype = _pw.result_type(floats) if floats else torch.float32
        return a.to(dtype), b.to(dtype)
    with no_grad():
        a, b = promoted(input, other)
        y = where(eq(a, 0.0), where(eq(b, b), 0.0, b), mul(a, log1p(b)))

    def grads(g):  # torch's: xlog1py(g, other), 0 where input is 0 and other <= -1; g input / (other + 1)
        g, b = promoted(g, other)
        gx = where(logical_and(eq(g, 0.0), eq(b, b)), 0.0, mul(g, log1p(b)))
        gx = where(eq(input, 0.0) if number_below else logical_and(eq(input, 0.0), le(other, -1.0)), 0.0, gx)
        return graph_sum_to(gx, input), graph_sum_to(div(mul(g, input), add(other, 1.0)), other)
    return record_composed("special_xlog1py", y.memory, (input, other), grads, (input, other))



# ---- torch.special's functions of float32 and float64 tensors only (kernels in pointwise.py, each its name's OP)

def _float32_operand(name, v, arg):
    """v, a tnet Tensor or a real number, as an operand of OP `name`: a float32 tensor's memory (an integer or bool
    tensor's float32 copy, as torch promotes them), or the number; a 16-bit tensor raises torch's
    NotImplementedError (its kernels take float32 and float64 only)."""
    if isinstance(v, Tensor):
        X = v.memory
        if X.dtype in (torch.float16, torch.bfloat16):
            raise not_implemented(f"{name}_{'cuda' if X.is_cuda else 'cpu'}", X.dtype)
        return ints_as_float32(X)
    if isinstance(v, numbers.Real):  # a bool too: torch's parser takes it for a Number (zeta(x, True) is zeta(x, 1))
        return float(v)
    raise InputTypeError(f"special_{name}(): argument '{arg}' must be Tensor or Number, not {type(v).__name__}")


def _unary_special(name, text):
    def fn(input, *, out=None):
        if not isinstance(input, Tensor):
            raise InputTypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, not "
                                 f"{type(input).__name__}")
        result = Tensor(_pw.pointwise(name, _float32_operand(name, input, "input")))
        return result if out is None else write_out(name, out, result, (input,))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{text}, element-wise, as torch.special.{name}: float32 for integer and bool tensors, "
                  f"NotImplementedError for 16-bit ones, no gradient (torch's has none).")
    return fn


def _binary_special(name, text, second, backward_raises):
    """torch.special.`name`(input, `second`) ("other" or "n", torch's keyword), either a tensor or a number."""
    def compute(input, other, out):
        if not (isinstance(input, Tensor) or isinstance(other, Tensor)):
            raise InputTypeError(f"special_{name}(): at least one of input and {second} must be a Tensor")
        floats = [v.memory for v in (input, other) if isinstance(v, Tensor) and v.is_floating_point()]
        if len(floats) == 2 and _pw.result_type(floats) == torch.float32:  # a 16-bit tensor beside a float32 one
            input, other = (v.float() for v in (input, other))  # (or float16 beside bfloat16): float32, as torch's
        X, N = _float32_operand(name, input, "input"), _float32_operand(name, other, second)
        inputs = [v for v in (input, other) if isinstance(v, Tensor)]
        y = _pw.pointwise(name, X, N)
        if not (backward_raises and is_grad_enabled() and any_requires_grad(inputs)):
            result = Tensor(y)
        else:
            def backward(g):
                raise NotImplementedError(f"the derivative for '{name}' is not implemented.")
            result = record(name, y, inputs, backward)
        return result if out is None else write_out(name, out, result, inputs)

    if second == "n":
        def fn(input, n, *, out=None):
            return compute(input, n, out)
    else:
        def fn(input, other, *, out=None):
            return compute(input, other, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{text}, element-wise over input and {second} broadcast (either may be a number), as "
                  f"torch.special.{name}: float32 for integer and bool tensors, NotImplementedError for 16-bit "
                  f"ones; " + ("its backward raises NotImplementedError, as torch's." if backward_raises else
                               "no gradient (torch's has none)."))
    return fn


_UNARY = {
    "airy_ai": "the Airy function Ai(x) (NaN at +-inf, as torch's)",
    "bessel_j0": "the Bessel function of the first kind J0(x)",
    "bessel_j1": "the Bessel function of the first kind J1(x)",
    "bessel_y0": "the Bessel function of the second kind Y0(x), -inf at 0, NaN below",
    "bessel_y1": "the Bessel function of the second kind Y1(x), -inf at 0, NaN below",
    "modified_bessel_k0": "the modified Bessel function of the second kind K0(x), inf at 0, NaN below",
    "modified_bessel_k1": "the modified Bessel function of the second kind K1(x), inf at 0, NaN below",
    "scaled_modified_bessel_k0": "exp(x) K0(x)",
    "scaled_modified_bessel_k1": "exp(x) K1(x)",
    "spherical_bessel_j0": "the spherical Bessel function j0(x) = sin(x) / x, 1 at 0",
}
(airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, modified_bessel_k0, modified_bessel_k1, scaled_modified_bessel_k0,
 scaled_modified_bessel_k1, spherical_bessel_j0) = (_unary_special(name, text) for name, text in _UNARY.items())
zeta = _binary_special("zeta", "Hurwitz's zeta function zeta(x, q) = sum over k >= 0 of (q + k)^-x (inf at x = 1 and "
                               "at q = 0, -1, ...; NaN for x < 1)", "other", backward_raises=True)
_POLYNOMIAL_TEXT = "{} of degree n (truncated to an integer; 0 below 0) at x"
(chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w,
 shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
 shifted_chebyshev_polynomial_w, hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l,
 legendre_polynomial_p) = (
    _binary_special(name, _POLYNOMIAL_TEXT.format(name.replace("_", " ")), "n", backward_raises=False) for name in _pw.POLYNOMIALS)
