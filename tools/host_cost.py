#!/usr/bin/env python3
"""tnet's own Python cost per op: every kernel launch replaced by a no-op, so that what is timed is
the checks, plans, tape and allocations around the launches (the host cost that issue 27 cuts),
on any machine, the CPU included. Not a GPU figure: a launch adds Triton's launcher to each call.

usage: python tools/host_cost.py [--case NAME] [--profile tottime|cumtime] [--launches] [--calls N]

Prints each case's median microseconds per call over 5 blocks, of this process's CPU time (so that
other processes on the machine do not count); --profile prints cProfile's top functions of one
case (with --case) sorted by that column; --launches each case's kernel launches in one call, by
kernel (the interpreter's: its optimizers pack fewer tensors a launch than a GPU's).
"""
import collections
import argparse
import cProfile
import importlib
import os
import pkgutil
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout's tnet

import torch  # noqa: E402

import tnet  # noqa: E402
import tnet.functional as F  # noqa: E402
import tnet.kernels  # noqa: E402
from benchmarks import zoo  # noqa: E402
from benchmarks.eager import readme_net  # noqa: E402
from tnet.recipes import make_train_step  # noqa: E402


class _NoLaunch:
    """Stands for a kernel: kernel[grid](...) launches nothing but asks the grid, as Triton does (with
    an autotuned kernel's first config): a launcher may count on its grid's side effects (PartSums)."""

    def __init__(self, kernel, name):
        configs = getattr(kernel, "configs", None)
        self.meta, self.name = dict(configs[0].kwargs) if configs else {}, name

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            LAUNCHES[self.name] += 1
            return grid({**self.meta, **kwargs}) if callable(grid) else None
        return launch


LAUNCHES = collections.Counter()  # launches by kernel name, kept ones included


class _KeptNoLaunch:
    """Stands for a Bound launch (autotune.launch_kept's, which the interpreter never keeps): asks the
    grid once, and per call reads the tensors' addresses, as a GPU's kept launch does."""

    def __init__(self, kernel, grid, args, kwargs):
        grid = grid({**kernel.meta, **kwargs}) if callable(grid) else grid
        self.grid = (*grid, 1, 1)[:3]
        self.tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        self.name = kernel.name

    def __call__(self, *args):
        for i in self.tensors:
            args[i].data_ptr()
        LAUNCHES[self.name] += 1
        return True


def no_launches():
    """Replace every kernel (a module-level *_kernel) of tnet.kernels by _NoLaunch, and keep a
    _KeptNoLaunch where a GPU keeps a Bound launch."""
    tnet.kernels.autotune.bind = lambda kernel, grid, args, kwargs: _KeptNoLaunch(kernel, grid, args, kwargs)
    for info in pkgutil.iter_modules(tnet.kernels.__path__):
        module = importlib.import_module(f"tnet.kernels.{info.name}")
        for name in dir(module):
            if name.endswith("_kernel"):
                setattr(module, name, _NoLaunch(getattr(module, name), name))


def cases():
    """name -> (call, calls per block)."""
    tnet.manual_seed(0)
    a, b = tnet.randn(1024), tnet.randn(1024)
    leaf = tnet.Tensor(a.memory.clone(), requires_grad=True)
    x = tnet.Tensor(torch.randn(8, 16, 8, 8).to(tnet.DEVICE).contiguous(memory_format=torch.channels_last))
    w, bn = tnet.randn(16, 16, 3, 3), tnet.nn.BatchNorm2d(16)
    model = readme_net(tnet)
    opt = tnet.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    images, labels = tnet.randn(8, 3, 16, 16), tnet.tensor(list(range(8)))

    def backward():
        leaf.grad = None
        (leaf * leaf).sum().backward()

    def step():
        loss = F.cross_entropy(model(images), labels, label_smoothing=0.1)
        loss.backward()
        opt.step()
        opt.zero_grad()
    resnet, _ = zoo.tnet_state("ResNet18")
    resnet_step = make_train_step(resnet, tnet.optim.SGD(resnet.parameters(), **zoo.SGD), dtype=zoo.DTYPE)
    rx = torch.randn(2, 3, 32, 32).to(tnet.DEVICE)
    ry = torch.tensor([0, 1]).to(tnet.DEVICE)
    lstm, gru = tnet.nn.LSTMCell(32, 64), tnet.nn.GRUCell(32, 64)
    sx, sh, sc = tnet.randn(8, 32), tnet.randn(8, 64, requires_grad=True), tnet.randn(8, 64, requires_grad=True)
    seed = tnet.randn(8, 64)

    def lstm_step():  # one time step's forward and backward, both outputs' gradients given
        tnet.autograd.backward(lstm(sx, (sh, sc)), (seed, seed))

    def gru_step():
        gru(sx, sh).backward(seed)
    rms_x, rms = tnet.randn(64, 256, requires_grad=True), tnet.nn.RMSNorm(256)
    mha, tokens = tnet.nn.MultiheadAttention(64, 4, batch_first=True), tnet.randn(8, 16, 64, requires_grad=True)
    wide = tnet.randn(64, 192, requires_grad=True)

    def rms_step():
        rms(rms_x).sum().backward()

    def mha_step():  # self-attention's forward and backward
        mha(tokens, tokens, tokens, need_weights=False)[0].sum().backward()

    sdpa_q, sdpa_kv = tnet.randn(4, 4, 32, 32, requires_grad=True), tnet.randn(4, 4, 32, 32, requires_grad=True)

    def sdpa_step():  # causal self-attention of 4 heads, forward and backward
        F.scaled_dot_product_attention(sdpa_q, sdpa_kv, sdpa_kv, is_causal=True).sum().backward()

    def chunk_step():  # three pieces of one tensor, their gradients added into one
        p, q, r = F.chunk(wide * 1.0, 3, 1)
        (p + q + r).sum().backward()
    return {"a + b": (lambda: a + b, 1000), "relu": (lambda: F.relu(a), 1000),
            "(a * a).sum().backward()": (backward, 300), "conv2d": (lambda: F.conv2d(x, w, padding=1), 300),
            "BatchNorm2d train": (lambda: bn(x), 300), "README network step": (step, 20),
            "ResNet-18 bf16 step": (lambda: resnet_step(rx, ry), 5), "LSTMCell step": (lstm_step, 100),
            "GRUCell step": (gru_step, 100), "RMSNorm forward + backward": (rms_step, 100),
            "MultiheadAttention forward + backward": (mha_step, 20), "chunk(3) forward + backward": (chunk_step, 100),
            "SDPA causal forward + backward": (sdpa_step, 50)}


def median_us(fn, calls):
    for _ in range(10):
        fn()
    blocks = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(calls):
            fn()
        blocks.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(blocks)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", help="one case only (default: all): 'a + b', 'relu', 'conv2d', ...")
    parser.add_argument("--profile", choices=["tottime", "cumtime"], help="print cProfile's top functions of --case")
    parser.add_argument("--launches", action="store_true", help="also print each case's kernel launches per call")
    parser.add_argument("--calls", type=int, default=None, help="calls per timed block (default: each case's own)")
    args = parser.parse_args()
    no_launches()
    chosen = {name: c for name, c in cases().items() if args.case in (None, name)}
    if not chosen:
        parser.error(f"no case {args.case!r}")
    for name, (fn, calls) in chosen.items():
        print(f"{name:28s} {median_us(fn, args.calls or calls):10.1f} us", flush=True)
        if args.launches:
            LAUNCHES.clear()
            fn()
            print(f"    {sum(LAUNCHES.values())} launches: " + ", ".join(f"{k} {n}" for k, n in LAUNCHES.most_common()))
    if args.profile:
        name, (fn, calls) = next(iter(chosen.items()))
        profile = cProfile.Profile()
        profile.runcall(lambda: [fn() for _ in range(calls)])
        pstats.Stats(profile).sort_stats(args.profile).print_stats(30)


if __name__ == "__main__":
    main()
