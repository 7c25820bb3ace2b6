"""torch.autograd.Function in tnet: custom ops (Shake-Shake, a straight-through estimator, gradient
reversal, a multi-output op, torch 2's setup_context form, in-place mark_dirty) give torch's
values and gradients, and the errors torch gives for a bad backward; create_graph through them (the double-backward
tutorial's Functions)."""
import gc
import importlib
import weakref

import numpy as np
import pytest
import torch

import tnet
from helpers import MATMUL_TOL, TOL


def functions(T):
    """The same custom Functions written against T (torch or tnet)."""
    class ShakeShake(T.autograd.Function):
        @staticmethod
        def forward(ctx, x1, x2, alpha):
            ctx.save_for_backward(x1, x2)
            ctx.alpha = alpha
            return alpha * x1 + (1 - alpha) * x2

        @staticmethod
        def backward(ctx, g):
            x1, x2 = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, True, False)
            return 0.7 * g * x2, 0.3 * g * x1, None

    class RoundSTE(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return T.round(x * 4) / 4

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            return g

    class Reverse(T.autograd.Function):
        @staticmethod
        def forward(x, scale):
            return x.view_as(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.scale = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return -ctx.scale * g, None

    class TwoOut(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x, x.sum(1), x.argmax(1)

        @staticmethod
        def backward(ctx, ga, gb, gi):
            x, = ctx.saved_tensors
            return 2 * x * ga + gb.unsqueeze(1)

    class Broadcast(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):  # a gradient of a broadcast shape: summed to the input's, as torch's
            return g.unsqueeze(0).expand(3, *g.shape)

    return ShakeShake, RoundSTE, Reverse, TwoOut, Broadcast


def run(T, a, b):
    ShakeShake, RoundSTE, Reverse, TwoOut, Broadcast = functions(T)
    x1 = T.tensor(a, dtype=T.float32, requires_grad=True)
    x2 = T.tensor(b, dtype=T.float32, requires_grad=True)
    y = ShakeShake.apply(x1, x2, 0.25)
    y = Reverse.apply(RoundSTE.apply(y), 0.5)
    sq, rows, idx = TwoOut.apply(y.reshape(4, -1))
    assert not idx.requires_grad and sq.requires_grad
    loss = (sq * 3).sum() + (rows * rows).sum() + Broadcast.apply(x2).sum()
    loss.backward()
    return [t.detach().numpy() for t in (loss, y, x1.grad, x2.grad, idx)]


def test_custom_functions_match_torch():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 3, 2, 2)), rng.standard_normal((4, 3, 2, 2))
    for got, want in zip(run(tnet, a, b), run(torch, a, b)):
        np.testing.assert_allclose(got, want, rtol=TOL["ieee"], atol=1e-5)


def test_function_output_unused_and_grad_fn():
    ShakeShake, _, _, TwoOut, _ = functions(tnet)
    x = tnet.ones(2, 3, requires_grad=True)
    sq, rows, _ = TwoOut.apply(x)
    rows.sum().backward()  # sq got no gradient: backward sees zeros for it (materialize_grads)
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    assert sq.grad_fn.name() == "TwoOutBackward" and x.grad_fn is None
    with tnet.no_grad():
        assert not ShakeShake.apply(x, x, 0.5).requires_grad


def test_grad_fn_classes_are_named_as_torchs():
    """type(y.grad_fn).__name__ along next_functions (torchviz's labels), and isinstance of autograd.graph.Node."""
    names = []
    for lib in (tnet, torch):
        x = lib.ones(2, 3, requires_grad=True)
        node, seen = ((x * 2).exp().sum()).grad_fn, []
        while node is not None:
            assert isinstance(node, lib.autograd.graph.Node)
            seen.append(type(node).__name__)
            node = node.next_functions[0][0] if node.next_functions else None
        names.append(seen)
    assert names[0] == names[1] == ["SumBackward0", "ExpBackward0", "MulBackward0", "AccumulateGrad"]


def test_next_functions_keep_the_python_number_operands_slot():
    """The autograd tutorial's print(d.grad_fn.next_functions) for d = 2 * sin(a) + 1: torch's add, sub, mul, div and
    where wrap a Python number as a tensor operand, a (None, 0) edge in its place (after the tensor's for the reflected
    1 + a and 2 * a, which torch runs as a.add(1) and a.mul(2))."""
    def edges(lib):
        a = lib.linspace(0., 1., steps=5, requires_grad=True)
        b = lib.ones(5)
        m = a > 0.5
        out = []
        for y in (2 * lib.sin(a) + 1, a - 1, a / 2, a.div(2, rounding_mode="floor"), a * b, a * a, 1 - a, a ** 2,
                  1 + a, lib.where(m, a, 0.), lib.where(m, 0., a), lib.where(m, a, b), a.clamp(min=0)):
            out.append([None if n is None else type(n).__name__ for n, _ in y.grad_fn.next_functions])
        return out
    assert edges(tnet) == edges(torch)
    assert edges(tnet)[0] == ["MulBackward0", None]


def graph_of(node):
    """node's class name and its edges, (graph_of(next node) or None, index), down to the leaves."""
    if node is None:
        return None
    return type(node).__name__, tuple((graph_of(n), i) for n, i in node.next_functions)


def same_graphs_and_grads(build):
    """build(lib) -> (outputs, leaves), run with tnet and torch: each output's graph_of(grad_fn), before and after
    the backward that frees the graph (torch's freed nodes keep their classes and edges), and the leaves' gradients
    of the outputs' summed sums are torch's."""
    found = []
    for lib in (tnet, torch):
        outs, leaves = build(lib)
        graphs = [graph_of(y.grad_fn) for y in outs]
        sum(y.sum() for y in outs).backward()
        found.append((graphs + [graph_of(y.grad_fn) for y in outs], [np.asarray(x.grad.tolist()) for x in leaves]))
    (graphs, grads), (want_graphs, want_grads) = found
    for got, want in zip(graphs, want_graphs):
        assert got == want
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got, want, rtol=MATMUL_TOL, atol=MATMUL_TOL)


def test_masked_fill_nodes_as_torchs():
    """masked_fill with a 0-d tensor value is torch's MaskedFillBackward1, edges (input, value); with a number
    MaskedFillBackward0; x[mask] = v torch's IndexPutBackward0, a number's edge (None, 0)."""
    mask = np.random.RandomState(0).rand(3, 5) > 0.5

    def build(lib):
        a = lib.tensor(np.arange(15.).reshape(3, 5), dtype=lib.float32, requires_grad=True)
        v = lib.tensor(2.5, requires_grad=True)
        m = lib.tensor(mask)
        x, y = a * 1, a * 2
        x.masked_fill_(m, v)
        y[m] = 3.0
        z = a * 3
        z[m] = v
        return [a.masked_fill(m, v), a.masked_fill(m, lib.tensor(1.5)), a.masked_fill(m, 2.0), x, y, z], [a, v]
    same_graphs_and_grads(build)


def test_lerp_nodes_as_torchs():
    """lerp with a tensor weight (0-d too, with or without a gradient) is torch's LerpBackward1, with a number
    LerpBackward0; lerp_ the same."""
    def build(lib):
        a = lib.tensor(np.linspace(-1, 1, 15).reshape(3, 5), dtype=lib.float32, requires_grad=True)
        b = lib.tensor(np.linspace(2, 0, 15).reshape(3, 5), dtype=lib.float32, requires_grad=True)
        w = lib.tensor(np.linspace(0, 1, 5), dtype=lib.float32, requires_grad=True)
        x = a * 1
        x.lerp_(b, w)
        return [lib.lerp(a, b, w), a.lerp(b, lib.tensor(0.25)), lib.lerp(a, b, 0.5), x], [a, b, w]
    same_graphs_and_grads(build)


def test_clamp_with_one_tensor_bound_keeps_the_others_edge():
    """torch's ClampBackward0 has three edges: an absent bound's is (None, 0); clamp_min and clamp_max of a tensor
    (ClampMinBackward1, ClampMaxBackward1) have two."""
    def build(lib):
        a = lib.tensor(np.linspace(-1, 1, 15).reshape(3, 5), dtype=lib.float32, requires_grad=True)
        lo = lib.tensor(np.linspace(-0.5, 0, 5), dtype=lib.float32, requires_grad=True)
        hi = lib.tensor(np.linspace(0.7, 0.2, 5), dtype=lib.float32, requires_grad=True)
        x = a * 1
        x.clamp_(max=hi)
        return [lib.clamp(a, min=lo), a.clamp(max=hi), lib.clamp(a, lo, hi), lib.clamp_min(a, lo), a.clamp_max(hi),
                x], [a, lo, hi]
    same_graphs_and_grads(build)


def test_vector_products_nodes_as_torchs():
    """matmul with a vector operand, mv, dot and vdot: torch's MvBackward0, DotBackward0 and VdotBackward0 over the
    operands themselves, a vector @ matrix's SqueezeBackward4 over an mm of the unsqueezed row, a batch's products
    an mv of it folded."""
    rng = np.random.RandomState(1)
    values = {name: rng.randn(*shape) for name, shape in
              (("m", (3, 5)), ("v", (5,)), ("w", (3,)), ("b", (2, 3, 5)))}

    def build(lib):
        m, v, w, b = (lib.tensor(x, dtype=lib.float32, requires_grad=True) for x in values.values())
        return [lib.mv(m, v), m @ v, w @ m, v @ v, lib.matmul(b, v), w @ b, lib.dot(v, v * 2), lib.vdot(w, w)], \
            [m, v, w, b]
    same_graphs_and_grads(build)


def test_vector_products_double_backward():
    """create_graph through mv, 1-D @ 1-D, vector @ matrix and dot: the second derivatives are torch's."""
    rng = np.random.RandomState(2)
    values = [rng.randn(*shape) for shape in ((3, 5), (5,), (3,))]
    found = []
    for lib in (tnet, torch):
        m, v, w = (lib.tensor(x, dtype=lib.float32, requires_grad=True) for x in values)
        y = (lib.mv(m, v) ** 2).sum() + (v @ v) ** 2 + ((w @ m) ** 2).sum() + lib.dot(w, w) ** 2
        gm, gv, gw = lib.autograd.grad(y, (m, v, w), create_graph=True)
        (gm.sum() + (gv * gv).sum() + gw.sum()).backward()
        found.append([np.asarray(x.grad.tolist()) for x in (m, v, w)])
    for got, want in zip(*found):
        np.testing.assert_allclose(got, want, rtol=MATMUL_TOL, atol=MATMUL_TOL)


def test_added_dims_nodes_as_torchs():
    """atleast_2d/3d, vstack and dstack add a 1-D or 2-D tensor's dims as torch's UnsqueezeBackward0 nodes, a 0-d
    tensor's as a ViewBackward0 (torch's reshape)."""
    def build(lib):
        s = lib.tensor(1.5, requires_grad=True)
        v = lib.tensor([1., -2., 3.], requires_grad=True)
        m = lib.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
        return [lib.atleast_2d(v), lib.atleast_3d(v), lib.atleast_3d(m), lib.atleast_2d(s), lib.atleast_3d(s),
                lib.atleast_1d(s), lib.vstack([v, v]), lib.dstack([m, m]), lib.hstack([s, v]),
                lib.column_stack([v, m.t()])], [s, v, m]
    same_graphs_and_grads(build)


def test_floor_divide_node_as_torchs():
    """floor_divide (//) has torch's node, NotImplemented (torch has no derivative of it), with its edges."""
    def nodes(lib):
        a = lib.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
        return [(type(y.grad_fn).__name__, y.grad_fn.name(), graph_of(y.grad_fn))
                for y in (lib.floor_divide(a, 2), a // a, 7 // a)]
    assert nodes(tnet) == nodes(torch)
    assert nodes(tnet)[0][:2] == ("NotImplemented", "torch::autograd::NotImplemented")


def test_freed_nodes_keep_their_names_and_edges():
    """After a backward that frees the graph, torch's nodes keep their classes and next_functions: an mm's and a
    reshape's (named by their inputs) and a relu's, printed or walked after loss.backward(). A reshape that cannot
    view is torch's UnsafeViewBackward0 over a CloneBackward0."""
    def build(lib):
        a = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=lib.float32, requires_grad=True)
        b = lib.tensor(np.linspace(2, 0, 12).reshape(3, 4), dtype=lib.float32, requires_grad=True)
        y = a @ b
        return [y, y.relu(), a.reshape(6) * 2, (b @ b.t()).sum(0), a.t().reshape(6), b.t().reshape(2, 6)], [a, b]
    same_graphs_and_grads(build)


def test_freed_nodes_hold_no_views_input():
    """The edges a freed node keeps hold no activation: a view's entry (which keeps its input, its backward
    reading shapes only) is kept as a node of its name and edges, so a loss held after its backward does not keep
    the view's input memory alive."""
    a = tnet.ones(4, 3, requires_grad=True)
    h = a * 2
    kept = weakref.ref(h.memory)
    loss = (h.reshape(12) * 3).sum()
    del h
    loss.backward()
    gc.collect()
    assert kept() is None
    names, node = [], loss.grad_fn
    while node is not None:
        names.append(type(node).__name__)
        node = node.next_functions[0][0] if node.next_functions else None
    assert names == ["SumBackward0", "MulBackward0", "ViewBackward0", "MulBackward0", "AccumulateGrad"]


def test_linear_nodes_as_torchs():
    """linear's node is torch's addmm(b, x, w.t()) or mm(x, w.t()): the bias's edge first, the weight's through a
    TBackward0 (None for a frozen weight); [..., in] and [in] inputs fold to rows as torch's (a vector without a
    bias through an unsqueeze)."""
    rng = np.random.RandomState(3)
    values = [rng.randn(*shape) for shape in ((4, 3), (2, 4, 3), (3,), (2, 3), (2,))]

    def build(lib):
        x2, x3, x1, w, b = (lib.tensor(v, dtype=lib.float32, requires_grad=True) for v in values)
        F = lib.nn.functional
        return [F.linear(x2, w, b), F.linear(x2, w), F.linear(x3, w, b), F.linear(x3, w), F.linear(x1, w, b),
                F.linear(x1, w), F.linear(x2, w.detach(), b)], [x2, x3, x1, w, b]
    same_graphs_and_grads(build)


def test_function_mark_dirty_rebases_the_input():
    class Double(tnet.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    w = tnet.ones(3, requires_grad=True)
    y = w * 3
    out = Double.apply(y)
    assert out is y
    (y * y).sum().backward()  # d/dw (6w)^2 = 72 w
    np.testing.assert_allclose(w.grad.numpy(), np.full(3, 72.0))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        Double.apply(tnet.ones(2, requires_grad=True))


def test_inplace_function_of_old_quantisers_as_torchs():
    """torch.autograd.function.InplaceFunction (old quantisers subclass it): a Function whose instances take
    inplace=; its static forward marks the input dirty when it writes it, and the straight-through backward
    passes the gradient, as torch's."""
    results = []
    for lib in (tnet, torch):
        InplaceFunction = importlib.import_module(lib.__name__ + ".autograd.function").InplaceFunction

        class Round(InplaceFunction):
            @staticmethod
            def forward(ctx, input, inplace=False):
                if inplace:
                    ctx.mark_dirty(input)
                    output = input
                else:
                    output = input.clone()
                return output.mul_(4).round_().div_(4)

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output, None

        assert Round(inplace=True).inplace and not Round().inplace
        x = lib.tensor([0.1, 0.52, -0.3, 0.9], requires_grad=True)
        y = x * 2
        out = Round.apply(y, True)
        (out * lib.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        results.append((out is y, out.tolist(), Round.apply(x.detach() * 2).tolist(), x.grad.tolist()))
    assert results[0] == results[1], results


def test_function_bad_backward_raises_torchs_errors():
    class Few(tnet.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    class Wrong(tnet.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g.sum(0)

    x = tnet.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Few.apply(x, x).sum().backward()
    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        Wrong.apply(x).sum().backward()


def test_function_saved_tensor_written_in_place_raises():
    ShakeShake = functions(tnet)[0]
    x1, x2 = tnet.ones(2, requires_grad=True), tnet.ones(2, requires_grad=True)
    a = x1 * 1
    y = ShakeShake.apply(a, x2, 0.5)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_custom_fwd_and_bwd_keep_the_forwards_autocast_state():
    class Scale(tnet.autograd.Function):
        @staticmethod
        @tnet.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
        def forward(ctx, x):
            ctx.dtype = x.dtype
            return x * 2

        @staticmethod
        @tnet.amp.custom_bwd(device_type="cuda")
        def backward(ctx, g):
            seen.append(tnet.get_autocast_dtype())
            return g * 2

    seen = []
    x = tnet.ones(3, requires_grad=True)
    with tnet.autocast("cuda", dtype=torch.bfloat16):
        y = Scale.apply(x.to(torch.bfloat16))
    assert y.dtype == torch.float32
    y.sum().backward()
    assert seen == [torch.bfloat16]
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2.0))


def double_backward_functions(T):
    """pytorch/tutorials' custom_function_double_backward_tutorial: Exp saving its output, Sinh saving its input
    and the intermediates it saves returned as outputs, and a once_differentiable Cube."""
    class Exp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = T.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_out):
            result, = ctx.saved_tensors
            return grad_out * result

    class Sinh(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx = T.exp(x)
            expnegx = T.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            grad_input += _grad_out_exp * expx
            grad_input -= _grad_out_negexp * expnegx
            return grad_input

    def sinh(x):
        return Sinh.apply(x)[0]

    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 3 * x ** 2
    return Exp.apply, sinh, Cube.apply


def test_create_graph_through_custom_functions():
    """create_graph through a custom Function records its backward's ops, as torch's: second derivatives of the
    tutorial's Exp (its saved output differentiated through the Function again) and Sinh, and forward_ad's
    tangent through one; create_graph through a once_differentiable backward raises (torch's raises later, once
    the first-order gradients are differentiated)."""
    x = np.array([0.3, -1.2, 0.8], dtype=np.float32)
    results = []
    for T in (tnet, torch):
        exp, sinh, _ = double_backward_functions(T)
        for fn in (exp, sinh):
            xt = T.tensor(x, requires_grad=True)
            (g,) = T.autograd.grad((fn(xt) * fn(xt)).sum(), xt, create_graph=True)
            (gg,) = T.autograd.grad(g.sum(), xt)
            results.append((g.detach().numpy(), gg.numpy()))
    for ours, theirs in zip(results[:2], results[2:]):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=TOL["ieee"])
    exp, _, cube = double_backward_functions(tnet)
    with tnet.autograd.forward_ad.dual_level():
        dual = tnet.autograd.forward_ad.make_dual(tnet.tensor(x), tnet.ones(3))
        tangent = tnet.autograd.forward_ad.unpack_dual(exp(dual)).tangent
    np.testing.assert_allclose(tangent.numpy(), np.exp(x), rtol=1e-6)
    xt = tnet.tensor(x, requires_grad=True)
    with pytest.raises(NotImplementedError, match="create_graph through CubeBackward"):
        tnet.autograd.grad(cube(xt).sum(), xt, create_graph=True)
