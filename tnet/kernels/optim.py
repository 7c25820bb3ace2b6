"""Optimizer kernels: one launch updates every parameter tensor (torch.optim's SGD, Adam or
AdamW rule), and a tiny one counts the steps. Hyperparameters and step counts are read on
the device, so a step captured in a CUDA graph follows a schedule and its bias corrections
advance at every replay. Each tensor is dense (contiguous or channels-last) and laid out
like its gradient and state, so the update runs over flat memory."""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from ._autotune import cdiv, check
from .elementwise import _check_like

# The block is fixed (the grid depends on it, tensor by tensor): about 150 programs for
# cifar10_quick's 145K parameters on the GPU, one a tensor under the interpreter.
BLOCK = 1 << 16 if INTERPRET else 1024
# Kernel arguments may take 4 KB: 32 tensors take about 2 KB (6 pointers and 3 numbers each).
TENSORS_PER_LAUNCH = 32
# Each group's hyperparameters, in the order of its device vector (see tnet/optim.py).
HYPER = {"sgd": ("lr", "momentum", "dampening", "weight_decay", "nesterov"),
         "adam": ("lr", "1 - beta1", "1 - beta2", "log beta1", "log beta2", "eps", "weight_decay")}
HYPER["adamw"] = HYPER["adam"]


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
def _sgd(p, g, buf_ptr, offs, mask, hyper_ptr, step, lr_mult, decay_mult):
    """torch.optim.SGD on one block: returns the new p and stores the momentum buffer."""
    lr = tl.load(hyper_ptr) * lr_mult
    momentum = tl.load(hyper_ptr + 1)
    dampening = tl.load(hyper_ptr + 2)
    g = g + tl.load(hyper_ptr + 3) * decay_mult * p
    buf = tl.load(buf_ptr + offs, mask=mask).to(tl.float32)
    # torch starts the buffer at g itself: no dampening on a parameter's first step.
    buf = tl.where(step == 1, g, momentum * buf + (1 - dampening) * g)
    tl.store(buf_ptr + offs, buf, mask=mask)
    d = tl.where(tl.load(hyper_ptr + 4) != 0, g + momentum * buf, buf)
    return p - lr * tl.where(momentum != 0, d, g)


@triton.jit
def _adam(p, g, m_ptr, v_ptr, offs, mask, hyper_ptr, step, lr_mult, decay_mult, DECOUPLED: tl.constexpr):
    """torch.optim.Adam (or AdamW when DECOUPLED) on one block: returns the new p and stores
    exp_avg m and exp_avg_sq v."""
    lr = tl.load(hyper_ptr) * lr_mult
    decay = tl.load(hyper_ptr + 6) * decay_mult
    if DECOUPLED:
        p = p * (1 - lr * decay)
    else:
        g = g + decay * p
    # 1 - beta comes from the host in float64: 1 - float32(0.999) would be 1.3e-5 off.
    m = tl.load(m_ptr + offs, mask=mask).to(tl.float32)
    m = m + tl.load(hyper_ptr + 1) * (g - m)
    v = tl.load(v_ptr + offs, mask=mask).to(tl.float32)
    v = v + tl.load(hyper_ptr + 2) * (g * g - v)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)
    correction1 = _one_minus_exp(step * tl.load(hyper_ptr + 3))
    correction2 = _one_minus_exp(step * tl.load(hyper_ptr + 4))
    return p - (lr / correction1) * m / (tl.sqrt(v) / tl.sqrt(correction2) + tl.load(hyper_ptr + 5))


@triton.jit
def step_kernel(p_ptrs, g_ptrs, a_ptrs, b_ptrs, hyper_ptrs, step_ptrs, ns, lr_mults, decay_mults,
                RULE: tl.constexpr, BLOCK: tl.constexpr):
    """One step of RULE ("sgd", "adam", "adamw") on every tensor p_ptrs[i] (ns[i] elements), with its
    gradient g, state a (momentum buffer or exp_avg) and b (exp_avg_sq), its group's hyperparameters
    (HYPER[RULE]) and its step count (already counted): cdiv(ns[i], BLOCK) programs a tensor, in turn."""
    block = tl.program_id(0)
    # Unrolled: every program checks each tensor, and updates one block of one of them.
    for i in tl.static_range(len(p_ptrs)):
        count = tl.cdiv(ns[i], BLOCK)
        if (block >= 0) & (block < count):
            offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < ns[i]
            p = tl.load(p_ptrs[i] + offs, mask=mask).to(tl.float32)
            g = tl.load(g_ptrs[i] + offs, mask=mask).to(tl.float32)
            step = tl.load(step_ptrs[i]).to(tl.float32)
            if RULE == "sgd":
                p = _sgd(p, g, a_ptrs[i], offs, mask, hyper_ptrs[i], step, lr_mults[i], decay_mults[i])
            else:
                p = _adam(p, g, a_ptrs[i], b_ptrs[i], offs, mask, hyper_ptrs[i], step, lr_mults[i], decay_mults[i],
                          RULE == "adamw")
            tl.store(p_ptrs[i] + offs, p, mask=mask)
        block -= count


@triton.jit
def count_steps_kernel(steps_ptr, took_ptr, n, BLOCK: tl.constexpr):
    """steps[j] += took[j] for the n parameters of an optimizer (took is 1 where one steps, else 0)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(steps_ptr + offs, tl.load(steps_ptr + offs, mask=mask) + tl.load(took_ptr + offs, mask=mask), mask=mask)


def step_(rule, updates):
    """One step of rule ("sgd", "adam" or "adamw") on many tensors, in one launch per
    TENSORS_PER_LAUNCH: updates holds (p, g, buffers, hyper, step, lr_mult, decay_mult) per
    tensor, buffers being (momentum_buffer,) for SGD and (exp_avg, exp_avg_sq) for Adam,
    hyper its group's float32 device vector (HYPER[rule]) and step a one-element view of its
    step count. The addresses travel as kernel arguments, not in a device table: the launch
    needs no host-to-device copy, so a CUDA graph can capture it like any other."""
    check(rule in HYPER, f"optimizer step: unknown rule {rule!r}")
    buffers = 1 if rule == "sgd" else 2
    for p, g, bufs, hyper, step, *_ in updates:
        check(len(bufs) == buffers, f"{rule}: {len(bufs)} state buffers, expected {buffers}")
        _check_like(rule, p, g, *bufs)
        check(hyper.shape == (len(HYPER[rule]),) and hyper.dtype == torch.float32 and hyper.device == p.device,
              f"{rule}: hyper must be {len(HYPER[rule])} float32 values on {p.device}")
        check(step.numel() == 1 and step.dtype == torch.float32 and step.device == p.device,
              f"{rule}: step must be one float32 element on {p.device}")
    for start in range(0, len(updates), TENSORS_PER_LAUNCH):
        ps, gs, bufs, hypers, steps, lr_mults, decay_mults = zip(*updates[start:start + TENSORS_PER_LAUNCH])
        ns = tuple(p.numel() for p in ps)
        programs = sum(cdiv(n, BLOCK) for n in ns)
        if programs:
            step_kernel[(programs,)](ps, gs, tuple(b[0] for b in bufs), tuple(b[-1] for b in bufs), hypers, steps, ns,
                                     tuple(map(float, lr_mults)), tuple(map(float, decay_mults)),
                                     RULE=rule, BLOCK=BLOCK, num_warps=4)


def count_steps_(steps, took):
    """steps += took in place: float32 vectors of one optimizer's parameters, on one device."""
    check(steps.shape == took.shape and steps.dim() == 1, f"count_steps_: shapes {tuple(steps.shape)} and {tuple(took.shape)}")
    check(steps.dtype == took.dtype == torch.float32 and steps.device == took.device and steps.is_contiguous()
          and took.is_contiguous(), "count_steps_: expected contiguous float32 vectors on one device")
    count_steps_kernel[(cdiv(steps.numel(), 1024),)](steps, took, steps.numel(), BLOCK=1024)
