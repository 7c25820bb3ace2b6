"""Resampling images, as torch's (kernels/resample.py): interpolate (nearest, nearest-exact,
linear, bilinear, bicubic), affine_grid and grid_sample. Inputs of any strides; outputs in the
input's layout (NCHW or channels-last)."""
import math

import numpy as np

from ..kernels import resample as _rs
from ..kernels.launch import check, check_type
from ..tensor import in_layout, linear_graph, named, record, tape_mark, tensor
from .copy import gather, index_select, reshape
from .inputs import check_args, check_tensors
from .pointwise import add, mul, where
from .pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

_LINEAR = {"linear": 3, "bilinear": 4, "bicubic": 4, "lanczos": 4, "trilinear": 5}  # mode: the input's number of dims


def _resample_axis(x, axis, n, m, mode, align_corners, scale_factor):
    """x resampled along `axis` from n to m points (kernels/resample.py's tables); the backward
    runs the same kernel over the transposed table."""
    (idx, w), (idx_t, w_t) = _rs.axis_tables(n, m, mode, align_corners, scale_factor, x.device)
    backward = lambda g: (in_layout(_rs.resample_axis(g, axis, idx_t, w_t), x.memory),)
    return record("interpolate", _rs.resample_axis(x.memory, axis, idx, w), (x,), backward,
                  graph=linear_graph("interpolate", backward, lambda h: _rs.resample_axis(h, axis, idx, w)))


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
            sizes = list(size)
        else:
            sizes = [size] * dim
        check_args("interpolate", "int", **{f"size[{k}]": s for k, s in enumerate(sizes)})  # int(1.5) would pass
        sizes = [int(s) for s in sizes]
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        scales = [None] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}.")
            scales = list(scale_factor)
        else:
            scales = [scale_factor] * dim
        check_args("interpolate", "float", **{f"scale_factor[{k}]": s for k, s in enumerate(scales)})
        scales = [float(s) for s in scales]
        sizes = [math.floor(float(n) * s) for n, s in zip(input.shape[2:], scales)]
        if recompute_scale_factor:
            scales = [None] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    return sizes, scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize [N, C, L], [N, C, H, W] or [N, C, D, H, W] to `size` or by `scale_factor`, as torch's. 'nearest'
    and 'nearest-exact' pick input points (index_select along each axis, its gradient sums back); 'area' is
    adaptive average pooling to the size, as torch's; 'linear' (3-D), 'bilinear' and 'bicubic' (4-D; A = -0.75,
    border clamped) and 'trilinear' (5-D, the 4-D kernel over N * C volumes) weigh
    them, one axis after the other, with torch's source index (align_corners, the scale factor
    given or computed from the sizes: recompute_scale_factor). Two passes for 4-D (an intermediate
    of one resized axis), torch's one; fp32 sums in another order. antialias=True (bilinear,
    bicubic and torch 2.13's lanczos, 4-D; lanczos needs it): torch's antialiased taps
    (kernels/resample.py), a filter widened by the scale where an axis shrinks. Torch's lanczos
    runs on its CPU alone; tnet's on any device."""
    # torch's order: align_corners, then the sizes, antialias, and last the mode against the input's
    # dims, any mode of another name or type (mode=[1]) torch's NotImplementedError
    check_tensors("interpolate", input=input)
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    sizes, scales = _output_geometry(input, size, scale_factor, recompute_scale_factor)
    if antialias:
        if not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
            raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                             "4-D tensor as input")
    needs = _LINEAR.get(mode) if isinstance(mode, str) else None
    if input.ndim in (3, 4, 5) and needs not in (None, input.ndim) and mode not in ("bicubic", "lanczos"):
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needs}D input")
    if input.ndim not in (3, 4, 5) or not (mode in ("nearest", "nearest-exact", "area") or needs == input.ndim):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if mode == "area":  # torch's: an adaptive average pooling to the output size (0 gives an empty result)
        pool = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}[input.ndim]
        return pool(input, sizes[0] if input.ndim == 3 else tuple(sizes))
    if mode not in ("nearest", "nearest-exact"):  # torch's parser of its upsample op: True or False
        if align_corners is not None:
            check_args(f"interpolate (mode {mode!r})", "bool", align_corners=align_corners)
        align_corners = bool(align_corners)
    if mode == "lanczos":  # torch 2.13's, antialiased only
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    check(all(m > 0 for m in sizes),
          lambda: f"interpolate: the output size must be positive, got {sizes} from input {list(input.shape[2:])}")
    out, mark = input, tape_mark()
    # the axis that shrinks most first: the pass between the two then moves the fewest elements
    for axis in sorted(range(input.ndim - 2), key=lambda a: sizes[a] / input.shape[a + 2]):
        n, m, s = input.shape[axis + 2], sizes[axis], scales[axis]
        if mode.startswith("nearest"):
            out = index_select(out, axis + 2, tensor(_nearest(n, m, s, mode == "nearest-exact")))
        elif out.ndim == 5:  # trilinear: the kernel's 4 dims, N and C merged
            shape = out.shape
            flat = _resample_axis(reshape(out, (-1, *shape[2:])), axis + 1, n, m, "linear", align_corners, s)
            out = reshape(flat, (*shape[:2], *flat.shape[1:]))
        else:
            taps = {"bicubic": "cubic", "lanczos": "lanczos"}.get(mode, "linear")
            out = _resample_axis(out, axis + 2, n, m, "antialiased " + taps if antialias else taps, align_corners, s)
    if mode == "lanczos":
        return out
    # the node torch's upsample op gives (UpsampleNearest2DBackward0, UpsampleBilinear2DAaBackward0)
    op = f"upsample_{mode.replace('-', '_')}{input.ndim - 2}d" + ("_aa" if antialias else "")
    return named(op, mark, out)


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
    """The sampling grid [N, H, W, 2] of 2-D affine maps theta [N, 2, 3] over an output of size
    [N, C, H, W], as torch's: grid[n, h, w] = theta[n] @ (x_w, y_h, 1), x and y spread over [-1, 1]
    (align_corners=True: the corner pixels' centres; False, the default: their outer edges);
    3-D maps theta [N, 3, 4] over [N, C, D, H, W] give [N, D, H, W, 3] of (x_w, y_h, z_d, 1).
    Element-wise ops on theta's columns (exact fp32; theta's gradient sums back)."""
    if align_corners is not None:
        check_args("affine_grid", "bool", align_corners=align_corners)
    check_tensors("affine_grid", theta=theta)
    if not theta.memory.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    k = len(size) - 2  # the spatial dims: theta [N, k, k + 1]
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. Got "
                         f"{list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    check(theta.shape[0] == size[0], lambda: f"affine_grid: theta's batch {theta.shape[0]} does not match size "
                                             f"{size}")
    N, spatial = size[0], size[2:]
    mark = tape_mark()  # torch's node: its one op's (AffineGridGeneratorBackward0)
    column = lambda j: reshape(theta[:, :, j], (N, *[1] * k, k))  # noqa: E731
    out = None
    for j, n in enumerate(reversed(spatial)):  # x over the last dim (W), then y over H, z over D
        shape = [1] * (k + 2)
        shape[k - j] = n
        term = mul(column(j), tensor(_linspace(n, align_corners).reshape(shape), dtype=theta.dtype))
        out = term if out is None else add(out, term)
    return named("affine_grid_generator", mark, add(out, column(k)))


def _linspace(n, align_corners):
    """torch's linspace_from_neg_one: n points over [-1, 1], scaled by (n - 1) / n unless
    align_corners; a lone point is 0. In fp32 rounded as torch's: its linspace steps from -1 up to
    the middle point and from 1 down past it, each point one fused multiply-add of the fp32 step;
    the scale is a product then a quotient. An identity theta puts grid_sample's points on pixel
    centres, where an ulp decides bilinear's gradient (see grid_sample)."""
    if n <= 1:
        return np.zeros(n, np.float32)
    step = np.float64(np.float32(2) / np.float32(n - 1))
    i = np.arange(n)
    r = np.where(i < n // 2, -1 + step * i, 1 - step * (n - 1 - i)).astype(np.float32)  # exact in float64
    return r if align_corners else r * np.float32(n - 1) / np.float32(n)


_PADDING = {"zeros": _rs.ZEROS, "border": _rs.BORDER, "reflection": _rs.REFLECTION}


def _cubic_weights(t, A=-0.75):
    """The cubic convolution weights of the 4 taps at -1, 0, 1, 2 from a point's fraction t, torch's
    get_cubic_upsample_coefficients (A = -0.75)."""
    near = lambda x: ((A + 2) * x - (A + 3)) * x * x + 1  # noqa: E731  |x| <= 1
    far = lambda x: ((A * x - 5 * A) * x + 8 * A) * x - 4 * A  # noqa: E731  1 < |x| < 2
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _reflect(c, twice_low, twice_high):
    """torch's reflect_coordinates: c folded into [twice_low / 2, twice_high / 2] by reflections at its ends."""
    if twice_low == twice_high:
        return c * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = (c - low).abs()
    extra, flips = c.fmod(span), (c / span).floor()
    return where(flips.fmod(2) == 0, extra + low, span - extra + low)


def _tap(c, size, padding_mode, align):
    """A tap's integer-valued coordinate c (no gradient) as torch's get_value_bounded reads it: reflected (then
    clipped) or clipped by the padding mode, and a float mask of the taps that read a value (zeros: inside only).
    A NaN coordinate (from an infinite or NaN grid point) reads index 0: its weights are NaN already, so the
    output is NaN there, as torch's."""
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align else _reflect(c, -1, 2 * size - 1)
    inside = ((c >= 0) & (c <= size - 1)).float()
    return c.nan_to_num(0.0).clamp(0, size - 1), inside if padding_mode == "zeros" else None


def _unnormalise(v, size, align):
    """A grid coordinate in [-1, 1] as a pixel coordinate, as torch's grid_sampler_unnormalize."""
    return (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2


def _volumetric_grid_sample(input, grid, mode, padding_mode, align):
    """grid_sample of [N, C, D, H, W] at grid [N, OD, OH, OW, 3] ((x, y, z) over W, H, D), 'bilinear' (trilinear)
    or 'nearest', composed as torch's 3-D kernel computes it: each coordinate unnormalised and padded (border
    clipped, reflection reflected then clipped), then the 8 corners around it weighted by their distances (or the
    nearest point, ties to even), a corner outside the volume reading 0; gathers of the corners' values, so that
    the input's gradient scatters back and the grid's comes through the weights (nearest: none), as torch's."""
    N, C, D, H, W = input.shape
    OD, OH, OW = grid.shape[1:4]
    coords = []
    for k, size in enumerate((W, H, D)):
        c = _unnormalise(grid[..., k], size, align)
        if padding_mode == "reflection":
            c = _reflect(c, 0, 2 * (size - 1)) if align else _reflect(c, -1, 2 * size - 1)
        coords.append(c if padding_mode == "zeros" else c.clamp(0, size - 1))
    if mode == "nearest":
        corners = [[(c.detach().round(), None)] for c in coords]
        ones = where(tensor(True), 1.0, coords[0])  # the grid's gradient: zeros, as torch's (not None)
    else:
        corners = []
        for c in coords:
            low = c.detach().floor()
            corners.append([(low, 1 - (c - low)), (low + 1, c - low)])
    volumes = reshape(input, (N, C, D * H * W))
    out = None
    for (cz, wz) in corners[2]:
        z, in_z = _tap(cz, D, "zeros", align)
        for (cy, wy) in corners[1]:
            y, in_y = _tap(cy, H, "zeros", align)
            for (cx, wx) in corners[0]:
                x, in_x = _tap(cx, W, "zeros", align)
                index = reshape(((z * H + y) * W + x).long(), (N, 1, -1)).expand(N, C, OD * OH * OW)
                weight = in_x * in_y * in_z
                weight = weight * ones if wx is None else weight * wx * wy * wz
                term = reshape(gather(volumes, 2, index), (N, C, OD, OH, OW)) * weight.unsqueeze(1)
                out = term if out is None else out + term
    return out


def _bicubic_grid_sample(input, grid, padding_mode, align):
    """grid_sample's bicubic mode composed as torch's kernel computes it: the grid unnormalised (no padding), the
    4 x 4 taps around each point's floor, each tap's coordinates padded (_tap), cubic convolution weights of the
    fractions (_cubic_weights); a gather of each tap's values, so that the input's gradient scatters back to where
    they were read and the grid's comes through the weights, as torch's backward."""
    N, C, H, W = input.shape
    OH, OW = grid.shape[1:3]
    ix, iy = _unnormalise(grid[..., 0], W, align), _unnormalise(grid[..., 1], H, align)
    ix0, iy0 = ix.detach().floor(), iy.detach().floor()
    wx, wy = _cubic_weights(ix - ix0), _cubic_weights(iy - iy0)
    planes = reshape(input, (N, C, H * W))
    out = None
    for j in range(4):
        cy, in_y = _tap(iy0 + (j - 1), H, padding_mode, align)
        for i in range(4):
            cx, in_x = _tap(ix0 + (i - 1), W, padding_mode, align)
            index = reshape((cy * W + cx).long(), (N, 1, OH * OW)).expand(N, C, OH * OW)
            weight = wx[i] * wy[j] if in_x is None else wx[i] * wy[j] * in_x * in_y
            term = reshape(gather(planes, 2, index), (N, C, OH, OW)) * weight.unsqueeze(1)
            out = term if out is None else out + term
    return out


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input [N, C, H, W] sampled at grid [N, OH, OW, 2] ((x, y) in [-1, 1] over the input's
    width and height) -> [N, C, OH, OW], as torch's: mode 'bilinear' or 'nearest' (ties to even),
    padding_mode 'zeros', 'border' or 'reflection', align_corners as affine_grid's (None ->
    False). Gradients to input (atomic adds: on the GPU in no fixed order, as torch's CUDA) and,
    for bilinear, to grid (nearest: zero, as torch's); bicubic composed (_bicubic_grid_sample), and so are 5-D
    inputs (_volumetric_grid_sample)."""
    check_tensors("grid_sample", input=input, grid=grid)
    check_type(align_corners is None or isinstance(align_corners, bool),
               lambda: f"grid_sampler(): argument 'align_corners' must be bool, not {type(align_corners).__name__}")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if not isinstance(padding_mode, str) or padding_mode not in _PADDING:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.ndim == 5 and grid.ndim == 5 and mode != "bicubic":
        check(input.shape[0] == grid.shape[0] and grid.shape[-1] == 3 and input.dtype == grid.dtype,
              lambda: f"grid_sampler(): expected a grid [N, D, H, W, 3] of the input's batch and dtype, but got input "
                      f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)} ({grid.dtype})")
        return _volumetric_grid_sample(input, grid, mode, padding_mode, bool(align_corners))
    check(mode != "bicubic" or input.ndim == 4, "grid_sampler(): bicubic interpolation only supports 4D input")
    check(input.ndim == 4 and grid.ndim == 4,
          lambda: f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got input "
                  f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    check(input.shape[0] == grid.shape[0],
          lambda: f"grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
                  f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    check(grid.shape[-1] == 2,
          lambda: f"grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes "
                  f"{list(grid.shape)}")
    check(input.dtype == grid.dtype and input.memory.is_floating_point(),
          lambda: f"grid_sampler(): expected input and grid to have the same floating dtype, but input has "
                  f"{input.dtype} and grid has {grid.dtype}")
    if mode == "bicubic":
        return _bicubic_grid_sample(input, grid, padding_mode, bool(align_corners))
    bilinear, pad, align = mode == "bilinear", _PADDING[padding_mode], bool(align_corners)
    x, g = input.memory, grid.memory
    y = _rs.grid_sample(x, g, bilinear, pad, align)

    def backward(dy):
        dx, dgrid = _rs.grid_sample_backward(dy, x, g, bilinear, pad, align, input.requires_grad,
                                             grid.requires_grad)
        return (None if dx is None else in_layout(dx, x)), dgrid
    return record("grid_sampler_2d", y, (input, grid), backward, saved=(x, g))  # torch's node: GridSampler2DBackward0
