"""torch.nn.modules.container's import path: tnet.nn's layers, re-exported."""
from .. import (ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential)

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
