"""Training scripts in the styles people publish (pytorch/examples' MNIST, the CIFAR-10 tutorial,
kuangliu's main.py, mixup, a small ViT, AMP, EMA, an LSTM over MNIST rows, random_split, forward
hooks), ported to tnet by their imports alone. Each script is written once against the names a
script imports (torch, nn, F, optim, data) and run with `import tnet as torch`; where cheap, the
same code run with torch from the same initial weights and data gives the same losses. Random data
of dataset shapes stands in for the datasets; widths are tiny and runs 1-2 steps."""
import copy
import math

import numpy as np
import pytest

import tnet
from helpers import batches, compare, imports, load


# (a) pytorch/examples' mnist/main.py
def mnist_example(m, state=None, dropout=True):
    torch, nn, F, optim, StepLR = m.torch, m.nn, m.F, m.optim, m.lr_scheduler.StepLR

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.conv2 = nn.Conv2d(4, 8, 3, 1)
            self.dropout1 = nn.Dropout(0.25 if dropout else 0.0)
            self.dropout2 = nn.Dropout(0.5 if dropout else 0.0)
            self.fc1 = nn.Linear(8 * 4 * 4, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(x)
            x = self.conv2(x)
            x = F.relu(x)
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.dropout2(x)
            x = self.fc2(x)
            output = F.log_softmax(x, dim=1)
            return output

    def train(model, device, train_loader, optimizer, epoch, losses):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if batch_idx % 10 == 0:
                print('Train Epoch: {} [{}/{}]\tLoss: {:.6f}'.format(epoch, batch_idx * len(data),
                                                                     len(train_loader.dataset), loss.item()))

    def test(model, device, test_loader):
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction='sum').item()
                pred = output.argmax(dim=1, keepdim=True)
                correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        print('Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)'.format(
            test_loss, correct, len(test_loader.dataset), 100. * correct / len(test_loader.dataset)))
        return test_loss

    torch.manual_seed(1)
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    (x, y), = batches(0, 1, (3, 1, 12, 12))
    dataset = m.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    train_loader = m.data.DataLoader(dataset, batch_size=3, shuffle=False)
    test_loader = m.data.DataLoader(dataset, batch_size=3)
    model = Net().to(device)
    init = load(m, model, state)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    for epoch in range(1, 2):
        train(model, device, train_loader, optimizer, epoch, losses)
        losses.append(test(model, device, test_loader))
        scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.7)
    return init, losses


def test_mnist_example():
    mnist_example(imports("tnet"))  # with dropout
    compare(mnist_example, dropout=False)


# (b) the official CIFAR-10 tutorial (Training a Classifier)
def cifar_tutorial(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 8, 5)
            self.fc1 = nn.Linear(8 * 5 * 5, 24)
            self.fc2 = nn.Linear(24, 16)
            self.fc3 = nn.Linear(16, 10)

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
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    trainloader = [(torch.tensor(x), torch.tensor(y)) for x, y in batches(1, 1, (2, 3, 32, 32))]
    losses = []
    for epoch in range(1):
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            inputs, labels = data
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            losses.append(loss.item())
            if i % 2000 == 1999:
                print(f'[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 2000:.3f}')
                running_loss = 0.0
    correct = 0
    total = 0
    with torch.no_grad():
        for data in trainloader:
            images, labels = data
            outputs = net(images)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    print(f'Accuracy of the network on the test images: {100 * correct // total} %')
    classes = ('plane', 'car', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck')
    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}
    confusion = torch.zeros(10, 10, dtype=torch.long)
    with torch.no_grad():
        for data in trainloader:
            images, labels = data
            outputs = net(images)
            _, predictions = torch.max(outputs, 1)
            for label, prediction in zip(labels, predictions):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1
                confusion[label.long(), prediction.long()] += 1
    assert sum(total_pred.values()) == total == confusion.sum().item()
    assert sum(correct_pred.values()) == correct == confusion.diag().sum().item()
    return init, losses + [correct / total]


def test_cifar_tutorial():
    compare(cifar_tutorial)


# (c) kuangliu/pytorch-cifar's main.py: CosineAnnealingLR, best-accuracy checkpoint, --resume
def kuangliu_main(m, state=None, ckpt_dir=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, in_planes, planes, stride=1):
            super(BasicBlock, self).__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != self.expansion * planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(self.expansion * planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.shortcut(x)
            out = F.relu(out)
            return out

    class ResNet(nn.Module):
        def __init__(self, block, num_blocks, num_classes=10):
            super(ResNet, self).__init__()
            self.in_planes = 4
            self.conv1 = nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.layer1 = self._make_layer(block, 4, num_blocks[0], stride=1)
            self.layer2 = self._make_layer(block, 8, num_blocks[1], stride=2)
            self.linear = nn.Linear(8 * block.expansion, num_classes)

        def _make_layer(self, block, planes, num_blocks, stride):
            strides = [stride] + [1] * (num_blocks - 1)
            layers = []
            for stride in strides:
                layers.append(block(self.in_planes, planes, stride))
                self.in_planes = planes * block.expansion
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out

    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    best_acc = 0
    start_epoch = 0
    net = ResNet(BasicBlock, [1, 1])
    net = net.to(device)
    init = load(m, net, state)
    if device == 'cuda':
        net = torch.nn.DataParallel(net)
        torch.backends.cudnn.benchmark = True
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=200)
    trainloader = [(torch.tensor(x), torch.tensor(y)) for x, y in batches(2, 1, (4, 3, 8, 8))]
    losses = []

    def train(epoch):
        net.train()
        train_loss = correct = total = 0
        for batch_idx, (inputs, targets) in enumerate(trainloader):
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            train_loss += loss.item()
            _, predicted = outputs.max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
            losses.append(loss.item())

    def test(epoch):
        nonlocal best_acc
        net.eval()
        test_loss = correct = total = 0
        with torch.no_grad():
            for batch_idx, (inputs, targets) in enumerate(trainloader):
                inputs, targets = inputs.to(device), targets.to(device)
                outputs = net(inputs)
                test_loss += criterion(outputs, targets).item()
                _, predicted = outputs.max(1)
                total += targets.size(0)
                correct += predicted.eq(targets).sum().item()
        losses.append(test_loss)
        acc = 100. * correct / total
        if acc >= best_acc:
            print('Saving..')
            state = {'net': net.state_dict(), 'acc': acc, 'epoch': epoch}
            torch.save(state, f'{ckpt_dir}/ckpt.pth')
            best_acc = acc

    for epoch in range(start_epoch, start_epoch + 1):
        train(epoch)
        test(epoch)
        scheduler.step()
    # --resume
    print('==> Resuming from checkpoint..')
    checkpoint = torch.load(f'{ckpt_dir}/ckpt.pth')
    net.load_state_dict(checkpoint['net'])
    best_acc = checkpoint['acc']
    start_epoch = checkpoint['epoch'] + 1
    assert start_epoch == 1 and scheduler.get_last_lr()[0] == pytest.approx(0.1 * (1 + math.cos(math.pi / 200)) / 2)
    return init, losses


def test_kuangliu_main(tmp_path):
    compare(kuangliu_main, ckpt_dir=tmp_path)


# (d) a ResNet trained with mixup and label smoothing
def mixup_label_smoothing(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim

    def conv_bn(ci, co, stride=1):
        return nn.Sequential(nn.Conv2d(ci, co, 3, stride, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU(inplace=True))

    class Residual(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.res = nn.Sequential(conv_bn(c, c), conv_bn(c, c))

        def forward(self, x):
            return x + self.res(x)

    model = nn.Sequential(conv_bn(3, 4), Residual(4), conv_bn(4, 8, stride=2), nn.AdaptiveAvgPool2d((1, 1)),
                          nn.Flatten(), nn.Linear(8, 10))
    init = load(m, model, state)

    def mixup_data(x, y, lam):
        batch_size = x.size()[0]
        index = torch.arange(batch_size - 1, -1, -1)  # torch.randperm(batch_size) in the original
        mixed_x = lam * x + (1 - lam) * x[index, :]
        y_a, y_b = y, y[index]
        return mixed_x, y_a, y_b

    def mixup_criterion(criterion, pred, y_a, y_b, lam):
        return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    lam = float(np.random.default_rng(0).beta(1.0, 1.0))
    losses = []
    for x, y in batches(3, 1, (4, 3, 8, 8)):
        inputs, targets = torch.from_numpy(x), torch.from_numpy(y)
        inputs, targets_a, targets_b = mixup_data(inputs, targets, lam)
        outputs = model(inputs)
        loss = mixup_criterion(criterion, outputs, targets_a, targets_b, lam)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses


def test_mixup_label_smoothing():
    compare(mixup_label_smoothing)


# (e) a small ViT: patch embedding, cls token, position embedding, handwritten attention and nn.MultiheadAttention
def small_vit(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class Attention(nn.Module):
        def __init__(self, dim, heads=2):
            super().__init__()
            self.heads = heads
            self.scale = (dim // heads) ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=False)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = torch.einsum('bhid,bhjd->bhij', q, k) * self.scale
            attn = attn.softmax(dim=-1)
            out = torch.einsum('bhij,bhjd->bhid', attn, v)
            out = out.transpose(1, 2).reshape(B, N, C)
            return self.proj(out)

    class Block(nn.Module):
        def __init__(self, dim, mha):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim)
            self.attn = nn.MultiheadAttention(dim, 2, batch_first=True) if mha else Attention(dim)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Dropout(0.0), nn.Linear(dim * 2, dim))

        def forward(self, x):
            h = self.norm1(x)
            if isinstance(self.attn, nn.MultiheadAttention):
                h, _ = self.attn(h, h, h, need_weights=False)
            else:
                h = self.attn(h)
            x = x + h
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self, image_size=8, patch_size=4, dim=8, num_classes=10):
            super().__init__()
            num_patches = (image_size // patch_size) ** 2
            self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, dim) * .02)
            self.blocks = nn.ModuleList([Block(dim, mha=False), Block(dim, mha=True)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, num_classes)
            nn.init.trunc_normal_(self.cls_token, std=.02)

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
            x = torch.cat((cls_tokens, x), dim=1)
            x = x + self.pos_embed
            for blk in self.blocks:
                x = blk(x)
            x = self.norm(x)
            return self.head(x[:, 0])

    model = ViT()
    init = load(m, model, state)
    optimizer = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    losses = []
    for x, y in batches(4, 1, (2, 3, 8, 8)):
        loss = F.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    losses.append(model.head.weight.sum().item())  # after AdamW's step
    return init, losses


def drop_path(torch, x, drop_prob: float = 0., training: bool = False):
    """DeiT's stochastic depth, as written there."""
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # work with diff dim tensors, not just 2D ConvNets
    random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
    random_tensor.floor_()  # binarize
    output = x.div(keep_prob) * random_tensor
    return output


def test_small_vit():
    compare(small_vit)
    x = tnet.ones(64, 3, 2)
    kept = drop_path(tnet, x, 0.5, training=True)[:, 0, 0].numpy()
    assert set(kept.tolist()) == {0.0, 2.0} and drop_path(tnet, x, 0.5) is x


# (f) mixed precision: torch.cuda.amp.autocast, GradScaler, clip_grad_norm_ after scaler.unscale_
def amp_training(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 10))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    use_amp = True
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    losses = []
    for x, y in batches(5, 2, (4, 3, 8, 8)):
        images, target = torch.tensor(x), torch.tensor(y)
        with torch.cuda.amp.autocast(enabled=use_amp):
            output = model(images)
            loss = F.cross_entropy(output, target)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
        losses += [loss.item(), float(grad_norm)]
    return init, losses


def test_amp_training():
    # torch's CUDA autocast does nothing on the CPU; tnet's CPU autocast computes in bfloat16 or float16,
    # so the losses are only finite here, not compared
    _, losses = amp_training(imports("tnet"))
    assert all(math.isfinite(v) for v in losses), losses
    with tnet.autocast(device_type="cpu", dtype=tnet.bfloat16):
        assert "dtype=torch.bfloat16" in repr(tnet.nn.Linear(2, 2)(tnet.ones(1, 2)))  # print(output) under autocast


# (g) an exponential moving average of the weights (copy.deepcopy, mul_().add_(), lerp_)
def ema_training(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class ModelEMA:
        def __init__(self, model, decay=0.9):
            self.ema = copy.deepcopy(model)
            self.ema.eval()
            self.decay = decay
            for p in self.ema.parameters():
                p.requires_grad_(False)

        @torch.no_grad()
        def update(self, model):
            msd = model.state_dict()
            for k, v in self.ema.state_dict().items():
                if v.dtype.is_floating_point:
                    v *= self.decay
                    v += (1 - self.decay) * msd[k].detach()

        def update_params(self, model):
            with torch.no_grad():
                for ema_p, p in zip(self.ema.parameters(), model.parameters()):
                    ema_p.data.mul_(self.decay).add_(p.data, alpha=1 - self.decay)
                for ema_b, b in zip(self.ema.buffers(), model.buffers()):
                    if ema_b.dtype.is_floating_point:
                        ema_b.lerp_(b, 1 - self.decay)
                    else:
                        ema_b.copy_(b)

    model = nn.Sequential(nn.Linear(12, 8), nn.BatchNorm1d(8), nn.SiLU(inplace=True), nn.Linear(8, 10))
    init = load(m, model, state)
    ema = ModelEMA(model)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for x, y in batches(6, 2, (5, 12)):
        x, y = torch.tensor(x), torch.tensor(y)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema.update_params(model)
        with torch.no_grad():
            losses += [loss.item(), F.cross_entropy(ema.ema(x), y).item()]
    return init, losses


def test_ema_training():
    compare(ema_training)


# (h) an LSTM reading MNIST images row by row
def lstm_rows(m, state=None):
    torch, nn = m.torch, m.nn

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, num_layers, num_classes):
            super(RNN, self).__init__()
            self.hidden_size = hidden_size
            self.num_layers = num_layers
            self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
            self.fc = nn.Linear(hidden_size, num_classes)

        def forward(self, x):
            h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(x.device)
            c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(x.device)
            out, _ = self.lstm(x, (h0, c0))
            out = self.fc(out[:, -1, :])
            return out

    sequence_length, input_size = 4, 4
    model = RNN(input_size, 8, 2, 10)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for images, labels in batches(7, 1, (3, 1, 4, 4)):
        images = torch.tensor(images).reshape(-1, sequence_length, input_size)
        outputs = model(images)
        loss = criterion(outputs, torch.tensor(labels))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        losses.append(criterion(model(images), torch.tensor(labels)).item())
    return init, losses


def test_lstm_rows():
    compare(lstm_rows)


# (i) a DataLoader over a TensorDataset split with random_split and a seeded torch.Generator
def random_split_loader(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    rng = np.random.default_rng(8)
    X = torch.from_numpy(rng.standard_normal((10, 1, 4, 4)).astype(np.float32))
    Y = torch.from_numpy(rng.integers(0, 10, 10))
    g = torch.Generator().manual_seed(0)
    perm = torch.randperm(X.size(0), generator=g)
    X = X[perm] + 0.01 * torch.randn(X.shape, generator=g)
    Y = Y[perm]
    dataset = data.TensorDataset(X, Y)
    train_set, val_set = data.random_split(dataset, [8, 2], generator=torch.Generator().manual_seed(42))
    train_loader = data.DataLoader(train_set, batch_size=4, shuffle=False, drop_last=True, num_workers=0)
    val_loader = data.DataLoader(val_set, batch_size=4)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 10))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for xb, yb in train_loader:
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        val_loss = sum(F.cross_entropy(model(xb), yb, reduction="sum").item() for xb, yb in val_loader)
    assert len(train_set) == 8 and len(val_set) == 2 and len(train_loader) == 2
    # class-balanced sampling: weights 1 / (count of the sample's class)
    labels = [int(dataset[i][1]) for i in train_set.indices]
    counts = np.bincount(labels, minlength=10)
    weights = [1.0 / counts[c] for c in labels]
    sampler = data.WeightedRandomSampler(weights, num_samples=len(weights), replacement=True)
    balanced = data.DataLoader(train_set, batch_size=4, sampler=sampler)
    assert [tuple(xb.shape) for xb, _ in balanced] == [(4, 1, 4, 4), (4, 1, 4, 4)]
    return init, losses + [val_loss / len(val_set), *train_set.indices]


def test_random_split_loader():
    # torch's and tnet's generators draw different permutations; each is fixed by its seed
    init, losses = random_split_loader(imports("tnet"))
    assert random_split_loader(imports("tnet"))[1][-8:] == losses[-8:] and all(math.isfinite(v) for v in losses)


# (j) a training loop that collects activations through register_forward_hook, and Grad-CAM's gradients through
# register_full_backward_hook
def forward_hooks(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
    init = load(m, model, state)
    activations = {}

    def get_activation(name):
        def hook(model, input, output):
            activations[name] = output.detach()
        return hook

    gradients = {}

    def save_gradient(module, grad_input, grad_output):  # Grad-CAM's backward hook
        gradients['relu_out'], gradients['relu_in'] = grad_output[0].detach(), grad_input[0].detach()

    handles = [model[1].register_full_backward_hook(save_gradient),
               model[0].register_forward_hook(get_activation('conv')),
               model[1].register_forward_hook(get_activation('relu')),
               model[4].register_forward_hook(get_activation('fc'))]
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in batches(9, 2, (3, 1, 6, 6)):
        loss = F.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), activations['relu'].mean().item(),
                   (activations['relu'] > 0).type(torch.FloatTensor).mean().item(),
                   activations['conv'].min().item(), activations['fc'].sum().item(),
                   nn.utils.parameters_to_vector(model.parameters()).norm().item(),
                   gradients['relu_out'].abs().sum().item(), gradients['relu_in'].abs().sum().item()]
        weights = gradients['relu_out'].mean(dim=(2, 3), keepdim=True)
        cam = F.relu((weights * activations['relu']).sum(dim=1))
        losses.append(cam.sum().item())
    for h in handles:
        h.remove()
    activations.clear()
    model(torch.tensor(x))
    assert not activations
    return init, losses


def test_forward_hooks():
    compare(forward_hooks)
