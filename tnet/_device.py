"""Where tnet keeps its tensors, decided once at import.

With a CUDA GPU, tensors live on it (under torchrun, GPU LOCAL_RANK) and Triton compiles the
kernels. Without one, tnet keeps tensors on the CPU and runs the same kernels through Triton's
interpreter, which must be switched on before any `@triton.jit` decorator runs (a user's own
TRITON_INTERPRET wins).
"""
import os
import sys

import torch

if torch.cuda.is_available():
    if "LOCAL_RANK" in os.environ:  # a torchrun process: its own GPU, before anything is allocated
        rank, gpus = int(os.environ["LOCAL_RANK"]), torch.cuda.device_count()
        if rank >= gpus:  # NCCL takes one process per GPU
            raise RuntimeError(f"tnet: local rank {rank} has no GPU of its own ({gpus} visible): "
                               f"start at most {gpus} processes a machine (torchrun --nproc_per_node {gpus})")
        torch.cuda.set_device(rank)
    # with its index, so that `t.device == DEVICE` holds for the tensors tnet makes (cuda:0)
    DEVICE = torch.device("cuda", torch.cuda.current_device())
else:
    DEVICE = torch.device("cpu")
    if "TRITON_INTERPRET" not in os.environ:
        os.environ["TRITON_INTERPRET"] = "1"
        print("tnet: no CUDA GPU, running Triton kernels on the CPU through the interpreter (slow)",
              file=sys.stderr)

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
# Kernels and tile configs written without a GPU (they pass in the interpreter and compile for sm_90) stay
# off until their GPU tests pass and they are timed: TNET_TRIAL=1 turns them on for that.
TRIAL = os.environ.get("TNET_TRIAL", "0") == "1"
# The switch of a fused op whose kernels have not yet run on a GPU: the interpreter runs them, a GPU only under
# TNET_TRIAL=1 (the test suite sets it: tests/conftest.py), their compositions elsewhere
TRIAL_KERNELS = INTERPRET or TRIAL
