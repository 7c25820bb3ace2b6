"""nn.RNN, LSTM, GRU and their cells against torch's in float64: torch's weights copied in by
state_dict, then the outputs and the gradients of the input, the initial states and every parameter,
on small shapes (I=3, H=4, T=5, batch 2); packed sequences (tnet.nn.utils.rnn) and the layers on them; the fused
LSTM and GRU cells (kernels/rnn.py) on odd sizes, in bf16, under create_graph, and the launches a step makes."""
import warnings

import numpy as np
import pytest
import torch

import tnet
from tnet import nn
from helpers import MEMORY_OPS, TOL, Recorder, assert_close, launches, pair

I, H, T, B = 3, 4, 5, 2


def twins(ours, theirs):
    """tnet's module holding torch's (float64) initial weights; both in eval mode."""
    theirs = theirs.double().eval()
    ours.load_state_dict(theirs.state_dict())
    return ours.eval(), theirs


def flat(lib, outputs):
    """The tensors of a nested (output, (h, c)) result, flattened and joined: one seed covers all."""
    leaves = []
    stack = [outputs]
    while stack:
        v = stack.pop(0)
        if isinstance(v, (tuple, list)):
            stack[:0] = list(v)
        else:
            leaves.append(v.reshape(-1))
    return lib.cat(leaves)


def compare(ours, theirs, inputs, rng, call=lambda m, x, *h: m(x, *h)):
    """call(module, *inputs) of both: the joined outputs, then the gradients of the inputs (tnet,
    torch leaf pairs; an LSTM's state a pair of pairs) and of every parameter, by name."""
    unpack = lambda side: [tuple(p[side] for p in v) if isinstance(v[0], tuple) else v[side] for v in inputs]
    out, ref = flat(tnet, call(ours, *unpack(0))), flat(torch, call(theirs, *unpack(1)))
    assert_close(out, ref, TOL["ieee"], "forward")
    g = rng.standard_normal(ref.shape)
    out.backward(g)
    ref.backward(torch.tensor(g).float().double())
    pairs = [p for v in inputs for p in (v if isinstance(v[0], tuple) else [v])]
    for i, (t, r) in enumerate(pairs):
        assert_close(t.grad, r.grad, TOL["ieee"], f"gradient of input {i}")
    grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, grads[name].grad, TOL["ieee"], f"gradient of {name}")


def packing(lib):
    return lib.nn.utils.rnn if lib is torch else tnet.nn.utils.rnn


def test_pack_and_pad_round_trips_match_torch(rng):
    for batch_first in (False, True):
        for lengths, enforce_sorted in (([5, 3, 3, 1], True), ([2, 5, 1, 3], False)):
            for total_length in (None, 7):
                x = pair(rng, *((4, T) if batch_first else (T, 4)), 2)
                got = {}
                for lib, v in ((tnet, x[0]), (torch, x[1])):
                    R = packing(lib)
                    packed = R.pack_padded_sequence(v, lengths, batch_first, enforce_sorted)
                    padded, lens = R.pad_packed_sequence(packed, batch_first, -1.5, total_length)
                    got[lib] = packed, padded, lens
                (p, out, lens), (q, ref, ref_lens) = got[tnet], got[torch]
                what = f"batch_first={batch_first}, lengths {lengths}, total_length={total_length}"
                assert_close(p.data, q.data, 0, f"packed data, {what}")
                assert p.batch_sizes.tolist() == q.batch_sizes.tolist()
                for ours, theirs in ((p.sorted_indices, q.sorted_indices), (p.unsorted_indices, q.unsorted_indices)):
                    assert (ours is None and theirs is None) or ours.tolist() == theirs.tolist()
                assert_close(out, ref, 0, f"padded, {what}")
                assert lens.tolist() == ref_lens.tolist() == lengths
                g = rng.standard_normal(ref.shape)
                out.backward(g)
                ref.backward(torch.tensor(g))
                assert_close(x[0].grad, x[1].grad, TOL["ieee"], f"gradient, {what}")


def test_pack_sequence_unpack_and_errors(rng):
    seqs = [pair(rng, n, 2) for n in (2, 4, 1)]
    p = tnet.nn.utils.rnn.pack_sequence([s for s, _ in seqs], enforce_sorted=False)
    q = torch.nn.utils.rnn.pack_sequence([r for _, r in seqs], enforce_sorted=False)
    assert_close(p.data, q.data, 0, "pack_sequence")
    assert p.batch_sizes.tolist() == q.batch_sizes.tolist() and p.sorted_indices.tolist() == q.sorted_indices.tolist()
    for ours, (_, theirs) in zip(tnet.nn.utils.rnn.unpack_sequence(p), seqs):
        assert_close(ours, theirs, 0, "unpack_sequence")
    g = rng.standard_normal(q.data.shape)
    p.data.backward(g)
    q.data.backward(torch.tensor(g))
    for t, r in seqs:
        assert_close(t.grad, r.grad, TOL["ieee"], "pack_sequence's gradient")
    rebuilt = tnet.nn.utils.rnn.PackedSequence(p.data, p.batch_sizes.tolist(), p.sorted_indices)
    assert rebuilt.unsorted_indices.tolist() == q.unsorted_indices.tolist()  # invert_permutation
    x = tnet.zeros(T, 2, I)
    R = tnet.nn.utils.rnn
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        R.pack_padded_sequence(x, [2, 3])
    with pytest.raises(RuntimeError, match="has to be greater than 0"):
        R.pack_padded_sequence(x, [3, 0])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size"):
        R.pack_padded_sequence(x, [3])
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        R.pad_packed_sequence(R.pack_padded_sequence(x, np.array([3, 2])), total_length=2)


def packed_call(lengths, enforce_sorted, batch_first=False, padded_output=False):
    """A compare() call: the input packed from [T, B, *] (or [B, T, *]) with these lengths, then
    (the packed output's data, or the output padded again, h_n) of the module on it."""
    def call(m, x, *h):
        R = packing(torch if isinstance(m, torch.nn.Module) else tnet)
        out, state = m(R.pack_padded_sequence(x, lengths, batch_first, enforce_sorted), *h)
        return (R.pad_packed_sequence(out, batch_first)[0] if padded_output else out.data), state
    return call


def test_lstm_and_gru_on_packed_sequences(rng, ieee):
    ours, theirs = twins(nn.LSTM(I, H, 2, bidirectional=True), torch.nn.LSTM(I, H, 2, bidirectional=True))
    x, h0, c0 = pair(rng, T, 3, I), pair(rng, 4, 3, H), pair(rng, 4, 3, H)
    compare(ours, theirs, [x, (h0, c0)], rng, packed_call([3, 5, 1], enforce_sorted=False))
    ours, theirs = twins(nn.GRU(I, H, 2, bidirectional=True), torch.nn.GRU(I, H, 2, bidirectional=True))
    compare(ours, theirs, [pair(rng, 4, 3, I)], rng,  # [B, T, I], h0 zeros, lengths sorted, padded again
            packed_call([3, 3, 2, 1], enforce_sorted=True, batch_first=True, padded_output=True))
    ours, theirs = twins(nn.RNN(I, H), torch.nn.RNN(I, H))
    compare(ours, theirs, [pair(rng, 3, 2, I), pair(rng, 1, 2, H)], rng, packed_call([2, 3], enforce_sorted=False))


def test_lstm_two_layers_bidirectional_batch_first(rng, ieee):
    ours, theirs = twins(nn.LSTM(I, H, 2, batch_first=True, bidirectional=True, dropout=0.3),
                         torch.nn.LSTM(I, H, 2, batch_first=True, bidirectional=True, dropout=0.3))
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    x, h0, c0 = pair(rng, B, T, I), pair(rng, 4, B, H), pair(rng, 4, B, H)
    compare(ours, theirs, [x, (h0, c0)], rng)


def test_lstm_with_projections(rng, ieee):
    """proj_size > 0: weight_hr_l{k} in torch's place and shape, h and the next layer's input proj_size
    wide; two bidirectional layers with given states, and a packed batch."""
    P = 2
    ours, theirs = twins(nn.LSTM(I, H, 2, bidirectional=True, proj_size=P),
                         torch.nn.LSTM(I, H, 2, bidirectional=True, proj_size=P))
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]
    assert repr(ours) == repr(theirs).replace("torch.nn.", "") and len(ours.all_weights[0]) == 5
    assert ours._all_weights == theirs._all_weights  # the names per layer and direction, which scripts read
    x, h0, c0 = pair(rng, 3, B, I), pair(rng, 4, B, P), pair(rng, 4, B, H)
    compare(ours, theirs, [x, (h0, c0)], rng)
    ours, theirs = twins(nn.LSTM(I, H, proj_size=P), torch.nn.LSTM(I, H, proj_size=P))
    compare(ours, theirs, [pair(rng, 3, 3, I)], rng, packed_call([3, 1, 2], enforce_sorted=False))

def test_gru_two_layers_and_rnn_relu_bidirectional_unbatched(rng, ieee):
    ours, theirs = twins(nn.GRU(I, H, 2), torch.nn.GRU(I, H, 2))
    compare(ours, theirs, [pair(rng, 3, B, I), pair(rng, 2, B, H)], rng)  # T=3: the slow interpreter
    ours, theirs = twins(nn.RNN(I, H, 1, "relu", bidirectional=True),
                         torch.nn.RNN(I, H, 1, "relu", bidirectional=True))
    compare(ours, theirs, [pair(rng, T, I), pair(rng, 2, H)], rng)  # unbatched: [T, I], h0 [D, H]
    ours, theirs = twins(nn.RNN(I, H, bias=False), torch.nn.RNN(I, H, bias=False))
    compare(ours, theirs, [pair(rng, 2, B, I)], rng)  # h0 zeros


def test_cells_batched_and_unbatched(rng, ieee):
    for kind, args in (("RNNCell", ("relu",)), ("LSTMCell", ()), ("GRUCell", ())):
        ours, theirs = twins(getattr(nn, kind)(I, H, True, *args), getattr(torch.nn, kind)(I, H, True, *args))
        assert list(ours.state_dict()) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
        state = [(pair(rng, B, H), pair(rng, B, H))] if kind == "LSTMCell" else [pair(rng, B, H)]
        compare(ours, theirs, [pair(rng, B, I), *state], rng)
        ours.zero_grad()
        theirs.zero_grad()
        compare(ours, theirs, [pair(rng, I)], rng)  # unbatched, hx zeros


def test_init_shapes_and_errors():
    tnet.manual_seed(0)
    m = nn.GRU(I, H, 2, bidirectional=True)
    names = [n for n, _ in m.named_parameters()]
    assert names == [n for n, _ in torch.nn.GRU(I, H, 2, bidirectional=True).named_parameters()]
    values = np.concatenate([p.numpy().ravel() for p in m.parameters()])
    assert np.abs(values).max() <= 1 / np.sqrt(H) and values.std() > 0.2  # U(-1/sqrt(H), 1/sqrt(H))
    tnet.manual_seed(0)
    assert np.array_equal(nn.GRU(I, H, 2, bidirectional=True).weight_hh_l1_reverse.numpy(), m.weight_hh_l1_reverse.numpy())
    assert len(m.all_weights) == 4 and m.flatten_parameters() is None
    assert repr(nn.LSTM(I, H, 2, batch_first=True)) == repr(torch.nn.LSTM(I, H, 2, batch_first=True))
    x = tnet.zeros(T, B, I)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(4, 2, 4\), got \[4, 3, 4\]"):
        m(x, tnet.zeros(4, 3, H))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(tnet.zeros(T, B, 5))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D"):
        m(tnet.zeros(T))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(I, H, proj_size=H)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(I, H, nonlinearity="gelu")
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D"):
        nn.LSTMCell(I, H)(x)
    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(T, B, I), [T, 2])
    with pytest.raises(TypeError, match="PackedSequence"):
        m(packed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.LSTM(I, H, dropout=0.5)
    assert "num_layers greater than 1" in str(caught[0].message)


def test_dropout_between_layers_in_training_only_and_torch_as_memory_only():
    tnet.manual_seed(0)
    m = nn.RNN(I, H, 2, dropout=0.5)
    x = tnet.randn(2, B, I)
    with tnet.no_grad():
        out_eval, h_eval = m.eval()(x)
        out_train, h_train = m.train()(x)
    assert not np.allclose(out_train.numpy(), out_eval.numpy())
    assert np.allclose(h_train.numpy()[0], h_eval.numpy()[0])  # dropout after the first layer, not inside it
    x.requires_grad = True
    with Recorder() as rec:  # training mode: the dropout between the layers, then the backward
        out, (h, c) = nn.LSTM(I, H, 2, dropout=0.5)(x[:1])
        (out.sum() + c.sum() + nn.GRUCell(I, H)(x[0]).sum()).backward()
    assert rec.ops <= MEMORY_OPS, f"torch math inside tnet: {sorted(rec.ops - MEMORY_OPS)}"


@pytest.mark.parametrize("name, gates", [("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("lstm_cell", 4),
                                         ("gru_cell", 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_top_level_cells_as_torch(rng, ieee, name, gates, bias):
    """torch.rnn_tanh_cell, rnn_relu_cell, lstm_cell and gru_cell (aten's cells, which a copied custom RNN calls):
    the step and every gradient, against torch in float64."""
    leaves = [pair(rng, *shape) for shape in [(3, 5), (3, 4)] + [(3, 4)] * (name == "lstm_cell")
              + [(gates * 4, 5), (gates * 4, 4)] + [(gates * 4,)] * (2 * bias)]
    mine, theirs = ([v[i] for v in leaves] for i in (0, 1))
    split = lambda args: (args[0], tuple(args[1:3]) if name == "lstm_cell" else args[1],  # noqa: E731
                          *args[3 if name == "lstm_cell" else 2:])
    out, ref = getattr(tnet, name)(*split(mine)), getattr(torch, name)(*split(theirs))
    out, ref = (out, ref) if name == "lstm_cell" else ((out,), (ref,))
    seeds = [rng.standard_normal(r.shape) for r in ref]
    tnet.autograd.backward(list(out), [tnet.tensor(g) for g in seeds])
    torch.autograd.backward(list(ref), [torch.tensor(g) for g in seeds])
    for o, r in zip(out, ref):
        assert_close(o, r, TOL["ieee"], name)
    for i, (t, r) in enumerate(leaves):
        assert_close(t.grad, r.grad, TOL["ieee"], f"{name}: gradient of argument {i}")


# ---- the fused cells (kernels/rnn.py): one node and one launch each way per step ----

def cell_leaves(rng, name, n, i, h, dtype=torch.float32, scale=1.0):
    """(tnet, torch float64) leaf pairs of a top-level cell's arguments: input [n, i], the state(s) [n, h], w_ih,
    w_hh and both biases, of dtype (their values rounded to it on both sides)."""
    gates = 4 if name == "lstm_cell" else 3
    shapes = [(n, i)] + [(n, h)] * (2 if name == "lstm_cell" else 1) + [(gates * h, i), (gates * h, h)] + \
        [(gates * h,)] * 2
    return [pair(rng, *shape, dtype=dtype, scale=scale) for shape in shapes]


def cell_call(lib, name, args):
    """lib's top-level cell on args (its leaves' side): a tuple of its outputs."""
    state = tuple(args[1:3]) if name == "lstm_cell" else args[1]
    out = getattr(lib, name)(args[0], state, *args[3 if name == "lstm_cell" else 2:])
    return tuple(out) if name == "lstm_cell" else (out,)


@pytest.mark.parametrize("name", ["lstm_cell", "gru_cell"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_cell_matches_torch(rng, ieee, name, dtype):
    """The fused cell on odd sizes (5 rows, 37 hidden units: edge blocks of both), every argument of dtype: its
    outputs (of dtype, as the composition's promotion gives) and the gradients of every argument against torch in
    float64 on the same rounded values; 16-bit within 1e-2 (its GEMMs and outputs round to bf16), torch's node
    (ThnnFusedLstmCellBackward0: h' and c' share it)."""
    leaves = cell_leaves(rng, name, 5, 6, 37, dtype, scale=0.5)
    out, ref = (cell_call(lib, name, [v[k] for v in leaves]) for k, lib in ((0, tnet), (1, torch)))
    node = "ThnnFusedLstmCellBackward0" if name == "lstm_cell" else "ThnnFusedGruCellBackward0"
    assert all(o.dtype == dtype and type(o.grad_fn).__name__ == node for o in out)
    tol = TOL["ieee"] if dtype == torch.float32 else 1e-2
    seeds = [rng.standard_normal(r.shape) for r in ref]
    tnet.autograd.backward(list(out), [tnet.tensor(g, dtype=dtype) for g in seeds])
    torch.autograd.backward(list(ref), [torch.tensor(g, dtype=dtype).double() for g in seeds])
    for o, r in zip(out, ref):
        assert_close(o, r, tol, name)
    for i, (t, r) in enumerate(leaves):
        assert t.grad.dtype == dtype
        assert_close(t.grad, r.grad, tol, f"{name}: gradient of argument {i}")


def test_fused_lstm_cell_takes_one_output_gradient(rng, ieee):
    """h' alone, then c' alone, carries a gradient: the other is none (not zeros) in the fused backward."""
    for which in (0, 1):
        leaves = cell_leaves(rng, "lstm_cell", 3, 4, 5)
        out, ref = (cell_call(lib, "lstm_cell", [v[k] for v in leaves]) for k, lib in ((0, tnet), (1, torch)))
        out[which].sum().backward()
        ref[which].sum().backward()
        for i, (t, r) in enumerate(leaves):
            assert_close(t.grad, r.grad, TOL["ieee"], f"output {which}: gradient of argument {i}")


@pytest.mark.parametrize("name", ["lstm_cell", "gru_cell"])
def test_fused_cell_double_backward(rng, ieee, name):
    """autograd.grad(create_graph=True) through the fused cell (its gradient composed of tnet's ops), then a
    backward of those gradients: both orders against torch's (the LSTM's seed reaches h' alone in one part,
    so a missing output gradient is taken as zeros there too)."""
    leaves = cell_leaves(rng, name, 3, 4, 5, scale=0.7)
    second = []
    for k, lib in ((0, tnet), (1, torch)):
        args = [v[k] for v in leaves]
        out = cell_call(lib, name, args)
        loss = (out[0] * out[0]).sum() + (out[1].sum() if len(out) > 1 else 0)
        grads = lib.autograd.grad(loss, args, create_graph=True)
        if name == "lstm_cell":  # h' alone
            grads = [a + b for a, b in zip(grads, lib.autograd.grad(out[0].sum(), args, create_graph=True))]
        first = [g.detach() for g in grads]
        total = sum((g * g).sum() for g in grads)
        second.append((first, lib.autograd.grad(total, args)))
    (first, grads), (first_ref, grads_ref) = second
    for i in range(len(leaves)):
        assert_close(first[i], first_ref[i], TOL["ieee"], f"{name}: gradient of argument {i}")
        assert_close(grads[i], grads_ref[i], 1e-4, f"{name}: second-order gradient of argument {i}")


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_layer_step_launches(monkeypatch, kind):
    """A layer's time step launches its cell's kernel once forward and once backward, and few element-wise
    kernels besides (the tape's sums of gradient parts, as of h''s two: the output's and the next step's), where
    the composed cell launched 27 (LSTM) and 22 (GRU) a step: counted as what two more steps add."""
    tnet.manual_seed(0)
    m, counts = getattr(nn, kind)(I, H), []
    for steps in (2, 4):
        x = tnet.randn(steps, B, I, requires_grad=True)
        counts.append(launches(monkeypatch, lambda: (m(x)[0] * x[..., :1]).sum().backward()))
        cell = kind.lower() + "_cell_kernel"
        assert counts[-1][cell] == counts[-1][cell.replace("_kernel", "_backward_kernel")] == steps
    more = counts[1] - counts[0]
    assert more["pointwise_kernel"] <= 2 * 3, more


def test_fused_cells_empty_batch_and_autocast(rng):
    """An empty batch takes the composition (the kernels take none), as before; under autocast the 16-bit gates
    meet float32 states, and the outputs promote to float32, as the composition's do."""
    for m in (nn.LSTMCell(I, H), nn.GRUCell(I, H)):
        out = m(tnet.zeros(0, I))
        assert all(o.shape == (0, H) for o in (out if isinstance(out, tuple) else (out,)))
    ours, theirs = twins(nn.LSTM(I, H), torch.nn.LSTM(I, H))
    x = pair(rng, 2, B, I)
    out, (h, c) = ours.bfloat16()(x[0])
    assert out.dtype == h.dtype == c.dtype == torch.float32
    ref, (h_ref, c_ref) = theirs(x[1])
    for o, r in ((out, ref), (h, h_ref), (c, c_ref)):
        assert_close(o, r, TOL["bf16"], "LSTM under autocast")  # its GEMMs' bf16 operands


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("which", [0, 1])
def test_initial_state_of_another_dtype_raises_as_torch(name, which):
    """An initial state (the LSTM's h_0 or c_0) in float16 beside a float32 input raises a RuntimeError, as torch's
    (tnet's LSTM took a float16 c_0 silently)."""
    x = np.ones((2, 1, 3), np.float32)
    for lib in (torch, tnet):
        m = getattr(lib.nn, name)(3, 2)
        states = [lib.zeros(1, 1, 2), lib.zeros(1, 1, 2)]
        states[which] = states[which].half()
        with pytest.raises(RuntimeError):
            m(lib.tensor(x), tuple(states) if name == "LSTM" else states[which])
