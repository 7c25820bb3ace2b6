"""The original student project's studies, side by side with PyTorch.

    python bench.py gemm [--quick] [--out results/]    # GEMM variants against cuBLAS and numpy
    python bench.py layers                             # per-layer times (comes with the model)
    python bench.py train                              # training throughput (comes with the model)

Every result is checked against a float64 reference before it is timed: a wrong kernel is
reported WRONG, never timed. Each study prints a table and writes OUT/<study>.json (rows,
GPU, versions, date, command line) and OUT/<study>.png. Needs a CUDA GPU.

GPU times are do_bench medians of the Python call, launch included: at the smallest shapes
they measure launch overhead as much as the kernel.
"""
import argparse
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
SQUARE = [64, 128, 256, 512, 1024, 2048, 4096]  # n for n x n x n GEMMs
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

# -----------------------------------------------------------------------------
# shared helpers: check then time, a table, JSON, a plot


def rel_error(out, ref):
    out = torch.as_tensor(out).to(ref.device, torch.float64)
    return ((out - ref).norm() / ref.norm()).item()


def check_then_time(fn, inputs, ref, tol, timer):
    """Run fn(*inputs[0]) and compare it with ref; only if within tol, time it with
    timer(fn, inputs) -> ms. Returns the row fields: status, err, ms."""
    try:
        err = rel_error(fn(*inputs[0]), ref)
        if not err <= tol:  # also catches NaN
            return {"status": "WRONG", "err": err, "ms": None}
        return {"status": "ok", "err": err, "ms": timer(fn, inputs)}
    except Exception as e:  # a kernel that fails to compile or launch must not end the sweep
        return {"status": "ERROR", "err": None, "ms": None, "error": f"{type(e).__name__}: {e}"}


def gpu_time(fn, inputs, bench):
    """Median ms of fn over do_bench's runs, cycling through the input sets."""
    import triton.testing
    sets = itertools.cycle(inputs)
    return triton.testing.do_bench(lambda: fn(*next(sets)), return_mode="median", **bench)


def cpu_time(fn, inputs, reps=5):
    """Median ms of reps calls of fn on the host (it has run once already: the check)."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*inputs[0])
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def print_header(columns):
    """columns: (title, format spec such as "<20" or ">8", row -> str)."""
    print("  ".join(f"{title:{spec}}" for title, spec, _ in columns))


def print_row(row, columns):
    print("  ".join(f"{cell(row):{spec}}" for _, spec, cell in columns), flush=True)


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def environment():
    import triton
    return {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "numpy": np.__version__, "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": shlex.join(sys.orig_argv)}


def write_json(path, study, rows, **settings):
    with open(path, "w") as f:
        json.dump({"study": study, **environment(), "settings": settings, "rows": rows}, f, indent=1)
    print(f"wrote {path}")


def plot(path, series, title, xlabel, ylabel):
    """Log-log lines; series: label -> (xs, ys, matplotlib style kwargs)."""
    try:
        import matplotlib
    except ImportError:
        print(f"matplotlib is not installed: no {path}")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for label, (xs, ys, style) in series.items():
        ax.loglog(xs, ys, label=label, marker=".", **style)
    xs = sorted({x for xs, _, _ in series.values() for x in xs})
    ax.set_xticks(xs, [str(x) for x in xs], minor=False)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())  # ticks at the measured sizes only
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"wrote {path}")


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
    timer = lambda fn, inputs: gpu_time(fn, inputs, bench)

    torch.manual_seed(0)
    rows = []
    print_header(GEMM_COLUMNS)
    for label, (M, N, K) in shapes:
        A, B = input_sets(M, N, K)
        ref = A[0].double() @ B[0].double()
        for precision in PRECISIONS:
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"  # cuBLAS's fp32 GEMMs
            # bf16: every variant reads bf16 inputs, as cuBLAS does (cuBLAS also writes bf16)
            cast = (lambda x: x.bfloat16()) if precision == "bf16" else (lambda x: x)
            pairs = list(zip(cast(A).unbind(0), cast(B).unbind(0)))
            cublas_ms = None
            for name, (run, precisions) in variants.items():
                if precision not in precisions:
                    continue
                fn = lambda a, b: run(a, b, precision)
                row = {"shape": label, "M": M, "N": N, "K": K, "variant": name, "precision": precision}
                if 2 * M * N * K > MAX_FLOP.get(name, math.inf):
                    row.update(status="skipped", err=None, ms=None)
                elif name == "numpy":
                    host = [(pairs[0][0].cpu().numpy(), pairs[0][1].cpu().numpy())]
                    row.update(check_then_time(fn, host, ref.cpu(), TOL[precision], cpu_time))
                else:
                    row.update(check_then_time(fn, pairs, ref, TOL[precision], timer))
                if name == "cublas":
                    cublas_ms = row["ms"]
                ms = row["ms"]
                row["tflops"] = 2 * M * N * K / (ms * 1e9) if ms else None
                row["vs_cublas"] = cublas_ms / ms if ms and cublas_ms else None
                print_row(row, GEMM_COLUMNS)
                rows.append(row)
        del A, B, pairs
        torch.cuda.empty_cache()
    for row in rows:
        if "error" in row:
            print(f"{row['shape']} {row['variant']} {row['precision']}: {row['error']}")

    write_json(os.path.join(args.out, "gemm.json"), "gemm", rows, tolerance=TOL, max_flop=MAX_FLOP,
               rotate_bytes=ROTATE_BYTES, do_bench=bench)
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
# studies that need tnet.models and tnet.optim


def study_layers(args):
    """Forward and backward time of each CIFAR-10 quick layer: tnet against torch.nn.
    Fills rows through check_then_time and print_row, then write_json and plot."""
    raise NotImplementedError("the layers study comes with the model (tnet.models)")


def study_train(args):
    """Training throughput and accuracy of CIFAR-10 quick: tnet against PyTorch."""
    raise NotImplementedError("the train study comes with the model (tnet.models, tnet.optim)")


STUDIES = {
    "gemm": (study_gemm, "GEMM variants (naive, tiled, two_tiles, tnet) against cuBLAS and numpy"),
    "layers": (study_layers, "per-layer forward/backward times of CIFAR-10 quick against torch.nn"),
    "train": (study_train, "CIFAR-10 quick training speed and accuracy against PyTorch"),
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
    try:
        STUDIES[args.study][0](args)
    except NotImplementedError as e:
        sys.exit(f"bench.py {args.study}: {e}")


if __name__ == "__main__":
    main()
