"""BatchNorm's training mode against float64, beside torch fp32's own error (statistics, output, dx,
dweight, dbias; odd sizes, channels-last, 16-bit input), and NaN/inf input against torch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F


@pytest.mark.parametrize("shift", [0.0, 1000.0, 1e-3])
def test_batch_stats_as_accurate_as_torch(shift):
    x = torch.tensor(np.random.default_rng(0).standard_normal((2048, 64)) + shift, dtype=torch.float32)
    ref = x.double()
    yref = (ref - ref.mean(0)) / torch.sqrt(ref.var(0, unbiased=False) + 1e-5)
    err = lambda y: ((y.double() - yref).norm() / yref.norm()).item()
    ours = err(F.batch_norm(tnet.tensor(x.numpy()), None, None, training=True).data.cpu())
    theirs = err(tF.batch_norm(x, None, None, training=True))
    assert ours <= 4 * theirs + 1e-7, f"shift {shift}: relative error {ours:.2e}, torch fp32 {theirs:.2e}"


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_inf_like_torch(bad):
    x = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    x[2, 1] = bad
    y = F.batch_norm(tnet.tensor(x), None, None, training=True).data.cpu()
    ref = tF.batch_norm(torch.tensor(x), None, None, training=True)
    assert torch.equal(torch.isnan(y), torch.isnan(ref)), f"NaN pattern {y} vs torch {ref}"


def _bn_grads(x, w, b, g, lib):
    """(y, dx, dw, db) of training-mode batch norm of x with weight w and bias b for the output
    gradient g, in lib (torch or tnet); the arrays as float64 numpy."""
    if lib is torch:
        leaves = [v.clone().requires_grad_(True) for v in (x, w, b)]
        y = tF.batch_norm(leaves[0], None, None, leaves[1], leaves[2], training=True)
        y.backward(g.to(y.dtype))
        grads = [v.grad for v in leaves]
    else:
        leaves = [tnet.tensor(v.float().numpy(), requires_grad=True, dtype=v.dtype) for v in (x, w, b)]
        if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and x.shape[1] > 1:
            leaves[0].data = leaves[0].data.contiguous(memory_format=torch.channels_last)
        y = F.batch_norm(leaves[0], None, None, leaves[1], leaves[2], training=True)
        y.backward(tnet.tensor(g.float().numpy(), dtype=g.dtype))
        y, grads = y.data.cpu(), [v.grad.data.cpu() for v in leaves]
    return [v.detach().double() for v in (y, *grads)]


def _rel(got, want):
    return ((got - want).norm() / want.norm()).item()


@pytest.mark.parametrize("shape, channels_last", [((3, 5, 7, 7), False), ((3, 5, 7, 7), True), ((4, 20, 3, 5), True),
                                                   ((37, 6), False), ((2, 3, 11), False)])
def test_batch_norm_backward_as_accurate_as_torch(shape, channels_last):
    """y, dx, dweight and dbias of the training mode against float64, within 4x of torch fp32's
    own error (+ a floor for errors that are both at rounding level)."""
    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal(shape) * 3 + 5, dtype=torch.float32)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    C = shape[1]
    w = torch.tensor(rng.standard_normal(C) + 1, dtype=torch.float32)
    b = torch.tensor(rng.standard_normal(C), dtype=torch.float32)
    g = torch.tensor(rng.standard_normal(shape), dtype=torch.float32)
    ref = _bn_grads(*(v.double() for v in (x, w, b, g)), torch)
    theirs, ours = _bn_grads(x, w, b, g, torch), _bn_grads(x, w, b, g, tnet)
    for name, o, t, r in zip(("y", "dx", "dweight", "dbias"), ours, theirs, ref):
        assert o.shape == r.shape
        assert _rel(o, r) <= 4 * _rel(t, r) + 2e-7, f"{name}: relative error {_rel(o, r):.2e}, torch fp32 {_rel(t, r):.2e}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_16_bit_input_against_float64(dtype, channels_last):
    """16-bit x and dy (fp32 weight and bias, statistics in fp32): y and dx within their dtype's
    rounding, dweight and dbias (fp32) within 1e-2 of float64 from the same rounded inputs."""
    rng = np.random.default_rng(3)
    shape = (3, 5, 7, 7)
    x = torch.tensor(rng.standard_normal(shape) * 2 - 1).to(dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.tensor(rng.standard_normal(5) + 1, dtype=torch.float32)
    b = torch.tensor(rng.standard_normal(5), dtype=torch.float32)
    g = torch.tensor(rng.standard_normal(shape)).to(dtype)
    ref = _bn_grads(*(v.double() for v in (x, w, b, g)), torch)
    ours = _bn_grads(x, w, b, g, tnet)
    bound = 1e-2 if dtype == torch.bfloat16 else 2e-3
    for name, o, r in zip(("y", "dx", "dweight", "dbias"), ours, ref):
        assert _rel(o, r) <= bound, f"{name}: relative error {_rel(o, r):.2e} (bound {bound:.0e})"
