"""tnet.Tensor and the tape.

Each differentiable op calls `record(...)`, which gives its output a tape entry: the next
sequence number, the inputs, and the backward closure written beside the op's forward.
`backward()` takes the part of the tape that the output depends on and walks it in
reverse sequence order, then frees each entry's saved state. Version counters, as torch's:
each tensor's `_version` (its storage's, so shared with its views) counts the in-place writes
to it; an entry keeps the versions of the tensors its backward reads (record's saved=), and
backward raises torch's RuntimeError if one changed since. tnet's in-place writers that torch
does not see (Triton kernels: optimizer steps, Lookahead) call bump_version. An in-place op on a
tensor in the graph (functional/inplace.py) gives the Tensor object a new entry (torch's rebase):
its identity before the write is kept in `_past`, and an entry recorded earlier reads that one. A gradient has its tensor's
dtype (float32, float16 or bfloat16): where an op of mixed dtypes hands back another, the
tape casts it, as torch's engine does.
"""
import functools
import inspect
import itertools
import numbers
import operator

import numpy as np
import torch

from . import tensor_str
from ._device import DEVICE

_ON_GPU = DEVICE.type == "cuda"
from .kernels.launch import InputError, InputTypeError, is_channels_last, memory_format, no_host_read
from .kernels.copy import add_into, copy_
from .kernels.pointwise import add_, pointwise

_seq = itertools.count()
_grad_enabled = [True]
_backward_timer = [None]


def set_backward_timer(timer):
    """timer(op, run) is called around every backward closure (op is the op's name, run()
    computes and returns the gradients); None switches it off. For per-layer profiles."""
    _backward_timer[0] = timer


class _GradMode:
    """A block (with, or a decorator: each call runs in it) in which ops record on the tape or
    not, as torch's grad-mode managers: the mode is set on entering and the previous one restored
    after."""
    mode = False

    def __enter__(self):
        self.previous, _grad_enabled[0] = _grad_enabled[0], self.mode

    def __exit__(self, *exc):
        _grad_enabled[0] = self.previous

    def __call__(self, fn):
        mode = self.mode
        return _decorated(fn, lambda: _block(mode))


def _decorated(fn, block):
    """fn run within a fresh block() at each call, as torch's grad-mode decorators; a generator function's
    generator within one at each resumption (a sampler that yields its steps under @no_grad()), the caller's mode
    in between."""
    if not inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with block():
                return fn(*args, **kwargs)
        return run

    @functools.wraps(fn)
    def resumed(*args, **kwargs):
        with block():
            gen = fn(*args, **kwargs)
        try:
            with block():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with block():
                        gen.close()
                    raise
                except BaseException as e:
                    with block():
                        response = gen.throw(e)
                else:
                    with block():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return resumed


def _block(mode):
    block = _GradMode()
    block.mode = mode
    return block


class _NoArguments(_GradMode):
    """A grad-mode manager that also decorates without parentheses (@no_grad), as torch's."""

    def __new__(cls, fn=None):
        block = super().__new__(cls)
        return block if fn is None else block(fn)


class no_grad(_NoArguments):
    """Within this block ops record nothing on the tape."""


class enable_grad(_NoArguments):
    """Within this block ops record on the tape again (inside no_grad, say)."""
    mode = True


_inference = [False]  # whether an inference_mode(True) block is open (is_inference_mode_enabled)
_inference_made = [False]  # whether an inference tensor was ever made: record checks saved tensors only then


class inference_mode(_GradMode):
    """torch's inference_mode: no_grad (mode True), and every tensor made inside is an inference
    tensor (is_inference()), which, as torch's, an op recorded outside may not save for its backward
    (RuntimeError) and which may not be made to require grad outside; its clone() outside is a
    normal tensor. Unlike torch's, an in-place write to one outside the block is allowed, a view made
    inside of a normal tensor is an inference tensor, and one made outside of an inference tensor is
    a normal tensor (so that `inference_output[:, :2]` may be saved, where torch raises)."""

    def __new__(cls, mode=True):
        """inference_mode(), inference_mode(False), and a bare @inference_mode decorating fn, as torch's."""
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode=True):
        self.mode = not mode

    def __enter__(self):
        super().__enter__()
        self.was, _inference[0] = _inference[0], not self.mode

    def __exit__(self, *exc):
        _inference[0] = self.was
        super().__exit__(*exc)

    def __call__(self, fn):
        mode = not self.mode
        return _decorated(fn, lambda: inference_mode(mode))


def is_inference_mode_enabled():
    """Whether an inference_mode block is open, as torch's."""
    return _inference[0]


class set_grad_enabled(_GradMode):
    """Whether ops record on the tape (mode True) or not, from this call on, as torch's: alone,
    `set_grad_enabled(False)` switches recording off; as a block or a decorator the previous mode
    comes back after."""

    def __init__(self, mode):
        self.previous, self.mode = _grad_enabled[0], bool(mode)
        _grad_enabled[0] = self.mode

    def __enter__(self):
        pass  # already set by the call

    def __call__(self, fn):
        _grad_enabled[0] = self.previous  # a decorator changes nothing until its function runs
        return super().__call__(fn)


class _Entry:
    __slots__ = ("seq", "op", "inputs", "backward", "saved", "graph", "saves_nothing", "numbers", "freed_node")

    def __init__(self, op, inputs, backward, saved, graph=None, saves_nothing=False):
        self.numbers = ()  # the operand positions that held Python numbers (or None), where the op records them
        self.freed_node = None  # (name, edges) once free() dropped the inputs
        self.seq = next(_seq)
        self.op = op
        self.inputs = inputs
        self.backward = backward
        self.saved = saved
        self.graph = graph
        self.saves_nothing = saves_nothing

    def free(self):
        """Drop what the backward closures saved, after a backward that does not retain the graph;
        an entry that saves nothing stays usable (record's saves_nothing), as torch's nodes that
        saved no tensor."""
        if not self.saves_nothing:
            # torch's freed node keeps its class and edges (grad_fn and next_functions after a backward): the name
            # of an op named by its inputs, and where each input led
            ends = []  # _kept_end(_edge_of(x)) of each input, inlined: this runs for every entry of every backward
            for x in self.inputs:
                end = x._entry
                if end is None:
                    ends.append(x if x._requires_grad else None)
                else:
                    ends.append(_kept_end(end) if end.saves_nothing and end.inputs else end)
            self.freed_node = (_node_name(self) if self.op in _NAMED_BY_INPUTS else None, ends)
            self.backward = self.graph = None
            self.inputs = self.saved = ()

    def check_versions(self):
        """torch's error where a tensor this backward reads was written in place since the forward."""
        for i, (t, version) in enumerate(self.saved):
            if t._version != version:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t.dtype}, {list(t.shape)}] (saved tensor {i} of {self.op}) is at version "
                    f"{t._version}; expected version {version} instead.")


_NODE_CLASSES = {}  # a subclass of Node per name, as torch's node classes (type(y.grad_fn).__name__, torchviz reads it)


class Node:
    """What Tensor.grad_fn returns: a tape entry seen as torch's graph node (name(),
    next_functions); leaves that require grad show as AccumulateGrad nodes. Each is an instance of
    a subclass named as torch's class (MulBackward0, AccumulateGrad)."""
    __slots__ = ("_entry", "variable")

    def __new__(cls, entry, variable=None):
        if cls is Node:
            name = _node_name(entry).split("::")[-1]
            cls = _NODE_CLASSES.get(name) or _NODE_CLASSES.setdefault(name, type(name, (Node,), {"__slots__": ()}))
        return object.__new__(cls)

    def __init__(self, entry, variable=None):
        self._entry, self.variable = entry, variable

    def name(self):
        return _node_name(self._entry)

    @property
    def next_functions(self):
        if self._entry is None:
            return ()
        freed = self._entry.freed_node
        ends = freed[1] if freed is not None else tuple(map(_edge_of, self._entry.inputs))
        if self._entry.op == "linear":  # torch's addmm(b, x, w.t()) or mm(x, w.t()): the bias first, w transposed
            x, w, *b = ends
            ends = (*b, x, None if w is None else _inner_node("t", (w,)))
        elif self._entry.op == "reshape" and ends[0] is not None and self.name() == "UnsafeViewBackward0":
            ends = (_inner_node("clone", ends),)  # torch's reshape that cannot view: a copy, then its _unsafe_view
        edges = [(None if end is None else Node(end) if isinstance(end, _Entry) else Node(None, end), 0)
                 for end in ends]
        if self.name() in _SCALAR_OPERAND_NODES:
            for i in self._entry.numbers:  # torch wraps the Python number as a tensor operand, an edge to no node
                edges.insert(i, (None, 0))
        return tuple(edges)

    def __eq__(self, other):
        return isinstance(other, Node) and self._entry is other._entry and self.variable is other.variable

    def __hash__(self):
        return hash((id(self._entry), id(self.variable)))

    def __repr__(self):
        return f"<{type(self).__name__} object>"


# torch's nodes whose Python-number operand (`c + 1`, `2 * b`, `where(m, x, 0.)`) torch wraps as a tensor, or whose
# absent optional tensor (clamp's other bound) torch passes as an undefined one: their next_functions keep its slot
# as (None, 0)
_SCALAR_OPERAND_NODES = {"AddBackward0", "SubBackward0", "MulBackward0", "DivBackward0", "DivBackward2",
                         "WhereBackward0", "IndexPutBackward0", "ClampBackward0"}


# torch's node class where a tnet op's name is not torch's: torch's composite ops end in another aten op, whose
# node a script's printed loss or output shows (`grad_fn=<NllLossBackward0>`, `<AddmmBackward0>`); an op of several
# overloads records which one it ran (sum over dims: "sum_dim", torch's sum.dim_IntList, SumBackward1)
_TORCH_NODE_NAMES = {"cross_entropy": "NllLossBackward0", "contiguous": "CloneBackward0", "to": "ToCopyBackward0",
                     "narrow": "SliceBackward0", "max_pool2d": "MaxPool2DWithIndicesBackward0",
                     "avg_pool2d": "AvgPool2DBackward0", "logsigmoid": "LogSigmoidBackward0",
                     "batch_norm": "NativeBatchNormBackward0", "sum_dim": "SumBackward1", "mean_dim": "MeanBackward1",
                     "prod_dim": "ProdBackward1", "max_all": "MaxBackward1", "min_all": "MinBackward1",
                     "squeeze_dim": "SqueezeBackward1", "squeeze_dims": "SqueezeBackward2", "clamp": "ClampBackward1",
                     "clamp_tensors": "ClampBackward0", "clamp_min_tensors": "ClampMinBackward1",
                     "clamp_max_tensors": "ClampMaxBackward1", "rsub_number": "RsubBackward1",
                     "pow_tensors": "PowBackward1", "pow_number_base": "PowBackward2",
                     "circular_pad": "torch::autograd::CopySlices", "div_rounded": "DivBackward2",
                     "cross_entropy_smoothed": "AddBackward0",
                     "div_number": "DivBackward1", "norm_dim": "NormBackward1",
                     "masked_fill_tensor": "MaskedFillBackward1", "lerp_tensor": "LerpBackward1",
                     # torch has no derivative of floor_divide: its node is NotImplemented (tnet's gives 0)
                     "floor_divide": "torch::autograd::NotImplemented",
                     # scaled_dot_product_attention's fused node of other ranks than 4 (torch's math path)
                     "sdpa_mm": "MmBackward0", "sdpa_bmm": "BmmBackward0", "sdpa_view": "UnsafeViewBackward0",
                     # two-operand ops by overload (pointwise._overload's labels)
                     "fmod_tensors": "FmodBackward1", "remainder_tensors": "RemainderBackward1",
                     "remainder_number_input": "RemainderBackward0", "copysign": "CopysignBackward1",
                     "copysign_tensors": "CopysignBackward0", "xlogy_tensors": "XlogyBackward0",
                     "xlogy_number_input": "XlogyBackward1", "xlogy": "XlogyBackward2",
                     # a write through a view of a tensor, and setitem's basic indexing: torch's CopySlices node
                     "copy_slices": "torch::autograd::CopySlices", "setitem": "torch::autograd::CopySlices",
                     **dict.fromkeys(("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                                      "conv_transpose3d"), "ConvolutionBackward0")}


# torch's nodes of the in-place ops whose class differs from their out-of-place op's (leaky_relu_'s
# LeakyReluBackward1: its backward reads the result), by the in-place op's name; and the in-place views' overloads
INPLACE_NODE_NAMES = {**dict.fromkeys(("elu_", "selu_"), "EluBackward1"), "celu_": "CeluBackward1",
                      "leaky_relu_": "LeakyReluBackward1", "threshold_": "ThresholdBackward1",
                      **dict.fromkeys(("acosh_", "arccosh_"), "AcoshBackward1"),
                      **dict.fromkeys(("asinh_", "arcsinh_"), "AsinhBackward1"),
                      **dict.fromkeys(("atanh_", "arctanh_"), "AtanhBackward1"),
                      "unsqueeze_": "UnsqueezeBackward1", "t_": "TBackward1", "transpose_": "TransposeBackward1",
                      "squeeze_": "SqueezeBackward3", "squeeze_dim_inplace": "SqueezeBackward4",
                      "squeeze_dims_inplace": "SqueezeBackward5"}
_TORCH_NODE_NAMES.update(INPLACE_NODE_NAMES)


def _inner_node(op, ends):
    """An entry standing for a node of torch's graph that tnet's tape has not (linear's transpose of its weight):
    op's node, its edges to ends."""
    entry = _Entry(op, (), None, ())
    entry.freed_node = (None, tuple(ends))
    return entry


def _kept_end(end):
    """end as a freed node keeps it: an entry that saves nothing (a view's) keeps its inputs, and with them their
    memory, so it is kept as an inner node of its name and edges, which holds no tensor but a leaf's."""
    if isinstance(end, _Entry) and end.saves_nothing and end.inputs:
        entry = _inner_node(end.op, (_kept_end(_edge_of(x)) for x in end.inputs))
        entry.freed_node = (_node_name(end) if end.op in _NAMED_BY_INPUTS else None, entry.freed_node[1])
        entry.numbers = end.numbers
        return entry
    return end


def _edge_of(x):
    """Where a node's edge to its input x leads: x's entry, x itself where it is a leaf that requires grad (its
    AccumulateGrad node), else None."""
    return x._entry if x._entry is not None else x if x.requires_grad else None


_NAMED_BY_INPUTS = ("linear", "matmul", "reshape")  # ops whose node _node_name names by their inputs


def _node_name(entry):
    """torch's name of a node: its backward class's, AccumulateGrad's for a leaf (entry None). linear, matmul and
    reshape are named by their inputs (while the entry holds them), as torch's: addmm, mm or bmm of matrices, a view
    otherwise (of a copy where reshape's input is not contiguous)."""
    if entry is None:
        return "torch::autograd::AccumulateGrad"
    op, inputs = entry.op, entry.inputs
    if entry.freed_node is not None and entry.freed_node[0] is not None:
        return entry.freed_node[0]
    if op == "linear" and inputs:
        return ("AddmmBackward0" if len(inputs) == 3 else "MmBackward0") if inputs[0].ndim == 2 else \
            "ViewBackward0" if len(inputs) == 3 else "UnsafeViewBackward0"
    if op == "matmul" and len(inputs) == 2:
        return {(2, 2): "MmBackward0", (3, 3): "BmmBackward0"}.get((inputs[0].ndim, inputs[1].ndim), "UnsafeViewBackward0")
    if op == "reshape" and inputs:
        return "ViewBackward0" if inputs[0].is_contiguous() else "UnsafeViewBackward0"
    if op in _TORCH_NODE_NAMES:
        return _TORCH_NODE_NAMES[op]
    # torch's class names title-case each word of the aten name: a letter after a digit too (log1p: Log1PBackward0,
    # upsample_nearest2d: UpsampleNearest2DBackward0); a namespace's dot is one more word (linalg.qr: LinalgQrBackward0)
    if op.endswith("Backward"):
        return op
    return "".join(w.title() for w in op.replace(".", "_").split("_")) + "Backward0"


def named(op, mark, out):
    """out, its node named op where the tnet ops that compose op recorded it after mark (tape_mark() at op's start):
    torch's node for the op where torch's is one op and tnet's a composite (torch's tril is TrilBackward0, tnet's
    a where), so that a printed grad_fn reads as torch's. An output those ops did not record (an input returned
    as it is, a result off the tape) keeps its node, and so does a write's as_strided or copy_slices node, which
    the in-place ops find by name."""
    entry = out._entry
    if entry is not None and entry.seq > mark and entry.op not in ("as_strided", "copy_slices"):
        entry.op = op
    return out


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch's print options for tensors' repr: profile "default", "short" or "full" first, then
    each option given; sci_mode True or False forces scientific notation or suppresses it (None:
    by the values, as torch)."""
    if profile is not None:
        tensor_str.OPTIONS.update(tensor_str.PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            tensor_str.OPTIONS[name] = value
    tensor_str.OPTIONS["sci_mode"] = sci_mode


def memory_of(x):
    """The torch tensor behind x: a tnet Tensor's memory, or x itself where it is a torch tensor."""
    return x.memory if isinstance(x, Tensor) else x


def bump_version(*tensors):
    """Count an in-place write that torch did not see (a Triton kernel's) to these tnet or torch
    tensors, so that the tape's version check catches it."""
    torch.autograd.graph.increment_version([memory_of(t) for t in tensors])


def _ragged(data):
    """torch.tensor's error for nested lists that are not rectangular: the sizes are the first elements' at each
    depth; a shorter or longer list is a ValueError naming its dim, a number where a list belongs or a list where a
    number belongs a TypeError."""
    shape, first = [], data
    while isinstance(first, (list, tuple)):
        shape.append(len(first))
        first = first[0] if first else None

    def walk(v, dim):
        if dim == len(shape):
            if isinstance(v, (list, tuple)):
                raise TypeError(f"must be real number, not {type(v).__name__}")
            return
        if not isinstance(v, (list, tuple)):
            raise TypeError("not a sequence")
        if len(v) != shape[dim]:
            raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(v)})")
        for item in v:
            walk(item, dim + 1)
    try:
        walk(data, 0)
    except (TypeError, ValueError) as e:
        return e
    return ValueError("tensor: data must be a rectangular (nested) list of numbers")


def as_storage(data, dtype=None):
    """A torch tensor on tnet's device from a numpy array, torch tensor, list or number: float16, bfloat16, bool
    and uint8 data (images) as they are (torch's), int64 for other integers, float32 otherwise (unless dtype says)."""
    if isinstance(data, Tensor):
        data = data.memory
    if not isinstance(data, torch.Tensor):
        if isinstance(data, (list, tuple)) and _holds_tensor(data):
            data = _tensors_as_scalars(data)
        try:
            array = np.array(data)
        except ValueError:  # ragged nested lists
            raise _ragged(data) from None
        if array.dtype == object or array.dtype.kind in "USV":
            array = _numbers_or_refuse(data)
        data = torch.from_numpy(array)
    if data.is_complex():
        raise TypeError(f"tensor: complex data is not supported by tnet, got {data.dtype}")
    if dtype is None:
        dtype = (data.dtype if data.dtype in (torch.float16, torch.bfloat16, torch.bool, torch.uint8)
                 else torch.float32 if data.is_floating_point() else torch.int64)
    dtype = check_dtype("tensor", dtype)
    return data.to(device=DEVICE, dtype=dtype, copy=True).contiguous()


def _numbers_or_refuse(data):
    """What numpy made an object or string array of, as torch.tensor takes it: numbers beyond int64 beside a float
    as float64, else torch's error (a script's collate may catch the ValueError of a list of strings and keep
    them as a list): an integer beyond int64 ValueError, another object than a number or a string anywhere
    RuntimeError, else a list whose first element is a string ValueError, else (a string after a number, bytes)
    TypeError, as a numpy array of strings or objects."""
    if isinstance(data, np.ndarray):
        raise TypeError(f"can't convert np.ndarray of type numpy.{data.dtype.type.__name__}. The only supported types "
                        "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
                        "uint32, uint16, uint8, and bool.")
    leaves = []
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        else:
            leaves.append(x)
    for x in leaves:
        if not isinstance(x, (str, bytes, numbers.Number, np.generic)):
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
    if all(isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, (str, bytes)) for x in leaves):
        if any(isinstance(x, (float, np.floating)) for x in leaves):
            return np.array(data, dtype=np.float64)
        raise ValueError("Overflow when unpacking long long")
    if isinstance(leaves[0], str) and leaves[0] is not data:
        raise ValueError("too many dimensions 'str'")
    odd = next(x for x in leaves if isinstance(x, (str, bytes)))
    raise TypeError(f"new(): invalid data type '{type(odd).__name__}'")


def _holds_tensor(data):
    """Whether a (nested) list or tuple holds a tnet or torch tensor anywhere (by the elements' types, a set made at
    C speed: a long list of numbers costs little)."""
    kinds = set(map(type, data))
    if any(issubclass(k, (Tensor, torch.Tensor)) for k in kinds):
        return True
    return any(issubclass(k, (list, tuple)) for k in kinds) and \
        any(_holds_tensor(x) for x in data if isinstance(x, (list, tuple)))


def _tensors_as_scalars(data):
    """data with each tensor inside it as its one value (a numpy scalar of its dtype: bfloat16's as float32), as
    torch.tensor reads a tensor inside a list: a number, so that `torch.tensor(preds)` of (1,)-shaped batch
    predictions is 1-d; a tensor of several elements raises torch's ValueError."""
    if isinstance(data, (list, tuple)):
        return [_tensors_as_scalars(x) for x in data]
    if not isinstance(data, (Tensor, torch.Tensor)):
        return data
    t = memory_of(data).detach()
    if t.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    t = t.reshape(()).cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()[()]


PYTHON_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


def as_dtype(dtype):
    """torch's argument parser's dtype: Python's bool, int, float and complex stand for torch.bool, torch.int64,
    torch.float64 and torch.complex128 (`torch.zeros(n, dtype=bool)`, `x.to(int)`); anything else as it is."""
    return PYTHON_DTYPES.get(dtype, dtype) if isinstance(dtype, type) else dtype


def check_dtype(name, dtype):
    """The torch.dtype that dtype names (as_dtype); TypeError for a dtype that no tnet kernel computes in (float64,
    complex), at a tensor's making, not at its first op; torch's TypeError for what is no dtype."""
    dtype = as_dtype(dtype)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{name}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    if dtype == torch.float64 or dtype.is_complex:
        raise TypeError(f"{name}: tnet has no {dtype} kernels (float32, float16, bfloat16); use torch.float32")
    return dtype


_backward_callbacks = []  # queue_callback's, run once at the end of the backward under way or the next


def queue_callback(fn):
    """Run fn() once, when the backward under way (else the next one) has finished: torch's
    Variable._execution_engine.queue_callback (tnet.distributed's data parallelism waits there)."""
    _backward_callbacks.append(fn)


def _run_callbacks():
    while _backward_callbacks:
        _backward_callbacks.pop(0)()


class RemovableHandle:
    """torch.utils.hooks.RemovableHandle, what the register_*hook methods return: the hook's key `id`
    in hooks_dict (a new one per handle, from one counter, as torch's), remove() takes it away there
    and in extra_dict (a dict or a list of dicts); a context manager that removes it on exit
    (`with layer.register_forward_hook(fn): model(x)`)."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict = hooks_dict
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dicts = [extra_dict] if isinstance(extra_dict, dict) else list(extra_dict or ())

    def remove(self):
        for hooks in (self.hooks_dict, *self.extra_dicts):
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(owner, attribute, hook, prepend=False):
    """hook kept in owner's dict `attribute` (made on first use), in the order added (prepend: before
    those already there, in the same dict, which the handles hold); returns its RemovableHandle."""
    hooks = owner.__dict__.setdefault(attribute, {})
    handle = RemovableHandle(hooks)
    rest = dict(hooks) if prepend else {}
    if prepend:
        hooks.clear()
    hooks[handle.id] = hook
    hooks.update(rest)
    return handle


def hooks_of(owner, attribute):
    """The hooks add_hook kept in owner's dict `attribute`, in order, as a list (a hook may remove itself, or
    add another, while they run); none where there is no such dict."""
    return list(owner.__dict__.get(attribute, {}).values())


def _hooked_grad(t, g):
    """g (a torch tensor, t's gradient) through t's register_hook hooks, in order: each may return
    a replacement (a tnet or torch tensor) or None."""
    for hook in list(t.__dict__["_hooks"].values()):
        out = hook(Tensor(g))
        if out is not None:
            g = memory_of(out)
    return g


def _legacy_memory(data, second, sizes):
    """torch's legacy constructor, torch.Tensor(...): sizes (ints, or a torch.Size) give an
    uninitialised float32 tensor, nothing an empty one, a sequence or array a float32 copy (a tnet
    Tensor: Tensor.__init__'s alias)."""
    if data is None:
        return torch.empty(0, device=DEVICE)
    if isinstance(data, int) and not isinstance(data, bool):
        sizes = (data, *(() if second is False else (second,)), *sizes)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in sizes):
            raise TypeError(f"Tensor(): expected sizes (ints), got {sizes}")
        return torch.empty(sizes, device=DEVICE)
    if isinstance(data, torch.Size):
        return torch.empty(data, device=DEVICE)
    if isinstance(data, (list, tuple, np.ndarray)):
        return as_storage(data, torch.float32)
    raise TypeError(f"Tensor(): expected a tensor, sizes or a sequence of data, got "
                    f"{type(data).__name__}")


class Tensor:
    """A torch tensor used as device memory, plus what autograd needs. Its differentiable
    operators and methods (arithmetic, views, casts, indexing, reductions) are bound in one place,
    tnet/functional/__init__.py, each a call of the op of the same name. Tensor(memory) holds the
    torch tensor given, or on a GPU a device copy of a host one (torch's Tensor(t) would share it)."""

    # numpy's operators defer to the tensor's, as to torch's: `np.log(c) * x` (a numpy scalar, as
    # RepDistiller's VIDLoss writes) is a Tensor on the tape, not a float64 array of x's values
    __array_priority__ = 1000
    _is_inference = False  # made in an inference_mode block (is_inference)
    _entry = None  # the tape entry that made this tensor (None: a leaf)
    # torch's _base: the tensor whose memory this view's was made from by a view op (a view of a view: the first
    # base), None for a tensor that is no view (detach() and .data are none, as torch's); set by record (view_base)
    _base = None

    def __init__(self, memory=None, requires_grad=False, *sizes):
        source = None
        if type(memory) is torch.Tensor or isinstance(memory, torch.Tensor):  # every op's output: first
            if _ON_GPU and not memory.is_cuda:  # a host tensor handed in: tnet's kernels read a device copy
                memory = memory.to(DEVICE)
        elif isinstance(memory, Tensor):  # torch.Tensor(t): an alias of t, its gradient flowing to t, as torch's
            source, memory, requires_grad = memory, memory.memory, False
        else:
            memory, requires_grad = _legacy_memory(memory, requires_grad, sizes), False
        self.memory = memory  # the torch tensor: tnet's kernels read and write it
        self._requires_grad = requires_grad  # a new tensor is a leaf: no setter check
        if _inference[0]:  # made in an inference_mode block (the class's False otherwise)
            self._is_inference = _inference_made[0] = True
        self._entry = None
        self._shape_of = None  # the storage whose shape self._shape holds
        if source is not None and _grad_enabled[0] and source._requires_grad:
            self._requires_grad = True
            self._entry = _Entry("alias", (source,), lambda g: (g,), [], lambda g, y: (g,), saves_nothing=True)

    @property
    def shape(self):
        """The shape as a torch.Size (a tuple, as torch's: `x.shape.numel()`, its repr), kept until
        .memory is replaced (every op reads it, often several times: building a torch.Size costs
        several times a lookup). tnet never reshapes a storage in place; a torch call that does so
        on .memory (resize_, unsqueeze_) is not seen here."""
        memory = self.memory
        if memory is not self._shape_of:
            self._shape, self._shape_of = memory.shape, memory
        return self._shape

    @property
    def data(self):
        """torch's .data: a tensor on the same memory that autograd does not see (no gradient, and
        its in-place writes are not counted in this tensor's _version, as torch's)."""
        return Tensor(self.memory.data)

    @data.setter
    def data(self, value):
        """x.data = t, as torch's: x then holds t's memory and dtype (a tnet.Tensor's, or a torch
        tensor's: a copy on tnet's device where it is elsewhere)."""
        if isinstance(value, Tensor):
            value = value.memory
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"Tensor.data: expected a tnet.Tensor, got {type(value).__name__}")
        self.memory = value if value.device == DEVICE else value.to(DEVICE)

    dtype = property(lambda self: self.memory.dtype)
    device = property(lambda self: self.memory.device)
    ndim = property(lambda self: self.memory.dim())
    _version = property(lambda self: self.memory._version, doc="in-place writes so far (shared with views), as torch's")

    def numel(self):
        return self.memory.numel()

    nelement = numel

    # memory facts, as torch's: a channels-last activation (a convolution's output) shows its NHWC
    # strides, so is_contiguous() is False where torch's NCHW tensor says True
    def stride(self, dim=None):
        return self.memory.stride() if dim is None else self.memory.stride(dim_index(dim, self.ndim))

    def is_contiguous(self, memory_format=torch.contiguous_format):
        return self.memory.is_contiguous(memory_format=memory_format)

    def storage_offset(self):
        return self.memory.storage_offset()

    def data_ptr(self):
        return self.memory.data_ptr()

    def element_size(self):
        return self.memory.element_size()

    def __array__(self, dtype=None, copy=None):
        """numpy's view of the host copy (np.asarray(x)), as torch's."""
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A numpy ufunc's result on a tensor (`np.exp(x)`, `np.sqrt(loss)`) as a new tensor, as torch's
        (in tnet's dtypes: float64 becomes float32; a bool result stays bool, where torch's is uint8)."""
        return Tensor(as_storage(array))

    def __dlpack__(self, **kwargs):
        """The DLPack capsule of the memory (np.from_dlpack(x), JAX's and cupy's), shared, as torch's: refused for a
        tensor that requires grad."""
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self.memory.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.memory.__dlpack_device__()

    def numpy(self, *, force=False):
        """The values as a numpy array on the host (a copy where tnet's device is a GPU); force is
        torch's (detach and copy first), which tnet's always does."""
        no_host_read(self.memory, "Tensor.numpy()")
        return self.memory.detach().cpu().numpy()

    def item(self):
        no_host_read(self.memory, "Tensor.item()")
        return self.memory.item()

    def size(self, dim=None):
        """torch.Size of the shape, or the size of one dim."""
        return self.memory.size() if dim is None else self.shape[dim_index(dim, self.ndim)]

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        """The sub-tensors along dim 0 (views: unbind's, as torch's); a 0-d tensor raises TypeError."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __reversed__(self):
        """reversed(t): t flipped along dim 0 (a copy; a 0-d tensor itself), as torch's (torchmetrics' curves)."""
        return self if self.ndim == 0 else self.flip(0)

    def __bool__(self):
        """True or False for a one-element tensor (a host sync); RuntimeError otherwise, as torch's."""
        no_host_read(self.memory, "bool(tensor)")
        return bool(self.memory)

    def __float__(self):
        no_host_read(self.memory, "float(tensor)")
        return float(self.memory)  # a one-element check and a host sync, as torch's

    def __format__(self, spec):  # f"{acc:.2f}" of a 0-d tensor formats its value, as torch's
        return format(self.item(), spec) if self.ndim == 0 else object.__format__(self, spec)

    def __int__(self):
        no_host_read(self.memory, "int(tensor)")
        return int(self.memory)

    def __index__(self):
        """An integer (or bool) tensor of one element as an int, so that lst[t] and range(t) take it: a
        host read, as torch's."""
        if self.memory.is_floating_point() or self.memory.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        no_host_read(self.memory, "operator.index(tensor)")
        return int(self.memory)

    def tolist(self):
        no_host_read(self.memory, "Tensor.tolist()")
        return self.memory.tolist()

    def detach(self):
        return Tensor(self.memory)

    def detach_(self):
        """Make this tensor a leaf that requires no grad, in place (a hidden state cut from its
        history between batches); returns self."""
        self._entry, self.requires_grad = None, False
        return self

    def __repr__(self):
        """torch's repr (tnet/tensor_str.py): `tensor([...], device='cuda:0', grad_fn=<MulBackward0>)`."""
        no_host_read(self.memory, "Tensor.__repr__")
        memory = self.memory.detach()
        # numpy has no bfloat16: its values, exactly, in float32
        values = memory.cpu().float().numpy() if memory.dtype == torch.bfloat16 else memory.cpu().numpy()
        grad_fn = None if self._entry is None else Node(self._entry).name()
        return tensor_str.tensor_repr(values, memory.dtype, memory.device, grad_fn, self.requires_grad)

    is_leaf = property(lambda self: self._entry is None, doc="made by no recorded op (a parameter, an input), as torch's")
    _grad_value = None  # .grad's storage (the class's None until a gradient is set)

    @property
    def grad(self):
        return self._grad_value

    @grad.setter
    def grad(self, g):
        """`x.grad = g`: None or a tnet tensor of x's shape, as torch checks it (TypeError for another type,
        RuntimeError for another size); the dtype is not checked (torch's grad_dtype check is not kept)."""
        if g is not None:
            if not isinstance(g, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(g).__name__}")
            if g.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(g.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the "
                                   "same size")
        self._grad_value = g

    _grad = property(lambda self: self.grad, lambda self, g: setattr(self, "grad", g),
                     doc="torch's private name of .grad, which scripts set (A3C's shared_param._grad = param.grad)")
    grad_fn = property(lambda self: None if self._entry is None else Node(self._entry),
                       doc="the node of the op that made this tensor (None for a leaf), as torch's")

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, requires_grad):
        """`x.requires_grad = flag` on a leaf; a recorded tensor (a non-leaf) takes neither flag, as torch's
        (its requires_grad_(True) is allowed); a leaf takes it as requires_grad_'s (an integer tensor refuses True)."""
        if self._entry is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables." + (
                "" if requires_grad else " If you want to use a computed variable in a subgraph that doesn't require "
                                         "differentiation use var_no_grad = var.detach()."))
        self.requires_grad_(requires_grad)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on a leaf, in place; returns self. A non-leaf can't drop it, as torch."""
        if not isinstance(requires_grad, bool):  # torch's parser's TypeError (no truthiness)
            raise InputTypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                                 f"{type(requires_grad).__name__}")
        if self._entry is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and self._is_inference and not _inference[0]:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if requires_grad and not (self.memory.is_floating_point() or self.memory.is_complex()):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    def retain_grad(self):
        """Keep this non-leaf's gradient in .grad after backward (summed over backwards), as torch's;
        a leaf keeps it anyway."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._entry is not None:
            self._retains_grad = True

    retains_grad = property(lambda self: "_retains_grad" in self.__dict__)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(self) each time a backward has accumulated a gradient into this leaf's .grad (once, the
        parts of a parameter used twice summed first), as torch's; returns a handle whose remove() takes it away."""
        if self._entry is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return add_hook(self, "_grad_hooks", hook)

    def register_hook(self, hook):
        """hook(grad) each time a gradient with respect to this tensor is computed, before it is
        used (passed on, or accumulated into a leaf's .grad); a returned tensor replaces it, as
        torch's. Returns a handle whose remove() takes it away."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return add_hook(self, "_hooks", hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) * gradient into every leaf's .grad that requires it, as torch's
        (gradient: any array, cast to self's dtype; omitted for a one-element self: ones). The graph
        is freed after, unless retain_graph. inputs: the leaves to accumulate into, the others are
        left alone. create_graph=True records the backward itself (higher-order gradients) through the
        ops tnet.autograd.grad's docstring lists."""
        run_backward((self,), (gradient,), retain_graph, create_graph, inputs, accumulate=True)



def _seed(t, g):
    """The gradient that starts a backward at t: g as t's dtype, or ones for a one-element t."""
    if not t.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    if g is None:
        if t.memory.numel() != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs, this tensor is {t.shape}")
        return torch.ones_like(t.memory)
    g = as_storage(g, t.dtype)
    if tuple(g.shape) != t.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {tuple(g.shape)} and output has a "
                           f"shape of {t.shape}")
    return g


backward_checks = []  # check(node, grads) for each backward node's gradients: autograd's anomaly mode puts one here


class Piece:
    """A gradient that is zero but in one view of it: a slicing op's (a narrow, select or split piece's) g, at
    make(gradient) of its input's gradient. The tape adds it into the gradient it holds for that input already, in
    place where the tape made that buffer (one launch over the piece, where the full gradient took a zeroed buffer,
    a copy and an add over the whole input), and makes the full gradient (full()) wherever else."""
    __slots__ = ("g", "make", "like")

    def __init__(self, g, make, like):
        self.g, self.make, self.like = g, make, like  # like: the input's memory, whose shape and layout it has

    @property
    def shape(self):
        return self.like.shape

    @property
    def dtype(self):
        return self.like.dtype

    def full(self):
        gx = empty_in_layout(self.like).zero_()
        copy_(self.make(gx), self.g)
        return gx


def _full(g):
    return g.full() if type(g) is Piece else g


def run_backward(roots, seeds, retain_graph=None, create_graph=False, inputs=None, accumulate=True):
    """The tape's backward from roots (tensors) with their seeds (gradients, None for ones). With
    accumulate, each leaf's gradient goes into its .grad (only the leaves among inputs, where
    given); else the gradients of inputs (leaves or not) are returned, in inputs' order (None where
    no path reaches one), and no .grad changes, as torch.autograd.grad. create_graph: the
    backward runs each entry's graph function (record's graph=) with grad mode on, so that the
    gradients, tnet Tensors, are themselves on the tape (higher-order gradients); an op without
    one raises NotImplementedError. The graph is kept then unless retain_graph is False, as torch's."""
    if create_graph:
        return _graph_backward(roots, seeds, retain_graph is not False, inputs, accumulate)
    grads = {}
    for t, g in zip(roots, seeds):
        g = _seed(t, g)
        grads[id(t)] = g if id(t) not in grads else pointwise("add", grads[id(t)], g)
    wanted = None if inputs is None else {id(x): x for x in inputs}
    captured = {}

    def arrive(x, g):
        """x's gradient g, complete (a leaf's: one more part of it; a Piece of it)."""
        if wanted is not None and id(x) in wanted and not accumulate:
            g = _full(g)
            if x._entry is None and "_hooks" in x.__dict__:  # a leaf's hooks, as torch.autograd.grad runs them
                g = _hooked_grad(x, g)
            captured[id(x)] = g if id(x) not in captured else pointwise("add", captured[id(x)], in_layout(g, captured[id(x)]))
        elif accumulate and (x._entry is None if wanted is None else id(x) in wanted):
            _accumulate_leaf(x, g)  # a leaf's .grad, or (backward(inputs=)) any given tensor's

    for t in roots:
        if t._entry is None and id(t) in grads:  # a leaf root: its own gradient is the seed
            arrive(t, grads.pop(id(t)))
    tape, held = _tape(roots)

    def hold(x, gx):
        _hold(held, x, _full(gx), lambda a, b: pointwise("add", a, in_layout(b, a)), arrive)

    owned = set()  # the inputs whose gradient in grads is a buffer the tape made, which it may add into in place
    for t in tape:
        g = grads.pop(id(t), None)
        entry = t._entry
        if entry.backward is None:
            _freed()
        if g is None and held:
            _none_from(entry, held, hold)
        if g is not None:
            entry.check_versions()
            g = in_layout(g, t.memory)
            if "_hooks" in t.__dict__:
                g = in_layout(_hooked_grad(t, g), t.memory)
            if accumulate and ("_retains_grad" in t.__dict__ or wanted is not None and id(t) in wanted):
                # retain_grad() or backward(inputs=) naming t: a copy, as the tape passes g on, added once
                # (either alone, or both: torch's .grad gets g once), after t's hooks ran (once)
                if t.grad is None:
                    t.grad = Tensor(g.clone())
                else:
                    add_(t.grad.memory, g)
            elif wanted is not None and id(t) in wanted:
                arrive(t, g)
            timer = _backward_timer[0]
            gxs = entry.backward(g) if timer is None else timer(entry.op, lambda: entry.backward(g))
            if backward_checks:
                gxs = [None if gx is None else _full(gx) for gx in gxs]
                for check_grads in backward_checks:
                    check_grads(Node(entry), gxs)
            for x, gx in zip(entry.inputs, gxs):
                if gx is None or not x._requires_grad:
                    if gx is None and x._requires_grad and id(x) in held:
                        hold(x, None)
                    continue
                if "_stale_after" in x.__dict__:
                    _check_fresh(x, entry)
                assert gx.shape == x.shape, f"gradient {tuple(gx.shape)} for input {x.shape}"
                if gx.dtype != x.dtype:
                    gx = copy_(empty_in_layout(x.memory), _full(gx))
                if x._entry is None:
                    (hold if id(x) in held else arrive)(x, gx)
                elif id(x) not in grads:
                    grads[id(x)] = _full(gx)
                    if type(gx) is Piece:
                        owned.add(id(x))
                    else:
                        owned.discard(id(x))
                elif type(gx) is Piece:  # into the tape's own buffer (made one, from a copy, where it holds a view)
                    if id(x) not in owned:
                        grads[id(x)] = copy_(empty_in_layout(x.memory), grads[id(x)])
                        owned.add(id(x))
                    add_into(gx.make(grads[id(x)]), gx.g)
                else:  # used twice: a fresh buffer, as either may be a view
                    grads[id(x)] = pointwise("add", grads[id(x)], in_layout(gx, grads[id(x)]))
                    owned.add(id(x))
        if not retain_graph:
            entry.free()
    _run_callbacks()
    if not accumulate:
        return [captured.get(id(x)) for x in inputs]


def _hold(held, x, gx, add, arrive):
    """One of held leaf x's gradient parts (None: an input slot whose entry gave none; _tape's held), summed by
    add; the sum arrives (arrive(x, sum)) with the last part."""
    part = held[id(x)]
    part[0] -= 1
    if gx is not None:
        part[1] = gx if part[1] is None else add(part[1], gx)
    if part[0] == 0 and part[1] is not None:
        arrive(x, part[1])


def _none_from(entry, held, hold):
    """An entry that the backward does not reach gives its held leaves no part: each counts as arrived."""
    for x in entry.inputs:
        if x._requires_grad and id(x) in held:
            hold(x, None)


def _check_fresh(x, entry):
    """RuntimeError where entry read x after a view of x was written in place with grad and x, itself
    a strided view, was not rebased with it (a dense base is: inplace._copy_slices), so that x's node
    misses the write (torch rebases every base)."""
    if entry.seq > x.__dict__["_stale_after"]:
        raise RuntimeError(f"backward: {entry.op} read a tensor after a view of it was modified by an inplace "
                           f"operation; tnet rebases the view and a dense base, not a strided one: read the view "
                           f"or the dense base, or write out of place")


def _freed():
    raise RuntimeError("Trying to backward through the graph a second time (or directly access saved tensors "
                       "after they have already been freed); specify retain_graph=True the first time")


def _tape(roots):
    """The tensors made by the part of the tape the roots depend on, latest entry first (found
    without recursion), and the held leaves: {id(x): [its parts to come, their sum so far]} of each
    leaf with hooks (register_hook's, post-accumulate ones) that more than one input slot of those
    entries reads. Such a leaf's gradient arrives once, summed over its uses (_hold), and its hooks
    run once, on the sum, as torch's AccumulateGrad's; other leaves take each part as it comes (no
    gradient is held back longer than it must be)."""
    entries, stack, seen = [], list(roots), set()
    stale, last_use = [], {}  # views whose base was written after them; each tensor's latest reader on the tape
    uses = {}  # the input slots that read each leaf with hooks
    while stack:
        t = stack.pop()
        if t._entry is not None and id(t) not in seen:
            seen.add(id(t))
            entries.append(t)
            if _rebased[0]:
                t._entry.inputs = _inputs_then(t, t._entry, stale)
            for x in t._entry.inputs:  # a loop, not a generator: every entry of every backward
                if x._requires_grad:
                    stack.append(x)
                    last_use[id(x)] = max(last_use.get(id(x), -1), t._entry.seq)
                    if x._entry is None and ("_hooks" in x.__dict__ or "_grad_hooks" in x.__dict__):
                        uses[id(x)] = uses.get(id(x), 0) + 1
    if stale:  # a view of a stale view (a.t().t(), a.view(6).view(2, 3)) made before the write is stale too
        written_under = {id(t): written for t, written in stale}
        for t in sorted(entries, key=lambda t: t._entry.seq):
            past = t.__dict__.get("_past")
            if past and past[-1][0] == t._entry.seq:  # an in-place write's result (its memory, no view of it)
                continue
            for x in t._entry.inputs:
                written = written_under.get(id(x))
                if written is not None and t._entry.seq < written and memory_root(t.memory) is memory_root(x.memory):
                    written_under[id(t)] = written
                    stale.append((t, written))
    for t, written in stale:  # read after its base's write: its values changed under it (see _inputs_then)
        if last_use.get(id(t), -1) > written:
            raise RuntimeError(f"backward: a view ({t._entry.op}) of a tensor that was later modified by an inplace "
                               f"operation was read after the write; tnet does not rebase views: take the view after "
                               f"the in-place op")
    held = {key: [n, None] for key, n in uses.items() if n > 1}
    return sorted(entries, key=lambda t: t._entry.seq, reverse=True), held


def _graph_sum(a, b):
    """a + b of two gradients (tnet Tensors), on the tape: tensor.py cannot import functional's add."""
    return record("add", pointwise("add", a.memory, b.memory), (a, b), lambda g: (g, g.view(g.shape)),
                  graph=lambda g, y: (g, g))


def _graph_cast(g, dtype):
    """g (a tnet Tensor) cast to dtype, on the tape."""
    from_dtype = g.dtype
    return record("to", copy_(torch.empty_like(g.memory, dtype=dtype), g.memory), (g,),
                  lambda h: (copy_(torch.empty_like(h, dtype=from_dtype), h),),
                  graph=lambda h, y: (_graph_cast(h, from_dtype),))


def _graph_in_layout(g, like):
    """g (a tnet Tensor) with its memory in_layout of like, as run_backward hands each entry its gradient (the
    kernels take dense operands; a sum's seed is an expanded one): a copy on the tape where the layout differs."""
    memory = in_layout(g.memory, like)
    if memory is g.memory:
        return g
    return record("contiguous", memory, (g,), lambda h: (h,), graph=lambda h, y: (h,))


def _graph_seed(t, g):
    """run_backward's seed under create_graph: a tnet Tensor (a given one kept, so that gradients
    flow to it too)."""
    if isinstance(g, Tensor) and g.requires_grad:
        if not t.requires_grad:
            _seed(t, None)
        if g.shape != t.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {g.shape} and output has a "
                               f"shape of {t.shape}")
        return g if g.dtype == t.dtype else _graph_cast(g, t.dtype)
    return Tensor(_seed(t, g))


def _graph_backward(roots, seeds, retain_graph, inputs, accumulate):
    """run_backward with create_graph: the same walk, each entry's graph function run on tnet
    Tensors with grad mode on, parts of one gradient summed on the tape; a leaf's .grad becomes
    (or has added) its gradient, which holds its graph, as torch's."""
    with _block(True):
        grads = {}
        for t, g in zip(roots, seeds):
            g = _graph_seed(t, g)
            grads[id(t)] = g if id(t) not in grads else _graph_sum(grads[id(t)], g)
        wanted = None if inputs is None else {id(x): x for x in inputs}
        captured = {}

        def arrive(x, g):
            if wanted is not None and id(x) in wanted and not accumulate:
                g = _graph_hooks(x, g) if x._entry is None else g
                captured[id(x)] = g if id(x) not in captured else _graph_sum(captured[id(x)], g)
            elif accumulate and (x._entry is None if wanted is None else id(x) in wanted):
                g = _graph_hooks(x, g)
                x.grad = g if x.grad is None else _graph_sum(x.grad, g)
                for hook in hooks_of(x, "_grad_hooks"):
                    hook(x)

        for t in roots:
            if t._entry is None and id(t) in grads:
                arrive(t, grads.pop(id(t)))
        tape, held = _tape(roots)

        def hold(x, gx):
            _hold(held, x, gx, _graph_sum, arrive)

        for t in tape:
            g = grads.pop(id(t), None)
            entry = t._entry
            if entry.backward is None:
                _freed()
            if g is None and held:
                _none_from(entry, held, hold)
            if g is not None:
                if entry.graph is None:
                    raise NotImplementedError(f"create_graph through {entry.op} is not supported (tnet's "
                                              f"higher-order gradients cover the ops its docs list)")
                entry.check_versions()
                g = _graph_in_layout(_graph_hooks(t, g), t.memory)
                if accumulate and ("_retains_grad" in t.__dict__ or wanted is not None and id(t) in wanted):
                    t.grad = g if t.grad is None else _graph_sum(t.grad, g)  # once, hooks run: as run_backward
                elif wanted is not None and id(t) in wanted:
                    arrive(t, g)
                gxs = entry.graph(g, t)
                for check_grads in backward_checks:
                    check_grads(Node(entry), gxs)
                for x, gx in zip(entry.inputs, gxs):
                    if gx is None or not x._requires_grad:
                        if gx is None and x._requires_grad and id(x) in held:
                            hold(x, None)
                        continue
                    if "_stale_after" in x.__dict__:
                        _check_fresh(x, entry)
                    assert gx.shape == x.shape, f"gradient {gx.shape} for input {x.shape} ({entry.op})"
                    if gx.dtype != x.dtype:
                        gx = _graph_cast(gx, x.dtype)
                    if x._entry is None:
                        (hold if id(x) in held else arrive)(x, gx)
                    else:
                        grads[id(x)] = gx if id(x) not in grads else _graph_sum(grads[id(x)], gx)
            if not retain_graph:
                entry.free()
    _run_callbacks()
    if not accumulate:
        return [captured.get(id(x)) for x in inputs]


def _graph_hooks(t, g):
    """g (a tnet Tensor, t's gradient) through t's register_hook hooks."""
    for hook in hooks_of(t, "_hooks"):
        out = hook(g)
        if out is not None:
            g = out if isinstance(out, Tensor) else Tensor(out)
    return g


def memory_root(data):
    """The torch tensor whose memory data views (data itself when it is no view): two tensors
    share memory where their roots are one."""
    return data if data._base is None else data._base


_rebased = [False]  # whether any tensor was ever rebased: until then backward skips _inputs_then


def _inputs_then(t, entry, stale):
    """entry's inputs (entry is t's) as they were when it was recorded: a tensor that an in-place
    op rebased since is its identity of then (_past). t viewing such a tensor goes into stale, with
    the write's seq: read after the write, its values changed under it, and tnet does not rebase views
    (_tape raises), but read before it only (VoxelMorph's `x[:, i] = f(x[:, i])`) its gradient is its
    base's of then, as torch's; the view ops that made a view written in place read their base's past
    (_views_through, inplace._copy_slices)."""
    for x in entry.inputs:  # the common case: no input was ever rebased
        if "_past" in x.__dict__:
            break
    else:
        return entry.inputs
    inputs = list(entry.inputs)
    for i, x in enumerate(inputs):
        for seq, old in x.__dict__.get("_past", ()):
            if seq > entry.seq:
                if memory_root(old.memory) is memory_root(t.memory) and id(entry) not in old.__dict__.get(
                        "_views_through", ()):  # the written view's own view ops may read the base's past
                    stale.append((t, seq))
                inputs[i] = old
                break
    return tuple(inputs)


def rebase(t, old, out):
    """t, just written in place by an op recorded as out (whose inputs hold old, t's identity
    before the write), takes out's place in the graph, as torch's rebase_history: entries
    recorded before read old instead (_inputs_then)."""
    t.__dict__.setdefault("_past", []).append((out._entry.seq, old))
    _rebased[0] = True
    t._entry, t._requires_grad = out._entry, True


def in_layout(g, like):
    """g, contiguous in the memory layout (NCHW or channels-last) of `like`, the tensor it is
    the gradient of: kernels take their operands in one layout, and ops such as reshape or
    a user's seed hand back NCHW. A copy only where the layouts differ."""
    if g.is_contiguous():
        if like.is_contiguous():  # the common case, in two calls: NCHW already
            return g
    elif g.is_contiguous(memory_format=torch.channels_last) and g.stride() == like.stride():
        return g  # channels-last both (strides equal to a dense g's are a dense layout's)
    return g.contiguous(memory_format=memory_format(is_channels_last(like)))  # g itself if already so


def as_int(v):
    """v as a Python int where torch's argument parser takes it for one: an integer (or bool) tensor of one element
    or a numpy integer, through __index__ (a host read: YOLOX's topk(k=dynamic_ks[i]), torch.zeros(n, 4) of a count
    n = mask.sum()); anything else as it is, for the caller's own type check (a float tensor, as torch's, is no int)."""
    if type(v) is int or not isinstance(v, (Tensor, np.integer)):
        return v
    try:
        return operator.index(v)
    except TypeError:
        return v


def dim_index(dim, ndim):
    """dim in [0, ndim), from torch's range [-ndim, ndim) (a 0-d tensor takes 0 and -1); an integer tensor of one
    element is taken for the int, as torch's parser takes it."""
    dim = as_int(dim)
    top = max(ndim, 1)
    if dim is None or isinstance(dim, str):  # torch 2.13's parser raises TypeError, 2.11's dimension names RuntimeError
        raise InputTypeError(f"dim must be an int, got {dim!r}")
    if not isinstance(dim, numbers.Integral):
        raise TypeError(f"dim must be an int, got {dim!r}")
    if not -top <= dim < top:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-top}, {top - 1}], but got {dim})")
    return dim % top


def empty_in_layout(x):
    """An uninitialised tensor shaped like x, contiguous in x's layout (NCHW or channels-last),
    as the tape keeps gradients."""
    return torch.empty_like(x, memory_format=memory_format(is_channels_last(x)))


def _accumulate_leaf(x, g):
    if type(g) is Piece and x._grad_value is not None and "_hooks" not in x.__dict__:
        add_into(g.make(x._grad_value.memory), g.g)  # into .grad in place, as add_ below
    else:
        g = _full(g)
        if "_hooks" in x.__dict__:
            g = _hooked_grad(x, g)
        g = in_layout(g, x.memory)
        if x._grad_value is None:  # set past .grad's checks: the tape's gradient has x's shape
            x._grad_value = Tensor(g.clone() if g._base is not None else g)
        else:
            add_(x._grad_value.memory, g)
    hooks = x.__dict__.get("_grad_hooks")
    if hooks:
        for hook in list(hooks.values()):
            hook(x)


def tape_mark():
    """A number below every tape entry recorded after this call, above every one before (their seq)."""
    return next(_seq)


def record(op, data, inputs, backward, saved=(), graph=None, saves_nothing=False):
    """Wrap the output of op (its name); put it on the tape when grad is on and an input
    requires it. saved: the tensors (tnet or torch; None and numbers skipped) that backward reads, whose
    versions backward checks; only those, so that an in-place write to anything else is allowed.
    graph: graph(g, y), the same input gradients as backward's, computed from g and y (tnet Tensors:
    the output's gradient and the output) with tnet's differentiable ops, so that a backward with
    create_graph=True records them; None where the op has none (create_graph through it raises).
    saves_nothing: backward reads g and shapes only (add, sub, neg, the views: slicing, reshape, expand), so that a backward which frees
    the graph leaves this entry usable, as torch leaves a node that saved no tensor: MAML's fast
    weights `w - lr * g` are passed again by the query loss's backward after autograd.grad freed the
    support loss's graph."""
    out = Tensor(data)
    if data._base is not None:  # a view's memory, or a kernel's output laid out in a buffer of its own
        out._base = view_base(data, inputs)
    if _grad_enabled[0] and any_requires_grad(inputs):
        out._requires_grad = True  # out is new: no setter check
        if _inference_made[0]:
            _check_not_inference(inputs, saved)
        versions = []
        for t in saved:
            t = t.memory if isinstance(t, Tensor) else t
            if isinstance(t, torch.Tensor):
                versions.append((t, t._version))
        out._entry = _Entry(op, tuple(inputs), backward, versions, graph, saves_nothing)
    return out


def view_base(data, inputs):
    """torch's _base of an op's output data: the input whose memory data views, or that input's own base (x[1:][0]'s
    is x); data that is an input's own memory stands for that input (its base). None where data views no input's
    memory (a kernel's output, channels-last say, that views a buffer the kernel allocated)."""
    root = data._base
    for x in inputs:
        if memory_root(x.memory) is root:
            return x._base if x._base is not None or x.memory is data else x
    return None


def record_composed(op, data, inputs, grads, saved):
    """record() of an op whose input gradients grads(g) are written in tnet's ops (g a tnet Tensor; a
    sequence of Tensors out, None for an input that needs none): off the tape for the backward, on it for
    create_graph's."""
    def backward(g):
        with no_grad():
            return [None if t is None else t.memory for t in grads(Tensor(g))]
    return record(op, data, inputs, backward, saved=saved, graph=lambda g, out: grads(g))


def record_outputs(op, datas, inputs, backward, saved=(), graph=None):
    """record() of an op of several outputs whose backward takes all their gradients at once (an LSTM cell's h'
    and c'), as torch's one node of several outputs: a hub entry, recorded first, holds backward; each output's
    own entry (named op too) hands its gradient to the hub and passes the hub an empty one, so that the hub runs
    once, after every output's entry, as autograd.Function's outputs do. backward(gs) and graph(gs, outs) take
    each output's gradient in order, None where none came (torch tensors, or tnet Tensors for graph=, with the
    output Tensors); they return the inputs' gradients as record's. Returns the output Tensors."""
    if not (_grad_enabled[0] and any_requires_grad(inputs)):
        return tuple(Tensor(data) for data in datas)
    grads, graph_grads = [None] * len(datas), [None] * len(datas)

    def hub_backward(_):
        gs, grads[:] = list(grads), [None] * len(datas)
        return backward(gs)

    def hub_graph(_, __):
        gs, graph_grads[:] = list(graph_grads), [None] * len(datas)
        return graph(gs, outs)
    hub = record(op, torch.empty(0, device=DEVICE), inputs, hub_backward, saved,
                 graph=None if graph is None else hub_graph)

    def pass_on(i, g, kept):
        kept[i] = g
        return (hub.memory,)
    outs = tuple(record(op, data, (hub,), lambda g, i=i: pass_on(i, g, grads),
                        graph=None if graph is None else lambda g, y, i=i: (Tensor(pass_on(i, g, graph_grads)[0]),))
                 for i, data in enumerate(datas))
    return outs


def _check_not_inference(inputs, saved):
    """torch's RuntimeError where a recorded op's backward would read (saved) an inference tensor:
    one of saved, or an input whose memory is saved."""
    saved_ids = {id(t) for t in saved}
    for x in (*inputs, *saved):
        if isinstance(x, Tensor) and x._is_inference and (id(x) in saved_ids or id(x.memory) in saved_ids):
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                "mode in computation tracked by autograd. To work around this, you can make a clone to get a normal "
                "tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


def linear_graph(op, backward, adjoint):
    """record's graph= for a one-input op whose input gradient backward(g) (torch tensors in and out,
    a tuple) is linear in g and does not depend on the input's values (pooling, padding, resampling,
    a selection, a mask): backward(g) recorded as an op whose own gradient is adjoint(h), the op's
    linear map (its forward without any constant term) applied to h."""
    return lambda g, y: (record(op + "_backward", backward(g.memory)[0], (g,), lambda h: (adjoint(h),)),)


def any_requires_grad(inputs):
    """any(x.requires_grad for x in inputs), as a loop: every recorded op asks."""
    for x in inputs:
        if x._requires_grad:  # the property's own field: every recorded op asks
            return True
    return False


def is_tnets_device(device):
    """Whether device (a torch.device, a string, an index or None) names tnet's one device (a CUDA
    GPU, or the CPU under Triton's interpreter). "cpu" names it too, as `x.cpu()` returns x: a
    script that makes or moves some tensors to the host (`device="cpu"`, `.to("cpu")` before
    `.numpy()`) ports, its tensors staying on tnet's device."""
    return device is None or torch.device(device).type in (DEVICE.type, "cpu")


def check_device(name, device):
    """device must name tnet's one device (is_tnets_device); another (a GPU without one, "meta")
    raises InputError."""
    if not is_tnets_device(device):
        raise InputError(f"{name}: tnet keeps tensors on {DEVICE}, got device={device}")


def check_factory_device(name, device):
    """A factory's or a layer's device=: tnet's device, or "meta", where torch gives tensors of shape and dtype
    without data, to be given values later (a model built on the meta device, then to_empty and reset_parameters or
    a checkpoint; a custom layer's torch.empty(..., **factory_kwargs), as torch's own layers allocate). tnet has no
    meta tensors, so these are allocated on its device (is_meta False), as under `with tnet.device("meta")`, which
    tnet's allocations do not see; another device raises as check_device."""
    if device is None or torch.device(device).type != "meta":
        check_device(name, device)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A tnet.Tensor from a numpy array, torch tensor, list or number, as torch.tensor: float32 by
    default, float16, bfloat16 and uint8 data keep their dtype, other integers become int64 (pin_memory is accepted:
    the copy goes to tnet's device)."""
    check_device("tensor", device)
    t = Tensor(as_storage(data, dtype), requires_grad=requires_grad)
    if requires_grad and not t.memory.is_floating_point():
        raise InputError(f"tensor: only floating-point tensors can require grad, got {t.dtype}")
    return t


def is_grad_enabled():
    return _grad_enabled[0]


def gate(tensors, on_grads):
    """Tensors on the same memory as `tensors` (which require grad) whose gradients pass the tape
    together: once all have come, on_grads(grads, graph) gets them (in order; None for one the backward
    did not reach) and returns those to pass on (None: none): torch tensors, or under create_graph
    (graph True) tnet Tensors that carry their graph. A module's backward hooks stand there. The first
    tensor's entry takes all of them as inputs; each other's stashes its gradient and sends the first a
    zero one, so that the first's entry, recorded earlier, runs last. So an unused first tensor shows a
    zero gradient, not None."""
    if not tensors or not _grad_enabled[0]:
        return tuple(tensors)
    stash = {}

    def first_backward(g, graph=False):
        stash[0] = g
        return tuple(on_grads(tuple(stash.get(i) for i in range(len(tensors))), graph))
    first = record("backward_hook", tensors[0].memory, tuple(tensors), first_backward,
                   graph=lambda g, y: first_backward(g, graph=True))

    def other(i, t):
        def backward(g):
            stash[i] = g
            return None, torch.zeros_like(first.memory)
        return record("backward_hook", t.memory, (t, first), backward,
                      graph=lambda g, y: (None, Tensor(backward(g)[1])))
    return (first, *[other(i, t) for i, t in enumerate(tensors) if i > 0])
