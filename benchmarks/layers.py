"""The layers study: one CIFAR-10 quick training step split by layer type (the original's
"96% of the time is convolution and inner product")."""
import collections
import os
import statistics
import sys

from .common import Clock, bars, block_time, environment, fmt, print_header, print_row, write_json
from .steps import CHECK_STEPS, SOLVER, check_record, random_batches, record, reference_record, tnet_quick

LAYERS_BATCH = 100
LAYERS_TIMING = {"warmup": 3, "iters": 20}  # profiled steps; the first ones autotune tnet's kernels
QUICK_LAYERS_TIMING = {"warmup": 3, "iters": 10}
FORWARD_PART = {"Conv2d": "convolution", "MaxPool2d": "pooling", "AvgPool2d": "pooling", "ReLU": "ReLU",
                "Flatten": "flatten", "Linear": "inner product"}  # module class -> part of the step
BACKWARD_PART = {"conv2d": "convolution", "max_pool2d": "pooling", "avg_pool2d": "pooling", "relu": "ReLU",
                 "reshape": "flatten", "linear": "inner product", "cross_entropy": "softmax/loss"}  # tape op
PARTS = ["convolution", "pooling", "ReLU", "flatten", "inner product", "softmax/loss", "update"]  # table order
PHASES = ["forward", "backward", "update"]

LAYERS_COLUMNS = [
    ("part", "<14", lambda r: r["part"]),
    *[(f"{phase} ms", ">11", lambda r, p=phase: fmt(r[f"{p}_ms"], ".3f")) for phase in PHASES],
    ("ms", ">7", lambda r: fmt(r["ms"], ".3f")),
    ("share", ">6", lambda r: f"{r['share']:.1f}%"),
]


def profiled_step(model, opt, marks):
    """tnet.recipes.make_train_step's step with a Clock around each layer's forward, each
    backward closure (tnet.tensor.set_backward_timer) and the update; marks gets (part, phase,
    clock)."""
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
        return loss.memory
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


def run(args):
    """One training step of CIFAR-10 quick at batch 100, forward, backward and update, timed
    part by part with CUDA events: medians over the profiled steps."""
    import tnet
    from tnet.recipes import make_train_step
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
    eager_ms = block_time(make_train_step(model, opt), batches, tnet.DEVICE,
                          warmup=1, iters=timing["iters"], repeats=3)
    print_header(LAYERS_COLUMNS)
    for row in rows:
        print_row(row, LAYERS_COLUMNS)
    conv_ip = sum(r["share"] for r in rows if r["part"] in ("convolution", "inner product"))
    print(f"step {step_ms:.3f} ms profiled, {eager_ms:.3f} ms without the events (tnet.recipes.make_train_step); "
          f"convolution and inner product: {conv_ip:.1f}% (the original's Caffe: 96%)")

    write_json(os.path.join(args.out, "layers.json"), "layers", rows, batch=LAYERS_BATCH, timing=timing,
               step_ms=step_ms, unprofiled_step_ms=eager_ms, conv_and_ip_share=conv_ip,
               check={"worst": worst, "err": err, "tol": tol}, solver=SOLVER, precision="tf32")
    bars(os.path.join(args.out, "layers.png"), [f"{r['part']}\n{r['share']:.0f}%" for r in rows],
         {"ms": [r["ms"] for r in rows]},
         f"CIFAR-10 quick, one training step at batch {LAYERS_BATCH}: {step_ms:.2f} ms\n{environment()['gpu']}",
         "ms per step (median)")
    return rows
