"""torch.compiler's calls that model files make (transformers' is_torchdynamo_compiling, a
`@torch.compiler.disable` on a helper), for tnet: nothing is ever traced by dynamo, so
is_compiling() is False and the decorators return the function."""


def is_compiling():
    return False


is_dynamo_compiling = is_exporting = is_compiling


def disable(fn=None, recursive=True, *, reason=None):
    """The function itself (or, without one, the identity decorator): tnet runs everything eagerly."""
    return (lambda f: f) if fn is None else fn


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def reset():
    """Nothing to forget: tnet keeps no dynamo caches (Triton's kernel caches stay)."""


def compile(*args, **kwargs):
    """torch.compiler.compile is torch.compile."""
    from . import compile as compile_
    return compile_(*args, **kwargs)


def cudagraph_mark_step_begin():
    """Nothing to mark: tnet captures CUDA graphs only through tnet.graph.capture."""
