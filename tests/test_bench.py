"""bench.py's command line, its CPU-only exit, and the GEMM variants under the interpreter."""
import argparse
import os
import subprocess
import sys

import pytest
import torch

import tnet._device  # noqa: F401  (switches the Triton interpreter on before kernels load)
from tnet.kernels import gemm_variants

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import bench  # noqa: E402

STUDIES = ["gemm", "layers", "train"]


@pytest.mark.parametrize("study", STUDIES)
def test_parse_each_study(study):
    args = bench.build_parser().parse_args([study])
    assert (args.study, args.quick, args.out) == (study, False, "results/")
    args = bench.build_parser().parse_args([study, "--quick", "--out", "somewhere"])
    assert (args.study, args.quick, args.out) == (study, True, "somewhere")


def test_parse_needs_a_known_study(capsys):
    for argv in ([], ["nonsense"]):
        with pytest.raises(SystemExit) as e:
            bench.build_parser().parse_args(argv)
        assert e.value.code == 2


def test_every_option_has_help():
    parser = bench.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == sorted(STUDIES)
    assert all(choice.help for choice in sub._choices_actions)
    for name, subparser in sub.choices.items():
        options = {o for a in subparser._actions for o in a.option_strings}
        assert {"--quick", "--out"} <= options, name
        for action in subparser._actions:
            assert action.help, f"{name}: {action.option_strings} has no help text"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the exit on a machine without a GPU")
def test_gemm_without_gpu_exits_with_one_line(tmp_path):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "bench.py"), "gemm", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 2, output
    assert len(output.splitlines()) == 1 and "GPU" in output, output
    assert "Traceback" not in output and "interpreter" not in output
    assert os.listdir(tmp_path) == []


def test_check_then_time_does_not_time_a_wrong_result():
    ref = torch.ones(3, dtype=torch.float64)
    timer = lambda fn, inputs: pytest.fail("a wrong result was timed")
    row = bench.check_then_time(lambda x: x * 2, [(torch.ones(3),)], ref, 1e-4, timer)
    assert row["status"] == "WRONG" and row["ms"] is None and row["err"] == pytest.approx(1.0)
    row = bench.check_then_time(lambda x: x, [(torch.ones(3),)], ref, 1e-4, lambda fn, inputs: 1.5)
    assert row == {"status": "ok", "err": 0.0, "ms": 1.5}


SHAPES = [(37, 29, 75), (1, 1, 1), (33, 70, 40)]  # odd sizes; 70 > 64 gives two_tiles a half-empty block
CASES = [(name, p) for name, (_, ps) in gemm_variants.VARIANTS.items() for p in ps]


@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("name,precision", CASES)
def test_variant_matches_torch(name, precision, M, N, K):
    torch.manual_seed(0)
    a, b = torch.randn(M, K).to(tnet.DEVICE), torch.randn(K, N).to(tnet.DEVICE)
    ref = a.double() @ b.double()
    # The interpreter ignores tf32 (the GPU does not) and rounds fp32 to bf16 by truncation (GPU: to nearest),
    # hence ~7e-3 for bf16 here where the GPU gets ~3e-3.
    tol = {"ieee": 1e-5, "tf32": 3e-3, "bf16": 3e-2}[precision]  # tf32 on the GPU: ~1e-3
    out = gemm_variants.VARIANTS[name][0](a, b, precision)
    assert out.shape == (M, N) and out.dtype == torch.float32
    err = (out.double() - ref).abs()
    worst = divmod(err.argmax().item(), N)
    assert (err.norm() / ref.norm()).item() < tol, f"worst element {worst}: {out[worst].item()} vs {ref[worst].item()}"


@pytest.mark.parametrize("name", ["tiled", "two_tiles"])
def test_variant_bf16_inputs_exact_products(name):
    """bf16 inputs: the products are exact in fp32, so only the fp32 sums differ from float64."""
    torch.manual_seed(1)
    a, b = (torch.randn(*s).bfloat16().to(tnet.DEVICE) for s in ((37, 75), (75, 29)))
    ref = a.double() @ b.double()
    out = gemm_variants.VARIANTS[name][0](a, b, "bf16")
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-5


def test_variants_reject_bad_input():
    a, b = torch.randn(4, 3), torch.randn(3, 5)
    with pytest.raises(ValueError, match="precision"):
        gemm_variants.naive(a, b, "tf32")
    with pytest.raises(ValueError, match="need A"):
        gemm_variants.tiled(a, torch.randn(4, 5))
    with pytest.raises(ValueError, match="contiguous"):
        gemm_variants.two_tiles(a, torch.randn(5, 3).t())
    with pytest.raises(ValueError, match="float32"):
        gemm_variants.tiled(a.double(), b.double())
