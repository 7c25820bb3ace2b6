"""tnet.utils.checkpoint against torch.utils.checkpoint (use_reentrant=False): the same gradients as
without it, for parameters whether or not the input requires grad, dropout's masks drawn again alike,
batch norm's running statistics updated twice as torch's, checkpoint_sequential, autocast, the tape cut
to one entry, the closures it leaves as they are, and higher-order gradients (create_graph) through it."""
import weakref

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as torch_checkpoint

import tnet
import tnet.utils.checkpoint as checkpoint
from helpers import assert_close


def block(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 4, 1))


def twins():
    torch.manual_seed(0)
    theirs, ours = block(torch), block(tnet)
    ours.load_state_dict({k: tnet.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("input_grad", [True, False])
def test_gradients_and_running_statistics_as_torchs(rng, ieee, input_grad):
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    ours, theirs = twins()
    xs = tnet.tensor(x, requires_grad=input_grad), torch.tensor(x, requires_grad=input_grad)
    out = checkpoint.checkpoint(ours, xs[0], use_reentrant=False)
    assert out._entry.op == "checkpoint"
    assert {id(t) for t in out._entry.inputs} == {id(p) for p in ours.parameters()} | ({id(xs[0])} if input_grad else set())
    ref = torch_checkpoint.checkpoint(theirs, xs[1], use_reentrant=False)
    assert_close(out, ref, 1e-5)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        if name == "0.bias":  # before batch norm: zero but for rounding, in both
            assert np.abs(p.grad.numpy()).max() < 1e-4 and q.grad.abs().max() < 1e-4
        else:
            assert_close(p.grad, q.grad, 1e-4, name)
    if input_grad:
        assert_close(xs[0].grad, xs[1].grad, 1e-4)
    assert_close(ours[1].running_mean, theirs[1].running_mean, 1e-5)  # updated by both runs
    assert ours[1].num_batches_tracked.item() == theirs[1].num_batches_tracked.item() == 2


def test_dropout_masks_drawn_again_alike_and_a_plain_run_matches(rng, ieee):
    lin = tnet.nn.Linear(6, 6)
    x = tnet.tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)

    def f(v):
        return tnet.nn.functional.dropout(lin(v), 0.5, training=True).tanh()
    tnet.manual_seed(3)
    out = checkpoint.checkpoint(f, x, use_reentrant=False)
    out.sum().backward()
    grads = x.grad.numpy().copy(), lin.weight.grad.numpy().copy()
    x.grad = lin.weight.grad = lin.bias.grad = None
    tnet.manual_seed(3)
    plain = f(x)
    plain.sum().backward()
    np.testing.assert_array_equal(out.numpy(), plain.numpy())
    np.testing.assert_allclose(grads[0], x.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grads[1], lin.weight.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_sequential_autocast_and_kept_closures(rng, ieee):
    ours, theirs = twins()
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    out = checkpoint.checkpoint_sequential(ours, 2, tnet.tensor(x, requires_grad=True), use_reentrant=False)
    ref = torch_checkpoint.checkpoint_sequential(theirs, 2, torch.tensor(x, requires_grad=True), use_reentrant=False)
    assert_close(out, ref, 1e-5)
    out.sum().backward()
    ref.sum().backward()
    assert_close(ours[0].weight.grad, theirs[0].weight.grad, 1e-4)
    with tnet.autocast("cuda", dtype=torch.bfloat16):
        low = checkpoint.checkpoint(ours, tnet.tensor(x), use_reentrant=False)
    assert low.dtype == torch.bfloat16 and low._entry.op == "checkpoint"
    low.float().sum().backward()  # the recomputation in bf16 too: same dtypes on the tape
    skip = ours[0](tnet.tensor(x))  # made before the call, read by a closure: that tape stays
    kept = checkpoint.checkpoint(lambda v: v + skip, tnet.tensor(x[:, :1].repeat(4, 1)), use_reentrant=False)
    assert kept._entry.op != "checkpoint"
    with tnet.no_grad():
        assert not checkpoint.checkpoint(ours, tnet.tensor(x)).requires_grad


def test_the_first_runs_activations_are_freed(rng):
    ours, _ = twins()
    inner = []

    def f(v):
        h = ours[0](v)
        inner.append(weakref.ref(h))
        return ours[2](ours[1](h))
    out = checkpoint.checkpoint(f, tnet.tensor(rng.standard_normal((2, 3, 5, 5)).astype(np.float32)))
    assert inner[0]() is None  # the conv's output: held by no entry now, without a garbage collection
    out.sum().backward()
    assert ours[0].weight.grad is not None


def test_set_checkpoint_early_stop_changes_no_gradient(rng):
    """set_checkpoint_early_stop(False) is accepted around a checkpoint, the gradients torch's (tnet's
    recomputation never stops early)."""
    x = rng.standard_normal((2, 3)).astype(np.float32)
    grads = []
    for lib, ckpt in ((tnet, checkpoint), (torch, torch_checkpoint)):
        t = lib.tensor(x, requires_grad=True)
        with ckpt.set_checkpoint_early_stop(False):
            y = ckpt.checkpoint(lambda v: (v * v).tanh(), t, use_reentrant=False)
        y.sum().backward()
        grads.append(t.grad)
    assert_close(grads[0], grads[1], 1e-5, "gradient under set_checkpoint_early_stop(False)")


def test_device_states_restore_the_draws():
    """get_device_states names the devices of its tensor arguments (none on the CPU) with a state each, and
    set_device_states puts the generator back there: a dropout mask is drawn again alike, as torch's on a GPU."""
    x = tnet.ones(64)
    devices, states = checkpoint.get_device_states(x, 3, "a")
    assert devices == ([] if x.device.type == "cpu" else [x.device.index or 0]) and len(states) == len(devices)
    assert checkpoint.get_device_states(7) == ([], [])
    devices, states = checkpoint.get_device_states(x)
    cpu = tnet.get_rng_state()
    first = tnet.nn.functional.dropout(x, 0.5)
    tnet.set_rng_state(cpu)
    checkpoint.set_device_states(devices, states)
    again = tnet.nn.functional.dropout(x, 0.5)
    assert torch.equal(first.memory, again.memory)
    assert torch_checkpoint.get_device_states(torch.ones(2)) == ([], [])  # torch's on the CPU


def test_detach_variable_and_check_backward_validity_as_torchs():
    """detach_variable (a reversible block's hand-made recomputation detaches its saved inputs) keeps each
    tensor's requires_grad and passes other items; check_backward_validity warns where nothing requires grad."""
    results = []
    for lib, ckpt in ((tnet, checkpoint), (torch, torch_checkpoint)):
        a, b = lib.ones(2, requires_grad=True) * 2, lib.ones(2)
        x, y, n = ckpt.detach_variable((a, b, 3))
        results.append((x.requires_grad, x.is_leaf, y.requires_grad, n, x.tolist()))
        (x * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
        with pytest.raises(RuntimeError, match="Only tuple"):
            ckpt.detach_variable([a])
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            ckpt.check_backward_validity((b, 1))
        ckpt.check_backward_validity((a, b))
    assert results[0] == results[1] == (True, True, False, 3, [2.0, 2.0])


def test_create_graph_through_checkpoints_as_torchs(ieee):
    """A gradient penalty (autograd.grad(create_graph=True) of the input, its norm's backward) and a Hessian-vector
    product through two checkpoints, one taking an activation of the layers before it and an extra argument:
    every parameter's gradient (those before the checkpoints too) and the input's as torch's, and a hook on the
    activation the checkpoint takes run as often and with the same gradients as torch's (tnet raised
    NotImplementedError: create_graph through checkpoint)."""
    def run(lib, ckpt):
        nn = lib.nn
        lib.manual_seed(0)
        layers = [nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 4)),
                  nn.Sequential(nn.Linear(4, 4), nn.Softplus()), nn.Linear(4, 1)]
        params = [p for layer in layers for p in layer.parameters()]
        with lib.no_grad():
            for k, p in enumerate(params):
                p.copy_(lib.tensor((np.cos(np.arange(p.numel()) + k).reshape(tuple(p.shape)) * 0.7).astype(np.float32)))
        x = lib.tensor(np.linspace(-1, 1, 15).reshape(5, 3).astype(np.float32), requires_grad=True)
        seen = []

        def D(x):
            h = lib.tanh(layers[0](x))
            h.register_hook(lambda g: seen.append(float(g.pow(2).sum())))
            h = h + ckpt.checkpoint(layers[1], h, use_reentrant=False)
            h = ckpt.checkpoint(lambda t, s: layers[2](t) * s, h, 2.0, use_reentrant=False)
            return layers[3](h)
        out = D(x)
        g, = lib.autograd.grad(out.sum(), x, create_graph=True)
        penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
        (out.mean() + 10 * penalty).backward()
        found = [penalty] + [p.grad.clone() for p in params] + [x.grad]
        for p in params:
            p.grad = None
        grads = lib.autograd.grad(D(x).pow(2).mean(), params, create_graph=True)
        sum((gi * gi.detach()).sum() for gi in grads).backward()
        return found + [p.grad for p in params], seen
    ours, seen = run(tnet, checkpoint)
    theirs, seen_torch = run(torch, torch_checkpoint)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, 1e-4, f"piece {k}")
    np.testing.assert_allclose(seen, seen_torch, rtol=1e-4)
