"""tnet.save and tnet.load: nested dicts and lists of tensors, arrays, numbers and strings in
one .npz file, with no pickle. The arrays are the archive's stored (uncompressed) .npy members;
the structure is a JSON document stored beside them as bytes. load reads the zip directory and
the .npy headers itself, strictly and within fixed limits, and allows only number dtypes, so a
file from elsewhere never runs code and costs no more memory than its own size. Writes are atomic: a temporary file in the
same folder, fsync, then a rename over the target."""
import argparse
import collections
import errno
import io
import json
import math
import os
import struct
import zlib

import numpy as np
import torch

FORMAT = "tnet.save/1"
# the format of files in which tensors share a member (_Saved.place_tensors): a tnet that reads only the first says
# "unknown format"; files without such tensors keep the first, which every tnet reads
SHARED_FORMAT = "tnet.save/2"
_TREE = "__tree__"  # the archive member holding the JSON structure
# torch dtypes numpy lacks travel as same-size integers, tagged with their own name
_AS_BITS = {"bfloat16": (torch.int16, np.int16)}


# Limits a file must keep for load to read it; tnet.save refuses what would pass them.
MAX_DEPTH = 100  # nested lists and dicts
_MAX_MEMBERS = 1 << 15  # members of one file
_MAX_NAME = 256  # bytes of a member's name
_MAX_TREE = 16 << 20  # bytes of the JSON structure
_CHUNK = 1 << 20  # members are read this much at a time
_TENSOR_DTYPES = {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bfloat16"}
_DTYPES = {name: d for name, d in vars(torch).items() if isinstance(d, torch.dtype)}  # torch.float32's "float32"...
_ARRAY_KINDS = "biufc"  # bool, ints, floats, complex: no objects, strings or records
_EOCD = struct.Struct("<4s4H2IH")  # zip's end of central directory record
_EOCD64 = struct.Struct("<4sQ2H2I4Q")  # its zip64 form, found through the locator
_LOCATOR64 = struct.Struct("<4sIQI")
_CENTRAL = struct.Struct("<4s6H3I5H2I")  # one central directory entry
_LOCAL = struct.Struct("<4s5H3I2H")  # one member's local header


class LoadError(ValueError):
    """A file tnet.load cannot read: missing, empty, truncated, corrupt or not tnet's."""


class MissingFileError(LoadError, FileNotFoundError):
    """No file at the path: a LoadError, and the FileNotFoundError torch.load raises (a script's
    `except FileNotFoundError:` that starts afresh)."""


def _encode(obj, saved, depth=0):
    """The JSON node for obj, its arrays and tensors added to saved (a _Saved). Refuses (ValueError) whatever load
    would refuse, so that every file save writes loads."""
    from .tensor import Tensor
    if depth > MAX_DEPTH:
        raise ValueError(f"tnet.save: nested deeper than {MAX_DEPTH} levels")
    if isinstance(obj, (Tensor, torch.Tensor)):
        if id(obj) in saved.seen:  # the same tensor again: one object on load, as torch's
            return saved.again(obj)
        # a Parameter comes back a Parameter, and a tensor that requires grad requires it, as torch's (a script
        # that saves a learned tensor assigns it back to its module)
        flags = {"parameter": True} if _is_parameter(obj) else {}
        if obj.requires_grad:
            flags["requires_grad"] = True
        t = (obj.memory if isinstance(obj, Tensor) else obj).detach()
        name = str(t.dtype).removeprefix("torch.")
        if name not in _TENSOR_DTYPES:
            raise ValueError(f"tnet.save: cannot store a {name} tensor ({', '.join(sorted(_TENSOR_DTYPES))} only)")
        node = {"dtype": name, **flags}  # its data ("$tensor": the member) placed by _Saved.place_tensors
        saved.tensors.append((node, t))
        saved.seen[id(obj)] = node
        return node
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _ARRAY_KINDS or obj.dtype.fields is not None:
            raise ValueError(f"tnet.save: cannot store an array of {obj.dtype} (bool, integer, float and "
                             "complex arrays only; no Python objects)")
        return {"$array": saved.add(obj)}
    if isinstance(obj, torch.dtype):  # a script's options (`args.dtype`, `args.device`) saved in its checkpoint
        return {"$dtype": str(obj).removeprefix("torch.")}
    if isinstance(obj, torch.device):
        return {"$device": str(obj)}
    if isinstance(obj, torch.Size):  # a tuple: before the tuples
        return {"$size": list(obj)}
    if isinstance(obj, np.generic):  # a numpy scalar (a best score by np.mean) comes back as one, as torch's
        if obj.dtype.kind not in _ARRAY_KINDS:
            raise ValueError(f"tnet.save: cannot store a numpy {obj.dtype} scalar (bool, integer, float and complex "
                             "only)")
        return {"$scalar": saved.add(np.asarray(obj))}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [_encode(v, saved, depth + 1) for v in obj]
    if isinstance(obj, set):  # a script's set of seen ids or labels; torch's weights_only load reads sets
        return {"$set": [_encode(v, saved, depth + 1) for v in obj]}
    if isinstance(obj, (bytes, bytearray)):  # each comes back as its own type, as torch's
        return {"$bytes": saved.add(np.frombuffer(bytes(obj), np.uint8)), "bytearray": isinstance(obj, bytearray)}
    if isinstance(obj, tuple):  # (a namedtuple as a plain tuple)
        return {"$tuple": [_encode(v, saved, depth + 1) for v in obj]}
    if isinstance(obj, argparse.Namespace):  # a script's parsed options (SupContrast saves `'opt': opt`)
        return {"$namespace": _encode(vars(obj), saved, depth + 1)}
    if isinstance(obj, collections.OrderedDict):  # a state_dict: its type and _metadata (module versions) kept
        node = {"$ordered": _encode(dict(obj), saved, depth + 1)}
        if getattr(obj, "_metadata", None) is not None:
            node["metadata"] = _encode(dict(obj._metadata), saved, depth + 1)
        return node
    if isinstance(obj, collections.Counter):  # MultiStepLR's milestones: its closed form calls .elements()
        return {"$counter": _encode(dict(obj), saved, depth + 1)}
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in obj):
            return {k: _encode(v, saved, depth + 1) for k, v in obj.items()}
        if all(isinstance(k, (str, int)) for k in obj):  # int keys (an optimizer's state)
            return {"$items": [[k, _encode(v, saved, depth + 1)] for k, v in obj.items()]}
        raise ValueError("tnet.save: dict keys must be strings or ints")
    raise ValueError(f"tnet.save: cannot store a {type(obj).__name__} (tensors, arrays, numbers, strings, bytes, "
                     "None, lists, tuples, sets, dicts, Counters, argparse Namespaces, dtypes, devices and sizes only)")


def _is_parameter(t):
    from .nn import Parameter
    return isinstance(t, (Parameter, torch.nn.Parameter))


class _Saved:
    """What save gathers while it walks obj: the arrays to store, and the tensors, whose data is placed once all are
    seen (place_tensors), as tensors that share memory are stored together; a tensor met again is a reference to
    its first node (again)."""

    def __init__(self):
        self.arrays, self.tensors = [], []  # tensors: (node, torch tensor) pairs
        self.seen, self.ids = {}, 0  # seen: each tensor's node, by the object's id (the tree holds the objects)

    def again(self, obj):
        """The node of a tensor met before: {"$same": i}, i the "id" its first node now carries."""
        node = self.seen[id(obj)]
        if "id" not in node:
            node["id"], self.ids = self.ids, self.ids + 1
        return {"$same": node["id"]}

    def add(self, a):
        """a stored as a member of its own: its index."""
        if len(self.arrays) >= _MAX_MEMBERS - 1:  # one member holds the structure
            raise ValueError(f"tnet.save: more than {_MAX_MEMBERS - 1} arrays in one file")
        self.arrays.append(a)
        return len(self.arrays) - 1

    def place_tensors(self):
        """Each tensor's data into its node; whether the file needs the second format (tensors that share a member,
        or a tensor met twice). A tensor whose memory no other saved tensor shares: its values as an
        array of its shape (the format's first form). Tensors that share memory (`{'a': t, 'b': t[1:]}`, tied
        weights' state_dict entries): one 1-D array of the span of memory they cover, each tensor a view of it by
        "offset", "size" and "stride" (in elements), so that load gives them one memory again, as torch.load's.
        Memory is shared where the storage and the dtype are one (a view of another dtype is saved apart)."""
        groups, shared = {}, self.ids > 0
        for node, t in self.tensors:
            key = (t.untyped_storage().data_ptr(), t.dtype) if t.numel() else id(node)
            groups.setdefault(key, []).append((node, t))
        for group in groups.values():
            if len(group) == 1:
                node, t = group[0]
                node["$tensor"] = self.add(_host_array(t.contiguous()))
                continue
            start = min(t.storage_offset() for _, t in group)
            end = max(t.storage_offset() + _reach(t.shape, t.stride()) for _, t in group)
            member, shared = self.add(_host_array(group[0][1].as_strided((end - start,), (1,), start))), True
            for node, t in group:
                node.update({"$tensor": member, "offset": t.storage_offset() - start, "size": list(t.shape),
                             "stride": list(t.stride())})
        return shared


def _reach(size, stride):
    """The elements from a view's first to just past its last (of a view with elements and strides >= 0)."""
    return 1 + sum((n - 1) * s for n, s in zip(size, stride))


def _host_array(t):
    """A torch tensor's values as a numpy array on the host (dtypes numpy lacks as same-size integers)."""
    name = str(t.dtype).removeprefix("torch.")
    t = t.cpu()
    return (t.view(_AS_BITS[name][0]) if name in _AS_BITS else t).numpy()


class WriteError(OSError):
    """A file atomic_write could not write; the previous file at the path is intact."""


def atomic_write(path, write):
    """write(file) into path + ".tmp", fsync it, rename it over path, then fsync the folder: a
    crash or a full disk never leaves a half-written file at path. The temporary name is fixed so
    that one left by a killed writer is replaced by the next write. The mode honours the umask
    (0644 typically), as torch.save's files do. path: a str or os.PathLike."""
    path = os.fspath(path)
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


def save(obj, path, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True):
    """Save obj (nested dicts, lists, tuples and sets of tnet or torch tensors, numpy arrays, numbers, strings, bytes,
    None, torch dtypes, devices and sizes, and argparse Namespaces of them) to path, atomically (a file object, such
    as io.BytesIO, is written from where it stands). Tuples come back as tuples (an optimizer's betas, a script's
    input size), Parameters as Parameters, tensors with their requires_grad and OrderedDicts (a state_dict) with
    their _metadata, as torch's, and tensors that share memory (a tensor and its slice, tied weights) sharing it
    again, one tensor saved twice as one object (views in two dtypes load apart). torch.save's other
    arguments are accepted and change nothing: tnet's format is its own, never pickle."""
    saved = _Saved()
    node = _encode(obj, saved)
    tree = json.dumps({"format": SHARED_FORMAT if saved.place_tensors() else FORMAT, "obj": node}).encode()
    if len(tree) > _MAX_TREE:
        raise ValueError(f"tnet.save: the structure is {len(tree)} bytes of JSON (at most {_MAX_TREE}); "
                         "store long lists of numbers as arrays")
    members = {f"a{i}": a for i, a in enumerate(saved.arrays)}
    members[_TREE] = np.frombuffer(tree, dtype=np.uint8)
    if hasattr(path, "write"):  # a file object (io.BytesIO), as torch.save takes: written where it stands
        np.savez(path, **members)
    else:
        atomic_write(path, lambda f: np.savez(f, **members))


class _Bad(Exception):
    """A problem in the file, turned into a LoadError naming the file."""


def _members(f, size):
    """{name: (flag, method, crc, compressed size, size, header offset)} from the zip's central
    directory, read with caps so that a crafted directory costs no more than the limits allow.
    tnet.save writes no archive comment, so the end record is the file's last 22 bytes."""
    if size < _EOCD.size:
        raise _Bad("truncated (no zip directory)")
    f.seek(size - _EOCD.size)
    sig, _, _, _, count, cd_size, cd_offset, _ = _EOCD.unpack(f.read(_EOCD.size))
    end = size - _EOCD.size
    if sig != b"PK\x05\x06":
        raise _Bad("truncated or damaged (no zip directory at the end)")
    if end >= _LOCATOR64.size:
        f.seek(end - _LOCATOR64.size)
        loc = _LOCATOR64.unpack(f.read(_LOCATOR64.size))
        if loc[0] == b"PK\x06\x07":  # zip64: the real counts are in the zip64 record
            if loc[2] + _EOCD64.size > end - _LOCATOR64.size:
                raise _Bad("damaged zip64 directory")
            f.seek(loc[2])
            rec = _EOCD64.unpack(f.read(_EOCD64.size))
            if rec[0] != b"PK\x06\x06":
                raise _Bad("damaged zip64 directory")
            count, cd_size, cd_offset, end = rec[7], rec[8], rec[9], loc[2]
    if count > _MAX_MEMBERS:
        raise _Bad(f"the archive lists {count} members (at most {_MAX_MEMBERS})")
    if cd_offset + cd_size > end or cd_size > count * (_CENTRAL.size + _MAX_NAME + 64):
        raise _Bad("damaged zip directory (its size does not fit the file)")
    f.seek(cd_offset)
    cd = f.read(cd_size)
    members, pos = {}, 0
    for _ in range(count):
        if pos + _CENTRAL.size > len(cd):
            raise _Bad("damaged zip directory (truncated entry)")
        e = _CENTRAL.unpack_from(cd, pos)
        if e[0] != b"PK\x01\x02":
            raise _Bad("damaged zip directory (bad entry signature)")
        flag, method, crc, csize, usize, nlen, xlen, clen, offset = e[3], e[4], e[7], e[8], e[9], e[10], e[11], e[12], e[16]
        if nlen > _MAX_NAME:
            raise _Bad(f"a member's name is {nlen} bytes long (at most {_MAX_NAME})")
        pos += _CENTRAL.size
        name = cd[pos:pos + nlen].decode("utf-8", "replace")
        extra = cd[pos + nlen:pos + nlen + xlen]
        pos += nlen + xlen + clen
        if pos > len(cd):
            raise _Bad("damaged zip directory (truncated entry)")
        usize, csize, offset = _zip64_sizes(extra, usize, csize, offset)
        if name in members:
            raise _Bad(f"member {name} appears twice")
        if offset >= cd_offset:
            raise _Bad(f"member {name}: its offset lies outside the archive")
        members[name] = (flag, method, crc, csize, usize, offset)
    return members, cd_offset


def _zip64_sizes(extra, usize, csize, offset):
    """The sizes and offset a zip64 extra field stands in for (those stored as 0xFFFFFFFF)."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, n = struct.unpack_from("<2H", extra, pos)
        body, pos = extra[pos + 4:pos + 4 + n], pos + 4 + n
        if tag == 1:
            values = [v for v in (usize, csize, offset) if v == 0xFFFFFFFF]
            big = struct.unpack_from(f"<{min(len(values), len(body) // 8)}Q", body)
            it = iter(big)
            usize, csize, offset = (next(it, v) if v == 0xFFFFFFFF else v for v in (usize, csize, offset))
    return usize, csize, offset


def _read_member(f, name, entry, limit, cap=None):
    """The bytes of one stored member, read in chunks into a buffer no larger than its declared
    size, which must fit inside the archive (and under cap); the CRC is checked."""
    flag, method, crc, csize, usize, offset = entry
    if flag & 1:
        raise _Bad(f"member {name} is encrypted")
    if method != 0:  # tnet.save never compresses: a deflated member could inflate to any size
        raise _Bad(f"member {name} is compressed (tnet.save never writes compressed members)")
    if csize != usize:
        raise _Bad(f"member {name}: stored size {csize} differs from its size {usize}")
    f.seek(offset)
    head = f.read(_LOCAL.size)
    if len(head) < _LOCAL.size or head[:4] != b"PK\x03\x04":
        raise _Bad(f"member {name}: damaged local header")
    nlen, xlen = _LOCAL.unpack(head)[-2:]
    if f.read(nlen).decode("utf-8", "replace") != name:
        raise _Bad(f"member {name}: its local header names another member")
    start = offset + _LOCAL.size + nlen + xlen
    if start + usize > limit:
        raise _Bad(f"member {name} declares {usize} bytes, more than the file holds")
    if cap is not None and usize > cap:
        raise _Bad(f"member {name} is {usize} bytes (at most {cap})")
    f.seek(start)
    buf, got, check = bytearray(usize), 0, 0
    view = memoryview(buf)
    while got < usize:
        n = f.readinto(view[got:got + _CHUNK])
        if not n:
            raise _Bad(f"member {name} is truncated")
        check = zlib.crc32(view[got:got + n], check)
        got += n
    if check != crc:
        raise _Bad(f"member {name} is damaged (CRC mismatch)")
    return buf


def _parse_npy(name, buf):
    """The numpy array an .npy member holds, strictly: a version 1 or 2 header, an allowed dtype,
    and exactly shape x itemsize bytes of data after it. Non-native byte order is swapped."""
    if bytes(buf[:6]) != b"\x93NUMPY" or len(buf) < 10:
        raise _Bad(f"member {name} has no npy header")
    stream = io.BytesIO(buf[:10 + 65536])
    version = np.lib.format.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise _Bad(f"member {name}: npy version {version} is not supported")
    try:
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(stream)
    except Exception as e:  # numpy raises ValueError, SyntaxError or TypeError for a bad header
        raise _Bad(f"member {name}: bad npy header ({type(e).__name__}: {e})") from None
    if (dtype.kind not in _ARRAY_KINDS or dtype.fields is not None or dtype.shape != ()
            or dtype.itemsize == 0):
        raise _Bad(f"member {name}: dtype {dtype.str} is not supported")
    if not all(type(d) is int and d >= 0 for d in shape):
        raise _Bad(f"member {name}: bad shape {shape}")
    offset = stream.tell()
    if math.prod(shape) * dtype.itemsize != len(buf) - offset:
        raise _Bad(f"member {name}: shape {shape} of {dtype.str} needs {math.prod(shape) * dtype.itemsize} "
                   f"bytes, the member holds {len(buf) - offset}")
    a = np.ndarray(shape, dtype, buffer=buf, offset=offset, order="F" if fortran else "C")
    return a if dtype.isnative else a.astype(dtype.newbyteorder("="))


_VIEW_KEYS = {"offset", "size", "stride"}  # a tensor entry's view of a member that tensors share


def _viewed(memory, obj, where):
    """The view of memory (a member's 1-D tensor) that a tensor entry's offset, size and stride name, checked to lie
    within it."""
    offset, size, stride = obj["offset"], obj["size"], obj["stride"]
    ints = lambda v: isinstance(v, list) and all(type(n) is int and n >= 0 for n in v)  # noqa: E731
    if not (memory.dim() == 1 and type(offset) is int and offset >= 0 and ints(size) and ints(stride)
            and len(size) == len(stride) and (0 in size or offset + _reach(size, stride) <= memory.numel())):
        raise _Bad(f"{where}: a view beyond its member or malformed ({str(obj)[:80]})")
    try:
        return memory.as_strided(size, stride, offset)
    except RuntimeError as e:  # sizes past int64
        raise _Bad(f"{where}: a malformed view ({e})") from None


class _Loaded:
    """What load keeps while it decodes a file: the members, each read on first use (array), so that only members
    the structure refers to are read; one device copy of a member that tensors share (tensor); and the tensors named
    for their repeats ("id", "$same")."""

    def __init__(self, f, members, limit):
        self.f, self.members, self.limit = f, members, limit
        self.arrays, self.shared, self.named = {}, {}, {}

    def array(self, i, where):
        name = f"a{i}.npy"
        if type(i) is not int or name not in self.members:
            raise _Bad(f"{where}: refers to a missing member {i!r}")
        if i not in self.arrays:
            self.arrays[i] = _parse_npy(name, _read_member(self.f, name, self.members[name], self.limit))
        return self.arrays[i]

    def tensor(self, t, member=None):
        """t (a host torch tensor) as a tnet Tensor on tnet's device; one device copy of a shared member."""
        from .tensor import Tensor, as_storage
        if member is None:
            return Tensor(as_storage(t, t.dtype))
        if member not in self.shared:
            self.shared[member] = as_storage(t, t.dtype)
        return Tensor(self.shared[member])


def _decode(obj, loaded, where="obj", depth=0):
    """The object a JSON node stands for (loaded: the _Loaded file); every node's type and keys are checked."""
    if depth > MAX_DEPTH:
        raise _Bad(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [_decode(v, loaded, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]
    if not isinstance(obj, dict):
        raise _Bad(f"{where}: unexpected {type(obj).__name__}")
    if "$tensor" in obj:
        view = obj.keys() & _VIEW_KEYS
        if not {"$tensor", "dtype"} <= obj.keys() <= {"$tensor", "dtype", "parameter", "requires_grad", "id",
                                                     *_VIEW_KEYS} or \
                obj["dtype"] not in _TENSOR_DTYPES or not all(obj.get(k, True) is True for k in ("parameter", "requires_grad")) \
                or view and view != _VIEW_KEYS or type(obj.get("id", 0)) is not int or obj.get("id") in loaded.named:
            raise _Bad(f"{where}: bad tensor entry {str(obj)[:80]}")
        a, tag = loaded.array(obj["$tensor"], where), obj["dtype"]
        if tag in _AS_BITS:  # stored as same-size integers, of the same shape
            if a.dtype not in (np.int16, np.uint16):
                raise _Bad(f"{where}: a {tag} tensor stored as {a.dtype} (must be int16)")
            t = torch.from_numpy(a.view(np.int16)).view(getattr(torch, tag))
        else:
            t = torch.from_numpy(a)
            if str(t.dtype).removeprefix("torch.") != tag:
                raise _Bad(f"{where}: a {tag} tensor stored as {a.dtype}")
        requires_grad = obj.get("requires_grad", False)
        if not isinstance(requires_grad, bool):
            raise _Bad(f"{where}: requires_grad is {type(requires_grad).__name__}, not a bool")
        if requires_grad and not t.is_floating_point():
            raise _Bad(f"{where}: a {tag} tensor that requires grad")
        t = loaded.tensor(t, obj["$tensor"] if view else None)
        if view:  # a view of memory that other tensors of the file share (_Saved.place_tensors)
            from .tensor import Tensor
            t = Tensor(_viewed(t.memory, obj, where))
        if obj.get("parameter"):
            from .nn import Parameter
            t = Parameter(t, requires_grad=requires_grad)
        else:
            t.requires_grad_(requires_grad)
        if "id" in obj:  # met again further on ("$same")
            loaded.named[obj["id"]] = t
        return t
    if "$same" in obj:
        if obj.keys() != {"$same"} or type(obj["$same"]) is not int or obj["$same"] not in loaded.named:
            raise _Bad(f"{where}: bad or early reference to a tensor {str(obj)[:80]}")
        return loaded.named[obj["$same"]]
    if "$array" in obj:
        if obj.keys() != {"$array"}:
            raise _Bad(f"{where}: bad array entry {str(obj)[:80]}")
        return loaded.array(obj["$array"], where)
    if "$counter" in obj:
        counts = _decode(obj["$counter"], loaded, where, depth + 1) if obj.keys() == {"$counter"} else None
        if not isinstance(counts, dict):
            raise _Bad(f"{where}: bad counter entry")
        return collections.Counter(counts)
    if "$scalar" in obj:
        a = loaded.array(obj["$scalar"], where) if obj.keys() == {"$scalar"} else None
        if a is None or a.ndim != 0:
            raise _Bad(f"{where}: bad numpy scalar entry {str(obj)[:80]}")
        return a[()]
    if "$ordered" in obj:
        if not {"$ordered"} <= obj.keys() <= {"$ordered", "metadata"}:
            raise _Bad(f"{where}: bad ordered dict entry")
        items, metadata = (_decode(obj.get(k, {}), loaded, f"{where}.{k}", depth + 1) for k in ("$ordered", "metadata"))
        if not (isinstance(items, dict) and isinstance(metadata, dict)):
            raise _Bad(f"{where}: bad ordered dict entry")
        out = collections.OrderedDict(items)
        if "metadata" in obj:
            out._metadata = collections.OrderedDict(metadata)
        return out
    if "$dtype" in obj:
        if obj.keys() != {"$dtype"} or obj["$dtype"] not in _DTYPES:
            raise _Bad(f"{where}: bad dtype entry {str(obj)[:80]}")
        return _DTYPES[obj["$dtype"]]
    if "$device" in obj:
        try:
            if obj.keys() != {"$device"} or not isinstance(obj["$device"], str):
                raise ValueError
            return torch.device(obj["$device"])
        except (ValueError, RuntimeError):
            raise _Bad(f"{where}: bad device entry {str(obj)[:80]}") from None
    if "$size" in obj:
        if obj.keys() != {"$size"} or not isinstance(obj["$size"], list) or \
                not all(type(n) is int and n >= 0 for n in obj["$size"]):
            raise _Bad(f"{where}: bad size entry {str(obj)[:80]}")
        return torch.Size(obj["$size"])
    if "$tuple" in obj:
        if obj.keys() != {"$tuple"} or not isinstance(obj["$tuple"], list):
            raise _Bad(f"{where}: bad tuple entry")
        return tuple(_decode(v, loaded, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj["$tuple"]))
    if "$set" in obj:
        if obj.keys() != {"$set"} or not isinstance(obj["$set"], list):
            raise _Bad(f"{where}: bad set entry")
        try:
            return set(_decode(v, loaded, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj["$set"]))
        except TypeError:
            raise _Bad(f"{where}: a set of unhashable members") from None
    if "$bytes" in obj:
        if obj.keys() != {"$bytes", "bytearray"} or not isinstance(obj["bytearray"], bool):
            raise _Bad(f"{where}: bad bytes entry {str(obj)[:80]}")
        a = loaded.array(obj["$bytes"], where)
        if a.dtype != np.uint8 or a.ndim != 1:
            raise _Bad(f"{where}: bytes stored as a {a.dtype} array of {a.ndim} dimensions")
        return bytearray(a.tobytes()) if obj["bytearray"] else a.tobytes()
    if "$namespace" in obj:
        options = _decode(obj["$namespace"], loaded, where, depth + 1) if obj.keys() == {"$namespace"} else None
        if not (isinstance(options, dict) and all(isinstance(k, str) for k in options)):
            raise _Bad(f"{where}: bad namespace entry")
        return argparse.Namespace(**options)
    if "$items" in obj:
        items = obj["$items"]
        if obj.keys() != {"$items"} or not isinstance(items, list):
            raise _Bad(f"{where}: bad $items entry")
        out = {}
        for i, kv in enumerate(items):
            if not (isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], (str, int))):
                raise _Bad(f"{where}: $items entry {i} is not a [key, value] pair")
            out[kv[0]] = _decode(kv[1], loaded, f"{where}[{kv[0]!r}]", depth + 1)
        return out
    if any(k.startswith("$") for k in obj):  # save writes such keys through $items
        raise _Bad(f"{where}: unknown entry {next(k for k in obj if k.startswith('$'))!r}")
    return {k: _decode(v, loaded, f"{where}[{k!r}]", depth + 1) for k, v in obj.items()}


def load(path, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """What save(obj, path) stored (path may be a file object, read from where it stands); tensors come back as tnet.Tensors on tnet's device, arrays
    as numpy arrays. torch.load's other arguments are accepted and change nothing: tensors go to
    tnet's one device whatever map_location says, and a tnet file holds data only (never pickle),
    so every load is weights_only. Raises LoadError, one line, for any file it cannot read. The first bytes
    are checked before anything else is read, only the members the structure refers to are
    read, and no member may claim more bytes than the file holds, so memory stays within the
    file's size whatever it declares."""
    if hasattr(path, "read"):  # a file object, as torch.load takes: read from where it stands
        data = path.read()
        try:
            return _load(io.BytesIO(data), len(data))
        except _Bad as e:
            raise LoadError(f"{type(path).__name__}: {e}") from None
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise MissingFileError(f"{path}: no such file")
    try:
        with open(path, "rb") as f:
            return _load(f, os.fstat(f.fileno()).st_size)
    except _Bad as e:
        raise LoadError(f"{path}: {e}") from None
    except OSError as e:
        raise LoadError(f"{path}: cannot read it ({e.strerror or e})") from None


def _load(f, size):
    magic = f.read(4)
    if not magic:
        raise _Bad("the file is empty")
    if magic[:1] == b"\x80":  # a pickle's protocol opcode: never unpickled, it could run code
        raise _Bad("holds pickled data, which tnet never loads (it could run code)")
    if not magic.startswith(b"PK"):
        raise _Bad("not a file written by tnet.save (not a zip archive)")
    members, limit = _members(f, size)
    if _TREE + ".npy" not in members:
        raise _Bad("not a file written by tnet.save (no structure member)")
    a = _parse_npy(_TREE, _read_member(f, _TREE + ".npy", members[_TREE + ".npy"], limit, _MAX_TREE))
    if a.dtype != np.uint8 or a.ndim != 1:
        raise _Bad(f"not a file written by tnet.save ({_TREE} is {a.dtype} of shape {a.shape})")
    try:
        tree = json.loads(a.tobytes().decode())
    except RecursionError:
        raise _Bad(f"the structure is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError among them
        raise _Bad(f"corrupt structure ({type(e).__name__}: {e})") from None
    if not isinstance(tree, dict) or tree.get("format") not in (FORMAT, SHARED_FORMAT) or "obj" not in tree:
        raise _Bad("not a file written by tnet.save (unknown format)")
    return _decode(tree["obj"], _Loaded(f, members, limit))


# torch.serialization's allow-list for weights_only loads, which scripts fill before torch.load
# (`add_safe_globals([argparse.Namespace])`): tnet's files hold data only, so a load never
# unpickles a class and the list changes nothing; it is kept and read back, as torch's.
_safe_globals = []


def add_safe_globals(safe_globals):
    """Add classes (or (class, name) pairs) to the allow-list: kept, changing nothing (see above)."""
    _safe_globals.extend(g for g in safe_globals if g not in _safe_globals)


def get_safe_globals():
    return list(_safe_globals)


def clear_safe_globals():
    _safe_globals.clear()


class safe_globals:
    """A block within which the classes are on the allow-list (see add_safe_globals)."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        self._before = get_safe_globals()
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _safe_globals[:] = self._before
        return False
