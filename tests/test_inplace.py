"""torch's in-place Tensor methods (add_, mul_, copy_, zero_, normal_, x += y, ...) and the small
Tensor conveniences scripts use (requires_grad_, retain_grad, new_*, type, stride, mT, roll,
repeat_interleave, ...), against torch in float64: values, versions, views that see the write,
gradients through in-place ops on non-leaves, torch's errors, and a manual SGD step."""
import numpy as np
import pytest
import torch

import tnet
from tnet import amp, nn
from helpers import MEMORY_OPS, TOL, Recorder, assert_close, check, flag_checked, leaf

# (method, args): each applied to a strided view, in tnet and torch
OPS = [("add_", (2.5,)), ("add_", ("other",), {"alpha": -2}), ("sub_", ("row",), {"alpha": 3}), ("mul_", ("row",)),
       ("div_", (-4.0,)), ("zero_", ()), ("fill_", (1.5,)), ("clamp_", (-0.5, 0.5)), ("clamp_min_", (0.1,)),
       ("relu_", ()), ("abs_", ()), ("neg_", ()), ("exp_", ()), ("copy_", ("row",)), ("masked_fill_", ("mask", 7.0)),
       ("__iadd__", ("other",)), ("__isub__", (1,)), ("__imul__", ("row",)), ("__itruediv__", ("other",))]


def _args(args, mod, rng_values):
    """The placeholders of OPS as tnet or torch tensors (mod: tnet or torch)."""
    def make(a):
        if a == "mask":
            return mod.tensor(rng_values["mask"])
        if isinstance(a, str):
            return mod.tensor(rng_values[a]) if mod is tnet else torch.tensor(rng_values[a], dtype=torch.float64)
        return a
    return [make(a) for a in args]


def test_inplace_ops_write_through_a_strided_view_as_torch(rng):
    base = rng.standard_normal((3, 5))
    values = {"other": rng.standard_normal((3, 2)), "row": rng.standard_normal(2) + 3.0,
              "mask": rng.standard_normal((3, 2)) > 0}
    for name, args, *kw in OPS:
        kw = kw[0] if kw else {}
        for strided in (True, False):  # a view, written through; dense memory, written by the kernel itself
            x, ref = (tnet.tensor(base), torch.tensor(base)) if strided else (tnet.tensor(base[:, :2]),
                                                                              torch.tensor(base[:, :2]))
            v, rv = (x[:, 1:5:2], ref[:, 1:5:2]) if strided else (x, ref)
            out = getattr(v, name)(*_args(args, tnet, values), **kw)
            getattr(rv, name)(*_args(args, torch, values), **kw)
            assert out is v, name
            assert_close(x, ref, TOL["ieee"], name)  # the base saw the write, nothing else changed
            assert x._version == ref._version == v._version == 1, name
    x = tnet.tensor(base)
    x.abs_().sqrt_()
    assert_close(x, torch.tensor(base).abs().sqrt(), TOL["ieee"], "sqrt_")


def test_operators_modify_in_place_and_torchs_errors():
    x = tnet.tensor([[1.0, 2.0], [3.0, 4.0]])
    alias = x
    x += 1
    x *= tnet.tensor([2.0, 0.5])
    x -= tnet.tensor([[1.0], [2.0]])
    x /= 2
    assert alias is x and x.numpy().tolist() == [[1.5, 0.25], [3.0, 0.25]]
    i = tnet.tensor([1, 2, 3])
    i += 2
    i *= 3
    assert i.dtype == torch.int64 and i.numpy().tolist() == [9, 12, 15]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i += 0.5
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i /= 2
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[2, 2\]"):
        tnet.ones(2).add_(tnet.ones(2, 2))
    h = tnet.ones(2, 3, dtype=tnet.float16)
    h.add_(tnet.tensor([0.5, 1.0, 2.0]))  # a float32 operand, the result cast to float16
    assert h.dtype == torch.float16 and h.numpy().tolist() == [[1.5, 2.0, 3.0]] * 2
    b = tnet.zeros(2, 3, dtype=tnet.int64)
    b.copy_(tnet.tensor([1.7, -2.2, 3.0]))  # broadcast and cast, as torch
    assert b.numpy().tolist() == torch.zeros(2, 3, dtype=torch.int64).copy_(torch.tensor([1.7, -2.2, 3.0])).tolist()
    i.masked_fill_(i > 10, 2.9)
    assert i.numpy().tolist() == [9, 2, 2]
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        i.masked_fill_(i, 0)


def test_every_augmented_assignment_writes_in_place_as_torch():
    """//=, %=, **=, &=, |= and ^= write the tensor itself, as torch's (they rebound x to a new tensor: a view's
    base, or another name of a mask, kept the old values), with gradients through **= on a non-leaf."""
    results = []
    for m in (torch, tnet):
        got = []
        x = m.tensor([7, -7, 9])
        v = x[:2]
        v //= 2
        w = x[1:]
        w %= 4
        got.append(x.tolist())
        f = m.tensor([1.5, 2.0])
        g = f.view(2)
        g **= 2
        got.append(f.tolist())
        mask = m.tensor([True, True, False])
        kept = mask
        mask &= m.tensor([True, False, True])
        mask |= m.tensor([False, False, True])
        mask ^= m.tensor([True, False, False])
        got.append(kept.tolist())
        p = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = p * 1.0
        h **= 3
        h.sum().backward()
        got.append(p.grad.tolist())
        results.append(got)
    assert results[1] == results[0] == [[3, 0, 1], [2.25, 4.0], [False, False, True], [3.0, 12.0, 27.0]]


def _chain(mod, x, w, s):
    """In-place ops on non-leaves, as a script writes them; returns what backward starts from."""
    y = x * 2
    early = y + 1  # read before the writes: its gradient goes through y's first value
    y.add_(w, alpha=3)
    y.mul_(w)
    y -= s
    y.div_(1.5)
    y.clamp_(-2.0, 4.0)
    y.abs_()
    y.exp_()
    z = mod.zeros(2, 3)
    z.copy_(s)  # broadcast from s's [3]
    z.masked_fill_(x > 0.5, 0.25)
    z.mul_(x)
    return (y * early).sum() + z.sum()


def test_gradients_through_in_place_ops_on_non_leaves_as_torch(rng):
    x, xr = leaf(rng, 2, 3, values=rng.standard_normal((2, 3)))
    w, wr = leaf(rng, 3, values=rng.uniform(0.5, 1.0, 3))
    s, sr = leaf(rng, 3, values=rng.standard_normal(3))
    check(lambda a, b, c: _chain(tnet, a, b, c), lambda a, b, c: _chain(torch, a, b, c),
          [(x, xr), (w, wr), (s, sr)], rng)
    # torch's rebase: y = x * 2; y.add_(1) gives x the gradient 2; a fill or draw gives 0
    x = tnet.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.add_(1)
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    assert x.grad.numpy().tolist() == [2.0, 2.0]
    x.grad = None
    y = x * 2
    y.zero_()
    u = x * 3
    u.normal_()
    (y + u).sum().backward()
    assert x.grad.numpy().tolist() == [0.0, 0.0]


def _quotients_written_in_place(lib, a, b):
    """Writes into a quotient, as RepDistiller's losses do (`torch.div(p, q).log_()`, `out[out != out] = 0`),
    and divides in place by a tensor that requires grad."""
    q = lib.div(a, b).abs().add(0.5)
    r = lib.div(q, b.abs()).log_()
    s = a / b
    s[s > 0.5] = 0
    t = (a * 1).div_(b)
    return r + s * 2 + t * 3


def test_quotient_written_in_place_keeps_its_gradient_as_torch(rng):
    """div's gradient for the divisor reads the operands, as torch's, not the quotient."""
    a, ar = leaf(rng, 2, 5, values=rng.standard_normal((2, 5)))
    b, br = leaf(rng, 5, values=rng.uniform(0.5, 2.0, 5) * rng.choice([-1, 1], 5))
    check(lambda x, y: _quotients_written_in_place(tnet, x, y), lambda x, y: _quotients_written_in_place(torch, x, y),
          [(a, ar), (b, br)], rng)


def test_in_place_errors_as_torch():
    x = tnet.tensor([1.0, 2.0], requires_grad=True)
    for op in (lambda: x.add_(1), lambda: x.zero_(), lambda: x.normal_()):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            op()
    with tnet.no_grad():
        x.mul_(2)
    assert x.numpy().tolist() == [2.0, 4.0] and x._version == 1 and x.is_leaf
    y = x.exp()
    y.add_(1)  # exp's backward reads its output, now changed: torch's error at backward
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(3)
    grid = x.view(1, 2) * tnet.ones(3, 1)
    strided = grid.t()  # a strided view beyond the written view's dense base (strided[:, 0]) is not rebased
    strided[:, 0][:1].mul_(3)
    with pytest.raises(RuntimeError, match="after a view of it was modified by an inplace operation"):
        strided.sum().backward()
    y = x * 2
    v = y[1:]
    y.mul_(3)
    with pytest.raises(RuntimeError, match="a view .* of a tensor that was later modified"):
        v.sum().backward()


def _strided_views_written(m, w):
    """monodepth2's Project3D: a permuted view of a dense tensor, written through its own views (`p[..., 0] /= w`
    and a setitem of a slice), then read; and a view of a view of a transpose written with mul_."""
    p = (w * 2).view(2, 3, 4).permute(0, 2, 1)
    p[..., 0] /= 4
    p[..., 1] /= 2
    p[:, 1:3, 2] = p[:, 1:3, 2] * 3 + w[0, :2]
    q = (w * 1).view(4, 6).t()
    q[1][2:].mul_(-3)
    return ((p - 0.5) * m.arange(24.0).view(2, 4, 3)).sum() + (q * q).sum()


def test_strided_views_of_a_written_view_are_rebased_as_torch(rng):
    """The strided views that a written view was made from are rebased as views of their dense base (torch
    regenerates every view's node): a read after the write sees the write and passes its gradient on."""
    w0 = rng.standard_normal((2, 12)).astype(np.float32)
    w, wr = tnet.tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    out, ref = _strided_views_written(tnet, w), _strided_views_written(torch, wr)
    out.backward()
    ref.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), wr.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_manual_sgd_and_weight_init_under_no_grad_as_torch(rng, ieee):
    w0, x0, t0 = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    w = nn.Parameter(w0)
    wr = torch.tensor(w0, requires_grad=True)
    x, t = tnet.tensor(x0), tnet.tensor(t0)
    for _ in range(2):
        ((x @ w.T - t) ** 2).mean().backward()
        ((torch.tensor(x0) @ wr.T - torch.tensor(t0)) ** 2).mean().backward()
        with tnet.no_grad():
            w -= 0.1 * w.grad
            w.grad.zero_()
        with torch.no_grad():
            wr -= 0.1 * wr.grad
            wr.grad.zero_()
    assert_close(w, wr, TOL["ieee"], "weights after two steps")
    assert w.is_leaf and w.requires_grad and w._version == 2
    low = amp.low_copy(w, torch.float16)  # the 16-bit copy autocast reads follows the write
    with tnet.no_grad():
        w.fill_(0.5)
    assert np.all(low.cpu().numpy() == 0.5)


def test_normal_and_uniform_draw_from_tnets_generator():
    x = tnet.zeros(64, 65)
    tnet.manual_seed(5)
    v = x[:, 1:]
    v.normal_(2.0, 3.0)
    a = x.numpy()
    assert np.all(a[:, 0] == 0) and abs(a[:, 1:].mean() - 2.0) < 0.2 and abs(a[:, 1:].std() - 3.0) < 0.2
    tnet.manual_seed(5)
    assert np.array_equal(tnet.zeros(64, 64).normal_(2.0, 3.0).numpy(), a[:, 1:])
    u = tnet.empty(4096, dtype=tnet.float16).uniform_(-1.0, 3.0).numpy()
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.1
    with pytest.raises(TypeError, match="must be a numpy Generator"):  # a tnet.Generator draws (test_random.py)
        x.normal_(generator=torch.Generator())


def test_requires_grad_and_retain_grad_as_torch(rng):
    x = tnet.tensor([1.0, 2.0, 3.0]).requires_grad_()
    xr = torch.tensor([1.0, 2.0, 3.0]).requires_grad_()
    y, yr = x * x, xr * xr
    y.retain_grad()
    yr.retain_grad()
    assert y.retains_grad and not x.retains_grad
    (y * 3).sum().backward()
    (yr * 3).sum().backward()
    assert y.grad.numpy().tolist() == yr.grad.tolist() == [3.0] * 3
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    for lib, z in ((tnet, x * 2), (torch, xr * 2)):  # the attribute too, either flag (requires_grad_(True) is allowed)
        for flag in (False, True):
            with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
                z.requires_grad = flag
        assert z.requires_grad_(True).requires_grad
        w = lib.ones(2) * 2  # made without grad: a leaf, whose flag may be set
        w.requires_grad = True
        assert w.is_leaf and w.requires_grad
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        tnet.ones(2).retain_grad()
    assert not x.requires_grad_(False).requires_grad


def test_tensor_conveniences_as_torch(rng):
    a = rng.standard_normal((2, 3, 4))
    x, ref = tnet.tensor(a, dtype=tnet.float16), torch.tensor(a, dtype=torch.float16)
    for name, args, kw in [("new_zeros", (2, 3), {}), ("new_ones", ((2,),), {}), ("new_full", ((2, 2), 7), {}),
                           ("new_zeros", (3,), {"dtype": torch.int64}), ("new_tensor", ([1, 2],), {}),
                           ("new_tensor", ([1.5],), {"dtype": torch.int32})]:
        out, want = getattr(x, name)(*args, **kw), getattr(ref, name)(*args, **kw)
        assert out.dtype == want.dtype and out.numpy().tolist() == want.tolist(), name
    assert x.new_empty(2, 5).shape == (2, 5)
    assert x.view_as(tnet.ones(4, 6)).shape == (4, 6) and x.reshape_as(tnet.ones(24)).shape == (24,)
    assert x.type() == ref.type().replace("torch.", "torch.cuda." if tnet.DEVICE.type == "cuda" else "torch.")
    assert x.type(torch.float32).dtype == torch.float32 and x.type("torch.cuda.LongTensor").dtype == torch.int64
    with pytest.raises(TypeError, match="no float64"):
        x.double()
    t = x.transpose(0, 2)[1:]
    rt = ref.transpose(0, 2)[1:]
    assert (t.stride(), t.stride(-1), t.storage_offset(), t.is_contiguous(), t.element_size(), t.nelement()) == \
           (rt.stride(), rt.stride(-1), rt.storage_offset(), rt.is_contiguous(), rt.element_size(), rt.nelement())
    assert t.data_ptr() == t.memory.data_ptr() and tnet.numel(t) == 18 and x.mT.shape == (2, 4, 3)
    with pytest.raises(RuntimeError, match="mT is only supported on matrices"):
        tnet.ones(3).mT
    n = np.arange(3)
    assert tnet.is_tensor(x) and not tnet.is_tensor(ref)
    assert tnet.as_tensor(x) is x and tnet.as_tensor(n).dtype == torch.int64
    assert tnet.from_numpy(n).numpy().tolist() == [0, 1, 2]


def test_roll_repeat_interleave_masked_fill_as_torch(rng):
    x, xr = leaf(rng, 3, 4)
    m = rng.standard_normal((3, 4)) > 0
    check(lambda a: tnet.cat([a.roll(1), a.roll((-1, 5), (0, 1)), a.roll(2, -1), a.roll(0, 0)]),
          lambda a: torch.cat([a.roll(1), a.roll((-1, 5), (0, 1)), a.roll(2, -1), a.roll(0, 0)]), [(x, xr)], rng)
    check(lambda a: tnet.cat([a.repeat_interleave(2, 0).flatten(), a.repeat_interleave(3), a.repeat_interleave(1, 1)
                              .flatten(), tnet.repeat_interleave(a, tnet.tensor([0, 2, 1, 1]), dim=1).flatten()]),
          lambda a: torch.cat([a.repeat_interleave(2, 0).flatten(), a.repeat_interleave(3), a.repeat_interleave(1, 1)
                               .flatten(), torch.repeat_interleave(a, torch.tensor([0, 2, 1, 1]), dim=1).flatten()]),
          [(x, xr)], rng)
    v, vr = leaf(rng, values=np.array(1.5))
    check(lambda a, b: a.masked_fill(tnet.tensor(m), b), lambda a, b: a.masked_fill(torch.tensor(m), b),
          [(x, xr), (v, vr)], rng)
    check(lambda a: tnet.masked_fill(a, tnet.tensor(m[0]), -2.0), lambda a: a.masked_fill(torch.tensor(m[0]), -2.0),
          [(x, xr)], rng)


@pytest.mark.parametrize("counts,dtype", [([2, 0, 3, 1], torch.int64), ([1, 2], torch.int32), ([], torch.int64)])
def test_repeat_interleave_of_counts_alone_as_torch(counts, dtype):
    """torch.repeat_interleave(counts): each index repeated counts[i] times, in counts' dtype (a graph
    batch's node-to-graph vector, as GIN scripts build it), and torch's errors."""
    out, ref = tnet.repeat_interleave(tnet.tensor(counts, dtype=dtype)), torch.repeat_interleave(torch.tensor(counts, dtype=dtype))
    assert out.dtype == ref.dtype and out.tolist() == ref.tolist()
    for bad, error in (([2.0, 1.0], NotImplementedError), ([[1, 2]], RuntimeError), ([1, -1], RuntimeError)):
        for lib in (tnet, torch):
            with pytest.raises(error):
                lib.repeat_interleave(lib.tensor(bad))


def test_narrow_copy_and_unsafe_splits_as_torch(rng):
    """narrow_copy (a copy: a write to it leaves the input), and unsafe_chunk/unsafe_split/unsafe_split_with_sizes,
    torch's forms of chunk and split without autograd's checks of writes to the pieces; the gradients of the pieces."""
    x, xr = leaf(rng, 3, 5)
    check(lambda a: tnet.cat([tnet.narrow_copy(a, 1, 1, 3).flatten(), a.narrow_copy(0, 2, 1).flatten()]),
          # torch's CUDA narrow_copy has no derivative: its reference is narrow's copy
          lambda a: torch.cat([torch.narrow(a, 1, 1, 3).clone().flatten(), a.narrow(0, 2, 1).clone().flatten()]),
          [(x, xr)], rng)
    check(lambda a: tnet.cat([t.flatten() * (i + 1) for i, t in enumerate(
              tnet.unsafe_split(a, 2, 1) + a.unsafe_chunk(2) + a.unsafe_split_with_sizes([1, 4], 1) + a.unsafe_split(2, dim=0))]),
          lambda a: torch.cat([t.flatten() * (i + 1) for i, t in enumerate(
              torch.unsafe_split(a, 2, 1) + a.unsafe_chunk(2) + a.unsafe_split_with_sizes([1, 4], 1) + a.unsafe_split(2, dim=0))]),
          [(x, xr)], rng)
    y = tnet.ones(2, 3)
    tnet.narrow_copy(y, 1, 0, 2).fill_(5.0)
    assert y.sum().item() == 6.0


def test_view_read_before_its_base_is_written_as_torch(rng):
    """A view read only before its base is written in place (VoxelMorph's `loc[:, i] = 2 * (loc[:, i] / n - 0.5)`
    slice by slice) passes its gradient to the base of then, as torch's; a view read after the write (whose
    values changed under it: torch rebases it, tnet does not) still raises."""
    x, xr = leaf(rng, 2, 3, 4)

    def normalise(lib, a):
        y = a * 1
        for i in range(3):
            y[:, i, ...] = 2 * (y[:, i, ...] / (i + 2) - 0.5)
        return y[..., [2, 1, 0, 3]]
    check(lambda a: normalise(tnet, a), lambda a: normalise(torch, a), [(x, xr)], rng)
    y = x * 1
    v = y[:, 0]
    y.mul_(3)
    with pytest.raises(RuntimeError, match="does not rebase views"):
        (v * 2).sum().backward()
    # so does a view of a view, which ends in the base's own shape (it gave the base's gradient of before the write)
    for chain in (lambda a: a.mT.mT, lambda a: a.view(-1).view(a.shape), lambda a: a.unsqueeze(0).squeeze(0)):
        y = x * 1
        v = chain(y)
        y.mul_(3)
        with pytest.raises(RuntimeError, match="does not rebase views"):
            (v * 2).sum().backward()


def test_augmented_assignment_from_the_same_tensor_as_torch(rng):
    """`boxes[:, 2:] += boxes[:, :2]` (xywh to xyxy) is boxes.__setitem__(i, boxes[i].__iadd__(boxes[:, :2])): the
    store-back of the view just written is no second write (it gave every gradient 0), here and through a view."""
    x, xr = leaf(rng, 3, 4)

    def xyxy(lib, a):
        b = a * 1
        b[:, 2:] += b[:, :2]
        c = b[1:]
        c[:, :2] -= c[:, 2:]
        return b
    check(lambda a: xyxy(tnet, a), lambda a: xyxy(torch, a), [(x, xr)], rng)


def test_clamp_output_written_in_place_as_torch(rng):
    """clamp saves its input alone, as torch's: its output may be written in place before the backward."""
    x, xr = leaf(rng, 3, 4)

    def clamped(lib, a):
        y = a.clamp(-0.5, 0.5)
        y.mul_(2)
        return y
    check(lambda a: clamped(tnet, a), lambda a: clamped(torch, a), [(x, xr)], rng)


@pytest.mark.parametrize("name", ["maximum", "minimum", "atan2", "fmod"])
def test_binary_output_written_in_place_as_torch(rng, name):
    """maximum, minimum, atan2 and fmod save their operands alone, as torch's: the output may be written in place
    before the backward (a box's `torch.min(x2, x2g).clamp_(min=0)`)."""
    x, xr = leaf(rng, 3, 4)
    w, wr = leaf(rng, 3, 4, positive=True)

    def written(lib, a, b):
        y = getattr(lib, name)(a, b)
        y.mul_(2)
        return y
    check(lambda a, b: written(tnet, a, b), lambda a, b: written(torch, a, b), [(x, xr), (w, wr)], rng)


def test_in_place_ops_use_torch_for_memory_only(rng):
    x = tnet.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = tnet.tensor(rng.standard_normal(4), requires_grad=True)
    with Recorder() as rec:
        y = x * 2
        y = y.add_(w, alpha=2).mul_(w).sub_(1).div_(w).clamp_(-1, 1).abs_().sqrt_().exp_().neg_().relu_() * 1
        y.masked_fill_(y > 0, w[0])  # not relu_'s output itself, which its backward reads
        z = tnet.zeros(3, 4)
        z[:, 1:].copy_(x[0, 1:].detach())
        z[0] = 1.0
        z[z > 0.5] = 2.0
        z[1:, :2] = y[0, 1:3]
        (y.sum() + z.sum()).backward()
        with tnet.no_grad():
            x -= 0.1 * x.grad
            x[:, :2].zero_()
            x.fill_(1).normal_(0, 2).uniform_(-1, 1)
        x.roll(1, 0).repeat_interleave(2).masked_fill(x.flatten().repeat_interleave(2) > 0, 0.0)
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


def _assign(mod, x, v):
    y = x * 1
    y[:, 0] = 2.5
    y[1, 1:] = v[:3]  # a tensor, cast and broadcast
    y[0, ::2] = v[3]
    y[y > 1.0] = -1.0
    return y * x


def test_setitem_as_torch(rng):
    x, xr = leaf(rng, 3, 4, values=rng.standard_normal((3, 4)))
    v, vr = leaf(rng, 4, values=rng.standard_normal(4))
    check(lambda a, b: _assign(tnet, a, b), lambda a, b: _assign(torch, a, b), [(x, xr), (v, vr)], rng)
    m = tnet.zeros(2, 3, dtype=torch.bool)
    m[0, 1:] = True
    assert m.numpy().tolist() == [[False, True, True], [False, False, False]] and m._version == 1
    m[tnet.tensor([1])] = True
    assert m.numpy().tolist() == [[False, True, True], [True, True, True]] and m._version == 2
    with pytest.raises(RuntimeError, match="cannot be broadcast to indexing result of shape"):
        x.detach()[0] = tnet.ones(3)


I, J, MASK = np.array([0, 3, -1, 1]), np.array([[1], [3], [0]]), np.array([True, False, True, True])

# (index(L), value shape): L makes an index tensor of the library from a numpy array; x is (4, 5, 6)
PUTS = [
    (lambda L: L(I), (5, 6)), (lambda L: (L(I), L(I)), (4, 6)), (lambda L: (range(4), L(np.array([1, 2, 3, 4]))), (6,)),
    (lambda L: (L(I), slice(None), slice(1, 3)), (1, 5, 2)), (lambda L: (L(J), slice(None), L(I)), (3, 1, 5)),
    (lambda L: (Ellipsis, [0, 2]), ()), (lambda L: (slice(None), [0, 2], 1), (2,)), (lambda L: (L(MASK), slice(1, None)), (3, 4, 6)),
    (lambda L: (L(MASK),), (6,)), (lambda L: (L(MASK), 2), ()), (lambda L: (slice(1, 3), L(J), slice(None, None, 2)), (3, 1, 1)),
    (lambda L: (None, L(I).int(), 2, L(I)), (1, 4)), (lambda L: (True, 0, L(J)), (6,)),
    (lambda L: [[0, 3, 1], [1, 1, 4]], (3, 6)),  # a list of sequences is a tuple of indices, as torch (which warns)
]


@pytest.mark.parametrize("k", range(len(PUTS)))
def test_advanced_setitem_as_torch(rng, k):
    """x[index] = v for advanced indices: the values, x's gradient (none where overwritten) and v's
    (gathered, summed over broadcasting) against torch; and a number into a tensor without grad."""
    index, value_shape = PUTS[k]
    xn, vn, wn = (rng.standard_normal(s).astype(np.float32) for s in ((4, 5, 6), value_shape, (4, 5, 6)))
    results = []
    for lib, L, dtype in ((tnet, tnet.tensor, torch.float32), (torch, torch.tensor, torch.float64)):
        x, v = (lib.tensor(a, dtype=dtype, requires_grad=True) for a in (xn, vn))
        y = x * 1
        y[index(L)] = v
        (y * lib.tensor(wn, dtype=dtype)).sum().backward()
        z = lib.tensor(xn, dtype=dtype)
        z[index(L)] = 7.5
        results.append([np.asarray(t.tolist()) for t in (y, x.grad, v.grad, z)])
    for what, got, want in zip(["values", "x's gradient", "v's gradient", "a number"], *results):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=what)


def test_advanced_setitem_of_a_strided_tensor_writes_through(rng):
    """Into a view (a transposed slice) and a channels-last tensor, with repeated indices given one
    value; int tensors take int values (a float tensor raises, as torch's)."""
    base = tnet.zeros(5, 6)
    view = base.T[1:5]  # (4, 5), strides (1, 6)
    view[tnet.tensor([0, 3, 3]), tnet.tensor([4, 0, 0])] = tnet.tensor([1.0, 2.0, 2.0])
    ref = torch.zeros(5, 6)
    ref.T[1:5][[0, 3, 3], [4, 0, 0]] = torch.tensor([1.0, 2.0, 2.0])
    assert base.numpy().tolist() == ref.tolist()
    x = tnet.zeros(2, 3, 4, 5)
    x.memory = x.memory.contiguous(memory_format=torch.channels_last)
    x[:, [2, 0], 1:3, [4, 1]] = tnet.arange(4).float().view(1, 4, 1)[:, :2].reshape(2, 1)
    r = torch.zeros(2, 3, 4, 5)
    r[:, [2, 0], 1:3, [4, 1]] = torch.arange(4).float().view(1, 4, 1)[:, :2].reshape(2, 1)
    assert x.numpy().tolist() == r.tolist()
    n = tnet.zeros(3, 4, dtype=torch.int64)
    n[[0, 2], [-1, 1]] = tnet.tensor([1, -2])
    assert n.numpy().tolist() == [[0, 0, 0, 1], [0, 0, 0, 0], [0, -2, 0, 0]]
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        n[[0, 2], [-1, 1]] = tnet.tensor([1.7, -2.2])  # torch's too (fuzz round 14)


def test_setitem_drops_the_values_leading_ones_as_torch(rng):
    """A value with more dims than the indexed part, the extra ones of size 1, is written as torch
    writes it (CleanRL's GAE: `advantages[t] = delta` of a [1, n] delta into [n]), basic and advanced
    indexing; its gradient keeps the value's shape. A leading dim of another size still raises."""
    xn, vn, wn = rng.standard_normal((4, 2)), rng.standard_normal((1, 1, 2)), rng.standard_normal((4, 2))
    results = []
    for lib in (tnet, torch):
        x, v = (lib.tensor(a, dtype=torch.float32, requires_grad=True) for a in (xn, vn))
        y = x * 1
        y[1] = v
        y[[0, 3]] = v * 2
        (y * lib.tensor(wn, dtype=torch.float32)).sum().backward()
        results.append([np.asarray(t.tolist()) for t in (y, x.grad, v.grad)])
    for what, got, want in zip(["values", "x's gradient", "v's gradient"], *results):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=what)
    with pytest.raises(RuntimeError):
        tnet.zeros(4, 2)[1] = tnet.ones(2, 1, 2)


def test_advanced_setitem_errors():
    x = tnet.zeros(4, 5)
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 1 with size 5"):
        flag_checked(lambda: x.__setitem__((tnet.tensor([0]), tnet.tensor([9])), 1.0))
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 0 with size 4"):
        flag_checked(lambda: x.__setitem__(tnet.tensor([-5]), 1.0))
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[3\] cannot be broadcast to indexing result of shape \[2, 5\]"):
        x[[0, 1]] = tnet.ones(3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tnet.zeros(4, 5, requires_grad=True)[[0, 1], 2] = 1.0


def test_in_place_on_a_view_in_the_graph_as_torch(rng):
    """GhostNet's `out = torch.cat([x1, x2], 1)[:, :oup]; out += shortcut`: an in-place op with grad on
    a view of a tensor in the graph gives torch's values and gradients, through the view and through
    its dense base read after the write (torch's CopySlices), as an activation's inplace=True on a
    channel slice does."""
    w0, y0 = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 2, 4)).astype(np.float32)
    results = []
    for lib in (torch, tnet):
        w, y = lib.tensor(w0, requires_grad=True), lib.tensor(y0, requires_grad=True)
        v = lib.cat([w * 2, w.exp()], 1)[:, 1:4][:, :2]  # a view of a view: both bases change
        v += y * 3
        v.mul_(2)
        (v * w[:, :2]).sum().backward()
        first = [a.detach().numpy() for a in (v, w.grad, y.grad)]
        w.grad = None
        base = w * 2
        lib.nn.functional.relu(base[:, 1:], inplace=True)
        (base * base.exp()).sum().backward()
        results.append(first + [a.detach().numpy() for a in (base, w.grad)])
    for out, ref in zip(*results):
        assert_close(out, ref, TOL["ieee"])


def test_residual_add_with_grad_writes_in_place_as_torch(rng):
    """out += shortcut on a non-leaf with grad (ResNet's residual) writes out's memory itself, one
    kernel, and gives torch's gradients to both operands."""
    values = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    grads = []
    for lib in (tnet, torch):
        a, b, w = (lib.tensor(v, requires_grad=True) for v in values)
        out = a * w
        memory = out.memory if lib is tnet else out
        before = memory.data_ptr()
        out += b
        out -= a
        assert memory.data_ptr() == before
        (out * out).sum().backward()
        grads.append([np.asarray(t.grad.tolist()) for t in (a, b, w)])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_in_place_on_linear_and_matmul_outputs_of_batches_as_torch(rng, ieee):
    """Linear and matmul of [..., in] inputs give tensors of their own, not views of the GEMM's rows
    (torch's _unsafe_view): in-place ops with grad write them (timm's LayerScale x.mul_(gamma), a
    transformer's x += shortcut), with torch's values and gradients (the GEMMs in IEEE fp32, as the
    tolerance's)."""
    def chain(lib, x, w, gamma, b):
        y = lib.nn.functional.linear(x, w, b)  # [2, 5, 3]
        y.mul_(gamma)
        y += x[..., :3]
        z = x @ w.t()
        z.add_(y, alpha=0.5)
        v = w @ x[0, 0]  # matrix times vector
        v.sub_(b)
        return z * z + v

    check(lambda *a: chain(tnet, *a), lambda *a: chain(torch, *a),
          [leaf(rng, 2, 5, 4), leaf(rng, 3, 4), leaf(rng, 3), leaf(rng, 3)], rng)


def test_div_in_place_with_a_rounding_mode_as_torchs():
    """x.div_(other, rounding_mode='floor' or 'trunc'), as torch's: an integer self stays one (a beam search's
    idx.div_(vocab_size, rounding_mode='floor')), a float self is rounded, a float quotient into an integer self
    is torch's RuntimeError, and the rounded values pass no gradient."""
    for mode in ("floor", "trunc"):
        for a, b in (([5, -5, 7], 2), ([5, -5, 7], [2, 3, -4]), ([5.5, -5.5, 0.5], 2)):
            ours, theirs = tnet.tensor(a), torch.tensor(a)
            ours.div_(tnet.tensor(b) if isinstance(b, list) else b, rounding_mode=mode)
            theirs.div_(torch.tensor(b) if isinstance(b, list) else b, rounding_mode=mode)
            assert ours.dtype == theirs.dtype and ours.tolist() == theirs.tolist(), (mode, a, b)
    with pytest.raises(RuntimeError):
        tnet.tensor([5, 4]).div_(2.5, rounding_mode="floor")
    x = tnet.tensor([5.0, -3.0], requires_grad=True)
    y = x * 1
    y.div_(2, rounding_mode="floor")
    (y * x).sum().backward()
    assert x.grad.tolist() == [2.0, -2.0]  # y's own value only: the rounded quotient's gradient is zero
