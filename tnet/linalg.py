"""torch.linalg's functions, and torch's matrix functions (torch.inverse, torch.svd, ...).

Products of matrices run on tnet's device with tnet's ops and their gradients: matrix_power,
multi_dot, matrix_exp (scaling and squaring), householder_product and ormqr (rank-1 updates),
vecdot, the norms. The factorizations and solves
(svd, qr, eigh, cholesky, lu, inv, det, solve, lstsq, pinv, ...) run on the host in numpy, in
float64: a host sync, meant for small matrices (a whitening filter of CIFAR's 3072 dims or of
image patches, a covariance at init time), with the results in the input's dtype on tnet's
device. Their gradients, where tnet has them, are torch's formulas: the products on the device
with tnet's matmul, a solve or inverse they need on the host again (in the backward).
tnet has no complex dtypes: eig and eigvals raise NotImplementedError, as do ldl_factor and its
kin."""
import math
import numbers
import warnings
from . import return_types

import numpy as np
import torch

from .functional.copy import (cat, clone, expand, movedim, narrow, permute, reshape, select, squeeze, to, transpose,
                              unsqueeze)
from .functional.copy import cross as _cross
from .factory import randn
from .functional.copy import diagonal as copy_diagonal
from .functional.gemm import matmul
from .kernels.gemm import precision_of
from .functional.pointwise import add, div, exp, mul, nan_to_num, neg, sub, tril, triu, where
from .functional.reduce import sum as reduce_sum
from .functional.sort import vander as vander_1d
from .functional.inputs import check_args, check_tensors
from .functional.pointwise import sum_to
from .functional.reduce import matrix_norm as _matrix_norm
from .functional.reduce import norm_dtype, vector_norm
from .functional import reduce as _reduce
from .kernels.launch import DTYPE_NAMES, InputTypeError, check, no_host_read
from .tensor import Tensor, is_grad_enabled, no_grad, record, tensor

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular",
           "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

LinAlgError = torch.linalg.LinAlgError  # torch._C._LinAlgError, a RuntimeError: `except torch.linalg.LinAlgError` works



# ---- host and device ----------------------------------------------------------------------------

def _host(name, A, square=False, least=2):
    """A's values as a float64 numpy array (a host sync), after torch's checks of a matrix argument
    (not a tensor: TypeError, as torch's)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}: expected a tnet.Tensor, got {type(A).__name__}")
    check(A.dtype.is_floating_point, lambda: f"{name}: Expected a floating point or complex tensor as input. Got "
                                             f"{DTYPE_NAMES.get(A.dtype, A.dtype)}")
    check(A.ndim >= least, lambda: f"{name}: The input tensor A must have at least {least} dimensions.")
    if square:
        check(A.shape[-1] == A.shape[-2], lambda: f"{name}: A must be batches of square matrices, but they are "
                                                  f"{A.shape[-2]} by {A.shape[-1]} matrices")
    no_host_read(A.memory, name)
    return A.memory.detach().to("cpu", torch.float64).numpy()


def _dev(array, like):
    """A numpy result on tnet's device, in the dtype of the tensor `like`."""
    return tensor(np.array(array), dtype=like.dtype if isinstance(like, Tensor) else like)


def _int32(array):
    """pivots and info as torch's: int32 tensors."""
    return tensor(np.array(array, dtype=np.int32), dtype=torch.int32)


def _grad_wanted(*xs):
    return is_grad_enabled() and any(isinstance(x, Tensor) and x.requires_grad for x in xs)


def _no_gradient(name, *xs):
    """tnet has no gradient for name: an input that wants one raises, as eigh always did."""
    if _grad_wanted(*xs):
        raise NotImplementedError(f"{name}: tnet has no gradient for it; call it under tnet.no_grad() or on "
                                  f"detached inputs")


def _recorded(name, out, inputs, backward):
    """out (a device Tensor computed on the host) recorded with backward: g (a Tensor) -> one Tensor
    or None per input, run under no_grad; each gradient summed to its input's shape (broadcasting)."""
    def run(g):
        with no_grad():
            grads = backward(Tensor(g))
        return tuple(None if gx is None else sum_to(gx.memory, x) for gx, x in zip(grads, inputs))
    return record(name, out.memory, inputs, run)


def _T(x):
    return transpose(x, -2, -1)


def _eye_like(n, like):
    return _dev(np.eye(n), like)


def _batch_error(name, info, message):
    """LinAlgError for the first batch element whose info is nonzero, torch's wording."""
    flat = np.asarray(info).reshape(-1)
    bad = int(np.flatnonzero(flat)[0])
    where = f"(Batch element {bad}): " if np.ndim(info) else ""
    raise LinAlgError(f"{name}: {where}{message(int(flat[bad]))}")


# ---- LU: one factorization for lu, lu_factor, inv's and solve's error reports -----------------------

def _lu_host(a, pivot=True):
    """a [..., m, n] float64 factored as LAPACK's getrf (partial pivoting, the first largest |value|
    in the column): (LU packed [..., m, n], pivots [..., k] 1-based int32, info [...]: the first zero
    pivot's 1-based index, 0 where none). A loop over columns: O(n^3) numpy, fine for small matrices."""
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = a.reshape(-1, m, n).copy()
    pivots = np.tile(np.arange(1, k + 1, dtype=np.int32), (lu.shape[0], 1))
    info = np.zeros(lu.shape[0], dtype=np.int32)
    rows = np.arange(lu.shape[0])
    for j in range(k):
        if pivot:
            p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1)
            pivots[:, j] = p + 1
            top = lu[rows, p].copy()
            lu[rows, p] = lu[:, j]
            lu[:, j] = top
        d = lu[:, j, j]
        zero = d == 0
        info[(info == 0) & zero] = j + 1
        with np.errstate(invalid="ignore", over="ignore"):  # inf / inf and inf - inf: NaN, as torch's
            lu[:, j + 1:, j] /= np.where(zero, 1.0, d)[:, None]  # a zero pivot: LAPACK leaves the column as is
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    batch = a.shape[:-2]
    return lu.reshape(a.shape), pivots.reshape(*batch, k), info.reshape(batch)


def _singular_info(a):
    """_lu_host's info of square matrices a [..., n, n] of which LAPACK found one singular; one that LAPACK finds
    singular where this LU's pivots are rounding noise instead of an exact 0 gets its smallest pivot's index."""
    lu, _, info = _lu_host(a)
    n = a.shape[-1]
    flat, flat_info = a.reshape(-1, n, n), info.reshape(-1)
    pivots = np.abs(np.diagonal(lu, 0, -2, -1)).reshape(-1, n)
    for i in np.flatnonzero(flat_info == 0):
        try:
            _np_inv(flat[i])
        except np.linalg.LinAlgError:
            flat_info[i] = np.argmin(pivots[i]) + 1
    return flat_info.reshape(info.shape)


def _ieee_solve(a, b, left=True):
    """A^-1 B (left) or B A^-1 of a possibly singular A by _lu_host's factors and _lu_solve_host's substitution: a zero
    pivot gives inf and NaN, as torch's getrf/getrs (solve_ex's result and gradient, where check_errors is off)."""
    if not left:
        return np.swapaxes(_ieee_solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    lu, pivots, _ = _lu_host(np.broadcast_to(a, batch + a.shape[-2:]))
    return _lu_solve_host(lu, pivots, np.broadcast_to(b, batch + b.shape[-2:]))


def _lu_solve_host(lu, pivots, b):
    """X with A X = B [..., n, k] from _lu_host's packed LU and pivots of A [..., n, n], as LAPACK's getrs: the row
    swaps, then substitution through L and U in IEEE arithmetic, no step skipped (0 * inf is NaN, as in torch's)."""
    n = lu.shape[-1]
    lu, x = lu.reshape(-1, n, n), np.array(np.broadcast_to(b, lu.shape[:-1] + b.shape[-1:])).reshape(-1, n, b.shape[-1])
    rows, piv = np.arange(x.shape[0]), pivots.reshape(-1, n) - 1
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for j in range(n):
            top = x[rows, piv[:, j]].copy()
            x[rows, piv[:, j]] = x[:, j]
            x[:, j] = top
        for j in range(n):  # L, unit lower
            x[:, j + 1:] -= lu[:, j + 1:, j, None] * x[:, j, None]
        for j in reversed(range(n)):  # U
            x[:, j] /= lu[:, j, j, None]
            x[:, :j] -= lu[:, :j, j, None] * x[:, j, None]
    return x.reshape(pivots.shape[:-1] + x.shape[-2:])


def _holds_inf(a):
    """Whether a matrix of a [..., n, n] holds an inf: numpy's LAPACK may zero what IEEE arithmetic makes NaN there
    (torch's inverse of [[inf, 1], [-inf, 1]] is NaN, numpy's finite; a determinant with a zero pivot beside an
    infinite one is NaN in torch, 0 in numpy), so such batches are factored by _lu_host instead (fuzz seeds 199, 232)."""
    return np.isinf(a).any()


def _np_solve(a, b):
    """np.linalg.solve(a, b) (batch dims broadcast), by _lu_host where a holds an inf; a singular a raises
    np.linalg.LinAlgError either way."""
    if not _holds_inf(a):
        return np.linalg.solve(a, b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    lu, pivots, info = _lu_host(np.broadcast_to(a, batch + a.shape[-2:]))
    if info.any():
        raise np.linalg.LinAlgError("Singular matrix")
    return _lu_solve_host(lu, pivots, np.broadcast_to(b, batch + b.shape[-2:]))


def _np_inv(a):
    return _np_solve(a, np.eye(a.shape[-1])) if _holds_inf(a) else np.linalg.inv(a)


def _lu_diagonal_host(a):
    """(the sign of the row swaps, U's diagonal) of _lu_host's factors of a [..., n, n]: torch's determinant is
    their product (a zero pivot beside an inf: NaN)."""
    lu, pivots, _ = _lu_host(a)
    swaps = (pivots != np.arange(1, a.shape[-1] + 1)).sum(-1)
    return np.where(swaps % 2, -1.0, 1.0), np.diagonal(lu, 0, -2, -1)


def _det_factors(a, A):
    """(the sign of the row swaps, U's diagonal) of the LU that torch's det and slogdet multiply out: of A^T
    where A is contiguous (torch factors the transpose, already column-major for LAPACK: det(A^T) = det(A)),
    of A otherwise; the two differ in a zero's sign and where an inf meets a zero pivot."""
    return _lu_diagonal_host(np.swapaxes(a, -1, -2) if A.is_contiguous() else a)


def _np_det(a, A):
    """det of a [..., n, n] (float64, A's values) as torch's, _det_factors' product: numpy's LAPACK where a is
    finite and the result is not 0 (a zero takes the product's sign: torch's det([[-0.0]]) is -0.0 and logdet's
    gradient there 1 / -0.0 = -inf, numpy's +0.0 (fuzz seed 300, case 406)); the product where a holds an inf."""
    if not _holds_inf(a):
        d = np.linalg.det(a)
        if not (d == 0).any():
            return d
    sign, diagonal = _det_factors(a, A)
    with np.errstate(invalid="ignore", over="ignore"):
        product = sign * np.prod(diagonal, -1)
    return product if _holds_inf(a) else np.where(d == 0, product, d)


def _lu_unpack_host(lu, pivots, unpack_data=True, unpack_pivots=True):
    """(P [..., m, m], L [..., m, k], U [..., k, n]) of a packed LU and its 1-based pivots: A = P L U."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    P = L = U = None
    if unpack_data:
        L = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
        U = np.triu(lu[..., :k, :])
    if unpack_pivots:
        piv = pivots.reshape(-1, pivots.shape[-1]).astype(np.int64) - 1
        if piv.size and not ((piv >= 0) & (piv < m)).all():  # torch's check (numpy's IndexError else)
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you properly "
                               "pass the result of lu_factor?")
        perm = np.tile(np.arange(m), (piv.shape[0], 1))
        for j in range(piv.shape[1]):  # LAPACK's row swaps, in order
            b = np.arange(piv.shape[0])
            perm[b, j], perm[b, piv[:, j]] = perm[b, piv[:, j]], perm[b, j].copy()
        P = np.zeros((piv.shape[0], m, m))
        P[np.arange(piv.shape[0])[:, None], perm, np.arange(m)] = 1.0  # row perm[i] of A is row i of L U
        P = P.reshape(*pivots.shape[:-1], m, m)
    return P, L, U


def _trsm_host(t, b, unit=False):
    """X with T X = B for upper triangular T [..., n, n] (unit: ones on its diagonal, as given or not) and
    B [..., n, r], batch dims broadcast: back substitution in IEEE arithmetic (a zero pivot gives inf or NaN,
    as LAPACK's trsm), reading T's upper triangle only."""
    n = t.shape[-1]
    batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t, x = np.broadcast_to(t, batch + t.shape[-2:]), np.array(np.broadcast_to(b, batch + b.shape[-2:]))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for j in reversed(range(n)):
            if not unit:
                x[..., j, :] /= t[..., j, j, None]
            x[..., :j, :] -= t[..., :j, j, None] * x[..., j, None, :]
    return x


def _tri_solve_host(t, b, upper, left=True):
    """T^-1 B (left) or B T^-1 for the upper (or lower) triangular T [..., n, n], batch dims broadcast: _trsm_host's
    substitution, so that a zero on T's diagonal gives inf and NaN, as torch's trsm, where a general solve raises."""
    T = lambda x: np.swapaxes(x, -1, -2)  # noqa: E731
    if not left:  # X T = B: T^T X^T = B^T
        return T(_tri_solve_host(T(t), T(b), not upper))
    if upper:
        return _trsm_host(t, b)
    return _trsm_host(t[..., ::-1, ::-1], b[..., ::-1, :])[..., ::-1, :]  # reversed, a lower T is upper


def _lu_backward_host(gL, gU, P, L, U):
    """torch's linalg_lu_backward: A's gradient from those of L [..., m, k] and U [..., k, n] (either None) of
    A = P L U. Square: P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T; wide (m < n) and tall (m > n) split U or L
    at k and carry the gradient of the part past k through one triangular solve."""
    T = lambda x: np.swapaxes(x, -1, -2)  # noqa: E731
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    batch = np.broadcast_shapes(L.shape[:-2], U.shape[:-2])
    if m <= n:  # X = tril(L^T gL - [triu(gU) U^T], -1) (square: + triu(gU U^T)), X U1^-T, [X + triu(gU1), gU2], L^-T X
        x = np.zeros(batch + (m, m))
        if gL is not None:
            x = x + T(L) @ gL
        if gU is not None and m < n:
            x = x - np.triu(gU) @ T(U)
        x = np.tril(x, -1)
        if gU is not None and m == n:
            x = x + np.triu(gU @ T(U))
        x = T(_trsm_host(U[..., :k], T(x)))  # X U1^-T: U1 Y^T = X^T
        if gU is not None and m < n:
            x = np.concatenate([x + np.triu(gU[..., :k]), gU[..., k:]], -1)
        x = _trsm_host(T(L), x, unit=True)
        if m < n and gU is None:
            x = np.concatenate([x, np.zeros(x.shape[:-1] + (n - k,))], -1)
    else:  # X = triu(gU U^T - L^T tril(gL, -1)), L1^-T X, [X + tril(gL1, -1); gL2], X U^-T
        x = np.zeros(batch + (n, n))
        if gU is not None:
            x = x + gU @ T(U)
        if gL is not None:
            x = x - T(L) @ np.tril(gL, -1)
        x = _trsm_host(T(L[..., :k, :]), np.triu(x), unit=True)
        if gL is not None:
            x = np.concatenate([x + np.tril(gL[..., :k, :], -1), gL[..., k:, :]], -2)
        x = T(_trsm_host(U, T(x)))
        if gL is None:
            x = np.concatenate([x, np.zeros(x.shape[:-2] + (m - k, n))], -2)
    return P @ x


def _singular_message(i):
    return (f"The diagonal element {i} is zero, the inversion could not be completed because the input matrix is "
            f"singular.")


LUFactorResult = return_types.linalg_lu_factor
LUFactorExResult = return_types.linalg_lu_factor_ex
LUResult = return_types.linalg_lu


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """torch.linalg.lu_factor_ex: (LU, pivots, info) of A [..., m, n] as LAPACK's getrf, on the host
    (float64; see the module's note). pivot=False factors without row swaps (as torch on CUDA). Gradient as
    torch's: linalg.lu's, from LU's strictly lower part (L's) and upper part (U's)."""
    a = _host("torch.linalg.lu_factor_ex", A)
    lu, pivots, info = _lu_host(a, pivot)
    if check_errors and info.any():
        _batch_error("torch.linalg.lu_factor_ex", info, lambda i: f"U[{i},{i}] is zero and using it on lu_solve "
                     f"would result in a division by zero.")
    k = min(a.shape[-2:])

    def backward(g):
        g = _host("linalg.lu_factor", g)
        return (_dev(_lu_backward_host(np.tril(g[..., :k], -1), np.triu(g[..., :k, :]), *_lu_unpack_host(lu, pivots)), A),)
    return LUFactorExResult(_recorded("linalg.lu_factor_ex", _dev(lu, A), (A,), backward), _int32(pivots), _int32(info))


def lu_factor(A, *, pivot=True):
    """torch.linalg.lu_factor: (LU, pivots); a zero pivot raises RuntimeError, as torch's."""
    lu, pivots, info = lu_factor_ex(A, pivot=pivot)
    if info.numpy().any():
        i = int(info.numpy().reshape(-1)[np.flatnonzero(info.numpy().reshape(-1))[0]])
        raise RuntimeError(f"torch.linalg.lu_factor: U[{i},{i}] is zero and using it on lu_solve would result in a "
                           f"division by zero. If you still want to perform the factorization, consider calling "
                           f"linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return LUFactorResult(lu, pivots)


def lu(A, *, pivot=True):
    """torch.linalg.lu: (P, L, U) with A = P L U, A [..., m, n]; on the host (the module's note). Gradients of L
    and U as torch's (_lu_backward_host), P none."""
    a = _host("linalg.lu", A)
    lu_, pivots, _ = _lu_host(a, pivot)
    P, L, U = _lu_unpack_host(lu_, pivots)

    def grad_of(which):
        return lambda g: (_dev(_lu_backward_host(*(_host("linalg.lu", g) if w == which else None for w in "LU"), P, L, U), A),)
    return LUResult(_dev(P, A), _recorded("linalg.lu", _dev(L, A), (A,), grad_of("L")),
                    _recorded("linalg.lu", _dev(U, A), (A,), grad_of("U")))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """torch.lu_unpack: (P, L, U) of lu_factor's result; what is not unpacked is an empty tensor, as torch's."""
    lu_ = _host("lu_unpack", LU_data)
    _no_gradient("lu_unpack", LU_data)
    P, L, U = _lu_unpack_host(lu_, LU_pivots.numpy(), unpack_data, unpack_pivots)
    empty = np.zeros(0)
    return LUResult(*(_dev(empty if x is None else x, LU_data) for x in (P, L, U)))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """torch.linalg.lu_solve: X with A X = B (left=False: X A = B; adjoint: A^T in A's place), A =
    P L U from lu_factor; on the host (the module's note). No gradient."""
    lu_ = _host("linalg.lu_solve", LU, square=True)
    _no_gradient("linalg.lu_solve", LU, B)
    if LU.dtype != B.dtype:  # torch's check (tnet solved in LU's dtype)
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{DTYPE_NAMES[LU.dtype]} and B of type {DTYPE_NAMES[B.dtype]} instead")
    n = LU.shape[-1]
    if B.ndim < 2 or B.shape[-2 if left else -1] != n:  # torch's check (numpy's ValueError else)
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {'AX' if left else 'XA'} = B "
                           f"({n}x{n} and {'x'.join(map(str, B.shape[-2:]))})")
    P, L, U = _lu_unpack_host(lu_, pivots.numpy())
    a = P @ L @ U
    a = np.swapaxes(a, -1, -2) if adjoint else a
    return _dev(_solve_host(a, _host("linalg.lu_solve", B), left), B)


# ---- inverses, determinants, solves --------------------------------------------------------------

def _nan_matrices(a):
    """(a with each matrix that holds a NaN replaced by the identity, a mask of those matrices with
    two trailing dims of 1): torch's inverse, solve and determinant of such a matrix are all NaN (its
    LAPACK's pivoting spreads the NaN through the factors; numpy's can leave finite values, or call
    the matrix singular), so tnet computes the others and sets those NaN."""
    bad = np.isnan(a).any((-2, -1), keepdims=True)
    return (np.where(bad, np.eye(a.shape[-1]), a) if bad.any() else a), bad


def _solve_host(a, b, left=True):
    """A^-1 B (left) or B A^-1, batch dims broadcast; b a batch of matrices."""
    a, bad = _nan_matrices(a)
    if left:
        return np.where(bad, np.nan, _np_solve(a, b))
    return np.where(bad, np.nan, np.swapaxes(_np_solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2))


def _inv_checked(name, a):
    """np.linalg.inv, with torch's LinAlgError (naming the zero pivot) for a singular matrix."""
    a, bad = _nan_matrices(a)
    try:
        return np.where(bad, np.nan, _np_inv(a))
    except np.linalg.LinAlgError:
        _batch_error(name, _singular_info(a), _singular_message)


def _inv_recorded(A, ainv):
    out = _dev(ainv, A)
    return _recorded("linalg.inv", out, (A,), lambda g: (neg(_T(out) @ g @ _T(out)),))


def inv(A):
    """torch.linalg.inv (torch.inverse, Tensor.inverse): A^-1 for A [..., n, n], on the host (the
    module's note); a singular matrix raises torch.linalg.LinAlgError. Gradient -A^-T g A^-T on the device."""
    return _inv_recorded(A, _inv_checked("linalg.inv", _host("linalg.inv", A, square=True)))


InvExResult = return_types.linalg_inv_ex


def inv_ex(A, *, check_errors=False):
    """torch.linalg.inv_ex: (inverse, info), info the first zero pivot (0: invertible); a singular
    matrix's inverse is NaN in tnet (torch leaves it undefined). Gradient as inv."""
    a, bad = _nan_matrices(_host("linalg.inv_ex", A, square=True))
    try:
        ainv, info = np.where(bad, np.nan, _np_inv(a)), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:  # only then the slow LU, for info
        info = _singular_info(a)
        if check_errors:
            _batch_error("linalg.inv_ex", info, _singular_message)
        ainv = np.full_like(a, np.nan)
        ainv[info == 0] = np.where(bad[info == 0], np.nan, _np_inv(a[info == 0]))
    return InvExResult(_inv_recorded(A, ainv), _int32(info))


def _svd_host(a, full_matrices=True, compute_uv=True, nan_raises=True):
    """np.linalg.svd of a [..., m, n], as torch's on non-finite matrices: a NaN raises LinAlgError
    (nan_raises), a matrix with an infinity (or, not nan_raises, a NaN) gives NaN factors. LAPACK is never
    handed one: its SVD of an infinite matrix can loop forever."""
    if nan_raises and np.isnan(a).any():
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix contained "
                          "non-finite values.")
    bad = ~np.isfinite(a).all((-2, -1))
    out = np.linalg.svd(np.where(bad[..., None, None], 0.0, a), full_matrices=full_matrices, compute_uv=compute_uv)
    if not bad.any():
        return out
    if not compute_uv:
        return np.where(bad[..., None], np.nan, out)
    return tuple(np.where(bad[..., None, None] if x.ndim == a.ndim else bad[..., None], np.nan, x) for x in out)


def _cofactor(a):
    """The cofactor matrix det(A) A^-T of a [..., n, n], through an SVD: defined for singular A too;
    1 for a 1 x 1 A, NaN or not, as torch's."""
    if a.shape[-1] == 1:
        return np.ones_like(a)
    u, s, vh = _svd_host(a, nan_raises=False)
    n = s.shape[-1]
    ones = np.ones(s.shape[:-1] + (1,))
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    sign = np.linalg.det(u) * np.linalg.det(vh) if n else np.ones(s.shape[:-1])
    return sign[..., None, None] * ((u * (before * after)[..., None, :]) @ vh)


def _det_grad(A, scale):
    """g -> g * scale(a) * cof(A): det's (scale 1) and logabsdet's (scale 1 / det) gradients."""
    def backward(g):
        a = _host("det backward", A)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = _cofactor(a) * scale(a)[..., None, None]
        return (mul(unsqueeze(unsqueeze(g, -1), -1), _dev(c, A)),)
    return backward


def det(A):
    """torch.linalg.det (torch.det, Tensor.det) of A [..., n, n], on the host (the module's note);
    gradient g * det(A) A^-T (the cofactor matrix, through an SVD: singular A too)."""
    a, bad = _nan_matrices(_host("linalg.det", A, square=True))
    d = _np_det(a, A)
    return _recorded("linalg.det", _dev(np.where(bad[..., 0, 0], np.nan, d), A), (A,), _det_grad(A, lambda a: np.ones(a.shape[:-2])))


SlogdetResult = return_types.linalg_slogdet


def _slogdet_host(a, A):
    """np.linalg.slogdet of a (A's values), as torch's of a matrix holding a NaN: sign 0, log|det| NaN; one
    holding an inf takes torch's signs and logs of _det_factors' diagonal, and a zero sign is theirs (torch's
    sign of -0.0 is +0, of a zero pivot times -1 -0.0)."""
    a, bad = _nan_matrices(a)
    finite = not _holds_inf(a)
    if finite:
        sign, logabsdet = np.linalg.slogdet(a)
    if not finite or (sign == 0).any():
        swaps, diagonal = _det_factors(a, A)
        with np.errstate(invalid="ignore", divide="ignore"):
            factors = swaps * np.prod((diagonal > 0) * 1.0 - (diagonal < 0), -1)  # a NaN's sign 0
            if finite:
                sign = np.where(sign == 0, factors, sign)
            else:
                sign, logabsdet = factors, np.sum(np.log(np.abs(diagonal)), -1)
    return np.where(bad[..., 0, 0], 0.0, sign), np.where(bad[..., 0, 0], np.nan, logabsdet)


def slogdet(A):
    """torch.linalg.slogdet: (sign, log|det|) of A [..., n, n], on the host (the module's note); the
    gradient of logabsdet g A^-T (sign has none)."""
    sign, logabsdet = _slogdet_host(_host("linalg.slogdet", A, square=True), A)
    return SlogdetResult(_dev(sign, A), _recorded("linalg.slogdet", _dev(logabsdet, A), (A,),
                                                  _det_grad(A, lambda a: 1.0 / _np_det(a, A))))


def logdet(A):
    """torch.logdet: log det(A), NaN where det < 0 and -inf where 0; gradient g A^-T, and 0 where
    det < 0 (torch's NaN there is a constant of its where, not a function of A)."""
    a = _host("logdet", A, square=True)
    sign, logabsdet = _slogdet_host(a, A)
    with np.errstate(invalid="ignore"):
        value = np.where(sign < 0, np.nan, logabsdet)

    def scale(a):
        d = _np_det(a, A)
        return np.where(d < 0, 0.0, 1.0 / d)
    return _recorded("logdet", _dev(value, A), (A,), _det_grad(A, scale))


def _is_vector_rhs(A, B):
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _solve(name, A, B, left=True, check_errors=True):
    """X with A X = B (left) or X A = B, batch dims broadcast; B a batch of vectors as torch tells
    them; gradients gB = A^-T g (on the host), gA = -gB X^T (on the device). (X, info)."""
    a = _host(name, A, square=True)
    check(not isinstance(B, Tensor) or A.dtype == B.dtype,
          lambda: f"{name}: Expected A and B to have the same dtype, but found A of type {A.dtype} and B of type {B.dtype} instead")
    vector = _is_vector_rhs(A, B)
    check(left or not vector, "linalg.solve: Vector broadcasting of the left hand side is not supported for "
                              "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    b = _host(name, B, least=1)
    b = b[..., None] if vector else b
    check(b.shape[-2 if left else -1] == a.shape[-1], lambda: f"{name}: Incompatible shapes of A and B for the "
                                                              f"equation {'AX = B' if left else 'XA = B'} "
                                                              f"({a.shape[-2]}x{a.shape[-1]} and "
                                                              f"{b.shape[-2]}x{b.shape[-1]})")
    try:
        x, info = _solve_host(a, b, left), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:  # only then the slow LU, for info
        if check_errors:
            raise LinAlgError(f"{name}: The solver failed because the input matrix is singular.") from None
        info = _lu_host(a)[2]
        x = _ieee_solve(a, b, left)
    X = _dev(x, A)
    at = np.swapaxes(a, -1, -2)

    def backward(g):
        try:  # A^T exactly singular in float64 where A's forward solve was not (rounding): torch's error kind
            gb = _dev(_solve_host(at, _host(name, g), left), A)  # g [..., n, k]: the vectors' column too
        except np.linalg.LinAlgError:
            if check_errors:
                raise LinAlgError(f"{name}: The solver failed because the input matrix is singular.") from None
            gb = _dev(_ieee_solve(at, _host(name, g), left), A)  # solve_ex's: inf and NaN, as torch's
        ga = neg(gb @ _T(X) if left else _T(X) @ gb)
        return ga, squeeze(gb, -1) if vector else gb
    out = _recorded(name.replace("torch.", ""), X, (A, B), backward)
    return (squeeze(out, -1) if vector else out), info


def solve(A, B, *, left=True):
    """torch.linalg.solve: X with A X = B (left=False: X A = B), A [..., n, n], B [..., n, k] or a
    batch of vectors [..., n], batch dims broadcast; on the host (the module's note). A singular A
    raises torch.linalg.LinAlgError. Gradients of A and B on the device (a solve with A^T on the host)."""
    return _solve("torch.linalg.solve", A, B, left)[0]


SolveExResult = return_types.linalg_solve_ex


def solve_ex(A, B, *, left=True, check_errors=False):
    """torch.linalg.solve_ex: (result, info); a singular A's result and gradients are those of an LU solve in IEEE
    arithmetic (inf and NaN past the zero pivot), as torch's getrs."""
    x, info = _solve("torch.linalg.solve_ex", A, B, left, check_errors)
    return SolveExResult(x, _int32(info))


def _triangle(a, upper, unitriangular):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - np.diagonal(t, 0, -2, -1)[..., None] * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
    return t


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """torch.linalg.solve_triangular: X with T X = B (left=False: X T = B), T the upper or lower
    triangle of A (unitriangular: ones on its diagonal), batch dims broadcast; on the host (the
    module's note). Gradients as torch's: gB = T^-T g, gA = -gB X^T in T's triangle."""
    check_args("linalg_solve_triangular", "bool", upper=upper, left=left, unitriangular=unitriangular)
    check_tensors("linalg.solve_triangular", A=A, B=B)
    check(B.ndim >= 2, "linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    t = _triangle(_host("linalg.solve_triangular", A, square=True), upper, unitriangular)
    b = _host("linalg.solve_triangular", B)
    check(b.shape[-2 if left else -1] == t.shape[-1], lambda: f"linalg.solve_triangular: Incompatible shapes of A and "
                                                              f"B for the equation {'AX = B' if left else 'XA = B'} "
                                                              f"({t.shape[-2]}x{t.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    t, b = t.astype(np.float32), b.astype(np.float32)  # torch's float32 substitution: its overflows (-3e38 - 5e37)
    X = _dev(_tri_solve_host(t, b, upper, left), A)  # in A's dtype, as torch's

    def backward(g):  # in A's dtype (X's), B's gradient cast to B's
        gb = _dev(_tri_solve_host(np.swapaxes(t, -1, -2), _host("solve_triangular", g), not upper, left), A)
        ga = neg(gb @ _T(X) if left else _T(X) @ gb)
        ga = triu(ga, int(unitriangular)) if upper else tril(ga, -int(unitriangular))
        return ga, gb if gb.dtype == B.dtype else to(gb, B.dtype)
    return _recorded("linalg.solve_triangular", X, (A, B), backward)


TriangularSolveResult = return_types.triangular_solve


def _linear_solve_checks(name, b, A, b_message, A_message):
    """torch's checks of b and A in cholesky_solve and triangular_solve (linearSolveCheckInputs): their ranks, one
    dtype, A square, A's size against b's rows."""
    check_tensors(name, b=b, A=A)
    check(b.ndim >= 2, lambda: b_message.format(b.ndim))
    check(A.ndim >= 2, lambda: A_message.format(A.ndim))
    check(b.dtype == A.dtype, lambda: f"Expected b and A to have the same dtype, but found b of type "
                                      f"{DTYPE_NAMES.get(b.dtype, b.dtype)} and A of type {DTYPE_NAMES.get(A.dtype, A.dtype)} instead.")
    check(A.shape[-1] == A.shape[-2], lambda: f"A must be batches of square matrices, but they are {A.shape[-2]} by "
                                              f"{A.shape[-1]} matrices")
    check(A.shape[-1] == b.shape[-2], lambda: f"Incompatible matrix sizes for {name}: each A matrix is {A.shape[-1]} "
                                              f"by {A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve (deprecated there): (X, A's copy) with T X = b, T = A's triangle
    (transpose: T^T X = b)."""
    check_args("triangular_solve", "bool", upper=upper, transpose=transpose, unitriangular=unitriangular)
    _linear_solve_checks("triangular_solve", b, A,
                         "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has {} dimensions instead",
                         "torch.triangular_solve: Expected A to have at least 2 dimensions, but it has {} dimensions instead")
    T = _T(A) if transpose else A
    return TriangularSolveResult(solve_triangular(T, b, upper=upper != transpose, unitriangular=unitriangular),
                                 clone(A))


# ---- Cholesky --------------------------------------------------------------------------------------

def _partial_cholesky(m):
    """(L, info) of one matrix that is not positive-definite, as LAPACK's unblocked potf2 leaves it (torch's CPU
    factor): columns factored up to the first diagonal d <= 0 (or NaN), which holds d; the rest of the lower
    triangle as in m; info that column's order."""
    L = np.tril(m)
    for j in range(m.shape[-1]):
        d = m[j, j] - L[j, :j] @ L[j, :j]
        if not d > 0:
            L[j, j] = d
            return L, j + 1
        L[j, j] = math.sqrt(d)
        L[j + 1:, j] = (m[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L, 0


def _cholesky_host(a, upper):
    """(L [..., n, n] lower (its transpose if upper), info [...]): info the first leading minor that is not
    positive-definite (0: none), such a matrix's L the partial factor torch's CPU gives (_partial_cholesky)."""
    a = np.swapaxes(a, -1, -2) if upper else a  # the upper triangle of A is the lower one of A^T
    try:
        L, info = np.linalg.cholesky(a), np.zeros(a.shape[:-2], np.int32)
        failed = np.isnan(L).any((-2, -1))  # numpy runs through a NaN, LAPACK stops at it
    except np.linalg.LinAlgError:
        L, info, failed = None, None, None
    if L is None or failed.any():
        flat = a.reshape(-1, *a.shape[-2:])
        L, info = np.zeros_like(flat), np.zeros(len(flat), np.int32)
        for i, m in enumerate(flat):
            try:
                L[i] = np.linalg.cholesky(m)
                if np.isnan(L[i]).any():
                    raise np.linalg.LinAlgError
            except np.linalg.LinAlgError:
                L[i], info[i] = _partial_cholesky(m)
        L, info = L.reshape(a.shape), info.reshape(a.shape[:-2])
    return (np.swapaxes(L, -1, -2) if upper else L), info


def _cholesky(name, A, upper, check_errors):
    """The Cholesky factor, recorded with torch's gradient: L^-T Phi L^-1, Phi = the symmetric matrix
    whose lower triangle is tril(L^T gL) with its diagonal halved (L^-1 from the host)."""
    L, info = _cholesky_host(_host(name, A, square=True), upper)
    if check_errors and info.any():
        _batch_error(name, info, lambda i: f"The factorization could not be completed because the input is not "
                     f"positive-definite (the leading minor of order {i} is not positive-definite).")
    out = _dev(L, A)

    def backward(g):
        low, g = (_T(out), _T(g)) if upper else (out, g)
        phi = tril(_T(low) @ g)
        phi = mul(add(phi, _T(tril(phi, -1))), 0.5)
        linv = _dev(np.linalg.inv(_host(name, low)), A)
        return (_T(linv) @ phi @ linv,)
    return _recorded(name, out, (A,), backward), info


def cholesky(A, *, upper=False):
    """torch.linalg.cholesky: L with A = L L^T reading A's lower triangle (upper: U with A = U^T U,
    reading the upper one), A [..., n, n]; on the host (the module's note). A matrix that is not
    positive-definite raises torch.linalg.LinAlgError. Gradient as torch's."""
    check_args("linalg_cholesky", "bool", upper=upper)
    return _cholesky("linalg.cholesky", A, upper, True)[0]


CholeskyExResult = return_types.linalg_cholesky_ex


def cholesky_ex(A, *, upper=False, check_errors=False):
    """torch.linalg.cholesky_ex: (L, info), info the order of the first leading minor that is not
    positive-definite (0: none); such a matrix's L is the partial factor of torch's CPU (LAPACK's potf2)."""
    check_args("linalg_cholesky_ex", "bool", upper=upper, check_errors=check_errors)
    L, info = _cholesky("linalg.cholesky_ex", A, upper, check_errors)
    return CholeskyExResult(L, _int32(info))


def _cholesky_old(A, upper=False):
    """torch.cholesky (deprecated there): linalg.cholesky with upper positional."""
    check_args("cholesky", "bool", upper=upper)
    return cholesky(A, upper=upper)


def _lu_old(A, pivot=True, get_infos=False):
    """torch.lu (deprecated there): (LU, pivots), with info where get_infos (else a zero pivot raises)."""
    return lu_factor_ex(A, pivot=pivot) if get_infos else lu_factor(A, pivot=pivot)


def _lu_solve_old(b, LU_data, LU_pivots):
    """torch.lu_solve (deprecated there): linalg.lu_solve with b first."""
    return lu_solve(LU_data, LU_pivots, b)


def _adjoint(input):
    """torch.adjoint: the transpose of the last two dims (a view; tnet has no complex dtypes); a 0-D tensor itself,
    with torch's deprecation warning."""
    if input.ndim == 0:
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return input
    check(input.ndim >= 2, lambda: f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                                    f"{input.ndim}-D tensor.")
    return transpose(input, -2, -1)


def cholesky_solve(B, L, upper=False):
    """torch.cholesky_solve: X with A X = B, A = L L^T (upper: U^T U) from its Cholesky factor; on the
    host (the module's note). Gradients as torch's: gB = A^-1 g, and with C = gB X^T + X gB^T,
    gL = -C L (upper: -U C), over the whole of L as torch's (not its triangle alone)."""
    check_args("cholesky_solve", "bool", upper=upper)
    _linear_solve_checks("cholesky_solve", B, L, "b should have at least 2 dimensions, but has {} dimensions instead",
                         "u should have at least 2 dimensions, but has {} dimensions instead")
    low = _host("cholesky_solve", L, square=True)
    low = np.tril(np.swapaxes(low, -1, -2)) if upper else np.tril(low)
    a = low @ np.swapaxes(low, -1, -2)
    X = _dev(_solve_host(a, _host("cholesky_solve", B)), B)

    def backward(g):
        gb = _dev(_solve_host(a, _host("cholesky_solve", g)), B)
        common = gb @ _T(X)
        common = add(common, _T(common))
        return gb, neg(L @ common if upper else common @ L)
    return _recorded("cholesky_solve", X, (B, L), backward)


def cholesky_inverse(L, upper=False):
    """torch.cholesky_inverse: A^-1 of A = L L^T (upper: U^T U); on the host. Gradient as torch's: with
    C = A^-1 (g + g^T) A^-1, gL = -C L (upper: -U C), over the whole of L as torch's."""
    check_args("cholesky_inverse", "bool", upper=upper)
    low = _host("cholesky_inverse", L, square=True)
    low = np.tril(np.swapaxes(low, -1, -2)) if upper else np.tril(low)
    inverse = _dev(np.linalg.inv(low @ np.swapaxes(low, -1, -2)), L)

    def backward(g):
        common = inverse @ add(g, _T(g)) @ inverse
        return (neg(L @ common if upper else common @ L),)
    return _recorded("cholesky_inverse", inverse, (L,), backward)


# ---- QR, Householder -------------------------------------------------------------------------------

QRResult = return_types.linalg_qr


def qr(A, mode="reduced"):
    """torch.linalg.qr: (Q, R) of A [..., m, n] as LAPACK's geqrf (mode 'reduced', 'complete', or 'r':
    Q empty); on the host (the module's note). Gradient as torch's (none for mode 'complete' of m > n),
    for m >= n: (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q (R^-1 from the host); for m < n, A = [X | Y] and
    R = [U | V]: X's gradient is that rule's with U for R and gQ + Y gV^T for gQ, Y's is Q gV."""
    check(mode in ("reduced", "complete", "r"), lambda: f"qr received unrecognized mode '{mode}' but expected one "
                                                         f"of 'reduced' (default), 'r', or 'complete'")
    a = _host("linalg.qr", A)
    m, n = a.shape[-2:]
    if _grad_wanted(A):
        check(mode != "r", "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "r":
        return QRResult(_dev(np.zeros(0), A), _dev(np.linalg.qr(a, mode="r"), A))
    q, r = np.linalg.qr(a, mode=mode)
    Q, R = _dev(q, A), _dev(r, A)
    k = min(m, n)  # R's leading square block U: all of R where m >= n

    def grad_of(which):
        def backward(g):
            if mode == "complete" and m > n:
                raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
            gq, gr = (g, None) if which == "Q" else (None, g)
            gu, gv = (gr, None) if gr is None or m >= n else (narrow(gr, -1, 0, k), narrow(gr, -1, k, n - k))
            if gv is not None:
                gq = _dev(a[..., k:], A) @ _T(gv)
            M = (narrow(R, -1, 0, k) @ _T(gu)) if gu is not None else None
            if gq is not None:
                M = neg(_T(gq) @ Q) if M is None else sub(M, _T(gq) @ Q)
            M = add(tril(M), _T(tril(M, -1)))
            uinv_t = _dev(np.swapaxes(np.linalg.inv(r[..., :k]), -1, -2), A)
            gx = (add(gq, Q @ M) if gq is not None else Q @ M) @ uinv_t
            if m >= n:
                return (gx,)
            return (cat([gx, Q @ gv if gv is not None else _dev(np.zeros(a.shape[:-1] + (n - k,)), A)], -1),)
        return backward
    return QRResult(_recorded("linalg.qr", Q, (A,), grad_of("Q")), _recorded("linalg.qr", R, (A,), grad_of("R")))


def _qr_old(A, some=True):
    """torch.qr (deprecated there): some=True the reduced QR, False the complete."""
    return qr(A, "reduced" if some else "complete")


@precision_of("ieee")
def _householder(A, tau, ncols):
    """The first ncols columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i column i of A below its
    diagonal with a 1 on it (LAPACK's orgqr): k rank-1 updates with tnet's ops, so the product has
    their gradients with respect to A and tau. Its fp32 products are exact ("ieee", not tnet's tf32
    default): torch's factorizations keep fp32's digits."""
    m, k = A.shape[-2], tau.shape[-1]
    V = add(tril(A, -1), _eye_like(m, A)[:, :A.shape[-1]])  # the reflectors, unit lower triangular
    Q = expand(_eye_like(m, A)[:, :ncols], A.shape[:-2] + (m, ncols))
    for i in reversed(range(k)):
        # H_i changes only Q's rows and columns from i on (v is 0 above row i; the columns before i are still I's
        # there), and column i, e_i until then, becomes e_i - tau_i v: LAPACK's orgqr, which updates just that
        # block and writes column i, so that a NaN tau or an inf in v reaches no other entry (no 0 * inf)
        v = narrow(unsqueeze(select(V, -1, i), -1), -2, i, m - i)
        t = unsqueeze(unsqueeze(select(tau, -1, i), -1), -1)
        block = sub(narrow(_eye_like(m - i, A), -1, 0, 1), mul(t, v))
        if ncols > i + 1:
            rest = narrow(narrow(Q, -2, i, m - i), -1, i + 1, ncols - i - 1)
            block = cat([block, sub(rest, mul(t, v @ (_T(v) @ rest)))], -1)
        Q = cat([narrow(Q, -2, 0, i), cat([narrow(narrow(Q, -2, i, m - i), -1, 0, i), block], -1)], -2)
    return Q


def householder_product(A, tau):
    """torch.linalg.householder_product (torch.orgqr): the first n columns of the product of the
    Householder reflectors in A [..., m, n] (below its diagonal) and tau [..., k]; on the device, with
    gradients with respect to A and tau (parametrizations.orthogonal's householder map needs them)."""
    check_tensors("linalg.householder_product", input=A, tau=tau)
    check(A.dtype.is_floating_point, lambda: f"linalg.householder_product: Expected a floating point or complex tensor "
                                             f"as input. Got {DTYPE_NAMES.get(A.dtype, A.dtype)}")
    check(A.ndim >= 2 and tau.ndim >= 1, "torch.linalg.householder_product: input must have at least 2 dimensions "
                                         "and tau at least 1.")
    check(A.shape[-2] >= A.shape[-1], "torch.linalg.householder_product: input.shape[-2] must be greater than or "
                                      "equal to input.shape[-1]")
    check(A.shape[-1] >= tau.shape[-1], "torch.linalg.householder_product: input.shape[-1] must be greater than or "
                                        "equal to tau.shape[-1]")
    check(A.ndim - tau.ndim == 1, lambda: f"torch.linalg.householder_product: Expected tau to have one dimension less "
                                          f"than input, but got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                                          f"{A.ndim}")
    check(A.shape[:-2] == tau.shape[:-1], lambda: f"torch.linalg.householder_product: Expected batch dimensions of tau "
                                                  f"to be equal to input.shape[:-2], but got {list(tau.shape[:-1])}")
    check(A.dtype == tau.dtype, lambda: f"torch.linalg.householder_product: tau dtype {DTYPE_NAMES.get(tau.dtype)} does "
                                        f"not match input dtype {DTYPE_NAMES.get(A.dtype)}")
    return _householder(A, tau, A.shape[-1])


GeqrfResult = return_types.geqrf


def geqrf(input):
    """torch.geqrf: LAPACK's packed QR (R on and above the diagonal, the reflectors below) and tau; on
    the host. No gradient."""
    _no_gradient("geqrf", input)
    h, tau = np.linalg.qr(_host("geqrf", input), mode="raw")
    return GeqrfResult(_dev(np.swapaxes(h, -1, -2), input), _dev(tau, input))


def ormqr(input, tau, other, left=True, transpose=False):
    """torch.ormqr: Q other (left=False: other Q; transpose: Q^T), Q the m x m product of geqrf's
    reflectors; on the device, with gradients (as householder_product)."""
    check_tensors("ormqr", input=input, tau=tau, other=other)
    q = _householder(input, tau, input.shape[-2])
    q = _T(q) if transpose else q
    with precision_of("ieee"):  # as _householder's
        return q @ other if left else other @ q


# ---- eigenvalues, singular values ---------------------------------------------------------------------

EighResult = return_types.linalg_eigh


def _eigh_host(a, UPLO="L"):
    """np.linalg.eigh, its failure to converge (a NaN) raised as torch's LinAlgError."""
    try:
        return np.linalg.eigh(a, UPLO=UPLO)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.eigh: The algorithm failed to converge because the input matrix is "
                          "ill-conditioned or has too many repeated eigenvalues.") from None


def eigh(A, UPLO="L"):
    """torch.linalg.eigh: the eigenvalues (ascending) and eigenvectors (columns) of the symmetric
    matrices A [..., n, n], reading the lower (UPLO='L') or upper triangle; on the host (the module's
    note). Gradient as torch's, on the device: V (diag(gL) + skew(V^T gV) / (L_j - L_i)) V^T (repeated
    eigenvalues give infinities there, as torch's)."""
    check_args("linalg_eigh", "str", UPLO=UPLO)
    check(UPLO in ("L", "U"), lambda: f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    a = _host("linalg.eigh", A, square=True)
    values, vectors = _eigh_host(a, UPLO)
    L, V = _dev(values, A), _dev(vectors, A)

    def vectors_grad(g):
        vg = _T(V) @ g
        gap = sub(unsqueeze(L, -2), unsqueeze(L, -1))  # L_j - L_i
        inner = div(mul(sub(vg, _T(vg)), 0.5), add(gap, _eye_like(a.shape[-1], A)))  # 0 on the diagonal
        return (V @ inner @ _T(V),)
    return EighResult(_recorded("linalg.eigh", L, (A,), lambda g: (mul(V, unsqueeze(g, -2)) @ _T(V),)),
                      _recorded("linalg.eigh", V, (A,), vectors_grad))


def eigvalsh(A, UPLO="L"):
    """torch.linalg.eigvalsh: eigh's eigenvalues, with their gradient."""
    return eigh(A, UPLO).eigenvalues


SVDResult = return_types.linalg_svd


def svd(A, full_matrices=True, *, driver=None):
    """torch.linalg.svd: (U, S, Vh) with A = U diag(S) Vh, S descending, A [..., m, n]; on the host
    (the module's note; driver is accepted and ignored). Gradients as torch's (on the k = min(m, n)
    leading columns where full_matrices), on the device; repeated singular values give infinities,
    as torch's."""
    a = _host("linalg.svd", A)
    u, s, vh = _svd_host(a, full_matrices)
    U, S, Vh = _dev(u, A), _dev(s, A), _dev(vh, A)
    m, n = a.shape[-2:]
    k = min(m, n)
    Uk, Vhk = (narrow(U, -1, 0, k), narrow(Vh, -2, 0, k)) if full_matrices else (U, Vh)

    def backward(gU, gS, gVh):
        """torch's svd_backward, with one of the gradients given."""
        if gS is not None:
            return (Uk @ mul(unsqueeze(gS, -1), Vhk),)
        s_row, s_col = unsqueeze(S, -2), unsqueeze(S, -1)
        s2 = mul(S, S)
        E = add(sub(unsqueeze(s2, -2), unsqueeze(s2, -1)), _eye_like(k, A))  # S_j^2 - S_i^2, 1 on the diagonal
        if gU is not None:
            gU = narrow(gU, -1, 0, k)
            skew = sub(_T(Uk) @ gU, _T(gU) @ Uk)
            inner = mul(div(skew, E), s_row)
            if m > n:
                gus = div(gU, s_row)
                return (sub(add(Uk @ inner, gus), Uk @ (_T(Uk) @ gus)) @ Vhk,)
        else:
            gVh = narrow(gVh, -2, 0, k)
            skew = sub(Vhk @ _T(gVh), gVh @ _T(Vhk))
            inner = mul(s_col, div(skew, E))
            if n > m:
                sgv = div(gVh, s_col)
                return (Uk @ sub(add(inner @ Vhk, sgv), (sgv @ _T(Vhk)) @ Vhk),)
        return (Uk @ inner @ Vhk,)
    return SVDResult(_recorded("linalg.svd", U, (A,), lambda g: backward(g, None, None)),
                     _recorded("linalg.svd", S, (A,), lambda g: backward(None, g, None)),
                     _recorded("linalg.svd", Vh, (A,), lambda g: backward(None, None, g)))


def svdvals(A, *, driver=None):
    """torch.linalg.svdvals: the singular values, descending; gradient U diag(g) Vh."""
    if _grad_wanted(A):
        return svd(A, False).S
    return _dev(_svd_host(_host("linalg.svdvals", A), compute_uv=False), A)


_SVDOld = return_types.svd


def _svd_old(input, some=True, compute_uv=True):
    """torch.svd (deprecated there): (U, S, V), V = Vh^T; some=False the full U and V; compute_uv=False
    zero U and V, as torch's."""
    U, S, Vh = svd(input, full_matrices=not some)
    if not compute_uv:
        return _SVDOld(mul(U, 0.0), S, mul(_T(Vh), 0.0))
    return _SVDOld(U, S, _T(Vh))


def _rtol(A, atol, rtol):
    """torch's default relative tolerance: max(m, n) eps of A's dtype where atol is not given (or 0)."""
    if rtol is None:
        return max(A.shape[-2:]) * torch.finfo(A.dtype).eps if atol is None or np.all(np.asarray(atol) == 0) else 0.0
    return rtol


def _tol(A, atol, rtol, smax):
    """max(atol, rtol * the largest singular value), per matrix (atol and rtol numbers or tensors)."""
    atol = 0.0 if atol is None else (atol.numpy() if isinstance(atol, Tensor) else atol)
    rtol = _rtol(A, atol, rtol)
    rtol = rtol.numpy() if isinstance(rtol, Tensor) else rtol
    return np.maximum(atol, rtol * smax)


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """torch.linalg.pinv (torch.pinverse): the pseudo-inverse of A [..., m, n] through an SVD (hermitian:
    eigh of A's lower triangle), singular values below max(atol, rtol * the largest) dropped, as torch's;
    on the host (the module's note). Gradient as torch's, on the device."""
    check_args("linalg_pinv", "bool", hermitian=hermitian)
    a = _host("linalg.pinv", A)
    if hermitian:
        a = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
        w, v = _eigh_host(a)
        keep = np.abs(w) > _tol(A, atol, rtol, np.abs(w).max(-1, initial=0.0))[..., None]
        p = (v * np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0)[..., None, :]) @ np.swapaxes(v, -1, -2)
    else:
        u, s, vh = _svd_host(a, full_matrices=False)
        keep = s > _tol(A, atol, rtol, s.max(-1, initial=0.0))[..., None]
        p = (np.swapaxes(vh, -1, -2) * np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)[..., None, :]) @ \
            np.swapaxes(u, -1, -2)
    P = _dev(p, A)
    return _recorded("linalg.pinv", P, (A,), lambda g: (_pinv_backward(g, P, A),))


def _pinv_backward(g, P, A):
    """torch's pinv_backward: A's gradient from P = pinv(A)'s gradient g."""
    Ph, gh = _T(P), _T(g)
    if A.shape[-2] <= A.shape[-1]:
        K = gh @ P
        KPh = K @ Ph
        return add(sub(sub(KPh, _T(P @ K)), (A @ P) @ KPh), (Ph @ P) @ sub(gh, K @ A))
    K = P @ gh
    PhK = Ph @ K
    return sub(add(sub(sub(gh, A @ K) @ P @ Ph, _T(K @ P)), PhK), PhK @ P @ A)


def pinverse(input, rcond=1e-15):
    """torch.pinverse: pinv with rtol=rcond."""
    return pinv(input, rtol=rcond)


def svd_lowrank(A, q=6, niter=2, M=None):
    """torch.svd_lowrank: (U, S, V), A - M ~ U diag(S) V^T of rank q, by Halko et al.'s randomized range finder
    (their algorithm 5, as torch's): a basis Q of (A - M) R for a random R [n, q] from tnet's generator, refined
    by niter power iterations (a QR after each product), then the SVD of Q^T (A - M). A wide A is worked
    transposed. Matrix products on the device, the QRs and the small SVD on the host (as linalg's);
    differentiable through them. R is tnet's draw, not torch's: the same values where (A - M)'s rank is at most q."""
    check_tensors("svd_lowrank", A=A)
    m, n = A.shape[-2:]
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    if M is not None:
        A = sub(A, M)
    wide = m < n
    if wide:
        A = _T(A)
    R = randn(A.shape[-1], q, dtype=A.dtype)
    Q = qr(A @ R).Q
    for _ in range(niter):
        Q = qr(_T(A) @ Q).Q
        Q = qr(A @ Q).Q
    U, S, Vh = svd(_T(Q) @ A, full_matrices=False)
    U, V = Q @ U, _T(Vh)
    return (V, S, U) if wide else (U, S, V)


def pca_lowrank(A, q=None, center=True, niter=2):
    """torch.pca_lowrank: svd_lowrank of A with its column means taken off (center), q at most min(m, n)
    (default min(6, m, n)): V's columns are the principal directions, S**2 / (m - 1) their variances."""
    check_tensors("pca_lowrank", A=A)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    return svd_lowrank(sub(A, _reduce.mean(A, -2, keepdim=True)) if center else A, q, niter)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """torch.linalg.matrix_rank: the count of singular values (hermitian: |eigenvalues|) above max(atol,
    rtol * the largest), int64; on the host."""
    a = _host("linalg.matrix_rank", A)
    if hermitian:
        s = np.abs(_eigh_host(a).eigenvalues)
    else:
        s = _svd_host(a, compute_uv=False)
    tol = _tol(A, atol, rtol, s.max(-1, initial=0.0))
    return tensor((s > tol[..., None]).sum(-1).astype(np.int64))


LstsqResult = return_types.linalg_lstsq


def lstsq(A, B, rcond=None, *, driver=None):
    """torch.linalg.lstsq: the least-squares solution X of A X = B (A [..., m, n], B [..., m, k] or
    [..., m]), through numpy's SVD solver (the minimum-norm solution: torch's gelsy may differ for a
    rank-deficient A); on the host (the module's note). driver (default 'gelsy', torch's CPU one) picks
    what else is returned as torch's: rank for gelsy/gelsd/gelss, singular_values for gelsd/gelss,
    residuals for gels/gelsd/gelss when m > n and A has full rank; the rest empty. The solution's gradient is
    torch's, that of X = pinv(A) B (pinv's backward for A, pinv(A)^T gX for B; the pseudo-inverse on the host
    again in the backward); the residuals carry none (torch's ignore theirs too)."""
    driver = "gelsy" if driver is None else driver
    check(driver in ("gels", "gelsy", "gelsd", "gelss"), "torch.linalg.lstsq: parameter `driver` should be one of "
                                                         "(gels, gelsy, gelsd, gelss)")
    check_tensors("torch.linalg.lstsq", input=A, other=B)
    check(A.dtype == B.dtype, lambda: f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                                      f"input's dtype {DTYPE_NAMES.get(A.dtype, A.dtype)} and other's dtype "
                                      f"{DTYPE_NAMES.get(B.dtype, B.dtype)}")
    a, b = _host("torch.linalg.lstsq", A), _host("torch.linalg.lstsq", B, least=1)
    check(0 <= a.ndim - b.ndim <= 1, "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                                     "(input.dim() - other.dim()) <= 1")
    row = -1 if b.ndim == a.ndim - 1 else -2
    check(a.shape[-2] == b.shape[row], f"torch.linalg.lstsq: input.size(-2) should match other.size({row})")
    check(not np.isnan(a).any(), "torch.linalg.lstsq: Argument 4 has illegal value (A has a NaN)")
    vector = b.ndim == a.ndim - 1
    b = b[..., None] if vector else b
    m, n = a.shape[-2:]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])
    flat_a, flat_b = a.reshape(-1, m, n), b.reshape(-1, m, b.shape[-1])
    rcond = rcond if rcond is not None else _rtol(A, None, None)
    x = np.zeros((len(flat_a), n, b.shape[-1]))
    rank = np.zeros(len(flat_a), np.int64)
    sv = np.zeros((len(flat_a), min(m, n)))
    for i in range(len(flat_a)):
        if np.isfinite(flat_a[i]).all() and np.isfinite(flat_b[i]).all():  # else NaN: LAPACK's SVD can loop on inf
            x[i], _, rank[i], sv[i] = np.linalg.lstsq(flat_a[i], flat_b[i], rcond=rcond)
        else:
            x[i], sv[i] = np.nan, np.nan
    x = x.reshape(batch + (n, b.shape[-1]))
    residuals = np.zeros(0)
    if driver != "gelsy" and m > n and (rank == n).all():
        residuals = (((a @ x - b) ** 2).sum(-2))
        residuals = residuals[..., 0] if vector else residuals
    X = _dev(x[..., 0] if vector else x, A)

    def backward(g):
        """torch's linalg_lstsq_backward: X = pinv(A) B's gradients."""
        P = pinv(A.detach())
        g = unsqueeze(g, -1) if vector else g
        gA = _pinv_backward(g @ _T(unsqueeze(B, -1) if vector else B), P, A) if A.requires_grad else None
        gB = _T(P) @ g if B.requires_grad else None
        return gA, None if gB is None else squeeze(gB, -1) if vector else gB
    X = _recorded("linalg.lstsq", X, (A, B), backward)
    return LstsqResult(X, _dev(residuals, A),
                       tensor(rank.reshape(batch) if driver != "gels" else np.zeros(0, np.int64)),
                       _dev(sv.reshape(batch + (min(m, n),)) if driver in ("gelsd", "gelss") else np.zeros(0), A))


def cond(A, p=None):
    """torch.linalg.cond: p None or 2 the ratio of the largest to the smallest singular value (-2: its
    inverse), else matrix_norm(A, p) * matrix_norm(A^-1, p) ('fro', 'nuc', inf, -inf, 1, -1; a square
    A). With gradients through svdvals, inv and the norms."""
    check_tensors("linalg.cond", A=A)
    if not (p is None or isinstance(p, (str, int, float)) and not isinstance(p, bool)):
        raise InputTypeError(f"linalg_cond() received an invalid combination of arguments - got (Tensor, "
                             f"p={type(p).__name__}), but expected a number or a str for p")
    check(A.ndim >= 2, "linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p in (None, 2, -2):
        s = svdvals(A)
        big, small = select(s, -1, 0), select(s, -1, s.shape[-1] - 1)
        return div(small, big) if p == -2 else div(big, small)
    check(p in ("fro", "nuc", math.inf, -math.inf, 1, -1), lambda: f"linalg.cond got an invalid norm type: {p}")
    check(A.shape[-1] == A.shape[-2], lambda: f"linalg.cond(ord={p if isinstance(p, str) else format(p, 'g')}): A must "
                                              f"be batches of square matrices, but they are {A.shape[-2]} by "
                                              f"{A.shape[-1]} matrices")
    if p == "nuc":  # torch's: sum(s) sum(1 / s) of the singular values, inf or NaN (0 * inf) where one is 0
        s = svdvals(A)
        return mul(reduce_sum(s, -1), reduce_sum(div(1.0, s), -1))
    # torch's: a singular matrix's inverse filled with inf, and 0 * inf (a zero matrix) taken as inf
    inverse, info = inv_ex(A)
    inverse = where(unsqueeze(unsqueeze(Tensor(info.memory > 0), -1), -1), math.inf, inverse)
    return nan_to_num(mul(matrix_norm(A, p), matrix_norm(inverse, p)), math.inf, math.inf, -math.inf)


# ---- products on the device --------------------------------------------------------------------------

def matrix_power(A, n):
    """torch.linalg.matrix_power (Tensor.matrix_power): A^n by repeated squaring with tnet's matmul
    (n < 0: inv(A)^-n; n = 0: the identity, whose gradient is zeros; n = 1: a copy), with gradients, as torch's."""
    check_tensors("linalg.matrix_power", A=A)
    check_args("linalg_matrix_power", "int", n=n)  # the parser's TypeError before the shape's check
    check(A.ndim >= 2 and A.shape[-1] == A.shape[-2], lambda: f"linalg.matrix_power: A must be batches of square "
                                                              f"matrices, but they are {A.shape[-2]} by "
                                                              f"{A.shape[-1]} matrices")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        eye = expand(_eye_like(A.shape[-1], A), *A.shape).memory.contiguous()
        return record("linalg.matrix_power", eye, (A,), lambda g: (torch.zeros_like(A.memory),),
                      graph=lambda g, y: (Tensor(torch.zeros_like(A.memory)),))
    if n < 0:
        A, n = inv(A), -n
    result, square = None, A
    while True:
        if n & 1:
            result = square if result is None else result @ square
        n >>= 1
        if not n:
            return clone(result) if result is A else result
        square = square @ square


@precision_of("ieee")
def matrix_exp(A):
    """torch.linalg.matrix_exp (torch.matrix_exp, Tensor.matrix_exp): e^A by scaling and squaring on the
    device: A / 2^s with its 1-norm below torch's float32 bound for a Taylor polynomial of degree 18 (3.01: a
    truncation error near float32's epsilon), that polynomial (Horner, tnet's matmul), squared s times; with
    gradients through those ops. Each squaring doubles the rounding error, so the bound is as large as the
    degree allows (a 1-norm of 1e5 scaled below 1/2 was 1.4% off, torch's 0.15%). Its fp32 products are exact
    ("ieee", not tnet's tf32 default: the squarings multiply tf32's error by 2^s). Each matrix of a batch has
    its own s (from its 1-norm: one host read), so a large one does not scale the others to zero;
    the batch squares max(s) times, a matrix only in its first s. A 1 x 1 matrix is exp of its entry,
    as torch's special case (so [[-inf]] gives 0, where the scaling would give inf or NaN); a larger one
    whose 1-norm is not finite (an inf or NaN entry; or one past float32's range, where torch's is no better)
    is NaN everywhere, as torch's."""
    check_tensors("linalg.matrix_exp", A=A)
    check(A.is_floating_point(), lambda: f"linalg.matrix_exp: Expected a floating point or complex tensor as input. Got {A.dtype}")
    check(A.ndim >= 2 and A.shape[-1] == A.shape[-2], lambda: f"linalg.matrix_exp: A must be batches of square "
                                                              f"matrices, but they are {A.shape[-2]} by "
                                                              f"{A.shape[-1]} matrices")
    if A.numel() == 0:
        return clone(A)
    if A.shape[-1] == 1:
        return exp(A)
    with no_grad():
        norms = np.asarray(_matrix_norm(A, 1, (-2, -1)).numpy(), np.float64)
    bound = 3.010066362817634  # torch's theta_18 of float32
    big = np.isfinite(norms) & (norms > bound)  # NaN and inf stay unscaled: they propagate
    s = np.where(big, np.ceil(np.log2(np.where(big, norms, 1.0) / bound)), 0).astype(np.int64).reshape(norms.shape + (1, 1))
    X = mul(A, _dev(0.5 ** s, A)) if s.any() else A
    eye = _eye_like(A.shape[-1], A)
    E = eye
    for k in range(18, 0, -1):  # I + X/1 (I + X/2 (... (I + X/18)))
        E = add(eye, mul(X @ E, 1.0 / k)) if k < 18 else add(eye, mul(X, 1.0 / k))
    for k in range(int(s.max())):
        E = E @ E if (s > k).all() else where(_dev(s > k, torch.bool), E @ E, E)
    bad = ~np.isfinite(norms)
    return where(_dev(bad.reshape(s.shape), torch.bool), math.nan, E) if bad.any() else E


def _chain_order(dims):
    """The cheapest parenthesization of a chain of matrices dims[i] x dims[i+1]: split[i][j]."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors, *, out=None):
    """torch.linalg.multi_dot: the product of the matrices in tensors (the first may be a row vector,
    the last a column vector, 1-D both), in the order of fewest multiplications, with tnet's matmul
    and its gradients."""
    check(out is None, "linalg.multi_dot: out= is not supported by tnet")
    tensors = list(tensors)
    check(len(tensors) >= 2, lambda: f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    check_tensors("linalg.multi_dot", **{f"tensors[{i}]": t for i, t in enumerate(tensors)})
    first, last = tensors[0].ndim, tensors[-1].ndim
    check(first in (1, 2), lambda: f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    check(last in (1, 2), lambda: f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i, t in enumerate(tensors[1:-1], 1):
        check(t.ndim == 2, lambda: f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    if first == 1:
        tensors[0] = unsqueeze(tensors[0], 0)
    if last == 1:
        tensors[-1] = unsqueeze(tensors[-1], -1)
    for i in range(1, len(tensors)):
        check(tensors[i - 1].shape[1] == tensors[i].shape[0], lambda: f"multi_dot(): tensors {i - 1} and {i} with "
              f"shapes {tuple(tensors[i - 1].shape)} and {tuple(tensors[i].shape)} cannot be multiplied")
    split = _chain_order([t.shape[0] for t in tensors] + [tensors[-1].shape[1]])

    def product(i, j):
        return tensors[i] if i == j else product(i, split[i][j]) @ product(split[i][j] + 1, j)
    out = product(0, len(tensors) - 1)
    if first == 1 and last == 1:
        return reshape(out, ())
    return squeeze(out, 0) if first == 1 else squeeze(out, -1) if last == 1 else out


def chain_matmul(*matrices, out=None):
    """torch.chain_matmul (deprecated there): multi_dot of 2-D matrices; one matrix: a copy."""
    check(matrices, "chain_matmul(): Expected one or more matrices")
    for m in matrices:
        check(isinstance(m, Tensor) and m.ndim == 2, "chain_matmul(): Expected all tensors to be 2D")
    return matrices[0].clone() if len(matrices) == 1 else multi_dot(matrices, out=out)


def vecdot(x, y, *, dim=-1):
    """torch.linalg.vecdot: the sum of x * y over dim, broadcast (real tensors: no conjugate)."""
    check_tensors("linalg.vecdot", x=x, y=y)
    check_args("linalg_vecdot", "int", dim=dim)
    check(x.is_floating_point(), lambda: f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                                         f"{DTYPE_NAMES.get(x.dtype, x.dtype)}")
    check(x.dtype == y.dtype, lambda: f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                                      f"{DTYPE_NAMES.get(x.dtype, x.dtype)} and y of type {DTYPE_NAMES.get(y.dtype, y.dtype)} instead")
    if x.ndim == 1 and y.ndim == 1:  # torch's dot of two vectors, whatever dim: their lengths equal, unbroadcast
        check(x.shape == y.shape, lambda: f"inconsistent tensor size, expected tensor [{x.shape[0]}] and src "
                                          f"[{y.shape[0]}] to have the same number of elements, but got {x.shape[0]} "
                                          f"and {y.shape[0]} elements respectively")
        dim = 0
    return reduce_sum(mul(x, y), dim)


def tensorinv(A, ind=2):
    """torch.linalg.tensorinv: the inverse of A seen as a matrix prod(shape[:ind]) x prod(shape[ind:]),
    shaped shape[ind:] + shape[:ind]; with inv's gradient."""
    check(ind > 0, "Expected a strictly positive integer for 'ind', but got ind")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    check(rows == cols, lambda: f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                                f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return reshape(inv(reshape(A, (rows, cols))), (*A.shape[ind:], *A.shape[:ind]))


def tensorsolve(A, B, dims=None):
    """torch.linalg.tensorsolve: X with tensordot(A, X, X.ndim) = B (dims of A moved to its end
    first); with solve's gradient."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = permute(A, [d for d in range(A.ndim) if d not in dims] + dims)
    rows = B.numel()
    rest = A.shape[B.ndim:]
    check(math.prod(rest) == rows, "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                                   "prod(self.shape[:other.ndim]), but got a non-square matrix")
    return reshape(solve(reshape(A, (rows, rows)), reshape(B, (rows,))), tuple(rest))


def vander(x, *, N=None):
    """torch.linalg.vander: [..., n, N] the increasing powers x^0 ... x^(N-1) of x [..., n] (tnet.vander's
    running product)."""
    check_tensors("linalg.vander", x=x)
    x = reshape(x, (1,)) if x.ndim == 0 else x  # a 0-d x is one element, as torch's
    N = x.shape[-1] if N is None else N
    check(N > 1, "N must be greater than 1.")
    return reshape(vander_1d(reshape(x, (-1,)), N, increasing=True), (*x.shape, N))


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: tnet.diagonal over the last two dims by default."""
    return copy_diagonal(A, offset, dim1, dim2)


# ---- norms ---------------------------------------------------------------------------------------------

def _check_ord(name, ord, none=True):
    """torch's parser: a norm's ord is a number (a bool too), a str or, where none, None (its TypeError for a list
    or an object)."""
    if not (none and ord is None or isinstance(ord, (str, numbers.Real))):
        raise InputTypeError(f"{name}() received an invalid combination of arguments - got ord={type(ord).__name__}, "
                             f"but expected a number or a str")


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.linalg.matrix_norm: 'fro', 1, -1, inf and -inf on tnet's kernels; 'nuc', 2 and -2 (the sum,
    largest and smallest singular value) through svdvals (on the host), all with gradients."""
    check_tensors("linalg.matrix_norm", A=A)
    _check_ord("linalg_matrix_norm", ord, none=False)
    check_args("linalg_matrix_norm", "bool", keepdim=keepdim)  # the parser's TypeError before the checks of A
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if ord in ("nuc", 2, -2):  # torch's: the singular values of no 16-bit matrix, before any check of dim
        check(A.ndim >= 2, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        check(A.dtype not in (torch.float16, torch.bfloat16),
              lambda: f"linalg.matrix_norm: Low precision dtypes not supported. Got {DTYPE_NAMES[A.dtype]}")
    if ord in ("nuc", 2, 1, math.inf) and A.ndim >= 2 and len(dims) == 2 and \
            all(isinstance(d, int) and -A.ndim <= d < A.ndim for d in dims) and any(A.shape[d] == 0 for d in dims):
        # an empty matrix's norm is 0, as torch's, where a largest value over an empty dim (2's over the singular
        # values, 1's over the column sums, inf's over the row sums) is a 0 that records no gradient
        out = _matrix_norm(A, "fro", dim, keepdim, dtype=dtype)
        over = {1: dims[1], math.inf: dims[0]}.get(ord)
        return out.detach() if ord == 2 or over is not None and A.shape[over] == 0 else out
    if ord not in ("nuc", 2, -2):
        return _matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    check_tensors("linalg.matrix_norm", A=A)
    dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    check(len(dim) == 2, lambda: f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    check(A.ndim >= 2, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    A = norm_dtype("linalg.matrix_norm", A, dtype)
    rows, cols = (d % A.ndim for d in dim)
    check(rows != cols, lambda: f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    s = svdvals(movedim(A, (rows, cols), (-2, -1)))
    y = reduce_sum(s, -1) if ord == "nuc" else select(s, -1, 0 if ord == 2 else s.shape[-1] - 1)
    if keepdim:
        for d in sorted((rows, cols)):
            y = unsqueeze(y, d)
    return y


def nuclear_norm(input, dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.nuclear_norm (torch keeps it for TorchScript): matrix_norm(input, 'nuc', dim, keepdim), also in torch's
    form nuclear_norm(input, keepdim); dtype (tnet's, for torch.norm(p='nuc')): input cast first."""
    if isinstance(dim, bool):
        dim, keepdim = (-2, -1), dim
    return matrix_norm(input, "nuc", dim, keepdim, dtype=dtype)


# torch.norm(p='nuc') (functional.reduce's norm, which this module is built on) is this module's nuclear norm
_reduce.nuclear_norm = nuclear_norm


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: with ord None, the 2-norm of the entries over dim (None: all of them,
    any shape); else a vector norm (vector_norm) over one dim, or a matrix norm (matrix_norm) over
    two; without dim, A must then be 1-D or 2-D."""
    check_tensors("linalg.norm", A=A)
    _check_ord("linalg_norm", ord)
    if dim is not None:
        check_args("linalg_norm", "tuple of ints", dim=dim)  # the parser's TypeError (dim='x')
        dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        check(len(dim) in (1, 2), lambda: f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                                          f"Got {list(dim)}")
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None:
        check(A.ndim in (1, 2), lambda: f"linalg.norm: If dim is not specified but ord is, the input must be 1D or "
                                        f"2D. Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    check(not isinstance(ord, str), lambda: f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim[0]}")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cross(input, other, *, dim=-1):
    """torch.linalg.cross: the cross product of 3-vectors along dim (default the last), broadcast."""
    return _cross(input, other, dim)


# ---- what tnet does not have ---------------------------------------------------------------------------

def _missing(name, why):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{name}: {why}")
    fn.__name__ = name.rsplit(".", 1)[-1]
    fn.__doc__ = f"torch's {name}: not in tnet ({why})."
    return fn


_COMPLEX = "its results are complex, and tnet has no complex dtypes (for symmetric A use linalg.eigh)"
eig = _missing("linalg.eig", _COMPLEX)
eigvals = _missing("linalg.eigvals", _COMPLEX)
_LDL = "the Bunch-Kaufman LDL^T factorization is not implemented (use linalg.cholesky or linalg.lu_factor)"
ldl_factor = _missing("linalg.ldl_factor", _LDL)
ldl_factor_ex = _missing("linalg.ldl_factor_ex", _LDL)
ldl_solve = _missing("linalg.ldl_solve", _LDL)


# torch's top-level forms whose signatures differ from torch.linalg's (tnet/__init__.py and the
# Tensor methods take them from here)
TORCH_FORMS = {"svd": _svd_old, "qr": _qr_old, "cholesky": _cholesky_old, "lu": _lu_old, "lu_solve": _lu_solve_old,
               "inverse": inv, "orgqr": householder_product, "adjoint": _adjoint}
