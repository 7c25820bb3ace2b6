import time, torch, tnet, sys
import tnet.functional as F
from tnet.kernels import pointwise as pw, reduce as rd
class Dummy:
    def __getitem__(self, grid): return lambda *a, **k: None
    def __getattr__(self, n): return None
for mod in (pw, rd):
    for name in dir(mod):
        if name.endswith("_kernel"): setattr(mod, name, Dummy())
a, b = tnet.randn(1024), tnet.randn(1024)
ga = tnet.Tensor(a.data.clone(), requires_grad=True)
def t(f, n=20000):
    for _ in range(100): f()
    s = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - s) / n * 1e6
print("a+b %.2f us" % t(lambda: a + b))
print("relu %.2f us" % t(lambda: F.relu(a)))
print("torch a+b %.2f us" % t(lambda: a.data + b.data))
print("torch.empty %.2f us" % t(lambda: torch.empty(1024)))
def sq():
    ga.grad = None
    (ga * ga).sum().backward()
print("(a*a).sum().backward %.2f us" % t(sq, 5000))
if len(sys.argv) > 1:
    import cProfile, pstats
    cProfile.run("for _ in range(20000): a + b", "/tmp/prof")
    pstats.Stats("/tmp/prof").sort_stats("tottime").print_stats(15)
if len(sys.argv) > 2:
    cProfile.run("for _ in range(3000): sq()", "/tmp/prof2")
    pstats.Stats("/tmp/prof2").sort_stats("tottime").print_stats(22)
