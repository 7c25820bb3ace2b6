"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: Satorras et al.'s EGNN (E(n)-equivariant graph layers: unsorted_segment_sum/mean by
new_full and scatter_add_ over expanded ids, a shared nn.SiLU instance, layers reached through self._modules);
DeepGraphLearning's KnowledgeGraphEmbedding (TransE, DistMult, ComplEx, RotatE and pRotatE scores on index_select
rows of Parameter tables, self-adversarial negative sampling, the L3 regularizer, the filtered ranking by argsort
and nonzero); rosinality's style-based-gan-pytorch (EqualLR as a forward pre-hook that deletes and re-registers the
weight, a blur Function whose backward is another Function, progressive growing, WGAN-GP and R1); huangleiBuaa's
IterNorm (whitening by Newton's iterations in a Function with a hand-written backward and the deprecated baddbmm
overloads); dasguptar's Tree-LSTM (recursion over Python trees, KLDivLoss on sparse label distributions, Adagrad);
dreamquark's TabNet (ghost batch norm, GLU blocks, a sparsemax Function, priors); 4uiiurz1's deformable convolution
v2 (gathered bilinear corners, a legacy backward hook); mean-field ADVI by hand on torch.distributions (supports
mapped from the reals by biject_to, which tnet lacked until this file); Megvii's YOLOX head with SimOTA label
assignment (whose topk(k=a 0-d int32 tensor) crashed tnet's sort kernel: integer tensors now pass for ints, as
torch's parser takes them). Each runs in tnet, then in torch
from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers,
agree. Numpy draws what a script draws; shapes are tiny and runs take one or two steps. Batch norms see at least
three samples: over two, the normalised output hardly depends on the input and its gradient is rounding noise, that
Adam turns into steps of +-lr."""
import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) vgsatorras/egnn (models/gcl.py's E_GCL, models/egnn_clean/egnn_clean.py): edge_model by torch.cat of
# h[row], h[col] and the radial, an attention gate, coord2radial with a detached norm, coord_model by
# unsorted_segment_mean (data.new_full(shape, 0), segment_ids.unsqueeze(-1).expand(-1, d), scatter_add_, a count
# clamped to one), node_model by unsorted_segment_sum and a residual, the coord MLP's last layer by xavier_uniform_
# with gain=0.001, one act_fn=nn.SiLU() instance in every Sequential, add_module("gcl_%d" % i) and
# self._modules["gcl_%d" % i]; get_edges_batch (torch.LongTensor lists offset per graph, torch.cat); the n-body
# example's node features sqrt(sum(vel ** 2)) and edge attributes (charges product and squared distance) by
# .detach(), an MSE on the predicted positions, Adam; then a rotation and translation of the inputs by a numpy
# orthogonal matrix: the features are unchanged and the positions turn with them
def egnn(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(10)
    n_nodes, batch_size, n_feat, x_dim = 4, 2, 1, 3

    def unsorted_segment_sum(data, segment_ids, num_segments):
        result_shape = (num_segments, data.size(1))
        result = data.new_full(result_shape, 0)  # Init empty result tensor.
        segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
        result.scatter_add_(0, segment_ids, data)
        return result

    def unsorted_segment_mean(data, segment_ids, num_segments):
        result_shape = (num_segments, data.size(1))
        segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
        result = data.new_full(result_shape, 0)  # Init empty result tensor.
        count = data.new_full(result_shape, 0)
        result.scatter_add_(0, segment_ids, data)
        count.scatter_add_(0, segment_ids, torch.ones_like(data))
        return result / count.clamp(min=1)

    class E_GCL(nn.Module):
        def __init__(self, input_nf, output_nf, hidden_nf, edges_in_d=0, act_fn=nn.SiLU(), residual=True,
                     attention=False, normalize=False, coords_agg='mean', tanh=False):
            super(E_GCL, self).__init__()
            input_edge = input_nf * 2
            self.residual = residual
            self.attention = attention
            self.normalize = normalize
            self.coords_agg = coords_agg
            self.tanh = tanh
            self.epsilon = 1e-8
            edge_coords_nf = 1
            self.edge_mlp = nn.Sequential(nn.Linear(input_edge + edge_coords_nf + edges_in_d, hidden_nf), act_fn,
                                          nn.Linear(hidden_nf, hidden_nf), act_fn)
            self.node_mlp = nn.Sequential(nn.Linear(hidden_nf + input_nf, hidden_nf), act_fn,
                                          nn.Linear(hidden_nf, output_nf))
            layer = nn.Linear(hidden_nf, 1, bias=False)
            torch.nn.init.xavier_uniform_(layer.weight, gain=0.001)
            coord_mlp = []
            coord_mlp.append(nn.Linear(hidden_nf, hidden_nf))
            coord_mlp.append(act_fn)
            coord_mlp.append(layer)
            if self.tanh:
                coord_mlp.append(nn.Tanh())
            self.coord_mlp = nn.Sequential(*coord_mlp)
            if self.attention:
                self.att_mlp = nn.Sequential(nn.Linear(hidden_nf, 1), nn.Sigmoid())

        def edge_model(self, source, target, radial, edge_attr):
            if edge_attr is None:  # Unused.
                out = torch.cat([source, target, radial], dim=1)
            else:
                out = torch.cat([source, target, radial, edge_attr], dim=1)
            out = self.edge_mlp(out)
            if self.attention:
                att_val = self.att_mlp(out)
                out = out * att_val
            return out

        def node_model(self, x, edge_index, edge_attr, node_attr):
            row, col = edge_index
            agg = unsorted_segment_sum(edge_attr, row, num_segments=x.size(0))
            if node_attr is not None:
                agg = torch.cat([x, agg, node_attr], dim=1)
            else:
                agg = torch.cat([x, agg], dim=1)
            out = self.node_mlp(agg)
            if self.residual:
                out = x + out
            return out, agg

        def coord_model(self, coord, edge_index, coord_diff, edge_feat):
            row, col = edge_index
            trans = coord_diff * self.coord_mlp(edge_feat)
            if self.coords_agg == 'sum':
                agg = unsorted_segment_sum(trans, row, num_segments=coord.size(0))
            elif self.coords_agg == 'mean':
                agg = unsorted_segment_mean(trans, row, num_segments=coord.size(0))
            else:
                raise Exception('Wrong coords_agg parameter' % self.coords_agg)
            coord = coord + agg
            return coord

        def coord2radial(self, edge_index, coord):
            row, col = edge_index
            coord_diff = coord[row] - coord[col]
            radial = torch.sum(coord_diff ** 2, 1).unsqueeze(1)
            if self.normalize:
                norm = torch.sqrt(radial).detach() + self.epsilon
                coord_diff = coord_diff / norm
            return radial, coord_diff

        def forward(self, h, edge_index, coord, edge_attr=None, node_attr=None):
            row, col = edge_index
            radial, coord_diff = self.coord2radial(edge_index, coord)
            edge_feat = self.edge_model(h[row], h[col], radial, edge_attr)
            coord = self.coord_model(coord, edge_index, coord_diff, edge_feat)
            h, agg = self.node_model(h, edge_index, edge_feat, node_attr)
            return h, coord, edge_attr

    class EGNN(nn.Module):
        def __init__(self, in_node_nf, hidden_nf, out_node_nf, in_edge_nf=0, device='cpu', act_fn=nn.SiLU(),
                     n_layers=4, residual=True, attention=False, normalize=False, tanh=False):
            super(EGNN, self).__init__()
            self.hidden_nf = hidden_nf
            self.device = device
            self.n_layers = n_layers
            self.embedding_in = nn.Linear(in_node_nf, self.hidden_nf)
            self.embedding_out = nn.Linear(self.hidden_nf, out_node_nf)
            for i in range(0, n_layers):
                self.add_module("gcl_%d" % i, E_GCL(self.hidden_nf, self.hidden_nf, self.hidden_nf,
                                                    edges_in_d=in_edge_nf, act_fn=act_fn, residual=residual,
                                                    attention=attention, normalize=normalize, tanh=tanh))
            self.to(self.device)

        def forward(self, h, x, edges, edge_attr):
            h = self.embedding_in(h)
            for i in range(0, self.n_layers):
                h, x, _ = self._modules["gcl_%d" % i](h, edges, x, edge_attr=edge_attr)
            h = self.embedding_out(h)
            return h, x

    def get_edges(n_nodes):
        rows, cols = [], []
        for i in range(n_nodes):
            for j in range(n_nodes):
                if i != j:
                    rows.append(i)
                    cols.append(j)
        edges = [rows, cols]
        return edges

    def get_edges_batch(n_nodes, batch_size):
        edges = get_edges(n_nodes)
        edge_attr = torch.ones(len(edges[0]) * batch_size, 1)
        edges = [torch.LongTensor(edges[0]), torch.LongTensor(edges[1])]
        if batch_size == 1:
            return edges, edge_attr
        elif batch_size > 1:
            rows, cols = [], []
            for i in range(batch_size):
                rows.append(edges[0] + n_nodes * i)
                cols.append(edges[1] + n_nodes * i)
            edges = [torch.cat(rows), torch.cat(cols)]
        return edges, edge_attr

    edges, edge_attr = get_edges_batch(n_nodes, batch_size)
    model = EGNN(in_node_nf=n_feat, hidden_nf=6, out_node_nf=1, in_edge_nf=2, n_layers=2, attention=True,
                 normalize=True, tanh=True)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-12)
    loss_mse = nn.MSELoss()
    losses = []
    charges = torch.tensor(rng.choice([-1.0, 1.0], (batch_size * n_nodes, 1)).astype(np.float32))
    for step in range(2):
        loc = torch.tensor(normal(rng, batch_size * n_nodes, x_dim))
        vel = torch.tensor(normal(rng, batch_size * n_nodes, x_dim))
        loc_end = loc + 0.1 * vel
        optimizer.zero_grad()
        nodes = torch.sqrt(torch.sum(vel ** 2, dim=1)).unsqueeze(1).detach()
        rows, cols = edges
        loc_dist = torch.sum((loc[rows] - loc[cols]) ** 2, 1).unsqueeze(1)  # relative distances among locations
        edge_attr_full = torch.cat([charges[rows] * charges[cols], loc_dist], 1).detach()
        h, loc_pred = model(nodes, loc.detach(), edges, edge_attr_full)
        loss = loss_mse(loc_pred, loc_end)
        loss.backward()
        optimizer.step()
        losses += [loss.item(), h.sum().item()]
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    rotation, shift = torch.tensor(q.astype(np.float32)), torch.tensor(normal(rng, 1, 3))
    with torch.no_grad():
        h1, x1 = model(nodes, loc, edges, edge_attr_full)
        h2, x2 = model(nodes, loc @ rotation + shift, edges, edge_attr_full)
    losses += [(h1 - h2).abs().max().item(), (x1 @ rotation + shift - x2).abs().max().item(), x1.sum().item()]
    return init, losses + summary(model.parameters())


def test_egnn():
    compare(egnn)


# (b) DeepGraphLearning's KnowledgeGraphEmbedding (codes/model.py, codes/dataloader.py): gamma and embedding_range
# as nn.Parameter(torch.Tensor([v]), requires_grad=False), nn.init.uniform_(tensor=, a=-r.item(), b=r.item()) on
# Parameter tables, torch.index_select rows for 'single', 'head-batch' and 'tail-batch' samples, TransE (norm p=1
# over dim 2), DistMult, ComplEx and RotatE by torch.chunk(2, dim=2), RotatE's phases cos/sin and
# torch.stack([re, im], dim=0).norm(dim=0), pRotatE's modulus; the dataloader's static collate_fn by torch.stack and
# torch.sqrt(1 / torch.Tensor([count])) subsampling weights, a BidirectionalOneShotIterator alternating two
# DataLoaders by generators; train_step's self-adversarial negative sampling (softmax(score * temperature).detach()
# * logsigmoid(-score)), weighted positive and negative losses, the L3 regularizer (norm(p=3) ** 3); Adam over
# filter(lambda p: p.requires_grad, ...); test_step's filter bias, argsort(descending=True) and (argsort[i, :] ==
# positive_arg[i]).nonzero() ranks
def knowledge_graph_embedding(m, state=None, model_name="RotatE"):
    torch, nn, F, data = m.torch, m.nn, m.F, m.data
    torch.manual_seed(0)
    rng = np.random.default_rng(11)
    nentity, nrelation, hidden_dim, negative_sample_size = 7, 3, 4, 3
    triples = [(int(h), int(r), int(t)) for h, r, t in zip(rng.integers(0, nentity, 6), rng.integers(0, nrelation, 6),
                                                            rng.integers(0, nentity, 6))]

    class KGEModel(nn.Module):
        def __init__(self, model_name, nentity, nrelation, hidden_dim, gamma, double_entity_embedding=False,
                     double_relation_embedding=False):
            super(KGEModel, self).__init__()
            self.model_name = model_name
            self.nentity = nentity
            self.nrelation = nrelation
            self.hidden_dim = hidden_dim
            self.epsilon = 2.0
            self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)
            self.embedding_range = nn.Parameter(torch.Tensor([(self.gamma.item() + self.epsilon) / hidden_dim]),
                                                requires_grad=False)
            self.entity_dim = hidden_dim * 2 if double_entity_embedding else hidden_dim
            self.relation_dim = hidden_dim * 2 if double_relation_embedding else hidden_dim
            self.entity_embedding = nn.Parameter(torch.zeros(nentity, self.entity_dim))
            nn.init.uniform_(tensor=self.entity_embedding, a=-self.embedding_range.item(),
                             b=self.embedding_range.item())
            self.relation_embedding = nn.Parameter(torch.zeros(nrelation, self.relation_dim))
            nn.init.uniform_(tensor=self.relation_embedding, a=-self.embedding_range.item(),
                             b=self.embedding_range.item())
            if model_name == 'pRotatE':
                self.modulus = nn.Parameter(torch.Tensor([[0.5 * self.embedding_range.item()]]))

        def forward(self, sample, mode='single'):
            if mode == 'single':
                batch_size, negative_sample_size = sample.size(0), 1
                head = torch.index_select(self.entity_embedding, dim=0, index=sample[:, 0]).unsqueeze(1)
                relation = torch.index_select(self.relation_embedding, dim=0, index=sample[:, 1]).unsqueeze(1)
                tail = torch.index_select(self.entity_embedding, dim=0, index=sample[:, 2]).unsqueeze(1)
            elif mode == 'head-batch':
                tail_part, head_part = sample
                batch_size, negative_sample_size = head_part.size(0), head_part.size(1)
                head = torch.index_select(self.entity_embedding, dim=0,
                                          index=head_part.view(-1)).view(batch_size, negative_sample_size, -1)
                relation = torch.index_select(self.relation_embedding, dim=0, index=tail_part[:, 1]).unsqueeze(1)
                tail = torch.index_select(self.entity_embedding, dim=0, index=tail_part[:, 2]).unsqueeze(1)
            elif mode == 'tail-batch':
                head_part, tail_part = sample
                batch_size, negative_sample_size = tail_part.size(0), tail_part.size(1)
                head = torch.index_select(self.entity_embedding, dim=0, index=head_part[:, 0]).unsqueeze(1)
                relation = torch.index_select(self.relation_embedding, dim=0, index=head_part[:, 1]).unsqueeze(1)
                tail = torch.index_select(self.entity_embedding, dim=0,
                                          index=tail_part.view(-1)).view(batch_size, negative_sample_size, -1)
            else:
                raise ValueError('mode %s not supported' % mode)
            model_func = {'TransE': self.TransE, 'DistMult': self.DistMult, 'ComplEx': self.ComplEx,
                          'RotatE': self.RotatE, 'pRotatE': self.pRotatE}
            return model_func[self.model_name](head, relation, tail, mode)

        def TransE(self, head, relation, tail, mode):
            if mode == 'head-batch':
                score = head + (relation - tail)
            else:
                score = (head + relation) - tail
            score = self.gamma.item() - torch.norm(score, p=1, dim=2)
            return score

        def DistMult(self, head, relation, tail, mode):
            if mode == 'head-batch':
                score = head * (relation * tail)
            else:
                score = (head * relation) * tail
            return score.sum(dim=2)

        def ComplEx(self, head, relation, tail, mode):
            re_head, im_head = torch.chunk(head, 2, dim=2)
            re_relation, im_relation = torch.chunk(relation, 2, dim=2)
            re_tail, im_tail = torch.chunk(tail, 2, dim=2)
            if mode == 'head-batch':
                re_score = re_relation * re_tail + im_relation * im_tail
                im_score = re_relation * im_tail - im_relation * re_tail
                score = re_head * re_score + im_head * im_score
            else:
                re_score = re_head * re_relation - im_head * im_relation
                im_score = re_head * im_relation + im_head * re_relation
                score = re_score * re_tail + im_score * im_tail
            return score.sum(dim=2)

        def RotatE(self, head, relation, tail, mode):
            pi = 3.14159265358979323846
            re_head, im_head = torch.chunk(head, 2, dim=2)
            re_tail, im_tail = torch.chunk(tail, 2, dim=2)
            phase_relation = relation / (self.embedding_range.item() / pi)
            re_relation = torch.cos(phase_relation)
            im_relation = torch.sin(phase_relation)
            if mode == 'head-batch':
                re_score = re_relation * re_tail + im_relation * im_tail
                im_score = re_relation * im_tail - im_relation * re_tail
                re_score = re_score - re_head
                im_score = im_score - im_head
            else:
                re_score = re_head * re_relation - im_head * im_relation
                im_score = re_head * im_relation + im_head * re_relation
                re_score = re_score - re_tail
                im_score = im_score - im_tail
            score = torch.stack([re_score, im_score], dim=0)
            score = score.norm(dim=0)
            score = self.gamma.item() - score.sum(dim=2)
            return score

        def pRotatE(self, head, relation, tail, mode):
            pi = 3.14159262358979323846
            phase_head = head / (self.embedding_range.item() / pi)
            phase_relation = relation / (self.embedding_range.item() / pi)
            phase_tail = tail / (self.embedding_range.item() / pi)
            if mode == 'head-batch':
                score = phase_head + (phase_relation - phase_tail)
            else:
                score = (phase_head + phase_relation) - phase_tail
            score = torch.sin(score)
            score = torch.abs(score)
            score = self.gamma.item() - score.sum(dim=2) * self.modulus
            return score

    class TrainDataset(data.Dataset):
        def __init__(self, triples, nentity, nrelation, negative_sample_size, mode):
            self.len = len(triples)
            self.triples = triples
            self.nentity = nentity
            self.negative_sample_size = negative_sample_size
            self.mode = mode
            self.count = {}
            for head, relation, tail in triples:
                self.count[(head, relation)] = self.count.get((head, relation), 3) + 1
                self.count[(tail, -relation - 1)] = self.count.get((tail, -relation - 1), 3) + 1

        def __len__(self):
            return self.len

        def __getitem__(self, idx):
            positive_sample = self.triples[idx]
            head, relation, tail = positive_sample
            subsampling_weight = self.count[(head, relation)] + self.count[(tail, -relation - 1)]
            subsampling_weight = torch.sqrt(1 / torch.Tensor([subsampling_weight]))
            negative_sample = rng.integers(0, self.nentity, self.negative_sample_size)  # no filtering: tiny graph
            negative_sample = torch.LongTensor(negative_sample)
            positive_sample = torch.LongTensor(positive_sample)
            return positive_sample, negative_sample, subsampling_weight, self.mode

        @staticmethod
        def collate_fn(data):
            positive_sample = torch.stack([_[0] for _ in data], dim=0)
            negative_sample = torch.stack([_[1] for _ in data], dim=0)
            subsample_weight = torch.cat([_[2] for _ in data], dim=0)
            mode = data[0][3]
            return positive_sample, negative_sample, subsample_weight, mode

    class BidirectionalOneShotIterator(object):
        def __init__(self, dataloader_head, dataloader_tail):
            self.iterator_head = self.one_shot_iterator(dataloader_head)
            self.iterator_tail = self.one_shot_iterator(dataloader_tail)
            self.step = 0

        def __next__(self):
            self.step += 1
            if self.step % 2 == 0:
                data = next(self.iterator_head)
            else:
                data = next(self.iterator_tail)
            return data

        @staticmethod
        def one_shot_iterator(dataloader):
            while True:
                for data in dataloader:
                    yield data

    gamma = {"TransE": 6.0, "pRotatE": 6.0}.get(model_name, 3.0)
    double = model_name in ("RotatE", "ComplEx")
    kge_model = KGEModel(model_name, nentity, nrelation, hidden_dim, gamma, double_entity_embedding=double,
                         double_relation_embedding=model_name == "ComplEx")
    init = load(m, kge_model, state)
    train_dataloader_head = data.DataLoader(TrainDataset(triples, nentity, nrelation, negative_sample_size,
                                                         'head-batch'), batch_size=3, shuffle=False,
                                            collate_fn=TrainDataset.collate_fn)
    train_dataloader_tail = data.DataLoader(TrainDataset(triples, nentity, nrelation, negative_sample_size,
                                                         'tail-batch'), batch_size=3, shuffle=False,
                                            collate_fn=TrainDataset.collate_fn)
    train_iterator = BidirectionalOneShotIterator(train_dataloader_head, train_dataloader_tail)
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, kge_model.parameters()), lr=0.01)
    adversarial_temperature, regularization = 1.0, 0.01
    losses = []
    for step in range(2):
        kge_model.train()
        optimizer.zero_grad()
        positive_sample, negative_sample, subsampling_weight, mode = next(train_iterator)
        negative_score = kge_model((positive_sample, negative_sample), mode=mode)
        negative_score = (F.softmax(negative_score * adversarial_temperature, dim=1).detach()
                          * F.logsigmoid(-negative_score)).sum(dim=1)
        positive_score = kge_model(positive_sample)
        positive_score = F.logsigmoid(positive_score).squeeze(dim=1)
        positive_sample_loss = - (subsampling_weight * positive_score).sum() / subsampling_weight.sum()
        negative_sample_loss = - (subsampling_weight * negative_score).sum() / subsampling_weight.sum()
        loss = (positive_sample_loss + negative_sample_loss) / 2
        reg = regularization * (kge_model.entity_embedding.norm(p=3) ** 3
                                + kge_model.relation_embedding.norm(p=3).norm(p=3) ** 3)
        loss = loss + reg
        loss.backward()
        optimizer.step()
        losses += [positive_sample_loss.item(), negative_sample_loss.item(), loss.item()]
    kge_model.eval()
    with torch.no_grad():
        positive_sample = torch.LongTensor(triples[:3])
        negative_sample = torch.arange(nentity).unsqueeze(0).repeat(3, 1)
        filter_bias = torch.zeros(3, nentity)
        filter_bias[0, 1] = -1
        score = kge_model((positive_sample, negative_sample), 'tail-batch')
        score += filter_bias
        argsort = torch.argsort(score, dim=1, descending=True)
        positive_arg = positive_sample[:, 2]
        for i in range(3):
            ranking = (argsort[i, :] == positive_arg[i]).nonzero()
            assert ranking.size(0) == 1
            ranking = 1 + ranking.item()
            losses += [1.0 / ranking, 1.0 if ranking <= 3 else 0.0]
        losses.append(score.sum().item())
    return init, losses + summary(kge_model.parameters())


def test_knowledge_graph_embedding_rotate():
    compare(knowledge_graph_embedding)


def test_knowledge_graph_embedding_others():
    for name in ("TransE", "DistMult", "ComplEx", "pRotatE"):
        compare(knowledge_graph_embedding, model_name=name)


# (c) rosinality's style-based-gan-pytorch (model.py, train.py): EqualLR as a forward pre-hook (del
# module._parameters[name], register_parameter(name + '_orig'), setattr of the scaled weight each call, fan_in from
# weight.data[0][0].numel()), the blur as an autograd Function whose backward applies a second Function (so the
# R1 and WGAN-GP penalties differentiate twice through it), FusedUpsample's averaged padded kernel by
# conv_transpose2d, FusedDownsample, AdaptiveInstanceNorm (InstanceNorm2d, style.linear.bias.data[:c] = 1),
# NoiseInjection, the minibatch std as a 0-d mean expanded to (b, 1, 4, 4), progressive growing with alpha fading
# F.interpolate(scale_factor=2) and avg_pool2d skips; train.py's add_param_group({'params': style.parameters(),
# 'lr': lr * 0.01, 'mult': 0.01}) and adjust_lr by group.get('mult', 1), requires_grad, accumulate with the old
# add_(1 - decay, tensor) signature, the WGAN-GP loss (mean - 0.001 * mean of squares, eps from numpy, x_hat by
# .data, norm(2, dim=1)) and the R1 loss (softplus, backward(retain_graph=True), grad with create_graph=True)
def style_based_gan(m, state=None, loss_kind="wgan-gp", step=2):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    from math import sqrt
    autograd = import_module(torch.__name__ + ".autograd")
    Function, grad = autograd.Function, autograd.grad
    torch.manual_seed(0)
    rng = np.random.default_rng(12)
    code_size, batch = 6, 2

    class EqualLR:
        def __init__(self, name):
            self.name = name

        def compute_weight(self, module):
            weight = getattr(module, self.name + '_orig')
            fan_in = weight.data.size(1) * weight.data[0][0].numel()
            return weight * sqrt(2 / fan_in)

        @staticmethod
        def apply(module, name):
            fn = EqualLR(name)
            weight = getattr(module, name)
            del module._parameters[name]
            module.register_parameter(name + '_orig', nn.Parameter(weight.data))
            module.register_forward_pre_hook(fn)
            return fn

        def __call__(self, module, input):
            weight = self.compute_weight(module)
            setattr(module, self.name, weight)

    def equal_lr(module, name='weight'):
        EqualLR.apply(module, name)
        return module

    class FusedUpsample(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, padding=0):
            super().__init__()
            weight = torch.randn(in_channel, out_channel, kernel_size, kernel_size)
            bias = torch.zeros(out_channel)
            fan_in = in_channel * kernel_size * kernel_size
            self.multiplier = sqrt(2 / fan_in)
            self.weight = nn.Parameter(weight)
            self.bias = nn.Parameter(bias)
            self.pad = padding

        def forward(self, input):
            weight = F.pad(self.weight * self.multiplier, [1, 1, 1, 1])
            weight = (weight[:, :, 1:, 1:] + weight[:, :, :-1, 1:] + weight[:, :, 1:, :-1]
                      + weight[:, :, :-1, :-1]) / 4
            out = F.conv_transpose2d(input, weight, self.bias, stride=2, padding=self.pad)
            return out

    class FusedDownsample(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, padding=0):
            super().__init__()
            weight = torch.randn(out_channel, in_channel, kernel_size, kernel_size)
            bias = torch.zeros(out_channel)
            fan_in = in_channel * kernel_size * kernel_size
            self.multiplier = sqrt(2 / fan_in)
            self.weight = nn.Parameter(weight)
            self.bias = nn.Parameter(bias)
            self.pad = padding

        def forward(self, input):
            weight = F.pad(self.weight * self.multiplier, [1, 1, 1, 1])
            weight = (weight[:, :, 1:, 1:] + weight[:, :, :-1, 1:] + weight[:, :, 1:, :-1]
                      + weight[:, :, :-1, :-1]) / 4
            out = F.conv2d(input, weight, self.bias, stride=2, padding=self.pad)
            return out

    class BlurFunctionBackward(Function):
        @staticmethod
        def forward(ctx, grad_output, kernel, kernel_flip):
            ctx.save_for_backward(kernel, kernel_flip)
            grad_input = F.conv2d(grad_output, kernel_flip, padding=1, groups=grad_output.shape[1])
            return grad_input

        @staticmethod
        def backward(ctx, gradgrad_output):
            kernel, kernel_flip = ctx.saved_tensors
            grad_input = F.conv2d(gradgrad_output, kernel, padding=1, groups=gradgrad_output.shape[1])
            return grad_input, None, None

    class BlurFunction(Function):
        @staticmethod
        def forward(ctx, input, kernel, kernel_flip):
            ctx.save_for_backward(kernel, kernel_flip)
            output = F.conv2d(input, kernel, padding=1, groups=input.shape[1])
            return output

        @staticmethod
        def backward(ctx, grad_output):
            kernel, kernel_flip = ctx.saved_tensors
            grad_input = BlurFunctionBackward.apply(grad_output, kernel, kernel_flip)
            return grad_input, None, None

    blur = BlurFunction.apply

    class Blur(nn.Module):
        def __init__(self, channel):
            super().__init__()
            weight = torch.tensor([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=torch.float32)
            weight = weight.view(1, 1, 3, 3)
            weight = weight / weight.sum()
            weight_flip = torch.flip(weight, [2, 3])
            self.register_buffer('weight', weight.repeat(channel, 1, 1, 1))
            self.register_buffer('weight_flip', weight_flip.repeat(channel, 1, 1, 1))

        def forward(self, input):
            return blur(input, self.weight, self.weight_flip)

    class EqualConv2d(nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()
            conv = nn.Conv2d(*args, **kwargs)
            conv.weight.data.normal_()
            conv.bias.data.zero_()
            self.conv = equal_lr(conv)

        def forward(self, input):
            return self.conv(input)

    class EqualLinear(nn.Module):
        def __init__(self, in_dim, out_dim):
            super().__init__()
            linear = nn.Linear(in_dim, out_dim)
            linear.weight.data.normal_()
            linear.bias.data.zero_()
            self.linear = equal_lr(linear)

        def forward(self, input):
            return self.linear(input)

    class PixelNorm(nn.Module):
        def forward(self, input):
            return input / torch.sqrt(torch.mean(input ** 2, dim=1, keepdim=True) + 1e-8)

    class ConvBlock(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size, padding, kernel_size2=None, padding2=None,
                     downsample=False, fused=False):
            super().__init__()
            pad1, pad2 = padding, padding if padding2 is None else padding2
            kernel1, kernel2 = kernel_size, kernel_size if kernel_size2 is None else kernel_size2
            self.conv1 = nn.Sequential(EqualConv2d(in_channel, out_channel, kernel1, padding=pad1),
                                       nn.LeakyReLU(0.2))
            if downsample:
                if fused:
                    self.conv2 = nn.Sequential(Blur(out_channel),
                                               FusedDownsample(out_channel, out_channel, kernel2, padding=pad2),
                                               nn.LeakyReLU(0.2))
                else:
                    self.conv2 = nn.Sequential(Blur(out_channel),
                                               EqualConv2d(out_channel, out_channel, kernel2, padding=pad2),
                                               nn.AvgPool2d(2), nn.LeakyReLU(0.2))
            else:
                self.conv2 = nn.Sequential(EqualConv2d(out_channel, out_channel, kernel2, padding=pad2),
                                           nn.LeakyReLU(0.2))

        def forward(self, input):
            out = self.conv1(input)
            out = self.conv2(out)
            return out

    class AdaptiveInstanceNorm(nn.Module):
        def __init__(self, in_channel, style_dim):
            super().__init__()
            self.norm = nn.InstanceNorm2d(in_channel)
            self.style = EqualLinear(style_dim, in_channel * 2)
            self.style.linear.bias.data[:in_channel] = 1
            self.style.linear.bias.data[in_channel:] = 0

        def forward(self, input, style):
            style = self.style(style).unsqueeze(2).unsqueeze(3)
            gamma, beta = style.chunk(2, 1)
            out = self.norm(input)
            out = gamma * out + beta
            return out

    class NoiseInjection(nn.Module):
        def __init__(self, channel):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(1, channel, 1, 1))

        def forward(self, image, noise):
            return image + self.weight * noise

    class ConstantInput(nn.Module):
        def __init__(self, channel, size=4):
            super().__init__()
            self.input = nn.Parameter(torch.randn(1, channel, size, size))

        def forward(self, input):
            batch = input.shape[0]
            return self.input.repeat(batch, 1, 1, 1)

    class StyledConvBlock(nn.Module):
        def __init__(self, in_channel, out_channel, kernel_size=3, padding=1, style_dim=code_size, initial=False,
                     upsample=False, fused=False):
            super().__init__()
            if initial:
                self.conv1 = ConstantInput(in_channel)
            elif upsample:
                if fused:
                    self.conv1 = nn.Sequential(FusedUpsample(in_channel, out_channel, kernel_size, padding=padding),
                                               Blur(out_channel))
                else:
                    self.conv1 = nn.Sequential(nn.Upsample(scale_factor=2, mode='nearest'),
                                               EqualConv2d(in_channel, out_channel, kernel_size, padding=padding),
                                               Blur(out_channel))
            else:
                self.conv1 = EqualConv2d(in_channel, out_channel, kernel_size, padding=padding)
            self.noise1 = equal_lr(NoiseInjection(out_channel))
            self.adain1 = AdaptiveInstanceNorm(out_channel, style_dim)
            self.lrelu1 = nn.LeakyReLU(0.2)
            self.conv2 = EqualConv2d(out_channel, out_channel, kernel_size, padding=padding)
            self.noise2 = equal_lr(NoiseInjection(out_channel))
            self.adain2 = AdaptiveInstanceNorm(out_channel, style_dim)
            self.lrelu2 = nn.LeakyReLU(0.2)

        def forward(self, input, style, noise):
            out = self.conv1(input)
            out = self.noise1(out, noise)
            out = self.lrelu1(out)
            out = self.adain1(out, style)
            out = self.conv2(out)
            out = self.noise2(out, noise)
            out = self.lrelu2(out)
            out = self.adain2(out, style)
            return out

    class Generator(nn.Module):
        def __init__(self, code_dim, fused=True):
            super().__init__()
            self.progression = nn.ModuleList([StyledConvBlock(4, 4, 3, 1, initial=True),
                                              StyledConvBlock(4, 4, 3, 1, upsample=True),
                                              StyledConvBlock(4, 4, 3, 1, upsample=True, fused=fused)])
            self.to_rgb = nn.ModuleList([EqualConv2d(4, 3, 1), EqualConv2d(4, 3, 1), EqualConv2d(4, 3, 1)])

        def forward(self, style, noise, step=0, alpha=-1, mixing_range=(-1, -1)):
            out = noise[0]
            inject_index = [len(self.progression) + 1]
            crossover = 0
            for i, (conv, to_rgb) in enumerate(zip(self.progression, self.to_rgb)):
                if mixing_range == (-1, -1):
                    if crossover < len(inject_index) and i > inject_index[crossover]:
                        crossover = min(crossover + 1, len(style))
                    style_step = style[crossover]
                else:
                    style_step = style[1] if mixing_range[0] <= i <= mixing_range[1] else style[0]
                if i > 0 and step > 0:
                    out_prev = out
                out = conv(out, style_step, noise[i])
                if i == step:
                    out = to_rgb(out)
                    if i > 0 and 0 <= alpha < 1:
                        skip_rgb = self.to_rgb[i - 1](out_prev)
                        skip_rgb = F.interpolate(skip_rgb, scale_factor=2, mode='nearest')
                        out = (1 - alpha) * skip_rgb + alpha * out
                    break
            return out

    class StyledGenerator(nn.Module):
        def __init__(self, code_dim=code_size, n_mlp=2):
            super().__init__()
            self.generator = Generator(code_dim)
            layers = [PixelNorm()]
            for i in range(n_mlp):
                layers.append(EqualLinear(code_dim, code_dim))
                layers.append(nn.LeakyReLU(0.2))
            self.style = nn.Sequential(*layers)

        def forward(self, input, noise, step=0, alpha=-1, mean_style=None, style_weight=0, mixing_range=(-1, -1)):
            styles = []
            if type(input) not in (list, tuple):
                input = [input]
            for i in input:
                styles.append(self.style(i))
            return self.generator(styles, noise, step, alpha, mixing_range=mixing_range)

    class Discriminator(nn.Module):
        def __init__(self, fused=True, from_rgb_activate=False):
            super().__init__()
            self.progression = nn.ModuleList([ConvBlock(4, 4, 3, 1, downsample=True, fused=fused),
                                              ConvBlock(4, 4, 3, 1, downsample=True),
                                              ConvBlock(4 + 1, 4, 3, 1, 4, 0)])

            def make_from_rgb(out_channel):
                if from_rgb_activate:
                    return nn.Sequential(EqualConv2d(3, out_channel, 1), nn.LeakyReLU(0.2))
                return EqualConv2d(3, out_channel, 1)

            self.from_rgb = nn.ModuleList([make_from_rgb(4) for _ in range(3)])
            self.n_layer = len(self.progression)
            self.linear = EqualLinear(4, 1)

        def forward(self, input, step=0, alpha=-1):
            for i in range(step, -1, -1):
                index = self.n_layer - i - 1
                if i == step:
                    out = self.from_rgb[index](input)
                if i == 0:
                    out_std = torch.sqrt(out.var(0, unbiased=False) + 1e-8)
                    mean_std = out_std.mean()
                    mean_std = mean_std.expand(out.size(0), 1, 4, 4)
                    out = torch.cat([out, mean_std], 1)
                out = self.progression[index](out)
                if i > 0:
                    if i == step and 0 <= alpha < 1:
                        skip_rgb = F.avg_pool2d(input, 2)
                        skip_rgb = self.from_rgb[index + 1](skip_rgb)
                        out = (1 - alpha) * skip_rgb + alpha * out
            out = out.squeeze(2).squeeze(2)
            out = self.linear(out)
            return out

    def requires_grad(model, flag=True):
        for p in model.parameters():
            p.requires_grad = flag

    def accumulate(model1, model2, decay=0.999):
        par1 = dict(model1.named_parameters())
        par2 = dict(model2.named_parameters())
        for k in par1.keys():
            par1[k].data.mul_(decay).add_(1 - decay, par2[k].data)

    def adjust_lr(optimizer, lr):
        for group in optimizer.param_groups:
            mult = group.get('mult', 1)
            group['lr'] = lr * mult

    generator = StyledGenerator(code_size)
    discriminator = Discriminator(from_rgb_activate=True)
    g_running = StyledGenerator(code_size)
    g_running.train(False)
    both = nn.ModuleList([generator, discriminator])
    init = load(m, both, state)
    assert '0.generator.progression.0.conv2.conv.weight_orig' in init and '0.generator.progression.0.noise1.weight_orig' in init
    g_optimizer = torch.optim.Adam(generator.generator.parameters(), lr=1e-3, betas=(0.0, 0.99))
    g_optimizer.add_param_group({'params': generator.style.parameters(), 'lr': 1e-3 * 0.01, 'mult': 0.01})
    d_optimizer = torch.optim.Adam(discriminator.parameters(), lr=1e-3, betas=(0.0, 0.99))
    accumulate(g_running, generator, 0)
    losses = []
    alpha, resolution = 0.5, 4 * 2 ** step
    adjust_lr(g_optimizer, 2e-3)
    adjust_lr(d_optimizer, 2e-3)

    def noises(b):
        return [torch.tensor(normal(rng, b, 4, 4, 4))] + [torch.tensor(normal(rng, b, 1, 4 * 2 ** i, 4 * 2 ** i))
                                                          for i in range(1, 3)]

    for layer in generator.generator.progression:  # a trained model's noise strengths are not zero
        layer.noise1.weight_orig.data.fill_(0.1)
        layer.noise2.weight_orig.data.fill_(0.1)
    real_image = torch.tensor(normal(rng, batch, 3, resolution, resolution))
    discriminator.zero_grad()
    requires_grad(generator, False)
    requires_grad(discriminator, True)
    if loss_kind == 'wgan-gp':
        real_predict = discriminator(real_image, step=step, alpha=alpha)
        real_predict = real_predict.mean() - 0.001 * (real_predict ** 2).mean()
        (-real_predict).backward()
    else:
        real_image.requires_grad = True
        real_scores = discriminator(real_image, step=step, alpha=alpha)
        real_predict = F.softplus(-real_scores).mean()
        real_predict.backward(retain_graph=True)
        grad_real = grad(outputs=real_scores.sum(), inputs=real_image, create_graph=True)[0]
        grad_penalty = (grad_real.view(grad_real.size(0), -1).norm(2, dim=1) ** 2).mean()
        grad_penalty = 10 / 2 * grad_penalty
        grad_penalty.backward()
        losses.append(grad_penalty.item())
    gen_in1, gen_in2 = (torch.tensor(normal(rng, 2, batch, code_size))).chunk(2, 0)
    gen_in1 = gen_in1.squeeze(0)
    gen_in2 = gen_in2.squeeze(0)
    fake_image = generator(gen_in1, noises(batch), step=step, alpha=alpha)
    fake_predict = discriminator(fake_image, step=step, alpha=alpha)
    if loss_kind == 'wgan-gp':
        fake_predict = fake_predict.mean()
        fake_predict.backward()
        eps = torch.tensor(rng.random((batch, 1, 1, 1)).astype(np.float32))
        x_hat = eps * real_image.data + (1 - eps) * fake_image.data
        x_hat.requires_grad = True
        hat_predict = discriminator(x_hat, step=step, alpha=alpha)
        grad_x_hat = grad(outputs=hat_predict.sum(), inputs=x_hat, create_graph=True)[0]
        grad_penalty = ((grad_x_hat.view(grad_x_hat.size(0), -1).norm(2, dim=1) - 1) ** 2).mean()
        grad_penalty = 10 * grad_penalty
        grad_penalty.backward()
        losses.append(grad_penalty.item())
    else:
        fake_predict = F.softplus(fake_predict).mean()
        fake_predict.backward()
    d_optimizer.step()
    losses += [real_predict.item(), fake_predict.item()]
    generator.zero_grad()
    requires_grad(generator, True)
    requires_grad(discriminator, False)
    fake_image = generator([gen_in2, gen_in1], noises(batch), step=step, alpha=alpha, mixing_range=(0, 1))
    predict = discriminator(fake_image, step=step, alpha=alpha)
    loss = -predict.mean() if loss_kind == 'wgan-gp' else F.softplus(-predict).mean()
    loss.backward()
    g_optimizer.step()
    accumulate(g_running, generator)
    losses.append(loss.item())
    with torch.no_grad():
        images = g_running(torch.tensor(normal(rng, 2, code_size)), noises(2), step=1, alpha=1)
    losses += [images.sum().item(), [g['lr'] for g in g_optimizer.param_groups][1]]
    return init, losses + summary(both.parameters()) + summary(g_running.parameters())


def test_style_based_gan_wgan_gp():
    compare(style_based_gan)


def test_style_based_gan_r1():
    compare(style_based_gan, loss_kind="r1", step=1)


# (d) huangleiBuaa's IterNorm-pytorch (iterative_normalization.py): an autograd Function taking the module's
# running buffers, ints, a float and a bool; group whitening by Newton's iterations with the deprecated positional
# overloads torch.baddbmm(eps, P[0], 1. / m, xc, xc.transpose(1, 2)) and torch.baddbmm(1.5, P[k], -0.5,
# torch.matrix_power(P[k], 3), Sigma_N), torch.eye(d).to(X).expand(g, d, d), reciprocal_(), P[T].mul_(rTr.sqrt())
# before saving, running_mean.copy_ of a blend; its hand-written backward through ctx.saved_variables, in-place
# transpose_ of saved matrices and g_P.baddbmm_(1.5, -0.5, ...) / baddbmm_(1, -0.5, ...); the module's
# expand(...).clone() buffer, extra_repr by '...'.format(**self.__dict__), eval mode with the running whitening
def iter_norm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    Parameter = nn.Parameter
    autograd = import_module(torch.__name__ + ".autograd")
    torch.manual_seed(0)
    rng = np.random.default_rng(13)

    class iterative_normalization_py(autograd.Function):
        @staticmethod
        def forward(ctx, *args, **kwargs):
            X, running_mean, running_wmat, nc, ctx.T, eps, momentum, training = args
            # change NxCxHxW to (G x D) x(NxHxW), i.e., g*d*m
            ctx.g = X.size(1) // nc
            x = X.transpose(0, 1).contiguous().view(ctx.g, nc, -1)
            _, d, m_ = x.size()
            saved = []
            if training:
                mean = x.mean(-1, keepdim=True)
                xc = x - mean
                saved.append(xc)
                P = [None] * (ctx.T + 1)
                P[0] = torch.eye(d).to(X).expand(ctx.g, d, d)
                Sigma = torch.baddbmm(eps, P[0], 1. / m_, xc, xc.transpose(1, 2))
                rTr = (Sigma * P[0]).sum((1, 2), keepdim=True).reciprocal_()
                saved.append(rTr)
                Sigma_N = Sigma * rTr
                saved.append(Sigma_N)
                for k in range(ctx.T):
                    P[k + 1] = torch.baddbmm(1.5, P[k], -0.5, torch.matrix_power(P[k], 3), Sigma_N)
                saved.extend(P)
                wm = P[ctx.T].mul_(rTr.sqrt())  # whiten matrix: the matrix inverse of Sigma, i.e., Sigma^{-1/2}
                running_mean.copy_(momentum * mean + (1. - momentum) * running_mean)
                running_wmat.copy_(momentum * wm + (1. - momentum) * running_wmat)
            else:
                xc = x - running_mean
                wm = running_wmat
            xn = wm.matmul(xc)
            Xn = xn.view(X.size(1), X.size(0), *X.size()[2:]).transpose(0, 1).contiguous()
            ctx.save_for_backward(*saved)
            return Xn

        @staticmethod
        def backward(ctx, *grad_outputs):
            grad, = grad_outputs
            saved = ctx.saved_variables
            xc = saved[0]  # centered input
            rTr = saved[1]  # trace of Sigma
            sn = saved[2].transpose(-2, -1)  # normalized Sigma
            P = saved[3:]  # middle result matrix,
            g, d, m_ = xc.size()
            g_ = grad.transpose(0, 1).contiguous().view_as(xc)
            g_wm = g_.matmul(xc.transpose(-2, -1))
            g_P = g_wm * rTr.sqrt()
            wm = P[ctx.T]
            g_sn = 0
            for k in range(ctx.T, 1, -1):
                P[k - 1].transpose_(-2, -1)
                P2 = P[k - 1].matmul(P[k - 1])
                g_sn += P2.matmul(P[k - 1]).matmul(g_P)
                g_tmp = g_P.matmul(sn)
                g_P.baddbmm_(1.5, -0.5, g_tmp, P2)
                g_P.baddbmm_(1, -0.5, P2, g_tmp)
                g_P.baddbmm_(1, -0.5, P[k - 1].matmul(g_tmp), P[k - 1])
            g_sn += g_P
            g_tr = ((-sn.matmul(g_sn) + g_wm.transpose(-2, -1).matmul(wm)) * P[0]).sum((1, 2), keepdim=True) * P[0]
            g_sigma = (g_sn + g_sn.transpose(-2, -1) + 2. * g_tr) * (-0.5 / m_ * rTr)
            g_x = torch.baddbmm(wm.matmul(g_ - g_.mean(-1, keepdim=True)), g_sigma, xc)
            grad_input = g_x.view(grad.size(1), grad.size(0), *grad.size()[2:]).transpose(0, 1).contiguous()
            return grad_input, None, None, None, None, None, None, None

    class IterNorm(torch.nn.Module):
        def __init__(self, num_features, num_groups=1, num_channels=None, T=5, dim=4, eps=1e-5, momentum=0.1,
                     affine=True, *args, **kwargs):
            super(IterNorm, self).__init__()
            self.T = T
            self.eps = eps
            self.momentum = momentum
            self.num_features = num_features
            self.affine = affine
            self.dim = dim
            if num_channels is None:
                num_channels = (num_features - 1) // num_groups + 1
            num_groups = num_features // num_channels
            while num_features % num_channels != 0:
                num_channels //= 2
                num_groups = num_features // num_channels
            assert num_groups > 0 and num_features % num_groups == 0, \
                "num features={}, num groups={}".format(num_features, num_groups)
            self.num_groups = num_groups
            self.num_channels = num_channels
            shape = [1] * dim
            shape[1] = self.num_features
            if self.affine:
                self.weight = Parameter(torch.Tensor(*shape))
                self.bias = Parameter(torch.Tensor(*shape))
            else:
                self.register_parameter('weight', None)
                self.register_parameter('bias', None)
            self.register_buffer('running_mean', torch.zeros(num_groups, num_channels, 1))
            self.register_buffer('running_wm', torch.eye(num_channels).expand(num_groups, num_channels,
                                                                              num_channels).clone())
            self.reset_parameters()

        def reset_parameters(self):
            if self.affine:
                torch.nn.init.ones_(self.weight)
                torch.nn.init.zeros_(self.bias)

        def forward(self, X):
            X_hat = iterative_normalization_py.apply(X, self.running_mean, self.running_wm, self.num_channels, self.T,
                                                     self.eps, self.momentum, self.training)
            if self.affine:
                return X_hat * self.weight + self.bias
            else:
                return X_hat

        def extra_repr(self):
            return '{num_features}, num_channels={num_channels}, T={T}, eps={eps}, ' \
                   'momentum={momentum}, affine={affine}'.format(**self.__dict__)

    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1, bias=False), IterNorm(6, num_channels=3, T=4, dim=4),
                          nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 4),
                          IterNorm(4, num_groups=1, T=3, dim=2, affine=False), nn.Linear(4, 3))
    init = load(m, model, state)
    assert 'IterNorm(6, num_channels=3, T=4, eps=1e-05, momentum=0.1, affine=True)' in repr(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(2):
        x = torch.tensor(normal(rng, 4, 3, 5, 5))
        y = torch.tensor(rng.integers(0, 3, 4))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor(normal(rng, 2, 3, 5, 5)))
    losses += [out.sum().item(), model[1].running_wm.sum().item(), model[6].running_mean.sum().item()]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_iter_norm():
    compare(iter_norm)


# (e) dasguptar's treelstm.pytorch (treelstm/model.py, trainer.py, utils.py, metrics.py): a ChildSumTreeLSTM
# recursing over a Python Tree (node_forward by torch.sum(child_h, dim=0, keepdim=True), torch.split of the iou
# gates, torch.mul, the leaf state from inputs[0].detach().new(1, mem_dim).fill_(0.).requires_grad_()), the
# Similarity head (torch.mul and torch.abs(torch.add(lvec, -rvec)), log_softmax), map_label_to_target's sparse
# distribution by torch.zeros(1, C, dtype=torch.float, device='cpu') and item assignment, nn.KLDivLoss(), the
# embedding's copy_ of pretrained vectors and requires_grad = False, Adagrad over filter(lambda p:
# p.requires_grad, ...) with weight_decay, the loss divided by the batch before backward, a step every batch_size
# samples, test's torch.dot(indices, torch.exp(output.data.cpu())), and pearson by torch.std
def tree_lstm(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(14)
    vocab_size, in_dim, mem_dim, hidden_dim, num_classes = 9, 4, 5, 6, 5

    class Tree(object):
        def __init__(self):
            self.parent = None
            self.num_children = 0
            self.children = list()

        def add_child(self, child):
            child.parent = self
            self.num_children += 1
            self.children.append(child)

    def read_tree(parents):
        trees = dict()
        root = None
        for i in range(1, len(parents) + 1):
            if i - 1 not in trees.keys() and parents[i - 1] != -1:
                idx = i
                prev = None
                while True:
                    parent = parents[idx - 1]
                    if parent == -1:
                        break
                    tree = Tree()
                    if prev is not None:
                        tree.add_child(prev)
                    trees[idx - 1] = tree
                    tree.idx = idx - 1
                    if parent - 1 in trees.keys():
                        trees[parent - 1].add_child(tree)
                        break
                    elif parent == 0:
                        root = tree
                        break
                    else:
                        prev = tree
                        idx = parent
        return root

    class ChildSumTreeLSTM(nn.Module):
        def __init__(self, in_dim, mem_dim):
            super(ChildSumTreeLSTM, self).__init__()
            self.in_dim = in_dim
            self.mem_dim = mem_dim
            self.ioux = nn.Linear(self.in_dim, 3 * self.mem_dim)
            self.iouh = nn.Linear(self.mem_dim, 3 * self.mem_dim)
            self.fx = nn.Linear(self.in_dim, self.mem_dim)
            self.fh = nn.Linear(self.mem_dim, self.mem_dim)

        def node_forward(self, inputs, child_c, child_h):
            child_h_sum = torch.sum(child_h, dim=0, keepdim=True)
            iou = self.ioux(inputs) + self.iouh(child_h_sum)
            i, o, u = torch.split(iou, iou.size(1) // 3, dim=1)
            i, o, u = torch.sigmoid(i), torch.sigmoid(o), torch.tanh(u)
            f = torch.sigmoid(self.fh(child_h) + self.fx(inputs).repeat(len(child_h), 1))
            fc = torch.mul(f, child_c)
            c = torch.mul(i, u) + torch.sum(fc, dim=0, keepdim=True)
            h = torch.mul(o, torch.tanh(c))
            return c, h

        def forward(self, tree, inputs):
            for idx in range(tree.num_children):
                self.forward(tree.children[idx], inputs)
            if tree.num_children == 0:
                child_c = inputs[0].detach().new(1, self.mem_dim).fill_(0.).requires_grad_()
                child_h = inputs[0].detach().new(1, self.mem_dim).fill_(0.).requires_grad_()
            else:
                child_c, child_h = zip(*map(lambda x: x.state, tree.children))
                child_c, child_h = torch.cat(child_c, dim=0), torch.cat(child_h, dim=0)
            tree.state = self.node_forward(inputs[tree.idx], child_c, child_h)
            return tree.state

    class Similarity(nn.Module):
        def __init__(self, mem_dim, hidden_dim, num_classes):
            super(Similarity, self).__init__()
            self.wh = nn.Linear(2 * mem_dim, hidden_dim)
            self.wp = nn.Linear(hidden_dim, num_classes)

        def forward(self, lvec, rvec):
            mult_dist = torch.mul(lvec, rvec)
            abs_dist = torch.abs(torch.add(lvec, -rvec))
            vec_dist = torch.cat((mult_dist, abs_dist), 1)
            out = torch.sigmoid(self.wh(vec_dist))
            out = F.log_softmax(self.wp(out), dim=1)
            return out

    class SimilarityTreeLSTM(nn.Module):
        def __init__(self, vocab_size, in_dim, mem_dim, hidden_dim, num_classes, sparsity, freeze):
            super(SimilarityTreeLSTM, self).__init__()
            self.emb = nn.Embedding(vocab_size, in_dim, padding_idx=0, sparse=sparsity)
            if freeze:
                self.emb.weight.requires_grad = False
            self.childsumtreelstm = ChildSumTreeLSTM(in_dim, mem_dim)
            self.similarity = Similarity(mem_dim, hidden_dim, num_classes)

        def forward(self, ltree, linputs, rtree, rinputs):
            linputs = self.emb(linputs)
            rinputs = self.emb(rinputs)
            lstate, lhidden = self.childsumtreelstm(ltree, linputs)
            rstate, rhidden = self.childsumtreelstm(rtree, rinputs)
            output = self.similarity(lstate, rstate)
            return output

    def map_label_to_target(label, num_classes):
        target = torch.zeros(1, num_classes, dtype=torch.float, device='cpu')
        ceil = int(math.ceil(label))
        floor = int(math.floor(label))
        if ceil == floor:
            target[0, floor - 1] = 1
        else:
            target[0, floor - 1] = ceil - label
            target[0, ceil - 1] = label - floor
        return target

    def pearson(predictions, labels):
        x = deepcopy(predictions)
        y = deepcopy(labels)
        x = (x - x.mean()) / x.std()
        y = (y - y.mean()) / y.std()
        return torch.mean(torch.mul(x, y))

    import math
    from copy import deepcopy

    def sample():
        n = int(rng.integers(2, 4))
        parents = [0] + [int(rng.integers(1, i + 1)) for i in range(1, n)]  # a root, each node under an earlier one
        return read_tree(parents), torch.tensor(rng.integers(1, vocab_size, n)), n

    dataset = [(*sample(), *sample(), float(rng.uniform(1, num_classes))) for _ in range(3)]
    model = SimilarityTreeLSTM(vocab_size, in_dim, mem_dim, hidden_dim, num_classes, False, True)
    init = load(m, model, state)
    emb = torch.tensor(normal(rng, vocab_size, in_dim))
    emb[0].zero_()
    model.emb.weight.data.copy_(emb)
    criterion = nn.KLDivLoss()
    optimizer = torch.optim.Adagrad(filter(lambda p: p.requires_grad, model.parameters()), lr=0.05,
                                    weight_decay=1e-4)
    batchsize = 2
    model.train()
    optimizer.zero_grad()
    total_loss = 0.0
    losses = []
    for idx in range(len(dataset)):
        ltree, linput, _, rtree, rinput, _, label = dataset[idx]
        target = map_label_to_target(label, num_classes)
        output = model(ltree, linput, rtree, rinput)
        loss = criterion(output, target)
        total_loss += loss.item()
        loss.backward()
        if idx % batchsize == 0 and idx > 0:
            optimizer.step()
            optimizer.zero_grad()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        predictions = torch.zeros(len(dataset), dtype=torch.float, device='cpu')
        indices = torch.arange(1, num_classes + 1, dtype=torch.float, device='cpu')
        for idx in range(len(dataset)):
            ltree, linput, _, rtree, rinput, _, label = dataset[idx]
            output = model(ltree, linput, rtree, rinput)
            predictions[idx] = torch.dot(indices, torch.exp(output.data.cpu()).squeeze())
    labels = torch.tensor([d[-1] for d in dataset], dtype=torch.float)
    losses += [total_loss, predictions.sum().item(), pearson(predictions, labels).item()]
    return init, losses + summary(model.parameters())


def test_tree_lstm():
    compare(tree_lstm)


# (f) dreamquark-ai's tabnet (pytorch_tabnet/tab_network.py, sparsemax.py): GBN by x.chunk(ceil(n / vbs), 0) and a
# BatchNorm1d(momentum=0.01) on each chunk, initialize_glu_fc / initialize_non_glu by xavier_normal_ with numpy
# gains, GLU_Layer's torch.mul(x[:, :d], torch.sigmoid(x[:, d:])), GLU_Block's scale
# torch.sqrt(torch.FloatTensor([0.5]).to(x.device)), shared and independent FeatTransformers, the
# AttentiveTransformer's torch.mul(x, priors) into sparsemax (an autograd Function with _make_ix_like's
# rho.view(view).transpose(0, dim), sort, cumsum, gather of the support, clamp; its backward's grad_input[output ==
# 0] = 0 and torch.where), the prior update torch.mul(self.gamma - M, prior), the mask entropy M_loss, steps_output
# summed by torch.sum(torch.stack(...), dim=0), EmbeddingGenerator's columns of x[:, idx].float().view(-1, 1) and
# embeddings of x[:, idx].long(); the fit loop's loss - lambda_sparse * M_loss, clip_grad_norm_, and
# explain's M_explain by torch.mul(M, step_importance.unsqueeze(dim=1))
def tabnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from importlib import import_module
    Function = import_module(torch.__name__ + ".autograd").Function
    torch.manual_seed(0)
    rng = np.random.default_rng(15)

    def initialize_non_glu(module, input_dim, output_dim):
        gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(4 * input_dim))
        torch.nn.init.xavier_normal_(module.weight, gain=gain_value)

    def initialize_glu(module, input_dim, output_dim):
        gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(input_dim))
        torch.nn.init.xavier_normal_(module.weight, gain=gain_value)

    def _make_ix_like(input, dim=0):
        d = input.size(dim)
        rho = torch.arange(1, d + 1, device=input.device, dtype=input.dtype)
        view = [1] * input.dim()
        view[0] = -1
        return rho.view(view).transpose(0, dim)

    class SparsemaxFunction(Function):
        @staticmethod
        def forward(ctx, input, dim=-1):
            ctx.dim = dim
            max_val, _ = input.max(dim=dim, keepdim=True)
            input -= max_val  # same numerical stability trick as for softmax
            tau, supp_size = SparsemaxFunction._threshold_and_support(input, dim=dim)
            output = torch.clamp(input - tau, min=0)
            ctx.save_for_backward(supp_size, output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            supp_size, output = ctx.saved_tensors
            dim = ctx.dim
            grad_input = grad_output.clone()
            grad_input[output == 0] = 0
            v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze()
            v_hat = v_hat.unsqueeze(dim)
            grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
            return grad_input, None

        @staticmethod
        def _threshold_and_support(input, dim=-1):
            input_srt, _ = torch.sort(input, descending=True, dim=dim)
            input_cumsum = input_srt.cumsum(dim) - 1
            rhos = _make_ix_like(input, dim)
            support = rhos * input_srt > input_cumsum
            support_size = support.sum(dim=dim).unsqueeze(dim)
            tau = input_cumsum.gather(dim, support_size - 1)
            tau /= support_size.to(input.dtype)
            return tau, support_size

    sparsemax = SparsemaxFunction.apply

    class Sparsemax(nn.Module):
        def __init__(self, dim=-1):
            self.dim = dim
            super(Sparsemax, self).__init__()

        def forward(self, input):
            return sparsemax(input, self.dim)

    class GBN(torch.nn.Module):
        def __init__(self, input_dim, virtual_batch_size=128, momentum=0.01):
            super(GBN, self).__init__()
            self.input_dim = input_dim
            self.virtual_batch_size = virtual_batch_size
            self.bn = nn.BatchNorm1d(self.input_dim, momentum=momentum)

        def forward(self, x):
            chunks = x.chunk(int(np.ceil(x.shape[0] / self.virtual_batch_size)), 0)
            res = [self.bn(x_) for x_ in chunks]
            return torch.cat(res, dim=0)

    class GLU_Layer(torch.nn.Module):
        def __init__(self, input_dim, output_dim, fc=None, virtual_batch_size=128, momentum=0.02):
            super(GLU_Layer, self).__init__()
            self.output_dim = output_dim
            if fc:
                self.fc = fc
            else:
                self.fc = nn.Linear(input_dim, 2 * output_dim, bias=False)
            initialize_glu(self.fc, input_dim, 2 * output_dim)
            self.bn = GBN(2 * output_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

        def forward(self, x):
            x = self.fc(x)
            x = self.bn(x)
            out = torch.mul(x[:, : self.output_dim], torch.sigmoid(x[:, self.output_dim:]))
            return out

    class GLU_Block(torch.nn.Module):
        def __init__(self, input_dim, output_dim, n_glu=2, first=False, shared_layers=None, virtual_batch_size=128,
                     momentum=0.02):
            super(GLU_Block, self).__init__()
            self.first = first
            self.shared_layers = shared_layers
            self.n_glu = n_glu
            self.glu_layers = torch.nn.ModuleList()
            params = {"virtual_batch_size": virtual_batch_size, "momentum": momentum}
            fc = shared_layers[0] if shared_layers else None
            self.glu_layers.append(GLU_Layer(input_dim, output_dim, fc=fc, **params))
            for glu_id in range(1, self.n_glu):
                fc = shared_layers[glu_id] if shared_layers else None
                self.glu_layers.append(GLU_Layer(output_dim, output_dim, fc=fc, **params))

        def forward(self, x):
            scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device))
            if self.first:  # the first layer of the block has no scale multiplication
                x = self.glu_layers[0](x)
                layers_left = range(1, self.n_glu)
            else:
                layers_left = range(self.n_glu)
            for glu_id in layers_left:
                x = torch.add(x, self.glu_layers[glu_id](x))
                x = x * scale
            return x

    class FeatTransformer(torch.nn.Module):
        def __init__(self, input_dim, output_dim, shared_layers, n_glu_independent, virtual_batch_size=128,
                     momentum=0.02):
            super(FeatTransformer, self).__init__()
            params = {"n_glu": n_glu_independent, "virtual_batch_size": virtual_batch_size, "momentum": momentum}
            if shared_layers is None:
                self.shared = torch.nn.Identity()
                is_first = True
            else:
                self.shared = GLU_Block(input_dim, output_dim, first=True, shared_layers=shared_layers,
                                        n_glu=len(shared_layers), virtual_batch_size=virtual_batch_size,
                                        momentum=momentum)
                is_first = False
            if n_glu_independent == 0:
                self.specifics = torch.nn.Identity()
            else:
                spec_input_dim = input_dim if is_first else output_dim
                self.specifics = GLU_Block(spec_input_dim, output_dim, first=is_first, **params)

        def forward(self, x):
            x = self.shared(x)
            x = self.specifics(x)
            return x

    class AttentiveTransformer(torch.nn.Module):
        def __init__(self, input_dim, group_dim, group_matrix, virtual_batch_size=128, momentum=0.02):
            super(AttentiveTransformer, self).__init__()
            self.fc = nn.Linear(input_dim, group_dim, bias=False)
            initialize_non_glu(self.fc, input_dim, group_dim)
            self.bn = GBN(group_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)
            self.selector = Sparsemax(dim=-1)

        def forward(self, priors, processed_feat):
            x = self.fc(processed_feat)
            x = self.bn(x)
            x = torch.mul(x, priors)
            x = self.selector(x)
            return x

    class TabNetEncoder(torch.nn.Module):
        def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3, n_independent=2, n_shared=2,
                     epsilon=1e-15, virtual_batch_size=128, momentum=0.02):
            super(TabNetEncoder, self).__init__()
            self.input_dim, self.output_dim = input_dim, output_dim
            self.n_d, self.n_a, self.n_steps, self.gamma, self.epsilon = n_d, n_a, n_steps, gamma, epsilon
            self.initial_bn = nn.BatchNorm1d(self.input_dim, momentum=0.01)
            self.group_attention_matrix = torch.eye(self.input_dim)
            if n_shared > 0:
                shared_feat_transform = torch.nn.ModuleList()
                for i in range(n_shared):
                    if i == 0:
                        shared_feat_transform.append(nn.Linear(self.input_dim, 2 * (n_d + n_a), bias=False))
                    else:
                        shared_feat_transform.append(nn.Linear(n_d + n_a, 2 * (n_d + n_a), bias=False))
            else:
                shared_feat_transform = None
            self.initial_splitter = FeatTransformer(self.input_dim, n_d + n_a, shared_feat_transform,
                                                    n_glu_independent=n_independent,
                                                    virtual_batch_size=virtual_batch_size, momentum=momentum)
            self.feat_transformers = torch.nn.ModuleList()
            self.att_transformers = torch.nn.ModuleList()
            for step in range(n_steps):
                transformer = FeatTransformer(self.input_dim, n_d + n_a, shared_feat_transform,
                                              n_glu_independent=n_independent,
                                              virtual_batch_size=virtual_batch_size, momentum=momentum)
                attention = AttentiveTransformer(n_a, self.input_dim, self.group_attention_matrix,
                                                 virtual_batch_size=virtual_batch_size, momentum=momentum)
                self.feat_transformers.append(transformer)
                self.att_transformers.append(attention)

        def forward(self, x, prior=None):
            x = self.initial_bn(x)
            bs = x.shape[0]  # batch size
            if prior is None:
                prior = torch.ones((bs, self.input_dim))
            M_loss = 0
            att = self.initial_splitter(x)[:, self.n_d:]
            steps_output = []
            for step in range(self.n_steps):
                M = self.att_transformers[step](prior, att)
                M_loss += torch.mean(torch.sum(torch.mul(M, torch.log(M + self.epsilon)), dim=1))
                prior = torch.mul(self.gamma - M, prior)
                M_feature_level = torch.matmul(M, self.group_attention_matrix)
                masked_x = torch.mul(M_feature_level, x)
                out = self.feat_transformers[step](masked_x)
                d = F.relu(out[:, : self.n_d])
                steps_output.append(d)
                att = out[:, self.n_d:]
            M_loss /= self.n_steps
            return steps_output, M_loss

        def forward_masks(self, x):
            x = self.initial_bn(x)
            bs = x.shape[0]
            prior = torch.ones((bs, self.input_dim))
            M_explain = torch.zeros(x.shape)
            att = self.initial_splitter(x)[:, self.n_d:]
            masks = {}
            for step in range(self.n_steps):
                M = self.att_transformers[step](prior, att)
                M_feature_level = torch.matmul(M, self.group_attention_matrix)
                masks[step] = M_feature_level
                prior = torch.mul(self.gamma - M, prior)
                masked_x = torch.mul(M_feature_level, x)
                out = self.feat_transformers[step](masked_x)
                d = F.relu(out[:, : self.n_d])
                step_importance = torch.sum(d, axis=1)
                M_explain += torch.mul(M_feature_level, step_importance.unsqueeze(dim=1))
                att = out[:, self.n_d:]
            return M_explain, masks

    class TabNetNoEmbeddings(torch.nn.Module):
        def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, **kwargs):
            super(TabNetNoEmbeddings, self).__init__()
            self.encoder = TabNetEncoder(input_dim, output_dim, n_d=n_d, n_a=n_a, n_steps=n_steps, **kwargs)
            self.final_mapping = nn.Linear(n_d, output_dim, bias=False)
            initialize_non_glu(self.final_mapping, n_d, output_dim)

        def forward(self, x):
            steps_output, M_loss = self.encoder(x)
            res = torch.sum(torch.stack(steps_output, dim=0), dim=0)
            out = self.final_mapping(res)
            return out, M_loss

    class EmbeddingGenerator(torch.nn.Module):
        def __init__(self, input_dim, cat_dims, cat_idxs, cat_emb_dims):
            super(EmbeddingGenerator, self).__init__()
            self.post_embed_dim = int(input_dim + np.sum(cat_emb_dims) - len(cat_emb_dims))
            self.embeddings = torch.nn.ModuleList()
            for cat_dim, emb_dim in zip(cat_dims, cat_emb_dims):
                self.embeddings.append(torch.nn.Embedding(cat_dim, emb_dim))
            self.continuous_idx = torch.ones(input_dim, dtype=torch.bool)
            self.continuous_idx[cat_idxs] = 0

        def forward(self, x):
            cols = []
            cat_feat_counter = 0
            for feat_init_idx, is_continuous in enumerate(self.continuous_idx):
                if is_continuous:
                    cols.append(x[:, feat_init_idx].float().view(-1, 1))
                else:
                    cols.append(self.embeddings[cat_feat_counter](x[:, feat_init_idx].long()))
                    cat_feat_counter += 1
            post_embeddings = torch.cat(cols, dim=1)
            return post_embeddings

    class TabNet(torch.nn.Module):
        def __init__(self, input_dim, output_dim, cat_idxs, cat_dims, cat_emb_dim, **kwargs):
            super(TabNet, self).__init__()
            self.embedder = EmbeddingGenerator(input_dim, cat_dims, cat_idxs, cat_emb_dim)
            self.post_embed_dim = self.embedder.post_embed_dim
            self.tabnet = TabNetNoEmbeddings(self.post_embed_dim, output_dim, **kwargs)

        def forward(self, x):
            x = self.embedder(x)
            return self.tabnet(x)

        def forward_masks(self, x):
            x = self.embedder(x)
            return self.tabnet.encoder.forward_masks(x)

    network = TabNet(4, 3, cat_idxs=[1], cat_dims=[5], cat_emb_dim=[2], n_d=3, n_a=3, n_steps=2,
                     virtual_batch_size=3, momentum=0.02)
    init = load(m, network, state)
    optimizer = torch.optim.Adam(network.parameters(), lr=2e-2)
    lambda_sparse = 1e-3
    losses = []
    for step in range(2):
        X = normal(rng, 6, 4)
        X[:, 1] = rng.integers(0, 5, 6)
        X = torch.tensor(X)
        y = torch.tensor(rng.integers(0, 3, 6))
        network.train()
        for param in network.parameters():
            param.grad = None
        output, M_loss = network(X)
        loss = F.cross_entropy(output, y)
        loss = loss - lambda_sparse * M_loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1)
        optimizer.step()
        losses += [loss.item(), M_loss.item()]
    network.eval()
    with torch.no_grad():
        M_explain, masks = network.forward_masks(X)
    losses += [M_explain.sum().item(), masks[1].pow(2).sum().item()]
    return init, losses + summary(network.parameters()) + summary(network.buffers())


def test_tabnet():
    compare(tabnet)


# (g) 4uiiurz1's pytorch-deform-conv-v2 (deform_conv_v2.py): DeformConv2d with nn.ZeroPad2d, a zero-initialised
# offset conv (nn.init.constant_) and modulation conv, the legacy register_backward_hook(self._set_lr) whose hook
# builds generators and returns nothing, dtype = offset.data.type() strings fed back to .type(dtype), p_n and p_0 by
# torch.meshgrid (no indexing=) of torch.arange with negative starts, torch.flatten and repeat, p.detach().floor(),
# the four corners clamped to x.size(2) - 1 and cast by .long(), bilinear weights by type_as, x.gather(dim=-1) over
# indices unsqueezed, expanded to (-1, c, -1, -1, -1) and viewed, the modulation's torch.cat of copies and x_offset
# *= m in place, _reshape_x_offset's cat of views, a Conv2d with stride=kernel_size over the result; a small
# classifier trained two SGD steps
def deform_conv_v2(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(16)

    class DeformConv2d(nn.Module):
        def __init__(self, inc, outc, kernel_size=3, padding=1, stride=1, bias=None, modulation=False):
            super(DeformConv2d, self).__init__()
            self.kernel_size = kernel_size
            self.padding = padding
            self.stride = stride
            self.zero_padding = nn.ZeroPad2d(padding)
            self.conv = nn.Conv2d(inc, outc, kernel_size=kernel_size, stride=kernel_size, bias=bias)
            self.p_conv = nn.Conv2d(inc, 2 * kernel_size * kernel_size, kernel_size=3, padding=1, stride=stride)
            nn.init.constant_(self.p_conv.weight, 0)
            self.p_conv.register_backward_hook(self._set_lr)
            self.modulation = modulation
            if modulation:
                self.m_conv = nn.Conv2d(inc, kernel_size * kernel_size, kernel_size=3, padding=1, stride=stride)
                nn.init.constant_(self.m_conv.weight, 0)
                self.m_conv.register_backward_hook(self._set_lr)

        @staticmethod
        def _set_lr(module, grad_input, grad_output):
            grad_input = (grad_input[i] * 0.1 for i in range(len(grad_input)))
            grad_output = (grad_output[i] * 0.1 for i in range(len(grad_output)))

        def forward(self, x):
            offset = self.p_conv(x)
            if self.modulation:
                m = torch.sigmoid(self.m_conv(x))
            dtype = offset.data.type()
            ks = self.kernel_size
            N = offset.size(1) // 2
            if self.padding:
                x = self.zero_padding(x)
            p = self._get_p(offset, dtype)  # (b, 2N, h, w)
            p = p.contiguous().permute(0, 2, 3, 1)  # (b, h, w, 2N)
            q_lt = p.detach().floor()
            q_rb = q_lt + 1
            q_lt = torch.cat([torch.clamp(q_lt[..., :N], 0, x.size(2) - 1),
                              torch.clamp(q_lt[..., N:], 0, x.size(3) - 1)], dim=-1).long()
            q_rb = torch.cat([torch.clamp(q_rb[..., :N], 0, x.size(2) - 1),
                              torch.clamp(q_rb[..., N:], 0, x.size(3) - 1)], dim=-1).long()
            q_lb = torch.cat([q_lt[..., :N], q_rb[..., N:]], dim=-1)
            q_rt = torch.cat([q_rb[..., :N], q_lt[..., N:]], dim=-1)
            p = torch.cat([torch.clamp(p[..., :N], 0, x.size(2) - 1), torch.clamp(p[..., N:], 0, x.size(3) - 1)], dim=-1)
            g_lt = (1 + (q_lt[..., :N].type_as(p) - p[..., :N])) * (1 + (q_lt[..., N:].type_as(p) - p[..., N:]))
            g_rb = (1 - (q_rb[..., :N].type_as(p) - p[..., :N])) * (1 - (q_rb[..., N:].type_as(p) - p[..., N:]))
            g_lb = (1 + (q_lb[..., :N].type_as(p) - p[..., :N])) * (1 - (q_lb[..., N:].type_as(p) - p[..., N:]))
            g_rt = (1 - (q_rt[..., :N].type_as(p) - p[..., :N])) * (1 + (q_rt[..., N:].type_as(p) - p[..., N:]))
            x_q_lt = self._get_x_q(x, q_lt, N)
            x_q_rb = self._get_x_q(x, q_rb, N)
            x_q_lb = self._get_x_q(x, q_lb, N)
            x_q_rt = self._get_x_q(x, q_rt, N)
            x_offset = g_lt.unsqueeze(dim=1) * x_q_lt + \
                g_rb.unsqueeze(dim=1) * x_q_rb + \
                g_lb.unsqueeze(dim=1) * x_q_lb + \
                g_rt.unsqueeze(dim=1) * x_q_rt
            if self.modulation:
                m = m.contiguous().permute(0, 2, 3, 1)
                m = m.unsqueeze(dim=1)
                m = torch.cat([m for _ in range(x_offset.size(1))], dim=1)
                x_offset *= m
            x_offset = self._reshape_x_offset(x_offset, ks)
            out = self.conv(x_offset)
            return out

        def _get_p_n(self, N, dtype):
            p_n_x, p_n_y = torch.meshgrid(
                torch.arange(-(self.kernel_size - 1) // 2, (self.kernel_size - 1) // 2 + 1),
                torch.arange(-(self.kernel_size - 1) // 2, (self.kernel_size - 1) // 2 + 1))
            p_n = torch.cat([torch.flatten(p_n_x), torch.flatten(p_n_y)], 0)  # (2N, 1)
            p_n = p_n.view(1, 2 * N, 1, 1).type(dtype)
            return p_n

        def _get_p_0(self, h, w, N, dtype):
            p_0_x, p_0_y = torch.meshgrid(
                torch.arange(1, h * self.stride + 1, self.stride),
                torch.arange(1, w * self.stride + 1, self.stride))
            p_0_x = torch.flatten(p_0_x).view(1, 1, h, w).repeat(1, N, 1, 1)
            p_0_y = torch.flatten(p_0_y).view(1, 1, h, w).repeat(1, N, 1, 1)
            p_0 = torch.cat([p_0_x, p_0_y], 1).type(dtype)
            return p_0

        def _get_p(self, offset, dtype):
            N, h, w = offset.size(1) // 2, offset.size(2), offset.size(3)
            p_n = self._get_p_n(N, dtype)  # (1, 2N, 1, 1)
            p_0 = self._get_p_0(h, w, N, dtype)  # (1, 2N, h, w)
            p = p_0 + p_n + offset
            return p

        def _get_x_q(self, x, q, N):
            b, h, w, _ = q.size()
            padded_w = x.size(3)
            c = x.size(1)
            x = x.contiguous().view(b, c, -1)  # (b, c, h*w)
            index = q[..., :N] * padded_w + q[..., N:]  # offset_x*w + offset_y
            index = index.contiguous().unsqueeze(dim=1).expand(-1, c, -1, -1, -1).contiguous().view(b, c, -1)
            x_offset = x.gather(dim=-1, index=index).contiguous().view(b, c, h, w, N)
            return x_offset

        @staticmethod
        def _reshape_x_offset(x_offset, ks):
            b, c, h, w, N = x_offset.size()
            x_offset = torch.cat([x_offset[..., s:s + ks].contiguous().view(b, c, h, w * ks)
                                  for s in range(0, N, ks)], dim=-1)
            x_offset = x_offset.contiguous().view(b, c, h * ks, w * ks)
            return x_offset

    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(),
                          DeformConv2d(3, 4, 3, padding=1, stride=1, modulation=True), nn.BatchNorm2d(4), nn.ReLU(),
                          DeformConv2d(4, 4, 3, padding=1, stride=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 3))
    init = load(m, model, state)
    with torch.no_grad():  # offsets of a trained model: the zero-initialised offset convs given small weights
        for layer in (model[2], model[5]):
            layer.p_conv.weight.copy_(torch.tensor(0.3 * normal(rng, *layer.p_conv.weight.shape)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(2):
        x = torch.tensor(normal(rng, 2, 2, 5, 5))
        y = torch.tensor(rng.integers(0, 3, 2))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), model[2].p_conv.weight.grad.abs().sum().item()]
    return init, losses + summary(model.parameters())


def test_deform_conv_v2():
    compare(deform_conv_v2)


# (h) mean-field ADVI by hand in torch.distributions, as Kucukelbir et al.'s recipe is written in tutorials without
# Pyro: each latent's support from its prior (Dirichlet(...).support, HalfNormal(...).support, ...), mapped from the
# reals by biject_to (a stick-breaking bijection onto the simplex, exp and an affine map onto greater_than, a
# sigmoid and an affine map onto an interval) or transform_to; the Gaussian guide's reparameterised draw (the
# standard normal noise from numpy), the log joint of a two-component MixtureSameFamily with its priors, the
# log|det J| of each bijection, the guide's entropy, Adam on the negative ELBO
def advi_biject_to(m, state=None):
    torch, nn = m.torch, m.nn
    from importlib import import_module
    dist = import_module(torch.__name__ + ".distributions")
    constraints = dist.constraints
    torch.manual_seed(0)
    rng = np.random.default_rng(17)
    data = torch.tensor(np.concatenate([rng.normal(-2.0, 0.5, 6), rng.normal(1.5, 1.0, 6)]).astype(np.float32))
    priors = {"weights": dist.Dirichlet(torch.ones(2)), "locs": dist.Normal(torch.zeros(2), 3.0 * torch.ones(2)),
              "scales": dist.HalfNormal(2.0 * torch.ones(2)), "noise": dist.Uniform(0.0, 0.5)}
    supports = {name: prior.support for name, prior in priors.items()}
    supports["scales"] = constraints.greater_than(0.05)  # the scales kept off zero, as tutorials bound them
    bijections = {name: dist.biject_to(support) for name, support in supports.items()}
    sizes = {"weights": 1, "locs": 2, "scales": 2, "noise": 1}

    class Guide(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.ParameterDict({k: nn.Parameter(torch.zeros(n)) for k, n in sizes.items()})
            self.raw_scale = nn.ParameterDict({k: nn.Parameter(-1.0 * torch.ones(n)) for k, n in sizes.items()})

        def forward(self, eps):
            elbo = 0.0
            values = {}
            for name in sizes:
                q = dist.Normal(self.loc[name], torch.nn.functional.softplus(self.raw_scale[name]))
                z = q.loc + q.scale * eps[name]  # q.rsample() with numpy's noise
                value = bijections[name](z)
                values[name] = value
                elbo = elbo + bijections[name].log_abs_det_jacobian(z, value).sum() + q.entropy().sum()
                elbo = elbo + priors[name].log_prob(value.squeeze(-1) if name == "noise" else value).sum()
            mixture = dist.MixtureSameFamily(dist.Categorical(probs=values["weights"]),
                                             dist.Normal(values["locs"], values["scales"] + values["noise"]))
            return elbo + mixture.log_prob(data).sum(), values

    guide = Guide()
    init = load(m, guide, state)
    optimizer = torch.optim.Adam(guide.parameters(), lr=0.05)
    losses = []
    for step in range(3):
        eps = {k: torch.tensor(normal(rng, n)) for k, n in sizes.items()}
        elbo, values = guide(eps)
        loss = -elbo
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), values["weights"].sum().item(), values["scales"].min().item()]
    positive = dist.transform_to(constraints.positive)
    losses += [positive(guide.raw_scale["locs"]).sum().item(), repr(bijections["noise"]).count("Sigmoid")]
    return init, losses + summary(guide.parameters())


def test_advi_biject_to():
    compare(advi_biject_to)


# (i) Megvii's YOLOX (yolox/models/yolo_head.py, losses.py, utils/boxes.py): the decoupled head's outputs decoded
# in place (output[..., :2] = (output[..., :2] + grid) * stride, output[..., 2:4] = torch.exp(output[..., 2:4]) *
# stride) with grids cached in self.grids = [torch.zeros(1)] * n and compared by torch.Size, xin[0].type() strings,
# torch.zeros(1, n).fill_(stride).type_as(x); get_losses' per-image loop (nlabel by (labels.sum(dim=2) > 0).sum(dim=1),
# new_zeros targets for an image without labels); get_assignments under @torch.no_grad() with the geometry
# constraint (stacked center deltas, .min(dim=-1).values), bboxes_iou by broadcast max/min, torch.prod and (tl <
# br).type(tl.type()), the cls cost under torch.cuda.amp.autocast(enabled=False) with sigmoid_() on .float() copies
# and binary_cross_entropy of repeats, float(1e6) * (~geometry_relation); simota_matching (a uint8 matching matrix,
# dynamic ks by topk_ious.sum(1).int() clamped, topk(k=a 0-d tensor, largest=False), matching_matrix[gt_idx][pos_idx]
# = 1, [:, mask] *= 0, [cost_argmin, mask] = 1, fg_mask[fg_mask.clone()] = fg_mask_inboxes, argmax(0) of a uint8
# matrix); the IOUloss (giou) and BCEWithLogitsLoss(reduction="none") sums over the foreground count, SGD
def yolox_simota(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(18)
    num_classes, strides, width = 3, [8, 16], 4

    def bboxes_iou(bboxes_a, bboxes_b, xyxy=True):
        if bboxes_a.shape[1] != 4 or bboxes_b.shape[1] != 4:
            raise IndexError
        if xyxy:
            tl = torch.max(bboxes_a[:, None, :2], bboxes_b[:, :2])
            br = torch.min(bboxes_a[:, None, 2:], bboxes_b[:, 2:])
            area_a = torch.prod(bboxes_a[:, 2:] - bboxes_a[:, :2], 1)
            area_b = torch.prod(bboxes_b[:, 2:] - bboxes_b[:, :2], 1)
        else:
            tl = torch.max((bboxes_a[:, None, :2] - bboxes_a[:, None, 2:] / 2), (bboxes_b[:, :2] - bboxes_b[:, 2:] / 2))
            br = torch.min((bboxes_a[:, None, :2] + bboxes_a[:, None, 2:] / 2), (bboxes_b[:, :2] + bboxes_b[:, 2:] / 2))
            area_a = torch.prod(bboxes_a[:, 2:], 1)
            area_b = torch.prod(bboxes_b[:, 2:], 1)
        en = (tl < br).type(tl.type()).prod(dim=2)
        area_i = torch.prod(br - tl, 2) * en  # * ((tl < br).all())
        return area_i / (area_a[:, None] + area_b - area_i)

    class IOUloss(nn.Module):
        def __init__(self, reduction="none", loss_type="iou"):
            super(IOUloss, self).__init__()
            self.reduction = reduction
            self.loss_type = loss_type

        def forward(self, pred, target):
            assert pred.shape[0] == target.shape[0]
            pred = pred.view(-1, 4)
            target = target.view(-1, 4)
            tl = torch.max((pred[:, :2] - pred[:, 2:] / 2), (target[:, :2] - target[:, 2:] / 2))
            br = torch.min((pred[:, :2] + pred[:, 2:] / 2), (target[:, :2] + target[:, 2:] / 2))
            area_p = torch.prod(pred[:, 2:], 1)
            area_g = torch.prod(target[:, 2:], 1)
            en = (tl < br).type(tl.type()).prod(dim=1)
            area_i = torch.prod(br - tl, 1) * en
            area_u = area_p + area_g - area_i
            iou = (area_i) / (area_u + 1e-16)
            if self.loss_type == "iou":
                loss = 1 - iou ** 2
            elif self.loss_type == "giou":
                c_tl = torch.min((pred[:, :2] - pred[:, 2:] / 2), (target[:, :2] - target[:, 2:] / 2))
                c_br = torch.max((pred[:, :2] + pred[:, 2:] / 2), (target[:, :2] + target[:, 2:] / 2))
                area_c = torch.prod(c_br - c_tl, 1)
                giou = iou - (area_c - area_u) / area_c.clamp(1e-16)
                loss = 1 - giou.clamp(min=-1.0, max=1.0)
            if self.reduction == "mean":
                loss = loss.mean()
            elif self.reduction == "sum":
                loss = loss.sum()
            return loss

    class YOLOXHead(nn.Module):
        def __init__(self, num_classes, strides, in_channels):
            super().__init__()
            self.num_classes = num_classes
            self.strides = strides
            self.stems = nn.ModuleList([nn.Conv2d(c, width, 1) for c in in_channels])
            self.cls_convs = nn.ModuleList([nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.SiLU())
                                            for _ in in_channels])
            self.reg_convs = nn.ModuleList([nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.SiLU())
                                            for _ in in_channels])
            self.cls_preds = nn.ModuleList([nn.Conv2d(width, num_classes, 1) for _ in in_channels])
            self.reg_preds = nn.ModuleList([nn.Conv2d(width, 4, 1) for _ in in_channels])
            self.obj_preds = nn.ModuleList([nn.Conv2d(width, 1, 1) for _ in in_channels])
            self.bcewithlog_loss = nn.BCEWithLogitsLoss(reduction="none")
            self.iou_loss = IOUloss(reduction="none", loss_type="giou")
            self.grids = [torch.zeros(1)] * len(in_channels)

        def forward(self, xin, labels=None, imgs=None):
            outputs = []
            x_shifts, y_shifts, expanded_strides = [], [], []
            for k, (cls_conv, reg_conv, stride_this_level, x) in enumerate(
                    zip(self.cls_convs, self.reg_convs, self.strides, xin)):
                x = self.stems[k](x)
                cls_feat = cls_conv(x)
                cls_output = self.cls_preds[k](cls_feat)
                reg_feat = reg_conv(x)
                reg_output = self.reg_preds[k](reg_feat)
                obj_output = self.obj_preds[k](reg_feat)
                output = torch.cat([reg_output, obj_output, cls_output], 1)
                output, grid = self.get_output_and_grid(output, k, stride_this_level, xin[0].type())
                x_shifts.append(grid[:, :, 0])
                y_shifts.append(grid[:, :, 1])
                expanded_strides.append(torch.zeros(1, grid.shape[1]).fill_(stride_this_level).type_as(xin[0]))
                outputs.append(output)
            return self.get_losses(imgs, x_shifts, y_shifts, expanded_strides, labels, torch.cat(outputs, 1),
                                   dtype=xin[0].dtype)

        def get_output_and_grid(self, output, k, stride, dtype):
            grid = self.grids[k]
            batch_size = output.shape[0]
            n_ch = 5 + self.num_classes
            hsize, wsize = output.shape[-2:]
            if grid.shape[2:4] != output.shape[2:4]:
                yv, xv = torch.meshgrid([torch.arange(hsize), torch.arange(wsize)], indexing="ij")
                grid = torch.stack((xv, yv), 2).view(1, 1, hsize, wsize, 2).type(dtype)
                self.grids[k] = grid
            output = output.view(batch_size, 1, n_ch, hsize, wsize)
            output = output.permute(0, 1, 3, 4, 2).reshape(batch_size, hsize * wsize, -1)
            grid = grid.view(1, -1, 2)
            output[..., :2] = (output[..., :2] + grid) * stride
            output[..., 2:4] = torch.exp(output[..., 2:4]) * stride
            return output, grid

        def get_losses(self, imgs, x_shifts, y_shifts, expanded_strides, labels, outputs, dtype):
            bbox_preds = outputs[:, :, :4]  # [batch, n_anchors_all, 4]
            obj_preds = outputs[:, :, 4:5]  # [batch, n_anchors_all, 1]
            cls_preds = outputs[:, :, 5:]  # [batch, n_anchors_all, n_cls]
            nlabel = (labels.sum(dim=2) > 0).sum(dim=1)  # number of objects
            total_num_anchors = outputs.shape[1]
            x_shifts = torch.cat(x_shifts, 1)  # [1, n_anchors_all]
            y_shifts = torch.cat(y_shifts, 1)  # [1, n_anchors_all]
            expanded_strides = torch.cat(expanded_strides, 1)
            cls_targets, reg_targets, obj_targets, fg_masks = [], [], [], []
            num_fg = 0.0
            num_gts = 0.0
            for batch_idx in range(outputs.shape[0]):
                num_gt = int(nlabel[batch_idx])
                num_gts += num_gt
                if num_gt == 0:
                    cls_target = outputs.new_zeros((0, self.num_classes))
                    reg_target = outputs.new_zeros((0, 4))
                    obj_target = outputs.new_zeros((total_num_anchors, 1))
                    fg_mask = outputs.new_zeros(total_num_anchors).bool()
                else:
                    gt_bboxes_per_image = labels[batch_idx, :num_gt, 1:5]
                    gt_classes = labels[batch_idx, :num_gt, 0]
                    bboxes_preds_per_image = bbox_preds[batch_idx]
                    (gt_matched_classes, fg_mask, pred_ious_this_matching, matched_gt_inds, num_fg_img) = \
                        self.get_assignments(batch_idx, num_gt, gt_bboxes_per_image, gt_classes,
                                             bboxes_preds_per_image, expanded_strides, x_shifts, y_shifts,
                                             cls_preds, obj_preds)
                    torch.cuda.empty_cache()
                    num_fg += num_fg_img
                    cls_target = F.one_hot(gt_matched_classes.to(torch.int64), self.num_classes) \
                        * pred_ious_this_matching.unsqueeze(-1)
                    obj_target = fg_mask.unsqueeze(-1)
                    reg_target = gt_bboxes_per_image[matched_gt_inds]
                cls_targets.append(cls_target)
                reg_targets.append(reg_target)
                obj_targets.append(obj_target.to(dtype))
                fg_masks.append(fg_mask)
            cls_targets = torch.cat(cls_targets, 0)
            reg_targets = torch.cat(reg_targets, 0)
            obj_targets = torch.cat(obj_targets, 0)
            fg_masks = torch.cat(fg_masks, 0)
            num_fg = max(num_fg, 1)
            loss_iou = (self.iou_loss(bbox_preds.view(-1, 4)[fg_masks], reg_targets)).sum() / num_fg
            loss_obj = (self.bcewithlog_loss(obj_preds.view(-1, 1), obj_targets)).sum() / num_fg
            loss_cls = (self.bcewithlog_loss(cls_preds.view(-1, self.num_classes)[fg_masks], cls_targets)).sum() / num_fg
            reg_weight = 5.0
            loss = reg_weight * loss_iou + loss_obj + loss_cls
            return loss, reg_weight * loss_iou, loss_obj, loss_cls, num_fg / max(num_gts, 1)

        @torch.no_grad()
        def get_assignments(self, batch_idx, num_gt, gt_bboxes_per_image, gt_classes, bboxes_preds_per_image,
                            expanded_strides, x_shifts, y_shifts, cls_preds, obj_preds):
            fg_mask, geometry_relation = self.get_geometry_constraint(gt_bboxes_per_image, expanded_strides,
                                                                      x_shifts, y_shifts)
            bboxes_preds_per_image = bboxes_preds_per_image[fg_mask]
            cls_preds_ = cls_preds[batch_idx][fg_mask]
            obj_preds_ = obj_preds[batch_idx][fg_mask]
            num_in_boxes_anchor = bboxes_preds_per_image.shape[0]
            pair_wise_ious = bboxes_iou(gt_bboxes_per_image, bboxes_preds_per_image, False)
            gt_cls_per_image = (F.one_hot(gt_classes.to(torch.int64), self.num_classes).float())
            pair_wise_ious_loss = -torch.log(pair_wise_ious + 1e-8)
            with torch.cuda.amp.autocast(enabled=False):
                cls_preds_ = (cls_preds_.float().sigmoid_() * obj_preds_.float().sigmoid_()).sqrt()
                pair_wise_cls_loss = F.binary_cross_entropy(
                    cls_preds_.unsqueeze(0).repeat(num_gt, 1, 1),
                    gt_cls_per_image.unsqueeze(1).repeat(1, num_in_boxes_anchor, 1), reduction="none").sum(-1)
            del cls_preds_
            cost = (pair_wise_cls_loss + 3.0 * pair_wise_ious_loss + float(1e6) * (~geometry_relation))
            (num_fg, gt_matched_classes, pred_ious_this_matching, matched_gt_inds) = self.simota_matching(
                cost, pair_wise_ious, gt_classes, num_gt, fg_mask)
            del pair_wise_cls_loss, cost, pair_wise_ious, pair_wise_ious_loss
            return gt_matched_classes, fg_mask, pred_ious_this_matching, matched_gt_inds, num_fg

        def get_geometry_constraint(self, gt_bboxes_per_image, expanded_strides, x_shifts, y_shifts):
            expanded_strides_per_image = expanded_strides[0]
            x_centers_per_image = ((x_shifts[0] + 0.5) * expanded_strides_per_image).unsqueeze(0)
            y_centers_per_image = ((y_shifts[0] + 0.5) * expanded_strides_per_image).unsqueeze(0)
            center_radius = 1.5
            center_dist = expanded_strides_per_image.unsqueeze(0) * center_radius
            gt_bboxes_per_image_l = (gt_bboxes_per_image[:, 0:1]) - center_dist
            gt_bboxes_per_image_r = (gt_bboxes_per_image[:, 0:1]) + center_dist
            gt_bboxes_per_image_t = (gt_bboxes_per_image[:, 1:2]) - center_dist
            gt_bboxes_per_image_b = (gt_bboxes_per_image[:, 1:2]) + center_dist
            c_l = x_centers_per_image - gt_bboxes_per_image_l
            c_r = gt_bboxes_per_image_r - x_centers_per_image
            c_t = y_centers_per_image - gt_bboxes_per_image_t
            c_b = gt_bboxes_per_image_b - y_centers_per_image
            center_deltas = torch.stack([c_l, c_t, c_r, c_b], 2)
            is_in_centers = center_deltas.min(dim=-1).values > 0.0
            anchor_filter = is_in_centers.sum(dim=0) > 0
            geometry_relation = is_in_centers[:, anchor_filter]
            return anchor_filter, geometry_relation

        def simota_matching(self, cost, pair_wise_ious, gt_classes, num_gt, fg_mask):
            matching_matrix = torch.zeros_like(cost, dtype=torch.uint8)
            n_candidate_k = min(10, pair_wise_ious.size(1))
            topk_ious, _ = torch.topk(pair_wise_ious, n_candidate_k, dim=1)
            dynamic_ks = torch.clamp(topk_ious.sum(1).int(), min=1)
            for gt_idx in range(num_gt):
                _, pos_idx = torch.topk(cost[gt_idx], k=dynamic_ks[gt_idx], largest=False)
                matching_matrix[gt_idx][pos_idx] = 1
            del topk_ious, dynamic_ks, pos_idx
            anchor_matching_gt = matching_matrix.sum(0)
            if anchor_matching_gt.max() > 1:  # one anchor matched to several ground truths: keep the cheapest
                multiple_match_mask = anchor_matching_gt > 1
                _, cost_argmin = torch.min(cost[:, multiple_match_mask], dim=0)
                matching_matrix[:, multiple_match_mask] *= 0
                matching_matrix[cost_argmin, multiple_match_mask] = 1
            fg_mask_inboxes = anchor_matching_gt > 0
            num_fg = fg_mask_inboxes.sum().item()
            fg_mask[fg_mask.clone()] = fg_mask_inboxes
            matched_gt_inds = matching_matrix[:, fg_mask_inboxes].argmax(0)
            gt_matched_classes = gt_classes[matched_gt_inds]
            pred_ious_this_matching = (matching_matrix * pair_wise_ious).sum(0)[fg_mask_inboxes]
            return num_fg, gt_matched_classes, pred_ious_this_matching, matched_gt_inds

    head = YOLOXHead(num_classes, strides, [3, 5])
    init = load(m, head, state)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9, nesterov=True)
    losses = []
    for step in range(2):
        xin = [torch.tensor(normal(rng, 2, 3, 4, 4)), torch.tensor(normal(rng, 2, 5, 2, 2))]
        labels = np.zeros((2, 3, 5), dtype=np.float32)  # [class, cx, cy, w, h], zero rows padding
        labels[0, :2] = [[0, 10.0, 12.0, 12.0, 9.0], [2, 22.0, 20.0, 14.0, 16.0]]
        labels[1, :1] = [[1, 15.0, 17.0, 20.0, 18.0]]
        labels[:, :, 1:3] += rng.uniform(-2, 2, (2, 3, 2)) * (labels[:, :, 3:4] > 0)
        loss, loss_iou, loss_obj, loss_cls, fg_ratio = head(xin, torch.tensor(labels))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), loss_iou.item(), loss_obj.item(), loss_cls.item(), fg_ratio]
    return init, losses + summary(head.parameters())


def test_yolox_simota():
    compare(yolox_simota)
