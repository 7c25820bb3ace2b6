"""tnet.optim's SGD, Adam and AdamW against torch.optim in float64: param groups, an lr
schedule, Caffe's lr_mult and decay_mult, skipped and frozen parameters, state_dict,
validation, and launches replayed as a CUDA graph would replay them."""
import numpy as np
import pytest
import torch

import tnet
from tnet import nn, optim
from tnet.kernels import optim as kernels
from helpers import TOL, Launches, assert_close

# (shape, channels-last, lr_mult, decay_mult, group): odd shapes, one 4-D channels-last.
PARAMS = [((7, 3), False, 1.0, 1.0, 0), ((5, 3, 4, 3), True, 2.0, 0.5, 0), ((11,), False, 1.0, 1.0, 1)]
GROUP1 = {"lr": 0.03, "weight_decay": 0.02}  # the second group's own lr and weight decay
CASES = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "dampening": 0.5}),  # no momentum: torch ignores the dampening
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "betas": (0.5, 0.8), "eps": 1e-3}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "betas": (0.0, 0.99), "weight_decay": 0.3}),
]

DEFAULT_DECAY = {"SGD": 0.0, "Adam": 0.0, "AdamW": 0.01}


def schedule(it):
    return [1.0, 0.5, 2.0, 0.25, 1.0][it]


def make(name, kwargs, rng, specs=PARAMS, group1=GROUP1):
    """tnet parameters in two groups and their optimizer; the same in torch float64, one group
    a parameter with Caffe's multipliers folded into its lr and weight decay."""
    params, ref_groups = [], []
    for shape, channels_last, lr_mult, decay_mult, group in specs:
        p = nn.Parameter(rng.standard_normal(shape), lr_mult, decay_mult)
        if channels_last:
            p.memory = p.memory.contiguous(memory_format=torch.channels_last)
        params.append(p)
        settings = {"weight_decay": DEFAULT_DECAY[name], **kwargs, **(group1 if group else {})}
        ref_groups.append({**settings, "params": [torch.tensor(p.numpy(), dtype=torch.float64, requires_grad=True)],
                           "lr": settings["lr"] * lr_mult, "weight_decay": settings["weight_decay"] * decay_mult})
    groups = [{"params": [p for p, s in zip(params, specs) if s[4] == g], **(group1 if g else {})} for g in (0, 1)]
    opt = getattr(optim, name)(groups, **kwargs)
    ref = getattr(torch.optim, name)(ref_groups, foreach=False)
    return params, opt, [g["params"][0] for g in ref_groups], ref


def set_grads(params, refs, rng, skip=()):
    """The same random gradient on both sides; None for the parameters in skip."""
    for i, (p, r) in enumerate(zip(params, refs)):
        g = None if i in skip else rng.standard_normal(p.shape)
        p.grad = None if g is None else tnet.tensor(g)
        r.grad = None if g is None else torch.tensor(g)


def assert_same(params, opt, refs, ref, what):
    for i, (p, r) in enumerate(zip(params, refs)):
        assert_close(p, r, TOL["ieee"], f"{what}, parameter {i} {p.shape}")
        for name in opt.BUFFERS:
            if ref.state[r].get(name) is not None:
                assert_close(opt.state[p][name], ref.state[r][name], TOL["ieee"], f"{what}, {name} {i}")
        if "step" in ref.state[r]:
            assert opt.state[p]["step"].item() == ref.state[r]["step"].item(), f"{what}, step {i}"


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_matches_torch(name, kwargs, rng):
    """4 steps with an lr change between each (LambdaLR on both sides); parameter 1 misses
    step 1, so its step count and momentum start later."""
    params, opt, refs, ref = make(name, kwargs, rng)
    sched, ref_sched = optim.LambdaLR(opt, schedule), torch.optim.lr_scheduler.LambdaLR(ref, schedule)
    for step in range(4):
        set_grads(params, refs, rng, skip={1} if step == 1 else ())
        opt.step()
        ref.step()
        sched.step()
        ref_sched.step()
        assert_same(params, opt, refs, ref, f"{name} step {step}")


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_replayed_launches_follow_the_schedule(name, monkeypatch, rng):
    """A CUDA graph replays the launches of one step with the same arguments: here step 0's
    launches are run again for steps 1-3, with the lr changing and the gradients copied into
    the same tensors. They must still take torch's steps: lr, hyperparameters and step
    counts (Adam's bias corrections) come from the device."""
    log = []
    monkeypatch.setattr(kernels, "step_kernel", Launches(kernels.step_kernel, log))
    monkeypatch.setattr(kernels, "count_steps_kernel", Launches(kernels.count_steps_kernel, log))
    kwargs = {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01} if name == "SGD" else {"lr": 0.05}
    specs = [(shape, False, *rest) for shape, _, *rest in PARAMS]  # a gradient in another layout would be a copy
    params, opt, refs, ref = make(name, kwargs, rng, specs)
    sched, ref_sched = optim.LambdaLR(opt, schedule), torch.optim.lr_scheduler.LambdaLR(ref, schedule)
    set_grads(params, refs, rng)
    opt.step()
    assert len(log) == 2, "one launch to count the steps, one to update"
    launches = list(log)
    for step in range(1, 4):
        ref.step()
        sched.step()
        ref_sched.step()
        for p, r in zip(params, refs):
            r.grad = torch.randn(r.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(step))
            p.grad.memory.copy_(r.grad)
        for kernel, grid, args, kwargs in launches:
            kernel[grid](*args, **kwargs)
    ref.step()
    assert_same(params, opt, refs, ref, f"{name} replayed")


@pytest.mark.parametrize("name", ["SGD", "Adam"])
@pytest.mark.parametrize("per_launch", [32, 2])
def test_all_parameters_in_one_launch(name, per_launch, monkeypatch, rng):
    """Blocks of 64, so that tensors fall short of a block or span several; one launch per
    per_launch tensors, plus the one that counts; the second group's own momentum or betas; a
    parameter that never has a gradient keeps its value and a zero step count."""
    monkeypatch.setattr(kernels, "BLOCK", 64)
    monkeypatch.setattr(kernels, "TENSORS_PER_LAUNCH", per_launch)
    log = []
    monkeypatch.setattr(kernels, "step_kernel", Launches(kernels.step_kernel, log))
    specs = [((1,), False, 1.0, 1.0, 0), ((5,), False, 2.0, 1.0, 0), ((64,), False, 1.0, 0.0, 0),
             ((199,), False, 1.0, 1.0, 1), ((7, 30), False, 0.5, 3.0, 1), ((3,), False, 1.0, 1.0, 1)]
    kwargs = {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01} if name == "SGD" else {"lr": 0.01, "weight_decay": 0.01}
    group1 = {"lr": 0.03, "weight_decay": 0.004, **({"momentum": 0.5} if name == "SGD" else {"betas": (0.8, 0.99)})}
    params, opt, refs, ref = make(name, kwargs, rng, specs, group1)
    before = params[5].numpy()
    for step in range(3):
        skip = {5, 1} if step == 1 else {5}
        set_grads(params, refs, rng, skip)
        del log[:]
        opt.step()
        ref.step()
        assert len(log) == -(-(len(params) - len(skip)) // per_launch)
        assert_same(params, opt, refs, ref, f"{name} step {step}")
    assert (params[5].numpy() == before).all() and opt.state[params[5]]["step"].item() == 0


def plain(value):
    """Whether value holds only numbers, strings, tuples, lists, dicts and numpy arrays."""
    if isinstance(value, dict):
        return all(plain(k) and plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str, np.ndarray))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_state_dict_resumes_exactly(name, rng):
    kwargs = {"lr": 0.1, "momentum": 0.9, "nesterov": True} if name == "SGD" else {"lr": 0.01}
    params, opt, refs, _ = make(name, kwargs, rng)
    for _ in range(2):
        set_grads(params, refs, rng)
        opt.step()
    opt.param_groups[1]["lr"] = 0.007
    state = opt.state_dict()
    assert plain(state), state
    assert [g["params"] for g in state["param_groups"]] == [[0, 1], [2]]
    assert state["state"][1]["step"] == 2.0 and state["param_groups"][1]["lr"] == 0.007

    # a second optimizer over copies of the parameters, at other hyperparameters
    copies, resumed, _, _ = make(name, {**kwargs, "lr": 0.5}, np.random.default_rng(9))
    for p, q in zip(params, copies):
        q.memory.copy_(p.memory)
    resumed.load_state_dict(state)
    assert [g["lr"] for g in resumed.param_groups] == [g["lr"] for g in opt.param_groups]
    for _ in range(2):
        grads = [rng.standard_normal(p.shape) for p in params]
        for p, q, g in zip(params, copies, grads):
            p.grad, q.grad = tnet.tensor(g), tnet.tensor(g)
        opt.step()
        resumed.step()
    for p, q in zip(params, copies):
        assert (p.numpy() == q.numpy()).all()

    fresh = opt.state_dict()  # steps and buffers are copies: stepping again leaves them alone
    opt.step()
    assert fresh["state"][0]["step"] == 4.0
    fresh["param_groups"].pop()
    with pytest.raises(ValueError, match="1 parameter groups for 2"):
        opt.load_state_dict(fresh)
    buffer = opt.BUFFERS[0]
    state["state"][0][buffer] = np.zeros((3, 7))
    with pytest.raises(ValueError, match=f"{buffer} \\(3, 7\\) for parameter 0"):
        resumed.load_state_dict(state)


@pytest.mark.parametrize("make_opt,error", [
    (lambda p: optim.SGD([p], lr=-0.1), "SGD: invalid learning rate -0.1"),
    (lambda p: optim.SGD([p], momentum=-0.5), "SGD: invalid momentum value -0.5"),
    (lambda p: optim.SGD([p], weight_decay=-1e-4), "SGD: invalid weight_decay value -0.0001"),
    (lambda p: optim.SGD([p], nesterov=True), "SGD: nesterov momentum requires a momentum > 0 and zero dampening"),
    (lambda p: optim.SGD([p], momentum=0.9, dampening=0.1, nesterov=True), "SGD: nesterov momentum requires"),
    (lambda p: optim.Adam([{"params": [p], "lr": -1.0}]), "Adam: invalid learning rate -1.0"),
    (lambda p: optim.Adam([p], eps=-1e-8), "Adam: invalid epsilon value -1e-08"),
    (lambda p: optim.Adam([p], betas=(1.0, 0.999)), "Adam: invalid betas \\(1.0, 0.999\\)"),
    (lambda p: optim.AdamW([p], betas=(0.9, -0.1)), "AdamW: invalid betas \\(0.9, -0.1\\)"),
    (lambda p: optim.AdamW([p], weight_decay=-0.01), "AdamW: invalid weight_decay value -0.01"),
    (lambda p: optim.Adam([p], betas=(0, 0.99)), "betas must be either both floats or both Tensors"),
    (lambda p: optim.AdamW([p], betas=(0.9, tnet.tensor(0.99))), "betas must be either both floats or both Tensors"),
    (lambda p: optim.SGD([]), "SGD: got an empty parameter list"),
    (lambda p: optim.Adam([p * 2]), "Adam: can't optimize a non-leaf Tensor"),
    (lambda p: optim.SGD([{"params": [p]}, {"params": [p]}]), "more than one parameter group"),
])
def test_invalid_hyperparameters_raise(make_opt, error):
    with pytest.raises(ValueError, match=error):
        make_opt(nn.Parameter(np.ones(3)))


def test_zero_grad():
    p, q = nn.Parameter(np.ones(3)), nn.Parameter(np.ones(2))
    opt = optim.SGD([p, q])
    p.grad = tnet.tensor(np.ones(3))
    opt.zero_grad(set_to_none=False)
    assert (p.grad.numpy() == 0).all() and q.grad is None
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
                                         ("Adam", {"lr": 0.01, "weight_decay": 0.01}), ("AdamW", {"lr": 0.01})])
def test_frozen_parameters_are_skipped(name, kwargs, rng):
    """An optimizer over every parameter of a model with frozen ones (requires_grad False, as a
    fine-tuning script freezes a backbone) takes torch's steps and leaves the frozen ones,
    their buffers and step counts untouched; unfrozen later, they step from then on."""
    params, opt, refs, ref = make(name, kwargs, rng)
    params[0].requires_grad = refs[0].requires_grad = False
    before = params[0].numpy().copy()  # numpy() of a CPU tensor is a view
    x = rng.standard_normal(params[0].shape)
    for step in range(3):
        if step == 2:
            params[0].requires_grad = refs[0].requires_grad = True
        opt.zero_grad()
        ref.zero_grad()
        losses = [(p * tnet.tensor(x if i == 0 else np.ones(p.shape))).sum() for i, p in enumerate(params)]
        sum(losses[1:], losses[0]).backward()
        for p, r in zip(params, refs):
            r.grad = None if p.grad is None else torch.tensor(p.grad.numpy(), dtype=torch.float64)
        assert (params[0].grad is None) == (step < 2)
        opt.step()
        ref.step()
        if step < 2:
            assert (params[0].numpy() == before).all() and opt.state[params[0]]["step"].item() == 0
        assert_same(params, opt, refs, ref, f"{name} step {step}")


def test_frozen_parameters_in_a_captured_step(rng):
    """graph.TrainStep over a model with a frozen layer (a real capture on the GPU, the same
    function eagerly on the CPU): the frozen layer keeps its weights, the others train."""
    from tnet import graph, recipes
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    model[0].requires_grad_(False)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    frozen, trained = model[0].weight.numpy().copy(), model[2].weight.numpy().copy()
    x = torch.tensor(rng.standard_normal((4, 6)), dtype=torch.float32, device=tnet.DEVICE)
    y = torch.tensor([0, 2, 1, 2], device=tnet.DEVICE)
    step = graph.TrainStep(recipes.make_train_step(model, opt), x, y, state=(model, opt))
    for _ in range(2):
        step(x, y)
    assert (model[0].weight.numpy() == frozen).all() and model[0].weight.grad is None
    assert not (model[2].weight.numpy() == trained).all()


# ---- Muon ----------------------------------------------------------------------------------

def newton_schulz(u, coefficients=(3.4445, -4.7750, 2.0315), steps=5, eps=1e-7):
    """torch.optim.Muon's orthogonalisation in float64 (torch's runs it in bf16 whatever the dtype)."""
    a, b, c = coefficients
    x = u.reshape(len(u), -1).double()
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = x / max(x.norm().item(), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return (x.T if tall else x).reshape(u.shape)


def muon_reference(params, grads, bufs, groups):
    """One step of torch.optim.Muon's rule in float64 on torch tensors (params of any dimension as
    [shape[0], -1] matrices); groups: each parameter's settings."""
    for p, g, buf, s in zip(params, grads, bufs, groups):
        if g is None:
            continue
        buf.lerp_(g, 1 - s["momentum"])
        u = g.lerp(buf, s["momentum"]) if s.get("nesterov", True) else buf
        rows, cols = p.shape[0], p.numel() // p.shape[0]
        rms = s.get("adjust_lr_fn") == "match_rms_adamw"
        ratio = 0.2 * max(rows, cols) ** 0.5 if rms else max(1, rows / cols) ** 0.5
        if s.get("renormalize"):  # airbench94_muon's: the filters kept at norm sqrt(rows)
            p.mul_(rows ** 0.5 / p.norm())
        p.mul_(1 - s["lr"] * s.get("weight_decay", 0.1)).add_(newton_schulz(u), alpha=-s["lr"] * ratio)


MUON_PARAMS = [((7, 5), False, 0), ((4, 9), False, 0), ((6, 3, 2, 2), True, 1), ((4, 9), False, 1),
               ((6, 3, 2, 2), False, 0)]
MUON_GROUP1 = {"lr": 0.05, "momentum": 0.8, "nesterov": False, "adjust_lr_fn": "match_rms_adamw", "renormalize": True}


def change_error(after, before, ref_after):
    """||(after - before) - (ref_after - before)|| / ||ref_after - before||: the update's error."""
    step = ref_after - before
    return ((after - before) - step).norm().item() / step.norm().item()


def test_muon_matches_its_float64_rule_within_torchs_own_bf16_error(rng):
    """Three steps with an lr change between each: tall, wide and 4-D parameters (one channels-last),
    two of each size (the same size is orthogonalised together, across groups), the second group with
    its own lr, momentum, nesterov, adjust_lr_fn and tnet's renormalize, a parameter without a
    gradient at step 1. Each update is within 3x torch.optim.Muon's own error (its bf16
    Newton-Schulz) against the float64 rule; the momentum buffers at fp32's tolerance."""
    params, refs, settings = [], [], []
    for shape, channels_last, group in MUON_PARAMS:
        p = nn.Parameter(rng.standard_normal(shape))
        if channels_last:
            p.memory = p.memory.contiguous(memory_format=torch.channels_last)
        params.append(p)
        refs.append(torch.tensor(p.numpy(), dtype=torch.float64))
        settings.append({"lr": 0.02, "momentum": 0.95, "weight_decay": 0.1, **(MUON_GROUP1 if group else {})})
    groups = [{"params": [p for p, s in zip(params, MUON_PARAMS) if s[2] == g], **(MUON_GROUP1 if g else {})}
              for g in (0, 1)]
    opt = optim.Muon(groups, lr=0.02)
    bufs = [torch.zeros_like(r) for r in refs]
    two_d = [i for i, (shape, _, g) in enumerate(MUON_PARAMS) if len(shape) == 2 and g == 0]
    torch_ref = torch.optim.Muon([refs[i].float() for i in two_d], lr=0.02)
    sched = optim.LambdaLR(opt, schedule)
    for step in range(3):
        skip = {1} if step == 1 else set()
        grads = [None if i in skip else torch.tensor(rng.standard_normal(p.shape)) for i, p in enumerate(params)]
        for p, g in zip(params, grads):
            p.grad = None if g is None else tnet.tensor(g.numpy())
        for t, i in zip(torch_ref.param_groups[0]["params"], two_d):
            t.grad = None if grads[i] is None else grads[i].float()
        before = [r.clone() for r in refs]
        torch_before = [t.detach().clone().double() for t in torch_ref.param_groups[0]["params"]]
        opt.step()
        torch_ref.step()
        muon_reference(refs, grads, bufs, settings)
        scale = schedule(step + 1)
        for s, g in zip(settings, MUON_PARAMS):
            s["lr"] = (MUON_GROUP1["lr"] if g[2] else 0.02) * scale
        torch_ref.param_groups[0]["lr"] = 0.02 * scale
        sched.step()
        for t, i, b in zip(torch_ref.param_groups[0]["params"], two_d, torch_before):
            if grads[i] is None:
                continue
            bound = max(3 * change_error(t.detach().double(), b, refs[i]), TOL["bf16"])
            err = change_error(torch.tensor(params[i].numpy(), dtype=torch.float64), before[i], refs[i])
            assert err <= bound, f"step {step}, parameter {i}: {err:.2e} > {bound:.2e}"
        for i, p in enumerate(params):
            if grads[i] is not None:
                err = change_error(torch.tensor(p.numpy(), dtype=torch.float64), before[i], refs[i])
                assert err <= 4 * TOL["bf16"], f"step {step}, parameter {i} {p.shape}: {err:.2e}"
            assert_close(opt.state[p]["momentum_buffer"], bufs[i], TOL["ieee"], f"step {step}, buffer {i}")


@pytest.mark.parametrize("momentum", [0.9, 0.0])
def test_sgd_resumes_from_torchs_state_dict(momentum):
    """torch's SGD state: a momentum_buffer (None without momentum) and no step; the buffer is carried on, not
    taken for a first step's (which would set it to the gradient)."""
    ref = torch.nn.Parameter(torch.zeros(3))
    theirs = torch.optim.SGD([ref], lr=0.1, momentum=momentum)
    ref.grad = torch.ones(3)
    theirs.step()
    saved = theirs.state_dict()
    p = nn.Parameter(tnet.tensor(ref.detach().numpy()))
    ours = optim.SGD([p], lr=0.1, momentum=momentum)
    ours.load_state_dict({"state": {i: {k: None if v is None else v.numpy() for k, v in entry.items()}
                                    for i, entry in saved["state"].items()},
                          "param_groups": saved["param_groups"]})
    theirs.step()
    p.grad = tnet.ones(3)
    ours.step()
    assert_close(p.numpy(), ref.detach().numpy(), 1e-6, "parameter after the resumed step")


def test_muon_state_dict_and_errors(rng):
    """Muon's state is torch's (momentum_buffer), resumed exactly; torch's checks, one-line, as
    ValueErrors; a GradScaler's step and Caffe's multipliers are refused."""
    p, q = nn.Parameter(rng.standard_normal((5, 4))), nn.Parameter(rng.standard_normal((5, 4)))
    opt = optim.Muon([p], lr=0.05)
    p.grad = tnet.tensor(rng.standard_normal((5, 4)))
    opt.step()
    twin = optim.Muon([q], lr=0.05)
    q.memory.copy_(p.memory)
    twin.load_state_dict(opt.state_dict())
    g = rng.standard_normal((5, 4))
    p.grad, q.grad = tnet.tensor(g), tnet.tensor(g)
    opt.step()
    twin.step()
    assert (p.numpy() == q.numpy()).all() and set(opt.state_dict()["state"][0]) == {"step", "momentum_buffer"}
    for make_opt, error in [(lambda: optim.Muon([nn.Parameter(np.ones(3))]), "Muon only supports parameters of 2"),
                            (lambda: optim.Muon([p], momentum=-0.1), "Muon: invalid momentum value -0.1"),
                            (lambda: optim.Muon([p], adjust_lr_fn="rms"), "Muon: invalid adjust_lr_fn rms"),
                            (lambda: optim.Muon([p], ns_steps=100), "Muon: invalid ns_steps"),
                            (lambda: optim.Muon([p], ns_coefficients=(1.0, 2.0)), "Muon: invalid ns_coefficients"),
                            (lambda: optim.Muon([p], lr=-1.0), "Muon: invalid learning rate -1.0")]:
        with pytest.raises(ValueError, match=error):
            make_opt()
    with pytest.raises(ValueError, match="GradScaler"):
        opt._step(tnet.tensor([1.0]).memory, tnet.tensor([0.0]).memory)
    r = nn.Parameter(np.ones((2, 2)), 2.0)
    r.grad = tnet.tensor(np.ones((2, 2)))
    with pytest.raises(ValueError, match="lr_mult"):
        optim.Muon([r]).step()
