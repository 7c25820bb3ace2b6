"""The convs study: every convolution layer of airbench94, of CIFAR-10 quick and of ResNet-18 (at
batch 256, as the zoo trains it), and MobileNetV2's depthwise layers (CIFAR-10 sizes), forward, input
gradient (dgrad) and weight gradient (wgrad), tnet against cuDNN in the same precision. First, --jobs
processes compile tnet's kernels for every layer, each a share of every kernel's configs, into
Triton's cache, so that the timed run compiles none (`python -m benchmarks.convs` is such a process)."""
import collections
import math
import os
import sys

import torch
import torch.nn.functional as F

from .common import (BENCH, QUICK_BENCH, bars, check_then_time, compile_in_processes, environment, fmt, gpu_time,
                     graph_time, names_list, print_header, print_row, ratio, rel_error, write_json)
from .gemm import ROTATE_BYTES

DEVICE = "cuda"
BATCH = 1024  # images per batch where a layer names none (ResNet-18's: 256)
JOBS = 8  # processes that compile tnet's kernels before the timed run
PRECISIONS = ("tf32", "bf16", "fp16")
DTYPES = {"tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}  # what the tensors hold
TOL = {"tf32": 2e-3, "bf16": 2e-2, "fp16": 2e-2}  # bounds on ||out - ref|| / ||ref|| against float64
PASSES = ("forward", "dgrad", "wgrad")
IMPLS = ("tnet", "cudnn")
GATHERED = "gathered"  # --gathered: tnet's gathering kernels where its TMA kernels would run (their A/B)
MAX_SETS = 16  # input sets cycled through per timing: enough for ROTATE_BYTES at the smallest layer

Layer = collections.namedtuple("Layer", "layer net cin cout size kernel padding bias unused stride groups batch",
                               defaults=(1, 1, None))
LAYERS = [  # size: the input's height and width; unused: passes that training does not run
    # airbench94's six conv shapes (the anchors' cuDNN table); whiten's filters are frozen and its input is the data
    Layer("whiten", "airbench94", 3, 24, 32, 2, 0, True, ("dgrad", "wgrad")),
    Layer("g1c1", "airbench94", 24, 64, 31, 3, 1, False, ()),
    Layer("g1c2", "airbench94", 64, 64, 15, 3, 1, False, ()),
    Layer("g2c1", "airbench94", 64, 256, 15, 3, 1, False, ()),
    Layer("g2c2", "airbench94", 256, 256, 7, 3, 1, False, ()),  # also group 3's first conv
    Layer("g3c2", "airbench94", 256, 256, 3, 3, 1, False, ()),
    Layer("conv1", "cifar10_quick", 3, 32, 32, 5, 2, True, ("dgrad",)),  # its input is the data
    Layer("conv2", "cifar10_quick", 32, 32, 16, 5, 2, True, ()),
    Layer("conv3", "cifar10_quick", 32, 64, 8, 5, 2, True, ()),
    # kuangliu/pytorch-cifar's ResNet-18 (the zoo's), at the zoo's batch: the stem, each stage's 3x3 convs (the
    # first strided) and its strided 1x1 shortcut
    Layer("r18stem", "resnet18", 3, 64, 32, 3, 1, False, ("dgrad",), batch=256),
    Layer("r18s1", "resnet18", 64, 64, 32, 3, 1, False, (), batch=256),
    *[Layer(f"r18s{i}{part}", "resnet18", cin if part != "b" else cout, cout, size if part != "b" else size // 2,
            1 if part == "sc" else 3, 0 if part == "sc" else 1, False, (), 1 if part == "b" else 2, batch=256)
      for i, cin, cout, size in ((2, 64, 128, 32), (3, 128, 256, 16), (4, 256, 512, 8)) for part in ("a", "b", "sc")],
    # kuangliu/pytorch-cifar's MobileNetV2: each block's depthwise 3x3 (groups = channels), by stride and size
    *[Layer(f"dw{c}" + ("s2" if s == 2 else ""), "mobilenetv2", c, c, size, 3, 1, False, (), s, c)
      for c, size, s in ((32, 32, 1), (96, 32, 1), (144, 32, 1), (144, 32, 2), (192, 16, 1), (192, 16, 2),
                         (384, 8, 1), (576, 8, 1), (576, 8, 2), (960, 4, 1))],
]

CONVS_COLUMNS = [
    ("layer", "<6", lambda r: r["layer"]),
    ("shape", "<20", lambda r: r["shape"]),
    ("prec", "<4", lambda r: r["precision"]),
    ("pass", "<14", lambda r: r["pass"]),
    ("tnet ms", ">8", lambda r: r["tnet"]),
    ("cuDNN ms", ">8", lambda r: r["cudnn"]),
    ("ratio", ">5", lambda r: fmt(r["ratio"], ".2f")),
    ("tnet err", ">8", lambda r: fmt(r["err"], ".1e")),
]
GATHERED_COLUMN = ("gathered ms", ">11", lambda r: r[GATHERED])


def shape(layer):
    k, s = layer.kernel, layer.size
    text = f"{k}x{k} {layer.cin}->{layer.cout} at {s}x{s}"
    text += f" /{layer.stride}" if layer.stride > 1 else ""
    return text + (" dw" if layer.groups == layer.cin else f" g{layer.groups}" if layer.groups > 1 else "")


def add_arguments(parser):
    nets = list(dict.fromkeys(layer.net for layer in LAYERS))
    parser.add_argument("--batch", type=int, default=None,
                        help=f"images per batch (default: {BATCH}, ResNet-18's layers 256)")
    parser.add_argument("--jobs", type=int, default=JOBS,
                        help=f"processes that compile tnet's kernels for the layers first, each a share of every "
                             f"kernel's tile configs, so that the timed run compiles none; 0: none (default: {JOBS})")
    parser.add_argument("--precisions", type=names_list(PRECISIONS), default=list(PRECISIONS),
                        help=f"comma-separated precisions (default: {','.join(PRECISIONS)})")
    parser.add_argument("--layers", type=names_list([layer.layer for layer in LAYERS] + nets),
                        default=[layer.layer for layer in LAYERS],
                        help=f"comma-separated layers, or a net for all of its layers (default: all): "
                             f"{', '.join(f'{layer.layer} ({layer.net} {shape(layer)})' for layer in LAYERS)}")
    parser.add_argument("--gathered", action="store_true",
                        help="also time tnet's gathering kernels (kernels/conv.py) where its TMA kernels "
                             "(kernels/conv_tma.py) run, in a column of their own: the A/B of the two")
    parser.add_argument("--graphed", action="store_true",
                        help="time each pass replayed from a CUDA graph (the GPU's time alone, as in a captured "
                             "step) instead of call by call (which counts the host's launch cost where it exceeds "
                             "the GPU's)")


def input_sets(layer, batch, dtype):
    """(x, w, bias, dy) sets, random normal (never zeros), channels-last; w scaled by 1/sqrt(fan in)
    so that y and dx stay near 1 in fp16; the bias in fp32. Enough sets to pass ROTATE_BYTES (twice the
    L2), at most MAX_SETS."""
    size = (layer.size + 2 * layer.padding - layer.kernel) // layer.stride + 1
    cin = layer.cin // layer.groups  # the weight's input channels
    shapes = [(batch, layer.cin, layer.size, layer.size), (layer.cout, cin, layer.kernel, layer.kernel),
              (batch, layer.cout, size, size)]
    set_bytes = sum(math.prod(s) for s in shapes) * torch.finfo(dtype).bits // 8
    n = max(1, min(MAX_SETS, math.ceil(ROTATE_BYTES / set_bytes)))
    fan_in = cin * layer.kernel ** 2

    def randn(*s, scale=1.0):
        return (torch.randn(*s, device=DEVICE) * scale).to(dtype).contiguous(memory_format=torch.channels_last)
    return [(randn(*shapes[0]), randn(*shapes[1], scale=fan_in ** -0.5),
             torch.randn(layer.cout, device=DEVICE) if layer.bias else None, randn(*shapes[2])) for _ in range(n)]


def reference(layer, x, w, bias, dy):
    """The three passes in float64 from the same (rounded) inputs."""
    x, w, dy = (t.double().contiguous() for t in (x, w, dy))
    bias = bias.double() if bias is not None else None
    pad, stride = (layer.padding, layer.padding), (layer.stride, layer.stride)
    dx, dw, _ = torch.ops.aten.convolution_backward(dy, x, w, None, stride, pad, (1, 1), False, (0, 0), layer.groups,
                                                    (True, True, False))
    return {"forward": F.conv2d(x, w, bias, stride, pad, 1, layer.groups), "dgrad": dx, "wgrad": dw}


def tnet_passes(layer, precision, tma=True):
    """pass: fn(x, w, bias, dy) through tnet's convolution launchers (depthwise.py's for a
    depthwise layer, as F.conv2d picks them); tma=False: with conv_tma's kernels switched off."""
    from tnet.kernels import conv, conv_tma, depthwise
    kernels = depthwise if depthwise.is_depthwise(layer.cin, layer.groups) else conv
    args = (layer.stride, layer.stride), (layer.padding, layer.padding), 1, layer.groups

    def switched(fn):
        def call(*a):
            saved, conv_tma.ENABLED = conv_tma.ENABLED, conv_tma.ENABLED and tma
            try:
                return fn(*a)
            finally:
                conv_tma.ENABLED = saved
        return call
    return {"forward": switched(lambda x, w, b, dy: kernels.conv2d(x, w, *args, bias=b, precision=precision)),
            "dgrad": switched(lambda x, w, b, dy: kernels.conv2d_input(x.shape, w, dy, *args, precision=precision)),
            "wgrad": switched(lambda x, w, b, dy: kernels.conv2d_weight(x, w.shape, dy, *args, precision=precision))}


def cudnn_passes(layer):
    """pass: fn(x, w, bias, dy) through PyTorch (cuDNN on the GPU); each gradient alone, as
    torch.nn.grad.conv2d_input and conv2d_weight compute it."""
    stride, pad, groups = (layer.stride, layer.stride), (layer.padding, layer.padding), layer.groups

    def gradient(i):
        mask = tuple(j == i for j in range(3))
        return lambda x, w, b, dy: torch.ops.aten.convolution_backward(dy, x, w, None, stride, pad, (1, 1), False,
                                                                       (0, 0), groups, mask)[i]
    return {"forward": lambda x, w, b, dy: F.conv2d(x, w, b, stride, pad, 1, groups), "dgrad": gradient(0),
            "wgrad": gradient(1)}


def checked(fn, args, ref, tol):
    out = fn(*args)
    if out.shape != ref.shape:
        raise ValueError(f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
    return rel_error(out, ref), tol


def layer_batch(layer, batch):
    """The batch a layer runs at: the one given, else the layer's own, else BATCH."""
    return batch or layer.batch or BATCH


def measure(layer, precision, batch, bench, impls=IMPLS, timer=gpu_time):
    """Each pass, tnet then cuDNN (and tnet's gathering kernels, GATHERED in impls): checked
    against float64 on the first input set, then timed (timer: gpu_time, call by call, or
    graph_time) cycling through the sets. Returns the layer's row."""
    from tnet.kernels.autotune import chosen_configs
    batch = layer_batch(layer, batch)
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    sets = {"tnet": input_sets(layer, batch, DTYPES[precision])}
    # cuDNN takes a bias in the input's dtype: cast here, not in the timed call
    sets["cudnn"] = [(x, w, b if b is None else b.to(x.dtype), dy) for x, w, b, dy in sets["tnet"]]
    sets[GATHERED] = sets["tnet"]
    ref = reference(layer, *sets["tnet"][0])
    passes = {"tnet": tnet_passes(layer, precision), "cudnn": cudnn_passes(layer)}
    if GATHERED in impls:
        passes[GATHERED] = tnet_passes(layer, precision, tma=False)
    results = {}
    for p in PASSES:
        for impl in impls:
            fn, impl_sets = passes[impl][p], sets[impl]
            before = chosen_configs()
            results[p, impl] = check_then_time(lambda: checked(fn, impl_sets[0], ref[p], TOL[precision]),
                                               lambda: timer(fn, impl_sets, bench))
            if impl != "cudnn":  # the tile configs the autotuner chose for this pass (none: chosen before, or untuned)
                results[p, impl]["configs"] = [f"{name} {text}" for (name, key), text in chosen_configs().items()
                                               if (name, key) not in before]
    return layer_row(layer, precision, batch, len(sets["tnet"]), results, impls)


def layer_row(layer, precision, batch, n_sets, results, impls=IMPLS):
    """results: (pass, impl) -> check_then_time's fields. The JSON row: the layer, then per pass
    <pass>_<impl>_{status,err,ms[,error]} and <pass>_ratio; <impl>_ms sums the three passes (None
    unless all three were timed) and ratio = tnet_ms / cudnn_ms."""
    row = {**layer._asdict(), "shape": shape(layer), "precision": precision, "batch": batch, "input_sets": n_sets}
    for p in PASSES:
        for impl in impls:
            row.update({f"{p}_{impl}_{key}": value for key, value in results[p, impl].items()})
        row[f"{p}_ratio"] = ratio(row[f"{p}_tnet_ms"], row[f"{p}_cudnn_ms"])
    for impl in impls:
        times = [row[f"{p}_{impl}_ms"] for p in PASSES]
        row[f"{impl}_ms"] = None if None in times else sum(times)
    row["ratio"] = ratio(row["tnet_ms"], row["cudnn_ms"])
    return row


def table_lines(row):
    """The table's lines for one row: a line per pass, then the total (GATHERED's column where the
    row has it)."""
    def cell(p, impl):
        status, ms = row.get(f"{p}_{impl}_status"), row.get(f"{p}_{impl}_ms")
        return fmt(ms, ".3f") if status == "ok" else status
    head = {key: row[key] for key in ("layer", "shape", "precision")}
    lines = [{**head, "pass": p + (" (unused)" if p in row["unused"] else ""), "tnet": cell(p, "tnet"),
              "cudnn": cell(p, "cudnn"), GATHERED: cell(p, GATHERED), "ratio": row[f"{p}_ratio"],
              "err": row[f"{p}_tnet_err"]} for p in PASSES]
    return lines + [{**head, "pass": "total", "tnet": fmt(row["tnet_ms"], ".3f"), "cudnn": fmt(row["cudnn_ms"], ".3f"),
                     GATHERED: fmt(row.get(f"{GATHERED}_ms"), ".3f"), "ratio": row["ratio"], "err": None}]


def run(args):
    """Each selected layer at each selected precision: the three passes checked, then timed,
    tnet and cuDNN side by side (cuDNN through torch, channels-last, cudnn.benchmark on, tf32
    allowed for the tf32 rows only)."""
    layers = [layer for layer in LAYERS if layer.layer in args.layers or layer.net in args.layers]
    precisions = [p for p in PRECISIONS if p in args.precisions]
    bench = QUICK_BENCH if args.quick else BENCH
    path = os.path.join(args.out, "convs.json")
    settings = dict(batch=args.batch, precisions=precisions, tolerance=TOL, rotate_bytes=ROTATE_BYTES, do_bench=bench,
                    graphed=args.graphed)
    impls = (*IMPLS, GATHERED) if args.gathered else IMPLS
    columns = CONVS_COLUMNS + [GATHERED_COLUMN] if args.gathered else CONVS_COLUMNS
    if args.jobs > 0 and DEVICE == "cuda":
        warm(layers, precisions, args.batch, args.jobs, args.gathered)
    saved = torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.benchmark = True  # the check's call picks cuDNN's fastest algorithm
    torch.manual_seed(0)
    rows = []
    print_header(columns)
    try:
        for layer in layers:
            for precision in precisions:
                timer = graph_time if args.graphed else gpu_time
                rows.append(measure(layer, precision, args.batch, bench, impls, timer))
                for line in table_lines(rows[-1]):
                    print_row(line, columns)
                if DEVICE == "cuda":
                    torch.cuda.empty_cache()
            write_json(path, "convs", rows, complete=False, **settings)
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = saved
    for row in rows:
        for p in PASSES:
            for impl in impls:
                if f"{p}_{impl}_error" in row:
                    print(f"{row['layer']} {row['precision']} {p} {impl}: {row[f'{p}_{impl}_error']}")
    if any(row["unused"] for row in rows):
        print("(unused): a pass that training does not run (the input is the data, or the weights are frozen); "
              "the totals count it")

    write_json(path, "convs", rows, **settings)
    shapes = {row["layer"]: row["shape"] for row in rows}
    ratios = {(row["layer"], row["precision"]): row["ratio"] for row in rows}
    bars(os.path.join(args.out, "convs.png"), [f"{name}\n{s}" for name, s in shapes.items()],
         {p: [ratios.get((name, p)) for name in shapes] for p in precisions},
         f"tnet / cuDNN, forward + dgrad + wgrad, batch {args.batch or f'{BATCH} (ResNet-18: 256)'}\n"
         f"{environment()['gpu']}",
         "tnet time / cuDNN time", line=1.0)
    return rows


def warm(layers, precisions, batch, jobs, gathered=False):
    """compile_in_processes: `jobs` processes (warm_one), each compiling its share of every
    kernel's configs for all the layers and precisions (gathered: with conv_tma's kernels off too)."""
    names, precs = ",".join(layer.layer for layer in layers), ",".join(precisions)
    argv = (names, precs, batch or 0) + ((GATHERED,) if gathered else ())
    return compile_in_processes([(f"share {i}", "convs", argv, (i, jobs)) for i in range(jobs)],
                                jobs, "compiling tnet's convolution kernels")


def warm_one(names, precisions, batch, gathered=False):
    """Run tnet's three passes once for each layer named and precision (under TNET_AUTOTUNE=compile:I/N,
    in its own process; gathered: also with conv_tma's kernels off): their kernels compiled into Triton's cache."""
    for layer in [layer for layer in LAYERS if layer.layer in names]:
        for precision in precisions:
            x, w, b, dy = input_sets(layer, layer_batch(layer, batch), DTYPES[precision])[0]
            for tma in (True, False) if gathered else (True,):
                for fn in tnet_passes(layer, precision, tma).values():
                    fn(x, w, b, dy)
    if DEVICE == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":  # warm()'s processes: python -m benchmarks.convs LAYERS PRECISIONS BATCH [gathered]
    warm_one(sys.argv[1].split(","), sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4:] == [GATHERED])
