"""A tensor's repr as torch prints it (torch/_tensor_str.py's rules, rewritten over a numpy copy of
the values): `tensor([...])` with 4 decimals, or whole numbers with a trailing point, or
scientific notation where the values span more than 1000x (or pass 1e8, or fall under 1e-4);
columns of one width; rows wrapped at the line width; more than `threshold` elements summarised
with `edgeitems` at each end of every axis; then the suffixes (device, a dtype other than
float32, int64 or bool, the grad_fn or requires_grad). set_printoptions sets OPTIONS."""
import math

import numpy as np

DEFAULTS = dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
PROFILES = {"default": DEFAULTS, "short": dict(DEFAULTS, precision=2, edgeitems=2),
            "full": dict(DEFAULTS, threshold=math.inf)}
OPTIONS = dict(DEFAULTS)
HIDDEN_DTYPES = ("torch.float32", "torch.int64", "torch.bool")  # a dtype torch leaves out of the repr


class _Formatter:
    """One width and one notation for every value printed (those shown, when summarised)."""

    def __init__(self, values):
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        precision = OPTIONS["precision"]
        flat = values.reshape(-1)
        if not self.floating:
            self.width = max([len(str(v)) for v in flat.tolist()], default=1)
        else:
            shown = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
            if shown.size:  # else (no finite nonzero value) whole numbers, of width 1
                low, high = np.abs(shown).min(), np.abs(shown).max()
                self.int_mode = bool(np.all(shown == np.ceil(shown)))
                forced = OPTIONS["sci_mode"]
                self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4 if forced is None else forced
                if self.sci_mode:
                    texts = [f"{v:.{precision}e}" for v in shown.tolist()]
                elif self.int_mode:
                    texts = [f"{v:.0f}." for v in shown.tolist()]
                else:
                    texts = [f"{v:.{precision}f}" for v in shown.tolist()]
                self.width = max(len(t) for t in texts)

    def format(self, v):
        precision = OPTIONS["precision"]
        if not self.floating:
            text = str(v)
        elif self.sci_mode:
            text = f"{v:{self.width}.{precision}e}"
        elif self.int_mode:
            text = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            text = f"{v:.{precision}f}"
        return " " * (self.width - len(text)) + text


def _summarised(a):
    """The values a summarised print shows: edgeitems at each end of every axis."""
    edge = OPTIONS["edgeitems"]
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:edge], a[-edge:]]) if a.shape[0] > 2 * edge else a
    rows = list(range(edge)) + list(range(a.shape[0] - edge, a.shape[0])) if a.shape[0] > 2 * edge else \
        range(a.shape[0])
    return np.stack([_summarised(a[i]) for i in rows])


def _vector(a, indent, summarise, fmt):
    edge = OPTIONS["edgeitems"]
    per_line = max(1, int(math.floor((OPTIONS["linewidth"] - indent) / (fmt.width + 2))))
    if summarise and a.shape[0] > 2 * edge:
        data = [fmt.format(v) for v in a[:edge].tolist()] + [" ..."] + [fmt.format(v) for v in a[-edge:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a, indent, summarise, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarise, fmt)
    edge = OPTIONS["edgeitems"]
    if summarise and a.shape[0] > 2 * edge:
        parts = ([_nested(a[i], indent + 1, summarise, fmt) for i in range(edge)] + ["..."]
                 + [_nested(a[i], indent + 1, summarise, fmt) for i in range(a.shape[0] - edge, a.shape[0])])
    else:
        parts = [_nested(a[i], indent + 1, summarise, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_repr(values, dtype, device, grad_fn=None, requires_grad=False):
    """torch's repr of a tensor holding `values` (a numpy array; 16-bit floats as float32), of
    torch dtype `dtype` on `device` (a torch.device), with its grad_fn's name or requires_grad."""
    prefix, indent, suffixes = "tensor(", len("tensor("), []
    if device.type != "cpu":
        suffixes.append(f"device='{device}'")
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if str(dtype) != "torch.float32":
            suffixes.append(f"dtype={dtype}")
        body = "[]"
    else:
        if str(dtype) not in HIDDEN_DTYPES:
            suffixes.append(f"dtype={dtype}")
        summarise = values.size > OPTIONS["threshold"]
        fmt = _Formatter(_summarised(values) if summarise else values)
        body = _nested(values, indent, summarise, fmt)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    text, last = [prefix + body], len(prefix + body) - (prefix + body).rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > OPTIONS["linewidth"]:
            text.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            text.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(text) + ")"
