"""Data parallelism in PyTorch's shape, over torch.distributed (NCCL between GPUs, gloo on the
CPU), which moves the memory: tnet has no communication layer of its own.

    import tnet.distributed as dist
    dist.init_process_group("nccl")              # under torchrun; "gloo" on the CPU
    model = dist.DistributedDataParallel(model)  # the same weights on every rank (rank 0's)
    loader = tnet.data.Loader(..., num_replicas=dist.get_world_size(), rank=dist.get_rank())
    loss = F.cross_entropy(model(x), y); loss.backward()   # .grad: the average over the ranks

Each rank runs the same step on its own batch. As a backward accumulates the gradients, each full
bucket of them (about bucket_cap_mb, in the reverse order of the parameters, the order a backward
reaches them) is copied into one flat buffer, scaled by 1 / world_size (a tnet kernel) and summed
over the ranks by one all_reduce that runs while the backward goes on; at the backward's end the
rest are reduced, every reduction waited for, and the averages copied back into the .grad tensors.
A parameter that has no gradient on a rank takes part with zeros (torch's find_unused_parameters);
one accumulated again after its bucket went is reduced again at the end. BatchNorm keeps each
rank's own statistics, as torch's DDP does. All of it is launches and collectives on the current
stream, so a captured step (graph.TrainStep) replays it, where the process group allows capture
(NCCL)."""
import contextlib
import sys

import torch
import torch.distributed as _dist
import torch.distributed.elastic.multiprocessing.errors
from torch.distributed import (ReduceOp, all_gather_object, barrier, broadcast_object_list, destroy_process_group,
                               get_backend, get_rank, get_world_size, init_process_group, is_available,
                               is_initialized, new_group)
# the questions and names of setup code that touch no tensor (`"nccl" if dist.is_nccl_available() else "gloo"`)
from torch.distributed import (Backend, GroupMember, get_node_local_rank, group, is_gloo_available, is_mpi_available,
                               is_nccl_available, is_torchelastic_launched, monitored_barrier)
from torch.distributed import get_global_rank, get_group_rank, get_process_group_ranks, is_backend_available

from .. import amp
from ..kernels.copy import copy_
from ..kernels.launch import check
from ..kernels.pointwise import scale_
from ..nn import Module
from ..tensor import Tensor, bump_version, empty_in_layout, is_grad_enabled, queue_callback

__all__ = ["Backend", "DistributedDataParallel", "GroupMember", "ReduceOp", "all_gather", "all_gather_into_tensor",
           "all_gather_object", "all_reduce", "barrier", "broadcast", "broadcast_object_list", "destroy_process_group",
           "get_backend", "get_node_local_rank", "get_rank", "get_world_size", "group", "init_process_group",
           "is_available", "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "monitored_barrier", "new_group", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single", "all_to_all", "send", "recv", "isend",
           "irecv", "get_global_rank", "get_group_rank", "get_process_group_ranks", "is_backend_available"]

BUCKET_CAP_MB = 25  # torch's default

# torchrun's error reporting, which scripts run under it import (`from torch.distributed.elastic.multiprocessing.errors
# import record`, `@record` on main): torch's own modules at tnet's paths, as they touch no tensor
elastic = torch.distributed.elastic
for _module in (elastic, elastic.multiprocessing, elastic.multiprocessing.errors):
    sys.modules[__name__ + _module.__name__[len("torch.distributed"):]] = _module


# The collectives scripts call on tensors (a MetricLogger's all_reduce of its counts, MoCo's and SimCLR's
# concat_all_gather, a broadcast of rank 0's weights): torch.distributed's own, on the tensors' memory, which
# they write in place (each written tensor's version bumped, so that a backward that saved it raises, as torch's).
# No gradient flows through them, as through torch's.
def _written(tensors, work):
    bump_version(*tensors)
    return work


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    return _written([tensor], _dist.all_reduce(tensor.memory, op, group, async_op))


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    return _written([tensor], _dist.reduce(tensor.memory, dst, op, group, async_op, group_dst))


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    return _written([tensor], _dist.broadcast(tensor.memory, src, group, async_op, group_src))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's tensor."""
    return _written(tensor_list, _dist.all_gather([t.memory for t in tensor_list], tensor.memory, group, async_op))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor (world_size times input_tensor's size along dim 0) = the ranks' input_tensors, in rank order."""
    return _written([output_tensor], _dist.all_gather_into_tensor(output_tensor.memory, input_tensor.memory, group,
                                                                  async_op))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output = the reduction over the ranks of their input_list[rank]."""
    return _written([output], _dist.reduce_scatter(output.memory, [t.memory for t in input_list], op, group,
                                                   async_op))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """output = the reduction over the ranks of their input's rank-th part along dim 0 (world_size parts)."""
    return _written([output], _dist.reduce_scatter_tensor(output.memory, input.memory, op, group, async_op))


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """gather_list[i] on rank dst = rank i's tensor (the other ranks pass no list)."""
    lists = None if gather_list is None else [t.memory for t in gather_list]
    return _written(gather_list or [], _dist.gather(tensor.memory, lists, dst, group, async_op, group_dst))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """tensor on rank i = scatter_list[i] of rank src (the other ranks pass no list)."""
    lists = None if scatter_list is None else [t.memory for t in scatter_list]
    return _written([tensor], _dist.scatter(tensor.memory, lists, src, group, async_op, group_src))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """output's i-th part = rank i's input part for this rank (equal parts along dim 0, or the split sizes)."""
    return _written([output], _dist.all_to_all_single(output.memory, input.memory, output_split_sizes,
                                                      input_split_sizes, group, async_op))


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """output_tensor_list[i] = rank i's input_tensor_list[this rank] (not on gloo, as torch's)."""
    return _written(output_tensor_list, _dist.all_to_all([t.memory for t in output_tensor_list],
                                                         [t.memory for t in input_tensor_list], group, async_op))


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    _dist.send(tensor.memory, dst, group, tag, group_dst)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """tensor = what rank src sent (any rank where src is None); returns the sender's rank."""
    sender = _dist.recv(tensor.memory, src, group, tag, group_src)
    bump_version(tensor)
    return sender


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    return _dist.isend(tensor.memory, dst, group, tag, group_dst)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    return _written([tensor], _dist.irecv(tensor.memory, src, group, tag, group_src))


def _flat(t):
    """t's memory as a vector, in its own order (a dense tensor: contiguous or channels-last)."""
    return t.as_strided((t.numel(),), (1,))


class _Bucket:
    """Parameters whose gradients are reduced together, and their flat buffer."""

    def __init__(self, params, device, dtype):
        self.params = params
        self.buffer = torch.empty(sum(p.memory.numel() for p in params), device=device, dtype=dtype)
        # each parameter's part of the buffer, in order
        self.parts = list(zip(params, self.buffer.split([p.memory.numel() for p in params])))
        self.reset()

    def reset(self):
        self.ready, self.work, self.late = set(), None, False


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel's gradient averaging for a tnet module (see the
    module's docstring): forward is the module's; after each backward every parameter's .grad is
    the average of the ranks' gradients. The module's parameters and buffers are rank 0's from the
    start (broadcast_buffers: its buffers at construction only; BatchNorm statistics stay each
    rank's). device_ids and output_device are accepted for torch's signature: a process has one
    device, tnet's. state_dict() keys start with "module.", as torch's."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False):
        super().__init__()
        check(_dist.is_initialized(), "DistributedDataParallel: call tnet.distributed.init_process_group first")
        check(dim == 0, lambda: f"DistributedDataParallel: the batch dimension must be 0, got {dim}")
        self.module = module
        self.process_group = process_group
        self.world_size = _dist.get_world_size(process_group)
        params = [p for p in module.parameters() if p.requires_grad]
        check(params, "DistributedDataParallel: the module has no parameter that requires grad")
        device = params[0].memory.device
        self._scale = torch.full((1,), 1.0 / self.world_size, device=device)
        # rank 0's weights (and buffers) everywhere, and their 16-bit copies rewritten
        for t in module._state().values():
            _dist.broadcast(t.memory, 0, group=process_group)
        for p in module.parameters():
            amp.refresh_low_copies(p)
        cap = (BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * 2**20
        self._buckets, current, size = [], [], 0
        for p in reversed(params):  # a backward reaches the last layers first
            if current and (size + p.memory.numel() * p.memory.element_size() > cap or p.dtype != current[0].dtype):
                self._buckets.append(_Bucket(current, device, current[0].dtype))
                current, size = [], 0
            current.append(p)
            size += p.memory.numel() * p.memory.element_size()
        self._buckets.append(_Bucket(current, device, current[0].dtype))
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._handles = [p.register_post_accumulate_grad_hook(self._ready) for p in params]
        self._queued = False
        self.require_backward_grad_sync = True  # torch's name; no_sync clears it
        self._sync = True  # the last forward's choice, which its backward follows

    @contextlib.contextmanager
    def no_sync(self):
        """torch's: the backwards of forwards run within the block leave each rank's own gradients
        accumulated in .grad, unreduced; the first backward of a forward after it averages the sums
        (gradient accumulation with one reduction per optimizer step)."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def forward(self, *args, **kwargs):
        self._sync = self.require_backward_grad_sync
        if is_grad_enabled() and self._sync and not self._queued:
            queue_callback(self._finish)  # a backward of this forward averages at its end
            self._queued = True
        return self.module(*args, **kwargs)

    def _ready(self, p):
        if not self._sync:  # within no_sync: the gradient stays this rank's, accumulated
            return
        bucket = self._bucket_of[id(p)]
        if bucket.work is not None:  # accumulated again after its bucket went: reduce again at the end
            bucket.late = True
            return
        bucket.ready.add(id(p))
        if len(bucket.ready) == len(bucket.params):
            self._launch(bucket)

    def _launch(self, bucket):
        """Copy the bucket's gradients (zeros for a parameter without one) into its buffer, scale
        it by 1 / world_size and start its all_reduce."""
        for p, part in bucket.parts:
            if p.grad is None:
                part.zero_()
            else:
                copy_(part, _flat(p.grad.memory))
        scale_(bucket.buffer, self._scale)
        bucket.work = _dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)

    def _finish(self):
        """At a backward's end: the buckets not yet reduced (some gradient missing) and those
        with a late one go now; wait for all, then copy the averages into the .grad tensors."""
        self._queued = False
        for bucket in self._buckets:
            if bucket.work is None or bucket.late:
                if bucket.work is not None:
                    bucket.work.wait()
                self._launch(bucket)
        for bucket in self._buckets:
            bucket.work.wait()
            for p, part in bucket.parts:
                if p.grad is None:  # no rank's backward reached it here: the others' average
                    p.grad = Tensor(empty_in_layout(p.memory))
                copy_(_flat(p.grad.memory), part)
            bucket.reset()
