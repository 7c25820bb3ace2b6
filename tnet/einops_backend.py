"""einops on tnet Tensors, where einops is installed (tnet does not need it): rearrange, repeat,
reduce, einsum and pack run through tnet's ops (reshape, permute, expand, repeat, cat, the
reductions), as their torch backend does for torch's tensors; einops' torch layers without
parameters (Rearrange, Reduce) go into tnet's containers (nn.Sequential wraps them)."""
try:
    from einops._backends import TorchBackend
except ImportError:  # einops missing, or a version without this class: nothing to register
    TorchBackend = None

if TorchBackend is not None:
    class TnetBackend(TorchBackend):
        """einops' torch backend with tnet as its torch (einops finds it among the subclasses of its
        backends, by framework_name, once tnet is imported)."""
        framework_name = "tnet"

        def __init__(self):  # not TorchBackend's: it registers torch.compile's operations
            import tnet
            self.torch = tnet

        def is_float_type(self, x):
            return x.dtype in (self.torch.float16, self.torch.float32, self.torch.bfloat16)

        def to_numpy(self, x):
            return x.detach().numpy()
