"""tnet.cov (tnet's kernels, with its gradient) and tnet.linalg.eigh (numpy on the host, no
gradient) against torch in float64."""
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
