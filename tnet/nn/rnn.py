"""torch.nn's recurrent layers: RNNCell, LSTMCell and GRUCell, and the stacked, optionally
bidirectional RNN, LSTM and GRU, with torch's parameters (names, shapes, gate order: i, f, g, o for
the LSTM, r, z, n for the GRU) and torch's init, U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) for
every parameter, drawn from rng (tnet's init stream by default: a seed gives the same weights on CPU
and GPU, not torch's numbers).

A layer's input projection for all time steps is one GEMM; each step then costs one GEMM (h @
weight_hh.T + bias_hh) and the element-wise part of its cell: for the LSTM and the GRU one fused kernel
(kernels/rnn.py) recorded as one node, torch's _thnn_fused_lstm_cell's and _thnn_fused_gru_cell's
(ThnnFusedLstmCellBackward0, ThnnFusedGruCellBackward0: h' and c' share it), whose backward is one kernel
too; its create_graph gradient, and the whole step where the kernels do not take the operands (an empty
batch), are composed of tnet's ops. The RNN's cell is composed (2 launches). One copy per step where the
outputs are stacked.

A PackedSequence input (tnet.nn.utils.rnn's) runs step t on the batch_sizes[t] sequences still
running (the batch is sorted longest first, so those are the first rows: views), the others' states
kept; the output is packed as the input, and h_n holds each sequence's state at its own length.

LSTM(proj_size > 0) projects each step's h by weight_hr_l{k} ([proj_size, hidden_size]), as torch's.

Differences from torch: flatten_parameters() does nothing (there is no cuDNN weight buffer); under autocast the GEMMs run in 16 bits but the outputs and states come out
float32 (the states are, and the element-wise ops promote), where torch's are 16-bit."""
import math
import numbers
import warnings

import numpy as np

from .. import functional as F
from ..factory import init_generator, zeros, zeros_like
from ..kernels import rnn as _rnn
from ..kernels.launch import check
from ..kernels.pointwise import result_type
from ..tensor import Tensor, record, record_outputs
from . import Module, Parameter, factory_args, init
from .utils import PackedSequence, batch_sizes_of, packed_like


FUSED = True  # the LSTM and GRU cells on kernels/rnn.py (else composed: for A/B timing)


# ---- one time step of each cell: gi = x @ weight_ih.T + bias_ih, computed before ----

def _rnn_step(act):
    return lambda gi, h, w_hh, b_hh: act(F.add(gi, F.linear(h, w_hh, b_hh)))


def _lstm_step(gi, state, w_hh, b_hh, w_hr=None):
    """(h, c) -> (h', c'): i, f, g, o = the gates; c' = f * c + i * g, h' = o * tanh(c'), projected by
    w_hr where the LSTM has proj_size > 0 (h' @ w_hr.T)."""
    h, c = state
    h, c = _lstm_cell(gi, F.linear(h, w_hh, b_hh), c)
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_step(gi, h, w_hh, b_hh):
    """h -> h': r, z = sigmoid of the first two gates, n = tanh(gi_n + r * gh_n), h' = n + z * (h - n)
    (torch's (1 - z) * n + z * h)."""
    return _gru_cell(gi, F.linear(h, w_hh, b_hh), h)


# ---- the cells' element-wise part: gi [B, G], gh = h @ w_hh.T (+ bias) [B, G] and the state [B, H] ----
# One fused node where kernels/rnn.py takes the operands; their outputs are of the dtype the composition's
# promotion gives (a 16-bit step's stay 16-bit; float32 states under autocast make them float32).

def _lstm_cell(gi, gh, c):
    """(h', c') of the LSTM's gates gi + gh [B, 4H] from c [B, H]."""
    X, Y, C = gi.memory, gh.memory, c.memory
    if not (FUSED and _rnn.takes(X, Y, C, 4)):
        return _lstm_composed(gi, gh, c)

    def backward(gs):
        dgates, dc = _rnn.lstm_cell_backward(X, Y, C, *gs)
        return dgates, dgates.view(dgates.shape), dc

    def graph(gs, outs):
        return _lstm_grads(gi, gh, c, *(zeros_like(o) if g is None else g for g, o in zip(gs, outs)))
    return record_outputs("_thnn_fused_lstm_cell", _rnn.lstm_cell(X, Y, C, result_type((X, Y, C))), (gi, gh, c),
                          backward, saved=(X, Y, C), graph=graph)


def _lstm_composed(gi, gh, c):
    i, f, g, o = F.chunk(F.add(gi, gh), 4, 1)
    c = F.add(F.mul(F.sigmoid(f), c), F.mul(F.sigmoid(i), F.tanh(g)))
    return F.mul(F.sigmoid(o), F.tanh(c)), c


def _sigmoid_slope(s):
    """s (1 - s): the derivative of the sigmoid whose value is s."""
    return F.mul(s, F.rsub(s, 1))


def _lstm_grads(gi, gh, c, dh, dc):
    """The gradients of gi, gh and c for those of h' and c' (the backward kernel's formula), of tnet's ops: the
    create_graph gradient of the fused cell."""
    i, f, g, o = F.chunk(F.add(gi, gh), 4, 1)
    i, f, g, o = F.sigmoid(i), F.sigmoid(f), F.tanh(g), F.sigmoid(o)
    t = F.tanh(F.add(F.mul(f, c), F.mul(i, g)))
    dc = F.add(dc, F.mul(F.mul(dh, o), F.rsub(F.mul(t, t), 1)))
    dgates = F.cat([F.mul(F.mul(dc, g), _sigmoid_slope(i)), F.mul(F.mul(dc, c), _sigmoid_slope(f)),
                    F.mul(F.mul(dc, i), F.rsub(F.mul(g, g), 1)), F.mul(F.mul(dh, t), _sigmoid_slope(o))], 1)
    return dgates, dgates, F.mul(dc, f)


def _gru_gates(gi, gh, H):
    """(r, z, gh_n, n) of tnet's ops."""
    r, z = F.chunk(F.sigmoid(F.add(F.narrow(gi, 1, 0, 2 * H), F.narrow(gh, 1, 0, 2 * H))), 2, 1)
    gh_n = F.narrow(gh, 1, 2 * H, H)
    return r, z, gh_n, F.tanh(F.add(F.narrow(gi, 1, 2 * H, H), F.mul(r, gh_n)))


def _gru_cell(gi, gh, h):
    """h' of the GRU's gates gi, gh [B, 3H] (gh with bias_hh) from h [B, H]."""
    X, Y, S = gi.memory, gh.memory, h.memory
    if not (FUSED and _rnn.takes(X, Y, S, 3)):
        _, z, _, n = _gru_gates(gi, gh, h.shape[1])
        return F.add(n, F.mul(z, F.sub(h, n)))
    return record("_thnn_fused_gru_cell", _rnn.gru_cell(X, Y, S, result_type((X, Y, S))), (gi, gh, h),
                  lambda g: _rnn.gru_cell_backward(X, Y, S, g), saved=(X, Y, S),
                  graph=lambda g, out: _gru_grads(gi, gh, h, g))


def _gru_grads(gi, gh, h, dy):
    """The gradients of gi, gh and h for h''s (the backward kernel's formula), of tnet's ops: the create_graph
    gradient of the fused cell."""
    r, z, gh_n, n = _gru_gates(gi, gh, h.shape[1])
    dz = F.mul(F.mul(dy, F.sub(h, n)), _sigmoid_slope(z))
    dn = F.mul(F.mul(dy, F.rsub(z, 1)), F.rsub(F.mul(n, n), 1))
    dr = F.mul(F.mul(dn, gh_n), _sigmoid_slope(r))
    return F.cat([dr, dz, dn], 1), F.cat([dr, dz, F.mul(dn, r)], 1), F.mul(dy, z)


STEPS = {"RNN_TANH": _rnn_step(F.tanh), "RNN_RELU": _rnn_step(F.relu), "LSTM": _lstm_step, "GRU": _gru_step}
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _project(mode, x, w_ih, b_ih, b_hh):
    """(gi, the bias each step adds): x @ w_ih.T + b_ih. The RNN and the LSTM add bias_hh to gi
    alone, so it goes into gi's GEMM (b_ih + b_hh) and the steps add none: each step's backward
    saves a bias reduction. The GRU's bias_hh (gate n's inside r * (...)) stays in the step."""
    if mode != "GRU" and b_hh is not None:
        return F.linear(x, w_ih, F.add(b_ih, b_hh)), None
    return F.linear(x, w_ih, b_ih), b_hh


def cell_step(mode, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One step of a cell of `mode` (STEPS' keys) on input [batch, input_size] from hx (the LSTM's: (h, c))."""
    gi, b_hh = _project(mode, input, w_ih, b_ih, b_hh)
    return STEPS[mode](gi, tuple(hx) if mode == "LSTM" else hx, w_hh, b_hh)


# torch's top-level cells (aten's, which torch's cells call; a copied custom RNN calls them too): input [batch,
# input_size], hx [batch, hidden_size] (lstm_cell's a pair (h, c), and it returns (h', c'))
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return cell_step("RNN_TANH", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return cell_step("RNN_RELU", input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return cell_step("LSTM", input, hx, w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return cell_step("GRU", input, hx, w_ih, w_hh, b_ih, b_hh)


def _time_steps(x, sizes=None):
    """x's slices along dim 0 (views): one row each, selected, or (sizes: x is packed data) step t's next sizes[t]
    rows, kept 2-D. Their gradients go into one buffer of x's size (the tape adds a slice's gradient in place)."""
    return F.unbind(x, 0) if sizes is None else F.split(x, [int(n) for n in sizes], 0)


def _draw(module):
    """torch's reset_parameters of the recurrent layers: every parameter from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in parameters() order, from module.rng."""
    rng = init_generator() if module.rng is None else module.rng
    bound = 1 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for p in module.parameters():
        init.uniform_(p, -bound, bound, generator=rng)


def _not_packed(name, input):
    if not isinstance(input, Tensor):
        if type(input).__name__ == "PackedSequence":
            raise TypeError(f"{name}: input must be a tnet.Tensor or, for the RNN layers, a PackedSequence of "
                            f"tnet.nn.utils.rnn, got {type(input).__module__}'s PackedSequence")
        raise TypeError(f"{name}: input must be a tnet.Tensor, got {type(input).__name__}")


# ---- cells ----

class RNNCellBase(Module):
    """The cells' parameters: weight_ih [gates * hidden, input], weight_hh [gates * hidden, hidden],
    bias_ih and bias_hh [gates * hidden] (None with bias=False)."""
    mode = None

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None, *, rng=None):
        super().__init__()
        factory_args(type(self).__name__, device, dtype)
        self.input_size, self.hidden_size, self.bias, self.rng = input_size, hidden_size, bias, rng
        G = num_chunks * hidden_size
        self.weight_ih = Parameter(np.zeros((G, input_size), np.float32))
        self.weight_hh = Parameter(np.zeros((G, hidden_size), np.float32))
        self.register_parameter("bias_ih", Parameter(np.zeros(G, np.float32)) if bias else None)
        self.register_parameter("bias_hh", Parameter(np.zeros(G, np.float32)) if bias else None)
        self.reset_parameters()

    def reset_parameters(self):
        _draw(self)

    def forward(self, input, hx=None):
        """input [batch, input_size] or [input_size] (unbatched); hx as the output (the LSTM: a pair
        (h, c)), zeros if None. Returns h' (the LSTM: (h', c'))."""
        name = type(self).__name__
        _not_packed(name, input)
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        states = hx if isinstance(hx, (tuple, list)) else (hx,)
        for i, s in enumerate(states):
            if s is not None and s.ndim not in (1, 2):
                what = f"hx[{i}]" if self.mode == "LSTM" else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {s.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else F.unsqueeze(input, 0)
        check(x.shape[1] == self.input_size,
              lambda: f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}")
        if hx is None:
            states = (zeros(x.shape[0], self.hidden_size),) * (2 if self.mode == "LSTM" else 1)
        elif not batched:
            states = tuple(F.unsqueeze(s, 0) for s in states)
        for s in states:
            check(s.shape == (x.shape[0], self.hidden_size),
                  lambda: f"{name}: hidden state is {s.shape}, expected {(x.shape[0], self.hidden_size)}")
        state = cell_step(self.mode, x, states if self.mode == "LSTM" else states[0], self.weight_ih, self.weight_hh,
                          self.bias_ih, self.bias_hh)
        if not batched:
            state = tuple(F.squeeze(s, 0) for s in state) if self.mode == "LSTM" else F.squeeze(state, 0)
        return state

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        return text + (f", nonlinearity={nonlinearity}" if nonlinearity != "tanh" else "")


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (nonlinearity='relu': relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None, *, rng=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype, rng=rng)
        self.nonlinearity = nonlinearity

    @property
    def mode(self):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return "RNN_" + self.nonlinearity.upper()


class LSTMCell(RNNCellBase):
    """The LSTM step, gates i, f, g, o in weight_ih's rows, as torch's."""
    mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None, *, rng=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype, rng=rng)


class GRUCell(RNNCellBase):
    """The GRU step, gates r, z, n in weight_ih's rows, as torch's."""
    mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None, *, rng=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype, rng=rng)


# ---- stacked layers over a sequence ----

class RNNBase(Module):
    """torch's RNNBase: num_layers layers (each of 2 directions if bidirectional), the parameters of
    layer k weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (the reverse direction's with
    the suffix _reverse), registered in torch's order. Dropout (training mode only) on the output of
    every layer but the last."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None, *, rng=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        for arg, v, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                             ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
            if not isinstance(v, kind):
                raise TypeError(f"{arg} should be of type {kind.__name__}, got: {type(v).__name__}")
        for arg, v in (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)):
            if v <= 0:
                raise ValueError(f"{arg} must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size > 0 and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        factory_args(type(self).__name__, device, dtype)
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size, self.rng = bidirectional, proj_size, rng
        G, out = GATES[mode] * hidden_size, proj_size or hidden_size  # out: the width of h
        # the parameter names, flat and per layer and direction (_all_weights: scripts read it, as DeepAR's
        # forget-gate bias init `for names in self.lstm._all_weights`)
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[:2 if bidirectional else 1]:
                width = input_size if layer == 0 else out * (2 if bidirectional else 1)
                shapes = [("weight_ih", (G, width)), ("weight_hh", (G, out))]
                shapes += [("bias_ih", (G,)), ("bias_hh", (G,))] if bias else []
                shapes += [("weight_hr", (proj_size, hidden_size))] if proj_size else []
                names = [f"{kind}_l{layer}{suffix}" for kind, _ in shapes]
                for name, (_, shape) in zip(names, shapes):
                    setattr(self, name, Parameter(np.zeros(shape, np.float32)))
                self._flat_weights_names += names
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        _draw(self)

    def flatten_parameters(self):
        """A no-op: tnet keeps no cuDNN weight buffer."""

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters per layer and direction, as torch's: [[weight_ih, weight_hh, bias_ih, bias_hh
        (, weight_hr)], ...]."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _state_shapes(self, batch):
        """The initial states' shapes: h's (proj_size wide where the LSTM projects), and the LSTM's c's."""
        lead = (self.num_layers * (2 if self.bidirectional else 1), batch)
        h = lead + (self.proj_size or self.hidden_size,)
        return (h, lead + (self.hidden_size,)) if self.mode == "LSTM" else (h,)

    def forward(self, input, hx=None):
        """input [T, batch, input_size] ([batch, T, input_size] if batch_first; [T, input_size]
        unbatched); hx [num_layers * directions, batch, hidden_size] (the LSTM: a pair (h_0, c_0)),
        zeros if None. Returns (output [T, batch, directions * hidden_size], h_n) (the LSTM: (output,
        (h_n, c_n))), batch first and unbatched as the input. A PackedSequence input gives a
        PackedSequence output (batch_first does not apply) and h_n at each sequence's length."""
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(self.mode, self.mode)
        if isinstance(input, PackedSequence):
            return self._packed(input, hx)
        _not_packed(name, input)
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        lstm = self.mode == "LSTM"
        batched = input.ndim == 3
        states = None if hx is None else tuple(hx) if lstm else (hx,)
        if states is not None:
            ndims = tuple(s.ndim for s in states)
            what = "hx and cx" if lstm else "hx"
            got = f"({ndims[0]}-D, {ndims[1]}-D) tensors" if lstm else f"{ndims[0]}-D tensor"
            check(all(n == input.ndim for n in ndims),
                  lambda: f"For {'batched 3-D' if batched else 'unbatched 2-D'} input, {what} should also be "
                          f"{input.ndim}-D but got {got}")
            # a state of another dtype than the input's raises, as torch's (its GEMMs' or oneDNN's RuntimeError):
            # the LSTM's cell state would otherwise be taken in its own dtype
            check(all(s.dtype == input.dtype for s in states),
                  lambda: f"{name}: expected {what} of the input's dtype {input.dtype}, got "
                          f"{', '.join(str(s.dtype) for s in states)}")
            if not batched:
                states = tuple(F.unsqueeze(s, 1) for s in states)
        x = input if batched else F.unsqueeze(input, 0 if self.batch_first else 1)
        if self.batch_first:
            x = F.transpose(x, 0, 1)
        check(x.shape[2] == self.input_size,
              lambda: f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {x.shape[2]}")
        output, finals = self._layers(x, self._initial(states, x.shape[1]))
        if self.batch_first:
            output = F.transpose(output, 0, 1)
        if not batched:
            output = F.squeeze(output, 0 if self.batch_first else 1)
            finals = [F.squeeze(s, 1) for s in finals]
        return output, (tuple(finals) if lstm else finals[0])

    def _initial(self, states, batch):
        """The initial states (h, or the LSTM's (h, c)), checked, zeros where None."""
        lstm, shapes = self.mode == "LSTM", self._state_shapes(batch)
        if states is None:
            return tuple(zeros(*shape) for shape in shapes)
        for i, (s, expected) in enumerate(zip(states, shapes)):
            check(s.shape == expected, lambda: f"Expected hidden{f'[{i}]' if lstm else ''} size {expected}, got "
                                               f"{list(s.shape)}")
        return states

    def _packed(self, input, hx):
        """forward of a PackedSequence: hx and h_n in the batch's original order, as torch's (its
        rows taken to the sorted order and back by sorted_indices and unsorted_indices)."""
        lstm, x, sizes = self.mode == "LSTM", input.data, batch_sizes_of(input)
        check(x.ndim == 2, lambda: f"input must have 2 dimensions, got {x.ndim}")
        check(x.shape[1] == self.input_size,
              lambda: f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {x.shape[1]}")
        states = self._initial(None if hx is None else tuple(hx) if lstm else (hx,), int(sizes[0]))
        if hx is not None and input.sorted_indices is not None:
            states = tuple(F.index_select(s, 1, input.sorted_indices) for s in states)
        output, finals = self._layers(x, states, [int(n) for n in sizes])
        if input.unsorted_indices is not None:
            finals = [F.index_select(s, 1, input.unsorted_indices) for s in finals]
        return packed_like(input, output), (tuple(finals) if lstm else finals[0])

    def _layers(self, x, states, sizes=None):
        """x [T, batch, input_size] (or packed data [sum(sizes), input_size], step t's batch sizes[t])
        through every layer and direction from the initial states (each [layers * directions, batch,
        hidden]): (the last layer's output, as x, the final states, stacked)."""
        step, lstm = STEPS[self.mode], self.mode == "LSTM"
        directions = 2 if self.bidirectional else 1
        T, batch = (x.shape[0] if sizes is None else len(sizes)), states[0].shape[1]
        weights, finals = self.all_weights, []
        for layer in range(self.num_layers):
            outputs = []
            for d in range(directions):
                k = layer * directions + d
                w_ih, w_hh, *rest = weights[k]
                b_ih, b_hh = rest[:2] if self.bias else (None, None)
                w_hr = rest[-1] if self.proj_size else None
                gi, b_hh = _project(self.mode, x, w_ih, b_ih, b_hh)  # one GEMM for the input of every step
                gi = _time_steps(gi, sizes)
                state = tuple(F.select(s, 0, k) for s in states)
                advance = ((lambda g, s: step(g, s, w_hh, b_hh, w_hr)) if lstm else
                           (lambda g, s: (step(g, s[0], w_hh, b_hh),)))
                hs = [None] * T
                for t in (reversed(range(T)) if d else range(T)):
                    rows = batch if sizes is None else sizes[t]
                    if rows == batch:
                        state = advance(gi[t], state)
                        hs[t] = state[0]
                    else:  # packed: the first rows run step t; the others are done (not yet begun, reversed)
                        head = advance(gi[t], tuple(F.narrow(s, 0, 0, rows) for s in state))
                        state = tuple(F.cat([h, F.narrow(s, 0, rows, batch - rows)]) for h, s in zip(head, state))
                        hs[t] = head[0]
                outputs.append(F.stack(hs) if sizes is None else F.cat(hs))
                finals.append(state)
            x = F.cat(outputs, -1) if directions == 2 else outputs[0]
            if layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        return x, [F.stack([f[i] for f in finals]) for i in range(len(finals[0]))]

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        defaults = {"proj_size": 0, "num_layers": 1, "bias": True, "batch_first": False, "dropout": 0.0,
                    "bidirectional": False}
        return text + "".join(f", {k}={getattr(self, k)}" for k, v in defaults.items() if getattr(self, k) != v)


class RNN(RNNBase):
    """torch.nn.RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (nonlinearity='relu': relu),
    torch's argument order (nonlinearity fourth)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, *, rng=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_" + nonlinearity.upper(), input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype, rng=rng)


class LSTM(RNNBase):
    """torch.nn.LSTM; hx and the result's second item are pairs (h, c) (h proj_size wide where
    proj_size > 0)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None, *, rng=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype, rng=rng)


class GRU(RNNBase):
    """torch.nn.GRU."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, *, rng=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype, rng=rng)
