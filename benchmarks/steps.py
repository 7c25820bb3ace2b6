"""CIFAR-10 quick training steps, tnet's and PyTorch's, from the same weights on the same batches:
the layers, train and profile studies' nets, and the check of a step against PyTorch in float64
(a step is timed only after it passes)."""
import collections
import math

import numpy as np

import torch

from .common import block_time, check_then_time, numpy_state, rel_error

SOLVER = {"lr": 0.001, "momentum": 0.9, "weight_decay": 0.004}  # Caffe's cifar10_quick_solver.prototxt
N_BATCHES = 4  # different random batches, cycled through
CHECK_STEPS = 2  # steps compared with PyTorch in float64 before timing; the second one uses the momentum
# Bounds relative to float64 PyTorch. The changes' bound is loose for tf32: emulating tf32 GEMMs on the CPU
# (operands rounded to 10-bit mantissas) puts the worst, conv1.weight's change, 2e-2 to 5e-2 off, where a
# missing update, momentum or bias lr_mult is 0.3 to 1 off. The losses agreed to 1e-7 to 1e-5 there.
CHECK_TOL = {"loss": 1e-3, "change": 0.2}
# bf16 steps (16-bit activations, autocast) against the same float64 truth: bf16's 8-bit mantissas put
# the loss near 1e-2 off and the changes 0.1-0.3 off, still under a missing update's 1.0
CHECK_TOL_BF16 = {"loss": 3e-2, "change": 0.6}


def random_batches(batch, device, n=N_BATCHES, seed=0, std=50):
    """n different (images, labels) batches: randn * std (50: about the spread of Caffe's
    mean-subtracted pixels; 1: images normalised per channel, airbench's) and random labels;
    drawn on the host so any device gets the same."""
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 3, 32, 32, generator=gen).mul_(std).to(device),
             torch.randint(0, 10, (batch,), generator=gen).to(device)) for _ in range(n)]


def tnet_quick(width=1):
    """tnet's cifar10_quick (seed 0) and Caffe's solver: (model, optimizer, parameters by name)."""
    from tnet import optim
    from tnet.models import cifar10_quick
    model = cifar10_quick(width=width)
    return model, optim.SGD(model.parameters(), **SOLVER), {n: p.memory for n, p in model.named_parameters()}


def tnet_variant(width, batches, graphed=False, dtype=None):
    """(step(x, y) -> loss, parameters): tnet eager, or captured whole by tnet.graph.TrainStep;
    dtype: under tnet.autocast(dtype=dtype)."""
    from tnet.graph import TrainStep
    from tnet.recipes import make_train_step
    model, opt, params = tnet_quick(width)
    step = make_train_step(model, opt, dtype=dtype)
    return (TrainStep(step, *batches[0], state=(model, opt)) if graphed else step), params


def torch_quick(state):
    """cifar10_quick as a torch.nn.Sequential holding a tnet state_dict, under the same
    parameter names: conv 5x5 pad 2, max pool 3 stride 2 (ceil), ReLU, conv, ReLU, avg pool,
    conv, ReLU, avg pool, then two linear layers."""
    nn = torch.nn
    c1, c2, c3, hidden = (state[f"{layer}.weight"].shape[0] for layer in ("conv1", "conv2", "conv3", "ip1"))
    net = nn.Sequential(collections.OrderedDict([
        ("conv1", nn.Conv2d(3, c1, 5, padding=2)),
        ("pool1", nn.MaxPool2d(3, 2, ceil_mode=True)),
        ("relu1", nn.ReLU()),
        ("conv2", nn.Conv2d(c1, c2, 5, padding=2)),
        ("relu2", nn.ReLU()),
        ("pool2", nn.AvgPool2d(3, 2, ceil_mode=True)),
        ("conv3", nn.Conv2d(c2, c3, 5, padding=2)),
        ("relu3", nn.ReLU()),
        ("pool3", nn.AvgPool2d(3, 2, ceil_mode=True)),
        ("flatten", nn.Flatten()),
        ("ip1", nn.Linear(c3 * 4 * 4, hidden)),
        ("ip2", nn.Linear(hidden, 10)),
    ]))
    net.load_state_dict({name: torch.from_numpy(np.asarray(value)) for name, value in state.items()})
    return net


def torch_sgd(net):
    """SOLVER in torch.optim, biases at twice the lr (Caffe's lr_mult 2). At a constant lr,
    torch's rule (buf = m*buf + g + wd*p; p -= lr*buf) takes the same steps as Caffe's
    (h = m*h + lr*(g + wd*p); p -= h)."""
    weights = [p for n, p in net.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in net.named_parameters() if n.endswith("bias")]
    return torch.optim.SGD([{"params": weights}, {"params": biases, "lr": 2 * SOLVER["lr"]}], **SOLVER,
                           foreach=True)


def torch_variant(width, batches, graphed=False, dtype=None):
    """(step(x, y) -> loss, parameters): PyTorch on the batches' device and in their dtype,
    from tnet's initial weights; graphed captures the whole step in a CUDA graph; dtype: the
    forward and the loss under torch.autocast(dtype=dtype)."""
    from tnet.models import cifar10_quick
    x0, y0 = batches[0]
    net = torch_quick(numpy_state(cifar10_quick(width=width))).to(x0.device, x0.dtype)
    return torch_train_step(net, torch_sgd(net), x0, y0, graphed, dtype)


def torch_train_step(net, opt, x0, y0, graphed=False, autocast=None, label_smoothing=0.0):
    """(step(x, y) -> loss, parameters by name): one step of opt on net's cross-entropy (with
    label_smoothing), the forward and the loss under torch.autocast(dtype=autocast) if given;
    graphed: captured whole (torch_graphed) for batches shaped like (x0, y0)."""
    def step(x, y):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(x.device.type, dtype=autocast, enabled=autocast is not None):
            loss = torch.nn.functional.cross_entropy(net(x), y, label_smoothing=label_smoothing)
        loss.backward()
        opt.step()
        return loss.detach()
    return (torch_graphed(step, net, opt, x0, y0) if graphed else step), dict(net.named_parameters())


def torch_graphed(step, net, opt, x, y):
    """step(x, y) captured with tnet.graph.Graph, as tnet's TrainStep is: warm-up on a side
    stream, then torch.cuda.graph. The warm-up is undone: the weights go back and the momentum
    to zero, which is where SGD's first step starts. Calls copy the batch into static inputs."""
    from tnet.graph import Graph
    x, y = x.clone(), y.clone()
    initial = {k: v.clone() for k, v in net.state_dict().items()}

    def restore():
        net.load_state_dict(initial)
        for state in opt.state.values():
            state["momentum_buffer"].zero_()
    graph = Graph(lambda: step(x, y), restore, warmup=3)  # the first warm-up runs let cuDNN pick algorithms

    def replay(xb, yb):
        x.copy_(xb)
        y.copy_(yb)
        return graph()
    return replay


def record(step, params, batches, n=None):
    """What the first n steps (default CHECK_STEPS) do, in float64 on the host: their losses
    ("loss") and each parameter's change over them (by name)."""
    before = {name: p.detach().to("cpu", torch.float64, copy=True) for name, p in params.items()}
    losses = torch.tensor([float(step(x, y)) for x, y in batches[:n or CHECK_STEPS]], dtype=torch.float64)
    return {"loss": losses, **{name: p.detach().double().cpu() - before[name] for name, p in params.items()}}


def reference_record(width, batches):
    """record() of PyTorch in float64, from the same weights on the same batches: the truth."""
    batches = [(x.double(), y) for x, y in batches]
    return record(*torch_variant(width, batches), batches)


def check_record(rec, ref, tol=CHECK_TOL):
    """Compare a record with the reference: (err, tol, name) of the piece furthest out of
    tol (CHECK_TOL: relative to its tolerance), so err <= tol exactly when every piece is within."""
    errs = {name: (rel_error(rec[name], ref[name]), tol["loss" if name == "loss" else "change"])
            for name in ref}
    name = max(errs, key=lambda k: math.inf if math.isnan(errs[k][0]) else errs[k][0] / errs[k][1])
    return (*errs[name], name)


def check_then_time_steps(make, batches, ref, device, timing, tol=CHECK_TOL, n=None):
    """make() -> (step, parameters) from the initial weights; its first n steps (default
    CHECK_STEPS) are compared with ref (within tol), and only if they agree is it timed with
    block_time(**timing), carrying on from there. The row's fields, and "worst": the piece
    furthest out."""
    built = {}

    def check():
        built["step"], params = make()
        err, bound, built["worst"] = check_record(record(built["step"], params, batches, n), ref, tol)
        return err, bound
    row = check_then_time(check, lambda: block_time(built["step"], batches, device, **timing))
    return {**row, "worst": built.get("worst")}
