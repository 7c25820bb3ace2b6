"""The launchers' input checks (kernels/launch.py): a bad layout is a one-line ValueError."""
import pytest
import torch

from tnet.kernels import conv, pointwise, pool, softmax
from tnet.kernels.launch import InputError, next_power_of_2, plain
from helpers import DEV, randn


def test_launchers_reject_bad_layout():
    with pytest.raises(ValueError, match="contiguous"):
        pointwise.relu(randn(4, 6).t())
    with pytest.raises(ValueError, match="4-D"):
        pool.pool2d(randn(4, 6), (2, 2), (2, 2), (0, 0), False, "max")
    with pytest.raises(ValueError, match="labels"):
        softmax.cross_entropy(randn(4, 3), torch.zeros(5, dtype=torch.int64, device=DEV))


def test_plain_arguments_key_caches_by_type_too():
    """plain(): ints, strings, None and tuples of ints only, so that a cached answer for padding=(1, 1)
    is never given to padding=(1, 1.0) (which equals it and hashes alike)."""
    assert plain(1, "same", (1, 2), (), None) and not plain(1.0) and not plain((1, 2.0)) and not plain([1, 2])
    assert not plain(True) and not plain((1, None))
    conv.conv_geometry("conv2d", (8, 8), (3, 3), 1, (1, 1), 1)
    with pytest.raises(InputError, match="padding"):
        conv.conv_geometry("conv2d", (8, 8), (3, 3), 1, (1, 1.0), 1)


def test_next_power_of_2_is_tritons():
    import triton
    assert [next_power_of_2(n) for n in range(0, 2100)] == [triton.next_power_of_2(n) for n in range(0, 2100)]


def test_import_freezes_what_the_imports_made_unless_told_not_to():
    """`import tnet` moves the objects alive then (modules, functions, classes) out of the garbage
    collector's passes (gc.freeze): an eager loop's full collections then skip them.
    TNET_GC_FREEZE=0 leaves the collector as it is."""
    import gc
    import os
    import subprocess
    import sys
    if os.environ.get("TNET_GC_FREEZE", "1") != "0":
        assert gc.get_freeze_count() > 10000
    env = {**os.environ, "TNET_GC_FREEZE": "0"}
    out = subprocess.run([sys.executable, "-c", "import gc, tnet; print(gc.get_freeze_count())"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert int(out.split()[-1]) < 10000  # not tnet's freeze: the GPU machine's libraries freeze a few hundred
