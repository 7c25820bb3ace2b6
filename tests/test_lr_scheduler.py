"""tnet.optim.lr_scheduler against torch.optim.lr_scheduler: the lr (and momentum) sequences to
the last bit on the same optimizer config, the steps they give reaching the device (also as a
CUDA graph replays them), state_dict and resuming, and torch's errors; ReduceLROnPlateau's lrs and
counters over a metric sequence."""
import numpy as np
import pytest
import torch

import tnet
from tnet import nn, optim
from tnet.optim.lr_scheduler import LambdaLR, OneCycleLR, StepLR
from helpers import TOL, Launches, assert_close

SCHEDULERS = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 7, "eta_min": 0.001}),  # past T_max: torch's recursive form rises again
    ("LinearLR", {"start_factor": 0.25, "total_iters": 6}),
    ("ConstantLR", {"factor": 0.5, "total_iters": 4}),
    ("PolynomialLR", {"total_iters": 6, "power": 2.0}),
    ("LambdaLR", {"lr_lambda": [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]}),
    ("MultiplicativeLR", {"lr_lambda": lambda e: 0.95}),
    ("OneCycleLR", {"max_lr": [0.5, 0.2], "total_steps": 20}),
    ("OneCycleLR", {"max_lr": 0.5, "epochs": 4, "steps_per_epoch": 5, "three_phase": True, "anneal_strategy": "linear",
                    "pct_start": 0.25, "base_momentum": 0.8, "max_momentum": [0.9, 0.99]}),
]
OPTIMIZERS = [("SGD", {"momentum": 0.9}), ("Adam", {}), ("AdamW", {"betas": (0.8, 0.99)})]
STEPS = 19


def make(name, kwargs, rng, shapes=((5, 3), (7,))):
    """Two param groups (the second its own lr), in tnet and in torch float64, same values."""
    params = [nn.Parameter(rng.standard_normal(s)) for s in shapes]
    refs = [torch.tensor(p.numpy(), dtype=torch.float64, requires_grad=True) for p in params]
    groups = lambda ps: [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.03}]
    opt = getattr(optim, name)(groups(params), lr=0.1, **kwargs)
    ref = getattr(torch.optim, name)(groups(refs), lr=0.1, foreach=False, **kwargs)
    return params, refs, opt, ref


def momenta(opt):
    return [g.get("momentum", g.get("betas")) for g in opt.param_groups]


def ids(cases):
    return [f"{n}-{'-'.join(k)}" for n, k in cases]


@pytest.mark.parametrize("opt_name,opt_kwargs", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=ids(SCHEDULERS))
def test_lr_sequence_is_torchs(name, kwargs, opt_name, opt_kwargs, rng):
    """The constructor's lrs and every step's, to the last bit, and the cycled momentum or beta1."""
    _, _, opt, ref = make(opt_name, opt_kwargs, rng)
    sched = getattr(optim.lr_scheduler, name)(opt, **kwargs)
    ref_sched = getattr(torch.optim.lr_scheduler, name)(ref, **kwargs)
    for step in range(STEPS):
        assert sched.get_last_lr() == ref_sched.get_last_lr(), f"{name} lr at step {step}"
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in ref.param_groups]
        assert momenta(opt) == [tuple(m) if isinstance(m, tuple) else m for m in momenta(ref)], f"momentum {step}"
        assert sched.last_epoch == ref_sched.last_epoch and sched.base_lrs == ref_sched.base_lrs
        opt.step()
        ref.step()
        sched.step()
        ref_sched.step()


@pytest.mark.parametrize("opt_name,opt_kwargs", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
def test_scheduled_steps_reach_the_device(opt_name, opt_kwargs, monkeypatch, rng):
    """OneCycleLR changes the lr and the momentum (beta1) at every step; step 0's launches,
    replayed for the later steps as a CUDA graph replays them (new gradients copied into the
    same tensors), still take torch's steps: the scheduler's values reach the kernel."""
    from tnet.kernels import optim as kernels
    log = []
    monkeypatch.setattr(kernels, "step_kernel", Launches(kernels.step_kernel, log))
    monkeypatch.setattr(kernels, "count_steps_kernel", Launches(kernels.count_steps_kernel, log))
    params, refs, opt, ref = make(opt_name, opt_kwargs, rng)
    kwargs = {"max_lr": [0.05, 0.02], "total_steps": 6}
    sched, ref_sched = OneCycleLR(opt, **kwargs), torch.optim.lr_scheduler.OneCycleLR(ref, **kwargs)
    for p, r in zip(params, refs):
        r.grad = torch.tensor(rng.standard_normal(p.shape))
        p.grad = tnet.tensor(r.grad.numpy())
    opt.step()
    launches = list(log)
    for step in range(1, 5):
        ref.step()
        sched.step()
        ref_sched.step()
        for p, r in zip(params, refs):
            r.grad = torch.tensor(rng.standard_normal(p.shape))
            p.grad.memory.copy_(r.grad)
        for kernel, grid, args, launch_kwargs in launches:
            kernel[grid](*args, **launch_kwargs)
    ref.step()
    for i, (p, r) in enumerate(zip(params, refs)):
        assert_close(p, r, TOL["ieee"], f"{opt_name} parameter {i}")


def test_state_dict_resumes(rng):
    """torch's keys (every attribute but the optimizer), plain values that tnet.save stores; a
    new scheduler that loads it, with the optimizer's state, goes on as the first."""
    _, _, opt, ref = make("SGD", {"momentum": 0.9}, rng)
    kwargs = {"max_lr": 0.4, "total_steps": 12}
    sched, ref_sched = OneCycleLR(opt, **kwargs), torch.optim.lr_scheduler.OneCycleLR(ref, **kwargs)
    for _ in range(5):
        ref.step()
        sched.step()
        ref_sched.step()
    state = sched.state_dict()
    assert set(state) == set(ref_sched.state_dict())
    assert "optimizer" not in state and state["last_epoch"] == 5
    _, _, opt2, _ = make("SGD", {"momentum": 0.9}, rng)
    resumed = OneCycleLR(opt2, **kwargs)
    opt2.load_state_dict(opt.state_dict())
    resumed.load_state_dict(state)
    for _ in range(6):
        sched.step()
        resumed.step()
        assert resumed.get_last_lr() == sched.get_last_lr() and momenta(opt2) == momenta(opt)
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]


def test_get_lr_sees_whether_step_called_it(rng):
    """_get_lr_called_within_step, True while step() (the constructor's first too, the deprecated
    step(epoch), CosineAnnealingWarmRestarts' own step) calls get_lr and False after, as torch's:
    warm-up subclasses (huyvnphan/PyTorch_CIFAR10's WarmupCosineLR) read it to warn a direct call."""
    def seen(lib, opt):
        calls = []

        class Warmup(lib.optim.lr_scheduler._LRScheduler):
            def get_lr(self):
                calls.append(self._get_lr_called_within_step)
                return self.base_lrs

        sched = Warmup(opt)
        sched.step()
        sched.get_lr()
        with pytest.warns(UserWarning):
            sched.step(3)
        restarts = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
        restarts.step()
        return calls + [sched._get_lr_called_within_step, restarts._get_lr_called_within_step]

    _, _, opt, ref = make("SGD", {}, rng)
    assert seen(tnet, opt) == seen(torch, ref) == [True, True, False, True, False, False]


def test_lambda_lr_keeps_tnets_checkpoints(tmp_path, rng):
    """LambdaLR, which tnet's recipes use: `iteration` and its key in the state (train.py's
    checkpoints read it), the state saved by tnet.save, and the older {"iteration": n}."""
    _, _, opt, _ = make("SGD", {}, rng)
    sched = optim.LambdaLR(opt, lambda it: 0.5 ** it)
    assert optim.LambdaLR is LambdaLR is optim.lr_scheduler.LambdaLR
    for _ in range(3):
        sched.step()
    assert sched.iteration == 3 and sched.state_dict()["iteration"] == 3
    tnet.save({"schedule": sched.state_dict()}, str(tmp_path / "ck.npz"))
    _, _, opt2, _ = make("SGD", {}, rng)
    resumed = optim.LambdaLR(opt2, lambda it: 0.5 ** it)
    resumed.load_state_dict(tnet.load(str(tmp_path / "ck.npz"))["schedule"])
    assert resumed.iteration == 3 and resumed.base_lrs == [0.1, 0.03]
    _, _, opt3, _ = make("SGD", {}, rng)
    old = optim.LambdaLR(opt3, lambda it: 0.5 ** it)
    old.load_state_dict({"iteration": 2})
    assert old.iteration == 2 and [g["lr"] for g in opt3.param_groups] == [0.1 / 4, 0.03 / 4]
    for s in (resumed, old):
        s.step()
    assert old.get_last_lr() == [0.1 / 8, 0.03 / 8] and resumed.get_last_lr() == [0.1 / 16, 0.03 / 16]


def test_sequential_lr_and_deprecated_epoch_match_torch(rng):
    _, _, opt, ref = make("SGD", {"momentum": 0.9}, rng)
    make_seq = lambda o, lrs: lrs.SequentialLR(o, [lrs.LinearLR(o, 0.1, total_iters=3),
                                                   lrs.CosineAnnealingLR(o, T_max=6)], milestones=[4])
    sched, ref_sched = make_seq(opt, optim.lr_scheduler), make_seq(ref, torch.optim.lr_scheduler)
    for step in range(10):
        assert sched.get_last_lr() == ref_sched.get_last_lr(), f"step {step}"
        ref.step()
        sched.step()
        ref_sched.step()
    _, _, opt, ref = make("SGD", {}, rng)
    sched, ref_sched = StepLR(opt, 2), torch.optim.lr_scheduler.StepLR(ref, 2)
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(7)
    with pytest.warns(UserWarning):
        ref_sched.step(7)
    assert sched.get_last_lr() == ref_sched.get_last_lr()


def test_errors_are_torchs(rng):
    _, _, opt, _ = make("SGD", {}, rng)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        StepLR(torch.optim.SGD([torch.zeros(1, requires_grad=True)]), 2)
    with pytest.raises(KeyError, match="initial_lr"):
        StepLR(opt, 2, last_epoch=3)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="total_steps OR"):
        OneCycleLR(opt, 0.1)
    _, _, adam, _ = make("Adam", {}, rng)
    sched = OneCycleLR(adam, 0.1, total_steps=2)
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        sched.step()
    opt.defaults = {k: v for k, v in opt.defaults.items() if k != "momentum"}  # an optimizer without momentum
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        OneCycleLR(opt, 0.1, total_steps=2)


@pytest.mark.parametrize("composite", ["SequentialLR", "ChainedScheduler"])
def test_composites_refuse_reduce_lr_on_plateau_as_torchs(composite, rng):
    """A ReduceLROnPlateau inside SequentialLR or ChainedScheduler is torch's ValueError in both (SequentialLR gave
    a bare NotImplementedError from the plateau scheduler's first step), the checks written once for the two."""
    errors = []
    for lib, opt in zip((tnet, torch), make("SGD", {}, rng)[2:]):
        lrs = lib.optim.lr_scheduler
        schedulers = [lrs.LinearLR(opt, total_iters=2), lrs.ReduceLROnPlateau(opt)]
        args = (opt, schedulers, [2]) if composite == "SequentialLR" else (schedulers,)
        with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`") as e:
            getattr(lrs, composite)(*args)
        errors.append(str(e.value))
    assert errors[0] == errors[1]


PLATEAU = [
    {"mode": "min", "factor": 0.5, "patience": 2, "cooldown": 1, "min_lr": [0.01, 0.004], "threshold": 0.05},
    {"mode": "max", "threshold_mode": "abs", "threshold": 0.1, "patience": 0, "factor": 0.3, "eps": 0.005},
    {"mode": "min", "threshold_mode": "abs", "patience": 1, "cooldown": 2, "min_lr": 0.02},
]


@pytest.mark.parametrize("kwargs", PLATEAU, ids=["min-rel-cooldown", "max-abs-eps", "min-abs-cooldown"])
def test_reduce_lr_on_plateau_is_torchs(kwargs, rng):
    """A metric that improves, stalls and worsens (numbers and 0-d tensors): torch's lrs and
    counters at every step, and the parameters of the steps taken with them (the reduced lrs
    reach the kernel)."""
    params, refs, opt, ref = make("SGD", {"momentum": 0.9}, rng)
    sched = optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    ref_sched = torch.optim.lr_scheduler.ReduceLROnPlateau(ref, **kwargs)
    walk = np.concatenate([np.linspace(1, 0.5, 4), np.full(5, 0.5), rng.standard_normal(12).cumsum() * 0.1 + 0.5])
    walk = walk.astype(np.float32)  # the values a float32 0-d tensor holds
    for epoch, metric in enumerate(walk):
        sched.step(tnet.tensor(metric) if epoch % 2 else float(metric))
        ref_sched.step(float(metric))
        assert sched.get_last_lr() == ref_sched.get_last_lr(), f"lr at epoch {epoch}"
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in ref.param_groups]
        for key in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch"):
            assert getattr(sched, key) == getattr(ref_sched, key), f"{key} at epoch {epoch}"
        for p, r in zip(params, refs):
            r.grad = torch.tensor(rng.standard_normal(p.shape))
            p.grad = tnet.tensor(r.grad.numpy())
        opt.step()
        ref.step()
    assert sched.get_last_lr() != [0.1, 0.03], "the metric never plateaued: the test tests nothing"
    for i, (p, r) in enumerate(zip(params, refs)):
        assert_close(p, r, TOL["ieee"], f"parameter {i}")


def test_reduce_lr_on_plateau_state_and_errors(tmp_path, rng):
    """torch's state keys, saved by tnet.save; a loaded scheduler goes on as the first; torch's
    errors and the deprecated epoch's warning."""
    _, _, opt, ref = make("Adam", {}, rng)
    Plateau = optim.lr_scheduler.ReduceLROnPlateau
    sched, ref_sched = Plateau(opt, patience=1, factor=0.5), torch.optim.lr_scheduler.ReduceLROnPlateau(ref)
    assert isinstance(sched, optim.lr_scheduler.LRScheduler) and sched.get_last_lr() == [0.1, 0.03]
    for metric in (3.0, 2.0, 2.5, 2.5):
        sched.step(metric)
    assert set(sched.state_dict()) == set(ref_sched.state_dict())
    tnet.save({"schedule": sched.state_dict()}, str(tmp_path / "ck.npz"))
    _, _, opt2, _ = make("Adam", {}, rng)
    resumed = Plateau(opt2, mode="max")
    opt2.load_state_dict(opt.state_dict())
    resumed.load_state_dict(tnet.load(str(tmp_path / "ck.npz"))["schedule"])
    assert resumed.mode == "min" and resumed.mode_worse == float("inf")
    for metric in (2.4, 2.1, 2.2, 2.3, 1.0):
        sched.step(metric)
        resumed.step(metric)
        assert resumed.get_last_lr() == sched.get_last_lr() and resumed.best == sched.best
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(1.0, 9)
    assert sched.last_epoch == 9
    for kwargs, error, match in (({"factor": 1.0}, ValueError, "Factor should be < 1.0."),
                                 ({"mode": "low"}, ValueError, "mode low is unknown!"),
                                 ({"threshold_mode": "x"}, ValueError, "threshold mode x is unknown!"),
                                 ({"min_lr": [0.1]}, ValueError, "expected 2 min_lrs, got 1")):
        for make_sched, o in ((Plateau, opt), (torch.optim.lr_scheduler.ReduceLROnPlateau, ref)):
            with pytest.raises(error, match=match):
                make_sched(o, **kwargs)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        Plateau(ref)


def test_tensor_lr_as_torchs(ieee):
    """A tensor lr (the compiled-optimizer tutorial's `lr=torch.tensor(0.01)`): the scheduler writes the same
    tensor in place, each step reads it (also after a write by hand), as torch's; a tensor of several
    elements raises."""
    results = []
    for lib in (tnet, torch):
        m = lib.nn.Linear(2, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
            m.bias.zero_()
        lr = lib.tensor(0.01)
        opt = lib.optim.Adam(m.parameters(), lr=lr, foreach=False)
        sched = lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
        seen = []
        for _ in range(4):
            m(lib.ones(1, 2)).pow(2).sum().backward()
            opt.step()
            opt.zero_grad()
            sched.step()
            seen += [float(opt.param_groups[0]["lr"]), opt.param_groups[0]["lr"] is lr, float(sched.get_last_lr()[0])]
        lr.fill_(0.5)
        m(lib.ones(1, 2)).pow(2).sum().backward()
        opt.step()
        results.append((seen, m.weight.detach().numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)
    with pytest.raises(ValueError, match="1-element"):
        optim.SGD(nn.Linear(2, 2).parameters(), lr=tnet.tensor([0.1, 0.2]))


def test_one_cycle_of_one_iteration():
    """tnet's one_cycle (train.py's fast recipe) over a run of one iteration: the rate, then 0 past the end (it
    divided by zero there)."""
    f = optim.one_cycle(1)
    assert (f(0), f(1), f(2)) == (1.0, 0.0, 0.0)
    g = optim.one_cycle(20)
    assert g(0) == 1 / 3 and g(2) == 1.0 and g(20) == 0.0


@pytest.mark.parametrize("opt_name,kwargs", [("SGD", {"momentum": 0.9}), ("LBFGS", {})])
def test_optimizer_load_state_dict_drops_a_schedulers_initial_lr(opt_name, kwargs, rng):
    """An optimizer's state saved before a scheduler was attached, loaded after it (pytorch-lr-finder's reset):
    each group becomes the saved one, as torch's, so that "initial_lr" goes and a new scheduler may attach."""
    if opt_name == "SGD":
        _, _, opt, ref = make("SGD", kwargs, rng)
    else:  # an optimizer without a device RULE keeps its state in torch's own layout
        opt, ref = optim.LBFGS([nn.Parameter(tnet.ones(3))], lr=0.5), torch.optim.LBFGS([torch.ones(3)], lr=0.5)
    for o, lib in ((opt, tnet), (ref, torch)):
        saved = o.state_dict()
        lib.optim.lr_scheduler.StepLR(o, step_size=2)
        o.param_groups[0]["lr"] = 0.125
        o.load_state_dict(saved)
    assert opt.param_groups[0].keys() == ref.param_groups[0].keys()
    assert "initial_lr" not in opt.param_groups[0] and opt.param_groups[0]["lr"] == ref.param_groups[0]["lr"]
