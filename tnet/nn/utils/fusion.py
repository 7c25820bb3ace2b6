"""torch.nn.utils.fusion: a convolution or Linear and the BatchNorm after it folded into one layer for
inference (fuse_conv_bn_eval, fuse_linear_bn_eval) and the weights' arithmetic alone
(fuse_conv_bn_weights, fuse_linear_bn_weights), as torch's, built of tnet's ops: with running
statistics mean and var, w' = w * gamma / sqrt(var + eps) (per output channel) and
b' = (b - mean) * gamma / sqrt(var + eps) + beta."""
import copy

from ...tensor import Tensor

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of conv (deep copy, as torch's) whose weight and bias fold in bn's running statistics and
    affine parameters; both must be in eval mode (AssertionError, as torch's). transpose: conv is a
    ConvTranspose, whose output channels are its weight's dim 1."""
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused_conv = copy.deepcopy(conv)
    assert bn.running_mean is not None and bn.running_var is not None
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) of the fused convolution, as new Parameters (requires_grad as conv_w's and
    conv_b's); a missing bias (whose Parameter then does not require grad) or affine parameter
    counts as zeros or ones, as torch's."""
    from .. import Parameter
    conv_b = _or_full(conv_b, bn_rm, 0.0)
    scale = _or_full(bn_w, bn_rm, 1.0) * (bn_rv + bn_eps).rsqrt()
    shape = [1, -1] if transpose else [-1, 1]
    fused_w = conv_w * scale.reshape(shape + [1] * (conv_w.ndim - 2))
    fused_b = (conv_b - bn_rm) * scale + _or_full(bn_b, bn_rm, 0.0)
    return Parameter(fused_w.detach(), requires_grad=conv_w.requires_grad), \
        Parameter(fused_b.detach(), requires_grad=conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of linear whose weight and bias fold in bn (a BatchNorm1d of linear.out_features, or
    of one feature), both in eval mode, as torch's."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    fused_linear = copy.deepcopy(linear)
    assert linear.out_features == bn.num_features or bn.num_features == 1, \
        "To fuse, linear.out_features == bn.num_features or bn.num_features == 1"
    assert bn.running_mean is not None and bn.running_var is not None
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) of the fused Linear, as new Parameters, as torch's."""
    from .. import Parameter
    linear_b = _or_full(linear_b, bn_rm, 0.0)
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(fused_w.detach(), requires_grad=linear_w.requires_grad), \
        Parameter(fused_b.detach(), requires_grad=linear_b.requires_grad)


def _or_full(t, like, value):
    """t, or a tensor of value shaped as like where t is None (a layer without bias or affine)."""
    return t if isinstance(t, Tensor) else like.new_full(like.shape, value)
