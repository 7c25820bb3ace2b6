"""Resampling against torch in float64: F.interpolate's linear, bilinear, bicubic and trilinear modes (size or
scale_factor, align_corners, recompute_scale_factor, antialias), the Upsample modules, F.affine_grid and
F.grid_sample (its three modes, padding modes, align_corners, 5-D volumes), forward and gradients, NCHW, channels-last
and strided inputs."""
import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from helpers import CONFIG_DTYPES, TOL, assert_close, check, config_indices, leaf, only_ith_config, tol_for
from tnet.kernels import resample

TF = torch.nn.functional


@pytest.mark.parametrize("shape,kwargs,channels_last", [
    ((2, 3, 5, 7), dict(size=(8, 11), mode="bilinear"), False),
    ((2, 3, 5, 7), dict(size=(3, 4), mode="bilinear", align_corners=True), True),
    ((2, 3, 5, 7), dict(scale_factor=1.5, mode="bilinear", align_corners=False), False),
    ((2, 3, 5, 7), dict(scale_factor=(2, 0.6), mode="bilinear", recompute_scale_factor=True), False),
    ((2, 3, 7), dict(scale_factor=2, mode="linear", align_corners=True), False),
    ((2, 3, 7), dict(size=4, mode="linear"), False),
    ((2, 3, 5, 7), dict(scale_factor=1.5, mode="bicubic"), True),
    ((2, 3, 5, 7), dict(size=(3, 9), mode="bicubic", align_corners=True), False),
    ((2, 3, 5, 7), dict(scale_factor=1.6, mode="nearest-exact"), False),
    # antialias: torch's taps, the filter widened where an axis shrinks (torchvision's Resize on tensors)
    ((2, 3, 9, 8), dict(size=(4, 3), mode="bilinear", antialias=True), False),
    ((2, 3, 9, 8), dict(size=(4, 11), mode="bicubic", antialias=True), True),
    ((2, 3, 10, 9), dict(scale_factor=(0.37, 0.5), mode="bilinear", align_corners=True, antialias=True), False),
    ((2, 3, 7, 7), dict(size=(7, 2), mode="bicubic", align_corners=True, antialias=True), False),
    # 5-D volumes (VoxelMorph's ResizeTransform, 3-D U-Nets' upsampling)
    ((2, 3, 4, 5, 3), dict(scale_factor=0.5, mode="trilinear", align_corners=True), False),
    ((2, 3, 4, 5, 3), dict(size=(3, 7, 5), mode="trilinear"), False),
    ((2, 3, 4, 5, 3), dict(scale_factor=(2, 1.5, 0.7), mode="trilinear"), False),
    ((1, 2, 3, 4, 2), dict(scale_factor=2, mode="nearest"), False),
    ((2, 3, 4, 5, 3), dict(size=(3, 7, 5), mode="nearest-exact"), False),
    ((2, 3, 4, 5, 3), dict(size=(2, 3, 2), mode="area"), False),
])
def test_interpolate_as_torch(rng, shape, kwargs, channels_last):
    x, xr = leaf(rng, *shape, channels_last=channels_last)
    out = check(lambda a: F.interpolate(a, **kwargs), lambda a: TF.interpolate(a, **kwargs), [(x, xr)], rng)
    assert out.memory.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    assert x.grad.memory.stride() == x.memory.stride()


@pytest.mark.skipif(not hasattr(torch._C._nn, "_upsample_lanczos2d_aa"), reason="torch's lanczos mode is 2.13's")
@pytest.mark.parametrize("shape,kwargs,channels_last", [
    ((2, 3, 9, 8), dict(size=(4, 3)), False),  # both axes shrink: the filter widened
    ((2, 3, 6, 7), dict(size=(9, 11)), True),  # both grow: 7 taps
    ((2, 3, 10, 9), dict(scale_factor=(0.37, 1.5), align_corners=False), False),
])
def test_interpolate_lanczos_as_torch(rng, shape, kwargs, channels_last):
    """torch 2.13's lanczos mode (antialiased only, sinc(x) sinc(x / 3) over 3 input pixels each side, widened
    where an axis shrinks): torch's values and gradient; torch's errors for align_corners=True and no antialias."""
    x, xr = leaf(rng, *shape, channels_last=channels_last)
    kwargs = dict(mode="lanczos", antialias=True, **kwargs)
    check(lambda a: F.interpolate(a, **kwargs), lambda a: TF.interpolate(a, **kwargs), [(x, xr)], rng)
    bad_calls = ((dict(align_corners=True), "does not support align_corners"),
                 (dict(antialias=False), "requires antialias"))
    for bad, error in bad_calls:
        for m in (F, TF):
            with pytest.raises(ValueError, match=error):
                m.interpolate((x if m is F else xr), **{**kwargs, **bad})
    for m, t in ((F, tnet.randn(1, 2, 5)), (TF, torch.randn(1, 2, 5))):
        with pytest.raises(NotImplementedError, match="lanczos"):
            m.interpolate(t, size=3, mode="lanczos")


def test_interpolate_strided_input_and_modules(rng):
    x, xr = leaf(rng, 2, 3, 7, 5)
    kw = dict(size=(6, 9), mode="bilinear", align_corners=True)
    check(lambda a: F.interpolate(a.transpose(2, 3), **kw), lambda a: TF.interpolate(a.transpose(2, 3), **kw),
          [(x, xr)], rng)
    x, xr = leaf(rng, 1, 2, 3, 4)
    for ours, theirs in [(nn.Upsample(scale_factor=2, mode="bilinear"), torch.nn.Upsample(scale_factor=2, mode="bilinear")),
                         (nn.UpsamplingBilinear2d(size=(5, 6)), torch.nn.UpsamplingBilinear2d(size=(5, 6))),
                         (nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3))]:
        np.testing.assert_allclose(ours(x).numpy(), theirs(xr).detach().numpy(), rtol=1e-5, atol=1e-6)
        assert repr(ours) == repr(theirs) and ours.scale_factor == theirs.scale_factor  # 2.0: kept as a float


def test_interpolate_errors():
    x = tnet.randn(1, 2, 4, 4)
    with pytest.raises(ValueError, match="Anti-alias"):
        F.interpolate(x, scale_factor=2, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="Anti-alias"):
        F.interpolate(tnet.randn(1, 2, 4), scale_factor=2, mode="linear", antialias=True)
    with pytest.raises(NotImplementedError, match="linear mode needs 3D"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with pytest.raises(ValueError, match="align_corners option"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=3, scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="recompute_scale_factor"):
        F.interpolate(x, size=3, mode="bilinear", recompute_scale_factor=True)


@pytest.mark.parametrize("mode,padding_mode,align_corners", [
    ("bilinear", "zeros", False), ("bilinear", "border", True), ("bilinear", "reflection", False),
    ("bilinear", "reflection", True), ("nearest", "zeros", True), ("nearest", "border", False),
    ("nearest", "reflection", False), ("bicubic", "zeros", False), ("bicubic", "border", True),
    ("bicubic", "reflection", False), ("bicubic", "reflection", True)])
def test_grid_sample_as_torch(rng, mode, padding_mode, align_corners):
    # points spread past [-1, 1] so that every padding rule is met; channels-last input, strided grid
    x, xr = leaf(rng, 2, 3, 5, 7, channels_last=True)
    g, gr = leaf(rng, 2, 2, 4, 6, values=rng.uniform(-1.4, 1.4, (2, 2, 4, 6)))
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    check(lambda a, b: F.grid_sample(a, b.permute(0, 2, 3, 1), **kw),
          lambda a, b: TF.grid_sample(a, b.permute(0, 2, 3, 1), **kw), [(x, xr), (g, gr)], rng)


@pytest.mark.parametrize("mode,padding_mode,align_corners", [
    ("bilinear", "zeros", False), ("bilinear", "border", True), ("bilinear", "reflection", False),
    ("bilinear", "reflection", True), ("nearest", "zeros", True), ("nearest", "reflection", False)])
def test_volumetric_grid_sample_as_torch(rng, mode, padding_mode, align_corners):
    """grid_sample of [N, C, D, H, W] at [N, OD, OH, OW, 3] (VoxelMorph's SpatialTransformer of 3-D volumes):
    trilinear and nearest, every padding rule (points past [-1, 1]), gradients to the input and the grid; and at
    affine_grid's grid of 3-D maps theta [N, 3, 4]."""
    x, xr = leaf(rng, 2, 3, 4, 5, 6)
    g, gr = leaf(rng, 2, 3, 2, 4, 3, values=rng.uniform(-1.3, 1.3, (2, 3, 2, 4, 3)))
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    check(lambda a, b: F.grid_sample(a, b, **kw), lambda a, b: TF.grid_sample(a, b, **kw), [(x, xr), (g, gr)], rng)
    theta, theta_r = leaf(rng, 2, 3, 4, values=np.eye(3, 4) + rng.uniform(-0.2, 0.2, (2, 3, 4)))  # a 3-D affine map
    size, align = [2, 3, 3, 4, 2], bool(align_corners)
    check(lambda a, t: F.grid_sample(a, F.affine_grid(t, size, align_corners=align), **kw),
          lambda a, t: TF.grid_sample(a, TF.affine_grid(t, size, align_corners=align), **kw), [(x, xr), (theta, theta_r)], rng)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        F.grid_sample(x, g, mode="bicubic")


def test_affine_grid_sample_as_torch(rng):
    x, xr = leaf(rng, 2, 3, 5, 7)
    for align in (False, True):
        th, thr = leaf(rng, 2, 2, 3, values=np.eye(2, 3) + 0.3 * rng.standard_normal((2, 2, 3)))
        check(lambda a: F.affine_grid(a, (2, 3, 4, 6), align_corners=align),
              lambda a: TF.affine_grid(a, (2, 3, 4, 6), align_corners=align), [(th, thr)], rng)
        th.grad = thr.grad = None
        check(lambda a, t: F.grid_sample(a, F.affine_grid(t, (2, 3, 4, 6), align), align_corners=align),
              lambda a, t: TF.grid_sample(a, TF.affine_grid(t, (2, 3, 4, 6), align), align_corners=align),
              [(x, xr), (th, thr)], rng, TOL["ieee"] * 10)
        x.grad = xr.grad = None
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(tnet.randn(2, 3, 3), (2, 3, 4, 6))
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(tnet.randn(1, 1, 2, 2), tnet.randn(1, 2, 2, 2), padding_mode="wrap")


@pytest.mark.parametrize("align", [False, True])
def test_identity_theta_as_torch_fp32(rng, align):
    """The spatial transformer tutorial's start: theta the identity puts each point on a pixel centre,
    where bilinear's gradient jumps and an ulp of the grid picks the side; tnet's fp32 grid is torch's
    bit for bit and its points round once, as torch's, so theta's gradient is torch's fp32 one."""
    shape = (2, 3, 13, 28)
    x = rng.standard_normal(shape).astype(np.float32)
    seed = rng.standard_normal((2, 3, 13, 28)).astype(np.float32)
    eye = np.tile(np.eye(2, 3, dtype=np.float32), (2, 1, 1))
    th, thr = tnet.tensor(eye, requires_grad=True), torch.tensor(eye, requires_grad=True)
    grid, gridr = F.affine_grid(th, shape, align_corners=align), TF.affine_grid(thr, shape, align_corners=align)
    np.testing.assert_array_equal(grid.numpy(), gridr.detach().numpy())
    out = F.grid_sample(tnet.tensor(x), grid, align_corners=align)
    outr = TF.grid_sample(torch.tensor(x), gridr, align_corners=align)
    (out * tnet.tensor(seed)).sum().backward()
    (outr * torch.tensor(seed)).sum().backward()
    assert_close(th.grad, thr.grad, TOL["ieee"], "theta's gradient")


RESAMPLE_KERNELS = (resample.resample_axis_kernel, resample.grid_sample_kernel)


@pytest.mark.parametrize("i", config_indices(RESAMPLE_KERNELS))
def test_resample_every_config(rng, i, monkeypatch):
    """Each tile config of the resampling kernels alone (on the GPU the other tests run only the
    first, TNET_AUTOTUNE=0), in every storage dtype: bilinear and bicubic interpolation, and
    grid_sample (its grid's gradient in fp32 only: 16-bit points move by a whole rounding step)."""
    only_ith_config(monkeypatch, RESAMPLE_KERNELS, i)
    for dtype in CONFIG_DTYPES:
        tol = tol_for(dtype)
        for kw in (dict(size=(8, 11), mode="bilinear"), dict(scale_factor=1.5, mode="bicubic", align_corners=True)):
            x, xr = leaf(rng, 2, 3, 5, 7, dtype=dtype)
            check(lambda a: F.interpolate(a, **kw), lambda a: TF.interpolate(a, **kw), [(x, xr)], rng, tol)
        x, xr = leaf(rng, 2, 3, 5, 7, channels_last=True, dtype=dtype)
        g, gr = leaf(rng, 2, 4, 6, 2, values=rng.uniform(-1.4, 1.4, (2, 4, 6, 2)), dtype=dtype)
        if dtype != torch.float32:
            g.requires_grad, gr.requires_grad = False, False
        check(lambda a, b: F.grid_sample(a, b, align_corners=False),
              lambda a, b: TF.grid_sample(a, b, align_corners=False), [(x, xr), (g, gr)], rng, tol)
