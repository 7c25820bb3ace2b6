"""bench.py's command line: the studies, each one's options, and main, which runs the study
asked for (every study needs a CUDA GPU). Tests reach it here, never through the script."""
import argparse
import os
import sys

import torch

from . import convs, eager, gemm, launch, layers, profile, runs, train, zoo

STUDIES = {  # name: (run(args), one-line help)
    "gemm": (gemm.run, "GEMM variants (naive, tiled, two_tiles, tnet) against cuBLAS and numpy"),
    "layers": (layers.run, "one CIFAR-10 quick training step split by layer type (conv, pool, ReLU, ...)"),
    "train": (train.run, "time for 100 CIFAR-10 quick training steps: tnet eager and graphed against PyTorch; "
                         "airbench94's fp16 step at batch 1024: tnet graphed against PyTorch eager, graphed, "
                         "compiled and compiled + graphed"),
    "profile": (profile.run, "where a tnet training step's GPU time goes: per kernel, and GEMM by GEMM"),
    "launch": (launch.run, "the host's time per GEMM call: tnet.matmul against torch.matmul"),
    "convs": (convs.run, "airbench94's, CIFAR-10 quick's and ResNet-18's convolutions and MobileNetV2's depthwise "
                         "ones, forward, dgrad and wgrad: tnet against cuDNN in tf32, bf16 and fp16"),
    "zoo": (zoo.run, "pytorch-cifar's models (ResNet, MobileNetV2, DenseNet, ...): each bf16 training step at batch 256, "
                     "tnet captured against PyTorch CUDA-graphed, channels-last"),
    "eager": (eager.run, "the host's time per op (a + b, relu, a backward, conv2d, BatchNorm2d) and eager training steps "
                         "(the README network, ResNet-18 bf16 at batch 128 and 256): tnet against PyTorch eager, "
                         "and tnet.graph.capture against PyTorch graphed"),
    "runs": (runs.run, "airbench94's whole training runs, seeds 0 to N-1: tnet's (train.py's) and a PyTorch twin of the "
                       "same recipe (muon) on the same batches, accuracy and seconds per run"),
}
OPTIONS = {"gemm": gemm.add_arguments, "convs": convs.add_arguments, "train": train.add_arguments,  # study: adds its own options to its parser
           "zoo": zoo.add_arguments, "eager": eager.add_arguments, "runs": runs.add_arguments}
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
