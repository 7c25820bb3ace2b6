"""Helpers and constants that the test files share: tolerances, the comparison that names the
worst element, tile configs one at a time. A plain module: tests import it (`from helpers
import ...`); conftest.py holds only pytest's fixtures."""
import tracemalloc

import numpy as np
import pytest
import torch

import tnet

TOL = {"ieee": 1e-5, "tf32": 2e-3, "bf16": 2e-2, "fp16": 1e-2}

# 16-bit storage: each dtype's tolerance against float64 of the same rounded inputs (the
# interpreter truncates fp32 -> bf16 stores, the GPU rounds them).
LOW = (torch.float16, torch.bfloat16)
FLOATS = (torch.float32, *LOW)
# The "every config" tests run each tile config in every storage dtype on the GPU; under the
# interpreter the configs matter little and the 16-bit cases have their own tests, so fp32 only.
CONFIG_DTYPES = FLOATS if tnet.DEVICE.type == "cuda" else (torch.float32,)


def tol_for(dtype, fp32_tol=TOL["ieee"]):
    """fp32_tol for float32, TOL["fp16"] or TOL["bf16"] for the 16-bit dtypes."""
    return {torch.float16: TOL["fp16"], torch.bfloat16: TOL["bf16"]}.get(dtype, fp32_tol)


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64; out and ref may be tnet, torch or numpy."""
    out, ref = (np.asarray(to_numpy(v), dtype=np.float64) for v in (out, ref))
    return np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30)


def to_numpy(v):
    if isinstance(v, tnet.Tensor):
        v = v.data
    if isinstance(v, torch.Tensor):  # numpy has no bfloat16: float64 holds every 16-bit value
        return v.detach().cpu().to(torch.float64 if v.dtype == torch.bfloat16 else v.dtype).numpy()
    return v


def assert_close(out, ref, tol, what=""):
    out, ref = (np.asarray(to_numpy(v), dtype=np.float64) for v in (out, ref))
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != {ref.shape}"
    err = rel_err(out, ref)
    if not (err <= tol):  # also catches NaN
        i = np.unravel_index(np.nanargmax(np.abs(out - ref)), out.shape) if out.size else ()
        pytest.fail(f"{what}: relative error {err:.3g} > {tol:g}; worst element at {i}: "
                    f"{out[i]!r} vs reference {ref[i]!r}")


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
    ref.backward(torch.tensor(g).to(out.dtype).double())  # the seed as tnet rounds it to out's dtype
    for i, (t, r) in enumerate(inputs):
        if r.requires_grad:
            assert_close(t.grad, r.grad, tol, f"gradient of input {i}")
    return out


def peak_bytes(fn):
    """The peak of Python's traced allocations while fn() runs."""
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak
