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
half-batch norm (with an InstanceNorm2d that tracks running statistics), and a torchrun-style DDP script
(DistributedSampler, no_sync gradient accumulation, all_reduce of the logged loss, a "module." checkpoint
restored through consume_prefix_in_state_dict_if_present) in a gloo process group of one. Written from memory
in their sources' styles and ported by their imports alone, as test_ported_scripts.py: each runs in tnet, then in torch from
tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers,
agree. Numpy draws what a script draws; shapes are tiny and runs 1-3 steps."""
import contextlib
import copy
import datetime
import importlib
import io
import math
import time
from collections import defaultdict, deque
from enum import Enum

import numpy as np

from helpers import compare, load, summary


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


# (b) DeiT's and MAE's util/misc.py, util/lr_sched.py, util/lr_decay.py and engine_finetune.py: SmoothedValue (a
# deque; median by torch.tensor(list(self.deque)).median().item(), avg by .mean(), global_avg, max, value;
# synchronize_between_processes guarded by is_dist_avail_and_initialized), MetricLogger (a defaultdict of meters,
# update(**kwargs) with tensors' .item(), __getattr__, log_every with its header, ETA by datetime.timedelta and
# torch.cuda.max_memory_allocated when there is CUDA), NativeScalerWithGradNormCount (torch.cuda.amp.GradScaler,
# disabled here: scale, backward, unscale_, clip_grad_norm_ or get_grad_norm_, step, update, state_dict),
# get_grad_norm_ (torch.norm of a torch.stack of per-parameter norms), adjust_learning_rate (linear warmup, then a
# half-cycle cosine, by param_group["lr_scale"]) per iteration, param_groups_lrd (layer-wise lr decay over a small
# ViT's blocks, no weight decay for 1-D parameters and the no_weight_decay() names), AdamW over those groups, a
# loss that is checked with math.isfinite, and accum_iter gradient accumulation
def deit_mae_engine(m, state=None):
    torch, nn = m.torch, m.nn
    dist = sub(m, "distributed")

    def is_dist_avail_and_initialized():
        if not dist.is_available():
            return False
        if not dist.is_initialized():
            return False
        return True

    def get_world_size():
        if not is_dist_avail_and_initialized():
            return 1
        return dist.get_world_size()

    class SmoothedValue(object):
        def __init__(self, window_size=20, fmt=None):
            if fmt is None:
                fmt = "{median:.4f} ({global_avg:.4f})"
            self.deque = deque(maxlen=window_size)
            self.total = 0.0
            self.count = 0
            self.fmt = fmt

        def update(self, value, n=1):
            self.deque.append(value)
            self.count += n
            self.total += value * n

        def synchronize_between_processes(self):
            if not is_dist_avail_and_initialized():
                return
            t = torch.tensor([self.count, self.total], dtype=torch.float64, device='cuda')
            dist.barrier()
            dist.all_reduce(t)
            t = t.tolist()
            self.count = int(t[0])
            self.total = t[1]

        @property
        def median(self):
            d = torch.tensor(list(self.deque))
            return d.median().item()

        @property
        def avg(self):
            d = torch.tensor(list(self.deque), dtype=torch.float32)
            return d.mean().item()

        @property
        def global_avg(self):
            return self.total / self.count

        @property
        def max(self):
            return max(self.deque)

        @property
        def value(self):
            return self.deque[-1]

        def __str__(self):
            return self.fmt.format(median=self.median, avg=self.avg, global_avg=self.global_avg, max=self.max,
                                   value=self.value)

    class MetricLogger(object):
        def __init__(self, delimiter="\t"):
            self.meters = defaultdict(SmoothedValue)
            self.delimiter = delimiter

        def update(self, **kwargs):
            for k, v in kwargs.items():
                if v is None:
                    continue
                if isinstance(v, torch.Tensor):
                    v = v.item()
                assert isinstance(v, (float, int))
                self.meters[k].update(v)

        def __getattr__(self, attr):
            if attr in self.meters:
                return self.meters[attr]
            if attr in self.__dict__:
                return self.__dict__[attr]
            raise AttributeError("'{}' object has no attribute '{}'".format(type(self).__name__, attr))

        def __str__(self):
            loss_str = []
            for name, meter in self.meters.items():
                loss_str.append("{}: {}".format(name, str(meter)))
            return self.delimiter.join(loss_str)

        def synchronize_between_processes(self):
            for meter in self.meters.values():
                meter.synchronize_between_processes()

        def add_meter(self, name, meter):
            self.meters[name] = meter

        def log_every(self, iterable, print_freq, header=None):
            i = 0
            if not header:
                header = ''
            start_time = time.time()
            end = time.time()
            iter_time = SmoothedValue(fmt='{avg:.4f}')
            data_time = SmoothedValue(fmt='{avg:.4f}')
            space_fmt = ':' + str(len(str(len(iterable)))) + 'd'
            log_msg = [header, '[{0' + space_fmt + '}/{1}]', 'eta: {eta}', '{meters}', 'time: {time}', 'data: {data}']
            if torch.cuda.is_available():
                log_msg.append('max mem: {memory:.0f}')
            log_msg = self.delimiter.join(log_msg)
            MB = 1024.0 * 1024.0
            for obj in iterable:
                data_time.update(time.time() - end)
                yield obj
                iter_time.update(time.time() - end)
                if i % print_freq == 0 or i == len(iterable) - 1:
                    eta_seconds = iter_time.global_avg * (len(iterable) - i)
                    eta_string = str(datetime.timedelta(seconds=int(eta_seconds)))
                    if torch.cuda.is_available():
                        print(log_msg.format(i, len(iterable), eta=eta_string, meters=str(self), time=str(iter_time),
                                             data=str(data_time), memory=torch.cuda.max_memory_allocated() / MB))
                    else:
                        print(log_msg.format(i, len(iterable), eta=eta_string, meters=str(self), time=str(iter_time),
                                             data=str(data_time)))
                i += 1
                end = time.time()
            total_time = time.time() - start_time
            total_time_str = str(datetime.timedelta(seconds=int(total_time)))
            print('{} Total time: {} ({:.4f} s / it)'.format(header, total_time_str, total_time / len(iterable)))

    def get_grad_norm_(parameters, norm_type=2.0):
        if isinstance(parameters, torch.Tensor):
            parameters = [parameters]
        parameters = [p for p in parameters if p.grad is not None]
        norm_type = float(norm_type)
        if len(parameters) == 0:
            return torch.tensor(0.)
        device = parameters[0].grad.device
        if norm_type == math.inf:
            total_norm = max(p.grad.detach().abs().max().to(device) for p in parameters)
        else:
            total_norm = torch.norm(torch.stack([torch.norm(p.grad.detach(), norm_type).to(device)
                                                 for p in parameters]), norm_type)
        return total_norm

    class NativeScalerWithGradNormCount:
        state_dict_key = "amp_scaler"

        def __init__(self):
            self._scaler = torch.cuda.amp.GradScaler(enabled=False)

        def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False, update_grad=True):
            self._scaler.scale(loss).backward(create_graph=create_graph)
            if update_grad:
                if clip_grad is not None:
                    assert parameters is not None
                    self._scaler.unscale_(optimizer)
                    norm = torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
                else:
                    self._scaler.unscale_(optimizer)
                    norm = get_grad_norm_(parameters)
                self._scaler.step(optimizer)
                self._scaler.update()
            else:
                norm = None
            return norm

        def state_dict(self):
            return self._scaler.state_dict()

        def load_state_dict(self, state_dict):
            self._scaler.load_state_dict(state_dict)

    def adjust_learning_rate(optimizer, epoch, lr, min_lr, warmup_epochs, epochs):
        if epoch < warmup_epochs:
            lr = lr * epoch / warmup_epochs
        else:
            lr = min_lr + (lr - min_lr) * 0.5 * (1. + math.cos(math.pi * (epoch - warmup_epochs) / (epochs - warmup_epochs)))
        for param_group in optimizer.param_groups:
            if "lr_scale" in param_group:
                param_group["lr"] = lr * param_group["lr_scale"]
            else:
                param_group["lr"] = lr
        return lr

    def get_layer_id_for_vit(name, num_layers):
        if name in ['cls_token', 'pos_embed']:
            return 0
        elif name.startswith('patch_embed'):
            return 0
        elif name.startswith('blocks'):
            return int(name.split('.')[1]) + 1
        else:
            return num_layers

    def param_groups_lrd(model, weight_decay=0.05, no_weight_decay_list=[], layer_decay=.75):
        param_group_names = {}
        param_groups = {}
        num_layers = len(model.blocks) + 1
        layer_scales = list(layer_decay ** (num_layers - i) for i in range(num_layers + 1))
        for n, p in model.named_parameters():
            if not p.requires_grad:
                continue
            if p.ndim == 1 or n in no_weight_decay_list:
                g_decay = "no_decay"
                this_decay = 0.
            else:
                g_decay = "decay"
                this_decay = weight_decay
            layer_id = get_layer_id_for_vit(n, num_layers)
            group_name = "layer_%d_%s" % (layer_id, g_decay)
            if group_name not in param_group_names:
                this_scale = layer_scales[layer_id]
                param_group_names[group_name] = {"lr_scale": this_scale, "weight_decay": this_decay, "params": []}
                param_groups[group_name] = {"lr_scale": this_scale, "weight_decay": this_decay, "params": []}
            param_group_names[group_name]["params"].append(n)
            param_groups[group_name]["params"].append(p)
        return list(param_groups.values())

    class Block(nn.Module):
        def __init__(self, dim, num_heads):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            # no bias: AdamW would normalise the key bias's gradient, rounding alone (softmax ignores it)
            self.attn = nn.MultiheadAttention(dim, num_heads, bias=False, batch_first=True)
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

        def forward(self, x):
            h = self.norm1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.norm2(x))

    class VisionTransformer(nn.Module):
        def __init__(self, img_size=8, patch_size=4, embed_dim=8, depth=1, num_heads=2, num_classes=10,
                     global_pool=True):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, embed_dim, patch_size, patch_size)
            num_patches = (img_size // patch_size) ** 2
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim), requires_grad=False)
            self.blocks = nn.ModuleList([Block(embed_dim, num_heads) for _ in range(depth)])
            self.global_pool = global_pool
            self.fc_norm = nn.LayerNorm(embed_dim, eps=1e-6)
            self.head = nn.Linear(embed_dim, num_classes)
            torch.nn.init.normal_(self.cls_token, std=.02)
            self.apply(self._init_weights)

        def _init_weights(self, mod):
            if isinstance(mod, nn.Linear):
                torch.nn.init.xavier_uniform_(mod.weight)
                if isinstance(mod, nn.Linear) and mod.bias is not None:
                    nn.init.constant_(mod.bias, 0)
            elif isinstance(mod, nn.LayerNorm):
                nn.init.constant_(mod.bias, 0)
                nn.init.constant_(mod.weight, 1.0)

        def no_weight_decay(self):
            return {'pos_embed', 'cls_token'}

        def forward(self, x):
            B = x.shape[0]
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            cls_tokens = self.cls_token.expand(B, -1, -1)
            x = torch.cat((cls_tokens, x), dim=1)
            x = x + self.pos_embed
            for blk in self.blocks:
                x = blk(x)
            if self.global_pool:
                x = x[:, 1:, :].mean(dim=1)
                outcome = self.fc_norm(x)
            return self.head(outcome)

    torch.manual_seed(0)
    model = VisionTransformer()
    init = load(m, model, state)
    param_groups = param_groups_lrd(model, 0.05, no_weight_decay_list=model.no_weight_decay(), layer_decay=0.75)
    optimizer = torch.optim.AdamW(param_groups, lr=1e-3)
    loss_scaler = NativeScalerWithGradNormCount()
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    rng = np.random.default_rng(0)
    loader = [(torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 2))) for _ in range(4)]
    metric_logger = MetricLogger(delimiter="  ")
    metric_logger.add_meter('lr', SmoothedValue(window_size=1, fmt='{value:.6f}'))
    header = 'Epoch: [{}]'.format(0)
    accum_iter = 2
    losses = []
    optimizer.zero_grad()
    for data_iter_step, (samples, targets) in enumerate(metric_logger.log_every(loader, 1, header)):
        if data_iter_step % accum_iter == 0:
            adjust_learning_rate(optimizer, data_iter_step / len(loader) + 0, 1e-3, 1e-6, 0.25, 1)
        with torch.cuda.amp.autocast(enabled=False):
            outputs = model(samples)
            loss = criterion(outputs, targets)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            raise AssertionError("Loss is {}, stopping training".format(loss_value))
        loss /= accum_iter
        norm = loss_scaler(loss, optimizer, clip_grad=None if data_iter_step < 2 else 0.5,
                           parameters=model.parameters(), create_graph=False,
                           update_grad=(data_iter_step + 1) % accum_iter == 0)
        if (data_iter_step + 1) % accum_iter == 0:
            optimizer.zero_grad()
            losses.append(float(norm))
        torch.cuda.synchronize() if torch.cuda.is_available() else None
        metric_logger.update(loss=loss_value)
        max_lr = 0.
        for group in optimizer.param_groups:
            max_lr = max(max_lr, group["lr"])
        metric_logger.update(lr=max_lr)
        losses.append(loss_value)
    metric_logger.synchronize_between_processes()
    print("Averaged stats:", metric_logger)
    losses += [metric_logger.loss.median, metric_logger.loss.avg, metric_logger.loss.global_avg, metric_logger.lr.value,
               get_world_size(), len(param_groups), loss_scaler.state_dict()["scale"] if loss_scaler.state_dict() else 1]
    return init, losses + summary(model.parameters())


def test_deit_mae_misc_and_engine():
    compare(deit_mae_engine)


# (c) timm's data/mixup.py and utils/model_ema.py in a train loop: Mixup in 'batch' mode (switching between mixup
# and cutmix by np.random; the cutmix box from rand_bbox with numpy integers as slice bounds, written in place by
# x[:, :, yl:yh, xl:xh] = x.flip(0)[...]; mixup by x.flip(0).mul_(1 - lam) and x.mul_(lam).add_(x_flipped)) and
# in 'elem' mode (per-sample lam, x[i][:, yl:yh, xl:xh] = x_orig[j][...] through a view of the batch, the lams as
# torch.tensor(lam_batch, dtype=x.dtype).unsqueeze(1)), one-hot targets with label smoothing by torch.full(...)
# .scatter_(1, x, on_value), SoftTargetCrossEntropy, ModelEmaV2 (a deepcopy of the model in eval mode, updated by
# ema_v.copy_(decay * e + (1 - decay) * m) over state_dict().values(), BatchNorm's int64 num_batches_tracked
# included) and ModelEmaV3's update (warmup decay, integer buffers copied, the floating ones by
# torch._foreach_lerp_); np.random.seed makes both runs draw the same boxes and lams
def timm_mixup_ema(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def one_hot(x, num_classes, on_value=1., off_value=0.):
        x = x.long().view(-1, 1)
        return torch.full((x.size()[0], num_classes), off_value, device=x.device).scatter_(1, x, on_value)

    def mixup_target(target, num_classes, lam=1., smoothing=0.0):
        off_value = smoothing / num_classes
        on_value = 1. - smoothing + off_value
        y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
        y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
        return y1 * lam + y2 * (1. - lam)

    def rand_bbox(img_shape, lam, margin=0., count=None):
        ratio = np.sqrt(1 - lam)
        img_h, img_w = img_shape[-2:]
        cut_h, cut_w = int(img_h * ratio), int(img_w * ratio)
        margin_y, margin_x = int(margin * cut_h), int(margin * cut_w)
        cy = np.random.randint(0 + margin_y, img_h - margin_y, size=count)
        cx = np.random.randint(0 + margin_x, img_w - margin_x, size=count)
        yl = np.clip(cy - cut_h // 2, 0, img_h)
        yh = np.clip(cy + cut_h // 2, 0, img_h)
        xl = np.clip(cx - cut_w // 2, 0, img_w)
        xh = np.clip(cx + cut_w // 2, 0, img_w)
        return yl, yh, xl, xh

    def cutmix_bbox_and_lam(img_shape, lam, correct_lam=True, count=None):
        yl, yu, xl, xu = rand_bbox(img_shape, lam, count=count)
        if correct_lam:
            bbox_area = (yu - yl) * (xu - xl)
            lam = 1. - bbox_area / float(img_shape[-2] * img_shape[-1])
        return (yl, yu, xl, xu), lam

    class Mixup:
        def __init__(self, mixup_alpha=1., cutmix_alpha=0., prob=1.0, switch_prob=0.5, mode='batch',
                     correct_lam=True, label_smoothing=0.1, num_classes=1000):
            self.mixup_alpha = mixup_alpha
            self.cutmix_alpha = cutmix_alpha
            self.mix_prob = prob
            self.switch_prob = switch_prob
            self.label_smoothing = label_smoothing
            self.num_classes = num_classes
            self.mode = mode
            self.correct_lam = correct_lam
            self.mixup_enabled = True

        def _params_per_elem(self, batch_size):
            lam = np.ones(batch_size, dtype=np.float32)
            use_cutmix = np.zeros(batch_size, dtype=bool)
            if self.mixup_enabled:
                use_cutmix = np.random.rand(batch_size) < self.switch_prob
                lam_mix = np.where(use_cutmix, np.random.beta(self.cutmix_alpha, self.cutmix_alpha, size=batch_size),
                                   np.random.beta(self.mixup_alpha, self.mixup_alpha, size=batch_size))
                lam = np.where(np.random.rand(batch_size) < self.mix_prob, lam_mix.astype(np.float32), lam)
            return lam, use_cutmix

        def _params_per_batch(self):
            lam = 1.
            use_cutmix = False
            if self.mixup_enabled and np.random.rand() < self.mix_prob:
                use_cutmix = np.random.rand() < self.switch_prob
                lam_mix = np.random.beta(self.cutmix_alpha, self.cutmix_alpha) if use_cutmix else \
                    np.random.beta(self.mixup_alpha, self.mixup_alpha)
                lam = float(lam_mix)
            return lam, use_cutmix

        def _mix_elem(self, x):
            batch_size = len(x)
            lam_batch, use_cutmix = self._params_per_elem(batch_size)
            x_orig = x.clone()
            for i in range(batch_size):
                j = batch_size - i - 1
                lam = lam_batch[i]
                if lam != 1.:
                    if use_cutmix[i]:
                        (yl, yh, xl, xh), lam = cutmix_bbox_and_lam(x[i].shape, lam, correct_lam=self.correct_lam)
                        x[i][:, yl:yh, xl:xh] = x_orig[j][:, yl:yh, xl:xh]
                        lam_batch[i] = lam
                    else:
                        x[i] = x[i] * lam + x_orig[j] * (1 - lam)
            return torch.tensor(lam_batch, device=x.device, dtype=x.dtype).unsqueeze(1)

        def _mix_batch(self, x):
            lam, use_cutmix = self._params_per_batch()
            if lam == 1.:
                return 1.
            if use_cutmix:
                (yl, yh, xl, xh), lam = cutmix_bbox_and_lam(x.shape, lam, correct_lam=self.correct_lam)
                x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
            else:
                x_flipped = x.flip(0).mul_(1. - lam)
                x.mul_(lam).add_(x_flipped)
            return lam

        def __call__(self, x, target):
            assert len(x) % 2 == 0, 'Batch size should be even when using this'
            lam = self._mix_elem(x) if self.mode == 'elem' else self._mix_batch(x)
            target = mixup_target(target, self.num_classes, lam, self.label_smoothing)
            return x, target

    class SoftTargetCrossEntropy(nn.Module):
        def forward(self, x, target):
            loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
            return loss.mean()

    class ModelEmaV2(nn.Module):
        def __init__(self, model, decay=0.9999, device=None):
            super(ModelEmaV2, self).__init__()
            self.module = copy.deepcopy(model)
            self.module.eval()
            self.decay = decay
            self.device = device
            if self.device is not None:
                self.module.to(device=device)

        def _update(self, model, update_fn):
            with torch.no_grad():
                for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                    if self.device is not None:
                        model_v = model_v.to(device=self.device)
                    ema_v.copy_(update_fn(ema_v, model_v))

        def update(self, model):
            self._update(model, update_fn=lambda e, m: self.decay * e + (1. - self.decay) * m)

        def forward(self, *args, **kwargs):
            return self.module(*args, **kwargs)

    class ModelEmaV3(nn.Module):
        def __init__(self, model, decay=0.9999, min_decay=0.0, use_warmup=False, warmup_gamma=1.0,
                     warmup_power=2 / 3, foreach=True):
            super().__init__()
            self.module = copy.deepcopy(model)
            self.module.eval()
            self.decay = decay
            self.min_decay = min_decay
            self.use_warmup = use_warmup
            self.warmup_gamma = warmup_gamma
            self.warmup_power = warmup_power
            self.foreach = foreach

        def get_decay(self, step=None):
            if step is None:
                return self.decay
            step = max(0, step - 1)
            if step <= 0:
                return 0.0
            if self.use_warmup:
                decay = 1 - (1 + step / self.warmup_gamma) ** -self.warmup_power
                decay = max(min(decay, self.decay), self.min_decay)
            else:
                decay = self.decay
            return decay

        @torch.no_grad()
        def update(self, model, step=None):
            decay = self.get_decay(step)
            ema_lerp_values = []
            model_lerp_values = []
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if ema_v.is_floating_point():
                    ema_lerp_values.append(ema_v)
                    model_lerp_values.append(model_v)
                else:
                    ema_v.copy_(model_v)
            if hasattr(torch, '_foreach_lerp_'):
                torch._foreach_lerp_(ema_lerp_values, model_lerp_values, weight=1. - decay)
            else:
                torch._foreach_mul_(ema_lerp_values, scalar=decay)
                torch._foreach_add_(ema_lerp_values, model_lerp_values, alpha=1. - decay)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))
    init = load(m, model, state)
    model_ema = ModelEmaV2(model, decay=0.9)
    model_ema3 = ModelEmaV3(model, decay=0.9, use_warmup=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    criterion = SoftTargetCrossEntropy()
    np.random.seed(0)
    rng = np.random.default_rng(0)
    losses = []
    for step, mode in enumerate(['batch', 'batch', 'elem']):
        mixup_fn = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, mode=mode, label_smoothing=0.1, num_classes=5)
        samples, targets = torch.tensor(normal(rng, 4, 3, 6, 6)), torch.tensor(rng.integers(0, 5, 4))
        samples, targets = mixup_fn(samples, targets)
        loss = criterion(model(samples), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model_ema.update(model)
        model_ema3.update(model, step=step + 2)
        losses += [loss.item(), float(targets.sum()), float(samples.sum())]
    with torch.no_grad():
        x = torch.tensor(normal(rng, 2, 3, 6, 6))
        losses += [float(model_ema(x).sum()), float(model_ema3.module(x).sum())]
    losses += [int(model_ema.module[1].num_batches_tracked), int(model_ema3.module[1].num_batches_tracked)]
    return init, losses + summary(model.parameters()) + summary(model_ema.parameters()) + summary(
        model_ema3.module.buffers())


def test_timm_mixup_and_model_ema():
    compare(timm_mixup_ema)


# (d) IBN-Net's (XingangPan/IBN-Net) ResNet blocks: IBN splits the channels by torch.split(x, self.half, 1),
# instance-normalises the first part (affine) and batch-normalises the rest, joined by torch.cat; Bottleneck_IBN
# with ibn='a' (IBN as bn1) and ibn='b' (an affine InstanceNorm2d after the residual sum, before the ReLU); one
# variant's InstanceNorm2d tracks running statistics (track_running_stats=True, as some domain-generalisation
# forks set it), so that eval mode normalises with them; SGD with weight decay, then an eval pass
def ibn_net(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class IBN(nn.Module):
        def __init__(self, planes, ratio=0.5, track=False):
            super(IBN, self).__init__()
            self.half = int(planes * ratio)
            self.IN = nn.InstanceNorm2d(self.half, affine=True, track_running_stats=track)
            self.BN = nn.BatchNorm2d(planes - self.half)

        def forward(self, x):
            split = torch.split(x, self.half, 1)
            out1 = self.IN(split[0].contiguous())
            out2 = self.BN(split[1].contiguous())
            out = torch.cat((out1, out2), 1)
            return out

    class Bottleneck_IBN(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, ibn=None, stride=1, downsample=None, track=False):
            super(Bottleneck_IBN, self).__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=False)
            if ibn == 'a':
                self.bn1 = IBN(planes, track=track)
            else:
                self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, planes * self.expansion, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * self.expansion)
            self.IN = nn.InstanceNorm2d(planes * 4, affine=True) if ibn == 'b' else None
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            residual = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            if self.downsample is not None:
                residual = self.downsample(x)
            out += residual
            if self.IN is not None:
                out = self.IN(out)
            out = self.relu(out)
            return out

    class Net(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
            self.bn1 = nn.InstanceNorm2d(8, affine=True)
            self.relu = nn.ReLU(inplace=True)
            down = nn.Sequential(nn.Conv2d(8, 16, 1, 2, bias=False), nn.BatchNorm2d(16))
            self.layer1 = nn.Sequential(Bottleneck_IBN(8, 4, 'a', 2, down, track=True),
                                        Bottleneck_IBN(16, 4, 'b'), Bottleneck_IBN(16, 4, 'a'))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16, num_classes)
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    n = mod.kernel_size[0] * mod.kernel_size[1] * mod.out_channels
                    mod.weight.data.normal_(0, math.sqrt(2. / n))
                elif isinstance(mod, nn.BatchNorm2d) or isinstance(mod, nn.InstanceNorm2d):
                    if mod.weight is not None:
                        mod.weight.data.fill_(1)
                        mod.bias.data.zero_()

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.avgpool(self.layer1(x))
            return self.fc(x.view(x.size(0), -1))

    torch.manual_seed(0)
    model = Net()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(2):
        x, y = torch.tensor(normal(rng, 4, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 4))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append(F.cross_entropy(model(torch.tensor(normal(rng, 2, 3, 8, 8))), torch.tensor([1, 2])).item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_ibn_net():
    compare(ibn_net)


# (e) a torchrun-style DDP training script (pytorch/examples' ddp tutorial and the ImageNet reference's
# utilities) in a process group of one (gloo): the rank and world size from torch.distributed,
# DistributedSampler with set_epoch, nn.parallel.DistributedDataParallel(model, device_ids=None), gradient
# accumulation with model.no_sync() on every other micro-batch, the logged loss averaged by dist.all_reduce and
# dist.ReduceOp.SUM over the world size, dist.barrier(), and rank 0's checkpoint of ddp_model.state_dict() (keys
# "module.") loaded into a bare model after consume_prefix_in_state_dict_if_present
def ddp_script(m, state=None):
    torch, nn, data = m.torch, m.nn, m.data
    dist = sub(m, "distributed")
    DDP = sub(m, "nn.parallel").DistributedDataParallel
    DistributedSampler = sub(m, "utils.data.distributed").DistributedSampler
    consume_prefix_in_state_dict_if_present = sub(m, "nn.modules.utils").consume_prefix_in_state_dict_if_present

    class ToyModel(nn.Module):
        def __init__(self):
            super(ToyModel, self).__init__()
            self.net1 = nn.Linear(10, 10)
            self.relu = nn.ReLU()
            self.net2 = nn.Linear(10, 5)

        def forward(self, x):
            return self.net2(self.relu(self.net1(x)))

    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = ToyModel()
    init = load(m, model, state)
    ddp_model = DDP(model, device_ids=None)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    dataset = data.TensorDataset(torch.tensor(normal(rng, 8, 10)), torch.tensor(normal(rng, 8, 5)))
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False)
    loader = data.DataLoader(dataset, batch_size=2, sampler=sampler)
    accum_steps = 2
    losses = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for i, (inputs, labels) in enumerate(loader):
            sync = (i + 1) % accum_steps == 0
            context = ddp_model.no_sync() if not sync else contextlib.nullcontext()
            with context:
                loss = loss_fn(ddp_model(inputs), labels) / accum_steps
                loss.backward()
            if sync:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            reduced = loss.detach().clone()
            dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
            reduced /= world_size
            losses.append(reduced.item())
    dist.barrier()
    buffer = io.BytesIO()
    if rank == 0:
        torch.save({"model": ddp_model.state_dict(), "epoch": 2}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer, map_location="cpu")
    assert all(k.startswith("module.") for k in checkpoint["model"])
    consume_prefix_in_state_dict_if_present(checkpoint["model"], "module.")
    restored = ToyModel()
    restored.load_state_dict(checkpoint["model"])
    return init, losses + summary(restored.parameters())


def test_ddp_script_in_a_group_of_one(monkeypatch):
    import os
    import socket
    import torch
    if os.path.exists("/sys/class/net/lo"):
        monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        compare(ddp_script)
    finally:
        torch.distributed.destroy_process_group()
