"""The zoo study: each model of kuangliu/pytorch-cifar's models/ (benchmarks/zoo_models.py, at full
size), one bf16 training step at batch 256, tnet against PyTorch, from the same weights on the
same batches.

tnet's step is train.py's way: tnet.recipes.make_train_step (the forward and the loss under
tnet.autocast(bfloat16), fp32 master weights) captured whole by tnet.graph.TrainStep. PyTorch's:
the same model in fp32 under torch.autocast(bfloat16), channels-last (NCHW where the model's
view(N, -1) cannot take it: LeNet), cuDNN's benchmark mode,
torch.optim.SGD (foreach), the whole step captured in a CUDA graph (steps.torch_graphed). Both:
SGD with Nesterov momentum 0.9, lr 0.01, weight decay 5e-4, cross-entropy, BatchNorm in training
mode; EfficientNet's dropout and drop connect off (random masks cannot be compared).

Each variant is checked before it is timed: its first CHECK_STEPS steps (the losses and every
parameter's change) against PyTorch in float64, each piece within max(CHECK_TOL, FACTOR x the
error of PyTorch's eager bf16 step on it). A piece that bf16 cannot pin down (a BatchNorm shift
before a convolution and another BatchNorm, a conv bias before a BatchNorm: zero gradients but
for rounding) is so bounded by PyTorch's own error; a wrong step is off on most pieces."""
import gc
import math
import os
import sys

import torch

from . import zoo_models
from .common import (bars, block_time, check_then_time, compile_in_processes, environment, fmt, names_list,
                     numpy_state, print_header, print_row, ratio, write_json)
from .steps import N_BATCHES, random_batches, record, torch_train_step

BATCH = 256
DTYPE = torch.bfloat16
SGD = dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
NO_DROPOUT = {"dropout_rate": 0.0, "drop_connect_rate": 0.0}  # EfficientNet's random masks off
MODELS = list(zoo_models.ZOO)
QUICK_MODELS = ["ResNet18", "MobileNetV2", "ShuffleNetV2", "EfficientNetB0"]
SIZE = "full"  # zoo_models.Spec's field: the models' sizes ("reduced" in tests/test_bench.py)
CHECK_STEPS = 2  # the second uses the momentum
# bf16 against float64 (steps.CHECK_TOL_BF16, from CIFAR-10 quick): a missing update or momentum is
# off by 0.3 to 1 on most pieces
CHECK_TOL = {"loss": 3e-2, "change": 0.2}
FACTOR = 10  # times PyTorch's eager bf16 step's error on a piece, where larger
TIMING = {"warmup": 5, "iters": 20, "repeats": 5}  # blocks of iters steps timed with CUDA events, median
QUICK_TIMING = {"warmup": 3, "iters": 10, "repeats": 3}
TNET, TORCH = "tnet graphed bf16", "torch graphed bf16"
# Compiling every tile config of every kernel a model runs takes minutes per model in one
# process: the warm-up's processes share the machine's cores (and Triton's cache on disk)
JOBS = 8

ZOO_COLUMNS = [
    ("model", "<16", lambda r: r["model"]),
    ("params", ">7", lambda r: fmt(r["params_m"], ".2f") + "M" if r["params_m"] is not None else "-"),
    ("variant", "<18", lambda r: r["variant"]),
    ("rel.err", ">8", lambda r: fmt(r["err"], ".1e")),
    ("bound", ">8", lambda r: fmt(r.get("bound"), ".1e")),
    ("ms/step", ">9", lambda r: fmt(r["ms"], ".3f") if r["status"] == "ok" else r["status"]),
    ("tnet/torch", ">10", lambda r: fmt(r.get("vs_torch_graphed"), ".2f")),
]


def add_arguments(parser):
    parser.add_argument("--models", type=names_list(MODELS), default=None,
                        help=f"comma-separated models (default: all; with --quick, {','.join(QUICK_MODELS)}): "
                             f"{', '.join(MODELS)}")
    parser.add_argument("--batch", type=int, default=BATCH, help=f"images per batch (default: {BATCH})")
    parser.add_argument("--jobs", type=int, default=JOBS,
                        help=f"processes that compile the models' kernels in parallel first, every tile config, "
                             f"into Triton's cache (TNET_AUTOTUNE=compile), so that the timed run compiles none; "
                             f"0: none (default: {JOBS})")


def models_of(args):
    return args.models or (QUICK_MODELS if args.quick else MODELS)


def build(name, library):
    """The zoo's model at SIZE, built with "torch" or "tnet", dropout off."""
    spec = zoo_models.ZOO[name]
    size = dict(getattr(spec, SIZE))
    size.update({k: v for k, v in NO_DROPOUT.items() if k in size})
    return spec.build(*zoo_models.lib(library), **size)


def tnet_state(name):
    """tnet's model (tnet.manual_seed(0)) and its initial state_dict: the weights every variant starts from."""
    import tnet
    tnet.manual_seed(0)
    model = build(name, "tnet")
    return model, numpy_state(model)


def torch_model(name, state, device, dtype=torch.float32, channels_last=False):
    net = build(name, "torch")
    net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    net = net.to(device, dtype)
    return net.to(memory_format=torch.channels_last) if channels_last else net


def takes_channels_last(name, state, x):
    """Whether PyTorch's model runs on channels-last activations: a view(N, -1) of one larger than
    1x1 (LeNet's) raises in PyTorch, and such a model runs NCHW."""
    try:
        with torch.no_grad():
            torch_model(name, state, x.device, channels_last=True)(x.contiguous(memory_format=torch.channels_last))
    except RuntimeError as e:
        if "view size is not compatible" not in str(e):
            raise
        return False
    return True


def torch_step(name, state, batches, dtype=torch.float32, autocast=None, graphed=False):
    """(step(x, y) -> loss, parameters by name): PyTorch's model holding state, on the batches'
    device, in dtype (float32 or float64), the forward and the loss under torch.autocast(autocast)
    if given, in the batches' layout (channels-last or NCHW); graphed: the whole step captured in a
    CUDA graph."""
    x0, y0 = batches[0]
    net = torch_model(name, state, x0.device, dtype,
                      channels_last=x0.is_contiguous(memory_format=torch.channels_last))
    return torch_train_step(net, torch.optim.SGD(net.parameters(), **SGD, foreach=True), x0, y0, graphed, autocast)


def tnet_step(name, state, batches):
    """(step(x, y) -> loss, parameters by name): tnet's model holding state, make_train_step under
    autocast bf16, captured by TrainStep (eager on the CPU)."""
    import tnet
    from tnet.graph import TrainStep
    from tnet.recipes import make_train_step
    model, _ = tnet_state(name)
    model.load_state_dict(state)
    opt = tnet.optim.SGD(model.parameters(), **SGD)
    step = TrainStep(make_train_step(model, opt, dtype=DTYPE), *batches[0], state=(model, opt))
    return step, {name: p.memory for name, p in model.named_parameters()}


def piece_error(out, ref):
    """||out - ref|| / ||ref|| in float64; 0 where both are zero (a parameter without gradient)."""
    diff, norm = (out.double() - ref).norm().item(), ref.norm().item()
    return diff / norm if norm else (0.0 if diff == 0 else math.inf)


def bounds_of(ref, rec):
    """Each piece's bound (steps.record's pieces: "loss", each parameter's change): max(CHECK_TOL,
    FACTOR x rec's error on it), rec PyTorch's eager bf16 steps."""
    return {name: max(CHECK_TOL["loss" if name == "loss" else "change"], FACTOR * piece_error(rec[name], r))
            for name, r in ref.items()}


def check_pieces(rec, ref, bounds):
    """(err, bound, name) of the piece furthest out of its bound (by err / bound): err <= bound
    exactly when every piece is within its own."""
    errs = {name: piece_error(rec[name], r) for name, r in ref.items()}
    name = max(errs, key=lambda k: math.inf if math.isnan(errs[k]) else errs[k] / bounds[k])
    return errs[name], bounds[name], name


def model_rows(name, batch, timing, device):
    """The model's two rows, PyTorch's then tnet's: each checked against float64 (bounded by
    PyTorch's eager bf16 error), then timed; tnet's with its ratio to PyTorch's time."""
    head = {"model": name, "batch": batch}
    try:
        model, state = tnet_state(name)
        failed = None
    except Exception as e:  # a model that does not port yet: its row says why, PyTorch's is timed from its own init
        failed = f"{type(e).__name__}: {e}"
        torch.manual_seed(0)
        model = build(name, "torch")
        state = numpy_state(model)
    head["params_m"] = sum(p.numel() for p in model.parameters()) / 1e6
    batches = random_batches(batch, device, std=1)
    wide = [(x.double(), y) for x, y in batches]
    ref = record(*torch_step(name, state, wide, torch.float64), wide, CHECK_STEPS)
    layout = torch.channels_last if takes_channels_last(name, state, batches[0][0]) else torch.contiguous_format
    head["torch_layout"] = "channels-last" if layout == torch.channels_last else "NCHW"
    half = [(x.contiguous(memory_format=layout), y) for x, y in batches]
    bounds = bounds_of(ref, record(*torch_step(name, state, half, autocast=DTYPE), half, CHECK_STEPS))
    variants = {TORCH: (half, lambda: torch_step(name, state, half, autocast=DTYPE, graphed=True)),
                TNET: (batches, lambda: tnet_step(name, state, batches))}
    rows, ms = [], {}
    for variant, (data, make) in variants.items():
        if variant == TNET and failed:
            rows.append({**head, "variant": variant, "status": "ERROR", "err": None, "ms": None, "error": failed,
                         "vs_torch_graphed": None})
            continue
        built = {}

        def check():
            built["step"], params = make()
            rec = record(built["step"], params, data, CHECK_STEPS)
            err, built["bound"], built["worst"] = check_pieces(rec, ref, bounds)
            return err, built["bound"]
        row = {**head, "variant": variant,
               **check_then_time(check, lambda: block_time(built["step"], data, device, **timing))}
        row.update(bound=built.get("bound"), worst=built.get("worst"))
        ms[variant] = row["ms"]
        if variant == TNET:
            row["vs_torch_graphed"] = ratio(row["ms"], ms[TORCH])
        rows.append(row)
    return rows


def warm_one(name, batch):
    """Run tnet's step of the model twice (under TNET_AUTOTUNE=compile, in its own process): every
    kernel it launches compiled in every tile config, into Triton's cache."""
    import tnet
    tnet.set_precision("tf32")
    _, state = tnet_state(name)
    batches = random_batches(batch, tnet.DEVICE, std=1)
    step, _ = tnet_step(name, state, batches)
    for x, y in batches[:2]:
        step(x, y)
    torch.cuda.synchronize()


def warm(models, batch, jobs):
    """warm_one for each model in `jobs` processes at a time, each model's configs split among
    jobs // len(models) of them where there are fewer models than jobs (TNET_AUTOTUNE=compile:I/N);
    returns {model: error text} of those that failed (their rows will say why again)."""
    shards = max(1, jobs // max(1, len(models)))
    return compile_in_processes([(name, "zoo", (name, batch), None if shards == 1 else (i, shards))
                                 for name in models for i in range(shards)], jobs, "compiling the models' kernels")


def settings(args):
    return dict(models=models_of(args), batch=args.batch, dtype="bfloat16", sgd=SGD, size=SIZE,
                n_batches=N_BATCHES, check_steps=CHECK_STEPS, check_tol=CHECK_TOL, factor=FACTOR,
                timing=QUICK_TIMING if args.quick else TIMING, no_dropout=NO_DROPOUT,
                tnet="make_train_step under tnet.autocast(bfloat16), fp32 master weights, captured by "
                     "tnet.graph.TrainStep; tf32 precision for fp32 products",
                pytorch="the same model in fp32 under torch.autocast(bfloat16), channels-last (NCHW where its "
                        "view(N, -1) cannot take it: row torch_layout), cuDNN benchmark "
                        "mode, torch.optim.SGD (foreach), the whole step CUDA-graphed",
                check="the first check_steps steps' losses and parameter changes against PyTorch float64, each "
                      "within max(check_tol, factor x the error of PyTorch's eager bf16 steps on it)")


def run(args):
    """Each model's two rows (model_rows), printed and saved as they come; then the JSON and a
    plot of tnet's time over PyTorch graphed's."""
    import tnet
    saved = torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.benchmark = True  # cuDNN tries its algorithms in the warm-up and keeps the fastest
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True  # tnet's default precision
    tnet.set_precision("tf32")
    timing = QUICK_TIMING if args.quick else TIMING
    if args.jobs > 0 and tnet.DEVICE.type == "cuda":
        warm(models_of(args), args.batch, args.jobs)
    path = os.path.join(args.out, "zoo.json")
    rows = []
    print_header(ZOO_COLUMNS)
    try:
        for name in models_of(args):
            for row in model_rows(name, args.batch, timing, tnet.DEVICE):
                print_row(row, ZOO_COLUMNS)
                rows.append(row)
            write_json(path, "zoo", rows, complete=False, **settings(args))
            if tnet.DEVICE.type == "cuda":  # the models' graphs and memory pools go before the next model's
                gc.collect()
                torch.cuda.empty_cache()
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
    for row in rows:
        if row["status"] != "ok":
            detail = row.get("error") or f"worst piece {row['worst']}: {row['err']:.3g} > {row['bound']:.3g}"
            print(f"{row['model']} {row['variant']}: {row['status']}, {detail}")
    write_json(path, "zoo", rows, **settings(args))
    names = list(dict.fromkeys(row["model"] for row in rows))
    ratios = {row["model"]: row.get("vs_torch_graphed") for row in rows if row["variant"] == TNET}
    bars(os.path.join(args.out, "zoo.png"), names, {"tnet / PyTorch graphed": [ratios.get(n) for n in names]},
         f"the zoo's bf16 training steps at batch {args.batch}: tnet / PyTorch CUDA-graphed\n{environment()['gpu']}",
         "tnet time / PyTorch time", line=1.0)
    return rows


if __name__ == "__main__":  # warm()'s processes: python -m benchmarks.zoo MODEL BATCH
    warm_one(sys.argv[1], int(sys.argv[2]))
