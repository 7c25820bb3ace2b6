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
    python bench.py zoo [--quick] [--out results/] [--batch 256] [--models ResNet18,...]
                                                       # pytorch-cifar's models, each bf16 training step:
                                                       # tnet captured against PyTorch CUDA-graphed
    python bench.py eager [--quick] [--out results/] [--profile] [--steps all|readme|none]
                                                       # the host's time per op and eager training steps:
                                                       # tnet against PyTorch eager (and graphed)

Every result is checked against a float64 reference before it is timed: a GEMM against the
float64 product; a convolution's forward, input or weight gradient against PyTorch in float64 on
the same (rounded) inputs; a training step (the losses and every parameter's change over CHECK_STEPS
steps; airbench94's over 3 steps, in float16's tolerance) against PyTorch in float64 from the same
weights on the same batches (the zoo's bf16 steps piece by piece, each within its tolerance or 100
times PyTorch fp32's own error on it, where larger). A wrong result is reported WRONG, never timed. Each study prints a
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
then run(args)); benchmarks/cli.py holds this command line (the studies, their options, main),
benchmarks/common.py the shared timing, table, JSON and plot helpers, and
benchmarks/steps.py the CIFAR-10 quick training steps (tnet's and PyTorch's) and their check,
benchmarks/airbench.py the train study's airbench94 rows, benchmarks/zoo_models.py the zoo's models
(which tests/test_zoo.py trains too).

Every study needs a CUDA GPU: without one, bench.py says so in one line and exits with status 2.
"""
from benchmarks import cli

if __name__ == "__main__":
    cli.main()
