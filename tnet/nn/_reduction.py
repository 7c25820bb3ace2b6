"""torch.nn._reduction, which copies of torch's loss modules import (`from torch.nn import _reduction as _Reduction`):
a reduction's enum and the reduction string of the deprecated size_average and reduce (functional.inputs'
legacy_reduction, the rule tnet's losses apply)."""
import warnings

from ..functional.inputs import legacy_reduction


def get_enum(reduction):
    """torch's enum of a reduction: 'none' 0, 'mean' 1 ('elementwise_mean' too, with its warning), 'sum' 2."""
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.", stacklevel=2)
        reduction = "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return ("none", "mean", "sum").index(reduction)


def legacy_get_string(size_average, reduce, emit_warning=True):
    """'mean', 'sum' or 'none' from size_average and reduce (None counts as True), warning as torch's unless
    emit_warning is False."""
    with warnings.catch_warnings():
        if not emit_warning:
            warnings.simplefilter("ignore")
        return legacy_reduction(True if size_average is None else size_average, reduce, "mean")


def legacy_get_enum(size_average, reduce, emit_warning=True):
    return get_enum(legacy_get_string(size_average, reduce, emit_warning))
