"""torch.distributions, as far as CIFAR scripts use it: Beta, for mixup's and CutMix's mixing weight
(`torch.distributions.beta.Beta(a, a).sample()`). Samples are drawn on the host by numpy from the
stream tnet.manual_seed reseeds (as randint and randperm): other numbers than torch's, a host read of
the parameters when they are tensors, and no reparameterized samples (rsample) or log_prob."""
from .beta import Beta

__all__ = ["Beta"]
