"""torch.testing's assert_close for tnet Tensors, compared on the host (numpy), with torch's default
tolerances per dtype, its checks (shape, dtype, NaN) and its AssertionError message's first lines."""
import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from .tensor import Tensor

__all__ = ["assert_allclose", "assert_close"]

# torch's defaults: (rtol, atol) by dtype
_TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
               torch.float64: (1e-7, 1e-7)}


def _host(x):
    """(a float64 or int numpy array, torch dtype) of a tnet Tensor, torch tensor, numpy array or number."""
    if isinstance(x, Tensor):
        x = x.memory
    if isinstance(x, torch.Tensor):
        dtype = x.dtype
        x = x.detach().cpu()
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy(), dtype
    array = np.asarray(x)
    return array, torch.from_numpy(np.empty(0, array.dtype)).dtype


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless actual and expected (tensors, numbers, or sequences and mappings of
    them, alike) are close: |actual - expected| <= atol + rtol * |expected| elementwise, with torch's
    defaults for the dtype where rtol and atol are not given (both or neither, as torch's)."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {'rtol' if rtol is None else 'atol'}.")
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            raise AssertionError(f"The keys of the mappings do not match: {sorted(map(str, actual))} != "
                                 f"{sorted(map(str, expected))}")
        for key in actual:
            assert_close(actual[key], expected[key], rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype,
                         msg=msg)
        return
    if (isinstance(actual, Sequence) and not isinstance(actual, str) and isinstance(expected, Sequence)
            and not isinstance(expected, str) and not isinstance(actual, np.ndarray)):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype, msg=msg)
        return
    (a, a_dtype), (e, e_dtype) = _host(actual), _host(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: {torch.Size(a.shape)} != "
                                    f"{torch.Size(e.shape)}.")
    if check_dtype and a_dtype != e_dtype and isinstance(actual, (Tensor, torch.Tensor)):
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {a_dtype} != {e_dtype}.")
    if rtol is None:
        rtol = max(_TOLERANCES.get(d, (0.0, 0.0))[0] for d in (a_dtype, e_dtype))
        atol = max(_TOLERANCES.get(d, (0.0, 0.0))[1] for d in (a_dtype, e_dtype))
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.all():
        return
    bad = ~close
    diff = np.abs(a64 - e64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / np.abs(e64)
    worst = int(np.nanargmax(np.where(bad, diff, -np.inf))) if a.size else 0
    at = np.unravel_index(worst, a.shape) if a.shape else ()
    kind = "Tensor-likes" if isinstance(actual, (Tensor, torch.Tensor)) else "Scalars"
    text = (f"{kind} are not close!\n\nMismatched elements: {int(bad.sum())} / {a.size} "
            f"({100 * bad.sum() / max(a.size, 1):.1f}%)\nGreatest absolute difference: {diff.reshape(-1)[worst]} at index "
            f"{tuple(int(i) for i in at)} (up to {atol} allowed)\nGreatest relative difference: "
            f"{np.nanmax(np.where(bad, rel, -math.inf))} (up to {rtol} allowed)")
    raise AssertionError(msg or text)


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """torch.testing.assert_allclose (deprecated there): assert_close without the dtype check, NaN equal."""
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)
