"""Helpers and constants that the test files share: tolerances, the comparison that names the
worst element, tile configs one at a time, inputs paired with their float64 torch twins, and
spies on torch's operators and on kernel launches, and the ported scripts' runner (imports,
compare). A plain module: tests import it (`from helpers import ...`); conftest.py holds only
pytest's fixtures."""
import collections
import contextlib
import importlib
import math
import pkgutil
import time
import tracemalloc
import types
from unittest import mock

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import tnet
from tnet import trainer
from tnet.kernels.launch import raise_flagged

# the GPU machine runs torch 2.11, the CPU 2.13: reference behaviour new in 2.13 is checked only there
TORCH_BEFORE_2_13 = tuple(map(int, torch.__version__.split(".")[:2])) < (2, 13)
DEV = tnet.DEVICE
CL = torch.channels_last
TOL = {"ieee": 1e-5, "tf32": 2e-3, "bf16": 2e-2, "fp16": 1e-2}
# fp32 matmuls run in tf32 on the GPU by default (tnet.set_float32_matmul_precision's 'high')
MATMUL_TOL = TOL["tf32"] if DEV.type == "cuda" else TOL["ieee"]
# A 16-bit result's rounding alone (about 2^-9 and 2^-12 relative), with
# room, for outputs whose fp32 sums are exact but for their order (convolutions): TOL's 16-bit bounds
# let through a GPU miscompile that gave 1.5e-2 (docs/results.md, 2026-12-05)
ROUNDING = {"bf16": 6e-3, "fp16": 6e-4}

# 16-bit storage: each dtype's tolerance against float64 of the same rounded inputs.
LOW = (torch.float16, torch.bfloat16)
FLOATS = (torch.float32, *LOW)
# The "every config" tests run each tile config in every storage dtype on the GPU; under the
# interpreter the configs matter little and the 16-bit cases have their own tests, so fp32 only.
CONFIG_DTYPES = FLOATS if DEV.type == "cuda" else (torch.float32,)


def flag_checked(call):
    """call(), an op given a label or an index out of range: on the CPU its IndexError comes at once; on a GPU
    at a later flagging launch or host read, once the GPU has run this one (kernels/launch.py's check_flag):
    raised here after a synchronisation."""
    out = call()
    if DEV.type == "cuda":
        torch.cuda.synchronize()
        raise_flagged(DEV)
    return out


def tol_for(dtype, fp32_tol=TOL["ieee"]):
    """fp32_tol for float32, TOL["fp16"] or TOL["bf16"] for the 16-bit dtypes."""
    return {torch.float16: TOL["fp16"], torch.bfloat16: TOL["bf16"]}.get(dtype, fp32_tol)


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64; out and ref may be tnet, torch or numpy."""
    out, ref = (np.asarray(to_numpy(v), dtype=np.float64) for v in (out, ref))
    return np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30)


def dev(x, requires_grad=False):
    """A tnet tensor holding a copy of torch tensor x on tnet's device (tests build their inputs with
    torch on the CPU; the GPU's kernels cannot read host memory)."""
    return tnet.Tensor(x.to(DEV, copy=True), requires_grad)


def host(t):
    """tnet tensor t's memory as a torch tensor on the CPU, beside torch's CPU reference."""
    return t.memory.cpu()


def to_numpy(v):
    if isinstance(v, tnet.Tensor):
        v = v.memory
    if isinstance(v, torch.Tensor):  # numpy has no bfloat16: float64 holds every 16-bit value
        return v.detach().cpu().to(torch.float64 if v.dtype == torch.bfloat16 else v.dtype).numpy()
    return v


def assert_close(out, ref, tol, what=""):
    out, ref = (np.asarray(to_numpy(v), dtype=np.float64) for v in (out, ref))
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != {ref.shape}"
    err = rel_err(out, ref)
    if not (err <= tol):  # also catches NaN
        i = np.unravel_index(np.nanargmax(np.abs(out - ref)), out.shape) if out.size else ()
        pytest.fail(f"{what}: relative error {err:.3g} > {tol:g}; worst element at {i}: "
                    f"{out[i]!r} vs reference {ref[i]!r}")


def check_op(fn_tnet, fn_torch, inputs, tol, seed_rng):
    """The forward and every input's gradient (where torch's requires one) against torch;
    inputs are (tnet leaf, torch leaf) pairs. Returns tnet's output."""
    out, ref = fn_tnet(*[t for t, _ in inputs]), fn_torch(*[r for _, r in inputs])
    assert_close(out, ref, tol, "forward")
    g = seed_rng.standard_normal(ref.shape)
    out.backward(g)
    ref.backward(torch.tensor(g).to(out.dtype).double().to(ref.device))  # the seed as tnet rounds it to out's dtype
    for i, (t, r) in enumerate(inputs):
        if r.requires_grad:
            assert_close(t.grad, r.grad, tol, f"gradient of input {i}")
    return out


# ---- tile configs, one at a time -------------------------------------------------------------

def only_config(monkeypatch, kernel, config):
    """Make the autotuned `kernel` run `config` alone, for this test: its configs, and the config
    and kernel it remembers for each tuning key and call (autotune._Remembered), which would otherwise win."""
    monkeypatch.setattr(kernel, "configs", [config])
    monkeypatch.setattr(kernel, "chosen", {})
    monkeypatch.setattr(kernel, "launches", {})


def config_indices(kernels):
    """range(n), n the most tile configs that one of the autotuned kernels has: the ids of a
    test that runs each config."""
    return range(max(len(k.all_configs) for k in kernels))


def only_ith_config(monkeypatch, kernels, i):
    """Make each autotuned kernel run its i-th config alone (its last where it has fewer), for
    this test; on the GPU the other tests run only the first (TNET_AUTOTUNE=0)."""
    for k in kernels:
        only_config(monkeypatch, k, k.all_configs[min(i, len(k.all_configs) - 1)])


# ---- inputs: device tensors, and tnet leaves beside their float64 torch twins ----------------

def randn(*shape, gen=[0]):
    """Standard normal values on the device, float32, from a new seed at each call."""
    gen[0] += 1
    g = torch.Generator().manual_seed(gen[0])
    return torch.randn(*shape, generator=g).to(DEV)


def cl_randn(*shape):
    """randn in channels-last memory."""
    return randn(*shape).contiguous(memory_format=CL)


def f64(x):
    """A torch tensor as float64 on the CPU: the reference's dtype."""
    return x.double().cpu()


def pair(rng, *shape, scale=1.0, dtype=torch.float32, channels_last=False):
    """A tnet leaf of dtype (channels-last memory if asked) and the float64 torch leaf with the
    same (rounded) values: standard normal times scale."""
    t = tnet.tensor(rng.standard_normal(shape) * scale, requires_grad=True, dtype=dtype)
    ref = t.memory.double().cpu().requires_grad_(True)
    if channels_last:
        t.memory = t.memory.contiguous(memory_format=CL)
    return t, ref


def leaf(rng, *shape, channels_last=False, positive=False, values=None, dtype=torch.float32):
    """A tnet leaf of dtype (channels-last memory if asked) and the float64 torch leaf with the same
    (rounded) values: standard normal, spread over magnitudes 0.01 to 5 (tanh's series and exp
    branches; to 2 in 16 bits, where exp(15) would overflow float16), or > 0.5."""
    big = 5.0 if dtype == torch.float32 else 2.0
    a = rng.standard_normal(shape) * rng.choice([0.01, 1.0, big], shape) if values is None else values
    a = np.abs(a) + 0.5 if positive else a
    t = tnet.tensor(a, dtype=dtype)
    ref = t.memory.double().cpu().requires_grad_(True)
    if channels_last:
        t.memory = t.memory.contiguous(memory_format=CL)
    t.requires_grad = True
    return t, ref


def check(fn_tnet, fn_torch, inputs, rng, tol=TOL["ieee"]):
    """Forward and every input's gradient against torch; returns tnet's output."""
    return check_op(fn_tnet, fn_torch, inputs, tol, rng)


# ---- spies: which torch operators and which kernel launches a step runs ----------------------

MEMORY_OPS = {  # the aten operators that only allocate, fill, copy or view: torch as memory
    # allocation and fill
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "ones", "ones_like", "full", "full_like", "new_zeros", "new_full", "new_ones", "fill", "fill_", "zero_",
    "scalar_tensor", "lift_fresh", "lift_fresh_copy", "set_",
    # copies
    "copy", "copy_", "_to_copy", "clone", "contiguous", "_copy_from", "_local_scalar_dense",
    # views
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "as_strided", "slice",
    "select", "unsqueeze", "squeeze", "detach", "alias", "unbind", "split", "narrow",
}


class Recorder(TorchDispatchMode):
    """Records the name of every aten operator that runs inside `with Recorder() as rec:` in rec.ops."""

    def __init__(self):
        super().__init__()
        self.ops = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


class Launches:
    """Stands in for a kernel: counts its launches and keeps their arguments in `log`."""

    def __init__(self, kernel, log):
        self.kernel, self.log = kernel, log

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.log.append((self.kernel, grid, args, kwargs))
            return self.kernel[grid](*args, **kwargs)
        return launch

    def __getattr__(self, name):  # the kernel's own attributes (an autotuned one's configs)
        return getattr(self.kernel, name)


def launches(monkeypatch, fn):
    """The kernel launches fn() makes, by kernel name (every *_kernel of tnet.kernels counted; on a GPU a launch
    that autotune.launch_kept keeps goes uncounted after its first)."""
    log = []
    for info in pkgutil.iter_modules(tnet.kernels.__path__):
        module = importlib.import_module(f"tnet.kernels.{info.name}")
        for attr in dir(module):
            if attr.endswith("_kernel"):
                monkeypatch.setattr(module, attr, Launches(getattr(module, attr), log))
    fn()
    return collections.Counter(getattr(kernel, "__name__", getattr(kernel, "fn", kernel).__name__)
                               for kernel, *_ in log)


# ---- files ----------------------------------------------------------------------------------

class Touch:
    """Unpickling this creates the file `path`: what a malicious pickle could do."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def peak_bytes(fn):
    """The peak of Python's traced allocations while fn() runs."""
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def train_main(argv):
    """train.py's main in-process: the options of argv, the recipe they fill, the run."""
    args = trainer.parse_args(argv)
    return trainer.train(args, trainer.recipe_of(args))


def write_bin_pack(root, n_train=20, n_test=10, seed=0):
    """A tiny pack in the official binary layout."""
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    for name, n in [(f"data_batch_{i}.bin", n_train // 5) for i in range(1, 6)] + [("test_batch.bin", n_test)]:
        rec = rng.integers(0, 256, (n, 3073), dtype=np.uint8)
        rec[:, 0] = rng.integers(0, 10, n)
        rec.tofile(folder / name)
    return root


# ---- training side by side: the model zoo (tests/test_zoo.py) -------------------------------

def cross_entropy(F, logits, y):
    return F.cross_entropy(logits, y)


def train_record(model, sgd, F, x, y, steps=2, loss_fn=cross_entropy, **settings):
    """What `steps` SGD steps (sgd: tnet's or torch's optim.SGD, with settings) of model on the
    batch (x, y) do, as float64 numpy arrays by name: each step's "loss" and "logits", each
    parameter's gradient ("grad <name>", where it has one) and each parameter's "change" over
    the steps. The same code trains tnet and torch models (F: their functional module; the loss
    loss_fn(F, logits, y), cross-entropy unless given)."""
    params = dict(model.named_parameters())
    before = {name: to_numpy(p.detach()).astype(np.float64) for name, p in params.items()}
    opt = sgd([p for p in params.values() if p.requires_grad], **settings)
    record = {}
    for step in range(steps):
        opt.zero_grad()
        logits = model(x)
        loss = loss_fn(F, logits, y)
        loss.backward()
        opt.step()
        record[f"step {step} loss"] = np.float64(loss.item())
        main = logits[0] if isinstance(logits, tuple) else logits  # (logits, aux logits) as Inception's
        record[f"step {step} logits"] = to_numpy(main.detach()).astype(np.float64)
        record.update({f"step {step} grad {name}": to_numpy(p.grad).astype(np.float64)
                       for name, p in params.items() if p.grad is not None})
    record.update({f"change {name}": to_numpy(p.detach()).astype(np.float64) - before[name]
                   for name, p in params.items()})
    return record


def calibrate_batch_norm(model, x):
    """Set every torch BatchNorm's running statistics to the batch x's own (a training-mode
    forward at momentum 1, no gradients), then eval mode: the activations keep unit scale as in
    training mode, but each BatchNorm is a fixed affine map."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.momentum = 1.0
    model.train()
    with torch.no_grad():
        model(x)
    for m, momentum in zip(norms, momenta):
        m.momentum = momentum
    return model.eval()


class Kinks(TorchDispatchMode):
    """Inside `with Kinks() as k:` torch's ReLUs and max pools keep their inputs in k.sites, in
    call order: (op, input, pooling's (kernel, stride, padding) or None). Where an input sits near
    a kink (a ReLU input near 0, two near-equal maxima in a pooling window), a rounding error
    changes which elements the gradient flows through."""
    RELUS = ("relu", "relu_")

    def __init__(self):
        super().__init__()
        self.sites = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        op = func.overloadpacket.__name__
        if op in self.RELUS:
            self.sites.append((op, args[0].detach().clone(), None))
        elif op == "max_pool2d_with_indices":
            kernel = args[1]
            stride = args[2] if len(args) > 2 and args[2] else kernel  # [] means the kernel's
            padding = args[3] if len(args) > 3 else 0
            self.sites.append((op, args[0].detach().clone(), (kernel, stride, padding)))
        return func(*args, **(kwargs or {}))


def kink_distances(x, pool):
    """Each ReLU input's |value| (ReLU: pool None), or each max pooling window's gap between
    its two largest values, as the same-shaped tensor of a value per element or window."""
    if pool is None:
        return x.abs()
    k, s, p = ((v, v) if isinstance(v, int) else tuple(v) for v in pool)
    padded = torch.nn.functional.pad(x, (p[1], p[1], p[0], p[0]), value=-torch.inf)
    windows = padded.unfold(2, k[0], s[0]).unfold(3, k[1], s[1]).flatten(-2)
    top = windows.topk(2, dim=-1).values
    return top[..., 0] - top[..., 1]


def kink_margin(sites, sites32):
    """How far the float64 run (`sites`, from Kinks) stays from every kink, in units of the float32
    run's largest error on the same channel of the same op's input: the smallest |ReLU input|
    or pooling gap over that error (an input exactly at a kink in both runs, a zero from an earlier
    ReLU or a maximum copied twice, is no risk: every rounding keeps it). Below 1, float32 may
    already take the other side; tnet, rounding in its own order, must stay on float64's side."""
    margin = np.inf
    for (_, x, pool), (_, x32, _) in zip(sites, sites32):
        dims = [d for d in range(x.ndim) if d != 1]
        err = (x32.double() - x).abs().amax(dim=dims, keepdim=True)  # per channel
        dist, dist32 = kink_distances(x, pool), kink_distances(x32.double(), pool)
        exact = (dist == 0) & (dist32 == 0)
        ratio = (dist / err.clamp_min(1e-300)).masked_fill(exact, np.inf)
        if ratio.numel():
            margin = min(margin, ratio.min().item())
    return margin


# ---- a model trained beside PyTorch's float32 and float64 (tests/test_zoo.py, test_ported_scripts8.py) ----

SGD = dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)  # issue 26's two steps
STEPS = 2
SIDE_TOL = 1e-4  # fp32 against float64 through two steps (tests/test_resnet.py's)
# times PyTorch fp32's own error, where that is larger: that error is itself one summation order's luck, and
# tnet's kernels sum in others (MobileNet's first BatchNorm weight gradient crossed 10x under the depthwise
# weight gradient by rows: docs/results.md, nineteenth session)
FACTOR = 12
# times PyTorch fp32's error on a piece that fp32 cannot resolve at all (that error 1 or more: a
# gradient that is zero but for rounding, as EfficientNet's BatchNorm before its squeeze-excite or
# a convolution's bias before a BatchNorm: noise in another summation order, not a digit of the
# result), or times fp32's rounding (FP32_EPS) of the largest piece of its kind, where that is larger
# (PyTorch's fp32 noise may happen to be zero)
NOISE_FACTOR = 100
FP32_EPS = 2.0 ** -23
MARGIN = 2  # the float64 run's distance to every kink, in PyTorch fp32's largest error on that channel
SEEDS = 16  # batches tried for one that keeps MARGIN


@contextlib.contextmanager
def stage(name, what):
    """Fail with the step that failed and tnet's error: which piece of the model does not port."""
    try:
        yield
    except Exception as e:
        pytest.fail(f"{name}: {what} in tnet failed: {type(e).__name__}: {e}", pytrace=False)


def lib(name):
    """(torch, nn, F) of "torch" or "tnet": the names a model file imports."""
    return (importlib.import_module(name), importlib.import_module(f"{name}.nn"),
            importlib.import_module(f"{name}.nn.functional"))


class Side(types.SimpleNamespace):
    """How a model trains beside PyTorch: `shape` its batch's (seeded standard normal), `classes` its
    labels' range, `train` the mode of its steps (False: eval mode, BatchNorm on its running
    statistics and dropout off), `loss_fn` as train_record's."""

    def __init__(self, shape, classes=10, train=True, loss_fn=cross_entropy):
        super().__init__(shape=tuple(shape), classes=classes, train=train, loss_fn=loss_fn)

    def batch(self, seed):
        gen = torch.Generator().manual_seed(seed)
        return torch.randn(*self.shape, generator=gen), torch.randint(0, self.classes, self.shape[:1], generator=gen)


def torch_pair(build, size, state, side):
    """PyTorch's model in float32 and float64 (on tnet's device), both holding `state` (numpy)."""
    values = {k: torch.from_numpy(np.asarray(v)) for k, v in state.items()}
    models = []
    for dtype in (torch.float32, torch.float64):
        model = build(*lib("torch"), **size)
        model.load_state_dict(values)
        models.append(model.to(DEV, dtype).train(side.train))
    return models


def buffers(model):
    """The BatchNorm running statistics after the steps, by name, as float64 numpy arrays."""
    return {f"buffer {name}": to_numpy(b).astype(np.float64) for name, b in model.named_buffers()
            if "running" in name}


def reference(build, size, state, side):
    """PyTorch's float64 and float32 records of the steps (train_record) from `state`, on the first
    batch (seed 0, 1, ...) whose float64 run keeps MARGIN from every kink (the one that comes
    nearest, if none of SEEDS does), with that batch, its seed and its margin."""
    F = lib("torch")[2]
    best = None
    for seed in range(SEEDS):
        x, y = side.batch(seed)
        m32, m64 = torch_pair(build, size, state, side)
        with Kinks() as k64:
            rec64 = train_record(m64, torch.optim.SGD, F, x.to(DEV, torch.float64), y.to(DEV), STEPS, side.loss_fn, **SGD)
        with Kinks() as k32:
            rec32 = train_record(m32, torch.optim.SGD, F, x.to(DEV), y.to(DEV), STEPS, side.loss_fn, **SGD)
        margin = kink_margin(k64.sites, k32.sites)
        rec64.update(buffers(m64))
        rec32.update(buffers(m32))
        if best is None or margin > best[-1]:
            best = (rec64, rec32, (x, y), seed, margin)
        if margin >= MARGIN:
            break
    return best


def compare_records(name, rec, rec64, rec32, seed, margin):
    """Each piece of tnet's record against float64's, within max(SIDE_TOL, FACTOR x PyTorch fp32's
    error on it), or NOISE_FACTOR x where fp32 has no digit of it; one failure lists every piece out
    of bounds, worst first."""
    missing = sorted(set(rec64) - set(rec))
    extra = sorted(set(rec) - set(rec64))
    assert not missing and not extra, f"{name}: tnet's steps lack {missing} and have {extra} that PyTorch's lack"
    def kind(key):  # "step 0 grad", "change", "buffer": the key less its parameter's name
        return key.rsplit(" ", 1)[0]
    scale = {}
    for key, ref in rec64.items():
        scale[kind(key)] = max(scale.get(kind(key), 0.0), np.linalg.norm(ref))
    rows = []
    for key, ref in rec64.items():
        err, err32 = rel_err(rec[key], ref), rel_err(rec32[key], ref)
        bound = max(SIDE_TOL, FACTOR * err32)
        if err32 >= 1:
            floor = FP32_EPS * scale[kind(key)] / max(np.linalg.norm(ref), 1e-30)
            bound = max(SIDE_TOL, NOISE_FACTOR * max(err32, floor))
        if not err <= bound:  # also catches NaN
            rows.append((err / bound if bound else np.inf, key, err, err32, bound))
    rows.sort(key=lambda r: -r[0] if np.isfinite(r[0]) else -np.inf)
    if rows:
        lines = [f"  {key}: relative error {err:.3g} > {bound:.3g} (PyTorch fp32's {err32:.3g})"
                 for _, key, err, err32, bound in rows[:12]]
        more = f"\n  ... and {len(rows) - 12} more" if len(rows) > 12 else ""
        pytest.fail(f"{name}: {len(rows)} of {len(rec64)} pieces off float64 (batch seed {seed}, kink margin "
                    f"{margin:.3g}):\n" + "\n".join(lines) + more, pytrace=False)


def train_beside_torch(name, build, size, side):
    """Build `build(torch, nn, F, **size)` in tnet, copy its initial weights (state_dict) into the
    same model in PyTorch float32 and float64, train STEPS SGD steps (Nesterov, weight decay) of
    each on one batch and compare (compare_records); tnet's side runs under the Recorder: no
    torch math. Returns the seconds of PyTorch's side and of tnet's."""
    tnet.manual_seed(0)
    with stage(name, "constructing the model"):
        model = build(*lib("tnet"), **size)
    with stage(name, "state_dict()"):
        state = model.state_dict()
    shapes = {k: tuple(np.shape(v)) for k, v in state.items()}
    torch_shapes = {k: tuple(v.shape) for k, v in build(*lib("torch"), **size).state_dict().items()}
    assert shapes == torch_shapes, (f"{name}: the state_dicts differ: tnet's {sorted(shapes.items() - torch_shapes.items())}"
                                    f", PyTorch's {sorted(torch_shapes.items() - shapes.items())}")
    start = time.perf_counter()
    rec64, rec32, (x, y), seed, margin = reference(build, size, state, side)
    torch_s = time.perf_counter() - start
    start = time.perf_counter()
    model.train(side.train)
    with stage(name, f"training {STEPS} SGD steps"), Recorder() as ops:
        rec = train_record(model, tnet.optim.SGD, lib("tnet")[2], tnet.tensor(x), tnet.tensor(y), STEPS, side.loss_fn, **SGD)
        rec.update(buffers(model))
    tnet_s = time.perf_counter() - start
    compare_records(name, rec, rec64, rec32, seed, margin)
    assert ops.ops <= MEMORY_OPS, f"{name}: torch math inside tnet: {sorted(ops.ops - MEMORY_OPS)}"
    return torch_s, tnet_s


# ---- ported scripts (test_ported_scripts*.py): a script written once against the names it imports ----

def imports(name):
    """What a script imports, from torch or from tnet: `import torch`, `import torch.nn as nn`,
    `import torch.nn.functional as F`, `import torch.optim as optim`, `from torch.utils import data`."""
    return types.SimpleNamespace(torch=importlib.import_module(name), nn=importlib.import_module(name + ".nn"),
                                 F=importlib.import_module(name + ".nn.functional"),
                                 optim=importlib.import_module(name + ".optim"),
                                 lr_scheduler=importlib.import_module(name + ".optim.lr_scheduler"),
                                 data=importlib.import_module(name + ".utils.data"))


def batches(seed, n, shape, classes=10):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape).astype(np.float32), rng.integers(0, classes, shape[0])) for _ in range(n)]


def initial_state(model):
    """A numpy copy of a model's state_dict (tnet's or torch's: tensors on the module's memory, so a copy
    keeps the state of now)."""
    return {k: np.array(v if isinstance(v, np.ndarray) else v.detach().cpu().numpy()) for k, v in
            model.state_dict().items()}


def load(m, model, state):
    if state is not None:
        model.load_state_dict({k: m.torch.tensor(v) for k, v in state.items()})
    return initial_state(model)


def replayed(m, replay, key, t):
    """t as tnet drew it: tnet's run keeps its draw under key, torch's run takes that draw in place of its own
    (a script that draws with the library's generator, whose numbers differ between the two)."""
    return m.torch.tensor(replay.setdefault(key, t.detach().cpu().numpy().copy()))


def summary(params):
    """A few numbers of the weights after the steps: each parameter's sum and sum of squares, taken on the host
    in float64 (no kernel launches: under the interpreter each costs tens of milliseconds)."""
    out = []
    for p in params:
        v = np.asarray(to_numpy(p.detach()), dtype=np.float64)
        out += [float(v.sum()), float((v ** 2).sum())]
    return out


def compare(script, atol=1e-5, **kwargs):
    """Run script with tnet, then with torch from tnet's initial weights; the losses agree. Both in
    exact fp32 products: on the GPU each side's TF32 rounds differently, and a few steps of a small
    network can amplify that past the tolerance. torch runs on the CPU (torch.cuda.is_available()
    False for it): a script that keeps some tensors on "cpu", which tnet's one device serves, is a
    valid torch script only where every tensor is there. atol: for losses near zero whose last digits
    a script's steps amplify (adversarial, mined triplets)."""
    previous, flags = tnet.set_precision("ieee"), (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        init, losses = script(imports("tnet"), **kwargs)
        assert all(math.isfinite(v) for v in losses), losses
        with mock.patch.object(torch.cuda, "is_available", lambda: False):
            _, ref = script(imports("torch"), state=init, **kwargs)
    finally:
        tnet.set_precision(previous)
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags
    np.testing.assert_allclose(losses, ref, rtol=TOL["tf32"] * 5, atol=atol)
    return losses
