"""tnet.distributed over gloo on the CPU (two processes, each through the interpreter), and the
loader's shards: after a backward every rank's gradients are those of the whole batch in one
process, and after a step every rank holds the same weights."""
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import data, nn, optim
from helpers import TOL, assert_close

WORLD, BATCH = 2, 8


class Net(nn.Module):
    """A conv (channels-last weights), a Linear used twice (its gradient accumulates twice) and a
    head: several buckets at a small cap."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.mix = nn.Linear(16, 16)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv(x)), 4).flatten(1)
        return self.head(self.mix(F.relu(self.mix(h))))


def batch():
    rng = np.random.default_rng(7)
    return rng.standard_normal((BATCH, 3, 8, 8)).astype(np.float32), rng.integers(0, 5, BATCH)


def worker(rank, port, out):
    """One rank: a model from its own seed (DDP takes rank 0's), its half of the batch, a backward
    (gradients saved), an SGD step (weights saved)."""
    import tnet.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    tnet.manual_seed(rank)
    model = dist.DistributedDataParallel(Net(), bucket_cap_mb=0.001)
    x, y = batch()
    part = slice(rank * BATCH // WORLD, (rank + 1) * BATCH // WORLD)
    loss = F.cross_entropy(model(tnet.tensor(x[part])), tnet.tensor(y[part]))
    loss.backward()
    grads = {f"grad.{n}": p.grad.numpy() for n, p in model.module.named_parameters()}
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.step()
    weights = {f"weight.{n}": p.numpy() for n, p in model.module.named_parameters()}
    np.savez(out, buckets=len(model._buckets), **grads, **weights)
    dist.destroy_process_group()


@pytest.fixture(autouse=True)
def loopback(monkeypatch):
    """gloo on the loopback interface: a machine whose hostname does not resolve still runs the tests."""
    if os.path.exists("/sys/class/net/lo"):
        monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_average_the_gradients_of_the_whole_batch(tmp_path):
    port, here = free_port(), os.path.dirname(os.path.abspath(__file__))
    code = "import sys; sys.path.insert(0, {!r}); import test_distributed as t; t.worker({}, {}, {!r})"
    procs = [subprocess.Popen([sys.executable, "-c", code.format(here, rank, port, str(tmp_path / f"rank{rank}.npz"))],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for rank in range(WORLD)]
    for proc in procs:
        output = proc.communicate(timeout=600)[0]
        assert proc.returncode == 0, output[-3000:]
    ranks = [dict(np.load(tmp_path / f"rank{rank}.npz")) for rank in range(WORLD)]
    assert ranks[0]["buckets"] > 1

    tnet.manual_seed(0)  # rank 0's model, the whole batch, one process
    model = Net()
    x, y = batch()
    F.cross_entropy(model(tnet.tensor(x)), tnet.tensor(y)).backward()
    ref = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
    optim.SGD(model.parameters(), lr=0.1, momentum=0.9).step()
    for name, p in model.named_parameters():
        for rank, saved in enumerate(ranks):
            assert_close(torch.from_numpy(saved[f"grad.{name}"]), torch.from_numpy(ref[name]), TOL["ieee"],
                         f"rank {rank}'s gradient of {name}")
        np.testing.assert_array_equal(ranks[0][f"weight.{name}"], ranks[1][f"weight.{name}"])
        assert_close(torch.from_numpy(ranks[0][f"weight.{name}"]), p.memory.cpu(), TOL["ieee"], f"{name} after the step")


def test_loader_shards_an_epoch_as_distributed_sampler(rng):
    """Two ranks with one seed take every other image of the same epoch, padded with its first
    images to an even count; one rank alone draws what it always did."""
    images = np.arange(7, dtype=np.float32)[:, None, None, None] * np.ones((7, 1, 2, 2), np.float32)
    labels = np.arange(7)
    alone = [y.tolist() for _, y in data.Loader(images, labels, 2, seed=3)]
    shards = [[y.tolist() for _, y in data.Loader(images, labels, 2, seed=3, num_replicas=2, rank=r)] for r in (0, 1)]
    epoch = np.random.default_rng(3).permutation(7).tolist()
    assert sum(alone, []) == epoch
    padded = epoch + epoch[:1]
    assert sum(shards[0], []) == padded[0::2] and sum(shards[1], []) == padded[1::2]
    assert [len(s) for s in shards] == [2, 2] and len(data.Loader(images, labels, 2, num_replicas=2, rank=1)) == 2
    with pytest.raises(ValueError, match="rank"):
        data.Loader(images, labels, 2, num_replicas=2, rank=2)


def test_post_accumulate_grad_hooks_and_backward_callbacks():
    """torch's hook on a leaf runs after each accumulation into .grad (once for a leaf used twice, on
    the sum of its parts); a queued callback runs once, at the backward's end; remove() takes a hook away."""
    from tnet.tensor import queue_callback
    w = tnet.tensor(np.ones(3), requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(("hook", t.grad.numpy().sum())))
    queue_callback(lambda: seen.append(("end", w.grad.numpy().sum())))
    ((w * 2).sum() + (w * 3).sum()).backward()
    assert seen == [("hook", 15.0), ("end", 15.0)]
    handle.remove()
    (w * 1).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(print)


def test_train_py_under_torchrun_matches_one_process(tmp_path):
    """train.py under torchrun with 2 processes over gloo: each takes half of every batch (the
    epoch's alternate images), rank 0 alone prints and writes; after a step of Caffe's recipe (no
    BatchNorm, no augmentation) the weights are the one-process run's."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # the CPU and gloo on any machine: one GPU takes one rank
    common = ["train.py", "--data", "sample", "--limit", "8", "--batch-size", "4", "--epochs", "0.5",
              "--eval-batch-size", "8", "--precision", "ieee"]
    one = subprocess.run([sys.executable, *common, "--checkpoint", str(tmp_path / "one.ckpt")], cwd=root,
                         env=env, capture_output=True, text=True, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "--master_port", str(free_port()), *common, "--checkpoint", str(tmp_path / "two.ckpt")],
                         cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert two.returncode == 0, (two.stdout + two.stderr)[-3000:]
    assert "2 processes, a batch of 2 each (global 4)" in two.stdout and "throughput:" in two.stdout
    assert two.stdout.count("test accuracy:") == 1  # rank 0's report alone
    a, b = tnet.load(tmp_path / "one.ckpt"), tnet.load(tmp_path / "two.ckpt")
    assert a["epoch"] == b["epoch"] == 1
    for name, w in a["model"].items():
        assert_close(torch.from_numpy(np.asarray(b["model"][name])), torch.from_numpy(np.asarray(w)), TOL["ieee"], name)


def collectives_worker(rank, world, port, out):
    """One rank of tnet.multiprocessing.spawn (pytorch/examples' imagenet: mp.spawn(main_worker, ...)):
    torch.distributed's collectives on tnet tensors, as a MetricLogger's all_reduce and MoCo's
    concat_all_gather call them, reached as tnet.distributed without its own import; then gradient
    accumulation under DDP's no_sync: two micro-batches of this rank's half, the first within no_sync; and a
    SimCLR/CLIP loss across ranks (gather_loss)."""
    dist = tnet.distributed
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    assert dist.is_available() and dist.is_initialized() and dist.get_backend() == "gloo"
    counts = tnet.tensor([rank + 1.0, 10.0 * rank])
    dist.all_reduce(counts, op=dist.ReduceOp.SUM)
    keys = tnet.arange(3) + 10 * rank
    gathered = [tnet.ones_like(keys) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, keys, async_op=False)
    flat = tnet.zeros(3 * dist.get_world_size(), dtype=keys.dtype)
    dist.all_gather_into_tensor(flat, keys)
    assert flat.tolist() == [0, 1, 2, 10, 11, 12] and dist.group.WORLD is torch.distributed.group.WORLD
    assert dist.is_nccl_available() == torch.distributed.is_nccl_available() and dist.Backend.GLOO == "gloo"
    weights = tnet.full((2,), float(rank))
    dist.broadcast(weights, src=1)
    dist.barrier()
    tnet.manual_seed(0)
    model = dist.DistributedDataParallel(Net())
    x, y = batch()
    quarters = [slice(q * BATCH // 4, (q + 1) * BATCH // 4) for q in (2 * rank, 2 * rank + 1)]
    with model.no_sync():
        F.cross_entropy(model(tnet.tensor(x[quarters[0]])), tnet.tensor(y[quarters[0]])).backward()
    unreduced = model.module.head.bias.grad.numpy().copy()
    F.cross_entropy(model(tnet.tensor(x[quarters[1]])), tnet.tensor(y[quarters[1]])).backward()
    grads = {f"grad.{n}": p.grad.numpy() for n, p in model.module.named_parameters()}
    np.savez(out.format(rank), counts=counts.numpy(), gathered=tnet.cat(gathered).numpy(), weights=weights.numpy(),
             unreduced=unreduced, **grads, **gather_loss(rank, world), **reduce_scatter_loss(rank))
    dist.destroy_process_group()


def gather_inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32),
            rng.standard_normal((2, 6, 5)).astype(np.float32))


def gather_loss(rank, world):
    """One rank's share of a loss over every rank's embeddings (the others' as negatives), gathered by
    torch.distributed.nn.all_gather, plus a sum by torch.distributed.nn.all_reduce; each rank's loss differs.
    Its input's gradient, the gathered embeddings and the sum, for the test."""
    import tnet.distributed.nn
    x, w, c = gather_inputs()
    xr = tnet.tensor(x[rank], requires_grad=True)
    z = xr @ tnet.tensor(w)
    embeddings = tnet.distributed.nn.all_gather(z)
    assert isinstance(embeddings, tuple) and len(embeddings) == world
    total = tnet.distributed.nn.all_reduce(z.sum())
    loss = (tnet.cat(embeddings) * tnet.tensor(c[rank])).pow(2).sum() + (rank + 1) * total
    loss.backward()
    return {"nn.grad": xr.grad.numpy(), "nn.total": total.numpy(), "nn.gathered": tnet.cat(embeddings).numpy()}


def reduce_scatter_loss(rank):
    """reduce_scatter and reduce_scatter_tensor of tnet.distributed, and torch.distributed.nn's reduce_scatter under a
    loss weighted by the rank: rank r's x [2] (r + 1) goes in as [x, 2x]; then gather, scatter, all_to_all_single,
    send and recv."""
    dist = tnet.distributed
    parts = tnet.zeros(2)
    dist.reduce_scatter(parts, [tnet.full((2,), rank + 1.0), tnet.full((2,), 10.0 * (rank + 1))])
    halves = tnet.zeros(2)
    dist.reduce_scatter_tensor(halves, tnet.arange(4.0) + rank)
    x = tnet.full((2,), rank + 1.0, requires_grad=True)
    output = tnet.zeros(2)
    y = tnet.distributed.nn.functional.reduce_scatter(output, [x, x * 2])
    (y.sum() * (rank + 1)).backward()
    # gather to rank 1, scatter from rank 0, an all-to-all of halves, rank 0 sending to rank 1
    gathered = [tnet.zeros(2) for _ in range(2)] if rank == 1 else None
    dist.gather(tnet.full((2,), rank + 5.0), gathered, dst=1)
    scattered = tnet.zeros(2)
    dist.scatter(scattered, [tnet.full((2,), 7.0), tnet.full((2,), 8.0)] if rank == 0 else None, src=0)
    swapped = tnet.zeros(4)
    dist.all_to_all_single(swapped, tnet.arange(4.0) + 10 * rank)
    message = tnet.full((3,), 42.0) if rank == 0 else tnet.zeros(3)
    if rank == 0:
        dist.send(message, dst=1)
    else:
        assert dist.recv(message, src=0) == 0
    return {"rs.parts": parts.numpy(), "rs.halves": halves.numpy(), "rs.y": y.numpy(), "rs.output": output.numpy(),
            "rs.grad": x.grad.numpy(), "p2p.gathered": tnet.cat(gathered).numpy() if rank == 1 else np.zeros(0),
            "p2p.scattered": scattered.numpy(), "p2p.swapped": swapped.numpy(), "p2p.message": message.numpy()}


def check_gather_loss(saved, rank):
    """Each rank's input gradient is that of the sum of all ranks' losses, as torch.distributed.nn's."""
    x, w, c = gather_inputs()
    xs = [torch.tensor(v, requires_grad=True) for v in x]
    zs = [v @ torch.tensor(w) for v in xs]
    total = zs[0].sum() + zs[1].sum()
    sum(((torch.cat(zs) * torch.tensor(c[r])).pow(2).sum() + (r + 1) * total) for r in range(2)).backward()
    tol = TOL["tf32"]  # tnet's float32 matmul runs in tf32 by default on a GPU (gpu61: 7e-4 from the ieee bound)
    assert_close(saved["nn.gathered"], torch.cat(zs).detach(), tol, "gathered embeddings")
    assert_close(saved["nn.total"], total.detach(), tol, "all_reduce's sum")
    assert_close(saved["nn.grad"], xs[rank].grad, tol, f"rank {rank}'s gradient through the collectives")


def test_collectives_on_tnet_tensors_under_spawn(tmp_path):
    port = free_port()
    tnet.multiprocessing.spawn(collectives_worker, args=(2, port, str(tmp_path / "rank{}.npz")), nprocs=2)
    tnet.manual_seed(0)  # the same model in one process: the four quarters' mean losses, summed, over 2 (ranks)
    model = Net()
    x, y = batch()
    for q in range(4):
        part = slice(q * BATCH // 4, (q + 1) * BATCH // 4)
        F.cross_entropy(model(tnet.tensor(x[part])), tnet.tensor(y[part])).backward()
        if q == 0:
            first = model.head.bias.grad.numpy().copy()
    for rank in range(2):
        saved = np.load(tmp_path / f"rank{rank}.npz")
        assert saved["counts"].tolist() == [3.0, 10.0]
        assert saved["gathered"].tolist() == [0, 1, 2, 10, 11, 12]
        assert saved["weights"].tolist() == [1.0, 1.0]
        check_gather_loss(saved, rank)
        # rank 0 sums the ranks' first inputs (1 + 2, 10 + 20), rank 1 their second (2 + 4); x's gradient: rank 0's
        # output gradient (1) through x plus twice rank 1's (2) through 2x
        assert saved["rs.parts"].tolist() == [[3.0] * 2, [30.0] * 2][rank]
        assert saved["rs.halves"].tolist() == [[1.0, 3.0], [5.0, 7.0]][rank]
        assert saved["rs.y"].tolist() == saved["rs.output"].tolist() == [[3.0] * 2, [6.0] * 2][rank]
        assert saved["rs.grad"].tolist() == [5.0, 5.0]
        assert saved["p2p.gathered"].tolist() == ([5.0, 5.0, 6.0, 6.0] if rank == 1 else [])
        assert saved["p2p.scattered"].tolist() == [[7.0] * 2, [8.0] * 2][rank]
        assert saved["p2p.swapped"].tolist() == [[0.0, 1.0, 10.0, 11.0], [2.0, 3.0, 12.0, 13.0]][rank]
        assert saved["p2p.message"].tolist() == [42.0] * 3
        if rank == 0:  # within no_sync the gradient is this rank's own
            assert_close(torch.from_numpy(saved["unreduced"]), torch.from_numpy(first), TOL["ieee"], "unreduced")
        for name, p in model.named_parameters():
            assert_close(torch.from_numpy(saved[f"grad.{name}"]), p.grad.memory.cpu() / 2, TOL["ieee"],
                         f"rank {rank}'s accumulated gradient of {name}")

