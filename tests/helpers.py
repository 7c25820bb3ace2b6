"""Helpers shared by test files (plain module: tests import it, never conftest)."""
import tracemalloc

from tnet import trainer


def peak_bytes(fn):
    """The peak of Python's traced allocations while fn() runs."""
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def train_main(argv):
    """train.py's main in-process: the options of argv, the recipe they fill, the run."""
    args = trainer.parse_args(argv)
    return trainer.train(args, trainer.recipe_of(args))
