"""Networks from Caffe's examples."""
from collections import OrderedDict

import numpy as np

from . import nn


def cifar10_quick(seed=0, width=1):
    """Caffe's cifar10_quick_train_test.prototxt, layer for layer (without the loss layer;
    use tnet.functional.cross_entropy). Shapes: 32 -> 16 -> 8 -> 4, so ip1 sees 64*4*4.
    width multiplies every channel count (1 is Caffe's net). The biases learn at twice the
    rate (Caffe's lr_mult 2 in that file)."""
    rng = np.random.default_rng(seed)
    c1, c2, c3, hidden = 32 * width, 32 * width, 64 * width, 64 * width
    g = nn.gaussian
    return nn.Sequential(OrderedDict([
        ("conv1", nn.Conv2d(3, c1, 5, padding=2, weight_filler=g(1e-4), rng=rng, bias_lr_mult=2)),
        ("pool1", nn.MaxPool2d(3, 2, ceil_mode=True)),
        ("relu1", nn.ReLU()),
        ("conv2", nn.Conv2d(c1, c2, 5, padding=2, weight_filler=g(0.01), rng=rng, bias_lr_mult=2)),
        ("relu2", nn.ReLU()),
        ("pool2", nn.AvgPool2d(3, 2, ceil_mode=True)),
        ("conv3", nn.Conv2d(c2, c3, 5, padding=2, weight_filler=g(0.01), rng=rng, bias_lr_mult=2)),
        ("relu3", nn.ReLU()),
        ("pool3", nn.AvgPool2d(3, 2, ceil_mode=True)),
        ("flatten", nn.Flatten()),
        ("ip1", nn.Linear(c3 * 4 * 4, hidden, weight_filler=g(0.1), rng=rng, bias_lr_mult=2)),
        ("ip2", nn.Linear(hidden, 10, weight_filler=g(0.1), rng=rng, bias_lr_mult=2)),
    ]))
