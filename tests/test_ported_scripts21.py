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
kl_divergence, OneHotCategorical); allRank's learning-to-rank losses (ListNet, ListMLE by a flipped cumsum, RankNet
over torch.combinations pairs, NDCG by log2 discounts and take_along_dim); pytorch-optimizer's Shampoo
(torch.eye(n, out=grad.new(n, n)), inverse roots by torch.svd); and a differentiable Kalman filter (kron,
block_diag, linalg.multi_dot, inv, slogdet, solve, tensor_split). Each runs in tnet, then in torch
from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers,
agree. Numpy draws what a script draws; shapes are tiny and runs 1-3 steps."""
import functools
import math
import os
import random

import numpy as np
import pytest

import tnet
from helpers import compare, imports, load, summary


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
    dataset1 = torch.utils.data.TensorDataset((images[4:] - 0.1307) / 0.3081, torch.tensor(rng.integers(0, 10, 4)))
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
    """pretrained=True asks load_state_dict_from_url for torch's pickles, which raises naming the conversion; an
    entrypoint hubconf.py lacks raises as torch's."""
    repo_dir = tmp_path / 'tnet'
    repo_dir.mkdir()
    (repo_dir / 'hubconf.py').write_text(HUBCONF.format(torch='tnet'))
    with pytest.raises(NotImplementedError, match='pickles'):
        tnet.hub.load(str(repo_dir), 'resnet_tiny', source='local', pretrained=True)
    with pytest.raises(RuntimeError, match='Cannot find callable resnet_small in hubconf'):
        tnet.hub.load(str(repo_dir), 'resnet_small', source='local')


# (d) Hugging Face transformers' optimization.py: get_linear_schedule_with_warmup, get_cosine_schedule_with_warmup,
# get_cosine_with_hard_restarts_schedule_with_warmup and get_polynomial_decay_schedule_with_warmup as LambdaLR over
# functools.partial of module-level lambdas (last_epoch=-1), AdamW over the "no_decay" groups by parameter names
# (bias, LayerNorm.weight), the loop's clip_grad_norm_, optimizer.step(), scheduler.step(), model.zero_grad() and
# get_last_lr(), and a scheduler's state_dict loaded into a fresh one (the lambdas are not in it)
def _get_linear_schedule_with_warmup_lr_lambda(current_step, *, num_warmup_steps, num_training_steps):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))


def _get_cosine_schedule_with_warmup_lr_lambda(current_step, *, num_warmup_steps, num_training_steps, num_cycles):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))


def _get_cosine_with_hard_restarts_schedule_with_warmup_lr_lambda(current_step, *, num_warmup_steps,
                                                                  num_training_steps, num_cycles):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
    if progress >= 1.0:
        return 0.0
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(num_cycles) * progress) % 1.0))))


def _get_polynomial_decay_schedule_with_warmup_lr_lambda(current_step, *, num_warmup_steps, num_training_steps,
                                                         lr_end, power, lr_init):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    elif current_step > num_training_steps:
        return lr_end / lr_init  # as LambdaLR multiplies by lr_init
    else:
        lr_range = lr_init - lr_end
        decay_steps = num_training_steps - num_warmup_steps
        pct_remaining = 1 - (current_step - num_warmup_steps) / decay_steps
        decay = lr_range * pct_remaining ** power + lr_end
        return decay / lr_init  # as LambdaLR multiplies by lr_init


def hf_schedules(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    LambdaLR = m.lr_scheduler.LambdaLR

    def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
        lr_lambda = functools.partial(_get_linear_schedule_with_warmup_lr_lambda, num_warmup_steps=num_warmup_steps,
                                      num_training_steps=num_training_steps)
        return LambdaLR(optimizer, lr_lambda, last_epoch)

    def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=0.5,
                                        last_epoch=-1):
        lr_lambda = functools.partial(_get_cosine_schedule_with_warmup_lr_lambda, num_warmup_steps=num_warmup_steps,
                                      num_training_steps=num_training_steps, num_cycles=num_cycles)
        return LambdaLR(optimizer, lr_lambda, last_epoch)

    def get_cosine_with_hard_restarts_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps,
                                                           num_cycles=1, last_epoch=-1):
        lr_lambda = functools.partial(_get_cosine_with_hard_restarts_schedule_with_warmup_lr_lambda,
                                      num_warmup_steps=num_warmup_steps, num_training_steps=num_training_steps,
                                      num_cycles=num_cycles)
        return LambdaLR(optimizer, lr_lambda, last_epoch)

    def get_polynomial_decay_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, lr_end=1e-7,
                                                  power=1.0, last_epoch=-1):
        lr_init = optimizer.defaults["lr"]
        if not (lr_init > lr_end):
            raise ValueError(f"lr_end ({lr_end}) must be smaller than initial lr ({lr_init})")
        lr_lambda = functools.partial(_get_polynomial_decay_schedule_with_warmup_lr_lambda,
                                      num_warmup_steps=num_warmup_steps, num_training_steps=num_training_steps,
                                      lr_end=lr_end, power=power, lr_init=lr_init)
        return LambdaLR(optimizer, lr_lambda, last_epoch)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(8, 8)
            self.LayerNorm = nn.LayerNorm(8, eps=1e-12)
            self.classifier = nn.Linear(8, 3)

        def forward(self, x):
            return self.classifier(self.LayerNorm(F.gelu(self.dense(x))))

    rng = np.random.default_rng(3)
    model = Classifier()
    init = load(m, model, state)
    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=5e-3, eps=1e-8)
    t_total = 6
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=2, num_training_steps=t_total)
    x, y = torch.tensor(normal(rng, 4, 8)), torch.tensor(rng.integers(0, 3, 4))
    losses = []
    for step in range(3):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        model.zero_grad()
        losses += [loss.item(), *scheduler.get_last_lr()]
    resumed = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=2, num_training_steps=t_total)
    resumed.load_state_dict(scheduler.state_dict())
    losses += [resumed.last_epoch, *resumed.get_last_lr()]
    # each schedule's multipliers over its whole run, from a fresh optimizer
    for make, kw in ((get_cosine_schedule_with_warmup, {}), (get_cosine_with_hard_restarts_schedule_with_warmup,
                                                            {"num_cycles": 2}),
                     (get_polynomial_decay_schedule_with_warmup, {"lr_end": 1e-4, "power": 2.0})):
        opt = torch.optim.AdamW([nn.Parameter(torch.zeros(1))], lr=1e-2)
        sched = make(opt, num_warmup_steps=2, num_training_steps=t_total, **kw)
        for _ in range(t_total + 1):
            opt.step()
            sched.step()
            losses.append(opt.param_groups[0]["lr"])
    return init, losses + summary(model.parameters())


def test_hf_schedules():
    compare(hf_schedules)


# (e) timm's layers as vision_transformer.py uses them: drop_path(x, drop_prob, training, scale_by_keep) by
# x.new_empty(shape).bernoulli_(keep_prob) and div_, DropPath with its extra_repr, LayerScale (x.mul_(gamma) when
# inplace), Mlp with nn.Identity norms, Attention's fused path (F.scaled_dot_product_attention with
# dropout_p=self.attn_drop.p if self.training else 0.) beside its manual path (q * scale @ k.transpose), Block,
# init by trunc_normal_ through named_apply, and param_groups_weight_decay (ndim <= 1 or a no_weight_decay name); the
# compared run has drop_path_rate 0, and tnet alone trains once with it on and checks DropPath's identity in eval mode
def timm_vit(m, state=None, drop_path_rate=0.0, steps=2):
    torch, nn, F = m.torch, m.nn, m.F

    def drop_path(x, drop_prob: float = 0., training: bool = False, scale_by_keep: bool = True):
        if drop_prob == 0. or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # work with diff dim tensors, not just 2D ConvNets
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0 and scale_by_keep:
            random_tensor.div_(keep_prob)
        return x * random_tensor

    class DropPath(nn.Module):
        def __init__(self, drop_prob: float = 0., scale_by_keep: bool = True):
            super(DropPath, self).__init__()
            self.drop_prob = drop_prob
            self.scale_by_keep = scale_by_keep

        def forward(self, x):
            return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

        def extra_repr(self):
            return f'drop_prob={round(self.drop_prob, 3):0.3f}'

    class LayerScale(nn.Module):
        def __init__(self, dim, init_values=1e-5, inplace=False):
            super().__init__()
            self.inplace = inplace
            self.gamma = nn.Parameter(init_values * torch.ones(dim))

        def forward(self, x):
            return x.mul_(self.gamma) if self.inplace else x * self.gamma

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, norm_layer=None,
                     bias=True, drop=0.):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features, bias=bias)
            self.act = act_layer()
            self.drop1 = nn.Dropout(drop)
            self.norm = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
            self.fc2 = nn.Linear(hidden_features, out_features, bias=bias)
            self.drop2 = nn.Dropout(drop)

        def forward(self, x):
            x = self.drop1(self.act(self.fc1(x)))
            return self.drop2(self.fc2(self.norm(x)))

    class Attention(nn.Module):
        def __init__(self, dim, num_heads=8, qkv_bias=False, qk_norm=False, attn_drop=0., proj_drop=0.,
                     norm_layer=nn.LayerNorm, fused_attn=True):
            super().__init__()
            assert dim % num_heads == 0, 'dim should be divisible by num_heads'
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.scale = self.head_dim ** -0.5
            self.fused_attn = fused_attn
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
            self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            q, k = self.q_norm(q), self.k_norm(k)
            if self.fused_attn:
                x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.)
            else:
                q = q * self.scale
                attn = q @ k.transpose(-2, -1)
                attn = attn.softmax(dim=-1)
                attn = self.attn_drop(attn)
                x = attn @ v
            x = x.transpose(1, 2).reshape(B, N, C)
            return self.proj_drop(self.proj(x))

    class Block(nn.Module):
        def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, qk_norm=False, init_values=None,
                     drop_path=0., fused_attn=True, norm_layer=nn.LayerNorm):
            super().__init__()
            self.norm1 = norm_layer(dim)
            self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm, fused_attn=fused_attn)
            self.ls1 = LayerScale(dim, init_values=init_values) if init_values else nn.Identity()
            self.drop_path1 = DropPath(drop_path) if drop_path > 0. else nn.Identity()
            self.norm2 = norm_layer(dim)
            self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio))
            self.ls2 = LayerScale(dim, init_values=init_values, inplace=True) if init_values else nn.Identity()
            self.drop_path2 = DropPath(drop_path) if drop_path > 0. else nn.Identity()

        def forward(self, x):
            x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
            x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
            return x

    def named_apply(fn, module, name='', depth_first=True, include_root=False):
        if not depth_first and include_root:
            fn(module=module, name=name)
        for child_name, child_module in module.named_children():
            child_name = '.'.join((name, child_name)) if name else child_name
            named_apply(fn=fn, module=child_module, name=child_name, depth_first=depth_first, include_root=True)
        if depth_first and include_root:
            fn(module=module, name=name)
        return module

    def init_weights_vit_timm(module, name=''):
        if isinstance(module, nn.Linear):
            nn.init.trunc_normal_(module.weight, std=.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    class TinyViT(nn.Module):
        def __init__(self, img_size=8, patch_size=4, num_classes=10, embed_dim=16, depth=2, num_heads=2,
                     drop_path_rate=0.):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, embed_dim, patch_size, patch_size)
            num_patches = (img_size // patch_size) ** 2
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
            self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * .02)
            dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]  # stochastic depth decay rule
            self.blocks = nn.Sequential(*[
                Block(embed_dim, num_heads, qkv_bias=True, init_values=0.1, drop_path=dpr[i], fused_attn=i % 2 == 0)
                for i in range(depth)])
            self.norm = nn.LayerNorm(embed_dim)
            self.head = nn.Linear(embed_dim, num_classes)
            nn.init.trunc_normal_(self.pos_embed, std=.02)
            nn.init.normal_(self.cls_token, std=1e-6)
            named_apply(init_weights_vit_timm, self)

        def no_weight_decay(self):
            return {'pos_embed', 'cls_token'}

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
            x = self.norm(self.blocks(x + self.pos_embed))
            return self.head(x[:, 0])

    def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
        no_weight_decay_list = set(no_weight_decay_list)
        decay, no_decay = [], []
        for name, param in model.named_parameters():
            if not param.requires_grad:
                continue
            if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
                no_decay.append(param)
            else:
                decay.append(param)
        return [{'params': no_decay, 'weight_decay': 0.}, {'params': decay, 'weight_decay': weight_decay}]

    rng = np.random.default_rng(4)
    model = TinyViT(drop_path_rate=drop_path_rate)
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(param_groups_weight_decay(model, 0.05, model.no_weight_decay()), lr=1e-3)
    x, y = torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 2))
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    if drop_path_rate:
        assert 'drop_prob=' in repr(model.blocks[1].drop_path1), repr(model.blocks[1])
        model.eval()
        with torch.no_grad():
            losses.append(F.cross_entropy(model(x), y).item())
    return init, losses + summary(model.parameters())


def test_timm_vit():
    compare(timm_vit)


def test_timm_vit_trains_with_drop_path_in_tnet():
    """drop_path_rate 0.5 in tnet alone (torch would draw other bernoulli_ masks): a step trains, DropPath's repr
    names its rate, and an eval-mode forward follows, all finite."""
    _, losses = timm_vit(imports("tnet"), drop_path_rate=0.5, steps=1)
    assert all(math.isfinite(v) for v in losses), losses


# (f) torch.compile as scripts spell it: nn.Module.compile() in place (state_dict keys unchanged), torch.compile with
# fullgraph=True, dynamic=False and mode="max-autotune" or options={...}, a train step decorated by @torch.compile,
# torch.compiler.disable on a logging method, torch.compiler.is_compiling(), torch._dynamo.config's
# cache_size_limit and torch._dynamo.reset(), then torch.jit.trace of the model in eval mode and torch.jit.script of a
# helper function (torch cannot trace a module that .compile() wrapped)
def compile_idioms(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch._dynamo.config.cache_size_limit = 64
    torch._dynamo.reset()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4, 10)
            self.seen = 0

        @torch.compiler.disable
        def log(self, x):
            self.seen += x.shape[0]

        def forward(self, x):
            if not torch.compiler.is_compiling():
                self.log(x)
            x = F.adaptive_avg_pool2d(F.relu(self.bn(self.conv(x))), 1).flatten(1)
            return self.fc(x)

    model = Net()
    init = load(m, model, state)
    model.compile(fullgraph=False, dynamic=False)
    assert list(model.state_dict()) == list(init), list(model.state_dict())
    opt_model = torch.compile(model, mode="max-autotune", fullgraph=True)
    eval_model = torch.compile(model, options={"triton.cudagraphs": False}, dynamic=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @torch.compile
    def train_step(x, y):
        loss = F.cross_entropy(opt_model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return loss

    @torch.jit.script
    def accuracy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (logits.argmax(dim=1) == y).float().mean()

    rng = np.random.default_rng(5)
    x, y = torch.tensor(normal(rng, 2, 3, 6, 6)), torch.tensor(rng.integers(0, 10, 2))
    losses = []
    for _ in range(2):
        loss = train_step(x, y)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    head = torch.jit.trace(model.fc, torch.zeros(1, 4))
    with torch.no_grad():
        out = eval_model(x)
        feats = F.adaptive_avg_pool2d(F.relu(model.bn(model.conv(x))), 1).flatten(1)
        losses += [accuracy(out, y).item(), (head(feats) - out).abs().max().item()]
    assert model.seen in (0, 6), model.seen  # torch's capture skips log (is_compiling() there); tnet runs eagerly
    return init, losses + summary(model.parameters())


def test_compile_idioms():
    compare(compile_idioms)


# (g) exact Gaussian process regression written out (the GPyTorch tutorial's model without GPyTorch): an RBF kernel
# by cdist over a softplus lengthscale, K + noise * I, torch.linalg.cholesky, alpha by torch.cholesky_solve, the
# negative marginal log-likelihood by 0.5 * y^T alpha + sum(log diag L) + n/2 log(2 pi), Adam on the raw
# hyperparameters, and the predictive mean and variance through torch.linalg.solve_triangular, checked against
# torch.logdet of K
def exact_gp(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class ExactGP(nn.Module):
        def __init__(self, train_x, train_y):
            super().__init__()
            self.train_x, self.train_y = train_x, train_y
            self.raw_lengthscale = nn.Parameter(torch.tensor(0.0))
            self.raw_outputscale = nn.Parameter(torch.tensor(0.0))
            self.raw_noise = nn.Parameter(torch.tensor(-2.0))
            self.mean_constant = nn.Parameter(torch.zeros(1))

        def kernel(self, a, b):
            lengthscale = F.softplus(self.raw_lengthscale)
            dist = torch.cdist(a / lengthscale, b / lengthscale).pow(2)
            return F.softplus(self.raw_outputscale) * torch.exp(-0.5 * dist)

        def covar(self):
            n = self.train_x.size(0)
            noise = F.softplus(self.raw_noise) + 1e-4
            return self.kernel(self.train_x, self.train_x) + noise * torch.eye(n)

        def neg_mll(self):
            K = self.covar()
            L = torch.linalg.cholesky(K)
            resid = (self.train_y - self.mean_constant).unsqueeze(-1)
            alpha = torch.cholesky_solve(resid, L)
            n = resid.size(0)
            mll = -0.5 * (resid * alpha).sum() - torch.log(torch.diagonal(L)).sum() - 0.5 * n * math.log(2 * math.pi)
            return -mll / n, K

        def predict(self, test_x):
            K = self.covar()
            L = torch.linalg.cholesky(K)
            Ks = self.kernel(self.train_x, test_x)
            v = torch.linalg.solve_triangular(L, Ks, upper=False)
            w = torch.linalg.solve_triangular(L, (self.train_y - self.mean_constant).unsqueeze(-1), upper=False)
            mean = self.mean_constant + (v.transpose(-1, -2) @ w).squeeze(-1)
            var = F.softplus(self.raw_outputscale) - v.pow(2).sum(0)
            return mean, var

    rng = np.random.default_rng(6)
    train_x = torch.tensor(np.linspace(0, 1, 12, dtype=np.float32)).unsqueeze(-1)
    train_y = torch.sin(train_x.squeeze(-1) * (2 * math.pi)) + torch.tensor(normal(rng, 12)) * 0.1
    model = ExactGP(train_x, train_y)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    losses = []
    for i in range(3):
        optimizer.zero_grad()
        loss, K = model.neg_mll()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        _, K = model.neg_mll()
        logdet = torch.logdet(K).item()
        L = torch.linalg.cholesky(K)
        assert abs(logdet - 2 * torch.log(torch.diagonal(L)).sum().item()) < 1e-3
        mean, var = model.predict(torch.tensor([[0.25], [0.6]]))
    return init, losses + [logdet] + mean.tolist() + var.tolist() + summary(model.parameters())


def test_exact_gp():
    compare(exact_gp)


# (h) a bilinear CNN (Lin et al.'s B-CNN as its PyTorch ports write it): features reshaped to N x C x HW, their outer
# product by torch.bmm(x, torch.transpose(x, 1, 2)) / HW, the signed square root torch.sign(x) *
# torch.sqrt(torch.abs(x) + 1e-10), F.normalize, a linear classifier; and a two-stream fusion head by nn.Bilinear
def bilinear_cnn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class BCNN(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                                          nn.Conv2d(4, 6, 3, padding=1), nn.ReLU(inplace=True))
            self.fc = nn.Linear(6 * 6, num_classes)
            self.color = nn.Linear(3, 5)
            self.fusion = nn.Bilinear(num_classes, 5, num_classes)

        def forward(self, x):
            N = x.size()[0]
            feats = self.features(x)
            C, H, W = feats.size()[1:]
            feats = feats.view(N, C, H * W)
            feats = torch.bmm(feats, torch.transpose(feats, 1, 2)) / (H * W)
            feats = feats.view(N, C * C)
            feats = torch.sign(feats) * torch.sqrt(torch.abs(feats) + 1e-10)
            feats = F.normalize(feats)
            logits = self.fc(feats)
            return self.fusion(logits, torch.tanh(self.color(x.mean(dim=(2, 3))))) + logits

    rng = np.random.default_rng(7)
    model = BCNN()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.9, weight_decay=1e-5)
    x, y = torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 2))
    losses = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_bilinear_cnn():
    compare(bilinear_cnn)


# (i) a reproducibility and profiling preamble as training scripts copy it: seed_everything (random, numpy,
# torch.manual_seed, torch.cuda.manual_seed_all, PYTHONHASHSEED), cudnn.deterministic and benchmark,
# torch.use_deterministic_algorithms(True, warn_only=True), torch.autograd.set_detect_anomaly and the detect_anomaly
# context around a step, torch.profiler.profile with a schedule, record_function and prof.step(), key_averages().table,
# CUDA events and peak-memory counters guarded by torch.cuda.is_available(), then the seeded run repeated gives the
# same losses
def reproducible_preamble(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def seed_everything(seed=42):
        random.seed(seed)
        os.environ["PYTHONHASHSEED"] = str(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.cuda.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False

    seed_everything(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    assert torch.are_deterministic_algorithms_enabled()
    torch.autograd.set_detect_anomaly(True)
    try:
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 10))
        init = load(m, model, state)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        rng = np.random.default_rng(8)
        x, y = torch.tensor(normal(rng, 2, 3, 6, 6)), torch.tensor(rng.integers(0, 10, 2))
        losses = []
        use_cuda = torch.cuda.is_available()
        if use_cuda:
            torch.cuda.reset_peak_memory_stats()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if use_cuda else [])
        with torch.profiler.profile(activities=activities, schedule=torch.profiler.schedule(wait=0, warmup=0, active=2),
                                    record_shapes=True) as prof:
            for _ in range(2):
                with torch.profiler.record_function("train_step"), torch.autograd.detect_anomaly():
                    loss = F.cross_entropy(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                losses.append(loss.item())
                prof.step()
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
        assert isinstance(table, str)
        if use_cuda:
            end.record()
            torch.cuda.synchronize()
            assert start.elapsed_time(end) > 0 and torch.cuda.max_memory_allocated() > 0
    finally:
        torch.autograd.set_detect_anomaly(False)
        torch.use_deterministic_algorithms(False)
    return init, losses + summary(model.parameters())


def test_reproducible_preamble():
    compare(reproducible_preamble)


# (j) AutoClip (Seetharaman et al.'s snippet): each step's total gradient norm appended to a history, the clip value
# the history's 10th percentile (np.percentile in the paper's code, torch.quantile here), clip_grad_norm_ to it; with
# torch 2.6's split spelling (get_total_norm of the gradients, clip_grads_with_norm_) and a histogram of the history
# by torch.histc
def autoclip(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def _get_grad_norm(model):
        total_norm = 0
        for p in model.parameters():
            if p.grad is not None:
                param_norm = p.grad.data.norm(2)
                total_norm += param_norm.item() ** 2
        return total_norm ** (1. / 2)

    class AutoClip:
        def __init__(self, percentile=10):
            self.grad_history = []
            self.percentile = percentile

        def __call__(self, model):
            self.grad_history.append(_get_grad_norm(model))
            clip_value = torch.quantile(torch.tensor(self.grad_history), self.percentile / 100.0).item()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_value)
            return clip_value

    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    clipper = AutoClip(percentile=25)
    rng = np.random.default_rng(9)
    losses = []
    for step in range(3):
        x, y = torch.tensor(normal(rng, 4, 6)), torch.tensor(rng.integers(0, 3, 4))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if step < 2:
            losses += [loss.item(), clipper(model)]
        else:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            total = torch.nn.utils.get_total_norm(grads, norm_type=2.0)
            torch.nn.utils.clip_grads_with_norm_(model.parameters(), max_norm=0.5, total_norm=total)
            losses += [loss.item(), total.item()]
        optimizer.step()
    hist = torch.histc(torch.tensor(clipper.grad_history), bins=4, min=0, max=4)
    return init, losses + hist.tolist() + summary(model.parameters())


def test_autoclip():
    compare(autoclip)


# (k) torch.distributions as losses: a Poisson regression and a NegativeBinomial count model (log_prob of integer
# counts as floats), a Beta policy for actions in (0, 1) (softplus + 1 concentrations, log_prob, entropy), a
# Dirichlet head with kl_divergence to a uniform prior, and OneHotCategorical's log_prob and entropy
def distribution_losses(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    D = torch.distributions

    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(5, 8)
            self.rate = nn.Linear(8, 1)
            self.nb = nn.Linear(8, 2)
            self.beta = nn.Linear(8, 2)
            self.dirichlet = nn.Linear(8, 3)
            self.cat = nn.Linear(8, 3)

        def forward(self, x):
            h = torch.tanh(self.body(x))
            return (self.rate(h).squeeze(-1), self.nb(h), F.softplus(self.beta(h)) + 1.0,
                    F.softplus(self.dirichlet(h)) + 0.5, self.cat(h))

    model = Heads()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(10)
    x = torch.tensor(normal(rng, 6, 5))
    counts = torch.tensor(rng.poisson(2.0, 6).astype(np.float32))
    actions = torch.tensor(rng.uniform(0.05, 0.95, (6, 2)).astype(np.float32))
    onehot = F.one_hot(torch.tensor(rng.integers(0, 3, 6)), 3).float()
    losses = []
    for _ in range(2):
        log_rate, nb, conc, alpha, logits = model(x)
        poisson = -D.Poisson(log_rate.exp()).log_prob(counts).mean()
        negbin = -D.NegativeBinomial(total_count=F.softplus(nb[:, 0]) + 0.1, logits=nb[:, 1]).log_prob(counts).mean()
        policy = D.Beta(conc[:, 0], conc[:, 1])
        beta = -(policy.log_prob(actions[:, 0]).mean() + 0.01 * policy.entropy().mean())
        prior = D.Dirichlet(torch.ones(3))
        kl = D.kl_divergence(D.Dirichlet(alpha), prior).mean()
        cat = D.OneHotCategorical(logits=logits)
        nll = -cat.log_prob(onehot).mean() - 0.01 * cat.entropy().mean()
        loss = poisson + negbin + beta + kl + nll
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [poisson.item(), negbin.item(), beta.item(), kl.item(), nll.item()]
    return init, losses + summary(model.parameters())


def test_distribution_losses():
    compare(distribution_losses)


# (l) allRank's learning-to-rank losses as its repository writes them: ListNet (softmax cross-entropy over each
# slate, padded items masked by the padding value -1 with float('-inf')), ListMLE (a random shuffle, here numpy's,
# gather by the sorted true scores, max subtraction, the log of a flipped cumsum of exps), RankNet over the pairs of
# torch.combinations of slate positions with BCEWithLogits on score differences, and NDCG@k by take_along_dim and
# torch.log2 discounts of arange
def allrank_losses(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    PADDED_Y_VALUE, DEFAULT_EPS = -1, 1e-10
    rng = np.random.default_rng(11)

    def listNet(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE):
        y_pred = y_pred.clone()
        y_true = y_true.clone()
        mask = y_true == padded_value_indicator
        y_pred[mask] = float('-inf')
        y_true[mask] = float('-inf')
        preds_smax = F.softmax(y_pred, dim=1)
        true_smax = F.softmax(y_true, dim=1)
        preds_smax = preds_smax + eps
        preds_log = torch.log(preds_smax)
        return torch.mean(-torch.sum(true_smax * preds_log, dim=1))

    def listMLE(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE):
        random_indices = torch.tensor(rng.permutation(y_pred.shape[-1]))
        y_pred_shuffled = y_pred[:, random_indices]
        y_true_shuffled = y_true[:, random_indices]
        y_true_sorted, indices = y_true_shuffled.sort(descending=True, dim=-1)
        mask = y_true_sorted == padded_value_indicator
        preds_sorted_by_true = torch.gather(y_pred_shuffled, dim=1, index=indices)
        preds_sorted_by_true[mask] = float("-inf")
        max_pred_values, _ = preds_sorted_by_true.max(dim=1, keepdim=True)
        preds_sorted_by_true_minus_max = preds_sorted_by_true - max_pred_values
        cumsums = torch.cumsum(preds_sorted_by_true_minus_max.exp().flip(dims=[1]), dim=1).flip(dims=[1])
        observation_loss = torch.log(cumsums + eps) - preds_sorted_by_true_minus_max
        observation_loss[mask] = 0.0
        return torch.mean(torch.sum(observation_loss, dim=1))

    def rankNet(y_pred, y_true, padded_value_indicator=PADDED_Y_VALUE):
        pairs = torch.combinations(torch.arange(y_true.shape[1]), r=2)
        pairs_true = y_true[:, pairs]
        selected_pred = y_pred[:, pairs]
        true_diffs = pairs_true[:, :, 0] - pairs_true[:, :, 1]
        pred_diffs = selected_pred[:, :, 0] - selected_pred[:, :, 1]
        the_mask = (true_diffs > 0) & (~torch.isinf(true_diffs)) & (pairs_true[:, :, 1] != padded_value_indicator)
        pred_diffs = pred_diffs[the_mask]
        true_diffs = (true_diffs > 0).type(torch.float32)[the_mask]
        return nn.BCEWithLogitsLoss()(pred_diffs, true_diffs)

    def ndcg(y_pred, y_true, ats=(3,)):
        _, order = y_pred.sort(descending=True, dim=-1)
        gains = torch.take_along_dim(y_true.clamp(min=0), order, dim=1)
        discounts = 1.0 / torch.log2(torch.arange(y_true.shape[1], dtype=torch.float) + 2.0)
        ideal, _ = y_true.clamp(min=0).sort(descending=True, dim=-1)
        out = []
        for k in ats:
            dcg = ((2 ** gains[:, :k] - 1) * discounts[:k]).sum(-1)
            idcg = ((2 ** ideal[:, :k] - 1) * discounts[:k]).sum(-1)
            out.append(torch.where(idcg > 0, dcg / idcg, torch.zeros_like(dcg)).mean().item())
        return out

    # the scorer's last bias shifts every score of a slate alike, which no loss here sees: its gradient is rounding
    # alone, which Adam would normalise to a full step, so the layer has none
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1, bias=False))
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.tensor(normal(rng, 3, 5, 4))
    relevance = rng.integers(0, 4, (3, 5)).astype(np.float32)
    relevance[0, 3:] = PADDED_Y_VALUE  # a short slate, padded
    y_true = torch.tensor(relevance)
    losses = []
    for _ in range(2):
        y_pred = model(x).squeeze(-1)
        ln, lm, rn = listNet(y_pred, y_true), listMLE(y_pred, y_true), rankNet(y_pred, y_true)
        loss = ln + lm + rn
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [ln.item(), lm.item(), rn.item()] + ndcg(y_pred.detach(), y_true)
    return init, losses + summary(model.parameters())


def test_allrank_losses():
    compare(allrank_losses)


# (m) pytorch-optimizer's Shampoo (jettify's): per-dimension preconditioners made by epsilon * torch.eye(dim,
# out=grad.new(dim, dim)), grad.transpose_(0, dim_id).contiguous() reshaped to (dim, -1), precond.add_(grad @ grad_t),
# the inverse root by _matrix_power through torch.svd (u @ s.pow_(power).diag() @ v.t()), momentum by
# buf.mul_(momentum).add_(grad), weight decay by grad.add_(p.data, alpha=...), the update by p.data.add_(grad, alpha=-lr)
def shampoo(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Optimizer = m.optim.Optimizer

    def _matrix_power(matrix, power):
        # use CPU for svd for speed up
        device = matrix.device
        matrix = matrix.cpu()
        u, s, v = torch.svd(matrix)
        return (u @ s.pow_(power).diag() @ v.t()).to(device)

    class Shampoo(Optimizer):
        def __init__(self, params, lr=1e-1, momentum=0.0, weight_decay=0.0, epsilon=1e-4, update_freq=1):
            if lr <= 0.0:
                raise ValueError('Invalid learning rate: {}'.format(lr))
            defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, epsilon=epsilon,
                            update_freq=update_freq)
            super(Shampoo, self).__init__(params, defaults)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    order = grad.ndimension()
                    original_size = grad.size()
                    state = self.state[p]
                    momentum = group['momentum']
                    weight_decay = group['weight_decay']
                    if len(state) == 0:
                        state['step'] = 0
                        if momentum > 0:
                            state['momentum_buffer'] = grad.clone()
                        for dim_id, dim in enumerate(grad.size()):
                            # precondition matrices
                            state['precond_{}'.format(dim_id)] = group['epsilon'] * torch.eye(dim, out=grad.new(dim, dim))
                            state['inv_precond_{dim_id}'.format(dim_id=dim_id)] = grad.new(dim, dim).zero_()
                    if momentum > 0:
                        grad.mul_(1 - momentum).add_(state['momentum_buffer'], alpha=momentum)
                    if weight_decay > 0:
                        grad.add_(p.data, alpha=group['weight_decay'])
                    # See Algorithm 2 for detail
                    for dim_id, dim in enumerate(grad.size()):
                        precond = state['precond_{}'.format(dim_id)]
                        inv_precond = state['inv_precond_{}'.format(dim_id)]
                        # mat_{dim_id}(grad)
                        grad = grad.transpose_(0, dim_id).contiguous()
                        transposed_size = grad.size()
                        grad = grad.view(dim, -1)
                        grad_t = grad.t()
                        precond.add_(grad @ grad_t)
                        if state['step'] % group['update_freq'] == 0:
                            inv_precond.copy_(_matrix_power(precond, -1 / order))
                        if dim_id == order - 1:
                            # finally
                            grad = grad_t @ inv_precond
                            # grad: (-1, last_dim)
                            grad = grad.view(original_size)
                        else:
                            # if not final
                            grad = inv_precond @ grad
                            # grad (dim, -1)
                            grad = grad.view(transposed_size)
                    state['step'] += 1
                    state['momentum_buffer'] = grad
                    p.data.add_(grad, alpha=-group['lr'])
            return loss

    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 4))
    init = load(m, model, state)
    # epsilon 0.1, not the default 1e-4: a bias's preconditioner is epsilon * I plus one outer product, whose inverse
    # multiplies the rounding of its other directions by |g|^2 / epsilon
    optimizer = Shampoo(model.parameters(), lr=0.05, momentum=0.5, weight_decay=1e-4, epsilon=0.1)
    rng = np.random.default_rng(12)
    x, y = torch.tensor(normal(rng, 3, 1, 6, 6)), torch.tensor(rng.integers(0, 4, 3))
    losses = []
    for _ in range(2):
        def closure():
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss
        losses.append(optimizer.step(closure).item())
    return init, losses + summary(model.parameters())


def test_shampoo():
    compare(shampoo)


# (n) a differentiable Kalman filter (the constant-velocity tracker of filterpy's examples, written in torch to learn
# its noise scales by gradient): F = torch.kron(torch.eye(2), [[1, dt], [0, 1]]), Q = torch.block_diag of the
# per-axis white-noise blocks, the predict step by torch.linalg.multi_dot, the update by torch.linalg.inv of the
# innovation covariance with the Joseph form, the log-likelihood by torch.linalg.slogdet and torch.linalg.solve,
# and the trajectory's positions by torch.stack and tensor_split
def kalman_filter(m, state=None):
    torch, nn = m.torch, m.nn

    class KalmanFilter(nn.Module):
        def __init__(self, dt=1.0):
            super().__init__()
            self.log_q = nn.Parameter(torch.tensor(-1.0))
            self.log_r = nn.Parameter(torch.tensor(0.0))
            self.register_buffer('F', torch.kron(torch.eye(2), torch.tensor([[1.0, dt], [0.0, 1.0]])))
            self.register_buffer('H', torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]))
            self.register_buffer('q_block', torch.tensor([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]]))

        def forward(self, zs):
            Q = torch.block_diag(self.q_block, self.q_block) * self.log_q.exp()
            R = torch.eye(2) * self.log_r.exp()
            x = torch.cat([zs[0, :1], torch.zeros(1), zs[0, 1:], torch.zeros(1)]).unsqueeze(-1)
            P = torch.eye(4) * 10.0
            I = torch.eye(4)
            nll, means = 0.0, []
            for z in zs[1:]:
                x = self.F @ x
                P = torch.linalg.multi_dot([self.F, P, self.F.T]) + Q
                y = z.unsqueeze(-1) - self.H @ x
                S = torch.linalg.multi_dot([self.H, P, self.H.T]) + R
                K = P @ self.H.T @ torch.linalg.inv(S)
                x = x + K @ y
                IKH = I - K @ self.H
                P = torch.linalg.multi_dot([IKH, P, IKH.T]) + torch.linalg.multi_dot([K, R, K.T])
                sign, logdet = torch.linalg.slogdet(S)
                nll = nll + 0.5 * (logdet + (y * torch.linalg.solve(S, y)).sum() + 2 * math.log(2 * math.pi))
                means.append(x.squeeze(-1))
            return nll / (len(zs) - 1), torch.stack(means)

    rng = np.random.default_rng(13)
    t = np.arange(6, dtype=np.float32)
    truth = np.stack([0.5 * t, 2.0 - 0.3 * t], 1)
    zs = torch.tensor((truth + 0.3 * rng.standard_normal(truth.shape)).astype(np.float32))
    model = KalmanFilter()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    losses = []
    for _ in range(2):
        optimizer.zero_grad()
        nll, means = model(zs)
        nll.backward()
        optimizer.step()
        losses.append(nll.item())
    px, vx, py, vy = torch.tensor_split(means.detach(), 4, dim=1)
    losses += torch.cat([px, py], 1)[-1].tolist() + [vx.mean().item(), vy.mean().item()]
    return init, losses + summary(model.parameters())


def test_kalman_filter():
    compare(kalman_filter)
