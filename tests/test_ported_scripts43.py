"""Training-recipe and self-supervised code the earlier files leave out, written from memory in its sources' styles
and ported by its imports alone, as test_ported_scripts.py: optimizers written as torch.optim.Optimizer subclasses
(juntang-zhuang's AdaBelief with its rectification buffer and a state_dict round trip, clovaai's AdamP and SGDP
projections, sail-sg's Adan in its foreach and single-tensor forms, NovoGrad's per-layer second moment, Yong et al.'s
gradient centralization, GSAM's surrogate-gap gradient decomposition over a base optimizer, forks of torch 2's own
sgd.py and adam.py); self-supervised losses (NNCLR's nearest-neighbour support queue, NPID's memory bank updated
inside a custom autograd Function's backward and its weighted kNN evaluation, decoupled contrastive learning, W-MSE's
Cholesky whitening, solo-learn's and open_clip's gathered contrastive losses in a one-rank process group, SCAN's
clustering and self-labelling); face-recognition and metric-learning margins (AdaCos's dynamic scale by a median,
CurricularFace's in-place hard-example reweighting, sub-center ArcFace, Proxy Anchor, SoftTriple, Circle loss);
noisy and long-tailed labels (truncated GCE's per-sample weights, balanced softmax and logit adjustment, Online Label
Smoothing, the bi-tempered logistic loss); zhunzhong07's Random Erasing in a Dataset; Tent's and SHOT's test-time
adaptation; and a checkpoint with RNG states, scheduler, scaler, args and a set, resumed. Each runs in tnet, then in
torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a few
numbers, agree. Numpy draws the batches; where a source draws with torch's generator (a queue's initial contents, a
permutation), numpy draws it here instead and a comment says so.

Fixed in tnet on the way (each with its unit test):
- `import torch.distributed.nn` (CLIP's and SimCLR's losses) raised ModuleNotFoundError: tnet.distributed is now a
  package with nn.all_gather and nn.all_reduce, autograd Functions with torch's gradients (test_distributed.py, over
  two gloo ranks).
- A fork of torch's adam.py or sgd.py failed on its imports from torch.optim.optimizer (ParamsT,
  _use_grad_for_differentiable, _get_value, _default_to_fused_or_foreach, ...) and on
  Optimizer._group_tensors_by_device_and_dtype and _cuda_graph_capture_health_check: all there now, with torch's
  answers (test_optimizers.py); `from torch.optim.adamw import AdamW` and the other per-optimizer module paths import,
  and torch.optim.sgd.sgd, adam.adam and adamw.adamw, the functional steps a fork calls, are there, with
  Adam._init_group for a subclass's own step().
- SHOT's `import torch.nn.utils.weight_norm as weightNorm` raised ModuleNotFoundError: weight_norm and spectral_norm
  are modules too, the package's attributes staying the functions (test_modules.py); tnet.autograd.profiler imports.
- WeightedRandomSampler(replacement=False) raised numpy's ValueError where fewer weights are positive than samples
  are asked (torch draws the zero weights last) and for bad weights: torch.multinomial's draw and RuntimeErrors now
  (test_utils_data.py).
- tnet.save refused sets and bytes, which torch's weights_only load reads (test_serialize.py)."""
import importlib
import math
import os

import numpy as np

from helpers import compare, imports, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def small_cnn(m, classes=5, width=4):
    """A conv-BN-ReLU stem, a scale-invariant second conv (AdamP's projection acts there), a linear head."""
    nn = m.nn
    return nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                         nn.Conv2d(width, width, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(width),
                         nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, classes))


def fit(m, model, optimizer, rng, steps=3, shape=(4, 3, 6, 6), classes=5, scheduler=None):
    """The plain loop these optimizers' READMEs show: zero_grad, forward, cross-entropy, backward, step."""
    losses = []
    for _ in range(steps):
        x = m.torch.tensor(normal(rng, *shape))
        y = m.torch.tensor(rng.integers(0, classes, shape[0]))
        optimizer.zero_grad()
        loss = m.F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


# (a) juntang-zhuang/Adabelief-Optimizer's adabelief_pytorch (0.2): the belief s_t = EMA of (g - m_t)^2 with eps added
# in place, decoupled or L2 weight decay, AMSGrad by torch.max(..., out=), RAdam's rectification with its ten-slot
# buffer list kept in the param group's defaults; the optimizer's state_dict loaded into a fresh one mid-run
def adabelief(m, state=None):
    torch, optim = m.torch, m.optim
    Optimizer = optim.Optimizer
    torch.manual_seed(0)
    rng = np.random.default_rng(3)

    class AdaBelief(Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-16, weight_decay=0, amsgrad=False,
                     weight_decouple=True, fixed_decay=False, rectify=True, degenerated_to_sgd=True):
            if not 0.0 <= lr:
                raise ValueError("Invalid learning rate: {}".format(lr))
            if not 0.0 <= betas[0] < 1.0:
                raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
            self.degenerated_to_sgd = degenerated_to_sgd
            if isinstance(params, (list, tuple)) and len(params) > 0 and isinstance(params[0], dict):
                for param in params:
                    if 'betas' in param and (param['betas'][0] != betas[0] or param['betas'][1] != betas[1]):
                        param['buffer'] = [[None, None, None] for _ in range(10)]
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                            buffer=[[None, None, None] for _ in range(10)])
            super(AdaBelief, self).__init__(params, defaults)
            self.weight_decouple = weight_decouple
            self.rectify = rectify
            self.fixed_decay = fixed_decay

        def __setstate__(self, state):
            super(AdaBelief, self).__setstate__(state)
            for group in self.param_groups:
                group.setdefault('amsgrad', False)

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    if grad.is_sparse:
                        raise RuntimeError('AdaBelief does not support sparse gradients')
                    amsgrad = group['amsgrad']
                    state = self.state[p]
                    beta1, beta2 = group['betas']
                    if len(state) == 0:
                        state['rho_inf'] = 2.0 / (1.0 - beta2) - 1.0
                        state['step'] = 0
                        state['exp_avg'] = torch.zeros_like(p.data, memory_format=torch.preserve_format)
                        state['exp_avg_var'] = torch.zeros_like(p.data, memory_format=torch.preserve_format)
                        if amsgrad:
                            state['max_exp_avg_var'] = torch.zeros_like(p.data, memory_format=torch.preserve_format)
                    if self.weight_decouple:
                        if not self.fixed_decay:
                            p.data.mul_(1.0 - group['lr'] * group['weight_decay'])
                        else:
                            p.data.mul_(1.0 - group['weight_decay'])
                    else:
                        if group['weight_decay'] != 0:
                            grad.add_(p.data, alpha=group['weight_decay'])
                    exp_avg, exp_avg_var = state['exp_avg'], state['exp_avg_var']
                    state['step'] += 1
                    bias_correction1 = 1 - beta1 ** state['step']
                    bias_correction2 = 1 - beta2 ** state['step']
                    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                    grad_residual = grad - exp_avg
                    exp_avg_var.mul_(beta2).addcmul_(grad_residual, grad_residual, value=1 - beta2)
                    if amsgrad:
                        max_exp_avg_var = state['max_exp_avg_var']
                        torch.max(max_exp_avg_var, exp_avg_var.add_(group['eps']), out=max_exp_avg_var)
                        denom = (max_exp_avg_var.sqrt() / math.sqrt(bias_correction2)).add_(group['eps'])
                    else:
                        denom = (exp_avg_var.add_(group['eps']).sqrt() / math.sqrt(bias_correction2)).add_(group['eps'])
                    if not self.rectify:
                        step_size = group['lr'] / bias_correction1
                        p.data.addcdiv_(exp_avg, denom, value=-step_size)
                    else:
                        buffered = group['buffer'][int(state['step'] % 10)]
                        if state['step'] == buffered[0]:
                            N_sma, step_size = buffered[1], buffered[2]
                        else:
                            buffered[0] = state['step']
                            beta2_t = beta2 ** state['step']
                            N_sma_max = 2 / (1 - beta2) - 1
                            N_sma = N_sma_max - 2 * state['step'] * beta2_t / (1 - beta2_t)
                            buffered[1] = N_sma
                            if N_sma >= 5:
                                step_size = math.sqrt((1 - beta2_t) * (N_sma - 4) / (N_sma_max - 4) * (N_sma - 2) /
                                                      N_sma * N_sma_max / (N_sma_max - 2)) / (
                                    1 - beta1 ** state['step'])
                            elif self.degenerated_to_sgd:
                                step_size = 1.0 / (1 - beta1 ** state['step'])
                            else:
                                step_size = -1
                            buffered[2] = step_size
                        if N_sma >= 5:
                            denom = exp_avg_var.sqrt().add_(group['eps'])
                            p.data.addcdiv_(exp_avg, denom, value=-step_size * group['lr'])
                        elif step_size > 0:
                            p.data.add_(exp_avg, alpha=-step_size * group['lr'])
            return loss

    model = small_cnn(m)
    init = load(m, model, state)
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
    # beta2 = 0.6 in the second group: N_sma_max = 3, so its steps take the degenerate SGD branch; the first group's
    # beta2 = 0.05 reaches N_sma >= 5 never either, so a third optimizer below runs rectify=False with AMSGrad
    optimizer = AdaBelief([{'params': decay, 'weight_decay': 1e-2}, {'params': no_decay, 'betas': (0.9, 0.6)}],
                          lr=1e-2, eps=1e-12)
    losses = fit(m, model, optimizer, rng, steps=2)
    saved = optimizer.state_dict()
    optimizer = AdaBelief([{'params': decay, 'weight_decay': 1e-2}, {'params': no_decay, 'betas': (0.9, 0.6)}],
                          lr=1e-2, eps=1e-12)
    optimizer.load_state_dict(saved)
    assert optimizer.state[decay[0]]['step'] == 2 and optimizer.param_groups[0]['buffer'][2][0] == 2
    losses += fit(m, model, optimizer, rng, steps=1)
    other = small_cnn(m)
    load(m, other, init)
    amsgrad = AdaBelief(other.parameters(), lr=1e-2, weight_decay=1e-3, amsgrad=True, weight_decouple=False,
                        rectify=False)
    losses += fit(m, other, amsgrad, rng, steps=2)
    return init, losses + summary(model.parameters()) + summary(other.parameters()) + summary(other.buffers())


def test_adabelief():
    compare(adabelief)


# (b) clovaai/AdamP's adamp.py and sgdp.py: where a weight's gradient is near orthogonal to it per output channel
# (_channel_view) or as a whole (_layer_view), by F.cosine_similarity(...).abs_() against delta / sqrt(fan-in), the
# update loses its radial part and the weight decay is scaled by wd_ratio; the deprecated add_(scalar, tensor) forms
def adamp_sgdp(m, state=None):
    torch, F, optim = m.torch, m.F, m.optim
    Optimizer = optim.Optimizer
    required = importlib.import_module(m.torch.__name__ + ".optim.optimizer").required
    torch.manual_seed(0)
    rng = np.random.default_rng(4)

    class Projection:
        def _channel_view(self, x):
            return x.view(x.size(0), -1)

        def _layer_view(self, x):
            return x.view(1, -1)

        def _cosine_similarity(self, x, y, eps, view_func):
            x = view_func(x)
            y = view_func(y)
            return F.cosine_similarity(x, y, dim=1, eps=eps).abs_()

        def _projection(self, p, grad, perturb, delta, wd_ratio, eps):
            wd = 1
            expand_size = [-1] + [1] * (len(p.shape) - 1)
            for view_func in [self._channel_view, self._layer_view]:
                cosine_sim = self._cosine_similarity(grad, p.data, eps, view_func)
                if cosine_sim.max() < delta / math.sqrt(view_func(p.data).size(1)):
                    p_n = p.data / view_func(p.data).norm(dim=1).view(expand_size).add_(eps)
                    perturb -= p_n * view_func(p_n * perturb).sum(dim=1).view(expand_size)
                    wd = wd_ratio
                    return perturb, wd
            return perturb, wd

    class AdamP(Optimizer, Projection):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, delta=0.1, wd_ratio=0.1,
                     nesterov=False):
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, delta=delta, wd_ratio=wd_ratio,
                            nesterov=nesterov)
            super(AdamP, self).__init__(params, defaults)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    beta1, beta2 = group['betas']
                    nesterov = group['nesterov']
                    state = self.state[p]
                    if len(state) == 0:
                        state['step'] = 0
                        state['exp_avg'] = torch.zeros_like(p.data)
                        state['exp_avg_sq'] = torch.zeros_like(p.data)
                    exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                    state['step'] += 1
                    bias_correction1 = 1 - beta1 ** state['step']
                    bias_correction2 = 1 - beta2 ** state['step']
                    exp_avg.mul_(beta1).add_(1 - beta1, grad)
                    exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                    denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group['eps'])
                    step_size = group['lr'] / bias_correction1
                    if nesterov:
                        perturb = (beta1 * exp_avg + (1 - beta1) * grad) / denom
                    else:
                        perturb = exp_avg / denom
                    wd_ratio = 1
                    if len(p.shape) > 1:
                        perturb, wd_ratio = self._projection(p, grad, perturb, group['delta'], group['wd_ratio'],
                                                             group['eps'])
                    if group['weight_decay'] > 0:
                        p.data.mul_(1 - group['lr'] * group['weight_decay'] * wd_ratio)
                    p.data.add_(-step_size, perturb)
            return loss

    class SGDP(Optimizer, Projection):
        def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False, eps=1e-8,
                     delta=0.1, wd_ratio=0.1):
            defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                            nesterov=nesterov, eps=eps, delta=delta, wd_ratio=wd_ratio)
            super(SGDP, self).__init__(params, defaults)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                weight_decay = group['weight_decay']
                momentum = group['momentum']
                dampening = group['dampening']
                nesterov = group['nesterov']
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    state = self.state[p]
                    if len(state) == 0:
                        state['momentum'] = torch.zeros_like(p.data)
                    buf = state['momentum']
                    buf.mul_(momentum).add_(1 - dampening, grad)
                    if nesterov:
                        d_p = grad + momentum * buf
                    else:
                        d_p = buf
                    wd_ratio = 1
                    if len(p.shape) > 1:
                        d_p, wd_ratio = self._projection(p, grad, d_p, group['delta'], group['wd_ratio'], group['eps'])
                    if weight_decay != 0:
                        p.data.mul_(1 - group['lr'] * group['weight_decay'] * wd_ratio / (1 - momentum))
                    p.data.add_(-group['lr'], d_p)
            return loss

    model = small_cnn(m)
    init = load(m, model, state)
    losses = fit(m, model, AdamP(model.parameters(), lr=0.01, betas=(0.9, 0.999), weight_decay=1e-2, nesterov=True),
                 rng, steps=2)
    other = small_cnn(m)
    load(m, other, init)
    losses += fit(m, other, SGDP(other.parameters(), lr=0.1, weight_decay=1e-3, momentum=0.9, nesterov=True), rng,
                  steps=2)
    return init, losses + summary(model.parameters()) + summary(other.parameters())


def test_adamp_sgdp():
    compare(adamp_sgdp)


# (c) sail-sg/Adan's adan.py: Nesterov-like gradient differences kept as neg_pre_grad, a global gradient-norm clip
# summed into torch.zeros(1) by add_ and clamped by a max_grad_norm tensor, the group's own 'step' counter, and the
# update by torch._foreach_* on lists of tensors in one group and the single-tensor loop in the other
def adan(m, state=None):
    torch, optim = m.torch, m.optim
    Optimizer = optim.Optimizer
    torch.manual_seed(0)
    rng = np.random.default_rng(5)

    def _single_tensor_adan(params, grads, exp_avgs, exp_avg_sqs, exp_avg_diffs, neg_pre_grads, *, beta1, beta2,
                            beta3, bias_correction1, bias_correction2, bias_correction3_sqrt, lr, weight_decay, eps,
                            no_prox, clip_global_grad_norm):
        for i, param in enumerate(params):
            grad = grads[i]
            exp_avg = exp_avgs[i]
            exp_avg_sq = exp_avg_sqs[i]
            exp_avg_diff = exp_avg_diffs[i]
            neg_grad_or_diff = neg_pre_grads[i]
            grad.mul_(clip_global_grad_norm)
            neg_grad_or_diff.add_(grad)
            exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)  # m_t
            exp_avg_diff.mul_(beta2).add_(neg_grad_or_diff, alpha=1 - beta2)  # diff_t
            neg_grad_or_diff.mul_(beta2).add_(grad)
            exp_avg_sq.mul_(beta3).addcmul_(neg_grad_or_diff, neg_grad_or_diff, value=1 - beta3)  # n_t
            denom = ((exp_avg_sq).sqrt() / bias_correction3_sqrt).add_(eps)
            step_size_diff = lr * beta2 / bias_correction2
            step_size = lr / bias_correction1
            if no_prox:
                param.mul_(1 - lr * weight_decay)
                param.addcdiv_(exp_avg, denom, value=-step_size)
                param.addcdiv_(exp_avg_diff, denom, value=-step_size_diff)
            else:
                param.addcdiv_(exp_avg, denom, value=-step_size)
                param.addcdiv_(exp_avg_diff, denom, value=-step_size_diff)
                param.div_(1 + lr * weight_decay)
            neg_grad_or_diff.zero_().add_(grad, alpha=-1.0)

    def _multi_tensor_adan(params, grads, exp_avgs, exp_avg_sqs, exp_avg_diffs, neg_pre_grads, *, beta1, beta2, beta3,
                           bias_correction1, bias_correction2, bias_correction3_sqrt, lr, weight_decay, eps, no_prox,
                           clip_global_grad_norm):
        if len(params) == 0:
            return
        torch._foreach_mul_(grads, clip_global_grad_norm)
        torch._foreach_add_(neg_pre_grads, grads)
        torch._foreach_mul_(exp_avgs, beta1)
        torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)  # m_t
        torch._foreach_mul_(exp_avg_diffs, beta2)
        torch._foreach_add_(exp_avg_diffs, neg_pre_grads, alpha=1 - beta2)  # diff_t
        torch._foreach_mul_(neg_pre_grads, beta2)
        torch._foreach_add_(neg_pre_grads, grads)
        torch._foreach_mul_(exp_avg_sqs, beta3)
        torch._foreach_addcmul_(exp_avg_sqs, neg_pre_grads, neg_pre_grads, value=1 - beta3)  # n_t
        denom = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_div_(denom, bias_correction3_sqrt)
        torch._foreach_add_(denom, eps)
        step_size_diff = lr * beta2 / bias_correction2
        step_size = lr / bias_correction1
        if no_prox:
            torch._foreach_mul_(params, 1 - lr * weight_decay)
            torch._foreach_addcdiv_(params, exp_avgs, denom, value=-step_size)
            torch._foreach_addcdiv_(params, exp_avg_diffs, denom, value=-step_size_diff)
        else:
            torch._foreach_addcdiv_(params, exp_avgs, denom, value=-step_size)
            torch._foreach_addcdiv_(params, exp_avg_diffs, denom, value=-step_size_diff)
            torch._foreach_div_(params, 1 + lr * weight_decay)
        torch._foreach_zero_(neg_pre_grads)
        torch._foreach_add_(neg_pre_grads, grads, alpha=-1.0)

    class Adan(Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.98, 0.92, 0.99), eps=1e-8, weight_decay=0.0, max_grad_norm=0.0,
                     no_prox=False, foreach: bool = True):
            if not 0.0 <= max_grad_norm:
                raise ValueError('Invalid Max grad norm: {}'.format(max_grad_norm))
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, max_grad_norm=max_grad_norm,
                            no_prox=no_prox, foreach=foreach)
            super().__init__(params, defaults)

        def __setstate__(self, state):
            super(Adan, self).__setstate__(state)
            for group in self.param_groups:
                group.setdefault('no_prox', False)

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            if self.defaults['max_grad_norm'] > 0:
                device = self.param_groups[0]['params'][0].device
                global_grad_norm = torch.zeros(1, device=device)
                max_grad_norm = torch.tensor(self.defaults['max_grad_norm'], device=device)
                for group in self.param_groups:
                    for p in group['params']:
                        if p.grad is not None:
                            grad = p.grad
                            global_grad_norm.add_(grad.pow(2).sum())
                global_grad_norm = torch.sqrt(global_grad_norm)
                clip_global_grad_norm = torch.clamp(max_grad_norm / (global_grad_norm + group['eps']), max=1.0).item()
            else:
                clip_global_grad_norm = 1.0
            for group in self.param_groups:
                params_with_grad, grads, exp_avgs, exp_avg_sqs, exp_avg_diffs, neg_pre_grads = [], [], [], [], [], []
                beta1, beta2, beta3 = group['betas']
                if 'step' in group:
                    group['step'] += 1
                else:
                    group['step'] = 1
                bias_correction1 = 1.0 - beta1 ** group['step']
                bias_correction2 = 1.0 - beta2 ** group['step']
                bias_correction3 = 1.0 - beta3 ** group['step']
                for p in group['params']:
                    if p.grad is None:
                        continue
                    params_with_grad.append(p)
                    grads.append(p.grad)
                    state = self.state[p]
                    if len(state) == 0:
                        state['exp_avg'] = torch.zeros_like(p)
                        state['exp_avg_sq'] = torch.zeros_like(p)
                        state['exp_avg_diff'] = torch.zeros_like(p)
                    if 'neg_pre_grad' not in state or group['step'] == 1:
                        state['neg_pre_grad'] = p.grad.clone().mul_(-clip_global_grad_norm)
                    exp_avgs.append(state['exp_avg'])
                    exp_avg_sqs.append(state['exp_avg_sq'])
                    exp_avg_diffs.append(state['exp_avg_diff'])
                    neg_pre_grads.append(state['neg_pre_grad'])
                kwargs = dict(params=params_with_grad, grads=grads, exp_avgs=exp_avgs, exp_avg_sqs=exp_avg_sqs,
                              exp_avg_diffs=exp_avg_diffs, neg_pre_grads=neg_pre_grads, beta1=beta1, beta2=beta2,
                              beta3=beta3, bias_correction1=bias_correction1, bias_correction2=bias_correction2,
                              bias_correction3_sqrt=math.sqrt(bias_correction3), lr=group['lr'],
                              weight_decay=group['weight_decay'], eps=group['eps'], no_prox=group['no_prox'],
                              clip_global_grad_norm=clip_global_grad_norm)
                if group['foreach']:
                    _multi_tensor_adan(**kwargs)
                else:
                    _single_tensor_adan(**kwargs)
            return loss

    model = small_cnn(m)
    init = load(m, model, state)
    convs = [p for p in model.parameters() if p.dim() == 4]
    rest = [p for p in model.parameters() if p.dim() != 4]
    optimizer = Adan([{'params': convs}, {'params': rest, 'foreach': False, 'no_prox': True}], lr=0.01,
                     weight_decay=0.02, max_grad_norm=0.5)
    losses = fit(m, model, optimizer, rng, steps=3)
    return init, losses + [optimizer.param_groups[1]['step']] + summary(model.parameters())


def test_adan():
    compare(adan)


# (d) NovoGrad as the PyTorch ports of NVIDIA OpenSeq2Seq's write it: a per-layer second moment held in a 0-d tensor
# (torch.zeros([]).to(device)), first set by copy_ where `exp_avg_sq == 0`, AMSGrad by torch.max(out=) on 0-d tensors,
# the gradient divided by it in place; and Yong et al.'s gradient centralization (SGD_GC, Adam_GC): each conv and
# linear weight's gradient less its mean over all dimensions but the first, then SGD's momentum or Adam's step
def novograd_gc(m, state=None):
    torch, optim = m.torch, m.optim
    Optimizer, required = optim.Optimizer, importlib.import_module(m.torch.__name__ + ".optim.optimizer").required
    torch.manual_seed(0)
    rng = np.random.default_rng(6)

    class Novograd(Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.95, 0.98), eps=1e-8, weight_decay=0, grad_averaging=False,
                     amsgrad=False):
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, grad_averaging=grad_averaging,
                            amsgrad=amsgrad)
            super(Novograd, self).__init__(params, defaults)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    if grad.is_sparse:
                        raise RuntimeError('Sparse gradients are not supported.')
                    amsgrad = group['amsgrad']
                    state = self.state[p]
                    if len(state) == 0:
                        state['step'] = 0
                        state['exp_avg'] = torch.zeros_like(p.data)
                        state['exp_avg_sq'] = torch.zeros([]).to(state['exp_avg'].device)
                        if amsgrad:
                            state['max_exp_avg_sq'] = torch.zeros([]).to(state['exp_avg'].device)
                    exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                    if amsgrad:
                        max_exp_avg_sq = state['max_exp_avg_sq']
                    beta1, beta2 = group['betas']
                    state['step'] += 1
                    norm = torch.sum(torch.pow(grad, 2))
                    if exp_avg_sq == 0:
                        exp_avg_sq.copy_(norm)
                    else:
                        exp_avg_sq.mul_(beta2).add_(1 - beta2, norm)
                    if amsgrad:
                        torch.max(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
                        denom = max_exp_avg_sq.sqrt().add_(group['eps'])
                    else:
                        denom = exp_avg_sq.sqrt().add_(group['eps'])
                    grad.div_(denom)
                    if group['weight_decay'] != 0:
                        grad.add_(group['weight_decay'], p.data)
                    if group['grad_averaging']:
                        grad.mul_(1 - beta1)
                    exp_avg.mul_(beta1).add_(grad)
                    p.data.add_(-group['lr'], exp_avg)
            return loss

    class SGD_GC(Optimizer):
        def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False):
            if lr is not required and lr < 0.0:
                raise ValueError("Invalid learning rate: {}".format(lr))
            defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                            nesterov=nesterov)
            if nesterov and (momentum <= 0 or dampening != 0):
                raise ValueError("Nesterov momentum requires a momentum and zero dampening")
            super(SGD_GC, self).__init__(params, defaults)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                weight_decay = group['weight_decay']
                momentum = group['momentum']
                dampening = group['dampening']
                nesterov = group['nesterov']
                for p in group['params']:
                    if p.grad is None:
                        continue
                    d_p = p.grad.data
                    if weight_decay != 0:
                        d_p.add_(weight_decay, p.data)
                    # GC operation for Conv layers and FC layers
                    if len(list(d_p.size())) > 1:
                        d_p.add_(-d_p.mean(dim=tuple(range(1, len(list(d_p.size())))), keepdim=True))
                    if momentum != 0:
                        param_state = self.state[p]
                        if 'momentum_buffer' not in param_state:
                            buf = param_state['momentum_buffer'] = torch.clone(d_p).detach()
                        else:
                            buf = param_state['momentum_buffer']
                            buf.mul_(momentum).add_(1 - dampening, d_p)
                        if nesterov:
                            d_p = d_p.add(momentum, buf)
                        else:
                            d_p = buf
                    p.data.add_(-group['lr'], d_p)
            return loss

    class Adam_GC(Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
            super(Adam_GC, self).__init__(params, defaults)

        def step(self, closure=None):
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    amsgrad = group['amsgrad']
                    state = self.state[p]
                    if len(state) == 0:
                        state['step'] = 0
                        state['exp_avg'] = torch.zeros_like(p.data)
                        state['exp_avg_sq'] = torch.zeros_like(p.data)
                        if amsgrad:
                            state['max_exp_avg_sq'] = torch.zeros_like(p.data)
                    exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                    beta1, beta2 = group['betas']
                    state['step'] += 1
                    bias_correction1 = 1 - beta1 ** state['step']
                    bias_correction2 = 1 - beta2 ** state['step']
                    if group['weight_decay'] != 0:
                        grad.add_(group['weight_decay'], p.data)
                    if len(list(grad.size())) > 1:
                        grad.add_(-grad.mean(dim=tuple(range(1, len(list(grad.size())))), keepdim=True))
                    exp_avg.mul_(beta1).add_(1 - beta1, grad)
                    exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                    if amsgrad:
                        max_exp_avg_sq = state['max_exp_avg_sq']
                        torch.max(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
                        denom = (max_exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group['eps'])
                    else:
                        denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group['eps'])
                    step_size = group['lr'] / bias_correction1
                    p.data.addcdiv_(-step_size, exp_avg, denom)

    models = [small_cnn(m) for _ in range(3)]
    init = load(m, models[0], state)
    for other in models[1:]:
        load(m, other, init)
    optimizers = [Novograd(models[0].parameters(), lr=0.01, weight_decay=1e-3, grad_averaging=True, amsgrad=True),
                  SGD_GC(models[1].parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True),
                  Adam_GC(models[2].parameters(), lr=0.01, weight_decay=1e-4, amsgrad=True)]
    losses = []
    for model, optimizer in zip(models, optimizers):
        losses += fit(m, model, optimizer, rng, steps=2) + summary(model.parameters())
    return init, losses


def test_novograd_gradient_centralization():
    compare(novograd_gc)


# (e) juntang-zhuang/GSAM: a torch.optim.Optimizer that shares a base SGD's param_groups, perturbs the weights by rho_t
# along the gradient (rho_t from a ProportionScheduler that follows the base lr scheduler's get_last_lr), takes the
# gradient there with BatchNorm's momentum set to 0 through model.apply (bypass_bn's disable_running_stats), removes
# the part of the old gradient orthogonal to the new one scaled by alpha, restores the weights and steps the base
def gsam(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    _BatchNorm = importlib.import_module(m.torch.__name__ + ".nn.modules.batchnorm")._BatchNorm
    ReduceOp = importlib.import_module(m.torch.__name__ + ".distributed").ReduceOp
    import contextlib
    torch.manual_seed(0)
    rng = np.random.default_rng(7)

    def disable_running_stats(model):
        def _disable(module):
            if isinstance(module, _BatchNorm):
                module.backup_momentum = module.momentum
                module.momentum = 0
        model.apply(_disable)

    def enable_running_stats(model):
        def _enable(module):
            if isinstance(module, _BatchNorm) and hasattr(module, "backup_momentum"):
                module.momentum = module.backup_momentum
        model.apply(_enable)

    class ProportionScheduler:
        def __init__(self, pytorch_lr_scheduler, max_lr, min_lr, max_value, min_value):
            self.t = 0
            self.pytorch_lr_scheduler = pytorch_lr_scheduler
            self.max_lr = max_lr
            self.min_lr = min_lr
            self.max_value = max_value
            self.min_value = min_value
            assert (max_lr > min_lr) or ((max_lr == min_lr) and (max_value == min_value))
            self.step()

        def lr(self):
            return self._last_lr[0]

        def step(self):
            self.t += 1
            if hasattr(self.pytorch_lr_scheduler, 'last_epoch'):
                lr = self.pytorch_lr_scheduler.get_last_lr()[0]
            else:
                lr = self.pytorch_lr_scheduler.optimizer.param_groups[0]['lr']
            if self.max_lr > self.min_lr:
                value = self.min_value + (self.max_value - self.min_value) * (lr - self.min_lr) / (
                    self.max_lr - self.min_lr)
            else:
                value = self.max_value
            self._last_lr = [value]
            return value

    class GSAM(torch.optim.Optimizer):
        def __init__(self, params, base_optimizer, rho_scheduler, gsam_alpha, model, adaptive=False,
                     perturb_eps=1e-12, grad_reduce='mean', **kwargs):
            defaults = dict(adaptive=adaptive, **kwargs)
            super(GSAM, self).__init__(params, defaults)
            self.model = model
            self.base_optimizer = base_optimizer
            self.param_groups = self.base_optimizer.param_groups
            self.adaptive = adaptive
            self.rho_scheduler = rho_scheduler
            self.perturb_eps = perturb_eps
            self.alpha = gsam_alpha
            self.update_rho_t()
            if grad_reduce.lower() == 'mean':
                if hasattr(ReduceOp, 'AVG'):
                    self.grad_reduce = ReduceOp.AVG
                    self.manual_average = False
                else:
                    self.grad_reduce = ReduceOp.SUM
                    self.manual_average = True
            elif grad_reduce.lower() == 'sum':
                self.grad_reduce = ReduceOp.SUM
                self.manual_average = False
            else:
                raise ValueError('"grad_reduce" should be one of ["mean", "sum"].')

        @torch.no_grad()
        def update_rho_t(self):
            self.rho_t = self.rho_scheduler.step()
            return self.rho_t

        @torch.no_grad()
        def perturb_weights(self, rho=0.0):
            grad_norm = self._grad_norm(weight_adaptive=self.adaptive)
            for group in self.param_groups:
                scale = rho / (grad_norm + self.perturb_eps)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    self.state[p]["old_g"] = p.grad.data.clone()
                    e_w = p.grad * scale.to(p)
                    if self.adaptive:
                        e_w *= torch.pow(p, 2)
                    p.add_(e_w)  # climb to the local maximum "w + e(w)"
                    self.state[p]['e_w'] = e_w

        @torch.no_grad()
        def unperturb(self):
            for group in self.param_groups:
                for p in group['params']:
                    if 'e_w' in self.state[p].keys():
                        p.data.sub_(self.state[p]['e_w'])

        @torch.no_grad()
        def gradient_decompose(self, alpha=0.0):
            inner_prod = 0.0
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    inner_prod += torch.sum(self.state[p]['old_g'] * p.grad.data)
            new_grad_norm = self._grad_norm()
            old_grad_norm = self._grad_norm(by='old_g')
            cosine = inner_prod / (new_grad_norm * old_grad_norm + self.perturb_eps)
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    vertical = self.state[p]['old_g'] - cosine * old_grad_norm * p.grad.data / (
                        new_grad_norm + self.perturb_eps)
                    p.grad.data.add_(vertical, alpha=-alpha)

        @torch.no_grad()
        def _sync_grad(self):
            if torch.distributed.is_initialized():
                raise AssertionError("single process here")

        @torch.no_grad()
        def _grad_norm(self, by=None, weight_adaptive=False):
            if not by:
                norm = torch.norm(torch.stack([((torch.abs(p.data) if weight_adaptive else 1.0) * p.grad).norm(p=2)
                                               for group in self.param_groups for p in group["params"]
                                               if p.grad is not None]), p=2)
            else:
                norm = torch.norm(torch.stack([((torch.abs(p.data) if weight_adaptive else 1.0) *
                                                self.state[p][by]).norm(p=2)
                                               for group in self.param_groups for p in group["params"]
                                               if p.grad is not None]), p=2)
            return norm

        def load_state_dict(self, state_dict):
            super().load_state_dict(state_dict)
            self.base_optimizer.param_groups = self.param_groups

        def maybe_no_sync(self):
            if torch.distributed.is_initialized():
                return self.model.no_sync()
            else:
                return contextlib.ExitStack()

        @torch.no_grad()
        def set_closure(self, loss_fn, inputs, targets, **kwargs):
            def get_grad():
                self.base_optimizer.zero_grad()
                with torch.enable_grad():
                    outputs = self.model(inputs)
                    loss = loss_fn(outputs, targets, **kwargs)
                loss_value = loss.data.clone().detach()
                loss.backward()
                return outputs, loss_value
            self.forward_backward_func = get_grad

        @torch.no_grad()
        def step(self, closure=None):
            if closure:
                get_grad = closure
            else:
                get_grad = self.forward_backward_func
            with self.maybe_no_sync():
                outputs, loss_value = get_grad()
                self.perturb_weights(rho=self.rho_t)
                disable_running_stats(self.model)
                get_grad()
                self.gradient_decompose(self.alpha)
                self.unperturb()
            self._sync_grad()
            self.base_optimizer.step()
            enable_running_stats(self.model)
            return outputs, loss_value

    def smooth_crossentropy(pred, gold, smoothing=0.1):
        n_class = pred.size(1)
        one_hot = torch.full_like(pred, fill_value=smoothing / (n_class - 1))
        one_hot.scatter_(dim=1, index=gold.unsqueeze(1), value=1.0 - smoothing)
        log_prob = F.log_softmax(pred, dim=1)
        return F.kl_div(input=log_prob, target=one_hot, reduction='none').sum(-1)

    model = small_cnn(m)
    init = load(m, model, state)
    lr = 0.1
    base_optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(base_optimizer, T_max=4)
    rho_scheduler = ProportionScheduler(pytorch_lr_scheduler=scheduler, max_lr=lr, min_lr=0.0, max_value=0.1,
                                        min_value=0.02)
    optimizer = GSAM(params=model.parameters(), base_optimizer=base_optimizer, model=model, gsam_alpha=0.4,
                     rho_scheduler=rho_scheduler, adaptive=True)
    losses = []
    for _ in range(3):
        inputs = torch.tensor(normal(rng, 4, 3, 6, 6))
        targets = torch.tensor(rng.integers(0, 5, 4))
        optimizer.set_closure(lambda o, t: smooth_crossentropy(o, t).mean(), inputs, targets)
        predictions, loss = optimizer.step()
        with torch.no_grad():
            correct = torch.argmax(predictions.data, 1) == targets
        scheduler.step()
        optimizer.update_rho_t()
        losses += [loss.item(), float(correct.sum()), optimizer.rho_t]
    assert all(isinstance(mod, _BatchNorm) and mod.momentum == 0.1 for mod in model if isinstance(mod, nn.BatchNorm2d))
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_gsam():
    compare(gsam)


def encoder(m, dim=8, width=4):
    """A small ResNet-like backbone's stand-in: conv, BN, ReLU, global pool, flatten to `width` features, then a
    projector of Linear-BN-ReLU-Linear to `dim` (SimCLR's and its successors' heads; the first Linear without a bias,
    which the BatchNorm after it would cancel: Adam would scale its round-off gradient into steps)."""
    nn = m.nn
    backbone = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten())
    projector = nn.Sequential(nn.Linear(width, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, dim))
    return backbone, projector


# (f) NNCLR as solo-learn writes it: a queue of projected embeddings and their labels in register_buffer's, the
# nearest neighbour of each normalized embedding found by z @ queue.T and max(dim=1)[1], the queue filled by slice
# assignment at an int(queue_ptr) pointer, and the loss of each neighbour against the other view's predictions as a
# cross-entropy over arange labels; the queue's initial content is drawn by numpy (torch.randn in the source)
def nnclr(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(8)

    def nnclr_loss_func(nn_, p, temperature=0.1):
        nn_ = F.normalize(nn_, dim=-1)
        p = F.normalize(p, dim=-1)
        logits = nn_ @ p.T / temperature
        n = p.size(0)
        labels = torch.arange(n, device=p.device)
        return F.cross_entropy(logits, labels)

    class NNCLR(nn.Module):
        def __init__(self, proj_output_dim=8, queue_size=8, temperature=0.2):
            super().__init__()
            self.backbone, self.projector = encoder(m, proj_output_dim)
            self.predictor = nn.Sequential(nn.Linear(proj_output_dim, 16), nn.BatchNorm1d(16), nn.ReLU(),
                                           nn.Linear(16, proj_output_dim))
            self.queue_size = queue_size
            self.temperature = temperature
            self.register_buffer("queue", torch.tensor(normal(rng, queue_size, proj_output_dim)))
            self.register_buffer("queue_y", -torch.ones(self.queue_size, dtype=torch.long))
            self.queue = F.normalize(self.queue, dim=1)
            self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

        @torch.no_grad()
        def dequeue_and_enqueue(self, z, y):
            batch_size = z.shape[0]
            ptr = int(self.queue_ptr)
            assert self.queue_size % batch_size == 0
            self.queue[ptr:ptr + batch_size, :] = z
            self.queue_y[ptr:ptr + batch_size] = y
            ptr = (ptr + batch_size) % self.queue_size
            self.queue_ptr[0] = ptr

        @torch.no_grad()
        def find_nn(self, z):
            idx = (z @ self.queue.T).max(dim=1)[1]
            nn_ = self.queue[idx]
            return idx, nn_

        def forward(self, X):
            feats = self.backbone(X)
            z = self.projector(feats)
            p = self.predictor(z)
            z = F.normalize(z, dim=-1)
            return {"feats": feats, "z": z, "p": p}

        def training_step(self, batch):
            targets = batch[-1]
            out = [self(x) for x in batch[0]]
            z1, z2 = out[0]["z"], out[1]["z"]
            p1, p2 = out[0]["p"], out[1]["p"]
            idx1, nn1 = self.find_nn(z1)
            _, nn2 = self.find_nn(z2)
            nnclr_loss = (nnclr_loss_func(nn1, p2, temperature=self.temperature) / 2
                          + nnclr_loss_func(nn2, p1, temperature=self.temperature) / 2)
            b = targets.size(0)
            nn_acc = (targets == self.queue_y[idx1]).sum() / b
            self.dequeue_and_enqueue(z1, targets)
            return nnclr_loss, nn_acc

    model = NNCLR()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(3):
        x = normal(rng, 4, 3, 5, 5)
        views = [torch.tensor(x + 0.1 * normal(rng, *x.shape)) for _ in range(2)]
        loss, acc = model.training_step((views, torch.tensor(rng.integers(0, 3, 4))))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), acc.item(), int(model.queue_ptr)]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_nnclr():
    compare(nnclr)


# (g) zhirongw/lemniscate.pytorch (NPID, instance discrimination): LinearAverageOp, an autograd Function whose forward
# is x @ memory.t() / T with T read by params[0].item(), and whose backward divides gradOutput in place, then
# updates the memory bank by index_select, resize_as_, a momentum mix, an L2 renormalisation and index_copy_; its
# kNN monitor: topk of the memory's similarities, gather of the neighbours' labels, a one-hot by resize_, zero_ and
# scatter_, votes weighted by exp(d / sigma), predictions by sort(1, True) and correct.narrow(1, 0, 1)
def npid(m, state=None):
    torch, nn = m.torch, m.nn
    Function = torch.autograd.Function
    torch.manual_seed(0)
    rng = np.random.default_rng(9)

    class LinearAverageOp(Function):
        @staticmethod
        def forward(self, x, y, memory, params):
            T = params[0].item()
            out = torch.mm(x.data, memory.t())
            out.div_(T)  # batchSize * N
            self.save_for_backward(x, memory, y, params)
            return out

        @staticmethod
        def backward(self, gradOutput):
            x, memory, y, params = self.saved_tensors
            T = params[0].item()
            momentum = params[1].item()
            gradOutput.data.div_(T)
            gradInput = torch.mm(gradOutput.data, memory)
            gradInput.resize_as_(x)
            weight_pos = memory.index_select(0, y.data.view(-1)).resize_as_(x)
            weight_pos.mul_(momentum)
            weight_pos.add_(torch.mul(x.data, 1 - momentum))
            w_norm = weight_pos.pow(2).sum(1, keepdim=True).pow(0.5)
            updated_weight = weight_pos.div(w_norm)
            memory.index_copy_(0, y, updated_weight)
            return gradInput, None, None, None

    class LinearAverage(nn.Module):
        def __init__(self, inputSize, outputSize, T=0.07, momentum=0.5):
            super(LinearAverage, self).__init__()
            self.nLem = outputSize
            self.register_buffer('params', torch.tensor([T, momentum]))
            stdv = 1. / math.sqrt(inputSize / 3)
            self.register_buffer('memory', torch.rand(outputSize, inputSize).mul_(2 * stdv).add_(-stdv))

        def forward(self, x, y):
            return LinearAverageOp.apply(x, y, self.memory, self.params)

    class Normalize(nn.Module):
        def __init__(self, power=2):
            super(Normalize, self).__init__()
            self.power = power

        def forward(self, x):
            norm = x.pow(self.power).sum(1, keepdim=True).pow(1. / self.power)
            return x.div(norm)

    def kNN(net, lemniscate, trainLabels, testloader, K, sigma, C):
        net.eval()
        total, top1 = 0, 0.
        trainFeatures = lemniscate.memory.t()
        with torch.no_grad():
            retrieval_one_hot = torch.zeros(K, C)
            for batch_idx, (inputs, targets) in enumerate(testloader):
                batchSize = inputs.size(0)
                features = net(inputs)
                dist = torch.mm(features, trainFeatures)
                yd, yi = dist.topk(K, dim=1, largest=True, sorted=True)
                candidates = trainLabels.view(1, -1).expand(batchSize, -1)
                retrieval = torch.gather(candidates, 1, yi)
                retrieval_one_hot.resize_(batchSize * K, C).zero_()
                retrieval_one_hot.scatter_(1, retrieval.view(-1, 1), 1)
                yd_transform = yd.clone().div_(sigma).exp_()
                probs = torch.sum(torch.mul(retrieval_one_hot.view(batchSize, -1, C), yd_transform.view(batchSize, -1, 1)), 1)
                _, predictions = probs.sort(1, True)
                correct = predictions.eq(targets.data.view(-1, 1))
                top1 = top1 + correct.narrow(1, 0, 1).sum().item()
                total += targets.size(0)
        return top1 / total, probs.sum().item()

    ndata, low_dim = 8, 6
    backbone, _ = encoder(m)
    net = nn.Sequential(backbone, nn.Linear(4, low_dim), Normalize(2))
    lemniscate = LinearAverage(low_dim, ndata, T=0.1, momentum=0.5)
    holder = nn.ModuleList([net, lemniscate])
    init = load(m, holder, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.03, momentum=0.9, weight_decay=5e-4)
    images = normal(rng, ndata, 3, 5, 5)
    train_labels = torch.tensor(rng.integers(0, 3, ndata))
    losses = []
    for indexes in ([0, 3, 5, 6], [1, 2, 4, 7], [7, 0, 2, 5]):
        net.train()
        inputs, indexes = torch.tensor(images[indexes]), torch.tensor(indexes)
        features = net(inputs)
        outputs = lemniscate(features, indexes)
        loss = criterion(outputs, indexes)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    testloader = [(torch.tensor(normal(rng, 3, 3, 5, 5)), torch.tensor(rng.integers(0, 3, 3))) for _ in range(2)]
    losses += list(kNN(net, lemniscate, train_labels, testloader, K=4, sigma=0.1, C=3))
    return init, losses + summary(holder.parameters()) + summary(holder.buffers())


def test_npid_memory_bank():
    compare(npid)


# (h) Decoupled contrastive learning (Yeh et al., its reference loss.py): the positive pair's similarity alone in
# the numerator, the negatives' logsumexp with the positive masked by adding log(1e-45) through an eye(N).repeat(1, 2)
# mask, both directions summed; DCLW's von Mises-Fisher weight 2 - N softmax((z1 * z2).sum(1) / sigma).squeeze()
def dcl(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(10)
    SMALL_NUM = np.log(1e-45)

    class DCL(object):
        def __init__(self, temperature=0.1, weight_fn=None):
            super(DCL, self).__init__()
            self.temperature = temperature
            self.weight_fn = weight_fn

        def __call__(self, z1, z2):
            cross_view_distance = torch.mm(z1, z2.t())
            positive_loss = -torch.diag(cross_view_distance) / self.temperature
            if self.weight_fn is not None:
                positive_loss = positive_loss * self.weight_fn(z1, z2)
            neg_similarity = torch.cat((torch.mm(z1, z1.t()), cross_view_distance), dim=1) / self.temperature
            neg_mask = torch.eye(z1.size(0), device=z1.device).repeat(1, 2)
            negative_loss = torch.logsumexp(neg_similarity + neg_mask * SMALL_NUM, dim=1, keepdim=False)
            return (positive_loss + negative_loss).mean()

    class DCLW(DCL):
        def __init__(self, sigma=0.5, temperature=0.1):
            weight_fn = lambda z1, z2: 2 - z1.size(0) * torch.nn.functional.softmax((z1 * z2).sum(dim=1) / sigma, dim=0).squeeze()  # noqa: E731
            super(DCLW, self).__init__(weight_fn=weight_fn, temperature=temperature)

    backbone, projector = encoder(m)
    model = nn.Sequential(backbone, projector)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for loss_fn in (DCL(temperature=0.5), DCLW(temperature=0.5), DCLW(sigma=0.2, temperature=0.2)):
        x = normal(rng, 6, 3, 5, 5)
        z1 = F.normalize(model(torch.tensor(x + 0.1 * normal(rng, *x.shape))), dim=1)
        z2 = F.normalize(model(torch.tensor(x + 0.1 * normal(rng, *x.shape))), dim=1)
        loss = loss_fn(z1, z2) + loss_fn(z2, z1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + summary(model.parameters())


def test_decoupled_contrastive_loss():
    compare(dcl)


# (i) htdt/self-supervised's W-MSE: Whitening2d, the batch covariance of x.unsqueeze(2).unsqueeze(3) by mm of a
# permuted contiguous view, shrunk towards eye(...).type(f_cov.type()), whitened by triangular_solve(eye,
# cholesky(...), upper=False)[0] applied as a 1x1 conv2d, running statistics updated by torch.add(..., out=buffer);
# each whitening sub-batch written into torch.empty_like(h) by index assignment z[idx + i * bs] = ...; the
# normalized-MSE loss between views. The sub-batch permutation is numpy's (torch.randperm in the source)
def wmse(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    conv2d = F.conv2d
    torch.manual_seed(0)
    rng = np.random.default_rng(11)

    class Whitening2d(nn.Module):
        def __init__(self, num_features, momentum=0.01, track_running_stats=True, eps=0):
            super(Whitening2d, self).__init__()
            self.num_features = num_features
            self.momentum = momentum
            self.track_running_stats = track_running_stats
            self.eps = eps
            if self.track_running_stats:
                self.register_buffer("running_mean", torch.zeros([1, self.num_features, 1, 1]))
                self.register_buffer("running_variance", torch.eye(self.num_features))

        def forward(self, x):
            x = x.unsqueeze(2).unsqueeze(3)
            m_ = x.mean(0).view(self.num_features, -1).mean(-1).view(1, -1, 1, 1)
            if not self.training and self.track_running_stats:  # for inference
                m_ = self.running_mean
            xn = x - m_
            T = xn.permute(1, 0, 2, 3).contiguous().view(self.num_features, -1)
            f_cov = torch.mm(T, T.permute(1, 0)) / (T.shape[-1] - 1)
            eye = torch.eye(self.num_features).type(f_cov.type())
            if not self.training and self.track_running_stats:  # for inference
                f_cov = self.running_variance
            f_cov_shrinked = (1 - self.eps) * f_cov + self.eps * eye
            inv_sqrt = torch.triangular_solve(eye, torch.cholesky(f_cov_shrinked), upper=False)[0]
            inv_sqrt = inv_sqrt.contiguous().view(self.num_features, self.num_features, 1, 1)
            decorrelated = conv2d(xn, inv_sqrt)
            if self.training and self.track_running_stats:
                self.running_mean = torch.add(self.momentum * m_.detach(), (1 - self.momentum) * self.running_mean,
                                              out=self.running_mean)
                self.running_variance = torch.add(self.momentum * f_cov.detach(),
                                                  (1 - self.momentum) * self.running_variance,
                                                  out=self.running_variance)
            return decorrelated.squeeze(2).squeeze(2)

    def norm_mse_loss(x0, x1):
        x0 = F.normalize(x0)
        x1 = F.normalize(x1)
        return 2 - 2 * (x0 * x1).sum(dim=-1).mean()

    class WMSE(nn.Module):
        def __init__(self, emb=3, w_size=6, w_iter=2, w_eps=0.1):
            super().__init__()
            self.model, self.head = encoder(m, dim=emb)
            self.whitening = Whitening2d(emb, eps=w_eps, track_running_stats=True)
            self.loss_f = norm_mse_loss
            self.w_iter = w_iter
            self.w_size = w_size
            self.num_pairs = 1

        def forward(self, samples, perms):
            bs = len(samples[0])
            h = [self.model(x) for x in samples]
            h = self.head(torch.cat(h))
            loss = 0
            for it in range(self.w_iter):
                z = torch.empty_like(h)
                perm = torch.tensor(perms[it]).view(-1, self.w_size)
                for idx in perm:
                    for i in range(len(samples)):
                        z[idx + i * bs] = self.whitening(h[idx + i * bs])
                for i in range(len(samples) - 1):
                    for j in range(i + 1, len(samples)):
                        x0 = z[i * bs: (i + 1) * bs]
                        x1 = z[j * bs: (j + 1) * bs]
                        loss += self.loss_f(x0, x1)
            loss /= self.w_iter * self.num_pairs
            return loss

    model = WMSE()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-6)
    losses = []
    for _ in range(2):
        x = normal(rng, 12, 3, 4, 4)
        samples = [torch.tensor(x + 0.2 * normal(rng, *x.shape)) for _ in range(2)]
        loss = model(samples, [rng.permutation(12) for _ in range(model.w_iter)])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        out = model.whitening(model.head(model.model(torch.tensor(normal(rng, 4, 3, 4, 4)))))
    return init, losses + [out.sum().item()] + summary(model.parameters()) + summary(model.buffers())


def test_wmse_whitening():
    # the whitening's Cholesky factor and triangular solve of a 3x3 covariance amplify their last bits, in which
    # tnet's float32 substitution and torch's trsm differ (docs/results.md)
    compare(wmse, atol=2e-3)


# (j) 4uiiurz1/pytorch-adacos's AdaCos: W = Parameter(torch.FloatTensor(C, D)) initialised by xavier_uniform_, cosine
# logits by F.linear of F.normalize'd features and weights, theta by acos of clamped logits, one_hot by scatter_; under
# no_grad the scale s becomes a 0-d tensor: the log of the non-target logits' mean exp(s * logits) (torch.where) over
# the cosine of torch.min(pi/4, median of the target angles theta[one_hot == 1])
def adacos(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Parameter = nn.Parameter
    torch.manual_seed(0)
    rng = np.random.default_rng(12)

    class AdaCos(nn.Module):
        def __init__(self, num_features, num_classes, m=0.50):
            super(AdaCos, self).__init__()
            self.num_features = num_features
            self.n_classes = num_classes
            self.s = math.sqrt(2) * math.log(num_classes - 1)
            self.m = m
            self.W = Parameter(torch.FloatTensor(num_classes, num_features))
            nn.init.xavier_uniform_(self.W)

        def forward(self, input, label=None):
            x = F.normalize(input)
            W = F.normalize(self.W)
            logits = F.linear(x, W)
            if label is None:
                return logits
            theta = torch.acos(torch.clamp(logits, -1.0 + 1e-7, 1.0 - 1e-7))
            one_hot = torch.zeros_like(logits)
            one_hot.scatter_(1, label.view(-1, 1).long(), 1)
            with torch.no_grad():
                B_avg = torch.where(one_hot < 1, torch.exp(self.s * logits), torch.zeros_like(logits))
                B_avg = torch.sum(B_avg) / input.size(0)
                theta_med = torch.median(theta[one_hot == 1])
                self.s = torch.log(B_avg) / torch.cos(torch.min(math.pi / 4 * torch.ones_like(theta_med), theta_med))
            output = self.s * logits
            return output

    backbone, _ = encoder(m)
    model = nn.Sequential(backbone, nn.Linear(4, 6), nn.BatchNorm1d(6))
    metric_fc = AdaCos(num_features=6, num_classes=5)
    holder = nn.ModuleList([model, metric_fc])
    init = load(m, holder, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(holder.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    losses = []
    for _ in range(3):
        input = torch.tensor(normal(rng, 5, 3, 5, 5))
        target = torch.tensor(rng.integers(0, 5, 5))
        feature = model(input)
        output = metric_fc(feature, target)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        acc1 = (output.argmax(1) == target).float().mean() * 100
        losses += [loss.item(), float(metric_fc.s), acc1.item()]
    return init, losses + summary(holder.parameters())


def test_adacos():
    compare(adacos)


# (k) HuangYG123/CurricularFace's head: kernel normalized by l2_norm (torch.norm(input, 2, axis, True)), the target
# logits picked by cos_theta[torch.arange(0, N), label], cos(theta + m) from sin = sqrt(1 - cos^2), hard negatives
# (cos_theta > cos_theta_m) reweighted in place by cos_theta[mask] = hard * (t + hard) with t a buffer set as a plain
# attribute (an EMA of the target logits), the target column written by scatter_; and insightface's sub-center
# ArcFace: K sub-centres per class, cosine.view(-1, C, K) reduced by torch.max(dim=2), ArcFace's phi by torch.where
def curricularface(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    Parameter = nn.Parameter
    torch.manual_seed(0)
    rng = np.random.default_rng(13)

    def l2_norm(input, axis=1):
        norm = torch.norm(input, 2, axis, True)
        output = torch.div(input, norm)
        return output

    class CurricularFace(nn.Module):
        def __init__(self, in_features, out_features, m=0.5, s=64.):
            super(CurricularFace, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.m = m
            self.s = s
            self.cos_m = math.cos(m)
            self.sin_m = math.sin(m)
            self.threshold = math.cos(math.pi - m)
            self.mm = math.sin(math.pi - m) * m
            self.kernel = Parameter(torch.Tensor(in_features, out_features))
            self.register_buffer('t', torch.zeros(1))
            nn.init.normal_(self.kernel, std=0.01)

        def forward(self, embbedings, label):
            embbedings = l2_norm(embbedings, axis=1)
            kernel_norm = l2_norm(self.kernel, axis=0)
            cos_theta = torch.mm(embbedings, kernel_norm)
            cos_theta = cos_theta.clamp(-1, 1)  # for numerical stability
            with torch.no_grad():
                origin_cos = cos_theta.clone()
            target_logit = cos_theta[torch.arange(0, embbedings.size(0)), label].view(-1, 1)
            sin_theta = torch.sqrt(1.0 - torch.pow(target_logit, 2))
            cos_theta_m = target_logit * self.cos_m - sin_theta * self.sin_m  # cos(target+margin)
            mask = cos_theta > cos_theta_m
            final_target_logit = torch.where(target_logit > self.threshold, cos_theta_m, target_logit - self.mm)
            hard_example = cos_theta[mask]
            with torch.no_grad():
                self.t = target_logit.mean() * 0.01 + (1 - 0.01) * self.t
            cos_theta[mask] = hard_example * (self.t + hard_example)
            cos_theta.scatter_(1, label.view(-1, 1).long(), final_target_logit)
            output = cos_theta * self.s
            return output, origin_cos * self.s

    class SubcenterArcFace(nn.Module):
        def __init__(self, in_features, out_features, k=3, s=30.0, m=0.50, easy_margin=False):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.k = k
            self.s = s
            self.weight = Parameter(torch.FloatTensor(out_features * k, in_features))
            nn.init.xavier_uniform_(self.weight)
            self.easy_margin = easy_margin
            self.cos_m = math.cos(m)
            self.sin_m = math.sin(m)
            self.th = math.cos(math.pi - m)
            self.mm = math.sin(math.pi - m) * m

        def forward(self, input, label):
            cosine = F.linear(F.normalize(input), F.normalize(self.weight))
            cosine = cosine.view(-1, self.out_features, self.k)
            cosine, _ = torch.max(cosine, dim=2)
            sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
            phi = cosine * self.cos_m - sine * self.sin_m
            if self.easy_margin:
                phi = torch.where(cosine > 0, phi, cosine)
            else:
                phi = torch.where(cosine > self.th, phi, cosine - self.mm)
            one_hot = torch.zeros(cosine.size(), device=input.device)
            one_hot.scatter_(1, label.view(-1, 1).long(), 1)
            output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
            output *= self.s
            return output

    backbone, _ = encoder(m)
    model = nn.Sequential(backbone, nn.Linear(4, 6))
    heads = nn.ModuleList([CurricularFace(6, 5, s=8.0), SubcenterArcFace(6, 5, s=8.0)])
    holder = nn.ModuleList([model, heads])
    init = load(m, holder, state)
    optimizer = torch.optim.SGD(holder.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(3):
        inputs = torch.tensor(normal(rng, 6, 3, 5, 5))
        labels = torch.tensor(rng.integers(0, 5, 6))
        features = model(inputs)
        outputs, original_logits = heads[0](features, labels)
        loss = F.cross_entropy(outputs, labels) + F.cross_entropy(heads[1](features, labels), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), original_logits.sum().item(), heads[0].t.item()]
    assert "t" in dict(heads[0].named_buffers())
    return init, losses + summary(holder.parameters())


def test_curricularface_subcenter_arcface():
    compare(curricularface)


# (l) AlanChou/Truncated-Loss (Zhang and Sabuncu's truncated Lq loss for noisy labels): per-sample weights held in a
# Parameter(requires_grad=False) of shape [trainset, 1], picked by the dataset's indexes; Yg by torch.gather of the
# softmax; update_weight (run outside no_grad, as the source's prune pass) compares Lq with a constant built by
# np.repeat and torch.from_numpy(...).type(torch.FloatTensor) and assigns the bool's .type(FloatTensor) by index.
# The Dataset returns (img, target, index), as the source's CIFAR10 subclass
def truncated_gce(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    data = m.data
    torch.manual_seed(0)
    rng = np.random.default_rng(14)

    class TruncatedLoss(nn.Module):
        def __init__(self, q=0.7, k=0.5, trainset_size=50000):
            super(TruncatedLoss, self).__init__()
            self.q = q
            self.k = k
            self.weight = torch.nn.Parameter(data=torch.ones(trainset_size, 1), requires_grad=False)

        def forward(self, logits, targets, indexes):
            p = F.softmax(logits, dim=1)
            Yg = torch.gather(p, 1, torch.unsqueeze(targets, 1))
            loss = ((1 - (Yg ** self.q)) / self.q) * self.weight[indexes] - ((1 - (self.k ** self.q)) / self.q) * self.weight[indexes]
            loss = torch.mean(loss)
            return loss

        def update_weight(self, logits, targets, indexes):
            p = F.softmax(logits, dim=1)
            Yg = torch.gather(p, 1, torch.unsqueeze(targets, 1))
            Lq = ((1 - (Yg ** self.q)) / self.q)
            Lqk = np.repeat(((1 - (self.k ** self.q)) / self.q), targets.size(0))
            Lqk = torch.from_numpy(Lqk).type(torch.FloatTensor)
            Lqk = torch.unsqueeze(Lqk, 1)
            condition = torch.gt(Lqk, Lq)
            self.weight[indexes] = condition.type(torch.FloatTensor)

    class IndexedDataset(data.Dataset):
        def __init__(self, images, labels):
            self.data, self.targets = images, labels

        def __getitem__(self, index):
            img, target = self.data[index], self.targets[index]
            return torch.from_numpy(img), target, index

        def __len__(self):
            return len(self.data)

    trainset = IndexedDataset(normal(rng, 12, 3, 5, 5), [int(v) for v in rng.integers(0, 4, 12)])
    trainloader = data.DataLoader(trainset, batch_size=4, shuffle=False)
    backbone, _ = encoder(m)
    net = nn.Sequential(backbone, nn.Linear(4, 4))
    criterion = TruncatedLoss(trainset_size=len(trainset), q=0.7, k=0.3)
    init = load(m, net, state)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.5, momentum=0.9, weight_decay=1e-4)
    losses = []
    for epoch in range(2):
        net.train()
        for batch_idx, (inputs, targets, indexes) in enumerate(trainloader):
            outputs = net(inputs)
            loss = criterion(outputs, targets, indexes)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            _, predicted = outputs.max(1)
            losses += [loss.item(), predicted.eq(targets).sum().item()]
        net.eval()
        for batch_idx, (inputs, targets, indexes) in enumerate(trainloader):
            outputs = net(inputs)
            criterion.update_weight(outputs, targets, indexes)
        losses.append(criterion.weight.sum().item())
    assert not criterion.weight.requires_grad and criterion.weight.grad is None
    return init, losses + summary(net.parameters())


def test_truncated_gce():
    compare(truncated_gce)


# (m) Long-tailed recognition: jiawei-ren/BalancedMetaSoftmax's BalancedSoftmax (a _Loss subclass; the class counts
# from JSON, added as spc.type_as(logits).unsqueeze(0).expand(...).log()) and the PyTorch reimplementations of Menon
# et al.'s logit adjustment: label frequencies counted by j.item() over a DataLoader, tau * log(prior + 1e-12) by
# numpy and torch.from_numpy, a float64 tensor added to float32 logits (torch promotes the loss to float64; tnet, which
# has no float64, makes the array float32: README's porting section), and the post-hoc adjustment at evaluation
def long_tail_losses(m, state=None):
    import json
    torch, nn, F = m.torch, m.nn, m.F
    _Loss = importlib.import_module(m.torch.__name__ + ".nn.modules.loss")._Loss
    data = m.data
    torch.manual_seed(0)
    rng = np.random.default_rng(15)

    def balanced_softmax_loss(labels, logits, sample_per_class, reduction):
        spc = sample_per_class.type_as(logits)
        spc = spc.unsqueeze(0).expand(logits.shape[0], -1)
        logits = logits + spc.log()
        loss = F.cross_entropy(input=logits, target=labels, reduction=reduction)
        return loss

    class BalancedSoftmax(_Loss):
        def __init__(self, freq_json):
            super(BalancedSoftmax, self).__init__()
            freq = json.loads(freq_json)
            freq = torch.tensor(freq)
            self.sample_per_class = freq

        def forward(self, input, label, reduction='mean'):
            return balanced_softmax_loss(label, input, self.sample_per_class, reduction)

    def compute_adjustment(train_loader, tro):
        label_freq = {}
        for i, (inputs, target) in enumerate(train_loader):
            for j in target:
                key = int(j.item())
                label_freq[key] = label_freq.get(key, 0) + 1
        label_freq = dict(sorted(label_freq.items()))
        label_freq_array = np.array(list(label_freq.values()))
        label_freq_array = label_freq_array / label_freq_array.sum()
        adjustments = np.log(label_freq_array ** tro + 1e-12)
        adjustments = torch.from_numpy(adjustments)
        return adjustments

    labels = np.repeat(np.arange(4), [7, 3, 1, 1])
    images = normal(rng, len(labels), 8)
    train_set = data.TensorDataset(torch.tensor(images), torch.tensor(labels))
    train_loader = data.DataLoader(train_set, batch_size=6, shuffle=False)
    models = [nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)) for _ in range(2)]
    holder = nn.ModuleList(models)
    init = load(m, holder, state)
    criterion = BalancedSoftmax(json.dumps([7, 3, 1, 1]))
    logit_adjustments = compute_adjustment(train_loader, tro=1.0)
    ce = nn.CrossEntropyLoss()
    optimizers = [torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) for model in models]
    losses = []
    for epoch in range(2):
        for input, target in train_loader:
            loss = criterion(models[0](input), target)
            optimizers[0].zero_grad()
            loss.backward()
            optimizers[0].step()
            output = models[1](input)
            output = output + logit_adjustments
            loss2 = ce(output, target)
            optimizers[1].zero_grad()
            loss2.backward()
            optimizers[1].step()
            losses += [loss.item(), loss2.item()]
    with torch.no_grad():
        input = torch.tensor(normal(rng, 5, 8))
        output = models[1](input) - logit_adjustments
        per_sample = criterion(models[0](input), torch.tensor([0, 1, 2, 3, 0]), reduction='none')
    return init, losses + [output.sum().item()] + per_sample.tolist() + summary(
        holder.parameters())


def test_long_tail_losses():
    compare(long_tail_losses)


# (n) zhunzhong07/Random-Erasing's transforms.RandomErasing, a transform on a CHW tensor: python's random.uniform
# for probability, area and aspect ratio, int(round(math.sqrt(...))) for the box, and each channel's rectangle set to
# the dataset mean by img[c, x1:x1+h, y1:y1+w] = mean[c]; applied in a Dataset's __getitem__ to a clone of the image,
# batched by a DataLoader and trained on, as the source's CIFAR script (python's random seeded alike in both runs)
def random_erasing(m, state=None):
    import random
    torch, F = m.torch, m.F
    data = m.data
    torch.manual_seed(0)
    rng = np.random.default_rng(16)
    random.seed(5)

    class RandomErasing(object):
        def __init__(self, probability=0.5, sl=0.02, sh=0.4, r1=0.3, mean=[0.4914, 0.4822, 0.4465]):
            self.probability = probability
            self.mean = mean
            self.sl = sl
            self.sh = sh
            self.r1 = r1

        def __call__(self, img):
            if random.uniform(0, 1) > self.probability:
                return img
            for attempt in range(100):
                area = img.size()[1] * img.size()[2]
                target_area = random.uniform(self.sl, self.sh) * area
                aspect_ratio = random.uniform(self.r1, 1 / self.r1)
                h = int(round(math.sqrt(target_area * aspect_ratio)))
                w = int(round(math.sqrt(target_area / aspect_ratio)))
                if w < img.size()[2] and h < img.size()[1]:
                    x1 = random.randint(0, img.size()[1] - h)
                    y1 = random.randint(0, img.size()[2] - w)
                    if img.size()[0] == 3:
                        img[0, x1:x1 + h, y1:y1 + w] = self.mean[0]
                        img[1, x1:x1 + h, y1:y1 + w] = self.mean[1]
                        img[2, x1:x1 + h, y1:y1 + w] = self.mean[2]
                    else:
                        img[0, x1:x1 + h, y1:y1 + w] = self.mean[0]
                    return img
            return img

    class Erased(data.Dataset):
        def __init__(self, images, labels, transform):
            self.images, self.labels, self.transform = torch.tensor(images), torch.tensor(labels), transform

        def __getitem__(self, index):
            return self.transform(self.images[index].clone()), self.labels[index]

        def __len__(self):
            return len(self.labels)

    trainset = Erased(normal(rng, 8, 3, 8, 8), rng.integers(0, 5, 8), RandomErasing(probability=0.8, mean=[0.0, 0.5, -0.5]))
    trainloader = data.DataLoader(trainset, batch_size=4, shuffle=False)
    model = small_cnn(m)
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    losses = []
    for epoch in range(2):
        for inputs, targets in trainloader:
            outputs = model(inputs)
            loss = F.cross_entropy(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses += [loss.item(), inputs.sum().item(), (inputs == 0.5).sum().item()]
    return init, losses + summary(model.parameters())


def test_random_erasing():
    compare(random_erasing)


# (o) Contrastive losses written for several GPUs, run in a one-rank gloo group (as a single-GPU DDP run has):
# solo-learn's GatherLayer (an autograd Function over dist.all_gather whose backward all_reduces the stacked
# gradients and keeps this rank's) and its SimCLR loss over gathered embeddings and sample indexes (positives by
# indexes.t() == gathered, fill_diagonal_ on a column slice of the mask); open_clip's gather_features, both with
# gradients (torch.distributed.nn.all_gather, after `import torch.distributed.nn`) and without (dist.all_gather into
# zeros_like buffers, the local features put back at this rank), and its ClipLoss with a learned logit_scale.exp()
def gathered_contrastive(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    importlib.import_module(m.torch.__name__ + ".distributed.nn")
    dist = torch.distributed
    torch.manual_seed(0)
    rng = np.random.default_rng(17)

    class GatherLayer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if dist.is_available() and dist.is_initialized():
                output = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
                dist.all_gather(output, x)
            else:
                output = [x]
            return tuple(output)

        @staticmethod
        def backward(ctx, *grads):
            if dist.is_available() and dist.is_initialized():
                all_gradients = torch.stack(grads)
                dist.all_reduce(all_gradients)
                grad_out = all_gradients[get_rank()]
            else:
                grad_out = grads[0]
            return grad_out

    def get_rank():
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
        return 0

    def gather(X, dim=0):
        return torch.cat(GatherLayer.apply(X), dim=dim)

    def simclr_loss_func(z, indexes, temperature=0.1):
        z = F.normalize(z, dim=-1)
        gathered_z = gather(z)
        sim = torch.exp(torch.einsum("if, jf -> ij", z, gathered_z) / temperature)
        gathered_indexes = gather(indexes)
        indexes = indexes.unsqueeze(0)
        gathered_indexes = gathered_indexes.unsqueeze(0)
        pos_mask = indexes.t() == gathered_indexes
        pos_mask[:, z.size(0) * get_rank():].fill_diagonal_(0)
        neg_mask = indexes.t() != gathered_indexes
        pos = torch.sum(sim * pos_mask, 1)
        neg = torch.sum(sim * neg_mask, 1)
        loss = -(torch.mean(torch.log(pos / (pos + neg))))
        return loss

    def gather_features(image_features, text_features, local_loss=False, gather_with_grad=False, rank=0,
                        world_size=1):
        if gather_with_grad:
            all_image_features = torch.cat(torch.distributed.nn.all_gather(image_features), dim=0)
            all_text_features = torch.cat(torch.distributed.nn.all_gather(text_features), dim=0)
        else:
            gathered_image_features = [torch.zeros_like(image_features) for _ in range(world_size)]
            gathered_text_features = [torch.zeros_like(text_features) for _ in range(world_size)]
            dist.all_gather(gathered_image_features, image_features)
            dist.all_gather(gathered_text_features, text_features)
            if not local_loss:
                # ensure grads for local rank when all_* features don't have a gradient
                gathered_image_features[rank] = image_features
                gathered_text_features[rank] = text_features
            all_image_features = torch.cat(gathered_image_features, dim=0)
            all_text_features = torch.cat(gathered_text_features, dim=0)
        return all_image_features, all_text_features

    class ClipLoss(nn.Module):
        def __init__(self, local_loss=False, gather_with_grad=False, rank=0, world_size=1):
            super().__init__()
            self.local_loss = local_loss
            self.gather_with_grad = gather_with_grad
            self.rank = rank
            self.world_size = world_size
            self.prev_num_logits = 0
            self.labels = {}

        def get_ground_truth(self, device, num_logits):
            if self.prev_num_logits != num_logits or device not in self.labels:
                labels = torch.arange(num_logits, device=device, dtype=torch.long)
                if self.local_loss:
                    labels = labels + num_logits * self.rank
                self.labels[device] = labels
                self.prev_num_logits = num_logits
            else:
                labels = self.labels[device]
            return labels

        def forward(self, image_features, text_features, logit_scale):
            device = image_features.device
            all_image_features, all_text_features = gather_features(
                image_features, text_features, self.local_loss, self.gather_with_grad, self.rank, self.world_size)
            if self.local_loss:
                logits_per_image = logit_scale * image_features @ all_text_features.T
                logits_per_text = logit_scale * text_features @ all_image_features.T
            else:
                logits_per_image = logit_scale * all_image_features @ all_text_features.T
                logits_per_text = logits_per_image.T
            labels = self.get_ground_truth(device, logits_per_image.shape[0])
            return (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2

    backbone, projector = encoder(m)
    model = nn.Sequential(backbone, projector)
    text = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8))
    logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))
    holder = nn.ModuleList([model, text])
    holder.register_parameter("logit_scale", logit_scale)
    init = load(m, holder, state)
    optimizer = torch.optim.AdamW(holder.parameters(), lr=1e-2, weight_decay=0.1)
    port = importlib.import_module("socket").socket()
    port.bind(("127.0.0.1", 0))
    address = "tcp://127.0.0.1:{}".format(port.getsockname()[1])
    port.close()
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", init_method=address, rank=0,
                            world_size=1)
    losses = []
    try:
        for gather_with_grad, local_loss in ((True, False), (False, False), (False, True)):
            x = normal(rng, 4, 3, 5, 5)
            indexes = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])
            z = model(torch.tensor(np.concatenate([x + 0.1 * normal(rng, *x.shape) for _ in range(2)])))
            loss = simclr_loss_func(z, indexes, temperature=0.2)
            clip = ClipLoss(local_loss=local_loss, gather_with_grad=gather_with_grad)
            image_features = F.normalize(z[:4], dim=-1)
            text_features = F.normalize(text(torch.tensor(normal(rng, 4, 6))), dim=-1)
            loss = loss + clip(image_features, text_features, logit_scale.exp())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                logit_scale.clamp_(0, math.log(100))
            losses.append(loss.item())
    finally:
        dist.destroy_process_group()
    return init, losses + summary(holder.parameters())


def test_gathered_contrastive_losses(monkeypatch):
    if os.path.exists("/sys/class/net/lo"):  # gloo on the loopback interface, as test_distributed.py's
        monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    compare(gathered_contrastive)


# (p) Copies of torch 2's own optimizers, as repositories fork torch/optim/sgd.py and adam.py to change a line:
# the imports of torch.optim.optimizer's helpers (ParamsT, _use_grad_for_differentiable, _default_to_fused_or_foreach,
# _get_value, _stack_if_compiling, _get_scalar_dtype, _view_as_real), _init_group, the functional form choosing
# _single_tensor_* or _multi_tensor_* (foreach given), Optimizer._group_tensors_by_device_and_dtype with indices,
# torch._foreach_* with scalar lists, step counts held in 0-d tensors advanced by _foreach_add_, and the
# capture health check; the forks' own changes here: the SGD's weight decay skips 1-D parameters, and an Adam hands
# torch.optim.adam's functional adam (decoupled decay) the gradients' signs
def copied_torch_optimizers(m, state=None):
    torch, nn = m.torch, m.nn
    Tensor = torch.Tensor
    base = importlib.import_module(m.torch.__name__ + ".optim.optimizer")
    (Optimizer, ParamsT, _use_grad_for_differentiable, _default_to_fused_or_foreach, _get_value,
     _stack_if_compiling, _get_scalar_dtype, _view_as_real, _device_dtype_check_for_fused) = (
        base.Optimizer, base.ParamsT, base._use_grad_for_differentiable, base._default_to_fused_or_foreach,
        base._get_value, base._stack_if_compiling, base._get_scalar_dtype, base._view_as_real,
        base._device_dtype_check_for_fused)
    from typing import List, Optional, Union
    torch.manual_seed(0)
    rng = np.random.default_rng(18)

    class SGD(Optimizer):
        def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 1e-3, momentum: float = 0, dampening: float = 0,
                     weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                     foreach: Optional[bool] = None, differentiable: bool = False, fused: Optional[bool] = None):
            if isinstance(lr, Tensor) and lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
            if lr < 0.0:
                raise ValueError(f"Invalid learning rate: {lr}")
            if momentum < 0.0:
                raise ValueError(f"Invalid momentum value: {momentum}")
            defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                            nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                            fused=fused)
            if nesterov and (momentum <= 0 or dampening != 0):
                raise ValueError("Nesterov momentum requires a momentum and zero dampening")
            super().__init__(params, defaults)

        def __setstate__(self, state):
            super().__setstate__(state)
            for group in self.param_groups:
                group.setdefault("nesterov", False)
                group.setdefault("maximize", False)
                group.setdefault("foreach", None)
                group.setdefault("differentiable", False)
                group.setdefault("fused", False)

        def _init_group(self, group, params, grads, momentum_buffer_list):
            has_sparse_grad = False
            for p in group["params"]:
                if p.grad is not None:
                    if group["fused"] and getattr(self, "_need_device_dtype_check_for_fused", True):
                        _device_dtype_check_for_fused(p)
                        self._need_device_dtype_check_for_fused = False
                    params.append(p)
                    grads.append(p.grad)
                    if p.grad.is_sparse:
                        has_sparse_grad = True
                    if group["momentum"] != 0:
                        state = self.state[p]
                        momentum_buffer_list.append(state.get("momentum_buffer"))
            return has_sparse_grad

        @_use_grad_for_differentiable
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                params: List[Tensor] = []
                grads: List[Tensor] = []
                momentum_buffer_list: List[Optional[Tensor]] = []
                has_sparse_grad = self._init_group(group, params, grads, momentum_buffer_list)
                sgd(params, grads, momentum_buffer_list, weight_decay=group["weight_decay"],
                    momentum=group["momentum"], lr=group["lr"], dampening=group["dampening"],
                    nesterov=group["nesterov"], maximize=group["maximize"], has_sparse_grad=has_sparse_grad,
                    foreach=group["foreach"], fused=group["fused"])
                if group["momentum"] != 0:
                    # update momentum_buffers in state
                    for p, momentum_buffer in zip(params, momentum_buffer_list):
                        state = self.state[p]
                        state["momentum_buffer"] = momentum_buffer
            return loss

    def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None, *,
            weight_decay, momentum, lr, dampening, nesterov, maximize):
        if foreach is None and fused is None:
            if not torch.jit.is_scripting():
                fused, foreach = _default_to_fused_or_foreach(params, differentiable=False, use_fused=False)
            else:
                foreach = False
                fused = False
        if foreach is None:
            foreach = False
        if fused is None:
            fused = False
        if foreach and not torch.jit.is_scripting():
            func = _multi_tensor_sgd
        else:
            func = _single_tensor_sgd
        func(params, d_p_list, momentum_buffer_list, weight_decay=weight_decay, momentum=momentum, lr=lr,
             dampening=dampening, nesterov=nesterov, has_sparse_grad=has_sparse_grad, maximize=maximize)

    def _single_tensor_sgd(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening, nesterov,
                           maximize, has_sparse_grad):
        for i, param in enumerate(params):
            grad = grads[i] if not maximize else -grads[i]
            if weight_decay != 0 and param.dim() > 1:  # the fork's change
                grad = grad.add(param, alpha=weight_decay)
            if momentum != 0:
                buf = momentum_buffer_list[i]
                if buf is None:
                    buf = torch.clone(grad).detach()
                    momentum_buffer_list[i] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                if nesterov:
                    grad = grad.add(buf, alpha=momentum)
                else:
                    grad = buf
            param.add_(grad, alpha=-lr)

    def _multi_tensor_sgd(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening, nesterov,
                          maximize, has_sparse_grad):
        if len(params) == 0:
            return
        grouped_tensors = Optimizer._group_tensors_by_device_and_dtype([params, grads, momentum_buffer_list],
                                                                      with_indices=True)
        for (device_params, device_grads, device_momentum_buffer_list), indices in grouped_tensors.values():
            device_has_sparse_grad = has_sparse_grad and any(grad.is_sparse for grad in device_grads)
            if maximize:
                device_grads = torch._foreach_neg(device_grads)
            if weight_decay != 0:
                decayed = [p if p.dim() > 1 else torch.zeros_like(p) for p in device_params]  # the fork's change
                if maximize:
                    torch._foreach_add_(device_grads, decayed, alpha=weight_decay)
                else:
                    device_grads = torch._foreach_add(device_grads, decayed, alpha=weight_decay)
            if momentum != 0:
                bufs = []
                all_states_with_momentum_buffer = True
                for i in range(len(device_momentum_buffer_list)):
                    if device_momentum_buffer_list[i] is None:
                        all_states_with_momentum_buffer = False
                        break
                    else:
                        bufs.append(device_momentum_buffer_list[i])
                if all_states_with_momentum_buffer:
                    torch._foreach_mul_(bufs, momentum)
                    torch._foreach_add_(bufs, device_grads, alpha=1 - dampening)
                else:
                    bufs = []
                    for i in range(len(device_momentum_buffer_list)):
                        if device_momentum_buffer_list[i] is None:
                            buf = device_momentum_buffer_list[i] = momentum_buffer_list[indices[i]] = torch.clone(
                                device_grads[i]).detach()
                        else:
                            buf = device_momentum_buffer_list[i]
                            buf.mul_(momentum).add_(device_grads[i], alpha=1 - dampening)
                        bufs.append(buf)
                if nesterov:
                    torch._foreach_add_(device_grads, bufs, alpha=momentum)
                else:
                    device_grads = bufs
            if not device_has_sparse_grad:
                torch._foreach_add_(device_params, device_grads, alpha=-lr)
            else:
                for i in range(len(device_params)):
                    device_params[i].add_(device_grads[i], alpha=-lr)

    class Adam(Optimizer):
        def __init__(self, params: ParamsT, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                     foreach: Optional[bool] = None, maximize: bool = False, capturable: bool = False,
                     differentiable: bool = False, fused: Optional[bool] = None):
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                            maximize=maximize, foreach=foreach, capturable=capturable,
                            differentiable=differentiable, fused=fused)
            super().__init__(params, defaults)

        def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps):
            has_complex = False
            for p in group["params"]:
                if p.grad is not None:
                    has_complex |= torch.is_complex(p)
                    params_with_grad.append(p)
                    grads.append(p.grad)
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = torch.tensor(0.0, dtype=_get_scalar_dtype())
                        state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        if group["amsgrad"]:
                            state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    exp_avgs.append(state["exp_avg"])
                    exp_avg_sqs.append(state["exp_avg_sq"])
                    if group["amsgrad"]:
                        max_exp_avg_sqs.append(state["max_exp_avg_sq"])
                    state_steps.append(state["step"])
            return has_complex

        @_use_grad_for_differentiable
        def step(self, closure=None):
            self._cuda_graph_capture_health_check()
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = [], [], [], [], [], []
                beta1, beta2 = group["betas"]
                has_complex = self._init_group(group, params_with_grad, grads, exp_avgs, exp_avg_sqs,
                                               max_exp_avg_sqs, state_steps)
                func = _multi_tensor_adam if group["foreach"] else _single_tensor_adam
                func(params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                     amsgrad=group["amsgrad"], has_complex=has_complex, beta1=beta1, beta2=beta2, lr=group["lr"],
                     weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"])
            return loss

    def _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, amsgrad,
                            has_complex, beta1, beta2, lr, weight_decay, eps, maximize):
        for i, param in enumerate(params):
            grad = grads[i] if not maximize else -grads[i]
            exp_avg = exp_avgs[i]
            exp_avg_sq = exp_avg_sqs[i]
            step_t = state_steps[i]
            step_t += 1
            if weight_decay != 0:
                grad = grad.add(param, alpha=weight_decay)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad.conj(), value=1 - beta2)
            step = _get_value(step_t)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5
            if amsgrad:
                torch.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
                denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)

    def _multi_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, amsgrad,
                           has_complex, beta1, beta2, lr, weight_decay, eps, maximize):
        if len(params) == 0:
            return
        grouped_tensors = Optimizer._group_tensors_by_device_and_dtype(
            [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps])
        for ((device_params, device_grads, device_exp_avgs, device_exp_avg_sqs, device_max_exp_avg_sqs,
              device_state_steps), _) in grouped_tensors.values():
            if has_complex:
                if amsgrad:
                    _view_as_real(device_params, device_grads, device_exp_avgs, device_exp_avg_sqs,
                                  device_max_exp_avg_sqs)
                else:
                    _view_as_real(device_params, device_grads, device_exp_avgs, device_exp_avg_sqs)
            if maximize:
                device_grads = torch._foreach_neg(device_grads)
            if device_state_steps[0].is_cpu:
                torch._foreach_add_(device_state_steps, torch.tensor(1.0, device="cpu"), alpha=1.0)
            else:
                torch._foreach_add_(device_state_steps, 1)
            if weight_decay != 0:
                if maximize:
                    torch._foreach_add_(device_grads, device_params, alpha=weight_decay)
                else:
                    device_grads = torch._foreach_add(device_grads, device_params, alpha=weight_decay)
            torch._foreach_lerp_(device_exp_avgs, device_grads, 1 - beta1)
            torch._foreach_mul_(device_exp_avg_sqs, beta2)
            torch._foreach_addcmul_(device_exp_avg_sqs, device_grads, device_grads, 1 - beta2)
            del device_grads
            bias_correction1 = [1 - beta1 ** _get_value(step) for step in device_state_steps]
            bias_correction2 = [1 - beta2 ** _get_value(step) for step in device_state_steps]
            step_size = _stack_if_compiling([(lr / bc) * -1 for bc in bias_correction1])
            bias_correction2_sqrt = [bc ** 0.5 for bc in bias_correction2]
            if amsgrad:
                torch._foreach_maximum_(device_max_exp_avg_sqs, device_exp_avg_sqs)
                exp_avg_sq_sqrt = torch._foreach_sqrt(device_max_exp_avg_sqs)
            else:
                exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)
            torch._foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)
            torch._foreach_add_(exp_avg_sq_sqrt, eps)
            torch._foreach_addcdiv_(device_params, device_exp_avgs, exp_avg_sq_sqrt, step_size)

    adam = importlib.import_module(m.torch.__name__ + ".optim.adam").adam

    class GradSignAdam(Adam):
        """A fork that keeps the copy's _init_group and hands torch's functional adam the gradients' signs."""

        @_use_grad_for_differentiable
        def step(self, closure=None):
            for group in self.param_groups:
                params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = [], [], [], [], [], []
                beta1, beta2 = group["betas"]
                has_complex = self._init_group(group, params_with_grad, grads, exp_avgs, exp_avg_sqs,
                                               max_exp_avg_sqs, state_steps)
                adam(params_with_grad, [g.sign() for g in grads], exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                     state_steps, amsgrad=group["amsgrad"], has_complex=has_complex, beta1=beta1, beta2=beta2,
                     lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                     foreach=group["foreach"], capturable=group["capturable"], differentiable=group["differentiable"],
                     fused=group["fused"], grad_scale=getattr(self, "grad_scale", None),
                     found_inf=getattr(self, "found_inf", None), decoupled_weight_decay=True)

    models = [small_cnn(m) for _ in range(5)]
    holder = nn.ModuleList(models)
    init = load(m, models[0], state)
    for other in models[1:]:
        load(m, other, init)
    optimizers = [SGD(models[0].parameters(), lr=0.1, momentum=0.9, weight_decay=1e-2, nesterov=True),
                  SGD(models[1].parameters(), lr=0.1, momentum=0.9, weight_decay=1e-2, foreach=True, maximize=True),
                  Adam(models[2].parameters(), lr=1e-2, weight_decay=1e-2, amsgrad=True),
                  Adam([{"params": models[3][0].parameters(), "lr": 3e-2}, {"params": models[3][1:].parameters()}],
                       lr=1e-2, amsgrad=True, foreach=True),
                  GradSignAdam(models[4].parameters(), lr=1e-2, weight_decay=0.1)]
    losses = []
    for model, optimizer in zip(models, optimizers):
        losses += fit(m, model, optimizer, rng, steps=2)
    assert optimizers[3].state[models[3][0].weight]["step"].item() == 2
    return init, losses + summary(holder.parameters())


def test_copied_torch_optimizers():
    compare(copied_torch_optimizers)


# (q) Test-time adaptation: DequanWang/tent's Tent (the model in train mode with requires_grad_(False) but for its
# BatchNorm2d layers, whose track_running_stats is set False and running_mean/var None, so that they normalize by
# the batch even in episodes; their affine parameters collected by named_parameters; the entropy of the softmax
# minimised under @torch.enable_grad(); the model's and optimizer's state_dicts deep-copied and loaded back by
# reset()); and tim-learner/SHOT's information maximisation (entropy less the batch-mean prediction's entropy) on
# a frozen weight-normed classifier (torch.nn.utils.weight_norm), with its per-parameter groups, op_copy's lr0 and
# a schedule that writes weight_decay, momentum and nesterov into groups made without them
def time_adaptation(m, state=None):
    from copy import deepcopy
    torch, nn = m.torch, m.nn
    weightNorm = importlib.import_module(m.torch.__name__ + ".nn.utils.weight_norm").weight_norm
    torch.manual_seed(0)
    rng = np.random.default_rng(19)

    class Tent(nn.Module):
        def __init__(self, model, optimizer, steps=1, episodic=False):
            super().__init__()
            self.model = model
            self.optimizer = optimizer
            self.steps = steps
            assert steps > 0, "tent requires >= 1 step(s) to forward and update"
            self.episodic = episodic
            self.model_state, self.optimizer_state = copy_model_and_optimizer(self.model, self.optimizer)

        def forward(self, x):
            if self.episodic:
                self.reset()
            for _ in range(self.steps):
                outputs = forward_and_adapt(x, self.model, self.optimizer)
            return outputs

        def reset(self):
            if self.model_state is None or self.optimizer_state is None:
                raise Exception("cannot reset without saved model/optimizer state")
            load_model_and_optimizer(self.model, self.optimizer, self.model_state, self.optimizer_state)

    def softmax_entropy(x):
        return -(x.softmax(1) * x.log_softmax(1)).sum(1)

    @torch.enable_grad()  # ensure grads in possible no grad context for testing
    def forward_and_adapt(x, model, optimizer):
        outputs = model(x)
        loss = softmax_entropy(outputs).mean(0)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return outputs

    def collect_params(model):
        params = []
        names = []
        for nm, m_ in model.named_modules():
            if isinstance(m_, nn.BatchNorm2d):
                for np_, p in m_.named_parameters():
                    if np_ in ['weight', 'bias']:  # weight is scale, bias is shift
                        params.append(p)
                        names.append(f"{nm}.{np_}")
        return params, names

    def copy_model_and_optimizer(model, optimizer):
        model_state = deepcopy(model.state_dict())
        optimizer_state = deepcopy(optimizer.state_dict())
        return model_state, optimizer_state

    def load_model_and_optimizer(model, optimizer, model_state, optimizer_state):
        model.load_state_dict(model_state, strict=True)
        optimizer.load_state_dict(optimizer_state)

    def configure_model(model):
        model.train()
        model.requires_grad_(False)
        for m_ in model.modules():
            if isinstance(m_, nn.BatchNorm2d):
                m_.requires_grad_(True)
                # force use of batch stats in train and eval modes
                m_.track_running_stats = False
                m_.running_mean = None
                m_.running_var = None
        return model

    def Entropy(input_):
        epsilon = 1e-5
        entropy = -input_ * torch.log(input_ + epsilon)
        entropy = torch.sum(entropy, dim=1)
        return entropy

    class feat_classifier(nn.Module):
        def __init__(self, class_num, bottleneck_dim=256, type="linear"):
            super(feat_classifier, self).__init__()
            self.type = type
            if type == 'wn':
                self.fc = weightNorm(nn.Linear(bottleneck_dim, class_num), name="weight")
            else:
                self.fc = nn.Linear(bottleneck_dim, class_num)

        def forward(self, x):
            return self.fc(x)

    def op_copy(optimizer):
        for param_group in optimizer.param_groups:
            param_group['lr0'] = param_group['lr']
        return optimizer

    def lr_scheduler(optimizer, iter_num, max_iter, gamma=10, power=0.75):
        decay = (1 + gamma * iter_num / max_iter) ** (-power)
        for param_group in optimizer.param_groups:
            param_group['lr'] = param_group['lr0'] * decay
            param_group['weight_decay'] = 1e-3
            param_group['momentum'] = 0.9
            param_group['nesterov'] = True
        return optimizer

    # Tent on a source model
    model = small_cnn(m)
    netF, netC = small_cnn(m)[:-1], feat_classifier(5, bottleneck_dim=4, type='wn')
    holder = nn.ModuleList([model, netF, netC])
    init = load(m, holder, state)
    model = configure_model(model)
    params, param_names = collect_params(model)
    assert param_names == ['1.weight', '1.bias', '4.weight', '4.bias']
    assert "1.running_mean" not in model.state_dict() and not model[0].weight.requires_grad
    optimizer = torch.optim.Adam(params, lr=1e-2, betas=(0.9, 0.999), weight_decay=0.0)
    tented = Tent(model, optimizer, steps=2, episodic=False)
    losses = []
    for _ in range(2):
        x = torch.tensor(normal(rng, 4, 3, 6, 6))
        with torch.no_grad():
            outputs = tented(x)
        losses += [outputs.sum().item(), softmax_entropy(outputs).mean().item()]
    adapted = summary(params)
    tented.reset()
    model.eval()
    with torch.no_grad():
        losses.append(model(torch.tensor(normal(rng, 4, 3, 6, 6))).sum().item())
    losses += adapted + summary(params)

    # SHOT's target adaptation: the feature extractor trained, the classifier frozen
    param_group = []
    for k, v in netF.named_parameters():
        param_group += [{'params': v, 'lr': 0.01 * 0.1}]
    for k, v in netC.named_parameters():
        v.requires_grad = False
    optimizer = torch.optim.SGD(param_group)
    optimizer = op_copy(optimizer)
    max_iter, iter_num = 3, 0
    while iter_num < max_iter:
        inputs_test = torch.tensor(normal(rng, 6, 3, 6, 6))
        iter_num += 1
        lr_scheduler(optimizer, iter_num=iter_num, max_iter=max_iter)
        features_test = netF(inputs_test)
        outputs_test = netC(features_test)
        softmax_out = nn.Softmax(dim=1)(outputs_test)
        entropy_loss = torch.mean(Entropy(softmax_out))
        msoftmax = softmax_out.mean(dim=0)
        gentropy_loss = torch.sum(-msoftmax * torch.log(msoftmax + 1e-5))
        entropy_loss -= gentropy_loss
        im_loss = entropy_loss * 1.0
        optimizer.zero_grad()
        im_loss.backward()
        optimizer.step()
        losses += [im_loss.item(), optimizer.param_groups[0]['lr']]
    return init, losses + summary(netF.parameters()) + summary(netC.parameters())


def test_tent_and_shot_adaptation():
    compare(time_adaptation)


# (r) wvangansbeke/Unsupervised-Classification (SCAN): neighbours mined by the top-k of normalized features'
# similarities (faiss in the source), SCANLoss (softmax consistency of anchor and neighbour by a [b,1,n] x [b,n,1]
# bmm under BCELoss, less the entropy of the mean prediction), several cluster heads summed by torch.stack; then
# self-labelling's ConfidenceBasedCE: confident weak-view predictions (max_prob > threshold) as targets through
# torch.masked_select, class-balancing weights by torch.unique(return_counts=True) written by index
def scan(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(20)
    EPS = 1e-8

    class MaskedCrossEntropyLoss(nn.Module):
        def __init__(self):
            super(MaskedCrossEntropyLoss, self).__init__()

        def forward(self, input, target, mask, weight, reduction='mean'):
            if not (mask != 0).any():
                raise ValueError('Mask in MaskedCrossEntropyLoss is all zeros.')
            target = torch.masked_select(target, mask)
            b, c = input.size()
            n = target.size(0)
            input = torch.masked_select(input, mask.view(b, 1)).view(n, c)
            return F.cross_entropy(input, target, weight=weight, reduction=reduction)

    class ConfidenceBasedCE(nn.Module):
        def __init__(self, threshold, apply_class_balancing):
            super(ConfidenceBasedCE, self).__init__()
            self.loss = MaskedCrossEntropyLoss()
            self.softmax = nn.Softmax(dim=1)
            self.threshold = threshold
            self.apply_class_balancing = apply_class_balancing

        def forward(self, anchors_weak, anchors_strong):
            weak_anchors_prob = self.softmax(anchors_weak)
            max_prob, target = torch.max(weak_anchors_prob, dim=1)
            mask = max_prob > self.threshold
            b, c = weak_anchors_prob.size()
            target_masked = torch.masked_select(target, mask.squeeze())
            n = target_masked.size(0)
            input_ = anchors_strong
            if self.apply_class_balancing:
                idx, counts = torch.unique(target_masked, return_counts=True)
                freq = 1 / (counts.float() / n)
                weight = torch.ones(c).to(anchors_strong.device)
                weight[idx] = freq
            else:
                weight = None
            loss = self.loss(input_, target, mask, weight=weight, reduction='mean')
            return loss

    def entropy(x, input_as_probabilities):
        if input_as_probabilities:
            x_ = torch.clamp(x, min=EPS)
            b = x_ * torch.log(x_)
        else:
            b = F.softmax(x, dim=1) * F.log_softmax(x, dim=1)
        if len(b.size()) == 2:  # Sample-wise entropy
            return -b.sum(dim=1).mean()
        elif len(b.size()) == 1:  # Distribution-wise entropy
            return - b.sum()
        else:
            raise ValueError('Input tensor is %d-Dimensional' % (len(b.size())))

    class SCANLoss(nn.Module):
        def __init__(self, entropy_weight=2.0):
            super(SCANLoss, self).__init__()
            self.softmax = nn.Softmax(dim=1)
            self.bce = nn.BCELoss()
            self.entropy_weight = entropy_weight

        def forward(self, anchors, neighbors):
            b, n = anchors.size()
            anchors_prob = self.softmax(anchors)
            positives_prob = self.softmax(neighbors)
            similarity = torch.bmm(anchors_prob.view(b, 1, n), positives_prob.view(b, n, 1)).squeeze()
            ones = torch.ones_like(similarity)
            consistency_loss = self.bce(similarity, ones)
            entropy_loss = entropy(torch.mean(anchors_prob, 0), input_as_probabilities=True)
            total_loss = consistency_loss - self.entropy_weight * entropy_loss
            return total_loss, consistency_loss, entropy_loss

    class ClusteringModel(nn.Module):
        def __init__(self, backbone, nclusters, nheads=1):
            super(ClusteringModel, self).__init__()
            self.backbone = backbone['backbone']
            self.backbone_dim = backbone['dim']
            self.nheads = nheads
            assert (isinstance(self.nheads, int))
            assert (self.nheads > 0)
            self.cluster_head = nn.ModuleList([nn.Linear(self.backbone_dim, nclusters) for _ in range(self.nheads)])

        def forward(self, x, forward_pass='default'):
            if forward_pass == 'default':
                features = self.backbone(x)
                out = [cluster_head(features) for cluster_head in self.cluster_head]
            elif forward_pass == 'backbone':
                out = self.backbone(x)
            else:
                raise ValueError('Invalid forward pass {}'.format(forward_pass))
            return out

    backbone, _ = encoder(m)
    model = ClusteringModel({'backbone': backbone, 'dim': 4}, nclusters=3, nheads=2)
    init = load(m, model, state)
    images = torch.tensor(normal(rng, 10, 3, 5, 5))
    with torch.no_grad():
        model.eval()
        features = F.normalize(model(images, forward_pass='backbone'), dim=1)
        _, indices = (features @ features.t()).topk(3, dim=1)
    neighbours = indices[:, 1:]
    criterion = SCANLoss(entropy_weight=5.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    losses = []
    model.train()
    for i, batch in enumerate(([0, 2, 4, 6, 8], [1, 3, 5, 7, 9])):
        anchors = images[batch]
        neighbors = images[neighbours[batch, i]]
        anchors_output = model(anchors)
        neighbors_output = model(neighbors)
        total_loss, consistency_loss, entropy_loss = [], [], []
        for anchors_output_subhead, neighbors_output_subhead in zip(anchors_output, neighbors_output):
            total_loss_, consistency_loss_, entropy_loss_ = criterion(anchors_output_subhead, neighbors_output_subhead)
            total_loss.append(total_loss_)
            consistency_loss.append(consistency_loss_)
            entropy_loss.append(entropy_loss_)
        total_loss = torch.sum(torch.stack(total_loss, dim=0))
        optimizer.zero_grad()
        total_loss.backward()
        optimizer.step()
        losses += [total_loss.item(), consistency_loss[0].item(), entropy_loss[1].item()]
    # self-labelling on the first head
    criterion = ConfidenceBasedCE(threshold=0.4, apply_class_balancing=True)
    for _ in range(2):
        x = normal(rng, 8, 3, 5, 5)
        with torch.no_grad():
            output = model(torch.tensor(x))[0]
        output_augmented = model(torch.tensor(x + 0.2 * normal(rng, *x.shape)))[0]
        loss = criterion(output, output_augmented)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return init, losses + [int(v) for v in neighbours.flatten().tolist()] + summary(model.parameters())


def test_scan_clustering():
    compare(scan)


# (s) Online Label Smoothing (zhangchbin/OnlineLabelSmoothing): a [C, C] soft-label buffer set by fill_ and
# fill_diagonal_, the targets picked by index_select(supervise, 1, y).swapaxes(-1, -2); the correctly predicted
# samples' probabilities accumulated per predicted class by index_add_ along dim 1 and counted by index_add_; at each
# epoch's end zero counts set to 1 by boolean index, the buffer replaced (a registered buffer re-assigned) by the
# averages; and the bi-tempered logistic loss (Amid et al., its PyTorch port): log_t and exp_t, the tempered
# softmax's normalisation by fixed-point iterations (t > 1) or bisection (t < 1) inside an autograd Function whose
# backward gives the escort distribution, label smoothing on scatter_'s one-hot targets
def online_label_smoothing(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(21)

    class OnlineLabelSmoothing(nn.Module):
        def __init__(self, alpha, n_classes, smoothing=0.1):
            super().__init__()
            assert 0 <= alpha <= 1, 'Alpha must be in range [0, 1]'
            self.a = alpha
            self.n_classes = n_classes
            self.register_buffer('supervise', torch.zeros(n_classes, n_classes))
            self.supervise.fill_(smoothing / (n_classes - 1))
            self.supervise.fill_diagonal_(1 - smoothing)
            self.register_buffer('update', torch.zeros_like(self.supervise))
            self.register_buffer('idx_count', torch.zeros(n_classes))
            self.hard_loss = nn.CrossEntropyLoss()

        def forward(self, y_h, y):
            soft_loss = self.soft_loss(y_h, y)
            hard_loss = self.hard_loss(y_h, y)
            return self.a * hard_loss + (1 - self.a) * soft_loss

        def soft_loss(self, y_h, y):
            y_h = y_h.log_softmax(dim=-1)
            if self.training:
                with torch.no_grad():
                    self.step(y_h.exp(), y)
            true_dist = torch.index_select(self.supervise, 1, y).swapaxes(-1, -2)
            return torch.mean(torch.sum(-true_dist * y_h, dim=-1))

        def step(self, y_h, y):
            y_h_idx = y_h.argmax(dim=-1)
            mask = torch.eq(y_h_idx, y)
            y_h_c = y_h[mask]
            y_h_idx_c = y_h_idx[mask]
            self.update.index_add_(1, y_h_idx_c, y_h_c.swapaxes(-1, -2))
            self.idx_count.index_add_(0, y_h_idx_c, torch.ones_like(y_h_idx_c, dtype=torch.float32))

        def next_epoch(self):
            self.idx_count[torch.eq(self.idx_count, 0)] = 1  # Avoid 0 denominator
            self.update /= self.idx_count
            self.idx_count.zero_()
            self.supervise = self.update
            self.update = self.update.clone().zero_()

    def log_t(u, t):
        if t == 1.0:
            return u.log()
        else:
            return (u.pow(1.0 - t) - 1.0) / (1.0 - t)

    def exp_t(u, t):
        if t == 1:
            return u.exp()
        else:
            return (1.0 + (1.0 - t) * u).relu().pow(1.0 / (1.0 - t))

    def compute_normalization_fixed_point(activations, t, num_iters):
        mu, _ = torch.max(activations, -1, keepdim=True)
        normalized_activations_step_0 = activations - mu
        normalized_activations = normalized_activations_step_0
        for _ in range(num_iters):
            logt_partition = torch.sum(exp_t(normalized_activations, t), -1, keepdim=True)
            normalized_activations = normalized_activations_step_0 * logt_partition.pow(1.0 - t)
        logt_partition = torch.sum(exp_t(normalized_activations, t), -1, keepdim=True)
        normalization_constants = - log_t(1.0 / logt_partition, t) + mu
        return normalization_constants

    def compute_normalization_binary_search(activations, t, num_iters):
        mu, _ = torch.max(activations, -1, keepdim=True)
        normalized_activations = activations - mu
        effective_dim = torch.sum((normalized_activations > -1.0 / (1.0 - t)).to(torch.int32), dim=-1,
                                  keepdim=True).to(activations.dtype)
        shape_partition = activations.shape[:-1] + (1,)
        lower = torch.zeros(shape_partition, dtype=activations.dtype, device=activations.device)
        upper = -log_t(1.0 / effective_dim, t) * torch.ones_like(lower)
        for _ in range(num_iters):
            logt_partition = (upper + lower) / 2.0
            sum_probs = torch.sum(exp_t(normalized_activations - logt_partition, t), dim=-1, keepdim=True)
            update = (sum_probs < 1.0).to(activations.dtype)
            lower = torch.reshape(lower * update + (1.0 - update) * logt_partition, shape_partition)
            upper = torch.reshape(upper * (1.0 - update) + update * logt_partition, shape_partition)
        logt_partition = (upper + lower) / 2.0
        return logt_partition + mu

    class ComputeNormalization(torch.autograd.Function):
        @staticmethod
        def forward(ctx, activations, t, num_iters):
            if t < 1.0:
                normalization_constants = compute_normalization_binary_search(activations, t, num_iters)
            else:
                normalization_constants = compute_normalization_fixed_point(activations, t, num_iters)
            ctx.save_for_backward(activations, normalization_constants)
            ctx.t = t
            return normalization_constants

        @staticmethod
        def backward(ctx, grad_output):
            activations, normalization_constants = ctx.saved_tensors
            t = ctx.t
            normalized_activations = activations - normalization_constants
            probabilities = exp_t(normalized_activations, t)
            escorts = probabilities.pow(t)
            escorts = escorts / escorts.sum(dim=-1, keepdim=True)
            grad_input = escorts * grad_output
            return grad_input, None, None

    def tempered_softmax(activations, t, num_iters=5):
        if t == 1.0:
            return activations.softmax(dim=-1)
        normalization_constants = ComputeNormalization.apply(activations, t, num_iters)
        return exp_t(activations - normalization_constants, t)

    def bi_tempered_logistic_loss(activations, labels, t1, t2, label_smoothing=0.0, num_iters=5, reduction='mean'):
        if len(labels.shape) < len(activations.shape):  # not one-hot
            labels_onehot = torch.zeros_like(activations)
            labels_onehot.scatter_(1, labels[..., None], 1)
        else:
            labels_onehot = labels
        if label_smoothing > 0:
            num_classes = labels_onehot.shape[-1]
            labels_onehot = (1 - label_smoothing * num_classes / (num_classes - 1)) * labels_onehot + \
                label_smoothing / (num_classes - 1)
        probabilities = tempered_softmax(activations, t2, num_iters)
        loss_values = labels_onehot * log_t(labels_onehot + 1e-10, t1) - labels_onehot * log_t(probabilities, t1) - \
            labels_onehot.pow(2.0 - t1) / (2.0 - t1) + probabilities.pow(2.0 - t1) / (2.0 - t1)
        loss_values = loss_values.sum(dim=-1)  # sum over classes
        if reduction == 'none':
            return loss_values
        if reduction == 'sum':
            return loss_values.sum()
        if reduction == 'mean':
            return loss_values.mean()

    models = [small_cnn(m) for _ in range(2)]
    holder = nn.ModuleList(models)
    init = load(m, holder, state)
    ols = OnlineLabelSmoothing(alpha=0.5, n_classes=5, smoothing=0.1)
    optimizers = [torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9) for model in models]
    losses = []
    for epoch in range(2):
        ols.train()
        for _ in range(2):
            x = torch.tensor(normal(rng, 8, 3, 6, 6))
            y = torch.tensor(rng.integers(0, 5, 8))
            loss = ols(models[0](x), y)
            optimizers[0].zero_grad()
            loss.backward()
            optimizers[0].step()
            loss2 = bi_tempered_logistic_loss(models[1](x), y, t1=0.8, t2=1.2, label_smoothing=0.1) + \
                bi_tempered_logistic_loss(models[1](x), y, t1=0.9, t2=0.8, num_iters=8, reduction='sum') / 8
            optimizers[1].zero_grad()
            loss2.backward()
            optimizers[1].step()
            losses += [loss.item(), loss2.item()]
        ols.next_epoch()
        losses += ols.supervise.flatten().tolist()
    assert "supervise" in dict(ols.named_buffers())
    return init, losses + summary(holder.parameters())


def test_online_label_smoothing_bi_tempered_loss():
    compare(online_label_smoothing)


# (t) pytorch/examples' imagenet checkpointing grown as repositories grow it: save_checkpoint of {'epoch', 'arch',
# 'state_dict', 'best_acc1', 'optimizer', 'scheduler' (SequentialLR of a LinearLR warm-up and CosineAnnealingLR),
# 'scaler', 'args' (an argparse Namespace), the set of classes seen, and the RNG states of torch, numpy's global
# generator and python's random} through torch.save, shutil.copyfile to model_best, then a fresh model, optimizer,
# scheduler and scaler resumed from torch.load(..., map_location='cpu', weights_only=False) with set_rng_state,
# np.random.set_state and random.setstate. Batches come from numpy's global generator and a python coin flip, so a
# resumed run sees the same data; with dropout, tnet's resumed run repeats its uninterrupted one exactly
def resume_with_rng_states(m, state=None, drop=0.0, tmp=None, split=2):
    import argparse
    import random
    import shutil
    torch, nn, F = m.torch, m.nn, m.F
    outer = np.random.get_state(), random.getstate()
    args = argparse.Namespace(arch="small_cnn", lr=0.05, epochs=4, warmup=2, amp=False)

    def build():
        model = nn.Sequential(*small_cnn(m)[:-1], nn.Dropout(drop), nn.Linear(4, 5))
        optimizer = torch.optim.AdamW(model.parameters(), args.lr, weight_decay=0.05)
        warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=args.warmup)
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs - args.warmup)
        scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine], milestones=[args.warmup])
        scaler = torch.amp.GradScaler("cuda", enabled=args.amp)
        return model, optimizer, scheduler, scaler

    def train(model, optimizer, scheduler, scaler, seen):
        model.train()
        x = np.random.standard_normal((4, 3, 6, 6)).astype(np.float32)
        if random.random() < 0.5:
            x = x[..., ::-1].copy()  # a horizontal flip
        y = np.random.randint(0, 5, 4)
        seen.update(int(v) for v in y)
        with torch.autocast("cuda", enabled=args.amp):
            loss = F.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        return loss.item()

    def save_checkpoint(state, is_best, filename):
        torch.save(state, filename)
        if is_best:
            shutil.copyfile(filename, filename.replace("checkpoint", "model_best"))

    try:
        np.random.seed(0)
        random.seed(0)
        torch.manual_seed(0)
        model, optimizer, scheduler, scaler = build()
        init = load(m, model, state)
        losses, seen, best_acc1 = [], set(), 0.0
        filename = os.path.join(tmp, m.torch.__name__ + "_checkpoint.pth.tar")
        for epoch in range(args.epochs):
            if epoch == split:
                save_checkpoint({'epoch': epoch, 'arch': args.arch, 'state_dict': model.state_dict(),
                                 'best_acc1': best_acc1, 'optimizer': optimizer.state_dict(),
                                 'scheduler': scheduler.state_dict(), 'scaler': scaler.state_dict(), 'args': args,
                                 'seen': seen, 'rng_state': {'torch': torch.get_rng_state(),
                                                             'numpy': np.random.get_state(),
                                                             'python': random.getstate()}},
                                is_best=True, filename=filename)
                uninterrupted = [train(model, optimizer, scheduler, scaler, set(seen)) for _ in range(split, args.epochs)]
                # start afresh: everything from the checkpoint, the generators moved on meanwhile
                torch.manual_seed(123)
                np.random.seed(123)
                random.seed(123)
                model, optimizer, scheduler, scaler = build()
                checkpoint = torch.load(filename.replace("checkpoint", "model_best"), map_location='cpu',
                                        weights_only=False)
                start_epoch = checkpoint['epoch']
                best_acc1 = checkpoint['best_acc1']
                model.load_state_dict(checkpoint['state_dict'])
                optimizer.load_state_dict(checkpoint['optimizer'])
                scheduler.load_state_dict(checkpoint['scheduler'])
                scaler.load_state_dict(checkpoint['scaler'])
                torch.set_rng_state(checkpoint['rng_state']['torch'])
                np.random.set_state(checkpoint['rng_state']['numpy'])
                random.setstate(checkpoint['rng_state']['python'])
                seen = checkpoint['seen']
                assert start_epoch == split and checkpoint['args'].arch == "small_cnn" and isinstance(seen, set)
            losses.append(train(model, optimizer, scheduler, scaler, seen))
            best_acc1 = max(best_acc1, -losses[-1])
        resumed = losses[split:]
    finally:
        np.random.set_state(outer[0])
        random.setstate(outer[1])
    return init, losses + [optimizer.param_groups[0]['lr'], len(seen)] + summary(model.parameters()) + \
        [float(np.max(np.abs(np.subtract(resumed, uninterrupted))))]


def test_resume_with_rng_states(tmp_path):
    compare(resume_with_rng_states, tmp=str(tmp_path))


def test_resume_with_rng_states_repeats_dropout_masks(tmp_path):
    """In tnet alone (its dropout masks are its own): the resumed steps' losses are the uninterrupted ones'."""
    _, out = resume_with_rng_states(imports("tnet"), drop=0.3, tmp=str(tmp_path))
    assert out[-1] == 0.0, out


# (u) Deep metric learning with proxies and pairs: tjddus9597/Proxy-Anchor-CVPR2020 (proxies a Parameter initialised
# by kaiming_normal_(mode='fan_out') in a param group of their own at 100x the lr, its l2_norm by expand_as, targets
# binarized into torch.FloatTensor of a numpy one-hot (sklearn's label_binarize in the source), the proxies with
# positives by torch.nonzero(...).squeeze(dim=1), sums under torch.where; BatchNorm frozen by m.eval(); gradients
# clipped by value; Recall@K by topk of F.linear(X, X) and `t in torch.Tensor(y).long()[:k]`); idstcv/SoftTriple (K
# centres per class, a bool mask filled by slice assignment and used to index the centres' similarities, a margin
# written by index); TinyZeaMays/CircleLoss (pair similarities picked by the flattened bool triu of a label matrix,
# weights from detached similarities by clamp_min, softplus of two logsumexps)
def metric_learning_proxies(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    init_ = nn.init
    Parameter = nn.Parameter
    torch.manual_seed(0)
    rng = np.random.default_rng(22)

    def binarize(T, nb_classes):
        T = T.cpu().numpy()
        T = np.eye(nb_classes)[T]  # sklearn.preprocessing.label_binarize in the source
        T = torch.FloatTensor(T)
        return T

    def l2_norm(input):
        input_size = input.size()
        buffer = torch.pow(input, 2)
        normp = torch.sum(buffer, 1).add_(1e-12)
        norm = torch.sqrt(normp)
        _output = torch.div(input, norm.view(-1, 1).expand_as(input))
        output = _output.view(input_size)
        return output

    class Proxy_Anchor(torch.nn.Module):
        def __init__(self, nb_classes, sz_embed, mrg=0.1, alpha=32):
            torch.nn.Module.__init__(self)
            self.proxies = torch.nn.Parameter(torch.randn(nb_classes, sz_embed))
            nn.init.kaiming_normal_(self.proxies, mode='fan_out')
            self.nb_classes = nb_classes
            self.sz_embed = sz_embed
            self.mrg = mrg
            self.alpha = alpha

        def forward(self, X, T):
            P = self.proxies
            cos = F.linear(l2_norm(X), l2_norm(P))  # Calcluate cosine similarity
            P_one_hot = binarize(T=T, nb_classes=self.nb_classes)
            N_one_hot = 1 - P_one_hot
            pos_exp = torch.exp(-self.alpha * (cos - self.mrg))
            neg_exp = torch.exp(self.alpha * (cos + self.mrg))
            with_pos_proxies = torch.nonzero(P_one_hot.sum(dim=0) != 0).squeeze(dim=1)
            num_valid_proxies = len(with_pos_proxies)
            P_sim_sum = torch.where(P_one_hot == 1, pos_exp, torch.zeros_like(pos_exp)).sum(dim=0)
            N_sim_sum = torch.where(N_one_hot == 1, neg_exp, torch.zeros_like(neg_exp)).sum(dim=0)
            pos_term = torch.log(1 + P_sim_sum).sum() / num_valid_proxies
            neg_term = torch.log(1 + N_sim_sum).sum() / self.nb_classes
            loss = pos_term + neg_term
            return loss

    class SoftTriple(nn.Module):
        def __init__(self, la, gamma, tau, margin, dim, cN, K):
            super(SoftTriple, self).__init__()
            self.la = la
            self.gamma = 1. / gamma
            self.tau = tau
            self.margin = margin
            self.cN = cN
            self.K = K
            self.fc = Parameter(torch.Tensor(dim, cN * K))
            self.weight = torch.zeros(cN * K, cN * K, dtype=torch.bool)
            for i in range(0, cN):
                for j in range(0, K):
                    self.weight[i * K + j, i * K + j + 1:(i + 1) * K] = 1
            init_.kaiming_uniform_(self.fc, a=math.sqrt(5))
            return

        def forward(self, input, target):
            centers = F.normalize(self.fc, p=2, dim=0)
            simInd = input.matmul(centers)
            simStruc = simInd.reshape(-1, self.cN, self.K)
            prob = F.softmax(simStruc * self.gamma, dim=2)
            simClass = torch.sum(prob * simStruc, dim=2)
            marginM = torch.zeros(simClass.shape)
            marginM[torch.arange(0, marginM.shape[0]), target] = self.margin
            lossClassify = F.cross_entropy(self.la * (simClass - marginM), target)
            if self.tau > 0 and self.K > 1:
                simCenter = centers.t().matmul(centers)
                reg = torch.sum(torch.sqrt(2.0 + 1e-5 - 2. * simCenter[self.weight])) / (self.cN * self.K * (self.K - 1.))
                return lossClassify + self.tau * reg
            else:
                return lossClassify

    def convert_label_to_similarity(normed_feature, label):
        similarity_matrix = normed_feature @ normed_feature.transpose(1, 0)
        label_matrix = label.unsqueeze(1) == label.unsqueeze(0)
        positive_matrix = label_matrix.triu(diagonal=1)
        negative_matrix = label_matrix.logical_not().triu(diagonal=1)
        similarity_matrix = similarity_matrix.view(-1)
        positive_matrix = positive_matrix.view(-1)
        negative_matrix = negative_matrix.view(-1)
        return similarity_matrix[positive_matrix], similarity_matrix[negative_matrix]

    class CircleLoss(nn.Module):
        def __init__(self, m: float, gamma: float) -> None:
            super(CircleLoss, self).__init__()
            self.m = m
            self.gamma = gamma
            self.soft_plus = nn.Softplus()

        def forward(self, sp, sn):
            ap = torch.clamp_min(- sp.detach() + 1 + self.m, min=0.)
            an = torch.clamp_min(sn.detach() + self.m, min=0.)
            delta_p = 1 - self.m
            delta_n = self.m
            logit_p = - ap * (sp - delta_p) * self.gamma
            logit_n = an * (sn - delta_n) * self.gamma
            loss = self.soft_plus(torch.logsumexp(logit_n, dim=0) + torch.logsumexp(logit_p, dim=0))
            return loss

    def calc_recall_at_k(T, Y, k):
        s = 0
        for t, y in zip(T, Y):
            if t in torch.Tensor(y).long()[:k]:
                s += 1
        return s / (1. * len(T))

    backbone, _ = encoder(m)
    model = nn.Sequential(backbone, nn.Linear(4, 6))
    criterion = Proxy_Anchor(nb_classes=4, sz_embed=6, mrg=0.1, alpha=8)
    soft_triple = SoftTriple(la=5, gamma=0.1, tau=0.2, margin=0.01, dim=6, cN=4, K=3)
    circle = CircleLoss(m=0.25, gamma=16)
    holder = nn.ModuleList([model, criterion, soft_triple])
    init = load(m, holder, state)
    param_groups = [{'params': model.parameters()},
                    {'params': list(criterion.parameters()) + list(soft_triple.parameters()), 'lr': 1e-3 * 100}]
    opt = torch.optim.AdamW(param_groups, lr=1e-3, weight_decay=1e-4)
    losses = []
    for epoch in range(2):
        model.train()
        modules = model.modules()
        for m_ in modules:
            if isinstance(m_, nn.BatchNorm2d) and epoch > 0:  # bn_freeze
                m_.eval()
        x = torch.tensor(normal(rng, 8, 3, 5, 5))
        y = torch.tensor(np.array([0, 0, 1, 1, 2, 2, 3, 1]))
        m_out = model(x)
        loss = criterion(m_out, y) + soft_triple(F.normalize(m_out, p=2, dim=1), y) + \
            circle(*convert_label_to_similarity(F.normalize(m_out), y)) / 8
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 10)
        torch.nn.utils.clip_grad_value_(criterion.parameters(), 10)
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        X = l2_norm(model(torch.tensor(normal(rng, 8, 3, 5, 5))))
        T = torch.tensor(np.array([0, 0, 1, 1, 2, 2, 3, 3]))
        cos_sim = F.linear(X, X)
        Y = T[cos_sim.topk(1 + 4)[1][:, 1:]]
        Y = Y.float().cpu()
        recall = [calc_recall_at_k(T, Y, k) for k in (1, 2, 4)]
    return init, losses + recall + summary(holder.parameters())


def test_metric_learning_proxies():
    compare(metric_learning_proxies)
