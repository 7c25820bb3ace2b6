"""torch.nn.grad (also reached as torch.nn.functional.grad): a convolution's input and weight gradients as
functions, which custom autograd Functions' backwards call, with torch's arguments in torch's order. Both run on
the tape (differentiable again): the input's gradient is the transposed convolution of grad_output by the weight,
its output_padding the rows and columns a stride left out of input_size; the weight's is functional.conv's
weight_graph."""
from ..functional import conv as _conv
from ..kernels.launch import check, ntuple


def _sizes(n, name, stride, padding, dilation):
    return (ntuple(stride, n, f"{name}: stride", 1, True), ntuple(padding, n, f"{name}: padding", 0, True),
            ntuple(dilation, n, f"{name}: dilation", 1, True))


def _input(n, transposed, name, input_size, weight, grad_output, stride, padding, dilation, groups):
    stride, padding, dilation = _sizes(n, name, stride, padding, dilation)
    input_size = tuple(input_size)
    check(len(input_size) == n + 2, lambda: f"{name}: input_size must have {n + 2} sizes, got {input_size}")
    # the sizes a transposed convolution gives without output_padding; the input's rows past them the stride skipped
    extra = tuple(i - ((o - 1) * s - 2 * p + d * (k - 1) + 1) for i, o, s, p, d, k in
                  zip(input_size[2:], grad_output.shape[2:], stride, padding, dilation, weight.shape[2:]))
    check(all(e >= 0 for e in extra), lambda: f"{name}: input_size {input_size} is too small for grad_output "
                                              f"{tuple(grad_output.shape)}")
    return transposed(grad_output, weight, None, stride, padding, extra, groups, dilation)


def _weight(n, name, input, weight_size, grad_output, stride, padding, dilation, groups):
    stride, padding, dilation = _sizes(n, name, stride, padding, dilation)
    return _conv.weight_graph(input, grad_output, tuple(weight_size), stride, padding, dilation, groups)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d's input, of shape input_size, for grad_output."""
    return _input(1, _conv.conv_transpose1d, "conv1d_input", input_size, weight, grad_output, stride, padding,
                  dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d's weight, of shape weight_size, for grad_output."""
    return _weight(1, "conv1d_weight", input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d's input, of shape input_size, for grad_output."""
    return _input(2, _conv.conv_transpose2d, "conv2d_input", input_size, weight, grad_output, stride, padding,
                  dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d's weight, of shape weight_size, for grad_output."""
    return _weight(2, "conv2d_weight", input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d's input, of shape input_size, for grad_output."""
    return _input(3, _conv.conv_transpose3d, "conv3d_input", input_size, weight, grad_output, stride, padding,
                  dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d's weight, of shape weight_size, for grad_output."""
    return _weight(3, "conv3d_weight", input, weight_size, grad_output, stride, padding, dilation, groups)
