"""The train study's airbench94 rows: the CIFAR-10 speed run's whole training step at batch 1024,
tnet against the same net in PyTorch, from the same weights on the same batches.

tnet's step is train.py's: airbench94 and the airbench recipe's Training (tnet.recipes: its SGD
with Nesterov momentum in three groups, its lookahead, the loss summed with label smoothing under
tnet.autocast(float16)), captured whole by tnet.graph.TrainStep. PyTorch's is airbench's own: the
net in float16 with its BatchNorms in float32, channels-last, cuDNN's benchmark mode,
torch.optim.SGD with the same groups; eager, captured whole in a CUDA graph, with the forward and
the loss under torch.compile, and compiled then captured. Every variant is checked against
PyTorch in float64 before it is timed.

Not in any variant's step: the lr schedule (every variant keeps the schedule's first lr; a
captured PyTorch SGD cannot change its lr) and the batch loader. In tnet's only: the lookahead
(its launches run at every step and change the weights on every 5th; airbench runs its lookahead
on the host between steps)."""
import dataclasses
import functools
import time
from collections import OrderedDict

import numpy as np
import torch

from .common import numpy_state, ratio
from .steps import N_BATCHES, check_then_time_steps, random_batches, record, torch_graphed

NET = ("airbench94 b1024", (64, 256, 256), 1024)  # (label, widths, batch): airbench94's net and batch
SEED = 0  # airbench94(seed): the weights every variant starts from
TRAIN_IMAGES = 50000  # CIFAR-10's training set: train.py's steps per epoch and run length, which the lookahead uses
CHECK_STEPS = 3  # compared with float64; lookahead acts on every 5th step only, so the reference needs none
# float16 against float64 (see steps.CHECK_TOL_BF16). Emulated on the CPU at batch 1024 over 3 steps, the loss
# was 2e-4 off (PyTorch's float16 net) and 1e-5 (float16 autocast over float32 weights, tnet's way), the worst
# change 0.096 and 0.091 off, every conv weight alike (0.12 after one step: float16's gradients, not a growth
# over the steps; float32: 3e-3 after one step, 0.03 after three). Without the Nesterov term the changes are
# 0.31 to 0.34 off, with the BatchNorm shifts at the weights' lr 0.98.
CHECK_TOL_FP16 = {"loss": 1e-2, "change": 0.2}
# blocks of iters steps timed with CUDA events, median; iters a multiple of the lookahead's 5 (each block
# holds as many of its updates); warmup steps after the check's
TIMING = {"warmup": 5, "iters": 50, "repeats": 5}
QUICK_TIMING = {"warmup": 5, "iters": 25, "repeats": 3}
COMPILE_MODES = ("max-autotune-no-cudagraphs", "default", "max-autotune", "reduce-overhead")  # torch.compile's
COMPILE_MODE, QUICK_COMPILE_MODE = "max-autotune-no-cudagraphs", "default"
GRAPHING_MODES = ("max-autotune", "reduce-overhead")  # capture CUDA graphs themselves: no "compiled graphed" row

TORCH_VARIANTS = {  # name: (the whole step captured in a CUDA graph?, forward and loss under torch.compile?)
    "torch eager fp16": (False, False),
    "torch graphed fp16": (True, False),
    "torch compiled fp16": (False, True),
    "torch compiled graphed fp16": (True, True),
}
TNET_VARIANT = "tnet graphed fp16"
RATIOS = {"vs_torch_eager": "torch eager fp16", "vs_torch_graphed": "torch graphed fp16",  # row field: variant
          "vs_torch_same": "torch graphed fp16", "vs_torch_compiled": "torch compiled fp16",
          "vs_torch_compiled_graphed": "torch compiled graphed fp16"}


class Scale(torch.nn.Module):
    """airbench94's head scale: times 1/9."""

    def forward(self, x):
        return x * (1 / 9)


def torch_airbench94(widths=(64, 256, 256)):
    """tnet.models.airbench94 in PyTorch (float32, default init: load a tnet state_dict into it),
    under tnet's names: whiten (2x2 conv 3 -> 24, bias, its weight frozen), GELU, three conv groups
    (conv 3x3, max pool 2, BatchNorm, GELU, conv 3x3, BatchNorm, GELU; no biases; BatchNorm eps
    1e-12, momentum 0.4, weight frozen), max pool 3, flatten, head (no bias), times 1/9."""
    nn = torch.nn

    def norm(c):
        bn = nn.BatchNorm2d(c, eps=1e-12, momentum=0.4)
        bn.weight.requires_grad = False
        return bn

    def group(cin, cout):
        return nn.Sequential(OrderedDict([
            ("conv1", nn.Conv2d(cin, cout, 3, padding=1, bias=False)), ("pool", nn.MaxPool2d(2)),
            ("norm1", norm(cout)), ("act1", nn.GELU()),
            ("conv2", nn.Conv2d(cout, cout, 3, padding=1, bias=False)), ("norm2", norm(cout)), ("act2", nn.GELU())]))
    w1, w2, w3 = widths
    net = nn.Sequential(OrderedDict([
        ("whiten", nn.Conv2d(3, 24, 2, padding=0)), ("act", nn.GELU()),
        ("block1", group(24, w1)), ("block2", group(w1, w2)), ("block3", group(w2, w3)),
        ("pool", nn.MaxPool2d(3)), ("flatten", nn.Flatten()), ("head", nn.Linear(w3, 10, bias=False)),
        ("scale", Scale())]))
    net.whiten.weight.requires_grad = False
    return net


def recipe(batch):
    """The airbench recipe (train.py's for --model airbench94) at this batch size."""
    from tnet.recipes import RECIPES
    return dataclasses.replace(RECIPES["airbench"], batch_size=batch)


def initial_state(widths, images):
    """tnet's airbench94(SEED) with its whitening conv set from images (as train.py sets it from
    training images): the state_dict every variant starts from."""
    from tnet.models import airbench94, init_whitening
    model = airbench94(SEED, widths)
    init_whitening(model, images)
    return numpy_state(model)


def tnet_training(state, widths, recipe):
    """tnet's airbench94 holding state and the recipe's Training for it (tnet.recipes: optimizer,
    schedule, lookahead; the schedule stays at its first step), for a run as long as train.py
    counts it (the lookahead's clock)."""
    from tnet.models import airbench94
    from tnet.recipes import Training, run_steps
    model = airbench94(SEED, widths)
    model.load_state_dict(state)
    steps_per_epoch = TRAIN_IMAGES // recipe.batch_size  # the last partial batch dropped
    return model, Training(recipe, model, steps_per_epoch, run_steps(recipe.epochs, steps_per_epoch))


def sgd_groups(state, widths, recipe):
    """tnet's optimizer's parameter groups as torch.optim.SGD's, the parameters by name."""
    model, training = tnet_training(state, widths, recipe)
    names = {id(p): name for name, p in model.named_parameters()}
    return [{"params": [names[id(p)] for p in g["params"]],
             **{k: g[k] for k in ("lr", "momentum", "dampening", "weight_decay", "nesterov")}}
            for g in training.opt.param_groups]


def tnet_step(state, widths, batches, recipe):
    """(step(x, y) -> loss, trainable parameters by name): the recipe's first step (the whitening
    bias trained) captured whole by its Training, as train.py's run captures it."""
    model, training = tnet_training(state, widths, recipe)
    training.capture(*batches[0])
    return training.step_at(0), {name: p.memory for name, p in model.named_parameters() if p.requires_grad}


def torch_batches(batches, dtype):
    """The batches as a PyTorch variant reads them: float16 channels-last images (airbench's
    loader keeps them so), or float64 for the reference."""
    if dtype == torch.float16:
        return [(x.half().contiguous(memory_format=torch.channels_last), y) for x, y in batches]
    return [(x.to(dtype), y) for x, y in batches]


def torch_step(state, widths, batches, groups, recipe, dtype=torch.float16, graphed=False, compile_mode=None,
               compile_s=None):
    """(step(x, y) -> loss, trainable parameters by name): airbench94 in PyTorch holding state,
    on the batches' device (from torch_batches), with torch.optim.SGD over groups (sgd_groups) and
    the recipe's loss.
    float16: airbench's way, the net in float16 but its BatchNorms in float32, channels-last;
    float64: the reference. compile_mode: the forward and the loss under torch.compile; the
    seconds of the first step (the compilation) are appended to compile_s. graphed: the whole
    step captured in a CUDA graph after a warm-up on a side stream (steps.torch_graphed)."""
    x0, y0 = batches[0]
    net = torch_airbench94(widths)
    net.load_state_dict({name: torch.from_numpy(np.asarray(value)) for name, value in state.items()})
    net = net.to(x0.device, dtype)
    if dtype == torch.float16:
        net = net.to(memory_format=torch.channels_last)
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.float()
    params = dict(net.named_parameters())
    opt = torch.optim.SGD([{**g, "params": [params[name] for name in g["params"]]} for g in groups])
    smoothing, reduction = recipe.label_smoothing, recipe.reduction

    def loss_of(x, y):
        return torch.nn.functional.cross_entropy(net(x), y, label_smoothing=smoothing, reduction=reduction)
    if compile_mode is not None:
        loss_of = torch.compile(loss_of, mode=compile_mode)

    def step(x, y):
        loss = loss_of(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()
    if compile_s is not None:
        step = clock_first_call(step, compile_s, x0.device)
    trained = {name: p for name, p in params.items() if p.requires_grad}
    return (torch_graphed(step, net, opt, x0, y0) if graphed else step), trained


def clock_first_call(fn, seconds, device):
    """fn, appending to `seconds` how long its first call takes, up to the end of its GPU work."""
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else lambda: None

    def call(*args):
        if seconds:
            return fn(*args)
        sync()
        start = time.perf_counter()
        out = fn(*args)
        sync()
        seconds.append(time.perf_counter() - start)
        return out
    return call


def compile_mode(args):
    """--compile-mode, or the default for the run (--quick: torch.compile's default, quicker to compile)."""
    return args.compile_mode or (QUICK_COMPILE_MODE if args.quick else COMPILE_MODE)


def settings(args):
    """What the airbench94 rows were measured with, for the study's JSON."""
    label, widths, batch = NET
    return dict(net=label, widths=widths, batch=batch, seed=SEED, n_batches=N_BATCHES, check_steps=CHECK_STEPS,
                check_tol=CHECK_TOL_FP16, timing=QUICK_TIMING if args.quick else TIMING,
                compile_mode=compile_mode(args),
                tnet="train.py's airbench recipe (tnet.recipes: its SGD groups, lookahead, summed loss with label "
                     "smoothing, fp16 autocast, no loss scale) captured by tnet.graph.TrainStep",
                pytorch="float16 net, BatchNorm in float32, channels-last, cuDNN benchmark mode, torch.optim.SGD "
                        "with tnet's groups; torch.compile over the forward and the loss, the optimizer eager",
                not_timed="the lr schedule (every variant keeps its first lr) and the loader; the lookahead is in "
                          "tnet's step only",
                batches="random normal images (std 1) and labels; float32 NCHW for tnet, float16 channels-last for "
                        "PyTorch (the same values rounded); the whitening conv set from all of them")


def rows(args):
    """The airbench94 rows, one per variant, as each is measured: PyTorch's, then tnet's (with
    its ratio to each PyTorch variant: ms / theirs, above 1 slower). A variant whose first
    CHECK_STEPS steps are off float64 PyTorch's is WRONG and not timed."""
    import tnet
    label, widths, batch = NET
    timing = QUICK_TIMING if args.quick else TIMING
    mode = compile_mode(args)
    airbench_recipe = recipe(batch)
    batches = random_batches(batch, tnet.DEVICE, std=1)
    state = initial_state(widths, torch.cat([x for x, _ in batches]))
    groups = sgd_groups(state, widths, airbench_recipe)
    ref_batches = torch_batches(batches, torch.float64)
    ref = record(*torch_step(state, widths, ref_batches, groups, airbench_recipe, torch.float64), ref_batches,
                 CHECK_STEPS)
    half = torch_batches(batches, torch.float16)
    variants = {}  # name: (its batches, make() -> (step, parameters), the compile's seconds or None)
    for name, (graphed, compiled) in TORCH_VARIANTS.items():
        if graphed and compiled and mode in GRAPHING_MODES:
            continue
        seconds = [] if compiled else None
        variants[name] = (half, functools.partial(torch_step, state, widths, half, groups, airbench_recipe,
                                                  torch.float16, graphed, mode if compiled else None, seconds), seconds)
    variants[TNET_VARIANT] = (batches, functools.partial(tnet_step, state, widths, batches, airbench_recipe), None)
    ms = {}
    for name, (data, make, seconds) in variants.items():
        row = {"net": label, "widths": list(widths), "batch": batch, "variant": name, "precision": "fp16"}
        row.update(check_then_time_steps(make, data, ref, data[0][0].device, timing, CHECK_TOL_FP16, CHECK_STEPS))
        ms[name] = row["ms"]
        row.update(s_per_100=None if row["ms"] is None else row["ms"] * 100 / 1e3,
                   **{field: ratio(row["ms"], ms.get(other)) for field, other in RATIOS.items()})
        if seconds is not None:
            row.update(compile_mode=mode, compile_s=seconds[0] if seconds else None)
        yield row
