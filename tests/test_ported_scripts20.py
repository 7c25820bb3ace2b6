"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports
alone, as test_ported_scripts.py: the tutorials "What is torch.nn really?" (from-scratch logistic regression to
WrappedDataLoader), "Learning PyTorch with Examples" (hand-written gradients, LegendrePolynomial3, DynamicNet) and
"Writing Custom Datasets, DataLoaders and Transforms" (dict samples, callable transforms, batch_size=None); torchvision's
tensor colour transforms (adjust_hue's HSV round trip, equalize, posterize, solarize, autocontrast, sharpness, blur)
and a TenCrop average; kuangliu's DPN, ShuffleNet and DLA (whose Tree calls self.__getattr__); SHI-Labs' Compact
Convolutional Transformer; PoolFormer, ResMLP and gMLP; DEC's clustering; DETR's Hungarian matcher and set criterion;
PyTorch-GAN's ACGAN (nn.Softmax() without dim, BatchNorm2d(c, 0.8)); Weight Standardization, FRN, EvoNorm and
GhostBatchNorm; DeepInversion; Mish, FReLU, ACON and DY-ReLU; torchmetrics' ROC, AUROC, precision-recall curve
(reversed()) and multiclass metrics; loss-landscape's filter-normalised directions (torch.Tensor(d).type(type(w))) and
evolution strategies; the Annotated Transformer's training utilities (LabelSmoothing, NoamOpt, greedy decoding);
noisy-label losses (SCE, GCE, NCE+MAE, bootstrapping, forward correction, ELR); the chatbot tutorial's Luong
attention seq2seq; and PyTorch Geometric's GCN, GAT and SAGE layers written out with scatter_add_ and scatter_reduce_. Each runs in tnet, then in torch from tnet's initial weights (state_dict through numpy), and the
losses, and the weights summed into a few numbers, agree. Numpy (or Python's random, seeded alike on both sides)
draws what a script draws; shapes are tiny and runs 1-2 steps, few launches: the interpreter pays for each (PNASNet's
7x7 depthwise cells were the slowest piece of the file and are left out). Where Adam would normalise a gradient that is rounding alone (an
attention's key bias, which softmax ignores), that bias is frozen, as the script says."""
import copy
import itertools
import math
import random

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) the tutorial "What is torch.nn really?" step by step: MNIST logistic regression from scratch (weights / sqrt(784),
# requires_grad_(), log_softmax as x - x.exp().sum(-1).log().unsqueeze(-1), nll by input[range(n), target], updates
# under torch.no_grad() by -= and grad.zero_()), then Mnist_Logistic's nn.Parameters updated by hand after
# model.zero_grad(), nn.Linear with optim.SGD, TensorDataset and DataLoader (the training loader one shuffled batch:
# its mean loss does not depend on the order), fit() with loss_batch and zip(*[...]) of the validation losses weighted
# by np.multiply, and the CNN on a Lambda preprocess through WrappedDataLoader with AdaptiveAvgPool2d(1)
def nn_really(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    TensorDataset, DataLoader = m.data.TensorDataset, m.data.DataLoader
    rng = np.random.default_rng(0)
    x_train, y_train, x_valid, y_valid = map(torch.tensor, (rng.random((8, 64), dtype=np.float32),
                                                            rng.integers(0, 10, 8), rng.random((6, 64), dtype=np.float32),
                                                            rng.integers(0, 10, 6)))
    n, c = x_train.shape
    losses = [float(n), float(c), x_train.min().item(), y_train.max().item()]

    weights = torch.tensor(normal(rng, 64, 10)) / math.sqrt(64)
    weights.requires_grad_()
    bias = torch.zeros(10, requires_grad=True)

    def log_softmax(x):
        return x - x.exp().sum(-1).log().unsqueeze(-1)

    def model(xb):
        return log_softmax(xb @ weights + bias)

    def nll(input, target):
        return -input[range(target.shape[0]), target].mean()

    loss_func = nll

    def accuracy(out, yb):
        preds = torch.argmax(out, dim=1)
        return (preds == yb).float().mean()

    bs, lr, epochs = 4, 0.5, 1
    for epoch in range(epochs):
        for i in range((n - 1) // bs + 1):
            start_i = i * bs
            end_i = start_i + bs
            xb = x_train[start_i:end_i]
            yb = y_train[start_i:end_i]
            pred = model(xb)
            loss = loss_func(pred, yb)
            loss.backward()
            with torch.no_grad():
                weights -= weights.grad * lr
                bias -= bias.grad * lr
                weights.grad.zero_()
                bias.grad.zero_()
    losses += [loss_func(model(xb), yb).item(), accuracy(model(xb), yb).item()]
    loss_func = F.cross_entropy

    class Mnist_Logistic(nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = nn.Parameter(torch.randn(64, 10) / math.sqrt(64))
            self.bias = nn.Parameter(torch.zeros(10))

        def forward(self, xb):
            return xb @ self.weights + self.bias

    class Mnist_CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, kernel_size=3, stride=2, padding=1)
            self.conv2 = nn.Conv2d(4, 10, kernel_size=3, stride=2, padding=1)

        def forward(self, xb):
            xb = xb.view(-1, 1, 8, 8)
            xb = F.relu(self.conv1(xb))
            xb = F.relu(self.conv2(xb))
            xb = F.avg_pool2d(xb, 2)
            return xb.view(-1, xb.size(1))

    class Lambda(nn.Module):
        def __init__(self, func):
            super().__init__()
            self.func = func

        def forward(self, x):
            return self.func(x)

    def preprocess(x, y):
        return x.view(-1, 1, 8, 8), y

    class WrappedDataLoader:
        def __init__(self, dl, func):
            self.dl = dl
            self.func = func

        def __len__(self):
            return len(self.dl)

        def __iter__(self):
            for b in self.dl:
                yield (self.func(*b))

    logistic, linear, cnn = Mnist_Logistic(), nn.Linear(64, 10), Mnist_CNN()
    seq = nn.Sequential(Lambda(lambda x: x.view(-1, 1, 8, 8)), nn.Conv2d(1, 4, 3, 2, 1), nn.ReLU(),
                        nn.Conv2d(4, 10, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), Lambda(lambda x: x.view(x.size(0), -1)))
    holder = nn.ModuleList([logistic, linear, cnn, seq])
    init = load(m, holder, state)

    def fit_by_hand():
        for epoch in range(epochs):
            for i in range((n - 1) // bs + 1):
                start_i = i * bs
                end_i = start_i + bs
                xb = x_train[start_i:end_i]
                yb = y_train[start_i:end_i]
                loss = loss_func(logistic(xb), yb)
                loss.backward()
                with torch.no_grad():
                    for p in logistic.parameters():
                        p -= p.grad * lr
                    logistic.zero_grad()
        return loss.item()

    losses.append(fit_by_hand())

    def loss_batch(model, loss_func, xb, yb, opt=None):
        loss = loss_func(model(xb), yb)
        if opt is not None:
            loss.backward()
            opt.step()
            opt.zero_grad()
        return loss.item(), len(xb)

    def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
        for epoch in range(epochs):
            model.train()
            for xb, yb in train_dl:
                loss_batch(model, loss_func, xb, yb, opt)
            model.eval()
            with torch.no_grad():
                batch_losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
            val_loss = np.sum(np.multiply(batch_losses, nums)) / np.sum(nums)
            losses.append(float(val_loss))

    def get_data(train_ds, valid_ds, bs):
        return (DataLoader(train_ds, batch_size=bs, shuffle=True), DataLoader(valid_ds, batch_size=bs * 2))

    train_ds, valid_ds = TensorDataset(x_train, y_train), TensorDataset(x_valid, y_valid)
    train_dl, valid_dl = get_data(train_ds, valid_ds, len(train_ds))
    for model in (linear, cnn):
        fit(1, model, loss_func, optim.SGD(model.parameters(), lr=lr), train_dl, valid_dl)
    train_dl, valid_dl = get_data(train_ds, valid_ds, len(train_ds))
    train_dl, valid_dl = WrappedDataLoader(train_dl, preprocess), WrappedDataLoader(valid_dl, preprocess)
    fit(1, seq, loss_func, optim.SGD(seq.parameters(), lr=0.1, momentum=0.9), train_dl, valid_dl)
    losses.append(float(len(valid_dl)))
    return init, losses + summary(holder.parameters())


def test_nn_really():
    compare(nn_really)


# (b) the tutorial "Learning PyTorch with Examples": y = sin(x) fitted by a third-order polynomial with gradients
# written by hand (grad_y_pred = 2.0 * (y_pred - y)), then by autograd with the updates under torch.no_grad() and
# grad = None, then by the LegendrePolynomial3 autograd.Function (ctx.save_for_backward, 1.5 * (5 * input ** 2 - 1)),
# by nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1)) on x.unsqueeze(-1).pow(p) with MSELoss(reduction='sum') and
# optim.RMSprop, and the DynamicNet that reuses its fifth weight a random number of times (random.randint, seeded
# alike on both sides) with its string() of .item()s
def learning_with_examples(m, state=None):
    torch, nn = m.torch, m.nn
    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 200, device=device, dtype=dtype)
    y = torch.sin(x)
    rng = np.random.default_rng(1)
    a, b, c, d = (torch.tensor(normal(rng)) for _ in range(4))
    learning_rate = 1e-6
    losses = []
    for t in range(3):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum().item()
        losses.append(loss)
        grad_y_pred = 2.0 * (y_pred - y)
        grad_a = grad_y_pred.sum()
        grad_b = (grad_y_pred * x).sum()
        grad_c = (grad_y_pred * x ** 2).sum()
        grad_d = (grad_y_pred * x ** 3).sum()
        a -= learning_rate * grad_a
        b -= learning_rate * grad_b
        c -= learning_rate * grad_c
        d -= learning_rate * grad_d
    losses.append(d.item())

    a, b, c, d = (torch.tensor(normal(rng), dtype=dtype, requires_grad=True) for _ in range(4))
    for t in range(2):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    losses.append(f'Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3'.count("x"))

    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    for t in range(2):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= 5e-6 * a.grad
            b -= 5e-6 * b.grad
            c -= 5e-6 * c.grad
            d -= 5e-6 * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None

    class DynamicNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.randn(()))
            self.b = torch.nn.Parameter(torch.randn(()))
            self.c = torch.nn.Parameter(torch.randn(()))
            self.d = torch.nn.Parameter(torch.randn(()))
            self.e = torch.nn.Parameter(torch.randn(()))

        def forward(self, x):
            y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
            for exp in range(4, random.randint(4, 6)):
                y = y + self.e * x ** exp
            return y

        def string(self):
            return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3 + {self.e.item()} x^4 ? + {self.e.item()} x^5 ?'

    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
    dynamic = DynamicNet()
    init = load(m, nn.ModuleList([model, dynamic]), state)
    loss_fn = torch.nn.MSELoss(reduction='sum')
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    for t in range(2):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    linear_layer = model[0]
    losses += [linear_layer.bias.item(), linear_layer.weight[:, 2].item()]
    random.seed(3)
    optimizer = torch.optim.SGD(dynamic.parameters(), lr=1e-8, momentum=0.9)
    for t in range(3):
        y_pred = dynamic(x)
        loss = torch.nn.MSELoss(reduction='sum')(y_pred, y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    losses.append(len(dynamic.string()) > 0)
    return init, losses + summary(list(model.parameters()) + list(dynamic.parameters()))


def test_learning_with_examples():
    compare(learning_with_examples)


# (c) the tutorial "Writing Custom Datasets, DataLoaders and Transforms": FaceLandmarksDataset (a table of landmark
# columns, images as HxWxC numpy arrays, torch.is_tensor(idx) and idx.tolist(), dict samples), its callable transforms
# Rescale (skimage's resize, here numpy's nearest), RandomCrop (np.random.randint, seeded alike on both sides) and
# ToTensor (transpose((2, 0, 1)), torch.from_numpy of float64 arrays: float32 in tnet, README) through a hand-written Compose; the DataLoader's
# default collate of dicts of tensors, a batch_sampler of BatchSampler(SequentialSampler), batch_size=None (no
# batching: numpy converted alone), a ConcatDataset by `+` with its cumulative_sizes, Subset, and a landmark regressor
# trained on sample_batched['image'].float()
def custom_dataset(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    Dataset, DataLoader = data.Dataset, data.DataLoader
    rng = np.random.default_rng(2)
    table = [(f"face_{i}.jpg", *rng.uniform(2, 10, 6).round(1)) for i in range(6)]
    images = {name: rng.integers(0, 256, (12, 10, 3)).astype(np.uint8) for name, *_ in table}

    class FaceLandmarksDataset(Dataset):
        """Face Landmarks dataset."""

        def __init__(self, csv_file, root_dir, transform=None):
            self.landmarks_frame = csv_file
            self.root_dir = root_dir
            self.transform = transform

        def __len__(self):
            return len(self.landmarks_frame)

        def __getitem__(self, idx):
            if torch.is_tensor(idx):
                idx = idx.tolist()
            img_name = self.root_dir + self.landmarks_frame[idx][0]
            image = images[img_name]
            landmarks = self.landmarks_frame[idx][1:]
            landmarks = np.array([landmarks], dtype=float).reshape(-1, 2)
            sample = {'image': image, 'landmarks': landmarks}
            if self.transform:
                sample = self.transform(sample)
            return sample

    def resize(image, shape):  # skimage.transform.resize, nearest, to floats in [0, 1]
        rows = (np.arange(shape[0]) * image.shape[0] // shape[0])
        cols = (np.arange(shape[1]) * image.shape[1] // shape[1])
        return image[rows][:, cols] / 255.0

    class Rescale(object):
        def __init__(self, output_size):
            assert isinstance(output_size, (int, tuple))
            self.output_size = output_size

        def __call__(self, sample):
            image, landmarks = sample['image'], sample['landmarks']
            h, w = image.shape[:2]
            if isinstance(self.output_size, int):
                if h > w:
                    new_h, new_w = self.output_size * h / w, self.output_size
                else:
                    new_h, new_w = self.output_size, self.output_size * w / h
            else:
                new_h, new_w = self.output_size
            new_h, new_w = int(new_h), int(new_w)
            img = resize(image, (new_h, new_w))
            landmarks = landmarks * [new_w / w, new_h / h]
            return {'image': img, 'landmarks': landmarks}

    class RandomCrop(object):
        def __init__(self, output_size):
            assert isinstance(output_size, (int, tuple))
            if isinstance(output_size, int):
                self.output_size = (output_size, output_size)
            else:
                assert len(output_size) == 2
                self.output_size = output_size

        def __call__(self, sample):
            image, landmarks = sample['image'], sample['landmarks']
            h, w = image.shape[:2]
            new_h, new_w = self.output_size
            top = np.random.randint(0, h - new_h + 1)
            left = np.random.randint(0, w - new_w + 1)
            image = image[top: top + new_h, left: left + new_w]
            landmarks = landmarks - [left, top]
            return {'image': image, 'landmarks': landmarks}

    class ToTensor(object):
        def __call__(self, sample):
            image, landmarks = sample['image'], sample['landmarks']
            image = image.transpose((2, 0, 1))
            return {'image': torch.from_numpy(image), 'landmarks': torch.from_numpy(landmarks)}

    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, img):
            for t in self.transforms:
                img = t(img)
            return img

    np.random.seed(0)
    face_dataset = FaceLandmarksDataset(csv_file=table, root_dir='')
    losses = [float(face_dataset[torch.tensor(1)]['landmarks'].sum())]
    transformed_dataset = FaceLandmarksDataset(csv_file=table, root_dir='',
                                               transform=Compose([Rescale(10), RandomCrop(8), ToTensor()]))
    sample = transformed_dataset[0]
    losses += [float(sample['image'].size(1)), sample['landmarks'].sum().item()]
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, 6))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    dataloader = DataLoader(transformed_dataset, batch_size=4, shuffle=False, num_workers=0)
    for i_batch, sample_batched in enumerate(dataloader):
        images_batch, landmarks_batch = sample_batched['image'], sample_batched['landmarks']
        out = model(images_batch.float())
        loss = F.mse_loss(out, landmarks_batch.view(images_batch.size(0), -1).float() / 10)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), float(len(images_batch)), landmarks_batch.dtype.is_floating_point]
    both = transformed_dataset + data.Subset(face_dataset, [0, 2])
    losses += both.cumulative_sizes + [float(len(both))]
    sampler = data.BatchSampler(data.SequentialSampler(range(len(transformed_dataset))), batch_size=4, drop_last=True)
    for batch in DataLoader(transformed_dataset, batch_sampler=sampler):
        losses.append(model(batch['image'].float()).sum().item())
    plain = DataLoader(face_dataset, batch_size=None)
    first = next(iter(plain))
    losses += [float(first['landmarks'].shape[0]), float(torch.is_tensor(first['image'])), float(first['image'].ndim),
               first['image'].float().mean().item()]
    return init, losses + summary(model.parameters())


def test_custom_dataset():
    compare(custom_dataset)


# (d) torchvision's functional transforms on tensors as they are written (v0.15's _functional_tensor.py) and a
# TrivialAugment-like pipeline of them on a uint8 CIFAR batch (the operations and magnitudes drawn by numpy):
# _blend, rgb_to_grayscale by unbind, adjust_brightness / contrast / saturation, adjust_hue through _rgb2hsv (torch.where,
# fmod, boolean products) and _hsv2rgb (an int32 sector, a one-hot mask by == arange(6), einsum("...ijk, ...xijk ->
# ...xjk")), convert_image_dtype, posterize by & of a negative int, solarize and invert, autocontrast (amin/amax,
# isfinite().logical_not() as a mask assigned in place), equalize (bincount, the LUT by torch.div(rounding_mode="floor"),
# F.pad of the LUT, indexing by int64 pixels), adjust_sharpness (a depthwise conv2d of a 3x3 kernel written in place,
# torch.round before the uint8 cast), gaussian_blur (linspace kernels, torch.mm of outer products, reflect padding),
# then normalised by hand and a TenCrop test-time average (five_crop by slicing, hflip by flip(-1),
# result.view(bs, ncrops, -1).mean(1))
def color_transforms(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    conv2d, torch_pad = F.conv2d, F.pad

    def _max_value(dtype):
        return 255 if dtype == torch.uint8 else 1.0

    def _blend(img1, img2, ratio):
        ratio = float(ratio)
        bound = _max_value(img1.dtype)
        return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)

    def convert_image_dtype(image, dtype=torch.float):
        if image.dtype == dtype:
            return image
        if image.is_floating_point():
            eps = 1e-3
            max_val = float(_max_value(dtype))
            result = image.mul(max_val + 1.0 - eps)
            return result.to(dtype)
        return image.to(dtype).div(_max_value(image.dtype))

    def rgb_to_grayscale(img, num_output_channels=1):
        r, g, b = img.unbind(dim=-3)
        l_img = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype)
        l_img = l_img.unsqueeze(dim=-3)
        if num_output_channels == 3:
            return l_img.expand(img.shape)
        return l_img

    def adjust_brightness(img, brightness_factor):
        return _blend(img, torch.zeros_like(img), brightness_factor)

    def adjust_contrast(img, contrast_factor):
        dtype = img.dtype if torch.is_floating_point(img) else torch.float32
        mean = torch.mean(rgb_to_grayscale(img).to(dtype), dim=(-3, -2, -1), keepdim=True)
        return _blend(img, mean, contrast_factor)

    def adjust_saturation(img, saturation_factor):
        return _blend(img, rgb_to_grayscale(img), saturation_factor)

    def _rgb2hsv(img):
        r, g, _ = img.unbind(dim=-3)
        maxc = torch.max(img, dim=-3).values
        minc = torch.min(img, dim=-3).values
        eqc = maxc == minc
        cr = maxc - minc
        ones = torch.ones_like(maxc)
        s = cr / torch.where(eqc, ones, maxc)
        cr_divisor = torch.where(eqc, ones, cr)
        rc, gc, bc = ((maxc - c) / cr_divisor for c in img.unbind(dim=-3))
        hr = (maxc == r) * (bc - gc)
        hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
        hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
        h = hr + hg + hb
        h = torch.fmod((h / 6.0 + 1.0), 1.0)
        return torch.stack((h, s, maxc), dim=-3)

    def _hsv2rgb(img):
        h, s, v = img.unbind(dim=-3)
        i = torch.floor(h * 6.0)
        f = (h * 6.0) - i
        i = i.to(dtype=torch.int32)
        p = torch.clamp((v * (1.0 - s)), 0.0, 1.0)
        q = torch.clamp((v * (1.0 - s * f)), 0.0, 1.0)
        t = torch.clamp((v * (1.0 - s * (1.0 - f))), 0.0, 1.0)
        i = i % 6
        mask = i.unsqueeze(dim=-3) == torch.arange(6, device=i.device).view(-1, 1, 1)
        a1 = torch.stack((v, q, p, p, t, v), dim=-3)
        a2 = torch.stack((t, v, v, q, p, p), dim=-3)
        a3 = torch.stack((p, p, t, v, v, q), dim=-3)
        a4 = torch.stack((a1, a2, a3), dim=-4)
        return torch.einsum("...ijk, ...xijk -> ...xjk", mask.to(dtype=img.dtype), a4)

    def adjust_hue(img, hue_factor):
        if not (-0.5 <= hue_factor <= 0.5):
            raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
        orig_dtype = img.dtype
        img = convert_image_dtype(img, torch.float32)
        img = _rgb2hsv(img)
        h, s, v = img.unbind(dim=-3)
        h = (h + hue_factor) % 1.0
        img = torch.stack((h, s, v), dim=-3)
        img_hue_adj = _hsv2rgb(img)
        return convert_image_dtype(img_hue_adj, orig_dtype)

    def invert(img):
        bound = torch.tensor(1 if img.is_floating_point() else 255, dtype=img.dtype, device=img.device)
        return bound - img

    def posterize(img, bits):
        if img.dtype != torch.uint8:
            raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
        mask = -int(2 ** (8 - bits))
        return img & mask

    def solarize(img, threshold):
        inverted_img = invert(img)
        return torch.where(img >= threshold, inverted_img, img)

    def autocontrast(img):
        bound = _max_value(img.dtype)
        dtype = img.dtype if torch.is_floating_point(img) else torch.float32
        minimum = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
        maximum = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
        scale = bound / (maximum - minimum)
        eq_idxs = torch.isfinite(scale).logical_not()
        minimum[eq_idxs] = 0
        scale[eq_idxs] = 1
        return ((img - minimum) * scale).clamp(0, bound).to(img.dtype)

    def _scale_channel(img_chan):
        hist = torch.bincount(img_chan.reshape(-1), minlength=256)
        nonzero_hist = hist[hist != 0]
        step = torch.div(nonzero_hist[:-1].sum(), 255, rounding_mode="floor")
        if step == 0:
            return img_chan
        lut = torch.div(torch.cumsum(hist, 0) + torch.div(step, 2, rounding_mode="floor"), step, rounding_mode="floor")
        lut = torch.nn.functional.pad(lut, [1, 0])[:-1].clamp(0, 255)
        return lut[img_chan.to(torch.int64)].to(torch.uint8)

    def equalize(img):
        return torch.stack([torch.stack([_scale_channel(x[c]) for c in range(x.size(0))]) for x in img])

    def _cast_squeeze_in(img, req_dtypes):
        need_squeeze = False
        if img.ndim < 4:
            img = img.unsqueeze(dim=0)
            need_squeeze = True
        out_dtype = img.dtype
        need_cast = False
        if out_dtype not in req_dtypes:
            need_cast = True
            img = img.to(req_dtypes[0])
        return img, need_cast, need_squeeze, out_dtype

    def _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype):
        if need_squeeze:
            img = img.squeeze(dim=0)
        if need_cast:
            if out_dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
                img = torch.round(img)
            img = img.to(out_dtype)
        return img

    def adjust_sharpness(img, sharpness_factor):
        dtype = img.dtype if torch.is_floating_point(img) else torch.float32
        kernel = torch.ones((3, 3), dtype=dtype, device=img.device)
        kernel[1, 1] = 5.0
        kernel /= kernel.sum()
        kernel = kernel.expand(img.shape[-3], 1, kernel.shape[0], kernel.shape[1])
        result_tmp, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [kernel.dtype])
        result_tmp = conv2d(result_tmp, kernel, groups=result_tmp.shape[-3])
        result_tmp = _cast_squeeze_out(result_tmp, need_cast, need_squeeze, out_dtype)
        result = img.clone()
        result[..., 1:-1, 1:-1] = result_tmp
        return _blend(img, result, sharpness_factor)

    def _get_gaussian_kernel1d(kernel_size, sigma):
        ksize_half = (kernel_size - 1) * 0.5
        x = torch.linspace(-ksize_half, ksize_half, steps=kernel_size)
        pdf = torch.exp(-0.5 * (x / sigma).pow(2))
        return pdf / pdf.sum()

    def gaussian_blur(img, kernel_size, sigma):
        dtype = img.dtype if torch.is_floating_point(img) else torch.float32
        kernel1d_x = _get_gaussian_kernel1d(kernel_size[0], sigma[0]).to(img.device, dtype=dtype)
        kernel1d_y = _get_gaussian_kernel1d(kernel_size[1], sigma[1]).to(img.device, dtype=dtype)
        kernel = torch.mm(kernel1d_y[:, None], kernel1d_x[None, :])
        kernel = kernel.expand(img.shape[-3], 1, kernel.shape[0], kernel.shape[1])
        img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [kernel.dtype])
        padding = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
        img = torch_pad(img, padding, mode="reflect")
        img = conv2d(img, kernel, groups=img.shape[-3])
        return _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype)

    def five_crop(img, size):
        image_height, image_width = img.shape[-2:]
        crop_height, crop_width = size
        tl = img[..., :crop_height, :crop_width]
        tr = img[..., :crop_height, image_width - crop_width:]
        bl = img[..., image_height - crop_height:, :crop_width]
        br = img[..., image_height - crop_height:, image_width - crop_width:]
        crop_top = int(round((image_height - crop_height) / 2.0))
        crop_left = int(round((image_width - crop_width) / 2.0))
        center = img[..., crop_top:crop_top + crop_height, crop_left:crop_left + crop_width]
        return tl, tr, bl, br, center

    def ten_crop(img, size):
        return five_crop(img, size) + five_crop(img.flip(-1), size)

    rng = np.random.default_rng(3)
    batch = torch.tensor(rng.integers(0, 256, (2, 3, 4, 4)).astype(np.uint8))  # small: the einsum's batch is every pixel
    batch[1, :, :2, :2] = 7  # a flat patch: equal channels, hue undefined
    ops = [lambda img, mag: adjust_brightness(img, 1 + mag), lambda img, mag: adjust_contrast(img, 1 + mag),
           lambda img, mag: adjust_saturation(img, 1 + mag), lambda img, mag: adjust_hue(img, mag / 2),
           lambda img, mag: posterize(img, 4), lambda img, mag: solarize(img, 128), lambda img, mag: autocontrast(img),
           lambda img, mag: equalize(img), lambda img, mag: adjust_sharpness(img, 1 + mag),
           lambda img, mag: gaussian_blur(img, [3, 3], [0.8, 1.2]), lambda img, mag: invert(img)]
    stats = []
    augmented = []
    for op in ops:
        out = op(batch, float(rng.uniform(-0.9, 0.9)))
        assert out.dtype == torch.uint8 and out.shape == batch.shape
        stats.append(out.float().sum().item())
        augmented.append(out)
    try:
        posterize(batch.float(), 4)
        stats.append(0.0)
    except TypeError:
        stats.append(1.0)
    stats += _rgb2hsv(convert_image_dtype(batch)).sum(dim=(0, 2, 3)).tolist()

    mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(3, 1, 1)
    std = torch.tensor([0.2470, 0.2435, 0.2616]).view(3, 1, 1)
    x = (torch.cat(augmented[::3]).float() / 255 - mean) / std
    y = torch.tensor(rng.integers(0, 10, x.size(0)))
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(2):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        input = torch.stack(ten_crop(x[:2], (3, 3)), dim=1)
        bs, ncrops, c, h, w = input.size()
        result = model(input.view(-1, c, h, w))
        result_avg = result.view(bs, ncrops, -1).mean(1)
    losses += result_avg.flatten().tolist()
    return init, losses + stats + summary(model.parameters())


def test_color_transforms():
    compare(color_transforms)


def kuangliu_train(m, net, x, targets, steps=1):
    """kuangliu/pytorch-cifar's main.py around a model: SGD(momentum=0.9, weight_decay=5e-4), CosineAnnealingLR(T_max=200),
    outputs.max(1) and predicted.eq(targets).sum().item()."""
    optimizer = m.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scheduler = m.lr_scheduler.CosineAnnealingLR(optimizer, T_max=200)
    criterion = m.nn.CrossEntropyLoss()
    net.train()
    train_loss = correct = total = 0
    record = []
    for batch_idx in range(steps):
        optimizer.zero_grad()
        outputs = net(x)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        train_loss += loss.item()
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()
        record += [train_loss / (batch_idx + 1), 100. * correct / total]
    scheduler.step()
    return record + [scheduler.get_last_lr()[0]]


# (e) kuangliu/pytorch-cifar's dpn.py and shufflenet.py: DPN's Bottleneck (grouped 3x3, the dual path
# torch.cat([x[:,:d,:,:]+out[:,:d,:,:], x[:,d:,:,:], out[:,d:,:,:]], 1), last_planes grown by dense_depth) and
# ShuffleNet v1 (ShuffleBlock by view, permute and reshape; grouped 1x1s, g = 1 at 24 input planes; the stride-2
# block's AvgPool2d(3, stride=2, padding=1) shortcut concatenated), at reduced widths, a step each of main.py
def kuangliu_dpn_shufflenet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Bottleneck(nn.Module):
        def __init__(self, last_planes, in_planes, out_planes, dense_depth, stride, first_layer):
            super(Bottleneck, self).__init__()
            self.out_planes = out_planes
            self.dense_depth = dense_depth
            self.conv1 = nn.Conv2d(last_planes, in_planes, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(in_planes)
            self.conv2 = nn.Conv2d(in_planes, in_planes, kernel_size=3, stride=stride, padding=1, groups=2, bias=False)
            self.bn2 = nn.BatchNorm2d(in_planes)
            self.conv3 = nn.Conv2d(in_planes, out_planes+dense_depth, kernel_size=1, bias=False)
            self.bn3 = nn.BatchNorm2d(out_planes+dense_depth)
            self.shortcut = nn.Sequential()
            if first_layer:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(last_planes, out_planes+dense_depth, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(out_planes+dense_depth)
                )

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            x = self.shortcut(x)
            d = self.out_planes
            out = torch.cat([x[:,:d,:,:]+out[:,:d,:,:], x[:,d:,:,:], out[:,d:,:,:]], 1)
            out = F.relu(out)
            return out

    class DPN(nn.Module):
        def __init__(self, cfg):
            super(DPN, self).__init__()
            in_planes, out_planes = cfg['in_planes'], cfg['out_planes']
            num_blocks, dense_depth = cfg['num_blocks'], cfg['dense_depth']
            self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.last_planes = 8
            self.layer1 = self._make_layer(in_planes[0], out_planes[0], num_blocks[0], dense_depth[0], stride=1)
            self.layer2 = self._make_layer(in_planes[1], out_planes[1], num_blocks[1], dense_depth[1], stride=2)
            self.linear = nn.Linear(out_planes[1]+(num_blocks[1]+1)*dense_depth[1], 10)

        def _make_layer(self, in_planes, out_planes, num_blocks, dense_depth, stride):
            strides = [stride] + [1]*(num_blocks-1)
            layers = []
            for i,stride in enumerate(strides):
                layers.append(Bottleneck(self.last_planes, in_planes, out_planes, dense_depth, stride, i==0))
                self.last_planes = out_planes + (i+2) * dense_depth
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = self.layer2(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out

    class ShuffleBlock(nn.Module):
        def __init__(self, groups):
            super(ShuffleBlock, self).__init__()
            self.groups = groups

        def forward(self, x):
            '''Channel shuffle: [N,C,H,W] -> [N,g,C/g,H,W] -> [N,C/g,g,H,w] -> [N,C,H,W]'''
            N,C,H,W = x.size()
            g = self.groups
            return x.view(N,g,C//g,H,W).permute(0,2,1,3,4).reshape(N,C,H,W)

    class ShuffleBottleneck(nn.Module):
        def __init__(self, in_planes, out_planes, stride, groups):
            super(ShuffleBottleneck, self).__init__()
            self.stride = stride
            mid_planes = out_planes//4
            g = 1 if in_planes==24 else groups
            self.conv1 = nn.Conv2d(in_planes, mid_planes, kernel_size=1, groups=g, bias=False)
            self.bn1 = nn.BatchNorm2d(mid_planes)
            self.shuffle1 = ShuffleBlock(groups=g)
            self.conv2 = nn.Conv2d(mid_planes, mid_planes, kernel_size=3, stride=stride, padding=1, groups=mid_planes, bias=False)
            self.bn2 = nn.BatchNorm2d(mid_planes)
            self.conv3 = nn.Conv2d(mid_planes, out_planes, kernel_size=1, groups=groups, bias=False)
            self.bn3 = nn.BatchNorm2d(out_planes)
            self.shortcut = nn.Sequential()
            if stride == 2:
                self.shortcut = nn.Sequential(nn.AvgPool2d(3, stride=2, padding=1))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.shuffle1(out)
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            res = self.shortcut(x)
            out = F.relu(torch.cat([out,res], 1)) if self.stride==2 else F.relu(out+res)
            return out

    class ShuffleNet(nn.Module):
        def __init__(self, cfg):
            super(ShuffleNet, self).__init__()
            out_planes = cfg['out_planes']
            num_blocks = cfg['num_blocks']
            groups = cfg['groups']
            self.conv1 = nn.Conv2d(3, 24, kernel_size=1, bias=False)
            self.bn1 = nn.BatchNorm2d(24)
            self.in_planes = 24
            self.layer1 = self._make_layer(out_planes[0], num_blocks[0], groups)
            self.linear = nn.Linear(out_planes[0], 10)

        def _make_layer(self, out_planes, num_blocks, groups):
            layers = []
            for i in range(num_blocks):
                stride = 2 if i == 0 else 1
                cat_planes = self.in_planes if i == 0 else 0
                layers.append(ShuffleBottleneck(self.in_planes, out_planes-cat_planes, stride=stride, groups=groups))
                self.in_planes = out_planes
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer1(out)
            out = F.adaptive_avg_pool2d(out, 1)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out

    dpn = DPN({'in_planes': (8, 8), 'out_planes': (8, 12), 'num_blocks': (2, 1), 'dense_depth': (2, 4)})
    shufflenet = ShuffleNet({'out_planes': [40], 'num_blocks': [2], 'groups': 2})
    init = load(m, nn.ModuleList([dpn, shufflenet]), state)
    rng = np.random.default_rng(4)
    x, targets = torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 2))
    losses = kuangliu_train(m, dpn, x, targets) + kuangliu_train(m, shufflenet, x, targets)
    return init, losses + summary(list(dpn.parameters()) + list(shufflenet.parameters()))


def test_kuangliu_dpn_shufflenet():
    compare(kuangliu_dpn_shufflenet)


# (f) kuangliu/pytorch-cifar's dla.py: DLA's recursive Tree (subtrees set by self.__setattr__('level_%d' % i, ...) and
# read back by self.__getattr__, a prev_root, a Root over torch.cat of the list) over BasicBlocks, at reduced widths
def kuangliu_dla(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, in_planes, planes, stride=1):
            super(BasicBlock, self).__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != self.expansion*planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, self.expansion*planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(self.expansion*planes)
                )

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.shortcut(x)
            out = F.relu(out)
            return out

    class Root(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size=1):
            super(Root, self).__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=(kernel_size - 1) // 2, bias=False)
            self.bn = nn.BatchNorm2d(out_channels)

        def forward(self, xs):
            x = torch.cat(xs, 1)
            out = F.relu(self.bn(self.conv(x)))
            return out

    class Tree(nn.Module):
        def __init__(self, block, in_channels, out_channels, level=1, stride=1):
            super(Tree, self).__init__()
            self.level = level
            if level == 1:
                self.root = Root(2*out_channels, out_channels)
                self.left_node = block(in_channels, out_channels, stride=stride)
                self.right_node = block(out_channels, out_channels, stride=1)
            else:
                self.root = Root((level+2)*out_channels, out_channels)
                for i in reversed(range(1, level)):
                    subtree = Tree(block, in_channels, out_channels, level=i, stride=stride)
                    self.__setattr__('level_%d' % i, subtree)
                self.prev_root = block(in_channels, out_channels, stride=stride)
                self.left_node = block(out_channels, out_channels, stride=1)
                self.right_node = block(out_channels, out_channels, stride=1)

        def forward(self, x):
            xs = [self.prev_root(x)] if self.level > 1 else []
            for i in reversed(range(1, self.level)):
                level_i = self.__getattr__('level_%d' % i)
                x = level_i(x)
                xs.append(x)
            x = self.left_node(x)
            xs.append(x)
            x = self.right_node(x)
            xs.append(x)
            out = self.root(xs)
            return out

    class DLA(nn.Module):
        def __init__(self, block=BasicBlock, num_classes=10):
            super(DLA, self).__init__()
            self.base = nn.Sequential(nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1, bias=False),
                                      nn.BatchNorm2d(4), nn.ReLU(True))
            self.layer3 = Tree(block, 4, 6, level=2, stride=2)
            self.linear = nn.Linear(6, num_classes)

        def forward(self, x):
            out = self.base(x)
            out = self.layer3(out)
            out = F.avg_pool2d(out, 4)
            out = out.view(out.size(0), -1)
            out = self.linear(out)
            return out

    dla = DLA()
    nets = nn.ModuleList([dla])
    init = load(m, nets, state)
    assert isinstance(dla.layer3.level_1, Tree) and 'layer3.level_1.root.conv.weight' in dla.state_dict()
    try:
        dla.layer3.__getattr__('level_2')
    except AttributeError as e:
        assert str(e) == "'Tree' object has no attribute 'level_2'"
    rng = np.random.default_rng(5)
    x, targets = torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 2))
    losses = []
    for net in nets:
        losses += kuangliu_train(m, net, x, targets)
    return init, losses + summary(nets.parameters())


def test_kuangliu_dla():
    compare(kuangliu_dla)


# (g) SHI-Labs' Compact Convolutional Transformer for CIFAR (cct_2_3x2_32 at reduced widths): the Tokenizer (a
# Sequential of Conv2d, Identity for a None activation, MaxPool2d(3, 2, 1)), Flatten(2, 3) then transpose(-2, -1),
# sequence_length() by a forward of torch.zeros, init by self.apply of a staticmethod (kaiming_normal_, trunc_normal_,
# constant_), the sinusoidal positional embedding built by torch.FloatTensor of a nested list, sliced [:, 0::2] and
# written by sin/cos, as a Parameter with requires_grad=False, added in place; pre-norm attention by qkv reshape and
# permute(2, 0, 3, 1, 4), drop path (off at rate 0: an Identity); the sequence pooling
# torch.matmul(F.softmax(self.attention_pool(x), dim=1).transpose(-1, -2), x).squeeze(-2), and label smoothing
def cct(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_ = nn.init

    class Tokenizer(nn.Module):
        def __init__(self, kernel_size, stride, padding, pooling_kernel_size=3, pooling_stride=2, pooling_padding=1,
                     n_conv_layers=1, n_input_channels=3, n_output_channels=64, in_planes=64, activation=None,
                     max_pool=True, conv_bias=False):
            super(Tokenizer, self).__init__()
            n_filter_list = [n_input_channels] + [in_planes for _ in range(n_conv_layers - 1)] + [n_output_channels]
            self.conv_layers = nn.Sequential(
                *[nn.Sequential(
                    nn.Conv2d(n_filter_list[i], n_filter_list[i + 1], kernel_size=(kernel_size, kernel_size),
                              stride=(stride, stride), padding=(padding, padding), bias=conv_bias),
                    nn.Identity() if activation is None else activation(),
                    nn.MaxPool2d(kernel_size=pooling_kernel_size, stride=pooling_stride,
                                 padding=pooling_padding) if max_pool else nn.Identity()
                ) for i in range(n_conv_layers)])
            self.flattener = nn.Flatten(2, 3)
            self.apply(self.init_weight)

        def sequence_length(self, n_channels=3, height=224, width=224):
            return self.forward(torch.zeros((1, n_channels, height, width))).shape[1]

        def forward(self, x):
            return self.flattener(self.conv_layers(x)).transpose(-2, -1)

        @staticmethod
        def init_weight(m):
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)

    class Attention(nn.Module):
        def __init__(self, dim, num_heads=8, attention_dropout=0.1, projection_dropout=0.1):
            super().__init__()
            self.num_heads = num_heads
            head_dim = dim // self.num_heads
            self.scale = head_dim ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=False)
            self.attn_drop = nn.Dropout(attention_dropout)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(projection_dropout)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = (q @ k.transpose(-2, -1)) * self.scale
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = (attn @ v).transpose(1, 2).reshape(B, N, C)
            x = self.proj(x)
            x = self.proj_drop(x)
            return x

    class TransformerEncoderLayer(nn.Module):
        def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, attention_dropout=0.1, drop_path_rate=0.1):
            super(TransformerEncoderLayer, self).__init__()
            self.pre_norm = nn.LayerNorm(d_model)
            self.self_attn = Attention(dim=d_model, num_heads=nhead, attention_dropout=attention_dropout,
                                       projection_dropout=dropout)
            self.linear1 = nn.Linear(d_model, dim_feedforward)
            self.dropout1 = nn.Dropout(dropout)
            self.norm1 = nn.LayerNorm(d_model)
            self.linear2 = nn.Linear(dim_feedforward, d_model)
            self.dropout2 = nn.Dropout(dropout)
            self.drop_path = nn.Identity() if drop_path_rate == 0 else None
            self.activation = F.gelu

        def forward(self, src, *args, **kwargs):
            src = src + self.drop_path(self.self_attn(self.pre_norm(src)))
            src = self.norm1(src)
            src2 = self.linear2(self.dropout1(self.activation(self.linear1(src))))
            src = src + self.drop_path(self.dropout2(src2))
            return src

    class TransformerClassifier(nn.Module):
        def __init__(self, seq_pool=True, embedding_dim=768, num_layers=12, num_heads=12, mlp_ratio=4.0,
                     num_classes=1000, dropout=0.1, attention_dropout=0.1, stochastic_depth=0.1,
                     positional_embedding='sine', sequence_length=None, *args, **kwargs):
            super().__init__()
            dim_feedforward = int(embedding_dim * mlp_ratio)
            self.embedding_dim = embedding_dim
            self.sequence_length = sequence_length
            self.seq_pool = seq_pool
            if not seq_pool:
                sequence_length += 1
                self.class_emb = nn.Parameter(torch.zeros(1, 1, self.embedding_dim), requires_grad=True)
            else:
                self.attention_pool = nn.Linear(self.embedding_dim, 1)
            if positional_embedding == 'learnable':
                self.positional_emb = nn.Parameter(torch.zeros(1, sequence_length, embedding_dim), requires_grad=True)
                init_.trunc_normal_(self.positional_emb, std=0.2)
            else:
                self.positional_emb = nn.Parameter(self.sinusoidal_embedding(sequence_length, embedding_dim),
                                                   requires_grad=False)
            self.dropout = nn.Dropout(p=dropout)
            dpr = [x.item() for x in torch.linspace(0, stochastic_depth, num_layers)]
            self.blocks = nn.ModuleList([
                TransformerEncoderLayer(d_model=embedding_dim, nhead=num_heads, dim_feedforward=dim_feedforward,
                                        dropout=dropout, attention_dropout=attention_dropout, drop_path_rate=dpr[i])
                for i in range(num_layers)])
            self.norm = nn.LayerNorm(embedding_dim)
            self.fc = nn.Linear(embedding_dim, num_classes)
            self.apply(self.init_weight)

        def forward(self, x):
            if not self.seq_pool:
                cls_token = self.class_emb.expand(x.shape[0], -1, -1)
                x = torch.cat((cls_token, x), dim=1)
            if self.positional_emb is not None:
                x += self.positional_emb
            x = self.dropout(x)
            for blk in self.blocks:
                x = blk(x)
            x = self.norm(x)
            if self.seq_pool:
                x = torch.matmul(F.softmax(self.attention_pool(x), dim=1).transpose(-1, -2), x).squeeze(-2)
            else:
                x = x[:, 0]
            x = self.fc(x)
            return x

        @staticmethod
        def init_weight(m):
            if isinstance(m, nn.Linear):
                init_.trunc_normal_(m.weight, std=.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    init_.constant_(m.bias, 0)
            elif isinstance(m, nn.LayerNorm):
                init_.constant_(m.bias, 0)
                init_.constant_(m.weight, 1.0)

        @staticmethod
        def sinusoidal_embedding(n_channels, dim):
            pe = torch.FloatTensor([[p / (10000 ** (2 * (i // 2) / dim)) for i in range(dim)]
                                    for p in range(n_channels)])
            pe[:, 0::2] = torch.sin(pe[:, 0::2])
            pe[:, 1::2] = torch.cos(pe[:, 1::2])
            return pe.unsqueeze(0)

    class CCT(nn.Module):
        def __init__(self, img_size=32, embedding_dim=16, n_input_channels=3, n_conv_layers=1, kernel_size=3, stride=1,
                     padding=1, pooling_kernel_size=3, pooling_stride=2, pooling_padding=1, *args, **kwargs):
            super(CCT, self).__init__()
            self.tokenizer = Tokenizer(n_input_channels=n_input_channels, n_output_channels=embedding_dim,
                                       kernel_size=kernel_size, stride=stride, padding=padding,
                                       pooling_kernel_size=pooling_kernel_size, pooling_stride=pooling_stride,
                                       pooling_padding=pooling_padding, max_pool=True, activation=nn.ReLU,
                                       n_conv_layers=n_conv_layers, conv_bias=False)
            self.classifier = TransformerClassifier(
                sequence_length=self.tokenizer.sequence_length(n_channels=n_input_channels, height=img_size,
                                                               width=img_size),
                embedding_dim=embedding_dim, seq_pool=True, dropout=0., attention_dropout=0., stochastic_depth=0.,
                *args, **kwargs)

        def forward(self, x):
            x = self.tokenizer(x)
            return self.classifier(x)

    model = CCT(img_size=8, embedding_dim=8, num_layers=1, num_heads=2, mlp_ratio=1, num_classes=10)
    init = load(m, model, state)
    pe = model.classifier.positional_emb
    shapes = [float(pe.shape[1]), float(pe.requires_grad), pe[0, 3, 1].item()]
    rng = np.random.default_rng(6)
    x, y = torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 2))
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9,
                                weight_decay=3e-2)
    losses = []
    for step in range(2):
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + shapes + summary(model.parameters())


def test_cct():
    compare(cct)


# (h) three MetaFormers as their repositories write them: sail-sg's PoolFormer (Pooling as
# AvgPool2d(count_include_pad=False)(x) - x, GroupNorm(1, C) subclassed, 1x1-convolution Mlps, layer scales by
# .unsqueeze(-1).unsqueeze(-1)), facebookresearch's ResMLP (Affine alpha * x + beta for a norm, a Linear across patches
# by transpose(1, 2) both ways, gamma layer scales), and jaketae's gMLP (a SpatialGatingUnit splitting by
# chunk(2, dim=-1), a Conv1d over the sequence with its bias set to 1 by nn.init.constant_); each over a Conv2d patch
# embedding of a CIFAR batch, a step of SGD
def metaformers(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Pooling(nn.Module):
        def __init__(self, pool_size=3):
            super().__init__()
            self.pool = nn.AvgPool2d(pool_size, stride=1, padding=pool_size//2, count_include_pad=False)

        def forward(self, x):
            return self.pool(x) - x

    class GroupNorm(nn.GroupNorm):
        def __init__(self, num_channels, **kwargs):
            super().__init__(1, num_channels, **kwargs)

    class ConvMlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Conv2d(in_features, hidden_features, 1)
            self.act = act_layer()
            self.fc2 = nn.Conv2d(hidden_features, out_features, 1)
            self.drop = nn.Dropout(drop)

        def forward(self, x):
            return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))

    class PoolFormerBlock(nn.Module):
        def __init__(self, dim, pool_size=3, mlp_ratio=4., act_layer=nn.GELU, norm_layer=GroupNorm, drop=0.,
                     drop_path=0., use_layer_scale=True, layer_scale_init_value=1e-5):
            super().__init__()
            self.norm1 = norm_layer(dim)
            self.token_mixer = Pooling(pool_size=pool_size)
            self.norm2 = norm_layer(dim)
            mlp_hidden_dim = int(dim * mlp_ratio)
            self.mlp = ConvMlp(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)
            self.drop_path = nn.Identity()
            self.use_layer_scale = use_layer_scale
            if use_layer_scale:
                self.layer_scale_1 = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)
                self.layer_scale_2 = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)

        def forward(self, x):
            if self.use_layer_scale:
                x = x + self.drop_path(self.layer_scale_1.unsqueeze(-1).unsqueeze(-1) * self.token_mixer(self.norm1(x)))
                x = x + self.drop_path(self.layer_scale_2.unsqueeze(-1).unsqueeze(-1) * self.mlp(self.norm2(x)))
            else:
                x = x + self.drop_path(self.token_mixer(self.norm1(x)))
                x = x + self.drop_path(self.mlp(self.norm2(x)))
            return x

    class Affine(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.alpha = nn.Parameter(torch.ones(dim))
            self.beta = nn.Parameter(torch.zeros(dim))

        def forward(self, x):
            return self.alpha * x + self.beta

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop = nn.Dropout(drop)

        def forward(self, x):
            return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))

    class layers_scale_mlp_blocks(nn.Module):
        def __init__(self, dim, drop=0., drop_path=0., act_layer=nn.GELU, init_values=1e-4, num_patches=196):
            super().__init__()
            self.norm1 = Affine(dim)
            self.attn = nn.Linear(num_patches, num_patches)
            self.drop_path = nn.Identity()
            self.norm2 = Affine(dim)
            self.mlp = Mlp(in_features=dim, hidden_features=int(4.0 * dim), act_layer=act_layer, drop=drop)
            self.gamma_1 = nn.Parameter(init_values * torch.ones((dim)), requires_grad=True)
            self.gamma_2 = nn.Parameter(init_values * torch.ones((dim)), requires_grad=True)

        def forward(self, x):
            x = x + self.drop_path(self.gamma_1 * self.attn(self.norm1(x).transpose(1,2)).transpose(1,2))
            x = x + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x)))
            return x

    class SpatialGatingUnit(nn.Module):
        def __init__(self, d_ffn, seq_len):
            super().__init__()
            self.norm = nn.LayerNorm(d_ffn)
            self.spatial_proj = nn.Conv1d(seq_len, seq_len, kernel_size=1)
            nn.init.constant_(self.spatial_proj.bias, 1.0)

        def forward(self, x):
            u, v = x.chunk(2, dim=-1)
            v = self.norm(v)
            v = self.spatial_proj(v)
            out = u * v
            return out

    class gMLPBlock(nn.Module):
        def __init__(self, d_model, d_ffn, seq_len):
            super().__init__()
            self.norm = nn.LayerNorm(d_model)
            self.channel_proj1 = nn.Linear(d_model, d_ffn * 2)
            self.channel_proj2 = nn.Linear(d_ffn, d_model)
            self.sgu = SpatialGatingUnit(d_ffn, seq_len)

        def forward(self, x):
            residual = x
            x = self.norm(x)
            x = F.gelu(self.channel_proj1(x))
            x = self.sgu(x)
            x = self.channel_proj2(x)
            out = x + residual
            return out

    class Net(nn.Module):
        def __init__(self, dim=8, num_classes=10):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, dim, kernel_size=2, stride=2)
            self.poolformer = PoolFormerBlock(dim, mlp_ratio=2, layer_scale_init_value=0.1)
            self.resmlp = layers_scale_mlp_blocks(dim, init_values=0.1, num_patches=16)
            self.gmlp = gMLPBlock(dim, 8, seq_len=16)
            self.norm = Affine(dim)
            self.head = nn.Linear(dim, num_classes)

        def forward(self, x):
            x = self.poolformer(self.patch_embed(x))
            x = x.flatten(2).transpose(1, 2)
            x = self.gmlp(self.resmlp(x))
            x = self.norm(x)
            return self.head(x.mean(dim=1))

    model = Net()
    init = load(m, model, state)
    rng = np.random.default_rng(7)
    x, y = torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 10, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = [model.gmlp.sgu.spatial_proj.bias.sum().item()]
    for step in range(1):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_metaformers():
    compare(metaformers)


# (i) vlukiyanov/pt-dec's Deep Embedded Clustering: an autoencoder pretrained by MSE, KMeans on the encoder's features
# (sklearn's, here a few numpy Lloyd steps), the centres copied in place into model.state_dict()["assignment.cluster_centers"]
# under torch.no_grad() (a state_dict's tensors share the parameters' memory), ClusterAssignment's Student's t by
# batch.unsqueeze(1) - self.cluster_centers and a float power, target_distribution by (batch ** 2) / torch.sum(batch, 0)
# and .t() twice, nn.KLDivLoss(size_average=False) on output.log(), optimizer.step(closure=None), delta_label by
# (predicted != predicted_previous), and cluster_accuracy's best matching of clusters to labels (scipy's
# linear_sum_assignment, here by permutations)
def dec(m, state=None):
    torch, nn = m.torch, m.nn
    Parameter = nn.Parameter

    class ClusterAssignment(nn.Module):
        def __init__(self, cluster_number, embedding_dimension, alpha=1.0, cluster_centers=None):
            super(ClusterAssignment, self).__init__()
            self.embedding_dimension = embedding_dimension
            self.cluster_number = cluster_number
            self.alpha = alpha
            if cluster_centers is None:
                initial_cluster_centers = torch.zeros(self.cluster_number, self.embedding_dimension, dtype=torch.float)
                nn.init.xavier_uniform_(initial_cluster_centers)
            else:
                initial_cluster_centers = cluster_centers
            self.cluster_centers = Parameter(initial_cluster_centers)

        def forward(self, batch):
            norm_squared = torch.sum((batch.unsqueeze(1) - self.cluster_centers) ** 2, 2)
            numerator = 1.0 / (1.0 + (norm_squared / self.alpha))
            power = float(self.alpha + 1) / 2
            numerator = numerator ** power
            return numerator / torch.sum(numerator, dim=1, keepdim=True)

    class DEC(nn.Module):
        def __init__(self, cluster_number, hidden_dimension, encoder, alpha=1.0):
            super(DEC, self).__init__()
            self.encoder = encoder
            self.hidden_dimension = hidden_dimension
            self.cluster_number = cluster_number
            self.alpha = alpha
            self.assignment = ClusterAssignment(cluster_number, self.hidden_dimension, alpha)

        def forward(self, batch):
            return self.assignment(self.encoder(batch))

    def target_distribution(batch):
        weight = (batch ** 2) / torch.sum(batch, 0)
        return (weight.t() / torch.sum(weight, 1)).t()

    def kmeans_fit_predict(features, k, steps=5):
        centres = features[:k].copy()
        for _ in range(steps):
            labels = ((features[:, None] - centres) ** 2).sum(-1).argmin(1)
            centres = np.stack([features[labels == j].mean(0) if (labels == j).any() else centres[j] for j in range(k)])
        return labels, centres

    def cluster_accuracy(y_true, y_predicted, cluster_number=None):
        if cluster_number is None:
            cluster_number = max(y_predicted.max(), y_true.max()) + 1
        count_matrix = np.zeros((cluster_number, cluster_number), dtype=np.int64)
        for i in range(y_predicted.size):
            count_matrix[y_predicted[i], y_true[i]] += 1
        best = max(itertools.permutations(range(cluster_number)),
                   key=lambda cols: count_matrix[range(cluster_number), list(cols)].sum())
        return count_matrix[range(cluster_number), list(best)].sum() / y_predicted.size

    encoder = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 3))
    decoder = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 10))
    model = DEC(cluster_number=3, hidden_dimension=3, encoder=encoder)
    init = load(m, nn.ModuleList([model, decoder]), state)
    rng = np.random.default_rng(8)
    actual = rng.integers(0, 3, 12)
    data = torch.tensor(normal(rng, 12, 10) * 0.3 + np.eye(3, 10, dtype=np.float32)[actual] * 2)
    losses = []
    ae_optimizer = torch.optim.SGD(list(encoder.parameters()) + list(decoder.parameters()), lr=0.1, momentum=0.9)
    for epoch in range(2):
        loss = nn.functional.mse_loss(decoder(encoder(data)), data)
        ae_optimizer.zero_grad()
        loss.backward()
        ae_optimizer.step(closure=None)
        losses.append(loss.item())
    features = []
    for batch in data.split(6):
        features.append(model.encoder(batch).detach().cpu())
    predicted, centres = kmeans_fit_predict(torch.cat(features).numpy(), 3)
    predicted_previous = torch.tensor(np.copy(predicted), dtype=torch.long)
    accuracy = cluster_accuracy(actual, predicted)
    cluster_centers = torch.tensor(centres, dtype=torch.float, requires_grad=True)
    with torch.no_grad():
        model.state_dict()["assignment.cluster_centers"].copy_(cluster_centers)
    losses += [accuracy, model.assignment.cluster_centers.sum().item()]
    loss_function = nn.KLDivLoss(size_average=False)
    optimizer = torch.optim.SGD(params=model.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(2):
        for batch in data.split(6):
            output = model(batch)
            target = target_distribution(output).detach()
            loss = loss_function(output.log(), target) / output.shape[0]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step(closure=None)
            losses.append(float(loss.item()))
        predicted = model(data).max(1)[1]
        delta_label = float((predicted != predicted_previous).float().sum().item()) / predicted_previous.shape[0]
        predicted_previous = predicted
        losses += [delta_label, cluster_accuracy(actual, predicted.cpu().numpy())]
    return init, losses + summary(model.parameters())


def test_dec():
    compare(dec)


def linear_sum_assignment(cost):
    """scipy.optimize.linear_sum_assignment for a few rows and columns, by trying every assignment: (rows, cols)
    sorted by row, as scipy's."""
    cost = np.asarray(cost)
    n_rows, n_cols = cost.shape
    rows = min(itertools.permutations(range(n_rows), n_cols), key=lambda rows: cost[list(rows), range(n_cols)].sum())
    order = np.argsort(rows)
    return np.asarray(rows)[order], np.arange(n_cols)[order]


# (j) facebookresearch/detr's set prediction loss: util/box_ops (box_cxcywh_to_xyxy by unbind and stack,
# generalized_box_iou with its asserts by .all()), the HungarianMatcher under a @torch.no_grad() method (costs by
# softmax columns out_prob[:, tgt_ids], torch.cdist(p=1) and -GIoU, C.view(bs, num_queries, -1).cpu() split by target
# sizes, linear_sum_assignment on each piece, torch.as_tensor(i, dtype=torch.int64)), SetCriterion (an empty_weight
# buffer with empty_weight[-1] = eos_coef, _get_src_permutation_idx by torch.full_like, target_classes[idx] = ...,
# cross-entropy over src_logits.transpose(1, 2) with class weights, cardinality under no_grad, L1 and GIoU box losses
# by torch.diag; aux_loss off: the auxiliary outputs' second matching doubled the time under the interpreter), engine's
# weighted sum and clip_grad_norm_, on a tiny DETR head (query embeddings repeated over the batch, two decoder layers
# reduced to Linears of the pooled image tokens, DETR's MLP with .sigmoid())
def detr_criterion(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def box_cxcywh_to_xyxy(x):
        x_c, y_c, w, h = x.unbind(-1)
        b = [(x_c - 0.5 * w), (y_c - 0.5 * h), (x_c + 0.5 * w), (y_c + 0.5 * h)]
        return torch.stack(b, dim=-1)

    def box_area(boxes):
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])

    def box_iou(boxes1, boxes2):
        area1 = box_area(boxes1)
        area2 = box_area(boxes2)
        lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
        rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
        wh = (rb - lt).clamp(min=0)
        inter = wh[:, :, 0] * wh[:, :, 1]
        union = area1[:, None] + area2 - inter
        iou = inter / union
        return iou, union

    def generalized_box_iou(boxes1, boxes2):
        assert (boxes1[:, 2:] >= boxes1[:, :2]).all()
        assert (boxes2[:, 2:] >= boxes2[:, :2]).all()
        iou, union = box_iou(boxes1, boxes2)
        lt = torch.min(boxes1[:, None, :2], boxes2[:, :2])
        rb = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
        wh = (rb - lt).clamp(min=0)
        area = wh[:, :, 0] * wh[:, :, 1]
        return iou - (area - union) / area

    @torch.no_grad()
    def accuracy(output, target, topk=(1,)):
        if target.numel() == 0:
            return [torch.zeros([], device=output.device)]
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].view(-1).float().sum(0)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res

    class HungarianMatcher(nn.Module):
        def __init__(self, cost_class: float = 1, cost_bbox: float = 1, cost_giou: float = 1):
            super().__init__()
            self.cost_class = cost_class
            self.cost_bbox = cost_bbox
            self.cost_giou = cost_giou
            assert cost_class != 0 or cost_bbox != 0 or cost_giou != 0, "all costs cant be 0"

        @torch.no_grad()
        def forward(self, outputs, targets):
            bs, num_queries = outputs["pred_logits"].shape[:2]
            out_prob = outputs["pred_logits"].flatten(0, 1).softmax(-1)
            out_bbox = outputs["pred_boxes"].flatten(0, 1)
            tgt_ids = torch.cat([v["labels"] for v in targets])
            tgt_bbox = torch.cat([v["boxes"] for v in targets])
            cost_class = -out_prob[:, tgt_ids]
            cost_bbox = torch.cdist(out_bbox, tgt_bbox, p=1)
            cost_giou = -generalized_box_iou(box_cxcywh_to_xyxy(out_bbox), box_cxcywh_to_xyxy(tgt_bbox))
            C = self.cost_bbox * cost_bbox + self.cost_class * cost_class + self.cost_giou * cost_giou
            C = C.view(bs, num_queries, -1).cpu()
            sizes = [len(v["boxes"]) for v in targets]
            indices = [linear_sum_assignment(c[i]) for i, c in enumerate(C.split(sizes, -1))]
            matched.append([v for i, j in indices for v in i.tolist() + j.tolist()])
            return [(torch.as_tensor(i, dtype=torch.int64), torch.as_tensor(j, dtype=torch.int64)) for i, j in indices]

    class SetCriterion(nn.Module):
        def __init__(self, num_classes, matcher, weight_dict, eos_coef, losses):
            super().__init__()
            self.num_classes = num_classes
            self.matcher = matcher
            self.weight_dict = weight_dict
            self.eos_coef = eos_coef
            self.losses = losses
            empty_weight = torch.ones(self.num_classes + 1)
            empty_weight[-1] = self.eos_coef
            self.register_buffer('empty_weight', empty_weight)

        def loss_labels(self, outputs, targets, indices, num_boxes, log=True):
            assert 'pred_logits' in outputs
            src_logits = outputs['pred_logits']
            idx = self._get_src_permutation_idx(indices)
            target_classes_o = torch.cat([t["labels"][J] for t, (_, J) in zip(targets, indices)])
            target_classes = torch.full(src_logits.shape[:2], self.num_classes, dtype=torch.int64, device=src_logits.device)
            target_classes[idx] = target_classes_o
            loss_ce = F.cross_entropy(src_logits.transpose(1, 2), target_classes, self.empty_weight)
            losses = {'loss_ce': loss_ce}
            if log:
                losses['class_error'] = 100 - accuracy(src_logits[idx], target_classes_o)[0]
            return losses

        @torch.no_grad()
        def loss_cardinality(self, outputs, targets, indices, num_boxes):
            pred_logits = outputs['pred_logits']
            device = pred_logits.device
            tgt_lengths = torch.as_tensor([len(v["labels"]) for v in targets], device=device)
            card_pred = (pred_logits.argmax(-1) != pred_logits.shape[-1] - 1).sum(1)
            card_err = F.l1_loss(card_pred.float(), tgt_lengths.float())
            return {'cardinality_error': card_err}

        def loss_boxes(self, outputs, targets, indices, num_boxes):
            assert 'pred_boxes' in outputs
            idx = self._get_src_permutation_idx(indices)
            src_boxes = outputs['pred_boxes'][idx]
            target_boxes = torch.cat([t['boxes'][i] for t, (_, i) in zip(targets, indices)], dim=0)
            loss_bbox = F.l1_loss(src_boxes, target_boxes, reduction='none')
            losses = {}
            losses['loss_bbox'] = loss_bbox.sum() / num_boxes
            loss_giou = 1 - torch.diag(generalized_box_iou(box_cxcywh_to_xyxy(src_boxes), box_cxcywh_to_xyxy(target_boxes)))
            losses['loss_giou'] = loss_giou.sum() / num_boxes
            return losses

        def _get_src_permutation_idx(self, indices):
            batch_idx = torch.cat([torch.full_like(src, i) for i, (src, _) in enumerate(indices)])
            src_idx = torch.cat([src for (src, _) in indices])
            return batch_idx, src_idx

        def get_loss(self, loss, outputs, targets, indices, num_boxes, **kwargs):
            loss_map = {'labels': self.loss_labels, 'cardinality': self.loss_cardinality, 'boxes': self.loss_boxes}
            assert loss in loss_map, f'do you really want to compute {loss} loss?'
            return loss_map[loss](outputs, targets, indices, num_boxes, **kwargs)

        def forward(self, outputs, targets):
            outputs_without_aux = {k: v for k, v in outputs.items() if k != 'aux_outputs'}
            indices = self.matcher(outputs_without_aux, targets)
            num_boxes = sum(len(t["labels"]) for t in targets)
            num_boxes = torch.as_tensor([num_boxes], dtype=torch.float, device=next(iter(outputs.values())).device)
            num_boxes = torch.clamp(num_boxes / 1, min=1).item()
            losses = {}
            for loss in self.losses:
                losses.update(self.get_loss(loss, outputs, targets, indices, num_boxes))
            if 'aux_outputs' in outputs:
                for i, aux_outputs in enumerate(outputs['aux_outputs']):
                    indices = self.matcher(aux_outputs, targets)
                    for loss in self.losses:
                        kwargs = {}
                        if loss == 'labels':
                            kwargs = {'log': False}
                        l_dict = self.get_loss(loss, aux_outputs, targets, indices, num_boxes, **kwargs)
                        l_dict = {k + f'_{i}': v for k, v in l_dict.items()}
                        losses.update(l_dict)
            return losses

    class MLP(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
            super().__init__()
            self.num_layers = num_layers
            h = [hidden_dim] * (num_layers - 1)
            self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = F.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
            return x

    class TinyDETR(nn.Module):
        def __init__(self, num_classes, num_queries, hidden_dim=8, aux_loss=True):
            super().__init__()
            self.num_queries = num_queries
            self.backbone = nn.Conv2d(3, hidden_dim, 2, 2)
            self.query_embed = nn.Embedding(num_queries, hidden_dim)
            self.decoder = nn.ModuleList([nn.Linear(hidden_dim, hidden_dim) for _ in range(2)])
            self.class_embed = nn.Linear(hidden_dim, num_classes + 1)
            self.bbox_embed = MLP(hidden_dim, hidden_dim, 4, 3)
            self.aux_loss = aux_loss

        def forward(self, samples):
            memory = self.backbone(samples).flatten(2).permute(0, 2, 1)
            tgt = self.query_embed.weight.unsqueeze(0).repeat(samples.shape[0], 1, 1)
            hs = []
            for layer in self.decoder:
                tgt = tgt + F.relu(layer(tgt + memory.mean(1, keepdim=True)))
                hs.append(tgt)
            hs = torch.stack(hs)
            outputs_class = self.class_embed(hs)
            outputs_coord = self.bbox_embed(hs).sigmoid()
            out = {'pred_logits': outputs_class[-1], 'pred_boxes': outputs_coord[-1]}
            if self.aux_loss:
                out['aux_outputs'] = [{'pred_logits': a, 'pred_boxes': b}
                                      for a, b in zip(outputs_class[:-1], outputs_coord[:-1])]
            return out

    matched = []  # the matcher's assignments, compared
    num_classes = 3
    model = TinyDETR(num_classes, num_queries=4, aux_loss=False)
    init = load(m, model, state)
    matcher = HungarianMatcher(cost_class=1, cost_bbox=5, cost_giou=2)
    weight_dict = {'loss_ce': 1, 'loss_bbox': 5, 'loss_giou': 2}
    weight_dict.update({k + '_0': v for k, v in weight_dict.items()})
    criterion = SetCriterion(num_classes, matcher=matcher, weight_dict=weight_dict, eos_coef=0.1,
                             losses=['labels', 'boxes', 'cardinality'])
    rng = np.random.default_rng(9)
    samples = torch.tensor(normal(rng, 2, 3, 8, 8))
    targets = []
    for n in (2, 1):
        centres, sizes = rng.uniform(0.3, 0.7, (n, 2)), rng.uniform(0.1, 0.4, (n, 2))
        targets.append({"labels": torch.tensor(rng.integers(0, num_classes, n)),
                        "boxes": torch.tensor(np.concatenate([centres, sizes], 1).astype(np.float32))})
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    losses = []
    for step in range(1):
        outputs = model(samples)
        loss_dict = criterion(outputs, targets)
        weight_dict = criterion.weight_dict
        total = sum(loss_dict[k] * weight_dict[k] for k in loss_dict.keys() if k in weight_dict)
        loss_dict_unscaled = {f'{k}_unscaled': v.item() for k, v in loss_dict.items()}
        optimizer.zero_grad()
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        losses += [total.item()] + [loss_dict_unscaled[k] for k in sorted(loss_dict_unscaled)]
    return init, losses + sum(matched, []) + summary(model.parameters())


def test_detr_criterion():
    compare(detr_criterion)


# (k) eriklindernoren/PyTorch-GAN's acgan.py: an argparse `opt`, `cuda = True if torch.cuda.is_available() else False`
# and the FloatTensor / LongTensor aliases (torch.cuda's where cuda), weights_init_normal applied by classname.find
# ("Conv") != -1 with torch.nn.init.normal_(m.weight.data, 0.0, 0.02) and constant_ on BatchNorm2d's bias.data,
# nn.BatchNorm2d(128, 0.8) (0.8 is eps, positionally), nn.Upsample(scale_factor=2), discriminator blocks of Conv2d,
# LeakyReLU(0.2, inplace=True), Dropout2d (opt.dropout: 0.25 in the repository, 0 here: the two runs' masks would
# differ) and BatchNorm2d(out_filters, 0.8), an nn.Softmax() without dim (dim 1 for 2-D input, with torch's warning),
# Variable(FloatTensor(batch_size, 1).fill_(1.0), requires_grad=False), z from np.random.normal (seeded alike), labels
# by LongTensor(np.random.randint(...)), the auxiliary loss, and d_acc by np.argmax over np.concatenate of
# .data.cpu().numpy()
def acgan(m, state=None):
    torch, nn = m.torch, m.nn
    Variable = torch.autograd.Variable
    import argparse
    opt = argparse.Namespace(n_epochs=1, batch_size=4, lr=0.0002, b1=0.5, b2=0.999, latent_dim=6, n_classes=3,
                             img_size=8, channels=1, dropout=0.0)
    cuda = True if torch.cuda.is_available() else False

    def weights_init_normal(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
        elif classname.find("BatchNorm2d") != -1:
            torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
            torch.nn.init.constant_(m.bias.data, 0.0)

    class Generator(nn.Module):
        def __init__(self):
            super(Generator, self).__init__()
            self.label_emb = nn.Embedding(opt.n_classes, opt.latent_dim)
            self.init_size = opt.img_size // 4  # Initial size before upsampling
            self.l1 = nn.Sequential(nn.Linear(opt.latent_dim, 8 * self.init_size ** 2))
            self.conv_blocks = nn.Sequential(
                nn.BatchNorm2d(8),
                nn.Upsample(scale_factor=2),
                nn.Conv2d(8, 8, 3, stride=1, padding=1),
                nn.BatchNorm2d(8, 0.8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Upsample(scale_factor=2),
                nn.Conv2d(8, 4, 3, stride=1, padding=1),
                nn.BatchNorm2d(4, 0.8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(4, opt.channels, 3, stride=1, padding=1),
                nn.Tanh(),
            )

        def forward(self, noise, labels):
            gen_input = torch.mul(self.label_emb(labels), noise)
            out = self.l1(gen_input)
            out = out.view(out.shape[0], 8, self.init_size, self.init_size)
            img = self.conv_blocks(out)
            return img

    class Discriminator(nn.Module):
        def __init__(self):
            super(Discriminator, self).__init__()

            def discriminator_block(in_filters, out_filters, bn=True):
                """Returns layers of each discriminator block"""
                block = [nn.Conv2d(in_filters, out_filters, 3, 2, 1), nn.LeakyReLU(0.2, inplace=True), nn.Dropout2d(opt.dropout)]
                if bn:
                    block.append(nn.BatchNorm2d(out_filters, 0.8))
                return block

            self.conv_blocks = nn.Sequential(
                *discriminator_block(opt.channels, 4, bn=False),
                *discriminator_block(4, 8),
            )
            ds_size = opt.img_size // 2 ** 2
            self.adv_layer = nn.Sequential(nn.Linear(8 * ds_size ** 2, 1), nn.Sigmoid())
            self.aux_layer = nn.Sequential(nn.Linear(8 * ds_size ** 2, opt.n_classes), nn.Softmax())

        def forward(self, img):
            out = self.conv_blocks(img)
            out = out.view(out.shape[0], -1)
            validity = self.adv_layer(out)
            label = self.aux_layer(out)
            return validity, label

    adversarial_loss = torch.nn.BCELoss()
    auxiliary_loss = torch.nn.CrossEntropyLoss()
    generator = Generator()
    discriminator = Discriminator()
    if cuda:
        generator.cuda()
        discriminator.cuda()
        adversarial_loss.cuda()
        auxiliary_loss.cuda()
    generator.apply(weights_init_normal)
    discriminator.apply(weights_init_normal)
    init = load(m, nn.ModuleList([generator, discriminator]), state)
    assert discriminator.conv_blocks[-1].eps == 0.8
    optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
    FloatTensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    LongTensor = torch.cuda.LongTensor if cuda else torch.LongTensor
    rng = np.random.default_rng(10)
    dataloader = [(torch.tensor(np.tanh(normal(rng, 4, 1, 8, 8))), torch.tensor(rng.integers(0, 3, 4)))]
    np.random.seed(1)
    losses = []
    for epoch in range(opt.n_epochs):
        for i, (imgs, labels) in enumerate(dataloader):
            batch_size = imgs.shape[0]
            valid = Variable(FloatTensor(batch_size, 1).fill_(1.0), requires_grad=False)
            fake = Variable(FloatTensor(batch_size, 1).fill_(0.0), requires_grad=False)
            real_imgs = Variable(imgs.type(FloatTensor))
            labels = Variable(labels.type(LongTensor))
            optimizer_G.zero_grad()
            z = Variable(FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim))))
            gen_labels = Variable(LongTensor(np.random.randint(0, opt.n_classes, batch_size)))
            gen_imgs = generator(z, gen_labels)
            validity, pred_label = discriminator(gen_imgs)
            g_loss = 0.5 * (adversarial_loss(validity, valid) + auxiliary_loss(pred_label, gen_labels))
            g_loss.backward()
            optimizer_G.step()
            optimizer_D.zero_grad()
            real_pred, real_aux = discriminator(real_imgs)
            d_real_loss = (adversarial_loss(real_pred, valid) + auxiliary_loss(real_aux, labels)) / 2
            fake_pred, fake_aux = discriminator(gen_imgs.detach())
            d_fake_loss = (adversarial_loss(fake_pred, fake) + auxiliary_loss(fake_aux, gen_labels)) / 2
            d_loss = (d_real_loss + d_fake_loss) / 2
            pred = np.concatenate([real_aux.data.cpu().numpy(), fake_aux.data.cpu().numpy()], axis=0)
            gt = np.concatenate([labels.data.cpu().numpy(), gen_labels.data.cpu().numpy()], axis=0)
            d_acc = np.mean(np.argmax(pred, axis=1) == gt)
            d_loss.backward()
            optimizer_D.step()
            losses += [d_loss.item(), 100 * d_acc, g_loss.item()]
    return init, losses + summary(list(generator.parameters()) + list(discriminator.parameters()))


def test_acgan():
    compare(acgan)


# (l) normalisation layers as their repositories write them: joe-siyuan-qiao's Weight Standardization (a Conv2d subclass
# whose forward standardises self.weight by chained mean(dim, keepdim=True) and view(...).std(dim=1)), yukkyo's
# FilterResponseNorm with TLU (nn.Parameter(torch.Tensor(*shape)) filled by reset_parameters, an eps parameter frozen by
# requires_grad_(False), torch.rsqrt, torch.max of two tensors), EvoNorm S0 and B0 (group_std by torch.var over a tuple
# of dims, a running_var buffer updated by copy_ under no_grad, torch.isnan(var).any()), and David Page's
# GhostBatchNorm (a BatchNorm2d subclass re-registering running_mean and running_var at num_splits times the width,
# F.batch_norm on input.view(-1, C * num_splits, H, W) with weight.repeat(num_splits), train(False) collating the
# statistics by view and mean(dim=0).repeat, eval by slices), a step of SGD then an eval-mode loss
def norm_zoo(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class WSConv2d(nn.Conv2d):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True):
            super(WSConv2d, self).__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)

        def forward(self, x):
            weight = self.weight
            weight_mean = weight.mean(dim=1, keepdim=True).mean(dim=2, keepdim=True).mean(dim=3, keepdim=True)
            weight = weight - weight_mean
            std = weight.view(weight.size(0), -1).std(dim=1).view(-1, 1, 1, 1) + 1e-5
            weight = weight / std.expand_as(weight)
            return F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    class FilterResponseNormNd(nn.Module):
        def __init__(self, ndim, num_features, eps=1e-6, learnable_eps=False):
            assert ndim in [3, 4, 5], 'FilterResponseNorm only supports 3d, 4d or 5d inputs.'
            super(FilterResponseNormNd, self).__init__()
            shape = (1, num_features) + (1, ) * (ndim - 2)
            self.eps = nn.Parameter(torch.ones(*shape) * eps)
            if not learnable_eps:
                self.eps.requires_grad_(False)
            self.gamma = nn.Parameter(torch.Tensor(*shape))
            self.beta = nn.Parameter(torch.Tensor(*shape))
            self.tau = nn.Parameter(torch.Tensor(*shape))
            self.reset_parameters()

        def forward(self, x):
            avg_dims = tuple(range(2, x.dim()))
            nu2 = torch.pow(x, 2).mean(dim=avg_dims, keepdim=True)
            x = x * torch.rsqrt(nu2 + torch.abs(self.eps))
            return torch.max(self.gamma * x + self.beta, self.tau)

        def reset_parameters(self):
            nn.init.ones_(self.gamma)
            nn.init.zeros_(self.beta)
            nn.init.zeros_(self.tau)

    def group_std(x, groups=32, eps=1e-5):
        N, C, H, W = x.size()
        x = torch.reshape(x, (N, groups, C // groups, H, W))
        var = torch.var(x, dim=(2, 3, 4), keepdim=True).expand_as(x)
        return torch.reshape(torch.sqrt(var + eps), (N, C, H, W))

    def instance_std(x, eps=1e-5):
        var = torch.var(x, dim=(2, 3), keepdim=True).expand_as(x)
        if torch.isnan(var).any():
            var = torch.zeros(var.shape)
        return torch.sqrt(var + eps)

    class EvoNorm2D(nn.Module):
        def __init__(self, input, non_linear=True, version='S0', affine=True, momentum=0.9, eps=1e-5, groups=32):
            super(EvoNorm2D, self).__init__()
            self.non_linear = non_linear
            self.version = version
            self.affine = affine
            self.momentum = momentum
            self.eps = eps
            self.groups = groups
            self.insize = input
            if self.affine:
                self.gamma = nn.Parameter(torch.ones(1, self.insize, 1, 1))
                self.beta = nn.Parameter(torch.zeros(1, self.insize, 1, 1))
                if self.non_linear:
                    self.v = nn.Parameter(torch.ones(1, self.insize, 1, 1))
            self.register_buffer('running_var', torch.ones(1, self.insize, 1, 1))

        def forward(self, x):
            if self.version == 'S0':
                num = x * torch.sigmoid(self.v * x)
                return num / group_std(x, groups=self.groups, eps=self.eps) * self.gamma + self.beta
            if self.training:
                var = torch.var(x, dim=(0, 2, 3), unbiased=False, keepdim=True).reshape(1, x.size(1), 1, 1)
                with torch.no_grad():
                    self.running_var.copy_(self.momentum * self.running_var + (1 - self.momentum) * var)
            else:
                var = self.running_var
            den = torch.max((var + self.eps).sqrt(), self.v * x + instance_std(x, eps=self.eps))
            return x / den * self.gamma + self.beta

    class GhostBatchNorm(nn.BatchNorm2d):
        def __init__(self, num_features, num_splits, **kw):
            super().__init__(num_features, **kw)
            self.num_splits = num_splits
            self.register_buffer('running_mean', torch.zeros(num_features * self.num_splits))
            self.register_buffer('running_var', torch.ones(num_features * self.num_splits))

        def train(self, mode=True):
            if (self.training is True) and (mode is False):  # lazily collate stats when we are going to use them
                self.running_mean = torch.mean(self.running_mean.view(self.num_splits, self.num_features), dim=0).repeat(self.num_splits)
                self.running_var = torch.mean(self.running_var.view(self.num_splits, self.num_features), dim=0).repeat(self.num_splits)
            return super().train(mode)

        def forward(self, input):
            N, C, H, W = input.shape
            if self.training or not self.track_running_stats:
                return F.batch_norm(
                    input.view(-1, C * self.num_splits, H, W), self.running_mean, self.running_var,
                    self.weight.repeat(self.num_splits), self.bias.repeat(self.num_splits),
                    True, self.momentum, self.eps).view(N, C, H, W)
            else:
                return F.batch_norm(
                    input, self.running_mean[:self.num_features], self.running_var[:self.num_features],
                    self.weight, self.bias, False, self.momentum, self.eps)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = WSConv2d(3, 4, 3, padding=1, bias=False)
            self.gbn = GhostBatchNorm(4, num_splits=2)
            self.conv2 = WSConv2d(4, 4, 3, padding=1, bias=False)
            self.frn = FilterResponseNormNd(4, 4)
            self.evo_s0 = EvoNorm2D(4, groups=2)
            self.evo_b0 = EvoNorm2D(4, version='B0')
            self.fc = nn.Linear(4, 10)

        def forward(self, x):
            x = F.relu(self.gbn(self.conv1(x)))
            x = self.evo_b0(self.evo_s0(self.frn(self.conv2(x))))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    model = Net()
    init = load(m, model, state)
    assert model.gbn.running_mean.shape == (8,) and not model.frn.eps.requires_grad
    rng = np.random.default_rng(11)
    x, y = torch.tensor(normal(rng, 4, 3, 6, 6)), torch.tensor(rng.integers(0, 10, 4))
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9)
    losses = []
    for step in range(1):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append(F.cross_entropy(model(x), y).item())
    losses += model.gbn.running_mean.tolist() + model.gbn.running_var.tolist() + model.evo_b0.running_var.flatten().tolist()
    return init, losses + summary(model.parameters())


def test_norm_zoo():
    compare(norm_zoo)


# (m) NVlabs/DeepInversion: a teacher's BatchNorm statistics inverted into images. DeepInversionFeatureHook's forward hook
# (input[0].permute(1, 0, 2, 3).contiguous().view([nch, -1]).var(1, unbiased=False), torch.norm of the running
# statistics' .data against the batch's, hook.remove() in close()), get_image_prior_losses (four shifted differences,
# torch.norm and abs().mean()), lr_cosine_policy's closure setting param_group['lr'], random jitter by torch.roll(shifts=
# (off1, off2), dims=(2, 3)) and torch.flip(dims=(3,)) drawn by Python's random (seeded alike), Adam(betas=[0.5, 0.9]) on
# the inputs, the first BN's multiplier, clip() of each channel of inputs.data by torch.clamp into the normalised [0, 1]
# range, inputs.data reassigned, and the best inputs kept by .data.clone()
def deep_inversion(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim

    class DeepInversionFeatureHook():
        def __init__(self, module):
            self.hook = module.register_forward_hook(self.hook_fn)

        def hook_fn(self, module, input, output):
            nch = input[0].shape[1]
            mean = input[0].mean([0, 2, 3])
            var = input[0].permute(1, 0, 2, 3).contiguous().view([nch, -1]).var(1, unbiased=False)
            r_feature = torch.norm(module.running_var.data - var, 2) + torch.norm(module.running_mean.data - mean, 2)
            self.r_feature = r_feature

        def close(self):
            self.hook.remove()

    def get_image_prior_losses(inputs_jit):
        diff1 = inputs_jit[:, :, :, :-1] - inputs_jit[:, :, :, 1:]
        diff2 = inputs_jit[:, :, :-1, :] - inputs_jit[:, :, 1:, :]
        diff3 = inputs_jit[:, :, 1:, :-1] - inputs_jit[:, :, :-1, 1:]
        diff4 = inputs_jit[:, :, :-1, :-1] - inputs_jit[:, :, 1:, 1:]
        loss_var_l2 = torch.norm(diff1) + torch.norm(diff2) + torch.norm(diff3) + torch.norm(diff4)
        loss_var_l1 = (diff1.abs() / 255.0).mean() + (diff2.abs() / 255.0).mean() + (
                diff3.abs() / 255.0).mean() + (diff4.abs() / 255.0).mean()
        loss_var_l1 = loss_var_l1 * 255.0
        return loss_var_l1, loss_var_l2

    def lr_policy(lr_fn):
        def _alr(optimizer, iteration, epoch):
            lr = lr_fn(iteration, epoch)
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr
        return _alr

    def lr_cosine_policy(base_lr, warmup_length, epochs):
        def _lr_fn(iteration, epoch):
            if epoch < warmup_length:
                lr = base_lr * (epoch + 1) / warmup_length
            else:
                e = epoch - warmup_length
                es = epochs - warmup_length
                lr = 0.5 * (1 + np.cos(np.pi * e / es)) * base_lr
            return lr
        return lr_policy(_lr_fn)

    def clip(image_tensor, use_fp16=False):
        mean = np.array([0.485, 0.456, 0.406])
        std = np.array([0.229, 0.224, 0.225])
        for c in range(3):
            m, s = mean[c], std[c]
            image_tensor[:, c] = torch.clamp(image_tensor[:, c], -m / s, (1 - m) / s)
        return image_tensor

    net_teacher = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                                nn.Conv2d(4, 4, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                                nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
    init = load(m, net_teacher, state)
    rng = np.random.default_rng(12)
    with torch.no_grad():  # running statistics of a "trained" teacher: one pass over data
        net_teacher[1].momentum = net_teacher[4].momentum = 1.0
        net_teacher(torch.tensor(normal(rng, 8, 3, 6, 6)) * 0.5 + 0.2)
    net_teacher.eval()
    loss_r_feature_layers = []
    for module in net_teacher.modules():
        if isinstance(module, nn.BatchNorm2d):
            loss_r_feature_layers.append(DeepInversionFeatureHook(module))
    bs, lr, iterations = 2, 0.25, 2
    inputs = torch.tensor(normal(rng, bs, 3, 6, 6), requires_grad=True)
    targets = torch.LongTensor([1, 7])
    optimizer = optim.Adam([inputs], lr=lr, betas=[0.5, 0.9], eps=1e-8)
    lr_scheduler = lr_cosine_policy(lr, 1, iterations)
    criterion = nn.CrossEntropyLoss()
    first_bn_multiplier, bn_reg_scale, var_scale_l2, var_scale_l1, l2_scale = 10., 0.05, 1e-4, 0.0, 1e-5
    random.seed(4)
    best_cost = 1e4
    losses = []
    for iteration_loc in range(iterations):
        lr_scheduler(optimizer, iteration_loc, iteration_loc)
        off1 = random.randint(-1, 1)
        off2 = random.randint(-1, 1)
        inputs_jit = torch.roll(inputs, shifts=(off1, off2), dims=(2, 3))
        flip = random.random() > 0.5
        if flip:
            inputs_jit = torch.flip(inputs_jit, dims=(3,))
        optimizer.zero_grad()
        net_teacher.zero_grad()
        outputs = net_teacher(inputs_jit)
        loss = criterion(outputs, targets)
        loss_var_l1, loss_var_l2 = get_image_prior_losses(inputs_jit)
        rescale = [first_bn_multiplier] + [1. for _ in range(len(loss_r_feature_layers) - 1)]
        loss_r_feature = sum([mod.r_feature * rescale[idx] for (idx, mod) in enumerate(loss_r_feature_layers)])
        loss_aux = var_scale_l2 * loss_var_l2 + var_scale_l1 * loss_var_l1 + bn_reg_scale * loss_r_feature + \
            l2_scale * torch.norm(inputs_jit, 2)
        loss = loss + loss_aux
        loss.backward()
        optimizer.step()
        inputs.data = clip(inputs.data)
        losses += [loss.item(), loss_r_feature.item(), optimizer.param_groups[0]['lr']]
        if best_cost > loss.item() or iteration_loc == 0:
            best_inputs = inputs.data.clone()
            best_cost = loss.item()
    for hook in loss_r_feature_layers:
        hook.close()
    net_teacher(best_inputs)
    assert not net_teacher[1]._forward_hooks
    return init, losses + summary([best_inputs, inputs]) + summary(net_teacher.parameters())


def test_deep_inversion():
    compare(deep_inversion)


# (n) activations from their papers' repositories: Mish (x * torch.tanh(F.softplus(x))), megvii's FReLU (a depthwise
# 3x3 and BatchNorm, torch.max of the two tensors), nmaac's AconC and MetaAconC (p1 and p2 as torch.randn parameters,
# a switching factor from x.mean(dim=2, keepdims=True).mean(dim=3, keepdims=True) through 1x1 convolutions and
# BatchNorms), and DY-ReLU B (lambdas and init_v buffers from torch.Tensor(list).float(), torch.mean(x, axis=-1),
# 2 * sigmoid - 1, x.permute(2, 3, 0, 1).unsqueeze(-1) times coefficients, torch.max(output, dim=-1)[0])
def activation_zoo(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Mish(nn.Module):
        def forward(self, x):
            return x * torch.tanh(F.softplus(x))

    class FReLU(nn.Module):
        def __init__(self, in_channels):
            super().__init__()
            self.conv_frelu = nn.Conv2d(in_channels, in_channels, 3, 1, 1, groups=in_channels)
            self.bn_frelu = nn.BatchNorm2d(in_channels)

        def forward(self, x):
            x1 = self.conv_frelu(x)
            x1 = self.bn_frelu(x1)
            x = torch.max(x, x1)
            return x

    class AconC(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.p1 = nn.Parameter(torch.randn(1, width, 1, 1))
            self.p2 = nn.Parameter(torch.randn(1, width, 1, 1))
            self.beta = nn.Parameter(torch.ones(1, width, 1, 1))

        def forward(self, x):
            return (self.p1 * x - self.p2 * x) * torch.sigmoid(self.beta * (self.p1 * x - self.p2 * x)) + self.p2 * x

    class MetaAconC(nn.Module):
        def __init__(self, width, r=16):
            super().__init__()
            self.fc1 = nn.Conv2d(width, max(r, width // r), kernel_size=1, stride=1, bias=True)
            self.bn1 = nn.BatchNorm2d(max(r, width // r))
            self.fc2 = nn.Conv2d(max(r, width // r), width, kernel_size=1, stride=1, bias=True)
            self.bn2 = nn.BatchNorm2d(width)
            self.p1 = nn.Parameter(torch.randn(1, width, 1, 1))
            self.p2 = nn.Parameter(torch.randn(1, width, 1, 1))

        def forward(self, x):
            beta = torch.sigmoid(
                self.bn2(self.fc2(self.bn1(self.fc1(x.mean(dim=2, keepdims=True).mean(dim=3, keepdims=True))))))
            return (self.p1 * x - self.p2 * x) * torch.sigmoid(beta * (self.p1 * x - self.p2 * x)) + self.p2 * x

    class DyReLU(nn.Module):
        def __init__(self, channels, reduction=4, k=2, conv_type='2d'):
            super(DyReLU, self).__init__()
            self.channels = channels
            self.k = k
            self.conv_type = conv_type
            assert self.conv_type in ['1d', '2d']
            self.fc1 = nn.Linear(channels, channels // reduction)
            self.relu = nn.ReLU(inplace=True)
            self.fc2 = nn.Linear(channels // reduction, 2*k)
            self.sigmoid = nn.Sigmoid()
            self.register_buffer('lambdas', torch.Tensor([1.]*k + [0.5]*k).float())
            self.register_buffer('init_v', torch.Tensor([1.] + [0.]*(2*k - 1)).float())

        def get_relu_coefs(self, x):
            theta = torch.mean(x, axis=-1)
            if self.conv_type == '2d':
                theta = torch.mean(theta, axis=-1)
            theta = self.fc1(theta)
            theta = self.relu(theta)
            theta = self.fc2(theta)
            theta = 2 * self.sigmoid(theta) - 1
            return theta

    class DyReLUB(DyReLU):
        def __init__(self, channels, reduction=4, k=2, conv_type='2d'):
            super(DyReLUB, self).__init__(channels, reduction, k, conv_type)
            self.fc2 = nn.Linear(channels // reduction, 2*k*channels)

        def forward(self, x):
            assert x.shape[1] == self.channels
            theta = self.get_relu_coefs(x)
            relu_coefs = theta.view(-1, self.channels, 2*self.k) * self.lambdas + self.init_v
            x_perm = x.permute(2, 3, 0, 1).unsqueeze(-1)
            output = x_perm * relu_coefs[:, :, :self.k] + relu_coefs[:, :, self.k:]
            result = torch.max(output, dim=-1)[0].permute(2, 3, 0, 1)
            return result

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), Mish(), FReLU(4), AconC(4), MetaAconC(4, r=2),
                          DyReLUB(4, reduction=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
    init = load(m, model, state)
    rng = np.random.default_rng(13)
    x, y = torch.tensor(normal(rng, 2, 3, 5, 5)), torch.tensor(rng.integers(0, 10, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = [model[5].lambdas.sum().item()]
    for step in range(1):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_activation_zoo():
    compare(activation_zoo)


# (o) classification metrics as torchmetrics' functional code writes them (v0.11), on a logistic regression's
# predictions after two steps: _binary_clf_curve (torch.argsort(descending=True), the one-argument torch.where of
# preds[1:] - preds[:-1], F.pad of int64 indices with value=, cumsum, fps = 1 + threshold_idxs - tps) under no_grad,
# the ROC by torch.cat of zeros and ones, AUROC by torch.trapz(y, x, dim=-1), the precision-recall curve (reversed() of
# tensors, torch.where(tps == tps[-1])[0][0].item() into a slice) and average precision; a multiclass confusion matrix
# by bincount with precision, recall and F1 from diag() and sums (torch.nan_to_num), IoU, accuracy and Cohen's kappa
def metrics(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def _binary_clf_curve(preds, target, sample_weights=None, pos_label=1):
        with torch.no_grad():
            if preds.ndim > target.ndim:
                preds = preds[:, 0]
            desc_score_indices = torch.argsort(preds, descending=True)
            preds = preds[desc_score_indices]
            target = target[desc_score_indices]
            weight = 1.0 if sample_weights is None else sample_weights[desc_score_indices]
            distinct_value_indices = torch.where(preds[1:] - preds[:-1])[0]
            threshold_idxs = F.pad(distinct_value_indices, [0, 1], value=target.size(0) - 1)
            target = (target == pos_label).to(torch.long)
            tps = torch.cumsum(target * weight, dim=0)[threshold_idxs]
            if sample_weights is not None:
                fps = torch.cumsum((1 - target) * weight, dim=0)[threshold_idxs]
            else:
                fps = 1 + threshold_idxs - tps
            return fps, tps, preds[threshold_idxs]

    def binary_roc(preds, target):
        fps, tps, thresholds = _binary_clf_curve(preds, target)
        tps = torch.cat([torch.zeros(1, dtype=tps.dtype, device=tps.device), tps])
        fps = torch.cat([torch.zeros(1, dtype=fps.dtype, device=fps.device), fps])
        thresholds = torch.cat([torch.ones(1, dtype=thresholds.dtype, device=thresholds.device), thresholds])
        if fps[-1] <= 0:
            fpr = torch.zeros_like(thresholds)
        else:
            fpr = fps / fps[-1]
        tpr = tps / tps[-1]
        return fpr, tpr, thresholds

    def _auc_compute_without_check(x, y, direction, axis=-1):
        with torch.no_grad():
            auc_ = torch.trapz(y, x, dim=axis) * direction
        return auc_

    def binary_precision_recall_curve(preds, target):
        fps, tps, thresholds = _binary_clf_curve(preds, target)
        precision = tps / (tps + fps)
        recall = tps / tps[-1]
        last_ind = torch.where(tps == tps[-1])[0][0]
        sl = slice(0, last_ind.item() + 1)
        precision = torch.cat([reversed(precision[sl]), torch.ones(1, dtype=precision.dtype, device=precision.device)])
        recall = torch.cat([reversed(recall[sl]), torch.zeros(1, dtype=recall.dtype, device=recall.device)])
        thresholds = reversed(thresholds[sl]).detach().clone()
        return precision, recall, thresholds

    def multiclass_confusion_matrix(preds, target, num_classes):
        unique_mapping = target.to(torch.long) * num_classes + preds.to(torch.long)
        bins = torch.bincount(unique_mapping, minlength=num_classes ** 2)
        return bins.reshape(num_classes, num_classes)

    model = nn.Linear(5, 3)
    init = load(m, model, state)
    rng = np.random.default_rng(14)
    x, y = torch.tensor(normal(rng, 16, 5)), torch.tensor(rng.integers(0, 3, 16))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for step in range(2):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        probs = model(x).softmax(dim=1)
    scores, binary = (probs[:, 0] * 4).round() / 4, (y == 0).long()  # rounded: tied scores
    fpr, tpr, thresholds = binary_roc(scores, binary)
    auroc = _auc_compute_without_check(fpr, tpr, 1.0)
    precision, recall, pr_thresholds = binary_precision_recall_curve(scores, binary)
    average_precision = -torch.sum((recall[1:] - recall[:-1]) * precision[:-1])
    losses += fpr.tolist() + tpr.tolist() + thresholds.tolist() + [auroc.item(), average_precision.item()]
    losses += precision.tolist() + recall.tolist() + pr_thresholds.tolist()
    confmat = multiclass_confusion_matrix(probs.argmax(dim=1), y, 3)
    tp = confmat.diag()
    fp = confmat.sum(0) - tp
    fn = confmat.sum(1) - tp
    prec = tp / (tp + fp)
    rec = tp / (tp + fn)
    f1 = torch.nan_to_num(2 * prec * rec / (prec + rec), nan=0.0)
    iou = tp / (tp + fp + fn)
    n = confmat.sum()
    observed = tp.sum() / n
    expected = (confmat.sum(0) * confmat.sum(1)).sum() / n ** 2
    kappa = (observed - expected) / (1 - expected)
    weighted_f1 = (f1 * confmat.sum(1) / n).sum()
    losses += confmat.flatten().tolist() + f1.tolist() + iou.tolist() + [observed.item(), kappa.item(), weighted_f1.item()]
    return init, losses + summary(model.parameters())


def test_metrics():
    compare(metrics)


# (p) tomgoldstein/loss-landscape's net_plotter and evaluation: get_weights as [p.data for ...], random directions
# (torch.randn, here numpy's) filter-normalised by iterating over a tensor's rows and d.mul_(w.norm()/(d.norm() + 1e-10)),
# biases and BatchNorm zeroed by d.fill_(0) where d.dim() <= 1, set_weights assigning p.data = w +
# torch.Tensor(d).type(type(w)) (and p.data.copy_(w.type(type(p.data))) to restore), eval_loss under torch.no_grad()
# summing loss.item()*batch_size with torch.max(outputs.data, 1), over np.meshgrid coordinates; then
# atgambardella/pytorch-es's evolution strategies (perturbed and antithetic copies by load_state_dict, in-place
# `v += torch.from_numpy(sigma*eps).float()` on state_dict().values() with np.random.normal(0, 1, v.size()), rank-based
# fitness_shaping by math.log(x, 2), the update re-drawing each seed's noise) and the same step on
# parameters_to_vector / vector_to_parameters
def landscape_es(m, state=None):
    torch, nn = m.torch, m.nn
    Variable = torch.autograd.Variable
    parameters_to_vector, vector_to_parameters = nn.utils.parameters_to_vector, nn.utils.vector_to_parameters

    def get_weights(net):
        return [p.data for p in net.parameters()]

    def set_weights(net, weights, directions=None, step=None):
        if directions is None:
            for (p, w) in zip(net.parameters(), weights):
                p.data.copy_(w.type(type(p.data)))
        else:
            assert step is not None, 'If a direction is specified then step must be specified as well'
            if len(directions) == 2:
                dx = directions[0]
                dy = directions[1]
                changes = [d0*step[0] + d1*step[1] for (d0, d1) in zip(dx, dy)]
            else:
                changes = [d*step for d in directions[0]]
            for (p, w, d) in zip(net.parameters(), weights, changes):
                p.data = w + torch.Tensor(d).type(type(w))

    def get_random_weights(weights, rng):
        return [torch.tensor(normal(rng, *w.size())) for w in weights]

    def normalize_direction(direction, weights, norm='filter'):
        if norm == 'filter':
            for d, w in zip(direction, weights):
                d.mul_(w.norm()/(d.norm() + 1e-10))
        elif norm == 'layer':
            direction.mul_(weights.norm()/direction.norm())

    def normalize_directions_for_weights(direction, weights, norm='filter', ignore='biasbn'):
        assert(len(direction) == len(weights))
        for d, w in zip(direction, weights):
            if d.dim() <= 1:
                if ignore == 'biasbn':
                    d.fill_(0)
                else:
                    d.copy_(w)
            else:
                normalize_direction(d, w, norm)

    def eval_loss(net, criterion, loader):
        correct = 0
        total_loss = 0
        total = 0
        net.eval()
        with torch.no_grad():
            for batch_idx, (inputs, targets) in enumerate(loader):
                batch_size = inputs.size(0)
                total += batch_size
                inputs = Variable(inputs)
                targets = Variable(targets)
                outputs = net(inputs)
                loss = criterion(outputs, targets)
                total_loss += loss.item()*batch_size
                _, predicted = torch.max(outputs.data, 1)
                correct += predicted.eq(targets).sum().item()
        return total_loss/total, 100.*correct/total

    class ES(nn.Module):
        def __init__(self):
            super(ES, self).__init__()
            self.fc1 = nn.Linear(4, 6)
            self.fc2 = nn.Linear(6, 3)

        def forward(self, x):
            return self.fc2(torch.tanh(self.fc1(x)))

        def es_params(self):
            return [(k, v) for k, v in zip(self.state_dict().keys(), self.state_dict().values())]

    net = ES()
    init = load(m, net, state)
    rng = np.random.default_rng(15)
    data = [(torch.tensor(normal(rng, 4, 4)), torch.tensor(rng.integers(0, 3, 4))) for _ in range(2)]
    criterion = nn.CrossEntropyLoss()
    w = get_weights(net)
    xdirection = get_random_weights(w, rng)
    normalize_directions_for_weights(xdirection, w)
    ydirection = get_random_weights(w, rng)
    normalize_directions_for_weights(ydirection, w, ignore='none')
    d = [xdirection, ydirection]
    xcoordinates, ycoordinates = np.linspace(-1, 1, 3), np.linspace(-1, 1, 2)
    xcoord_mesh, ycoord_mesh = np.meshgrid(xcoordinates, ycoordinates)
    coords = np.c_[xcoord_mesh.ravel(), ycoord_mesh.ravel()]
    losses = []
    for coord in coords:
        set_weights(net, w, d, coord)
        losses += list(eval_loss(net, criterion, data))
    set_weights(net, w)
    losses += [eval_loss(net, criterion, data)[0], xdirection[0].norm().item(), ydirection[1].sum().item()]

    sigma, lr, n = 0.05, 0.1, 4

    def perturb_model(model, random_seed):
        new_model, anti_model = ES(), ES()
        new_model.load_state_dict(model.state_dict())
        anti_model.load_state_dict(model.state_dict())
        np.random.seed(random_seed)
        for (k, v), (anti_k, anti_v) in zip(new_model.es_params(), anti_model.es_params()):
            eps = np.random.normal(0, 1, v.size())
            v += torch.from_numpy(sigma*eps).float()
            anti_v += torch.from_numpy(sigma*-eps).float()
        return [new_model, anti_model]

    def fitness_shaping(returns):
        sorted_returns_backwards = sorted(returns)[::-1]
        lamb = len(returns)
        shaped_returns = []
        denom = sum([max(0, math.log(lamb/2 + 1, 2) - math.log(sorted_returns_backwards.index(r) + 1, 2))
                     for r in returns])
        for r in returns:
            num = max(0, math.log(lamb/2 + 1, 2) - math.log(sorted_returns_backwards.index(r) + 1, 2))
            shaped_returns.append(num/denom + 1/lamb)
        return shaped_returns

    random_seeds, returns, neg_list = [], [], []
    for i in range(n // 2):
        seed = 100 + i
        for neg, model in zip((False, True), perturb_model(net, seed)):
            returns.append(-eval_loss(model, criterion, data)[0])
            random_seeds.append(seed)
            neg_list.append(neg)
    shaped_returns = fitness_shaping(returns)
    for i in range(n):
        np.random.seed(random_seeds[i])
        multiplier = -1 if neg_list[i] else 1
        reward = shaped_returns[i]
        for k, v in net.es_params():
            eps = np.random.normal(0, 1, v.size())
            v += torch.from_numpy(lr/(40*sigma) * (reward*multiplier*eps)).float()
    losses += returns + [eval_loss(net, criterion, data)[0]]
    flat = parameters_to_vector(net.parameters())
    noise = torch.tensor(normal(rng, 2, flat.numel()))
    fitness = []
    for eps in noise:
        vector_to_parameters(flat + sigma * eps, net.parameters())
        fitness.append(-eval_loss(net, criterion, data)[0])
    step = sum(f * eps for f, eps in zip(fitness, noise)) * (lr / (len(fitness) * sigma))
    vector_to_parameters(flat + step, net.parameters())
    losses += fitness + [float(flat.numel())]
    return init, losses + summary(net.parameters())


def test_landscape_es():
    compare(landscape_es)


# (q) harvardnlp's Annotated Transformer (2018), its training utilities around a one-layer model: subsequent_mask by
# np.triu(...).astype('uint8') and torch.from_numpy(...) == 0, Batch (src != pad).unsqueeze(-2), make_std_mask's
# tgt_mask & Variable(subsequent_mask(...).type_as(tgt_mask.data)), ntokens by .data.sum(), attention() with
# masked_fill(mask == 0, -1e9), PositionalEncoding's buffer, LabelSmoothing (x.data.clone().fill_(), scatter_ of the
# confidence, a pad column zeroed, torch.nonzero(target.data == padding_idx) with index_fill_(0, mask.squeeze(), 0.0),
# nn.KLDivLoss(size_average=False)), NoamOpt's rate set into param_groups, SimpleLossCompute returning
# loss.data.item() * norm, run_epoch's totals over data_gen's batches (np.random.randint, seeded alike), and
# greedy_decode (torch.ones(1, 1).fill_(start_symbol).type_as(src.data), torch.max(prob, dim=1), next_word.data[0],
# .fill_(next_word) of a 0-d tensor); the keys' biases frozen, as test_ported_scripts13.py's
def annotated_transformer(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Variable = torch.autograd.Variable

    def subsequent_mask(size):
        attn_shape = (1, size, size)
        subsequent_mask = np.triu(np.ones(attn_shape), k=1).astype('uint8')
        return torch.from_numpy(subsequent_mask) == 0

    def attention(query, key, value, mask=None, dropout=None):
        d_k = query.size(-1)
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        p_attn = F.softmax(scores, dim=-1)
        if dropout is not None:
            p_attn = dropout(p_attn)
        return torch.matmul(p_attn, value), p_attn

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout, max_len=5000):
            super(PositionalEncoding, self).__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0)
            self.register_buffer('pe', pe)

        def forward(self, x):
            x = x + Variable(self.pe[:, :x.size(1)], requires_grad=False)
            return self.dropout(x)

    class Attn(nn.Module):
        def __init__(self, d_model):
            super().__init__()
            self.linears = nn.ModuleList([copy.deepcopy(nn.Linear(d_model, d_model)) for _ in range(4)])

        def forward(self, query, key, value, mask=None):
            query, key, value = [l(x) for l, x in zip(self.linears, (query, key, value))]
            x, self.attn = attention(query, key, value, mask=mask)
            return self.linears[-1](x)

    class Generator(nn.Module):
        def __init__(self, d_model, vocab):
            super(Generator, self).__init__()
            self.proj = nn.Linear(d_model, vocab)

        def forward(self, x):
            return F.log_softmax(self.proj(x), dim=-1)

    class EncoderDecoder(nn.Module):
        def __init__(self, vocab, d_model=8):
            super().__init__()
            self.src_embed = nn.Sequential(nn.Embedding(vocab, d_model), PositionalEncoding(d_model, 0.0, max_len=20))
            self.tgt_embed = nn.Sequential(nn.Embedding(vocab, d_model), PositionalEncoding(d_model, 0.0, max_len=20))
            self.self_attn, self.src_attn = Attn(d_model), Attn(d_model)
            self.norm = nn.LayerNorm(d_model)
            self.generator = Generator(d_model, vocab)

        def encode(self, src, src_mask):
            return self.norm(self.src_embed(src))

        def decode(self, memory, src_mask, tgt, tgt_mask):
            x = self.tgt_embed(tgt)
            x = x + self.self_attn(x, x, x, tgt_mask)
            return self.norm(x + self.src_attn(x, memory, memory, src_mask))

        def forward(self, src, tgt, src_mask, tgt_mask):
            return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    class Batch:
        def __init__(self, src, trg=None, pad=0):
            self.src = src
            self.src_mask = (src != pad).unsqueeze(-2)
            if trg is not None:
                self.trg = trg[:, :-1]
                self.trg_y = trg[:, 1:]
                self.trg_mask = self.make_std_mask(self.trg, pad)
                self.ntokens = (self.trg_y != pad).data.sum()

        @staticmethod
        def make_std_mask(tgt, pad):
            tgt_mask = (tgt != pad).unsqueeze(-2)
            tgt_mask = tgt_mask & Variable(subsequent_mask(tgt.size(-1)).type_as(tgt_mask.data))
            return tgt_mask

    class NoamOpt:
        def __init__(self, model_size, factor, warmup, optimizer):
            self.optimizer = optimizer
            self._step = 0
            self.warmup = warmup
            self.factor = factor
            self.model_size = model_size
            self._rate = 0

        def step(self):
            self._step += 1
            rate = self.rate()
            for p in self.optimizer.param_groups:
                p['lr'] = rate
            self._rate = rate
            self.optimizer.step()

        def rate(self, step=None):
            if step is None:
                step = self._step
            return self.factor * (self.model_size ** (-0.5) * min(step ** (-0.5), step * self.warmup ** (-1.5)))

    class LabelSmoothing(nn.Module):
        def __init__(self, size, padding_idx, smoothing=0.0):
            super(LabelSmoothing, self).__init__()
            self.criterion = nn.KLDivLoss(size_average=False)
            self.padding_idx = padding_idx
            self.confidence = 1.0 - smoothing
            self.smoothing = smoothing
            self.size = size
            self.true_dist = None

        def forward(self, x, target):
            assert x.size(1) == self.size
            true_dist = x.data.clone()
            true_dist.fill_(self.smoothing / (self.size - 2))
            true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
            true_dist[:, self.padding_idx] = 0
            mask = torch.nonzero(target.data == self.padding_idx)
            if mask.dim() > 0:
                true_dist.index_fill_(0, mask.squeeze(), 0.0)
            self.true_dist = true_dist
            return self.criterion(x, Variable(true_dist, requires_grad=False))

    class SimpleLossCompute:
        def __init__(self, generator, criterion, opt=None):
            self.generator = generator
            self.criterion = criterion
            self.opt = opt

        def __call__(self, x, y, norm):
            x = self.generator(x)
            loss = self.criterion(x.contiguous().view(-1, x.size(-1)), y.contiguous().view(-1)) / norm
            loss.backward()
            if self.opt is not None:
                self.opt.step()
                self.opt.optimizer.zero_grad()
            return loss.data.item() * norm

    def data_gen(V, batch, nbatches):
        for i in range(nbatches):
            data = torch.from_numpy(np.random.randint(1, V, size=(batch, 5)))
            data[:, 0] = 1
            data[0, -2:] = 0  # padding at the end of one sentence
            src = Variable(data, requires_grad=False)
            tgt = Variable(data, requires_grad=False)
            yield Batch(src, tgt, 0)

    def run_epoch(data_iter, model, loss_compute):
        total_tokens = 0
        total_loss = 0
        for i, batch in enumerate(data_iter):
            out = model.forward(batch.src, batch.trg, batch.src_mask, batch.trg_mask)
            loss = loss_compute(out, batch.trg_y, batch.ntokens)
            total_loss += loss
            total_tokens += batch.ntokens
        return total_loss / total_tokens

    def greedy_decode(model, src, src_mask, max_len, start_symbol):
        memory = model.encode(src, src_mask)
        ys = torch.ones(1, 1).fill_(start_symbol).type_as(src.data)
        for i in range(max_len-1):
            out = model.decode(memory, src_mask, Variable(ys), Variable(subsequent_mask(ys.size(1)).type_as(src.data)))
            prob = model.generator(out[:, -1])
            _, next_word = torch.max(prob, dim=1)
            next_word = next_word.data[0]
            ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=1)
        return ys

    V = 6
    model = EncoderDecoder(V)
    init = load(m, model, state)
    for attn in (model.self_attn, model.src_attn):  # the key's bias, which softmax ignores: its gradient is rounding,, which softmax ignores: its
        attn.linears[1].bias.requires_grad_(False)  # which Adam would scale up
    crit = LabelSmoothing(size=V, padding_idx=0, smoothing=0.1)
    model_opt = NoamOpt(8, 1, 4, torch.optim.Adam(model.parameters(), lr=0, betas=(0.9, 0.98), eps=1e-9))
    np.random.seed(5)
    losses = [model_opt.rate(1), model_opt.rate(10)]
    model.train()
    losses.append(float(run_epoch(data_gen(V, 3, 1), model, SimpleLossCompute(model.generator, crit, model_opt))))
    losses += [crit.true_dist.sum().item(), model_opt._rate]
    model.eval()
    src = Variable(torch.LongTensor([[1, 2, 3, 4, 5]]))
    src_mask = Variable(torch.ones(1, 1, 5))
    losses += greedy_decode(model, src, src_mask, max_len=3, start_symbol=1).flatten().tolist()
    return init, losses + summary(model.parameters())


def test_annotated_transformer():
    compare(annotated_transformer)


# (r) learning with noisy labels as HanxunH/Active-Passive-Losses and shengliu66/ELR write the losses: symmetric label
# noise drawn by numpy, SCELoss (torch.clamp of softmax and of one_hot(...).float(), -1*torch.sum(pred *
# torch.log(label_one_hot), dim=1)), GeneralizedCrossEntropy (torch.pow of the true class's probability, q), NCE and
# MAE with their scales, soft bootstrapping, Patrini's forward correction (softmax @ T, T = (1 - noise) * torch.eye(n) +
# noise / (n - 1) * (1 - torch.eye(n)), nll_loss of its log), and ELR (a target buffer of the whole set updated by
# self.target[index] = beta * self.target[index] + ..., y_pred.data.detach(), ((1 - (target * y_pred).sum(dim=1)).log()
# ).mean()) indexed by the batch's dataset indices
def noisy_labels(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class SCELoss(torch.nn.Module):
        def __init__(self, alpha, beta, num_classes=10):
            super(SCELoss, self).__init__()
            self.alpha = alpha
            self.beta = beta
            self.num_classes = num_classes
            self.cross_entropy = torch.nn.CrossEntropyLoss()

        def forward(self, pred, labels):
            ce = self.cross_entropy(pred, labels)
            pred = F.softmax(pred, dim=1)
            pred = torch.clamp(pred, min=1e-7, max=1.0)
            label_one_hot = torch.nn.functional.one_hot(labels, self.num_classes).float()
            label_one_hot = torch.clamp(label_one_hot, min=1e-4, max=1.0)
            rce = (-1*torch.sum(pred * torch.log(label_one_hot), dim=1))
            loss = self.alpha * ce + self.beta * rce.mean()
            return loss

    class GeneralizedCrossEntropy(torch.nn.Module):
        def __init__(self, num_classes, q=0.7):
            super(GeneralizedCrossEntropy, self).__init__()
            self.q = q
            self.num_classes = num_classes

        def forward(self, pred, labels):
            pred = F.softmax(pred, dim=1)
            pred = torch.clamp(pred, min=1e-7, max=1.0)
            label_one_hot = torch.nn.functional.one_hot(labels, self.num_classes).float()
            gce = (1. - torch.pow(torch.sum(label_one_hot * pred, dim=1), self.q)) / self.q
            return gce.mean()

    class NormalizedCrossEntropy(torch.nn.Module):
        def __init__(self, num_classes, scale=1.0):
            super(NormalizedCrossEntropy, self).__init__()
            self.num_classes = num_classes
            self.scale = scale

        def forward(self, pred, labels):
            pred = F.log_softmax(pred, dim=1)
            label_one_hot = torch.nn.functional.one_hot(labels, self.num_classes).float()
            nce = -1 * torch.sum(label_one_hot * pred, dim=1) / (- pred.sum(dim=1))
            return self.scale * nce.mean()

    class MeanAbsoluteError(torch.nn.Module):
        def __init__(self, num_classes, scale=1.0):
            super(MeanAbsoluteError, self).__init__()
            self.num_classes = num_classes
            self.scale = scale

        def forward(self, pred, labels):
            pred = F.softmax(pred, dim=1)
            label_one_hot = torch.nn.functional.one_hot(labels, self.num_classes).float()
            mae = 1. - torch.sum(label_one_hot * pred, dim=1)
            return self.scale * mae.mean()

    def soft_bootstrapping(logits, labels, beta=0.95):
        ce = F.cross_entropy(logits, labels, reduction='none')
        bootstrap = -(F.softmax(logits, dim=1) * F.log_softmax(logits, dim=1)).sum(1)
        return (beta * ce + (1.0 - beta) * bootstrap).mean()

    class elr_loss(nn.Module):
        def __init__(self, num_examp, num_classes=10, lam=3, beta=0.7):
            super(elr_loss, self).__init__()
            self.num_classes = num_classes
            self.USE_CUDA = torch.cuda.is_available()
            self.target = torch.zeros(num_examp, self.num_classes).cuda() if self.USE_CUDA else torch.zeros(num_examp, self.num_classes)
            self.beta = beta
            self.lam = lam

        def forward(self, index, output, label):
            y_pred = F.softmax(output, dim=1)
            y_pred = torch.clamp(y_pred, 1e-4, 1.0-1e-4)
            y_pred_ = y_pred.data.detach()
            self.target[index] = self.beta * self.target[index] + (1-self.beta) * ((y_pred_)/(y_pred_).sum(dim=1,keepdim=True))
            ce_loss = F.cross_entropy(output, label)
            elr_reg = ((1-(self.target[index] * y_pred).sum(dim=1)).log()).mean()
            final_loss = ce_loss + self.lam * elr_reg
            return final_loss

    num_classes, noise = 4, 0.4
    rng = np.random.default_rng(16)
    clean = rng.integers(0, num_classes, 12)
    flip = rng.random(12) < noise
    noisy = np.where(flip, (clean + rng.integers(1, num_classes, 12)) % num_classes, clean)
    x, y = torch.tensor(normal(rng, 12, 6)), torch.tensor(noisy)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, num_classes))
    init = load(m, model, state)
    T = (1 - noise) * torch.eye(num_classes) + noise / (num_classes - 1) * (1 - torch.eye(num_classes))
    criteria = [SCELoss(alpha=0.1, beta=1.0, num_classes=num_classes), GeneralizedCrossEntropy(num_classes),
                lambda p, t: NormalizedCrossEntropy(num_classes, 1.0)(p, t) + MeanAbsoluteError(num_classes, 1.0)(p, t),
                soft_bootstrapping, lambda p, t: F.nll_loss(torch.log(F.softmax(p, dim=1) @ T), t)]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for criterion in criteria:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    elr = elr_loss(12, num_classes=num_classes)
    for epoch in range(2):
        for index in (torch.tensor([0, 2, 4, 6, 8, 10]), torch.tensor([1, 3, 5, 7, 9, 11])):
            loss = elr(index, model(x[index]), y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    losses += [elr.target.sum().item(), elr.target[3].max().item(), float((y != torch.tensor(clean)).sum())]
    return init, losses + summary(model.parameters())


def test_noisy_labels():
    compare(noisy_labels)


# (s) the PyTorch chatbot tutorial (Cornell movie dialogs, here a few made-up pairs): a Voc of word2index, batch2TrainData
# sorting pairs by length, zeroPadding by itertools.zip_longest(*l, fillvalue=PAD_token), binaryMatrix into
# torch.BoolTensor, EncoderRNN's bidirectional GRU over pack_padded_sequence with lengths on "cpu" and its two directions
# summed by slices, Luong's "general" Attn (torch.sum(hidden * energy, dim=2), .t(), softmax(dim=1).unsqueeze(1)),
# LuongAttnDecoderRNN (attn_weights.bmm(encoder_outputs.transpose(0, 1)), squeeze, cat, softmax outputs), maskNLLLoss
# (-torch.log(torch.gather(inp, 1, target.view(-1, 1)).squeeze(1)).masked_select(mask).mean()), train() with teacher
# forcing drawn by random.random() (seeded alike: off, so torch.LongTensor([[topi[i][0] for i in range(batch_size)]])
# of 0-d tensors), clip_grad_norm_ on each module, and GreedySearchDecoder (torch.zeros([0],
# dtype=torch.long) grown by torch.cat, torch.max(decoder_output, dim=1), torch.unsqueeze); the attention's bias frozen
def chatbot(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    PAD_token, SOS_token, EOS_token = 0, 1, 2

    class Voc:
        def __init__(self, name):
            self.name = name
            self.word2index = {}
            self.index2word = {PAD_token: "PAD", SOS_token: "SOS", EOS_token: "EOS"}
            self.num_words = 3

        def addSentence(self, sentence):
            for word in sentence.split(' '):
                self.addWord(word)

        def addWord(self, word):
            if word not in self.word2index:
                self.word2index[word] = self.num_words
                self.index2word[self.num_words] = word
                self.num_words += 1

    pairs = [["hi there", "hello"], ["how are you", "fine"], ["who are you", "me"]]
    voc = Voc("toy")
    for pair in pairs:
        voc.addSentence(pair[0])
        voc.addSentence(pair[1])

    def indexesFromSentence(voc, sentence):
        return [voc.word2index[word] for word in sentence.split(' ')] + [EOS_token]

    def zeroPadding(l, fillvalue=PAD_token):
        return list(itertools.zip_longest(*l, fillvalue=fillvalue))

    def binaryMatrix(l, value=PAD_token):
        m = []
        for i, seq in enumerate(l):
            m.append([])
            for token in seq:
                if token == PAD_token:
                    m[i].append(0)
                else:
                    m[i].append(1)
        return m

    def inputVar(l, voc):
        indexes_batch = [indexesFromSentence(voc, sentence) for sentence in l]
        lengths = torch.tensor([len(indexes) for indexes in indexes_batch])
        padList = zeroPadding(indexes_batch)
        padVar = torch.LongTensor(padList)
        return padVar, lengths

    def outputVar(l, voc):
        indexes_batch = [indexesFromSentence(voc, sentence) for sentence in l]
        max_target_len = max([len(indexes) for indexes in indexes_batch])
        padList = zeroPadding(indexes_batch)
        mask = binaryMatrix(padList)
        mask = torch.BoolTensor(mask)
        padVar = torch.LongTensor(padList)
        return padVar, mask, max_target_len

    def batch2TrainData(voc, pair_batch):
        pair_batch.sort(key=lambda x: len(x[0].split(" ")), reverse=True)
        input_batch, output_batch = [], []
        for pair in pair_batch:
            input_batch.append(pair[0])
            output_batch.append(pair[1])
        inp, lengths = inputVar(input_batch, voc)
        output, mask, max_target_len = outputVar(output_batch, voc)
        return inp, lengths, output, mask, max_target_len

    class EncoderRNN(nn.Module):
        def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
            super(EncoderRNN, self).__init__()
            self.n_layers = n_layers
            self.hidden_size = hidden_size
            self.embedding = embedding
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout),
                              bidirectional=True)

        def forward(self, input_seq, input_lengths, hidden=None):
            embedded = self.embedding(input_seq)
            packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
            outputs, hidden = self.gru(packed, hidden)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
            outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
            return outputs, hidden

    class Attn(nn.Module):
        def __init__(self, method, hidden_size):
            super(Attn, self).__init__()
            self.method = method
            if self.method not in ['dot', 'general', 'concat']:
                raise ValueError(self.method, "is not an appropriate attention method.")
            self.hidden_size = hidden_size
            if self.method == 'general':
                self.attn = nn.Linear(self.hidden_size, hidden_size)

        def dot_score(self, hidden, encoder_output):
            return torch.sum(hidden * encoder_output, dim=2)

        def general_score(self, hidden, encoder_output):
            energy = self.attn(encoder_output)
            return torch.sum(hidden * energy, dim=2)

        def forward(self, hidden, encoder_outputs):
            if self.method == 'general':
                attn_energies = self.general_score(hidden, encoder_outputs)
            else:
                attn_energies = self.dot_score(hidden, encoder_outputs)
            attn_energies = attn_energies.t()
            return F.softmax(attn_energies, dim=1).unsqueeze(1)

    class LuongAttnDecoderRNN(nn.Module):
        def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
            super(LuongAttnDecoderRNN, self).__init__()
            self.attn_model = attn_model
            self.hidden_size = hidden_size
            self.output_size = output_size
            self.n_layers = n_layers
            self.dropout = dropout
            self.embedding = embedding
            self.embedding_dropout = nn.Dropout(dropout)
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout))
            self.concat = nn.Linear(hidden_size * 2, hidden_size)
            self.out = nn.Linear(hidden_size, output_size)
            self.attn = Attn(attn_model, hidden_size)

        def forward(self, input_step, last_hidden, encoder_outputs):
            embedded = self.embedding(input_step)
            embedded = self.embedding_dropout(embedded)
            rnn_output, hidden = self.gru(embedded, last_hidden)
            attn_weights = self.attn(rnn_output, encoder_outputs)
            context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
            rnn_output = rnn_output.squeeze(0)
            context = context.squeeze(1)
            concat_input = torch.cat((rnn_output, context), 1)
            concat_output = torch.tanh(self.concat(concat_input))
            output = self.out(concat_output)
            output = F.softmax(output, dim=1)
            return output, hidden

    def maskNLLLoss(inp, target, mask):
        nTotal = mask.sum()
        crossEntropy = -torch.log(torch.gather(inp, 1, target.view(-1, 1)).squeeze(1))
        loss = crossEntropy.masked_select(mask).mean()
        loss = loss.to(device)
        return loss, nTotal.item()

    def train(input_variable, lengths, target_variable, mask, max_target_len, encoder, decoder, embedding,
              encoder_optimizer, decoder_optimizer, batch_size, clip, teacher_forcing_ratio=0.5):
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        input_variable = input_variable.to(device)
        target_variable = target_variable.to(device)
        mask = mask.to(device)
        lengths = lengths.to("cpu")
        loss = 0
        print_losses = []
        n_totals = 0
        encoder_outputs, encoder_hidden = encoder(input_variable, lengths)
        decoder_input = torch.LongTensor([[SOS_token for _ in range(batch_size)]])
        decoder_input = decoder_input.to(device)
        decoder_hidden = encoder_hidden[:decoder.n_layers]
        use_teacher_forcing = True if random.random() < teacher_forcing_ratio else False
        for t in range(max_target_len):
            decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
            if use_teacher_forcing:
                decoder_input = target_variable[t].view(1, -1)
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = torch.LongTensor([[topi[i][0] for i in range(batch_size)]])
                decoder_input = decoder_input.to(device)
            mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
            loss += mask_loss
            print_losses.append(mask_loss.item() * nTotal)
            n_totals += nTotal
        loss.backward()
        _ = nn.utils.clip_grad_norm_(encoder.parameters(), clip)
        _ = nn.utils.clip_grad_norm_(decoder.parameters(), clip)
        encoder_optimizer.step()
        decoder_optimizer.step()
        return sum(print_losses) / n_totals, use_teacher_forcing

    class GreedySearchDecoder(nn.Module):
        def __init__(self, encoder, decoder):
            super(GreedySearchDecoder, self).__init__()
            self.encoder = encoder
            self.decoder = decoder

        def forward(self, input_seq, input_length, max_length):
            encoder_outputs, encoder_hidden = self.encoder(input_seq, input_length)
            decoder_hidden = encoder_hidden[:decoder.n_layers]
            decoder_input = torch.ones(1, 1, device=device, dtype=torch.long) * SOS_token
            all_tokens = torch.zeros([0], device=device, dtype=torch.long)
            all_scores = torch.zeros([0], device=device)
            for _ in range(max_length):
                decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden, encoder_outputs)
                decoder_scores, decoder_input = torch.max(decoder_output, dim=1)
                all_tokens = torch.cat((all_tokens, decoder_input), dim=0)
                all_scores = torch.cat((all_scores, decoder_scores), dim=0)
                decoder_input = torch.unsqueeze(decoder_input, 0)
            return all_tokens, all_scores

    hidden_size = 4
    embedding = nn.Embedding(voc.num_words, hidden_size)
    encoder = EncoderRNN(hidden_size, embedding, 1, 0)
    decoder = LuongAttnDecoderRNN('general', embedding, hidden_size, voc.num_words, 1, dropout=0.0)
    init = load(m, nn.ModuleList([encoder, decoder]), state)
    decoder.attn.attn.bias.requires_grad_(False)  # the same for every position, which softmax ignores: its gradient
    encoder.train()                               # is rounding, which Adam would scale up
    decoder.train()
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.05)
    random.seed(8)  # its draw (0.96) leaves teacher forcing off: decoder inputs by topk
    losses = []
    for iteration in range(1):
        training_batch = batch2TrainData(voc, [random.choice(pairs) for _ in range(2)])
        input_variable, lengths, target_variable, mask, max_target_len = training_batch
        losses += list(train(input_variable, lengths, target_variable, mask, max_target_len, encoder, decoder,
                             embedding, encoder_optimizer, decoder_optimizer, 2, clip=50.0))
    encoder.eval()
    decoder.eval()
    searcher = GreedySearchDecoder(encoder, decoder)
    indexes_batch = [indexesFromSentence(voc, "hi there")]
    lengths = torch.tensor([len(indexes) for indexes in indexes_batch])
    input_batch = torch.LongTensor(indexes_batch).transpose(0, 1).to(device)
    tokens, scores = searcher(input_batch, lengths.to("cpu"), 1)
    losses += [voc.index2word[token.item()] == voc.index2word[t] for token, t in zip(tokens, tokens.tolist())]
    losses += tokens.tolist() + scores.tolist()
    return init, losses + summary(list(encoder.parameters()) + list(decoder.parameters()))


def test_chatbot():
    compare(chatbot)


# (t) message passing as PyTorch Geometric's layers do it, written out without the library (as its "Creating Message
# Passing Networks" tutorial and many course notebooks do): scatter() as new_zeros(...).scatter_add_ for sums and
# scatter_reduce_(reduce='mean' / 'amax', include_self=False), add_self_loops by torch.arange(N).view(1, -1).repeat(2, 1),
# gcn_norm (deg.pow_(-0.5), masked_fill_ of inf, deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]), GATConv
# (heads by view(-1, H, C), attention logits by (x * att).sum(-1), utils.softmax over each node's incoming edges with
# the max of src.detach() gathered back by index_select), SAGEConv's mean aggregation with F.normalize, and
# global_mean_pool over a batch vector (int(batch.max().item() + 1) graphs), a step of SGD on two graphs
def message_passing(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def broadcast(src, other, dim):
        if src.dim() == 1:
            for _ in range(0, dim):
                src = src.unsqueeze(0)
        for _ in range(src.dim(), other.dim()):
            src = src.unsqueeze(-1)
        return src.expand(other.size())

    def scatter(src, index, dim=0, dim_size=None, reduce='sum'):
        index = broadcast(index, src, dim)
        size = list(src.size())
        size[dim] = dim_size if dim_size is not None else int(index.max()) + 1
        if reduce == 'sum':
            return src.new_zeros(size).scatter_add_(dim, index, src)
        return src.new_zeros(size).scatter_reduce_(dim, index, src, reduce=reduce, include_self=False)

    def softmax(src, index, num_nodes, dim=0):
        src_max = scatter(src.detach(), index, dim, dim_size=num_nodes, reduce='amax')
        out = src - src_max.index_select(dim, index)
        out = out.exp()
        out_sum = scatter(out, index, dim, dim_size=num_nodes, reduce='sum') + 1e-16
        out_sum = out_sum.index_select(dim, index)
        return out / out_sum

    def add_self_loops(edge_index, num_nodes):
        loop_index = torch.arange(0, num_nodes, dtype=torch.long, device=edge_index.device)
        loop_index = loop_index.view(1, -1).repeat(2, 1)
        return torch.cat([edge_index, loop_index], dim=1)

    def gcn_norm(edge_index, num_nodes):
        edge_index = add_self_loops(edge_index, num_nodes)
        edge_weight = torch.ones((edge_index.size(1), ), device=edge_index.device)
        row, col = edge_index[0], edge_index[1]
        deg = scatter(edge_weight, col, dim=0, dim_size=num_nodes, reduce='sum')
        deg_inv_sqrt = deg.pow_(-0.5)
        deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float('inf'), 0)
        return edge_index, deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]

    class GCNConv(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.lin = nn.Linear(in_channels, out_channels, bias=False)
            self.bias = nn.Parameter(torch.zeros(out_channels))

        def forward(self, x, edge_index):
            edge_index, norm = gcn_norm(edge_index, x.size(0))
            x = self.lin(x)
            row, col = edge_index
            msg = norm.view(-1, 1) * x[row]
            return scatter(msg, col, dim=0, dim_size=x.size(0), reduce='sum') + self.bias

    class GATConv(nn.Module):
        def __init__(self, in_channels, out_channels, heads=2, negative_slope=0.2, dropout=0.0):
            super().__init__()
            self.heads, self.out_channels = heads, out_channels
            self.negative_slope, self.dropout = negative_slope, dropout
            self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)
            self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
            self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
            self.bias = nn.Parameter(torch.empty(heads * out_channels))
            nn.init.xavier_uniform_(self.att_src)
            nn.init.xavier_uniform_(self.att_dst)
            nn.init.zeros_(self.bias)

        def forward(self, x, edge_index):
            H, C = self.heads, self.out_channels
            N = x.size(0)
            x = self.lin(x).view(-1, H, C)
            alpha_src = (x * self.att_src).sum(dim=-1)
            alpha_dst = (x * self.att_dst).sum(dim=-1)
            edge_index = add_self_loops(edge_index, N)
            row, col = edge_index
            alpha = alpha_src[row] + alpha_dst[col]
            alpha = F.leaky_relu(alpha, self.negative_slope)
            alpha = softmax(alpha, col, num_nodes=N)
            alpha = F.dropout(alpha, p=self.dropout, training=self.training)
            msg = x[row] * alpha.unsqueeze(-1)
            out = scatter(msg, col, dim=0, dim_size=N, reduce='sum')
            return out.view(-1, H * C) + self.bias

    class SAGEConv(nn.Module):
        def __init__(self, in_channels, out_channels, normalize=True):
            super().__init__()
            self.normalize = normalize
            self.lin_l = nn.Linear(in_channels, out_channels)
            self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

        def forward(self, x, edge_index):
            row, col = edge_index
            aggr = scatter(x[row], col, dim=0, dim_size=x.size(0), reduce='mean')
            out = self.lin_l(aggr) + self.lin_r(x)
            if self.normalize:
                out = F.normalize(out, p=2., dim=-1)
            return out

    def global_mean_pool(x, batch):
        size = int(batch.max().item() + 1)
        return scatter(x, batch, dim=0, dim_size=size, reduce='mean')

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(3, 4)
            self.conv2 = GATConv(4, 2, heads=2)
            self.conv3 = SAGEConv(4, 4)
            self.lin = nn.Linear(4, 2)

        def forward(self, x, edge_index, batch):
            x = F.relu(self.conv1(x, edge_index))
            x = F.elu(self.conv2(x, edge_index))
            x = self.conv3(x, edge_index)
            return self.lin(global_mean_pool(x, batch))

    model = Net()
    init = load(m, model, state)
    rng = np.random.default_rng(17)
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (5, 6), (6, 7), (7, 8)]  # a 5-cycle and a 4-path
    edge_index = torch.tensor(edges, dtype=torch.long).t().contiguous()
    edge_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    x = torch.tensor(normal(rng, 9, 3))
    batch = torch.tensor([0] * 5 + [1] * 4)
    y = torch.tensor([0, 1])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    losses = []
    for step in range(1):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index, batch)
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        losses += [loss.item()] + out.flatten().tolist()
    return init, losses + summary(model.parameters())


def test_message_passing():
    compare(message_passing)
