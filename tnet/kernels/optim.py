"""Optimizer kernels: one launch updates every parameter tensor (torch.optim's SGD, Adam, AdamW,
RMSprop, Adagrad, Adamax, NAdam, RAdam or Adadelta rule, one step_kernel for all) and writes its
16-bit copy, and a tiny one counts the steps (NAdam's has a second, for its mu_product). Hyperparameters and
step counts are read on the device, so a step captured in a CUDA graph follows a schedule and
its bias corrections advance at every replay. Each tensor is dense (contiguous or
channels-last) and laid out like its gradient, state and copy, so the update runs over flat
memory. A parameter and its state may be float32, float16 or bfloat16 (the state in the
parameter's dtype, as torch's), its gradient any of them; the arithmetic is fp32.

The lookahead of airbench (tnet.optim.Lookahead) has two kernels of the same kind: a one-program
clock that counts the steps and gives the decay, and one launch over every tensor of a model.

For mixed precision's GradScaler (tnet.amp): a pass that flags an inf or NaN in the
gradients (and divides them by the scale, for unscale_), the step dividing them by the loss scale and skipping the update where one was
flagged, and torch's scale update, all on the device. For clip_grad_norm_ of order 2 (nn.utils.FUSED_CLIP):
the squares' sums of every gradient by blocks, the norm and the clip factor in one program, the scaling in place."""
import math

import torch
import triton
import triton.language as tl

from .autotune import jit, launch_kept
from .._device import INTERPRET
from .launch import FLOATS, cdiv, check, check_float, next_power_of_2
from .copy import copy_
from .gemm import matmul
from .pointwise import check_like, laid_alike

# The block is fixed (the grid depends on it, tensor by tensor): about 150 programs for
# cifar10_quick's 145K parameters on the GPU, 4096 elements a program under the interpreter (whose
# ops cost by the element too: a bias in a block of 65536 lanes took most of a small model's step).
BLOCK = 1 << 12 if INTERPRET else 1024
# Kernel arguments may take 4 KB: 32 tensors take about 2.5 KB (7 pointers and 3 numbers each).
# Every program walks the launch's tensors (an unrolled loop), which the interpreter pays per
# program and tensor: there a launch takes 4 (docs/results.md, eleventh session).
TENSORS_PER_LAUNCH = 4 if INTERPRET else 32
# Each group's hyperparameters, in the order of its device vector (see tnet/optim.py): for every
# rule of step_kernel the four that every torch optimizer has first, then the rule's own.
COMMON = ("lr", "maximize", "weight_decay", "decoupled_weight_decay")
HYPER = {"sgd": COMMON + ("momentum", "dampening", "nesterov"),
         "adam": COMMON + ("1 - beta1", "1 - beta2", "log beta1", "log beta2", "eps"),
         "rmsprop": COMMON + ("alpha", "1 - alpha", "eps", "momentum"),
         "adagrad": COMMON + ("lr_decay", "eps"),
         "adamax": COMMON + ("1 - beta1", "beta2", "log beta1", "eps"),
         "nadam": COMMON + ("1 - beta1", "1 - beta2", "log beta2", "eps", "beta1", "momentum_decay"),
         "radam": COMMON + ("1 - beta1", "1 - beta2", "log beta1", "log beta2", "eps", "rho_inf"),
         "adadelta": COMMON + ("rho", "1 - rho", "eps")}
# The state of each rule's parameters, by kernel slot (a, b, c): tensors shaped as the parameter,
# but NAdam's mu_product, one float32 element as the step count. None: a slot the rule may leave empty.
SLOTS = {"sgd": ("momentum_buffer",), "adam": ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
         "rmsprop": ("square_avg", "momentum_buffer", "grad_avg"), "adagrad": ("sum",),
         "adamax": ("exp_avg", "exp_inf"), "nadam": ("exp_avg", "exp_avg_sq", "mu_product"),
         "radam": ("exp_avg", "exp_avg_sq"), "adadelta": ("square_avg", "acc_delta")}
HYPER["muon"] = ("lr", "momentum", "weight_decay", "nesterov")


@triton.jit
def _one_minus_exp(x):
    """1 - exp(x) for x <= 0. Adam's bias corrections 1 - beta**t are this at x = t*log(beta),
    near 0 for small t: there 1 - exp(x) would lose most digits to cancellation (and the
    GPU's fast exp is accurate only relative to 1), so a Taylor series serves x > -0.5
    (its first omitted term is below 2e-7 relative)."""
    s = tl.maximum(x, -0.5)
    series = -s * (1 + s / 2 * (1 + s / 3 * (1 + s / 4 * (1 + s / 5 * (1 + s / 6 * (1 + s / 7))))))
    return tl.where(x > -0.5, series, 1 - tl.exp(x))


@triton.jit
def _load(ptr, offs, mask):
    return tl.load(ptr + offs, mask=mask).to(tl.float32)


@triton.jit
def _store(ptr, offs, mask, x):
    tl.store(ptr + offs, x.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def _sgd(p, g, buf_ptr, offs, mask, h, step, lr):
    """torch.optim.SGD on one block: returns the new p and stores the momentum buffer."""
    momentum = tl.load(h + 4)
    buf = _load(buf_ptr, offs, mask)
    # torch starts the buffer at g itself: no dampening on a parameter's first step.
    buf = tl.where(step == 1, g, momentum * buf + (1 - tl.load(h + 5)) * g)
    _store(buf_ptr, offs, mask, buf)
    d = tl.where(tl.load(h + 6) != 0, g + momentum * buf, buf)
    return p - lr * tl.where(momentum != 0, d, g)


@triton.jit
def _moments(g, m_ptr, v_ptr, offs, mask, h):
    """Adam's two moments (exp_avg m, exp_avg_sq v), updated and stored: their rule for Adam, NAdam
    and RAdam, with 1 - beta1 and 1 - beta2 at h[4] and h[5]."""
    m = _load(m_ptr, offs, mask)
    m = m + tl.load(h + 4) * (g - m)
    v = _load(v_ptr, offs, mask)
    v = v + tl.load(h + 5) * (g * g - v)
    _store(m_ptr, offs, mask, m)
    _store(v_ptr, offs, mask, v)
    return m, v


@triton.jit
def _adam(p, g, m_ptr, v_ptr, vmax_ptr, offs, mask, h, step, lr):
    """torch.optim.Adam on one block (AdamW's decay is applied before): returns the new p and stores
    exp_avg m, exp_avg_sq v, and with amsgrad (vmax_ptr not None) max_exp_avg_sq."""
    # 1 - beta comes from the host in float64: 1 - float32(0.999) would be 1.3e-5 off.
    m, v = _moments(g, m_ptr, v_ptr, offs, mask, h)
    if vmax_ptr is not None:
        v = tl.maximum(_load(vmax_ptr, offs, mask), v, propagate_nan=tl.PropagateNan.ALL)
        _store(vmax_ptr, offs, mask, v)
    correction1 = _one_minus_exp(step * tl.load(h + 6))
    correction2 = _one_minus_exp(step * tl.load(h + 7))
    return p - (lr / correction1) * m / (tl.sqrt(v) / tl.sqrt(correction2) + tl.load(h + 8))


@triton.jit
def _rmsprop(p, g, sq_ptr, buf_ptr, avg_ptr, offs, mask, h, lr):
    """torch.optim.RMSprop on one block: square_avg, and momentum_buffer and grad_avg where given
    (momentum > 0 and centered at construction)."""
    sq = _load(sq_ptr, offs, mask)
    sq = sq * tl.load(h + 4) + tl.load(h + 5) * g * g
    _store(sq_ptr, offs, mask, sq)
    if avg_ptr is not None:
        avg = _load(avg_ptr, offs, mask)
        avg = avg + tl.load(h + 5) * (g - avg)
        _store(avg_ptr, offs, mask, avg)
        sq = sq - avg * avg
    d = g / (tl.sqrt(sq) + tl.load(h + 6))
    if buf_ptr is not None:
        momentum = tl.load(h + 7)
        buf = _load(buf_ptr, offs, mask)
        buf = tl.where(momentum > 0, momentum * buf + d, buf)
        _store(buf_ptr, offs, mask, buf)
        d = tl.where(momentum > 0, buf, d)
    return p - lr * d


@triton.jit
def _adagrad(p, g, sum_ptr, offs, mask, h, step, lr):
    """torch.optim.Adagrad on one block: the sum of squares, lr / (1 + (t - 1) * lr_decay)."""
    s = _load(sum_ptr, offs, mask) + g * g
    _store(sum_ptr, offs, mask, s)
    return p - lr / (1 + (step - 1) * tl.load(h + 4)) * g / (tl.sqrt(s) + tl.load(h + 5))


@triton.jit
def _adamax(p, g, m_ptr, u_ptr, offs, mask, h, step, lr):
    """torch.optim.Adamax on one block: exp_avg m and the infinity norm exp_inf u."""
    m = _load(m_ptr, offs, mask)
    m = m + tl.load(h + 4) * (g - m)
    u = tl.maximum(_load(u_ptr, offs, mask) * tl.load(h + 5), tl.abs(g) + tl.load(h + 7),
                   propagate_nan=tl.PropagateNan.ALL)
    _store(m_ptr, offs, mask, m)
    _store(u_ptr, offs, mask, u)
    return p - lr / _one_minus_exp(step * tl.load(h + 6)) * m / u


@triton.jit
def _nadam_mu(h, step):
    """NAdam's momentum at step t: beta1 * (1 - 0.5 * 0.96**(t * momentum_decay))."""
    return tl.load(h + 8) * (1 - 0.5 * tl.exp(step * tl.load(h + 9) * -0.040821994520255166))  # log(0.96)


@triton.jit
def _nadam(p, g, m_ptr, v_ptr, mu_product_ptr, offs, mask, h, step, lr):
    """torch.optim.NAdam on one block; mu_product (one element) is already this step's (nadam_clock_kernel)."""
    m, v = _moments(g, m_ptr, v_ptr, offs, mask, h)
    denom = tl.sqrt(v / _one_minus_exp(step * tl.load(h + 6))) + tl.load(h + 7)
    mu, mu_next = _nadam_mu(h, step), _nadam_mu(h, step + 1)
    mu_product = tl.load(mu_product_ptr)
    p = p - lr * (1 - mu) / (1 - mu_product) * g / denom
    return p - lr * mu_next / (1 - mu_product * mu_next) * m / denom


@triton.jit
def _radam_rho(step, log_beta2, rho_inf):
    """RAdam's rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t). The difference cancels where y = t c
    is small (c = -log beta2; 1998 - 1997 at t = 1 for beta2 = 0.999), so there it is the series
    rho_t = t - (t y - c)/6 + (t y^3 - c^3)/360 - (t y^5 - c^5)/15120 + (t y^7 - c^7)/604800 (from
    x/(e^x - 1)'s, exact at t = 1; the next term is below 1e-7 relative for y < 1)."""
    c = -log_beta2
    y = step * c
    c2, y2 = c * c, y * y
    series = step - (step * y - c) / 6 + (step * y * y2 - c * c2) / 360 - (step * y * y2 * y2 - c * c2 * c2) / 15120 \
        + (step * y * y2 * y2 * y2 - c * c2 * c2 * c2) / 604800
    direct = rho_inf - 2 * step * tl.exp(-y) / _one_minus_exp(-y)
    return tl.where(y < 1, series, direct)


@triton.jit
def _radam(p, g, m_ptr, v_ptr, offs, mask, h, step, lr):
    """torch.optim.RAdam on one block: Adam's update, rectified, where rho_t > 5; momentum alone before."""
    m, v = _moments(g, m_ptr, v_ptr, offs, mask, h)
    rho_inf = tl.load(h + 9)
    rho = _radam_rho(step, tl.load(h + 7), rho_inf)
    rect = tl.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
    adaptive = tl.sqrt(_one_minus_exp(step * tl.load(h + 7))) / (tl.sqrt(v) + tl.load(h + 8))
    m = m / _one_minus_exp(step * tl.load(h + 6)) * lr
    return p - tl.where(rho > 5, m * adaptive * rect, m)


@triton.jit
def _adadelta(p, g, sq_ptr, acc_ptr, offs, mask, h, lr):
    """torch.optim.Adadelta on one block: square_avg and acc_delta."""
    rho, one_minus_rho, eps = tl.load(h + 4), tl.load(h + 5), tl.load(h + 6)
    sq = _load(sq_ptr, offs, mask)
    sq = sq * rho + one_minus_rho * g * g
    acc = _load(acc_ptr, offs, mask)
    delta = tl.sqrt(acc + eps) / tl.sqrt(sq + eps) * g
    _store(sq_ptr, offs, mask, sq)
    _store(acc_ptr, offs, mask, acc * rho + one_minus_rho * delta * delta)
    return p - lr * delta


@jit
def step_kernel(p_ptrs, g_ptrs, a_ptrs, b_ptrs, c_ptrs, low_ptrs, hyper_ptrs, step_ptrs, scale_ptr, found_inf_ptr, ns,
                lr_mults, decay_mults, RULE: tl.constexpr, BLOCK: tl.constexpr):
    """One step of RULE (a key of HYPER but "muon") on every tensor p_ptrs[i] (ns[i] elements), with its
    gradient g, state a, b, c (SLOTS[RULE], each None where the rule leaves it empty), its 16-bit copy
    low (or None), its group's hyperparameters (HYPER[RULE]) and its step count (already counted):
    cdiv(ns[i], BLOCK) programs a tensor, in turn. What every rule shares is here: maximize, and the
    weight decay, added to g or (decoupled) taken from p first. With a GradScaler's found_inf (else
    None) nothing is written if it is set; with its scale too, g is divided by the scale."""
    block = tl.program_id(0)
    live = block >= 0  # False in every program after a GradScaler flagged the gradients
    if found_inf_ptr is not None:
        live = tl.load(found_inf_ptr) == 0
    if scale_ptr is not None:
        inv_scale = 1 / tl.load(scale_ptr)
    # Unrolled: every program checks each tensor, and updates one block of one of them.
    for i in tl.static_range(len(p_ptrs)):
        count = tl.cdiv(ns[i], BLOCK)
        if (block >= 0) & (block < count) & live:
            offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < ns[i]
            h = hyper_ptrs[i]
            p = tl.load(p_ptrs[i] + offs, mask=mask).to(tl.float32)
            g = tl.load(g_ptrs[i] + offs, mask=mask).to(tl.float32)
            if scale_ptr is not None:
                g = g * inv_scale
            g = tl.where(tl.load(h + 1) != 0, -g, g)
            lr = tl.load(h) * lr_mults[i]
            decay = tl.load(h + 2) * decay_mults[i]
            decoupled = tl.load(h + 3) != 0
            g = tl.where(decoupled, g, g + decay * p)
            p = tl.where(decoupled, p * (1 - lr * decay), p)
            step = tl.load(step_ptrs[i]).to(tl.float32)
            if RULE == "sgd":
                p = _sgd(p, g, a_ptrs[i], offs, mask, h, step, lr)
            elif RULE == "adam":
                p = _adam(p, g, a_ptrs[i], b_ptrs[i], c_ptrs[i], offs, mask, h, step, lr)
            elif RULE == "rmsprop":
                p = _rmsprop(p, g, a_ptrs[i], b_ptrs[i], c_ptrs[i], offs, mask, h, lr)
            elif RULE == "adagrad":
                p = _adagrad(p, g, a_ptrs[i], offs, mask, h, step, lr)
            elif RULE == "adamax":
                p = _adamax(p, g, a_ptrs[i], b_ptrs[i], offs, mask, h, step, lr)
            elif RULE == "nadam":
                p = _nadam(p, g, a_ptrs[i], b_ptrs[i], c_ptrs[i], offs, mask, h, step, lr)
            elif RULE == "radam":
                p = _radam(p, g, a_ptrs[i], b_ptrs[i], offs, mask, h, step, lr)
            else:
                p = _adadelta(p, g, a_ptrs[i], b_ptrs[i], offs, mask, h, lr)
            p = p.to(p_ptrs[i].dtype.element_ty)
            tl.store(p_ptrs[i] + offs, p, mask=mask)
            # In the same pass: the copy that layers read under autocast is the stored p, cast.
            if low_ptrs[i] is not None:
                tl.store(low_ptrs[i] + offs, p.to(tl.float32).to(low_ptrs[i].dtype.element_ty), mask=mask)
        block -= count


@jit
def nadam_clock_kernel(mu_product_ptrs, hyper_ptrs, step_ptrs, found_inf_ptr):
    """mu_product *= NAdam's momentum at the (already counted) step, for each tensor of a step_kernel
    launch, unless a GradScaler's found_inf (or None) is set: one program, before the update, which
    reads mu_product in every program of a tensor."""
    live = tl.program_id(0) >= 0
    if found_inf_ptr is not None:
        live = tl.load(found_inf_ptr) == 0
    for i in tl.static_range(len(mu_product_ptrs)):
        if live:
            mu = _nadam_mu(hyper_ptrs[i], tl.load(step_ptrs[i]))
            tl.store(mu_product_ptrs[i], tl.load(mu_product_ptrs[i]) * mu)


@jit
def find_inf_kernel(g_ptrs, found_inf_ptr, scale_ptr, ns, BLOCK: tl.constexpr):
    """found_inf[0] = 1 if a tensor g_ptrs[i] (ns[i] elements) holds an inf or NaN, else left as it
    is, and with scale_ptr (else None) g divided by scale[0] in place (GradScaler.unscale_):
    cdiv(ns[i], BLOCK) programs a tensor, in turn, as step_kernel."""
    block = tl.program_id(0)
    for i in tl.static_range(len(g_ptrs)):
        count = tl.cdiv(ns[i], BLOCK)
        if (block >= 0) & (block < count):
            offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < ns[i]
            g = tl.load(g_ptrs[i] + offs, mask=mask, other=0).to(tl.float32)
            # False for NaN too; programs that find one all store the same 1, so they may race.
            if tl.min((tl.abs(g) < float("inf")).to(tl.int32)) == 0:
                tl.store(found_inf_ptr, 1.0)
            if scale_ptr is not None:
                _store(g_ptrs[i], offs, mask, g * (1 / tl.load(scale_ptr)))
        block -= count


@jit
def square_sums_kernel(g_ptrs, part_ptr, ns, BLOCK: tl.constexpr):
    """part[b] = the sum of the squares (fp32) of program b's block of the tensors g_ptrs[i] (ns[i] elements
    each): cdiv(ns[i], BLOCK) programs a tensor, in turn, as find_inf_kernel."""
    block = tl.program_id(0)
    for i in tl.static_range(len(g_ptrs)):
        count = tl.cdiv(ns[i], BLOCK)
        if (block >= 0) & (block < count):
            offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            g = tl.load(g_ptrs[i] + offs, mask=offs < ns[i], other=0).to(tl.float32)
            tl.store(part_ptr + tl.program_id(0), tl.sum(g * g))
        block -= count


@jit
def clip_coef_kernel(part_ptr, parts, total_ptr, coef_ptr, max_norm, BLOCK: tl.constexpr):
    """One program: total[0] = sqrt of the sum of part[:parts] (in a fixed order) and coef[0] =
    min(max_norm / (total + 1e-6), 1), NaN for a NaN total, as torch's clamp."""
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, parts, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < parts, other=0.0)
    total = tl.sqrt(tl.sum(acc))
    tl.store(total_ptr, total)
    tl.store(coef_ptr, tl.minimum(max_norm / (total + 1e-6), 1.0, propagate_nan=tl.PropagateNan.ALL))


@jit
def scale_tensors_kernel(g_ptrs, coef_ptr, ns, BLOCK: tl.constexpr):
    """g_ptrs[i] (ns[i] elements each) *= coef[0], in place: programs as find_inf_kernel's."""
    block = tl.program_id(0)
    for i in tl.static_range(len(g_ptrs)):
        count = tl.cdiv(ns[i], BLOCK)
        if (block >= 0) & (block < count):
            offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < ns[i]
            _store(g_ptrs[i], offs, mask, tl.load(g_ptrs[i] + offs, mask=mask, other=0).to(tl.float32)
                   * tl.load(coef_ptr))
        block -= count


@jit
def update_scale_kernel(scale_ptr, growth_tracker_ptr, found_inf_ptr, growth_factor, backoff_factor,
                        growth_interval):
    """torch's GradScaler.update on one-element tensors: after a step with an inf or NaN, scale *=
    backoff_factor; after growth_interval steps in a row without, scale *= growth_factor (if finite).
    found_inf is cleared for the next step."""
    scale = tl.load(scale_ptr)
    found = tl.load(found_inf_ptr) != 0
    tracker = tl.load(growth_tracker_ptr) + 1
    grown = scale * growth_factor
    grow = (tracker == growth_interval) & (tl.abs(grown) < float("inf"))
    tl.store(scale_ptr, tl.where(found, scale * backoff_factor, tl.where(grow, grown, scale)))
    tl.store(growth_tracker_ptr, tl.where(found | (tracker == growth_interval), 0, tracker))
    tl.store(found_inf_ptr, 0.0)


@jit
def count_steps_kernel(steps_ptr, took_ptr, found_inf_ptr, n, BLOCK: tl.constexpr):
    """steps[j] += took[j] for the n parameters of an optimizer (took is 1 where one steps, else 0),
    unless found_inf[0] is set (found_inf_ptr None: no GradScaler)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    took = tl.load(took_ptr + offs, mask=mask)
    if found_inf_ptr is not None:
        took = took * (tl.load(found_inf_ptr) == 0).to(tl.float32)
    tl.store(steps_ptr + offs, tl.load(steps_ptr + offs, mask=mask) + took, mask=mask)


@jit
def lookahead_clock_kernel(count_ptr, decay_ptr, total, every, base):
    """count[0] += 1 (int32), then decay[0] = base * (count / total)**3 when count is a multiple of
    every, else -1: lookahead_kernel leaves every tensor as it is."""
    count = tl.load(count_ptr) + 1
    tl.store(count_ptr, count)
    t = count.to(tl.float32) / total
    tl.store(decay_ptr, tl.where(count % every == 0, base * t * t * t, -1.0))


@jit
def lookahead_kernel(w_ptrs, ema_ptrs, low_ptrs, decay_ptr, ns, BLOCK: tl.constexpr):
    """Unless decay[0] < 0: ema = lerp(ema, w, 1 - decay), then w = ema (and w's 16-bit copy low, or None),
    for every tensor w_ptrs[i] of ns[i] elements, ema float32: cdiv(ns[i], BLOCK) programs a tensor, in
    turn, as step_kernel."""
    block = tl.program_id(0)
    decay = tl.load(decay_ptr)
    for i in tl.static_range(len(w_ptrs)):
        count = tl.cdiv(ns[i], BLOCK)
        if (block >= 0) & (block < count) & (decay >= 0):
            offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < ns[i]
            w = tl.load(w_ptrs[i] + offs, mask=mask).to(tl.float32)
            ema = tl.load(ema_ptrs[i] + offs, mask=mask)
            ema = ema + (1 - decay) * (w - ema)
            tl.store(ema_ptrs[i] + offs, ema, mask=mask)
            tl.store(w_ptrs[i] + offs, ema.to(w_ptrs[i].dtype.element_ty), mask=mask)
            if low_ptrs[i] is not None:
                tl.store(low_ptrs[i] + offs, ema.to(low_ptrs[i].dtype.element_ty), mask=mask)
        block -= count


@jit
def muon_momentum_kernel(g_ptrs, buf_ptrs, hyper_ptrs, p_ptrs, x_ptr, part_ptr, norm_ptr, n, first,
                         NORMS: tl.constexpr, BLOCK: tl.constexpr):
    """Muon's momentum on tensors first + i of a batch of equal-sized ones (i < len(g_ptrs), n
    elements each): buf = lerp(buf, g, 1 - momentum); the update u = lerp(g, buf, momentum) with
    nesterov, else buf, into row first + i of x [k, n] (bfloat16), and the sum of its (rounded)
    squares per block into part [k, blocks]; with NORMS, the parameter's (p_ptrs[i]) into norm
    [k, blocks] too. Grid (blocks, tensors)."""
    block, t = tl.program_id(0), tl.program_id(1)
    offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = (first + t).to(tl.int64)
    for i in tl.static_range(len(g_ptrs)):
        if t == i:
            momentum = tl.load(hyper_ptrs[i] + 1)
            g = tl.load(g_ptrs[i] + offs, mask=mask, other=0.0).to(tl.float32)
            buf = tl.load(buf_ptrs[i] + offs, mask=mask, other=0.0).to(tl.float32)
            buf = buf + (1 - momentum) * (g - buf)
            tl.store(buf_ptrs[i] + offs, buf.to(buf_ptrs[i].dtype.element_ty), mask=mask)
            u = (tl.where(tl.load(hyper_ptrs[i] + 3) != 0, g + momentum * (buf - g), buf)).to(x_ptr.dtype.element_ty)
            tl.store(x_ptr + row * n + offs, u, mask=mask)
            u = u.to(tl.float32)
            tl.store(part_ptr + row * tl.num_programs(0) + block, tl.sum(u * u, axis=0))
            if NORMS:
                p = tl.load(p_ptrs[i] + offs, mask=mask, other=0.0).to(tl.float32)
                tl.store(norm_ptr + row * tl.num_programs(0) + block, tl.sum(p * p, axis=0))


@triton.jit
def _row_norm(part_ptr, row, parts, PARTS: tl.constexpr):
    """The norm of row `row` from its blocks' sums of squares, part [k, parts], added in a fixed order."""
    j = tl.arange(0, PARTS)
    return tl.sqrt(tl.sum(tl.load(part_ptr + row * parts + j, mask=j < parts, other=0.0), axis=0))


@jit
def muon_normalize_kernel(x_ptr, part_ptr, n, parts, eps, BLOCK: tl.constexpr, PARTS: tl.constexpr):
    """Row t of x [k, n] divided by max(its norm, eps), the norm from part [k, parts] (its blocks'
    sums of squares, added in a fixed order). Grid (blocks, rows)."""
    block, t = tl.program_id(0), tl.program_id(1).to(tl.int64)
    scale = 1.0 / tl.maximum(_row_norm(part_ptr, t, parts, PARTS), eps)
    offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + t * n + offs, mask=mask).to(tl.float32)
    tl.store(x_ptr + t * n + offs, (x * scale).to(x_ptr.dtype.element_ty), mask=mask)


@jit
def muon_polynomial_kernel(gram_ptr, square_ptr, total, m, a, b, c, BLOCK: tl.constexpr):
    """gram = a*I + b*gram + c*square in place over a batch of m x m matrices (total elements):
    one Newton-Schulz step is then x = gram @ x."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    at = offs % (m * m)
    g = tl.load(gram_ptr + offs, mask=mask).to(tl.float32)
    h = tl.load(square_ptr + offs, mask=mask).to(tl.float32)
    y = b * g + c * h + tl.where(at // m == at % m, a, 0.0)
    tl.store(gram_ptr + offs, y.to(gram_ptr.dtype.element_ty), mask=mask)


@jit
def muon_update_kernel(p_ptrs, low_ptrs, hyper_ptrs, adjusts, x_ptr, norm_ptr, n, first, target,
                       RENORM: tl.constexpr, BLOCK: tl.constexpr, PARTS: tl.constexpr):
    """p = p * (1 - lr * weight_decay) - lr * adjust * x[first + i] for tensors p_ptrs[i] of n
    elements (and p's 16-bit copy low, or None), lr and weight_decay from its group's device
    vector; with RENORM, p first scaled to norm `target` (from norm [k, blocks], the blocks' sums
    of squares; a zero p stays zero). Grid (blocks, tensors)."""
    block, t = tl.program_id(0), tl.program_id(1)
    offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = (first + t).to(tl.int64)
    scale = 1.0
    if RENORM:
        norm = _row_norm(norm_ptr, row, tl.num_programs(0), PARTS)
        scale = tl.where(norm > 0, target / norm, 1.0)
    for i in tl.static_range(len(p_ptrs)):
        if t == i:
            lr = tl.load(hyper_ptrs[i])
            p = tl.load(p_ptrs[i] + offs, mask=mask).to(tl.float32) * scale
            o = tl.load(x_ptr + row * n + offs, mask=mask).to(tl.float32)
            p = (p * (1 - lr * tl.load(hyper_ptrs[i] + 2)) - lr * adjusts[i] * o).to(p_ptrs[i].dtype.element_ty)
            tl.store(p_ptrs[i] + offs, p, mask=mask)
            if low_ptrs[i] is not None:
                tl.store(low_ptrs[i] + offs, p.to(tl.float32).to(low_ptrs[i].dtype.element_ty), mask=mask)


def muon_work(k, rows, cols, device):
    """The buffers of muon_ for k matrices of rows x cols: two of the matrices (bfloat16, the
    Newton-Schulz iterates), the Gram matrix and its square (m x m, m = min(rows, cols)), and the
    blocks' sums of squares. Made once per batch, so a captured step keeps their addresses."""
    m = min(rows, cols)
    low = dict(device=device, dtype=torch.bfloat16)
    return {"x": (torch.empty((k, rows, cols), **low), torch.empty((k, rows, cols), **low)),
            "gram": torch.empty((k, m, m), **low), "square": torch.empty((k, m, m), **low),
            "part": torch.empty((k, cdiv(rows * cols, BLOCK)), device=device, dtype=torch.float32),
            "norm": torch.empty((k, cdiv(rows * cols, BLOCK)), device=device, dtype=torch.float32)}


def muon_(updates, work, coefficients=(3.4445, -4.7750, 2.0315), steps=5, eps=1e-7, renormalize=False):
    """One Muon step on k parameters of one size: updates holds (p, g, buf, lows, hyper, adjust)
    per tensor, p a dense float tensor whose first dimension is outermost in memory (contiguous
    or channels-last), seen as the matrix [p.shape[0], p.numel() // p.shape[0]] in memory order,
    g and buf (the momentum buffer, p's dtype) laid out alike, lows p's 16-bit copies, hyper its
    group's float32 device vector (HYPER["muon"]) and adjust the factor of lr for the update.
    work: muon_work's buffers. The momentum update, the matrices normalised to norm 1 and
    orthogonalised by `steps` Newton-Schulz steps of (a, b, c) = coefficients in batched bf16
    GEMMs (x = (a I + b A + c A^2) x, A = x x^T, over the transposes where rows > cols), then
    p = p * (1 - lr * weight_decay) - lr * adjust * x, with renormalize p first scaled to norm
    sqrt(rows) (airbench94_muon's rule). A column order other than torch's changes nothing: the
    iteration commutes with permuting the columns."""
    check(len(coefficients) == 3, lambda: f"muon: ns_coefficients must be three numbers, got {coefficients!r}")
    p0 = updates[0][0]
    rows, n = p0.shape[0], p0.numel()
    cols = n // max(rows, 1)
    x, x_next = work["x"]
    check(x.shape == (len(updates), rows, cols), lambda: f"muon: work for {tuple(x.shape)}, got {len(updates)} "
                                                         f"tensors of {rows}x{cols}")
    for p, g, buf, lows, hyper, _ in updates:
        check_float("muon", p, "a parameter")
        check_float("muon", g, "a gradient")
        check(p.numel() == n and p.shape[0] == rows and p.stride(0) == cols and buf.dtype == p.dtype,
              lambda: f"muon: a parameter {tuple(p.shape)} with strides {p.stride()} and buffer {buf.dtype} in a "
                      f"batch of {rows}x{cols} {p0.dtype}: each must hold its rows one after another")
        check_like("muon", p, g, buf, *lows)
        check(hyper.shape == (len(HYPER["muon"]),) and hyper.dtype == torch.float32 and hyper.device == p.device,
              lambda: f"muon: hyper must be {len(HYPER['muon'])} float32 values on {p.device}")
    if n == 0:
        return
    blocks, part, norm = cdiv(n, BLOCK), work["part"], work["norm"]
    for start in range(0, len(updates), TENSORS_PER_LAUNCH):
        ps, gs, bufs, _, hypers, _ = zip(*updates[start:start + TENSORS_PER_LAUNCH])
        muon_momentum_kernel[(blocks, len(ps))](gs, bufs, hypers, ps, x, part, norm, n, start, NORMS=renormalize,
                                                BLOCK=BLOCK, num_warps=4)
    muon_normalize_kernel[(blocks, len(updates))](x, part, n, blocks, float(eps), BLOCK=BLOCK,
                                                  PARTS=next_power_of_2(blocks), num_warps=4)
    a, b, c = map(float, coefficients)
    gram, square = work["gram"], work["square"]
    m = gram.shape[1]
    for _ in range(steps):
        # x x^T is the Gram matrix of the shorter side: the rows', or the columns' for a tall x
        xs, out = (x, x_next) if rows <= cols else (x.transpose(1, 2), x_next.transpose(1, 2))
        matmul(xs, xs.transpose(1, 2), out=gram)
        matmul(gram, gram, out=square)
        muon_polynomial_kernel[(cdiv(gram.numel(), BLOCK),)](gram, square, gram.numel(), m, a, b, c, BLOCK=BLOCK,
                                                             num_warps=4)
        matmul(gram, xs, out=out)
        x, x_next = x_next, x
    for start in range(0, len(updates), TENSORS_PER_LAUNCH):
        ps, _, _, lows, hypers, adjusts = zip(*updates[start:start + TENSORS_PER_LAUNCH])
        muon_update_kernel[(blocks, len(ps))](ps, tuple(copies[0] if copies else None for copies in lows), hypers,
                                              tuple(map(float, adjusts)), x, norm, n, start, math.sqrt(rows),
                                              RENORM=renormalize, BLOCK=BLOCK, PARTS=next_power_of_2(blocks),
                                              num_warps=4)
    for p, _, _, lows, *_ in updates:
        for low in lows[1:]:
            copy_(low, p)


def _check_scalar(name, what, t, device):
    check(t.numel() == 1 and t.dtype == torch.float32 and t.device == device,
          lambda: f"{name}: {what} must be one float32 element on {device}")


def _launches(tensors):
    """The slices of TENSORS_PER_LAUNCH of a list of tensors, with their sizes and program counts."""
    for start in range(0, len(tensors), TENSORS_PER_LAUNCH):
        ns = tuple([t.numel() for t in tensors[start:start + TENSORS_PER_LAUNCH]])
        yield slice(start, start + len(ns)), ns, sum([cdiv(n, BLOCK) for n in ns])


# How many of SLOTS[rule] every parameter has (the others may be None: Adam without amsgrad,
# RMSprop without momentum or centering), and the slot that is one element (NAdam's mu_product).
REQUIRED = {"sgd": 1, "adam": 2, "rmsprop": 1, "adagrad": 1, "adamax": 2, "nadam": 3, "radam": 2, "adadelta": 2}
SCALAR_SLOT = {"nadam": 2}


def _shaped(rule, bufs):
    """The state buffers of bufs shaped as the parameter: all but None and a one-element slot."""
    return [b for j, b in enumerate(bufs) if b is not None and j != SCALAR_SLOT.get(rule)]


def _update_ok(rule, p, g, bufs, lows, hyper, step):
    """_check_update's conditions as one expression: the common case (every slot a buffer shaped
    as p), cheaply."""
    if len(bufs) == REQUIRED[rule] and rule not in SCALAR_SLOT:
        return (all(b is not None and b.dtype == p.dtype for b in bufs) and laid_alike(p, g, *bufs, *lows)
                and hyper.shape == (len(HYPER[rule]),) and hyper.dtype == torch.float32 and hyper.device == p.device
                and step.numel() == 1 and step.dtype == torch.float32 and step.device == p.device)
    shaped = _shaped(rule, bufs)
    return (_slots_ok(rule, bufs)
            and laid_alike(p, g, *shaped, *lows) and all(b.dtype == p.dtype for b in shaped)
            and (rule not in SCALAR_SLOT or _scalar_ok(bufs[SCALAR_SLOT[rule]], p.device))
            and hyper.shape == (len(HYPER[rule]),) and hyper.dtype == torch.float32 and hyper.device == p.device
            and _scalar_ok(step, p.device))


def _slots_ok(rule, bufs):
    """Whether bufs holds the state of SLOTS[rule], the first REQUIRED[rule] given, the others given or None."""
    return REQUIRED[rule] <= len(bufs) <= len(SLOTS[rule]) and all(b is not None for b in bufs[:REQUIRED[rule]])


def _scalar_ok(t, device):
    return t.numel() == 1 and t.dtype == torch.float32 and t.device == device


def _check_update(rule, p, g, bufs, lows, hyper, step):
    """step_'s checks of one parameter's update, each with its one-line error."""
    check(_slots_ok(rule, bufs),
          lambda: f"{rule}: {len(bufs)} state buffers, expected {SLOTS[rule]} (the first {REQUIRED[rule]} given)")
    check_float(rule, p, "a parameter")
    check_float(rule, g, "a gradient")
    shaped = _shaped(rule, bufs)
    check(all(b.dtype == p.dtype for b in shaped), lambda: f"{rule}: state buffers must be {p.dtype}, as p")
    check_like(rule, p, g, *shaped, *lows)
    if rule in SCALAR_SLOT:
        _check_scalar(rule, SLOTS[rule][SCALAR_SLOT[rule]], bufs[SCALAR_SLOT[rule]], p.device)
    check(hyper.shape == (len(HYPER[rule]),) and hyper.dtype == torch.float32 and hyper.device == p.device,
          lambda: f"{rule}: hyper must be {len(HYPER[rule])} float32 values on {p.device}")
    _check_scalar(rule, "step", step, p.device)


def _known(known, p, g, bufs, lows, hyper, step):
    """Whether this update's state (p, bufs, lows, hyper and step, the same objects) passed the
    checks before, by `known`'s record (its ids, and the objects, held so that no id is reused),
    and g is laid out as p: the state is the optimizer's own and changes only when replaced."""
    seen = known.get(id(p))
    return seen is not None and seen[0] == _state_ids(bufs, lows, hyper, step) and (
        # p passed laid_alike when remembered: a gradient of its shape and strides is laid out as p
        (g.stride() == p.stride() and g.shape == p.shape and g.dtype in FLOATS and g.device == p.device)
        or laid_alike(p, g))


def _remember(known, p, bufs, lows, hyper, step, parameters):
    if len(known) > 2 * parameters + 16:  # parameters replaced (p.data = ...): the stale records go
        known.clear()
    known[id(p)] = (_state_ids(bufs, lows, hyper, step), (p, bufs, lows, hyper, step))


def _state_ids(bufs, lows, hyper, step):
    return (id(hyper), id(step), *map(id, bufs), *map(id, lows))


def step_(rule, updates, scale=None, found_inf=None, known=None):
    """One step of rule (a key of HYPER but "muon": torch.optim's SGD, Adam, RMSprop, Adagrad, Adamax,
    NAdam, RAdam or Adadelta) on many tensors, in one launch per TENSORS_PER_LAUNCH: updates holds
    (p, g, buffers, lows, hyper, step, lr_mult, decay_mult) per tensor, buffers being its state in the
    order of SLOTS[rule] (None where a rule's option leaves one out, or left off at the end), shaped as p and in p's dtype
    but NAdam's mu_product (one float32 element), lows p's 16-bit copies (a list, often empty: the
    kernel writes the first as it updates p, a second is copied after), hyper its group's float32
    device vector (HYPER[rule]) and step a one-element view of its step count, already counted. With
    a GradScaler, scale and found_inf are its one-element float32 tensors: the gradients are divided
    by the scale, and a step with found_inf set changes nothing; found_inf alone: the gradients were
    unscaled already (GradScaler.unscale_). The addresses travel as kernel arguments, not in a device
    table: the launch needs no host-to-device copy, so a CUDA graph can capture it like any other.
    known: a dict the caller keeps between steps (an optimizer's), where each parameter's state,
    once checked, is remembered (by the objects' identity): later steps with the same state
    objects check the gradient alone. A state tensor changed in place in shape or layout
    (resize_, set_) is not seen then; replace it instead, as the optimizers' own methods do."""
    check(rule in SLOTS, lambda: f"optimizer step: unknown rule {rule!r}")
    for p, g, bufs, lows, hyper, step, *_ in updates:
        if known is not None and _known(known, p, g, bufs, lows, hyper, step):
            continue
        if not _update_ok(rule, p, g, bufs, lows, hyper, step):
            _check_update(rule, p, g, bufs, lows, hyper, step)
        if known is not None:
            _remember(known, p, bufs, lows, hyper, step, len(updates))
    check(scale is None or found_inf is not None,
          lambda: f"{rule}: give both scale and found_inf, or found_inf alone, or neither")
    if found_inf is not None and updates:
        if scale is not None:
            _check_scalar(rule, "scale", scale, updates[0][0].device)
        _check_scalar(rule, "found_inf", found_inf, updates[0][0].device)
    for part, ns, programs in _launches([u[0] for u in updates]):
        ps, gs, bufs, lows, hypers, steps, lr_mults, decay_mults = zip(*updates[part])
        slots = list(zip(*[(*b, None, None, None)[:3] for b in bufs]))  # 3 slots, None past a tensor's own
        if rule == "nadam":  # its mu_product advances first, once a tensor: every program reads it
            nadam_clock_kernel[(1,)](slots[2], hypers, steps, found_inf, num_warps=1)
        if programs:
            step_kernel[(programs,)](ps, gs, *slots, tuple(copies[0] if copies else None for copies in lows), hypers,
                                     steps, scale, found_inf, ns, tuple(map(float, lr_mults)),
                                     tuple(map(float, decay_mults)), RULE=rule, BLOCK=BLOCK, num_warps=4)
    for p, _, _, lows, *_ in updates:
        for low in lows[1:]:
            copy_(low, p)


def find_inf_(grads, found_inf, scale=None):
    """found_inf[0] = 1 if a tensor of grads (dense tensors of any float dtype) holds an inf or
    NaN; else found_inf is left as it is (zero it first). With scale (one float32 element), each
    gradient is divided by it in place too (GradScaler.unscale_). One launch per TENSORS_PER_LAUNCH."""
    for g in grads:
        check_float("find_inf_", g, "a gradient")
        check_like("find_inf_", g)
    if grads:
        _check_scalar("find_inf_", "found_inf", found_inf, grads[0].device)
        if scale is not None:
            _check_scalar("find_inf_", "scale", scale, grads[0].device)
    for part, ns, programs in _launches(grads):
        if programs:
            find_inf_kernel[(programs,)](tuple(grads[part]), found_inf, scale, ns, BLOCK=BLOCK, num_warps=4)


def clip_grad_norm2_(grads, max_norm):
    """torch's clip_grad_norm_ of order 2 over dense float32 gradients, in few launches: the squares'
    sums by blocks (one launch per TENSORS_PER_LAUNCH tensors), one program for the total norm and
    the factor min(max_norm / (total + 1e-6), 1), and the gradients scaled by it in place, read on
    the device. Returns the total norm, a 0-d float32 tensor."""
    parts = torch.empty(sum(programs for _, _, programs in _launches(grads)), device=grads[0].device)
    total, coef = torch.empty((), device=grads[0].device), torch.empty(1, device=grads[0].device)
    first = 0
    for part, ns, programs in _launches(grads):
        if programs:
            square_sums_kernel[(programs,)](tuple(grads[part]), parts[first:], ns, BLOCK=BLOCK, num_warps=4)
        first += programs
    clip_coef_kernel[(1,)](parts, first, total, coef, float(max_norm), BLOCK=BLOCK, num_warps=4)
    for part, ns, programs in _launches(grads):
        if programs:
            scale_tensors_kernel[(programs,)](tuple(grads[part]), coef, ns, BLOCK=BLOCK, num_warps=4)
    return total


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """torch's GradScaler.update in place on scale (float32) and growth_tracker (int32), one element
    each, from found_inf (float32, non-zero after a step with an inf or NaN), which it zeroes."""
    _check_scalar("update_scale_", "scale", scale, scale.device)
    _check_scalar("update_scale_", "found_inf", found_inf, scale.device)
    check(growth_tracker.numel() == 1 and growth_tracker.dtype == torch.int32 and growth_tracker.device == scale.device,
          lambda: f"update_scale_: growth_tracker must be one int32 element on {scale.device}")
    update_scale_kernel[(1,)](scale, growth_tracker, found_inf, float(growth_factor), float(backoff_factor),
                              int(growth_interval), num_warps=1)


def count_steps_(steps, took, found_inf=None):
    """steps += took in place: float32 vectors of one optimizer's parameters, on one device; with a
    GradScaler's found_inf (one float32 element), nothing where it is set."""
    check(steps.shape == took.shape and steps.dim() == 1,
          lambda: f"count_steps_: shapes {tuple(steps.shape)} and {tuple(took.shape)}")
    check(steps.dtype == took.dtype == torch.float32 and steps.device == took.device and steps.is_contiguous()
          and took.is_contiguous(), "count_steps_: expected contiguous float32 vectors on one device")
    if found_inf is not None:
        _check_scalar("count_steps_", "found_inf", found_inf, steps.device)
    n = steps.numel()
    launch_kept(_BOUND, (count_steps_kernel, n, found_inf is None), count_steps_kernel, (cdiv(n, 1024),),
                (steps, took, found_inf, n), dict(BLOCK=1024))


_BOUND = {}  # count_steps_kernel's Bound launches (autotune.launch_kept) by size and flag


def lookahead_clock_(count, decay, total, every, base):
    """Advance count (one int32 element) by a step and set decay (one float32 element) for
    lookahead_: base * (count / total)**3 on every `every`-th step, else -1 (no update)."""
    check(count.numel() == 1 and count.dtype == torch.int32, "lookahead_clock_: count must be one int32 element")
    _check_scalar("lookahead_clock_", "decay", decay, count.device)
    check(total > 0 and every > 0,
          lambda: f"lookahead_clock_: total and every must be positive, got {total} and {every}")
    lookahead_clock_kernel[(1,)](count, decay, float(total), int(every), float(base), num_warps=1)


def lookahead_(updates, decay):
    """For (w, ema, lows) in updates, unless decay (one float32 device element) is negative:
    ema = lerp(ema, w, 1 - decay) and w = ema, with w's 16-bit copies (a list: the kernel writes
    the first, a second is copied after). w is a dense float tensor of any of the three dtypes,
    ema float32 laid out alike. One launch per TENSORS_PER_LAUNCH, read on the device: a CUDA graph
    captures it like the optimizer's step."""
    for w, ema, lows in updates:
        check_float("lookahead_", w, "a tensor")
        check(ema.dtype == torch.float32, lambda: f"lookahead_: the average must be float32, got {ema.dtype}")
        check_like("lookahead_", w, ema, *lows)
    if updates:
        _check_scalar("lookahead_", "decay", decay, updates[0][0].device)
    for part, ns, programs in _launches([u[0] for u in updates]):
        ws, emas, lows = zip(*updates[part])
        if programs:
            lookahead_kernel[(programs,)](ws, emas, tuple(copies[0] if copies else None for copies in lows), decay,
                                         ns, BLOCK=BLOCK, num_warps=4)
    for w, _, lows in updates:
        for low in lows[1:]:
            copy_(low, w)
