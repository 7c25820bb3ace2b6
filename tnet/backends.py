"""torch.backends' switches that training scripts set: accepted, and without effect in tnet
(tnet's convolutions are its own Triton kernels, tuned by its autotuner, not cuDNN's); and the
questions scripts ask of it (`torch.backends.mps.is_available()`). cudnn, mps and cuda are modules
of their own in sys.modules, so that `import torch.backends.cudnn as cudnn` (pytorch/examples'
imagenet, kuangliu's main.py) ports, as `torch.backends.cudnn.benchmark = True` does."""
import sys
import types

import torch


def _module(name, doc, **names):
    module = types.ModuleType(f"{__name__}.{name}", doc)
    module.__dict__.update(names)
    sys.modules[module.__name__] = module
    return module


cudnn = _module("cudnn", "torch.backends.cudnn's switches (no effect: tnet does not call cuDNN).",
                benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
                is_available=torch.backends.cudnn.is_available, version=torch.backends.cudnn.version)
mps = _module("mps", "torch.backends.mps's questions: tnet runs on CUDA or the CPU.",
              is_available=lambda: False, is_built=lambda: False)
cuda = _module("cuda", "torch.backends.cuda's switches (no effect: tnet's precision is tnet.set_precision's).",
               matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True),
               is_built=torch.backends.cuda.is_built)
