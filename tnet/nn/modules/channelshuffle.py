"""torch.nn.modules.channelshuffle's import path: tnet.nn's layers, re-exported."""
from .. import (ChannelShuffle)

__all__ = ["ChannelShuffle"]
