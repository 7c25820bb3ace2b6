"""Softmax, log-softmax and cross-entropy (kernels/softmax.py), over rows, in fp32."""
from ..amp import is_autocast_enabled
from ..factory import float32
from ..kernels import pointwise as _pw
from ..kernels import softmax as _softmax
from ..kernels.launch import check
from ..tensor import record
from .inputs import check_tensors


def _rows(name, x, dim):
    check_tensors(name, x=x)
    check(x.ndim == 2 and dim in (1, -1), f"{name}: supports 2-D input over dim 1, got {x.shape} and dim={dim}")


def _autocast_fp32(x):
    """The output dtype of softmax, log_softmax and the losses: float32 inside a tnet.autocast
    block (torch's autocast runs them in fp32), else x's. They compute in fp32 either way."""
    return float32 if is_autocast_enabled() else x.dtype


def softmax(x, dim=1):
    """Softmax over the rows of a 2-D tensor (in fp32; the output in x's dtype, or fp32 under
    tnet.autocast)."""
    _rows("softmax", x, dim)
    y, dtype = _softmax.softmax(x.data.contiguous(), _autocast_fp32(x)), x.dtype  # a strided view: a copy
    return record("softmax", y, (x,), lambda g: (_softmax.softmax_backward(y, g, dtype),), saved=(y,))


def log_softmax(x, dim=1):
    """x - logsumexp(x) over the rows of a 2-D tensor (in fp32; the output in x's dtype, or fp32
    under tnet.autocast)."""
    _rows("log_softmax", x, dim)
    y, dtype = _softmax.log_softmax(x.data.contiguous(), _autocast_fp32(x)), x.dtype  # a strided view: a copy
    return record("log_softmax", y, (x,), lambda g: (_softmax.log_softmax_backward(y, g, dtype),), saved=(y,))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """-log softmax(input)[target] per row of input [N, classes], target int64 [N]; reduction
    'mean' (over the rows whose target is not ignore_index), 'sum' or 'none', and
    label_smoothing, as in PyTorch (class weights and the deprecated size_average and reduce
    are not supported). A target outside [0, classes), other than ignore_index, raises IndexError
    (InputIndexError, also a ValueError) as torch's; inside a captured
    CUDA graph it is flagged on the device instead (see kernels.softmax.take_label_error).
    The loss and its gradient come out of one fused kernel, in fp32; the loss has input's
    dtype (fp32 under tnet.autocast, as torch's), the gradient input's."""
    check_tensors("cross_entropy", input=input, target=target)
    check(weight is None and size_average is None and reduce is None,
          "cross_entropy: weight, size_average and reduce are not supported")
    check(input.ndim == 2, f"cross_entropy: input must be [N, classes], got {input.shape}")
    loss, dlogits = _softmax.cross_entropy(input.data, target.data, label_smoothing, reduction, ignore_index,
                                           dtype=_autocast_fp32(input))
    if reduction == "none":
        return record("cross_entropy", loss, (input,), lambda g: (_softmax.scale_rows_(dlogits, g),))
    return record("cross_entropy", loss, (input,), lambda g: (_pw.scale_(dlogits, g.reshape(1)),))
