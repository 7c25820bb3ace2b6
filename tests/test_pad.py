"""Padding (kernels/pad.py, F.pad) against torch in float64: each mode on the last 1 to 3 dims,
NCHW, channels-last and strided inputs, negative constant pads, 16-bit storage, the padding
layers, torch's errors, and every tile config."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet import nn
from tnet.kernels import pad
from tnet.kernels.launch import BLOCK_CONFIGS, is_channels_last
from helpers import CONFIG_DTYPES, LOW, check_op, only_config, pair, tol_for

CASES = [((2, 3, 5, 7), (1, 2, 3, 1), "reflect"), ((2, 3, 5, 7), (3, 2, 0, 4), "replicate"),
         ((2, 3, 5, 7), (2, 1, 4, 5), "circular"), ((2, 3, 5, 7), (1, -2, 3, 1), "constant"),
         ((3, 5, 7), (2, 3), "reflect"), ((2, 3, 4, 5, 6), (1, 2, 2, 1, 3, 2), "replicate"),
         ((2, 3, 4, 5), (1, 1, 2, 2, 1, 0), "constant"), ((4, 9), (3, 8), "replicate"), ((2, 4, 9), (4, 4), "circular"),
         ((2, 3, 5, 7), (-1, 2, 1, -2), "circular"), ((2, 3, 5, 7), (-1, 2, 1, -2), "reflect"),
         ((2, 3, 5), (1, -2), "replicate")]  # negative pads: cropped first, as torch's (fuzz seeds 10, 13, 14)


@pytest.mark.parametrize("shape,padding,mode", CASES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_pad(rng, shape, padding, mode, channels_last, dtype=torch.float32):
    """Values exactly; gradients summed over every copy of an element (reflected, replicated,
    wrapped), or cropped back (constant); the output keeps the input's layout."""
    channels_last = channels_last and len(shape) == 4
    x = pair(rng, *shape, dtype=dtype, channels_last=channels_last)
    value = 0.5 if mode == "constant" else None
    out = check_op(lambda t: F.pad(t, padding, mode, value), lambda t: tF.pad(t, padding, mode, value), [x],
                   tol_for(dtype, 1e-6), rng)
    assert is_channels_last(out.memory) == channels_last and out.dtype == dtype


def test_pad_strided_input_and_layers(rng):
    x = pair(rng, 2, 6, 5, 7, channels_last=True)
    check_op(lambda t: F.pad(t[:, 1:4], (1, 1, 2, 2), "reflect"), lambda t: tF.pad(t[:, 1:4], (1, 1, 2, 2), "reflect"),
             [x], 1e-6, rng)
    for ours, theirs in [(nn.ZeroPad2d((1, 0, 2, 1)), torch.nn.ZeroPad2d((1, 0, 2, 1))),
                         (nn.ConstantPad2d(2, 3.5), torch.nn.ConstantPad2d(2, 3.5)),
                         (nn.ReflectionPad2d(2), torch.nn.ReflectionPad2d(2)),
                         (nn.ReplicationPad2d((3, 1, 0, 2)), torch.nn.ReplicationPad2d((3, 1, 0, 2)))]:
        x = pair(rng, 2, 3, 5, 7)
        check_op(ours, theirs, [x], 1e-6, rng)
    assert repr(nn.ReflectionPad2d(2)) == "ReflectionPad2d((2, 2, 2, 2))"


def test_pad_errors():
    x = tnet.ones(2, 3, 4)
    cases = [(lambda: F.pad(x, (1, 2, 3)), "divisible by 2"),
             (lambda: F.pad(x, (4, 0), "reflect"), "less than the corresponding input dimension"),
             (lambda: F.pad(x, (5, 0), "circular"), "wrapping around more than once"),
             (lambda: F.pad(x, (1, 1), "reflect", 2.0), "doesn't take in value argument"),
             (lambda: F.pad(x, (1, 1, 1, 1, 1, 1), "replicate"), "not supported for 3D input"),
             (lambda: F.pad(x, (1, 1), "wrap"), "mode must be one of"),
             (lambda: F.pad(x, (-3, -2)), "negative")]
    for fn, message in cases:
        with pytest.raises(ValueError, match=message):
            fn()
    assert F.pad(tnet.ones(0, 3), (1, 1), value=2.0).shape == (0, 5)
    assert F.pad(tnet.ones(0, 1, 5, 7), (0, 2, 1, 0), "reflect").shape == (0, 1, 6, 9)  # a batch of 0: unchecked
    assert np.array_equal(F.pad(tnet.tensor([[1, 2]]), (1, 0)).numpy(), [[0, 1, 2]])  # integers, constant


@pytest.mark.parametrize("dtype", LOW)
def test_pad_16_bit(rng, dtype):
    for shape, padding, mode in CASES[:4]:
        test_pad(rng, shape, padding, mode, True, dtype)


@pytest.mark.parametrize("i", range(len(BLOCK_CONFIGS)))
def test_pad_every_config(rng, i, monkeypatch):
    for kernel in (pad.pad_kernel, pad.pad_fold_kernel):
        only_config(monkeypatch, kernel, BLOCK_CONFIGS[i])
    for dtype in CONFIG_DTYPES:
        for shape, padding, mode in CASES[:4]:
            test_pad(rng, shape, padding, mode, True, dtype)


@pytest.mark.parametrize("args, kwargs", [(((1, 2),), {}), (((1, 2),), {"value": 2.0}), (((-1, 1),), {"value": True}),
                                          (((1, 1),), {"mode": "circular"}), (((1, 1),), {"mode": "reflect"})])
def test_pad_of_a_bool_tensor_as_torch(args, kwargs):
    """torch pads bool tensors (constant and circular modes; a value as True or False); tnet refused the dtype."""
    x = [[[True, False, True]]]
    try:
        want = tF.pad(torch.tensor(x), *args, **kwargs)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            F.pad(tnet.tensor(x), *args, **kwargs)
        return
    got = F.pad(tnet.tensor(x), *args, **kwargs)
    assert got.dtype == torch.bool and got.tolist() == want.tolist()
