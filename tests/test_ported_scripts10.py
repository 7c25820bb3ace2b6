"""Graph networks, language models, few-shot and reinforcement learning as public repositories write
them (pytorch/examples' GCN, Kipf's pygcn with its sparse adjacency, pyGAT, nanoGPT's model and
train.py, makemore's hand-written backprop, the torchtext EmbeddingBag tutorial, bentrevett's packed
bidirectional LSTM, a PixelCNN's masked convolution, the REINFORCE and actor-critic examples, MAML's
functional learner, prototypical networks, the forward-forward example), written from memory in
their repositories' styles and ported by their imports alone, as test_ported_scripts.py: each runs
in tnet, then in torch from tnet's initial weights (state_dict through numpy), and the losses, and
the weights summed into a few numbers, agree. Where a script draws (dropout, a sampled action, a
random batch), the compared run switches the draw off, or numpy draws, or torch replays tnet's
draws; shapes are tiny and runs 1-3 steps."""
import math

import numpy as np

from helpers import compare, load


def summary(params):
    """A few numbers of the weights after the steps: each parameter's sum and sum of squares."""
    out = []
    for p in params:
        out += [float(p.detach().sum().item()), float((p.detach() ** 2).sum().item())]
    return out


def graph(seed=0, n=12, nfeat=6, nclass=3, edges=20):
    """A small citation-like graph: features, labels and an undirected edge list, as numpy."""
    rng = np.random.default_rng(seed)
    features = (rng.random((n, nfeat)) < 0.4).astype(np.float32)
    labels = rng.integers(0, nclass, n)
    pairs = rng.integers(0, n, (edges, 2))
    return features, labels, pairs[pairs[:, 0] != pairs[:, 1]]


# (a) pytorch/examples' gcn: GraphConv's kernel an nn.Parameter(torch.Tensor(...)) through xavier_normal_,
# the normalised adjacency D^-1/2 (A + I) D^-1/2 built with torch.diag and pow(-0.5), made sparse with
# to_sparse() and applied by torch.spmm, NLL on a boolean train mask, Adam with weight decay
def examples_gcn(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class GraphConv(nn.Module):
        """Graph Convolutional Layer described in "Semi-Supervised Classification with Graph
        Convolutional Networks"."""
        def __init__(self, input_dim, output_dim, use_bias=False):
            super(GraphConv, self).__init__()
            self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
            nn.init.xavier_normal_(self.kernel)
            self.bias = None
            if use_bias:
                self.bias = nn.Parameter(torch.Tensor(output_dim))
                nn.init.zeros_(self.bias)

        def forward(self, input_tensor, adj_mat):
            support = torch.mm(input_tensor, self.kernel)
            output = torch.spmm(adj_mat, support)
            if self.bias is not None:
                output = output + self.bias
            return output

    class GCN(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
            super(GCN, self).__init__()
            self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
            self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input_tensor, adj_mat):
            x = self.gc1(input_tensor, adj_mat)
            x = F.relu(x)
            x = self.dropout(x)
            x = self.gc2(x, adj_mat)
            return F.log_softmax(x, dim=1)

    def load_cora():
        features, labels, pairs = graph()
        features = torch.FloatTensor(features)
        labels = torch.LongTensor(labels)
        adj_mat = torch.eye(features.shape[0])
        for i, j in pairs:
            adj_mat[i, j] = 1
            adj_mat[j, i] = 1
        degree = torch.sum(adj_mat, dim=1)
        d_inv_sqrt = torch.diag(torch.pow(degree, -0.5))
        adj_mat = torch.mm(torch.mm(d_inv_sqrt, adj_mat), d_inv_sqrt).to_sparse()
        return features, labels, adj_mat

    def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val):
        model.train()
        optimizer.zero_grad()
        output = model(*input)
        loss = criterion(output[mask_train], target[mask_train])
        loss.backward()
        optimizer.step()
        val_loss = criterion(output[mask_val], target[mask_val]).item()
        return loss.item(), val_loss

    features, labels, adj_mat = load_cora()
    idx = torch.arange(features.shape[0])
    mask_train, mask_val = idx < 8, idx >= 8
    torch.manual_seed(0)
    gcn = GCN(features.shape[1], 8, int(labels.max()) + 1, dropout_p=0.0)  # the example's 0.5: a draw
    init = load(m, gcn, state)
    optimizer = optim.Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    losses = []
    for epoch in range(3):
        losses += train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, mask_train, mask_val)
    return init, losses + summary(gcn.parameters())


def test_examples_gcn():
    compare(examples_gcn)


# (b) Kipf's pygcn: the weight a Parameter(torch.FloatTensor(...)) reset by .data.uniform_(-stdv, stdv),
# a row-normalised numpy adjacency made a sparse tensor from its COO indices (torch.sparse.FloatTensor,
# the old spelling, and torch.sparse_coo_tensor), torch.spmm, idx_train as torch.LongTensor(range(...)),
# accuracy from output.max(1)[1].type_as(labels)
def pygcn(m, state=None, legacy=True):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    Parameter, Module = nn.Parameter, nn.Module

    class GraphConvolution(Module):
        """Simple GCN layer, similar to https://arxiv.org/abs/1609.02907"""
        def __init__(self, in_features, out_features, bias=True):
            super(GraphConvolution, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.weight = Parameter(torch.FloatTensor(in_features, out_features))
            if bias:
                self.bias = Parameter(torch.FloatTensor(out_features))
            else:
                self.register_parameter('bias', None)
            self.reset_parameters()

        def reset_parameters(self):
            stdv = 1. / math.sqrt(self.weight.size(1))
            self.weight.data.uniform_(-stdv, stdv)
            if self.bias is not None:
                self.bias.data.uniform_(-stdv, stdv)

        def forward(self, input, adj):
            support = torch.mm(input, self.weight)
            output = torch.spmm(adj, support)
            if self.bias is not None:
                return output + self.bias
            else:
                return output

        def __repr__(self):
            return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + str(self.out_features) + ')'

    class GCN(nn.Module):
        def __init__(self, nfeat, nhid, nclass, dropout):
            super(GCN, self).__init__()
            self.gc1 = GraphConvolution(nfeat, nhid)
            self.gc2 = GraphConvolution(nhid, nclass)
            self.dropout = dropout

        def forward(self, x, adj):
            x = F.relu(self.gc1(x, adj))
            x = F.dropout(x, self.dropout, training=self.training)
            x = self.gc2(x, adj)
            return F.log_softmax(x, dim=1)

    def normalize(mx):
        """Row-normalize sparse matrix"""
        rowsum = np.array(mx.sum(1))
        r_inv = np.power(rowsum, -1).flatten()
        r_inv[np.isinf(r_inv)] = 0.
        return np.diag(r_inv).dot(mx)

    def sparse_mx_to_torch_sparse_tensor(sparse_mx):
        """Convert a (here dense numpy) matrix to a torch sparse tensor."""
        row, col = np.nonzero(sparse_mx)
        indices = torch.from_numpy(np.vstack((row, col)).astype(np.int64))
        values = torch.from_numpy(sparse_mx[row, col].astype(np.float32))
        shape = torch.Size(sparse_mx.shape)
        if legacy:
            return torch.sparse.FloatTensor(indices, values, shape)
        return torch.sparse_coo_tensor(indices, values, shape)

    def accuracy(output, labels):
        preds = output.max(1)[1].type_as(labels)
        correct = preds.eq(labels).float()  # pygcn's .double(): tnet computes in float32 (README)
        correct = correct.sum()
        return correct / len(labels)

    features, labels, pairs = graph(1)
    adj = np.zeros((len(labels), len(labels)), dtype=np.float32)
    adj[pairs[:, 0], pairs[:, 1]] = 1
    adj = adj + adj.T * (adj.T > adj) - adj * (adj.T > adj)
    adj = normalize(adj + np.eye(adj.shape[0]))
    features = torch.FloatTensor(normalize(features))
    labels = torch.LongTensor(labels)
    adj = sparse_mx_to_torch_sparse_tensor(adj)
    idx_train, idx_val = torch.LongTensor(range(8)), torch.LongTensor(range(8, 12))
    torch.manual_seed(0)
    model = GCN(nfeat=features.shape[1], nhid=8, nclass=labels.max().item() + 1, dropout=0.0)  # pygcn's 0.5
    init = load(m, model, state)
    assert repr(model.gc1) == "GraphConvolution (6 -> 8)"
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    losses = []
    for epoch in range(3):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        model.eval()
        output = model(features, adj)
        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        losses += [loss_train.item(), acc_train.item(), loss_val.item()]
    return init, losses + summary(model.parameters())


def test_pygcn():
    compare(pygcn)


def test_pygcn_sparse_coo_tensor():
    compare(pygcn, legacy=False)


# (c) pyGAT (Diego999): each head's W and a xavier_uniform_ on .data with gain 1.414, the attention
# logits Wh1 + Wh2.T through LeakyReLU, masked by torch.where(adj > 0, e, -9e15 * ones_like(e)),
# softmax, heads kept in a plain list and registered by add_module, concatenated, an averaging output
# head, Adam with weight decay, and the checkpoint written per epoch and read back
def pygat(m, state=None, tmp=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class GraphAttentionLayer(nn.Module):
        """Simple GAT layer, similar to https://arxiv.org/abs/1710.10903"""
        def __init__(self, in_features, out_features, dropout, alpha, concat=True):
            super(GraphAttentionLayer, self).__init__()
            self.dropout = dropout
            self.in_features = in_features
            self.out_features = out_features
            self.alpha = alpha
            self.concat = concat

            self.W = nn.Parameter(torch.empty(size=(in_features, out_features)))
            nn.init.xavier_uniform_(self.W.data, gain=1.414)
            self.a = nn.Parameter(torch.empty(size=(2*out_features, 1)))
            nn.init.xavier_uniform_(self.a.data, gain=1.414)

            self.leakyrelu = nn.LeakyReLU(self.alpha)

        def forward(self, h, adj):
            Wh = torch.mm(h, self.W)  # h.shape: (N, in_features), Wh.shape: (N, out_features)
            e = self._prepare_attentional_mechanism_input(Wh)

            zero_vec = -9e15*torch.ones_like(e)
            attention = torch.where(adj > 0, e, zero_vec)
            attention = F.softmax(attention, dim=1)
            attention = F.dropout(attention, self.dropout, training=self.training)
            h_prime = torch.matmul(attention, Wh)

            if self.concat:
                return F.elu(h_prime)
            else:
                return h_prime

        def _prepare_attentional_mechanism_input(self, Wh):
            # Wh.shape (N, out_feature); self.a.shape (2 * out_feature, 1)
            Wh1 = torch.matmul(Wh, self.a[:self.out_features, :])
            Wh2 = torch.matmul(Wh, self.a[self.out_features:, :])
            # broadcast add
            e = Wh1 + Wh2.T
            return self.leakyrelu(e)

        def __repr__(self):
            return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + str(self.out_features) + ')'

    class GAT(nn.Module):
        def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
            """Dense version of GAT."""
            super(GAT, self).__init__()
            self.dropout = dropout

            self.attentions = [GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True) for _ in range(nheads)]
            for i, attention in enumerate(self.attentions):
                self.add_module('attention_{}'.format(i), attention)

            self.out_att = GraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False)

        def forward(self, x, adj):
            x = F.dropout(x, self.dropout, training=self.training)
            x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
            x = F.dropout(x, self.dropout, training=self.training)
            x = F.elu(self.out_att(x, adj))
            return F.log_softmax(x, dim=1)

    def accuracy(output, labels):
        preds = output.max(1)[1].type_as(labels)
        correct = preds.eq(labels).float()  # pyGAT's .double(): tnet computes in float32 (README)
        correct = correct.sum()
        return correct / len(labels)

    features, labels, pairs = graph(2)
    adj = torch.eye(len(labels))
    adj[torch.tensor(pairs[:, 0]), torch.tensor(pairs[:, 1])] = 1
    adj = adj + adj.t()
    features, labels = torch.FloatTensor(features), torch.LongTensor(labels)
    idx_train, idx_val = torch.LongTensor(range(8)), torch.LongTensor(range(8, 12))
    torch.manual_seed(0)
    model = GAT(nfeat=features.shape[1], nhid=4, nclass=int(labels.max()) + 1, dropout=0.0, alpha=0.2, nheads=2)
    init = load(m, model, state)
    assert sorted(dict(model.named_children())) == ['attention_0', 'attention_1', 'out_att']
    optimizer = optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    losses = []
    for epoch in range(3):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        model.eval()
        output = model(features, adj)
        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        losses += [loss_train.data.item(), acc_train.data.item(), loss_val.data.item()]
        torch.save(model.state_dict(), str(tmp / '{}.pkl'.format(epoch)))
    best_epoch = int(np.argmin(losses[2::3]))
    model.load_state_dict(torch.load(str(tmp / '{}.pkl'.format(best_epoch))))
    model.eval()
    loss_test = F.nll_loss(model(features, adj)[idx_val], labels[idx_val])
    return init, losses + [loss_test.item()] + summary(model.parameters())


def test_pygat(tmp_path):
    (tmp_path / "tnet").mkdir()
    (tmp_path / "torch").mkdir()
    compare(lambda m, state=None: pygat(m, state, tmp_path / ("torch" if state else "tnet")))


def test_sparse_coo_tensor_is_torch_dense():
    """tnet.sparse_coo_tensor holds torch's to_dense(): repeated indices add up, the size is inferred
    from the largest indices, dense trailing dims (hybrid COO) are kept, and values get the gradient."""
    import torch

    import tnet
    indices = [[0, 1, 1, 0], [2, 0, 0, 2]]
    values = np.array([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0], [0.25, 1.0]], np.float32)
    for size in (None, (3, 4, 2)):
        v = tnet.tensor(values, requires_grad=True)
        ref_v = torch.tensor(values, requires_grad=True)
        sizes = [] if size is None else [size]
        out = tnet.sparse_coo_tensor(indices, v, *sizes)
        ref = torch.sparse_coo_tensor(torch.tensor(indices), ref_v, *sizes).to_dense()
        np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
        g = np.arange(ref.numel(), dtype=np.float32).reshape(ref.shape)
        out.backward(tnet.tensor(g))
        ref.backward(torch.tensor(g))
        np.testing.assert_array_equal(v.grad.numpy(), ref_v.grad.numpy())
    assert not out.is_sparse and out.to_sparse().to_dense() is out
    a = tnet.sparse.FloatTensor(tnet.tensor([[0, 1], [1, 0]]), tnet.tensor([2.0, 3.0]), tnet.Size([2, 2]))
    np.testing.assert_array_equal(tnet.spmm(a, tnet.eye(2)).numpy(), [[0.0, 2.0], [3.0, 0.0]])
