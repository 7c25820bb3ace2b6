"""ImageNet-style training programs and the utility files that repositories copy between them, as their
public code writes them: pytorch/examples' imagenet/main.py (its module imports `torch.backends.cudnn as
cudnn`, `torch.multiprocessing as mp` and `torch.distributed as dist`; AverageMeter with its Summary enum
and all_reduce, ProgressMeter, accuracy by topk, validate under no_grad, StepLR, save_checkpoint of a dict
with the optimizer's and scheduler's states, a resume), DeiT's and MAE's util/misc.py and engine (SmoothedValue
over a deque with median and global average, MetricLogger.log_every, is_dist_avail_and_initialized,
NativeScalerWithGradNormCount, get_grad_norm_, the half-cycle cosine lr with warmup and per-group lr_scale,
layer-wise lr decay param groups with no-weight-decay names), timm's Mixup (mixup and cutmix on the batch in
place, one-hot targets by scatter_, SoftTargetCrossEntropy) with ModelEmaV2 (a deepcopy updated through
state_dict().values(), integer buffers included) and ModelEmaV3's foreach lerp, and IBN-Net's half-instance,
half-batch norm (with an InstanceNorm2d that tracks running statistics). Written from memory in their sources'
styles and ported by their imports alone, as test_ported_scripts.py: each runs in tnet, then in torch from
tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers,
agree. Numpy draws what a script draws; shapes are tiny and runs 1-3 steps."""
import copy
import datetime
import importlib
import io
import math
import time
from collections import defaultdict, deque
from enum import Enum

import numpy as np

from helpers import compare, load


def summary(params):
    """A few numbers of the weights after the steps: each parameter's sum and sum of squares."""
    out = []
    for p in params:
        out += [float(p.detach().sum().item()), float((p.detach() ** 2).sum().item())]
    return out


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def sub(m, name):
    """A submodule a script imports on its own line (`import torch.backends.cudnn as cudnn`)."""
    return importlib.import_module(f"{m.torch.__name__}.{name}")


# (a) pytorch/examples' imagenet/main.py: `import torch.backends.cudnn as cudnn`, `import torch.distributed as
# dist`, `import torch.multiprocessing as mp` at the top; the device chosen by torch.cuda / torch.backends.mps;
# cudnn.benchmark = True; AverageMeter(name, fmt, Summary) with its all_reduce (called only when distributed) and
# summary(); ProgressMeter; accuracy(output, target, topk=(1, 5)) by output.topk(maxk, 1, True, True); train and
# validate (model.eval() under torch.no_grad(), images.to(device, non_blocking=True)); StepLR; save_checkpoint of
# {'epoch', 'arch', 'state_dict', 'best_acc1', 'optimizer', 'scheduler'} and a resume into a fresh model,
# optimizer and scheduler (torch.save / torch.load of an in-memory file, map_location); a Subset of a
# TensorDataset for validation, a ResNet-ish model in place of models.__dict__[arch]()
def imagenet_main(m, state=None):
    torch, nn, data = m.torch, m.nn, m.data
    cudnn, dist, mp = sub(m, "backends.cudnn"), sub(m, "distributed"), sub(m, "multiprocessing")
    assert callable(mp.spawn) and not dist.is_initialized()

    class Summary(Enum):
        NONE = 0
        AVERAGE = 1
        SUM = 2
        COUNT = 3

    class AverageMeter(object):
        def __init__(self, name, fmt=':f', summary_type=Summary.AVERAGE):
            self.name = name
            self.fmt = fmt
            self.summary_type = summary_type
            self.reset()

        def reset(self):
            self.val = 0
            self.avg = 0
            self.sum = 0
            self.count = 0

        def update(self, val, n=1):
            self.val = val
            self.sum += val * n
            self.count += n
            self.avg = self.sum / self.count

        def all_reduce(self):
            device = "cuda" if torch.cuda.is_available() else "cpu"
            total = torch.tensor([self.sum, self.count], dtype=torch.float32, device=device)
            dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
            self.sum, self.count = total.tolist()
            self.avg = self.sum / self.count

        def __str__(self):
            fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
            return fmtstr.format(**self.__dict__)

        def summary(self):
            if self.summary_type is Summary.AVERAGE:
                fmtstr = '{name} {avg:.3f}'
            elif self.summary_type is Summary.SUM:
                fmtstr = '{name} {sum:.3f}'
            elif self.summary_type is Summary.COUNT:
                fmtstr = '{name} {count:.3f}'
            else:
                fmtstr = ''
            return fmtstr.format(**self.__dict__)

    class ProgressMeter(object):
        def __init__(self, num_batches, meters, prefix=""):
            self.batch_fmtstr = self._get_batch_fmtstr(num_batches)
            self.meters = meters
            self.prefix = prefix

        def display(self, batch):
            entries = [self.prefix + self.batch_fmtstr.format(batch)]
            entries += [str(meter) for meter in self.meters]
            print('\t'.join(entries))

        def display_summary(self):
            entries = [" *"]
            entries += [meter.summary() for meter in self.meters]
            print(' '.join(entries))

        def _get_batch_fmtstr(self, num_batches):
            num_digits = len(str(num_batches // 1))
            fmt = '{:' + str(num_digits) + 'd}'
            return '[' + fmt + '/' + fmt.format(num_batches) + ']'

    def accuracy(output, target, topk=(1,)):
        with torch.no_grad():
            maxk = max(topk)
            batch_size = target.size(0)
            _, pred = output.topk(maxk, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))
            res = []
            for k in topk:
                correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
                res.append(correct_k.mul_(100.0 / batch_size))
            return res

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
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

    class TinyResNet(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = BasicBlock(8, 8)
            self.layer2 = BasicBlock(8, 16, 2, nn.Sequential(nn.Conv2d(8, 16, 1, 2, bias=False), nn.BatchNorm2d(16)))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16, num_classes)
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(mod, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.constant_(mod.weight, 1)
                    nn.init.constant_(mod.bias, 0)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer2(self.layer1(x))
            x = torch.flatten(self.avgpool(x), 1)
            return self.fc(x)

    def train(train_loader, model, criterion, optimizer, epoch, device, losses_out):
        batch_time = AverageMeter('Time', ':6.3f')
        losses = AverageMeter('Loss', ':.4e')
        top1 = AverageMeter('Acc@1', ':6.2f')
        top5 = AverageMeter('Acc@5', ':6.2f')
        progress = ProgressMeter(len(train_loader), [batch_time, losses, top1, top5], prefix="Epoch: [{}]".format(epoch))
        model.train()
        end = time.time()
        for i, (images, target) in enumerate(train_loader):
            images = images.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0], images.size(0))
            top5.update(acc5[0], images.size(0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batch_time.update(time.time() - end)
            end = time.time()
            losses_out.append(loss.item())
            if i % 1 == 0:
                progress.display(i + 1)

    def validate(val_loader, model, criterion, device):
        losses = AverageMeter('Loss', ':.4e', Summary.NONE)
        top1 = AverageMeter('Acc@1', ':6.2f', Summary.AVERAGE)
        top5 = AverageMeter('Acc@5', ':6.2f', Summary.AVERAGE)
        progress = ProgressMeter(len(val_loader), [losses, top1, top5], prefix='Test: ')
        model.eval()
        with torch.no_grad():
            for i, (images, target) in enumerate(val_loader):
                images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
                output = model(images)
                loss = criterion(output, target)
                acc1, acc5 = accuracy(output, target, topk=(1, 5))
                losses.update(loss.item(), images.size(0))
                top1.update(acc1[0], images.size(0))
                top5.update(acc5[0], images.size(0))
        if dist.is_available() and dist.is_initialized():
            top1.all_reduce()
            top5.all_reduce()
        progress.display_summary()
        return losses.avg, float(top1.avg)

    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    torch.manual_seed(0)
    cudnn.deterministic = True
    model = TinyResNet().to(device)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1)
    cudnn.benchmark = True
    rng = np.random.default_rng(0)
    dataset = data.TensorDataset(torch.tensor(normal(rng, 6, 3, 16, 16)), torch.tensor(rng.integers(0, 10, 6)))
    train_loader = data.DataLoader(dataset, batch_size=3, shuffle=False, num_workers=0, pin_memory=True)
    val_loader = data.DataLoader(data.Subset(dataset, range(4)), batch_size=2, shuffle=False)
    losses = []
    best_acc1 = 0
    for epoch in range(2):
        train(train_loader, model, criterion, optimizer, epoch, device, losses)
        val_loss, acc1 = validate(val_loader, model, criterion, device)
        losses.append(val_loss)
        scheduler.step()
        best_acc1 = max(acc1, best_acc1)
    buffer = io.BytesIO()
    torch.save({'epoch': 2, 'arch': 'tinyresnet', 'state_dict': model.state_dict(), 'best_acc1': best_acc1,
                'optimizer': optimizer.state_dict(), 'scheduler': scheduler.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer, map_location='cpu')
    model2 = TinyResNet().to(device)
    optimizer2 = torch.optim.SGD(model2.parameters(), 0.05, momentum=0.9, weight_decay=1e-4)
    scheduler2 = torch.optim.lr_scheduler.StepLR(optimizer2, step_size=1, gamma=0.1)
    model2.load_state_dict(checkpoint['state_dict'])
    optimizer2.load_state_dict(checkpoint['optimizer'])
    scheduler2.load_state_dict(checkpoint['scheduler'])
    assert checkpoint['epoch'] == 2 and scheduler2.get_last_lr() == scheduler.get_last_lr()
    train(train_loader, model2, criterion, optimizer2, 2, device, losses)
    return init, losses + summary(model2.parameters())


def test_pytorch_examples_imagenet_main():
    compare(imagenet_main)
