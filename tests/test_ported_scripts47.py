"""Whole training scripts as people write them, end to end, rather than model definitions, written from memory in their
sources' styles and ported by their imports alone, as test_ported_scripts.py: pytorch/examples' mnist/main.py as it
reads since torch.accelerator (argparse parsed from a list, use_accel, Adadelta under StepLR, train() and test() with
their log lines and .item() sums, --dry-run, --save-model and a reload whose eval mode is deterministic under the
source's dropout); mnist_rnn's LSTM with BatchNorm1d and nn.Dropout2d on a 2-D tensor; word_language_model's main.py
(a Corpus read from files, batchify, get_batch, repackage_hidden, tied weights, the manual update p.data.add_(p.grad,
alpha=-lr) after clip_grad_norm_, lr /= 4.0 on a stalled validation, the best state_dict saved and reloaded through
open files, flatten_parameters); siamese_network's backbone surgery by list(children())[:-1], init_weights by apply,
BCELoss and torch.where(outputs > 0.5, 1, 0); a Kaggle k-fold loop over indices (seed_everything, a fresh model per
fold from one deepcopied state_dict, OneCycleLR per batch with three phases and linear annealing, label smoothing, the
autocast and GradScaler flags off, early stopping with each fold's best saved, out-of-fold probabilities, flip TTA
over the folds' reloaded models); a fine-tuning loop with layer-wise lr decay groups carrying an 'lr_scale', warmup
and cosine by LambdaLR, gradient accumulation, an EMA by lerp_ and mul_().add_(), and a checkpoint resumed mid-run by
torch.load(map_location=lambda storage, loc: storage) that continues bit for bit as the uninterrupted run; a CIFAR
script's checkpoint dict ('epoch', 'model_state_dict', 'optimizer_state_dict', 'scheduler', 'scaler', 'best_acc',
'args': vars(args), early stopping's counter) with CosineAnnealingWarmRestarts stepped by fractional epochs or a
MultiStepLR stepped by scheduler.step(epoch), gradients clamped by register_hook, model_best.pth by shutil.copyfile, a
resume into fresh objects and a confusion matrix by torch.unique(dim=0, return_counts=True); pytorch/examples'
regression (polynomial features, smooth_l1_loss, updates through .data, itertools.count); an advantage actor-critic
(Categorical(logits=) with entropy, normalised returns, smooth_l1_loss against torch.tensor([R]), clip_grad_norm_);
super_resolution's main with PixelShuffle and orthogonal init, beside fast_neural_style's Gram matrices and a total-
variation loss, the PSNR and per-epoch checkpoints; a Hugging-Face-free text classifier (pad_sequence in a collate_fn
of dict samples, masked mean pooling, a LambdaLR over a callable class whose state_dict keeps its __dict__,
inference_mode, macro F1, the best checkpoint in an io.BytesIO resumed); and pytorch/examples' vae main. Each runs in
tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, metrics and the weights
summed into a few numbers agree. Numpy draws the data and what the sources draw with torch's generator (the siamese
pairs, the regression's batches), or torch replays tnet's draws (`replayed`: the actor-critic's actions, the VAE's
noise); dropout is 0 in the compared training where a source has it; shapes are tiny and runs take one to eight steps.

Fixed in tnet on the way (each with its unit test, in test_random.py and test_serialize.py): F.dropout2d (and
nn.Dropout2d) raised ValueError for any input but 3-D and 4-D, so mnist_rnn's Dropout2d after a BatchNorm1d stopped
the script even in eval mode; torch's dropout2d is feature dropout of any rank with a warning, a 2-D input dropped
element-wise. Its 3-D case differed too: tnet dropped each dim-0 slice of an input it read as [C, H, W], where torch
reads [N, C, L] and drops each (N, C) row, with its warning. tnet.save stored a numpy scalar (the text classifier's
best macro F1 by np.mean) as a Python number, so tnet.load gave a float where torch.load(weights_only=False) gives the
np.float64 back: numpy scalars are now stored as 0-d arrays and load as numpy scalars of their dtype (a complex one
too, which tnet.save refused). And tnet.save stored a collections.Counter as a dict: MultiStepLR's milestones came
back a dict, so the CIFAR script's MultiStepLR, resumed and stepped by scheduler.step(epoch) (its closed form calls
milestones.elements()), raised AttributeError; a Counter now loads as one, as torch.load's. The other scripts ran in
tnet as in torch at their first run. Probes of the same scripts' less common calls beside them (every scheduler's
state_dict, with the optimizer's, through torch.save and torch.load into fresh objects, whose lrs and momenta go on as
the uninterrupted run's and torch's; the modules' reprs that scripts print; torch.accelerator's queries without an
accelerator; %-formatting, math, json and numpy on 0-d tensors; Tensor.__format__ of 0-d and 1-element tensors,
torch.save and torch.load through open files, io.BytesIO and pathlib.Path with map_location as a lambda, a dict, a
device or a string and mmap=True, OneCycleLR's three phases and CyclicLR's triangular2,
clip_grad_norm_'s norm_type='inf' and foreach=, torch.autocast and torch.cuda.amp.autocast as decorators,
set_grad_enabled called alone, a numpy scalar, an array and an argparse.Namespace inside a checkpoint) found tnet as
torch but for that numpy scalar and Counter.

Found and left as they are: word_language_model and super_resolution save the module itself (torch.save(model, f)),
which tnet does not pickle (README: save the state_dict), so they save its state_dict here. As
test_ported_scripts45.py found, torch.cuda.amp.GradScaler() and torch.cuda.amp.autocast() with their default
enabled=True are on in tnet on a CPU machine (tnet's one device, which 'cuda' names), where torch without CUDA turns
them off with a warning: the scripts here pass enabled= from their flags, off."""
import argparse
import copy
import math
import os
import random
import tempfile
import warnings
from collections import namedtuple

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def replayed(m, replay, key, t):
    """t as tnet drew it: tnet's run keeps its draw under key, torch's run takes that draw in place of its own."""
    return m.torch.tensor(replay.setdefault(key, t.detach().cpu().numpy().copy()))


# (a) pytorch/examples' mnist/main.py as it reads since torch.accelerator: argparse with its defaults and help texts
# parsed from a list, use_accel from --no-accel and torch.accelerator.is_available(), the device from
# current_accelerator(), train_kwargs updated by the accelerator's kwargs, torch.manual_seed(args.seed), Adadelta with
# StepLR(step_size=1, gamma=args.gamma) stepped per epoch, train() logging 'Train Epoch: {} [{}/{} ({:.0f}%)]' with
# loss.item() and breaking on --dry-run, test() under torch.no_grad() summing nll_loss(reduction='sum').item() and
# counting pred.eq(target.view_as(pred)).sum().item() from argmax(dim=1, keepdim=True), the model saved by
# --save-model. The Net's two dropout probabilities come from its constructor here, 0 in the compared run (tnet draws
# other masks); eval mode's determinism is checked with the source's 0.25 and 0.5
def mnist_main(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    StepLR = m.lr_scheduler.StepLR
    rng = np.random.default_rng(0)

    class Net(nn.Module):
        def __init__(self, p1=0.25, p2=0.5):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.conv2 = nn.Conv2d(4, 6, 3, 1)
            self.dropout1 = nn.Dropout(p1)
            self.dropout2 = nn.Dropout(p2)
            self.fc1 = nn.Linear(6 * 2 * 2, 16)
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

    log = []

    def train(args, model, device, train_loader, optimizer, epoch):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                log.append('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                    epoch, batch_idx * len(data), len(train_loader.dataset),
                    100. * batch_idx / len(train_loader), loss.item()))
                if args.dry_run:
                    break

    def test(model, device, test_loader):
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
                pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
                correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        log.append('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
            test_loss, correct, len(test_loader.dataset), 100. * correct / len(test_loader.dataset)))
        return test_loss, correct

    def main(argv):
        parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
        parser.add_argument('--batch-size', type=int, default=64, metavar='N',
                            help='input batch size for training (default: 64)')
        parser.add_argument('--test-batch-size', type=int, default=1000, metavar='N',
                            help='input batch size for testing (default: 1000)')
        parser.add_argument('--epochs', type=int, default=14, metavar='N',
                            help='number of epochs to train (default: 14)')
        parser.add_argument('--lr', type=float, default=1.0, metavar='LR', help='learning rate (default: 1.0)')
        parser.add_argument('--gamma', type=float, default=0.7, metavar='M',
                            help='Learning rate step gamma (default: 0.7)')
        parser.add_argument('--no-accel', action='store_true', help='disables accelerator')
        parser.add_argument('--dry-run', action='store_true', help='quickly check a single pass')
        parser.add_argument('--seed', type=int, default=1, metavar='S', help='random seed (default: 1)')
        parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                            help='how many batches to wait before logging training status')
        parser.add_argument('--save-model', action='store_true', help='For Saving the current Model')
        parser.add_argument('--dropout', type=float, nargs=2, default=[0.25, 0.5])
        args = parser.parse_args(argv)
        use_accel = not args.no_accel and torch.accelerator.is_available()
        torch.manual_seed(args.seed)
        if use_accel:
            device = torch.accelerator.current_accelerator()
        else:
            device = torch.device("cpu")
        train_kwargs = {'batch_size': args.batch_size}
        test_kwargs = {'batch_size': args.test_batch_size}
        if use_accel:
            accel_kwargs = {'num_workers': 1, 'pin_memory': True, 'shuffle': True}
            train_kwargs.update(accel_kwargs)
            test_kwargs.update(accel_kwargs)
        dataset1 = m.data.TensorDataset(torch.from_numpy(normal(rng, 12, 1, 8, 8)),
                                        torch.from_numpy(rng.integers(0, 10, 12)))
        dataset2 = m.data.TensorDataset(torch.from_numpy(normal(rng, 6, 1, 8, 8)),
                                        torch.from_numpy(rng.integers(0, 10, 6)))
        train_loader = m.data.DataLoader(dataset1, **train_kwargs)
        test_loader = m.data.DataLoader(dataset2, **test_kwargs)
        model = Net(*args.dropout).to(device)
        init = load(m, model, state)
        optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
        scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
        record = []
        for epoch in range(1, args.epochs + 1):
            train(args, model, device, train_loader, optimizer, epoch)
            record += test(model, device, test_loader)
            scheduler.step()
            record += scheduler.get_last_lr()
        if args.save_model:
            with tempfile.TemporaryDirectory() as tmp:
                torch.save(model.state_dict(), os.path.join(tmp, "mnist_cnn.pt"))
                model2 = Net().to(device)
                model2.load_state_dict(torch.load(os.path.join(tmp, "mnist_cnn.pt"), weights_only=True))
            # the source's dropout in model2: eval mode is deterministic, train mode draws
            x = torch.from_numpy(normal(rng, 4, 1, 8, 8))
            model2.eval()
            a, b = model2(x), model2(x)
            assert torch.equal(a, b) and torch.allclose(a, model.eval()(x))
            model2.train()
            assert model2.training and model2.dropout1.training and not model.training
        return init, record + summary(model.parameters())

    # --no-accel: on a GPU machine torch.accelerator would find the GPU for torch too, whose loader then shuffles with
    # torch's generator
    return main(['--batch-size', '4', '--test-batch-size', '3', '--epochs', '2', '--lr', '0.5', '--log-interval',
                 '2', '--save-model', '--dropout', '0', '0', '--no-accel'])


def test_mnist_main():
    compare(mnist_main)


# (b) pytorch/examples' mnist_rnn/main.py: an LSTM(batch_first=True) over the image's rows after
# input.reshape(-1, 28, 28), the last step's output through BatchNorm1d, then nn.Dropout2d on that 2-D tensor (torch
# warns and drops element-wise; tnet raised ValueError until this file), log_softmax and nll_loss, Adadelta and
# StepLR, the test loop's summed loss. Its Dropout2d probabilities are the source's in eval mode and 0 in the compared
# training steps (tnet draws other masks)
def mnist_rnn(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(1)

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.rnn = nn.LSTM(input_size=6, hidden_size=8, batch_first=True)
            self.batchnorm = nn.BatchNorm1d(8)
            self.dropout1 = nn.Dropout2d(0.25)
            self.dropout2 = nn.Dropout2d(0.5)
            self.fc1 = nn.Linear(8, 8)
            self.fc2 = nn.Linear(8, 10)

        def forward(self, input):
            # Shape of input is (batch_size,1, 28, 28)
            # converting shape of input to (batch_size, 28, 28)
            # as required by RNN when batch_first is set True
            input = input.reshape(-1, 6, 6)
            output, hidden = self.rnn(input)
            # RNN output shape is (seq_len, batch, input_size)
            # Get last output of RNN
            output = output[:, -1, :]
            output = self.batchnorm(output)
            output = self.dropout1(output)
            output = self.fc1(output)
            output = F.relu(output)
            output = self.dropout2(output)
            output = self.fc2(output)
            output = F.log_softmax(output, dim=1)
            return output

    def test(args, model, device, test_loader):
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
                pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
                correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        return [test_loss, correct]

    parser = argparse.ArgumentParser(description='PyTorch MNIST Example using RNN')
    parser.add_argument('--batch-size', type=int, default=64, metavar='N')
    parser.add_argument('--test-batch-size', type=int, default=1000, metavar='N')
    parser.add_argument('--epochs', type=int, default=14, metavar='N')
    parser.add_argument('--lr', type=float, default=0.1, metavar='LR')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M')
    parser.add_argument('--cuda', action='store_true', default=False, help='enables CUDA training')
    parser.add_argument('--mps', action="store_true", default=False, help="enables MPS training")
    parser.add_argument('--dry-run', action='store_true', default=False)
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N')
    parser.add_argument('--save-model', action='store_true', default=False)
    args = parser.parse_args(['--batch-size', '6', '--test-batch-size', '4', '--epochs', '2', '--lr', '0.5'])
    if args.cuda and not args.mps:
        device = "cuda"
    elif args.mps and not args.cuda:
        device = "mps"
    else:
        device = "cpu"
    torch.manual_seed(args.seed)
    kwargs = {'num_workers': 1, 'pin_memory': True} if args.cuda else {}
    train_loader = m.data.DataLoader(m.data.TensorDataset(torch.from_numpy(normal(rng, 12, 1, 6, 6)),
                                                          torch.from_numpy(rng.integers(0, 10, 12))),
                                     batch_size=args.batch_size, shuffle=False, **kwargs)
    test_loader = m.data.DataLoader(m.data.TensorDataset(torch.from_numpy(normal(rng, 8, 1, 6, 6)),
                                                         torch.from_numpy(rng.integers(0, 10, 8))),
                                    batch_size=args.test_batch_size, shuffle=False, **kwargs)
    model = Net().to(device)
    init = load(m, model, state)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = m.lr_scheduler.StepLR(optimizer, step_size=1, gamma=args.gamma)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record = test(args, model, device, test_loader)
        model.dropout1.p = model.dropout2.p = 0.0
        for epoch in range(1, args.epochs + 1):
            model.train()
            for batch_idx, (data, target) in enumerate(train_loader):
                data, target = data.to(device), target.to(device)
                optimizer.zero_grad()
                output = model(data)
                loss = F.nll_loss(output, target)
                loss.backward()
                optimizer.step()
                record.append(loss.item())
                if args.dry_run:
                    break
            record += test(args, model, device, test_loader)
            scheduler.step()
    assert any("2-D input to dropout2d" in str(w.message) for w in caught)
    return init, record + summary(model.parameters()) + summary(model.buffers())


def test_mnist_rnn():
    compare(mnist_rnn)


# (c) pytorch/examples' word_language_model/main.py end to end: argparse (--model LSTM, --tied, --bptt, --clip, the
# source's lr of 20), data.Corpus reading train.txt, valid.txt and test.txt from a directory (Dictionary's word2idx
# and idx2word, each line's words plus '<eos>', torch.tensor(ids).type(torch.int64) per line joined by torch.cat),
# batchify, get_batch, RNNModel by getattr(nn, rnn_type) with init_weights' uniform_ and zeros_ and tied weights,
# train() with model.zero_grad(), repackage_hidden, clip_grad_norm_, the manual update p.data.add_(p.grad,
# alpha=-lr) and the log's math.exp(cur_loss), evaluate() summing len(data) * criterion(...).item(), the best model
# saved through an open file (`with open(args.save, 'wb') as f`: its state_dict, where the source saves the module,
# which tnet does not pickle, README), lr /= 4.0 when validation does not improve, and the reload with
# model.rnn.flatten_parameters() before the test. dropout 0 (tnet draws other masks)
def word_language_model_main(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rng = np.random.default_rng(2)
    words = 'the cat sat on a mat and the dog ran to it'.split()

    class Dictionary(object):
        def __init__(self):
            self.word2idx = {}
            self.idx2word = []

        def add_word(self, word):
            if word not in self.word2idx:
                self.idx2word.append(word)
                self.word2idx[word] = len(self.idx2word) - 1
            return self.word2idx[word]

        def __len__(self):
            return len(self.idx2word)

    class Corpus(object):
        def __init__(self, path):
            self.dictionary = Dictionary()
            self.train = self.tokenize(os.path.join(path, 'train.txt'))
            self.valid = self.tokenize(os.path.join(path, 'valid.txt'))
            self.test = self.tokenize(os.path.join(path, 'test.txt'))

        def tokenize(self, path):
            """Tokenizes a text file."""
            assert os.path.exists(path)
            # Add words to the dictionary
            with open(path, 'r', encoding="utf8") as f:
                for line in f:
                    words = line.split() + ['<eos>']
                    for word in words:
                        self.dictionary.add_word(word)
            # Tokenize file content
            with open(path, 'r', encoding="utf8") as f:
                idss = []
                for line in f:
                    words = line.split() + ['<eos>']
                    ids = []
                    for word in words:
                        ids.append(self.dictionary.word2idx[word])
                    idss.append(torch.tensor(ids).type(torch.int64))
                ids = torch.cat(idss)
            return ids

    class RNNModel(nn.Module):
        """Container module with an encoder, a recurrent module, and a decoder."""
        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
            super(RNNModel, self).__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ['LSTM', 'GRU']:
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                if nhid != ninp:
                    raise ValueError('When using the tied flag, nhid must be equal to emsize')
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.rnn_type = rnn_type
            self.nhid = nhid
            self.nlayers = nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if self.rnn_type == 'LSTM':
                return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                        weight.new_zeros(self.nlayers, bsz, self.nhid))
            else:
                return weight.new_zeros(self.nlayers, bsz, self.nhid)

    parser = argparse.ArgumentParser(description='PyTorch Wikitext-2 RNN/LSTM/GRU/Transformer Language Model')
    parser.add_argument('--data', type=str, default='./data/wikitext-2', help='location of the data corpus')
    parser.add_argument('--model', type=str, default='LSTM', help='type of network (RNN_TANH, RNN_RELU, LSTM, GRU)')
    parser.add_argument('--emsize', type=int, default=200, help='size of word embeddings')
    parser.add_argument('--nhid', type=int, default=200, help='number of hidden units per layer')
    parser.add_argument('--nlayers', type=int, default=2, help='number of layers')
    parser.add_argument('--lr', type=float, default=20, help='initial learning rate')
    parser.add_argument('--clip', type=float, default=0.25, help='gradient clipping')
    parser.add_argument('--epochs', type=int, default=40, help='upper epoch limit')
    parser.add_argument('--batch_size', type=int, default=20, metavar='N', help='batch size')
    parser.add_argument('--bptt', type=int, default=35, help='sequence length')
    parser.add_argument('--dropout', type=float, default=0.2, help='dropout applied to layers (0 = no dropout)')
    parser.add_argument('--tied', action='store_true', help='tie the word embedding and softmax weights')
    parser.add_argument('--seed', type=int, default=1111, help='random seed')
    parser.add_argument('--log-interval', type=int, default=200, metavar='N', help='report interval')
    parser.add_argument('--save', type=str, default='model.pt', help='path to save the final model')
    parser.add_argument('--dry-run', action='store_true', help='verify the code and the model')
    with tempfile.TemporaryDirectory() as tmp:
        for name, n in (('train.txt', 3), ('valid.txt', 1), ('test.txt', 1)):
            with open(os.path.join(tmp, name), 'w', encoding='utf8') as f:
                for _ in range(n):
                    f.write(' ' + ' '.join(rng.choice(words, 7)) + ' \n')
        args = parser.parse_args(['--data', tmp, '--emsize', '8', '--nhid', '8', '--nlayers', '2', '--epochs', '2',
                                  '--batch_size', '2', '--bptt', '5', '--dropout', '0', '--tied', '--log-interval', '2',
                                  '--save', os.path.join(tmp, 'model.pt')])
        torch.manual_seed(args.seed)
        device = torch.device("cpu")
        corpus = Corpus(args.data)

        def batchify(data, bsz):
            # Work out how cleanly we can divide the dataset into bsz parts.
            nbatch = data.size(0) // bsz
            # Trim off any extra elements that wouldn't cleanly fit (remainders).
            data = data.narrow(0, 0, nbatch * bsz)
            # Evenly divide the data across the bsz batches.
            data = data.view(bsz, -1).t().contiguous()
            return data.to(device)

        eval_batch_size = 2
        train_data = batchify(corpus.train, args.batch_size)
        val_data = batchify(corpus.valid, eval_batch_size)
        test_data = batchify(corpus.test, eval_batch_size)
        ntokens = len(corpus.dictionary)
        model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied).to(device)
        init = load(m, model, state)
        criterion = nn.NLLLoss()

        def repackage_hidden(h):
            """Wraps hidden states in new Tensors, to detach them from their history."""
            if isinstance(h, torch.Tensor):
                return h.detach()
            else:
                return tuple(repackage_hidden(v) for v in h)

        def get_batch(source, i):
            seq_len = min(args.bptt, len(source) - 1 - i)
            data = source[i:i+seq_len]
            target = source[i+1:i+1+seq_len].view(-1)
            return data, target

        def evaluate(data_source):
            # Turn on evaluation mode which disables dropout.
            model.eval()
            total_loss = 0.
            hidden = model.init_hidden(eval_batch_size)
            with torch.no_grad():
                for i in range(0, data_source.size(0) - 1, args.bptt):
                    data, targets = get_batch(data_source, i)
                    output, hidden = model(data, hidden)
                    hidden = repackage_hidden(hidden)
                    total_loss += len(data) * criterion(output, targets).item()
            return total_loss / (len(data_source) - 1)

        logs = []

        def train():
            # Turn on training mode which enables dropout.
            model.train()
            total_loss = 0.
            hidden = model.init_hidden(args.batch_size)
            for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
                data, targets = get_batch(train_data, i)
                # Starting each batch, we detach the hidden state from how it was previously produced.
                # If we didn't, the model would try backpropagating all the way to start of the dataset.
                model.zero_grad()
                hidden = repackage_hidden(hidden)
                output, hidden = model(data, hidden)
                loss = criterion(output, targets)
                loss.backward()
                # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                for p in model.parameters():
                    p.data.add_(p.grad, alpha=-lr)
                total_loss += loss.item()
                if batch % args.log_interval == 0 and batch > 0:
                    cur_loss = total_loss / args.log_interval
                    logs.append('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | loss {:5.2f} | ppl {:8.2f}'.format(
                        epoch, batch, len(train_data) // args.bptt, lr, cur_loss, math.exp(cur_loss)))
                    total_loss = 0
                if args.dry_run:
                    break
            return total_loss

        # Loop over epochs.
        lr = args.lr
        best_val_loss = None
        record = []
        for epoch in range(1, args.epochs+1):
            record.append(train())
            val_loss = evaluate(val_data)
            record += [val_loss, math.exp(val_loss), lr]
            # Save the model if the validation loss is the best we've seen so far.
            if not best_val_loss or val_loss < best_val_loss:
                with open(args.save, 'wb') as f:
                    torch.save(model.state_dict(), f)
                best_val_loss = val_loss
            else:
                # Anneal the learning rate if no improvement has been seen in the validation dataset.
                lr /= 4.0
        # Load the best saved model.
        with open(args.save, 'rb') as f:
            model.load_state_dict(torch.load(f))
            # after load the rnn params are not a continuous chunk of memory
            # this makes them a continuous chunk, and will speed up forward pass
            # Currently, only rnn model supports flatten operation
            if args.model in ['RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU']:
                model.rnn.flatten_parameters()
    # Run on test data.
    test_loss = evaluate(test_data)
    assert model.decoder.weight is model.encoder.weight and logs[0].startswith('| epoch   1 |     2/')
    return init, record + [test_loss, best_val_loss] + summary(model.parameters())


def test_word_language_model_main():
    compare(word_language_model_main)


# (d) pytorch/examples' siamese_network/main.py: a backbone whose first convolution is replaced for one channel, its
# head cut by nn.Sequential(*(list(self.resnet.children())[:-1])), fc_in_features read from the old fc, an MLP over
# torch.cat of the two embeddings ending in nn.Sigmoid, init_weights applied to the head with xavier_uniform_ and
# m.bias.data.fill_(0.01), BCELoss, Adadelta and StepLR, the test's torch.where(outputs > 0.5, 1, 0) against
# targets.view_as(pred); the pairs dataset's draws (torch.randint in the source) by numpy here
def siamese_network(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    rng = np.random.default_rng(3)

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU())
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(4, 1000)

        def forward(self, x):
            return self.fc(torch.flatten(self.avgpool(self.layer1(self.relu(self.bn1(self.conv1(x))))), 1))

    class SiameseNetwork(nn.Module):
        def __init__(self):
            super(SiameseNetwork, self).__init__()
            self.resnet = TinyResNet()
            # over-write the first conv layer to be able to read MNIST images
            # as resnet18 reads (3,x,x) where 3 is RGB channels
            # whereas MNIST has (1,x,x) where 1 is a gray-scale channel
            self.resnet.conv1 = nn.Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
            self.fc_in_features = self.resnet.fc.in_features
            # remove the last layer of resnet18 (linear layer which is before avgpool layer)
            self.resnet = torch.nn.Sequential(*(list(self.resnet.children())[:-1]))
            # add linear layers to compare between the features of the two images
            self.fc = nn.Sequential(
                nn.Linear(self.fc_in_features * 2, 8),
                nn.ReLU(inplace=True),
                nn.Linear(8, 1),
            )
            self.sigmoid = nn.Sigmoid()
            # initialize the weights
            self.resnet.apply(self.init_weights)
            self.fc.apply(self.init_weights)

        def init_weights(self, m_):
            if isinstance(m_, nn.Linear):
                torch.nn.init.xavier_uniform_(m_.weight)
                m_.bias.data.fill_(0.01)

        def forward_once(self, x):
            output = self.resnet(x)
            output = output.view(output.size()[0], -1)
            return output

        def forward(self, input1, input2):
            # get two images' features
            output1 = self.forward_once(input1)
            output2 = self.forward_once(input2)
            # concatenate both images' features
            output = torch.cat((output1, output2), 1)
            # pass the concatenation to the linear layers
            output = self.fc(output)
            # pass the out of the linear layers to sigmoid layer
            output = self.sigmoid(output)
            return output

    class APP_MATCHER(m.data.Dataset):
        def __init__(self, images, labels):
            self.data, self.targets = images, labels
            self.group_examples()

        def group_examples(self):
            np_arr = np.array(self.targets.clone())
            self.grouped_examples = {}
            for i in range(0, 3):
                self.grouped_examples[i] = np.where((np_arr == i))[0]

        def __len__(self):
            return self.data.shape[0]

        def __getitem__(self, index):
            selected_class = int(rng.integers(0, 3))
            random_index_1 = rng.integers(0, self.grouped_examples[selected_class].shape[0])
            index_1 = self.grouped_examples[selected_class][random_index_1]
            image_1 = self.data[index_1].clone().float()
            if index % 2 == 0:
                random_index_2 = rng.integers(0, self.grouped_examples[selected_class].shape[0])
                while random_index_2 == random_index_1:
                    random_index_2 = rng.integers(0, self.grouped_examples[selected_class].shape[0])
                index_2 = self.grouped_examples[selected_class][random_index_2]
                image_2 = self.data[index_2].clone().float()
                target = torch.tensor(1, dtype=torch.float)
            else:
                other_selected_class = int(rng.integers(0, 3))
                while other_selected_class == selected_class:
                    other_selected_class = int(rng.integers(0, 3))
                random_index_2 = rng.integers(0, self.grouped_examples[other_selected_class].shape[0])
                index_2 = self.grouped_examples[other_selected_class][random_index_2]
                image_2 = self.data[index_2].clone().float()
                target = torch.tensor(0, dtype=torch.float)
            return image_1, image_2, target

    images = torch.from_numpy(normal(rng, 12, 1, 6, 6))
    labels = torch.from_numpy(np.arange(12) % 3)
    model = SiameseNetwork()
    init = load(m, model, state)
    train_loader = m.data.DataLoader(APP_MATCHER(images, labels), batch_size=4)
    test_loader = m.data.DataLoader(APP_MATCHER(images[:6], labels[:6]), batch_size=3)
    optimizer = optim.Adadelta(model.parameters(), lr=0.5)
    scheduler = m.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    criterion = nn.BCELoss()
    record = []
    for epoch in range(1, 3):
        model.train()
        for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
            if batch_idx == 2:
                break
            optimizer.zero_grad()
            outputs = model(images_1, images_2).squeeze()
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            record.append(loss.item())
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for (images_1, images_2, targets) in test_loader:
                outputs = model(images_1, images_2).squeeze()
                test_loss += criterion(outputs, targets).sum().item()  # sum up batch loss
                pred = torch.where(outputs > 0.5, 1, 0)  # get the index of the max log-probability
                correct += pred.eq(targets.view_as(pred)).sum().item()
        record += [test_loss / len(test_loader.dataset), correct]
        scheduler.step()
    return init, record + summary(model.parameters()) + summary(model.buffers())


def test_siamese_network():
    compare(siamese_network)


# (e) a Kaggle notebook's k-fold loop over indices: a CFG class, seed_everything (random, os.environ's
# PYTHONHASHSEED, np.random.seed, torch.manual_seed, torch.cuda.manual_seed, cudnn.deterministic), folds by
# np.array_split of a permutation, a fresh model per fold from one initial state_dict (copy.deepcopy), AdamW with
# OneCycleLR stepped per batch (three_phase, linear annealing, its beta1 cycled), CrossEntropyLoss(label_smoothing),
# the autocast and GradScaler flags off on the CPU, early stopping on the validation loss with each fold's best model
# saved to f'fold{fold}.pth', out-of-fold probabilities written into a numpy array at the fold's indices, and the test
# predictions averaged over the folds' reloaded models with horizontal-flip TTA by torch.flip(x, dims=[3]) and
# softmax(1), the log loss and accuracy in numpy
def kfold_onecycle_tta(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    rng = np.random.default_rng(4)

    class CFG:
        n_fold = 3
        epochs = 2
        batch_size = 4
        lr = 3e-3
        weight_decay = 1e-2
        label_smoothing = 0.1
        patience = 1
        apex = False
        seed = 42

    def seed_everything(seed=42):
        random.seed(seed)
        os.environ['PYTHONHASHSEED'] = str(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.cuda.manual_seed(seed)
        torch.backends.cudnn.deterministic = True

    seed_everything(CFG.seed)
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

    class Model(nn.Module):
        def __init__(self, n_classes=3):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.SiLU(),
                                          nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.head = nn.Sequential(nn.Dropout(0.0), nn.Linear(4, n_classes))

        def forward(self, x):
            return self.head(self.backbone(x))

    X = normal(rng, 12, 2, 5, 5)
    y = rng.integers(0, 3, 12)
    X_test = torch.from_numpy(normal(rng, 4, 2, 5, 5))
    folds = np.array_split(rng.permutation(len(X)), CFG.n_fold)
    base = Model().to(device)
    init = load(m, base, state)
    init_state = copy.deepcopy(base.state_dict())
    criterion = nn.CrossEntropyLoss(label_smoothing=CFG.label_smoothing)
    oof = np.zeros((len(X), 3), dtype=np.float32)
    record = []
    with tempfile.TemporaryDirectory() as out_dir:
        for fold in range(CFG.n_fold):
            val_idx = folds[fold]
            trn_idx = np.concatenate([folds[k] for k in range(CFG.n_fold) if k != fold])
            train_ds = m.data.TensorDataset(torch.from_numpy(X[trn_idx]), torch.from_numpy(y[trn_idx]))
            valid_ds = m.data.TensorDataset(torch.from_numpy(X[val_idx]), torch.from_numpy(y[val_idx]))
            train_loader = m.data.DataLoader(train_ds, batch_size=CFG.batch_size, shuffle=False, drop_last=True)
            valid_loader = m.data.DataLoader(valid_ds, batch_size=CFG.batch_size * 2, shuffle=False)
            model = Model().to(device)
            model.load_state_dict(init_state)
            optimizer = optim.AdamW(model.parameters(), lr=CFG.lr, weight_decay=CFG.weight_decay)
            scheduler = m.lr_scheduler.OneCycleLR(optimizer, max_lr=CFG.lr, epochs=CFG.epochs,
                                                  steps_per_epoch=len(train_loader), pct_start=0.3,
                                                  anneal_strategy='linear', three_phase=True)
            scaler = torch.amp.GradScaler(enabled=CFG.apex)
            best_loss, bad_epochs = np.inf, 0
            for epoch in range(CFG.epochs):
                model.train()
                for step, (images, labels) in enumerate(train_loader):
                    images, labels = images.to(device), labels.to(device)
                    with torch.autocast(device_type=device.type, enabled=CFG.apex):
                        y_preds = model(images)
                        loss = criterion(y_preds, labels)
                    optimizer.zero_grad(set_to_none=True)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                    scheduler.step()
                    record.append(loss.item())
                record += [optimizer.param_groups[0]['lr'], optimizer.param_groups[0]['betas'][0]]
                model.eval()
                losses, preds = [], []
                for images, labels in valid_loader:
                    with torch.no_grad():
                        y_preds = model(images.to(device))
                    losses.append(criterion(y_preds, labels.to(device)).item() * len(labels))
                    preds.append(y_preds.softmax(1).to('cpu').numpy())
                val_loss = sum(losses) / len(valid_ds)
                record.append(val_loss)
                if val_loss < best_loss:
                    best_loss, bad_epochs = val_loss, 0
                    torch.save({'model': model.state_dict(), 'predictions': np.concatenate(preds)},
                               os.path.join(out_dir, f'fold{fold}.pth'))
                else:
                    bad_epochs += 1
                    if bad_epochs >= CFG.patience:
                        break
            best = torch.load(os.path.join(out_dir, f'fold{fold}.pth'), map_location=torch.device('cpu'),
                              weights_only=False)
            oof[val_idx] = best['predictions']
        oof_loss = -np.mean(np.log(oof[np.arange(len(y)), y] + 1e-15))
        record += [oof_loss, float((oof.argmax(1) == y).mean())]
        # inference: every fold's best model, TTA by a horizontal flip
        probs = []
        for fold in range(CFG.n_fold):
            model = Model().to(device)
            model.load_state_dict(torch.load(os.path.join(out_dir, f'fold{fold}.pth'), weights_only=False)['model'])
            model.eval()
            with torch.no_grad():
                p = model(X_test).softmax(1) + model(torch.flip(X_test, dims=[3])).softmax(1)
            probs.append(p / 2)
        sub = torch.stack(probs).mean(0)
        record += sub.flatten().tolist() + sub.argmax(1).tolist()
    return init, record + summary(model.parameters())


def test_kfold_onecycle_tta():
    compare(kfold_onecycle_tta)


# (f) a timm- and Hugging-Face-free fine-tuning loop: a small pre-norm ViT whose blocks get layer-wise lr decay
# (param groups keyed by layer id with an 'lr_scale', no weight decay for biases, norms and the tokens), warmup then
# cosine by a LambdaLR whose lr_lambda reads the step, gradient accumulation over micro-batches with loss /
# accum_steps, clip_grad_norm_'s returned total norm, an EMA of the weights under torch.no_grad() by lerp_ and by
# mul_().add_(alpha=) for the buffers, evaluation with the EMA model; a checkpoint with the model, EMA, optimizer and
# scheduler states written mid-run and resumed into fresh objects by torch.load(map_location=lambda storage, loc:
# storage), whose continuation must equal the uninterrupted run to the bit
def finetune_lld_ema(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(5)

    class Attention(nn.Module):
        def __init__(self, dim, num_heads=2):
            super().__init__()
            self.num_heads = num_heads
            self.scale = (dim // num_heads) ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=False)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            attn = (q @ k.transpose(-2, -1)) * self.scale
            attn = attn.softmax(dim=-1)
            x = (attn @ v).transpose(1, 2).reshape(B, N, C)
            return self.proj(x)

    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim)
            self.attn = Attention(dim)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self, dim=8, depth=1, n_classes=3):
            super().__init__()
            self.patch_embed = nn.Conv2d(1, dim, 2, 2)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, 5, dim))
            self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, n_classes)
            nn.init.trunc_normal_(self.pos_embed, std=.02)
            nn.init.trunc_normal_(self.cls_token, std=.02)

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.norm(x[:, 0]))  # the class token's norm alone (timm's fc_norm place)

    def get_layer_id(name, num_layers):
        if name in ('cls_token', 'pos_embed') or name.startswith('patch_embed'):
            return 0
        if name.startswith('blocks'):
            return int(name.split('.')[1]) + 1
        return num_layers - 1

    def param_groups_lrd(model, weight_decay=0.05, no_weight_decay_list=(), layer_decay=.75):
        param_group_names, param_groups = {}, {}
        num_layers = len(model.blocks) + 1
        layer_scales = list(layer_decay ** (num_layers - i) for i in range(num_layers + 1))
        for n, p in model.named_parameters():
            if not p.requires_grad:
                continue
            if p.ndim == 1 or n in no_weight_decay_list:
                g_decay, this_decay = "no_decay", 0.
            else:
                g_decay, this_decay = "decay", weight_decay
            layer_id = get_layer_id(n, num_layers + 1)
            group_name = "layer_%d_%s" % (layer_id, g_decay)
            if group_name not in param_group_names:
                this_scale = layer_scales[layer_id]
                param_group_names[group_name] = {"lr_scale": this_scale, "weight_decay": this_decay, "params": []}
                param_groups[group_name] = {"lr_scale": this_scale, "weight_decay": this_decay, "params": []}
            param_group_names[group_name]["params"].append(n)
            param_groups[group_name]["params"].append(p)
        return list(param_groups.values())

    class ModelEma:
        def __init__(self, model, decay=0.9):
            self.module = copy.deepcopy(model)
            self.module.eval()
            self.decay = decay

        @torch.no_grad()
        def update(self, model):
            for ema_p, p in zip(self.module.parameters(), model.parameters()):
                ema_p.lerp_(p.detach(), 1. - self.decay)
            for ema_b, b in zip(self.module.buffers(), model.buffers()):
                if ema_b.dtype.is_floating_point:
                    ema_b.mul_(self.decay).add_(b, alpha=1. - self.decay)
                else:
                    ema_b.copy_(b)

    warmup_steps, total_steps, accum_steps, base_lr = 1, 3, 2, 4e-3

    def lr_lambda(step):
        if step < warmup_steps:
            return float(step + 1) / float(warmup_steps)
        progress = float(step - warmup_steps) / float(max(1, total_steps - warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    data_x = [torch.from_numpy(normal(rng, 1, 1, 4, 4)) for _ in range(2 * total_steps)]
    data_y = [torch.from_numpy(rng.integers(0, 3, 1)) for _ in range(2 * total_steps)]
    val_x, val_y = torch.from_numpy(normal(rng, 4, 1, 4, 4)), torch.from_numpy(rng.integers(0, 3, 4))

    def build():
        model = ViT()
        groups = param_groups_lrd(model, weight_decay=0.05, no_weight_decay_list=('pos_embed', 'cls_token'))
        optimizer = optim.AdamW(groups, lr=base_lr, betas=(0.9, 0.95))
        for g in optimizer.param_groups:  # the lr_scale rides along in each group, as MAE's
            assert 'lr_scale' in g
        scheduler = m.lr_scheduler.LambdaLR(optimizer, lr_lambda)
        return model, optimizer, scheduler

    def run(model, optimizer, scheduler, ema, start, stop, record):
        model.train()
        for step in range(start, stop):
            for micro in range(accum_steps):
                i = step * accum_steps + micro
                loss = F.cross_entropy(model(data_x[i]), data_y[i]) / accum_steps
                loss.backward()
                record.append(loss.item())
            for g in optimizer.param_groups:
                g['lr'] = scheduler.get_last_lr()[0] * g['lr_scale']
            total_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            scheduler.step()
            ema.update(model)
            record.append(total_norm.item())
        ema.module.eval()
        with torch.no_grad():
            logits = ema.module(val_x)
        record += [F.cross_entropy(logits, val_y).item(), (logits.argmax(-1) == val_y).float().mean().item()]

    model, optimizer, scheduler = build()
    init = load(m, model, state)
    ema = ModelEma(model)
    straight, resumed = [], []
    run(model, optimizer, scheduler, ema, 0, total_steps, straight)
    model2, optimizer2, scheduler2 = build()
    model2.load_state_dict({k: torch.tensor(v) for k, v in init.items()})
    ema2 = ModelEma(model2)
    run(model2, optimizer2, scheduler2, ema2, 0, 1, resumed)
    with tempfile.TemporaryDirectory() as tmp:
        torch.save({'epoch': 1, 'model_state_dict': model2.state_dict(), 'ema': ema2.module.state_dict(),
                    'optimizer_state_dict': optimizer2.state_dict(), 'scheduler': scheduler2.state_dict()},
                   os.path.join(tmp, 'last.pth'))
        del model2, optimizer2, scheduler2, ema2
        checkpoint = torch.load(os.path.join(tmp, 'last.pth'), map_location=lambda storage, loc: storage)
    model3, optimizer3, scheduler3 = build()
    model3.load_state_dict(checkpoint['model_state_dict'])
    optimizer3.load_state_dict(checkpoint['optimizer_state_dict'])
    scheduler3.load_state_dict(checkpoint['scheduler'])
    ema3 = ModelEma(model3)
    ema3.module.load_state_dict(checkpoint['ema'])
    run(model3, optimizer3, scheduler3, ema3, checkpoint['epoch'], total_steps, resumed)
    assert resumed[:3] == straight[:3] and resumed[5:] == straight[3:], (resumed, straight)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), model3.parameters()))
    lrs = [g['lr'] for g in optimizer3.param_groups]
    return init, straight + lrs + summary(model.parameters()) + summary(ema.module.parameters())


def test_finetune_lld_ema():
    compare(finetune_lld_ema)


# (g) a CIFAR training script's checkpointing as repositories write it: argparse with --resume and --amp, a model of
# BatchNorm and Dropout switched by model.train() and model.eval(), SGD(nesterov=True) under
# CosineAnnealingWarmRestarts stepped by fractional epochs (epoch + i / iters), or, in a second pair of runs, under a
# MultiStepLR stepped by scheduler.step(epoch) at each epoch's start as older scripts do, gradients clamped by a
# register_hook on every parameter, the autocast and GradScaler flags off on the CPU, a checkpoint dict ('epoch',
# 'model_state_dict', 'optimizer_state_dict', 'scheduler', 'scaler', 'best_acc', 'args': vars(args), the early
# stopper's counters) saved each epoch and copied to model_best.pth by shutil.copyfile, a second run resumed from it by
# torch.load(map_location='cpu') into fresh objects, early stopping on the accuracy, and the best model's confusion
# matrix by torch.unique(dim=0, return_counts=True) of (target, pred) pairs with per-class precision, recall and F1
def checkpoint_resume(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    import shutil
    rng = np.random.default_rng(6)
    n_classes = 3

    class Net(nn.Module):
        def __init__(self, drop=0.5):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4),
                                          nn.ReLU(inplace=True), nn.MaxPool2d(2))
            self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(drop), nn.Linear(16, n_classes))

        def forward(self, x):
            return self.classifier(self.features(x))

    parser = argparse.ArgumentParser(description='PyTorch CIFAR10 Training')
    parser.add_argument('--lr', default=0.1, type=float, help='learning rate')
    parser.add_argument('--epochs', default=200, type=int)
    parser.add_argument('--resume', '-r', default='', type=str, help='resume from checkpoint')
    parser.add_argument('--amp', action='store_true', help='mixed precision')
    parser.add_argument('--clip', default=1.0, type=float)
    parser.add_argument('--patience', default=2, type=int)
    parser.add_argument('--drop', default=0.5, type=float)
    parser.add_argument('--out', default='checkpoint', type=str)
    parser.add_argument('--scheduler', default='cosine', choices=['cosine', 'multistep'])
    parser.add_argument('--milestones', default=[100, 150], type=int, nargs='+')
    train_x, train_y = torch.from_numpy(normal(rng, 8, 3, 4, 4)), torch.from_numpy(rng.integers(0, n_classes, 8))
    test_x, test_y = torch.from_numpy(normal(rng, 6, 3, 4, 4)), torch.from_numpy(rng.integers(0, n_classes, 6))
    trainloader = m.data.DataLoader(m.data.TensorDataset(train_x, train_y), batch_size=4)
    testloader = m.data.DataLoader(m.data.TensorDataset(test_x, test_y), batch_size=3)
    record = []

    def main(argv, state=None):
        args = parser.parse_args(argv)
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
        net = Net(args.drop).to(device)
        init = load(m, net, state)
        for p in net.parameters():
            p.register_hook(lambda grad: torch.clamp(grad, -args.clip, args.clip))
        criterion = nn.CrossEntropyLoss()
        optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
        if args.scheduler == 'cosine':
            scheduler = m.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=1, T_mult=2, eta_min=1e-3)
        else:
            scheduler = m.lr_scheduler.MultiStepLR(optimizer, milestones=args.milestones, gamma=0.5)
        scaler = torch.amp.GradScaler(device, enabled=args.amp)
        start_epoch, best_acc, counter = 0, 0, 0
        if args.resume:
            checkpoint = torch.load(args.resume, map_location='cpu', weights_only=False)
            net.load_state_dict(checkpoint['model_state_dict'])
            optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
            scheduler.load_state_dict(checkpoint['scheduler'])
            scaler.load_state_dict(checkpoint['scaler'])
            start_epoch = checkpoint['epoch'] + 1
            best_acc = checkpoint['best_acc']
            counter = checkpoint['early_stopping']['counter']
            assert checkpoint['args']['lr'] == args.lr
        iters = len(trainloader)
        for epoch in range(start_epoch, args.epochs):
            if args.scheduler == 'multistep':
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')  # step(epoch)'s deprecation, as old scripts call it
                    scheduler.step(epoch)
            net.train()
            train_loss, correct, total = 0, 0, 0
            for i, (inputs, targets) in enumerate(trainloader):
                inputs, targets = inputs.to(device), targets.to(device)
                optimizer.zero_grad()
                with torch.autocast(device_type=device, enabled=args.amp):
                    outputs = net(inputs)
                    loss = criterion(outputs, targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                if args.scheduler == 'cosine':
                    scheduler.step(epoch + i / iters)
                train_loss += loss.item()
                _, predicted = outputs.max(1)
                total += targets.size(0)
                correct += predicted.eq(targets).sum().item()
            record.extend([train_loss / iters, 100. * correct / total, scheduler.get_last_lr()[0]])
            net.eval()
            correct, total = 0, 0
            with torch.no_grad():
                for inputs, targets in testloader:
                    outputs = net(inputs.to(device))
                    correct += (outputs.argmax(1) == targets).sum().item()
                    total += targets.size(0)
            acc = 100. * correct / total
            record.append(acc)
            is_best = acc > best_acc
            if is_best:
                best_acc, counter = acc, 0
            else:
                counter += 1
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, 'last.pth')
            torch.save({'epoch': epoch, 'model_state_dict': net.state_dict(),
                        'optimizer_state_dict': optimizer.state_dict(), 'scheduler': scheduler.state_dict(),
                        'scaler': scaler.state_dict(), 'best_acc': best_acc, 'args': vars(args),
                        'early_stopping': {'counter': counter, 'patience': args.patience}}, path)
            if is_best:
                shutil.copyfile(path, os.path.join(args.out, 'model_best.pth'))
            if counter >= args.patience:
                record.append(epoch)
                break
        return init, net

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'checkpoint')
        init, _ = main(['--lr', '0.05', '--epochs', '2', '--out', out, '--drop', '0'], state)
        _, net = main(['--lr', '0.05', '--epochs', '4', '--out', out, '--drop', '0',
                       '--resume', os.path.join(out, 'last.pth')], init)
        # the same with a MultiStepLR stepped by epoch (its milestones a Counter in the checkpoint)
        step_out = os.path.join(tmp, 'multistep')
        main(['--lr', '0.05', '--epochs', '2', '--out', step_out, '--drop', '0', '--scheduler', 'multistep',
              '--milestones', '1', '3', '--patience', '9'], init)
        _, net2 = main(['--lr', '0.05', '--epochs', '4', '--out', step_out, '--drop', '0', '--scheduler', 'multistep',
                        '--milestones', '1', '3', '--patience', '9', '--resume', os.path.join(step_out, 'last.pth')],
                       init)
        best = Net()
        best.load_state_dict(torch.load(os.path.join(out, 'model_best.pth'), weights_only=False)['model_state_dict'])
    best.eval()
    with torch.no_grad():
        pred = best(test_x).argmax(1)
    pairs, counts = torch.unique(torch.stack([test_y, pred], dim=1), dim=0, return_counts=True)
    cm = torch.zeros(n_classes, n_classes, dtype=torch.long)
    cm[pairs[:, 0], pairs[:, 1]] = counts
    tp = cm.diag().float()
    precision = tp / cm.sum(0).clamp(min=1)
    recall = tp / cm.sum(1).clamp(min=1)
    f1 = torch.where(precision + recall > 0, 2 * precision * recall / (precision + recall), torch.zeros_like(tp))
    record += cm.flatten().tolist() + precision.tolist() + recall.tolist() + [f1.mean().item()]
    return init, record + summary(net.parameters()) + summary(net.buffers()) + summary(net2.parameters())


def test_checkpoint_resume():
    compare(checkpoint_resume)


# (h) pytorch/examples' regression/main.py: a polynomial's features by torch.cat([x ** i for i in range(1,
# POLY_DEGREE+1)], 1), the target W_target and b_target, poly_desc's formatting of the weights by .view(-1) and
# .item(), get_batch, a Linear fitted by F.smooth_l1_loss and the hand update param.data.add_(-0.1 * param.grad) over
# itertools.count(1), fc.zero_grad(), stopping once the loss falls under a threshold; the source's torch.randn by
# numpy
def regression_poly(m, state=None):
    torch, F = m.torch, m.F
    from itertools import count
    rng = np.random.default_rng(7)
    POLY_DEGREE = 4
    W_target = torch.from_numpy(normal(rng, POLY_DEGREE, 1)) * 5
    b_target = torch.from_numpy(normal(rng, 1)) * 5

    def make_features(x):
        """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
        x = x.unsqueeze(1)
        return torch.cat([x ** i for i in range(1, POLY_DEGREE+1)], 1)

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
        random = torch.from_numpy(normal(rng, batch_size) * 0.5)
        x = make_features(random)
        y = f(x)
        return x, y

    # Define model
    fc = torch.nn.Linear(W_target.size(0), 1)
    init = load(m, fc, state)
    record = []
    for batch_idx in count(1):
        # Get data
        batch_x, batch_y = get_batch(8)
        # Reset gradients
        fc.zero_grad()
        # Forward pass
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        # Backward pass
        output.backward()
        # Apply gradients
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
        record.append(loss)
        # Stop criterion
        if loss < 1e-3 or batch_idx == 4:
            break
    desc = [poly_desc(fc.weight.view(-1), fc.bias), poly_desc(W_target.view(-1), b_target)]
    assert desc[1].startswith('y = ') and desc[1].count('x^') == POLY_DEGREE
    return init, record + [batch_idx] + [float(t) for d in desc for t in d.replace('x^', ' ').split()[2::2]] + \
        summary(fc.parameters())


def test_regression_poly():
    compare(regression_poly)


# (i) an advantage actor-critic script in the reinforcement_learning examples' style: argparse (--gamma, --seed,
# --entropy-coef, --value-coef, --max-grad-norm), a toy corridor environment with reset(seed=) and step(), a shared
# body with policy and value heads, Categorical(logits=...) sampling (torch replays tnet's actions), log_prob and
# entropy().mean(), SavedAction namedtuples, the discounted returns built backwards with returns.insert(0, R),
# normalised by (returns - returns.mean()) / (returns.std() + eps) with eps = np.finfo(np.float32).eps.item(), the
# advantage detached, F.smooth_l1_loss(value, torch.tensor([R])) per step, torch.stack(...).sum(), clip_grad_norm_,
# del model.rewards[:], and the running reward's exponential average
def actor_critic_a2c(m, state=None, replay=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    Categorical = torch.distributions.Categorical
    SavedAction = namedtuple('SavedAction', ['log_prob', 'value', 'entropy'])

    class Corridor:
        """Walk right to the goal; a step left or right, a reward of 1 at the goal and -0.1 elsewhere."""
        def __init__(self, n=4):
            self.n = n

        def reset(self, seed=None):
            self.rng = np.random.default_rng(seed)
            self.pos = 0
            return self.obs(), {}

        def obs(self):
            o = np.zeros(self.n, dtype=np.float32)
            o[self.pos] = 1
            return o + self.rng.normal(0, 0.1, self.n).astype(np.float32)

        def step(self, action):
            self.pos = min(max(self.pos + (1 if action == 1 else -1), 0), self.n - 1)
            done = self.pos == self.n - 1
            return self.obs(), (1.0 if done else -0.1), done, False, {}

    class Policy(nn.Module):
        def __init__(self):
            super(Policy, self).__init__()
            self.affine1 = nn.Linear(4, 16)
            self.action_head = nn.Linear(16, 2)
            self.value_head = nn.Linear(16, 1)
            self.saved_actions = []
            self.rewards = []

        def forward(self, x):
            x = F.relu(self.affine1(x))
            return self.action_head(x), self.value_head(x)

    parser = argparse.ArgumentParser(description='PyTorch actor-critic example')
    parser.add_argument('--gamma', type=float, default=0.99, metavar='G', help='discount factor (default: 0.99)')
    parser.add_argument('--seed', type=int, default=543, metavar='N', help='random seed (default: 543)')
    parser.add_argument('--entropy-coef', type=float, default=0.01)
    parser.add_argument('--value-coef', type=float, default=0.5)
    parser.add_argument('--max-grad-norm', type=float, default=0.5)
    parser.add_argument('--log-interval', type=int, default=10, metavar='N')
    args = parser.parse_args(['--gamma', '0.9'])
    env = Corridor()
    torch.manual_seed(args.seed)
    model = Policy()
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=3e-2)
    eps = np.finfo(np.float32).eps.item()
    draws = iter(range(10 ** 6))

    def select_action(state_):
        state_ = torch.from_numpy(state_).float()
        logits, state_value = model(state_)
        m_ = Categorical(logits=logits)
        action = replayed(m, replay, next(draws), m_.sample())
        model.saved_actions.append(SavedAction(m_.log_prob(action), state_value, m_.entropy()))
        return action.item()

    def finish_episode():
        R = 0
        saved_actions = model.saved_actions
        policy_losses = []
        value_losses = []
        returns = []
        for r in model.rewards[::-1]:
            R = r + args.gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for (log_prob, value, _), R in zip(saved_actions, returns):
            advantage = R - value.item()
            policy_losses.append(-log_prob * advantage)
            value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
        entropy = torch.stack([a.entropy for a in saved_actions]).mean()
        optimizer.zero_grad()
        loss = torch.stack(policy_losses).sum() + args.value_coef * torch.stack(value_losses).sum() - \
            args.entropy_coef * entropy
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        optimizer.step()
        del model.rewards[:]
        del model.saved_actions[:]
        return [loss.item(), entropy.item(), norm.item()]

    running_reward = 0
    record = []
    for i_episode in range(1, 4):
        state_, _ = env.reset(seed=args.seed + i_episode)
        ep_reward = 0
        for t in range(1, 6):
            action = select_action(state_)
            state_, reward, done, _, _ = env.step(action)
            model.rewards.append(reward)
            ep_reward += reward
            if done:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        record += finish_episode() + [ep_reward, running_reward, t]
    return init, record + summary(model.parameters())


def test_actor_critic_a2c():
    compare(actor_critic_a2c, replay={})


# (j) pytorch/examples' super_resolution main.py with fast_neural_style's losses beside it: argparse
# (--upscale_factor, --batchSize, --nEpochs, --lr, --seed), the Net of convolutions ending in nn.PixelShuffle with
# init.orthogonal_(..., init.calculate_gain('relu')), low-resolution inputs by F.interpolate(mode='bicubic') of the
# targets, MSELoss plus a total-variation term (torch.sum(torch.abs(y[:, :, :, :-1] - y[:, :, :, 1:]))) and a style
# term on Gram matrices (features.bmm(features_t) / (ch * h * w)), the PSNR by 10 * log10(1 / mse.item()) under
# torch.no_grad(), and checkpoint(epoch) saving "model_epoch_{}.pth" (its state_dict: tnet does not pickle modules)
def super_resolution_main(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    init_ = nn.init
    rng = np.random.default_rng(9)

    class Net(nn.Module):
        def __init__(self, upscale_factor):
            super(Net, self).__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 8, (5, 5), (1, 1), (2, 2))
            self.conv2 = nn.Conv2d(8, 8, (3, 3), (1, 1), (1, 1))
            self.conv3 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
            self._initialize_weights()

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.pixel_shuffle(self.conv3(x))
            return x

        def _initialize_weights(self):
            init_.orthogonal_(self.conv1.weight, init_.calculate_gain('relu'))
            init_.orthogonal_(self.conv2.weight, init_.calculate_gain('relu'))
            init_.orthogonal_(self.conv3.weight)

    def gram_matrix(y):
        (b, ch, h, w) = y.size()
        features = y.view(b, ch, w * h)
        features_t = features.transpose(1, 2)
        gram = features.bmm(features_t) / (ch * h * w)
        return gram

    def total_variation(y):
        return torch.sum(torch.abs(y[:, :, :, :-1] - y[:, :, :, 1:])) + \
            torch.sum(torch.abs(y[:, :, :-1, :] - y[:, :, 1:, :]))

    parser = argparse.ArgumentParser(description='PyTorch Super Res Example')
    parser.add_argument('--upscale_factor', type=int, required=True, help="super resolution upscale factor")
    parser.add_argument('--batchSize', type=int, default=64, help='training batch size')
    parser.add_argument('--testBatchSize', type=int, default=10, help='testing batch size')
    parser.add_argument('--nEpochs', type=int, default=2, help='number of epochs to train for')
    parser.add_argument('--lr', type=float, default=0.01, help='Learning Rate. Default=0.01')
    parser.add_argument('--tv-weight', type=float, default=1e-4)
    parser.add_argument('--style-weight', type=float, default=10.)
    parser.add_argument('--seed', type=int, default=123, help='random seed to use. Default=123')
    opt = parser.parse_args(['--upscale_factor', '2', '--batchSize', '2', '--testBatchSize', '2', '--nEpochs', '2'])
    torch.manual_seed(opt.seed)
    device = torch.device("cpu")
    targets = torch.from_numpy(rng.uniform(0, 1, (4, 1, 6, 6)).astype(np.float32))
    inputs = F.interpolate(targets, scale_factor=1 / opt.upscale_factor, mode='bicubic', align_corners=False)
    loader = m.data.DataLoader(m.data.TensorDataset(inputs, targets), batch_size=opt.batchSize, shuffle=False)
    model = Net(upscale_factor=opt.upscale_factor).to(device)
    init = load(m, model, state)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=opt.lr)
    record = []

    def train(epoch):
        epoch_loss = 0
        for iteration, batch in enumerate(loader, 1):
            input, target = batch[0].to(device), batch[1].to(device)
            optimizer.zero_grad()
            out = model(input)
            loss = criterion(out, target) + opt.tv_weight * total_variation(out) + \
                opt.style_weight * criterion(gram_matrix(out), gram_matrix(target))
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
        record.append(epoch_loss / len(loader))

    def test():
        avg_psnr = 0
        with torch.no_grad():
            for batch in loader:
                input, target = batch[0].to(device), batch[1].to(device)
                prediction = model(input)
                mse = criterion(prediction, target)
                psnr = 10 * math.log10(1 / mse.item())
                avg_psnr += psnr
        record.append(avg_psnr / len(loader))

    with tempfile.TemporaryDirectory() as tmp:
        def checkpoint(epoch):
            model_out_path = os.path.join(tmp, "model_epoch_{}.pth".format(epoch))
            torch.save(model.state_dict(), model_out_path)
            return model_out_path

        for epoch in range(1, opt.nEpochs + 1):
            train(epoch)
            test()
            path = checkpoint(epoch)
        model2 = Net(opt.upscale_factor)
        model2.load_state_dict(torch.load(path))
    assert torch.equal(model2(inputs[:1]), model(inputs[:1]))
    return init, record + summary(model.parameters())


def test_super_resolution_main():
    compare(super_resolution_main)


# (k) a Hugging-Face-free text classification fine-tune: a vocabulary dict, a Dataset of token ids, a collate_fn
# padding by pad_sequence(batch_first=True) with attention_mask = (input_ids != pad_id).long(), masked mean pooling
# clamped by clamp(min=1e-9), get_linear_schedule_with_warmup written as a LambdaLR over a callable class (whose
# __dict__ its state_dict keeps), AdamW over no-decay groups, gradient accumulation with model.zero_grad(
# set_to_none=True), torch.inference_mode() evaluation with macro F1 in numpy, the best score's model and the
# optimizer and scheduler saved into an io.BytesIO and restored into fresh objects whose next step matches
def text_classifier_finetune(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    import io
    pad_sequence = torch.nn.utils.rnn.pad_sequence
    texts = ['good movie', 'bad plot and bad acting', 'great fun', 'boring', 'not good at all', 'loved it',
             'awful', 'fine acting great plot']
    labels = [1, 0, 1, 0, 0, 1, 0, 1]
    vocab = {'[PAD]': 0, '[UNK]': 1}
    for t in texts:
        for w in t.split():
            vocab.setdefault(w, len(vocab))

    class TextDataset(m.data.Dataset):
        def __init__(self, texts, labels):
            self.texts, self.labels = texts, labels

        def __len__(self):
            return len(self.texts)

        def __getitem__(self, idx):
            ids = [vocab.get(w, vocab['[UNK]']) for w in self.texts[idx].split()]
            return {'input_ids': torch.tensor(ids, dtype=torch.long), 'labels': torch.tensor(self.labels[idx])}

    def collate_fn(batch):
        input_ids = pad_sequence([b['input_ids'] for b in batch], batch_first=True, padding_value=vocab['[PAD]'])
        return {'input_ids': input_ids, 'attention_mask': (input_ids != vocab['[PAD]']).long(),
                'labels': torch.stack([b['labels'] for b in batch])}

    class Classifier(nn.Module):
        def __init__(self, vocab_size, dim=8, n_labels=2):
            super().__init__()
            self.embeddings = nn.Embedding(vocab_size, dim, padding_idx=0)
            self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
            self.dropout = nn.Dropout(0.0)
            self.classifier = nn.Linear(dim, n_labels)

        def forward(self, input_ids, attention_mask, labels=None):
            h = self.encoder(self.embeddings(input_ids))
            mask = attention_mask.unsqueeze(-1).float()
            pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            logits = self.classifier(self.dropout(pooled))
            loss = F.cross_entropy(logits, labels) if labels is not None else None
            return {'loss': loss, 'logits': logits}

    class LinearWarmup:
        def __init__(self, num_warmup_steps, num_training_steps):
            self.num_warmup_steps, self.num_training_steps = num_warmup_steps, num_training_steps

        def __call__(self, current_step):
            if current_step < self.num_warmup_steps:
                return float(current_step) / float(max(1, self.num_warmup_steps))
            return max(0.0, float(self.num_training_steps - current_step) /
                       float(max(1, self.num_training_steps - self.num_warmup_steps)))

    def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
        return m.lr_scheduler.LambdaLR(optimizer, LinearWarmup(num_warmup_steps, num_training_steps), last_epoch)

    def macro_f1(y_true, y_pred, n=2):
        f1s = []
        for c in range(n):
            tp = np.sum((y_pred == c) & (y_true == c))
            fp, fn = np.sum((y_pred == c) & (y_true != c)), np.sum((y_pred != c) & (y_true == c))
            f1s.append(2 * tp / max(2 * tp + fp + fn, 1))
        return np.mean(f1s)

    train_loader = m.data.DataLoader(TextDataset(texts, labels), batch_size=2, shuffle=False, collate_fn=collate_fn)
    eval_loader = m.data.DataLoader(TextDataset(texts[:4], labels[:4]), batch_size=4, collate_fn=collate_fn)
    epochs, accum = 2, 2

    def build():
        model = Classifier(len(vocab))
        no_decay = ['bias', 'LayerNorm.weight']
        grouped = [{'params': [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
                    'weight_decay': 0.01},
                   {'params': [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
                    'weight_decay': 0.0}]
        optimizer = optim.AdamW(grouped, lr=5e-2)
        total = epochs * len(train_loader) // accum
        return model, optimizer, get_linear_schedule_with_warmup(optimizer, 1, total)

    model, optimizer, scheduler = build()
    init = load(m, model, state)
    record, best_score, buffer = [], -1.0, io.BytesIO()
    for epoch in range(epochs):
        model.train()
        for step, batch in enumerate(train_loader):
            outputs = model(**batch)
            loss = outputs['loss'] / accum
            loss.backward()
            record.append(loss.item())
            if (step + 1) % accum == 0:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                model.zero_grad(set_to_none=True)
        model.eval()
        preds, golds = [], []
        with torch.inference_mode():
            for batch in eval_loader:
                logits = model(batch['input_ids'], batch['attention_mask'])['logits']
                preds.extend(logits.argmax(-1).tolist())
                golds.extend(batch['labels'].tolist())
        score = macro_f1(np.array(golds), np.array(preds))
        record += [float(score), scheduler.get_last_lr()[0]]
        if score > best_score:
            best_score = score
            buffer = io.BytesIO()
            torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(),
                        'scheduler': scheduler.state_dict(), 'score': score}, buffer)
    buffer.seek(0)
    ckpt = torch.load(buffer, weights_only=False)
    assert ckpt['scheduler']['lr_lambdas'][0] == {'num_warmup_steps': 1, 'num_training_steps': 4}
    assert type(ckpt['score']) is np.float64  # a numpy scalar comes back as one
    model2, optimizer2, scheduler2 = build()
    model2.load_state_dict(ckpt['model'])
    optimizer2.load_state_dict(ckpt['optimizer'])
    scheduler2.load_state_dict(ckpt['scheduler'])
    batch = next(iter(train_loader))
    model2(**batch)['loss'].backward()
    optimizer2.step()
    scheduler2.step()
    record += [float(ckpt['score']), scheduler2.get_last_lr()[0]]
    return init, record + summary(model.parameters()) + summary(model2.parameters())


def test_text_classifier_finetune():
    compare(text_classifier_finetune)


# (l) pytorch/examples' vae/main.py: argparse (--batch-size, --epochs, --no-accel, --seed, --log-interval), the VAE
# of fc1, fc21/fc22 and fc3/fc4 with reparameterize's std = torch.exp(0.5*logvar) and eps = torch.randn_like(std)
# (torch replays tnet's draws), loss_function's binary_cross_entropy(recon_x, x.view(-1, D), reduction='sum') plus
# the KL term -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()), train_loss / len(train_loader.dataset), the
# test's comparison by torch.cat of the inputs and recon_batch.view(...)[:n] on the first batch, and the epoch's
# sample = model.decode(torch.randn(64, 20)) under torch.no_grad() (the images' save_image left out)
def vae_main(m, state=None, replay=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(11)
    D, Z = 16, 2
    draws = iter(range(10 ** 6))

    class VAE(nn.Module):
        def __init__(self):
            super(VAE, self).__init__()
            self.fc1 = nn.Linear(D, 8)
            self.fc21 = nn.Linear(8, Z)
            self.fc22 = nn.Linear(8, Z)
            self.fc3 = nn.Linear(Z, 8)
            self.fc4 = nn.Linear(8, D)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar):
            std = torch.exp(0.5*logvar)
            eps = replayed(m, replay, next(draws), torch.randn_like(std))
            return mu + eps*std

        def decode(self, z):
            h3 = F.relu(self.fc3(z))
            return torch.sigmoid(self.fc4(h3))

        def forward(self, x):
            mu, logvar = self.encode(x.view(-1, D))
            z = self.reparameterize(mu, logvar)
            return self.decode(z), mu, logvar

    # Reconstruction + KL divergence losses summed over all elements and batch
    def loss_function(recon_x, x, mu, logvar):
        BCE = F.binary_cross_entropy(recon_x, x.view(-1, D), reduction='sum')
        # see Appendix B from VAE paper:
        # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
        # https://arxiv.org/abs/1312.6114
        # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
        KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return BCE + KLD

    parser = argparse.ArgumentParser(description='VAE MNIST Example')
    parser.add_argument('--batch-size', type=int, default=128, metavar='N')
    parser.add_argument('--epochs', type=int, default=10, metavar='N')
    parser.add_argument('--no-accel', action='store_true', help='disables accelerator')
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N')
    args = parser.parse_args(['--batch-size', '3', '--epochs', '2', '--log-interval', '1', '--no-accel'])
    use_accel = not args.no_accel and torch.accelerator.is_available()
    torch.manual_seed(args.seed)
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    images = rng.uniform(0, 1, (6, 1, 4, 4)).astype(np.float32)
    train_loader = m.data.DataLoader(m.data.TensorDataset(torch.from_numpy(images), torch.zeros(6)),
                                     batch_size=args.batch_size, shuffle=False)
    test_loader = m.data.DataLoader(m.data.TensorDataset(torch.from_numpy(images[:3]), torch.zeros(3)),
                                    batch_size=args.batch_size, shuffle=False)
    model = VAE().to(device)
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    record = []

    def train(epoch):
        model.train()
        train_loss = 0
        for batch_idx, (data, _) in enumerate(train_loader):
            data = data.to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                record.append(loss.item() / len(data))
        record.append(train_loss / len(train_loader.dataset))

    def test(epoch):
        model.eval()
        test_loss = 0
        with torch.no_grad():
            for i, (data, _) in enumerate(test_loader):
                data = data.to(device)
                recon_batch, mu, logvar = model(data)
                test_loss += loss_function(recon_batch, data, mu, logvar).item()
                if i == 0:
                    n = min(data.size(0), 8)
                    comparison = torch.cat([data[:n], recon_batch.view(args.batch_size, 1, 4, 4)[:n]])
                    record.append(comparison.sum().item())
        test_loss /= len(test_loader.dataset)
        record.append(test_loss)

    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test(epoch)
        with torch.no_grad():
            sample = replayed(m, replay, next(draws), torch.randn(64, Z)).to(device)
            sample = model.decode(sample).cpu()
            record.append(sample.view(64, 1, 4, 4).mean().item())
    return init, record + summary(model.parameters())


def test_vae_main():
    compare(vae_main, replay={})
