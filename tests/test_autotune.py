"""The autotuner (kernels/autotune.py): each tuning key's config is remembered after its first
launch."""
from tnet.kernels import gemm
from helpers import TOL, assert_close, f64, randn


def test_autotuned_kernel_remembers_each_key():
    """After its first launch a tuning key skips Triton's autotuner; a new dtype is a new key."""
    a, b = randn(19, 23), randn(23, 11)
    gemm.gemm_kernel.chosen.clear()
    for _ in range(2):
        assert_close(gemm.matmul(a, b, precision="ieee"), f64(a) @ f64(b), TOL["ieee"], "fp32")
    assert len(gemm.gemm_kernel.chosen) == 1
    a16, b16 = a.bfloat16(), b.bfloat16()
    assert_close(f64(gemm.matmul(a16, b16)), f64(a16) @ f64(b16), TOL["bf16"], "bf16")
    assert len(gemm.gemm_kernel.chosen) == 2
