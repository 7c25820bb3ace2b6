"""tnet.save and tnet.load: nested dicts and lists of tensors, arrays, numbers and strings in
one .npz file, with no pickle. The arrays are the archive's .npy members, read back with
allow_pickle=False; the structure is a JSON document stored beside them as bytes. Loading a
file from elsewhere therefore never runs code. Writes are atomic: a temporary file in the
same folder, fsync, then a rename over the target."""
import io
import json
import errno
import os

import numpy as np
import torch

FORMAT = "tnet.save/1"
_TREE = "__tree__"  # the archive member holding the JSON structure
# torch dtypes numpy lacks travel as same-size integers, tagged with their own name
_AS_BITS = {"bfloat16": (torch.int16, np.int16)}


class LoadError(ValueError):
    """A file tnet.load cannot read: missing, empty, truncated, corrupt or not tnet's."""


def _encode(obj, arrays):
    from .tensor import Tensor
    if isinstance(obj, Tensor):
        obj = obj.data
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        name = str(t.dtype).removeprefix("torch.")
        if name in _AS_BITS:
            t = t.view(_AS_BITS[name][0])
        arrays.append(t.numpy())
        return {"$tensor": len(arrays) - 1, "dtype": name}
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise ValueError("tnet.save: arrays of Python objects are not supported")
        arrays.append(obj)
        return {"$array": len(arrays) - 1}
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [_encode(v, arrays) for v in obj]
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in obj):
            return {k: _encode(v, arrays) for k, v in obj.items()}
        if all(isinstance(k, (str, int)) for k in obj):  # int keys (an optimizer's state)
            return {"$items": [[k, _encode(v, arrays)] for k, v in obj.items()]}
        raise ValueError("tnet.save: dict keys must be strings or ints")
    raise ValueError(f"tnet.save: cannot store a {type(obj).__name__} (tensors, arrays, numbers, "
                     "strings, None, lists, tuples and dicts only)")


def _decode(obj, arrays, as_tensor):
    if isinstance(obj, list):
        return [_decode(v, arrays, as_tensor) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "$tensor" in obj:
        a = arrays[obj["$tensor"]]
        t = torch.from_numpy(a)
        if obj["dtype"] in _AS_BITS:
            t = t.view(getattr(torch, obj["dtype"]))
        return as_tensor(t)
    if "$array" in obj:
        return arrays[obj["$array"]]
    if "$items" in obj:
        return {k: _decode(v, arrays, as_tensor) for k, v in obj["$items"]}
    return {k: _decode(v, arrays, as_tensor) for k, v in obj.items()}


class WriteError(OSError):
    """A file atomic_write could not write; the previous file at the path is intact."""


def atomic_write(path, write):
    """write(file) into path + ".tmp", fsync it, rename it over path, then fsync the folder: a
    crash or a full disk never leaves a half-written file at path. The temporary name is fixed so
    that one left by a killed writer is replaced by the next write. The mode honours the umask
    (0644 typically), as torch.save's files do."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = path + ".tmp"
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        os.makedirs(folder, exist_ok=True)  # benchmarks write into a --out folder they do not create
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as e:
        _discard(tmp)
        raise WriteError(e.errno, f"cannot write {path}: {e.strerror or e}") from None
    except BaseException:
        _discard(tmp)
        raise


def _discard(tmp):
    try:
        os.unlink(tmp)
    except OSError:
        pass


def save(obj, path):
    """Save obj (nested dicts, lists and tuples of tnet or torch tensors, numpy arrays, numbers,
    strings and None) to path, atomically. Tuples come back as lists."""
    arrays = []
    tree = json.dumps({"format": FORMAT, "obj": _encode(obj, arrays)})
    members = {f"a{i}": a for i, a in enumerate(arrays)}
    members[_TREE] = np.frombuffer(tree.encode(), dtype=np.uint8)
    atomic_write(path, lambda f: np.savez(f, **members))


def load(path):
    """What save(obj, path) stored; tensors come back as tnet.Tensors on tnet's device, arrays
    as numpy arrays. Raises LoadError, one line, for any file it cannot read."""
    from .tensor import Tensor, _as_storage
    if not os.path.isfile(path):
        raise LoadError(f"{path}: no such file")
    with open(path, "rb") as f:
        raw = f.read()
    if not raw:
        raise LoadError(f"{path}: the file is empty")
    if raw[:1] == b"\x80":  # a pickle's protocol opcode: never unpickled, it could run code
        raise LoadError(f"{path}: holds pickled data, which tnet never loads (it could run code)")
    if not raw.startswith(b"PK"):
        raise LoadError(f"{path}: not a file written by tnet.save (not a zip archive)")
    try:
        archive = np.load(io.BytesIO(raw), allow_pickle=False)
        with archive:
            if _TREE not in archive.files:
                raise LoadError(f"{path}: not a file written by tnet.save")
            tree = json.loads(archive[_TREE].tobytes().decode())
            if not isinstance(tree, dict) or tree.get("format") != FORMAT:
                raise LoadError(f"{path}: not a file written by tnet.save")
            arrays = {int(name[1:]): archive[name] for name in archive.files if name != _TREE}
    except LoadError:
        raise
    except Exception as e:  # a damaged archive can raise almost anything (SyntaxError from a .npy header)
        # allow_pickle=False refuses a pickled member before anything in it runs
        raise LoadError(f"{path}: not a readable tnet file ({type(e).__name__}: {e})") from None
    try:
        return _decode(tree["obj"], arrays, lambda t: Tensor(_as_storage(t, t.dtype)))
    except (KeyError, TypeError, IndexError, AttributeError) as e:
        raise LoadError(f"{path}: corrupt tnet file ({type(e).__name__}: {e})") from None
