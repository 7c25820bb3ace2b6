"""torch.optim.sgd.sgd, torch.optim.adam.adam and torch.optim.adamw.adamw: the functional steps that a fork of a
torch optimizer calls from its own step() (an Adam subclass that changes the gradients, then calls adam(...)). Each
updates the given tensors in place with tensor ops, as torch's single-tensor path does (its foreach path gives the
same numbers; foreach, fused and capturable are taken and change nothing), under the caller's grad mode (a step()
runs under no_grad). A tensor lr or beta is read on the host; differentiable=True and the fused path's grad_scale
and found_inf are not supported."""
from ..functional import maximum
from ..tensor import Tensor
from .optimizer import host_value


def _no_scaling(name, grad_scale, found_inf):
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError(f"{name}: grad_scale and found_inf (torch's fused path) are not supported")


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
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
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
