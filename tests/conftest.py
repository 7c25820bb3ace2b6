"""pytest's fixtures for the test files; the helpers they share are in helpers.py, a plain module."""
import os

# numpy's OpenBLAS reads this once, as numpy loads (so before any import of it): the interpreter's
# tl.dot is a numpy product of one block, too small for threads, and their spinning on a busy or
# 2-core machine doubled tnet's side of Attention-56 (tests/test_ported_scripts8.py). Subprocesses
# (train.py, torchrun) inherit it. A value already set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The suite tests the kernels not yet proven on a GPU (tnet._device.TRIAL_KERNELS) there too: on a GPU they run
# only under TNET_TRIAL=1, which tnet reads as it is imported, below. Subprocesses inherit it. A value set is kept.
os.environ.setdefault("TNET_TRIAL", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import tnet
from tnet.kernels.launch import clear_flags


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """PyTorch's CPU ops in the tests are tiny (the references, tnet's memory copies): on a busy or
    2-core machine its thread pool spins for far longer than they take (10x on Attention-56's
    reference), and one thread sums a tensor of this size in the same order as two."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def fresh_generator():
    """tnet's generator as a fresh process has it, before every test: a test's draws (its layers' init
    above all) then do not depend on which tests ran before it in its process, which pytest-xdist and
    new test files change."""
    tnet.manual_seed(tnet.factory.DEFAULT_SEED)


@pytest.fixture(autouse=True)
def no_flagged_error_left():
    """On a GPU, a test that leaves a flagged error unread (a bad index or label whose check comes at a later
    call: kernels/launch.py's check_flag) would have it raised in the next test of its process: after each
    test, every flag is cleared."""
    yield
    clear_flags()


@pytest.fixture(autouse=True)
def distributions_validate_args(monkeypatch):
    """torch's distributions (and tnet's) validate their arguments by default, but torch.compile's first call
    (and tnet.compile's, as torch's), in another test of the process, turns that default off for good: on
    again before every test, as a script that never compiles sees it."""
    for lib in (torch, tnet):
        monkeypatch.setattr(lib.distributions.Distribution, "_validate_args", True)


@pytest.fixture
def ieee():
    """fp32 GEMMs in exact IEEE arithmetic, for comparisons at the fp32 tolerance."""
    previous = tnet.set_precision("ieee")
    yield
    tnet.set_precision(previous)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
