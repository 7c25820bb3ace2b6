"""Optimizers with PyTorch's rules (SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam,
Adadelta, Muon; LBFGS, Rprop, ASGD, Adafactor and SparseAdam on the plain base, in lbfgs.py and
plain.py) and Caffe's per-parameter lr_mult
and decay_mult, and learning-rate schedules.

A step updates every parameter in one kernel launch (per 32 tensors), after a tiny one that
counts the steps. Hyperparameters and step counts live on the device and the kernels read
them there, so a step captured in a CUDA graph (tnet.graph) follows a schedule, and Adam's
bias corrections advance at every replay. The same launch rewrites the parameters' 16-bit
copies that layers read under autocast (tnet.amp): a copy made by a step before a capture
keeps its address, so the captured step writes it."""
import collections
import functools
import math
import sys
import types

import numpy as np
import torch

from .. import amp
from ..kernels import optim as kernels
from ..kernels.launch import check
from ..kernels.copy import copy_
from ..nn import reshaped_parameters
from ..tensor import Tensor, add_hook, hooks_of, in_layout, bump_version, memory_of


class Optimizer:
    """What the optimizers share. params: an iterable of parameters, or of dicts
    {"params": [...], "lr": ..., ...} (param groups; the constructor's arguments are the
    defaults). Every parameter has a step count, one float32 on the device as in torch
    (self.state[p]["step"], a view into one vector that a tiny kernel advances), and the state
    that its group's options call for (torch's names, kernels.SLOTS[RULE]), allocated at once, each
    entry a tnet Tensor, as torch's are tensors, that a user's code may change in place or replace
    (Lookahead pulling back or resetting momentum_buffer) and the next step reads (a torch tensor
    put there is taken as memory):
    options that add state (Adam's amsgrad, RMSprop's centered and momentum > 0) are taken at
    construction. A subclass gives RULE (the kernel's), _validate(group) and _rule_hyper(group):
    the group's own hyperparameters in the kernel's order (kernels.optim.HYPER[RULE] after the four
    of kernels.optim.COMMON, which every rule takes: lr, maximize, weight_decay and whether it is
    decoupled). As torch's, a parameter that does not require grad (frozen) may be given: a step
    leaves every parameter without a gradient untouched. foreach, fused and capturable are taken
    and change nothing (the step is always one fused launch, and capturable); differentiable=True
    raises NotImplementedError. A subclass without RULE is torch's plain base (SAM, LARS or a
    hand-written rule): its own step() does the math with tensor ops, self.state is a
    defaultdict(dict) filled on demand, and state_dict() holds that state as it is."""
    RULE = None
    SCALARS = {}  # one-element state of each parameter besides its step, by name: its initial value

    def __init_subclass__(cls, **kwargs):
        """A subclass's own step() (a user's LARS, Lion, Lookahead) runs the step hooks around it, as
        torch's, which patches step at construction."""
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = hooked_step(cls.__dict__["step"])

    def __setstate__(self, state):
        """copy.deepcopy's restore of the attributes, as torch's: an optimizer subclass's own __setstate__
        (AdaBelief's, RAdam's: group.setdefault(...)) calls super().__setstate__(state)."""
        self.__dict__.update(state)

    def __repr__(self):
        """torch's: the class name, then each param group's options but its params, sorted by name."""
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join(lines) + "\n)"

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) before each step(), as torch's (args holds the optimizer
        first); it may return (new_args, new_kwargs). Returns a handle whose remove() takes it away.
        An enabled GradScaler's step(optimizer) runs the fused step without the hooks (torch's runs
        them on the steps it does not skip, which tnet decides on the device)."""
        return add_hook(self, "_optimizer_step_pre_hooks", hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) after each step(), as torch's."""
        return add_hook(self, "_optimizer_step_post_hooks", hook)

    def _accelerator_graph_capture_health_check(self):
        """torch's check, which a copied optimizer's step() calls first: a step captured into a CUDA graph needs
        capturable=True in every param group. tnet's own rules are always capturable, so only a subclass without
        RULE (a hand-written or copied step) is checked."""
        if (self.RULE is None and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
                and not all(group.get("capturable", False) for group in self.param_groups)):
            raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of {type(self).__name__} "
                               "but param_groups' capturable is False.")

    _cuda_graph_capture_health_check = _accelerator_graph_capture_health_check

    @staticmethod
    def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices=False):
        """torch's grouping for a copied foreach step: {(device, dtype): (lists, indices)}, the device and dtype
        those of the first list's tensors; each group holds the same positions of every list (None kept) and, with
        with_indices, those positions (else an empty list)."""
        groups = {}
        for i, t in enumerate(tensorlistlist[0]):
            key = (t.device, t.dtype)
            if key not in groups:
                groups[key] = ([[] for _ in tensorlistlist], [])
            for j, tensors in enumerate(tensorlistlist):
                groups[key][0][j].append(tensors[i])
            if with_indices:
                groups[key][1].append(i)
        return groups

    def __init__(self, params, defaults):
        name = type(self).__name__
        if isinstance(params, Tensor):  # one tensor, not an iterable of them (torch's TypeError)
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {params.type()}")
        params = list(params)
        check(len(params) > 0, lambda: f"{name}: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = defaults
        self.param_groups = [{**defaults, **g, "params": _param_list(g["params"])} for g in groups]
        self._params = [p for g in self.param_groups for p in g["params"]]
        check(len({id(p) for p in self._params}) == len(self._params),
              lambda: f"{name}: some parameters appear in more than one parameter group")
        for group in self.param_groups:
            for key, value in group.items():
                if value is required:
                    raise ValueError(f"parameter group didn't specify a value of required optimization parameter {key}")
        for p in self._params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            check(p._entry is None, lambda: f"{name}: can't optimize a non-leaf Tensor")
        if self.RULE is None:
            self.state = collections.defaultdict(dict)
            return
        for group in self.param_groups:
            check(len(group["params"]) > 0, lambda: f"{name}: a parameter group has no parameters")
            self._validate(group)
        device = self._params[0].device
        self._steps = torch.zeros(len(self._params), device=device)
        self._scalars = {s: torch.full((len(self._params),), v, device=device) for s, v in self.SCALARS.items()}
        self._slots = {p: self._slots_of(group) for group in self.param_groups for p in group["params"]}
        self.state = {}
        for i, (group, p) in enumerate((group, p) for group in self.param_groups for p in group["params"]):
            self.state[p] = {"step": Tensor(self._steps[i])}
            for s in self._slots[p]:
                if s in self.SCALARS:
                    self.state[p][s] = Tensor(self._scalars[s][i])
                elif s is not None:
                    self.state[p][s] = Tensor(torch.full_like(p.memory, self._initial(group, s)))
        self._device_hyper = [[None, torch.empty(len(kernels.HYPER[self.RULE]), device=device)]
                              for _ in self.param_groups]
        self._took = {}  # device masks of the parameters that step, by pattern (the kernel's took)
        self._known = {}  # the parameters' states that kernels.step_ checked (its known=)
        self._reshapes = reshaped_parameters[0]
        self.update_lr()

    def add_param_group(self, param_group):
        """Add a group ({"params": [...], options...}; the constructor's defaults fill the rest), as
        torch's. The state is rebuilt around the kept one, so a step captured before (TrainStep)
        must be captured again."""
        check(isinstance(param_group, dict), lambda: f"param_group must be a dict, got {type(param_group).__name__}")
        group = {**param_group, "params": _param_list(param_group["params"])}
        if self.RULE is None:
            self.param_groups.append({**self.defaults, **group})
            self._params += group["params"]
            return
        kept = self.state_dict()
        Optimizer.__init__(self, [*self.param_groups, group], self.defaults)
        fresh = self.state_dict()
        self.load_state_dict({"state": {**fresh["state"], **kept["state"]},
                              "param_groups": kept["param_groups"] + fresh["param_groups"][len(kept["param_groups"]):]})

    @property
    def BUFFERS(self):
        """The names of the state buffers (shaped as their parameters) that some parameter has."""
        names = [s for slots in self._slots.values() for s in slots if s is not None and s not in self.SCALARS]
        return tuple(dict.fromkeys(names))

    def _slots_of(self, group):
        """The state of a parameter of group by kernel slot: a name, or None where the group's options
        leave the slot out."""
        return kernels.SLOTS[self.RULE][:kernels.REQUIRED[self.RULE]]

    def _hand_state(self, group, lists, keys):
        """torch's _init_group's work, for a subclass's own step() that passes the lists to torch's functional
        step (a fork): for each parameter of group with a gradient, the parameter, its gradient and its state
        entries named by keys appended to lists, in order (a key None: a list the group's options leave empty).
        The state is the one made at construction, which that step changes in place."""
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            for values, key in zip(lists, ("param", "grad", *keys), strict=True):
                if key is not None:
                    values.append(p if key == "param" else p.grad if key == "grad" else state[key])

    def _initial(self, group, name):
        """The value that the state buffer `name` of a parameter of group starts at."""
        return 0.0

    def _validate(self, group):
        if isinstance(group["lr"], Tensor):  # torch's tensor lr (the compiled-optimizer tutorial): read each step
            check(group["lr"].numel() == 1, "Tensor lr must be 1-element")
        self._require(group["lr"] >= 0, "learning rate", group["lr"])
        self._require(group["weight_decay"] >= 0, "weight_decay value", group["weight_decay"])
        if group.get("differentiable"):
            raise NotImplementedError(f"{type(self).__name__}: differentiable=True is not supported")

    def _require(self, ok, what, value):
        check(ok, lambda: f"{type(self).__name__}: invalid {what} {value}")

    def _require_betas(self, group):
        beta1, beta2 = group["betas"]
        self._require(0 <= beta1 < 1 and 0 <= beta2 < 1, "betas", tuple(group["betas"]))

    def _hyper(self, group):
        """The group's hyperparameters in the kernel's order (kernels.optim.HYPER[RULE])."""
        return [group["lr"], float(group.get("maximize", False)), group["weight_decay"],
                float(group.get("decoupled_weight_decay", False)), *self._rule_hyper(group)]

    def update_lr(self):
        """Copy each group's lr, and its other hyperparameters, to the device where they
        changed. Schedulers call it after setting param_groups[i]["lr"]; step() calls it too."""
        if self.RULE is None:  # a subclass's own step reads param_groups itself
            return
        for group, cached in zip(self.param_groups, self._device_hyper):
            values, t = self._hyper(group), cached[1]
            for j, v in enumerate(values):
                if isinstance(v, Tensor):  # a tensor lr, which its owner may change in place: copied on the device
                    t[j].copy_(v.memory.reshape(()))
                elif cached[0] is None or isinstance(cached[0][j], Tensor) or cached[0][j] != v:
                    t[j].fill_(v)
            cached[0] = values

    def step(self, closure=None):
        """Update every parameter that has a gradient, and its 16-bit copies, in one kernel
        launch; closure, if given, recomputes the loss first and its value is returned. A
        gradient set by hand in another memory layout than its parameter's is copied into that
        layout."""
        if self.RULE is None and type(self)._step is Optimizer._step:  # a plain base's subclass steps itself
            raise NotImplementedError(f"{type(self).__name__} gives no step()")
        loss = None if closure is None else closure()
        self._step()
        return loss

    def _step(self, scale=None, found_inf=None):
        """step() without closure; a GradScaler gives its device scale and found_inf (one float32
        element each, found_inf zero unless a step since its last update found one): the
        gradients are checked for inf and NaN first (found_inf is set if one holds any), then
        divided by the scale, and nothing changes, step counts included, if found_inf is set.
        found_inf alone: the scaler's unscale_ has checked and divided the gradients already."""
        self.update_lr()
        if self._reshapes != reshaped_parameters[0]:
            self._refit_state()
        try:
            updates = self._updates()
        except KeyError:  # a parameter appended to a group, or state dropped, by hand: made now, as torch's
            self._resync()
            updates = self._updates()
        took = tuple(p._grad_value is not None for p in self._params)  # .grad's field: every step reads it
        if not any(took):
            return
        if took not in self._took:
            self._took[took] = torch.from_numpy(np.array(took, np.float32)).to(self._steps.device)
        if scale is not None:
            kernels.find_inf_([u[1] for u in updates], found_inf)
        kernels.count_steps_(self._steps, self._took[took], found_inf)
        self._update(updates, scale, found_inf)
        bump_version(*[u[0] for u in updates])  # in-place writes: the tape's version check sees them

    def _updates(self):
        """kernels.step_'s tuple for each parameter with a gradient; KeyError where a parameter has no state."""
        updates, states, slots = [], self.state, self._slots  # locals: a step walks every parameter
        for group, (_, hyper) in zip(self.param_groups, self._device_hyper):
            for p in group["params"]:
                grad = p._grad_value
                if grad is not None:
                    memory, state = p.memory, states[p]
                    updates.append((memory, in_layout(grad.memory, memory),
                                    [s and memory_of(state[s]) for s in slots[p]], amp.low_copies(p), hyper,
                                    memory_of(state["step"]), getattr(p, "lr_mult", 1.0),
                                    getattr(p, "decay_mult", 1.0)))
        return updates

    def _resync(self):
        """The optimizer rebuilt for its groups as they are now, keeping each parameter's state that is whole: a
        parameter appended to a group's "params" by hand, or one whose state was dropped (optimizer.state.clear(),
        a fresh defaultdict, state[p] = {}), starts afresh, as torch makes state at a parameter's first step."""
        scalars = {"step": self._steps.cpu().numpy(), **{s: v.cpu().numpy() for s, v in self._scalars.items()}}
        kept = {}
        for i, p in enumerate(self._params):
            state = self.state.get(p, {})
            if all(s in state for s in scalars) and all(b in state for b in self._buffers(p)):
                kept[p] = {**{s: float(v[i]) for s, v in scalars.items()},
                           **{b: memory_of(state[b]).float().cpu().numpy() for b in self._buffers(p)}}
        groups = self.param_groups
        Optimizer.__init__(self, groups, self.defaults)
        for group, rebuilt in zip(groups, self.param_groups):  # the same dicts, which a script may hold
            group.update(rebuilt)
        self.param_groups = groups
        index = {p: i for i, p in enumerate(self._params)}
        self._load_state({"state": {index[p]: entry for p, entry in kept.items() if p in index},
                          "param_groups": self._indexed_groups()})

    def _refit_state(self):
        """A parameter reshaped since this optimizer was built (a lazy layer's first call) gets
        fresh state buffers of its new shape, as torch's state is made at its first step."""
        for group in self.param_groups:
            for p in group["params"]:
                for s in self._buffers(p):
                    if self.state[p][s].shape != p.memory.shape:
                        self.state[p][s] = Tensor(torch.full_like(p.memory, self._initial(group, s)))
        self._reshapes = reshaped_parameters[0]

    def _update(self, updates, scale, found_inf):
        """The parameters' updates (kernels.step_'s tuples, one per parameter with a gradient)."""
        kernels.step_(self.RULE, updates, scale, found_inf, known=self._known)

    def zero_grad(self, set_to_none=True):
        # the groups' parameters, not self._params: a subclass may hand its groups to another optimizer (SAM)
        for p in (p for group in self.param_groups for p in group["params"]):
            if set_to_none:
                p._grad_value = None  # .grad = None, past the setter's checks of a tensor
            elif p.grad is not None:
                p.grad.memory.zero_()

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer) at the start of each state_dict(), as torch's; prepend: before the hooks
        already there. Returns a handle whose remove() takes it away."""
        return add_hook(self, "_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) at the end of each state_dict(), as torch's: a dict it returns
        replaces the one returned (and the next hook's)."""
        return add_hook(self, "_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) at the start of each load_state_dict(), on a shallow copy of the
        dict given, as torch's: a dict it returns is loaded instead (and given to the next hook)."""
        return add_hook(self, "_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer) at the end of each load_state_dict(), as torch's."""
        return add_hook(self, "_optimizer_load_state_dict_post_hooks", hook, prepend)

    def state_dict(self):
        """torch's layout in plain numbers, lists and numpy arrays (copies; reading them is a
        host synchronisation): {"state": {index: {"step": float, buffer name: array}},
        "param_groups": [{hyperparameter: value, ..., "params": [indices]}]}, the parameters
        indexed in group order; buffers of 16-bit parameters are saved in float32, one-element
        state (NAdam's mu_product) as a float, as the step. Without RULE, torch's: the state's
        own values (not copies), keyed by index. Runs the state-dict hooks around it, as torch's."""
        for pre in hooks_of(self, "_optimizer_state_dict_pre_hooks"):
            pre(self)
        try:
            saved = self._saved_state()
        except KeyError:  # state dropped or a parameter appended by hand since the last step (see _resync)
            self._resync()
            saved = self._saved_state()
        return self._through_hooks("_optimizer_state_dict_post_hooks", saved)

    def _through_hooks(self, attribute, state_dict):
        """state_dict passed through the hooks in `attribute`, each hook(self, state_dict): a dict one returns
        replaces it, for the next hook and the caller, as torch's."""
        for hook in hooks_of(self, attribute):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _saved_state(self):
        """state_dict() without its hooks."""
        if self.RULE is None:
            index = {p: i for i, p in enumerate(self._params)}
            return {"state": {index[p]: state for p, state in self.state.items() if p in index},
                    "param_groups": self._indexed_groups()}
        scalars = {"step": self._steps.cpu().numpy(), **{s: v.cpu().numpy() for s, v in self._scalars.items()}}
        state = {i: {**{s: float(v[i]) for s, v in scalars.items()},
                     **{b: memory_of(self.state[p][b]).float().cpu().numpy().copy() for b in self._buffers(p)}}
                 for i, p in enumerate(self._params)}
        return {"state": state, "param_groups": self._indexed_groups()}

    def _indexed_groups(self):
        """The param groups with each parameter replaced by its index, in group order."""
        groups, start = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": list(range(start, start + n))})
            start += n
        return groups

    def _buffers(self, p):
        return [s for s in self._slots[p] if s is not None and s not in self.SCALARS]

    def load_state_dict(self, state_dict):
        """Take the step counts, buffers and hyperparameters of state_dict() into this
        optimizer's own device tensors (a captured step keeps its addresses). A parameter that
        the state lacks starts afresh; "state" may be keyed by str(index) too (JSON). Runs the
        load-state-dict hooks around it, the pre hooks on a shallow copy, as torch's."""
        self._load_state(self._through_hooks("_optimizer_load_state_dict_pre_hooks", dict(state_dict)))
        for post in hooks_of(self, "_optimizer_load_state_dict_post_hooks"):
            post(self)

    def _load_state(self, state_dict):
        """load_state_dict() without its hooks; a subclass that adds to loading overrides this."""
        name = f"{type(self).__name__}.load_state_dict"
        saved_groups, saved = state_dict["param_groups"], state_dict["state"]
        check(len(saved_groups) == len(self.param_groups),
              lambda: f"{name}: {len(saved_groups)} parameter groups for {len(self.param_groups)}")
        if self.RULE is None:
            self.state.clear()
            for i, p in enumerate(self._params):
                if i in saved or str(i) in saved:
                    self.state[p] = dict(saved.get(i, saved.get(str(i))))
            for group, g in zip(self.param_groups, saved_groups):
                replace_group(group, g)
            return
        groups = []
        for group, g in zip(self.param_groups, saved_groups):
            check(len(g["params"]) == len(group["params"]),
                  lambda: f"{name}: a group of {len(g['params'])} parameters for one of {len(group['params'])}")
            groups.append(replace_group(dict(group), g))
            self._validate(groups[-1])
        # torch's SGD keeps no step and a momentum_buffer of None until its first step: a None buffer counts as
        # absent, and an entry holding buffers but no step has taken one (its first step made them)
        entries = [{k: v for k, v in saved.get(i, saved.get(str(i), {})).items() if v is not None}
                   for i in range(len(self._params))]
        for i, (p, entry) in enumerate(zip(self._params, entries)):
            for b in self._buffers(p):
                check(b in entry or not entry, lambda: f"{name}: parameter {i} has no {b}")
                check(not entry or tuple(np.shape(entry[b])) == p.shape,
                      lambda: f"{name}: {b} {tuple(np.shape(entry.get(b)))} for parameter {i} {p.shape}")
        for s, t in [("step", self._steps), *self._scalars.items()]:
            initial = [self.SCALARS.get(s, 1.0 if s == "step" and e else 0.0) for e in entries]
            t.copy_(torch.from_numpy(np.array([float(e.get(s, i)) for e, i in zip(entries, initial)], np.float32)))
        group_of = {p: group for group in groups for p in group["params"]}
        for p, entry in zip(self._params, entries):
            for b in self._buffers(p):
                if b in entry:
                    memory_of(self.state[p][b]).copy_(torch.from_numpy(np.asarray(entry[b], np.float32)))
                else:
                    memory_of(self.state[p][b]).fill_(self._initial(group_of[p], b))
        for group, g in zip(self.param_groups, groups):
            replace_group(group, g)
        self.update_lr()


def replace_group(group, saved):
    """group (in place) as the saved group with group's own parameters, as torch's load_state_dict: a key
    that the saved group lacks goes (a scheduler's "initial_lr" set after the save, as lr finders restore)."""
    params = group["params"]
    group.clear()
    group.update({k: v for k, v in saved.items() if k != "params"}, params=params)
    return group


_global_hooks = types.SimpleNamespace()  # register_optimizer_step_pre_hook's and _post_hook's, every optimizer's


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) before every optimizer's step(), ahead of its own hooks, as torch's."""
    return add_hook(_global_hooks, "pre", hook)


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs) after every optimizer's step(), after its own hooks, as torch's."""
    return add_hook(_global_hooks, "post", hook)


def hooked_step(step):
    """step run between the global and the optimizer's own pre hooks and post hooks, as torch's
    profile_hook_step; a step that a hooked step calls (super().step()) runs without them, so that
    they run once a step."""
    @functools.wraps(step)
    def run(self, *args, **kwargs):
        if self.__dict__.get("_in_hooked_step"):
            return step(self, *args, **kwargs)
        args = (self, *args)
        for pre in [*vars(_global_hooks).get("pre", {}).values(),
                    *hooks_of(self, "_optimizer_step_pre_hooks")]:
            result = pre(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{pre} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
                args, kwargs = result
        self._in_hooked_step = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._in_hooked_step = False
        for post in [*hooks_of(self, "_optimizer_step_post_hooks"),
                     *vars(_global_hooks).get("post", {}).values()]:
            post(self, args, kwargs)
        return out
    return run


Optimizer.step = hooked_step(Optimizer.step)


class _RequiredParameter:
    """The default of a hyperparameter that every param group must give (torch.optim.optimizer.required)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _param_list(params):
    """A group's parameters as a list; one tensor alone is a list of itself, as torch takes it."""
    return [params] if isinstance(params, Tensor) else list(params)


class SGD(Optimizer):
    """torch.optim.SGD's rule, for every parameter p with gradient g:
        g = -g if maximize
        g = g + weight_decay*p
        buf = g at p's first step, else momentum*buf + (1 - dampening)*g   (if momentum != 0)
        g = g + momentum*buf if nesterov else buf                          (if momentum != 0)
        p = p - lr*g
    with Caffe's per-parameter multipliers (attributes of p, default 1): lr*lr_mult and
    weight_decay*decay_mult. The buffer is in gradient units, as in PyTorch, not Caffe's
    lr-scaled h = momentum*h + lr*(g + weight_decay*p); p -= h: at a constant lr both take
    the same steps, but here an lr change acts at once, where Caffe's h carries the old lr
    for a while. Unlike torch's, momentum_buffer exists (zeros) from the start, with momentum 0 too."""
    RULE = "sgd"

    def __init__(self, params, lr=0.001, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                                  "foreach": foreach, "differentiable": differentiable, "fused": fused})

    def _validate(self, group):
        super()._validate(group)
        self._require(group["momentum"] >= 0, "momentum value", group["momentum"])
        check(not group["nesterov"] or (group["momentum"] > 0 and group["dampening"] == 0),
              "SGD: nesterov momentum requires a momentum > 0 and zero dampening")

    def _rule_hyper(self, group):
        return [group["momentum"], group["dampening"], float(group["nesterov"])]

    def _init_group(self, group, params, grads, momentum_buffer_list):
        """torch's: the group's parameters that have a gradient and their gradients appended to the lists, and
        with momentum their buffers, for a subclass's own step() that hands them to torch.optim.sgd.sgd (a fork)
        and stores the buffers it returns in the state; has_sparse_grad (False: tnet's gradients are dense)
        returned. A parameter's buffer is None until that first handing, as torch's before a first step (sgd()
        then starts it from the gradient, without dampening), where tnet's state holds zeros."""
        handed = self.__dict__.setdefault("_handed_buffers", set())
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            if group["momentum"] != 0:
                state = self.state[p]
                fresh = id(p) not in handed and float(state["step"]) == 0
                momentum_buffer_list.append(None if fresh else state["momentum_buffer"])
                handed.add(id(p))
        return False


def _one_minus(beta):
    """1 - beta in float64 on the host: in float32 on the device it loses digits."""
    return 1 - beta


def _log(beta):
    return math.log(beta) if beta > 0 else -math.inf


class Adam(Optimizer):
    """torch.optim.Adam's rule, for every parameter p with gradient g, at its step t:
        g = -g if maximize
        g = g + weight_decay*p   (p = p*(1 - lr*weight_decay) instead if decoupled_weight_decay: AdamW)
        m = beta1*m + (1 - beta1)*g;  v = beta2*v + (1 - beta2)*g*g
        v_max = max(v_max, v), used as v below   (if amsgrad)
        p = p - lr/(1 - beta1**t) * m / (sqrt(v)/sqrt(1 - beta2**t) + eps)
    with Caffe's per-parameter multipliers, lr*lr_mult and weight_decay*decay_mult. The state
    names are torch's: exp_avg (m), exp_avg_sq (v) and max_exp_avg_sq (v_max). An lr given as a
    tensor is not supported (a float: the device keeps its own copy, that update_lr refreshes)."""
    RULE = "adam"

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                                  "capturable": capturable, "differentiable": differentiable, "fused": fused,
                                  "decoupled_weight_decay": decoupled_weight_decay})
        # torch's Adam and AdamW (not its other Adam-like optimizers) refuse betas of mixed types: (0, 0.99) raises
        if not (all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")

    def _validate(self, group):
        super()._validate(group)
        self._require(group["eps"] >= 0, "epsilon value", group["eps"])
        self._require_betas(group)

    def _slots_of(self, group):
        return kernels.SLOTS["adam"] if group["amsgrad"] else kernels.SLOTS["adam"][:2]

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps):
        """torch's (_hand_state), for torch.optim.adam.adam; has_complex (False: tnet has none) returned."""
        self._hand_state(group, (params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps),
                         ("exp_avg", "exp_avg_sq", "max_exp_avg_sq" if group["amsgrad"] else None, "step"))
        return False

    def _rule_hyper(self, group):
        betas = group["betas"]
        return [*map(_one_minus, betas), *map(_log, betas), group["eps"]]


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay, p = p*(1 - lr*weight_decay) before
    the update instead of weight_decay*p added to the gradient (lr and weight_decay times
    the parameter's lr_mult and decay_mult)."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def _load_state(self, state_dict):
        super()._load_state(state_dict)
        for group in self.param_groups:  # as torch's: AdamW's decay stays decoupled
            group["decoupled_weight_decay"] = True
        self.update_lr()


class RMSprop(Optimizer):
    """torch.optim.RMSprop's rule, for every parameter p with gradient g:
        g = -g if maximize;  g = g + weight_decay*p
        square_avg = alpha*square_avg + (1 - alpha)*g*g
        grad_avg = lerp(grad_avg, g, 1 - alpha); avg = sqrt(square_avg - grad_avg**2)   (centered)
        avg = sqrt(square_avg) otherwise, then avg = avg + eps
        buf = momentum*buf + g/avg; p = p - lr*buf   (momentum > 0), else p = p - lr*g/avg
    with Caffe's lr_mult and decay_mult. centered, and momentum > 0, are taken at construction
    (they add grad_avg and momentum_buffer to the state); momentum may change later but not from 0."""
    RULE = "rmsprop"

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        super().__init__(params, {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                                  "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable})

    def _validate(self, group):
        super()._validate(group)
        self._require(group["eps"] >= 0, "epsilon value", group["eps"])
        self._require(group["momentum"] >= 0, "momentum value", group["momentum"])
        self._require(group["alpha"] >= 0, "alpha value", group["alpha"])

    def _slots_of(self, group):
        square_avg, momentum_buffer, grad_avg = kernels.SLOTS["rmsprop"]
        return (square_avg, momentum_buffer if group["momentum"] > 0 else None, grad_avg if group["centered"] else None)

    def _init_group(self, group, params_with_grad, grads, square_avgs, momentum_buffer_list, grad_avgs, state_steps):
        """torch's (_hand_state), for torch.optim.rmsprop.rmsprop; has_complex (False) returned."""
        self._hand_state(group, (params_with_grad, grads, square_avgs, momentum_buffer_list, grad_avgs, state_steps),
                         ("square_avg", "momentum_buffer" if group["momentum"] > 0 else None,
                          "grad_avg" if group["centered"] else None, "step"))
        return False

    def _rule_hyper(self, group):
        return [group["alpha"], _one_minus(group["alpha"]), group["eps"], group["momentum"]]


class Adagrad(Optimizer):
    """torch.optim.Adagrad's rule, for every parameter p with gradient g, at its step t:
        g = -g if maximize;  g = g + weight_decay*p
        sum = sum + g*g   (sum starts at initial_accumulator_value)
        p = p - lr/(1 + (t - 1)*lr_decay) * g/(sqrt(sum) + eps)
    with Caffe's lr_mult and decay_mult. Sparse gradients do not exist in tnet."""
    RULE = "adagrad"

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                                  "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable, "fused": fused})

    def _validate(self, group):
        super()._validate(group)
        self._require(group["lr_decay"] >= 0, "lr_decay value", group["lr_decay"])
        self._require(group["initial_accumulator_value"] >= 0, "initial_accumulator_value value",
                      group["initial_accumulator_value"])
        self._require(group["eps"] >= 0, "epsilon value", group["eps"])

    def _initial(self, group, name):
        return group["initial_accumulator_value"]

    def _init_group(self, group, params_with_grad, grads, state_sums, state_steps):
        """torch's (_hand_state), for torch.optim.adagrad.adagrad; (has_sparse_grad, has_complex) returned, both
        False (tnet's gradients are dense and real)."""
        self._hand_state(group, (params_with_grad, grads, state_sums, state_steps), ("sum", "step"))
        return False, False

    def _rule_hyper(self, group):
        return [group["lr_decay"], group["eps"]]


class Adamax(Optimizer):
    """torch.optim.Adamax's rule, for every parameter p with gradient g, at its step t:
        g = -g if maximize;  g = g + weight_decay*p
        exp_avg = lerp(exp_avg, g, 1 - beta1);  exp_inf = max(beta2*exp_inf, |g| + eps)
        p = p - lr/(1 - beta1**t) * exp_avg/exp_inf
    with Caffe's lr_mult and decay_mult."""
    RULE = "adamax"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _validate(self, group):
        super()._validate(group)
        self._require(group["eps"] >= 0, "epsilon value", group["eps"])
        self._require_betas(group)

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_infs, state_steps):
        """torch's (_hand_state), for torch.optim.adamax.adamax; has_complex (False) returned."""
        self._hand_state(group, (params_with_grad, grads, exp_avgs, exp_infs, state_steps),
                         ("exp_avg", "exp_inf", "step"))
        return False

    def _rule_hyper(self, group):
        beta1, beta2 = group["betas"]
        return [_one_minus(beta1), beta2, _log(beta1), group["eps"]]


class NAdam(Optimizer):
    """torch.optim.NAdam's rule, for every parameter p with gradient g, at its step t:
        g = -g if maximize
        g = g + weight_decay*p   (p = p*(1 - lr*weight_decay) instead if decoupled_weight_decay)
        mu_t = beta1*(1 - 0.5*0.96**(t*momentum_decay));  mu_product = mu_product*mu_t
        m = lerp(m, g, 1 - beta1);  v = beta2*v + (1 - beta2)*g*g;  d = sqrt(v/(1 - beta2**t)) + eps
        p = p - lr*(1 - mu_t)/(1 - mu_product) * g/d - lr*mu_{t+1}/(1 - mu_product*mu_{t+1}) * m/d
    with Caffe's lr_mult and decay_mult. The state is torch's: exp_avg (m), exp_avg_sq (v), and
    mu_product, one float32 on the device (a view into one vector, as the step)."""
    RULE = "nadam"
    SCALARS = {"mu_product": 1.0}

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                                  "foreach": foreach, "maximize": maximize, "capturable": capturable,
                                  "differentiable": differentiable})

    def _validate(self, group):
        super()._validate(group)
        self._require(group["eps"] >= 0, "epsilon value", group["eps"])
        self._require_betas(group)
        self._require(group["momentum_decay"] >= 0, "momentum_decay value", group["momentum_decay"])

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps):
        """torch's (_hand_state), for torch.optim.nadam.nadam; has_complex (False) returned."""
        self._hand_state(group, (params_with_grad, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps),
                         ("exp_avg", "exp_avg_sq", "mu_product", "step"))
        return False

    def _rule_hyper(self, group):
        beta1, beta2 = group["betas"]
        return [_one_minus(beta1), _one_minus(beta2), _log(beta2), group["eps"], beta1, group["momentum_decay"]]


class RAdam(Optimizer):
    """torch.optim.RAdam's rule, for every parameter p with gradient g, at its step t:
        g = -g if maximize
        g = g + weight_decay*p   (p = p*(1 - lr*weight_decay) instead if decoupled_weight_decay)
        m = lerp(m, g, 1 - beta1);  v = beta2*v + (1 - beta2)*g*g;  u = lr * m/(1 - beta1**t)
        rho_inf = 2/(1 - beta2) - 1;  rho_t = rho_inf - 2t*beta2**t/(1 - beta2**t)
        p = p - u * r_t * sqrt(1 - beta2**t)/(sqrt(v) + eps)   if rho_t > 5, else p = p - u
    with r_t = sqrt((rho_t - 4)(rho_t - 2)rho_inf / ((rho_inf - 4)(rho_inf - 2)rho_t)), and Caffe's
    lr_mult and decay_mult. The state is torch's: exp_avg (m) and exp_avg_sq (v)."""
    RULE = "radam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay, "foreach": foreach,
                                  "maximize": maximize, "capturable": capturable, "differentiable": differentiable})

    def _validate(self, group):
        super()._validate(group)
        self._require(group["eps"] >= 0, "epsilon value", group["eps"])
        self._require_betas(group)

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, state_steps):
        """torch's (_hand_state), for torch.optim.radam.radam; has_complex (False) returned."""
        self._hand_state(group, (params_with_grad, grads, exp_avgs, exp_avg_sqs, state_steps),
                         ("exp_avg", "exp_avg_sq", "step"))
        return False

    def _rule_hyper(self, group):
        betas = group["betas"]
        return [*map(_one_minus, betas), *map(_log, betas), group["eps"], 2 / (1 - betas[1]) - 1]


class Adadelta(Optimizer):
    """torch.optim.Adadelta's rule, for every parameter p with gradient g:
        g = -g if maximize;  g = g + weight_decay*p
        square_avg = rho*square_avg + (1 - rho)*g*g
        delta = sqrt(acc_delta + eps)/sqrt(square_avg + eps) * g
        acc_delta = rho*acc_delta + (1 - rho)*delta*delta;  p = p - lr*delta
    with Caffe's lr_mult and decay_mult."""
    RULE = "adadelta"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                                  "capturable": capturable, "maximize": maximize, "differentiable": differentiable})

    def _validate(self, group):
        super()._validate(group)
        self._require(0 <= group["rho"] <= 1, "rho value", group["rho"])
        self._require(group["eps"] >= 0, "epsilon value", group["eps"])

    def _init_group(self, group, params_with_grad, grads, square_avgs, acc_deltas, state_steps):
        """torch's (_hand_state), for torch.optim.adadelta.adadelta; has_complex (False) returned."""
        self._hand_state(group, (params_with_grad, grads, square_avgs, acc_deltas, state_steps),
                         ("square_avg", "acc_delta", "step"))
        return False

    def _rule_hyper(self, group):
        return [group["rho"], _one_minus(group["rho"]), group["eps"]]


class Muon(Optimizer):
    """torch.optim.Muon's rule, for every parameter p with gradient g, seen as a matrix M x N:
        buf = lerp(buf, g, 1 - momentum)
        u = lerp(g, buf, momentum) if nesterov else buf
        o = NS(u): u / max(||u||, eps), then ns_steps Newton-Schulz steps x = (a I + b A + c A^2) x,
            A = x x^T (over x^T where M > N), (a, b, c) = ns_coefficients, in bfloat16
        p = p * (1 - lr*weight_decay) - lr * r * o
    with r = sqrt(max(1, M/N)) (adjust_lr_fn None or "original") or 0.2 * sqrt(max(M, N))
    ("match_rms_adamw"). The matrices of one size are orthogonalised together, in batched bf16
    GEMMs, whatever their groups. Where tnet differs from torch: a parameter of more than 2
    dimensions (a convolution's filters) is taken as the matrix [shape[0], numel / shape[0]] in its
    memory order (torch raises; a channels-last filter's columns come in another order than a
    reshape's, which changes nothing: the iteration commutes with permuting the columns), and a
    GradScaler's step is not supported (train Muon in bfloat16). Caffe's lr_mult and decay_mult
    are not taken: they must be 1. tnet's addition, keyword-only: renormalize=True scales p to norm
    sqrt(M) before each update (airbench94_muon's Muon, whose filters keep that norm)."""
    RULE = "muon"

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.7750, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None, *,
                 renormalize=False):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                                  "ns_coefficients": tuple(ns_coefficients), "eps": eps, "ns_steps": ns_steps,
                                  "adjust_lr_fn": adjust_lr_fn, "renormalize": renormalize})
        for p in self._params:
            check(p.memory.dim() >= 2, lambda: f"Muon only supports parameters of 2 or more dimensions (matrices, "
                                             f"filters), but found a parameter with size: {p.shape}")
        self._work = {}  # kernels.muon_work's buffers by (rows, columns, matrices)

    def _validate(self, group):
        super()._validate(group)
        self._require(group["momentum"] >= 0, "momentum value", group["momentum"])
        self._require(group["adjust_lr_fn"] in (None, "original", "match_rms_adamw"), "adjust_lr_fn",
                      group["adjust_lr_fn"])
        self._require(len(group["ns_coefficients"]) == 3, "ns_coefficients", group["ns_coefficients"])
        self._require(isinstance(group["ns_steps"], int) and 0 <= group["ns_steps"] < 100, "ns_steps (0 to 99)",
                      group["ns_steps"])
        self._require(group["eps"] >= 0, "epsilon value", group["eps"])

    def _slots_of(self, group):
        return ("momentum_buffer",)

    def _hyper(self, group):
        return [group["lr"], group["momentum"], group["weight_decay"], float(group["nesterov"])]

    def _step(self, scale=None, found_inf=None):
        check(scale is None and found_inf is None,
              "Muon: a GradScaler's step is not supported; train Muon in bfloat16 (no loss scale)")
        super()._step()

    def _update(self, updates, scale, found_inf):
        groups = {id(t): group for group, (_, t) in zip(self.param_groups, self._device_hyper)}
        batches = {}
        for p, g, (buf,), lows, hyper, _count, lr_mult, decay_mult in updates:
            check(lr_mult == decay_mult == 1.0, "Muon: Caffe's lr_mult and decay_mult are not taken; leave them 1")
            group = groups[id(hyper)]
            rows = p.shape[0]
            cols = p.numel() // max(rows, 1)
            key = (rows, cols, p.dtype, group["ns_coefficients"], group["ns_steps"], group["eps"], group["renormalize"])
            batches.setdefault(key, []).append((p, g, buf, lows, hyper, _adjust(group["adjust_lr_fn"], rows, cols)))
        for (rows, cols, _, coefficients, steps, eps, renormalize), batch in batches.items():
            size = (rows, cols, len(batch))
            if size not in self._work:
                self._work[size] = kernels.muon_work(len(batch), rows, cols, batch[0][0].device)
            kernels.muon_(batch, self._work[size], coefficients, steps, eps, renormalize)


def _adjust(adjust_lr_fn, rows, cols):
    """Muon's factor of lr for an update of rows x cols (torch's _adjust_lr)."""
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * math.sqrt(max(rows, cols))
    return math.sqrt(max(1.0, rows / max(cols, 1)))


def caffe_quick(total_iterations):
    """Caffe's quick recipe scaled to any length: the base rate, then a tenth of it for the
    last fifth (4,000 + 1,000 iterations in Caffe's own example)."""
    switch = round(total_iterations * 0.8)
    return lambda it: 1.0 if it < switch else 0.1


def one_cycle(total_iterations, warmup_fraction=0.15):
    """Linear warm-up from 0 to the base rate over the first warmup_fraction of the
    iterations, then a linear decay to 0 at the end (0 from there: a run of one iteration asks past it)."""
    warmup = max(1, round(total_iterations * warmup_fraction))
    return lambda it: (it + 1) / warmup if it < warmup else \
        max(0.0, (total_iterations - it) / max(1, total_iterations - warmup))


def linear_decay(total_iterations):
    """From the base rate down to 0 at the end, linearly (airbench94_muon's)."""
    return lambda it: max(0.0, 1 - it / total_iterations)


def warmup_decay(total_iterations, warmup_fraction=0.23, start=0.2, end=0.07):
    """airbench's schedule: linear from start to 1 over the first int(warmup_fraction * total)
    iterations, then linear from 1 to end at the last."""
    warmup = int(total_iterations * warmup_fraction)

    def factor(it):
        if it < warmup:
            return start + (1 - start) * it / warmup
        return 1 + (end - 1) * (it - warmup) / max(1, total_iterations - warmup)
    return factor


class Lookahead:
    """airbench's lookahead over a model's float parameters and buffers (BatchNorm's running
    statistics): step() after each optimizer step counts it, and on every `every`-th step
    sets ema = lerp(ema, w, 1 - d) and w = ema, d = decay * (step / total_steps)**3; finish()
    sets w = ema (airbench's last update, d = 1). The averages are float32 copies of the
    tensors as they are now. The count and d live on the device and the update is one launch
    (per 32 tensors) that writes the parameters' 16-bit copies too: a CUDA graph can capture
    step(), which then does nothing but on every `every`-th replay."""

    def __init__(self, model, total_steps, every=5, decay=0.95 ** 5):
        check(total_steps > 0 and every > 0, lambda: f"Lookahead: total_steps and every must be positive, "
                                                     f"got {total_steps} and {every}")
        self.total_steps, self.every, self.decay = total_steps, every, decay
        self.tensors = {name: t for name, t in model._state().items() if t.memory.is_floating_point()}
        self.ema = {name: torch.empty_like(t.memory, dtype=torch.float32) for name, t in self.tensors.items()}
        device = next(iter(self.ema.values())).device
        self._count = torch.zeros(1, dtype=torch.int32, device=device)
        self._d = torch.zeros(1, device=device)
        self._one = torch.ones(1, device=device)
        for name, t in self.tensors.items():
            copy_(self.ema[name], t.memory)

    def _updates(self):
        return [(t.memory, self.ema[name], amp.low_copies(t)) for name, t in self.tensors.items()]

    def step(self):
        kernels.lookahead_clock_(self._count, self._d, self.total_steps, self.every, self.decay)
        kernels.lookahead_(self._updates(), self._d)
        bump_version(*self.tensors.values())

    def finish(self):
        kernels.lookahead_(self._updates(), self._one)
        bump_version(*self.tensors.values())

    def state_dict(self):
        """{"step": steps counted, "ema": {name: float32 array}} (host copies: a synchronisation)."""
        return {"step": int(self._count.item()), "ema": {k: v.cpu().numpy().copy() for k, v in self.ema.items()}}

    def load_state_dict(self, state):
        ema = state["ema"]
        check(ema.keys() == self.ema.keys(), lambda: f"Lookahead.load_state_dict: tensors {sorted(ema)}, "
                                                     f"expected {sorted(self.ema)}")
        for name, v in ema.items():
            check(tuple(np.shape(v)) == tuple(self.ema[name].shape),
                  lambda: f"Lookahead.load_state_dict: {name} {tuple(np.shape(v))}, expected {tuple(self.ema[name].shape)}")
        for name, v in ema.items():
            self.ema[name].copy_(torch.from_numpy(np.asarray(v, np.float32)))
        self._count.fill_(int(state["step"]))


# after Optimizer, which lr_scheduler imports; LambdaLR here too, as tnet's recipes name it
from . import lr_scheduler  # noqa: E402
from .lr_scheduler import LambdaLR  # noqa: E402
from . import swa_utils  # noqa: E402
from . import optimizer  # noqa: E402
from .lbfgs import LBFGS  # noqa: E402
from .plain import ASGD, Adafactor, Rprop, SparseAdam  # noqa: E402

# torch.optim's per-optimizer modules, for their import paths (`from torch.optim.adamw import AdamW`): each holds its
# class and Optimizer, and its functional step (functional.py) where torch's module has one
from . import functional  # noqa: E402
for _module_name, _class in (("adadelta", Adadelta), ("adagrad", Adagrad), ("adam", Adam), ("adamax", Adamax),
                             ("adamw", AdamW), ("asgd", ASGD), ("nadam", NAdam), ("radam", RAdam),
                             ("rmsprop", RMSprop), ("rprop", Rprop), ("sgd", SGD), ("sparse_adam", SparseAdam),
                             ("_adafactor", Adafactor), ("_muon", Muon)):
    _module = types.ModuleType(f"{__name__}.{_module_name}", f"torch.optim.{_module_name}'s {_class.__name__}")
    _module.__dict__.update({_class.__name__: _class, "Optimizer": Optimizer})
    if hasattr(functional, _module_name):
        setattr(_module, _module_name, getattr(functional, _module_name))
    sys.modules[_module.__name__] = _module
    globals()[_module_name] = _module
# and torch.optim._functional, where optimizer forks of torch's find the same steps (`from torch.optim import
# _functional as F`)
_functional = types.ModuleType(f"{__name__}._functional", "torch.optim._functional's steps that tnet has")
_functional.__dict__.update(sgd=functional.sgd, adam=functional.adam, adamw=functional.adamw)
sys.modules[_functional.__name__] = _functional
