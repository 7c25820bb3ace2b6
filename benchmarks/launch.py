"""The launch study: what one call costs the host."""
import os
import time

import torch

from .common import bars, check_then_time, environment, fmt, print_header, print_row, rel_error, write_json
from .gemm import GEMM_COLUMNS, PRECISIONS, TOL

LAUNCH_SQUARE = [64, 256]  # n x n x n products whose GPU time is far below a call's host time
LAUNCH_TIMING = {"warmup": 50, "iters": 2000}  # calls timed on the host clock without a sync between them
QUICK_LAUNCH_TIMING = {"warmup": 20, "iters": 500}

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


def run(args):
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
