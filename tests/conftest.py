"""pytest's fixtures for the test files; the helpers they share are in helpers.py, a plain module."""
import numpy as np
import pytest

import tnet


@pytest.fixture
def ieee():
    """fp32 GEMMs in exact IEEE arithmetic, for comparisons at the fp32 tolerance."""
    previous = tnet.set_precision("ieee")
    yield
    tnet.set_precision(previous)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
