"""The launchers' input checks (kernels/launch.py): a bad layout is a one-line ValueError."""
import pytest
import torch

from tnet.kernels import pointwise, pool, softmax
from helpers import DEV, randn


def test_launchers_reject_bad_layout():
    with pytest.raises(ValueError, match="contiguous"):
        pointwise.relu(randn(4, 6).t())
    with pytest.raises(ValueError, match="4-D"):
        pool.pool2d(randn(4, 6), (2, 2), (2, 2), (0, 0), False, "max")
    with pytest.raises(ValueError, match="labels"):
        softmax.cross_entropy(randn(4, 3), torch.zeros(5, dtype=torch.int64, device=DEV))
