"""The autotuner (kernels/autotune.py): each tuning key's config is remembered after its first
launch; a compiled kernel is launched directly, per specialization, on the GPU."""
from types import SimpleNamespace

import pytest
import torch

from tnet.kernels import autotune, gemm, pointwise
from tnet.kernels.autotune import _Fast, _int_tuples, _spec, compile_shard
from helpers import DEV, TOL, assert_close, f64, randn


def test_autotuned_kernel_remembers_each_key():
    """After its first launch a tuning key skips Triton's autotuner; a new dtype is a new key."""
    a, b = randn(19, 23), randn(23, 11)
    gemm.gemm_kernel.chosen.clear()
    for _ in range(2):
        assert_close(gemm.matmul(a, b, precision="ieee"), f64(a) @ f64(b), TOL["ieee"], "fp32")
    assert len(gemm.gemm_kernel.chosen) == 1
    a16, b16 = a.bfloat16(), b.bfloat16()
    assert_close(f64(gemm.matmul(a16, b16)), f64(a16) @ f64(b16), TOL["bf16"], "bf16")
    assert len(gemm.gemm_kernel.chosen) == 2


def test_launch_hooks_are_seen_set_only_when_set(monkeypatch):
    """Triton's hook chains are never None: an empty one is no hook."""
    enter, leave = (type("HookChain", (), {"calls": []})() for _ in range(2))
    hooks = lambda enter, leave: monkeypatch.setattr(  # noqa: E731
        autotune, "_RUNTIME", SimpleNamespace(launch_enter_hook=enter, launch_exit_hook=leave))
    for set_ in ((None, None), (enter, leave)):
        hooks(*set_)
        assert not autotune._hooks_set()
    for set_ in ((print, None), (None, print)):
        hooks(*set_)
        assert autotune._hooks_set()
    leave.calls.append(print)
    hooks(enter, leave)
    assert autotune._hooks_set()


def test_spec_tells_apart_what_triton_specializes_on():
    """_Fast's key for a non-constexpr argument tells apart all that Triton's specialization does:
    a tensor's dtype and 16-byte alignment, ints by value (finer than Triton's 1-ness, multiple of
    16 and type range), a float's or bool's type, a tuple's elements."""
    x = torch.zeros(8)
    assert _spec(1) != _spec(16) != _spec(17) != _spec(2**31) and _spec(True) != _spec(1)
    assert _spec(x) == _spec(torch.ones(3)) != _spec(x[1:]) and _spec(x) != _spec(x.bfloat16())
    assert _spec(1.0) == _spec(2.5) == float and _spec((4, x[1:])) == (4, _spec(x[1:]))
    assert _int_tuples([x, 3, (4, (1, 16))]) and not _int_tuples([(4, 1.0)]) and not _int_tuples([((x,),)])
    assert _spec(None) is None and _spec("add") == "add"


@pytest.mark.skipif(DEV.type != "cuda", reason="the fast launch runs on the GPU (the interpreter keeps Triton's)")
def test_fast_launch_keeps_a_kernel_per_specialization():
    """A launched kernel is kept per specialization: a misaligned view, n of 1 or a multiple of 16
    and another dtype each get their own compiled kernel, and every launch computes the right thing."""
    kernel = pointwise.relu_kernel.fn
    assert isinstance(kernel, _Fast)
    base = torch.randn(4096, device=DEV)
    for x in (base, base[1:], base[:1], base[:16], base[:17], base[3:20], base.bfloat16(), base.bfloat16()[1:]):
        for _ in range(2):  # the second launch takes the fast path
            assert torch.equal(pointwise.relu(x), torch.relu(x))
    keys = [k for k in kernel.fast if k[0][0][0] in (torch.float32, torch.bfloat16)]
    assert {k[0][0] for k in keys} == {(dtype, aligned) for dtype in (torch.float32, torch.bfloat16)
                                       for aligned in (True, False)}


@pytest.mark.skipif(DEV.type != "cuda", reason="the bound launch runs on the GPU (the interpreter keeps Triton's)")
def test_bound_launch_serves_a_plan_in_all_but_addresses():
    """An element-wise plan (and relu's launches) keeps a Bound launch after its first launches; later
    calls go through it with new tensors, misaligned views fall back to the kernel's own path, float
    numbers change, and integer numbers (which specialize by value) never bind."""
    from tnet.kernels.pointwise import _PLANS
    base, other = torch.randn(4097, device=DEV), torch.randn(4097, device=DEV)
    for _ in range(3):
        a, b = torch.randn(4096, device=DEV), torch.randn(4096, device=DEV)
        assert torch.equal(pointwise.pointwise("add", a, b), a + b)
        for scale in (2.5, -1.0):
            assert torch.equal(pointwise.pointwise("mul", a, scale), a * scale)
        assert torch.equal(pointwise.pointwise("add", base[1:], other[:-1]), base[1:] + other[:-1])
        n = torch.arange(4096, device=DEV)
        for k in (1, 16, 7):
            assert torch.equal(pointwise.pointwise("add", n, k), n + k)
        for x in (a, base[1:], a.bfloat16()):
            y = pointwise.relu(x)
            assert torch.equal(y, torch.relu(x))
            assert torch.equal(pointwise.relu_backward(y, x), torch.where(y > 0, x, 0))
    assert {key[0] for key in pointwise._FLAT} >= {pointwise.relu_kernel, pointwise.relu_backward_kernel}

    def first(key):
        """The first operand's (shape, dtype) in a plan's key: _signature's flat form (two tensors), or
        its tuple per operand (a number's: its type)."""
        if isinstance(key[4], torch.Size):
            return key[4], key[6]
        return (key[4][0], key[4][2]) if isinstance(key[4], tuple) else (None, None)
    bound = {key[0]: plan in pointwise._BOUND for key, plan in _PLANS.items()
             if first(key) == ((4096,), torch.float32)}
    assert bound["add"] and bound["mul"]
    # an int64 tensor with an int number (other tests in this process may bind int64 plans of two tensors)
    assert not any(plan in pointwise._BOUND for key, plan in _PLANS.items()
                   if first(key)[1] == torch.int64 and int in key[4:])


@pytest.mark.skipif(DEV.type != "cuda", reason="the bound launch runs on the GPU (the interpreter keeps Triton's)")
def test_bound_batch_norm_launches_compute_each_batch():
    """Batch norm's six launches go through their Bound launches from the second step on: each
    step's batch gives its own statistics, output and gradients (fp32 and bf16 weights alike)."""
    from tnet.kernels import norm
    for wdtype in (torch.float32, torch.bfloat16):
        w, b = torch.rand(24, device=DEV).to(wdtype) + 0.5, torch.randn(24, device=DEV).to(wdtype)
        for _ in range(3):
            x = torch.randn(16, 24, 5, 5, device=DEV).contiguous(memory_format=torch.channels_last)
            dy = torch.randn_like(x)
            y, mean, invstd = norm.batch_norm_train(x, w, b)
            ref = torch.nn.functional.batch_norm(f64(x), None, None, f64(w), f64(b), training=True)
            assert_close(f64(y), ref, TOL["ieee"], "y")
            dx, dw, db = norm.batch_norm_backward(dy, x, mean, invstd, w)
            xr, wr, br = (f64(t).requires_grad_() for t in (x, w, b))
            torch.nn.functional.batch_norm(xr, None, None, wr, br, training=True).backward(f64(dy))
            for got, want in ((dx, xr.grad), (dw, wr.grad), (db, br.grad)):
                assert_close(f64(got), want, 1e-4, "grad")
    assert len(norm._BOUND) >= 6


@pytest.mark.skipif(DEV.type != "cuda", reason="the bound launch runs on the GPU (the interpreter keeps Triton's)")
def test_bound_convolution_launches_compute_each_batch():
    """The convolution's forward, input-gradient and weight-gradient launches go through their Bound
    launches from the second call on, each call on its own tensors (the weight gradient's parts
    summed as its first launch split them)."""
    from tnet.kernels import conv
    for _ in range(3):
        x = torch.randn(8, 32, 9, 9, device=DEV).contiguous(memory_format=torch.channels_last)
        w = torch.randn(48, 32, 3, 3, device=DEV)
        dy = torch.randn(8, 48, 5, 5, device=DEV).contiguous(memory_format=torch.channels_last)
        xd, wd, dyd = f64(x), f64(w), f64(dy)
        assert_close(f64(conv.conv2d(x, w, 2, 1, precision="ieee")), torch.nn.functional.conv2d(xd, wd, None, 2, 1),
                     TOL["ieee"], "y")
        assert_close(f64(conv.conv2d_input(x.shape, w, dy, 2, 1, precision="ieee")),
                     torch.nn.grad.conv2d_input(x.shape, wd, dyd, 2, 1), TOL["ieee"], "dx")
        assert_close(f64(conv.conv2d_weight(x, w.shape, dy, 2, 1, precision="ieee")),
                     torch.nn.grad.conv2d_weight(xd, w.shape, dyd, 2, 1), TOL["ieee"], "dw")
    assert {key[0] for key in conv._BOUND} == {conv.conv_kernel, conv.weight_grad_kernel}


def test_compile_modes_name_a_share_of_the_configs():
    """TNET_AUTOTUNE=compile:I/N (zoo.warm's processes) names share I of N; a bad one raises at once."""
    assert compile_shard("compile") == (0, 1) and compile_shard("compile:2/8") == (2, 8)
    assert compile_shard("1") is None and compile_shard("0") is None
    for bad in ("compile:8/8", "compile:x/2", "compile:1"):
        with pytest.raises(ValueError, match="TNET_AUTOTUNE"):
            compile_shard(bad)


@pytest.mark.skipif(DEV.type != "cuda", reason="the bound launch runs on the GPU (the interpreter keeps Triton's)")
def test_bound_gemm_launches_compute_each_product():
    """gemm_kernel's launches (small products: no TMA) go through their Bound launches from the second call
    on, each on its own operands, with a bias and accumulating alike."""
    for _ in range(3):
        a, b, bias = randn(37, 29), randn(29, 45), randn(45)
        assert_close(gemm.matmul(a, b, bias=bias, precision="ieee"), f64(a) @ f64(b) + f64(bias), TOL["ieee"], "ab")
        out = randn(37, 45)
        want = f64(out) + f64(a) @ f64(b)
        assert_close(gemm.matmul(a, b, out=out, accumulate=True, precision="ieee"), want, TOL["ieee"], "c += ab")
    assert len(gemm._BOUND) >= 2


@pytest.mark.skipif(DEV.type != "cuda", reason="the bound launch runs on the GPU (the interpreter keeps Triton's)")
def test_bound_reduction_loss_and_step_launches_compute_each_call():
    """The reductions' (sum_except's parts and reduce's), cross_entropy's, scale_'s, add_'s and the
    optimizer's step count's launches go through their Bound launches from the second call on, each on
    its own tensors."""
    from tnet.kernels import optim, reduce, softmax
    for _ in range(3):
        x = randn(3000, 7)
        assert_close(reduce.sum_except(x, 1), f64(x).sum(0), TOL["ieee"], "sum_except")
        assert_close(reduce.reduce(x, (0, 1), divisor=2.0), f64(x).sum().reshape(1, 1) / 2, TOL["ieee"], "reduce")
        logits, labels = randn(5, 10), torch.randint(0, 10, (5,), device=DEV)
        loss, dlogits = softmax.cross_entropy(logits, labels)
        xr = f64(logits).requires_grad_()
        want = torch.nn.functional.cross_entropy(xr, labels.cpu())
        want.backward()
        assert_close(f64(loss), want.detach(), TOL["ieee"], "loss")
        assert_close(f64(dlogits), xr.grad, TOL["ieee"], "dlogits")
        a, b, s = randn(100), randn(100), randn(1)
        want = (f64(a) + f64(b)) * f64(s)
        assert_close(f64(pointwise.scale_(pointwise.add_(a, b), s)), want, TOL["ieee"], "(a + b) * s")
        steps, took = torch.zeros(3, device=DEV), torch.tensor([1.0, 0.0, 1.0], device=DEV)
        optim.count_steps_(steps, took)
        optim.count_steps_(steps, took)
        assert steps.tolist() == [2.0, 0.0, 2.0]
    assert {key[0] for key in reduce._BOUND} == {reduce.sum_kernel, reduce.reduce_kernel}
    assert softmax._BOUND and optim._BOUND


def test_fastest_runs_the_candidate_that_times_fastest_once_per_key(monkeypatch):
    """autotune.fastest (the depthwise forward's rows or pixel blocks): on the GPU each candidate runs
    once (its kernels tuned) and is timed by warm_bench; the fastest runs, and alone at the key's later
    calls. The interpreter runs the first and keeps no choice; a compile mode runs each and keeps the first."""
    monkeypatch.setattr(autotune, "INTERPRET", False)
    monkeypatch.setattr(autotune, "TUNE", True)
    monkeypatch.setattr(autotune, "SHARD", None)
    monkeypatch.setattr(autotune, "_FASTEST", {})
    monkeypatch.setattr(autotune, "warm_bench", lambda f, quantiles: {"a": 2.0, "b": 1.0}[f.__name__])
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    calls = []

    def a():
        calls.append("a")

    def b():
        calls.append("b")
    assert autotune.fastest("k", (a, b)) == 1 and calls == ["a", "b", "b"]
    calls.clear()
    assert autotune.fastest("k", (a, b)) == 1 and calls == ["b"]
    assert autotune.chosen_configs()["fastest", "k"] == "b"  # what bench.py convs reports beside the tiles
    monkeypatch.setattr(autotune, "SHARD", (0, 2))
    calls.clear()
    assert autotune.fastest("compiled", (a, b)) == 0 and calls == ["a", "b", "a"]
    monkeypatch.setattr(autotune, "INTERPRET", True)
    calls.clear()
    assert autotune.fastest("interpreted", (a, b)) == 0 and calls == ["a"] and "interpreted" not in autotune._FASTEST
