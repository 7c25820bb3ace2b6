"""Public code the earlier files leave out, written from memory in its repositories' styles and ported by its imports
alone, as test_ported_scripts.py: davidtvs' pytorch-lr-finder (_LRScheduler subclasses, a deepcopy'd state cache restored
into the model and the optimizer, accumulation and the smoothed, diverging loss); karpathy's pytorch-made (masks as
uint8 copies into a float buffer, orderings from a seeded RandomState, size_average=False, the autoregressive check by
gradients); juho-lee's Set Transformer and DeepSet (heads by split and cat along the batch); dfdazac's log-domain
Sinkhorn distance (logsumexp iterations stopped by err.item(), used as a loss); evidential deep learning (Dirichlet KL by
lgamma and digamma, torch.min of 0-d tensors); KaiyangZhou's center loss (the deprecated addmm_(1, -2, x, c.t()), the
centres' gradients rescaled before their own optimizer); Deep SVDD (affine-free BatchNorm, a centre pushed off zero by
boolean masks, amsgrad, the soft-boundary radius assigned by .data); SIREN (sine layers, gradient and laplacian by
autograd.grad(create_graph=True), a Poisson fit of gradients); VAT (track_running_stats flipped by model.apply, the
power iteration's backward to d.grad); powerful-gnns' GIN (torch.sparse.FloatTensor and spmm, max neighbour pooling
over padded LongTensors, a repeat_interleave batch vector); Kaixhin's Rainbow (NoisyLinear, dueling C51, the
projection by index_add_ on flat views of int64 floor/ceil bins); Transformer-XL's memory (relative attention by
einsum of operand tuples, _rel_shift by a padded view, empty memories cat'ed, segment recurrence); pytorch/examples'
VAE with a continuous Bernoulli likelihood (torch.distributions.ContinuousBernoulli, its mean as the reconstruction);
and VoxelMorph in 3-D (a Unet of Conv3d and nearest upsampling of volumes, trilinear resizing of the flow, scaling and
squaring, grid_sample of 5-D volumes at locations normalised slice by slice in place, the smoothness and NCC losses). Each runs in tnet, then in torch from tnet's initial
weights (state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy draws what
a script draws (noise, data, torch.rand's directions); shapes are tiny and runs 1-3 steps. Where Adam would normalise a
gradient that is rounding alone (a bias before a BatchNorm), that bias is frozen, as the script says."""
import contextlib
import copy
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) davidtvs/pytorch-lr-finder's torch_lr_finder/lr_finder.py: ExponentialLR and LinearLR written as subclasses of
# _LRScheduler (get_lr from self.last_epoch and self.base_lrs), the StateCacher's deepcopy of the model's and the
# optimizer's state_dicts, the start lr set in param_groups, TrainDataLoaderIter restarting its DataLoader,
# gradient accumulation by loss / accumulation_steps, the smoothed loss with its divergence stop, reset() from the
# cache, and the suggestion at the steepest gradient by np.gradient; then the real run from the restored state
def lr_finder(m, state=None):
    torch, nn = m.torch, m.nn
    from_lr_scheduler = m.lr_scheduler

    class ExponentialLR(from_lr_scheduler._LRScheduler):
        def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
            self.end_lr = end_lr
            if num_iter <= 1:
                raise ValueError("`num_iter` must be larger than 1")
            self.num_iter = num_iter
            super(ExponentialLR, self).__init__(optimizer, last_epoch)

        def get_lr(self):
            r = self.last_epoch / (self.num_iter - 1)
            return [base_lr * (self.end_lr / base_lr) ** r for base_lr in self.base_lrs]

    class LinearLR(from_lr_scheduler._LRScheduler):
        def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
            self.end_lr = end_lr
            self.num_iter = num_iter
            super(LinearLR, self).__init__(optimizer, last_epoch)

        def get_lr(self):
            r = self.last_epoch / (self.num_iter - 1)
            return [base_lr + r * (self.end_lr - base_lr) for base_lr in self.base_lrs]

    class StateCacher(object):
        def __init__(self, in_memory=True):
            self.in_memory = in_memory
            self.cached = {}

        def store(self, key, state_dict):
            self.cached.update({key: copy.deepcopy(state_dict)})

        def retrieve(self, key):
            if key not in self.cached:
                raise KeyError("Target {} was not cached.".format(key))
            return self.cached.get(key)

    class TrainDataLoaderIter(object):
        def __init__(self, data_loader, auto_reset=True):
            self.data_loader = data_loader
            self._iterator = iter(data_loader)
            self.auto_reset = auto_reset

        def __iter__(self):
            return self

        def __next__(self):
            try:
                batch = next(self._iterator)
            except StopIteration:
                if not self.auto_reset:
                    raise
                self._iterator = iter(self.data_loader)
                batch = next(self._iterator)
            return batch[0], batch[1]

    class LRFinder(object):
        def __init__(self, model, optimizer, criterion, device=None, memory_cache=True):
            self.optimizer = optimizer
            self._check_for_scheduler()
            self.model = model
            self.criterion = criterion
            self.history = {"lr": [], "loss": []}
            self.best_loss = None
            self.state_cacher = StateCacher(memory_cache)
            self.state_cacher.store("model", self.model.state_dict())
            self.state_cacher.store("optimizer", self.optimizer.state_dict())

        def reset(self):
            self.model.load_state_dict(self.state_cacher.retrieve("model"))
            self.optimizer.load_state_dict(self.state_cacher.retrieve("optimizer"))

        def range_test(self, train_loader, start_lr=None, end_lr=10, num_iter=100, step_mode="exp", smooth_f=0.05,
                       diverge_th=5, accumulation_steps=1):
            self.history = {"lr": [], "loss": []}
            self.best_loss = None
            if start_lr:
                self._set_learning_rate(start_lr)
            if step_mode.lower() == "exp":
                lr_schedule = ExponentialLR(self.optimizer, end_lr, num_iter)
            elif step_mode.lower() == "linear":
                lr_schedule = LinearLR(self.optimizer, end_lr, num_iter)
            else:
                raise ValueError("expected one of (exp, linear), got {}".format(step_mode))
            if smooth_f < 0 or smooth_f >= 1:
                raise ValueError("smooth_f is outside the range [0, 1[")
            train_iter = TrainDataLoaderIter(train_loader)
            for iteration in range(num_iter):
                loss = self._train_batch(train_iter, accumulation_steps)
                self.history["lr"].append(lr_schedule.get_lr()[0])
                lr_schedule.step()
                if iteration == 0:
                    self.best_loss = loss
                else:
                    if smooth_f > 0:
                        loss = smooth_f * loss + (1 - smooth_f) * self.history["loss"][-1]
                    if loss < self.best_loss:
                        self.best_loss = loss
                self.history["loss"].append(loss)
                if loss > diverge_th * self.best_loss:
                    break

        def _set_learning_rate(self, new_lrs):
            if not isinstance(new_lrs, list):
                new_lrs = [new_lrs] * len(self.optimizer.param_groups)
            for param_group, new_lr in zip(self.optimizer.param_groups, new_lrs):
                param_group["lr"] = new_lr

        def _check_for_scheduler(self):
            for param_group in self.optimizer.param_groups:
                if "initial_lr" in param_group:
                    raise RuntimeError("Optimizer already has a scheduler attached to it")

        def _train_batch(self, train_iter, accumulation_steps):
            self.model.train()
            total_loss = None
            self.optimizer.zero_grad()
            for i in range(accumulation_steps):
                inputs, labels = next(train_iter)
                outputs = self.model(inputs)
                loss = self.criterion(outputs, labels)
                loss /= accumulation_steps
                loss.backward()
                if total_loss is None:
                    total_loss = loss
                else:
                    total_loss += loss
            self.optimizer.step()
            return total_loss.item()

        def suggestion(self, skip_start=0, skip_end=0):
            lrs, losses = self.history["lr"], self.history["loss"]
            lrs = lrs[skip_start:len(lrs) - skip_end] if skip_end else lrs[skip_start:]
            losses = losses[skip_start:len(losses) - skip_end] if skip_end else losses[skip_start:]
            min_grad_idx = (np.gradient(np.array(losses))).argmin()
            return lrs[min_grad_idx]

    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    init = load(m, model, state)
    rng = np.random.default_rng(11)
    x, y = torch.tensor(normal(rng, 12, 6)), torch.tensor(rng.integers(0, 3, 12))
    train_loader = m.data.DataLoader(m.data.TensorDataset(x, y), batch_size=4, shuffle=False)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-7, momentum=0.9, weight_decay=1e-2)
    lr_finder = LRFinder(model, optimizer, criterion)
    lr_finder.range_test(train_loader, end_lr=1, num_iter=4, accumulation_steps=2)
    found = list(lr_finder.history["lr"]) + list(lr_finder.history["loss"])
    lr_finder.range_test(train_loader, start_lr=1e-3, end_lr=1e-1, num_iter=3, step_mode="linear")
    found += list(lr_finder.history["lr"]) + list(lr_finder.history["loss"])
    best = lr_finder.suggestion()
    lr_finder.reset()
    assert optimizer.param_groups[0]["lr"] == 1e-7 and "initial_lr" not in optimizer.param_groups[0]
    restored = summary(model.parameters())
    optimizer.param_groups[0]["lr"] = best
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return init, found + [best, loss.item()] + restored + summary(model.parameters())


def test_lr_finder():
    compare(lr_finder)


# (b) karpathy/pytorch-made's made.py and run.py: MaskedLinear(nn.Linear) with a float "mask" buffer that set_mask
# fills from a numpy bool array by copy_ of a uint8 tensor, F.linear of mask * weight; MADE's connectivity from a
# seeded np.random.RandomState (orderings cycled over num_masks, the output mask repeated for nout = 2 nin), the
# order-agnostic average of logits over resampled masks, binary_cross_entropy_with_logits(size_average=False) / B;
# then check_made.py's test of the autoregressive property: each output's gradient on a single input row
def made(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class MaskedLinear(nn.Linear):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__(in_features, out_features, bias)
            self.register_buffer('mask', torch.ones(out_features, in_features))

        def set_mask(self, mask):
            self.mask.data.copy_(torch.from_numpy(mask.astype(np.uint8).T))

        def forward(self, input):
            return F.linear(input, self.mask * self.weight, self.bias)

    class MADE(nn.Module):
        def __init__(self, nin, hidden_sizes, nout, num_masks=1, natural_ordering=False):
            super().__init__()
            self.nin = nin
            self.nout = nout
            self.hidden_sizes = hidden_sizes
            assert self.nout % self.nin == 0, "nout must be integer multiple of nin"
            self.net = []
            hs = [nin] + hidden_sizes + [nout]
            for h0, h1 in zip(hs, hs[1:]):
                self.net.extend([
                    MaskedLinear(h0, h1),
                    nn.ReLU(),
                ])
            self.net.pop()  # pop the last ReLU for the output layer
            self.net = nn.Sequential(*self.net)
            self.natural_ordering = natural_ordering
            self.num_masks = num_masks
            self.seed = 0  # for cycling through num_masks orderings
            self.m = {}
            self.update_masks()  # builds the initial self.m connectivity

        def update_masks(self):
            if self.m and self.num_masks == 1:
                return  # only a single seed, skip for efficiency
            L = len(self.hidden_sizes)
            rng = np.random.RandomState(self.seed)
            self.seed = (self.seed + 1) % self.num_masks
            self.m[-1] = np.arange(self.nin) if self.natural_ordering else rng.permutation(self.nin)
            for l in range(L):
                self.m[l] = rng.randint(self.m[l - 1].min(), self.nin - 1, size=self.hidden_sizes[l])
            masks = [self.m[l - 1][:, None] <= self.m[l][None, :] for l in range(L)]
            masks.append(self.m[L - 1][:, None] < self.m[-1][None, :])
            if self.nout > self.nin:
                k = int(self.nout / self.nin)
                masks[-1] = np.concatenate([masks[-1]] * k, axis=1)
            layers = [l for l in self.net.modules() if isinstance(l, MaskedLinear)]
            for l, m in zip(layers, masks):
                l.set_mask(m)

        def forward(self, x):
            return self.net(x)

    nin = 6
    model = MADE(nin, [10, 10], nin, num_masks=2)
    init = load(m, model, state)
    opt = torch.optim.Adam(model.parameters(), 1e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=45, gamma=0.1)
    rng = np.random.default_rng(13)
    xtr = (rng.uniform(0, 1, (8, nin)) > 0.5).astype(np.float32)  # binarized MNIST's rows, tiny
    losses = []
    for split in ("train", "train", "test"):
        model.train() if split == "train" else model.eval()
        x = xtr if split == "train" else xtr[:4]
        xb = torch.from_numpy(x)
        nsamples = 1 if split == "train" else 2
        xbhat = torch.zeros_like(xb)
        with torch.set_grad_enabled(split == "train"):
            for s in range(nsamples):
                model.update_masks()
                xbhat += model(xb)
            xbhat /= nsamples
            loss = F.binary_cross_entropy_with_logits(xbhat, xb, size_average=False) / xb.size(0)
        lossf = loss.data.item()
        losses.append(lossf)
        if split == "train":
            opt.zero_grad()
            loss.backward()
            opt.step()
            scheduler.step()
    # check_made.py: output k depends on no input at or after its place in the ordering
    model.update_masks()
    x = (rng.uniform(0, 1, (1, nin)) > 0.5).astype(np.float32)
    res = []
    for k in range(nin):
        xtr = torch.from_numpy(x)
        xtr.requires_grad = True
        xtrhat = model(xtr)
        loss = xtrhat[0, k]
        loss.backward()
        depends = (xtr.grad[0] != 0).numpy().astype(np.uint8)
        depends_ix = list(np.where(depends)[0])
        isok = k % nin not in depends_ix
        res.append((len(depends_ix), isok))
    assert all(ok for _, ok in res), res
    assert [n for n, _ in res] != [0] * nin
    masks = [float(l.mask.sum()) for l in model.net if isinstance(l, MaskedLinear)]
    return init, losses + masks + [n for n, _ in res] + summary(model.parameters())


def test_made():
    compare(made)


# (c) juho-lee/set_transformer's modules.py and models.py: MAB's heads by torch.cat(Q.split(dim_split, 2), 0),
# softmax of bmm scores over dim 2, the heads back by split(Q.size(0), 0) and cat on dim 2, optional LayerNorms
# found by getattr(self, 'ln0', None); SAB, ISAB with inducing points and PMA with seeds made as torch.Tensor(1, n, d)
# and xavier_uniform_, repeated over the batch; the SmallSetTransformer and the DeepSet of its max-regression demo,
# trained by Adam on the L1 loss to each set's max (the keys' biases frozen: their gradients are rounding alone), and
# the SetTransformer (ISABs, LayerNorms) forward
def set_transformer(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class MAB(nn.Module):
        def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):
            super(MAB, self).__init__()
            self.dim_V = dim_V
            self.num_heads = num_heads
            self.fc_q = nn.Linear(dim_Q, dim_V)
            self.fc_k = nn.Linear(dim_K, dim_V)
            self.fc_v = nn.Linear(dim_K, dim_V)
            if ln:
                self.ln0 = nn.LayerNorm(dim_V)
                self.ln1 = nn.LayerNorm(dim_V)
            self.fc_o = nn.Linear(dim_V, dim_V)

        def forward(self, Q, K):
            Q = self.fc_q(Q)
            K, V = self.fc_k(K), self.fc_v(K)
            dim_split = self.dim_V // self.num_heads
            Q_ = torch.cat(Q.split(dim_split, 2), 0)
            K_ = torch.cat(K.split(dim_split, 2), 0)
            V_ = torch.cat(V.split(dim_split, 2), 0)
            A = torch.softmax(Q_.bmm(K_.transpose(1, 2)) / math.sqrt(self.dim_V), 2)
            O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)
            O = O if getattr(self, 'ln0', None) is None else self.ln0(O)
            O = O + F.relu(self.fc_o(O))
            O = O if getattr(self, 'ln1', None) is None else self.ln1(O)
            return O

    class SAB(nn.Module):
        def __init__(self, dim_in, dim_out, num_heads, ln=False):
            super(SAB, self).__init__()
            self.mab = MAB(dim_in, dim_in, dim_out, num_heads, ln=ln)

        def forward(self, X):
            return self.mab(X, X)

    class ISAB(nn.Module):
        def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=False):
            super(ISAB, self).__init__()
            self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
            nn.init.xavier_uniform_(self.I)
            self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
            self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

        def forward(self, X):
            H = self.mab0(self.I.repeat(X.size(0), 1, 1), X)
            return self.mab1(X, H)

    class PMA(nn.Module):
        def __init__(self, dim, num_heads, num_seeds, ln=False):
            super(PMA, self).__init__()
            self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
            nn.init.xavier_uniform_(self.S)
            self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

        def forward(self, X):
            return self.mab(self.S.repeat(X.size(0), 1, 1), X)

    class DeepSet(nn.Module):
        def __init__(self, dim_input, num_outputs, dim_output, dim_hidden=128):
            super(DeepSet, self).__init__()
            self.num_outputs = num_outputs
            self.dim_output = dim_output
            self.enc = nn.Sequential(nn.Linear(dim_input, dim_hidden), nn.ReLU(), nn.Linear(dim_hidden, dim_hidden))
            self.dec = nn.Sequential(nn.Linear(dim_hidden, dim_hidden), nn.ReLU(),
                                     nn.Linear(dim_hidden, num_outputs * dim_output))

        def forward(self, X):
            X = self.enc(X).mean(-2)
            X = self.dec(X).reshape(-1, self.num_outputs, self.dim_output)
            return X

    class SetTransformer(nn.Module):
        def __init__(self, dim_input, num_outputs, dim_output, num_inds=32, dim_hidden=128, num_heads=4, ln=False):
            super(SetTransformer, self).__init__()
            self.enc = nn.Sequential(
                ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=ln),
                ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=ln))
            self.dec = nn.Sequential(
                PMA(dim_hidden, num_heads, num_outputs, ln=ln),
                SAB(dim_hidden, dim_hidden, num_heads, ln=ln),
                nn.Linear(dim_hidden, dim_output))

        def forward(self, X):
            return self.dec(self.enc(X))

    class SmallSetTransformer(nn.Module):  # max_regression_demo.ipynb's
        def __init__(self,):
            super().__init__()
            self.enc = nn.Sequential(
                SAB(dim_in=1, dim_out=8, num_heads=2),
                SAB(dim_in=8, dim_out=8, num_heads=2),
            )
            self.dec = nn.Sequential(
                PMA(dim=8, num_heads=2, num_seeds=1),
                nn.Linear(in_features=8, out_features=1),
            )

        def forward(self, x):
            x = self.enc(x)
            x = self.dec(x)
            return x.squeeze(-1)

    models = nn.ModuleList([SmallSetTransformer(), DeepSet(1, 1, 1, dim_hidden=8),
                            SetTransformer(1, 1, 1, num_inds=3, dim_hidden=8, num_heads=2, ln=True)])
    init = load(m, models, state)
    for mab in (mod for mod in models.modules() if isinstance(mod, MAB)):
        mab.fc_k.bias.requires_grad_(False)  # softmax ignores a key's bias: its gradient is rounding, which Adam scales up
    rng = np.random.default_rng(17)
    losses = []
    for model in models[:2]:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(2):
            x = rng.uniform(0, 100, (3, 5, 1)).astype(np.float32)  # gen_data: sets of 5 numbers and their max
            y = np.max(x, axis=1)
            x, y = torch.from_numpy(x), torch.from_numpy(y)
            loss = F.l1_loss(model(x).reshape(-1, 1), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    with torch.no_grad():  # the full model (ISABs' inducing points, LayerNorms): its forward alone
        losses += models[2](x).flatten().tolist()
    return init, losses + summary(models.parameters())


def test_set_transformer_and_deep_set():
    compare(set_transformer)


# (d) dfdazac/wassdistance's layers.py: SinkhornDistance in the log domain (mu and nu by torch.empty(...).fill_()
# and squeeze, u and v updated by logsumexp of the modified cost over the last dim and over a transposed one, the
# stop when err.item() falls under a threshold, the plan pi = exp(M), the cost summed over dims (-2, -1), reduction
# by name), _cost_matrix by broadcast |x - y| ** p; its notebook's use as a loss, here of a learnt affine map of
# points to a target cloud, by SGD through the unrolled iterations
def sinkhorn(m, state=None):
    torch, nn = m.torch, m.nn

    class SinkhornDistance(nn.Module):
        def __init__(self, eps, max_iter, reduction='none'):
            super(SinkhornDistance, self).__init__()
            self.eps = eps
            self.max_iter = max_iter
            self.reduction = reduction

        def forward(self, x, y):
            C = self._cost_matrix(x, y)  # Wasserstein cost function
            x_points = x.shape[-2]
            y_points = y.shape[-2]
            if x.dim() == 2:
                batch_size = 1
            else:
                batch_size = x.shape[0]
            mu = torch.empty(batch_size, x_points, dtype=torch.float, requires_grad=False).fill_(1.0 / x_points).squeeze()
            nu = torch.empty(batch_size, y_points, dtype=torch.float, requires_grad=False).fill_(1.0 / y_points).squeeze()
            u = torch.zeros_like(mu)
            v = torch.zeros_like(nu)
            actual_nits = 0
            thresh = 1e-1
            for i in range(self.max_iter):
                u1 = u  # useful to check the update
                u = self.eps * (torch.log(mu + 1e-8) - torch.logsumexp(self.M(C, u, v), dim=-1)) + u
                v = self.eps * (torch.log(nu + 1e-8) - torch.logsumexp(self.M(C, u, v).transpose(-2, -1), dim=-1)) + v
                err = (u - u1).abs().sum(-1).mean()
                actual_nits += 1
                if err.item() < thresh:
                    break
            U, V = u, v
            pi = torch.exp(self.M(C, U, V))  # transport plan pi = diag(a)*K*diag(b)
            cost = torch.sum(pi * C, dim=(-2, -1))
            if self.reduction == 'mean':
                cost = cost.mean()
            elif self.reduction == 'sum':
                cost = cost.sum()
            self.actual_nits = actual_nits
            return cost, pi, C

        def M(self, C, u, v):
            "Modified cost for logarithmic updates: $M_{ij} = (-c_{ij} + u_i + v_j) / \\epsilon$"
            return (-C + u.unsqueeze(-1) + v.unsqueeze(-2)) / self.eps

        @staticmethod
        def _cost_matrix(x, y, p=2):
            "Returns the matrix of $|x_i-y_j|^p$."
            x_col = x.unsqueeze(-2)
            y_lin = y.unsqueeze(-3)
            C = torch.sum((torch.abs(x_col - y_lin)) ** p, -1)
            return C

    rng = np.random.default_rng(19)
    a = rng.standard_normal((5, 2)).astype(np.float32)
    b = (rng.standard_normal((6, 2)) * 0.5 + 1.0).astype(np.float32)
    x, y = torch.tensor(a), torch.tensor(b)
    sinkhorn = SinkhornDistance(eps=0.1, max_iter=8, reduction=None)
    dist, P, C = sinkhorn(x, y)
    found = [dist.item(), float(P.sum()), sinkhorn.actual_nits]
    batched = SinkhornDistance(eps=0.5, max_iter=4, reduction='mean')
    dist_b, P_b, _ = batched(torch.stack([x, x + 1]), torch.stack([y[:5], y[1:]]))
    found += [dist_b.item()] + P_b.sum((-2, -1)).tolist()
    mapping = nn.Linear(2, 2)
    init = load(m, mapping, state)
    optimizer = torch.optim.SGD(mapping.parameters(), lr=0.1)
    loss_fn = SinkhornDistance(eps=0.5, max_iter=3, reduction='mean')
    for _ in range(2):
        loss, _, _ = loss_fn(mapping(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        found.append(loss.item())
    return init, found + summary(mapping.parameters())


def test_sinkhorn_distance():
    compare(sinkhorn)


# (e) dougbrion/pytorch-classification-uncertainty's losses.py and train.py (evidential deep learning): relu
# evidence, alpha = evidence + 1, the KL divergence to the uniform Dirichlet by lgamma and digamma, the annealing
# coefficient as torch.min of two 0-d tensors, edl_mse_loss, edl_digamma_loss and edl_log_loss (func(S) - func(alpha)
# with func torch.digamma or torch.log), one-hot targets by torch.eye(num_classes)[labels], the uncertainty
# u = K / sum(alpha) and the mean evidence of right and wrong predictions by a match mask; the LeNet of its MNIST
# example without its dropout
def evidential(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def get_device():
        return torch.device("cpu")

    def one_hot_embedding(labels, num_classes=10):
        y = torch.eye(num_classes)
        return y[labels]

    def relu_evidence(y):
        return F.relu(y)

    def kl_divergence(alpha, num_classes, device=None):
        if not device:
            device = get_device()
        ones = torch.ones([1, num_classes], dtype=torch.float32, device=device)
        sum_alpha = torch.sum(alpha, dim=1, keepdim=True)
        first_term = (
            torch.lgamma(sum_alpha)
            - torch.lgamma(alpha).sum(dim=1, keepdim=True)
            + torch.lgamma(ones).sum(dim=1, keepdim=True)
            - torch.lgamma(ones.sum(dim=1, keepdim=True))
        )
        second_term = (
            (alpha - ones)
            .mul(torch.digamma(alpha) - torch.digamma(sum_alpha))
            .sum(dim=1, keepdim=True)
        )
        kl = first_term + second_term
        return kl

    def loglikelihood_loss(y, alpha, device=None):
        if not device:
            device = get_device()
        y = y.to(device)
        alpha = alpha.to(device)
        S = torch.sum(alpha, dim=1, keepdim=True)
        loglikelihood_err = torch.sum((y - (alpha / S)) ** 2, dim=1, keepdim=True)
        loglikelihood_var = torch.sum(alpha * (S - alpha) / (S * S * (S + 1)), dim=1, keepdim=True)
        loglikelihood = loglikelihood_err + loglikelihood_var
        return loglikelihood

    def mse_loss(y, alpha, epoch_num, num_classes, annealing_step, device=None):
        if not device:
            device = get_device()
        y = y.to(device)
        alpha = alpha.to(device)
        loglikelihood = loglikelihood_loss(y, alpha, device=device)
        annealing_coef = torch.min(
            torch.tensor(1.0, dtype=torch.float32),
            torch.tensor(epoch_num / annealing_step, dtype=torch.float32),
        )
        kl_alpha = (alpha - 1) * (1 - y) + 1
        kl_div = annealing_coef * kl_divergence(kl_alpha, num_classes, device=device)
        return loglikelihood + kl_div

    def edl_loss(func, y, alpha, epoch_num, num_classes, annealing_step, device=None):
        y = y.to(device)
        alpha = alpha.to(device)
        S = torch.sum(alpha, dim=1, keepdim=True)
        A = torch.sum(y * (func(S) - func(alpha)), dim=1, keepdim=True)
        annealing_coef = torch.min(
            torch.tensor(1.0, dtype=torch.float32),
            torch.tensor(epoch_num / annealing_step, dtype=torch.float32),
        )
        kl_alpha = (alpha - 1) * (1 - y) + 1
        kl_div = annealing_coef * kl_divergence(kl_alpha, num_classes, device=device)
        return A + kl_div

    def edl_mse_loss(output, target, epoch_num, num_classes, annealing_step, device=None):
        if not device:
            device = get_device()
        evidence = relu_evidence(output)
        alpha = evidence + 1
        loss = torch.mean(mse_loss(target, alpha, epoch_num, num_classes, annealing_step, device=device))
        return loss

    def edl_log_loss(output, target, epoch_num, num_classes, annealing_step, device=None):
        if not device:
            device = get_device()
        evidence = relu_evidence(output)
        alpha = evidence + 1
        loss = torch.mean(edl_loss(torch.log, target, alpha, epoch_num, num_classes, annealing_step, device))
        return loss

    def edl_digamma_loss(output, target, epoch_num, num_classes, annealing_step, device=None):
        if not device:
            device = get_device()
        evidence = relu_evidence(output)
        alpha = evidence + 1
        loss = torch.mean(edl_loss(torch.digamma, target, alpha, epoch_num, num_classes, annealing_step, device))
        return loss

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
            self.conv2 = nn.Conv2d(4, 6, kernel_size=3)
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 4)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2(x), 2))
            x = x.view(x.size()[0], -1)
            x = F.relu(self.fc1(x))
            x = self.fc2(x)
            return x

    num_classes, device = 4, get_device()
    model = LeNet()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.005)
    exp_lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
    rng = np.random.default_rng(23)
    found = []
    for epoch, criterion in enumerate((edl_mse_loss, edl_digamma_loss, edl_log_loss)):
        inputs = torch.tensor(normal(rng, 3, 1, 10, 10))
        labels = torch.tensor(rng.integers(0, num_classes, 3))
        y = one_hot_embedding(labels, num_classes)
        y = y.to(device)
        optimizer.zero_grad()
        with torch.set_grad_enabled(True):
            outputs = model(inputs)
            _, preds = torch.max(outputs, 1)
            loss = criterion(outputs, y.float(), epoch + 1, num_classes, 10, device)
            match = torch.reshape(torch.eq(preds, labels).float(), (-1, 1))
            acc = torch.mean(match)
            evidence = relu_evidence(outputs)
            alpha = evidence + 1
            u = num_classes / torch.sum(alpha, dim=1, keepdim=True)
            total_evidence = torch.sum(evidence, 1, keepdim=True)
            mean_evidence = torch.mean(total_evidence)
            mean_evidence_succ = torch.sum(torch.sum(evidence, 1, keepdim=True) * match) / torch.sum(match + 1e-20)
            mean_evidence_fail = torch.sum(torch.sum(evidence, 1, keepdim=True) * (1 - match)) / (
                torch.sum(torch.abs(1 - match)) + 1e-20)
            loss.backward()
            optimizer.step()
        exp_lr_scheduler.step()
        found += [loss.item(), acc.item(), u.mean().item(), mean_evidence.item(), mean_evidence_succ.item(),
                  mean_evidence_fail.item()]
    return init, found + summary(model.parameters())


def test_evidential_deep_learning():
    compare(evidential)


# (f) KaiyangZhou/pytorch-center-loss's center_loss.py, models.py and main.py: CenterLoss's centers as an
# nn.Parameter of torch.randn, the squared distances by pow-sum-expand plus a transposed expand and the deprecated
# distmat.addmm_(1, -2, x, centers.t()), the class mask by labels.unsqueeze(1).expand(...).eq(classes.expand(...)),
# the clamp before the sum; ConvNet with PReLUs and a 2-d feature layer; two optimizers, loss_cent *= weight_cent in
# place, and the centers' gradients rescaled by param.grad.data *= (1. / weight_cent) before their own SGD step
def center_loss(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    lr_scheduler = m.lr_scheduler

    class CenterLoss(nn.Module):
        def __init__(self, num_classes=10, feat_dim=2, use_gpu=True):
            super(CenterLoss, self).__init__()
            self.num_classes = num_classes
            self.feat_dim = feat_dim
            self.use_gpu = use_gpu
            self.centers = nn.Parameter(torch.randn(self.num_classes, self.feat_dim))

        def forward(self, x, labels):
            batch_size = x.size(0)
            distmat = torch.pow(x, 2).sum(dim=1, keepdim=True).expand(batch_size, self.num_classes) + \
                torch.pow(self.centers, 2).sum(dim=1, keepdim=True).expand(self.num_classes, batch_size).t()
            distmat.addmm_(1, -2, x, self.centers.t())
            classes = torch.arange(self.num_classes).long()
            if self.use_gpu:
                classes = classes.cuda()
            labels = labels.unsqueeze(1).expand(batch_size, self.num_classes)
            mask = labels.eq(classes.expand(batch_size, self.num_classes))
            dist = distmat * mask.float()
            loss = dist.clamp(min=1e-12, max=1e+12).sum() / batch_size
            return loss

    class ConvNet(nn.Module):
        def __init__(self, num_classes):
            super(ConvNet, self).__init__()
            self.conv1_1 = nn.Conv2d(1, 4, 3, stride=1, padding=1)
            self.prelu1_1 = nn.PReLU()
            self.conv1_2 = nn.Conv2d(4, 4, 3, stride=1, padding=1)
            self.prelu1_2 = nn.PReLU()
            self.fc1 = nn.Linear(4 * 3 * 3, 2)
            self.prelu_fc1 = nn.PReLU()
            self.fc2 = nn.Linear(2, num_classes)

        def forward(self, x):
            x = self.prelu1_1(self.conv1_1(x))
            x = self.prelu1_2(self.conv1_2(x))
            x = F.max_pool2d(x, 2)
            x = x.view(-1, 4 * 3 * 3)
            x = self.prelu_fc1(self.fc1(x))
            y = self.fc2(x)
            return x, y

    num_classes, weight_cent = 4, 0.5
    model = ConvNet(num_classes=num_classes)
    criterion_xent = nn.CrossEntropyLoss()
    criterion_cent = CenterLoss(num_classes=num_classes, feat_dim=2, use_gpu=False)
    both = nn.ModuleList([model, criterion_cent])
    init = load(m, both, state)
    optimizer_model = torch.optim.SGD(model.parameters(), lr=0.01, weight_decay=5e-04, momentum=0.9)
    optimizer_centloss = torch.optim.SGD(criterion_cent.parameters(), lr=0.5)
    scheduler = lr_scheduler.StepLR(optimizer_model, step_size=20, gamma=0.5)
    rng = np.random.default_rng(29)
    losses = []
    for batch_idx in range(2):
        data = torch.tensor(normal(rng, 4, 1, 6, 6))
        labels = torch.tensor(rng.integers(0, num_classes, 4))
        features, outputs = model(data)
        loss_xent = criterion_xent(outputs, labels)
        loss_cent = criterion_cent(features, labels)
        loss_cent *= weight_cent
        loss = loss_xent + loss_cent
        optimizer_model.zero_grad()
        optimizer_centloss.zero_grad()
        loss.backward()
        optimizer_model.step()
        for param in criterion_cent.parameters():
            param.grad.data *= (1. / weight_cent)
        optimizer_centloss.step()
        predictions = outputs.data.max(1)[1]
        correct = (predictions == labels.data).sum()
        losses += [loss.item(), loss_xent.item(), loss_cent.item(), int(correct)]
    scheduler.step()
    return init, losses + summary(both.parameters())


def test_center_loss():
    compare(center_loss)


# (g) lukasruff/Deep-SVDD-PyTorch's networks/mnist_LeNet.py and optim/deepSVDD_trainer.py: a LeNet without biases and
# with affine-free BatchNorm2d(eps=1e-04), leaky_relu; a Dataset of (image, label, index) triplets; init_center_c by
# a no-grad sum over the loader in eval mode, c /= n_samples and the near-zero entries pushed to +-eps by boolean
# masks of abs(c); Adam with amsgrad, MultiStepLR stepped before the batches (as the repository does), the
# one-class and the soft-boundary objectives (torch.max of zeros_like and the scores), the radius R assigned by
# R.data = torch.tensor(np.quantile(sqrt(dist))) after warm-up; test scores and a numpy ROC AUC
def deep_svdd(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Dataset, DataLoader = m.data.Dataset, m.data.DataLoader

    class MNIST_LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.rep_dim = 4
            self.pool = nn.MaxPool2d(2, 2)
            self.conv1 = nn.Conv2d(1, 2, 3, bias=False, padding=1)
            self.bn1 = nn.BatchNorm2d(2, eps=1e-04, affine=False)
            self.conv2 = nn.Conv2d(2, 3, 3, bias=False, padding=1)
            self.bn2 = nn.BatchNorm2d(3, eps=1e-04, affine=False)
            self.fc1 = nn.Linear(3 * 2 * 2, self.rep_dim, bias=False)

        def forward(self, x):
            x = self.conv1(x)
            x = self.pool(F.leaky_relu(self.bn1(x)))
            x = self.conv2(x)
            x = self.pool(F.leaky_relu(self.bn2(x)))
            x = x.view(x.size(0), -1)
            x = self.fc1(x)
            return x

    class MyMNIST(Dataset):
        def __init__(self, images, targets):
            self.data, self.targets = images, targets

        def __getitem__(self, index):
            img, target = torch.from_numpy(self.data[index]), int(self.targets[index])
            return img, target, index

        def __len__(self):
            return len(self.data)

    def get_radius(dist, nu):
        return np.quantile(np.sqrt(dist.clone().data.cpu().numpy()), 1 - nu)

    def roc_auc_score(labels, scores):  # sklearn's, by ranks (no ties here)
        ranks = np.argsort(np.argsort(scores)) + 1
        pos = labels == 1
        return (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())

    class DeepSVDDTrainer:
        def __init__(self, objective, R, c, nu, lr=0.001, n_epochs=150, lr_milestones=(), batch_size=128,
                     weight_decay=1e-6, device='cpu', optimizer_name='amsgrad'):
            assert objective in ('one-class', 'soft-boundary')
            self.objective = objective
            self.R = torch.tensor(R, device=device)  # radius R initialized with 0 by default.
            self.c = torch.tensor(c, device=device) if c is not None else None
            self.nu = nu
            self.warm_up_n_epochs = 1
            self.lr, self.n_epochs, self.lr_milestones = lr, n_epochs, lr_milestones
            self.batch_size, self.weight_decay, self.device = batch_size, weight_decay, device
            self.optimizer_name = optimizer_name
            self.losses = []

        def train(self, dataset, net):
            train_loader = DataLoader(dataset, batch_size=self.batch_size, shuffle=False)
            optimizer = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay,
                                         amsgrad=self.optimizer_name == 'amsgrad')
            scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=self.lr_milestones, gamma=0.1)
            if self.c is None:
                self.c = self.init_center_c(train_loader, net)
            net.train()
            for epoch in range(self.n_epochs):
                scheduler.step()
                loss_epoch = 0.0
                n_batches = 0
                for data in train_loader:
                    inputs, _, _ = data
                    inputs = inputs.to(self.device)
                    optimizer.zero_grad()
                    outputs = net(inputs)
                    dist = torch.sum((outputs - self.c) ** 2, dim=1)
                    if self.objective == 'soft-boundary':
                        scores = dist - self.R ** 2
                        loss = self.R ** 2 + (1 / self.nu) * torch.mean(torch.max(torch.zeros_like(scores), scores))
                    else:
                        loss = torch.mean(dist)
                    loss.backward()
                    optimizer.step()
                    if (self.objective == 'soft-boundary') and (epoch >= self.warm_up_n_epochs):
                        self.R.data = torch.tensor(get_radius(dist, self.nu), device=self.device)
                    loss_epoch += loss.item()
                    n_batches += 1
                self.losses.append(loss_epoch / n_batches)
            return net

        def test(self, dataset, net):
            test_loader = DataLoader(dataset, batch_size=self.batch_size, shuffle=False)
            idx_label_score = []
            net.eval()
            with torch.no_grad():
                for data in test_loader:
                    inputs, labels, idx = data
                    outputs = net(inputs)
                    dist = torch.sum((outputs - self.c) ** 2, dim=1)
                    if self.objective == 'soft-boundary':
                        scores = dist - self.R ** 2
                    else:
                        scores = dist
                    idx_label_score += list(zip(idx.cpu().data.numpy().tolist(),
                                                labels.cpu().data.numpy().tolist(),
                                                scores.cpu().data.numpy().tolist()))
            _, labels, scores = zip(*idx_label_score)
            labels, scores = np.array(labels), np.array(scores)
            return roc_auc_score(labels, scores), scores

        def init_center_c(self, train_loader, net, eps=0.1):
            n_samples = 0
            c = torch.zeros(net.rep_dim, device=self.device)
            net.eval()
            with torch.no_grad():
                for data in train_loader:
                    inputs, _, _ = data
                    inputs = inputs.to(self.device)
                    outputs = net(inputs)
                    n_samples += outputs.shape[0]
                    c += torch.sum(outputs, dim=0)
            c /= n_samples
            c[(abs(c) < eps) & (c < 0)] = -eps
            c[(abs(c) < eps) & (c > 0)] = eps
            return c

    nets = nn.ModuleList([MNIST_LeNet(), MNIST_LeNet()])
    init = load(m, nets, state)
    rng = np.random.default_rng(31)
    train_set = MyMNIST(normal(rng, 6, 1, 8, 8), np.zeros(6))
    test_set = MyMNIST(normal(rng, 4, 1, 8, 8) * np.array([1, 3, 1, 3], np.float32)[:, None, None, None],
                       np.array([0, 1, 0, 1]))
    found = []
    for net, objective in zip(nets, ('one-class', 'soft-boundary')):
        trainer = DeepSVDDTrainer(objective, 0.0, None, nu=0.1, lr=1e-2, n_epochs=2, lr_milestones=(1,),
                                  batch_size=6)
        trainer.train(train_set, net)
        auc, scores = trainer.test(test_set, net)
        found += trainer.losses + trainer.c.tolist() + [float(trainer.R), auc] + list(scores)
        found += [float(b.sum()) for b in net.buffers()]
    return init, found + summary(nets.parameters())


def test_deep_svdd():
    compare(deep_svdd)


# (h) vsitzmann/siren's explore_siren.ipynb: SineLayer's first-layer and omega_0-scaled uniform_ inits under
# no_grad, sin(omega_0 * linear), the outermost linear layer, get_mgrid by linspace and meshgrid stacked on the last
# dim, forward returning coords.clone().detach().requires_grad_(True), and the gradient, divergence and laplace
# operators by torch.autograd.grad(create_graph=True); the image fit, then the Poisson fit of gradients (a
# second-order backward), and the laplacian of the fit (the numpy Sobel image stands in for scipy.ndimage's)
def siren(m, state=None):
    torch, nn = m.torch, m.nn

    class SineLayer(nn.Module):
        def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
            super().__init__()
            self.omega_0 = omega_0
            self.is_first = is_first
            self.in_features = in_features
            self.linear = nn.Linear(in_features, out_features, bias=bias)
            self.init_weights()

        def init_weights(self):
            with torch.no_grad():
                if self.is_first:
                    self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
                else:
                    self.linear.weight.uniform_(-np.sqrt(6 / self.in_features) / self.omega_0,
                                                np.sqrt(6 / self.in_features) / self.omega_0)

        def forward(self, input):
            return torch.sin(self.omega_0 * self.linear(input))

    class Siren(nn.Module):
        def __init__(self, in_features, hidden_features, hidden_layers, out_features, outermost_linear=False,
                     first_omega_0=30, hidden_omega_0=30.):
            super().__init__()
            self.net = []
            self.net.append(SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0))
            for i in range(hidden_layers):
                self.net.append(SineLayer(hidden_features, hidden_features, is_first=False, omega_0=hidden_omega_0))
            if outermost_linear:
                final_linear = nn.Linear(hidden_features, out_features)
                with torch.no_grad():
                    final_linear.weight.uniform_(-np.sqrt(6 / hidden_features) / hidden_omega_0,
                                                 np.sqrt(6 / hidden_features) / hidden_omega_0)
                self.net.append(final_linear)
            else:
                self.net.append(SineLayer(hidden_features, out_features, is_first=False, omega_0=hidden_omega_0))
            self.net = nn.Sequential(*self.net)

        def forward(self, coords):
            coords = coords.clone().detach().requires_grad_(True)  # allows to take derivative w.r.t. input
            output = self.net(coords)
            return output, coords

    def laplace(y, x):
        grad = gradient(y, x)
        return divergence(grad, x)

    def divergence(y, x):
        div = 0.
        for i in range(y.shape[-1]):
            div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]), create_graph=True)[0][..., i:i + 1]
        return div

    def gradient(y, x, grad_outputs=None):
        if grad_outputs is None:
            grad_outputs = torch.ones_like(y)
        grad = torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]
        return grad

    def get_mgrid(sidelen, dim=2):
        tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
        mgrid = torch.stack(torch.meshgrid(*tensors, indexing='ij'), dim=-1)
        mgrid = mgrid.reshape(-1, dim)
        return mgrid

    sidelen = 5
    rng = np.random.default_rng(37)
    img = rng.uniform(-1, 1, (sidelen, sidelen)).astype(np.float32)
    pad = np.pad(img, 1, mode="edge")
    grads_x = (pad[2:, 1:-1] - pad[:-2, 1:-1]) / 2  # np.gradient along the rows, as Sobel's stand-in
    grads_y = (pad[1:-1, 2:] - pad[1:-1, :-2]) / 2
    pixels = torch.from_numpy(img).view(-1, 1)
    grads = torch.stack((torch.from_numpy(grads_x).view(-1), torch.from_numpy(grads_y).view(-1)), dim=-1)
    coords = get_mgrid(sidelen, 2)
    models = nn.ModuleList([Siren(in_features=2, out_features=1, hidden_features=8, hidden_layers=1,
                                  outermost_linear=True) for _ in range(2)])
    init = load(m, models, state)
    found = []
    img_siren, poisson_siren = models
    optim = torch.optim.Adam(lr=1e-4, params=img_siren.parameters())
    model_input, ground_truth = coords.unsqueeze(0), pixels.unsqueeze(0)
    model_output, coords_out = img_siren(model_input)
    loss = ((model_output - ground_truth) ** 2).mean()
    img_grad = gradient(model_output, coords_out)
    img_laplacian = laplace(model_output, coords_out)
    optim.zero_grad()
    loss.backward()
    optim.step()
    found += [loss.item(), float(img_grad.norm()), float(img_laplacian.abs().sum())]
    optim = torch.optim.Adam(lr=1e-4, params=poisson_siren.parameters())
    for step in range(2):
        model_output, coords_out = poisson_siren(model_input)
        train_loss = ((gradient(model_output, coords_out) - grads.unsqueeze(0)) ** 2).mean()
        optim.zero_grad()
        train_loss.backward()
        optim.step()
        found.append(train_loss.item())
    return init, found + summary(models.parameters())


def test_siren():
    compare(siren)


# (i) lyakaap/VAT-pytorch's vat.py: _disable_tracking_bn_stats, a contextmanager that flips every module's
# track_running_stats by model.apply (BatchNorm then normalises by the batch and leaves its running statistics and
# num_batches_tracked alone), _l2_normalize by a view of (B, -1, 1, 1) and an in-place division, the random
# direction (numpy's draw for torch.rand), d.requires_grad_(), the power iteration's kl_div(reduction='batchmean')
# backward to d.grad and model.zero_grad(), the LDS at the adversarial direction; the training step adding it to
# the cross-entropy, with a BatchNorm net whose running statistics are compared
def vat(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    @contextlib.contextmanager
    def _disable_tracking_bn_stats(model):

        def switch_attr(m):
            if hasattr(m, 'track_running_stats'):
                m.track_running_stats ^= True

        model.apply(switch_attr)
        yield
        model.apply(switch_attr)

    def _l2_normalize(d):
        d_reshaped = d.view(d.shape[0], -1, *(1 for _ in range(d.dim() - 2)))
        d /= torch.norm(d_reshaped, dim=1, keepdim=True) + 1e-8
        return d

    class VATLoss(nn.Module):
        def __init__(self, xi=10.0, eps=1.0, ip=1):
            super(VATLoss, self).__init__()
            self.xi = xi
            self.eps = eps
            self.ip = ip

        def forward(self, model, x):
            with torch.no_grad():
                pred = F.softmax(model(x), dim=1)
            # prepare random unit tensor
            d = torch.from_numpy(rng.uniform(0, 1, tuple(x.shape)).astype(np.float32)).sub(0.5).to(x.device)
            d = _l2_normalize(d)
            with _disable_tracking_bn_stats(model):
                # calc adversarial direction
                for _ in range(self.ip):
                    d.requires_grad_()
                    pred_hat = model(x + self.xi * d)
                    logp_hat = F.log_softmax(pred_hat, dim=1)
                    adv_distance = F.kl_div(logp_hat, pred, reduction='batchmean')
                    adv_distance.backward()
                    d = _l2_normalize(d.grad)
                    model.zero_grad()
                # calc LDS
                r_adv = d * self.eps
                pred_hat = model(x + r_adv)
                logp_hat = F.log_softmax(pred_hat, dim=1)
                lds = F.kl_div(logp_hat, pred, reduction='batchmean')
            return lds

    model = nn.Sequential(nn.Conv2d(1, 3, 3, bias=False), nn.BatchNorm2d(3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(3, 4, bias=False), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 3))
    init = load(m, model, state)
    rng = np.random.default_rng(41)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    vat_loss = VATLoss(xi=10.0, eps=1.0, ip=1)
    found = []
    for _ in range(2):
        data = torch.tensor(normal(rng, 4, 1, 6, 6))
        target = torch.tensor(rng.integers(0, 3, 4))
        lds = vat_loss(model, data)
        assert all(m.track_running_stats for m in model.modules() if hasattr(m, 'track_running_stats'))
        output = model(data)
        loss = F.cross_entropy(output, target) + 1.0 * lds
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        found += [lds.item(), loss.item()]
    found += [float(b.float().sum()) for b in model.buffers()]
    return init, found + summary(model.parameters())


def test_vat():
    compare(vat)


# (j) weihua916/powerful-gnns' models/graphcnn.py, models/mlp.py and main.py (GIN): S2VGraph-like records (node
# features, neighbour lists, an edge_mat LongTensor; networkx's graph, here its node count), the block adjacency and
# the graph pooling matrix as torch.sparse.FloatTensor(idx, elem, torch.Size) multiplied by torch.spmm, self-loops
# cat'ed without learn_eps, (1 + eps[layer]) * h with a learnt eps, max neighbour pooling over a padded neighbour
# LongTensor with a dummy row of column minima, average pooling by spmm degrees, MLPs with BatchNorm1d, the score
# summed over layers with F.dropout (final_dropout 0 here: tnet's and torch's masks differ); Adam and StepLR; and the
# readout again as a sum by index_add_ over torch.repeat_interleave(node counts), the batch vector of PyG's style;
# the MLPs' biases, each before a BatchNorm, frozen (their gradients are rounding alone, which Adam would normalise)
def powerful_gnns(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class S2VGraph(object):
        def __init__(self, n, label, node_tags=None, node_features=None):
            self.n = n  # len(graph.g) in the repository (a networkx graph)
            self.label = label
            self.node_tags = node_tags
            self.neighbors = []
            self.node_features = 0
            self.edge_mat = 0
            self.max_neighbor = 0

    class MLP(nn.Module):
        def __init__(self, num_layers, input_dim, hidden_dim, output_dim):
            super(MLP, self).__init__()
            self.linear_or_not = True  # default is linear model
            self.num_layers = num_layers
            if num_layers < 1:
                raise ValueError("number of layers should be positive!")
            elif num_layers == 1:
                self.linear = nn.Linear(input_dim, output_dim)
            else:
                self.linear_or_not = False
                self.linears = torch.nn.ModuleList()
                self.batch_norms = torch.nn.ModuleList()
                self.linears.append(nn.Linear(input_dim, hidden_dim))
                for layer in range(num_layers - 2):
                    self.linears.append(nn.Linear(hidden_dim, hidden_dim))
                self.linears.append(nn.Linear(hidden_dim, output_dim))
                for layer in range(num_layers - 1):
                    self.batch_norms.append(nn.BatchNorm1d((hidden_dim)))

        def forward(self, x):
            if self.linear_or_not:
                return self.linear(x)
            else:
                h = x
                for layer in range(self.num_layers - 1):
                    h = F.relu(self.batch_norms[layer](self.linears[layer](h)))
                return self.linears[self.num_layers - 1](h)

    class GraphCNN(nn.Module):
        def __init__(self, num_layers, num_mlp_layers, input_dim, hidden_dim, output_dim, final_dropout, learn_eps,
                     graph_pooling_type, neighbor_pooling_type, device):
            super(GraphCNN, self).__init__()
            self.final_dropout = final_dropout
            self.device = device
            self.num_layers = num_layers
            self.graph_pooling_type = graph_pooling_type
            self.neighbor_pooling_type = neighbor_pooling_type
            self.learn_eps = learn_eps
            self.eps = nn.Parameter(torch.zeros(self.num_layers - 1))
            self.mlps = torch.nn.ModuleList()
            self.batch_norms = torch.nn.ModuleList()
            for layer in range(self.num_layers - 1):
                if layer == 0:
                    self.mlps.append(MLP(num_mlp_layers, input_dim, hidden_dim, hidden_dim))
                else:
                    self.mlps.append(MLP(num_mlp_layers, hidden_dim, hidden_dim, hidden_dim))
                self.batch_norms.append(nn.BatchNorm1d(hidden_dim))
            self.linears_prediction = torch.nn.ModuleList()
            for layer in range(num_layers):
                if layer == 0:
                    self.linears_prediction.append(nn.Linear(input_dim, output_dim))
                else:
                    self.linears_prediction.append(nn.Linear(hidden_dim, output_dim))

        def __preprocess_neighbors_maxpool(self, batch_graph):
            max_deg = max([graph.max_neighbor for graph in batch_graph])
            padded_neighbor_list = []
            start_idx = [0]
            for i, graph in enumerate(batch_graph):
                start_idx.append(start_idx[i] + graph.n)
                padded_neighbors = []
                for j in range(len(graph.neighbors)):
                    pad = [n + start_idx[i] for n in graph.neighbors[j]]
                    pad.extend([-1] * (max_deg - len(pad)))
                    if not self.learn_eps:
                        pad.append(j + start_idx[i])
                    padded_neighbors.append(pad)
                padded_neighbor_list.extend(padded_neighbors)
            return torch.LongTensor(padded_neighbor_list)

        def __preprocess_neighbors_sumavepool(self, batch_graph):
            edge_mat_list = []
            start_idx = [0]
            for i, graph in enumerate(batch_graph):
                start_idx.append(start_idx[i] + graph.n)
                edge_mat_list.append(graph.edge_mat + start_idx[i])
            Adj_block_idx = torch.cat(edge_mat_list, 1)
            Adj_block_elem = torch.ones(Adj_block_idx.shape[1])
            if not self.learn_eps:
                num_node = start_idx[-1]
                self_loop_edge = torch.LongTensor([range(num_node), range(num_node)])
                elem = torch.ones(num_node)
                Adj_block_idx = torch.cat([Adj_block_idx, self_loop_edge], 1)
                Adj_block_elem = torch.cat([Adj_block_elem, elem], 0)
            Adj_block = torch.sparse.FloatTensor(Adj_block_idx, Adj_block_elem,
                                                 torch.Size([start_idx[-1], start_idx[-1]]))
            return Adj_block.to(self.device)

        def __preprocess_graphpool(self, batch_graph):
            start_idx = [0]
            for i, graph in enumerate(batch_graph):
                start_idx.append(start_idx[i] + graph.n)
            idx = []
            elem = []
            for i, graph in enumerate(batch_graph):
                if self.graph_pooling_type == "average":
                    elem.extend([1. / graph.n] * graph.n)
                else:
                    elem.extend([1] * graph.n)
                idx.extend([[i, j] for j in range(start_idx[i], start_idx[i + 1], 1)])
            elem = torch.FloatTensor(elem)
            idx = torch.LongTensor(idx).transpose(0, 1)
            graph_pool = torch.sparse.FloatTensor(idx, elem, torch.Size([len(batch_graph), start_idx[-1]]))
            return graph_pool.to(self.device)

        def maxpool(self, h, padded_neighbor_list):
            dummy = torch.min(h, dim=0)[0]
            h_with_dummy = torch.cat([h, dummy.reshape((1, -1)).to(self.device)])
            pooled_rep = torch.max(h_with_dummy[padded_neighbor_list], dim=1)[0]
            return pooled_rep

        def next_layer_eps(self, h, layer, padded_neighbor_list=None, Adj_block=None):
            if self.neighbor_pooling_type == "max":
                pooled = self.maxpool(h, padded_neighbor_list)
            else:
                pooled = torch.spmm(Adj_block, h)
                if self.neighbor_pooling_type == "average":
                    degree = torch.spmm(Adj_block, torch.ones((Adj_block.shape[0], 1)).to(self.device))
                    pooled = pooled / degree
            pooled = pooled + (1 + self.eps[layer]) * h
            pooled_rep = self.mlps[layer](pooled)
            h = self.batch_norms[layer](pooled_rep)
            h = F.relu(h)
            return h

        def next_layer(self, h, layer, padded_neighbor_list=None, Adj_block=None):
            if self.neighbor_pooling_type == "max":
                pooled = self.maxpool(h, padded_neighbor_list)
            else:
                pooled = torch.spmm(Adj_block, h)
                if self.neighbor_pooling_type == "average":
                    degree = torch.spmm(Adj_block, torch.ones((Adj_block.shape[0], 1)).to(self.device))
                    pooled = pooled / degree
            pooled_rep = self.mlps[layer](pooled)
            h = self.batch_norms[layer](pooled_rep)
            h = F.relu(h)
            return h

        def forward(self, batch_graph):
            X_concat = torch.cat([graph.node_features for graph in batch_graph], 0).to(self.device)
            graph_pool = self.__preprocess_graphpool(batch_graph)
            if self.neighbor_pooling_type == "max":
                padded_neighbor_list = self.__preprocess_neighbors_maxpool(batch_graph)
            else:
                Adj_block = self.__preprocess_neighbors_sumavepool(batch_graph)
            hidden_rep = [X_concat]
            h = X_concat
            for layer in range(self.num_layers - 1):
                if self.neighbor_pooling_type == "max" and self.learn_eps:
                    h = self.next_layer_eps(h, layer, padded_neighbor_list=padded_neighbor_list)
                elif not self.neighbor_pooling_type == "max" and self.learn_eps:
                    h = self.next_layer_eps(h, layer, Adj_block=Adj_block)
                elif self.neighbor_pooling_type == "max" and not self.learn_eps:
                    h = self.next_layer(h, layer, padded_neighbor_list=padded_neighbor_list)
                elif not self.neighbor_pooling_type == "max" and not self.learn_eps:
                    h = self.next_layer(h, layer, Adj_block=Adj_block)
                hidden_rep.append(h)
            score_over_layer = 0
            for layer, h in enumerate(hidden_rep):
                pooled_h = torch.spmm(graph_pool, h)
                score_over_layer += F.dropout(self.linears_prediction[layer](pooled_h), self.final_dropout,
                                              training=self.training)
            self.hidden_rep = hidden_rep
            return score_over_layer

    rng = np.random.default_rng(43)
    graphs = []
    for n, edges, label in ((4, [(0, 1), (1, 2), (2, 3)], 0), (3, [(0, 1), (1, 2), (0, 2)], 1),
                            (5, [(0, 1), (0, 2), (0, 3), (3, 4)], 1)):
        g = S2VGraph(n, label)
        g.neighbors = [[] for i in range(n)]
        for i, j in edges:
            g.neighbors[i].append(j)
            g.neighbors[j].append(i)
        g.max_neighbor = max(len(nb) for nb in g.neighbors)
        edges = [list(pair) for pair in edges]
        edges.extend([[i, j] for j, i in edges])
        g.edge_mat = torch.LongTensor(edges).transpose(0, 1)
        g.node_features = torch.from_numpy(normal(rng, n, 3))
        graphs.append(g)
    models = nn.ModuleList([
        GraphCNN(3, 2, 3, 4, 2, 0.0, True, "sum", "sum", "cpu"),
        GraphCNN(3, 2, 3, 4, 2, 0.0, False, "average", "max", "cpu")])
    init = load(m, models, state)
    for linear in (mod for mod in models.modules() if isinstance(mod, nn.Linear) and mod.out_features == 4):
        linear.bias.requires_grad_(False)  # before a BatchNorm: a gradient of rounding alone, which Adam would normalise
    criterion = nn.CrossEntropyLoss()
    losses = []
    for model in models:
        with torch.no_grad():
            model.eps.fill_(0.25)  # learnt eps, away from its zero init (the second model never reads it)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=50, gamma=0.5)
        for epoch in range(2):
            model.train()
            output = model(graphs)
            labels = torch.LongTensor([graph.label for graph in graphs])
            loss = criterion(output, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.detach().cpu().numpy().item())
    h = models[0].hidden_rep[-1].detach()
    batch = torch.repeat_interleave(torch.tensor([g.n for g in graphs]))
    readout = torch.zeros(len(graphs), h.shape[1]).index_add_(0, batch, h)
    pool = models[0]._GraphCNN__preprocess_graphpool(graphs)
    assert batch.tolist() == [0] * 4 + [1] * 3 + [2] * 5
    losses += (readout - torch.spmm(pool, h)).abs().sum(1).tolist()
    return init, losses + summary(models.parameters())


def test_powerful_gnns_gin():
    compare(powerful_gnns)


# (k) Kaixhin/Rainbow's model.py and agent.py: NoisyLinear with weight_mu/weight_sigma parameters and epsilon
# buffers, reset_noise by the factorised noise f(x) = x.sign().mul_(x.abs().sqrt_()) and ger (numpy draws it here),
# F.linear with mu + sigma * epsilon in training and mu alone in eval; the dueling C51 head (value + advantage -
# advantage.mean(1, keepdim=True), softmax or log_softmax over atoms); Agent.learn: the online net's log-probabilities
# of the taken actions, the double-DQN argmax by the online net over (pns * support).sum(2), the target net's
# distribution there, the Bellman update of the support clamped to [Vmin, Vmax], the projection by floor and ceil with
# l[(u > 0) * (l == u)] -= 1 and u[(l < atoms - 1) * (l == u)] += 1 on int64 tensors, an offset linspace .to(actions),
# m.view(-1).index_add_ twice, the cross-entropy weighted by importance weights, and the new priorities
def rainbow(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    draws = np.random.default_rng(47)

    class NoisyLinear(nn.Module):
        def __init__(self, in_features, out_features, std_init=0.5):
            super(NoisyLinear, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.std_init = std_init
            self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
            self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
            self.register_buffer('weight_epsilon', torch.empty(out_features, in_features))
            self.bias_mu = nn.Parameter(torch.empty(out_features))
            self.bias_sigma = nn.Parameter(torch.empty(out_features))
            self.register_buffer('bias_epsilon', torch.empty(out_features))
            self.reset_parameters()
            self.reset_noise()

        def reset_parameters(self):
            mu_range = 1 / math.sqrt(self.in_features)
            self.weight_mu.data.uniform_(-mu_range, mu_range)
            self.weight_sigma.data.fill_(self.std_init / math.sqrt(self.in_features))
            self.bias_mu.data.uniform_(-mu_range, mu_range)
            self.bias_sigma.data.fill_(self.std_init / math.sqrt(self.out_features))

        def _scale_noise(self, size):
            x = torch.from_numpy(draws.standard_normal(size).astype(np.float32))  # torch.randn(size, device=...)
            return x.sign().mul_(x.abs().sqrt_())

        def reset_noise(self):
            epsilon_in = self._scale_noise(self.in_features)
            epsilon_out = self._scale_noise(self.out_features)
            self.weight_epsilon.copy_(epsilon_out.ger(epsilon_in))
            self.bias_epsilon.copy_(epsilon_out)

        def forward(self, input):
            if self.training:
                return F.linear(input, self.weight_mu + self.weight_sigma * self.weight_epsilon,
                                self.bias_mu + self.bias_sigma * self.bias_epsilon)
            else:
                return F.linear(input, self.weight_mu, self.bias_mu)

    class DQN(nn.Module):
        def __init__(self, args, action_space):
            super(DQN, self).__init__()
            self.atoms = args.atoms
            self.action_space = action_space
            self.fc = nn.Sequential(nn.Linear(args.state_dim, args.hidden_size), nn.ReLU())
            self.fc_h_v = NoisyLinear(args.hidden_size, args.hidden_size, std_init=args.noisy_std)
            self.fc_h_a = NoisyLinear(args.hidden_size, args.hidden_size, std_init=args.noisy_std)
            self.fc_z_v = NoisyLinear(args.hidden_size, self.atoms, std_init=args.noisy_std)
            self.fc_z_a = NoisyLinear(args.hidden_size, action_space * self.atoms, std_init=args.noisy_std)

        def forward(self, x, log=False):
            x = self.fc(x)
            v = self.fc_z_v(F.relu(self.fc_h_v(x)))  # Value stream
            a = self.fc_z_a(F.relu(self.fc_h_a(x)))  # Advantage stream
            v, a = v.view(-1, 1, self.atoms), a.view(-1, self.action_space, self.atoms)
            q = v + a - a.mean(1, keepdim=True)  # Combine streams
            if log:  # Use log softmax for numerical stability
                q = F.log_softmax(q, dim=2)  # Log probabilities with action over second dimension
            else:
                q = F.softmax(q, dim=2)  # Probabilities with action over second dimension
            return q

        def reset_noise(self):
            for name, module in self.named_children():
                if 'fc_' in name:
                    module.reset_noise()

    class Args:
        atoms, V_min, V_max, batch_size, multi_step, discount = 5, -2.0, 2.0, 4, 3, 0.99
        state_dim, hidden_size, noisy_std, learning_rate, adam_eps, norm_clip = 3, 8, 0.1, 1e-3, 1.5e-4, 10

    args = Args()
    action_space = 3
    nets = nn.ModuleList([DQN(args, action_space), DQN(args, action_space)])
    init = load(m, nets, state)
    online_net, target_net = nets
    support = torch.linspace(args.V_min, args.V_max, args.atoms)
    delta_z = (args.V_max - args.V_min) / (args.atoms - 1)
    n, discount = args.multi_step, args.discount
    optimiser = torch.optim.Adam(online_net.parameters(), lr=args.learning_rate, eps=args.adam_eps)
    online_net.train()
    target_net.train()
    for param in target_net.parameters():
        param.requires_grad = False
    found = []
    for step in range(2):
        states = torch.from_numpy(normal(draws, args.batch_size, args.state_dim))
        actions = torch.from_numpy(draws.integers(0, action_space, args.batch_size))
        returns = torch.from_numpy((draws.uniform(-1, 1, args.batch_size) * 3).astype(np.float32))
        next_states = torch.from_numpy(normal(draws, args.batch_size, args.state_dim))
        nonterminals = torch.from_numpy(np.array([[1.0], [1.0], [0.0], [1.0]], np.float32))
        weights = torch.from_numpy(draws.uniform(0.5, 1.0, args.batch_size).astype(np.float32))
        log_ps = online_net(states, log=True)
        log_ps_a = log_ps[range(args.batch_size), actions]
        with torch.no_grad():
            pns = online_net(next_states)
            dns = support.expand_as(pns) * pns
            argmax_indices_ns = dns.sum(2).argmax(1)
            target_net.reset_noise()
            pns = target_net(next_states)
            pns_a = pns[range(args.batch_size), argmax_indices_ns]
            Tz = returns.unsqueeze(1) + nonterminals * (discount ** n) * support.unsqueeze(0)
            Tz = Tz.clamp(min=args.V_min, max=args.V_max)
            b = (Tz - args.V_min) / delta_z
            l, u = b.floor().to(torch.int64), b.ceil().to(torch.int64)
            l[(u > 0) * (l == u)] -= 1
            u[(l < (args.atoms - 1)) * (l == u)] += 1
            m_ = states.new_zeros(args.batch_size, args.atoms)
            offset = torch.linspace(0, ((args.batch_size - 1) * args.atoms), args.batch_size).unsqueeze(1).expand(
                args.batch_size, args.atoms).to(actions)
            m_.view(-1).index_add_(0, (l + offset).view(-1), (pns_a * (u.float() - b)).view(-1))
            m_.view(-1).index_add_(0, (u + offset).view(-1), (pns_a * (b - l.float())).view(-1))
        loss = -torch.sum(m_ * log_ps_a, 1)
        online_net.zero_grad()
        (weights * loss).mean().backward()
        nn.utils.clip_grad_norm_(online_net.parameters(), args.norm_clip)
        optimiser.step()
        priorities = loss.detach().cpu().numpy()
        online_net.reset_noise()
        found += priorities.tolist() + m_.sum(1).tolist() + [float(l.sum()), float(u.sum())]
    target_net.load_state_dict(online_net.state_dict())
    online_net.eval()
    with torch.no_grad():
        act = (online_net(states) * support).sum(2).argmax(1)
    return init, found + act.tolist() + summary(online_net.parameters())


def test_rainbow_c51_projection():
    compare(rainbow)


# (l) kimiyoung/transformer-xl's pytorch/mem_transformer.py: PositionalEmbedding by torch.ger of a descending pos_seq
# and inv_freq, expanded over the batch; RelPartialLearnableMultiHeadAttn with the r_w_bias and r_r_bias parameters,
# the AC and BD terms by torch.einsum of a tuple of operands, _rel_shift by a zero column cat'ed and a view of the
# padded scores, the causal mask by torch.triu(new_ones(qlen, klen), diagonal=1 + mlen) (bool here, as the Hugging
# Face port; the repository's .byte() masks are an error in torch today) filled with -inf on float scores; the
# post-norm PositionwiseFF; init_mems' torch.empty(0) memories, cat'ed with 3-D hidden states (torch's legacy skip of
# 1-D empty tensors), and _update_mems under no_grad by a cat, a slice and detach (called with mlen and qlen swapped,
# as the repository does); two segments trained one after the other, the memory of the first read by the second
def transformer_xl(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class PositionalEmbedding(nn.Module):
        def __init__(self, demb):
            super(PositionalEmbedding, self).__init__()
            self.demb = demb
            inv_freq = 1 / (10000 ** (torch.arange(0.0, demb, 2.0) / demb))
            self.register_buffer('inv_freq', inv_freq)

        def forward(self, pos_seq, bsz=None):
            sinusoid_inp = torch.ger(pos_seq, self.inv_freq)
            pos_emb = torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)
            if bsz is not None:
                return pos_emb[:, None, :].expand(-1, bsz, -1)
            else:
                return pos_emb[:, None, :]

    class PositionwiseFF(nn.Module):
        def __init__(self, d_model, d_inner, dropout, pre_lnorm=False):
            super(PositionwiseFF, self).__init__()
            self.CoreNet = nn.Sequential(nn.Linear(d_model, d_inner), nn.ReLU(inplace=True), nn.Dropout(dropout),
                                         nn.Linear(d_inner, d_model), nn.Dropout(dropout))
            self.layer_norm = nn.LayerNorm(d_model)
            self.pre_lnorm = pre_lnorm

        def forward(self, inp):
            if self.pre_lnorm:
                core_out = self.CoreNet(self.layer_norm(inp))
                output = core_out + inp
            else:
                core_out = self.CoreNet(inp)
                output = self.layer_norm(inp + core_out)
            return output

    class RelPartialLearnableMultiHeadAttn(nn.Module):
        def __init__(self, n_head, d_model, d_head, dropout, dropatt=0, pre_lnorm=False):
            super().__init__()
            self.n_head, self.d_model, self.d_head = n_head, d_model, d_head
            self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
            self.drop = nn.Dropout(dropout)
            self.dropatt = nn.Dropout(dropatt)
            self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
            self.layer_norm = nn.LayerNorm(d_model)
            self.scale = 1 / (d_head ** 0.5)
            self.pre_lnorm = pre_lnorm
            self.r_net = nn.Linear(self.d_model, self.n_head * self.d_head, bias=False)

        def _rel_shift(self, x, zero_triu=False):
            zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]), device=x.device, dtype=x.dtype)
            x_padded = torch.cat([zero_pad, x], dim=1)
            x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
            x = x_padded[1:].view_as(x)
            if zero_triu:
                ones = torch.ones((x.size(0), x.size(1)))
                x = x * torch.tril(ones, x.size(1) - x.size(0))[:, :, None, None]
            return x

        def forward(self, w, r, r_w_bias, r_r_bias, attn_mask=None, mems=None):
            qlen, rlen, bsz = w.size(0), r.size(0), w.size(1)
            if mems is not None:
                cat = torch.cat([mems, w], 0)
                w_heads = self.qkv_net(cat)
                r_head_k = self.r_net(r)
                w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
                w_head_q = w_head_q[-qlen:]
            else:
                w_heads = self.qkv_net(w)
                r_head_k = self.r_net(r)
                w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
            klen = w_head_k.size(0)
            w_head_q = w_head_q.view(qlen, bsz, self.n_head, self.d_head)
            w_head_k = w_head_k.view(klen, bsz, self.n_head, self.d_head)
            w_head_v = w_head_v.view(klen, bsz, self.n_head, self.d_head)
            r_head_k = r_head_k.view(rlen, self.n_head, self.d_head)
            rw_head_q = w_head_q + r_w_bias
            AC = torch.einsum('ibnd,jbnd->ijbn', (rw_head_q, w_head_k))
            rr_head_q = w_head_q + r_r_bias
            BD = torch.einsum('ibnd,jnd->ijbn', (rr_head_q, r_head_k))
            BD = self._rel_shift(BD)
            attn_score = AC + BD
            attn_score.mul_(self.scale)
            if attn_mask is not None and attn_mask.any().item():
                if attn_mask.dim() == 2:
                    attn_score = attn_score.float().masked_fill(
                        attn_mask[None, :, :, None], -float('inf')).type_as(attn_score)
                elif attn_mask.dim() == 3:
                    attn_score = attn_score.float().masked_fill(
                        attn_mask[:, :, :, None], -float('inf')).type_as(attn_score)
            attn_prob = F.softmax(attn_score, dim=1)
            attn_prob = self.dropatt(attn_prob)
            attn_vec = torch.einsum('ijbn,jbnd->ibnd', (attn_prob, w_head_v))
            attn_vec = attn_vec.contiguous().view(attn_vec.size(0), attn_vec.size(1), self.n_head * self.d_head)
            attn_out = self.o_net(attn_vec)
            attn_out = self.drop(attn_out)
            if self.pre_lnorm:
                output = w + attn_out
            else:
                output = self.layer_norm(w + attn_out)
            return output

    class RelPartialLearnableDecoderLayer(nn.Module):
        def __init__(self, n_head, d_model, d_head, d_inner, dropout, **kwargs):
            super(RelPartialLearnableDecoderLayer, self).__init__()
            self.dec_attn = RelPartialLearnableMultiHeadAttn(n_head, d_model, d_head, dropout, **kwargs)
            self.pos_ff = PositionwiseFF(d_model, d_inner, dropout, pre_lnorm=kwargs.get('pre_lnorm'))

        def forward(self, dec_inp, r, r_w_bias, r_r_bias, dec_attn_mask=None, mems=None):
            output = self.dec_attn(dec_inp, r, r_w_bias, r_r_bias, attn_mask=dec_attn_mask, mems=mems)
            output = self.pos_ff(output)
            return output

    class MemTransformerLM(nn.Module):
        def __init__(self, n_token, n_layer, n_head, d_model, d_head, d_inner, dropout, dropatt, tgt_len=None,
                     mem_len=None, ext_len=None, clamp_len=-1):
            super(MemTransformerLM, self).__init__()
            self.n_token, self.d_model, self.n_head, self.d_head = n_token, d_model, n_head, d_head
            self.word_emb = nn.Embedding(n_token, d_model)
            self.emb_scale = d_model ** 0.5
            self.drop = nn.Dropout(dropout)
            self.n_layer, self.tgt_len, self.mem_len, self.ext_len = n_layer, tgt_len, mem_len, ext_len
            self.max_klen = tgt_len + ext_len + mem_len
            self.layers = nn.ModuleList()
            for i in range(n_layer):
                self.layers.append(RelPartialLearnableDecoderLayer(n_head, d_model, d_head, d_inner, dropout,
                                                                   dropatt=dropatt, pre_lnorm=False))
            self.out_layer = nn.Linear(d_model, n_token)
            self.out_layer.weight = self.word_emb.weight
            self.clamp_len = clamp_len
            self.pos_emb = PositionalEmbedding(self.d_model)
            self.r_w_bias = nn.Parameter(torch.Tensor(self.n_head, self.d_head))
            self.r_r_bias = nn.Parameter(torch.Tensor(self.n_head, self.d_head))
            nn.init.normal_(self.r_w_bias, 0.0, 0.02)
            nn.init.normal_(self.r_r_bias, 0.0, 0.02)

        def init_mems(self):
            if self.mem_len > 0:
                mems = []
                param = next(self.parameters())
                for i in range(self.n_layer + 1):
                    empty = torch.empty(0, dtype=param.dtype, device=param.device)
                    mems.append(empty)
                return mems
            else:
                return None

        def _update_mems(self, hids, mems, qlen, mlen):
            if mems is None:
                return None
            assert len(hids) == len(mems), 'len(hids) != len(mems)'
            with torch.no_grad():
                new_mems = []
                end_idx = mlen + max(0, qlen - 0 - self.ext_len)
                beg_idx = max(0, end_idx - self.mem_len)
                for i in range(len(hids)):
                    cat = torch.cat([mems[i], hids[i]], dim=0)
                    new_mems.append(cat[beg_idx:end_idx].detach())
            return new_mems

        def _forward(self, dec_inp, mems=None):
            qlen, bsz = dec_inp.size()
            word_emb = self.word_emb(dec_inp) * self.emb_scale
            mlen = mems[0].size(0) if mems is not None else 0
            klen = mlen + qlen
            dec_attn_mask = torch.triu(word_emb.new_ones(qlen, klen), diagonal=1 + mlen).bool()[:, :, None]
            hids = []
            pos_seq = torch.arange(klen - 1, -1, -1.0, device=word_emb.device, dtype=word_emb.dtype)
            if self.clamp_len > 0:
                pos_seq.clamp_(max=self.clamp_len)
            pos_emb = self.pos_emb(pos_seq)
            core_out = self.drop(word_emb)
            pos_emb = self.drop(pos_emb)
            hids.append(core_out)
            for i, layer in enumerate(self.layers):
                mems_i = None if mems is None else mems[i]
                core_out = layer(core_out, pos_emb, self.r_w_bias, self.r_r_bias, dec_attn_mask=dec_attn_mask,
                                 mems=mems_i)
                hids.append(core_out)
            core_out = self.drop(core_out)
            new_mems = self._update_mems(hids, mems, mlen, qlen)
            return core_out, new_mems

        def forward(self, data, target, *mems):
            if not mems:
                mems = self.init_mems()
            tgt_len = target.size(0)
            hidden, new_mems = self._forward(data, mems=mems)
            pred_hid = hidden[-tgt_len:]
            logit = self.out_layer(pred_hid.view(-1, pred_hid.size(-1)))
            loss = F.cross_entropy(logit, target.reshape(-1), reduction='none').view(tgt_len, -1)
            if new_mems is None:
                return [loss]
            else:
                return [loss] + new_mems

    model = MemTransformerLM(11, 1, 2, 8, 4, 12, dropout=0.0, dropatt=0.0, tgt_len=3, mem_len=3, ext_len=0)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=2.5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 100, eta_min=0.0)
    rng = np.random.default_rng(53)
    stream = torch.from_numpy(rng.integers(0, 11, (7, 2)))  # LMOrderedIterator's [len, bsz] batches
    mems = tuple()
    losses = []
    for i in range(0, 6, 3):
        data, target = stream[i:i + 3], stream[i + 1:i + 4]
        model.zero_grad()
        ret = model(data, target, *mems)
        loss, mems = ret[0], ret[1:]
        loss = loss.float().mean().type_as(loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    losses += [float(mem.abs().sum()) for mem in mems] + [mems[0].shape[0]]
    return init, losses + summary(model.parameters())


def test_transformer_xl_memory():
    compare(transformer_xl)


# (m) pytorch/examples' vae/main.py with the continuous Bernoulli likelihood of Loaiza-Ganem and Cunningham (the
# change their paper proposes, written with torch.distributions.ContinuousBernoulli(logits=...)): fc1, fc21/fc22,
# fc3/fc4, reparameterize with the noise numpy draws (torch.randn_like's), the loss as -log_prob summed plus the
# Gaussian KLD, the Adam step, and the mean of the decoded law (not its logits' sigmoid) as the reconstruction
def continuous_bernoulli_vae(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    rng = np.random.default_rng(59)

    class VAE(nn.Module):
        def __init__(self):
            super(VAE, self).__init__()
            self.fc1 = nn.Linear(16, 8)
            self.fc21 = nn.Linear(8, 2)
            self.fc22 = nn.Linear(8, 2)
            self.fc3 = nn.Linear(2, 8)
            self.fc4 = nn.Linear(8, 16)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar):
            std = torch.exp(0.5 * logvar)
            eps = torch.from_numpy(rng.standard_normal(tuple(std.shape)).astype(np.float32))
            return mu + eps * std

        def decode(self, z):
            h3 = F.relu(self.fc3(z))
            return self.fc4(h3)  # logits of the continuous Bernoulli (the example's sigmoid goes)

        def forward(self, x):
            mu, logvar = self.encode(x.view(-1, 16))
            z = self.reparameterize(mu, logvar)
            return self.decode(z), mu, logvar

    def loss_function(recon_logits, x, mu, logvar):
        likelihood = torch.distributions.ContinuousBernoulli(logits=recon_logits)
        CB = -likelihood.log_prob(x.view(-1, 16)).sum()
        KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return CB + KLD

    model = VAE()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    found = []
    for batch_idx in range(2):
        data = torch.from_numpy(rng.uniform(0, 1, (3, 1, 4, 4)).astype(np.float32))  # intensities in [0, 1]
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        optimizer.step()
        found.append(loss.item() / len(data))
    model.eval()
    with torch.no_grad():
        recon_logits, _, _ = model(data)
        recon = torch.distributions.ContinuousBernoulli(logits=recon_logits).mean
    found += [float(recon.sum()), float((recon - torch.sigmoid(recon_logits)).abs().sum())]
    return init, found + summary(model.parameters())


def test_continuous_bernoulli_vae():
    compare(continuous_bernoulli_vae)


# (n) voxelmorph/voxelmorph's torch/networks.py, layers.py and losses.py in 3-D: Unet with Conv%dd and MaxPool%dd
# found by getattr, nn.Upsample(mode='nearest') of volumes and cat'ed skips, np.flip of the encoder widths; VxmDense's
# flow convolution re-initialised from Normal(0, 1e-5).sample, ResizeTransform by trilinear interpolate
# (align_corners=True) scaled by the factor, VecInt's scaling and squaring, SpatialTransformer (a meshgrid buffer, the
# locations normalised in place slice by slice, permuted and reversed by a list index, grid_sample of 5-D volumes with
# align_corners=True); train.py's default MSE image loss with Grad('l2', loss_mult=int_downsize) by its
# permute-diff-permute back (y reassigned, as the repository), and the NCC loss by conv3d with a window of ones (the
# repository's .to("cuda") as the input's device) on the images once
def voxelmorph(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    nnf = F
    Normal = m.torch.distributions.normal.Normal  # from torch.distributions.normal import Normal

    class ConvBlock(nn.Module):
        def __init__(self, ndims, in_channels, out_channels, stride=1):
            super().__init__()
            Conv = getattr(nn, 'Conv%dd' % ndims)
            self.main = Conv(in_channels, out_channels, 3, stride, 1)
            self.activation = nn.LeakyReLU(0.2)

        def forward(self, x):
            out = self.main(x)
            out = self.activation(out)
            return out

    class Unet(nn.Module):
        def __init__(self, inshape=None, infeats=None, nb_features=None, max_pool=2, nb_conv_per_level=1,
                     half_res=False):
            super().__init__()
            ndims = len(inshape)
            assert ndims in [1, 2, 3], 'ndims should be one of 1, 2, or 3. found: %d' % ndims
            self.half_res = half_res
            enc_nf, dec_nf = nb_features
            nb_dec_convs = len(enc_nf)
            final_convs = dec_nf[nb_dec_convs:]
            dec_nf = dec_nf[:nb_dec_convs]
            self.nb_levels = int(nb_dec_convs / nb_conv_per_level) + 1
            if isinstance(max_pool, int):
                max_pool = [max_pool] * self.nb_levels
            MaxPooling = getattr(nn, 'MaxPool%dd' % ndims)
            self.pooling = [MaxPooling(s) for s in max_pool]
            self.upsampling = [nn.Upsample(scale_factor=s, mode='nearest') for s in max_pool]
            prev_nf = infeats
            encoder_nfs = [prev_nf]
            self.encoder = nn.ModuleList()
            for level in range(self.nb_levels - 1):
                convs = nn.ModuleList()
                for conv in range(nb_conv_per_level):
                    nf = enc_nf[level * nb_conv_per_level + conv]
                    convs.append(ConvBlock(ndims, prev_nf, nf))
                    prev_nf = nf
                self.encoder.append(convs)
                encoder_nfs.append(prev_nf)
            encoder_nfs = np.flip(encoder_nfs)
            self.decoder = nn.ModuleList()
            for level in range(self.nb_levels - 1):
                convs = nn.ModuleList()
                for conv in range(nb_conv_per_level):
                    nf = dec_nf[level * nb_conv_per_level + conv]
                    convs.append(ConvBlock(ndims, prev_nf, nf))
                    prev_nf = nf
                self.decoder.append(convs)
                if not half_res or level < (self.nb_levels - 2):
                    prev_nf += encoder_nfs[level]
            self.remaining = nn.ModuleList()
            for num, nf in enumerate(final_convs):
                self.remaining.append(ConvBlock(ndims, prev_nf, nf))
                prev_nf = nf
            self.final_nf = prev_nf

        def forward(self, x):
            x_history = [x]
            for level, convs in enumerate(self.encoder):
                for conv in convs:
                    x = conv(x)
                x_history.append(x)
                x = self.pooling[level](x)
            for level, convs in enumerate(self.decoder):
                for conv in convs:
                    x = conv(x)
                if not self.half_res or level < (self.nb_levels - 2):
                    x = self.upsampling[level](x)
                    x = torch.cat([x, x_history.pop()], dim=1)
            for conv in self.remaining:
                x = conv(x)
            return x

    class SpatialTransformer(nn.Module):
        def __init__(self, size, mode='bilinear'):
            super().__init__()
            self.mode = mode
            vectors = [torch.arange(0, s) for s in size]
            grids = torch.meshgrid(vectors, indexing='ij')
            grid = torch.stack(grids)
            grid = torch.unsqueeze(grid, 0)
            grid = grid.type(torch.FloatTensor)
            self.register_buffer('grid', grid, persistent=False)

        def forward(self, src, flow):
            new_locs = self.grid + flow
            shape = flow.shape[2:]
            for i in range(len(shape)):
                new_locs[:, i, ...] = 2 * (new_locs[:, i, ...] / (shape[i] - 1) - 0.5)
            if len(shape) == 2:
                new_locs = new_locs.permute(0, 2, 3, 1)
                new_locs = new_locs[..., [1, 0]]
            elif len(shape) == 3:
                new_locs = new_locs.permute(0, 2, 3, 4, 1)
                new_locs = new_locs[..., [2, 1, 0]]
            return nnf.grid_sample(src, new_locs, align_corners=True, mode=self.mode)

    class VecInt(nn.Module):
        def __init__(self, inshape, nsteps):
            super().__init__()
            assert nsteps >= 0, 'nsteps should be >= 0, found: %d' % nsteps
            self.nsteps = nsteps
            self.scale = 1.0 / (2 ** self.nsteps)
            self.transformer = SpatialTransformer(inshape)

        def forward(self, vec):
            vec = vec * self.scale
            for _ in range(self.nsteps):
                vec = vec + self.transformer(vec, vec)
            return vec

    class ResizeTransform(nn.Module):
        def __init__(self, vel_resize, ndims):
            super().__init__()
            self.factor = 1.0 / vel_resize
            self.mode = 'linear'
            if ndims == 2:
                self.mode = 'bi' + self.mode
            elif ndims == 3:
                self.mode = 'tri' + self.mode

        def forward(self, x):
            if self.factor < 1:
                x = nnf.interpolate(x, align_corners=True, scale_factor=self.factor, mode=self.mode)
                x = self.factor * x
            elif self.factor > 1:
                x = self.factor * x
                x = nnf.interpolate(x, align_corners=True, scale_factor=self.factor, mode=self.mode)
            return x

    class VxmDense(nn.Module):
        def __init__(self, inshape, nb_unet_features=None, int_steps=7, int_downsize=2, bidir=False, src_feats=1,
                     trg_feats=1, unet_half_res=False):
            super().__init__()
            self.training = True
            ndims = len(inshape)
            assert ndims in [1, 2, 3], 'ndims should be one of 1, 2, or 3. found: %d' % ndims
            self.unet_model = Unet(inshape, infeats=(src_feats + trg_feats), nb_features=nb_unet_features,
                                   half_res=unet_half_res)
            Conv = getattr(nn, 'Conv%dd' % ndims)
            self.flow = Conv(self.unet_model.final_nf, ndims, kernel_size=3, padding=1)
            self.flow.weight = nn.Parameter(Normal(0, 1e-5).sample(self.flow.weight.shape))
            self.flow.bias = nn.Parameter(torch.zeros(self.flow.bias.shape))
            if not unet_half_res and int_steps > 0 and int_downsize > 1:
                self.resize = ResizeTransform(int_downsize, ndims)
            else:
                self.resize = None
            if int_steps > 0 and int_downsize > 1:
                self.fullsize = ResizeTransform(1 / int_downsize, ndims)
            else:
                self.fullsize = None
            self.bidir = bidir
            down_shape = [int(dim / int_downsize) for dim in inshape]
            self.integrate = VecInt(down_shape, int_steps) if int_steps > 0 else None
            self.transformer = SpatialTransformer(inshape)

        def forward(self, source, target, registration=False):
            x = torch.cat([source, target], dim=1)
            x = self.unet_model(x)
            flow_field = self.flow(x)
            pos_flow = flow_field
            if self.resize:
                pos_flow = self.resize(pos_flow)
            preint_flow = pos_flow
            neg_flow = -pos_flow if self.bidir else None
            if self.integrate:
                pos_flow = self.integrate(pos_flow)
                neg_flow = self.integrate(neg_flow) if self.bidir else None
                if self.fullsize:
                    pos_flow = self.fullsize(pos_flow)
                    neg_flow = self.fullsize(neg_flow) if self.bidir else None
            y_source = self.transformer(source, pos_flow)
            y_target = self.transformer(target, neg_flow) if self.bidir else None
            if not registration:
                return (y_source, y_target, preint_flow) if self.bidir else (y_source, preint_flow)
            else:
                return y_source, pos_flow

    class MSE:
        def loss(self, y_true, y_pred):
            return torch.mean((y_true - y_pred) ** 2)

    class NCC:
        def __init__(self, win=None):
            self.win = win

        def loss(self, y_true, y_pred):
            Ii = y_true
            Ji = y_pred
            ndims = len(list(Ii.size())) - 2
            assert ndims in [1, 2, 3], "volumes should be 1 to 3 dimensions. found: %d" % ndims
            win = [9] * ndims if self.win is None else self.win
            sum_filt = torch.ones([1, 1, *win]).to(Ii.device)
            pad_no = math.floor(win[0] / 2)
            if ndims == 1:
                stride = (1)
                padding = (pad_no)
            elif ndims == 2:
                stride = (1, 1)
                padding = (pad_no, pad_no)
            else:
                stride = (1, 1, 1)
                padding = (pad_no, pad_no, pad_no)
            conv_fn = getattr(F, 'conv%dd' % ndims)
            I2 = Ii * Ii
            J2 = Ji * Ji
            IJ = Ii * Ji
            I_sum = conv_fn(Ii, sum_filt, stride=stride, padding=padding)
            J_sum = conv_fn(Ji, sum_filt, stride=stride, padding=padding)
            I2_sum = conv_fn(I2, sum_filt, stride=stride, padding=padding)
            J2_sum = conv_fn(J2, sum_filt, stride=stride, padding=padding)
            IJ_sum = conv_fn(IJ, sum_filt, stride=stride, padding=padding)
            win_size = np.prod(win)
            u_I = I_sum / win_size
            u_J = J_sum / win_size
            cross = IJ_sum - u_J * I_sum - u_I * J_sum + u_I * u_J * win_size
            I_var = I2_sum - 2 * u_I * I_sum + u_I * u_I * win_size
            J_var = J2_sum - 2 * u_J * J_sum + u_J * u_J * win_size
            cc = cross * cross / (I_var * J_var + 1e-5)
            return -torch.mean(cc)

    class Grad:
        def __init__(self, penalty='l1', loss_mult=None):
            self.penalty = penalty
            self.loss_mult = loss_mult

        def _diffs(self, y):
            vol_shape = [n for n in y.shape][2:]
            ndims = len(vol_shape)
            df = [None] * ndims
            for i in range(ndims):
                d = i + 2
                r = [d, *range(0, d), *range(d + 1, ndims + 2)]
                y = y.permute(r)
                dfi = y[1:, ...] - y[:-1, ...]
                r = [*range(d - 1, d + 1), *reversed(range(1, d - 1)), 0, *range(d + 1, ndims + 2)]
                df[i] = dfi.permute(r)
            return df

        def loss(self, _, y_pred):
            if self.penalty == 'l1':
                dif = [torch.abs(f) for f in self._diffs(y_pred)]
            else:
                assert self.penalty == 'l2', 'penalty can only be l1 or l2. Got: %s' % self.penalty
                dif = [f * f for f in self._diffs(y_pred)]
            df = [torch.mean(torch.flatten(f, start_dim=1), dim=-1) for f in dif]
            grad = sum(df) / len(df)
            if self.loss_mult is not None:
                grad *= self.loss_mult
            return grad.mean()

    inshape, int_downsize = (4, 4, 4), 2
    model = VxmDense(inshape, nb_unet_features=[[3], [3, 3]], int_steps=1, int_downsize=int_downsize)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    rng = np.random.default_rng(61)
    moving = torch.from_numpy(rng.uniform(0, 1, (1, 1, *inshape)).astype(np.float32))
    fixed = torch.from_numpy(rng.uniform(0, 1, (1, 1, *inshape)).astype(np.float32))
    losses = [MSE().loss, Grad('l2', loss_mult=int_downsize).loss]  # train.py's default --image-loss mse
    ncc = NCC(win=[3, 3, 3]).loss(fixed, moving)  # the other image loss, once, on the images alone
    weights = [1, 0.01]
    inputs, y_true = [moving, fixed], [fixed, torch.zeros(1, 3, 2, 2, 2)]
    y_pred = model(*inputs)
    loss = 0
    loss_list = []
    for n, loss_function in enumerate(losses):
        curr_loss = loss_function(y_true[n], y_pred[n]) * weights[n]
        loss_list.append(curr_loss.item())
        loss += curr_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return init, loss_list + [loss.item(), ncc.item(), float(y_pred[0].sum()), float(y_pred[1].abs().sum()) * 1e4] + summary(
        model.parameters())


def test_voxelmorph_3d():
    compare(voxelmorph)
