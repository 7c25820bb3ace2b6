import numpy as np
import pytest
import torch

import tnet

TOL = {"ieee": 1e-5, "tf32": 2e-3, "bf16": 2e-2}


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64; out and ref may be tnet, torch or numpy."""
    out, ref = (np.asarray(to_numpy(v), dtype=np.float64) for v in (out, ref))
    return np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30)


def to_numpy(v):
    if isinstance(v, tnet.Tensor):
        v = v.data
    if isinstance(v, torch.Tensor):
        v = v.detach().cpu()
        return (v.float() if v.dtype == torch.bfloat16 else v).numpy()  # numpy has no bfloat16
    return v


def assert_close(out, ref, tol, what=""):
    out, ref = (np.asarray(to_numpy(v), dtype=np.float64) for v in (out, ref))
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != {ref.shape}"
    err = rel_err(out, ref)
    if not (err <= tol):  # also catches NaN
        i = np.unravel_index(np.nanargmax(np.abs(out - ref)), out.shape) if out.size else ()
        pytest.fail(f"{what}: relative error {err:.3g} > {tol:g}; worst element at {i}: "
                    f"{out[i]!r} vs reference {ref[i]!r}")


@pytest.fixture
def ieee():
    """fp32 GEMMs in exact IEEE arithmetic, for comparisons at the fp32 tolerance."""
    previous = tnet.set_precision("ieee")
    yield
    tnet.set_precision(previous)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def only_config(monkeypatch, kernel, config):
    """Make the autotuned `kernel` run `config` alone, for this test: its configs, and the config
    it remembers for each tuning key (autotune._Remembered), which would otherwise win."""
    monkeypatch.setattr(kernel, "configs", [config])
    monkeypatch.setattr(kernel, "chosen", {})


class Touch:
    """Unpickling this creates the file `path`: what a malicious pickle could do."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def check_op(fn_tnet, fn_torch, inputs, tol, seed_rng):
    """The forward and every input's gradient (where torch's requires one) against torch;
    inputs are (tnet leaf, torch leaf) pairs. Returns tnet's output."""
    out, ref = fn_tnet(*[t for t, _ in inputs]), fn_torch(*[r for _, r in inputs])
    assert_close(out, ref, tol, "forward")
    g = seed_rng.standard_normal(ref.shape)
    out.backward(g)
    ref.backward(torch.tensor(g))
    for i, (t, r) in enumerate(inputs):
        if r.requires_grad:
            assert_close(t.grad, r.grad, tol, f"gradient of input {i}")
    return out
