"""torch.utils.checkpoint for tnet: activation checkpointing, as torch's non-reentrant form.

checkpoint(function, *args) runs function and keeps, for the backward, only its inputs: the tape
entries the call made (and the activations they hold) are dropped, and one entry takes their
place whose backward runs function again on the inputs, with the draw generator's state of the
first run (dropout draws the same masks) and under the same autocast, and differentiates that. The parameters the call reads
get their gradients as without checkpointing, whether or not the inputs require grad. As torch's,
function runs twice, so batch norm's running statistics are updated twice, and a backward with
create_graph=True differentiates the recomputation on the tape (higher-order gradients through it).

Where the call's output is not one tensor, or it read a tensor that requires grad and was made
before it but not passed as an argument (a closure over an earlier activation), function's tape
is kept as it is: the same results and gradients, without the memory saving."""
import contextlib
import warnings

from .. import amp
from ..factory import get_rng_state, rng_state, set_rng_state
from ..tensor import Tensor, enable_grad, is_grad_enabled, record, run_backward, tape_mark


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs), its activations recomputed in the backward (see the module)."""
    if not is_grad_enabled():
        return function(*args, **kwargs)
    start = tape_mark()  # entries the call makes number after this
    state = rng_state().clone() if preserve_rng_state else None
    low = amp.get_autocast_dtype()  # the recomputation runs under the same autocast
    out = function(*args, **kwargs)
    if not isinstance(out, Tensor) or out._entry is None:
        return out
    given = {id(a): i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad}
    reads = _reads(out, start, given)
    if reads is None:
        return out
    positions = [i for i, a in enumerate(args) if id(a) in given]
    inputs = [args[i] for i in positions] + reads

    def recompute(fresh):
        """function again on fresh (the arguments, those requiring grad replaced), with the first run's draws
        and under its autocast."""
        after = rng_state().clone()
        if state is not None:
            rng_state().copy_(state)
        with enable_grad(), amp.autocast(dtype=low, enabled=low is not None):
            again = function(*fresh, **kwargs)
        rng_state().copy_(after)
        return again

    def backward(g):
        fresh = list(args)
        for i in positions:
            fresh[i] = args[i].detach().requires_grad_()
        found = run_backward([recompute(fresh)], [g], inputs=[fresh[i] for i in positions] + reads, accumulate=False)
        return tuple(None if x is None else x.memory if isinstance(x, Tensor) else x for x in found)

    def graph(g, y):
        """create_graph=True: the gradients on the tape. The recomputation reads aliases of the arguments
        (view_as), differentiated as far as the aliases and the parameters: their entries are hidden meanwhile,
        so that the walk stops there as backward's stops at its detached copies, and the gradients it gives
        lead back through the aliases to the arguments (a gradient penalty's second backward reaches the
        layers before the checkpoint)."""
        fresh = list(args)
        for i in positions:
            fresh[i] = args[i].view_as(args[i])
        again = recompute(fresh)
        cut = [fresh[i] for i in positions]
        entries = [t._entry for t in cut]
        for t in cut:
            t._entry = None
        try:
            return tuple(run_backward([again], [g], create_graph=True, inputs=cut + reads, accumulate=False))
        finally:
            for t, entry in zip(cut, entries):
                t._entry = entry
    return record("checkpoint", out.memory, inputs, backward, graph=graph)


def _reads(out, start, given):
    """The tensors requiring grad that the call's entries (those numbered after start) read and did not
    make, other than the arguments in `given` (by id): the parameters. None where one of them was made
    by an earlier entry (a closure over an earlier activation: its tape is not cut here)."""
    reads, seen, todo = {}, set(), [out]
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if id(t) in given:
            continue
        if t._entry is None:
            if t.requires_grad:
                reads[id(t)] = t
        elif t._entry.seq > start:
            todo.extend(x for x in t._entry.inputs if isinstance(x, Tensor))
        elif t.requires_grad:
            return None
    return list(reads.values())


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """torch's switch for stopping a checkpoint's recomputation once the tensors its backward needs are
    made: accepted and changes nothing, as tnet's checkpoint always recomputes function whole (the
    same gradients either way; torch's early stop saves time, not numbers)."""
    yield


def get_device_states(*args):
    """torch.utils.checkpoint.get_device_states: the indices of the devices that the tensors among args are on (not
    the CPU's) and the draw generator's state for each, which set_device_states restores (lucidrains' reversible
    layers record them beside torch.get_rng_state()). tnet has one generator: each state is get_rng_state()'s."""
    devices = sorted({a.device.index or 0 for a in args if isinstance(a, Tensor) and a.device.type not in ("cpu", "meta")})
    return devices, [get_rng_state() for _ in devices]


def set_device_states(devices, states, *, device_type=None):
    """torch.utils.checkpoint.set_device_states: the draw generator back at the states get_device_states gave."""
    for state in states:
        set_rng_state(state)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """functions (a Sequential or a list of modules) applied in turn to input, in `segments` checkpointed
    runs (the last one not checkpointed), as torch's."""
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(functions) // segments
    end = -1

    def run(first, last):
        def forward(x):
            for function in functions[first:last + 1]:
                x = function(x)
            return x
        return forward
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(functions) - 1)(input)


def detach_variable(inputs):
    """inputs (a tuple) with each tensor detached, keeping its requires_grad, as torch's (old reentrant
    checkpoint code builds its recomputation's leaves with it)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs):
    """torch's warning where no tensor among inputs requires grad (a checkpointed call would get no gradient)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def noop_context_fn():
    """checkpoint's default context_fn: two null contexts, for the forward and the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()
