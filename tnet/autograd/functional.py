"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp of a function of tensors,
built on autograd.grad (reverse mode; jvp by the double-vjp trick, so it needs create_graph through
the function's ops). jacobian and hessian take one backward per output element (vectorize and the
forward-mode strategies are not supported)."""
from ..factory import zeros
from ..tensor import Tensor, enable_grad
from . import grad


def _as_tuple(v):
    return (v,) if isinstance(v, Tensor) else tuple(v)


def _inputs(inputs, create_graph):
    """Fresh leaves holding the inputs' values (views of them under create_graph, so that the result
    stays on the tape of the inputs), each requiring grad, as torch's."""
    return tuple((x.view_as(x) if create_graph and x.requires_grad else x.detach()).requires_grad_(True)
                 for x in _as_tuple(inputs))


def _grads(outputs, inputs, seeds, create_graph, strict):
    """autograd.grad of outputs over inputs, zeros for an input no path reaches (strict: an error)."""
    found = grad(outputs, inputs, seeds, retain_graph=True, create_graph=create_graph, allow_unused=True)
    if strict and any(g is None for g in found):
        raise RuntimeError("The output of the user-provided function is independent of one of its inputs: "
                           "this is not allowed in strict mode.")
    return tuple(zeros(x.shape, dtype=x.dtype) if g is None else g for x, g in zip(inputs, found))


def _out(values, create_graph, single):
    values = tuple(v if create_graph or v is None else v.detach() for v in values)
    return values[0] if single else values


def _call(func, xs):
    with enable_grad():
        out = func(*xs)
    single = isinstance(out, Tensor)
    return _as_tuple(out), single


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T J): the vector-Jacobian product, v of the outputs' shapes (None for a
    one-element output)."""
    xs = _inputs(inputs, create_graph)
    outs, single_out = _call(func, xs)
    seeds = None if v is None else _as_tuple(v)
    products = _grads(outs, xs, seeds, create_graph, strict)
    return _out(outs, create_graph, single_out), _out(products, create_graph, isinstance(inputs, Tensor))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J v): the Jacobian-vector product, v of the inputs' shapes (None for a
    one-element input), as the gradient of u -> u^T J along v."""
    xs = _inputs(inputs, create_graph)
    outs, single_out = _call(func, xs)
    us = tuple(zeros(o.shape, dtype=o.dtype).requires_grad_(True) for o in outs)
    with enable_grad():
        vjps = _grads(outs, xs, us, True, strict)
    seeds = None if v is None else _as_tuple(v)
    products = _grads(vjps, us, seeds, create_graph, strict)
    return _out(outs, create_graph, single_out), _out(products, create_graph, single_out)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: for one input and one output a tensor of shape output.shape +
    input.shape, else tuples (of tuples) of them, as torch's. vectorize and strategy choose how torch computes
    the same Jacobian (vmap, forward mode); tnet takes each output element's gradient alike, after torch's checks
    of the combinations it refuses."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` '
                                  'are not supported together (yet). Please either set `create_graph=False` or '
                                  '`strategy="reverse-mode"`.')
    if strict and (vectorize or strategy == "forward-mode"):
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` (or "
                           '`strategy="forward-mode"`) are not supported together. Please either set `strict=False` '
                           "or `vectorize=False`.")
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                  "implemented for `vectorize=True`.")
    xs = _inputs(inputs, create_graph)
    outs, single_out = _call(func, xs)
    rows = []
    for out in outs:
        flat = out.reshape(-1)
        parts = [_grads((flat[k],), xs, None, create_graph, strict) for k in range(flat.shape[0])]
        rows.append(tuple(_stack([p[i] for p in parts], out.shape, x.shape, x.dtype)
                          for i, x in enumerate(xs)))
    rows = [_out(r, create_graph, isinstance(inputs, Tensor)) for r in rows]
    return rows[0] if single_out else tuple(rows)


def _stack(parts, out_shape, in_shape, dtype):
    from ..functional import stack  # the functional package imports autograd: a late import
    if not parts:
        return zeros(tuple(out_shape) + tuple(in_shape), dtype=dtype)
    return stack(parts).reshape(tuple(out_shape) + tuple(in_shape))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function with one one-element output: the Jacobian of its gradient."""
    single = isinstance(inputs, Tensor)

    def gradient(*xs):
        out, _ = _call(func, xs)
        g = _grads(out, xs, None, True, strict)
        return g[0] if single else g
    return jacobian(gradient, inputs, create_graph, strict, vectorize, outer_jacobian_strategy)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T H) for a function with one one-element output."""
    xs = _inputs(inputs, create_graph)
    outs, single_out = _call(func, xs)
    with enable_grad():
        gs = _grads(outs, xs, None, True, strict)
    seeds = None if v is None else _as_tuple(v)
    products = _grads(gs, xs, seeds, create_graph, strict)
    return _out(outs, create_graph, single_out), _out(products, create_graph, isinstance(inputs, Tensor))


hvp = vhp  # H is symmetric: H v = (v^T H)^T, as torch computes it by the double-vjp
