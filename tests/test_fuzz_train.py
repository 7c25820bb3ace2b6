"""train.py as a user runs it (a subprocess, the smallest run: 2-8 images, batch 2) under bad
arguments, bad paths, damaged checkpoints and a SIGKILL inside a checkpoint write: every
failure is one line naming the problem, and nothing is lost."""
import os
import subprocess
import sys
import urllib.request

import numpy as np
import pytest

import tnet
from tnet import trainer
from helpers import train_main, write_bin_pack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A SIGKILL in the middle of the Nth checkpoint write: half a file at path.tmp, then death.
KILLER = """
import os, runpy, signal, sys
from tnet import serialize
real, writes = serialize.atomic_write, []
def killing(path, write):
    if path.endswith(".ckpt"):
        writes.append(path)
        if len(writes) == int(os.environ["KILL_AT_WRITE"]):
            with open(path + ".tmp", "wb") as f:
                f.write(b"PK half a checkpoint")
                f.flush()
            os.kill(os.getpid(), signal.SIGKILL)
    return real(path, write)
serialize.atomic_write = killing
sys.argv = ["train.py", *sys.argv[1:]]
runpy.run_path("train.py", run_name="__main__")
"""


def run_train(*argv, env=None, script=None):
    """train.py's exit status, stdout and stderr."""
    command = [sys.executable, *(["-c", script] if script else ["train.py"]), *map(str, argv)]
    environ = {**os.environ, "PYTHONPATH": ROOT, "PYTHONWARNINGS": "ignore", **(env or {})}
    p = subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def last_line(text):
    return text.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The data and arguments of the smallest run, less --epochs and --checkpoint."""
    data = write_bin_pack(tmp_path_factory.mktemp("fuzz") / "data", n_train=10, n_test=5)
    return ["--data", data, "--limit", "2", "--batch-size", "2", "--eval-batch-size", "2"]


@pytest.fixture(scope="module")
def finished(tiny, tmp_path_factory):
    """One finished run of 4 steps: its checkpoint, and its stderr (the CPU's estimate)."""
    ck = tmp_path_factory.mktemp("finished") / "run.ckpt"
    argv = [*tiny, "--limit", "8", "--epochs", "1", "--checkpoint", ck]
    rc, out, err = run_train(*argv)
    assert rc == 0, err
    return ck, out, err


def test_cpu_run_says_its_time_and_a_nonzero_rate(finished):
    ck, out, err = finished
    if tnet.DEVICE.type == "cuda":
        pytest.skip("the estimate is the CPU interpreter's")
    assert "CPU interpreter: about " in err and "for this run (4 steps at " in err
    assert "img_s=0," not in out + err and "img_s=0.0," not in out + err


@pytest.mark.parametrize("argv,option", [
    (["--epochs", "0"], "--epochs"), (["--epochs", "1e-10"], "--epochs"), (["--epochs", "nan"], "--epochs"),
    (["--seed", "-1"], "--seed"), (["--seed", "1.5"], "--seed"), (["--batch-size", "0"], "--batch-size"),
    (["--batch-size", "x"], "--batch-size"), (["--eval-batch-size", "-3"], "--eval-batch-size"),
    (["--limit", "0"], "--limit"), (["--val", "-1"], "--val"), (["--lr", "inf"], "--lr"),
    (["--momentum", "-1"], "--momentum"), (["--label-smoothing", "1"], "--label-smoothing"),
    (["--tta", "3"], "--tta"), (["--eval-every", "-1"], "--eval-every"), (["--runs", "0"], "--runs"),
    (["--model", "resnet"], "--model"), (["--precision", "fp8"], "--precision"),
])
def test_bad_arguments_exit_2_naming_the_option(argv, option, capsys):
    """In-process (tnet.trainer's parser is the CLI's): a subprocess per value would cost seconds each."""
    with pytest.raises(SystemExit) as e:
        trainer.parse_args(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and option in last_line(err)


def test_bad_arguments_from_the_command_line(tiny):
    rc, out, err = run_train("--epochs", "1e-10", "--seed", "0")
    assert rc == 2 and "--epochs" in last_line(err) and "Traceback" not in err


def test_missing_data_offline_is_one_line(tmp_path, monkeypatch):
    def offline(*a, **k):
        raise OSError("no network")
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(SystemExit) as e:
        train_main(["--data", str(tmp_path / "nonexistent" / "cifar"), "--epochs", "1",
                    "--checkpoint", str(tmp_path / "r.ckpt")])
    message = str(e.value)
    assert message.startswith("error: ") and "--data" in message and "\n" not in message
    assert not (tmp_path / "r.ckpt").exists()


@pytest.mark.parametrize("damage", ["truncated", "wrong field", "directory", "missing"])
def test_bad_checkpoint_resume_is_one_line(finished, tiny, tmp_path, damage):
    ck, _, _ = finished
    path = tmp_path / "bad.ckpt"
    if damage == "truncated":
        path.write_bytes(ck.read_bytes()[:1000])
    elif damage == "wrong field":
        state = tnet.load(str(ck))
        state["schedule"] = {"iteration": -4}
        tnet.save(state, str(path))
    elif damage == "directory":
        path.mkdir()
    rc, out, err = run_train(*tiny, "--limit", "8", "--epochs", "2", "--checkpoint", path, "--resume")
    assert rc == 1 and "Traceback" not in err, err
    line = last_line(err)
    assert line.startswith("error: cannot resume: ") and str(path) in line
    if damage == "wrong field":
        assert "'schedule'" in line


def test_sigkill_inside_a_checkpoint_write_then_resume(tiny, tmp_path):
    """Killed while writing epoch 2's checkpoint: epoch 1's stays whole beside a stale .tmp;
    --resume goes on from it, finishes, and replaces the .tmp."""
    ck = tmp_path / "k.ckpt"
    argv = [*tiny, "--epochs", "2", "--checkpoint", ck]
    rc, out, err = run_train(*argv, env={"KILL_AT_WRITE": "2"}, script=KILLER)
    assert rc == -9, err
    tmp = tmp_path / "k.ckpt.tmp"
    assert tmp.read_bytes() == b"PK half a checkpoint" and tnet.load(str(ck))["epoch"] == 1
    rc, out, err = run_train(*argv, "--resume")
    assert rc == 0, err
    assert "resumed from" in out and last_line(out).startswith("test accuracy: ")
    assert not tmp.exists() and tnet.load(str(ck))["epoch"] == 2
    assert np.isfinite(tnet.load(str(ck))["log"][-1]["loss"])
