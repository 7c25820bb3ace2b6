import os, time
os.environ.pop("TRITON_INTERPRET", None)
import torch, triton, triton.language as tl
import tnet._device as d
d.INTERPRET = False
import importlib, tnet.kernels.autotune as at
at.INTERPRET = False
os.environ["TRITON_INTERPRET"] = "0"
@triton.jit
def k(a_ptr, b_ptr, c_ptr, y_ptr, n, scalars, sizes, a_strides, b_strides, c_strides, OP: tl.constexpr, ARITY: tl.constexpr, SCALARS: tl.constexpr, FLAT: tl.constexpr, ROUTE: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    pass
f = at.jit_fast(k)
class FakeKernel:
    function = None; packed_metadata = None
    def run(self, *a): pass
a = torch.randn(1024); y = torch.empty(1024)
args = (a, a, y, y, 1024, (0.0, 0.0, 0.0), (1024,), (1,), (1,), (1,))
kw = dict(OP="add", ARITY=2, SCALARS=0, FLAT=True, ROUTE=-1, COMPUTE=tl.float32, BLOCK=1024, num_warps=4, num_stages=3)
key = (tuple(map(at._spec, args)), tuple(kw.items()))
f.fast[key] = (FakeKernel(), [(n, True, None) for n in f.arg_names[len(args):]])
f.device = lambda: 0; f.stream = lambda d: 0
grid = lambda meta: (-(-1024 // meta["BLOCK"]),)
class H: calls = []
triton.knobs.runtime.launch_enter_hook  # exists
N = 20000
for _ in range(100): f.run(*args, grid=grid, warmup=False, **kw)
s = time.perf_counter()
for _ in range(N): f.run(*args, grid=grid, warmup=False, **kw)
print("fast run: %.2f us" % ((time.perf_counter() - s) / N * 1e6))
s = time.perf_counter()
for _ in range(N): f[grid](*args, **kw)
print("fast via []: %.2f us" % ((time.perf_counter() - s) / N * 1e6))
import cProfile, pstats
cProfile.run("for _ in range(20000): f.run(*args, grid=grid, warmup=False, **kw)", "/tmp/p3")
pstats.Stats("/tmp/p3").sort_stats("tottime").print_stats(8)
