"""torch.nn.modules.adaptive's import path: tnet.nn's AdaptiveLogSoftmaxWithLoss, re-exported."""
from .. import AdaptiveLogSoftmaxWithLoss

__all__ = ["AdaptiveLogSoftmaxWithLoss"]
