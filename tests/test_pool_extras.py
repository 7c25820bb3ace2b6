"""max_pool2d's indices and max_unpool, weight_norm and spectral_norm, and modules' full backward
hooks: values and gradients against torch in float64, on small odd shapes."""
import warnings

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from helpers import TOL, assert_close, check, leaf

TF = torch.nn.functional


def test_max_pool2d_indices_and_unpool_as_torch(rng):
    # unpooling only where windows do not overlap: an index held twice writes one of the two, in no
    # fixed order (torch's documented nondeterminism; the GPU's order differs from the interpreter's)
    for shape, k, s, p, ceil, cl in (((2, 3, 7, 9), 3, 2, 1, False, False), ((3, 6, 5), (2, 3), (2, 3), (1, 1), True, False),
                                     ((1, 16, 5, 6), 2, None, 0, False, True)):
        x, xr = leaf(rng, *shape, channels_last=cl)
        y, i = F.max_pool2d(x, k, s, p, ceil_mode=ceil, return_indices=True)
        yr, ir = TF.max_pool2d(xr, k, s, p, ceil_mode=ceil, return_indices=True)
        assert i.dtype == torch.int64 and np.array_equal(i.numpy(), ir.numpy()), shape
        if np.any(np.broadcast_to(k, 2) > np.broadcast_to(k if s is None else s, 2)):
            continue
        u, ur = leaf(rng, *y.shape)
        size = shape[-2:]  # the input's: the default size can be smaller where windows stick out
        check(lambda a: F.max_unpool2d(a, i, k, s, p, output_size=size),
              lambda a: TF.max_unpool2d(a, ir, k, s, p, output_size=size), [(u, ur)], rng)
    # through the pooling too, as modules, with output_size
    x, xr = leaf(rng, 2, 3, 7, 7)
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    tpool, tunpool = torch.nn.MaxPool2d(2, return_indices=True), torch.nn.MaxUnpool2d(2)
    check(lambda a: unpool(*pool(a), output_size=a.shape), lambda a: tunpool(*tpool(a), output_size=a.shape),
          [(x, xr)], rng)
    # 1-D
    x, xr = leaf(rng, 2, 3, 11)
    check(lambda a: nn.MaxUnpool1d(3, 2, 1)(*F.max_pool1d(a, 3, 2, 1, return_indices=True)),
          lambda a: TF.max_unpool1d(*TF.max_pool1d(a, 3, 2, 1, return_indices=True), 3, 2, 1), [(x, xr)], rng)


def test_max_unpool_errors_as_torch():
    y, i = F.max_pool2d(tnet.randn(1, 1, 4, 4), 2, return_indices=True)
    yr, ir = TF.max_pool2d(torch.randn(1, 1, 4, 4), 2, return_indices=True)
    for fn in (lambda f, a, b: f(a, b + 20, 2), lambda f, a, b: f(a, b.int(), 2)):
        with pytest.raises(RuntimeError):
            fn(TF.max_unpool2d, yr, ir)
        with pytest.raises(RuntimeError):
            fn(F.max_unpool2d, y, i)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(y, i, 2, output_size=(9, 9))
    assert F.max_unpool2d(y, i, 2, output_size=(1, 1, 5, 5)).shape == (1, 1, 5, 5)


def _copy_linear(lib, w, b):
    m = lib.nn.Linear(w.shape[1], w.shape[0])
    if lib is torch:
        m = m.double()
        m.weight.data, m.bias.data = torch.tensor(w), torch.tensor(b)
    else:
        m.weight.data, m.bias.data = tnet.tensor(w), tnet.tensor(b)
    return m


def test_weight_norm_as_torch(rng, ieee):
    w, b, x = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal((5, 3))
    for dim in (0, 1, None):
        t, r = _copy_linear(tnet, w, b), _copy_linear(torch, w, b)
        nn.utils.weight_norm(t, dim=dim)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            torch.nn.utils.weight_norm(r, dim=dim)
        assert list(t.state_dict()) == list(r.state_dict()) == ["bias", "weight_g", "weight_v"]
        assert t.weight_g.shape == tuple(r.weight_g.shape)
        y, yr = t(tnet.tensor(x)), r(torch.tensor(x))
        assert_close(y, yr, TOL["ieee"], f"weight_norm dim={dim}")
        (y * y).sum().backward()
        (yr * yr).sum().backward()
        for name in ("weight_g", "weight_v", "bias"):
            assert_close(getattr(t, name).grad, getattr(r, name).grad, TOL["ieee"], name)
    with pytest.raises(RuntimeError, match="two weight_norm"):
        nn.utils.weight_norm(t, dim=dim)
    nn.utils.remove_weight_norm(t)
    torch.nn.utils.remove_weight_norm(r)
    assert [n for n, _ in t.named_parameters()] == ["bias", "weight"] and isinstance(t.weight, nn.Parameter)
    assert_close(t.weight, r.weight, TOL["ieee"], "weight after remove_weight_norm")
    with pytest.raises(ValueError):
        nn.utils.remove_weight_norm(t)


def test_spectral_norm_as_torch(rng, ieee):
    w = rng.standard_normal((3, 2, 3, 3))
    t, r = nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 3).double()
    t.weight.data, r.weight.data = tnet.tensor(w), torch.tensor(w)
    t.bias.data = tnet.tensor(r.bias.detach().numpy())
    nn.utils.spectral_norm(t, n_power_iterations=2)
    torch.nn.utils.spectral_norm(r, n_power_iterations=2)
    assert list(t.state_dict()) == list(r.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    t.weight_u.data, t.weight_v.data = tnet.tensor(r.weight_u.numpy()), tnet.tensor(r.weight_v.numpy())
    x = rng.standard_normal((2, 2, 5, 5))
    for step in range(2):  # training: the power iteration updates u and v in place
        y, yr = t(tnet.tensor(x)), r(torch.tensor(x))
        assert_close(y, yr, TOL["ieee"], f"spectral_norm step {step}")
        assert_close(t.weight_u, r.weight_u, TOL["ieee"], "weight_u")
        y.sum().backward()
        yr.sum().backward()
        assert_close(t.weight_orig.grad, r.weight_orig.grad, TOL["ieee"], "weight_orig's gradient")
    t.eval(), r.eval()
    assert_close(t(tnet.tensor(x)), r(torch.tensor(x)), TOL["ieee"], "spectral_norm eval")
    nn.utils.remove_spectral_norm(t)
    torch.nn.utils.remove_spectral_norm(r)
    assert list(t.state_dict()) == ["bias", "weight"]
    assert_close(t.weight, r.weight, TOL["ieee"], "weight after remove_spectral_norm")


def _hooked(lib, tensor):
    class M(lib.nn.Module):
        def forward(self, a, k, b):
            return a * b * k, a + 1.0
    m, log = M(), []
    numpy = lambda gs: [None if g is None else g.detach().cpu().numpy() if isinstance(g, torch.Tensor) else g.numpy()
                        for g in gs]

    def hook(module, grad_input, grad_output):
        log.append(("hook", numpy(grad_input), numpy(grad_output)))
        return grad_input[0] * 2, None, grad_input[2]

    def pre_hook(module, grad_output):
        log.append(("pre", numpy(grad_output)))
        return grad_output[0] * 3, grad_output[1]
    m.register_full_backward_hook(hook)
    handle = m.register_full_backward_pre_hook(pre_hook)
    a, b = tensor([1., 2., 3.]), tensor([4., 5., 6.])
    y, z = m(a, 2.0, b)
    (y.sum() + (z * z).sum()).backward()
    handle.remove()
    c = tensor([1., -2.])
    (m(c, 1.0, tensor([3., 1.]))[0] * 2).sum().backward()  # the second output unused: None
    return log, a.grad.numpy(), b.grad.numpy(), c.grad.numpy()


def test_full_backward_hooks_as_torch():
    ours = _hooked(tnet, lambda v: tnet.tensor(v, requires_grad=True))
    theirs = _hooked(torch, lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True))
    for a, b in zip(ours[1:], theirs[1:]):
        assert_close(a, b, TOL["ieee"], "input gradients")
    assert len(ours[0]) == len(theirs[0]) == 3
    for (kind, *gs), (kind_r, *gs_r) in zip(ours[0], theirs[0]):
        assert kind == kind_r
        for g, gr in zip(gs, gs_r):
            assert [v is None for v in g] == [v is None for v in gr], kind
            for v, vr in zip(g, gr):
                if v is not None:
                    assert_close(v, vr, TOL["ieee"], kind)


def test_full_backward_hook_inputs_and_outputs_as_torch():
    """A full backward hook's grad_input holds zeros (of the input's dtype) for a tensor input that needs no gradient
    beside one that does, None for other arguments, as torch's; a module whose output is neither a tensor nor a tuple
    warns and runs no backward hook, as torch's."""
    results = []
    for lib in (tnet, torch):
        class Block(lib.nn.Module):
            def forward(self, x, idx, y, scale):
                return x * 2 + y * scale

        class Named(lib.nn.Module):
            def forward(self, x):
                return {"out": x * 3}

        seen = []
        block, named = Block(), Named()
        for module in (block, named):
            module.register_full_backward_hook(lambda mod, gi, go: seen.append(
                [None if g is None else (g.tolist(), str(g.dtype)) for g in gi]))
        x = lib.ones(2, requires_grad=True)
        block(x, lib.tensor([1, 2]), lib.ones(2), 3.0).sum().backward()
        with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple of Tensors"):
            out = named(x)
        out["out"].sum().backward()
        results.append((seen, x.grad.tolist()))
    assert results[0] == results[1], results


# ---- nn.utils.parametrize and nn.utils.parametrizations ----

def _layer_pair(kind, rng):
    """A Linear(3, 4) or a Conv2d(2, 3, 3) in tnet and its float64 torch twin with the same weights, and an input."""
    if kind == "linear":
        t, r, x = nn.Linear(3, 4), torch.nn.Linear(3, 4).double(), rng.standard_normal((5, 3))
    else:
        t, r, x = nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 3).double(), rng.standard_normal((2, 2, 5, 5))
    for name in ("weight", "bias"):
        value = rng.standard_normal(tuple(getattr(r, name).shape))
        getattr(t, name).data, getattr(r, name).data = tnet.tensor(value), torch.tensor(value)
    return t, r, x


def _grads_as_torch(t, r, x, what):
    """Forward and every parameter's gradient (by name) of tnet's t against torch's r."""
    y, yr = t(tnet.tensor(x)), r(torch.tensor(x))
    assert_close(y, yr, TOL["ieee"], what)
    (y * y).sum().backward()
    (yr * yr).sum().backward()
    theirs = dict(r.named_parameters())
    assert list(dict(t.named_parameters())) == list(theirs)
    for name, p in t.named_parameters():
        assert_close(p.grad, theirs[name].grad, TOL["ieee"], f"{what}: gradient of {name}")


def test_parametrizations_weight_norm_as_torch(rng, ieee):
    P = nn.utils.parametrize
    for kind, dim in (("linear", 0), ("linear", 1), ("linear", None), ("conv", 0), ("conv", 2)):
        t, r, x = _layer_pair(kind, rng)
        assert nn.utils.parametrizations.weight_norm(t, dim=dim) is t
        torch.nn.utils.parametrizations.weight_norm(r, dim=dim)
        assert type(t).__name__ == type(r).__name__ and P.type_before_parametrizations(t) in (nn.Linear, nn.Conv2d)
        assert list(t.state_dict()) == list(r.state_dict()) == [
            "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
        assert t.parametrizations.weight.original0.shape == tuple(r.parametrizations.weight.original0.shape)
        assert_close(t.weight, r.weight.detach(), TOL["ieee"], "the parametrized weight")
        _grads_as_torch(t, r, x, f"weight_norm {kind} dim={dim}")
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(t, "weight", leave_parametrized=False)
    P.remove_parametrizations(t, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(r, "weight")
    assert type(t) is nn.Conv2d and not P.is_parametrized(t) and not hasattr(t, "parametrizations")
    assert list(t.state_dict()) == ["bias", "weight"] and isinstance(t.weight, nn.Parameter)
    assert_close(t.weight, r.weight, TOL["ieee"], "weight after remove_parametrizations")
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(t, "weight")


def test_parametrizations_spectral_norm_as_torch(rng, ieee):
    P = nn.utils.parametrize
    for kind in ("linear", "conv"):
        t, r, x = _layer_pair(kind, rng)
        nn.utils.parametrizations.spectral_norm(t, n_power_iterations=2)
        torch.nn.utils.parametrizations.spectral_norm(r, n_power_iterations=2)
        assert list(t.state_dict()) == list(r.state_dict()) == [
            "bias", "parametrizations.weight.original", "parametrizations.weight.0._u", "parametrizations.weight.0._v"]
        ours, theirs = t.parametrizations.weight[0], r.parametrizations.weight[0]
        ours._u.data, ours._v.data = tnet.tensor(theirs._u.numpy()), tnet.tensor(theirs._v.numpy())
        for step in range(2):  # training: each forward's power iteration updates _u and _v in place
            _grads_as_torch(t, r, x, f"spectral_norm {kind} step {step}")
            assert_close(ours._u, theirs._u, TOL["ieee"], "_u")
            assert_close(ours._v, theirs._v, TOL["ieee"], "_v")
            t.zero_grad(), r.zero_grad()
        t.eval(), r.eval()
        assert_close(t(tnet.tensor(x)), r(torch.tensor(x)), TOL["ieee"], "spectral_norm eval")
        assert_close(ours._u, theirs._u, TOL["ieee"], "_u unchanged in eval mode")
        original = t.parametrizations.weight.original
        leave = kind == "linear"  # both ways: the parametrized weight, or the original one
        P.remove_parametrizations(t, "weight", leave_parametrized=leave)
        torch.nn.utils.parametrize.remove_parametrizations(r, "weight", leave_parametrized=leave)
        assert t.weight is original and list(t.state_dict()) == ["bias", "weight"]  # an optimizer's parameter stays
        assert_close(t.weight, r.weight, TOL["ieee"], f"weight after remove_parametrizations({leave})")
    with pytest.raises(ValueError, match="n_power_iterations"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


@pytest.mark.parametrize("shape, orthogonal_map, trivial", [
    ((4, 4), None, True), ((5, 3), None, True), ((3, 5), "cayley", True), ((4, 4), "householder", True),
    ((3, 5), "householder", False), ((5, 3), "matrix_exp", True)])
def test_parametrizations_orthogonal_as_torch(shape, orthogonal_map, trivial, rng, ieee):
    """The initial weight is the original's Q factor (a non-square base completed by tnet's own draws,
    which leave the Q of the original's columns as torch's); then, from the same state_dict, the
    forward, the gradients of the original and two SGD steps as torch's, the weight staying orthogonal."""
    w, b, x = rng.standard_normal(shape), rng.standard_normal(shape[0]), rng.standard_normal((2, shape[1]))
    t, r = _copy_linear(tnet, w, b), _copy_linear(torch, w, b)
    assert nn.utils.parametrizations.orthogonal(t, orthogonal_map=orthogonal_map, use_trivialization=trivial) is t
    torch.nn.utils.parametrizations.orthogonal(r, orthogonal_map=orthogonal_map, use_trivialization=trivial)
    assert list(t.state_dict()) == list(r.state_dict())
    assert_close(t.weight, r.weight.detach(), TOL["ieee"], "the initial weight")
    r.load_state_dict({k: torch.tensor(v.numpy()) for k, v in t.state_dict().items()})
    opt, opt_r = tnet.optim.SGD(t.parameters(), lr=0.1), torch.optim.SGD(r.parameters(), lr=0.1)
    for step in range(2):
        _grads_as_torch(t, r, x, f"orthogonal {shape} {orthogonal_map} step {step}")
        opt.step(), opt_r.step(), opt.zero_grad(), opt_r.zero_grad()
    q = t.weight.detach().numpy().astype(np.float64)
    q = q.T if shape[0] >= shape[1] else q
    np.testing.assert_allclose(q @ q.T, np.eye(min(shape)), atol=1e-5)
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        nn.utils.parametrizations.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix"):
        nn.utils.parametrizations.orthogonal(nn.Linear(2, 2), "bias")
    cayley = nn.utils.parametrizations.orthogonal(nn.Linear(2, 2), orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):  # at assignment, as torch's
        cayley.weight = tnet.eye(2)


def test_householder_product_gradients_as_torch(rng, ieee):
    """linalg.householder_product (on the device now, with gradients) and ormqr as torch's float64."""
    h64, tau64 = torch.geqrf(torch.tensor(rng.standard_normal((2, 5, 3))))
    h, tau = leaf(rng, 2, 5, 3, values=h64.numpy()), leaf(rng, 2, 3, values=tau64.numpy())
    check(tnet.linalg.householder_product, torch.linalg.householder_product, [h, tau], rng)
    other = rng.standard_normal((2, 5, 4))
    for kw in ({}, {"transpose": True}):
        assert_close(tnet.ormqr(h[0].detach(), tau[0].detach(), tnet.tensor(other), **kw),
                     torch.ormqr(h64, tau64, torch.tensor(other), **kw), TOL["ieee"], f"ormqr {kw}")


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).T

        def right_inverse(self, A):
            return A.triu()
    return Symmetric()


def test_register_parametrization_as_torch(rng, ieee):
    P = nn.utils.parametrize
    w, b, x = rng.standard_normal((3, 3)), rng.standard_normal(3), rng.standard_normal((4, 3))
    t, r = _copy_linear(tnet, w, b), _copy_linear(torch, w, b)
    weight = t.weight
    assert not P.is_parametrized(t)
    P.register_parametrization(t, "weight", _symmetric(tnet))
    torch.nn.utils.parametrize.register_parametrization(r, "weight", _symmetric(torch))
    assert P.is_parametrized(t) and P.is_parametrized(t, "weight") and not P.is_parametrized(t, "bias")
    assert t.parametrizations.weight.original is weight  # right_inverse's value, in the same Parameter
    assert list(t.state_dict()) == list(r.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert_close(t.parametrizations.weight.original, r.parametrizations.weight.original, TOL["ieee"], "original")
    assert_close(t.weight, r.weight.detach(), TOL["ieee"], "symmetric weight")
    _grads_as_torch(t, r, x, "Symmetric")
    with P.cached():
        assert t.weight is t.weight
    assert t.weight is not t.weight
    s = rng.standard_normal((3, 3))
    t.weight, r.weight = tnet.tensor(s + s.T), torch.tensor(s + s.T)  # assignment runs right_inverse
    assert_close(t.parametrizations.weight.original, r.parametrizations.weight.original, TOL["ieee"], "assigned")
    with pytest.raises(ValueError, match="does not have a parameter"):
        P.register_parametrization(t, "nothing", _symmetric(tnet))
    class Transpose(nn.Module):
        def forward(self, X):
            return X.T
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(nn.Linear(3, 2), "weight", Transpose())
    class Double(nn.Module):  # no right_inverse: the original is the value itself
        def forward(self, X):
            return X * 2
    P.register_parametrization(t, "bias", Double())
    P.register_parametrization(t, "bias", Double())  # a second one, applied after the first
    assert list(t.state_dict()) == ["parametrizations.weight.original", "parametrizations.bias.original"]
    assert_close(t.bias, 4 * b, TOL["ieee"], "bias through two parametrizations")
    P.remove_parametrizations(t, "bias", leave_parametrized=False)
    assert isinstance(t.bias, nn.Parameter) and P.is_parametrized(t) and not P.is_parametrized(t, "bias")
    assert_close(t.bias, b, TOL["ieee"], "bias left unparametrized")
    for leave in (True, False):
        t, r = _copy_linear(tnet, w, b), _copy_linear(torch, w, b)
        for m in (t, r):
            nn_ = nn if m is t else torch.nn
            nn_.utils.parametrize.register_parametrization(m, "weight", _symmetric(tnet if m is t else torch))
            nn_.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=leave)
        assert type(t) is nn.Linear and [n for n, _ in t.named_parameters()] == ["bias", "weight"]
        assert_close(t.weight, r.weight, TOL["ieee"], f"weight after remove_parametrizations({leave})")


@pytest.mark.parametrize("dims,shape,kernel,out", [(2, (2, 3, 9, 7), (2, 3), (4, 3)), (2, (3, 8, 8), 3, (5, 5)),
                                                   (3, (1, 2, 5, 6, 7), 2, (3, 4, 3))])
def test_fractional_max_pool_as_torch(dims, shape, kernel, out, rng):
    """torch's windows from the same _random_samples (ReLU'd input: ties at zero go to one input, the
    first in the window, as torch's), the indices, and the gradient to each window's one maximum."""
    batch = shape[:2] if len(shape) == dims + 2 else (1, shape[0])
    samples = rng.random((*batch, dims)).astype(np.float32)
    x, xr = leaf(rng, *shape)
    f, fr = (F.fractional_max_pool2d, TF.fractional_max_pool2d) if dims == 2 else \
        (F.fractional_max_pool3d, TF.fractional_max_pool3d)
    s, sr = tnet.tensor(samples), torch.tensor(samples, dtype=torch.float64)  # the input's dtype, as torch asks
    y, i = f(F.relu(x), kernel, output_size=out, return_indices=True, _random_samples=s)
    yr, ir = fr(TF.relu(xr), kernel, output_size=out, return_indices=True, _random_samples=sr)
    assert i.dtype == torch.int64 and np.array_equal(i.numpy(), ir.numpy())
    check(lambda a: f(F.relu(a), kernel, output_size=out, _random_samples=s),
          lambda a: fr(TF.relu(a), kernel, output_size=out, _random_samples=sr), [(x, xr)], rng)
    ratio = (0.6,) * dims  # torch's function takes a tuple (its module a number too)
    assert f(x, kernel, output_ratio=ratio).shape == fr(xr, kernel, output_ratio=ratio).shape  # new windows
    module = (nn.FractionalMaxPool2d if dims == 2 else nn.FractionalMaxPool3d)(kernel, output_size=out,
                                                                               _random_samples=s)
    assert np.array_equal(module(F.relu(x)).detach().numpy(), y.detach().numpy()) and "_random_samples" in dict(
        module.named_buffers())


def test_fractional_max_pool_of_an_empty_batch_as_torch():
    y, i = F.fractional_max_pool2d(tnet.randn(0, 3, 7, 7), 2, output_size=3, return_indices=True)
    assert y.shape == i.shape == TF.fractional_max_pool2d(torch.randn(0, 3, 7, 7), 2, output_size=3).shape


def test_fractional_max_pool_errors_as_torch():
    x = tnet.randn(1, 2, 5, 5)
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="too large relative to input"):
        F.fractional_max_pool2d(x, 3, output_size=4)
    for kernel in (0, (2, -1)):  # torch's CPU kernel returns -inf and indices past the plane: refused
        with pytest.raises(RuntimeError, match="kernel_size must be at least 1"):
            F.fractional_max_pool2d(x, kernel, output_size=2)
    for samples in (tnet.rand(1, 2, 3), tnet.rand(1, 2, 2, dtype=torch.float16)):
        with pytest.raises(RuntimeError, match="_random_samples"):
            F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=samples)
    for kwargs, match in (({}, "output size, or a pooling ratio"), ({"output_size": 2, "output_ratio": 0.5}, "only one"),
                          ({"output_ratio": 1.5}, "between 0 and 1")):
        with pytest.raises(ValueError, match=match):
            nn.FractionalMaxPool2d(2, **kwargs)


@pytest.mark.parametrize("name,shape,args", [
    ("max_pool2d", (2, 3, 7, 8), dict(kernel_size=3, stride=1, padding=1, dilation=2)),
    ("max_pool2d", (3, 9, 9), dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), dilation=(3, 2), ceil_mode=True)),
    ("max_pool2d", (1, 2, 6, 6), dict(kernel_size=4, stride=3, padding=2, dilation=2, ceil_mode=True)),
    ("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=1, padding=1, dilation=2)),
    ("max_pool1d", (3, 10), dict(kernel_size=2, stride=3, padding=1, dilation=3, ceil_mode=True))])
def test_dilated_max_pool_as_torch(rng, name, shape, args):
    """max_pool2d and max_pool1d with dilation > 1 (nn.MaxPool2d(3, 1, 1, dilation=2)): values, int64 indices into
    the input plane, the gradient, and ceil mode's last window, as torch's; padding beyond half the kernel (not its
    span) is torch's error."""
    x, xr = leaf(rng, *shape)
    y, i = getattr(F, name)(x, return_indices=True, **args)
    yr, ir = getattr(TF, name)(xr, return_indices=True, **args)
    assert i.dtype == torch.int64 and np.array_equal(i.numpy(), ir.numpy())
    check(lambda a: getattr(F, name)(a, **args), lambda a: getattr(TF, name)(a, **args), [(x, xr)], rng)
    assert nn.MaxPool2d(3, 1, 1, dilation=2)(tnet.ones(1, 1, 5, 5)).shape == (1, 1, 3, 3)
    for lib in (tnet, torch):
        with pytest.raises(RuntimeError, match="half of kernel size"):
            lib.nn.functional.max_pool2d(lib.ones(1, 1, 7, 7), 3, 1, 2, dilation=2)
