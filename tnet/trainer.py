"""A training run as train.py makes it: the command line (build_parser, parse_args, recipe_of),
then train(args, recipe): the data, the model and its recipe's Training (tnet.recipes), the
epochs with their progress bar, evaluation, checkpoints and JSON log, --resume, Ctrl-C, and the
result line (report; summary for --runs)."""
import argparse
import contextlib
import dataclasses
import itertools
import json
import math
import os
import signal
import sys
import tempfile
import time

import numpy as np
import torch
from tqdm import tqdm

from . import data, models, recipes, serialize
from ._device import DEVICE
from .graph import EvalStep
from .kernels.gemm import set_precision
from .kernels.softmax import take_label_error

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


# --- the command line ---

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
    """Each recipe's value of the setting `name`, for its option's help."""
    return ", ".join(f"{key}: {getattr(recipe, name)}" for key, recipe in recipes.RECIPES.items())


def build_parser(description=None):
    """train.py's options; `description` heads the help (train.py's docstring)."""
    p = argparse.ArgumentParser(description=description, formatter_class=_Formatter)
    p.add_argument("--model", choices=recipes.MODELS, default="cifar10_quick",
                   help="cifar10_quick: Caffe's CIFAR-10 quick network; airbench94: the CIFAR-10 speed run's network")
    p.add_argument("--recipe", choices=recipes.RECIPES,
                   help="caffe: Caffe's exact recipe; fast: the best found for cifar10_quick; airbench: airbench94's; "
                        "muon: airbench94_muon's, Muon on the filters (for airbench94) "
                        "(default: " + ", ".join(f"{r} for {m}" for m, r in recipes.MODELS.items()) + ")")
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
    p.add_argument("--lr", type=float, help=r("lr", "base learning rate (airbench: in airbench's units, see above; "
                                                  "muon: Muon's, on the filters)"))
    p.add_argument("--momentum", type=float, help=r("momentum", "SGD momentum (muon: Muon's)"))
    p.add_argument("--weight-decay", type=float,
                   help=r("weight_decay", "L2 weight decay (airbench: in airbench's units, see above; muon: per "
                                          "image of the batch, on all but the filters)"))
    p.add_argument("--schedule", choices=recipes.SCHEDULES,
                   help=r("schedule", "learning-rate schedule: caffe, a tenth for the last fifth; one-cycle, "
                                      "linear warm-up then linear decay; airbench, 0.2 to 1 over 23%% of the "
                                      "steps, then to 0.07; linear, down to 0"))
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
    p.add_argument("--precision", choices=recipes.PRECISIONS,
                   help=r("precision", "; ".join(f"{name}: {precision.help}"
                                                 for name, precision in recipes.PRECISIONS.items())))
    p.add_argument("--grad-scaler", action=argparse.BooleanOptionalAction,
                   help=r("grad_scaler", "with --precision fp16, a dynamic loss scale"))
    p.add_argument("--seed", type=number(int, 0, "a seed from 0 up"), default=0, help="seed for the weights and the shuffling")
    p.add_argument("--limit", type=int, default=None, help="use only the first N training and N test images (default: all)")
    p.add_argument("--checkpoint",
                   help="checkpoint path, written atomically every epoch (and on Ctrl-C); the JSON log goes beside it "
                        "(default: runs/MODEL.ckpt, runs/MODEL-RECIPE.ckpt for a recipe other than the model's own)")
    p.add_argument("--resume", action="store_true", help="continue the run saved in --checkpoint, with the same settings")
    p.add_argument("--overwrite", action="store_true",
                   help="start a new run over an existing --checkpoint (without it, a new run refuses to)")
    p.add_argument("--runs", type=int, default=1,
                   help="train this many runs, seeds --seed, --seed + 1, ..., each with its own checkpoint "
                        "(PATH-seedS.ckpt), then print every run's accuracy and time, the mean and the spread")
    return p


def parse_args(argv=None, description=None):
    """The options of the command line `argv` (sys.argv's by default), the recipe's values for
    those it does not give (args.recipe: the recipe's name); a bad value exits with argparse's
    usage error."""
    p = build_parser(description)
    args = p.parse_args(argv)
    args.recipe = args.recipe or recipes.MODELS[args.model]
    for name, value in recipes.RECIPES[args.recipe].options().items():
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
    problem = recipe_of(args).check()
    if problem:
        p.error(problem)
    args.data = os.path.abspath(args.data)
    # each recipe its own default checkpoint, so that one model's recipes never refuse each other's runs
    own = args.recipe == recipes.MODELS[args.model]
    args.checkpoint = args.checkpoint or f"runs/{args.model}{'' if own else '-' + args.recipe}.ckpt"
    return args


def recipe_of(args):
    """The recipe args names (tnet.recipes.RECIPES), with args's values for its settings."""
    return dataclasses.replace(recipes.RECIPES[args.recipe], **{name: getattr(args, name) for name in recipes.OPTIONS})


def run_settings(args, recipe):
    """What a checkpoint records of its run (RUN_SETTINGS): the recipe's name and settings, and
    args's data options, seed and model."""
    values = {**vars(args), **recipe.options(), "recipe": recipe.name}
    return {k: values[k] for k in RUN_SETTINGS}


# --- checkpoints and Ctrl-C ---

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


def read_checkpoint(path, settings):
    """The checkpoint at `path` to resume, after checking it was made by a run with these
    settings (run_settings's) and that every plain field --resume reads has its type (a
    hand-edited file gets one line naming the field, never a traceback)."""
    if os.path.isdir(path):
        sys.exit(f"error: cannot resume: {path} is a directory, not a checkpoint")
    try:
        ck = serialize.load(path)
    except (serialize.LoadError, OSError) as e:
        sys.exit(f"error: cannot resume: {one_line(e)}")
    if not isinstance(ck, dict) or ck.get("kind") != "train.py checkpoint" or not CHECKPOINT_KEYS <= ck.keys():
        sys.exit(f"error: cannot resume: {path} is not a train.py checkpoint")

    def bad(field, problem):
        sys.exit(f"error: cannot resume: {path}: the checkpoint's {field} {problem}")
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
    changed = [f"--{k.replace('_', '-')} {saved.get(k)!r} in the checkpoint, {settings[k]!r} now"
               for k in RUN_SETTINGS if saved.get(k) != settings[k]]
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


def resume_states(ck, path, fields):
    """Load each (field, load) of the checkpoint: a value that does not fit this run (a
    hand-edited or foreign one) stops with one line naming the field."""
    for field, load in fields:
        try:
            load(ck.get(field))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, RuntimeError, OverflowError) as e:
            sys.exit(f"error: cannot resume: {path}: the checkpoint's {field!r} does not fit this run "
                     f"({type(e).__name__}: {short(one_line(e), 200)})")


def checked_set_state(loader):
    """Data.Loader.set_state, with the checks its fields need before an epoch draws from them."""
    def load(state):
        if not is_count(state.get("epoch")):
            raise ValueError(f"'epoch' is {short(state.get('epoch'))}, not a count from 0 up")
        first = state.get("first_flips")
        if first is not None and np.shape(first) != (loader.total,):
            raise ValueError(f"'first_flips' has shape {np.shape(first)}, not ({loader.total},)")
        loader.set_state(state)
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


# --- the run ---

def ranks():
    """(rank, world size): torchrun's RANK and WORLD_SIZE, else (0, 1)."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def train(args, recipe):
    """Train `recipe` with the options `args` (parse_args's): one run, or --runs runs of seeds
    --seed, --seed + 1, ..., each with its own checkpoint (PATH-seedS.ckpt), then their summary.
    Returns the last run's result (see report). Under torchrun (WORLD_SIZE > 1) each process
    trains on its share of every batch (the recipe's batch is the global one) through
    tnet.distributed.DistributedDataParallel; rank 0 alone prints and writes."""
    rank, world = ranks()
    if world > 1:
        from . import distributed
        if recipe.batch_size % world:
            sys.exit(f"error: the batch of {recipe.batch_size} does not split over {world} processes")
        distributed.init_process_group("nccl" if DEVICE.type == "cuda" else "gloo")
    try:
        with contextlib.ExitStack() as quiet:
            if rank:  # rank 0 alone prints
                quiet.enter_context(contextlib.redirect_stdout(quiet.enter_context(open(os.devnull, "w"))))
            if args.runs == 1:
                return Run(args, recipe).run()
            stem, ext = os.path.splitext(args.checkpoint)
            results = [Run(argparse.Namespace(**{**vars(args), "seed": seed, "checkpoint": f"{stem}-seed{seed}{ext}"}),
                           recipe).run()
                       for seed in range(args.seed, args.seed + args.runs)]
            summary(results)
            return results[-1]
    finally:
        if world > 1:
            distributed.destroy_process_group()


class Run:
    """One training run of `recipe` with the options `args`: run() loads the data, builds the
    model and the recipe's Training, resumes from the checkpoint where asked, then trains epoch
    by epoch, each followed by its evaluation (where due), checkpoint and log entry."""

    def __init__(self, args, recipe):
        self.args, self.recipe = args, recipe
        self.cuda = DEVICE.type == "cuda"
        self.settings = run_settings(args, recipe)
        self.log_path = log_path_of(args.checkpoint)
        self.log, self.train_time, self.eval_time, self.last_saved = [], 0.0, 0.0, None
        self.start_epoch, self.skip = 0, 0  # where training goes on: epochs done, batches done in the next
        self.rank, self.world = ranks()

    def run(self):
        """The run, start to end (or from its checkpoint on); returns its result (see report)."""
        args = self.args
        if not self.cuda:
            print(f"no CUDA GPU: every kernel runs in Triton's interpreter on the CPU, about "
                  f"{CPU_SECONDS_PER_IMAGE * self.recipe.batch_size:.0f} s per training step at batch "
                  f"{self.recipe.batch_size}. For a try-out of about a minute: {CPU_TRYOUT}", file=sys.stderr)
        ck = read_checkpoint(args.checkpoint, self.settings) if args.resume else None
        if self.rank == 0:
            check_checkpoint_path(args)
        self.load_data()
        set_precision(recipes.PRECISIONS[self.recipe.precision].gemm)
        self.model = getattr(models, args.model)(seed=args.seed)
        init_time = self.init_whitening() if args.model == "airbench94" and ck is None else 0.0
        forward = None
        if self.world > 1:  # rank 0's weights everywhere; gradients averaged over the processes
            from .distributed import DistributedDataParallel
            forward = DistributedDataParallel(self.model)
            print(f"{self.world} processes, a batch of {self.recipe.batch_size // self.world} each "
                  f"(global {self.recipe.batch_size})")
        self.training = recipes.Training(self.recipe, self.model, self.steps_per_epoch, self.total, forward)
        if ck is not None:
            finished = self.resume(ck)
            if finished is not None:
                return finished
        elif init_time:
            self.train_time = init_time
            print(f"whitening conv set from {self.whitening_images} training images in {init_time:.3f} s "
                  f"(counted as training)")
        print(f"checkpoint: {args.checkpoint} (every epoch), log: {self.log_path}")
        self.capture()
        if ck is not None and ck.get("evaluate"):
            self.evaluate_pending()
        self.running = RunningLoss(self.training.loss_sum)
        schedule = self.training.schedule
        # the steps left fill whole epochs but the last (a run extended after a fraction goes on from there)
        epochs = self.start_epoch + -(-(self.skip + self.total - schedule.iteration) // self.steps_per_epoch)
        self.timer = None if self.cuda else StepTimer(self.total - schedule.iteration)
        for epoch in range(self.start_epoch, epochs):
            mean = self.train_epoch(epoch, epochs)
            self.end_epoch(epoch, epochs, mean)
        if self.train_time:
            print(f"throughput: {rate(self.total * self.recipe.batch_size / self.train_time)} images/s"
                  f" over {self.world} process{'es' if self.world > 1 else ''} (global batch {self.recipe.batch_size})")
        return report(self.log[-1][f"{self.split}_accuracy"], self.split, self.train_time, self.eval_time, self.total,
                      args.seed)

    def load_data(self):
        """The training loader (the recipe's batches and augmentation), the test loader (--val:
        held-out training images), the run's length in steps and the first batches, whose
        shapes the captured steps take."""
        args, recipe = self.args, self.recipe
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
        self.split = "validation" if args.val else "test"
        train_x, test_x = recipe.inputs(train_x, test_x)
        batch = recipe.batch_size // self.world  # each process's share of the global batch
        self.loader = data.Loader(train_x, train_y, batch, shuffle=True, augment=recipe.augment, seed=args.seed,
                                  num_replicas=self.world, rank=self.rank, **recipe.loader)
        self.test_loader = data.Loader(test_x, test_y, args.eval_batch_size, shuffle=False)
        if len(self.loader) == 0:
            sys.exit(f"error: {len(train_x)} training images make no full batch of {recipe.batch_size}")
        self.steps_per_epoch = len(self.loader)
        self.total = recipes.run_steps(recipe.epochs, self.steps_per_epoch)
        self.batch = first_batch(train_x, train_y, batch)
        self.test_batch = first_batch(test_x, test_y, args.eval_batch_size)

    def init_whitening(self):
        """Set the model's whitening conv from the first training images; returns its seconds."""
        whitening = self.loader.images[:self.recipe.whitening_images]
        self.whitening_images = len(whitening)
        if self.cuda:  # compiles and tunes its kernels, untimed, as airbench's warm-up run does
            models.init_whitening(self.model, whitening)
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        models.init_whitening(self.model, whitening)
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    def resume(self, ck):
        """Go on from the checkpoint ck (read_checkpoint's): load its states into the run.
        Returns the result of a run it holds finished, else None."""
        args, training, split = self.args, self.training, self.split
        if ck["schedule"]["iteration"] >= self.total and not ck.get("evaluate"):
            print(f"the run in {args.checkpoint} is already finished ({ck['epoch']} epochs); give more --epochs "
                  f"to train on, or another --checkpoint to start a new run")
            if not (ck["log"] and f"{split}_accuracy" in ck["log"][-1]):
                sys.exit(f"error: cannot resume: {args.checkpoint}: the checkpoint's 'log' has no {split} accuracy "
                         f"for its last epoch")
            return report(ck["log"][-1][f"{split}_accuracy"], split, ck["train_time"], ck["eval_time"], self.total,
                          args.seed)
        if ck["batch"] >= self.steps_per_epoch:
            sys.exit(f"error: cannot resume: {args.checkpoint}: the checkpoint's 'batch' is {ck['batch']}, "
                     f"past an epoch of {self.steps_per_epoch} batches")
        resume_states(ck, args.checkpoint, [
            ("model", self.model.load_state_dict), ("optimizer", training.opt.load_state_dict),
            ("loader", checked_set_state(self.loader)), ("schedule", training.schedule.load_state_dict),
            # saved by an fp16 run; another precision starts at the initial scale
            ("scaler", lambda s: s and training.scaler.load_state_dict(s)),
            *([("lookahead", training.lookahead.load_state_dict)] if training.lookahead is not None else [])])
        self.start_epoch, self.skip, self.log = ck["epoch"], ck["batch"], ck["log"]
        self.train_time, self.eval_time = ck["train_time"], ck["eval_time"]
        self.last_saved = f"{args.checkpoint} (epoch {self.start_epoch}, batch {self.skip})"
        print(f"resumed from {args.checkpoint}: epoch {self.start_epoch + 1}, batch {self.skip}")
        return None

    def capture(self):
        """The recipe's training steps and the evaluation step, captured in CUDA graphs (without a
        GPU, they run eagerly at each call)."""
        print("compiling and autotuning the kernels, then capturing the step in a CUDA graph..." if self.cuda else
              "compiling the kernels for the interpreter...")
        self.training.capture(*self.batch)
        self.test_step = EvalStep(self.model, *self.test_batch, flip=self.recipe.tta >= 1, dtype=self.training.dtype,
                                  translate=self.recipe.tta == 2)

    def evaluate_pending(self):
        """The evaluation an interrupted run did not finish."""
        split = self.split
        try:
            with ctrl_c_deferred():
                self.evaluated(self.start_epoch, self.log[-1])
                print(f"epoch {self.start_epoch}: {split} accuracy {100 * self.log[-1][f'{split}_accuracy']:.2f}% (its "
                      f"evaluation, interrupted before)")
                self.checkpoint(self.start_epoch, 0, self.loader.state())
                self.write_log()
        except KeyboardInterrupt:
            sys.exit(f"interrupted: the last checkpoint is {self.last_saved}; --resume continues from there")

    def train_epoch(self, epoch, epochs):
        """Epoch `epoch` (from 0) of `epochs`, from batch self.skip on; returns its mean loss per
        image. A Ctrl-C saves the batches done and exits."""
        recipe, training, schedule = self.recipe, self.training, self.training.schedule
        step = training.step_at(schedule.iteration)
        steps = min(self.steps_per_epoch, self.skip + self.total - schedule.iteration)
        loader_state = self.loader.state()  # replays this epoch's shuffle on resume
        t0, first_step = time.perf_counter(), schedule.iteration  # the epoch's draws count as training
        loss_per_step = self.loader.batch_size if recipe.reduction == "sum" else 1  # the bar and the log: per image
        log_every = 50 if self.cuda else 1  # the GPU queues steps ahead; the interpreter's steps take seconds
        training.loss_sum.zero_()
        batches = itertools.islice(self.loader.batches(out=(step.x, step.y)), steps)
        bar = tqdm(batches, total=steps, desc=f"epoch {epoch + 1}/{epochs}", leave=False, file=sys.stdout)
        try:
            for i, (x, y) in enumerate(bar):
                if i < self.skip:  # batches an interrupted run already trained on
                    continue
                step(x, y)  # a CUDA graph replay (a short last batch runs eagerly)
                schedule.step()  # the loss is summed on the device: no sync per step
                if self.timer is not None:
                    self.timer.stepped()
                if (i + 1) % log_every == 0:
                    self.show(bar, epoch, t0, self.running.update((i + 1 - self.skip) * loss_per_step),
                              i + 1 - self.skip)
            if epoch == epochs - 1:
                training.finish()
            # the epoch's one sync, before the clock stops
            mean = self.running.exact(max(1, steps - self.skip) * loss_per_step)
            self.show(bar, epoch, t0, mean, steps - self.skip)
        except KeyboardInterrupt:
            self.train_time += time.perf_counter() - t0
            self.checkpoint(epoch, self.skip + schedule.iteration - first_step, loader_state)
            sys.exit(f"interrupted: saved {self.args.checkpoint}; --resume continues from there")
        self.train_time += time.perf_counter() - t0
        bad = take_label_error(DEVICE)  # the captured loss flags labels on the device
        if bad is not None:
            self.stop(f"a training label is {bad}, outside [0, 10), in epoch {epoch + 1}")
        self.skip = 0
        return mean

    def show(self, bar, epoch, t0, mean, done):
        """The progress bar's loss and rate after `done` steps of the epoch begun at t0."""
        if mean is None:
            return
        if not math.isfinite(mean):
            self.stop(f"the loss became {mean} in epoch {epoch + 1}")
        bar.set_postfix(loss=f"{mean:.4f}", img_s=rate(done * self.recipe.batch_size / (time.perf_counter() - t0)))

    def end_epoch(self, epoch, epochs, mean):
        """After epoch `epoch` (from 0): its log entry, evaluation where due, line, checkpoint and
        log, whole (a Ctrl-C waits for their end, then exits)."""
        entry = {"epoch": epoch + 1, "loss": mean, "train_time": self.train_time, "eval_time": self.eval_time}
        eval_every, split = self.recipe.eval_every, self.split
        try:
            with ctrl_c_deferred():
                self.log.append(entry)
                if epoch == epochs - 1 or (eval_every and (epoch + 1) % eval_every == 0):
                    self.evaluated(epoch + 1, entry)
                accuracy = (f", {split} accuracy {100 * entry[f'{split}_accuracy']:.2f}%"
                            if f"{split}_accuracy" in entry else "")
                print(f"epoch {epoch + 1}: loss {mean:.4f}{accuracy}, {self.train_time:.1f} s")
                self.checkpoint(epoch + 1, 0, self.loader.state())
                self.write_log()
        except KeyboardInterrupt:
            sys.exit(f"interrupted after epoch {epoch + 1}: the last checkpoint is {self.last_saved}; "
                     f"--resume continues from there")

    def evaluated(self, epoch, entry):
        """The evaluation after `epoch` epochs into `entry` (a log entry). A KeyboardInterrupt
        raised inside it (a real Ctrl-C waits for its end) keeps the epoch's training: the
        checkpoint then records the evaluation as pending, and --resume runs it first."""
        t0 = time.perf_counter()
        try:
            entry[f"{self.split}_accuracy"] = evaluate(self.model, self.test_loader, self.test_step)
        except KeyboardInterrupt:
            self.eval_time += time.perf_counter() - t0
            entry["eval_time"] = self.eval_time
            self.checkpoint(epoch, 0, self.loader.state(), evaluate=True)
            self.write_log()
            raise
        self.eval_time += time.perf_counter() - t0
        entry["eval_time"] = self.eval_time

    def checkpoint(self, epoch, batch, loader_state, evaluate=False):
        """epoch: epochs done; batch: batches done in the next one; loader_state: its start;
        evaluate: the evaluation after `epoch` was stopped, --resume runs it first."""
        t, path = self.training, self.args.checkpoint
        if self.rank:  # rank 0 writes the run's one checkpoint
            return
        try:
            serialize.save({"kind": "train.py checkpoint", "settings": self.settings, "model": self.model.state_dict(),
                            "optimizer": t.opt.state_dict(), "loader": loader_state,
                            "schedule": t.schedule.state_dict(), "epoch": epoch, "batch": batch, "log": self.log,
                            "train_time": self.train_time, "eval_time": self.eval_time, "scaler": t.scaler.state_dict(),
                            "lookahead": None if t.lookahead is None else t.lookahead.state_dict(),
                            "evaluate": evaluate}, path)
        except OSError as e:  # the write is atomic: the previous checkpoint is intact
            self.stop(f"cannot write the checkpoint {path}: {e.strerror or e}")
        self.last_saved = f"{path} (epoch {epoch}, batch {batch})"

    def write_log(self):
        if self.rank:
            return
        try:
            serialize.atomic_write(self.log_path, lambda f: f.write(json.dumps(self.log, indent=1).encode()))
        except OSError as e:
            self.stop(f"cannot write the log {self.log_path}: {e.strerror or e}")

    def stop(self, problem):
        saved = f"the last checkpoint is {self.last_saved}" if self.last_saved else "no checkpoint was written"
        sys.exit(f"error: {problem}; {saved}")


class StepTimer:
    """The CPU's estimate of a run: the ends of steps TIMED_STEPS of this process, then one line
    saying how long the `steps` left at its start take."""

    def __init__(self, steps):
        self.steps, self.done, self.ended = steps, 0, {}

    def stepped(self):
        self.done += 1
        if len(self.ended) == 2 or self.steps <= TIMED_STEPS[1]:
            return
        if self.done in TIMED_STEPS:
            self.ended[self.done] = time.perf_counter()
        if len(self.ended) == 2:
            per_step = (self.ended[TIMED_STEPS[1]] - self.ended[TIMED_STEPS[0]]) / (TIMED_STEPS[1] - TIMED_STEPS[0])
            tqdm.write(cpu_estimate(per_step, self.steps), file=sys.stderr)


# --- progress and results ---

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


