"""Textbook and course code: Dive into Deep Learning's chapters with their inline helpers (softmax
regression, an MLP and dropout from scratch, weight decay by hand, LeNet with BatchNorm written from
scratch, NiN's and GoogLeNet's blocks through a train_ch6 loop with its Accumulator, the builders'
guide's MySequential, tied layers, LazyLinear and file IO), PyTorch's "Learn the Basics" quickstart
(train and test loops, a saved and loaded state_dict, inference_mode), "Deep Learning with PyTorch"
(real data as tensors: a uint8 image batch, the wine and bike tables; the thermometer; birds versus
airplanes), CS231n's PyTorch notebook, a Kaggle loop (early stopping on the validation loss,
ReduceLROnPlateau, clip_grad_norm_, tqdm, random_split with a generator, ConcatDataset, Subset,
class weights, top-k accuracy, confusion matrices by bincount and by index_put_), a Lightning-style
module with its own tiny Trainer, a fastai one-cycle loop by hand (OneCycleLR cycling SGD's
momentum and Adam's betas), and tabular regression and classification (standardised numpy
features, embeddings of categorical columns, MSE, L1, SmoothL1, BCEWithLogitsLoss with pos_weight),
written from memory in their sources' styles and ported by their imports alone, as
test_ported_scripts.py: each runs in tnet, then in torch from tnet's initial weights (state_dict,
or the hand-made parameters, through numpy), and the losses, and the weights summed into a few
numbers, agree. Where a script draws (dropout's masks, a split, a permutation), numpy draws or torch
replays tnet's draws (`replay`: one dict that both runs share, tnet's first); shapes are tiny and
runs 1-3 steps. Where Adam would normalise a gradient that is rounding alone (a bias before a
BatchNorm), the layer has no bias, as test_ported_scripts11.py's `but` explains."""
import numpy as np
from tqdm import tqdm

from helpers import compare, load, summary


def adopt(m, state, **params):
    """Hand-made parameters (d2l's from-scratch chapters): torch's run copies tnet's initial values
    into them; returns those values as numpy."""
    if state is not None:
        with m.torch.no_grad():
            for k, p in params.items():
                p.copy_(m.torch.tensor(state[k]))
    return {k: p.detach().cpu().numpy().copy() for k, p in params.items()}


def images(seed=0, n=8, shape=(1, 12, 12), classes=10):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, *shape)).astype(np.float32), rng.integers(0, classes, n)


class Accumulator:
    """For accumulating sums over `n` variables (d2l's)."""
    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self):
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


# (a) d2l 3.6/4.1: softmax regression from scratch: W by torch.normal(0, 0.01, size=..., requires_grad=
# True), softmax by exp and sum(1, keepdim=True), cross_entropy by fancy indexing y_hat[range(len(y_hat)), y],
# accuracy by argmax(axis=1) and .type(y.dtype), the minibatch sgd under torch.no_grad() with
# param -= lr * param.grad / batch_size; param.grad.zero_(), an Accumulator over train_epoch_ch3
def softmax_scratch(m, state=None):
    torch = m.torch
    num_inputs, num_outputs = 16, 4
    torch.manual_seed(0)
    W = torch.normal(0, 0.01, size=(num_inputs, num_outputs), requires_grad=True)
    b = torch.zeros(num_outputs, requires_grad=True)
    init = adopt(m, state, W=W, b=b)

    def softmax(X):
        X_exp = torch.exp(X)
        partition = X_exp.sum(1, keepdim=True)
        return X_exp / partition  # The broadcasting mechanism is applied here

    def net(X):
        return softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)

    def cross_entropy(y_hat, y):
        return - torch.log(y_hat[range(len(y_hat)), y])

    def accuracy(y_hat, y):
        """Compute the number of correct predictions."""
        if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
            y_hat = y_hat.argmax(axis=1)
        cmp = y_hat.type(y.dtype) == y
        return float(cmp.type(y.dtype).sum())

    def sgd(params, lr, batch_size):
        """Minibatch stochastic gradient descent."""
        with torch.no_grad():
            for param in params:
                param -= lr * param.grad / batch_size
                param.grad.zero_()

    def updater(batch_size):
        return sgd([W, b], 0.5, batch_size)

    def train_epoch_ch3(net, train_iter, loss, updater):
        metric = Accumulator(3)
        for X, y in train_iter:
            y_hat = net(X)
            l = loss(y_hat, y)
            l.sum().backward()
            updater(X.shape[0])
            metric.add(float(l.sum()), accuracy(y_hat, y), y.numel())
        return metric[0] / metric[2], metric[1] / metric[2]

    rng = np.random.default_rng(0)
    train_iter = [(torch.tensor(rng.standard_normal((6, 1, 4, 4)).astype(np.float32)), torch.tensor(rng.integers(0, 4, 6)))
                  for _ in range(3)]
    losses = []
    for epoch in range(2):
        losses += list(train_epoch_ch3(net, train_iter, cross_entropy, updater))
    return init, losses + summary([W, b])


def test_d2l_softmax_regression_scratch():
    compare(softmax_scratch)


# (b) d2l 4.2/4.6: an MLP from scratch with relu as torch.max(X, a) against zeros_like, nn.Parameter(torch.randn
# (...) * 0.01), dropout_layer from scratch (a mask from a uniform draw > dropout, float(), over 1 - dropout;
# here numpy draws it), a loss of reduction='none' whose mean() goes backward, torch.optim.SGD over params
def mlp_scratch(m, state=None):
    torch, nn = m.torch, m.nn
    num_inputs, num_outputs, num_hiddens = 16, 4, 8
    torch.manual_seed(0)
    W1 = nn.Parameter(torch.randn(num_inputs, num_hiddens, requires_grad=True) * 0.01)
    b1 = nn.Parameter(torch.zeros(num_hiddens, requires_grad=True))
    W2 = nn.Parameter(torch.randn(num_hiddens, num_outputs, requires_grad=True) * 0.01)
    b2 = nn.Parameter(torch.zeros(num_outputs, requires_grad=True))
    params = [W1, b1, W2, b2]
    init = adopt(m, state, W1=W1, b1=b1, W2=W2, b2=b2)
    rng = np.random.default_rng(1)

    def relu(X):
        a = torch.zeros_like(X)
        return torch.max(X, a)

    def dropout_layer(X, dropout):
        assert 0 <= dropout <= 1
        # In this case, all elements are dropped out
        if dropout == 1:
            return torch.zeros_like(X)
        # In this case, all elements are kept
        if dropout == 0:
            return X
        mask = (torch.tensor(rng.random(X.shape).astype(np.float32)) > dropout).float()
        return mask * X / (1.0 - dropout)

    def net(X, training=True):
        X = X.reshape((-1, num_inputs))
        H = relu(X @ W1 + b1)  # Here '@' stands for matrix multiplication
        if training:
            H = dropout_layer(H, 0.5)
        return H @ W2 + b2

    loss = nn.CrossEntropyLoss(reduction='none')
    trainer = torch.optim.SGD(params, lr=0.1)
    x, y = images(2, 8, (1, 4, 4), 4)
    X, y = torch.tensor(x), torch.tensor(y)
    losses = []
    for epoch in range(3):
        l = loss(net(X), y)
        trainer.zero_grad()
        l.mean().backward()
        trainer.step()
        losses.append(float(l.mean()))
    assert l.shape == (8,)
    with torch.no_grad():
        losses.append(float(loss(net(X, training=False), y).mean()))
    return init, losses + summary(params)


def test_d2l_mlp_dropout_scratch():
    compare(mlp_scratch)


# (c) d2l 4.5: weight decay by hand: linear regression on synthetic_data (normal features, y = Xw + b + noise),
# init_params by torch.normal, l2_penalty as torch.sum(w.pow(2)) / 2, squared_loss with y.reshape(y_hat.shape),
# a data_iter that shuffles indices with random.shuffle (numpy here) and slices torch.tensor(indices), and the
# concise version: SGD with a per-group weight_decay for the weight only
def weight_decay_scratch(m, state=None):
    torch, nn = m.torch, m.nn
    n_train, num_inputs, batch_size = 12, 10, 4
    true_w, true_b = np.full((num_inputs, 1), 0.01, np.float32), 0.05
    rng = np.random.default_rng(3)
    features = torch.tensor(rng.standard_normal((n_train, num_inputs)).astype(np.float32))
    labels = torch.matmul(features, torch.tensor(true_w)) + true_b
    labels += torch.tensor((rng.standard_normal(labels.shape) * 0.01).astype(np.float32))

    def data_iter(batch_size, features, labels):
        num_examples = len(features)
        indices = list(range(num_examples))
        rng.shuffle(indices)  # The examples are read at random, in no particular order
        for i in range(0, num_examples, batch_size):
            batch_indices = torch.tensor(indices[i: min(i + batch_size, num_examples)])
            yield features[batch_indices], labels[batch_indices]

    torch.manual_seed(0)
    w = torch.normal(0, 1, size=(num_inputs, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    init = adopt(m, state, w=w, b=b)

    def l2_penalty(w):
        return torch.sum(w.pow(2)) / 2

    def linreg(X, w, b):
        return torch.matmul(X, w) + b

    def squared_loss(y_hat, y):
        return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2

    lambd, lr, losses = 3, 0.03, []
    for epoch in range(2):
        for X, y in data_iter(batch_size, features, labels):
            l = squared_loss(linreg(X, w, b), y) + lambd * l2_penalty(w)
            l.sum().backward()
            with torch.no_grad():
                for param in [w, b]:
                    param -= lr * param.grad / batch_size
                    param.grad.zero_()
        losses.append(float(squared_loss(linreg(features, w, b), labels).mean()))
    losses.append(torch.norm(w).item())

    net = nn.Sequential(nn.Linear(num_inputs, 1))
    if state is None:
        for param in net.parameters():
            param.data.normal_()
    else:
        net[0].weight.data.copy_(torch.tensor(state['net_w']))
        net[0].bias.data.copy_(torch.tensor(state['net_b']))
    init.update(net_w=net[0].weight.detach().numpy().copy(), net_b=net[0].bias.detach().numpy().copy())
    loss = nn.MSELoss(reduction='none')
    trainer = torch.optim.SGD([{"params": net[0].weight, 'weight_decay': lambd},
                               {"params": net[0].bias}], lr=lr)
    for X, y in data_iter(batch_size, features, labels):
        trainer.zero_grad()
        l = loss(net(X), y)
        l.mean().backward()
        trainer.step()
        losses.append(l.mean().item())
    return init, losses + summary([w, b] + list(net.parameters()))


def test_d2l_weight_decay_by_hand():
    compare(weight_decay_scratch)


# (d) d2l 8.5: batch_norm from scratch (torch.is_grad_enabled() picks the moving statistics in prediction
# mode; X.mean(dim=(0, 2, 3), keepdim=True) for conv layers; moving averages by hand, returned with .data),
# a BatchNorm(nn.Module) holding moving_mean/moving_var as plain tensors moved with .to(X.device), LeNet with
# it and sigmoid, net.apply(init_weights) with xavier_uniform_, train_ch6 with an Accumulator and
# evaluate_accuracy_gpu under torch.no_grad() in net.eval()
def lenet_bn_scratch(m, state=None):
    torch, nn = m.torch, m.nn

    def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
        # Use is_grad_enabled to determine whether we are in training mode
        if not torch.is_grad_enabled():
            # In prediction mode, use mean and variance obtained by moving average
            X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
        else:
            assert len(X.shape) in (2, 4)
            if len(X.shape) == 2:
                # When using a fully connected layer, calculate the mean and variance on the feature dimension
                mean = X.mean(dim=0)
                var = ((X - mean) ** 2).mean(dim=0)
            else:
                # When using a two-dimensional convolutional layer, calculate the mean and variance on the
                # channel dimension (axis=1)
                mean = X.mean(dim=(0, 2, 3), keepdim=True)
                var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
            # In training mode, the current mean and variance are used
            X_hat = (X - mean) / torch.sqrt(var + eps)
            # Update the mean and variance using moving average
            moving_mean = (1.0 - momentum) * moving_mean + momentum * mean
            moving_var = (1.0 - momentum) * moving_var + momentum * var
        Y = gamma * X_hat + beta  # Scale and shift
        return Y, moving_mean.data, moving_var.data

    class BatchNorm(nn.Module):
        # num_features: the number of outputs for a fully connected layer or the number of output channels
        # for a convolutional layer. num_dims: 2 for a fully connected layer and 4 for a convolutional layer
        def __init__(self, num_features, num_dims):
            super().__init__()
            if num_dims == 2:
                shape = (1, num_features)
            else:
                shape = (1, num_features, 1, 1)
            # The scale parameter and the shift parameter (model parameters) are initialized to 1 and 0
            self.gamma = nn.Parameter(torch.ones(shape))
            self.beta = nn.Parameter(torch.zeros(shape))
            # The variables that are not model parameters are initialized to 0 and 1
            self.moving_mean = torch.zeros(shape)
            self.moving_var = torch.ones(shape)

        def forward(self, X):
            # If X is not on the main memory, copy moving_mean and moving_var to the device where X is located
            if self.moving_mean.device != X.device:
                self.moving_mean = self.moving_mean.to(X.device)
                self.moving_var = self.moving_var.to(X.device)
            # Save the updated moving_mean and moving_var
            Y, self.moving_mean, self.moving_var = batch_norm(
                X, self.gamma, self.beta, self.moving_mean,
                self.moving_var, eps=1e-5, momentum=0.1)
            return Y

    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 4, kernel_size=5), BatchNorm(4, num_dims=4), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Conv2d(4, 8, kernel_size=3), BatchNorm(8, num_dims=4), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(),
        nn.Linear(8 * 2 * 2, 16), BatchNorm(16, num_dims=2), nn.Sigmoid(),
        nn.Linear(16, 10))

    def init_weights(m_):
        if type(m_) == nn.Linear or type(m_) == nn.Conv2d:
            nn.init.xavier_uniform_(m_.weight)
    net.apply(init_weights)
    init = load(m, net, state)
    assert 'moving_mean' not in str(list(net.state_dict()))  # plain attributes, no buffers

    def accuracy(y_hat, y):
        if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
            y_hat = y_hat.argmax(axis=1)
        cmp = y_hat.type(y.dtype) == y
        return float(cmp.type(y.dtype).sum())

    def evaluate_accuracy_gpu(net, data_iter, device=None):
        if isinstance(net, nn.Module):
            net.eval()  # Set the model to evaluation mode
            if not device:
                device = next(iter(net.parameters())).device
        metric = Accumulator(2)
        with torch.no_grad():
            for X, y in data_iter:
                X, y = X.to(device), y.to(device)
                metric.add(accuracy(net(X), y), y.numel())
        return metric[0] / metric[1]

    def train_ch6(net, train_iter, test_iter, num_epochs, lr, device):
        net.to(device)
        optimizer = torch.optim.SGD(net.parameters(), lr=lr)
        loss = nn.CrossEntropyLoss()
        out = []
        for epoch in range(num_epochs):
            # Sum of training loss, sum of training accuracy, no. of examples
            metric = Accumulator(3)
            net.train()
            for i, (X, y) in enumerate(train_iter):
                optimizer.zero_grad()
                X, y = X.to(device), y.to(device)
                y_hat = net(X)
                l = loss(y_hat, y)
                l.backward()
                optimizer.step()
                with torch.no_grad():
                    metric.add(l * X.shape[0], accuracy(y_hat, y), X.shape[0])
            train_l = metric[0] / metric[2]
            test_acc = evaluate_accuracy_gpu(net, test_iter)
            out += [train_l, metric[1] / metric[2], test_acc]
        return out

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    train_iter = [tuple(map(torch.tensor, images(s, 8, (1, 16, 16)))) for s in range(2)]
    test_iter = [tuple(map(torch.tensor, images(9, 8, (1, 16, 16))))]
    losses = train_ch6(net, train_iter, test_iter, 2, 0.9, device)
    with torch.no_grad():
        losses.append(float(net(test_iter[0][0]).sum()))  # prediction mode: the moving statistics
    moving = [float(b.moving_mean.sum()) + float(b.moving_var.sum()) for b in net if isinstance(b, BatchNorm)]
    return init, losses + moving + summary(net.parameters())


def test_d2l_lenet_batch_norm_scratch():
    compare(lenet_bn_scratch)


# (e) d2l 8.2-8.4: nin_block (a conv and two 1x1 convs, each with ReLU), GoogLeNet's Inception with its four
# paths concatenated by torch.cat((p1, p2, p3, p4), dim=1), nn.AdaptiveAvgPool2d((1, 1)) and nn.Flatten();
# d2l's Adam-free SGD over the concise train loop, a loss of reduction='none' summed for the metric
def nin_inception(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def nin_block(in_channels, out_channels, kernel_size, strides, padding):
        return nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size, strides, padding),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel_size=1), nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel_size=1), nn.ReLU())

    class Inception(nn.Module):
        # c1--c4 are the number of output channels for each branch
        def __init__(self, in_channels, c1, c2, c3, c4, **kwargs):
            super(Inception, self).__init__(**kwargs)
            # Branch 1
            self.b1_1 = nn.Conv2d(in_channels, c1, kernel_size=1)
            # Branch 2
            self.b2_1 = nn.Conv2d(in_channels, c2[0], kernel_size=1)
            self.b2_2 = nn.Conv2d(c2[0], c2[1], kernel_size=3, padding=1)
            # Branch 3
            self.b3_1 = nn.Conv2d(in_channels, c3[0], kernel_size=1)
            self.b3_2 = nn.Conv2d(c3[0], c3[1], kernel_size=5, padding=2)
            # Branch 4
            self.b4_1 = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
            self.b4_2 = nn.Conv2d(in_channels, c4, kernel_size=1)

        def forward(self, x):
            b1 = F.relu(self.b1_1(x))
            b2 = F.relu(self.b2_2(F.relu(self.b2_1(x))))
            b3 = F.relu(self.b3_2(F.relu(self.b3_1(x))))
            b4 = F.relu(self.b4_2(self.b4_1(x)))
            # Concatenate the outputs on the channel dimension
            return torch.cat((b1, b2, b3, b4), dim=1)

    torch.manual_seed(0)
    net = nn.Sequential(
        nin_block(1, 4, kernel_size=3, strides=1, padding=1),
        nn.MaxPool2d(3, stride=2),
        Inception(4, 2, (2, 4), (1, 2), 2),
        nn.Dropout(0.0),
        nin_block(10, 10, kernel_size=3, strides=1, padding=1),
        nn.AdaptiveAvgPool2d((1, 1)),
        # Transform the four-dimensional output into two-dimensional output with a shape of (batch size, 10)
        nn.Flatten())
    X = torch.rand(size=(1, 1, 9, 9))
    for layer in net:
        X = layer(X)
    shapes = [tuple(X.shape)]
    init = load(m, net, state)
    x, y = images(4, 4, (1, 9, 9))
    X, y = torch.tensor(x), torch.tensor(y)
    loss = nn.CrossEntropyLoss(reduction='none')
    trainer = torch.optim.SGD(net.parameters(), lr=0.5)
    losses = []
    for epoch in range(2):
        trainer.zero_grad()
        l = loss(net(X), y)
        l.mean().backward()
        trainer.step()
        losses.append(l.sum().item())
    assert shapes == [(1, 10)]
    return init, losses + summary(net.parameters())


def test_d2l_nin_inception():
    compare(nin_inception)


# (f) PyTorch's "Learn the Basics" quickstart: device = "cuda" if torch.cuda.is_available() else "cpu"
# (the older "mps" check too), NeuralNetwork with nn.Flatten and linear_relu_stack, train_loop with
# model.train(), loss.backward(); optimizer.step(); optimizer.zero_grad(), the batch's progress as
# loss.item() and (batch + 1) * len(X), test_loop under torch.no_grad() with (pred.argmax(1) == y).type(
# torch.float).sum().item(), torch.save(model.state_dict(), "model.pth") and load_state_dict(torch.load(
# "model.pth", weights_only=True)), model.eval(), and prediction under torch.inference_mode()
def learn_the_basics(m, state=None, tmp_path=None):
    torch, nn, data = m.torch, m.nn, m.data
    device = (
        "cuda"
        if torch.cuda.is_available()
        else "mps"
        if torch.backends.mps.is_available()
        else "cpu"
    )

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(6 * 6, 16),
                nn.ReLU(),
                nn.Linear(16, 16),
                nn.ReLU(),
                nn.Linear(16, 10),
            )

        def forward(self, x):
            x = self.flatten(x)
            logits = self.linear_relu_stack(x)
            return logits

    torch.manual_seed(0)
    model = NeuralNetwork().to(device)
    init = load(m, model, state)
    x, y = images(5, 12, (1, 6, 6))
    training_data = data.TensorDataset(torch.tensor(x), torch.tensor(y))
    xt, yt = images(6, 6, (1, 6, 6))
    test_data = data.TensorDataset(torch.tensor(xt), torch.tensor(yt))
    train_dataloader = data.DataLoader(training_data, batch_size=4)
    test_dataloader = data.DataLoader(test_data, batch_size=4)

    def train_loop(dataloader, model, loss_fn, optimizer):
        size = len(dataloader.dataset)
        # Set the model to training mode - important for batch normalization and dropout layers
        model.train()
        out = []
        for batch, (X, y) in enumerate(dataloader):
            X, y = X.to(device), y.to(device)
            # Compute prediction and loss
            pred = model(X)
            loss = loss_fn(pred, y)

            # Backpropagation
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()

            loss, current = loss.item(), batch * 4 + len(X)
            out.append(loss)
            assert current <= size
        return out

    def test_loop(dataloader, model, loss_fn):
        model.eval()
        size = len(dataloader.dataset)
        num_batches = len(dataloader)
        test_loss, correct = 0, 0
        # Evaluating the model with torch.no_grad() ensures that no gradients are computed during test mode
        with torch.no_grad():
            for X, y in dataloader:
                pred = model(X)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).type(torch.float).sum().item()
        test_loss /= num_batches
        correct /= size
        return [test_loss, correct]

    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)
    losses = []
    for t in range(2):
        losses += train_loop(train_dataloader, model, loss_fn, optimizer)
        losses += test_loop(test_dataloader, model, loss_fn)
    path = tmp_path / f"model_{torch.__name__}.pth"
    torch.save(model.state_dict(), path)
    model = NeuralNetwork().to(device)
    model.load_state_dict(torch.load(path, weights_only=True))
    model.eval()
    with torch.inference_mode():
        pred = model(test_data[0][0].unsqueeze(0))
        predicted = pred[0].argmax(0)
        assert not torch.is_grad_enabled() and not pred.requires_grad
    losses += [float(pred.sum()), int(predicted)]
    return init, losses + summary(model.parameters())


def test_learn_the_basics(tmp_path):
    compare(learn_the_basics, tmp_path=tmp_path)


# (g) a Kaggle notebook's loop: seed_everything (random, numpy, torch.manual_seed, torch.cuda.manual_seed_all,
# cudnn.deterministic = True, cudnn.benchmark = False), a TensorDataset split by random_split with a seeded
# generator (torch replays tnet's split: `replay`), a ConcatDataset of the training part and an extra set,
# a Subset for a holdout, class weights for CrossEntropyLoss from np.bincount, tqdm over the batches with
# set_postfix, clip_grad_norm_, ReduceLROnPlateau on the validation loss, early stopping that keeps
# copy.deepcopy(model.state_dict()) of the best epoch and loads it back, top-k accuracy by torch.topk, and a
# confusion matrix by torch.bincount(num_classes * y + pred, minlength=...) and by index_put_ accumulate
def kaggle_loop(m, state=None, replay=None):
    import copy
    import random
    import os
    torch, nn, data, optim = m.torch, m.nn, m.data, m.optim

    def seed_everything(seed=42):
        random.seed(seed)
        os.environ['PYTHONHASHSEED'] = str(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.cuda.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False

    seed_everything(42)
    num_classes = 4
    rng = np.random.default_rng(7)
    X = rng.standard_normal((20, 10)).astype(np.float32)
    y = np.array([0] * 8 + [1] * 6 + [2] * 4 + [3] * 2)
    full = data.TensorDataset(torch.tensor(X), torch.tensor(y))
    if 'split' not in replay:
        train_ds, val_ds = data.random_split(full, [16, 4], generator=torch.Generator().manual_seed(42))
        replay['split'] = (list(train_ds.indices), list(val_ds.indices))
    else:
        train_ds, val_ds = (data.Subset(full, i) for i in replay['split'])
    extra = data.TensorDataset(torch.tensor(rng.standard_normal((4, 10)).astype(np.float32)),
                               torch.tensor(rng.integers(0, num_classes, 4)))
    train_ds = data.ConcatDataset([train_ds, extra])
    holdout = data.Subset(full, [0, 9, 15, 19])
    # full batches: the shuffled order changes only the rounding of the batch's sums (the Linear before the
    # BatchNorm has no bias: its gradient would be that rounding alone, which AdamW turns into full steps)
    train_loader = data.DataLoader(train_ds, batch_size=len(train_ds), shuffle=True, drop_last=False)
    val_loader = data.DataLoader(val_ds, batch_size=2, shuffle=False)

    counts = np.bincount(y[replay['split'][0]], minlength=num_classes) + 1
    class_weights = torch.tensor(len(y) / (num_classes * counts), dtype=torch.float)
    model = nn.Sequential(nn.Linear(10, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, num_classes))
    init = load(m, model, state)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    model.to(device)
    criterion = nn.CrossEntropyLoss(weight=class_weights.to(device))
    optimizer = optim.AdamW(model.parameters(), lr=3e-2, weight_decay=1e-2)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=0)

    best_loss, best_state, patience, bad_epochs = np.inf, None, 2, 0
    history = []
    for epoch in range(4):
        model.train()
        running = 0.0
        pbar = tqdm(train_loader, total=len(train_loader), desc=f'Epoch {epoch}', disable=True)
        for xb, yb in pbar:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            out = model(xb)
            loss = criterion(out, yb)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            running += loss.item() * xb.size(0)
            pbar.set_postfix(loss=loss.item(), grad_norm=float(norm))
        model.eval()
        val_loss = 0.0
        with torch.no_grad():
            for xb, yb in val_loader:
                val_loss += criterion(model(xb), yb).item() * len(yb)
        val_loss /= len(val_ds)
        scheduler.step(val_loss)
        history += [running / len(train_ds), val_loss, optimizer.param_groups[0]['lr']]
        if val_loss < best_loss:
            best_loss, bad_epochs = val_loss, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)

    model.eval()
    xs, ys = zip(*[holdout[i] for i in range(len(holdout))])
    xs, ys = torch.stack(xs), torch.stack(ys)
    with torch.no_grad():
        logits = model(xs)
    _, top2 = torch.topk(logits, k=2, dim=1)
    top2_acc = (top2 == ys.view(-1, 1)).any(dim=1).float().mean().item()
    preds = logits.argmax(dim=1)
    cm = torch.bincount(num_classes * ys + preds, minlength=num_classes ** 2).reshape(num_classes, num_classes)
    cm2 = torch.zeros(num_classes, num_classes, dtype=torch.long)
    cm2.index_put_((ys, preds), torch.ones_like(ys), accumulate=True)
    assert cm.tolist() == cm2.tolist() and cm.sum().item() == 4
    per_class = (cm.diag().float() / cm.sum(1).clamp(min=1).float()).tolist()
    return init, history + [best_loss, top2_acc] + per_class + summary(model.parameters())


def test_kaggle_loop():
    compare(kaggle_loop, replay={})


# (h) a Lightning-style module written without Lightning: LitClassifier(nn.Module) with training_step,
# validation_step (returning dicts), on_validation_epoch_end averaging torch.stack of the outputs,
# configure_optimizers returning ([optimizer], [{"scheduler": StepLR, "interval": "epoch"}]), self.log
# into a dict; a tiny Trainer that calls them, toggles train()/eval(), steps the scheduler each epoch,
# and fits for max_epochs with limit_train_batches
def lightning_style(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data

    class LitClassifier(nn.Module):
        def __init__(self, in_dim=8, hidden_dim=12, num_classes=3, lr=0.05):
            super().__init__()
            self.hparams = dict(in_dim=in_dim, hidden_dim=hidden_dim, num_classes=num_classes, lr=lr)
            self.backbone = nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.GELU(), nn.LayerNorm(hidden_dim))
            self.head = nn.Linear(hidden_dim, num_classes)
            self.logged = {}
            self.validation_step_outputs = []

        def forward(self, x):
            return self.head(self.backbone(x))

        def log(self, name, value, prog_bar=False):
            self.logged[name] = value.item() if torch.is_tensor(value) else value

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self(x)
            loss = F.cross_entropy(logits, y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            logits = self(x)
            loss = F.cross_entropy(logits, y)
            acc = (logits.argmax(dim=-1) == y).float().mean()
            out = {"val_loss": loss, "val_acc": acc}
            self.validation_step_outputs.append(out)
            return out

        def on_validation_epoch_end(self):
            avg_loss = torch.stack([o["val_loss"] for o in self.validation_step_outputs]).mean()
            avg_acc = torch.stack([o["val_acc"] for o in self.validation_step_outputs]).mean()
            self.log("val_loss", avg_loss)
            self.log("val_acc", avg_acc)
            self.validation_step_outputs.clear()

        def configure_optimizers(self):
            optimizer = optim.Adam(self.parameters(), lr=self.hparams["lr"])
            scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
            return [optimizer], [{"scheduler": scheduler, "interval": "epoch"}]

    class Trainer:
        def __init__(self, max_epochs=1, limit_train_batches=None, gradient_clip_val=None):
            self.max_epochs, self.limit_train_batches = max_epochs, limit_train_batches
            self.gradient_clip_val = gradient_clip_val
            self.history = []

        def fit(self, model, train_dataloaders, val_dataloaders):
            optimizers, schedulers = model.configure_optimizers()
            optimizer, scheduler = optimizers[0], schedulers[0]["scheduler"]
            for epoch in range(self.max_epochs):
                model.train()
                torch.set_grad_enabled(True)
                for batch_idx, batch in enumerate(train_dataloaders):
                    if self.limit_train_batches is not None and batch_idx >= self.limit_train_batches:
                        break
                    loss = model.training_step(batch, batch_idx)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    if self.gradient_clip_val:
                        nn.utils.clip_grad_value_(model.parameters(), self.gradient_clip_val)
                    optimizer.step()
                    self.history.append(model.logged["train_loss"])
                model.eval()
                with torch.no_grad():
                    for batch_idx, batch in enumerate(val_dataloaders):
                        model.validation_step(batch, batch_idx)
                model.on_validation_epoch_end()
                self.history += [model.logged["val_loss"], model.logged["val_acc"], scheduler.get_last_lr()[0]]
                scheduler.step()

    torch.manual_seed(0)
    model = LitClassifier()
    init = load(m, model, state)
    rng = np.random.default_rng(11)
    train = data.TensorDataset(torch.from_numpy(rng.standard_normal((12, 8)).astype(np.float32)),
                               torch.from_numpy(rng.integers(0, 3, 12)))
    val = data.TensorDataset(torch.from_numpy(rng.standard_normal((6, 8)).astype(np.float32)),
                             torch.from_numpy(rng.integers(0, 3, 6)))
    trainer = Trainer(max_epochs=2, limit_train_batches=2, gradient_clip_val=0.5)
    trainer.fit(model, data.DataLoader(train, batch_size=4), data.DataLoader(val, batch_size=3))
    return init, trainer.history + summary(model.parameters())


def test_lightning_style_module():
    compare(lightning_style)


# (i) a fastai-style one-cycle fit by hand: OneCycleLR (max_lr, total_steps, pct_start, div_factor,
# final_div_factor, anneal_strategy='cos', three_phase) cycling SGD's momentum and, with another model, Adam's
# betas[0] (cycle_momentum on, base_momentum 0.85, max_momentum 0.95); the lr and the momentum read back each
# step from param_groups, and the schedule's state_dict
def one_cycle(m, state=None, three_phase=False):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    model_sgd = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    model_adam = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    both = nn.ModuleList([model_sgd, model_adam])
    init = load(m, both, state)
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.standard_normal((10, 6))).float()
    y = torch.from_numpy(rng.integers(0, 3, 10))
    out = []
    for model, opt in ((model_sgd, optim.SGD(model_sgd.parameters(), lr=0.1, momentum=0.9, nesterov=True)),
                       (model_adam, optim.Adam(model_adam.parameters(), lr=1e-3, betas=(0.9, 0.99)))):
        sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=6, pct_start=0.3,
                                              anneal_strategy='cos', div_factor=25., final_div_factor=1e4,
                                              three_phase=three_phase, base_momentum=0.85, max_momentum=0.95)
        for it in range(6):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            g = opt.param_groups[0]
            mom = g['momentum'] if 'momentum' in g and 'betas' not in g else g['betas'][0]
            out += [loss.item(), g['lr'], mom]
        sd = sched.state_dict()
        out += [sd['last_epoch'], sd['total_steps']]
    return init, out + summary(both.parameters())


def test_fastai_one_cycle():
    compare(one_cycle)


def test_fastai_one_cycle_three_phase():
    compare(one_cycle, three_phase=True)


# (j) a tabular regression notebook: numpy features standardised by hand (mean and std over axis 0),
# torch.from_numpy(...).float(), targets .view(-1, 1), embeddings for two categorical columns (nn.ModuleList
# of nn.Embedding sized min(50, (n + 1) // 2), their outputs and the continuous features joined by torch.cat
# and an embedding dropout), a BatchNorm1d on the continuous part, nn.MSELoss for training with RMSE as
# torch.sqrt(loss), and nn.L1Loss and nn.SmoothL1Loss (beta) reported; Adam with weight decay
def tabular_regression(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    rng = np.random.default_rng(21)
    n = 16
    X_num = rng.standard_normal((n, 4)) * np.array([1., 10., 100., 0.1]) + np.array([0., 5., -50., 1.])
    X_cat = np.stack([rng.integers(0, 5, n), rng.integers(0, 3, n)], axis=1)
    target = (X_num[:, 0] - 0.01 * X_num[:, 2] + X_cat[:, 1]).astype(np.float64)
    mean, std = X_num.mean(axis=0), X_num.std(axis=0)
    X_num = (X_num - mean) / std

    class TabularModel(nn.Module):
        def __init__(self, emb_szs, n_cont, out_sz, layers, p=0.0):
            super().__init__()
            self.embeds = nn.ModuleList([nn.Embedding(ni, nf) for ni, nf in emb_szs])
            self.emb_drop = nn.Dropout(p)
            self.bn_cont = nn.BatchNorm1d(n_cont)
            layerlist = []
            n_emb = sum(nf for ni, nf in emb_szs)
            n_in = n_emb + n_cont
            for i in layers:
                layerlist.append(nn.Linear(n_in, i))
                layerlist.append(nn.ReLU(inplace=True))
                layerlist.append(nn.BatchNorm1d(i))
                layerlist.append(nn.Dropout(p))
                n_in = i
            layerlist.append(nn.Linear(layers[-1], out_sz))
            self.layers = nn.Sequential(*layerlist)

        def forward(self, x_cat, x_cont):
            embeddings = []
            for i, e in enumerate(self.embeds):
                embeddings.append(e(x_cat[:, i]))
            x = torch.cat(embeddings, 1)
            x = self.emb_drop(x)
            x_cont = self.bn_cont(x_cont)
            x = torch.cat([x, x_cont], 1)
            x = self.layers(x)
            return x

    cat_szs = [5, 3]
    emb_szs = [(size, min(50, (size + 1) // 2)) for size in cat_szs]
    torch.manual_seed(33)
    model = TabularModel(emb_szs, 4, 1, [10, 6], p=0.0)
    init = load(m, model, state)
    cats = torch.tensor(X_cat, dtype=torch.int64)
    conts = torch.from_numpy(X_num).float()
    y = torch.from_numpy(target).float().view(-1, 1)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-4)
    losses = []
    for i in range(3):
        y_pred = model(cats[:12], conts[:12])
        loss = torch.sqrt(criterion(y_pred, y[:12]))  # RMSE
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        y_val = model(cats[12:], conts[12:])
        losses += [torch.sqrt(criterion(y_val, y[12:])).item(), nn.L1Loss()(y_val, y[12:]).item(),
                   nn.SmoothL1Loss(beta=0.5)(y_val, y[12:]).item(), nn.HuberLoss(delta=2.0)(y_val, y[12:]).item()]
        diffs = (y_val - y[12:]).abs().flatten()
    losses += [float(v) for v in diffs[:4]]
    # the first Linear's bias feeds a ReLU then BatchNorm: a real gradient, so every parameter is kept
    return init, losses + summary(model.parameters())


def test_tabular_regression_embeddings():
    compare(tabular_regression)


# (k) an imbalanced binary classifier on tabular data: a single logit per row, nn.BCEWithLogitsLoss(pos_weight=
# torch.tensor([neg / pos])), y.float().unsqueeze(1), predictions by torch.sigmoid(logits) > 0.5, precision,
# recall and F1 from the boolean masks' sums, and the loss with reduction='none' and a per-sample weight
def tabular_binary(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(8)
    X = rng.standard_normal((20, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] > 1.0).astype(np.int64)
    pos, neg = y.sum(), len(y) - y.sum()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.LeakyReLU(0.1), nn.Linear(8, 1))
    init = load(m, model, state)
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([neg / pos], dtype=torch.float32))
    optimizer = optim.RMSprop(model.parameters(), lr=0.01)
    X_t, y_t = torch.from_numpy(X), torch.from_numpy(y).float().unsqueeze(1)
    out = []
    for epoch in range(3):
        model.train()
        optimizer.zero_grad()
        logits = model(X_t)
        loss = criterion(logits, y_t)
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits = model(X_t)
        probs = torch.sigmoid(logits)
        preds = (probs > 0.5).long().squeeze(1)
        target = torch.from_numpy(y)
        tp = ((preds == 1) & (target == 1)).sum().item()
        fp = ((preds == 1) & (target == 0)).sum().item()
        fn = ((preds == 0) & (target == 1)).sum().item()
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        weights = torch.where(y_t == 1, 2.0, 1.0)
        per_sample = F.binary_cross_entropy_with_logits(logits, y_t, reduction='none')
        weighted = (per_sample * weights).sum() / weights.sum()
        with_weight = F.binary_cross_entropy_with_logits(logits, y_t, weight=weights, pos_weight=torch.tensor([3.0]))
    out += [float(probs.mean()), precision, recall, f1, weighted.item(), with_weight.item()]
    return init, out + summary(model.parameters())


def test_tabular_binary_pos_weight():
    compare(tabular_binary)


# (l) "Deep Learning with PyTorch" ch. 5: the thermometer: t_u, t_c as tensors, model(t_u, w, b) = w * t_u + b,
# params = torch.tensor([1.0, 0.0], requires_grad=True), a training_loop that zeroes params.grad when it is
# not None and updates by (params - lr * params.grad).detach().requires_grad_(), one under torch.no_grad() in
# place, a validation split by torch.randperm (torch replays tnet's), val loss under torch.no_grad() asserting
# requires_grad False, optim.SGD([params]) and optim.Adam([params]); then ch. 6's nn.Linear(1, 1) and
# seq_model of an OrderedDict, reached as seq_model.output_linear, on t_c.unsqueeze(1)
def stevens_thermometer(m, state=None, replay=None):
    from collections import OrderedDict
    torch, nn, optim = m.torch, m.nn, m.optim
    t_c = [0.5, 14.0, 15.0, 28.0, 11.0, 8.0, 3.0, -4.0, 6.0, 13.0, 21.0]
    t_u = [35.7, 55.9, 58.2, 81.9, 56.3, 48.9, 33.9, 21.8, 48.4, 60.4, 68.4]
    t_c = torch.tensor(t_c)
    t_u = torch.tensor(t_u)
    t_un = 0.1 * t_u

    def model(t_u, w, b):
        return w * t_u + b

    def loss_fn(t_p, t_c):
        squared_diffs = (t_p - t_c) ** 2
        return squared_diffs.mean()

    def training_loop(n_epochs, learning_rate, params, t_u, t_c):
        for epoch in range(1, n_epochs + 1):
            if params.grad is not None:
                params.grad.zero_()
            t_p = model(t_u, *params)
            loss = loss_fn(t_p, t_c)
            loss.backward()
            params = (params - learning_rate * params.grad).detach().requires_grad_()
        return params, float(loss)

    params, loss0 = training_loop(3, 1e-2, torch.tensor([1.0, 0.0], requires_grad=True), t_un, t_c)
    out = [loss0] + params.tolist()

    params = torch.tensor([1.0, 0.0], requires_grad=True)
    for epoch in range(2):
        if params.grad is not None:
            params.grad.zero_()
        loss = loss_fn(model(t_un, *params), t_c)
        loss.backward()
        with torch.no_grad():
            params -= 1e-2 * params.grad
    out += params.tolist()

    n_samples = t_u.shape[0]
    n_val = int(0.2 * n_samples)
    if 'perm' not in replay:
        replay['perm'] = torch.randperm(n_samples).tolist()
    shuffled_indices = torch.tensor(replay['perm'])
    train_indices = shuffled_indices[:-n_val]
    val_indices = shuffled_indices[-n_val:]
    train_t_u, train_t_c = t_u[train_indices], t_c[train_indices]
    val_t_u, val_t_c = t_u[val_indices], t_c[val_indices]
    train_t_un, val_t_un = 0.1 * train_t_u, 0.1 * val_t_u

    for opt_cls, lr in ((optim.SGD, 1e-2), (optim.Adam, 1e-1)):
        params = torch.tensor([1.0, 0.0], requires_grad=True)
        optimizer = opt_cls([params], lr=lr)
        for epoch in range(1, 4):
            train_t_p = model(train_t_un, *params)
            train_loss = loss_fn(train_t_p, train_t_c)
            with torch.no_grad():
                val_t_p = model(val_t_un, *params)
                val_loss = loss_fn(val_t_p, val_t_c)
                assert val_loss.requires_grad == False
            optimizer.zero_grad()
            train_loss.backward()
            optimizer.step()
            out += [train_loss.item(), val_loss.item()]

    torch.manual_seed(0)
    seq_model = nn.Sequential(OrderedDict([
        ('hidden_linear', nn.Linear(1, 8)),
        ('hidden_activation', nn.Tanh()),
        ('output_linear', nn.Linear(8, 1))
    ]))
    init = load(m, seq_model, state)
    assert [name for name, _ in seq_model.named_parameters()][-1] == 'output_linear.bias'
    optimizer = optim.SGD(seq_model.parameters(), lr=1e-3)
    t_u_train, t_c_train = train_t_un.unsqueeze(1), train_t_c.unsqueeze(1)
    loss_fn = nn.MSELoss()
    for epoch in range(3):
        loss_train = loss_fn(seq_model(t_u_train), t_c_train)
        optimizer.zero_grad()
        loss_train.backward()
        optimizer.step()
        out.append(loss_train.item())
    out.append(float(seq_model.output_linear.bias.grad))
    return init, out + summary(seq_model.parameters())


def test_stevens_thermometer():
    compare(stevens_thermometer, replay={})


# (m) "Deep Learning with PyTorch" ch. 7-8: birds versus airplanes: a list of (img, label_map[label]) pairs
# filtered from a bigger set, a DataLoader over the list, a Net of F.max_pool2d(torch.tanh(conv), 2) and
# out.view(-1, 8 * 4 * 4), nn.LogSoftmax with nn.NLLLoss in one model, NetResDeep whose resblocks are
# nn.Sequential(*(n_blocks * [ResBlock(n_chans)])) (one block, shared), ResBlock's kaiming_normal_(nonlinearity=
# 'relu') and constant_(batch_norm.weight, 0.5), the L2 penalty as sum(p.pow(2.0).sum() for p in
# model.parameters()), validate with torch.max(outputs, dim=1) and int((predicted == labels).sum()), the model
# saved and loaded with map_location=device, and numel_list of the trainable parameters
def stevens_birds(m, state=None, tmp_path=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    device = (torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu'))
    rng = np.random.default_rng(4)
    cifar10 = [(torch.from_numpy(rng.standard_normal((3, 16, 16)).astype(np.float32)), int(c))
               for c in rng.integers(0, 4, 16)]
    label_map = {0: 0, 2: 1}
    class_names = ['airplane', 'bird']
    cifar2 = [(img, label_map[label]) for img, label in cifar10 if label in [0, 2]]
    assert len(class_names) == 2 and 4 <= len(cifar2) < 16

    class Net(nn.Module):
        def __init__(self, n_chans1=4):
            super().__init__()
            self.n_chans1 = n_chans1
            self.conv1 = nn.Conv2d(3, n_chans1, kernel_size=3, padding=1)
            self.conv2 = nn.Conv2d(n_chans1, n_chans1 // 2, kernel_size=3, padding=1)
            self.fc1 = nn.Linear(4 * 4 * n_chans1 // 2, 8)
            self.fc2 = nn.Linear(8, 2)

        def forward(self, x):
            out = F.max_pool2d(torch.tanh(self.conv1(x)), 2)
            out = F.max_pool2d(torch.tanh(self.conv2(out)), 2)
            out = out.view(-1, 4 * 4 * self.n_chans1 // 2)
            out = torch.tanh(self.fc1(out))
            out = self.fc2(out)
            return out

    class ResBlock(nn.Module):
        def __init__(self, n_chans):
            super(ResBlock, self).__init__()
            self.conv = nn.Conv2d(n_chans, n_chans, kernel_size=3, padding=1, bias=False)
            self.batch_norm = nn.BatchNorm2d(num_features=n_chans)
            torch.nn.init.kaiming_normal_(self.conv.weight, nonlinearity='relu')
            torch.nn.init.constant_(self.batch_norm.weight, 0.5)
            torch.nn.init.zeros_(self.batch_norm.bias)

        def forward(self, x):
            out = self.conv(x)
            out = self.batch_norm(out)
            out = torch.relu(out)
            return out + x

    class NetResDeep(nn.Module):
        def __init__(self, n_chans1=4, n_blocks=3):
            super().__init__()
            self.n_chans1 = n_chans1
            self.conv1 = nn.Conv2d(3, n_chans1, kernel_size=3, padding=1)
            self.resblocks = nn.Sequential(
                *(n_blocks * [ResBlock(n_chans=n_chans1)]))
            self.fc1 = nn.Linear(4 * 4 * n_chans1, 8)
            self.fc2 = nn.Linear(8, 2)

        def forward(self, x):
            out = F.max_pool2d(torch.relu(self.conv1(x)), 2)
            out = self.resblocks(out)
            out = F.max_pool2d(out, 2)
            out = out.view(-1, 4 * 4 * self.n_chans1)
            out = torch.relu(self.fc1(out))
            out = self.fc2(out)
            return out

    torch.manual_seed(0)
    models = nn.ModuleDict(dict(
        net=Net(),
        logsoftmax=nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 8), nn.Tanh(), nn.Linear(8, 2), nn.LogSoftmax(dim=1)),
        resdeep=NetResDeep(n_blocks=2)))
    init = load(m, models, state)
    numel_list = [p.numel() for p in models['resdeep'].parameters() if p.requires_grad]
    assert len(numel_list) == 9  # the shared block's conv and norm counted once

    def training_loop(n_epochs, optimizer, model, loss_fn, train_loader, l2_lambda=0.0):
        out = []
        for epoch in range(1, n_epochs + 1):
            loss_train = 0.0
            for imgs, labels in train_loader:
                imgs = imgs.to(device=device)
                labels = labels.to(device=device)
                outputs = model(imgs)
                loss = loss_fn(outputs, labels)
                if l2_lambda:
                    l2_norm = sum(p.pow(2.0).sum() for p in model.parameters())
                    loss = loss + l2_lambda * l2_norm
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                loss_train += loss.item()
            out.append(loss_train / len(train_loader))
        return out

    def validate(model, loader):
        correct = 0
        total = 0
        with torch.no_grad():
            for imgs, labels in loader:
                outputs = model(imgs.to(device=device))
                _, predicted = torch.max(outputs, dim=1)
                total += labels.shape[0]
                correct += int((predicted == labels.to(device)).sum())
        return correct / total

    train_loader = data.DataLoader(cifar2, batch_size=len(cifar2), shuffle=False)
    out = []
    for key, loss_fn, l2 in (('net', nn.CrossEntropyLoss(), 0.0), ('logsoftmax', nn.NLLLoss(), 0.0),
                             ('resdeep', nn.CrossEntropyLoss(), 1e-3)):
        model = models[key].to(device=device)
        optimizer = optim.SGD(model.parameters(), lr=1e-2)
        out += training_loop(2, optimizer, model, loss_fn, train_loader, l2_lambda=l2)
        out.append(validate(model, train_loader))
    path = tmp_path / f'birds_vs_airplanes_{torch.__name__}.pt'
    torch.save(models['net'].state_dict(), path)
    loaded_model = Net().to(device=device)
    loaded_model.load_state_dict(torch.load(path, map_location=device))
    out.append(float(loaded_model(cifar2[0][0].unsqueeze(0)).sum()))
    return init, out + summary(models.parameters())


def test_stevens_birds_vs_airplanes(tmp_path):
    compare(stevens_birds, tmp_path=tmp_path)


# (n) CS231n's PyTorch notebook: dtype = torch.float32 and USE_GPU, a flatten(x) helper, random_weight by
# torch.randn(shape, device=device, dtype=dtype) * np.sqrt(2. / fan_in) then w.requires_grad = True, zero_weight,
# a barebones three_layer_convnet of F.conv2d(x, w, b, padding=2) and F.relu, train_part2's
# `w -= learning_rate * w.grad` and w.grad.zero_() under torch.no_grad(); then the nn.Module API: a
# ThreeLayerConvNet with nn.init.kaiming_normal_, train_part34 moving x with .to(device=device, dtype=dtype)
# and y with dtype=torch.long, check_accuracy_part34 with `_, preds = scores.max(1)`, (preds == y).sum() and
# float(num_correct) / num_samples, a DataLoader with sampler.SubsetRandomSampler (one full batch: the order
# changes only rounding), and Part IV's nn.Sequential with a Flatten module and optim.SGD(nesterov=True)
def cs231n(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    sampler = data  # `import torch.utils.data.sampler as sampler`: the samplers, under data here
    USE_GPU = True
    dtype = torch.float32  # we will be using float throughout this tutorial
    if USE_GPU and torch.cuda.is_available():
        device = torch.device('cuda')
    else:
        device = torch.device('cpu')

    def flatten(x):
        N = x.shape[0]  # read in N, C, H, W
        return x.view(N, -1)  # "flatten" the C * H * W values into a single vector per image

    def random_weight(shape):
        if len(shape) == 2:  # FC weight
            fan_in = shape[0]
        else:
            fan_in = np.prod(shape[1:])  # conv weight [out_channel, in_channel, kH, kW]
        # randn is standard normal distribution generator.
        w = torch.randn(shape, device=device, dtype=dtype) * np.sqrt(2. / fan_in)
        w.requires_grad = True
        return w

    def zero_weight(shape):
        return torch.zeros(shape, device=device, dtype=dtype, requires_grad=True)

    def three_layer_convnet(x, params):
        conv_w1, conv_b1, conv_w2, conv_b2, fc_w, fc_b = params
        x = F.relu(F.conv2d(x, conv_w1, conv_b1, padding=2))
        x = F.relu(F.conv2d(x, conv_w2, conv_b2, padding=1))
        scores = flatten(x).mm(fc_w) + fc_b
        return scores

    torch.manual_seed(0)
    conv_w1 = random_weight((4, 3, 5, 5))
    conv_b1 = zero_weight((4,))
    conv_w2 = random_weight((3, 4, 3, 3))
    conv_b2 = zero_weight((3,))
    fc_w = random_weight((3 * 6 * 6, 10))
    fc_b = zero_weight(10)
    params = [conv_w1, conv_b1, conv_w2, conv_b2, fc_w, fc_b]
    init = adopt(m, None if state is None else state['bare'], **{f'p{i}': p for i, p in enumerate(params)})

    x, y = images(12, 12, (3, 6, 6))
    xs, ys = torch.tensor(x), torch.tensor(y)
    out = []
    learning_rate = 3e-3
    for t in range(2):
        scores = three_layer_convnet(xs[:8].to(device=device, dtype=dtype), params)
        loss = F.cross_entropy(scores, ys[:8].to(device=device, dtype=torch.long))
        loss.backward()
        with torch.no_grad():
            for w in params:
                w -= learning_rate * w.grad
                # Manually zero the gradients after running the backward pass
                w.grad.zero_()
        out.append(loss.item())

    class ThreeLayerConvNet(nn.Module):
        def __init__(self, in_channel, channel_1, channel_2, num_classes):
            super().__init__()
            self.conv1 = nn.Conv2d(in_channel, channel_1, 5, padding=2)
            nn.init.kaiming_normal_(self.conv1.weight)
            self.conv2 = nn.Conv2d(channel_1, channel_2, 3, padding=1)
            nn.init.kaiming_normal_(self.conv2.weight)
            self.fc = nn.Linear(channel_2 * 6 * 6, num_classes)
            nn.init.kaiming_normal_(self.fc.weight)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            scores = self.fc(flatten(x))
            return scores

    class Flatten(nn.Module):
        def forward(self, x):
            return flatten(x)

    models = nn.ModuleList([
        ThreeLayerConvNet(3, 4, 3, 10),
        nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                      Flatten(), nn.Linear(4 * 3 * 3, 10))])
    init = dict(bare=init, modules=load(m, models, None if state is None else state['modules']))

    NUM_TRAIN = 8
    train_set = data.TensorDataset(xs, ys)
    loader_train = data.DataLoader(train_set, batch_size=NUM_TRAIN,
                                   sampler=sampler.SubsetRandomSampler(range(NUM_TRAIN)))
    loader_val = data.DataLoader(train_set, batch_size=NUM_TRAIN,
                                 sampler=sampler.SubsetRandomSampler(range(NUM_TRAIN, 12)))

    def check_accuracy_part34(loader, model):
        num_correct = 0
        num_samples = 0
        model.eval()  # set model to evaluation mode
        with torch.no_grad():
            for x, y in loader:
                x = x.to(device=device, dtype=dtype)  # move to device, e.g. GPU
                y = y.to(device=device, dtype=torch.long)
                scores = model(x)
                _, preds = scores.max(1)
                num_correct += (preds == y).sum()
                num_samples += preds.size(0)
            acc = float(num_correct) / num_samples
        return acc

    def train_part34(model, optimizer, epochs=1):
        model = model.to(device=device)  # move the model parameters to CPU/GPU
        result = []
        for e in range(epochs):
            for t, (x, y) in enumerate(loader_train):
                model.train()  # put model to training mode
                x = x.to(device=device, dtype=dtype)  # move to device, e.g. GPU
                y = y.to(device=device, dtype=torch.long)
                scores = model(x)
                loss = F.cross_entropy(scores, y)
                # Zero out all of the gradients for the variables which the optimizer will update.
                optimizer.zero_grad()
                # This is the backwards pass: compute the gradient of the loss with respect to each
                # parameter of the model.
                loss.backward()
                # Actually update the parameters of the model using the gradients computed by the backwards pass.
                optimizer.step()
                result += [loss.item(), check_accuracy_part34(loader_val, model)]
        return result

    out += train_part34(models[0], optim.SGD(models[0].parameters(), lr=1e-2), epochs=2)
    out += train_part34(models[1], optim.SGD(models[1].parameters(), lr=1e-2, momentum=0.9, nesterov=True), epochs=2)
    return init, out + summary(params) + summary(models.parameters())


def test_cs231n_pytorch_notebook():
    compare(cs231n)


# (o) d2l 6 (builders' guide): MySequential filling self._modules[str(idx)], FixedHiddenMLP with a constant
# torch.rand weight (requires_grad=False), the same Linear used twice and `while X.abs().sum() > 1: X /= 2`,
# NestMLP chaining, nested blocks by add_module(f'block {i}', ...) reached as rgnet[0][1][0], init by
# net.apply with nn.init.normal_/zeros_/constant_/xavier_uniform_, my_init's `m.weight.data *= m.weight.data.abs()
# >= 5`, `net[0].weight.data[:] += 1` and `[0, 0] = 42`, a shared layer whose tied weights get both uses'
# gradients, LazyLinear sized by its first call, CenteredLayer and MyLinear, torch.save of a list and a dict
# and of the parameters (mlp.params) loaded into a clone that predicts the same
def d2l_builders_guide(m, state=None, tmp_path=None):
    torch, nn, F = m.torch, m.nn, m.F

    class MySequential(nn.Module):
        def __init__(self, *args):
            super().__init__()
            for idx, module in enumerate(args):
                self._modules[str(idx)] = module

        def forward(self, X):
            for module in self._modules.values():
                X = module(X)
            return X

    class FixedHiddenMLP(nn.Module):
        def __init__(self):
            super().__init__()
            # Random weight parameters that will not compute gradients and therefore keep constant during training
            self.rand_weight = torch.tensor(np.random.default_rng(0).random((8, 8)).astype(np.float32))
            self.linear = nn.Linear(8, 8)

        def forward(self, X):
            X = self.linear(X)
            X = F.relu(X @ self.rand_weight + 1)
            # Reuse the fully connected layer. This is equivalent to sharing parameters with two fully connected layers
            X = self.linear(X)
            # Control flow
            while X.abs().sum() > 1:
                X /= 2
            return X.sum()

    class NestMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
            self.linear = nn.Linear(8, 8)

        def forward(self, X):
            return self.linear(self.net(X))

    class CenteredLayer(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, X):
            return X - X.mean()

    class MyLinear(nn.Module):
        def __init__(self, in_units, units):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(in_units, units))
            self.bias = nn.Parameter(torch.randn(units,))

        def forward(self, X):
            linear = torch.matmul(X, self.weight.data) + self.bias.data
            return F.relu(linear)

    def block1():
        return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 3), nn.ReLU())

    def block2():
        net = nn.Sequential()
        for i in range(2):
            # Nested here
            net.add_module(f'block {i}', block1())
        return net

    def init_normal(module):
        if type(module) == nn.Linear:
            nn.init.normal_(module.weight, mean=0, std=0.5)
            nn.init.zeros_(module.bias)

    def init_42(module):
        if type(module) == nn.Linear:
            nn.init.constant_(module.weight, 42)

    def my_init(module):
        if type(module) == nn.Linear:
            module.weight.data *= module.weight.data.abs() >= 0.3

    torch.manual_seed(0)
    shared = nn.Linear(8, 8)
    lazy = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 2))
    lazy(torch.zeros(1, 6))  # sized by its first call
    nets = nn.ModuleDict(dict(
        chimera=nn.Sequential(NestMLP(), nn.Linear(8, 8), FixedHiddenMLP()),
        myseq=MySequential(nn.Linear(6, 8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(8, 2)),
        rgnet=nn.Sequential(block2(), nn.Linear(3, 1)),
        custom=nn.Sequential(nn.Linear(6, 4), CenteredLayer(), MyLinear(4, 2)),
        lazy=lazy))
    nets['rgnet'].apply(init_normal)
    nets['myseq']._modules['0'].apply(init_42)
    nets['myseq'].apply(my_init)
    nets['myseq']._modules['0'].weight.data[:] += 1
    nets['myseq']._modules['0'].weight.data[0, 0] = 42
    with torch.no_grad():
        nets['myseq']._modules['0'].weight.mul_(0.01)
    init = load(m, nets, state)
    assert list(nets['myseq'].state_dict())[2] == '2.weight' and '4.weight' in nets['myseq'].state_dict()
    assert nets['rgnet'][0][1][0].bias.data.shape == (4,) and "block 1" in str(nets['rgnet'])
    assert nets['myseq']._modules['2'].weight is nets['myseq']._modules['4'].weight and tuple(nets['lazy'][0].weight.shape) == (8, 6)

    rng = np.random.default_rng(6)
    X = torch.tensor(rng.standard_normal((5, 6)).astype(np.float32))
    Xr = torch.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    optimizer = torch.optim.SGD(nets.parameters(), lr=0.05)
    out = []
    for step in range(2):
        optimizer.zero_grad()
        loss = (nets['chimera'](X) + nets['myseq'](X).pow(2).mean() + nets['rgnet'](Xr).pow(2).mean()
                + nets['custom'](X).sum() + nets['lazy'](X).pow(2).mean())
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    out.append(float(nets['myseq']._modules['2'].weight.grad.sum()))

    x = torch.arange(4)
    y = torch.zeros(4)
    torch.save([x, y], tmp_path / f'x-files-{torch.__name__}')
    x2, y2 = torch.load(tmp_path / f'x-files-{torch.__name__}')
    mydict = {'x': x, 'y': y}
    torch.save(mydict, tmp_path / f'mydict-{torch.__name__}')
    mydict2 = torch.load(tmp_path / f'mydict-{torch.__name__}')
    assert x2.tolist() == [0, 1, 2, 3] and mydict2['y'].tolist() == y2.tolist() == [0.0] * 4
    torch.save(nets['rgnet'].state_dict(), tmp_path / f'mlp-{torch.__name__}.params')
    clone = nn.Sequential(block2(), nn.Linear(3, 1))
    clone.load_state_dict(torch.load(tmp_path / f'mlp-{torch.__name__}.params'))
    clone.eval()
    Y_clone = clone(Xr)
    assert (Y_clone == nets['rgnet'](Xr)).all()
    return init, out + summary(nets.parameters())


def test_d2l_builders_guide(tmp_path):
    compare(d2l_builders_guide, tmp_path=tmp_path)


# (p) "Deep Learning with PyTorch" ch. 4: real data as tensors: a uint8 image batch filled from
# torch.from_numpy(...).permute(2, 0, 1), turned float and normalised channel by channel with torch.mean and
# torch.std; the wine table split into data and target (.long()), a one-hot target by scatter_(1,
# target.unsqueeze(1), 1.0), normalised by torch.var, rows picked by boolean masks (target <= 4, (target > 4) &
# (target < 7)); the bike table viewed as days (view(-1, 24, n).transpose(1, 2)), the weather one-hot by scatter_
# with index .long() - 1, min-max scaling written into a slice; then a small model trained on each
def stevens_data(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(9)
    batch_size = 4
    batch = torch.zeros(batch_size, 3, 8, 8, dtype=torch.uint8)
    for i in range(batch_size):
        img_arr = rng.integers(0, 256, (8, 8, 4), dtype=np.uint8)  # an RGBA PNG as imageio reads it
        img_t = torch.from_numpy(img_arr)
        img_t = img_t.permute(2, 0, 1)
        img_t = img_t[:3]  # only the first 3 channels
        batch[i] = img_t
    inverted = (255 - batch).float().mean().item()
    batch = batch.float()
    batch /= 255.0
    n_channels = batch.shape[1]
    for c in range(n_channels):
        mean = torch.mean(batch[:, c])
        std = torch.std(batch[:, c])
        batch[:, c] = (batch[:, c] - mean) / std

    wineq_numpy = np.concatenate([rng.standard_normal((12, 5)).astype(np.float32) * 2 + 5,
                                  rng.integers(3, 9, (12, 1)).astype(np.float32)], axis=1)
    wineq = torch.from_numpy(wineq_numpy)
    data = wineq[:, :-1]  # Selects all rows and all columns except the last
    target = wineq[:, -1].long()
    target_onehot = torch.zeros(target.shape[0], 10)
    target_onehot.scatter_(1, target.unsqueeze(1), 1.0)
    data_mean = torch.mean(data, dim=0)
    data_var = torch.var(data, dim=0)
    data_normalized = (data - data_mean) / torch.sqrt(data_var)
    bad_data = data[target <= 4]
    mid_data = data[(target > 4) & (target < 7)]
    out = [inverted, float(target_onehot.sum()), float(bad_data.mean(0).sum()) if len(bad_data) else 0.0,
           float(mid_data.shape[0])]

    bikes = torch.from_numpy(np.concatenate([rng.random((48, 3)), rng.integers(1, 5, (48, 1)), rng.random((48, 2))],
                                            axis=1).astype(np.float32))
    daily_bikes = bikes.view(-1, 24, bikes.shape[1])
    daily_bikes = daily_bikes.transpose(1, 2)
    daily_weather_onehot = torch.zeros(daily_bikes.shape[0], 4, daily_bikes.shape[2])
    daily_weather_onehot.scatter_(1, daily_bikes[:, 3, :].long().unsqueeze(1) - 1, 1.0)
    daily_bikes = torch.cat((daily_bikes, daily_weather_onehot), dim=1)
    temp = daily_bikes[:, 4, :]
    temp_min = torch.min(temp)
    temp_max = torch.max(temp)
    daily_bikes[:, 4, :] = ((daily_bikes[:, 4, :] - temp_min) / (temp_max - temp_min))
    out += [float(daily_weather_onehot.sum()), float(daily_bikes.sum())]

    torch.manual_seed(0)
    models = nn.ModuleDict(dict(
        img=nn.Sequential(nn.Conv2d(3, 4, 3), nn.Tanh(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)),
        wine=nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 10)),
        bikes=nn.Conv1d(10, 1, 3, padding=1)))
    init = load(m, models, state)
    optimizer = optim.Adam(models.parameters(), lr=1e-2)
    labels = torch.tensor([0, 1, 1, 0])
    for step in range(2):
        loss = (F.cross_entropy(models['img'](batch), labels)
                + F.binary_cross_entropy_with_logits(models['wine'](data_normalized), target_onehot)
                + F.mse_loss(models['bikes'](daily_bikes), daily_bikes[:, :1]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    return init, out + summary(models.parameters())


def test_stevens_real_data_as_tensors():
    compare(stevens_data)
