"""CIFAR-10: read the official binary or python batches (or the small sample shipped inside
tnet, for trying things out with no network), subtract the training mean image
(as Caffe's cifar10 example does) or normalise each channel, and serve shuffled, optionally
augmented batches that are gathered on the device by a Triton kernel."""
import hashlib
import os
import pickle
import sys
import tarfile
import urllib.request

import numpy as np
import torch

from ._device import DEVICE
from .kernels.data import gather

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
MD5 = "c32a1d4ab5d03f1284b67883e8d87530"
ARCHIVE = "cifar-10-binary.tar.gz"
BIN_DIR, PY_DIR = "cifar-10-batches-bin", "cifar-10-batches-py"
TRAIN_BATCHES = [f"data_batch_{i}" for i in range(1, 6)]
TEST_BATCH = "test_batch"
RECORD = 1 + 3 * 32 * 32  # one label byte, then the R, G, B planes of a 32x32 image
DEFAULT_ROOT = "./data"
SAMPLE = "sample"  # the root that names the shipped sample
SAMPLE_SIZE = "500 + 100 image"
SAMPLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cifar10_sample.npz")
# The training set's channel means and standard deviations of pixels in [0, 1] (airbench's)
CIFAR10_MEAN, CIFAR10_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


class DataError(Exception):
    """The data set is missing, truncated, corrupt or could not be downloaded."""


class DownloadError(DataError):
    """The archive could not be fetched (no network, say); `reason` names the URL and the problem."""

    def __init__(self, reason):
        super().__init__(f"{reason}; fetch it elsewhere and pass --data DIR pointing at a folder "
                         f"holding {BIN_DIR} or {PY_DIR}, or --data {SAMPLE} for the "
                         f"{SAMPLE_SIZE} sample shipped with tnet")
        self.reason = reason


def load_cifar10(root=DEFAULT_ROOT, download=True):
    """Return (train_x, train_y, test_x, test_y): uint8 [N,3,32,32] images, int64 [N] labels.

    `root` holds cifar-10-batches-bin or cifar-10-batches-py, or is one of those folders.
    When neither is there and `download` is set, fetch the binary version into `root`.
    root "sample" gives the sample shipped inside tnet (500 training and 100 test images, see
    load_sample), as does the same path made absolute (train.py makes --data absolute), even
    where a folder ./sample exists. So does the default root ./data when the download fails,
    with a line on stderr; a folder named otherwise is never swapped for the sample.
    """
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root must be a folder's path, got {type(root).__name__}")
    if _is(root, SAMPLE):
        return load_sample()
    folder, fmt = _find(root)
    if folder is None:
        if not download:
            raise DataError(f"no CIFAR-10 under {root}: pass --data DIR pointing at a folder "
                            f"holding {BIN_DIR} or {PY_DIR}, or --data {SAMPLE} for the sample")
        try:
            _fetch(root)
        except DownloadError as e:
            if not _is(root, DEFAULT_ROOT):
                raise
            print(f"{e.reason}: using the {SAMPLE_SIZE} sample shipped with tnet (--data {SAMPLE})",
                  file=sys.stderr)
            return load_sample()
        folder, fmt = _find(root)
        if folder is None:
            raise DataError(f"{os.path.join(root, ARCHIVE)} unpacked without a {BIN_DIR} folder")
    read = _read_bin if fmt == "bin" else _read_py
    suffix = ".bin" if fmt == "bin" else ""
    train = [read(os.path.join(folder, name + suffix)) for name in TRAIN_BATCHES]
    test_x, test_y = read(os.path.join(folder, TEST_BATCH + suffix))
    train_x = np.concatenate([x for x, _ in train])
    train_y = np.concatenate([y for _, y in train])
    return train_x, train_y, test_x, test_y


def _is(root, name):
    """Whether root names the folder `name` of the current directory (absolute or not)."""
    return os.path.abspath(root) == os.path.abspath(name)


def load_sample():
    """The CIFAR-10 sample inside the package, as load_cifar10 returns it: the first 50 training
    and 10 test images of each class, in the data set's order, from the JPEG-quality-75 copy of
    CIFAR-10 that tnet's results used (so slightly below the official pixels), stored as raw
    uint8 arrays (tools/make_cifar10_sample.py wrote it). For try-outs and tests: 500 images
    train no useful model."""
    try:
        with np.load(SAMPLE_FILE, allow_pickle=False) as f:
            arrays = [f[k] for k in ("train_x", "train_y", "test_x", "test_y")]
    except (OSError, KeyError, ValueError) as e:
        raise DataError(f"{SAMPLE_FILE}: cannot read the shipped sample ({type(e).__name__}: {e}); "
                        f"reinstall tnet") from None
    train = _checked(SAMPLE_FILE, arrays[0].reshape(len(arrays[0]), -1), arrays[1])
    test = _checked(SAMPLE_FILE, arrays[2].reshape(len(arrays[2]), -1), arrays[3])
    return (*train, *test)


def _find(root):
    """(folder, "bin" | "py") for the CIFAR-10 folder at or under root, else (None, None)."""
    for name, fmt in ((BIN_DIR, "bin"), (PY_DIR, "py")):
        if os.path.isdir(os.path.join(root, name)):
            return os.path.join(root, name), fmt
    base = os.path.basename(os.path.normpath(root))
    if os.path.isdir(root):
        if base == BIN_DIR or os.path.isfile(os.path.join(root, "data_batch_1.bin")):
            return root, "bin"
        if base == PY_DIR or os.path.isfile(os.path.join(root, "data_batch_1")):
            return root, "py"
    return None, None


def _read_bin(path):
    if not os.path.isfile(path):
        raise DataError(f"{path}: file missing")
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % RECORD:
        raise DataError(f"{path}: truncated or corrupt, {raw.size} bytes is not a whole number "
                        f"of {RECORD}-byte records")
    records = raw.reshape(-1, RECORD)
    return _checked(path, records[:, 1:], records[:, 0])


class _ArraysOnly(pickle.Unpickler):
    """The official python-format batches are pickles of dicts, lists and numpy arrays. This
    unpickler builds only those: any other global a file names (a function to call, say) is
    refused, so a tampered download cannot run code."""
    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refused to load {module}.{name}")
        return super().find_class(module, name)


def _read_py(path):
    if not os.path.isfile(path):
        raise DataError(f"{path}: file missing")
    try:
        with open(path, "rb") as f:
            batch = _ArraysOnly(f, encoding="bytes").load()
        data, labels = np.asarray(batch[b"data"]), np.asarray(batch[b"labels"])
    except Exception as e:  # a damaged pickle can raise almost anything
        raise DataError(f"{path}: not a readable CIFAR-10 python batch "
                        f"({type(e).__name__}: {e})") from None
    if data.ndim != 2 or data.shape[1] != RECORD - 1 or labels.shape != (data.shape[0],):
        raise DataError(f"{path}: corrupt, data has shape {data.shape} and labels {labels.shape}, "
                        f"expected [n,{RECORD - 1}] and [n]")
    if data.min(initial=0) < 0 or data.max(initial=0) > 255:
        raise DataError(f"{path}: corrupt, pixel values outside 0..255")
    return _checked(path, data, labels)


def _checked(path, pixels, labels):
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DataError(f"{path}: corrupt, labels outside 0..9")
    images = np.ascontiguousarray(pixels, dtype=np.uint8).reshape(-1, 3, 32, 32)
    return images, labels.astype(np.int64)


def _fetch(root):
    """Download (unless already there), verify and unpack the binary archive into root. root is
    made only once the server answers, so a failed request leaves no folder behind."""
    path = os.path.join(root, ARCHIVE)
    if not os.path.isfile(path):
        download(URL, path, "CIFAR-10", "md5", MD5)
    elif _md5(path) != MD5:
        raise DataError(f"{path}: md5 {_md5(path)} does not match {MD5}; delete it and retry")
    try:
        with tarfile.open(path, "r:gz") as tar:
            if hasattr(tarfile, "data_filter"):  # refuses paths that escape root
                tar.extractall(root, filter="data")
            else:
                tar.extractall(root)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise DataError(f"{path}: cannot unpack ({type(e).__name__}: {e}); "
                        f"delete it and retry") from None


def download(url, path, name, digest=None, expected=None, progress=True):
    """url's bytes into path, through path + ".part" renamed once whole, with a progress bar (progress=False:
    none); name says what in the errors. digest: a hashlib algorithm whose hex digest of the bytes must start
    with expected (CIFAR-10's whole md5, torch.hub's sha256 prefix), else DataError. The folder is made only
    once the server answers, and a failed download leaves nothing behind."""
    from tqdm import tqdm

    part = path + ".part"
    hasher = hashlib.new(digest) if digest else None
    try:
        r = urllib.request.urlopen(url, timeout=60)
    except OSError as e:  # URLError (no network, no such host), timeouts, refusals
        raise DownloadError(f"could not download {name} from {url} ({' '.join(str(e).split())})") from None
    folder = os.path.dirname(path) or "."
    made = _missing_folders(folder)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        r.close()
        _remove_empty(made)
        raise DataError(f"cannot create {folder} for the download ({e.strerror})") from None
    try:
        with r, open(part, "wb") as f:
            total = int(r.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=os.path.basename(path), disable=not progress) as bar:
                while chunk := r.read(1 << 20):
                    f.write(chunk)
                    if hasher:
                        hasher.update(chunk)
                    bar.update(len(chunk))
    except OSError as e:  # a reset or timeout mid-transfer, a full disk
        error = DownloadError(f"could not download {name} from {url} ({' '.join(str(e).split())})")
    else:
        if hasher is None or hasher.hexdigest().startswith(expected):
            os.replace(part, path)
            return
        error = DataError(f"{path}: downloaded file has {digest} {hasher.hexdigest()}, expected {expected} "
                          f"(corrupted download); retry")
    if os.path.exists(part):
        os.remove(part)
    _remove_empty(made)
    raise error from None


def _missing_folders(folder):
    """The folders os.makedirs(folder) would create, deepest first."""
    missing = []
    while not os.path.exists(folder) and os.path.dirname(folder) != folder:
        missing.append(folder)
        folder = os.path.dirname(folder)
    return missing


def _remove_empty(folders):
    for folder in folders:  # deepest first; stop at the first that is not empty
        try:
            os.rmdir(folder)
        except OSError:
            return


def _md5(path):
    md5 = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            md5.update(chunk)
    return md5.hexdigest()


class CIFAR10:
    """One split of CIFAR-10 as numpy arrays, torchvision-style: `images` uint8 [N,3,32,32],
    `labels` int64 [N]; indexing gives (image, label). Reads (or downloads) as load_cifar10."""

    def __init__(self, root=DEFAULT_ROOT, train=True, download=True):
        train_x, train_y, test_x, test_y = load_cifar10(root, download)
        self.images, self.labels = (train_x, train_y) if train else (test_x, test_y)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def preprocess(train_x, test_x):
    """Return float32 (train, test): raw 0-255 pixels minus the training set's mean image."""
    mean = train_x.mean(axis=0, dtype=np.float64).astype(np.float32)
    return train_x.astype(np.float32) - mean, test_x.astype(np.float32) - mean


def normalize(images, mean=CIFAR10_MEAN, std=CIFAR10_STD):
    """float32 (images / 255 - mean) / std per channel, of uint8 [N,C,H,W] images (airbench's inputs)."""
    mean, std = (np.asarray(v, np.float32).reshape(1, -1, 1, 1) for v in (mean, std))
    return (images.astype(np.float32) / 255 - mean) / std


class Loader:
    """Iterate over (x [B,C,H,W] float32, y [B] int64) device batches of a data set held on
    the device. Each epoch draws a permutation (and with `augment` a crop shift in
    [-pad, pad]^2 and a flip per image) from a numpy generator; the last batch may be
    short, unless drop_last. A returned batch is fresh memory, so it stays valid as long as
    the caller holds it, unless it comes from `batches(out=...)`.

    padding_mode: what a shifted crop sees outside the image, "zeros" or "reflect" (the
    gather kernel's). flip: "random", a coin per image and epoch; or "alternate" (airbench's),
    a coin per image in the first epoch, and every later epoch the mirror of the previous
    epoch's view: flipped = first coin XOR (epoch is odd).

    num_replicas and rank (torch's DistributedSampler's): each of num_replicas processes, with
    the same seed, draws the same epoch and takes every num_replicas-th image of it from position
    rank, the epoch first padded with its own first images to a multiple of num_replicas (so every
    rank has as many); batch_size is then a rank's.
    """

    def __init__(self, images, labels, batch_size, shuffle=True, augment=False, seed=0,
                 device=None, pad=4, drop_last=False, padding_mode="zeros", flip="random", num_replicas=1, rank=0):
        if not (isinstance(images, np.ndarray) and images.ndim == 4 and images.dtype == np.float32):
            raise ValueError(f"images must be a float32 numpy array [N,C,H,W], got "
                             f"{getattr(images, 'dtype', type(images))} {np.shape(images)}")
        if not (isinstance(labels, np.ndarray) and labels.shape == (len(images),)):
            raise ValueError(f"labels must be a numpy array [{len(images)}], got {np.shape(labels)}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if padding_mode not in ("zeros", "reflect") or flip not in ("random", "alternate"):
            raise ValueError(f"padding_mode must be 'zeros' or 'reflect' and flip 'random' or 'alternate', "
                             f"got {padding_mode!r} and {flip!r}")
        if not (isinstance(num_replicas, int) and isinstance(rank, int) and 0 <= rank < num_replicas):
            raise ValueError(f"rank must be in [0, num_replicas), got rank {rank!r} of {num_replicas!r}")
        if augment and padding_mode == "reflect" and not 0 <= pad < min(images.shape[2:]):
            raise ValueError(f"reflect padding needs a pad smaller than the image, got {pad} for {images.shape[2:]}")
        self.device = torch.device(device) if device is not None else DEVICE
        self.total = len(images)
        self.num_replicas, self.rank = num_replicas, rank
        self.n = -(-self.total // num_replicas)  # this rank's images an epoch
        self.batch_size, self.shuffle, self.augment, self.pad = batch_size, shuffle, augment, pad
        self.drop_last, self.padding_mode, self.flip = drop_last, padding_mode, flip
        self.first_flips = None  # flip="alternate": the first epoch's coins, by image
        self.images = torch.from_numpy(np.ascontiguousarray(images)).to(self.device)
        self.labels = torch.from_numpy(labels.astype(np.int64)).to(self.device)
        self.rng = np.random.default_rng(seed)
        self.epoch = 0

    def __len__(self):
        return self.n // self.batch_size if self.drop_last else -(-self.n // self.batch_size)

    def state(self):
        """What `set_state` needs to replay the draws of the next epoch (take it between epochs)."""
        state = {"epoch": self.epoch, "rng": self.rng.bit_generator.state}
        if self.first_flips is not None:
            state["first_flips"] = self.first_flips.copy()
        return state

    def set_state(self, state):
        self.epoch = state["epoch"]
        self.rng.bit_generator.state = state["rng"]
        first = state.get("first_flips")
        self.first_flips = None if first is None else np.asarray(first, np.int32).copy()

    def __iter__(self):
        return self.batches()

    def batches(self, out=None):
        """This epoch's batches. out: a pair (x, y) of buffers shaped like a full batch (a
        captured step's inputs): full batches are written there, which saves a copy per
        step, and each is valid until the next; a short last batch is fresh memory."""
        # draw now, not at the first next(), so state() taken after iter() is past this epoch
        total = self.total
        perm = self.rng.permutation(total) if self.shuffle else np.arange(total)
        # this rank's positions in the epoch (all of them for one process)
        mine = np.arange(self.rank, self.n * self.num_replicas, self.num_replicas) % max(total, 1)
        if self.augment:
            shifts = self.rng.integers(-self.pad, self.pad + 1, size=(total, 2), dtype=np.int32)[mine]
            if self.flip == "random" or self.first_flips is None:
                flips = (self.rng.random(total) < 0.5).astype(np.int32)
            if self.flip == "alternate":
                if self.first_flips is None:
                    self.first_flips = flips  # by image, where "random" takes them by position
                flips = self.first_flips[perm] ^ (self.epoch % 2)
            flips = flips[mine]
            aug = (torch.from_numpy(shifts).to(self.device), torch.from_numpy(flips).to(self.device))
        perm = perm[mine]
        self.epoch += 1
        perm = torch.from_numpy(perm.astype(np.int64)).to(self.device)
        end = len(self) * self.batch_size if self.drop_last else self.n

        def draw():
            for i in range(0, end, self.batch_size):
                j = min(i + self.batch_size, self.n)
                extra = (aug[0][i:j], aug[1][i:j]) if self.augment else ()
                full = out is not None and j - i == len(out[1])
                yield gather(self.images, self.labels, perm[i:j], *extra, out=out if full else None,
                             padding_mode=self.padding_mode)

        return draw()
