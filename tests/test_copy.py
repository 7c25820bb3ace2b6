"""Shapes, slicing, casts, factories, random numbers and dropout against torch (float64 where
values are compared), and their gradients."""
import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet import nn
from tnet.kernels import copy as copy_module
from tnet.kernels import random as random_module
from tnet.kernels.launch import is_channels_last
from helpers import CONFIG_DTYPES, LOW, TOL, assert_close, only_config, tol_for

DEV = tnet.DEVICE


def pair(rng, *shape, channels_last=False):
    """A tnet leaf and the float64 torch leaf with the same values (fp32 ones, so that views
    and copies compare exactly)."""
    a = rng.standard_normal(shape).astype(np.float32).astype(np.float64)
    t = tnet.tensor(a, requires_grad=True)
    if channels_last:
        t.data = t.data.contiguous(memory_format=torch.channels_last)
    return t, torch.tensor(a, requires_grad=True)


def backward_both(out, ref, rng):
    g = rng.standard_normal(ref.shape).astype(np.float32)
    out.backward(g)
    ref.backward(torch.tensor(g))


def same_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# ---- basic indexing -------------------------------------------------------------------------

INDICES = [1, -1, slice(1, 4), slice(None, None, 2), (-2, slice(None), slice(1, None, 2)), (None, Ellipsis, 1),
           (Ellipsis, None), (slice(-3, None), None, 0), (1, 2, 0), (slice(10, 20),), (np.int64(2), slice(0, 7, 3)),
           (Ellipsis,), ()]


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_getitem_is_a_view_with_torchs_values_and_gradient(rng, index):
    x, xr = pair(rng, 5, 7, 3)
    y, ref = x[index], xr[index]
    assert y.shape == tuple(ref.shape)
    assert_close(y, ref, 0, f"x[{index}]")
    assert same_storage(y.data, x.data) and y.data.stride() == ref.stride()
    backward_both(y, ref, rng)
    assert_close(x.grad, xr.grad, 0, f"gradient of x[{index}]")


def test_getitem_of_a_view_and_of_a_0d_tensor(rng):
    x, xr = pair(rng, 6, 9)
    y, ref = x.T[1:5:3][..., 2::2][0], xr.T[1:5:3][..., 2::2][0]
    assert_close(y, ref, 0, "chained views")
    backward_both(y, ref, rng)
    assert_close(x.grad, xr.grad, 0, "gradient through chained views")
    s = tnet.tensor(3.0)
    assert s[()].shape == () and s[None].shape == (1,) and s[...].item() == 3.0


def test_slice_used_twice_and_overlapping_slices_sum_their_gradients(rng, ieee):
    x, xr = pair(rng, 7, 5)

    def net(mm, x):
        s = x[1:4]
        return mm(mm(s, s.T), mm(x[0:3], x[2:5].T))  # s twice; rows 2 and 3 in both slices
    out, ref = net(F.matmul, x), net(torch.matmul, xr)
    assert_close(out, ref, TOL["ieee"], "forward")
    backward_both(out, ref, rng)
    assert_close(x.grad, xr.grad, TOL["ieee"], "summed gradients")


def test_getitem_channels_last(rng):
    x, xr = pair(rng, 2, 16, 5, 3, channels_last=True)
    y, ref = x[:, 2:9, 1:, ::2], xr[:, 2:9, 1:, ::2]
    assert_close(y, ref, 0, "channels-last slice")
    assert same_storage(y.data, x.data)
    backward_both(y, ref, rng)
    assert_close(x.grad, xr.grad, 0, "gradient")
    assert is_channels_last(x.grad.data), "the gradient keeps x's layout"


@pytest.mark.parametrize("index,error", [
    ([0, 2], TypeError), (np.array([0, 1]), TypeError), (torch.tensor([1]), TypeError), (True, TypeError),
    ((0, [1]), TypeError), (slice(torch.tensor(1), 3), TypeError), (1.0, TypeError), (slice(None, None, -1), ValueError),
    (slice(0, 4, 0), ValueError)], ids=str)
def test_advanced_indexing_is_refused(index, error):
    x = tnet.ones(4, 5)
    with pytest.raises(error, match="basic slicing|slice|step"):
        x[index]
    with pytest.raises(TypeError, match="basic slicing"):
        x[tnet.tensor([0, 1])]


def test_index_out_of_range_is_torchs_index_error():
    with pytest.raises(IndexError):
        tnet.ones(4, 5)[4]
    assert len(list(tnet.zeros(3, 2))) == 3  # iteration stops at the IndexError


# ---- views and metadata ---------------------------------------------------------------------

def test_t_view_flatten_with_gradients(rng):
    x, xr = pair(rng, 3, 4, 5)
    for name, fn in [("view", lambda x: x.view(4, 15)), ("view tuple", lambda x: x.view((-1, 5))),
                     ("flatten", lambda x: x.flatten()), ("flatten(1)", lambda x: x.flatten(1)),
                     ("flatten(0, 1)", lambda x: x.flatten(0, 1)), ("flatten(-2, -1)", lambda x: x.flatten(-2, -1)),
                     ("T", lambda x: x.flatten(1).T), ("t", lambda x: x[0].t()), ("t of 1-D", lambda x: x[0, 0].t())]:
        x.grad, xr.grad = None, None
        y, ref = fn(x), fn(xr)
        assert_close(y, ref, 0, name)
        assert same_storage(y.data, x.data), f"{name} is a view"
        backward_both(y, ref, rng)
        assert_close(x.grad, xr.grad, 0, f"gradient of {name}")
        assert x.grad.data.is_contiguous()


def test_view_and_t_errors_like_torch():
    x = tnet.ones(3, 4)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.T.view(12)
    with pytest.raises(RuntimeError, match="<= 2 dimensions"):
        tnet.ones(2, 3, 4).t()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.flatten(2)
    assert x.T.flatten().shape == (12,)  # flatten copies where view cannot


def test_size_len_float_int_tolist():
    x = tnet.tensor(np.arange(12.0).reshape(3, 4))
    assert x.size() == torch.Size([3, 4]) and isinstance(x.size(), tuple)
    assert x.size(1) == 4 and x.size(-2) == 3 and len(x) == 3
    with pytest.raises(IndexError):
        x.size(2)
    with pytest.raises(TypeError, match="0-d"):
        len(tnet.tensor(1.0))
    assert float(x[2, 1]) == 9.0 and int(x[1, 3]) == 7 and int(tnet.tensor([5])) == 5
    with pytest.raises((ValueError, RuntimeError)):
        float(x)
    assert x.tolist() == np.arange(12.0).reshape(3, 4).tolist() and x[1, 1].tolist() == 5.0


# ---- casts and the copy kernel --------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(torch.float16, 1e-3), (torch.bfloat16, TOL["bf16"])])
def test_to_16_bit_and_back_with_gradients(rng, dtype, tol):
    """bf16 within its tolerance: the interpreter truncates fp32 -> bf16 (the GPU rounds)."""
    x, xr = pair(rng, 6, 11)
    h, hr = x.to(dtype), xr.to(dtype)
    assert h.dtype == dtype and h.requires_grad
    assert_close(h.data.float(), hr.float(), tol, f"to({dtype})")
    y, ref = h.to(torch.float32), hr.double()
    assert y.dtype == torch.float32
    backward_both(y, ref, rng)
    assert_close(x.grad, xr.grad, tol, "gradient cast back")
    assert x.grad.dtype == torch.float32


def test_half_and_bfloat16_with_mixed_dtypes_on_the_tape(rng):
    """torch's method names; a sum of fp32, fp16 and bf16 paths (promoted to fp32) hands each cast
    back its gradient, and the leaf gets the fp32 sum."""
    x, xr = pair(rng, 3, 4)
    h, b = x.half(), x.bfloat16()
    assert h.dtype == torch.float16 and b.dtype == torch.bfloat16 and h.requires_grad and b.bfloat16() is b
    y = h.float() * 2 + b + x  # fp32 * 2, + bf16 (fp32 again), + fp32
    assert y.dtype == torch.float32
    y.backward(np.ones((3, 4)))
    assert x.grad.dtype == torch.float32 and np.all(x.grad.numpy() == 4.0)
    z = x.half() * x.bfloat16()  # fp16 with bf16: fp32; each operand's gradient in its dtype, then fp32
    assert z.dtype == torch.float32
    x.grad = None
    z.backward(np.ones((3, 4)))
    assert_close(x.grad, 2 * xr.detach(), TOL["bf16"], "gradient of x.half() * x.bfloat16()")


def test_to_int_and_back():
    a = np.array([[-2.7, -0.5, 0.0], [0.5, 3.9, 1e6]])
    x = tnet.tensor(a, requires_grad=True)
    i = x.to(tnet.int64)
    assert i.dtype == torch.int64 and not i.requires_grad
    assert i.tolist() == torch.tensor(a).to(torch.int64).tolist()  # truncation toward zero
    assert x.to(torch.int32).tolist() == torch.tensor(a).to(torch.int32).tolist()
    f = tnet.tensor([[1, -3], [1 << 24, 7]]).float()
    assert f.dtype == torch.float32 and f.tolist() == [[1.0, -3.0], [16777216.0, 7.0]]


def test_to_device_and_dtype_arguments():
    x = tnet.ones(2, 3)
    assert x.to(DEV) is x and x.to(DEV.type) is x and x.to(torch.float32) is x and x.float() is x
    assert x.to(DEV, torch.float16).dtype == torch.float16
    assert x.to(device=DEV, dtype=tnet.bfloat16).dtype == torch.bfloat16
    other = "cpu" if DEV.type == "cuda" else "meta"
    with pytest.raises(ValueError, match="keeps tensors on"):
        x.to(other)


def test_contiguous():
    x = tnet.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert x.contiguous() is x
    c = x.T.contiguous()
    assert c.data.is_contiguous() and c.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    c.backward(np.arange(6.0).reshape(3, 2))
    assert x.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


def strided(shape, order, dtype=torch.float32):
    """A tensor of `shape` whose memory holds its dims in `order` (a permuted view)."""
    return torch.empty([shape[d] for d in order], dtype=dtype, device=DEV).permute(*np.argsort(order))


@pytest.mark.parametrize("case", ["contiguous", "permuted", "channels-last", "sliced", "expanded src", "5-D merged",
                                  "0-d", "empty"])
def test_copy_kernel_strides(case, dtype=torch.float32):
    src = torch.randn(3, 5, 4, 7, device=DEV, dtype=dtype)
    dst = torch.empty_like(src)
    if case == "permuted":
        dst = strided(src.shape, (2, 0, 3, 1), dtype)
    elif case == "channels-last":
        src = src.contiguous(memory_format=torch.channels_last)
    elif case == "sliced":
        src, dst = src[:, 1:4, ::2, 2:], torch.empty(7, 9, 9, 9, device=DEV, dtype=dtype)[1:4, 2:5, 1::5, 4:9]
    elif case == "expanded src":
        src = src[:, :1].expand(3, 5, 4, 7)
    elif case == "5-D merged":
        src = torch.randn(2, 3, 4, 5, 6, device=DEV, dtype=dtype)
        dst = torch.empty_like(src)
    elif case == "0-d":
        src, dst = torch.tensor(2.5, device=DEV, dtype=dtype), torch.empty((), device=DEV, dtype=dtype)
    elif case == "empty":
        src, dst = src[:0], dst[:0]
    copy_module.copy_(dst, src)
    assert torch.equal(dst, src), case


def test_copy_kernel_refuses():
    with pytest.raises(ValueError, match="overlaps"):
        copy_module.copy_(torch.empty(1, 4, device=DEV).expand(3, 4), torch.ones(3, 4, device=DEV))
    with pytest.raises(ValueError, match="shapes"):
        copy_module.copy_(torch.empty(3, 4, device=DEV), torch.ones(4, 3, device=DEV))
    with pytest.raises(ValueError, match="dims remain"):
        copy_module.copy_(strided((2, 3, 2, 3, 2), (4, 2, 0, 3, 1)), torch.ones(2, 3, 2, 3, 2, device=DEV))


# ---- factories and random numbers -----------------------------------------------------------

def test_factories_shapes_and_dtypes():
    for t, shape, dtype in [(tnet.zeros(2, 3), (2, 3), torch.float32), (tnet.zeros((4,)), (4,), torch.float32),
                            (tnet.ones([2, 1, 3], dtype=tnet.float16), (2, 1, 3), torch.float16),
                            (tnet.full((2, 3), 7), (2, 3), torch.int64), (tnet.full([5], 1.5), (5,), torch.float32),
                            (tnet.full((2,), 2, dtype=tnet.int32), (2,), torch.int32), (tnet.zeros(), (), torch.float32),
                            (tnet.rand(3, 4), (3, 4), torch.float32), (tnet.randn((5,)), (5,), torch.float32),
                            (tnet.rand(0, 3), (0, 3), torch.float32), (tnet.randn(7, dtype=tnet.bfloat16), (7,), torch.bfloat16)]:
        assert t.shape == shape and t.dtype == dtype and t.device.type == DEV.type
    assert tnet.ones(2, 2).tolist() == [[1.0, 1.0], [1.0, 1.0]] and tnet.full((2,), 7).tolist() == [7, 7]
    assert tnet.zeros(3, requires_grad=True).requires_grad and not tnet.randn(3).requires_grad
    for bad in (lambda: tnet.zeros(2, -1), lambda: tnet.rand(2, dtype=tnet.int64),
                lambda: tnet.full((2,), 1, requires_grad=True), lambda: tnet.zeros(2, device="meta")):
        with pytest.raises(ValueError):
            bad()


@pytest.mark.parametrize("dtype", LOW)
def test_factories_16_bit(dtype):
    for t, value in ((tnet.zeros(2, 3, dtype=dtype), 0.0), (tnet.ones(3, dtype=dtype), 1.0),
                     (tnet.full((2, 2), 1.5, dtype=dtype), 1.5)):
        assert t.dtype == dtype and np.all(f64(t) == value)
    tnet.manual_seed(0)
    u, z = f64(tnet.rand(4096, dtype=dtype)), f64(tnet.randn(4096, dtype=dtype))
    assert u.min() >= 0.0 and u.max() <= 1.0 and abs(u.mean() - 0.5) < 0.03  # <= 1: rounding may reach 1
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1.0) < 0.06
    assert tnet.randn(3, dtype=dtype, requires_grad=True).requires_grad


@pytest.mark.parametrize("dtype", LOW)
def test_copy_and_dropout_16_bit(rng, dtype):
    for case in ("permuted", "sliced", "channels-last"):
        test_copy_kernel_strides(case, dtype)
    test_dropout_train_mask_scale_gradient(rng, dtype)
    x = tnet.tensor(rng.standard_normal((2, 16, 5, 3)) + 5.0, dtype=dtype)
    x.data = x.data.contiguous(memory_format=torch.channels_last)
    y = F.dropout(x, 0.5)
    assert y.dtype == dtype and is_channels_last(y.data)
    check_dropout(x, y, 0.5)


def test_manual_seed_reproduces_draws():
    tnet.manual_seed(1234)
    a, b = tnet.rand(37, 11), tnet.randn(5, 3)
    tnet.manual_seed(1234)
    assert torch.equal(a.data, tnet.rand(37, 11).data) and torch.equal(b.data, tnet.randn(5, 3).data)
    assert not torch.equal(a.data, tnet.rand(37, 11).data), "a second draw differs"
    tnet.manual_seed(1235)
    assert not torch.equal(a.data, tnet.rand(37, 11).data), "another seed differs"
    tnet.manual_seed(-1)  # any Python int, as torch (taken modulo 2^64)
    tnet.rand(2)


def test_rand_and_randn_statistics():
    tnet.manual_seed(0)
    u = tnet.rand(181, 113).numpy().astype(np.float64)  # n = 20453: the mean's std is 0.002
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - 12 ** -0.5) < 0.01
    assert abs((u < 0.25).mean() - 0.25) < 0.015
    z = tnet.randn(181, 113).numpy().astype(np.float64)  # the mean's std is 0.007, the std's 0.005
    assert abs(z.mean()) < 0.035 and abs(z.std() - 1.0) < 0.03
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.016
    assert np.abs(np.corrcoef(z.ravel()[:-1], z.ravel()[1:])[0, 1]) < 0.035, "neighbours are independent"
    h = tnet.rand(4096, dtype=tnet.float16).numpy().astype(np.float64)
    assert h.min() >= 0.0 and h.max() <= 1.0 and abs(h.mean() - 0.5) < 0.03


# ---- dropout --------------------------------------------------------------------------------

P = 0.3


def binomial_ok(zeroed, n, p):
    """Zeroed count within 5 standard deviations of n*p."""
    return abs(zeroed - n * p) <= 5 * np.sqrt(n * p * (1 - p))


def f64(t):
    """A tnet tensor's values as a float64 numpy array (numpy has no bfloat16)."""
    return t.data.double().cpu().numpy()


def check_dropout(x, y, p):
    """y zeroes about p of x and scales the rest by 1/(1-p) (rounded to y's dtype); returns the kept mask."""
    X, Y = f64(x), f64(y)
    kept = Y != 0
    assert binomial_ok((~kept).sum(), X.size, p), f"{(~kept).mean():.3f} zeroed for p = {p}"
    assert_close(Y[kept], X[kept] / (1 - p), tol_for(y.dtype), "kept values")
    return kept


def test_dropout_train_mask_scale_gradient(rng, dtype=torch.float32):
    # no zeros: y != 0 is the mask
    x = tnet.tensor(rng.standard_normal((64, 67)) + 5.0, requires_grad=True, dtype=dtype)
    y = F.dropout(x, P)
    kept = check_dropout(x, y, P)
    g = rng.standard_normal(y.shape)
    y.backward(g)
    g = torch.tensor(g).to(dtype).double().numpy()  # as the tape rounds the seed
    assert y.dtype == x.grad.dtype == dtype
    assert_close(x.grad, np.where(kept, g / (1 - P), 0.0), tol_for(dtype), "gradient follows the mask")
    assert np.all(f64(x.grad)[~kept] == 0)


def test_dropout_channels_last_keeps_layout(rng):
    x, _ = pair(rng, 2, 16, 5, 3, channels_last=True)
    y = F.dropout(x, 0.5)
    assert is_channels_last(y.data)
    kept = check_dropout(x, y, 0.5)
    g = torch.tensor(rng.standard_normal(y.shape), dtype=torch.float32).contiguous(memory_format=torch.channels_last)
    y.backward(g)
    assert_close(x.grad, np.where(kept, g.numpy() * 2.0, 0.0), TOL["ieee"], "gradient")


def test_dropout_on_a_strided_view(rng):
    x = tnet.tensor(rng.standard_normal((40, 90)) + 5.0, requires_grad=True)
    v = x[:, ::3].T
    y = F.dropout(v, P)
    kept = check_dropout(v, y, P)
    y.backward(np.ones(y.shape))
    expect = np.zeros(x.shape)
    expect[:, ::3] = np.where(kept, 1 / (1 - P), 0.0).T
    assert_close(x.grad, expect, TOL["ieee"], "gradient")


def test_dropout_seed_reproduces_and_calls_differ():
    x = tnet.ones(50, 41)
    tnet.manual_seed(7)
    a = F.dropout(x, 0.5).numpy()
    b = F.dropout(x, 0.5).numpy()
    tnet.manual_seed(7)
    assert np.array_equal(a, F.dropout(x, 0.5).numpy())
    assert not np.array_equal(a, b)


def test_dropout_identity_edges_and_errors():
    x = tnet.ones(4, 5, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x and F.dropout(x, 0.0) is x
    z = F.dropout(x, 1.0)
    assert np.all(z.numpy() == 0)
    z.backward(np.ones(z.shape))
    assert np.all(x.grad.numpy() == 0)
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            F.dropout(x, p)
        with pytest.raises(ValueError, match="between 0 and 1"):
            nn.Dropout(p)
    with pytest.raises(NotImplementedError):
        F.dropout(x, 0.5, inplace=True)


def test_dropout_and_identity_modules():
    x = tnet.ones(30, 40)
    drop = nn.Dropout(0.25)
    assert repr(drop) == "Dropout(p=0.25, inplace=False)"
    check_dropout(x, drop(x), 0.25)
    model = nn.Sequential(nn.Identity(54, unused=1), drop)
    assert model.eval()(x) is x
    check_dropout(x, model.train()(x), 0.25)


@pytest.mark.skipif(DEV.type != "cuda", reason="CUDA graphs need a GPU")
def test_captured_dropout_draws_a_new_mask_on_every_replay():
    from tnet.graph import Graph
    x = tnet.ones(256, 129)
    graph = Graph(lambda: (F.dropout(x, 0.5).data, tnet.rand(1000).data))
    masks, draws = zip(*[[t.clone() for t in graph()] for _ in range(3)])
    for i in range(2):
        assert not torch.equal(masks[i], masks[i + 1]) and not torch.equal(draws[i], draws[i + 1])
    tnet.manual_seed(5)
    first = graph()[0].clone()
    tnet.manual_seed(5)
    assert torch.equal(first, graph()[0])


@pytest.mark.skipif(DEV.type != "cuda", reason="CUDA graphs need a GPU")
def test_capture_after_dead_graphs_in_cycles():
    """train.py --runs builds new graphs while the last run's die in reference cycles: with the
    collector set to run on nearly every allocation, no collection lands inside a capture (it
    would reset a dead graph there and invalidate the capture), and gc's state is kept."""
    import gc
    from tnet.graph import Graph
    x = tnet.ones(4096)
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        for _ in range(4):
            graph = Graph(lambda: F.relu(x).data)
            graph.cycle = graph  # dead at the next rebinding, freed only by gc
            assert gc.isenabled() and torch.equal(graph(), x.data)
        gc.disable()
        Graph(lambda: F.relu(x).data)
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.set_threshold(*threshold)


KERNELS = [(copy_module, "copy_kernel"), (random_module, "random_kernel"), (random_module, "dropout_kernel")]


@pytest.mark.parametrize("i", range(max(len(getattr(module, name).all_configs) for module, name in KERNELS)))
def test_kernels_every_config(i, monkeypatch, rng):
    """Copy, random and dropout tests again with each kernel's i-th tile config (or its last);
    conftest.only_config forgets the tuned choices too, or a key seen before would keep its config."""
    for module, name in KERNELS:
        configs = getattr(module, name).all_configs
        only_config(monkeypatch, getattr(module, name), configs[min(i, len(configs) - 1)])
    for dtype in CONFIG_DTYPES:
        for case in ("permuted", "sliced"):
            test_copy_kernel_strides(case, dtype)
        test_dropout_train_mask_scale_gradient(rng, dtype)
    test_rand_and_randn_statistics()
