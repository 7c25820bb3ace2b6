"""Shapes, views, casts and indexing, as torch's (kernels/copy.py copies). Views share the
input's memory; where torch copies (cat, stack, clone, flip, repeat, index_select, a reshape
that cannot view), tnet copies through its copy kernel. Each backward hands back its gradient
in the input's layout.

A channels-last activation (a convolution's output: NCHW shape, NHWC memory) behaves as torch's
NCHW tensor: view, reshape and flatten give torch's values in torch's order, and where no view
of the NHWC memory can, view copies to NCHW first (view may copy a channels-last activation)."""
import builtins
import os
import sys
import functools
import itertools
import math
import operator
import numbers
import warnings

import numpy as np
import torch

from .._device import DEVICE
from ..kernels import copy as _copy
from ..kernels import pointwise as _pw
from ..kernels import reduce as _reduce
from ..kernels.copy import copy_
from ..kernels.launch import DTYPE_NAMES, InputError, InputIndexError, check, check_type, is_channels_last, memory_format
from ..kernels.launch import as_value_of, at_least, check_batch_only_empty, no_host_read, pair
from ..tensor import (Piece, Tensor, as_dtype, as_int, bump_version, check_device, check_dtype, dim_index, empty_in_layout, in_layout,
                      is_grad_enabled, linear_graph, named, no_grad, rebase, record, tape_mark, tensor)
from .inputs import ABSENT, check_args, check_tensors, numpy_names
from .pad import pad
from .pointwise import add, ge, graph_sum_to, logical_or, lt, mul, ne, sum_to, where


def _part(name, x, make):
    """make(x.memory), a view of part of x's elements (a slice, narrow, select, a split piece). The
    backward writes g through the same view of a zeroed gradient (_placed on the tape, under
    create_graph)."""
    return record(name, make(x.memory), (x,), lambda g: (Piece(g, make, x.memory),),
                  graph=lambda g, y: (_placed(name, g, x, make),), saves_nothing=True)


def _placed(name, g, x, make):
    """_part's gradient on the tape: g (a tnet Tensor) written through make's view of zeros shaped
    like x; its own gradient is make's view again."""
    gx = empty_in_layout(x.memory).zero_()
    copy_(make(gx), g.memory)
    return record(name + "_backward", gx, (g,), lambda h: (make(h),), graph=lambda h, y: (_part(name, h, make),),
                  saves_nothing=True)


def _rearranged(name, x, y, inverse):
    """y, a view of all of x's elements in another shape or order (permute, transpose, squeeze...);
    the backward is inverse(g), in x's layout; inverse is a method call that a tnet Tensor takes
    as well (the graph backward's)."""
    return record(name, y, (x,), lambda g: (in_layout(inverse(g), x.memory),), graph=lambda g, out: (inverse(g),),
                  saves_nothing=True)


def getitem(x, index):
    """x[index] as torch's: basic indexing (ints, slices with step > 0, None, Ellipsis) is a view of
    the same memory; with advanced indices (integer or bool tensors, lists, numpy arrays, ranges,
    bools) among them, a copy (Indexing.take)."""
    index = scalar_indices(sequence_as_tuple(index))
    plan = Indexing.of(x.memory, index)
    if plan is None:
        index = basic_index(index)
        return _part(_basic_view_op(x.shape, index), x, lambda t: t[index])
    return plan.take(x)


def _basic_view_op(shape, index):
    """The view op that torch's basic indexing of `shape` by `index` (basic_index's tuple) applies last, whose node
    its grad_fn shows: the items in order, an int a select, None an unsqueeze, a slice a slice unless it keeps its
    whole dim (start 0, step 1, to the end or past it); "alias" where none applies (x[:], x[...])."""
    op, d = "alias", 0
    for item in index:
        if item is Ellipsis:
            d += len(shape) - builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
        elif item is None:
            op = "unsqueeze"
        else:
            whole = isinstance(item, slice) and item.indices(shape[d]) == (0, shape[d], 1)
            op, d = op if whole else "slice" if isinstance(item, slice) else "select", d + 1
    return op


def is_advanced(item):
    return isinstance(item, (Tensor, list, np.ndarray, range, bool, np.bool_))


_SEQUENCE_INDEX = ("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
                   "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
                   "tensor index, x[torch.tensor(seq)], which will result either in an error or a different result")


def sequence_as_tuple(index):
    """A list index as torch still reads it (NumPy's old rule, deprecated with its warning): fewer than 32
    items of which one is a tensor, a sequence, a slice, Ellipsis or None are a tuple of indices, so that
    old scripts' x[[rows, cols]] is x[rows, cols]; any other index as it is."""
    if not isinstance(index, list) or len(index) >= 32:
        return index
    if any(isinstance(item, (Tensor, torch.Tensor, list, tuple, range, np.ndarray, str, slice)) or item is None or
           item is Ellipsis for item in index):
        _warn_at_caller(_SEQUENCE_INDEX)
        return tuple(index)
    return index


def scalar_indices(index):
    """index with its 0-d integer tensors read to ints where it is a tuple of several items
    (cm[t, p] += 1 in a confusion-matrix loop): a host read each, and a view, as torch's select.
    Alone (x[t]) such a tensor stays an advanced index: a copy, where torch's is a view."""
    if not isinstance(index, tuple) or len(index) < 2:
        return index
    scalar = lambda item: isinstance(item, Tensor) and item.ndim == 0 and not item.is_floating_point()
    return tuple(item.__index__() if scalar(item) and item.dtype != torch.bool else item for item in index)


_BAD_INDEX_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"


_BYTE_MASK = "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _warn_at_caller(message):
    """warnings.warn naming the first line outside tnet: the user's indexing, as torch's warning names it."""
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _index_item(item):
    """One item of an index as Indexing takes it: a tnet.Tensor stays (a 0-d bool one is read as a
    bool); lists, ranges and numpy arrays become numpy int64 or bool arrays (a float list
    truncated, as torch's; a 0-d array an int or a bool). A uint8 tensor or array is a mask, as
    torch's deprecated byte masks (`x[mask.byte()]`), with torch's warning."""
    if item.dtype == torch.uint8 if isinstance(item, Tensor) else isinstance(item, np.ndarray) and item.dtype == np.uint8:
        _warn_at_caller(_BYTE_MASK)
        item = ne(item, 0) if isinstance(item, Tensor) else item != 0
    if isinstance(item, Tensor):
        if item.ndim == 0 and item.dtype == torch.bool:
            no_host_read(item.memory, "x[bool tensor]")
            return bool(item.memory.item())
        if item.dtype != torch.bool and item.dtype not in _copy.INDEX_DTYPES:
            raise IndexError(_BAD_INDEX_DTYPE)
        return item
    if isinstance(item, np.bool_):
        return bool(item)
    if not isinstance(item, (list, range, np.ndarray)):
        return item
    a = np.asarray(item)
    if isinstance(item, list) and a.dtype.kind == "f":  # [] too
        a = a.astype(np.int64)
    if a.dtype.kind not in "biu":
        raise IndexError(_BAD_INDEX_DTYPE)
    if a.ndim == 0:
        return bool(a) if a.dtype == np.bool_ else int(a)
    return a if a.dtype == np.bool_ else a.astype(np.int64, copy=False)


def _is_mask(item):
    return (item.dtype == torch.bool if isinstance(item, Tensor) else
            isinstance(item, np.ndarray) and item.dtype == np.bool_)


def _out_of_bounds(k, p, size):
    return f"index {k} is out of bounds for dimension {p} with size {size}"


class Indexing:
    """torch's advanced indexing of a tensor, reduced to one gather along one dim. Basic items
    first, as a view V (an advanced item keeps its dims, a bool adds one of size 1, as torch's);
    the advanced indices, their bool masks as the masks' nonzero coordinates (a host read, as
    torch's), broadcast together to shape B, index dims `dims` of V. Adjacent, B replaces them in
    place; else B goes first and V's other dims follow (torch's rule: ints are basic selects and
    do not separate). Negative indices count from the end; one out of range raises torch's
    IndexError (host-side indices checked on the host, device ones by the gather's device flag).
    The dims `dims` taken as one (`axis` of the block view, size prod(sizes)), the indices become
    one flat index into it."""

    @staticmethod
    def of(memory, index):
        """The plan of memory[index], or None for basic indexing."""
        items = index if isinstance(index, tuple) else (index,)
        return Indexing(memory, items) if any(is_advanced(item) for item in items) else None

    def __init__(self, memory, items):
        items = [_index_item(item) for item in items]
        ndim = memory.dim()
        width = [0 if item is None or item is Ellipsis or isinstance(item, bool) else
                 item.ndim if _is_mask(item) else 1 for item in items]  # the input dims each item takes
        if sum(width) > ndim:
            raise IndexError(f"too many indices for tensor of dimension {ndim}")
        basic, advanced, at = [], [], 0  # advanced: (dim of V, item)
        for item, w in zip(items, width):
            if isinstance(item, (Tensor, np.ndarray)):  # keeps its dims in V
                advanced.append((at, item))
                basic += [slice(None)] * w
                at += w
            elif isinstance(item, bool):  # a new dim of size 1, indexed by [0] (True) or [] (False)
                advanced.append((at, np.zeros(int(item), np.int64)))
                basic.append(None)
                at += 1
            else:  # each Ellipsis skips the dims that no item takes (several do, as torch's)
                basic.append(item)
                at += ndim - sum(width) if item is Ellipsis else not isinstance(item, numbers.Integral)
        self.basic = basic_index(tuple(basic))
        self.whole = all(item is Ellipsis or item == slice(None) for item in self.basic)  # V is the tensor itself
        self.view_shape = tuple(memory.shape if self.whole else memory[self.basic].shape)
        for at, item in advanced:
            if _is_mask(item):
                where = self.view_shape[at:at + item.ndim]
                for j, (m, n) in enumerate(zip(item.shape, where)):
                    if m != n:
                        raise IndexError(f"The shape of the mask {list(item.shape)} at index {j} does not match the "
                                         f"shape of the indexed tensor {list(self.view_shape)} at index {at + j}")
        self.advanced = advanced
        self.resolved = False

    def sole_mask(self):
        """(dim, mask) where the index is one bool mask among full slices, else None."""
        if self.whole and len(self.advanced) == 1 and _is_mask(self.advanced[0][1]):
            return self.advanced[0]
        return None

    def resolve(self):
        """The indices per indexed dim (host ones checked and wrapped), their broadcast shape B, the
        permutation of V that brings the dims together (None where adjacent), the result's shape."""
        if self.resolved:
            return
        dims, parts = [], []
        for at, item in self.advanced:
            if _is_mask(item):
                if isinstance(item, Tensor):
                    no_host_read(item.memory, "x[mask]")
                    item = item.memory.cpu().numpy()
                dims += range(at, at + item.ndim)
                parts += [c.astype(np.int64) for c in np.nonzero(item)]
            else:
                dims.append(at)
                parts.append(item)
        self.sizes = [self.view_shape[d] for d in dims]
        for p, (part, size) in enumerate(zip(parts, self.sizes)):
            if isinstance(part, np.ndarray):
                outside = (part < -size) | (part >= size)
                if outside.any():
                    raise IndexError(_out_of_bounds(part[outside][0], p, size))
                parts[p] = np.where(part < 0, part + size, part)
            elif size == 0 and part.numel():  # torch's host check, before any other: no index fits an empty dim
                raise IndexError("index is out of bounds for dimension with size 0")
        shapes = [tuple(part.shape) for part in parts]
        try:
            self.broadcast = tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes "
                             f"{', '.join(str(list(s)) for s in shapes)}") from None
        self.dims, self.parts = dims, parts
        rest = [d for d in range(len(self.view_shape)) if d not in dims]
        pre = [d for d in rest if d < dims[0]]
        if dims == list(range(dims[0], dims[0] + len(dims))):
            self.order = None
        else:
            self.order, pre = dims + rest, []
        self.axis = len(pre)
        self.pre = tuple(self.view_shape[d] for d in pre)
        self.post = tuple(self.view_shape[d] for d in rest[len(pre):])
        self.shape = self.pre + self.broadcast + self.post
        self.resolved = True

    def flat(self, strides, device):
        """(index, wrap, report): the int vector into the block of the indexed dims, each index
        times its dim's stride in `strides`, summed (broadcast); wrap and report, for the gather
        or put along the block, where one device index is taken as it is (its kernel wraps and
        checks it). Several device indices are checked and wrapped by gathers from tables of
        size * stride."""
        parts = self.parts
        if len(parts) == 1:
            part = parts[0]
            if isinstance(part, np.ndarray):
                return tensor(part.reshape(-1)).memory, False, None
            size = self.sizes[0]
            return part.memory.reshape(-1), True, lambda k: _out_of_bounds(k, 0, size)
        host = builtins.sum((part * st for part, st in zip(parts, strides) if isinstance(part, np.ndarray)),
                            np.zeros((), np.int64))
        total = tensor(host).memory
        for p, (part, size, st) in enumerate(zip(parts, self.sizes, strides)):
            if isinstance(part, Tensor):
                table = tensor(np.arange(size, dtype=np.int64) * st).memory
                scaled = torch.empty(part.numel(), dtype=torch.int64, device=device)
                _copy.gather_(scaled, table, part.memory.reshape(-1), 0, lambda k, p=p, n=size: _out_of_bounds(k, p, n),
                              wrap=True)
                total = _pw.pointwise("add", total, scaled.view(part.shape))
        return total.expand(self.broadcast).reshape(-1), False, None

    def take(self, x):
        """x[index], a tnet.Tensor on the tape: basic view, permute, the block as one dim (a
        reshape, a copy where the memory cannot view it), a gather (index_select's), reshape."""
        self.resolve()
        v = x if self.whole else _part("getitem", x, lambda t: t[self.basic])
        if self.order:
            v = permute(v, self.order)
        if len(self.dims) > 1:
            v = reshape(v, (*self.pre, math.prod(self.sizes), *self.post))
        strides = [math.prod(self.sizes[k + 1:]) for k in range(len(self.sizes))]  # row-major in the block
        index, wrap, report = self.flat(strides, x.device)
        y = _take("index", v, self.axis, index, wrap, report)
        return y if y.shape == self.shape else reshape(y, self.shape)

    def block(self, t):
        """The torch view of t (a torch tensor) that `flat(self.memory_strides(t))` indexes along
        `axis`: V, permuted; the indexed dims, where several, as one of stride 1 through all the
        elements they span (an as_strided view, which may overlap itself: only the indexed
        elements are written)."""
        v = t if self.whole else t[self.basic]
        v = v if self.order is None else v.permute(self.order)
        if len(self.dims) == 1:
            return v
        n, k = self.axis, len(self.dims)
        span = 1 + builtins.sum((s - 1) * st for s, st in zip(self.sizes, v.stride()[n:n + k])) if all(self.sizes) else 0
        return v.as_strided((*self.pre, span, *self.post), (*v.stride()[:n], 1, *v.stride()[n + k:]), v.storage_offset())

    def memory_strides(self, t):
        """The strides of the indexed dims in t's memory (those `block` takes them at)."""
        v = t if self.whole else t[self.basic]
        return [v.stride(d) for d in self.dims]


def basic_index(index):
    """index as a tuple, checked to hold only what basic indexing takes."""
    def is_int(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)  # a bool index is advanced
    items = list(index if isinstance(index, tuple) else (index,))
    for i, item in enumerate(items):
        if item is None or item is Ellipsis or is_int(item):
            continue
        if not isinstance(item, slice):  # torch's kinds: TypeError for a string, IndexError for a float and the rest
            raise (TypeError if isinstance(item, str) else IndexError)(
                f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                f"(got {type(item).__name__}); tnet.Tensor indexing also takes bools, integer or bool tnet.Tensors, "
                f"lists, numpy arrays and ranges")
        if not all(v is None or is_int(v) for v in (item.start, item.stop, item.step)):
            try:  # a one-element integer tensor as a bound (t[index:index + l]): its value, a host read, as torch's
                item = items[i] = slice(*(v if v is None or is_int(v) else operator.index(v)
                                          for v in (item.start, item.stop, item.step)))
            except TypeError:
                raise TypeError(f"tnet.Tensor indexing: slice bounds must be ints, integer tensors of one element "
                                f"or None, got {item}") from None
        if item.step is not None and item.step <= 0:
            raise ValueError(f"tnet.Tensor indexing: step must be greater than zero, got {item}")
    return tuple(items)


def shape_args(shape):
    """view(2, 3) and view((2, 3)) alike."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)) else shape


def sizes_or_keyword(name, args, keyword, value):
    """A size given as x.reshape(2, 3), x.reshape((2, 3)) or by torch's keyword, x.reshape(shape=(2, 3)) (MAE's
    patchify): value is the keyword's (None when not given)."""
    if value is None:
        return shape_args(args)
    if args:
        raise TypeError(f"{name}() got multiple values for argument '{keyword}'")
    return (value,) if isinstance(value, numbers.Integral) else tuple(value)


def _nhwc_memory(x):
    """Whether x is 4-D, or 3-D, with its channels (dim 1) innermost in memory: a channels-last activation, conv1d's
    or conv_transpose1d's [N, C, L] output (NLC memory), or a slice of one, where torch's twin is row-major.
    Expanded channels (stride 0) are none: their view raises, as torch's."""
    return (x.dim() in (3, 4) and x.shape[1] > 1 and any(x.shape[d] > 1 for d in range(2, x.dim())) and
            all(0 < x.stride(1) < x.stride(d) for d in range(2, x.dim()) if x.shape[d] > 1))


def _nchw_copy(x):
    """x's elements copied into fresh NCHW-contiguous (row-major) memory."""
    return copy_(torch.empty(x.shape, dtype=x.dtype, device=x.device), x)


def _view_back(x):
    return lambda g: (in_layout(g.reshape(x.shape), x.memory),)


def _reshaped_back(g, y):
    """view's and reshape's graph backward: g in the input's shape (the first of y's entry's inputs)."""
    return (reshape(g, y._entry.inputs[0].shape),)


def view(x, *shape, size=None, dtype=None):
    """The same memory under another shape (torch's view rule: RuntimeError where the strides do
    not allow it; use reshape). A channels-last activation (or conv1d's NLC output) is viewed as torch's NCHW
    tensor: where its memory cannot be, it is copied to NCHW first (view may copy a channels-last activation).
    x.view(dtype): the same bytes read as another dtype (the last dim scaled by the sizes' ratio),
    off the tape, as torch's."""
    check_tensors("view", x=x)
    shape = (dtype,) if dtype is not None and not shape else shape
    if len(shape) == 1 and (isinstance(shape[0], torch.dtype) or as_dtype(shape[0]) is not shape[0]):
        dtype = check_dtype("view", shape[0])
        try:
            return Tensor(x.memory.detach().view(dtype))
        except RuntimeError:
            if not _nhwc_memory(x.memory):
                raise
            return Tensor(_nchw_copy(x.memory.detach()).view(dtype))
    shape = sizes_or_keyword("view", shape, "size", size)
    try:
        y = x.memory.view(shape)
    except RuntimeError:
        if not _nhwc_memory(x.memory):
            raise
        y = _nchw_copy(x.memory).view(shape)
    return record("view", y, (x,), _view_back(x), graph=_reshaped_back, saves_nothing=True)


def reshape(input, *sizes, shape=None):
    """A view when the memory allows, else a copy (torch's reshape), in torch's NCHW order for a
    channels-last activation."""
    check_tensors("reshape", input=input)
    x, shape = input, sizes_or_keyword("reshape", sizes, "shape", shape)
    try:
        y = x.memory.view(shape)
    except RuntimeError:
        try:
            y = _nchw_copy(x.memory).view(shape)
        except RuntimeError as e:
            raise InputError(f"reshape: cannot view {x.shape} as {shape}: {e}") from None
    return record("reshape", y, (x,), _view_back(x), graph=_reshaped_back, saves_nothing=True)


def unsafe_view(x, *shape):
    """torch's _unsafe_view: x, an op's fresh result that nothing else holds (a GEMM's rows), under
    another shape, counted as a tensor of its own, not a view of x: in-place ops with grad may write
    it, as they may write torch's linear and matmul outputs (`x += shortcut`, timm's x.mul_(gamma)). Its node is
    torch's UnsafeViewBackward0."""
    mark = tape_mark()
    y = named("unsafe_view", mark, reshape(x, *shape))
    y.memory = y.memory.detach()  # the same memory with no _base: memory_root sees no view
    y._base = None  # nor does Tensor._base, as torch's
    return y


def t(input):
    """The transpose of a tensor of at most 2 dims (a view)."""
    x = input
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return _rearranged("t", x, x.memory.t(), lambda g: g.t())


def flatten(input, start_dim=0, end_dim=-1):
    """Dims start_dim..end_dim as one: a view where the memory allows (torch's reshape rule)."""
    x = input
    check_tensors("flatten", input=x)
    check_args("flatten", "int", start_dim=start_dim, end_dim=end_dim)  # the parser's TypeError first, as torch's
    shape = x.shape or (1,)
    start, end = dim_index(start_dim, len(shape)), dim_index(end_dim, len(shape))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if x.ndim and start == end:  # nothing to join: input itself, as torch's (torch.flatten(x, 1) of [N, C] keeps its node)
        return x
    return reshape(x, *shape[:start], math.prod(shape[start:end + 1]), *shape[end + 1:])


def unflatten(input, dim, sizes):
    """Dim `dim` as `sizes` (one may be -1), by view's rule."""
    check_tensors("unflatten", input=input)
    d = dim_index(dim, input.ndim)
    sizes = tuple(sizes)
    check(len(sizes) > 0, "unflatten: sizes must be non-empty")
    known = math.prod(s for s in sizes if s != -1)
    inferred = [(input.shape[d] // known if known else 0) if s == -1 else s for s in sizes]
    check(math.prod(inferred) == input.shape[d] and sizes.count(-1) <= 1,
          lambda: f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({input.shape[d]}) "
                  f"in the input tensor")
    return view(input, *input.shape[:d], *inferred, *input.shape[d + 1:])


def permute(input, dims):
    """input's dims in the order `dims` (a view)."""
    check_tensors("permute", input=input)
    y = input.memory.permute(tuple(dims))
    back = np.argsort([dim_index(d, input.ndim) for d in dims]).tolist()
    return _rearranged("permute", input, y, lambda g: g.permute(back))


def movedim(input, source, destination):
    """input with dims `source` moved to positions `destination` (ints or sequences; a view)."""
    check_tensors("movedim", input=input)
    n = input.ndim
    src, dst = ([*map(as_int, v)] if isinstance(v, (tuple, list)) else [as_int(v)] for v in (source, destination))
    check_type(isinstance(source, (tuple, list)) == isinstance(destination, (tuple, list)) and all(isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in src + dst),  # before ranges
               lambda: f"movedim() received an invalid combination of arguments - got (Tensor, "
                       f"{type(source).__name__}, {type(destination).__name__}), but expected ints or tuples of ints")
    src, dst = [dim_index(d, n) for d in src], [dim_index(d, n) for d in dst]
    check(len(src) == len(dst),
          lambda: f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
                  f"the same number of dims as destination ({dst} dims)")
    check(len(set(src)) == len(src) and len(set(dst)) == len(dst), f"movedim: repeated dim in {src} or {dst}")
    order = [-1] * n
    for s, d in zip(src, dst[:n]):  # a 0-d input's dim 0 (or -1) is no position
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    return permute(input, [s if s >= 0 else next(rest) for s in order])


def transpose(input, dim0, dim1):
    """input with dims dim0 and dim1 swapped (a view)."""
    check_tensors("transpose", input=input)
    dim0, dim1 = as_int(dim0), as_int(dim1)
    y = input.memory.transpose(dim0, dim1)
    return _rearranged("transpose", input, y, lambda g: g.transpose(dim0, dim1))


def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    """swapaxes under torch's other name, with its keyword names dim0 and dim1."""
    return transpose(input, dim0, dim1)


@numpy_names
def squeeze(input, dim=ABSENT):
    """input without its dims of size 1 (dim: only those of dim, an int or a tuple; a view)."""
    check_tensors("squeeze", input=input)
    check_type(dim is not None, "squeeze(): argument 'dim' must be int or tuple of ints, not NoneType")  # as torch's
    y = input.memory.squeeze() if dim is ABSENT else input.memory.squeeze(dim)
    name = "squeeze" if dim is ABSENT else "squeeze_dims" if isinstance(dim, (tuple, list)) else "squeeze_dim"
    return _rearranged(name, input, y, lambda g: g.reshape(input.shape))


@numpy_names
def unsqueeze(input, dim):
    """input with a dim of size 1 inserted at dim (a view)."""
    check_tensors("unsqueeze", input=input)
    return _rearranged("unsqueeze", input, input.memory.unsqueeze(as_int(dim)), lambda g: g.reshape(input.shape))


def expand(input, *sizes, size=None):
    """input broadcast to `sizes` (-1 keeps a dim; new dims go first), a view with stride 0 on the
    expanded dims; the backward sums over them (kernels/reduce.py)."""
    check_tensors("expand", input=input)
    y = input.memory.expand(sizes_or_keyword("expand", sizes, "size", size))
    return record("expand", y, (input,), lambda g: (in_layout(sum_to(g, input), input.memory),),
                  graph=lambda g, out: (graph_sum_to(g, input),), saves_nothing=True)


def expand_as(input, other):
    return expand(input, other.shape)


def broadcast_to(input, size):
    return expand(input, size)


def _copy_record(name, inputs, y, backward, saved=(), graph=None, saves_nothing=False):
    """record() for y, a fresh copy of the elements of `inputs` (a tensor or a sequence): no
    gradient flows through an integer y (torch's rule)."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    return record(name, y, inputs, backward, saved, graph, saves_nothing) if y.is_floating_point() else Tensor(y)


def repeat(input, *sizes, repeats=None):
    """input tiled repeats[i] times along each dim (leading repeats add dims): a copy. The
    backward sums the tiles (kernels/reduce.py)."""
    check_tensors("repeat", input=input)
    check_type(sizes or repeats, 'repeat() missing 1 required positional arguments: "repeats"')
    repeats = tuple(sizes_or_keyword("repeat", sizes, "repeats", repeats))
    if len(repeats) < input.ndim:
        raise InputError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    shape = (1,) * (len(repeats) - input.ndim) + input.shape
    # a negative repeat of a dim of size 0 makes a size 0, as torch's (only a negative size raises)
    out = [r * s for r, s in zip(repeats, shape)]
    check(min(out, default=0) >= 0,
          lambda: f"Trying to create tensor with negative dimension {min(out)}: {out}")
    repeats = tuple(max(r, 0) for r in repeats)
    tiled = [v for r, s in zip(repeats, shape) for v in (r, s)]  # [r0, s0, r1, s1, ...]
    dims = [2 * i for i, r in enumerate(repeats) if r > 1]

    def tile(x):  # x (a torch tensor of input's shape) repeated: the forward, and its gradient's gradient
        src = x.reshape(shape)
        for i in range(len(shape)):
            src = src.unsqueeze(2 * i)
        out = torch.empty([r * s for r, s in zip(repeats, shape)], dtype=x.dtype, device=x.device)
        copy_(out.view(tiled), src.expand(tiled))
        return out

    def backward(g):
        if g.numel() == 0 or input.numel() == 0:
            return (empty_in_layout(input.memory).zero_(),)
        g = g.reshape(tiled)
        return (in_layout((_reduce.reduce(g, dims) if dims else g).reshape(input.shape), input.memory),)
    return _copy_record("repeat", input, tile(input.memory), backward, graph=linear_graph("repeat", backward, tile))


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (dim=None: of the flattened input) or each slice along dim repeated `repeats`
    times (an int, or one count per slice: a list or an integer tnet.Tensor, read on the host), as
    torch's. An int repeats is expand and reshape (a copy), else index_select; the backward sums
    the copies. torch.repeat_interleave(counts) alone, a 1-D integer tensor: each index i repeated
    counts[i] times, in counts' dtype (a graph batch's node-to-graph vector)."""
    check_tensors("repeat_interleave", input=input)
    if repeats is None:
        if input.dtype not in (torch.int32, torch.int64):
            raise NotImplementedError(f'"repeat_interleave" not implemented for {DTYPE_NAMES.get(input.dtype, input.dtype)}')
        check(input.ndim == 1, "repeat_interleave only accept 1D vector as repeat")
        no_host_read(input.memory, "repeat_interleave(repeats)")
        counts = input.memory.cpu().numpy()
        check(counts.min(initial=0) >= 0, "repeats can not be negative")
        return tensor(np.repeat(np.arange(len(counts)), counts), dtype=input.dtype)
    # torch's parser takes an int or a tensor (tnet a list or tuple too): another type is its TypeError
    check_type(isinstance(repeats, (numbers.Integral, Tensor, list, tuple)) and not isinstance(repeats, bool),
               lambda: f"repeat_interleave() received an invalid combination of arguments - got (Tensor, "
                       f"{type(repeats).__name__})")
    if dim is None:
        input, dim = reshape(input, -1), 0
    d = dim_index(dim, input.ndim)
    if isinstance(repeats, Tensor):
        no_host_read(repeats.memory, "repeat_interleave(repeats=tensor)")
        repeats = repeats.memory.tolist()
    if isinstance(repeats, numbers.Integral) or (isinstance(repeats, list) and len(repeats) == 1):
        r = int(repeats if isinstance(repeats, numbers.Integral) else repeats[0])
        check(r >= 0, "repeat_interleave: repeats can not be negative")
        shape = list(input.shape)
        out = expand(unsqueeze(input, d + 1), *shape[:d + 1], r, *shape[d + 1:])
        mark = tape_mark()  # torch's node: a view of the expanded copy (ViewBackward0)
        return named("view", mark, reshape(out if r != 1 else clone(out), (*shape[:d], shape[d] * r, *shape[d + 1:])))
    check(len(repeats) == input.shape[d] and builtins.min(repeats, default=0) >= 0,
          lambda: f"repeat_interleave: repeats must have the same size as input along dim ({input.shape[d]}) and be "
                  f"non-negative, got {repeats}")
    return index_select(input, d, tensor(np.repeat(np.arange(input.shape[d]), repeats)))


def roll(input, shifts, dims=None):
    """input's elements shifted along dims (dims=None: the flattened input's, then the shape
    restored), those that leave one end coming back at the other, as torch.roll: narrow and cat."""
    check_tensors("roll", input=input)
    shifts, dims = as_int(shifts), as_int(dims)
    shifts = [shifts] if isinstance(shifts, numbers.Integral) else [as_int(v) for v in shifts]
    if dims is None:
        check(len(shifts) == 1, lambda: f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: 0")
        mark = tape_mark()
        return named("roll", mark, reshape(roll(reshape(input, -1), shifts, 0), input.shape))
    given = dims
    dims = [dims] if isinstance(dims, numbers.Integral) else list(dims) if isinstance(dims, (tuple, list)) else [None]
    check_type(all(isinstance(v, numbers.Integral) for v in dims),
               lambda: f"roll(): argument 'dims' must be tuple of ints, not {type(given).__name__}")
    check(len(shifts) == len(dims),
          lambda: f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    if input.numel() == 0:  # torch's: a copy, before any dim is checked
        return clone(input)
    out, mark = input, tape_mark()
    for shift, dim in zip(shifts, dims):
        d = dim_index(dim, input.ndim)
        n = input.shape[d]
        k = shift % n if n else 0
        if k:
            out = cat([narrow(out, d, n - k, k), narrow(out, d, 0, n - k)], d)
    return named("roll", mark, clone(input) if out is input else out)  # a copy, as torch's


def narrow(input, dim, start, length):
    """input[..., start:start + length, ...] along dim (a view)."""
    check_tensors("narrow", input=input)
    return _part("narrow", input, lambda t: t.narrow(dim, start, length))


def select(input, dim, index):
    """input's slice `index` along dim, without that dim (a view)."""
    check_tensors("select", input=input)
    return _part("select", input, lambda t: t.select(dim, index))


def unbind(input, dim=0):
    """The slices of input along dim, each a view without that dim."""
    check_tensors("unbind", input=input)
    d = dim_index(dim, input.ndim)
    return tuple(_part("unbind", input, lambda t, i=i: t.select(d, i)) for i in range(input.shape[d]))


def _split_dim(name, input, dim):
    check_tensors(name, input=input)
    check_args(name, "int", dim=dim)  # the parser's TypeError (a None dim) first, as torch's
    if input.ndim == 0:
        raise InputError(f"{name} expects at least a 1-dimensional tensor")
    d = dim_index(dim, input.ndim)
    return d, input.shape[d]


def _pieces(name, input, d, sizes):
    """input's views of `sizes` elements along d, one after another; name: torch's op, which names their nodes."""
    starts = list(itertools.accumulate(sizes[:-1], initial=0))
    return tuple(_part(name, input, lambda t, s=s, n=n: t.narrow(d, s, n)) for s, n in zip(starts, sizes))


def split(tensor, split_size_or_sections, dim=0):
    """tensor in pieces along dim, each a view: of split_size_or_sections elements each (an int;
    the last may be smaller) or of the listed sizes."""
    check_args("split", "int", dim=dim)
    check_args("split", "tuple of ints", split_size_or_sections=split_size_or_sections)  # the parser's TypeError
    split_size_or_sections = as_int(split_size_or_sections)
    if isinstance(split_size_or_sections, numbers.Integral):  # a negative size before the dim's range, as torch's
        check(split_size_or_sections >= 0,
              lambda: f"split expects split_size be non-negative, but got split_size={split_size_or_sections}")
    d, size = _split_dim("split", tensor, dim)
    if isinstance(split_size_or_sections, numbers.Integral):
        step = int(split_size_or_sections)
        check(step > 0 or size == 0,
              lambda: f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        return _pieces("split", tensor, d, [min(step, size - s) for s in range(0, size, step)] if size else [0])
    sizes = [int(s) for s in split_size_or_sections]
    check(all(s >= 0 for s in sizes),
          lambda: f"split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={sizes}")
    check(sum(sizes) == size,
          lambda: f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                  f"size at dimension {d}), but got split_sizes={sizes}")
    return _pieces("split_with_sizes", tensor, d, sizes)


def tensor_split(input, indices_or_sections, dim=0):
    """input in views along dim, as torch.tensor_split: n sections (the first size % n one longer)
    or cut at the listed indices."""
    check_args("tensor_split", "tuple of ints", indices_or_sections=indices_or_sections)  # the parser's TypeError
    d, size = _split_dim("tensor_split", input, dim)
    if isinstance(indices_or_sections, numbers.Integral):
        n = int(indices_or_sections)
        check(n > 0, lambda: f"number of sections must be larger than 0, got {n}")
        return _pieces("slice", input, d, [size // n + (i < size % n) for i in range(n)])
    cuts = [builtins.min(builtins.max(i if i >= 0 else size + i, 0), size) for i in map(int, indices_or_sections)]
    bounds = [0, *cuts, size]
    return tuple(narrow(input, d, a, builtins.max(b - a, 0)) for a, b in zip(bounds, bounds[1:]))


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (prepend/append joined first), as torch.diff, whose checks come in
    its order; n = 0 gives a copy of input itself, prepend and append not joined (their shapes checked)."""
    check_args("diff", "int", n=n, dim=dim)  # types before values, as torch's parser
    check_args("diff", "Tensor", prepend=prepend, append=append)  # a number or a list: the parser's TypeError
    check(input.ndim > 0, "diff expects input to be at least one-dimensional")
    check(n >= 0, lambda: f"order must be non-negative but got {n}")
    for other in (prepend, append):
        if other is not None:
            d = dim_index(dim, input.ndim)
            check(other.ndim == input.ndim, "diff expects prepend or append to be the same dimension as input")
            for i in range(input.ndim):
                check(i == d or other.shape[i] == input.shape[i], lambda: "diff expects the shape of tensor to prepend or "
                      f"append to match that of input except along the differencing dimension; input.size({i}) = "
                      f"{input.shape[i]}, but got tensor.size({i}) = {other.shape[i]}")
    if n == 0:  # torch's: dim unchecked without prepend or append
        return clone(input)
    d = dim_index(dim, input.ndim)
    x = cat([v for v in (prepend, input, append) if v is not None], d) if prepend is not None or append is not None \
        else input
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        x = narrow(x, d, 1, length - 1) - narrow(x, d, 0, length - 1)
    return x


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by k quarter turns in the plane of dims (from the first towards the second
    axis), as torch.rot90: flips and a transpose (a copy)."""
    check_args("rot90", "int", k=k)
    check_args("rot90", "tuple of ints", dims=dims)
    check(len(dims) == 2 and dim_index(dims[0], input.ndim) != dim_index(dims[1], input.ndim),
          lambda: f"expected rotation dims to be 2 different dims, got {dims}")
    a, b = dims
    k %= 4
    if k == 1:
        return transpose(flip(input, (b,)), a, b)
    if k == 2:
        return flip(input, (a, b))
    if k == 3:
        return flip(transpose(input, a, b), (b,))
    return clone(input)


def chunk(input, chunks, dim=0):
    """input in `chunks` pieces along dim (views) of ceil(size / chunks) elements, the last smaller;
    fewer pieces where that covers the dim (torch's rule)."""
    check_args("chunk", "int", chunks=chunks, dim=dim)
    chunks = as_int(chunks)
    check(chunks > 0, lambda: f"chunk expects `chunks` to be greater than 0, got: {chunks}")  # before the dim, as torch's
    d, size = _split_dim("chunk", input, dim)
    if size == 0:
        return _pieces("split", input, d, [0] * chunks)
    return split(input, -(-size // chunks), d)


_KINDS = {torch.bool: 0, torch.uint8: 1, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4, torch.float16: 5,
          torch.bfloat16: 5, torch.float32: 6}


def _promoted(name, tensors):
    """torch's type promotion over tnet's dtypes (torch.promote_types, which torch dispatches as an
    operator): bool < uint8, int8 < int16 < int32 < int64 < the 16-bit floats < float32; float16 with
    bfloat16 gives float32, uint8 with int8 int16 (neither holds the other)."""
    def promote(a, b):
        if a == b or _KINDS[a] != _KINDS[b]:
            return max(a, b, key=_KINDS.get)
        return torch.float32 if a.is_floating_point else torch.int16
    dtypes = [t.dtype for t in tensors]
    check(all(d in _KINDS for d in dtypes), lambda: f"{name}: supports {', '.join(map(str, _KINDS))}; got {dtypes}")
    return functools.reduce(promote, dtypes)


def tensors_result_type(name, tensors):
    """torch.result_type over tensors: those with dims promote (_promoted); 0-d ones decide only when of a
    higher category (bool < integer < float) or when all are 0-d (a 0-d fp32 beside fp16 blocks: fp16)."""
    category = lambda d: 0 if d == torch.bool else 2 if d.is_floating_point else 1  # noqa: E731
    dims, zero_d = [t for t in tensors if t.ndim], [t for t in tensors if not t.ndim]
    if not dims or not zero_d:
        return _promoted(name, tensors)
    dtype, other = _promoted(name, dims), _promoted(name, zero_d)
    return other if category(other) > category(dtype) else dtype


@numpy_names
def cat(tensors, dim=0):
    """tensors joined along dim into a new tensor of their promoted dtype (torch's promotion). All
    have one number of dims and the same sizes off dim, except that 1-D empty tensors are
    skipped (torch's legacy rule). Channels-last when every input is, else contiguous."""
    return _joined("cat", tensors, dim)


def _joined(name, tensors, dim, sources=None):
    """cat's work, recorded as the op `name` (stack's node is StackBackward0, as torch's). sources: the tensors the
    node records where `tensors` are their views with `dim` added (stack's, off the tape): its edges lead to them, as
    torch's StackBackward0's do, and their gradients drop that dim."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"cat(): argument 'tensors' must be a tuple or list of Tensors, not {type(tensors).__name__}")
    if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
        raise TypeError(f"cat(): argument 'dim' must be int, not {type(dim).__name__}")
    if not tensors:
        raise InputError("cat(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        check_tensors("cat", **{f"tensors[{i}]": x})
        check(x.ndim > 0, lambda: f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    dtype = _promoted("cat", tensors)
    joined = [(i, x) for i, x in enumerate(tensors) if x.shape != (0,)]
    if not joined:  # 1-D empty tensors only
        y = torch.empty(0, dtype=dtype, device=tensors[0].device)
        return _copy_record(name, tensors, y, lambda g: [torch.empty_like(x.memory) for x in tensors])
    first = joined[0][1]
    d = dim_index(dim, first.ndim)
    for i, x in joined:
        check(x.ndim == first.ndim,
              lambda: f"Tensors must have same number of dimensions: got {first.ndim} and {x.ndim}")
        for a, (s, t) in enumerate(zip(first.shape, x.shape)):
            check(a == d or s == t,
                  lambda: f"Sizes of tensors must match except in dimension {d}. Expected size {s} but got "
                          f"size {t} for tensor number {i} in the list.")
    shape = list(first.shape)
    shape[d] = sum(x.shape[d] for _, x in joined)
    cl = all(is_channels_last(x.memory) for _, x in joined)
    y = torch.empty(shape, dtype=dtype, device=first.device, memory_format=memory_format(cl))
    starts, at = {}, 0
    for i, x in joined:
        starts[i] = at
        if x.shape[d]:
            copy_(y.narrow(d, at, x.shape[d]), x.memory)
        at += x.shape[d]

    def backward(g):
        grads = [in_layout(g.narrow(d, starts[i], x.shape[d]), x.memory) if i in starts else torch.empty_like(x.memory)
                 for i, x in enumerate(tensors)]
        return grads if sources is None else [r.squeeze(d) for r in grads]

    def graph(g, out):
        grads = [narrow(g, d, starts[i], x.shape[d]) if i in starts else Tensor(torch.zeros_like(x.memory))
                 for i, x in enumerate(tensors)]
        return grads if sources is None else [squeeze(r, d) for r in grads]
    return _copy_record(name, tensors if sources is None else sources, y, backward, graph=graph)


concat = concatenate = cat  # torch's aliases; cat takes numpy's axis= too


@numpy_names
def stack(tensors, dim=0):
    """tensors of one shape joined along a new dim at `dim`."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"stack(): argument 'tensors' must be a tuple or list of Tensors, not {type(tensors).__name__}")
    if not tensors:
        raise InputError("stack expects a non-empty TensorList")
    for i, x in enumerate(tensors):
        check_tensors("stack", **{f"tensors[{i}]": x})
    d = dim_index(dim, tensors[0].ndim + 1)  # before the sizes, as torch's
    for i, x in enumerate(tensors):
        check(x.shape == tensors[0].shape, lambda: f"stack expects each tensor to be equal size, but got "
                                                   f"{list(tensors[0].shape)} at entry 0 and {list(x.shape)} at entry {i}")
    return _joined("stack", [Tensor(x.memory.unsqueeze(d)) for x in tensors], d, sources=tensors)


def clone(input, memory_format=torch.preserve_format):
    """A copy of input (torch's memory_format: preserve keeps a dense input's strides); the
    gradient passes through."""
    check_tensors("clone", input=input)
    y = copy_(torch.empty_like(input.memory, memory_format=memory_format), input.memory)
    # its backward reads g and input's layout only: a backward that frees the graph leaves it usable, as torch's
    # CloneBackward, which saves nothing (a script's x = torch.tensor(...).clone() differentiated again)
    return _copy_record("clone", input, y, lambda g: (in_layout(g, input.memory),), graph=_passed, saves_nothing=True)


def contiguous(x, memory_format=torch.contiguous_format):
    """x when contiguous in memory_format, else a copy that is (on the tape)."""
    if x.memory.is_contiguous(memory_format=memory_format):
        return x
    y = copy_(torch.empty_like(x.memory, memory_format=memory_format), x.memory)
    return _copy_record("contiguous", x, y, lambda g: (in_layout(g, x.memory),), graph=_passed)


def _passed(g, y):  # a copy's gradient on the tape (record's graph=): g itself
    return (g,)


def flip(input, dims):
    """input reversed along `dims` (a sequence of ints): a copy, in input's layout."""
    check_tensors("flip", input=input)
    if isinstance(dims, numbers.Integral):
        raise TypeError(f"flip(): argument 'dims' must be tuple of ints, not {type(dims).__name__}")
    axes = [dim_index(d, input.ndim) for d in dims]
    for a in axes:
        check(axes.count(a) == 1, lambda: f"dim {a} appears multiple times in the list of dims")
    axes = [a for a in axes if input.ndim]  # a 0-d tensor flips to itself
    y = _copy.flip_(torch.empty_like(input.memory), input.memory, axes)
    return _copy_record("flip", input, y, lambda g: (_copy.flip_(empty_in_layout(input.memory), g, axes),),
                        graph=lambda g, out: (flip(g, axes),))


def _f32_gradient(x, add):
    """The gradient of x accumulated by add(buffer) into a zeroed fp32 buffer in x's layout, then
    in x's dtype."""
    buf = add(torch.zeros_like(x.memory, dtype=torch.float32, memory_format=memory_format(is_channels_last(x.memory))))
    return buf if x.dtype == torch.float32 else copy_(empty_in_layout(x.memory), buf)


def unfold_windows(input, dimension, size, step):
    """Tensor.unfold, named apart from torch.nn.functional.unfold (an im2col): the windows of
    `size` along `dimension`, `step` apart, as a new last dim (a view of input's memory). The
    backward sums overlapping windows back (an atomic-add kernel)."""
    check_tensors("unfold", input=input)
    d = dim_index(dimension, input.ndim)
    length = input.shape[d] if input.ndim else 1
    check(size >= 0, lambda: f"size is {size} but must be >= 0")
    check(size <= length, lambda: f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    check(step > 0, lambda: f"step is {step} but must be > 0")

    def backward(g):
        return (_f32_gradient(input, lambda buf: _copy.unfold_add_(buf, g, d, size, step)),)
    adjoint = lambda h: _copy.windows(h, d, size, step).contiguous()  # the windows of h: the sum's adjoint
    return record("unfold", _copy.windows(input.memory, d, size, step), (input,), backward,
                  graph=linear_graph("unfold", backward, adjoint))


def index_select(input, dim, index):
    """The slices of input along dim at `index` (a vector or a 0-d tensor of int64 or int32), in
    input's layout (torch's result is contiguous): a gather kernel. An index out of range raises
    IndexError (a host read of a device flag, skipped within a CUDA graph capture). The backward
    adds each slice's gradient back at its index by atomic adds, so repeated indices sum."""
    check_tensors("index_select", input=input, index=index)
    d = dim_index(dim, input.ndim)  # torch's order of checks: the dim, the index's rank, its dtype
    if index.ndim > 1:
        raise InputIndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in _copy.INDEX_DTYPES:
        raise InputError("index_select(): Expected dtype int32 or int64 for index")
    if input.ndim == 0:
        return reshape(index_select(reshape(input, 1), 0, index), ())
    return _take("index_select", input, d, index.memory.reshape(-1), report="index_select()")


def _take(name, input, d, idx, wrap=False, report=None):
    """index_select's gather: input's slices along dim d at idx (a torch int vector; wrap: negative
    ones from the end), in input's layout; `report` as gather_'s name (None: idx is known to be in
    range). The backward adds each slice's gradient back at its index by atomic adds."""
    shape = list(input.shape)
    shape[d] = idx.shape[0]
    y = torch.empty(shape, dtype=input.dtype, device=input.device,
                    memory_format=memory_format(is_channels_last(input.memory)))
    _copy.gather_(y, input.memory, idx, d, report, wrap)
    backward = lambda g: (_f32_gradient(input, lambda b: _copy.index_add_(b, g, idx, d, wrap)),)

    def select(h):  # the gradient's own gradient: the same slices of h
        out = torch.empty(shape, dtype=h.dtype, device=h.device, memory_format=memory_format(is_channels_last(h)))
        return _copy.gather_(out, h, idx, d, None, wrap)
    return _copy_record(name, input, y, backward, saved=(idx,), graph=linear_graph(name, backward, select))


def to(x, *args, **kwargs):
    """to(dtype), to(device), to(device, dtype), to(other) (with keywords too): tnet has one device, so
    only the dtype may change. A cast makes a fresh tensor (x when the dtype is already that, as
    torch); casts between float dtypes are on the tape (the gradient casts back). memory_format=
    (torch.channels_last, say) then gives contiguous()'s layout. copy=True (or torch's positional
    non_blocking, copy after the dtype, device or other) makes a fresh tensor even where x would do, as
    torch's, on the tape as clone."""
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    layout = kwargs.pop("memory_format", torch.preserve_format)
    flags = [a for a in args if isinstance(a, bool)]  # torch's positional non_blocking, copy
    args = [a for a in args if not isinstance(a, bool)]
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", flags[1] if len(flags) > 1 else False)
    if kwargs:
        raise TypeError(f"to: unexpected arguments {sorted(kwargs)}")
    if copy:
        y = to(x, *args, dtype=dtype, device=device, memory_format=layout)
        return clone(x) if y is x else y
    for arg in (a.dtype if isinstance(a, Tensor) else a for a in args):  # to(other): other's dtype, one device
        if isinstance(arg, torch.dtype) or as_dtype(arg) is not arg:
            dtype = arg
        else:
            device = arg
    check_device("to", device)
    if dtype is not None:
        dtype = check_dtype("to", dtype)
    if layout != torch.preserve_format:
        return contiguous(to(x, dtype=dtype), layout)
    if dtype is None or dtype == x.dtype:
        return x
    y = copy_(torch.empty_like(x.memory, dtype=dtype), x.memory)
    return _copy_record("to", x, y, lambda g: (copy_(empty_in_layout(x.memory), g),))


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """torch's embedding_renorm_: weight's rows at indices (1-D int64) whose norm_type-norm passes
    max_norm are scaled in place to max_norm / (norm + 1e-7), under no_grad (no part of the graph;
    weight's version changes); returns weight, as torch's. No index renorms no row (nor writes weight). A weight
    expanded along its rows (one row in memory) is renormed as torch's loop over the sorted unique indices renorms
    it: once (the row renormed is within max_norm for its aliases after it); another that overlaps itself raises
    torch's error."""
    check_args("embedding_renorm_", "float", max_norm=max_norm, norm_type=norm_type)  # the parser's, first
    if not indices.numel():
        return weight
    with no_grad():
        rows = index_select(weight, 0, indices)
        norms = rows.norm(norm_type, 1, True)
        scaled = mul(rows, where(norms > max_norm, max_norm / (norms + 1e-7), 1.0))
        m = weight.memory
        if not _copy.overlaps(m):
            weight.index_copy_(0, indices, scaled)
            return weight
        check(m.stride(0) == 0 and not _copy.overlaps(m[0]),
              "unsupported operation: more than one element of the written-to tensor refers to a single memory "
              "location. Please clone() the tensor before performing the operation.")
        Tensor(m[:1]).copy_(scaled[:1])  # every index's scaled row is the same
    return weight


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """weight's rows at the indices of input (int64, any shape): [*input.shape, embedding_dim], as
    torch's; the rows at padding_idx get no gradient. max_norm: the rows looked up whose
    norm_type-norm passes it are first scaled in place in weight to max_norm / (norm + 1e-7), as
    torch's embedding_renorm_ (weight's version changes). scale_grad_by_freq: each lookup's gradient
    is divided by its index's count in input. sparse=True is taken, but the gradient is dense (zero
    rows where torch's sparse one has none; optim.SparseAdam takes those rows as absent)."""
    check_args("embedding", "bool", scale_grad_by_freq=scale_grad_by_freq)
    if padding_idx is not None:
        check_args("embedding", "int", padding_idx=padding_idx)
    check_tensors("embedding", input=input, weight=weight)
    if padding_idx is not None:  # torch's F.embedding asserts (0 passes beside no rows)
        if padding_idx > 0 and padding_idx >= weight.shape[0] or padding_idx < -weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
    flat = reshape(input, (-1,))
    if max_norm is not None:
        embedding_renorm_(weight, flat, max_norm, norm_type)
    mark = tape_mark()
    looked_up = index_select(weight, 0, flat)
    if scale_grad_by_freq and looked_up.requires_grad:
        counts = weight.new_zeros(weight.shape[0]).index_add_(0, flat, weight.new_ones(flat.shape[0]))
        scale = reshape(index_select(counts, 0, flat).reciprocal(), (-1, 1))
        looked_up.register_hook(lambda g: mul(g, scale))
    rows = reshape(looked_up, (*input.shape, weight.shape[1]))
    if padding_idx is None:
        return named("embedding", mark, rows)
    keep = ne(reshape(input, (*input.shape, 1)), padding_idx)
    # the padding rows' values, without their gradient
    return named("embedding", mark, where(keep, rows, Tensor(rows.memory)))


def flat_positions(name, input, dim, index):
    """The positions in input.reshape(-1) (row-major) that gather and scatter address: at
    coordinate c of index, c with c[dim] replaced by index[c]. index: int64 or int32 of input's
    number of dims, no larger than input along every dim but dim; a 0-d input or index counts as
    1-d of size 1, as torch's (the Transforms tutorial's one-hot `zeros(10).scatter_(0,
    torch.tensor(y), value=1)`). An index outside [0, input.shape[dim]) raises IndexError (a host
    read of a device count, as index_select's)."""
    check_tensors(name, input=input, index=index)
    d = dim_index(dim, max(input.ndim, 1))  # before the index's dtype, as torch's
    check(index.dtype in _copy.INDEX_DTYPES or not index.numel(),  # an empty index of any dtype, as torch's
          lambda: f"{name}(): Expected dtype int64 for index")
    shape, index_shape = tuple(input.shape) or (1,), tuple(index.shape) or (1,)
    check(len(index_shape) == len(shape) and all(index_shape[k] <= shape[k] for k in range(len(shape)) if k != d),
          lambda: f"{name}(): Size does not match at dimension: index {tuple(index.shape)}, input "
                  f"{tuple(input.shape)}, dim {d}")
    _check_bounds(name, index, shape[d], d)
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    return add(mul(index.long(), strides[d]), tensor(_off_dim_offsets(index.shape, strides, d)))


def _off_dim_offsets(shape, strides, d):
    """The int64 array, of `shape`, of each coordinate's offset by `strides` with dim d left out (the
    host part of a position along d)."""
    grids = np.meshgrid(*[np.arange(n, dtype=np.int64) * (0 if k == d else strides[k])
                          for k, n in enumerate(shape)], indexing="ij")
    return builtins.sum(grids) if grids else np.zeros((), np.int64)


def add_at(shape, d, index, src, dtype):
    """A new torch tensor of shape and dtype: zeros with src's elements added at index along d
    (torch's scatter_add; index int64 in range, of src's shape), in fp32 by atomic adds."""
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    base = torch.from_numpy(_off_dim_offsets(index.shape, strides, d)).to(index.device)
    positions = _pw.pointwise("add", _pw.pointwise("mul", index, strides[d]), base)
    buf = torch.zeros(math.prod(shape), dtype=torch.float32, device=index.device)
    _copy.index_add_(buf, src.reshape(-1), positions.reshape(-1), 0)
    return copy_(torch.empty(shape, dtype=dtype, device=index.device), buf.view(shape))


def _check_bounds(name, index, size, d):
    """IndexError where an index lies outside [0, size) (a host read of a device count)."""
    if index.numel():
        no_host_read(index.memory, f"{name}()")
        outside = logical_or(lt(index, 0), ge(index, size)).long().memory.reshape(-1)
        if int(_reduce.reduce(outside, (0,)).reshape(-1)[0]):
            raise InputIndexError(f"{name}(): index out of bounds for dimension {d} with size {size}")


def gather(input, dim, index, *, sparse_grad=False):
    """torch.gather: out[c] = input[c with c[dim] = index[c]], the shape of index; its gradient
    adds back at those positions."""
    check(not sparse_grad, "gather: sparse_grad is not supported")
    positions = flat_positions("gather", input, dim, index)
    mark = tape_mark()
    return named("gather", mark, reshape(index_select(reshape(input, (-1,)), 0, reshape(positions, (-1,))),
                                         tuple(index.shape)))


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """torch.scatter (out of place): input with input[c with c[dim] = index[c]] = src[c] (or
    value) for every coordinate c of index. A repeated position keeps one of its values, as
    torch's. Gradients: input's where not overwritten, src's gathered back. reduce ("add" or
    "multiply", torch's legacy form): src (or value) added or multiplied in, as scatter_reduce's
    "sum" or "prod" with include_self."""
    if isinstance(src, numbers.Number):  # torch.scatter(input, dim, index, 1.0): the value form
        src, value = None, src
    check((src is None) != (value is None), "scatter: give src or value")
    if reduce is not None:
        check(reduce in ("add", "multiply"), lambda: f"reduce argument must be either add or multiply, got {reduce}")
        if src is None:
            src = Tensor(torch.full(tuple(index.shape), value, dtype=input.dtype, device=input.device))
        return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")
    positions = reshape(flat_positions("scatter", input, dim, index), (-1,)).memory
    m, n = positions.shape[0], input.numel()
    if src is None:
        values = torch.full((m,), value, dtype=input.dtype, device=input.device)
    else:
        check(isinstance(src, Tensor) and src.ndim == index.ndim and all(a >= b for a, b in zip(src.shape, index.shape)),
              lambda: f"scatter(): src {tuple(getattr(src, 'shape', ()))} must be at least index's {tuple(index.shape)}")
        part = src.memory[tuple(slice(0, k) for k in index.shape)]
        values = copy_(torch.empty(m, dtype=input.dtype, device=input.device), part.reshape(-1))
    out = copy_(torch.empty(input.shape, dtype=input.dtype, device=input.device), input.memory)
    _copy.put_(out.view(-1), values, positions)
    kept_mask = None  # 0 where overwritten: only for input's gradient (max_unpool2d scatters into zeros)
    if input.requires_grad:
        kept_mask = torch.ones(n, dtype=input.dtype, device=input.device)
        _copy.put_(kept_mask, torch.zeros(m, dtype=input.dtype, device=input.device), positions)
    with_src = isinstance(src, Tensor)

    def backward(g):
        flat = g.contiguous().view(-1)
        g_input = None if kept_mask is None else _pw.pointwise("mul", flat, kept_mask).view(input.shape)
        if not with_src:
            return (g_input,)
        g_src = torch.zeros(src.shape, dtype=src.dtype, device=src.device)
        picked = _copy.gather_(torch.empty(m, dtype=src.dtype, device=src.device), flat, positions, 0, "scatter")
        copy_(g_src[tuple(slice(0, k) for k in index.shape)], picked.view(tuple(index.shape)))
        return g_input, g_src

    def graph(g, y):  # the same linear maps of g on the tape
        g_input = None if kept_mask is None else mul(g, Tensor(kept_mask.view(input.shape)))
        return (g_input,) if not with_src else (g_input, _picked(g, positions, index.shape, src.shape))
    return record("scatter", out, (input, src) if with_src else (input,), backward, saved=(kept_mask, positions),
                  graph=graph)


def scatter_add(input, dim, index, src):
    """torch.scatter_add (out of place): input with src[c] added at c with c[dim] = index[c], for
    every coordinate c of index; repeated positions sum (atomic adds in fp32, in no fixed order on
    the GPU, as torch's CUDA). Gradients: input's g, src's g gathered back at the positions."""
    check(isinstance(src, Tensor) and src.ndim == index.ndim and all(a >= b for a, b in zip(src.shape, index.shape)),
          lambda: f"scatter_add(): src {tuple(getattr(src, 'shape', ()))} must be at least index's {tuple(index.shape)}")
    positions = reshape(flat_positions("scatter_add", input, dim, index), (-1,)).memory
    part = src.memory[tuple(slice(0, k) for k in index.shape)]
    values = copy_(torch.empty(positions.shape[0], dtype=torch.float32, device=input.device), part.reshape(-1))
    buf = copy_(torch.empty(input.numel(), dtype=torch.float32, device=input.device), input.memory.reshape(-1))
    _copy.index_add_(buf, values, positions, 0)
    out = copy_(torch.empty(input.shape, dtype=input.dtype, device=input.device), buf.view(input.shape))
    need_src = src.requires_grad

    def backward(g):
        g_src = None
        if need_src:
            g_src = torch.zeros(src.shape, dtype=src.dtype, device=src.device)
            picked = _copy.gather_(torch.empty(positions.shape[0], dtype=src.dtype, device=src.device),
                                   g.contiguous().view(-1), positions, 0, "scatter_add")
            copy_(g_src[tuple(slice(0, k) for k in index.shape)], picked.view(tuple(index.shape)))
        return g, g_src

    def graph(g, y):  # linear in (input, src): the same maps of g on the tape (forces through a segment sum)
        return g, _picked(g, positions, index.shape, src.shape) if need_src else None
    return record("scatter_add", out, (input, src), backward, saved=(positions,), graph=graph)


def _grown(g, shape):
    """g zero-padded at the end of each dim to shape (a scatter's src may be larger than its index)."""
    grow = [p for k in reversed(range(g.ndim)) for p in (0, shape[k] - g.shape[k])]
    return pad(g, grow) if any(grow) else g


def _picked(g, positions, index_shape, src_shape):
    """The src gradient of the scatters on the tape: g (a Tensor) at the flat positions (a torch int vector), in
    index's shape, zero-padded to src's."""
    return _grown(reshape(index_select(reshape(g, (-1,)), 0, Tensor(positions)), tuple(index_shape)), src_shape)


def check_put_dtype(input, values):
    """torch's advanced-index writes (index_put, x[index] = tensor) take a value tensor of input's dtype only (a
    number is cast; a bool mask with a 0-d value is masked_fill, which casts)."""
    if isinstance(values, Tensor) and values.dtype != input.dtype:
        raise InputError(f"Index put requires the source and destination dtypes match, got "
                         f"{DTYPE_NAMES.get(input.dtype)} for the destination and {DTYPE_NAMES.get(values.dtype)} for "
                         f"the source.")


def index_put(input, indices, values, accumulate=False):
    """torch.index_put (out of place): input[indices] = values on a copy of input; with accumulate, input with values
    added at indices, repeated positions summing (index_add's fp32 atomic adds): the indices then
    address input's leading dims (int tensors, broadcast together). Gradients: input's g, values' g
    at the positions (summed to values' shape)."""
    check_args("index_put", "bool", accumulate=accumulate)
    indices = tuple(indices)
    if not accumulate:
        out = clone(input)
        out[indices] = values
        return out
    if any(isinstance(i, Tensor) and i.dtype.is_floating_point for i in indices):
        raise IndexError(_BAD_INDEX_DTYPE)
    check(0 < len(indices) <= input.ndim and all(isinstance(i, Tensor) and i.dtype in _copy.INDEX_DTYPES for i in indices),
          lambda: f"index_put_: accumulate=True takes 1 to {input.ndim} integer index tensors")
    shape = _pw.broadcast_shape("index_put_", *[i.shape for i in indices])
    lead, rest = input.shape[:len(indices)], input.shape[len(indices):]
    flat = None
    for d, (i, size) in enumerate(zip(indices, lead)):
        i = where(lt(i, 0), add(i, size), i)  # negative indices count from the end
        _check_bounds("index_put_", i, size, d)
        term = mul(i.long(), math.prod(lead[d + 1:]))
        flat = term if flat is None else add(flat, term)
    check_put_dtype(input, values)  # after the indices' bounds, as torch's
    flat = reshape(expand(flat, shape), (-1,))
    v = values if isinstance(values, Tensor) else tensor(values, dtype=input.dtype)
    v = reshape(expand(to(v, input.dtype), (*shape, *rest)), (flat.shape[0], *rest))
    mark = tape_mark()
    return named("index_put", mark, reshape(index_add(reshape(input, (math.prod(lead), *rest)), 0, flat, v),
                                            input.shape))


def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add (out of place): input with alpha * source's slice k along dim added to its
    slice index[k] (a vector of int64 or int32); repeated indices sum, by atomic adds (in no fixed
    order on the GPU, as torch's CUDA index_add), in fp32 (integers too). An index out of range raises IndexError
    (a host read). Gradients: input's g, source's alpha * g's slices at index (a gather)."""
    check_tensors("index_add", input=input, index=index, source=source)
    check_args("index_add", "float", alpha=alpha)
    check(index.dtype in _copy.INDEX_DTYPES and index.ndim <= 1,
          lambda: f"index_add(): index must be a vector of int64 or int32, got {index.dtype} of {tuple(index.shape)}")
    d = dim_index(dim, max(input.ndim, 1))
    check(input.ndim == source.ndim and source.shape[d:d + 1] == (index.numel(),) and
          all(a == b for k, (a, b) in enumerate(zip(input.shape, source.shape)) if k != d),
          lambda: f"index_add(): source {tuple(source.shape)} must be input {tuple(input.shape)} with "
                  f"{index.numel()} elements at dim {d}")
    _check_bounds("index_add", index, input.shape[d], d)
    idx = index.memory.reshape(-1)
    src = source.memory if alpha == 1 else _pw.pointwise("mul", source.memory, alpha)
    if not src.is_floating_point():  # integers and bools add in fp32 too (exact below 2^24)
        src = copy_(torch.empty(src.shape, dtype=torch.float32, device=src.device), src)
    buf = copy_(torch.empty(input.shape, dtype=torch.float32, device=input.device), input.memory)
    _copy.index_add_(buf, src, idx, d)
    y = buf if input.dtype == torch.float32 else copy_(torch.empty_like(buf, dtype=input.dtype), buf)
    need_source = source.requires_grad

    def backward(g):
        gs = None
        if need_source:
            gs = _copy.gather_(torch.empty(source.shape, dtype=source.dtype, device=g.device), g, idx, d, "index_add")
            gs = gs if alpha == 1 else _pw.pointwise("mul", gs, alpha)
        return in_layout(g, input.memory), gs

    def graph(g, out):  # linear in (input, source): the same maps of g on the tape (SchNet's forces)
        gs = index_select(g, d, index) if need_source else None
        return g, gs if gs is None or alpha == 1 else mul(gs, alpha)
    return _copy_record("index_add", (input, source), y, backward, saved=(idx,), graph=graph)


def pixel_shuffle(input, upscale_factor):
    """[*, C * r * r, H, W] -> [*, C, H * r, W * r] (r = upscale_factor), as torch's: a reshape and
    a permute, copied (in torch's NCHW order for a channels-last input) into an NCHW result."""
    check_tensors("pixel_shuffle", input=input)
    r = upscale_factor
    check(r > 0, lambda: f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    check(input.ndim >= 3, lambda: f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                                   f"{input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    check(c % (r * r) == 0, lambda: f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
                                    f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    mark = tape_mark()
    x = permute(reshape(input, (*lead, c // (r * r), r, r, h, w)), (*range(n + 1), n + 3, n + 1, n + 4, n + 2))
    return named("pixel_shuffle", mark, reshape(x, (*lead, c // (r * r), h * r, w * r)))


def pixel_unshuffle(input, downscale_factor):
    """[*, C, H * r, W * r] -> [*, C * r * r, H, W] (r = downscale_factor), pixel_shuffle's inverse,
    as torch's: a reshape and a permute, copied into an NCHW result."""
    mark = tape_mark()  # torch's node: its one op's
    check_tensors("pixel_unshuffle", input=input)
    r = downscale_factor
    check(r > 0, lambda: f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    check(input.ndim >= 3, lambda: f"pixel_unshuffle expects input to have at least 3 dimensions, but got input "
                                   f"with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    for what, size, k in (("height", h, -2), ("width", w, -1)):
        check(size % r == 0, lambda: f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                                     f"input.size({k})={size} is not divisible by {r}")
    n = len(lead)
    x = permute(reshape(input, (*lead, c, h // r, r, w // r, r)), (*range(n + 1), n + 2, n + 4, n + 1, n + 3))
    return named("pixel_unshuffle", mark, reshape(x, (*lead, c * r * r, h // r, w // r)))


def channel_shuffle(input, groups):
    """[N, C, *] with its channels read as [groups, C / groups] and written as [C / groups, groups],
    as torch's (ShuffleNet's shuffle): a reshape, a transpose and a copy, NCHW."""
    mark = tape_mark()  # torch's node: its one op's
    check_tensors("channel_shuffle", input=input)
    check(input.ndim > 2, lambda: f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                                  f"{list(input.shape)}")
    check(groups > 0, lambda: f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    check(c % groups == 0, lambda: f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
                                   f"groups.")
    x = transpose(reshape(input, (n, groups, c // groups, *rest)), 1, 2)
    return named("channel_shuffle", mark, reshape(x, input.shape))


def _sliding_blocks(name, size, kernel_size, dilation, padding, stride):
    """What unfold and fold share: (the flat position in the padded [Hp, Wp] plane of each
    element of the [kh, kw, OH, OW] blocks, an int64 tensor; the kernel; the padding; (Hp, Wp);
    (OH, OW))."""
    # every argument's type before any value, as torch's parser
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (pair(v, f"{name}: {arg}", None) for v, arg in (
        (kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    for v, arg, least in (((kh, kw), "kernel_size", 1), ((dh, dw), "dilation", 1), ((ph, pw), "padding", 0),
                          ((sh, sw), "stride", 1)):
        at_least(v, f"{name}: {arg}", least)
    hp, wp = size[0] + 2 * ph, size[1] + 2 * pw
    oh, ow = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    check(oh > 0 and ow > 0, lambda: f"{name}: the kernel {(kh, kw)} with dilation {(dh, dw)} does not fit the padded "
                                     f"input {(hp, wp)}")
    rows = np.arange(kh)[:, None, None, None] * dh + np.arange(oh)[None, None, :, None] * sh
    cols = np.arange(kw)[None, :, None, None] * dw + np.arange(ow)[None, None, None, :] * sw
    return tensor((rows * wp + cols).reshape(-1)), (kh, kw), (ph, pw), (hp, wp), (oh, ow)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col; Tensor.unfold is unfold_windows): [N, C, H, W] (or
    [C, H, W]) -> [N, C * kh * kw, L], column c * kh * kw + i * kw + j of block l (row-major over
    the OH x OW block positions) the input at that block's tap (i, j), zero padding. The padded
    input gathered through one index_select (its gradient sums overlapping blocks back)."""
    check_tensors("unfold", input=input)
    check(input.ndim in (3, 4), lambda: f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x = input if input.ndim == 4 else unsqueeze(input, 0)
    positions, (kh, kw), (ph, pw), (hp, wp), blocks = _sliding_blocks("unfold", x.shape[2:], kernel_size, dilation,
                                                                      padding, stride)
    check_batch_only_empty(input.shape, 2)  # torch's im2col
    if ph or pw:
        x = pad(x, (pw, pw, ph, ph))
    n, c = x.shape[:2]
    mark = tape_mark()  # the gather's result is torch's one im2col node (Im2ColBackward0)
    out = reshape(index_select(reshape(x, (n, c, hp * wp)), 2, positions), (n, c * kh * kw, blocks[0] * blocks[1]))
    return named("im2col", mark, out) if input.ndim == 4 else squeeze(out, 0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im), unfold's adjoint: [N, C * kh * kw, L] (or [C * kh * kw, L])
    -> [N, C, *output_size], each block's taps added at their places (overlaps sum; the padding
    cropped), through one index_add (atomic adds; its gradient is unfold's gather)."""
    check_tensors("fold", input=input)
    check(input.ndim in (2, 3), lambda: f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
                                        f"supported (got {input.ndim}D)")
    size = pair(output_size, "fold: output_size", 1)
    positions, (kh, kw), (ph, pw), (hp, wp), blocks = _sliding_blocks("fold", size, kernel_size, dilation, padding,
                                                                      stride)
    x = input if input.ndim == 3 else unsqueeze(input, 0)
    check(x.shape[1] % (kh * kw) == 0,
          lambda: f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
                  f"input.size(1)={x.shape[1]} and kernel_size={(kh, kw)}.")
    check(x.shape[2] == blocks[0] * blocks[1],
          lambda: f"Given output_size={size}, kernel_size={(kh, kw)}, dilation={pair(dilation, '')}, padding={(ph, pw)}, "
                  f"stride={pair(stride, '')}, expected size of input's dimension 2 to match the calculated number of "
                  f"sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={x.shape[2]}.")
    n, c = x.shape[0], x.shape[1] // (kh * kw)
    plane = Tensor(torch.zeros((n, c, hp * wp), dtype=input.dtype, device=input.device))
    out = reshape(index_add(plane, 2, positions, reshape(x, (n, c, kh * kw * x.shape[2]))), (n, c, hp, wp))
    if ph or pw:
        out = contiguous(out[:, :, ph:ph + size[0], pw:pw + size[1]])
    return out if input.ndim == 3 else squeeze(out, 0)


# ---- diagonals, tiling, stacking and broadcasting helpers ---------------------------------------

def _diagonal_view(t, offset, d1, d2):
    """The diagonal `offset` of torch tensor t over dims d1 and d2 (>= 0) as an as_strided view: the
    other dims, then the diagonal's (torch.diagonal's layout)."""
    n = builtins.max(0, builtins.min(t.shape[d1] + builtins.min(offset, 0), t.shape[d2] - builtins.max(offset, 0)))
    start = t.storage_offset() + (offset * t.stride(d2) if offset >= 0 else -offset * t.stride(d1)) if n else 0
    others = [d for d in range(t.dim()) if d not in (d1, d2)]
    return t.as_strided([t.shape[d] for d in others] + [n], [t.stride(d) for d in others] + [t.stride(d1) + t.stride(d2)],
                        start)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal `offset` (above the main one where > 0) over dim1 and dim2, as a last dim: a view,
    as torch.diagonal."""
    check_tensors("diagonal", input=input)
    check_args("diagonal", "int", offset=offset, dim1=dim1, dim2=dim2)  # every type before a dim's range
    d1, d2 = dim_index(dim1, input.ndim), dim_index(dim2, input.ndim)
    check(d1 != d2, lambda: f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _part("diagonal", input, lambda t: _diagonal_view(t, int(offset), d1, d2))


def diag(input, diagonal=0):
    """A 1-D input: the square matrix with input on diagonal `diagonal`, 0 elsewhere; a 2-D one: a
    copy of its diagonal `diagonal`, as torch.diag."""
    check_tensors("diag", input=input)
    check(input.ndim in (1, 2), lambda: f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    if input.ndim == 2:
        return clone(globals()["diagonal"](input, diagonal))
    n = input.shape[0] + builtins.abs(diagonal)
    y = torch.zeros((n, n), dtype=input.dtype, device=input.device)
    copy_(_diagonal_view(y, diagonal, 0, 1), input.memory)
    return _copy_record("diag", input, y, lambda g: (_diagonal_view(g, diagonal, 0, 1),))


def trace(input):
    """The sum of a matrix's main diagonal, as torch.trace (integers: an int64 sum)."""
    mark = tape_mark()  # torch's node: its one op's
    check_tensors("trace", input=input)
    check(input.ndim == 2, "trace: expected a matrix")
    return named("trace", mark, diagonal(input).sum())


def tile(input, dims, *more):
    """input repeated dims[i] times along each dim, dims padded with leading 1s to input's dims, as
    torch.tile (repeat); dims as a sequence or, as the method's, ints (x.tile(2, 3))."""
    dims = tuple(shape_args((dims, *more)))
    return repeat(input, (1,) * builtins.max(0, input.ndim - len(dims)) + dims)


def _at_least(x, n):
    """x with n dims at least (torch's atleast_1d / atleast_2d: leading 1s), as torch's nodes: a 0-d x reshaped
    (ViewBackward0), a 1-D one unsqueezed (UnsqueezeBackward0)."""
    return x if x.ndim >= n else reshape(x, (1,) * n) if x.ndim == 0 else unsqueeze(x, 0)


def hstack(tensors):
    """tensors joined along dim 1 (dim 0 where they are 1-D), 0-d ones as 1-D, as torch.hstack."""
    tensors = [_at_least(x, 1) for x in tensors]
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors):
    """tensors, 1-D ones as rows [1, n], joined along dim 0, as torch.vstack."""
    return cat([_at_least(x, 2) for x in tensors], 0)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 1-D (or 0-d) tensors of one dtype, each expanded to [len(t0), len(t1), ...]
    (indexing 'xy': the first two swapped), views, as torch.meshgrid. No indexing (None, the default): 'ij' with
    torch's UserWarning that it will be required (DiffAugment's rand_translation omits it)."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    check_type(isinstance(indexing, str), lambda: f"meshgrid(): argument 'indexing' must be str, not {type(indexing).__name__}")
    for x in tensors:
        check_tensors("meshgrid", tensors=x)
    check(len({x.dtype for x in tensors}) <= 1, "meshgrid expects all tensors to have the same dtype")  # first, as torch's
    check(indexing in ("ij", "xy"), lambda: f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for x in tensors:
        check(x.ndim <= 1, lambda: f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {x.ndim}D")
    flat = [reshape(x, (-1,)) for x in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(x.shape[0] for x in flat)
    grids = [expand(reshape(x, tuple(-1 if j == i else 1 for j in range(len(flat)))), shape) for i, x in enumerate(flat)]
    if swap:  # the grids of the swapped inputs, handed back in the inputs' order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def broadcast_tensors(*tensors):
    """tensors expanded (views) to their common broadcast shape, as torch.broadcast_tensors."""
    for i, x in enumerate(tensors):
        check_tensors("broadcast_tensors", **{f"tensors[{i}]": x})
    shape = _pw.broadcast_shape("broadcast_tensors", *[x.shape for x in tensors])
    return tuple(expand(x, shape) for x in tensors)


def masked_select(input, mask):
    """input's elements where mask (a bool tensor) is True, the two broadcast to one shape: a 1-D
    tensor in row-major order, with input's gradient, as torch.masked_select. x[mask]'s host read of
    the mask (a sync, as torch's on a GPU)."""
    mark = tape_mark()  # torch's node: its one op's
    check_tensors("masked_select", input=input, mask=mask)
    check(mask.dtype == torch.bool, "masked_select: expected BoolTensor for mask")
    shape = _pw.broadcast_shape("masked_select", input.shape, mask.shape)
    return named("masked_select", mark, getitem(expand(input, shape), expand(mask, shape)))


def take_along_dim(input, indices, dim=None):
    """input's elements at indices along dim (input and indices broadcast off dim), as
    torch.take_along_dim; dim None: of the flattened input at the flattened indices (gather)."""
    check_tensors("take_along_dim", input=input, indices=indices)
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    check(input.ndim == indices.ndim, lambda: f"torch.take_along_dim(): input and indices should have the same "
                                              f"number of dimensions, but got {input.ndim} dimensions for input, "
                                              f"and {indices.ndim} dimensions for indices")
    d = dim_index(dim, input.ndim)
    off_dim = [tuple(1 if k == d else n for k, n in enumerate(x.shape)) for x in (input, indices)]
    shape = list(_pw.broadcast_shape("take_along_dim", *off_dim))
    shape_in, shape_idx = list(shape), list(shape)
    shape_in[d], shape_idx[d] = input.shape[d], indices.shape[d]
    return gather(expand(input, tuple(shape_in)), d, expand(indices, tuple(shape_idx)))


# ---- shape and indexing ops of the eighth session ------------------------------------------------

def moveaxis(input, source, destination):
    return movedim(input, source, destination)


def ravel(input):
    """input as one dim: a view where the memory allows, else a contiguous copy (torch.ravel)."""
    return reshape(input, (-1,))


def _atleast(n, name, tensors):
    """torch.atleast_nd: one tensor, or a tuple of them (given apart or as one sequence), with
    dims added: leading 1s, but atleast_3d makes 1-D [k] [1, k, 1] and 2-D [j, k] [j, k, 1]."""
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    out = []
    for x in tensors:
        check_tensors(name, tensors=x)
        if x.ndim >= n:
            out.append(x)
        elif n == 3 and x.ndim:  # torch's unsqueezes
            out.append(unsqueeze(unsqueeze(x, 0) if x.ndim == 1 else x, -1))
        else:
            out.append(_at_least(x, n))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    return _atleast(1, "atleast_1d", tensors)


def atleast_2d(*tensors):
    return _atleast(2, "atleast_2d", tensors)


def atleast_3d(*tensors):
    return _atleast(3, "atleast_3d", tensors)


def fliplr(input):
    check(input.ndim >= 2, "Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    check(input.ndim >= 1, "Input must be >= 1-d.")
    return flip(input, (0,))


def dstack(tensors):
    """tensors joined along dim 2, each as atleast_3d, as torch.dstack."""
    return cat(list(atleast_3d(tuple(tensors))), 2)


def column_stack(tensors):
    """tensors joined along dim 1, 0-d and 1-D ones as columns [n, 1], as torch.column_stack."""
    return cat([reshape(x, (-1, 1)) if x.ndim <= 1 else x for x in tensors], 1)


row_stack = vstack


def _split_along(name, input, indices_or_sections, dim, least):
    check_args(name, "tuple of ints", indices_or_sections=indices_or_sections)  # the parser's TypeError, first
    check(input.ndim >= least, lambda: f"torch.{name} requires a tensor with at least {least} dimension"
                                       f"{'s' if name != 'hsplit' and least > 1 else ''}, but got a tensor with "
                                       f"{input.ndim} dimensions!")
    if isinstance(indices_or_sections, numbers.Integral):
        n = int(indices_or_sections)
        check(n != 0 and input.shape[dim] % n == 0,
              lambda: f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                      f"{input.shape[dim]} is not divisible by the split_size {n}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """tensor_split along dim 1 (dim 0 of a 1-D input); sections must divide the dim, as torch.hsplit."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input, split_sizes, dim=0):
    return split(input, list(split_sizes), dim)


def _fresh(out):
    """A view op's result (or each of its views) as a new contiguous tensor, as torch's *_copy ops return; the
    gradient passes through the copy to the view's."""
    if isinstance(out, (tuple, list)):
        return tuple(clone(v, torch.contiguous_format) for v in out)
    return clone(out, torch.contiguous_format)


def narrow_copy(input, dim, start, length):
    """torch.narrow_copy: narrow's slice as a new tensor of its own memory. A dim past the last is torch's
    RuntimeError (its own check before narrow's); a negative one out of range is the IndexError of its wrap,
    before narrow's check of the length."""
    if isinstance(dim, int) and isinstance(input, Tensor) and input.ndim:
        check(dim < input.ndim, "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.")
        dim_index(dim, input.ndim)
    return _fresh(narrow(input, dim, start, length))


# torch's *_copy forms of its view ops (functionalized code, torch.export's graphs, copied aten decompositions call
# them): each the view, then a copy of its own memory
def view_copy(input, size):
    return _fresh(view(input, dtype=size) if isinstance(size, torch.dtype) else view(input, size))


def permute_copy(input, dims):
    return _fresh(permute(input, dims))


def transpose_copy(input, dim0, dim1):
    return _fresh(transpose(input, dim0, dim1))


def t_copy(input):
    return _fresh(t(input))


def unsqueeze_copy(input, dim):
    return _fresh(unsqueeze(input, dim))


def squeeze_copy(input, dim=None):
    return _fresh(squeeze(input) if dim is None else squeeze(input, dim))


def select_copy(input, dim, index):
    return _fresh(select(input, dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """input[..., start:end:step] along dim, copied (torch's aten slice, whose step must be positive)."""
    check_tensors("slice_copy", input=input)
    check(step > 0, "slice step must be positive")
    return _fresh(input[(slice(None),) * dim_index(dim, input.ndim) + (slice(start, end, step),)])


def expand_copy(input, size, *, implicit=False):
    return _fresh(expand(input, size))


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return _fresh(diagonal(input, offset, dim1, dim2))


def detach_copy(input):
    """input's values, copied off the tape (torch's requires grad and has no backward: tnet's requires none)."""
    check_tensors("detach_copy", input=input)
    return _fresh(input.detach())


def alias_copy(input):
    return _fresh(input)


def unbind_copy(input, dim=0):
    return _fresh(unbind(input, dim))


def split_copy(input, split_size, dim=0):
    return _fresh(split(input, split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    return _fresh(split_with_sizes(input, split_sizes, dim))


def unfold_copy(input, dimension, size, step):
    return _fresh(unfold_windows(input, dimension, size, step))


def as_strided_copy(input, size, stride, storage_offset=None):
    return _fresh(as_strided(input, size, stride, storage_offset))


# torch's unsafe_ forms skip autograd's checks of in-place writes to the views; tnet's views are the same pieces
unsafe_chunk, unsafe_split, unsafe_split_with_sizes = chunk, split, split_with_sizes


def _int_index(name, index):
    check_tensors(name, index=index)
    if index.dtype not in _copy.INDEX_DTYPES:
        raise InputError(f"{name}(): Expected a long tensor for index, but got {index.dtype}")
    return index.memory.reshape(-1)


def _element_error(n):
    return lambda k: f"out of range: tried to access index {k} on a tensor of {n} elements."


def take(input, index):
    """input's elements, as if flattened, at index (int64 or int32 of any shape; negative ones count
    from the end), in index's shape, as torch.take (a gather); IndexError for one out of range."""
    mark = tape_mark()  # torch's node: its one op's
    check_tensors("take", input=input)
    idx = _int_index("take", index)
    y = _take("take", reshape(input, (-1,)), 0, idx, wrap=True, report=_element_error(input.numel()))
    return named("take", mark, reshape(y, index.shape))


def _wrapped(name, index, size, d=0):
    """index (a tnet int tensor) with negative entries counted from the end, checked to lie in
    [0, size) (IndexError, a host read), as a flat torch int64 vector."""
    index = where(lt(index, 0), add(index, size), index) if index.numel() else index
    _check_bounds(name, index, size, d)
    return index.memory.reshape(-1).to(torch.int64)


def put(input, index, source, accumulate=False):
    """torch.put (Tensor.put, out of place): input, seen flattened, with source's elements written at
    index (negative ones from the end; a repeated index keeps one of its values), or added there
    with accumulate (repeated ones sum, in fp32). Gradients: input's g where not overwritten,
    source's g at index."""
    check_args("put", "bool", accumulate=accumulate)
    check_tensors("put", input=input, source=source)
    _int_index("put", index)
    if source.numel() != index.numel():
        raise InputIndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                              f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    idx = _wrapped("put", index, n)
    src = source.memory.reshape(-1)
    if accumulate:
        buf = copy_(torch.empty(input.shape, dtype=torch.float32, device=input.device), input.memory)
        _copy.index_add_(buf.view(-1), copy_(torch.empty(src.shape, device=src.device), src), idx, 0)
        y = copy_(torch.empty(input.shape, dtype=input.dtype, device=input.device), buf)
    else:
        y = copy_(torch.empty(input.shape, dtype=input.dtype, device=input.device), input.memory)
        _copy.put_(y.view(-1), src, idx, 0, None)

    def backward(g):
        gs = _copy.gather_(torch.empty(src.shape, dtype=source.dtype, device=g.device), g.reshape(-1), idx, 0, None)
        gi = g
        if not accumulate:  # g off the overwritten elements
            gi = copy_(torch.empty(g.shape, dtype=g.dtype, device=g.device), g)
            _copy.put_(gi.view(-1), torch.zeros(idx.shape, dtype=g.dtype, device=g.device), idx, 0, None)
        return in_layout(gi, input.memory), gs.view(source.shape)
    return _copy_record("put", (input, source), y, backward, saved=(idx,))


def _index_vector(name, input, dim, index):
    """(dim >= 0, index as a flat torch vector) for index_copy and index_fill: a vector or 0-d
    tensor of int64 or int32."""
    check_tensors(name, input=input, index=index)
    fill = name == "index_fill"  # torch's index_fill checks the index's dtype before dim (IndexError), index_copy after
    d = None if fill else dim_index(dim, input.ndim)
    if index.dtype not in _copy.INDEX_DTYPES:  # torch's index_fill raises IndexError here, its index_copy RuntimeError
        raise (InputIndexError if fill else InputError)(f"{name}(): Expected a long tensor for index, but got {index.dtype}")
    d = dim_index(dim, input.ndim) if fill else d
    if index.ndim > 1:
        raise InputIndexError(f"{name}(): Index should have dimension 1 or 0 (got {index.ndim})")
    return d, index.memory.reshape(-1)


def index_copy(input, dim, index, source):
    """torch.index_copy (out of place): input with its slice index[k] along dim replaced by source's
    slice k (a repeated index keeps one of them); an index out of range (negative ones too) raises
    IndexError. Gradients: input's g off the copied slices, source's g's slices at index."""
    d, idx = _index_vector("index_copy", input, dim, index)
    check_tensors("index_copy", source=source)
    if input.ndim == 0:
        return reshape(index_copy(reshape(input, 1), 0, index, reshape(source, -1)), ())
    shape = list(input.shape)
    shape[d] = idx.shape[0]
    check(source.ndim == input.ndim and list(source.shape) == shape,
          lambda: f"index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: "
                  f"{list(input.shape)} at dim {d} and source slice shape: {list(source.shape)}")
    size = input.shape[d]
    y = copy_(torch.empty(input.shape, dtype=input.dtype, device=input.device), input.memory)
    _copy.put_(y, source.memory, idx, d, lambda k: f"index_copy_(): index {k} is out of bounds for dimension {d} "
                                                   f"with size {size}")

    def backward(g):
        gi = copy_(torch.empty(g.shape, dtype=g.dtype, device=g.device), g)
        _copy.put_(gi, torch.zeros(shape, dtype=g.dtype, device=g.device), idx, d, None)
        gs = _copy.gather_(torch.empty(shape, dtype=source.dtype, device=g.device), g, idx, d, None)
        return in_layout(gi, input.memory), gs

    def graph(g, out):  # the same linear maps of g on the tape
        return index_fill(g, d, Tensor(idx), 0.0), index_select(g, d, Tensor(idx))
    return _copy_record("index_copy", (input, source), y, backward, saved=(idx,), graph=graph)


def index_fill(input, dim, index, value):
    """torch.index_fill (out of place): input with its slices at index along dim (negative ones from
    the end) set to value (a number, or a 0-d tensor, which then gets the sum of their gradient);
    IndexError for an index out of range."""
    mark = tape_mark()  # torch's node: its one op's
    d, idx = _index_vector("index_fill", input, dim, index)
    if isinstance(value, Tensor):
        check(value.ndim == 0, lambda: f"index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                                       f"with {value.ndim} dimension(s).")
        value = to(value, input.dtype)
    else:
        value = Tensor(torch.full((), as_value_of(value, input.dtype), dtype=input.dtype, device=input.device))
    size = input.shape[d] if input.ndim else 1
    mask = torch.zeros(size, dtype=torch.bool, device=input.device)
    _copy.put_(mask, torch.ones(idx.shape, dtype=torch.bool, device=input.device), idx, 0,
               lambda k: f"index {k} is out of bounds for dimension {d} with size {size}", wrap=True)
    mask = mask.view([size if k == d else 1 for k in range(input.ndim)])
    return named("index_fill", mark, where(Tensor(mask), value, input))


def masked_scatter(input, mask, source):
    """torch.masked_scatter (out of place): input and mask (bool) broadcast together, with source's
    first elements written, in row-major order, where mask is True; the mask is read on the host (a
    sync, as x[mask]). Gradients: input's g where mask is False, source's the g of its elements used."""
    check_tensors("masked_scatter", input=input, mask=mask, source=source)
    check(mask.dtype == torch.bool, lambda: f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                                            f"{mask.dtype}")
    shape = _pw.broadcast_shape("masked_scatter", input.shape, mask.shape)
    no_host_read(mask.memory, "masked_scatter")
    positions = np.flatnonzero(np.broadcast_to(mask.memory.cpu().numpy(), shape))
    check(source.numel() >= len(positions), "Number of elements of source < number of ones in mask")
    flat = reshape(expand(input, shape), (-1,))
    out = index_copy(flat, 0, tensor(positions), narrow(reshape(source, (-1,)), 0, 0, len(positions)))
    return reshape(out, shape)


def _scatter_into(name, input, src, make):
    """A copy of input with src written into its view make(copy) (select_scatter & co). Gradients:
    input's g off the view, src's g's view."""
    check_tensors(name, input=input, src=src)
    y = copy_(torch.empty(input.shape, dtype=input.dtype, device=input.device), input.memory)
    part = make(y)
    check(tuple(part.shape) == src.shape, lambda: f"expected src to have a size equal to the slice of self. src size = "
                                                  f"{list(src.shape)}, slice size = {list(part.shape)}")
    copy_(part, src.memory)

    def backward(g):
        gi = copy_(torch.empty(g.shape, dtype=g.dtype, device=g.device), g)
        make(gi).zero_()
        return in_layout(gi, input.memory), copy_(torch.empty(src.shape, dtype=src.dtype, device=g.device), make(g))
    return _copy_record(name, (input, src), y, backward)


def select_scatter(input, src, dim, index):
    """input with src written at input.select(dim, index) (a copy), as torch.select_scatter."""
    return _scatter_into("select_scatter", input, src, lambda t: t.select(dim, index))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """input with src written at its copy's as_strided(size, stride, storage_offset) view (the copy contiguous, its
    offset 0), as torch.as_strided_scatter."""
    return _scatter_into("as_strided_scatter", input, src,
                         lambda t: t.as_strided(tuple(size), tuple(stride), storage_offset or 0))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """input with src written at input[..., start:end:step] along dim (a copy), as torch.slice_scatter."""
    d = dim_index(dim, input.ndim)
    check(step is None or step > 0, "slice step must be positive")  # torch's RuntimeError (indexing's: a ValueError)
    return _scatter_into("slice_scatter", input, src, lambda t: t[(slice(None),) * d + (slice(start, end, step),)])


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with src written on its diagonal (input.diagonal(offset, dim1, dim2)'s layout; a copy), as
    torch.diagonal_scatter."""
    check_args("diagonal_scatter", "int", offset=offset, dim1=dim1, dim2=dim2)
    d1, d2 = dim_index(dim1, input.ndim), dim_index(dim2, input.ndim)
    check(d1 != d2, lambda: f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _scatter_into("diagonal_scatter", input, src, lambda t: _diagonal_view(t, int(offset), d1, d2))


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices over dims dim1 and dim2 (of the result, one dim more than input) with input's last
    dim on their diagonal `offset`, zeros elsewhere, as torch.diag_embed."""
    check_tensors("diag_embed", input=input)
    n = input.ndim + 1
    d1, d2 = dim_index(dim1, n), dim_index(dim2, n)
    check(d1 != d2, lambda: f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size = (input.shape[-1] if input.ndim else 1) + builtins.abs(offset)
    rest = iter(input.shape[:-1])
    shape = [size if k in (d1, d2) else next(rest) for k in range(n)]

    def embedded(x):  # the forward's linear map, of a torch tensor of input's shape
        y = torch.zeros(shape, dtype=x.dtype, device=x.device)
        copy_(_diagonal_view(y, offset, d1, d2), x.reshape(input.shape or (1,)))
        return y
    backward = lambda g: (_diagonal_view(g, offset, d1, d2).reshape(input.shape),)
    return _copy_record("diag_embed", input, embedded(input.memory), backward,
                        graph=linear_graph("diag_embed", backward, embedded))


def diagflat(input, offset=0):
    """The square matrix with input's elements (flattened) on diagonal offset, as torch.diagflat."""
    mark = tape_mark()  # torch's node: the diag_embed it runs
    return named("diag_embed", mark, diag(reshape(input, (-1,)), offset))


def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of a 1-D input's elements (itertools' order), as rows [n, r] (r 0:
    an empty 1-D tensor), as torch.combinations: one index_select."""
    check_tensors("combinations", input=input)
    check_args("combinations", "bool", with_replacement=with_replacement)
    check_args("combinations", "int", r=r)
    check(input.ndim == 1, lambda: f"Expect a 1D vector, but got shape {list(input.shape)}")
    check(r >= 0, lambda: f"Expect a non-negative number, but got {r}")
    if r == 0:
        return Tensor(torch.empty(0, dtype=input.dtype, device=input.device))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return reshape(index_select(input, 0, tensor(rows.reshape(-1))), rows.shape)


def cartesian_prod(*tensors):
    """The rows of every combination of one element from each 1-D tensor ([n0 * n1 * ..., k]; one
    tensor: itself), as torch.cartesian_prod."""
    if len(tensors) == 1:
        check(tensors[0].ndim == 1, "Expect a 1D vector")
        return tensors[0]
    return stack([reshape(g, (-1,)) for g in meshgrid(*tensors, indexing="ij")], 1)


def block_diag(*tensors):
    """The block-diagonal matrix of the tensors (0-d as [1, 1], 1-D as one row), zeros elsewhere, in
    their promoted dtype, as torch.block_diag."""
    for i, x in enumerate(tensors):
        check_tensors("block_diag", **{f"tensors[{i}]": x})
        check(x.ndim <= 2, lambda: f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                                   f"{x.ndim} dimensions")
    blocks = [x.memory.reshape(x.shape if x.ndim == 2 else (1, -1)) for x in tensors]
    dtype = tensors_result_type("block_diag", tensors) if tensors else torch.float32
    rows = builtins.sum(b.shape[0] for b in blocks) if blocks else 1  # none: [1, 0], as torch's
    y = torch.zeros((rows, builtins.sum(b.shape[1] for b in blocks)), dtype=dtype, device=DEVICE)
    corners = np.cumsum([(0, 0)] + [b.shape for b in blocks], axis=0).tolist()
    for b, (i, j) in zip(blocks, corners):
        copy_(y[i:i + b.shape[0], j:j + b.shape[1]], b)

    def backward(g):  # each tensor's block of g, a torch tensor or (on the tape) a tnet one
        return [g[i:i + b.shape[0], j:j + b.shape[1]].reshape(x.shape) for x, b, (i, j) in zip(tensors, blocks, corners)]
    return _copy_record("block_diag", tensors, y, backward, graph=lambda g, out: tuple(backward(g)))


def kron(input, other):
    """The Kronecker product, as torch.kron: the shorter shape padded with leading 1s; block (i, ...)
    of the result is input[i, ...] * other. An element-wise product of interleaved views."""
    check_tensors("kron", input=input, other=other)
    n = builtins.max(input.ndim, other.ndim)
    a, b = (1,) * (n - input.ndim) + input.shape, (1,) * (n - other.ndim) + other.shape
    y = mul(reshape(input, [v for s in a for v in (s, 1)]), reshape(other, [v for s in b for v in (1, s)]))
    return reshape(y, [p * q for p, q in zip(a, b)])


def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim (None: input's first dim of size 3, as torch.cross's
    deprecated default), input and other broadcast; element-wise ops, so both get gradients. torch's
    checks in its order: the dims' count, dim, their lengths of 3, then the broadcast."""
    mark = tape_mark()  # torch's node: its one op's
    check_tensors("cross", input=input, other=other)
    if dim is not None:
        check_args("cross", "int", dim=dim)  # the parser's TypeError before any shape, as torch's
    check(input.ndim == other.ndim, "linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:
        dim = next((k for k, s in enumerate(input.shape) if s == 3), None)
        check(dim is not None, "no dimension of size 3 in input")
    d = dim_index(dim, input.ndim)
    check(input.shape[d] == 3 and other.shape[d] == 3,
          lambda: f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and {other.shape[d]}")
    a, b = broadcast_tensors(input, other)
    check(input.dtype == other.dtype,  # torch's kernels read both as one dtype, at any size
          lambda: f"expected scalar type {DTYPE_NAMES[input.dtype]} but found {DTYPE_NAMES[other.dtype]}")
    x, y = ([narrow(t, d, k, 1) for k in range(3)] for t in (a, b))
    return named("linalg_cross", mark,
                 cat([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]], d))


def broadcast_shapes(*shapes):
    """The torch.Size that tensors of these shapes (ints or sequences) broadcast to."""
    shapes = [(s,) if isinstance(s, numbers.Integral) else tuple(s) for s in shapes]
    return torch.Size(_pw.broadcast_shape("broadcast_shapes", *shapes) if shapes else ())


def diagonal_filled(input, fill_value, wrap=False):
    """input with its main diagonal (of a matrix, or of an n-cube: all dims equal) set to fill_value,
    numpy's fill_diagonal rule (wrap: a tall matrix's diagonal starts again one row below its end):
    Tensor.fill_diagonal_'s values (an index_fill of the flattened input)."""
    _diagonal_checks(input, wrap)
    h, w = input.shape[0], input.shape[-1]
    step = builtins.sum(math.prod(input.shape[k + 1:]) for k in range(input.ndim))
    end = input.numel() if wrap or input.ndim > 2 or h <= w else w * w
    positions = tensor(np.arange(0, end, step, dtype=np.int64))
    return reshape(index_fill(reshape(input, (-1,)), 0, positions, fill_value), input.shape)


def _diagonal_checks(input, wrap):
    check_args("fill_diagonal_", "bool", wrap=wrap)
    check(input.ndim >= 2, "dimensions must larger than 1")
    check(input.ndim == 2 or len(set(input.shape)) == 1, "all dimensions of input must be of equal length")


def diagonal_fill_strided_(self, fill_value, wrap=False):
    """Tensor.fill_diagonal_ of a self that overlaps itself (an expanded tensor, which takes no whole
    write), as torch writes any self: a fill of its diagonal's strided view (the sum of its strides),
    and of the wrapped diagonal below a tall matrix's square (wrap). Not recorded: see the caller."""
    _diagonal_checks(self, wrap)
    value, m = as_value_of(fill_value, self.dtype), self.memory
    h, w = self.shape[0], self.shape[-1]
    n, stride = builtins.min(h, w), builtins.sum(m.stride())
    m.as_strided((n,), (stride,), m.storage_offset()).fill_(value)
    if wrap and self.ndim == 2 and h > w + 1:
        below = (m.numel() + w) // (w + 1) - n  # ceil(numel / (w + 1)) positions, less the square's
        m.as_strided((below,), (stride,), m.storage_offset() + m.stride(0) * (w + 1)).fill_(value)
    return self  # torch's fills counted themselves in its version


def unravel_index(indices, shape):
    """The coordinates in a tensor of `shape` of flat (row-major) indices, a tuple of int64 tensors of
    indices' shape, as torch.unravel_index (an index outside the size wraps around it)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): expected 'indices' to be a tensor, got {type(indices).__name__}")
    if indices.memory.is_floating_point() or indices.dtype == torch.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    check(all(s >= 0 for s in shape), lambda: f"'shape' cannot have negative values, but got {shape}")
    from .pointwise import floor_divide, remainder  # pointwise's integer division
    rest, coords = to(indices, torch.int64), []
    for s in reversed(shape):
        coords.append(remainder(rest, s))
        rest = floor_divide(rest, s)
    return tuple(reversed(coords))


def view_in_place(name, op):
    """Tensor.<name> (squeeze_, t_, ...): self made the view op(self, ...) of its own memory, as torch's,
    counted as an in-place write (a backward that saved self raises, as torch's). With grad, self takes the view's place in the graph (tensor.rebase);
    a leaf that requires grad refuses, as torch's."""
    def method(self, *args, **kwargs):
        recording = is_grad_enabled() and self.requires_grad
        if recording and self._entry is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        before = Tensor(self.memory, self.requires_grad)
        before._entry = self._entry
        mark = tape_mark()
        out = named(_in_place_view_node(name, args, kwargs), mark, op(before, *args, **kwargs))
        self.memory = out.memory
        bump_version(self)
        if recording:
            rebase(self, before, out)
        return self
    method.__name__ = name
    return method


def _in_place_view_node(name, args, kwargs):
    """The node's label of an in-place view (torch's overload: squeeze_() SqueezeBackward3, squeeze_(dim) 4,
    squeeze_(dims) 5)."""
    if name != "squeeze_" or not (args or kwargs):
        return name
    dim = args[0] if args else kwargs.get("dim")
    return "squeeze_dims_inplace" if isinstance(dim, (tuple, list)) else "squeeze_dim_inplace"


def _t_(x):
    if x.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return t(x)


squeeze_, unsqueeze_, t_, transpose_ = (view_in_place(name, op) for name, op in (
    ("squeeze_", squeeze), ("unsqueeze_", unsqueeze), ("t_", _t_), ("transpose_", transpose)))
swapaxes_ = swapdims_ = transpose_


# ---- the tensor surface of the eighth session (ops3): scatter_reduce and index_reduce -----------

_IDENTITY = {"sum": 0.0, "prod": 1.0, "mean": 0.0, "amax": -math.inf, "amin": math.inf}


def _combined(input, positions, values, reduce, include_self):
    """(input's values combined with `values` at the flat `positions` by reduce, in input's dtype;
    mean's counts, or None), torch tensors: an fp32 buffer with one spare element (combine_at_'s),
    sums and counts by atomic adds, products and extremes by compare-and-swap loops."""
    n, m = input.numel(), positions.shape[0]
    acc = torch.empty(n + 1, dtype=torch.float32, device=input.device)
    copy_(acc[:n], input.reshape(-1))
    if not include_self:  # the positions reduced into start from the identity
        _copy.put_(acc[:n], torch.full((m,), _IDENTITY[reduce], device=input.device), positions, name=None)
    values = copy_(torch.empty(m, dtype=torch.float32, device=input.device), values)
    counts = None
    if reduce in ("sum", "mean"):
        _copy.index_add_(acc[:n], values, positions, 0)
    else:
        _copy.combine_at_(acc, values, positions, reduce)
    if reduce == "mean":
        counts = torch.full((n,), 1.0 if include_self else 0.0, device=input.device)
        _copy.index_add_(counts, torch.ones(m, device=input.device), positions, 0)
        counts = _pw.pointwise("clamp", counts, 1.0, math.inf)
        acc = _pw.pointwise("div" if input.is_floating_point() else "floor_divide", acc[:n], counts)
    out = copy_(torch.empty(input.shape, dtype=input.dtype, device=input.device), acc[:n].view(input.shape))
    return out, None if counts is None else counts.view(input.shape)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """torch.scatter_reduce: input with src[c] combined by reduce ("sum", "prod", "mean", "amax" or
    "amin") into input[c with c[dim] = index[c]], for every coordinate c of index; include_self=False
    leaves out input's own values where anything lands (elsewhere they stay). Computed in fp32 (sums
    and counts by atomic adds, products and extremes by compare-and-swap loops: repeated positions in
    no fixed order on the GPU; integers exact below 2^24); mean rounds integers down, as torch's.
    Gradients as torch's formulas (a tie of extremes shares it; products divide out zeros); "max"
    and "min" are amax and amin, as torch takes them."""
    check_type(isinstance(include_self, bool), lambda: f"scatter_reduce(): argument 'include_self' must be bool, "
                                                       f"not {type(include_self).__name__}")
    check_type(isinstance(reduce, str), lambda: f"scatter_reduce(): argument 'reduce' must be str, not {type(reduce).__name__}")
    if reduce in ("max", "min"):
        reduce = "a" + reduce
    check(reduce in _IDENTITY, lambda: f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    check(isinstance(src, Tensor) and src.ndim == index.ndim and all(a >= b for a, b in zip(src.shape, index.shape)),
          lambda: f"scatter_reduce(): src {tuple(getattr(src, 'shape', ()))} must be at least index's "
                  f"{tuple(index.shape)}")
    check(input.dtype == src.dtype, "scatter(): Expected self.dtype to be equal to src.dtype")
    d = dim_index(dim, max(input.ndim, 1))
    positions = reshape(flat_positions("scatter_reduce", input, d, index), (-1,)).memory.contiguous()
    part = src.memory[tuple(slice(0, k) for k in index.shape)]
    out, counts = _combined(input.memory, positions, part.reshape(-1), reduce, include_self)
    if not (is_grad_enabled() and (input.requires_grad or src.requires_grad)):
        return Tensor(out)
    piece = narrowed(src, index.shape)

    def backward(g):
        with no_grad():
            gi, gs = _scatter_reduce_grads(Tensor(g), input, d, index, piece, reduce, include_self, Tensor(out),
                                           counts)
        g_src = None
        if src.requires_grad:
            g_src = torch.zeros(src.shape, dtype=src.dtype, device=src.device)
            copy_(g_src[tuple(slice(0, k) for k in index.shape)], gs.memory)
        return gi.memory if input.requires_grad else None, g_src

    def graph(g, y):  # linear in g with masks and counts held fixed (not "prod", whose gradient reads the values)
        gi, gs = _scatter_reduce_grads(g, input, d, index, piece, reduce, include_self, Tensor(out), counts)
        return gi if input.requires_grad else None, _grown(gs, src.shape) if src.requires_grad else None
    return record("scatter_reduce", out, (input, src), backward, saved=(input, src, index),
                  graph=None if reduce == "prod" else graph)


def narrowed(x, shape):
    """x's leading part of `shape` (a view, no gradient of its own: scatter_reduce's backward reads it)."""
    return Tensor(x.memory[tuple(slice(0, k) for k in shape)])


def _scatter_reduce_grads(g, input, d, index, src, reduce, include_self, result, counts):
    """torch's scatter_reduce_backward, in tnet's ops: (input's gradient, src's), src index's shape."""
    from .pointwise import div, eq, logical_and
    if reduce == "sum":
        g_input, g_src = g, gather(g, d, index)
    elif reduce == "mean":
        g_input = div(g, Tensor(counts))
        g_src = gather(g_input, d, index)
    elif reduce == "prod":
        detached = Tensor(input.memory)
        masked_self = where(eq(detached, 0), 1.0, detached)
        g_input = div(mul(g, scatter_reduce(masked_self, d, index, src, "prod", include_self=include_self)), masked_self)
        src_zero = eq(src, 0)
        zeros = scatter_add(Tensor(torch.zeros_like(input.memory)), d, index, to(src_zero, input.dtype))
        single_zero = logical_and(src_zero, eq(gather(zeros, d, index), 1))
        masked_src_result = scatter_reduce(detached, d, index, where(single_zero, 1.0, src), "prod",
                                           include_self=include_self)
        g_src = where(single_zero, gather(mul(g, masked_src_result), d, index),
                      div(gather(mul(g, result), d, index), where(src_zero, 1.0, src)))
    else:  # amax, amin: a tie shares the gradient evenly
        self_is_result = to(eq(Tensor(input.memory), result), input.dtype)
        src_is_result = to(eq(src, gather(result, d, index)), input.dtype)
        shared = div(g, scatter_add(self_is_result, d, index, src_is_result))
        g_input, g_src = mul(self_is_result, shared), mul(src_is_result, gather(shared, d, index))
    if not include_self:
        g_input = scatter(g_input, d, index, 0.0)
    return g_input, g_src


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """torch.index_reduce: source's slice k along dim combined by reduce ("prod", "mean", "amax" or
    "amin") into input's slice index[k] (index a vector of int64 or int32): scatter_reduce with the
    index broadcast over the slices, with its gradients."""
    check_args("index_reduce", "str", reduce=reduce)
    check_args("index_reduce", "bool", include_self=include_self)
    check(reduce in ("prod", "mean", "amax", "amin"),
          lambda: f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    check_tensors("index_reduce", input=input, index=index, source=source)
    check(index.dtype in _copy.INDEX_DTYPES and index.ndim <= 1,
          lambda: "index_reduce_(): Index is supposed to be a vector")
    d = dim_index(dim, max(input.ndim, 1))
    check(input.ndim == source.ndim and source.shape[d:d + 1] == (index.numel(),) and
          all(a == b for k, (a, b) in enumerate(zip(input.shape, source.shape)) if k != d),
          lambda: f"index_reduce(): source {tuple(source.shape)} must be input {tuple(input.shape)} with "
                  f"{index.numel()} elements at dim {d}")
    along = [1] * source.ndim
    along[d] = -1
    spread = expand(reshape(index, tuple(along)), source.shape) if source.ndim else reshape(index, ())
    return scatter_reduce(input, d, contiguous(spread), source, reduce, include_self=include_self)


# ---- the tensor surface of the eighth session (ops3): strided views and resizing -------------

def _storage_positions(shape, strides, offset):
    """The storage positions of the elements of a view, in row-major order (a host int64 vector)."""
    return (_off_dim_offsets(shape, strides, -1) + offset).reshape(-1)


def as_strided(input, size, stride, storage_offset=None):
    """torch.as_strided: a view of input's storage with these sizes, strides and offset (input's own
    offset by default), in elements of the storage, as torch's. Its gradient adds g at each element's
    storage position (overlapping elements sum) and reads input's elements from there, as torch's
    as_strided_backward."""
    check_tensors("as_strided", input=input)
    memory = input.memory
    offset = memory.storage_offset() if storage_offset is None else storage_offset
    view = memory.as_strided(tuple(size), tuple(stride), offset)

    def backward(g):
        inside = _storage_positions(input.shape, memory.stride(), memory.storage_offset())
        outside = _storage_positions(view.shape, view.stride(), offset)
        buf = torch.zeros(1 + builtins.max(inside.max(initial=0), outside.max(initial=0)), dtype=torch.float32,
                          device=g.device)
        _copy.index_add_(buf, g.reshape(-1), torch.from_numpy(outside).to(g.device), 0)
        out = torch.empty(input.numel(), dtype=input.dtype, device=g.device)
        return (_copy.gather_(out, buf, torch.from_numpy(inside).to(g.device), 0, name=None).view(input.shape),)
    return record("as_strided", view, (input,), backward)


as_strided_ = view_in_place("as_strided_", as_strided)


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Tensor.set_: self made, in place, a tensor over source's memory (a tnet Tensor: its view; a torch
    storage: storage_offset, size and stride into it, as torch's), or over no memory (source None). A tensor
    that requires grad refuses: a leaf as torch's, any other as tnet's tape cannot follow the swap."""
    if self.requires_grad and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation."
                           if self._entry is None else "set_: tnet does not record set_ on a tensor that requires grad")
    if source is None:
        self.memory.set_()
    elif isinstance(source, Tensor):
        self.memory.set_(source.memory)
    else:
        self.memory.set_(source, storage_offset, size, () if stride is None else stride)
    self._shape_of = None  # Tensor.shape's cache holds the old shape
    bump_version(self)
    return self


def resize_as(self, tensor, memory_format=None):
    """Tensor.resize_as (torch's deprecated out-of-place form): self reshaped to tensor's shape, of as many
    elements (torch's autograd Resize), with torch's deprecation warning."""
    warnings.warn("non-inplace resize_as is deprecated")
    check(self.numel() == tensor.numel(),
          lambda: f"requested resize to {'x'.join(map(str, tensor.shape))} ({tensor.numel()} elements in total), but "
                  f"the given tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                  f"autograd's resize can only change the shape of a given tensor, while preserving the number of "
                  f"elements. ")
    return reshape(self, tuple(tensor.shape))


def resize_(self, *sizes, memory_format=None):
    """Tensor.resize_: self's memory resized in place by torch (its elements kept in order up to the
    new size, those past it uninitialised); a tensor that requires grad refuses, as torch's."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    self.memory.resize_(shape_args(sizes), memory_format=memory_format)
    self._shape_of = None  # Tensor.shape's cache holds the old shape
    return self


def resize_as_(self, the_template, memory_format=None):
    """Tensor.resize_as_: resize_ to the_template's shape."""
    return resize_(self, the_template.shape, memory_format=memory_format)
