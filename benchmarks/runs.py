"""The runs study: airbench94's whole training runs, tnet's (train.py's) beside a PyTorch twin of
the same recipe, seed by seed in one process, for the accuracy and the time per run (the twin:
the muon recipe only; it has no lookahead).

tnet's run is train.py's (trainer.Run) with --model airbench94 --recipe RECIPE --seed S. The
PyTorch twin trains the same recipe from the same start: tnet's airbench94(S) with its whitening
conv set by tnet from the same 5,000 images, the same batches from tnet's loader (seed S: the same
order, translates and flips), the net in float16 with its BatchNorms in float32, channels-last,
cuDNN's benchmark mode, the forward and the loss under torch.compile; the recipe's optimizers in
PyTorch (torch.optim.SGD, Nesterov, on the whitening bias, the BatchNorm shifts and the head, and
Muon on the filters, written here with torch's rule and bf16 Newton-Schulz), the recipe's lr
schedule set on the host before each step; test-time augmentation as tnet's EvalStep (the image
and its mirror, and both shifted by one pixel either way, reflect padding). Each run's time counts
as airbench's does: the whitening init, the training steps and the final evaluation; the twin's
first run (compiling) is a warm-up, untimed, as tnet's compile before its own clock starts.

Where the twin is not airbench's own scripts: it is this repository's code, so that both sides
take the same data in the same order; the public airbench94_muon's figures on this pack are in
../shared/ANCHORS.md."""
import statistics
import tempfile
import time

import numpy as np
import torch

from .airbench import torch_airbench94
from .common import bars, fmt, print_header, print_row, write_json

COLUMNS = [
    ("variant", "<14", lambda r: r["variant"]),
    ("seed", ">4", lambda r: r["seed"]),
    ("accuracy", ">9", lambda r: fmt(100 * r["accuracy"], ".2f") + "%"),
    ("train s", ">8", lambda r: fmt(r["train_time"], ".3f")),
    ("eval s", ">7", lambda r: fmt(r["eval_time"], ".3f")),
    ("total s", ">8", lambda r: fmt(r["train_time"] + r["eval_time"], ".3f")),
]
COMPILE_MODE = "max-autotune-no-cudagraphs"
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)  # Muon's Newton-Schulz quintic (tnet.optim.Muon's default)


def add_arguments(p):
    p.add_argument("--recipe", default="muon", choices=["airbench", "muon"],
                   help="airbench94's recipe (default: muon; the twin runs muon only: it has no lookahead)")
    p.add_argument("--runs", type=int, default=5, help="seeds 0 .. RUNS-1 for each side (default: 5; --quick: 1)")
    p.add_argument("--data", default="data", help="CIFAR-10's folder, as train.py's --data (default: data)")
    p.add_argument("--sides", default="tnet,torch", help="which runs: tnet, torch or both (default: tnet,torch)")
    p.add_argument("--compile-mode", default=COMPILE_MODE, help=f"torch.compile's mode for the twin (default: {COMPILE_MODE})")


def newton_schulz(u, steps, coefficients=NS_COEFFICIENTS, eps=1e-7):
    """Muon's orthogonalisation of a batch of matrices [B, M, N] (M <= N), in bf16 as torch's."""
    a, b, c = coefficients
    x = u.bfloat16()
    x = x / x.flatten(1).norm(dim=1).clamp_min(eps)[:, None, None]
    for _ in range(steps):
        gram = x @ x.mT
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x


class TorchMuon:
    """tnet.optim.Muon's rule with renormalize=True (airbench94_muon's) in PyTorch, for filters of
    one shape or several: momentum lerp, Nesterov, each filter rescaled to norm sqrt(rows), then
    p -= lr * sqrt(max(1, rows / cols)) * NS(u), the filters of a shape orthogonalised in one batch."""

    def __init__(self, params, lr, momentum, ns_steps):
        self.lr, self.momentum, self.ns_steps = lr, momentum, ns_steps
        self.shapes = {}
        for p in params:
            self.shapes.setdefault(tuple(p.shape), []).append(p)
        self.bufs = {p: torch.zeros_like(p) for p in params}

    @torch.no_grad()
    def step(self, factor):
        for shape, params in self.shapes.items():
            rows = shape[0]
            us = []
            for p in params:
                buf = self.bufs[p]
                buf.lerp_(p.grad, 1 - self.momentum)
                us.append(p.grad.lerp(buf, self.momentum).reshape(rows, -1))
                p.mul_(rows ** 0.5 / p.norm())
            o = newton_schulz(torch.stack(us), self.ns_steps)
            scale = self.lr * factor * max(1.0, rows / o.shape[2]) ** 0.5
            for p, update in zip(params, o):
                p.add_(update.view(shape).to(p.dtype), alpha=-scale)


def tta_logits(net, x):
    """EvalStep's level 2 in PyTorch: the image and its mirror 1/4 each, the pair shifted by one
    pixel up-left and down-right (reflect padding) 1/8 each."""
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect")
    h, w = x.shape[2:]
    logits = 0
    for view, weight in ((x, 0.25), (padded[:, :, :h, :w], 0.125), (padded[:, :, 2:, 2:], 0.125)):
        logits = logits + weight * (net(view).float() + net(view.flip(-1)).float())
    return logits


class Twin:
    """The PyTorch twin of a tnet run (see the module's docstring): one net and one compiled loss
    for every run, the weights loaded afresh for each; dtype: the net's (float16: BatchNorm in float32)."""

    def __init__(self, recipe, compile_mode, dtype=torch.float16):
        self.recipe, self.dtype = recipe, dtype
        self.device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        net = torch_airbench94().to(self.device, dtype).to(memory_format=torch.channels_last)
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.float()
        self.net = net
        smoothing = recipe.label_smoothing

        def loss_of(x, y):
            return torch.nn.functional.cross_entropy(net(x).float(), y, label_smoothing=smoothing, reduction="sum")
        self.loss_of = torch.compile(loss_of, mode=compile_mode) if compile_mode else loss_of

    def optimizers(self, training):
        """The recipe's optimizers over the twin's parameters, from tnet's Training of the same
        recipe: [(torch.optim.SGD or TorchMuon, each group's base lr, each group's schedule factor)]."""
        import tnet.optim
        params = dict(self.net.named_parameters())
        names = {id(p): name for name, p in training.model.named_parameters()}
        factors, out = list(training.schedule.lr_lambdas), []
        for m in training.opt.members:
            groups = m.param_groups
            mine, factors = factors[:len(groups)], factors[len(groups):]
            bases = [g.get("initial_lr", g["lr"]) for g in groups]
            if isinstance(m, tnet.optim.Muon):
                (g,) = groups
                opt = TorchMuon([params[names[id(p)]] for p in g["params"]], bases[0], g["momentum"], g["ns_steps"])
            else:
                opt = torch.optim.SGD([{"params": [params[names[id(p)]] for p in g["params"]],
                                        **{k: g[k] for k in ("lr", "momentum", "dampening", "weight_decay", "nesterov")}}
                                       for g in groups])
            out.append((opt, bases, mine))
        return out

    def run(self, seed, images, labels, test_x, test_y, eval_batch):
        """One run: (accuracy, training seconds, evaluation seconds)."""
        import tnet
        from tnet import data, models, recipes
        recipe, net = self.recipe, self.net
        sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
        loader = data.Loader(images, labels, recipe.batch_size, shuffle=True, augment=recipe.augment, seed=seed,
                             **recipe.loader)
        steps_per_epoch = len(loader)
        total = recipes.run_steps(recipe.epochs, steps_per_epoch)
        model = models.airbench94(seed=seed)
        sync()
        t0 = time.perf_counter()
        models.init_whitening(model, loader.images[:recipe.whitening_images])
        net.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in model.state_dict().items()})
        opts = self.optimizers(recipes.Training(recipe, model, steps_per_epoch, total))
        net.train()
        it = 0
        while it < total:
            for x, y in loader.batches():
                if it == total:
                    break
                x = (x.memory if isinstance(x, tnet.Tensor) else x).to(self.dtype).contiguous(memory_format=torch.channels_last)
                self.loss_of(x, y.memory if isinstance(y, tnet.Tensor) else y).backward()
                for opt, bases, factors in opts:
                    if isinstance(opt, TorchMuon):
                        opt.step(factors[0](it))
                        continue
                    for g, base, factor in zip(opt.param_groups, bases, factors):
                        g["lr"] = base * factor(it)
                    opt.step()
                net.zero_grad(set_to_none=True)
                it += 1
        sync()
        train_time = time.perf_counter() - t0
        t1 = time.perf_counter()
        net.eval()
        correct = torch.zeros((), dtype=torch.int64, device=self.device)
        with torch.no_grad():
            for i in range(0, len(test_x), eval_batch):
                x = torch.from_numpy(test_x[i:i + eval_batch]).to(self.device, self.dtype)
                y = torch.from_numpy(test_y[i:i + eval_batch]).to(self.device)
                correct += (tta_logits(net, x.contiguous(memory_format=torch.channels_last)).argmax(1) == y).sum()
        accuracy = correct.item() / len(test_x)
        return accuracy, train_time, time.perf_counter() - t1


def tnet_run(recipe_name, seed, data_dir, folder):
    """train.py's run of airbench94 with this recipe and seed: its report (trainer.report)."""
    from tnet import trainer
    args = trainer.parse_args(["--model", "airbench94", "--recipe", recipe_name, "--data", data_dir, "--seed", str(seed),
                               "--checkpoint", f"{folder}/seed{seed}.ckpt"])
    return trainer.Run(args, trainer.recipe_of(args)).run()


def run(args):
    from tnet import data
    from tnet.recipes import RECIPES
    recipe = RECIPES[args.recipe]
    sides = args.sides.split(",")
    if "torch" in sides and recipe.lookahead_every:
        raise SystemExit(f"bench.py runs: the PyTorch twin has no lookahead: --recipe {args.recipe} runs --sides tnet only")
    torch.backends.cudnn.benchmark = True
    runs = 1 if args.quick else args.runs
    rows, path = [], f"{args.out}/runs.json"
    settings = dict(recipe=args.recipe, runs=runs, compile_mode=args.compile_mode, data=args.data)
    if "tnet" in sides:
        with tempfile.TemporaryDirectory() as folder:
            for seed in range(runs):
                r = tnet_run(args.recipe, seed, args.data, folder)
                rows.append({"variant": "tnet", **r})
                write_json(path, "runs", rows, complete=False, **settings)
    if "torch" in sides:
        train_x, train_y, test_x, test_y = data.load_cifar10(args.data)
        train_x, test_x = recipe.inputs(train_x, test_x)
        twin = Twin(recipe, args.compile_mode)
        compile_start = time.perf_counter()
        twin.run(0, train_x, train_y, test_x, test_y, 2000)  # warm-up: torch.compile, cuDNN's benchmark
        settings["twin_first_run_s"] = time.perf_counter() - compile_start
        for seed in range(runs):
            accuracy, train_time, eval_time = twin.run(seed, train_x, train_y, test_x, test_y, 2000)
            rows.append({"variant": "torch twin", "seed": seed, "split": "test", "accuracy": accuracy,
                         "train_time": train_time, "eval_time": eval_time})
            write_json(path, "runs", rows, complete=False, **settings)
    print_header(COLUMNS)
    for r in rows:
        print_row(r, COLUMNS)
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    for v in variants:
        acc = [100 * r["accuracy"] for r in rows if r["variant"] == v]
        total = [r["train_time"] + r["eval_time"] for r in rows if r["variant"] == v]
        print(f"{v}: accuracy mean {statistics.mean(acc):.2f}% (std {statistics.stdev(acc) if len(acc) > 1 else 0:.2f}, "
              f"{min(acc):.2f}-{max(acc):.2f}); time mean {statistics.mean(total):.3f} s ({min(total):.3f}-{max(total):.3f})")
    write_json(path, "runs", rows, **settings)
    bars(f"{args.out}/runs.png", [f"seed {s}" for s in range(runs)],
         {v: [next((r["train_time"] + r["eval_time"] for r in rows if r["variant"] == v and r["seed"] == s), None)
              for s in range(runs)] for v in variants},
         f"airbench94, {args.recipe} recipe: seconds per run", "s")
