"""torch.nn.attention's backend choice for F.scaled_dot_product_attention: SDPBackend (torch's enum) and
sdpa_kernel, which a script wraps around its attention (`with sdpa_kernel(SDPBackend.FLASH_ATTENTION):`).
tnet has one attention kernel of its own, which runs whatever the block names."""
import contextlib

from torch.nn.attention import SDPBackend

__all__ = ["SDPBackend", "sdpa_kernel"]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    listed = backends if isinstance(backends, (list, tuple)) else [backends]
    if not all(isinstance(b, SDPBackend) for b in listed):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    yield
