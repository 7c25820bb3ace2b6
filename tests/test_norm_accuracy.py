"""BatchNorm's training-mode statistics against float64, beside torch fp32's own error, and NaN/inf
input against torch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
import tnet.functional as F


@pytest.mark.parametrize("shift", [0.0, 1000.0, 1e-3])
def test_batch_stats_as_accurate_as_torch(shift):
    x = torch.tensor(np.random.default_rng(0).standard_normal((2048, 64)) + shift, dtype=torch.float32)
    ref = x.double()
    yref = (ref - ref.mean(0)) / torch.sqrt(ref.var(0, unbiased=False) + 1e-5)
    err = lambda y: ((y.double() - yref).norm() / yref.norm()).item()
    ours = err(F.batch_norm(tnet.tensor(x.numpy()), None, None, training=True).data.cpu())
    theirs = err(tF.batch_norm(x, None, None, training=True))
    assert ours <= 4 * theirs + 1e-7, f"shift {shift}: relative error {ours:.2e}, torch fp32 {theirs:.2e}"


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_inf_like_torch(bad):
    x = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    x[2, 1] = bad
    y = F.batch_norm(tnet.tensor(x), None, None, training=True).data.cpu()
    ref = tF.batch_norm(torch.tensor(x), None, None, training=True)
    assert torch.equal(torch.isnan(y), torch.isnan(ref)), f"NaN pattern {y} vs torch {ref}"
