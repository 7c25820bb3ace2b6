"""torch.backends' switches that training scripts set: accepted, and without effect in tnet
(tnet's convolutions are its own Triton kernels, tuned by its autotuner, not cuDNN's)."""
import types

cudnn = types.SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True)
cuda = types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True))
