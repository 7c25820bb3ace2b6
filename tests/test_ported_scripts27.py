"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: Hongyi Zhang's Fixup ResNet for CIFAR (scalar bias and scale nn.Parameters, normal_ init
scaled by num_layers ** -0.5, zero-initialised conv2 and fc, an AvgPool2d(1, stride) shortcut padded by torch.cat with
zeros_like, three SGD param groups picked by name); Srivastava's Highway network on MNIST-sized rows (a carry gate
whose bias is filled with -2, H * T + x * (1 - T)); Goodfellow's Maxout MLP with a CReLU stem (view and max over the
pieces); Salesforce's awd-lstm-lm tricks (embedded_dropout through F.embedding of a row-masked weight, LockedDropout
over time, weight tying of the decoder to the encoder, repackage_hidden, clip_grad_norm_); the GloVe objective (a
co-occurrence matrix, word and context embeddings and biases, the weighting (x / x_max) ** alpha clamped at 1, Adagrad);
Sunnyd's IndRNN (a per-unit recurrent weight, a Python loop over time, the recurrent weight clamped through .data after
each step); and Ioffe's Batch Renormalization written by hand (running buffers by register_buffer, r and d detached and
clamped, torch.no_grad updates, train and eval). Each runs in tnet, then in torch from tnet's initial weights
(state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy draws what a
script draws (dropout masks included); shapes are tiny and runs take one or two steps. Each script seeds torch first,
as its source's main does."""
import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) Fixup ResNet for CIFAR (hongyi-zhang/Fixup, cifar/models/fixup_resnet_cifar.py and cifar_train.py): no
# normalisation layers; scalar biases before each conv and activation, a scalar scale after conv2; conv1's weights
# normal_ with He's std times num_layers ** -0.5, conv2 and the classifier zeroed by constant_; the downsampling
# shortcut an AvgPool2d(1, stride) whose channels are doubled by zeros; biases and scales at a tenth of the lr
def fixup_resnet(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(4)
    rng = np.random.default_rng(4)

    def conv3x3(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)

    class FixupBasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super(FixupBasicBlock, self).__init__()
            self.bias1a = nn.Parameter(torch.zeros(1))
            self.conv1 = conv3x3(inplanes, planes, stride)
            self.bias1b = nn.Parameter(torch.zeros(1))
            self.relu = nn.ReLU(inplace=True)
            self.bias2a = nn.Parameter(torch.zeros(1))
            self.conv2 = conv3x3(planes, planes)
            self.scale = nn.Parameter(torch.ones(1))
            self.bias2b = nn.Parameter(torch.zeros(1))
            self.downsample = downsample

        def forward(self, x):
            identity = x
            out = self.conv1(x + self.bias1a)
            out = self.relu(out + self.bias1b)
            out = self.conv2(out + self.bias2a)
            out = out * self.scale + self.bias2b
            if self.downsample is not None:
                identity = self.downsample(x + self.bias1a)
                identity = torch.cat((identity, torch.zeros_like(identity)), 1)
            out += identity
            out = self.relu(out)
            return out

    class FixupResNet(nn.Module):
        def __init__(self, block, layers, num_classes=10):
            super(FixupResNet, self).__init__()
            self.num_layers = sum(layers)
            self.inplanes = 4
            self.conv1 = conv3x3(3, 4)
            self.bias1 = nn.Parameter(torch.zeros(1))
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = self._make_layer(block, 4, layers[0])
            self.layer2 = self._make_layer(block, 8, layers[1], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.bias2 = nn.Parameter(torch.zeros(1))
            self.fc = nn.Linear(8, num_classes)
            for m in self.modules():
                if isinstance(m, FixupBasicBlock):
                    nn.init.normal_(m.conv1.weight, mean=0, std=np.sqrt(
                        2 / (m.conv1.weight.shape[0] * np.prod(m.conv1.weight.shape[2:]))) * self.num_layers ** (-0.5))
                    nn.init.constant_(m.conv2.weight, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.constant_(m.weight, 0)
                    nn.init.constant_(m.bias, 0)

        def _make_layer(self, block, planes, blocks, stride=1):
            downsample = None
            if stride != 1:
                downsample = nn.AvgPool2d(1, stride=stride)
            layers = [block(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes
            for _ in range(1, blocks):
                layers.append(block(planes, planes))
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.conv1(x)
            x = self.relu(x + self.bias1)
            x = self.layer1(x)
            x = self.layer2(x)
            x = self.avgpool(x)
            x = x.view(x.size(0), -1)
            x = self.fc(x + self.bias2)
            return x

    model = FixupResNet(FixupBasicBlock, [1, 1], num_classes=3)
    init = load(m, model, state)
    base_lr = 0.1
    parameters_bias = [p[1] for p in model.named_parameters() if 'bias' in p[0]]
    parameters_scale = [p[1] for p in model.named_parameters() if 'scale' in p[0]]
    parameters_others = [p[1] for p in model.named_parameters() if not ('bias' in p[0] or 'scale' in p[0])]
    optimizer = torch.optim.SGD([{'params': parameters_bias, 'lr': base_lr / 10.},
                                 {'params': parameters_scale, 'lr': base_lr / 10.},
                                 {'params': parameters_others}], lr=base_lr, momentum=0.9, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(3):
        inputs, targets = torch.from_numpy(normal(rng, 2, 3, 6, 6)), torch.from_numpy(rng.integers(0, 3, 2))
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_fixup_resnet():
    compare(fixup_resnet)


# (b) a Highway network on flattened MNIST-sized rows (the many "highway-networks" PyTorch repos): each layer a
# transform H = relu(W_H x + b_H) and a gate T = sigmoid(W_T x + b_T), the gate's bias filled with -2 so that the
# layer first carries its input; y = H * T + x * (1 - T), then log_softmax and nll_loss under Adadelta
def highway_mnist(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(5)
    rng = np.random.default_rng(5)

    class HighwayLayer(nn.Module):
        def __init__(self, size, bias_init=-2.0):
            super(HighwayLayer, self).__init__()
            self.H = nn.Linear(size, size)
            self.T = nn.Linear(size, size)
            self.T.bias.data.fill_(bias_init)

        def forward(self, x):
            H = F.relu(self.H(x))
            T = torch.sigmoid(self.T(x))
            return H * T + x * (1 - T)

    class HighwayNet(nn.Module):
        def __init__(self, in_size, size, num_layers, num_classes):
            super(HighwayNet, self).__init__()
            self.proj = nn.Linear(in_size, size)
            self.highways = nn.ModuleList([HighwayLayer(size) for _ in range(num_layers)])
            self.fc = nn.Linear(size, num_classes)

        def forward(self, x):
            x = x.view(-1, 16)
            x = F.relu(self.proj(x))
            for layer in self.highways:
                x = layer(x)
            return F.log_softmax(self.fc(x), dim=1)

    model = HighwayNet(16, 8, 3, 4)
    init = load(m, model, state)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    losses = []
    model.train()
    for batch_idx in range(2):
        data, target = torch.from_numpy(normal(rng, 3, 1, 4, 4)), torch.from_numpy(rng.integers(0, 4, 3))
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        data, target = torch.from_numpy(normal(rng, 5, 1, 4, 4)), torch.from_numpy(rng.integers(0, 4, 5))
        output = model(data)
        test_loss = F.nll_loss(output, target, reduction='sum').item()
        pred = output.argmax(dim=1, keepdim=True)
        correct = pred.eq(target.view_as(pred)).sum().item()
    return init, losses + [test_loss, correct] + summary(model.parameters())


def test_highway_mnist():
    compare(highway_mnist)


# (c) Goodfellow et al.'s Maxout MLP, in the usual PyTorch rendering: one Linear producing pool_size pieces per unit,
# viewed as [..., units, pool_size] and reduced by max(-1)[0]; a CReLU stem (torch.cat of relu(x) and relu(-x)), a
# max-norm constraint on each unit's incoming weights after the step (renorm_ through .data), SGD with Nesterov momentum
def maxout_mlp(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(6)
    rng = np.random.default_rng(6)

    class CReLU(nn.Module):
        def forward(self, x):
            return torch.cat((F.relu(x), F.relu(-x)), 1)

    class Maxout(nn.Module):
        def __init__(self, d_in, d_out, pool_size):
            super().__init__()
            self.d_in, self.d_out, self.pool_size = d_in, d_out, pool_size
            self.lin = nn.Linear(d_in, d_out * pool_size)

        def forward(self, inputs):
            shape = list(inputs.size())
            shape[-1] = self.d_out
            shape.append(self.pool_size)
            max_dim = len(shape) - 1
            out = self.lin(inputs)
            m, i = out.view(*shape).max(max_dim)
            return m

    model = nn.Sequential(nn.Linear(6, 5), CReLU(), Maxout(10, 7, 3), Maxout(7, 4, 2), nn.Linear(4, 3))
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5, nesterov=True)
    losses = []
    for _ in range(2):
        x, y = torch.from_numpy(normal(rng, 4, 6)), torch.from_numpy(rng.integers(0, 3, 4))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        for layer in model:
            if isinstance(layer, Maxout):
                layer.lin.weight.data.renorm_(2, 0, 0.5)
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_maxout_mlp():
    compare(maxout_mlp)


# (d) Salesforce's awd-lstm-lm (model.py, embed_regularize.py, locked_dropout.py, main.py): embedded_dropout drops
# whole rows of the embedding by a [ntoken, 1] mask expanded over the weight and looks up through F.embedding with
# padding_idx -1 when the encoder has none (torch reads -1 as the last row); LockedDropout draws one mask per
# sequence by x.data.new(1, B, H) and expands it over time; one-layer LSTMs stacked in a ModuleList, the last one
# sized to the embedding for weight tying; init_hidden by weight.new(...).zero_(); batchify by narrow, view, t and
# contiguous; repackage_hidden; the lr rescaled by the sequence length through param_groups; AR and TAR penalties;
# clip_grad_norm_. bernoulli_ draws become numpy draws copied into the same tensors
def awd_lstm(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(7)
    rng = np.random.default_rng(7)

    def embedded_dropout(embed, words, dropout=0.1, scale=None):
        if dropout:
            keep = (rng.random((embed.weight.size(0), 1)) > dropout).astype(np.float32)
            mask = embed.weight.data.new().resize_((embed.weight.size(0), 1)).copy_(torch.from_numpy(keep))
            mask = mask.expand_as(embed.weight) / (1 - dropout)
            masked_embed_weight = mask * embed.weight
        else:
            masked_embed_weight = embed.weight
        if scale:
            masked_embed_weight = scale.expand_as(masked_embed_weight) * masked_embed_weight
        padding_idx = embed.padding_idx
        if padding_idx is None:
            padding_idx = -1
        X = torch.nn.functional.embedding(words, masked_embed_weight, padding_idx, embed.max_norm, embed.norm_type,
                                          embed.scale_grad_by_freq, embed.sparse)
        return X

    class LockedDropout(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x, dropout=0.5):
            if not self.training or not dropout:
                return x
            keep = (rng.random((1, x.size(1), x.size(2))) > dropout).astype(np.float32)
            m = x.data.new(1, x.size(1), x.size(2)).copy_(torch.from_numpy(keep))
            mask = m.requires_grad_(False) / (1 - dropout)
            mask = mask.expand_as(x)
            return mask * x

    class RNNModel(nn.Module):
        def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.4, dropouth=0.25, dropouti=0.2, dropoute=0.1,
                     tie_weights=False):
            super(RNNModel, self).__init__()
            self.lockdrop = LockedDropout()
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnns = [torch.nn.LSTM(ninp if l == 0 else nhid, nhid if l != nlayers - 1 else (
                ninp if tie_weights else nhid), 1, dropout=0) for l in range(nlayers)]
            self.rnns = torch.nn.ModuleList(self.rnns)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.ninp, self.nhid, self.nlayers, self.tie_weights = ninp, nhid, nlayers, tie_weights
            self.dropout, self.dropouti, self.dropouth, self.dropoute = dropout, dropouti, dropouth, dropoute

        def init_weights(self):
            initrange = 0.1
            self.encoder.weight.data.uniform_(-initrange, initrange)
            self.decoder.bias.data.fill_(0)
            self.decoder.weight.data.uniform_(-initrange, initrange)

        def forward(self, input, hidden, return_h=False):
            emb = embedded_dropout(self.encoder, input, dropout=self.dropoute if self.training else 0)
            emb = self.lockdrop(emb, self.dropouti)
            raw_output = emb
            new_hidden, raw_outputs, outputs = [], [], []
            for l, rnn in enumerate(self.rnns):
                raw_output, new_h = rnn(raw_output, hidden[l])
                new_hidden.append(new_h)
                raw_outputs.append(raw_output)
                if l != self.nlayers - 1:
                    raw_output = self.lockdrop(raw_output, self.dropouth)
                    outputs.append(raw_output)
            hidden = new_hidden
            output = self.lockdrop(raw_output, self.dropout)
            outputs.append(output)
            result = output.view(output.size(0) * output.size(1), output.size(2))
            if return_h:
                return result, hidden, raw_outputs, outputs
            return result, hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters()).data
            return [(weight.new(1, bsz, self.nhid if l != self.nlayers - 1 else (
                self.ninp if self.tie_weights else self.nhid)).zero_(),
                     weight.new(1, bsz, self.nhid if l != self.nlayers - 1 else (
                         self.ninp if self.tie_weights else self.nhid)).zero_())
                    for l in range(self.nlayers)]

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        data = data.view(bsz, -1).t().contiguous()
        return data

    def get_batch(source, i, seq_len):
        seq_len = min(seq_len, len(source) - 1 - i)
        data = source[i:i + seq_len]
        target = source[i + 1:i + 1 + seq_len].view(-1)
        return data, target

    def repackage_hidden(h):
        if isinstance(h, torch.Tensor):
            return h.detach()
        else:
            return tuple(repackage_hidden(v) for v in h)

    ntokens, bptt, batch_size, alpha, beta, clip, lr = 9, 3, 2, 2, 1, 0.25, 5.0
    ids = rng.integers(0, ntokens, 15)
    ids[[2, 9]] = ntokens - 1  # the row that padding_idx=-1 names
    train_data = batchify(torch.from_numpy(ids), batch_size)
    model = RNNModel(ntokens, 4, 5, 2, tie_weights=True)
    init = load(m, model, state)
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=lr, weight_decay=1.2e-6)
    criterion = nn.CrossEntropyLoss()
    model.train()
    hidden = model.init_hidden(batch_size)
    losses, i = [], 0
    for seq_len in (3, 2):
        lr2 = optimizer.param_groups[0]['lr']
        optimizer.param_groups[0]['lr'] = lr2 * seq_len / bptt
        data, targets = get_batch(train_data, i, seq_len)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden, rnn_hs, dropped_rnn_hs = model(data, hidden, return_h=True)
        raw_loss = criterion(model.decoder(output), targets)
        loss = raw_loss
        loss = loss + sum(alpha * dropped_rnn_h.pow(2).mean() for dropped_rnn_h in dropped_rnn_hs[-1:])
        loss = loss + sum(beta * (rnn_h[1:] - rnn_h[:-1]).pow(2).mean() for rnn_h in rnn_hs[-1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        optimizer.step()
        optimizer.param_groups[0]['lr'] = lr2
        losses += [raw_loss.item(), loss.item()]
        i += seq_len
    assert model.decoder.weight is model.encoder.weight
    return init, losses + summary(model.parameters())


def test_awd_lstm():
    compare(awd_lstm)


# (e) GloVe in PyTorch (the common single-file ports of Pennington et al.): a co-occurrence matrix counted with a
# window and 1 / distance weights, the nonzero cells as (i, j, x_ij) triples; word and context nn.Embeddings and
# one-dimensional bias embeddings initialised by uniform_; the weighting f(x) = (x / x_max) ** alpha clamped at 1 by
# torch.where; loss = sum f * (w_i . w~_j + b_i + b~_j - log x_ij) ** 2 under Adagrad; the vectors summed at the end
def glove(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(8)
    rng = np.random.default_rng(8)
    vocab_size, embed_dim, window, x_max, alpha = 7, 4, 2, 3.0, 0.75
    corpus = rng.integers(0, vocab_size, 30)
    cooc = np.zeros((vocab_size, vocab_size), dtype=np.float32)
    for pos, w in enumerate(corpus):
        for off in range(1, window + 1):
            if pos + off < len(corpus):
                cooc[w, corpus[pos + off]] += 1.0 / off
                cooc[corpus[pos + off], w] += 1.0 / off
    i_idx, j_idx = np.nonzero(cooc)

    class GloVe(nn.Module):
        def __init__(self, vocab_size, embedding_dim):
            super(GloVe, self).__init__()
            self.wi = nn.Embedding(vocab_size, embedding_dim)
            self.wj = nn.Embedding(vocab_size, embedding_dim)
            self.bi = nn.Embedding(vocab_size, 1)
            self.bj = nn.Embedding(vocab_size, 1)
            self.wi.weight.data.uniform_(-1, 1)
            self.wj.weight.data.uniform_(-1, 1)
            self.bi.weight.data.zero_()
            self.bj.weight.data.zero_()

        def forward(self, i_indices, j_indices):
            w_i = self.wi(i_indices)
            w_j = self.wj(j_indices)
            b_i = self.bi(i_indices).squeeze()
            b_j = self.bj(j_indices).squeeze()
            x = torch.sum(w_i * w_j, dim=1) + b_i + b_j
            return x

    def weight_func(x, x_max, alpha):
        wx = (x / x_max) ** alpha
        wx = torch.where(wx > 1, torch.ones_like(wx), wx)
        return wx

    def wmse_loss(weights, inputs, targets):
        loss = weights * torch.nn.functional.mse_loss(inputs, targets, reduction='none')
        return torch.mean(loss)

    model = GloVe(vocab_size, embed_dim)
    init = load(m, model, state)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    x_ij_all = torch.from_numpy(cooc[i_idx, j_idx])
    losses = []
    for epoch in range(2):
        perm = rng.permutation(len(i_idx))[:16]
        i_s = torch.from_numpy(i_idx[perm])
        j_s = torch.from_numpy(j_idx[perm])
        x_ij = x_ij_all[torch.from_numpy(perm)]
        optimizer.zero_grad()
        outputs = model(i_s, j_s)
        weights_x = weight_func(x_ij, x_max, alpha)
        loss = wmse_loss(weights_x, outputs, torch.log(x_ij))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    emb = model.wi.weight.data + model.wj.weight.data
    return init, losses + summary([emb]) + summary(model.parameters())


def test_glove():
    compare(glove)


# (f) Sunnyd's IndRNN (IndRNN_pytorch, IndRNN_onlyrecurrent and its cuda-free loop): h_t = relu(W x_t + u * h_{t-1}
# + b) with u a vector, the input weights kaiming_uniform_-ed in reset_parameters and u drawn uniform_ in (0, 1); the
# recurrent weight clamped to |u| <= (2 ** (1/T)) after each step through .data.clamp_; BatchNorm1d between layers
# over [T*B, H] views; the last time step classified; Adam
def indrnn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(9)
    rng = np.random.default_rng(9)
    T, B, I, H, C = 5, 3, 2, 6, 3
    U_bound = np.power(2, 1 / T)

    class IndRNNCell(nn.Module):
        def __init__(self, input_size, hidden_size, recurrent_min_abs=0, recurrent_max_abs=None):
            super(IndRNNCell, self).__init__()
            self.hidden_size = hidden_size
            self.recurrent_min_abs = recurrent_min_abs
            self.recurrent_max_abs = recurrent_max_abs
            self.weight_ih = nn.Parameter(torch.Tensor(hidden_size, input_size))
            self.weight_hh = nn.Parameter(torch.Tensor(hidden_size))
            self.bias_ih = nn.Parameter(torch.Tensor(hidden_size))
            self.reset_parameters()

        def check_bounds(self):
            if self.recurrent_min_abs:
                abs_kernel = torch.abs(self.weight_hh.data).clamp_(min=self.recurrent_min_abs)
                self.weight_hh.data = self.weight_hh.data.sign() * abs_kernel
            if self.recurrent_max_abs:
                self.weight_hh.data = self.weight_hh.data.clamp(max=self.recurrent_max_abs,
                                                                min=-self.recurrent_max_abs)

        def reset_parameters(self):
            for name, weight in self.named_parameters():
                if "weight_hh" in name:
                    nn.init.uniform_(weight, a=0, b=1)
                elif "weight_ih" in name:
                    nn.init.kaiming_uniform_(weight, a=8, mode='fan_in')
                elif "bias" in name:
                    weight.data.fill_(0.0)

        def forward(self, input, hx):
            return F.relu(F.linear(input, self.weight_ih, self.bias_ih) + self.weight_hh * hx)

    class IndRNN(nn.Module):
        def __init__(self, input_size, hidden_size, n_layer=2, **kwargs):
            super(IndRNN, self).__init__()
            self.hidden_size = hidden_size
            self.cells = nn.ModuleList([IndRNNCell(input_size if i == 0 else hidden_size, hidden_size, **kwargs)
                                        for i in range(n_layer)])
            self.bns = nn.ModuleList([nn.BatchNorm1d(hidden_size) for _ in range(n_layer)])

        def forward(self, x, hidden=None):
            seq_len, batch = x.size(0), x.size(1)
            for cell, bn in zip(self.cells, self.bns):
                hx = x.new_zeros(batch, self.hidden_size) if hidden is None else hidden
                outputs = []
                for t in range(seq_len):
                    hx = cell(x[t], hx)
                    outputs.append(hx)
                x = torch.stack(outputs, 0)
                x = bn(x.view(seq_len * batch, -1)).view(seq_len, batch, -1)
            return x

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.indrnn = IndRNN(I, H, recurrent_min_abs=0.05, recurrent_max_abs=U_bound)
            self.classifier = nn.Linear(H, C)

        def forward(self, x):
            y = self.indrnn(x)
            return self.classifier(y[-1])

    model = Net()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.5)
    criterion = nn.CrossEntropyLoss()
    losses = []
    model.train()
    for _ in range(2):
        inputs, targets = torch.from_numpy(normal(rng, T, B, I)), torch.from_numpy(rng.integers(0, C, B))
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        for cell in model.indrnn.cells:
            cell.check_bounds()
        losses.append(loss.item())
    hh = [c.weight_hh.detach() for c in model.indrnn.cells]
    return init, losses + [float(h.abs().max().item()) for h in hh] + summary(model.parameters())


def test_indrnn():
    compare(indrnn)


# (g) Batch Renormalization written by hand (Ioffe 2017, in the style of ludvb/batchrenorm): running mean and std as
# buffers with a long num_batches_tracked; rmax and dmax ramped from num_batches_tracked by properties and clamp_-ed;
# r and d from detached batch statistics, clamp_-ed by tensor bounds; x.std(dims, unbiased=False) over a channels-last
# transpose; in-place buffer updates; a ValueError for a wrong input rank; eval by the running statistics. The run
# resumes at step 20000 (num_batches_tracked += 20000) so that r and d are not yet pinned to 1 and 0
def batch_renorm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(10)
    rng = np.random.default_rng(10)

    class BatchRenorm(nn.Module):
        def __init__(self, num_features, eps=1e-3, momentum=0.01, affine=True):
            super().__init__()
            self.register_buffer("running_mean", torch.zeros(num_features, dtype=torch.float))
            self.register_buffer("running_std", torch.ones(num_features, dtype=torch.float))
            self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
            self.weight = torch.nn.Parameter(torch.ones(num_features, dtype=torch.float))
            self.bias = torch.nn.Parameter(torch.zeros(num_features, dtype=torch.float))
            self.affine = affine
            self.eps = eps
            self.step = 0
            self.momentum = momentum

        def _check_input_dim(self, x):
            raise NotImplementedError()

        @property
        def rmax(self):
            return (2 / 35000 * self.num_batches_tracked + 25 / 35).clamp_(1.0, 3.0)

        @property
        def dmax(self):
            return (5 / 20000 * self.num_batches_tracked - 25 / 20).clamp_(0.0, 5.0)

        def forward(self, x):
            self._check_input_dim(x)
            if x.dim() > 2:
                x = x.transpose(1, -1)
            if self.training:
                dims = [i for i in range(x.dim() - 1)]
                batch_mean = x.mean(dims)
                batch_std = x.std(dims, unbiased=False) + self.eps
                r = (batch_std.detach() / self.running_std.view_as(batch_std)).clamp_(1 / self.rmax, self.rmax)
                d = ((batch_mean.detach() - self.running_mean.view_as(batch_mean))
                     / self.running_std.view_as(batch_std)).clamp_(-self.dmax, self.dmax)
                x = (x - batch_mean) / batch_std * r + d
                self.running_mean += self.momentum * (batch_mean.detach() - self.running_mean)
                self.running_std += self.momentum * (batch_std.detach() - self.running_std)
                self.num_batches_tracked += 1
            else:
                x = (x - self.running_mean) / self.running_std
            if self.affine:
                x = self.weight * x + self.bias
            if x.dim() > 2:
                x = x.transpose(1, -1)
            return x

    class BatchRenorm1d(BatchRenorm):
        def _check_input_dim(self, x):
            if x.dim() not in [2, 3]:
                raise ValueError("expected 2D or 3D input (got {x.dim()}D input)")

    class BatchRenorm2d(BatchRenorm):
        def _check_input_dim(self, x):
            if x.dim() != 4:
                raise ValueError("expected 4D input (got {x.dim()}D input)")

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn1 = BatchRenorm2d(4, momentum=0.3)
            self.fc1 = nn.Linear(4 * 3 * 3, 6)
            self.bn2 = BatchRenorm1d(6, momentum=0.3)
            self.fc2 = nn.Linear(6, 3)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
            x = torch.flatten(x, 1)
            x = F.relu(self.bn2(self.fc1(x)))
            return self.fc2(x)

    model = Net()
    init = load(m, model, state)
    for bn in (model.bn1, model.bn2):
        bn.num_batches_tracked += 20000
    try:
        model.bn2(torch.zeros(2, 6, 1, 1))
        raise AssertionError("a 4-D input to BatchRenorm1d passed")
    except ValueError:
        pass
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    model.train()
    for _ in range(2):
        x = torch.from_numpy(normal(rng, 4, 3, 6, 6) * 2 + 0.5)
        y = torch.from_numpy(rng.integers(0, 3, 4))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        out = model(torch.from_numpy(normal(rng, 3, 3, 6, 6)))
    buffers = [model.bn1.running_mean, model.bn1.running_std, model.bn2.running_mean, model.bn2.running_std]
    assert model.bn1.num_batches_tracked.item() == 20002
    return init, losses + out.flatten().tolist() + summary(buffers) + summary(model.parameters())


def test_batch_renorm():
    compare(batch_renorm)


# (h) loudinthecloud's pytorch-ntm on its copy task (ntm/memory.py, head.py, controller.py, ntm.py, aio.py,
# tasks/copytask.py): a memory bias buffer cloned and repeat-ed per batch; content addressing by
# F.cosine_similarity(memory + 1e-16, k + 1e-16, dim=-1) and softmax, interpolation, a circular shift by F.conv1d over
# torch.cat([w[-1:], w, w[:1]]) written row by row into torch.zeros(...), sharpening by ŵ ** γ; heads that split one
# Linear's columns at np.cumsum offsets; erase-and-add writes by matmul outer products; an LSTM controller with
# learned initial states; read biases registered as buffers from .data of tensors that a list also holds (so that
# load_state_dict must fill them in place); y_out[i], _ = net() into torch.zeros(Y.size()); BCELoss, clip_grad_value_
# and RMSprop(momentum=0.9, alpha=0.95) at a larger lr than the source's 1e-4 so that two steps move the weights
def ntm_copy(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Parameter = nn.Parameter
    torch.manual_seed(11)
    rng = np.random.default_rng(11)

    def _convolve(w, s):
        """Circular convolution implementation."""
        assert s.size(0) == 3
        t = torch.cat([w[-1:], w, w[:1]])
        c = F.conv1d(t.view(1, 1, -1), s.view(1, 1, -1)).view(-1)
        return c

    class NTMMemory(nn.Module):
        def __init__(self, N, M):
            super(NTMMemory, self).__init__()
            self.N, self.M = N, M
            self.register_buffer('mem_bias', torch.Tensor(N, M))
            stdev = 1 / (np.sqrt(N + M))
            nn.init.uniform_(self.mem_bias, -stdev, stdev)

        def reset(self, batch_size):
            self.batch_size = batch_size
            self.memory = self.mem_bias.clone().repeat(batch_size, 1, 1)

        def size(self):
            return self.N, self.M

        def read(self, w):
            return torch.matmul(w.unsqueeze(1), self.memory).squeeze(1)

        def write(self, w, e, a):
            self.prev_mem = self.memory
            self.memory = torch.Tensor(self.batch_size, self.N, self.M)
            erase = torch.matmul(w.unsqueeze(-1), e.unsqueeze(1))
            add = torch.matmul(w.unsqueeze(-1), a.unsqueeze(1))
            self.memory = self.prev_mem * (1 - erase) + add

        def address(self, k, β, g, s, γ, w_prev):
            wc = self._similarity(k, β)
            wg = self._interpolate(w_prev, wc, g)
            ŵ = self._shift(wg, s)
            w = self._sharpen(ŵ, γ)
            return w

        def _similarity(self, k, β):
            k = k.view(self.batch_size, 1, -1)
            w = F.softmax(β * F.cosine_similarity(self.memory + 1e-16, k + 1e-16, dim=-1), dim=1)
            return w

        def _interpolate(self, w_prev, wc, g):
            return g * wc + (1 - g) * w_prev

        def _shift(self, wg, s):
            result = torch.zeros(wg.size())
            for b in range(self.batch_size):
                result[b] = _convolve(wg[b], s[b])
            return result

        def _sharpen(self, ŵ, γ):
            w = ŵ ** γ
            w = torch.div(w, torch.sum(w, dim=1).view(-1, 1) + 1e-16)
            return w

    def _split_cols(mat, lengths):
        assert mat.size()[1] == sum(lengths)
        l = np.cumsum([0] + lengths)
        results = []
        for s, e in zip(l[:-1], l[1:]):
            results += [mat[:, s:e]]
        return results

    class NTMHeadBase(nn.Module):
        def __init__(self, memory, controller_size):
            super(NTMHeadBase, self).__init__()
            self.memory = memory
            self.N, self.M = memory.size()
            self.controller_size = controller_size

        def create_new_state(self, batch_size):
            return torch.zeros(batch_size, self.N)

        def _address_memory(self, k, β, g, s, γ, w_prev):
            k = k.clone()
            β = F.softplus(β)
            g = F.sigmoid(g)
            s = F.softmax(s, dim=1)
            γ = 1 + F.softplus(γ)
            w = self.memory.address(k, β, g, s, γ, w_prev)
            return w

    class NTMReadHead(NTMHeadBase):
        def __init__(self, memory, controller_size):
            super(NTMReadHead, self).__init__(memory, controller_size)
            self.read_lengths = [self.M, 1, 1, 3, 1]
            self.fc_read = nn.Linear(controller_size, sum(self.read_lengths))
            nn.init.xavier_uniform_(self.fc_read.weight, gain=1.4)
            nn.init.normal_(self.fc_read.bias, std=0.01)

        def is_read_head(self):
            return True

        def forward(self, embeddings, w_prev):
            o = self.fc_read(embeddings)
            k, β, g, s, γ = _split_cols(o, self.read_lengths)
            w = self._address_memory(k, β, g, s, γ, w_prev)
            r = self.memory.read(w)
            return r, w

    class NTMWriteHead(NTMHeadBase):
        def __init__(self, memory, controller_size):
            super(NTMWriteHead, self).__init__(memory, controller_size)
            self.write_lengths = [self.M, 1, 1, 3, 1, self.M, self.M]
            self.fc_write = nn.Linear(controller_size, sum(self.write_lengths))
            nn.init.xavier_uniform_(self.fc_write.weight, gain=1.4)
            nn.init.normal_(self.fc_write.bias, std=0.01)

        def is_read_head(self):
            return False

        def forward(self, embeddings, w_prev):
            o = self.fc_write(embeddings)
            k, β, g, s, γ, e, a = _split_cols(o, self.write_lengths)
            e = F.sigmoid(e)
            w = self._address_memory(k, β, g, s, γ, w_prev)
            self.memory.write(w, e, a)
            return w

    class LSTMController(nn.Module):
        def __init__(self, num_inputs, num_outputs, num_layers):
            super(LSTMController, self).__init__()
            self.num_inputs, self.num_outputs, self.num_layers = num_inputs, num_outputs, num_layers
            self.lstm = nn.LSTM(input_size=num_inputs, hidden_size=num_outputs, num_layers=num_layers)
            self.lstm_h_bias = Parameter(torch.randn(self.num_layers, 1, self.num_outputs) * 0.05)
            self.lstm_c_bias = Parameter(torch.randn(self.num_layers, 1, self.num_outputs) * 0.05)
            for p in self.lstm.parameters():
                if p.dim() == 1:
                    nn.init.constant_(p, 0)
                else:
                    stdev = 5 / (np.sqrt(self.num_inputs + self.num_outputs))
                    nn.init.uniform_(p, -stdev, stdev)

        def create_new_state(self, batch_size):
            lstm_h = self.lstm_h_bias.clone().repeat(1, batch_size, 1)
            lstm_c = self.lstm_c_bias.clone().repeat(1, batch_size, 1)
            return lstm_h, lstm_c

        def forward(self, x, prev_state):
            x = x.unsqueeze(0)
            outp, state = self.lstm(x, prev_state)
            return outp.squeeze(0), state

    class NTM(nn.Module):
        def __init__(self, num_inputs, num_outputs, controller, memory, heads):
            super(NTM, self).__init__()
            self.num_inputs, self.num_outputs = num_inputs, num_outputs
            self.controller, self.memory, self.heads = controller, memory, heads
            self.N, self.M = memory.size()
            self.num_read_heads = 0
            self.init_r = []
            for head in heads:
                if head.is_read_head():
                    init_r_bias = torch.randn(1, self.M) * 0.01
                    self.register_buffer("read{}_bias".format(self.num_read_heads), init_r_bias.data)
                    self.init_r += [init_r_bias]
                    self.num_read_heads += 1
            self.fc = nn.Linear(controller.num_outputs + self.num_read_heads * self.M, num_outputs)
            nn.init.xavier_uniform_(self.fc.weight, gain=1)
            nn.init.normal_(self.fc.bias, std=0.01)

        def create_new_state(self, batch_size):
            init_r = [r.clone().repeat(batch_size, 1) for r in self.init_r]
            controller_state = self.controller.create_new_state(batch_size)
            heads_state = [head.create_new_state(batch_size) for head in self.heads]
            return init_r, controller_state, heads_state

        def forward(self, x, prev_state):
            prev_reads, prev_controller_state, prev_heads_states = prev_state
            inp = torch.cat([x] + prev_reads, dim=1)
            controller_outp, controller_state = self.controller(inp, prev_controller_state)
            reads, heads_states = [], []
            for head, prev_head_state in zip(self.heads, prev_heads_states):
                if head.is_read_head():
                    r, head_state = head(controller_outp, prev_head_state)
                    reads += [r]
                else:
                    head_state = head(controller_outp, prev_head_state)
                heads_states += [head_state]
            inp2 = torch.cat([controller_outp] + reads, dim=1)
            o = F.sigmoid(self.fc(inp2))
            state = (reads, controller_state, heads_states)
            return o, state

    class EncapsulatedNTM(nn.Module):
        def __init__(self, num_inputs, num_outputs, controller_size, controller_layers, num_heads, N, M):
            super(EncapsulatedNTM, self).__init__()
            self.num_inputs, self.num_outputs = num_inputs, num_outputs
            self.memory = NTMMemory(N, M)
            controller = LSTMController(num_inputs + M * num_heads, controller_size, controller_layers)
            heads = nn.ModuleList([])
            for i in range(num_heads):
                heads += [NTMReadHead(self.memory, controller_size), NTMWriteHead(self.memory, controller_size)]
            self.ntm = NTM(num_inputs, num_outputs, controller, self.memory, heads)

        def init_sequence(self, batch_size):
            self.batch_size = batch_size
            self.memory.reset(batch_size)
            self.previous_state = self.ntm.create_new_state(batch_size)

        def forward(self, x=None):
            if x is None:
                x = torch.zeros(self.batch_size, self.num_inputs)
            o, self.previous_state = self.ntm(x, self.previous_state)
            return o, self.previous_state

    seq_width, seq_len, batch_size = 2, 1, 2
    net = EncapsulatedNTM(seq_width + 1, seq_width, 6, 1, 1, 5, 3)
    init = load(m, net, state)
    criterion = nn.BCELoss()
    optimizer = torch.optim.RMSprop(net.parameters(), momentum=0.9, alpha=0.95, lr=1e-2)
    losses = []
    for _ in range(2):
        seq = torch.from_numpy(rng.binomial(1, 0.5, (seq_len, batch_size, seq_width)).astype(np.float32))
        inp = torch.zeros(seq_len + 1, batch_size, seq_width + 1)
        inp[:seq_len, :, :seq_width] = seq
        inp[seq_len, :, seq_width] = 1.0
        X, Y = inp, seq.clone()
        optimizer.zero_grad()
        inp_seq_len = X.size(0)
        outp_seq_len, batch_size, _ = Y.size()
        net.init_sequence(batch_size)
        for i in range(inp_seq_len):
            net(X[i])
        y_out = torch.zeros(Y.size())
        for i in range(outp_seq_len):
            y_out[i], _ = net()
        loss = criterion(y_out, Y)
        loss.backward()
        parameters = list(filter(lambda p: p.grad is not None, net.parameters()))
        for p in parameters:
            p.grad.data.clamp_(-10, 10)
        optimizer.step()
        y_out_binarized = (y_out.clone().data >= 0.5).float()  # the source's apply_ runs on CPU tensors only
        cost = torch.sum(torch.abs(y_out_binarized - Y.data))
        losses += [loss.item(), cost.item() / batch_size]
    return init, losses + summary(net.parameters()) + summary([net.ntm.read0_bias, net.ntm.init_r[0]])


def test_ntm_copy():
    compare(ntm_copy)
