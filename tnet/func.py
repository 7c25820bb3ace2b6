"""torch.func's transforms, for the tutorials' idioms: functional_call, grad, grad_and_value, vjp,
jacrev, jvp, jacfwd, hessian, vmap and stack_module_state, with torch's arguments.

Differences from torch: vmap runs the function once per index of the mapped dims and stacks the
outputs (torch batches the ops instead: the same values, slower; random ops draw anew for each
index, as randomness="different"); the transforms compose through tnet's tape (grad of grad
needs ops with double backward, see tnet.autograd.grad); jacrev takes one backward per output
element, and so does jacfwd (the same Jacobian); jvp runs autograd.forward_ad's duals (reverse mode twice) and
its results are off the tape (not differentiable by an enclosing transform)."""
from .autograd import forward_ad
from .autograd import grad as _autograd_grad
from .factory import zeros
from .functional import stack
from .nn import BATCH_NORMS
from .nn.utils.stateless import functional_call
from .tensor import Tensor, enable_grad

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]


def _leaves(tree):
    """The leaves of a pytree (dicts, lists and tuples of anything), in order."""
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in _leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in _leaves(v)]
    return [tree]


def _rebuild(tree, leaves):
    """tree's structure with the next leaves of the iterator `leaves` in place of its own."""
    if isinstance(tree, dict):
        return {k: _rebuild(v, leaves) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a namedtuple
        return type(tree)(*[_rebuild(v, leaves) for v in tree])
    if isinstance(tree, (list, tuple)):
        return type(tree)(_rebuild(v, leaves) for v in tree)
    return next(leaves)


def _map(fn, tree):
    return _rebuild(tree, iter([fn(leaf) for leaf in _leaves(tree)]))


def _differentiable(tree, made):
    """tree with each tensor an input to differentiate at: a new leaf that requires grad (its id added
    to `made`), or the tensor itself where it requires grad already (an outer transform, or the
    caller's tape, differentiates through this one: the gradients then go on the tape too)."""
    def prepare(t):
        if not isinstance(t, Tensor) or t.requires_grad:
            return t
        leaf = t.detach().requires_grad_()
        made.add(id(leaf))
        return leaf
    return _map(prepare, tree)


def _reaches_other_leaves(outputs, inner):
    """Whether the tape of the output tensors reaches a tensor that requires grad other than the leaves
    whose ids are in inner: a closed-over parameter or an argument not differentiated at. A transform's
    result then stays on the tape (create_graph), as torch.func's does, so that a loss of it trains
    that tensor (a PINN's residual, a Jacobian penalty)."""
    todo, seen = [], set()
    for t in outputs:
        if isinstance(t, Tensor) and t.requires_grad:
            if t.grad_fn is None:
                if id(t) not in inner:
                    return True
            else:
                todo.append(t.grad_fn)
    while todo:
        for node, _ in todo.pop().next_functions:
            if node is None or node in seen:
                continue
            if node.variable is not None:
                if id(node.variable) not in inner:
                    return True
            else:
                seen.add(node)
                todo.append(node)
    return False


def _argnums(argnums, n, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or not all(isinstance(i, int) and -n <= i < n for i in nums):
        raise RuntimeError(f"{name}: Got argnums={argnums} but only {n} positional inputs")
    return tuple(i % n for i in nums)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function of func's arguments giving (the gradient of func's scalar output with respect to
    the arguments argnums (an int, or a tuple of them; each a tensor or a pytree of them), func's
    output), as torch.func.grad_and_value; ((gradient, (output, aux)) where has_aux."""
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args), "grad_and_value(f)(*args)")
        made = set()
        with enable_grad():
            args = list(args)
            for i in nums:
                args[i] = _differentiable(args[i], made)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) "
                                       "if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                                   f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            inputs = [t for i in nums for t in _leaves(args[i]) if isinstance(t, Tensor)]
            nested = any(id(t) not in made for t in inputs) or _reaches_other_leaves([out], made)
            grads = iter(_autograd_grad(out, inputs, create_graph=nested, materialize_grads=True) if inputs else ())
            found = [_rebuild(args[i], (next(grads) if isinstance(t, Tensor) else t for t in _leaves(args[i])))
                     for i in nums]
        result = found[0] if isinstance(argnums, int) else tuple(found)
        value = out if nested else out.detach()
        return (result, (value, aux)) if has_aux else (result, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: grad_and_value's gradient alone ((gradient, aux) where has_aux)."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return wrapper


def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (func(*primals), vjp_fn[, aux]), vjp_fn(cotangents) giving the products of the
    cotangents (shaped as the output) with func's Jacobian, one per primal, as a tuple."""
    with enable_grad():
        primals = [_differentiable(p, set()) for p in primals]
        out = func(*primals)
        aux = None
        if has_aux:
            out, aux = out
    inputs = [t for p in primals for t in _leaves(p) if isinstance(t, Tensor)]

    def vjp_fn(cotangents):
        outputs = [t for t in _leaves(out) if isinstance(t, Tensor)]
        grads = iter(_autograd_grad(outputs, inputs, [c for c in _leaves(cotangents)], retain_graph=True,
                                    materialize_grads=True))
        return tuple(_rebuild(p, (next(grads) if isinstance(t, Tensor) else t for t in _leaves(p))) for p in primals)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """torch.func.jacrev: the Jacobian of func's output (a tensor or a tuple of them) with respect to
    the arguments argnums (an int or a tuple; each a tensor or a pytree of them), each shaped
    output's shape + the input's, one backward per output element. The result stays on the tape
    where the output reaches a tensor that requires grad besides the inputs (see grad_and_value).
    chunk_size is accepted and changes nothing."""
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args), "jacrev(f)(*args)")
        made = set()
        with enable_grad():
            full = list(args)
            for i in nums:
                full[i] = _differentiable(full[i], made)
            out = func(*full, **kwargs)
            aux = None
            if has_aux:
                out, aux = out
            inputs = [t for i in nums for t in _leaves(full[i]) if isinstance(t, Tensor)]
            outputs = _leaves(out)
            nested = any(id(t) not in made for t in inputs) or _reaches_other_leaves(outputs, made)

            def rows(o):  # the Jacobian of output o: one tensor per input, o.shape + the input's shape
                flat = o.reshape(-1)
                parts = [_autograd_grad(flat[k], inputs, retain_graph=True, create_graph=nested,
                                        allow_unused=True, materialize_grads=True) for k in range(flat.shape[0])]
                return [(stack([p[n] for p in parts]) if parts else zeros((0,) + tuple(x.shape), dtype=x.dtype))
                        .reshape(tuple(o.shape) + tuple(x.shape)) for n, x in enumerate(inputs)]

            def per_input(o):
                found = iter(r if nested else r.detach() for r in rows(o))
                built = [_rebuild(full[i], (next(found) if isinstance(t, Tensor) else t for t in _leaves(full[i])))
                         for i in nums]
                return built[0] if isinstance(argnums, int) else tuple(built)
            result = _rebuild(out, iter([per_input(o) for o in outputs]))
        return (result, aux) if has_aux else result
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """torch.func.jacfwd: the Jacobian that jacrev gives (output's shape + the input's), computed as jacrev does:
    tnet's forward mode is reverse mode twice, so one backward per output element is the shorter way to the same
    numbers. randomness is accepted and changes nothing (no vmap batches the draws)."""
    return jacrev(func, argnums, has_aux=has_aux)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """torch.func.jvp: (func(*primals), its Jacobian-vector product along tangents[, aux]); primals and tangents
    tuples (of tensors or pytrees of them) of one structure. func runs on autograd.forward_ad's duals; the outputs
    come back detached, an output that no primal reaches with a zero tangent, as torch's."""
    for name, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, tuple):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected {name} to be a tuple. E.g. it should be valid "
                               f"to call f(*primals).")
    leaves, directions = _leaves(primals), _leaves(tangents)
    if len(leaves) != len(directions):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure.")
    with enable_grad(), forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(leaves, directions)]
        out = func(*_rebuild(primals, iter(duals)))
        aux = None
        if has_aux:
            out, aux = out
        products = [forward_ad.unpack_dual(o).tangent for o in _leaves(out)]
    products = [zeros(o.shape, dtype=o.dtype) if t is None else t for o, t in zip(_leaves(out), products)]
    result = (_map(lambda o: o.detach(), out), _rebuild(out, iter(products)))
    return result + (aux,) if has_aux else result


def hessian(func, argnums=0):
    """torch.func.hessian: the Jacobian of the Jacobian (jacrev of jacrev: torch's jacfwd of jacrev, the same
    numbers)."""
    return jacrev(jacrev(func, argnums), argnums)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.func.vmap, by a loop: func runs once for each index b of the mapped dims (in_dims: an int
    or None for every argument, or one per argument, each an int, None or a pytree of them) on the
    arguments with that dim taken at b, and each output tensor stacks the results at out_dims."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    def wrapper(*args, **kwargs):
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure "
                             f"of `inputs`. in_dims has {len(dims)} elements, inputs has {len(args)}")
        per_arg = []
        for arg, d in zip(args, dims):
            leaves = _leaves(arg)
            leaf_dims = [d] * len(leaves) if d is None or isinstance(d, int) else _leaves(d)
            if len(leaf_dims) != len(leaves):
                raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                                 "structure of `inputs`")
            per_arg.append([None if dim is None or not isinstance(leaf, Tensor) else dim % max(leaf.dim(), 1)
                            for leaf, dim in zip(leaves, leaf_dims)])
        sizes = {leaf.shape[dim] for arg, ds in zip(args, per_arg) for leaf, dim in zip(_leaves(arg), ds)
                 if dim is not None}
        if not sizes:
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): at least one of the inputs must be a Tensor "
                             "with a mapped dim (in_dims not None)")
        if len(sizes) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sorted(sizes)} for the mapped dimension")
        outs = []
        for b in range(sizes.pop()):
            at_b = [_rebuild(arg, iter([leaf if dim is None else leaf.select(dim, b)
                                        for leaf, dim in zip(_leaves(arg), ds)])) for arg, ds in zip(args, per_arg)]
            outs.append(func(*at_b, **kwargs))
        leaves = [_leaves(o) for o in outs]
        o_dims = [out_dims] * len(leaves[0]) if isinstance(out_dims, int) else _leaves(out_dims)
        for leaf in leaves[0]:
            if not isinstance(leaf, Tensor):
                raise ValueError(f"vmap: `{func}` must only return Tensors, got type {type(leaf)}")
        stacked = [stack([per_b[n] for per_b in leaves], dim=o_dims[n]) for n in range(len(leaves[0]))]
        return _rebuild(outs[0], iter(stacked))
    return wrapper


def stack_module_state(models):
    """(params, buffers) of models of one structure, each name's tensors stacked along a new first dim,
    as torch.func.stack_module_state: params are new leaves (requiring grad where all of the models'
    do), buffers new tensors."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    names = [n for n, _ in models[0].named_parameters()]
    params = {n: stack([dict(m.named_parameters())[n] for m in models]).detach().requires_grad_(
        all(dict(m.named_parameters())[n].requires_grad for m in models)) for n in names}
    buffers = {n: stack([dict(m.named_buffers())[n] for m in models]).detach() for n, _ in models[0].named_buffers()}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """torch.func's patch for batch norm under vmap (the per-sample-gradient and ensembling tutorials): every
    _BatchNorm in root that tracks running statistics gets running_mean, running_var and num_batches_tracked set
    to None and track_running_stats False, in place, so it normalises with each batch's statistics; root back."""
    for module in root.modules():
        if isinstance(module, BATCH_NORMS) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
