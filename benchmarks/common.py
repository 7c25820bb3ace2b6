"""The studies' shared helpers: check then time, timing, a table, JSON, a plot."""
import argparse
import concurrent.futures
import datetime
import itertools
import json
import os
import shlex
import subprocess
import statistics
import sys
import time

import numpy as np
import torch
from tqdm import tqdm

BENCH = {"warmup": 25, "rep": 100}  # do_bench milliseconds (gpu_time, graph_time); --quick uses QUICK_BENCH
QUICK_BENCH = {"warmup": 10, "rep": 40}


def numpy_state(model):
    """A tnet model's state_dict as numpy copies: a snapshot of its weights (tnet's state_dict holds
    tensors on the model's memory, as torch's), for torch.from_numpy and later loads."""
    return {k: np.array(v.numpy()) for k, v in model.state_dict().items()}


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


def interleaved(blocks, repeats):
    """{name: median ms}: blocks {name: a function timing one block, in ms per call}, each run once
    untimed (a warm-up), then `repeats` times, taking turns (a, b, a, b, ...), so that a shared
    machine's slow spell falls on every name alike and the ratios between them stay fair."""
    for block in blocks.values():
        block()
    times = {name: [] for name in blocks}
    for _ in range(repeats):
        for name, block in blocks.items():
            times[name].append(block())
    return {name: statistics.median(t) for name, t in times.items()}


def check_then_time_together(variants, repeats):
    """{name: check_then_time's fields}: variants {name: (check, block)}, each checked as check_then_time
    does, then those that pass timed together by interleaved(their blocks, repeats)."""
    rows = {name: check_then_time(check, lambda: None) for name, (check, _) in variants.items()}
    ok = {name: block for name, (_, block) in variants.items() if rows[name]["status"] == "ok"}
    try:
        for name, ms in interleaved(ok, repeats).items():
            rows[name]["ms"] = ms
    except Exception as e:  # as check_then_time: one variant's failure must not end the sweep
        for name in ok:
            rows[name].update(status="ERROR", ms=None, error=f"{type(e).__name__}: {e}")
    return rows


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
            "command": shlex.join(sys.orig_argv),
            # tnet's switches (TNET_AUTOTUNE, TNET_TRIAL, TNET_CONV_TMA, ...): what ran is part of the figure
            "tnet_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("TNET_")}}


def write_json(path, study, rows, complete=True, **settings):
    """Atomically (a cut run leaves the last whole file). The studies also write it after
    every shape or net with complete=False, so that a run cut short keeps what it measured."""
    from tnet.serialize import atomic_write
    doc = {"study": study, **environment(), "complete": complete, "settings": settings, "rows": rows}
    atomic_write(path, lambda f: f.write(json.dumps(doc, indent=1).encode()))
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


def bars(path, groups, series, title, ylabel, log=False, line=None):
    """Grouped bars; series: label -> one value per group (None: no bar); line: a horizontal line at that value."""
    def draw(ax):
        width = 0.8 / len(series)
        for i, (label, values) in enumerate(series.items()):
            shown = [(g + (i - (len(series) - 1) / 2) * width, v) for g, v in enumerate(values) if v is not None]
            ax.bar([x for x, _ in shown], [v for _, v in shown], width, label=label)
        ax.set_xticks(range(len(groups)), groups, fontsize=7, rotation=30, ha="right")
        if line is not None:
            ax.axhline(line, color="black", linewidth=0.8)
        ax.set_yscale("log" if log else "linear")
        ax.set(title=title, ylabel=ylabel)
        if len(series) > 1:
            ax.legend(fontsize=7)
    figure(path, draw)


def compile_in_processes(tasks, jobs, desc):
    """Run `python -m benchmarks.<module> ARGS` for each (label, module, args, shard) of tasks,
    `jobs` at a time, each under TNET_AUTOTUNE=compile (shard None) or compile:I/N (shard (I, N)):
    every kernel they launch compiled in its configs (those of the share), into Triton's cache,
    so that a timed run after compiles none. Returns {label: error text} of those that failed."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def one(task):
        label, module, args, shard = task
        mode = "compile" if shard is None else f"compile:{shard[0]}/{shard[1]}"
        done = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *map(str, args)], cwd=root,
                              env={**os.environ, "TNET_AUTOTUNE": mode}, capture_output=True, text=True)
        return label, done.returncode, done.stderr.strip().splitlines()[-1:] if done.returncode else []
    failed, processes = {}, jobs
    start = time.perf_counter()
    # Processes that ran out of GPU memory together (a large model's shards, one step each) run
    # again, half as many at a time.
    while tasks:
        out_of_memory = []
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for task, (label, code, tail) in zip(tasks, tqdm(pool.map(one, tasks), total=len(tasks), desc=desc)):
                if code and jobs > 1 and tail and "OutOfMemoryError" in tail[0]:
                    out_of_memory.append(task)
                elif code and label not in failed:
                    failed[label] = tail[0] if tail else f"exit status {code}"
        tasks, jobs = out_of_memory, max(1, jobs // 2)
    print(f"compiled in {time.perf_counter() - start:.0f} s by {processes} processes"
          + "".join(f"\n{label}: {err}" for label, err in failed.items()), flush=True)
    return failed


def names_list(choices):
    """argparse type: a comma-separated subset of choices, in the order given."""
    def parse(text):
        names = [name for name in text.split(",") if name]
        unknown = [name for name in names if name not in choices]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"{','.join(unknown) or repr(text)}: choose from {','.join(choices)}")
        return names
    return parse
