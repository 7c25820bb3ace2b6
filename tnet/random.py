"""torch.random's seeding, for tnet's one generator (tnet.manual_seed's)."""
from .factory import (Generator, default_generator, fork_rng, get_rng_state, initial_seed, manual_seed, seed,
                      set_rng_state)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]
