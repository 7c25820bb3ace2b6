"""Beginners' code the earlier files leave out, written from memory in its sources' styles and ported by its imports
alone, as test_ported_scripts.py: pytorch/tutorials' NLP From Scratch name classifier as it reads since 2024 (a
CharRNN over nn.RNN, NamesDataset with "_" for unknown letters, random_split by fractions with a seeded generator,
batches by np.array_split of a shuffled index list, a loss summed over a batch's names, clip_grad_norm_, a confusion
matrix normalised row by row); the "Training with PyTorch" tutorial of the Introduction to PyTorch series
(GarmentClassifier, train_one_epoch with its running and last loss, validation under model.eval() and no_grad summed
into a tensor, the best model saved by its state_dict with a timestamp and loaded into a fresh one); a Keras-style
fit() with a tqdm bar and set_postfix, a history dict, a torchmetrics-like accuracy by (preds == y).sum().item() and
Jeff Heaton's EarlyStopping with patience, min_delta and restore_best_weights by copy.deepcopy(state_dict());
the saving and loading recipes (what a state_dict holds, a general checkpoint of model and optimizer states, the
epoch and the loss resumed as if never stopped, several models in one file, warm-starting by strict=False and its
missing and unexpected keys, map_location); the autograd tutorials (the quickstart's w, b, z and
binary_cross_entropy_with_logits, grad_fn, detach, the Jacobian product of torch.eye(4, 5) accumulating over
retain_graph calls; the 60-minute blitz's Q = 3a^3 - b^2 with an external gradient, requires_grad of sums, a
frozen model with a new fc); and kanncaa1's Kaggle digit recognizer (pandas' float32 table as a numpy array,
from_numpy(...).type(torch.LongTensor), Variable, torch.max(outputs.data, 1)[1], accuracy as 100 * a tensor count /
float(total), loss.data kept in a list); and the "Learn the Basics" pages the quickstart's loop leaves out (Tensors'
out= products into rand_like buffers, a custom Dataset with transform and target_transform, torch.randint(n,
size=(1,)), the Transforms page's one-hot target by scatter_ of a 0-d index with value=, nn.Flatten and Softmax),
which found that tnet's randint took no size= after high alone and its scatter_ no 0-d index; and yunjey's
pytorch-tutorial (linear and logistic regression, the bidirectional LSTM over image rows with update_lr through
param_groups, the LSTM language model's Dictionary, Corpus of a LongTensor filled by index, detached states and
multinomial sampling). Each runs in tnet, then in torch from tnet's initial weights (state_dict
through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy (or Python's random, seeded
alike on both sides) draws what a script draws, or torch replays tnet's draws (`replayed`); images are small, widths
reduced and loaders unshuffled, and runs take one to four short epochs. Each script seeds torch first, as its
source's main does."""
import copy
import os
import random
import string
import tempfile
import unicodedata
from datetime import datetime

import numpy as np
from tqdm import tqdm

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def replayed(m, replay, key, t):
    """t as tnet drew it: tnet's run keeps its draw under key, torch's run takes that draw in place of its own."""
    return m.torch.tensor(replay.setdefault(key, t.detach().cpu().numpy().copy()))


NAMES = {'English': ['Cox', 'Day', 'Ng'], 'French': ['Béra', 'Roy', 'Gué'], 'Japanese': ['Abe', 'Ito', 'Sato']}


# (a) pytorch/tutorials' intermediate/char_rnn_classification_tutorial.py (the 2024 version): allowed_characters with
# "_" for what is not in it, unicodeToAscii, lineToTensor, NamesDataset keeping label and line tensors (label tensors
# by labels_uniq.index, dtype=torch.long), random_split([.85, .15]) with a seeded Generator, CharRNN over nn.RNN whose
# final hidden state feeds h2o and LogSoftmax, label_from_output by topk(1), train() over np.array_split batches of a
# shuffled index list with the batch's losses summed, clip_grad_norm_(.., 3), SGD; evaluate()'s confusion matrix
# filled by confusion[label_i][guess_i] += 1 and normalised row by row where its sum is > 0 (names here, no files)
def char_rnn_2024(m, state=None, replay=None):
    torch, nn, data = m.torch, m.nn, m.data
    torch.manual_seed(2024)
    random.seed(2024)
    allowed_characters = string.ascii_letters + " .,;'" + "_"
    n_letters = len(allowed_characters)

    def unicodeToAscii(s):
        return ''.join(
            c for c in unicodedata.normalize('NFD', s)
            if unicodedata.category(c) != 'Mn'
            and c in allowed_characters
        )

    def letterToIndex(letter):
        # return our out-of-vocabulary character if we encounter a letter unknown to our model
        if letter not in allowed_characters:
            return allowed_characters.find("_")
        else:
            return allowed_characters.find(letter)

    def lineToTensor(line):
        tensor = torch.zeros(len(line), 1, n_letters)
        for li, letter in enumerate(line):
            tensor[li][0][letterToIndex(letter)] = 1
        return tensor

    assert unicodeToAscii('Ślusàrski') == 'Slusarski' and letterToIndex('ł') == n_letters - 1

    class NamesDataset(data.Dataset):
        def __init__(self, names):
            self.data = []
            self.data_tensors = []
            self.labels = []
            self.labels_tensors = []
            labels_set = set()  # set of all classes
            for label, lines in names.items():
                labels_set.add(label)
                for name in lines:
                    self.data.append(name)
                    self.data_tensors.append(lineToTensor(name))
                    self.labels.append(label)
            # Cache the tensor representation of the labels
            self.labels_uniq = sorted(labels_set)  # list(labels_set) in the tutorial: its order varies by process
            for idx in range(len(self.labels)):
                temp_tensor = torch.tensor([self.labels_uniq.index(self.labels[idx])], dtype=torch.long)
                self.labels_tensors.append(temp_tensor)

        def __len__(self):
            return len(self.data)

        def __getitem__(self, idx):
            data_item = self.data[idx]
            data_label = self.labels[idx]
            data_tensor = self.data_tensors[idx]
            label_tensor = self.labels_tensors[idx]
            return label_tensor, data_tensor, data_label, data_item

    alldata = NamesDataset(NAMES)
    if 'split' not in replay:
        train_set, test_set = data.random_split(alldata, [.85, .15], generator=torch.Generator().manual_seed(2024))
        replay['split'] = (list(train_set.indices), list(test_set.indices))
    else:
        train_set, test_set = (data.Subset(alldata, i) for i in replay['split'])
    assert (len(train_set), len(test_set)) == (8, 1)

    class CharRNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super(CharRNN, self).__init__()
            self.rnn = nn.RNN(input_size, hidden_size)
            self.h2o = nn.Linear(hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, line_tensor):
            rnn_out, hidden = self.rnn(line_tensor)
            output = self.h2o(hidden[0])
            output = self.softmax(output)
            return output

    n_hidden = 8
    rnn = CharRNN(n_letters, n_hidden, len(alldata.labels_uniq))
    init = load(m, rnn, state)

    def label_from_output(output, output_labels):
        top_n, top_i = output.topk(1)
        label_i = top_i[0].item()
        return output_labels[label_i], label_i

    def train(rnn, training_data, n_epoch=10, n_batch_size=64, report_every=50, learning_rate=0.2,
              criterion=nn.NLLLoss()):
        current_loss = 0
        all_losses = []
        rnn.train()
        optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)
        for iter in range(1, n_epoch + 1):
            rnn.zero_grad()  # clear the gradients
            # create some minibatches; we cannot use dataloaders because each of our names is a different length
            batches = list(range(len(training_data)))
            random.shuffle(batches)
            batches = np.array_split(batches, len(batches) // n_batch_size)
            for idx, batch in enumerate(batches):
                batch_loss = 0
                for i in batch:  # for each example in this batch
                    (label_tensor, text_tensor, label, text) = training_data[i]
                    output = rnn.forward(text_tensor)
                    loss = criterion(output, label_tensor)
                    batch_loss += loss
                # optimize parameters
                batch_loss.backward()
                nn.utils.clip_grad_norm_(rnn.parameters(), 3)
                optimizer.step()
                optimizer.zero_grad()
                current_loss += batch_loss.item() / len(batch)
            all_losses.append(current_loss / len(batches))
            if iter % report_every == 0:
                print(f"{iter} ({iter / n_epoch:.0%}): \t average batch loss = {all_losses[-1]}")
            current_loss = 0
        return all_losses

    all_losses = train(rnn, train_set, n_epoch=1, n_batch_size=4, report_every=1, learning_rate=0.15)

    def evaluate(rnn, testing_data, classes):
        confusion = torch.zeros(len(classes), len(classes))
        rnn.eval()  # set to eval mode
        with torch.no_grad():  # do not record the gradients during eval phase
            for i in range(len(testing_data)):
                (label_tensor, text_tensor, label, text) = testing_data[i]
                output = rnn(text_tensor)
                guess, guess_i = label_from_output(output, classes)
                label_i = classes.index(label)
                confusion[label_i][guess_i] += 1
        # Normalize by dividing every row by its sum
        for i in range(len(classes)):
            denom = confusion[i].sum()
            if denom > 0:
                confusion[i] = confusion[i] / denom
        return confusion

    confusion = evaluate(rnn, test_set, alldata.labels_uniq)
    return init, all_losses + [confusion.sum().item()] + summary(rnn.parameters())


def test_char_rnn_2024():
    compare(char_rnn_2024, replay={})


# (b) pytorch/tutorials' beginner/introyt/trainingyt.py: GarmentClassifier (conv, pool, conv, pool, three Linears; here
# 3x3 kernels over 10x10 images), CrossEntropyLoss, SGD with momentum, train_one_epoch(epoch_index, tb_writer) reporting
# the mean loss of every few batches (a tb_x step), the epoch loop with model.train(True), validation under
# model.eval() and torch.no_grad() whose losses sum into a tensor (0.0 + tensor), avg_vloss < best_vloss on a tensor,
# the best model's state_dict saved under a timestamped name and loaded into a fresh GarmentClassifier. The writer is
# a stand-in keeping the scalars (torch.utils.tensorboard needs the tensorboard package); loaders are unshuffled
def training_with_pytorch(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def loader(n, seed):
        r = np.random.default_rng(seed)
        ds = m.data.TensorDataset(torch.tensor(normal(r, n, 1, 10, 10)), torch.tensor(r.integers(0, 10, n)))
        return m.data.DataLoader(ds, batch_size=2, shuffle=False)

    training_loader, validation_loader = loader(8, 1), loader(4, 2)

    class Writer:  # SummaryWriter's add_scalar, add_scalars and flush
        def __init__(self, log_dir):
            self.log_dir, self.scalars = log_dir, []

        def add_scalar(self, tag, value, step):
            self.scalars.append((tag, float(value), step))

        def add_scalars(self, tag, values, step):
            self.scalars += [(f"{tag}/{k}", float(v), step) for k, v in values.items()]

        def flush(self):
            pass

    class GarmentClassifier(nn.Module):
        def __init__(self):
            super(GarmentClassifier, self).__init__()
            self.conv1 = nn.Conv2d(1, 6, 3)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 3)
            self.fc1 = nn.Linear(16 * 1 * 1, 12)
            self.fc2 = nn.Linear(12, 8)
            self.fc3 = nn.Linear(8, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = x.view(-1, 16 * 1 * 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    model = GarmentClassifier()
    init = load(m, model, state)
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def train_one_epoch(epoch_index, tb_writer):
        running_loss = 0.
        last_loss = 0.
        # Here, we use enumerate(training_loader) instead of iter(training_loader) so that we can track the batch
        # index and do some intra-epoch reporting
        for i, data in enumerate(training_loader):
            inputs, labels = data
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = loss_fn(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if i % 2 == 1:
                last_loss = running_loss / 2  # loss per batch
                print('  batch {} loss: {}'.format(i + 1, last_loss))
                tb_x = epoch_index * len(training_loader) + i + 1
                tb_writer.add_scalar('Loss/train', last_loss, tb_x)
                running_loss = 0.
        return last_loss

    timestamp = datetime.now().strftime('%Y%m%d_%H%M%S')
    writer = Writer('runs/fashion_trainer_{}'.format(timestamp))
    epoch_number = 0
    EPOCHS = 2
    best_vloss = 1_000_000.
    losses = []
    with tempfile.TemporaryDirectory() as root:
        for epoch in range(EPOCHS):
            print('EPOCH {}:'.format(epoch_number + 1))
            model.train(True)
            avg_loss = train_one_epoch(epoch_number, writer)
            running_vloss = 0.0
            model.eval()
            with torch.no_grad():
                for i, vdata in enumerate(validation_loader):
                    vinputs, vlabels = vdata
                    voutputs = model(vinputs)
                    vloss = loss_fn(voutputs, vlabels)
                    running_vloss += vloss
            avg_vloss = running_vloss / (i + 1)
            print('LOSS train {} valid {}'.format(avg_loss, avg_vloss))
            writer.add_scalars('Training vs. Validation Loss',
                               {'Training': avg_loss, 'Validation': avg_vloss},
                               epoch_number + 1)
            writer.flush()
            losses += [avg_loss, avg_vloss.item()]
            if avg_vloss < best_vloss:
                best_vloss = avg_vloss
                model_path = os.path.join(root, 'model_{}_{}'.format(timestamp, epoch_number))
                torch.save(model.state_dict(), model_path)
            epoch_number += 1
        saved_model = GarmentClassifier()
        saved_model.load_state_dict(torch.load(model_path))
    assert [s[2] for s in writer.scalars] == [2, 4, 1, 1, 6, 8, 2, 2]
    x = torch.tensor(normal(rng, 2, 1, 10, 10))
    with torch.no_grad():
        out = saved_model.eval()(x)
    return init, losses + [s[1] for s in writer.scalars] + summary([out]) + summary(model.parameters())


def test_training_with_pytorch():
    compare(training_with_pytorch)


# (c) a Keras-style fit(): a tqdm bar per epoch with set_postfix(loss=, acc=), a history dict of loss, accuracy,
# val_loss and val_accuracy, a torchmetrics-like Accuracy (update by (preds == y).sum().item(), compute, reset), the
# validation under model.eval() and torch.no_grad(), and Jeff Heaton's EarlyStopping (patience, min_delta,
# restore_best_weights by copy.deepcopy(model.state_dict()), its status line) stopping the loop; Adam at a high lr on
# random labels so that the validation loss turns up and the patience runs out
def keras_style_fit(m, state=None):
    torch, nn, data = m.torch, m.nn, m.data
    torch.manual_seed(42)
    rng = np.random.default_rng(42)

    class Accuracy:
        def __init__(self):
            self.reset()

        def update(self, preds, target):
            self.correct += (preds == target).sum().item()
            self.total += target.size(0)

        def compute(self):
            return self.correct / max(self.total, 1)

        def reset(self):
            self.correct, self.total = 0, 0

    class EarlyStopping:
        def __init__(self, patience=5, min_delta=0, restore_best_weights=True):
            self.patience = patience
            self.min_delta = min_delta
            self.restore_best_weights = restore_best_weights
            self.best_model = None
            self.best_loss = None
            self.counter = 0
            self.status = ""

        def __call__(self, model, val_loss):
            if self.best_loss is None:
                self.best_loss = val_loss
                self.best_model = copy.deepcopy(model.state_dict())
            elif self.best_loss - val_loss >= self.min_delta:
                self.best_model = copy.deepcopy(model.state_dict())
                self.best_loss = val_loss
                self.counter = 0
                self.status = f"Improvement found, counter reset to {self.counter}"
            else:
                self.counter += 1
                self.status = f"No improvement in the last {self.counter} epochs"
                if self.counter >= self.patience:
                    self.status = f"Early stopping triggered after {self.counter} epochs."
                    if self.restore_best_weights:
                        model.load_state_dict(self.best_model)
                    return True
            return False

    def fit(model, train_loader, val_loader, epochs, optimizer, loss_fn, early_stopping=None, device="cpu"):
        history = {'loss': [], 'accuracy': [], 'val_loss': [], 'val_accuracy': []}
        metric = Accuracy()
        for epoch in range(epochs):
            model.train()
            metric.reset()
            running_loss = 0.0
            pbar = tqdm(train_loader, desc=f"Epoch {epoch + 1}/{epochs}", unit="batch", leave=False)
            for x, y in pbar:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                outputs = model(x)
                loss = loss_fn(outputs, y)
                loss.backward()
                optimizer.step()
                running_loss += loss.item() * x.size(0)
                metric.update(outputs.argmax(dim=1), y)
                pbar.set_postfix(loss=loss.item(), acc=metric.compute())
            history['loss'].append(running_loss / len(train_loader.dataset))
            history['accuracy'].append(metric.compute())
            model.eval()
            metric.reset()
            val_loss = 0.0
            with torch.no_grad():
                for x, y in val_loader:
                    x, y = x.to(device), y.to(device)
                    outputs = model(x)
                    val_loss += loss_fn(outputs, y).item() * x.size(0)
                    _, preds = torch.max(outputs, 1)
                    metric.update(preds, y)
            val_loss /= len(val_loader.dataset)
            history['val_loss'].append(val_loss)
            history['val_accuracy'].append(metric.compute())
            if early_stopping is not None and early_stopping(model, val_loss):
                print(early_stopping.status)
                break
        return history

    X, Xv = normal(rng, 8, 6), normal(rng, 4, 6)
    train_ds = data.TensorDataset(torch.from_numpy(X), torch.from_numpy(rng.integers(0, 3, 8)))
    val_ds = data.TensorDataset(torch.from_numpy(Xv), torch.from_numpy(rng.integers(0, 3, 4)))
    train_loader = data.DataLoader(train_ds, batch_size=4, shuffle=False)
    val_loader = data.DataLoader(val_ds, batch_size=4)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    init = load(m, model, state)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    stopper = EarlyStopping(patience=1, min_delta=0.0)
    history = fit(model, train_loader, val_loader, 6, torch.optim.Adam(model.parameters(), lr=0.1),
                  nn.CrossEntropyLoss(), stopper, device)
    assert len(history['loss']) < 6 and stopper.status.startswith("Early stopping")
    best = min(history['val_loss'])
    with torch.no_grad():  # the restored weights are the best epoch's
        restored = sum(nn.CrossEntropyLoss(reduction='sum')(model(x.to(device)), y.to(device)).item()
                       for x, y in val_loader) / len(val_ds)
    assert abs(restored - best) < 1e-5 * max(1.0, best), (restored, best)
    return init, sum(history.values(), []) + summary(model.parameters())


def test_keras_style_fit():
    compare(keras_style_fit)


# (d) pytorch/tutorials' recipes on saving and loading: what_is_state_dict (state_dict() sizes and the optimizer's
# state and param_groups), saving_and_loading_a_general_checkpoint (a dict of epoch, model and optimizer
# state_dicts and the loss, torch.load(weights_only=True), model.train() and training resumed: the same steps as
# an uninterrupted run, momentum buffers included), saving_multiple_models_in_one_file (two models and their
# optimizers), warmstarting_model_using_parameters_from_a_different_model (load_state_dict(strict=False) and its
# missing and unexpected keys), and save_load_across_devices' map_location and model.to(device)
def checkpoint_recipes(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    class NetB(nn.Module):  # the warm-start target: fc1 as Net's, a new head
        def __init__(self):
            super(NetB, self).__init__()
            self.fc1 = nn.Linear(6, 8)
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            return self.head(torch.tanh(self.fc1(x)))

    nets = {'net': Net(), 'netA': Net(), 'netB': NetB()}
    init = {k: load(m, v, state and state[k]) for k, v in nets.items()}
    net, netA, netB = nets['net'], nets['netA'], nets['netB']
    batches = [(torch.from_numpy(normal(rng, 4, 6)), torch.from_numpy(rng.integers(0, 3, 4))) for _ in range(4)]
    criterion = nn.CrossEntropyLoss()

    def step(model, optimizer, x, y):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for param_tensor in net.state_dict():
        print(param_tensor, "\t", net.state_dict()[param_tensor].size())
    for var_name in optimizer.state_dict():
        print(var_name, "\t", optimizer.state_dict()[var_name])
    assert list(optimizer.state_dict()) == ['state', 'param_groups']
    assert optimizer.state_dict()['param_groups'][0]['params'] == [0, 1, 2, 3]
    losses = [step(net, optimizer, *b).item() for b in batches[:2]]
    assert sorted(optimizer.state_dict()['state']) == [0, 1, 2, 3]
    with tempfile.TemporaryDirectory() as root:
        PATH = os.path.join(root, "model.pt")
        EPOCH, LOSS = 5, step(net, optimizer, *batches[2])
        torch.save({
            'epoch': EPOCH,
            'model_state_dict': net.state_dict(),
            'optimizer_state_dict': optimizer.state_dict(),
            'loss': LOSS,
        }, PATH)
        # the uninterrupted run goes on...
        uninterrupted = step(net, optimizer, *batches[3]).item()
        # ...and the resumed one from the file
        model = Net()
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        checkpoint = torch.load(PATH, weights_only=True, map_location=device)
        model.load_state_dict(checkpoint['model_state_dict'])
        optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
        epoch = checkpoint['epoch']
        loss = checkpoint['loss']
        model.to(device)
        model.train()
        resumed = step(model, optimizer, *batches[3]).item()
        assert epoch == 5 and abs(loss.item() - LOSS.item()) == 0 and resumed == uninterrupted
        losses += [LOSS.item(), resumed]
        for a, b in zip(model.parameters(), net.parameters()):
            assert torch.equal(a, b)

        # several models in one file
        optimizerA = optim.SGD(netA.parameters(), lr=0.05, momentum=0.9)
        optimizerB = optim.Adam(netB.parameters(), lr=0.01)
        losses += [step(netA, optimizerA, *batches[0]).item(), step(netB, optimizerB, *batches[1]).item()]
        PATH = os.path.join(root, "models.tar")
        torch.save({
            'modelA_state_dict': netA.state_dict(),
            'modelB_state_dict': netB.state_dict(),
            'optimizerA_state_dict': optimizerA.state_dict(),
            'optimizerB_state_dict': optimizerB.state_dict(),
        }, PATH)
        modelA, modelB = Net(), NetB()
        optimA = optim.SGD(modelA.parameters(), lr=0.05, momentum=0.9)
        optimB = optim.Adam(modelB.parameters(), lr=0.01)
        checkpoint = torch.load(PATH, weights_only=True)
        modelA.load_state_dict(checkpoint['modelA_state_dict'])
        modelB.load_state_dict(checkpoint['modelB_state_dict'])
        optimA.load_state_dict(checkpoint['optimizerA_state_dict'])
        optimB.load_state_dict(checkpoint['optimizerB_state_dict'])
        modelA.train()
        modelB.train()
        losses += [step(modelA, optimA, *batches[2]).item(), step(modelB, optimB, *batches[3]).item()]

        # warm-starting NetB from Net's file: fc1 matches, the heads do not
        PATH = os.path.join(root, "net.pt")
        torch.save(net.state_dict(), PATH)
        result = modelB.load_state_dict(torch.load(PATH, weights_only=True), strict=False)
        assert result.missing_keys == ['head.weight', 'head.bias'], result
        assert result.unexpected_keys == ['fc2.weight', 'fc2.bias'], result
        assert torch.equal(modelB.fc1.weight, net.fc1.weight)
        losses.append(step(modelB, optimB, *batches[0]).item())
    return init, losses + summary(modelA.parameters()) + summary(modelB.parameters())


def test_checkpoint_recipes():
    compare(checkpoint_recipes)


# (e) pytorch/tutorials' autograd pages: the quickstart's autogradqs_tutorial (x ones, y zeros, w and b by randn with
# requires_grad, z = torch.matmul(x, w) + b, binary_cross_entropy_with_logits, z.grad_fn and loss.grad_fn, w.grad and
# b.grad, z under no_grad and z.detach() not requiring grad, the Jacobian product of out = (inp + 1).pow(2).t() over
# torch.eye(4, 5, requires_grad=True) accumulating over retain_graph calls until inp.grad.zero_()), and the
# 60-minute blitz's autograd_tutorial (a model's prediction minus random labels summed, SGD with momentum;
# Q = 3*a**3 - b**2 with external_grad, 9*a**2 == a.grad; requires_grad of x + y and x + z; every parameter frozen
# and model.fc replaced, the optimizer over all parameters moving the new fc alone). resnet18 is a small convnet
# with an fc; torch.rand's data is numpy's, torch.randn's w and b are tnet's replayed
def autograd_tutorials(m, state=None, replay=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.ones(5)  # input tensor
    y = torch.zeros(3)  # expected output
    w = replayed(m, replay, 'w', torch.randn(5, 3)).requires_grad_()
    b = replayed(m, replay, 'b', torch.randn(3)).requires_grad_()
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    print(f"Gradient function for z = {z.grad_fn}")
    print(f"Gradient function for loss = {loss.grad_fn}")
    assert z.grad_fn is not None and loss.grad_fn is not None
    loss.backward()
    print(w.grad)
    print(b.grad)
    out = [loss.item()] + summary([w.grad, b.grad])
    z = torch.matmul(x, w) + b
    print(z.requires_grad)
    with torch.no_grad():
        z = torch.matmul(x, w) + b
    print(z.requires_grad)
    assert not z.requires_grad
    z = torch.matmul(x, w) + b
    z_det = z.detach()
    assert z.requires_grad and not z_det.requires_grad
    inp = torch.eye(4, 5, requires_grad=True)
    res = (inp + 1).pow(2).t()
    res.backward(torch.ones_like(res), retain_graph=True)
    print(f"First call\n{inp.grad}")
    first = inp.grad.clone()
    res.backward(torch.ones_like(res), retain_graph=True)
    print(f"\nSecond call\n{inp.grad}")
    assert torch.equal(inp.grad, 2 * first)
    inp.grad.zero_()
    res.backward(torch.ones_like(res), retain_graph=True)
    print(f"\nCall after zeroing gradients\n{inp.grad}")
    assert torch.equal(inp.grad, first)
    out += summary([first])

    class SmallNet(nn.Module):  # resnet18 in the tutorial
        def __init__(self, num_classes=20):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, stride=2, padding=1)
            self.relu = nn.ReLU(inplace=True)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(4, num_classes)

        def forward(self, x):
            return self.fc(torch.flatten(self.avgpool(self.relu(self.conv1(x))), 1))

    model = SmallNet()
    init = load(m, model, state and state['model'])
    data = torch.from_numpy(rng.random((1, 3, 8, 8), dtype=np.float32))
    labels = torch.from_numpy(rng.random((1, 20), dtype=np.float32))
    prediction = model(data)  # forward pass
    loss = (prediction - labels).sum()
    loss.backward()  # backward pass
    optim = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    optim.step()  # gradient descent
    out.append(loss.item())

    a = torch.tensor([2., 3.], requires_grad=True)
    b = torch.tensor([6., 4.], requires_grad=True)
    Q = 3 * a ** 3 - b ** 2
    external_grad = torch.tensor([1., 1.])
    Q.backward(gradient=external_grad)
    # check if collected gradients are correct
    print(9 * a ** 2 == a.grad)
    print(-2 * b == b.grad)
    assert bool((9 * a ** 2 == a.grad).all()) and bool((-2 * b == b.grad).all())

    x = torch.rand(5, 5)
    y = torch.rand(5, 5)
    z = torch.rand((5, 5), requires_grad=True)
    a = x + y
    print(f"Does `a` require gradients?: {a.requires_grad}")
    b = x + z
    print(f"Does `b` require gradients?: {b.requires_grad}")
    assert not a.requires_grad and b.requires_grad

    # Freeze all the parameters in the network
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(4, 10)
    head = load(m, model.fc, state and state['fc'])
    # Optimize only the classifier
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    conv = model.conv1.weight.clone()
    loss = nn.functional.cross_entropy(model(data), torch.tensor([3]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    assert model.conv1.weight.grad is None and torch.equal(model.conv1.weight, conv)
    out.append(loss.item())
    return {'model': init, 'fc': head}, out + summary(model.parameters())


def test_autograd_tutorials():
    compare(autograd_tutorials, replay={})


# (f) kanncaa1's Kaggle kernel "Pytorch Tutorial for Deep Learning Lovers" (the digit recognizer's CNN): the CSV read
# with dtype=np.float32 (here a numpy table, label first), features / 255, a train_test_split by slices,
# torch.from_numpy(...).type(torch.LongTensor) targets, TensorDataset and DataLoader, num_epochs from n_iters, the
# CNNModel of cnn/relu/maxpool pairs and fc1, Variable(images.view(batch_size, 1, h, w)), the count-driven test
# pass with torch.max(outputs.data, 1)[1], correct += (predicted == labels).sum() as a tensor, accuracy = 100 *
# correct / float(total), and loss.data kept in loss_list (12x12 images, narrower convolutions, batches of 4)
def kaggle_digit_cnn(m, state=None):
    torch, nn = m.torch, m.nn
    Variable = m.torch.autograd.Variable
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    train = np.concatenate([rng.integers(0, 10, (16, 1)), rng.integers(0, 256, (16, 144))], 1).astype(np.float32)
    targets_numpy = train[:, 0]
    features_numpy = train[:, 1:] / 255  # normalization
    features_train, features_test = features_numpy[:12], features_numpy[12:]
    targets_train, targets_test = targets_numpy[:12], targets_numpy[12:]
    featuresTrain = torch.from_numpy(features_train)
    targetsTrain = torch.from_numpy(targets_train).type(torch.LongTensor)  # data type is long
    featuresTest = torch.from_numpy(features_test)
    targetsTest = torch.from_numpy(targets_test).type(torch.LongTensor)
    assert featuresTrain.dtype == torch.float32 and targetsTrain.dtype == torch.int64
    batch_size = 4
    n_iters = 6
    num_epochs = n_iters / (len(features_train) / batch_size)
    num_epochs = int(num_epochs)
    train = torch.utils.data.TensorDataset(featuresTrain, targetsTrain)
    test = torch.utils.data.TensorDataset(featuresTest, targetsTest)
    train_loader = torch.utils.data.DataLoader(train, batch_size=batch_size, shuffle=False)
    test_loader = torch.utils.data.DataLoader(test, batch_size=batch_size, shuffle=False)

    class CNNModel(nn.Module):
        def __init__(self):
            super(CNNModel, self).__init__()
            # Convolution 1
            self.cnn1 = nn.Conv2d(in_channels=1, out_channels=4, kernel_size=3, stride=1, padding=0)
            self.relu1 = nn.ReLU()
            # Max pool 1
            self.maxpool1 = nn.MaxPool2d(kernel_size=2)
            # Convolution 2
            self.cnn2 = nn.Conv2d(in_channels=4, out_channels=8, kernel_size=2, stride=1, padding=0)
            self.relu2 = nn.ReLU()
            # Max pool 2
            self.maxpool2 = nn.MaxPool2d(kernel_size=2)
            # Fully connected 1
            self.fc1 = nn.Linear(8 * 2 * 2, 10)

        def forward(self, x):
            out = self.cnn1(x)
            out = self.relu1(out)
            out = self.maxpool1(out)
            out = self.cnn2(out)
            out = self.relu2(out)
            out = self.maxpool2(out)
            out = out.view(out.size(0), -1)  # flatten
            out = self.fc1(out)
            return out

    model = CNNModel()
    init = load(m, model, state)
    error = nn.CrossEntropyLoss()
    learning_rate = 0.1
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    count = 0
    loss_list = []
    iteration_list = []
    accuracy_list = []
    for epoch in range(num_epochs):
        for i, (images, labels) in enumerate(train_loader):
            train = Variable(images.view(batch_size, 1, 12, 12))
            labels = Variable(labels)
            optimizer.zero_grad()
            outputs = model(train)
            loss = error(outputs, labels)
            loss.backward()
            optimizer.step()
            count += 1
            if count % 3 == 0:
                correct = 0
                total = 0
                for images, labels in test_loader:
                    test = Variable(images.view(batch_size, 1, 12, 12))
                    outputs = model(test)
                    predicted = torch.max(outputs.data, 1)[1]
                    total += len(labels)
                    correct += (predicted == labels).sum()
                accuracy = 100 * correct / float(total)
                loss_list.append(loss.data)
                iteration_list.append(count)
                accuracy_list.append(accuracy)
                print('Iteration: {}  Loss: {}  Accuracy: {} %'.format(count, loss.data, accuracy))
    assert iteration_list == [3, 6] and accuracy_list[0].dtype == torch.float32
    return init, [float(v) for v in loss_list] + summary(model.parameters())


def test_kaggle_digit_cnn():
    compare(kaggle_digit_cnn)


# (g) pytorch/tutorials' "Learn the Basics" pages the quickstart loop leaves out: Tensors (from data, from numpy,
# ones_like, rand_like(dtype=), shape tuples, tensor[..., -1], tensor[:, 1] = 0, cat, @ and .T, matmul and mul with
# out= into rand_like buffers, sum().item(), add_), the device line of torch.accelerator, Datasets & DataLoaders
# (a custom Dataset with transform and target_transform, a sample picked by torch.randint(len(ds), size=(1,)).item(),
# next(iter(dataloader)) and squeeze), Transforms (target_transform = Lambda(lambda y: torch.zeros(10,
# dtype=torch.float).scatter_(0, torch.tensor(y), value=1)), whose 0-d index found that tnet's scatter_ refused it),
# and Build the Neural Network (nn.Flatten, nn.Softmax(dim=1) and argmax(1), named_parameters); trained on the one-hot
# targets by CrossEntropyLoss and scored by pred.argmax(1) == y.argmax(1). The draws are numpy's; torch.rand_like's
# buffers are overwritten by out=
def learn_the_basics(m, state=None):
    torch, nn, data = m.torch, m.nn, m.data
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    print(f"Using {device} device")

    np_data = [[1, 2], [3, 4]]
    x_data = torch.tensor(np_data)
    x_np = torch.from_numpy(np.array(np_data))
    x_ones = torch.ones_like(x_data)  # retains the properties of x_data
    x_rand = torch.rand_like(x_data, dtype=torch.float)  # overrides the datatype of x_data
    assert x_ones.dtype == x_np.dtype == torch.int64 and x_rand.dtype == torch.float32
    shape = (2, 3,)
    assert torch.rand(shape).shape == torch.ones(shape).shape == torch.zeros(shape).shape == (2, 3)
    tensor = torch.from_numpy(normal(rng, 4, 4))
    print(f"Shape of tensor: {tensor.shape}\nDatatype of tensor: {tensor.dtype}\nDevice tensor is stored on: "
          f"{tensor.device}")
    print(f"First row: {tensor[0]}")
    print(f"First column: {tensor[:, 0]}")
    print(f"Last column: {tensor[..., -1]}")
    tensor[:, 1] = 0
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    y3 = torch.rand_like(y1)
    torch.matmul(tensor, tensor.T, out=y3)
    z1 = tensor * tensor
    z2 = tensor.mul(tensor)
    z3 = torch.rand_like(tensor)
    torch.mul(tensor, tensor, out=z3)
    agg = tensor.sum()
    agg_item = agg.item()
    print(agg_item, type(agg_item))
    tensor.add_(5)
    out = [agg_item] + summary([t1, y1, y2, y3, z1, z2, z3, tensor])

    class CustomImageDataset(data.Dataset):  # images from numpy in place of read_image over annotations_file
        def __init__(self, images, labels, transform=None, target_transform=None):
            self.images, self.img_labels = images, labels
            self.transform = transform
            self.target_transform = target_transform

        def __len__(self):
            return len(self.img_labels)

        def __getitem__(self, idx):
            image = self.images[idx]
            label = int(self.img_labels[idx])
            if self.transform:
                image = self.transform(image)
            if self.target_transform:
                label = self.target_transform(label)
            return image, label

    def ToTensor():  # torchvision's ToTensor on a uint8 HxW image: a float tensor scaled to [0, 1], one channel
        return lambda pic: torch.from_numpy(pic).float().div(255).unsqueeze(0)

    def Lambda(lambd):
        return lambd

    ds = CustomImageDataset(
        rng.integers(0, 256, (8, 6, 6)).astype(np.uint8), rng.integers(0, 10, 8),
        transform=ToTensor(),
        target_transform=Lambda(lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1))
    )
    sample_idx = torch.randint(len(ds), size=(1,)).item()
    img, label = ds[sample_idx]
    assert img.shape == (1, 6, 6) and label.sum().item() == 1 and isinstance(sample_idx, int)
    train_dataloader = data.DataLoader(ds, batch_size=4, shuffle=False)
    train_features, train_labels = next(iter(train_dataloader))
    print(f"Feature batch shape: {train_features.size()}")
    print(f"Labels batch shape: {train_labels.size()}")
    img = train_features[0].squeeze()
    assert img.shape == (6, 6) and train_labels.shape == (4, 10)

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

    model = NeuralNetwork().to(device)
    init = load(m, model, state)
    print(f"Model structure: {model}\n\n")
    for name, param in model.named_parameters():
        print(f"Layer: {name} | Size: {param.size()} | Values : {param[:2]} \n")
    X = torch.from_numpy(rng.random((1, 6, 6), dtype=np.float32)).to(device)
    logits = model(X)
    pred_probab = nn.Softmax(dim=1)(logits)
    y_pred = pred_probab.argmax(1)
    print(f"Predicted class: {y_pred}")
    out += summary([pred_probab])

    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model.train()
    for X, y in train_dataloader:
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        correct = (pred.argmax(1) == y.argmax(1)).type(torch.float).sum().item()
        out += [loss.item(), correct]
    return init, out + summary(model.parameters())


def test_learn_the_basics():
    compare(learn_the_basics)


# (h) yunjey/pytorch-tutorial's basics and intermediate: linear_regression (x_train and y_train as float32 numpy columns,
# nn.Linear(1, 1), torch.from_numpy per epoch, predicted = model(...).detach().numpy()), logistic_regression
# (images.reshape(-1, input_size), torch.max(outputs.data, 1), correct += (predicted == labels).sum() and
# 100 * correct / total), bidirectional_recurrent_neural_network (h0 and c0 of num_layers*2 zeros .to(device),
# out[:, -1, :] into fc) and deep_residual_network's update_lr through param_groups with curr_lr /= 3; each saves
# its state_dict to 'model.ckpt' (here a temporary directory)
def yunjey_basics(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    out = []

    # linear regression
    input_size, output_size, num_epochs, learning_rate = 1, 1, 3, 0.05
    x_train = np.array([[3.3], [4.4], [5.5], [6.71], [6.93], [4.168], [9.779], [6.182]], dtype=np.float32)
    y_train = np.array([[1.7], [2.76], [2.09], [3.19], [1.694], [1.573], [3.366], [2.596]], dtype=np.float32)
    model = nn.Linear(input_size, output_size)
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate / 10)
    models = {'linear': model}
    for epoch in range(num_epochs):
        inputs = torch.from_numpy(x_train)
        targets = torch.from_numpy(y_train)
        if epoch == 0:
            init = {'linear': load(m, model, state and state['linear'])}
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(loss.item())
        print('Epoch [{}/{}], Loss: {:.4f}'.format(epoch + 1, num_epochs, loss.item()))
    predicted = model(torch.from_numpy(x_train)).detach().numpy()
    out.append(float(predicted.sum()))

    # logistic regression on 4x4 "images"
    input_size, num_classes, batch_size = 16, 3, 4
    model = nn.Linear(input_size, num_classes)
    models['logistic'] = model
    init['logistic'] = load(m, model, state and state['logistic'])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    train_loader = [(torch.from_numpy(normal(rng, batch_size, 1, 4, 4)), torch.from_numpy(rng.integers(0, 3, 4)))
                    for _ in range(2)]
    for i, (images, labels) in enumerate(train_loader):
        images = images.reshape(-1, input_size)
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    with torch.no_grad():
        correct = 0
        total = 0
        for images, labels in train_loader:
            images = images.reshape(-1, input_size)
            outputs = model(images)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum()
        print('Accuracy of the model on the test images: {} %'.format(100 * correct / total))
        out.append((100 * correct / total).item())

    # bidirectional LSTM over image rows, with deep_residual_network's lr decay by hand
    class BiRNN(nn.Module):
        def __init__(self, input_size, hidden_size, num_layers, num_classes):
            super(BiRNN, self).__init__()
            self.hidden_size = hidden_size
            self.num_layers = num_layers
            self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(hidden_size * 2, num_classes)  # 2 for bidirection

        def forward(self, x):
            # Set initial states
            h0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)  # 2 for bidirection
            c0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)
            # Forward propagate LSTM
            out, _ = self.lstm(x, (h0, c0))  # out: tensor of shape (batch_size, seq_length, hidden_size*2)
            # Decode the hidden state of the last time step
            out = self.fc(out[:, -1, :])
            return out

    sequence_length, input_size = 4, 4
    model = BiRNN(input_size, 5, 1, num_classes).to(device)
    models['birnn'] = model
    init['birnn'] = load(m, model, state and state['birnn'])
    curr_lr = 0.01
    optimizer = torch.optim.Adam(model.parameters(), lr=curr_lr)

    def update_lr(optimizer, lr):
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr

    for epoch in range(2):
        for i, (images, labels) in enumerate(train_loader[:1]):
            images = images.reshape(-1, sequence_length, input_size).to(device)
            labels = labels.to(device)
            outputs = model(images)
            loss = criterion(outputs, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            out.append(loss.item())
        if (epoch + 1) % 1 == 0:
            curr_lr /= 3
            update_lr(optimizer, curr_lr)
    assert optimizer.param_groups[0]['lr'] == 0.01 / 3 / 3
    with tempfile.TemporaryDirectory() as root:
        torch.save(model.state_dict(), os.path.join(root, 'model.ckpt'))
        model.load_state_dict(torch.load(os.path.join(root, 'model.ckpt')))
    return init, out + sum((summary(v.parameters()) for v in models.values()), [])


def test_yunjey_basics():
    compare(yunjey_basics)


# (i) yunjey/pytorch-tutorial's intermediate/language_model: Dictionary (word2idx, idx2word) and Corpus.get_data (two
# passes over the text, ids = torch.LongTensor(tokens) filled by ids[token] = word2idx[word], trimmed to whole
# batches and viewed as [batch_size, -1]), RNNLM (Embedding, LSTM(batch_first=True), out.reshape(B * T, H) into a
# Linear), states detached between chunks by a list comprehension, inputs and targets sliced from ids with a
# seq_length stride, clip_grad_norm_(0.5), perplexity by np.exp(loss.item()); then the sampling loop (torch.ones
# prob, torch.multinomial(prob, num_samples=1).unsqueeze(1), output.exp(), input.fill_(word_id), idx2word): its draws
# are tnet's and torch's own, so only their range is checked
def yunjey_language_model(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    text = ("the cat sat on the mat <eos> the dog sat on the log <eos> a cat and a dog <eos> "
            "the mat and the log <eos>").split(" <eos> ")

    class Dictionary(object):
        def __init__(self):
            self.word2idx = {}
            self.idx2word = {}
            self.idx = 0

        def add_word(self, word):
            if word not in self.word2idx:
                self.word2idx[word] = self.idx
                self.idx2word[self.idx] = word
                self.idx += 1

        def __len__(self):
            return len(self.word2idx)

    class Corpus(object):
        def __init__(self):
            self.dictionary = Dictionary()

        def get_data(self, lines, batch_size=20):
            # Add words to the dictionary
            tokens = 0
            for line in lines:
                words = line.split() + ['<eos>']
                tokens += len(words)
                for word in words:
                    self.dictionary.add_word(word)
            # Tokenize the file content
            ids = torch.LongTensor(tokens)
            token = 0
            for line in lines:
                words = line.split() + ['<eos>']
                for word in words:
                    ids[token] = self.dictionary.word2idx[word]
                    token += 1
            num_batches = ids.size(0) // batch_size
            ids = ids[:num_batches * batch_size]
            return ids.view(batch_size, -1)

    embed_size, hidden_size, num_layers, num_epochs, batch_size, seq_length, learning_rate = 6, 8, 1, 2, 2, 4, 0.01
    corpus = Corpus()
    ids = corpus.get_data(text, batch_size)
    vocab_size = len(corpus.dictionary)
    num_batches = ids.size(1) // seq_length
    assert tuple(ids.shape) == (2, 13) and vocab_size == 10 and num_batches == 3

    class RNNLM(nn.Module):
        def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
            super(RNNLM, self).__init__()
            self.embed = nn.Embedding(vocab_size, embed_size)
            self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
            self.linear = nn.Linear(hidden_size, vocab_size)

        def forward(self, x, h):
            x = self.embed(x)
            out, (h, c) = self.lstm(x, h)
            out = out.reshape(out.size(0) * out.size(1), out.size(2))
            out = self.linear(out)
            return out, (h, c)

    model = RNNLM(vocab_size, embed_size, hidden_size, num_layers)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

    def detach(states):
        return [state.detach() for state in states]

    out = []
    for epoch in range(num_epochs):
        states = (torch.zeros(num_layers, batch_size, hidden_size),
                  torch.zeros(num_layers, batch_size, hidden_size))
        for i in range(0, ids.size(1) - seq_length, seq_length):
            inputs = ids[:, i:i + seq_length]
            targets = ids[:, (i + 1):(i + 1) + seq_length]
            states = detach(states)
            outputs, states = model(inputs, states)
            loss = criterion(outputs, targets.reshape(-1))
            model.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            step = (i + 1) // seq_length
            print('Epoch [{}/{}], Step[{}/{}], Loss: {:.4f}, Perplexity: {:5.2f}'
                  .format(epoch + 1, num_epochs, step, num_batches, loss.item(), np.exp(loss.item())))
            out.append(loss.item())

    words = []
    with torch.no_grad():
        state = (torch.zeros(num_layers, 1, hidden_size), torch.zeros(num_layers, 1, hidden_size))
        prob = torch.ones(vocab_size)
        input = torch.multinomial(prob, num_samples=1).unsqueeze(1)
        for i in range(3):
            output, state = model(input, state)
            prob = output.exp()
            word_id = torch.multinomial(prob, num_samples=1).item()
            input.fill_(word_id)
            word = corpus.dictionary.idx2word[word_id]
            word = '\n' if word == '<eos>' else word + ' '
            words.append(word)
    assert len(words) == 3 and input.shape == (1, 1)
    return init, out + summary(model.parameters())


def test_yunjey_language_model():
    compare(yunjey_language_model)
