"""torch.utils.tensorboard for tnet: `SummaryWriter` is torch's, given tnet Tensors as host data.

Importing this module needs the tensorboard package, as torch's does (the same ImportError without
it; tnet does not depend on it). Each tnet.Tensor argument, at any depth of a dict, list or tuple
(add_scalars' dict), reaches torch's writer as a numpy array (16-bit floats as float32): a host
read, as torch's writer makes. `add_graph` traces a torch.nn.Module with torch.jit and cannot trace
a tnet model: it raises NotImplementedError."""
import torch.utils.tensorboard as _tb

from ..tensor import Tensor

__all__ = ["SummaryWriter"]


def _host(value):
    """value with each tnet.Tensor in it as a numpy array."""
    if isinstance(value, Tensor):
        return (value.float() if value.is_floating_point() else value).numpy()
    if isinstance(value, dict):
        return {k: _host(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_host(v) for v in value)
    return value


class SummaryWriter(_tb.SummaryWriter):
    """torch's SummaryWriter (same arguments, same files) whose add_* methods take tnet Tensors."""

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        raise NotImplementedError("SummaryWriter.add_graph: torch.jit cannot trace a tnet model; "
                                  "log scalars, histograms and images instead")


def _taking_tnet(method):
    def call(self, *args, **kwargs):
        return method(self, *[_host(a) for a in args], **{k: _host(v) for k, v in kwargs.items()})
    call.__name__, call.__doc__ = method.__name__, method.__doc__
    return call


for _name in dir(_tb.SummaryWriter):
    if _name.startswith("add_") and _name != "add_graph":
        setattr(SummaryWriter, _name, _taking_tnet(getattr(_tb.SummaryWriter, _name)))
