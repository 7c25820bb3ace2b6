"""torch.nn.utils's gradient clipping (get_total_norm, clip_grads_with_norm_, clip_grad_norm_ and
clip_grad_value_, built of tnet's ops under no_grad), weight reparametrizations by forward
pre-hooks (weight_norm, spectral_norm), parameters_to_vector / vector_to_parameters and
tnet.nn.utils.rnn (pad_sequence and packed sequences: PackedSequence, pack_padded_sequence,
pad_packed_sequence, pack_sequence, unpack_sequence, unpad_sequence), with torch's arguments.

The norm stays on the device and the gradients are scaled by min(1, max_norm / (norm + 1e-6))
read there, so clipping does not synchronise with the host (error_if_nonfinite=True reads the norm,
as torch's). foreach is accepted and ignored: clip_grad_norm_ of order 2 over dense float32 gradients takes a
few multi-tensor launches in all (FUSED_CLIP), other orders and dtypes a kernel or three per gradient."""
import inspect
import math
import sys
import types
import warnings
from collections import namedtuple

import numpy as np
import torch

from ... import functional as F
from ..._device import DEVICE
from ...factory import arange, full, randn, zeros
from ...kernels import optim as _optim, pointwise as _pw
from ...kernels.copy import copy_
from ...kernels.launch import check, is_flat
from ...tensor import Tensor, bump_version, no_grad, tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "remove_spectral_norm", "remove_weight_norm", "spectral_norm", "vector_to_parameters", "weight_norm"]


# clip_grad_norm_'s multi-tensor kernels (kernels/optim.py's clip_grad_norm2_): a few launches in all, where a
# kernel or three per gradient cost the host many times PyTorch's foreach (docs/results.md)
FUSED_CLIP = True


def _tensors(tensors):
    """A tensor, or an iterable of them, as a list."""
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _norm(x, ord):
    """torch.linalg.vector_norm of x over all its elements, as a 0-d tensor: (sum |x|^ord)^(1/ord),
    the largest |x| for inf, the smallest for -inf, the count of nonzeros for 0."""
    if ord == math.inf:
        return F.amax(F.abs(x))
    if ord == -math.inf:
        return F.amin(F.abs(x))
    if ord == 0:
        return F.sum(F.ne(x, 0)).float()
    if ord == 2:  # the common case in two kernels: squares summed in fp32, one root
        return F.sqrt(F.sum(F.mul(x, x)))
    if ord == 1:
        return F.sum(F.abs(x))
    return F.pow(F.sum(F.pow(F.abs(x), ord)), 1.0 / ord)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of norm_type of the tensors' norms, as if all their elements made one vector
    (torch's); a 0-d tensor, 0.0 for no tensors. norm_type may be 'inf'. error_if_nonfinite:
    RuntimeError where the norm is NaN or infinite (a host read)."""
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return zeros(())
    with no_grad():
        norms = [_norm(t, norm_type) for t in tensors]
        total = _norm(F.stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           f"cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           f"anyway, set `error_if_nonfinite=False`")
    return total


def _rewrite_(g, values):
    """g's memory takes values (a torch tensor of g's shape), for the in-place writes torch makes
    on .grad: a captured step or an optimizer holding the gradient keeps its address."""
    copy_(g.memory, values)
    bump_version(g)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the parameters' gradients, in place, by min(max_norm / (total_norm + 1e-6), 1), a
    factor computed and read on the device (no host synchronisation)."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        scale = F.clamp(F.div(float(max_norm), F.add(total_norm, 1e-6)), max=1.0).memory.reshape(1)
        for g in grads:
            if is_flat(g.memory):
                _pw.scale_(g.memory, scale)
                bump_version(g)
            else:  # a gradient set by hand as a strided view
                _rewrite_(g, _pw.pointwise("mul", g.memory, scale))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the parameters' gradients in place so that their total norm (get_total_norm) is at
    most max_norm, as torch's: by min(max_norm / (norm + 1e-6), 1), on the device. Returns the
    total norm before clipping, a 0-d tensor (0.0 where no parameter has a gradient)."""
    if isinstance(parameters, types.GeneratorType):
        parameters = list(parameters)
        if not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    parameters = _tensors(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    # the fused kernels scale before the host could read the norm: error_if_nonfinite's check takes the other path
    if FUSED_CLIP and grads and float(norm_type) == 2.0 and not error_if_nonfinite and all(
            g.dtype == torch.float32 and is_flat(g.memory) for g in grads):
        total = Tensor(_optim.clip_grad_norm2_([g.memory for g in grads], max_norm))
        for g in grads:
            bump_version(g)
        return total
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The old name of clip_grad_norm_ (pre-0.4 scripts), deprecated with torch's FutureWarning."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the parameters' gradients, in place, to [-clip_value, clip_value], as torch's."""
    clip_value = float(clip_value)
    for p in _tensors(parameters):
        if p.grad is not None:
            _rewrite_(p.grad, _pw.pointwise("clamp", p.grad.memory, -clip_value, clip_value))


# ---- weight reparametrizations: weight_norm and spectral_norm (torch's hook API) ----


def _own_hook(module, kind, name):
    """(key, hook) of module's forward pre-hook of class `kind` for parameter `name`, or None."""
    hooks = module.__dict__.get("_forward_pre_hooks", {})
    return next(((k, h) for k, h in hooks.items() if isinstance(h, kind) and h.name == name), None)


def _remove_hook(module, kind, name, what):
    """Take module's reparametrization `what` (its pre-hook of class kind) of `name` away, as torch's."""
    found = _own_hook(module, kind, name)
    if found is None:
        raise ValueError(f"{what} of '{name}' not found in {module}")
    found[1].remove(module)
    del module._forward_pre_hooks[found[0]]
    return module


def norm_except_dim(v, pow=2, dim=0):
    """torch.norm_except_dim: the pow-norm of v over every dim but dim, keeping v's number of dims
    (dim -1: over all of v, a 0-d tensor, as torch's)."""
    if dim == -1:
        return F.norm(v, pow)
    dim = dim % v.ndim
    return F.norm(v, pow, tuple(d for d in range(v.ndim) if d != dim), keepdim=True)


def weight_from_norm(g, v, dim):
    """g * v / ||v|| (norm_except_dim(v, 2, dim)): weight_norm's weight from its magnitude g and direction v,
    as torch._weight_norm(v, g, dim)."""
    return F.mul(v, F.div(g, norm_except_dim(v, 2, dim)))


class WeightNorm:
    """The forward pre-hook of weight_norm: module.<name> = g * v / ||v|| (norm_except_dim) from its
    parameters <name>_g and <name>_v, before each forward, as torch's."""

    def __init__(self, name, dim):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        return weight_from_norm(getattr(module, self.name + "_g"), getattr(module, self.name + "_v"), self.dim)

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))

    def remove(self, module):
        from .. import Parameter
        weight = self.compute_weight(module)
        for suffix in ("", "_g", "_v"):
            delattr(module, self.name + suffix)
        setattr(module, self.name, Parameter(weight.data))


def weight_norm(module, name="weight", dim=0):
    """torch.nn.utils.weight_norm (the hook API): parameter `name` becomes parameters name_g (its
    norm over every dim but dim; dim=None or -1: over all of it) and name_v (its direction), and
    module.<name> is recomputed from them before each forward (a forward pre-hook). Returns module."""
    from .. import Parameter
    if _own_hook(module, WeightNorm, name):
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    delattr(module, name)
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
    module.register_parameter(name + "_v", Parameter(weight.data))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: `name` a parameter again, holding the current g * v / ||v||."""
    return _remove_hook(module, WeightNorm, name, "weight_norm")


def weight_to_matrix(weight, dim):
    """weight as spectral_norm's matrix: dim first, the other dims flattened, as torch's."""
    if dim != 0:
        weight = F.permute(weight, (dim, *[d for d in range(weight.ndim) if d != dim]))
    return F.reshape(weight, (weight.shape[0], -1))


def power_iteration_(matrix, u, v, n_power_iterations, eps, u_first=False):
    """n_power_iterations steps of the power method on matrix, writing the unit vectors u and v in
    place without gradient: v = normalize(W^T u), then u = normalize(W v) (the hook API's order), or
    u first (u_first: the parametrization's order), as torch's. Returns copies of u and v: the next
    forward's in-place update must not change what this backward reads."""
    with no_grad():
        for _ in range(n_power_iterations):
            if u_first:
                _rewrite_(u, F.normalize(F.mv(matrix, v), dim=0, eps=eps).memory)
            _rewrite_(v, F.normalize(F.mv(F.t(matrix), u), dim=0, eps=eps).memory)
            if not u_first:
                _rewrite_(u, F.normalize(F.mv(matrix, v), dim=0, eps=eps).memory)
    return F.clone(u), F.clone(v)


class SpectralNorm:
    """The forward pre-hook of spectral_norm: module.<name> = <name>_orig / sigma, sigma the largest
    singular value of <name>_orig as a matrix (dim first, the rest flattened) estimated as
    u . (W v); in training mode n_power_iterations of power iteration first update the buffers
    <name>_u and <name>_v in place, without gradient, as torch's."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def reshape_weight_to_matrix(self, weight):
        return weight_to_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            u, v = power_iteration_(matrix, u, v, self.n_power_iterations, self.eps)
        return F.div(weight, F.dot(u, F.mv(matrix, v)))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def remove(self, module):
        from .. import Parameter
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module._buffer_names.pop(self.name + "_u", None)
        module._buffer_names.pop(self.name + "_v", None)
        module.register_parameter(self.name, Parameter(weight.data))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """torch.nn.utils.spectral_norm (the hook API): parameter `name` becomes name_orig, with buffers
    name_u and name_v (random unit vectors from tnet's generator, not torch's), and module.<name> =
    name_orig / sigma before each forward (SpectralNorm). dim=None: 1 for ConvTranspose, else 0.
    Difference: the state_dict has no version metadata hook (torch's loads old checkpoints
    through one). Returns module."""
    from .. import ConvTranspose2d, Parameter
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose2d) else 0
    if _own_hook(module, SpectralNorm, name):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = getattr(module, name)
    with no_grad():
        h, w = fn.reshape_weight_to_matrix(weight).shape
        u = F.normalize(randn(h), dim=0, eps=eps)
        v = F.normalize(randn(w), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight if isinstance(weight, Parameter) else Parameter(weight))
    setattr(module, name, weight.data)
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: `name` a parameter again, holding name_orig / sigma (no power iteration)."""
    return _remove_hook(module, SpectralNorm, name, "spectral_norm")


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one vector (differentiable), as torch's."""
    return F.cat([F.reshape(p, (-1,)) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Each parameter's .data becomes its slice of vec, viewed in its shape (the parameters then
    share vec's memory), as torch's."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec.memory[pointer:pointer + n].view_as(param.memory).data
        pointer += n


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Tensors [L_i, *] stacked into [max L, B, *] (batch_first: [B, max L, *]), each padded with
    padding_value after (padding_side 'right') or before ('left') its elements, in the first one's dtype (torch's
    copies into a tensor made like the first: floats after an int64 one are truncated); differentiable."""
    if not isinstance(batch_first, bool):  # torch's parser
        raise TypeError(f"pad_sequence(): argument 'batch_first' (position 2) must be bool, not {type(batch_first).__name__}")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = _tensors(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        s = s if s.dtype == sequences[0].dtype else s.to(sequences[0].dtype)
        if tuple(s.shape[1:]) != trailing:  # torch copies each into its rows of the first's shape: broadcast
            s = s.expand(s.shape[0] if s.ndim else 1, *trailing)
        if s.shape[0] < longest:
            pad = full((longest - s.shape[0], *s.shape[1:]), padding_value, dtype=s.dtype)
            s = F.cat([s, pad] if padding_side == "right" else [pad, s])
        padded.append(s)
    return F.stack(padded, 0 if batch_first else 1)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """torch's PackedSequence: data [sum of the lengths, *], the sequences' steps time-major (at
    step t the batch_sizes[t] sequences still running, longest first); batch_sizes int64 [longest];
    sorted_indices, the batch's order by decreasing length, and unsorted_indices, its inverse (None
    where the batch came sorted). All four are tnet tensors: batch_sizes is on tnet's device, where
    torch keeps it on the CPU, and tnet's functions keep a host copy beside it (reading it back is a
    sync only for a PackedSequence built by hand)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:  # torch's legacy PackedSequence((data, batch_sizes))
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        host = None
        if not isinstance(batch_sizes, Tensor):
            host = _host_ints(batch_sizes, "batch_sizes")
            batch_sizes = tensor(host)
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        self = super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        self._sizes = host
        return self

    def to(self, *args, **kwargs):
        """data.to(...) (tnet has one device: a dtype), the rest kept; self where data stays."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else packed_like(self, data)

    def double(self):
        return self.to(dtype=torch.float64)

    def float(self):
        return self.to(dtype=torch.float32)

    def half(self):
        return self.to(dtype=torch.float16)

    def long(self):
        return self.to(dtype=torch.int64)

    def int(self):
        return self.to(dtype=torch.int32)

    def cpu(self):
        return self

    cuda = pin_memory = cpu

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"


def packed_like(sequence, data):
    """A PackedSequence of data with sequence's batch sizes, orders and host copy."""
    out = PackedSequence(data, sequence.batch_sizes, sequence.sorted_indices, sequence.unsorted_indices)
    out._sizes = getattr(sequence, "_sizes", None)
    return out


def batch_sizes_of(sequence):
    """sequence's batch sizes as a numpy int64 vector (its host copy; a device read, kept, if none)."""
    if getattr(sequence, "_sizes", None) is None:  # None too where namedtuple's _make or _replace built it
        sequence._sizes = sequence.batch_sizes.numpy().astype(np.int64)
    return sequence._sizes


def _host_ints(values, name):
    """values (a list, numpy array, torch or tnet tensor) as a numpy int64 vector on the host."""
    if isinstance(values, (Tensor, torch.Tensor)):
        values = values.numpy() if isinstance(values, Tensor) else values.detach().cpu().numpy()
    values = np.asarray(values)
    check(values.ndim == 1, lambda: f"'{name}' argument should be a 1D CPU int64 tensor, but got {values.ndim}D")
    return values.astype(np.int64)


def invert_permutation(permutation):
    """The inverse of an int64 permutation vector (None for None), on the device: a scatter."""
    if permutation is None:
        return None
    n = permutation.shape[0]
    return F.scatter(zeros(n, dtype=torch.int64), 0, permutation, arange(n))


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """input [T, B, *] ([B, T, *] if batch_first) holding B sequences of the given lengths (host
    data: a list, numpy array or tensor; a tnet tensor is read back) as a PackedSequence; lengths
    must decrease unless enforce_sorted=False, which sorts the batch (stably) and records the order.
    One gather of input's rows (differentiable). Lengths beyond T raise RuntimeError (torch reads
    past the input)."""
    check(input.numel() > 0, "Cannot pack empty tensors.")
    T, B = input.shape[:2] if not batch_first else input.shape[1::-1]
    lengths = _host_ints(lengths, "lengths")
    check(len(lengths) == B, lambda: f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                                     f"(batch_size={B})")
    order, lengths, sizes = _sorted(lengths, enforce_sorted)
    check(lengths[0] <= T, lambda: f"pack_padded_sequence: a length of {lengths[0]} is longer than the input ({T} steps)")
    step, rank = _steps(sizes)
    batch = rank if order is None else order[rank]
    rows = batch * T + step if batch_first else step * B + batch
    data = F.index_select(F.flatten(input, 0, 1), 0, tensor(rows))
    return _packed(data, sizes, order)


def _sorted(lengths, enforce_sorted):
    """(the order that sorts lengths longest first, None where enforce_sorted; the sorted lengths;
    the batch size at each step), with torch's errors for a length <= 0 or unsorted lengths."""
    order = None if enforce_sorted else np.argsort(-lengths, kind="stable")
    lengths = lengths if order is None else lengths[order]
    check(lengths[-1] > 0, "Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    check(np.all(lengths[:-1] >= lengths[1:]),
          "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
          "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you "
          "do not need ONNX exportability.")
    return order, lengths, (lengths[None, :] > np.arange(lengths[0])[:, None]).sum(1)


def _steps(sizes):
    """(the time step, the rank in the sorted batch) of each row of packed data with these batch sizes."""
    step = np.repeat(np.arange(len(sizes)), sizes)
    return step, np.arange(len(step)) - np.repeat(np.cumsum(sizes) - sizes, sizes)


def _packed(data, sizes, order):
    """A PackedSequence of data with host batch sizes and host order (None: sorted)."""
    index = None if order is None else tensor(order)
    inverse = None if order is None else tensor(np.argsort(order))
    return PackedSequence(data, sizes, index, inverse)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded [T, B, *] ([B, T, *] if batch_first) in the
    batch's original order, filled with padding_value past each length, T the longest length or
    total_length; the lengths, an int64 tnet tensor on the device where torch's is on the CPU).
    One gather (and one more to unsort), differentiable."""
    sizes = batch_sizes_of(sequence)
    T = len(sizes)
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {T}")
        T = total_length
    data, B = sequence.data, int(sizes[0])
    n = data.shape[0]
    steps = np.zeros(T, np.int64)
    steps[:len(sizes)] = sizes
    rank = np.arange(B)
    # row n is a row of padding_value after data
    rows = np.where(rank[None, :] < steps[:, None], (np.cumsum(steps) - steps)[:, None] + rank[None, :], n)
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype)
    padded = F.index_select(F.cat([data, pad]), 0, tensor((rows.T if batch_first else rows).ravel()))
    padded = F.reshape(padded, ((B, T) if batch_first else (T, B)) + tuple(data.shape[1:]))
    lengths = tensor((sizes[:, None] > rank[None, :]).sum(0))
    if sequence.unsorted_indices is not None:
        padded = F.index_select(padded, 0 if batch_first else 1, sequence.unsorted_indices)
        lengths = F.index_select(lengths, 0, sequence.unsorted_indices)
    return padded, lengths


def pack_sequence(sequences, enforce_sorted=True):
    """Tensors [L_i, *] as a PackedSequence (decreasing lengths unless enforce_sorted=False): one
    cat and one gather, differentiable."""
    sequences = _tensors(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    lengths = np.array([s.shape[0] for s in sequences], np.int64)
    order, _, sizes = _sorted(lengths, enforce_sorted)
    step, rank = _steps(sizes)
    batch = rank if order is None else order[rank]
    rows = (np.cumsum(lengths) - lengths)[batch] + step  # the rows of the sequences joined
    return _packed(F.index_select(F.cat(sequences), 0, tensor(rows)), sizes, order)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences [L_i, *] in padded_sequences ([T, B, *], [B, T, *] if batch_first),
    each cut to its length (lengths: host data, or a tensor read back): views."""
    lengths = _host_ints(lengths, "lengths")
    return [F.narrow(F.select(padded_sequences, 0 if batch_first else 1, i), 0, 0, int(n))
            for i, n in enumerate(lengths)]


def unpack_sequence(packed_sequences):
    """The list of the sequences in a PackedSequence, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


# tnet.nn.utils.rnn, a module of its own in sys.modules, so that `from tnet.nn.utils.rnn import pad_sequence` imports
rnn = types.ModuleType(__name__ + ".rnn", "torch.nn.utils.rnn: padded and packed sequences.")
for _name in ("PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence",
              "pad_sequence", "unpack_sequence", "unpad_sequence"):
    setattr(rnn, _name, globals()[_name])
sys.modules[rnn.__name__] = rnn

# torch.nn.utils.fusion's folds of a BatchNorm into the layer before it (tnet/nn/utils/fusion.py), under torch's names here too
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: E402
__all__ += ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def skip_init(module_cls, *args, **kwargs):
    """torch's module_cls(*args, **kwargs) without its parameters' init (torch builds it on the meta device,
    then to_empty): tnet has no meta tensors, so the module is built as usual, its init drawn (from tnet's
    init stream) and its values to be taken as uninitialised. RuntimeError for a class that is no Module or
    takes no device argument, as torch's."""
    from .. import Module
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    device = kwargs.pop("device", None)
    return module_cls(*args, **kwargs).to_empty(device=DEVICE if device is None else device)


def convert_conv2d_weight_memory_format(module, memory_format):
    """torch's: the convolutions' weights of module in memory_format, for faster kernels. tnet picks its
    convolutions' layouts itself (channels-last), so this returns module as it is (memory_format checked)."""
    if not isinstance(memory_format, torch.memory_format):
        raise TypeError(f"memory_format must be a torch.memory_format, got {type(memory_format).__name__}")
    return module


convert_conv3d_weight_memory_format = convert_conv2d_weight_memory_format
__all__ += ["skip_init", "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

# torch.nn.utils' submodules, for their import paths (`from torch.nn.utils.clip_grad import clip_grad_norm_`)
for _name, _names in (("clip_grad", ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
                                     "get_total_norm"]),
                      ("convert_parameters", ["parameters_to_vector", "vector_to_parameters"]),
                      ("init", ["skip_init"]),
                      ("memory_format", ["convert_conv2d_weight_memory_format",
                                         "convert_conv3d_weight_memory_format"])):
    _module = types.ModuleType(f"{__name__}.{_name}", f"torch.nn.utils.{_name}'s {', '.join(_names)}")
    for _n in _names:
        setattr(_module, _n, globals()[_n])
    sys.modules[_module.__name__] = _module
    globals()[_name] = _module

# torch.nn.utils.weight_norm and .spectral_norm are modules too (`from torch.nn.utils.spectral_norm import
# spectral_norm`), while the package's attributes of those names stay the functions, as torch's: SHOT's
# `import torch.nn.utils.weight_norm as weightNorm` binds the function
for _name, _names in (("weight_norm", ["WeightNorm", "weight_norm", "remove_weight_norm"]),
                      ("spectral_norm", ["SpectralNorm", "spectral_norm", "remove_spectral_norm"])):
    _module = types.ModuleType(f"{__name__}.{_name}", f"torch.nn.utils.{_name}'s {', '.join(_names)}")
    for _n in _names:
        setattr(_module, _n, globals()[_n])
    sys.modules[_module.__name__] = _module
