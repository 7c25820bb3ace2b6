"""tnet.optim's RMSprop, Adagrad, Adamax, NAdam, RAdam and Adadelta, Adam's and AdamW's amsgrad and
maximize, against torch.optim in float64: two param groups (the second with its own lr and weight
decay), a frozen parameter, an lr change, torch's state names; state_dict round trips; launches
replayed as a CUDA graph replays them; GradScaler.unscale_ before clipping."""
import collections
import importlib
import re

import numpy as np
import pytest
import torch

import tnet
from tnet import nn, optim
from tnet.kernels import optim as kernels
from helpers import DEV, TOL, Launches, assert_close

SHAPES = [(5, 3), (7,), (4,)]  # the second in group 1; the third frozen (no gradient)
GROUP1 = {"lr": 0.02, "weight_decay": 0.05}
CASES = [
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "initial_accumulator_value": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "maximize": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "amsgrad": True}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "decoupled_weight_decay": True, "maximize": True, "momentum_decay": 0.1}),
    ("RAdam", {"lr": 0.01}),  # beta2 = 0.999: rho_t passes 5 at step 6, from the series that avoids cancellation
    ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adadelta", {"weight_decay": 0.1, "maximize": True}),
]
STEPS = 7


def make(name, kwargs, rng):
    """tnet parameters in two groups (the last frozen) and their optimizer; the same in torch float64."""
    params = [nn.Parameter(rng.standard_normal(shape)) for shape in SHAPES]
    refs = [torch.tensor(p.numpy(), dtype=torch.float64, requires_grad=True) for p in params]
    params[2].requires_grad = refs[2].requires_grad = False

    def groups(ps):
        return [{"params": [ps[0], ps[2]]}, {"params": [ps[1]], **GROUP1}]
    return params, getattr(optim, name)(groups(params), **kwargs), refs, getattr(torch.optim, name)(
        groups(refs), **kwargs, foreach=False)


def set_grads(params, refs, rng):
    for p, r in zip(params, refs):
        g = rng.standard_normal(p.shape) if p.requires_grad else None
        p.grad = None if g is None else tnet.tensor(g)
        r.grad = None if g is None else torch.tensor(g)


def assert_same(params, opt, refs, ref, what):
    """Parameters and every state tensor of torch's (the same names) at fp32's tolerance."""
    for i, (p, r) in enumerate(zip(params, refs)):
        assert_close(p, r, TOL["ieee"], f"{what}, parameter {i}")
        for name, value in ref.state[r].items():
            assert_close(opt.state[p][name], value, TOL["ieee"], f"{what}, {name} {i}")


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_matches_torch(name, kwargs, rng):
    """STEPS steps, the groups' lr changed halfway; the frozen parameter keeps its value and a zero step."""
    params, opt, refs, ref = make(name, kwargs, rng)
    frozen = params[2].numpy().copy()
    for step in range(STEPS):
        if step == 3:
            for o in (opt, ref):
                for g in o.param_groups:
                    g["lr"] *= 0.5
        set_grads(params, refs, rng)
        opt.step()
        ref.step()
    assert_same(params, opt, refs, ref, name)
    assert (params[2].numpy() == frozen).all() and opt.state[params[2]]["step"].item() == 0
    assert set(opt.state[params[0]]) == set(ref.state[refs[0]]), "torch's state names"


def test_state_dict_round_trip(rng):
    """Each optimizer's state_dict into a fresh one over copies of the parameters: the next steps agree
    exactly; the saved state has torch's names; Adagrad's initial_accumulator_value fills a missing sum."""
    for name, kwargs in CASES[1::2] + [("Adagrad", {"initial_accumulator_value": 0.3})]:
        params, opt, refs, _ = make(name, kwargs, rng)
        for _ in range(2):
            set_grads(params, refs, rng)
            opt.step()
        state = opt.state_dict()
        copies, resumed, _, _ = make(name, {**kwargs, "lr": 0.5}, np.random.default_rng(9))
        for p, q in zip(params, copies):
            q.memory.copy_(p.memory)
        resumed.load_state_dict(state)
        assert resumed.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
        for _ in range(2):
            for p in params:  # tnet gradients only: a torch tensor is no tnet .grad (TypeError, as torch's)
                p.grad = tnet.tensor(rng.standard_normal(p.shape)) if p.requires_grad else None
            for p, q in zip(params, copies):
                q.grad = None if p.grad is None else tnet.tensor(p.grad.numpy())
            opt.step()
            resumed.step()
        for p, q in zip(params, copies):
            assert (p.numpy() == q.numpy()).all(), name
        assert isinstance(state["state"][0]["step"], float) and state["state"][0]["step"] == 2.0
    assert set(state["state"][0]) == {"step", "sum"}
    del state["state"][2]  # the parameters in group order: 2 is the second group's
    resumed.load_state_dict(state)
    assert (resumed.state[copies[1]]["sum"].cpu().numpy() == np.float32(0.3)).all()
    assert resumed.state[copies[1]]["step"].item() == 0 and resumed.state[copies[0]]["step"].item() == 2


def test_replayed_launches_follow_the_schedule(monkeypatch, rng):
    """NAdam's launches of step 0 (count, mu_product clock, update) run again for steps 1-4 with the lr
    changed and new gradients in the same tensors, as a CUDA graph replays them: torch's steps still."""
    log = []
    for kernel in ("step_kernel", "count_steps_kernel", "nadam_clock_kernel"):
        monkeypatch.setattr(kernels, kernel, Launches(getattr(kernels, kernel), log))
    params, opt, refs, ref = make("NAdam", {"lr": 0.02, "weight_decay": 0.1}, rng)
    set_grads(params, refs, rng)
    opt.step()
    ref.step()
    assert len(log) == 3, "one launch to count the steps, one for mu_product, one to update"
    for step in range(1, 5):
        for o in (opt, ref):
            o.param_groups[0]["lr"] = 0.02 / (step + 1)
        opt.update_lr()  # what a scheduler calls
        for p, r in zip(params, refs):
            if p.grad is not None:
                r.grad = torch.tensor(rng.standard_normal(p.shape))
                p.grad.memory.copy_(r.grad)
        for kernel, grid, args, kwargs in log[:3]:
            kernel[grid](*args, **kwargs)
        ref.step()
    assert_same(params, opt, refs, ref, "replayed")


def test_gradscaler_unscale_then_clip(rng):
    """scaler.unscale_(opt); clip_grad_norm_; scaler.step(opt); scaler.update(): torch's steps on the
    clipped gradients; an inf skips the step and halves the scale; torch's RuntimeErrors."""
    params, opt, refs, ref = make("RMSprop", {"lr": 0.01, "momentum": 0.5}, rng)
    scaler = tnet.amp.GradScaler(init_scale=1024.0)
    for step in range(3):
        set_grads(params, refs, rng)
        if step == 1:
            params[0].grad.memory[1, 2] = float("inf")
        for p in params[:2]:
            p.grad.memory.mul_(scaler.get_scale())  # as scaler.scale(loss).backward() leaves them
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called"):
            scaler.unscale_(opt)
        if step != 1:
            assert_close(params[1].grad, refs[1].grad, TOL["ieee"], "unscaled gradient")
            nn.utils.clip_grad_norm_(params, 1.0)
            torch.nn.utils.clip_grad_norm_(refs, 1.0)
            ref.step()
        scaler.step(opt)
        with pytest.raises(RuntimeError, match="after step"):
            scaler.unscale_(opt)
        scaler.update()
        assert scaler.get_scale() == (512.0 if step >= 1 else 1024.0)
        assert_same(params, opt, refs, ref, f"step {step}")
    assert opt.state[params[0]]["step"].item() == 2


def test_errors():
    p = nn.Parameter(np.ones(3))
    for make_opt, error in [(lambda: optim.RMSprop([p], alpha=-0.1), "RMSprop: invalid alpha value -0.1"),
                            (lambda: optim.Adagrad([p], lr_decay=-1), "Adagrad: invalid lr_decay value -1"),
                            (lambda: optim.Adagrad([p], initial_accumulator_value=-1), "initial_accumulator_value"),
                            (lambda: optim.NAdam([p], momentum_decay=-1), "NAdam: invalid momentum_decay value -1"),
                            (lambda: optim.RAdam([p], betas=(0.9, 1.0)), "RAdam: invalid betas \\(0.9, 1.0\\)"),
                            (lambda: optim.Adadelta([p], rho=1.5), "Adadelta: invalid rho value 1.5"),
                            (lambda: optim.Adamax([p], eps=-1), "Adamax: invalid epsilon value -1")]:
        with pytest.raises(ValueError, match=error):
            make_opt()
    with pytest.raises(NotImplementedError, match="differentiable"):
        optim.Adam([p], differentiable=True)
    opt = optim.RMSprop([p])
    assert opt.defaults["alpha"] == 0.99 and opt.defaults["eps"] == 1e-8 and optim.Adadelta([p]).defaults["lr"] == 1.0
    assert set(opt.state[p]) == {"step", "square_avg"}  # no momentum_buffer, no grad_avg: as torch's
    p.grad = tnet.tensor(np.ones(3))
    opt.zero_grad()
    assert p.grad is None


def test_checks_after_the_first_step():
    """An optimizer checks each parameter's state once (step_'s known=), then the gradient alone: a
    bad gradient, or a state buffer replaced by a bad one, still raises on a later step."""
    p = nn.Parameter(np.ones((2, 3), np.float32))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = tnet.tensor(np.ones((2, 3), np.float32))
    opt.step()
    opt.step()  # the same state: only the gradient checked
    assert np.allclose(p.numpy(), 1 - 0.1 - 0.1 * 1.9)
    p.grad = tnet.Tensor(torch.ones(3, 2).to(p.memory.device).t())  # a transposed gradient is copied to p's layout
    opt.step()
    p.grad = tnet.tensor(np.ones((2, 3), np.float32))
    opt.state[p]["momentum_buffer"] = torch.zeros(2, 3, dtype=torch.float16, device=p.memory.device)
    with pytest.raises(ValueError, match="state buffers must be torch.float32"):
        opt.step()



def test_state_entries_are_tensors_that_user_code_changes():
    """An optimizer's state holds tnet Tensors, as torch's holds tensors: a user's own math on them
    (Lookahead's momentum pull-back, in place) and an entry replaced by a fresh tensor (its reset)
    are what the next step reads, as in torch."""
    rng = np.random.default_rng(0)
    w, g = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    out = []
    for lib in (tnet, torch):
        p = lib.nn.Parameter(lib.tensor(w, dtype=lib.float32))
        opt = lib.optim.Adam([p], lr=0.1)
        for step in range(3):
            p.grad = lib.tensor(g * (step + 1), dtype=lib.float32)
            opt.step()
            state = opt.state[p]
            assert isinstance(state["exp_avg"], lib.Tensor) and isinstance(state["step"], lib.Tensor)
            if step == 0:
                state["exp_avg"].mul_(0.5).add_(0.5, p.data)
            elif step == 1:
                state["exp_avg_sq"] = lib.zeros_like(p.data) + 0.25
        out.append((p.detach().numpy().copy(), float(opt.state[p]["step"])))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5, atol=1e-6)
    assert out[0][1] == out[1][1] == 3

def _hand_written_sgd(lib):
    """A momentum SGD written as people subclass torch.optim.Optimizer: `required`, its own step under
    no_grad, state made lazily in self.state[p]."""
    from importlib import import_module
    base = import_module(lib.__name__ + ".optim.optimizer")

    class MySGD(base.Optimizer):
        def __init__(self, params, lr=base.required, momentum=0.0):
            super().__init__(params, dict(lr=lr, momentum=momentum))

        @lib.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with lib.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        buf = state["momentum_buffer"] = lib.clone(p.grad).detach()
                    else:
                        buf = state["momentum_buffer"]
                        buf.mul_(group["momentum"]).add_(p.grad)
                    p.add_(buf, alpha=-group["lr"])
            return loss

    return MySGD


def test_a_hand_written_optimizer_subclass(rng):
    """torch's plain base for a subclass without a kernel rule: param groups, lazy state, a scheduler,
    zero_grad, state_dict round trip and `required`."""
    x = rng.standard_normal((4, 3)).astype(np.float32)
    results = []
    for lib in (tnet, torch):
        w = lib.tensor(x, requires_grad=True)
        b = lib.tensor(x[0], requires_grad=True)
        opt = _hand_written_sgd(lib)([{"params": [w]}, {"params": b, "lr": 0.05}], lr=0.1, momentum=0.9)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        for _ in range(3):
            opt.zero_grad()
            ((w * w).sum() + (b * w).sum()).backward()
            opt.step()
            sched.step()
        state = opt.state_dict()
        assert sorted(state["state"]) == [0, 1] and state["param_groups"][1]["params"] == [1]
        fresh = _hand_written_sgd(lib)([{"params": [w]}, {"params": [b], "lr": 0.05}], lr=0.1, momentum=0.9)
        fresh.load_state_dict(state)
        assert fresh.param_groups[0]["lr"] == pytest.approx(0.0125)
        results.append([w.detach().numpy(), b.detach().numpy(),
                        fresh.state[b]["momentum_buffer"].numpy()])
    for out, ref in zip(*results):
        assert_close(out, ref, TOL["ieee"])
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        _hand_written_sgd(tnet)([tnet.ones(2, requires_grad=True)])
    with pytest.raises(NotImplementedError):
        tnet.optim.Optimizer([tnet.ones(2, requires_grad=True)], {}).step()


PLAIN = [
    ("Rprop", {"lr": 0.05, "etas": (0.4, 1.3), "step_sizes": (1e-3, 0.2)}),
    ("Rprop", {"maximize": True}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.6, "t0": 2, "weight_decay": 0.1}),
    ("Adafactor", {"lr": 0.05, "eps": (1e-6, 1e-3), "weight_decay": 0.1, "d": 1.5}),
    ("Adafactor", {"eps": (1e-6, 1e-3), "maximize": True}),
    ("SparseAdam", {"lr": 0.05}),
]


def test_helpers_a_copy_of_torchs_optimizers_imports():
    """torch.optim.optimizer's private helpers that a copied adam.py or sgd.py imports give torch's answers on
    tnet tensors: grad mode from defaults["differentiable"], step counts by _get_value, (fused, foreach) by the
    device type (torch's tensors on tnet's device), tensors grouped by device and dtype with their positions, the
    graph-capture check outside a capture."""
    results = {}
    for lib in (torch, tnet):
        base = importlib.import_module(lib.__name__ + ".optim.optimizer")
        a, b, c = lib.ones(2, device=DEV), lib.ones(3, dtype=lib.int64, device=DEV), lib.zeros(2, device=DEV)
        p = lib.nn.Parameter(lib.ones(2))

        class Copied(base.Optimizer):
            def __init__(self, params, differentiable=False):
                super().__init__(params, dict(lr=0.1, differentiable=differentiable))

            @base._use_grad_for_differentiable
            def step(self):
                # torch 2.11 names it _accelerator_graph_capture_health_check only (a GPU's gpu61 run); tnet both
                getattr(self, "_cuda_graph_capture_health_check", self._accelerator_graph_capture_health_check)()
                return lib.is_grad_enabled()

        groups = base.Optimizer._group_tensors_by_device_and_dtype([[a, b, c], [c, None, a]], with_indices=True)
        plain = base.Optimizer._group_tensors_by_device_and_dtype([[a, b]])
        results[lib.__name__] = [
            Copied([p]).step(), Copied([p], differentiable=True).step(), lib.is_grad_enabled(),
            base._get_value(lib.tensor(3.0)), base._get_value(4), base._stack_if_compiling([a]) == [a],
            base._default_to_fused_or_foreach([a, None], False), base._default_to_fused_or_foreach([a], True, True),
            base._default_to_fused_or_foreach([a], False, use_fused=True), str(base._get_scalar_dtype()),
            tuple(base._to_scalar(lib.ones(1)).shape), base._to_scalar(0.5),
            sorted((str(k[1]), [[None if t is None else tuple(t.shape) for t in ts] for ts in v[0]], v[1])
                   for k, v in groups.items()),
            sorted((str(k[1]), v[1]) for k, v in plain.items()),
            all(isinstance(getattr(base, n), str) for n in ("_params_doc", "_foreach_doc", "_fused_doc",
                                                            "_capturable_doc", "_differentiable_doc", "_maximize_doc"))]
        base._view_as_real([a], [c])
        base._device_dtype_check_for_fused(a)
        with pytest.raises(RuntimeError, match="floating point"):
            base._device_dtype_check_for_fused(b)
        assert base._disable_dynamo_if_unsupported(single_tensor_fn=None)(lambda x: x + 1)(2) == 3
        assert "ParamsT" in dir(base)
    assert results["tnet"] == results["torch"], results


def test_per_optimizer_module_paths():
    """torch.optim's modules of one optimizer each (`from torch.optim.adamw import AdamW`) hold tnet's classes, and
    torch.optim._functional the functional steps tnet has."""
    for module, name in (("sgd", "SGD"), ("adam", "Adam"), ("adamw", "AdamW"), ("rmsprop", "RMSprop"),
                         ("adagrad", "Adagrad"), ("radam", "RAdam"), ("nadam", "NAdam"), ("sparse_adam", "SparseAdam")):
        ours = importlib.import_module(f"tnet.optim.{module}")
        assert getattr(ours, name) is getattr(optim, name) and ours.Optimizer is optim.Optimizer
        assert hasattr(importlib.import_module(f"torch.optim.{module}"), name)
    from tnet.optim.adamw import AdamW
    assert AdamW is optim.AdamW and optim.sgd.SGD is optim.SGD
    # torch.optim._functional's steps by that path too (`from torch.optim import _functional as F` in forks)
    from tnet.optim import _functional
    assert _functional.adam is optim.adam.adam and _functional.sgd is optim.sgd.sgd
    assert _functional.adamw is optim.adamw.adamw and hasattr(importlib.import_module("torch.optim._functional"), "adamw")


@pytest.mark.parametrize("edit", ["append", "extend_group", "clear", "fresh_dict", "one_param"])
def test_params_appended_and_state_dropped_by_hand_as_torch(edit):
    """A parameter appended to a group's "params" list by hand, and state dropped by hand (optimizer.state.clear(),
    a fresh defaultdict, state[p] = {}), start afresh at the parameter's next step, as torch makes state there; the
    rest of the state is kept."""
    results = []
    for lib in (tnet, torch):
        a, b = lib.nn.Parameter(lib.tensor([1.0, -2.0])), lib.nn.Parameter(lib.tensor([0.5]))
        optimizer = lib.optim.Adam([a] if edit in ("append", "extend_group") else [a, b], lr=0.1)
        group = optimizer.param_groups[0]  # held by the script: it stays the optimizer's group
        weights = []
        for i in range(4):
            optimizer.zero_grad()
            ((a ** 2).sum() + (b ** 3).sum()).backward()
            if i == 1:
                if edit == "append":
                    optimizer.param_groups[0]["params"].append(b)
                elif edit == "extend_group":
                    optimizer.param_groups[0]["params"].extend([b])
                elif edit == "clear":
                    optimizer.state.clear()
                elif edit == "fresh_dict":
                    optimizer.state = collections.defaultdict(dict)
                else:
                    optimizer.state[a] = {}
            optimizer.step()
            weights.append(np.round(np.concatenate([a.detach().numpy(), b.detach().numpy()]), 5).tolist())
            if i == 2:
                group["lr"] = 0.05
        assert optimizer.param_groups[0] is group
        results.append((weights, float(optimizer.state[a]["step"]), float(optimizer.state[b]["step"])))
    assert results[0] == results[1], results


def test_an_adam_subclass_stepping_by_init_group_and_functional_adam(rng):
    """CAdam's shape: a subclass of torch.optim.Adam whose step() takes the state by _init_group and calls
    torch.optim.adam.adam itself (the gradients' signs here); weights and state after three steps as torch's."""
    values = [rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (7,))]
    grads = [[rng.standard_normal(v.shape).astype(np.float32) for v in values] for _ in range(3)]
    out = {}
    for lib in (torch, tnet):
        base = importlib.import_module(lib.__name__ + ".optim.optimizer")
        adam = importlib.import_module(lib.__name__ + ".optim.adam").adam

        class SignAdam(lib.optim.Adam):
            @base._use_grad_for_differentiable
            def step(self, closure=None):
                for group in self.param_groups:
                    lists = [], [], [], [], [], []
                    has_complex = self._init_group(group, *lists)
                    params, grads_, *rest = lists
                    adam(params, [g.sign() for g in grads_], *rest, amsgrad=group["amsgrad"], has_complex=has_complex,
                         beta1=group["betas"][0], beta2=group["betas"][1], lr=group["lr"],
                         weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                         foreach=group["foreach"], capturable=group["capturable"],
                         differentiable=group["differentiable"], fused=group["fused"],
                         decoupled_weight_decay=group["decoupled_weight_decay"])

        params = [lib.nn.Parameter(lib.tensor(v)) for v in values]
        frozen = lib.nn.Parameter(lib.ones(2))  # no gradient: skipped
        optimizer = SignAdam([{"params": params[:1]}, {"params": [params[1], frozen], "lr": 0.02}], lr=0.01,
                             weight_decay=0.1, amsgrad=True, decoupled_weight_decay=True)
        for g in grads:
            for p, v in zip(params, g):
                p.grad = lib.tensor(v)
            optimizer.step()
        state = optimizer.state[params[0]]
        out[lib.__name__] = [*params, frozen, state["exp_avg"], state["max_exp_avg_sq"], float(state["step"])]
    for i, (ours, ref) in enumerate(zip(out["tnet"][:-1], out["torch"][:-1])):
        assert_close(ours, ref.detach(), TOL["ieee"], f"entry {i}")
    assert out["tnet"][-1] == out["torch"][-1] == 3.0


@pytest.mark.parametrize("name,kwargs", [
    ("sgd", dict(weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True, maximize=False)),
    ("sgd", dict(weight_decay=0.0, momentum=0.5, lr=0.2, dampening=0.3, nesterov=False, maximize=True)),
    ("adam", dict(amsgrad=True, beta1=0.8, beta2=0.9, lr=0.01, weight_decay=0.1, eps=1e-8, maximize=True)),
    ("adam", dict(amsgrad=False, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.1, eps=1e-6, maximize=False,
                  decoupled_weight_decay=True)),
    ("adamw", dict(amsgrad=True, beta1=0.9, beta2=0.999, lr=0.02, weight_decay=0.05, eps=1e-8, maximize=False))])
def test_functional_steps_match_torchs(name, kwargs, rng):
    """torch.optim.sgd.sgd, adam.adam and adamw.adamw, which a fork's step() calls: three steps on two tensors of
    odd shapes update parameters, moments, buffers and step counts as torch's (SGD's None buffers replaced)."""
    shapes = [(5, 3), (7,)]
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]
    out = {}
    for lib in (torch, tnet):
        step = getattr(importlib.import_module(f"{lib.__name__}.optim.{name}"), name)
        params = [lib.tensor(v) for v in values]
        buffers = [None, None]
        moments = [[lib.zeros_like(p) for p in params] for _ in range(3)]
        steps = [lib.tensor(0.0) for _ in params]
        for g in grads:
            gs = [lib.tensor(v) for v in g]
            if name == "sgd":
                step(params, gs, buffers, **kwargs)
            else:
                step(params, gs, *moments, steps, **kwargs)
        out[lib.__name__] = [params, moments if name != "sgd" else [buffers], steps]
    for ours, ref in zip(out["tnet"][0] + sum(out["tnet"][1], []), out["torch"][0] + sum(out["torch"][1], [])):
        assert_close(ours, ref, TOL["ieee"], name)
    assert [float(s) for s in out["tnet"][2]] == [float(s) for s in out["torch"][2]]


def test_an_sgd_fork_stepping_by_init_group_and_functional_sgd(rng):
    """A fork of torch.optim.SGD whose step() takes its lists by _init_group (torch's signature), calls
    torch.optim.sgd.sgd and stores the buffers back: weights and buffers after three steps as torch's (the first
    step's buffer the gradient itself, with dampening)."""
    values = [rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (7,))]
    grads = [[rng.standard_normal(v.shape).astype(np.float32) for v in values] for _ in range(3)]
    out = {}
    for lib in (torch, tnet):
        sgd = importlib.import_module(lib.__name__ + ".optim.sgd").sgd

        class ForkedSGD(lib.optim.SGD):
            def step(self, closure=None):
                with lib.no_grad():
                    for group in self.param_groups:
                        params, grads_, buffers = [], [], []
                        has_sparse_grad = self._init_group(group, params, grads_, buffers)
                        sgd(params, grads_, buffers, weight_decay=group["weight_decay"], momentum=group["momentum"],
                            lr=group["lr"], dampening=group["dampening"], nesterov=group["nesterov"],
                            maximize=group["maximize"], has_sparse_grad=has_sparse_grad, foreach=group["foreach"])
                        if group["momentum"] != 0:
                            for p, buffer in zip(params, buffers):
                                self.state[p]["momentum_buffer"] = buffer

        params = [lib.nn.Parameter(lib.tensor(v)) for v in values]
        frozen = lib.nn.Parameter(lib.ones(2))  # no gradient: skipped
        optimizer = ForkedSGD([{"params": params[:1]}, {"params": [params[1], frozen], "momentum": 0}], lr=0.1,
                              momentum=0.9, dampening=0.3, weight_decay=0.01)
        for g in grads:
            for p, v in zip(params, g):
                p.grad = lib.tensor(v)
            optimizer.step()
        out[lib.__name__] = [*params, frozen, optimizer.state[params[0]]["momentum_buffer"]]
    for i, (ours, ref) in enumerate(zip(out["tnet"], out["torch"], strict=True)):
        assert_close(ours, ref.detach(), TOL["ieee"], f"entry {i}")


# forks of the other optimizers: the class's options, how many state lists _init_group fills (the step counts too),
# and the functional step's call on them (in its own order) with the group's hyperparameters
FORKS = {
    "RMSprop": (dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1), 4, lambda fn, g, ls, extra: fn(
        *ls[:3], ls[4], ls[3], ls[5], lr=g["lr"], alpha=g["alpha"], eps=g["eps"], weight_decay=g["weight_decay"],
        momentum=g["momentum"], centered=g["centered"], maximize=g["maximize"], has_complex=extra)),
    "Adagrad": (dict(lr=0.1, lr_decay=0.01, weight_decay=0.1), 2, lambda fn, g, ls, extra: fn(
        *ls, lr=g["lr"], weight_decay=g["weight_decay"], lr_decay=g["lr_decay"], eps=g["eps"],
        maximize=g["maximize"], has_sparse_grad=extra[0], has_complex=extra[1])),
    "Adamax": (dict(lr=0.02, weight_decay=0.1), 3, lambda fn, g, ls, extra: fn(
        *ls, eps=g["eps"], beta1=g["betas"][0], beta2=g["betas"][1], lr=g["lr"], weight_decay=g["weight_decay"],
        maximize=g["maximize"], has_complex=extra)),
    "NAdam": (dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True), 4, lambda fn, g, ls, extra: fn(
        *ls, beta1=g["betas"][0], beta2=g["betas"][1], lr=g["lr"], weight_decay=g["weight_decay"],
        momentum_decay=g["momentum_decay"], eps=g["eps"], decoupled_weight_decay=g["decoupled_weight_decay"],
        maximize=g["maximize"], has_complex=extra)),
    "RAdam": (dict(lr=0.01, weight_decay=0.1), 3, lambda fn, g, ls, extra: fn(
        *ls, beta1=g["betas"][0], beta2=g["betas"][1], lr=g["lr"], weight_decay=g["weight_decay"], eps=g["eps"],
        decoupled_weight_decay=g["decoupled_weight_decay"], maximize=g["maximize"], has_complex=extra)),
    "Adadelta": (dict(lr=1.0, weight_decay=0.1), 3, lambda fn, g, ls, extra: fn(
        *ls, lr=g["lr"], rho=g["rho"], eps=g["eps"], weight_decay=g["weight_decay"], maximize=g["maximize"],
        has_complex=extra)),
}


@pytest.mark.parametrize("name", FORKS)
def test_forks_of_the_other_optimizers_step_by_init_group_as_torchs(name, rng):
    """A subclass of each optimizer whose step() takes its lists by _init_group (torch's signature) and calls
    the functional step of torch's module on the gradients' signs: weights after seven steps as torch's."""
    kwargs, count, call = FORKS[name]
    values = [rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (7,))]
    grads = [[rng.standard_normal(v.shape).astype(np.float32) for v in values] for _ in range(7)]
    out = {}
    for lib in (torch, tnet):
        fn = getattr(importlib.import_module(f"{lib.__name__}.optim.{name.lower()}"), name.lower())

        class Fork(getattr(lib.optim, name)):
            def step(self, closure=None):
                with lib.no_grad():
                    for group in self.param_groups:
                        lists = [[] for _ in range(count + 2)]
                        extra = self._init_group(group, *lists)
                        lists[1] = [g.sign() for g in lists[1]]
                        call(fn, group, lists, extra)

        params = [lib.nn.Parameter(lib.tensor(v)) for v in values]
        frozen = lib.nn.Parameter(lib.ones(2))  # no gradient: skipped
        optimizer = Fork([{"params": params[:1]}, {"params": [params[1], frozen]}], **kwargs)
        for g in grads:
            for p, v in zip(params, g):
                p.grad = lib.tensor(v)
            optimizer.step()
        state = optimizer.state[params[0]]
        out[lib.__name__] = [*params, frozen, *(state[k] for k in sorted(state))]
    for i, (ours, ref) in enumerate(zip(out["tnet"], out["torch"], strict=True)):
        assert_close(ours, ref.detach(), 1e-5, f"{name}: entry {i}")


# the other optimizers' functional steps: each state list's start ("zeros" like the parameter, a one-element
# tensor of a value, a tensor of the parameter's shape full of a value) and the keyword arguments
OTHER_STEPS = [
    ("rmsprop", ["zeros", "zeros", "zeros"], dict(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.1, momentum=0.5,
                                                  centered=True, maximize=True)),
    ("rmsprop", ["zeros", "zeros", "zeros"], dict(lr=0.01, alpha=0.99, eps=1e-6, weight_decay=0.0, momentum=0.0,
                                                  centered=False)),
    ("adagrad", ["zeros"], dict(lr=0.1, weight_decay=0.1, lr_decay=0.01, eps=1e-10, maximize=False)),
    ("adamax", ["zeros", "zeros"], dict(eps=1e-8, beta1=0.8, beta2=0.99, lr=0.02, weight_decay=0.1, maximize=True)),
    ("nadam", ["zeros", "zeros", ("one", 1.0)], dict(beta1=0.9, beta2=0.999, lr=0.01, weight_decay=0.1,
                                                     momentum_decay=0.004, eps=1e-8)),
    ("nadam", ["zeros", "zeros", ("one", 1.0)], dict(beta1=0.8, beta2=0.9, lr=0.01, weight_decay=0.1,
                                                     momentum_decay=0.004, eps=1e-8, decoupled_weight_decay=True)),
    ("radam", ["zeros", "zeros"], dict(beta1=0.9, beta2=0.999, lr=0.01, weight_decay=0.1, eps=1e-8)),
    ("radam", ["zeros", "zeros"], dict(beta1=0.5, beta2=0.9, lr=0.01, weight_decay=0.1, eps=1e-8,
                                       decoupled_weight_decay=True, maximize=True)),  # rectified from step 6
    ("asgd", ["zeros", ("one", 1.0), ("one", 0.05)], dict(lambd=1e-4, lr=0.05, t0=1.0, alpha=0.75, weight_decay=0.1)),
    ("adadelta", ["zeros", "zeros"], dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.1, maximize=False)),
    ("rprop", ["zeros", ("full", 0.01)], dict(step_size_min=1e-6, step_size_max=50, etaminus=0.5, etaplus=1.2)),
]


@pytest.mark.parametrize("name,starts,kwargs", OTHER_STEPS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(OTHER_STEPS)])
def test_other_functional_steps_match_torchs(name, starts, kwargs, rng):
    """torch.optim.rmsprop.rmsprop, adagrad.adagrad, adamax.adamax, nadam.nadam, radam.radam, asgd.asgd,
    adadelta.adadelta and rprop.rprop, which forks of those optimizers call: seven steps on two tensors of odd
    shapes (RAdam's rectified ones among them; random gradients, whose signs flip for Rprop) update parameters,
    state and step counts as torch's."""
    shapes = [(5, 3), (7,)]
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(7)]
    out = {}
    for lib in (torch, tnet):
        step = getattr(importlib.import_module(f"{lib.__name__}.optim.{name}"), name)
        params = [lib.tensor(v) for v in values]
        lists = [[lib.zeros_like(p) if start == "zeros" else lib.tensor(start[1]) if start[0] == "one"
                  else lib.full(p.shape, start[1]) for p in params] for start in starts]
        steps = [lib.tensor(0.0) for _ in params]
        for g in grads:
            step(params, [lib.tensor(v) for v in g], *lists, steps, **kwargs)
        out[lib.__name__] = [*params, *sum(lists, []), *steps]
    for i, (ours, ref) in enumerate(zip(out["tnet"], out["torch"], strict=True)):
        assert_close(ours, ref, 1e-5, f"{name}: tensor {i}")


@pytest.mark.parametrize("name,kwargs", PLAIN, ids=[f"{n}-{'-'.join(k)}" for n, k in PLAIN])
def test_plain_base_optimizers_match_torch(name, kwargs, rng):
    """Rprop, ASGD, Adafactor and SparseAdam (tnet's on the plain base) against torch's in float64:
    two groups, a frozen parameter, a StepLR, torch's state, and a state_dict round trip midway
    (tnet continues from a fresh optimizer). SparseAdam's dense gradients have zero rows, and
    torch's gets their sparse form."""
    params, _, refs, _ = make("SGD", {}, rng)
    params = [params[0], params[2], params[1]]  # a matrix, the frozen vector, a vector
    refs = [refs[0], refs[2], refs[1]]
    group1 = {"lr": 0.02, **({"weight_decay": 0.05} if name in ("ASGD", "Adafactor") else {})}

    def groups(ps):
        return [{"params": ps[:2]}, {"params": [ps[2]], **group1}]
    opt = getattr(optim, name)(groups(params), **kwargs)
    ref = getattr(torch.optim, name)(groups(refs), **kwargs)
    sched, ref_sched = optim.lr_scheduler.StepLR(opt, 2, 0.5), torch.optim.lr_scheduler.StepLR(ref, 2, 0.5)
    for step in range(5):
        for p, r in zip(params, refs):
            g = rng.standard_normal(p.shape) if p.requires_grad else None
            if g is not None and name == "SparseAdam":
                g[rng.random(p.shape[0]) < 0.4] = 0
            p.grad = None if g is None else tnet.tensor(g)
            r.grad = None if g is None else torch.tensor(g).to_sparse(1) if name == "SparseAdam" else torch.tensor(g)
        opt.step()
        ref.step()
        sched.step()
        ref_sched.step()
        if step == 2:
            fresh = getattr(optim, name)(groups(params), **kwargs)
            fresh.load_state_dict(opt.state_dict())
            opt, sched.optimizer = fresh, fresh
        for i, (p, r) in enumerate(zip(params, refs)):
            assert_close(p, r, 1e-4, f"{name} step {step}, parameter {i}")
            for key, value in ref.state[r].items():
                assert_close(np.asarray(to_float(opt.state[p][key])), to_float(value), 1e-4,
                             f"{name} step {step}, {key} {i}")
    assert opt.param_groups[1]["lr"] == ref.param_groups[1]["lr"]


def to_float(v):
    return v.numpy() if isinstance(v, tnet.Tensor) else v.to_dense().numpy() if isinstance(v, torch.Tensor) else v


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search_fn, rng, ieee):
    """LBFGS on a small non-quadratic problem (a least squares plus a quartic), a history shorter
    than the iterations, two parameters: the trajectory over two steps and the closure's losses."""
    a, b = rng.standard_normal((6, 4)), rng.standard_normal(6)
    w0, c0 = rng.standard_normal(4) * 0.5, rng.standard_normal(1) * 0.5
    results = []
    for lib in (tnet, torch):
        A, B = lib.tensor(a), lib.tensor(b)
        w, c = lib.tensor(w0, requires_grad=True), lib.tensor(c0, requires_grad=True)
        opt = lib.optim.LBFGS([w, c], lr=0.8, max_iter=6, history_size=3, line_search_fn=line_search_fn)

        def closure():
            opt.zero_grad()
            loss = ((A @ w + c - B) ** 2).sum() + 0.1 * (w ** 4).sum()
            loss.backward()
            return loss
        losses = [float(opt.step(closure)) for _ in range(2)]
        state = opt.state[w]
        results.append((w.detach().numpy(), c.detach().numpy(), losses, state["func_evals"], state["n_iter"]))
    (w, c, losses, evals, iters), (rw, rc, rlosses, revals, riters) = results
    assert_close(w, rw, 1e-4, "w")
    assert_close(c, rc, 1e-4, "c")
    assert_close(np.array(losses), np.array(rlosses), 1e-5, "losses")
    assert (evals, iters) == (revals, riters)


def test_lbfgs_with_infinite_parameters_steps_without_raising():
    """The line search's host scalars divide as torch's tensors (inf, NaN), not raising ZeroDivisionError
    (found by tools/fuzz_ops.py)."""
    for line_search_fn in (None, "strong_wolfe"):
        p = tnet.tensor([-0.9, -float("inf"), float("inf")], requires_grad=True)
        opt = tnet.optim.LBFGS([p], lr=0.5, history_size=3, line_search_fn=line_search_fn)

        def closure():
            opt.zero_grad()
            loss = ((p - tnet.tensor([0.8, 0.4, 1.6])) ** 2).sum()
            loss.backward()
            return loss
        opt.step(closure)


def test_plain_base_optimizer_errors():
    """torch's messages for bad hyperparameters (ValueError), LBFGS's one group."""
    p = tnet.ones(2, requires_grad=True)
    cases = [(optim.Rprop, {"lr": -1}, "Invalid learning rate: -1"),
             (optim.Rprop, {"etas": (1.5, 1.2)}, "Invalid eta values: 1.5, 1.2"),
             (optim.ASGD, {"weight_decay": -1}, "Invalid weight_decay value: -1"),
             (optim.Adafactor, {"beta2_decay": 0.5}, "beta2_decay should be <= 0 but is: 0.5"),
             (optim.Adafactor, {"eps": (-1, 1e-3)}, "epsilon1 should be >= 0 but is: -1"),
             (optim.Adafactor, {"d": 0.5}, "Clipping threshold d should be >= 1 but is: 0.5"),
             (optim.SparseAdam, {"lr": 0}, "Invalid learning rate: 0"),
             (optim.SparseAdam, {"betas": (0.9, 1.0)}, "Invalid beta parameter at index 1: 1.0"),
             (optim.LBFGS, {"lr": -0.5}, "Invalid learning rate: -0.5")]
    for cls, kwargs, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            cls([p], **kwargs)
        with pytest.raises(ValueError, match=re.escape(message)):
            getattr(torch.optim, cls.__name__)([torch.ones(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [p]}, {"params": [tnet.ones(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        q = tnet.ones(2, requires_grad=True)
        opt = optim.LBFGS([q], line_search_fn="armijo")
        opt.step(lambda: (q * q).sum().backward() or (q * q).sum())


def test_step_hooks():
    """register_step_pre_hook / register_step_post_hook and the global register_optimizer_step_*_hook,
    as torch's: the order (global pre, own pre, step, own post, global post), args holding the
    optimizer, a pre hook's (args, kwargs) replacing the call's, remove(); a subclass's own step runs
    them too, once where it calls super().step() (torch's run again around the parent's step once
    an instance of the parent class was made)."""
    logs = []
    for lib in (tnet, torch):
        log = []
        logs.append(log)

        class Plain(lib.optim.Optimizer):  # never instantiated: torch's hooks run once around Logged's step
            def __init__(self, params, lr):
                super().__init__(params, {"lr": lr})

            @lib.no_grad()
            def step(self, closure=None):
                loss = None if closure is None else closure()
                for group in self.param_groups:
                    for q in group["params"]:
                        q.add_(q.grad, alpha=-group["lr"])
                return loss

        class Logged(Plain):
            def step(self, closure=None):
                log.append("own step")
                return super().step(closure)

        p = lib.nn.Parameter(lib.ones(3))
        optimizer = importlib.import_module(f"{lib.__name__}.optim.optimizer")
        for opt in (lib.optim.SGD([p], lr=0.1), Logged([p], lr=0.1)):
            handles = [optimizer.register_optimizer_step_pre_hook(lambda o, a, k: log.append("global pre")),
                       optimizer.register_optimizer_step_post_hook(lambda o, a, k: log.append("global post")),
                       opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", a[0] is o, len(a), k))),
                       opt.register_step_post_hook(lambda o, a, k: log.append(("post", len(a), sorted(k))))]
            p.grad = lib.ones(3)
            opt.step()
            swap = opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: log.append("closure")}))
            opt.step()
            for h in handles + [swap]:
                h.remove()
            opt.step()
            log.append("-")
        log.append(round(float(p.detach().sum()), 5))
    assert logs[0] == logs[1], logs


def test_state_dict_hooks():
    """register_state_dict_pre/post_hook and register_load_state_dict_pre/post_hook, as torch's: their
    order (prepend first), a post hook's dict returned by state_dict(), a load pre hook seeing a shallow
    copy and its returned dict loaded, remove(), on a fused optimizer (SGD) and on AdamW."""
    logs = []
    for lib in (tnet, torch):
        log = []
        logs.append(log)
        p = lib.nn.Parameter(lib.ones(3))
        for opt in (lib.optim.SGD([p], lr=0.5), lib.optim.AdamW([p], lr=0.25)):
            handles = [opt.register_state_dict_pre_hook(lambda o: log.append("pre")),
                       opt.register_state_dict_pre_hook(lambda o: log.append("pre first"), prepend=True),
                       opt.register_state_dict_post_hook(lambda o, sd: log.append(("post", sorted(sd)))),
                       opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1}),
                       opt.register_load_state_dict_pre_hook(lambda o, sd: log.append(("load pre", "extra" in sd))),
                       opt.register_load_state_dict_pre_hook(
                           lambda o, sd: {"state": sd["state"], "param_groups": [{**sd["param_groups"][0], "lr": 0.125}]}),
                       opt.register_load_state_dict_post_hook(lambda o: log.append(("load post", o.param_groups[0]["lr"]))),
                       opt.register_load_state_dict_post_hook(lambda o: log.append("load post first"), prepend=True)]
            saved = opt.state_dict()
            log.append(sorted(saved))
            opt.load_state_dict(saved)
            log.append(("given kept", sorted(saved)))
            log.append(type(handles[0]).__name__)
            for h in handles:
                h.remove()
            log.append(sorted(opt.state_dict()))
            opt.load_state_dict(saved)
            log.append((opt.param_groups[0]["lr"], opt.param_groups[0].get("decoupled_weight_decay")))
    assert logs[0] == logs[1], logs
