"""The GEMM study: the original's variants, tnet's autotuned kernel, cuBLAS and numpy."""
import math
import os

import torch

from .common import (BENCH, QUICK_BENCH, block_time, check_then_time, fmt, gpu_time, graph_time, names_list, plot,
                     print_header, print_row, rel_error, write_json)

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
PRECISIONS = ("ieee", "tf32", "bf16", "fp16")
TOL = {"ieee": 1e-4, "tf32": 3e-3, "bf16": 3e-2, "fp16": 3e-2}  # bounds on ||C - ref|| / ||ref||; typical: 1e-7, 3e-4, 3e-3
MAX_FLOP = {"naive": 2 * 2048**3, "numpy": 2 * 1024**3}  # beyond these a variant is "skipped": too slow
ROTATE_BYTES = 120e6  # inputs cycled through per timing: twice the H200's 60 MB L2, so memory is measured
NUMPY_TIMING = {"warmup": 0, "iters": 1, "repeats": 5}  # host-clock calls of numpy (the check was the warm-up)
VARIANT_NAMES = ["cublas", "tnet", "naive", "tiled", "two_tiles", "numpy"]  # run's variants, in its order

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


def add_arguments(parser):
    parser.add_argument("--variants", type=names_list(VARIANT_NAMES), default=None,
                        help=f"comma-separated variants (default: all; the ratios need cublas): {','.join(VARIANT_NAMES)}")
    parser.add_argument("--sizes", type=lambda text: [int(n) for n in text.split(",")], default=None,
                        help="comma-separated n of the n x n x n products, without CIFAR-10 quick's shapes "
                             f"(default: {','.join(map(str, SQUARE))} and CIFAR-10 quick's; with --quick, "
                             f"{','.join(map(str, QUICK_SQUARE))} and its first three)")


def run(args):
    """C = A @ B at square sizes and at CIFAR-10 quick's GEMM shapes, every variant at each precision it
    supports: checked against the float64 product, then timed."""
    from tnet.kernels.gemm import matmul
    from .gemm_variants import VARIANTS
    variants = {  # name: (C = multiply(a, b, precision), precisions); cuBLAS first, the others are compared with it
        "cublas": (lambda a, b, p: torch.matmul(a, b), PRECISIONS),
        "tnet": (lambda a, b, p: matmul(a, b, precision=p), PRECISIONS),
        **VARIANTS,
        "numpy": (lambda a, b, p: a @ b, ("ieee",)),
    }
    assert list(variants) == VARIANT_NAMES
    variants = {name: v for name, v in variants.items() if name in (args.variants or VARIANT_NAMES)}
    shapes = [(f"{n}^3", (n, n, n)) for n in args.sizes or (QUICK_SQUARE if args.quick else SQUARE)]
    if not args.sizes:
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
            # 16 bits: every variant reads and writes the 16-bit dtype, as cuBLAS does
            cast = {"bf16": lambda x: x.bfloat16(), "fp16": lambda x: x.half()}.get(precision, lambda x: x)
            pairs = list(zip(cast(A).unbind(0), cast(B).unbind(0)))
            cublas_ms = cublas_graph_ms = None
            for name, (multiply, precisions) in variants.items():
                if precision not in precisions:
                    continue
                fn = lambda a, b: multiply(a, b, precision)
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
    dashes = {"ieee": "-", "tf32": "--", "bf16": ":", "fp16": "-."}
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
