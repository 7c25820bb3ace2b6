"""The original student project's studies, side by side with PyTorch.

    python bench.py gemm [--quick] [--out results/]    # GEMM variants against cuBLAS and numpy
    python bench.py layers [--quick] [--out results/]  # one CIFAR-10 quick training step, split by layer type
    python bench.py train [--quick] [--out results/] [--compile-mode MODE] [--only-airbench]
                                                       # 100 training steps: tnet against PyTorch; airbench94's
                                                       # step against PyTorch eager, graphed and compiled
    python bench.py profile [--quick] [--out results/] # a tnet step's GPU time by kernel and by GEMM
    python bench.py launch [--quick] [--out results/]  # the host's cost of one tnet.matmul call
    python bench.py convs [--quick] [--out results/] [--batch 1024] [--precisions tf32,bf16,fp16] [--layers ...]
                                                       # each conv layer's three passes against cuDNN

Every result is checked against a float64 reference before it is timed: a GEMM against the
float64 product; a convolution's forward, input or weight gradient against PyTorch in float64 on
the same (rounded) inputs; a training step (the losses and every parameter's change over CHECK_STEPS
steps; airbench94's over 3 steps, in float16's tolerance) against PyTorch in float64 from the same
weights on the same batches. A wrong result is reported WRONG, never timed. Each study prints a
table and writes OUT/<study>.json (rows, GPU, versions, date, command line) and OUT/<study>.png.

Times include Python's launch overhead: GEMM times are do_bench medians of the Python call
(at the smallest shapes they measure launches as much as the kernel), and for cuBLAS and
tnet also of the same calls replayed from a CUDA graph (the GPU's time alone); convolution
times are do_bench medians of the Python call, tnet's and cuDNN's (through PyTorch); training
times are CUDA events around blocks of steps, eager and from a CUDA graph. The train study ends
with airbench94's whole step at batch 1024 (forward, summed label-smoothed loss, backward,
Nesterov SGD in airbench's three groups; tnet's lookahead too): tnet's TrainStep as train.py
builds it against PyTorch in float16 (BatchNorm in float32), channels-last, cuDNN benchmark mode,
eager, CUDA-graphed, under torch.compile and compiled then graphed (the compile time reported
apart).

Each study is one module in benchmarks/ (benchmarks/gemm.py and so on: its settings at the top,
then run(args)); benchmarks/common.py holds the shared timing, table, JSON and plot helpers, and
benchmarks/steps.py the CIFAR-10 quick training steps (tnet's and PyTorch's) and their check,
benchmarks/airbench.py the train study's airbench94 rows.

Every study needs a CUDA GPU: without one, bench.py says so in one line and exits with status 2.
"""
import argparse
import os
import sys

import torch

from benchmarks import convs, gemm, launch, layers, profile, train

STUDIES = {  # name: (run(args), one-line help)
    "gemm": (gemm.run, "GEMM variants (naive, tiled, two_tiles, tnet) against cuBLAS and numpy"),
    "layers": (layers.run, "one CIFAR-10 quick training step split by layer type (conv, pool, ReLU, ...)"),
    "train": (train.run, "time for 100 CIFAR-10 quick training steps: tnet eager and graphed against PyTorch; "
                         "airbench94's fp16 step at batch 1024: tnet graphed against PyTorch eager, graphed, "
                         "compiled and compiled + graphed"),
    "profile": (profile.run, "where a tnet training step's GPU time goes: per kernel, and GEMM by GEMM"),
    "launch": (launch.run, "the host's time per GEMM call: tnet.matmul against torch.matmul"),
    "convs": (convs.run, "airbench94's and CIFAR-10 quick's convolutions, forward, dgrad and wgrad: tnet against "
                         "cuDNN in tf32, bf16 and fp16"),
}
OPTIONS = {"convs": convs.add_arguments, "train": train.add_arguments}  # study: adds its own options to its parser
NEEDS_GPU = ("Every study needs a CUDA GPU: without one (torch.cuda.is_available() is False) bench.py prints "
             "'bench.py STUDY: needs a CUDA GPU' and exits with status 2, before it imports tnet (which would "
             "run its kernels on Triton's CPU interpreter, far too slow to time).")


def build_parser():
    parser = argparse.ArgumentParser(description="The original student project's studies, side by side with PyTorch.",
                                     epilog=NEEDS_GPU)
    sub = parser.add_subparsers(dest="study", required=True, metavar="{" + ",".join(STUDIES) + "}",
                                help="which study to run")
    for name, (_, text) in STUDIES.items():
        p = sub.add_parser(name, help=text, description=text, epilog=NEEDS_GPU)
        p.add_argument("--quick", action="store_true", help="a reduced sweep that runs in about a minute")
        p.add_argument("--out", default="results/", help="folder for <study>.json and <study>.png (default: results/)")
        if name in OPTIONS:
            OPTIONS[name](p)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    # before tnet is imported: without a GPU it would switch on Triton's (slow) interpreter
    if not torch.cuda.is_available():
        print(f"bench.py {args.study}: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        sys.exit(2)
    os.makedirs(args.out, exist_ok=True)
    STUDIES[args.study][0](args)


if __name__ == "__main__":
    main()
