"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports
alone, as test_ported_scripts.py: pytorch/examples' regression (a polynomial fitted by smooth_l1 and updates through
.data) and mnist_hogwild (model.share_memory(), each worker's train() with its own seed, run one after another in one
process); a repository's hubconf.py loaded by torch.hub.load(source="local") with torchvision's pre-0.13
constructors (model_urls, _resnet, pretrained=False); Hugging Face transformers' schedules (get_linear/cosine/
cosine-with-restarts/polynomial schedules as LambdaLR over functools.partial, AdamW's no-decay groups, the scheduler's
state_dict); timm's ViT pieces (drop_path by new_empty().bernoulli_(), DropPath's extra_repr, LayerScale in place,
Mlp, fused attention with dropout_p, trunc_normal_ through named_apply, no_weight_decay); torch.compile's spellings
(nn.Module.compile(), a decorated train step, fullgraph/dynamic/mode/options, torch.compiler.disable, is_compiling,
torch._dynamo.reset) with torch.jit.trace and torch.jit.script; an exact Gaussian process by Cholesky
(cholesky_solve, solve_triangular, logdet); a bilinear CNN (outer products by bmm, signed square root) with an
nn.Bilinear fusion head; a reproducibility and profiling preamble (seed_everything, use_deterministic_algorithms,
detect_anomaly, torch.profiler with record_function and key_averages, CUDA events guarded by is_available); AutoClip's
percentile clipping (torch.quantile of the gradient-norm history, get_total_norm, clip_grads_with_norm_, histc);
distributions as losses (Poisson and NegativeBinomial counts, a Beta policy's log_prob and entropy, Dirichlet's
kl_divergence, OneHotCategorical); and allRank's learning-to-rank losses (ListNet, ListMLE by a flipped cumsum,
RankNet over torch.combinations pairs, NDCG by log2 discounts and take_along_dim). Each runs in tnet, then in torch
from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers,
agree. Numpy draws what a script draws; shapes are tiny and runs 1-3 steps."""
import functools
import math
import os
import random

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) pytorch/examples' regression/main.py: W_target drawn once, make_features by torch.cat of x ** i, f(x) by
# x.mm(W_target) + b_target.item(), poly_desc, get_batch's random x (numpy's here), an nn.Linear updated by
# param.data.add_(-0.1 * param.grad) after fc.zero_grad(), the loop stopped when the loss falls under 1e-3
def examples_regression(m, state=None):
    torch, F = m.torch, m.F
    rng = np.random.default_rng(0)
    POLY_DEGREE = 4
    W_target = torch.tensor(normal(rng, POLY_DEGREE, 1)) * 5
    b_target = torch.tensor(normal(rng, 1)) * 5

    def make_features(x):
        """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
        x = x.unsqueeze(1)
        return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)

    def f(x):
        """Approximated function."""
        return x.mm(W_target) + b_target.item()

    def poly_desc(W, b):
        """Creates a string description of a polynomial."""
        result = 'y = '
        for i, w in enumerate(W):
            result += '{:+.2f} x^{} '.format(w, i + 1)
        result += '{:+.2f}'.format(b[0])
        return result

    def get_batch(batch_size=32):
        """Builds a batch i.e. (x, f(x)) pair."""
        random = torch.tensor(normal(rng, batch_size))
        x = make_features(random)
        y = f(x)
        return x, y

    fc = torch.nn.Linear(W_target.size(0), 1)
    init = load(m, fc, state)
    losses = []
    for batch_idx in range(1, 4):
        batch_x, batch_y = get_batch(8)
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
        losses.append(loss)
        if loss < 1e-3:
            break
    desc = poly_desc(fc.weight.view(-1).tolist(), fc.bias.tolist())
    assert desc.startswith('y = ') and desc.count('x^') == POLY_DEGREE, desc
    return init, losses + [float(batch_idx)] + summary(fc.parameters())


def test_examples_regression():
    compare(examples_regression)


# (b) pytorch/examples' mnist_hogwild: the Net of mnist, model.share_memory(), train(rank, args, model, device,
# dataset, dataloader_kwargs) seeding torch.manual_seed(args.seed + rank) and building its own DataLoader and
# optim.SGD(lr, momentum), train_epoch's log by len(data_loader.dataset), and test_epoch's summed nll_loss and
# pred.eq(target.view_as(pred)); the workers, mp.Process in the example, run one after another in this process
# (what the example's --num-processes 1 does, with the same shared parameters)
def mnist_hogwild(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    import argparse

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, kernel_size=5)
            self.conv2 = nn.Conv2d(4, 8, kernel_size=3)
            self.conv2_drop = nn.Dropout2d(p=0.0)
            self.fc1 = nn.Linear(32, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = x.view(-1, 32)
            x = F.relu(self.fc1(x))
            x = F.dropout(x, training=self.training, p=0.0)
            x = self.fc2(x)
            return F.log_softmax(x, dim=1)

    def train_epoch(epoch, args, model, device, data_loader, optimizer):
        model.train()
        pid = os.getpid()
        out = []
        for batch_idx, (data, target) in enumerate(data_loader):
            optimizer.zero_grad()
            output = model(data.to(device))
            loss = F.nll_loss(output, target.to(device))
            loss.backward()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                msg = '{}\tTrain Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                    pid, epoch, batch_idx * len(data), len(data_loader.dataset),
                    100. * batch_idx / len(data_loader), loss.item())
                assert 'Loss' in msg
            out.append(loss.item())
        return out

    def test_epoch(model, device, data_loader):
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for data, target in data_loader:
                output = model(data.to(device))
                test_loss += F.nll_loss(output, target.to(device), reduction='sum').item()
                pred = output.max(1)[1]
                correct += pred.eq(target.to(device).view_as(pred)).sum().item()
        test_loss /= len(data_loader.dataset)
        return [test_loss, float(correct)]

    def train(rank, args, model, device, dataset, dataloader_kwargs):
        torch.manual_seed(args.seed + rank)
        train_loader = torch.utils.data.DataLoader(dataset, **dataloader_kwargs)
        optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
        out = []
        for epoch in range(1, args.epochs + 1):
            out += train_epoch(epoch, args, model, device, train_loader, optimizer)
        return out

    args = argparse.Namespace(batch_size=4, epochs=1, lr=0.01, momentum=0.5, seed=1, log_interval=1,
                              num_processes=2, cuda=False, mps=False)
    use_cuda = args.cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    rng = np.random.default_rng(1)
    images = torch.tensor(rng.random((8, 1, 16, 16), dtype=np.float32))
    dataset1 = torch.utils.data.TensorDataset((images - 0.1307) / 0.3081, torch.tensor(rng.integers(0, 10, 8)))
    dataset2 = torch.utils.data.TensorDataset(images[:4], torch.tensor(rng.integers(0, 10, 4)))
    kwargs = {'batch_size': args.batch_size, 'shuffle': False}
    if use_cuda:
        kwargs.update({'num_workers': 1, 'pin_memory': True})
    torch.manual_seed(args.seed)
    model = Net().to(device)
    init = load(m, model, state)
    model.share_memory()  # gradients are allocated lazily, so they are not shared here
    assert all(p.is_shared() for p in model.parameters()) or device.type == 'cuda'
    losses = []
    for rank in range(args.num_processes):
        losses += train(rank, args, model, device, dataset1, kwargs)
    losses += test_epoch(model, device, torch.utils.data.DataLoader(dataset2, **kwargs))
    return init, losses + summary(model.parameters())


def test_mnist_hogwild():
    compare(mnist_hogwild)


# (c) a repository's hubconf.py (dependencies, entrypoints with docstrings) holding torchvision's pre-0.13
# resnet.py constructors (model_urls, _resnet(arch, block, layers, pretrained, progress, **kwargs) with
# load_state_dict_from_url behind pretrained, zero_init_residual), loaded by torch.hub.load(repo_dir, name,
# source="local", **kwargs) as a user's script does, then two training steps
HUBCONF = '''
dependencies = ['{torch}']

import {torch} as torch
import {torch}.nn as nn
from {torch}.hub import load_state_dict_from_url

model_urls = {{'resnet_tiny': 'https://example.invalid/resnet_tiny-0000.pth'}}


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, width=64, zero_init_residual=False):
        super(ResNet, self).__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 2 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def _resnet(arch, block, layers, pretrained, progress, **kwargs):
    model = ResNet(block, layers, **kwargs)
    if pretrained:
        state_dict = load_state_dict_from_url(model_urls[arch], progress=progress)
        model.load_state_dict(state_dict)
    return model


def resnet_tiny(pretrained=False, progress=True, **kwargs):
    """A two-stage ResNet of BasicBlocks.

    Args:
        pretrained (bool): If True, returns a model pre-trained on ImageNet
    """
    return _resnet('resnet_tiny', BasicBlock, [1, 1], pretrained, progress, **kwargs)
'''


def hub_local(m, state=None, root=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    repo_dir = os.path.join(root, m.torch.__name__)
    os.makedirs(repo_dir, exist_ok=True)
    with open(os.path.join(repo_dir, 'hubconf.py'), 'w') as f:
        f.write(HUBCONF.format(torch=m.torch.__name__))
    model = torch.hub.load(repo_dir, 'resnet_tiny', source='local', num_classes=10, width=4, zero_init_residual=True)
    init = load(m, model, state)
    rng = np.random.default_rng(2)
    x, y = torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 2))
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(2):
        loss = nn.CrossEntropyLoss()(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_hub_local(tmp_path):
    compare(hub_local, root=str(tmp_path))


def test_hub_pretrained_weights_name_the_way(tmp_path):
    import pytest
    import tnet
    repo_dir = tmp_path / 'tnet'
    repo_dir.mkdir()
    (repo_dir / 'hubconf.py').write_text(HUBCONF.format(torch='tnet'))
    with pytest.raises(NotImplementedError, match='pickles'):
        tnet.hub.load(str(repo_dir), 'resnet_tiny', source='local', pretrained=True)
    with pytest.raises(RuntimeError, match='Cannot find callable resnet_small in hubconf'):
        tnet.hub.load(str(repo_dir), 'resnet_small', source='local')
