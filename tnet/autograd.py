"""torch.autograd's names that old training scripts use."""


def Variable(tensor, requires_grad=False, volatile=False):
    """torch.autograd.Variable (deprecated in torch, where it returns the tensor): the tensor itself,
    requiring grad where asked."""
    if requires_grad:
        tensor.requires_grad = True
    return tensor
