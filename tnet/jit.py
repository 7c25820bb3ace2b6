"""torch.jit's calls that training scripts make, for tnet: tnet's kernels are Triton-compiled
already, so script and trace return what they are given (no TorchScript: jit.save is not here)."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    return func


def ignore(drop=False, **kwargs):
    return drop if callable(drop) else (lambda fn: fn)


unused = ignore
