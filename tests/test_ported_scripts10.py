"""Graph networks, language models, few-shot and reinforcement learning as public repositories write
them (pytorch/examples' GCN, Kipf's pygcn with its sparse adjacency, pyGAT, nanoGPT's model and
train.py, makemore's hand-written backprop, the torchtext EmbeddingBag tutorial, bentrevett's packed
bidirectional LSTM, a PixelCNN's masked convolution, the REINFORCE and actor-critic examples, MAML's
functional learner, prototypical networks, the forward-forward example, word_language_model's
Transformer and tied GRU, the nn.Transformer translation tutorial, ikostrikov's A3C worker, PPO,
SpinningUp's SAC, a CRNN trained with CTC, d2l.ai's regressions from scratch), written
from memory in their repositories' styles and ported by their imports alone, as
test_ported_scripts.py: each runs in tnet, then in torch from tnet's initial weights (state_dict
through numpy), and the losses, and the weights summed into a few numbers, agree. Where a script draws (dropout, a sampled action, a
random batch), the compared run switches the draw off, or numpy draws, or torch replays tnet's
draws; shapes are tiny and runs 1-3 steps."""
import math

import numpy as np

from helpers import compare, imports, load, summary


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
    dense = out.to_sparse().to_dense()  # tnet's storage: the same memory, without the COO structure
    assert not out.is_sparse and out.to_sparse() is out and dense.memory.data_ptr() == out.memory.data_ptr()
    a = tnet.sparse.FloatTensor(tnet.tensor([[0, 1], [1, 0]]), tnet.tensor([2.0, 3.0]), tnet.Size([2, 2]))
    np.testing.assert_array_equal(tnet.spmm(a, tnet.eye(2)).numpy(), [[0.0, 2.0], [3.0, 0.0]])


# (d) karpathy/nanoGPT: model.py as written (GPTConfig dataclass, LayerNorm with an optional bias through
# F.layer_norm, CausalSelfAttention by F.scaled_dot_product_attention(is_causal=True) or, without it, the
# tril "bias" buffer and masked_fill, nn.ModuleDict of a ModuleList, weight tying wte.weight = lm_head.weight,
# self.apply(_init_weights) and the c_proj.weight scaled init by named_parameters, x[:, [-1], :] at
# inference, configure_optimizers' decay groups by p.dim() and the `fused` check through
# inspect.signature, crop_block_size, generate with top-k) and train.py's loop (get_batch from a uint16
# array, nullcontext or autocast, gradient accumulation, GradScaler, unscale_ and clip_grad_norm_, the
# cosine lr with warmup set per param group, estimate_loss under @torch.no_grad, the checkpoint dict
# saved and loaded with its '_orig_mod.' prefix removed)
def nanogpt(m, state=None, flash=True, tmp=None, max_iters=1, n_layer=1):
    import inspect
    from contextlib import nullcontext
    from dataclasses import dataclass
    torch, nn, F = m.torch, m.nn, m.F

    class LayerNorm(nn.Module):
        """ LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False """

        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):

        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            # key, query, value projections for all heads, but in a batch
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            # output projection
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            # regularization
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head = config.n_head
            self.n_embd = config.n_embd
            self.dropout = config.dropout
            # flash attention make GPU go brrrrr but support is only in PyTorch >= 2.0
            self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention') and flash
            if not self.flash:
                # causal mask to ensure that attention is only applied to the left in the input sequence
                self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                            .view(1, 1, config.block_size, config.block_size))

        def forward(self, x):
            B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)

            # calculate query, key, values for all heads in batch and move head forward to be the batch dim
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

            # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
            if self.flash:
                # efficient attention using Flash Attention CUDA kernels
                y = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True)
            else:
                # manual implementation of attention
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
                att = F.softmax(att, dim=-1)
                att = self.attn_dropout(att)
                y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
            y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side

            # output projection
            y = self.resid_dropout(self.c_proj(y))
            return y

    class MLP(nn.Module):

        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            x = self.c_fc(x)
            x = self.gelu(x)
            x = self.c_proj(x)
            x = self.dropout(x)
            return x

    class Block(nn.Module):

        def __init__(self, config):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    @dataclass
    class GPTConfig:
        block_size: int = 1024
        vocab_size: int = 50304  # GPT-2 vocab_size of 50257, padded up to nearest multiple of 64 for efficiency
        n_layer: int = 12
        n_head: int = 12
        n_embd: int = 768
        dropout: float = 0.0
        bias: bool = True  # True: bias in Linears and LayerNorms, like GPT-2. False: a bit better and faster

    class GPT(nn.Module):

        def __init__(self, config):
            super().__init__()
            assert config.vocab_size is not None
            assert config.block_size is not None
            self.config = config

            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            # with weight tying when using torch.compile() some warnings get generated:
            # "UserWarning: functional_call was passed multiple values for tied weights."
            # This behavior is deprecated and will be an error in future versions"
            # not 100% sure what this is, so far seems to be harmless. TODO investigate
            self.transformer.wte.weight = self.lm_head.weight  # https://paperswithcode.com/method/weight-tying

            # init all weights
            self.apply(self._init_weights)
            # apply special scaled init to the residual projections, per GPT-2 paper
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02/math.sqrt(2 * config.n_layer))

        def get_num_params(self, non_embedding=True):
            n_params = sum(p.numel() for p in self.parameters())
            if non_embedding:
                n_params -= self.transformer.wpe.weight.numel()
            return n_params

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}"
            pos = torch.arange(0, t, dtype=torch.long, device=device)  # shape (t)

            # forward the GPT model itself
            tok_emb = self.transformer.wte(idx)  # token embeddings of shape (b, t, n_embd)
            pos_emb = self.transformer.wpe(pos)  # position embeddings of shape (t, n_embd)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)

            if targets is not None:
                # if we are given some desired targets also calculate the loss
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            else:
                # inference-time mini-optimization: only forward the lm_head on the very last position
                logits = self.lm_head(x[:, [-1], :])  # note: using list [-1] to preserve the time dim
                loss = None

            return logits, loss

        def crop_block_size(self, block_size):
            # model surgery to decrease the block size if necessary
            assert block_size <= self.config.block_size
            self.config.block_size = block_size
            self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight[:block_size])
            for block in self.transformer.h:
                if hasattr(block.attn, 'bias'):
                    block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            # start with all of the candidate parameters
            param_dict = {pn: p for pn, p in self.named_parameters()}
            # filter out those that do not require grad
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            # create optim groups. Any parameters that is 2D will be weight decayed, otherwise no.
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [
                {'params': decay_params, 'weight_decay': weight_decay},
                {'params': nodecay_params, 'weight_decay': 0.0}
            ]
            num_decay_params = sum(p.numel() for p in decay_params)
            num_nodecay_params = sum(p.numel() for p in nodecay_params)
            assert num_decay_params + num_nodecay_params == self.get_num_params(non_embedding=False)
            # Create AdamW optimizer and use the fused version if it is available
            fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == 'cuda'
            extra_args = dict(fused=True) if use_fused else dict()
            optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
            return optimizer

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                # if the sequence context is growing too long we must crop it at block_size
                idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
                # forward the model to get the logits for the index in the sequence
                logits, _ = self(idx_cond)
                # pluck the logits at the final step and scale by desired temperature
                logits = logits[:, -1, :] / temperature
                # optionally crop the logits to only the top k options
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float('Inf')
                # apply softmax to convert logits to (normalized) probabilities
                probs = F.softmax(logits, dim=-1)
                # sample from the distribution
                idx_next = torch.multinomial(probs, num_samples=1)
                # append sampled index to the running sequence and continue
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    # train.py, its config shrunk (shakespeare_char's, at the widths of a test)
    gradient_accumulation_steps, batch_size, block_size = 2, 2, 8
    n_head, n_embd, dropout, bias = 2, 16, 0.0, False
    learning_rate, weight_decay, beta1, beta2, grad_clip = 1e-3, 1e-1, 0.9, 0.95, 1.0
    decay_lr, warmup_iters, lr_decay_iters, min_lr, eval_iters = True, 1, 3, 1e-4, 1
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
    dtype = 'float32'  # the compared run: exact fp32 on both sides
    torch.manual_seed(1337)
    torch.backends.cuda.matmul.allow_tf32 = True  # allow tf32 on matmul
    torch.backends.cudnn.allow_tf32 = True  # allow tf32 on cudnn
    device_type = 'cuda' if 'cuda' in device else 'cpu'  # for later use in torch.autocast
    ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
    ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # compare() runs both in fp32

    rng = np.random.default_rng(3)  # np.memmap(os.path.join(data_dir, 'train.bin'), dtype=np.uint16, mode='r')
    splits = {'train': rng.integers(0, 20, 200).astype(np.uint16), 'val': rng.integers(0, 20, 60).astype(np.uint16)}

    def get_batch(split):
        data = splits[split]
        ix = torch.tensor(rng.integers(0, len(data) - block_size, (batch_size,)))  # torch.randint: numpy draws
        x = torch.stack([torch.from_numpy((data[i:i+block_size]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i+1:i+1+block_size]).astype(np.int64)) for i in ix])
        if device_type == 'cuda':
            # pin arrays x,y, which allows us to move them to GPU asynchronously (non_blocking=True)
            x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
        else:
            x, y = x.to(device), y.to(device)
        return x, y

    iter_num, best_val_loss = 0, 1e9
    meta_vocab_size = 20
    model_args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=12,
                      bias=bias, vocab_size=None, dropout=dropout)  # start with model_args from command line
    model_args['vocab_size'] = meta_vocab_size if meta_vocab_size is not None else 50304
    gptconf = GPTConfig(**model_args)
    model = GPT(gptconf)
    if block_size < model.config.block_size:
        model.crop_block_size(block_size)
        model_args['block_size'] = block_size  # so that the checkpoint will have the right value
    init = load(m, model, state)
    assert model.transformer.wte.weight is model.lm_head.weight
    assert len(list(model.parameters())) == len(model.state_dict()) - 1 - (0 if flash else n_layer)
    model.to(device)
    scaler = torch.amp.GradScaler(device_type, enabled=(dtype == 'float16'))
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ['train', 'val']:
            losses = torch.zeros(eval_iters)
            for k in range(eval_iters):
                X, Y = get_batch(split)
                with ctx:
                    logits, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    def get_lr(it):
        # 1) linear warmup for warmup_iters steps
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        # 2) if it > lr_decay_iters, return min learning rate
        if it > lr_decay_iters:
            return min_lr
        # 3) in between, use cosine decay down to min learning rate
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        assert 0 <= decay_ratio <= 1
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # coeff ranges 0..1
        return min_lr + coeff * (learning_rate - min_lr)

    record, vals = [], []
    X, Y = get_batch('train')  # fetch the very first batch
    raw_model = model
    while True:
        lr = get_lr(iter_num) if decay_lr else learning_rate
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
        if iter_num % 2 == 0:
            losses = estimate_loss()
            record += [losses['train'].item(), losses['val'].item()]
            vals.append(record[-1])
            if losses['val'] < best_val_loss:
                best_val_loss = losses['val']
                checkpoint = {
                    'model': raw_model.state_dict(),
                    'optimizer': optimizer.state_dict(),
                    'model_args': model_args,
                    'iter_num': iter_num,
                    'best_val_loss': best_val_loss,
                }
                torch.save(checkpoint, str(tmp / 'ckpt.pt'))
        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps  # scale the loss to account for gradient accumulation
            # immediately async prefetch next batch while model is doing the forward pass on the GPU
            X, Y = get_batch('train')
            # backward pass, with gradient scaling if training in fp16
            scaler.scale(loss).backward()
        # clip the gradient
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        # step the optimizer and scaler if training in fp16
        scaler.step(optimizer)
        scaler.update()
        # flush the gradients as soon as we can, no need for this memory anymore
        optimizer.zero_grad(set_to_none=True)
        record.append(loss.item() * gradient_accumulation_steps)
        iter_num += 1
        if iter_num > max_iters:
            break

    # sample.py: resume from the checkpoint, as train.py's init_from='resume' and sample.py read it
    checkpoint = torch.load(str(tmp / 'ckpt.pt'), map_location=device)
    gptconf = GPTConfig(**checkpoint['model_args'])
    model = GPT(gptconf)
    state_dict = checkpoint['model']
    unwanted_prefix = '_orig_mod.'
    for k, v in list(state_dict.items()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    model.load_state_dict(state_dict)
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
    optimizer.load_state_dict(checkpoint['optimizer'])
    assert checkpoint['iter_num'] in (0, 2) and float(checkpoint['best_val_loss']) == min(vals)
    model.eval()
    start_ids = [1, 2, 3]
    x = (torch.tensor(start_ids, dtype=torch.long, device=device)[None, ...])
    with torch.no_grad():
        with ctx:
            y = model.generate(x, 2, temperature=0.8, top_k=1)  # top_k=1: the greedy tokens, no draw
    return init, record + y[0].tolist() + [model.get_num_params()]


def test_nanogpt(tmp_path):
    for name in ("tnet", "torch"):
        (tmp_path / name).mkdir()
    compare(lambda m, state=None: nanogpt(m, state, tmp=tmp_path / ("torch" if state else "tnet")))


def test_nanogpt_manual_attention(tmp_path):
    for name in ("tnet", "torch"):
        (tmp_path / name).mkdir()
    compare(lambda m, state=None: nanogpt(m, state, flash=False, tmp=tmp_path / ("torch" if state else "tnet"),
                                          max_iters=0, n_layer=2))


# (e) karpathy's makemore part 4 ("becoming a backprop ninja"): parameters drawn from a
# torch.Generator().manual_seed(2147483647), the MLP's forward chunked into named intermediates
# (C[Xb], a hand-written batch norm with Bessel's n-1, logprobs[range(n), Yb]), retain_grad on each,
# every gradient written by hand (zeros_like and a fancy-indexed write, one_hot of max(1).indices,
# dC[ix] += demb[k, j] in a loop) and checked by cmp against autograd, then the training loop that
# updates p.data by the hand gradients under torch.no_grad with running batch-norm statistics
def makemore_backprop(m, state=None):
    torch, F = m.torch, m.F
    words = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "harper"]  # names.txt's first
    chars = sorted(list(set(''.join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi['.'] = 0
    itos = {i: s for s, i in stoi.items()}
    vocab_size = len(itos)
    block_size = 3  # context length: how many characters do we take to predict the next one?

    def build_dataset(words):
        X, Y = [], []
        for w in words:
            context = [0] * block_size
            for ch in w + '.':
                ix = stoi[ch]
                X.append(context)
                Y.append(ix)
                context = context[1:] + [ix]  # crop and append
        X = torch.tensor(X)
        Y = torch.tensor(Y)
        return X, Y
    Xtr, Ytr = build_dataset(words)

    n_embd = 4  # the dimensionality of the character embedding vectors
    n_hidden = 16  # the number of neurons in the hidden layer of the MLP
    g = torch.Generator().manual_seed(2147483647)  # for reproducibility
    C = torch.randn((vocab_size, n_embd), generator=g)
    # Layer 1
    W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5/3)/((n_embd * block_size)**0.5)
    b1 = torch.randn(n_hidden, generator=g) * 0.1  # using b1 just for fun, it's useless because of BN
    # Layer 2
    W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.1
    b2 = torch.randn(vocab_size, generator=g) * 0.1
    # BatchNorm parameters
    bngain = torch.randn((1, n_hidden), generator=g)*0.1 + 1.0
    bnbias = torch.randn((1, n_hidden), generator=g)*0.1
    parameters = [C, W1, b1, W2, b2, bngain, bnbias]
    names = ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]
    if state is not None:  # tnet's draws, not torch's: torch starts from the same numbers
        parameters = [torch.tensor(state[k]) for k in names]
        C, W1, b1, W2, b2, bngain, bnbias = parameters
    init = {k: p.detach().numpy().copy() for k, p in zip(names, parameters)}
    assert sum(p.nelement() for p in parameters) == 4 * vocab_size + 12 * 16 + 16 + 16 * vocab_size + vocab_size + 32
    for p in parameters:
        p.requires_grad = True

    batch_size = n = 6  # a shorter variable also, for convenience
    ix = torch.tensor(np.random.default_rng(0).integers(0, Xtr.shape[0], (batch_size,)))  # randint: numpy draws
    Xb, Yb = Xtr[ix], Ytr[ix]  # batch X,Y

    # forward pass, "chunkated" into smaller steps that are possible to backward one at a time
    emb = C[Xb]  # embed the characters into vectors
    embcat = emb.view(emb.shape[0], -1)  # concatenate the vectors
    # Linear layer 1
    hprebn = embcat @ W1 + b1  # hidden layer pre-activation
    # BatchNorm layer
    bnmeani = 1/n*hprebn.sum(0, keepdim=True)
    bndiff = hprebn - bnmeani
    bndiff2 = bndiff**2
    bnvar = 1/(n-1)*(bndiff2).sum(0, keepdim=True)  # note: Bessel's correction (dividing by n-1, not n)
    bnvar_inv = (bnvar + 1e-5)**-0.5
    bnraw = bndiff * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    # Non-linearity
    h = torch.tanh(hpreact)  # hidden layer
    # Linear layer 2
    logits = h @ W2 + b2  # output layer
    # cross entropy loss (same as F.cross_entropy(logits, Yb))
    logit_maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - logit_maxes  # subtract max for numerical stability
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdims=True)
    counts_sum_inv = counts_sum**-1  # if I use (1.0 / counts_sum) instead then I can't get backprop to be bit exact...
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), Yb].mean()

    # PyTorch backward pass
    for p in parameters:
        p.grad = None
    for t in [logprobs, probs, counts, counts_sum, counts_sum_inv,  # afaik there is no cleaner way
              norm_logits, logit_maxes, logits, h, hpreact, bnraw,
              bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani,
              embcat, emb]:
        t.retain_grad()
    loss.backward()
    record = [loss.item()]

    def cmp(s, dt, t):
        ex = torch.all(dt == t.grad).item()
        # atol 1e-6, not allclose's 1e-8: on the CPU tnet's hand gradients are autograd's bit for bit, but
        # PyTorch's CPU run is 3e-8 off on W2 and logit_maxes (its GEMMs sum in another order)
        app = torch.allclose(dt, t.grad, atol=1e-6)
        maxdiff = (dt - t.grad).abs().max().item()
        assert app, f'{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff: {maxdiff}'

    # Exercise 1: backprop through the whole thing manually
    dlogprobs = torch.zeros_like(logprobs)
    dlogprobs[range(n), Yb] = -1.0/n
    dprobs = (1.0 / probs) * dlogprobs
    dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
    dcounts = counts_sum_inv * dprobs
    dcounts_sum = (-counts_sum**-2) * dcounts_sum_inv
    dcounts += torch.ones_like(counts) * dcounts_sum
    dnorm_logits = counts * dcounts
    dlogits = dnorm_logits.clone()
    dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
    dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - h**2) * dh
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dbnraw = bngain * dhpreact
    dbnbias = dhpreact.sum(0, keepdim=True)
    dbndiff = bnvar_inv * dbnraw
    dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
    dbnvar = (-0.5*(bnvar + 1e-5)**-1.5) * dbnvar_inv
    dbndiff2 = (1.0/(n-1))*torch.ones_like(bndiff2) * dbnvar
    dbndiff += (2*bndiff) * dbndiff2
    dhprebn = dbndiff.clone()
    dbnmeani = (-dbndiff).sum(0)
    dhprebn += 1.0/n * (torch.ones_like(hprebn) * dbnmeani)
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    demb = dembcat.view(emb.shape)
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            ix = Xb[k, j]
            dC[ix] += demb[k, j]

    for s, dt, t in [('logprobs', dlogprobs, logprobs), ('probs', dprobs, probs), ('counts_sum_inv', dcounts_sum_inv, counts_sum_inv),
                     ('counts_sum', dcounts_sum, counts_sum), ('counts', dcounts, counts), ('norm_logits', dnorm_logits, norm_logits),
                     ('logit_maxes', dlogit_maxes, logit_maxes), ('logits', dlogits, logits), ('h', dh, h), ('W2', dW2, W2),
                     ('b2', db2, b2), ('hpreact', dhpreact, hpreact), ('bngain', dbngain, bngain), ('bnbias', dbnbias, bnbias),
                     ('bnraw', dbnraw, bnraw), ('bnvar_inv', dbnvar_inv, bnvar_inv), ('bnvar', dbnvar, bnvar),
                     ('bndiff2', dbndiff2, bndiff2), ('bndiff', dbndiff, bndiff), ('bnmeani', dbnmeani, bnmeani),
                     ('hprebn', dhprebn, hprebn), ('embcat', dembcat, embcat), ('W1', dW1, W1), ('b1', db1, b1),
                     ('emb', demb, emb), ('C', dC, C)]:
        cmp(s, dt, t)

    # Exercise 2: backprop through cross_entropy but all in one go
    loss_fast = F.cross_entropy(logits, Yb)
    assert abs(loss_fast.item() - loss.item()) < 1e-5
    dlogits = F.softmax(logits, 1)
    dlogits[range(n), Yb] -= 1
    dlogits /= n
    cmp('logits', dlogits, logits)
    # Exercise 3: backprop through batchnorm but all in one go
    dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0) - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))
    cmp('hprebn', dhprebn, hprebn)

    # Exercise 4: putting it all together, the training loop with the manual backward pass
    bnmean_running = torch.zeros((1, n_hidden))
    bnstd_running = torch.ones((1, n_hidden))
    batches = np.random.default_rng(1).integers(0, Xtr.shape[0], (3, batch_size))
    with torch.no_grad():
        for i in range(3):
            Xb, Yb = Xtr[batches[i]], Ytr[batches[i]]
            emb = C[Xb]
            embcat = emb.view(emb.shape[0], -1)
            hprebn = embcat @ W1 + b1
            bnmean = hprebn.mean(0, keepdim=True)
            bnvar = hprebn.var(0, keepdim=True, unbiased=True)
            bnvar_inv = (bnvar + 1e-5)**-0.5
            bnraw = (hprebn - bnmean) * bnvar_inv
            hpreact = bngain * bnraw + bnbias
            h = torch.tanh(hpreact)
            logits = h @ W2 + b2
            loss = F.cross_entropy(logits, Yb)
            for p in parameters:
                p.grad = None
            dlogits = F.softmax(logits, 1)
            dlogits[range(n), Yb] -= 1
            dlogits /= n
            dh = dlogits @ W2.T
            dW2 = h.T @ dlogits
            db2 = dlogits.sum(0)
            dhpreact = (1.0 - h**2) * dh
            dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
            dbnbias = dhpreact.sum(0, keepdim=True)
            dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0) - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))
            dembcat = dhprebn @ W1.T
            dW1 = embcat.T @ dhprebn
            db1 = dhprebn.sum(0)
            demb = dembcat.view(emb.shape)
            dC = torch.zeros_like(C)
            for k in range(Xb.shape[0]):
                for j in range(Xb.shape[1]):
                    ix = Xb[k, j]
                    dC[ix] += demb[k, j]
            grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]
            lr = 0.1 if i < 100000 else 0.01  # step learning rate decay
            for p, grad in zip(parameters, grads):
                p.data += -lr * grad
            bnmean_running = 0.999 * bnmean_running + 0.001 * bnmean
            bnstd_running = 0.999 * bnstd_running + 0.001 * bnvar.sqrt()  # makemore's bnvar: the same idiom
            record.append(loss.item())
    return init, record + summary(parameters) + summary([bnmean_running, bnstd_running])


def test_makemore_backprop():
    compare(makemore_backprop)


NEWS = [(3, "wall st bears claw back into the black"), (4, "new chip runs faster than the old chip"),
        (2, "the team wins the cup again"), (1, "talks on trade resume in the capital"),
        (3, "stocks rise as oil prices fall"), (4, "a new phone with a faster chip"),
        (2, "coach says the team is ready"), (1, "leaders meet to talk on the trade deal")]


# (f) the torchtext text classification tutorial (AG_NEWS): nn.EmbeddingBag(mean) over one flat
# token tensor with offsets made by collate_batch's torch.tensor(offsets[:-1]).cumsum(dim=0), weights
# set by .data.uniform_ and .data.zero_(), DataLoader(collate_fn=...), clip_grad_norm_(0.1), SGD at lr 5
# with StepLR stepped when the validation accuracy stalls, and predict() under no_grad
def text_classification(m, state=None):
    torch, nn = m.torch, m.nn
    DataLoader = m.data.DataLoader
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def tokenizer(line):  # get_tokenizer("basic_english")
        return line.lower().split()
    vocab = {"<unk>": 0}
    for _, text in NEWS:
        for token in tokenizer(text):
            vocab.setdefault(token, len(vocab))

    def text_pipeline(x):
        return [vocab.get(token, 0) for token in tokenizer(x)]

    def label_pipeline(x):
        return int(x) - 1

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in batch:
            label_list.append(label_pipeline(_label))
            processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = torch.cat(text_list)
        return label_list.to(device), text_list.to(device), offsets.to(device)

    class TextClassificationModel(nn.Module):
        def __init__(self, vocab_size, embed_dim, num_class):
            super(TextClassificationModel, self).__init__()
            self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
            self.fc = nn.Linear(embed_dim, num_class)
            self.init_weights()

        def init_weights(self):
            initrange = 0.5
            self.embedding.weight.data.uniform_(-initrange, initrange)
            self.fc.weight.data.uniform_(-initrange, initrange)
            self.fc.bias.data.zero_()

        def forward(self, text, offsets):
            embedded = self.embedding(text, offsets)
            return self.fc(embedded)

    num_class = len(set([label for (label, text) in NEWS]))
    vocab_size = len(vocab)
    emsize = 8
    torch.manual_seed(0)
    model = TextClassificationModel(vocab_size, emsize, num_class).to(device)
    init = load(m, model, state)
    record = []

    def train(dataloader):
        model.train()
        total_acc, total_count = 0, 0
        for idx, (label, text, offsets) in enumerate(dataloader):
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
            record.append(loss.item())

    def evaluate(dataloader):
        model.eval()
        total_acc, total_count = 0, 0
        with torch.no_grad():
            for idx, (label, text, offsets) in enumerate(dataloader):
                predicted_label = model(text, offsets)
                loss = criterion(predicted_label, label)
                total_acc += (predicted_label.argmax(1) == label).sum().item()
                total_count += label.size(0)
                record.append(loss.item())
        return total_acc / total_count

    EPOCHS, LR, BATCH_SIZE = 2, 5, 3  # the tutorial's 10, 5, 64
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    total_accu = None
    train_dataloader = DataLoader(NEWS[:6], batch_size=BATCH_SIZE, shuffle=False, collate_fn=collate_batch)
    valid_dataloader = DataLoader(NEWS[6:], batch_size=BATCH_SIZE, shuffle=False, collate_fn=collate_batch)
    for epoch in range(1, EPOCHS + 1):
        train(train_dataloader)
        accu_val = evaluate(valid_dataloader)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
    assert optimizer.param_groups[0]["lr"] in (5, 0.5)

    def predict(text, text_pipeline):
        with torch.no_grad():
            text = torch.tensor(text_pipeline(text))
            output = model(text, torch.tensor([0]))
            return output.argmax(1).item() + 1
    record.append(predict("the new chip wins the trade cup", text_pipeline))
    return init, record + summary(model.parameters())


def test_text_classification():
    compare(text_classification)


# (g) bentrevett/pytorch-sentiment-analysis' upgraded model: an Embedding with padding_idx whose rows
# are copied from "pretrained" vectors by .data.copy_ and zeroed by .data[UNK_IDX] = torch.zeros(...), a
# two-layer bidirectional LSTM over pack_padded_sequence(embedded, text_lengths.to('cpu')) and
# pad_packed_sequence, the last layer's two directions' hidden states concatenated, BCEWithLogitsLoss,
# binary_accuracy by torch.round(torch.sigmoid(preds)), Adam, count_parameters and epoch_time
def sentiment_lstm(m, state=None, enforce_sorted=True, epochs=1):
    import time
    torch, nn, optim = m.torch, m.nn, m.optim

    class RNN(nn.Module):
        def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, n_layers,
                     bidirectional, dropout, pad_idx):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
            self.rnn = nn.LSTM(embedding_dim,
                               hidden_dim,
                               num_layers=n_layers,
                               bidirectional=bidirectional,
                               dropout=dropout)
            self.fc = nn.Linear(hidden_dim * 2, output_dim)
            self.dropout = nn.Dropout(dropout)

        def forward(self, text, text_lengths):
            # text = [sent len, batch size]
            embedded = self.dropout(self.embedding(text))
            # embedded = [sent len, batch size, emb dim]
            # pack sequence; lengths need to be on CPU!
            packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, text_lengths.to('cpu'),
                                                                enforce_sorted=enforce_sorted)
            packed_output, (hidden, cell) = self.rnn(packed_embedded)
            # unpack sequence
            output, output_lengths = nn.utils.rnn.pad_packed_sequence(packed_output)
            # output = [sent len, batch size, hid dim * num directions]
            # hidden = [num layers * num directions, batch size, hid dim]
            # concat the final forward (hidden[-2,:,:]) and backward (hidden[-1,:,:]) hidden layers
            hidden = self.dropout(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
            # hidden = [batch size, hid dim * num directions]
            return self.fc(hidden)

    def count_parameters(model):
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    def binary_accuracy(preds, y):
        """Returns accuracy per batch, i.e. if you get 8/10 right, this returns 0.8, NOT 8"""
        # round predictions to the closest integer
        rounded_preds = torch.round(torch.sigmoid(preds))
        correct = (rounded_preds == y).float()  # convert into float for division
        acc = correct.sum() / len(correct)
        return acc

    def epoch_time(start_time, end_time):
        elapsed_time = end_time - start_time
        elapsed_mins = int(elapsed_time / 60)
        elapsed_secs = int(elapsed_time - (elapsed_mins * 60))
        return elapsed_mins, elapsed_secs

    reviews = [("a great cast", 1.0), ("boring and long", 0.0), ("great", 1.0), ("not good", 0.0),
               ("great fun", 1.0), ("too long", 0.0)]
    itos = ["<unk>", "<pad>"] + sorted({w for text, _ in reviews for w in text.split()})
    stoi = {w: i for i, w in enumerate(itos)}
    UNK_IDX, PAD_IDX = stoi["<unk>"], stoi["<pad>"]
    INPUT_DIM, EMBEDDING_DIM, HIDDEN_DIM, OUTPUT_DIM, N_LAYERS, BIDIRECTIONAL = len(itos), 6, 5, 1, 2, True
    DROPOUT = 0.0  # the notebook's 0.5: a draw

    def batches():  # BucketIterator(sort_within_batch=True): [sent len, batch size], longest first
        for start in (0, 3)[:2 if enforce_sorted else 1]:
            chunk = sorted(reviews[start:start + 3], key=lambda r: -len(r[0].split()))
            if not enforce_sorted:
                chunk = chunk[::-1]
            lengths = [len(t.split()) for t, _ in chunk]
            text = [[stoi[w] for w in t.split()] + [PAD_IDX] * (max(lengths) - n) for (t, _), n in zip(chunk, lengths)]
            yield torch.tensor(text).t(), torch.tensor(lengths), torch.tensor([label for _, label in chunk])

    torch.manual_seed(0)
    model = RNN(INPUT_DIM, EMBEDDING_DIM, HIDDEN_DIM, OUTPUT_DIM, N_LAYERS, BIDIRECTIONAL, DROPOUT, PAD_IDX)
    init = load(m, model, state)
    assert count_parameters(model) == sum(v.size for v in init.values())
    pretrained_embeddings = torch.tensor(np.random.default_rng(4).standard_normal((INPUT_DIM, EMBEDDING_DIM)).astype(np.float32))
    model.embedding.weight.data.copy_(pretrained_embeddings)
    model.embedding.weight.data[UNK_IDX] = torch.zeros(EMBEDDING_DIM)
    model.embedding.weight.data[PAD_IDX] = torch.zeros(EMBEDDING_DIM)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.BCEWithLogitsLoss()
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    model = model.to(device)
    criterion = criterion.to(device)
    record = []
    for epoch in range(epochs):
        start_time = time.time()
        model.train()
        for text, text_lengths, label in batches():
            optimizer.zero_grad()
            predictions = model(text, text_lengths).squeeze(1)
            loss = criterion(predictions, label)
            acc = binary_accuracy(predictions, label)
            loss.backward()
            optimizer.step()
            record += [loss.item(), acc.item()]
        end_time = time.time()
        epoch_mins, epoch_secs = epoch_time(start_time, end_time)
    assert model.embedding.weight.data[PAD_IDX].abs().sum().item() == 0  # padding_idx's row gets no gradient
    return init, record + summary(model.parameters())


def test_sentiment_lstm():
    compare(sentiment_lstm)


def test_sentiment_lstm_unsorted_batch():
    compare(sentiment_lstm, enforce_sorted=False)


# (h) a PixelCNN on MNIST (jzbontar/pixelcnn-pytorch): MaskedConv2d subclasses nn.Conv2d, keeps its mask
# as a buffer cloned from weight.data and written by fill_ and slices (mask_type == 'B' added to an
# index), multiplies weight.data in place by it in forward before super().forward; 256-way
# cross_entropy over [N, 256, H, W] logits against [N, H, W] targets made by (input.data[:, 0] * 255).long();
# sampling pixel by pixel by torch.multinomial of F.softmax over the logits at (i, j), under volatile/no_grad
def pixelcnn(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    Variable = torch.autograd.Variable

    class MaskedConv2d(nn.Conv2d):
        def __init__(self, mask_type, *args, **kwargs):
            super(MaskedConv2d, self).__init__(*args, **kwargs)
            assert mask_type in {'A', 'B'}
            self.register_buffer('mask', self.weight.data.clone())
            _, _, kH, kW = self.weight.size()
            self.mask.fill_(1)
            self.mask[:, :, kH // 2, kW // 2 + (mask_type == 'B'):] = 0
            self.mask[:, :, kH // 2 + 1:] = 0

        def forward(self, x):
            self.weight.data *= self.mask
            return super(MaskedConv2d, self).forward(x)

    fm = 4  # the repository's 64
    torch.manual_seed(0)
    net = nn.Sequential(
        MaskedConv2d('A', 1,  fm, 7, 1, 3, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        MaskedConv2d('B', fm, fm, 7, 1, 3, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        MaskedConv2d('B', fm, fm, 7, 1, 3, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        nn.Conv2d(fm, 256, 1))
    init = load(m, net, state)
    assert net[0].mask[0, 0].sum().item() == 24 and net[3].mask[0, 0].sum().item() == 25
    optimizer = optim.Adam(net.parameters())
    rng = np.random.default_rng(6)
    record = []
    for _ in range(2):  # for input, _ in tr:
        input = torch.tensor(rng.integers(0, 256, (2, 1, 6, 6)).astype(np.float32) / 255.)
        input = Variable(input)
        target = Variable((input.data[:, 0] * 255).long())
        loss = F.cross_entropy(net(input), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record.append(loss.item())
    # after a step the weights under the mask moved, and the next forward zeroes them again
    net.train(False)
    with torch.no_grad():
        record.append(F.cross_entropy(net(input), target).item())
    assert (net[0].weight.data * (1 - net[0].mask)).abs().sum().item() == 0

    sample = torch.Tensor(2, 1, 6, 6)
    sample.fill_(0)
    with torch.no_grad():
        for i in range(2):  # the repository's range(28) by range(28)
            for j in range(3):
                out = net(Variable(sample))
                probs = F.softmax(out[:, :, i, j], dim=1).data
                sample[:, :, i, j] = torch.multinomial(probs, 1).float() / 255.
    drawn = sample[:, :, :2, :3].numpy() * 255.
    assert np.allclose(drawn, np.round(drawn), atol=1e-3) and drawn.min() >= 0 and drawn.max() <= 255
    return init, record + summary(net.parameters())


def test_pixelcnn():
    compare(pixelcnn)


class CartPole:
    """gym's CartPole interface (reset(seed=) -> (state, info), step(a) -> 5-tuple) over a small linear
    system, so that an episode ends after a few steps."""

    def __init__(self):
        self.rng = np.random.default_rng(9)

    def reset(self, seed=None):
        self.s, self.t = self.rng.uniform(-0.05, 0.05, 4), 0
        return self.s.astype(np.float64), {}

    def step(self, action):
        self.s = 0.95 * self.s + np.array([0.2, -0.1, 0.15, 0.3]) * (2 * action - 1)
        self.t += 1
        return self.s.astype(np.float64), 1.0, bool(abs(self.s[3]) > 0.5), self.t >= 5, {}


# (i) pytorch/examples' reinforcement_learning: reinforce.py (a Policy whose forward ends in
# F.softmax(dim=1), saved_log_probs and rewards lists on the module, Categorical(probs).sample() and
# m.log_prob(action), returns accumulated backwards into a deque and normalised by
# (returns - returns.mean()) / (returns.std() + eps), eps = np.finfo(np.float32).eps.item(),
# torch.cat(policy_loss).sum(), del policy.rewards[:]) and actor_critic.py (a two-headed Policy,
# SavedAction namedtuples, smooth_l1_loss(value, torch.tensor([R])), torch.stack(...).sum()). tnet's run
# draws the actions; torch's replays them (`actions`)
def reinforce(m, state=None, actions=None, critic=False):
    from collections import deque, namedtuple
    from itertools import count
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    Categorical = torch.distributions.Categorical
    gamma = 0.99
    SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])

    class Policy(nn.Module):
        def __init__(self):
            super(Policy, self).__init__()
            self.affine1 = nn.Linear(4, 16)  # the example's 128
            self.dropout = nn.Dropout(p=0.0)  # the example's 0.6: a draw
            self.affine2 = nn.Linear(16, 2)

            self.saved_log_probs = []
            self.rewards = []

        def forward(self, x):
            x = self.affine1(x)
            x = self.dropout(x)
            x = F.relu(x)
            action_scores = self.affine2(x)
            return F.softmax(action_scores, dim=1)

    class ActorCriticPolicy(nn.Module):
        """implements both actor and critic in one model"""
        def __init__(self):
            super(ActorCriticPolicy, self).__init__()
            self.affine1 = nn.Linear(4, 16)
            # actor's layer
            self.action_head = nn.Linear(16, 2)
            # critic's layer
            self.value_head = nn.Linear(16, 1)
            # action & reward buffer
            self.saved_actions = []
            self.rewards = []

        def forward(self, x):
            x = F.relu(self.affine1(x))
            # actor: choses action to take from state s_t by returning probability of each action
            action_prob = F.softmax(self.action_head(x), dim=-1)
            # critic: evaluates being in state s_t
            state_values = self.value_head(x)
            return action_prob, state_values

    env = CartPole()
    torch.manual_seed(543)
    policy = ActorCriticPolicy() if critic else Policy()
    init = load(m, policy, state)
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()
    replay = iter(actions) if state is not None else None

    def draw(m_):
        """m_.sample(): drawn in tnet's run, replayed in torch's (probs [1, 2] draw shape [1], probs [2] shape [])."""
        if replay is None:
            action = m_.sample()
            actions.append(action.tolist())
            return action
        return torch.tensor(next(replay))

    def select_action(state):
        if critic:
            state = torch.from_numpy(state).float()
            probs, state_value = policy(state)
            m_ = Categorical(probs)
            action = draw(m_)
            policy.saved_actions.append(SavedAction(m_.log_prob(action), state_value))
            return action.item()
        state = torch.from_numpy(state).float().unsqueeze(0)
        probs = policy(state)
        m_ = Categorical(probs)
        action = draw(m_)
        policy.saved_log_probs.append(m_.log_prob(action))
        return action.item()

    def finish_episode():
        R = 0
        policy_loss = []
        returns = deque()
        for r in policy.rewards[::-1]:
            R = r + gamma * R
            returns.appendleft(R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for log_prob, R in zip(policy.saved_log_probs, returns):
            policy_loss.append(-log_prob * R)
        optimizer.zero_grad()
        policy_loss = torch.cat(policy_loss).sum()
        policy_loss.backward()
        optimizer.step()
        del policy.rewards[:]
        del policy.saved_log_probs[:]
        return policy_loss.item()

    def finish_episode_actor_critic():
        R = 0
        saved_actions = policy.saved_actions
        policy_losses = []  # list to save actor (policy) loss
        value_losses = []  # list to save critic (value) loss
        returns = []  # list to save the true values
        # calculate the true value using rewards returned from the environment
        for r in policy.rewards[::-1]:
            # calculate the discounted value
            R = r + gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for (log_prob, value), R in zip(saved_actions, returns):
            advantage = R - value.item()
            # calculate actor (policy) loss
            policy_losses.append(-log_prob * advantage)
            # calculate critic (value) loss using L1 smooth loss
            value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
        optimizer.zero_grad()
        # sum up all the values of policy_losses and value_losses
        loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
        loss.backward()
        optimizer.step()
        del policy.rewards[:]
        del policy.saved_actions[:]
        return loss.item()

    running_reward = 10
    record = []
    for i_episode in count(1):
        state, _ = env.reset(seed=543)
        ep_reward = 0
        for t in range(1, 10000):  # Don't infinite loop while learning
            action = select_action(state)
            state, reward, done, _, _ = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if done or t >= 5:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        record.append(finish_episode_actor_critic() if critic else finish_episode())
        if i_episode == 3:  # the example's `running_reward > env.spec.reward_threshold`
            break
    return init, record + summary(policy.parameters())


def test_reinforce():
    compare(reinforce, actions=[])


def test_actor_critic():
    compare(reinforce, actions=[], critic=True)


# (j) dragen1860/MAML-Pytorch: the Learner's weights in an nn.ParameterList built from a config list,
# its BatchNorm running statistics as nn.Parameter(requires_grad=False) in a second ParameterList,
# forward(x, vars=None, bn_training=True) through F.conv2d, F.batch_norm, F.max_pool2d and F.linear on
# whichever weights it is given, parameters() overridden to return the ParameterList, zero_grad(vars)
# under no_grad; Meta's inner loop by torch.autograd.grad and fast weights from
# map(lambda p: p[1] - lr * p[0], zip(grad, weights)), the query losses summed over tasks and Adam
# on the meta loss; finetunning() on a deepcopy of the net
def maml(m, state=None):
    from copy import deepcopy
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class Learner(nn.Module):
        def __init__(self, config, imgc, imgsz):
            super(Learner, self).__init__()
            self.config = config
            # this dict contains all tensors needed to be optimized
            self.vars = nn.ParameterList()
            # running_mean and running_var
            self.vars_bn = nn.ParameterList()
            for i, (name, param) in enumerate(self.config):
                if name == 'conv2d':
                    # [ch_out, ch_in, kernelsz, kernelsz]
                    w = nn.Parameter(torch.ones(*param[:4]))
                    # gain=1 according to cbfin's implementation
                    torch.nn.init.kaiming_normal_(w)
                    self.vars.append(w)
                    # [ch_out]
                    self.vars.append(nn.Parameter(torch.zeros(param[0])))
                elif name == 'linear':
                    # [ch_out, ch_in]
                    w = nn.Parameter(torch.ones(*param))
                    # gain=1 according to cbfinn's implementation
                    torch.nn.init.kaiming_normal_(w)
                    self.vars.append(w)
                    # [ch_out]
                    self.vars.append(nn.Parameter(torch.zeros(param[0])))
                elif name == 'bn':
                    # [ch_out]
                    w = nn.Parameter(torch.ones(param[0]))
                    self.vars.append(w)
                    # [ch_out]
                    self.vars.append(nn.Parameter(torch.zeros(param[0])))
                    # must set requires_grad=False
                    running_mean = nn.Parameter(torch.zeros(param[0]), requires_grad=False)
                    running_var = nn.Parameter(torch.ones(param[0]), requires_grad=False)
                    self.vars_bn.extend([running_mean, running_var])
                elif name in ['tanh', 'relu', 'upsample', 'avg_pool2d', 'max_pool2d',
                              'flatten', 'reshape', 'leakyrelu', 'sigmoid']:
                    continue
                else:
                    raise NotImplementedError

        def extra_repr(self):
            info = ''
            for name, param in self.config:
                if name == 'conv2d':
                    tmp = 'conv2d:(ch_in:%d, ch_out:%d, k:%dx%d, stride:%d, padding:%d)' \
                          % (param[1], param[0], param[2], param[3], param[4], param[5],)
                    info += tmp + '\n'
                elif name == 'linear':
                    tmp = 'linear:(in:%d, out:%d)' % (param[1], param[0])
                    info += tmp + '\n'
                elif name in ['flatten', 'tanh', 'relu', 'upsample', 'reshape', 'sigmoid', 'use_logits', 'bn',
                              'max_pool2d']:
                    tmp = name + ':' + str(tuple(param))
                    info += tmp + '\n'
                else:
                    raise NotImplementedError
            return info

        def forward(self, x, vars=None, bn_training=True):
            """
            This function can be called by finetunning, however, in finetunning, we dont wish to update
            running_mean/running_var. Thought weights/bias of bn is updated, it has been separated by fast_weights.
            Indeed, to not update running_mean/running_var, we need set update_bn_statistics=False
            but weight/bias will be updated and not dirty initial theta parameters via fast_weiths.
            """
            if vars is None:
                vars = self.vars
            idx = 0
            bn_idx = 0
            for name, param in self.config:
                if name == 'conv2d':
                    w, b = vars[idx], vars[idx + 1]
                    # remember to keep synchrozied of forward_encoder and forward_decoder!
                    x = F.conv2d(x, w, b, stride=param[4], padding=param[5])
                    idx += 2
                elif name == 'linear':
                    w, b = vars[idx], vars[idx + 1]
                    x = F.linear(x, w, b)
                    idx += 2
                elif name == 'bn':
                    w, b = vars[idx], vars[idx + 1]
                    running_mean, running_var = self.vars_bn[bn_idx], self.vars_bn[bn_idx+1]
                    x = F.batch_norm(x, running_mean, running_var, weight=w, bias=b, training=bn_training)
                    idx += 2
                    bn_idx += 2
                elif name == 'flatten':
                    x = x.view(x.size(0), -1)
                elif name == 'relu':
                    x = F.relu(x, inplace=param[0])
                elif name == 'max_pool2d':
                    x = F.max_pool2d(x, param[0], param[1], param[2])
                else:
                    raise NotImplementedError
            # make sure variable is used properly
            assert idx == len(vars)
            assert bn_idx == len(self.vars_bn)
            return x

        def zero_grad(self, vars=None):
            with torch.no_grad():
                if vars is None:
                    for p in self.vars:
                        if p.grad is not None:
                            p.grad.zero_()
                else:
                    for p in vars:
                        if p.grad is not None:
                            p.grad.zero_()

        def parameters(self):
            """override this function since initial parameters will return with a generator."""
            return self.vars

    class Meta(nn.Module):
        """Meta Learner"""
        def __init__(self, args, config):
            super(Meta, self).__init__()
            self.update_lr = args.update_lr
            self.meta_lr = args.meta_lr
            self.n_way = args.n_way
            self.k_spt = args.k_spt
            self.k_qry = args.k_qry
            self.task_num = args.task_num
            self.update_step = args.update_step
            self.update_step_test = args.update_step_test
            self.net = Learner(config, args.imgc, args.imgsz)
            self.meta_optim = optim.Adam(self.net.parameters(), lr=self.meta_lr)

        def forward(self, x_spt, y_spt, x_qry, y_qry):
            task_num, setsz, c_, h, w = x_spt.size()
            querysz = x_qry.size(1)
            losses_q = [0 for _ in range(self.update_step + 1)]  # losses_q[i] is the loss on step i
            corrects = [0 for _ in range(self.update_step + 1)]
            for i in range(task_num):
                # 1. run the i-th task and compute loss for k=0
                logits = self.net(x_spt[i], vars=None, bn_training=True)
                loss = F.cross_entropy(logits, y_spt[i])
                grad = torch.autograd.grad(loss, self.net.parameters())
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, self.net.parameters())))
                # this is the loss and accuracy before first update
                with torch.no_grad():
                    # [setsz, nway]
                    logits_q = self.net(x_qry[i], self.net.parameters(), bn_training=True)
                    loss_q = F.cross_entropy(logits_q, y_qry[i])
                    losses_q[0] += loss_q
                    pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                    correct = torch.eq(pred_q, y_qry[i]).sum().item()
                    corrects[0] = corrects[0] + correct
                # this is the loss and accuracy after the first update
                with torch.no_grad():
                    # [setsz, nway]
                    logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
                    loss_q = F.cross_entropy(logits_q, y_qry[i])
                    losses_q[1] += loss_q
                    # [setsz]
                    pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                    correct = torch.eq(pred_q, y_qry[i]).sum().item()
                    corrects[1] = corrects[1] + correct
                for k in range(1, self.update_step):
                    # 1. run the i-th task and compute loss for k=1~K-1
                    logits = self.net(x_spt[i], fast_weights, bn_training=True)
                    loss = F.cross_entropy(logits, y_spt[i])
                    # 2. compute grad on theta_pi
                    grad = torch.autograd.grad(loss, fast_weights)
                    # 3. theta_pi = theta_pi - train_lr * grad
                    fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
                    logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
                    # loss_q will be overwritten and just keep the loss_q on last update step.
                    loss_q = F.cross_entropy(logits_q, y_qry[i])
                    losses_q[k + 1] += loss_q
                    with torch.no_grad():
                        pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                        correct = torch.eq(pred_q, y_qry[i]).sum().item()  # convert to numpy
                        corrects[k + 1] = corrects[k + 1] + correct
            # end of all tasks
            # sum over all losses on query set across all tasks
            loss_q = losses_q[-1] / task_num
            # optimize theta parameters
            self.meta_optim.zero_grad()
            loss_q.backward()
            self.meta_optim.step()
            accs = np.array(corrects) / (querysz * task_num)
            return accs, loss_q.item()

        def finetunning(self, x_spt, y_spt, x_qry, y_qry):
            assert len(x_spt.shape) == 4
            querysz = x_qry.size(0)
            corrects = [0 for _ in range(self.update_step_test + 1)]
            # in order to not ruin the state of running_mean/variance and bn_weight/bias
            # we finetunning on the copied model instead of self.net
            net = deepcopy(self.net)
            # 1. run the i-th task and compute loss for k=0
            logits = net(x_spt)
            loss = F.cross_entropy(logits, y_spt)
            grad = torch.autograd.grad(loss, net.parameters())
            fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, net.parameters())))
            for k in range(1, self.update_step_test):
                logits = net(x_spt, fast_weights, bn_training=True)
                loss = F.cross_entropy(logits, y_spt)
                grad = torch.autograd.grad(loss, fast_weights)
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
                logits_q = net(x_qry, fast_weights, bn_training=True)
                with torch.no_grad():
                    pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                    correct = torch.eq(pred_q, y_qry).sum().item()
                    corrects[k + 1] = corrects[k + 1] + correct
            del net
            accs = np.array(corrects) / querysz
            return accs, loss.item()

    class Args:  # argparse's namespace, at the widths of a test
        n_way, k_spt, k_qry, imgsz, imgc, task_num = 3, 1, 2, 8, 1, 2
        meta_lr, update_lr, update_step, update_step_test = 1e-3, 0.4, 2, 3
    args = Args()
    config = [
        ('conv2d', [4, args.imgc, 3, 3, 1, 0]),
        ('relu', [True]),
        ('bn', [4]),
        ('max_pool2d', [2, 2, 0]),
        ('flatten', []),
        ('linear', [args.n_way, 4 * 3 * 3])
    ]
    torch.manual_seed(222)
    maml = Meta(args, config)
    init = load(m, maml, state)
    assert 'conv2d:(ch_in:1, ch_out:4, k:3x3, stride:1, padding:0)' in repr(maml.net)
    tmp = filter(lambda x: x.requires_grad, maml.parameters())
    num = sum(map(lambda x: np.prod(x.shape), tmp))
    assert num == 4 * 9 + 4 + 4 + 4 + 3 * 36 + 3
    rng = np.random.default_rng(7)
    record = []
    for step in range(2):
        x_spt = torch.tensor(rng.standard_normal((args.task_num, args.n_way * args.k_spt, 1, 8, 8)).astype(np.float32))
        y_spt = torch.tensor(np.tile(np.arange(args.n_way), (args.task_num, args.k_spt)))
        x_qry = torch.tensor(rng.standard_normal((args.task_num, args.n_way * args.k_qry, 1, 8, 8)).astype(np.float32))
        y_qry = torch.tensor(np.tile(np.arange(args.n_way), (args.task_num, args.k_qry)))
        accs, loss = maml(x_spt, y_spt, x_qry, y_qry)
        record += [loss] + list(accs)
    accs, loss = maml.finetunning(x_spt[0], y_spt[0], x_qry[0], y_qry[0])
    record.append(loss)
    return init, record + summary(maml.net.parameters()) + summary(maml.net.vars_bn)


def test_maml():
    compare(maml)


# (k) orobix/Prototypical-Networks-for-Few-shot-Learning: ProtoNet's conv_block encoder, a batch
# sampler handed to DataLoader(batch_sampler=), prototypical_loss on the host (.to('cpu')) with
# torch.unique of the targets, target.eq(c).nonzero()[:n_support].squeeze(1), prototypes by
# torch.stack of means, euclidean_dist by unsqueeze/expand and torch.pow(x - y, 2).sum(2),
# log_softmax(-dists).view(n_classes, n_query, -1) gathered at arange-made targets, y_hat by max(2);
# Adam with StepLR, and the best model's state_dict kept by torch.save
def protonet(m, state=None, tmp=None):
    torch, nn, F = m.torch, m.nn, m.F
    DataLoader = m.data.DataLoader

    def conv_block(in_channels, out_channels):
        """returns a block conv-bn-relu-pool"""
        return nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.MaxPool2d(2)
        )

    class ProtoNet(nn.Module):
        """Model as described in the reference paper, source:
        https://github.com/jakesnell/prototypical-networks/blob/f0c48808e496989d01db59f86d4449d7aee9ab0c/protonets/models/few_shot.py#L62-L84
        """
        def __init__(self, x_dim=1, hid_dim=64, z_dim=64):
            super(ProtoNet, self).__init__()
            self.encoder = nn.Sequential(
                conv_block(x_dim, hid_dim),
                conv_block(hid_dim, z_dim),
            )

        def forward(self, x):
            x = self.encoder(x)
            return x.view(x.size(0), -1)

    def euclidean_dist(x, y):
        """Compute euclidean distance between two tensors"""
        # x: N x D
        # y: M x D
        n = x.size(0)
        m_ = y.size(0)
        d = x.size(1)
        if d != y.size(1):
            raise Exception
        x = x.unsqueeze(1).expand(n, m_, d)
        y = y.unsqueeze(0).expand(n, m_, d)
        return torch.pow(x - y, 2).sum(2)

    def prototypical_loss(input, target, n_support):
        target_cpu = target.to('cpu')
        input_cpu = input.to('cpu')

        def supp_idxs(c):
            # FIXME when torch will support where as np
            return target_cpu.eq(c).nonzero()[:n_support].squeeze(1)

        # FIXME when torch.unique will be available on cuda too
        classes = torch.unique(target_cpu)
        n_classes = len(classes)
        # FIXME when torch will support where as np
        # assuming n_query, n_target constants
        n_query = target_cpu.eq(classes[0].item()).sum().item() - n_support
        support_idxs = list(map(supp_idxs, classes))
        prototypes = torch.stack([input_cpu[idx_list].mean(0) for idx_list in support_idxs])
        # FIXME when torch will support where as np
        query_idxs = torch.stack(list(map(lambda c: target_cpu.eq(c).nonzero()[n_support:], classes))).view(-1)
        query_samples = input.to('cpu')[query_idxs]
        dists = euclidean_dist(query_samples, prototypes)
        log_p_y = F.log_softmax(-dists, dim=1).view(n_classes, n_query, -1)
        target_inds = torch.arange(0, n_classes)
        target_inds = target_inds.view(n_classes, 1, 1)
        target_inds = target_inds.expand(n_classes, n_query, 1).long()
        loss_val = -log_p_y.gather(2, target_inds).squeeze().view(-1).mean()
        _, y_hat = log_p_y.max(2)
        acc_val = y_hat.eq(target_inds.squeeze(2)).float().mean()
        return loss_val, acc_val

    class PrototypicalBatchSampler(object):
        """Yield a batch of indexes at each iteration: classes_per_it classes, num_samples each
        (the repository's draws by torch.randperm; numpy's here, so that both runs see one order)."""
        def __init__(self, labels, classes_per_it, num_samples, iterations):
            super(PrototypicalBatchSampler, self).__init__()
            self.labels = labels
            self.classes_per_it = classes_per_it
            self.sample_per_class = num_samples
            self.iterations = iterations
            self.classes, self.counts = np.unique(self.labels, return_counts=True)
            self.rng = np.random.default_rng(11)

        def __iter__(self):
            spc = self.sample_per_class
            cpi = self.classes_per_it
            for it in range(self.iterations):
                batch = []
                for c in self.rng.permutation(self.classes)[:cpi]:
                    batch += list(self.rng.permutation(np.flatnonzero(self.labels == c))[:spc])
                yield batch

        def __len__(self):
            return self.iterations

    rng = np.random.default_rng(12)
    x_all = rng.standard_normal((24, 1, 8, 8)).astype(np.float32)
    y_all = np.repeat(np.arange(6), 4)
    dataset = m.data.TensorDataset(torch.tensor(x_all), torch.tensor(y_all))
    sampler = PrototypicalBatchSampler(y_all, classes_per_it=3, num_samples=3, iterations=2)
    dataloader = DataLoader(dataset, batch_sampler=sampler)
    torch.manual_seed(7)
    model = ProtoNet(hid_dim=4, z_dim=4)
    init = load(m, model, state)
    optim_ = torch.optim.Adam(params=model.parameters(), lr=0.001)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer=optim_, gamma=0.5, step_size=20)
    train_loss, train_acc, best_acc = [], [], 0
    for epoch in range(1):
        tr_iter = iter(dataloader)
        model.train()
        for batch in tr_iter:
            optim_.zero_grad()
            x, y = batch
            model_output = model(x)
            loss, acc = prototypical_loss(model_output, target=y, n_support=1)
            loss.backward()
            optim_.step()
            train_loss.append(loss.item())
            train_acc.append(acc.item())
        avg_acc = np.mean(train_acc[-len(sampler):])
        lr_scheduler.step()
        if avg_acc >= best_acc:
            torch.save(model.state_dict(), str(tmp / 'best_model.pth'))
            best_acc = avg_acc
            best_state = model.state_dict()
    model.load_state_dict(torch.load(str(tmp / 'best_model.pth')))
    assert sorted(best_state) == sorted(model.state_dict())
    # the convolutions' biases ahead of a BatchNorm get gradients that are rounding noise, which Adam
    # scales to whole steps: they are left out of the compared weights
    kept = [p for name, p in model.named_parameters() if not name.endswith('.0.bias')]
    return init, train_loss + train_acc + summary(kept)


def test_protonet(tmp_path):
    for name in ("tnet", "torch"):
        (tmp_path / name).mkdir()
    compare(lambda m, state=None: protonet(m, state, tmp=tmp_path / ("torch" if state else "tnet")))


# (l) pytorch/examples' mnist_forward_forward: Layer subclasses nn.Linear (device and dtype passed on
# positionally) and overrides train(x_pos, x_neg), shadowing nn.Module.train, with its own Adam built
# in __init__ from self.parameters(); the layers in a plain list (Net has no parameters of its own),
# each moved by .cuda() where there is one; forward normalises by x.norm(2, 1, keepdim=True) and
# adds self.bias.unsqueeze(0) to torch.mm(x, self.weight.T); the loss log(1 + exp(...)) of the
# goodness; overlay_y_on_x writes x_[:, :10] *= 0.0 and x_[range(n), y] = x.max(); predict by
# argmax of the summed goodness per label
def forward_forward(m, state=None):
    torch, nn = m.torch, m.nn
    Adam = m.optim.Adam

    def overlay_y_on_x(x, y):
        """Replace the first 10 pixels of data [x] with one-hot-encoded label [y]
        """
        x_ = x.clone()
        x_[:, :10] *= 0.0
        x_[range(x.shape[0]), y] = x.max()
        return x_

    class Net(torch.nn.Module):

        def __init__(self, dims):
            super().__init__()
            self.layers = []
            for d in range(len(dims) - 1):
                layer = Layer(dims[d], dims[d + 1])
                self.layers += [layer.cuda() if torch.cuda.is_available() else layer]

        def predict(self, x):
            goodness_per_label = []
            for label in range(10):
                h = overlay_y_on_x(x, label)
                goodness = []
                for layer in self.layers:
                    h = layer(h)
                    goodness += [h.pow(2).mean(1)]
                goodness_per_label += [sum(goodness).unsqueeze(1)]
            goodness_per_label = torch.cat(goodness_per_label, 1)
            return goodness_per_label.argmax(1)

        def train(self, x_pos, x_neg):
            h_pos, h_neg = x_pos, x_neg
            for i, layer in enumerate(self.layers):
                h_pos, h_neg = layer.train(h_pos, h_neg)

    class Layer(nn.Linear):
        def __init__(self, in_features, out_features,
                     bias=True, device=None, dtype=None):
            super().__init__(in_features, out_features, bias, device, dtype)
            self.relu = torch.nn.ReLU()
            self.opt = Adam(self.parameters(), lr=0.03)
            self.threshold = 2.0
            self.num_epochs = 3  # the example's 1000

        def forward(self, x):
            x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
            return self.relu(
                torch.mm(x_direction, self.weight.T) +
                self.bias.unsqueeze(0))

        def train(self, x_pos, x_neg):
            for i in range(self.num_epochs):
                g_pos = self.forward(x_pos).pow(2).mean(1)
                g_neg = self.forward(x_neg).pow(2).mean(1)
                # The following loss pushes pos (neg) samples to
                # values larger (smaller) than the self.threshold.
                loss = torch.log(1 + torch.exp(torch.cat([
                    -g_pos + self.threshold,
                    g_neg - self.threshold]))).mean()
                self.opt.zero_grad()
                # this backward just compute the derivative and hence
                # is not considered backpropagation.
                loss.backward()
                self.opt.step()
                losses.append(loss.item())
            return self.forward(x_pos).detach(), self.forward(x_neg).detach()

    torch.manual_seed(1234)
    rng = np.random.default_rng(13)
    x = torch.tensor(rng.random((8, 20)).astype(np.float32))  # flattened MNIST, 784 pixels in the example
    y = torch.tensor(rng.integers(0, 10, 8))
    net = Net([20, 12, 12])
    assert list(net.parameters()) == []
    states = [load(m, layer, None if state is None else state[i]) for i, layer in enumerate(net.layers)]
    init = {i: s for i, s in enumerate(states)}
    losses = []
    x_pos = overlay_y_on_x(x, y)
    rnd = torch.tensor(rng.permutation(x.size(0)))  # torch.randperm: numpy draws
    x_neg = overlay_y_on_x(x, y[rnd])
    net.train(x_pos, x_neg)
    train_error = 1.0 - net.predict(x).eq(y).float().mean().item()
    return init, losses + [train_error] + summary([p for layer in net.layers for p in layer.parameters()])


def test_forward_forward():
    compare(forward_forward)


# (m) pytorch/examples' word_language_model: data.py's Dictionary and Corpus over a tokenised text,
# batchify by narrow/view(bsz, -1).t().contiguous(), get_batch's source[i:i+seq_len] and
# view(-1) targets; model.py's RNNModel (getattr(nn, rnn_type), tied encoder/decoder weights,
# init_hidden from next(self.parameters()).new_zeros, repackage_hidden) and TransformerModel, which
# subclasses nn.Transformer itself, its causal mask torch.log(torch.tril(torch.ones(sz, sz))), a
# PositionalEncoding buffer written through pe[:, 0::2] = torch.sin(...); main.py's loop: model.zero_grad(),
# NLLLoss over log_softmax, clip_grad_norm_, p.data.add_(p.grad, alpha=-lr), evaluate's
# len(data) * loss, lr /= 4.0 when the validation loss does not improve
def word_language_model(m, state=None, model_type="Transformer"):
    torch, nn, F = m.torch, m.nn, m.F

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
        def __init__(self, texts):
            self.dictionary = Dictionary()
            self.train, self.valid = (self.tokenize(t) for t in texts)

        def tokenize(self, text):
            """Tokenizes a text file (here: its lines)."""
            idss = []
            for line in text:
                words = line.split() + ['<eos>']
                ids = []
                for word in words:
                    ids.append(self.dictionary.add_word(word))
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
                try:
                    nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
                except KeyError as e:
                    raise ValueError("""An invalid option for `--model` was supplied,
                                     options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
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

    class PositionalEncoding(nn.Module):
        r"""Inject some information about the relative or absolute position of the tokens in the sequence."""

        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super(PositionalEncoding, self).__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer('pe', pe)

        def forward(self, x):
            x = x + self.pe[:x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Transformer):
        """Container module with an encoder, a recurrent or transformer module, and a decoder."""

        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
            super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                                                   num_encoder_layers=nlayers, dropout=dropout)
            self.model_type = 'Transformer'
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout, max_len=64)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            self.init_weights()

        def _generate_square_subsequent_mask(self, sz):
            return torch.log(torch.tril(torch.ones(sz, sz)))

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask=True):
            if has_mask:
                device = src.device
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    mask = self._generate_square_subsequent_mask(len(src)).to(device)
                    self.src_mask = mask
            else:
                self.src_mask = None
            src = self.input_emb(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.encoder(src, mask=self.src_mask)
            output = self.decoder(output)
            return F.log_softmax(output, dim=-1)

    corpus = Corpus((["the cat sat on the mat", "a dog sat"], ["the dog sat"]))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def batchify(data, bsz):
        # Work out how cleanly we can divide the dataset into bsz parts.
        nbatch = data.size(0) // bsz
        # Trim off any extra elements that wouldn't cleanly fit (remainders).
        data = data.narrow(0, 0, nbatch * bsz)
        # Evenly divide the data across the bsz batches.
        data = data.view(bsz, -1).t().contiguous()
        return data.to(device)

    eval_batch_size, batch_size, bptt, clip = 2, 2, 4, 0.25
    train_data = batchify(corpus.train, batch_size)
    val_data = batchify(corpus.valid, eval_batch_size)
    ntokens = len(corpus.dictionary)
    torch.manual_seed(1111)
    if model_type == 'Transformer':
        model = TransformerModel(ntokens, 8, 2, 16, 1, 0.0).to(device)  # the example's 200, 2, 200, 2, 0.2
    else:
        model = RNNModel(model_type, ntokens, 8, 8, 2, 0.0, tie_weights=True).to(device)
    init = load(m, model, state)
    criterion = nn.NLLLoss()

    def repackage_hidden(h):
        """Wraps hidden states in new Tensors, to detach them from their history."""
        if isinstance(h, torch.Tensor):
            return h.detach()
        else:
            return tuple(repackage_hidden(v) for v in h)

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        data = source[i:i+seq_len]
        target = source[i+1:i+1+seq_len].view(-1)
        return data, target

    def evaluate(data_source):
        # Turn on evaluation mode which disables dropout.
        model.eval()
        total_loss = 0.
        if model_type != 'Transformer':
            hidden = model.init_hidden(eval_batch_size)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                data, targets = get_batch(data_source, i)
                if model_type == 'Transformer':
                    output = model(data)
                    output = output.view(-1, ntokens)
                else:
                    output, hidden = model(data, hidden)
                    hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    record = []

    def train():
        # Turn on training mode which enables dropout.
        model.train()
        if model_type != 'Transformer':
            hidden = model.init_hidden(batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            # Starting each batch, we detach the hidden state from how it was previously produced.
            # If we didn't, the model would try backpropagating all the way to start of the dataset.
            model.zero_grad()
            if model_type == 'Transformer':
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                hidden = repackage_hidden(hidden)
                output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()

            # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            record.append(loss.item())

    lr, best_val_loss = 20, None
    for epoch in range(1, 3):
        train()
        val_loss = evaluate(val_data)
        record.append(val_loss)
        # Save the model if the validation loss is the best we've seen so far.
        if not best_val_loss or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen in the validation dataset.
            lr /= 4.0
    return init, record + [lr] + summary(model.parameters())


def test_word_language_model_transformer():
    compare(word_language_model)


def test_word_language_model_tied_gru():
    compare(word_language_model, model_type="GRU")


# (n) the "Language Translation with nn.Transformer" tutorial: Seq2SeqTransformer (nn.Transformer with
# sequence-first inputs, TokenEmbedding scaled by sqrt(emb_size), a PositionalEncoding buffer of shape
# [maxlen, 1, emb]), generate_square_subsequent_mask by (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
# and two masked_fill's, create_mask's boolean key-padding masks (src == PAD_IDX).transpose(0, 1),
# xavier_uniform_ on every p.dim() > 1, collate_fn with pad_sequence(padding_value=PAD_IDX),
# CrossEntropyLoss(ignore_index=PAD_IDX), Adam(betas=(0.9, 0.98), eps=1e-9), and greedy_decode through
# encode/decode with torch.ones(1, 1).fill_(BOS_IDX).type(torch.long) and type_as(src.data)
def translation_transformer(m, state=None):
    torch, nn = m.torch, m.nn
    Tensor = torch.Tensor
    pad_sequence = nn.utils.rnn.pad_sequence
    Transformer = nn.Transformer
    DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    PAD_IDX, BOS_IDX, EOS_IDX = 1, 2, 3  # UNK_IDX 0

    class PositionalEncoding(nn.Module):
        def __init__(self, emb_size: int, dropout: float, maxlen: int = 5000):
            super(PositionalEncoding, self).__init__()
            den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
            pos = torch.arange(0, maxlen).reshape(maxlen, 1)
            pos_embedding = torch.zeros((maxlen, emb_size))
            pos_embedding[:, 0::2] = torch.sin(pos * den)
            pos_embedding[:, 1::2] = torch.cos(pos * den)
            pos_embedding = pos_embedding.unsqueeze(-2)

            self.dropout = nn.Dropout(dropout)
            self.register_buffer('pos_embedding', pos_embedding)

        def forward(self, token_embedding: Tensor):
            return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])

    class TokenEmbedding(nn.Module):
        def __init__(self, vocab_size: int, emb_size):
            super(TokenEmbedding, self).__init__()
            self.embedding = nn.Embedding(vocab_size, emb_size)
            self.emb_size = emb_size

        def forward(self, tokens: Tensor):
            return self.embedding(tokens.long()) * math.sqrt(self.emb_size)

    class Seq2SeqTransformer(nn.Module):
        def __init__(self, num_encoder_layers: int, num_decoder_layers: int, emb_size: int, nhead: int,
                     src_vocab_size: int, tgt_vocab_size: int, dim_feedforward: int = 512, dropout: float = 0.1):
            super(Seq2SeqTransformer, self).__init__()
            self.transformer = Transformer(d_model=emb_size,
                                           nhead=nhead,
                                           num_encoder_layers=num_encoder_layers,
                                           num_decoder_layers=num_decoder_layers,
                                           dim_feedforward=dim_feedforward,
                                           dropout=dropout)
            self.generator = nn.Linear(emb_size, tgt_vocab_size)
            self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
            self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
            self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout, maxlen=32)

        def forward(self, src: Tensor, trg: Tensor, src_mask: Tensor, tgt_mask: Tensor, src_padding_mask: Tensor,
                    tgt_padding_mask: Tensor, memory_key_padding_mask: Tensor):
            src_emb = self.positional_encoding(self.src_tok_emb(src))
            tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
            outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                    src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
            return self.generator(outs)

        def encode(self, src: Tensor, src_mask: Tensor):
            return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

        def decode(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor):
            return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)

    def generate_square_subsequent_mask(sz):
        mask = (torch.triu(torch.ones((sz, sz), device=DEVICE)) == 1).transpose(0, 1)
        mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
        return mask

    def create_mask(src, tgt):
        src_seq_len = src.shape[0]
        tgt_seq_len = tgt.shape[0]
        tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
        src_mask = torch.zeros((src_seq_len, src_seq_len), device=DEVICE).type(torch.bool)
        src_padding_mask = (src == PAD_IDX).transpose(0, 1)
        tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
        return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

    pairs = [([4, 5, 6], [4, 7]), ([5, 6], [7, 8, 9]), ([6, 4, 5, 7], [8, 4]), ([7], [9, 8, 7])]
    SRC_VOCAB_SIZE = TGT_VOCAB_SIZE = 10

    def collate_fn(batch):  # text_transform's tensor_transform: BOS + ids + EOS
        src_batch, tgt_batch = [], []
        for src_sample, tgt_sample in batch:
            src_batch.append(torch.cat((torch.tensor([BOS_IDX]), torch.tensor(src_sample), torch.tensor([EOS_IDX]))))
            tgt_batch.append(torch.cat((torch.tensor([BOS_IDX]), torch.tensor(tgt_sample), torch.tensor([EOS_IDX]))))
        src_batch = pad_sequence(src_batch, padding_value=PAD_IDX)
        tgt_batch = pad_sequence(tgt_batch, padding_value=PAD_IDX)
        return src_batch, tgt_batch

    torch.manual_seed(0)
    transformer = Seq2SeqTransformer(1, 1, 8, 2, SRC_VOCAB_SIZE, TGT_VOCAB_SIZE, 16, dropout=0.0)  # 3, 3, 512, 8, 512, 0.1
    for p in transformer.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    init = load(m, transformer, state)
    transformer = transformer.to(DEVICE)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    optimizer = torch.optim.Adam(transformer.parameters(), lr=0.0001, betas=(0.9, 0.98), eps=1e-9)

    def train_epoch(model, optimizer):
        model.train()
        losses = 0
        train_dataloader = m.data.DataLoader(pairs, batch_size=4, collate_fn=collate_fn)  # BATCH_SIZE 128
        for src, tgt in train_dataloader:
            src = src.to(DEVICE)
            tgt = tgt.to(DEVICE)
            tgt_input = tgt[:-1, :]
            src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
            logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
            optimizer.zero_grad()
            tgt_out = tgt[1:, :]
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
            loss.backward()
            optimizer.step()
            losses += loss.item()
        return losses / len(list(train_dataloader))

    def greedy_decode(model, src, src_mask, max_len, start_symbol):
        src = src.to(DEVICE)
        src_mask = src_mask.to(DEVICE)
        memory = model.encode(src, src_mask)
        ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long).to(DEVICE)
        for i in range(max_len-1):
            memory = memory.to(DEVICE)
            tgt_mask = (generate_square_subsequent_mask(ys.size(0)).type(torch.bool)).to(DEVICE)
            out = model.decode(ys, memory, tgt_mask)
            out = out.transpose(0, 1)
            prob = model.generator(out[:, -1])
            _, next_word = torch.max(prob, dim=1)
            next_word = next_word.item()
            ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
            if next_word == EOS_IDX:
                break
        return ys

    def translate(model: torch.nn.Module, src_sentence):
        model.eval()
        src = torch.tensor([BOS_IDX] + src_sentence + [EOS_IDX]).view(-1, 1)
        num_tokens = src.shape[0]
        src_mask = (torch.zeros(num_tokens, num_tokens)).type(torch.bool)
        tgt_tokens = greedy_decode(model, src, src_mask, max_len=4, start_symbol=BOS_IDX).flatten()
        return tgt_tokens.tolist()

    record = [train_epoch(transformer, optimizer)]
    # attention's key bias gets a gradient of rounding noise only (softmax ignores a shift that all of
    # a query's logits share), which Adam scales to whole steps: in_proj_bias's key third is left out
    compared = []
    for name, p in transformer.named_parameters():
        third = p.shape[0] // 3
        compared += [p[:third], p[2 * third:]] if name.endswith('in_proj_bias') else [p]
    return init, record + translate(transformer, [4, 5]) + summary(compared)


def test_translation_transformer():
    compare(translation_transformer)


class Atari:
    """create_atari_env's interface (an observation of [1, 42, 42], here [1, 16, 16]; reset() -> state,
    step(action) -> 4-tuple with the action as a [1, 1] array; action_space.n), over numpy draws."""

    def __init__(self):
        self.rng = np.random.default_rng(14)
        self.observation_space = type("Box", (), {"shape": (1, 16, 16)})()
        self.action_space = type("Discrete", (), {"n": 3})()

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.t = 0
        return self.rng.random((1, 16, 16)).astype(np.float32)

    def step(self, action):
        self.t += 1
        reward = float(int(action[0, 0]) - 1) * 2.0  # clipped to [-1, 1] by the script
        return self.rng.random((1, 16, 16)).astype(np.float32), reward, self.t >= 3, {}


# (o) ikostrikov/pytorch-a3c: weights_init by classname.find('Conv'), normalized_columns_initializer
# written into weight.data by assignment, an LSTMCell whose biases .data.fill_(0), the shared model's
# share_memory(), SharedAdam (optim.Adam subclassed with its state made in __init__ from
# p.data.new().resize_as_(p.data).zero_() and share_memory_(), the deprecated add_(alpha, t) and
# addcmul_/addcdiv_ overloads), train()'s rollout with prob.multinomial, entropy, GAE, the local model
# loaded from the shared one's state_dict and ensure_shared_grads' shared_param._grad = param.grad.
# One worker runs in-process (the repository's mp.Process), three updates; tnet draws the actions,
# torch replays them
def a3c(m, state=None, actions=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    def normalized_columns_initializer(weights, std=1.0):
        out = torch.randn(weights.size())
        out *= std / torch.sqrt(out.pow(2).sum(1, keepdim=True))
        return out

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            weight_shape = list(m.weight.data.size())
            fan_in = np.prod(weight_shape[1:4])
            fan_out = np.prod(weight_shape[2:4]) * weight_shape[0]
            w_bound = np.sqrt(6. / (fan_in + fan_out))
            m.weight.data.uniform_(-w_bound, w_bound)
            m.bias.data.fill_(0)
        elif classname.find('Linear') != -1:
            weight_shape = list(m.weight.data.size())
            fan_in = weight_shape[1]
            fan_out = weight_shape[0]
            w_bound = np.sqrt(6. / (fan_in + fan_out))
            m.weight.data.uniform_(-w_bound, w_bound)
            m.bias.data.fill_(0)

    class ActorCritic(torch.nn.Module):
        def __init__(self, num_inputs, action_space):
            super(ActorCritic, self).__init__()
            self.conv1 = nn.Conv2d(num_inputs, 4, 3, stride=2, padding=1)  # 32 channels, four convs
            self.conv2 = nn.Conv2d(4, 4, 3, stride=2, padding=1)
            self.lstm = nn.LSTMCell(4 * 4 * 4, 8)  # 32 * 3 * 3, 256
            num_outputs = action_space.n
            self.critic_linear = nn.Linear(8, 1)
            self.actor_linear = nn.Linear(8, num_outputs)
            self.apply(weights_init)
            self.actor_linear.weight.data = normalized_columns_initializer(
                self.actor_linear.weight.data, 0.01)
            self.actor_linear.bias.data.fill_(0)
            self.critic_linear.weight.data = normalized_columns_initializer(
                self.critic_linear.weight.data, 1.0)
            self.critic_linear.bias.data.fill_(0)
            self.lstm.bias_ih.data.fill_(0)
            self.lstm.bias_hh.data.fill_(0)
            self.train()

        def forward(self, inputs):
            inputs, (hx, cx) = inputs
            x = F.elu(self.conv1(inputs))
            x = F.elu(self.conv2(x))
            x = x.view(-1, 4 * 4 * 4)
            hx, cx = self.lstm(x, (hx, cx))
            x = hx
            return self.critic_linear(x), self.actor_linear(x), (hx, cx)

    class SharedAdam(optim.Adam):
        """Implements Adam algorithm with shared states."""

        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
            super(SharedAdam, self).__init__(params, lr, betas, eps, weight_decay)
            for group in self.param_groups:
                for p in group['params']:
                    state = self.state[p]
                    state['step'] = torch.zeros(1)
                    state['exp_avg'] = p.data.new().resize_as_(p.data).zero_()
                    state['exp_avg_sq'] = p.data.new().resize_as_(p.data).zero_()

        def share_memory(self):
            for group in self.param_groups:
                for p in group['params']:
                    state = self.state[p]
                    state['step'].share_memory_()
                    state['exp_avg'].share_memory_()
                    state['exp_avg_sq'].share_memory_()

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    state = self.state[p]
                    exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                    beta1, beta2 = group['betas']
                    state['step'] += 1
                    if group['weight_decay'] != 0:
                        grad = grad.add(group['weight_decay'], p.data)
                    # Decay the first and second moment running average coefficient
                    exp_avg.mul_(beta1).add_(1 - beta1, grad)
                    exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                    denom = exp_avg_sq.sqrt().add_(group['eps'])
                    bias_correction1 = 1 - beta1 ** state['step'].item()
                    bias_correction2 = 1 - beta2 ** state['step'].item()
                    step_size = group['lr'] * math.sqrt(bias_correction2) / bias_correction1
                    p.data.addcdiv_(-step_size, exp_avg, denom)
            return loss

    def ensure_shared_grads(model, shared_model):
        for param, shared_param in zip(model.parameters(), shared_model.parameters()):
            if shared_param.grad is not None:
                return
            shared_param._grad = param.grad

    class Args:
        lr, gamma, gae_lambda, entropy_coef, value_loss_coef = 0.0001, 0.99, 1.00, 0.01, 0.5
        max_grad_norm, seed, num_steps, max_episode_length, updates = 50, 1, 2, 1000000, 3
    args = Args()
    replay = None if state is None else iter(actions)
    record = []

    def train(rank, args, shared_model, counter, lock, optimizer=None):
        torch.manual_seed(args.seed + rank)
        env = Atari()
        env.seed(args.seed + rank)
        model = ActorCritic(env.observation_space.shape[0], env.action_space)
        if optimizer is None:
            optimizer = optim.Adam(shared_model.parameters(), lr=args.lr)
        model.train()
        state = env.reset()
        state = torch.from_numpy(state)
        done = True
        episode_length = 0
        for update in range(args.updates):  # the repository's `while True`
            # Sync with the shared model
            model.load_state_dict(shared_model.state_dict())
            if done:
                cx = torch.zeros(1, 8)
                hx = torch.zeros(1, 8)
            else:
                cx = cx.detach()
                hx = hx.detach()
            values = []
            log_probs = []
            rewards = []
            entropies = []
            for step in range(args.num_steps):
                episode_length += 1
                value, logit, (hx, cx) = model((state.unsqueeze(0), (hx, cx)))
                prob = F.softmax(logit, dim=-1)
                log_prob = F.log_softmax(logit, dim=-1)
                entropy = -(log_prob * prob).sum(1, keepdim=True)
                entropies.append(entropy)
                if replay is None:
                    action = prob.multinomial(num_samples=1).detach()
                    actions.append(action.tolist())
                else:  # torch's run: the action tnet's drew
                    action = torch.tensor(next(replay))
                log_prob = log_prob.gather(1, action)
                state, reward, done, _ = env.step(action.numpy())
                done = done or episode_length >= args.max_episode_length
                reward = max(min(reward, 1), -1)
                with lock:
                    counter.value += 1
                if done:
                    episode_length = 0
                    state = env.reset()
                state = torch.from_numpy(state)
                values.append(value)
                log_probs.append(log_prob)
                rewards.append(reward)
                if done:
                    break
            R = torch.zeros(1, 1)
            if not done:
                value, _, _ = model((state.unsqueeze(0), (hx, cx)))
                R = value.detach()
            values.append(R)
            policy_loss = 0
            value_loss = 0
            gae = torch.zeros(1, 1)
            for i in reversed(range(len(rewards))):
                R = args.gamma * R + rewards[i]
                advantage = R - values[i]
                value_loss = value_loss + 0.5 * advantage.pow(2)
                # Generalized Advantage Estimation
                delta_t = rewards[i] + args.gamma * values[i + 1] - values[i]
                gae = gae * args.gamma * args.gae_lambda + delta_t
                policy_loss = policy_loss - log_probs[i] * gae.detach() - args.entropy_coef * entropies[i]
            optimizer.zero_grad()
            (policy_loss + args.value_loss_coef * value_loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            ensure_shared_grads(model, shared_model)
            optimizer.step()
            record.append((policy_loss + args.value_loss_coef * value_loss).item())

    import threading

    class Counter:  # mp.Value('i', 0)
        value = 0
    torch.manual_seed(args.seed)
    env = Atari()
    shared_model = ActorCritic(env.observation_space.shape[0], env.action_space)
    init = load(m, shared_model, state)
    shared_model.share_memory()
    optimizer = SharedAdam(shared_model.parameters(), lr=args.lr)
    optimizer.share_memory()
    counter, lock = Counter(), threading.Lock()  # mp.Lock()
    train(0, args, shared_model, counter, lock, optimizer)
    assert counter.value == 5  # 2 steps, 1 to the episode's end, 2
    return init, record + summary(shared_model.parameters())


def test_a3c():
    compare(a3c, actions=[])


# (p) nikhilbarhate99/PPO-PyTorch: a RolloutBuffer of lists, ActorCritic with a discrete actor
# (Categorical) or a continuous one (MultivariateNormal(action_mean, torch.diag(action_var).unsqueeze(0)),
# torch.diag_embed in evaluate, action_var from torch.full), act() under no_grad, policy_old kept by
# load_state_dict, Monte Carlo returns normalised, torch.squeeze(torch.stack(buffer.states, dim=0)).detach(),
# the clipped surrogate by torch.exp(logprobs - old_logprobs), torch.clamp and torch.min, MseLoss, the
# entropy bonus, K epochs over the batch, Adam on two param groups with their own lr; decay_action_std.
# tnet draws the actions, torch replays them
def ppo(m, state=None, actions=None, continuous=False):
    torch, nn = m.torch, m.nn
    MultivariateNormal, Categorical = torch.distributions.MultivariateNormal, torch.distributions.Categorical
    device = torch.device('cpu')
    replay = None if state is None else iter(actions)

    def draw(dist):
        if replay is None:
            action = dist.sample()
            actions.append(action.tolist())
            return action
        return torch.tensor(next(replay))

    class RolloutBuffer:
        def __init__(self):
            self.actions = []
            self.states = []
            self.logprobs = []
            self.rewards = []
            self.state_values = []
            self.is_terminals = []

        def clear(self):
            del self.actions[:]
            del self.states[:]
            del self.logprobs[:]
            del self.rewards[:]
            del self.state_values[:]
            del self.is_terminals[:]

    class ActorCritic(nn.Module):
        def __init__(self, state_dim, action_dim, has_continuous_action_space, action_std_init):
            super(ActorCritic, self).__init__()
            self.has_continuous_action_space = has_continuous_action_space
            if has_continuous_action_space:
                self.action_dim = action_dim
                self.action_var = torch.full((action_dim,), action_std_init * action_std_init).to(device)
            # actor
            if has_continuous_action_space:
                self.actor = nn.Sequential(
                    nn.Linear(state_dim, 8),
                    nn.Tanh(),
                    nn.Linear(8, 8),
                    nn.Tanh(),
                    nn.Linear(8, action_dim),
                    nn.Tanh()
                )
            else:
                self.actor = nn.Sequential(
                    nn.Linear(state_dim, 8),
                    nn.Tanh(),
                    nn.Linear(8, 8),
                    nn.Tanh(),
                    nn.Linear(8, action_dim),
                    nn.Softmax(dim=-1)
                )
            # critic
            self.critic = nn.Sequential(
                nn.Linear(state_dim, 8),
                nn.Tanh(),
                nn.Linear(8, 8),
                nn.Tanh(),
                nn.Linear(8, 1)
            )

        def set_action_std(self, new_action_std):
            if self.has_continuous_action_space:
                self.action_var = torch.full((self.action_dim,), new_action_std * new_action_std).to(device)

        def forward(self):
            raise NotImplementedError

        def act(self, state):
            if self.has_continuous_action_space:
                action_mean = self.actor(state)
                cov_mat = torch.diag(self.action_var).unsqueeze(dim=0)
                dist = MultivariateNormal(action_mean, cov_mat)
            else:
                action_probs = self.actor(state)
                dist = Categorical(action_probs)
            action = draw(dist)
            action_logprob = dist.log_prob(action)
            state_val = self.critic(state)
            return action.detach(), action_logprob.detach(), state_val.detach()

        def evaluate(self, state, action):
            if self.has_continuous_action_space:
                action_mean = self.actor(state)
                action_var = self.action_var.expand_as(action_mean)
                cov_mat = torch.diag_embed(action_var).to(device)
                dist = MultivariateNormal(action_mean, cov_mat)
                # For Single Action Environments.
                if self.action_dim == 1:
                    action = action.reshape(-1, self.action_dim)
            else:
                action_probs = self.actor(state)
                dist = Categorical(action_probs)
            action_logprobs = dist.log_prob(action)
            dist_entropy = dist.entropy()
            state_values = self.critic(state)
            return action_logprobs, state_values, dist_entropy

    class PPO:
        def __init__(self, state_dim, action_dim, lr_actor, lr_critic, gamma, K_epochs, eps_clip,
                     has_continuous_action_space, action_std_init=0.6):
            self.has_continuous_action_space = has_continuous_action_space
            if has_continuous_action_space:
                self.action_std = action_std_init
            self.gamma = gamma
            self.eps_clip = eps_clip
            self.K_epochs = K_epochs
            self.buffer = RolloutBuffer()
            self.policy = ActorCritic(state_dim, action_dim, has_continuous_action_space, action_std_init).to(device)
            self.init = load(m, self.policy, state)
            self.optimizer = torch.optim.Adam([
                {'params': self.policy.actor.parameters(), 'lr': lr_actor},
                {'params': self.policy.critic.parameters(), 'lr': lr_critic}
            ])
            self.policy_old = ActorCritic(state_dim, action_dim, has_continuous_action_space, action_std_init).to(device)
            self.policy_old.load_state_dict(self.policy.state_dict())
            self.MseLoss = nn.MSELoss()

        def set_action_std(self, new_action_std):
            self.action_std = new_action_std
            self.policy.set_action_std(new_action_std)
            self.policy_old.set_action_std(new_action_std)

        def decay_action_std(self, action_std_decay_rate, min_action_std):
            self.action_std = self.action_std - action_std_decay_rate
            self.action_std = round(self.action_std, 4)
            if (self.action_std <= min_action_std):
                self.action_std = min_action_std
            self.set_action_std(self.action_std)

        def select_action(self, state):
            with torch.no_grad():
                state = torch.FloatTensor(state).to(device)
                action, action_logprob, state_val = self.policy_old.act(state)
            self.buffer.states.append(state)
            self.buffer.actions.append(action)
            self.buffer.logprobs.append(action_logprob)
            self.buffer.state_values.append(state_val)
            if self.has_continuous_action_space:
                return action.detach().cpu().numpy().flatten()
            return action.item()

        def update(self):
            # Monte Carlo estimate of returns
            rewards = []
            discounted_reward = 0
            for reward, is_terminal in zip(reversed(self.buffer.rewards), reversed(self.buffer.is_terminals)):
                if is_terminal:
                    discounted_reward = 0
                discounted_reward = reward + (self.gamma * discounted_reward)
                rewards.insert(0, discounted_reward)
            # Normalizing the rewards
            rewards = torch.tensor(rewards, dtype=torch.float32).to(device)
            rewards = (rewards - rewards.mean()) / (rewards.std() + 1e-7)
            # convert list to tensor
            old_states = torch.squeeze(torch.stack(self.buffer.states, dim=0)).detach().to(device)
            old_actions = torch.squeeze(torch.stack(self.buffer.actions, dim=0)).detach().to(device)
            old_logprobs = torch.squeeze(torch.stack(self.buffer.logprobs, dim=0)).detach().to(device)
            old_state_values = torch.squeeze(torch.stack(self.buffer.state_values, dim=0)).detach().to(device)
            # calculate advantages
            advantages = rewards.detach() - old_state_values.detach()
            losses = []
            # Optimize policy for K epochs
            for _ in range(self.K_epochs):
                # Evaluating old actions and values
                logprobs, state_values, dist_entropy = self.policy.evaluate(old_states, old_actions)
                # match state_values tensor dimensions with rewards tensor
                state_values = torch.squeeze(state_values)
                # Finding the ratio (pi_theta / pi_theta__old)
                ratios = torch.exp(logprobs - old_logprobs.detach())
                # Finding Surrogate Loss
                surr1 = ratios * advantages
                surr2 = torch.clamp(ratios, 1-self.eps_clip, 1+self.eps_clip) * advantages
                # final loss of clipped objective PPO
                loss = -torch.min(surr1, surr2) + 0.5 * self.MseLoss(state_values, rewards) - 0.01 * dist_entropy
                # take gradient step
                self.optimizer.zero_grad()
                loss.mean().backward()
                self.optimizer.step()
                losses.append(loss.mean().item())
            # Copy new weights into old policy
            self.policy_old.load_state_dict(self.policy.state_dict())
            # clear buffer
            self.buffer.clear()
            return losses

    env = CartPole()
    torch.manual_seed(0)
    state_dim, action_dim = 4, 2 if not continuous else 1
    ppo_agent = PPO(state_dim, action_dim, 0.0003, 0.001, 0.99, 2, 0.2, continuous, 0.6)  # K_epochs 80
    record = []
    for episode in range(2):
        state, _ = env.reset()
        for t in range(1, 5):
            action = ppo_agent.select_action(state)
            step = int(action[0] > 0) if continuous else action
            state, reward, done, _, _ = env.step(step)
            ppo_agent.buffer.rewards.append(reward + 0.1 * t)
            ppo_agent.buffer.is_terminals.append(done)
            if done:
                break
        record += ppo_agent.update()
        if continuous:
            ppo_agent.decay_action_std(0.05, 0.1)
    return ppo_agent.init, record + summary(ppo_agent.policy.parameters())


def test_ppo_discrete():
    compare(ppo, actions=[])


def test_ppo_continuous():
    compare(ppo, actions=[], continuous=True)


# (q) meijieru/crnn.pytorch: the CRNN's conv stack built by a nested convRelu(i, batchNormalization)
# that add_module's into an nn.Sequential, asymmetric MaxPool2d((2, 2), (2, 1), (0, 1)), the height
# squeezed and the width made time by permute(2, 0, 1), BidirectionalLSTM's view(T * b, h) around a
# Linear, weights_init by classname; train.py's strLabelConverter (encode to a concatenated IntTensor
# and lengths, decode collapsing repeats and blanks), loadData's v.resize_(data.size()).copy_(data),
# CTCLoss over preds.log_softmax(2) with preds_size from torch.IntTensor([T] * batch_size), and the
# greedy decode by preds.max(2) and transpose(1, 0).contiguous().view(-1)
def crnn(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    Variable = torch.autograd.Variable

    class BidirectionalLSTM(nn.Module):

        def __init__(self, nIn, nHidden, nOut):
            super(BidirectionalLSTM, self).__init__()
            self.rnn = nn.LSTM(nIn, nHidden, bidirectional=True)
            self.embedding = nn.Linear(nHidden * 2, nOut)

        def forward(self, input):
            recurrent, _ = self.rnn(input)
            T, b, h = recurrent.size()
            t_rec = recurrent.view(T * b, h)
            output = self.embedding(t_rec)  # [T * b, nOut]
            output = output.view(T, b, -1)
            return output

    class CRNN(nn.Module):

        def __init__(self, imgH, nc, nclass, nh, n_rnn=2, leakyRelu=False):
            super(CRNN, self).__init__()
            assert imgH % 16 == 0, 'imgH has to be a multiple of 16'
            ks = [3, 3, 3, 3, 3, 3, 2]
            ps = [1, 1, 1, 1, 1, 1, 0]
            ss = [1, 1, 1, 1, 1, 1, 1]
            nm = [4, 4, 8, 8, 8, 8, 8]  # [64, 128, 256, 256, 512, 512, 512]
            cnn = nn.Sequential()

            def convRelu(i, batchNormalization=False):
                nIn = nc if i == 0 else nm[i - 1]
                nOut = nm[i]
                cnn.add_module('conv{0}'.format(i), nn.Conv2d(nIn, nOut, ks[i], ss[i], ps[i]))
                if batchNormalization:
                    cnn.add_module('batchnorm{0}'.format(i), nn.BatchNorm2d(nOut))
                if leakyRelu:
                    cnn.add_module('relu{0}'.format(i), nn.LeakyReLU(0.2, inplace=True))
                else:
                    cnn.add_module('relu{0}'.format(i), nn.ReLU(True))

            convRelu(0)
            cnn.add_module('pooling{0}'.format(0), nn.MaxPool2d(2, 2))  # 64x16x64
            convRelu(1)
            cnn.add_module('pooling{0}'.format(1), nn.MaxPool2d(2, 2))  # 128x8x32
            convRelu(2, True)
            convRelu(3)
            cnn.add_module('pooling{0}'.format(2), nn.MaxPool2d((2, 2), (2, 1), (0, 1)))  # 256x4x16
            convRelu(4, True)
            convRelu(5)
            cnn.add_module('pooling{0}'.format(3), nn.MaxPool2d((2, 2), (2, 1), (0, 1)))  # 512x2x16
            convRelu(6, True)  # 512x1x16
            self.cnn = cnn
            self.rnn = nn.Sequential(
                BidirectionalLSTM(nm[6], nh, nh),
                BidirectionalLSTM(nh, nh, nclass))

        def forward(self, input):
            # conv features
            conv = self.cnn(input)
            b, c, h, w = conv.size()
            assert h == 1, "the height of conv must be 1"
            conv = conv.squeeze(2)
            conv = conv.permute(2, 0, 1)  # [w, b, c]
            # rnn features
            output = self.rnn(conv)
            return output

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            m.weight.data.normal_(0.0, 0.02)
        elif classname.find('BatchNorm') != -1:
            m.weight.data.normal_(1.0, 0.02)
            m.bias.data.fill_(0)

    class strLabelConverter(object):
        """Convert between str and label. NOTE: Insert `blank` to the alphabet for CTC."""

        def __init__(self, alphabet, ignore_case=False):
            self._ignore_case = ignore_case
            if self._ignore_case:
                alphabet = alphabet.lower()
            self.alphabet = alphabet + '-'  # for `-1` index
            self.dict = {}
            for i, char in enumerate(alphabet):
                # NOTE: 0 is reserved for 'blank' required by wrap_ctc
                self.dict[char] = i + 1

        def encode(self, text):
            length = []
            result = []
            for item in text:
                length.append(len(item))
                for char in item:
                    index = self.dict[char]
                    result.append(index)
            text = result
            return (torch.IntTensor(text), torch.IntTensor(length))

        def decode(self, t, length, raw=False):
            if length.numel() == 1:
                length = length[0]
                assert t.numel() == length, "text with length: {} does not match declared length: {}".format(t.numel(), length)
                if raw:
                    return ''.join([self.alphabet[i - 1] for i in t])
                else:
                    char_list = []
                    for i in range(length):
                        if t[i] != 0 and (not (i > 0 and t[i - 1] == t[i])):
                            char_list.append(self.alphabet[t[i] - 1])
                    return ''.join(char_list)
            else:
                # batch mode
                assert t.numel() == length.sum(), "texts with length: {} does not match declared length: {}".format(t.numel(), length.sum())
                texts = []
                index = 0
                for i in range(length.numel()):
                    l = length[i]  # noqa: E741
                    texts.append(
                        self.decode(
                            t[index:index + l], torch.IntTensor([l]), raw=raw))
                    index += l
                return texts

    def loadData(v, data):
        v.resize_(data.size()).copy_(data)

    alphabet = '0123456789abcdefghijklmnopqrstuvwxyz'
    nclass = len(alphabet) + 1
    batchSize, imgH, imgW, nh = 2, 32, 16, 4  # the height the conv stack needs, 5 time steps
    converter = strLabelConverter(alphabet)
    criterion = nn.CTCLoss()
    torch.manual_seed(1234)
    crnn = CRNN(imgH, 1, nclass, nh)
    crnn.apply(weights_init)
    init = load(m, crnn, state)
    image = torch.FloatTensor(batchSize, 3, imgH, imgH)
    text = torch.IntTensor(batchSize * 5)  # resized by loadData
    length = torch.IntTensor(batchSize)
    image, text, length = Variable(image), Variable(text), Variable(length)
    optimizer = optim.Adam(crnn.parameters(), lr=0.001, betas=(0.5, 0.999))
    rng = np.random.default_rng(15)
    record = []
    for i in range(1):  # train.py's epochs of batches
        cpu_images = torch.tensor(rng.standard_normal((batchSize, 1, imgH, imgW)).astype(np.float32))
        cpu_texts = ['a1', 'zz'][:batchSize]
        batch_size = cpu_images.size(0)
        loadData(image, cpu_images)
        t, l = converter.encode(cpu_texts)
        loadData(text, t)
        loadData(length, l)
        preds = crnn(image).log_softmax(2)
        preds_size = Variable(torch.IntTensor([preds.size(0)] * batch_size))
        cost = criterion(preds, text, preds_size, length) / batch_size
        crnn.zero_grad()
        cost.backward()
        optimizer.step()
        record.append(cost.item())
    crnn.eval()
    with torch.no_grad():
        preds = crnn(image)
    _, preds = preds.max(2)
    preds = preds.transpose(1, 0).contiguous().view(-1)
    sim_preds = converter.decode(preds.data, preds_size.data, raw=False)
    raw_preds = converter.decode(preds.data, preds_size.data, raw=True)
    assert len(sim_preds) == batch_size and all(len(r) == preds_size[0].item() for r in raw_preds)
    # a convolution's bias ahead of a BatchNorm gets a gradient of rounding noise, which Adam scales to
    # whole steps: those are left out of the compared weights
    kept = [p for name, p in crnn.named_parameters()
            if not (name.endswith('.bias') and 'conv' in name and name.replace('conv', 'batchnorm').replace(
                '.bias', '.weight') in dict(crnn.named_parameters()))]
    return init, record + [float(v) for v in preds.tolist()] + summary(kept)


def test_crnn():
    compare(crnn)


# (r) OpenAI SpinningUp's SAC (sac/core.py and sac.py): mlp() from a sizes list with activation classes,
# SquashedGaussianMLPActor (clamped log_std, Normal(mu, std).rsample(), log_prob(...).sum(axis=-1) and
# the tanh correction (2*(np.log(2) - a - F.softplus(-2*a))).sum(axis=1)), MLPQFunction's
# torch.squeeze(q, -1), the target by deepcopy with requires_grad = False, q_params by
# itertools.chain, the ReplayBuffer's numpy arrays batched by torch.as_tensor(v, dtype=torch.float32),
# the Bellman backup under no_grad with torch.min of the two targets, the policy loss with the
# Q-networks frozen, and the polyak update by p_targ.data.mul_(polyak); p_targ.data.add_((1 - polyak) * p.data).
# The compared run takes the policy's mean (deterministic=True: rsample draws other numbers in tnet and
# torch); tnet alone runs the drawn updates too
def spinningup_sac(m, state=None, deterministic=True, updates=2):
    import itertools
    from copy import deepcopy
    torch, nn, F = m.torch, m.nn, m.F
    Normal = torch.distributions.normal.Normal  # from torch.distributions.normal import Normal
    Adam = m.optim.Adam

    def combined_shape(length, shape=None):
        if shape is None:
            return (length,)
        return (length, shape) if np.isscalar(shape) else (length, *shape)

    def mlp(sizes, activation, output_activation=nn.Identity):
        layers = []
        for j in range(len(sizes)-1):
            act = activation if j < len(sizes)-2 else output_activation
            layers += [nn.Linear(sizes[j], sizes[j+1]), act()]
        return nn.Sequential(*layers)

    LOG_STD_MAX = 2
    LOG_STD_MIN = -20

    class SquashedGaussianMLPActor(nn.Module):

        def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
            super().__init__()
            self.net = mlp([obs_dim] + list(hidden_sizes), activation, activation)
            self.mu_layer = nn.Linear(hidden_sizes[-1], act_dim)
            self.log_std_layer = nn.Linear(hidden_sizes[-1], act_dim)
            self.act_limit = act_limit

        def forward(self, obs, deterministic=False, with_logprob=True):
            net_out = self.net(obs)
            mu = self.mu_layer(net_out)
            log_std = self.log_std_layer(net_out)
            log_std = torch.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX)
            std = torch.exp(log_std)

            # Pre-squash distribution and sample
            pi_distribution = Normal(mu, std)
            if deterministic:
                # Only used for evaluating policy at test time.
                pi_action = mu
            else:
                pi_action = pi_distribution.rsample()

            if with_logprob:
                # Compute logprob from Gaussian, and then apply correction for Tanh squashing.
                logp_pi = pi_distribution.log_prob(pi_action).sum(axis=-1)
                logp_pi -= (2*(np.log(2) - pi_action - F.softplus(-2*pi_action))).sum(axis=1)
            else:
                logp_pi = None

            pi_action = torch.tanh(pi_action)
            pi_action = self.act_limit * pi_action

            return pi_action, logp_pi

    class MLPQFunction(nn.Module):

        def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
            super().__init__()
            self.q = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)

        def forward(self, obs, act):
            q = self.q(torch.cat([obs, act], dim=-1))
            return torch.squeeze(q, -1)  # Critical to ensure q has right shape.

    class MLPActorCritic(nn.Module):

        def __init__(self, obs_dim, act_dim, act_limit, hidden_sizes=(256, 256), activation=nn.ReLU):
            super().__init__()
            # build policy and value functions
            self.pi = SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, activation, act_limit)
            self.q1 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)
            self.q2 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)

        def act(self, obs, deterministic=False):
            with torch.no_grad():
                a, _ = self.pi(obs, deterministic, False)
                return a.numpy()

    class ReplayBuffer:
        """A simple FIFO experience replay buffer for SAC agents."""

        def __init__(self, obs_dim, act_dim, size):
            self.obs_buf = np.zeros(combined_shape(size, obs_dim), dtype=np.float32)
            self.obs2_buf = np.zeros(combined_shape(size, obs_dim), dtype=np.float32)
            self.act_buf = np.zeros(combined_shape(size, act_dim), dtype=np.float32)
            self.rew_buf = np.zeros(size, dtype=np.float32)
            self.done_buf = np.zeros(size, dtype=np.float32)
            self.ptr, self.size, self.max_size = 0, 0, size

        def store(self, obs, act, rew, next_obs, done):
            self.obs_buf[self.ptr] = obs
            self.obs2_buf[self.ptr] = next_obs
            self.act_buf[self.ptr] = act
            self.rew_buf[self.ptr] = rew
            self.done_buf[self.ptr] = done
            self.ptr = (self.ptr+1) % self.max_size
            self.size = min(self.size+1, self.max_size)

        def sample_batch(self, idxs):  # the repository draws idxs by np.random.randint
            batch = dict(obs=self.obs_buf[idxs],
                         obs2=self.obs2_buf[idxs],
                         act=self.act_buf[idxs],
                         rew=self.rew_buf[idxs],
                         done=self.done_buf[idxs])
            return {k: torch.as_tensor(v, dtype=torch.float32) for k, v in batch.items()}

    obs_dim, act_dim, act_limit = 3, 2, 1.0
    gamma, polyak, lr, alpha, batch_size = 0.99, 0.995, 1e-3, 0.2, 4
    torch.manual_seed(0)
    ac = MLPActorCritic(obs_dim, act_dim, act_limit, hidden_sizes=(8, 8))
    init = load(m, ac, state)
    ac_targ = deepcopy(ac)
    # Freeze target networks with respect to optimizers (only update via polyak averaging)
    for p in ac_targ.parameters():
        p.requires_grad = False
    # List of parameters for both Q-networks (save this for convenience)
    q_params = itertools.chain(ac.q1.parameters(), ac.q2.parameters())
    replay_buffer = ReplayBuffer(obs_dim=obs_dim, act_dim=act_dim, size=16)
    rng = np.random.default_rng(16)
    for t in range(8):
        o = rng.standard_normal(obs_dim).astype(np.float32)
        a = ac.act(torch.as_tensor(o, dtype=torch.float32), deterministic=True)
        replay_buffer.store(o, a, float(rng.standard_normal()), rng.standard_normal(obs_dim), float(t == 7))

    def compute_loss_q(data):
        o, a, r, o2, d = data['obs'], data['act'], data['rew'], data['obs2'], data['done']
        q1 = ac.q1(o, a)
        q2 = ac.q2(o, a)
        # Bellman backup for Q functions
        with torch.no_grad():
            # Target actions come from *current* policy
            a2, logp_a2 = ac.pi(o2, deterministic)
            # Target Q-values
            q1_pi_targ = ac_targ.q1(o2, a2)
            q2_pi_targ = ac_targ.q2(o2, a2)
            q_pi_targ = torch.min(q1_pi_targ, q2_pi_targ)
            backup = r + gamma * (1 - d) * (q_pi_targ - alpha * logp_a2)
        # MSE loss against Bellman backup
        loss_q1 = ((q1 - backup)**2).mean()
        loss_q2 = ((q2 - backup)**2).mean()
        loss_q = loss_q1 + loss_q2
        # Useful info for logging
        q_info = dict(Q1Vals=q1.detach().numpy(), Q2Vals=q2.detach().numpy())
        return loss_q, q_info

    def compute_loss_pi(data):
        o = data['obs']
        pi, logp_pi = ac.pi(o, deterministic)
        q1_pi = ac.q1(o, pi)
        q2_pi = ac.q2(o, pi)
        q_pi = torch.min(q1_pi, q2_pi)
        # Entropy-regularized policy loss
        loss_pi = (alpha * logp_pi - q_pi).mean()
        # Useful info for logging
        pi_info = dict(LogPi=logp_pi.detach().numpy())
        return loss_pi, pi_info

    pi_optimizer = Adam(ac.pi.parameters(), lr=lr)
    q_optimizer = Adam(q_params, lr=lr)

    def update(data):
        # First run one gradient descent step for Q1 and Q2
        q_optimizer.zero_grad()
        loss_q, q_info = compute_loss_q(data)
        loss_q.backward()
        q_optimizer.step()
        # Freeze Q-networks so you don't waste computational effort
        # computing gradients for them during the policy learning step.
        for p in itertools.chain(ac.q1.parameters(), ac.q2.parameters()):
            p.requires_grad = False
        # Next run one gradient descent step for pi.
        pi_optimizer.zero_grad()
        loss_pi, pi_info = compute_loss_pi(data)
        loss_pi.backward()
        pi_optimizer.step()
        # Unfreeze Q-networks so you can optimize it at next DDPG step.
        for p in itertools.chain(ac.q1.parameters(), ac.q2.parameters()):
            p.requires_grad = True
        # Finally, update target networks by polyak averaging.
        with torch.no_grad():
            for p, p_targ in zip(ac.parameters(), ac_targ.parameters()):
                # NB: We use an in-place operations "mul_", "add_" to update target
                # params, as opposed to "mul" and "add", which would make new tensors.
                p_targ.data.mul_(polyak)
                p_targ.data.add_((1 - polyak) * p.data)
        return [loss_q.item(), loss_pi.item(), float(q_info['Q1Vals'].sum()), float(pi_info['LogPi'].sum())]

    record = []
    for j in range(updates):
        batch = replay_buffer.sample_batch(rng.integers(0, replay_buffer.size, size=batch_size))
        record += update(data=batch)
    return init, record + summary(ac.parameters()) + summary(ac_targ.parameters())


def test_spinningup_sac():
    compare(spinningup_sac)
    _, record = spinningup_sac(imports("tnet"), deterministic=False, updates=1)  # rsample's draws: tnet alone
    assert all(math.isfinite(v) for v in record)


# (s) d2l.ai's chapters 3-4 from scratch: synthetic_data by torch.normal(0, 1, (n, len(w))) and y += noise,
# data_iter's random.shuffle of a list of indices batched by torch.tensor(indices[i: min(i + batch_size, n)]),
# parameters from torch.normal(0, 0.01, size=..., requires_grad=True), sgd's param -= lr * param.grad /
# batch_size and param.grad.zero_() under no_grad, softmax and cross_entropy written by hand
# (y_hat[range(len(y_hat)), y]), accuracy by y_hat.argmax(axis=1) and cmp.type(y.dtype), the Accumulator,
# train_epoch_ch3 switching on isinstance(updater, torch.optim.Optimizer), and the concise MLP's
# init_weights by type(m) == nn.Linear with CrossEntropyLoss(reduction='none'). tnet draws the data
# and the parameters; torch starts from tnet's
def d2l_from_scratch(m, state=None):
    import random
    torch, nn = m.torch, m.nn
    drawn = {}

    def draw(name, make):
        """A torch.normal the script makes: tnet's numbers, which torch's run reads back."""
        value = make() if state is None else torch.tensor(state[name]).requires_grad_(make().requires_grad)
        drawn[name] = value.detach().numpy().copy()
        return value

    # 3.2 linear regression from scratch
    def synthetic_data(w, b, num_examples):
        """Generate y = Xw + b + noise."""
        X = draw("X", lambda: torch.normal(0, 1, (num_examples, len(w))))
        y = torch.matmul(X, w) + b
        y += draw("noise", lambda: torch.normal(0, 0.01, y.shape))
        return X, y.reshape((-1, 1))

    true_w = torch.tensor([2, -3.4])
    true_b = 4.2
    features, labels = synthetic_data(true_w, true_b, 40)
    random.seed(0)

    def data_iter(batch_size, features, labels):
        num_examples = len(features)
        indices = list(range(num_examples))
        # The examples are read at random, in no particular order
        random.shuffle(indices)
        for i in range(0, num_examples, batch_size):
            batch_indices = torch.tensor(indices[i: min(i + batch_size, num_examples)])
            yield features[batch_indices], labels[batch_indices]

    w = draw("w", lambda: torch.normal(0, 0.01, size=(2, 1), requires_grad=True))
    b = torch.zeros(1, requires_grad=True)

    def linreg(X, w, b):
        """The linear regression model."""
        return torch.matmul(X, w) + b

    def squared_loss(y_hat, y):
        """Squared loss."""
        return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2

    def sgd(params, lr, batch_size):
        """Minibatch stochastic gradient descent."""
        with torch.no_grad():
            for param in params:
                param -= lr * param.grad / batch_size
                param.grad.zero_()

    record = []
    lr, num_epochs, batch_size = 0.03, 2, 10
    net, loss = linreg, squared_loss
    for epoch in range(num_epochs):
        for X, y in data_iter(batch_size, features, labels):
            l = loss(net(X, w, b), y)  # noqa: E741  Minibatch loss in `X` and `y`
            # Compute gradient on `l` with respect to [`w`, `b`]
            l.sum().backward()
            sgd([w, b], lr, batch_size)  # Update parameters using their gradient
        with torch.no_grad():
            train_l = loss(net(features, w, b), labels)
            record.append(float(train_l.mean()))
    record += (true_w - w.reshape(true_w.shape)).tolist() + [true_b - b.item()]

    # 3.6 softmax regression from scratch, on Fashion-MNIST-shaped batches (8x8 here)
    class Accumulator:
        """For accumulating sums over `n` variables."""
        def __init__(self, n):
            self.data = [0.0] * n

        def add(self, *args):
            self.data = [a + float(b) for a, b in zip(self.data, args)]

        def reset(self):
            self.data = [0.0] * len(self.data)

        def __getitem__(self, idx):
            return self.data[idx]

    def accuracy(y_hat, y):
        """Compute the number of correct predictions."""
        if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
            y_hat = y_hat.argmax(axis=1)
        cmp = y_hat.type(y.dtype) == y
        return float(cmp.type(y.dtype).sum())

    def evaluate_accuracy(net, data_iter):
        """Compute the accuracy for a model on a dataset."""
        if isinstance(net, torch.nn.Module):
            net.eval()  # Set the model to evaluation mode
        metric = Accumulator(2)  # No. of correct predictions, no. of predictions
        with torch.no_grad():
            for X, y in data_iter:
                metric.add(accuracy(net(X), y), y.numel())
        return metric[0] / metric[1]

    def train_epoch_ch3(net, train_iter, loss, updater):
        """The training loop defined in Chapter 3."""
        # Set the model to training mode
        if isinstance(net, torch.nn.Module):
            net.train()
        # Sum of training loss, sum of training accuracy, no. of examples
        metric = Accumulator(3)
        for X, y in train_iter:
            # Compute gradients and update parameters
            y_hat = net(X)
            l = loss(y_hat, y)  # noqa: E741
            if isinstance(updater, torch.optim.Optimizer):
                # Using PyTorch in-built optimizer & loss criterion
                updater.zero_grad()
                l.mean().backward()
                updater.step()
            else:
                # Using custom built optimizer & loss criterion
                l.sum().backward()
                updater(X.shape[0])
            metric.add(float(l.sum()), accuracy(y_hat, y), y.numel())
        # Return training loss and training accuracy
        return metric[0] / metric[2], metric[1] / metric[2]

    rng = np.random.default_rng(17)
    images = rng.random((12, 1, 8, 8)).astype(np.float32)
    classes = rng.integers(0, 10, 12)
    dataset = m.data.TensorDataset(torch.tensor(images), torch.tensor(classes))
    train_iter = m.data.DataLoader(dataset, batch_size=6, shuffle=False)
    num_inputs, num_outputs = 64, 10
    W = draw("W", lambda: torch.normal(0, 0.01, size=(num_inputs, num_outputs), requires_grad=True))
    b = torch.zeros(num_outputs, requires_grad=True)

    def softmax(X):
        X_exp = torch.exp(X)
        partition = X_exp.sum(1, keepdim=True)
        return X_exp / partition  # The broadcasting mechanism is applied here

    def net(X):
        return softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)

    def cross_entropy(y_hat, y):
        return - torch.log(y_hat[range(len(y_hat)), y])

    def updater(batch_size):
        return sgd([W, b], 0.1, batch_size)
    record += list(train_epoch_ch3(net, train_iter, cross_entropy, updater))
    record.append(evaluate_accuracy(net, train_iter))

    # 4.3 concise MLP
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))

    def init_weights(m_):
        if type(m_) == nn.Linear:
            nn.init.normal_(m_.weight, std=0.01)
    torch.manual_seed(0)
    net.apply(init_weights)
    mlp_state = load(m, net, None if state is None else {k[4:]: v for k, v in state.items() if k.startswith("mlp.")})
    loss = nn.CrossEntropyLoss(reduction='none')
    trainer = torch.optim.SGD(net.parameters(), lr=0.1)
    record += list(train_epoch_ch3(net, train_iter, loss, trainer))
    record.append(evaluate_accuracy(net, train_iter))
    init = dict(drawn, **{"mlp." + k: v for k, v in mlp_state.items()})
    return init, record + summary([w, b, W]) + summary(net.parameters())


def test_d2l_from_scratch():
    compare(d2l_from_scratch)
