"""Mixed precision: tnet.autocast's state, the parameters' 16-bit copies that the optimizer's
kernel writes (bit for bit the cast of the updated parameter), 16-bit parameters and
gradients, GradScaler against torch's, load_state_dict, train.py's --precision (tnet.recipes'
PRECISIONS, tnet.trainer's option), and a small net under bfloat16 autocast against torch
float64."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from tnet import amp, nn, optim, recipes, trainer
from tnet.kernels import optim as kernels
from helpers import TOL, Launches, assert_close, train_main, write_bin_pack

LOW = [torch.float16, torch.bfloat16]
RULES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.8, "nesterov": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01}),
]
RULE_IDS = [f"{n}-{'-'.join(k)}" for n, k in RULES]
SHAPES = [((7, 3), False), ((5, 3, 4, 3), True), ((11,), False)]  # odd shapes, one channels-last


def bits(t):
    """The raw 16 bits of a 16-bit torch tensor, as int16, in logical order."""
    return t.contiguous().view(torch.int16)


def assert_copy_is_cast(p, copy, what):
    """copy is p's value cast to copy's dtype by torch, bit for bit; and back to p's dtype too."""
    assert copy.dtype in LOW and copy.shape == p.memory.shape and copy.stride() == p.memory.stride(), what
    expected = p.memory.to(copy.dtype)
    same = bits(copy) == bits(expected)
    assert same.all(), f"{what}: {int((~same).sum())} elements differ from the cast, first at " \
                       f"{np.unravel_index(int((~same).flatten().nonzero()[0]), copy.shape)}"
    assert torch.equal(copy.to(p.dtype), expected.to(p.dtype)), what


def params(rng, dtype=torch.float32):
    ps = []
    for shape, channels_last in SHAPES:
        p = nn.Parameter(rng.standard_normal(shape))
        layout = torch.channels_last if channels_last else torch.contiguous_format
        p.memory = p.memory.to(dtype).contiguous(memory_format=layout)
        ps.append(p)
    return ps


def set_grads(ps, rng, dtype=torch.float32):
    grads = [torch.from_numpy(rng.standard_normal(p.shape)).to(tnet.DEVICE, torch.float32) for p in ps]
    for p, g in zip(ps, grads):
        p.grad = tnet.Tensor(g.to(dtype))
    return grads


# autocast's state

def test_autocast_dtype_of_a_device_type_as_torchs():
    """torch's get_autocast_dtype(device_type): the block's dtype inside one, the type's default outside;
    is_autocast_enabled(device_type) in a block of that type, and get_autocast_gpu_dtype, as torch's."""
    for lib in (tnet, torch):
        seen = [lib.get_autocast_dtype("cuda"), lib.get_autocast_dtype("cpu"), lib.is_autocast_enabled("cuda")]
        with lib.autocast("cpu", dtype=torch.float16):  # torch without CUDA turns a "cuda" block off
            seen += [lib.get_autocast_dtype("cpu"), lib.is_autocast_enabled("cpu")]
        with pytest.warns(DeprecationWarning, match="deprecated"):
            seen.append(lib.get_autocast_gpu_dtype())
        assert seen == [torch.float16, torch.bfloat16, False, torch.float16, True, torch.float16]


def test_autocast_state_nests_and_restores():
    assert tnet.get_autocast_dtype() is None and not tnet.is_autocast_enabled()
    with tnet.autocast("cuda", dtype=torch.bfloat16) as outer:
        assert tnet.get_autocast_dtype() == torch.bfloat16 and tnet.is_autocast_enabled()
        with tnet.autocast(dtype=torch.float16):
            assert tnet.get_autocast_dtype() == torch.float16
            with tnet.autocast(enabled=False):
                assert tnet.get_autocast_dtype() is None and not tnet.is_autocast_enabled()
            assert tnet.get_autocast_dtype() == torch.float16
        assert tnet.get_autocast_dtype() == torch.bfloat16
        with outer:  # the same object entered again
            assert tnet.get_autocast_dtype() == torch.bfloat16
        assert tnet.get_autocast_dtype() == torch.bfloat16
    assert tnet.get_autocast_dtype() is None
    with pytest.raises(KeyError):  # an exception inside the block restores the state too
        with tnet.autocast(dtype=torch.bfloat16):
            raise KeyError
    assert tnet.get_autocast_dtype() is None


def test_autocast_defaults_decorator_and_errors():
    """torch's defaults: float16 for "cuda", bfloat16 for "cpu"."""
    assert tnet.autocast("cuda").dtype == torch.float16 and tnet.autocast("cpu").dtype == torch.bfloat16

    @tnet.autocast(dtype=torch.bfloat16)
    def inside(x):
        return tnet.get_autocast_dtype(), x

    assert inside(3) == (torch.bfloat16, 3) and tnet.get_autocast_dtype() is None
    assert inside.__name__ == "inside"
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):  # as torch's
        with tnet.autocast(dtype=torch.float32):
            assert not tnet.is_autocast_enabled() and tnet.get_autocast_dtype() is None
    with pytest.raises(ValueError, match="device_type must be 'cuda' or 'cpu', got 'xpu'"):
        tnet.autocast("xpu")


# the parameters' copies

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_float32_list_computes_in_float32_as_torchs_cuda_autocast(dtype):
    """Inside a block, the ops of torch's CUDA autocast float32 list return float32 from 16-bit input, called as
    tnet.*, F.*, methods, operators or through a layer (a 16-bit 12's exp is 162754.8, not float16's inf), with
    16-bit gradients back to a 16-bit leaf; the 16-bit ops after a GEMM keep 16 bits, and outside a block
    nothing changes. torch's CPU autocast has another list, so the expected dtypes are written out."""
    x = tnet.full((2, 3), 12.0, dtype=dtype, requires_grad=True)
    with tnet.autocast("cuda", dtype=dtype):
        outs = [x.exp(), tnet.exp(x), F.layer_norm(x, (3,)), nn.LayerNorm(3)(x), x.sum(), x.sum(1), x ** 2, 2 ** x,
                1 / x, tnet.cumsum(x, 1), x.norm(), F.normalize(x), F.softplus(x), x.log(), F.group_norm(x, 1)]
        assert all(o.dtype == torch.float32 for o in outs), [o.dtype for o in outs]
        np.testing.assert_allclose(outs[0].detach().numpy(), np.exp(12.0), rtol=1e-6)
        assert (x * 2).dtype == dtype and F.relu(x).dtype == dtype and (x + 1).dtype == dtype
        sum(o.sum() for o in outs).backward()
    assert x.grad.dtype == dtype  # exp(12)'s gradient rounds to float16's inf, as torch's
    assert x.exp().dtype == x.sum().dtype == F.layer_norm(x, (3,)).dtype == dtype  # outside a block
    out = tnet.empty(2, 3, dtype=dtype)
    with tnet.autocast("cuda", dtype=dtype), tnet.no_grad():
        assert tnet.exp(x, out=out) is out and out.dtype == dtype  # out= as given, as torch's


def test_low_copy_is_made_once_and_cached(rng):
    p = params(rng)[1]  # channels-last
    copy = amp.low_copy(p, torch.bfloat16)
    assert amp.low_copy(p, torch.bfloat16) is copy and amp.low_copies(p) == [copy]
    assert_copy_is_cast(p, copy, "the new copy")
    half = amp.low_copy(p, torch.float16)
    assert amp.low_copies(p) == [copy, half]
    p.memory.copy_(torch.from_numpy(rng.standard_normal(p.shape)))  # a hand edit: the copies are stale until refreshed
    address = copy.data_ptr()
    amp.refresh_low_copies(p)
    assert copy.data_ptr() == address
    assert_copy_is_cast(p, copy, "the refreshed bfloat16 copy")
    assert_copy_is_cast(p, half, "the refreshed float16 copy")
    assert amp.low_copies(params(rng)[0]) == []



def within_an_ulp(a, b):
    """fp32 values equal but for the last bits of an intermediate: kernels built with and without
    an extra store or cast may contract a multiply-add differently on the GPU (bit-equal in the
    interpreter). Writing a rounded value back would be ~1e-3 off."""
    return torch.allclose(a, b, rtol=1e-6, atol=1e-7)

@pytest.mark.parametrize("dtype", LOW, ids=["fp16", "bf16"])
@pytest.mark.parametrize("name,kwargs", RULES, ids=RULE_IDS)
def test_step_writes_the_copies(name, kwargs, dtype, rng, monkeypatch):
    """Three steps: the copy is the cast of the updated parameter, bit for bit, written by the
    one update launch; the parameters take the same values as without copies. The second
    parameter has copies in both dtypes (the second is copied after the launch); the third
    misses step 1."""
    log = []
    monkeypatch.setattr(kernels, "step_kernel", Launches(kernels.step_kernel, log))
    ps, plain = params(rng), params(np.random.default_rng(1234))
    opt, ref = getattr(optim, name)(ps, **kwargs), getattr(optim, name)(plain, **kwargs)
    copies = [amp.low_copy(p, dtype) for p in ps]
    other = amp.low_copy(ps[1], LOW[1 - LOW.index(dtype)])
    for step in range(3):
        grads = set_grads(ps, rng)
        for q, g in zip(plain, grads):
            q.grad = tnet.Tensor(g.clone())
        if step == 1:
            ps[2].grad = plain[2].grad = None
        del log[:]
        opt.step()
        assert len(log) == 1, "the copies are written by the update's one launch"
        ref.step()
        for i, (p, q, copy) in enumerate(zip(ps, plain, copies)):
            assert within_an_ulp(p.memory, q.memory), f"step {step}, parameter {i}: changed by writing its copy"
            assert_copy_is_cast(p, copy, f"step {step}, copy of parameter {i}")
        assert_copy_is_cast(ps[1], other, f"step {step}, second copy of parameter 1")


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_replayed_launches_write_the_copies(name, monkeypatch, rng):
    """As a CUDA graph replays them: step 0's launches run again for steps 1-2, with new
    gradients copied into the same tensors; the copies follow the parameters."""
    log = []
    monkeypatch.setattr(kernels, "step_kernel", Launches(kernels.step_kernel, log))
    monkeypatch.setattr(kernels, "count_steps_kernel", Launches(kernels.count_steps_kernel, log))
    ps = [nn.Parameter(rng.standard_normal(s)) for s in ((7, 3), (13,))]
    opt = getattr(optim, name)(ps, lr=0.05, **({"momentum": 0.9} if name == "SGD" else {}))
    copies = [amp.low_copy(p, dtype) for p, dtype in zip(ps, LOW)]
    set_grads(ps, rng)
    opt.step()
    launches = list(log)
    for step in range(1, 3):
        for p in ps:
            p.grad.memory.copy_(torch.from_numpy(rng.standard_normal(p.shape)))
        for kernel, grid, args, kw in launches:
            kernel[grid](*args, **kw)
        for i, (p, copy) in enumerate(zip(ps, copies)):
            assert_copy_is_cast(p, copy, f"replayed step {step}, copy of parameter {i}")


@pytest.mark.parametrize("dtype", LOW, ids=["fp16", "bf16"])
@pytest.mark.parametrize("name,kwargs", RULES[1:], ids=RULE_IDS[1:])
def test_16bit_gradients_are_read_as_fp32(name, kwargs, dtype, rng):
    """A 16-bit gradient updates an fp32 parameter exactly as its fp32 value does."""
    ps, same = params(rng), params(np.random.default_rng(1234))
    opt, ref = getattr(optim, name)(ps, **kwargs), getattr(optim, name)(same, **kwargs)
    for _ in range(2):
        for p, q, g in zip(ps, same, set_grads(ps, rng, dtype)):
            q.grad = tnet.Tensor(p.grad.memory.to(torch.float32))
        opt.step()
        ref.step()
    for i, (p, q) in enumerate(zip(ps, same)):
        assert within_an_ulp(p.memory, q.memory), f"parameter {i}"


@pytest.mark.parametrize("dtype", LOW, ids=["fp16", "bf16"])
@pytest.mark.parametrize("name,kwargs", RULES, ids=RULE_IDS)
def test_16bit_parameters_step_as_torch(name, kwargs, dtype, rng):
    """A user's 16-bit parameters: the state in their dtype, as torch's; the arithmetic in fp32,
    so against torch float64 from the same 16-bit values the result is within 16-bit rounding.
    Their state_dict saves the buffers in float32."""
    ps = params(rng, dtype)
    opt = getattr(optim, name)(ps, **kwargs)
    refs = [torch.tensor(p.memory.double().cpu().numpy(), requires_grad=True) for p in ps]
    ref = getattr(torch.optim, name)(refs, **kwargs, foreach=False)
    for step in range(3):
        for p, r in zip(ps, refs):
            g = torch.from_numpy(rng.standard_normal(p.shape)).to(dtype)
            p.grad, r.grad = tnet.Tensor(g.to(tnet.DEVICE)), g.double()
        opt.step()
        ref.step()
        for r, p in zip(refs, ps):  # torch's next step starts from the 16-bit values too
            r.data.copy_(p.memory.double())
    for i, (p, r) in enumerate(zip(ps, refs)):
        assert p.dtype == dtype and all(b.dtype == dtype for k, b in opt.state[p].items() if k != "step")
        assert_close(p.memory.float(), r, TOL["bf16"], f"parameter {i}")
        for b in opt.BUFFERS:
            if b in ref.state[r]:
                assert_close(opt.state[p][b].float(), ref.state[r][b], TOL["bf16"], f"{b} {i}")
    saved = opt.state_dict()["state"][0]
    assert all(saved[b].dtype == np.float32 for b in opt.BUFFERS)


def test_step_checks_copies_state_and_scale(rng):
    """A copy laid out otherwise than its parameter, state in another dtype than the
    parameter's, a scale without found_inf, a float64 gradient: ValueError before any launch."""
    p = nn.Parameter(rng.standard_normal((2, 3, 4, 4)))
    p.memory = p.memory.contiguous(memory_format=torch.channels_last)  # (an assignment drops a copy of another layout)
    p._low = {torch.float16: torch.zeros(p.shape, dtype=torch.float16, device=p.device)}  # NCHW
    p.grad = tnet.tensor(rng.standard_normal(p.shape))
    with pytest.raises(ValueError, match="laid out alike"):
        optim.SGD([p], lr=0.1).step()

    q = nn.Parameter(rng.standard_normal((3, 5)))
    opt = optim.SGD([q], lr=0.1, momentum=0.9)
    g, buf, hyper, step = torch.ones_like(q.memory), opt.state[q]["momentum_buffer"], opt._device_hyper[0][1], \
        opt.state[q]["step"]
    with pytest.raises(ValueError, match="state buffers must be torch.float32"):
        kernels.step_("sgd", [(q.memory, g, [buf.to(torch.bfloat16)], [], hyper, step, 1.0, 1.0)])
    with pytest.raises(ValueError, match="give both scale and found_inf"):
        kernels.step_("sgd", [(q.memory, g, [buf], [], hyper, step, 1.0, 1.0)], scale=torch.ones(()))
    with pytest.raises(ValueError, match="a gradient must be float32, float16 or bfloat16"):
        kernels.step_("sgd", [(q.memory, g.double(), [buf], [], hyper, step, 1.0, 1.0)])


def test_load_state_dict_refreshes_the_copies(rng):
    model = nn.Sequential(nn.Linear(5, 3), nn.BatchNorm1d(3))
    copies = [amp.low_copy(p, dtype) for p, dtype in zip(model.parameters(), LOW * 2)]
    state = {k: rng.standard_normal(v.shape).astype(np.asarray(v).dtype) for k, v in model.state_dict().items()}
    addresses = [c.data_ptr() for c in copies]
    model.load_state_dict(state)
    assert [c.data_ptr() for c in copies] == addresses
    for (name, p), copy in zip(model.named_parameters(), copies):
        assert np.array_equal(p.numpy(), state[name])
        assert_copy_is_cast(p, copy, name)


# GradScaler

@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's numpy on inf and NaN
def test_grad_scaler_matches_torch(rng):
    """Adam under a GradScaler against torch's on the CPU in float32: the scale, the skipped steps
    (an inf or NaN gradient at steps 2 and 3) and the step counts, the parameters and their copy."""
    shapes = [(7, 3), (11,)]
    ps = [nn.Parameter(rng.standard_normal(s)) for s in shapes]
    refs = [torch.tensor(p.numpy(), requires_grad=True) for p in ps]
    copy = amp.low_copy(ps[0], torch.float16)
    opt, ref = optim.Adam(ps, lr=0.01), torch.optim.Adam(refs, lr=0.01, foreach=False)
    scaler = amp.GradScaler(init_scale=2.0 ** 4, growth_interval=2)
    ref_scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_interval=2)
    scales = []
    for step in range(7):
        cs = [rng.standard_normal(s) for s in shapes]
        if step in (2, 3):
            cs[step - 2][1] = np.inf if step == 2 else np.nan
        loss = sum(((p * tnet.tensor(c)).sum() for p, c in zip(ps, cs)), tnet.tensor(0.0))
        ref_loss = sum((r * torch.tensor(c, dtype=torch.float32)).sum() for r, c in zip(refs, cs))
        opt.zero_grad()
        ref.zero_grad()
        scaler.scale(loss).backward()
        ref_scaler.scale(ref_loss).backward()
        for p, r in zip(ps, refs):  # c times a power of 2 on both sides: equal, inf and NaN included
            np.testing.assert_array_equal(p.grad.numpy(), r.grad.numpy(), f"step {step}: scaled gradient")
        assert scaler.step(opt) is None
        ref_scaler.step(ref)
        scaler.update()
        ref_scaler.update()
        scales.append(scaler.get_scale())
        assert scales[-1] == ref_scaler.get_scale(), f"step {step}: scale"
        for i, (p, r) in enumerate(zip(ps, refs)):
            assert_close(p, r, TOL["ieee"], f"step {step}: parameter {i}")
            assert opt.state[p]["step"].item() == ref.state[r]["step"].item(), f"step {step}: step count {i}"
        assert_copy_is_cast(ps[0], copy, f"step {step}: copy")
    assert scales == [16, 32, 16, 8, 8, 16, 16]
    assert scaler.state_dict() == {"scale": 16.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2,
                                   "_growth_tracker": 1}


def test_grad_scaler_state_and_disabled(rng):
    p = nn.Parameter(rng.standard_normal(5))
    scaler = amp.GradScaler(init_scale=8.0, growth_interval=3)
    state = {"scale": 64.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 5, "_growth_tracker": 2}
    scaler.load_state_dict(state)
    assert scaler.state_dict() == state and scaler.is_enabled()
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0 and scaler.state_dict()["_growth_tracker"] == 0
    loss = (p * 3.0).sum()
    assert scaler.scale([loss, loss])[1].item() == pytest.approx(2 * loss.item())
    with pytest.raises(RuntimeError, match="Closure"):
        scaler.step(optim.SGD([p]), lambda: loss)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (4.0, 0.25, 5)
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.5)
    scaler.set_growth_interval(1)
    scaler.scale(loss).backward()
    scaler.step(optim.SGD([p], lr=0.0))
    scaler.update()  # a step without an inf, the interval now one: the scale grows by the new factor
    assert scaler.get_scale() == 6.0
    assert [scaler.state_dict()[k] for k in ("growth_factor", "backoff_factor", "growth_interval")] == [3.0, 0.5, 1]
    p.grad = None

    off = amp.GradScaler(enabled=False)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {} and not off.is_enabled()
    off.load_state_dict(state)
    p.grad = tnet.tensor(np.ones(5))
    before = p.numpy().copy()
    off.step(optim.SGD([p], lr=0.5))
    off.update()
    assert np.allclose(p.numpy(), before - 0.5)
    with pytest.raises(ValueError, match="backoff factor"):
        amp.GradScaler(backoff_factor=1.5)


# train.py's --precision

def test_train_precision_option(capsys):
    assert list(recipes.PRECISIONS) == ["ieee", "tf32", "bf16", "fp16"]
    assert trainer.parse_args([]).precision == "tf32"
    for name in recipes.PRECISIONS:
        assert trainer.parse_args(["--precision", name]).precision == name
    assert [p.autocast for p in recipes.PRECISIONS.values()] == [None, None, torch.bfloat16, torch.float16]
    assert all(p.gemm in tnet.kernels.gemm.PRECISIONS for p in recipes.PRECISIONS.values())
    with pytest.raises(SystemExit) as e:
        trainer.parse_args(["--precision", "fp32"])
    assert e.value.code == 2 and "invalid choice: 'fp32'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        trainer.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, precision in recipes.PRECISIONS.items():
        assert f"{name}: {' '.join(precision.help.split())}" in text


def test_train_resumes_with_another_precision(tmp_path, capsys):
    """One epoch in bf16 (autocast), the next resumed in fp16 (autocast and a GradScaler, whose
    state the checkpoint then holds): --precision changes how a run computes, not what it is."""
    previous = tnet.get_precision()
    data = write_bin_pack(tmp_path / "data", n_train=10, n_test=5)
    ck = str(tmp_path / "run" / "amp.ckpt")
    common = ["--data", str(data), "--limit", "2", "--batch-size", "2", "--eval-batch-size", "2", "--checkpoint", ck]
    try:
        train_main(common + ["--epochs", "1", "--precision", "bf16"])
        assert tnet.load(ck)["scaler"] == {}
        train_main(common + ["--epochs", "2", "--resume", "--precision", "fp16"])
    finally:
        tnet.set_precision(previous)
    scaler = tnet.load(ck)["scaler"]
    assert scaler["scale"] > 0 and scaler["growth_interval"] == 2000
    out = capsys.readouterr().out
    assert "epoch 1:" in out and "resumed from" in out and "epoch 2:" in out
    assert out.strip().splitlines()[-1].startswith("test accuracy: ")


# a small net end to end

class SmallNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)  # BatchNorm would cancel a bias: its gradient is 0
        self.bn = nn.BatchNorm2d(16)
        self.act = nn.GELU()
        self.pool = nn.MaxPool2d(2)
        self.flat = nn.Flatten()
        self.fc = nn.Linear(16 * 3 * 3, classes)

    def forward(self, x):
        return self.fc(self.flat(self.pool(self.act(self.bn(self.conv(x))))))


def to_bf16(x):
    """x rounded to bfloat16 as tnet's kernels round it: to nearest, in the interpreter too (docs/triton.md)."""
    return x.to(torch.bfloat16).double()


class _Bf16(torch.autograd.Function):
    """A float64 tensor rounded to bfloat16, and its gradient too: an activation that tnet stores in 16 bits."""

    @staticmethod
    def forward(ctx, x):
        return to_bf16(x)

    @staticmethod
    def backward(ctx, g):
        return to_bf16(g)


class _Bf16Copy(_Bf16):
    """A weight's bfloat16 copy: rounded in the forward pass; the master's gradient stays unrounded."""

    @staticmethod
    def backward(ctx, g):
        return g


def torch_small_net(w, x):
    """SmallNet in torch float64, rounded to bfloat16 where tnet stores 16 bits (COMMON.md: the
    same rounded inputs). Without the rounding the test would be ill-posed: BatchNorm makes the
    loss invariant to each conv filter's scale, and conv.weight's gradient moves by up to 15%
    (seeds 0-19) when the conv output alone is rounded to bfloat16."""
    act, copy = _Bf16.apply, _Bf16Copy.apply
    x = act(tF.conv2d(copy(x), copy(w["conv.weight"]), padding=1))
    x = act(tF.batch_norm(x, None, None, w["bn.weight"], w["bn.bias"], training=True))
    x = act(tF.max_pool2d(act(tF.gelu(x)), 2)).flatten(1)
    return act(tF.linear(x, copy(w["fc.weight"]), w["fc.bias"]))


def test_small_net_under_bfloat16_autocast_matches_torch(rng):
    """Conv2d, BatchNorm2d, GELU, MaxPool2d, Flatten, Linear and cross_entropy under
    autocast(bfloat16), against torch float64 from the fp32 masters (rounded as tnet rounds):
    the loss and every parameter's gradient (fp32), with 16-bit activations (bf16 logits) read
    from the weights' copies; then an SGD step rewrites the copies.
    NOTE: this passes only once the 16-bit conv2d (the lead's branch), linear (h-gemm16) and
    pointwise/norm/pool kernels (h-lowp) are merged: before, autocast changes nothing in the
    layers and the dtype checks below fail. It must not be skipped."""
    model = SmallNet(7)
    state = {k: rng.standard_normal(v.shape).astype(np.float32) * (0.1 if "bn" not in k else 0.3)
             for k, v in model.state_dict().items() if v.dtype == torch.float32 and "running" not in k}
    state["bn.weight"] += 1
    model.load_state_dict(state, strict=False)
    x, y = rng.standard_normal((5, 16, 6, 6)).astype(np.float32), rng.integers(0, 7, 5)

    with tnet.autocast("cuda", dtype=torch.bfloat16):
        logits = model(tnet.tensor(x))
        loss = F.cross_entropy(logits, tnet.tensor(y))
    loss.backward()
    assert logits.dtype == torch.bfloat16 and loss.dtype == torch.float32
    for name in ("conv.weight", "fc.weight"):
        p = dict(model.named_parameters())[name]
        assert [c.dtype for c in amp.low_copies(p)] == [torch.bfloat16], f"{name}: the layer reads its copy"

    w = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in state.items()}
    ref = tF.cross_entropy(torch_small_net(w, torch.tensor(x, dtype=torch.float64)), torch.tensor(y))
    ref.backward()
    tol = 3e-2
    assert_close(loss, ref, tol, "loss")
    for name, p in model.named_parameters():
        assert p.grad.dtype == torch.float32, f"{name}: gradients of the fp32 masters are fp32"
        assert_close(p.grad, w[name].grad, tol, f"gradient of {name}")

    optim.SGD(model.parameters(), lr=0.1, momentum=0.9).step()
    for name, p in model.named_parameters():
        for copy in amp.low_copies(p):
            assert_copy_is_cast(p, copy, f"{name} after the step")
    # a layer reads the copy, not the parameter: an edited copy shows in the output
    amp.low_copies(model.fc.weight)[0].zero_()
    with tnet.autocast(dtype=torch.bfloat16), tnet.no_grad():
        bias_only = model(tnet.tensor(x)).memory.double()
    # GEMM outputs round to nearest under the interpreter too (kernels.copy.cast)
    assert torch.equal(bias_only, model.fc.bias.memory.to(torch.bfloat16).double().expand(5, 7))


def test_autocast_cpu_queries_and_cache_switch_as_torch():
    """torch's older autocast queries (get_autocast_cpu_dtype, is_autocast_cpu_enabled, with torch's warning) and
    the weight cache's switch (kept and reported, as torch's), which copied checkpoint code reads to save the state."""
    for lib in (tnet, torch):
        with pytest.warns(DeprecationWarning):
            assert lib.get_autocast_cpu_dtype() == torch.bfloat16 and lib.is_autocast_cpu_enabled() is False
        with lib.autocast("cpu", dtype=torch.float16), pytest.warns(DeprecationWarning):
            assert lib.get_autocast_cpu_dtype() == torch.float16 and lib.is_autocast_cpu_enabled() is True
        assert lib.is_autocast_cache_enabled() is True
        lib.set_autocast_cache_enabled(False)
        assert lib.is_autocast_cache_enabled() is False
        lib.set_autocast_cache_enabled(True)
        lib.clear_autocast_cache()
