import torch, tnet
import tnet.functional as F
from tnet import nn
DEV = tnet.DEVICE

def make(kind, opt_kind, seed=0):
    tnet.manual_seed(seed)
    layers = {"linear": [nn.Flatten(), nn.Linear(3*8*8, 10)],
              "conv": [nn.Conv2d(3, 8, 3, padding=1), nn.Flatten(), nn.Linear(8*64, 10)],
              "bn": [nn.BatchNorm2d(3), nn.Flatten(), nn.Linear(3*64, 10)],
              "pool": [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 10)],
              "full": [nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)]}[kind]
    model = nn.Sequential(*layers)
    opt = {"sgd": lambda p: tnet.optim.SGD(p, lr=0.1), "mom": lambda p: tnet.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4),
           "adamw": lambda p: tnet.optim.AdamW(p, lr=1e-2)}[opt_kind](model.parameters())
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return model, step

gen = torch.Generator().manual_seed(1)
batches = [(tnet.Tensor(torch.randn(4, 3, 8, 8, generator=gen).to(DEV)), tnet.Tensor(torch.randint(0, 10, (4,), generator=gen).to(DEV))) for _ in range(4)]
for kind in ["linear", "conv", "bn", "pool", "full"]:
    for opt_kind in ["sgd", "mom", "adamw"]:
        m1, s1 = make(kind, opt_kind); eager = [s1(x, y).item() for x, y in batches]
        m2, s2 = make(kind, opt_kind); cap = tnet.graph.capture(s2); got = [cap(x, y).item() for x, y in batches]
        pd = max((p.data - q.data).abs().max().item() for p, q in zip(m1.parameters(), m2.parameters()))
        print(kind, opt_kind, "loss diffs", [f"{a-b:.2e}" for a, b in zip(got, eager)], "param maxdiff", f"{pd:.2e}", flush=True)
# no optimizer: grads only
for kind in ["linear", "conv", "full"]:
    m, _ = make(kind, "sgd")
    def g(x, y):
        for p in m.parameters(): p.grad = None
        loss = F.cross_entropy(m(x), y); loss.backward(); return loss
    eager = [g(x, y).item() for x, y in batches]
    grads_e = [p.grad.data.clone() for p in m.parameters()]
    cap = tnet.graph.capture(g); got = [cap(x, y).item() for x, y in batches]
    gd = max((p.grad.data - q).abs().max().item() for p, q in zip(m.parameters(), grads_e))
    print("grads-only", kind, [f"{a-b:.2e}" for a, b in zip(got, eager)], "grad maxdiff", f"{gd:.2e}", flush=True)
