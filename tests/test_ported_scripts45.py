"""The official tutorials' and examples' beginner and intermediate idioms, written from memory and ported by their
imports alone, as test_ported_scripts.py: the 60-minute blitz's CIFAR-10 Net (torch.max(outputs, 1), `(predicted ==
labels).sum().item()`, per-class accuracy by class_correct lists indexed with label tensors and by a correct_pred
dict, the state_dict saved to PATH and loaded into a fresh Net); the transfer-learning tutorial's train_model (phases,
torch.set_grad_enabled, running_corrects, StepLR, the best weights by copy.deepcopy) as a frozen feature extractor and
then fine-tuned with requires_grad_(True) and id()-filtered param groups; the ImageNet example's AverageMeter,
ProgressMeter, top-k accuracy, adjust_learning_rate, save_checkpoint and a resume through map_location; confusion
matrices by bincount, index_put_(accumulate=True) and a loop, with precision, recall, F1 and top-2 accuracy; label
smoothing by fill_ and scatter_, mixup by np.random.beta and CutMix's rand_bbox slicing with numpy integers; Bjarten's
EarlyStopping beside ReduceLROnPlateau stepped with a float and a 0-d tensor; gradient accumulation with
clip_grad_norm_'s returned norm and clip_grad_value_ under the old torch.cuda.amp API turned off; torchvision's init
loops over self.modules() with zero_init_residual and the reproducibility preamble (cudnn flags,
use_deterministic_algorithms); the data-loading tutorial's Dataset with transform classes, random_split by fractions,
Subset, a seeded shuffling DataLoader, BatchSampler and a collate_fn; a DataParallel checkpoint stripped of
'module.' for `@torch.inference_mode()` and `@torch.no_grad()` evaluation with flip test-time augmentation; a
resumed schedule (the optimizer's state_dict with its initial_lr, MultiStepLR and CosineAnnealingLR by last_epoch,
ReduceLROnPlateau's state_dict, AdamW's no-weight-decay group, a warmup in SequentialLR). Each
runs in tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, metrics and the
weights summed into a few numbers agree. Numpy draws what a script draws where the libraries' generators would
differ (permutations, random_split's sizes only); shapes are tiny and runs take one to six steps.

Fixed in tnet on the way: nothing; every script here ran in tnet as in torch at its first run.

Found and left as they are: the transfer-learning tutorial's `running_corrects.double()` reads `.float()` (tnet has
no float64, as its README says); a torch tensor (a torchvision transform's output) passed to a tnet.nn.functional op
(F.relu, F.pad, F.cross_entropy's target) raises tnet's TypeError, where a module or an element-wise op takes it as
a constant copy (README); an inference tensor updated in place outside inference mode is allowed in tnet, where torch
raises; torch.cuda.amp.autocast() with its default enabled=True runs 16-bit on tnet's CPU interpreter, where torch
on a machine without CUDA disables it with a warning (the scripts here pass enabled=use_amp, off)."""
import copy
import os
import shutil
import tempfile
from collections import OrderedDict

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) the 60-minute blitz's CIFAR-10 classifier: its Net (two conv-pool stages, torch.flatten(x, 1), three linear
# layers) trained through `for i, data in enumerate(trainloader, 0)` with a running loss printed every few mini-batches,
# saved to PATH and loaded into a fresh Net, a batch read by `next(iter(testloader))`, the accuracy by
# torch.max(outputs, 1) and `(predicted == labels).sum().item()`, and the per-class accuracy twice: the old
# tutorial's class_correct lists indexed by a label tensor, the new one's correct_pred dict
def blitz_cifar(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    rng = np.random.default_rng(0)
    classes = ('plane', 'car', 'bird', 'cat')

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(4, 6, 3)
            self.fc1 = nn.Linear(6 * 1 * 1, 8)
            self.fc2 = nn.Linear(8, 6)
            self.fc3 = nn.Linear(6, 4)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = torch.flatten(x, 1)  # flatten all dimensions except batch
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    net = Net()
    init = load(m, net, state)
    trainset = data.TensorDataset(torch.from_numpy(normal(rng, 8, 3, 10, 10)), torch.from_numpy(rng.integers(0, 4, 8)))
    testset = data.TensorDataset(torch.from_numpy(normal(rng, 8, 3, 10, 10)), torch.from_numpy(rng.integers(0, 4, 8)))
    trainloader = data.DataLoader(trainset, batch_size=4, shuffle=False, num_workers=0)
    testloader = data.DataLoader(testset, batch_size=4, shuffle=False, num_workers=0)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    losses = []
    for epoch in range(1):
        running_loss = 0.0
        for i, data_ in enumerate(trainloader, 0):
            inputs, labels = data_
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            losses.append(loss.item())
            if i % 2 == 1:
                losses.append(running_loss / 2)
                running_loss = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        PATH = os.path.join(tmp, 'cifar_net.pth')
        torch.save(net.state_dict(), PATH)
        net = Net()
        net.load_state_dict(torch.load(PATH, weights_only=True))
    dataiter = iter(testloader)
    images, labels = next(dataiter)
    outputs = net(images)
    _, predicted = torch.max(outputs, 1)
    shown = [classes[predicted[j]] for j in range(4)]
    correct = 0
    total = 0
    with torch.no_grad():
        for data_ in testloader:
            images, labels = data_
            outputs = net(images)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    class_correct = list(0. for i in range(4))
    class_total = list(0. for i in range(4))
    with torch.no_grad():
        for data_ in testloader:
            images, labels = data_
            outputs = net(images)
            _, predicted = torch.max(outputs, 1)
            c = (predicted == labels).squeeze()
            for i in range(4):
                label = labels[i]
                class_correct[label] += c[i].item()
                class_total[label] += 1
    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}
    with torch.no_grad():
        for data_ in testloader:
            images, labels = data_
            outputs = net(images)
            _, predictions = torch.max(outputs, 1)
            for label, prediction in zip(labels, predictions):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1
    assert [correct_pred[c] for c in classes] == class_correct and [total_pred[c] for c in classes] == class_total
    return init, losses + [100 * correct // total, len(shown)] + class_correct + class_total + summary(net.parameters())


def test_blitz_cifar():
    compare(blitz_cifar)


# (b) the transfer-learning tutorial's train_model: phases 'train' and 'val' each with model.train() or model.eval(),
# `with torch.set_grad_enabled(phase == 'train')`, running_corrects by torch.sum(preds == labels.data), a StepLR
# stepped once an epoch, the best weights kept by copy.deepcopy(model.state_dict()) and loaded at the end; first as a
# fixed feature extractor (every parameter's requires_grad = False, a new fc whose parameters alone go to the
# optimizer), then fine-tuned with the backbone unfrozen by requires_grad_(True) and a smaller lr for it through the
# classic id()-filter of param groups. The tutorial's `running_corrects.double()` reads .float() (tnet has no float64)
def transfer_learning(m, state=None):
    torch, nn, optim, data = m.torch, m.nn, m.optim, m.data
    lr_scheduler = m.lr_scheduler
    rng = np.random.default_rng(1)

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU(inplace=True)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(4, 10)

        def forward(self, x):
            x = self.avgpool(self.relu(self.bn1(self.conv1(x))))
            return self.fc(torch.flatten(x, 1))

    model_conv = Backbone()
    num_ftrs = model_conv.fc.in_features
    for param in model_conv.parameters():
        param.requires_grad = False
    model_conv.fc = nn.Linear(num_ftrs, 3)
    init = load(m, model_conv, state)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    model_conv = model_conv.to(device)
    sets = {x: data.TensorDataset(torch.from_numpy(normal(rng, 6, 3, 6, 6)), torch.from_numpy(rng.integers(0, 3, 6)))
            for x in ['train', 'val']}
    dataloaders = {x: data.DataLoader(sets[x], batch_size=3, shuffle=False) for x in ['train', 'val']}
    dataset_sizes = {x: len(sets[x]) for x in ['train', 'val']}
    criterion = nn.CrossEntropyLoss()
    record = []

    def train_model(model, criterion, optimizer, scheduler, num_epochs=2):
        best_model_wts = copy.deepcopy(model.state_dict())
        best_acc = 0.0
        for epoch in range(num_epochs):
            for phase in ['train', 'val']:
                if phase == 'train':
                    model.train()
                else:
                    model.eval()
                running_loss = 0.0
                running_corrects = 0
                for inputs, labels in dataloaders[phase]:
                    inputs = inputs.to(device)
                    labels = labels.to(device)
                    optimizer.zero_grad()
                    with torch.set_grad_enabled(phase == 'train'):
                        outputs = model(inputs)
                        _, preds = torch.max(outputs, 1)
                        loss = criterion(outputs, labels)
                        if phase == 'train':
                            loss.backward()
                            optimizer.step()
                    running_loss += loss.item() * inputs.size(0)
                    running_corrects += torch.sum(preds == labels.data)
                if phase == 'train':
                    scheduler.step()
                epoch_loss = running_loss / dataset_sizes[phase]
                epoch_acc = running_corrects.float() / dataset_sizes[phase]
                record.extend([epoch_loss, epoch_acc.item()])
                if phase == 'val' and epoch_acc > best_acc:
                    best_acc = epoch_acc
                    best_model_wts = copy.deepcopy(model.state_dict())
        model.load_state_dict(best_model_wts)
        return model

    optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.05, momentum=0.9)
    exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=1, gamma=0.1)
    frozen = [p.detach().clone() for p in model_conv.conv1.parameters()]
    model_conv = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler)
    assert all((p - q).abs().max().item() == 0 for p, q in zip(model_conv.conv1.parameters(), frozen))
    assert model_conv.conv1.weight.grad is None
    model_conv.requires_grad_(True)
    ignored_params = list(map(id, model_conv.fc.parameters()))
    base_params = filter(lambda p: id(p) not in ignored_params, model_conv.parameters())
    optimizer_ft = optim.SGD([{'params': base_params}, {'params': model_conv.fc.parameters(), 'lr': 0.05}],
                             lr=0.01, momentum=0.9)
    model_conv = train_model(model_conv, criterion, optimizer_ft, lr_scheduler.StepLR(optimizer_ft, 1, 0.5), 1)
    record += [g['lr'] for g in optimizer_ft.param_groups]
    return init, record + summary(model_conv.parameters()) + summary(model_conv.buffers())


def test_transfer_learning():
    compare(transfer_learning)


# (c) the ImageNet example's main.py bookkeeping: AverageMeter and ProgressMeter (fmt strings such as ':6.2f'),
# accuracy(output, target, topk=(1, 3)) by topk(...).t() and eq(target.view(1, -1).expand_as(pred)), validate under
# `with torch.no_grad()`, adjust_learning_rate by hand (lr * 0.1 ** (epoch // 1)) through every param group,
# save_checkpoint with shutil.copyfile to model_best.pth.tar, and a resume by torch.load(..., map_location=loc) that
# restores the epoch, best_acc1, the model and the optimizer before training on
def imagenet_main(m, state=None):
    torch, nn, optim, data = m.torch, m.nn, m.optim, m.data
    rng = np.random.default_rng(2)

    class AverageMeter(object):
        """Computes and stores the average and current value"""
        def __init__(self, name, fmt=':f'):
            self.name = name
            self.fmt = fmt
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

        def __str__(self):
            fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
            return fmtstr.format(**self.__dict__)

    class ProgressMeter(object):
        def __init__(self, num_batches, meters, prefix=""):
            self.batch_fmtstr = self._get_batch_fmtstr(num_batches)
            self.meters = meters
            self.prefix = prefix

        def display(self, batch):
            entries = [self.prefix + self.batch_fmtstr.format(batch)]
            entries += [str(meter) for meter in self.meters]
            return '\t'.join(entries)

        def _get_batch_fmtstr(self, num_batches):
            num_digits = len(str(num_batches // 1))
            fmt = '{:' + str(num_digits) + 'd}'
            return '[' + fmt + '/' + fmt.format(num_batches) + ']'

    def accuracy(output, target, topk=(1,)):
        """Computes the accuracy over the k top predictions for the specified values of k"""
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

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    base_lr = 0.1
    optimizer = optim.SGD(model.parameters(), base_lr, momentum=0.9, weight_decay=1e-4)
    train_loader = data.DataLoader(data.TensorDataset(torch.from_numpy(normal(rng, 6, 3, 6, 6)),
                                                      torch.from_numpy(rng.integers(0, 5, 6))), batch_size=3)
    val_loader = data.DataLoader(data.TensorDataset(torch.from_numpy(normal(rng, 4, 3, 6, 6)),
                                                    torch.from_numpy(rng.integers(0, 5, 4))), batch_size=2)
    lines = []

    def adjust_learning_rate(optimizer, epoch):
        lr = base_lr * (0.1 ** (epoch // 1))
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr

    def train(train_loader, model, criterion, optimizer, epoch):
        losses = AverageMeter('Loss', ':.4e')
        top1 = AverageMeter('Acc@1', ':6.2f')
        top3 = AverageMeter('Acc@3', ':6.2f')
        progress = ProgressMeter(len(train_loader), [losses, top1, top3], prefix="Epoch: [{}]".format(epoch))
        model.train()
        for i, (images, target) in enumerate(train_loader):
            output = model(images)
            loss = criterion(output, target)
            acc1, acc3 = accuracy(output, target, topk=(1, 3))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0], images.size(0))
            top3.update(acc3[0], images.size(0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            lines.append(progress.display(i + 1))
        return losses.avg

    def validate(val_loader, model, criterion):
        losses = AverageMeter('Loss', ':.4e')
        top1 = AverageMeter('Acc@1', ':6.2f')
        model.eval()
        with torch.no_grad():
            for i, (images, target) in enumerate(val_loader):
                output = model(images)
                loss = criterion(output, target)
                acc1, = accuracy(output, target, topk=(1,))
                losses.update(loss.item(), images.size(0))
                top1.update(acc1[0], images.size(0))
        lines.append(' * Acc@1 {top1.avg:.3f}'.format(top1=top1))
        return top1.avg, losses.avg

    def save_checkpoint(state_, is_best, filename):
        torch.save(state_, filename)
        if is_best:
            shutil.copyfile(filename, os.path.join(os.path.dirname(filename), 'model_best.pth.tar'))

    record = []
    best_acc1 = 0
    with tempfile.TemporaryDirectory() as tmp:
        filename = os.path.join(tmp, 'checkpoint.pth.tar')
        for epoch in range(0, 2):
            adjust_learning_rate(optimizer, epoch)
            record.append(train(train_loader, model, criterion, optimizer, epoch))
            acc1, val_loss = validate(val_loader, model, criterion)
            record += [float(acc1), val_loss]
            is_best = acc1 > best_acc1
            best_acc1 = max(acc1, best_acc1)
            save_checkpoint({'epoch': epoch + 1, 'arch': 'tiny', 'state_dict': model.state_dict(),
                             'best_acc1': best_acc1, 'optimizer': optimizer.state_dict()}, is_best, filename)
        # a second run resumes
        model2 = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))
        optimizer2 = optim.SGD(model2.parameters(), base_lr, momentum=0.9, weight_decay=1e-4)
        loc = 'cuda:{}'.format(0) if torch.cuda.is_available() else 'cpu'
        checkpoint = torch.load(filename, map_location=loc, weights_only=False)
        start_epoch = checkpoint['epoch']
        best_acc1 = checkpoint['best_acc1']
        model2.load_state_dict(checkpoint['state_dict'])
        optimizer2.load_state_dict(checkpoint['optimizer'])
        assert os.path.exists(os.path.join(tmp, 'model_best.pth.tar'))
    adjust_learning_rate(optimizer2, start_epoch)
    record.append(train(train_loader, model2, criterion, optimizer2, start_epoch))
    assert lines[0].startswith('Epoch: [0][1/2]\tLoss ') and 'Acc@3' in lines[0]
    return init, record + [float(best_acc1), start_epoch] + summary(model2.parameters())


def test_imagenet_main():
    compare(imagenet_main)


# (d) evaluation metrics as scripts write them: a confusion matrix three ways (torch.bincount of
# `num_classes * target + pred`, index_put_ with accumulate=True, and the forum loop
# `confusion_matrix[t.long(), p.long()] += 1`), per-class precision, recall and F1 from its diagonal
# (a class never predicted gives 0/0, cleaned by torch.nan_to_num), the balanced accuracy, torch.trace over the sum,
# and a top-2 accuracy by `torch.topk(...).indices` and `(pred == y[:, None]).any(dim=1)`, on a trained model's
# predictions collected by torch.cat
def confusion_metrics(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    rng = np.random.default_rng(3)
    nb_classes = 4
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, nb_classes))
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=0.05)
    X = torch.from_numpy(normal(rng, 12, 5))
    Y = torch.from_numpy(rng.integers(0, nb_classes, 12))
    losses = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X), Y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    loader = data.DataLoader(data.TensorDataset(X, Y), batch_size=4)
    all_preds, all_targets, all_logits = [], [], []
    model.eval()
    with torch.no_grad():
        for inputs, classes in loader:
            outputs = model(inputs)
            _, preds = torch.max(outputs, 1)
            all_preds.append(preds)
            all_targets.append(classes)
            all_logits.append(outputs)
    preds, targets, logits = torch.cat(all_preds), torch.cat(all_targets), torch.cat(all_logits)
    cm1 = torch.bincount(nb_classes * targets + preds, minlength=nb_classes ** 2).reshape(nb_classes, nb_classes)
    cm2 = torch.zeros(nb_classes, nb_classes, dtype=torch.long)
    cm2.index_put_((targets, preds), torch.ones_like(targets), accumulate=True)
    confusion_matrix = torch.zeros(nb_classes, nb_classes)
    for t, p in zip(targets.view(-1), preds.view(-1)):
        confusion_matrix[t.long(), p.long()] += 1
    assert (cm1 == cm2).all() and torch.equal(cm1.float(), confusion_matrix)
    tp = confusion_matrix.diag()
    precision = torch.nan_to_num(tp / confusion_matrix.sum(0))
    recall = tp / confusion_matrix.sum(1).clamp(min=1)
    f1 = torch.nan_to_num(2 * precision * recall / (precision + recall))
    balanced = recall.mean().item()
    acc = (torch.trace(confusion_matrix) / confusion_matrix.sum()).item()
    top2 = torch.topk(logits, 2, dim=1).indices
    top2_acc = (top2 == targets[:, None]).any(dim=1).float().mean().item()
    return init, (losses + cm1.flatten().tolist() + precision.tolist() + recall.tolist() + f1.tolist()
                  + [balanced, acc, top2_acc])


def test_confusion_metrics():
    compare(confusion_metrics)


# (e) regularising targets by hand in a CIFAR loop: a LabelSmoothingLoss module (true_dist by fill_ then scatter_ of
# the confidence at target.data.unsqueeze(1), under torch.no_grad()) checked against CrossEntropyLoss(label_smoothing=)
# over the same smoothing spread, and a KL-divergence version by nn.KLDivLoss(reduction='batchmean'); mixup by
# np.random.beta and clovaai's CutMix rand_bbox (np.random.uniform centres, np.clip bounds: numpy integers slice the
# batch, the box pasted from a permuted batch, lam corrected by the box's area). The permutations are numpy's
# (np.random.permutation into torch.from_numpy; the sources' torch.randperm draws other numbers in each library)
def smoothing_mixup_cutmix(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    np.random.seed(5)
    rng = np.random.default_rng(5)

    class LabelSmoothingLoss(nn.Module):
        def __init__(self, classes, smoothing=0.0, dim=-1):
            super(LabelSmoothingLoss, self).__init__()
            self.confidence = 1.0 - smoothing
            self.smoothing = smoothing
            self.cls = classes
            self.dim = dim

        def forward(self, pred, target):
            pred = pred.log_softmax(dim=self.dim)
            with torch.no_grad():
                true_dist = torch.zeros_like(pred)
                true_dist.fill_(self.smoothing / (self.cls - 1))
                true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
            return torch.mean(torch.sum(-true_dist * pred, dim=self.dim))

    def rand_bbox(size, lam):
        W = size[2]
        H = size[3]
        cut_rat = np.sqrt(1. - lam)
        cut_w = int(W * cut_rat)
        cut_h = int(H * cut_rat)
        cx = np.random.randint(W)
        cy = np.random.randint(H)
        bbx1 = np.clip(cx - cut_w // 2, 0, W)
        bby1 = np.clip(cy - cut_h // 2, 0, H)
        bbx2 = np.clip(cx + cut_w // 2, 0, W)
        bby2 = np.clip(cy + cut_h // 2, 0, H)
        return bbx1, bby1, bbx2, bby2

    def mixup_data(x, y, alpha=1.0):
        lam = np.random.beta(alpha, alpha) if alpha > 0 else 1
        index = torch.from_numpy(np.random.permutation(x.size()[0]))
        mixed_x = lam * x + (1 - lam) * x[index, :]
        return mixed_x, y, y[index], lam

    def mixup_criterion(criterion, pred, y_a, y_b, lam):
        return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(4, 5))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    smooth = LabelSmoothingLoss(5, smoothing=0.2)
    kl = nn.KLDivLoss(reduction='batchmean')
    record = []
    for it in range(3):
        inputs = torch.from_numpy(normal(rng, 4, 3, 6, 6))
        targets = torch.from_numpy(rng.integers(0, 5, 4))
        if it == 0:  # label smoothing three ways: the module, torch's own (its eps spread over all classes) and KL
            outputs = model(inputs)
            loss = smooth(outputs, targets)
            reference = nn.CrossEntropyLoss(label_smoothing=0.2 * 5 / 4)(outputs, targets)
            soft = torch.full_like(outputs, 0.2 / 4).scatter_(1, targets.unsqueeze(1), 0.8)
            record += [reference.item(), kl(F.log_softmax(outputs, dim=1), soft).item()]
        elif it == 1:
            inputs, targets_a, targets_b, lam = mixup_data(inputs, targets, 1.0)
            outputs = model(inputs)
            loss = mixup_criterion(nn.CrossEntropyLoss(), outputs, targets_a, targets_b, lam)
            _, predicted = torch.max(outputs.data, 1)
            correct = (lam * predicted.eq(targets_a.data).cpu().sum().float()
                       + (1 - lam) * predicted.eq(targets_b.data).cpu().sum().float())
            record.append(correct.item())
        else:
            lam = np.random.beta(1.0, 1.0)
            rand_index = torch.from_numpy(np.random.permutation(inputs.size()[0]))
            target_a = targets
            target_b = targets[rand_index]
            bbx1, bby1, bbx2, bby2 = rand_bbox(inputs.size(), lam)
            inputs[:, :, bbx1:bbx2, bby1:bby2] = inputs[rand_index, :, bbx1:bbx2, bby1:bby2]
            lam = 1 - ((bbx2 - bbx1) * (bby2 - bby1) / (inputs.size()[-1] * inputs.size()[-2]))
            outputs = model(inputs)
            loss = nn.CrossEntropyLoss()(outputs, target_a) * lam + nn.CrossEntropyLoss()(outputs, target_b) * (1. - lam)
            record.append(float(lam))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    return init, record + summary(model.parameters())


def test_smoothing_mixup_cutmix():
    compare(smoothing_mixup_cutmix)


# (f) validation-driven training: Bjarten's early-stopping-pytorch EarlyStopping (val_loss_min = np.inf, a counter,
# delta, torch.save of the best state_dict to its path, early_stop set once patience runs out), ReduceLROnPlateau
# stepped with the validation loss (a float, then a 0-d tensor) whose reductions are read from param_groups and
# get_last_lr(), the best checkpoint loaded back when the loop stops
def early_stopping_plateau(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    lr_scheduler = m.lr_scheduler
    rng = np.random.default_rng(6)

    class EarlyStopping:
        """Early stops the training if validation loss doesn't improve after a given patience."""
        def __init__(self, patience=7, verbose=False, delta=0, path='checkpoint.pt', trace_func=print):
            self.patience = patience
            self.verbose = verbose
            self.counter = 0
            self.best_val_loss = None
            self.early_stop = False
            self.val_loss_min = np.inf
            self.delta = delta
            self.path = path
            self.trace_func = trace_func

        def __call__(self, val_loss, model):
            if np.isnan(val_loss):
                self.trace_func("Validation loss is NaN. Ignoring this epoch.")
                return
            if self.best_val_loss is None:
                self.best_val_loss = val_loss
                self.save_checkpoint(val_loss, model)
            elif val_loss < self.best_val_loss - self.delta:
                self.best_val_loss = val_loss
                self.save_checkpoint(val_loss, model)
                self.counter = 0
            else:
                self.counter += 1
                if self.counter >= self.patience:
                    self.early_stop = True

        def save_checkpoint(self, val_loss, model):
            torch.save(model.state_dict(), self.path)
            self.val_loss_min = val_loss

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.0), nn.Linear(8, 3))
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=0.3)
    scheduler = lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=0, threshold=1e-3)
    x_train, y_train = torch.from_numpy(normal(rng, 8, 4)), torch.from_numpy(rng.integers(0, 3, 8))
    x_val, y_val = torch.from_numpy(normal(rng, 6, 4)), torch.from_numpy(rng.integers(0, 3, 6))
    record = []
    with tempfile.TemporaryDirectory() as tmp:
        early_stopping = EarlyStopping(patience=2, verbose=True, path=os.path.join(tmp, 'checkpoint.pt'))
        for epoch in range(1, 7):
            model.train()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_train), y_train)
            loss.backward()
            optimizer.step()
            model.eval()
            with torch.no_grad():
                valid_loss = F.cross_entropy(model(x_val), y_val)
            scheduler.step(valid_loss.item() if epoch % 2 else valid_loss)
            record += [loss.item(), valid_loss.item(), optimizer.param_groups[0]['lr'], scheduler.get_last_lr()[0]]
            early_stopping(valid_loss.item(), model)
            if early_stopping.early_stop:
                break
        model.load_state_dict(torch.load(early_stopping.path))
    with torch.no_grad():
        best = F.cross_entropy(model(x_val), y_val).item()
    assert abs(best - early_stopping.val_loss_min) < 1e-6
    return init, record + [epoch, best, early_stopping.counter] + summary(model.parameters())


def test_early_stopping_plateau():
    compare(early_stopping_plateau)


# (g) gradient accumulation with clipping as the forum answers write it: the loss divided by accumulation_steps,
# `if (i + 1) % accumulation_steps == 0` stepping and zero_grad(set_to_none=True), the old torch.cuda.amp API kept in
# the loop but off (GradScaler(enabled=use_amp), autocast(enabled=use_amp)), scaler.unscale_ before
# clip_grad_norm_, whose returned total norm is logged, checked by torch.isfinite and compared with a norm taken by
# hand over p.grad.detach().data.norm(2); clip_grad_value_ on a second group
def accumulate_and_clip(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(7)
    use_amp = False
    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.GroupNorm(2, 4), nn.SiLU(), nn.Flatten(), nn.Linear(4 * 2 * 2, 3))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    accumulation_steps = 2
    record = []
    optimizer.zero_grad(set_to_none=True)
    for i in range(4):
        inputs = torch.from_numpy(normal(rng, 2, 2, 4, 4)) * (1 + 3 * i)
        labels = torch.from_numpy(rng.integers(0, 3, 2))
        with torch.cuda.amp.autocast(enabled=use_amp):
            outputs = model(inputs)
            loss = F.cross_entropy(outputs, labels)
            loss = loss / accumulation_steps
        scaler.scale(loss).backward()
        record.append(loss.item())
        if (i + 1) % accumulation_steps == 0:
            scaler.unscale_(optimizer)
            total_norm = 0.0
            for p in model.parameters():
                if p.grad is not None:
                    param_norm = p.grad.detach().data.norm(2)
                    total_norm += param_norm.item() ** 2
            total_norm = total_norm ** 0.5
            grad_norm = nn.utils.clip_grad_norm_(model[:2].parameters(), max_norm=1.0)
            assert torch.isfinite(grad_norm)
            nn.utils.clip_grad_value_(model[4].parameters(), clip_value=0.05)
            record += [total_norm, grad_norm.item()]
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            assert model[0].weight.grad is None
    return init, record + summary(model.parameters())


def test_accumulate_and_clip():
    compare(accumulate_and_clip)


# (h) torchvision's weight-init loops copied into a CIFAR ResNet: `for m in self.modules()` with isinstance checks
# (kaiming_normal_ fan_out/relu on convolutions, constant_ 1 and 0 on BatchNorm2d and GroupNorm, normal_(0, 0.01) on
# Linear), zero_init_residual's constant_(m.bn2.weight, 0) per BasicBlock, the older `m.weight.data.normal_(0,
# math.sqrt(2. / n))` with n from kernel_size and out_channels beside `m.bias.data.zero_()`, and the reproducibility
# preamble (torch.manual_seed, torch.cuda.manual_seed_all, np.random.seed, cudnn.deterministic/benchmark,
# use_deterministic_algorithms); a zero-initialised residual branch passes its input through at the first forward
def init_loops(m, state=None):
    import math
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    import importlib
    cudnn = importlib.import_module(torch.__name__ + '.backends.cudnn')
    seed = 0
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    np.random.seed(seed)
    cudnn.deterministic = True
    cudnn.benchmark = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    rng = np.random.default_rng(8)

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
        def __init__(self, num_classes=4, zero_init_residual=True, old_style=False):
            super(ResNet, self).__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = BasicBlock(4, 4)
            down = nn.Sequential(nn.Conv2d(4, 6, 1, 2, bias=False), nn.GroupNorm(2, 6))
            self.layer2 = BasicBlock(4, 6, 2, down)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(6 * BasicBlock.expansion, num_classes)
            for m_ in self.modules():
                if isinstance(m_, nn.Conv2d):
                    if old_style:
                        n = m_.kernel_size[0] * m_.kernel_size[1] * m_.out_channels
                        m_.weight.data.normal_(0, math.sqrt(2. / n))
                        if m_.bias is not None:
                            m_.bias.data.zero_()
                    else:
                        nn.init.kaiming_normal_(m_.weight, mode='fan_out', nonlinearity='relu')
                elif isinstance(m_, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.constant_(m_.weight, 1)
                    nn.init.constant_(m_.bias, 0)
                elif isinstance(m_, nn.Linear):
                    nn.init.normal_(m_.weight, 0, 0.01)
                    nn.init.constant_(m_.bias, 0)
            if zero_init_residual:
                for m_ in self.modules():
                    if isinstance(m_, BasicBlock):
                        nn.init.constant_(m_.bn2.weight, 0)

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.layer2(self.layer1(x))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    model = ResNet()
    old = ResNet(zero_init_residual=False, old_style=True)
    init = {'model': load(m, model, None if state is None else state['model']),
            'old': load(m, old, None if state is None else state['old'])}
    if state is None:
        w = init['model']['conv1.weight']
        assert abs(w.std() - math.sqrt(2.0 / (4 * 9))) < 0.2 and (init['model']['layer1.bn2.weight'] == 0).all()
        assert (init['model']['fc.bias'] == 0).all() and (init['old']['layer1.bn2.weight'] == 1).all()
    x = torch.from_numpy(normal(rng, 2, 3, 6, 6))
    y = torch.from_numpy(rng.integers(0, 4, 2))
    with torch.no_grad():
        stem = model.relu(model.bn1(model.conv1(x)))
        assert (model.layer1(stem) - stem).abs().max().item() == 0.0
    record = []
    for net in (model, old):
        optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        for _ in range(2):
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
            record.append(loss.item())
        record += summary(net.parameters())
    torch.use_deterministic_algorithms(False)
    return init, record


def test_init_loops():
    compare(init_loops)


# (i) the data-loading tutorial's shapes on a small array dataset: a Dataset subclass (`if torch.is_tensor(idx): idx =
# idx.tolist()`, a dict sample with a transform callable class, torch.from_numpy in its ToTensor), random_split by
# fractions under a seeded generator (sizes and a partition of the indices checked; each library draws its own),
# Subset over fixed indices, a DataLoader with shuffle=True and a seeded generator whose epoch sums the per-sample
# losses before one step (an order-free full-batch step), drop_last, a BatchSampler over a SequentialSampler, and a
# collate_fn that stacks the dict samples by hand
def data_pipeline(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    rng = np.random.default_rng(9)
    images = normal(rng, 12, 2, 4, 4)
    labels = rng.integers(0, 3, 12)

    class ToTensor(object):
        """Convert ndarrays in sample to Tensors."""
        def __call__(self, sample):
            image, label = sample['image'], sample['label']
            return {'image': torch.from_numpy(image), 'label': torch.tensor(label)}

    class Normalize(object):
        def __init__(self, mean, std):
            self.mean, self.std = mean, std

        def __call__(self, sample):
            sample['image'] = (sample['image'] - self.mean) / self.std
            return sample

    class Compose(object):
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, sample):
            for t in self.transforms:
                sample = t(sample)
            return sample

    class ArrayDataset(data.Dataset):
        def __init__(self, images, labels, transform=None):
            self.images = images
            self.labels = labels
            self.transform = transform

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, idx):
            if torch.is_tensor(idx):
                idx = idx.tolist()
            sample = {'image': self.images[idx], 'label': self.labels[idx]}
            if self.transform:
                sample = self.transform(sample)
            return sample

    dataset = ArrayDataset(images, labels, transform=Compose([ToTensor(), Normalize(0.1, 2.0)]))
    train_size = int(0.75 * len(dataset))
    parts = data.random_split(dataset, [0.75, 0.25], generator=torch.Generator().manual_seed(42))
    assert [len(p) for p in parts] == [train_size, len(dataset) - train_size]
    assert sorted(list(parts[0].indices) + list(parts[1].indices)) == list(range(12))
    train_set = data.Subset(dataset, list(range(8)))
    val_set = data.Subset(dataset, [8, 9, 10, 11])
    assert int(train_set[torch.tensor(3)]['label']) == labels[3]

    def collate(batch):
        return torch.stack([b['image'] for b in batch]), torch.stack([b['label'] for b in batch])

    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16, 3))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.2)
    g = torch.Generator()
    g.manual_seed(0)
    train_loader = data.DataLoader(train_set, batch_size=4, shuffle=True, drop_last=True, generator=g,
                                   collate_fn=collate)
    val_loader = data.DataLoader(val_set, batch_sampler=data.BatchSampler(data.SequentialSampler(val_set), 3, False),
                                 collate_fn=collate)
    assert len(train_loader) == 2 and len(val_loader) == 2
    record = []
    for epoch in range(2):
        model.train()
        optimizer.zero_grad()
        total = 0.0
        for inputs, targets in train_loader:
            loss = F.cross_entropy(model(inputs), targets, reduction='sum') / len(train_set)
            loss.backward()
            total += loss.item()
        optimizer.step()
        model.eval()
        val_loss, correct = 0.0, 0
        with torch.no_grad():
            for inputs, targets in val_loader:
                output = model(inputs)
                val_loss += F.cross_entropy(output, targets, reduction='sum').item()
                pred = output.argmax(dim=1, keepdim=True)
                correct += pred.eq(targets.view_as(pred)).sum().item()
        record += [total, val_loss / len(val_loader.dataset), correct]
    default = next(iter(data.DataLoader(train_set, batch_size=3)))
    assert sorted(default.keys()) == ['image', 'label'] and tuple(default['image'].shape) == (3, 2, 4, 4)
    return init, record + summary(model.parameters())


def test_data_pipeline():
    compare(data_pipeline)


# (j) deployment-style evaluation: a model trained under nn.DataParallel (keys prefixed 'module.'), saved in a
# checkpoint dict and loaded into a bare model by map_location=lambda storage, loc: storage with the prefix stripped
# through an OrderedDict (`k[7:]`), a strict=False load reporting a head's missing keys; predictions by
# model.eval() under `@torch.inference_mode()` and `@torch.no_grad()` decorators with test-time augmentation by
# torch.flip, softmax probabilities taken to numpy, and an inference tensor cloned before it joins autograd. The
# convolution before BatchNorm has no bias: Adam would normalise its gradient, which is rounding alone
def dataparallel_inference(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(10)

    def make():
        return nn.Sequential(OrderedDict([('conv', nn.Conv2d(3, 4, 3, padding=1, bias=False)), ('bn', nn.BatchNorm2d(4)),
                                          ('act', nn.ReLU()), ('pool', nn.AdaptiveAvgPool2d(1)),
                                          ('flat', nn.Flatten()), ('fc', nn.Linear(4, 3))]))

    net = make()
    init = load(m, net, state)
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    model = nn.DataParallel(net).to(device)
    optimizer = optim.Adam(model.parameters(), lr=0.05)
    x = torch.from_numpy(normal(rng, 4, 3, 5, 5))
    y = torch.from_numpy(rng.integers(0, 3, 4))
    record = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'model_best.pth')
        torch.save({'state_dict': model.state_dict(), 'epoch': 2}, path)
        checkpoint = torch.load(path, map_location=lambda storage, loc: storage)
    assert all(k.startswith('module.') for k in checkpoint['state_dict'])
    new_state_dict = OrderedDict()
    for k, v in checkpoint['state_dict'].items():
        name = k[7:]  # remove `module.`
        new_state_dict[name] = v
    deployed = make()
    deployed.load_state_dict(new_state_dict)
    partial = make()
    result = partial.load_state_dict({k: v for k, v in new_state_dict.items() if not k.startswith('fc.')}, strict=False)
    assert sorted(result.missing_keys) == ['fc.bias', 'fc.weight'] and result.unexpected_keys == []
    deployed.eval()

    @torch.inference_mode()
    def predict(model, images):
        logits = model(images) + model(torch.flip(images, dims=[3]))
        return F.softmax(logits / 2, dim=1)

    @torch.no_grad()
    def evaluate(model, images, targets):
        outputs = model(images)
        return F.cross_entropy(outputs, targets).item(), (outputs.argmax(1) == targets).float().mean().item()

    probs = predict(deployed, x)
    assert not probs.requires_grad and probs.is_inference()
    record += probs.cpu().numpy().ravel().tolist() + list(evaluate(deployed, x, y))
    # pseudo-labels from the inference output drive a step of the deployed model
    deployed.train()
    optimizer = optim.SGD(deployed.parameters(), lr=0.1)
    soft = probs.clone()
    loss = -(soft * F.log_softmax(deployed(x), dim=1)).sum(1).mean()
    loss.backward()
    optimizer.step()
    record.append(loss.item())
    return init, record + summary(deployed.parameters()) + summary(deployed.buffers())


def test_dataparallel_inference():
    compare(dataparallel_inference)


# (k) a resumed schedule as CIFAR repositories write it: the optimizer's state_dict (holding each group's
# initial_lr) loaded into a fresh optimizer, then `MultiStepLR(..., last_epoch=start_epoch - 1)` and
# `CosineAnnealingLR(..., last_epoch=...)` built on it, a warmup by LinearLR inside SequentialLR, a no-weight-decay
# group for biases and norm weights (`p.ndim <= 1`) under AdamW, one group's lr scaled by hand after loading, and
# ReduceLROnPlateau's own state_dict carried over; the resumed run's losses and lrs continue the uninterrupted one's
def resumed_schedules(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    lr_scheduler = m.lr_scheduler
    rng = np.random.default_rng(11)
    model = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.GELU(), nn.Linear(6, 3))
    init = load(m, model, state)
    x = torch.from_numpy(normal(rng, 6, 4))
    y = torch.from_numpy(rng.integers(0, 3, 6))

    def param_groups(model, weight_decay=0.05):
        decay, no_decay = [], []
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            (no_decay if p.ndim <= 1 or name.endswith('.bias') else decay).append(p)
        return [{'params': decay, 'weight_decay': weight_decay}, {'params': no_decay, 'weight_decay': 0.0}]

    def make_schedulers(optimizer, last_epoch=-1):
        multistep = lr_scheduler.MultiStepLR(optimizer, milestones=[2, 4], gamma=0.5, last_epoch=last_epoch)
        return multistep

    def epoch_step(optimizer):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    record = []
    optimizer = optim.AdamW(param_groups(model), lr=0.02, betas=(0.9, 0.99))
    scheduler = make_schedulers(optimizer)
    plateau = lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.9)
    start_epoch = 3
    for epoch in range(start_epoch):
        record.append(epoch_step(optimizer))
        scheduler.step()
        plateau.step(record[-1] + 1.0)  # no improvement after the first: a reduction each epoch
        record += [g['lr'] for g in optimizer.param_groups]
    checkpoint = {'optimizer': optimizer.state_dict(), 'plateau': plateau.state_dict(), 'epoch': start_epoch,
                  'model': copy.deepcopy(model.state_dict())}
    # a new process: the optimizer from its state_dict, the schedule from last_epoch
    model.load_state_dict(checkpoint['model'])
    optimizer = optim.AdamW(param_groups(model), lr=0.02, betas=(0.9, 0.99))
    optimizer.load_state_dict(checkpoint['optimizer'])
    assert [g['initial_lr'] for g in optimizer.param_groups] == [0.02, 0.02]
    scheduler = make_schedulers(optimizer, last_epoch=checkpoint['epoch'] - 1)
    plateau = lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.9)
    plateau.load_state_dict(checkpoint['plateau'])
    optimizer.param_groups[1]['lr'] *= 0.5
    for epoch in range(checkpoint['epoch'], 6):
        record.append(epoch_step(optimizer))
        scheduler.step()
        plateau.step(record[-1] + 1.0)
        record += [g['lr'] for g in optimizer.param_groups] + [plateau.num_bad_epochs]
    # a warmup then cosine on a fresh optimizer resumed two epochs in
    opt2 = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    warm = lr_scheduler.SequentialLR(opt2, [lr_scheduler.LinearLR(opt2, start_factor=0.25, total_iters=2),
                                            lr_scheduler.CosineAnnealingLR(opt2, T_max=4)], milestones=[2])
    for _ in range(4):
        record.append(epoch_step(opt2))
        warm.step()
        record.append(opt2.param_groups[0]['lr'])
    resumed = lr_scheduler.CosineAnnealingLR(opt2, T_max=4, last_epoch=2)
    resumed.step()
    record += resumed.get_last_lr()
    return init, record + summary(model.parameters())


def test_resumed_schedules():
    compare(resumed_schedules)
