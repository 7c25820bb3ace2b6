"""torch.backends' switches that training scripts set: accepted, and without effect in tnet
(tnet's convolutions are its own Triton kernels, tuned by its autotuner, not cuDNN's); and the
questions scripts ask of it (`torch.backends.mps.is_available()`)."""
import types

import torch

cudnn = types.SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
                              is_available=torch.backends.cudnn.is_available, version=torch.backends.cudnn.version)
mps = types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False)  # tnet runs on CUDA or the CPU
cuda = types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True))
