"""Fused attention, forward and backward: softmax(q @ k^T * scale + mask) @ v without the [L, S] scores in memory.
q [B, H, L, E], k [B, H / GROUP, S, E] and v [B, H / GROUP, S, EV], any strides (query head h reads key and value
head h // GROUP: grouped-query attention); the mask, where there is one, [B, H, L, S] with any strides (a broadcast
dim's stride 0): bool (True: the key takes part) or float (added to the scores); CAUSAL: query i sees keys 0..i.

- attention_forward_kernel, one program per (block of query rows, b * H + h): loops over the key blocks with an
  online softmax (running max and sum in fp32), stores o [B, H, L, EV] and the log-sum-exp of each query row's
  scores (fp32 [B * H, L]). A row that no key may see (all its scores -inf) gets zeros and the log-sum-exp +inf,
  so that the backward's weights exp(s - lse) are 0 there (SDPA's safe softmax).
- attention_dq_kernel, one program per (block of query rows, b * H + h): delta = sum(do * o) of its rows (stored,
  for the next kernel), then dq = scale * sum over key blocks of (p * (do @ v^T - delta)) @ k.
- attention_dkv_kernel, one program per (block of keys, b * H / GROUP + kv head): over the GROUP query heads that
  read it and their query blocks, dv = sum p^T @ do and dk = scale * sum (p * (do @ v^T - delta))^T @ q.

The weights p are recomputed from the scores and the saved log-sum-exp (no [L, S] tensor in memory: each kernel
reads q, k, v, the mask and do once per pass). Inputs float32, float16 or bfloat16; the products at PRECISION
(gemm.mma: 16-bit operands, the weights rounded to them, as flash attention's), sums and softmax in fp32, outputs
rounded once at the store.

DROPOUT (each weight dropped with probability p, the rest scaled by 1 / (1 - p), after the softmax, as torch's): the
softmax's max and sum stay those of the undropped weights; the forward accumulates the dropped weights @ v; the
backward regenerates the same mask (nothing but the 16-byte snapshot kept between the passes), drops and scales
dp = do @ v^T before ds = p * (dp - delta) (delta = sum(do * o) still, o being the dropped weights' product) and takes
dv from the dropped weights. Weight (b, h, i, j)'s uniform number is Philox's of counter
snapshot[1] + ((b * H + h) * L + i) * S + j under seed snapshot[0]: kernels/random.dropout's counter of that weight in
the contiguous [B, H, L, S] weights, so that the composition, drawing from the same generator state, drops the same
weights (and random.dropout of ones [B, H, L, S] under the snapshot shows the mask)."""
import torch
import triton
import triton.language as tl

from .._device import INTERPRET
from .autotune import jit
from .gemm import mma
from .launch import FLOATS, cdiv, check, next_power_of_2

# Query rows and keys per block: the GPU's tile, the interpreter's up to the whole sequence (it pays per program and
# per op); tests set smaller ones to run the loops and tails
BLOCK_M, BLOCK_N = (128, 128) if INTERPRET else (64, 64)
MAX_HEAD = 128  # wider heads run the composition
MASK_NONE, MASK_BOOL, MASK_FLOAT = 0, 1, 2


def key_block(E, EV):
    """The keys per block for heads of E and EV: at most 32 past 64 wide (a program holds key, value and gradient
    tiles of a head's width in registers)."""
    return BLOCK_N if max(E, EV) <= 64 else min(BLOCK_N, 32)


@triton.jit
def _scores(q, k_t, zeros, mask_ptr, moff, offs_m, offs_n, L, S, scale, sml, sms,
            MASK: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr, INTERPRET: tl.constexpr,
            TRANSPOSED: tl.constexpr):
    """q @ k_t * scale (+ mask), -inf where a key may not be seen or is past S (a query past L sees every key):
    [rows of q, columns of k_t]. TRANSPOSED: q holds keys and k_t queries (the dk/dv kernel's s^T), so that
    offs_m index the columns and offs_n the rows."""
    s = mma(q, k_t, zeros, PRECISION, INTERPRET) * scale
    if TRANSPOSED:
        rows, cols = offs_n[:, None], offs_m[None, :]
        hidden = (rows >= S) | (cols >= L)
        moffs = moff + cols.to(tl.int64) * sml + rows.to(tl.int64) * sms
        if CAUSAL:
            hidden = hidden | (rows > cols)
    else:
        rows, cols = offs_m[:, None], offs_n[None, :]
        hidden = (cols >= S) | (rows >= L)
        moffs = moff + rows.to(tl.int64) * sml + cols.to(tl.int64) * sms
        if CAUSAL:
            hidden = hidden | (cols > rows)
    if MASK == 1:
        hidden = hidden | (tl.load(mask_ptr + moffs, mask=~hidden, other=1) == 0)
    if MASK == 2:
        s += tl.load(mask_ptr + moffs, mask=~hidden, other=0.0).to(tl.float32)
    return tl.where(hidden, float("-inf"), s)


@triton.jit
def _snapshot(seed_ptr, bh, L, S):
    """(seed, counter of head bh's first weight) from the generator's snapshot (seed, offset) of this call, as
    kernels/random's draws read theirs."""
    return tl.load(seed_ptr), tl.load(seed_ptr + 1) + bh.to(tl.int64) * L * S


@triton.jit
def _keep(seed, base, queries, keys, S, p):
    """Whether dropout keeps weight (query, key): its uniform number, Philox's of counter base + query * S + key
    under seed (int64), is >= p; queries and keys broadcast to the weights' tile."""
    return tl.rand(seed, base + queries.to(tl.int64) * S + keys) >= p


@triton.jit
def _tile(ptr, off, offs_r, offs_c, R, C, s_r, s_c):
    """The [rows, columns] tile of a matrix at ptr + off, zeros past R rows or C columns, in fp32."""
    mask = (offs_r[:, None] < R) & (offs_c[None, :] < C)
    offs = off + offs_r.to(tl.int64)[:, None] * s_r + offs_c.to(tl.int64)[None, :] * s_c
    return tl.load(ptr + offs, mask=mask, other=0.0).to(tl.float32)


@jit
def attention_forward_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, seed_ptr, o_ptr, lse_ptr, H, GROUP, L, S, E, EV, scale,
                             p_drop, rescale, sqb, sqh, sql, sqe, skb, skh, sks, ske, svb, svh, svs, sve,
                             smb, smh, sml, sms, sob, soh, sol, soe,
                             MASK: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
                             INTERPRET: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    """o [B, H, L, EV] (strides sob, ...) and lse [B * H, L] (fp32) of a block of BLOCK_M query rows of one head;
    DROPOUT: the weights dropped with probability p_drop, the kept ones times rescale, under seed_ptr's snapshot."""
    bh = tl.program_id(1)
    b = bh // H
    h = bh - b * H
    kvh = h // GROUP
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_e = tl.arange(0, BLOCK_E)
    offs_ev = tl.arange(0, BLOCK_EV)
    q = _tile(q_ptr, b.to(tl.int64) * sqb + h.to(tl.int64) * sqh, offs_m, offs_e, L, E, sql, sqe)
    koff = b.to(tl.int64) * skb + kvh.to(tl.int64) * skh
    voff = b.to(tl.int64) * svb + kvh.to(tl.int64) * svh
    moff = b.to(tl.int64) * smb + h.to(tl.int64) * smh
    if DROPOUT:  # seed_ptr is read only then (else it stands for a pointer)
        seed, base = _snapshot(seed_ptr, bh, L, S)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_EV), tl.float32)
    end = S
    if CAUSAL:
        end = tl.minimum(S, tl.program_id(0) * BLOCK_M + BLOCK_M)
    for start in range(0, end, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        k_t = _tile(k_ptr, koff, offs_e, offs_n, E, S, ske, sks)
        s = _scores(q, k_t, tl.zeros((BLOCK_M, BLOCK_N), tl.float32), mask_ptr, moff, offs_m, offs_n, L, S, scale,
                    sml, sms, MASK, CAUSAL, PRECISION, INTERPRET, False)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        # a row with no key seen yet keeps its max at -inf: exp against 0 then, not -inf - -inf (NaN)
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - m_use)
        p = tl.exp(s - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:  # after the sum: the softmax's statistics are the undropped weights'
            p = tl.where(_keep(seed, base, offs_m[:, None], offs_n[None, :], S, p_drop), p * rescale, 0.0)
        v = _tile(v_ptr, voff, offs_n, offs_ev, S, EV, svs, sve)
        acc = mma(p, v, acc * alpha[:, None], PRECISION, INTERPRET)
        m_i = m_new
    seen = l_i != 0.0  # NaN scores leave NaN sums: NaN out, as the composition's
    o = tl.where(seen[:, None], acc / tl.where(seen, l_i, 1.0)[:, None], 0.0)
    lse = tl.where(seen, tl.where(m_i == float("-inf"), 0.0, m_i) + tl.log(tl.where(seen, l_i, 1.0)), float("inf"))
    ooffs = (b.to(tl.int64) * sob + h.to(tl.int64) * soh + offs_m.to(tl.int64)[:, None] * sol
             + offs_ev.to(tl.int64)[None, :] * soe)
    tl.store(o_ptr + ooffs, o.to(o_ptr.dtype.element_ty), mask=(offs_m[:, None] < L) & (offs_ev[None, :] < EV))
    tl.store(lse_ptr + bh.to(tl.int64) * L + offs_m, lse, mask=offs_m < L)


@jit
def attention_dq_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, seed_ptr, o_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
                        H, GROUP, L, S, E, EV, scale, p_drop, rescale,
                        sqb, sqh, sql, sqe, skb, skh, sks, ske, svb, svh, svs, sve, smb, smh, sml, sms,
                        sob, soh, sol, soe, sdb, sdh, sdl, sde,
                        MASK: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
                        INTERPRET: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    """delta [B * H, L] = sum(do * o) over EV (fp32, stored) and dq [B * H, L, E] (contiguous) of a block of
    query rows of one head; o and do [B, H, L, EV] with strides (sob, ...) and (sdb, ...)."""
    bh = tl.program_id(1)
    b = bh // H
    h = bh - b * H
    kvh = h // GROUP
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_e = tl.arange(0, BLOCK_E)
    offs_ev = tl.arange(0, BLOCK_EV)
    q = _tile(q_ptr, b.to(tl.int64) * sqb + h.to(tl.int64) * sqh, offs_m, offs_e, L, E, sql, sqe)
    do = _tile(do_ptr, b.to(tl.int64) * sdb + h.to(tl.int64) * sdh, offs_m, offs_ev, L, EV, sdl, sde)
    rows = bh.to(tl.int64) * L + offs_m
    o = _tile(o_ptr, b.to(tl.int64) * sob + h.to(tl.int64) * soh, offs_m, offs_ev, L, EV, sol, soe)
    delta = tl.sum(do * o, 1)
    tl.store(delta_ptr + rows, delta, mask=offs_m < L)
    lse = tl.load(lse_ptr + rows, mask=offs_m < L, other=float("inf"))
    koff = b.to(tl.int64) * skb + kvh.to(tl.int64) * skh
    voff = b.to(tl.int64) * svb + kvh.to(tl.int64) * svh
    moff = b.to(tl.int64) * smb + h.to(tl.int64) * smh
    if DROPOUT:
        seed, base = _snapshot(seed_ptr, bh, L, S)
    dq = tl.zeros((BLOCK_M, BLOCK_E), tl.float32)
    end = S
    if CAUSAL:
        end = tl.minimum(S, tl.program_id(0) * BLOCK_M + BLOCK_M)
    for start in range(0, end, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        k_t = _tile(k_ptr, koff, offs_e, offs_n, E, S, ske, sks)
        s = _scores(q, k_t, tl.zeros((BLOCK_M, BLOCK_N), tl.float32), mask_ptr, moff, offs_m, offs_n, L, S, scale,
                    sml, sms, MASK, CAUSAL, PRECISION, INTERPRET, False)
        p = tl.exp(s - lse[:, None])
        v_t = _tile(v_ptr, voff, offs_ev, offs_n, EV, S, sve, svs)
        dp = mma(do, v_t, tl.zeros((BLOCK_M, BLOCK_N), tl.float32), PRECISION, INTERPRET)
        if DROPOUT:  # the gradient of the undropped weights: the forward's mask and scale
            dp = tl.where(_keep(seed, base, offs_m[:, None], offs_n[None, :], S, p_drop), dp * rescale, 0.0)
        ds = p * (dp - delta[:, None])
        dq = mma(ds, tl.trans(k_t), dq, PRECISION, INTERPRET)
    tl.store(dq_ptr + rows[:, None] * E + offs_e[None, :], (dq * scale).to(dq_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < L) & (offs_e[None, :] < E))


@jit
def attention_dkv_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, seed_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
                         H, GROUP, L, S, E, EV, scale, p_drop, rescale,
                         sqb, sqh, sql, sqe, skb, skh, sks, ske, svb, svh, svs, sve, smb, smh, sml, sms,
                         sdb, sdh, sdl, sde,
                         MASK: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
                         INTERPRET: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    """dk [B * H / GROUP, S, E] and dv [B * H / GROUP, S, EV] (contiguous) of a block of keys of one key head, summed
    over the GROUP query heads that read it; the scores and weights as their transposes [keys, queries]."""
    bkv = tl.program_id(1)
    KVH = H // GROUP
    b = bkv // KVH
    kvh = bkv - b * KVH
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_e = tl.arange(0, BLOCK_E)
    offs_ev = tl.arange(0, BLOCK_EV)
    k = _tile(k_ptr, b.to(tl.int64) * skb + kvh.to(tl.int64) * skh, offs_n, offs_e, S, E, sks, ske)
    v = _tile(v_ptr, b.to(tl.int64) * svb + kvh.to(tl.int64) * svh, offs_n, offs_ev, S, EV, svs, sve)
    dk = tl.zeros((BLOCK_N, BLOCK_E), tl.float32)
    dv = tl.zeros((BLOCK_N, BLOCK_EV), tl.float32)
    first = 0
    if CAUSAL:  # queries before this block's first key see none of it
        first = (tl.program_id(0) * BLOCK_N) // BLOCK_M * BLOCK_M
    for g in range(0, GROUP):
        h = kvh * GROUP + g
        bh = b * H + h
        qoff = b.to(tl.int64) * sqb + h.to(tl.int64) * sqh
        dooff = b.to(tl.int64) * sdb + h.to(tl.int64) * sdh
        moff = b.to(tl.int64) * smb + h.to(tl.int64) * smh
        if DROPOUT:
            seed, base = _snapshot(seed_ptr, bh, L, S)
        for start in range(first, L, BLOCK_M):
            offs_m = start + tl.arange(0, BLOCK_M)
            rows = bh.to(tl.int64) * L + offs_m
            q_t = _tile(q_ptr, qoff, offs_e, offs_m, E, L, sqe, sql)
            s_t = _scores(k, q_t, tl.zeros((BLOCK_N, BLOCK_M), tl.float32), mask_ptr, moff, offs_m, offs_n, L, S,
                          scale, sml, sms, MASK, CAUSAL, PRECISION, INTERPRET, True)
            lse = tl.load(lse_ptr + rows, mask=offs_m < L, other=float("inf"))
            p_t = tl.exp(s_t - lse[None, :])
            if CAUSAL:  # a later key gets none of a query's gradient, even where that query's row is NaN (an inf
                # score's lse: exp(-inf - NaN) would carry the NaN), as torch's kernels that skip them; a mask's hidden
                # keys keep exp(-inf - NaN), as torch's, which adds the mask's -inf to a +inf score
                p_t = tl.where(offs_n[:, None] > offs_m[None, :], 0.0, p_t)
            do = _tile(do_ptr, dooff, offs_m, offs_ev, L, EV, sdl, sde)
            dp_t = mma(v, tl.trans(do), tl.zeros((BLOCK_N, BLOCK_M), tl.float32), PRECISION, INTERPRET)
            if DROPOUT:  # dv from the dropped weights, ds from the undropped weights' gradient (dq's kernel's)
                keep_t = _keep(seed, base, offs_m[None, :], offs_n[:, None], S, p_drop)
                dv = mma(tl.where(keep_t, p_t * rescale, 0.0), do, dv, PRECISION, INTERPRET)
                dp_t = tl.where(keep_t, dp_t * rescale, 0.0)
            else:
                dv = mma(p_t, do, dv, PRECISION, INTERPRET)
            delta = tl.load(delta_ptr + rows, mask=offs_m < L, other=0.0)
            ds_t = p_t * (dp_t - delta[None, :])
            dk = mma(ds_t, tl.trans(q_t), dk, PRECISION, INTERPRET)
    keys = bkv.to(tl.int64) * S + offs_n
    tl.store(dk_ptr + keys[:, None] * E + offs_e[None, :], (dk * scale).to(dk_ptr.dtype.element_ty),
             mask=(offs_n[:, None] < S) & (offs_e[None, :] < E))
    tl.store(dv_ptr + keys[:, None] * EV + offs_ev[None, :], dv.to(dv_ptr.dtype.element_ty),
             mask=(offs_n[:, None] < S) & (offs_ev[None, :] < EV))


def takes(q, k, v, mask):
    """Whether the kernels take these 4-D [B, H, L, E] tensors (k and v [B, H / GROUP, S, E]) and mask (None, or bool,
    q's dtype or float32 (read as float32), [B, H, L, S]): float dtypes, not empty, heads up to MAX_HEAD wide."""
    return (q.dtype in FLOATS and k.dtype == v.dtype == q.dtype and q.numel() > 0 and k.numel() > 0
            and v.numel() > 0 and max(q.shape[-1], v.shape[-1]) <= MAX_HEAD
            and (mask is None or mask.dtype in (torch.bool, torch.float32, q.dtype)))


def _plan(q, k, v, mask):
    """The launches' shared arguments: (sizes and strides, the mask's tensor and kind, the constexpr blocks)."""
    B, H, L, E = q.shape
    S, EV = k.shape[2], v.shape[3]
    check(q.ndim == k.ndim == v.ndim == 4 and k.shape[:2] == v.shape[:2] and k.shape[0] == B and H % k.shape[1] == 0
          and k.shape[3] == E and v.shape[2] == S and takes(q, k, v, mask),
          lambda: f"attention: expected q [B, H, L, E], k [B, H / g, S, E] and v [B, H / g, S, EV] of one float dtype, "
                  f"heads up to {MAX_HEAD} wide, got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if mask is None:
        kind, mask, mstrides = MASK_NONE, q, (0, 0, 0, 0)
    else:
        check(mask.shape == (B, H, L, S), lambda: f"attention: mask {tuple(mask.shape)}, expected {(B, H, L, S)}")
        kind = MASK_BOOL if mask.dtype == torch.bool else MASK_FLOAT
        mask = mask.view(torch.uint8) if kind == MASK_BOOL else mask
        mstrides = mask.stride()
    sizes = (H, H // k.shape[1], L, S, E, EV)
    strides = (*q.stride(), *k.stride(), *v.stride(), *mstrides)
    interpret_least = 16  # tl.dot's least block on the GPU
    blocks = dict(BLOCK_M=min(BLOCK_M, max(interpret_least, next_power_of_2(L))),
                  BLOCK_N=min(key_block(E, EV), max(interpret_least, next_power_of_2(S))),
                  BLOCK_E=max(16, next_power_of_2(E)), BLOCK_EV=max(16, next_power_of_2(EV)))
    return sizes, strides, mask, kind, blocks


def _dropout_args(q, dropout_p, snapshot):
    """The launches' dropout arguments: (the snapshot, or q for a pointer never read; p; the kept weights' scale;
    DROPOUT)."""
    if not dropout_p:
        return q, 0.0, 1.0, False
    check(0.0 < dropout_p <= 1.0, lambda: f"attention: dropout_p must be in [0, 1], got {dropout_p}")
    check(snapshot is not None and snapshot.shape == (2,) and snapshot.dtype == torch.int64
          and snapshot.device == q.device, lambda: "attention: dropout needs the generator's snapshot, 2 int64 on q's "
                                                   "device (random.take)")
    return snapshot, float(dropout_p), 0.0 if dropout_p == 1 else 1.0 / (1.0 - dropout_p), True


def attention(q, k, v, mask, causal, scale, precision, dropout_p=0.0, snapshot=None):
    """(o [B, H, L, EV], lse fp32 [B, H, L]): dropout(softmax(q @ k^T * scale + mask)) @ v, q [B, H, L, E],
    k [B, H / g, S, E], v [B, H / g, S, EV] (any strides), mask None, bool (True: takes part) or float [B, H, L, S]
    (any strides), causal: query i sees keys 0..i; products at precision (gemm.PRECISIONS); dropout_p > 0: the
    weights dropped under snapshot (random.take's of B * H * L * S numbers), p = 1 dropping them all. o is laid out
    in q's order of B, H and L (then EV): where q is a view of [L, B, H * E] rows (a projection's output, split into
    heads), o's rows are [L, B, H * EV] ones, which the output projection reads without a copy."""
    sizes, strides, mask, kind, blocks = _plan(q, k, v, mask)
    B, H, L, _ = q.shape
    order = sorted(range(3), key=lambda d: -q.stride(d))  # stable: dims of equal strides keep their order
    o = torch.empty([(B, H, L)[d] for d in order] + [sizes[5]], device=q.device, dtype=q.dtype)
    o = o.permute(*[order.index(d) for d in range(3)], 3)
    lse = torch.empty((B, H, L), device=q.device, dtype=torch.float32)
    seed, p, rescale, drop = _dropout_args(q, dropout_p, snapshot)
    attention_forward_kernel[(cdiv(L, blocks["BLOCK_M"]), B * H)](
        q, k, v, mask, seed, o, lse, *sizes, float(scale), p, rescale, *strides, *o.stride(), MASK=kind,
        CAUSAL=bool(causal), DROPOUT=drop, PRECISION=precision, INTERPRET=INTERPRET, **blocks)
    return o, lse


def attention_backward(q, k, v, mask, causal, scale, precision, o, lse, do, dropout_p=0.0, snapshot=None):
    """(dq, dk, dv) of attention (q, k, v's shapes, contiguous, their dtype) for the output's gradient do [B, H, L, EV]
    (any strides), from its o and lse (and the forward's dropout_p and snapshot)."""
    sizes, strides, mask, kind, blocks = _plan(q, k, v, mask)
    B, H, L, E = q.shape
    check(do.shape == o.shape, lambda: f"attention backward: gradient {tuple(do.shape)}, expected {tuple(o.shape)}")
    delta = torch.empty_like(lse)
    dq, dk, dv = (torch.empty(x.shape, device=x.device, dtype=x.dtype) for x in (q, k, v))
    seed, p, rescale, drop = _dropout_args(q, dropout_p, snapshot)
    meta = dict(MASK=kind, CAUSAL=bool(causal), DROPOUT=drop, PRECISION=precision, INTERPRET=INTERPRET, **blocks)
    attention_dq_kernel[(cdiv(L, blocks["BLOCK_M"]), B * H)](
        q, k, v, mask, seed, o, do, lse, delta, dq, *sizes, float(scale), p, rescale, *strides, *o.stride(),
        *do.stride(), **meta)
    attention_dkv_kernel[(cdiv(sizes[3], blocks["BLOCK_N"]), B * k.shape[1])](
        q, k, v, mask, seed, do, lse, delta, dk, dv, *sizes, float(scale), p, rescale, *strides, *do.stride(), **meta)
    return dq, dk, dv
