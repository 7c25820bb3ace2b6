"""The train study: 100 training steps of nets of growing size, tnet against PyTorch; then
airbench94's step at batch 1024 against PyTorch eager, graphed and compiled (benchmarks/airbench.py)."""
import os

import torch

from . import airbench
from .common import bars, environment, fmt, print_header, print_row, ratio, write_json
from .steps import (CHECK_STEPS, CHECK_TOL, CHECK_TOL_BF16, N_BATCHES, SOLVER, check_then_time_steps,
                    random_batches, reference_record, tnet_variant, torch_variant)

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

TRAIN_VARIANTS = {  # name: (on the host?, make(width, batches) -> (step, parameters)); PyTorch's GPU ones first
    "torch eager": (False, lambda width, batches: torch_variant(width, batches)),
    "torch graphed": (False, lambda width, batches: torch_variant(width, batches, graphed=True)),
    "tnet eager": (False, lambda width, batches: tnet_variant(width, batches)),
    "tnet graphed": (False, lambda width, batches: tnet_variant(width, batches, graphed=True)),
    # 16-bit activations: the forward and the loss under autocast in bf16, fp32 master weights
    "torch graphed bf16": (False, lambda width, batches: torch_variant(width, batches, True, torch.bfloat16)),
    "tnet graphed bf16": (False, lambda width, batches: tnet_variant(width, batches, True, torch.bfloat16)),
    "torch cpu": (True, lambda width, batches: torch_variant(width, batches)),  # the smallest net only
}
TRAIN_COLUMNS = [
    ("net", "<16", lambda r: r["net"]),
    ("variant", "<27", lambda r: r["variant"]),
    ("rel.err", ">8", lambda r: fmt(r["err"], ".1e")),
    ("ms/step", ">9", lambda r: fmt(r["ms"], ".3f") if r["status"] == "ok" else r["status"]),
    ("s/100", ">7", lambda r: fmt(r["s_per_100"], ".3f")),
    ("/torch eager", ">12", lambda r: fmt(r["vs_torch_eager"], ".2f")),
    ("/torch graphed", ">14", lambda r: fmt(r["vs_torch_graphed"], ".2f")),
    ("/torch same prec.", ">17", lambda r: fmt(r["vs_torch_same"], ".2f")),
    ("/compiled", ">9", lambda r: fmt(r.get("vs_torch_compiled"), ".2f")),  # the airbench94 rows only
    ("/compiled graphed", ">17", lambda r: fmt(r.get("vs_torch_compiled_graphed"), ".2f")),
]


def add_arguments(parser):
    parser.add_argument("--compile-mode", choices=airbench.COMPILE_MODES,
                        help=f"torch.compile's mode for the airbench94 rows (default: {airbench.COMPILE_MODE}; with "
                             f"--quick, {airbench.QUICK_COMPILE_MODE}, quicker to compile); "
                             f"{' and '.join(airbench.GRAPHING_MODES)} capture CUDA graphs themselves, so they get no "
                             f"'compiled graphed' row. The compile time is reported apart, never in the step time")
    parser.add_argument("--only-airbench", action="store_true",
                        help="the airbench94 rows alone, without the CIFAR-10 quick nets")


def run(args):
    """Milliseconds per training step (forward, backward, SGD) of CIFAR-10 quick and its wide
    variant at batches 100 and 1024: tnet eager and graphed, PyTorch eager and graphed on the
    GPU, PyTorch on the CPU; then airbench94's whole step at batch 1024 in float16 (airbench.rows).
    Ratios are times: above 1 is slower than PyTorch."""
    import tnet
    torch.backends.cudnn.benchmark = True  # cuDNN tries its algorithms in the warm-up and keeps the fastest
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True  # tnet's default precision
    tnet.set_precision("tf32")
    nets = [] if args.only_airbench else QUICK_NETS if args.quick else NETS
    timing = QUICK_TIMING if args.quick else TIMING
    rows = []
    path = os.path.join(args.out, "train.json")
    settings = dict(nets=nets, timing=timing, cpu_timing=CPU_TIMING, cpu_threads=torch.get_num_threads(),
                    n_batches=N_BATCHES, solver=SOLVER, check_steps=CHECK_STEPS, check_tol=CHECK_TOL,
                    precision="tf32 (tnet, cuDNN, cuBLAS); fp32 on the CPU",
                    pytorch_sgd="torch.optim.SGD, foreach, two groups (weights lr, biases 2*lr): Caffe's steps at a "
                                "constant lr", airbench94=airbench.settings(args))
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
                                             CPU_TIMING if host else timing,
                                             CHECK_TOL_BF16 if name.endswith("bf16") else CHECK_TOL))
            ms[name] = row["ms"]
            row.update(s_per_100=None if ms[name] is None else ms[name] * 100 / 1e3,
                       vs_torch_eager=ratio(ms[name], ms["torch eager"]),
                       vs_torch_graphed=ratio(ms[name], ms.get("torch graphed")),
                       vs_torch_same=ratio(ms[name], ms.get("torch graphed bf16" if name.endswith("bf16") else
                                                            "torch graphed")))
            print_row(row, TRAIN_COLUMNS)
            rows.append(row)
        write_json(path, "train", rows, complete=False, **settings)
    for row in airbench.rows(args):  # a variant can take minutes to compile: saved one by one
        print_row(row, TRAIN_COLUMNS)
        rows.append(row)
        write_json(path, "train", rows, complete=False, **settings)
    for row in rows:
        if row["status"] != "ok":
            detail = row.get("error") or f"worst piece {row['worst']}: {row['err']:.3g}"
            print(f"{row['net']} {row['variant']}: {row['status']}, {detail}")
        if row.get("compile_s") is not None:
            print(f"{row['net']} {row['variant']}: torch.compile (mode {row['compile_mode']}) took "
                  f"{row['compile_s']:.1f} s, in its first step (not in its ms/step)")

    write_json(path, "train", rows, **settings)
    labels = list(dict.fromkeys(r["net"] for r in rows))
    by_variant = {name: [next((r["ms"] for r in rows if r["net"] == label and r["variant"] == name), None)
                         for label in labels] for name in dict.fromkeys(r["variant"] for r in rows)}
    bars(os.path.join(args.out, "train.png"), labels, by_variant,
         f"CIFAR-10 quick and airbench94, one training step\n{environment()['gpu']}",
         "ms per step (median)", log=True)
    return rows
