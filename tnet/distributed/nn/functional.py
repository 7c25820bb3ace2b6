"""torch.distributed.nn.functional's all_gather, all_reduce and reduce_scatter: tnet.distributed's collectives as
autograd Functions, with torch's gradients. Each returns new tensors (the collectives of tnet.distributed write in
place). The others (broadcast, gather, scatter, reduce, all_to_all) are not here."""
from ...autograd.function import Function
from ...factory import empty_like
from ...functional.copy import stack
from .. import ReduceOp, get_rank, get_world_size, group
from .. import all_gather as gather_into
from .. import all_reduce as reduce_in_place
from .. import reduce_scatter as reduce_scatter_into


class AllGather(Function):
    """Forward: every rank's tensor, in rank order. Backward: each rank's input receives the sum over the ranks of
    the gradient its slot got there. torch reduce-scatters the gradients (an all-to-all on gloo); here all of them
    are summed by one all_reduce and this rank's slot kept: the same sums, world_size times the traffic."""

    @staticmethod
    def forward(ctx, group, tensor):
        tensor = tensor.contiguous()
        ctx.group = group
        out_tensor_list = [empty_like(tensor) for _ in range(get_world_size(group=group))]
        gather_into(out_tensor_list, tensor, group=group)
        return tuple(out_tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        summed = stack(grad_outputs).contiguous()
        reduce_in_place(summed, op=ReduceOp.SUM, group=ctx.group)
        return None, summed[get_rank(group=ctx.group)]


class AllReduce(Function):
    """Forward: the reduction of every rank's tensor; backward: the same reduction of the gradients, as torch's
    (the gradient of a SUM, and what torch gives for the other ops)."""

    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.group, ctx.op = group, op
        tensor = tensor.clone().contiguous()
        reduce_in_place(tensor, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, AllReduce.apply(ctx.op, ctx.group, grad_output)


class ReduceScatter(Function):
    """Forward: output holds the reduction over the ranks of their input_list[rank], in place, as torch's, and a
    copy of it is returned; backward: input_list[i] receives rank i's output gradient (an all_gather), as torch's."""

    @staticmethod
    def forward(ctx, op, group, output, *input_list):
        ctx.group = group
        reduce_scatter_into(output, [t.contiguous() for t in input_list], op=op, group=group)
        return output.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None, *AllGather.apply(ctx.group, grad_output))


def all_gather(tensor, group=group.WORLD):
    """A tuple of world_size tensors: rank i's `tensor` at i, each differentiable."""
    return AllGather.apply(group, tensor)


def all_reduce(tensor, op=ReduceOp.SUM, group=group.WORLD):
    """A new tensor: `tensor` reduced over the ranks by op, differentiable."""
    return AllReduce.apply(op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=group.WORLD):
    """output (written in place, and a differentiable copy of it returned): the reduction over the ranks of their
    input_list[rank]."""
    return ReduceScatter.apply(op, group, output, *input_list)
