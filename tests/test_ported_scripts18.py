"""Public code the earlier files leave out, written from memory in its repositories' styles and ported by its imports
alone, as test_ported_scripts.py: the PyTorch tutorial's fused convolution and batch norm by custom Functions (and a
Conv2d Function by torch.nn.grad); pytorch/examples' time_sequence_prediction (LSTMCells fitted by LBFGS);
YongfeiYan's Gumbel-softmax VAE (straight-through hard samples by scatter_); facebookresearch's Poincare embeddings
(an arcosh distance Function, Riemannian SGD with renorm_); a word2vec skip-gram with negative sampling (sparse
embeddings and SparseAdam); kevinzakka's NALU; kimhc6028's relation network; hardmaru's mixture density network;
junyanz's CycleGAN (reflection pads, InstanceNorm, an image pool, LSGAN targets as buffers, itertools.chain,
LambdaLR); CuriousAI's mean teacher (deprecated add_(alpha, tensor), size_average=False, ignore_index); bhanML's
co-teaching (reduce=False, small losses picked by argsort); YU1ut's MixMatch (sharpening, interleave, WeightEMA);
AdaHessian's Hutchinson diagonal by autograd.grad of gradients; a contractive autoencoder (its Jacobian by
autograd.grad(is_grads_batched=True)); the PyTorch tutorial's knowledge distillation (CosineEmbeddingLoss on hidden
representations, a regressor on feature maps); greydanus' Hamiltonian neural networks (a field's Jacobian by
autograd.functional.jacobian(vectorize=True)); the forward-mode AD tutorial (forward_ad's duals through a Module and
functional_call); the torch.func tutorials on Jacobians, Hessians and neural tangent kernels (jacrev, jacfwd,
hessian, hvp as jvp of grad, vmap of jacrev); and the double-backward tutorial's custom Functions, one a critic's
activation under WGAN-GP's penalty. Each runs in tnet, then in torch from tnet's initial weights (state_dict through
numpy), and the losses, and the weights summed into a few numbers, agree. Numpy (or Python's random, seeded alike on
both sides) draws what a script draws; shapes are tiny and runs 1-3 steps. Where Adam would normalise a gradient that
is rounding alone (a bias before a norm layer), that bias is frozen, as test_ported_scripts17.py does."""
import itertools
import math
import random

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) pytorch/tutorials' intermediate/custom_function_conv_bn_tutorial.py: convolution_backward by F.conv2d of
# transposed tensors and F.conv_transpose2d, BatchNorm's hand-written backward from ctx attributes (sum, sqrt_var, N),
# FusedConvBN2DFunction returning trailing Nones past its inputs, kaiming_uniform_(a=sqrt(5)) in reset_parameters,
# factory_kwargs of device and dtype; the tutorial's MNIST Net trained by SGD; and a Conv2d Function whose backward is
# torch.nn.grad.conv2d_input and conv2d_weight (stride and padding), as custom-conv snippets write it
def fused_conv_bn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def convolution_backward(grad_out, X, weight):
        grad_input = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
        grad_X = F.conv_transpose2d(grad_out, weight)
        return grad_X, grad_input

    def unsqueeze_all(t):
        return t[None, :, None, None]

    def batch_norm_backward(grad_out, X, sum, sqrt_var, N, eps):
        tmp = ((X - unsqueeze_all(sum) / N) * grad_out).sum(dim=(0, 2, 3))
        tmp *= -1
        d_denom = tmp / (sqrt_var + eps) ** 2
        d_var = d_denom / (2 * sqrt_var)
        d_mean_dx = grad_out / unsqueeze_all(sqrt_var + eps)
        d_mean_dx = unsqueeze_all(-d_mean_dx.sum(dim=(0, 2, 3)) / N)
        grad_input = X * unsqueeze_all(d_var * N)
        grad_input += unsqueeze_all(-d_var * sum)
        grad_input *= 2 / ((N - 1) * N)
        grad_input += d_mean_dx
        grad_input *= unsqueeze_all(sqrt_var + eps)
        grad_input += grad_out
        grad_input /= unsqueeze_all(sqrt_var + eps)
        return grad_input

    class FusedConvBN2DFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, X, conv_weight, eps=1e-3):
            assert X.ndim == 4
            ctx.save_for_backward(X, conv_weight)
            X = F.conv2d(X, conv_weight)
            sum = X.sum(dim=(0, 2, 3))
            var = X.var(unbiased=True, dim=(0, 2, 3))
            N = X.numel() / X.size(1)
            sqrt_var = torch.sqrt(var)
            ctx.eps = eps
            ctx.sum = sum
            ctx.N = N
            ctx.sqrt_var = sqrt_var
            mean = sum / N
            denom = sqrt_var + eps
            out = X - unsqueeze_all(mean)
            out /= unsqueeze_all(denom)
            return out

        @staticmethod
        def backward(ctx, grad_out):
            X, conv_weight, = ctx.saved_tensors
            X_conv_out = F.conv2d(X, conv_weight)
            grad_out = batch_norm_backward(grad_out, X_conv_out, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)
            grad_X, grad_input = convolution_backward(grad_out, X, conv_weight)
            return grad_X, grad_input, None, None, None, None, None

    class FusedConvBN(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, exp_avg_factor=0.1, eps=1e-3, device=None,
                     dtype=None):
            super(FusedConvBN, self).__init__()
            factory_kwargs = {'device': device, 'dtype': dtype}
            weight_shape = (out_channels, in_channels, kernel_size, kernel_size)
            self.conv_weight = nn.Parameter(torch.empty(*weight_shape, **factory_kwargs))
            self.eps = eps
            self.reset_parameters()

        def forward(self, X):
            return FusedConvBN2DFunction.apply(X, self.conv_weight, self.eps)

        def reset_parameters(self) -> None:
            nn.init.kaiming_uniform_(self.conv_weight, a=math.sqrt(5))

    class Conv2dFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, bias=None, stride=1, padding=0):
            ctx.save_for_backward(input, weight, bias)
            ctx.stride, ctx.padding = stride, padding
            return F.conv2d(input, weight, bias, stride, padding)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = torch.nn.grad.conv2d_input(input.shape, weight, grad_output, ctx.stride, ctx.padding)
            if ctx.needs_input_grad[1]:
                grad_weight = torch.nn.grad.conv2d_weight(input, weight.shape, grad_output, ctx.stride, ctx.padding)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum((0, 2, 3))
            return grad_input, grad_weight, grad_bias, None, None

    class MyConv(nn.Conv2d):
        def forward(self, x):
            return Conv2dFunction.apply(x, self.weight, self.bias, self.stride, self.padding)

    class Net(nn.Module):
        def __init__(self, fused=True):
            super(Net, self).__init__()
            self.fused = fused
            if fused:
                self.convbn1 = FusedConvBN(1, 4, 3)
                self.convbn2 = FusedConvBN(4, 6, 3)
            else:
                self.conv1 = nn.Conv2d(1, 4, 3, bias=False)
                self.bn1 = nn.BatchNorm2d(4, affine=False, track_running_stats=False)
                self.conv2 = nn.Conv2d(4, 6, 3, bias=False)
                self.bn2 = nn.BatchNorm2d(6, affine=False, track_running_stats=False)
            self.conv3 = MyConv(6, 5, 3, stride=2, padding=1)
            self.fc1 = nn.Linear(5 * 2 * 2, 10)
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            if self.fused:
                x = self.convbn1(x)
            else:
                x = self.bn1(self.conv1(x))
            F.relu_(x)
            if self.fused:
                x = self.convbn2(x)
            else:
                x = self.bn2(self.conv2(x))
            F.relu_(x)
            x = F.max_pool2d(x, 2)
            x = F.relu(self.conv3(x))
            x = self.dropout(x)
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            output = F.log_softmax(x, dim=1)
            return output

    model = Net(fused=True)
    init = load(m, model, state)
    rng = np.random.default_rng(1)
    data, target = torch.tensor(normal(rng, 4, 1, 10, 10)), torch.tensor(rng.integers(0, 10, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(2):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    # the same weights unfused give the same loss (eps aside: BatchNorm divides by sqrt(var + eps), biased var)
    plain = Net(fused=False)
    plain.conv1.weight.data.copy_(model.convbn1.conv_weight.data)
    plain.conv2.weight.data.copy_(model.convbn2.conv_weight.data)
    plain.conv3.load_state_dict(model.conv3.state_dict())
    plain.fc1.load_state_dict(model.fc1.state_dict())
    losses.append(F.nll_loss(plain(data), target).item())
    return init, losses + summary(model.parameters())


def test_fused_conv_bn():
    compare(fused_conv_bn)


# (b) pytorch/examples' time_sequence_prediction (generate_sine_wave.py and train.py): sine waves by np.arange plus
# a random shift, Sequence's two LSTMCells unrolled over input.split(1, dim=1) with zero states by torch.zeros, the
# future steps fed back, torch.cat(outputs, dim=1); LBFGS(lr=0.8) with a closure that zeroes, prints and returns the
# loss, then the prediction under torch.no_grad() (float32 here: tnet keeps float32 parameters, README)
def time_sequence_prediction(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim

    class Sequence(nn.Module):
        def __init__(self):
            super(Sequence, self).__init__()
            self.lstm1 = nn.LSTMCell(1, 8)
            self.lstm2 = nn.LSTMCell(8, 8)
            self.linear = nn.Linear(8, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t = torch.zeros(input.size(0), 8, dtype=torch.float)
            c_t = torch.zeros(input.size(0), 8, dtype=torch.float)
            h_t2 = torch.zeros(input.size(0), 8, dtype=torch.float)
            c_t2 = torch.zeros(input.size(0), 8, dtype=torch.float)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for i in range(future):  # if we should predict the future
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            outputs = torch.cat(outputs, dim=1)
            return outputs

    np.random.seed(2)
    T, L, N = 20, 4, 5
    x = np.empty((N, L), 'int64')
    x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype('float32')
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    seq = Sequence()
    init = load(m, seq, state)
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=2)
    losses = []
    for i in range(1):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            losses.append(loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            future = 2
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            losses.append(loss.item())
            y = pred.detach().numpy()
    return init, losses + [float(y.sum())] + summary(seq.parameters())


def test_time_sequence_prediction():
    compare(time_sequence_prediction)


# (c) YongfeiYan/Gumbel_Softmax_VAE's gumbel_softmax_vae.py: sample_gumbel as -log(-log(U + eps) + eps) (U drawn
# here by numpy), gumbel_softmax_sample by F.softmax(y / temperature, dim=-1), the hard sample by y.max(dim=-1),
# y_hard = zeros_like(y).view(-1, shape[-1]).scatter_(1, ind.view(-1, 1), 1) and the straight-through
# (y_hard - y).detach() + y; the VAE of latent_dim x categorical_dim; the loss BCE(size_average=False) plus the KL
# to a uniform categorical, q * log(q * categorical_dim + 1e-20); the temperature annealed by np.maximum(temp *
# np.exp(-ANNEAL_RATE * batch_idx), temp_min)
def gumbel_softmax_vae(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    latent_dim, categorical_dim = 3, 4
    noise = np.random.default_rng(5)

    def sample_gumbel(shape, eps=1e-20):
        U = torch.from_numpy(noise.random(tuple(shape)).astype(np.float32))
        return -torch.log(-torch.log(U + eps) + eps)

    def gumbel_softmax_sample(logits, temperature):
        y = logits + sample_gumbel(logits.size())
        return F.softmax(y / temperature, dim=-1)

    def gumbel_softmax(logits, temperature, hard=False):
        y = gumbel_softmax_sample(logits, temperature)
        if not hard:
            return y.view(-1, latent_dim * categorical_dim)
        shape = y.size()
        _, ind = y.max(dim=-1)
        y_hard = torch.zeros_like(y).view(-1, shape[-1])
        y_hard.scatter_(1, ind.view(-1, 1), 1)
        y_hard = y_hard.view(*shape)
        y_hard = (y_hard - y).detach() + y
        return y_hard.view(-1, latent_dim * categorical_dim)

    class VAE_gumbel(nn.Module):
        def __init__(self, temp):
            super(VAE_gumbel, self).__init__()
            self.fc1 = nn.Linear(16, 12)
            self.fc2 = nn.Linear(12, 8)
            self.fc3 = nn.Linear(8, latent_dim * categorical_dim)
            self.fc4 = nn.Linear(latent_dim * categorical_dim, 8)
            self.fc5 = nn.Linear(8, 12)
            self.fc6 = nn.Linear(12, 16)
            self.relu = nn.ReLU()
            self.sigmoid = nn.Sigmoid()

        def encode(self, x):
            h1 = self.relu(self.fc1(x))
            h2 = self.relu(self.fc2(h1))
            return self.relu(self.fc3(h2))

        def decode(self, z):
            h4 = self.relu(self.fc4(z))
            h5 = self.relu(self.fc5(h4))
            return self.sigmoid(self.fc6(h5))

        def forward(self, x, temp, hard):
            q = self.encode(x.view(-1, 16))
            q_y = q.view(q.size(0), latent_dim, categorical_dim)
            z = gumbel_softmax(q_y, temp, hard)
            return self.decode(z), F.softmax(q_y, dim=-1).reshape(*q.size())

    def loss_function(recon_x, x, qy):
        BCE = F.binary_cross_entropy(recon_x, x.view(-1, 16), size_average=False) / x.shape[0]
        log_ratio = torch.log(qy * categorical_dim + 1e-20)
        KLD = torch.sum(qy * log_ratio, dim=-1).mean()
        return BCE + KLD

    temp, temp_min, ANNEAL_RATE = 1.0, 0.5, 0.00003
    model = VAE_gumbel(temp)
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(6)
    batches = [torch.from_numpy((rng.random((4, 1, 4, 4)) > 0.5).astype(np.float32)) for _ in range(3)]
    model.train()
    losses = []
    for batch_idx, data in enumerate(batches):
        optimizer.zero_grad()
        recon_batch, qy = model(data, temp, hard=batch_idx > 0)
        loss = loss_function(recon_batch, data, qy)
        loss.backward()
        train_loss = loss.item() * len(data)
        optimizer.step()
        if batch_idx % 1 == 0:
            temp = np.maximum(temp * np.exp(-ANNEAL_RATE * batch_idx), temp_min)
        losses.append(train_loss)
    # generation from one-hot codes, as the script's sample image
    M = 4 * latent_dim
    np_y = np.zeros((M, categorical_dim), dtype=np.float32)
    np_y[range(M), np.random.default_rng(7).choice(categorical_dim, M)] = 1
    np_y = np.reshape(np_y, [M // latent_dim, latent_dim, categorical_dim])
    sample = torch.from_numpy(np_y).view(M // latent_dim, latent_dim * categorical_dim)
    with torch.no_grad():
        sample = model.decode(sample)
    return init, losses + [sample.sum().item()] + summary(model.parameters())


def test_gumbel_softmax_vae():
    compare(gumbel_softmax_vae)


# (d) facebookresearch/poincare-embeddings' (first release) model.py and rsgd.py: PoincareDistance as an autograd
# Function with a hand-written grad (squared norms clamped to the boundary 1 - eps, arcosh by log(z + sqrt(z^2 - 1))),
# Embedding's weight set by .data.uniform_(-initrange, initrange), the distances of an entity to its negatives by
# expand_as and narrow, the loss by cross_entropy on -dists towards index 0; RiemannianSGD, an Optimizer subclass
# whose step rescales d_p by (1 - |p|^2)^2 / 4 and retracts by p.data.add_(-lr, d_p), the points kept inside the
# ball by renorm_(2, 0, 1 - eps)
def poincare_embeddings(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Function, Optimizer = torch.autograd.Function, torch.optim.Optimizer
    eps = 1e-5
    boundary = 1 - eps

    def grad(x, v, sqnormx, sqnormv, sqdist):
        alpha = (1 - sqnormx)
        beta = (1 - sqnormv)
        z = 1 + 2 * sqdist / (alpha * beta)
        a = ((sqnormv - 2 * torch.sum(x * v, dim=-1) + 1) / torch.pow(alpha, 2)).unsqueeze(-1).expand_as(x)
        a = a * x - v / alpha.unsqueeze(-1).expand_as(v)
        z = torch.sqrt(torch.pow(z, 2) - 1)
        z = torch.clamp(z * beta, min=eps).unsqueeze(-1)
        return 4 * a / z.expand_as(x)

    class PoincareDistance(Function):
        @staticmethod
        def forward(ctx, u, v):
            squnorm = torch.clamp(torch.sum(u * u, dim=-1), 0, boundary)
            sqvnorm = torch.clamp(torch.sum(v * v, dim=-1), 0, boundary)
            sqdist = torch.sum(torch.pow(u - v, 2), dim=-1)
            ctx.save_for_backward(u, v, squnorm, sqvnorm, sqdist)
            x = sqdist / ((1 - squnorm) * (1 - sqvnorm)) * 2 + 1
            z = torch.sqrt(torch.pow(x, 2) - 1)
            return torch.log(x + z)

        @staticmethod
        def backward(ctx, g):
            u, v, squnorm, sqvnorm, sqdist = ctx.saved_tensors
            g = g.unsqueeze(-1)
            gu = grad(u, v, squnorm, sqvnorm, sqdist)
            gv = grad(v, u, sqvnorm, squnorm, sqdist)
            return g.expand_as(gu) * gu, g.expand_as(gv) * gv

    class PoincareModel(nn.Module):
        def __init__(self, size, dim, initrange=1e-2):
            super().__init__()
            self.lt = nn.Embedding(size, dim, scale_grad_by_freq=False)
            self.lt.weight.data.uniform_(-initrange, initrange)
            self.nobjects = size

        def forward(self, inputs):
            e = self.lt(inputs)
            fval = self._forward(e)
            return fval

        def _forward(self, e):
            o = e.narrow(1, 1, e.size(1) - 1)
            s = e.narrow(1, 0, 1).expand_as(o)
            dists = PoincareDistance.apply(s, o).squeeze(-1)
            return -dists

        def loss(self, preds, targets, weight=None, size_average=True):
            return F.cross_entropy(preds, targets, weight=weight, size_average=size_average)

    def poincare_grad(p, d_p):
        p_sqnorm = torch.clamp(torch.sum(p.data ** 2, dim=-1, keepdim=True), 0, 1 - 1e-5)
        d_p = d_p * ((1 - p_sqnorm) ** 2 / 4).expand_as(d_p)
        return d_p

    def euclidean_retraction(p, d_p, lr):
        p.data.add_(-lr, d_p)

    class RiemannianSGD(Optimizer):
        def __init__(self, params, lr=0.3, rgrad=poincare_grad, retraction=euclidean_retraction):
            defaults = dict(lr=lr, rgrad=rgrad, retraction=retraction)
            super(RiemannianSGD, self).__init__(params, defaults)

        def step(self, lr=None):
            loss = None
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    d_p = p.grad.data
                    if lr is None:
                        lr = group['lr']
                    d_p = group['rgrad'](p, d_p)
                    group['retraction'](p, d_p, lr)
            return loss

    model = PoincareModel(7, 2)
    init = load(m, model, state)
    optimizer = RiemannianSGD(model.parameters(), lr=0.3)
    # (u, v, negatives...) rows of a tiny transitive closure, as the repository's Dataset yields them
    inputs = torch.tensor([[0, 1, 4, 5, 6], [1, 2, 4, 6, 0], [2, 3, 5, 6, 0], [0, 3, 5, 4, 2]])
    targets = torch.zeros(inputs.size(0)).long()
    losses = []
    for epoch in range(3):
        optimizer.zero_grad()
        preds = model(inputs)
        loss = model.loss(preds, targets, size_average=True)
        loss.backward()
        optimizer.step(lr=0.3 / 10 if epoch == 0 else None)  # the burn-in epoch's lower lr
        model.lt.weight.data.renorm_(2, 0, boundary)
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_poincare_embeddings():
    compare(poincare_embeddings)


# (e) a skip-gram word2vec with negative sampling (the Adoni/fanglanting style model.py): u and v embeddings with
# sparse=True, u initialised by uniform_(-initrange, initrange) and v by uniform_(-0, 0), the positive score by
# torch.mul and sum, F.logsigmoid of it and of the negated bmm of the negatives' embeddings by unsqueeze(2);
# negatives drawn from the unigram table ** 0.75 (numpy, as the repository does); SparseAdam; save_embedding's
# weight.cpu().data.numpy(); then a nearest-neighbour query by F.cosine_similarity of normalised rows
def word2vec_sgns(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class SkipGramModel(nn.Module):
        def __init__(self, emb_size, emb_dimension):
            super(SkipGramModel, self).__init__()
            self.emb_size = emb_size
            self.emb_dimension = emb_dimension
            self.u_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
            self.v_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
            initrange = 1.0 / self.emb_dimension
            nn.init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
            nn.init.constant_(self.v_embeddings.weight.data, 0.05)

        def forward(self, pos_u, pos_v, neg_v):
            emb_u = self.u_embeddings(pos_u)
            emb_v = self.v_embeddings(pos_v)
            emb_neg_v = self.v_embeddings(neg_v)
            score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
            score = torch.clamp(score, max=10, min=-10)
            score = -F.logsigmoid(score)
            neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
            neg_score = torch.clamp(neg_score, max=10, min=-10)
            neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)
            return torch.mean(score + neg_score)

    rng = np.random.default_rng(8)
    corpus = rng.integers(0, 9, 40)
    counts = np.bincount(corpus, minlength=9).astype(np.float64)
    pow_frequency = counts ** 0.75
    ratio = pow_frequency / pow_frequency.sum()
    table = np.repeat(np.arange(9), np.round(ratio * 100).astype(int))
    pairs = [(corpus[i], corpus[j]) for i in range(len(corpus)) for j in (i - 1, i + 1) if 0 <= j < len(corpus)]
    model = SkipGramModel(9, 6)
    init = load(m, model, state)
    optimizer = optim.SparseAdam(list(model.parameters()), lr=0.01)
    losses = []
    for i in range(3):
        batch = pairs[i * 8:(i + 1) * 8]
        pos_u = torch.LongTensor([u for u, _ in batch])
        pos_v = torch.LongTensor([v for _, v in batch])
        neg_v = torch.LongTensor(table[rng.integers(0, len(table), (len(batch), 3))])
        optimizer.zero_grad()
        loss = model.forward(pos_u, pos_v, neg_v)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    embedding = model.u_embeddings.weight.cpu().data.numpy()
    with torch.no_grad():
        w = F.normalize(model.u_embeddings.weight, dim=1)
        sims = F.cosine_similarity(w[corpus[0]].unsqueeze(0), w, dim=1)
        nearest = sims.topk(3).values
    return init, losses + [float(embedding.sum())] + nearest.tolist() + summary(model.parameters())


def test_word2vec_sgns():
    compare(word2vec_sgns)


# (f) kevinzakka/NALU-pytorch's models/nac.py, nalu.py and the arithmetic task: NeuralAccumulatorCell's W_hat and M_hat
# as Parameter(torch.Tensor(out, in)) with kaiming_uniform_(a=math.sqrt(5)), W = tanh(W_hat) * sigmoid(M_hat),
# register_parameter('bias', None), F.linear; NeuralArithmeticLogicUnitCell's gate G, the log space
# exp(nac(log(|x| + eps))) and the gated mix; the stacked nn.Sequential of cells; RMSprop on the MSE of a + b and a * b
def nalu(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    from_init = nn.init
    Parameter = nn.Parameter

    class NeuralAccumulatorCell(nn.Module):
        def __init__(self, in_dim, out_dim):
            super().__init__()
            self.in_dim = in_dim
            self.out_dim = out_dim
            self.W_hat = Parameter(torch.Tensor(out_dim, in_dim))
            self.M_hat = Parameter(torch.Tensor(out_dim, in_dim))
            self.W = Parameter(self.W_hat.data)  # as the repository: W overwritten in forward (a plain attribute)
            self.register_parameter('bias', None)
            from_init.kaiming_uniform_(self.W_hat, a=math.sqrt(5))
            from_init.kaiming_uniform_(self.M_hat, a=math.sqrt(5))

        def forward(self, input):
            W = torch.tanh(self.W_hat) * torch.sigmoid(self.M_hat)
            return F.linear(input, W, self.bias)

        def extra_repr(self):
            return 'in_dim={}, out_dim={}'.format(self.in_dim, self.out_dim)

    class NeuralArithmeticLogicUnitCell(nn.Module):
        def __init__(self, in_dim, out_dim):
            super().__init__()
            self.in_dim = in_dim
            self.out_dim = out_dim
            self.eps = 1e-10
            self.G = Parameter(torch.Tensor(out_dim, in_dim))
            self.nac = NeuralAccumulatorCell(in_dim, out_dim)
            self.register_parameter('bias', None)
            from_init.kaiming_uniform_(self.G, a=math.sqrt(5))

        def forward(self, input):
            a = self.nac(input)
            g = torch.sigmoid(F.linear(input, self.G, self.bias))
            add_sub = g * a
            log_input = torch.log(torch.abs(input) + self.eps)
            m = torch.exp(self.nac(log_input))
            mul_div = (1 - g) * m
            y = add_sub + mul_div
            return y

    class NALU(nn.Module):
        def __init__(self, num_layers, in_dim, hidden_dim, out_dim):
            super().__init__()
            layers = []
            for i in range(num_layers):
                layers.append(NeuralArithmeticLogicUnitCell(hidden_dim if i > 0 else in_dim,
                                                            hidden_dim if i < num_layers - 1 else out_dim))
            self.model = nn.Sequential(*layers)

        def forward(self, x):
            return self.model(x)

    net = NALU(num_layers=2, in_dim=4, hidden_dim=3, out_dim=2)
    assert 'in_dim=4, out_dim=3' in repr(net)
    init = load(m, net, state)
    rng = np.random.default_rng(9)
    X = rng.uniform(0.5, 2.0, (16, 4)).astype(np.float32)
    a, b = X[:, :2].sum(1), X[:, 2:].sum(1)
    y = np.stack([a + b, a * b], 1).astype(np.float32)
    X, y = torch.from_numpy(X), torch.from_numpy(y)
    optimizer = optim.RMSprop(net.parameters(), lr=1e-2)
    losses = []
    for i in range(3):
        out = net(X)
        loss = F.mse_loss(out, y)
        mea = torch.mean(torch.abs(y - out))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), mea.item()]
    return init, losses + summary(p for n, p in net.named_parameters() if not n.endswith('.W'))


def test_nalu():
    compare(nalu)


# (g) kimhc6028/relational-networks' model.py: ConvInputModel's four stride-2 convs with BatchNorm, the coordinate
# tensor built once in __init__ (cvt_coord by np arrays copied into a FloatTensor buffer, then torch.autograd
# Variable), the objects x_flat with coordinates cat'ed, the question repeated by unsqueeze and repeat, all pairs by
# unsqueeze(1)/unsqueeze(2) and repeat, g_theta over the pair batch viewed flat, summed over the pairs, f_phi with
# dropout 0 here; BasicModel's train_ with F.nll_loss, accuracy by pred.eq(label.data).cpu().sum()
def relation_network(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    Variable = torch.autograd.Variable

    class ConvInputModel(nn.Module):
        def __init__(self):
            super(ConvInputModel, self).__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, stride=2, padding=1)
            self.batchNorm1 = nn.BatchNorm2d(6)
            self.conv2 = nn.Conv2d(6, 6, 3, stride=2, padding=1)
            self.batchNorm2 = nn.BatchNorm2d(6)

        def forward(self, img):
            x = self.conv1(img)
            x = F.relu(x)
            x = self.batchNorm1(x)
            x = self.conv2(x)
            x = F.relu(x)
            x = self.batchNorm2(x)
            return x

    class RN(nn.Module):
        def __init__(self, mb, qdim=5):
            super(RN, self).__init__()
            self.conv = ConvInputModel()
            self.g_fc1 = nn.Linear((6 + 2) * 2 + qdim, 16)
            self.g_fc2 = nn.Linear(16, 16)
            self.f_fc1 = nn.Linear(16, 16)
            self.fc2 = nn.Linear(16, 16)
            self.fc3 = nn.Linear(16, 4)
            self.coord_oi = torch.FloatTensor(mb, 2)
            self.coord_oj = torch.FloatTensor(mb, 2)
            self.coord_oi = Variable(self.coord_oi)
            self.coord_oj = Variable(self.coord_oj)

            def cvt_coord(i):
                return [(i / 4 - 2) / 2., (i % 4 - 2) / 2.]

            self.coord_tensor = torch.FloatTensor(mb, 16, 2)
            self.coord_tensor = Variable(self.coord_tensor)
            np_coord_tensor = np.zeros((mb, 16, 2))
            for i in range(16):
                np_coord_tensor[:, i, :] = np.array(cvt_coord(i))
            self.coord_tensor.data.copy_(torch.from_numpy(np_coord_tensor))

        def forward(self, img, qst):
            x = self.conv(img)  # x = (64 x 24 x 5 x 5)
            mb = x.size()[0]
            n_channels = x.size()[1]
            d = x.size()[2]
            x_flat = x.view(mb, n_channels, d * d).permute(0, 2, 1)
            x_flat = torch.cat([x_flat, self.coord_tensor], 2)
            qst = torch.unsqueeze(qst, 1)
            qst = qst.repeat(1, d * d, 1)
            qst = torch.unsqueeze(qst, 2)
            x_i = torch.unsqueeze(x_flat, 1)
            x_i = x_i.repeat(1, d * d, 1, 1)
            x_j = torch.unsqueeze(x_flat, 2)
            x_j = torch.cat([x_j, qst], 3)
            x_j = x_j.repeat(1, 1, d * d, 1)
            x_full = torch.cat([x_i, x_j], 3)
            x_ = x_full.view(mb * (d * d) * (d * d), -1)
            x_ = self.g_fc1(x_)
            x_ = F.relu(x_)
            x_ = self.g_fc2(x_)
            x_ = F.relu(x_)
            x_g = x_.view(mb, (d * d) * (d * d), 16)
            x_g = x_g.sum(1).squeeze()
            x_f = self.f_fc1(x_g)
            x_f = F.relu(x_f)
            x = self.fc2(x_f)
            x = F.relu(x)
            x = F.dropout(x, p=0.0)
            x = self.fc3(x)
            return F.log_softmax(x, dim=1)

    model = RN(4)
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(10)
    losses = []
    for i in range(2):
        input_img = torch.from_numpy(normal(rng, 4, 3, 16, 16))
        input_qst = torch.from_numpy((rng.random((4, 5)) > 0.5).astype(np.float32))
        label = torch.from_numpy(rng.integers(0, 4, 4))
        optimizer.zero_grad()
        output = model(input_img, input_qst)
        loss = F.nll_loss(output, label)
        loss.backward()
        optimizer.step()
        pred = output.data.max(1)[1]
        correct = pred.eq(label.data).cpu().sum()
        accuracy = correct * 100. / len(label)
        losses += [loss.item(), float(accuracy)]
    return init, losses + summary(model.parameters())


def test_relation_network():
    compare(relation_network)


# (h) hardmaru/pytorch_notebooks' mixture_density_networks.ipynb: the inverted sine data (numpy), MDN's z_h of
# Linear+Tanh, pi by F.softmax(self.z_pi(z_h), -1), sigma by torch.exp, mu; gaussian_distribution with
# oneDivSqrtTwoPI and y.expand_as(mu); mdn_loss_fn as -log(sum(pi * N)) averaged; then sampling by a hand-written
# gumbel argmax over log pi (numpy noise) and torch.gather of mu and sigma
def mixture_density_network(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    oneDivSqrtTwoPI = 1.0 / math.sqrt(2.0 * math.pi)

    class MDN(nn.Module):
        def __init__(self, n_hidden, n_gaussians):
            super(MDN, self).__init__()
            self.z_h = nn.Sequential(nn.Linear(1, n_hidden), nn.Tanh())
            self.z_pi = nn.Linear(n_hidden, n_gaussians)
            self.z_sigma = nn.Linear(n_hidden, n_gaussians)
            self.z_mu = nn.Linear(n_hidden, n_gaussians)

        def forward(self, x):
            z_h = self.z_h(x)
            pi = F.softmax(self.z_pi(z_h), -1)
            sigma = torch.exp(self.z_sigma(z_h))
            mu = self.z_mu(z_h)
            return pi, sigma, mu

    def gaussian_distribution(y, mu, sigma):
        result = (y.expand_as(mu) - mu) * torch.reciprocal(sigma)
        result = - 0.5 * (result * result)
        return (torch.exp(result) * torch.reciprocal(sigma)) * oneDivSqrtTwoPI

    def mdn_loss_fn(pi, sigma, mu, y):
        result = gaussian_distribution(y, mu, sigma) * pi
        result = torch.sum(result, dim=1)
        result = -torch.log(result)
        return torch.mean(result)

    rng = np.random.default_rng(11)
    n_samples = 32
    epsilon = rng.normal(size=n_samples)
    y_data = rng.uniform(-10.5, 10.5, n_samples)
    x_data = np.sin(0.75 * y_data) * 7.0 + y_data * 0.5 + epsilon * 1.0
    x_tensor = torch.from_numpy(np.float32(x_data).reshape(n_samples, 1)) / 10
    y_tensor = torch.from_numpy(np.float32(y_data).reshape(n_samples, 1)) / 10
    network = MDN(n_hidden=8, n_gaussians=3)
    init = load(m, network, state)
    optimizer = optim.Adam(network.parameters())
    losses = []
    for epoch in range(3):
        pi_variable, sigma_variable, mu_variable = network(x_tensor)
        loss = mdn_loss_fn(pi_variable, sigma_variable, mu_variable, y_tensor)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        pi, sigma, mu = network(x_tensor)
        gumbel = torch.from_numpy(-np.log(-np.log(rng.random(tuple(pi.shape)))).astype(np.float32))
        k = torch.argmax(torch.log(pi) + gumbel, dim=1, keepdim=True)
        picked = torch.gather(mu, 1, k) + torch.gather(sigma, 1, k) * torch.from_numpy(normal(rng, n_samples, 1))
    return init, losses + [picked.sum().item()] + summary(network.parameters())


def test_mixture_density_network():
    compare(mixture_density_network)


# (i) junyanz/pytorch-CycleGAN-and-pix2pix's networks.py, image_pool.py and cycle_gan_model.py: ResnetGenerator
# (ReflectionPad2d, InstanceNorm2d through functools.partial, use_bias from norm_layer.func == nn.InstanceNorm2d,
# ConvTranspose2d with output_padding=1, the ResnetBlock's padding by name, Tanh), NLayerDiscriminator (LeakyReLU
# 0.2, kw 4, padw 1), init_weights by apply on classname.find('Conv'), GANLoss (LSGAN: MSELoss against
# register_buffer'd labels by expand_as), ImagePool (Python's random, seeded alike: return the new image or swap
# with a stored one, clone()), set_requires_grad over a list of nets, G's optimiser over itertools.chain of both
# generators, the cycle L1 losses (the identity losses' branch off: --lambda_identity 0), LambdaLR's linear decay,
# and get_last_lr
def cycle_gan(m, state=None):
    torch, nn = m.torch, m.nn
    import functools
    from_init = nn.init
    lr_scheduler = m.lr_scheduler

    class ResnetBlock(nn.Module):
        def __init__(self, dim, padding_type, norm_layer, use_dropout, use_bias):
            super(ResnetBlock, self).__init__()
            self.conv_block = self.build_conv_block(dim, padding_type, norm_layer, use_dropout, use_bias)

        def build_conv_block(self, dim, padding_type, norm_layer, use_dropout, use_bias):
            conv_block = []
            p = 0
            if padding_type == 'reflect':
                conv_block += [nn.ReflectionPad2d(1)]
            elif padding_type == 'replicate':
                conv_block += [nn.ReplicationPad2d(1)]
            elif padding_type == 'zero':
                p = 1
            else:
                raise NotImplementedError('padding [%s] is not implemented' % padding_type)
            conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim), nn.ReLU(True)]
            if use_dropout:
                conv_block += [nn.Dropout(0.5)]
            p = 0
            if padding_type == 'reflect':
                conv_block += [nn.ReflectionPad2d(1)]
            elif padding_type == 'replicate':
                conv_block += [nn.ReplicationPad2d(1)]
            elif padding_type == 'zero':
                p = 1
            conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim)]
            return nn.Sequential(*conv_block)

        def forward(self, x):
            out = x + self.conv_block(x)  # add skip connections
            return out

    class ResnetGenerator(nn.Module):
        def __init__(self, input_nc, output_nc, ngf=4, norm_layer=nn.BatchNorm2d, use_dropout=False, n_blocks=1,
                     padding_type='reflect'):
            assert(n_blocks >= 0)
            super(ResnetGenerator, self).__init__()
            if type(norm_layer) == functools.partial:
                use_bias = norm_layer.func == nn.InstanceNorm2d
            else:
                use_bias = norm_layer == nn.InstanceNorm2d
            model = [nn.ReflectionPad2d(3),
                     nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0, bias=use_bias),
                     norm_layer(ngf),
                     nn.ReLU(True)]
            n_downsampling = 2
            for i in range(n_downsampling):  # add downsampling layers
                mult = 2 ** i
                model += [nn.Conv2d(ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1, bias=use_bias),
                          norm_layer(ngf * mult * 2),
                          nn.ReLU(True)]
            mult = 2 ** n_downsampling
            for i in range(n_blocks):  # add ResNet blocks
                model += [ResnetBlock(ngf * mult, padding_type=padding_type, norm_layer=norm_layer,
                                      use_dropout=use_dropout, use_bias=use_bias)]
            for i in range(n_downsampling):  # add upsampling layers
                mult = 2 ** (n_downsampling - i)
                model += [nn.ConvTranspose2d(ngf * mult, int(ngf * mult / 2),
                                             kernel_size=3, stride=2,
                                             padding=1, output_padding=1,
                                             bias=use_bias),
                          norm_layer(int(ngf * mult / 2)),
                          nn.ReLU(True)]
            model += [nn.ReflectionPad2d(3)]
            model += [nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0)]
            model += [nn.Tanh()]
            self.model = nn.Sequential(*model)

        def forward(self, input):
            return self.model(input)

    class NLayerDiscriminator(nn.Module):
        def __init__(self, input_nc, ndf=4, n_layers=2, norm_layer=nn.BatchNorm2d):
            super(NLayerDiscriminator, self).__init__()
            if type(norm_layer) == functools.partial:  # no need to use bias as BatchNorm2d has affine parameters
                use_bias = norm_layer.func == nn.InstanceNorm2d
            else:
                use_bias = norm_layer == nn.InstanceNorm2d
            kw = 4
            padw = 1
            sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
            nf_mult = 1
            nf_mult_prev = 1
            for n in range(1, n_layers):  # gradually increase the number of filters
                nf_mult_prev = nf_mult
                nf_mult = min(2 ** n, 8)
                sequence += [
                    nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw, bias=use_bias),
                    norm_layer(ndf * nf_mult),
                    nn.LeakyReLU(0.2, True)
                ]
            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n_layers, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=1, padding=padw, bias=use_bias),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]
            # 1 channel prediction map
            sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]
            self.model = nn.Sequential(*sequence)

        def forward(self, input):
            return self.model(input)

    def init_weights(net, init_type='normal', init_gain=0.02):
        rng = np.random.default_rng(3)

        def init_func(m):  # numpy draws the script's normal_ (the same on both sides)
            classname = m.__class__.__name__
            if hasattr(m, 'weight') and (classname.find('Conv') != -1 or classname.find('Linear') != -1):
                if init_type == 'normal':
                    m.weight.data.copy_(torch.from_numpy(normal(rng, *m.weight.shape) * init_gain))
                if hasattr(m, 'bias') and m.bias is not None:
                    from_init.constant_(m.bias.data, 0.0)
            elif classname.find('BatchNorm2d') != -1:
                m.weight.data.copy_(torch.from_numpy(1.0 + normal(rng, *m.weight.shape) * init_gain))
                from_init.constant_(m.bias.data, 0.0)
        net.apply(init_func)

    class GANLoss(nn.Module):
        def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0):
            super(GANLoss, self).__init__()
            self.register_buffer('real_label', torch.tensor(target_real_label))
            self.register_buffer('fake_label', torch.tensor(target_fake_label))
            self.gan_mode = gan_mode
            if gan_mode == 'lsgan':
                self.loss = nn.MSELoss()
            elif gan_mode == 'vanilla':
                self.loss = nn.BCEWithLogitsLoss()
            else:
                raise NotImplementedError('gan mode %s not implemented' % gan_mode)

        def get_target_tensor(self, prediction, target_is_real):
            if target_is_real:
                target_tensor = self.real_label
            else:
                target_tensor = self.fake_label
            return target_tensor.expand_as(prediction)

        def __call__(self, prediction, target_is_real):
            target_tensor = self.get_target_tensor(prediction, target_is_real)
            return self.loss(prediction, target_tensor)

    class ImagePool():
        def __init__(self, pool_size):
            self.pool_size = pool_size
            if self.pool_size > 0:  # create an empty pool
                self.num_imgs = 0
                self.images = []

        def query(self, images):
            if self.pool_size == 0:  # if the buffer size is 0, do nothing
                return images
            return_images = []
            for image in images:
                image = torch.unsqueeze(image.data, 0)
                if self.num_imgs < self.pool_size:  # if the buffer is not full; keep inserting current images
                    self.num_imgs = self.num_imgs + 1
                    self.images.append(image)
                    return_images.append(image)
                else:
                    p = random.uniform(0, 1)
                    if p > 0.5:  # by 50% chance, the buffer will return a previously stored image
                        random_id = random.randint(0, self.pool_size - 1)  # randint is inclusive
                        tmp = self.images[random_id].clone()
                        self.images[random_id] = image
                        return_images.append(tmp)
                    else:  # by another 50% chance, the buffer will return the current image
                        return_images.append(image)
            return_images = torch.cat(return_images, 0)  # collect all the images and return
            return return_images

    def freeze_biases_before_norms(net):  # their gradients are rounding alone, which Adam would normalise
        for seq in net.modules():
            if isinstance(seq, nn.Sequential):
                for layer, after in zip(seq, list(seq)[1:]):
                    if isinstance(after, nn.InstanceNorm2d) and layer.bias is not None:
                        layer.bias.requires_grad = False

    def set_requires_grad(nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad
        for net in nets:  # (not the repository's: the frozen biases stay frozen)
            freeze_biases_before_norms(net)

    norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    netG_A, netG_B = ResnetGenerator(3, 3, norm_layer=norm_layer), ResnetGenerator(3, 3, norm_layer=norm_layer)
    netD_A, netD_B = NLayerDiscriminator(3, n_layers=1), NLayerDiscriminator(3, n_layers=1)
    nets = nn.ModuleDict(dict(G_A=netG_A, G_B=netG_B, D_A=netD_A, D_B=netD_B))
    if state is None:
        for net in nets.values():
            init_weights(net)
    init = load(m, nets, state)
    for net in nets.values():
        freeze_biases_before_norms(net)
    criterionGAN = GANLoss('lsgan')
    criterionCycle, criterionIdt = nn.L1Loss(), nn.L1Loss()
    optimizer_G = torch.optim.Adam(itertools.chain(netG_A.parameters(), netG_B.parameters()), lr=2e-4,
                                   betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(itertools.chain(netD_A.parameters(), netD_B.parameters()), lr=2e-4,
                                   betas=(0.5, 0.999))
    epoch_count, n_epochs, n_epochs_decay = 1, 1, 2

    def lambda_rule(epoch):
        lr_l = 1.0 - max(0, epoch + epoch_count - n_epochs) / float(n_epochs_decay + 1)
        return lr_l
    schedulers = [lr_scheduler.LambdaLR(optimizer, lr_lambda=lambda_rule) for optimizer in [optimizer_G, optimizer_D]]
    fake_A_pool, fake_B_pool = ImagePool(1), ImagePool(1)  # full at the batch's second image
    random.seed(4)
    rng = np.random.default_rng(12)
    lambda_idt, lambda_A, lambda_B = 0.0, 10.0, 10.0  # --lambda_identity 0
    losses = []
    for epoch in range(1):
        real_A, real_B = torch.from_numpy(normal(rng, 2, 3, 8, 8)), torch.from_numpy(normal(rng, 2, 3, 8, 8))
        fake_B = netG_A(real_A)
        rec_A = netG_B(fake_B)
        fake_A = netG_B(real_B)
        rec_B = netG_A(fake_A)
        set_requires_grad([netD_A, netD_B], False)
        optimizer_G.zero_grad()
        if lambda_idt > 0:
            idt_A = netG_A(real_B)
            loss_idt_A = criterionIdt(idt_A, real_B) * lambda_B * lambda_idt
            idt_B = netG_B(real_A)
            loss_idt_B = criterionIdt(idt_B, real_A) * lambda_A * lambda_idt
        else:
            loss_idt_A = 0
            loss_idt_B = 0
        loss_G_A = criterionGAN(netD_A(fake_B), True)
        loss_G_B = criterionGAN(netD_B(fake_A), True)
        loss_cycle_A = criterionCycle(rec_A, real_A) * lambda_A
        loss_cycle_B = criterionCycle(rec_B, real_B) * lambda_B
        loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
        loss_G.backward()
        optimizer_G.step()
        set_requires_grad([netD_A, netD_B], True)
        optimizer_D.zero_grad()
        loss_D = []
        for netD, real, fake in ((netD_A, real_B, fake_B_pool.query(fake_B)),
                                 (netD_B, real_A, fake_A_pool.query(fake_A))):
            loss_D_real = criterionGAN(netD(real), True)
            loss_D_fake = criterionGAN(netD(fake.detach()), False)
            loss = (loss_D_real + loss_D_fake) * 0.5
            loss.backward()
            loss_D.append(loss.item())
        optimizer_D.step()
        for scheduler in schedulers:
            scheduler.step()
        lr = optimizer_G.param_groups[0]['lr']
        losses += [loss_G.item(), *loss_D, lr, schedulers[1].get_last_lr()[0]]
    return init, losses + summary(nets.parameters())


def test_cycle_gan():
    compare(cycle_gan)


# (j) CuriousAI/mean-teacher's pytorch/main.py, ramps.py and losses.py: create_model(ema=True) detaching every
# parameter by param.detach_(), sigmoid_rampup by np.clip and exp, softmax_mse_loss (size_average=False) /
# num_classes, the class loss by CrossEntropyLoss(size_average=False, ignore_index=NO_LABEL) / minibatch size, the
# labelled count by target_var.data.ne(NO_LABEL).sum(), update_ema_variables by the deprecated
# ema_param.data.mul_(alpha).add_(1 - alpha, param.data) with alpha = min(1 - 1 / (global_step + 1), alpha), the
# cosine lr written into param_groups per step (adjust_learning_rate's linear rampup and cosine_rampdown), SGD with
# nesterov, and accuracy by topk, t().eq(target.view(1, -1).expand_as(pred)) and correct[:k].reshape(-1)
def mean_teacher(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    NO_LABEL = -1

    def sigmoid_rampup(current, rampup_length):
        if rampup_length == 0:
            return 1.0
        else:
            current = np.clip(current, 0.0, rampup_length)
            phase = 1.0 - current / rampup_length
            return float(np.exp(-5.0 * phase * phase))

    def linear_rampup(current, rampup_length):
        assert current >= 0 and rampup_length >= 0
        if current >= rampup_length:
            return 1.0
        else:
            return current / rampup_length

    def cosine_rampdown(current, rampdown_length):
        assert 0 <= current <= rampdown_length
        return float(.5 * (np.cos(np.pi * current / rampdown_length) + 1))

    def softmax_mse_loss(input_logits, target_logits):
        assert input_logits.size() == target_logits.size()
        input_softmax = F.softmax(input_logits, dim=1)
        target_softmax = F.softmax(target_logits, dim=1)
        num_classes = input_logits.size()[1]
        return F.mse_loss(input_softmax, target_softmax, size_average=False) / num_classes

    def softmax_kl_loss(input_logits, target_logits):
        assert input_logits.size() == target_logits.size()
        input_log_softmax = F.log_softmax(input_logits, dim=1)
        target_softmax = F.softmax(target_logits, dim=1)
        return F.kl_div(input_log_softmax, target_softmax, size_average=False)

    def create_model(ema=False):
        model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.LeakyReLU(0.1),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(6 * 4 * 4, 5))
        if ema:
            for param in model.parameters():
                param.detach_()
        return model

    def update_ema_variables(model, ema_model, alpha, global_step):
        alpha = min(1 - 1 / (global_step + 1), alpha)
        for ema_param, param in zip(ema_model.parameters(), model.parameters()):
            ema_param.data.mul_(alpha).add_(1 - alpha, param.data)

    def adjust_learning_rate(optimizer, epoch, step_in_epoch, total_steps_in_epoch, lr=0.1, initial_lr=0.01,
                             lr_rampup=1, lr_rampdown_epochs=4):
        epoch = epoch + step_in_epoch / total_steps_in_epoch
        lr = linear_rampup(epoch, lr_rampup) * (lr - initial_lr) + initial_lr
        if lr_rampdown_epochs:
            lr *= cosine_rampdown(epoch, lr_rampdown_epochs)
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr

    def accuracy(output, target, topk=(1,)):
        maxk = max(topk)
        labeled_minibatch_size = max(target.ne(NO_LABEL).sum(), 1e-8)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / labeled_minibatch_size))
        return res

    model, ema_model = create_model(), create_model(ema=True)
    both = nn.ModuleList([model, ema_model])
    init = load(m, both, state)
    assert not any(p.requires_grad for p in ema_model.parameters())
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=2e-4, nesterov=True)
    class_criterion = nn.CrossEntropyLoss(size_average=False, ignore_index=NO_LABEL)
    consistency_criterion = softmax_mse_loss
    rng = np.random.default_rng(13)
    losses = []
    global_step = 0
    for i in range(3):
        adjust_learning_rate(optimizer, 0, i, 3)
        input = torch.from_numpy(normal(rng, 6, 3, 8, 8))
        ema_input = input + torch.from_numpy(normal(rng, 6, 3, 8, 8) * 0.1)
        target = torch.from_numpy(np.where(rng.random(6) < 0.5, rng.integers(0, 5, 6), NO_LABEL))
        minibatch_size = len(target)
        labeled_minibatch_size = target.data.ne(NO_LABEL).sum()
        assert labeled_minibatch_size > 0
        ema_model_out = ema_model(ema_input)
        model_out = model(input)
        ema_logit = ema_model_out.detach()
        class_loss = class_criterion(model_out, target) / minibatch_size
        ema_class_loss = class_criterion(ema_logit, target) / minibatch_size
        consistency_weight = 100.0 * sigmoid_rampup(i, 5)
        consistency_loss = consistency_weight * consistency_criterion(model_out, ema_logit) / minibatch_size
        kl = softmax_kl_loss(model_out, ema_logit) / minibatch_size
        loss = class_loss + consistency_loss
        prec1, prec2 = accuracy(model_out.data, target.data, topk=(1, 2))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        global_step += 1
        update_ema_variables(model, ema_model, 0.9, global_step)
        losses += [loss.item(), ema_class_loss.item(), kl.item(), prec1[0].item(), prec2[0].item(),
                   int(labeled_minibatch_size)]
    return init, losses + summary(both.parameters())


def test_mean_teacher():
    compare(mean_teacher)


# (k) bhanML/Co-teaching's loss.py and main.py: loss_coteaching by F.cross_entropy(y, t, reduce=False), the small
# losses' indices by np.argsort(loss.data).cuda()-style torch.from_numpy-free indexing, remember_rate and
# num_remember, the exchange of the picked samples between the two nets, the pure ratios from a noise mask;
# rate_schedule = np.ones(n_epoch) * forget_rate with the linspace ramp; the alpha_plan/beta1_plan written into
# param_groups (adjust_learning_rate's lr and betas)
def co_teaching(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def loss_coteaching(y_1, y_2, t, forget_rate, ind, noise_or_not):
        loss_1 = F.cross_entropy(y_1, t, reduce=False)
        ind_1_sorted = np.argsort(loss_1.data.cpu().numpy())
        loss_1_sorted = loss_1[ind_1_sorted]
        loss_2 = F.cross_entropy(y_2, t, reduce=False)
        ind_2_sorted = np.argsort(loss_2.data.cpu().numpy())
        loss_2_sorted = loss_2[ind_2_sorted]
        remember_rate = 1 - forget_rate
        num_remember = int(remember_rate * len(loss_1_sorted))
        pure_ratio_1 = np.sum(noise_or_not[ind[ind_1_sorted[:num_remember]]]) / float(num_remember)
        pure_ratio_2 = np.sum(noise_or_not[ind[ind_2_sorted[:num_remember]]]) / float(num_remember)
        ind_1_update = ind_1_sorted[:num_remember]
        ind_2_update = ind_2_sorted[:num_remember]
        # exchange
        loss_1_update = F.cross_entropy(y_1[ind_2_update], t[ind_2_update])
        loss_2_update = F.cross_entropy(y_2[ind_1_update], t[ind_1_update])
        return (torch.sum(loss_1_update) / num_remember, torch.sum(loss_2_update) / num_remember, pure_ratio_1,
                pure_ratio_2, loss_1_sorted.sum() + loss_2_sorted.sum())

    class CNN(nn.Module):
        def __init__(self, input_channel=3, n_outputs=4, dropout_rate=0.25, momentum=0.1):
            self.dropout_rate = dropout_rate
            self.momentum = momentum
            super(CNN, self).__init__()
            self.c1 = nn.Conv2d(input_channel, 8, kernel_size=3, stride=1, padding=1)
            self.l_c1 = nn.Linear(8, n_outputs)
            self.bn1 = nn.BatchNorm2d(8, momentum=self.momentum)

        def forward(self, x,):
            h = x
            h = self.c1(h)
            h = F.leaky_relu(self.bn1(h), negative_slope=0.01)
            h = F.max_pool2d(h, kernel_size=2, stride=2)
            h = F.dropout2d(h, p=self.dropout_rate, training=False)
            h = F.avg_pool2d(h, kernel_size=h.data.shape[2])
            h = h.view(h.size(0), h.size(1))
            logit = self.l_c1(h)
            return logit

    n_epoch, forget_rate, num_gradual, exponent = 3, 0.5, 2, 1
    rate_schedule = np.ones(n_epoch) * forget_rate
    rate_schedule[:num_gradual] = np.linspace(0, forget_rate ** exponent, num_gradual)
    mom1, mom2 = 0.9, 0.1
    learning_rate = 0.01
    alpha_plan = [learning_rate] * n_epoch
    beta1_plan = [mom1] * n_epoch
    for i in range(1, n_epoch):
        alpha_plan[i] = float(n_epoch - i) / (n_epoch - 1) * learning_rate
        beta1_plan[i] = mom2

    def adjust_learning_rate(optimizer, epoch):
        for param_group in optimizer.param_groups:
            param_group['lr'] = alpha_plan[epoch]
            param_group['betas'] = (beta1_plan[epoch], 0.999)  # Only change beta1

    cnn1, cnn2 = CNN(), CNN()
    both = nn.ModuleList([cnn1, cnn2])
    init = load(m, both, state)
    for cnn in both:  # the conv's bias before BatchNorm: its gradient is rounding alone, which Adam would normalise
        cnn.c1.bias.requires_grad_(False)
    optimizer1 = torch.optim.Adam(cnn1.parameters(), lr=learning_rate)
    optimizer2 = torch.optim.Adam(cnn2.parameters(), lr=learning_rate)
    rng = np.random.default_rng(14)
    noise_or_not = rng.random(40) > 0.3
    losses = []
    for epoch in range(n_epoch):
        adjust_learning_rate(optimizer1, epoch)
        adjust_learning_rate(optimizer2, epoch)
        cnn1.train()
        cnn2.train()
        indexes = rng.permutation(40)[:8]
        images = torch.from_numpy(normal(rng, 8, 3, 8, 8))
        labels = torch.from_numpy(rng.integers(0, 4, 8))
        logits1 = cnn1(images)
        logits2 = cnn2(images)
        loss_1, loss_2, pure_ratio_1, pure_ratio_2, sorted_sum = loss_coteaching(
            logits1, logits2, labels, rate_schedule[epoch], indexes, noise_or_not)
        optimizer1.zero_grad()
        loss_1.backward()
        optimizer1.step()
        optimizer2.zero_grad()
        loss_2.backward()
        optimizer2.step()
        losses += [loss_1.item(), loss_2.item(), pure_ratio_1, pure_ratio_2, sorted_sum.item()]
    return init, losses + summary(both.parameters())


def test_co_teaching():
    compare(co_teaching)


# (l) YU1ut/MixMatch-pytorch's train.py: the guessed labels by averaging softmax over two augmentations, sharpening
# by pt ** (1 / T) normalised, mixup of the labelled and unlabelled batches with l = max(l, 1 - l) from np.random.beta
# and torch.randperm's order (numpy's here), interleave_offsets and interleave swapping slices between the batches
# so BatchNorm sees one mixed batch, SemiLoss (the soft cross entropy -mean(sum(F.log_softmax * targets)) and the
# L2 of softmax probabilities, linear_rampup of the weight), one-hot targets by zeros(...).scatter_(1, view(-1, 1),
# 1), and WeightEMA: an optimizer-like object whose step lerps the EMA model's params and decays the model's by
# param.mul_(1 - wd)
def mixmatch(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    num_classes, batch_size, T, alpha, lambda_u = 3, 4, 0.5, 0.75, 75.0

    class WideishNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(6, momentum=0.001)
            self.fc = nn.Linear(6, num_classes)

        def forward(self, x):
            out = F.leaky_relu(self.bn(self.conv(x)), 0.1)
            out = F.adaptive_avg_pool2d(out, 1)
            return self.fc(out.view(-1, 6))

    def create_model(ema=False):
        model = WideishNet()
        if ema:
            for param in model.parameters():
                param.detach_()
        return model

    def linear_rampup(current, rampup_length=16):
        if rampup_length == 0:
            return 1.0
        else:
            current = np.clip(current / rampup_length, 0.0, 1.0)
            return float(current)

    class SemiLoss(object):
        def __call__(self, outputs_x, targets_x, outputs_u, targets_u, epoch):
            probs_u = torch.softmax(outputs_u, dim=1)
            Lx = -torch.mean(torch.sum(F.log_softmax(outputs_x, dim=1) * targets_x, dim=1))
            Lu = torch.mean((probs_u - targets_u) ** 2)
            return Lx, Lu, lambda_u * linear_rampup(epoch)

    class WeightEMA(object):
        def __init__(self, model, ema_model, alpha=0.999, lr=0.002):
            self.model = model
            self.ema_model = ema_model
            self.alpha = alpha
            self.params = list(model.state_dict().values())
            self.ema_params = list(ema_model.state_dict().values())
            self.wd = 0.02 * lr
            for param, ema_param in zip(self.params, self.ema_params):
                param.data.copy_(ema_param.data)

        def step(self):
            one_minus_alpha = 1.0 - self.alpha
            for param, ema_param in zip(self.params, self.ema_params):
                if ema_param.dtype == torch.float32:
                    ema_param.mul_(self.alpha)
                    ema_param.add_(param * one_minus_alpha)
                    # customized weight decay
                    param.mul_(1 - self.wd)

    def interleave_offsets(batch, nu):
        groups = [batch // (nu + 1)] * (nu + 1)
        for x in range(batch - sum(groups)):
            groups[-x - 1] += 1
        offsets = [0]
        for g in groups:
            offsets.append(offsets[-1] + g)
        assert offsets[-1] == batch
        return offsets

    def interleave(xy, batch):
        nu = len(xy) - 1
        offsets = interleave_offsets(batch, nu)
        xy = [[v[offsets[p]:offsets[p + 1]] for p in range(nu + 1)] for v in xy]
        for i in range(1, nu + 1):
            xy[0][i], xy[i][i] = xy[i][i], xy[0][i]
        return [torch.cat(v, dim=0) for v in xy]

    model, ema_model = create_model(), create_model(ema=True)
    both = nn.ModuleList([model, ema_model])
    init = load(m, both, state)
    train_criterion = SemiLoss()
    optimizer = optim.Adam(model.parameters(), lr=0.002)
    ema_optimizer = WeightEMA(model, ema_model, alpha=0.999)
    np.random.seed(15)
    rng = np.random.default_rng(15)
    losses = []
    for batch_idx in range(2):
        inputs_x = torch.from_numpy(normal(rng, batch_size, 3, 6, 6))
        targets_x = torch.from_numpy(rng.integers(0, num_classes, batch_size))
        inputs_u = torch.from_numpy(normal(rng, batch_size, 3, 6, 6))
        inputs_u2 = inputs_u + torch.from_numpy(normal(rng, batch_size, 3, 6, 6) * 0.1)
        targets_x = torch.zeros(batch_size, num_classes).scatter_(1, targets_x.view(-1, 1).long(), 1)
        with torch.no_grad():
            outputs_u = model(inputs_u)
            outputs_u2 = model(inputs_u2)
            p = (torch.softmax(outputs_u, dim=1) + torch.softmax(outputs_u2, dim=1)) / 2
            pt = p ** (1 / T)
            targets_u = pt / pt.sum(dim=1, keepdim=True)
            targets_u = targets_u.detach()
        all_inputs = torch.cat([inputs_x, inputs_u, inputs_u2], dim=0)
        all_targets = torch.cat([targets_x, targets_u, targets_u], dim=0)
        l = np.random.beta(alpha, alpha)
        l = max(l, 1 - l)
        idx = torch.from_numpy(np.random.permutation(all_inputs.size(0)))
        input_a, input_b = all_inputs, all_inputs[idx]
        target_a, target_b = all_targets, all_targets[idx]
        mixed_input = l * input_a + (1 - l) * input_b
        mixed_target = l * target_a + (1 - l) * target_b
        mixed_input = list(torch.split(mixed_input, batch_size))
        mixed_input = interleave(mixed_input, batch_size)
        logits = [model(mixed_input[0])]
        for input in mixed_input[1:]:
            logits.append(model(input))
        logits = interleave(logits, batch_size)
        logits_x = logits[0]
        logits_u = torch.cat(logits[1:], dim=0)
        Lx, Lu, w = train_criterion(logits_x, mixed_target[:batch_size], logits_u, mixed_target[batch_size:],
                                    batch_idx / 2)
        loss = Lx + w * Lu
        # the same soft cross entropy by F.cross_entropy of probabilities (torch >= 1.10)
        soft = F.cross_entropy(logits_x, mixed_target[:batch_size])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema_optimizer.step()
        losses += [loss.item(), Lx.item(), Lu.item(), soft.item()]
    return init, losses + summary(both.parameters()) + summary(b for n, b in both.named_buffers() if 'running' in n)


def test_mixmatch():
    compare(mixmatch)


# (m) amirgholami/adahessian's image_classification/optim_adahessian.py: Adahessian, an Optimizer subclass whose
# get_trace draws Rademacher v (torch.randint_like(p, high=2) * 2 - 1 there; numpy's here), takes
# torch.autograd.grad(grads, params, grad_outputs=v, only_inputs=True, retain_graph=False) of the gradients that
# loss.backward(create_graph=True) left in p.grad, averages |Hv| over a conv's spatial dims (and a linear's none);
# step's exp_hessian_diag_sq.mul_(beta2).addcmul_(hut_trace, hut_trace, value=1 - beta2), the bias corrections and
# hessian_power, and p.data = p.data - lr * (exp_avg / bias_correction1 / denom + weight_decay * p.data)
def adahessian(m, state=None):
    torch, nn = m.torch, m.nn
    rademacher = np.random.default_rng(16)

    class Adahessian(torch.optim.Optimizer):
        def __init__(self, params, lr=0.15, betas=(0.9, 0.999), eps=1e-4, weight_decay=0, hessian_power=1):
            if not 0.0 <= lr:
                raise ValueError(f"Invalid learning rate: {lr}")
            if not 0.0 <= eps:
                raise ValueError(f"Invalid epsilon value: {eps}")
            if not 0.0 <= hessian_power <= 1.0:
                raise ValueError(f"Invalid Hessian power value: {hessian_power}")
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, hessian_power=hessian_power)
            super(Adahessian, self).__init__(params, defaults)

        def get_trace(self, params, grads):
            for i, grad in enumerate(grads):
                if grad.grad_fn is None:
                    raise RuntimeError('Gradient tensor {:} does not have grad_fn. When calling\n'.format(i) +
                                       '\t\t\t  loss.backward(), make sure the option create_graph is\n' +
                                       '\t\t\t  set to True.')
            v = [torch.from_numpy(rademacher.integers(0, 2, tuple(p.shape)).astype(np.float32) * 2 - 1)
                 for p in params]
            hvs = torch.autograd.grad(grads, params, grad_outputs=v, only_inputs=True, retain_graph=False)
            hutchinson_trace = []
            for hv in hvs:
                param_size = hv.size()
                if len(param_size) <= 2:  # for 0/1/2D tensor
                    tmp_output = torch.abs(hv)
                    hutchinson_trace.append(tmp_output)
                elif len(param_size) == 4:  # Conv kernel
                    tmp_output = torch.mean(torch.abs(hv), dim=[2, 3], keepdim=True)
                    hutchinson_trace.append(tmp_output)
            return hutchinson_trace

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            params = []
            groups = []
            grads = []
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is not None:
                        params.append(p)
                        groups.append(group)
                        grads.append(p.grad)
            hut_traces = self.get_trace(params, grads)
            for (p, group, grad, hut_trace) in zip(params, groups, grads, hut_traces):
                state = self.state[p]
                if len(state) == 0:
                    state['step'] = 0
                    state['exp_avg'] = torch.zeros_like(p.data)
                    state['exp_hessian_diag_sq'] = torch.zeros_like(p.data)
                exp_avg, exp_hessian_diag_sq = state['exp_avg'], state['exp_hessian_diag_sq']
                beta1, beta2 = group['betas']
                state['step'] += 1
                exp_avg.mul_(beta1).add_(grad.detach_(), alpha=1 - beta1)
                exp_hessian_diag_sq.mul_(beta2).addcmul_(hut_trace, hut_trace, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** state['step']
                bias_correction2 = 1 - beta2 ** state['step']
                k = group['hessian_power']
                denom = ((exp_hessian_diag_sq.sqrt() ** k) / math.sqrt(bias_correction2) ** k).add_(group['eps'])
                step_size = group['lr']
                p.data = p.data - step_size * (exp_avg / bias_correction1 / denom + group['weight_decay'] * p.data)
            return loss

    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.Tanh(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                          nn.Linear(16, 3))
    init = load(m, model, state)
    optimizer = Adahessian(model.parameters(), lr=0.05, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()
    rng = np.random.default_rng(17)
    losses = []
    for i in range(2):
        inputs, targets = torch.from_numpy(normal(rng, 4, 2, 5, 5)), torch.from_numpy(rng.integers(0, 3, 4))
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        loss.backward(create_graph=True)
        optimizer.step()
        losses.append(loss.item())
    trace = [optimizer.state[p]['exp_hessian_diag_sq'].sum().item() for p in model.parameters()]
    return init, losses + trace + summary(model.parameters())


def test_adahessian():
    compare(adahessian)


# (n) avijit9/Contractive_Autoencoder_in_Pytorch's CAE_pytorch.py: the sigmoid encoder's contractive penalty in
# closed form (W = model.state_dict()['fc1.weight'], requires_grad, h * (1 - h), the mm of dh ** 2 with the rows'
# squared sums viewed (-1, 1), mul_ by lam), BCE(size_average=False) reconstruction; beside it the same Frobenius
# norm of the encoder's Jacobian by torch.autograd.grad(..., torch.eye(...), is_grads_batched=True) over the
# code's units (the Jacobian-regularisation idiom), with create_graph so that it trains
def contractive_autoencoder(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    Variable = torch.autograd.Variable

    class CAE(nn.Module):
        def __init__(self):
            super(CAE, self).__init__()
            self.fc1 = nn.Linear(16, 6, bias=False)  # Encoder
            self.fc2 = nn.Linear(6, 16, bias=False)  # Decoder
            self.relu = nn.ReLU()
            self.sigmoid = nn.Sigmoid()

        def encoder(self, x):
            h1 = self.relu(self.fc1(x.view(-1, 16)))
            return h1

        def decoder(self, z):
            h2 = self.sigmoid(self.fc2(z))
            return h2

        def forward(self, x):
            h1 = self.encoder(x)
            h2 = self.decoder(h1)
            return h1, h2

    mse_loss = nn.BCELoss(size_average=False)

    def loss_function(W, x, recons_x, h, lam):
        mse = mse_loss(recons_x, x)
        dh = h * (1 - h)  # Hadamard product produces size N_batch x N_hidden
        w_sum = torch.sum(Variable(W) ** 2, dim=1)
        w_sum = w_sum.unsqueeze(1)  # shape N_hidden x 1
        contractive_loss = torch.sum(torch.mm(dh ** 2, w_sum), 0)
        return mse + contractive_loss.mul_(lam)

    def jacobian_penalty(model, x):
        x = x.view(-1, 16).detach().requires_grad_(True)
        h = model.encoder(x)
        eye = torch.eye(h.size(1))
        jac, = torch.autograd.grad(h.sum(0), x, eye, create_graph=True, is_grads_batched=True)  # [hidden, N, 16]
        return jac.pow(2).sum() / x.size(0)

    model = CAE()
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    rng = np.random.default_rng(18)
    lam = 1e-4
    losses = []
    for idx in range(2):
        data = torch.from_numpy(rng.random((4, 1, 4, 4)).astype(np.float32))
        data = Variable(data)
        optimizer.zero_grad()
        hidden_representation, recons_x = model(data)
        W = model.state_dict()['fc1.weight']
        loss = loss_function(W, data.view(-1, 16), recons_x, hidden_representation, lam)
        penalty = jacobian_penalty(model, data)
        (loss + 0.1 * penalty).backward()
        optimizer.step()
        losses += [loss.item(), penalty.item()]
    return init, losses + summary(model.parameters())


def test_contractive_autoencoder():
    compare(contractive_autoencoder)


# (o) pytorch/tutorials' beginner/knowledge_distillation_tutorial.py: the DeepNN teacher and LightNN student with
# features and classifier Sequentials; train_knowledge_distillation's soft targets by softmax(teacher / T) and
# log_softmax(student / T), the KL written as sum(soft_targets * (log(soft_targets) - soft_prob)) / batch * T ** 2;
# the cosine-loss variant (ModifiedDeepNN returning flattened features, avg_pool1d of the teacher's hidden
# representation to the student's size, nn.CosineEmbeddingLoss against torch.ones(batch)); and the regressor variant
# (a Conv2d regressor on the student's feature map, nn.MSELoss against the teacher's), the teacher under eval() and
# torch.no_grad()
def kd_tutorial(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class DeepNN(nn.Module):
        def __init__(self, num_classes=4):
            super(DeepNN, self).__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.ReLU(),
                nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
            )
            self.classifier = nn.Sequential(nn.Linear(8 * 4 * 4, 16), nn.ReLU(), nn.Dropout(0.0),
                                            nn.Linear(16, num_classes))

        def forward(self, x):
            x = self.features(x)
            conv_feature_map = x
            flattened_conv_output = torch.flatten(x, 1)
            x = self.classifier(flattened_conv_output)
            flattened_conv_output_after_pooling = F.avg_pool1d(flattened_conv_output, 2)
            return x, flattened_conv_output_after_pooling, conv_feature_map

    class LightNN(nn.Module):
        def __init__(self, num_classes=4):
            super(LightNN, self).__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 4, kernel_size=3, padding=1), nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
            )
            self.classifier = nn.Sequential(nn.Linear(4 * 4 * 4, 8), nn.ReLU(), nn.Dropout(0.0),
                                            nn.Linear(8, num_classes))
            self.regressor = nn.Sequential(nn.Conv2d(4, 8, kernel_size=3, padding=1))

        def forward(self, x):
            x = self.features(x)
            regressor_output = self.regressor(x)
            flattened_conv_output = torch.flatten(x, 1)
            x = self.classifier(flattened_conv_output)
            return x, flattened_conv_output, regressor_output

    teacher, student = DeepNN(), LightNN()
    both = nn.ModuleList([teacher, student])
    init = load(m, both, state)
    rng = np.random.default_rng(19)
    inputs = torch.from_numpy(normal(rng, 4, 3, 8, 8))
    labels = torch.from_numpy(rng.integers(0, 4, 4))
    ce_loss = nn.CrossEntropyLoss()
    cosine_loss = nn.CosineEmbeddingLoss()
    mse_loss = nn.MSELoss()
    optimizer = optim.Adam(student.parameters(), lr=0.001)
    T, soft_target_loss_weight, ce_loss_weight = 2, 0.25, 0.75
    teacher.eval()
    student.train()
    losses = []
    for variant in ("kl", "cosine", "regressor"):
        optimizer.zero_grad()
        with torch.no_grad():
            teacher_logits, teacher_hidden, teacher_feature_map = teacher(inputs)
        student_logits, student_hidden, regressor_feature_map = student(inputs)
        if variant == "kl":
            soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
            soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)
            soft_targets_loss = (torch.sum(soft_targets * (soft_targets.log() - soft_prob)) / soft_prob.size()[0]
                                 * (T ** 2))
            hidden_rep_loss = soft_targets_loss
        elif variant == "cosine":
            hidden_rep_loss = cosine_loss(student_hidden, teacher_hidden, target=torch.ones(inputs.size(0)))
        else:
            hidden_rep_loss = mse_loss(regressor_feature_map, teacher_feature_map)
        label_loss = ce_loss(student_logits, labels)
        loss = soft_target_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss
        loss.backward()
        optimizer.step()
        losses += [loss.item(), hidden_rep_loss.item()]
    return init, losses + summary(student.parameters())


def test_kd_tutorial():
    compare(kd_tutorial)


# (p) greydanus/hamiltonian-nn's hnn.py, nn_models.py and experiment-spring/train.py: MLP with orthogonal_ init and
# a nonlinearity chosen by name (choose_nonlinearity), HNN's forward split by .split(1, 1), the permutation tensor M
# by torch.eye and torch.cat([M[n // 2:], -M[:n // 2]]) (assume_canonical_coords), time_derivative by
# torch.autograd.grad(F2.sum(), x, create_graph=True)[0] @ M.t(), the L2 loss of the predicted dx/dt; Adam with
# weight_decay; then the learnt vector field's Jacobian by torch.autograd.functional.jacobian(vectorize=True), as
# the analysis notebooks check its symplectic structure
def hamiltonian_nn(m, state=None):
    torch, nn = m.torch, m.nn

    def choose_nonlinearity(name):
        nl = None
        if name == 'tanh':
            nl = torch.tanh
        elif name == 'relu':
            nl = torch.relu
        elif name == 'sigmoid':
            nl = torch.sigmoid
        elif name == 'softplus':
            nl = torch.nn.functional.softplus
        elif name == 'selu':
            nl = torch.nn.functional.selu
        elif name == 'elu':
            nl = torch.nn.functional.elu
        elif name == 'swish':
            nl = lambda x: x * torch.sigmoid(x)  # noqa: E731
        else:
            raise ValueError("nonlinearity not recognized")
        return nl

    class MLP(torch.nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, nonlinearity='tanh'):
            super(MLP, self).__init__()
            self.linear1 = torch.nn.Linear(input_dim, hidden_dim)
            self.linear2 = torch.nn.Linear(hidden_dim, hidden_dim)
            self.linear3 = torch.nn.Linear(hidden_dim, output_dim, bias=None)
            for l in [self.linear1, self.linear2, self.linear3]:
                torch.nn.init.orthogonal_(l.weight)  # use a principled initialization
            self.nonlinearity = choose_nonlinearity(nonlinearity)

        def forward(self, x, separate_fields=False):
            h = self.nonlinearity(self.linear1(x))
            h = self.nonlinearity(self.linear2(h))
            return self.linear3(h)

    class HNN(torch.nn.Module):
        def __init__(self, input_dim, differentiable_model, field_type='solenoidal', baseline=False,
                     assume_canonical_coords=True):
            super(HNN, self).__init__()
            self.baseline = baseline
            self.differentiable_model = differentiable_model
            self.assume_canonical_coords = assume_canonical_coords
            self.M = self.permutation_tensor(input_dim)  # Levi-Civita permutation tensor
            self.field_type = field_type

        def forward(self, x):
            if self.baseline:
                return self.differentiable_model(x)
            y = self.differentiable_model(x)
            assert y.dim() == 2 and y.shape[1] == 2, "Output tensor should have shape [batch_size, 2]"
            return y.split(1, 1)

        def time_derivative(self, x, t=None, separate_fields=False):
            if self.baseline:
                return self.differentiable_model(x)
            F1, F2 = self.forward(x)  # traditional forward pass
            conservative_field = torch.zeros_like(x)  # start out with both components set to 0
            solenoidal_field = torch.zeros_like(x)
            if self.field_type != 'solenoidal':
                dF1 = torch.autograd.grad(F1.sum(), x, create_graph=True)[0]  # gradients for conservative field
                conservative_field = dF1 @ torch.eye(*self.M.shape)
            if self.field_type != 'conservative':
                dF2 = torch.autograd.grad(F2.sum(), x, create_graph=True)[0]  # gradients for solenoidal field
                solenoidal_field = dF2 @ self.M.t()
            if separate_fields:
                return [conservative_field, solenoidal_field]
            return conservative_field + solenoidal_field

        def permutation_tensor(self, n):
            M = None
            if self.assume_canonical_coords:
                M = torch.eye(n)
                M = torch.cat([M[n // 2:], -M[:n // 2]])
            else:
                M = torch.ones(n, n)  # matrix of ones
                M *= 1 - torch.eye(n)  # clear diagonals
                M[::2] *= -1  # pattern of signs
                M[:, ::2] *= -1
                for i in range(n):  # make asymmetric
                    for j in range(i + 1, n):
                        M[i, j] *= -1
            return M

    def L2_loss(u, v):
        return (u - v).pow(2).mean()

    def get_dataset(rng, samples=12, noise_std=0.1):  # the spring's trajectories' points and their dx/dt
        q, p = rng.standard_normal(samples), rng.standard_normal(samples)
        x = np.stack([q, p], 1) + rng.standard_normal((samples, 2)) * noise_std
        dx = np.stack([p, -q], 1)  # dq/dt = dH/dp, dp/dt = -dH/dq for H = (q^2 + p^2) / 2
        return x.astype(np.float32), dx.astype(np.float32)

    output_dim = 2
    nn_model = MLP(2, 8, output_dim, 'tanh')
    model = HNN(2, differentiable_model=nn_model, field_type='solenoidal')
    other = HNN(2, differentiable_model=MLP(2, 4, 2, 'softplus'), field_type='both', assume_canonical_coords=False)
    init = load(m, nn.ModuleList([model, other]), state)
    optim = torch.optim.Adam(model.parameters(), 1e-3, weight_decay=1e-4)
    rng = np.random.default_rng(20)
    data_x, data_dx = get_dataset(rng)
    x = torch.tensor(data_x, requires_grad=True, dtype=torch.float32)
    dxdt = torch.Tensor(data_dx)
    losses = []
    for step in range(2):
        dxdt_hat = model.time_derivative(x)
        loss = L2_loss(dxdt, dxdt_hat)
        loss.backward()
        grad = torch.cat([p.grad.flatten() for p in model.parameters()]).clone()
        optim.step()
        optim.zero_grad()
        losses += [loss.item(), grad.std().item()]
    field = lambda v: model.time_derivative(v.view(1, 2).requires_grad_(True)).view(2)  # noqa: E731
    jac = torch.autograd.functional.jacobian(field, x[0].detach(), vectorize=True)
    conservative, solenoidal = other.time_derivative(x, separate_fields=True)
    losses += jac.flatten().tolist() + [conservative.sum().item(), solenoidal.sum().item()]
    return init, losses + summary(model.parameters())


def test_hamiltonian_nn():
    compare(hamiltonian_nn)


# (q) pytorch/tutorials' intermediate/forward_ad_usage.py: fwAD.dual_level, make_dual (a dual's tangent unpacked as
# the same object), the JVP of fn(x, y) = x ** 2 + y ** 2 with a plain second input, the tangent gone after the
# level; with Modules, parameters swapped for duals by delattr and setattr, and by torch.func.functional_call; then
# the directional derivative of a small classifier's loss along a random direction (forward gradient descent, Baydin
# et al.'s "Gradients without backpropagation"), as the tutorial's readers go on to write it: the step
# p -= lr * (jvp * v), without backward (the level entered with grad enabled, as tnet's forward AD needs)
def forward_ad_tutorial(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import importlib
    fwAD = importlib.import_module(torch.__name__ + ".autograd.forward_ad")
    functional_call = importlib.import_module(torch.__name__ + ".func").functional_call
    rng = np.random.default_rng(21)
    primal = torch.from_numpy(normal(rng, 4, 4))
    tangent = torch.from_numpy(normal(rng, 4, 4))

    def fn(x, y):
        return x ** 2 + y ** 2

    with fwAD.dual_level():
        dual_input = fwAD.make_dual(primal, tangent)
        assert fwAD.unpack_dual(dual_input).tangent is tangent
        plain_tensor = torch.from_numpy(normal(rng, 4, 4))
        dual_output = fn(dual_input, plain_tensor)
        jvp = fwAD.unpack_dual(dual_output).tangent
    assert fwAD.unpack_dual(dual_output).tangent is None
    found = jvp.flatten().tolist()

    model = nn.Linear(5, 3)
    classifier = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3))
    init = load(m, nn.ModuleList([model, classifier]), state)
    input = torch.from_numpy(normal(rng, 6, 5))
    params = {name: p for name, p in model.named_parameters()}
    tangents = {name: torch.from_numpy(rng.random(tuple(p.shape)).astype(np.float32)) for name, p in params.items()}
    dual_params = {}
    with fwAD.dual_level():
        for name, p in params.items():
            dual_params[name] = fwAD.make_dual(p, tangents[name])
        out = functional_call(model, dual_params, input)
        jvp2 = fwAD.unpack_dual(out).tangent
    with fwAD.dual_level():
        for name, p in params.items():
            delattr(model, name)
            setattr(model, name, fwAD.make_dual(p, tangents[name]))
        out = model(input)
        jvp = fwAD.unpack_dual(out).tangent
    assert torch.allclose(jvp, jvp2)
    found += jvp.flatten().tolist()

    target = torch.from_numpy(rng.integers(0, 3, 6))
    named = dict(classifier.named_parameters())
    for step in range(2):
        v = {name: torch.from_numpy(normal(rng, *p.shape)) for name, p in named.items()}
        with fwAD.dual_level():  # (not under no_grad: tnet's forward AD differentiates the tape, README)
            duals = {name: fwAD.make_dual(p, v[name]) for name, p in named.items()}
            loss = F.cross_entropy(functional_call(classifier, duals, (input,)), target)
            loss_value, directional = fwAD.unpack_dual(loss)
            found += [loss_value.item(), directional.item()]
        with torch.no_grad():
            for name, p in named.items():
                p.sub_(0.1 * directional * v[name])
    return init, found + summary(classifier.parameters())


def test_forward_ad_tutorial():
    compare(forward_ad_tutorial)


# (r) pytorch/tutorials' intermediate/jacobians_hessians.py and neural_tangent_kernels.py (torch.func): predict by
# F.linear(x, weight, bias).tanh(), the Jacobian by jacrev(predict, argnums=2) against the vjp-per-unit baseline
# (vjp with unit vectors from torch.eye, torch.stack), argnums=(0, 1), jacfwd, the batch Jacobian by
# vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0)), the Hessian by hessian and by jacfwd(jacrev), and hvp by
# jvp of grad; then the empirical NTK of a tiny CNN by functional_call over detached params, vmap(jacrev(fnet_single),
# (None, 0)), the jacobians flattened and contracted by einsum('Naf,Mbf->NMab'), summed over the parameters, and the
# tutorial's trace variant ('Naf,Maf->NM')
def jacobians_hessians_ntk(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    import importlib
    func = importlib.import_module(torch.__name__ + ".func")
    vmap, jacrev, jacfwd, hessian = func.vmap, func.jacrev, func.jacfwd, func.hessian
    vjp, jvp, grad, functional_call = func.vjp, func.jvp, func.grad, func.functional_call
    rng = np.random.default_rng(22)

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()

    D = 2
    weight = torch.from_numpy(normal(rng, D, D))
    bias = torch.from_numpy(normal(rng, D))
    x = torch.from_numpy(normal(rng, D))
    found = []
    _, vjp_fn = vjp(lambda x: predict(weight, bias, x), x)
    unit_vectors = torch.eye(D)

    def compute_jac(xp):
        jacobian_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0] for vec in unit_vectors]
        return torch.stack(jacobian_rows)
    xp = x.clone().requires_grad_()
    jacobian = compute_jac(xp)
    jacobian_vjp = torch.stack([vjp_fn(vec)[0] for vec in unit_vectors])
    ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)
    assert torch.allclose(ft_jacobian, jacobian, atol=1e-6) and torch.allclose(jacobian_vjp, jacobian, atol=1e-6)
    ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
    jacfwd_jacobian = jacfwd(predict, argnums=2)(weight, bias, x)
    found += ft_jacobian.flatten().tolist() + [ft_jac_weight.sum().item(), ft_jac_bias.sum().item(),
                                               jacfwd_jacobian.sum().item()]
    batch_size = 3
    xb = torch.from_numpy(normal(rng, batch_size, D))
    compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
    batch_jacobian0 = compute_batch_jacobian(weight, bias, xb)
    hess_api = hessian(predict, argnums=2)(weight, bias, x)
    hess_fwdrev = jacfwd(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
    assert torch.allclose(hess_api, hess_fwdrev, atol=1e-6)

    def hvp(f, primals, tangents):
        return jvp(grad(f), primals, tangents)[1]

    def f(x):
        return x.sin().sum()
    xh, th = torch.from_numpy(normal(rng, 5)), torch.from_numpy(normal(rng, 5))
    found += [batch_jacobian0.sum().item(), hess_api.sum().item()] + hvp(f, (xh,), (th,)).tolist()

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, (3, 3))
            self.conv2 = nn.Conv2d(4, 4, (3, 3))
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            x = self.conv1(x)
            x = x.relu()
            x = self.conv2(x)
            x = x.relu()
            x = x.mean((2, 3))
            x = self.fc(x)
            return x

    net = CNN()
    init = load(m, net, state)
    x_train = torch.from_numpy(normal(rng, 2, 3, 5, 5))
    x_test = torch.from_numpy(normal(rng, 1, 3, 5, 5))
    params = {k: v.detach() for k, v in net.named_parameters()}

    def fnet_single(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute='full'):
        jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
        jac1 = jac1.values()
        jac1 = [j.flatten(2) for j in jac1]
        jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
        jac2 = jac2.values()
        jac2 = [j.flatten(2) for j in jac2]
        if compute == 'full':
            einsum_expr = 'Naf,Mbf->NMab'
        elif compute == 'trace':
            einsum_expr = 'Naf,Maf->NM'
        elif compute == 'diagonal':
            einsum_expr = 'Naf,Maf->NMa'
        else:
            assert False
        result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
        result = result.sum(0)
        return result

    result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
    trace = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, 'trace')
    assert tuple(result.shape) == (2, 1, 3, 3)
    found += result.flatten().tolist() + trace.flatten().tolist()
    return init, found


def test_jacobians_hessians_ntk():
    compare(jacobians_hessians_ntk)


# (s) pytorch/tutorials' intermediate/custom_function_double_backward_tutorial.py: Exp saving its output and Sinh
# saving intermediates returned as outputs, their first derivatives by autograd.grad(create_graph=True) and the second
# by another grad; then a critic whose activation is such a Function, trained with WGAN-GP's gradient penalty
# (torch.autograd.grad(outputs=d_interpolates, inputs=interpolates, grad_outputs=ones, create_graph=True,
# retain_graph=True, only_inputs=True), the penalty's ((norm(2, dim=1) - 1) ** 2).mean()), as eriklindernoren's
# wgan_gp.py writes it
def custom_function_double_backward(m, state=None):
    torch, nn = m.torch, m.nn

    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = torch.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_out):
            result, = ctx.saved_tensors
            return grad_out * result

    class Sinh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx = torch.exp(x)
            expnegx = torch.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            grad_input += _grad_out_exp * expx
            grad_input -= _grad_out_negexp * expnegx
            return grad_input

    def sinh(x):
        return Sinh.apply(x)[0]

    rng = np.random.default_rng(23)
    x = torch.tensor(normal(rng, 3), requires_grad=True).clone()
    found = []
    for fn in (Exp.apply, sinh):
        out = fn(x)
        grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
        grad2_x, = torch.autograd.grad(grad_x.sum(), x)
        found += grad_x.tolist() + grad2_x.tolist()

    class SoftSign(nn.Module):  # the critic's activation as a custom Function: x / (1 + exp(x) + exp(-x))
        def forward(self, x):
            return x / (1 + Exp.apply(x) + Exp.apply(-x))

    critic = nn.Sequential(nn.Linear(4, 8), SoftSign(), nn.Linear(8, 1))
    init = load(m, critic, state)
    optimizer_D = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.999))
    lambda_gp = 10

    def compute_gradient_penalty(D, real_samples, fake_samples, alpha):
        interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
        d_interpolates = D(interpolates)
        fake = torch.ones(real_samples.shape[0], 1).requires_grad_(False)
        gradients = torch.autograd.grad(outputs=d_interpolates, inputs=interpolates, grad_outputs=fake,
                                        create_graph=True, retain_graph=True, only_inputs=True)[0]
        gradients = gradients.view(gradients.size(0), -1)
        return ((gradients.norm(2, dim=1) - 1) ** 2).mean()

    for step in range(2):
        real_imgs = torch.from_numpy(normal(rng, 5, 4))
        fake_imgs = torch.from_numpy(normal(rng, 5, 4) * 0.5 + 1)
        alpha = torch.from_numpy(rng.random((5, 1)).astype(np.float32))
        optimizer_D.zero_grad()
        real_validity = critic(real_imgs)
        fake_validity = critic(fake_imgs)
        gradient_penalty = compute_gradient_penalty(critic, real_imgs.data, fake_imgs.data, alpha)
        d_loss = -torch.mean(real_validity) + torch.mean(fake_validity) + lambda_gp * gradient_penalty
        d_loss.backward()
        optimizer_D.step()
        found += [d_loss.item(), gradient_penalty.item()]
    return init, found + summary(critic.parameters())


def test_custom_function_double_backward():
    compare(custom_function_double_backward)
