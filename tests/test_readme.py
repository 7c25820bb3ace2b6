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


README = (ROOT / "README.md").read_text()


def code_blocks(text):
    """The bodies of the ``` blocks (any language)."""
    return re.findall(r"```[a-z]*\n(.*?)\n```", text, re.S)


def commands(prefix):
    """Every line of the README's code blocks that starts with `prefix`, comment cut off."""
    return [line.split("  #")[0].strip() for block in code_blocks(README) for line in block.splitlines()
            if line.strip().startswith(prefix)]


def test_no_citation_outside_the_repository():
    # a newcomer's checkout holds only the repository: links and paths must stay inside it
    for name in ("README.md", "docs/results.md"):
        text = (ROOT / name).read_text()
        assert not re.search(r"\.\./|\bshared/|/work/", text), f"{name} cites a file outside the repository"


def test_commands_name_files_that_exist():
    scripts = {cmd.split()[1] for cmd in commands("python ") if cmd.split()[1].endswith(".py")}
    assert {"train.py", "bench.py"} <= scripts
    for script in scripts:
        assert (ROOT / script).is_file(), script
    layout = next(b for b in code_blocks(README) if b.startswith("tnet/__init__.py"))
    for line in layout.splitlines():
        if line[:1].isspace():  # a description's continuation
            continue
        path = line.split()[0]
        assert (ROOT / path).exists(), f"README's layout lists {path}, which does not exist"


def test_train_commands_parse():
    from tnet import trainer

    for cmd in commands("python train.py"):
        if "--help" not in cmd:
            trainer.parse_args(cmd.split()[2:])  # train.py's parser: argparse exits on a bad option


def test_cpu_install_is_ci_s():
    # the README's CPU install is the one .ci/run runs (python3 -m pip -q there, plain pip here)
    readme = [cmd for cmd in commands("pip install") if "--index-url" in cmd]
    ci = (ROOT / ".ci" / "run").read_text().replace("\\\n", " ")
    ci = [line for line in ci.splitlines() if "--index-url" in line]
    assert len(readme) == len(ci) == 1, "one CPU-index install in each of README.md and .ci/run"
    readme, ci = readme[0], ci[0]
    norm = lambda s: [w for w in s.replace("python3 -m pip", "pip").split() if w != "-q"]
    first = norm(readme.split("||")[0])
    assert first == norm(ci.split("||")[0]), (readme, ci)
    assert "--retries 0" in readme and "--timeout 5" in readme and "download.pytorch.org/whl/cpu" in readme
    assert norm(readme.split("||")[1]) == ["pip", "install", "torch==2.13.0"] and "pip install -q torch==2.13.0" in ci


def test_tryout_uses_the_shipped_sample():
    import tnet.data

    tryout = [cmd for cmd in commands("python train.py") if "--limit" in cmd]
    assert tryout and all("--data sample" in cmd for cmd in tryout)
    train_x, train_y, test_x, test_y = tnet.data.load_sample()
    assert len(train_x) == len(train_y) == 500 and len(test_x) == len(test_y) == 100
