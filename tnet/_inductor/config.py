"""torch._inductor.config, which scripts set beside torch.compile (gpt-fast's
`coordinate_descent_tuning = True`, `triton.unique_kernel_names = True`): a setting is kept and
read back and changes nothing (tnet's kernels are Triton's already); one never set raises
AttributeError."""
from types import SimpleNamespace

triton = SimpleNamespace()
cpp = SimpleNamespace()
