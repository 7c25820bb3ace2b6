"""tnet.optim.swa_utils against torch.optim.swa_utils (AveragedModel's SWA and EMA averages over a
few updates, SWALR's lrs to the bit, update_bn's statistics), and tnet._foreach_* against torch's."""
import numpy as np
import pytest
import torch

import tnet
from tnet import nn, optim
from tnet.optim import swa_utils
from helpers import TOL, assert_close


def twins(rng):
    """A small tnet model with a BatchNorm and its torch twin, same weights."""
    model = nn.Sequential(nn.Linear(5, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    ref.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    return model, ref


def perturb(model, ref, rng):
    """New weights for both, and a training forward that moves the BatchNorm's statistics."""
    state = {k: (v + rng.standard_normal(v.shape).astype(np.float32) if v.dtype == np.float32 else v)
             for k, v in ((k, v.numpy()) for k, v in model.state_dict().items())}
    model.load_state_dict(state)
    ref.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    x = rng.standard_normal((4, 5)).astype(np.float32)
    model(tnet.tensor(x))
    ref(torch.tensor(x))


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_avg_fn"])
def test_averaged_model_matches_torch(kind, ieee):
    rng = np.random.default_rng(0)
    model, ref = twins(rng)
    make = {"swa": lambda su: {},
            "ema_multi": lambda su: {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9), "use_buffers": True},
            "ema_avg_fn": lambda su: {"avg_fn": su.get_ema_avg_fn(0.8)}}[kind]
    avg = swa_utils.AveragedModel(model, **make(swa_utils))
    avg_ref = torch.optim.swa_utils.AveragedModel(ref, **make(torch.optim.swa_utils))
    for _ in range(3):
        perturb(model, ref, rng)
        avg.update_parameters(model)
        avg_ref.update_parameters(ref)
    got, want = avg.state_dict(), avg_ref.state_dict()
    assert list(got) == list(want)
    for k in want:
        assert_close(got[k], want[k], TOL["ieee"], k)
    assert int(avg.n_averaged.item()) == 3
    x = rng.standard_normal((3, 5)).astype(np.float32)
    avg.eval(), avg_ref.eval()
    assert_close(avg(tnet.tensor(x)), avg_ref(torch.tensor(x)).detach(), TOL["ieee"], "forward")


def test_averaging_functions_and_errors():
    with pytest.raises(ValueError):
        swa_utils.get_ema_multi_avg_fn(1.5)
    with pytest.raises(ValueError):
        swa_utils.get_ema_avg_fn(-0.1)
    with pytest.raises(AssertionError):
        swa_utils.AveragedModel(nn.Linear(2, 2), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    a, b = [tnet.tensor([1.0, 2.0, 4.0])], [tnet.tensor([3.0, 0.0, 1.0])]
    a_ref, b_ref = [torch.tensor([1.0, 2.0, 4.0])], [torch.tensor([3.0, 0.0, 1.0])]
    swa_utils.get_swa_multi_avg_fn()(a, b, tnet.tensor(2))
    torch.optim.swa_utils.get_swa_multi_avg_fn()(a_ref, b_ref, torch.tensor(2))
    assert_close(a[0], a_ref[0], TOL["ieee"], "swa multi")
    out = swa_utils.get_swa_avg_fn()(a[0], b[0], 3)
    assert_close(out, torch.optim.swa_utils.get_swa_avg_fn()(a_ref[0], b_ref[0], 3), TOL["ieee"], "swa avg_fn")


@pytest.mark.parametrize("strategy,epochs", [("cos", 3), ("linear", 4), ("cos", 0)])
def test_swalr_lrs_bitwise(strategy, epochs):
    p, r = nn.Parameter(np.ones(3, np.float32)), torch.ones(3, requires_grad=True)
    q, s = nn.Parameter(np.ones(2, np.float32)), torch.ones(2, requires_grad=True)
    opt = optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.1)
    ref = torch.optim.SGD([{"params": [r]}, {"params": [s], "lr": 0.3}], lr=0.1)
    sched = swa_utils.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=epochs, anneal_strategy=strategy)
    sched_ref = torch.optim.swa_utils.SWALR(ref, swa_lr=[0.05, 0.01], anneal_epochs=epochs, anneal_strategy=strategy)
    seq, seq_ref = [sched.get_last_lr()], [sched_ref.get_last_lr()]
    for _ in range(6):
        opt.step(), ref.step()
        sched.step(), sched_ref.step()
        seq.append(sched.get_last_lr()), seq_ref.append(sched_ref.get_last_lr())
    assert seq == seq_ref
    assert [g["swa_lr"] for g in opt.param_groups] == [0.05, 0.01]
    state = sched.state_dict()
    assert set(state) == set(sched_ref.state_dict())
    again = swa_utils.SWALR(optim.SGD([nn.Parameter(np.ones(1, np.float32))], lr=0.1), swa_lr=0.2)
    again.load_state_dict(state)
    assert again.anneal_func == (again._cosine_anneal if strategy == "cos" else again._linear_anneal)


def test_swalr_errors():
    opt = optim.SGD([nn.Parameter(np.ones(1, np.float32))], lr=0.1)
    with pytest.raises(ValueError):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)
    with pytest.raises(ValueError):
        swa_utils.SWALR(opt, swa_lr=[0.1, 0.2])


def test_update_bn_matches_torch(ieee):
    rng = np.random.default_rng(1)
    model, ref = twins(rng)
    model[1].momentum = ref[1].momentum = 0.3
    batches = [rng.standard_normal((n, 5)).astype(np.float32) for n in (4, 7, 3)]
    model.eval(), ref.eval()
    swa_utils.update_bn([(tnet.tensor(x), 0) for x in batches], model)
    torch.optim.swa_utils.update_bn([(torch.tensor(x), 0) for x in batches], ref)
    got, want = model.state_dict(), ref.state_dict()
    for k in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        assert_close(got[k], want[k], TOL["ieee"], k)
    assert model[1].momentum == 0.3 and not model.training
    swa_utils.update_bn([tnet.tensor(batches[0])], nn.Linear(5, 2))  # no BatchNorm: nothing to do
    # every batch norm of torch's _BatchNorm family, BatchNorm3d too (a video or volume model's)
    stats = []
    for lib in (tnet, torch):
        volume = lib.nn.Sequential(lib.nn.Conv3d(1, 2, 1), lib.nn.BatchNorm3d(2))
        with lib.no_grad():
            volume[0].weight.fill_(1.0), volume[0].bias.fill_(0.5)
        x = np.arange(16, dtype=np.float32).reshape(2, 1, 2, 2, 2)
        lib.optim.swa_utils.update_bn([lib.tensor(x)], volume)
        stats.append((volume[1].running_mean.tolist(), volume[1].running_var.tolist(),
                      int(volume[1].num_batches_tracked)))
    assert np.allclose(stats[0][0], stats[1][0]) and np.allclose(stats[0][1], stats[1][1])
    assert stats[0][2] == stats[1][2] == 1


def pairs(rng, shapes=((3, 5), (7,))):
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return [tnet.tensor(x) for x in xs], [torch.tensor(x) for x in xs]


def test_foreach_matches_torch():
    rng = np.random.default_rng(2)
    (a, a_ref), (b, b_ref), (c, c_ref) = pairs(rng), pairs(rng), pairs(rng)
    c = [tnet.abs(t) + 0.5 for t in c]
    c_ref = [t.abs() + 0.5 for t in c_ref]
    one, one_ref = tnet.tensor(1.5), torch.tensor(1.5)
    calls = [  # (name, args built from (a, b, c, one)), in place on a
        ("_foreach_add_", lambda a, b, c, o: (a, 2.0)), ("_foreach_add_", lambda a, b, c, o: (a, [1.0, -2.0])),
        ("_foreach_add_", lambda a, b, c, o: (a, b), {"alpha": 0.5}), ("_foreach_add_", lambda a, b, c, o: (a, o)),
        ("_foreach_sub_", lambda a, b, c, o: (a, b), {"alpha": 2}), ("_foreach_sub_", lambda a, b, c, o: (a, 0.25)),
        ("_foreach_mul_", lambda a, b, c, o: (a, [0.5, 3.0])), ("_foreach_mul_", lambda a, b, c, o: (a, o)),
        ("_foreach_mul_", lambda a, b, c, o: (a, c)), ("_foreach_div_", lambda a, b, c, o: (a, c)),
        ("_foreach_div_", lambda a, b, c, o: (a, 3.0)), ("_foreach_lerp_", lambda a, b, c, o: (a, b, 0.3)),
        ("_foreach_lerp_", lambda a, b, c, o: (a, b, c)), ("_foreach_lerp_", lambda a, b, c, o: (a, b, [0.1, 0.9])),
        ("_foreach_addcmul_", lambda a, b, c, o: (a, b, c, 0.5)),
        ("_foreach_addcmul_", lambda a, b, c, o: (a, b, c, [2.0, -1.0])),
        ("_foreach_addcdiv_", lambda a, b, c, o: (a, b, c, -0.5)),
        ("_foreach_maximum_", lambda a, b, c, o: (a, b)), ("_foreach_maximum_", lambda a, b, c, o: (a, 0.1)),
        ("_foreach_maximum_", lambda a, b, c, o: (a, [0.0, -0.2])),
        ("_foreach_copy_", lambda a, b, c, o: (a, c)), ("_foreach_sqrt_", lambda a, b, c, o: (a,)),
    ]
    for name, args, *kw in calls:
        kw = kw[0] if kw else {}
        getattr(tnet, name)(*args(a, b, c, one), **kw)
        getattr(torch, name)(*args(a_ref, b_ref, c_ref, one_ref), **kw)
        for t, r in zip(a, a_ref):
            assert_close(t, r, TOL["ieee"], name)
    tnet._foreach_addcdiv_(a, b, c, tnet.tensor([0.5, 2.0]))
    torch._foreach_addcdiv_(a_ref, b_ref, c_ref, torch.tensor([0.5, 2.0]))
    outs = [("_foreach_add", (b, c), {"alpha": 3}), ("_foreach_sub", (b, 1.0), {}), ("_foreach_mul", (b, 2.0), {}),
            ("_foreach_div", (b, c), {}), ("_foreach_sqrt", (c,), {}), ("_foreach_neg", (b,), {}),
            ("_foreach_norm", (b,), {}), ("_foreach_norm", (b, 1), {}), ("_foreach_norm", (b, float("inf")), {})]
    refs = {id(b): b_ref, id(c): c_ref}
    for name, args, kw in outs:
        got = getattr(tnet, name)(*args, **kw)
        want = getattr(torch, name)(*[refs.get(id(v), v) for v in args], **kw)
        for t, r in zip(got, want):
            assert_close(t, r, TOL["ieee"], name)
    for t, r in zip(a, a_ref):
        assert_close(t, r, TOL["ieee"], "addcdiv_ with a tensor of values")
    tnet._foreach_zero_(a)
    assert all(not t.numpy().any() for t in a)


def test_every_torch_foreach_is_there_and_matches():
    """Every torch._foreach_* name exists in tnet; the unary ones (out of place and in place), the binary
    ones with a number, numbers and tensors, the ternary ones out of place, clone, max, powsum and mm
    match torch's on inputs in (0.2, 0.9), where each function is defined."""
    assert [n for n in dir(torch) if n.startswith("_foreach_") and not hasattr(tnet, n)] == []
    rng = np.random.default_rng(4)
    xs = [rng.uniform(0.2, 0.9, s).astype(np.float32) for s in ((3,), (2, 5))]
    ys = [rng.uniform(0.2, 0.9, s).astype(np.float32) for s in ((3,), (2, 5))]
    calls = [(name, ()) for name in tnet.functional.foreach.UNARY]
    calls += [(name, (second,)) for name in ("clamp_min", "clamp_max", "maximum", "minimum", "pow")
              for second in (0.5, [0.3, 0.7], "ys")]
    calls += [("addcmul", ("ys", "ys", 0.5)), ("addcdiv", ("ys", "ys", [2.0, -1.0])), ("lerp", ("ys", 0.3)),
              ("lerp", ("ys", "ys"))]
    for name, args in calls:
        for suffix in ("", "_"):
            got, want = [tnet.tensor(x) for x in xs], [torch.tensor(x) for x in xs]
            out = getattr(tnet, f"_foreach_{name}{suffix}")(got, *[[tnet.tensor(y) for y in ys] if a == "ys" else a
                                                                  for a in args])
            out_ref = getattr(torch, f"_foreach_{name}{suffix}")(want, *[[torch.tensor(y) for y in ys] if a == "ys"
                                                                        else a for a in args])
            for t, r in zip(out or got, out_ref or want):
                assert_close(t, r, TOL["ieee"], f"_foreach_{name}{suffix}{args}")
    got, want = [tnet.tensor(x) for x in xs], [torch.tensor(x) for x in xs]
    outs = [("_foreach_clone", (), {}), ("_foreach_max", (), {}), ("_foreach_powsum", (), {}),
            ("_foreach_powsum", (3,), {}), ("_foreach_powsum", (0,), {}), ("_foreach_pow", (), {"scalar": 2.0})]
    for name, args, kw in outs:
        if "scalar" in kw:  # torch's pow(Scalar self, Tensor[] exponent)
            out, out_ref = tnet._foreach_pow(kw["scalar"], got), torch._foreach_pow(kw["scalar"], want)
        else:
            out, out_ref = getattr(tnet, name)(got, *args), getattr(torch, name)(want, *args)
        for t, r in zip(out, out_ref):
            assert_close(t, r, TOL["ieee"], f"{name}{args}")
    mats = [rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)]
    out = tnet._foreach_mm([tnet.tensor(xs[0].reshape(1, 3)), got[1]], [tnet.tensor(m) for m in mats])
    out_ref = torch._foreach_mm([torch.tensor(xs[0].reshape(1, 3)), want[1]], [torch.tensor(m) for m in mats])
    for t, r in zip(out, out_ref):
        assert_close(t, r, TOL["ieee"], "_foreach_mm")
    with pytest.raises(TypeError):
        tnet._foreach_mul_(got, 1.0, alpha=2)
    # torch's overloads' keywords (timm's ModelEmaV3 calls _foreach_mul_(values, scalar=decay))
    keyworded = [("_foreach_mul_", {"scalar": 0.5}), ("_foreach_add_", {"other": "ys", "alpha": 0.5}),
                 ("_foreach_clamp_min_", {"scalars": [0.3, 0.7]}), ("_foreach_pow_", {"exponent": 2.0}),
                 ("_foreach_lerp_", {"tensors1": "ys", "weight": 0.25}),
                 ("_foreach_addcmul_", {"tensor1": "ys", "tensor2": "ys", "scalars": [0.5, 2.0]}),
                 ("_foreach_addcdiv_", {"tensor1": "ys", "tensor2": "ys"})]
    for name, kw in keyworded:
        getattr(tnet, name)(got, **{k: [tnet.tensor(y) for y in ys] if v == "ys" else v for k, v in kw.items()})
        getattr(torch, name)(want, **{k: [torch.tensor(y) for y in ys] if v == "ys" else v for k, v in kw.items()})
        for t, r in zip(got, want):
            assert_close(t, r, TOL["ieee"], f"{name}{kw}")

def test_foreach_gradient_and_errors():
    rng = np.random.default_rng(3)
    (x, x_ref), (y, y_ref) = pairs(rng), pairs(rng)
    for t in x + x_ref:
        t.requires_grad_()
    sum(tnet.sum(t) for t in tnet._foreach_mul(tnet._foreach_add(x, y, alpha=2), x)).backward()
    sum(t.sum() for t in torch._foreach_mul(torch._foreach_add(x_ref, y_ref, alpha=2), x_ref)).backward()
    for t, r in zip(x, x_ref):
        assert_close(t.grad, r.grad, TOL["ieee"], "gradient")
    with pytest.raises(RuntimeError, match="same number of tensors"):
        tnet._foreach_add_(y, [y[0]])
    with pytest.raises(RuntimeError, match="scalar list"):
        tnet._foreach_mul_(y, [1.0])
    with pytest.raises(RuntimeError, match="at least one tensor"):
        tnet._foreach_add_([], 1.0)
    with pytest.raises(TypeError):
        tnet._foreach_add_(y, 1.0, alpha=2)
    with pytest.raises(RuntimeError, match="leaf"):
        tnet._foreach_add_(x, 1.0)


def test_parameters_to_vector_and_back():
    model = nn.Linear(3, 2)
    ref = torch.nn.Linear(3, 2)
    ref.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    vec = nn.utils.parameters_to_vector(model.parameters())
    assert_close(vec, torch.nn.utils.parameters_to_vector(ref.parameters()).detach(), 0, "parameters_to_vector")
    tnet.sum(vec * vec).backward()
    assert_close(model.weight.grad, 2 * ref.weight.detach(), TOL["ieee"], "gradient")
    new = tnet.arange(8, dtype=tnet.float32)
    nn.utils.vector_to_parameters(new, model.parameters())
    assert model.weight.numpy().tolist() == [[0, 1, 2], [3, 4, 5]] and model.bias.numpy().tolist() == [6, 7]
    with pytest.raises(TypeError):
        nn.utils.vector_to_parameters([1.0], model.parameters())


def test_pad_sequence_matches_torch():
    from tnet.nn.utils.rnn import pad_sequence
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((n, 2)).astype(np.float32) for n in (3, 1, 4)]
    seqs = [tnet.tensor(x, requires_grad=True) for x in xs]
    refs = [torch.tensor(x, requires_grad=True) for x in xs]
    for kw in ({}, {"batch_first": True, "padding_value": -1.5}, {"padding_side": "left"}):
        out, want = pad_sequence(seqs, **kw), torch.nn.utils.rnn.pad_sequence(refs, **kw)
        assert_close(out, want.detach(), 0, str(kw))
    tnet.sum(out * out).backward()
    (want * want).sum().backward()
    for s, r in zip(seqs, refs):
        assert_close(s.grad, r.grad, TOL["ieee"], "gradient")
    with pytest.raises(RuntimeError):
        pad_sequence([])
    with pytest.raises(RuntimeError):
        pad_sequence(seqs, padding_side="middle")


def test_pad_sequence_of_mixed_dtypes_takes_the_firsts_as_torch():
    """torch pads into a tensor made like the first sequence: an int64 one first truncates the floats after it,
    a float32 one first lifts a float16 one (its gradient reaching it); tnet promoted them (float32 where torch
    gave int64)."""
    from tnet.nn.utils.rnn import pad_sequence
    for lib, pad in ((torch, torch.nn.utils.rnn.pad_sequence), (tnet, pad_sequence)):
        out = pad([lib.tensor([1, 2]), lib.tensor([1.5, -2.7])], batch_first=True)
        assert out.dtype == torch.int64 and out.tolist() == [[1, 2], [1, -2]], lib
        h = lib.tensor([0.5], dtype=torch.float16, requires_grad=True)
        out = pad([lib.tensor([1.0, 2.0]), h])
        assert out.dtype == torch.float32
        out.sum().backward()
        assert h.grad.dtype == torch.float16 and h.grad.tolist() == [1.0]
        with pytest.raises(TypeError, match="batch_first"):  # the parser's (tnet took -7 as True)
            pad([lib.tensor([1.0])], batch_first=-7)
        # each sequence is copied into its rows of the first's trailing shape, broadcast (tnet's stack raised)
        assert pad([lib.tensor([[1.0], [2.0]]), lib.tensor([3.0])], batch_first=True).tolist() == [[[1.0], [2.0]], [[3.0], [0.0]]]
        assert pad([lib.tensor([[1.0, 2.0]]), lib.tensor([3.0, 4.0])]).tolist() == [[[1.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [3.0, 4.0]]]
        with pytest.raises(RuntimeError):
            pad([lib.tensor([[1.0], [2.0]]), lib.tensor([3.0, 4.0])])


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_random_of_small_integers_spans_the_dtype_as_torch(dtype):
    """random_() of uint8, int8 and int16 draws in [0, the dtype's largest] as torch's (tnet raised KeyError)."""
    x = tnet.zeros(400, dtype=dtype).random_()
    v = x.numpy()
    assert x.dtype == dtype and v.min() >= 0 and v.max() <= torch.iinfo(dtype).max and len(set(v.tolist())) > 50
    if dtype != torch.uint8:
        assert set(tnet.zeros(60, dtype=dtype).random_(-2, 2).numpy().tolist()) == {-2, -1, 0, 1}


@pytest.mark.parametrize("dtype,bounds", [(torch.bool, (-3, 4)), (torch.bool, (0, 3)), (torch.uint8, (-1, 5)),
                                          (torch.uint8, (0, 257)), (torch.int8, (0, 300))])
def test_random_bounds_outside_the_dtype_raise_as_torch(dtype, bounds):
    """random_(from, to) checks [from, to) against an integer dtype's range as torch's (and randint's): tnet drew
    and wrapped (a bool's -3)."""
    for lib in (torch, tnet):
        with pytest.raises(RuntimeError, match="out of bounds for"):
            lib.zeros(3, dtype=dtype).random_(*bounds)
    assert tnet.zeros(3, dtype=torch.uint8).random_(0, 256).dtype == torch.uint8


def test_random_():
    tnet.manual_seed(5)
    x = tnet.empty(200).random_(3, 7)
    values = x.numpy()
    assert set(values.tolist()) == {3, 4, 5, 6}
    tnet.manual_seed(5)
    assert (tnet.empty(200).random_(3, 7).numpy() == values).all()
    assert set(tnet.empty(50, dtype=tnet.int64).random_(2).numpy().tolist()) == {0, 1}
    assert tnet.empty(50).random_().numpy().max() <= 2 ** 24
    assert tnet.empty(30, dtype=tnet.bool).random_().numpy().any()
    with pytest.raises(RuntimeError, match="less than"):
        tnet.empty(3).random_(5, 5)
