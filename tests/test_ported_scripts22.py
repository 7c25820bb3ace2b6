"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports
alone, as test_ported_scripts.py: pytorch/tutorials' NLP From Scratch (char_rnn_classification's hand-written RNN with
letterToTensor, lineToTensor and categoryFromOutput, char_rnn_generation's category-conditioned RNN and sample()), the
"Deep Learning for NLP" chapter (BoWClassifier, the N-gram language model of "Word Embeddings", the LSTMTagger of
"Sequence Models and LSTM Networks"); lucidrains' perceiver-pytorch (einsum attention, GEGLU, PreNorm with a
context, fourier_encode) with its einops calls written as torch's; denoising-diffusion-pytorch's LinearAttention and
x-transformers' AlibiPositionalBias; sksq96's pytorch-summary with the forums' plot_grad_flow; Bjarten's
early-stopping-pytorch; sfujim's TD3; metric learning losses (MalongTech's MultiSimilarityLoss, ProxyNCA,
ChaofWang's N-pair loss); 1Konny's Beta-VAE (objectives H and B); KrisKorrel's sparsemax; bermanmaxim's Lovasz
losses; fzenke's SpyTorch surrogate-gradient network; facebookresearch/DiT's model trained by cloneofsimo's minRF.
Each runs in tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the
weights summed into a few numbers, agree. Numpy draws what a script draws; shapes are tiny and runs 1-3 steps."""
import copy
import math
import os
import random
import string
import tempfile
import unicodedata
from collections import OrderedDict

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) pytorch/tutorials' intermediate/char_rnn_classification_tutorial.py (the 2017-2023 version): all_letters and
# unicodeToAscii by unicodedata, letterToTensor and lineToTensor filling one-hot rows by chained indexing
# (tensor[li][0][letterToIndex(letter)] = 1), the RNN of i2h and i2o over torch.cat((input, hidden), 1) with
# nn.LogSoftmax(dim=1), categoryFromOutput by output.topk(1), randomTrainingExample by Python's random, train() with
# the update p.data.add_(p.grad.data, alpha=-learning_rate), the confusion matrix filled by confusion[i][j] += 1 and
# normalised row by row, and predict()'s topk(n_predictions, 1, True)
def char_rnn_classification(m, state=None):
    torch, nn = m.torch, m.nn
    all_letters = string.ascii_letters + " .,;'"
    n_letters = len(all_letters)

    def unicodeToAscii(s):
        return ''.join(
            c for c in unicodedata.normalize('NFD', s)
            if unicodedata.category(c) != 'Mn'
            and c in all_letters
        )

    category_lines = {'Czech': [unicodeToAscii('Šťovík'), 'Abl'], 'Irish': ['Ryan', 'Kane']}
    all_categories = list(category_lines)
    n_categories = len(all_categories)
    assert category_lines['Czech'][0] == 'Stovik'

    def letterToIndex(letter):
        return all_letters.find(letter)

    def letterToTensor(letter):
        tensor = torch.zeros(1, n_letters)
        tensor[0][letterToIndex(letter)] = 1
        return tensor

    def lineToTensor(line):
        tensor = torch.zeros(len(line), 1, n_letters)
        for li, letter in enumerate(line):
            tensor[li][0][letterToIndex(letter)] = 1
        return tensor

    assert letterToTensor('J').argmax().item() == 35 and lineToTensor('Jones').size() == (5, 1, n_letters)

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super(RNN, self).__init__()

            self.hidden_size = hidden_size

            self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
            self.i2o = nn.Linear(input_size + hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, input, hidden):
            combined = torch.cat((input, hidden), 1)
            hidden = self.i2h(combined)
            output = self.i2o(combined)
            output = self.softmax(output)
            return output, hidden

        def initHidden(self):
            return torch.zeros(1, self.hidden_size)

    n_hidden = 16
    rnn = RNN(n_letters, n_hidden, n_categories)
    init = load(m, rnn, state)

    def categoryFromOutput(output):
        top_n, top_i = output.topk(1)
        category_i = top_i[0].item()
        return all_categories[category_i], category_i

    random.seed(3)

    def randomChoice(l):
        return l[random.randint(0, len(l) - 1)]

    def randomTrainingExample():
        category = randomChoice(all_categories)
        line = randomChoice(category_lines[category])
        category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
        line_tensor = lineToTensor(line)
        return category, line, category_tensor, line_tensor

    criterion = nn.NLLLoss()
    learning_rate = 0.005

    def train(category_tensor, line_tensor):
        hidden = rnn.initHidden()

        rnn.zero_grad()

        for i in range(line_tensor.size()[0]):
            output, hidden = rnn(line_tensor[i], hidden)

        loss = criterion(output, category_tensor)
        loss.backward()

        # Add parameters' gradients to their values, multiplied by learning rate
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-learning_rate)

        return output, loss.item()

    losses = []
    for iter in range(1, 3):
        category, line, category_tensor, line_tensor = randomTrainingExample()
        output, loss = train(category_tensor, line_tensor)
        guess, guess_i = categoryFromOutput(output)
        correct = '✓' if guess == category else '✗ (%s)' % category
        losses.append(loss)

    def evaluate(line_tensor):
        hidden = rnn.initHidden()

        for i in range(line_tensor.size()[0]):
            output, hidden = rnn(line_tensor[i], hidden)

        return output

    confusion = torch.zeros(n_categories, n_categories)
    n_confusion = 2
    for i in range(n_confusion):
        category, line, category_tensor, line_tensor = randomTrainingExample()
        output = evaluate(line_tensor)
        guess, guess_i = categoryFromOutput(output)
        category_i = all_categories.index(category)
        confusion[category_i][guess_i] += 1

    for i in range(n_categories):
        confusion[i] = confusion[i] / confusion[i].sum()

    def predict(input_line, n_predictions=3):
        with torch.no_grad():
            output = evaluate(lineToTensor(input_line))

            # Get top N categories
            topv, topi = output.topk(n_predictions, 1, True)
            predictions = []

            for i in range(n_predictions):
                value = topv[0][i].item()
                category_index = topi[0][i].item()
                predictions.append([value, all_categories[category_index]])
        return predictions

    predictions = predict('Do', n_predictions=2)
    assert correct and sorted(p[1] for p in predictions) == sorted(all_categories)
    return init, losses + [p[0] for p in predictions] + confusion.view(-1).tolist() + summary(rnn.parameters())


def test_char_rnn_classification():
    compare(char_rnn_classification)


# (b) pytorch/tutorials' intermediate/char_rnn_generation_tutorial.py: the RNN over torch.cat((category, input, hidden),
# 1) with i2h, i2o, o2o and nn.Dropout(0.1) (p=0 here: the two libraries' masks differ), categoryTensor, inputTensor,
# targetTensor by torch.LongTensor with the EOS index appended, train() with target_line_tensor.unsqueeze_(-1),
# loss = torch.Tensor([0]) grown by loss += l, the update through p.data.add_, and sample(): topv, topi =
# output.topk(1), topi = topi[0][0], the comparison topi == n_letters - 1 and all_letters[topi]
def char_rnn_generation(m, state=None):
    torch, nn = m.torch, m.nn
    all_letters = string.ascii_letters + " .,;'-"
    n_letters = len(all_letters) + 1  # Plus EOS marker
    category_lines = {'Russian': ['Abakov'], 'German': ['Adler']}
    all_categories = list(category_lines)
    n_categories = len(all_categories)
    max_length = 2

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super(RNN, self).__init__()
            self.hidden_size = hidden_size

            self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
            self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
            self.o2o = nn.Linear(hidden_size + output_size, output_size)
            self.dropout = nn.Dropout(0.0)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, category, input, hidden):
            input_combined = torch.cat((category, input, hidden), 1)
            hidden = self.i2h(input_combined)
            output = self.i2o(input_combined)
            output_combined = torch.cat((hidden, output), 1)
            output = self.o2o(output_combined)
            output = self.dropout(output)
            output = self.softmax(output)
            return output, hidden

        def initHidden(self):
            return torch.zeros(1, self.hidden_size)

    # One-hot vector for category
    def categoryTensor(category):
        li = all_categories.index(category)
        tensor = torch.zeros(1, n_categories)
        tensor[0][li] = 1
        return tensor

    # One-hot matrix of first to last letters (not including EOS) for input
    def inputTensor(line):
        tensor = torch.zeros(len(line), 1, n_letters)
        for li in range(len(line)):
            letter = line[li]
            tensor[li][0][all_letters.find(letter)] = 1
        return tensor

    # ``LongTensor`` of second letter to end (EOS) for target
    def targetTensor(line):
        letter_indexes = [all_letters.find(line[li]) for li in range(1, len(line))]
        letter_indexes.append(n_letters - 1)  # EOS
        return torch.LongTensor(letter_indexes)

    rnn = RNN(n_letters, 12, n_letters)
    init = load(m, rnn, state)
    criterion = nn.NLLLoss()

    learning_rate = 0.0005

    def train(category_tensor, input_line_tensor, target_line_tensor):
        target_line_tensor.unsqueeze_(-1)
        hidden = rnn.initHidden()

        rnn.zero_grad()

        loss = torch.Tensor([0])  # you can also just simply use ``loss = 0``

        for i in range(input_line_tensor.size(0)):
            output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
            l = criterion(output, target_line_tensor[i])
            loss += l

        loss.backward()

        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-learning_rate)

        return output, loss.item() / input_line_tensor.size(0)

    losses = []
    for category in all_categories:
        line = category_lines[category][0][:2]
        output, loss = train(categoryTensor(category), inputTensor(line), targetTensor(line))
        losses.append(loss)

    # Sample from a category and starting letter
    def sample(category, start_letter='A'):
        with torch.no_grad():  # no need to track history in sampling
            category_tensor = categoryTensor(category)
            input = inputTensor(start_letter)
            hidden = rnn.initHidden()

            output_name = start_letter

            for i in range(max_length):
                output, hidden = rnn(category_tensor, input[0], hidden)
                topv, topi = output.topk(1)
                topi = topi[0][0]
                if topi == n_letters - 1:
                    break
                else:
                    letter = all_letters[topi]
                    output_name += letter
                input = inputTensor(letter)

            return output_name

    names = [sample(all_categories[0], 'R')]
    assert all(name[0] == 'R' for name in names)
    return init, losses + [float(len(name)) for name in names] + summary(rnn.parameters())


def test_char_rnn_generation():
    compare(char_rnn_generation)


# (c) pytorch/tutorials' "Deep Learning for NLP with PyTorch": BoWClassifier on make_bow_vector (vec[word_to_ix[word]]
# += 1, vec.view(1, -1)) and make_target (torch.LongTensor), the weights of "creo" read by
# next(model.parameters())[:, word_to_ix["creo"]], SGD on NLLLoss; and "Word Embeddings: Encoding Lexical Semantics":
# the trigrams of the sonnet, vocab = set(test_sentence), NGramLanguageModeler (embeddings(inputs).view((1, -1)), relu,
# log_softmax), total_loss by loss.item() and model.embeddings.weight[word_to_ix["beauty"]]
def nlp_bow_ngram(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    data = [("me gusta comer en la cafeteria".split(), "SPANISH"),
            ("Give it to me".split(), "ENGLISH")]
    test_data = [("Yo creo que si".split(), "SPANISH"),
                 ("it is lost on me".split(), "ENGLISH")]
    word_to_ix = {}
    for sent, _ in data + test_data:
        for word in sent:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)
    VOCAB_SIZE = len(word_to_ix)
    NUM_LABELS = 2

    class BoWClassifier(nn.Module):  # inheriting from nn.Module!

        def __init__(self, num_labels, vocab_size):
            super(BoWClassifier, self).__init__()
            self.linear = nn.Linear(vocab_size, num_labels)

        def forward(self, bow_vec):
            return F.log_softmax(self.linear(bow_vec), dim=1)

    def make_bow_vector(sentence, word_to_ix):
        vec = torch.zeros(len(word_to_ix))
        for word in sentence:
            vec[word_to_ix[word]] += 1
        return vec.view(1, -1)

    def make_target(label, label_to_ix):
        return torch.LongTensor([label_to_ix[label]])

    CONTEXT_SIZE = 2
    EMBEDDING_DIM = 10
    test_sentence = """When forty winters shall besiege thy brow,
And dig deep trenches in thy beauty's field""".split()
    ngrams = [
        (
            [test_sentence[i - j - 1] for j in range(CONTEXT_SIZE)],
            test_sentence[i]
        )
        for i in range(CONTEXT_SIZE, len(test_sentence))
    ][:2]
    vocab = set(test_sentence)
    ngram_to_ix = {word: i for i, word in enumerate(vocab)}

    class NGramLanguageModeler(nn.Module):

        def __init__(self, vocab_size, embedding_dim, context_size):
            super(NGramLanguageModeler, self).__init__()
            self.embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.linear1 = nn.Linear(context_size * embedding_dim, 16)
            self.linear2 = nn.Linear(16, vocab_size)

        def forward(self, inputs):
            embeds = self.embeddings(inputs).view((1, -1))
            out = F.relu(self.linear1(embeds))
            out = self.linear2(out)
            log_probs = F.log_softmax(out, dim=1)
            return log_probs

    model = BoWClassifier(NUM_LABELS, VOCAB_SIZE)
    ngram_model = NGramLanguageModeler(len(vocab), EMBEDDING_DIM, CONTEXT_SIZE)
    init = load(m, nn.ModuleList([model, ngram_model]), state)
    label_to_ix = {"SPANISH": 0, "ENGLISH": 1}
    before = next(model.parameters())[:, word_to_ix["creo"]].tolist()

    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for epoch in range(1):
        for instance, label in data:
            model.zero_grad()
            bow_vec = make_bow_vector(instance, word_to_ix)
            target = make_target(label, label_to_ix)
            log_probs = model(bow_vec)
            loss = loss_function(log_probs, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

    with torch.no_grad():
        for instance, label in test_data[:1]:
            bow_vec = make_bow_vector(instance, word_to_ix)
            log_probs = model(bow_vec)
            losses += log_probs.view(-1).tolist()
    assert next(model.parameters())[:, word_to_ix["creo"]].tolist() == before  # "creo" only in test_data

    ngram_losses = []
    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(ngram_model.parameters(), lr=0.001)
    for epoch in range(1):
        total_loss = 0
        for context, target in ngrams:
            context_idxs = torch.tensor([ngram_to_ix[w] for w in context], dtype=torch.long)
            ngram_model.zero_grad()
            log_probs = ngram_model(context_idxs)
            loss = loss_function(log_probs, torch.tensor([ngram_to_ix[target]], dtype=torch.long))
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
        ngram_losses.append(total_loss)
    beauty = ngram_model.embeddings.weight[ngram_to_ix["beauty's"]]
    return init, losses + ngram_losses + beauty.tolist() + summary(ngram_model.parameters())


def test_nlp_bow_ngram():
    compare(nlp_bow_ngram)


# (d) pytorch/tutorials' "Sequence Models and Long Short-Term Memory Networks": an nn.LSTM(3, 3) stepped over a list of
# (1, 3) inputs with a (h, c) tuple, then the whole sequence by torch.cat(inputs).view(len(inputs), 1, -1); prepare_sequence,
# LSTMTagger (embeds.view(len(sentence), 1, -1), lstm_out.view(len(sentence), -1), hidden2tag, log_softmax), NLLLoss and
# SGD(lr=0.1) (the sentences cut to three and two words, the sequence to three steps)
def lstm_tagger(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    rng = np.random.default_rng(4)
    lstm = nn.LSTM(3, 3)  # Input dim is 3, output dim is 3
    init_lstm = load(m, lstm, None if state is None else state[0])
    inputs = [torch.tensor(normal(rng, 1, 3)) for _ in range(3)]  # make a sequence of length 3 (5 in the tutorial)

    # initialize the hidden state.
    hidden = (torch.tensor(normal(rng, 1, 1, 3)),
              torch.tensor(normal(rng, 1, 1, 3)))
    for i in inputs:
        # Step through the sequence one element at a time.
        # after each step, hidden contains the hidden state.
        out, hidden = lstm(i.view(1, 1, -1), hidden)
    stepped = out.view(-1).tolist()

    inputs = torch.cat(inputs).view(len(inputs), 1, -1)
    hidden = (torch.tensor(normal(rng, 1, 1, 3)), torch.tensor(normal(rng, 1, 1, 3)))  # clean out hidden state
    out, hidden = lstm(inputs, hidden)
    whole = out[-1].view(-1).tolist() + hidden[1].view(-1).tolist()

    def prepare_sequence(seq, to_ix):
        idxs = [to_ix[w] for w in seq]
        return torch.tensor(idxs, dtype=torch.long)

    training_data = [
        # Tags are: DET - determiner; NN - noun; V - verb
        # For example, the word "The" is a determiner
        ("The dog ate".split(), ["DET", "NN", "V"]),
        ("Everybody read".split(), ["NN", "V"])
    ]
    word_to_ix = {}
    # For each words-list (sentence) and tags-list in each tuple of training_data
    for sent, tags in training_data:
        for word in sent:
            if word not in word_to_ix:  # word has not been assigned an index yet
                word_to_ix[word] = len(word_to_ix)  # Assign each word with a unique index
    tag_to_ix = {"DET": 0, "NN": 1, "V": 2}  # Assign each tag with a unique index

    EMBEDDING_DIM = 6
    HIDDEN_DIM = 6

    class LSTMTagger(nn.Module):

        def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
            super(LSTMTagger, self).__init__()
            self.hidden_dim = hidden_dim

            self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)

            # The LSTM takes word embeddings as inputs, and outputs hidden states
            # with dimensionality hidden_dim.
            self.lstm = nn.LSTM(embedding_dim, hidden_dim)

            # The linear layer that maps from hidden state space to tag space
            self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

        def forward(self, sentence):
            embeds = self.word_embeddings(sentence)
            lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
            tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
            tag_scores = F.log_softmax(tag_space, dim=1)
            return tag_scores

    model = LSTMTagger(EMBEDDING_DIM, HIDDEN_DIM, len(word_to_ix), len(tag_to_ix))
    init_model = load(m, model, None if state is None else state[1])
    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1)

    losses = []
    for epoch in range(1):
        for sentence, tags in training_data:
            # Step 1. Remember that Pytorch accumulates gradients.
            model.zero_grad()

            # Step 2. Get our inputs ready for the network
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = prepare_sequence(tags, tag_to_ix)

            # Step 3. Run our forward pass.
            tag_scores = model(sentence_in)

            # Step 4. Compute the loss, gradients, and update the parameters
            loss = loss_function(tag_scores, targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

    return (init_lstm, init_model), stepped + whole + losses + summary(model.parameters())


def test_lstm_tagger():
    compare(lstm_tagger)


# (e) lucidrains/perceiver-pytorch's perceiver_pytorch.py with its einops calls written as torch's (rearrange 'b n (h d)
# -> (b h) n d' as reshape and permute, repeat as expand): exists and default, PreNorm normalising a context through
# kwargs.update, GEGLU by chunk and F.gelu, Attention by einsum('b i d, b j d -> b i j') with a mask filled by
# masked_fill_(~mask, -torch.finfo(sim.dtype).max), fourier_encode (linspace scales indexed by (None, ..., Ellipsis)),
# the axis positions by torch.meshgrid(indexing='ij'), latents as an nn.Parameter expanded over the batch, cache_fn
# (functools.wraps; its `nonlocal cache`, which pyflakes flags, left out), and the mean-pooled logits; an Adam step on cross entropy (one layer: depth=1)
def perceiver(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from math import pi
    from functools import wraps
    einsum = torch.einsum

    def exists(val):
        return val is not None

    def default(val, d):
        return val if exists(val) else d

    def cache_fn(f):
        cache = dict()

        @wraps(f)
        def cached_fn(*args, _cache=True, key=None, **kwargs):
            if not _cache:
                return f(*args, **kwargs)
            if key in cache:
                return cache[key]
            result = f(*args, **kwargs)
            cache[key] = result
            return result
        return cached_fn

    def fourier_encode(x, max_freq, num_bands=4):
        x = x.unsqueeze(-1)
        device, dtype, orig_x = x.device, x.dtype, x

        scales = torch.linspace(1., max_freq / 2, num_bands, device=device, dtype=dtype)
        scales = scales[(*((None,) * (len(x.shape) - 1)), Ellipsis)]

        x = x * scales * pi
        x = torch.cat([x.sin(), x.cos()], dim=-1)
        x = torch.cat((x, orig_x), dim=-1)
        return x

    class PreNorm(nn.Module):
        def __init__(self, dim, fn, context_dim=None):
            super().__init__()
            self.fn = fn
            self.norm = nn.LayerNorm(dim)
            self.norm_context = nn.LayerNorm(context_dim) if exists(context_dim) else None

        def forward(self, x, **kwargs):
            x = self.norm(x)

            if exists(self.norm_context):
                context = kwargs['context']
                normed_context = self.norm_context(context)
                kwargs.update(context=normed_context)

            return self.fn(x, **kwargs)

    class GEGLU(nn.Module):
        def forward(self, x):
            x, gates = x.chunk(2, dim=-1)
            return x * F.gelu(gates)

    class FeedForward(nn.Module):
        def __init__(self, dim, mult=4, dropout=0.):
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(dim, dim * mult * 2),
                GEGLU(),
                nn.Linear(dim * mult, dim),
                nn.Dropout(dropout)
            )

        def forward(self, x):
            return self.net(x)

    class Attention(nn.Module):
        def __init__(self, query_dim, context_dim=None, heads=8, dim_head=64, dropout=0.):
            super().__init__()
            inner_dim = dim_head * heads
            context_dim = default(context_dim, query_dim)

            self.scale = dim_head ** -0.5
            self.heads = heads

            self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
            self.to_kv = nn.Linear(context_dim, inner_dim * 2, bias=False)

            self.dropout = nn.Dropout(dropout)
            self.to_out = nn.Linear(inner_dim, query_dim)

        def forward(self, x, context=None, mask=None):
            h = self.heads

            q = self.to_q(x)
            context = default(context, x)
            k, v = self.to_kv(context).chunk(2, dim=-1)

            # rearrange(t, 'b n (h d) -> (b h) n d', h = h)
            q, k, v = map(lambda t: t.reshape(t.shape[0], t.shape[1], h, -1).permute(0, 2, 1, 3)
                          .reshape(t.shape[0] * h, t.shape[1], -1), (q, k, v))

            sim = einsum('b i d, b j d -> b i j', q, k) * self.scale

            if exists(mask):
                mask = mask.reshape(mask.shape[0], -1)  # rearrange(mask, 'b ... -> b (...)')
                max_neg_value = -torch.finfo(sim.dtype).max
                mask = mask[:, None, :].repeat_interleave(h, dim=0)  # repeat(mask, 'b j -> (b h) () j', h = h)
                sim.masked_fill_(~mask, max_neg_value)

            # attention, what we cannot get enough of
            attn = sim.softmax(dim=-1)
            attn = self.dropout(attn)

            out = einsum('b i j, b j d -> b i d', attn, v)
            # rearrange(out, '(b h) n d -> b n (h d)', h = h)
            out = out.reshape(-1, h, out.shape[1], out.shape[2]).permute(0, 2, 1, 3).reshape(-1, out.shape[1], h * out.shape[2])
            return self.to_out(out)

    class Perceiver(nn.Module):
        def __init__(self, *, num_freq_bands, depth, max_freq, input_channels=3, input_axis=2, num_latents=512,
                     latent_dim=512, cross_heads=1, latent_heads=8, cross_dim_head=64, latent_dim_head=64,
                     num_classes=1000, attn_dropout=0., ff_dropout=0., weight_tie_layers=False,
                     fourier_encode_data=True, self_per_cross_attn=1, final_classifier_head=True):
            super().__init__()
            self.input_axis = input_axis
            self.max_freq = max_freq
            self.num_freq_bands = num_freq_bands

            self.fourier_encode_data = fourier_encode_data
            fourier_channels = (input_axis * ((num_freq_bands * 2) + 1)) if fourier_encode_data else 0
            input_dim = fourier_channels + input_channels

            self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))

            get_cross_attn = lambda: PreNorm(latent_dim, Attention(latent_dim, input_dim, heads=cross_heads,
                                                                   dim_head=cross_dim_head, dropout=attn_dropout),
                                             context_dim=input_dim)
            get_cross_ff = lambda: PreNorm(latent_dim, FeedForward(latent_dim, dropout=ff_dropout))
            get_latent_attn = lambda: PreNorm(latent_dim, Attention(latent_dim, heads=latent_heads,
                                                                    dim_head=latent_dim_head, dropout=attn_dropout))
            get_latent_ff = lambda: PreNorm(latent_dim, FeedForward(latent_dim, dropout=ff_dropout))

            get_cross_attn, get_cross_ff, get_latent_attn, get_latent_ff = map(
                cache_fn, (get_cross_attn, get_cross_ff, get_latent_attn, get_latent_ff))

            self.layers = nn.ModuleList([])
            for i in range(depth):
                should_cache = i > 0 and weight_tie_layers
                cache_args = {'_cache': should_cache}

                self_attns = nn.ModuleList([])

                for block_ind in range(self_per_cross_attn):
                    self_attns.append(nn.ModuleList([
                        get_latent_attn(**cache_args, key=block_ind),
                        get_latent_ff(**cache_args, key=block_ind)
                    ]))

                self.layers.append(nn.ModuleList([
                    get_cross_attn(**cache_args),
                    get_cross_ff(**cache_args),
                    self_attns
                ]))

            self.to_logits = nn.Sequential(
                nn.LayerNorm(latent_dim),
                nn.Linear(latent_dim, num_classes)
            ) if final_classifier_head else nn.Identity()

        def forward(self, data, mask=None, return_embeddings=False):
            b, *axis, _, device, dtype = *data.shape, data.device, data.dtype
            assert len(axis) == self.input_axis, 'input data must have the right number of axis'

            if self.fourier_encode_data:
                # calculate fourier encoded positions in the range of [-1, 1], for all axis

                axis_pos = list(map(lambda size: torch.linspace(-1., 1., steps=size, device=device, dtype=dtype), axis))
                pos = torch.stack(torch.meshgrid(*axis_pos, indexing='ij'), dim=-1)
                enc_pos = fourier_encode(pos, self.max_freq, self.num_freq_bands)
                enc_pos = enc_pos.reshape(*enc_pos.shape[:-2], -1)  # rearrange(enc_pos, '... n d -> ... (n d)')
                enc_pos = enc_pos.expand(b, *enc_pos.shape)  # repeat(enc_pos, '... -> b ...', b = b)

                data = torch.cat((data, enc_pos), dim=-1)

            # concat to channels of data and flatten axis

            data = data.reshape(b, -1, data.shape[-1])  # rearrange(data, 'b ... d -> b (...) d')

            x = self.latents.expand(b, *self.latents.shape)  # repeat(self.latents, 'n d -> b n d', b = b)

            # layers

            for cross_attn, cross_ff, self_attns in self.layers:
                x = cross_attn(x, context=data, mask=mask) + x
                x = cross_ff(x) + x

                for self_attn, self_ff in self_attns:
                    x = self_attn(x) + x
                    x = self_ff(x) + x

            # allow for fetching embeddings

            if return_embeddings:
                return x

            # to logits

            x = x.mean(dim=-2)  # reduce(x, 'b n d -> b d', 'mean')
            return self.to_logits(x)

    model = Perceiver(input_channels=2, input_axis=2, num_freq_bands=2, max_freq=4., depth=1, num_latents=3,
                      latent_dim=8, cross_heads=1, latent_heads=2, cross_dim_head=4, latent_dim_head=4, num_classes=3,
                      weight_tie_layers=True)
    init = load(m, model, state)
    rng = np.random.default_rng(5)
    img = torch.tensor(normal(rng, 2, 3, 3, 2))
    mask = torch.tensor(rng.random((2, 3, 3)) > 0.3)
    y = torch.tensor([0, 2])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(1):
        loss = F.cross_entropy(model(img, mask=mask), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_perceiver():
    compare(perceiver)


# (f) lucidrains/denoising-diffusion-pytorch's LinearAttention (to_qkv a 1x1 conv chunked in three, softmax over the
# features of q and the positions of k, context by einsum('b h d n, b h e n -> b h d e'), its own channel LayerNorm
# by torch.var(unbiased=False) and rsqrt with eps by the dtype) and lucidrains/x-transformers' AlibiPositionalBias
# (ofirpress's _get_slopes for a head count that is not a power of two, slopes by rearrange 'h -> h 1 1', a 'bias'
# buffer registered as None then as the computed bias, non-persistent, reused while big enough) added to causal
# attention logits masked by triu(j - i + 1); an AdamW step
def linear_attention_alibi(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Tensor = torch.Tensor  # from torch import Tensor

    def exists(val):
        return val is not None

    class LayerNorm(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.g = nn.Parameter(torch.ones(1, dim, 1, 1))

        def forward(self, x):
            eps = 1e-5 if x.dtype == torch.float32 else 1e-3
            var = torch.var(x, dim=1, unbiased=False, keepdim=True)
            mean = torch.mean(x, dim=1, keepdim=True)
            return (x - mean) * (var + eps).rsqrt() * self.g

    class LinearAttention(nn.Module):
        def __init__(self, dim, heads=4, dim_head=32):
            super().__init__()
            self.scale = dim_head ** -0.5
            self.heads = heads
            hidden_dim = dim_head * heads
            self.to_qkv = nn.Conv2d(dim, hidden_dim * 3, 1, bias=False)

            self.to_out = nn.Sequential(
                nn.Conv2d(hidden_dim, dim, 1),
                LayerNorm(dim)
            )

        def forward(self, x):
            b, c, h, w = x.shape
            qkv = self.to_qkv(x).chunk(3, dim=1)
            # rearrange(t, 'b (h c) x y -> b h c (x y)', h = self.heads)
            q, k, v = map(lambda t: t.reshape(b, self.heads, -1, h * w), qkv)

            q = q.softmax(dim=-2)
            k = k.softmax(dim=-1)

            q = q * self.scale

            context = torch.einsum('b h d n, b h e n -> b h d e', k, v)

            out = torch.einsum('b h d e, b h d n -> b h e n', context, q)
            out = out.reshape(b, -1, h, w)  # rearrange(out, 'b h c (x y) -> b (h c) x y', h = self.heads, x = h, y = w)
            return self.to_out(out)

    def pad_at_dim(t, pad, dim=-1, value=0.):
        dims_from_right = (- dim - 1) if dim < 0 else (t.ndim - dim - 1)
        zeros = ((0, 0) * dims_from_right)
        return F.pad(t, (*zeros, *pad), value=value)

    class AlibiPositionalBias(nn.Module):
        def __init__(self, heads, total_heads=None, **kwargs):
            super().__init__()
            self.heads = heads
            self.total_heads = default(total_heads, heads)

            slopes = Tensor(self._get_slopes(heads))
            slopes = slopes.reshape(-1, 1, 1)  # rearrange(slopes, 'h -> h 1 1')
            self.register_buffer('slopes', slopes, persistent=False)
            self.register_buffer('bias', None, persistent=False)

        def get_bias(self, i, j, device):
            i_arange = torch.arange(j - i, j, device=device)
            j_arange = torch.arange(j, device=device)
            bias = -torch.abs(j_arange[None, None, :] - i_arange[None, :, None])
            return bias

        @staticmethod
        def _get_slopes(heads):
            def get_slopes_power_of_2(n):
                start = (2 ** (-2 ** -(math.log2(n) - 3)))
                ratio = start
                return [start * ratio ** i for i in range(n)]

            if math.log2(heads).is_integer():
                return get_slopes_power_of_2(heads)

            closest_power_of_2 = 2 ** math.floor(math.log2(heads))
            return get_slopes_power_of_2(closest_power_of_2) + \
                get_slopes_power_of_2(2 * closest_power_of_2)[0::2][:heads - closest_power_of_2]

        @property
        def device(self):
            return next(self.buffers()).device

        def forward(self, i, j):
            h, device = self.total_heads, self.device

            if exists(self.bias) and self.bias.shape[-1] >= j and self.bias.shape[-2] >= i:
                return self.bias[..., -i:, -j:]

            bias = self.get_bias(i, j, device)
            bias = bias * self.slopes

            num_heads_unalibied = h - bias.shape[0]
            bias = pad_at_dim(bias, (0, num_heads_unalibied), dim=0)
            self.register_buffer('bias', bias, persistent=False)

            return self.bias

    def default(val, d):
        return val if exists(val) else d

    class CausalAlibiAttention(nn.Module):
        def __init__(self, dim, heads, alibi_heads):
            super().__init__()
            self.heads = heads
            self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
            self.to_out = nn.Linear(dim, dim)
            self.rel_pos = AlibiPositionalBias(heads=alibi_heads, total_heads=heads)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1))
            sim = torch.einsum('b h i d, b h j d -> b h i j', q, k) * q.shape[-1] ** -0.5
            i, j = sim.shape[-2:]
            sim = sim + self.rel_pos(i, j)
            causal_mask = torch.ones((i, j), dtype=torch.bool, device=x.device).triu(j - i + 1)
            sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max)
            attn = sim.softmax(dim=-1)
            out = torch.einsum('b h i j, b h j d -> b h i d', attn, v)
            return self.to_out(out.transpose(1, 2).reshape(b, n, d))

    lin = LinearAttention(4, heads=2, dim_head=3)
    attn = CausalAlibiAttention(6, heads=3, alibi_heads=3)
    assert AlibiPositionalBias._get_slopes(3) == [0.0625, 0.00390625, 0.25]
    model = nn.ModuleList([lin, attn])
    init = load(m, model, state)
    assert 'rel_pos.slopes' not in attn.state_dict() and attn.rel_pos.bias is None
    rng = np.random.default_rng(6)
    img = torch.tensor(normal(rng, 2, 4, 3, 3))
    seq = torch.tensor(normal(rng, 2, 4, 6))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for step in range(1):
        loss = lin(img).pow(2).mean() + attn(seq).sin().sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert tuple(attn.rel_pos.bias.shape) == (3, 4, 4) and 'rel_pos.bias' not in attn.state_dict()
    assert attn.rel_pos(2, 3).shape == (3, 2, 3)
    return init, losses + attn.rel_pos.bias.view(-1).tolist() + summary(model.parameters())


def test_linear_attention_alibi():
    compare(linear_attention_alibi)


# (g) sksq96/pytorch-summary's torchsummary.summary as written (a forward hook on every module but Sequentials,
# ModuleLists and the model itself, class_name by str(module.__class__), input_shape from input[0].size(),
# params += torch.prod(torch.LongTensor(list(module.weight.size()))), dtype torch.FloatTensor for
# torch.rand(2, *in_size).type(dtype), "{0:,}".format of a 0-d tensor, total_params.numpy()) and the forums'
# plot_grad_flow (p.grad.abs().mean() and .max() per weight, drawn by plt.bar, hlines, xticks and a legend of Line2D),
# around one SGD step of a small CNN; the summary's shapes and counts and the bars' heights are compared
def summary_grad_flow(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    def torch_summary(model, input_size, batch_size=-1, device="cuda"):

        def register_hook(module):

            def hook(module, input, output):
                class_name = str(module.__class__).split(".")[-1].split("'")[0]
                module_idx = len(summary)

                m_key = "%s-%i" % (class_name, module_idx + 1)
                summary[m_key] = OrderedDict()
                summary[m_key]["input_shape"] = list(input[0].size())
                summary[m_key]["input_shape"][0] = batch_size
                if isinstance(output, (list, tuple)):
                    summary[m_key]["output_shape"] = [
                        [-1] + list(o.size())[1:] for o in output
                    ]
                else:
                    summary[m_key]["output_shape"] = list(output.size())
                    summary[m_key]["output_shape"][0] = batch_size

                params = 0
                if hasattr(module, "weight") and hasattr(module.weight, "size"):
                    params += torch.prod(torch.LongTensor(list(module.weight.size())))
                    summary[m_key]["trainable"] = module.weight.requires_grad
                if hasattr(module, "bias") and hasattr(module.bias, "size"):
                    params += torch.prod(torch.LongTensor(list(module.bias.size())))
                summary[m_key]["nb_params"] = params

            if (
                not isinstance(module, nn.Sequential)
                and not isinstance(module, nn.ModuleList)
                and not (module == model)
            ):
                hooks.append(module.register_forward_hook(hook))

        device = device.lower()
        assert device in [
            "cuda",
            "cpu",
        ], "Input device is not valid, please specify 'cuda' or 'cpu'"

        if device == "cuda" and torch.cuda.is_available():
            dtype = torch.cuda.FloatTensor
        else:
            dtype = torch.FloatTensor

        # multiple inputs to the network
        if isinstance(input_size, tuple):
            input_size = [input_size]

        # batch_size of 2 for batchnorm
        x = [torch.rand(2, *in_size).type(dtype) for in_size in input_size]

        # create properties
        summary = OrderedDict()
        hooks = []

        # register hook
        model.apply(register_hook)

        # make a forward pass
        model(*x)

        # remove these hooks
        for h in hooks:
            h.remove()

        lines = []
        line_new = "{:>20}  {:>25} {:>15}".format("Layer (type)", "Output Shape", "Param #")
        lines.append(line_new)
        total_params = 0
        total_output = 0
        trainable_params = 0
        for layer in summary:
            # input_shape, output_shape, trainable, nb_params
            line_new = "{:>20}  {:>25} {:>15}".format(
                layer,
                str(summary[layer]["output_shape"]),
                "{0:,}".format(summary[layer]["nb_params"]),
            )
            total_params += summary[layer]["nb_params"]
            total_output += np.prod(summary[layer]["output_shape"])
            if "trainable" in summary[layer]:
                if summary[layer]["trainable"] == True:
                    trainable_params += summary[layer]["nb_params"]
            lines.append(line_new)

        # assume 4 bytes/number (float on cuda).
        total_input_size = abs(np.prod(input_size) * batch_size * 4. / (1024 ** 2.))
        total_output_size = abs(2. * total_output * 4. / (1024 ** 2.))  # x2 for gradients
        total_params_size = abs(total_params.numpy() * 4. / (1024 ** 2.))
        total_size = total_params_size + total_output_size + total_input_size

        lines.append("Total params: {0:,}".format(total_params))
        lines.append("Trainable params: {0:,}".format(trainable_params))
        lines.append("Non-trainable params: {0:,}".format(total_params - trainable_params))
        lines.append("Estimated Total Size (MB): %0.2f" % total_size)
        return lines

    def plot_grad_flow(named_parameters):
        ave_grads = []
        max_grads = []
        layers = []
        for n, p in named_parameters:
            if (p.requires_grad) and ("bias" not in n):
                layers.append(n)
                ave_grads.append(p.grad.abs().mean().cpu())
                max_grads.append(p.grad.abs().max().cpu())
        plt.bar(np.arange(len(max_grads)), max_grads, alpha=0.1, lw=1, color="c")
        plt.bar(np.arange(len(max_grads)), ave_grads, alpha=0.1, lw=1, color="b")
        plt.hlines(0, 0, len(ave_grads) + 1, lw=2, color="k")
        plt.xticks(range(0, len(ave_grads), 1), layers, rotation="vertical")
        plt.xlim(left=0, right=len(ave_grads))
        plt.ylim(bottom=-0.001, top=0.02)  # zoom in on the lower gradient regions
        plt.xlabel("Layers")
        plt.ylabel("average gradient")
        plt.title("Gradient flow")
        plt.grid(True)
        plt.legend([Line2D([0], [0], color="c", lw=4),
                    Line2D([0], [0], color="b", lw=4),
                    Line2D([0], [0], color="k", lw=4)], ['max-gradient', 'mean-gradient', 'zero-gradient'])

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU())
            self.fc = nn.Linear(3 * 2 * 2, 5)
            self.head = nn.Linear(5, 2, bias=False)

        def forward(self, x):
            return self.head(F.relu(self.fc(torch.flatten(self.features(x), 1))))

    model = Net()
    model.head.weight.requires_grad_(False)
    init = load(m, model, state)
    lines = torch_summary(model, (1, 4, 4), device="cpu")
    assert lines[1] == "{:>20}  {:>25} {:>15}".format("Conv2d-1", "[-1, 3, 2, 2]", "30"), lines
    assert lines[-4:-1] == ["Total params: 111", "Trainable params: 101", "Non-trainable params: 10"], lines
    rng = np.random.default_rng(7)
    x = torch.tensor(normal(rng, 3, 1, 4, 4))
    optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1)
    loss = F.cross_entropy(model(x), torch.tensor([0, 1, 1]))
    optimizer.zero_grad()
    loss.backward()
    plt.figure()
    plot_grad_flow(model.named_parameters())
    heights = [bar.get_height() for bar in plt.gca().patches]
    labels = [t.get_text() for t in plt.gca().get_xticklabels()]
    plt.close()
    assert labels == ['features.0.weight', 'features.1.weight', 'fc.weight'], labels
    optimizer.step()
    return init, [loss.item()] + heights + summary(model.parameters())


def test_summary_grad_flow():
    compare(summary_grad_flow)


# (h) Bjarten/early-stopping-pytorch's EarlyStopping (patience, delta, best_val_loss, a NaN loss ignored, trace_func,
# torch.save(model.state_dict(), self.path)) in its MNIST notebook's loop: train_losses and valid_losses per epoch
# averaged by np.average, early_stopping(valid_loss, model), `if early_stopping.early_stop: break`, and the best
# checkpoint loaded back by model.load_state_dict(torch.load(path)); the checkpoint lives in a temporary directory
def early_stopping(m, state=None):
    torch, nn = m.torch, m.nn

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
            # Check if validation loss is nan
            if np.isnan(val_loss):
                self.trace_func("Validation loss is NaN. Ignoring this epoch.")
                return

            if self.best_val_loss is None:
                self.best_val_loss = val_loss
                self.save_checkpoint(val_loss, model)
            elif val_loss < self.best_val_loss - self.delta:
                # Significant improvement detected
                self.best_val_loss = val_loss
                self.save_checkpoint(val_loss, model)
                self.counter = 0  # Reset counter since improvement occurred
            else:
                # No significant improvement
                self.counter += 1
                self.trace_func(f'EarlyStopping counter: {self.counter} out of {self.patience}')
                if self.counter >= self.patience:
                    self.early_stop = True

        def save_checkpoint(self, val_loss, model):
            '''Saves model when validation loss decreases.'''
            if self.verbose:
                self.trace_func(f'Validation loss decreased ({self.val_loss_min:.6f} --> {val_loss:.6f}).  Saving model ...')
            torch.save(model.state_dict(), self.path)
            self.val_loss_min = val_loss

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    init = load(m, model, state)
    rng = np.random.default_rng(8)
    train_x, train_y = torch.tensor(normal(rng, 4, 3)), torch.tensor(normal(rng, 4, 1))
    valid_x, valid_y = torch.tensor(normal(rng, 4, 3)), torch.tensor(normal(rng, 4, 1))
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)  # too large: the validation loss soon rises
    log = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'checkpoint.pt')
        early_stopping = EarlyStopping(patience=1, verbose=True, path=path, trace_func=log.append)
        early_stopping(float('nan'), model)
        avg_train_losses, avg_valid_losses = [], []
        for epoch in range(1, 4):
            train_losses, valid_losses = [], []
            model.train()
            optimizer.zero_grad()
            loss = criterion(model(train_x), train_y)
            loss.backward()
            optimizer.step()
            train_losses.append(loss.item())
            model.eval()
            with torch.no_grad():
                valid_losses.append(criterion(model(valid_x), valid_y).item())
            train_loss = np.average(train_losses)
            valid_loss = np.average(valid_losses)
            avg_train_losses.append(train_loss)
            avg_valid_losses.append(valid_loss)
            early_stopping(valid_loss, model)
            if early_stopping.early_stop:
                log.append("Early stopping")
                break
        # load the last checkpoint with the best model
        model.load_state_dict(torch.load(path))
    assert log[0] == "Validation loss is NaN. Ignoring this epoch." and log[-1] == "Early stopping", log
    best = criterion(model(valid_x), valid_y).item()
    assert best == min(avg_valid_losses)
    return init, avg_train_losses + avg_valid_losses + [float(epoch), best] + summary(model.parameters())


def test_early_stopping():
    compare(early_stopping)


# (i) sfujim/TD3's TD3.py and utils.py: Actor (max_action * torch.tanh), Critic with twin heads (forward returning q1,
# q2, Q1 alone for the actor), targets by copy.deepcopy, ReplayBuffer of numpy arrays sampled by np.random.randint and
# returned as torch.FloatTensor(...).to(self.device), train()'s target policy smoothing ((torch.randn_like(action) *
# policy_noise).clamp(-noise_clip, noise_clip), here numpy's normal draws), torch.min of the target heads, the delayed
# actor update every policy_freq iterations and the soft updates by target_param.data.copy_(tau * param.data + (1 - tau)
# * target_param.data); select_action by .cpu().data.numpy().flatten(); hidden widths 256 cut to 8
def td3(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    np.random.seed(9)
    noise_rng = np.random.default_rng(9)

    class ReplayBuffer(object):
        def __init__(self, state_dim, action_dim, max_size=int(1e6)):
            self.max_size = max_size
            self.ptr = 0
            self.size = 0

            self.state = np.zeros((max_size, state_dim))
            self.action = np.zeros((max_size, action_dim))
            self.next_state = np.zeros((max_size, state_dim))
            self.reward = np.zeros((max_size, 1))
            self.not_done = np.zeros((max_size, 1))

            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def add(self, state, action, next_state, reward, done):
            self.state[self.ptr] = state
            self.action[self.ptr] = action
            self.next_state[self.ptr] = next_state
            self.reward[self.ptr] = reward
            self.not_done[self.ptr] = 1. - done

            self.ptr = (self.ptr + 1) % self.max_size
            self.size = min(self.size + 1, self.max_size)

        def sample(self, batch_size):
            ind = np.random.randint(0, self.size, size=batch_size)

            return (
                torch.FloatTensor(self.state[ind]).to(self.device),
                torch.FloatTensor(self.action[ind]).to(self.device),
                torch.FloatTensor(self.next_state[ind]).to(self.device),
                torch.FloatTensor(self.reward[ind]).to(self.device),
                torch.FloatTensor(self.not_done[ind]).to(self.device)
            )

    class Actor(nn.Module):
        def __init__(self, state_dim, action_dim, max_action):
            super(Actor, self).__init__()

            self.l1 = nn.Linear(state_dim, 8)
            self.l2 = nn.Linear(8, 8)
            self.l3 = nn.Linear(8, action_dim)

            self.max_action = max_action

        def forward(self, state):
            a = F.relu(self.l1(state))
            a = F.relu(self.l2(a))
            return self.max_action * torch.tanh(self.l3(a))

    class Critic(nn.Module):
        def __init__(self, state_dim, action_dim):
            super(Critic, self).__init__()

            # Q1 architecture
            self.l1 = nn.Linear(state_dim + action_dim, 8)
            self.l2 = nn.Linear(8, 8)
            self.l3 = nn.Linear(8, 1)

            # Q2 architecture
            self.l4 = nn.Linear(state_dim + action_dim, 8)
            self.l5 = nn.Linear(8, 8)
            self.l6 = nn.Linear(8, 1)

        def forward(self, state, action):
            sa = torch.cat([state, action], 1)

            q1 = F.relu(self.l1(sa))
            q1 = F.relu(self.l2(q1))
            q1 = self.l3(q1)

            q2 = F.relu(self.l4(sa))
            q2 = F.relu(self.l5(q2))
            q2 = self.l6(q2)
            return q1, q2

        def Q1(self, state, action):
            sa = torch.cat([state, action], 1)

            q1 = F.relu(self.l1(sa))
            q1 = F.relu(self.l2(q1))
            q1 = self.l3(q1)
            return q1

    class TD3(object):
        def __init__(self, state_dim, action_dim, max_action, discount=0.99, tau=0.005, policy_noise=0.2,
                     noise_clip=0.5, policy_freq=2):

            self.actor = Actor(state_dim, action_dim, max_action).to(device)
            load_into(self.actor)
            self.actor_target = copy.deepcopy(self.actor)
            self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)

            self.critic = Critic(state_dim, action_dim).to(device)
            load_into(self.critic)
            self.critic_target = copy.deepcopy(self.critic)
            self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-4)

            self.max_action = max_action
            self.discount = discount
            self.tau = tau
            self.policy_noise = policy_noise
            self.noise_clip = noise_clip
            self.policy_freq = policy_freq

            self.total_it = 0

        def select_action(self, state):
            state = torch.FloatTensor(state.reshape(1, -1)).to(device)
            return self.actor(state).cpu().data.numpy().flatten()

        def train(self, replay_buffer, batch_size=256):
            self.total_it += 1

            # Sample replay buffer
            state, action, next_state, reward, not_done = replay_buffer.sample(batch_size)

            with torch.no_grad():
                # Select action according to policy and add clipped noise
                noise = (
                    torch.tensor(noise_rng.standard_normal(tuple(action.shape)), dtype=action.dtype) * self.policy_noise
                ).clamp(-self.noise_clip, self.noise_clip)

                next_action = (
                    self.actor_target(next_state) + noise
                ).clamp(-self.max_action, self.max_action)

                # Compute the target Q value
                target_Q1, target_Q2 = self.critic_target(next_state, next_action)
                target_Q = torch.min(target_Q1, target_Q2)
                target_Q = reward + not_done * self.discount * target_Q

            # Get current Q estimates
            current_Q1, current_Q2 = self.critic(state, action)

            # Compute critic loss
            critic_loss = F.mse_loss(current_Q1, target_Q) + F.mse_loss(current_Q2, target_Q)

            # Optimize the critic
            self.critic_optimizer.zero_grad()
            critic_loss.backward()
            self.critic_optimizer.step()
            losses.append(critic_loss.item())

            # Delayed policy updates
            if self.total_it % self.policy_freq == 0:

                # Compute actor losse
                actor_loss = -self.critic.Q1(state, self.actor(state)).mean()

                # Optimize the actor
                self.actor_optimizer.zero_grad()
                actor_loss.backward()
                self.actor_optimizer.step()
                losses.append(actor_loss.item())

                # Update the frozen target models
                for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
                    target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)

                for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
                    target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)

    inits = {}

    def load_into(net):
        name = type(net).__name__
        inits[name] = load(m, net, None if state is None else state[name])

    losses = []
    state_dim, action_dim, max_action = 3, 2, 2.0
    policy = TD3(state_dim, action_dim, max_action)
    replay_buffer = ReplayBuffer(state_dim, action_dim, max_size=16)
    obs_rng = np.random.default_rng(10)
    obs = obs_rng.standard_normal(state_dim)
    for t in range(3):
        action = (policy.select_action(np.array(obs)) + obs_rng.normal(0, max_action * 0.1, size=action_dim)
                  ).clip(-max_action, max_action)
        next_obs = obs_rng.standard_normal(state_dim)
        replay_buffer.add(obs, action, next_obs, float(-np.square(action).sum()), float(t == 2))
        obs = next_obs
    for it in range(2):
        policy.train(replay_buffer, batch_size=4)
    return inits, losses + summary(policy.actor_target.parameters()) + summary(policy.critic_target.parameters())


def test_td3():
    compare(td3)


# (j) metric learning losses as their repositories write them, on the embeddings of one small net: MalongTech's
# research-ms-loss MultiSimilarityLoss (sim_mat by torch.matmul(feats, torch.t(feats)), per-anchor boolean selections
# sim_mat[i][labels == labels[i]], the pairs mined against Python's min() and max() of 1-d tensors, log(1 + sum(exp)) per
# side, sum(loss) / batch_size), dichotomies' ProxyNCA (proxies an nn.Parameter(torch.randn(...) / 8), torch.cdist(X, P)
# ** 2, labels binarised and smoothed, sklearn's label_binarize written in numpy) and ChaofWang's NpairLoss (targets by
# (target == torch.transpose(target, 0, 1)).float() normalised by their row sums, a soft cross_entropy helper, the l2
# term); one Adam step on their sum
def metric_losses(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Parameter = nn.Parameter

    class MultiSimilarityLoss(nn.Module):
        def __init__(self, cfg):
            super(MultiSimilarityLoss, self).__init__()
            self.thresh = 0.5
            self.margin = 0.1

            self.scale_pos = cfg['SCALE_POS']
            self.scale_neg = cfg['SCALE_NEG']

        def forward(self, feats, labels):
            assert feats.size(0) == labels.size(0), \
                f"feats.size(0): {feats.size(0)} is not equal to labels.size(0): {labels.size(0)}"
            batch_size = feats.size(0)
            sim_mat = torch.matmul(feats, torch.t(feats))

            epsilon = 1e-5
            loss = list()

            for i in range(batch_size):
                pos_pair_ = sim_mat[i][labels == labels[i]]
                pos_pair_ = pos_pair_[pos_pair_ < 1 - epsilon]
                neg_pair_ = sim_mat[i][labels != labels[i]]

                neg_pair = neg_pair_[neg_pair_ + self.margin > min(pos_pair_)]
                pos_pair = pos_pair_[pos_pair_ - self.margin < max(neg_pair_)]

                if len(neg_pair) < 1 or len(pos_pair) < 1:
                    continue

                # weighting step
                pos_loss = 1.0 / self.scale_pos * torch.log(
                    1 + torch.sum(torch.exp(-self.scale_pos * (pos_pair - self.thresh))))
                neg_loss = 1.0 / self.scale_neg * torch.log(
                    1 + torch.sum(torch.exp(self.scale_neg * (neg_pair - self.thresh))))
                loss.append(pos_loss + neg_loss)

            if len(loss) == 0:
                return torch.zeros([], requires_grad=True)

            loss = sum(loss) / batch_size
            return loss

    def label_binarize(y, classes):  # sklearn.preprocessing.label_binarize
        return (np.asarray(y)[:, None] == np.asarray(classes)[None, :]).astype(int)

    def binarize_and_smooth_labels(T, nb_classes, smoothing_const=0.1):
        T = T.cpu().numpy()
        T = label_binarize(T, classes=range(0, nb_classes))
        T = T * (1 - smoothing_const)
        T[T == 0] = smoothing_const / (nb_classes - 1)
        T = torch.FloatTensor(T)  # .cuda() in the repository: the reference runs on the CPU
        return T

    class ProxyNCA(torch.nn.Module):
        def __init__(self, nb_classes, sz_embedding, smoothing_const=0.1, scaling_x=1, scaling_p=3):
            torch.nn.Module.__init__(self)
            # initialize proxies s.t. norm of each proxy ~1 through div by 8
            # i.e. proxies.norm(2, dim=1)) should be close to [1,1,...,1]
            # TODO: use norm instead of div 8, because of embedding size
            self.proxies = Parameter(torch.randn(nb_classes, sz_embedding) / 8)
            self.smoothing_const = smoothing_const
            self.scaling_x = scaling_x
            self.scaling_p = scaling_p

        def forward(self, X, T):
            P = F.normalize(self.proxies, p=2, dim=-1) * self.scaling_p
            X = F.normalize(X, p=2, dim=-1) * self.scaling_x
            D = torch.cdist(X, P) ** 2
            T = binarize_and_smooth_labels(T, len(P), self.smoothing_const)
            # note that compared to proxy nca, positive included in denominator
            loss = torch.sum(-T * F.log_softmax(-D, -1), -1)
            return loss.mean()

    def cross_entropy(logits, target, size_average=True):
        if size_average:
            return torch.mean(torch.sum(- target * F.log_softmax(logits, -1), -1))
        else:
            return torch.sum(torch.sum(- target * F.log_softmax(logits, -1), -1))

    class NpairLoss(nn.Module):
        """the multi-class n-pair loss"""
        def __init__(self, l2_reg=0.02):
            super(NpairLoss, self).__init__()
            self.l2_reg = l2_reg

        def forward(self, anchor, positive, target):
            batch_size = anchor.size(0)
            target = target.view(target.size(0), 1)

            target = (target == torch.transpose(target, 0, 1)).float()
            target = target / torch.sum(target, dim=1, keepdim=True).float()

            logit = torch.matmul(anchor, torch.transpose(positive, 0, 1))
            loss_ce = cross_entropy(logit, target)
            l2_loss = torch.sum(anchor**2) / batch_size + torch.sum(positive**2) / batch_size

            loss = loss_ce + self.l2_reg * l2_loss * 0.25
            return loss

    embed = nn.Linear(4, 3)
    proxy_nca = ProxyNCA(3, 3)
    init = load(m, nn.ModuleList([embed, proxy_nca]), state)
    ms_loss = MultiSimilarityLoss({'SCALE_POS': 2.0, 'SCALE_NEG': 40.0})
    npair = NpairLoss()
    rng = np.random.default_rng(11)
    x = torch.tensor(normal(rng, 4, 4))
    labels = torch.tensor([0, 0, 1, 1])
    optimizer = torch.optim.Adam(list(embed.parameters()) + list(proxy_nca.parameters()), lr=0.05)
    feats = F.normalize(embed(x))
    parts = [ms_loss(feats, labels), proxy_nca(feats, labels), npair(feats[0::2], feats[1::2], labels[0::2])]
    loss = sum(parts)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return init, [p.item() for p in parts] + summary(embed.parameters()) + summary(proxy_nca.parameters())


def test_metric_losses():
    compare(metric_losses)


# (k) 1Konny/Beta-VAE's model.py and solver.py at a reduced size: reparametrize by logvar.div(2).exp() and
# Variable(std.data.new(std.size()).normal_()) (the draw filled from numpy here), View, BetaVAE_H's encoder and decoder
# Sequentials with nn.ReLU(True) and ConvTranspose2d, weight_init over self._modules by kaiming_init (init.kaiming_normal
# without the underscore, bias.data.fill_(0)), reconstruction_loss by binary_cross_entropy_with_logits(size_average=False)
# .div(batch_size), kl_divergence's total_kld = klds.sum(1).mean(0, True), dimension_wise_kld and mean_kld; objective 'H'
# (recon_loss + beta * total_kld) and objective 'B' (C = torch.clamp(C_max / C_stop_iter * global_iter, 0,
# C_max.data[0]), gamma * (total_kld - C).abs()) one step each, Adam with betas
def beta_vae(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init = nn.init
    Variable = torch.autograd.Variable
    rng = np.random.default_rng(12)

    def reparametrize(mu, logvar):
        std = logvar.div(2).exp()
        eps = Variable(std.data.new(std.size()).copy_(torch.tensor(normal(rng, *std.size()))))  # .normal_()
        return mu + std * eps

    class View(nn.Module):
        def __init__(self, size):
            super(View, self).__init__()
            self.size = size

        def forward(self, tensor):
            return tensor.view(self.size)

    class BetaVAE_H(nn.Module):
        """Model proposed in original beta-VAE paper(Higgins et al, ICLR, 2017)."""

        def __init__(self, z_dim=10, nc=3):
            super(BetaVAE_H, self).__init__()
            self.z_dim = z_dim
            self.nc = nc
            self.encoder = nn.Sequential(
                nn.Conv2d(nc, 4, 4, 2, 1),          # B,  4,  4,  4
                nn.ReLU(True),
                nn.Conv2d(4, 8, 4, 1),              # B,  8,  1,  1
                nn.ReLU(True),
                View((-1, 8 * 1 * 1)),              # B, 8
                nn.Linear(8, z_dim * 2),            # B, z_dim*2
            )
            self.decoder = nn.Sequential(
                nn.Linear(z_dim, 8),                # B, 8
                View((-1, 8, 1, 1)),                # B, 8,  1,  1
                nn.ReLU(True),
                nn.ConvTranspose2d(8, 4, 4),        # B,  4,  4,  4
                nn.ReLU(True),
                nn.ConvTranspose2d(4, nc, 4, 2, 1),  # B, nc, 8, 8
            )

            self.weight_init()

        def weight_init(self):
            for block in self._modules:
                for m in self._modules[block]:
                    kaiming_init(m)

        def forward(self, x):
            distributions = self._encode(x)
            mu = distributions[:, :self.z_dim]
            logvar = distributions[:, self.z_dim:]
            z = reparametrize(mu, logvar)
            x_recon = self._decode(z)

            return x_recon, mu, logvar

        def _encode(self, x):
            return self.encoder(x)

        def _decode(self, z):
            return self.decoder(z)

    def kaiming_init(m):
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            init.kaiming_normal(m.weight)
            if m.bias is not None:
                m.bias.data.fill_(0)
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.weight.data.fill_(1)
            if m.bias is not None:
                m.bias.data.fill_(0)

    def reconstruction_loss(x, x_recon, distribution):
        batch_size = x.size(0)
        assert batch_size != 0

        if distribution == 'bernoulli':
            recon_loss = F.binary_cross_entropy_with_logits(x_recon, x, size_average=False).div(batch_size)
        elif distribution == 'gaussian':
            x_recon = F.sigmoid(x_recon)
            recon_loss = F.mse_loss(x_recon, x, size_average=False).div(batch_size)
        else:
            recon_loss = None

        return recon_loss

    def kl_divergence(mu, logvar):
        batch_size = mu.size(0)
        assert batch_size != 0
        if mu.data.ndimension() == 4:
            mu = mu.view(mu.size(0), mu.size(1))
        if logvar.data.ndimension() == 4:
            logvar = logvar.view(logvar.size(0), logvar.size(1))

        klds = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp())
        total_kld = klds.sum(1).mean(0, True)
        dimension_wise_kld = klds.mean(0)
        mean_kld = klds.mean(1).mean(0, True)

        return total_kld, dimension_wise_kld, mean_kld

    net = BetaVAE_H(z_dim=3, nc=1)
    init_state = load(m, net, state)
    optim = torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999))
    x = torch.tensor((rng.random((2, 1, 8, 8)) > 0.5).astype(np.float32))
    beta, gamma = 4, 1000
    C_max = Variable(torch.FloatTensor([25]))
    C_stop_iter = 1e5
    out = []
    for global_iter, (objective, decoder_dist) in enumerate([('H', 'bernoulli'), ('B', 'gaussian')], 1):
        x_recon, mu, logvar = net(x)
        recon_loss = reconstruction_loss(x, x_recon, decoder_dist)
        total_kld, dim_wise_kld, mean_kld = kl_divergence(mu, logvar)

        if objective == 'H':
            beta_vae_loss = recon_loss + beta * total_kld
        elif objective == 'B':
            C = torch.clamp(C_max / C_stop_iter * global_iter, 0, C_max.data[0])
            beta_vae_loss = recon_loss + gamma * (total_kld - C).abs()

        optim.zero_grad()
        beta_vae_loss.backward()
        optim.step()
        out += [recon_loss.item(), total_kld.item(), mean_kld.item()] + dim_wise_kld.tolist()
    assert tuple(total_kld.shape) == (1,) and tuple(C.shape) == (1,)
    return init_state, out + summary(net.parameters())


def test_beta_vae():
    compare(beta_vae)


# (l) KrisKorrel/sparsemax-pytorch's sparsemax.py: the module-level device from torch.cuda.is_available(), forward
# transposing dim to the front and flattening, the max subtracted through expand_as, torch.sort(input=input, dim=dim,
# descending=True), a range by torch.arange(start=1, end=n + 1, step=1, device=device, dtype=input.dtype), is_gt =
# torch.gt(bound, cumulative_sum_zs).type(input.type()), k by torch.max of is_gt * range, taus and
# torch.max(torch.zeros_like(input), input - taus) kept on self.output (its hand-written backward, which autograd
# never calls, is kept as written); gradients by autograd through sort and cumsum, and sparse attention weights in a
# tiny classifier trained one SGD step
def sparsemax(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    class Sparsemax(nn.Module):
        """Sparsemax function."""

        def __init__(self, dim=None):
            """Initialize sparsemax activation

            Args:
                dim (int, optional): The dimension over which to apply the sparsemax function.
            """
            super(Sparsemax, self).__init__()

            self.dim = -1 if dim is None else dim

        def forward(self, input):
            """Forward function.

            Args:
                input (torch.Tensor): Input tensor. First dimension should be the batch size

            Returns:
                torch.Tensor: [batch_size x number_of_logits] Output tensor

            """
            # Sparsemax currently only handles 2-dim tensors,
            # so we reshape to a convenient shape and reshape back after sparsemax
            input = input.transpose(0, self.dim)
            original_size = input.size()
            input = input.reshape(input.size(0), -1)
            input = input.transpose(0, 1)
            dim = 1

            number_of_logits = input.size(dim)

            # Translate input by max for numerical stability
            input = input - torch.max(input, dim=dim, keepdim=True)[0].expand_as(input)

            # Sort input in descending order.
            # (NOTE: Can be replaced with linear time selection method described here:
            # http://stanford.edu/~jduchi/projects/DuchiShSiCh08.html)
            zs = torch.sort(input=input, dim=dim, descending=True)[0]
            range = torch.arange(start=1, end=number_of_logits + 1, step=1, device=device, dtype=input.dtype).view(1, -1)
            range = range.expand_as(zs)

            # Determine sparsity of projection
            bound = 1 + range * zs
            cumulative_sum_zs = torch.cumsum(zs, dim)
            is_gt = torch.gt(bound, cumulative_sum_zs).type(input.type())
            k = torch.max(is_gt * range, dim, keepdim=True)[0]

            # Compute threshold function
            zs_sparse = is_gt * zs

            # Compute taus
            taus = (torch.sum(zs_sparse, dim, keepdim=True) - 1) / k
            taus = taus.expand_as(input)

            # Sparsemax
            self.output = torch.max(torch.zeros_like(input), input - taus)

            # Reshape back to original shape
            output = self.output
            output = output.transpose(0, 1)
            output = output.reshape(original_size)
            output = output.transpose(0, self.dim)

            return output

        def backward(self, grad_output):
            """Backward function."""
            dim = 1

            nonzeros = torch.ne(self.output, 0)
            sum = torch.sum(grad_output * nonzeros, dim=dim) / torch.sum(nonzeros, dim=dim)
            self.grad_input = nonzeros * (grad_output - sum.expand_as(grad_output))

            return self.grad_input

    sparsemax = Sparsemax(dim=1)
    rng = np.random.default_rng(13)
    logits = torch.tensor(normal(rng, 3, 5) * 2, requires_grad=True)
    probs = sparsemax(logits)
    assert np.allclose(probs.sum(1).tolist(), 1.0) and (probs == 0).any().item()
    g = torch.tensor(normal(rng, 3, 5))
    probs.backward(g)
    out = probs.view(-1).tolist() + logits.grad.view(-1).tolist()

    class SparseAttentionPool(nn.Module):
        def __init__(self):
            super().__init__()
            self.score = nn.Linear(3, 1)
            self.head = nn.Linear(3, 2)
            self.sparsemax = Sparsemax(dim=1)

        def forward(self, x):
            weights = self.sparsemax(self.score(x).squeeze(-1))
            return self.head((weights.unsqueeze(-1) * x).sum(1)), weights

    model = SparseAttentionPool()
    init = load(m, model, state)
    x = torch.tensor(normal(rng, 2, 4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    y, weights = model(x)
    loss = F.cross_entropy(y, torch.tensor([1, 0]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return init, out + [loss.item()] + weights.view(-1).tolist() + summary(model.parameters())


def test_sparsemax():
    compare(sparsemax)


# (m) bermanmaxim/LovaszSoftmax's pytorch/lovasz_losses.py: lovasz_grad (gts - gt_sorted.float().cumsum(0), the
# Jaccard differences by jaccard[1:p] = jaccard[1:p] - jaccard[0:-1]), lovasz_hinge per image over zip(logits, labels)
# with flatten_binary_scores and an ignore label, lovasz_hinge_flat (signs, errors sorted descending, labels[perm],
# torch.dot(F.relu(errors_sorted), Variable(grad))), lovasz_softmax over the 'present' classes (flatten_probas by
# permute(0, 2, 3, 1).contiguous().view(-1, C), probas[valid.nonzero().squeeze()]) and the repository's mean()
# (iter, next, acc += v over enumerate(l, 2), ifilterfalse for ignore_nan); one SGD step of a 1x1-conv segmenter
def lovasz(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Variable = torch.autograd.Variable
    from itertools import filterfalse as ifilterfalse

    def lovasz_grad(gt_sorted):
        """
        Computes gradient of the Lovasz extension w.r.t sorted errors
        See Alg. 1 in paper
        """
        p = len(gt_sorted)
        gts = gt_sorted.sum()
        intersection = gts - gt_sorted.float().cumsum(0)
        union = gts + (1 - gt_sorted).float().cumsum(0)
        jaccard = 1. - intersection / union
        if p > 1:  # cover 1-pixel case
            jaccard[1:p] = jaccard[1:p] - jaccard[0:-1]
        return jaccard

    def lovasz_hinge(logits, labels, per_image=True, ignore=None):
        """
        Binary Lovasz hinge loss
          logits: [B, H, W] Variable, logits at each pixel (between -\\infty and +\\infty)
          labels: [B, H, W] Tensor, binary ground truth masks (0 or 1)
          per_image: compute the loss per image instead of per batch
          ignore: void class id
        """
        if per_image:
            loss = mean(lovasz_hinge_flat(*flatten_binary_scores(log.unsqueeze(0), lab.unsqueeze(0), ignore))
                        for log, lab in zip(logits, labels))
        else:
            loss = lovasz_hinge_flat(*flatten_binary_scores(logits, labels, ignore))
        return loss

    def lovasz_hinge_flat(logits, labels):
        """
        Binary Lovasz hinge loss
          logits: [P] Variable, logits at each prediction (between -\\infty and +\\infty)
          labels: [P] Tensor, binary ground truth labels (0 or 1)
          ignore: label to ignore
        """
        if len(labels) == 0:
            # only void pixels, the gradients should be 0
            return logits.sum() * 0.
        signs = 2. * labels.float() - 1.
        errors = (1. - logits * Variable(signs))
        errors_sorted, perm = torch.sort(errors, dim=0, descending=True)
        perm = perm.data
        gt_sorted = labels[perm]
        grad = lovasz_grad(gt_sorted)
        loss = torch.dot(F.relu(errors_sorted), Variable(grad))
        return loss

    def flatten_binary_scores(scores, labels, ignore=None):
        """
        Flattens predictions in the batch (binary case)
        Remove labels equal to 'ignore'
        """
        scores = scores.view(-1)
        labels = labels.view(-1)
        if ignore is None:
            return scores, labels
        valid = (labels != ignore)
        vscores = scores[valid]
        vlabels = labels[valid]
        return vscores, vlabels

    def lovasz_softmax(probas, labels, classes='present', per_image=False, ignore=None):
        """
        Multi-class Lovasz-Softmax loss
          probas: [B, C, H, W] Variable, class probabilities at each prediction (between 0 and 1).
                  Interpreted as binary (sigmoid) output with outputs of size [B, H, W].
          labels: [B, H, W] Tensor, ground truth labels (between 0 and C - 1)
          classes: 'all' for all, 'present' for classes present in labels, or a list of classes to average.
          per_image: compute the loss per image instead of per batch
          ignore: void class labels
        """
        if per_image:
            loss = mean(lovasz_softmax_flat(*flatten_probas(prob.unsqueeze(0), lab.unsqueeze(0), ignore),
                                            classes=classes)
                        for prob, lab in zip(probas, labels))
        else:
            loss = lovasz_softmax_flat(*flatten_probas(probas, labels, ignore), classes=classes)
        return loss

    def lovasz_softmax_flat(probas, labels, classes='present'):
        """
        Multi-class Lovasz-Softmax loss
          probas: [P, C] Variable, class probabilities at each prediction (between 0 and 1)
          labels: [P] Tensor, ground truth labels (between 0 and C - 1)
          classes: 'all' for all, 'present' for classes present in labels, or a list of classes to average.
        """
        if probas.numel() == 0:
            # only void pixels, the gradients should be 0
            return probas * 0.
        C = probas.size(1)
        losses = []
        class_to_sum = list(range(C)) if classes in ['all', 'present'] else classes
        for c in class_to_sum:
            fg = (labels == c).float()  # foreground for class c
            if (classes == 'present' and fg.sum() == 0):
                continue
            if C == 1:
                if len(classes) > 1:
                    raise ValueError('Sigmoid output possible only with 1 class')
                class_pred = probas[:, 0]
            else:
                class_pred = probas[:, c]
            errors = (Variable(fg) - class_pred).abs()
            errors_sorted, perm = torch.sort(errors, 0, descending=True)
            perm = perm.data
            fg_sorted = fg[perm]
            losses.append(torch.dot(errors_sorted, Variable(lovasz_grad(fg_sorted))))
        return mean(losses)

    def flatten_probas(probas, labels, ignore=None):
        """
        Flattens predictions in the batch
        """
        if probas.dim() == 3:
            # assumes output of a sigmoid layer
            B, H, W = probas.size()
            probas = probas.view(B, 1, H, W)
        B, C, H, W = probas.size()
        probas = probas.permute(0, 2, 3, 1).contiguous().view(-1, C)  # B * H * W, C = P, C
        labels = labels.view(-1)
        if ignore is None:
            return probas, labels
        valid = (labels != ignore)
        vprobas = probas[valid.nonzero().squeeze()]
        vlabels = labels[valid]
        return vprobas, vlabels

    def isnan(x):
        return x != x

    def mean(l, ignore_nan=False, empty=0):
        """
        nanmean compatible with generators.
        """
        l = iter(l)
        if ignore_nan:
            l = ifilterfalse(isnan, l)
        try:
            n = 1
            acc = next(l)
        except StopIteration:
            if empty == 'raise':
                raise ValueError('Empty mean')
            return empty
        for n, v in enumerate(l, 2):
            acc += v
        if n == 1:
            return acc
        return acc / n

    model = nn.Conv2d(2, 4, 1)  # three classes and a binary logit
    init = load(m, model, state)
    rng = np.random.default_rng(14)
    x = torch.tensor(normal(rng, 2, 2, 3, 3))
    labels = torch.tensor(rng.integers(0, 2, (2, 3, 3)))  # class 2 absent: skipped as not 'present'
    labels[0, 0, 0] = 255
    binary = torch.tensor(rng.integers(0, 2, (2, 3, 3)))
    binary[1, 2, 2] = 255
    assert mean([], empty=0) == 0 and mean(iter([1.0, float('nan'), 3.0]), ignore_nan=True) == 2.0
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    out = model(x)
    probas = F.softmax(out[:, :3], dim=1)
    softmax_loss = lovasz_softmax(probas, labels, ignore=255)
    hinge_loss = lovasz_hinge(out[:, 3], binary, per_image=True, ignore=255)
    loss = softmax_loss + hinge_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return init, [softmax_loss.item(), hinge_loss.item()] + summary(model.parameters())


def test_lovasz():
    compare(lovasz)


# (n) fzenke/spytorch's Tutorial 1 (surrogate gradients): time constants as float(np.exp(-time_step / tau)),
# weights torch.empty(..., requires_grad=True) filled by torch.nn.init.normal_(mean, std=weight_scale /
# np.sqrt(n)), Poisson-like input spikes by x_data[mask < prob] = 1.0 (the mask numpy's), SurrGradSpike an
# autograd.Function (out[input > 0] = 1.0 forward, grad_input / (scale * torch.abs(input) + 1.0) ** 2 backward),
# run_snn with torch.einsum("abc,cd->abd", (inputs, w1)) on a tuple of operands, the reset by out.detach(), records
# stacked over time, and train()'s max over time, LogSoftmax and NLLLoss under Adam(betas=(0.9, 0.999))
def spytorch(m, state=None):
    torch, nn = m.torch, m.nn
    nb_inputs, nb_hidden, nb_outputs = 5, 6, 2
    time_step = 1e-3
    nb_steps = 4
    batch_size = 3
    dtype = torch.float
    device = torch.device("cpu")
    tau_mem = 10e-3
    tau_syn = 5e-3
    alpha = float(np.exp(-time_step / tau_syn))
    beta = float(np.exp(-time_step / tau_mem))
    weight_scale = 7 * (1.0 - beta)  # this should give us some spikes to begin with

    w1 = torch.empty((nb_inputs, nb_hidden), device=device, dtype=dtype, requires_grad=True)
    torch.nn.init.normal_(w1, mean=0.0, std=weight_scale / np.sqrt(nb_inputs))
    w2 = torch.empty((nb_hidden, nb_outputs), device=device, dtype=dtype, requires_grad=True)
    torch.nn.init.normal_(w2, mean=0.0, std=weight_scale / np.sqrt(nb_hidden))
    if state is not None:  # tnet's draws
        with torch.no_grad():
            w1.copy_(torch.tensor(state['w1']))
            w2.copy_(torch.tensor(state['w2']))
    init = {'w1': w1.detach().numpy().copy(), 'w2': w2.detach().numpy().copy()}

    rng = np.random.RandomState(15)
    freq = 5 * 100  # Hz (5 in the tutorial: more spikes at four steps)
    prob = freq * time_step
    mask = torch.tensor(rng.rand(batch_size, nb_steps, nb_inputs).astype(np.float32))
    x_data = torch.zeros((batch_size, nb_steps, nb_inputs), device=device, dtype=dtype, requires_grad=False)
    x_data[mask < prob] = 1.0
    y_data = torch.tensor(1 * (rng.rand(batch_size) < 0.5), device=device)

    class SurrGradSpike(torch.autograd.Function):
        """
        Here we implement our spiking nonlinearity which also implements
        the surrogate gradient. By subclassing torch.autograd.Function,
        we will be able to use all of PyTorch's autograd functionality.
        Here we use the normalized negative part of a fast sigmoid
        as this was done in Zenke & Ganguli (2018).
        """

        scale = 100.0  # controls steepness of surrogate gradient

        @staticmethod
        def forward(ctx, input):
            """
            In the forward pass we compute a step function of the input Tensor
            and return it. ctx is a context object that we use to stash information which
            we need to later backpropagate our error signals. To achieve this we use the
            ctx.save_for_backward method.
            """
            ctx.save_for_backward(input)
            out = torch.zeros_like(input)
            out[input > 0] = 1.0
            return out

        @staticmethod
        def backward(ctx, grad_output):
            """
            In the backward pass we receive a Tensor we need to compute the
            surrogate gradient of the loss with respect to the input.
            Here we use the normalized negative part of a fast sigmoid
            as this was done in Zenke & Ganguli (2018).
            """
            input, = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad = grad_input / (SurrGradSpike.scale * torch.abs(input) + 1.0) ** 2
            return grad

    # here we overwrite our naive spike function by the "SurrGradSpike" nonlinearity which implements a surrogate gradient
    spike_fn = SurrGradSpike.apply

    def run_snn(inputs):
        h1 = torch.einsum("abc,cd->abd", (inputs, w1))
        syn = torch.zeros((batch_size, nb_hidden), device=device, dtype=dtype)
        mem = torch.zeros((batch_size, nb_hidden), device=device, dtype=dtype)

        mem_rec = []
        spk_rec = []

        # Compute hidden layer activity
        for t in range(nb_steps):
            mthr = mem - 1.0
            out = spike_fn(mthr)
            rst = out.detach()  # We do not want to backprop through the reset

            new_syn = alpha * syn + h1[:, t]
            new_mem = (beta * mem + syn) * (1.0 - rst)

            mem_rec.append(mem)
            spk_rec.append(out)

            mem = new_mem
            syn = new_syn

        mem_rec = torch.stack(mem_rec, dim=1)
        spk_rec = torch.stack(spk_rec, dim=1)

        # Readout layer
        h2 = torch.einsum("abc,cd->abd", (spk_rec, w2))
        flt = torch.zeros((batch_size, nb_outputs), device=device, dtype=dtype)
        out = torch.zeros((batch_size, nb_outputs), device=device, dtype=dtype)
        out_rec = [out]
        for t in range(nb_steps):
            new_flt = alpha * flt + h2[:, t]
            new_out = beta * out + flt

            flt = new_flt
            out = new_out

            out_rec.append(out)

        out_rec = torch.stack(out_rec, dim=1)
        other_recs = [mem_rec, spk_rec]
        return out_rec, other_recs

    def train(x_data, y_data, lr=1e-3, nb_epochs=10):
        params = [w1, w2]
        optimizer = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999))

        log_softmax_fn = nn.LogSoftmax(dim=1)
        loss_fn = nn.NLLLoss()

        loss_hist = []
        for e in range(nb_epochs):
            output, _ = run_snn(x_data)
            m, _ = torch.max(output, 1)
            log_p_y = log_softmax_fn(m)
            loss_val = loss_fn(log_p_y, y_data)

            optimizer.zero_grad()
            loss_val.backward()
            optimizer.step()
            loss_hist.append(loss_val.item())
        return loss_hist

    loss_hist = train(x_data, y_data, lr=2e-2, nb_epochs=2)
    _, (mem_rec, spk_rec) = run_snn(x_data)
    assert spk_rec.sum().item() > 0
    return init, loss_hist + [spk_rec.sum().item(), mem_rec.sum().item()] + summary([w1, w2])


def test_spytorch():
    compare(spytorch)


# (o) facebookresearch/DiT's models.py at a tiny size, trained by cloneofsimo/minRF's rectified flow: modulate (x * (1 +
# scale.unsqueeze(1)) + shift.unsqueeze(1)), TimestepEmbedder.timestep_embedding (freqs by torch.exp(-math.log(max_period)
# * torch.arange(start=0, end=half, dtype=torch.float32) / half), an odd dim padded by zeros_like), LabelEmbedder's
# token_drop by torch.where(drop_ids, self.num_classes, labels) with force_drop_ids, DiTBlock's adaLN modulation
# chunked in six (timm's Attention and Mlp written out, GELU(approximate="tanh")), FinalLayer, the numpy
# get_2d_sincos_pos_embed copied into a frozen pos_embed by .data.copy_(torch.from_numpy(pos_embed).float().unsqueeze(0)),
# initialize_weights (xavier_uniform_ through self.apply, the patch conv's weight viewed flat, adaLN zeroed),
# unpatchify by x.reshape(shape=...) and torch.einsum('nhwpqc->nchpwq'); RF.forward's t by torch.sigmoid of normal
# draws (numpy's here, as z1), texp by t.view([b, *([1] * len(x.shape[1:]))]), the batchwise MSE and its (t, loss)
# pairs binned by int(t * 10), and RF.sample's Euler steps (its classifier-free guidance not taken) under
# @torch.no_grad()
def dit_rf(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rng = np.random.default_rng(16)

    def modulate(x, shift, scale):
        return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)

    class TimestepEmbedder(nn.Module):
        """
        Embeds scalar timesteps into vector representations.
        """
        def __init__(self, hidden_size, frequency_embedding_size=256):
            super().__init__()
            self.mlp = nn.Sequential(
                nn.Linear(frequency_embedding_size, hidden_size, bias=True),
                nn.SiLU(),
                nn.Linear(hidden_size, hidden_size, bias=True),
            )
            self.frequency_embedding_size = frequency_embedding_size

        @staticmethod
        def timestep_embedding(t, dim, max_period=10000):
            half = dim // 2
            freqs = torch.exp(
                -math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half
            ).to(device=t.device)
            args = t[:, None].float() * freqs[None]
            embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
            if dim % 2:
                embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
            return embedding

        def forward(self, t):
            t_freq = self.timestep_embedding(t, self.frequency_embedding_size)
            t_emb = self.mlp(t_freq)
            return t_emb

    class LabelEmbedder(nn.Module):
        """
        Embeds class labels into vector representations. Also handles label dropout for classifier-free guidance.
        """
        def __init__(self, num_classes, hidden_size, dropout_prob):
            super().__init__()
            use_cfg_embedding = dropout_prob > 0
            self.embedding_table = nn.Embedding(num_classes + use_cfg_embedding, hidden_size)
            self.num_classes = num_classes
            self.dropout_prob = dropout_prob

        def token_drop(self, labels, force_drop_ids=None):
            """
            Drops labels to enable classifier-free guidance.
            """
            if force_drop_ids is None:
                drop_ids = torch.rand(labels.shape[0], device=labels.device) < self.dropout_prob
            else:
                drop_ids = force_drop_ids == 1
            labels = torch.where(drop_ids, self.num_classes, labels)
            return labels

        def forward(self, labels, train, force_drop_ids=None):
            use_dropout = self.dropout_prob > 0
            if (train and use_dropout) or (force_drop_ids is not None):
                labels = self.token_drop(labels, force_drop_ids)
            embeddings = self.embedding_table(labels)
            return embeddings

    class Attention(nn.Module):  # timm's, as DiT imports it
        def __init__(self, dim, num_heads=8, qkv_bias=False):
            super().__init__()
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.scale = self.head_dim ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            x = F.scaled_dot_product_attention(q, k, v)
            x = x.transpose(1, 2).reshape(B, N, C)
            return self.proj(x)

    class Mlp(nn.Module):  # timm's, as DiT imports it
        def __init__(self, in_features, hidden_features, act_layer=nn.GELU, drop=0.):
            super().__init__()
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Linear(hidden_features, in_features)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class DiTBlock(nn.Module):
        """
        A DiT block with adaptive layer norm zero (adaLN-Zero) conditioning.
        """
        def __init__(self, hidden_size, num_heads, mlp_ratio=4.0, **block_kwargs):
            super().__init__()
            self.norm1 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
            self.attn = Attention(hidden_size, num_heads=num_heads, qkv_bias=True, **block_kwargs)
            self.norm2 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
            mlp_hidden_dim = int(hidden_size * mlp_ratio)
            approx_gelu = lambda: nn.GELU(approximate="tanh")
            self.mlp = Mlp(in_features=hidden_size, hidden_features=mlp_hidden_dim, act_layer=approx_gelu, drop=0)
            self.adaLN_modulation = nn.Sequential(
                nn.SiLU(),
                nn.Linear(hidden_size, 6 * hidden_size, bias=True)
            )

        def forward(self, x, c):
            shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
            x = x + gate_msa.unsqueeze(1) * self.attn(modulate(self.norm1(x), shift_msa, scale_msa))
            x = x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))
            return x

    class FinalLayer(nn.Module):
        """
        The final layer of DiT.
        """
        def __init__(self, hidden_size, patch_size, out_channels):
            super().__init__()
            self.norm_final = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
            self.linear = nn.Linear(hidden_size, patch_size * patch_size * out_channels, bias=True)
            self.adaLN_modulation = nn.Sequential(
                nn.SiLU(),
                nn.Linear(hidden_size, 2 * hidden_size, bias=True)
            )

        def forward(self, x, c):
            shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
            x = modulate(self.norm_final(x), shift, scale)
            x = self.linear(x)
            return x

    class PatchEmbed(nn.Module):  # timm's, as DiT imports it
        def __init__(self, img_size, patch_size, in_chans, embed_dim, bias=True):
            super().__init__()
            self.patch_size = (patch_size, patch_size)
            self.num_patches = (img_size // patch_size) ** 2
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size, bias=bias)

        def forward(self, x):
            return self.proj(x).flatten(2).transpose(1, 2)

    class DiT(nn.Module):
        """
        Diffusion model with a Transformer backbone.
        """
        def __init__(self, input_size=32, patch_size=2, in_channels=4, hidden_size=1152, depth=28, num_heads=16,
                     mlp_ratio=4.0, class_dropout_prob=0.1, num_classes=1000, learn_sigma=True):
            super().__init__()
            self.learn_sigma = learn_sigma
            self.in_channels = in_channels
            self.out_channels = in_channels * 2 if learn_sigma else in_channels
            self.patch_size = patch_size
            self.num_heads = num_heads

            self.x_embedder = PatchEmbed(input_size, patch_size, in_channels, hidden_size, bias=True)
            self.t_embedder = TimestepEmbedder(hidden_size, frequency_embedding_size=7)
            self.y_embedder = LabelEmbedder(num_classes, hidden_size, class_dropout_prob)
            num_patches = self.x_embedder.num_patches
            # Will use fixed sin-cos embedding:
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, hidden_size), requires_grad=False)

            self.blocks = nn.ModuleList([
                DiTBlock(hidden_size, num_heads, mlp_ratio=mlp_ratio) for _ in range(depth)
            ])
            self.final_layer = FinalLayer(hidden_size, patch_size, self.out_channels)
            self.initialize_weights()

        def initialize_weights(self):
            # Initialize transformer layers:
            def _basic_init(module):
                if isinstance(module, nn.Linear):
                    torch.nn.init.xavier_uniform_(module.weight)
                    if module.bias is not None:
                        nn.init.constant_(module.bias, 0)
            self.apply(_basic_init)

            # Initialize (and freeze) pos_embed by sin-cos embedding:
            pos_embed = get_2d_sincos_pos_embed(self.pos_embed.shape[-1], int(self.x_embedder.num_patches ** 0.5))
            self.pos_embed.data.copy_(torch.from_numpy(pos_embed).float().unsqueeze(0))

            # Initialize patch_embed like nn.Linear (instead of nn.Conv2d):
            w = self.x_embedder.proj.weight.data
            nn.init.xavier_uniform_(w.view([w.shape[0], -1]))
            nn.init.constant_(self.x_embedder.proj.bias, 0)

            # Initialize label embedding table:
            nn.init.normal_(self.y_embedder.embedding_table.weight, std=0.02)

            # Initialize timestep embedding MLP:
            nn.init.normal_(self.t_embedder.mlp[0].weight, std=0.02)
            nn.init.normal_(self.t_embedder.mlp[2].weight, std=0.02)

            # Zero-out adaLN modulation layers in DiT blocks:
            for block in self.blocks:
                nn.init.constant_(block.adaLN_modulation[-1].weight, 0)
                nn.init.constant_(block.adaLN_modulation[-1].bias, 0)

            # Zero-out output layers:
            nn.init.constant_(self.final_layer.adaLN_modulation[-1].weight, 0)
            nn.init.constant_(self.final_layer.adaLN_modulation[-1].bias, 0)
            nn.init.constant_(self.final_layer.linear.weight, 0)
            nn.init.constant_(self.final_layer.linear.bias, 0)

        def unpatchify(self, x):
            """
            x: (N, T, patch_size**2 * C)
            imgs: (N, H, W, C)
            """
            c = self.out_channels
            p = self.x_embedder.patch_size[0]
            h = w = int(x.shape[1] ** 0.5)
            assert h * w == x.shape[1]

            x = x.reshape(shape=(x.shape[0], h, w, p, p, c))
            x = torch.einsum('nhwpqc->nchpwq', x)
            imgs = x.reshape(shape=(x.shape[0], c, h * p, h * p))
            return imgs

        def forward(self, x, t, y, force_drop_ids=None):
            """
            Forward pass of DiT.
            x: (N, C, H, W) tensor of spatial inputs (images or latent representations of images)
            t: (N,) tensor of diffusion timesteps
            y: (N,) tensor of class labels
            """
            x = self.x_embedder(x) + self.pos_embed  # (N, T, D), where T = H * W / patch_size ** 2
            t = self.t_embedder(t)                   # (N, D)
            y = self.y_embedder(y, self.training, force_drop_ids)    # (N, D)
            c = t + y                                # (N, D)
            for block in self.blocks:
                x = block(x, c)                      # (N, T, D)
            x = self.final_layer(x, c)                # (N, T, patch_size ** 2 * out_channels)
            x = self.unpatchify(x)                   # (N, out_channels, H, W)
            return x

    def get_2d_sincos_pos_embed(embed_dim, grid_size, cls_token=False, extra_tokens=0):
        grid_h = np.arange(grid_size, dtype=np.float32)
        grid_w = np.arange(grid_size, dtype=np.float32)
        grid = np.meshgrid(grid_w, grid_h)  # here w goes first
        grid = np.stack(grid, axis=0)

        grid = grid.reshape([2, 1, grid_size, grid_size])
        pos_embed = get_2d_sincos_pos_embed_from_grid(embed_dim, grid)
        if cls_token and extra_tokens > 0:
            pos_embed = np.concatenate([np.zeros([extra_tokens, embed_dim]), pos_embed], axis=0)
        return pos_embed

    def get_2d_sincos_pos_embed_from_grid(embed_dim, grid):
        assert embed_dim % 2 == 0
        emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])  # (H*W, D/2)
        emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])  # (H*W, D/2)
        emb = np.concatenate([emb_h, emb_w], axis=1)  # (H*W, D)
        return emb

    def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
        assert embed_dim % 2 == 0
        omega = np.arange(embed_dim // 2, dtype=np.float64)
        omega /= embed_dim / 2.
        omega = 1. / 10000**omega  # (D/2,)
        pos = pos.reshape(-1)  # (M,)
        out = np.einsum('m,d->md', pos, omega)  # (M, D/2), outer product
        emb_sin = np.sin(out)  # (M, D/2)
        emb_cos = np.cos(out)  # (M, D/2)
        emb = np.concatenate([emb_sin, emb_cos], axis=1)  # (M, D)
        return emb

    class RF:
        def __init__(self, model, ln=True):
            self.model = model
            self.ln = ln

        def forward(self, x, cond):
            b = x.size(0)
            if self.ln:
                nt = torch.tensor(normal(rng, b)).to(x.device)  # torch.randn((b,))
                t = torch.sigmoid(nt)
            else:
                t = torch.rand((b,)).to(x.device)
            texp = t.view([b, *([1] * len(x.shape[1:]))])
            z1 = torch.tensor(normal(rng, *x.shape))  # torch.randn_like(x)
            zt = (1 - texp) * x + texp * z1
            vtheta = self.model(zt, t, cond)
            batchwise_mse = ((z1 - x - vtheta) ** 2).mean(dim=list(range(1, len(x.shape))))
            tlist = batchwise_mse.detach().cpu().reshape(-1).tolist()
            ttloss = [(tv, tloss) for tv, tloss in zip(t, tlist)]
            return batchwise_mse.mean(), ttloss

        @torch.no_grad()
        def sample(self, z, cond, null_cond=None, sample_steps=50, cfg=2.0):
            b = z.size(0)
            dt = 1.0 / sample_steps
            dt = torch.tensor([dt] * b).to(z.device).view([b, *([1] * len(z.shape[1:]))])
            images = [z]
            for i in range(sample_steps, 0, -1):
                t = i / sample_steps
                t = torch.tensor([t] * b).to(z.device)

                vc = self.model(z, t, cond)
                if null_cond is not None:
                    vu = self.model(z, t, null_cond)
                    vc = vu + cfg * (vc - vu)

                z = z - dt * vc
                images.append(z)
            return images

    model = DiT(input_size=4, patch_size=2, in_channels=1, hidden_size=8, depth=1, num_heads=2, mlp_ratio=2.0,
                class_dropout_prob=0.1, num_classes=3, learn_sigma=False)
    torch.nn.init.normal_(model.final_layer.linear.weight, std=0.02)  # out of zero, for the blocks' gradients
    init = load(m, model, state)
    assert not model.pos_embed.requires_grad and model.y_embedder.embedding_table.num_embeddings == 4
    rf = RF(lambda x, t, y: model(x, t, y, force_drop_ids=torch.tensor([1, 0])))
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
    x = torch.tensor(normal(rng, 2, 1, 4, 4))
    c = torch.tensor([0, 2])
    lossbin = {i: 0 for i in range(10)}
    losscnt = {i: 1e-6 for i in range(10)}
    optimizer.zero_grad()
    loss, blsct = rf.forward(x, c)
    loss.backward()
    optimizer.step()
    for t, l in blsct:
        lossbin[int(t * 10)] += l
        losscnt[int(t * 10)] += 1
    model.eval()
    rf_eval = RF(model)
    images = rf_eval.sample(torch.tensor(normal(rng, 1, 1, 4, 4)), torch.tensor([1]), sample_steps=1)
    assert len(images) == 2 and not images[-1].requires_grad
    return init, ([loss.item()] + [lossbin[i] / losscnt[i] for i in range(10)] + images[-1].view(-1).tolist()
                  + summary(model.parameters()))


def test_dit_rf():
    compare(dit_rf)
