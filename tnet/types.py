"""torch.types' aliases for annotations (`from torch.types import Number, _size`), with tnet's Tensor
in those that name one."""
import os
from typing import IO, Sequence, Union

import torch

from .tensor import Tensor

Number = _Number = Union[int, float, bool]
_int, _float, _bool, _complex, _str, _bytes = int, float, bool, complex, str, bytes
_dtype, _layout, _device = torch.dtype, torch.layout, torch.device
_size = Union[torch.Size, list[int], tuple[int, ...]]
Device = Union[torch.device, str, int, None]
IntLikeType, FloatLikeType, BoolLikeType = Union[int, torch.SymInt], Union[float, torch.SymFloat], Union[
    bool, torch.SymBool]
FileLike = Union[str, os.PathLike, IO[bytes]]
from torch.types import Storage  # noqa: E402  (torch's storages: tnet allocates through torch)
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, Sequence[Union[Tensor, None]]]

__all__ = ["Number", "Device", "FileLike", "Storage"]
