"""`triton.autotune` that keeps only the first config under the interpreter, which
cannot benchmark (see TRITON_NOTES.md): so put the config cheapest to interpret first."""
import triton

from .._device import INTERPRET


def autotune(configs, key, **kwargs):
    return triton.autotune(configs[:1] if INTERPRET else configs, key=key, **kwargs)


def check(cond, msg):
    """Raise the ValueError every launcher uses for bad shape, dtype or device."""
    if not cond:
        raise ValueError(msg)
