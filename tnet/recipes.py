"""Training recipes as data: each recipe's settings, parameter groups, schedule and phases, and
the training step they run. train.py fills a recipe's settings from the command line
(dataclasses.replace); `Training` turns a recipe and a model into a run's optimizer, schedule,
loss scaler, lookahead and captured steps.

    recipe = dataclasses.replace(RECIPES["airbench"], batch_size=512)
    training = Training(recipe, model, steps_per_epoch, run_steps(recipe.epochs, steps_per_epoch))
    training.capture(x, y)                       # after loading a checkpoint's states, if any
    for it in range(total):
        training.step_at(it)(x, y)               # (a new batch in x, y each time)
        training.schedule.step()
    training.finish()
"""
import dataclasses
import math
from typing import NamedTuple, Optional

import torch

from . import data, optim
from . import functional as F
from .amp import GradScaler, autocast
from .graph import TrainStep
from .tensor import Tensor

MODELS = {"cifar10_quick": "caffe", "airbench94": "airbench"}  # each model's default recipe
SCHEDULES = {"caffe": optim.caffe_quick, "one-cycle": optim.one_cycle, "airbench": optim.warmup_decay,
             "linear": optim.linear_decay}


class Precision(NamedTuple):
    gemm: str  # tnet.set_precision's GEMM precision for fp32 operands
    autocast: Optional[torch.dtype]  # the step's autocast dtype (None: no autocast)
    help: str


PRECISIONS = {
    "ieee": Precision("ieee", None, "fp32 tensors, exact fp32 products"),
    "tf32": Precision("tf32", None, "fp32 tensors, products in tf32 on the tensor cores, as cuDNN's"),
    "bf16": Precision("tf32", torch.bfloat16, "under tnet.autocast(bfloat16), 16-bit activations and GEMM operands, "
                                              "with fp32 sums, master weights, BatchNorm statistics and loss"),
    "fp16": Precision("tf32", torch.float16, "the same in float16, with a dynamic loss scale (tnet.amp.GradScaler) "
                                             "unless --no-grad-scaler"),
}

# the settings that train.py's options of the same names override
OPTIONS = ("epochs", "batch_size", "lr", "momentum", "weight_decay", "schedule", "augment", "label_smoothing", "tta",
           "precision", "grad_scaler", "eval_every")


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A recipe for SGD over every trainable parameter in one group, at lr and weight_decay as
    given (Caffe's recipe and the fast one). `name` is --recipe's; the fields from `epochs` to
    `eval_every` are train.py's options of the same names (OPTIONS); no option changes the rest."""
    name: str
    epochs: float  # passes over the training set; a fraction runs ceil(epochs x batches per epoch) steps
    batch_size: int  # images per step
    lr: float  # base learning rate
    momentum: float  # SGD momentum
    weight_decay: float  # L2 weight decay
    schedule: str  # the learning-rate schedule, a SCHEDULES name
    augment: bool  # random crops and horizontal flips
    label_smoothing: float  # share of the target spread over all classes
    tta: int  # test-time augmentation: 0 none, 1 mirror, 2 mirror and translate (EvalStep)
    precision: str  # a PRECISIONS name
    grad_scaler: bool  # with fp16, a dynamic loss scale
    eval_every: int  # evaluate every N epochs and after the last (0: after the last only)
    input_norm: str = "mean image"  # "mean image": pixels minus the training set's mean; "per channel": data.normalize
    loader: dict = dataclasses.field(default_factory=dict)  # data.Loader's options besides augment
    reduction: str = "mean"  # the cross-entropy's over the batch
    lookahead_every: Optional[int] = None  # optim.Lookahead's period (None: no lookahead)
    whiten_bias_epochs: Optional[int] = None  # the whitening conv's bias trains this long (None: throughout)
    # a model with a whitening conv (airbench94) has it set from the first N training images,
    # whatever its recipe: the net needs it
    whitening_images: int = 5000

    def options(self):
        """The settings that train.py's options override, by option name."""
        return {name: getattr(self, name) for name in OPTIONS}

    def check(self):
        """What makes these settings unusable for this recipe, or None."""
        return None

    def inputs(self, train_x, test_x):
        """float32 (train, test) images as this recipe feeds them, from uint8 ones."""
        if self.input_norm == "per channel":
            return data.normalize(train_x), data.normalize(test_x)
        return data.preprocess(train_x, test_x)

    def whiten_bias_steps(self, steps_per_epoch):
        """The steps over which the whitening bias trains (inf: all of them)."""
        return math.inf if self.whiten_bias_epochs is None else self.whiten_bias_epochs * steps_per_epoch

    def optimizer(self, model, steps_per_epoch, total):
        """SGD over model's trainable parameters and its schedule (a LambdaLR) for a run of
        `total` steps."""
        params = [p for p in model.parameters() if p.requires_grad]
        opt = optim.SGD(params, lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)
        return opt, optim.LambdaLR(opt, SCHEDULES[self.schedule](total))


@dataclasses.dataclass(frozen=True)
class Airbench(Recipe):
    """airbench94's recipe: Nesterov momentum, with lr and weight_decay in airbench's units:
    lr = lr / s and decay wd = weight_decay * batch_size / s with s = 1024 * (1 + 1 / (1 -
    momentum)), each group's weight_decay = wd / its lr as PyTorch's SGD; three groups: the
    weights (the whitening bias among them, as in airbench94), the BatchNorm shifts (named
    *norm*, airbench's rule) at bias_lr_scale times the lr with the same absolute decay, and the
    whitening bias, whose lr factor drops to 0 after whiten_bias_epochs (airbench stops its
    gradient; `Training` then runs a step captured without it). The loss is summed over the
    batch, without a loss scale in fp16 (the sum scales the gradients by the batch size, as
    airbench trains); a lookahead every 5 steps; the inputs normalised per channel, random
    translates by up to 2 pixels (reflect padding) and alternating flips, the last partial
    batch dropped."""
    input_norm: str = "per channel"
    loader: dict = dataclasses.field(default_factory=lambda: dict(pad=2, padding_mode="reflect", flip="alternate",
                                                                  drop_last=True))
    reduction: str = "sum"
    lookahead_every: Optional[int] = 5
    whiten_bias_epochs: Optional[int] = 3
    bias_lr_scale: float = 64

    def check(self):
        if not (self.momentum < 1 and self.lr > 0):
            return "the airbench recipe needs --momentum below 1 and --lr above 0 (its lr scale is 1 / (1 - momentum))"
        return None

    def optimizer(self, model, steps_per_epoch, total):
        named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
        factor = SCHEDULES[self.schedule](total)
        scale = 1024 * (1 + 1 / (1 - self.momentum))  # a Nesterov step's length in gradients, at a steady gradient
        lr, decay = self.lr / scale, self.weight_decay * self.batch_size / scale
        whiten_steps = self.whiten_bias_steps(steps_per_epoch)
        groups = [([p for name, p in named if "norm" not in name and name != "whiten.bias"], lr, factor),
                  ([p for name, p in named if "norm" in name], lr * self.bias_lr_scale, factor),
                  ([p for name, p in named if name == "whiten.bias"], lr,
                   lambda it: factor(it) if it < whiten_steps else 0.0)]
        groups = [g for g in groups if g[0]]
        opt = optim.SGD([{"params": params, "lr": group_lr, "weight_decay": decay / group_lr}
                         for params, group_lr, _ in groups], momentum=self.momentum, nesterov=True)
        return opt, optim.LambdaLR(opt, [f for *_, f in groups])


class Optimizers(optim.Optimizer):
    """Several optimizers stepped as one (a recipe's SGD and Muon): their param_groups in one list
    (the same dicts, so that one schedule sets them all), and one step(), zero_grad(),
    update_lr(), state_dict() and load_state_dict()."""

    def __init__(self, *members):
        # not Optimizer.__init__: the members hold the parameters, their state and the device copies
        self.members = members
        self.param_groups = [g for m in members for g in m.param_groups]
        self.defaults = {}
        self.state = {p: s for m in members for p, s in m.state.items()}

    def update_lr(self):
        for m in self.members:
            m.update_lr()

    def _step(self, scale=None, found_inf=None):
        for m in self.members:
            m._step(scale, found_inf)

    def zero_grad(self, set_to_none=True):
        for m in self.members:
            m.zero_grad(set_to_none)

    def state_dict(self):
        return {"optimizers": [m.state_dict() for m in self.members]}

    def load_state_dict(self, state_dict):
        saved = state_dict["optimizers"]
        if len(saved) != len(self.members):
            raise ValueError(f"Optimizers.load_state_dict: {len(saved)} optimizers' states for {len(self.members)}")
        for m, s in zip(self.members, saved):
            m.load_state_dict(s)


@dataclasses.dataclass(frozen=True)
class AirbenchMuon(Airbench):
    """airbench94_muon's recipe: Muon (tnet.optim.Muon with renormalize=True: no weight decay, each
    filter kept at norm sqrt(Cout), ns_steps Newton-Schulz steps) at `lr` and `momentum` on the
    convolutions' filters; SGD with Nesterov momentum sgd_momentum on the rest: the whitening bias
    and the BatchNorm shifts at bias_lr, the head at head_lr, each group's weight_decay =
    weight_decay * batch_size / its lr (a decay of weight_decay per image and step). Every lr decays
    linearly to 0 over the run, the whitening bias's over its whiten_bias_epochs. No lookahead.
    head_lr is airbench94_muon's, whose head divides its output by its width (256) and starts at
    std 1; tnet's airbench94 head multiplies by 1/9 from torch's default init (about the same
    function): the same steps take head_lr * (9 / 256)^2."""
    lookahead_every: Optional[int] = None
    sgd_momentum: float = 0.85
    bias_lr: float = 0.053
    head_lr: float = 0.67
    ns_steps: int = 3

    def check(self):
        if not (0 <= self.momentum < 1 and 0 <= self.sgd_momentum < 1):
            return "the muon recipe needs --momentum from 0 to below 1"
        return None

    def optimizer(self, model, steps_per_epoch, total):
        named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
        filters = [p for _, p in named if p.memory.dim() == 4]
        factor = SCHEDULES[self.schedule](total)
        whiten_steps = self.whiten_bias_steps(steps_per_epoch)
        decay = self.weight_decay * self.batch_size
        head_lr = self.head_lr * (9 / 256) ** 2
        groups = [([p for name, p in named if name == "whiten.bias"], self.bias_lr,
                   lambda it: max(0.0, 1 - it / whiten_steps)),
                  ([p for name, p in named if "norm" in name], self.bias_lr, factor),
                  ([p for name, p in named if p.memory.dim() < 4 and "norm" not in name and name != "whiten.bias"],
                   head_lr, factor)]
        groups = [g for g in groups if g[0]]
        sgd = optim.SGD([{"params": params, "lr": lr, "weight_decay": decay / lr} for params, lr, _ in groups],
                        momentum=self.sgd_momentum, nesterov=True)
        muon = optim.Muon(filters, lr=self.lr, momentum=self.momentum, weight_decay=0.0, ns_steps=self.ns_steps,
                          renormalize=True)
        opt = Optimizers(sgd, muon)
        return opt, optim.LambdaLR(opt, [f for *_, f in groups] + [factor])


RECIPES = {
    "caffe": Recipe("caffe", epochs=10, batch_size=100, lr=0.001, momentum=0.9, weight_decay=0.004, schedule="caffe",
                    augment=False, label_smoothing=0.0, tta=0, precision="tf32", grad_scaler=True, eval_every=1),
    "fast": Recipe("fast", epochs=40, batch_size=125, lr=0.01, momentum=0.9, weight_decay=0.001, schedule="one-cycle",
                   augment=True, label_smoothing=0.1, tta=1, precision="tf32", grad_scaler=True, eval_every=1),
    "airbench": Airbench("airbench", epochs=9.9, batch_size=1024, lr=11.5, momentum=0.85, weight_decay=0.0153,
                         schedule="airbench", augment=True, label_smoothing=0.2, tta=2, precision="fp16",
                         grad_scaler=False, eval_every=0),
    "muon": AirbenchMuon("muon", epochs=8, batch_size=2000, lr=0.24, momentum=0.6, weight_decay=2e-6,
                         schedule="linear", augment=True, label_smoothing=0.2, tta=2, precision="fp16",
                         grad_scaler=False, eval_every=0),
}


def run_steps(epochs, steps_per_epoch):
    """A run's steps: ceil(epochs x batches per epoch), airbench's rule (the 1e-9: 9.9 * 10 is
    99.00000000000001)."""
    return math.ceil(epochs * steps_per_epoch - 1e-9)


def make_train_step(model, opt, *, label_smoothing=0.0, dtype=None, scaler=None, reduction="mean", lookahead=None):
    """step(x, y) -> loss: one optimizer step of model on the batch (x, y) of torch tensors,
    returning the loss (a torch tensor). dtype: the forward pass and the loss under
    tnet.autocast(dtype=dtype) (None: no autocast); scaler: a tnet.amp.GradScaler that scales
    the loss and steps the optimizer (float16); reduction: the cross-entropy's over the batch;
    lookahead: a tnet.optim.Lookahead stepped after the optimizer."""
    def step(x, y):
        with autocast(dtype=dtype, enabled=dtype is not None):
            loss = F.cross_entropy(model(Tensor(x)), Tensor(y), label_smoothing=label_smoothing, reduction=reduction)
        opt.zero_grad()
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        if lookahead is not None:
            lookahead.step()
        return loss.memory
    return step


class Training:
    """A run of `total` steps of `recipe` on `model` (the step calls `forward`, model by default,
    or a tnet.distributed.DistributedDataParallel of it): its optimizer (opt), schedule, loss
    scaler and lookahead, made at once; load a checkpoint's states into them, then capture(x, y)
    captures the run's steps for batches shaped like (x, y). step_at(iteration) gives the step
    of that iteration's phase; the losses of every step add up in loss_sum; finish() makes the
    last update (the lookahead's)."""

    def __init__(self, recipe, model, steps_per_epoch, total, forward=None):
        self.recipe, self.model, self.total = recipe, model, total
        self.forward = model if forward is None else forward  # what the step calls: model, or its DDP wrapper
        self.dtype = PRECISIONS[recipe.precision].autocast
        # bfloat16 has fp32's range: no scale needed
        self.scaler = GradScaler(enabled=self.dtype == torch.float16 and recipe.grad_scaler)
        self.opt, self.schedule = recipe.optimizer(model, steps_per_epoch, total)
        self.lookahead = (None if recipe.lookahead_every is None
                          else optim.Lookahead(model, total, every=recipe.lookahead_every))
        # the whitening bias stops training after a few epochs (its group's lr falls to 0): a
        # second graph for the steps after, without its gradient, nor the input gradient of
        # the conv after it (block1.conv1's largest pass)
        bias = dict(model.named_parameters()).get("whiten.bias")
        self.bias_steps = math.inf if bias is None else recipe.whiten_bias_steps(steps_per_epoch)
        self.bias = None if self.bias_steps == math.inf else bias
        self.steps, self.loss_sum = {}, None

    def capture(self, x, y):
        """Capture the run's steps (TrainStep) for batches shaped like (x, y): one per phase."""
        first = self._capture(x, y)
        self.steps, self.loss_sum = {True: first}, first.loss_sum  # by whether the whitening bias trains
        if self.total > self.bias_steps:
            self.bias.requires_grad = False
            self.steps[False] = self._capture(x, y, self.loss_sum)
            self.bias.requires_grad = True

    def _capture(self, x, y, loss_sum=None):
        r = self.recipe
        step = make_train_step(self.forward, self.opt, label_smoothing=r.label_smoothing, dtype=self.dtype,
                               scaler=self.scaler, reduction=r.reduction, lookahead=self.lookahead)
        return TrainStep(step, x, y, state=(self.model, self.opt, self.scaler, self.lookahead), loss_sum=loss_sum)

    def step_at(self, iteration):
        """The captured step of iteration's phase; the whitening bias trains (requires_grad) or
        not as that step does, so that an eager call (a short batch, the CPU) matches it."""
        if self.bias is None:
            return self.steps[True]
        self.bias.requires_grad = iteration < self.bias_steps
        return self.steps[self.bias.requires_grad]

    def finish(self):
        """After the last step: the weights take the lookahead's average (airbench's last update)."""
        if self.lookahead is not None:
            self.lookahead.finish()
