"""torch.utils.checkpoint's calls for tnet: the function runs as it is. tnet does not recompute
activations in backward, so these save no memory; the results and gradients are the same."""


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """functions (a Sequential or a list of modules) applied in turn to input."""
    for function in (functions.children() if hasattr(functions, "children") else functions):
        input = function(input)
    return input
