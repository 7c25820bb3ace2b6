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
            graph = Graph(lambda: F.relu(x).memory)
            graph.cycle = graph  # dead at the next rebinding, freed only by gc
            assert gc.isenabled() and torch.equal(graph(), x.memory)
        gc.disable()
        Graph(lambda: F.relu(x).memory)
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.set_threshold(*threshold)


def _user_step(seed=0):
    """A user's own training step (the README's shape): model, SGD with momentum, cross-entropy."""
    tnet.manual_seed(seed)
    model = tnet.nn.Sequential(tnet.nn.Conv2d(3, 8, 3, padding=1), tnet.nn.BatchNorm2d(8), tnet.nn.ReLU(),
                               tnet.nn.AdaptiveAvgPool2d(1), tnet.nn.Flatten(), tnet.nn.Linear(8, 10))
    opt = tnet.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return model, step


def _batches(n, shape=(4, 3, 8, 8)):
    gen = torch.Generator().manual_seed(1)
    return [(tnet.Tensor(torch.randn(*shape, generator=gen).to(DEV)),
             tnet.Tensor(torch.randint(0, 10, (shape[0],), generator=gen).to(DEV))) for _ in range(n)]


def test_capture_runs_a_user_step_as_eager_calls_do():
    """tnet.graph.capture: every call is one step, eager for the first, captured then replayed
    after (on the GPU; on the CPU all eager): the losses and weights equal the eager run's."""
    batches = _batches(5)
    eager_model, eager_step = _user_step()
    eager = [eager_step(x, y).item() for x, y in batches]
    model, step = _user_step()
    captured = tnet.graph.capture(step)
    losses = [captured(x, y).item() for x, y in batches]
    assert losses == pytest.approx(eager, rel=1e-5)
    for (name, p), q in zip(model.named_parameters(), eager_model.parameters()):
        assert torch.allclose(p.memory, q.memory, rtol=1e-5, atol=1e-6), name
    assert captured.__name__ == "step" and len(captured.graphs) == (1 if DEV.type == "cuda" else 0)


def test_capture_signatures_and_arguments():
    """A new shape gets its own graph; past max_graphs the function runs eagerly, with one
    warning; a non-tensor argument is part of the signature, and must be hashable."""
    calls = []

    @tnet.graph.capture(max_graphs=1)
    def double(x, k):
        calls.append(k)
        return x * k
    for i, shape in enumerate(((4,), (4,), (4,), (6,), (6,))):
        x = tnet.ones(*shape)
        if DEV.type == "cuda" and i == 4:  # (6,)'s first call is its eager warm-up; its second would capture
            with pytest.warns(UserWarning, match="max_graphs=1"):
                out = double(x, 2.0)
        else:
            out = double(x, 2.0)
        assert torch.equal(out.memory, torch.full(shape, 2.0, device=DEV))
    # on the GPU: (4,) eager, captured (its Python runs once more), replayed; (6,) eager twice
    assert len(calls) == (4 if DEV.type == "cuda" else 5)
    with pytest.raises(TypeError, match="hashable"):
        tnet.graph._signature((tnet.ones(2), [1]))


@pytest.mark.skipif(DEV.type != "cuda", reason="CUDA graphs need a GPU")
def test_capture_refuses_a_host_read_with_its_name():
    """.item() inside a captured function: CaptureError naming the read, at the capture."""
    @tnet.graph.capture
    def step(x):
        y = x * 2
        return y.sum().item()
    x = tnet.ones(8)
    assert step(x) == 16.0  # eager
    with pytest.raises(tnet.graph.CaptureError, match=r"Tensor.item\(\) reads a device tensor"):
        step(x)
