"""CUDA-graph capture (tnet/graph.py)."""
import pytest
import torch

import tnet
import tnet.functional as F
from helpers import DEV


@pytest.mark.skipif(DEV.type != "cuda", reason="CUDA graphs need a GPU")
def test_capture_after_dead_graphs_in_cycles():
    """train.py --runs builds new graphs while the last run's die in reference cycles: with the
    collector set to run on nearly every allocation, no collection lands inside a capture (it
    would reset a dead graph there and invalidate the capture), and gc's state is kept."""
    import gc
    from tnet.graph import Graph
    x = tnet.ones(4096)
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        for _ in range(4):
            graph = Graph(lambda: F.relu(x).data)
            graph.cycle = graph  # dead at the next rebinding, freed only by gc
            assert gc.isenabled() and torch.equal(graph(), x.data)
        gc.disable()
        Graph(lambda: F.relu(x).data)
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.set_threshold(*threshold)
