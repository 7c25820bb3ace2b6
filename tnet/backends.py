"""torch.backends' switches that training scripts set: accepted, and without effect in tnet
(tnet's convolutions are its own Triton kernels, tuned by its autotuner, not cuDNN's); and the
questions scripts ask of it (`torch.backends.mps.is_available()`). cudnn, mps and cuda are modules
of their own in sys.modules, so that `import torch.backends.cudnn as cudnn` (pytorch/examples'
imagenet, kuangliu's main.py) ports, as `torch.backends.cudnn.benchmark = True` does."""
import contextlib
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
cuda = _module("cuda", "torch.backends.cuda's switches (no effect: tnet's precision is tnet.set_precision's, and "
               "F.scaled_dot_product_attention runs tnet's one attention kernel whatever the sdp switches say).",
               matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True),
               is_built=torch.backends.cuda.is_built)

# the scaled-dot-product-attention backend switches: kept and reported, as torch's, and read by nothing
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _sdp_switches(name):
    def enable(enabled):
        _sdp[name] = bool(enabled)

    def enabled():
        return _sdp[name]
    enable.__name__, enabled.__name__ = f"enable_{name}_sdp", f"{name}_sdp_enabled"
    return enable, enabled


for _name in _sdp:
    _enable, _enabled = _sdp_switches(_name)
    setattr(cuda, _enable.__name__, _enable)
    setattr(cuda, _enabled.__name__, _enabled)


@contextlib.contextmanager
def _sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """torch.backends.cuda.sdp_kernel: the switches set within the block, restored after."""
    previous = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(previous)


cuda.sdp_kernel = _sdp_kernel
