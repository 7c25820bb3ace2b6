"""torch.nn.modules.module's import path: tnet.nn's Module and the global module hooks, re-exported, and torch's
private _addindent (model printers copy it) and _IncompatibleKeys (load_state_dict's result)."""
from importlib import import_module

from .. import (Module, register_module_backward_hook, register_module_buffer_registration_hook,
                register_module_forward_hook, register_module_forward_pre_hook, register_module_full_backward_hook,
                register_module_full_backward_pre_hook, register_module_module_registration_hook,
                register_module_parameter_registration_hook)

__all__ = ["Module", "register_module_backward_hook", "register_module_buffer_registration_hook",
           "register_module_forward_hook", "register_module_forward_pre_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

_IncompatibleKeys = import_module("tnet.nn")._IncompatibleKeys  # by attribute: tnet imports no private name


def _addindent(s_, numSpaces):
    """s_ with every line but the first indented by numSpaces spaces (blank ones left empty), as torch's
    (Module.__repr__'s helper)."""
    lines = s_.split("\n")
    if len(lines) == 1:
        return s_
    return lines[0] + "\n" + "\n".join(" " * numSpaces + line if line.strip() else "" for line in lines[1:])
