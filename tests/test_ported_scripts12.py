"""Textbook and course code (Dive into Deep Learning's chapters with their inline helpers: softmax
regression, an MLP and dropout from scratch, weight decay by hand, LeNet with BatchNorm written from
scratch, NiN's and GoogLeNet's blocks through a train_ch6 loop with its Accumulator; PyTorch's "Learn
the Basics" tutorial's train and test loops with a saved and loaded state_dict), Kaggle- and
CS231n-style loops (early stopping on the validation loss, ReduceLROnPlateau, clip_grad_norm_, tqdm,
random_split with a generator, ConcatDataset, Subset, class weights, top-k accuracy, a confusion
matrix by bincount and by index_put_), a Lightning-style module with its own tiny Trainer, a fastai
one-cycle loop by hand (OneCycleLR cycling SGD's momentum and Adam's betas), and tabular regression
and classification (standardised numpy features, embeddings of categorical columns, MSE, L1,
SmoothL1, BCEWithLogitsLoss with pos_weight), written from memory in their sources' styles and
ported by their imports alone, as test_ported_scripts.py: each runs in tnet, then in torch from
tnet's initial weights (state_dict, or the hand-made parameters, through numpy), and the losses,
and the weights summed into a few numbers, agree. Where a script draws (dropout's masks, a split),
numpy draws or torch replays tnet's draws (`replay`: one dict that both runs share, tnet's first);
shapes are tiny and runs 1-3 steps."""
import numpy as np
from tqdm import tqdm

from helpers import compare, load


def summary(params):
    """A few numbers of the weights after the steps: each parameter's sum and sum of squares."""
    out = []
    for p in params:
        out += [float(p.detach().sum().item()), float((p.detach() ** 2).sum().item())]
    return out


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
