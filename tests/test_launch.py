"""The launchers' input checks (kernels/launch.py): a bad layout is a one-line ValueError."""
import collections

import pytest
import torch

from tnet.kernels import conv, launch, pointwise, pool, softmax
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


class _Event:
    """A CUDA event's stand-in: done once the test says so, or once waited on."""

    def __init__(self):
        self.done = True

    def record(self, stream=None):
        self.done = False

    def query(self):
        return self.done

    def synchronize(self):
        self.done = True


def _flag_copies():
    """A _FlagCopies with its events and pinned slots stood in for on the CPU."""
    copies = object.__new__(launch._FlagCopies)
    copies.hosts = torch.zeros((launch._FlagCopies.RING, 2), dtype=torch.int64)
    copies.events = [_Event() for _ in range(launch._FlagCopies.RING)]
    copies.queue, copies.next = collections.deque(), 0
    return copies


def test_flag_copies_raise_once_the_gpu_has_run_the_launch(monkeypatch):
    """A GPU's flags read without a sync: a copy is read only once its event has passed, in launch order,
    and raises the error of the launch that set the flag, which is cleared then; wait() reads them all; a host
    RING launches ahead waits for the oldest copy; forget() drops a flag's copies."""
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: None)  # the stand-in events take any stream
    copies, flag = _flag_copies(), torch.zeros(2, dtype=torch.int64)
    copies.copy(flag, lambda v: IndexError(f"first {v}"))
    flag.copy_(torch.tensor([1, 12]))  # the second launch meets 12
    copies.copy(flag, lambda v: IndexError(f"second {v}"))
    copies.raise_passed()  # neither copy written yet: nothing to read
    copies.events[0].done = True
    copies.raise_passed()  # the first launch's copy: clean
    assert len(copies.queue) == 1
    copies.events[1].done = True
    with pytest.raises(IndexError, match="second 12"):
        copies.raise_passed()
    assert flag.tolist() == [0, 0] and not copies.queue
    flag.copy_(torch.tensor([1, 5]))
    copies.copy(flag, lambda v: IndexError(f"third {v}"))
    with pytest.raises(IndexError, match="third 5"):
        copies.wait()  # a host read's wait: every copy written, then read
    for _ in range(launch._FlagCopies.RING + 2):  # the host far ahead: the oldest copy is waited for
        copies.copy(flag, lambda v: IndexError("never"))
    assert len(copies.queue) == launch._FlagCopies.RING
    other = torch.zeros(2, dtype=torch.int64)
    copies.copy(other, lambda v: IndexError("other"))
    copies.forget(flag)
    assert [entry[1] for entry in copies.queue] == [other]


def test_check_flag_on_the_cpu_raises_at_once_and_clears():
    flag = torch.tensor([1, 7])
    with pytest.raises(IndexError, match="bad 7"):
        launch.check_flag(flag, lambda v: IndexError(f"bad {v}"))
    assert flag.tolist() == [0, 0]
    launch.check_flag(flag, lambda v: IndexError("never"))
    assert launch.take_flag(torch.tensor([1, 3])) == 3 and launch.take_flag(torch.tensor([0, 0])) is None
