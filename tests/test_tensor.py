"""The tape and the Tensor API (tnet/tensor.py): gradients summed where a tensor is used twice and
accumulated across backwards, no_grad, saved state freed, backward's checks, size and conversions;
and what spans op families: the public ops' argument checks, 16-bit tensors through every op
and through a training step."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from helpers import LOW, TOL, assert_close, check, check_op, leaf, pair, tol_for


def test_tensor_api():
    x = tnet.tensor([[1, 2], [3, 4]])
    assert x.dtype == torch.int64 and x.shape == (2, 2) and x.grad is None
    y = tnet.tensor(np.ones((2, 3), dtype=np.float64))
    assert y.dtype == torch.float32 and y.device.type == tnet.DEVICE.type
    assert isinstance(y.numpy(), np.ndarray)
    assert tnet.tensor(torch.arange(3)).dtype == torch.int64


def test_size_len_float_int_tolist():
    x = tnet.tensor(np.arange(12.0).reshape(3, 4))
    assert x.size() == torch.Size([3, 4]) and isinstance(x.size(), tuple)
    assert x.size(1) == 4 and x.size(-2) == 3 and len(x) == 3
    with pytest.raises(IndexError):
        x.size(2)
    with pytest.raises(TypeError, match="0-d"):
        len(tnet.tensor(1.0))
    assert float(x[2, 1]) == 9.0 and int(x[1, 3]) == 7 and int(tnet.tensor([5])) == 5
    with pytest.raises((ValueError, RuntimeError)):
        float(x)
    assert x.tolist() == np.arange(12.0).reshape(3, 4).tolist() and x[1, 1].tolist() == 5.0


def test_grads_add_when_used_twice(rng, ieee):
    (a, ra), (b, rb) = pair(rng, 4, 4), pair(rng, 4, 4)
    c = F.matmul(a, b)
    F.matmul(c, F.relu(c)).backward(np.ones((4, 4)))  # c feeds both operands
    rc = ra @ rb
    (rc @ torch.relu(rc)).sum().backward()
    assert_close(a.grad, ra.grad, TOL["ieee"], "a")
    assert_close(b.grad, rb.grad, TOL["ieee"], "b")


def test_tensor_used_twice(rng):
    check(lambda x, y: x * x + x / y - x, lambda x, y: x * x + x / y - x, [leaf(rng, 5, 7), leaf(rng, 7, positive=True)], rng)
    check(lambda x: x + x, lambda x: x + x, [leaf(rng, 3, 5)], rng)
    # u's two gradients come from an NCHW and a channels-last output: the tape adds them, so each
    # must arrive in u's layout
    fn = lambda x, y: (lambda u: (x * u).sum() + u.exp().sum())(y * 0.5)
    check(fn, fn, [leaf(rng, 2, 5, 3, 7), leaf(rng, 2, 5, 3, 7, channels_last=True)], rng)


def test_passed_on_gradients_are_not_shared(rng):
    """a + b hands both leaves the same gradient: each must own its .grad (a second backward
    accumulates into both)."""
    (a, _), (b, _) = leaf(rng, 4, 3), leaf(rng, 4, 3)
    for _ in range(2):
        (a + b).backward(np.ones((4, 3)))
        ((a - b) + 1).backward(np.ones((4, 3)))
    assert_close(a.grad, np.full((4, 3), 4.0), 0, "a.grad")
    assert_close(b.grad, np.zeros((4, 3)), 0, "b.grad")


def test_leaf_grads_accumulate_across_backwards(rng, ieee):
    (a, ra), (b, rb) = pair(rng, 3, 4), pair(rng, 4, 2)
    for _ in range(2):
        F.matmul(a, b).backward(np.ones((3, 2)))
        (ra @ rb).sum().backward()
    assert_close(a.grad, ra.grad, TOL["ieee"], "twice")


def test_no_grad_records_nothing(rng):
    a, _ = pair(rng, 3, 4)
    with tnet.no_grad():
        y = F.relu(a)
    assert not y.requires_grad and y._entry is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward(np.ones((3, 4)))


def test_detach_in_place_cuts_history(rng):
    """h.detach_() (a recurrent hidden state between batches): the tensor itself becomes a leaf without
    grad, a later use starts a new graph, and the gradient stops there, as torch's."""
    a, _ = pair(rng, 3)
    h = a * 2
    assert h.detach_() is h and h.is_leaf and not h.requires_grad and h.grad_fn is None
    b, _ = pair(rng, 3)
    (h * b).sum().backward()
    assert a.grad is None and np.allclose(b.grad.numpy(), h.numpy())



def test_a_node_that_saves_nothing_outlives_a_freeing_backward():
    """A backward without retain_graph frees what each op saved; as torch's, an add, sub or neg
    (they save no tensor) stays usable: MAML's fast weight `w - lr * g` takes a second backward (the
    query loss's) after autograd.grad freed the support loss's graph, and a second backward through
    an op that saved its operands (mul) still raises."""
    results = []
    for lib in (tnet, torch):
        w = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
        support = (w * w).sum()
        (g,) = lib.autograd.grad(support, w)  # frees mul's and sum's saved tensors
        fast = -(w - 0.3 * g) + 1.0
        (fast * fast).sum().backward()
        (fast * 3.0).sum().backward()  # through sub, neg and add a second time
        results.append(w.grad.numpy())
        with pytest.raises(RuntimeError, match="second time"):
            support.backward()
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)

@pytest.mark.parametrize("create_graph", [False, True])
def test_backward_inputs_naming_a_retained_or_hooked_non_leaf_adds_once(create_graph):
    """backward(inputs=[p]) where p, a non-leaf (a slice), also retains its gradient or has a hook: p.grad gets
    the gradient once, after the hook ran once, as torch's (tnet added it twice, and ran the hook twice)."""
    got = []
    for lib in (torch, tnet):
        x = lib.tensor(np.ones((3, 4), np.float32), requires_grad=True)
        y = x * 2
        p, q = y[1:], y * 1
        p.register_hook(lambda g: g * 3)
        p.retain_grad()
        q.retain_grad()
        (p.sum() * 2 + q.sum()).backward(inputs=[p, q, x], create_graph=create_graph)
        got.append([p.grad.detach().numpy(), q.grad.detach().numpy(), x.grad.detach().numpy()])
    for a, b in zip(*got):
        np.testing.assert_array_equal(b, a)


def test_autograd_grad_and_backward_as_torch(rng):
    """autograd.grad with respect to leaves and an intermediate tensor, seeded or not, .grad left
    alone; backward(inputs=) and retain_graph; autograd.backward of two roots; unused inputs."""
    (x, xr), (w, wr) = leaf(rng, 3, 4), leaf(rng, 3, 4)
    h, hr = F.tanh(x * w), torch.tanh(xr * wr)
    z, zr = (h * h).sum(), (hr * hr).sum()
    for g, gr in zip(tnet.autograd.grad(z, [x, h], retain_graph=True), torch.autograd.grad(zr, [xr, hr], retain_graph=True)):
        assert_close(g, gr, TOL["ieee"], "autograd.grad")
    assert x.grad is None and w.grad is None
    z.backward(inputs=[w], retain_graph=True)
    zr.backward(inputs=[wr], retain_graph=True)
    assert x.grad is None
    z.backward(inputs=[w])  # retained: a second backward accumulates
    zr.backward(inputs=[wr])
    assert_close(w.grad, wr.grad, TOL["ieee"], "backward(inputs=) twice")
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()
    seed = rng.standard_normal((3, 4))
    h, hr = F.tanh(x * w), torch.tanh(xr * wr)  # the first graph is freed
    (gx,) = tnet.autograd.grad(h, x, grad_outputs=tnet.tensor(seed), retain_graph=True)
    (gxr,) = torch.autograd.grad(hr, xr, grad_outputs=torch.tensor(seed))
    assert_close(gx, gxr, TOL["ieee"], "grad_outputs")
    x.grad = w.grad = None
    tnet.autograd.backward([h.sum(), (x * 2).sum()])
    xr.grad = None
    torch.autograd.backward([torch.tanh(xr * wr).sum(), (xr * 2).sum()])
    assert_close(x.grad, xr.grad, TOL["ieee"], "autograd.backward of two roots")
    for lib in (tnet, torch):  # torch's positional order, grad_variables (deprecated) before inputs
        v = lib.ones(2, requires_grad=True)
        with pytest.warns(FutureWarning, match="grad_variables"):
            lib.autograd.backward([v * 3], None, None, False, [lib.ones(2) * 2])
        assert v.grad.tolist() == [6.0, 6.0]
    unused = tnet.tensor([1.0], requires_grad=True)
    y = (x * 3).sum()
    with pytest.raises(RuntimeError, match="allow_unused"):
        tnet.autograd.grad(y, [x, unused], retain_graph=True)
    assert tnet.autograd.grad(y, [x, unused], allow_unused=True, retain_graph=True)[1] is None
    assert tnet.autograd.grad(y, [unused], materialize_grads=True)[0].tolist() == [0.0]
    with pytest.raises(NotImplementedError, match="create_graph through cumprod"):  # an op without a graph backward
        tnet.autograd.grad(tnet.cumprod(x, 1).sum(), x, create_graph=True)


def test_grad_is_grads_batched(rng, ieee):
    """is_grads_batched: a batch of seeds, one gradient per seed stacked first (a Jacobian by torch.eye), as
    torch's; an unused input None; the graph freed after the last unless retained; a seed without the batch
    dimension raises torch's RuntimeError."""
    x, xr = pair(rng, 3, 4)
    w = rng.standard_normal((4, 5))
    y, yr = F.tanh(x @ tnet.tensor(w)), torch.tanh(xr @ torch.tensor(w))
    unused = tnet.tensor([1.0], requires_grad=True)
    jac, none = tnet.autograd.grad(y.sum(0), [x, unused], tnet.eye(5), is_grads_batched=True, allow_unused=True)
    (jacr,) = torch.autograd.grad(yr.sum(0), xr, torch.eye(5, dtype=torch.float64), is_grads_batched=True)
    assert none is None and jac.shape == (5, 3, 4)
    assert_close(jac, jacr, TOL["ieee"], "jacobian")
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="first dimension of each grad_output as the batch"):
        tnet.autograd.grad(F.tanh(x), x, tnet.ones(3, 4), is_grads_batched=True)


def test_autograd_graph_save_on_cpu_and_saved_tensors_hooks(rng):
    """autograd.graph.save_on_cpu is accepted (the same gradients); saved_tensors_hooks raises, since its pack
    hook could not change what tnet's backwards read."""
    x, xr = pair(rng, 3, 4)
    with tnet.autograd.graph.save_on_cpu(pin_memory=True):
        y = F.tanh(x * x).sum()
    y.backward()
    torch.tanh(xr * xr).sum().backward()
    assert_close(x.grad, xr.grad, TOL["ieee"], "gradient under save_on_cpu")
    with pytest.raises(NotImplementedError, match="saved_tensors_hooks"):
        tnet.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


def test_register_multi_grad_hook_as_torch():
    """autograd.graph.register_multi_grad_hook as torch's: mode="all" calls fn once per backward with every
    tensor's gradient (a leaf used twice: the sum; None for one the backward does not reach), mode="any"
    once with the first gradient computed; remove() takes the hook off every tensor; a bad mode raises."""
    logs = []
    for lib in (tnet, torch):
        log = []
        logs.append(log)
        a, b, c = (lib.tensor([1.0, 2.0], requires_grad=True), lib.tensor([3.0, -1.0], requires_grad=True),
                   lib.tensor([0.5], requires_grad=True))
        graph = lib.autograd.graph
        values = lambda gs: [None if g is None else np.round(np.array(g.tolist()), 5).tolist() for g in gs]  # noqa: E731
        every = graph.register_multi_grad_hook((a, b, c), lambda gs: log.append(("all", values(gs))))
        for _ in range(2):
            (a * 2 + a * b).sum().backward()
        h = a * 3
        first = graph.register_multi_grad_hook([a, h], lambda g: log.append(("any", values([g]))), mode="any")
        (h * h).sum().backward()
        every.remove()
        first.remove()
        (a * b).sum().backward()
        log.append(values([a.grad, b.grad, c.grad]))
        with pytest.raises(ValueError, match="Expects mode to be one of"):
            graph.register_multi_grad_hook([a], print, mode="some")
    assert logs[0] == logs[1], logs


def test_a_leaf_used_twice_runs_its_hooks_once_on_the_sum_as_torch():
    """A leaf read by two ops gets its register_hook hooks and its post-accumulate hooks once, on its gradient
    summed over the uses (torch's AccumulateGrad), in backward and autograd.grad (create_graph's too); a hook's
    replacement applies to the sum; a use whose op gives no gradient still counts as arrived."""
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        seen, posted = [], []
        x.register_hook(lambda g: (seen.append(g.tolist()), g * 2)[1])
        x.register_post_accumulate_grad_hook(lambda t: posted.append(t.grad.tolist()))
        ((x * 3) * x + x.exp()).sum().backward()
        y = lib.tensor([1.0, 2.0], requires_grad=True)
        y.register_hook(lambda g: seen.append(g.tolist()))
        (g,) = lib.autograd.grad((y.clamp(0, 1.5) * y).sum(), [y])
        (h,) = lib.autograd.grad((y * y * y).sum(), [y], create_graph=True)  # the tape's path: once, too
        return seen, posted, x.grad.tolist(), g.tolist(), h.tolist()
    for got, want in zip(run(tnet), run(torch)):  # one list per hook call
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)


def test_autograd_grad_runs_a_leafs_hooks_as_torch():
    """torch.autograd.grad runs register_hook's hooks of the leaves it differentiates with respect to (a returned
    tensor replaces the gradient), with and without create_graph, as backward() does."""
    logs = []
    for lib in (tnet, torch):
        log = []
        logs.append(log)
        for create_graph in (False, True):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            x.register_hook(lambda g: log.append(g.tolist()) or g * 2)
            log.append(lib.autograd.grad(((x * 3) ** 2).sum(), x, create_graph=create_graph)[0].tolist())
    assert logs[0] == logs[1], logs


def test_clone_stays_usable_after_a_backward_frees_the_graph():
    """clone saves nothing (torch's CloneBackward): after a backward frees the graph, a new forward from the
    clone backpropagates through it again, as torch's."""
    grads = []
    for T in (tnet, torch):
        leaf = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        x = leaf.clone()
        x.exp().sum().backward()
        (x * x).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_saved_state_freed_after_backward(rng):
    a, _ = pair(rng, 3, 4)
    y = F.relu(F.relu(a))
    entry = y._entry
    y.backward(np.ones((3, 4)))
    assert entry.backward is None and entry.inputs == ()
    with pytest.raises(RuntimeError, match="freed"):
        y.backward(np.ones((3, 4)))


def test_backward_grad_checks(rng):
    a, _ = pair(rng, 3, 4)
    y = F.relu(a)
    with pytest.raises(RuntimeError, match="scalar"):  # torch's error types
        y.backward()
    with pytest.raises(RuntimeError, match=r"\(2, 2\)"):
        y.backward(np.ones((2, 2)))
    y.backward(tnet.tensor(np.ones((3, 4))))  # a tnet grad works


# ---- across op families ---------------------------------------------------------------------

def test_relu_softmax_reshape(rng):
    check_op(F.relu, torch.relu, [pair(rng, 3, 5, 7)], 1e-7, rng)
    check_op(F.softmax, lambda x: torch.softmax(x, 1), [pair(rng, 7, 10)], 1e-6, rng)
    check_op(lambda x: x.reshape(6, -1), lambda x: x.reshape(6, -1), [pair(rng, 2, 3, 5)], 1e-7, rng)


def test_bad_input_messages(rng):
    a, _ = pair(rng, 3, 4)
    b, _ = pair(rng, 5, 6)
    with pytest.raises(ValueError, match="matmul: a is 3x4 but b is 5x6"):
        F.matmul(a, b)
    with pytest.raises(ValueError, match="linear: x is 3x4 but w is 5x6"):
        F.linear(a, b)
    x, _ = pair(rng, 1, 3, 8, 8)
    w, _ = pair(rng, 4, 2, 3, 3)
    with pytest.raises(ValueError, match="x has 3 channels but w expects 2"):
        F.conv2d(x, w)
    with pytest.raises(ValueError, match="3D or 4D"):
        F.max_pool2d(a, 2)
    with pytest.raises(ValueError, match="float32"):
        F.gelu(tnet.tensor([1, 2]))  # as torch, which raises too (relu keeps integers, as torch's)
    with pytest.raises(ValueError, match="labels"):
        F.cross_entropy(a, tnet.tensor(np.zeros(3)))
    with pytest.raises(ValueError, match="tnet.Tensor"):
        F.relu(np.ones(3))


def test_bad_hyperparameters_are_value_errors():
    x = tnet.tensor(np.ones((1, 3, 6, 6)))
    w = tnet.tensor(np.ones((2, 3, 3, 3)))
    for bad in (lambda: tnet.nn.Conv2d(3, 4, 0)(x), lambda: tnet.nn.Conv2d(3, 4, 3, stride=0),
                lambda: F.conv2d(x, w, stride=0), lambda: F.max_pool2d(x, 0), lambda: F.avg_pool2d(x, 2, stride=-1),
                lambda: F.conv2d(x, w, padding=-1),
                lambda: F.cross_entropy(tnet.tensor(np.ones((2, 3))), tnet.tensor([0, 1]), label_smoothing=2),
                lambda: tnet.optim.SGD(tnet.nn.Linear(2, 2).parameters(), lr=-0.1),
                lambda: tnet.optim.SGD(tnet.nn.Linear(2, 2).parameters(), lr=0.1, momentum=-1),
                lambda: tnet.optim.SGD(tnet.nn.Linear(2, 2).parameters(), lr=0.1, weight_decay=-1),
                lambda: tnet.optim.AdamW(tnet.nn.Linear(2, 2).parameters(), lr=-1)):
        with pytest.raises(ValueError):
            bad()


@pytest.mark.parametrize("dtype", LOW)
def test_ops_16_bit(rng, dtype):
    """Outputs and gradients in the input's dtype, fp32 math inside."""
    tol = tol_for(dtype)
    for fn, ref, shape in [(F.relu, torch.relu, (3, 5, 7)),
                           (lambda x: F.max_pool2d(x, 3, 2), lambda x: tF.max_pool2d(x, 3, 2), (2, 3, 9, 9)),
                           (lambda x: F.avg_pool2d(x, 3, 2, 1), lambda x: tF.avg_pool2d(x, 3, 2, 1), (2, 3, 9, 9)),
                           (F.softmax, lambda x: torch.softmax(x, 1), (7, 10)),
                           (F.log_softmax, lambda x: torch.log_softmax(x, 1), (7, 10))]:
        x = pair(rng, *shape, dtype=dtype)
        out = check_op(fn, ref, [x], tol, rng)
        assert out.dtype == x[0].grad.dtype == dtype
    labels = rng.integers(0, 10, 13)
    logits, ref = pair(rng, 13, 10, scale=3, dtype=dtype)
    loss = F.cross_entropy(logits, tnet.tensor(labels), label_smoothing=0.1)
    r = tF.cross_entropy(ref, torch.tensor(labels), label_smoothing=0.1)
    assert loss.dtype == dtype  # torch's, outside autocast
    assert_close(loss, r, tol, "loss")
    loss.backward()
    r.backward()
    assert logits.grad.dtype == dtype
    assert_close(logits.grad, ref.grad, tol, "dlogits")


@pytest.mark.parametrize("channels_last", [False, True])
def test_bfloat16_training_step_through_the_tape(rng, channels_last):
    """BatchNorm (fp32 parameters and statistics) -> GELU -> max pooling -> mean on a bf16 batch,
    NCHW (C = 5) or channels-last (C = 16): every gradient against torch in float64. Each 3x3
    window holds one spike at its centre: near-ties, which bf16's rounding of the activations
    may break the other way, would send the max's gradient elsewhere."""
    C = 16 if channels_last else 5
    a = rng.standard_normal((3, C, 7, 6)) * 0.5
    a[:, :, ::2, ::2] += 4
    x = tnet.tensor(a, requires_grad=True, dtype=torch.bfloat16)
    rx = x.memory.double().requires_grad_(True)
    if channels_last:
        x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    bn, ref_bn = tnet.nn.BatchNorm2d(C), torch.nn.BatchNorm2d(C).double().to(rx.device)
    for p, q in zip(bn.parameters(), ref_bn.parameters()):
        values = rng.uniform(0.5, 1.5, p.shape)  # weights > 0 keep the spikes the maxima
        p.memory.copy_(torch.from_numpy(values))
        q.data.copy_(torch.from_numpy(values.astype(np.float32)))
    loss = F.max_pool2d(F.gelu(bn(x)), 3, 2, 1).mean()
    ref = tF.max_pool2d(tF.gelu(ref_bn(rx)), 3, 2, 1).mean()
    assert loss.dtype == torch.bfloat16
    assert_close(loss, ref, 2e-2, "loss")
    loss.backward()
    ref.backward()
    assert x.grad.dtype == torch.bfloat16 and bn.weight.grad.dtype == bn.bias.grad.dtype == torch.float32
    assert_close(x.grad, rx.grad, 2e-2, "x.grad")
    assert_close(bn.weight.grad, ref_bn.weight.grad, 2e-2, "weight.grad")
    assert_close(bn.bias.grad, ref_bn.bias.grad, 2e-2, "bias.grad")
    assert_close(bn.running_mean, ref_bn.running_mean, TOL["ieee"], "running_mean")
    assert_close(bn.running_var, ref_bn.running_var, TOL["ieee"], "running_var")


def test_a_scripts_device_and_grad_mode_idioms():
    """`device = tnet.device("cuda" if tnet.cuda.is_available() else "cpu")`, `tnet.enable_grad()`
    inside no_grad, `set_grad_enabled` and `inference_mode` as blocks and decorators, is_tensor,
    from_numpy (a float32 copy), nn.Softmax and nn.LogSoftmax as torch's."""
    device = tnet.device("cuda" if tnet.cuda.is_available() else "cpu")
    assert device.type == tnet.DEVICE.type and tnet.cuda.is_available() == (tnet.DEVICE.type == "cuda")
    assert tnet.cuda.device_count() == (torch.cuda.device_count() if tnet.cuda.is_available() else 0)
    tnet.cuda.synchronize()
    with tnet.no_grad():
        assert not tnet.is_grad_enabled()
        with tnet.enable_grad():
            assert tnet.is_grad_enabled()
    with tnet.set_grad_enabled(False):
        assert not tnet.is_grad_enabled()

    @tnet.inference_mode()
    def infer():
        return tnet.is_grad_enabled()
    assert infer() is False and infer() is False and tnet.is_grad_enabled()
    a = np.arange(6.0).reshape(2, 3)
    t = tnet.from_numpy(a)
    assert tnet.is_tensor(t) and not tnet.is_tensor(a) and t.dtype == torch.float32 and t.tolist() == a.tolist()
    x = leaf(np.random.default_rng(1), 3, 5)
    for mine, ref in ((tnet.nn.Softmax(dim=1), torch.nn.Softmax(dim=1)),
                      (tnet.nn.LogSoftmax(1), torch.nn.LogSoftmax(1))):
        assert_close(mine(x[0]), ref(x[1]), TOL["ieee"], type(mine).__name__)


def test_grad_mode_decorators_as_torchs():
    """A bare @inference_mode decorates, as torch's (it returned its wrapper's wrapper), and a generator
    function under @no_grad() (or the others) runs each of its resumptions in the block, the caller's
    mode in between, as torch's (a sampler yielding its steps: it recorded on the tape)."""
    results = []
    for lib in (torch, tnet):
        @lib.inference_mode
        def infer(x):
            return x * 2

        @lib.no_grad()
        def steps(x, n):
            for i in range(n):
                got = yield (x * i).requires_grad, lib.is_grad_enabled()
                assert got is None or got == "sent"
            return "done"

        @lib.enable_grad()
        def steps_with_grad(x):
            yield (x * 2).requires_grad

        x = lib.ones(2, requires_grad=True)
        gen = steps(x, 3)
        outside = [next(gen), lib.is_grad_enabled(), gen.send("sent")]
        with pytest.raises(StopIteration) as stop:
            gen.send(None) and next(gen)
        with lib.no_grad():
            inside = list(steps_with_grad(x))
        results.append((infer(x).requires_grad, outside, stop.value.value, inside, list(steps(x, 2))))
    assert results[1] == results[0] == (False, [(False, False), True, (False, False)], "done", [True],
                                        [(False, False), (False, False)])


def test_other_backends_flags_dim_order_and_volatile_as_torch():
    """`x.is_mps`, `is_xpu` & co (device-agnostic code's checks) are False, `const_data_ptr()` and `dim_order()`
    are the memory's, and the pre-0.4 `x.volatile` is False with torch's warning (they raised AttributeError)."""
    for m in (torch, tnet):
        x = m.ones(1, 2, 3, 4).contiguous(memory_format=torch.channels_last)
        flags = [getattr(x, f) for f in ("is_mps", "is_xpu", "is_ipu", "is_xla", "is_vulkan", "is_sparse_csr")]
        assert flags == [False] * 6 and x.dim_order() == (0, 2, 3, 1)
        if hasattr(x, "const_data_ptr"):  # torch 2.11's Python tensors lack it (a GPU's gpu61 run); tnet's has it
            assert x.const_data_ptr() == x.data_ptr()
        with pytest.warns(UserWarning, match="volatile was removed"):
            x.volatile = True
            assert x.volatile is False


# ---- tensor utilities of the eighth session ----------------------------------------------------

def test_unique_consecutive_and_histogram_as_torchs():
    data = [1, 1, 2, 2, 3, 1, 1, 2]
    for op in (lambda m: m.unique_consecutive(m.tensor(data), return_inverse=True, return_counts=True),
               lambda m: m.tensor([[1, 1], [1, 1], [2, 3]]).unique_consecutive(True, True, 0),
               lambda m: m.tensor([[1, 2], [1, 3]]).unique_consecutive(dim=1, return_counts=True),
               lambda m: (m.unique_consecutive(m.tensor([2.0, 2.0, -1.0])),), lambda m: (m.tensor([]).unique_consecutive(),),
               lambda m: m.histogram(m.tensor([1.0, 2, 1, 0.5]), 4), lambda m: m.histogram(m.tensor([1.0, 2, 1]), 3, range=(0.0, 3.0), density=True),
               lambda m: m.tensor([1.0, 2, 1]).histogram(m.tensor([0.0, 1.5, 3]), weight=m.tensor([0.5, 2, 1]))):
        for got, ref in zip(op(tnet), op(torch)):
            assert got.dtype == ref.dtype and torch.allclose(got.memory.cpu(), ref), (got, ref)
    with pytest.raises(NotImplementedError):
        tnet.histogram(tnet.tensor([1, 2]), 2)


@pytest.mark.parametrize("op", [
    lambda m: m.histogramdd(m.tensor([[0.5, 1.0], [2.0, -1.0], [1.5, 0.0], [0.5, 1.0]]), [2, 3]),
    lambda m: m.histogramdd(m.tensor([[[0.5, 1.0], [2.0, -1.0]], [[1.5, 0.0], [3.0, 2.0]]]), 2,
                            range=[0.0, 2.0, -1.0, 1.0], weight=m.tensor([[1.0, 2.0], [0.5, 4.0]]), density=True),
    lambda m: m.histogramdd(m.tensor([[0.5, 1.0], [2.0, -1.0]]), [m.tensor([0.0, 1.0, 3.0]), m.tensor([-2.0, 2.0])]),
])
def test_histogramdd_as_torch(op):
    """The points' grid of counts (weights summed, density), edges as histogram's per dimension."""
    got, ref = op(tnet), op(torch)
    assert type(got).__name__ == "histogramdd" and torch.allclose(got.hist.memory.cpu(), ref.hist)
    assert len(got.bin_edges) == len(ref.bin_edges)
    assert all(torch.equal(g.memory.cpu(), r) for g, r in zip(got.bin_edges, ref.bin_edges))


@pytest.mark.parametrize("kwargs", [dict(bins=[3]), dict(bins=0), dict(bins=3, range=[0.0, 1.0]),
                                    dict(bins=3, weight=[1.0, 2.0])])
def test_histogramdd_errors_as_torch(kwargs):
    x = [[0.5, 1.0], [2.0, -1.0], [1.5, 0.0]]
    for m in (torch, tnet):
        kw = {k: m.tensor(v) if k == "weight" else v for k, v in kwargs.items()}
        with pytest.raises(RuntimeError, match="histogram"):
            m.histogramdd(m.tensor(x), **kw)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tnet.histogramdd(tnet.tensor([1.0, 2.0]), 2)


def test_casts_and_tensor_facts_as_torchs():
    x, xr = tnet.tensor([[-1.5, 2.7, 300.0]]), torch.tensor([[-1.5, 2.7, 300.0]], device=tnet.DEVICE)
    for name in ("char", "short"):
        got, ref = getattr(x, name)(), getattr(xr, name)()
        assert got.dtype == ref.dtype and torch.equal(got.memory, ref)
    assert x.abs().byte().dtype == torch.uint8 and x.abs().byte().tolist() == xr.abs().byte().tolist()
    assert (x.is_cpu, x.nbytes, x.itemsize, x.get_device(), x.is_inference()) == (
        xr.is_cpu, xr.nbytes, xr.itemsize, xr.get_device(), xr.is_inference())
    assert x.pin_memory() is x and tnet.get_device(x) == x.get_device() and not tnet.is_inference(x)
    i = tnet.tensor([1, 2])
    assert i.new(2, 3).shape == (2, 3) and i.new(2, 3).dtype == torch.int64 and i.new().shape == (0,)
    assert i.new([4, 5]).tolist() == [4, 5] and i.new(torch.Size([1, 2])).shape == (1, 2)
    assert i.new((2, 3)).tolist() == [2, 3]  # a tuple is data, as torch's
    with pytest.raises(TypeError):
        i.new(i)


EIGHTH_NAMES = """moveaxis ravel atleast_1d atleast_2d atleast_3d fliplr flipud dstack hsplit vsplit dsplit column_stack
row_stack take put put_ index_copy index_copy_ index_fill index_fill_ index_add_ masked_scatter masked_scatter_
select_scatter slice_scatter diagonal_scatter diag_embed diagflat tril_indices triu_indices unravel_index combinations
cartesian_prod block_diag kron inner cross vander broadcast_shapes broadcast_to searchsorted bucketize
unique_consecutive empty_strided scalar_tensor split_with_sizes sum_to_size fill_diagonal_ tril_ triu_ squeeze_
unsqueeze_ t_ transpose_ swapaxes_ swapdims_ cumsum_ cumprod_ byte char short is_cpu nbytes itemsize pin_memory
get_device new is_inference corrcoef quantile nanquantile nanmedian mode logcumsumexp dist renorm histogram""".split()


@pytest.mark.parametrize("name", EIGHTH_NAMES)
def test_eighth_session_names_where_torch_has_them(name):
    if hasattr(torch, name):
        assert hasattr(tnet, name), name
    assert hasattr(tnet.Tensor, name) == hasattr(torch.Tensor, name), name


def test_format_and_to_other():
    """f"{t:.2f}" of a 0-d tensor (an AverageMeter's printout), and x.to(other): other's dtype."""
    acc = tnet.tensor([87.5, 12.0])
    assert f"{acc[0]:6.2f}" == " 87.50" and "{:.1e}".format(tnet.tensor(3)) == "3.0e+00"
    with pytest.raises(TypeError):
        f"{acc:.2f}"
    i = tnet.tensor([1, 2])
    assert i.to(acc).dtype == tnet.float32 and acc.to(i).dtype == tnet.int64 and acc.to(acc) is acc


def test_cuda_device_and_rng_state_idioms():
    """torch.cuda.set_device(args.gpu) on tnet's device, and the generator state a checkpoint keeps through
    torch.cuda.get_rng_state_all()."""
    tnet.cuda.set_device(tnet.DEVICE.index or 0)
    state = tnet.cuda.get_rng_state_all()
    first = tnet.rand(3).numpy()
    tnet.cuda.set_rng_state_all(state)
    assert np.array_equal(tnet.rand(3).numpy(), first)
    tnet.cuda.set_rng_state(tnet.cuda.get_rng_state())


def test_cuda_legacy_constructors():
    """PyramidNet's `torch.cuda.FloatTensor(n, c, h, w).fill_(0)` and `x.type(torch.cuda.LongTensor)`."""
    zeros = tnet.cuda.FloatTensor(2, 3, 1, 1).fill_(0)
    assert zeros.dtype == tnet.float32 and zeros.shape == (2, 3, 1, 1) and not zeros.numpy().any()
    assert tnet.ones(2).type(tnet.cuda.LongTensor).dtype == tnet.int64 and tnet.cuda.LongTensor([1]).dtype == tnet.int64


def test_legacy_alias_untyped_type_and_reversed_as_torch():
    """loss-landscape's `p.data = w + torch.Tensor(d).type(type(w))` and torchmetrics' reversed(precision): torch.Tensor(t)
    aliases t (its writes show in t; its gradient flows to t), .type(the Tensor class) is float32, and reversed(t) flips
    dim 0 (a 0-d tensor: itself)."""
    for lib in (tnet, torch):
        t = lib.ones(3, requires_grad=True)
        alias = lib.Tensor(t)
        assert alias.requires_grad and type(alias.grad_fn).__name__ == "AliasBackward0"
        (alias * 2).sum().backward()
        assert t.grad.tolist() == [2.0, 2.0, 2.0]
        plain = lib.zeros(2)
        lib.Tensor(plain)[0] = 5
        assert plain.tolist() == [5.0, 0.0] and lib.Tensor(lib.arange(3)).dtype == lib.int64
        assert lib.arange(3).type(type(plain)).dtype == lib.float32 and lib.arange(3).type(lib.Tensor).dtype == lib.float32
        with pytest.raises(ValueError, match="invalid type: 'Module'"):
            lib.ones(1).type(lib.nn.Module)
        assert reversed(lib.arange(6).view(3, 2)).tolist() == [[4, 5], [2, 3], [0, 1]]
        assert reversed(lib.tensor(3.0)).item() == 3.0


def test_set_printoptions_and_detach_():
    x = tnet.tensor([1.123456789, 2.5])
    try:
        tnet.set_printoptions(precision=2)
        assert "1.12" in repr(x) and "1.123" not in repr(x)
    finally:
        tnet.set_printoptions(profile="default")
    assert "1.1235" in repr(x)
    y = tnet.ones(2, requires_grad=True) * 2
    assert y.detach_() is y and not y.requires_grad and y.is_leaf and y.grad_fn is None


def test_float64_is_refused_where_a_tensor_is_made():
    """No tnet kernel computes in float64: a factory, tnet.tensor or a cast asked for it raises TypeError
    at once (numpy float64 data becomes float32, as documented)."""
    for make in (lambda: tnet.ones(2, dtype=torch.float64), lambda: tnet.tensor([1.0], dtype=torch.float64),
                 lambda: tnet.zeros_like(tnet.ones(2), dtype=torch.float64), lambda: tnet.ones(2).to(torch.float64),
                 lambda: tnet.arange(3, dtype=torch.float64), lambda: tnet.ones(2).double()):
        with pytest.raises(TypeError, match="float64"):
            make()
    assert tnet.tensor(np.ones(2)).dtype == torch.float32
    f64 = torch.float64  # a layer built in float64 or converted to it: one line naming the layer and the dtype
    for name, make in (("Linear", lambda: tnet.nn.Linear(3, 4, dtype=f64)),
                       ("Conv2d", lambda: tnet.nn.Conv2d(3, 4, 3, dtype=f64)),
                       ("LazyConv1d", lambda: tnet.nn.LazyConv1d(4, 3, dtype=f64)),
                       ("MultiheadAttention", lambda: tnet.nn.MultiheadAttention(4, 2, dtype=f64)),
                       ("Sequential.to", lambda: tnet.nn.Sequential(tnet.nn.Conv2d(3, 4, 3)).double()),
                       ("Linear.to", lambda: tnet.nn.Linear(3, 4).to(torch.float64))):
        with pytest.raises(TypeError, match=rf"^{name}: .*float64[^\n]*$"):
            make()

def test_python_types_as_dtypes_as_torch():
    """torch's argument parser takes Python's bool and int for torch.bool and torch.int64 (`torch.zeros(n,
    dtype=bool)`, `labels.to(int)`), and float for float64, which tnet refuses as above."""
    x = [1.5, 0.0]
    for make in (lambda lib, t: lib.zeros(2, dtype=t), lambda lib, t: lib.ones(2, dtype=t),
                 lambda lib, t: lib.full((2,), 1, dtype=t), lambda lib, t: lib.eye(2, dtype=t),
                 lambda lib, t: lib.tensor(x, dtype=t), lambda lib, t: lib.tensor(x).to(t),
                 lambda lib, t: lib.tensor(x).to(dtype=t), lambda lib, t: lib.tensor(x).new_zeros(2, dtype=t),
                 lambda lib, t: lib.tensor(x).sum(dtype=t), lambda lib, t: lib.arange(2, dtype=int),
                 lambda lib, t: lib.linspace(0, 2, 3, dtype=int), lambda lib, t: lib.tensor([1, 0]).view(int)):
        for t in (bool, int):
            ours, theirs = make(tnet, t), make(torch, t)
            assert ours.dtype == theirs.dtype and ours.tolist() == theirs.tolist()
    for make in (lambda: tnet.zeros(2, dtype=float), lambda: tnet.tensor(x, dtype=float),
                 lambda: tnet.tensor(x).to(float), lambda: tnet.arange(2, dtype=float)):
        with pytest.raises(TypeError, match="float64"):
            make()


# ---- the tensor surface of the eighth session (ops3) --------------------------------------------

def test_a_host_torch_tensor_wrapped_lands_on_tnets_device():
    t = tnet.Tensor(torch.ones(2))
    assert t.device == tnet.DEVICE and (t + 1).tolist() == [2.0, 2.0]


def test_tensor_facts_libraries_read():
    x = tnet.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    ref = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for name in ("is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "layout", "output_nr", "name"):
        assert getattr(x, name) == getattr(ref, name), name
    assert not x.is_pinned() and not x.is_conj() and not x.is_neg() and x.is_shared() == x.memory.is_shared()
    assert x.real is x and x.resolve_conj() is x and x.resolve_neg() is x and x.conj() is x and x.share_memory_() is x
    assert x.storage().size() == 6 and x.untyped_storage().nbytes() == 24
    assert x.untyped_storage().data_ptr() == x.data_ptr()
    if x.is_cuda:
        x.record_stream(torch.cuda.current_stream())
    assert x.H.tolist() == ref.H.tolist() and x.mH.tolist() == ref.mH.tolist() and x.adjoint().tolist() == ref.adjoint().tolist()
    b = tnet.zeros(2, 3, 4)
    assert b.mH.shape == (2, 4, 3) and tnet.tensor(3.0).H.item() == 3.0
    for bad in (lambda: tnet.zeros(3).H, lambda: b.H, lambda: tnet.zeros(3).mH, lambda: tnet.zeros(3).adjoint()):
        with pytest.raises(RuntimeError):
            bad()
    assert x.cov().tolist() == ref.cov().tolist()


def test_H_prelu_and_renorm_methods_carry_gradients():
    rng = np.random.default_rng(0)
    check(lambda v: v.H * 2, lambda v: v.H * 2, [leaf(rng, 3, 4)], rng)
    check(lambda v, w: v.prelu(w), lambda v, w: v.prelu(w), [leaf(rng, 2, 3, 4), leaf(rng, 3)], rng)
    t, r = leaf(rng, 3, 4)
    u, s = t * 1.0, r * 1.0
    assert u.renorm_(2, 0, 1.0) is u
    s.renorm_(2, 0, 1.0)
    assert_close(u, s, TOL["ieee"], "renorm_")
    g = rng.standard_normal((3, 4))
    u.backward(g), s.backward(torch.tensor(g))
    assert_close(t.grad, r.grad, TOL["ieee"], "renorm_'s gradient")


def test_apply_and_map_run_on_the_host_per_element():
    x = tnet.tensor([[1.0, -2.0], [3.0, 0.5]])
    assert x.apply_(lambda v: v * v + 1) is x and x.tolist() == [[2.0, 5.0], [10.0, 1.25]]
    assert x.map_(tnet.tensor([1.0, 2.0]), lambda a, b: a - b) is x and x.tolist() == [[1.0, 3.0], [9.0, -0.75]]
    n = tnet.tensor([1, 2, 3])
    assert n.apply_(lambda v: v * 7 // 2).tolist() == [3, 7, 10] and n.dtype == torch.int64
    with pytest.raises(RuntimeError):
        tnet.zeros(2, requires_grad=True).apply_(abs)
    with pytest.raises(TypeError):
        tnet.zeros(2).map_([1, 2], max)


def test_shape_is_torch_size():
    """x.shape is a torch.Size, as torch's: a tuple with numel() and torch's repr, also after ops."""
    x = tnet.ones(2, 3)
    assert type(x.shape) is torch.Size and x.shape == torch.Size([2, 3]) == (2, 3)
    assert x.shape.numel() == 6 and repr(x.shape) == "torch.Size([2, 3])" and x.shape[1:] == torch.Size([3])
    assert type(x.reshape(6).shape) is torch.Size and type((x + 1).t().shape) is torch.Size


def test_numpy_scalars_defer_to_the_tensors_operators_as_torchs():
    """`np.log(c) * x` (RepDistiller's VIDLoss) is a Tensor on the tape, as torch's; a numpy array beside
    a tensor is a constant tensor: `array == x` as torch's, and `array * x` too, where torch raises."""
    for lib in (tnet, torch):
        x = lib.ones(3, requires_grad=True)
        y = np.log(np.exp(5.0) - 1.0) * x + np.float32(2.0) - np.int64(1) / (x + 1)
        assert type(y) is lib.Tensor and y.dtype == torch.float32 and y.requires_grad
        y.sum().backward()
        np.testing.assert_allclose(np.asarray(x.grad.tolist()), [np.log(np.exp(5.0) - 1.0) + 0.25] * 3, rtol=1e-6)
        assert type(np.float64(2.0) > x) is lib.Tensor
        assert (np.array([1.0, 2.0, 1.0]) == x).tolist() == [True, False, True]
    assert (np.full(3, 2.0) * tnet.ones(3)).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("values", [
    [[0.129, 0.5], [-0.3, 2.0]], [1.0, 2.0, 3.0], [1e-5, 1.0], [1e9, 2.0], 3.5, [0.0, float("nan"), float("inf")],
    [1, 2, 300], [True, False], [], [[1.5, -2.25e-3, 100.0]], [-0.0, 1.0],
    np.random.RandomState(0).randn(40, 50).astype(np.float32), np.arange(2000).reshape(40, 50),
    np.random.RandomState(1).randn(3, 4, 5).astype(np.float32), np.zeros((2, 0), np.float32)])
def test_repr_is_torchs(values):
    """print(x) shows what torch's does: notation, widths, wrapping, summaries, dtype and device
    suffixes (a tensor on the GPU shows device='cuda:0'), requires_grad and grad_fn."""
    ref = torch.tensor(values).to(tnet.DEVICE)
    dtypes = [ref.dtype] + ([torch.float16, torch.bfloat16] if ref.is_floating_point() else [])
    for dtype in dtypes:
        want = ref.to(dtype)
        assert repr(tnet.Tensor(want.clone())) == repr(want)
    if ref.is_floating_point() and ref.numel():
        x, t = tnet.Tensor(ref.clone(), requires_grad=True), ref.clone().requires_grad_()
        assert repr(x) == repr(t) and repr(x * 2) == repr(t * 2)
        assert repr(tnet.nn.Parameter(x)) == repr(torch.nn.Parameter(t))


def test_set_printoptions_as_torchs():
    """Precision, sci_mode, profiles, threshold/edgeitems and linewidth print as torch's do."""
    values = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 7
    try:
        for opts in (dict(precision=2), dict(sci_mode=True), dict(profile="short"), dict(threshold=5, edgeitems=1),
                     dict(linewidth=30), dict(profile="full")):
            torch.set_printoptions(**opts)
            tnet.set_printoptions(**opts)
            assert repr(tnet.Tensor(values.to(tnet.DEVICE))) == repr(values.to(tnet.DEVICE)), opts
            torch.set_printoptions(profile="default")
            tnet.set_printoptions(profile="default")
    finally:
        torch.set_printoptions(profile="default")
        tnet.set_printoptions(profile="default")


def test_view_as_another_dtype_reads_the_same_bytes_as_torch():
    """x.view(dtype) reinterprets the memory (the last dim scaled by the sizes' ratio), off the tape, as torch's;
    a channels-last activation's bytes are read in torch's NCHW order."""
    values = np.array([[1.0, -2.0, 0.5, 3.0], [0.25, -0.0, 7.0, 1e-3]], np.float32)
    x = tnet.tensor(values, requires_grad=True)
    for dtype in (torch.int32, torch.float16, torch.bfloat16, torch.int16, torch.uint8, torch.float32):
        y = x.view(dtype)
        assert torch.equal(y.memory.cpu(), torch.tensor(values).view(dtype)) and not y.requires_grad
    image = np.random.RandomState(0).randn(2, 3, 2, 2).astype(np.float32)
    cl = tnet.Tensor(torch.tensor(image).to(tnet.DEVICE).contiguous(memory_format=torch.channels_last))
    got, want = cl.view(torch.float16).memory.cpu(), torch.tensor(image).view(torch.float16)
    assert got.shape == want.shape and torch.equal(got.view(torch.int16), want.view(torch.int16))  # bits: NaNs too
    with pytest.raises(TypeError, match="float64"):
        x.view(torch.float64)
