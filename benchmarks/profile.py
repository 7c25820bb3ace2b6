"""The profile study: where the GPU time of a tnet training step goes, kernel by kernel and GEMM by GEMM."""
import os

import torch

from .common import (BENCH, QUICK_BENCH, bars, block_time, environment, fmt, graph_time, print_header, print_row,
                     write_json)
from .steps import random_batches, tnet_quick, tnet_variant
from .train import QUICK_TIMING  # the graphed step's timing

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
    return f"{M}x{N}x{K}" + (f", {batch} products" if batch > 1 else "") + (", summed" if kw.get("sum_batch") else "")


def _conv_label(x, w_base, w_strides, stride_wg, cout, out_hw, kernel, stride, padding, dilation, groups, transposed,
                *_):
    n, c = x.shape[:2]  # MxNxK of each group's implicit GEMM
    return (f"{n * out_hw[0] * out_hw[1]}x{cout // groups}x{c // groups * kernel[0] * kernel[1]}, conv"
            + (f", {groups} groups" if groups > 1 else "") + (" input grad" if transposed else ""))


def _conv_weight_label(x, weight_size, dy, *_, **__):
    cout, c, kh, kw = weight_size
    return f"{cout}x{c * kh * kw}x{dy.numel() // cout}, conv weight grad"


def gemm_launches(step, x, y):
    """(label, launch) for each GEMM that one call of step(x, y) runs; launch() runs it again
    on the same operands. The GEMM launchers (gemm._launch, conv._run_conv and
    conv.weight_trusted, which conv2d_weight calls) are watched during the call."""
    from tnet.kernels import conv, gemm
    launches, watched = [], [(gemm, "_launch", _gemm_label), (conv, "_run_conv", _conv_label),
                             (conv, "weight_trusted", _conv_weight_label)]

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


def run(args):
    """Where a tnet training step's GPU time goes: every kernel's time per eager step
    (torch.profiler), and every GEMM replayed alone from a CUDA graph; beside them the step
    replayed whole from a CUDA graph."""
    import tnet
    from torch.profiler import ProfilerActivity, profile
    from tnet.recipes import make_train_step
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
        step = make_train_step(model, opt)
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
