"""Helpers shared by test files (plain module: tests import it, never conftest)."""
import tracemalloc


def peak_bytes(fn):
    """The peak of Python's traced allocations while fn() runs."""
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak
