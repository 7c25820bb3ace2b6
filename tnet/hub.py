"""torch.hub's loaders, which copied model files import at the top (`from torch.hub import
load_state_dict_from_url`: torchvision's resnet.py and densenet.py before 0.13; torch.utils.model_zoo's
`load_url`), so that such a file imports and builds its models, and `load(repo_dir, name, source="local")`,
which runs a checkout's own hubconf.py as torch does, and `download_url_to_file` (plain bytes, a data set's
archive). torch's published weights are pickles, which tnet
never reads, and GitHub repositories' hubconf.py files import torch: asking for either raises, naming the
way. Convert weights once where torch is installed, `tnet.save(torch.hub.load_state_dict_from_url(url),
path)`, then `model.load_state_dict(tnet.load(path))`."""
import contextlib
import importlib.util
import os
import sys

from .data import DataError, DownloadError, download

_HOW = ("torch's published weights are pickles, which tnet does not read; convert them once where torch is "
        "installed, tnet.save(torch.hub.load_state_dict_from_url(url), path), then "
        "model.load_state_dict(tnet.load(path))")
_LOCAL = "clone the repository, port its hubconf.py's imports and load it with load(dir, model, source='local')"
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"


_hub_dir = None  # set_dir's


def get_dir():
    """torch.hub.get_dir: where hub downloads would go, set_dir's directory, else $TORCH_HOME/hub
    (TORCH_HOME defaulting to $XDG_CACHE_HOME/torch, XDG_CACHE_HOME to ~/.cache), as torch's."""
    if _hub_dir is not None:
        return _hub_dir
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.join(os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch"))), "hub")


def set_dir(d):
    """torch.hub.set_dir: get_dir's answer from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True):
    raise NotImplementedError(f"tnet.hub.list({github!r}): hub repositories run torch's code; {_LOCAL}")


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):
    raise NotImplementedError(f"tnet.hub.help({github!r}, {model!r}): hub repositories run torch's code; {_LOCAL}")


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """torch.hub's: url's bytes into the file dst (a dataset's archive, a checkpoint to convert), through a
    partial file renamed once whole; with hash_prefix, the SHA-256 of the bytes must start with it, else
    RuntimeError and no file, as torch's."""
    try:
        download(url, os.fspath(dst), url, "sha256" if hash_prefix else None, hash_prefix, progress)
    except DownloadError:
        raise
    except DataError as e:  # the hash's mismatch, or a folder that cannot be made: torch's RuntimeError
        raise RuntimeError(str(e)) from None


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False, file_name=None,
                             weights_only=False):
    raise NotImplementedError(f"tnet.hub.load_state_dict_from_url({url!r}): {_HOW}")


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """torch.hub.load: source="local" imports repo_or_dir's hubconf.py and calls its entrypoint `model`."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        raise NotImplementedError(f"tnet.hub.load({repo_or_dir!r}, {model!r}): hub models run torch's code; {_HOW}; "
                                  f"or {_LOCAL}")
    return _load_local(repo_or_dir, model, *args, **kwargs)


@contextlib.contextmanager
def _add_to_sys_path(path):
    """hubconf.py imports its repository's own modules: torch puts the directory first on sys.path meanwhile."""
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _load_local(hubconf_dir, model, *args, **kwargs):
    with _add_to_sys_path(hubconf_dir):
        spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, os.path.join(hubconf_dir, MODULE_HUBCONF))
        hub_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hub_module)
        missing = [d for d in getattr(hub_module, VAR_DEPENDENCY, None) or [] if importlib.util.find_spec(d) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
        if not isinstance(model, str):
            raise ValueError("Invalid input: model should be a string of function name")
        entry = getattr(hub_module, model, None)
        if entry is None or not callable(entry):
            raise RuntimeError(f"Cannot find callable {model} in hubconf")
        return entry(*args, **kwargs)
