"""torch.autograd.Function: an op whose forward and backward the user writes (with tnet's ops)."""
import numpy as np
import torch

from ..functional.pointwise import sum_to
from ..functional.reduce import sum_to_size
from ..tensor import Tensor, is_grad_enabled, no_grad, rebase, record_outputs

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]


class FunctionCtx:
    """The ctx a Function's forward and backward share, as torch's: save_for_backward /
    saved_tensors, needs_input_grad, mark_dirty, mark_non_differentiable, set_materialize_grads, and
    any attribute the forward sets."""

    def __init__(self, needs_input_grad=()):
        self.needs_input_grad = needs_input_grad
        self.to_save, self.dirty_tensors, self.non_differentiable = (), (), ()
        self.materialize_grads = True
        self._versions = None

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save tensors or None, got {type(t).__name__}")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        """The saved tensors; RuntimeError where one was written in place since the forward, as
        torch's."""
        if self._versions is None:
            return self.to_save
        for i, (t, version) in enumerate(zip(self.to_save, self._versions)):
            if t is not None and t._version != version:
                raise RuntimeError(f"one of the variables needed for gradient computation has been modified by an "
                                   f"inplace operation: [{t.dtype}, {list(t.shape)}] (saved tensor {i}) is at "
                                   f"version {t._version}; expected version {version} instead.")
        return self.to_save

    saved_variables = saved_tensors  # torch's deprecated name

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


def once_differentiable(fn):
    """torch's decorator for a backward that is not itself differentiable: fn, marked so that create_graph
    through its Function raises (torch's raises once the first-order gradients are differentiated)."""
    fn._once_differentiable = True
    return fn


class Function:
    """torch.autograd.Function: subclass it with static forward(ctx, *args) and backward(ctx,
    *grad_outputs) (or forward(*args) plus setup_context(ctx, inputs, output)), and call
    Cls.apply(*args). forward runs without recording; its tensor outputs get one node on the tape
    whose backward calls Cls.backward with a gradient per output (zeros for one that got none,
    unless ctx.set_materialize_grads(False)) and takes one gradient (or None) per forward argument.
    A gradient of a broadcastable shape is summed to its input's, as torch's. With create_graph, backward
    runs with grad mode on, so that its ops are recorded (higher-order gradients through it, where they
    support create_graph; not with @once_differentiable). Not supported: jvp, vmap."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx(tuple(isinstance(a, Tensor) and a.requires_grad for a in args))
        with no_grad():
            if cls.setup_context is not Function.setup_context:  # torch 2's split form
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if not (is_grad_enabled() and any(ctx.needs_input_grad)):
            return output
        return _connect(cls, ctx, args, output)

    vjp = backward


def _connect(cls, ctx, args, output):
    """output's tensors (forward's result), put on the tape by record_outputs: each gets an entry that
    hands its gradient to a hub, an empty tensor recorded first, whose entry (run after all of theirs)
    calls cls.backward with all of them. A dirty input (mark_dirty) returned takes the output's place in
    the graph, as torch's in-place ops."""
    outputs = output if isinstance(output, tuple) else (output,)
    dirty = {id(t) for t in ctx.dirty_tensors}
    frozen = {id(t) for t in ctx.non_differentiable}
    inputs = []
    for a in args:
        if isinstance(a, Tensor) and id(a) in dirty:
            if a.requires_grad and a.is_leaf:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            before = Tensor(a.memory, a.requires_grad)
            before._entry = a._entry
            a = before
        inputs.append(a)
    tensors = [a for a in inputs if isinstance(a, Tensor)]
    ctx._versions = tuple(None if t is None else t._version for t in ctx.to_save)
    # the outputs on the tape: the float Tensors not marked non-differentiable
    taped = [i for i, out in enumerate(outputs) if isinstance(out, Tensor) and id(out) not in frozen
             and out.memory.is_floating_point()]

    def given(gs):
        """cls.backward's gradients, one per output, as Tensors: the taped outputs' gs (torch tensors, or tape
        Tensors under create_graph), None for the others, zeros for a Tensor output without one where
        ctx.materialize_grads."""
        grads = [None] * len(outputs)
        for i, g in zip(taped, gs):
            grads[i] = g
        for i, out in enumerate(outputs):
            if grads[i] is None and ctx.materialize_grads and isinstance(out, Tensor):
                grads[i] = torch.zeros_like(out.memory)
        return [g if g is None or isinstance(g, Tensor) else Tensor(g) for g in grads]

    def backward(gs):
        with no_grad():
            result = cls.backward(ctx, *given(gs))
        return _input_grads(cls, inputs, result if isinstance(result, tuple) else (result,))

    def graph(gs, _):  # create_graph: backward, run with grad mode on, records its ops
        result = cls.backward(ctx, *given(gs))
        return _input_grads(cls, inputs, result if isinstance(result, tuple) else (result,), on_tape=True)
    differentiable = not getattr(cls.backward, "_once_differentiable", False)
    news = record_outputs(f"{cls.__name__}Backward", [outputs[i].memory for i in taped], tuple(tensors), backward,
                          graph=graph if differentiable else None)
    news = dict(zip(taped, news))
    wrapped = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            wrapped.append(out)
            continue
        new = news.get(i)
        if new is None:
            wrapped.append(Tensor(out.memory))
            continue
        if id(out) in dirty:
            old = next(x for x, a in zip(inputs, args) if a is out)
            rebase(out, old, new)
            new = out
        wrapped.append(new)
    # a saved output is the recorded one, as torch's: a backward that reads it differentiates through this node
    recorded = {id(out): new for out, new in zip(outputs, wrapped) if isinstance(out, Tensor)}
    ctx.to_save = tuple(recorded.get(id(t), t) for t in ctx.to_save)
    return tuple(wrapped) if isinstance(output, tuple) else wrapped[0]


def _input_grads(cls, inputs, result, on_tape=False):
    """backward's result as the hub entry's gradients, one per tensor input: checked against
    forward's arguments, as torch's (count, None for non-tensors, shapes summed where broadcast);
    their memory, or (on_tape, for create_graph) the Tensors themselves."""
    if len(result) < len(inputs) or any(g is not None for g in result[len(inputs):]):
        raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients (expected "
                           f"{len(inputs)}, got {len(result)})")
    out = []
    for i, (x, g) in enumerate(zip(inputs, result)):
        if not isinstance(x, Tensor):
            if g is not None:
                raise RuntimeError(f"function {cls.__name__}Backward returned a gradient different than None at "
                                   f"position {i + 1}, but the corresponding forward input was not a Variable")
            continue
        if g is None:
            out.append(None)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"function {cls.__name__}Backward returned a {type(g).__name__} as gradient {i}; "
                            f"expected a Tensor or None")
        if g.shape != x.shape:
            try:
                ok = np.broadcast_shapes(x.shape, g.shape) == g.shape
            except ValueError:
                ok = False
            if not ok:
                raise RuntimeError(f"Function {cls.__name__}Backward returned an invalid gradient at index {i} - got "
                                   f"{list(g.shape)} but expected shape compatible with {list(x.shape)}")
            g = sum_to_size(g, *x.shape) if on_tape else Tensor(sum_to(g.contiguous().memory, x))
        out.append(g if on_tape else g.memory)
    return tuple(out)


class InplaceFunction(Function):
    """torch's legacy base of Functions that take an inplace flag (quantizers' `Round(InplaceFunction)`): a
    Function whose instance keeps inplace."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace
