"""torch.random's seeding, for tnet's one generator (tnet.manual_seed's)."""
from .factory import Generator, fork_rng, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["Generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]
