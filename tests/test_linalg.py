"""tnet.cov and tnet.linalg's norms (tnet's kernels, with gradients) and tnet.linalg.eigh (numpy on
the host, no gradient) against torch in float64."""
import math

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
    with pytest.raises(NotImplementedError):
        tnet.cov(leaf(rng, 2, 3)[0], fweights=tnet.tensor([1, 2, 3]))


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
    with pytest.raises(NotImplementedError, match="no gradient"):
        tnet.linalg.eigh(tnet.tensor(np.eye(3, dtype=np.float32), requires_grad=True))
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
    if ord == 0:  # the count of nonzeros; torch's gradient is a 0-d zero
        np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
        ours.sum().backward()
        assert x[0].grad.shape == x[0].shape and not x[0].grad.numpy().any()
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
    for ord in ("nuc", 2, -2):
        with pytest.raises(NotImplementedError, match="singular values"):
            tnet.linalg.norm(x, ord, (0, 1))
    assert tnet.linalg.vector_norm(tnet.zeros(0, 3)).item() == 0.0
    assert tnet.linalg.vector_norm(tnet.ones(3), dtype=tnet.float16).dtype == torch.float16
