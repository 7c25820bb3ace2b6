"""Train Caffe's CIFAR-10 quick network, or the speed run's airbench94, with tnet.

    python train.py --epochs 10            # Caffe's recipe: 5,000 iterations at batch 100
    python train.py --recipe fast          # the same network, a better recipe
    python train.py --precision bf16       # 16-bit activations, fp32 master weights
    python train.py --model airbench94     # airbench94 and its recipe: 9.9 epochs at batch 1024
    python train.py --model airbench94 --runs 5  # seeds 0-4, every run, their mean and spread

Caffe's recipe (cifar10_quick_solver.prototxt): SGD, lr 0.001, momentum 0.9, weight decay
0.004, batch 100, the lr divided by ten for the last fifth of the iterations; inputs are
raw pixels minus the training set's mean image. The fast recipe adds random crops and
flips, label smoothing, a one-cycle learning rate and flip averaging at test time.

airbench's recipe (airbench94's): inputs normalised per channel; random translates by up to
2 pixels (reflect padding) and alternating flips (a coin per image in the first epoch, then
the mirror of the previous epoch's view); the last partial batch dropped; cross-entropy with
label smoothing 0.2 summed over the batch; SGD with Nesterov momentum 0.85, where --lr and
--weight-decay are airbench's: lr = 11.5 / s and decay wd = 0.0153 * batch / s with
s = 1024 * (1 + 1 / (1 - momentum)), weight_decay = wd / lr per group as PyTorch's SGD (the
BatchNorm shifts at 64 lr, the whitening bias trained for 3 epochs only); the lr factor linear
from 0.2 to 1 over the first 23% of the steps, then to 0.07; lookahead every 5 steps; 9.9
epochs (ceil(9.9 x batches per epoch) steps); fp16 without a loss scale (the summed loss
scales the gradients by the batch size, as airbench trains); the whitening conv set from the
first 5,000 training images (its time counts as training); the test images mirrored and
translated (test-time augmentation level 2), evaluated after the last epoch only.
Options given on the command line override the recipe's.
"""
import argparse
import itertools
import json
import contextlib
import math
import os
import signal
import sys
import tempfile
import time

import numpy as np
import torch
from tqdm import tqdm

import tnet


def tnet_problem(module):
    """Why `module` (what `import tnet` found) is not tnet, or None. A folder named tnet
    without an __init__.py (a checkout's folder beside the script, say) imports as a namespace
    package: no __file__, none of tnet's names."""
    if getattr(module, "__file__", None) is not None and hasattr(module, "manual_seed"):
        return None
    where = " ".join(getattr(module, "__path__", None) or [str(getattr(module, "__file__", None))])
    return (f"error: `import tnet` found {where}, a folder without tnet's code (Python imported it as a "
            f"namespace package); run from a folder without a `tnet` folder (or rename it), or put the "
            f"checkout first: PYTHONPATH=CHECKOUT, or pip install CHECKOUT (an editable install's finder "
            f"loses to the folder)")


if tnet_problem(tnet):
    sys.exit(tnet_problem(tnet))

from tnet import amp, data, models, optim, serialize  # noqa: E402
from tnet.graph import EvalStep, TrainStep  # noqa: E402
from tnet.kernels.softmax import take_label_error  # noqa: E402

MODELS = {"cifar10_quick": "caffe", "airbench94": "airbench"}  # each model's default recipe
RECIPES = {
    "caffe": dict(epochs=10, batch_size=100, lr=0.001, momentum=0.9, weight_decay=0.004, schedule="caffe",
                  augment=False, label_smoothing=0.0, tta=0, precision="tf32", grad_scaler=True, eval_every=1),
    "fast": dict(epochs=40, batch_size=125, lr=0.01, momentum=0.9, weight_decay=0.001, schedule="one-cycle",
                 augment=True, label_smoothing=0.1, tta=1, precision="tf32", grad_scaler=True, eval_every=1),
    "airbench": dict(epochs=9.9, batch_size=1024, lr=11.5, momentum=0.85, weight_decay=0.0153, schedule="airbench",
                     augment=True, label_smoothing=0.2, tta=2, precision="fp16", grad_scaler=False, eval_every=0),
}
# The airbench recipe's parts that no option changes (airbench94's values)
AIRBENCH = dict(loader=dict(pad=2, padding_mode="reflect", flip="alternate", drop_last=True), reduction="sum",
                bias_lr_scale=64, whiten_bias_epochs=3, lookahead_every=5, whitening_images=5000)
SCHEDULES = {"caffe": optim.caffe_quick, "one-cycle": optim.one_cycle, "airbench": optim.warmup_decay}
# --precision: (tnet.set_precision's GEMM precision for fp32 operands, the step's autocast dtype, help)
PRECISIONS = {
    "ieee": ("ieee", None, "fp32 tensors, exact fp32 products"),
    "tf32": ("tf32", None, "fp32 tensors, products in tf32 on the tensor cores, as cuDNN's"),
    "bf16": ("tf32", torch.bfloat16, "under tnet.autocast(bfloat16), 16-bit activations and GEMM operands, with fp32 "
                                     "sums, master weights, BatchNorm statistics and loss"),
    "fp16": ("tf32", torch.float16, "the same in float16, with a dynamic loss scale (tnet.amp.GradScaler) "
                                     "unless --no-grad-scaler"),
}
# What a checkpoint's run was made with: --resume refuses other values for these. The others
# may change: --epochs extends a run, --precision, --grad-scaler, --tta, --eval-every and
# --eval-batch-size change how it computes or evaluates, not what it trains on.
RUN_SETTINGS = ("recipe", "batch_size", "lr", "momentum", "weight_decay", "schedule", "augment", "label_smoothing",
                "val", "seed", "limit", "data", "model")
CHECKPOINT_KEYS = {"settings", "model", "optimizer", "loader", "schedule", "epoch", "batch", "log", "train_time",
                   "eval_time"}  # and "scaler" and "lookahead" where the run has them
CPU_TRYOUT = "python train.py --data sample --limit 40 --batch-size 20 --epochs 1 --eval-batch-size 40"
CPU_SECONDS_PER_IMAGE = 0.8  # a training step through Triton's interpreter, per image of the batch (2 cores)
TIMED_STEPS = (1, 3)  # the CPU's estimate of a run times these steps (the first one warms caches up)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The docstring as written, and every option's default after its help (the recipes'
    options list each recipe's value instead)."""

    def _get_help_string(self, action):
        if action.default in (None, argparse.SUPPRESS) or not action.option_strings or "default" in action.help:
            return action.help
        return action.help + " (default: %(default)s)"


def number(kind, low, what):
    """An argparse type: a finite `kind` at least `low`, or a one-line error saying so."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not (math.isfinite(value) and value >= low):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value
    return parse


def recipe_values(name):
    return ", ".join(f"{recipe}: {values[name]}" for recipe, values in RECIPES.items())


def build_parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=_Formatter)
    p.add_argument("--model", choices=MODELS, default="cifar10_quick",
                   help="cifar10_quick: Caffe's CIFAR-10 quick network; airbench94: the CIFAR-10 speed run's network")
    p.add_argument("--recipe", choices=RECIPES,
                   help="caffe: Caffe's exact recipe; fast: the best found for cifar10_quick; airbench: airbench94's "
                        "(default: " + ", ".join(f"{r} for {m}" for m, r in MODELS.items()) + ")")
    r = lambda name, text: f"{text} (default: the recipe's; {recipe_values(name)})"
    p.add_argument("--epochs", type=number(float, 1e-3, "a number of epochs of at least 0.001"),
                   help=r("epochs", "passes over the training set; a fraction runs ceil(epochs x batches per epoch) "
                                    "steps, airbench's rule"))
    p.add_argument("--data", default="./data",
                   help="folder holding cifar-10-batches-bin or -py (downloaded there if absent), "
                        "or 'sample' for the 500 + 100-image sample shipped with tnet")
    p.add_argument("--batch-size", type=int, help=r("batch_size", "images per step"))
    p.add_argument("--eval-batch-size", type=int, default=1000,
                   help="images per evaluation pass (it changes speed only, not the result)")
    p.add_argument("--lr", type=float, help=r("lr", "base learning rate (airbench: in airbench's units, see above)"))
    p.add_argument("--momentum", type=float, help=r("momentum", "SGD momentum"))
    p.add_argument("--weight-decay", type=float,
                   help=r("weight_decay", "L2 weight decay (airbench: in airbench's units, see above)"))
    p.add_argument("--schedule", choices=SCHEDULES,
                   help=r("schedule", "learning-rate schedule: caffe, a tenth for the last fifth; one-cycle, "
                                      "linear warm-up then linear decay; airbench, 0.2 to 1 over 23%% of the "
                                      "steps, then to 0.07"))
    p.add_argument("--augment", action=argparse.BooleanOptionalAction,
                   help=r("augment", "random crop (pad 4; airbench: 2, reflected) and horizontal flip (airbench: "
                                     "alternating)"))
    p.add_argument("--label-smoothing", type=float, help=r("label_smoothing", "share of the target spread over all classes"))
    p.add_argument("--tta", type=int, choices=(0, 1, 2),
                   help=r("tta", "test-time augmentation: 0 none; 1 average the logits of each test image and its "
                                 "mirror; 2 also of the mirrored pair translated by a pixel up-left and down-right, "
                                 "at half the weight"))
    p.add_argument("--eval-every", type=int,
                   help=r("eval_every", "evaluate every N epochs and after the last (0: after the last only)"))
    p.add_argument("--val", type=int, default=0,
                   help="hold out the last N training images and evaluate on them instead of the test set")
    p.add_argument("--precision", choices=PRECISIONS,
                   help=r("precision", "; ".join(f"{name}: {text}" for name, (_, _, text) in PRECISIONS.items())))
    p.add_argument("--grad-scaler", action=argparse.BooleanOptionalAction,
                   help=r("grad_scaler", "with --precision fp16, a dynamic loss scale"))
    p.add_argument("--seed", type=number(int, 0, "a seed from 0 up"), default=0, help="seed for the weights and the shuffling")
    p.add_argument("--limit", type=int, default=None, help="use only the first N training and N test images (default: all)")
    p.add_argument("--checkpoint",
                   help="checkpoint path, written atomically every epoch (and on Ctrl-C); the JSON log goes beside it "
                        "(default: runs/cifar10_quick.ckpt, runs/MODEL.ckpt for another --model)")
    p.add_argument("--resume", action="store_true", help="continue the run saved in --checkpoint, with the same settings")
    p.add_argument("--overwrite", action="store_true",
                   help="start a new run over an existing --checkpoint (without it, a new run refuses to)")
    p.add_argument("--runs", type=int, default=1,
                   help="train this many runs, seeds --seed, --seed + 1, ..., each with its own checkpoint "
                        "(PATH-seedS.ckpt), then print every run's accuracy and time, the mean and the spread")
    return p


def parse_args(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    args.recipe = args.recipe or MODELS[args.model]
    for name, value in RECIPES[args.recipe].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("batch_size", "eval_batch_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if not (math.isfinite(args.epochs) and args.epochs > 0):
        p.error(f"--epochs must be a number above 0, got {args.epochs}")
    if args.eval_every < 0:
        p.error("--eval-every must be 0 or more")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    if args.runs > 1 and args.resume:
        p.error("--resume continues one run: give it without --runs")
    if args.limit is not None and args.limit < 1:
        p.error("--limit must be at least 1")
    if args.val < 0:
        p.error("--val must be 0 or more")
    for name in ("lr", "momentum", "weight_decay"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value >= 0):
            p.error(f"--{name.replace('_', '-')} must be a finite number at least 0, got {value}")
    if not 0 <= args.label_smoothing < 1:
        p.error(f"--label-smoothing must be in [0, 1), got {args.label_smoothing}")
    if args.recipe == "airbench" and not (args.momentum < 1 and args.lr > 0):
        p.error("the airbench recipe needs --momentum below 1 and --lr above 0 (its lr scale is 1 / (1 - momentum))")
    args.data = os.path.abspath(args.data)
    args.checkpoint = args.checkpoint or f"runs/{args.model}.ckpt"
    return args


def log_path_of(checkpoint):
    """The JSON log beside a checkpoint: its stem + .json, or + .log.json where the checkpoint
    itself ends in .json, so the log never overwrites it."""
    stem, ext = os.path.splitext(checkpoint)
    return stem + (".log.json" if ext == ".json" else ".json")


def check_checkpoint_path(args):
    """Before any training: the checkpoint must be a file path that can be written, and a new
    run must not silently replace an earlier run's checkpoint."""
    if os.path.isdir(args.checkpoint):
        sys.exit(f"error: cannot write the checkpoint {args.checkpoint}: it is a directory")
    if not args.resume and not args.overwrite and os.path.exists(args.checkpoint):
        sys.exit(f"error: {args.checkpoint} exists: --resume continues its run, --overwrite starts a new one "
                 f"over it, or give another --checkpoint")
    writable_folder(args.checkpoint)


def writable_folder(path):
    """Create the folder that will hold `path` and check that a file can be written there,
    before any training: an error now costs nothing, after an epoch it costs the epoch."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        sys.exit(f"error: cannot write the checkpoint {path}: {e.strerror or e}")


def read_checkpoint(args):
    """The checkpoint to resume, after checking it was made by a run with these settings and
    that every plain field --resume reads has its type (a hand-edited file gets one line
    naming the field, never a traceback)."""
    if os.path.isdir(args.checkpoint):
        sys.exit(f"error: cannot resume: {args.checkpoint} is a directory, not a checkpoint")
    try:
        ck = tnet.load(args.checkpoint)
    except (tnet.LoadError, OSError) as e:
        sys.exit(f"error: cannot resume: {one_line(e)}")
    if not isinstance(ck, dict) or ck.get("kind") != "train.py checkpoint" or not CHECKPOINT_KEYS <= ck.keys():
        sys.exit(f"error: cannot resume: {args.checkpoint} is not a train.py checkpoint")

    def bad(field, problem):
        sys.exit(f"error: cannot resume: {args.checkpoint}: the checkpoint's {field} {problem}")
    saved = ck["settings"]
    if not isinstance(saved, dict):
        bad("'settings'", f"is a {type(saved).__name__}, not a dict")
    for k in RUN_SETTINGS:
        if not isinstance(saved.get(k), (type(None), bool, int, float, str)):
            bad(f"'settings' {k!r}", f"is a {type(saved[k]).__name__}, not a number or string")
    for field in ("epoch", "batch"):
        if not is_count(ck[field]):
            bad(repr(field), f"is {ck[field]!r}, not a count from 0 up")
    for field in ("train_time", "eval_time"):
        if not (is_number(ck[field]) and ck[field] >= 0):
            bad(repr(field), f"is {ck[field]!r}, not a number of seconds")
    if not (isinstance(ck["schedule"], dict) and is_count(ck["schedule"].get("iteration"))):
        bad("'schedule'", f"is {short(ck['schedule'])}, not {{'iteration': a count from 0 up}}")
    log = ck["log"]
    if not (isinstance(log, list) and all(isinstance(e, dict) and all(isinstance(k, str) and is_number(v)
                                                                        for k, v in e.items()) for e in log)):
        bad("'log'", f"is {short(log)}, not a list of {{name: number}} entries")
    if not isinstance(ck.get("evaluate", False), bool) or (ck.get("evaluate") and not log):
        bad("'evaluate'", f"is {short(ck.get('evaluate'))}, not true (with a log entry to complete) or false")
    for field in ("model", "optimizer", "loader"):
        if not isinstance(ck[field], dict):
            bad(repr(field), f"is a {type(ck[field]).__name__}, not a dict")
    changed = [f"--{k.replace('_', '-')} {saved.get(k)!r} in the checkpoint, {getattr(args, k)!r} now"
               for k in RUN_SETTINGS if saved.get(k) != getattr(args, k)]
    if changed:
        sys.exit(f"error: --resume with other settings than the checkpoint's: {'; '.join(changed)}. "
                 f"Give the same settings, or another --checkpoint to start a new run")
    return ck


def is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def short(value, width=60):
    """repr(value), cut to `width` characters for a one-line message."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def one_line(e):
    return " ".join(str(e).split())


def resume_states(ck, args, fields):
    """Load each (field, load) of the checkpoint: a value that does not fit this run (a
    hand-edited or foreign one) stops with one line naming the field."""
    for field, load in fields:
        try:
            load(ck.get(field))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, RuntimeError, OverflowError) as e:
            sys.exit(f"error: cannot resume: {args.checkpoint}: the checkpoint's {field!r} does not fit this run "
                     f"({type(e).__name__}: {short(one_line(e), 200)})")


def checked_set_state(train):
    """Data.Loader.set_state, with the checks its fields need before an epoch draws from them."""
    def load(state):
        if not is_count(state.get("epoch")):
            raise ValueError(f"'epoch' is {short(state.get('epoch'))}, not a count from 0 up")
        first = state.get("first_flips")
        if first is not None and np.shape(first) != (train.n,):
            raise ValueError(f"'first_flips' has shape {np.shape(first)}, not ({train.n},)")
        train.set_state(state)
    return load


@contextlib.contextmanager
def ctrl_c_deferred():
    """Ctrl-C inside the block waits for its end, then raises KeyboardInterrupt: the evaluation
    and the checkpoint after an epoch run whole, so a stop there loses nothing."""
    pressed = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: pressed.append(True))
    except ValueError:  # not the main thread: no handler to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt


def evaluate(model, loader, captured):
    """Fraction of correctly classified images."""
    captured.correct.zero_()
    model.eval()
    for x, y in loader.batches(out=(captured.x, captured.y)):
        captured(x, y)
    model.train()
    return captured.correct.item() / loader.n


class RunningLoss:
    """The mean training loss for the progress bar without stalling the GPU. update(n) (n
    steps summed so far) queues a copy of the device sum to pinned host memory and returns
    the mean of the last copy that has landed (None before one has), so the bar lags by up
    to one logging interval; exact(n) waits for the GPU. Waiting at every log line left the
    GPU idle while the host queued the next steps (about 10 us per step of the Caffe recipe)."""

    def __init__(self, loss_sum):
        self.sum, self.mean, self.pending = loss_sum, None, None
        if loss_sum.is_cuda:
            self.host = torch.zeros(1, pin_memory=True)
            self.landed = torch.cuda.Event()

    def update(self, n):
        if not self.sum.is_cuda:
            return self.exact(n)
        if self.pending is not None and self.landed.query():
            self.mean, self.pending = self.host.item() / self.pending, None
        if self.pending is None:
            self.host.copy_(self.sum, non_blocking=True)
            self.landed.record()
            self.pending = n
        return self.mean

    def exact(self, n):
        self.mean, self.pending = self.sum.item() / n, None
        return self.mean


def rate(value):
    """A rate for the progress bar: 3 significant digits below 100 (0.012, not 0), whole above."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def duration(seconds):
    return (f"{seconds / 3600:.3g} h" if seconds >= 3600 else f"{seconds / 60:.3g} min" if seconds >= 60
            else f"{seconds:.3g} s")


def cpu_estimate(seconds_per_step, steps):
    """The CPU's line saying how long the run's `steps` will take, from timed steps."""
    return (f"CPU interpreter: about {duration(seconds_per_step * steps)} for this run ({steps} steps at "
            f"{seconds_per_step:.3g} s); try --limit/--epochs for a shorter one, e.g. {CPU_TRYOUT}")


def first_batch(images, labels, batch_size):
    return next(iter(data.Loader(images[:batch_size], labels[:batch_size], batch_size, shuffle=False)))


def run_steps(epochs, steps_per_epoch):
    """A run's steps: ceil(epochs x batches per epoch), airbench's rule (the 1e-9: 9.9 * 10 is
    99.00000000000001)."""
    return math.ceil(epochs * steps_per_epoch - 1e-9)


def make_optimizer(model, args, steps_per_epoch, total):
    """SGD over the trainable parameters and its schedule (a LambdaLR). caffe and fast: one
    group, --lr and --weight-decay as given. airbench: Nesterov momentum; --lr and
    --weight-decay in airbench's units (see the module's text); three groups: the weights (the
    whitening bias among them, as in airbench94), the BatchNorm shifts (named *norm*, airbench's
    rule) at 64 times the lr with the same absolute decay, and the whitening bias, whose lr
    factor drops to 0 after 3 epochs (airbench stops its gradient)."""
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    factor = SCHEDULES[args.schedule](total)
    if args.recipe != "airbench":
        opt = optim.SGD([p for _, p in named], lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
        return opt, optim.LambdaLR(opt, factor)
    scale = 1024 * (1 + 1 / (1 - args.momentum))  # a Nesterov step's length in gradients, at a steady gradient
    lr, decay = args.lr / scale, args.weight_decay * args.batch_size / scale
    whiten_steps = AIRBENCH["whiten_bias_epochs"] * steps_per_epoch
    groups = [([p for name, p in named if "norm" not in name and name != "whiten.bias"], lr, factor),
              ([p for name, p in named if "norm" in name], lr * AIRBENCH["bias_lr_scale"], factor),
              ([p for name, p in named if name == "whiten.bias"], lr,
               lambda it: factor(it) if it < whiten_steps else 0.0)]
    groups = [g for g in groups if g[0]]
    opt = optim.SGD([{"params": params, "lr": group_lr, "weight_decay": decay / group_lr}
                     for params, group_lr, _ in groups], momentum=args.momentum, nesterov=True)
    return opt, optim.LambdaLR(opt, [f for *_, f in groups])


def main(argv=None):
    """Train as the command line says; returns the last run's result (see report)."""
    args = parse_args(argv)
    if args.runs == 1:
        return run(args)
    stem, ext = os.path.splitext(args.checkpoint)
    results = [run(argparse.Namespace(**{**vars(args), "seed": seed, "checkpoint": f"{stem}-seed{seed}{ext}"}))
               for seed in range(args.seed, args.seed + args.runs)]
    summary(results)
    return results[-1]


def run(args):
    """One training run of the parsed arguments."""
    cuda = tnet.DEVICE.type == "cuda"
    if not cuda:
        print(f"no CUDA GPU: every kernel runs in Triton's interpreter on the CPU, about "
              f"{CPU_SECONDS_PER_IMAGE * args.batch_size:.0f} s per training step at batch {args.batch_size}. "
              f"For a try-out of about a minute: {CPU_TRYOUT}", file=sys.stderr)
    log_path = log_path_of(args.checkpoint)
    ck = read_checkpoint(args) if args.resume else None
    check_checkpoint_path(args)
    try:
        train_x, train_y, test_x, test_y = data.load_cifar10(args.data)
    except data.DataError as e:
        sys.exit(f"error: {e}")
    if args.limit:
        train_x, train_y, test_x, test_y = train_x[:args.limit], train_y[:args.limit], test_x[:args.limit], test_y[:args.limit]
    if args.val:  # tune on held-out training images; the test set stays unseen
        if args.val >= len(train_x):
            sys.exit(f"error: --val {args.val} leaves no training images out of {len(train_x)}")
        train_x, train_y, test_x, test_y = train_x[:-args.val], train_y[:-args.val], train_x[-args.val:], train_y[-args.val:]
    split = "validation" if args.val else "test"
    airbench = args.recipe == "airbench"
    if airbench:
        train_x, test_x = data.normalize(train_x), data.normalize(test_x)
    else:
        train_x, test_x = data.preprocess(train_x, test_x)
    train = data.Loader(train_x, train_y, args.batch_size, shuffle=True, augment=args.augment, seed=args.seed,
                        **(AIRBENCH["loader"] if airbench else {}))
    test = data.Loader(test_x, test_y, args.eval_batch_size, shuffle=False)
    if len(train) == 0:
        sys.exit(f"error: {len(train_x)} training images make no full batch of {args.batch_size}")
    steps_per_epoch = len(train)
    total = run_steps(args.epochs, steps_per_epoch)
    reduction = AIRBENCH["reduction"] if airbench else "mean"
    loss_per_step = args.batch_size if reduction == "sum" else 1  # the bar and the log show the loss per image

    gemm_precision, dtype, _ = PRECISIONS[args.precision]
    tnet.set_precision(gemm_precision)
    # bfloat16 has fp32's range: no scale needed
    scaler = amp.GradScaler(enabled=dtype == torch.float16 and args.grad_scaler)
    model = getattr(models, args.model)(seed=args.seed)
    train_time, init_time = 0.0, 0.0
    if args.model == "airbench94" and ck is None:
        whitening = train.images[:AIRBENCH["whitening_images"]]
        if cuda:  # compiles and tunes its kernels, untimed, as airbench's warm-up run does
            models.init_whitening(model, whitening)
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        models.init_whitening(model, whitening)
        if cuda:
            torch.cuda.synchronize()
        init_time = time.perf_counter() - t0
    opt, schedule = make_optimizer(model, args, steps_per_epoch, total)
    lookahead = optim.Lookahead(model, total, every=AIRBENCH["lookahead_every"]) if airbench else None
    start_epoch, skip, log, eval_time, last_saved = 0, 0, [], 0.0, None
    if ck is not None:
        if ck["schedule"]["iteration"] >= total and not ck.get("evaluate"):
            print(f"the run in {args.checkpoint} is already finished ({ck['epoch']} epochs); give more --epochs "
                  f"to train on, or another --checkpoint to start a new run")
            if not (ck["log"] and f"{split}_accuracy" in ck["log"][-1]):
                sys.exit(f"error: cannot resume: {args.checkpoint}: the checkpoint's 'log' has no {split} accuracy "
                         f"for its last epoch")
            return report(ck["log"][-1][f"{split}_accuracy"], split, ck["train_time"], ck["eval_time"], total,
                          args.seed)
        if ck["batch"] >= steps_per_epoch:
            sys.exit(f"error: cannot resume: {args.checkpoint}: the checkpoint's 'batch' is {ck['batch']}, "
                     f"past an epoch of {steps_per_epoch} batches")
        resume_states(ck, args, [
            ("model", model.load_state_dict), ("optimizer", opt.load_state_dict), ("loader", checked_set_state(train)),
            ("schedule", schedule.load_state_dict),
            # saved by an fp16 run; another precision starts at the initial scale
            ("scaler", lambda s: s and scaler.load_state_dict(s)),
            *([("lookahead", lookahead.load_state_dict)] if lookahead is not None else [])])
        start_epoch, skip, log, train_time, eval_time = ck["epoch"], ck["batch"], ck["log"], ck["train_time"], ck["eval_time"]
        last_saved = f"{args.checkpoint} (epoch {start_epoch}, batch {skip})"
        print(f"resumed from {args.checkpoint}: epoch {start_epoch + 1}, batch {skip}")
    elif init_time:
        train_time = init_time
        print(f"whitening conv set from {len(whitening)} training images in {init_time:.3f} s (counted as training)")
    print(f"checkpoint: {args.checkpoint} (every epoch), log: {log_path}")

    def checkpoint(epoch, batch, loader_state, evaluate=False):
        """epoch: epochs done; batch: batches done in the next one; loader_state: its start;
        evaluate: the evaluation after `epoch` was stopped, --resume runs it first."""
        nonlocal last_saved
        try:
                tnet.save({"kind": "train.py checkpoint", "settings": {k: getattr(args, k) for k in RUN_SETTINGS},
                       "model": model.state_dict(), "optimizer": opt.state_dict(), "loader": loader_state,
                       "schedule": schedule.state_dict(), "epoch": epoch, "batch": batch, "log": log,
                       "train_time": train_time, "eval_time": eval_time, "scaler": scaler.state_dict(),
                       "lookahead": None if lookahead is None else lookahead.state_dict(), "evaluate": evaluate},
                      args.checkpoint)
        except OSError as e:  # the write is atomic: the previous checkpoint is intact
            stop(f"cannot write the checkpoint {args.checkpoint}: {e.strerror or e}")
        last_saved = f"{args.checkpoint} (epoch {epoch}, batch {batch})"

    def write_log():
        try:
            serialize.atomic_write(log_path, lambda f: f.write(json.dumps(log, indent=1).encode()))
        except OSError as e:
            stop(f"cannot write the log {log_path}: {e.strerror or e}")

    def evaluated(epoch, entry):
        """The evaluation after `epoch` epochs into `entry` (a log entry). A KeyboardInterrupt
        raised inside it (a real Ctrl-C waits for its end) keeps the epoch's training: the
        checkpoint then records the evaluation as pending, and --resume runs it first."""
        nonlocal eval_time
        t0 = time.perf_counter()
        try:
            entry[f"{split}_accuracy"] = evaluate(model, test, test_step)
        except KeyboardInterrupt:
            eval_time += time.perf_counter() - t0
            entry["eval_time"] = eval_time
            checkpoint(epoch, 0, train.state(), evaluate=True)
            write_log()
            raise
        eval_time += time.perf_counter() - t0
        entry["eval_time"] = eval_time

    def stop(problem):
        saved = f"the last checkpoint is {last_saved}" if last_saved else "no checkpoint was written"
        sys.exit(f"error: {problem}; {saved}")

    print("compiling and autotuning the kernels, then capturing the step in a CUDA graph..." if cuda else
          "compiling the kernels for the interpreter...")
    batch = first_batch(train_x, train_y, args.batch_size)
    make_step = lambda **kw: TrainStep(model, opt, *batch, label_smoothing=args.label_smoothing, dtype=dtype,
                                       scaler=scaler, reduction=reduction, lookahead=lookahead, **kw)
    step = make_step()
    # airbench's whitening bias stops training after a few epochs (its group's lr falls to 0): a
    # second graph for the epochs after, without its gradient, nor the input gradient of the conv
    # after it (block1.conv1's largest pass)
    whiten_steps = AIRBENCH["whiten_bias_epochs"] * steps_per_epoch if airbench else math.inf
    phase_steps = {True: step}  # by whether the whitening bias trains
    if total > whiten_steps:
        model.whiten.bias.requires_grad = False
        phase_steps[False] = make_step(loss_sum=step.loss_sum)
        model.whiten.bias.requires_grad = True
    test_step = EvalStep(model, *first_batch(test_x, test_y, args.eval_batch_size), flip=args.tta >= 1, dtype=dtype,
                         translate=args.tta == 2)
    if ck is not None and ck.get("evaluate"):  # the evaluation an interrupted run did not finish
        try:
            with ctrl_c_deferred():
                evaluated(start_epoch, log[-1])
                print(f"epoch {start_epoch}: {split} accuracy {100 * log[-1][f'{split}_accuracy']:.2f}% (its "
                      f"evaluation, interrupted before)")
                checkpoint(start_epoch, 0, train.state())
                write_log()
        except KeyboardInterrupt:
            sys.exit(f"interrupted: the last checkpoint is {last_saved}; --resume continues from there")
    loss_sum = step.loss_sum
    running = RunningLoss(loss_sum)
    log_every = 50 if cuda else 1  # the GPU queues steps ahead; the interpreter's steps take seconds
    # the steps left fill whole epochs but the last (a run extended after a fraction goes on from there)
    epochs = start_epoch + -(-(skip + total - schedule.iteration) // steps_per_epoch)
    timing, steps_left = {}, total - schedule.iteration  # the CPU's estimate: when each timed step ended
    for epoch in range(start_epoch, epochs):
        if airbench:  # an epoch that starts after the bias's last step needs no gradient for it
            model.whiten.bias.requires_grad = schedule.iteration < whiten_steps
            step = phase_steps[model.whiten.bias.requires_grad]
        steps = min(steps_per_epoch, skip + total - schedule.iteration)
        loader_state = train.state()  # replays this epoch's shuffle on resume
        t0, first_step = time.perf_counter(), schedule.iteration  # the epoch's draws count as training
        loss_sum.zero_()
        batches = itertools.islice(train.batches(out=(step.x, step.y)), steps)
        bar = tqdm(batches, total=steps, desc=f"epoch {epoch + 1}/{epochs}", leave=False, file=sys.stdout)

        def show(mean, done):
            if mean is None:
                return
            if not math.isfinite(mean):
                stop(f"the loss became {mean} in epoch {epoch + 1}")
            bar.set_postfix(loss=f"{mean:.4f}", img_s=rate(done * args.batch_size / (time.perf_counter() - t0)))
        try:
            for i, (x, y) in enumerate(bar):
                if i < skip:  # batches an interrupted run already trained on
                    continue
                step(x, y)  # a CUDA graph replay (a short last batch runs eagerly)
                schedule.step()  # the loss is summed on the device: no sync per step
                if not cuda and len(timing) < 2 and steps_left > TIMED_STEPS[1]:
                    done = total - schedule.iteration
                    if steps_left - done in TIMED_STEPS:
                        timing[steps_left - done] = time.perf_counter()
                    if len(timing) == 2:
                        per_step = (timing[TIMED_STEPS[1]] - timing[TIMED_STEPS[0]]) / (TIMED_STEPS[1] - TIMED_STEPS[0])
                        tqdm.write(cpu_estimate(per_step, steps_left), file=sys.stderr)
                if (i + 1) % log_every == 0:
                    show(running.update((i + 1 - skip) * loss_per_step), i + 1 - skip)
            if epoch == epochs - 1 and lookahead is not None:
                lookahead.finish()  # the weights take their average, airbench's last update
            mean = running.exact(max(1, steps - skip) * loss_per_step)  # the epoch's one sync, before the clock stops
            show(mean, steps - skip)
        except KeyboardInterrupt:
            train_time += time.perf_counter() - t0
            checkpoint(epoch, skip + schedule.iteration - first_step, loader_state)
            sys.exit(f"interrupted: saved {args.checkpoint}; --resume continues from there")
        train_time += time.perf_counter() - t0
        bad = take_label_error(tnet.DEVICE)  # the captured loss flags labels on the device
        if bad is not None:
            stop(f"a training label is {bad}, outside [0, 10), in epoch {epoch + 1}")
        skip = 0
        entry = {"epoch": epoch + 1, "loss": mean, "train_time": train_time, "eval_time": eval_time}
        try:
            with ctrl_c_deferred():
                log.append(entry)
                if epoch == epochs - 1 or (args.eval_every and (epoch + 1) % args.eval_every == 0):
                    evaluated(epoch + 1, entry)
                accuracy = (f", {split} accuracy {100 * entry[f'{split}_accuracy']:.2f}%"
                            if f"{split}_accuracy" in entry else "")
                print(f"epoch {epoch + 1}: loss {mean:.4f}{accuracy}, {train_time:.1f} s")
                checkpoint(epoch + 1, 0, train.state())
                write_log()
        except KeyboardInterrupt:
            sys.exit(f"interrupted after epoch {epoch + 1}: the last checkpoint is {last_saved}; "
                     f"--resume continues from there")
    return report(log[-1][f"{split}_accuracy"], split, train_time, eval_time, total, args.seed)


def report(accuracy, split, train_time, eval_time, iterations, seed=None):
    """Print a run's result line; returns it as a dict."""
    print(f"{split} accuracy: {100 * accuracy:.2f}%  (training time {train_time:.2f} s + evaluation "
          f"{eval_time:.2f} s, {1000 * train_time / max(1, iterations):.3f} ms per iteration)")
    return {"seed": seed, "split": split, "accuracy": accuracy, "train_time": train_time, "eval_time": eval_time}


def summary(results):
    """--runs: every run's accuracy and time, then their mean, spread and range."""
    acc = np.array([r["accuracy"] for r in results]) * 100
    total = np.array([r["train_time"] + r["eval_time"] for r in results])
    for r, t in zip(results, total):
        print(f"seed {r['seed']}: {r['split']} accuracy {100 * r['accuracy']:.2f}%, {t:.3f} s "
              f"({r['train_time']:.3f} s training + {r['eval_time']:.3f} s evaluation)")
    print(f"{len(results)} runs: {results[0]['split']} accuracy mean {acc.mean():.2f}% (std {acc.std(ddof=1):.2f}, "
          f"{acc.min():.2f}-{acc.max():.2f}); time mean {total.mean():.3f} s ({total.min():.3f}-{total.max():.3f})")


if __name__ == "__main__":
    main()
