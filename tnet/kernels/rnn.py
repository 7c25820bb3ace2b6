"""The element-wise part of an LSTM and a GRU time step, forward and backward, one launch each, over the
rows (batch) x hidden units of the step. The gates come in two parts, gi = x @ w_ih.T + b_ih and
gh = h @ w_hh.T (+ b_hh), read and added here: the composition's sum of them, its activations and products
(LSTM 10 launches, GRU 8, each a pass over memory) become one pass.

- LSTM (gates i, f, g, o in gi's and gh's columns, torch's order): c' = f c + i g, h' = o tanh(c').
- GRU (gates r, z, n): n = tanh(gi_n + r gh_n), h' = n + z (h - n), torch's (1 - z) n + z h.

The backward kernels read the forward's operands again and recompute the gates (a few exps a unit: the
forward saves nothing, where storing the activated gates would cost a tensor of the gates' size a step).
Operands are float32, float16 or bfloat16, each row dense (column stride 1; rows at any stride), computed
in fp32; the outputs are dense, of the dtype the launcher is given, each gradient of its operand's dtype."""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import jit
from .launch import FLOATS, cdiv, check, next_power_of_2
from .pointwise import tanh_from_exp

# Elements per program: the interpreter pays per program, the GPU keeps a block in registers
ELEMENTS = 1 << 14 if INTERPRET else 1024
COLUMNS = 1 << 14 if INTERPRET else 128  # hidden units per program, at most


@triton.jit
def _block(B, H, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr):
    """(rows as int64, columns, mask) of this program's block of the [B, H] step."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    return rows[:, None], cols[None, :], (rows < B)[:, None] & (cols < H)[None, :]


@triton.jit
def _load(ptr, rows, stride, cols, mask):
    return tl.load(ptr + rows * stride + cols, mask=mask, other=0.0).to(tl.float32)


@triton.jit
def _gate(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask):
    """gi + gh of one gate's columns (cols already offset by the gate's k * H)."""
    return _load(gi_ptr, rows, s_gi, cols, mask) + _load(gh_ptr, rows, s_gh, cols, mask)


@triton.jit
def _lstm_gates(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask, H):
    """The activated gates i, f, g, o."""
    i = tl.sigmoid(_gate(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask))
    f = tl.sigmoid(_gate(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols + H, mask))
    g = tanh_from_exp(_gate(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols + 2 * H, mask))
    o = tl.sigmoid(_gate(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols + 3 * H, mask))
    return i, f, g, o


@jit
def lstm_cell_kernel(gi_ptr, gh_ptr, c_ptr, h_out_ptr, c_out_ptr, B, H, s_gi, s_gh, s_c,
                     BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr):
    """gi, gh [B, 4H], c [B, H] -> h', c' [B, H] (dense)."""
    rows, cols, mask = _block(B, H, BLOCK_B, BLOCK_H)
    i, f, g, o = _lstm_gates(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask, H)
    c = f * _load(c_ptr, rows, s_c, cols, mask) + i * g
    tl.store(c_out_ptr + rows * H + cols, c.to(c_out_ptr.dtype.element_ty), mask=mask)
    tl.store(h_out_ptr + rows * H + cols, (o * tanh_from_exp(c)).to(h_out_ptr.dtype.element_ty), mask=mask)


@jit
def lstm_cell_backward_kernel(gi_ptr, gh_ptr, c_ptr, dh_ptr, dc_out_ptr, dgates_ptr, dc_ptr, B, H, s_gi, s_gh, s_c,
                              HAS_DH: tl.constexpr, HAS_DC: tl.constexpr, BLOCK_B: tl.constexpr,
                              BLOCK_H: tl.constexpr):
    """(dh', dc' [B, H] dense, either absent) -> dgates [B, 4H] (the gradient of gi and of gh), dc [B, H], dense."""
    rows, cols, mask = _block(B, H, BLOCK_B, BLOCK_H)
    i, f, g, o = _lstm_gates(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask, H)
    c = _load(c_ptr, rows, s_c, cols, mask)
    dc = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
    do = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
    if HAS_DC:
        dc += _load(dc_out_ptr, rows, H, cols, mask)
    if HAS_DH:
        dh = _load(dh_ptr, rows, H, cols, mask)
        t = tanh_from_exp(f * c + i * g)
        do = dh * t
        dc += dh * o * (1.0 - t * t)
    out = dgates_ptr + rows * (4 * H) + cols
    kind = dgates_ptr.dtype.element_ty
    tl.store(out, (dc * g * i * (1.0 - i)).to(kind), mask=mask)
    tl.store(out + H, (dc * c * f * (1.0 - f)).to(kind), mask=mask)
    tl.store(out + 2 * H, (dc * i * (1.0 - g * g)).to(kind), mask=mask)
    tl.store(out + 3 * H, (do * o * (1.0 - o)).to(kind), mask=mask)
    tl.store(dc_ptr + rows * H + cols, (dc * f).to(dc_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gru_gates(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask, H):
    """(r, z, n, gh_n) of the GRU step."""
    r = tl.sigmoid(_gate(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask))
    z = tl.sigmoid(_gate(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols + H, mask))
    gh_n = _load(gh_ptr, rows, s_gh, cols + 2 * H, mask)
    n = tanh_from_exp(_load(gi_ptr, rows, s_gi, cols + 2 * H, mask) + r * gh_n)
    return r, z, n, gh_n


@jit
def gru_cell_kernel(gi_ptr, gh_ptr, h_ptr, h_out_ptr, B, H, s_gi, s_gh, s_h, BLOCK_B: tl.constexpr,
                    BLOCK_H: tl.constexpr):
    """gi, gh [B, 3H], h [B, H] -> h' [B, H] (dense)."""
    rows, cols, mask = _block(B, H, BLOCK_B, BLOCK_H)
    r, z, n, _ = _gru_gates(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask, H)
    h = n + z * (_load(h_ptr, rows, s_h, cols, mask) - n)
    tl.store(h_out_ptr + rows * H + cols, h.to(h_out_ptr.dtype.element_ty), mask=mask)


@jit
def gru_cell_backward_kernel(gi_ptr, gh_ptr, h_ptr, dh_out_ptr, dgi_ptr, dgh_ptr, dh_ptr, B, H, s_gi, s_gh, s_h,
                             BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr):
    """dh' [B, H] dense -> dgi, dgh [B, 3H], dh [B, H], dense."""
    rows, cols, mask = _block(B, H, BLOCK_B, BLOCK_H)
    r, z, n, gh_n = _gru_gates(gi_ptr, gh_ptr, rows, s_gi, s_gh, cols, mask, H)
    dy = _load(dh_out_ptr, rows, H, cols, mask)
    dz = dy * (_load(h_ptr, rows, s_h, cols, mask) - n) * z * (1.0 - z)
    dn = dy * (1.0 - z) * (1.0 - n * n)
    dr = dn * gh_n * r * (1.0 - r)
    gi_out = dgi_ptr + rows * (3 * H) + cols
    gh_out = dgh_ptr + rows * (3 * H) + cols
    gi_kind = dgi_ptr.dtype.element_ty  # one name a statement: triton 3.6 fails on a dtype in a tuple assignment
    gh_kind = dgh_ptr.dtype.element_ty
    tl.store(gi_out, dr.to(gi_kind), mask=mask)
    tl.store(gi_out + H, dz.to(gi_kind), mask=mask)
    tl.store(gi_out + 2 * H, dn.to(gi_kind), mask=mask)
    tl.store(gh_out, dr.to(gh_kind), mask=mask)
    tl.store(gh_out + H, dz.to(gh_kind), mask=mask)
    tl.store(gh_out + 2 * H, (dn * r).to(gh_kind), mask=mask)
    tl.store(dh_ptr + rows * H + cols, (dy * z).to(dh_ptr.dtype.element_ty), mask=mask)


def takes(gi, gh, state, gates):
    """Whether the kernels take these operands: gi and gh [B, gates * H], state [B, H] (c, or the GRU's h), non-empty,
    of FLOATS, on one device, each row dense. Else the caller composes the step of tnet's ops."""
    if state.dim() != 2:
        return False
    B, H = state.shape
    return (B > 0 and H > 0 and gi.shape == gh.shape == (B, gates * H)
            and all(t.dtype in FLOATS and t.device == state.device and t.stride(1) == 1 for t in (gi, gh, state)))


def _plan(B, H):
    """(grid, block sizes) over the [B, H] step: up to COLUMNS units, then rows up to ELEMENTS a program."""
    block_h = min(next_power_of_2(H), COLUMNS)
    block_b = min(next_power_of_2(B), max(1, ELEMENTS // block_h))
    return (cdiv(B, block_b), cdiv(H, block_h)), {"BLOCK_B": block_b, "BLOCK_H": block_h}


def _checked(name, gi, gh, state, gates, *grads):
    """[B, H] of the operands, checked; grads: the outputs' gradients, dense [B, H] (None where absent)."""
    check(takes(gi, gh, state, gates), lambda: f"{name}: expected gi and gh [B, {gates}H] and a state [B, H] of "
          f"float dtypes on one device, rows dense; got {tuple(gi.shape)}, {tuple(gh.shape)}, {tuple(state.shape)}")
    for g in grads:
        check(g is None or (g.shape == state.shape and g.is_contiguous() and g.dtype in FLOATS),
              lambda: f"{name}: expected dense float gradients of {tuple(state.shape)}, got {tuple(g.shape)} "
                      f"{g.dtype} strides {g.stride()}")
    return state.shape


def lstm_cell(gi, gh, c, dtype):
    """(h', c') [B, H] of dtype, dense, of the LSTM step's gates gi + gh [B, 4H] from c [B, H]."""
    B, H = _checked("lstm_cell", gi, gh, c, 4)
    h_out, c_out = (torch.empty((B, H), device=c.device, dtype=dtype) for _ in range(2))
    grid, blocks = _plan(B, H)
    lstm_cell_kernel[grid](gi, gh, c, h_out, c_out, B, H, gi.stride(0), gh.stride(0), c.stride(0), **blocks)
    return h_out, c_out


def lstm_cell_backward(gi, gh, c, dh, dc_out):
    """(dgates [B, 4H] of gi's dtype, the gradient of gi and of gh; dc [B, H] of c's dtype) of lstm_cell for its
    outputs' gradients dh' and dc' ([B, H] each, None where none came)."""
    B, H = _checked("lstm_cell backward", gi, gh, c, 4, dh, dc_out)
    dgates = torch.empty((B, 4 * H), device=c.device, dtype=gi.dtype)
    dc = torch.empty((B, H), device=c.device, dtype=c.dtype)
    grid, blocks = _plan(B, H)
    lstm_cell_backward_kernel[grid](gi, gh, c, dh if dh is not None else c, dc_out if dc_out is not None else c,
                                    dgates, dc, B, H, gi.stride(0), gh.stride(0), c.stride(0), HAS_DH=dh is not None,
                                    HAS_DC=dc_out is not None, **blocks)
    return dgates, dc


def gru_cell(gi, gh, h, dtype):
    """h' [B, H] of dtype, dense, of the GRU step's gates gi, gh [B, 3H] (gh with bias_hh) from h [B, H]."""
    B, H = _checked("gru_cell", gi, gh, h, 3)
    h_out = torch.empty((B, H), device=h.device, dtype=dtype)
    grid, blocks = _plan(B, H)
    gru_cell_kernel[grid](gi, gh, h, h_out, B, H, gi.stride(0), gh.stride(0), h.stride(0), **blocks)
    return h_out


def gru_cell_backward(gi, gh, h, dh_out):
    """(dgi, dgh [B, 3H] of gi's and gh's dtypes, dh [B, H] of h's) of gru_cell for its output's gradient dh'."""
    B, H = _checked("gru_cell backward", gi, gh, h, 3, dh_out)
    dgi = torch.empty((B, 3 * H), device=h.device, dtype=gi.dtype)
    dgh = torch.empty((B, 3 * H), device=h.device, dtype=gh.dtype)
    dh = torch.empty((B, H), device=h.device, dtype=h.dtype)
    grid, blocks = _plan(B, H)
    gru_cell_backward_kernel[grid](gi, gh, h, dh_out, dgi, dgh, dh, B, H, gi.stride(0), gh.stride(0), h.stride(0),
                                   **blocks)
    return dgi, dgh, dh
