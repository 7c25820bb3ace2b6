"""tnet.load against damaged and crafted files: each gives a one-line LoadError or loads exactly
what was saved, never another exception, a silent wrong result or a memory blow-up."""
import io
import json
import os
import struct
import zlib

import numpy as np
import pytest
import torch

import tnet
from tnet.serialize import FORMAT, MAX_DEPTH
from tnet import trainer
from helpers import peak_bytes


def _sample():
    return {"w": tnet.tensor(np.arange(12.0).reshape(3, 4)), "b": torch.arange(5).to(torch.bfloat16),
            "steps": {0: {"m": np.linspace(0, 1, 7)}, "$k": [1, 2.5, None, "x"]}, "flag": torch.tensor([True, False])}


def _same(a, b):
    """Equal values, dtypes and shapes, bit for bit (a torch tensor comes back as a tnet.Tensor)."""
    if isinstance(a, (tnet.Tensor, torch.Tensor)):
        if not isinstance(b, tnet.Tensor):
            return False
        a, b = a.memory if isinstance(a, tnet.Tensor) else a, b.memory
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and torch.equal(a.cpu().view(torch.uint8), b.cpu().view(torch.uint8)))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _load_or_refuse(path):
    """tnet.load(path), or None for a one-line LoadError; any other exception fails the test."""
    try:
        return tnet.load(path)
    except tnet.LoadError as e:
        assert "\n" not in str(e)
        return None


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fuzz") / "ok.npz")
    tnet.save(_sample(), path)
    with open(path, "rb") as f:
        return f.read()


def test_bit_flips_are_refused_or_harmless(tmp_path, saved):
    path, original = str(tmp_path / "flip.npz"), _sample()
    with open(path, "wb") as f:
        f.write(saved)
    fd = os.open(path, os.O_RDWR)  # each flip is written in place and undone: no file rewrites
    try:
        for i in range(len(saved)):
            # every bit of the first local header and of the zip directory, one bit a byte elsewhere
            for bit in range(8) if i < 40 or i >= len(saved) - 320 else [(i * 3) % 8]:
                os.pwrite(fd, bytes([saved[i] ^ (1 << bit)]), i)
                back = _load_or_refuse(path)
                assert back is None or _same(original, back), (i, bit)
                os.pwrite(fd, saved[i:i + 1], i)
    finally:
        os.close(fd)


def test_truncations_are_refused(tmp_path, saved):
    path = str(tmp_path / "cut.npz")
    with open(path, "wb") as f:
        f.write(saved)
    for n in sorted({*range(0, len(saved), 7), *range(len(saved) - 40, len(saved))}, reverse=True):
        os.truncate(path, n)
        assert _load_or_refuse(path) is None, n


def _npy(a):
    out = io.BytesIO()
    np.lib.format.write_array(out, a, allow_pickle=False)
    return out.getvalue()


def _npy_header(descr, shape, data=b""):
    """An .npy member with any header numpy would write, valid or not for tnet."""
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def _zip(members, count=None):
    """A zip archive of (name, bytes, method, declared size) members, written by hand so that
    any field can lie."""
    body, central = bytearray(), bytearray()
    for name, data, method, size in members:
        name, size = name.encode(), len(data) if size is None else size
        crc, csize = zlib.crc32(data), len(data)
        central += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, csize, size,
                               len(name), 0, 0, 0, 0, 0, len(body)) + name
        body += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, method, 0, 0, crc, csize, size, len(name), 0) + name + data
    n = len(members) if count is None else count
    return bytes(body + central + struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, n, n, len(central), len(body), 0))


def _tree(obj):
    return _npy(np.frombuffer(json.dumps({"format": FORMAT, "obj": obj}).encode(), np.uint8))


def _craft(tmp_path, obj, arrays=(), extra=(), tree=None):
    """A file whose structure is obj (JSON, as save writes it) and whose member a{i}.npy is arrays[i]."""
    members = [(f"a{i}.npy", a if isinstance(a, bytes) else _npy(a), 0, None) for i, a in enumerate(arrays)]
    members += [("__tree__.npy", _tree(obj) if tree is None else tree, 0, None), *extra]
    path = str(tmp_path / "crafted.npz")
    with open(path, "wb") as f:
        f.write(_zip(members))
    return path


def _nested(depth):
    return "[" * depth + "1" + "]" * depth


CRAFTED = {  # name: (structure, members, what the LoadError says)
    "nesting_beyond_json": (None, (), "nested deeper than 100"),
    "nesting_beyond_limit": (json.loads(_nested(MAX_DEPTH + 1)), (), "nested deeper than 100"),
    "items_single": ({"$items": [[0]]}, (), "not a .key, value. pair"),
    "items_triple": ({"$items": [[0, 1, 2]]}, (), "not a .key, value. pair"),
    "items_number": ({"$items": [5]}, (), "not a .key, value. pair"),
    "items_list_key": ({"$items": [[[0], 1]]}, (), "not a .key, value. pair"),
    "items_not_list": ({"$items": {"a": 1}}, (), "bad \\$items"),
    "bf16_on_float32": ({"$tensor": 0, "dtype": "bfloat16"}, (np.zeros(3, np.float32),), "bfloat16 tensor stored as float32"),
    "bf16_on_0d_uint8": ({"$tensor": 0, "dtype": "bfloat16"}, (np.zeros((), np.uint8),), "stored as uint8"),
    "bf16_on_odd_uint8": ({"$tensor": 0, "dtype": "bfloat16"}, (np.zeros(3, np.uint8),), "stored as uint8"),
    "dtype_tag_mismatch": ({"$tensor": 0, "dtype": "float32"}, (np.zeros(3, np.int64),), "float32 tensor stored as int64"),
    "complex_tensor": ({"$tensor": 0, "dtype": "complex64"}, (np.zeros(3, np.complex64),), "bad tensor entry"),
    "tensor_extra_key": ({"$tensor": 0, "dtype": "int64", "x": 1}, (np.zeros(3, np.int64),), "bad tensor entry"),
    "no_npy_header": ({"$array": 0}, (b"raw bytes, no header",), "a0.npy has no npy header"),
    "object_dtype": ({"$array": 0}, (_npy_header("|O", (1,), b"\x80" * 8),), "dtype |O is not supported"),
    "string_dtype": ({"$array": 0}, (_npy_header("<U2", (1,), b"a\0\0\0b\0\0\0"),), "dtype <U2 is not supported"),
    "record_dtype": ({"$array": 0}, (_npy_header([("a", "<f4")], (1,), b"\0" * 4),), "is not supported"),
    "short_data": ({"$array": 0}, (_npy_header("<f4", (10,), b"\0" * 12),), "needs 40 bytes, the member holds 12"),
    "long_data": ({"$array": 0}, (_npy_header("<f4", (1,), b"\0" * 12),), "needs 4 bytes, the member holds 12"),
    "negative_shape": ({"$array": 0}, (_npy_header("<f4", (-1,), b""),), "bad"),
    "bad_header": ({"$array": 0}, (b"\x93NUMPY\x01\x00\x06\x00{'a':\n",), "bad npy header"),
    "missing_member": ({"$array": 3}, (), "refers to a missing member 3"),
    "bool_index": ({"$array": True}, (np.zeros(1),), "refers to a missing member True"),
    "string_index": ({"$tensor": "0", "dtype": "int64"}, (np.zeros(1, np.int64),), "refers to a missing member '0'"),
    "unknown_entry": ({"$pickle": "x"}, (), "unknown entry '\\$pickle'"),
    "array_extra_key": ({"$array": 0, "dtype": "x"}, (np.zeros(1),), "bad array entry"),
    "tensor_flag_false": ({"$tensor": 0, "dtype": "float32", "parameter": False}, (np.zeros(1, np.float32),),
                          "bad tensor entry"),
    "int_requires_grad": ({"$tensor": 0, "dtype": "int64", "requires_grad": True}, (np.zeros(1, np.int64),),
                          "int64 tensor that requires grad"),
    "ordered_not_dict": ({"$ordered": [1, 2]}, (), "bad ordered dict entry"),
    "ordered_extra_key": ({"$ordered": {}, "x": 1}, (), "bad ordered dict entry"),
    "unknown_dtype": ({"$dtype": "_dynamo"}, (), "bad dtype entry"),
    "bad_device": ({"$device": "gpu:x"}, (), "bad device entry"),
    "device_not_str": ({"$device": 0}, (), "bad device entry"),
    "negative_size": ({"$size": [2, -1]}, (), "bad size entry"),
}


@pytest.mark.parametrize("case", CRAFTED)
def test_crafted_structures_are_refused(tmp_path, case):
    obj, arrays, match = CRAFTED[case]
    tree = _npy(np.frombuffer(f'{{"format": "{FORMAT}", "obj": {_nested(100_000)}}}'.encode(), np.uint8)) \
        if obj is None else None
    path = _craft(tmp_path, obj, arrays, tree=tree)
    with pytest.raises(tnet.LoadError, match=match) as e:
        tnet.load(path)
    assert "\n" not in str(e.value) and str(e.value).startswith(path + ": ")
    with pytest.raises(SystemExit, match="^error: cannot resume: "):  # train.py --resume says it in one line
        trainer.read_checkpoint(path, {})


@pytest.mark.parametrize("tree,match", [
    (_npy(np.arange(3)), "__tree__ is int64"),
    (_npy(np.frombuffer(b"\xff\xfe", np.uint8)), "corrupt structure"),
    (_npy(np.frombuffer(b'{"format": "other", "obj": 1}', np.uint8)), "unknown format"),
    (_npy(np.frombuffer(b'[1]', np.uint8)), "unknown format"),
], ids=["int64", "not_utf8", "other_format", "not_a_dict"])
def test_crafted_tree_members_are_refused(tmp_path, tree, match):
    with pytest.raises(tnet.LoadError, match=match):
        tnet.load(_craft(tmp_path, None, tree=tree))


def test_big_endian_and_fortran_members_load_as_their_values(tmp_path):
    a = np.arange(6, dtype=">f4").reshape(2, 3)
    path = _craft(tmp_path, {"t": {"$tensor": 0, "dtype": "float32"}, "a": {"$array": 1}, "f": {"$array": 2}},
                  (a, a.astype(">i8"), np.asfortranarray(a.astype("<f8"))))
    back = tnet.load(path)
    assert back["t"].numpy().tolist() == a.tolist() and back["t"].dtype == torch.float32
    assert back["a"].dtype == np.int64 and back["a"].tolist() == a.tolist() and back["f"].tolist() == a.tolist()


def test_bf16_tag_on_int16_keeps_the_shape(tmp_path):
    bits = torch.tensor([1.0, -2.0, 3.5], dtype=torch.bfloat16).view(torch.int16).numpy()
    back = tnet.load(_craft(tmp_path, [{"$tensor": 0, "dtype": "bfloat16"}, {"$tensor": 1, "dtype": "bfloat16"}],
                            (bits, bits[0].reshape(()))))
    assert back[0].shape == (3,) and back[0].memory.float().tolist() == [1.0, -2.0, 3.5]
    assert back[1].shape == () and back[1].memory.float().item() == 1.0


def _refused(path, match):
    def run():
        with pytest.raises(tnet.LoadError, match=match):
            tnet.load(path)
    return run


def test_a_zip_bomb_never_inflates(tmp_path):
    """A 1 MiB deflated member that inflates to 1 GiB, and a stored one declaring 1 GiB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)  # after a full flush each 16 MiB of zeros packs the same
    bomb = (packer.compress(bytes(1 << 24)) + packer.flush(zlib.Z_FULL_FLUSH)) * 64 + packer.flush()
    assert len(bomb) < 2 << 20
    path = _craft(tmp_path, {"$array": 0}, (), extra=[("a0.npy", bomb, 8, 1 << 30)])
    assert peak_bytes(_refused(path, "a0.npy is compressed")) < 8 << 20
    path = _craft(tmp_path, {"$array": 0}, (), extra=[("a0.npy", b"\x93NUMPY" + bytes(1 << 20), 0, 1 << 30)])
    assert peak_bytes(_refused(path, "differs from its size")) < 8 << 20
    # a member no key refers to is never read
    path = _craft(tmp_path, {"x": 1}, (), extra=[("a0.npy", bomb, 8, 1 << 30)])
    assert peak_bytes(lambda: tnet.load(path)) < 8 << 20 and tnet.load(path) == {"x": 1}


def test_zip_directory_limits(tmp_path):
    path = str(tmp_path / "z.npz")
    cases = [
        (_zip([("__tree__.npy", _tree(1), 0, None)], count=40_000), "lists 40000 members"),
        (_zip([("n" * 300, b"", 0, None), ("__tree__.npy", _tree(1), 0, None)]), "300 bytes long"),
        (_zip([("__tree__.npy", _tree(1), 0, None)] * 2), "appears twice"),
        (_zip([("__tree__.npy", _tree(1), 0, None)]) + b"comment", "no zip directory"),
        (_zip([("x.npy", _tree(1), 0, None)]), "no structure member"),
    ]
    for content, match in cases:
        with open(path, "wb") as f:
            f.write(content)
        with pytest.raises(tnet.LoadError, match=match):
            tnet.load(path)


def test_a_big_sparse_file_costs_no_memory(tmp_path):
    path = str(tmp_path / "big.npz")
    with open(path, "wb") as f:  # a valid start, then 2 GiB of zeros: sparse, no disk
        f.write(_zip([("__tree__.npy", _tree(1), 0, None)])[:40])
        f.truncate(2 << 30)
    assert peak_bytes(_refused(path, "no zip directory")) < 4 << 20
