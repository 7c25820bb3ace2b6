"""torch.random's seeding, for tnet's one generator (tnet.manual_seed's)."""
from .factory import Generator, initial_seed, manual_seed, seed

__all__ = ["Generator", "initial_seed", "manual_seed", "seed"]
