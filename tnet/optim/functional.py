"""torch.optim.sgd.sgd, torch.optim.adam.adam, torch.optim.adamw.adamw and the other optimizers' modules' functional
steps (rmsprop, adagrad, adamax, nadam, radam, asgd, adadelta, rprop): those that a fork of a torch optimizer calls
from its own step() (an Adam subclass that changes the gradients, then calls adam(...)). Each
updates the given tensors in place with tensor ops, as torch's single-tensor path does (its foreach path gives the
same numbers; foreach, fused and capturable are taken and change nothing), under the caller's grad mode (a step()
runs under no_grad). A tensor lr or beta is read on the host; differentiable=True and the fused path's grad_scale
and found_inf are not supported."""
from ..functional import maximum, where
from ..tensor import Tensor
from .optimizer import host_value


def _no_scaling(name, grad_scale, found_inf):
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError(f"{name}: grad_scale and found_inf (torch's fused path) are not supported")


def _plain(name, differentiable, state_steps):
    """The checks every step shares: differentiable=True is not supported, and the step counts are tensors."""
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True is not supported")
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")


def _decayed(grad, param, weight_decay, maximize, decoupled_lr=None):
    """The gradient the steps read: negated under maximize, weight_decay * param added (L2); decoupled_lr: AdamW's
    decoupled decay instead, param scaled by 1 - decoupled_lr * weight_decay in place and the gradient left."""
    grad = -grad if maximize else grad
    if weight_decay == 0:
        return grad
    if decoupled_lr is not None:
        param.mul_(1 - decoupled_lr * weight_decay)
        return grad
    return grad.add(param, alpha=weight_decay)


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None, grad_scale=None,
        found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """SGD's step on each params[i] with gradient d_p_list[i]; a None in momentum_buffer_list is replaced by the new
    buffer (the caller stores it in its state), as torch's."""
    _no_scaling("sgd", grad_scale, found_inf)
    lr = host_value(lr)
    for i, param in enumerate(params):
        grad = d_p_list[i] if not maximize else -d_p_list[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = grad.detach().clone()
                momentum_buffer_list[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
         differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False,
         decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """Adam's step (AdamW's with decoupled_weight_decay): each state_steps[i], a one-element tensor, advances by one,
    and the moments, the AMSGrad maximum and the parameter change in place."""
    _no_scaling("adam", grad_scale, found_inf)
    if differentiable:
        raise NotImplementedError("adam: differentiable=True is not supported")
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    lr, beta1, beta2 = (host_value(v) for v in (lr, beta1, beta2))
    for i, param in enumerate(params):
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t += 1
        grad = _decayed(grads[i], param, weight_decay, maximize, lr if decoupled_weight_decay else None)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = host_value(step_t)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if amsgrad:
            maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
          differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False, *, amsgrad, beta1,
          beta2, lr, weight_decay, eps, maximize):
    """adam(...) with decoupled weight decay, as torch's."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=foreach, capturable=capturable,
         differentiable=differentiable, fused=fused, grad_scale=grad_scale, found_inf=found_inf,
         has_complex=has_complex, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay,
         eps=eps, maximize=maximize, decoupled_weight_decay=True)


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, foreach=None, maximize=False,
            differentiable=False, capturable=False, has_complex=False, *, lr, alpha, eps, weight_decay, momentum,
            centered):
    """RMSprop's step: square_avgs (grad_avgs where centered, momentum_buffer_list where momentum > 0) and the
    parameters in place, each state_steps[i] advanced by one."""
    _plain("rmsprop", differentiable, state_steps)
    lr = host_value(lr)
    for i, param in enumerate(params):
        grad, square_avg = _decayed(grads[i], param, weight_decay, maximize), square_avgs[i]
        state_steps[i] += 1
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avgs[i].lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avgs[i], grad_avgs[i], value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            momentum_buffer_list[i].mul_(momentum).addcdiv_(grad, avg)
            param.add_(momentum_buffer_list[i], alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None, found_inf=None,
            has_sparse_grad=False, foreach=None, differentiable=False, has_complex=False, *, lr, weight_decay,
            lr_decay, eps, maximize):
    """Adagrad's step: the sums of squared gradients and the parameters in place, at lr / (1 + (step - 1) *
    lr_decay); dense gradients only."""
    _no_scaling("adagrad", grad_scale, found_inf)
    _plain("adagrad", differentiable, state_steps)
    lr = host_value(lr)
    for i, param in enumerate(params):
        grad = _decayed(grads[i], param, weight_decay, maximize)
        state_steps[i] += 1
        clr = lr / (1 + (host_value(state_steps[i]) - 1) * lr_decay)
        state_sums[i].addcmul_(grad, grad, value=1)
        param.addcdiv_(grad, state_sums[i].sqrt().add_(eps), value=-clr)


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False, differentiable=False,
           capturable=False, has_complex=False, *, eps, beta1, beta2, lr, weight_decay):
    """Adamax's step: the first moments, the infinity norms max(beta2 * u, |g| + eps) and the parameters in
    place."""
    _plain("adamax", differentiable, state_steps)
    lr, beta1, beta2 = (host_value(v) for v in (lr, beta1, beta2))
    for i, param in enumerate(params):
        grad = _decayed(grads[i], param, weight_decay, maximize)
        state_steps[i] += 1
        exp_avgs[i].lerp_(grad, 1 - beta1)
        maximum(exp_infs[i].mul_(beta2), grad.abs().add_(eps), out=exp_infs[i])
        param.addcdiv_(exp_avgs[i], exp_infs[i], value=-lr / (1 - beta1 ** host_value(state_steps[i])))


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, decoupled_weight_decay=False,
          foreach=None, capturable=False, differentiable=False, has_complex=False, maximize=False, *, beta1, beta2,
          lr, weight_decay, momentum_decay, eps):
    """NAdam's step: the moments, the momentum schedule's products (mu_products, one-element tensors) and the
    parameters in place; decoupled_weight_decay: AdamW's decay."""
    _plain("nadam", differentiable, state_steps)
    lr, beta1, beta2 = (host_value(v) for v in (lr, beta1, beta2))
    for i, param in enumerate(params):
        state_steps[i] += 1
        step = host_value(state_steps[i])
        grad = _decayed(grads[i], param, weight_decay, maximize, lr if decoupled_weight_decay else None)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_products[i] *= mu
        mu_product = host_value(mu_products[i])
        exp_avgs[i].lerp_(grad, 1 - beta1)
        exp_avg_sqs[i].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sqs[i].div(1 - beta2 ** step).sqrt().add_(eps)
        param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        param.addcdiv_(exp_avgs[i], denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False, foreach=None,
          differentiable=False, capturable=False, has_complex=False, maximize=False, *, beta1, beta2, lr,
          weight_decay, eps):
    """RAdam's step: the moments and the parameters in place, the adaptive term rectified once the variance's
    length of its approximated SMA (rho_t) passes 5, plain momentum SGD before."""
    _plain("radam", differentiable, state_steps)
    lr, beta1, beta2 = (host_value(v) for v in (lr, beta1, beta2))
    rho_inf = 2 / (1 - beta2) - 1
    for i, param in enumerate(params):
        state_steps[i] += 1
        step = host_value(state_steps[i])
        grad = _decayed(grads[i], param, weight_decay, maximize, lr if decoupled_weight_decay else None)
        exp_avgs[i].lerp_(grad, 1 - beta1)
        exp_avg_sqs[i].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction2 = 1 - beta2 ** step
        corrected = exp_avgs[i] / (1 - beta1 ** step)
        rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = bias_correction2 ** 0.5 / exp_avg_sqs[i].sqrt().add_(eps)
            param.add_(corrected * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(corrected * lr, alpha=-1.0)


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False, differentiable=False,
         capturable=False, has_complex=False, *, lambd, lr, t0, alpha, weight_decay):
    """ASGD's step: the parameters decayed by lambd * eta and stepped by eta, their averages axs, and the
    one-element eta and mu for the next step, in place."""
    _plain("asgd", differentiable, state_steps)
    lr = host_value(lr)
    for i, param in enumerate(params):
        grad = _decayed(grads[i], param, weight_decay, maximize)
        state_steps[i] += 1
        step, eta, mu = host_value(state_steps[i]), host_value(etas[i]), host_value(mus[i])
        param.mul_(1 - lambd * eta)
        param.add_(grad, alpha=-eta)
        if mu != 1:
            axs[i].add_(param.sub(axs[i]).mul_(mu))
        else:
            axs[i].copy_(param)
        etas[i].fill_(lr / (1 + lambd * lr * step) ** alpha)
        mus[i].fill_(1 / max(1, step - t0))


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False, foreach=None,
             differentiable=False, has_complex=False, *, lr, rho, eps, weight_decay, maximize):
    """Adadelta's step: the running averages of squared gradients and of squared updates, and the parameters,
    in place."""
    _plain("adadelta", differentiable, state_steps)
    lr = host_value(lr)
    for i, param in enumerate(params):
        grad = _decayed(grads[i], param, weight_decay, maximize)
        state_steps[i] += 1
        square_avgs[i].mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avgs[i].add(eps).sqrt_()
        delta = acc_deltas[i].add(eps).sqrt_().div_(std).mul_(grad)
        acc_deltas[i].mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False, maximize=False,
          differentiable=False, has_complex=False, *, step_size_min, step_size_max, etaminus, etaplus):
    """Rprop's step: each step size times etaplus where the gradient kept its sign, etaminus where it flipped
    (that gradient then counts as 0), clamped to [step_size_min, step_size_max]; the parameters moved by the
    sign times it; prevs, the gradients kept, in place."""
    _plain("rprop", differentiable, state_steps)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        state_steps[i] += 1
        agree = grad.mul(prevs[i]).sign()
        factor = where(agree > 0, etaplus, where(agree < 0, etaminus, 1.0))
        step_sizes[i].mul_(factor).clamp_(step_size_min, step_size_max)
        grad = where(factor == etaminus, 0.0, grad)
        param.addcmul_(grad.sign(), step_sizes[i], value=-1)
        prevs[i].copy_(grad)
