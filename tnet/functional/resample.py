"""Resampling images, as torch's (kernels/resample.py): interpolate (nearest, nearest-exact,
linear, bilinear, bicubic), affine_grid and grid_sample. Inputs of any strides; outputs in the
input's layout (NCHW or channels-last)."""
import math

import numpy as np

from ..kernels import resample as _rs
from ..kernels.launch import check
from ..tensor import in_layout, record, tensor
from .copy import index_select
from .inputs import check_tensors

_LINEAR = {"linear": 3, "bilinear": 4, "bicubic": 4}  # mode: the input's number of dims


def _resample_axis(x, axis, n, m, mode, align_corners, scale_factor):
    """x resampled along `axis` from n to m points (kernels/resample.py's tables); the backward
    runs the same kernel over the transposed table."""
    (idx, w), (idx_t, w_t) = _rs.axis_tables(n, m, mode, align_corners, scale_factor, x.device)
    return record("interpolate", _rs.resample_axis(x.memory, axis, idx, w), (x,),
                  lambda g: (in_layout(_rs.resample_axis(g, axis, idx_t, w_t), x.memory),))


def _output_geometry(input, size, scale_factor, recompute_scale_factor):
    """(output sizes, the scale factors the kernels use: None where computed from the sizes), as
    torch's interpolate works them out."""
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}.")
            sizes = [int(s) for s in size]
        else:
            sizes = [int(size)] * dim
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        scales = [None] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        sizes = [math.floor(float(n) * s) for n, s in zip(input.shape[2:], scales)]
        if recompute_scale_factor:
            scales = [None] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    check(all(m > 0 for m in sizes),
          lambda: f"interpolate: the output size must be positive, got {sizes} from input {list(input.shape[2:])}")
    return sizes, scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize [N, C, L] or [N, C, H, W] to `size` or by `scale_factor`, as torch's. 'nearest' and
    'nearest-exact' (3-D or 4-D) pick input points (index_select along each axis, its gradient
    sums back); 'linear' (3-D), 'bilinear' and 'bicubic' (4-D; A = -0.75, border clamped) weigh
    them, one axis after the other, with torch's source index (align_corners, the scale factor
    given or computed from the sizes: recompute_scale_factor). antialias=True is not implemented."""
    check_tensors("interpolate", input=input)
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    else:
        align_corners = bool(align_corners)
    if antialias:
        if not (mode in ("bilinear", "bicubic") and input.ndim == 4):
            raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor "
                             "as input")
        raise NotImplementedError("interpolate: antialias=True is not implemented")
    if mode in _LINEAR and input.ndim in (3, 4) and input.ndim != _LINEAR[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR[mode]}D input")
    if mode not in ("nearest", "nearest-exact", *_LINEAR) or input.ndim not in (3, 4):
        raise NotImplementedError(f"interpolate: mode {mode!r} on a {input.ndim}-D input is not implemented (nearest, "
                                  f"nearest-exact: 3-D or 4-D; linear: 3-D; bilinear, bicubic: 4-D)")
    sizes, scales = _output_geometry(input, size, scale_factor, recompute_scale_factor)
    out = input
    for axis, (n, m, s) in enumerate(zip(input.shape[2:], sizes, scales)):
        if mode.startswith("nearest"):
            out = index_select(out, axis + 2, tensor(_nearest(n, m, s, mode == "nearest-exact")))
        else:
            out = _resample_axis(out, axis + 2, n, m, "cubic" if mode == "bicubic" else "linear", align_corners, s)
    return out


def _nearest(n, m, scale_factor, exact):
    """torch's nearest source index of each of m outputs from n inputs: min(floor(i * scale), n - 1),
    or floor((i + 0.5) * scale) for nearest-exact, scale in float32; nearest copies where m == n
    and halves where m == 2n, as torch's nearest_idx."""
    if not exact and m in (n, 2 * n):
        return np.arange(m, dtype=np.int64) * n // m
    step = _rs.source_scale(n, m, False, scale_factor)
    i = np.arange(m, dtype=np.float32)
    return np.minimum(np.floor((i + np.float32(0.5)) * step if exact else i * step), n - 1).astype(np.int64)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """torch's deprecated F.upsample: interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(input, size=None, scale_factor=None):
    """torch's deprecated F.upsample_bilinear: bilinear with align_corners=True."""
    return interpolate(input, size, scale_factor, "bilinear", align_corners=True)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, "nearest")



def affine_grid(theta, size, align_corners=None):
    raise NotImplementedError


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    raise NotImplementedError
