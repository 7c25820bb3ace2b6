"""Padding (kernels/pad.py), as torch.nn.functional.pad."""
import torch

from ..kernels import pad as _pad
from ..kernels.launch import check, check_type
from ..tensor import Tensor, as_int, linear_graph, record
from .inputs import check_args, check_tensors


def pad(input, pad, mode="constant", value=None):
    """input padded on its last len(pad) // 2 dims, pad = (before, after) of the last dim, then of
    the one before...: mode 'constant' (value, 0 by default; negative pads crop), 'reflect',
    'replicate' or 'circular' (negative pads crop first, as torch's), on the last
    1 to 3 dims of a batched or unbatched input, as torch. The gradient sums the contributions of
    every output element an input element was copied to, in a fixed order. The output is dense in
    input's layout."""
    check_tensors("pad", input=input)
    if isinstance(pad, (tuple, list)):
        pad = type(pad)(as_int(p) for p in pad)
    check_type(isinstance(mode, str), lambda: f"pad(): argument 'mode' must be str, not {type(mode).__name__}")
    if value is not None:
        check_args("pad", "float", value=value)
    # torch takes a value of 0 (or None) beside any mode
    check(mode == "constant" or not value, f'pad: Padding mode "{mode}" doesn\'t take in value argument')
    return _padded(input, tuple(pad), mode, value)


def _padded(input, padding, mode, value):
    if mode == "circular" and any(p < 0 for p in padding):  # torch's: crop the negative sides, then pad the rest
        cropped = _padded(input, tuple(min(p, 0) for p in padding), "constant", None)
        return _padded(cropped, tuple(max(p, 0) for p in padding), mode, None)
    if mode != "constant" and any(p < 0 for p in padding):  # reflect, replicate: torch's windows read the whole
        # input (its sizes bound the pads), so the positive sides are padded first, then the negative ones cropped
        for j in range(len(padding) // 2):
            size, out = input.shape[-1 - j], input.shape[-1 - j] + padding[2 * j] + padding[2 * j + 1]
            check(out >= 1, lambda: f"input (W: {size}) is too small. Calculated output W: {out}")
        padded = _padded(input, tuple(max(p, 0) for p in padding), mode, None)
        return _padded(padded, tuple(min(p, 0) for p in padding), "constant", None)
    if input.dtype == torch.bool:  # padded as its bytes, value as True or False; torch has no bool reflect or replicate
        if mode in ("reflect", "replicate"):
            raise NotImplementedError(f'"{"reflection" if mode == "reflect" else "replication"}_pad" not implemented for '
                                      f"'Bool'")
        return Tensor(_pad.pad(input.memory.view(torch.uint8), padding, mode, float(bool(value))).view(torch.bool))
    y = _pad.pad(input.memory, padding, mode, 0.0 if value is None else value)
    shape = input.shape
    backward = lambda g: (_pad.pad_backward(g, shape, padding, mode),)
    # named as torch's aten op for the mode (its node: ConstantPadNdBackward0, ReflectionPad2DBackward0, ...)
    dims = len(padding) // 2
    op = {"constant": "constant_pad_nd", "reflect": f"reflection_pad{dims}d", "replicate": f"replication_pad{dims}d",
          "circular": "circular_pad"}[mode]
    return record(op, y, (input,), backward,
                  graph=linear_graph("pad", backward, lambda h: _pad.pad(h, padding, mode, 0.0)))
