"""tnet.save and tnet.load: round trips, and files that must be refused without running anything."""
import collections
import io
import json
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import tnet
from tnet.models import cifar10_quick
from helpers import Touch, peak_bytes


def test_round_trip(tmp_path):
    obj = {"weights": {"w": tnet.tensor(np.arange(6.0).reshape(2, 3)), "b": torch.ones(3, dtype=torch.bfloat16)},
           "array": np.arange(5, dtype=np.int64), "numbers": [1, 2.5, float("inf"), True, None], "name": "x",
           "pair": (3, "y"), "by_index": {0: np.zeros(2), 7: "seven"}, "$odd": 1}
    path = str(tmp_path / "obj.npz")
    tnet.save(obj, path)
    back = tnet.load(path)
    assert isinstance(back["weights"]["w"], tnet.Tensor)
    np.testing.assert_array_equal(back["weights"]["w"].numpy(), obj["weights"]["w"].numpy())
    assert back["weights"]["b"].dtype == torch.bfloat16
    assert back["weights"]["b"].memory.float().tolist() == [1.0, 1.0, 1.0]
    np.testing.assert_array_equal(back["array"], obj["array"])
    assert back["numbers"] == obj["numbers"] and back["name"] == "x" and back["pair"] == (3, "y")  # a tuple, as torch's
    assert sorted(back["by_index"]) == [0, 7] and back["by_index"][7] == "seven" and back["$odd"] == 1
    assert os.listdir(tmp_path) == ["obj.npz"]  # no temporary file left behind


def test_numpy_scalars_come_back_as_numpy_scalars(tmp_path):
    """A checkpoint's numpy scalars (a best score by np.mean, an epoch by np.argmin) load with their types and values,
    as torch.load(weights_only=False) gives them back; a string scalar is refused."""
    obj = {"best": np.float64(0.1), "step": np.int64(2 ** 40 + 1), "lr": np.float32(1e-3), "ok": np.bool_(True),
           "u": np.uint8(255), "z": np.complex128(1 - 2j), "lists": [np.float16(0.5), np.int32(-3)]}
    path = str(tmp_path / "scalars.npz")
    tnet.save(obj, path)
    back = tnet.load(path)
    flat = lambda d: [d[k] for k in ("best", "step", "lr", "ok", "u", "z")] + d["lists"]
    for a, b in zip(flat(back), flat(obj)):
        assert type(a) is type(b) and a == b, (a, b)
    with pytest.raises(ValueError, match="numpy <U1 scalar"):
        tnet.save({"s": np.str_("x")}, str(tmp_path / "s.npz"))


def test_counter_comes_back_as_one(tmp_path):
    """A Counter (MultiStepLR's milestones in its state_dict) loads as a Counter, as torch.load's, so that a resumed
    MultiStepLR stepped with an epoch (its closed form, by milestones.elements()) gives torch's lrs."""
    w = tnet.nn.Parameter(tnet.ones(2))
    sd = tnet.optim.lr_scheduler.MultiStepLR(tnet.optim.SGD([w], lr=0.1), milestones=[2, 2, 4]).state_dict()
    path = str(tmp_path / "sched.npz")
    tnet.save({"scheduler": sd, "words": collections.Counter("abca")}, path)
    back = tnet.load(path)
    assert type(back["scheduler"]["milestones"]) is collections.Counter and back["scheduler"]["milestones"] == {2: 2, 4: 1}
    assert back["words"] == collections.Counter("abca") and type(back["words"]) is collections.Counter
    resumed = tnet.optim.lr_scheduler.MultiStepLR(tnet.optim.SGD([w], lr=0.1), milestones=[9])
    resumed.load_state_dict(back["scheduler"])
    ref = torch.optim.lr_scheduler.MultiStepLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1),
                                               milestones=[2, 2, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # step(epoch)'s deprecation
        for epoch in range(6):
            resumed.step(epoch)
            ref.step(epoch)
            assert resumed.get_last_lr() == ref.get_last_lr()


def test_model_state_dict_round_trip(tmp_path):
    model, other = cifar10_quick(seed=0), cifar10_quick(seed=1)
    path = str(tmp_path / "model.npz")
    tnet.save(model.state_dict(), path)
    other.load_state_dict(tnet.load(path))
    for (name, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_parameters_requires_grad_and_state_dicts_come_back_as_torchs(tmp_path):
    """As torch.load's: a saved Parameter comes back a Parameter (a script assigns a saved learned tensor back
    to its module), a tensor that required grad requires it, and a state_dict an OrderedDict with its
    _metadata (`isinstance(ckpt, OrderedDict)` tells a bare state_dict from a checkpoint dict)."""
    from collections import OrderedDict
    model = tnet.nn.Linear(2, 3)
    frozen = tnet.nn.Parameter(tnet.ones(2), requires_grad=False)
    obj = {"prompt": model.weight, "frozen": frozen, "torch_param": torch.nn.Parameter(torch.ones(1)),
           "leaf": tnet.ones(2, requires_grad=True), "plain": tnet.ones(2), "sd": model.state_dict()}
    path = str(tmp_path / "ckpt.pt")
    tnet.save(obj, path)
    back = tnet.load(path)
    for name, parameter, requires_grad in [("prompt", True, True), ("frozen", True, False), ("torch_param", True, True),
                                           ("leaf", False, True), ("plain", False, False)]:
        assert isinstance(back[name], tnet.nn.Parameter) == parameter, name
        assert back[name].requires_grad == requires_grad and back[name].is_leaf, name
    model.weight = back["prompt"]  # a plain tensor here would raise torch's TypeError
    assert type(back["sd"]) is OrderedDict and list(back["sd"]) == ["weight", "bias"]
    assert back["sd"]._metadata == model.state_dict()._metadata
    assert not any(t.requires_grad for t in back["sd"].values())
    model.load_state_dict(back["sd"])


def _shares(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def test_tensors_that_share_memory_load_sharing_it_as_torchs(tmp_path):
    """Tensors saved together that view one memory (`{'a': t, 'b': t[1:]}`, a transpose, bf16 views, torch tensors)
    load viewing one memory again, with their strides, as torch.load's: a write to one shows in the others; a tensor
    that shares nothing loads as its own memory; one tensor saved twice loads as one object."""
    def saved(lib):
        t = lib.arange(12.0)
        h, z = lib.ones(4, dtype=torch.bfloat16), torch.zeros(3)
        return {"a": t, "b": t[1:], "c": t.view(3, 4).t(), "d": t[::3], "other": t.clone(), "again": t,
                "h": h, "h_part": h[2:], "empty": t[:0], "torch": (z, z[1:])}
    backs = []
    for lib, save, load in ((tnet, tnet.save, tnet.load), (torch, torch.save, torch.load)):
        path = str(tmp_path / f"{lib.__name__}.pt")
        save(saved(lib), path)
        back = load(path)
        mem = {k: v.memory if isinstance(v, tnet.Tensor) else v for k, v in back.items() if k != "torch"}
        for k, v in mem.items():
            assert v.tolist() == (saved(torch)[k].tolist()), k
        assert [mem[k].stride() for k in "bcd"] == [(1,), (1, 4), (3,)]
        names = [k for k in mem if k != "empty"]
        backs.append([(k, j, _shares(mem[k], mem[j])) for k in names for j in names])
        mem["a"][2] = 42
        assert mem["b"][1] == 42 and mem["c"][2, 0] == 42 and mem["other"][2] == 2
        assert back["again"] is back["a"] and back["b"] is not back["a"]  # one object saved twice: one object
        a, b = (v.memory if isinstance(v, tnet.Tensor) else v for v in back["torch"])
        assert _shares(a, b)
    assert backs[0] == backs[1]


def test_tied_weights_load_tied(tmp_path):
    """A state_dict of a model whose layers share a weight (an embedding tied to the output layer) loads with its two
    entries on one memory, as torch's; loaded into a tied model, it stays tied."""
    def tied():
        m = tnet.nn.Sequential(tnet.nn.Embedding(5, 3), tnet.nn.Linear(3, 5, bias=False))
        m[1].weight = m[0].weight
        return m
    model = tied()
    path = str(tmp_path / "tied.pt")
    tnet.save(model.state_dict(), path)
    sd = tnet.load(path)
    with np.load(path) as f:  # the format that a tnet reading only the first calls unknown
        assert json.loads(f["__tree__"].tobytes())["format"] == "tnet.save/2"
    assert _shares(sd["0.weight"].memory, sd["1.weight"].memory)
    sd["0.weight"].memory[0, 0] = 7
    assert sd["1.weight"].memory[0, 0].item() == 7
    other = tied()
    other.load_state_dict(sd)
    assert other[0].weight is other[1].weight and other[1].weight.memory[0, 0].item() == 7
    tnet.save({"emb": model[0].weight, "head": model[1].weight}, path)  # the tied Parameter itself, twice
    back = tnet.load(path)
    assert back["emb"] is back["head"] and isinstance(back["emb"], tnet.nn.Parameter)


def test_files_written_before_shared_memory_load(tmp_path):
    """A file of the first form (every tensor an array of its shape, as tnet.save wrote them before tensors sharing
    memory were stored together) loads as before; a view entry that is malformed or reaches past its member, and a
    reference to a tensor not named before it, are LoadErrors."""
    def write(path, tree, **members):
        with open(path, "wb") as f:
            np.savez(f, __tree__=np.frombuffer(json.dumps({"format": "tnet.save/1", "obj": tree}).encode(), np.uint8),
                     **members)
    old = str(tmp_path / "old.npz")
    write(old, {"w": {"$tensor": 0, "dtype": "float32", "parameter": True}, "v": {"$tensor": 1, "dtype": "float32"}},
          a0=np.arange(6, dtype=np.float32).reshape(2, 3), a1=np.arange(6, dtype=np.float32).reshape(2, 3))
    back = tnet.load(old)
    assert isinstance(back["w"], tnet.nn.Parameter) and back["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert not _shares(back["w"].memory, back["v"].memory)
    tnet.save({"w": back["w"]}, old)  # nothing shared: the first form, which tnet before shared memory reads
    with np.load(old) as f:
        assert json.loads(f["__tree__"].tobytes())["format"] == "tnet.save/1"
    for view in ({"offset": 1, "size": [2, 3], "stride": [3, 1]}, {"offset": 0, "size": [7], "stride": [1]},
                 {"offset": -1, "size": [2], "stride": [1]}, {"offset": 0, "size": [2]},
                 {"offset": 0, "size": [2, 2], "stride": [1]}, {"offset": 0, "size": [2 ** 62, 2 ** 62], "stride": [0, 0]}):
        bad = str(tmp_path / "bad.npz")
        write(bad, {"w": {"$tensor": 0, "dtype": "float32", **view}}, a0=np.arange(6, dtype=np.float32))
        with pytest.raises(tnet.LoadError, match="bad tensor entry|view"):
            tnet.load(bad)
    for tree in ({"w": {"$same": 0}, "v": {"$tensor": 0, "dtype": "float32", "id": 0}},  # a reference before its tensor
                 {"v": {"$tensor": 0, "dtype": "float32", "id": True}}, {"w": {"$same": "0"}},
                 {"v": [{"$tensor": 0, "dtype": "float32", "id": 0}, {"$tensor": 0, "dtype": "float32", "id": 0}]}):
        write(bad, tree, a0=np.arange(6, dtype=np.float32))
        with pytest.raises(tnet.LoadError, match="bad tensor entry|reference"):
            tnet.load(bad)


def test_dtypes_devices_and_sizes_round_trip(tmp_path):
    """A script's options saved in its checkpoint hold torch's dtypes, devices and sizes (`args.device =
    torch.device("cuda")`, `torch.save(args, path)`): they come back as themselves, as torch.load's."""
    import argparse
    obj = {"args": argparse.Namespace(device=torch.device("cuda", 0), dtype=torch.bfloat16),
           "cpu": torch.device("cpu"), "size": tnet.zeros(2, 3).shape, "types": [torch.int64, torch.float32]}
    path = str(tmp_path / "args.pt")
    tnet.save(obj, path)
    back = tnet.load(path)
    assert back["args"].device == torch.device("cuda:0") and back["args"].dtype is torch.bfloat16
    assert back["cpu"] == torch.device("cpu") and back["types"] == [torch.int64, torch.float32]
    assert type(back["size"]) is torch.Size and back["size"] == (2, 3)


def test_sets_and_bytes_round_trip_as_torchs():
    """Sets (a script's seen ids, tuples among them) and bytes or bytearrays come back as themselves, as torch's
    weights_only load gives them."""
    buffer = io.BytesIO()
    obj = {"seen": {3, (1, 2), "a"}, "empty": set(), "raw": b"\x00ab", "buf": bytearray(b"xy"), "none": b""}
    tnet.save(obj, buffer)
    buffer.seek(0)
    back = tnet.load(buffer)
    assert back == obj and type(back["buf"]) is bytearray and type(back["raw"]) is bytes
    with pytest.raises(ValueError, match="cannot store a frozenset"):  # torch's weights_only load refuses it too
        tnet.save(frozenset({1}), io.BytesIO())


def test_argparse_namespace_round_trip(tmp_path):
    """A script's parsed options saved in its checkpoint (SupContrast's `{'opt': opt, 'model': ...}`)
    come back as an argparse.Namespace; one holding what save refuses is refused."""
    import argparse
    opt = argparse.Namespace(learning_rate=0.05, lr_decay_epochs=[700, 800], cosine=True, model="resnet50",
                             trial=None, mean=tnet.tensor([0.5, 0.25]), inner=argparse.Namespace(K=3))
    path = str(tmp_path / "ckpt.pth")
    tnet.save({"opt": opt, "epoch": 5}, path)
    back = tnet.load(path)["opt"]
    assert isinstance(back, argparse.Namespace) and isinstance(back.inner, argparse.Namespace)
    assert (back.learning_rate, back.lr_decay_epochs, back.cosine, back.model, back.trial, back.inner.K) == \
        (0.05, [700, 800], True, "resnet50", None, 3)
    assert back.mean.tolist() == [0.5, 0.25]
    with pytest.raises(ValueError, match="cannot store a builtin_function_or_method"):
        tnet.save({"opt": argparse.Namespace(f=len)}, path)


def test_file_objects_as_torchs():
    """torch.save(obj, buffer) and torch.load(buffer) with an io.BytesIO, as scripts copy state in memory."""
    buffer = io.BytesIO()
    tnet.save({"w": tnet.ones(2, 3), "step": 4}, buffer)
    buffer.seek(0)
    back = tnet.load(buffer)
    assert back["w"].shape == (2, 3) and back["w"].tolist() == [[1.0] * 3] * 2 and back["step"] == 4
    with pytest.raises(tnet.serialize.LoadError, match="BytesIO: "):
        tnet.load(io.BytesIO(pickle.dumps([1])))


def test_unsupported_values_are_refused(tmp_path):
    with pytest.raises(ValueError, match="cannot store a object"):
        tnet.save({"x": object()}, str(tmp_path / "x.npz"))
    with pytest.raises(ValueError, match="Python objects"):
        tnet.save(np.array([{}], dtype=object), str(tmp_path / "x.npz"))
    # what load refuses, save refuses too, so that every saved file loads
    deep = 1
    for _ in range(tnet.serialize.MAX_DEPTH + 1):
        deep = [deep]
    for bad, match in [(deep, "nested deeper than 100"), ({"x": {0: deep}}, "nested deeper than 100"),
                       (torch.zeros(2, dtype=torch.complex64), "cannot store a complex64 tensor"),
                       (np.array(["a"]), "cannot store an array of <U1"), (1j, "cannot store a complex")]:
        with pytest.raises(ValueError, match=match) as e:
            tnet.save(bad, str(tmp_path / "x.npz"))
        assert "\n" not in str(e.value)
    assert not os.listdir(tmp_path)
    tnet.save(deep[0], str(tmp_path / "x.npz"))  # 100 levels are fine
    assert tnet.load(str(tmp_path / "x.npz")) == deep[0]


@pytest.mark.parametrize("content,match", [
    (b"", "empty"),
    (b"not a tnet file at all", "not a zip archive"),
    (None, "truncated"),  # truncated: the first half of a real file
])
def test_bad_files_give_one_line_errors(tmp_path, content, match):
    path = str(tmp_path / "bad.npz")
    if content is None:
        tnet.save({"w": np.arange(1000.0)}, path)
        with open(path, "rb") as f:
            content = f.read()[:600]
    with open(path, "wb") as f:
        f.write(content)
    with pytest.raises(tnet.LoadError, match=match) as e:
        tnet.load(path)
    assert "\n" not in str(e.value)
    with pytest.raises(tnet.LoadError, match="no such file"):
        tnet.load(str(tmp_path / "missing.npz"))
    with pytest.raises(FileNotFoundError, match="no such file"):  # torch.load's error type, which scripts catch
        tnet.load(str(tmp_path / "missing.npz"))


def test_a_pickle_is_refused_and_runs_nothing(tmp_path):
    marker, path = tmp_path / "created", str(tmp_path / "evil.ckpt")
    with open(path, "wb") as f:
        pickle.dump({"model": Touch(str(marker))}, f)
    with pytest.raises(tnet.LoadError, match="pickled data"):
        tnet.load(path)
    assert not marker.exists()
    np.save(str(tmp_path / "array.npy"), np.arange(3))  # a plain .npy is not a tnet file either
    with pytest.raises(tnet.LoadError, match="not a zip archive"):
        tnet.load(str(tmp_path / "array.npy"))
    np.savez(str(tmp_path / "plain.npz"), a=np.arange(3))  # nor is an .npz that tnet.save did not write
    with pytest.raises(tnet.LoadError, match="not a file written by tnet.save"):
        tnet.load(str(tmp_path / "plain.npz"))


def test_import_gives_the_whole_api():
    code = ("import tnet; print(tnet.__version__, tnet.nn.Conv2d, tnet.optim.SGD, tnet.models.cifar10_quick, "
            "tnet.data.CIFAR10, tnet.functional.relu, tnet.save, tnet.load)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith(tnet.__version__ + " ")


def test_atomic_write_mode_stale_tmp_and_errors(tmp_path):
    path = str(tmp_path / "ck.npz")
    with open(path + ".tmp", "wb") as f:  # left by a writer killed mid-write
        f.write(b"half")
    old = os.umask(0o022)
    try:
        tnet.save({"w": np.arange(3)}, path)
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o644 and os.listdir(tmp_path) == ["ck.npz"]
    with pytest.raises(OSError, match=r"cannot write .*ck.npz/ck.npz: File exists") as e:
        tnet.save({}, str(tmp_path / "ck.npz" / "ck.npz"))  # the folder is a file
    assert "\n" not in str(e.value)
    with pytest.raises(OSError, match="cannot write .*Is a directory"):
        tnet.save({}, str(tmp_path))


@pytest.mark.parametrize("head", [b"junk", b"PK\x03\x04"])
def test_a_big_file_is_refused_from_its_first_bytes(tmp_path, head):
    path = str(tmp_path / "big.npz")
    with open(path, "wb") as f:  # 2 GiB, sparse: it costs no disk
        f.write(head)
        f.truncate(2 << 30)
    match = "not a zip archive" if head == b"junk" else "no zip directory"

    def refused():
        with pytest.raises(tnet.LoadError, match=match):
            tnet.load(path)
    assert peak_bytes(refused) < 4 << 20
