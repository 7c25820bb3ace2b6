"""The public API: each op forward and backward against torch in float64, and autograd's rules."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F
from helpers import LOW, TOL, assert_close, check_op, tol_for


def pair(rng, *shape, scale=1.0, dtype=torch.float32):
    """A tnet leaf of dtype and the float64 torch leaf with the same (rounded) values."""
    t = tnet.tensor(rng.standard_normal(shape) * scale, requires_grad=True, dtype=dtype)
    return t, t.data.double().cpu().requires_grad_(True)


def test_matmul(rng, ieee):
    check_op(F.matmul, torch.matmul, [pair(rng, 37, 75), pair(rng, 75, 29)], TOL["ieee"], rng)


@pytest.mark.parametrize("bias", [True, False])
def test_linear(rng, ieee, bias):
    inputs = [pair(rng, 13, 75), pair(rng, 17, 75)] + ([pair(rng, 17)] if bias else [])
    check_op(F.linear, tF.linear, inputs, TOL["ieee"], rng)


@pytest.mark.parametrize("shape,wshape,stride,padding", [
    ((2, 3, 11, 11), (5, 3, 5, 5), 1, 2),   # K = 75
    ((3, 2, 7, 9), (7, 2, 3, 3), 2, 1),
    ((1, 1, 1, 1), (1, 1, 1, 1), 1, 0),
    ((2, 4, 8, 6), (3, 4, 3, 2), (2, 1), (0, 1)),
    ((2, 4, 8, 6), (3, 4, 3, 2), 1, (2, 0)),  # stride 1: the input gradient is a convolution too
])
def test_conv2d(rng, ieee, shape, wshape, stride, padding):
    inputs = [pair(rng, *shape), pair(rng, *wshape, scale=0.3), pair(rng, wshape[0])]
    check_op(lambda x, w, b: F.conv2d(x, w, b, stride, padding),
             lambda x, w, b: tF.conv2d(x, w, b, stride, padding), inputs, TOL["ieee"], rng)


def test_conv2d_fused_relu(rng, ieee):
    inputs = [pair(rng, 2, 3, 9, 9), pair(rng, 4, 3, 3, 3, scale=0.3), pair(rng, 4)]
    check_op(lambda x, w, b: F.conv2d(x, w, b, 1, 1, relu=True),
             lambda x, w, b: torch.relu(tF.conv2d(x, w, b, 1, 1)), inputs, TOL["ieee"], rng)


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_conv2d_relu_pool2d(rng, ieee, mode):
    pool = tF.max_pool2d if mode == "max" else tF.avg_pool2d
    inputs = [pair(rng, 2, 3, 9, 9), pair(rng, 4, 3, 3, 3, scale=0.3), pair(rng, 4)]
    check_op(lambda x, w, b: F.conv2d_relu_pool2d(x, w, b, 1, 1, mode, 3, 2, ceil_mode=True),
             lambda x, w, b: pool(torch.relu(tF.conv2d(x, w, b, 1, 1)), 3, 2, ceil_mode=True),
             inputs, TOL["ieee"], rng)


def test_conv2d_channels_last_path(rng, ieee):
    """Stride-1 convolutions to 16 channels run the NHWC kernels and return channels-last
    outputs: from 16 channels on a channels-last x (an NCHW one is copied), from 3 on the NCHW
    x itself. Reshape hands back an NCHW gradient, which the tape puts into each output's
    layout before its backward."""
    from tnet.kernels.launch import is_channels_last
    inputs = [pair(rng, 2, 3, 8, 7), pair(rng, 16, 3, 3, 3, scale=0.3), pair(rng, 16),
              pair(rng, 16, 16, 5, 5, scale=0.1), pair(rng, 16)]

    def net(conv, pool, relu, x, w1, b1, w2, b2):
        h = pool(relu(conv(x, w1, b1, 1, 1)), 3, 2, ceil_mode=True)
        return relu(conv(h, w2, b2, 1, 2)).reshape(2, -1)
    check_op(lambda *a: net(F.conv2d, F.max_pool2d, F.relu, *a),
             lambda *a: net(tF.conv2d, tF.max_pool2d, torch.relu, *a), inputs, TOL["ieee"], rng)
    x, w1, b1 = (t for t, _ in inputs[:3])
    h = F.conv2d(x, w1, b1, 1, 1)
    p = F.max_pool2d(h, 3, 2, ceil_mode=True)
    assert is_channels_last(h.data) and is_channels_last(p.data)
    assert is_channels_last(F.max_pool2d(tnet.tensor(rng.standard_normal((2, 16, 5, 5))), 2).data)
    assert is_channels_last(F.conv2d(p, *[t for t, _ in inputs[3:]], 1, 2).data)
    assert is_channels_last(F.conv2d(h, *[t for t, _ in inputs[3:]], 1, 2).data)
    fused = [pair(rng, 2, 16, 9, 9), pair(rng, 32, 16, 3, 3, scale=0.3), pair(rng, 32)]
    check_op(lambda x, w, b: F.conv2d_relu_pool2d(x, w, b, 1, 1, "avg", 3, 2, ceil_mode=True),
             lambda x, w, b: tF.avg_pool2d(torch.relu(tF.conv2d(x, w, b, 1, 1)), 3, 2, ceil_mode=True),
             fused, TOL["ieee"], rng)


def test_sequential_fuses_relu_into_conv(rng, ieee):
    """conv -> max pool -> ReLU, conv -> ReLU -> avg pool and conv -> ReLU run fused; values
    and gradients are those of the layers run one by one."""
    from tnet import nn
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, weight_filler=nn.gaussian(0.3)), nn.MaxPool2d(3, 2),
                        nn.ReLU(), nn.Conv2d(4, 5, 3, weight_filler=nn.gaussian(0.3)), nn.ReLU(),
                        nn.AvgPool2d(2), nn.ReLU(), nn.Conv2d(5, 6, 1, weight_filler=nn.gaussian(0.3)), nn.ReLU())
    for p in net.parameters():  # biases that move some outputs below zero
        p.data.copy_(torch.from_numpy(rng.standard_normal(p.shape).astype(np.float32) * 0.3))
    x = rng.standard_normal((2, 3, 10, 10))
    g = rng.standard_normal((2, 6, 1, 1))
    results = []
    for fused in (True, False):
        h = tnet.tensor(x)
        if fused:
            h = net(h)
        else:
            for layer in net:
                h = layer(h)
        h.backward(g)
        results.append([h.numpy()] + [p.grad.numpy() for p in net.parameters()])
        for p in net.parameters():
            p.grad = None
    for fused, alone in zip(*results):
        np.testing.assert_allclose(fused, alone, rtol=1e-6, atol=1e-7)


def test_conv2d_mixes_layouts(rng, ieee):
    """A channels-last output feeding a strided convolution (the NCHW kernels: its input is
    copied to NCHW, and its input gradient back to channels-last by the tape)."""
    inputs = [pair(rng, 2, 16, 6, 5), pair(rng, 16, 16, 3, 3, scale=0.2), pair(rng, 16, 16, 3, 3, scale=0.2)]
    check_op(lambda x, w1, w2: F.conv2d(F.conv2d(x, w1, None, 1, 1), w2, None, 2, 1),
             lambda x, w1, w2: tF.conv2d(tF.conv2d(x, w1, None, 1, 1), w2, None, 2, 1), inputs, TOL["ieee"], rng)


def test_conv2d_module_keeps_weights_channels_last(rng, ieee):
    """nn.Conv2d stores its weights channels-last (the kernels read a tap's channels, or
    (i, j, c), contiguously); their gradients, momentum and state_dict follow, with the logical
    [Cout, C, kh, kw] values."""
    from tnet import nn, optim
    from tnet.kernels.launch import is_channels_last
    conv = nn.Conv2d(16, 32, 3, padding=1)
    assert is_channels_last(nn.Conv2d(3, 16, 3, padding=1).weight.data)
    assert is_channels_last(nn.Conv2d(16, 32, 3, stride=2).weight.data)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    conv.load_state_dict({"weight": w, "bias": np.zeros(32, np.float32)})
    assert is_channels_last(conv.weight.data) and (conv.state_dict()["weight"] == w).all()
    x, g = rng.standard_normal((2, 16, 5, 5)), rng.standard_normal((2, 32, 5, 5))
    wd = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    tF.conv2d(torch.tensor(x), wd, None, 1, 1).backward(torch.tensor(g))
    opt = optim.SGD(conv.parameters(), lr=0.5)
    conv(tnet.tensor(x)).backward(g)
    assert is_channels_last(conv.weight.grad.data)
    opt.step()
    assert_close(conv.weight, wd.detach() - 0.5 * wd.grad, TOL["ieee"], "one SGD step")


def test_conv2d_tf32_default(rng):
    assert tnet.get_precision() == "tf32"
    inputs = [pair(rng, 2, 3, 11, 11), pair(rng, 5, 3, 5, 5), pair(rng, 5)]
    check_op(lambda x, w, b: F.conv2d(x, w, b, padding=2), lambda x, w, b: tF.conv2d(x, w, b, padding=2),
             inputs, TOL["tf32"], rng)


@pytest.mark.parametrize("ceil_mode", [True, False])
def test_pools(rng, ceil_mode):
    check_op(lambda x: F.max_pool2d(x, 3, 2, ceil_mode=ceil_mode),
             lambda x: tF.max_pool2d(x, 3, 2, ceil_mode=ceil_mode), [pair(rng, 2, 3, 9, 9)], 1e-6, rng)
    check_op(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=ceil_mode),
             lambda x: tF.avg_pool2d(x, 3, 2, 1, ceil_mode=ceil_mode), [pair(rng, 2, 3, 9, 9)], 1e-6, rng)


def test_relu_softmax_reshape(rng):
    check_op(F.relu, torch.relu, [pair(rng, 3, 5, 7)], 1e-7, rng)
    check_op(F.softmax, lambda x: torch.softmax(x, 1), [pair(rng, 7, 10)], 1e-6, rng)
    check_op(lambda x: x.reshape(6, -1), lambda x: x.reshape(6, -1), [pair(rng, 2, 3, 5)], 1e-7, rng)


def test_cross_entropy(rng):
    labels = rng.integers(0, 10, 37)
    logits, ref = pair(rng, 37, 10, scale=3)
    loss = F.cross_entropy(logits, tnet.tensor(labels))
    r = tF.cross_entropy(ref, torch.tensor(labels))
    assert_close(loss, r, 1e-6, "loss")
    loss.backward(2.0 * np.ones(()))
    (2.0 * r).backward()
    assert_close(logits.grad, ref.grad, 1e-5, "dlogits")


def test_tensor_api():
    x = tnet.tensor([[1, 2], [3, 4]])
    assert x.dtype == torch.int64 and x.shape == (2, 2) and x.grad is None
    y = tnet.tensor(np.ones((2, 3), dtype=np.float64))
    assert y.dtype == torch.float32 and y.device.type == tnet.DEVICE.type
    assert isinstance(y.numpy(), np.ndarray)
    assert tnet.tensor(torch.arange(3)).dtype == torch.int64


def test_grads_add_when_used_twice(rng, ieee):
    (a, ra), (b, rb) = pair(rng, 4, 4), pair(rng, 4, 4)
    c = F.matmul(a, b)
    F.matmul(c, F.relu(c)).backward(np.ones((4, 4)))  # c feeds both operands
    rc = ra @ rb
    (rc @ torch.relu(rc)).sum().backward()
    assert_close(a.grad, ra.grad, TOL["ieee"], "a")
    assert_close(b.grad, rb.grad, TOL["ieee"], "b")


def test_leaf_grads_accumulate_across_backwards(rng, ieee):
    (a, ra), (b, rb) = pair(rng, 3, 4), pair(rng, 4, 2)
    for _ in range(2):
        F.matmul(a, b).backward(np.ones((3, 2)))
        (ra @ rb).sum().backward()
    assert_close(a.grad, ra.grad, TOL["ieee"], "twice")


def test_no_grad_records_nothing(rng):
    a, _ = pair(rng, 3, 4)
    with tnet.no_grad():
        y = F.relu(a)
    assert not y.requires_grad and y._entry is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward(np.ones((3, 4)))


def test_saved_state_freed_after_backward(rng):
    a, _ = pair(rng, 3, 4)
    y = F.relu(F.relu(a))
    entry = y._entry
    y.backward(np.ones((3, 4)))
    assert entry.backward is None and entry.inputs == ()
    with pytest.raises(RuntimeError, match="freed"):
        y.backward(np.ones((3, 4)))


def test_backward_grad_checks(rng):
    a, _ = pair(rng, 3, 4)
    y = F.relu(a)
    with pytest.raises(ValueError, match="scalar"):
        y.backward()
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        y.backward(np.ones((2, 2)))
    y.backward(tnet.tensor(np.ones((3, 4))))  # a tnet grad works


def test_bad_input_messages(rng):
    a, _ = pair(rng, 3, 4)
    b, _ = pair(rng, 5, 6)
    with pytest.raises(ValueError, match="matmul: a is 3x4 but b is 5x6"):
        F.matmul(a, b)
    with pytest.raises(ValueError, match="linear: x is 3x4 but w is 5x6"):
        F.linear(a, b)
    x, _ = pair(rng, 1, 3, 8, 8)
    w, _ = pair(rng, 4, 2, 3, 3)
    with pytest.raises(ValueError, match="x has 3 channels but w expects 2"):
        F.conv2d(x, w)
    with pytest.raises(ValueError, match="4-D"):
        F.max_pool2d(a, 2)
    with pytest.raises(ValueError, match="float32"):
        F.relu(tnet.tensor([1, 2]))
    with pytest.raises(ValueError, match="labels"):
        F.cross_entropy(a, tnet.tensor(np.zeros(3)))
    with pytest.raises(ValueError, match="tnet.Tensor"):
        F.relu(np.ones(3))


def test_cross_entropy_label_smoothing(rng):
    labels = rng.integers(0, 10, 13)
    logits, ref = pair(rng, 13, 10, scale=3)
    loss = F.cross_entropy(logits, tnet.tensor(labels), label_smoothing=0.1)
    r = tF.cross_entropy(ref, torch.tensor(labels), label_smoothing=0.1)
    assert_close(loss, r, 1e-6, "loss")
    loss.backward()
    r.backward()
    assert_close(logits.grad, ref.grad, 1e-5, "dlogits")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rows", [11, 517])  # 517 rows of 10: five programs, their sums added after
def test_cross_entropy_loss_module(rng, reduction, rows):
    labels = rng.integers(0, 7, rows)
    labels[4] = labels[300 % rows] = -100
    logits, ref = pair(rng, rows, 7, scale=3)
    loss = tnet.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.05)(logits, tnet.tensor(labels))
    r = torch.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.05)(ref, torch.tensor(labels))
    assert_close(loss, r, 1e-6, "loss")
    g = rng.standard_normal(r.shape)
    loss.backward(g)
    r.backward(torch.tensor(g))
    assert_close(logits.grad, ref.grad, 1e-5, "dlogits")


def test_bad_hyperparameters_are_value_errors():
    x = tnet.tensor(np.ones((1, 3, 6, 6)))
    w = tnet.tensor(np.ones((2, 3, 3, 3)))
    for bad in (lambda: tnet.nn.Conv2d(3, 4, 0), lambda: tnet.nn.Conv2d(3, 4, 3, stride=0),
                lambda: F.conv2d(x, w, stride=0), lambda: F.max_pool2d(x, 0), lambda: F.avg_pool2d(x, 2, stride=-1),
                lambda: F.conv2d(x, w, padding=-1), lambda: tnet.nn.CrossEntropyLoss(label_smoothing=1.0),
                lambda: F.cross_entropy(tnet.tensor(np.ones((2, 3))), tnet.tensor([0, 1]), label_smoothing=2),
                lambda: tnet.optim.SGD(tnet.nn.Linear(2, 2).parameters(), lr=-0.1),
                lambda: tnet.optim.SGD(tnet.nn.Linear(2, 2).parameters(), lr=0.1, momentum=-1),
                lambda: tnet.optim.SGD(tnet.nn.Linear(2, 2).parameters(), lr=0.1, weight_decay=-1),
                lambda: tnet.optim.AdamW(tnet.nn.Linear(2, 2).parameters(), lr=-1)):
        with pytest.raises(ValueError):
            bad()


@pytest.mark.parametrize("bad", [10, -1, 1000])
@pytest.mark.parametrize("rows", [6, 300])
def test_cross_entropy_names_a_label_out_of_range(rng, bad, rows):
    labels = rng.integers(0, 10, rows)
    labels[rows - 4] = bad
    with pytest.raises(ValueError, match=f"target {bad} is out of bounds"):
        F.cross_entropy(tnet.tensor(rng.standard_normal((rows, 10))), tnet.tensor(labels))


def test_log_softmax(rng):
    check_op(F.log_softmax, lambda x: torch.log_softmax(x, 1), [pair(rng, 7, 10)], 1e-6, rng)


# ---- 16-bit storage and tnet.autocast ----------------------------------------------------------

@pytest.mark.parametrize("dtype", LOW)
def test_ops_16_bit(rng, dtype):
    """Outputs and gradients in the input's dtype, fp32 math inside."""
    tol = tol_for(dtype)
    for fn, ref, shape in [(F.relu, torch.relu, (3, 5, 7)),
                           (lambda x: F.max_pool2d(x, 3, 2), lambda x: tF.max_pool2d(x, 3, 2), (2, 3, 9, 9)),
                           (lambda x: F.avg_pool2d(x, 3, 2, 1), lambda x: tF.avg_pool2d(x, 3, 2, 1), (2, 3, 9, 9)),
                           (F.softmax, lambda x: torch.softmax(x, 1), (7, 10)),
                           (F.log_softmax, lambda x: torch.log_softmax(x, 1), (7, 10))]:
        x = pair(rng, *shape, dtype=dtype)
        out = check_op(fn, ref, [x], tol, rng)
        assert out.dtype == x[0].grad.dtype == dtype
    labels = rng.integers(0, 10, 13)
    logits, ref = pair(rng, 13, 10, scale=3, dtype=dtype)
    loss = F.cross_entropy(logits, tnet.tensor(labels), label_smoothing=0.1)
    r = tF.cross_entropy(ref, torch.tensor(labels), label_smoothing=0.1)
    assert loss.dtype == dtype  # torch's, outside autocast
    assert_close(loss, r, tol, "loss")
    loss.backward()
    r.backward()
    assert logits.grad.dtype == dtype
    assert_close(logits.grad, ref.grad, tol, "dlogits")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter computes pow's unused branches too
@pytest.mark.parametrize("dtype", LOW)
def test_losses_and_softmax_in_fp32_under_autocast(rng, dtype):
    """As torch's autocast: softmax, log_softmax, cross_entropy and mse_loss return fp32 (at fp32's
    tolerance from the 16-bit inputs), and hand the 16-bit inputs 16-bit gradients."""
    labels = rng.integers(0, 10, 13)
    logits, ref = pair(rng, 13, 10, scale=3, dtype=dtype)
    target, ref_target = pair(rng, 13, 10, dtype=dtype)
    with tnet.autocast("cuda", dtype=dtype):
        loss = F.cross_entropy(logits, tnet.tensor(labels))
        mse = F.mse_loss(logits, target)
        outs = [F.softmax(logits), F.log_softmax(logits), loss, mse]
    refs = [torch.softmax(ref, 1), torch.log_softmax(ref, 1), tF.cross_entropy(ref, torch.tensor(labels)),
            tF.mse_loss(ref, ref_target)]
    for out, r, name in zip(outs, refs, ["softmax", "log_softmax", "cross_entropy", "mse_loss"]):
        assert out.dtype == torch.float32, name
        assert_close(out, r, TOL["ieee"], name)
    (loss + mse).backward()
    (refs[2] + refs[3]).backward()
    assert logits.grad.dtype == target.grad.dtype == dtype
    assert_close(logits.grad, ref.grad, tol_for(dtype), "dlogits")
    assert_close(target.grad, ref_target.grad, tol_for(dtype), "dtarget")
    assert F.cross_entropy(logits, tnet.tensor(labels)).dtype == F.softmax(logits).dtype == dtype  # outside


@pytest.mark.parametrize("channels_last", [False, True])
def test_bfloat16_training_step_through_the_tape(rng, channels_last):
    """BatchNorm (fp32 parameters and statistics) -> GELU -> max pooling -> mean on a bf16 batch,
    NCHW (C = 5) or channels-last (C = 16): every gradient against torch in float64. Each 3x3
    window holds one spike at its centre: near-ties, which bf16's rounding of the activations
    may break the other way, would send the max's gradient elsewhere."""
    C = 16 if channels_last else 5
    a = rng.standard_normal((3, C, 7, 6)) * 0.5
    a[:, :, ::2, ::2] += 4
    x = tnet.tensor(a, requires_grad=True, dtype=torch.bfloat16)
    rx = x.data.double().requires_grad_(True)
    if channels_last:
        x.data = x.data.contiguous(memory_format=torch.channels_last)
    bn, ref_bn = tnet.nn.BatchNorm2d(C), torch.nn.BatchNorm2d(C).double().to(rx.device)
    for p, q in zip(bn.parameters(), ref_bn.parameters()):
        values = rng.uniform(0.5, 1.5, p.shape)  # weights > 0 keep the spikes the maxima
        p.data.copy_(torch.from_numpy(values))
        q.data.copy_(torch.from_numpy(values.astype(np.float32)))
    loss = F.max_pool2d(F.gelu(bn(x)), 3, 2, 1).mean()
    ref = tF.max_pool2d(tF.gelu(ref_bn(rx)), 3, 2, 1).mean()
    assert loss.dtype == torch.bfloat16
    assert_close(loss, ref, 2e-2, "loss")
    loss.backward()
    ref.backward()
    assert x.grad.dtype == torch.bfloat16 and bn.weight.grad.dtype == bn.bias.grad.dtype == torch.float32
    assert_close(x.grad, rx.grad, 2e-2, "x.grad")
    assert_close(bn.weight.grad, ref_bn.weight.grad, 2e-2, "weight.grad")
    assert_close(bn.bias.grad, ref_bn.bias.grad, 2e-2, "bias.grad")
    assert_close(bn.running_mean, ref_bn.running_mean, TOL["ieee"], "running_mean")
    assert_close(bn.running_var, ref_bn.running_var, TOL["ieee"], "running_var")
