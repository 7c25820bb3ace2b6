"""tnet.nn, the cifar10_quick model, SGD and train.py's run (tnet.trainer), on small inputs."""
import json
import os
import pickle
import re
import subprocess
import sys
import urllib.request

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import tnet
from tnet import nn, optim, recipes, trainer
from tnet.models import cifar10_quick
from helpers import TOL, Touch, assert_close, train_main, write_bin_pack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def keep_precision():
    """A run sets the GEMM precision for the process; each test starts from the default."""
    previous = tnet.get_precision()
    yield
    tnet.set_precision(previous)


def torch_quick(state, x):
    """cifar10_quick in torch float64, from a tnet state_dict."""
    w = {k: torch.tensor(v, dtype=torch.float64) for k, v in state.items()}
    x = tF.conv2d(x, w["conv1.weight"], w["conv1.bias"], padding=2)
    x = torch.relu(tF.max_pool2d(x, 3, 2, ceil_mode=True))
    x = torch.relu(tF.conv2d(x, w["conv2.weight"], w["conv2.bias"], padding=2))
    x = tF.avg_pool2d(x, 3, 2, ceil_mode=True)
    x = torch.relu(tF.conv2d(x, w["conv3.weight"], w["conv3.bias"], padding=2))
    x = tF.avg_pool2d(x, 3, 2, ceil_mode=True).reshape(x.shape[0], -1)
    return tF.linear(tF.linear(x, w["ip1.weight"], w["ip1.bias"]), w["ip2.weight"], w["ip2.bias"])


def test_quick_model_matches_torch(rng, ieee):
    model = cifar10_quick(seed=3)
    names = [n for n, _ in model.named_parameters()]
    assert names == [f"{l}.{p}" for l in ("conv1", "conv2", "conv3", "ip1", "ip2") for p in ("weight", "bias")]
    assert model.ip1.weight.shape == (64, 1024)
    state = model.state_dict()
    for name in state:  # non-zero biases and larger weights so every layer matters
        state[name] = rng.standard_normal(state[name].shape).astype(np.float32) * (0.05 if "conv" in name else 0.1)
    model.load_state_dict(state)
    x = rng.standard_normal((2, 3, 32, 32)) * 50
    assert_close(model(tnet.tensor(x)), torch_quick(state, torch.tensor(x)), TOL["ieee"], "logits")


def test_fillers_and_seeds():
    w = nn.gaussian(0.01)((200, 500), np.random.default_rng(0))
    assert w.dtype == np.float32 and abs(w.std() - 0.01) < 2e-4 and abs(w.mean()) < 2e-4
    assert (nn.constant(0.5)((3, 4), None) == 0.5).all()
    # the values on the host: the fillers are checked here, tnet's reductions in test_reduce.py
    a, b, c = ({k: v.numpy() for k, v in cifar10_quick(seed=s).state_dict().items()} for s in (1, 1, 2))
    assert all((a[k] == b[k]).all() for k in a) and not (a["conv2.weight"] == c["conv2.weight"]).all()
    assert all((a[k] == 0).all() for k in a if k.endswith("bias"))
    stds = {k: a[k].std() for k in a if k.endswith("weight")}
    assert abs(stds["conv1.weight"] / 1e-4 - 1) < 0.1 and abs(stds["ip1.weight"] / 0.1 - 1) < 0.1


def test_load_state_dict_rejects_mismatch():
    model = cifar10_quick()
    state = model.state_dict()
    state["ip2.weight"] = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="ip2.weight"):
        model.load_state_dict(state)
    del state["ip2.weight"]
    with pytest.raises(ValueError, match=r"Missing key\(s\) in state_dict: \"ip2.weight\""):
        model.load_state_dict(state)


def test_sgd_matches_hand_computed_caffe_update():
    """At a constant lr, torch's rule (tnet's) takes the steps of Caffe's h = m*h + lr*lr_mult*(g + wd*p)."""
    w = nn.Parameter(np.array([1.0, -2.0], np.float32))
    b = nn.Parameter(np.array([0.5], np.float32), lr_mult=2.0)
    opt = optim.SGD([w, b], lr=0.1, momentum=0.9, weight_decay=0.01)
    hw, hb = np.zeros(2), np.zeros(1)
    ww, bb = np.array([1.0, -2.0]), np.array([0.5])
    for g_w, g_b in [([0.3, 0.1], [1.0]), ([-0.2, 0.4], [0.5])]:
        w.grad, b.grad = tnet.tensor(g_w), tnet.tensor(g_b)
        opt.step()
        hw = 0.9 * hw + 0.1 * 1.0 * (np.array(g_w) + 0.01 * ww)
        hb = 0.9 * hb + 0.1 * 2.0 * (np.array(g_b) + 0.01 * bb)
        ww, bb = ww - hw, bb - hb
    assert_close(w, ww, TOL["ieee"], "weights")
    assert_close(b, bb, TOL["ieee"], "bias")  # 0.0175 = 0.5 - 0.4825: float32 rounding of 0.5 is 1.7e-6 of it
    opt.zero_grad()
    assert w.grad is None


def test_sgd_param_groups_and_schedule():
    w, v = nn.Parameter(np.ones(3)), nn.Parameter(np.ones(3))
    opt = optim.SGD([{"params": [w]}, {"params": [v], "lr": 1.0}], lr=0.5)
    sched = optim.LambdaLR(opt, optim.caffe_quick(10))
    lrs = []
    for _ in range(10):
        lrs.append(opt.param_groups[0]["lr"])
        w.grad = v.grad = tnet.tensor(np.ones(3))
        opt.step()
        sched.step()
    assert lrs == [0.5] * 8 + [0.05] * 2
    assert_close(v, np.ones(3) - (8 * 1.0 + 2 * 0.1), 1e-6, "group lr")


def test_train_saves_resumes_and_reports(tmp_path, capsys):
    data = write_bin_pack(tmp_path / "data", n_train=10)
    ck = str(tmp_path / "run" / "quick.ckpt")
    # one step an epoch (a resume starts at an epoch either way), the test images in a full and a partial batch
    common = ["--data", str(data), "--limit", "3", "--batch-size", "3", "--eval-batch-size", "2", "--checkpoint", ck]
    train_main(common + ["--epochs", "1"])
    first = capsys.readouterr().out
    assert os.path.exists(ck) and not os.path.exists(ck + ".tmp")
    train_main(common + ["--epochs", "2", "--resume", "--precision", "ieee"])
    assert tnet.get_precision() == "ieee"  # the autouse fixture puts the default back
    out = capsys.readouterr().out
    assert "resumed" in out and "epoch 2:" in out and "epoch 1:" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("test accuracy: ") and "%" in last and "training time" in last
    log = json.load(open(str(tmp_path / "run" / "quick.json")))
    assert [e["epoch"] for e in log] == [1, 2] and all(np.isfinite(e["loss"]) for e in log)
    assert "epoch 1:" in first


def test_train_bad_data_is_one_clear_error(tmp_path, monkeypatch):
    def offline(*a, **k):
        raise OSError("no network")
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(SystemExit) as e:
        train_main(["--data", str(tmp_path / "nothing"), "--epochs", "1"])
    assert str(e.value).startswith("error:") and "--data" in str(e.value)

    data = write_bin_pack(tmp_path / "data")
    with open(data / "cifar-10-batches-bin" / "data_batch_3.bin", "r+b") as f:
        f.truncate(3073 * 2 + 100)
    with pytest.raises(SystemExit) as e:
        train_main(["--data", str(data), "--epochs", "1"])
    assert str(e.value).startswith("error:") and "data_batch_3.bin" in str(e.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's numpy overflows, as it should
def test_train_stops_on_a_nan_loss(tmp_path):
    data = write_bin_pack(tmp_path / "data")
    ck = tmp_path / "nan.ckpt"
    with pytest.raises(SystemExit) as e:
        train_main(["--data", str(data), "--limit", "4", "--batch-size", "2", "--epochs", "1", "--lr", "1e30",
                    "--checkpoint", str(ck)])  # the second step's loss
    assert "loss became" in str(e.value) and not ck.exists()


def test_train_options_have_help():
    actions = trainer.build_parser()._actions
    assert len(actions) > 10 and all(a.help for a in actions)
    for bad in (["--epochs", "0"], ["--limit", "-1"], ["--batch-size", "0"], ["--eval-batch-size", "0"]):
        with pytest.raises(SystemExit):
            trainer.parse_args(bad)


def test_recipes_fill_unset_options():
    caffe = trainer.parse_args([])
    assert caffe.precision == "tf32" and trainer.parse_args(["--precision", "bf16"]).precision == "bf16"
    assert (caffe.epochs, caffe.batch_size, caffe.lr, caffe.weight_decay, caffe.schedule, caffe.augment) == \
        (10, 100, 0.001, 0.004, "caffe", False)
    fast = trainer.parse_args(["--recipe", "fast", "--lr", "0.5", "--no-augment"])
    assert fast.lr == 0.5 and fast.augment is False and fast.tta == 1 and fast.label_smoothing > 0
    assert fast.epochs == recipes.RECIPES["fast"].epochs


def test_one_cycle_schedule():
    f = optim.one_cycle(100, 0.1)
    assert f(0) == pytest.approx(0.1) and f(9) == pytest.approx(1.0) and f(55) == pytest.approx(0.5)
    assert f(99) == pytest.approx(1 / 90) and f(100) == 0.0


def test_eval_step_flip_averaging(rng, ieee):
    from tnet.graph import EvalStep
    model = cifar10_quick(seed=0)
    state = model.state_dict()
    for name in state:
        state[name] = rng.standard_normal(state[name].shape).astype(np.float32) * 0.05
    model.load_state_dict(state)
    x = rng.standard_normal((6, 3, 32, 32)).astype(np.float32) * 50
    logits = (torch_quick(state, torch.tensor(x, dtype=torch.float64))
              + torch_quick(state, torch.tensor(x[..., ::-1].copy(), dtype=torch.float64)))
    labels = logits.argmax(1).numpy()
    labels[:2] = (labels[:2] + 1) % 10  # two wrong
    xt, yt = torch.from_numpy(x).to(tnet.DEVICE), torch.from_numpy(labels).to(tnet.DEVICE)
    step = EvalStep(model, xt, yt, flip=True)
    step(xt, yt)
    assert step.correct.item() == 4


def test_train_fast_recipe_on_a_validation_split(tmp_path, capsys):
    data = write_bin_pack(tmp_path / "data", n_train=10, n_test=5)
    train_main(["--recipe", "fast", "--data", str(data), "--epochs", "1", "--limit", "4", "--batch-size", "2",
                "--val", "2", "--eval-batch-size", "2",
                "--checkpoint", str(tmp_path / "fast.ckpt")])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("validation accuracy: ")
    assert json.load(open(str(tmp_path / "fast.json")))[0]["validation_accuracy"] >= 0


def test_running_loss_mean():
    """Without a GPU the running loss is read at once; exact() always waits for the device."""
    assert trainer.RunningLoss(torch.tensor([6.0], device=tnet.DEVICE)).exact(3) == 2.0
    running = trainer.RunningLoss(torch.tensor([6.0], device=tnet.DEVICE))
    if not tnet.DEVICE.type == "cuda":
        assert running.update(4) == 1.5
    else:  # the first update queues a copy and has nothing landed yet
        assert running.update(4) is None
        torch.cuda.synchronize()
        assert running.update(4) == 1.5


@pytest.mark.parametrize("argv,match", [
    (["--lr", "-0.1"], "--lr must be a finite number at least 0"),
    (["--lr", "nan"], "--lr must be a finite number at least 0"),
    (["--momentum", "-0.5"], "--momentum must be"),
    (["--weight-decay", "-1"], "--weight-decay must be"),
    (["--label-smoothing", "2"], r"--label-smoothing must be in \[0, 1\)"),
    (["--label-smoothing", "-0.1"], r"--label-smoothing must be in \[0, 1\)"),
])
def test_train_refuses_bad_hyperparameters(argv, match, capsys):
    with pytest.raises(SystemExit) as e:
        trainer.parse_args(argv)
    assert e.value.code == 2
    assert re.search(match, capsys.readouterr().err)


def test_train_help_shows_every_default(capsys):
    parser = trainer.build_parser()
    formatter = parser._get_formatter()
    for action in parser._actions:
        if action.dest != "help":
            assert "default" in formatter._get_help_string(action), action.dest
    with pytest.raises(SystemExit):
        trainer.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for default in ("default: the recipe's; caffe: 0.001, fast: 0.01", "default: ./data", "default: 1000",
                    "caffe: tf32", "default: runs/MODEL.ckpt", "default: caffe", "airbench: fp16"):
        assert default in text, default


def _quick_run(tmp_path, *extra):
    """A one-epoch run of one step (2 images, batch 2): its argv and checkpoint."""
    data = write_bin_pack(tmp_path / "data", n_train=10)
    ck = tmp_path / "run" / "q.ckpt"
    return ["--data", str(data), "--limit", "2", "--batch-size", "2", "--eval-batch-size", "2", "--epochs", "1",
            "--checkpoint", str(ck), *extra], ck


@pytest.mark.parametrize("damage", ["empty", "truncated", "corrupt", "pickle"])
def test_train_resume_refuses_a_bad_checkpoint(tmp_path, damage):
    argv, ck = _quick_run(tmp_path)
    ck.parent.mkdir()
    marker = tmp_path / "created"
    if damage == "pickle":  # a file that would create `marker` if unpickled
        ck.write_bytes(pickle.dumps({"model": Touch(str(marker))}))
    else:
        tnet.save({"kind": "train.py checkpoint", "w": np.arange(2000.0)}, str(ck))
        raw = ck.read_bytes()
        ck.write_bytes({"empty": b"", "truncated": raw[:len(raw) // 2], "corrupt": raw[:100] + b"x" * 50 + raw[150:]}[damage])
    before = ck.read_bytes()
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--resume"])
    message = str(e.value)
    assert message.startswith("error: cannot resume: ") and "\n" not in message
    assert ck.read_bytes() == before and not marker.exists()


def test_train_resume_lists_changed_settings_and_reports_a_finished_run(tmp_path, capsys):
    argv, ck = _quick_run(tmp_path)
    train_main(argv)
    out = capsys.readouterr().out
    assert f"checkpoint: {ck} (every epoch), log: {ck.with_suffix('.json')}" in out
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--resume", "--batch-size", "5", "--lr", "0.5", "--seed", "3"])
    message = str(e.value)
    for changed in ("--batch-size 2 in the checkpoint, 5 now", "--lr 0.001 in the checkpoint, 0.5 now",
                    "--seed 0 in the checkpoint, 3 now"):
        assert changed in message
    assert "--limit" not in message
    train_main(argv + ["--resume"])  # the same settings: the run is finished, its result shown again
    out = capsys.readouterr().out
    assert "already finished (1 epochs)" in out and out.strip().splitlines()[-1].startswith("test accuracy: ")


def test_train_checks_the_checkpoint_folder_before_training(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")

    def never(*a, **k):
        raise AssertionError("data loaded before the checkpoint path was checked")
    monkeypatch.setattr(trainer.data, "load_cifar10", never)
    with pytest.raises(SystemExit) as e:
        train_main(["--checkpoint", str(blocker / "run.ckpt"), "--epochs", "1"])
    assert str(e.value).startswith(f"error: cannot write the checkpoint {blocker / 'run.ckpt'}")


def test_label_out_of_range_in_a_captured_step(rng):
    """Eager calls raise at once; a CUDA graph replay flags it on the device, read later."""
    from tnet.graph import TrainStep
    from tnet.kernels.softmax import take_label_error
    model = cifar10_quick(seed=0)
    opt = optim.SGD(model.parameters(), lr=0.001)
    x = torch.from_numpy(rng.standard_normal((4, 3, 32, 32)).astype(np.float32)).to(tnet.DEVICE)
    good, bad = (torch.tensor(v, device=tnet.DEVICE) for v in ([1, 2, 3, 4], [1, 12, 3, 4]))
    step = TrainStep(recipes.make_train_step(model, opt), x, good, state=(model, opt))
    if tnet.DEVICE.type != "cuda":
        with pytest.raises(ValueError, match="target 12 is out of bounds"):
            step(x, bad)
        return
    step(x, bad)
    torch.cuda.synchronize()
    assert take_label_error(tnet.DEVICE) == 12 and take_label_error(tnet.DEVICE) is None


def test_train_runs_several_seeds_and_summarises(tmp_path, capsys):
    """--runs 2: seeds 4 and 5, each with its own checkpoint, then the mean and spread."""
    data = write_bin_pack(tmp_path / "data", n_train=10, n_test=5)
    ck = tmp_path / "quick.ckpt"
    last = train_main(["--data", str(data), "--limit", "2", "--batch-size", "2", "--eval-batch-size", "2", "--epochs", "1",
                       "--seed", "4", "--runs", "2", "--checkpoint", str(ck)])
    out = capsys.readouterr().out
    assert last["seed"] == 5 and 0 <= last["accuracy"] <= 1 and last["train_time"] > 0
    assert os.path.exists(tmp_path / "quick-seed4.ckpt") and os.path.exists(tmp_path / "quick-seed5.ckpt")
    assert tnet.load(str(tmp_path / "quick-seed5.ckpt"))["settings"]["seed"] == 5
    lines = out.strip().splitlines()
    assert lines[-3].startswith("seed 4: test accuracy ") and lines[-2].startswith("seed 5: test accuracy ")
    assert lines[-1].startswith("2 runs: test accuracy mean ") and "std" in lines[-1] and "time mean" in lines[-1]
    with pytest.raises(SystemExit):
        trainer.parse_args(["--runs", "2", "--resume"])
    with pytest.raises(SystemExit):
        trainer.parse_args(["--runs", "0"])


def test_log_never_overwrites_a_json_checkpoint():
    assert trainer.log_path_of("runs/run.json") == "runs/run.log.json"
    assert trainer.log_path_of("runs/q.ckpt") == "runs/q.json"


@pytest.mark.parametrize("argv,match", [(["--epochs", "1e-10"], "--epochs"), (["--epochs", "-1"], "--epochs"),
                                        (["--epochs", "inf"], "--epochs"), (["--seed", "-1"], "--seed"),
                                        (["--seed", "x"], "--seed")])
def test_train_refuses_bad_epochs_and_seeds(argv, match, capsys):
    with pytest.raises(SystemExit) as e:
        trainer.parse_args(argv)
    assert e.value.code == 2 and match in capsys.readouterr().err


def test_train_checkpoint_path_checked_before_training(tmp_path, monkeypatch):
    def never(*a, **k):
        raise AssertionError("data loaded before the checkpoint path was checked")
    monkeypatch.setattr(trainer.data, "load_cifar10", never)
    with pytest.raises(SystemExit) as e:
        train_main(["--checkpoint", str(tmp_path), "--epochs", "1"])
    assert "is a directory" in str(e.value) and "\n" not in str(e.value)
    old = tmp_path / "old.ckpt"
    old.write_bytes(b"an earlier run")
    with pytest.raises(SystemExit) as e:
        train_main(["--checkpoint", str(old), "--epochs", "1"])
    assert "--overwrite" in str(e.value) and old.read_bytes() == b"an earlier run"


def test_train_save_error_is_one_line(tmp_path, monkeypatch):
    argv, ck = _quick_run(tmp_path)

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(trainer.serialize, "save", full_disk)
    with pytest.raises(SystemExit) as e:
        train_main(argv)
    assert str(e.value).startswith(f"error: cannot write the checkpoint {ck}: No space left on device")
    assert "\n" not in str(e.value)


def test_train_ctrl_c_during_evaluation_keeps_the_epoch(tmp_path, monkeypatch, capsys):
    import signal
    argv, ck = _quick_run(tmp_path)
    evaluate = trainer.evaluate

    def pressed(*a):  # Ctrl-C arrives in the middle of the evaluation
        os.kill(os.getpid(), signal.SIGINT)
        return evaluate(*a)
    monkeypatch.setattr(trainer, "evaluate", pressed)
    with pytest.raises(SystemExit) as e:
        train_main(argv)
    assert str(e.value).startswith("interrupted after epoch 1") and "\n" not in str(e.value)
    assert tnet.load(str(ck))["epoch"] == 1
    monkeypatch.setattr(trainer, "evaluate", evaluate)
    train_main(argv + ["--resume"])
    assert "already finished" in capsys.readouterr().out


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """One epoch of the smallest run (2 images, batch 2): its argv (less --epochs) and checkpoint."""
    root = tmp_path_factory.mktemp("tiny")
    data = write_bin_pack(root / "data", n_train=10, n_test=5)
    ck = root / "tiny.ckpt"
    argv = ["--data", str(data), "--limit", "2", "--batch-size", "2", "--eval-batch-size", "2", "--checkpoint", str(ck)]
    previous = tnet.get_precision()
    train_main(argv + ["--epochs", "1"])
    tnet.set_precision(previous)
    return argv, ck


def _edited(tiny_checkpoint, tmp_path, edit):
    """tiny_checkpoint's argv and checkpoint, the checkpoint a copy with `edit(ck)` applied."""
    argv, ck = tiny_checkpoint
    state = tnet.load(str(ck))
    edit(state)
    copy = tmp_path / "edited.ckpt"
    tnet.save(state, str(copy))
    return [*argv, "--checkpoint", str(copy)], copy


def _set(field, value):
    return lambda ck: ck.__setitem__(field, value)


@pytest.mark.parametrize("field,edit", [
    ("'settings'", _set("settings", "caffe")),
    ("'settings' 'lr'", lambda ck: ck["settings"].__setitem__("lr", [0.001])),
    ("'schedule'", _set("schedule", 12)),
    ("'schedule'", _set("schedule", {"iteration": "1"})),
    ("'epoch'", _set("epoch", -1)),
    ("'epoch'", _set("epoch", "1")),
    ("'epoch'", _set("epoch", 1.5)),
    ("'batch'", _set("batch", 99)),
    ("'log'", _set("log", "none")),
    ("'log'", _set("log", [1])),
    ("'log'", _set("log", [{"epoch": "one"}])),
    ("'train_time'", _set("train_time", "3 s")),
    ("'eval_time'", _set("eval_time", -1.0)),
    ("'model'", _set("model", [])),
    ("'model'", lambda ck: ck["model"].__setitem__("conv1.weight", "abc")),
    ("'optimizer'", _set("optimizer", {"param_groups": 3, "state": {}})),
    ("'optimizer'", lambda ck: ck["optimizer"]["param_groups"][0].__setitem__("lr", "fast")),
    ("'loader'", lambda ck: ck["loader"].__setitem__("epoch", "1")),
    ("'loader'", lambda ck: ck["loader"].__setitem__("rng", 5)),
    ("'loader'", lambda ck: ck["loader"].__setitem__("first_flips", [1, 0, 1])),
])
def test_train_resume_names_a_bad_field(tiny_checkpoint, tmp_path, field, edit):
    """A hand-edited checkpoint: one line naming the field, before any training."""
    argv, copy = _edited(tiny_checkpoint, tmp_path, edit)
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--epochs", "2", "--resume"])
    message = str(e.value)
    assert message.startswith(f"error: cannot resume: {copy}: the checkpoint's {field} ") and "\n" not in message


def test_train_resume_of_a_finished_run_needs_its_accuracy(tiny_checkpoint, tmp_path):
    argv, _ = _edited(tiny_checkpoint, tmp_path, _set("log", []))
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--epochs", "1", "--resume"])
    assert "the checkpoint's 'log' has no test accuracy" in str(e.value)


@pytest.mark.parametrize("make", ["missing", "directory", "not a checkpoint"])
def test_train_resume_of_a_non_checkpoint_is_one_line(tiny_checkpoint, tmp_path, make):
    argv, _ = tiny_checkpoint
    path = tmp_path / "x.ckpt"
    if make == "directory":
        path.mkdir()
    elif make == "not a checkpoint":
        tnet.save({"weights": np.zeros(3)}, str(path))
    with pytest.raises(SystemExit) as e:
        train_main([*argv, "--checkpoint", str(path), "--epochs", "1", "--resume"])
    message = str(e.value)
    assert message.startswith("error: cannot resume: ") and str(path) in message and "\n" not in message


def test_train_keyboard_interrupt_inside_evaluation_keeps_the_epoch(tmp_path, monkeypatch, capsys):
    """A KeyboardInterrupt raised by the evaluation itself (not the deferred SIGINT): the
    epoch's training is saved with the evaluation pending, and --resume runs it, then ends."""
    data = write_bin_pack(tmp_path / "data", n_train=10, n_test=5)
    ck = tmp_path / "k.ckpt"
    argv = ["--data", str(data), "--limit", "2", "--batch-size", "2", "--eval-batch-size", "2", "--epochs", "1",
            "--checkpoint", str(ck)]
    evaluate = trainer.evaluate

    def interrupted(*a):
        raise KeyboardInterrupt
    monkeypatch.setattr(trainer, "evaluate", interrupted)
    with pytest.raises(SystemExit) as e:
        train_main(argv)
    assert str(e.value).startswith("interrupted after epoch 1: the last checkpoint is ") and "\n" not in str(e.value)
    saved = tnet.load(str(ck))
    assert saved["epoch"] == 1 and saved["batch"] == 0 and saved["evaluate"] is True
    assert saved["schedule"]["iteration"] == 1 and "test_accuracy" not in saved["log"][-1]
    monkeypatch.setattr(trainer, "evaluate", evaluate)
    capsys.readouterr()
    result = train_main(argv + ["--resume"])
    out = capsys.readouterr().out
    assert "(its evaluation, interrupted before)" in out and "already finished" not in out
    assert 0 <= result["accuracy"] <= 1
    saved = tnet.load(str(ck))
    assert saved["evaluate"] is False and saved["log"][-1]["test_accuracy"] == result["accuracy"]
    assert json.load(open(str(tmp_path / "k.json")))[-1]["test_accuracy"] == result["accuracy"]
    train_main(argv + ["--resume"])
    assert "already finished" in capsys.readouterr().out


def test_tnet_found_as_a_namespace_package_is_named(tmp_path):
    """A folder named tnet without __init__.py beside the script imports as a namespace
    package: train.py, run there, says so in one line before using any of tnet's names."""
    (tmp_path / "tnet").mkdir()
    (tmp_path / "train.py").write_text(open(os.path.join(ROOT, "train.py")).read())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, "train.py", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    problem = p.stderr.strip()
    assert p.returncode == 1 and p.stdout == "", p.stderr
    assert problem.startswith(f"error: `import tnet` found {tmp_path / 'tnet'}") and "namespace package" in problem
    assert "PYTHONPATH=CHECKOUT" in problem and "\n" not in problem


def test_cpu_estimate_and_small_rates():
    assert [trainer.rate(v) for v in (0.000123, 0.5, 12.34, 99.96, 1234.4)] == ["0.000123", "0.5", "12.3", "100", "1234"]
    line = trainer.cpu_estimate(40.0, 10000)  # Caffe's 5,000 steps... at 10 epochs of batch 100: 111 h
    assert line.startswith("CPU interpreter: about 111 h for this run") and "--limit" in line
    assert "about 50 s" in trainer.cpu_estimate(5.0, 10) and "min" in trainer.cpu_estimate(30.0, 10)

