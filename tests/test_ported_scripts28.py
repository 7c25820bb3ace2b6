"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports
alone, as test_ported_scripts.py: John Schulman's Reptile on sine waves (deepcopy of a state_dict, an inner SGD
through param.data -= and the outer step as a state_dict comprehension loaded back); facebookresearch's MADGRAD (an
Optimizer subclass keeping its step count as a long tensor under the string key self.state['k'], the cube-root dual
averaging by addcmul_, addcdiv and mul_().add_()); Hugging Face's Adafactor (factored second moments by row and column
means, rsqrt_, a parameter's RMS kept as a 0-d tensor that max() and the lr carry into add_'s alpha, relative steps
with warmup_init); xingyizhou's CenterNet losses and decoding (sigmoid_ clamped, the CornerNet focal loss by eq/lt
masks and pow, _transpose_and_gather_feat by gather of an expanded index, RegL1Loss with size_average=False, the
max-pooling NMS and topk with integer % and /); pmixer's SASRec (bool masks by ~, torch.BoolTensor of numpy, a
sequence-first MultiheadAttention with a causal attn_mask, Conv1d feed-forwards, xavier_normal_ in a bare try);
atulkum's pointer-generator (a packed BiLSTM, coverage attention, the copy distribution by scatter_add and gather);
PetarV-'s Deep Graph Infomax (Bilinear discriminator, early stopping through torch.save and torch.load); Nanne's
NetVLAD (torch.zeros(..., layout=x.layout), which found that tnet's factories lacked layout=; parameters replaced by
init_params, triplet losses over split encodings); a SegNet of max_pool2d(return_indices=True) and max_unpool2d;
DeepCTR-Torch's DCN (CrossNet's tensordot and slice-by-slice init of 3-d parameters, a regularisation list);
wgrathwohl's JEM (SGLD on the input by autograd.grad and x.data +=, a replay buffer); zylo117's BiFPN (static same
padding, a Swish Function reading ctx.saved_variables, normalised fusion weights, ReduceLROnPlateau); ECA-Net, GCNet's
ContextBlock and TripletAttention under SequentialLR with an EMA by torch._foreach_*; NVIDIA's Tacotron2
(location-sensitive attention, .data.masked_fill_ on tensors of the graph, LSTMCells, the gate loss); williamleif's
graphsage-simple (a mask written by mask[rows, cols] = 1, a lambda over the first encoder as the second's features);
and karpathy's minGPT with its Trainer (whose RandomSampler(replacement=True, num_samples=int(1e10)) found that tnet
drew every index at once). Each runs in tnet, then in torch from tnet's initial weights (state_dict through numpy),
and the losses, and the weights summed into a few numbers, agree. Numpy draws what a script draws, or torch replays
tnet's draws (`replay`); shapes are tiny and runs take one to three steps. Each script seeds torch first, as its
source's main does. Where Adam would normalise a gradient that is rounding alone (an attention key's bias, a bias
before a BatchNorm), that bias is frozen or left out of the summary, as each script says."""
import copy
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) John Schulman's reptile-sinewaves-demo.py (the gist of the Reptile blog post): a Tanh MLP regressing random sine
# waves; the inner loop SGD by hand on param.data with Variable(torch.Tensor(x)) of float64 numpy rows, the outer step
# interpolating a deepcopy'd state_dict towards the trained one by a dict comprehension into load_state_dict, and the
# evaluation's snapshot restored after a few inner steps
def reptile_sine(m, state=None):
    torch, nn = m.torch, m.nn
    ag = torch.autograd
    seed = 0
    innerstepsize = 0.02
    innerepochs = 1
    outerstepsize0 = 0.1
    niterations = 2
    rng = np.random.RandomState(seed)
    torch.manual_seed(seed)
    x_all = np.linspace(-5, 5, 12)[:, None]
    ntrain = 4

    def gen_task():
        phase = rng.uniform(low=0, high=2 * np.pi)
        ampl = rng.uniform(0.1, 5)
        f_randomsine = lambda x: np.sin(x + phase) * ampl
        return f_randomsine

    model = nn.Sequential(
        nn.Linear(1, 8),
        nn.Tanh(),
        nn.Linear(8, 8),
        nn.Tanh(),
        nn.Linear(8, 1),
    )
    init = load(m, model, state)

    def totorch(x):
        return ag.Variable(torch.Tensor(x))

    def train_on_batch(x, y):
        x = totorch(x)
        y = totorch(y)
        model.zero_grad()
        ypred = model(x)
        loss = (ypred - y).pow(2).mean()
        loss.backward()
        for param in model.parameters():
            param.data -= innerstepsize * param.grad.data
        return loss.item()

    def predict(x):
        x = totorch(x)
        return model(x).data.numpy()

    f_plot = gen_task()
    xtrain_plot = x_all[rng.choice(len(x_all), size=ntrain)]
    losses = []
    for iteration in range(niterations):
        weights_before = copy.deepcopy(model.state_dict())
        f = gen_task()
        y_all = f(x_all)
        inds = rng.permutation(len(x_all))
        for _ in range(innerepochs):
            for start in range(0, len(x_all), ntrain):
                mbinds = inds[start:start + ntrain]
                losses.append(train_on_batch(x_all[mbinds], y_all[mbinds]))
        weights_after = model.state_dict()
        outerstepsize = outerstepsize0 * (1 - iteration / niterations)
        model.load_state_dict({name: weights_before[name] + (weights_after[name] - weights_before[name]) * outerstepsize
                               for name in weights_before})
        if iteration == 0 or (iteration + 1) % 1000 == 0:
            weights_before = copy.deepcopy(model.state_dict())
            for inneriter in range(2):
                train_on_batch(xtrain_plot, f_plot(xtrain_plot))
            lossval = np.square(predict(x_all) - f_plot(x_all)).mean()
            losses.append(float(lossval))
            model.load_state_dict(weights_before)
    return init, losses + summary(model.parameters())


def test_reptile_sine():
    compare(reptile_sine)


# (b) facebookresearch/madgrad's MADGRAD (madgrad.py): an Optimizer subclass with ValueErrors for its arguments, the
# step count kept as torch.tensor([0], dtype=torch.long) under the string key self.state['k'] (sharding-safe) and read
# by .item(), lamb = lr * sqrt(k + 1), grad_sum_sq.addcmul_(grad, grad, value=lamb), the cube-root rms,
# s.data.add_(grad, alpha=lamb), x0 recomputed by addcdiv when momentum is 0, else p.data.mul_(1 - ck).add_(z,
# alpha=ck); two param groups (one without momentum), weight decay into the gradient, on a small MLP classifier
def madgrad(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(1)
    rng = np.random.default_rng(1)

    class MADGRAD(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-2, momentum=0.9, weight_decay=0, eps=1e-6, decouple_decay=False):
            if momentum < 0 or momentum >= 1:
                raise ValueError(f"Momentum {momentum} must be in the range [0,1]")
            if lr <= 0:
                raise ValueError(f"Learning rate {lr} must be positive")
            if weight_decay < 0:
                raise ValueError(f"Weight decay {weight_decay} must be non-negative")
            if eps < 0:
                raise ValueError("Eps must be non-negative")
            defaults = dict(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                            decouple_decay=decouple_decay)
            super().__init__(params, defaults)

        @property
        def supports_memory_efficient_fp16(self) -> bool:
            return False

        @property
        def supports_flat_params(self) -> bool:
            return True

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            # step counter must be stored in state to ensure correct behavior under optimizer sharding
            if 'k' not in self.state:
                self.state['k'] = torch.tensor([0], dtype=torch.long)
            k = self.state['k'].item()
            for group in self.param_groups:
                eps = group["eps"]
                lr = group["lr"] + eps
                decay = group["weight_decay"]
                momentum = group["momentum"]
                decouple_decay = group["decouple_decay"]
                ck = 1 - momentum
                lamb = lr * math.pow(k + 1, 0.5)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    state = self.state[p]
                    if "grad_sum_sq" not in state:
                        state["grad_sum_sq"] = torch.zeros_like(p.data).detach()
                        state["s"] = torch.zeros_like(p.data).detach()
                        if momentum != 0:
                            state["x0"] = torch.clone(p.data).detach()
                    if momentum != 0.0 and grad.is_sparse:
                        raise RuntimeError("momentum != 0 is not compatible with sparse gradients")
                    grad_sum_sq = state["grad_sum_sq"]
                    s = state["s"]
                    # Apply weight decay
                    if decay != 0 and not decouple_decay:
                        if grad.is_sparse:
                            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
                        grad.add_(p.data, alpha=decay)
                    if momentum == 0:
                        # Compute x_0 from other known quantities
                        rms = grad_sum_sq.pow(1 / 3).add_(eps)
                        x0 = p.data.addcdiv(s, rms, value=1)
                    else:
                        x0 = state["x0"]
                    # Accumulate second moments
                    grad_sum_sq.addcmul_(grad, grad, value=lamb)
                    rms = grad_sum_sq.pow(1 / 3).add_(eps)
                    if decay != 0 and decouple_decay:
                        p.data.add_(p.data, alpha=-lr * decay)
                    # Update s
                    s.data.add_(grad, alpha=lamb)
                    # Step
                    if momentum == 0:
                        p.data.copy_(x0.addcdiv(s, rms, value=-1))
                    else:
                        z = x0.addcdiv(s, rms, value=-1)
                        # p is a moving average of z
                        p.data.mul_(1 - ck).add_(z, alpha=ck)
            self.state['k'] += 1
            return loss

    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    init = load(m, model, state)
    try:
        MADGRAD(model.parameters(), momentum=1.0)
    except ValueError as e:
        assert "Momentum" in str(e)
    optimizer = MADGRAD([{"params": model[0].parameters()},
                         {"params": model[2].parameters(), "momentum": 0.0, "decouple_decay": True}],
                        lr=0.05, weight_decay=1e-2)
    losses = []
    for _ in range(3):
        x, y = torch.from_numpy(normal(rng, 5, 6)), torch.from_numpy(rng.integers(0, 3, 5))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert optimizer.state['k'].item() == 3 and optimizer.state['k'].dtype == torch.long
    return init, losses + summary(model.parameters())


def test_madgrad():
    compare(madgrad)


# (c) Hugging Face transformers' Adafactor (optimization.py, after fairseq's): _get_lr with relative steps and
# warmup_init, the parameter's RMS kept in the state as a 0-d tensor (max(eps[1], RMS) and so the lr a tensor, which
# add_'s alpha takes), factored second moments of >= 2-d parameters by torch.zeros(grad_shape[:-1]).to(grad) and means
# over the last two dims, _approx_sq_grad by rsqrt_ and broadcast torch.mul, the update clipped by its RMS with clamp_,
# beta1's first moment, weight decay; a conv (4-d, factored over its last two dims), a linear and biases, two groups
def adafactor(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(2)
    rng = np.random.default_rng(2)

    class Adafactor(torch.optim.Optimizer):
        def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
                     weight_decay=0.0, scale_parameter=True, relative_step=True, warmup_init=False):
            if lr is not None and relative_step:
                raise ValueError("Cannot combine manual `lr` and `relative_step=True` options")
            if warmup_init and not relative_step:
                raise ValueError("`warmup_init=True` requires `relative_step=True`")
            defaults = {"lr": lr, "eps": eps, "clip_threshold": clip_threshold, "decay_rate": decay_rate,
                        "beta1": beta1, "weight_decay": weight_decay, "scale_parameter": scale_parameter,
                        "relative_step": relative_step, "warmup_init": warmup_init}
            super().__init__(params, defaults)

        @staticmethod
        def _get_lr(param_group, param_state):
            rel_step_sz = param_group["lr"]
            if param_group["relative_step"]:
                min_step = 1e-6 * param_state["step"] if param_group["warmup_init"] else 1e-2
                rel_step_sz = min(min_step, 1.0 / math.sqrt(param_state["step"]))
            param_scale = 1.0
            if param_group["scale_parameter"]:
                param_scale = max(param_group["eps"][1], param_state["RMS"])
            return param_scale * rel_step_sz

        @staticmethod
        def _get_options(param_group, param_shape):
            factored = len(param_shape) >= 2
            use_first_moment = param_group["beta1"] is not None
            return factored, use_first_moment

        @staticmethod
        def _rms(tensor):
            return tensor.norm(2) / (tensor.numel() ** 0.5)

        @staticmethod
        def _approx_sq_grad(exp_avg_sq_row, exp_avg_sq_col):
            # copy from fairseq's adafactor implementation:
            r_factor = (exp_avg_sq_row / exp_avg_sq_row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
            c_factor = exp_avg_sq_col.unsqueeze(-2).rsqrt()
            return torch.mul(r_factor, c_factor)

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    if grad.dtype in {torch.float16, torch.bfloat16}:
                        grad = grad.float()
                    if grad.is_sparse:
                        raise RuntimeError("Adafactor does not support sparse gradients.")
                    state = self.state[p]
                    grad_shape = grad.shape
                    factored, use_first_moment = self._get_options(group, grad_shape)
                    # State Initialization
                    if len(state) == 0:
                        state["step"] = 0
                        if use_first_moment:
                            # Exponential moving average of gradient values
                            state["exp_avg"] = torch.zeros_like(grad)
                        if factored:
                            state["exp_avg_sq_row"] = torch.zeros(grad_shape[:-1]).to(grad)
                            state["exp_avg_sq_col"] = torch.zeros(grad_shape[:-2] + grad_shape[-1:]).to(grad)
                        else:
                            state["exp_avg_sq"] = torch.zeros_like(grad)
                        state["RMS"] = 0
                    else:
                        if use_first_moment:
                            state["exp_avg"] = state["exp_avg"].to(grad)
                        if factored:
                            state["exp_avg_sq_row"] = state["exp_avg_sq_row"].to(grad)
                            state["exp_avg_sq_col"] = state["exp_avg_sq_col"].to(grad)
                        else:
                            state["exp_avg_sq"] = state["exp_avg_sq"].to(grad)
                    p_data_fp32 = p
                    if p.dtype in {torch.float16, torch.bfloat16}:
                        p_data_fp32 = p_data_fp32.float()
                    state["step"] += 1
                    state["RMS"] = self._rms(p_data_fp32)
                    lr = self._get_lr(group, state)
                    beta2t = 1.0 - math.pow(state["step"], group["decay_rate"])
                    update = (grad**2) + group["eps"][0]
                    if factored:
                        exp_avg_sq_row = state["exp_avg_sq_row"]
                        exp_avg_sq_col = state["exp_avg_sq_col"]
                        exp_avg_sq_row.mul_(beta2t).add_(update.mean(dim=-1), alpha=(1.0 - beta2t))
                        exp_avg_sq_col.mul_(beta2t).add_(update.mean(dim=-2), alpha=(1.0 - beta2t))
                        # Approximation of exponential moving average of square of gradient
                        update = self._approx_sq_grad(exp_avg_sq_row, exp_avg_sq_col)
                        update.mul_(grad)
                    else:
                        exp_avg_sq = state["exp_avg_sq"]
                        exp_avg_sq.mul_(beta2t).add_(update, alpha=(1.0 - beta2t))
                        update = exp_avg_sq.rsqrt().mul_(grad)
                    update.div_((self._rms(update) / group["clip_threshold"]).clamp_(min=1.0))
                    update.mul_(lr)
                    if use_first_moment:
                        exp_avg = state["exp_avg"]
                        exp_avg.mul_(group["beta1"]).add_(update, alpha=(1 - group["beta1"]))
                        update = exp_avg
                    if group["weight_decay"] != 0:
                        p_data_fp32.add_(p_data_fp32, alpha=(-group["weight_decay"] * lr))
                    p_data_fp32.add_(-update)
                    if p.dtype in {torch.float16, torch.bfloat16}:
                        p.copy_(p_data_fp32)
            return loss

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 3, 3, padding=1)
            self.fc = nn.Linear(3 * 4 * 4, 4)

        def forward(self, x):
            return self.fc(torch.flatten(torch.tanh(self.conv(x)), 1))

    model = Net()
    init = load(m, model, state)
    optimizer = Adafactor([{"params": model.conv.parameters()},
                           {"params": model.fc.parameters(), "relative_step": False, "warmup_init": False,
                            "lr": 1e-2, "beta1": 0.9, "weight_decay": 0.01}],
                          scale_parameter=True, relative_step=True, warmup_init=True, lr=None)
    losses = []
    for _ in range(3):
        x, y = torch.from_numpy(normal(rng, 3, 2, 4, 4)), torch.from_numpy(rng.integers(0, 4, 3))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_adafactor():
    compare(adafactor)


# (d) xingyizhou/CenterNet's ctdet losses and decoding (models/losses.py, models/utils.py, models/decode.py,
# trains/ctdet.py): heads as Sequential(conv, ReLU(inplace=True), 1x1 conv) with the heatmap's bias filled with -2.19;
# _sigmoid by clamp of sigmoid_ in place; _neg_loss (CornerNet's focal loss: gt.eq(1).float(), gt.lt(1).float(),
# torch.pow(1 - gt, 4), `if num_pos == 0` on a 0-d tensor); RegL1Loss through _transpose_and_gather_feat (permute,
# contiguous, view, gather of ind.unsqueeze(2).expand) and F.l1_loss(size_average=False); the loss_stats dict; Gaussian
# heatmap targets drawn in numpy as draw_umich_gaussian; ctdet_decode's _nms by max_pool2d and (hmax == heat).float(),
# _topk by topk of views, integer % and true division then .int().float()
def centernet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    num_classes, H, W, max_objs = 2, 8, 8, 3

    def gaussian2D(shape, sigma=1):
        m_, n_ = [(ss - 1.) / 2. for ss in shape]
        y, x = np.ogrid[-m_:m_ + 1, -n_:n_ + 1]
        h = np.exp(-(x * x + y * y) / (2 * sigma * sigma))
        h[h < np.finfo(h.dtype).eps * h.max()] = 0
        return h

    def draw_umich_gaussian(heatmap, center, radius, k=1):
        diameter = 2 * radius + 1
        gaussian = gaussian2D((diameter, diameter), sigma=diameter / 6)
        x, y = int(center[0]), int(center[1])
        height, width = heatmap.shape[0:2]
        left, right = min(x, radius), min(width - x, radius + 1)
        top, bottom = min(y, radius), min(height - y, radius + 1)
        masked_heatmap = heatmap[y - top:y + bottom, x - left:x + right]
        masked_gaussian = gaussian[radius - top:radius + bottom, radius - left:radius + right]
        if min(masked_gaussian.shape) > 0 and min(masked_heatmap.shape) > 0:
            np.maximum(masked_heatmap, masked_gaussian * k, out=masked_heatmap)
        return heatmap

    def _sigmoid(x):
        y = torch.clamp(x.sigmoid_(), min=1e-4, max=1 - 1e-4)
        return y

    def _gather_feat(feat, ind, mask=None):
        dim = feat.size(2)
        ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
        feat = feat.gather(1, ind)
        if mask is not None:
            mask = mask.unsqueeze(2).expand_as(feat)
            feat = feat[mask]
            feat = feat.view(-1, dim)
        return feat

    def _transpose_and_gather_feat(feat, ind):
        feat = feat.permute(0, 2, 3, 1).contiguous()
        feat = feat.view(feat.size(0), -1, feat.size(3))
        feat = _gather_feat(feat, ind)
        return feat

    def _neg_loss(pred, gt):
        pos_inds = gt.eq(1).float()
        neg_inds = gt.lt(1).float()
        neg_weights = torch.pow(1 - gt, 4)
        loss = 0
        pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos_inds
        neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * neg_weights * neg_inds
        num_pos = pos_inds.float().sum()
        pos_loss = pos_loss.sum()
        neg_loss = neg_loss.sum()
        if num_pos == 0:
            loss = loss - neg_loss
        else:
            loss = loss - (pos_loss + neg_loss) / num_pos
        return loss

    class FocalLoss(nn.Module):
        def __init__(self):
            super(FocalLoss, self).__init__()
            self.neg_loss = _neg_loss

        def forward(self, out, target):
            return self.neg_loss(out, target)

    class RegL1Loss(nn.Module):
        def __init__(self):
            super(RegL1Loss, self).__init__()

        def forward(self, output, mask, ind, target):
            pred = _transpose_and_gather_feat(output, ind)
            mask = mask.unsqueeze(2).expand_as(pred).float()
            loss = F.l1_loss(pred * mask, target * mask, size_average=False)
            loss = loss / (mask.sum() + 1e-4)
            return loss

    class TinyCenterNet(nn.Module):
        def __init__(self, heads, head_conv):
            super(TinyCenterNet, self).__init__()
            self.base = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(inplace=True))
            self.heads = heads
            for head in self.heads:
                classes = self.heads[head]
                fc = nn.Sequential(
                    nn.Conv2d(6, head_conv, kernel_size=3, padding=1, bias=True),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(head_conv, classes, kernel_size=1, stride=1, padding=0, bias=True))
                if 'hm' in head:
                    fc[-1].bias.data.fill_(-2.19)
                self.__setattr__(head, fc)

        def forward(self, x):
            x = self.base(x)
            ret = {}
            for head in self.heads:
                ret[head] = self.__getattr__(head)(x)
            return [ret]

    def _nms(heat, kernel=3):
        pad = (kernel - 1) // 2
        hmax = nn.functional.max_pool2d(heat, (kernel, kernel), stride=1, padding=pad)
        keep = (hmax == heat).float()
        return heat * keep

    def _topk(scores, K=40):
        batch, cat, height, width = scores.size()
        topk_scores, topk_inds = torch.topk(scores.view(batch, cat, -1), K)
        topk_inds = topk_inds % (height * width)
        topk_ys = (topk_inds / width).int().float()
        topk_xs = (topk_inds % width).int().float()
        topk_score, topk_ind = torch.topk(topk_scores.view(batch, -1), K)
        topk_clses = (topk_ind / K).int()
        topk_inds = _gather_feat(topk_inds.view(batch, -1, 1), topk_ind).view(batch, K)
        topk_ys = _gather_feat(topk_ys.view(batch, -1, 1), topk_ind).view(batch, K)
        topk_xs = _gather_feat(topk_xs.view(batch, -1, 1), topk_ind).view(batch, K)
        return topk_score, topk_inds, topk_clses, topk_ys, topk_xs

    def ctdet_decode(heat, wh, reg=None, K=4):
        batch, cat, height, width = heat.size()
        heat = _nms(heat)
        scores, inds, clses, ys, xs = _topk(heat, K=K)
        reg = _transpose_and_gather_feat(reg, inds)
        reg = reg.view(batch, K, 2)
        xs = xs.view(batch, K, 1) + reg[:, :, 0:1]
        ys = ys.view(batch, K, 1) + reg[:, :, 1:2]
        wh = _transpose_and_gather_feat(wh, inds)
        wh = wh.view(batch, K, 2)
        clses = clses.view(batch, K, 1).float()
        scores = scores.view(batch, K, 1)
        bboxes = torch.cat([xs - wh[..., 0:1] / 2, ys - wh[..., 1:2] / 2,
                            xs + wh[..., 0:1] / 2, ys + wh[..., 1:2] / 2], dim=2)
        detections = torch.cat([bboxes, scores, clses], dim=2)
        return detections

    def make_batch(n):
        hm = np.zeros((n, num_classes, H, W), dtype=np.float32)
        wh = np.zeros((n, max_objs, 2), dtype=np.float32)
        reg = np.zeros((n, max_objs, 2), dtype=np.float32)
        ind = np.zeros((n, max_objs), dtype=np.int64)
        reg_mask = np.zeros((n, max_objs), dtype=np.uint8)
        for b in range(n):
            for k in range(rng.integers(1, max_objs + 1)):
                ct = rng.uniform(0.5, 7.5, 2).astype(np.float32)
                ct_int = ct.astype(np.int32)
                draw_umich_gaussian(hm[b, rng.integers(0, num_classes)], ct_int, 1)
                wh[b, k] = rng.uniform(1, 4, 2)
                ind[b, k] = ct_int[1] * W + ct_int[0]
                reg[b, k] = ct - ct_int
                reg_mask[b, k] = 1
        return {'input': torch.from_numpy(normal(rng, n, 3, H, W)), 'hm': torch.from_numpy(hm),
                'reg_mask': torch.from_numpy(reg_mask), 'ind': torch.from_numpy(ind),
                'wh': torch.from_numpy(wh), 'reg': torch.from_numpy(reg)}

    model = TinyCenterNet({'hm': num_classes, 'wh': 2, 'reg': 2}, head_conv=4)
    init = load(m, model, state)
    crit, crit_reg = FocalLoss(), RegL1Loss()
    hm_weight, wh_weight, off_weight = 1, 0.1, 1
    optimizer = torch.optim.Adam(model.parameters(), lr=1.25e-3)
    losses = []
    model.train()
    for _ in range(2):
        batch = make_batch(2)
        outputs = model(batch['input'])
        output = outputs[-1]
        output['hm'] = _sigmoid(output['hm'])
        hm_loss = crit(output['hm'], batch['hm'])
        wh_loss = crit_reg(output['wh'], batch['reg_mask'], batch['ind'], batch['wh'])
        off_loss = crit_reg(output['reg'], batch['reg_mask'], batch['ind'], batch['reg'])
        loss = hm_weight * hm_loss + wh_weight * wh_loss + off_weight * off_loss
        loss_stats = {'loss': loss, 'hm_loss': hm_loss, 'wh_loss': wh_loss, 'off_loss': off_loss}
        loss = loss.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [v.mean().item() for v in loss_stats.values()]
    assert float(_neg_loss(torch.full((1, 1, 2, 2), 0.5), torch.zeros(1, 1, 2, 2))) > 0  # the num_pos == 0 branch
    model.eval()
    with torch.no_grad():
        output = model(make_batch(1)['input'])[-1]
        hm = output['hm'].sigmoid_()
        dets = ctdet_decode(hm, output['wh'], reg=output['reg'], K=4)
    return init, losses + dets.flatten().tolist() + summary(model.parameters())


def test_centernet():
    compare(centernet)


# (e) pmixer/SASRec.pytorch (model.py, main.py): item embeddings scaled in place by embedding_dim ** 0.5, positions by
# np.tile, torch.LongTensor and torch.BoolTensor of numpy arrays, `seqs *= ~timeline_mask.unsqueeze(-1)`, the causal
# attention_mask as ~torch.tril of a bool ones, sequence-first nn.MultiheadAttention between transposes, LayerNorms at
# eps=1e-8, PointWiseFeedForward by Conv1d(kernel_size=1) over transpose(-1, -2) with `outputs += inputs`; every
# parameter xavier_normal_'d inside a bare try/except (1-d ones raise ValueError and keep their init), the padding rows
# zeroed through .data; BCEWithLogitsLoss on logits indexed by np.where(pos != 0), an L2 term by torch.norm; and the
# evaluation's rank by argsort().argsort() under eval() and no_grad. The key third of in_proj_bias is left out of the
# summary: softmax ignores it, so its gradient is rounding alone, which Adam normalises into a full step
def sasrec(m, state=None):
    torch = m.torch
    torch.manual_seed(4)
    rng = np.random.default_rng(4)

    class PointWiseFeedForward(torch.nn.Module):
        def __init__(self, hidden_units, dropout_rate):
            super(PointWiseFeedForward, self).__init__()
            self.conv1 = torch.nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
            self.dropout1 = torch.nn.Dropout(p=dropout_rate)
            self.relu = torch.nn.ReLU()
            self.conv2 = torch.nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
            self.dropout2 = torch.nn.Dropout(p=dropout_rate)

        def forward(self, inputs):
            outputs = self.dropout2(self.conv2(self.relu(self.dropout1(self.conv1(inputs.transpose(-1, -2))))))
            outputs = outputs.transpose(-1, -2)  # as Conv1D requires (N, C, Length)
            outputs += inputs
            return outputs

    class SASRec(torch.nn.Module):
        def __init__(self, user_num, item_num, args):
            super(SASRec, self).__init__()
            self.user_num = user_num
            self.item_num = item_num
            self.dev = args.device
            self.item_emb = torch.nn.Embedding(self.item_num + 1, args.hidden_units, padding_idx=0)
            self.pos_emb = torch.nn.Embedding(args.maxlen, args.hidden_units)  # TO IMPROVE
            self.emb_dropout = torch.nn.Dropout(p=args.dropout_rate)
            self.attention_layernorms = torch.nn.ModuleList()  # to be Q for self-attention
            self.attention_layers = torch.nn.ModuleList()
            self.forward_layernorms = torch.nn.ModuleList()
            self.forward_layers = torch.nn.ModuleList()
            self.last_layernorm = torch.nn.LayerNorm(args.hidden_units, eps=1e-8)
            for _ in range(args.num_blocks):
                new_attn_layernorm = torch.nn.LayerNorm(args.hidden_units, eps=1e-8)
                self.attention_layernorms.append(new_attn_layernorm)
                new_attn_layer = torch.nn.MultiheadAttention(args.hidden_units, args.num_heads, args.dropout_rate)
                self.attention_layers.append(new_attn_layer)
                new_fwd_layernorm = torch.nn.LayerNorm(args.hidden_units, eps=1e-8)
                self.forward_layernorms.append(new_fwd_layernorm)
                new_fwd_layer = PointWiseFeedForward(args.hidden_units, args.dropout_rate)
                self.forward_layers.append(new_fwd_layer)

        def log2feats(self, log_seqs):
            seqs = self.item_emb(torch.LongTensor(log_seqs).to(self.dev))
            seqs *= self.item_emb.embedding_dim ** 0.5
            positions = np.tile(np.array(range(log_seqs.shape[1])), [log_seqs.shape[0], 1])
            seqs += self.pos_emb(torch.LongTensor(positions).to(self.dev))
            seqs = self.emb_dropout(seqs)
            timeline_mask = torch.BoolTensor(log_seqs == 0).to(self.dev)
            seqs *= ~timeline_mask.unsqueeze(-1)  # broadcast in last dim
            tl = seqs.shape[1]  # time dim len for enforce causality
            attention_mask = ~torch.tril(torch.ones((tl, tl), dtype=torch.bool, device=self.dev))
            for i in range(len(self.attention_layers)):
                seqs = torch.transpose(seqs, 0, 1)
                Q = self.attention_layernorms[i](seqs)
                mha_outputs, _ = self.attention_layers[i](Q, seqs, seqs, attn_mask=attention_mask)
                seqs = Q + mha_outputs
                seqs = torch.transpose(seqs, 0, 1)
                seqs = self.forward_layernorms[i](seqs)
                seqs = self.forward_layers[i](seqs)
                seqs *= ~timeline_mask.unsqueeze(-1)
            log_feats = self.last_layernorm(seqs)  # (U, T, C) -> (U, -1, C)
            return log_feats

        def forward(self, user_ids, log_seqs, pos_seqs, neg_seqs):  # for training
            log_feats = self.log2feats(log_seqs)  # user_ids hasn't been used yet
            pos_embs = self.item_emb(torch.LongTensor(pos_seqs).to(self.dev))
            neg_embs = self.item_emb(torch.LongTensor(neg_seqs).to(self.dev))
            pos_logits = (log_feats * pos_embs).sum(dim=-1)
            neg_logits = (log_feats * neg_embs).sum(dim=-1)
            return pos_logits, neg_logits  # pos_pred, neg_pred

        def predict(self, user_ids, log_seqs, item_indices):  # for inference
            log_feats = self.log2feats(log_seqs)  # user_ids hasn't been used yet
            final_feat = log_feats[:, -1, :]  # only use last QKV classifier, a waste
            item_embs = self.item_emb(torch.LongTensor(item_indices).to(self.dev))  # (U, I, C)
            logits = item_embs.matmul(final_feat.unsqueeze(-1)).squeeze(-1)
            return logits  # preds # (U, I)

    class Args:
        device, hidden_units, maxlen, num_blocks, num_heads, dropout_rate = "cpu", 4, 5, 2, 1, 0.0
        lr, l2_emb = 0.001, 0.0001

    args, usernum, itemnum = Args(), 4, 9
    model = SASRec(usernum, itemnum, args).to(args.device)
    for name, param in model.named_parameters():
        try:
            torch.nn.init.xavier_normal_(param.data)
        except Exception:
            pass  # just ignore those failed init layers
    model.pos_emb.weight.data[0, :] = 0
    model.item_emb.weight.data[0, :] = 0
    init = load(m, model, state)
    model.train()  # enable model training
    bce_criterion = torch.nn.BCEWithLogitsLoss()  # torch.nn.BCELoss()
    adam_optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98))
    losses = []
    for step in range(2):
        seq = rng.integers(1, itemnum + 1, (3, args.maxlen))
        seq[:, :rng.integers(0, 3)] = 0
        seq[1, :2] = 0
        pos = np.where(seq != 0, rng.integers(1, itemnum + 1, seq.shape), 0)
        neg = rng.integers(1, itemnum + 1, seq.shape)
        u = np.arange(3)
        u, seq, pos, neg = np.array(u), np.array(seq), np.array(pos), np.array(neg)
        pos_logits, neg_logits = model(u, seq, pos, neg)
        pos_labels, neg_labels = torch.ones(pos_logits.shape, device=args.device), torch.zeros(neg_logits.shape,
                                                                                                 device=args.device)
        adam_optimizer.zero_grad()
        indices = np.where(pos != 0)
        loss = bce_criterion(pos_logits[indices], pos_labels[indices])
        loss += bce_criterion(neg_logits[indices], neg_labels[indices])
        for param in model.item_emb.parameters():
            loss += args.l2_emb * torch.norm(param)
        loss.backward()
        adam_optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        seq = rng.integers(1, itemnum + 1, args.maxlen)
        item_idx = [3] + list(rng.integers(1, itemnum + 1, 4))
        predictions = -model.predict(*[np.array(l) for l in [[0], [seq], item_idx]])
        predictions = predictions[0]  # - for 1st argsort DESC
        rank = predictions.argsort().argsort()[0].item()
    d = args.hidden_units
    kept = [p for name, p in model.named_parameters() if not name.endswith('in_proj_bias')]
    thirds = [layer.in_proj_bias[i * d:(i + 1) * d] for layer in model.attention_layers for i in (0, 2)]
    return init, losses + predictions.tolist() + [rank] + summary(kept) + summary(thirds)


def test_sasrec():
    compare(sasrec)


# (f) atulkum/pointer_summarizer (training_ptr_gen/model.py, train.py, data_util/utils' get_input_from_batch): a packed
# bidirectional LSTM encoder whose forget-gate biases init_lstm_wt fills through lstm._all_weights, ReduceState of
# (h, c) by transpose().contiguous().view, Bahdanau attention with coverage (W_c of coverage.view(-1, 1)), a padding
# mask renormalising F.softmax, the decoder's embedding tied to the encoder's, p_gen by F.sigmoid, the copy
# distribution by vocab_dist_.scatter_add(1, enc_batch_extend_vocab, attn_dist_) after torch.cat with extra_zeros for
# in-article OOVs, gold probabilities by torch.gather, the coverage loss torch.sum(torch.min(attn_dist, coverage), 1),
# step losses stacked and averaged by decoder lengths, clip_grad_norm_ per module, Adagrad with
# initial_accumulator_value. The source lists the shared embedding twice among Adagrad's parameters (torch warns and
# steps it twice; tnet refuses a parameter listed twice, README): here it is listed once
def pointer_generator(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    pack_padded_sequence, pad_packed_sequence = nn.utils.rnn.pack_padded_sequence, nn.utils.rnn.pad_packed_sequence
    clip_grad_norm_ = nn.utils.clip_grad_norm_
    Variable = torch.autograd.Variable
    torch.manual_seed(5)
    rng = np.random.default_rng(5)

    class config:
        emb_dim, hidden_dim, vocab_size, max_dec_steps = 4, 3, 8, 2
        rand_unif_init_mag, trunc_norm_init_std = 0.02, 1e-4
        pointer_gen, is_coverage, cov_loss_wt, eps = True, True, 1.0, 1e-12
        lr, lr_coverage, adagrad_init_acc, max_grad_norm = 0.15, 0.15, 0.1, 2.0

    def init_lstm_wt(lstm):
        for names in lstm._all_weights:
            for name in names:
                if name.startswith('weight_'):
                    wt = getattr(lstm, name)
                    wt.data.uniform_(-config.rand_unif_init_mag, config.rand_unif_init_mag)
                elif name.startswith('bias_'):
                    # set forget bias to 1
                    bias = getattr(lstm, name)
                    n = bias.size(0)
                    start, end = n // 4, n // 2
                    bias.data.fill_(0.)
                    bias.data[start:end].fill_(1.)

    def init_linear_wt(linear):
        linear.weight.data.normal_(std=config.trunc_norm_init_std)
        if linear.bias is not None:
            linear.bias.data.normal_(std=config.trunc_norm_init_std)

    def init_wt_normal(wt):
        wt.data.normal_(std=config.trunc_norm_init_std)

    class Encoder(nn.Module):
        def __init__(self):
            super(Encoder, self).__init__()
            self.embedding = nn.Embedding(config.vocab_size, config.emb_dim)
            init_wt_normal(self.embedding.weight)
            self.lstm = nn.LSTM(config.emb_dim, config.hidden_dim, num_layers=1, batch_first=True, bidirectional=True)
            init_lstm_wt(self.lstm)
            self.W_h = nn.Linear(config.hidden_dim * 2, config.hidden_dim * 2, bias=False)

        # seq_lens should be in descending order
        def forward(self, input, seq_lens):
            embedded = self.embedding(input)
            packed = pack_padded_sequence(embedded, seq_lens, batch_first=True)
            output, hidden = self.lstm(packed)
            encoder_outputs, _ = pad_packed_sequence(output, batch_first=True)  # h dim = B x t_k x n
            encoder_outputs = encoder_outputs.contiguous()
            encoder_feature = encoder_outputs.view(-1, 2 * config.hidden_dim)  # B * t_k x 2*hidden_dim
            encoder_feature = self.W_h(encoder_feature)
            return encoder_outputs, encoder_feature, hidden

    class ReduceState(nn.Module):
        def __init__(self):
            super(ReduceState, self).__init__()
            self.reduce_h = nn.Linear(config.hidden_dim * 2, config.hidden_dim)
            init_linear_wt(self.reduce_h)
            self.reduce_c = nn.Linear(config.hidden_dim * 2, config.hidden_dim)
            init_linear_wt(self.reduce_c)

        def forward(self, hidden):
            h, c = hidden  # h, c dim = 2 x b x hidden_dim
            h_in = h.transpose(0, 1).contiguous().view(-1, config.hidden_dim * 2)
            hidden_reduced_h = F.relu(self.reduce_h(h_in))
            c_in = c.transpose(0, 1).contiguous().view(-1, config.hidden_dim * 2)
            hidden_reduced_c = F.relu(self.reduce_c(c_in))
            return (hidden_reduced_h.unsqueeze(0), hidden_reduced_c.unsqueeze(0))  # h, c dim = 1 x b x hidden_dim

    class Attention(nn.Module):
        def __init__(self):
            super(Attention, self).__init__()
            # attention
            if config.is_coverage:
                self.W_c = nn.Linear(1, config.hidden_dim * 2, bias=False)
            self.decode_proj = nn.Linear(config.hidden_dim * 2, config.hidden_dim * 2)
            self.v = nn.Linear(config.hidden_dim * 2, 1, bias=False)

        def forward(self, s_t_hat, encoder_outputs, encoder_feature, enc_padding_mask, coverage):
            b, t_k, n = list(encoder_outputs.size())
            dec_fea = self.decode_proj(s_t_hat)  # B x 2*hidden_dim
            dec_fea_expanded = dec_fea.unsqueeze(1).expand(b, t_k, n).contiguous()  # B x t_k x 2*hidden_dim
            dec_fea_expanded = dec_fea_expanded.view(-1, n)  # B * t_k x 2*hidden_dim
            att_features = encoder_feature + dec_fea_expanded  # B * t_k x 2*hidden_dim
            if config.is_coverage:
                coverage_input = coverage.view(-1, 1)  # B * t_k x 1
                coverage_feature = self.W_c(coverage_input)  # B * t_k x 2*hidden_dim
                att_features = att_features + coverage_feature
            e = F.tanh(att_features)  # B * t_k x 2*hidden_dim
            scores = self.v(e)  # B * t_k x 1
            scores = scores.view(-1, t_k)  # B x t_k
            attn_dist_ = F.softmax(scores, dim=1) * enc_padding_mask  # B x t_k
            normalization_factor = attn_dist_.sum(1, keepdim=True)
            attn_dist = attn_dist_ / normalization_factor
            attn_dist = attn_dist.unsqueeze(1)  # B x 1 x t_k
            c_t = torch.bmm(attn_dist, encoder_outputs)  # B x 1 x n
            c_t = c_t.view(-1, config.hidden_dim * 2)  # B x 2*hidden_dim
            attn_dist = attn_dist.view(-1, t_k)  # B x t_k
            if config.is_coverage:
                coverage = coverage.view(-1, t_k)
                coverage = coverage + attn_dist
            return c_t, attn_dist, coverage

    class Decoder(nn.Module):
        def __init__(self):
            super(Decoder, self).__init__()
            self.attention_network = Attention()
            # decoder
            self.embedding = nn.Embedding(config.vocab_size, config.emb_dim)
            init_wt_normal(self.embedding.weight)
            self.x_context = nn.Linear(config.hidden_dim * 2 + config.emb_dim, config.emb_dim)
            self.lstm = nn.LSTM(config.emb_dim, config.hidden_dim, num_layers=1, batch_first=True, bidirectional=False)
            init_lstm_wt(self.lstm)
            if config.pointer_gen:
                self.p_gen_linear = nn.Linear(config.hidden_dim * 4 + config.emb_dim, 1)
            # p_vocab
            self.out1 = nn.Linear(config.hidden_dim * 3, config.hidden_dim)
            self.out2 = nn.Linear(config.hidden_dim, config.vocab_size)
            init_linear_wt(self.out2)

        def forward(self, y_t_1, s_t_1, encoder_outputs, encoder_feature, enc_padding_mask,
                    c_t_1, extra_zeros, enc_batch_extend_vocab, coverage, step):
            y_t_1_embd = self.embedding(y_t_1)
            x = self.x_context(torch.cat((c_t_1, y_t_1_embd), 1))
            lstm_out, s_t = self.lstm(x.unsqueeze(1), s_t_1)
            h_decoder, c_decoder = s_t
            s_t_hat = torch.cat((h_decoder.view(-1, config.hidden_dim),
                                 c_decoder.view(-1, config.hidden_dim)), 1)  # B x 2*hidden_dim
            c_t, attn_dist, coverage_next = self.attention_network(s_t_hat, encoder_outputs, encoder_feature,
                                                                   enc_padding_mask, coverage)
            if self.training or step > 0:
                coverage = coverage_next
            p_gen = None
            if config.pointer_gen:
                p_gen_input = torch.cat((c_t, s_t_hat, x), 1)  # B x (2*2*hidden_dim + emb_dim)
                p_gen = self.p_gen_linear(p_gen_input)
                p_gen = F.sigmoid(p_gen)
            output = torch.cat((lstm_out.view(-1, config.hidden_dim), c_t), 1)  # B x hidden_dim * 3
            output = self.out1(output)  # B x hidden_dim
            output = self.out2(output)  # B x vocab_size
            vocab_dist = F.softmax(output, dim=1)
            if config.pointer_gen:
                vocab_dist_ = p_gen * vocab_dist
                attn_dist_ = (1 - p_gen) * attn_dist
                if extra_zeros is not None:
                    vocab_dist_ = torch.cat([vocab_dist_, extra_zeros], 1)
                final_dist = vocab_dist_.scatter_add(1, enc_batch_extend_vocab, attn_dist_)
            else:
                final_dist = vocab_dist
            return final_dist, s_t, c_t, attn_dist, p_gen, coverage

    class Model(object):
        def __init__(self):
            encoder = Encoder()
            decoder = Decoder()
            reduce_state = ReduceState()
            # shared the embedding between encoder and decoder
            decoder.embedding.weight = encoder.embedding.weight
            self.encoder = encoder
            self.decoder = decoder
            self.reduce_state = reduce_state

    class Batch:  # an article of 4 words (one outside the vocabulary: id 1, UNK) and a summary of 3
        def __init__(self):
            self.batch_size, self.max_art_oovs = 2, 1
            self.enc_lens = np.array([4, 3])
            self.enc_batch = rng.integers(2, config.vocab_size, (2, 4))
            self.enc_batch[1, 3] = 0  # PAD
            self.enc_batch_extend_vocab = self.enc_batch.copy()
            self.enc_batch[0, 2] = 1
            self.enc_batch_extend_vocab[0, 2] = config.vocab_size  # the article's first OOV
            self.enc_padding_mask = (np.arange(4)[None] < self.enc_lens[:, None]).astype(np.float32)
            self.dec_batch = np.concatenate([np.full((2, 1), 1), rng.integers(2, config.vocab_size, (2, 2))], 1)
            self.target_batch = np.concatenate([self.dec_batch[:, 1:], np.full((2, 1), 0)], 1)
            self.target_batch[0, 1] = config.vocab_size  # copied from the article
            self.dec_lens = np.array([3, 2])
            self.dec_padding_mask = (np.arange(3)[None] < self.dec_lens[:, None]).astype(np.float32)

    def get_input_from_batch(batch):
        batch_size = len(batch.enc_lens)
        enc_batch = Variable(torch.from_numpy(batch.enc_batch).long())
        enc_padding_mask = Variable(torch.from_numpy(batch.enc_padding_mask)).float()
        enc_lens = batch.enc_lens
        extra_zeros = None
        enc_batch_extend_vocab = None
        if config.pointer_gen:
            enc_batch_extend_vocab = Variable(torch.from_numpy(batch.enc_batch_extend_vocab).long())
            # max_art_oovs is the max over all the article oov list in the batch
            if batch.max_art_oovs > 0:
                extra_zeros = Variable(torch.zeros((batch_size, batch.max_art_oovs)))
        c_t_1 = Variable(torch.zeros((batch_size, 2 * config.hidden_dim)))
        coverage = None
        if config.is_coverage:
            coverage = Variable(torch.zeros(enc_batch.size()))
        return enc_batch, enc_padding_mask, enc_lens, enc_batch_extend_vocab, extra_zeros, c_t_1, coverage

    def get_output_from_batch(batch):
        dec_batch = Variable(torch.from_numpy(batch.dec_batch).long())
        dec_padding_mask = Variable(torch.from_numpy(batch.dec_padding_mask)).float()
        dec_lens = batch.dec_lens
        max_dec_len = np.max(dec_lens)
        dec_lens_var = Variable(torch.from_numpy(dec_lens)).float()
        target_batch = Variable(torch.from_numpy(batch.target_batch)).long()
        return dec_batch, dec_padding_mask, max_dec_len, dec_lens_var, target_batch

    model = Model()
    init = load(m, nn.ModuleList([model.encoder, model.decoder, model.reduce_state]), state)
    params = list(model.encoder.parameters()) + list(model.decoder.parameters()) + \
        list(model.reduce_state.parameters())
    params = [p for i, p in enumerate(params) if all(p is not q for q in params[:i])]
    initial_lr = config.lr_coverage if config.is_coverage else config.lr
    optimizer = torch.optim.Adagrad(params, lr=initial_lr, initial_accumulator_value=config.adagrad_init_acc)

    def train_one_batch(batch):
        enc_batch, enc_padding_mask, enc_lens, enc_batch_extend_vocab, extra_zeros, c_t_1, coverage = \
            get_input_from_batch(batch)
        dec_batch, dec_padding_mask, max_dec_len, dec_lens_var, target_batch = get_output_from_batch(batch)
        optimizer.zero_grad()
        encoder_outputs, encoder_feature, encoder_hidden = model.encoder(enc_batch, enc_lens)
        s_t_1 = model.reduce_state(encoder_hidden)
        step_losses = []
        for di in range(min(max_dec_len, config.max_dec_steps)):
            y_t_1 = dec_batch[:, di]  # Teacher forcing
            final_dist, s_t_1, c_t_1, attn_dist, p_gen, next_coverage = model.decoder(
                y_t_1, s_t_1, encoder_outputs, encoder_feature, enc_padding_mask, c_t_1, extra_zeros,
                enc_batch_extend_vocab, coverage, di)
            target = target_batch[:, di]
            gold_probs = torch.gather(final_dist, 1, target.unsqueeze(1)).squeeze()
            step_loss = -torch.log(gold_probs + config.eps)
            if config.is_coverage:
                step_coverage_loss = torch.sum(torch.min(attn_dist, coverage), 1)
                step_loss = step_loss + config.cov_loss_wt * step_coverage_loss
                coverage = next_coverage
            step_mask = dec_padding_mask[:, di]
            step_loss = step_loss * step_mask
            step_losses.append(step_loss)
        sum_losses = torch.sum(torch.stack(step_losses, 1), 1)
        batch_avg_loss = sum_losses / dec_lens_var
        loss = torch.mean(batch_avg_loss)
        loss.backward()
        norm = clip_grad_norm_(model.encoder.parameters(), config.max_grad_norm)
        clip_grad_norm_(model.decoder.parameters(), config.max_grad_norm)
        clip_grad_norm_(model.reduce_state.parameters(), config.max_grad_norm)
        optimizer.step()
        return loss.item(), norm.item()

    losses = list(train_one_batch(Batch()))
    assert model.decoder.embedding.weight is model.encoder.embedding.weight
    return init, losses + summary(params)


def test_pointer_generator():
    compare(pointer_generator)


# (g) PetarV-/DGI (models/dgi.py, layers/gcn.py, readout.py, discriminator.py, execute.py): a dense GCN layer with a
# bias made by torch.FloatTensor(out_ft) and fill_, PReLU, xavier_uniform_ of weight.data through self.modules();
# AvgReadout; a Bilinear discriminator of the summary expand_as'd over the nodes against real and row-shuffled
# features (features[:, idx, :] by a numpy permutation); BCEWithLogitsLoss against torch.cat of ones and zeros;
# early stopping by `loss < best` on a 0-d tensor with the best state_dict through torch.save and torch.load; then
# detached embeddings and logistic regressions trained on them, accuracy by torch.sum(preds == test_lbls).float(),
# accs stacked, mean and std, `tot += acc` into torch.zeros(1). The features row-normalised and the adjacency
# symmetric-normalised in numpy, as process.py does by scipy
def dgi(m, state=None, tmp_path=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(6)
    rng = np.random.default_rng(6)

    class GCN(nn.Module):
        def __init__(self, in_ft, out_ft, act, bias=True):
            super(GCN, self).__init__()
            self.fc = nn.Linear(in_ft, out_ft, bias=False)
            self.act = nn.PReLU() if act == 'prelu' else act
            if bias:
                self.bias = nn.Parameter(torch.FloatTensor(out_ft))
                self.bias.data.fill_(0.0)
            else:
                self.register_parameter('bias', None)
            for m in self.modules():
                self.weights_init(m)

        def weights_init(self, m):
            if isinstance(m, nn.Linear):
                torch.nn.init.xavier_uniform_(m.weight.data)
                if m.bias is not None:
                    m.bias.data.fill_(0.0)

        # Shape of seq: (batch, nodes, features)
        def forward(self, seq, adj, sparse=False):
            seq_fts = self.fc(seq)
            if sparse:
                out = torch.unsqueeze(torch.spmm(adj, torch.squeeze(seq_fts, 0)), 0)
            else:
                out = torch.bmm(adj, seq_fts)
            if self.bias is not None:
                out += self.bias
            return self.act(out)

    class AvgReadout(nn.Module):
        def __init__(self):
            super(AvgReadout, self).__init__()

        def forward(self, seq, msk):
            if msk is None:
                return torch.mean(seq, 1)
            else:
                msk = torch.unsqueeze(msk, -1)
                return torch.sum(seq * msk, 1) / torch.sum(msk)

    class Discriminator(nn.Module):
        def __init__(self, n_h):
            super(Discriminator, self).__init__()
            self.f_k = nn.Bilinear(n_h, n_h, 1)
            for m in self.modules():
                self.weights_init(m)

        def weights_init(self, m):
            if isinstance(m, nn.Bilinear):
                torch.nn.init.xavier_uniform_(m.weight.data)
                if m.bias is not None:
                    m.bias.data.fill_(0.0)

        def forward(self, c, h_pl, h_mi, s_bias1=None, s_bias2=None):
            c_x = torch.unsqueeze(c, 1)
            c_x = c_x.expand_as(h_pl)
            sc_1 = torch.squeeze(self.f_k(h_pl, c_x), 2)
            sc_2 = torch.squeeze(self.f_k(h_mi, c_x), 2)
            if s_bias1 is not None:
                sc_1 += s_bias1
            if s_bias2 is not None:
                sc_2 += s_bias2
            logits = torch.cat((sc_1, sc_2), 1)
            return logits

    class DGI(nn.Module):
        def __init__(self, n_in, n_h, activation):
            super(DGI, self).__init__()
            self.gcn = GCN(n_in, n_h, activation)
            self.read = AvgReadout()
            self.sigm = nn.Sigmoid()
            self.disc = Discriminator(n_h)

        def forward(self, seq1, seq2, adj, sparse, msk, samp_bias1, samp_bias2):
            h_1 = self.gcn(seq1, adj, sparse)
            c = self.read(h_1, msk)
            c = self.sigm(c)
            h_2 = self.gcn(seq2, adj, sparse)
            ret = self.disc(c, h_1, h_2, samp_bias1, samp_bias2)
            return ret

        # Detach the return variables
        def embed(self, seq, adj, sparse, msk):
            h_1 = self.gcn(seq, adj, sparse)
            c = self.read(h_1, msk)
            return h_1.detach(), c.detach()

    class LogReg(nn.Module):
        def __init__(self, ft_in, nb_classes):
            super(LogReg, self).__init__()
            self.fc = nn.Linear(ft_in, nb_classes)
            for m in self.modules():
                self.weights_init(m)

        def weights_init(self, m):
            if isinstance(m, nn.Linear):
                torch.nn.init.xavier_uniform_(m.weight.data)
                if m.bias is not None:
                    m.bias.data.fill_(0.0)

        def forward(self, seq):
            ret = self.fc(seq)
            return ret

    def preprocess_features(features):
        rowsum = np.array(features.sum(1))
        r_inv = np.power(rowsum, -1).flatten()
        r_inv[np.isinf(r_inv)] = 0.
        return features * r_inv[:, None]

    def normalize_adj(adj):
        rowsum = np.array(adj.sum(1))
        d_inv_sqrt = np.power(rowsum, -0.5).flatten()
        d_inv_sqrt[np.isinf(d_inv_sqrt)] = 0.
        return adj * d_inv_sqrt[:, None] * d_inv_sqrt[None, :]

    nb_nodes, ft_size, hid_units, nb_classes, batch_size, sparse, nonlinearity = 7, 5, 4, 3, 1, False, 'prelu'
    nb_epochs, patience, lr, l2_coef = 3, 20, 0.01, 0.0
    a = np.triu((rng.random((nb_nodes, nb_nodes)) < 0.4).astype(np.float64), 1)
    adj = normalize_adj(a + a.T + np.eye(nb_nodes))
    features = preprocess_features((rng.random((nb_nodes, ft_size)) < 0.5).astype(np.float64) + 0.1)
    labels = np.eye(nb_classes)[rng.integers(0, nb_classes, nb_nodes)]
    idx_train, idx_test = range(4), range(4, 7)
    features = torch.FloatTensor(features[np.newaxis])
    adj = torch.FloatTensor(adj[np.newaxis])
    labels = torch.FloatTensor(labels[np.newaxis])
    idx_train = torch.LongTensor(idx_train)
    idx_test = torch.LongTensor(idx_test)

    model = DGI(ft_size, hid_units, nonlinearity)
    init = {'dgi': load(m, model, state and state['dgi'])}
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=l2_coef)
    b_xent = nn.BCEWithLogitsLoss()
    xent = nn.CrossEntropyLoss()
    cnt_wait, best, best_t = 0, 1e9, 0
    losses = []
    for epoch in range(nb_epochs):
        model.train()
        optimiser.zero_grad()
        idx = rng.permutation(nb_nodes)
        shuf_fts = features[:, idx, :]
        lbl_1 = torch.ones(batch_size, nb_nodes)
        lbl_2 = torch.zeros(batch_size, nb_nodes)
        lbl = torch.cat((lbl_1, lbl_2), 1)
        logits = model(features, shuf_fts, adj, sparse, None, None, None)
        loss = b_xent(logits, lbl)
        losses.append(loss.item())
        if loss < best:
            best = loss
            best_t = epoch
            cnt_wait = 0
            torch.save(model.state_dict(), str(tmp_path / 'best_dgi.pkl'))
        else:
            cnt_wait += 1
        if cnt_wait == patience:
            break
        loss.backward()
        optimiser.step()
    model.load_state_dict(torch.load(str(tmp_path / 'best_dgi.pkl')))
    embeds, _ = model.embed(features, adj, sparse, None)
    train_embs = embeds[0, idx_train]
    test_embs = embeds[0, idx_test]
    train_lbls = torch.argmax(labels[0, idx_train], dim=1)
    test_lbls = torch.argmax(labels[0, idx_test], dim=1)
    tot = torch.zeros(1)
    accs = []
    for i in range(2):
        log = LogReg(hid_units, nb_classes)
        init[f'log{i}'] = load(m, log, state and state[f'log{i}'])
        opt = torch.optim.Adam(log.parameters(), lr=0.01, weight_decay=0.0)
        for _ in range(3):
            log.train()
            opt.zero_grad()
            logits = log(train_embs)
            loss = xent(logits, train_lbls)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        logits = log(test_embs)
        preds = torch.argmax(logits, dim=1)
        acc = torch.sum(preds == test_lbls).float() / test_lbls.shape[0]
        accs.append(acc * 100)
        tot += acc
    accs = torch.stack(accs)
    return init, losses + [best.item(), best_t, accs.mean().item(), accs.std().item(), tot.item()] + \
        summary(model.parameters())


def test_dgi(tmp_path):
    compare(dgi, tmp_path=tmp_path)


# (h) Nanne/pytorch-NetVlad (netvlad.py, main.py): an encoder ending in an L2Norm module, its early layers frozen by
# requires_grad = False; centroids from descriptors sampled under no_grad (faiss' k-means here one Lloyd step in numpy);
# init_params' alpha from sorted dot products, self.centroids and self.conv.weight replaced by new nn.Parameters of
# torch.from_numpy arrays, conv.bias set to None; the forward's soft assignment by a 1x1 conv and softmax, the residuals
# to each cluster in a Python loop (unsqueeze(0).permute, expand of a centroid row, `residual *=`, written into
# torch.zeros([N, K, C], dtype=x.dtype, layout=x.layout, device=x.device) by slice assignment), intra- and global
# F.normalize; the model as a bare nn.Module() with add_module; torch.split by [B, B, nNeg], a sum of
# TripletMarginLoss(reduction='sum') over each query's negatives indexed by (torch.sum(negCounts[:i]) + n).item(), `loss
# /= nNeg.float()`, SGD over filter(lambda p: p.requires_grad, ...)
def netvlad(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(7)
    rng = np.random.default_rng(7)

    class NetVLAD(nn.Module):
        """NetVLAD layer implementation"""

        def __init__(self, num_clusters=64, dim=128, normalize_input=True, vladv2=False):
            super(NetVLAD, self).__init__()
            self.num_clusters = num_clusters
            self.dim = dim
            self.alpha = 0
            self.vladv2 = vladv2
            self.normalize_input = normalize_input
            self.conv = nn.Conv2d(dim, num_clusters, kernel_size=(1, 1), bias=vladv2)
            self.centroids = nn.Parameter(torch.rand(num_clusters, dim))

        def init_params(self, clsts, traindescs):
            if not self.vladv2:
                clstsAssign = clsts / np.linalg.norm(clsts, axis=1, keepdims=True)
                dots = np.dot(clstsAssign, traindescs.T)
                dots.sort(0)
                dots = dots[::-1, :]  # sort, descending
                self.alpha = (-np.log(0.01) / np.mean(dots[0, :] - dots[1, :])).item()
                self.centroids = nn.Parameter(torch.from_numpy(clsts))
                self.conv.weight = nn.Parameter(torch.from_numpy(self.alpha * clstsAssign).unsqueeze(2).unsqueeze(3))
                self.conv.bias = None

        def forward(self, x):
            N, C = x.shape[:2]
            if self.normalize_input:
                x = F.normalize(x, p=2, dim=1)  # across descriptor dim
            # soft-assignment
            soft_assign = self.conv(x).view(N, self.num_clusters, -1)
            soft_assign = F.softmax(soft_assign, dim=1)
            x_flatten = x.view(N, C, -1)
            # calculate residuals to each clusters
            vlad = torch.zeros([N, self.num_clusters, C], dtype=x.dtype, layout=x.layout, device=x.device)
            for C in range(self.num_clusters):  # slower than non-looped, but lower memory usage
                residual = x_flatten.unsqueeze(0).permute(1, 0, 2, 3) - \
                    self.centroids[C:C + 1, :].expand(x_flatten.size(-1), -1, -1).permute(1, 2, 0).unsqueeze(0)
                residual *= soft_assign[:, C:C + 1, :].unsqueeze(2)
                vlad[:, C:C + 1, :] = residual.sum(dim=-1)
            vlad = F.normalize(vlad, p=2, dim=2)  # intra-normalization
            vlad = vlad.view(x.size(0), -1)  # flatten
            vlad = F.normalize(vlad, p=2, dim=1)  # L2 normalize
            return vlad

    class L2Norm(nn.Module):
        def __init__(self, dim=1):
            super().__init__()
            self.dim = dim

        def forward(self, input):
            return F.normalize(input, p=2, dim=self.dim)

    encoder_dim, num_clusters, margin = 6, 3, 0.1
    layers = [nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(4, encoder_dim, 3, padding=1)]
    for l in layers[:-1]:
        for p in l.parameters():
            p.requires_grad = False
    layers.append(L2Norm())
    encoder = nn.Sequential(*layers)
    model = nn.Module()
    model.add_module('encoder', encoder)
    net_vlad = NetVLAD(num_clusters=num_clusters, dim=encoder_dim, vladv2=False)
    model.add_module('pool', net_vlad)
    init = load(m, model, state)
    # get_clusters: descriptors of a few images sampled per image, k-means (one Lloyd step from sampled rows)
    with torch.no_grad():
        input = torch.from_numpy(normal(rng, 3, 3, 4, 4))
        image_descriptors = model.encoder(input).view(input.size(0), encoder_dim, -1).permute(0, 2, 1)
        dbFeat = image_descriptors.reshape(-1, encoder_dim).cpu().numpy()
    clsts = dbFeat[rng.choice(len(dbFeat), num_clusters, replace=False)]
    assign = np.argmax(dbFeat @ clsts.T, 1)
    clsts = np.stack([dbFeat[assign == k].mean(0) if (assign == k).any() else clsts[k] for k in range(num_clusters)])
    model.pool.init_params(clsts.astype(np.float32), dbFeat)
    criterion = nn.TripletMarginLoss(margin=margin ** 0.5, p=2, reduction='sum')
    optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1, momentum=0.9,
                                weight_decay=0.001)
    losses = []
    model.train()
    for _ in range(2):
        B, negCounts = 2, torch.tensor([2, 1])
        query, positives = torch.from_numpy(normal(rng, B, 3, 4, 4)), torch.from_numpy(normal(rng, B, 3, 4, 4))
        nNeg = torch.sum(negCounts)
        negatives = torch.from_numpy(normal(rng, int(nNeg), 3, 4, 4))
        input = torch.cat([query, positives, negatives])
        image_encoding = model.encoder(input)
        vlad_encoding = model.pool(image_encoding)
        vladQ, vladP, vladN = torch.split(vlad_encoding, [B, B, nNeg])
        optimizer.zero_grad()
        # calculate loss for each Query, Positive, Negative triplet
        # due to potential difference in number of negatives have to
        # do it per query, per negative
        loss = 0
        for i, negCount in enumerate(negCounts):
            for n in range(negCount):
                negIx = (torch.sum(negCounts[:i]) + n).item()
                loss += criterion(vladQ[i:i + 1], vladP[i:i + 1], vladN[negIx:negIx + 1])
        loss /= nNeg.float()  # normalise by actual number of negatives
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert model.pool.conv.bias is None and not model.encoder[0].weight.requires_grad
    return init, losses + [model.pool.alpha] + summary(model.parameters())


def test_netvlad():
    compare(netvlad)


# (i) SegNet as the common PyTorch ports write it (delta-onera/segnet_pytorch's segnet.py, and the SegNet-Basic
# variants): conv-BatchNorm-ReLU stages pooled by F.max_pool2d(..., return_indices=True) and a module MaxPool2d with
# return_indices, decoded by F.max_unpool2d(x, ind, kernel_size=2, stride=2) and nn.MaxUnpool2d with output_size= of
# the encoder's odd size; per-pixel CrossEntropyLoss with class weights and ignore_index; the weights round-tripped
# through torch.save and load_from_segnet's torch.load into another instance; mean IoU from a confusion matrix by
# torch.bincount under no_grad in eval mode
def segnet(m, state=None, tmp_path=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(8)
    rng = np.random.default_rng(8)

    class SegNet(nn.Module):
        def __init__(self, input_nbr, label_nbr):
            super(SegNet, self).__init__()
            batchNorm_momentum = 0.1
            self.conv11 = nn.Conv2d(input_nbr, 4, kernel_size=3, padding=1)
            self.bn11 = nn.BatchNorm2d(4, momentum=batchNorm_momentum)
            self.conv21 = nn.Conv2d(4, 6, kernel_size=3, padding=1)
            self.bn21 = nn.BatchNorm2d(6, momentum=batchNorm_momentum)
            self.pool2 = nn.MaxPool2d(2, 2, return_indices=True)
            self.unpool2 = nn.MaxUnpool2d(2, 2)
            self.conv21d = nn.Conv2d(6, 4, kernel_size=3, padding=1)
            self.bn21d = nn.BatchNorm2d(4, momentum=batchNorm_momentum)
            self.conv11d = nn.Conv2d(4, label_nbr, kernel_size=3, padding=1)

        def forward(self, x):
            # Stage 1
            x11 = F.relu(self.bn11(self.conv11(x)))
            x1p, id1 = F.max_pool2d(x11, kernel_size=2, stride=2, return_indices=True)
            # Stage 2
            x21 = F.relu(self.bn21(self.conv21(x1p)))
            size2 = x21.size()
            x2p, id2 = self.pool2(x21)
            # Stage 2d
            x2d = self.unpool2(x2p, id2, output_size=size2)
            x21d = F.relu(self.bn21d(self.conv21d(x2d)))
            # Stage 1d
            x1d = F.max_unpool2d(x21d, id1, kernel_size=2, stride=2)
            x11d = self.conv11d(x1d)
            return x11d

        def load_from_segnet(self, model_path):
            th = torch.load(model_path)  # load the weigths
            self.load_state_dict(th)

    num_classes = 3
    model = SegNet(3, num_classes)
    init = load(m, model, state)
    class_weights = torch.FloatTensor([1.0, 2.0, 0.5])
    criterion = nn.CrossEntropyLoss(weight=class_weights, ignore_index=255)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    losses = []
    model.train()
    for _ in range(2):
        image = torch.from_numpy(normal(rng, 2, 3, 8, 6))
        target = rng.integers(0, num_classes, (2, 8, 6))
        target[0, :2, :2] = 255
        target = torch.from_numpy(target)
        optimizer.zero_grad()
        output = model(image)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    torch.save(model.state_dict(), str(tmp_path / 'segnet.pth'))
    model2 = SegNet(3, num_classes)
    model2.load_from_segnet(str(tmp_path / 'segnet.pth'))
    model2.eval()
    with torch.no_grad():
        image = torch.from_numpy(normal(rng, 2, 3, 8, 6))
        label = torch.from_numpy(rng.integers(0, num_classes, (2, 8, 6)))
        output = model2(image)
        pred = output.argmax(1)
        hist = torch.bincount(num_classes * label.flatten() + pred.flatten(),
                              minlength=num_classes ** 2).reshape(num_classes, num_classes).float()
        iou = torch.diag(hist) / (hist.sum(0) + hist.sum(1) - torch.diag(hist))
        miou = torch.nanmean(iou).item()
    return init, losses + output.flatten().tolist() + [miou] + summary(model2.parameters())


def test_segnet(tmp_path):
    compare(segnet, tmp_path=tmp_path)


# (j) shenweichen/DeepCTR-Torch's DCN (inputs.py, layers/interaction.py's CrossNet, layers/core.py's DNN and
# PredictionLayer, models/basemodel.py, models/dcn.py): SparseFeat and DenseFeat namedtuples with __new__ defaults, the
# feature index of column ranges, nn.ModuleDict of embeddings by normal_; the linear part's embeddings of
# X[:, a:b].long() summed and the dense columns by matmul into torch.zeros([B, 1]) with +=; CrossNet's kernels and
# biases as 3-d nn.Parameter(torch.Tensor(...)) initialised slice by slice (xavier_normal_ of self.kernels[i],
# zeros_ of self.bias[i]), x_l = x_0 @ tensordot(x_l, w, dims=([1], [0])) + b + x_l; the regularisation list
# (isinstance of torch.nn.parameter.Parameter, named_parameters filtered by name) summed by += into torch.zeros((1,));
# fit's TensorDataset of an np.concatenate'd float64 table, a DataLoader, y_pred.squeeze() and
# F.binary_cross_entropy(reduction='sum'), Adagrad
def deepctr_dcn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Data = m.data
    from collections import OrderedDict, namedtuple
    torch.manual_seed(9)
    rng = np.random.default_rng(9)

    class SparseFeat(namedtuple('SparseFeat', ['name', 'vocabulary_size', 'embedding_dim', 'use_hash', 'dtype',
                                               'embedding_name', 'group_name'])):
        __slots__ = ()

        def __new__(cls, name, vocabulary_size, embedding_dim=4, use_hash=False, dtype="int32", embedding_name=None,
                    group_name="default_group"):
            if embedding_name is None:
                embedding_name = name
            if embedding_dim == "auto":
                embedding_dim = 6 * int(pow(vocabulary_size, 0.25))
            return super(SparseFeat, cls).__new__(cls, name, vocabulary_size, embedding_dim, use_hash, dtype,
                                                  embedding_name, group_name)

        def __hash__(self):
            return self.name.__hash__()

    class DenseFeat(namedtuple('DenseFeat', ['name', 'dimension', 'dtype'])):
        __slots__ = ()

        def __new__(cls, name, dimension=1, dtype="float32"):
            return super(DenseFeat, cls).__new__(cls, name, dimension, dtype)

        def __hash__(self):
            return self.name.__hash__()

    def build_input_features(feature_columns):
        features = OrderedDict()
        start = 0
        for feat in feature_columns:
            feat_name = feat.name
            if feat_name in features:
                continue
            if isinstance(feat, SparseFeat):
                features[feat_name] = (start, start + 1)
                start += 1
            elif isinstance(feat, DenseFeat):
                features[feat_name] = (start, start + feat.dimension)
                start += feat.dimension
        return features

    def create_embedding_matrix(feature_columns, init_std=0.0001, linear=False, sparse=False, device='cpu'):
        sparse_feature_columns = list(
            filter(lambda x: isinstance(x, SparseFeat), feature_columns)) if len(feature_columns) else []
        embedding_dict = nn.ModuleDict(
            {feat.embedding_name: nn.Embedding(feat.vocabulary_size, feat.embedding_dim if not linear else 1,
                                               sparse=sparse) for feat in sparse_feature_columns})
        for tensor in embedding_dict.values():
            nn.init.normal_(tensor.weight, mean=0, std=init_std)
        return embedding_dict.to(device)

    class Linear(nn.Module):
        def __init__(self, feature_columns, feature_index, init_std=0.0001, device='cpu'):
            super(Linear, self).__init__()
            self.feature_index = feature_index
            self.device = device
            self.sparse_feature_columns = list(
                filter(lambda x: isinstance(x, SparseFeat), feature_columns)) if len(feature_columns) else []
            self.dense_feature_columns = list(
                filter(lambda x: isinstance(x, DenseFeat), feature_columns)) if len(feature_columns) else []
            self.embedding_dict = create_embedding_matrix(feature_columns, init_std, linear=True, sparse=False,
                                                          device=device)
            if len(self.dense_feature_columns) > 0:
                self.weight = nn.Parameter(torch.Tensor(sum(fc.dimension for fc in self.dense_feature_columns),
                                                        1).to(device))
                torch.nn.init.normal_(self.weight, mean=0, std=init_std)

        def forward(self, X):
            sparse_embedding_list = [self.embedding_dict[feat.embedding_name](
                X[:, self.feature_index[feat.name][0]:self.feature_index[feat.name][1]].long()) for
                feat in self.sparse_feature_columns]
            dense_value_list = [X[:, self.feature_index[feat.name][0]:self.feature_index[feat.name][1]] for feat in
                                self.dense_feature_columns]
            linear_logit = torch.zeros([X.shape[0], 1]).to(self.device)
            if len(sparse_embedding_list) > 0:
                sparse_embedding_cat = torch.cat(sparse_embedding_list, dim=-1)
                sparse_feat_logit = torch.sum(sparse_embedding_cat, dim=-1, keepdim=False)
                linear_logit += sparse_feat_logit
            if len(dense_value_list) > 0:
                dense_value_logit = torch.cat(dense_value_list, dim=-1).matmul(self.weight)
                linear_logit += dense_value_logit
            return linear_logit

    class CrossNet(nn.Module):
        def __init__(self, in_features, layer_num=2, parameterization='vector', seed=1024, device='cpu'):
            super(CrossNet, self).__init__()
            self.layer_num = layer_num
            self.parameterization = parameterization
            if self.parameterization == 'vector':
                # weight in DCN.  (in_features, 1)
                self.kernels = nn.Parameter(torch.Tensor(self.layer_num, in_features, 1))
            elif self.parameterization == 'matrix':
                # weight matrix in DCN-M.  (in_features, in_features)
                self.kernels = nn.Parameter(torch.Tensor(self.layer_num, in_features, in_features))
            else:  # error
                raise ValueError("parameterization should be 'vector' or 'matrix'")
            self.bias = nn.Parameter(torch.Tensor(self.layer_num, in_features, 1))
            for i in range(self.kernels.shape[0]):
                nn.init.xavier_normal_(self.kernels[i])
            for i in range(self.bias.shape[0]):
                nn.init.zeros_(self.bias[i])
            self.to(device)

        def forward(self, inputs):
            x_0 = inputs.unsqueeze(2)
            x_l = x_0
            for i in range(self.layer_num):
                if self.parameterization == 'vector':
                    xl_w = torch.tensordot(x_l, self.kernels[i], dims=([1], [0]))
                    dot_ = torch.matmul(x_0, xl_w)
                    x_l = dot_ + self.bias[i] + x_l
                elif self.parameterization == 'matrix':
                    xl_w = torch.matmul(self.kernels[i], x_l)  # W * xi  (bs, in_features, 1)
                    dot_ = xl_w + self.bias[i]  # W * xi + b
                    x_l = x_0 * dot_ + x_l  # x0 · (W * xi + b) +xl  Hadamard-product
            x_l = torch.squeeze(x_l, dim=2)
            return x_l

    class DNN(nn.Module):
        def __init__(self, inputs_dim, hidden_units, activation='relu', l2_reg=0, dropout_rate=0, use_bn=False,
                     init_std=0.0001, seed=1024, device='cpu'):
            super(DNN, self).__init__()
            self.dropout_rate = dropout_rate
            self.dropout = nn.Dropout(dropout_rate)
            self.use_bn = use_bn
            if len(hidden_units) == 0:
                raise ValueError("hidden_units is empty!!")
            hidden_units = [inputs_dim] + list(hidden_units)
            self.linears = nn.ModuleList(
                [nn.Linear(hidden_units[i], hidden_units[i + 1]) for i in range(len(hidden_units) - 1)])
            self.activation_layers = nn.ModuleList([nn.ReLU(inplace=True) for i in range(len(hidden_units) - 1)])
            for name, tensor in self.linears.named_parameters():
                if 'weight' in name:
                    nn.init.normal_(tensor, mean=0, std=init_std)
            self.to(device)

        def forward(self, inputs):
            deep_input = inputs
            for i in range(len(self.linears)):
                fc = self.linears[i](deep_input)
                fc = self.activation_layers[i](fc)
                fc = self.dropout(fc)
                deep_input = fc
            return deep_input

    class PredictionLayer(nn.Module):
        def __init__(self, task='binary', use_bias=True, **kwargs):
            if task not in ["binary", "multiclass", "regression"]:
                raise ValueError("task must be binary,multiclass or regression")
            super(PredictionLayer, self).__init__()
            self.use_bias = use_bias
            self.task = task
            if self.use_bias:
                self.bias = nn.Parameter(torch.zeros((1,)))

        def forward(self, X):
            output = X
            if self.use_bias:
                output += self.bias
            if self.task == "binary":
                output = torch.sigmoid(output)
            return output

    class DCN(nn.Module):
        def __init__(self, linear_feature_columns, dnn_feature_columns, cross_num=2, cross_parameterization='vector',
                     dnn_hidden_units=(8, 8), l2_reg_linear=0.00001, l2_reg_embedding=0.00001, l2_reg_cross=0.00001,
                     l2_reg_dnn=0, init_std=0.0001, seed=1024, task='binary', device='cpu'):
            super(DCN, self).__init__()
            self.dnn_feature_columns = dnn_feature_columns
            self.reg_loss = torch.zeros((1,), device=device)
            self.aux_loss = torch.zeros((1,), device=device)
            self.device = device
            self.feature_index = build_input_features(linear_feature_columns + dnn_feature_columns)
            self.embedding_dict = create_embedding_matrix(dnn_feature_columns, init_std, sparse=False, device=device)
            self.linear_model = Linear(linear_feature_columns, self.feature_index, device=device)
            self.regularization_weight = []
            self.add_regularization_weight(self.embedding_dict.parameters(), l2=l2_reg_embedding)
            self.add_regularization_weight(self.linear_model.parameters(), l2=l2_reg_linear)
            self.out = PredictionLayer(task, )
            self.dnn_hidden_units = dnn_hidden_units
            self.cross_num = cross_num
            self.dnn = DNN(self.compute_input_dim(dnn_feature_columns), dnn_hidden_units, l2_reg=l2_reg_dnn,
                           init_std=init_std, device=device)
            dnn_linear_in_feature = self.compute_input_dim(dnn_feature_columns) + dnn_hidden_units[-1]
            self.dnn_linear = nn.Linear(dnn_linear_in_feature, 1, bias=False).to(device)
            self.crossnet = CrossNet(in_features=self.compute_input_dim(dnn_feature_columns), layer_num=cross_num,
                                     parameterization=cross_parameterization, device=device)
            self.add_regularization_weight(
                filter(lambda x: 'weight' in x[0] and 'bn' not in x[0], self.dnn.named_parameters()), l2=l2_reg_dnn)
            self.add_regularization_weight(self.dnn_linear.weight, l2=l2_reg_linear)
            self.add_regularization_weight(self.crossnet.kernels, l2=l2_reg_cross)
            self.to(device)

        def input_from_feature_columns(self, X, feature_columns, embedding_dict):
            sparse_feature_columns = list(
                filter(lambda x: isinstance(x, SparseFeat), feature_columns)) if len(feature_columns) else []
            dense_feature_columns = list(
                filter(lambda x: isinstance(x, DenseFeat), feature_columns)) if len(feature_columns) else []
            sparse_embedding_list = [embedding_dict[feat.embedding_name](
                X[:, self.feature_index[feat.name][0]:self.feature_index[feat.name][1]].long()) for
                feat in sparse_feature_columns]
            dense_value_list = [X[:, self.feature_index[feat.name][0]:self.feature_index[feat.name][1]] for feat in
                                dense_feature_columns]
            return sparse_embedding_list, dense_value_list

        def compute_input_dim(self, feature_columns, include_sparse=True, include_dense=True):
            sparse_feature_columns = list(filter(lambda x: isinstance(x, SparseFeat), feature_columns))
            dense_feature_columns = list(filter(lambda x: isinstance(x, DenseFeat), feature_columns))
            dense_input_dim = sum(map(lambda x: x.dimension, dense_feature_columns))
            sparse_input_dim = sum(feat.embedding_dim for feat in sparse_feature_columns)
            input_dim = 0
            if include_sparse:
                input_dim += sparse_input_dim
            if include_dense:
                input_dim += dense_input_dim
            return input_dim

        def add_regularization_weight(self, weight_list, l1=0.0, l2=0.0):
            # For a Parameter, put it in a list to keep Compatible with get_regularization_loss()
            if isinstance(weight_list, torch.nn.parameter.Parameter):
                weight_list = [weight_list]
            # For generators, filters and ParameterLists, convert them to a list of tensors to avoid bugs.
            else:
                weight_list = list(weight_list)
            self.regularization_weight.append((weight_list, l1, l2))

        def get_regularization_loss(self, ):
            total_reg_loss = torch.zeros((1,), device=self.device)
            for weight_list, l1, l2 in self.regularization_weight:
                for w in weight_list:
                    if isinstance(w, tuple):
                        parameter = w[1]  # named_parameters
                    else:
                        parameter = w
                    if l1 > 0:
                        total_reg_loss += torch.sum(l1 * torch.abs(parameter))
                    if l2 > 0:
                        try:
                            total_reg_loss += torch.sum(l2 * torch.square(parameter))
                        except AttributeError:
                            total_reg_loss += torch.sum(l2 * parameter * parameter)
            return total_reg_loss

        def forward(self, X):
            logit = self.linear_model(X)
            sparse_embedding_list, dense_value_list = self.input_from_feature_columns(X, self.dnn_feature_columns,
                                                                                      self.embedding_dict)
            sparse_dnn_input = torch.flatten(torch.cat(sparse_embedding_list, dim=-1), start_dim=1)
            dense_dnn_input = torch.flatten(torch.cat(dense_value_list, dim=-1), start_dim=1)
            dnn_input = torch.cat([sparse_dnn_input, dense_dnn_input], dim=-1)
            deep_out = self.dnn(dnn_input)
            cross_out = self.crossnet(dnn_input)
            stack_out = torch.cat((cross_out, deep_out), dim=-1)
            logit += self.dnn_linear(stack_out)
            y_pred = self.out(logit)
            return y_pred

    sparse_features, dense_features = ['C1', 'C2'], ['I1', 'I2']
    fixlen_feature_columns = [SparseFeat(feat, vocabulary_size=5, embedding_dim=3) for feat in sparse_features] + \
        [DenseFeat(feat, 1, ) for feat in dense_features]
    data = {'C1': rng.integers(0, 5, 8), 'C2': rng.integers(0, 5, 8), 'I1': rng.random(8), 'I2': rng.random(8)}
    target = (rng.random(8) < 0.5).astype(np.float64)
    model = DCN(linear_feature_columns=fixlen_feature_columns, dnn_feature_columns=fixlen_feature_columns,
                init_std=0.01)
    assert float(model.crossnet.kernels.abs().sum()) > 0 and float(model.crossnet.bias.abs().sum()) == 0
    init = load(m, model, state)
    optim = torch.optim.Adagrad(model.parameters(), lr=0.05)
    loss_func = F.binary_cross_entropy
    x = [data[feature] for feature in model.feature_index]
    for i in range(len(x)):
        if len(x[i].shape) == 1:
            x[i] = np.expand_dims(x[i], axis=1)
    train_tensor_data = Data.TensorDataset(torch.from_numpy(np.concatenate(x, axis=-1)), torch.from_numpy(target))
    train_loader = Data.DataLoader(dataset=train_tensor_data, shuffle=False, batch_size=4)
    model = model.train()
    losses = []
    for _, (x_train, y_train) in enumerate(train_loader):
        x = x_train.to(model.device).float()
        y = y_train.to(model.device).float()
        y_pred = model(x).squeeze()
        optim.zero_grad()
        loss = loss_func(y_pred, y.squeeze(), reduction='sum')
        reg_loss = model.get_regularization_loss()
        total_loss = loss + reg_loss + model.aux_loss
        total_loss.backward()
        optim.step()
        losses += [loss.item(), total_loss.item()]
    return init, losses + summary(model.parameters())


def test_deepctr_dcn():
    compare(deepctr_dcn)


# (k) wgrathwohl/JEM's train_wrn_ebm.py: a classifier read as an energy model (F's energy head, CCF's logsumexp of the
# class logits, t.gather(logits, 1, y[:, None])), a replay buffer refreshed by SGLD: eval() while sampling, x_k as
# t.autograd.Variable(init_sample, requires_grad=True), f_prime by t.autograd.grad(f(x_k).sum(), [x_k],
# retain_graph=True), `x_k.data += sgld_lr * f_prime + sgld_std * noise`, the buffer written back by
# replay_buffer[buffer_inds] = final_samples.cpu(); the loss -(fp - fq) plus the cross-entropy of the labelled batch,
# L as `L = 0.` grown by +=, a warmup lr through param_groups, the divergence check by L.abs().item(), grad_norm.
# `import torch as t`; numpy draws the buffer's indices (t.randint's), the reinit coin (t.rand's), the uniform
# initial samples and the SGLD noise (randn_like's)
def jem(m, state=None):
    t, nn = m.torch, m.nn
    t.manual_seed(10)
    rng = np.random.default_rng(10)
    n_ch, im_sz, n_classes = 3, 4, 3

    class Args:
        buffer_size, batch_size, n_steps, sgld_lr, sgld_std, reinit_freq = 6, 2, 2, 1.0, 1e-2, 0.3
        lr, warmup_iters, p_x_weight, p_y_given_x_weight, uncond = 1e-2, 2, 1.0, 1.0, False

    args = Args()

    class TinyWRN(nn.Module):  # Wide_ResNet(norm=None) at a tiny width: convs and LeakyReLU(0.2)
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(n_ch, 4, 3, padding=1)
            self.conv2 = nn.Conv2d(4, 6, 3, stride=2, padding=1)
            self.lrelu = nn.LeakyReLU(0.2)
            self.last_dim = 6

        def forward(self, x):
            out = self.lrelu(self.conv2(self.lrelu(self.conv1(x))))
            return out.mean(dim=(2, 3))

    class F(nn.Module):
        def __init__(self, n_classes=10):
            super(F, self).__init__()
            self.f = TinyWRN()
            self.energy_output = nn.Linear(self.f.last_dim, 1)
            self.class_output = nn.Linear(self.f.last_dim, n_classes)

        def forward(self, x, y=None):
            penult_z = self.f(x)
            return self.energy_output(penult_z).squeeze()

        def classify(self, x):
            penult_z = self.f(x)
            return self.class_output(penult_z).squeeze()

    class CCF(F):
        def __init__(self, n_classes=10):
            super(CCF, self).__init__(n_classes=n_classes)

        def forward(self, x, y=None):
            logits = self.classify(x)
            if y is None:
                return logits.logsumexp(1)
            else:
                return t.gather(logits, 1, y[:, None])

    def grad_norm(m):
        total_norm = 0
        for p in m.parameters():
            param_grad = p.grad
            if param_grad is not None:
                param_norm = param_grad.data.norm(2) ** 2
                total_norm += param_norm
        total_norm = total_norm ** (1. / 2)
        return total_norm.item()

    def init_random(args, bs):
        return t.FloatTensor(bs, n_ch, im_sz, im_sz).copy_(t.from_numpy(
            rng.uniform(-1, 1, (bs, n_ch, im_sz, im_sz)).astype(np.float32)))

    def sample_p_0(replay_buffer, bs, y=None):
        if len(replay_buffer) == 0:
            return init_random(args, bs), []
        buffer_size = len(replay_buffer) if y is None else len(replay_buffer) // n_classes
        inds = t.from_numpy(rng.choice(buffer_size, bs, replace=False))
        buffer_samples = replay_buffer[inds]
        random_samples = init_random(args, bs)
        choose_random = (t.from_numpy(rng.random(bs).astype(np.float32)) < args.reinit_freq).float()[:, None, None,
                                                                                                       None]
        samples = choose_random * random_samples + (1 - choose_random) * buffer_samples
        return samples, inds

    def sample_q(f, replay_buffer, y=None, n_steps=args.n_steps):
        f.eval()
        # get batch size
        bs = args.batch_size if y is None else y.size(0)
        # generate initial samples and buffer inds of those samples (if buffer is used)
        init_sample, buffer_inds = sample_p_0(replay_buffer, bs=bs, y=y)
        x_k = t.autograd.Variable(init_sample, requires_grad=True)
        # sgld
        for k in range(n_steps):
            f_prime = t.autograd.grad(f(x_k, y=y).sum(), [x_k], retain_graph=True)[0]
            noise = t.from_numpy(normal(rng, *x_k.shape))
            x_k.data += args.sgld_lr * f_prime + args.sgld_std * noise
        f.train()
        final_samples = x_k.detach()
        # update replay buffer
        if len(replay_buffer) > 0:
            replay_buffer[buffer_inds] = final_samples.cpu()
        return final_samples

    f = CCF(n_classes=n_classes)
    init = load(m, f, state)
    replay_buffer = init_random(args, args.buffer_size)
    params = f.class_output.parameters() if args.p_y_given_x_weight == 1 and args.p_x_weight == 0 else f.parameters()
    optim = t.optim.Adam(params, lr=args.lr, betas=[.9, .999], weight_decay=0.0)
    losses = []
    cur_iter = 1
    for i in range(2):
        if cur_iter <= args.warmup_iters:
            lr = args.lr * cur_iter / float(args.warmup_iters)
            for param_group in optim.param_groups:
                param_group['lr'] = lr
        x_p_d = t.from_numpy(normal(rng, args.batch_size, n_ch, im_sz, im_sz))
        x_lab, y_lab = t.from_numpy(normal(rng, 2, n_ch, im_sz, im_sz)), t.from_numpy(rng.integers(0, n_classes, 2))
        L = 0.
        if args.p_x_weight > 0:  # maximize log p(x)
            x_q = sample_q(f, replay_buffer)  # sample from log-sumexp
            fp_all = f(x_p_d)
            fq_all = f(x_q)
            fp = fp_all.mean()
            fq = fq_all.mean()
            l_p_x = -(fp - fq)
            L += args.p_x_weight * l_p_x
            losses += [fp.item(), fq.item()]
        if args.p_y_given_x_weight > 0:  # maximize log p(y | x)
            logits = f.classify(x_lab)
            l_p_y_given_x = nn.CrossEntropyLoss()(logits, y_lab)
            acc = (logits.max(1)[1] == y_lab).float().mean()
            L += args.p_y_given_x_weight * l_p_y_given_x
            losses += [l_p_y_given_x.item(), acc.item()]
        # break if the loss diverged...easier for poppa to run experiments this way
        if L.abs().item() > 1e8:
            raise RuntimeError("BAD BOIIIIIIIIII")
        optim.zero_grad()
        L.backward()
        losses.append(grad_norm(f))
        optim.step()
        cur_iter += 1
    with t.no_grad():
        energies = f(replay_buffer)
        class_energy = f(replay_buffer[:2], y=t.tensor([0, 2]))
    return init, losses + energies.tolist() + class_energy.flatten().tolist() + summary(f.parameters())


def test_jem():
    compare(jem)


# (l) zylo117/Yet-Another-EfficientDet-Pytorch's BiFPN (efficientdet/model.py, efficientnet/utils_extra.py,
# efficientnet/utils.py, train.py), at three levels: Conv2dStaticSamePadding and MaxPool2dStaticSamePadding (F.pad by
# math.ceil of the stride, kernel sizes read back from the wrapped module as lists), SeparableConvBlock (depthwise and
# pointwise convs, BatchNorm2d(momentum=0.01, eps=1e-3)), MemoryEfficientSwish by a custom autograd Function that reads
# ctx.saved_variables, the fast normalised fusion of nn.Parameter(torch.ones(2)) weights through ReLU and w /
# (torch.sum(w, dim=0) + eps), nearest Upsample; train.py's SGD(momentum=0.9, nesterov=True) with clip_grad_norm_ and
# ReduceLROnPlateau stepped on np.mean of the epoch's losses
def bifpn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(11)
    rng = np.random.default_rng(11)

    class SwishImplementation(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i * torch.sigmoid(i)
            ctx.save_for_backward(i)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            i = ctx.saved_variables[0]
            sigmoid_i = torch.sigmoid(i)
            return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))

    class MemoryEfficientSwish(nn.Module):
        def forward(self, x):
            return SwishImplementation.apply(x)

    class Conv2dStaticSamePadding(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, bias=True, groups=1, dilation=1, **kwargs):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, bias=bias, groups=groups)
            self.stride = self.conv.stride
            self.kernel_size = self.conv.kernel_size
            self.dilation = self.conv.dilation
            if isinstance(self.stride, int):
                self.stride = [self.stride] * 2
            elif len(self.stride) == 1:
                self.stride = [self.stride[0]] * 2
            if isinstance(self.kernel_size, int):
                self.kernel_size = [self.kernel_size] * 2
            elif len(self.kernel_size) == 1:
                self.kernel_size = [self.kernel_size[0]] * 2

        def forward(self, x):
            h, w = x.shape[-2:]
            extra_h = (math.ceil(w / self.stride[1]) - 1) * self.stride[1] - w + self.kernel_size[1]
            extra_v = (math.ceil(h / self.stride[0]) - 1) * self.stride[0] - h + self.kernel_size[0]
            left = extra_h // 2
            right = extra_h - left
            top = extra_v // 2
            bottom = extra_v - top
            x = F.pad(x, [left, right, top, bottom])
            x = self.conv(x)
            return x

    class MaxPool2dStaticSamePadding(nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()
            self.pool = nn.MaxPool2d(*args, **kwargs)
            self.stride = self.pool.stride
            self.kernel_size = self.pool.kernel_size
            if isinstance(self.stride, int):
                self.stride = [self.stride] * 2
            elif len(self.stride) == 1:
                self.stride = [self.stride[0]] * 2
            if isinstance(self.kernel_size, int):
                self.kernel_size = [self.kernel_size] * 2
            elif len(self.kernel_size) == 1:
                self.kernel_size = [self.kernel_size[0]] * 2

        def forward(self, x):
            h, w = x.shape[-2:]
            extra_h = (math.ceil(w / self.stride[1]) - 1) * self.stride[1] - w + self.kernel_size[1]
            extra_v = (math.ceil(h / self.stride[0]) - 1) * self.stride[0] - h + self.kernel_size[0]
            left = extra_h // 2
            right = extra_h - left
            top = extra_v // 2
            bottom = extra_v - top
            x = F.pad(x, [left, right, top, bottom])
            x = self.pool(x)
            return x

    class SeparableConvBlock(nn.Module):
        def __init__(self, in_channels, out_channels=None, norm=True, activation=False, onnx_export=False):
            super(SeparableConvBlock, self).__init__()
            if out_channels is None:
                out_channels = in_channels
            self.depthwise_conv = Conv2dStaticSamePadding(in_channels, in_channels, kernel_size=3, stride=1,
                                                          groups=in_channels, bias=False)
            self.pointwise_conv = Conv2dStaticSamePadding(in_channels, out_channels, kernel_size=1, stride=1)
            self.norm = norm
            if self.norm:
                # Warning: pytorch momentum is different from tensorflow's, momentum_pytorch = 1 - momentum_tensorflow
                self.bn = nn.BatchNorm2d(num_features=out_channels, momentum=0.01, eps=1e-3)
            self.activation = activation
            if self.activation:
                self.swish = MemoryEfficientSwish()

        def forward(self, x):
            x = self.depthwise_conv(x)
            x = self.pointwise_conv(x)
            if self.norm:
                x = self.bn(x)
            if self.activation:
                x = self.swish(x)
            return x

    class BiFPN(nn.Module):
        def __init__(self, num_channels, conv_channels, first_time=False, epsilon=1e-4):
            super(BiFPN, self).__init__()
            self.epsilon = epsilon
            self.conv4_up = SeparableConvBlock(num_channels)
            self.conv3_up = SeparableConvBlock(num_channels)
            self.conv4_down = SeparableConvBlock(num_channels)
            self.conv5_down = SeparableConvBlock(num_channels)
            self.p4_upsample = nn.Upsample(scale_factor=2, mode='nearest')
            self.p3_upsample = nn.Upsample(scale_factor=2, mode='nearest')
            self.p4_downsample = MaxPool2dStaticSamePadding(3, 2)
            self.p5_downsample = MaxPool2dStaticSamePadding(3, 2)
            self.swish = MemoryEfficientSwish()
            self.first_time = first_time
            if self.first_time:
                self.p5_down_channel = nn.Sequential(
                    Conv2dStaticSamePadding(conv_channels[2], num_channels, 1),
                    nn.BatchNorm2d(num_channels, momentum=0.01, eps=1e-3))
                self.p4_down_channel = nn.Sequential(
                    Conv2dStaticSamePadding(conv_channels[1], num_channels, 1),
                    nn.BatchNorm2d(num_channels, momentum=0.01, eps=1e-3))
                self.p3_down_channel = nn.Sequential(
                    Conv2dStaticSamePadding(conv_channels[0], num_channels, 1),
                    nn.BatchNorm2d(num_channels, momentum=0.01, eps=1e-3))
            # Weight
            self.p4_w1 = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
            self.p4_w1_relu = nn.ReLU()
            self.p3_w1 = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
            self.p3_w1_relu = nn.ReLU()
            self.p4_w2 = nn.Parameter(torch.ones(3, dtype=torch.float32), requires_grad=True)
            self.p4_w2_relu = nn.ReLU()
            self.p5_w2 = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
            self.p5_w2_relu = nn.ReLU()

        def forward(self, inputs):
            if self.first_time:
                p3, p4, p5 = inputs
                p3_in = self.p3_down_channel(p3)
                p4_in = self.p4_down_channel(p4)
                p5_in = self.p5_down_channel(p5)
            else:
                p3_in, p4_in, p5_in = inputs
            # Weights for P4_0 and P5_0 to P4_1
            p4_w1 = self.p4_w1_relu(self.p4_w1)
            weight = p4_w1 / (torch.sum(p4_w1, dim=0) + self.epsilon)
            # Connections for P4_0 and P5_0 to P4_1 respectively
            p4_up = self.conv4_up(self.swish(weight[0] * p4_in + weight[1] * self.p4_upsample(p5_in)))
            # Weights for P3_0 and P4_1 to P3_2
            p3_w1 = self.p3_w1_relu(self.p3_w1)
            weight = p3_w1 / (torch.sum(p3_w1, dim=0) + self.epsilon)
            p3_out = self.conv3_up(self.swish(weight[0] * p3_in + weight[1] * self.p3_upsample(p4_up)))
            # Weights for P4_0, P4_1 and P3_2 to P4_2
            p4_w2 = self.p4_w2_relu(self.p4_w2)
            weight = p4_w2 / (torch.sum(p4_w2, dim=0) + self.epsilon)
            p4_out = self.conv4_down(
                self.swish(weight[0] * p4_in + weight[1] * p4_up + weight[2] * self.p4_downsample(p3_out)))
            # Weights for P5_0 and P4_2 to P5_2
            p5_w2 = self.p5_w2_relu(self.p5_w2)
            weight = p5_w2 / (torch.sum(p5_w2, dim=0) + self.epsilon)
            p5_out = self.conv5_down(self.swish(weight[0] * p5_in + weight[1] * self.p5_downsample(p4_out)))
            return p3_out, p4_out, p5_out

    class Head(nn.Module):  # a shared SeparableConvBlock with swish and a 1x1 regressor over each level
        def __init__(self, num_channels):
            super().__init__()
            self.conv = SeparableConvBlock(num_channels, num_channels, norm=False, activation=True)
            self.header = Conv2dStaticSamePadding(num_channels, 2, kernel_size=1)

        def forward(self, inputs):
            feats = []
            for feat in inputs:
                feat = self.header(self.conv(feat))
                feat = feat.permute(0, 2, 3, 1)
                feats.append(feat.contiguous().view(feat.shape[0], -1, 2))
            return torch.cat(feats, dim=1)

    class ModelWithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.bifpn = nn.Sequential(*[BiFPN(4, [3, 5, 6], first_time=True if _ == 0 else False) for _ in range(1)])
            self.head = Head(4)

        def forward(self, feats, targets):
            out = self.head(self.bifpn(feats))
            return F.smooth_l1_loss(out, targets, beta=0.5)

    model = ModelWithLoss()
    # the pointwise convs' biases sit before a BatchNorm: their gradient is rounding alone, frozen here
    for name, p in model.named_parameters():
        if 'pointwise_conv.conv.bias' in name or 'down_channel.0.conv.bias' in name:
            p.requires_grad = False
    init = load(m, model, state)
    assert model.bifpn[0].p4_downsample.kernel_size == [3, 3]
    assert model.bifpn[0].conv4_up.depthwise_conv.stride == (1, 1)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], 0.1, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5)
    losses = []
    model.train()
    for epoch in range(2):
        epoch_loss = []
        for _ in range(1):
            feats = [torch.from_numpy(normal(rng, 2, c, s, s)) for c, s in ((3, 8), (5, 4), (6, 2))]
            targets = torch.from_numpy(normal(rng, 2, 84, 2))
            optimizer.zero_grad()
            loss = model(feats, targets)
            if loss == 0 or not torch.isfinite(loss):
                continue
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            epoch_loss.append(float(loss))
        scheduler.step(np.mean(epoch_loss))
        losses += epoch_loss + [optimizer.param_groups[0]['lr']]
    return init, losses + summary(model.parameters())


def test_bifpn():
    compare(bifpn)


# (m) three attention blocks as their repositories write them, in a small CIFAR-style network: BangguWu's ECA-Net
# eca_layer (Conv1d over y.squeeze(-1).transpose(-1, -2) of the pooled channels), xvjiarui's GCNet ContextBlock
# (softmax attention pooling by torch.matmul of [N, 1, C, HW] and [N, 1, HW, 1], channel_add and channel_mul
# transforms through LayerNorm([planes, 1, 1]), mmcv's kaiming_init and last_zero_init by constant_init) and
# landskape-ai's TripletAttention (ZPool by torch.cat of max(x, 1)[0] and mean, three gates over permuted views,
# torch.sigmoid_ in place); the training loop's warmup by SequentialLR(LinearLR, CosineAnnealingLR), an EMA of the
# weights kept by torch._foreach_mul_ and _foreach_add_ on a deepcopy, evaluated in eval mode under inference_mode
def attention_blocks(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(12)
    rng = np.random.default_rng(12)

    class eca_layer(nn.Module):
        """Constructs a ECA module.
        Args:
            channel: Number of channels of the input feature map
            k_size: Adaptive selection of kernel size
        """

        def __init__(self, channel, k_size=3):
            super(eca_layer, self).__init__()
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.conv = nn.Conv1d(1, 1, kernel_size=k_size, padding=(k_size - 1) // 2, bias=False)
            self.sigmoid = nn.Sigmoid()

        def forward(self, x):
            # feature descriptor on the global spatial information
            y = self.avg_pool(x)
            # Two different branches of ECA module
            y = self.conv(y.squeeze(-1).transpose(-1, -2)).transpose(-1, -2).unsqueeze(-1)
            # Multi-scale information fusion
            y = self.sigmoid(y)
            return x * y.expand_as(x)

    def constant_init(module, val, bias=0):
        if hasattr(module, 'weight') and module.weight is not None:
            nn.init.constant_(module.weight, val)
        if hasattr(module, 'bias') and module.bias is not None:
            nn.init.constant_(module.bias, bias)

    def kaiming_init(module, a=0, mode='fan_out', nonlinearity='relu', bias=0, distribution='normal'):
        assert distribution in ['uniform', 'normal']
        if distribution == 'uniform':
            nn.init.kaiming_uniform_(module.weight, a=a, mode=mode, nonlinearity=nonlinearity)
        else:
            nn.init.kaiming_normal_(module.weight, a=a, mode=mode, nonlinearity=nonlinearity)
        if hasattr(module, 'bias') and module.bias is not None:
            nn.init.constant_(module.bias, bias)

    def last_zero_init(m):
        if isinstance(m, nn.Sequential):
            constant_init(m[-1], val=0)
        else:
            constant_init(m, val=0)

    class ContextBlock(nn.Module):
        def __init__(self, inplanes, ratio, pooling_type='att', fusion_types=('channel_add', )):
            super(ContextBlock, self).__init__()
            assert pooling_type in ['avg', 'att']
            assert isinstance(fusion_types, (list, tuple))
            valid_fusion_types = ['channel_add', 'channel_mul']
            assert all([f in valid_fusion_types for f in fusion_types])
            assert len(fusion_types) > 0, 'at least one fusion should be used'
            self.inplanes = inplanes
            self.ratio = ratio
            self.planes = int(inplanes * ratio)
            self.pooling_type = pooling_type
            self.fusion_types = fusion_types
            if pooling_type == 'att':
                self.conv_mask = nn.Conv2d(inplanes, 1, kernel_size=1)
                self.softmax = nn.Softmax(dim=2)
            else:
                self.avg_pool = nn.AdaptiveAvgPool2d(1)
            if 'channel_add' in fusion_types:
                self.channel_add_conv = nn.Sequential(
                    nn.Conv2d(self.inplanes, self.planes, kernel_size=1),
                    nn.LayerNorm([self.planes, 1, 1]),
                    nn.ReLU(inplace=True),  # yapf: disable
                    nn.Conv2d(self.planes, self.inplanes, kernel_size=1))
            else:
                self.channel_add_conv = None
            if 'channel_mul' in fusion_types:
                self.channel_mul_conv = nn.Sequential(
                    nn.Conv2d(self.inplanes, self.planes, kernel_size=1),
                    nn.LayerNorm([self.planes, 1, 1]),
                    nn.ReLU(inplace=True),  # yapf: disable
                    nn.Conv2d(self.planes, self.inplanes, kernel_size=1))
            else:
                self.channel_mul_conv = None
            self.reset_parameters()

        def reset_parameters(self):
            if self.pooling_type == 'att':
                kaiming_init(self.conv_mask, mode='fan_in')
                self.conv_mask.inited = True
            if self.channel_add_conv is not None:
                last_zero_init(self.channel_add_conv)
            if self.channel_mul_conv is not None:
                last_zero_init(self.channel_mul_conv)

        def spatial_pool(self, x):
            batch, channel, height, width = x.size()
            if self.pooling_type == 'att':
                input_x = x
                # [N, C, H * W]
                input_x = input_x.view(batch, channel, height * width)
                # [N, 1, C, H * W]
                input_x = input_x.unsqueeze(1)
                # [N, 1, H, W]
                context_mask = self.conv_mask(x)
                # [N, 1, H * W]
                context_mask = context_mask.view(batch, 1, height * width)
                # [N, 1, H * W]
                context_mask = self.softmax(context_mask)
                # [N, 1, H * W, 1]
                context_mask = context_mask.unsqueeze(-1)
                # [N, 1, C, 1]
                context = torch.matmul(input_x, context_mask)
                # [N, C, 1, 1]
                context = context.view(batch, channel, 1, 1)
            else:
                # [N, C, 1, 1]
                context = self.avg_pool(x)
            return context

        def forward(self, x):
            # [N, C, 1, 1]
            context = self.spatial_pool(x)
            out = x
            if self.channel_mul_conv is not None:
                # [N, C, 1, 1]
                channel_mul_term = torch.sigmoid(self.channel_mul_conv(context))
                out = out * channel_mul_term
            if self.channel_add_conv is not None:
                # [N, C, 1, 1]
                channel_add_term = self.channel_add_conv(context)
                out = out + channel_add_term
            return out

    class BasicConv(nn.Module):
        def __init__(self, in_planes, out_planes, kernel_size, stride=1, padding=0, dilation=1, groups=1, relu=True,
                     bn=True, bias=False):
            super(BasicConv, self).__init__()
            self.out_channels = out_planes
            self.conv = nn.Conv2d(in_planes, out_planes, kernel_size=kernel_size, stride=stride, padding=padding,
                                  dilation=dilation, groups=groups, bias=bias)
            self.bn = nn.BatchNorm2d(out_planes, eps=1e-5, momentum=0.01, affine=True) if bn else None
            self.relu = nn.ReLU() if relu else None

        def forward(self, x):
            x = self.conv(x)
            if self.bn is not None:
                x = self.bn(x)
            if self.relu is not None:
                x = self.relu(x)
            return x

    class ZPool(nn.Module):
        def forward(self, x):
            return torch.cat((torch.max(x, 1)[0].unsqueeze(1), torch.mean(x, 1).unsqueeze(1)), dim=1)

    class AttentionGate(nn.Module):
        def __init__(self):
            super(AttentionGate, self).__init__()
            kernel_size = 7
            self.compress = ZPool()
            self.conv = BasicConv(2, 1, kernel_size, stride=1, padding=(kernel_size - 1) // 2, relu=False)

        def forward(self, x):
            x_compress = self.compress(x)
            x_out = self.conv(x_compress)
            scale = torch.sigmoid_(x_out)
            return x * scale

    class TripletAttention(nn.Module):
        def __init__(self, no_spatial=False):
            super(TripletAttention, self).__init__()
            self.cw = AttentionGate()
            self.hc = AttentionGate()
            self.no_spatial = no_spatial
            if not no_spatial:
                self.hw = AttentionGate()

        def forward(self, x):
            x_perm1 = x.permute(0, 2, 1, 3).contiguous()
            x_out1 = self.cw(x_perm1)
            x_out11 = x_out1.permute(0, 2, 1, 3).contiguous()
            x_perm2 = x.permute(0, 3, 2, 1).contiguous()
            x_out2 = self.hc(x_perm2)
            x_out21 = x_out2.permute(0, 3, 2, 1).contiguous()
            if not self.no_spatial:
                x_out = self.hw(x)
                x_out = 1 / 3 * (x_out + x_out11 + x_out21)
            else:
                x_out = 1 / 2 * (x_out11 + x_out21)
            return x_out

    class Net(nn.Module):
        def __init__(self, num_classes=3):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6),
                                      nn.ReLU(inplace=True))
            self.eca = eca_layer(6)
            self.gc = ContextBlock(6, ratio=1. / 2, fusion_types=('channel_add', 'channel_mul'))
            self.triplet = TripletAttention()
            self.fc = nn.Linear(6, num_classes)

        def forward(self, x):
            x = self.stem(x)
            x = self.triplet(self.gc(self.eca(x)))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    model = Net()
    init = load(m, model, state)
    ema = copy.deepcopy(model)
    for p in ema.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, nesterov=True, weight_decay=5e-4)
    warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.5, total_iters=1)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=3)
    scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warmup, cosine], milestones=[1])
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for _ in range(3):
        model.train()
        x, y = torch.from_numpy(normal(rng, 2, 3, 5, 5)), torch.from_numpy(rng.integers(0, 3, 2))
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        with torch.no_grad():
            ema_params, params = list(ema.parameters()), list(model.parameters())
            torch._foreach_mul_(ema_params, 0.9)
            torch._foreach_add_(ema_params, params, alpha=0.1)
            for b_ema, b in zip(ema.buffers(), model.buffers()):
                b_ema.copy_(b)
        losses += [loss.item(), scheduler.get_last_lr()[0]]
    ema.eval()
    with torch.inference_mode():
        x = torch.from_numpy(normal(rng, 2, 3, 5, 5))
        logits = ema(x)
    return init, losses + logits.flatten().tolist() + summary(model.parameters()) + summary(ema.parameters())


def test_attention_blocks():
    compare(attention_blocks)


# (n) NVIDIA/tacotron2 (model.py, layers.py, utils.py, loss_function.py, train.py), at toy sizes: LinearNorm and
# ConvNorm with xavier_uniform_(gain=calculate_gain(w_init_gain)); the encoder's ConvNorm-BatchNorm1d-ReLU stack into a
# packed bidirectional LSTM (input_lengths.cpu().numpy(), flatten_parameters); the decoder's Prenet, attention and
# decoder LSTMCells with states made by memory.data.new(B, n).zero_() in Variables, location-sensitive attention (a
# Conv1d over torch.cat of the previous and cumulative weights, `alignment.data.masked_fill_(mask, -inf)` on a tensor of
# the graph, `self.attention_weights_cum += self.attention_weights` after torch.cat read it), teacher forcing over
# parsed decoder inputs, torch.stack'd outputs; the postnet's tanh residual; get_mask_from_lengths by torch.arange(0,
# max_len, out=torch.LongTensor(max_len)) (the CPU spelling of its torch.cuda.LongTensor); parse_output's masked_fill_
# through .data of mask.expand(...).permute; Tacotron2Loss (targets' requires_grad = False, two MSELoss and
# BCEWithLogitsLoss of the gate); Adam with weight decay, clip_grad_norm_ and math.isnan of its result. Numpy draws the
# Prenet's and encoder's always-on dropout masks; the conv biases before BatchNorm are frozen (their gradient is
# rounding alone, which Adam would normalise into a full step)
def tacotron2(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Variable = torch.autograd.Variable
    torch.manual_seed(13)
    rng = np.random.default_rng(13)

    def dropout(x, p, training=True):  # F.dropout(x, p, training) with numpy's mask
        if not training or p == 0:
            return x
        keep = torch.from_numpy((rng.random(tuple(x.shape)) >= p).astype(np.float32))
        return x * keep / (1 - p)

    class hparams:
        n_symbols, symbols_embedding_dim, encoder_kernel_size = 6, 4, 3
        encoder_n_convolutions, encoder_embedding_dim = 1, 4
        n_mel_channels, n_frames_per_step, attention_rnn_dim, decoder_rnn_dim, prenet_dim = 3, 1, 4, 4, 3
        attention_dim, attention_location_n_filters, attention_location_kernel_size = 3, 2, 3
        postnet_embedding_dim, postnet_kernel_size, postnet_n_convolutions = 3, 3, 2
        p_attention_dropout, p_decoder_dropout, max_decoder_steps, gate_threshold = 0.0, 0.0, 10, 0.5
        mask_padding, fp16_run, learning_rate, weight_decay, grad_clip_thresh = True, False, 1e-3, 1e-6, 1.0

    def get_mask_from_lengths(lengths):
        max_len = torch.max(lengths).item()
        ids = torch.arange(0, max_len, out=torch.LongTensor(max_len))
        mask = (ids < lengths.unsqueeze(1)).bool()
        return mask

    def to_gpu(x):
        x = x.contiguous()
        if torch.cuda.is_available():
            x = x.cuda(non_blocking=True)
        return torch.autograd.Variable(x)

    class LinearNorm(torch.nn.Module):
        def __init__(self, in_dim, out_dim, bias=True, w_init_gain='linear'):
            super(LinearNorm, self).__init__()
            self.linear_layer = torch.nn.Linear(in_dim, out_dim, bias=bias)
            torch.nn.init.xavier_uniform_(self.linear_layer.weight, gain=torch.nn.init.calculate_gain(w_init_gain))

        def forward(self, x):
            return self.linear_layer(x)

    class ConvNorm(torch.nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=None, dilation=1, bias=True,
                     w_init_gain='linear'):
            super(ConvNorm, self).__init__()
            if padding is None:
                assert (kernel_size % 2 == 1)
                padding = int(dilation * (kernel_size - 1) / 2)
            self.conv = torch.nn.Conv1d(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                                        padding=padding, dilation=dilation, bias=bias)
            torch.nn.init.xavier_uniform_(self.conv.weight, gain=torch.nn.init.calculate_gain(w_init_gain))

        def forward(self, signal):
            conv_signal = self.conv(signal)
            return conv_signal

    class LocationLayer(nn.Module):
        def __init__(self, attention_n_filters, attention_kernel_size, attention_dim):
            super(LocationLayer, self).__init__()
            padding = int((attention_kernel_size - 1) / 2)
            self.location_conv = ConvNorm(2, attention_n_filters, kernel_size=attention_kernel_size, padding=padding,
                                          bias=False, stride=1, dilation=1)
            self.location_dense = LinearNorm(attention_n_filters, attention_dim, bias=False, w_init_gain='tanh')

        def forward(self, attention_weights_cat):
            processed_attention = self.location_conv(attention_weights_cat)
            processed_attention = processed_attention.transpose(1, 2)
            processed_attention = self.location_dense(processed_attention)
            return processed_attention

    class Attention(nn.Module):
        def __init__(self, attention_rnn_dim, embedding_dim, attention_dim, attention_location_n_filters,
                     attention_location_kernel_size):
            super(Attention, self).__init__()
            self.query_layer = LinearNorm(attention_rnn_dim, attention_dim, bias=False, w_init_gain='tanh')
            self.memory_layer = LinearNorm(embedding_dim, attention_dim, bias=False, w_init_gain='tanh')
            self.v = LinearNorm(attention_dim, 1, bias=False)
            self.location_layer = LocationLayer(attention_location_n_filters, attention_location_kernel_size,
                                                attention_dim)
            self.score_mask_value = -float("inf")

        def get_alignment_energies(self, query, processed_memory, attention_weights_cat):
            processed_query = self.query_layer(query.unsqueeze(1))
            processed_attention_weights = self.location_layer(attention_weights_cat)
            energies = self.v(torch.tanh(processed_query + processed_attention_weights + processed_memory))
            energies = energies.squeeze(-1)
            return energies

        def forward(self, attention_hidden_state, memory, processed_memory, attention_weights_cat, mask):
            alignment = self.get_alignment_energies(attention_hidden_state, processed_memory, attention_weights_cat)
            if mask is not None:
                alignment.data.masked_fill_(mask, self.score_mask_value)
            attention_weights = F.softmax(alignment, dim=1)
            attention_context = torch.bmm(attention_weights.unsqueeze(1), memory)
            attention_context = attention_context.squeeze(1)
            return attention_context, attention_weights

    class Prenet(nn.Module):
        def __init__(self, in_dim, sizes):
            super(Prenet, self).__init__()
            in_sizes = [in_dim] + sizes[:-1]
            self.layers = nn.ModuleList(
                [LinearNorm(in_size, out_size, bias=False) for (in_size, out_size) in zip(in_sizes, sizes)])

        def forward(self, x):
            for linear in self.layers:
                x = dropout(F.relu(linear(x)), p=0.5, training=True)
            return x

    class Postnet(nn.Module):
        def __init__(self, hparams):
            super(Postnet, self).__init__()
            self.convolutions = nn.ModuleList()
            self.convolutions.append(nn.Sequential(
                ConvNorm(hparams.n_mel_channels, hparams.postnet_embedding_dim,
                         kernel_size=hparams.postnet_kernel_size, stride=1,
                         padding=int((hparams.postnet_kernel_size - 1) / 2), dilation=1, w_init_gain='tanh'),
                nn.BatchNorm1d(hparams.postnet_embedding_dim)))
            for i in range(1, hparams.postnet_n_convolutions - 1):
                self.convolutions.append(nn.Sequential(
                    ConvNorm(hparams.postnet_embedding_dim, hparams.postnet_embedding_dim,
                             kernel_size=hparams.postnet_kernel_size, stride=1,
                             padding=int((hparams.postnet_kernel_size - 1) / 2), dilation=1, w_init_gain='tanh'),
                    nn.BatchNorm1d(hparams.postnet_embedding_dim)))
            self.convolutions.append(nn.Sequential(
                ConvNorm(hparams.postnet_embedding_dim, hparams.n_mel_channels,
                         kernel_size=hparams.postnet_kernel_size, stride=1,
                         padding=int((hparams.postnet_kernel_size - 1) / 2), dilation=1, w_init_gain='linear'),
                nn.BatchNorm1d(hparams.n_mel_channels)))

        def forward(self, x):
            for i in range(len(self.convolutions) - 1):
                x = dropout(torch.tanh(self.convolutions[i](x)), 0.5, self.training)
            x = dropout(self.convolutions[-1](x), 0.5, self.training)
            return x

    class Encoder(nn.Module):
        def __init__(self, hparams):
            super(Encoder, self).__init__()
            convolutions = []
            for _ in range(hparams.encoder_n_convolutions):
                conv_layer = nn.Sequential(
                    ConvNorm(hparams.encoder_embedding_dim, hparams.encoder_embedding_dim,
                             kernel_size=hparams.encoder_kernel_size, stride=1,
                             padding=int((hparams.encoder_kernel_size - 1) / 2), dilation=1, w_init_gain='relu'),
                    nn.BatchNorm1d(hparams.encoder_embedding_dim))
                convolutions.append(conv_layer)
            self.convolutions = nn.ModuleList(convolutions)
            self.lstm = nn.LSTM(hparams.encoder_embedding_dim, int(hparams.encoder_embedding_dim / 2), 1,
                                batch_first=True, bidirectional=True)

        def forward(self, x, input_lengths):
            for conv in self.convolutions:
                x = dropout(F.relu(conv(x)), 0.5, self.training)
            x = x.transpose(1, 2)
            # pytorch tensor are not reversible, hence the conversion
            input_lengths = input_lengths.cpu().numpy()
            x = nn.utils.rnn.pack_padded_sequence(x, input_lengths, batch_first=True)
            self.lstm.flatten_parameters()
            outputs, _ = self.lstm(x)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
            return outputs

    class Decoder(nn.Module):
        def __init__(self, hparams):
            super(Decoder, self).__init__()
            self.n_mel_channels = hparams.n_mel_channels
            self.n_frames_per_step = hparams.n_frames_per_step
            self.encoder_embedding_dim = hparams.encoder_embedding_dim
            self.attention_rnn_dim = hparams.attention_rnn_dim
            self.decoder_rnn_dim = hparams.decoder_rnn_dim
            self.prenet_dim = hparams.prenet_dim
            self.p_attention_dropout = hparams.p_attention_dropout
            self.p_decoder_dropout = hparams.p_decoder_dropout
            self.prenet = Prenet(hparams.n_mel_channels * hparams.n_frames_per_step,
                                 [hparams.prenet_dim, hparams.prenet_dim])
            self.attention_rnn = nn.LSTMCell(hparams.prenet_dim + hparams.encoder_embedding_dim,
                                             hparams.attention_rnn_dim)
            self.attention_layer = Attention(hparams.attention_rnn_dim, hparams.encoder_embedding_dim,
                                             hparams.attention_dim, hparams.attention_location_n_filters,
                                             hparams.attention_location_kernel_size)
            self.decoder_rnn = nn.LSTMCell(hparams.attention_rnn_dim + hparams.encoder_embedding_dim,
                                           hparams.decoder_rnn_dim, 1)
            self.linear_projection = LinearNorm(hparams.decoder_rnn_dim + hparams.encoder_embedding_dim,
                                                hparams.n_mel_channels * hparams.n_frames_per_step)
            self.gate_layer = LinearNorm(hparams.decoder_rnn_dim + hparams.encoder_embedding_dim, 1, bias=True,
                                         w_init_gain='sigmoid')

        def get_go_frame(self, memory):
            B = memory.size(0)
            decoder_input = Variable(memory.data.new(B, self.n_mel_channels * self.n_frames_per_step).zero_())
            return decoder_input

        def initialize_decoder_states(self, memory, mask):
            B = memory.size(0)
            MAX_TIME = memory.size(1)
            self.attention_hidden = Variable(memory.data.new(B, self.attention_rnn_dim).zero_())
            self.attention_cell = Variable(memory.data.new(B, self.attention_rnn_dim).zero_())
            self.decoder_hidden = Variable(memory.data.new(B, self.decoder_rnn_dim).zero_())
            self.decoder_cell = Variable(memory.data.new(B, self.decoder_rnn_dim).zero_())
            self.attention_weights = Variable(memory.data.new(B, MAX_TIME).zero_())
            self.attention_weights_cum = Variable(memory.data.new(B, MAX_TIME).zero_())
            self.attention_context = Variable(memory.data.new(B, self.encoder_embedding_dim).zero_())
            self.memory = memory
            self.processed_memory = self.attention_layer.memory_layer(memory)
            self.mask = mask

        def parse_decoder_inputs(self, decoder_inputs):
            # (B, n_mel_channels, T_out) -> (B, T_out, n_mel_channels)
            decoder_inputs = decoder_inputs.transpose(1, 2)
            decoder_inputs = decoder_inputs.view(decoder_inputs.size(0),
                                                 int(decoder_inputs.size(1) / self.n_frames_per_step), -1)
            # (B, T_out, n_mel_channels) -> (T_out, B, n_mel_channels)
            decoder_inputs = decoder_inputs.transpose(0, 1)
            return decoder_inputs

        def parse_decoder_outputs(self, mel_outputs, gate_outputs, alignments):
            # (T_out, B) -> (B, T_out)
            alignments = torch.stack(alignments).transpose(0, 1)
            # (T_out, B) -> (B, T_out)
            gate_outputs = torch.stack(gate_outputs).transpose(0, 1)
            gate_outputs = gate_outputs.contiguous()
            # (T_out, B, n_mel_channels) -> (B, T_out, n_mel_channels)
            mel_outputs = torch.stack(mel_outputs).transpose(0, 1).contiguous()
            # decouple frames per step
            mel_outputs = mel_outputs.view(mel_outputs.size(0), -1, self.n_mel_channels)
            # (B, T_out, n_mel_channels) -> (B, n_mel_channels, T_out)
            mel_outputs = mel_outputs.transpose(1, 2)
            return mel_outputs, gate_outputs, alignments

        def decode(self, decoder_input):
            cell_input = torch.cat((decoder_input, self.attention_context), -1)
            self.attention_hidden, self.attention_cell = self.attention_rnn(
                cell_input, (self.attention_hidden, self.attention_cell))
            self.attention_hidden = F.dropout(self.attention_hidden, self.p_attention_dropout, self.training)
            attention_weights_cat = torch.cat(
                (self.attention_weights.unsqueeze(1), self.attention_weights_cum.unsqueeze(1)), dim=1)
            self.attention_context, self.attention_weights = self.attention_layer(
                self.attention_hidden, self.memory, self.processed_memory, attention_weights_cat, self.mask)
            self.attention_weights_cum += self.attention_weights
            decoder_input = torch.cat((self.attention_hidden, self.attention_context), -1)
            self.decoder_hidden, self.decoder_cell = self.decoder_rnn(
                decoder_input, (self.decoder_hidden, self.decoder_cell))
            self.decoder_hidden = F.dropout(self.decoder_hidden, self.p_decoder_dropout, self.training)
            decoder_hidden_attention_context = torch.cat((self.decoder_hidden, self.attention_context), dim=1)
            decoder_output = self.linear_projection(decoder_hidden_attention_context)
            gate_prediction = self.gate_layer(decoder_hidden_attention_context)
            return decoder_output, gate_prediction, self.attention_weights

        def forward(self, memory, decoder_inputs, memory_lengths):
            decoder_input = self.get_go_frame(memory).unsqueeze(0)
            decoder_inputs = self.parse_decoder_inputs(decoder_inputs)
            decoder_inputs = torch.cat((decoder_input, decoder_inputs), dim=0)
            decoder_inputs = self.prenet(decoder_inputs)
            self.initialize_decoder_states(memory, mask=~get_mask_from_lengths(memory_lengths))
            mel_outputs, gate_outputs, alignments = [], [], []
            while len(mel_outputs) < decoder_inputs.size(0) - 1:
                decoder_input = decoder_inputs[len(mel_outputs)]
                mel_output, gate_output, attention_weights = self.decode(decoder_input)
                mel_outputs += [mel_output.squeeze(1)]
                gate_outputs += [gate_output.squeeze(1)]
                alignments += [attention_weights]
            mel_outputs, gate_outputs, alignments = self.parse_decoder_outputs(mel_outputs, gate_outputs, alignments)
            return mel_outputs, gate_outputs, alignments

    class Tacotron2(nn.Module):
        def __init__(self, hparams):
            super(Tacotron2, self).__init__()
            self.mask_padding = hparams.mask_padding
            self.fp16_run = hparams.fp16_run
            self.n_mel_channels = hparams.n_mel_channels
            self.n_frames_per_step = hparams.n_frames_per_step
            self.embedding = nn.Embedding(hparams.n_symbols, hparams.symbols_embedding_dim)
            std = math.sqrt(2.0 / (hparams.n_symbols + hparams.symbols_embedding_dim))
            val = math.sqrt(3.0) * std  # uniform bounds for std
            self.embedding.weight.data.uniform_(-val, val)
            self.encoder = Encoder(hparams)
            self.decoder = Decoder(hparams)
            self.postnet = Postnet(hparams)

        def parse_batch(self, batch):
            text_padded, input_lengths, mel_padded, gate_padded, output_lengths = batch
            text_padded = to_gpu(text_padded).long()
            input_lengths = to_gpu(input_lengths).long()
            max_len = torch.max(input_lengths.data).item()
            mel_padded = to_gpu(mel_padded).float()
            gate_padded = to_gpu(gate_padded).float()
            output_lengths = to_gpu(output_lengths).long()
            return ((text_padded, input_lengths, mel_padded, max_len, output_lengths), (mel_padded, gate_padded))

        def parse_output(self, outputs, output_lengths=None):
            if self.mask_padding and output_lengths is not None:
                mask = ~get_mask_from_lengths(output_lengths)
                mask = mask.expand(self.n_mel_channels, mask.size(0), mask.size(1))
                mask = mask.permute(1, 0, 2)
                outputs[0].data.masked_fill_(mask, 0.0)
                outputs[1].data.masked_fill_(mask, 0.0)
                outputs[2].data.masked_fill_(mask[:, 0, :], 1e3)  # gate energies
            return outputs

        def forward(self, inputs):
            text_inputs, text_lengths, mels, max_len, output_lengths = inputs
            text_lengths, output_lengths = text_lengths.data, output_lengths.data
            embedded_inputs = self.embedding(text_inputs).transpose(1, 2)
            encoder_outputs = self.encoder(embedded_inputs, text_lengths)
            mel_outputs, gate_outputs, alignments = self.decoder(encoder_outputs, mels, memory_lengths=text_lengths)
            mel_outputs_postnet = self.postnet(mel_outputs)
            mel_outputs_postnet = mel_outputs + mel_outputs_postnet
            return self.parse_output([mel_outputs, mel_outputs_postnet, gate_outputs, alignments], output_lengths)

    class Tacotron2Loss(nn.Module):
        def __init__(self):
            super(Tacotron2Loss, self).__init__()

        def forward(self, model_output, targets):
            mel_target, gate_target = targets[0], targets[1]
            mel_target.requires_grad = False
            gate_target.requires_grad = False
            gate_target = gate_target.view(-1, 1)
            mel_out, mel_out_postnet, gate_out, _ = model_output
            gate_out = gate_out.view(-1, 1)
            mel_loss = nn.MSELoss()(mel_out, mel_target) + nn.MSELoss()(mel_out_postnet, mel_target)
            gate_loss = nn.BCEWithLogitsLoss()(gate_out, gate_target)
            return mel_loss + gate_loss

    model = Tacotron2(hparams)
    for name, p in model.named_parameters():
        if name.endswith('conv.bias'):
            p.requires_grad = False
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=hparams.learning_rate, weight_decay=hparams.weight_decay)
    criterion = Tacotron2Loss()
    model.train()
    # TextMelCollate's batch: texts padded with zeros, sorted by decreasing length; mels and gates padded
    text_padded = torch.from_numpy(np.stack([rng.integers(1, hparams.n_symbols, 4),
                                             np.r_[rng.integers(1, hparams.n_symbols, 3), 0]]))
    input_lengths = torch.LongTensor([4, 3])
    mel_padded = torch.from_numpy(normal(rng, 2, hparams.n_mel_channels, 3))
    mel_padded[1, :, 2] = 0
    gate_padded = torch.FloatTensor([[0, 0, 1], [0, 1, 1]])
    output_lengths = torch.LongTensor([3, 2])
    x, y = model.parse_batch((text_padded, input_lengths, mel_padded, gate_padded, output_lengths))
    model.zero_grad()
    y_pred = model(x)
    loss = criterion(y_pred, y)
    reduced_loss = loss.item()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), hparams.grad_clip_thresh)
    optimizer.step()
    assert not math.isnan(grad_norm)
    alignments = y_pred[3]
    return init, [reduced_loss, float(grad_norm)] + alignments.flatten().tolist() + y_pred[1].flatten().tolist() + \
        summary(model.parameters())


def test_tacotron2():
    compare(tacotron2)


# (o) karpathy/minGPT (mingpt/model.py, mingpt/trainer.py, mingpt/utils.py, projects' demo.ipynb sort task): CfgNode;
# NewGELU by torch.tanh and torch.pow; CausalSelfAttention with its tril mask registered as the buffer "bias" and
# masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf')); the MLP in an nn.ModuleDict called through a lambda; the
# transformer as nn.ModuleDict(dict(wte=..., h=nn.ModuleList(...), ...)); self.apply(self._init_weights) and the scaled
# c_proj init; configure_optimizers' decay and no_decay sets over named_modules x named_parameters, checked by set
# algebra, two AdamW groups; the Trainer's DataLoader over RandomSampler(replacement=True, num_samples=int(1e10))
# (which found that tnet drew all 1e10 indices at once), zero_grad(set_to_none=True), clip_grad_norm_, callbacks from a
# defaultdict(list); generate's greedy topk with the top_k filter `logits[logits < v[:, [-1]]] = -float('Inf')` and
# eval_split's (sol == sol_candidate).all(1). The sort data set reads its sequences from a numpy table; torch replays
# the indices tnet's sampler drew (`replay`). The key third of c_attn.bias is left out of the summary: softmax ignores
# it, so its gradient is rounding alone, which AdamW normalises into a full step
def mingpt(m, state=None, replay=None):
    torch, nn, F = m.torch, m.nn, m.F
    DataLoader, Dataset = m.data.DataLoader, m.data.Dataset
    from collections import defaultdict
    import time
    torch.manual_seed(14)
    rng = np.random.default_rng(14)
    table = rng.integers(0, 3, (5, 2))

    class CfgNode:
        """ a lightweight configuration class inspired by yacs """

        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

        def merge_from_dict(self, d):
            self.__dict__.update(d)

    class SortDataset(Dataset):
        def __init__(self, split, length=2, num_digits=3):
            assert split in {'train', 'test'}
            self.split = split
            self.length = length
            self.num_digits = num_digits
            self.seen = []

        def __len__(self):
            return len(table)

        def get_vocab_size(self):
            return self.num_digits

        def get_block_size(self):
            return self.length * 2 - 1

        def __getitem__(self, idx):
            self.seen.append(int(idx))
            inp = torch.from_numpy(table[idx]).long()
            sol = torch.sort(inp)[0]
            cat = torch.cat((inp, sol), dim=0)
            x = cat[:-1].clone()
            y = cat[1:].clone()
            y[:self.length - 1] = -1
            return x, y

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd)
            self.attn_dropout = nn.Dropout(config.attn_pdrop)
            self.resid_dropout = nn.Dropout(config.resid_pdrop)
            self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                 .view(1, 1, config.block_size, config.block_size))
            self.n_head = config.n_head
            self.n_embd = config.n_embd

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
            y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side
            y = self.resid_dropout(self.c_proj(y))
            return y

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = nn.LayerNorm(config.n_embd)
            self.mlp = nn.ModuleDict(dict(
                c_fc=nn.Linear(config.n_embd, 4 * config.n_embd),
                c_proj=nn.Linear(4 * config.n_embd, config.n_embd),
                act=NewGELU(),
                dropout=nn.Dropout(config.resid_pdrop),
            ))
            m = self.mlp
            self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))  # MLP forward

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlpf(self.ln_2(x))
            return x

    class GPT(nn.Module):
        @staticmethod
        def get_default_config():
            C = CfgNode()
            C.model_type = 'gpt'
            C.n_layer = None
            C.n_head = None
            C.n_embd = None
            C.vocab_size = None
            C.block_size = None
            C.embd_pdrop = 0.1
            C.resid_pdrop = 0.1
            C.attn_pdrop = 0.1
            return C

        def __init__(self, config):
            super().__init__()
            assert config.vocab_size is not None
            assert config.block_size is not None
            self.block_size = config.block_size
            type_given = config.model_type is not None
            params_given = all([config.n_layer is not None, config.n_head is not None, config.n_embd is not None])
            assert type_given ^ params_given  # exactly one of these (XOR)
            if type_given:
                config.merge_from_dict({'gpt-nano': dict(n_layer=3, n_head=3, n_embd=48),
                                        'gpt-pico': dict(n_layer=1, n_head=2, n_embd=8)}[config.model_type])
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.embd_pdrop),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
            n_params = sum(p.numel() for p in self.transformer.parameters())
            self.n_params = n_params

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            elif isinstance(module, nn.LayerNorm):
                torch.nn.init.zeros_(module.bias)
                torch.nn.init.ones_(module.weight)

        def configure_optimizers(self, train_config):
            decay = set()
            no_decay = set()
            whitelist_weight_modules = (torch.nn.Linear, )
            blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
            for mn, m in self.named_modules():
                for pn, p in m.named_parameters():
                    fpn = '%s.%s' % (mn, pn) if mn else pn  # full param name
                    if pn.endswith('bias'):
                        no_decay.add(fpn)
                    elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):
                        decay.add(fpn)
                    elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):
                        no_decay.add(fpn)
            param_dict = {pn: p for pn, p in self.named_parameters()}
            inter_params = decay & no_decay
            union_params = decay | no_decay
            assert len(inter_params) == 0, \
                "parameters %s made it into both decay/no_decay sets!" % (str(inter_params), )
            assert len(param_dict.keys() - union_params) == 0, \
                "parameters %s were not separated into either decay/no_decay set!" \
                % (str(param_dict.keys() - union_params), )
            optim_groups = [
                {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": train_config.weight_decay},
                {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
            ]
            optimizer = torch.optim.AdamW(optim_groups, lr=train_config.learning_rate, betas=train_config.betas)
            return optimizer

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
            pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)  # shape (1, t)
            tok_emb = self.transformer.wte(idx)  # token embeddings of shape (b, t, n_embd)
            pos_emb = self.transformer.wpe(pos)  # position embeddings of shape (1, t, n_embd)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            logits = self.lm_head(x)
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, top_k)
                    logits[logits < v[:, [-1]]] = -float('Inf')
                probs = F.softmax(logits, dim=-1)
                if do_sample:
                    idx_next = torch.multinomial(probs, num_samples=1)
                else:
                    _, idx_next = torch.topk(probs, k=1, dim=-1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    class Trainer:
        @staticmethod
        def get_default_config():
            C = CfgNode()
            C.device = 'auto'
            C.num_workers = 4
            C.max_iters = None
            C.batch_size = 64
            C.learning_rate = 3e-4
            C.betas = (0.9, 0.95)
            C.weight_decay = 0.1  # only applied on matmul weights
            C.grad_norm_clip = 1.0
            return C

        def __init__(self, config, model, train_dataset):
            self.config = config
            self.model = model
            self.optimizer = None
            self.train_dataset = train_dataset
            self.callbacks = defaultdict(list)
            if config.device == 'auto':
                self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
            else:
                self.device = config.device
            self.model = self.model.to(self.device)
            self.iter_num = 0
            self.iter_time = 0.0
            self.iter_dt = 0.0

        def add_callback(self, onevent: str, callback):
            self.callbacks[onevent].append(callback)

        def set_callback(self, onevent: str, callback):
            self.callbacks[onevent] = [callback]

        def trigger_callbacks(self, onevent: str):
            for callback in self.callbacks.get(onevent, []):
                callback(self)

        def run(self):
            model, config = self.model, self.config
            self.optimizer = model.configure_optimizers(config)
            sampler = torch.utils.data.RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10))
            if 'indices' in replay:  # torch replays tnet's draws
                sampler = replay['indices']
            train_loader = DataLoader(
                self.train_dataset,
                sampler=sampler,
                shuffle=False,
                pin_memory=True,
                batch_size=config.batch_size,
                num_workers=config.num_workers,
            )
            model.train()
            self.iter_num = 0
            self.iter_time = time.time()
            data_iter = iter(train_loader)
            while True:
                try:
                    batch = next(data_iter)
                except StopIteration:
                    data_iter = iter(train_loader)
                    batch = next(data_iter)
                batch = [t.to(self.device) for t in batch]
                x, y = batch
                logits, self.loss = model(x, y)
                model.zero_grad(set_to_none=True)
                self.loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
                self.optimizer.step()
                self.trigger_callbacks('on_batch_end')
                self.iter_num += 1
                tnow = time.time()
                self.iter_dt = tnow - self.iter_time
                self.iter_time = tnow
                if config.max_iters is not None and self.iter_num >= config.max_iters:
                    break

    train_dataset = SortDataset('train')
    model_config = GPT.get_default_config()
    model_config.model_type = 'gpt-pico'
    model_config.vocab_size = train_dataset.get_vocab_size()
    model_config.block_size = train_dataset.get_block_size()
    model_config.embd_pdrop = model_config.resid_pdrop = model_config.attn_pdrop = 0.0
    model = GPT(model_config)
    init = load(m, model, state)
    train_config = Trainer.get_default_config()
    train_config.learning_rate = 5e-3
    train_config.max_iters = 2
    train_config.batch_size = 4
    train_config.num_workers = 0
    trainer = Trainer(train_config, model, train_dataset)
    losses = []

    def batch_end_callback(trainer):
        losses.append(trainer.loss.item())
        if trainer.iter_num % 100 == 0:
            print(f"iter_dt {trainer.iter_dt * 1000:.2f}ms; "
                  f"iter {trainer.iter_num}: train loss {trainer.loss.item():.5f}")
    trainer.set_callback('on_batch_end', batch_end_callback)
    trainer.run()
    replay.setdefault('indices', list(train_dataset.seen))
    n = train_dataset.length
    model.eval()
    with torch.no_grad():
        x, y = next(iter(DataLoader(train_dataset, batch_size=100, num_workers=0, drop_last=False)))
        inp = x[:, :n]
        sol = y[:, -n:]
        cat = model.generate(inp, n, do_sample=False, top_k=2)  # greedy: the top-k filter keeps the argmax
        sol_candidate = cat[:, n:]
        correct = (sol == sol_candidate).all(1).cpu()
    d = model_config.n_embd
    kept = [p for name, p in model.named_parameters() if not name.endswith('c_attn.bias')]
    thirds = [block.attn.c_attn.bias[i * d:(i + 1) * d] for block in model.transformer.h for i in (0, 2)]
    return init, losses + cat.flatten().tolist() + [int(correct.sum()), model.n_params] + \
        summary(kept) + summary(thirds)


def test_mingpt():
    compare(mingpt, replay={})


# (p) williamleif/graphsage-simple (graphsage/aggregators.py, encoders.py, model.py's run_cora), in its PyTorch 0.3
# style: MeanAggregator with `self.cuda = cuda` (a bool shadowing Module.cuda), neighbour sets, a mask of
# Variable(torch.zeros(...)) written by mask[row_indices, column_indices] = 1 from Python lists, mask.div of its row
# sums and mask.mm of the embedded neighbours; Encoder's nn.Parameter(torch.FloatTensor(...)) filled by the deprecated
# init.xavier_uniform, `if base_model != None`, the second layer's features a lambda over the first encoder
# (enc1(nodes).t(), nodes a LongTensor iterated by int(node)); features as an Embedding whose weight is replaced by
# nn.Parameter(torch.FloatTensor(feat_data), requires_grad=False); SupervisedGraphSage's scores.t() into
# CrossEntropyLoss of labels.squeeze(); SGD over filter(lambda p: p.requires_grad, ...) at lr=0.7, random.shuffle of
# the training nodes (Python's random, seeded alike on both sides), val_output.data.numpy().argmax(axis=1). Two
# branches this run does not take are mended for Python 3: random.sample of sorted(to_neigh) (3.11 refuses a set)
# and the gcn union by | (the source's set + set raises)
def graphsage(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init = nn.init
    Variable = torch.autograd.Variable
    import random
    torch.manual_seed(15)
    random.seed(1)
    rng = np.random.default_rng(15)

    class MeanAggregator(nn.Module):
        """
        Aggregates a node's embeddings using mean of neighbors' embeddings
        """

        def __init__(self, features, cuda=False, gcn=False):
            super(MeanAggregator, self).__init__()
            self.features = features
            self.cuda = cuda
            self.gcn = gcn

        def forward(self, nodes, to_neighs, num_sample=10):
            # Local pointers to functions (speed hack)
            _set = set
            if num_sample is not None:
                _sample = random.sample
                samp_neighs = [_set(_sample(sorted(to_neigh), num_sample)) if len(to_neigh) >= num_sample else to_neigh
                               for to_neigh in to_neighs]
            else:
                samp_neighs = to_neighs
            if self.gcn:
                samp_neighs = [samp_neigh | set([nodes[i]]) for i, samp_neigh in enumerate(samp_neighs)]
            unique_nodes_list = list(set.union(*samp_neighs))
            unique_nodes = {n: i for i, n in enumerate(unique_nodes_list)}
            mask = Variable(torch.zeros(len(samp_neighs), len(unique_nodes)))
            column_indices = [unique_nodes[n] for samp_neigh in samp_neighs for n in samp_neigh]
            row_indices = [i for i in range(len(samp_neighs)) for j in range(len(samp_neighs[i]))]
            mask[row_indices, column_indices] = 1
            if self.cuda:
                mask = mask.cuda()
            num_neigh = mask.sum(1, keepdim=True)
            mask = mask.div(num_neigh)
            if self.cuda:
                embed_matrix = self.features(torch.LongTensor(unique_nodes_list).cuda())
            else:
                embed_matrix = self.features(torch.LongTensor(unique_nodes_list))
            to_feats = mask.mm(embed_matrix)
            return to_feats

    class Encoder(nn.Module):
        """
        Encodes a node's using 'convolutional' GraphSage approach
        """

        def __init__(self, features, feature_dim, embed_dim, adj_lists, aggregator, num_sample=10, base_model=None,
                     gcn=False, cuda=False, feature_transform=False):
            super(Encoder, self).__init__()
            self.features = features
            self.feat_dim = feature_dim
            self.adj_lists = adj_lists
            self.aggregator = aggregator
            self.num_sample = num_sample
            if base_model != None:  # noqa: E711
                self.base_model = base_model
            self.gcn = gcn
            self.embed_dim = embed_dim
            self.cuda = cuda
            self.aggregator.cuda = cuda
            self.weight = nn.Parameter(torch.FloatTensor(embed_dim, self.feat_dim if self.gcn else 2 * self.feat_dim))
            init.xavier_uniform(self.weight)

        def forward(self, nodes):
            neigh_feats = self.aggregator.forward(nodes, [self.adj_lists[int(node)] for node in nodes],
                                                  self.num_sample)
            if not self.gcn:
                if self.cuda:
                    self_feats = self.features(torch.LongTensor(nodes).cuda())
                else:
                    self_feats = self.features(torch.LongTensor(nodes))
                combined = torch.cat([self_feats, neigh_feats], dim=1)
            else:
                combined = neigh_feats
            combined = F.relu(self.weight.mm(combined.t()))
            return combined

    class SupervisedGraphSage(nn.Module):
        def __init__(self, num_classes, enc):
            super(SupervisedGraphSage, self).__init__()
            self.enc = enc
            self.xent = nn.CrossEntropyLoss()
            self.weight = nn.Parameter(torch.FloatTensor(num_classes, enc.embed_dim))
            init.xavier_uniform(self.weight)

        def forward(self, nodes):
            embeds = self.enc(nodes)
            scores = self.weight.mm(embeds)
            return scores.t()

        def loss(self, nodes, labels):
            scores = self.forward(nodes)
            return self.xent(scores, labels.squeeze())

    num_nodes, num_feats, num_classes = 12, 6, 3
    feat_data = (rng.random((num_nodes, num_feats)) < 0.5).astype(np.float32)
    labels = rng.integers(0, num_classes, (num_nodes, 1))
    adj_lists = {i: set() for i in range(num_nodes)}
    for a, b in zip(range(num_nodes), rng.permutation(num_nodes)):
        if a != b:
            adj_lists[a].add(int(b))
            adj_lists[int(b)].add(a)
    for i in range(num_nodes):
        adj_lists[i].add((i + 1) % num_nodes)
        adj_lists[(i + 1) % num_nodes].add(i)
    features = nn.Embedding(num_nodes, num_feats)
    features.weight = nn.Parameter(torch.FloatTensor(feat_data), requires_grad=False)
    agg1 = MeanAggregator(features, cuda=True)
    enc1 = Encoder(features, num_feats, 5, adj_lists, agg1, gcn=True, cuda=False)
    agg2 = MeanAggregator(lambda nodes: enc1(nodes).t(), cuda=False)
    enc2 = Encoder(lambda nodes: enc1(nodes).t(), enc1.embed_dim, 4, adj_lists, agg2, base_model=enc1, gcn=True,
                   cuda=False)
    enc1.num_samples = 5
    enc2.num_samples = 10
    graphsage = SupervisedGraphSage(num_classes, enc2)
    init_state = load(m, graphsage, state)
    rand_indices = rng.permutation(num_nodes)
    val = rand_indices[:4]
    train = list(rand_indices[4:])
    optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, graphsage.parameters()), lr=0.7)
    losses = []
    for batch in range(2):
        batch_nodes = train[:5]
        random.shuffle(train)
        optimizer.zero_grad()
        loss = graphsage.loss(batch_nodes, Variable(torch.LongTensor(labels[np.array(batch_nodes)])))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    val_output = graphsage.forward(val)
    f1 = float((labels[val, 0] == val_output.data.numpy().argmax(axis=1)).mean())  # micro F1: the accuracy
    assert not features.weight.requires_grad and graphsage.enc.aggregator.cuda is False
    return init_state, losses + val_output.flatten().tolist() + [f1] + summary(graphsage.parameters())


def test_graphsage():
    compare(graphsage)
