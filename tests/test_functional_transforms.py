"""torch.special's functions, torch.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) and
torch.func.functional_call (a MAML step), against torch."""
import numpy as np
import pytest
import torch

import tnet
from helpers import config_indices, only_ith_config
from tnet.kernels import pointwise

X = np.array([-1.0, 0.0, 0.5, 2.0, np.nan, -3.0, 1e-3], np.float32)
Y = np.array([0.5, 2.0, -0.5, np.nan, 1.0, 0.0, 3.0], np.float32)


def _same(got, want, rtol=1e-5, atol=1e-6):
    got, want = (got,) if not isinstance(got, tuple) else got, (want,) if not isinstance(want, tuple) else want
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            _same(g, w, rtol, atol)
        else:
            assert tuple(g.shape) == tuple(w.shape)
            np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", ["expit", "logit", "erf", "erfc", "erfinv", "exp2", "expm1", "log1p", "gammaln", "digamma",
                                  "psi", "sinc", "round", "ndtr", "entr"])
def test_special_unary_as_torch(name):
    _same(getattr(tnet.special, name)(tnet.tensor(X)), getattr(torch.special, name)(torch.tensor(X)))


def test_special_binary_softmax_and_polygamma_as_torch():
    for name in ("xlogy", "xlog1py"):
        _same(getattr(tnet.special, name)(tnet.tensor(X), tnet.tensor(Y)), getattr(torch.special, name)(torch.tensor(X), torch.tensor(Y)))
    m = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    _same(tnet.special.softmax(tnet.tensor(m), 1), torch.special.softmax(torch.tensor(m), 1))
    _same(tnet.special.log_softmax(tnet.tensor(m), 0), torch.special.log_softmax(torch.tensor(m), 0))
    _same(tnet.special.logsumexp(tnet.tensor(m), 1), torch.special.logsumexp(torch.tensor(m), 1))
    _same(tnet.special.polygamma(1, tnet.tensor(np.abs(m) + 0.5)), torch.special.polygamma(1, torch.tensor(np.abs(m) + 0.5)))
    assert tnet.special.expit is tnet.functional.sigmoid  # tnet.sigmoid is that one with out= (OUT_FUNCTIONS)


WIDE = np.array([-100, -30, -12.5, -12, -9, -5, -2, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2, 5, 8, 11.9, 12, 12.1, 20, 40, 80,
                 88, 89.5, np.inf, -np.inf, np.nan], np.float32)
PROBS = np.array([0, 1e-38, 1e-30, 1e-10, 1e-5, 1e-3, 0.02, 0.0242, 0.03, 0.2, 0.5, 0.7, 0.97, 0.98, 0.999, 0.99999, 1,
                  -0.1, 1.1, np.nan], np.float32)


@pytest.mark.parametrize("name", ["erfcx", "log_ndtr", "ndtri", "i0", "i0e", "i1", "i1e"])
def test_special_erfcx_log_ndtr_ndtri_bessel_as_torch(name):
    """Against torch's float64 of the same inputs rounded to float32, on both tails, overflows and edges
    (within 2e-6 relative, 2e-5 for log_ndtr's upper tail, as torch's float32: i0 and i1 overflow past 88.7 as
    torch's float32 exp(x) does, where float64's I_nu is still finite), and the gradients where float32 keeps
    them (erfcx's cancels above 0, as torch's)."""
    data = PROBS if name == "ndtri" else WIDE
    want = getattr(torch.special, name)(torch.tensor(data, dtype=torch.float64)).float()
    want = torch.where(getattr(torch.special, name)(torch.tensor(data)).isinf(), float("inf") * want.sign(), want)
    _same(getattr(tnet.special, name)(tnet.tensor(data)), want,
          rtol=2e-5 if name == "log_ndtr" else 2e-6, atol=0)  # log_ndtr's upper tail: x / sqrt(2)'s rounding
    d = data[(data > 0) & (data < 0.999)] if name == "ndtri" else data[np.abs(data) < 30]
    ours, ref = tnet.tensor(d, requires_grad=True), torch.tensor(d, dtype=torch.float64, requires_grad=True)
    getattr(tnet.special, name)(ours).sum().backward()
    getattr(torch.special, name)(ref).sum().backward()
    tol = 1e-3 if name == "erfcx" else 3e-5
    fits = np.abs(ref.grad.numpy()) < 3e38  # float32's range
    np.testing.assert_allclose(ours.grad.numpy()[fits], ref.grad.numpy()[fits], rtol=tol, atol=1e-37)
    if name == "i0":
        x = tnet.tensor(d)
        _same(x.i0(), torch.tensor(d).i0())
        _same(tnet.i0(x), torch.i0(torch.tensor(d)))
        x.i0_()
        _same(x, torch.tensor(d).i0())


BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"]


def _against_float64(got, want, tol):
    """got (float32) against torch's float64 want: the same NaN and infinities, and a relative error
    ||got - want|| / ||want|| under tol over the finite values."""
    got, want = got.numpy().astype(np.float64), want.numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    assert np.linalg.norm(got[finite] - want[finite]) <= tol * np.linalg.norm(want[finite])


@pytest.mark.parametrize("name", BESSEL)
def test_special_bessel_and_airy_as_torch(name):
    """The Bessel functions of both kinds, K0 and K1 (scaled too), j0 and Ai against torch's float64, across each
    method's switch (2, 12, 20; Ai's -8 and 2) and the edges (0, -0, +-inf, NaN, tiny and huge values); no
    gradient, as torch's; integer input gives float32, a 16-bit one torch's NotImplementedError."""
    x = np.concatenate([np.linspace(-40, 40, 161), [0, -0.0, 1e-30, 1e-5, 1.99, 2.01, 11.99, 12.01, 19.99, 20.01, -7.99,
                                                    -8.01, 1e4, -1e4, 1e30, np.inf, -np.inf, np.nan]]).astype(np.float32)
    ours = getattr(tnet.special, name)(tnet.tensor(x, requires_grad=True))
    assert ours.dtype == torch.float32 and not ours.requires_grad
    _against_float64(ours.memory.cpu(), getattr(torch.special, name)(torch.tensor(x, dtype=torch.float64)),
                     2e-6 if name == "airy_ai" else 1e-6)  # torch's float64 Ai errs near its zeros
    assert getattr(tnet.special, name)(tnet.tensor([1, 2])).dtype == torch.float32
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        getattr(tnet.special, name)(tnet.tensor([1.0]).half())


def test_special_zeta_as_torch():
    """Hurwitz's zeta against torch's float64, its poles and domain (x = 1, x < 1, q = 0, -1, ..., q < 0 with a
    non-integer x, x = inf) as torch's; either argument a number; the backward raises, as torch's."""
    s = np.array([2, 3, 2.5, 1, 0.5, 2, 3, 2.5, 2, np.inf, np.inf, np.inf, 4, 1.5, 2, 3, 1.01, 7, np.nan, 2], np.float32)
    q = np.array([1, 2, 0.3, 1, 1, -1.5, -2.5, -1.5, 0, 1, 0.5, 2, 1e9, 7, -3, -0.5, 5, 0.1, 1, np.nan], np.float32)
    _against_float64(tnet.special.zeta(tnet.tensor(s), tnet.tensor(q)).memory.cpu(),
                     torch.special.zeta(torch.tensor(s, dtype=torch.float64), torch.tensor(q, dtype=torch.float64)), 1e-6)
    _same(tnet.special.zeta(3.0, tnet.tensor([1, 2])), torch.special.zeta(3.0, torch.tensor([1, 2])))
    _same(tnet.special.zeta(tnet.tensor([2.0, 4.0]), other=2), torch.special.zeta(torch.tensor([2.0, 4.0]), other=2))
    y = tnet.special.zeta(tnet.tensor([2.0, 3.0], requires_grad=True), 1.0)
    with pytest.raises(NotImplementedError, match="derivative for 'zeta'"):
        y.sum().backward()


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                                  "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                                  "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                                  "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                                  "laguerre_polynomial_l", "legendre_polynomial_p"])
def test_special_orthogonal_polynomials_as_torch(name):
    """Each polynomial against torch's float64 at degrees -2 to 13 (a degree per element: the recurrence runs to the
    block's largest), the trigonometric forms past degree 6 or 8, the closed values at x = +-1 (x = 0, 1 for the
    shifted and Laguerre's ones), fractional, NaN and infinite degrees (0, as torch's), and x or n a number."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-2, 2, 60), [1, -1, 0, 0.5, 0.5, 1, -1, 2, 0.3, 0.3, 0.7, 0.7, 0.25]]).astype(np.float32)
    n = np.concatenate([rng.integers(-2, 14, 60), [3, 3, 5, np.nan, np.inf, 0, 0, 2.9, 9, 12, 10, 7, -0.5]]).astype(np.float32)
    ours = getattr(tnet.special, name)(tnet.tensor(x, requires_grad=True), tnet.tensor(n))
    assert not ours.requires_grad
    _against_float64(ours.memory.cpu(), getattr(torch.special, name)(torch.tensor(x, dtype=torch.float64),
                                                                      torch.tensor(n, dtype=torch.float64)), 1e-6)
    _same(getattr(tnet.special, name)(tnet.tensor(x[:8]), 3), getattr(torch.special, name)(torch.tensor(x[:8]), 3))
    _same(getattr(tnet.special, name)(0.5, n=tnet.tensor([0, 1, 2, 4])),
          getattr(torch.special, name)(0.5, n=torch.tensor([0, 1, 2, 4])))
    with pytest.raises(TypeError):
        getattr(tnet.special, name)(0.5, 2)
    assert getattr(tnet.special, name)(tnet.tensor([]), 2).shape == (0,)

@pytest.mark.parametrize("i", config_indices([pointwise.pointwise_kernel]))
def test_special_every_config(i, monkeypatch):
    """A Bessel function, zeta and a polynomial with pointwise_kernel's i-th tile config: the heaviest OPs it
    compiles (float64 series inside), each config of which the other tests leave to the tuner."""
    only_ith_config(monkeypatch, [pointwise.pointwise_kernel], i)
    test_special_bessel_and_airy_as_torch("bessel_y1")
    test_special_zeta_as_torch()
    test_special_orthogonal_polynomials_as_torch("legendre_polynomial_p")


def test_special_multigammaln_as_torch():
    a = np.array([1.6, 2.0, 3.5, 10.0], np.float32)
    for p in (1, 2, 4):
        ours, ref = tnet.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        _same(tnet.special.multigammaln(ours, p), torch.special.multigammaln(ref, p))
        tnet.special.multigammaln(ours, p).sum().backward()
        torch.special.multigammaln(ref, p).sum().backward()
        _same(ours.grad, ref.grad)
    _same(tnet.special.multigammaln(tnet.tensor([1.0, 2.0]), 4),
          torch.special.multigammaln(torch.tensor([1.0, 2.0]), 4))
    for lib in (tnet, torch):
        with pytest.raises(RuntimeError, match="greater than or equal to 1"):
            lib.special.multigammaln(lib.tensor([1.0, 2.0]), 0)


def _two(T):
    return lambda x, w: T.tanh(w @ x) * x.sum() + (x * x).sum()


def _scalar(T):
    return lambda x: (T.sin(x) * x).sum() + x[0] * x[1] * x[2]


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal(3).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32), \
        rng.standard_normal(2).astype(np.float32)


def test_vjp_jvp_and_jacobian_as_torch(data, ieee):
    a, b, v = data
    ours, theirs = tnet.autograd.functional, torch.autograd.functional
    A, B, At, Bt = tnet.tensor(a), tnet.tensor(b), torch.tensor(a), torch.tensor(b)
    _same(ours.vjp(_two(tnet), (A, B), tnet.tensor(v)), theirs.vjp(_two(torch), (At, Bt), torch.tensor(v)), 1e-4, 1e-5)
    _same(ours.jvp(_two(tnet), (A, B), (A, B)), theirs.jvp(_two(torch), (At, Bt), (At, Bt)), 1e-4, 1e-5)
    _same(ours.jacobian(_two(tnet), (A, B)), theirs.jacobian(_two(torch), (At, Bt)), 1e-4, 1e-5)
    _same(ours.jacobian(lambda x: tnet.tanh(x) * x, A), theirs.jacobian(lambda x: torch.tanh(x) * x, At), 1e-4, 1e-5)
    out, jac = ours.jacobian(lambda x: (x * 2, x.sum()), A), theirs.jacobian(lambda x: (x * 2, x.sum()), At)
    _same(out, jac)
    assert not ours.jacobian(lambda x: tnet.tanh(x), A).requires_grad


def test_jacobian_vectorize_and_forward_mode_as_torch(data, ieee):
    """vectorize=True and strategy="forward-mode" give the same Jacobian and Hessian (they choose torch's way of
    computing it); the combinations torch refuses raise its errors."""
    a, b, _ = data
    ours, theirs = tnet.autograd.functional, torch.autograd.functional
    A, B, At, Bt = tnet.tensor(a), tnet.tensor(b), torch.tensor(a), torch.tensor(b)
    for kwargs in ({"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"}):
        # (torch's forward mode gives a list where its reverse mode gives a tuple; tnet a tuple for both)
        want = tuple(theirs.jacobian(_two(torch), (At, Bt), **kwargs))
        _same(ours.jacobian(_two(tnet), (A, B), **kwargs), want, 1e-4, 1e-5)
    _same(ours.hessian(_scalar(tnet), A, vectorize=True, outer_jacobian_strategy="forward-mode"),
          theirs.hessian(_scalar(torch), At, vectorize=True, outer_jacobian_strategy="forward-mode"), 1e-4, 1e-5)
    for module, x in ((ours, A), (theirs, At)):
        with pytest.raises(NotImplementedError, match="only implemented for"):
            module.jacobian(lambda v: v * 2, x, strategy="forward-mode")
        with pytest.raises(NotImplementedError, match="create_graph=True"):
            module.jacobian(lambda v: v * 2, x, create_graph=True, vectorize=True, strategy="forward-mode")
        with pytest.raises(RuntimeError, match="strict=True"):
            module.jacobian(lambda v: v * 2, x, strict=True, vectorize=True)
        with pytest.raises(AssertionError, match="Expected strategy"):
            module.jacobian(lambda v: v * 2, x, strategy="sideways")


def test_forward_ad_as_torch(data, ieee):
    """forward_ad's duals: the JVP of a composite through two duals (one not reaching the output: its tangent adds
    nothing), a dual's own tangent object, None for a tensor without a dual and after the level, the primal's own
    gradient still there; torch's errors outside a level and for a tangent of another shape; no_grad refused."""
    a, b, v = data
    from torch.autograd import forward_ad as tfw
    from tnet.autograd import forward_ad as fw
    results = []
    for T, ad in ((tnet, fw), (torch, tfw)):
        x, w = T.tensor(a, requires_grad=True), T.tensor(b)
        with ad.dual_level():
            tx = T.tensor(v[:1].repeat(3))
            dx, dw = ad.make_dual(x, tx), ad.make_dual(w, T.ones(2, 3))
            assert ad.unpack_dual(dx).tangent is tx and ad.unpack_dual(T.ones(2)).tangent is None
            y = T.tanh(dw @ dx) * dx[:2].exp()
            ad.make_dual(T.ones(4), T.ones(4))  # made after y: no part of it
            primal, tangent = ad.unpack_dual(y)
            results.append((tangent, primal))
        assert ad.unpack_dual(y).tangent is None
        primal.sum().backward()
        results.append((x.grad,))
        with pytest.raises(RuntimeError, match="no level exists"):
            ad.make_dual(x, x)
        with ad.dual_level(), pytest.raises(RuntimeError, match="different size"):
            ad.make_dual(x, T.ones(2))
    for got, want in zip(results[:2], results[2:]):
        _same(got, want, 1e-5, 1e-6)
    with fw.dual_level(), tnet.no_grad(), pytest.raises(NotImplementedError, match="no_grad"):
        fw.make_dual(tnet.ones(2), tnet.ones(2))


def test_hessian_hvp_and_vhp_as_torch(data, ieee):
    a, b, _ = data
    ours, theirs = tnet.autograd.functional, torch.autograd.functional
    A, B, At, Bt = tnet.tensor(a), tnet.tensor(b), torch.tensor(a), torch.tensor(b)
    _same(ours.hessian(_scalar(tnet), A), theirs.hessian(_scalar(torch), At), 1e-4, 1e-5)
    _same(ours.hessian(lambda x, w: tnet.tanh(w @ x).sum(), (A, B)), theirs.hessian(lambda x, w: torch.tanh(w @ x).sum(), (At, Bt)),
          1e-4, 1e-5)
    _same(ours.hvp(_scalar(tnet), A, A), theirs.hvp(_scalar(torch), At, At), 1e-4, 1e-5)
    _same(ours.vhp(_scalar(tnet), A, A), theirs.vhp(_scalar(torch), At, At), 1e-4, 1e-5)
    with pytest.raises(RuntimeError, match="independent"):
        ours.vjp(lambda x, w: x.sum(), (A, B), strict=True)


def _maml_step(T, F, functional_call, model, x, y):
    """One MAML meta-step: an inner SGD step through functional_call with create_graph, the outer
    loss's gradients to the model's own parameters."""
    params = dict(model.named_parameters())
    loss = F.cross_entropy(functional_call(model, params, (T.tensor(x),)), T.tensor(y))
    grads = T.autograd.grad(loss, list(params.values()), create_graph=True)
    fast = {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads)}
    outer = F.cross_entropy(functional_call(model, fast, T.tensor(x)), T.tensor(y))
    outer.backward()
    return outer


def test_functional_call_maml_step_as_torch(ieee):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 3, 6, 6)).astype(np.float32), np.array([0, 1, 2, 1])

    def build(nn):
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 3))
    model, ref = build(tnet.nn), build(torch.nn)
    ref.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    got = _maml_step(tnet, tnet.nn.functional, tnet.func.functional_call, model, x, y)
    want = _maml_step(torch, torch.nn.functional, torch.func.functional_call, ref, x, y)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), r.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)
    assert all(isinstance(p, tnet.nn.Parameter) for p in model.parameters()) and len(list(model.parameters())) == 6


def test_functional_call_ties_strict_and_buffers():
    from tnet.nn.utils.stateless import functional_call
    lin = tnet.nn.Linear(2, 2, bias=False)
    model = tnet.nn.Sequential(lin, tnet.nn.ReLU(), lin)  # one weight under two names
    w = tnet.tensor(np.eye(2, dtype=np.float32) * 2)
    out = functional_call(model, {"0.weight": w}, tnet.ones(1, 2))
    assert out.tolist() == [[4.0, 4.0]] and model[0].weight is lin.weight and isinstance(lin.weight, tnet.nn.Parameter)
    with pytest.raises(RuntimeError, match="missing keys"):
        functional_call(model, {}, tnet.ones(1, 2), strict=True)
    bn = tnet.nn.BatchNorm1d(2).eval()
    out = functional_call(bn, {"running_mean": tnet.tensor([1.0, 1.0])}, (tnet.ones(3, 2),))
    assert np.allclose(out.numpy(), 0.0, atol=1e-3) and bn.running_mean.tolist() == [0.0, 0.0]


GAMMA_A = np.array([1e-3, 0.5, 1.0, 2.5, 7.0, 25.0, 25.0, 150.0, 300.0, 1e4, 1e4, 3.0, 0.0, 0.0, -1.0, 2.0, np.inf,
                    np.inf, np.nan, np.nan, 2.0, 0.2, 60.0, 1.0], np.float32)
GAMMA_X = np.array([0.3, 0.2, 1.0, 4.0, 2.0, 24.0, 40.0, 160.0, 290.0, 1.01e4, 9e3, 1e30, 1.0, 0.0, 1.0, -1.0, 1.0,
                    np.inf, 0.0, 1.0, np.inf, 1.05, 30.0, np.nan], np.float32)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_as_torch(name):
    """igamma and igammac against torch's float64 of the same fp32 inputs: each of torch's methods (the series of
    P and Q, the continued fraction, the uniform expansion near x = a for a > 20) and its edge values (NaN for
    a < 0, x < 0, a = x = 0, a = x = inf; the operand NaN that an edge overrules); x's gradient as torch's formula
    (NaN at a = 1, x = 0); a's raises in backward, as torch's."""
    ours, ref = getattr(tnet, name), getattr(torch, name)
    want = ref(torch.tensor(GAMMA_A, dtype=torch.float64), torch.tensor(GAMMA_X, dtype=torch.float64))
    _same(ours(tnet.tensor(GAMMA_A), tnet.tensor(GAMMA_X)), want.float(), rtol=3e-5, atol=2e-6)
    special = {"igamma": "gammainc", "igammac": "gammaincc"}[name]
    a, x = GAMMA_A[:12], GAMMA_X[:12]
    _same(getattr(tnet.special, special)(tnet.tensor(a), tnet.tensor(x)), ref(torch.tensor(a), torch.tensor(x)),
          rtol=3e-5, atol=2e-6)
    a, x = np.array([1.0, 0.5, 2.0, 3.0, 1.0], np.float32), np.array([0.0, 0.0, 1.5, 0.5, np.inf], np.float32)
    xs, rx = tnet.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours(tnet.tensor(a), xs).sum().backward()
    ref(torch.tensor(a), rx).sum().backward()
    _same(xs.grad, rx.grad)
    xs = tnet.tensor(x[2:4], requires_grad=True)  # create_graph: the gradient's own gradient, as torch's
    rx = torch.tensor(x[2:4], requires_grad=True)
    g, = tnet.autograd.grad(ours(tnet.tensor(a[2:4]), xs).sum(), xs, create_graph=True)
    h, = torch.autograd.grad(ref(torch.tensor(a[2:4]), rx).sum(), rx, create_graph=True)
    _same(tnet.autograd.grad(g.sum(), xs)[0], torch.autograd.grad(h.sum(), rx)[0])
    for lib in (tnet, torch):
        y = getattr(lib, name)(lib.tensor([2.0], requires_grad=True), lib.tensor([1.0]))
        with pytest.raises(NotImplementedError, match=f"the derivative for '{name}: input' is not implemented"):
            y.sum().backward()


def test_incomplete_gamma_methods_dtypes_and_refusals():
    a, x = np.array([0.5, 2.0, 3.0], np.float32), np.array([1.0, 1.5, 4.0], np.float32)
    for name in ("igamma", "igammac"):
        want = getattr(torch.tensor(a), name)(torch.tensor(x))
        _same(getattr(tnet.tensor(a), name)(tnet.tensor(x)), want)
        t = tnet.tensor(a)
        assert getattr(t, name + "_")(tnet.tensor(x)) is t
        _same(t, want)
        out = tnet.empty(3)
        assert getattr(tnet, name)(tnet.tensor(a), tnet.tensor(x), out=out) is out
        _same(out, want)
        for dt in (torch.float16, torch.bfloat16):  # fp32 inside, rounded to the operands' dtype
            got = getattr(tnet, name)(tnet.tensor(a).to(dt), tnet.tensor(x))
            ref = getattr(torch, name)(torch.tensor(a).to(dt), torch.tensor(x))
            assert got.dtype == ref.dtype == torch.float32
            got = getattr(tnet, name)(tnet.tensor(a).to(dt), tnet.tensor(x).to(dt))
            ref = getattr(torch, name)(torch.tensor(a).to(dt), torch.tensor(x).to(dt))
            assert got.dtype == ref.dtype == dt
            _same(got.float(), ref.float(), rtol=1e-2, atol=1e-3)
        _same(getattr(tnet, name)(tnet.tensor([1, 2]), tnet.tensor(x[:2])),  # an integer operand: promoted
              getattr(torch, name)(torch.tensor([1, 2]), torch.tensor(x[:2])))
        for lib in (tnet, torch):
            with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
                getattr(lib, name)(lib.tensor([1, 2]), lib.tensor([1, 2]))
            with pytest.raises(TypeError):
                getattr(lib, name)(lib.tensor(a), 2.0)
            with pytest.raises(TypeError):
                getattr(lib.tensor(a), name + "_")(2.0)
            with pytest.raises(RuntimeError, match="can't be cast"):
                getattr(lib.tensor([1, 2]), name + "_")(lib.tensor(x[:2]))
