"""Train Caffe's CIFAR-10 quick network, or the speed run's airbench94, with tnet.

    python train.py --epochs 10            # Caffe's recipe: 5,000 iterations at batch 100
    python train.py --recipe fast          # the same network, a better recipe
    python train.py --precision bf16       # 16-bit activations, fp32 master weights
    python train.py --model airbench94     # airbench94 and its recipe: 9.9 epochs at batch 1024
    python train.py --model airbench94 --runs 5  # seeds 0-4, every run, their mean and spread
    python train.py --model airbench94 --recipe muon  # airbench94_muon's: Muon, 8 epochs at batch 2000
    torchrun --nproc_per_node 2 train.py --model airbench94  # its batch split over 2 GPUs

Caffe's recipe (cifar10_quick_solver.prototxt): SGD, lr 0.001, momentum 0.9, weight decay
0.004, batch 100, the lr divided by ten for the last fifth of the iterations; inputs are
raw pixels minus the training set's mean image. The fast recipe adds random crops and
flips, label smoothing, a one-cycle learning rate and flip averaging at test time.

airbench's recipe (airbench94's): inputs normalised per channel; random translates by up to
2 pixels (reflect padding) and alternating flips (a coin per image in the first epoch, then
the mirror of the previous epoch's view); the last partial batch dropped; cross-entropy with
label smoothing 0.2 summed over the batch; SGD with Nesterov momentum 0.85, where --lr and
--weight-decay are airbench's: lr = 11.5 / s and decay wd = 0.0153 * batch / s with
s = 1024 * (1 + 1 / (1 - momentum)), weight_decay = wd / lr per group as PyTorch's SGD (the
BatchNorm shifts at 64 lr, the whitening bias trained for 3 epochs only); the lr factor linear
from 0.2 to 1 over the first 23% of the steps, then to 0.07; lookahead every 5 steps; 9.9
epochs (ceil(9.9 x batches per epoch) steps); fp16 without a loss scale (the summed loss
scales the gradients by the batch size, as airbench trains); the whitening conv set from the
first 5,000 training images (its time counts as training); the test images mirrored and
translated (test-time augmentation level 2), evaluated after the last epoch only.

The muon recipe (airbench94_muon's, the same data and evaluation): 8 epochs at batch 2000, no
lookahead; Muon (lr 0.24, momentum 0.6, Nesterov, 3 Newton-Schulz steps, each filter kept at
norm sqrt(its output channels)) on the convolutions' filters; SGD with Nesterov momentum 0.85 on
the whitening bias and the BatchNorm shifts (lr 0.053) and the head (airbench94_muon's lr 0.67,
for its head's scale), with a weight decay of 2e-6 per image; every lr linear down to 0 (the
whitening bias's over its 3 epochs).
Options given on the command line override the recipe's.
"""
import sys

import tnet


def tnet_problem(module):
    """Why `module` (what `import tnet` found) is not tnet, or None. A folder named tnet
    without an __init__.py (a checkout's folder beside the script, say) imports as a namespace
    package: no __file__, none of tnet's names."""
    if getattr(module, "__file__", None) is not None and hasattr(module, "manual_seed"):
        return None
    where = " ".join(getattr(module, "__path__", None) or [str(getattr(module, "__file__", None))])
    return (f"error: `import tnet` found {where}, a folder without tnet's code (Python imported it as a "
            f"namespace package); run from a folder without a `tnet` folder (or rename it), or put the "
            f"checkout first: PYTHONPATH=CHECKOUT, or pip install CHECKOUT (an editable install's finder "
            f"loses to the folder)")


if tnet_problem(tnet):
    sys.exit(tnet_problem(tnet))

from tnet import trainer  # noqa: E402


def main(argv=None):
    """Train as the command line says; returns the last run's result (see trainer.report)."""
    args = trainer.parse_args(argv, description=__doc__)  # the options; the recipe's values fill the others
    recipe = trainer.recipe_of(args)  # the recipe (tnet.recipes) with those values
    return trainer.train(args, recipe)  # one run, or --runs runs and their summary


if __name__ == "__main__":
    main()
