"""The eager study: what tnet costs the host per op, and whole training steps run eagerly, against
PyTorch eager on the same GPU.

- Ops: each on tensors so small that the GPU waits on the host (launch.host_ms: calls with no
  synchronisation between them, on the host clock), tnet against the same call in PyTorch, in blocks
  taking turns (common.interleaved: a noisy host's slow spells fall on both alike); and a
  bare launch of an empty kernel (one program), by Triton and by tnet's direct launch, the floors.
- Steps: the README example's network (AdamW, label-smoothed cross-entropy, fp32) and ResNet-18
  (the zoo's, bf16 autocast, Nesterov SGD) at batch 128 and 256: tnet eager, tnet under
  tnet.graph.capture and tnet's TrainStep, against PyTorch eager and CUDA-graphed (zoo.torch_step).
  Each step is checked against PyTorch float64 from the same weights before it is timed (the
  zoo's check: each piece within max(CHECK_TOL, FACTOR x PyTorch's own error on it)).

--profile writes OUT/eager_profile.txt: cProfile's top functions of each op's tnet calls and of tnet's
eager steps (the GPU's wait included: a synchronisation inside a step shows as its call's time)."""
import cProfile
import io
import os
import pstats

import torch

from . import zoo
from .common import (bars, block_time, check_then_time_together, environment, fmt, numpy_state, print_header, print_row, ratio,
                     rel_error, write_json)
from .launch import host_ms
from .steps import random_batches, record, torch_train_step

OP_TIMING = {"iters": 400, "repeats": 5}  # blocks of iters calls, tnet's and PyTorch's taking turns
QUICK_OP_TIMING = {"iters": 100, "repeats": 3}
BATCHES = [128, 256]
STEP_MODEL = "ResNet18"
OP_TOL = 1e-5  # fp32 against float64: tnet and PyTorch alike
PROFILE_CALLS = 300
PROFILE_STEPS = 20  # eager training steps profiled (--profile)

COLUMNS = [
    ("case", "<34", lambda r: r["case"]),
    ("variant", "<16", lambda r: r["variant"]),
    ("rel.err", ">8", lambda r: fmt(r["err"], ".1e")),
    ("time", ">10", lambda r: (fmt(r["ms"] and 1000 * r["ms"], ".1f") + " us" if r["kind"] == "op"
                               else fmt(r["ms"], ".3f") + " ms") if r["status"] == "ok" else r["status"]),
    ("x torch", ">8", lambda r: fmt(r.get("vs_torch"), ".2f")),
]


def empty_kernels():
    """A Triton kernel that does nothing, launched by Triton and by tnet (kernels.autotune.jit): one
    launch's host cost is all it measures. Made after tnet is imported (without a GPU, tnet switches
    Triton's interpreter on before any kernel is made)."""
    import triton
    from tnet.kernels.autotune import jit_fast

    def empty(x_ptr, n):
        pass
    return triton.jit(empty), jit_fast(triton.jit(empty))


def op_cases(device):
    """case -> (tnet call, torch call, float64 reference[, bound]): both calls' results are checked
    against the reference (None: nothing to check, the bare launch), within the bound (OP_TOL if none)."""
    import tnet
    import tnet.functional as F
    from tnet import nn
    empty, tnet_empty = empty_kernels()
    gen = torch.Generator().manual_seed(0)
    r = lambda *shape: torch.randn(*shape, generator=gen).to(device)
    a, b = r(1024), r(1024)
    ta, tb = tnet.Tensor(a), tnet.Tensor(b)
    x, w = r(8, 16, 8, 8), r(16, 16, 3, 3)
    tx, tw = tnet.Tensor(x.contiguous(memory_format=torch.channels_last)), tnet.Tensor(w)
    bn, tbn = torch.nn.BatchNorm2d(16).to(device), nn.BatchNorm2d(16)
    rows = r(32, 64)
    ln, tln, trows = torch.nn.LayerNorm(64).to(device), nn.LayerNorm(64), tnet.Tensor(rows)

    def square_sum_backward(t):
        """(t * t).sum().backward() from a fresh gradient; returns it as a torch tensor."""
        t.grad = None
        (t * t).sum().backward()
        return t.grad.memory if isinstance(t, tnet.Tensor) else t.grad
    ga, tga = a.clone().requires_grad_(), tnet.Tensor(a.clone(), requires_grad=True)
    ad, xd, wd, rowsd = a.double(), x.double(), w.double(), rows.double()
    # clip_grad_norm_ over ResNet-18's 62 gradients (its filters, BatchNorm weights and biases, the head; a
    # sixteenth of its widths in the interpreter)
    widths = [c // (16 if tnet.INTERPRET else 1) for c in [64] * 5 + [128] * 5 + [256] * 5 + [512] * 5]
    shapes = [(c, c // 2 if i % 5 == 0 and c > 64 else c, 3, 3) for i, c in enumerate(widths)]
    shapes = [(widths[0], 3, 3, 3)] + shapes[1:] + [(c,) for c in widths for _ in range(2)] + [(10, widths[-1]), (10,)]
    grads = [r(*shape) for shape in shapes]
    params = [torch.empty_like(g) for g in grads]
    tparams = [tnet.Tensor(torch.empty_like(g)) for g in grads]
    for p, tp, g in zip(params, tparams, grads):
        p.grad, tp.grad = g.clone(), tnet.Tensor(g.clone())
    norm = torch.stack([g.double().norm() for g in grads]).norm()
    mean = xd.mean((0, 2, 3), keepdim=True)
    return {
        "bare Triton launch (1 program)": (lambda: empty[(1,)](a, 1024), None, None),
        "bare tnet launch (1 program)": (lambda: tnet_empty[(1,)](a, 1024), None, None),
        "a + b (1024 floats)": (lambda: (ta + tb).memory, lambda: a + b, ad + b.double()),
        "F.relu(a)": (lambda: F.relu(ta).memory, lambda: torch.relu(a), ad.clamp(min=0)),
        "(a * a).sum().backward()": (lambda: square_sum_backward(tga), lambda: square_sum_backward(ga), 2 * ad),
        "conv2d 8x16x8x8, 16 3x3 filters": (lambda: F.conv2d(tx, tw, padding=1).memory,
                                            lambda: torch.nn.functional.conv2d(x, w, padding=1),
                                            torch.nn.functional.conv2d(xd, wd, padding=1)),
        "BatchNorm2d 8x16x8x8, train": (lambda: tbn(tx).memory, lambda: bn(x),
                                        (xd - mean) / (xd.var((0, 2, 3), unbiased=False, keepdim=True) + 1e-5).sqrt()),
        "LayerNorm(64) 32x64": (lambda: tln(trows).memory, lambda: ln(rows),
                                (rowsd - rowsd.mean(1, keepdim=True)) / (rowsd.var(1, unbiased=False, keepdim=True)
                                                                         + 1e-5).sqrt()),
        # the norm before clipping: the first call's (the check's) is the gradients' own; later calls find it 1.
        # PyTorch's float32 sum over 2.4M squares lands near 3e-5: the bound is 1e-4
        f"clip_grad_norm_, {len(grads)} gradients": (lambda: nn.utils.clip_grad_norm_(tparams, 1.0).memory,
                                                     lambda: torch.nn.utils.clip_grad_norm_(params, 1.0), norm, 1e-4),
    }


def op_rows(timing, profile):
    """Each case's rows, PyTorch's then tnet's (with its ratio); profile: a list that gets each
    case's cProfile text."""
    import tnet
    rows = []
    with torch.no_grad():
        cases = op_cases(tnet.DEVICE)
    for case, (tnet_fn, torch_fn, ref, *bound) in cases.items():
        tol = bound[0] if bound else OP_TOL
        fns = {variant: fn for variant, fn in (("torch", torch_fn), ("tnet", tnet_fn)) if fn is not None}
        timed = check_then_time_together(
            {variant: ((lambda: (0.0, 0.0)) if ref is None else (lambda fn=fn: (rel_error(fn(), ref), tol)),
                       lambda fn=fn: host_ms(fn, 0, timing["iters"])) for variant, fn in fns.items()},
            timing["repeats"])
        for variant, fields in timed.items():
            row = {"kind": "op", "case": case, "variant": variant, **fields}
            row["vs_torch"] = ratio(row["ms"], timed.get("torch", {}).get("ms")) if variant == "tnet" else None
            print_row(row, COLUMNS)
            rows.append(row)
        if profile is not None:
            profile.append(profile_text(case, tnet_fn))
    return rows


def profile_text(case, fn, calls=None):
    """cProfile's top functions (by own time) over `calls` (default PROFILE_CALLS) calls of fn,
    the GPU's wait included (a synchronisation inside shows as its call's time)."""
    calls = calls or PROFILE_CALLS
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
    return f"### {case}: {calls} calls\n{out.getvalue()}"


def readme_net(lib):
    """The README example's network, written once for torch and tnet (lib: the module holding nn)."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.act = nn.GELU()

        def forward(self, x):
            y = self.act(self.bn1(self.conv1(x)))
            return self.act(x + self.bn2(self.conv2(y)))

    class Net(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.GELU())
            self.block = Block(16)
            self.fc = nn.Linear(16, classes)

        def forward(self, x):
            return self.fc(self.block(self.stem(x)).mean((2, 3)))
    return Net()


def readme_steps(batches):
    """variant -> make() -> (step(x, y) -> loss, parameters by name) for the README network, and
    the float64 reference record: AdamW (lr 1e-3, weight decay 0.01), label smoothing 0.1. No
    PyTorch graphed row: AdamW's step count would need capturable=True."""
    import tnet
    import tnet.functional as F
    tnet.manual_seed(0)
    state = numpy_state(readme_net(tnet))

    def torch_make(dtype=torch.float32, data=batches):
        net = readme_net(torch)
        net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        net = net.to(data[0][0].device, dtype)
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01, foreach=True)
        return torch_train_step(net, opt, *data[0], label_smoothing=0.1)

    def tnet_make(captured):
        model = readme_net(tnet)
        model.load_state_dict(state)
        opt = tnet.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

        def step(x, y):
            loss = F.cross_entropy(model(tnet.Tensor(x)), tnet.Tensor(y), label_smoothing=0.1)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss.memory
        return (tnet.graph.capture(step) if captured else step), {n: p.memory for n, p in model.named_parameters()}
    wide = [(x.double(), y) for x, y in batches]
    ref = record(*torch_make(torch.float64, data=wide), wide)
    bounds = zoo.bounds_of(ref, record(*torch_make(), batches))
    variants = {"torch eager": lambda: torch_make(),
                "tnet eager": lambda: tnet_make(False), "tnet capture": lambda: tnet_make(True)}
    return variants, ref, bounds


def resnet_steps(batches):
    """The same for ResNet-18 in bf16 (the zoo's steps), plus tnet's TrainStep."""
    import tnet
    from tnet.recipes import make_train_step
    name = STEP_MODEL
    _, state = zoo.tnet_state(name)
    wide = [(x.double(), y) for x, y in batches]
    ref = record(*zoo.torch_step(name, state, wide, torch.float64), wide, zoo.CHECK_STEPS)
    half = [(x.contiguous(memory_format=torch.channels_last), y) for x, y in batches]
    bounds = zoo.bounds_of(ref, record(*zoo.torch_step(name, state, half, autocast=zoo.DTYPE), half, zoo.CHECK_STEPS))

    def tnet_make(captured):
        model, _ = zoo.tnet_state(name)
        model.load_state_dict(state)
        step = make_train_step(model, tnet.optim.SGD(model.parameters(), **zoo.SGD), dtype=zoo.DTYPE)
        return (tnet.graph.capture(step) if captured else step), {n: p.memory for n, p in model.named_parameters()}
    variants = {"torch eager": lambda: zoo.torch_step(name, state, half, autocast=zoo.DTYPE),
                "torch graphed": lambda: zoo.torch_step(name, state, half, autocast=zoo.DTYPE, graphed=True),
                "tnet eager": lambda: tnet_make(False), "tnet capture": lambda: tnet_make(True),
                "tnet TrainStep": lambda: zoo.tnet_step(name, state, batches)}
    return variants, ref, bounds, half


def step_rows(case, variants, ref, bounds, batches, timing, device, torch_batches=None, profile=None):
    """Each variant checked (zoo.check_pieces), then those that pass timed in blocks taking turns
    (common.interleaved); tnet's rows with their ratio to PyTorch
    eager's (eager and capture) or graphed's (capture and TrainStep: vs_torch_graphed); profile: a
    list that gets the eager tnet step's cProfile text (PROFILE_STEPS steps on one batch)."""
    rows, built, checks = [], {}, {}
    for variant, make in variants.items():
        data = torch_batches if torch_batches and variant.startswith("torch") else batches

        def check(variant=variant, make=make, data=data):
            step, params = make()
            rec = record(step, params, data, zoo.CHECK_STEPS)
            err, bound, worst = zoo.check_pieces(rec, ref, bounds)
            built[variant] = step, bound, worst
            return err, bound
        checks[variant] = check, lambda variant=variant, data=data: block_time(
            built[variant][0], data, device, 0, timing["iters"], 1)
    timed = check_then_time_together(checks, timing["repeats"])
    ms = {variant: fields["ms"] for variant, fields in timed.items()}
    for variant, fields in timed.items():
        row = {"kind": "step", "case": case, "variant": variant, **fields}
        row.update(zip(("bound", "worst"), built.get(variant, (None, None, None))[1:]))
        if variant.startswith("tnet"):
            row["vs_torch"] = ratio(row["ms"], ms.get("torch eager"))
            row["vs_torch_graphed"] = ratio(row["ms"], ms.get("torch graphed"))
        print_row(row, COLUMNS)
        rows.append(row)
        if profile is not None and variant == "tnet eager" and row["status"] == "ok":
            profile.append(profile_text(f"{case}, {variant}", lambda: built[variant][0](*batches[0]), PROFILE_STEPS))
    return rows


def write_profile(out, profile):
    """OUT/eager_profile.txt: the profiles so far (--profile), rewritten as each part ends."""
    if profile is not None:
        with open(os.path.join(out, "eager_profile.txt"), "w") as f:
            f.write("\n".join(profile))


def add_arguments(parser):
    parser.add_argument("--profile", action="store_true",
                        help="also write OUT/eager_profile.txt: cProfile's top functions of each op's tnet calls and "
                             "of tnet's eager training steps")
    parser.add_argument("--jobs", type=int, default=zoo.JOBS,
                        help=f"processes that compile ResNet-18's kernels first, every tile config, into Triton's "
                             f"cache, its configs split among them (zoo.warm), so that the timed run compiles none; "
                             f"0: none (default: {zoo.JOBS})")
    parser.add_argument("--steps", choices=["all", "readme", "none"], default="all",
                        help="which training steps follow the per-op table: the README network's and ResNet-18's "
                             "(all, the default), the README network's alone, or none")


def run(args):
    """The op rows, then the steps' (README network at batch 8; ResNet-18 at BATCHES); JSON and a plot."""
    import tnet
    saved = torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.benchmark = True
    timing = zoo.QUICK_TIMING if args.quick else zoo.TIMING
    path = os.path.join(args.out, "eager.json")
    profile = [] if args.profile else None
    settings = dict(op_timing=QUICK_OP_TIMING if args.quick else OP_TIMING, step_timing=timing, batches=BATCHES,
                    model=STEP_MODEL)
    print_header(COLUMNS)
    try:
        # the ops in exact fp32 on both sides (OP_TOL); the steps in tnet's default, tf32
        tnet.set_precision("ieee")
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        rows = op_rows(settings["op_timing"], profile)
        tnet.set_precision("tf32")
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
        write_profile(args.out, profile)
        write_json(path, "eager", rows, complete=False, **settings)
        if args.steps != "none":
            small = [(x[:8, :, :16, :16].contiguous(), y[:8]) for x, y in random_batches(8, tnet.DEVICE, std=1)]
            rows += step_rows("README network, fp32, batch 8", *readme_steps(small), small, timing, tnet.DEVICE,
                              profile=profile)
            write_json(path, "eager", rows, complete=False, **settings)
            write_profile(args.out, profile)
            for batch in [] if args.steps == "readme" else [BATCHES[0]] if args.quick else BATCHES:
                if args.jobs > 0 and tnet.DEVICE.type == "cuda":
                    zoo.warm([STEP_MODEL], batch, args.jobs)
                batches = random_batches(batch, tnet.DEVICE, std=1)
                variants, ref, bounds, half = resnet_steps(batches)
                rows += step_rows(f"ResNet-18, bf16, batch {batch}", variants, ref, bounds, batches, timing,
                                  tnet.DEVICE, torch_batches=half, profile=profile)
                write_json(path, "eager", rows, complete=False, **settings)
                write_profile(args.out, profile)
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
    write_json(path, "eager", rows, **settings)
    tnet_rows = [r for r in rows if r["variant"].startswith("tnet") and r.get("vs_torch")]
    bars(os.path.join(args.out, "eager.png"), [f"{r['case']}\n{r['variant']}" for r in tnet_rows],
         {"tnet / PyTorch eager": [r["vs_torch"] for r in tnet_rows]},
         f"eager tnet over PyTorch eager (host time per op; time per step)\n{environment()['gpu']}",
         "tnet time / PyTorch time", line=1.0)
    return rows
