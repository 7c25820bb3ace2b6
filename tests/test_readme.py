"""The README's script example runs as written: the block after the example marker is run in a
fresh Python process, with the repository root on PYTHONPATH, and must print its losses."""
import math
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKER = "<!-- example: tests/test_readme.py runs this block -->"


def example_code(readme):
    """The ```python block right after MARKER."""
    m = re.search(re.escape(MARKER) + r"\s*```python\n(.*?)\n```", readme, re.S)
    assert m, f"README.md: no ```python block right after {MARKER!r}"
    return m.group(1)


def test_example_block_is_found_and_compiles():
    code = example_code((ROOT / "README.md").read_text())
    compile(code, "README.md example", "exec")


def test_example_runs(tmp_path):
    code = example_code((ROOT / "README.md").read_text())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    # cwd outside the repository, so that only PYTHONPATH makes tnet importable
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, f"the README example failed:\n{run.stdout}\n{run.stderr}"
    losses = [float(v) for v in re.findall(r"^step \d+: loss (\S+)$", run.stdout, re.M)]
    assert losses, f"no 'step i: loss x' lines in the output:\n{run.stdout}"
    assert all(math.isfinite(v) and v > 0 for v in losses), losses
