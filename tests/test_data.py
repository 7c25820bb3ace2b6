"""CIFAR-10 reading, preprocessing and the device batch loader, on tiny made-up packs."""
import hashlib
import io
import os
import pickle
import tarfile

import numpy as np
import pytest
import torch

import tnet._device  # noqa: F401  (switches the Triton interpreter on before kernels load)
import tnet.data as data
from tnet.data import DataError, Loader, load_cifar10, preprocess
from tnet.kernels.data import gather
from helpers import Touch, assert_close, tol_for

SIZES = [3, 4, 2, 5, 3]  # records in data_batch_1..5: a reduced pack, not 10000 each
N_TEST = 4


def make_pack(seed=0):
    """Per batch file (name, uint8 images [n,3,32,32], int64 labels [n])."""
    rng = np.random.default_rng(seed)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    return [(name, rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8),
             rng.integers(0, 10, n).astype(np.int64)) for name, n in zip(names, SIZES + [N_TEST])]


def write_bin(folder, pack):
    os.makedirs(folder, exist_ok=True)
    for name, x, y in pack:
        records = np.concatenate([y.astype(np.uint8)[:, None], x.reshape(len(x), -1)], axis=1)
        records.tofile(os.path.join(folder, name + ".bin"))


def write_py(folder, pack):
    os.makedirs(folder, exist_ok=True)
    for name, x, y in pack:
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump({b"data": x.reshape(len(x), -1), b"labels": y.tolist(),
                         b"batch_label": name.encode()}, f)


def expected(pack):
    return (np.concatenate([x for _, x, _ in pack[:5]]), np.concatenate([y for _, _, y in pack[:5]]),
            pack[5][1], pack[5][2])


def assert_loaded(got, pack):
    for g, e in zip(got, expected(pack)):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("fmt", ["bin", "py"])
def test_load_both_formats(tmp_path, fmt):
    pack = make_pack()
    folder = tmp_path / f"cifar-10-batches-{fmt}"
    (write_bin if fmt == "bin" else write_py)(str(folder), pack)
    got = load_cifar10(str(tmp_path), download=False)
    assert got[0].shape == (sum(SIZES), 3, 32, 32) and got[1].dtype == np.int64
    assert_loaded(got, pack)
    assert_loaded(load_cifar10(str(folder), download=False), pack)  # root at the batches folder


def test_cifar10_splits(tmp_path):
    pack = make_pack()
    write_bin(str(tmp_path / "cifar-10-batches-bin"), pack)
    train_x, train_y, test_x, test_y = expected(pack)
    train, test = data.CIFAR10(str(tmp_path), train=True), data.CIFAR10(str(tmp_path), train=False)
    assert len(train) == len(train_y) and len(test) == N_TEST
    image, label = test[2]
    np.testing.assert_array_equal(image, test_x[2])
    assert label == test_y[2]
    np.testing.assert_array_equal(train.images, train_x)


def test_truncated_bin_names_file(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    write_bin(str(folder), make_pack())
    path = folder / "data_batch_3.bin"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError, match="data_batch_3.bin.*truncated"):
        load_cifar10(str(tmp_path), download=False)


def test_missing_batch_names_file(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    write_bin(str(folder), make_pack())
    os.remove(folder / "test_batch.bin")
    with pytest.raises(DataError, match="test_batch.bin.*missing"):
        load_cifar10(str(tmp_path), download=False)


def test_corrupt_pickle_names_file(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    write_py(str(folder), make_pack())
    path = folder / "data_batch_2"
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(DataError, match="data_batch_2"):
        load_cifar10(str(tmp_path), download=False)


def test_python_batch_that_would_run_code_is_refused(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    write_py(str(folder), make_pack())
    marker = tmp_path / "created"
    with open(folder / "data_batch_3", "wb") as f:
        pickle.dump({b"data": Touch(str(marker)), b"labels": []}, f)
    with pytest.raises(DataError, match="data_batch_3.*refused to load"):
        load_cifar10(str(tmp_path), download=False)
    assert not marker.exists()


def offline(*args, **kwargs):
    raise OSError("[Errno -3] Temporary failure\nin name resolution")


def test_no_network_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(data.urllib.request, "urlopen", offline)
    with pytest.raises(DataError) as err:
        load_cifar10(str(tmp_path / "data"), download=True)
    msg = str(err.value)
    assert "\n" not in msg and "--data" in msg and "cifar-10-batches-bin" in msg
    assert data.URL in msg and "name resolution" in msg and "--data sample" in msg


def test_failed_download_creates_no_folder(tmp_path, monkeypatch):
    # train.py --data /nonexistent used to make the folder, then fail the download
    monkeypatch.setattr(data.urllib.request, "urlopen", offline)
    root = tmp_path / "nonexistent" / "deeper"
    with pytest.raises(DataError, match="could not download"):
        load_cifar10(str(root), download=True)
    assert os.listdir(tmp_path) == []


def test_sample_shape_and_classes():
    train_x, train_y, test_x, test_y = load_cifar10("sample")
    assert train_x.shape == (500, 3, 32, 32) and test_x.shape == (100, 3, 32, 32)
    assert train_x.dtype == test_x.dtype == np.uint8 and train_y.dtype == test_y.dtype == np.int64
    assert (np.bincount(train_y, minlength=10) == 50).all() and (np.bincount(test_y, minlength=10) == 10).all()
    assert train_x.std() > 30  # real images, not a blank array
    assert data.CIFAR10("sample", train=False).images.shape == (100, 3, 32, 32)


def test_sample_by_absolute_path(tmp_path, monkeypatch):
    # train.py makes --data absolute, so --data sample arrives as CWD/sample
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sample").mkdir()  # a folder of that name does not hide the sample
    assert len(load_cifar10(str(tmp_path / "sample"), download=False)[1]) == 500


def test_default_root_falls_back_to_sample_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(data.urllib.request, "urlopen", offline)
    got = load_cifar10()
    for g, e in zip(got, load_cifar10("sample")):
        np.testing.assert_array_equal(g, e)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and data.URL in err and "sample" in err
    assert os.listdir(tmp_path) == []  # no ./data left behind


def test_download_false_names_the_sample(tmp_path):
    with pytest.raises(DataError, match="--data sample"):
        load_cifar10(str(tmp_path), download=False)


def fake_urlopen(payload):
    def urlopen(url, timeout=None):
        response = io.BytesIO(payload)
        response.headers = {"Content-Length": str(len(payload))}
        return response
    return urlopen


def test_corrupt_download_leaves_no_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(data.urllib.request, "urlopen", fake_urlopen(b"not a tarball"))
    with pytest.raises(DataError, match="md5"):
        load_cifar10(str(tmp_path / "new" / "data"), download=True)
    assert os.listdir(tmp_path) == []


def test_root_of_wrong_type():
    with pytest.raises(TypeError, match="root must be"):
        load_cifar10(None)


def test_download_md5_mismatch(tmp_path, monkeypatch):
    monkeypatch.setattr(data.urllib.request, "urlopen", fake_urlopen(b"not a tarball"))
    with pytest.raises(DataError, match="md5"):
        load_cifar10(str(tmp_path), download=True)
    assert os.listdir(tmp_path) == []  # neither the part file nor a bad archive is left behind


def test_archive_md5_mismatch_names_file(tmp_path):
    (tmp_path / data.ARCHIVE).write_bytes(b"stale")
    with pytest.raises(DataError, match=f"{data.ARCHIVE}.*md5"):
        load_cifar10(str(tmp_path), download=True)


def test_download_unpacks(tmp_path, monkeypatch):
    pack = make_pack(1)
    write_bin(str(tmp_path / "src" / "cifar-10-batches-bin"), pack)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(tmp_path / "src" / "cifar-10-batches-bin", arcname="cifar-10-batches-bin")
    payload = buf.getvalue()
    monkeypatch.setattr(data, "MD5", hashlib.md5(payload).hexdigest())
    monkeypatch.setattr(data.urllib.request, "urlopen", fake_urlopen(payload))
    assert_loaded(load_cifar10(str(tmp_path / "data"), download=True), pack)
    assert (tmp_path / "data" / data.ARCHIVE).read_bytes() == payload


def test_preprocess_subtracts_train_mean():
    rng = np.random.default_rng(2)
    train = rng.integers(0, 256, (7, 3, 32, 32), dtype=np.uint8)
    test = rng.integers(0, 256, (3, 3, 32, 32), dtype=np.uint8)
    tr, te = preprocess(train, test)
    assert tr.dtype == te.dtype == np.float32
    mean = train.astype(np.float64).mean(axis=0)
    np.testing.assert_allclose(tr, train - mean, atol=1e-4)
    np.testing.assert_allclose(te, test - mean, atol=1e-4)


def reference_augment(images, shifts, flips, pad=4):
    """Zero-pad by `pad`, crop at offset pad + (dy, dx), then mirror when flipped."""
    n, c, h, w = images.shape
    padded = np.pad(images, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.empty_like(images)
    for i, ((dy, dx), f) in enumerate(zip(shifts, flips)):
        crop = padded[i, :, pad + dy:pad + dy + h, pad + dx:pad + dx + w]
        out[i] = crop[:, :, ::-1] if f else crop
    return out


def test_gather_matches_numpy_odd_sizes():
    rng = np.random.default_rng(3)
    images = rng.standard_normal((13, 3, 5, 7)).astype(np.float32)
    labels = rng.integers(0, 10, 13)
    idx = rng.integers(0, 13, 11)
    dev = lambda a: torch.from_numpy(a).to(tnet._device.DEVICE)
    x, y = gather(dev(images), dev(labels), dev(idx))
    np.testing.assert_array_equal(x.cpu().numpy(), images[idx])
    np.testing.assert_array_equal(y.cpu().numpy(), labels[idx])

    shifts = rng.integers(-4, 5, (11, 2)).astype(np.int32)
    shifts[0] = (-4, 4)  # the extreme shifts
    flips = (rng.random(11) < 0.5).astype(np.int32)
    x, y = gather(dev(images), dev(labels), dev(idx), dev(shifts), dev(flips))
    np.testing.assert_array_equal(x.cpu().numpy(), reference_augment(images[idx], shifts, flips))
    np.testing.assert_array_equal(y.cpu().numpy(), labels[idx])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gather_16_bit(dtype):
    """A 16-bit batch from fp32 images through `out`, cast in the same pass; 16-bit images keep
    their dtype."""
    rng = np.random.default_rng(5)
    images = torch.from_numpy(rng.standard_normal((13, 3, 5, 7)).astype(np.float32)).to(tnet._device.DEVICE)
    labels, idx = torch.arange(13, device=images.device), torch.tensor([3, 0, 12, 3], device=images.device)
    out = (torch.empty(4, 3, 5, 7, dtype=dtype, device=images.device), torch.empty(4, dtype=torch.int64,
                                                                                   device=images.device))
    x, y = gather(images, labels, idx, out=out)
    assert x is out[0] and y.tolist() == [3, 0, 12, 3]
    assert_close(x, images[idx], tol_for(dtype), "cast batch")
    x, _ = gather(images.to(dtype), labels, idx)
    assert x.dtype == dtype and torch.equal(x.cpu(), images[idx].to(dtype).cpu())


def test_gather_rejects_bad_input():
    images, labels = torch.zeros(4, 3, 8, 8), torch.zeros(4, dtype=torch.int64)
    with pytest.raises(ValueError, match="int64"):
        gather(images, labels, torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"\[4\]"):
        gather(images, labels[:3], torch.zeros(2, dtype=torch.int64))
    with pytest.raises(ValueError, match="float32"):
        gather(images.double(), labels, torch.zeros(2, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"out must be contiguous \(\[2,3,8,8\]"):
        gather(images, labels, torch.zeros(2, dtype=torch.int64), out=(torch.zeros(3, 3, 8, 8), labels[:2]))


def tiny_set(n=21, seed=4):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3, 32, 32)).astype(np.float32), rng.integers(0, 10, n)


def test_loader_batches_match_numpy():
    images, labels = tiny_set()
    loader = Loader(images, labels, batch_size=8, seed=7)
    assert len(loader) == 3
    perm = np.random.default_rng(7).permutation(len(images))
    batches = list(loader)
    assert [len(y) for _, y in batches] == [8, 8, 5]  # last partial batch kept
    x = np.concatenate([b[0].cpu().numpy() for b in batches])
    y = np.concatenate([b[1].cpu().numpy() for b in batches])
    assert batches[0][0].is_contiguous() and batches[0][1].dtype == torch.int64
    np.testing.assert_array_equal(x, images[perm])
    np.testing.assert_array_equal(y, labels[perm])

    ordered = Loader(images, labels, batch_size=16, shuffle=False)
    np.testing.assert_array_equal(next(iter(ordered))[0].cpu().numpy(), images[:16])


def test_loader_writes_full_batches_into_out():
    """batches(out=...) fills a captured step's buffers: full batches land there, the short
    last one is fresh memory, and the contents are those of plain iteration."""
    images, labels = tiny_set()
    out = (torch.empty(8, 3, 32, 32, device=tnet._device.DEVICE), torch.empty(8, dtype=torch.int64, device=tnet._device.DEVICE))
    plain = [(x.cpu().numpy(), y.cpu().numpy()) for x, y in Loader(images, labels, batch_size=8, seed=2)]
    for (x, y), (px, py) in zip(Loader(images, labels, batch_size=8, seed=2).batches(out=out), plain):
        assert (x is out[0] and y is out[1]) == (len(y) == 8)
        np.testing.assert_array_equal(x.cpu().numpy(), px)
        np.testing.assert_array_equal(y.cpu().numpy(), py)


def test_loader_augment_matches_numpy():
    images, labels = tiny_set(10)
    loader = Loader(images, labels, batch_size=6, augment=True, seed=5)
    rng = np.random.default_rng(5)
    perm = rng.permutation(10)
    shifts = rng.integers(-4, 5, size=(10, 2), dtype=np.int32)
    flips = rng.random(10) < 0.5
    x = np.concatenate([b[0].cpu().numpy() for b in loader])
    np.testing.assert_array_equal(x, reference_augment(images[perm], shifts, flips))


def test_loader_state_resume():
    images, labels = tiny_set(9)
    a = Loader(images, labels, batch_size=4, augment=True, seed=1)
    for _ in a:
        pass
    saved = pickle.loads(pickle.dumps(a.state()))  # as a checkpoint would carry it
    first = [b[0].cpu().numpy() for b in a]
    b = Loader(images, labels, batch_size=4, augment=True, seed=99)
    b.set_state(saved)
    assert b.epoch == 1
    for got, want in zip(b, first):
        np.testing.assert_array_equal(got[0].cpu().numpy(), want)
