"""Basic indexing, views, casts and the strided copy kernel (kernels/copy.py, functional/copy.py)
against torch (float64 where values are compared), and their gradients."""
import warnings

import numpy as np
import pytest
import torch

import tnet
import tnet.functional as F
from tnet.kernels import copy as copy_module
from tnet.kernels.launch import is_channels_last
from helpers import (CONFIG_DTYPES, DEV, LOW, TOL, assert_close, check, check_op, config_indices, flag_checked, leaf,
                     only_ith_config, pair, tol_for)


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
    assert same_storage(y.memory, x.memory) and y.memory.stride() == ref.stride()
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


@pytest.mark.parametrize("views", ["slices", "reshape+step slice", "unbind+split+chunk", "transpose+expand"])
def test_a_second_backward_through_views_alone_as_torchs(views):
    """Views save no tensor (torch's nodes of slicing, select, unbind, split, view, reshape, transpose, expand,
    and sum's, keep theirs after a backward): a second backward through them alone, without retain_graph,
    accumulates again, as torch's; through a node that saved a tensor (mul) it still raises torch's "second time"."""
    make = {"slices": lambda x: [x[1:4], x.narrow(1, 2, 3), x.select(0, 2), x[-1]],
            "reshape+step slice": lambda x: [x.reshape(2, 3, 5)[:, 1, ::2], x.view(30)[3:9]],
            "unbind+split+chunk": lambda x: [x.unbind(0)[1], x.split(2, 1)[2], x.chunk(3, 0)[1]],
            "transpose+expand": lambda x: [x.t()[1:3], x[0:1].expand(4, 5)]}[views]
    grads = []
    for lib in (torch, tnet):
        x = lib.tensor(np.arange(30, dtype=np.float32).reshape(6, 5) / 7, requires_grad=True)
        pieces = make(x)
        loss = sum(p.sum() for p in pieces)
        loss.backward()
        loss.backward()
        grads.append(x.grad.numpy().copy())  # torch's CPU numpy() shares the memory the next backward adds into
        y = x * x
        (y[1:3] * 2).sum().backward()
        with pytest.raises(RuntimeError, match="second time"):
            y[0].sum().backward()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_getitem_channels_last(rng):
    x, xr = pair(rng, 2, 16, 5, 3, channels_last=True)
    y, ref = x[:, 2:9, 1:, ::2], xr[:, 2:9, 1:, ::2]
    assert_close(y, ref, 0, "channels-last slice")
    assert same_storage(y.memory, x.memory)
    backward_both(y, ref, rng)
    assert_close(x.grad, xr.grad, 0, "gradient")
    assert is_channels_last(x.grad.memory), "the gradient keeps x's layout"


@pytest.mark.parametrize("index,error", [
    (torch.tensor([1]), IndexError), (slice(1.5, 3), TypeError), (slice(torch.tensor(1.0), 3), TypeError),
    ((0, 1.0), IndexError), (1.0, IndexError), ("a", TypeError), (slice(None, None, -1), ValueError), (slice(0, 4, 0), ValueError)], ids=str)
def test_indexing_beyond_what_tnet_takes_is_refused(index, error):
    """What neither basic nor advanced indexing takes raises in one line (a float: torch's IndexError)."""
    x = tnet.ones(4, 5)
    with pytest.raises(error, match="valid indices|slice|step"):
        x[index]


def test_index_out_of_range_is_torchs_index_error():
    with pytest.raises(IndexError):
        tnet.ones(4, 5)[4]
    assert len(list(tnet.zeros(3, 2))) == 3  # iteration stops at the IndexError


# ---- advanced indexing ----------------------------------------------------------------------

I, J, LABELS = np.array([0, 3, -1, 1]), np.array([[1], [3], [0]]), np.array([2, 0, 4, 4])
MASK, MASK2 = np.array([True, False, True, True]), np.arange(20).reshape(4, 5) % 3 == 1

# (name, fn(a, L)): a is x (4, 5, 6), L makes an index tensor of the library from a numpy array
ADVANCED = [
    ("x[i]", lambda a, L: a[L(I)]),
    ("x[i, j]", lambda a, L: a[L(I), L(J)]),
    ("x[range(n), labels]", lambda a, L: a[range(4), L(LABELS)]),
    ("x[i, :, 1:3]", lambda a, L: a[L(I), :, 1:3]),
    ("x[i, 0]", lambda a, L: a[L(I), 0]),
    ("x[..., j]", lambda a, L: a[..., L(J)]),
    ("x[..., j, ...]: each ellipsis skips the free dims", lambda a, L: a[..., L(J), ...]),
    ("x[:, [0, 2], 1]", lambda a, L: a[:, [0, 2], 1]),
    ("x[mask, 1:]", lambda a, L: a[L(MASK), 1:]),
    ("x[None, i]", lambda a, L: a[None, L(I)]),
    ("x[:, i]", lambda a, L: a[:, L(I)]),
    ("x[i, None, i]: apart, first", lambda a, L: a[L(I), None, L(I)]),
    ("x[j, :, i]: apart, first", lambda a, L: a[L(J), :, L(I)]),
    ("x[1:3, j, ::2]", lambda a, L: a[1:3, L(J), ::2]),
    ("x[i int32, 2, i]: an int does not separate", lambda a, L: a[L(I).int(), 2, L(I)]),
    ("x[2-d mask]", lambda a, L: a[L(MASK2)]),
    ("x[2-d mask, [5]]", lambda a, L: a[L(MASK2), [5]]),
    ("x[numpy i, j]", lambda a, L: a[I, L(J)]),
    ("x[[[0], [2]], ..., range(3)]", lambda a, L: a[[[0], [2]], ..., range(3)]),
    ("x[True], x[:, False]", lambda a, L: a[True][:, :, False]),
    ("x[[]]", lambda a, L: a[[]]),
    ("x[[rows, cols]]: a list of sequences is a tuple (torch warns)", lambda a, L: a[[[0, 3, 1], L(J[:3])]]),
    ("x[[0, slice, i]]", lambda a, L: a[[0, slice(None), L(I)]]),
    ("x[0-d i]", lambda a, L: a[L(np.array(2))]),
    ("duplicates sum their gradients", lambda a, L: a[L(np.array([1, 1, 2, 1])), L(np.array([0, 0, 4, 0]))]),
    ("transposed: the block copied", lambda a, L: a.transpose(0, 2)[L(np.array([5, 0])), L(np.array([1, 1]))]),
    ("x[i][:, j] chained", lambda a, L: a[L(I)][:, L(J)]),
]


@pytest.mark.parametrize("name,fn", ADVANCED, ids=[name for name, _ in ADVANCED])
def test_advanced_indexing_values_and_gradients_as_torch(rng, name, fn):
    x, xr = pair(rng, 4, 5, 6)
    y, ref = fn(x, tnet.tensor), fn(xr, torch.tensor)
    assert_close(y, ref, 0, name)
    backward_both(y, ref, rng)
    assert_close(x.grad, xr.grad, TOL["ieee"], f"gradient of {name}")


def _random_index(gen, shape):
    """A random mix of ints, slices, None, an Ellipsis, bools, lists, ranges, masks and index
    tensors (one broadcast shape) for a tensor of `shape`, as (tnet's index, torch's)."""
    common = tuple(int(n) for n in gen.integers(1, 4, gen.integers(0, 3)))
    tnet_items, torch_items, d = [], [], 0
    ellipsis = gen.integers(0, len(shape) + 1) if gen.random() < 0.3 else -1
    while d < len(shape):
        if d == ellipsis:
            tnet_items.append(Ellipsis), torch_items.append(Ellipsis)
            ellipsis, d = -1, d + int(gen.integers(0, len(shape) - d + 1))
            continue
        n, kind = shape[d], gen.choice(["int", "slice", "none", "tensor", "tensor", "list", "range", "mask"])
        d += kind != "none"
        if kind == "int":
            t = r = int(gen.integers(-n, n))
        elif kind == "slice":
            t = r = slice(int(gen.integers(-n, n)), int(gen.integers(-n, n + 2)), int(gen.integers(1, 3)))
        elif kind == "none":
            t = r = None if gen.random() < 0.7 else bool(gen.random() < 0.8)
        elif kind == "tensor":
            a = gen.integers(-n, n, common[len(common) - int(gen.integers(0, len(common) + 1)):])
            t, r = tnet.tensor(a), torch.tensor(a)
        elif kind == "list":
            t = r = gen.integers(-n, n, common[-1:]).tolist()
        elif kind == "range":
            k = common[-1] if common else 1
            t = r = range(n - k, n) if n >= k else [0] * k
        else:
            m = gen.random(n) < 0.5
            m[gen.integers(0, n)] = True
            t, r = tnet.tensor(m), torch.tensor(m)
            if common[-1:] not in ((), (1,), (int(m.sum()),)):  # a mask's count must broadcast too
                t, r = tnet.tensor(np.flatnonzero(m)[:1]), torch.tensor(np.flatnonzero(m)[:1])
        tnet_items.append(t), torch_items.append(r)
    return tuple(tnet_items), tuple(torch_items)


@pytest.mark.parametrize("seed", range(12))
def test_random_mixes_of_indices_as_torch(rng, seed):
    gen = np.random.default_rng(seed)
    x, xr = pair(rng, 3, 4, 5, 2)
    for _ in range(20):  # a mix that indexes something (torch decides what is legal)
        index, ref_index = _random_index(gen, (3, 4, 5, 2))
        try:
            ref = xr[ref_index]
        except IndexError:
            continue
        break
    y = x[index]
    assert_close(y, ref, 0, f"x[{ref_index}]")
    if ref.numel():
        backward_both(y, ref, rng)
        assert_close(x.grad, xr.grad, TOL["ieee"], f"gradient of x[{ref_index}]")


def test_advanced_indexing_of_channels_last_memory(rng):
    x, xr = pair(rng, 3, 8, 4, 5, channels_last=True)
    i, j = np.array([2, 0, 2]), np.array([[3], [-1]])
    for fn in (lambda a, L: a[:, L(i), :, L(j)], lambda a, L: a[L(i), :, 1:3, L(j)], lambda a, L: a[..., L(j), 2]):
        x.grad, xr.grad = None, None
        y, ref = fn(x, tnet.tensor), fn(xr, torch.tensor)
        assert_close(y, ref, 0, "channels-last")
        backward_both(y, ref, rng)
        assert_close(x.grad, xr.grad, TOL["ieee"], "gradient")
        assert is_channels_last(x.grad.memory)


@pytest.mark.parametrize("fn", [
    lambda L: (L([5]),), lambda L: ([-5],), lambda L: (L([0]), L([9])), lambda L: (slice(None), [7]),
    lambda L: (L([0, 1]), L([-8])), lambda L: (range(2), range(5, 7)), lambda L: (L([True, False]),),
    lambda L: (L([1.0]),), lambda L: (L([0, 1]), L([0, 1, 2])), lambda L: (0, 1, [0]),
    lambda L: (L([[True] * 5] * 4), 0)])
def test_advanced_indexing_errors_are_torchs(fn):
    """IndexError with torch's words: an index out of range (host or device), a mask of the wrong
    shape, a float index, indices that do not broadcast, too many indices."""
    with pytest.raises(IndexError) as ref:
        torch.zeros(4, 5)[fn(lambda v: torch.tensor(v))]
    with pytest.raises(IndexError) as got:
        flag_checked(lambda: tnet.zeros(4, 5)[fn(lambda v: tnet.tensor(np.asarray(v)))])
    assert str(got.value) == str(ref.value)



def test_byte_masks_index_as_torchs_deprecated_bool_masks(rng):
    """A uint8 tensor or numpy array indexes as a bool mask with torch's deprecation warning (PointerNet's
    `embedded_inputs[mask.byte()]`), read and written; a uint16 array stays integer indices, as torch's."""
    a = rng.standard_normal((3, 2)).astype(np.float32)
    masks = [np.array([1, 0, 1], np.uint8), np.array([[1, 0], [0, 0], [1, 1]], np.uint8)]
    for lib in (torch, tnet):
        x = lib.tensor(a)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = [x[lib.tensor(mk)] for mk in masks] + [x[masks[0]], x[np.array([2, 0], np.uint16)]]
            x[lib.tensor(masks[0])] = lib.tensor([[7.0, 8.0]])
        assert [str(w.message).split(" (Triggered")[0] for w in caught] == [
            "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."] * 4
        assert caught[0].filename == __file__
        if lib is torch:
            ref = [v.numpy() for v in got + [x]]
        else:
            for v, r in zip(got + [x], ref):
                np.testing.assert_array_equal(v.numpy(), r)


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
        assert same_storage(y.memory, x.memory), f"{name} is a view"
        backward_both(y, ref, rng)
        assert_close(x.grad, xr.grad, 0, f"gradient of {name}")
        assert x.grad.memory.is_contiguous()


@pytest.mark.parametrize("op", ["conv1d", "conv_transpose1d", "conv1d then dropout"])
def test_view_of_a_1d_convolution_output_as_torchs(rng, ieee, op):
    """conv1d's and conv_transpose1d's [N, C, L] outputs keep NLC memory (channels innermost); .view(N, -1), as 1-D
    CNNs flatten them, gives torch's values and gradients (a copy, as for a channels-last activation: it raised)."""
    x, xr = leaf(rng, 2, 3, 9)
    w, wr = leaf(rng, *((4, 3, 3) if op != "conv_transpose1d" else (3, 4, 3)))

    def run(m, F_, x, w):
        y = F_.conv_transpose1d(x, w) if op == "conv_transpose1d" else F_.conv1d(x, w)
        y = F_.dropout(y, 0.5, training=False) if op.endswith("dropout") else y
        return y.view(y.size(0), -1) * m.arange(y[0].numel(), dtype=y.dtype)  # each element its own weight
    check(lambda x, w: run(tnet, tnet.nn.functional, x, w), lambda x, w: run(torch, torch.nn.functional, x, w),
          [(x, xr), (w, wr)], rng, tol=TOL["ieee"])
    with pytest.raises(RuntimeError, match="view size is not compatible"):  # dim 1 not innermost: not NLC, raises
        tnet.ones(3, 2, 4).transpose(0, 1).view(-1)


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
    """Casts to 16 bits and back, with their gradients, within each dtype's tolerance."""
    x, xr = pair(rng, 6, 11)
    h, hr = x.to(dtype), xr.to(dtype)
    assert h.dtype == dtype and h.requires_grad
    assert_close(h.memory.float(), hr.float(), tol, f"to({dtype})")
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
    assert x.to("cpu") is x and x.cpu() is x  # "cpu" names tnet's one device too, on a GPU as well
    assert tnet.zeros(2, device="cpu").device == DEV and tnet.tensor([1.0], device=torch.device("cpu")).device == DEV
    other = "mps" if DEV.type == "cuda" else "meta"
    with pytest.raises(ValueError, match="keeps tensors on"):
        x.to(other)
    with pytest.raises(RuntimeError, match="keeps tensors on"):  # torch raises RuntimeError for a device it lacks
        x.to(other)
    with pytest.raises(RuntimeError, match="floating-point"):  # torch's error type for an integer leaf
        tnet.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating-point"):
        tnet.zeros(2, dtype=tnet.int64, requires_grad=True)



def test_to_copy_true_gives_a_fresh_tensor_as_torch():
    """to(..., copy=True) (and torch's positional non_blocking, copy) is a new tensor even where the dtype and
    device are x's already, on the tape, as torch's: tnet returned x itself, so writing into the copy wrote
    into x."""
    for lib in (tnet, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        copies = [x.to(lib.float32, copy=True), x.to("cpu", copy=True), x.to(x, copy=True), x.to(copy=True),
                  x.to(lib.float32, False, True), x.to(device="cpu", dtype=lib.float32, copy=True),
                  x.to(memory_format=torch.contiguous_format, copy=True)]
        assert all(y is not x and y.requires_grad and not y.is_leaf and y.dtype == torch.float32 for y in copies)
        assert x.to(lib.float32, False, False) is x and x.to(lib.float16, copy=True).dtype == torch.float16
        (copies[0] * 3 + copies[4]).sum().backward()
        assert x.grad.tolist() == [4.0, 4.0]
        z = lib.tensor([1.0, 2.0])
        w = z.to(lib.float32, copy=True)
        w.add_(1)
        assert z.tolist() == [1.0, 2.0] and w.tolist() == [2.0, 3.0]

def test_contiguous():
    x = tnet.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert x.contiguous() is x
    c = x.T.contiguous()
    assert c.memory.is_contiguous() and c.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    c.backward(np.arange(6.0).reshape(3, 2))
    assert x.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


def strided(shape, order, dtype=torch.float32):
    """A tensor of `shape` whose memory holds its dims in `order` (a permuted view)."""
    return torch.empty([shape[d] for d in order], dtype=dtype, device=DEV).permute(*np.argsort(order))


@pytest.mark.parametrize("case", ["contiguous", "permuted", "channels-last", "sliced", "expanded src", "5-D merged",
                                  "5-D unmerged", "0-d", "empty"])
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
    elif case == "5-D unmerged":  # no two dims merge: the kernel walks all five
        src, dst = torch.randn(2, 3, 2, 3, 2, device=DEV, dtype=dtype), strided((2, 3, 2, 3, 2), (4, 2, 0, 3, 1), dtype)
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
    with pytest.raises(ValueError, match="supports"):
        copy_module.copy_(torch.empty(3, device=DEV, dtype=torch.float64), torch.ones(3, device=DEV))


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


# ---- shape ops: forward and gradients against torch ------------------------------------------
# Each case runs fn(m, *inputs) with m = tnet on tnet leaves and m = torch on their float64 twins,
# so that torch's top-level names are checked too. An input shape ending in CL is channels-last.

CLX = "channels-last"
SHAPE_CASES = {
    "cat channels-last": (lambda m, a, b: m.cat([a, b, a], 1), [(2, 16, 3, 5, CLX), (2, 17, 3, 5, CLX)]),
    "cat mixed layouts": (lambda m, a, b: m.cat([a, b], 1), [(2, 16, 3, 5, CLX), (2, 3, 3, 5)]),
    "cat dim -1": (lambda m, a, b: m.cat((a, b, a), dim=-1), [(2, 3, 4), (2, 3, 1)]),
    "cat empty 1-D": (lambda m, a, e: m.cat([e, a, e], 1), [(3, 5), (0,)]),
    "cat size 0 at dim": (lambda m, a, e: m.concat([a, e, a], 0), [(3, 5), (0, 5)]),
    "concatenate": (lambda m, a, b: m.concatenate([a, b], axis=1), [(3, 2), (3, 5)]),
    "concatenate dim=": (lambda m, a, b: m.concatenate([a, b], dim=0), [(2, 3), (4, 3)]),  # efficient-kan's spelling
    "stack -1": (lambda m, a, b: m.stack([a, b, a], -1), [(3, 4), (3, 4)]),
    "stack channels-last": (lambda m, a, b: m.stack([a, b], 1), [(2, 16, 3, 5, CLX), (2, 16, 3, 5, CLX)]),
    "split int": (lambda m, a: m.cat(m.split(a, 2, -1)[::-1], -1), [(3, 4, 5)]),
    "split sizes channels-last": (lambda m, a: m.cat(a.split([5, 0, 11], 1)[::-1], 1), [(2, 16, 3, 3, CLX)]),
    "split split_size=": (lambda m, a: m.cat(a.split(split_size=[1, 3], dim=-1)[::-1], -1), [(2, 4)]),  # Tensor.split
    "chunk": (lambda m, a: m.cat(m.chunk(a, 3)[::-1]), [(7, 3)]),
    "unbind": (lambda m, a: m.stack(a.unbind(1)[::-1]), [(2, 3, 4)]),
    "permute channels-last": (lambda m, a: a.permute(0, 2, 3, 1).reshape(-1, 16), [(2, 16, 3, 5, CLX)]),
    "permute": (lambda m, a: m.permute(a, (2, 0, -2)), [(3, 4, 5)]),
    "transpose": (lambda m, a: a.transpose(-1, 0).swapaxes(0, 1), [(3, 4, 5)]),
    "swapdims movedim": (lambda m, a: m.movedim(m.swapdims(a, 0, 2), (0, 1), (2, 0)), [(3, 4, 5)]),
    "view channels-last": (lambda m, a: a.view(a.size(0), -1), [(2, 16, 3, 5, CLX)]),
    "view splits channels": (lambda m, a: a.view(2, 4, 4, 3, 5).transpose(1, 2).contiguous().view(2, 16, 3, 5),
                             [(2, 16, 3, 5, CLX)]),
    "view slice of channels-last": (lambda m, a: a[:, 3:11].view(2, 8, 15), [(2, 16, 3, 5, CLX)]),
    "flatten channels-last": (lambda m, a: m.flatten(a, 1) + a.flatten(2).flatten(1), [(2, 16, 3, 5, CLX)]),
    "reshape channels-last": (lambda m, a: m.reshape(a, (-1, 15)), [(2, 16, 3, 5, CLX)]),
    "unflatten": (lambda m, a: m.unflatten(a, 1, (4, -1)).unflatten(-1, (1, 5, 1)), [(2, 16, 1, 5, CLX)]),
    "clone": (lambda m, a: m.clone(a[:, ::2]) + a[:, 1::2].clone(memory_format=torch.channels_last),
              [(2, 16, 3, 5, CLX)]),
    "contiguous": (lambda m, a: a.transpose(0, 1).contiguous(), [(3, 5)]),
    "squeeze unsqueeze": (lambda m, a: m.unsqueeze(m.squeeze(a, 1), -1).squeeze((0, 3)).unsqueeze(0), [(1, 1, 4, 1)]),
    "squeeze all": (lambda m, a: a.squeeze(), [(3, 1, 4, 1)]),
    "flip": (lambda m, a: m.flip(a, (0, -1)), [(3, 4, 5)]),
    "flip channels-last": (lambda m, a: a.flip(1, 2) + m.flip(a, ()), [(2, 16, 3, 5, CLX)]),
    "unfold overlapping": (lambda m, a: a.unfold(1, 3, 1), [(3, 7, 2)]),
    "unfold with gaps": (lambda m, a: a.unfold(-1, 2, 3), [(3, 8)]),
    "unfold twice channels-last": (lambda m, a: a.unfold(2, 2, 1).unfold(3, 3, 2), [(2, 16, 4, 7, CLX)]),
    "index_select repeats": (lambda m, a: m.index_select(a, 1, m.tensor([4, 0, 4, 2, 4])), [(3, 5, 2)]),
    "index_select channels-last": (lambda m, a: a.index_select(1, m.tensor([15, 3, 3, 0])), [(2, 16, 3, 5, CLX)]),
    "index_select int32 dim 0": (lambda m, a: m.index_select(a, -3, m.tensor([1, 1], dtype=m.int32)),
                                 [(2, 16, 3, 5, CLX)]),
    "index_select 0-d index": (lambda m, a: m.index_select(a, -1, m.tensor(2)), [(3, 4)]),
    "expand": (lambda m, a: a.expand(4, -1, 3), [(2, 1)]),
    "broadcast_to expand_as": (lambda m, a, b: m.broadcast_to(a, (3, 2, 5)) * a.expand_as(b) * b, [(1, 5), (2, 5)]),
    "repeat": (lambda m, a: a.repeat(2, 1, 3), [(2, 3)]),
    "repeat channels-last": (lambda m, a: a.repeat(2, 1, 1, 2), [(2, 16, 3, 5, CLX)]),
    "narrow": (lambda m, a: m.narrow(a, 1, 1, 2) + m.narrow(a, -1, -3, 3)[:, :2], [(3, 4, 3)]),
    "select": (lambda m, a: m.select(a, 1, -1) * a.select(0, 2), [(3, 3)]),
}


def shaped_pairs(rng, shapes, dtype=torch.float32):
    return [pair(rng, *s[:-1], channels_last=True, dtype=dtype) if s[-1] == CLX else pair(rng, *s, dtype=dtype)
            for s in shapes]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=str)
def test_shape_ops_match_torch_with_gradients(rng, case):
    fn, shapes = SHAPE_CASES[case]
    inputs = shaped_pairs(rng, shapes)
    out = check_op(lambda *xs: fn(tnet, *xs), lambda *xs: fn(torch, *xs), inputs, TOL["ieee"], rng)
    for x, _ in inputs:
        layout = torch.channels_last if is_channels_last(x.memory) else torch.contiguous_format
        assert x.grad.memory.is_contiguous(memory_format=layout), f"{case}: the gradient in the input's layout"
    if case in ("cat channels-last", "flip channels-last", "index_select channels-last"):
        assert is_channels_last(out.memory), f"{case} keeps the channels-last layout"


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("case", ["cat mixed layouts", "flip channels-last", "unfold twice channels-last",
                                  "index_select repeats", "expand", "repeat"])
def test_shape_ops_in_16_bit(rng, case, dtype):
    """The gathers and the fp32 atomic-add buffers of the backwards, cast to the input's dtype."""
    fn, shapes = SHAPE_CASES[case]
    out = check_op(lambda *xs: fn(tnet, *xs), lambda *xs: fn(torch, *xs), shaped_pairs(rng, shapes, dtype),
                   tol_for(dtype), rng)
    assert out.dtype == dtype


def test_views_share_memory_and_copies_do_not(rng):
    x, _ = pair(rng, 2, 16, 3, 5, channels_last=True)
    views = [x.permute(0, 2, 3, 1), x.transpose(1, 3), tnet.swapaxes(x, 0, 1), x.squeeze(), x.unsqueeze(2),
             x[:, :1].expand(2, 4, 3, 5), x.narrow(1, 2, 3), x.select(2, 1), *x.split(5, 1), *x.chunk(3, 2),
             *x.unbind(0), x.unfold(3, 2, 1), x.view(2, 4, 4, 3, 5), x.unflatten(1, (2, 8))]
    for v in views:
        assert same_storage(v.memory, x.memory)
    copies = [x.clone(), x.flip(0), tnet.cat([x]), tnet.stack([x]), x.repeat(1, 1, 1, 1), x.index_select(0, tnet.tensor([0])),
              x.view(2, -1), x.reshape(32, 15)]  # the last two: NHWC memory cannot be viewed in NCHW order
    for c in copies:
        assert not same_storage(c.memory, x.memory)
    assert x.clone().memory.stride() == x.memory.stride() and x.contiguous(memory_format=torch.channels_last) is x


BASE_CASES = {  # each op once on a fresh tensor and on a recorded one: its result's _base, as torch's
    "slice": lambda w: w[1:], "of_a_view": lambda w: w[1:][:, 1], "t": lambda w: w.t(), "view": lambda w: w.view(12),
    "reshape": lambda w: w.reshape(12), "reshape_copy": lambda w: w.t().reshape(12), "detach": lambda w: w.detach(),
    "data": lambda w: w.data, "clone": lambda w: w.clone(), "contiguous_t": lambda w: w.t().contiguous(),
    "unbind": lambda w: w.unbind(0)[0], "split": lambda w: w.split([1, 3])[1], "chunk": lambda w: w.chunk(2, 1)[0],
    "expand": lambda w: w[:1].expand(4, 3), "unsqueeze": lambda w: w.unsqueeze(0), "squeeze": lambda w: w.squeeze(0),
    "narrow": lambda w: w.narrow(0, 1, 2), "select": lambda w: w.select(1, 0), "diagonal": lambda w: w.diagonal(),
    "flatten_t": lambda w: w.t().flatten(), "mT": lambda w: w.mT, "int_index": lambda w: w[0],
    "list_index": lambda w: w[[0, 1]], "mul": lambda w: w * 2, "iter": lambda w: next(iter(w)),
    "view_dtype": lambda w: w.view(torch.int32), "to_same": lambda w: w.to(torch.float32),
    "matmul_view": lambda w: (w @ w.t()).view(16), "as_strided": lambda w: w.as_strided((2, 2), (1, 1)),
    "detach_of_a_view": lambda w: w[1:].detach(), "unfold": lambda w: w.unfold(0, 2, 1), "ellipsis": lambda w: w[..., None],
}


@pytest.mark.parametrize("requires_grad", [False, True])
def test_base_is_torchs(rng, requires_grad):
    """Tensor._base: the tensor a view was made from (a view of a view: the first one), None for a tensor that is
    no view, as torch's; the result of each op in BASE_CASES, on a leaf and on a recorded tensor."""
    def bases(lib, x):
        w = x * 1 if requires_grad else x
        named = {id(x): "x", id(w): "w"}
        return {k: None if f(w)._base is None else named.get(id(f(w)._base), "another") for k, f in BASE_CASES.items()}
    x, xr = pair(rng, 4, 3)
    x.requires_grad_(requires_grad), xr.requires_grad_(requires_grad)
    got, want = bases(tnet, x), bases(torch, xr.float())
    assert got == want, {k: (got[k], want[k]) for k in got if got[k] != want[k]}


def test_T_reverses_any_number_of_dims_as_torchs(rng):
    """x.T as torch's: a permute reversing the dims of a tensor of any number of them (a view), its gradient back;
    a 0-d tensor itself, with torch's deprecation warning."""
    x, xr = pair(rng, 2, 3, 4)
    check_op(lambda t: t.T * 1, lambda t: t.T * 1, [(x, xr)], TOL["ieee"], rng)
    assert x.T._base is x and x.T.shape == (4, 3, 2)
    with pytest.warns(UserWarning, match="Tensor.T is deprecated on 0-D tensors"):
        assert tnet.tensor(1.0).T.shape == ()


def test_base_of_a_conv_output_and_after_an_inplace_write(rng):
    """A convolution's output (channels-last memory that views the kernel's own buffer) is no view; its slice is
    one of it, also after an in-place write with grad rebased both."""
    from tnet import nn
    y = nn.Conv2d(3, 4, 1)(pair(rng, 2, 3, 3, 3)[0])
    assert y._base is None and y[:, :2]._base is y and y.permute(0, 2, 3, 1)._base is y
    v = y[:, 1:]
    v.mul_(2)
    assert v._base is y and y._base is None


def test_a_conv_output_flattens_as_torchs_nchw_tensor(rng):
    """A user's `x.view(x.size(0), -1)` and nn.Flatten on a convolution's channels-last output, then
    a linear layer: torch's values, and the gradients back through the convolution."""
    from tnet import nn
    conv = nn.Conv2d(3, 16, 3)
    x, xr = pair(rng, 2, 3, 6, 5)
    w, b = (p.memory.double().cpu().contiguous().requires_grad_() for p in (conv.weight, conv.bias))  # NCHW, as torch
    head, head_r = pair(rng, 10, 16 * 4 * 3)
    y = conv(x)
    assert is_channels_last(y.memory)
    out = F.linear(y.view(y.size(0), -1), head) + F.linear(nn.Flatten()(y), head)
    yr = torch.nn.functional.conv2d(xr, w, b)
    ref = yr.view(yr.size(0), -1) @ head_r.T + torch.nn.Flatten()(yr) @ head_r.T
    assert_close(out, ref, TOL["tf32"], "forward")
    backward_both(out, ref, rng)
    for got, want, name in [(x.grad, xr.grad, "input"), (head.grad, head_r.grad, "head"),
                            (conv.weight.grad, w.grad, "conv weight")]:
        assert_close(got, want, TOL["tf32"], f"gradient of the {name}")


def test_cat_promotes_dtypes_and_joins_integers_and_bools(rng):
    a, ar = pair(rng, 2, 3)
    h, hr = pair(rng, 4, 3, dtype=torch.float16)
    y = tnet.cat([a, h])
    assert y.dtype == torch.float32
    backward_both(y, torch.cat([ar, hr]), rng)
    assert h.grad.dtype == torch.float16 and a.grad.dtype == torch.float32
    assert_close(h.grad, hr.grad, TOL["fp16"], "the fp16 input's gradient, cast back")
    i = tnet.tensor([[1, 2, 3]])
    assert tnet.cat([i, i.to(tnet.int32)]).tolist() == [[1, 2, 3]] * 2 and tnet.cat([i, i]).dtype == torch.int64
    assert tnet.cat([i, h]).dtype == torch.float16 and not tnet.cat([i, i]).requires_grad
    mask = tnet.tensor(np.array([True, False]))
    assert tnet.stack([mask, mask]).tolist() == [[True, False]] * 2
    assert tnet.cat([tnet.zeros(0), tnet.zeros(0)]).shape == (0,)
    assert tnet.index_select(tnet.tensor(2.5), 0, tnet.tensor([0])).shape == ()
    assert x_unfold_0d() == [2.5]


def x_unfold_0d():
    return tnet.tensor(2.5).unfold(0, 1, 1).tolist()


ERRORS = [
    (lambda: tnet.cat([]), ValueError, "non-empty list"),
    (lambda: tnet.cat(tnet.ones(2)), TypeError, "tuple or list"),
    (lambda: tnet.cat([tnet.ones(2, 3)], 1.0), TypeError, "must be int"),
    (lambda: tnet.cat([tnet.ones(2, 3), tnet.ones(3, 3)], 1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1"),
    (lambda: tnet.cat([tnet.ones(2, 3), tnet.ones(2)]), RuntimeError, "same number of dimensions: got 2 and 1"),
    (lambda: tnet.cat([tnet.tensor(1.0), tnet.ones(2)]), RuntimeError, r"zero-dimensional tensor \(at position 0\)"),
    (lambda: tnet.cat([tnet.ones(2, 3)], -3), IndexError, "Dimension out of range"),
    (lambda: tnet.stack([]), RuntimeError, "non-empty TensorList"),
    (lambda: tnet.stack([tnet.ones(2, 3), tnet.ones(3, 2)]), RuntimeError, r"equal size, but got \[2, 3\] at entry 0"),
    (lambda: tnet.stack([tnet.ones(2, 3)], 3), IndexError, "Dimension out of range"),
    (lambda: tnet.split(tnet.ones(2, 3), [1, 1], 1), RuntimeError, "sum exactly to 3"),
    (lambda: tnet.split(tnet.ones(2, 3), 0, 1), RuntimeError, "split_size can only be 0"),
    (lambda: tnet.split(tnet.ones(2, 3), -1), RuntimeError, "non-negative"),
    (lambda: tnet.chunk(tnet.ones(2, 3), 0), RuntimeError, "greater than 0"),
    (lambda: tnet.chunk(tnet.tensor(1.0), 1), RuntimeError, "at least a 1-dimensional"),
    (lambda: tnet.ones(2, 3).permute(0, 0), RuntimeError, "duplicate dims"),
    (lambda: tnet.ones(2, 3).permute(1), RuntimeError, "does not match"),
    (lambda: tnet.ones(2, 3).transpose(0, 2), IndexError, "Dimension out of range"),
    (lambda: tnet.flip(tnet.ones(2, 3), (0, -2)), RuntimeError, "dim 0 appears multiple times"),
    (lambda: tnet.flip(tnet.ones(2, 3), 1), TypeError, "tuple of ints"),
    (lambda: tnet.ones(2, 3).unfold(1, 4, 1), RuntimeError, "maximum size for tensor at dimension 1 is 3 but size is 4"),
    (lambda: tnet.ones(2, 3).unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda: tnet.ones(2, 3).unfold(2, 1, 1), IndexError, "Dimension out of range"),
    (lambda: tnet.index_select(tnet.ones(2, 3), 1, tnet.tensor([0, 3])), IndexError, "index 3 is out of range"),
    (lambda: tnet.index_select(tnet.ones(2, 3), 1, tnet.tensor([-1])), IndexError, "index -1 is out of range"),
    (lambda: tnet.index_select(tnet.ones(2, 3), 1, tnet.tensor([[0]])), IndexError, "supposed to be a vector"),
    (lambda: tnet.index_select(tnet.ones(2, 3), 1, tnet.tensor([0.0])), RuntimeError, "int32 or int64"),
    (lambda: tnet.ones(2, 3).expand(2, 4), RuntimeError, "must match the existing size"),
    (lambda: tnet.ones(2, 3).repeat(2), RuntimeError, "can not be smaller"),
    (lambda: tnet.ones(2, 3).narrow(1, 1, 3), RuntimeError, "exceeds dimension size"),
    (lambda: tnet.ones(2, 3).select(1, 3), IndexError, "out of range"),
    (lambda: tnet.ones(2, 3).squeeze(5), IndexError, "Dimension out of range"),
    (lambda: tnet.ones(2, 3).unflatten(1, (2, 2)), RuntimeError, "don't multiply up to the size of dim 1"),
    (lambda: tnet.ones(2, 3).view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: tnet.ones(2, 16, 3, 5).contiguous(memory_format=torch.channels_last).view(7, -1), RuntimeError, "invalid"),
    (lambda: tnet.ones(2, 3).reshape(5), RuntimeError, "invalid for input of size 6"),
    (lambda: tnet.arange(0, 5, 0), ValueError, "step must be nonzero"),
    (lambda: tnet.arange(5, 0), ValueError, "inconsistent with step sign"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_shape_op_errors_like_torch(i):
    fn, error, match = ERRORS[i]
    with pytest.raises(error, match=match):
        flag_checked(fn)


@pytest.mark.skipif(DEV.type != "cuda", reason="the GPU's deferred check; the CPU raises at once (below)")
def test_index_error_on_the_gpu_comes_at_a_host_read_without_a_sync():
    """index_select does not wait for its index check: the next host read raises, and the flag is clear after."""
    y = tnet.index_select(tnet.ones(2, 3), 0, tnet.tensor([2]))
    with pytest.raises(IndexError, match="index 2 is out of range"):
        y.sum().item()
    assert tnet.index_select(tnet.ones(2, 3), 0, tnet.tensor([1])).sum().item() == 3.0


def test_index_select_error_leaves_no_stale_flag():
    with pytest.raises(IndexError):
        flag_checked(lambda: tnet.index_select(tnet.ones(2, 3), 0, tnet.tensor([2])))
    assert tnet.index_select(tnet.ones(2, 3), 0, tnet.tensor([1])).shape == (1, 3)


# ---- factories ------------------------------------------------------------------------------

def test_empty_and_like_factories_keep_torchs_dtypes_and_layouts():
    x = tnet.zeros(2, 16, 3, 5)
    x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    assert tnet.empty(2, 3).shape == (2, 3) and tnet.empty((4,), dtype=tnet.int64).dtype == torch.int64
    assert tnet.empty(2, 3, requires_grad=True).requires_grad
    for make in (tnet.empty_like, tnet.zeros_like, tnet.ones_like, lambda t, **kw: tnet.full_like(t, 2.5, **kw)):
        y = make(x)
        assert y.shape == x.shape and y.dtype == x.dtype and is_channels_last(y.memory)
        assert make(x, dtype=tnet.float16).dtype == torch.float16
    assert tnet.zeros_like(x).memory.abs().max() == 0 and tnet.ones_like(x, dtype=tnet.int64).memory.min() == 1
    assert tnet.full_like(tnet.tensor([1, 2]), 2.5).tolist() == [2, 2]  # an int tensor stays int, as torch
    with pytest.raises(TypeError):
        tnet.zeros_like(np.zeros(3))


def test_factories_take_torchs_layout_and_pin_memory():
    # NetVLAD's `torch.zeros([N, K, C], dtype=x.dtype, layout=x.layout, device=x.device)`; tnet's tensors are
    # strided alone, so another layout raises
    x = tnet.ones(2, 3)
    made = [tnet.zeros([2, 3], dtype=x.dtype, layout=x.layout, device=x.device), tnet.ones(2, layout=torch.strided),
            tnet.full((2,), 1.0, layout=torch.strided), tnet.empty(2, layout=torch.strided, pin_memory=False),
            tnet.rand(2, layout=torch.strided, pin_memory=False), tnet.randn(2, layout=torch.strided),
            tnet.arange(3, layout=torch.strided), tnet.eye(2, layout=torch.strided),
            tnet.linspace(0, 1, 3, layout=torch.strided), tnet.randint(0, 3, (2,), layout=torch.strided),
            tnet.randperm(3, layout=torch.strided, pin_memory=False), tnet.zeros_like(x, layout=None),
            tnet.ones_like(x, layout=torch.strided), tnet.empty_like(x, layout=torch.strided),
            tnet.full_like(x, 2.0, layout=torch.strided), tnet.rand_like(x, layout=None), tnet.randn_like(x, layout=None),
            tnet.randint_like(x, 3, layout=torch.strided)]
    assert all(t.layout == torch.strided for t in made)
    with pytest.raises(RuntimeError, match="layout"):
        tnet.zeros(2, layout=torch.sparse_coo)


@pytest.mark.parametrize("args,kwargs", [((5,), {}), ((2, 9, 3), {}), ((5, 0, -2), {}), ((0, 1, 0.1), {}),
                                         ((1, 2.5), {}), ((-1.5, 2, 0.7), {}), ((4,), {"dtype": torch.float16}),
                                         ((3,), {"dtype": torch.float32}), ((0,), {}), ((), {"end": 4}),
                                         ((1,), {"end": 7, "step": 3}), ((), {"start": 1, "end": 7, "step": 2}),
                                         ((0, 5), {"step": 2})], ids=str)
def test_arange_like_torch(args, kwargs):
    y, ref = tnet.arange(*args, **kwargs), torch.arange(*args, **kwargs)
    assert y.dtype == ref.dtype and y.shape == tuple(ref.shape)
    assert_close(y.memory.double(), ref.double(), 1e-7, f"arange{args}")


@pytest.mark.parametrize("args,kwargs", [((), {}), ((), {"start": 3}), ((5,), {"step": 2}), ((), {"end": 5, "step": 2}),
                                         ((3,), {"start": 1}), ((1, 2, 3, 4), {})], ids=str)
def test_arange_refuses_what_torch_refuses(args, kwargs):
    """torch.arange's forms are (end), (start, end) and (start, end, step), by position or keyword (TransE's
    torch.arange(end=n)); a start or a step without an end, or a step without a start, is its TypeError."""
    for m in (torch, tnet):
        with pytest.raises(TypeError):
            m.arange(*args, **kwargs)


def test_randperm_is_a_seeded_permutation():
    tnet.manual_seed(5)
    a = tnet.randperm(11)
    tnet.manual_seed(5)
    assert a.dtype == torch.int64 and sorted(a.tolist()) == list(range(11)) and tnet.randperm(11).tolist() == a.tolist()
    assert tnet.randperm(0).shape == (0,) and tnet.randperm(3, dtype=tnet.float32).dtype == torch.float32


def test_torchs_top_level_names():
    for name in ["cat", "concat", "concatenate", "stack", "split", "chunk", "permute", "transpose", "swapaxes",
                 "swapdims", "movedim", "flatten", "unflatten", "reshape", "clone", "flip", "index_select", "squeeze",
                 "unsqueeze", "broadcast_to", "narrow", "select", "unbind", "t", "empty", "empty_like", "zeros_like",
                 "ones_like", "full_like", "randperm", "arange", "sqrt", "exp", "log", "sigmoid", "tanh", "relu", "add",
                 "sub", "mul", "div", "neg", "pow", "matmul", "sum", "mean", "max", "argmax"]:
        assert callable(getattr(tnet, name)) and name in tnet.__all__, name
    x = tnet.tensor([[4.0, 9.0]])
    assert tnet.sqrt(x).tolist() == [[2.0, 3.0]] and tnet.sum(x).item() == 13.0 and x.dim() == 2


# ---- the kernels: gather, scatter-add, windows, flips, each config ----------------------------

def check_index_kernels(dtype=torch.float32):
    """gather_ and index_add_ (repeated and out-of-order indices), unfold_add_ and flip_ against torch,
    on channels-last and sliced tensors."""
    src = torch.randn(3, 6, 4, 5, device=DEV).to(dtype).contiguous(memory_format=torch.channels_last)
    index = torch.tensor([5, 0, 5, 2, 5], device=DEV)
    out = torch.empty(3, 5, 4, 5, device=DEV, dtype=dtype)
    assert torch.equal(copy_module.gather_(out, src, index, 1), src.index_select(1, index))
    sliced = src[:, 1:, ::2]
    assert torch.equal(copy_module.gather_(torch.empty(3, 5, 2, 2, device=DEV, dtype=dtype), sliced, index[1:4:2], 3),
                       sliced.index_select(3, index[1:4:2]))
    acc = torch.zeros(3, 6, 4, 5, device=DEV)
    copy_module.index_add_(acc, out, index, 1)
    want = torch.zeros(3, 6, 4, 5, device=DEV, dtype=torch.float64).index_add_(1, index, out.double())
    assert_close(acc, want, TOL["ieee"], "index_add_")
    windows = torch.randn(3, 6, 2, 5, 2, device=DEV).to(dtype)  # src.unfold(2, 2, 1 ... sized windows
    acc = torch.zeros(3, 6, 4, 5, device=DEV).contiguous(memory_format=torch.channels_last)
    leaf = torch.zeros(3, 6, 4, 5, dtype=torch.float64, requires_grad=True)
    leaf.unfold(2, 2, 2).backward(windows.double().cpu())
    assert_close(copy_module.unfold_add_(acc, windows, 2, 2, 2), leaf.grad, TOL["ieee"], "unfold_add_ with gaps")
    leaf.grad = None
    overlapping = torch.randn(3, 6, 3, 5, 2, device=DEV).to(dtype)
    leaf.unfold(2, 2, 1).backward(overlapping.double().cpu())
    acc.zero_()
    assert_close(copy_module.unfold_add_(acc, overlapping, 2, 2, 1), leaf.grad, TOL["ieee"], "unfold_add_ overlapping")
    assert torch.equal(copy_module.flip_(torch.empty_like(src), src, (0, 1, 3)), src.flip(0, 1, 3))
    assert torch.equal(copy_module.flip_(torch.empty_like(sliced), sliced, (2,)), sliced.flip(2))


def test_index_kernels():
    check_index_kernels()


def test_index_kernels_refuse():
    x = torch.zeros(3, 4, device=DEV)
    with pytest.raises(ValueError, match="index must be a vector"):
        copy_module.gather_(x, x, torch.zeros(3, device=DEV), 0)
    with pytest.raises(ValueError, match="float32 dst"):
        copy_module.index_add_(x.half(), x, torch.zeros(3, dtype=torch.int64, device=DEV), 0)
    with pytest.raises(ValueError, match="must be src"):
        copy_module.gather_(x, x, torch.zeros(2, dtype=torch.int64, device=DEV), 0)
    with pytest.raises(ValueError, match="dst's windows"):
        copy_module.unfold_add_(x, torch.zeros(3, 2, 2, device=DEV), 1, 2, 1)


@pytest.mark.parametrize("i", config_indices(KERNELS))
def test_index_kernels_every_config(i, monkeypatch):
    """The gathers, atomic adds and flips with the copy kernel's i-th config (GPU: each storage dtype)."""
    only_ith_config(monkeypatch, KERNELS, i)
    for dtype in CONFIG_DTYPES:
        check_index_kernels(dtype)


# ---- shape and indexing ops of the eighth session ------------------------------------------------

def _ix(m, data):
    return m.tensor(data)  # int64 in both


# (name, op(module, x)): each run on a tnet leaf and its float64 torch twin, forward and gradient
SHAPE_OPS = [
    ("moveaxis", lambda m, x: m.moveaxis(x, (0, -1), (-1, 1))), ("ravel", lambda m, x: x.transpose(0, 2).ravel()),
    ("atleast_3d", lambda m, x: m.atleast_3d(x[0, 0]) * 2), ("fliplr", lambda m, x: m.fliplr(x)),
    ("flipud", lambda m, x: x.flipud()), ("dstack", lambda m, x: m.dstack([x[0], x[1] * 2])),
    ("column_stack", lambda m, x: m.column_stack((x[0, :, 0], x[1, :, 1:]))), ("row_stack", lambda m, x: m.row_stack((x[0, 1], x[1]))),
    ("hsplit", lambda m, x: m.hsplit(x, [1, -1])[1]), ("vsplit", lambda m, x: x.vsplit(2)[1]),
    ("dsplit", lambda m, x: m.dsplit(x, 4)[3]), ("take", lambda m, x: m.take(x, _ix(m, [[0, -1, 5], [5, 2, 23]]))),
    ("put", lambda m, x: x.put(_ix(m, [1, -2, 3]), x[0, 0, :3] * 3)),  # repeated indices: any write wins
    ("put accumulate", lambda m, x: m.put(x, _ix(m, [1, -2, 1]), x[1, 1, 1:] * 3, accumulate=True)),
    ("index_copy", lambda m, x: x.index_copy(-2, _ix(m, [2, 0]), x[:, :2].flip(0) * 2)),
    ("index_fill", lambda m, x: m.index_fill(x, 1, _ix(m, [2, -3]), -1.5)),
    ("index_fill tensor", lambda m, x: x.index_fill(2, _ix(m, [3, 1, 3]), x[0, 0, 0])),
    ("masked_scatter", lambda m, x: x.masked_scatter(_ix(m, [[1, 0, 0, 1], [0, 1, 1, 0], [0, 0, 0, 1]]) > 0,
                                                     x[1] * 2)),
    ("select_scatter", lambda m, x: m.select_scatter(x, x[:, :, 1] * 2, -1, 2)),
    ("slice_scatter", lambda m, x: x.slice_scatter(x[:, :, :2] * 3, 2, 1, None, 2)),
    ("diagonal_scatter", lambda m, x: m.diagonal_scatter(x, x[:, :, 0] * 2, 1, 1, 2)),
    ("diag_embed", lambda m, x: m.diag_embed(x, -1, 0, -2)), ("diagflat", lambda m, x: m.diagflat(x[0, :2], 1)),
    ("combinations", lambda m, x: m.combinations(x[0, 0], 2, with_replacement=True)),
    ("combinations 3", lambda m, x: m.combinations(x[1, 1], 3)),
    ("cartesian_prod", lambda m, x: m.cartesian_prod(x[0, 0, :3], x[1, 1, :2], x[0, 2, :2])),
    ("block_diag", lambda m, x: m.block_diag(x[0], x[1, 1], x[0, 0, 0], x[1, :2, :1])),
    ("kron", lambda m, x: m.kron(x[0, :2], x[1, 0])), ("kron 3d", lambda m, x: x[:, :1, :2].kron(x[0, :2, :1])),
    ("cross", lambda m, x: m.cross(x[:, :, :3], x[1:, :, 1:], dim=1)),
    ("cross default", lambda m, x: x[:, 1:, :3].cross(x[1:, :2, 1:].flip(1))),
    ("linalg.cross", lambda m, x: m.linalg.cross(x[0, :, 1:], x[1, :, :3])),
    ("split_with_sizes", lambda m, x: x.split_with_sizes([1, 3], -1)[1]), ("sum_to_size", lambda m, x: x.sum_to_size(1, 3, 1)),
    ("broadcast_to", lambda m, x: x[0, :1].broadcast_to((2, 3, 4))),
    ("empty take", lambda m, x: m.take(x, _ix(m, []).long())),
]


@pytest.mark.parametrize("name, op", SHAPE_OPS, ids=[n for n, _ in SHAPE_OPS])
def test_shape_and_indexing_ops_as_torchs(rng, name, op):
    x, xr = leaf(rng, 2, 3, 4)
    check(lambda x: op(tnet, x), lambda x: op(torch, x), [(x, xr)], rng)


def test_vander_as_torchs(rng):
    """torch's own vander cannot backward (an in-place cumprod): the reference is x ** powers."""
    x, xr = leaf(rng, 4)
    check(lambda x: tnet.vander(x, 5), lambda x: x[:, None] ** torch.arange(4, -1, -1), [(x, xr)], rng)
    x, xr = leaf(rng, 3)
    check(lambda x: tnet.vander(x, increasing=True), lambda x: x[:, None] ** torch.arange(3), [(x, xr)], rng)
    assert_close(tnet.vander(x, 4), torch.vander(xr.detach(), 4), TOL["ieee"], "vander")


def test_shape_op_results_without_gradients():
    x, xr = tnet.tensor(np.arange(24.).reshape(2, 3, 4)), torch.arange(24.).reshape(2, 3, 4)
    assert [t.shape for t in tnet.atleast_3d(x[0, 0], x[0], x[0, 0, 0])] == [(1, 4, 1), (3, 4, 1), (1, 1, 1)]
    assert tnet.atleast_2d([x[0, 0, 0]])[0].shape == (1, 1) and tnet.atleast_1d(x[0, 0, 0]).shape == (1,)
    assert tnet.broadcast_shapes((2, 1), 3, (1, 1, 1)) == torch.Size([1, 2, 3])
    for got, ref in [(tnet.tril_indices(3, 4, 1), torch.tril_indices(3, 4, 1)),
                     (tnet.triu_indices(4, 3, -1), torch.triu_indices(4, 3, -1)),
                     (tnet.tril_indices(0, 2), torch.tril_indices(0, 2)),
                     (tnet.combinations(x[0, 0], 0), torch.combinations(xr[0, 0], 0)),
                     (tnet.combinations(x[0, 0, :2], 3), torch.combinations(xr[0, 0, :2], 3)),
                     (tnet.block_diag(), torch.block_diag()), (tnet.vander(x[0, 0].long()), torch.vander(xr[0, 0].long())),
                     (tnet.vander(x[0, 0], 0), torch.vander(xr[0, 0], 0)),
                     (x.long().index_fill(0, tnet.tensor([1]), 7), xr.long().index_fill(0, torch.tensor([1]), 7)),
                     (x.long().put(tnet.tensor([0, 0]), tnet.tensor([4, 5]), True), xr.long().put(torch.tensor([0, 0]), torch.tensor([4, 5]), True)),
                     (tnet.index_fill(x[0, 0, 0], 0, tnet.tensor(0), 3.0), torch.index_fill(xr[0, 0, 0], 0, torch.tensor(0), 3.0))]:
        assert got.dtype == ref.dtype and torch.equal(got.memory.cpu(), ref), (got, ref)
    for got, ref in zip(tnet.unravel_index(tnet.tensor([[5, -1], [6, -7]]), (2, 3)),
                        torch.unravel_index(torch.tensor([[5, -1], [6, -7]]), (2, 3))):
        assert torch.equal(got.memory.cpu(), ref)
    assert tnet.empty_strided((2, 3), (1, 2)).stride() == (1, 2)
    assert tnet.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1)).stride() == (60, 1, 15, 3)  # channels-last
    with pytest.raises(RuntimeError, match="Duplicate dim"):
        tnet.empty_permuted((2, 3), (0, 0))
    s = tnet.scalar_tensor(3)
    assert s.shape == () and s.dtype == torch.float32 and s.item() == 3
    assert tnet.cartesian_prod(x[0, 0]) is x[0, 0] or tnet.cartesian_prod(x[0, 0]).shape == (4,)


def test_shape_ops_raise_torchs_errors():
    x = tnet.zeros(3, 5)
    cases = [(RuntimeError, "Input must be >= 2-d", lambda: tnet.fliplr(tnet.zeros(3))),
             (RuntimeError, "not divisible by the split_size 2", lambda: tnet.hsplit(x, 2)),
             (RuntimeError, "at least 3 dimension", lambda: tnet.dsplit(x, 1)),
             (IndexError, "tried to access index 15", lambda: tnet.take(x, tnet.tensor([15]))),
             (IndexError, "tried to access index -16", lambda: x.take(tnet.tensor([-16]))),
             (IndexError, "same number of elements", lambda: x.put(tnet.tensor([1]), tnet.zeros(2))),
             (IndexError, "out of bounds", lambda: x.put(tnet.tensor([15]), tnet.zeros(1))),
             (IndexError, "index 3 is out of bounds", lambda: x.index_copy(0, tnet.tensor([3]), tnet.zeros(1, 5))),
             (IndexError, "index -1 is out of bounds", lambda: x.index_copy(0, tnet.tensor([-1]), tnet.zeros(1, 5))),
             (IndexError, "index 5 is out of bounds", lambda: x.index_fill(1, tnet.tensor([5]), 1.0)),
             (RuntimeError, "source < number of ones", lambda: x.masked_scatter(x == 0, tnet.zeros(3))),
             (RuntimeError, "slice of self", lambda: tnet.select_scatter(x, tnet.zeros(3), 0, 1)),
             (IndexError, "out of range", lambda: tnet.select_scatter(x, tnet.zeros(5), 0, 3)),
             (RuntimeError, "Expect a 1D vector", lambda: tnet.combinations(x)),
             (RuntimeError, "2 or fewer dimensions", lambda: tnet.block_diag(tnet.zeros(1, 1, 1))),
             (RuntimeError, "no dimension of size 3", lambda: tnet.cross(tnet.zeros(2, 4), tnet.zeros(2, 4))),
             (RuntimeError, "must have length 3", lambda: tnet.linalg.cross(x, x)),
             (RuntimeError, "one-dimensional", lambda: tnet.vander(x)),
             (RuntimeError, "broadcast", lambda: tnet.broadcast_shapes((2, 1), (3, 3))),
             (RuntimeError, "not expandable", lambda: x.sum_to_size(4, 5)),
             (RuntimeError, "sum exactly to 3", lambda: x.split_with_sizes([1, 1])),
             (TypeError, "integer dtype", lambda: tnet.unravel_index(tnet.zeros(2), (2,))),
             (IndexError, "Dimension out of range", lambda: tnet.diag_embed(x, 0, 0, 3))]
    for error, match, fn in cases:
        with pytest.raises(error, match=match):
            flag_checked(fn)


def test_in_place_indexing_methods_as_torchs(rng):
    """put_, index_copy_, index_fill_, index_add_, masked_scatter_, fill_diagonal_, tril_ and triu_ write
    into the tensor; on a non-leaf with grad, the gradient flows as torch's."""
    def run(m, x):
        y = x * 1
        y.put_(_ix(m, [0, -1]), x[1, :2] * 2)
        y.index_copy_(1, _ix(m, [3]), x[:, :1] * 3)
        y.index_fill_(0, _ix(m, [2]), 0.5)
        y.index_add_(1, _ix(m, [0, 0]), x[:, 1:3], alpha=2)
        y.masked_scatter_(x[:1] > 0, x.flip(0) * 4)
        y.tril_(1)
        y.triu_(-1)
        return y.fill_diagonal_(-2.0, wrap=True).cumsum_(0).cumprod_(1)
    x, xr = leaf(rng, 5, 4)
    out = check(lambda x: run(tnet, x), lambda x: run(torch, x), [(x, xr)], rng)
    assert out.shape == (5, 4)
    z, zr = tnet.zeros(7, 3), torch.zeros(7, 3)
    assert torch.equal(z.fill_diagonal_(1, wrap=True).memory.cpu(), zr.fill_diagonal_(1, wrap=True))
    assert torch.equal(tnet.zeros(3, 3, 3).fill_diagonal_(2).memory.cpu(), torch.zeros(3, 3, 3).fill_diagonal_(2))
    assert torch.equal(tnet.zeros(2, 5).fill_diagonal_(1).memory.cpu(), torch.zeros(2, 5).fill_diagonal_(1))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.put_(tnet.tensor([0]), tnet.zeros(1))
    with pytest.raises(RuntimeError, match="equal length"):
        tnet.zeros(2, 3, 2).fill_diagonal_(1)


def test_view_methods_in_place_as_torchs(rng):
    """squeeze_, unsqueeze_, t_, transpose_, swapaxes_ and swapdims_ make the tensor object the view."""
    def run(m, x):
        y = x * 2
        before = y + 1  # y before its shape changes (a product would save y, and then raise, as torch's)
        y.unsqueeze_(0).transpose_(0, 2).swapaxes_(1, 2).swapdims_(0, 1).squeeze_(0)
        y.t_()
        return y * before
    x, xr = leaf(rng, 3, 4)
    out = check(lambda x: run(tnet, x), lambda x: run(torch, x), [(x, xr)], rng)
    assert out.shape == (3, 4)
    y = tnet.zeros(3, 1)
    assert y.unsqueeze_(0) is y and y.shape == (1, 3, 1) and y.squeeze_().shape == (3,) and y._version == 2
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="t_\\(\\) expects"):
        tnet.zeros(2, 3, 4).t_()


def test_eighth_session_ops_use_torch_for_memory_only(rng):
    from helpers import MEMORY_OPS, Recorder
    x = tnet.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    with Recorder() as rec:
        outs = [tnet.take(x, tnet.tensor([0, -1])), x.put(tnet.tensor([1]), x[0, :1]),
                x.put(tnet.tensor([1, 1]), x[0, :2], accumulate=True), x.index_copy(0, tnet.tensor([2]), x[:1]),
                x.index_fill(1, tnet.tensor([-1]), 2.0), x.masked_scatter(x > 0, x * 2), tnet.select_scatter(x, x[0], 0, 1),
                tnet.diagonal_scatter(x, x[0, :3], 0), tnet.diag_embed(x), tnet.combinations(x[0]),
                tnet.block_diag(x, x[0]), tnet.kron(x, x[:2]), tnet.inner(x, x), tnet.cross(x[:, :3], x[:, 1:]),
                tnet.vander(x[0]), x.sum_to_size(1, 4), tnet.corrcoef(x), tnet.quantile(x, 0.3, 1),
                tnet.nanmedian(x, 0).values, tnet.mode(x, 1).values, tnet.logcumsumexp(x, 1), tnet.renorm(x, 2, 0, 1.0)]
        for o in outs:
            o.sum().backward()
        tnet.searchsorted(x[0].sort().values, x), tnet.unravel_index(tnet.tensor([5]), (2, 3)), x.short()
        y = x * 1
        y.fill_diagonal_(3.0).tril_().cumprod_(1).index_add_(0, tnet.tensor([0]), x[:1]).unsqueeze_(0).t_
        y.squeeze_(0).t_().sum().backward()
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


# ---- the tensor surface of the eighth session (ops3): scatter_reduce, index_reduce, as_strided --

def _pair(rng, a):
    return tnet.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values_and_gradients_as_torch(rng, reduce, include_self):
    inp, src = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    inp[1, 1] = src[2, 0] = src[0, 2] = src[3, 2] = 0.0  # products with zeros: one, and two, at a position
    src[4, 1] = src[3, 1]  # a tie of extremes
    index = rng.integers(0, 4, (5, 3))
    index[3, 1] = index[4, 1]
    (ti, ri), (ts, rs) = _pair(rng, inp), _pair(rng, src)
    out = tnet.scatter_reduce(ti, 0, tnet.tensor(index), ts, reduce, include_self=include_self)
    ref = torch.scatter_reduce(ri, 0, torch.tensor(index), rs, reduce, include_self=include_self)
    assert_close(out, ref, TOL["ieee"], "values")
    backward_both(out, ref, rng)
    assert_close(ti.grad, ri.grad, TOL["ieee"], "input's gradient")
    assert_close(ts.grad, rs.grad, TOL["ieee"], "src's gradient")


def test_scatter_reduce_dims_nan_ints_in_place_and_errors(rng):
    inp, src = rng.standard_normal((2, 5)), rng.standard_normal((2, 4))  # src's last column is not read
    src[1, 1] = np.nan
    index = np.array([[0, 0, 4], [1, 1, 3]])
    for reduce in ("amax", "amin", "sum"):
        out = tnet.tensor(inp).scatter_reduce(-1, tnet.tensor(index), tnet.tensor(src), reduce)
        assert_close(out.nan_to_num(9.0), torch.tensor(inp).scatter_reduce(-1, torch.tensor(index), torch.tensor(src),
                                                                          reduce).nan_to_num(9.0), TOL["ieee"], reduce)
    ints, isrc = torch.tensor([[5, 7, 9]]), torch.tensor([[2, 3, 4, 1]])
    iidx = torch.tensor([[0, 0, 2, 2]])
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        assert tnet.tensor(ints).scatter_reduce(1, tnet.tensor(iidx), tnet.tensor(isrc), reduce).tolist() == \
            ints.scatter_reduce(1, iidx, isrc, reduce).tolist(), reduce
    x, ref = tnet.tensor(inp), torch.tensor(inp)
    assert x.scatter_reduce_(1, tnet.tensor(index), tnet.tensor(src), "prod", include_self=False) is x
    ref.scatter_reduce_(1, torch.tensor(index), torch.tensor(src), "prod", include_self=False)
    assert_close(x.nan_to_num(9.0), ref.nan_to_num(9.0), TOL["ieee"], "scatter_reduce_")
    empty = tnet.tensor(inp).scatter_reduce(0, tnet.zeros(0, 5, dtype=tnet.int64), tnet.zeros(0, 5), "mean")
    assert_close(empty, inp, TOL["ieee"], "empty index")
    for args, error in (((0, tnet.tensor([[0, 9]]), tnet.zeros(1, 2), "sum"), IndexError),
                        ((0, tnet.tensor([[0, 1]]), tnet.zeros(1, 2), "median"), RuntimeError),
                        ((0, tnet.tensor([[0, 1]]), tnet.zeros(1, 2, dtype=tnet.float16), "sum"), RuntimeError)):
        with pytest.raises(error):
            tnet.tensor(inp).scatter_reduce(*args)


def test_scatter_legacy_reduce_as_torch(rng):
    """scatter(..., reduce="add" | "multiply") and scatter_'s, torch's legacy form, with a src tensor or a
    value; another reduce raises RuntimeError, as torch's."""
    inp, src = rng.standard_normal((2, 5)), rng.standard_normal((2, 4))
    index = np.array([[0, 0, 4], [1, 1, 3]])
    for reduce in ("add", "multiply"):
        for lib_src in ((lambda lib: lib.tensor(src)), (lambda lib: 1.5)):
            out = tnet.tensor(inp).scatter(1, tnet.tensor(index), lib_src(tnet), reduce=reduce)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # torch's deprecation of the form
                ref = torch.tensor(inp).scatter(1, torch.tensor(index), lib_src(torch), reduce=reduce)
            assert_close(out, ref, TOL["ieee"], reduce)
    x = tnet.tensor(inp)
    assert x.scatter_(1, tnet.tensor(index), 2.0, reduce="multiply") is x
    assert_close(x, torch.tensor(inp).scatter_(1, torch.tensor(index), 2.0, reduce="multiply"), TOL["ieee"], "scatter_")
    with pytest.raises(RuntimeError):
        tnet.tensor(inp).scatter(1, tnet.tensor(index), 1.0, reduce="mean")


def test_scatter_and_gather_take_a_0d_index_or_input_as_1d():
    """A 0-d index (or input) counts as 1-d of size 1, as torch's: the Transforms tutorial's one-hot target
    `torch.zeros(10).scatter_(0, torch.tensor(y), value=1)`; a 0-d index into a 2-d input still raises."""
    for fn in (lambda lib: lib.zeros(10).scatter_(0, lib.tensor(3), value=1),
               lambda lib: lib.zeros(10).scatter(-1, lib.tensor(3), lib.tensor(5.0)),
               lambda lib: lib.zeros(10).scatter_add(0, lib.tensor(3), lib.tensor(5.0)),
               lambda lib: lib.zeros(10).scatter_reduce(0, lib.tensor(3), lib.tensor(5.0), "amax"),
               lambda lib: lib.zeros(()).scatter(0, lib.tensor([0]), 1.0),
               lambda lib: lib.arange(10.0).gather(0, lib.tensor(4))):
        out, ref = fn(tnet), fn(torch)
        assert out.shape == ref.shape and out.tolist() == ref.tolist()
    with pytest.raises(RuntimeError):
        tnet.zeros(2, 3).scatter(1, tnet.tensor(1), 7.0)
    with pytest.raises(IndexError):
        flag_checked(lambda: tnet.zeros(10).scatter(1, tnet.tensor(3), 2.0))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_values_and_gradients_as_torch(rng, reduce):
    inp, src = rng.standard_normal((3, 4, 2)), rng.standard_normal((3, 5, 2))
    index = np.array([0, 3, 0, 1, 3])
    for include_self in (True, False):
        (ti, ri), (ts, rs) = _pair(rng, inp), _pair(rng, src)
        out = ti.index_reduce(1, tnet.tensor(index), ts, reduce, include_self=include_self)
        ref = ri.index_reduce(1, torch.tensor(index), rs, reduce, include_self=include_self)
        assert_close(out, ref, TOL["ieee"], "values")
        backward_both(out, ref, rng)
        assert_close(ti.grad, ri.grad, TOL["ieee"], "input's gradient")
        assert_close(ts.grad, rs.grad, TOL["ieee"], "source's gradient")
    x = tnet.tensor(inp)
    assert x.index_reduce_(1, tnet.tensor(index), tnet.tensor(src), reduce) is x
    assert_close(x, torch.tensor(inp).index_reduce_(1, torch.tensor(index), torch.tensor(src), reduce), TOL["ieee"], "_")
    with pytest.raises(RuntimeError):
        tnet.index_reduce(tnet.tensor(inp), 1, tnet.tensor(index), tnet.tensor(src), "sum")


def test_as_strided_views_memory_and_its_gradient_sums_overlaps(rng):
    a = rng.standard_normal(12)
    (t, r) = _pair(rng, a)
    for args in (((3, 3), (2, 1)), ((2, 2), (1, 4), 3), ((4,), (3,)), ((0, 2), (1, 1))):
        out, ref = tnet.as_strided(t * 1.0, *args), torch.as_strided(r * 1.0, *args)
        assert_close(out, ref, TOL["ieee"], f"as_strided{args}")
        backward_both(out, ref, rng)
        assert_close(t.grad, r.grad, TOL["ieee"], f"gradient of as_strided{args}")
    x = tnet.tensor(a)
    view = x.as_strided((2, 3), (3, 1), 6)
    view.fill_(0.0)  # a view over x's memory
    assert x.tolist()[6:] == [0.0] * 6
    t2, r2 = _pair(rng, rng.standard_normal((3, 4)))  # a transposed input: its own strides
    out, ref = t2.t().as_strided((2, 2), (1, 4)), r2.t().as_strided((2, 2), (1, 4))
    assert_close(out, ref, TOL["ieee"], "as_strided of a transposed view")
    backward_both(out, ref, rng)
    assert_close(t2.grad, r2.grad, TOL["ieee"], "its gradient")


def test_resize_and_new_empty_strided():
    x, ref = tnet.arange(6.0), torch.arange(6.0)
    assert x.resize_(2, 3) is x and x.shape == (2, 3) and x.tolist() == ref.resize_(2, 3).tolist()
    assert x.resize_(4).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert x.resize_as_(tnet.zeros(1, 2)).shape == (1, 2) and tnet.resize_as_(x, tnet.zeros(3)).shape == (3,)
    with pytest.raises(RuntimeError):
        tnet.zeros(2, requires_grad=True).resize_(3)
    y = tnet.zeros(2, dtype=tnet.int32).new_empty_strided((2, 3), (1, 2))
    assert y.dtype == torch.int32 and y.shape == (2, 3) and y.stride() == (1, 2)


def test_as_strided_set_and_resize_as_as_torch():
    """as_strided_ and set_ re-view self's memory in place (a leaf that requires grad refuses, as torch's), the
    first with its gradient on a non-leaf; resize_as, torch's deprecated out-of-place form, reshapes with its
    warning and refuses another element count."""
    for m in (tnet, torch):
        y = m.arange(6.0)
        assert y.as_strided_((2, 2), (1, 2), 1) is y and y.stride() == (1, 2) and y.tolist() == [[1.0, 3.0], [2.0, 4.0]]
        z = m.zeros(2).set_(y)
        assert z.shape == (2, 2) and z.tolist() == y.tolist()
        assert m.zeros(2).set_().shape == (0,)
        assert m.arange(6.0).set_(m.zeros(3).untyped_storage(), 1, (2,), (1,)).tolist() == [0.0, 0.0]
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            assert m.ones(2, 3).resize_as(m.zeros(3, 2)).shape == (3, 2)
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="requested resize to 4"):
            m.ones(2, 3).resize_as(m.zeros(4))
        leaf = m.ones(4, requires_grad=True)
        for write in (lambda: leaf.as_strided_((2,), (1,)), lambda: leaf.set_(m.zeros(3))):
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
                write()
    x, r = tnet.arange(6.0).requires_grad_(), torch.arange(6.0).requires_grad_()
    for u in (x * 2, r * 2):
        u.as_strided_((2, 2), (1, 2), 1)
        u.sum().backward()
    assert x.grad.tolist() == r.grad.tolist()


COPY_VIEWS = {  # torch's *_copy op: its arguments after the input (a tensor of shape (3, 4, 5) unless named)
    "view_copy": ([5, 12],), "permute_copy": ([2, 0, 1],), "transpose_copy": (0, -1), "t_copy": ((4, 5),),
    "unsqueeze_copy": (1,), "squeeze_copy": ((3, 1, 5), 1), "select_copy": (1, -2), "slice_copy": (2, 1, None, 2),
    "expand_copy": ((1, 4, 5), [2, 3, 4, 5]), "diagonal_copy": (1, 1, 2), "alias_copy": (), "unbind_copy": (1,),
    "split_copy": (2, 1), "split_with_sizes_copy": ([1, 4], 2), "unfold_copy": (2, 3, 1),
    "as_strided_copy": ([4, 3], [1, 5], 2), "narrow_copy": (1, 1, 2),
}


@pytest.mark.parametrize("name", list(COPY_VIEWS))
def test_copy_forms_of_views_as_torch(rng, name):
    """torch.view_copy, permute_copy, ... : the view's values in new contiguous memory (each piece of unbind_copy and
    split_copy), against torch in float64, and the gradient back through the view."""
    args = COPY_VIEWS[name]
    shape, args = (args[0], args[1:]) if args and isinstance(args[0], tuple) else ((3, 4, 5), args)
    x, ref = leaf(rng, *shape)
    # torch 2.11 has no narrow_copy derivative: its reference is narrow's copy, the same values
    torch_form = (lambda t, *a: t.narrow(*a).clone()) if name == "narrow_copy" else getattr(torch, name)
    out, expected = getattr(tnet, name)(x, *args), torch_form(ref, *args)
    pieces, refs = (out, expected) if isinstance(expected, tuple) else ((out,), (expected,))
    assert isinstance(out, tuple) == isinstance(expected, tuple) and len(pieces) == len(refs)
    for o, r in zip(pieces, refs):
        assert_close(o, r, TOL["ieee"], name)
        assert o.memory.is_contiguous() and not same_storage(o.memory, x.memory)
    seeds = [rng.standard_normal(r.shape) for r in refs]
    tnet.autograd.backward(list(pieces), [tnet.tensor(g) for g in seeds])
    torch.autograd.backward(list(refs), [torch.tensor(g) for g in seeds])
    assert_close(x.grad, ref.grad, TOL["ieee"], f"{name}: gradient")


def test_detach_copy_and_view_copy_of_a_dtype():
    """detach_copy: the values in new memory, off the tape (torch's requires grad with no backward); view_copy of a
    dtype: the bits reinterpreted, copied."""
    x = tnet.randn(3, 4, requires_grad=True)
    y = tnet.detach_copy(x)
    assert not y.requires_grad and torch.equal(y.memory, x.memory) and not same_storage(y.memory, x.memory)
    z = tnet.view_copy(x.detach(), torch.int32)
    assert torch.equal(z.memory, torch.view_copy(x.memory, torch.int32)) and not same_storage(z.memory, x.memory)
    with pytest.raises(RuntimeError, match="step must be positive"):
        tnet.slice_copy(x, 0, 0, 2, 0)


def _written_at_strided_view(a, b, size, stride, offset=0):
    """torch's as_strided_scatter by its definition (a copy, src written at its strided view): torch's own op's
    gradient of input is not g off the view (its autograd formula's simplification)."""
    y = a.clone()
    y.as_strided(size, stride, offset).copy_(b)
    return y


def test_as_strided_scatter_and_top_level_as_strided_in_place_as_torch(rng):
    """torch.as_strided_scatter (and the method): src written at the copy's strided view, as torch's; the gradients
    g off the view to input, g's view to src; and torch.as_strided_ at the top level."""
    x, src = leaf(rng, 4, 5), leaf(rng, 3, 2)
    out = check(lambda a, b: tnet.as_strided_scatter(a, b, (3, 2), (5, 2), 1),
                lambda a, b: _written_at_strided_view(a, b, (3, 2), (5, 2), 1), [x, src], rng)
    assert_close(out, torch.as_strided_scatter(x[1], src[1], (3, 2), (5, 2), 1), 0.0, "as torch's")
    check(lambda a, b: a.as_strided_scatter(b, [3, 2], [4, 1]),
          lambda a, b: _written_at_strided_view(a, b, (3, 2), (4, 1)), [leaf(rng, 4, 5), leaf(rng, 3, 2)], rng)
    t = tnet.arange(12.0)
    assert tnet.as_strided_(t, (2, 3), (1, 4)) is t
    assert t.tolist() == torch.arange(12.0).as_strided((2, 3), (1, 4)).tolist()


# ---- slicing gradients added in place (tensor.Piece) ------------------------------------------

def _pieces_loss(m, x):
    """A loss over pieces of one tensor: chunk, split, overlapping slices, a select, a narrow."""
    y = x * 2.0
    p, q, r = m.chunk(y, 3, 1)
    a, b = m.split(y, [1, 5], 1)
    return ((p * 1.0 + q * 2.0 + r * 3.0).sum() + (y[:, 1:4] * y[:, 2:5]).sum() + (y[0] * 5.0).sum()
            + (a * a).sum() + b.narrow(2, 1, 2).sum())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_slicing_gradients_add_up_in_place_as_torchs(rng, dtype, channels_last):
    """Pieces of one tensor (chunk, split, overlapping slices, select, narrow) and of a leaf (over two backwards,
    the second added into .grad in place): their gradients as torch's, in the input's layout; a leaf with a hook
    and autograd.grad take the full gradient."""
    x0 = rng.standard_normal((2, 6, 4, 3)).astype(np.float32)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    a = tnet.tensor(x0, dtype=dtype).to(memory_format=fmt).requires_grad_(True)
    b = torch.tensor(x0).to(dtype).to(memory_format=fmt).double().requires_grad_(True)
    for _ in range(2):
        _pieces_loss(F, a).backward()
        _pieces_loss(torch, b).backward()
    assert_close(a.grad, b.grad, tol_for(dtype), "pieces")
    assert is_channels_last(a.grad.memory) == channels_last
    seen = []
    a.grad = None
    a.register_hook(lambda g: seen.append(g.shape))
    for m, x in ((F, a), (torch, b)):
        x.grad = None
        for _ in range(2):
            p, q = m.split(x, [2, 4], 1)
            ((p * 3.0).sum() + (q * q).sum()).backward()
    assert_close(a.grad, b.grad, tol_for(dtype), "a leaf's pieces")
    assert seen == [a.shape] * 2  # the hook saw the whole gradient, once a backward
    got = tnet.autograd.grad(F.chunk(a, 2, 1)[1].sum(), a)[0]
    want = torch.autograd.grad(torch.chunk(b, 2, 1)[1].sum(), b)[0]
    assert_close(got, want, tol_for(dtype), "autograd.grad of a piece")


def test_chunks_backward_adds_each_piece_into_one_buffer(monkeypatch, rng):
    """chunk(3)'s backward: one full gradient buffer, the first piece copied into it and the others added (a copy_kernel
    launch over a piece each: ADD 0, 2, 2), no element-wise add over the whole input."""
    from helpers import Launches
    from tnet.kernels import pointwise
    x = tnet.tensor(rng.standard_normal((4, 9)).astype(np.float32), requires_grad=True)
    p, q, r = F.chunk(x * 1.0, 3, 1)
    loss = (p + q + r).sum()
    copies, elementwise = [], []
    monkeypatch.setattr(copy_module, "copy_kernel", Launches(copy_module.copy_kernel, copies))
    monkeypatch.setattr(pointwise, "pointwise_kernel", Launches(pointwise.pointwise_kernel, elementwise))
    loss.backward()
    assert sorted((args[4], kwargs["ADD"]) for _, _, args, kwargs in copies) == [(12, 0), (12, 2), (12, 2)]
    assert [kwargs["OP"] for _, _, args, kwargs in elementwise if args[4] == 36] == ["mul"]  # x * 1.0's
    assert_close(x.grad, torch.ones(4, 9, dtype=torch.float64), TOL["ieee"], "x.grad")


def test_add_into_adds_through_strides(rng):
    """kernels/copy.add_into: dst += src through both sides' strides; a dst that overlaps itself is refused."""
    a = tnet.tensor(rng.standard_normal((5, 6)), dtype=tnet.float32).memory
    g = tnet.tensor(rng.standard_normal((2, 5)), dtype=tnet.float32).memory.t()
    want = a.clone()
    want[:, 1:3] += g
    copy_module.add_into(a[:, 1:3], g)
    assert torch.equal(a, want)
    with pytest.raises(RuntimeError):
        copy_module.add_into(a.expand(2, 5, 6), torch.ones(2, 5, 6, device=a.device))


def test_stack_node_leads_to_its_inputs_as_torchs():
    """StackBackward0's next_functions are the stacked tensors' own nodes (an input without grad an edge to None), as
    torch's, not views made for the join; first and second derivatives through it as torch's."""
    def run(lib):
        a = lib.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        b = lib.tensor([[5., 6.], [7., 8.]], requires_grad=True)
        c = lib.ones(2, 2)
        y = lib.stack([a, b * 2, c], 1)
        edges = [None if n is None else type(n).__name__ for n, _ in y.grad_fn.next_functions]
        w = lib.tensor(np.arange(12.).reshape(2, 3, 2).astype(np.float32))
        ga, gb = lib.autograd.grad((y ** 2 * w).sum(), (a, b), create_graph=True)
        (ga.sum() + (gb ** 2).sum()).backward()
        return edges, [t.tolist() for t in (ga, gb, a.grad, b.grad)]
    assert run(tnet) == run(torch)
    assert run(tnet)[0] == ["AccumulateGrad", "MulBackward0", None]


def test_flatten_of_one_dim_is_its_input_as_torchs():
    """torch.flatten(x, 1) of a matrix (start_dim == end_dim) returns x itself, its grad_fn the matrix's (a head's
    flatten of a Linear's output keeps AddmmBackward0); a 0-d tensor still becomes 1-D."""
    for lib in (tnet, torch):
        x = lib.ones(2, 3, requires_grad=True) * 2
        assert lib.flatten(x, 1) is x and x.flatten(0, 0) is x and x.flatten(-1) is x
        assert lib.flatten(x) is not x and tuple(lib.flatten(x).shape) == (6,)
        v = lib.ones(3)
        assert v.flatten() is v and tuple(lib.ones(()).flatten().shape) == (1,)
        assert type(lib.flatten(x, 1).grad_fn).__name__ == "MulBackward0"
