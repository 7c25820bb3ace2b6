"""tnet.cov and tnet.linalg against torch in float64: the norms (tnet's kernels), the factorizations
and solves (numpy on the host, gradients on the device), the matrix products (matrix_power,
multi_dot, matrix_exp), with gradients; torch's matrix functions at the top level and as methods."""
import math
import warnings

import numpy as np
import pytest
import torch

import tnet
from helpers import TOL, check, leaf


@pytest.mark.parametrize("shape,correction", [((4, 9), 1), ((3, 5), 0), ((7,), 1), ((2, 1), 0)])
def test_cov_matches_torch_with_gradient(shape, correction, rng, ieee):
    x = leaf(rng, *shape)
    check(lambda t: tnet.cov(t, correction=correction), lambda r: torch.cov(r, correction=correction), [x], rng,
          TOL["ieee"])


def test_cov_with_no_degree_of_freedom_is_infinite_like_torch():
    x = np.array([[1.0, 3.0], [2.0, 2.0]], dtype=np.float32)
    got, ref = tnet.cov(tnet.tensor(x), correction=2).numpy(), torch.cov(torch.tensor(x), correction=2).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(got[~np.isnan(got)], ref[~np.isnan(ref)])


def test_cov_errors_like_torch(rng):
    x = leaf(rng, 2, 3, 4)[0]
    with pytest.raises(ValueError, match="two or fewer dimensions"):
        tnet.cov(x)
    y = leaf(rng, 2, 3)[0]
    for kwargs, match in [({"fweights": tnet.tensor([1.0, 2.0, 3.0])}, "integral dtype"),
                          ({"aweights": tnet.tensor([1, 2, 3])}, "floating point dtype"),
                          ({"fweights": tnet.tensor([1, 2])}, "same numel"),
                          ({"aweights": tnet.tensor([[1.0, 2.0, 3.0]])}, "one or fewer dimensions"),
                          ({"fweights": tnet.tensor([1, -2, 3])}, "cannot be negative"),
                          ({"aweights": tnet.zeros(3)}, "weights sum to zero")]:
        with pytest.raises(RuntimeError, match=match):
            tnet.cov(y, **kwargs)
        with pytest.raises(RuntimeError, match=match):
            torch.cov(torch.zeros(2, 3), **{k: torch.tensor(v.numpy()) for k, v in kwargs.items()})


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_with_observation_weights_matches_torch_with_gradient(correction, rng, ieee):
    """fweights (repeat counts) and aweights (importances) as torch's, the gradient reaching x and aweights (ports 33:
    an EM for a Gaussian mixture's M-step, torch.cov(x.T, aweights=resp[:, k]), raised NotImplementedError)."""
    x, aw = leaf(rng, 3, 7), leaf(rng, 7, positive=True)
    fw = rng.integers(1, 4, 7)
    check(lambda t, a: tnet.cov(t, correction=correction, fweights=tnet.tensor(fw), aweights=a),
          lambda r, a: torch.cov(r, correction=correction, fweights=torch.tensor(fw), aweights=a), [x, aw], rng,
          TOL["ieee"])
    check(lambda t: tnet.cov(t, correction=correction, fweights=tnet.tensor(fw)),
          lambda r: torch.cov(r, correction=correction, fweights=torch.tensor(fw)), [x], rng, TOL["ieee"])


def test_eigh_matches_torch(rng):
    a = rng.standard_normal((6, 6))
    a = (a + a.T).astype(np.float32)
    with tnet.no_grad():
        got = tnet.linalg.eigh(tnet.tensor(a))
    ref = torch.linalg.eigh(torch.tensor(a, dtype=torch.float64))
    np.testing.assert_allclose(got.eigenvalues.numpy(), ref.eigenvalues.numpy(), atol=1e-5)
    # eigenvectors up to sign: A v = lambda v for each column
    v, lam = got.eigenvectors.numpy().astype(np.float64), got.eigenvalues.numpy().astype(np.float64)
    np.testing.assert_allclose(a @ v, v * lam, atol=1e-4)
    assert got.eigenvalues.dtype == torch.float32 and got.eigenvectors.shape == (6, 6)


def test_eigh_refuses_what_it_cannot_do(rng):
    with pytest.raises(ValueError, match="square"):
        tnet.linalg.eigh(tnet.zeros(2, 3))
    with pytest.raises(TypeError):
        tnet.linalg.eigh(np.eye(3))


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm_as_torch(rng, ord, dim, keepdim):
    """Every kind of ord, with zeros in x (p < 1's masked gradient) and a zero slice (a norm of 0:
    its gradient 0), and a tie for the largest |x| (inf's gradient shared)."""
    a = rng.standard_normal((3, 4, 5))
    a[0, 1, :2] = 0.0
    a[2, :, 3] = 0.0
    a[1, 0, 0], a[1, 0, 1] = 3.0, -3.0
    x = leaf(rng, 3, 4, 5, values=a)
    ours, theirs = tnet.linalg.vector_norm(x[0], ord, dim, keepdim), torch.linalg.vector_norm(x[1], ord, dim, keepdim)
    if ord == 0:  # the count of nonzeros, without gradient: x.grad stays None, as torch's (fuzz seed 61, case 1575)
        np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
        ours.sum().backward()
        theirs.sum().backward()
        assert x[0].grad is None and x[1].grad is None
        d = tnet.dist(x[0], tnet.zeros(3, 4, 5), 0) + x[0].sum()  # beside another use: that use's gradient alone
        d.backward()
        assert x[0].grad.tolist() == torch.ones(3, 4, 5).tolist()
        return
    check(lambda t: tnet.linalg.vector_norm(t, ord, dim, keepdim), lambda r: torch.linalg.vector_norm(r, ord, dim, keepdim),
          [x], rng, TOL["ieee"])


@pytest.mark.parametrize("ord,dim", [(None, None), (None, 1), (None, (0, 2)), ("fro", (2, 0)), (1, (0, 2)),
                                     (-1, (1, 2)), (math.inf, (-1, -3)), (-math.inf, (0, 1)), (3, 1), (0.5, (2,))])
@pytest.mark.parametrize("keepdim", [False, True])
def test_linalg_norm_as_torch(rng, ord, dim, keepdim):
    """ord None (the entries' 2-norm over any dims), vector norms over one dim and matrix norms over
    two, keepdim either way, against torch.linalg.norm with its gradient; Tensor.norm and tnet.norm
    share the vector norms (p=0 too)."""
    x = leaf(rng, 3, 4, 5)
    check(lambda t: tnet.linalg.norm(t, ord, dim, keepdim), lambda r: torch.linalg.norm(r, ord, dim, keepdim), [x],
          rng, TOL["ieee"])


def test_norm_without_dim_shares_vector_and_matrix_norms(rng):
    for shape, ords in (((7,), [None, 2, 1, math.inf, -0.5, 3]), ((4, 6), [None, "fro", 1, -1, math.inf, -math.inf])):
        for ord in ords:
            x = leaf(rng, *shape)
            check(lambda t: tnet.linalg.norm(t, ord), lambda r: torch.linalg.norm(r, ord), [x], rng, TOL["ieee"])
    x = leaf(rng, 3, 5)
    np.testing.assert_array_equal(x[0].norm(0, 1).numpy(), x[1].norm(0, 1).detach().numpy())
    check(lambda t: tnet.linalg.matrix_norm(t, 1), lambda r: torch.linalg.matrix_norm(r, 1), [x], rng, TOL["ieee"])


@pytest.mark.parametrize("name, args", [("nuclear_norm", ()), ("nuclear_norm", (True,)),
                                        ("nuclear_norm", ([0, 2], True)), ("frobenius_norm", ([1, 2],)),
                                        ("frobenius_norm", (1, True)), ("frobenius_norm", ([],))])
def test_torchscript_norms_as_torch(rng, name, args):
    """torch.nuclear_norm (both its forms) and torch.frobenius_norm, which torch keeps for TorchScript: values and
    gradients against torch in float64."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warnings
        check(lambda t: getattr(tnet, name)(t, *args), lambda r: getattr(torch, name)(r, *args), [leaf(rng, 2, 3, 4)],
              rng, TOL["ieee"])
    with pytest.raises(RuntimeError, match="at most 2 dimensions"):
        tnet.frobenius_norm(tnet.ones(2, 3, 4), [0, 1, 2])


def test_norm_errors_as_torch(rng):
    x = leaf(rng, 2, 3, 4)[0]
    with pytest.raises(RuntimeError, match="input must be 1D or 2D"):
        tnet.linalg.norm(x, "fro")
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        tnet.linalg.norm(x, 3, (0, 1))
    with pytest.raises(RuntimeError, match="must be of length 1 or 2"):
        tnet.linalg.norm(x, 2, (0, 1, 2))
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        tnet.linalg.norm(x, "fro", 1)
    with pytest.raises(TypeError, match="must be Number"):
        tnet.linalg.vector_norm(x, "fro")
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        tnet.linalg.vector_norm(tnet.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="empty tensor"):
        tnet.linalg.vector_norm(tnet.zeros(0, 3), math.inf)
    with pytest.raises(NotImplementedError, match="singular values"):  # tnet.norm's own matrix norms
        tnet.functional.reduce.matrix_norm(x, "nuc", (0, 1))
    assert tnet.linalg.vector_norm(tnet.zeros(0, 3)).item() == 0.0
    with pytest.raises(RuntimeError, match="without narrowing"):  # as torch's: dtype may widen, not narrow
        tnet.linalg.vector_norm(tnet.ones(3), dtype=tnet.float16)
    assert tnet.linalg.vector_norm(tnet.ones(3).half(), dtype=tnet.float32).dtype == torch.float32


# ---- factorizations, solves and matrix products ------------------------------------------------------

def well_conditioned(rng, *shape, shift=3.0):
    """A leaf pair of standard normal matrices plus shift * I (square ones: far from singular)."""
    a = rng.standard_normal(shape)
    if shape[-1] == shape[-2]:
        a = a + shift * np.eye(shape[-1])
    return leaf(rng, *shape, values=a)


def spd(rng, *shape):
    """A leaf pair of symmetric positive-definite matrices."""
    a = rng.standard_normal(shape)
    return leaf(rng, *shape, values=a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1]))


GRAD_TOL = 1e-4  # float32 device GEMMs on values from float64 host factorizations


@pytest.mark.parametrize("name,shape,fn", [
    ("inv", (4, 4), lambda L, A: L.inv(A)),
    ("inv batched", (2, 3, 3), lambda L, A: L.inv(A)),
    ("det", (2, 4, 4), lambda L, A: L.det(A)),
    ("slogdet", (3, 3), lambda L, A: L.slogdet(A).logabsdet),
    ("matrix_power 3", (2, 3, 3), lambda L, A: L.matrix_power(A, 3)),
    ("matrix_power -2", (3, 3), lambda L, A: L.matrix_power(A, -2)),
    ("matrix_exp", (2, 3, 3), lambda L, A: L.matrix_exp(A)),
    ("pinv tall", (5, 3), lambda L, A: L.pinv(A)),
    ("pinv wide", (2, 3, 5), lambda L, A: L.pinv(A)),
    ("svd U", (5, 3), lambda L, A: L.svd(A, full_matrices=False).U ** 2),
    ("svd Vh", (3, 5), lambda L, A: L.svd(A, full_matrices=False).Vh ** 2),
    ("svd full U", (3, 5), lambda L, A: L.svd(A).U ** 2),
    ("svd S", (2, 4, 3), lambda L, A: L.svd(A).S),
    ("svdvals", (3, 4), lambda L, A: L.svdvals(A)),
    ("qr Q", (5, 3), lambda L, A: L.qr(A).Q),
    ("qr R", (2, 4, 4), lambda L, A: L.qr(A).R),
    ("qr wide Q", (2, 3, 4), lambda L, A: L.qr(A).Q),  # fuzz seed 24: m < n had no gradient
    ("qr wide R", (3, 5), lambda L, A: L.qr(A, mode="complete").R),
    ("cond", (4, 4), lambda L, A: L.cond(A)),
    ("cond fro", (3, 3), lambda L, A: L.cond(A, "fro")),
    ("matrix_norm nuc", (3, 4), lambda L, A: L.matrix_norm(A, "nuc")),
    ("norm 2 keepdim", (3, 2, 4), lambda L, A: L.norm(A, 2, (0, 2), True)),
    ("tensorinv", (2, 3, 6), lambda L, A: L.tensorinv(A, 2)),
    # lu's and lu_factor's gradients (fuzz seed 800, linalg.lu and lu_factor: tnet had none)
    ("lu L", (3, 3), lambda L, A: L.lu(A).L), ("lu U", (2, 4, 4), lambda L, A: L.lu(A).U),
    ("lu wide", (2, 3, 5), lambda L, A: L.lu(A).L * 2 + L.lu(A).U[..., :3]),
    ("lu wide U", (3, 5), lambda L, A: L.lu(A).U), ("lu tall", (5, 3), lambda L, A: L.lu(A).L),
    ("lu tall U", (2, 5, 3), lambda L, A: L.lu(A).U * 3 + L.lu(A).L[..., :3, :]),
    ("lu_factor", (2, 4, 4), lambda L, A: L.lu_factor(A).LU), ("lu_factor wide", (2, 4), lambda L, A: L.lu_factor(A).LU),
    ("lu_factor tall", (4, 2), lambda L, A: L.lu_factor(A).LU),
])
def test_matrix_functions_and_gradients_as_torch(rng, ieee, name, shape, fn):
    """Forward and gradient against torch.linalg in float64; singular vectors enter squared (their
    signs are arbitrary)."""
    x = well_conditioned(rng, *shape, shift=4.0 if "tensorinv" not in name else 0.0)
    if name == "tensorinv":
        x = leaf(rng, *shape, values=(rng.standard_normal(36) * 0.3 + np.eye(6).ravel()).reshape(shape))
    ref = fn if name != "cond fro" else lambda L, A: L.matrix_norm(A) * L.matrix_norm(L.inv(A))  # torch's own fails
    check(lambda t: fn(tnet.linalg, t), lambda r: ref(torch.linalg, r), [x], rng, GRAD_TOL)


@pytest.mark.parametrize("name,fn", [
    ("cholesky", lambda L, A: L.cholesky(A)),
    ("cholesky upper", lambda L, A: L.cholesky(A, upper=True)),
    ("eigh values", lambda L, A: L.eigh(A).eigenvalues),
    ("eigh vectors", lambda L, A: L.eigh(A).eigenvectors ** 2),
    ("eigvalsh U", lambda L, A: L.eigvalsh(A, "U")),
    ("logdet", lambda L, A: L.logdet(A) if L is tnet.linalg else torch.logdet(A)),
])
def test_symmetric_functions_and_gradients_as_torch(rng, ieee, name, fn):
    x = spd(rng, 2, 4, 4)
    check(lambda t: fn(tnet.linalg, t), lambda r: fn(torch.linalg, r), [x], rng, GRAD_TOL)


@pytest.mark.parametrize("a_shape,b_shape,left", [((3, 3), (3, 2), True), ((2, 3, 3), (3,), True),
                                                  ((2, 3, 3), (2, 3), True), ((1, 4, 4), (3, 4, 2), True),
                                                  ((3, 3), (2, 5, 3), False)])
def test_solve_with_gradients_as_torch(rng, ieee, a_shape, b_shape, left):
    """Matrices, vectors (torch's rule: B [n] or B = A's shape without its last dim) and broadcast
    batches, left and right."""
    a, b = well_conditioned(rng, *a_shape), leaf(rng, *b_shape)
    check(lambda A, B: tnet.linalg.solve(A, B, left=left), lambda A, B: torch.linalg.solve(A, B, left=left), [a, b],
          rng, GRAD_TOL)


@pytest.mark.parametrize("a_shape,b_shape", [((5, 3), (5, 2)), ((2, 4, 3), (2, 4)), ((1, 4, 2), (3, 4, 2)),
                                         ((3, 5), (3, 2)), ((2, 3, 3), (1, 3, 1))])
def test_lstsq_solution_with_gradients_as_torch(rng, ieee, a_shape, b_shape):
    """The solution's gradients to A and B, torch's (those of pinv(A) B): tall, wide (the minimum-norm
    solution) and square A of full rank, a vector B, broadcast batches."""
    a, b = leaf(rng, *a_shape), leaf(rng, *b_shape)
    check(lambda A, B: tnet.linalg.lstsq(A, B).solution, lambda A, B: torch.linalg.lstsq(A, B).solution, [a, b],
          rng, GRAD_TOL)
    x, _ = leaf(rng, 4, 2)
    assert tnet.linalg.lstsq(x, tnet.ones(4)).residuals.requires_grad is False  # no gradient (torch ignores it)
    with pytest.raises(RuntimeError, match="input.dim\\(\\) must be greater"):  # a vector B of a batch of A: torch's
        tnet.linalg.lstsq(tnet.ones(2, 4, 3), tnet.ones(4))


@pytest.mark.parametrize("upper,left,unit", [(True, True, False), (False, False, True), (False, True, False)])
def test_solve_triangular_with_gradients_as_torch(rng, ieee, upper, left, unit):
    a, b = well_conditioned(rng, 2, 3, 3), leaf(rng, 3, 4) if left else leaf(rng, 4, 3)
    check(lambda A, B: tnet.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unit),
          lambda A, B: torch.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unit), [a, b], rng,
          GRAD_TOL)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_with_gradients_as_torch(rng, ieee, upper):
    """The GP tutorials' alpha = cholesky_solve(y, L) under the marginal likelihood's gradient: B's and the
    whole of L's (torch's formula does not keep L's triangle), batch dims broadcast."""
    low = np.tril(rng.standard_normal((2, 3, 3)) * 0.3) + 2 * np.eye(3)
    factor, b = leaf(rng, values=np.swapaxes(low, -1, -2) if upper else low), leaf(rng, 3, 4)
    check(lambda B, L: tnet.cholesky_solve(B, L, upper), lambda B, L: torch.cholesky_solve(B, L, upper), [b, factor],
          rng, GRAD_TOL)


def test_multi_dot_and_vecdot_with_gradients_as_torch(rng, ieee):
    xs = [leaf(rng, 3), leaf(rng, 3, 5), leaf(rng, 5, 2), leaf(rng, 2, 4), leaf(rng, 4)]
    check(lambda *t: tnet.linalg.multi_dot(t), lambda *r: torch.linalg.multi_dot(r), xs, rng, GRAD_TOL)
    xs = [leaf(rng, 2, 3), leaf(rng, 3, 4), leaf(rng, 4, 6)]
    check(lambda *t: tnet.linalg.multi_dot(list(t)), lambda *r: torch.linalg.multi_dot(list(r)), xs, rng, GRAD_TOL)
    check(lambda x, y: tnet.linalg.vecdot(x, y, dim=0), lambda x, y: torch.linalg.vecdot(x, y, dim=0),
          [leaf(rng, 3, 4), leaf(rng, 3, 1)], rng, GRAD_TOL)


def host(x):
    return x.numpy() if isinstance(x, tnet.Tensor) else x.detach().numpy()


def same(ours, theirs, tol=1e-5):
    for o, t in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,)):
        assert tuple(o.shape) == tuple(t.shape) and o.dtype == (torch.float32 if t.dtype == torch.float64 else t.dtype)
        np.testing.assert_allclose(host(o), host(t), rtol=tol, atol=tol)


def test_factorizations_without_gradients_as_torch(rng):
    """lu and its kin (tnet's own getrf: the same pivots), the Cholesky solves, Householder products,
    lstsq, ranks, tensorsolve, vander, diagonal: forward only, against torch in float64."""
    a = rng.standard_normal((2, 4, 4))
    wide = rng.standard_normal((3, 5))
    A, A64, W, W64 = tnet.tensor(a), torch.tensor(a), tnet.tensor(wide), torch.tensor(wide)
    b = rng.standard_normal((2, 4, 3))
    B, B64 = tnet.tensor(b), torch.tensor(b)
    same(tuple(tnet.linalg.lu_factor(A)), tuple(torch.linalg.lu_factor(A64)))
    same(tuple(tnet.linalg.lu(W)), tuple(torch.linalg.lu(W64)))
    same(tuple(tnet.linalg.lu(W.T)), tuple(torch.linalg.lu(W64.T)))
    LU, piv = tnet.linalg.lu_factor(A)
    same(tuple(tnet.lu_unpack(LU, piv)), tuple(torch.lu_unpack(*torch.linalg.lu_factor(A64))))
    for kw in ({}, {"left": False}, {"adjoint": True}):
        same(tnet.linalg.lu_solve(LU, piv, B if not kw.get("left", True) is False else B.mT, **kw),
             torch.linalg.lu_solve(*torch.linalg.lu_factor(A64), B64 if not kw.get("left", True) is False else B64.mT,
                                   **kw), 1e-4)
    same(tuple(tnet.linalg.lu_factor_ex(tnet.zeros(3, 3))), tuple(torch.linalg.lu_factor_ex(torch.zeros(3, 3))))
    for bad in (piv + 5, piv - piv):  # pivots outside 1..m: torch's RuntimeError (numpy's IndexError before)
        with pytest.raises(RuntimeError, match="pivots passed to lu_unpack must be between 1"):
            tnet.lu_unpack(LU, bad)
        with pytest.raises(RuntimeError, match="pivots passed to lu_unpack must be between 1"):
            torch.lu_unpack(*torch.linalg.lu_factor(A64)[:1], bad.memory)
    for wrong, kw in ((tnet.zeros(2, 5, 1), {}), (tnet.zeros(2, 1, 5), {"left": False})):  # numpy's ValueError before
        with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
            tnet.linalg.lu_solve(LU, piv, wrong, **kw)
        with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
            torch.linalg.lu_solve(*torch.linalg.lu_factor(A64.float()), wrong.memory, **kw)
    for lib, (lu, p) in ((tnet, (LU, piv)), (torch, torch.linalg.lu_factor(A64.float()))):  # B of another dtype
        with pytest.raises(RuntimeError, match="Expected LU and B to have the same dtype"):
            lib.linalg.lu_solve(lu, p, lib.zeros(2, 4, 3, dtype=torch.float16))
    s = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    L, L64 = tnet.linalg.cholesky(tnet.tensor(s)), torch.linalg.cholesky(torch.tensor(s))
    same(tnet.cholesky_solve(B, L), torch.cholesky_solve(B64, L64), 1e-4)
    same(tnet.cholesky_solve(B, L.mT, upper=True), torch.cholesky_solve(B64, L64.mT, upper=True), 1e-4)
    same(tnet.cholesky_inverse(L), torch.cholesky_inverse(L64), 1e-4)
    h, tau = tnet.geqrf(tnet.tensor(a[0, :, :3]))
    same((h, tau), tuple(torch.geqrf(torch.tensor(a[0, :, :3]))))
    h64, tau64 = torch.geqrf(torch.tensor(a[0, :, :3]))
    same(tnet.linalg.householder_product(h, tau), torch.linalg.householder_product(h64, tau64))
    same(tnet.ormqr(h, tau, B[0], transpose=True), torch.ormqr(h64, tau64, B64[0], transpose=True), 1e-4)
    same(h.orgqr(tau), h64.orgqr(tau64))
    tall = rng.standard_normal((2, 6, 3))
    for driver in ("gelsy", "gels", "gelsd"):
        ours = tnet.linalg.lstsq(tnet.tensor(tall), tnet.tensor(tall[..., :2] + 1), driver=driver)
        theirs = torch.linalg.lstsq(torch.tensor(tall), torch.tensor(tall[..., :2] + 1), driver=driver)
        same(tuple(ours), tuple(theirs), 1e-4)
    low_rank = np.concatenate([wide, wide[:1] * 2], 0)
    for kw in ({}, {"atol": 1.0}, {"hermitian": True}):
        m = low_rank @ low_rank.T if kw.get("hermitian") else low_rank
        same(tnet.linalg.matrix_rank(tnet.tensor(m), **kw), torch.linalg.matrix_rank(torch.tensor(m), **kw))
    same(tnet.linalg.pinv(tnet.tensor(s[0]), hermitian=True), torch.linalg.pinv(torch.tensor(s[0]), hermitian=True))
    t4 = a[0].reshape(2, 2, 2, 2) + np.eye(4).reshape(2, 2, 2, 2) * 3
    same(tnet.linalg.tensorsolve(tnet.tensor(t4), tnet.tensor(b[0, :, 0].reshape(2, 2))),
         torch.linalg.tensorsolve(torch.tensor(t4), torch.tensor(b[0, :, 0].reshape(2, 2))), 1e-4)
    t5 = np.moveaxis((rng.standard_normal((6, 6)) + 3 * np.eye(6)).reshape(2, 3, 2, 3), -1, 0)
    same(tnet.linalg.tensorsolve(tnet.tensor(t5), tnet.tensor(b[0, :2, :]), dims=(0,)),
         torch.linalg.tensorsolve(torch.tensor(t5), torch.tensor(b[0, :2, :]), dims=(0,)), 1e-4)
    same(tnet.linalg.vander(B, N=4), torch.linalg.vander(B64, N=4), 1e-4)
    same(tnet.linalg.diagonal(B, offset=1), torch.linalg.diagonal(B64, offset=1))
    same(tnet.linalg.eigvalsh(tnet.tensor(s)), torch.linalg.eigvalsh(torch.tensor(s)), 1e-4)
    same(tnet.linalg.triangular_solve(B, A, upper=False, transpose=True).solution,
         torch.triangular_solve(B64, A64, upper=False, transpose=True).solution, 1e-4)
    same(tnet.linalg.matrix_power(A, 0), torch.linalg.matrix_power(A64, 0))


def test_top_level_and_method_forms_as_torch(rng, ieee):
    """torch's older names (torch.svd's V, torch.qr's some, torch.lu, torch.inverse, ...) and methods."""
    a = rng.standard_normal((4, 3))
    A, A64 = tnet.tensor(a), torch.tensor(a)
    sq = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    S, S64 = tnet.tensor(sq), torch.tensor(sq)
    U, s, V = tnet.svd(A)
    np.testing.assert_allclose(host(U * s) @ host(V).T, a, atol=1e-5)
    assert V.shape == torch.svd(A64).V.shape and tnet.svd(A, some=False).U.shape == (4, 4)
    same(tuple(tnet.qr(A, some=False)), tuple(torch.qr(A64, some=False)))
    same(tuple(A.qr()), tuple(A64.qr()))
    for name in ("inverse", "det", "logdet", "pinverse", "matrix_exp"):
        same(getattr(S, name)(), getattr(S64, name)(), 1e-4)
        same(getattr(tnet, name)(S), getattr(torch, name)(S64), 1e-4)
    same(tuple(S.slogdet()), tuple(S64.slogdet()))
    same(S.matrix_power(2), S64.matrix_power(2), 1e-4)
    same(tuple(tnet.lu(S, get_infos=True)), tuple(torch.linalg.lu_factor_ex(S64)))
    same(tnet.lu_solve(A.T, *tnet.lu(S)), torch.linalg.lu_solve(*torch.linalg.lu_factor(S64), A64.T), 1e-4)
    same(A.T.lu_solve(*S.lu()), torch.linalg.lu_solve(*torch.linalg.lu_factor(S64), A64.T), 1e-4)
    same(tnet.chain_matmul(S, A.T, A), torch.linalg.multi_dot([S64, A64.T, A64]), 1e-4)
    same((A.adjoint(), A.mH), (A64.adjoint(), A64.mH))
    spd_ = sq @ sq.T
    same(tnet.cholesky(tnet.tensor(spd_), True), torch.linalg.cholesky(torch.tensor(spd_), upper=True), 1e-4)


def test_singular_and_invalid_inputs_raise_as_torch():
    """torch.linalg.LinAlgError (tnet.linalg.LinAlgError is it) with torch's wording; the _ex forms
    report info instead; wrong shapes and dtypes raise RuntimeError."""
    assert tnet.linalg.LinAlgError is torch.linalg.LinAlgError
    singular = tnet.tensor([[1.0, 2.0], [2.0, 4.0]])
    batch = tnet.stack([tnet.eye(2), singular])
    with pytest.raises(tnet.linalg.LinAlgError, match=r"linalg.inv: The diagonal element 2 is zero"):
        tnet.linalg.inv(singular)
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal element 2 is zero"):
        tnet.inverse(batch)
    with pytest.raises(tnet.linalg.LinAlgError, match="input matrix is singular"):
        tnet.linalg.solve(singular, tnet.ones(2))
    with pytest.raises(tnet.linalg.LinAlgError, match="leading minor of order 1 is not positive-definite"):
        tnet.linalg.cholesky(-tnet.eye(3))
    with pytest.raises(RuntimeError, match="U\\[2,2\\] is zero"):
        tnet.linalg.lu_factor(singular)
    np.testing.assert_array_equal(tnet.linalg.inv_ex(batch).info.numpy(), [0, 2])
    info = tnet.linalg.cholesky_ex(tnet.tensor(np.stack([-np.eye(3), np.eye(3), np.diag([1.0, 1, -1])]))).info
    np.testing.assert_array_equal(info.numpy(), [1, 0, 3])
    assert tnet.linalg.solve_ex(singular, tnet.ones(2)).info.item() == 2
    assert tnet.linalg.det(singular).item() == 0.0
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 2 by 3"):
        tnet.linalg.inv(tnet.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        tnet.linalg.det(tnet.tensor([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tnet.linalg.det(tnet.ones(3))
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        tnet.linalg.vander(tnet.ones(3), N=1)
    with pytest.raises(NotImplementedError, match="complex"):
        tnet.linalg.eig(tnet.eye(2))
    with pytest.raises(NotImplementedError, match="no gradient"):
        tnet.lu_unpack(tnet.tensor(np.eye(3, dtype=np.float32), requires_grad=True), tnet.tensor([1, 2, 3], dtype=torch.int32))


def test_det_gradient_of_a_singular_matrix_as_torch(rng, ieee):
    """The cofactor matrix (through an SVD) where A^-1 does not exist: torch's gradient too."""
    a = rng.standard_normal((3, 3))
    a[2] = a[0] + a[1]
    check(lambda t: tnet.linalg.det(t), lambda r: torch.linalg.det(r), [leaf(rng, 3, 3, values=a)], rng, GRAD_TOL)


def test_non_finite_matrices_as_torch():
    """An infinity gives NaN factors and a NaN raises LinAlgError, as torch's; LAPACK's SVD of the
    infinite matrix (fuzz seed 10) looped forever, and det's gradient raised numpy's error. tnet's
    factors of the infinite matrix are all NaN; torch's LAPACK gives NaN in one run and finite garbage
    in another (seen in the full suite), so they are checked by tnet's rule, not against torch's."""
    a = np.array([[-0.5, 0.2, 6.5e4], [np.inf, 0.8, 1e5], [-0.2, -0.8, 0.3]], dtype=np.float32)
    x = tnet.tensor(a)
    for fn in (tnet.linalg.svdvals, lambda t: tnet.linalg.svd(t).U, tnet.linalg.pinv,
               lambda t: tnet.linalg.lstsq(t, t).solution):
        assert np.isnan(fn(x).numpy()).all()
    tnet.linalg.matrix_rank(x)  # returns (its SVD no longer loops)
    a[0, 0] = np.nan
    for fn in (tnet.linalg.svdvals, tnet.linalg.eigh, tnet.linalg.matrix_rank):
        with pytest.raises(tnet.linalg.LinAlgError, match="failed to converge"):
            fn(tnet.tensor(a))
    x = tnet.tensor(a, requires_grad=True)
    tnet.linalg.det(x).backward()
    assert np.isnan(x.grad.numpy()).all()
    x = tnet.tensor(a[:1, :1], requires_grad=True)  # a 1 x 1 matrix's cofactor is 1, NaN or not
    tnet.linalg.det(x).backward()
    assert x.grad.tolist() == [[1.0]]


@pytest.mark.parametrize("a", [
    [[[np.inf, 1.2], [np.nan, -1.4]], [[1.0, 2.0], [3.0, 4.0]]],
    [[[1.0, np.inf], [1.0, 1.0]], [[np.inf, 1.0], [-np.inf, 1.0]], [[np.inf, 1.0], [0.0, 2.0]]]])
def test_inverse_solve_and_det_of_a_nan_matrix_are_nan_as_torch(a):
    """A matrix holding a NaN has an all-NaN inverse and solve, a NaN det and log|det|, sign 0, as
    torch's; numpy's LAPACK pivots past the NaN and gave finite values (fuzz seed 62, case 929). One
    holding an inf takes torch's IEEE factors: inf / inf and 0 * inf are NaN (numpy's gave 0; seeds 199, 232)."""
    a = np.array(a, dtype=np.float32)
    x, r = tnet.tensor(a), torch.tensor(a)
    b = np.ones((len(a), 2, 1), np.float32)
    pairs = [(tnet.linalg.inv(x), torch.linalg.inv(r)), (tnet.linalg.inv_ex(x).inverse, torch.linalg.inv_ex(r).inverse),
             (tnet.linalg.det(x), torch.linalg.det(r)), (tnet.logdet(x), torch.logdet(r)),
             (tnet.linalg.solve(x, tnet.tensor(b)), torch.linalg.solve(r, torch.tensor(b)))]
    pairs += list(zip(tnet.linalg.slogdet(x), torch.linalg.slogdet(r)))
    for got, ref in pairs:
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6)


@pytest.mark.parametrize("a", [[[-0.0]], [[0.0, 1.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, -2.0]],
                               [[1.0, 1.0, 0.0], [np.inf, 0.0, 1.0], [0.0, 1.0, 1.0]]])
@pytest.mark.parametrize("contiguous", [True, False])
def test_det_and_slogdet_factor_as_torch(a, contiguous):
    """torch's det and slogdet multiply out the LU of A^T where A is contiguous, of A otherwise: a zero's sign
    and an inf beside a zero pivot follow (det([[-0.0]]) is -0.0, so logdet's gradient there is -inf; fuzz seed
    300, case 406), and slogdet's sign of -0.0 is +0."""
    a = np.array(a, np.float32)
    x, r = tnet.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    xs, rs = (x, r) if contiguous else (x.mT.contiguous().mT, r.mT.contiguous().mT)
    pairs = [(tnet.linalg.det(xs), torch.linalg.det(rs)), (tnet.logdet(xs), torch.logdet(rs))]
    pairs += list(zip(tnet.linalg.slogdet(xs), torch.linalg.slogdet(rs)))
    for got, ref in pairs:
        got, ref = got.detach().numpy(), ref.detach().numpy()
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))
    if a.shape == (1, 1):
        tnet.logdet(xs).backward()
        torch.logdet(rs).backward()
        assert x.grad.tolist() == r.grad.tolist() == [[-np.inf]]


@pytest.mark.parametrize("shape", [(7, 5), (5, 7), (2, 7, 5)])
def test_svd_and_pca_lowrank_as_torch(shape, rng):
    """svd_lowrank and pca_lowrank of a matrix of rank 3 at q = 4: torch's singular values and shapes whatever the
    random draw (tnet's is its own), a reconstruction of the matrix (centered for pca), and S's gradient."""
    m, n = shape[-2:]
    a = (rng.standard_normal((*shape[:-2], m, 3)) @ rng.standard_normal((3, n))).astype(np.float32)
    for name, want, kwargs in (("svd_lowrank", a, {}), ("pca_lowrank", a - a.mean(-2, keepdims=True), {})):
        x = tnet.tensor(a, requires_grad=True)
        U, S, V = getattr(tnet, name)(x, q=4, **kwargs)
        Ur, Sr, Vr = getattr(torch, name)(torch.tensor(a), q=4, **kwargs)
        assert (U.shape, S.shape, V.shape) == (Ur.shape, Sr.shape, Vr.shape)
        np.testing.assert_allclose(S.numpy()[..., :3], Sr.numpy()[..., :3], rtol=1e-5)
        np.testing.assert_allclose((U @ tnet.diag_embed(S) @ V.mT).numpy(), want, atol=1e-5)
        S.sum().backward()
        assert x.grad.shape == x.shape and np.isfinite(x.grad.numpy()).all()
    with pytest.raises(ValueError, match="must be non-negative integer and not greater"):
        tnet.pca_lowrank(tnet.tensor(a), q=min(m, n) + 1)
