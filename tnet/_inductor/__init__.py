"""torch._inductor, for its config (see config.py)."""
from . import config  # noqa: F401
