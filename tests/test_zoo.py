"""The model zoo: the architectures of kuangliu/pytorch-cifar's models/ folder, each written once
in benchmarks/zoo_models.py as a function of `torch, nn, F`, ported to tnet by changing those
imports (tnet, tnet.nn, tnet.functional), and trained side by side with PyTorch.

For each model, at the reduced size ZOO names (its widths and depths cut so that the
interpreter trains it in seconds; every model at full size on a GPU):
1. it is built in tnet, and its initial weights are copied by name (state_dict) into the same
   model in PyTorch, in float32 and in float64;
2. each trains 2 SGD steps (lr 0.01, momentum 0.9, Nesterov, weight decay 5e-4, cross-entropy) on
   one batch: tnet in fp32 with exact GEMMs (the `ieee` fixture), PyTorch in fp32 and in float64;
3. tnet's losses, logits, gradients, weight changes and BatchNorm running statistics match
   float64's, each within max(SIDE_TOL, FACTOR x PyTorch fp32's own error on it): BatchNorm's sums
   near zero (shifts, scales, a conv bias before a BatchNorm) lose digits in any fp32 order; a
   piece that is rounding noise alone (PyTorch fp32's error 1 or more) within NOISE_FACTOR x that
   error or x fp32's rounding of the largest piece of its kind.

Training mode, at a batch where no kink is near (issue 26's choice (e), the second way). At a
tiny batch a ReLU input near zero, or two near-equal maxima of a max pooling window, can fall on
the other side under another summation order: the gradient then flows through another element,
and (measured on these models in float64) one such flip moves some gradients by 1e-3 to 1, far
beyond any rounding bound. Eval mode would not help: BatchNorm would no longer spread the flip
over a channel, but the element's own gradient still changes. So the batch is chosen: seeds are
tried in order until PyTorch's float64 run keeps every ReLU input and every pooling window's gap
at least MARGIN times PyTorch fp32's largest error on that channel away from its kink (Kinks in
helpers.py records them); tnet, rounding in its own order, would have to err MARGIN times more
than PyTorch's worst to flip one. tnet's side also runs under the Recorder: no torch math.

A model that does not port yet fails with the step that failed and tnet's error, which names
the missing piece: constructing it, its state_dict's names, its forward, backward or SGD step."""
import pytest
import torch

from benchmarks.zoo_models import ZOO
from helpers import DEV, Side, train_beside_torch

BATCH = 1
# the stochastic layers off: EfficientNet's dropout and drop connect draw different masks in tnet
NO_DROPOUT = {"dropout_rate": 0.0, "drop_connect_rate": 0.0}


def size_of(spec, full):
    size = dict(spec.full if full else spec.reduced)
    return {**size, **{k: v for k, v in NO_DROPOUT.items() if k in size}}


def run_zoo_model(name, full=False):
    """Build the zoo's model `name` in tnet, then train it beside PyTorch fp32 and float64 and
    compare (the module docstring; helpers.train_beside_torch). Returns the seconds of PyTorch's
    side and of tnet's."""
    spec = ZOO[name]
    image = 32 if full else spec.image
    return train_beside_torch(name, spec.build, size_of(spec, full), Side((BATCH, 3, image, image)))


@pytest.mark.parametrize("name", ZOO)
def test_zoo_model_trains_like_pytorch(name, ieee):
    run_zoo_model(name)


@pytest.mark.skipif(DEV.type != "cuda", reason="the full-size models: on a GPU only")
@pytest.mark.parametrize("name", ZOO)
def test_zoo_model_trains_like_pytorch_at_full_size(name, ieee, exact_torch):
    run_zoo_model(name, full=True)


@pytest.fixture
def exact_torch():
    """PyTorch's fp32 reference without tf32 (cuDNN's and cuBLAS's default on the GPU)."""
    flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags
