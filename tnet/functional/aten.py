"""torch's top-level forms of torch.nn.functional's ops (torch.batch_norm, torch.embedding, ...),
whose arguments follow aten's schemas rather than F's: another order, a reduction as an int (0
'none', 1 'mean', 2 'sum'), flags that only pick torch's backends (cudnn_enabled, ignored). Each
calls tnet's functional op; the ones whose signatures match F's are F's own functions."""
from ..factory import check_global
from ..kernels.launch import check_type
from . import inplace as _inplace
from .composed import ctc_loss as _ctc_loss
from .composed import poisson_nll_loss as _poisson_nll_loss
from .conv import conv1d as _conv1d, conv2d as _conv2d, conv3d as _conv3d
from .conv import conv_transpose1d as _conv_transpose1d, conv_transpose2d as _conv_transpose2d
from .conv import conv_transpose3d as _conv_transpose3d
from .copy import embedding as _embedding
from .norm import batch_norm as _batch_norm
from .norm import group_norm as _group_norm
from .norm import instance_norm as _instance_norm
from .norm import layer_norm as _layer_norm
from .pad import pad as _pad
from .pool import adaptive_max_pool1d as _adaptive_max_pool1d
from .pool import max_pool1d as _max_pool1d
from .pool import max_pool2d as _max_pool2d
from .pool import max_pool3d as _max_pool3d
from .inputs import check_args
from .random import alpha_dropout as _alpha_dropout
from .random import check_p
from .random import dropout as _dropout
from .random import feature_alpha_dropout as _feature_alpha_dropout
from .random import feature_dropout
from .random import rrelu as _rrelu
from .resample import affine_grid as _affine_grid, grid_sample as _grid_sample
from .reduce import binary_cross_entropy_with_logits as _bce_with_logits
from .reduce import cosine_embedding_loss as _cosine_embedding_loss
from .reduce import hinge_embedding_loss as _hinge_embedding_loss
from .reduce import kl_div as _kl_div
from .reduce import margin_ranking_loss as _margin_ranking_loss
from .reduce import triplet_margin_loss as _triplet_margin_loss

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction):
    """aten's int reduction as F's name (a name passes through)."""
    return reduction if isinstance(reduction, str) else _REDUCTIONS[reduction]


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def constant_pad_nd(input, pad, value=0):
    """torch.constant_pad_nd: F.pad(input, pad, 'constant', value) (negative pads crop)."""
    return _pad(input, pad, "constant", value)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input, output_size):
    """(values, int64 indices), as torch.adaptive_max_pool1d (F's returns the values alone)."""
    return _adaptive_max_pool1d(input, output_size, True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return _layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return _group_norm(input, num_groups, weight, bias, eps)


def _dropout_args(name, p, train):
    """aten's dropouts: the parser's TypeErrors, then a RuntimeError for p outside [0, 1] (F's is a ValueError)."""
    check_args(name, "bool", train=train)
    check_args(name, "float", p=p)
    check_p(p, RuntimeError)


def dropout(input, p, train):
    _dropout_args("dropout", p, train)
    return _dropout(input, p, train)


def alpha_dropout(input, p, train):
    _dropout_args("alpha_dropout", p, train)
    return _alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    _dropout_args("feature_alpha_dropout", p, train)
    return _feature_alpha_dropout(input, p, train)


# the in-place forms write their input (computed out of place, then copied in)
dropout_ = _inplace._unary("dropout_", dropout, keeps_self=True)
alpha_dropout_ = _inplace._unary("alpha_dropout_", alpha_dropout, keeps_self=True)
feature_dropout_ = _inplace._unary("feature_dropout_", feature_dropout, keeps_self=True)
feature_alpha_dropout_ = _inplace._unary("feature_alpha_dropout_", feature_alpha_dropout, keeps_self=True)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """weight's rows at indices (aten's order: weight first); a negative padding_idx is none."""
    return _embedding(indices, weight, None if padding_idx < 0 else padding_idx, None, 2.0, scale_grad_by_freq,
                      sparse)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    check_global("rrelu", generator)
    return _rrelu(input, lower, upper, training)


rrelu_ = _inplace._unary("rrelu_", rrelu, keeps_self=True)


def kl_div(input, target, reduction=1, *, log_target=False):
    return _kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    """torch.ctc_loss: F.ctc_loss with aten's int reduction, which defaults to none (each sequence's loss: what
    torch's binding gives, though its schema names mean)."""
    check_type(not isinstance(reduction, str), "ctc_loss(): argument 'reduction' must be int, not str")  # aten's parser
    return _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _REDUCTIONS[reduction], zero_infinity)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return _bce_with_logits(input, target, weight, reduction=_reduction(reduction), pos_weight=pos_weight)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return _hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return _margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return _cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=1):
    return _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """torch.convolution (aten's one entry for every convolution): F.conv1d/2d/3d, or with transposed their
    conv_transpose forms, by the weight's number of dims."""
    n = weight.ndim - 2
    check_type(n in (1, 2, 3), lambda: f"convolution: expected a weight of 3, 4 or 5 dims, got {weight.ndim}")
    if not transposed and any(output_padding if isinstance(output_padding, (tuple, list)) else (output_padding,)):
        raise RuntimeError(f"output_padding is not supported for non-transposed convolutions; got: {output_padding}")
    if transposed:
        return (_conv_transpose1d, _conv_transpose2d, _conv_transpose3d)[n - 1](input, weight, bias, stride, padding,
                                                                                output_padding, groups, dilation)
    return (_conv1d, _conv2d, _conv3d)[n - 1](input, weight, bias, stride, padding, dilation, groups)


def affine_grid_generator(theta, size, align_corners):
    return _affine_grid(theta, size, align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler (and grid_sampler_2d/3d): F.grid_sample with aten's int modes (interpolation 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    return _grid_sample(input, grid, ("bilinear", "nearest", "bicubic")[interpolation_mode],
                        ("zeros", "border", "reflection")[padding_mode], align_corners)


grid_sampler_2d = grid_sampler_3d = grid_sampler
