"""Basic indexing, views, casts and the strided copy kernel (kernels/copy.py, functional/copy.py)
against torch (float64 where values are compared), and their gradients."""
import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet.kernels import copy as copy_module
from tnet.kernels.launch import is_channels_last
from helpers import CONFIG_DTYPES, DEV, LOW, TOL, assert_close, config_indices, only_ith_config, pair


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


# ---- views ----------------------------------------------------------------------------------

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


@pytest.mark.parametrize("dtype", LOW)
def test_copy_kernel_16_bit(dtype):
    for case in ("permuted", "sliced", "channels-last"):
        test_copy_kernel_strides(case, dtype)


KERNELS = [copy_module.copy_kernel]


@pytest.mark.parametrize("i", config_indices(KERNELS))
def test_copy_every_config(i, monkeypatch):
    """test_copy_kernel_strides with the copy kernel's i-th tile config."""
    only_ith_config(monkeypatch, KERNELS, i)
    for dtype in CONFIG_DTYPES:
        for case in ("permuted", "sliced"):
            test_copy_kernel_strides(case, dtype)
