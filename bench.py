"""The original student project's studies, side by side with PyTorch.

    python bench.py gemm [--quick] [--out results/]    # GEMM variants against cuBLAS and numpy
    python bench.py layers [--quick] [--out results/]  # one CIFAR-10 quick training step, split by layer type
    python bench.py train [--quick] [--out results/]   # 100 training steps: tnet against PyTorch
    python bench.py profile [--quick] [--out results/] # a tnet step's GPU time by kernel and by GEMM
    python bench.py launch [--quick] [--out results/]  # the host's cost of one tnet.matmul call

Every result is checked against a float64 reference before it is timed: a GEMM against the
float64 product; a training step (the losses and every parameter's change over CHECK_STEPS
steps) against PyTorch in float64 from the same weights on the same batches. A wrong result is
reported WRONG, never timed. Each study prints a table and writes OUT/<study>.json (rows,
GPU, versions, date, command line) and OUT/<study>.png. Needs a CUDA GPU.

Times include Python's launch overhead: GEMM times are do_bench medians of the Python call
(at the smallest shapes they measure launches as much as the kernel), and for cuBLAS and
tnet also of the same calls replayed from a CUDA graph (the GPU's time alone); training
times are CUDA events around blocks of steps, eager and from a CUDA graph.
"""
import argparse
import collections
import datetime
import itertools
import json
import math
import os
import shlex
import statistics
import sys
import time

import numpy as np
import torch

# -----------------------------------------------------------------------------
# GEMM study settings
SQUARE = [64, 128, 256, 512, 1024, 2048, 4096, 8192]  # n for n x n x n GEMMs
GRAPHED = ("cublas", "tnet")  # also timed replayed from a CUDA graph: the GPU's time without the host's
QUICK_SQUARE = [256, 1024, 4096]
CIFAR = [  # CIFAR-10 quick at batch 100 as (M, N, K): convolutions as im2col GEMMs, then the linear layers
    ("conv1", (102400, 32, 75)),  # 100*32*32 pixels, 32 channels, 3*5*5 inputs
    ("conv2", (25600, 32, 800)),  # 100*16*16, 32, 32*5*5
    ("conv3", (6400, 64, 800)),  # 100*8*8, 64, 32*5*5
    ("ip1", (100, 64, 1024)),  # 64*4*4 features to 64
    ("ip2", (100, 10, 64)),  # 64 to 10 classes
]
QUICK_CIFAR = CIFAR[:3]
PRECISIONS = ("ieee", "tf32", "bf16")
TOL = {"ieee": 1e-4, "tf32": 3e-3, "bf16": 3e-2}  # bounds on ||C - ref|| / ||ref||; typical: 1e-7, 3e-4, 3e-3
MAX_FLOP = {"naive": 2 * 2048**3, "numpy": 2 * 1024**3}  # beyond these a variant is "skipped": too slow
ROTATE_BYTES = 120e6  # inputs cycled through per timing: twice the H200's 60 MB L2, so memory is measured
BENCH = {"warmup": 25, "rep": 100}  # do_bench milliseconds; --quick uses QUICK_BENCH
QUICK_BENCH = {"warmup": 10, "rep": 40}
NUMPY_TIMING = {"warmup": 0, "iters": 1, "repeats": 5}  # host-clock calls of numpy (the check was the warm-up)
LAUNCH_SQUARE = [64, 256]  # n x n x n products whose GPU time is far below a call's host time
LAUNCH_TIMING = {"warmup": 50, "iters": 2000}  # calls timed on the host clock without a sync between them
QUICK_LAUNCH_TIMING = {"warmup": 20, "iters": 500}

# -----------------------------------------------------------------------------
# layers and train study settings: CIFAR-10 quick training steps
SOLVER = {"lr": 0.001, "momentum": 0.9, "weight_decay": 0.004}  # Caffe's cifar10_quick_solver.prototxt
N_BATCHES = 4  # different random batches, cycled through
CHECK_STEPS = 2  # steps compared with PyTorch in float64 before timing; the second one uses the momentum
# Bounds relative to float64 PyTorch. The changes' bound is loose for tf32: emulating tf32 GEMMs on the CPU
# (operands rounded to 10-bit mantissas) puts the worst, conv1.weight's change, 2e-2 to 5e-2 off, where a
# missing update, momentum or bias lr_mult is 0.3 to 1 off. The losses agreed to 1e-7 to 1e-5 there.
CHECK_TOL = {"loss": 1e-3, "change": 0.2}
NETS = [  # (label, width, batch): width 2 doubles every channel count
    ("quick b100", 1, 100),
    ("quick b1024", 1, 1024),
    ("wide b100", 2, 100),
    ("wide b1024", 2, 1024),
]
QUICK_NETS = NETS[:3]
TIMING = {"warmup": 3, "iters": 100, "repeats": 5}  # blocks of iters steps timed with CUDA events, median
QUICK_TIMING = {"warmup": 3, "iters": 100, "repeats": 2}
CPU_TIMING = {"warmup": 1, "iters": 10, "repeats": 3}  # PyTorch on the CPU, smallest net only; scaled to 100
LAYERS_BATCH = 100
LAYERS_TIMING = {"warmup": 3, "iters": 20}  # profiled steps; the first ones autotune tnet's kernels
QUICK_LAYERS_TIMING = {"warmup": 3, "iters": 10}
FORWARD_PART = {"Conv2d": "convolution", "MaxPool2d": "pooling", "AvgPool2d": "pooling", "ReLU": "ReLU",
                "Flatten": "flatten", "Linear": "inner product"}  # module class -> part of the step
BACKWARD_PART = {"conv2d": "convolution", "max_pool2d": "pooling", "avg_pool2d": "pooling", "relu": "ReLU",
                 "reshape": "flatten", "linear": "inner product", "cross_entropy": "softmax/loss"}  # tape op
PARTS = ["convolution", "pooling", "ReLU", "flatten", "inner product", "softmax/loss", "update"]  # table order
PHASES = ["forward", "backward", "update"]

# -----------------------------------------------------------------------------
# shared helpers: check then time, a table, JSON, a plot


def rel_error(out, ref):
    out = torch.as_tensor(out).to(ref.device, torch.float64)
    return ((out - ref).norm() / ref.norm()).item()


def check_then_time(check, time_it):
    """err, tol = check(); only if err <= tol, ms = time_it(). Returns the row fields: status,
    err, ms (an exception goes into the row too: a kernel that fails to compile or launch must
    not end the sweep)."""
    try:
        err, tol = check()
        if not err <= tol:  # also catches NaN
            return {"status": "WRONG", "err": err, "ms": None}
        return {"status": "ok", "err": err, "ms": time_it()}
    except Exception as e:
        return {"status": "ERROR", "err": None, "ms": None, "error": f"{type(e).__name__}: {e}"}


def gpu_time(fn, inputs, bench):
    """Median ms of fn over do_bench's runs, cycling through the input sets."""
    import triton.testing
    sets = itertools.cycle(inputs)
    return triton.testing.do_bench(lambda: fn(*next(sets)), return_mode="median", **bench)


def graph_time(fn, inputs, bench):
    """Median ms per call of fn replayed from a CUDA graph that calls it once per input set:
    the GPU's time alone, without the host's launch cost (autotune before: the first call)."""
    import triton.testing
    from tnet.graph import Graph
    graph = Graph(lambda: [fn(*args) for args in inputs])  # a warm-up run on a side stream, then the capture
    ms = triton.testing.do_bench(graph, return_mode="median", **bench)
    return ms / len(inputs)


class Clock:
    """Starts when made; stop() marks the end, ms() waits for it and returns the milliseconds
    between. On a CUDA device these are events on the stream (no synchronisation before ms()),
    elsewhere the host clock."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"
        self.start = self._now()

    def _now(self):
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def stop(self):
        self.end = self._now()
        return self

    def ms(self):
        if not self.cuda:
            return (self.end - self.start) * 1e3
        self.end.synchronize()
        return self.start.elapsed_time(self.end)


def block_time(fn, inputs, device, warmup, iters, repeats):
    """Median ms per call of fn over `repeats` blocks of `iters` calls, after `warmup` calls,
    cycling through the input sets."""
    sets = itertools.cycle(inputs)
    for _ in range(warmup):
        fn(*next(sets))
    times = []
    for _ in range(repeats):
        clock = Clock(device)
        for _ in range(iters):
            fn(*next(sets))
        times.append(clock.stop().ms() / iters)
    return statistics.median(times)


def print_header(columns):
    """columns: (title, format spec such as "<20" or ">8", row -> str)."""
    print("  ".join(f"{title:{spec}}" for title, spec, _ in columns))


def print_row(row, columns):
    print("  ".join(f"{cell(row):{spec}}" for _, spec, cell in columns), flush=True)


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def ratio(a, b):
    return a / b if a and b else None


def environment():
    import triton
    return {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None, "torch": torch.__version__, "triton": triton.__version__,
            "numpy": np.__version__, "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": shlex.join(sys.orig_argv)}


def write_json(path, study, rows, complete=True, **settings):
    """Atomically (a cut run leaves the last whole file). The studies also write it after
    every shape or net with complete=False, so that a run cut short keeps what it measured."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"study": study, **environment(), "complete": complete, "settings": settings, "rows": rows},
                  f, indent=1)
    os.replace(tmp, path)
    if complete:
        print(f"wrote {path}")


def figure(path, draw):
    """draw(ax) on a fresh figure and save it to path (say so if matplotlib is missing)."""
    try:
        import matplotlib
    except ImportError:
        print(f"matplotlib is not installed: no {path}")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    draw(ax)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"wrote {path}")


def plot(path, series, title, xlabel, ylabel):
    """Log-log lines; series: label -> (xs, ys, matplotlib style kwargs)."""
    def draw(ax):
        import matplotlib.ticker
        for label, (xs, ys, style) in series.items():
            ax.loglog(xs, ys, label=label, marker=".", **style)
        xs = sorted({x for xs, _, _ in series.values() for x in xs})
        ax.set_xticks(xs, [str(x) for x in xs], minor=False)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())  # ticks at the measured sizes only
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
        ax.legend(fontsize=6, ncol=2)
    figure(path, draw)


def bars(path, groups, series, title, ylabel, log=False):
    """Grouped bars; series: label -> one value per group (None: no bar)."""
    def draw(ax):
        width = 0.8 / len(series)
        for i, (label, values) in enumerate(series.items()):
            shown = [(g + (i - (len(series) - 1) / 2) * width, v) for g, v in enumerate(values) if v is not None]
            ax.bar([x for x, _ in shown], [v for _, v in shown], width, label=label)
        ax.set_xticks(range(len(groups)), groups, fontsize=7, rotation=30, ha="right")
        ax.set_yscale("log" if log else "linear")
        ax.set(title=title, ylabel=ylabel)
        if len(series) > 1:
            ax.legend(fontsize=7)
    figure(path, draw)


# -----------------------------------------------------------------------------
# the GEMM study: the original's variants, tnet's autotuned kernel, cuBLAS and numpy

GEMM_COLUMNS = [
    ("shape", "<22", lambda r: r["shape"]),
    ("variant", "<9", lambda r: r["variant"]),
    ("prec", "<4", lambda r: r["precision"]),
    ("rel.err", ">8", lambda r: fmt(r["err"], ".1e")),
    ("ms", ">9", lambda r: fmt(r["ms"], ".4f") if r["status"] == "ok" else r["status"]),
    ("TFLOP/s", ">7", lambda r: fmt(r["tflops"], ".1f")),
    ("x cuBLAS", ">8", lambda r: fmt(r["vs_cublas"], ".2f")),
    ("graph ms", ">9", lambda r: fmt(r.get("graph_ms"), ".4f")),
    ("x cuBLAS", ">8", lambda r: fmt(r.get("graph_vs_cublas"), ".2f")),
]


def input_sets(M, N, K):
    """Random fp32 A [n, M, K] and B [n, K, N], n such that even their bf16 copies pass ROTATE_BYTES."""
    n = math.ceil(ROTATE_BYTES / (2 * (M * K + K * N)))
    return torch.randn(n, M, K, device="cuda"), torch.randn(n, K, N, device="cuda")


def study_gemm(args):
    from tnet.kernels.gemm import matmul
    from tnet.kernels.gemm_variants import VARIANTS
    variants = {  # name: (C = run(a, b, precision), precisions); cuBLAS first, the others are compared with it
        "cublas": (lambda a, b, p: torch.matmul(a, b), PRECISIONS),
        "tnet": (lambda a, b, p: matmul(a, b, precision=p), PRECISIONS),
        **VARIANTS,
        "numpy": (lambda a, b, p: a @ b, ("ieee",)),
    }
    shapes = [(f"{n}^3", (n, n, n)) for n in (QUICK_SQUARE if args.quick else SQUARE)]
    shapes += [(f"{name} {M}x{N}x{K}", (M, N, K)) for name, (M, N, K) in (QUICK_CIFAR if args.quick else CIFAR)]
    bench = QUICK_BENCH if args.quick else BENCH

    torch.manual_seed(0)
    rows = []
    path = os.path.join(args.out, "gemm.json")
    settings = dict(tolerance=TOL, max_flop=MAX_FLOP, rotate_bytes=ROTATE_BYTES, do_bench=bench)
    print_header(GEMM_COLUMNS)
    for label, (M, N, K) in shapes:
        A, B = input_sets(M, N, K)
        ref = A[0].double() @ B[0].double()
        for precision in PRECISIONS:
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"  # cuBLAS's fp32 GEMMs
            # bf16: every variant reads bf16 inputs, as cuBLAS does (cuBLAS also writes bf16)
            cast = (lambda x: x.bfloat16()) if precision == "bf16" else (lambda x: x)
            pairs = list(zip(cast(A).unbind(0), cast(B).unbind(0)))
            cublas_ms = cublas_graph_ms = None
            for name, (run, precisions) in variants.items():
                if precision not in precisions:
                    continue
                fn = lambda a, b: run(a, b, precision)
                row = {"shape": label, "M": M, "N": N, "K": K, "variant": name, "precision": precision}
                if 2 * M * N * K > MAX_FLOP.get(name, math.inf):
                    row.update(status="skipped", err=None, ms=None)
                elif name == "numpy":
                    host = [(pairs[0][0].cpu().numpy(), pairs[0][1].cpu().numpy())]
                    row.update(check_then_time(lambda: (rel_error(fn(*host[0]), ref), TOL[precision]),
                                               lambda: block_time(fn, host, "cpu", **NUMPY_TIMING)))
                else:
                    row.update(check_then_time(lambda: (rel_error(fn(*pairs[0]), ref), TOL[precision]),
                                               lambda: gpu_time(fn, pairs, bench)))
                if name in GRAPHED and row["ms"]:
                    try:
                        row["graph_ms"] = graph_time(fn, pairs, bench)
                    except Exception as e:  # a failed capture must not end the sweep either
                        row["graph_error"] = f"{type(e).__name__}: {e}"
                if name == "cublas":
                    cublas_ms, cublas_graph_ms = row["ms"], row.get("graph_ms")
                ms, graph_ms = row["ms"], row.get("graph_ms")
                row["tflops"] = 2 * M * N * K / (ms * 1e9) if ms else None
                row["vs_cublas"] = cublas_ms / ms if ms and cublas_ms else None
                if graph_ms and cublas_graph_ms:
                    row["graph_tflops"] = 2 * M * N * K / (graph_ms * 1e9)
                    row["graph_vs_cublas"] = cublas_graph_ms / graph_ms
                print_row(row, GEMM_COLUMNS)
                rows.append(row)
        A = B = pairs = None  # free them for the next shape
        torch.cuda.empty_cache()
        write_json(path, "gemm", rows, complete=False, **settings)
    for row in rows:
        for key in ("error", "graph_error"):
            if key in row:
                print(f"{row['shape']} {row['variant']} {row['precision']}: {row[key]}")

    write_json(path, "gemm", rows, **settings)
    colors = {name: f"C{i}" for i, name in enumerate(variants)}
    dashes = {"ieee": "-", "tf32": "--", "bf16": ":"}
    series = {}
    for row in rows:
        if row["shape"].endswith("^3") and row["ms"]:
            key = f"{row['variant']} {row['precision']}"
            xs, ys, _ = series.setdefault(key, ([], [], {"color": colors[row["variant"]],
                                                          "linestyle": dashes[row["precision"]]}))
            xs.append(row["M"])
            ys.append(row["ms"])
    plot(os.path.join(args.out, "gemm.png"), series, f"C = A @ B, n x n x n, {torch.cuda.get_device_name()}",
         "n", "time (ms, median)")
    return rows


# -----------------------------------------------------------------------------
# the launch study: what one call costs the host

LAUNCH_COLUMNS = GEMM_COLUMNS[:4] + [
    ("host us/call", ">12", lambda r: fmt(r["ms"] and 1000 * r["ms"], ".1f") if r["status"] == "ok" else r["status"]),
    ("x cuBLAS", ">8", lambda r: fmt(r["vs_cublas"], ".2f")),
]


def host_ms(fn, warmup, iters):
    """Host milliseconds per call of fn: calls with no synchronisation between them, on the host
    clock, which times the host's work alone while the GPU keeps up (small products)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    ms = (time.perf_counter() - start) * 1e3 / iters
    torch.cuda.synchronize()
    return ms


def study_launch(args):
    """The host's cost of one GEMM call: tnet.matmul (input checks, the autotuner's dispatch,
    Triton's launcher) against torch.matmul, on products too small for the GPU to be the limit."""
    from tnet.kernels.gemm import matmul
    timing = QUICK_LAUNCH_TIMING if args.quick else LAUNCH_TIMING
    torch.manual_seed(0)
    rows = []
    print_header(LAUNCH_COLUMNS)
    for n in LAUNCH_SQUARE:
        A, B = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        ref = A.double() @ B.double()
        for precision in PRECISIONS:
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
            a, b = (A.bfloat16(), B.bfloat16()) if precision == "bf16" else (A, B)
            cublas_ms = None
            for name, fn in (("cublas", lambda: torch.matmul(a, b)), ("tnet", lambda: matmul(a, b, precision=precision))):
                row = {"shape": f"{n}^3", "M": n, "N": n, "K": n, "variant": name, "precision": precision}
                row.update(check_then_time(lambda: (rel_error(fn(), ref), TOL[precision]), lambda: host_ms(fn, **timing)))
                cublas_ms = row["ms"] if name == "cublas" else cublas_ms
                row["vs_cublas"] = cublas_ms / row["ms"] if row["ms"] and cublas_ms else None
                print_row(row, LAUNCH_COLUMNS)
                rows.append(row)
    write_json(os.path.join(args.out, "launch.json"), "launch", rows, timing=timing)
    groups = list(dict.fromkeys(f"{r['shape']} {r['precision']}" for r in rows))
    series = {name: [1000 * r["ms"] if r["ms"] else None for r in rows if r["variant"] == name] for name in ("cublas", "tnet")}
    bars(os.path.join(args.out, "launch.png"), groups, series,
         f"host time per GEMM call, {environment()['gpu']}", "microseconds per call")
    return rows


# -----------------------------------------------------------------------------
# CIFAR-10 quick training steps, tnet's and PyTorch's, from the same weights on the same batches


def random_batches(batch, device, n=N_BATCHES, seed=0):
    """n different (images, labels) batches: randn * 50, about the spread of Caffe's
    mean-subtracted pixels, and random labels; drawn on the host so any device gets the same."""
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 3, 32, 32, generator=gen).mul_(50).to(device),
             torch.randint(0, 10, (batch,), generator=gen).to(device)) for _ in range(n)]


def tnet_quick(width=1):
    """tnet's cifar10_quick (seed 0) and Caffe's solver: (model, optimizer, parameters by name)."""
    from tnet import optim
    from tnet.models import cifar10_quick
    model = cifar10_quick(width=width)
    return model, optim.SGD(model.parameters(), **SOLVER), {n: p.data for n, p in model.named_parameters()}


def tnet_variant(width, batches, graphed=False):
    """(step(x, y) -> loss, parameters): tnet eager, or captured whole by tnet.graph.TrainStep."""
    from tnet.graph import TrainStep, train_step
    model, opt, params = tnet_quick(width)
    step = TrainStep(model, opt, *batches[0]) if graphed else lambda x, y: train_step(model, opt, x, y)
    return step, params


def torch_quick(state):
    """cifar10_quick as a torch.nn.Sequential holding a tnet state_dict, under the same
    parameter names: conv 5x5 pad 2, max pool 3 stride 2 (ceil), ReLU, conv, ReLU, avg pool,
    conv, ReLU, avg pool, then two linear layers."""
    nn = torch.nn
    c1, c2, c3, hidden = (state[f"{layer}.weight"].shape[0] for layer in ("conv1", "conv2", "conv3", "ip1"))
    net = nn.Sequential(collections.OrderedDict([
        ("conv1", nn.Conv2d(3, c1, 5, padding=2)),
        ("pool1", nn.MaxPool2d(3, 2, ceil_mode=True)),
        ("relu1", nn.ReLU()),
        ("conv2", nn.Conv2d(c1, c2, 5, padding=2)),
        ("relu2", nn.ReLU()),
        ("pool2", nn.AvgPool2d(3, 2, ceil_mode=True)),
        ("conv3", nn.Conv2d(c2, c3, 5, padding=2)),
        ("relu3", nn.ReLU()),
        ("pool3", nn.AvgPool2d(3, 2, ceil_mode=True)),
        ("flatten", nn.Flatten()),
        ("ip1", nn.Linear(c3 * 4 * 4, hidden)),
        ("ip2", nn.Linear(hidden, 10)),
    ]))
    net.load_state_dict({name: torch.from_numpy(value) for name, value in state.items()})
    return net


def torch_sgd(net):
    """SOLVER in torch.optim, biases at twice the lr (Caffe's lr_mult 2). At a constant lr,
    torch's rule (buf = m*buf + g + wd*p; p -= lr*buf) takes the same steps as Caffe's
    (h = m*h + lr*(g + wd*p); p -= h)."""
    weights = [p for n, p in net.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in net.named_parameters() if n.endswith("bias")]
    return torch.optim.SGD([{"params": weights}, {"params": biases, "lr": 2 * SOLVER["lr"]}], **SOLVER,
                           foreach=True)


def torch_variant(width, batches, graphed=False):
    """(step(x, y) -> loss, parameters): PyTorch on the batches' device and in their dtype,
    from tnet's initial weights; graphed captures the whole step in a CUDA graph."""
    from tnet.models import cifar10_quick
    x0, y0 = batches[0]
    net = torch_quick(cifar10_quick(width=width).state_dict()).to(x0.device, x0.dtype)
    opt = torch_sgd(net)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return (torch_graphed(step, net, opt, x0, y0) if graphed else step), dict(net.named_parameters())


def torch_graphed(step, net, opt, x, y):
    """step(x, y) captured with tnet.graph.Graph, as tnet's TrainStep is: warm-up on a side
    stream, then torch.cuda.graph. The warm-up is undone: the weights go back and the momentum
    to zero, which is where SGD's first step starts. Calls copy the batch into static inputs."""
    from tnet.graph import Graph
    x, y = x.clone(), y.clone()
    initial = {k: v.clone() for k, v in net.state_dict().items()}

    def restore():
        net.load_state_dict(initial)
        for state in opt.state.values():
            state["momentum_buffer"].zero_()
    graph = Graph(lambda: step(x, y), restore, warmup=3)  # the first warm-up runs let cuDNN pick algorithms

    def replay(xb, yb):
        x.copy_(xb)
        y.copy_(yb)
        return graph()
    return replay


def record(step, params, batches):
    """What the first CHECK_STEPS steps do, in float64 on the host: their losses ("loss") and
    each parameter's change over them (by name)."""
    before = {name: p.detach().to("cpu", torch.float64, copy=True) for name, p in params.items()}
    losses = torch.tensor([float(step(x, y)) for x, y in batches[:CHECK_STEPS]], dtype=torch.float64)
    return {"loss": losses, **{name: p.detach().double().cpu() - before[name] for name, p in params.items()}}


def reference_record(width, batches):
    """record() of PyTorch in float64, from the same weights on the same batches: the truth."""
    batches = [(x.double(), y) for x, y in batches]
    return record(*torch_variant(width, batches), batches)


def check_record(rec, ref):
    """Compare a record with the reference: (err, tol, name) of the piece furthest out of
    CHECK_TOL (relative to its tolerance), so err <= tol exactly when every piece is within."""
    errs = {name: (rel_error(rec[name], ref[name]), CHECK_TOL["loss" if name == "loss" else "change"])
            for name in ref}
    name = max(errs, key=lambda k: math.inf if math.isnan(errs[k][0]) else errs[k][0] / errs[k][1])
    return (*errs[name], name)


# -----------------------------------------------------------------------------
# the layers study: one CIFAR-10 quick training step split by layer type (the original's
# "96% of the time is convolution and inner product")

LAYERS_COLUMNS = [
    ("part", "<14", lambda r: r["part"]),
    *[(f"{phase} ms", ">11", lambda r, p=phase: fmt(r[f"{p}_ms"], ".3f")) for phase in PHASES],
    ("ms", ">7", lambda r: fmt(r["ms"], ".3f")),
    ("share", ">6", lambda r: f"{r['share']:.1f}%"),
]


def profiled_step(model, opt, marks):
    """tnet.graph.train_step with a Clock around each layer's forward, each backward closure
    (tnet.tensor.set_backward_timer) and the update; marks gets (part, phase, clock)."""
    import tnet
    import tnet.functional as F
    from tnet.tensor import set_backward_timer

    def timed(part, phase, run, *args):
        clock = Clock(tnet.DEVICE)
        out = run(*args)
        marks.append((part, phase, clock.stop()))
        return out

    def step(x, y):
        h = tnet.Tensor(x)
        for layer in model.children():
            h = timed(FORWARD_PART.get(type(layer).__name__, type(layer).__name__), "forward", layer, h)
        loss = timed("softmax/loss", "forward", F.cross_entropy, h, tnet.Tensor(y))
        opt.zero_grad()
        set_backward_timer(lambda op, run: timed(BACKWARD_PART.get(op, op), "backward", run))
        try:
            loss.backward()
        finally:
            set_backward_timer(None)
        timed("update", "update", opt.step)
        return loss.data
    return step


def layer_rows(samples):
    """samples: per step (step ms, {(part, phase): ms}). Rows per part: the median ms of each
    phase, their sum and its share of the median step; "other" is the rest of the step (Python
    between the parts, gradient copies outside the backward closures). Returns (rows, step ms)."""
    step_ms = statistics.median(ms for ms, _ in samples)
    keys = dict.fromkeys(key for _, parts in samples for key in parts)
    median = {key: statistics.median(parts.get(key, 0.0) for _, parts in samples) for key in keys}
    names = dict.fromkeys(PARTS + [part for part, _ in keys])
    rows = []
    for part in (p for p in names if any(k[0] == p for k in keys)):
        by_phase = {f"{phase}_ms": median.get((part, phase)) for phase in PHASES}
        rows.append({"part": part, **by_phase, "ms": sum(v for v in by_phase.values() if v is not None)})
    rows.append({"part": "other", **{f"{phase}_ms": None for phase in PHASES},
                 "ms": step_ms - sum(r["ms"] for r in rows)})
    for row in rows:
        row["share"] = 100 * row["ms"] / step_ms
    return rows, step_ms


def study_layers(args):
    """One training step of CIFAR-10 quick at batch 100, forward, backward and update, timed
    part by part with CUDA events: medians over the profiled steps."""
    import tnet
    from tnet.graph import train_step
    timing = QUICK_LAYERS_TIMING if args.quick else LAYERS_TIMING
    tnet.set_precision("tf32")
    batches = random_batches(LAYERS_BATCH, tnet.DEVICE)
    model, opt, params = tnet_quick()
    marks = []
    step = profiled_step(model, opt, marks)
    err, tol, worst = check_record(record(step, params, batches), reference_record(1, batches))
    print(f"check: {CHECK_STEPS} profiled steps against PyTorch float64, worst {worst}: {err:.1e} (bound {tol:g})")
    if not err <= tol:
        sys.exit(f"bench.py layers: WRONG, tnet's training step disagrees with PyTorch's ({worst}: {err:.3g}); not timed")

    samples = []
    for i in range(timing["warmup"] + timing["iters"]):
        marks.clear()
        clock = Clock(tnet.DEVICE)
        step(*batches[i % len(batches)])
        step_ms = clock.stop().ms()  # waits for the step, so every mark has its end
        parts = collections.defaultdict(float)
        for part, phase, mark in marks:
            parts[part, phase] += mark.ms()
        if i >= timing["warmup"]:
            samples.append((step_ms, parts))
    rows, step_ms = layer_rows(samples)
    eager_ms = block_time(lambda x, y: train_step(model, opt, x, y), batches, tnet.DEVICE,
                          warmup=1, iters=timing["iters"], repeats=3)
    print_header(LAYERS_COLUMNS)
    for row in rows:
        print_row(row, LAYERS_COLUMNS)
    conv_ip = sum(r["share"] for r in rows if r["part"] in ("convolution", "inner product"))
    print(f"step {step_ms:.3f} ms profiled, {eager_ms:.3f} ms without the events (tnet.graph.train_step); "
          f"convolution and inner product: {conv_ip:.1f}% (the original's Caffe: 96%)")

    write_json(os.path.join(args.out, "layers.json"), "layers", rows, batch=LAYERS_BATCH, timing=timing,
               step_ms=step_ms, unprofiled_step_ms=eager_ms, conv_and_ip_share=conv_ip,
               check={"worst": worst, "err": err, "tol": tol}, solver=SOLVER, precision="tf32")
    bars(os.path.join(args.out, "layers.png"), [f"{r['part']}\n{r['share']:.0f}%" for r in rows],
         {"ms": [r["ms"] for r in rows]},
         f"CIFAR-10 quick, one training step at batch {LAYERS_BATCH}: {step_ms:.2f} ms\n{environment()['gpu']}",
         "ms per step (median)")
    return rows


# -----------------------------------------------------------------------------
# the train study: 100 training steps of nets of growing size, tnet against PyTorch

TRAIN_VARIANTS = {  # name: (on the host?, make(width, batches) -> (step, parameters)); PyTorch's GPU ones first
    "torch eager": (False, lambda width, batches: torch_variant(width, batches)),
    "torch graphed": (False, lambda width, batches: torch_variant(width, batches, graphed=True)),
    "tnet eager": (False, lambda width, batches: tnet_variant(width, batches)),
    "tnet graphed": (False, lambda width, batches: tnet_variant(width, batches, graphed=True)),
    "torch cpu": (True, lambda width, batches: torch_variant(width, batches)),  # the smallest net only
}
TRAIN_COLUMNS = [
    ("net", "<12", lambda r: r["net"]),
    ("variant", "<13", lambda r: r["variant"]),
    ("rel.err", ">8", lambda r: fmt(r["err"], ".1e")),
    ("ms/step", ">9", lambda r: fmt(r["ms"], ".3f") if r["status"] == "ok" else r["status"]),
    ("s/100", ">7", lambda r: fmt(r["s_per_100"], ".3f")),
    ("/torch eager", ">12", lambda r: fmt(r["vs_torch_eager"], ".2f")),
    ("/torch graphed", ">14", lambda r: fmt(r["vs_torch_graphed"], ".2f")),
]


def check_then_time_steps(make, batches, ref, device, timing):
    """make() -> (step, parameters) from the initial weights; its first CHECK_STEPS steps are
    compared with ref, and only if they agree is it timed (carrying on from there)."""
    built = {}

    def check():
        built["step"], params = make()
        err, tol, built["worst"] = check_record(record(built["step"], params, batches), ref)
        return err, tol
    row = check_then_time(check, lambda: block_time(built["step"], batches, device, **timing))
    return {**row, "worst": built.get("worst")}


def study_train(args):
    """Milliseconds per training step (forward, backward, SGD) of CIFAR-10 quick and its wide
    variant at batches 100 and 1024: tnet eager and graphed, PyTorch eager and graphed on the
    GPU, PyTorch on the CPU. Ratios are times: above 1 is slower than PyTorch."""
    import tnet
    torch.backends.cudnn.benchmark = True  # cuDNN tries its algorithms in the warm-up and keeps the fastest
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True  # tnet's default precision
    tnet.set_precision("tf32")
    nets = QUICK_NETS if args.quick else NETS
    timing = QUICK_TIMING if args.quick else TIMING
    rows = []
    path = os.path.join(args.out, "train.json")
    settings = dict(nets=nets, timing=timing, cpu_timing=CPU_TIMING, cpu_threads=torch.get_num_threads(),
                    n_batches=N_BATCHES, solver=SOLVER, check_steps=CHECK_STEPS, check_tol=CHECK_TOL,
                    precision="tf32 (tnet, cuDNN, cuBLAS); fp32 on the CPU",
                    pytorch_sgd="torch.optim.SGD, foreach, two groups (weights lr, biases 2*lr): Caffe's steps at a "
                                "constant lr")
    print_header(TRAIN_COLUMNS)
    for label, width, batch in nets:
        batches = random_batches(batch, tnet.DEVICE)
        ref = reference_record(width, batches)
        ms = {}
        for name, (host, make) in TRAIN_VARIANTS.items():
            if host and label != nets[0][0]:
                continue
            data = [(x.cpu(), y.cpu()) for x, y in batches] if host else batches
            row = {"net": label, "width": width, "batch": batch, "variant": name}
            row.update(check_then_time_steps(lambda: make(width, data), data, ref, data[0][0].device,
                                             CPU_TIMING if host else timing))
            ms[name] = row["ms"]
            row.update(s_per_100=None if ms[name] is None else ms[name] * 100 / 1e3,
                       vs_torch_eager=ratio(ms[name], ms["torch eager"]),
                       vs_torch_graphed=ratio(ms[name], ms.get("torch graphed")))
            print_row(row, TRAIN_COLUMNS)
            rows.append(row)
        write_json(path, "train", rows, complete=False, **settings)
    for row in rows:
        if row["status"] != "ok":
            detail = row.get("error") or f"worst piece {row['worst']}: {row['err']:.3g}"
            print(f"{row['net']} {row['variant']}: {row['status']}, {detail}")

    write_json(path, "train", rows, **settings)
    labels = [label for label, _, _ in nets]
    by_variant = {name: [next((r["ms"] for r in rows if r["net"] == label and r["variant"] == name), None)
                         for label in labels] for name in TRAIN_VARIANTS}
    bars(os.path.join(args.out, "train.png"), labels, by_variant,
         f"CIFAR-10 quick training, one step (forward, backward, SGD)\n{environment()['gpu']}",
         "ms per step (median)", log=True)
    return rows


# -----------------------------------------------------------------------------
# the profile study: where the GPU time of a tnet training step goes, kernel by kernel and GEMM by GEMM

PROFILE_BATCHES = [100, 1024]
QUICK_PROFILE_BATCHES = [100]
PROFILE_STEPS = 5  # eager steps under torch.profiler; times are per step
PROFILE_COLUMNS = [
    ("batch", ">5", lambda r: r["batch"]),
    ("table", "<6", lambda r: r["table"]),
    ("name", "<44", lambda r: r["name"][:44]),
    ("us/step", ">8", lambda r: fmt(r["us"], ".1f")),
    ("launches", ">8", lambda r: r["launches"]),
    ("share", ">6", lambda r: fmt(r["share"], ".1f")),
]


def kernel_rows(events, steps):
    """(name, GPU microseconds per step, launches per step) of every GPU kernel and copy in
    torch.profiler's key_averages(), longest first."""
    rows = []
    for e in events:
        us = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        if str(getattr(e, "device_type", "")).endswith("CUDA") and us > 0:
            rows.append((e.key, us / steps, e.count // steps))
    return sorted(rows, key=lambda r: -r[1])


def _gemm_label(a, b, out, M, N, K, batch, **kw):
    implicit = kw.get("a_mode", 0) or kw.get("b_mode", 0)
    return (f"{M}x{N}x{K}" + (f", {batch} products" if batch > 1 else "") + (", implicit" if implicit else "")
            + (", summed" if kw.get("sum_batch") else ""))


def _nhwc_conv_label(x, w, w_strides, cout, kernel, *_):
    n, c, h, w = x.shape  # MxNxK of the GEMM; stride 1, so about as many output pixels as input ones
    return f"{n * h * w}x{cout}x{c * kernel[0] * kernel[1]}, NHWC"


def _nhwc_weight_grad_label(x, dy, kernel, *_):
    return f"{dy.shape[1]}x{x.shape[1] * kernel[0] * kernel[1]}x{dy.numel() // dy.shape[1]}, NHWC, summed"


def gemm_launches(step, x, y):
    """(label, launch) for each GEMM that one call of step(x, y) runs; launch() runs it again
    on the same operands. The GEMM launchers (gemm._launch, nhwc._run_conv and
    nhwc._run_weight_grad) are watched during the call."""
    from tnet.kernels import gemm, nhwc
    launches, watched = [], [(gemm, "_launch", _gemm_label), (nhwc, "_run_conv", _nhwc_conv_label),
                             (nhwc, "_run_weight_grad", _nhwc_weight_grad_label)]

    def watch(run, label):
        def launch(*args, **kw):
            launches.append((label(*args, **kw), lambda: run(*args, **kw)))
            return run(*args, **kw)
        return launch
    runs = [getattr(module, name) for module, name, _ in watched]
    for (module, name, label), run in zip(watched, runs):
        setattr(module, name, watch(run, label))
    try:
        step(x, y)
    finally:
        for (module, name, _), run in zip(watched, runs):
            setattr(module, name, run)
    return launches


def study_profile(args):
    """Where a tnet training step's GPU time goes: every kernel's time per eager step
    (torch.profiler), and every GEMM replayed alone from a CUDA graph; beside them the step
    replayed whole from a CUDA graph."""
    import tnet
    from torch.profiler import ProfilerActivity, profile
    from tnet.graph import train_step
    tnet.set_precision("tf32")
    bench = QUICK_BENCH if args.quick else BENCH
    rows = []
    path = os.path.join(args.out, "profile.json")
    print_header(PROFILE_COLUMNS)
    for batch in QUICK_PROFILE_BATCHES if args.quick else PROFILE_BATCHES:
        batches = random_batches(batch, tnet.DEVICE)
        graphed, _ = tnet_variant(1, batches, graphed=True)
        graph_ms = block_time(graphed, batches, tnet.DEVICE, **QUICK_TIMING)
        model, opt, _ = tnet_quick()
        step = lambda x, y: train_step(model, opt, x, y)
        for x, y in batches:  # compiles and autotunes
            step(x, y)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(PROFILE_STEPS):
                step(*batches[i % len(batches)])
            torch.cuda.synchronize()
        kernels = kernel_rows(prof.key_averages(), PROFILE_STEPS)
        gemms = [(label, 1000 * graph_time(launch, [()], bench), 1) for label, launch in gemm_launches(step, *batches[0])]
        for table, entries in (("kernel", kernels), ("gemm", gemms)):
            total = sum(us for _, us, _ in entries)
            for name, us, launches in entries + [("all", total, sum(n for _, _, n in entries))]:
                row = {"batch": batch, "table": table, "name": name, "us": us, "launches": launches,
                       "share": 100 * us / total if total else None}
                print_row(row, PROFILE_COLUMNS)
                rows.append(row)
        print(f"batch {batch}: the step replayed from a CUDA graph takes {graph_ms:.3f} ms")
        rows.append({"batch": batch, "table": "step", "name": "graphed step", "us": 1000 * graph_ms, "launches": None,
                     "share": None})
        write_json(path, "profile", rows, complete=False, steps=PROFILE_STEPS, do_bench=bench, precision="tf32")
    write_json(path, "profile", rows, steps=PROFILE_STEPS, do_bench=bench, precision="tf32")
    names = list(dict.fromkeys(r["name"] for r in rows if r["table"] == "kernel" and r["name"] != "all"))[:12]
    per_batch = {f"batch {b}": [next((r["us"] for r in rows if r["batch"] == b and r["table"] == "kernel"
                                      and r["name"] == n), None) for n in names]
                 for b in dict.fromkeys(r["batch"] for r in rows)}
    bars(os.path.join(args.out, "profile.png"), [n.removesuffix("_kernel")[:18] for n in names], per_batch,
         f"GPU time per training step by kernel (eager, torch.profiler)\n{environment()['gpu']}",
         "microseconds per step", log=True)
    return rows


STUDIES = {
    "gemm": (study_gemm, "GEMM variants (naive, tiled, two_tiles, tnet) against cuBLAS and numpy"),
    "layers": (study_layers, "one CIFAR-10 quick training step split by layer type (conv, pool, ReLU, ...)"),
    "train": (study_train, "time for 100 CIFAR-10 quick training steps: tnet eager and graphed against PyTorch"),
    "profile": (study_profile, "where a tnet training step's GPU time goes: per kernel, and GEMM by GEMM"),
    "launch": (study_launch, "the host's time per GEMM call: tnet.matmul against torch.matmul"),
}

# -----------------------------------------------------------------------------


def build_parser():
    parser = argparse.ArgumentParser(description="The original student project's studies, side by side with PyTorch.")
    sub = parser.add_subparsers(dest="study", required=True, metavar="{" + ",".join(STUDIES) + "}",
                                help="which study to run")
    for name, (_, text) in STUDIES.items():
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("--quick", action="store_true", help="a reduced sweep that runs in about a minute")
        p.add_argument("--out", default="results/", help="folder for <study>.json and <study>.png (default: results/)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    # before tnet is imported: without a GPU it would switch on Triton's (slow) interpreter
    if not torch.cuda.is_available():
        print(f"bench.py {args.study}: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        sys.exit(2)
    os.makedirs(args.out, exist_ok=True)
    STUDIES[args.study][0](args)


if __name__ == "__main__":
    main()
