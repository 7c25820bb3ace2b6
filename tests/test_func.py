"""tnet.func against torch.func: the per-sample-gradients and model-ensembling tutorials (grad, vmap,
functional_call, stack_module_state), grad_and_value with aux, vjp, jacrev, hessian, vmap's dims, and
the errors."""
import copy

import numpy as np
import pytest
import torch

import tnet
from helpers import assert_close


_CLASSES = {}


def small_cnn(lib):
    if lib not in _CLASSES:
        _CLASSES[lib] = _cnn_class(lib)
    return _CLASSES[lib]()


def _cnn_class(lib):
    nn, F = lib.nn, lib.nn.functional

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.fc1 = nn.Linear(4 * 3 * 3, 5)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            return F.log_softmax(self.fc1(lib.flatten(x, 1)), dim=1)
    return SimpleCNN


def twins(make):
    torch.manual_seed(0)
    theirs, ours = make(torch), make(tnet)
    ours.load_state_dict({k: tnet.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_per_sample_gradients_tutorial(rng, ieee):
    """The tutorial's ft_compute_sample_grad = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))."""
    ours, theirs = twins(small_cnn)
    data = rng.standard_normal((3, 1, 8, 8)).astype(np.float32)
    targets = np.array([1, 4, 0])
    results = []
    for lib, model in ((tnet, ours), (torch, theirs)):
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            predictions = lib.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return lib.nn.functional.nll_loss(predictions, target.unsqueeze(0))
        compute_sample_grad = lib.func.vmap(lib.func.grad(compute_loss), in_dims=(None, None, 0, 0))
        results.append(compute_sample_grad(params, buffers, lib.tensor(data), lib.tensor(targets)))
    assert list(results[0]) == list(results[1])
    for name, ref in results[1].items():
        assert results[0][name].shape == ref.shape
        assert_close(results[0][name], ref, 1e-4, name)
    model = ours  # the tutorial's check: one backward per sample gives the same
    for i in range(3):
        model.zero_grad()
        tnet.nn.functional.nll_loss(model(tnet.tensor(data[i:i + 1])), tnet.tensor(targets[i:i + 1])).backward()
        assert_close(results[0]["conv1.weight"][i], torch.tensor(model.conv1.weight.grad.numpy()), 1e-5)


def test_model_ensembling_tutorial(rng, ieee):
    """stack_module_state, then vmap of functional_call over the models, with one minibatch for all
    (in_dims=(0, 0, None)) and one each (in_dims=(0, 0, 0))."""
    pairs = [twins(small_cnn) for _ in range(3)]
    batches = rng.standard_normal((3, 2, 1, 8, 8)).astype(np.float32)
    results = []
    for lib, models in ((tnet, [p[0] for p in pairs]), (torch, [p[1] for p in pairs])):
        params, buffers = lib.func.stack_module_state(models)
        assert params["conv1.weight"].shape == (3, 4, 1, 3, 3) and params["fc1.bias"].requires_grad
        base = copy.deepcopy(models[0]).to("meta")  # tnet's keeps its values, unused here

        def fmodel(params, buffers, x):
            return lib.func.functional_call(base, (params, buffers), (x,))
        results.append((lib.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, lib.tensor(batches[0])),
                        lib.vmap(fmodel)(params, buffers, lib.tensor(batches))))
    for got, ref in zip(*results):
        assert got.shape == ref.shape == (3, 2, 5)
        assert_close(got, ref, 1e-5)
    for m, (model, _) in enumerate(pairs):  # each model's own call
        assert_close(results[0][1][m], torch.tensor(model(tnet.tensor(batches[m])).numpy()), 1e-6)


def test_replace_all_batch_norm_modules_as_torchs(rng, ieee):
    """torch.func.replace_all_batch_norm_modules_ (the per-sample-gradient tutorial's patch for a model with batch
    norm): the running statistics gone (None, not in the state_dict), track_running_stats False, in place; the
    model normalises by each batch's statistics in eval mode too, and a vmap of functional_call over it runs."""
    x = rng.standard_normal((4, 3)).astype(np.float32)
    results = []
    for lib in (tnet, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Sequential(lib.nn.BatchNorm1d(4)))
        with lib.no_grad():
            model[0].weight.copy_(lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)))
        assert lib.func.replace_all_batch_norm_modules_(model) is model
        bn = model[2][0]
        assert bn.running_mean is None and bn.running_var is None and bn.num_batches_tracked is None
        assert not bn.track_running_stats
        model.eval()
        params = {k: v.detach() for k, v in model.named_parameters()}
        out = lib.func.vmap(lambda p, b: lib.func.functional_call(model, p, (b,)), in_dims=(None, 0))(
            params, lib.tensor(x.reshape(2, 2, 3)))
        results.append((sorted(model.state_dict()), model(lib.tensor(x)).tolist(), out.shape))
    assert results[0][0] == results[1][0] and results[0][2] == results[1][2]
    assert np.allclose(results[0][1], results[1][1], atol=1e-5)


def test_transforms_as_torchs(rng, ieee):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)

    def f(lib):
        return lambda x, w: ((x @ w).tanh() ** 2).sum()
    got, ref = (lib.func.grad_and_value(f(lib), argnums=(0, 1))(lib.tensor(x), lib.tensor(w)) for lib in (tnet, torch))
    for a, b in zip(got[0], ref[0]):
        assert_close(a, b, 1e-5)
    assert_close(got[1], ref[1], 1e-5)
    aux = tnet.func.grad(lambda x: (x.square().sum(), x.mean()), has_aux=True)(tnet.tensor(w))
    assert_close(aux[0], 2 * torch.tensor(w), 1e-6) and np.isclose(aux[1].item(), w.mean())
    jac, jac_ref = (lib.func.jacrev(lambda x: (x * x).sin())(lib.tensor(w)) for lib in (tnet, torch))
    assert_close(jac, jac_ref, 1e-5)
    hess, hess_ref = (lib.func.hessian(lambda x: (x ** 3).sum())(lib.tensor(w)) for lib in (tnet, torch))
    assert_close(hess, hess_ref, 1e-5)
    gg, gg_ref = (lib.func.grad(lib.func.grad(lambda x: (x ** 3).sum()))(lib.tensor(1.5)) for lib in (tnet, torch))
    assert gg.item() == pytest.approx(gg_ref.item())
    (out, fn), (out_ref, fn_ref) = (lib.func.vjp(lambda x: x.exp() * 2, lib.tensor(w)) for lib in (tnet, torch))
    assert_close(out, out_ref, 1e-6)
    assert_close(fn(tnet.ones(4))[0], fn_ref(torch.ones(4))[0], 1e-6)
    moved, moved_ref = (lib.vmap(lambda a, b: a * b, in_dims=(1, None), out_dims=1)(lib.tensor(x), lib.tensor(x[:, 0]))
                        for lib in (tnet, torch))
    assert moved.shape == moved_ref.shape == (3, 4)
    assert_close(moved, moved_ref, 1e-6)


def test_jvp_and_jacfwd_as_torchs(rng, ieee):
    """func.jvp (a tuple output with an unreached part, has_aux), the composing-transforms tutorial's hvp as jvp of
    grad, and jacfwd (also with argnums and of jacrev) against torch.func's."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w, v = (rng.standard_normal(4).astype(np.float32) for _ in range(2))
    got, ref = (lib.func.jvp(lambda a, b: ((a @ b).tanh(), b.exp(), lib.ones(2)), (lib.tensor(x), lib.tensor(w)),
                             (lib.tensor(x[::-1].copy()), lib.tensor(v))) for lib in (tnet, torch))
    for a, b in zip(got[0] + got[1], ref[0] + ref[1]):
        assert_close(a, b, 1e-5)
    assert not got[0][0].requires_grad and not got[1][0].requires_grad
    out, product, aux = tnet.func.jvp(lambda a: (a.sin(), a.sum()), (tnet.tensor(w),), (tnet.tensor(v),), has_aux=True)
    assert_close(product, np.cos(w) * v, 1e-5) and np.isclose(aux.item(), w.sum(), rtol=1e-5)

    def hvp(lib, f, primals, tangents):
        return lib.func.jvp(lib.func.grad(f), primals, tangents)[1]
    got, ref = (hvp(lib, lambda a: (a.sin() * a).sum(), (lib.tensor(w),), (lib.tensor(v),)) for lib in (tnet, torch))
    assert_close(got, ref, 1e-5)
    for make in (lambda lib: lib.func.jacfwd(lambda a, b: (a @ b).sin(), argnums=(0, 1)),
                 lambda lib: lib.func.jacfwd(lib.func.jacrev(lambda a, b: ((a @ b) ** 3).sum()))):
        got, ref = (make(lib)(lib.tensor(x), lib.tensor(w)) for lib in (tnet, torch))
        for a, b in zip(got if isinstance(got, tuple) else (got,), ref if isinstance(ref, tuple) else (ref,)):
            assert_close(a, b, 1e-5)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        tnet.func.jvp(lambda a: a, tnet.tensor(w), (tnet.tensor(v),))


def test_transforms_stay_on_the_tape_of_other_tensors_as_torchs(rng, ieee):
    """A transform's result is differentiable with respect to the tensors that require grad besides its
    inputs, as torch.func's: a closed-over module's parameters (a Jacobian penalty), an argument not
    differentiated at (a PINN's params beside its points), through vmap and hessian; without any, it
    requires no grad. jacrev takes a dict of tensors (a pytree) too."""
    w0 = rng.standard_normal((3, 2)).astype(np.float32)
    pts = rng.standard_normal((2, 2)).astype(np.float32)
    results = []
    for lib in (tnet, torch):
        layer = lib.nn.Linear(2, 3)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(w0))
            layer.bias.fill_(0.1)
        w = lib.tensor(w0[:, :1].copy(), requires_grad=True)

        def u(params, x):
            return (lib.func.functional_call(layer, params, (x,)).tanh() * w.squeeze(1)).sum()
        params = dict(layer.named_parameters())
        jac = lib.func.vmap(lib.func.jacrev(u, argnums=1), in_dims=(None, 0))(params, lib.tensor(pts))
        hess = lib.func.hessian(lambda x: layer(x).tanh().sum())(lib.tensor(pts[0]))
        by_dict = lib.func.jacrev(lambda p: lib.func.functional_call(layer, p, (lib.tensor(pts[0]),)))(params)
        (jac.pow(2).sum() + hess.sum() + by_dict["weight"].sum()).backward()
        plain = lib.func.jacrev(lambda x: x.tanh())(lib.tensor(pts[0]))
        assert not plain.requires_grad and jac.requires_grad
        results.append([jac.detach(), hess.detach(), by_dict["bias"].detach(), layer.weight.grad, layer.bias.grad,
                        w.grad])
    names = ["jacobian", "hessian", "jacobian of a dict", "weight's gradient", "bias's gradient", "w's gradient"]
    for got, ref, name in zip(*results, names):
        assert_close(got, ref, 1e-5, name)


def test_errors_as_torchs():
    for lib in (tnet, torch):
        with pytest.raises(RuntimeError, match="scalar Tensor"):
            lib.func.grad(lambda x: x * 2)(lib.ones(3))
        with pytest.raises(ValueError, match="same size in the mapped dimension"):
            lib.vmap(lambda a, b: a + b)(lib.ones(2), lib.ones(3))
        with pytest.raises(ValueError, match="in_dims is not compatible"):
            lib.vmap(lambda a: a, in_dims=(0, 0))(lib.ones(2))
        with pytest.raises(RuntimeError, match="same class"):
            lib.func.stack_module_state([lib.nn.Linear(2, 2), lib.nn.Conv2d(2, 2, 1)])
