#!/usr/bin/env python3
"""Compile tnet's kernels for the GPU machine's sm_90 on a machine without a GPU, ahead of a GPU call: a
kernel that fails to compile there, a PTX that grew, or a config whose compile takes seconds shows here.
It needs the GPU machine's Triton in its own environment (the CPU's Triton is newer):

    python -m venv --system-site-packages /tmp/v36 && /tmp/v36/bin/pip install triton==3.6.0
    /tmp/v36/bin/python tools/aot_compile.py [--kernels depthwise,lerp,grid_sample]

Prints each compile's seconds, PTX size and global loads by kind (ld.global.v4.b32: vectors of 4 words). Compiling is not running: a kernel that compiles may still
fail its GPU tests (races, miscompiles), and the timings are this machine's, not the GPU machine's.
`compile_kernel` takes any tnet kernel (autotuned, or plain at 4 warps), its argument types and its constexprs."""
import argparse
import collections
import itertools
import os
import re
import sys
import tempfile
import time
import types

os.environ["TRITON_INTERPRET"] = "0"  # tnet's kernels as JIT functions, not the interpreter's
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp())  # every compile timed afresh
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout's tnet

import torch  # noqa: E402

# tnet asks the device for these at import; an H100's/H200's answers
torch.cuda.get_device_properties = lambda index=0: types.SimpleNamespace(multi_processor_count=132)
torch.cuda.get_device_capability = lambda index=0: (9, 0)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)


def compile_kernel(kernel, arg_types, constexprs, config):
    """(seconds, PTX) of compiling `kernel` (a tnet kernel, autotuned or plain) for sm_90 with `config`:
    arg_types the Triton type of each non-constexpr argument ('*fp32', 'i32', ('i32',) for a tuple),
    constexprs the others' values but the config's."""
    fn = kernel if isinstance(kernel, triton.runtime.JITFunction) else kernel.fn  # a plain (_Fast) one, or autotuned
    defaults = {p.name: p.default for p in fn.params if p.is_constexpr and p.has_default}  # constexprs' defaults
    consts = {**defaults, **constexprs, **config.kwargs}
    signature = {name: "constexpr" if name in consts else arg_types[name] for name in fn.arg_names}
    # pointers 16-byte aligned, as a launch's tensors are (torch's allocations): what lets loads vectorize
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
             if isinstance(signature[name], str) and signature[name].startswith("*")}
    start = time.time()
    compiled = triton.compile(ASTSource(fn, signature, consts, attrs), target=TARGET,
                              options={"num_warps": config.num_warps, "num_stages": config.num_stages})
    return time.time() - start, compiled.asm["ptx"]


def depthwise():
    """Every config of the depthwise kernels at 3x3, 5x5 and 7x7, 64 channels at 16x16, bf16 storage."""
    from tnet.kernels import depthwise as d
    for k in (3, 5, 7):
        pixel = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "bias_ptr": "*bf16", "NPIX": "i32",
                 "stride_wn": "i32", "stride_wi": "i32", "stride_wj": "i32"}
        geometry = dict(H=16, W=16, CI=64, CO=64, OH=16, OW=16, KH=k, KW=k, SH=1, SW=1, PH=k // 2, PW=k // 2, DH=1,
                        DW=1, M=1)
        yield f"depthwise_kernel {k}x{k}", d.depthwise_kernel, pixel, dict(
            **geometry, TRANSPOSED=False, BIAS=False, RELU=False)
        rows = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "bias_ptr": "*bf16", "NROWS": "i32"}
        yield f"depthwise_rows_kernel {k}x{k}", d.depthwise_rows_kernel, rows, dict(
            HI=16, WI=16, C=64, HO=16, WO=16, KH=k, KW=k, PH=k // 2, PW=k // 2, TRANSPOSED=False, BIAS=False,
            RELU=False, BLOCK_W=16)
        yield f"depthwise_flat_kernel {k}x{k}", d.depthwise_flat_kernel, rows, dict(
            HI=16, WI=16, C=64, HO=16, WO=16, KH=k, KW=k, PH=k // 2, PW=k // 2, TRANSPOSED=False, BIAS=False,
            RELU=False)
        grads = {"x_ptr": "*bf16", "dy_ptr": "*bf16", "dw_ptr": "*fp32", "NPIX": "i32", "stride_dp": "i32"}
        yield f"depthwise_weight_kernel {k}x{k}", d.depthwise_weight_kernel, grads, dict(
            **geometry, TAPS=16, PART_PIXELS=d.PART_PIXELS)
    rows3 = {"x_ptr": "*bf16", "dy_ptr": "*bf16", "dw_ptr": "*fp32", "ROWS": "i32", "stride_dp": "i32"}
    yield "depthwise_weight3_kernel 3x3", d.depthwise_weight3_kernel, rows3, dict(
        H=16, W=16, C=64, OH=16, OW=16, PH=1, PW=1, BLOCK_W=16)


def depthwise_flat():
    """depthwise_flat_kernel at MobileNetV2's 144 channels at 32x32, fp32 and bf16 (136: channels that no
    vector of 16 divides)."""
    from tnet.kernels import depthwise as d
    for dtype in ("*fp32", "*bf16"):
        for c in (144, 136):
            rows = {"x_ptr": dtype, "w_ptr": dtype, "y_ptr": dtype, "bias_ptr": dtype, "NROWS": "i32"}
            yield f"depthwise_flat_kernel {dtype} C={c}", d.depthwise_flat_kernel, rows, dict(
                HI=32, WI=32, C=c, HO=32, WO=32, KH=3, KW=3, PH=1, PW=1, TRANSPOSED=False, BIAS=False, RELU=False)


def lerp():
    """pointwise_kernel's fused multiply-adds (lerp, addcmul), flat and strided, fp32 and bf16."""
    from tnet.kernels import pointwise as p
    for dtype, flat, op in itertools.product(("*fp32", "*bf16"), (True, False), ("lerp", "addcmul")):
        arg_types = {"a_ptr": dtype, "b_ptr": dtype, "c_ptr": dtype, "y_ptr": dtype, "n": "i32", "s0": "fp32",
                     "s1": "fp32", "s2": "fp32", "s3": "fp32", "sizes": ("i32",), "a_strides": ("i32",),
                     "b_strides": ("i32",), "c_strides": ("i32",)}
        yield f"pointwise_kernel {op} {dtype} flat={flat}", p.pointwise_kernel, arg_types, dict(
            OP=op, ARITY=3, SCALARS=0, FLAT=flat, ROUTE=0, COMPUTE=tl.float32)


def special():
    """pointwise_kernel's special functions: the regularized incomplete gamma functions and their gradient
    (loops with a run-time bound), the Gamma and Dirichlet draws' gradients (the latter in float64) and
    reciprocal's gradient (fp32 and bf16); torch.special's Bessel and Airy functions (float64 inside), zeta and
    the orthogonal polynomials (a loop to the block's largest degree), fp32; all flat."""
    from tnet.kernels import pointwise as p
    ops = ("igamma", "igammac", "igamma_backward", "standard_gamma_grad", "dirichlet_grad", "reciprocal_backward")
    fp32_only = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
                 "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai", "zeta",
                 *p.POLYNOMIALS)
    for dtype, op in [*itertools.product(("*fp32", "*bf16"), ops), *(("*fp32", op) for op in fp32_only)]:
        arg_types = {"a_ptr": dtype, "b_ptr": dtype, "c_ptr": dtype, "y_ptr": dtype, "n": "i32", "s0": "fp32",
                     "s1": "fp32", "s2": "fp32", "s3": "fp32", "sizes": ("i32",), "a_strides": ("i32",),
                     "b_strides": ("i32",), "c_strides": ("i32",)}
        yield f"pointwise_kernel {op} {dtype}", p.pointwise_kernel, arg_types, dict(
            OP=op, ARITY=p.ARITY[op], SCALARS=0, FLAT=True, ROUTE=0,
            COMPUTE=tl.float32)


def grid_sample():
    """grid_sample_backward_kernel in each mode and padding, fp32 and bf16."""
    from tnet.kernels import resample as r
    ints = ("NP", "C", "H", "W", "OH", "OW", "XN", "XC", "XH", "XW", "GN", "GH", "GW", "GD", "YN", "YC", "YH",
            "YW", "DN", "DC", "DH", "DW")
    for dtype in ("*fp32", "*bf16"):
        for bilinear in (True, False):
            for pad in (0, 1, 2):
                arg_types = {"dy_ptr": dtype, "x_ptr": dtype, "g_ptr": dtype, "dx_ptr": "*fp32", "dg_ptr": "*fp32",
                             **{name: "i32" for name in ints}}
                yield (f"grid_sample_backward_kernel {dtype} bilinear={bilinear} pad={pad}",
                       r.grid_sample_backward_kernel, arg_types,
                       dict(BILINEAR=bilinear, PAD=pad, ALIGN=False, DX=True, DGRID=bilinear, BLOCK_C=4))


def tma():
    """The TMA GEMM (tf32, bf16) and convolution forward and input gradient (bf16, airbench's 64 -> 256 at 15x15)."""
    from tnet.kernels import conv_tma, gemm
    for name, kernel, dtype, precision in (("gemm_tma_kernel tf32", gemm.gemm_tma_tuned, "*fp32", "tf32"),
                                           ("gemm_tma_kernel bf16", gemm.gemm_tma16_tuned, "*bf16", "bf16")):
        arg_types = {"a_ptr": dtype, "b_ptr": dtype, "c_ptr": dtype, "bias_ptr": dtype, "M": "i32", "N": "i32",
                     "K": "i32", "stride_a": "i32", "stride_b": "i32", "stride_cm": "i32"}
        yield name, kernel, arg_types, dict(A_T=False, B_T=precision == "tf32", BIAS=2, RELU=True,
                                            PRECISION=precision, INTERPRET=False, NUM_SMS=132)
    arg_types = {"a_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "bias_ptr": "*bf16", "N": "i32"}
    for transposed in (False, True):
        yield f"conv_tma_kernel transposed={transposed}", conv_tma.conv_tma_kernel, arg_types, dict(
            H=15, W=15, CA=64, HO=15, WO=15, CO=256, KH=3, KW=3, PH=1, PW=1, K_MAX=64, STRIDE=1, TRANSPOSED=transposed,
            BIAS=False, RELU=False, PRECISION="bf16", INTERPRET=False, BOX_H=16, BOX_W=16, NUM_SMS=132)


def clip():
    """clip_grad_norm2_'s kernels over 3 and 32 fp32 gradients (constexpr tuples of pointers, as launched)."""
    from tnet.kernels import optim as o
    for n in (3, 32):
        ptrs = ("*fp32",) * n
        yield f"square_sums_kernel x{n}", o.square_sums_kernel, {"g_ptrs": ptrs, "part_ptr": "*fp32", "ns": ("i32",) * n}, dict(
            BLOCK=o.BLOCK)
        yield f"scale_tensors_kernel x{n}", o.scale_tensors_kernel, {"g_ptrs": ptrs, "coef_ptr": "*fp32",
                                                                    "ns": ("i32",) * n}, dict(BLOCK=o.BLOCK)
    yield "clip_coef_kernel", o.clip_coef_kernel, {"part_ptr": "*fp32", "parts": "i32", "total_ptr": "*fp32",
                                                   "coef_ptr": "*fp32", "max_norm": "fp32"}, dict(BLOCK=o.BLOCK)


def norm():
    """BatchNorm's stats kernel (with the count), finalize kernel (the stats' merge with running statistics or
    the cumulative average; the backward's sums), backward-reduce kernel (with GELU), and apply and backward
    kernels (batch or running statistics, with and without a weight), fp16 channels-last and NCHW (L 49,
    airbench's 256 channels at 7x7)."""
    from tnet.kernels import norm as n
    for L in (1, 49):
        arg_types = {"x_ptr": "*fp16", "part_ptr": "*fp32", "count_ptr": "*i64", "R": "i32", "C": "i32", "chunk": "i32"}
        yield f"batch_norm_stats_kernel L={L}", n.batch_norm_stats_kernel, arg_types, dict(L=L, COUNT=True)
        arg_types = {"dy_ptr": "*fp16", "x_ptr": "*fp16", "mean_ptr": "*fp32", "stat_ptr": "*fp32", "w_ptr": "*fp32",
                     "b_ptr": "*fp32", "part_ptr": "*fp32", "R": "i32", "C": "i32", "chunk": "i32", "eps": "fp32"}
        yield f"batch_norm_backward_reduce_kernel L={L}", n.batch_norm_backward_reduce_kernel, arg_types, dict(
            L=L, RUNNING=False, HAS_W=True, HAS_B=True, ACT=True)
        vectors = {"mean_ptr": "*fp32", "stat_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32"}
        for running, has_w in itertools.product((False, True), (False, True)):
            flags = dict(L=L, RUNNING=running, HAS_W=has_w, HAS_B=True, ACT=False)
            arg_types = {"x_ptr": "*fp16", **vectors, "y_ptr": "*fp16", "R": "i32", "C": "i32", "eps": "fp32"}
            yield f"batch_norm_apply_kernel L={L} running={running} w={has_w}", n.batch_norm_apply_kernel, arg_types, flags
            arg_types = {"dy_ptr": "*fp16", "x_ptr": "*fp16", **vectors, "sum_dz_ptr": "*fp32", "sum_dzx_ptr": "*fp32",
                         "dx_ptr": "*fp16", "R": "i32", "C": "i32", "eps": "fp32"}
            yield (f"batch_norm_backward_kernel L={L} running={running} w={has_w}", n.batch_norm_backward_kernel,
                   arg_types, flags)
    arg_types = {"part_ptr": "*fp32", "out_ptr": "*fp32", "invstd_ptr": "*fp32", "run_mean_ptr": "*fp32",
                 "run_var_ptr": "*fp32", "count_ptr": "*i64", "R": "i32", "C": "i32", "S": "i32", "chunk": "i32",
                 "momentum": "fp32", "eps": "fp32"}
    for stats, track, cumulative in ((True, True, False), (True, True, True), (False, False, False)):
        yield (f"batch_norm_finalize_kernel stats={stats} track={track} cumulative={cumulative}",
               n.batch_norm_finalize_kernel, arg_types,
               dict(STATS=stats, TRACK=track, CUMULATIVE=cumulative, BLOCK_S=n.MAX_PARTS, BLOCK_C=n.FINAL_BLOCK_C))


def loss():
    """cross_entropy_kernel (the label-smoothed loss and its gradient) as airbench's step runs it: fp16 logits, 10
    classes, 128 rows a program, each reduction."""
    from tnet.kernels import softmax as s
    arg_types = {"x_ptr": "*fp16", "label_ptr": "*i64", "loss_ptr": "*fp32", "dx_ptr": "*fp16", "bad_ptr": "*i64",
                 "R": "i32", "C": "i32", "smoothing": "fp32", "ignore_index": "i32"}
    for reduction in range(len(s.REDUCTIONS)):
        yield (f"cross_entropy_kernel reduction={s.REDUCTIONS[reduction]}", s.cross_entropy_kernel, arg_types,
               dict(ROWS=128, COLS=16, REDUCTION=reduction, LABELS=1024))


def group_norm():
    """Layer, group and RMS norm's kernels (kernels/group_norm.py): the forward with and without weight and bias, and
    the input gradient, each over evenly spaced groups (FLAT) and channels-last ones, centred and not (RMS); the
    weight gradients; bf16 x and dy, fp32 weight and bias, a 2048-value loop step."""
    from tnet.kernels import group_norm as g
    shape = {"G": "i32", "CPG": "i32", "S": "i32", "L": "i32", "sN": "i32", "sC": "i32", "sS": "i32"}
    for flat, affine, center in itertools.product((True, False), (True, False), (True, False)):
        arg_types = {"x_ptr": "*bf16", "w_ptr": "*fp32", "b_ptr": "*fp32", "y_ptr": "*bf16", "mean_ptr": "*fp32",
                     "std_ptr": "*fp32", **shape, "eps": "fp32"}
        yield (f"group_norm_forward_kernel flat={flat} affine={affine} center={center}", g.group_norm_forward_kernel,
               arg_types, dict(HAS_W=affine, HAS_B=affine, FLAT=flat, CENTER=center, BLOCK=2048))
        arg_types = {"x_ptr": "*bf16", "dy_ptr": "*bf16", "w_ptr": "*fp32", "mean_ptr": "*fp32", "std_ptr": "*fp32",
                     "dx_ptr": "*bf16", **shape}
        yield (f"group_norm_backward_kernel flat={flat} w={affine} center={center}", g.group_norm_backward_kernel,
               arg_types, dict(HAS_W=affine, FLAT=flat, CENTER=center, BLOCK=2048))
    arg_types = {"x_ptr": "*bf16", "dy_ptr": "*bf16", "mean_ptr": "*fp32", "std_ptr": "*fp32", "dw_ptr": "*fp32",
                 "db_ptr": "*fp32", "C": "i32", "G": "i32", "CPG": "i32", "S": "i32", "T": "i32", "sN": "i32",
                 "sC": "i32", "sS": "i32"}
    yield "group_norm_affine_grads_kernel", g.group_norm_affine_grads_kernel, arg_types, dict(
        PART_T=g.PART, PAIRS=g.PAIRS, CHANNELS=g.CHANNELS)


def attention():
    """The fused attention's kernels (kernels/attention.py) at the GPU's blocks: each dtype (its products' precision,
    fp32's tf32 and ieee), no mask, bool and float masks, causal or not, heads of 16, 64 and 128 (narrower key
    blocks) and a value head of another width; dropout (its Philox draws) with each mask, causal and not, at heads
    of 64 and 128 and at short sequences' blocks."""
    from tnet.kernels import attention as a
    ints = ("H GROUP L S E EV sqb sqh sql sqe skb skh sks ske svb svh svs sve smb smh sml sms sob soh sol soe sdb sdh sdl "
            "sde").split()
    cases = [("*fp32", "tf32"), ("*fp32", "ieee"), ("*fp16", "fp16"), ("*bf16", "bf16")]
    combos = [(dtype, mask, causal, False, heads, (a.BLOCK_M, a.key_block(*heads)))
              for dtype, mask, causal, heads in itertools.product(cases, (0, 1, 2), (False, True),
                                                                  ((16, 16), (64, 64), (128, 128), (64, 32)))
              # the mask's loads and the causal bound are separate code: not every pairing
              if (mask, causal) != (2, True) and (heads == (16, 16)) <= ((mask, causal) == (0, False))]
    # short sequences' blocks (_plan: down to 16 rows and keys)
    combos += [(dtype, 1, True, False, (64, 64), (16, 16)) for dtype in cases]
    combos += [(dtype, mask, causal, True, heads, (a.BLOCK_M, a.key_block(*heads)))
               for dtype, (mask, causal), heads in itertools.product(cases, ((0, False), (0, True), (1, False),
                                                                             (2, False)), ((64, 64), (128, 128)))]
    combos += [(dtype, 0, True, True, (64, 64), (16, 16)) for dtype in cases]
    for (dtype, precision), mask, causal, dropout, (e, ev), (block_m, block_n) in combos:
        m = {0: dtype, 1: "*u8", 2: dtype}[mask]
        arg_types = {**dict.fromkeys(ints, "i32"), "scale": "fp32", "p_drop": "fp32", "rescale": "fp32",
                     "mask_ptr": m, "seed_ptr": "*i64" if dropout else dtype, "lse_ptr": "*fp32",
                     "delta_ptr": "*fp32", **{f"{t}_ptr": dtype for t in ("q", "k", "v", "o", "do", "dq", "dk", "dv")}}
        meta = dict(MASK=mask, CAUSAL=causal, DROPOUT=dropout, PRECISION=precision, INTERPRET=False, BLOCK_M=block_m,
                    BLOCK_N=block_n, BLOCK_E=e, BLOCK_EV=ev)
        for name in ("attention_forward_kernel", "attention_dq_kernel", "attention_dkv_kernel"):
            yield (f"{name} {dtype[1:]} {precision} mask={mask} causal={causal} dropout={dropout} E={e} EV={ev} "
                   f"{block_m}x{block_n}",
                   getattr(a, name), arg_types, meta)


def copy():
    """copy_kernel's plain copy and its adding modes (1: fp32 atomic adds, 2: read, add, write), 2-D, bf16 and fp32."""
    from tnet.kernels import copy as c
    for dtype, add in itertools.product(("*fp32", "*bf16"), (0, c.ATOMIC, c.ACCUMULATE)):
        if add == c.ATOMIC and dtype != "*fp32":
            continue
        arg_types = {"dst_ptr": dtype, "src_ptr": dtype, "index_ptr": "*i64", "flag_ptr": "*i64", "n": "i32",
                     "limit": "i32", "sizes": ("i32", "i32"), "dst_strides": ("i32", "i32"),
                     "src_strides": ("i32", "i32"), "index_stride": "i32"}
        yield f"copy_kernel {dtype} ADD={add}", c.copy_kernel, arg_types, dict(GATHER=False, AXIS=-1, ADD=add,
                                                                                 WRAP=False)


def rnn():
    """The LSTM and GRU cells' kernels (kernels/rnn.py), forward and backward: bf16 gates, an fp32 state and
    outputs (autocast's step), a GPU launch's blocks of 8 rows by 128 units; the LSTM's backward with both output
    gradients and with h''s alone."""
    from tnet.kernels import rnn as r
    sizes = {"B": "i32", "H": "i32", "s_gi": "i32", "s_gh": "i32"}
    blocks = dict(BLOCK_B=8, BLOCK_H=128)
    yield "lstm_cell_kernel", r.lstm_cell_kernel, {"gi_ptr": "*bf16", "gh_ptr": "*bf16", "c_ptr": "*fp32",
                                                   "h_out_ptr": "*fp32", "c_out_ptr": "*fp32", **sizes, "s_c": "i32"}, blocks
    for has_dc in (True, False):
        yield (f"lstm_cell_backward_kernel dc={has_dc}", r.lstm_cell_backward_kernel,
               {"gi_ptr": "*bf16", "gh_ptr": "*bf16", "c_ptr": "*fp32", "dh_ptr": "*fp32", "dc_out_ptr": "*fp32",
                "dgates_ptr": "*bf16", "dc_ptr": "*fp32", **sizes, "s_c": "i32"}, dict(HAS_DH=True, HAS_DC=has_dc, **blocks))
    yield "gru_cell_kernel", r.gru_cell_kernel, {"gi_ptr": "*bf16", "gh_ptr": "*bf16", "h_ptr": "*fp32",
                                                 "h_out_ptr": "*fp32", **sizes, "s_h": "i32"}, blocks
    yield "gru_cell_backward_kernel", r.gru_cell_backward_kernel, {
        "gi_ptr": "*bf16", "gh_ptr": "*bf16", "h_ptr": "*fp32", "dh_out_ptr": "*fp32", "dgi_ptr": "*bf16",
        "dgh_ptr": "*bf16", "dh_ptr": "*fp32", **sizes, "s_h": "i32"}, blocks


GROUPS = {"copy": copy, "depthwise": depthwise, "depthwise_flat": depthwise_flat, "lerp": lerp, "grid_sample": grid_sample,
          "clip": clip, "tma": tma, "special": special, "norm": norm, "loss": loss, "group_norm": group_norm, "rnn": rnn,
          "attention": attention}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", default=",".join(GROUPS),
                        help=f"comma-separated groups of kernels to compile (default: all of {', '.join(GROUPS)})")
    args = parser.parse_args()
    print(f"triton {triton.__version__}, target sm_{TARGET.arch}", flush=True)
    for group in args.kernels.split(","):
        if group not in GROUPS:
            parser.error(f"no group {group!r}: {', '.join(GROUPS)}")
        for name, kernel, arg_types, constexprs in GROUPS[group]():
            for config in getattr(kernel, "all_configs", None) or [triton.Config({}, num_warps=4)]:
                seconds, ptx = compile_kernel(kernel, arg_types, constexprs, config)
                loads = ", ".join(f"{n} {kind}" for kind, n in sorted(collections.Counter(
                    re.findall(r"ld\.global(?:\.\w+)*", ptx)).items()))
                print(f"{name:52s} {str(config.kwargs):32s} w{config.num_warps}  {seconds:6.2f} s  "
                      f"PTX {len(ptx) // 1000} K  {loads}", flush=True)


if __name__ == "__main__":
    main()
