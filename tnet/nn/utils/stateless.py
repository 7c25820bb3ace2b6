"""torch.nn.utils.stateless.functional_call (torch.func.functional_call's older home)."""
from ...tensor import Tensor


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the named tensors (a dict, or a tuple of dicts) in place of its
    parameters and buffers for this one call, restored after it, as torch.func.functional_call:
    gradients flow to the tensors given (MAML's inner steps, per-sample tricks). tie_weights: a
    tensor that the module holds under two names is replaced under both when one is given. strict:
    every parameter and buffer must be given, and only those (RuntimeError otherwise)."""
    given = {}
    for d in (parameters_and_buffers if isinstance(parameters_and_buffers, (tuple, list)) else (parameters_and_buffers,)):
        for name, value in d.items():
            if name in given:
                raise ValueError(f"functional_call got multiple values for keys ['{name}'], which are not allowed")
            given[name] = value
    held = dict(module.named_parameters(remove_duplicate=False))
    held.update(module.named_buffers(remove_duplicate=False))
    if strict:
        missing, unexpected = sorted(set(held) - set(given)), sorted(set(given) - set(held))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in functional_call: missing keys {missing}, unexpected keys {unexpected}")
    if tie_weights:  # the other names of a tensor given under one
        by_id = {id(held[name]): value for name, value in given.items() if name in held}
        given = {**{name: by_id[id(t)] for name, t in held.items() if id(t) in by_id}, **given}
    saved = []
    try:
        for name, value in given.items():
            owner, _, attr = name.rpartition(".")
            sub = module.get_submodule(owner)
            saved.append((sub, attr, vars(sub).get(attr, _ABSENT)))
            object.__setattr__(sub, attr, value)  # not registered: a plain attribute for this call
        args = () if args is None else (args,) if isinstance(args, Tensor) or not isinstance(args, tuple) else args
        return module(*args, **(kwargs or {}))
    finally:
        for sub, attr, old in reversed(saved):
            if old is _ABSENT:
                object.__delattr__(sub, attr)
            else:
                object.__setattr__(sub, attr, old)


_ABSENT = object()
