"""torch.distributions, as far as CIFAR scripts use it: Beta, for mixup's and CutMix's mixing weight
(`torch.distributions.beta.Beta(a, a).sample()`). Samples are drawn on the host by numpy from the
stream tnet.manual_seed reseeds (as randint and randperm): other numbers than torch's, a host read of
the parameters when they are tensors, and no reparameterized samples (rsample) or log_prob."""
import sys
import types

import numpy as np
import torch

from .factory import init_generator
from .tensor import Tensor, as_storage


def _host(value):
    """A parameter as a float64 numpy array: a number, or a tnet tensor read back (a sync)."""
    return np.asarray(value.numpy() if isinstance(value, Tensor) else value, np.float64)


class Beta:
    """Beta(concentration1, concentration0, validate_args=None): numbers or tensors that broadcast
    to batch_shape. sample(sample_shape) gives float32 values of shape sample_shape + batch_shape."""

    def __init__(self, concentration1, concentration0, validate_args=None):
        self._a, self._b = np.broadcast_arrays(_host(concentration1), _host(concentration0))
        if validate_args is not False and not (np.all(self._a > 0) and np.all(self._b > 0)):
            raise ValueError("Expected parameters concentration1 and concentration0 of Beta to be positive, got "
                             f"{self._a.tolist()} and {self._b.tolist()}")
        self.batch_shape = torch.Size(self._a.shape)
        self.event_shape = torch.Size()

    @property
    def concentration1(self):
        return Tensor(as_storage(self._a.astype(np.float32)))

    @property
    def concentration0(self):
        return Tensor(as_storage(self._b.astype(np.float32)))

    @property
    def mean(self):
        return Tensor(as_storage((self._a / (self._a + self._b)).astype(np.float32)))

    def sample(self, sample_shape=torch.Size()):
        shape = tuple(sample_shape) + tuple(self.batch_shape)
        draw = init_generator().beta(self._a, self._b, size=shape)
        return Tensor(as_storage(np.asarray(draw, np.float32)))

    def rsample(self, sample_shape=torch.Size()):
        raise NotImplementedError("Beta.rsample: tnet draws Beta samples on the host, without a gradient; use sample()")

    def __repr__(self):
        return f"Beta(concentration1: {self.concentration1}, concentration0: {self.concentration0})"


__all__ = ["Beta"]

# torch.distributions.beta, a module of its own in sys.modules: `from torch.distributions.beta import Beta` ports
beta = types.ModuleType(__name__ + ".beta", "torch.distributions.beta's Beta")
beta.Beta = Beta
sys.modules[beta.__name__] = beta
