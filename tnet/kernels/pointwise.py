"""Pointwise kernels, of two kinds.

Broadcasting: arithmetic with PyTorch's broadcasting, element-wise functions, activations and
their gradients, all through one kernel whose OP is a compile-time name.

Operands are tensors of any strides (stride 0 on broadcast axes), or Python numbers; float32,
float16 or bfloat16, computed in fp32, the output in their promoted dtype (result_type).
Comparisons, logical ops and where also take int64, int32 and bool tensors: integer operands
compare exactly (in int64) with each other and with integer numbers, and comparisons and logical
ops give bool tensors. The output is dense: channels-last when the first operand of the output's full shape is, else
contiguous. The launcher walks the axes in the output's memory order and merges those that
every operand steps through evenly, so dense operands laid out alike (a residual sum of two
channels-last activations) run as one flat pass, and a channels-last activation plus a
[1, C, 1, 1] bias as a 2-D one.

Flat: ReLU forward and backward, in-place add and scale, each a kernel of its own over the flat
memory of dense tensors laid out alike (contiguous or channels-last, see check_like), whose
operands may differ in dtype: the tape's gradient sums and the fused steps call these, where a
broadcast's strides would cost host time and registers for nothing."""
import functools

import numpy as np
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from .._device import INTERPRET
from .autotune import autotune, fit, launch_kept
from .copy import copy_
from .launch import (BLOCK_CONFIGS, FLOATS, INTEGERS, InputDtypeError, check, check_float, grid1d, is_channels_last,
                     is_flat, kept, memory_format)

POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
               "legendre_polynomial_p")  # torch.special's, each an OP of (x, n)
# Operand count of each OP. Backward OPs take the output gradient first. A fourth operand is
# always a Python number (softplus's threshold, addcmul's value): the kernel's s3.
ARITY = {"neg": 1, "exp": 1, "log": 1, "sqrt": 1, "gelu": 1, "gelu_tanh": 1, "sigmoid": 1, "tanh": 1, "silu": 1,
         "add": 2, "sub": 2, "mul": 2, "div": 2, "pow": 2, "pow_number": 2, "tie": 2, "route": 2,
         "sqrt_backward": 2, "gelu_backward": 2, "gelu_tanh_backward": 2, "sigmoid_backward": 2,
         "tanh_backward": 2, "silu_backward": 2,
         "pow_backward": 3, "pow_number_backward": 3, "reciprocal_backward": 2, "div_other_backward": 3, "muldiv": 3,
         # activations with a parameter (a number operand: leaky_relu's slope, elu's alpha, clamp's bounds)
         "relu": 1, "hardswish": 1, "hardsigmoid": 1, "abs": 1, "leaky_relu": 2, "elu": 3, "clamp": 3, "clamp_which": 4,
         "hardswish_backward": 2, "hardsigmoid_backward": 2, "abs_backward": 2,
         "leaky_relu_backward": 3, "elu_backward": 4, "clamp_backward": 3, "hardtanh_backward": 4,
         "sqdiff": 2, "std_backward": 3, "var_backward": 3, "add_finite": 2,
         # torch's element-wise functions (their gradients reuse mul and muldiv where they can)
         "floor": 1, "ceil": 1, "round": 1, "trunc": 1, "sign": 1, "log1p": 1, "expm1": 1, "sin": 1, "cos": 1,
         "rsqrt": 1, "reciprocal": 1, "log2": 1, "log10": 1, "exp2": 1, "erf": 1,
         "log1p_backward": 2, "expm1_backward": 2, "sin_backward": 2, "cos_backward": 2, "rsqrt_backward": 2,
         "erf_backward": 2,
         # more activations; shrink_backward is hardshrink's and softshrink's
         "softplus": 3, "mish": 1, "selu": 1, "logsigmoid": 1, "softsign": 1, "tanhshrink": 1, "threshold": 3,
         "hardshrink": 2, "softshrink": 2,
         "softplus_backward": 4, "mish_backward": 2, "selu_backward": 2, "logsigmoid_backward": 2,
         "softsign_backward": 2, "tanhshrink_backward": 2, "threshold_backward": 3, "shrink_backward": 3,
         # tensor math: lerp(start, end, weight), input + value * t1 * t2 (or / t2)
         "lerp": 3, "addcmul": 4, "addcdiv": 4,
         # bool results (logical ops read any nonzero as true); where(condition, a, b)
         "eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2,
         "logical_not": 1, "logical_and": 2, "logical_or": 2, "logical_xor": 2, "bitwise_not": 1, "where": 3,
         "bitwise_and": 2, "bitwise_or": 2, "bitwise_xor": 2, "signbit": 1,
         # division's remainders and quotients (integers too), more functions and their gradients;
         # atan2_backward(g, u, v, sign) = sign g u / (u^2 + v^2), atan2's two gradients
         "fmod": 2, "remainder": 2, "floor_divide": 2, "frac": 1, "sinh": 1, "cosh": 1, "asin": 1, "acos": 1,
         "atan": 1, "atan2": 2, "hypot": 2, "logaddexp": 2, "xlogy": 2, "logit": 1,
         "sinh_backward": 2, "cosh_backward": 2, "asin_backward": 2, "acos_backward": 2, "atan_backward": 2,
         "atan2_backward": 4, "logaddexp_backward": 3, "xlogy_backward": 3, "logit_backward": 4,
         # more functions (special ones: erfc ... digamma), their gradients, and two-operand ones; gcd
         # and lcm take integers only, heaviside integers too
         "tan": 1, "acosh": 1, "asinh": 1, "atanh": 1, "erfc": 1, "erfinv": 1, "lgamma": 1, "digamma": 1, "sinc": 1,
         "tan_backward": 2, "acosh_backward": 2, "asinh_backward": 2, "atanh_backward": 2, "erfc_backward": 2,
         "erfinv_backward": 2, "lgamma_backward": 2, "digamma_backward": 2, "sinc_backward": 2,
         "copysign": 2, "heaviside": 2, "ldexp_int": 2, "logaddexp2": 2, "logaddexp2_backward": 3, "gcd": 2, "lcm": 2,
         # integer shifts; frexp's two parts; nextafter(a, b, c: one unit of the last place in fp32's bits)
         "bitwise_left_shift": 2, "bitwise_right_shift": 2, "frexp_mantissa": 1, "frexp_exponent": 1,
         "nextafter": 3, "polygamma": 3,
         # fake quantisation: the integer code of x (a = x, b = 1 / scale, c = zero point, d = 1 for a float
         # zero point) and its value back ((a - c) * b, b = scale)
         "quantize": 4, "dequantize": 3,
         # torch.special's erfcx, log_ndtr, ndtri and modified Bessel functions, and their gradients
         "erfcx": 1, "log_ndtr": 1, "ndtri": 1, "i0": 1, "i0e": 1, "i1": 1, "i1e": 1,
         "erfcx_backward": 2, "log_ndtr_backward": 2, "ndtri_backward": 2, "i0_backward": 2, "i0e_backward": 2,
         "i1_backward": 2, "i1e_backward": 2,
         "ipow": 2,  # integers: a ** b
         # the gradient of a Gamma(alpha, 1) draw x in alpha (g, alpha, x): Gamma.rsample's reparameterization
         "standard_gamma_grad": 3,
         # the gradient of a Dirichlet draw's x in its alpha (x, alpha, the total concentration): Dirichlet.rsample's
         "dirichlet_grad": 3,
         # torch.maximum and minimum, and their gradient (g, x, the other operand, 1 for maximum or -1)
         "maximum": 2, "minimum": 2, "extremum_backward": 4,
         # the regularized incomplete gamma functions P(a, x) and Q(a, x), and their gradient in x (g, a, x, sign)
         "igamma": 2, "igammac": 2, "igamma_backward": 4,
         # torch.special's Bessel and Airy functions (no gradients, as torch's), Hurwitz's zeta (x, q) and the
         # orthogonal polynomials (x, n)
         "bessel_j0": 1, "bessel_j1": 1, "bessel_y0": 1, "bessel_y1": 1, "modified_bessel_k0": 1,
         "modified_bessel_k1": 1, "scaled_modified_bessel_k0": 1, "scaled_modified_bessel_k1": 1,
         "spherical_bessel_j0": 1, "airy_ai": 1, "zeta": 2, **{name: 2 for name in POLYNOMIALS}}
_INTERPRET = tl.constexpr(INTERPRET)  # the interpreter has no libdevice
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
BOOL_OPS = (*COMPARISONS, "logical_not", "logical_and", "logical_or", "logical_xor", "signbit")
BITWISE_OPS = ("bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
               "bitwise_right_shift")  # integer and bool operands only
INTEGER_OPS = (*BOOL_OPS, *BITWISE_OPS, "where", "add", "sub", "mul", "neg", "abs", "sign", "fmod", "remainder",
               "floor_divide", "clamp", "heaviside", "gcd", "lcm", "ipow")  # the OPs that take integer and bool tensors


@triton.jit
def tanh_from_exp(x):
    """tanh from exp (libdevice's tanh is missing from the interpreter); below |x| = 0.125, where
    1 - exp(-2|x|) would cancel, its series to x^7 (truncation error under 2e-9)."""
    a = tl.abs(x)
    t = tl.exp(-2.0 * a)
    x2 = x * x
    small = a * (1.0 + x2 * (-0.3333333333333333 + x2 * (0.13333333333333333 + x2 * -0.05396825396825397)))
    r = tl.where(a < 0.125, small, (1.0 - t) / (1.0 + t))
    return tl.where(x < 0.0, -r, r)


@triton.jit
def _pow(x, s):
    """x ** s, s a tensor of one repeated exponent: exp2(s * log2|x|), which loses about |s log2 x|
    ulps, so the common s = 1, 2 and 0.5 are exact; a negative x keeps its sign under an odd power and
    is NaN under a non-integer one (-0.0 counts as negative: (-0.0) ** -1 = -inf); x ** 0, 1 ** s and
    (-1) ** +-inf are 1, C's pow rules as in PyTorch."""
    r = tl.exp2(s * tl.log2(tl.abs(x)))
    half = s * 0.5
    odd = tl.floor(half) != half
    negative = (x < 0.0) | ((x == 0.0) & (1.0 / x < 0.0))
    whole = tl.floor(s) == s  # a non-integer power of -0.0 or -inf is +0 or +inf, of other negatives NaN
    r = tl.where(negative & whole & odd, -r, r)
    r = tl.where((x < 0.0) & (x > float("-inf")) & ~whole, float("nan"), r)
    r = tl.where(s == 2.0, x * x, tl.where(s == 0.5, tl.sqrt_rn(x), tl.where(s == 1.0, x, r)))
    one = (s == 0.0) | (x == 1.0) | ((x == -1.0) & (tl.abs(s) == float("inf")))
    return tl.where(one, 1.0, r)


@triton.jit
def _pow_number(x, s):
    """x ** s for a Python number s, as torch's pow of a tensor and a scalar: _pow, but s = -0.5 is
    1 / sqrt(x), its rsqrt ((-0.0) ** -0.5 = -inf where C's pow gives +inf)."""
    return tl.where(s == -0.5, 1.0 / tl.sqrt_rn(x), _pow(x, s))


@triton.jit
def _expm1(x):
    """exp(x) - 1 without its cancellation near 0 (Kahan's: exact where exp rounds to 1, else
    (e - 1) x / log(e), whose rounding errors cancel); far from 0 plainly e - 1 (log(0) is -inf,
    inf / log(inf) NaN)."""
    e = tl.exp(x)
    r = tl.where(e == 1.0, x, (e - 1.0) * x / tl.log(e))
    return tl.where(tl.abs(x) > 20.0, e - 1.0, r)


@triton.jit
def log1p_kahan(x):
    """log(1 + x) without its cancellation near 0 (Kahan's: x where u = 1 + x rounds to 1, else
    log(u) x / (u - 1), whose rounding errors cancel); +inf stays +inf (inf / inf would be NaN); sort.py's
    logaddexp scan calls it too."""
    u = 1.0 + x
    r = tl.where(u == 1.0, x, tl.log(u) * (x / (u - 1.0)))
    return tl.where(x == float("inf"), x, r)


@triton.jit
def _round(x):
    """x rounded to the nearest integer, ties to even (torch.round); x - floor(x) is exact below
    2^23, and from there on every float is an integer (d = 0), inf gives NaN d and stays inf. A zero
    keeps x's sign (x * 0): round(-0.4) is -0.0, as torch's rint."""
    r = tl.floor(x)
    d = x - r
    half = r * 0.5
    y = tl.where((d > 0.5) | ((d == 0.5) & (tl.floor(half) != half)), r + 1.0, r)
    return tl.where(y == 0.0, x * 0.0, y)


@triton.jit
def _atan01(t):
    """atan(t) for t in [0, 1] (Cephes' atanf: above tan(pi/8), atan(1) + atan((t - 1) / (t + 1));
    then an odd polynomial, relative error near 1e-7)."""
    big = t > 0.41421356237309503
    u = tl.where(big, (t - 1.0) / (t + 1.0), t)
    z = u * u
    p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * u + u
    return tl.where(big, 0.7853981633974483 + p, p)


@triton.jit
def _atan2(y, x):
    """atan2(y, x) as C's: the angle of (x, y) in [-pi, pi], signed zeros and infinities included
    (the interpreter has no libdevice: from _atan01 of min(|x|, |y|) / max(|x|, |y|))."""
    ax = tl.abs(x)
    ay = tl.abs(y)
    mx = tl.where(ax > ay, ax, ay)
    t = tl.where(ax > ay, ay, ax) / mx
    t = tl.where(mx == 0.0, 0.0, tl.where((ax == float("inf")) & (ay == float("inf")), 1.0, t))
    r = _atan01(t)
    r = tl.where(ay > ax, 1.5707963267948966 - r, r)
    r = tl.where((x < 0.0) | ((x == 0.0) & (1.0 / x < 0.0)), 3.141592653589793 - r, r)
    r = tl.where((y < 0.0) | ((y == 0.0) & (1.0 / y < 0.0)), -r, r)
    return tl.where((x != x) | (y != y), x + y, r)


@triton.jit
def _fmod(a, b):
    """C's fmod (integers: C's %): the remainder of a / b truncated, the sign of a. On the GPU,
    floats take libdevice's exact fmodf: Triton's float `%` there is a - b trunc(a / b), which
    loses digits and gives NaN for fmod(x, inf)."""
    if a.dtype.is_floating() and not _INTERPRET:
        return libdevice.fmod(a, b)
    else:
        return a % b


@triton.jit
def _remainder(a, b):
    """Python's %: fmod moved by b where its sign differs from b's (torch.remainder)."""
    r = _fmod(a, b)
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def _floor_divide(a, b):
    """floor(a / b) as torch's div(rounding_mode="floor"): for floats c10's div_floor_floating,
    from (a - fmod(a, b)) / b (exact where floor(a / b) would round), IEEE a / b where b is 0."""
    if a.dtype.is_floating():
        mod = _fmod(a, b)
        q = tl.div_rn(a - mod, b)
        q = tl.where((mod != 0.0) & ((b < 0.0) != (mod < 0.0)), q - 1.0, q)
        f = tl.floor(q)
        f = tl.where(q - f > 0.5, f + 1.0, f)
        f = tl.where(q == 0.0, 0.0 * tl.div_rn(a, b), f)
        y = tl.where(b == 0.0, tl.div_rn(a, b), f)
    else:
        r = a % b
        y = tl.where((r != 0) & ((r < 0) != (b < 0)), a // b - 1, a // b)
    return y


@triton.jit
def _halfturns(x):
    """x - 2 round(x / 2), in [-1, 1]: the same angle pi x, exact (every float from 2^24 up is an
    even integer: 0 there; inf gives NaN)."""
    r = x - 2.0 * tl.floor(0.5 * x + 0.5)
    return tl.where(tl.abs(x) < 16777216.0, r, x * 0.0)


@triton.jit
def _sinpi(x):
    """sin(pi x), exactly 0 at the integers, without pi x's rounding: from _halfturns folded to
    [-0.5, 0.5] (1 - r is exact there)."""
    r = _halfturns(x)
    r = tl.where(r > 0.5, 1.0 - r, tl.where(r < -0.5, -1.0 - r, r))
    return tl.sin(3.141592653589793 * r)


@triton.jit
def _cospi(x):
    """cos(pi x) = -sin(pi (|r| - 1/2)), r = _halfturns(x): exact zeros at the half-integers."""
    return -tl.sin(3.141592653589793 * (tl.abs(_halfturns(x)) - 0.5))


@triton.jit
def _erfc_parts(z):
    """(t, P(t)) of Numerical Recipes' erfcc for z >= 0: erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2),
    so that erfcx(z) = exp(z^2) erfc(z) = t exp(P(t)) (fractional error under 1.2e-7 for both)."""
    t = 1.0 / (1.0 + 0.5 * z)
    p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    return t, p


@triton.jit
def _erfc(x):
    """1 - erf(x) with its relative accuracy in the tail (_erfc_parts), x^2 split into an exact square of
    |x|'s top bits and a small rest, as exp's argument magnifies its rounding; 2 - erfc(-x) below 0."""
    z = tl.abs(x)
    t, p = _erfc_parts(z)
    hi = tl.floor(z * 64.0) * 0.015625
    lo = z - hi
    r = t * tl.exp(-hi * hi) * tl.exp(p - lo * (hi + z))
    r = tl.where(z > 11.0, 0.0, r)  # below float32's least subnormal; z * 64 overflows near 3e38 (inf * 0)
    return tl.where(x < 0.0, 2.0 - r, r)


@triton.jit
def _erfcx(x):
    """exp(x^2) erfc(x): t exp(P(t)) of _erfc_parts for x >= 0 (no overflow, no underflow); below 0,
    2 exp(x^2) - erfcx(-x) (inf past about -9.4, as torch's), x^2 split as in _erfc."""
    z = tl.abs(x)
    t, p = _erfc_parts(z)
    r = t * tl.exp(p)
    hi = tl.floor(tl.minimum(z, 30.0) * 64.0) * 0.015625  # past 30 exp overflows anyway (inf - inf would be NaN)
    return tl.where(x < 0.0, 2.0 * tl.exp(hi * hi) * tl.exp((z - hi) * (hi + z)) - r, r)


@triton.jit
def _log_ndtr(x):
    """log of the standard normal CDF: below 0, log(erfc(z) / 2) = log(t) + P(t) - z^2 - log 2 for
    z = -x / sqrt(2) (_erfc_parts: no underflow however far the tail); above, log1p(-erfc(x / sqrt(2)) / 2)."""
    z = -x * 0.7071067811865476
    t, p = _erfc_parts(tl.abs(z))
    lower = tl.log(t) + p - z * z - 0.6931471805599453
    upper = log1p_kahan(-0.5 * _erfc(x * 0.7071067811865476))
    return tl.where(x < 0.0, lower, upper)


@triton.jit
def _ndtri(p):
    """The standard normal quantile: Acklam's rational approximations (central, |p - 1/2| <= 0.47575, and
    the tails in sqrt(-2 log min(p, 1 - p))), then one Halley step on erfc(-x / sqrt(2)) / 2 - p, which
    keeps the lower tail's relative accuracy; -inf at 0, inf at 1, NaN outside [0, 1]."""
    q = p - 0.5
    r = q * q
    central = (((((-39.69683028665376 * r + 220.9460984245205) * r - 275.9285104469687) * r + 138.3577518672690) * r
                - 30.66479806614716) * r + 2.506628277459239) * q / (((((-54.47609879822406 * r + 161.5858368580409) * r
                - 155.6989798598866) * r + 66.80131188771972) * r - 13.28068155288572) * r + 1.0)
    u = tl.sqrt(-2.0 * tl.log(tl.minimum(p, 1.0 - p)))
    tail = (((((-0.007784894002430293 * u - 0.3223964580411365) * u - 2.400758277161838) * u - 2.549732539343734) * u
             + 4.374664141464968) * u + 2.938163982698783) / ((((0.007784695709041462 * u + 0.3224671290700398) * u
             + 2.445134137142996) * u + 3.754408661907416) * u + 1.0)
    x = tl.where(tl.abs(q) <= 0.47575, central, tl.where(p > 0.5, -tail, tail))
    e = 0.5 * _erfc(-x * 0.7071067811865476) - p
    h = e * 2.5066282746310002 * tl.exp(0.5 * x * x)
    x = x - h / (1.0 + 0.5 * x * h)
    x = tl.where(p == 0.0, float("-inf"), tl.where(p == 1.0, float("inf"), x))
    return tl.where((p < 0.0) | (p > 1.0), float("nan"), x)


@triton.jit
def _exp(x):
    """exp to float32's last digits on the GPU too, as torch's: libdevice's expf there, where tl.exp's
    exp2(x log2(e)) loses the product's rounding at large x (the interpreter's exp is numpy's)."""
    if x.dtype == tl.float32 and not _INTERPRET:
        return libdevice.exp(x)
    else:
        return tl.exp(x)


@triton.jit
def _bessel_i(x, NU: tl.constexpr, SCALED: tl.constexpr):
    """The modified Bessel function I_nu(x), nu 0 or 1 (times exp(-|x|) if SCALED): up to |x| = 12 its power
    series, (x/2)^nu sum (x^2/4)^k / (k! (k + nu)!) (positive terms, 30 of them), beyond its asymptotic series
    exp(|x|) / sqrt(2 pi |x|) sum_k prod_j ((2j - 1)^2 - 4 nu^2) / (k! (8|x|)^k) (10 terms); exp(|x|) whole, as
    torch's exp(x) chbevl(32 / x - 2) / sqrt(x): inf past 88.7, where I_nu is finite a little further; 1 / sqrt(2 pi)
    and 1 / sqrt(|x|) apart, so that the scaled form stays finite at huge |x| (2 pi |x| overflows). Odd in x for
    nu = 1."""
    z = tl.abs(x)
    t = 0.25 * z * z
    term = tl.zeros_like(z) + 1.0
    series = term
    for k in tl.static_range(1, 31):
        term = term * t / (k * (k + NU))
        series = series + term
    if NU == 1:
        series = series * 0.5 * z
    w = 1.0 / (8.0 * tl.where(z > 12.0, z, 12.0))
    a = tl.zeros_like(z) + 1.0
    asymptotic = a
    for k in tl.static_range(1, 11):
        a = a * ((2 * k - 1) * (2 * k - 1) - 4 * NU * NU) * w / k
        asymptotic = asymptotic + a
    asymptotic = asymptotic * 0.3989422804014327 / tl.sqrt(z)  # I_nu(z) exp(-z)
    if SCALED:
        r = tl.where(z <= 12.0, series * tl.exp(-z), asymptotic)
    else:
        r = tl.where(z <= 12.0, series, asymptotic * _exp(z))
    if NU == 1:
        r = tl.where(x < 0.0, -r, r)
    return tl.where(x != x, x, r)  # tl.maximum dropped a NaN


@triton.jit
def _erfinv(x):
    """The inverse of erf on [-1, 1] (Giles' single-precision polynomials in w = -log(1 - x^2)),
    +-inf at +-1, NaN outside."""
    w = -tl.log((1.0 - x) * (1.0 + x))
    u = w - 2.5
    p = 2.81022636e-08
    p = 3.43273939e-07 + p * u
    p = -3.5233877e-06 + p * u
    p = -4.39150654e-06 + p * u
    p = 0.00021858087 + p * u
    p = -0.00125372503 + p * u
    p = -0.00417768164 + p * u
    p = 0.246640727 + p * u
    p = 1.50140941 + p * u
    v = tl.sqrt(w) - 3.0
    q = -0.000200214257
    q = 0.000100950558 + q * v
    q = 0.00134934322 + q * v
    q = -0.00367342844 + q * v
    q = 0.00573950773 + q * v
    q = -0.0076224613 + q * v
    q = 0.00943887047 + q * v
    q = 1.00167406 + q * v
    q = 2.83297682 + q * v
    y = tl.where(w < 5.0, p, q) * x
    return tl.where(tl.abs(x) == 1.0, x * float("inf"), y)


@triton.jit
def _lgamma(x):
    """log|Gamma(x)| as Cephes' lgamf: below 6.5 the recurrence moves x to 2 + p, |p| <= 1/2, where a
    polynomial in p gives lgamma (log-products of the steps added or taken away); above, Stirling's
    series. x < 0 by reflection, log(pi / |sin(pi x)|) - lgamma(1 - x); inf at 0, at the negative
    integers and at +-inf, as torch's."""
    z = tl.where(x < 0.0, 1.0 - x, x)
    n = tl.floor(z + 0.5)
    p = z - n
    down = tl.zeros_like(z) + 1.0
    up = down
    for j in tl.static_range(4):  # lgamma(z) = lgamma(z - k) + log((z - 1) ... (z - k))
        down = tl.where(n > j + 2.0, down * (z - (j + 1.0)), down)
    for j in tl.static_range(2):  # lgamma(z) = lgamma(z + k) - log(z ... (z + k - 1))
        up = tl.where(n < 2.0 - j, up * (z + j), up)
    poly = ((((((6.055172732649237e-4 * p - 1.311620815545743e-3) * p + 2.863437556468661e-3) * p
               - 7.366775108654962e-3) * p + 2.058355474821512e-2) * p - 6.735323259371034e-2) * p
            + 3.224669577325661e-1) * p + 4.227843421859038e-1
    small = tl.log(down) - tl.log(up) + p * poly
    w = 1.0 / (z * z)
    big = (z - 0.5) * tl.log(z) - z + 0.9189385332046727 + (0.08333333333333333 + w * (
        -0.002777777777777778 + w * 0.0007936507936507937)) / z
    r = tl.where(z < 6.5, small, big)
    s = tl.abs(_sinpi(x))
    r = tl.where(x < 0.0, tl.where(s == 0.0, float("inf"), 1.1447298858494002 - tl.log(s) - r), r)
    return tl.where(tl.abs(x) == float("inf"), float("inf"), r)


@triton.jit
def _digamma(x):
    """Gamma'(x) / Gamma(x) (Cephes' psi): z = x (1 - x below 0) stepped up past 6 by
    psi(z) = psi(z + 1) - 1 / z, then its asymptotic series; x < 0 by reflection,
    psi(1 - x) - pi cot(pi x). -inf at +0, +inf at -0, NaN at the negative integers and -inf, as torch's."""
    z = tl.where(x < 0.0, 1.0 - x, x)
    acc = tl.zeros_like(z)
    for _ in tl.static_range(6):
        low = z < 6.0
        acc = tl.where(low, acc + 1.0 / z, acc)
        z = tl.where(low, z + 1.0, z)
    w = 1.0 / (z * z)
    r = tl.log(z) - 0.5 / z - w * (0.08333333333333333 + w * (-0.008333333333333333 + w * (
        0.003968253968253968 - w * 0.004166666666666667))) - acc
    r = tl.where(x < 0.0, r - 3.141592653589793 * _cospi(x) / _sinpi(x), r)
    return tl.where((x < 0.0) & (tl.floor(x) == x), float("nan"), r)


@triton.jit
def _standard_gamma_grad(alpha, x):
    """dx / dalpha of a Gamma(alpha, 1) draw x at fixed CDF (implicit reparameterization), torch's
    standard_gamma_grad_one: the CDF's Taylor series in x below 0.8 (0 where it gives NaN), Rice's saddle point
    expansion for alpha > 8 (its own polynomial within 10% of alpha), else a bivariate rational approximation
    in log(x / alpha) and log(alpha); each branch is computed and the applicable one kept."""
    numer = tl.full(x.shape, 1.0, tl.float32)
    denom = alpha
    series1 = numer / denom
    series2 = numer / (denom * denom)
    for i in tl.static_range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1.0
        series1 += numer / denom
        series2 += numer / (denom * denom)
    # -(d CDF / d alpha) / pdf, with the CDF's x^alpha and the pdf's x^(alpha - 1) e^-x cancelled: torch's CPU
    # kernel forms both in float64, where they do not underflow as they would in float32
    small = -x * tl.exp(x) * ((tl.log(x) - _digamma(alpha)) * series1 - series2)
    small = tl.where(small != small, 0.0, small)
    # Rice saddle point expansion for large alpha
    numer_1 = 1.0 + 24.0 * alpha * (1.0 + 12.0 * alpha)
    numer_2 = 1440.0 * (alpha * alpha) + 6.0 * x * (53.0 - 120.0 * x) - 65.0 * x * x / alpha + alpha * (
        107.0 + 3600.0 * x)
    near = numer_1 * numer_2 / (1244160.0 * (alpha * alpha) * (alpha * alpha))
    sq = tl.sqrt(8.0 * alpha)
    term2 = sq / (alpha - x)
    term3 = tl.exp(-1.5 * tl.log(x - alpha - alpha * tl.log(x / alpha)))
    term23 = tl.where(x < alpha, term2 - term3, term2 + term3)
    term1 = tl.log(x / alpha) * term23 - tl.sqrt(2.0 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
    stirling = 1.0 + 1.0 / (12.0 * alpha) * (1.0 + 1.0 / (24.0 * alpha))
    far = -stirling * x * term1 / sq
    large = tl.where((0.9 * alpha <= x) & (x <= 1.1 * alpha), near, far)
    # the bivariate rational approximation: coefficients (p's four, then q's) as polynomials in u
    u = tl.log(x / alpha)
    v = tl.log(alpha)
    c0 = 0.16009398 + u * (0.53487893 + u * 0.040121004)
    c1 = -0.094634809 + u * (0.1298071 + u * -0.0065914022)
    c2 = 0.025146376 + u * (0.065735949 + u * -0.0026286047)
    c3 = -0.0030648343 + u * (-0.0015649758 + u * -0.0013441777)
    c4 = 1.0 + u * (0.16639465 + u * 0.017050642)
    c5 = 0.32668115 + u * (0.020070113 + u * -0.0021309326)
    c6 = 0.10406089 + u * (-0.0035938915 + u * 0.00085092367)
    c7 = 0.0014179084 + u * (-0.00058392623 + u * -1.5247877e-07)
    rational = tl.exp((c0 + v * (c1 + v * (c2 + v * c3))) / (c4 + v * (c5 + v * (c6 + v * c7))))
    return tl.where(x < 0.8, small, tl.where(alpha > 8.0, large, rational))


@triton.jit
def _cubic(b, c0, c1, c2, c3):
    return c0 + b * (c1 + b * (c2 + b * c3))


@triton.jit
def _dirichlet_grad(x, alpha, total):
    """torch's dirichlet_grad_one, in float64: -(d CDF / d alpha) / pdf / (1 - x) of a Beta(alpha, total - alpha)
    draw x. Taylor series for x near 0 (and, mirrored, near 1), Rice's saddle point expansion where alpha and beta
    both pass 6 (its polynomial within a tenth of a standard deviation of the mean), else a rational correction
    in log x, log(alpha / x) and log(total) - that of the analytic x (psi(total) - psi(alpha)) / beta. Each branch
    is computed and the applicable one kept (a NaN of a series gives 0, as torch's)."""
    x = x.to(tl.float64)
    alpha = alpha.to(tl.float64)
    total = total.to(tl.float64)
    beta = total - alpha
    boundary = total * x * (1.0 - x)
    # x near 0: the series of Beta(x; alpha, beta)'s gradient in alpha
    factor = _digamma(alpha) - _digamma(total) - tl.log(x)
    numer = tl.full(x.shape, 1.0, tl.float64)
    series = numer / alpha * (factor + 1.0 / alpha)
    for i in tl.static_range(1, 11):
        numer = numer * (i - beta) * x / i
        denom = alpha + i
        series += numer / denom * (factor + 1.0 / denom)
    near0 = x * tl.exp(-beta * tl.log(1.0 - x)) * series
    near0 = tl.where(near0 != near0, 0.0, near0)
    # x near 1: minus the series of the gradient in beta at 1 - x, the roles of alpha and beta swapped
    y = 1.0 - x
    factor = _digamma(total) - _digamma(alpha)
    numer = tl.full(x.shape, 1.0, tl.float64)
    betas = tl.full(x.shape, 1.0, tl.float64)
    dbetas = tl.zeros(x.shape, tl.float64)
    series = factor / beta
    for i in tl.static_range(1, 9):
        numer = numer * (-y / i)
        dbetas = dbetas * (alpha - i) + betas
        betas = betas * (alpha - i)
        series += numer / (beta + i) * (dbetas + factor * betas)
    near1 = tl.exp((1.0 - alpha) * tl.log(x)) * series
    near1 = tl.where(near1 != near1, 0.0, near1)
    # alpha and beta large: Rice's saddle point expansion
    mean = alpha / total
    std = tl.sqrt(alpha * beta / (total + 1.0)) / total
    poly = 47.0 * x * (beta * beta) * (beta * beta) + alpha * (
        (43.0 + 20.0 * (16.0 + 27.0 * beta) * x) * (beta * beta) * beta + alpha * (
            3.0 * (59.0 + 180.0 * beta - 90.0 * x) * (beta * beta) + alpha * (
                (453.0 + 1620.0 * beta * (1.0 - x) - 455.0 * x) * beta + alpha * (8.0 * (1.0 - x) * (135.0 * beta - 11.0)))))
    prefactor_num = (1.0 + 12.0 * alpha) * (1.0 + 12.0 * beta) / (total * total)
    prefactor_den = 12960.0 * alpha * alpha * alpha * beta * beta * (1.0 + 12.0 * total)
    at_mean = prefactor_num / (1.0 - x) * poly / prefactor_den
    prefactor = -x / tl.sqrt(2.0 * alpha * beta / total)
    stirling = ((1.0 + 1.0 / (12.0 * alpha) + 1.0 / (288.0 * alpha * alpha))
                * (1.0 + 1.0 / (12.0 * beta) + 1.0 / (288.0 * beta * beta))
                / (1.0 + 1.0 / (12.0 * total) + 1.0 / (288.0 * total * total)))
    axbx = alpha * (x - 1.0) + beta * x
    term1 = (2.0 * (alpha * alpha) * (x - 1.0) + alpha * beta * (x - 1.0) - x * (beta * beta)) / (
        tl.sqrt(2.0 * alpha / beta) * total * tl.sqrt(total) * axbx * axbx)
    term2 = 0.5 * tl.log(alpha / (total * x))
    term3 = tl.sqrt(8.0 * alpha * beta / total) / axbx
    term4 = tl.exp(-1.5 * tl.log(beta * tl.log(beta / (total * (1.0 - x))) + alpha * tl.log(alpha / (total * x))))
    saddle = stirling * prefactor * (term1 + term2 * (term3 + tl.where(x < mean, term4, -term4)))
    mid = tl.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), at_mean, saddle)
    # else: the rational correction; row i of p and q holds the terms in u^i, each a quadratic in a of cubics in b
    u = tl.log(x)
    a = tl.log(alpha) - u
    b = tl.log(total) - a
    p0 = _cubic(b, 1.003668233, -0.01061107488, -0.0657888334, 0.01201642863) + a * (
        _cubic(b, 0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033) + a * (
            _cubic(b, -0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)))
    p1 = _cubic(b, 0.221950385, -0.3187676331, 0.01799915743, 0.01074823814) + a * (
        _cubic(b, -0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057) + a * (
            _cubic(b, 0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)))
    p2 = _cubic(b, -0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565) + a * (
        _cubic(b, 0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181) + a * (
            _cubic(b, 0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05)))
    q0 = _cubic(b, 1.0, -0.02924021934, -0.04438342661, 0.007285809825) + a * (
        _cubic(b, 0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521) + a * (
            _cubic(b, -0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)))
    q1 = _cubic(b, 0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273) + a * (
        _cubic(b, 0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956) + a * (
            _cubic(b, -0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)))
    q2 = _cubic(b, 0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05) + a * (
        _cubic(b, 0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05) + a * (
            _cubic(b, -0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06)))
    p = p0 + u * (p1 + u * p2)
    q = q0 + u * (q1 + u * q2)
    rational = p / q * (x * (_digamma(total) - _digamma(alpha)) / beta)
    r = tl.where((x <= 0.5) & (boundary < 2.5), near0, tl.where((x >= 0.5) & (boundary < 0.75), near1,
                 tl.where((alpha > 6.0) & (beta > 6.0), mid, rational)))
    return r.to(tl.float32)


@triton.jit
def _trigamma(x):
    """psi'(x), digamma's gradient: psi'(z) = psi'(z + 1) + 1 / z^2 up past 6, then its asymptotic
    series; x < 0.5 by reflection, pi^2 / sin^2(pi x) - psi'(1 - x), as torch's (Cephes'): sin of the float
    product pi x, so that a negative integer gives its large finite value and a huge x NaN, as torch's."""
    z = tl.where(x < 0.5, 1.0 - x, x)
    acc = tl.zeros_like(z)
    for _ in tl.static_range(6):
        low = z < 6.0
        acc = tl.where(low, acc + 1.0 / (z * z), acc)
        z = tl.where(low, z + 1.0, z)
    v = 1.0 / z
    w = v * v
    r = acc + v * (1.0 + v * (0.5 + v * (0.16666666666666666 + w * (-0.03333333333333333 + w * (
        0.023809523809523808 - w * 0.03333333333333333)))))
    s = tl.sin(3.141592653589793 * x)
    return tl.where(x < 0.5, 9.869604401089358 / (s * s) - r, r)


@triton.jit
def _hurwitz_zeta(s, q):
    """zeta(s, q) = sum over k >= 0 of (q + k)^-s, s > 1 an integer (Cephes' zeta): nine terms, then
    Euler-Maclaurin's tail at a = q + 9 with six Bernoulli terms (the divisors are (2k)! / B_2k)."""
    total = tl.zeros_like(q)
    for k in tl.static_range(9):
        total += _pow(q + k, -s)
    a = q + 9.0
    b = _pow(a, -s)
    total += b * a / (s - 1.0) + 0.5 * b
    w2 = 1.0 / (a * a)
    t = s * b / a
    total += t / 12.0
    t = t * (s + 1.0) * (s + 2.0) * w2
    total -= t / 720.0
    t = t * (s + 3.0) * (s + 4.0) * w2
    total += t / 30240.0
    t = t * (s + 5.0) * (s + 6.0) * w2
    total -= t / 1209600.0
    t = t * (s + 7.0) * (s + 8.0) * w2
    total += t / 47900160.0
    t = t * (s + 9.0) * (s + 10.0) * w2
    total -= t / 1892437580.3183792
    return total


# ---- torch.special's Bessel and Airy functions, in float64 inside (their series cancel): power series near 0,
# asymptotic expansions far out, and between them for K (and so Ai) the trapezoid rule on K's integral, which
# converges geometrically for such integrands (Trefethen & Weideman, "The exponentially convergent trapezoidal rule")


@triton.jit
def _cos_sin64(z):
    """cos z and sin z of a float64 z (libdevice's on the GPU, whose argument reduction covers every float)."""
    if _INTERPRET:
        return tl.cos(z), tl.sin(z)
    else:
        return libdevice.cos(z), libdevice.sin(z)


@triton.jit
def _hankel_pq(z, MU: tl.constexpr):
    """P and Q of Hankel's expansion of J_nu and Y_nu at z >= 12, mu = 4 nu^2: sum_k (-1)^k a_2k / z^2k and
    sum_k (-1)^k a_2k+1 / z^(2k+1), a_k = prod_j=1..k (mu - (2j - 1)^2) / (k! 8^k) (11 terms)."""
    p = tl.zeros_like(z) + 1.0
    q = tl.zeros_like(z)
    a = p
    w = 1.0 / (8.0 * z)
    for k in tl.static_range(1, 12):
        a = a * ((MU - (2 * k - 1) * (2 * k - 1)) / k) * w
        p, q = _pq_term(p, q, a, k)
    return p, q


@triton.jit
def _pq_term(p, q, a, K: tl.constexpr):
    """P and Q with term K (a) of their asymptotic expansion added (Hankel's, the Airy function's): the odd terms
    go to Q, the even ones to P, signed (-1)^(K // 2)."""
    if K % 4 == 1:
        q += a
    elif K % 4 == 2:
        p -= a
    elif K % 4 == 3:
        q -= a
    else:
        p += a
    return p, q


@triton.jit
def _bessel_j(x, NU: tl.constexpr):
    """J_nu(x), nu 0 or 1, of float64 x: up to |x| = 12 its power series (x/2)^nu sum (-x^2/4)^k / (k! (k + nu)!)
    (40 terms), beyond it Hankel's expansion, sqrt(2 / (pi z)) (P cos chi - Q sin chi), chi = z - (2 nu + 1) pi / 4
    (cos chi and sin chi from cos z and sin z, so that a large z loses no digits to chi); odd in x for nu = 1."""
    z = tl.abs(x)
    t = -0.25 * z * z
    term = tl.zeros_like(z) + 1.0
    series = term
    for k in tl.static_range(1, 41):
        term = term * t / (k * (k + NU))
        series += term
    if NU == 1:
        series = series * 0.5 * z
    far = tl.maximum(z, 12.0)
    p, q = _hankel_pq(far, 4.0 * NU * NU)
    c, s = _cos_sin64(far)
    if NU == 0:  # sqrt(2) cos chi and sqrt(2) sin chi
        cos_chi, sin_chi = c + s, s - c
    else:
        cos_chi, sin_chi = s - c, -s - c
    r = tl.where(z <= 12.0, series, tl.sqrt(0.3183098861837907 / far) * (p * cos_chi - q * sin_chi))
    if NU == 1:
        r = tl.where(x < 0.0, -r, r)
    return tl.where(x != x, x, r)  # tl.maximum dropped a NaN


@triton.jit
def _bessel_y(x, NU: tl.constexpr):
    """Y_nu(x), nu 0 or 1, of float64 x: -inf at 0, NaN below. Up to 12 its series by J_nu and harmonic numbers H_k:
    Y0 = 2/pi ((log(x/2) + gamma) J0 + sum_k>=1 (-1)^(k+1) H_k (x^2/4)^k / k!^2),
    Y1 = -2/(pi x) + 2/pi log(x/2) J1 - 1/pi sum_k>=0 (-1)^k (H_k + H_k+1 - 2 gamma) (x/2)^(2k+1) / (k! (k+1)!);
    beyond, Hankel's sqrt(2 / (pi z)) (P sin chi + Q cos chi)."""
    z = tl.where(x > 0.0, x, 1.0)
    t = -0.25 * z * z
    log_half = tl.log(0.5 * z)
    h = tl.zeros_like(z)
    if NU == 0:
        term = h + 1.0
        sums = h
        for k in tl.static_range(1, 41):
            term = term * t / (k * k)
            h += 1.0 / k
            sums -= term * h
        series = 0.6366197723675814 * ((log_half + 0.5772156649015329) * _bessel_j(z, 0) + sums)
    else:
        term = 0.5 * z
        h1 = h + 1.0
        sums = term * (h1 - 1.1544313298030657)
        for k in tl.static_range(1, 41):
            term = term * t / (k * (k + 1))
            h += 1.0 / k
            h1 += 1.0 / (k + 1)
            sums += term * (h + h1 - 1.1544313298030657)
        series = -0.6366197723675814 / z + 0.6366197723675814 * log_half * _bessel_j(z, 1) - sums * 0.3183098861837907
    far = tl.maximum(z, 12.0)
    p, q = _hankel_pq(far, 4.0 * NU * NU)
    c, s = _cos_sin64(far)
    if NU == 0:
        cos_chi, sin_chi = c + s, s - c
    else:
        cos_chi, sin_chi = s - c, -s - c
    r = tl.where(z <= 12.0, series, tl.sqrt(0.3183098861837907 / far) * (p * sin_chi + q * cos_chi))
    return tl.where(x > 0.0, r, tl.where(x == 0.0, float("-inf"), float("nan")))


@triton.jit
def _bessel_k_scaled(z, NU: tl.constexpr):
    """exp(z) K_nu(z) of float64 z >= about 1.8, any order nu: up to 20 the trapezoid rule, step 0.15 over [0, 5],
    on exp(z) K_nu(z) = int_0^inf exp(-z (cosh u - 1)) cosh(nu u) du (its error falls as exp(-2 pi^2 / (0.15^2 z))
    and the cut tail's below float64's digits); beyond, the asymptotic sqrt(pi / (2z)) sum_k a_k / z^k, a_k as in
    _hankel_pq (11 terms)."""
    step = tl.exp(tl.zeros_like(z) + 0.15)
    step_nu = tl.exp(tl.zeros_like(z) + 0.15 * NU)
    e = tl.zeros_like(z) + 1.0
    e_nu = e
    trapezoid = 0.5 * e
    for k in tl.static_range(1, 34):
        e = e * step
        e_nu = e_nu * step_nu
        trapezoid += tl.exp(-z * (0.5 * (e + 1.0 / e) - 1.0)) * (0.5 * (e_nu + 1.0 / e_nu))
    far = tl.maximum(z, 20.0)
    a = tl.zeros_like(z) + 1.0
    asymptotic = a
    w = 1.0 / (8.0 * far)
    for k in tl.static_range(1, 12):
        a = a * ((4.0 * NU * NU - (2 * k - 1) * (2 * k - 1)) / k) * w
        asymptotic += a
    return tl.where(z <= 20.0, 0.15 * trapezoid, tl.sqrt(1.5707963267948966 / far) * asymptotic)


@triton.jit
def _bessel_k(x, NU: tl.constexpr, SCALED: tl.constexpr):
    """K_nu(x), nu 0 or 1 (times exp(x) if SCALED), of float64 x: inf at 0, NaN below. Up to 2 its series by I_nu,
    K0 = -(log(x/2) + gamma) I0 + sum_k>=1 H_k (x^2/4)^k / k!^2,
    K1 = 1/x + log(x/2) I1 - x/4 sum_k>=0 (H_k + H_k+1 - 2 gamma) (x^2/4)^k / (k! (k+1)!) (20 terms); beyond,
    _bessel_k_scaled."""
    z = tl.where(x > 0.0, x, 1.0)
    t = 0.25 * z * z
    log_half = tl.log(0.5 * z)
    h = tl.zeros_like(z)
    term = h + 1.0
    i_series = term
    for k in tl.static_range(1, 21):
        term = term * t / (k * (k + NU))
        i_series += term
    term = h + 1.0
    if NU == 0:
        sums = h
        for k in tl.static_range(1, 21):
            term = term * t / (k * k)
            h += 1.0 / k
            sums += term * h
        series = sums - (log_half + 0.5772156649015329) * i_series
    else:
        h1 = h + 1.0
        sums = h1 - 1.1544313298030657
        for k in tl.static_range(1, 21):
            term = term * t / (k * (k + 1))
            h += 1.0 / k
            h1 += 1.0 / (k + 1)
            sums += term * (h + h1 - 1.1544313298030657)
        series = 1.0 / z + log_half * (0.5 * z * i_series) - 0.25 * z * sums
    large = _bessel_k_scaled(tl.maximum(z, 2.0), NU)
    if SCALED:
        r = tl.where(z <= 2.0, series * tl.exp(z), large)
    else:
        r = tl.where(z <= 2.0, series, large * tl.exp(-z))
    return tl.where(x > 0.0, r, tl.where(x == 0.0, float("inf"), float("nan")))


@triton.jit
def _airy_ai(x):
    """Ai(x) of float64 x: from -8 to 2 its Maclaurin series Ai(0) f(x) + Ai'(0) g(x),
    f = sum_k 3^k (1/3)_k x^3k / (3k)!, g = sum_k 3^k (2/3)_k x^(3k+1) / (3k+1)! (40 terms); above 2,
    sqrt(x / 3) / pi K_1/3(zeta), zeta = 2/3 x^(3/2); below -8 its asymptotic expansion,
    |x|^(-1/4) / sqrt(pi) (P sin(zeta + pi/4) - Q cos(zeta + pi/4)), P and Q of u_k / zeta^k,
    u_k = u_k-1 (6k - 5)(6k - 3)(6k - 1) / ((2k - 1) 216 k). NaN at +-inf, as torch's (and at NaN), and below
    the x whose float32 zeta, torch's -2 x sqrt(-x) / 3, overflows (its sin(inf))."""
    near = tl.minimum(tl.maximum(x, -8.0), 2.0)
    cube = near * near * near
    f = tl.zeros_like(x) + 1.0
    g = near
    term_f = f
    term_g = g
    for k in tl.static_range(1, 41):
        term_f = term_f * cube / ((3 * k - 1) * (3 * k))
        term_g = term_g * cube / ((3 * k) * (3 * k + 1))
        f += term_f
        g += term_g
    maclaurin = 0.3550280538878172 * f - 0.2588194037928068 * g
    right = tl.maximum(x, 2.0)
    zeta = (2.0 / 3.0) * right * tl.sqrt(right)
    positive = tl.sqrt(right / 3.0) * 0.3183098861837907 * _bessel_k_scaled(zeta, 1.0 / 3.0) * tl.exp(-zeta)
    left = tl.maximum(-x, 8.0)
    zeta = (2.0 / 3.0) * left * tl.sqrt(left)
    u = tl.zeros_like(x) + 1.0
    p = u
    q = tl.zeros_like(x)
    for k in tl.static_range(1, 16):
        u = u * (((6 * k - 5) * (6 * k - 3) * (6 * k - 1)) / ((2 * k - 1) * 216 * k)) / zeta
        p, q = _pq_term(p, q, u, k)
    c, s = _cos_sin64(zeta)  # sqrt(2) sin(zeta + pi/4) = s + c, sqrt(2) cos(zeta + pi/4) = c - s
    negative = ((s + c) * p - (c - s) * q) / (tl.sqrt(tl.sqrt(left)) * 2.5066282746310002)  # sqrt(2 pi)
    r = tl.where(x > 2.0, positive, tl.where(x >= -8.0, maclaurin, negative))
    overflow = -2.0 * x * tl.sqrt(left) > 3.4028234663852886e38  # float32's largest
    return tl.where((tl.abs(x) == float("inf")) | (x != x) | overflow, float("nan"), r)


@triton.jit
def _spherical_bessel_j0(x):
    """sin(x) / x of float64 x, 1 at 0 and 0 at +-inf, as torch's."""
    c, s = _cos_sin64(x)
    r = tl.where(x == 0.0, 1.0, s / x)
    return tl.where(tl.abs(x) == float("inf"), 0.0, r)


@triton.jit
def _zeta(s, q):
    """Hurwitz's zeta(s, q) as torch.special.zeta (Cephes'): inf at s = 1 and at q = 0, -1, ...; NaN for s < 1 and
    for q < 0 with a non-integer s; at s = inf (and q not an integer <= 0), 1 for q = 1, inf for 0 < q < 1, else NaN.
    polygamma's too. q < 0 (integer s) from positive arguments, which the tail's Euler-Maclaurin sum needs: with
    f = q - floor(q), 1 - f = ceil(q) - q (exact) and m = -floor(q), the terms k < m are (-1)^s (j - f)^-s,
    j = 1 .. m, so zeta(s, q) = zeta(s, f) + (-1)^s (zeta(s, 1 - f) - zeta(s, 1 - f + m)), summed in that order:
    at a half-integer q and an odd s the first two cancel exactly, as the terms do."""
    below = q < 0.0
    whole = tl.floor(q)
    rest = tl.where(below, tl.ceil(q) - q, 1.0)
    sign = tl.where(tl.floor(s * 0.5) == s * 0.5, 1.0, -1.0)
    y = _hurwitz_zeta(s, tl.where(below, q - whole, q))
    y = tl.where(below, (y + sign * _hurwitz_zeta(s, rest)) - sign * _hurwitz_zeta(s, rest - whole), y)
    y = tl.where(below & (tl.floor(s) != s), float("nan"), y)
    y = tl.where(s == float("inf"), tl.where(q == 1.0, 1.0, tl.where((q > 0.0) & (q < 1.0), float("inf"), float("nan"))), y)
    y = tl.where((q <= 0.0) & (whole == q), float("inf"), y)
    y = tl.where(s < 1.0, float("nan"), y)
    return tl.where(s == 1.0, float("inf"), y)


@triton.jit
def _orthogonal_polynomial(x, n, KIND: tl.constexpr, SHIFTED: tl.constexpr):
    """torch.special's orthogonal polynomial KIND ("t", "u", "v", "w": Chebyshev's, at 2x - 1 for the shifted ones;
    "h", "he": Hermite's; "l": Laguerre's; "p": Legendre's) of degree trunc(n) at x, as torch's: 0 for a negative
    degree (and a NaN or infinite one, which torch's integer cast makes negative); the closed values at x = +-1 (x = 0
    for Laguerre's); Chebyshev's past degree 6 (T) or 8 inside (-1, 1) from their trigonometric forms; else the
    three-term recurrence, its loop running to the largest degree among the block's lanes that recur."""
    degree = tl.where(n < 0.0, tl.ceil(n), tl.floor(n))
    degree = tl.where((n == n) & (tl.abs(n) != float("inf")), degree, -1.0)
    y = x
    if SHIFTED:
        y = x + x - 1.0
    if KIND == "t":
        first = y
    elif KIND == "u" or KIND == "h":
        first = y + y
    elif KIND == "v":
        first = y + y - 1.0
    elif KIND == "w":
        first = y + y + 1.0
    elif KIND == "l":
        first = 1.0 - y
    else:  # "he", "p"
        first = y
    none = tl.zeros_like(y) != 0.0
    edge = tl.abs(y) == 1.0  # where the closed values serve
    if KIND == "l":
        edge = y == 0.0
    elif KIND == "h" or KIND == "he":
        edge = none
    trig = none  # where the trigonometric forms serve
    if KIND == "t" or KIND == "u" or KIND == "v" or KIND == "w":
        trig = (degree > (6.0 if KIND == "t" else 8.0)) & (tl.abs(y) < 1.0)
    recurs = (degree >= 2.0) & ~edge & ~trig
    steps = tl.max(tl.where(recurs, degree, 1.0), axis=0).to(tl.int32)
    before = tl.zeros_like(y) + 1.0
    last = first
    for k in range(1, steps):  # last becomes degree k + 1's value where the degree reaches it
        f = k * 1.0
        if KIND == "t" or KIND == "u" or KIND == "v" or KIND == "w":
            following = (y + y) * last - before
        elif KIND == "h":
            following = (y + y) * last - (f + f) * before
        elif KIND == "he":
            following = y * last - f * before
        elif KIND == "l":
            following = ((f + f + 1.0 - y) * last - f * before) / (f + 1.0)
        else:
            following = ((f + f + 1.0) * y * last - f * before) / (f + 1.0)
        more = f + 1.0 <= degree
        before = tl.where(more, last, before)
        last = tl.where(more, following, last)
    r = tl.where(degree == 0.0, 1.0, last)
    odd = tl.floor(degree * 0.5) != degree * 0.5
    if KIND == "t" or KIND == "u" or KIND == "v" or KIND == "w":
        theta = _atan2(tl.sqrt_rn((1.0 - y) * (1.0 + y)), y)
        if KIND == "t":
            closed = tl.where((y > 0.0) | ~odd, 1.0, -1.0)
            trigonometric = tl.cos(degree * theta)
        elif KIND == "u":
            closed = tl.where((y > 0.0) | ~odd, degree + 1.0, -(degree + 1.0))
            sin_theta = tl.sin(theta)
            trigonometric = tl.where(sin_theta != 0.0, tl.sin((degree + 1.0) * theta) / sin_theta,
                                     (degree + 1.0) * tl.cos((degree + 1.0) * theta) / y)
        elif KIND == "v":
            closed = tl.where(y > 0.0, 1.0, tl.where(odd, -(degree + degree + 1.0), degree + degree + 1.0))
            trigonometric = tl.cos((degree + 0.5) * theta) / tl.cos(0.5 * theta)
        else:
            closed = tl.where(y > 0.0, degree + degree + 1.0, tl.where(odd, -1.0, 1.0))
            trigonometric = tl.sin((degree + 0.5) * theta) / tl.sin(0.5 * theta)
        r = tl.where(trig, trigonometric, tl.where(edge, closed, r))
    elif KIND == "l":
        r = tl.where(edge, 1.0, r)
    elif KIND == "p":
        r = tl.where(edge, tl.where((y > 0.0) | (degree == 0.0) | ~odd, 1.0, -1.0), r)
    return tl.where(degree < 0.0, 0.0, r)


# ---- the regularized incomplete gamma functions (torch.igamma, igammac): torch's algorithm (SciPy's, from
# Cephes and Boost) in fp32; each helper names the torch function it follows. The iterated ones loop while a
# lane of theirs has not converged (at most 2000 steps, as torch's): a block whose lanes take another method
# runs none of their steps.
_MACHEP = tl.constexpr(5.9604644775390625e-08)  # torch's float epsilon of these series


@triton.jit
def _lanczos_sum_expg_scaled(a):
    """Boost's Lanczos sum scaled by exp(-g) (g = 6.02468...), a ratio of two polynomials of degree 12 in a,
    as torch's ratevl: for a > 1 in 1 / a, where a ** 12 would overflow."""
    y = tl.where(a > 1.0, 1.0 / a, a)
    up = ((((((((((((0.006061842346248906 * y + 0.5098416655656676) * y + 19.519927882476175) * y
                    + 449.94455690631681) * y + 6955.9996025153761) * y + 75999.293040145426) * y
                 + 601859.61716810988) * y + 3481712.1549806459) * y + 14605578.087685068) * y
              + 43338889.324676138) * y + 86363131.288138591) * y + 103794043.11634455) * y + 56906521.913471564)
    down = (((((((((((y + 66.0) * y + 1925.0) * y + 32670.0) * y + 357423.0) * y + 2637558.0) * y + 13339535.0) * y
                 + 45995730.0) * y + 105258076.0) * y + 150917976.0) * y + 120543840.0) * y + 39916800.0) * y
    up_inv = ((((((((((((56906521.913471564 * y + 103794043.11634455) * y + 86363131.288138591) * y
                        + 43338889.324676138) * y + 14605578.087685068) * y + 3481712.1549806459) * y
                     + 601859.61716810988) * y + 75999.293040145426) * y + 6955.9996025153761) * y
                  + 449.94455690631681) * y + 19.519927882476175) * y + 0.5098416655656676) * y + 0.006061842346248906)
    down_inv = ((((((((((39916800.0 * y + 120543840.0) * y + 150917976.0) * y + 105258076.0) * y + 45995730.0) * y
                     + 13339535.0) * y + 2637558.0) * y + 357423.0) * y + 32670.0) * y + 1925.0) * y + 66.0) * y + 1.0
    return tl.where(a > 1.0, up_inv / down_inv, up / down)


@triton.jit
def _igamma_fac(a, x):
    """x^a exp(-x) / Gamma(a) (torch's _igam_helper_fac): directly where |a - x| > 0.4 a (0 below exp's
    range), else from Lanczos' sum, which keeps the cancelling a log(x) - x - lgamma(a) out."""
    direct = a * tl.log(x) - x - _lgamma(a)
    direct = tl.where(direct < -88.72283905206835, 0.0, _exp(direct))
    fac = a + 5.524680040776729  # a + g - 1/2
    res = tl.sqrt(fac / 2.718281828459045) / _lanczos_sum_expg_scaled(a)
    near = res * _exp(a - x) * _exp(a * tl.log(x / fac))
    num = x - a - 6.024680040776729 + 0.5
    far = res * _exp(a * (log1p_kahan(num / fac) - num / fac) + x * -5.524680040776729 / fac)
    return tl.where(tl.abs(a - x) > 0.4 * tl.abs(a), direct, tl.where((a < 200.0) & (x < 200.0), near, far))


@triton.jit
def _igamma_series(a, x, todo):
    """The lower function P(a, x) = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n)) on todo's lanes
    (torch's _igam_helper_series)."""
    r = a
    c = tl.zeros_like(a) + 1.0
    total = c
    n = 0
    while tl.max(todo.to(tl.int32), 0) > 0:
        r = r + 1.0
        c = tl.where(todo, c * (x / r), c)
        total = tl.where(todo, total + c, total)
        n += 1
        todo = todo & (c > _MACHEP * total) & (n < 2000)
    ax = _igamma_fac(a, x)
    return tl.where(ax == 0.0, 0.0, total * ax / a)


@triton.jit
def _igammac_series(a, x, todo):
    """The upper function Q(a, x) for small x, 1 - x^a / Gamma(a + 1) - x^a / Gamma(a) sum_n (-x)^n / (n! (a + n)),
    the first part by expm1 (torch's _igamc_helper_series)."""
    fac = tl.zeros_like(a) + 1.0
    total = tl.zeros_like(a)
    n = 0
    while tl.max(todo.to(tl.int32), 0) > 0:
        n += 1
        fac = tl.where(todo, fac * (-x / n), fac)
        term = fac / (a + n)
        total = tl.where(todo, total + term, total)
        todo = todo & (tl.abs(term) > _MACHEP * tl.abs(total)) & (n < 2000)
    logx = tl.log(x)
    return -_expm1(a * logx - _lgamma(1.0 + a)) - _exp(a * logx - _lgamma(a)) * total


@triton.jit
def _igammac_fraction(a, x, todo):
    """The upper function Q(a, x) by its continued fraction (torch's _igamc_helper_continued_fraction):
    the convergents' numerators and denominators scaled by 2^-24 once past 2^24."""
    y = 1.0 - a
    z = x + y + 1.0
    c = tl.zeros_like(a)
    pkm2 = c + 1.0
    qkm2 = x
    pkm1 = x + 1.0
    qkm1 = z * x
    ans = pkm1 / qkm1
    n = 0
    while tl.max(todo.to(tl.int32), 0) > 0:
        c += 1.0
        y += 1.0
        z += 2.0
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        r = pk / tl.where(qk != 0.0, qk, 1.0)
        t = tl.where(qk != 0.0, tl.abs((ans - r) / r), 1.0)
        ans = tl.where(todo & (qk != 0.0), r, ans)
        big = tl.abs(pk) > 16777216.0
        scale = tl.where(big, _MACHEP, 1.0)
        pkm2 = tl.where(todo, pkm1 * scale, pkm2)
        pkm1 = tl.where(todo, pk * scale, pkm1)
        qkm2 = tl.where(todo, qkm1 * scale, qkm2)
        qkm1 = tl.where(todo, qk * scale, qkm1)
        n += 1
        todo = todo & (t > _MACHEP) & (n < 2000)
    ax = _igamma_fac(a, x)
    return tl.where(ax == 0.0, 0.0, ans * ax)  # torch's early 0, before convergents that overflowed


@triton.jit
def _igamma_asymptotic(a, x, UPPER: tl.constexpr):
    """P(a, x), or Q(a, x) if UPPER, for a large and x near a: Temme's uniform expansion (DLMF 8.12.3/4, torch's
    _igam_helper_asymptotic_series) in eta = sign(x - a) sqrt(-2 (log1p(s) - s)), s = (x - a) / a, with the
    terms of its coefficient table that fp32 keeps for a > 20 (4 rows); log1p(s) - s by its series for
    |s| < 1/8, where the difference cancels."""
    s = (x - a) / a
    series = s * s * (-0.5 + s * (0.3333333333333333 + s * (-0.25 + s * (0.2 + s * (-0.16666666666666666 + s * (
        0.14285714285714285 + s * (-0.125 + s * (0.1111111111111111 - s * 0.1))))))))
    eta = tl.sqrt(tl.maximum(-2.0 * tl.where(tl.abs(s) < 0.125, series, log1p_kahan(s) - s), 0.0))
    eta = tl.where(s < 0.0, -eta, eta)
    c0 = -3.3333333333333333e-1 + eta * (8.3333333333333333e-2 + eta * (-1.4814814814814815e-2 + eta * (
        1.1574074074074074e-3 + eta * (3.527336860670194e-4 + eta * (-1.7875514403292181e-4 + eta * (
            3.9192631785224378e-5 + eta * (-2.1854485106799922e-6 + eta * -1.85406221071516e-6)))))))
    c1 = -1.8518518518518519e-3 + eta * (-3.4722222222222222e-3 + eta * (2.6455026455026455e-3 + eta * (
        -9.9022633744855967e-4 + eta * (2.0576131687242798e-4 + eta * (-4.0187757201646091e-7 + eta * (
            -1.8098550334489978e-5 + eta * 7.6491609160811101e-6))))))
    c2 = 4.1335978835978836e-3 + eta * (-2.6813271604938272e-3 + eta * (7.7160493827160494e-4 + eta * (
        2.0093878600823045e-6 + eta * (-1.0736653226365161e-4 + eta * 5.2923448829120125e-5))))
    c3 = 6.4943415637860082e-4 + eta * (2.2947209362139918e-4 + eta * (-4.6918949439525571e-4 + eta * 2.6772063206283885e-4))
    total = c0 + (c1 + (c2 + c3 / a) / a) / a
    if UPPER:
        sgn = 1.0
    else:
        sgn = -1.0
    return 0.5 * _erfc(sgn * eta * tl.sqrt(0.5 * a)) + sgn * _exp(-0.5 * a * eta * eta) * total / tl.sqrt(
        6.283185307179586 * a)


@triton.jit
def _igamma(a, x, UPPER: tl.constexpr):
    """The regularized lower incomplete gamma function P(a, x) (Q = 1 - P if UPPER) by torch's choice of
    method: the uniform expansion for a > 20 near x = a, else P's series or Q's series or continued
    fraction by where each converges, 1 - the other function where torch takes it; torch's values at the
    edges, in its order: NaN for a < 0 or x < 0; at a = 0, P = 1 for x > 0, else NaN; at x = 0, P = 0; at
    a = inf, NaN for x = inf, else P = 0; at x = inf, P = 1; elsewhere a NaN operand gives NaN."""
    inside = (a > 0.0) & (x > 0.0) & (a < float("inf")) & (x < float("inf"))
    ratio = tl.abs(x - a) / a
    near = inside & (((a > 20.0) & (a < 200.0) & (ratio < 0.3)) | ((a > 200.0) & (ratio < 4.5 / tl.sqrt(a))))
    rest = inside & ~near
    if UPPER:  # torch's calc_igammac: where P's series converges, 1 - P
        by_p = rest & (((x > 1.1) & (x < a)) | ((x <= 0.5) & (-0.4 / tl.log(x) < a))
                       | ((x > 0.5) & (x <= 1.1) & (x * 1.1 < a)))
        by_fraction = rest & (x > 1.1) & ~by_p
    else:  # torch's calc_igamma: 1 - Q where x > 1 and x > a
        by_p = rest & ~((x > 1.0) & (x > a))
        by_fraction = rest & ~by_p & (x > 1.1)
    by_q = rest & ~by_p & ~by_fraction
    p = _igamma_series(a, x, by_p)
    q = tl.where(by_fraction, _igammac_fraction(a, x, by_fraction), _igammac_series(a, x, by_q))
    if UPPER:
        y = tl.where(by_p, 1.0 - p, q)
        zero = 1.0  # the value where P is 0
    else:
        y = tl.where(by_p, p, 1.0 - q)
        zero = 0.0
    y = tl.where(near, _igamma_asymptotic(a, x, UPPER), tl.where(inside, y, float("nan")))
    # the edges in torch's order of precedence, the first last (a NaN operand gives NaN only where none applies)
    y = tl.where(x == float("inf"), 1.0 - zero, y)
    y = tl.where(a == float("inf"), tl.where(x == float("inf"), float("nan"), zero), y)
    y = tl.where(x == 0.0, zero, y)
    y = tl.where(a == 0.0, tl.where(x > 0.0, 1.0 - zero, float("nan")), y)
    return tl.where((a < 0.0) | (x < 0.0), float("nan"), y)


@triton.jit
def _ipow(a, b):
    """a ** b of int64 a and b, wrapping as torch's: by squaring over |b|'s 63 bits; b < 0 gives
    a ** |b| where a is 1 or -1, else 0 (integer division of 1 by a power)."""
    e = tl.abs(b)
    y = tl.full(a.shape, 1, tl.int64)
    p = a
    for _ in range(63):
        y = tl.where((e & 1) != 0, y * p, y)
        p = p * p
        e = e >> 1
    return tl.where((b >= 0) | (a == 1) | (a == -1), y, 0)


@triton.jit
def _gcd(a, b):
    """The greatest common divisor of |a| and |b| (int64), 0 for two zeros: Euclid's steps, as many
    as int64's worst case (consecutive Fibonacci numbers) takes."""
    a = tl.abs(a)
    b = tl.abs(b)
    for _ in range(93):
        more = b != 0
        r = a % tl.where(more, b, 1)
        a = tl.where(more, b, a)
        b = tl.where(more, r, 0)
    return a


@triton.jit
def _apply(OP: tl.constexpr, a, b, c, d, coord):
    """OP on fp32 operands (d a number); coord is the output's coordinate along the routed axis."""
    if OP == "add":
        y = a + b
    elif OP == "sub":
        y = a - b
    elif OP == "mul":
        y = a * b
    elif OP == "div":  # IEEE-rounded as torch's (the GPU's `/` on fp32 is approximate)
        y = tl.div_rn(a, b)
    elif OP == "neg":
        y = -a
    elif OP == "exp":
        y = _exp(a)
    elif OP == "log":
        y = tl.log(a)
    elif OP == "sqrt":
        y = tl.sqrt_rn(a)
    elif OP == "pow":
        y = _pow(a, b)
    elif OP == "pow_number":
        y = _pow_number(a, b)
    elif OP == "gelu":  # x Phi(x), Phi the normal CDF: 0.5 (1 + erf(x / sqrt(2)))
        y = 0.5 * a * (1.0 + tl.math.erf(a * 0.7071067811865476))
    elif OP == "gelu_tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        y = 0.5 * a * (1.0 + tanh_from_exp(0.7978845608028654 * (a + 0.044715 * a * a * a)))
    elif OP == "sigmoid":
        y = tl.sigmoid(a)
    elif OP == "tanh":
        y = tanh_from_exp(a)
    elif OP == "silu":
        y = a * tl.sigmoid(a)
    elif OP == "sqrt_backward":  # b = sqrt(x)
        y = a / (2.0 * b)
    elif OP == "gelu_backward":  # b = x: Phi(x) + x phi(x), phi the normal density
        y = a * (0.5 * (1.0 + tl.math.erf(b * 0.7071067811865476)) + b * tl.exp(-0.5 * b * b) * 0.3989422804014327)
    elif OP == "gelu_tanh_backward":  # b = x
        t = tanh_from_exp(0.7978845608028654 * (b + 0.044715 * b * b * b))
        y = a * (0.5 * (1.0 + t) + 0.5 * b * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 0.134145 * b * b))
    elif OP == "sigmoid_backward":  # b = sigmoid(x)
        y = a * b * (1.0 - b)
    elif OP == "tanh_backward":  # b = tanh(x)
        y = a * (1.0 - b * b)
    elif OP == "silu_backward":  # b = x
        s = tl.sigmoid(b)
        y = a * s * (1.0 + b * (1.0 - s))
    elif OP == "pow_backward":  # b = x, c = the exponent; 0 for x ** 0 (PyTorch's rule, also at x = 0);
        y = tl.where(c == 0.0, 0.0, a * (c * _pow(b, c - 1.0)))  # torch's order: a huge c times a 0 power is 0
    elif OP == "pow_number_backward":  # pow_backward of a number exponent c: x ** 0.5's is 0.5 rsqrt(x)
        y = tl.where(c == 0.0, 0.0, a * (c * _pow_number(b, c - 1.0)))
    elif OP == "reciprocal_backward":  # b = 1 / x: torch's -g (y y), the square first (an inf g times its
        y = -a * (b * b)                 # underflow to 0 is NaN)
    elif OP == "div_other_backward":  # b = the dividend, c = the divisor: torch's -g ((n / c) / c), from
        y = -a * ((b / c) / c)         # the operands, so that an in-place op on the quotient leaves it valid
    elif OP == "tie":  # 1 where a == b, NaN matching NaN (the ties of a max)
        y = tl.where((a == b) | ((a != a) & (b != b)), 1.0, 0.0)
    elif OP == "muldiv":
        y = a * b / c
    # Activations. NaN inputs give NaN; their gradients at NaN follow torch's CUDA kernels (whose
    # CPU vectorised loops differ there): the comparisons below are written as those kernels'.
    elif OP == "relu":
        y = tl.maximum(a, 0.0, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "hardswish":  # a NaN a stays NaN through the product
        y = a * tl.minimum(tl.maximum(a + 3.0, 0.0), 6.0) / 6.0
    elif OP == "hardswish_backward":  # b = x
        y = tl.where(b <= -3.0, 0.0, tl.where(b < 3.0, a * (b / 3.0 + 0.5), a))
    elif OP == "hardsigmoid":
        y = tl.where(a != a, a, tl.minimum(tl.maximum(a + 3.0, 0.0), 6.0) / 6.0)
    elif OP == "hardsigmoid_backward":  # b = x
        y = tl.where((b > -3.0) & (b < 3.0), a / 6.0, 0.0)
    elif OP == "leaky_relu":  # b = the negative slope
        y = tl.where(a > 0.0, a, a * b)
    elif OP == "leaky_relu_backward":  # b = x, c = the negative slope
        y = tl.where(b > 0.0, a, a * c)
    elif OP == "elu":  # b = alpha, c = the input's scale (celu's 1 / alpha)
        y = tl.where(a <= 0.0, b * _expm1(a * c), a)
    elif OP == "elu_backward":  # b = x, c = alpha, d = the input's scale
        y = tl.where(b <= 0.0, a * c * d * tl.exp(b * d), a)
    elif OP == "abs":
        y = tl.abs(a)
    elif OP == "abs_backward":  # b = x: torch's product g sgn(x), sgn 0 at 0 and NaN (a NaN or inf g gives NaN there)
        y = a * tl.where(b > 0.0, 1.0, tl.where(b < 0.0, -1.0, 0.0))
    elif OP == "clamp":  # b, c = the bounds (min(max(x, b), c), as torch's when b > c); a NaN anywhere wins
        y = tl.where((a != a) | (b != b) | (c != c), a + b + c, tl.minimum(tl.maximum(a, b), c))
    elif OP == "clamp_which":  # b, c = the bounds, d = 1 (min given) + 2 (max given): torch's gradient rule
        # 0: x takes it (min <= x <= max), 1: min (x < min < max, or x < min alone), 2: max (x > max or
        # max < min), 3: none (NaN x; x < min == max)
        to_min = (a < b) & ((b < c) | (d == 1.0))
        y = tl.where((a >= b) & (a <= c), 0.0, tl.where(to_min, 1.0, tl.where((a > c) | (c < b), 2.0, 3.0)))
    elif OP == "clamp_backward":  # b = x, c = clamp(x): g where x was kept (inclusive bounds, 0 at NaN);
        # or b = clamp_which's code, c = one of its values
        y = tl.where(b == c, a, 0.0)
    elif OP == "hardtanh_backward":  # b = x, c and d = the bounds: 0 at or outside them, g at NaN
        y = tl.where((b <= c) | (b >= d), 0.0, a)
    elif OP == "add_finite":  # a + b where b is finite, else a (a mean's correction: none beside an inf)
        y = tl.where(b - b == 0.0, a + b, a)
    elif OP == "sqdiff":  # (x - mean)^2, a variance's terms
        y = (a - b) * (a - b)
    elif OP == "std_backward":  # a = g, b = std, c = 1 / (n - correction): 0 where std is 0, as torch
        y = tl.where(b == 0.0, 0.0, a * c / b)
    elif OP == "var_backward":  # a = scaled g, b = x, c = mean
        y = a * (b - c)
    # torch's element-wise functions; sign(NaN) is 0 as torch's (0 < x) - (x < 0)
    elif OP == "floor":
        y = tl.floor(a)
    elif OP == "ceil":
        y = tl.ceil(a)
    elif OP == "round":
        y = _round(a)
    elif OP == "quantize":  # torch's code: zero_point + nearbyint(x * inv_scale), or nearbyint(x * inv_scale
        # + zero_point) for a float zero point (ties to even; apart, the two differ at ties)
        y = tl.where(d != 0.0, _round(a * b + c), _round(a * b) + c)
    elif OP == "dequantize":  # (a - c) * b rounded once, as torch's double arithmetic for a float zero point:
        # a - c split exactly into hi + lo (c is fp32, a a small integer), then one fused multiply-add
        hi = a - c
        y = tl.fma(hi, b, ((a - hi) - c) * b)
    elif OP == "trunc":
        y = tl.where(a < 0.0, tl.ceil(a), tl.floor(a))
    elif OP == "sign":  # integers too, in int64
        y = tl.where(a > 0, 1.0, tl.where(a < 0, -1.0, 0.0))
    elif OP == "log1p":
        y = log1p_kahan(a)
    elif OP == "log1p_backward":  # b = x
        y = a / (1.0 + b)
    elif OP == "expm1":
        y = _expm1(a)
    elif OP == "expm1_backward":  # b = expm1(x)
        y = a * (b + 1.0)
    elif OP == "sin":
        y = tl.sin(a)
    elif OP == "sin_backward":  # b = x
        y = a * tl.cos(b)
    elif OP == "cos":
        y = tl.cos(a)
    elif OP == "cos_backward":  # b = x
        y = -a * tl.sin(b)
    elif OP == "reciprocal":
        y = 1.0 / a
    elif OP == "rsqrt":  # a correctly rounded sqrt, then an IEEE division: rsqrt(-0.0) = -inf
        y = 1.0 / tl.sqrt_rn(a)
    elif OP == "rsqrt_backward":  # b = rsqrt(x)
        y = -0.5 * a * b * b * b
    elif OP == "log2":
        y = tl.log2(a)
    elif OP == "log10":
        y = tl.log(a) * 0.4342944819032518
    elif OP == "exp2":
        y = tl.exp2(a)
    elif OP == "erf":
        y = tl.math.erf(a)
    elif OP == "erf_backward":  # b = x: 2 / sqrt(pi) exp(-x^2)
        y = a * 1.1283791670955126 * tl.exp(-b * b)
    # more activations, each comparison written as torch's CUDA kernel's (NaN takes the else branch)
    elif OP == "softplus":  # b = beta, c = threshold: x where beta x > threshold
        y = tl.where(a * b > c, a, log1p_kahan(tl.exp(a * b)) / b)
    elif OP == "softplus_backward":  # b = x, c = beta, d = threshold
        z = tl.exp(b * c)
        y = tl.where(b * c > d, a, a * z / (z + 1.0))
    elif OP == "mish":  # x tanh(softplus(x)), without softplus's threshold, as torch's
        y = a * tanh_from_exp(log1p_kahan(tl.exp(a)))
    elif OP == "mish_backward":  # b = x
        t = tanh_from_exp(log1p_kahan(tl.exp(b)))
        y = a * (t + b * tl.sigmoid(b) * (1.0 - t * t))
    elif OP == "selu":  # scale * elu(x, alpha), torch's constants
        y = tl.where(a <= 0.0, 1.7580993408473766 * _expm1(a), 1.0507009873554805 * a)
    elif OP == "selu_backward":  # b = x
        y = tl.where(b <= 0.0, a * 1.7580993408473766 * tl.exp(b), a * 1.0507009873554805)
    elif OP == "logsigmoid":  # min(x, 0) - log1p(exp(-|x|))
        y = tl.where(a < 0.0, a, 0.0) - log1p_kahan(tl.exp(-tl.abs(a)))
    elif OP == "logsigmoid_backward":  # b = x
        z = tl.exp(-tl.abs(b))
        y = tl.where(b < 0.0, a * (1.0 - z / (1.0 + z)), a * (z / (1.0 + z)))
    elif OP == "softsign":
        y = a / (1.0 + tl.abs(a))
    elif OP == "softsign_backward":  # b = x: g / (1 + |x|)^2, NaN at +-inf as torch's composite
        s = 1.0 + tl.abs(b)
        y = tl.where(s == float("inf"), float("nan"), a / (s * s))
    elif OP == "tanhshrink":
        y = a - tanh_from_exp(a)
    elif OP == "tanhshrink_backward":  # b = x
        t = tanh_from_exp(b)
        y = a * t * t
    elif OP == "threshold":  # b = threshold, c = value
        y = tl.where(a <= b, c, a)
    elif OP == "threshold_backward":  # b = x, c = threshold
        y = tl.where(b <= c, 0.0, a)
    elif OP == "hardshrink":  # b = lambd
        y = tl.where((a >= -b) & (a <= b), 0.0, a)
    elif OP == "softshrink":  # b = lambd; a * 0 keeps NaN (and -0.0)
        y = tl.where(a > b, a - b, tl.where(a < -b, a + b, a * 0.0))
    elif OP == "shrink_backward":  # b = x, c = lambd
        y = tl.where((b >= -c) & (b <= c), 0.0, a)
    # tensor math, as torch's formulas
    elif OP == "lerp":  # a = start, b = end, c = weight: from the nearer end, by one fused multiply-add as
        # torch's kernels (end + (w - 1) (end - start): the product alone may overflow where the result does not)
        d = b - a
        y = tl.where(tl.abs(c) < 0.5, tl.fma(c, d, a), tl.fma(c - 1.0, d, b))
    elif OP == "addcmul":  # d = value; one fused multiply-add as torch's kernels (its compilers contract
        # a + (d * b) * c): inf + a product past the range stays inf, where the rounded product made NaN
        y = tl.fma(d * b, c, a)
    elif OP == "addcdiv":  # d = value
        y = a + d * (b / c)
    elif OP == "fmod":
        y = _fmod(a, b)
    elif OP == "remainder":
        y = _remainder(a, b)
    elif OP == "floor_divide":
        y = _floor_divide(a, b)
    elif OP == "frac":  # its gradient is g
        y = a - tl.where(a < 0.0, tl.ceil(a), tl.floor(a))
    elif OP == "sinh":  # expm1's: no cancellation near 0
        y = 0.5 * (_expm1(a) - _expm1(-a))
    elif OP == "sinh_backward":  # b = x
        y = a * 0.5 * (tl.exp(b) + tl.exp(-b))
    elif OP == "cosh":
        y = 0.5 * (tl.exp(a) + tl.exp(-a))
    elif OP == "cosh_backward":  # b = x
        y = a * 0.5 * (_expm1(b) - _expm1(-b))
    elif OP == "asin":  # (1 - x)(1 + x): no cancellation near |x| = 1; NaN outside [-1, 1]
        y = _atan2(a, tl.sqrt_rn((1.0 - a) * (1.0 + a)))
    elif OP == "asin_backward":  # b = x
        y = a / tl.sqrt_rn((1.0 - b) * (1.0 + b))
    elif OP == "acos":
        y = _atan2(tl.sqrt_rn((1.0 - a) * (1.0 + a)), a)
    elif OP == "acos_backward":  # b = x
        y = -a / tl.sqrt_rn((1.0 - b) * (1.0 + b))
    elif OP == "atan":  # x itself at 0 (signed zero)
        y = tl.where(a == 0.0, a, _atan2(a, tl.zeros_like(a) + 1.0))
    elif OP == "atan_backward":  # b = x
        y = a / (1.0 + b * b)
    elif OP == "atan2":  # a = y, b = x
        y = _atan2(a, b)
    elif OP == "atan2_backward":  # d g b / (b^2 + c^2), d = +-1; 0 where b^2 + c^2 is 0 (underflows too), as torch's
        r = b * b + c * c
        y = d * a * b * tl.where(r == 0.0, 0.0, 1.0 / r)
    elif OP == "hypot":  # scaled by the larger magnitude: no overflow of the squares; inf beats NaN, as C's
        ax = tl.abs(a)
        ay = tl.abs(b)
        mx = tl.where(ax > ay, ax, ay)
        q = tl.where(ax > ay, ay, ax) / mx
        y = tl.where(mx == 0.0, 0.0, mx * tl.sqrt_rn(1.0 + q * q))
        y = tl.where((a != a) | (b != b), a + b, y)
        y = tl.where((ax == float("inf")) | (ay == float("inf")), float("inf"), y)
    elif OP == "maximum":  # NaN where either is; a tie gives a (its zero's sign: torch's)
        y = tl.where((a != a) | (b != b), a + b, tl.where(a < b, b, a))
    elif OP == "minimum":
        y = tl.where((a != a) | (b != b), a + b, tl.where(a > b, b, a))
    elif OP == "extremum_backward":  # b = x, c = the other operand, d = 1 (maximum) or -1 (minimum): torch's
        # g where x wins or either is NaN, g / 2 at a tie, 0 where x loses
        y = tl.where(b * d < c * d, 0.0, tl.where(b == c, a * 0.5, a))
    elif OP == "logaddexp":  # torch's: equal infinities give themselves
        m = tl.where(a > b, a, b)
        y = tl.where((a == b) & (tl.abs(a) == float("inf")), a, m + log1p_kahan(tl.exp(-tl.abs(a - b))))
    elif OP == "logaddexp_backward":  # b = x, c = the other operand
        y = a / (1.0 + tl.exp(c - b))
    elif OP == "xlogy":  # 0 where x is 0, NaN where y is NaN (torch's)
        y = tl.where(b != b, b, tl.where(a == 0.0, 0.0, a * tl.log(b)))
    elif OP == "xlogy_backward":  # b = x, c = y: xlogy(g, y), 0 where x == 0 and y <= 0
        y = tl.where((b == 0.0) & (c <= 0.0), 0.0, tl.where(c != c, c, tl.where(a == 0.0, 0.0, a * tl.log(c))))
    elif OP == "logit":
        y = tl.log(a / (1.0 - a))
    elif OP == "logit_backward":  # b = x, c and d = the bounds (c < 0: no eps, NaN outside [0, 1])
        y = tl.where(b == 0.0, a * float("inf"), a / (b * (1.0 - b)))  # g * inf at -0.0 too, as torch's
        y = tl.where(c < 0.0, tl.where((b < 0.0) | (b > 1.0), float("nan"), y), tl.where((b < c) | (b > d), 0.0, y))
    elif OP == "tan":
        y = tl.sin(a) / tl.cos(a)
    elif OP == "tan_backward":  # b = tan(x)
        y = a * (1.0 + b * b)
    elif OP == "acosh":  # log1p(t + sqrt(t (t + 2))), t = x - 1: accurate near 1; log(2x) where x^2 would overflow
        t = a - 1.0
        y = tl.where(a > 1e8, tl.log(a) + 0.6931471805599453, log1p_kahan(t + tl.sqrt_rn(t * (t + 2.0))))
        y = tl.where(a < 1.0, float("nan"), y)
    elif OP == "acosh_backward":  # b = x; +0 at x = -1 (not -0: inf, as torch's)
        s = (b - 1.0) * (b + 1.0)
        y = a / tl.sqrt_rn(tl.where(s == 0.0, 0.0, s))
    elif OP == "asinh":  # odd: log1p(|x| + x^2 / (1 + sqrt(1 + x^2))) signed, x itself at 0 (-0.0)
        z = tl.abs(a)
        r = tl.where(z > 1e8, tl.log(z) + 0.6931471805599453, log1p_kahan(z + z * z / (1.0 + tl.sqrt_rn(1.0 + z * z))))
        y = tl.where(a < 0.0, -r, tl.where(a == 0.0, a, r))
    elif OP == "asinh_backward":  # b = x
        y = a / tl.sqrt_rn(b * b + 1.0)
    elif OP == "atanh":  # (log1p(x) - log1p(-x)) / 2: accurate near 0 and near +-1
        y = 0.5 * (log1p_kahan(a) - log1p_kahan(-a))
    elif OP == "atanh_backward":  # b = x
        y = a / ((1.0 - b) * (1.0 + b))
    elif OP == "erfc":
        y = _erfc(a)
    elif OP == "erfc_backward":  # b = x
        y = -a * 1.1283791670955126 * tl.exp(-b * b)
    elif OP == "erfcx":
        y = _erfcx(a)
    elif OP == "erfcx_backward":  # b = x: 2 x erfcx(x) - 2 / sqrt(pi)
        y = a * (2.0 * b * _erfcx(b) - 1.1283791670955126)
    elif OP == "log_ndtr":
        y = _log_ndtr(a)
    elif OP == "log_ndtr_backward":  # b = x: the normal density over the CDF, exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi)
        y = a * tl.exp(-0.5 * b * b - _log_ndtr(b)) * 0.3989422804014327
    elif OP == "ndtri":
        y = _ndtri(a)
    elif OP == "ndtri_backward":  # b = ndtri(p): sqrt(2 pi) exp(y^2 / 2)
        y = a * 2.5066282746310002 * tl.exp(0.5 * b * b)
    elif OP == "i0":
        y = _bessel_i(a, 0, False)
    elif OP == "i0_backward":  # b = x: I1(x)
        y = a * _bessel_i(b, 1, False)
    elif OP == "i0e":
        y = _bessel_i(a, 0, True)
    elif OP == "i0e_backward":  # b = x: i1e(x) - sign(x) i0e(x)
        y = a * (_bessel_i(b, 1, True) - tl.where(b > 0.0, 1.0, tl.where(b < 0.0, -1.0, 0.0)) * _bessel_i(b, 0, True))
    elif OP == "i1":
        y = _bessel_i(a, 1, False)
    elif OP == "i1_backward":  # b = x: I0(x) - I1(x) / x; 1/2 where |x| <= float32's eps or NaN, as torch's
        y = a * tl.where(tl.abs(b) > 1.1920928955078125e-07, _bessel_i(b, 0, False) - _bessel_i(b, 1, False) / b, 0.5)
    elif OP == "i1e":
        y = _bessel_i(a, 1, True)
    elif OP == "i1e_backward":  # b = x: i0e(x) - i1e(x) (sign(x) + 1 / x); 1/2 as i1's
        sgn = tl.where(b > 0.0, 1.0, -1.0)
        y = a * tl.where(tl.abs(b) > 1.1920928955078125e-07,
                         _bessel_i(b, 0, True) - _bessel_i(b, 1, True) * (sgn + 1.0 / b), 0.5)
    elif OP == "erfinv":
        y = _erfinv(a)
    elif OP == "erfinv_backward":  # b = erfinv(x): sqrt(pi) / 2 exp(y^2)
        y = a * 0.886226925452758 * tl.exp(b * b)
    elif OP == "lgamma":
        y = _lgamma(a)
    elif OP == "lgamma_backward":  # b = x
        y = a * _digamma(b)
    elif OP == "standard_gamma_grad":  # a = g, b = alpha, c = the draw x
        y = a * _standard_gamma_grad(b, c)
    elif OP == "dirichlet_grad":  # a = the draw x, b = alpha, c = the total concentration
        y = _dirichlet_grad(a, b, c)
    elif OP == "digamma":
        y = _digamma(a)
    elif OP == "digamma_backward":  # b = x
        y = a * _trigamma(b)
    elif OP == "sinc":  # sin(pi x) / (pi x) of the float product pi x, 1 at 0, as torch's (NaN where pi x overflows)
        t = 3.141592653589793 * a
        y = tl.where(a == 0.0, 1.0, tl.sin(t) / t)
    elif OP == "sinc_backward":  # b = x, t = pi x (the float product): (t cos t - sin t) / (t x), torch's formula
        # (NaN where t overflows), its series where that cancels (|t| < 1/2)
        t = 3.141592653589793 * b
        t2 = t * t
        series = 3.141592653589793 * t * (-0.3333333333333333 + t2 * (0.03333333333333333 + t2 * (
            -0.0011904761904761906 + t2 * 2.2045855379188714e-05)))
        y = a * tl.where(tl.abs(t) < 0.5, series, (t * tl.cos(t) - tl.sin(t)) / (t * b))
    elif OP == "copysign":  # |a| with b's sign bit (-0.0 and -NaN count as negative)
        y = tl.where(b.to(tl.int32, bitcast=True) < 0, -tl.abs(a), tl.abs(a))
    elif OP == "ldexp_int":  # a 2^b for an integer b, exactly: three powers of 2 made from their bits, each within
        # the exponent's range (2^-126 ... 2^127); past +-300, b saturates the result anyway
        e = tl.minimum(tl.maximum(b, -300.0), 300.0)
        e1 = tl.floor(e / 3.0)
        e2 = tl.floor((e - e1) * 0.5)
        y = a
        for f in tl.static_range(3):
            k = e1 if f == 0 else e2 if f == 1 else e - e1 - e2
            y = y * ((k.to(tl.int32) + 127) << 23).to(tl.float32, bitcast=True)
    elif OP == "heaviside":  # b where a == 0, else 0 or 1 (0 at NaN), in b's type
        y = tl.where(a == 0, b, (a > 0).to(b.dtype))
    elif OP == "logaddexp2":  # log2(2^a + 2^b), as logaddexp
        m = tl.where(a > b, a, b)
        y = tl.where((a == b) & (tl.abs(a) == float("inf")), a,
                     m + log1p_kahan(tl.exp2(-tl.abs(a - b))) * 1.4426950408889634)
    elif OP == "logaddexp2_backward":  # b = x, c = the other operand
        y = a / (1.0 + tl.exp2(c - b))
    elif OP == "gcd":  # integers
        y = _gcd(a, b)
    elif OP == "ipow":  # integers
        y = _ipow(a, b)
    elif OP == "lcm":  # |a / gcd * b|, 0 where gcd is 0
        g = _gcd(a, b)
        y = tl.where(g == 0, 0, tl.abs(a // tl.where(g == 0, 1, g) * b))
    elif OP == "eq":
        y = a == b
    elif OP == "ne":
        y = a != b
    elif OP == "lt":
        y = a < b
    elif OP == "le":
        y = a <= b
    elif OP == "gt":
        y = a > b
    elif OP == "ge":
        y = a >= b
    elif OP == "logical_not":
        y = a == 0
    elif OP == "logical_and":
        y = (a != 0) & (b != 0)
    elif OP == "logical_or":
        y = (a != 0) | (b != 0)
    elif OP == "logical_xor":
        y = (a != 0) != (b != 0)
    elif OP == "signbit":  # of the fp32 value (-0.0 and -NaN too); an integer's sign
        if a.dtype.is_floating():
            y = a.to(tl.int32, bitcast=True) < 0
        else:
            y = a < 0
    elif OP == "bitwise_not":  # of integers (two's complement)
        y = -a - 1
    elif OP == "bitwise_and":  # of integers (bools as 0 and 1)
        y = a & b
    elif OP == "bitwise_or":
        y = a | b
    elif OP == "bitwise_xor":
        y = a ^ b
    elif OP == "bitwise_left_shift":  # by 0 ... 63 (int64); torch's 0 for a negative count or one past the width
        outside = (b < 0) | (b > 63)
        y = tl.where(outside, 0, a << tl.where(outside, 0, b))
    elif OP == "bitwise_right_shift":  # arithmetic; a negative count or one past the width fills with the sign
        y = a >> tl.where((b < 0) | (b > 63), 63, b)
    elif OP == "frexp_mantissa":  # x's bits with the exponent of [0.5, 1); subnormals scaled into the normals first
        s = tl.where(tl.abs(a) < 1.1754943508222875e-38, a * 16777216.0, a)
        m = ((s.to(tl.int32, bitcast=True) & -2139095041) | 1056964608).to(tl.float32, bitcast=True)
        y = tl.where((a == 0.0) | (a != a) | (tl.abs(a) == float("inf")), a, m)
    elif OP == "frexp_exponent":  # x = m 2^e; 0 for 0, inf and NaN (glibc's, as torch's)
        tiny = tl.abs(a) < 1.1754943508222875e-38
        s = tl.where(tiny, a * 16777216.0, a)
        e = ((s.to(tl.int32, bitcast=True) >> 23) & 255) - tl.where(tiny, 150, 126)
        y = tl.where((a == 0.0) | (a != a) | (tl.abs(a) == float("inf")), 0, e)
    elif OP == "nextafter":  # c = the output dtype's last-place unit in fp32's bits (1, fp16's 2^13, bf16's 2^16)
        step = c.to(tl.int32)
        up = (a < b) == (a > 0.0)  # away from 0: a larger magnitude, larger bits
        bits = a.to(tl.int32, bitcast=True)
        y = tl.where(up, bits + step, bits - step).to(tl.float32, bitcast=True)
        smallest = step.to(tl.float32, bitcast=True)
        y = tl.where(a == 0.0, tl.where(b > a, smallest, -smallest), y)
        # fp16's subnormals, below 2^-14, are 2^-24 apart: no fixed step of fp32's bits
        low = (step == 8192) & ((tl.abs(a) < 6.103515625e-05) | ((tl.abs(a) == 6.103515625e-05) & ~up))
        y = tl.where(low, a + tl.where(b > a, 5.960464477539063e-08, -5.960464477539063e-08), y)
        y = tl.where((step == 8192) & (tl.abs(a) == float("inf")), tl.where(a > 0.0, 65504.0, -65504.0), y)  # fp16's largest
        y = tl.where(a == b, b, tl.where((a != a) | (b != b), a + b, y))
    elif OP == "polygamma":  # b = n + 1 >= 2, c = (-1)^(n + 1) n!: c zeta(n + 1, x); trigamma's reflection at n = 1
        y = c * _zeta(b, a)  # Cephes' poles at 0, -1, ..., -inf: c inf
        y = tl.where(b == 2.0, _trigamma(a), y)
    elif OP == "igamma":  # a = the shape, b = x
        y = _igamma(a, b, False)
    elif OP == "igammac":
        y = _igamma(a, b, True)
    elif OP == "igamma_backward":  # b = the shape, c = x, d = 1 (igamma) or -1 (igammac): torch's formula
        y = a * (d * _exp((b - 1.0) * tl.log(c) - c - _lgamma(b)))
    elif OP == "bessel_j0":
        y = _bessel_j(a.to(tl.float64), 0).to(tl.float32)
    elif OP == "bessel_j1":
        y = _bessel_j(a.to(tl.float64), 1).to(tl.float32)
    elif OP == "bessel_y0":
        y = _bessel_y(a.to(tl.float64), 0).to(tl.float32)
    elif OP == "bessel_y1":
        y = _bessel_y(a.to(tl.float64), 1).to(tl.float32)
    elif OP == "modified_bessel_k0":
        y = _bessel_k(a.to(tl.float64), 0, False).to(tl.float32)
    elif OP == "modified_bessel_k1":
        y = _bessel_k(a.to(tl.float64), 1, False).to(tl.float32)
    elif OP == "scaled_modified_bessel_k0":
        y = _bessel_k(a.to(tl.float64), 0, True).to(tl.float32)
    elif OP == "scaled_modified_bessel_k1":
        y = _bessel_k(a.to(tl.float64), 1, True).to(tl.float32)
    elif OP == "spherical_bessel_j0":
        y = _spherical_bessel_j0(a.to(tl.float64)).to(tl.float32)
    elif OP == "airy_ai":
        y = _airy_ai(a.to(tl.float64)).to(tl.float32)
    elif OP == "zeta":  # a = x, b = q
        y = _zeta(a, b)
    elif OP == "chebyshev_polynomial_t":  # a = x, b = n
        y = _orthogonal_polynomial(a, b, "t", False)
    elif OP == "chebyshev_polynomial_u":
        y = _orthogonal_polynomial(a, b, "u", False)
    elif OP == "chebyshev_polynomial_v":
        y = _orthogonal_polynomial(a, b, "v", False)
    elif OP == "chebyshev_polynomial_w":
        y = _orthogonal_polynomial(a, b, "w", False)
    elif OP == "shifted_chebyshev_polynomial_t":
        y = _orthogonal_polynomial(a, b, "t", True)
    elif OP == "shifted_chebyshev_polynomial_u":
        y = _orthogonal_polynomial(a, b, "u", True)
    elif OP == "shifted_chebyshev_polynomial_v":
        y = _orthogonal_polynomial(a, b, "v", True)
    elif OP == "shifted_chebyshev_polynomial_w":
        y = _orthogonal_polynomial(a, b, "w", True)
    elif OP == "hermite_polynomial_h":
        y = _orthogonal_polynomial(a, b, "h", False)
    elif OP == "hermite_polynomial_he":
        y = _orthogonal_polynomial(a, b, "he", False)
    elif OP == "laguerre_polynomial_l":
        y = _orthogonal_polynomial(a, b, "l", False)
    elif OP == "legendre_polynomial_p":
        y = _orthogonal_polynomial(a, b, "p", False)
    elif OP == "where":
        y = tl.where(a != 0, b, c)
    else:  # "route": a where the routed coordinate equals the index b, else 0 (a max's gradient)
        y = tl.where(coord == b, a, 0.0)
    return y


# restore_value: y may be an operand (an in-place op's out=), and the tuner runs a config many times.
@autotune(BLOCK_CONFIGS, key=["n", "FLAT"], interpret={"BLOCK": fit("n", 1 << 14)}, restore_value=["y_ptr"])
@triton.jit
def pointwise_kernel(a_ptr, b_ptr, c_ptr, y_ptr, n, s0, s1, s2, s3, sizes, a_strides, b_strides, c_strides,
                     OP: tl.constexpr, ARITY: tl.constexpr, SCALARS: tl.constexpr, FLAT: tl.constexpr,
                     ROUTE: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """y = OP(a, b, c) over the n elements of y, dense with axes `sizes` (innermost first); operand i
    is read through its strides on those axes, or is the number s0, s1 or s2 where bit i of SCALARS
    is set; s3 is a fourth operand, always a number. FLAT: every operand is dense like y and read at y's offsets. ROUTE: the axis whose
    coordinate "route" compares. COMPUTE: the operands' dtype in registers (fp32, or int64)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    coord = 0
    if FLAT:
        off_a = offs
        off_b = offs
        off_c = offs
    else:  # int32 index arithmetic: the launcher checks that every offset fits
        rest = offs.to(tl.int32)
        off_a = tl.zeros([BLOCK], tl.int32)
        off_b = off_a
        off_c = off_a
        for d in tl.static_range(len(sizes)):
            if d < len(sizes) - 1:
                pos = rest % sizes[d]
                rest = rest // sizes[d]
            else:
                pos = rest
            off_a += pos * a_strides[d]
            off_b += pos * b_strides[d]
            off_c += pos * c_strides[d]
            if d == ROUTE:
                coord = pos
    # Loads written out, not a helper: each call of a jit function costs ms in the interpreter.
    # A number becomes a tensor like the others, for tl.where; 1 * s, as 0 + s would turn -0.0 into +0.0.
    if SCALARS & 1:
        a = tl.full([BLOCK], 1, COMPUTE) * s0
    else:
        a = tl.load(a_ptr + off_a, mask=mask).to(COMPUTE)
    b = a
    c = a
    if ARITY > 1:
        if SCALARS & 2:
            b = tl.full([BLOCK], 1, COMPUTE) * s1
        elif OP == "route":  # int64 indices
            b = tl.load(b_ptr + off_b, mask=mask)
        else:  # 0 off the end: a loop over the block's lanes (the polynomials') sees only real ones
            b = tl.load(b_ptr + off_b, mask=mask, other=0).to(COMPUTE)
    if ARITY > 2:
        if SCALARS & 4:
            c = tl.full([BLOCK], 1, COMPUTE) * s2
        else:
            c = tl.load(c_ptr + off_c, mask=mask).to(COMPUTE)
    y = _apply(OP, a, b, c, s3, coord)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def result_type(tensors):
    """The dtype of an op on float tensors, by PyTorch's type promotion: the tensors with dims
    decide, 0-d ones only when all are 0-d (a bf16 activation times an fp32 0-d tensor stays
    bf16); two different ones of FLOATS promote to fp32 (bf16 with fp16 too: neither holds the
    other). A Python number takes no part."""
    dtype = None
    for x in [x for x in tensors if x.dim()] or tensors:
        dtype = x.dtype if dtype in (None, x.dtype) else torch.float32
    return dtype


def broadcast_shape(name, *shapes):
    """The shape that `shapes` broadcast to, by PyTorch's rule (trailing axes aligned; 1 stretches)."""
    out = []
    for i in range(1, max(len(s) for s in shapes) + 1):
        sizes = {s[-i] for s in shapes if i <= len(s)} - {1}
        check(len(sizes) <= 1,
              lambda: f"{name}: shapes {' and '.join(str(tuple(s)) for s in shapes)} do not broadcast: "
                      f"sizes {' and '.join(map(str, sorted(sizes)))} at dimension -{i}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(reversed(out))


def _strides_in(x, shape):
    """x's strides as an operand of an output of `shape`: 0 on its broadcast (and missing) axes."""
    if not isinstance(x, torch.Tensor):
        return [0] * len(shape)
    pad = len(shape) - x.dim()
    return [0] * pad + [st if sz != 1 else 0 for sz, st in zip(x.shape, x.stride())]


def _merged_axes(y, strides, keep=None):
    """y's axes in memory order, outermost first, without those of size 1, adjacent ones merged
    where every operand steps evenly across both; returned innermost first: (sizes, each operand's
    strides, the merged axis holding axis `keep`, which is never merged, or -1)."""
    order = sorted((d for d in range(y.dim()) if y.shape[d] != 1), key=lambda d: -y.stride(d))
    sizes, out, kept = [], [[] for _ in strides], -1
    for d in order:
        mergeable = sizes and d != keep and kept != len(sizes) - 1
        if mergeable and all(s[-1] == st[d] * y.shape[d] for s, st in zip(out, strides)):
            sizes[-1] *= y.shape[d]
            for s, st in zip(out, strides):
                s[-1] = st[d]
            continue
        kept = len(sizes) if d == keep else kept
        sizes.append(y.shape[d])
        for s, st in zip(out, strides):
            s.append(st[d])
    if not sizes:  # one element
        return [1], [[0] for _ in strides], -1
    return sizes[::-1], [s[::-1] for s in out], -1 if kept < 0 else len(sizes) - 1 - kept


def _is_int(v):
    """Whether v, a tensor or a number, holds integers (bool included)."""
    return v.dtype in INTEGERS if isinstance(v, torch.Tensor) else isinstance(v, (int, np.integer))


def round_to(v, dtype):
    """The Python float v rounded to dtype (to nearest even): torch compares a float16 or bfloat16
    tensor with a number in the tensor's dtype. Kept per value (a launch's number costs microseconds
    of numpy otherwise); zeros, whose sign the cache would not tell apart, and NaN as they are."""
    return v if v == 0 or v != v else _rounded(v, dtype)


@functools.lru_cache(maxsize=1024)
def _rounded(v, dtype):
    if dtype == torch.float16:
        with np.errstate(over="ignore"):  # past fp16's range is its inf, as torch rounds it
            return float(np.float16(v))
    with np.errstate(over="ignore"):  # past fp32's range is its inf
        bits = np.array(v, np.float32).view(np.uint32)
    if dtype == torch.bfloat16 and v == v:
        bits = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return float(bits.view(np.float32))


def out_dtype(op, operands, integer):
    """The output's dtype: bool for comparisons and logical ops; else, by torch's promotion, that of
    the operands that make the values (where's a and b, route's g), tensors before numbers."""
    if op in BOOL_OPS:
        return torch.bool
    values = operands[1:] if op == "where" else operands[:1] if op == "route" else operands
    tensors = [x for x in values if isinstance(x, torch.Tensor)]
    if integer:  # torch's table (int8 and int16 give int16) over the tensors with dims; 0-d tensors
        # decide only where all are 0-d or they are integers beside bools (int32 - a 0-d int64: int32)
        dims, zero = {x.dtype for x in tensors if x.dim()}, {x.dtype for x in tensors if not x.dim()}
        dtype = functools.reduce(torch.promote_types, dims or zero)
        if dtype == torch.bool and zero - {torch.bool}:
            dtype = functools.reduce(torch.promote_types, zero)
        if dtype == torch.bool and any(type(x) is int for x in values):  # bool tensor + 2: int64
            return torch.int64
        return dtype
    floats = [x for x in tensors if x.dtype in FLOATS]
    return result_type(floats) if floats else torch.float32


_PLANS = {}  # a launch's plan (_plan) per signature of its operands (_signature)


def _signature(op, operands, channels_last, route_dim, dtype):
    """What a launch's plan depends on: each tensor operand's shape, strides, dtype and device,
    each number's type. Two tensors, the common case, make a flat tuple (cheaper to build and hash)."""
    if len(operands) == 2:
        a, b = operands
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            return op, channels_last, route_dim, dtype, a.shape, a.stride(), a.dtype, a.device, \
                b.shape, b.stride(), b.dtype, b.device
    return (op, channels_last, route_dim, dtype,
            *[(x.shape, x.stride(), x.dtype, x.device) if isinstance(x, torch.Tensor) else type(x) for x in operands])


class _Plan:
    """What a launch of pointwise_kernel on operands of one signature needs beyond their addresses
    and numbers: the output's shape, dtype, memory format, device and size, the grid, the number
    arguments' rounding (a comparison's dtype, else None), the arguments after the numbers, and the
    operand laid out as the output, if one is (like: its index, else None)."""
    __slots__ = ("shape", "dtype", "fmt", "device", "n", "grid", "tensor_at", "integer", "round", "narrow", "tail", "kw",
                 "like")


def _plan(op, operands, channels_last, route_dim, dtype):
    """Check the operands and work out their launch (_Plan)."""
    check(op in ARITY, lambda: f"pointwise: unknown op {op!r}")
    check(len(operands) == ARITY[op], lambda: f"{op}: takes {ARITY[op]} operands, got {len(operands)}")
    check(len(operands) < 4 or not isinstance(operands[3], torch.Tensor), lambda: f"{op}: its fourth operand is a number")
    operands = operands[:3]  # the fourth, a number, goes to the kernel as s3
    tensors = [x for x in operands if isinstance(x, torch.Tensor)]
    check(tensors, lambda: f"{op}: needs a tensor operand")
    first = tensors[0]
    allowed = FLOATS + INTEGERS if op in INTEGER_OPS else FLOATS
    for i, x in enumerate(operands):
        if not isinstance(x, torch.Tensor):
            continue
        check(x.device == first.device, lambda: f"{op}: tensors on {first.device} and {x.device}")
        if op == "route" and i == 1:
            check(x.dtype == torch.int64, lambda: f"route: indices must be int64, got {x.dtype}")
        else:
            if x.dtype not in allowed:
                raise InputDtypeError(f"{op}: expected floating-point tensors (float32, float16 or bfloat16)"
                                      f"{', integer or bool ones' if op in INTEGER_OPS else ''}, "
                                      f"got {' and '.join(str(t.dtype) for t in tensors)}")
    # integer arithmetic where every operand that makes the values is an integer (where: not its condition)
    integer = op in INTEGER_OPS and all(_is_int(x) for x in (operands[1:] if op == "where" else operands))
    shape = broadcast_shape(op, *[x.shape for x in tensors])
    if channels_last is None:
        full = [x for x in tensors if tuple(x.shape) == shape]
        channels_last = bool(full) and is_channels_last(full[0])
    fmt = memory_format(channels_last)
    y = torch.empty(shape, device="meta", memory_format=fmt)  # the output's strides, without memory
    slots = list(operands) + [y] * (3 - len(operands))  # unused slots point anywhere: never read
    sizes, strides, route = _merged_axes(y, [_strides_in(x, shape) for x in slots], route_dim)
    flat = len(sizes) == 1 and all(s[0] == 1 for s, x in zip(strides, operands) if isinstance(x, torch.Tensor))
    if not flat and y.numel():
        check(y.numel() < 2**31 and all(sum((z - 1) * s for z, s in zip(sizes, st)) < 2**31 for st in strides),
              lambda: f"{op}: offsets past 2^31 in a broadcast or strided operand; split the batch")
    plan = _Plan()
    plan.shape, plan.dtype, plan.fmt, plan.device = shape, dtype or out_dtype(op, operands, integer), fmt, first.device
    plan.n, plan.grid = y.numel(), grid1d(y.numel())
    # an operand laid out as the output: its empty_like allocates it (a cheaper call than empty's)
    plan.like = next((i for i, x in enumerate(operands) if isinstance(x, torch.Tensor) and x.shape == y.shape
                      and x.dtype == plan.dtype and x.stride() == y.stride()), None)
    # the slots past the operands hold y's address: never read
    plan.tensor_at = tuple(isinstance(x, torch.Tensor) for x in operands) + (True,) * (3 - len(operands))
    plan.integer = integer
    # a number is compared in the tensors' dtype, and added or taken as an exponent in a float16 or bfloat16
    # result's, as torch's (its add casts the number to the result's dtype first: a float16 -inf + 1e30 is
    # -inf + inf, NaN; its pow, exp_scalar.to<scalar_t>(): x ** 2.7 of bfloat16 x is x ** 2.703125)
    plan.round = None if integer else out_dtype("add", tensors, False) if op in COMPARISONS else \
        plan.dtype if op in ("add", "sub", "pow_number") and plan.dtype in (torch.float16, torch.bfloat16) else None
    # a 0-d float tensor beside a 16-bit result is cast to its dtype first, as torch's promotion casts every
    # operand to the common dtype (a 0-d float32 3e38 times a float16 tensor is inf times it, NaN at 0); but
    # for other of mul and div, which torch's CPU kernels read before the cast
    plan.narrow = tuple(i for i, x in enumerate(operands) if isinstance(x, torch.Tensor) and x.dtype in FLOATS
                        and x.dtype != plan.dtype and plan.dtype in (torch.float16, torch.bfloat16) and dtype is None
                        and not (i == 1 and op in ("mul", "div")))
    plan.tail = (tuple(sizes), *map(tuple, strides))
    plan.kw = dict(OP=op, ARITY=ARITY[op], SCALARS=sum(1 << i for i, x in enumerate(operands) if not plan.tensor_at[i]),
                   FLAT=flat, ROUTE=route, COMPUTE=tl.int64 if integer else tl.float32)
    return plan


def _launch(op, operands, channels_last=None, route_dim=None, dtype=None, out=None):
    plan = kept(_PLANS, _signature(op, operands, channels_last, route_dim, dtype),
                lambda: _plan(op, operands, channels_last, route_dim, dtype))
    if out is None:
        y = torch.empty(plan.shape, dtype=plan.dtype, device=plan.device, memory_format=plan.fmt) if plan.like is None \
            else torch.empty_like(operands[plan.like])
    else:
        check(tuple(out.shape) == plan.shape and out.is_contiguous(memory_format=plan.fmt) and out.device == plan.device
              and out.dtype in FLOATS, lambda: f"{op}: out must be a float tensor of shape {plan.shape}, dense in the "
                                               f"output's layout, got {tuple(out.shape)} {out.dtype} strides {out.stride()}")
        y = out
    if plan.n == 0:
        return y
    if plan.narrow:
        operands = [copy_(torch.empty_like(x, dtype=plan.dtype), x) if i in plan.narrow else x
                    for i, x in enumerate(operands)]
    slots = (*operands, y, y)[:3]
    if plan.kw["SCALARS"]:
        ptrs = [x if tensor else y for x, tensor in zip(slots, plan.tensor_at)]
        numbers = [0 if tensor else _number(x, plan) for x, tensor in zip(slots, plan.tensor_at)]
    else:
        ptrs, numbers = slots, (0, 0, 0)
    s3 = float(operands[3]) if len(operands) > 3 else 0.0  # a float always: an int would compile anew
    # kept by the plan, which decides all but the addresses and numbers; not where the numbers are ints,
    # which specialize by value
    launch_kept(_BOUND, None if plan.integer and plan.kw["SCALARS"] else plan, pointwise_kernel, plan.grid,
                (*ptrs, y, plan.n, *numbers, s3, *plan.tail), plan.kw)
    return y


_BOUND = {}  # pointwise_kernel's Bound launches (autotune.launch_kept) by plan


def _number(x, plan):
    """A number operand as the kernel takes it: an int for integer arithmetic, else a float, rounded
    to the tensors' dtype for a comparison."""
    if plan.integer:
        return int(x)
    return float(x) if plan.round is None else round_to(float(x), plan.round)


def pointwise(op, *operands, channels_last=None, dtype=None, out=None):
    """op (a name in ARITY) over operands broadcast like PyTorch's: tensors (float32, float16 or
    bfloat16; also int64, int32 or bool for INTEGER_OPS) or Python numbers, computed in fp32 (in
    int64 where all are integers) into a new tensor of their promoted dtype (result_type; bool for
    BOOL_OPS), or of `dtype` (a comparison's 0/1 as floats). Its layout is channels-last when the
    first operand of the output's shape is (channels_last=True/False says instead), else contiguous.
    out: a float tensor to write instead (cast to its dtype), dense in that layout; it may be an
    operand read at the same offsets (each element is read before it is written), not a view that
    overlaps one otherwise."""
    return _launch(op, operands, channels_last, dtype=dtype, out=out)


def route(g, indices, shape, dim, channels_last=False):
    """The gradient of a max over `dim` of an input of `shape`: g, the gradient of its values, at the
    index along dim that `indices` (int64) holds, 0 elsewhere; g and indices have the shape with dim 1."""
    check(len(shape) == g.dim() == indices.dim() and g.shape[dim] == indices.shape[dim] == 1,
          lambda: f"route: g {tuple(g.shape)} and indices {tuple(indices.shape)} must be {tuple(shape)} with 1 at dim {dim}")
    return _launch("route", (g.expand(shape), indices.expand(shape)), channels_last, route_dim=dim)


def laid_alike(*xs):
    """Whether xs are float tensors of the first's shape and device, dense in its layout: check_like's
    conditions, in one pass where the strides are equal (the common case); other strides may still
    be the same dense layout (those of size-1 axes: a 1x1 filter's gradient)."""
    first = xs[0]
    if not is_flat(first):
        return False
    shape, strides, device = first.shape, first.stride(), first.device
    for x in xs:  # a loop, not all(genexpr): every element-wise launch asks
        if not (x.shape == shape and x.device == device and x.dtype in FLOATS):
            return False
        if x.stride() != strides and not (is_flat(x) and is_channels_last(x) == is_channels_last(first)):
            return False
    return True


def check_like(name, *xs):
    """Float tensors of one shape and device, dense in one layout (contiguous or channels-last):
    the kernels run over their flat memory."""
    if laid_alike(*xs):
        return  # the common case, cheaply
    first = xs[0]
    for x in xs:
        check(x.shape == first.shape, lambda: f"{name}: shapes differ, {tuple(first.shape)} and {tuple(x.shape)}")
        check(x.device == first.device, lambda: f"{name}: tensors on {first.device} and {x.device}")
        check_float(name, x, "operands")
        check(is_channels_last(x) == is_channels_last(first) and is_flat(x),
              lambda: f"{name}: expected contiguous or channels-last tensors laid out alike, got strides {x.stride()}")


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 16)})
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y = max(x, 0) over n elements."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL).to(y_ptr.dtype.element_ty), mask=mask)


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 16)})
@triton.jit
def relu_backward_kernel(y_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    """dx = 0 where the ReLU's output y <= 0, else dy (torch's threshold_backward: a NaN y passes dy)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask).to(tl.float32)
    tl.store(dx_ptr + offs, tl.where(y <= 0.0, 0.0, dy).to(dx_ptr.dtype.element_ty), mask=mask)


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 16)}, restore_value=["x_ptr"])
@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """x += y over n elements."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(x_ptr + offs, (x + y).to(x_ptr.dtype.element_ty), mask=mask)


@autotune(BLOCK_CONFIGS, key=["n"], interpret={"BLOCK": fit("n", 1 << 16)}, restore_value=["x_ptr"])
@triton.jit
def scale_kernel(x_ptr, s_ptr, n, BLOCK: tl.constexpr):
    """x *= s[0]: the scalar is read on the device, so no host synchronisation."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(s_ptr).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(x_ptr + offs, (x * s).to(x_ptr.dtype.element_ty), mask=mask)


_FLAT = {}  # the Bound launches of the kernels over n flat elements, by kernel, n and dtypes


def relu(x, out=None):
    """max(x, 0) into out (default: a new tensor like x)."""
    if out is None:
        check_like("relu", x)
        out = torch.empty_like(x)  # laid out as x
    else:
        check_like("relu", x, out)
    n = x.numel()
    launch_kept(_FLAT, (relu_kernel, n, x.dtype, out.dtype), relu_kernel, grid1d(n), (x, out, n), {})
    return out


def relu_backward(y, dy):
    """dy where the ReLU's output y > 0, else 0: a new tensor like dy."""
    check_like("relu_backward", y, dy)
    dx, n = torch.empty_like(dy), y.numel()
    launch_kept(_FLAT, (relu_backward_kernel, n, y.dtype, dy.dtype), relu_backward_kernel, grid1d(n), (y, dy, dx, n),
                {})
    return dx


def add_(x, y):
    """x += y in place (y cast to x's dtype, the sum in fp32); returns x."""
    check_like("add_", x, y)
    n = x.numel()
    launch_kept(_FLAT, (add_kernel, n, x.dtype, y.dtype), add_kernel, grid1d(n), (x, y, n), {})
    return x


def scale_(x, s):
    """x *= s in place, where s is a one-element float device tensor; returns x."""
    check_like("scale_", x)
    check(s.numel() == 1 and s.device == x.device and s.dtype in FLOATS,
          lambda: f"scale_: s must be one float element on {x.device}, got {tuple(s.shape)} {s.dtype} on {s.device}")
    n = x.numel()
    launch_kept(_FLAT, (scale_kernel, n, x.dtype, s.dtype), scale_kernel, grid1d(n), (x, s, n), {})
    return x
