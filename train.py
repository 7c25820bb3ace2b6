"""Train Caffe's CIFAR-10 quick network with tnet.

    python train.py --epochs 10            # Caffe's recipe: 5,000 iterations at batch 100
    python train.py --recipe fast          # the same network, a better recipe
    python train.py --precision bf16       # 16-bit activations, fp32 master weights

Caffe's recipe (cifar10_quick_solver.prototxt): SGD, lr 0.001, momentum 0.9, weight decay
0.004, batch 100, the lr divided by ten for the last fifth of the iterations; inputs are
raw pixels minus the training set's mean image. The fast recipe adds random crops and
flips, label smoothing, a one-cycle learning rate and flip averaging at test time.
Options given on the command line override the recipe's.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time

import torch
from tqdm import tqdm

import tnet
from tnet import amp, data, optim, serialize
from tnet.graph import EvalStep, TrainStep
from tnet.kernels.softmax import take_label_error
from tnet.models import cifar10_quick

MODEL = "cifar10_quick"

RECIPES = {
    "caffe": dict(epochs=10, batch_size=100, lr=0.001, momentum=0.9, weight_decay=0.004, schedule="caffe",
                  augment=False, label_smoothing=0.0, tta=False),
    "fast": dict(epochs=40, batch_size=125, lr=0.01, momentum=0.9, weight_decay=0.001, schedule="one-cycle",
                 augment=True, label_smoothing=0.1, tta=True),
}
SCHEDULES = {"caffe": optim.caffe_quick, "one-cycle": optim.one_cycle}
# --precision: (tnet.set_precision's GEMM precision for fp32 operands, the step's autocast dtype, help)
PRECISIONS = {
    "ieee": ("ieee", None, "fp32 tensors, exact fp32 products"),
    "tf32": ("tf32", None, "fp32 tensors, products in tf32 on the tensor cores, as cuDNN's"),
    "bf16": ("tf32", torch.bfloat16, "under tnet.autocast(bfloat16), 16-bit activations and GEMM operands, with fp32 "
                                     "sums, master weights, BatchNorm statistics and loss"),
    "fp16": ("tf32", torch.float16, "the same in float16, with a dynamic loss scale (tnet.amp.GradScaler)"),
}
# What a checkpoint's run was made with: --resume refuses other values for these. The others
# may change: --epochs extends a run, --precision, --tta and --eval-batch-size change how it
# computes or evaluates, not what it trains on.
RUN_SETTINGS = ("recipe", "batch_size", "lr", "momentum", "weight_decay", "schedule", "augment", "label_smoothing",
                "val", "seed", "limit", "data", "model")
CHECKPOINT_KEYS = {"settings", "model", "optimizer", "loader", "schedule", "epoch", "batch", "log", "train_time",
                   "eval_time"}
CPU_TRYOUT = "python train.py --limit 40 --batch-size 20 --epochs 1 --eval-batch-size 40"
CPU_SECONDS_PER_IMAGE = 0.8  # a training step through Triton's interpreter, per image of the batch (2 cores)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The docstring as written, and every option's default after its help (the recipes'
    options list each recipe's value instead)."""

    def _get_help_string(self, action):
        if action.default in (None, argparse.SUPPRESS) or not action.option_strings or "default" in action.help:
            return action.help
        return action.help + " (default: %(default)s)"


def recipe_values(name):
    return ", ".join(f"{recipe}: {values[name]}" for recipe, values in RECIPES.items())


def build_parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=_Formatter)
    p.add_argument("--recipe", choices=RECIPES, default="caffe",
                   help="caffe: Caffe's exact recipe; fast: the best found for the same net")
    r = lambda name, text: f"{text} (default: the recipe's; {recipe_values(name)})"
    p.add_argument("--epochs", type=int, help=r("epochs", "passes over the training set"))
    p.add_argument("--data", default="./data", help="folder holding cifar-10-batches-bin or -py; downloaded there if absent")
    p.add_argument("--batch-size", type=int, help=r("batch_size", "images per step"))
    p.add_argument("--eval-batch-size", type=int, default=1000,
                   help="images per evaluation pass (it changes speed only, not the result)")
    p.add_argument("--lr", type=float, help=r("lr", "base learning rate"))
    p.add_argument("--momentum", type=float, help=r("momentum", "SGD momentum"))
    p.add_argument("--weight-decay", type=float, help=r("weight_decay", "L2 weight decay"))
    p.add_argument("--schedule", choices=SCHEDULES,
                   help=r("schedule", "learning-rate schedule: caffe, a tenth for the last fifth; one-cycle, "
                                      "linear warm-up then linear decay"))
    p.add_argument("--augment", action=argparse.BooleanOptionalAction,
                   help=r("augment", "random crop (pad 4) and horizontal flip"))
    p.add_argument("--label-smoothing", type=float, help=r("label_smoothing", "share of the target spread over all classes"))
    p.add_argument("--tta", action=argparse.BooleanOptionalAction,
                   help=r("tta", "average the logits of each test image and its mirror"))
    p.add_argument("--val", type=int, default=0,
                   help="hold out the last N training images and evaluate on them instead of the test set")
    p.add_argument("--precision", choices=PRECISIONS, default="tf32",
                   help="; ".join(f"{name}: {text}" for name, (_, _, text) in PRECISIONS.items()))
    p.add_argument("--seed", type=int, default=0, help="seed for the weights and the shuffling")
    p.add_argument("--limit", type=int, default=None, help="use only the first N training and N test images (default: all)")
    p.add_argument("--checkpoint", default=f"runs/{MODEL}.ckpt",
                   help="checkpoint path, written atomically every epoch (and on Ctrl-C); the JSON log goes beside it")
    p.add_argument("--resume", action="store_true", help="continue the run saved in --checkpoint, with the same settings")
    return p


def parse_args(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    for name, value in RECIPES[args.recipe].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("epochs", "batch_size", "eval_batch_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
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
    args.data, args.model = os.path.abspath(args.data), MODEL
    return args


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
    """The checkpoint to resume, after checking it was made by a run with these settings."""
    try:
        ck = tnet.load(args.checkpoint)
    except tnet.LoadError as e:
        sys.exit(f"error: cannot resume: {e}")
    if not isinstance(ck, dict) or ck.get("kind") != "train.py checkpoint" or not CHECKPOINT_KEYS <= ck.keys():
        sys.exit(f"error: cannot resume: {args.checkpoint} is not a train.py checkpoint")
    saved = ck["settings"]
    changed = [f"--{k.replace('_', '-')} {saved.get(k)!r} in the checkpoint, {getattr(args, k)!r} now"
               for k in RUN_SETTINGS if saved.get(k) != getattr(args, k)]
    if changed:
        sys.exit(f"error: --resume with other settings than the checkpoint's: {'; '.join(changed)}. "
                 f"Give the same settings, or another --checkpoint to start a new run")
    return ck


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


def first_batch(images, labels, batch_size):
    return next(iter(data.Loader(images[:batch_size], labels[:batch_size], batch_size, shuffle=False)))


def main(argv=None):
    args = parse_args(argv)
    cuda = tnet.DEVICE.type == "cuda"
    if not cuda:
        print(f"no CUDA GPU: every kernel runs in Triton's interpreter on the CPU, about "
              f"{CPU_SECONDS_PER_IMAGE * args.batch_size:.0f} s per training step at batch {args.batch_size}. "
              f"For a try-out of about a minute: {CPU_TRYOUT}", file=sys.stderr)
    log_path = os.path.splitext(args.checkpoint)[0] + ".json"
    ck = read_checkpoint(args) if args.resume else None
    writable_folder(args.checkpoint)
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
    train_x, test_x = data.preprocess(train_x, test_x)
    train = data.Loader(train_x, train_y, args.batch_size, shuffle=True, augment=args.augment, seed=args.seed)
    test = data.Loader(test_x, test_y, args.eval_batch_size, shuffle=False)

    gemm_precision, dtype, _ = PRECISIONS[args.precision]
    tnet.set_precision(gemm_precision)
    scaler = amp.GradScaler(enabled=dtype == torch.float16)  # bfloat16 has fp32's range: no scale needed
    model = cifar10_quick(seed=args.seed)
    opt = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    total = args.epochs * len(train)
    schedule = optim.LambdaLR(opt, SCHEDULES[args.schedule](total))
    start_epoch, skip, log, train_time, eval_time, last_saved = 0, 0, [], 0.0, 0.0, None
    if ck is not None:
        if ck["epoch"] >= args.epochs:
            print(f"the run in {args.checkpoint} is already finished ({ck['epoch']} epochs); give more --epochs "
                  f"to train on, or another --checkpoint to start a new run")
            report(ck["log"][-1][f"{split}_accuracy"], split, ck["train_time"], ck["eval_time"], total)
            return
        try:
            model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            train.set_state(ck["loader"])
            schedule.load_state_dict(ck["schedule"])
            if ck.get("scaler"):  # saved by an fp16 run; another precision starts at the initial scale
                scaler.load_state_dict(ck["scaler"])
        except (ValueError, KeyError, TypeError) as e:
            sys.exit(f"error: cannot resume: {args.checkpoint} does not fit this run ({type(e).__name__}: {e})")
        start_epoch, skip, log, train_time, eval_time = ck["epoch"], ck["batch"], ck["log"], ck["train_time"], ck["eval_time"]
        last_saved = f"{args.checkpoint} (epoch {start_epoch}, batch {skip})"
        print(f"resumed from {args.checkpoint}: epoch {start_epoch + 1}, batch {skip}")
    print(f"checkpoint: {args.checkpoint} (every epoch), log: {log_path}")

    def checkpoint(epoch, batch, loader_state):
        """epoch: epochs done; batch: batches done in the next one; loader_state: its start."""
        nonlocal last_saved
        tnet.save({"kind": "train.py checkpoint", "settings": {k: getattr(args, k) for k in RUN_SETTINGS},
                   "model": model.state_dict(), "optimizer": opt.state_dict(), "loader": loader_state,
                   "schedule": schedule.state_dict(), "epoch": epoch, "batch": batch, "log": log,
                   "train_time": train_time, "eval_time": eval_time, "scaler": scaler.state_dict()}, args.checkpoint)
        last_saved = f"{args.checkpoint} (epoch {epoch}, batch {batch})"

    def stop(problem):
        saved = f"the last checkpoint is {last_saved}" if last_saved else "no checkpoint was written"
        sys.exit(f"error: {problem}; {saved}")

    print("compiling and autotuning the kernels, then capturing the step in a CUDA graph..." if cuda else
          "compiling the kernels for the interpreter...")
    step = TrainStep(model, opt, *first_batch(train_x, train_y, args.batch_size), label_smoothing=args.label_smoothing,
                     dtype=dtype, scaler=scaler)
    test_step = EvalStep(model, *first_batch(test_x, test_y, args.eval_batch_size), flip=args.tta, dtype=dtype)
    loss_sum = step.loss_sum
    running = RunningLoss(loss_sum)
    log_every = 50 if cuda else 1  # the GPU queues steps ahead; the interpreter's steps take seconds
    for epoch in range(start_epoch, args.epochs):
        loader_state = train.state()  # replays this epoch's shuffle on resume
        loss_sum.zero_()
        bar = tqdm(train.batches(out=(step.x, step.y)), total=len(train), desc=f"epoch {epoch + 1}/{args.epochs}", leave=False, file=sys.stdout)
        t0 = time.perf_counter()

        def show(mean, steps):
            if mean is None:
                return
            if not math.isfinite(mean):
                stop(f"the loss became {mean} in epoch {epoch + 1}")
            bar.set_postfix(loss=f"{mean:.4f}", img_s=f"{steps * args.batch_size / (time.perf_counter() - t0):.0f}")
        try:
            for i, (x, y) in enumerate(bar):
                if i < skip:  # batches an interrupted run already trained on
                    continue
                step(x, y)  # a CUDA graph replay (a short last batch runs eagerly)
                schedule.step()  # the loss is summed on the device: no sync per step
                if (i + 1) % log_every == 0:
                    show(running.update(i + 1 - skip), i + 1 - skip)
            mean = running.exact(max(1, len(train) - skip))  # the epoch's one sync, before the clock stops
            show(mean, len(train) - skip)
        except KeyboardInterrupt:
            train_time += time.perf_counter() - t0
            checkpoint(epoch, schedule.iteration - epoch * len(train), loader_state)
            sys.exit(f"interrupted: saved {args.checkpoint}; --resume continues from there")
        train_time += time.perf_counter() - t0
        bad = take_label_error(tnet.DEVICE)  # the captured loss flags labels on the device
        if bad is not None:
            stop(f"a training label is {bad}, outside [0, 10), in epoch {epoch + 1}")
        skip = 0
        t0 = time.perf_counter()
        accuracy = evaluate(model, test, test_step)
        eval_time += time.perf_counter() - t0
        log.append({"epoch": epoch + 1, "loss": mean, f"{split}_accuracy": accuracy, "train_time": train_time,
                    "eval_time": eval_time})
        print(f"epoch {epoch + 1}: loss {mean:.4f}, {split} accuracy {100 * accuracy:.2f}%, {train_time:.1f} s")
        checkpoint(epoch + 1, 0, train.state())
        serialize.atomic_write(log_path, lambda f: f.write(json.dumps(log, indent=1).encode()))
    report(log[-1][f"{split}_accuracy"], split, train_time, eval_time, total)


def report(accuracy, split, train_time, eval_time, iterations):
    print(f"{split} accuracy: {100 * accuracy:.2f}%  (training time {train_time:.2f} s + evaluation "
          f"{eval_time:.2f} s, {1000 * train_time / max(1, iterations):.3f} ms per iteration)")


if __name__ == "__main__":
    main()
