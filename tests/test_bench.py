"""bench.py's command line (benchmarks/cli.py) and its CPU-only exit, the helpers in benchmarks/,
the GEMM variants under the interpreter, and the training studies' checks and reference net (the
timing needs a GPU)."""
import argparse
import dataclasses
import importlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import tnet  # first: switches the Triton interpreter on before kernels load
from helpers import TOL, assert_close
from tnet import optim
from tnet.models import cifar10_quick
from benchmarks import (airbench, cli, common, convs, eager, gemm_variants, launch, layers, profile, runs, steps, train,
                        zoo, zoo_models)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STUDIES = ["gemm", "layers", "train", "profile", "launch", "convs", "zoo", "eager", "runs"]


@pytest.mark.parametrize("study", STUDIES)
def test_parse_each_study(study):
    args = cli.build_parser().parse_args([study])
    assert (args.study, args.quick, args.out) == (study, False, "results/")
    args = cli.build_parser().parse_args([study, "--quick", "--out", "somewhere"])
    assert (args.study, args.quick, args.out) == (study, True, "somewhere")


def test_parse_needs_a_known_study(capsys):
    for argv in ([], ["nonsense"]):
        with pytest.raises(SystemExit) as e:
            cli.build_parser().parse_args(argv)
        assert e.value.code == 2


def test_every_option_has_help():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == sorted(STUDIES)
    assert all(choice.help for choice in sub._choices_actions)
    for name, subparser in sub.choices.items():
        options = {o for a in subparser._actions for o in a.option_strings}
        assert {"--quick", "--out"} <= options, name
        for action in subparser._actions:
            assert action.help, f"{name}: {action.option_strings} has no help text"


def test_each_study_runs_its_own_module():
    for name, (run, _) in cli.STUDIES.items():
        assert run is importlib.import_module(f"benchmarks.{name}").run, name


def test_help_says_every_study_needs_a_gpu():
    for argv in (["--help"], ["gemm", "--help"]):
        result = subprocess.run([sys.executable, os.path.join(ROOT, "bench.py"), *argv], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 0 and "Every study needs a CUDA GPU" in " ".join(result.stdout.split()), result.stdout


def test_bench_imports_no_tnet_before_the_gpu_check():
    """tnet switches on Triton's interpreter when there is no GPU: the studies import it in run()
    (bench.py imports benchmarks.cli alone)."""
    code = "import sys, benchmarks.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in ('tnet', 'triton')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


@pytest.mark.parametrize("study", STUDIES)
def test_main_runs_the_study_asked_for(study, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setitem(cli.STUDIES, study, (lambda args: calls.append(args), "help"))
    cli.main([study, "--quick", "--out", str(tmp_path / "out")])
    assert [(a.study, a.quick) for a in calls] == [(study, True)] and (tmp_path / "out").is_dir()


def test_quick_settings_are_a_subset():
    assert ("wide b1024", 2, 1024) in train.NETS and ("wide b1024", 2, 1024) not in train.QUICK_NETS
    assert set(train.QUICK_NETS) < set(train.NETS) and train.QUICK_NETS[0] == train.NETS[0]  # the CPU's net
    assert train.QUICK_TIMING["repeats"] < train.TIMING["repeats"] and train.TIMING["iters"] == 100
    assert min(layers.LAYERS_TIMING["warmup"], layers.QUICK_LAYERS_TIMING["warmup"]) >= 3  # autotuning steps


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the exit on a machine without a GPU")
@pytest.mark.parametrize("study", STUDIES)
def test_without_gpu_exits_with_one_line(study, tmp_path):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "bench.py"), study, "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 2, output
    assert len(output.splitlines()) == 1 and "GPU" in output, output
    assert "Traceback" not in output and "interpreter" not in output
    assert os.listdir(tmp_path) == []


def test_check_then_time_does_not_time_a_wrong_result():
    row = common.check_then_time(lambda: (1.0, 1e-4), lambda: pytest.fail("a wrong result was timed"))
    assert row == {"status": "WRONG", "err": 1.0, "ms": None}
    row = common.check_then_time(lambda: (math.nan, 1e-4), lambda: pytest.fail("a NaN result was timed"))
    assert row["status"] == "WRONG"
    assert common.check_then_time(lambda: (0.0, 1e-4), lambda: 1.5) == {"status": "ok", "err": 0.0, "ms": 1.5}
    row = common.check_then_time(lambda: 1 / 0, lambda: 1.5)
    assert row["status"] == "ERROR" and "ZeroDivisionError" in row["error"]


def test_block_time_warms_up_then_takes_the_median_per_call():
    calls = []
    ms = common.block_time(lambda x: calls.append(x), [(1,), (2,), (3,)], "cpu", warmup=2, iters=3, repeats=4)
    assert calls == [1, 2, 3] * 4 + [1, 2]  # cycled through the inputs
    assert 0 <= ms < 1


def test_host_ms_times_the_calls_between_two_syncs(monkeypatch):
    syncs, calls = [], []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: syncs.append(len(calls)))
    ms = launch.host_ms(lambda: calls.append(1), warmup=3, iters=5)
    assert syncs == [3, 8] and ms > 0


def test_write_json_is_atomic_and_says_whether_complete(tmp_path, capsys):
    path = str(tmp_path / "gemm.json")
    common.write_json(path, "gemm", [{"ms": 1.0}], complete=False, tolerance=1)
    saved = json.load(open(path))
    assert saved["complete"] is False and saved["rows"] == [{"ms": 1.0}] and saved["settings"] == {"tolerance": 1}
    assert capsys.readouterr().out == ""  # partial saves are quiet
    common.write_json(path, "gemm", [{"ms": 1.0}, {"ms": 2.0}], tolerance=1)
    assert json.load(open(path))["complete"] is True and os.listdir(tmp_path) == ["gemm.json"]


def test_kernel_rows_per_step_gpu_only_longest_first():
    from types import SimpleNamespace as E
    events = [E(key="gemm_kernel", device_type="DeviceType.CUDA", self_device_time_total=300.0, count=70),
              E(key="aten::mm", device_type="DeviceType.CPU", self_device_time_total=0.0, count=5),
              E(key="pool_kernel", device_type="DeviceType.CUDA", self_device_time_total=500.0, count=15),
              E(key="idle", device_type="DeviceType.CUDA", self_device_time_total=0.0, count=5)]
    assert profile.kernel_rows(events, 5) == [("pool_kernel", 100.0, 3), ("gemm_kernel", 60.0, 14)]


def test_gemm_launches_records_each_gemm_of_a_step_and_replays_it(ieee):
    from tnet.recipes import make_train_step
    from tnet.kernels import gemm
    model, opt, _ = steps.tnet_quick()
    x, y = steps.random_batches(2, tnet.DEVICE, n=1)[0]
    launches = profile.gemm_launches(make_train_step(model, opt), x, y)
    assert gemm._launch.__name__ == "_launch"  # the watch is gone
    labels = [label for label, _ in launches]
    assert len(labels) == 14, labels  # 3 conv forwards, 2 input and 3 weight gradients, 6 inner-product GEMMs
    assert "2048x32x75, conv" in labels and "64x1024x2" in labels
    label, launch = next((label, launch) for label, launch in launches if label.startswith("64x1024x2"))
    assert launch() is not None


def test_bars_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "bars.png"
    common.bars(str(path), ["a", "b"], {"x": [1.0, None], "y": [2.0, 3.0]}, "title", "ms", log=True)
    assert path.read_bytes()[:4] == b"\x89PNG"


# -----------------------------------------------------------------------------
# the layers and train studies' helpers


def test_layer_rows_medians_and_shares():
    samples = [(10.0, {("convolution", "forward"): 3.0, ("convolution", "backward"): 5.0, ("update", "update"): 1.0}),
               (12.0, {("convolution", "forward"): 4.0, ("convolution", "backward"): 6.0, ("update", "update"): 1.0}),
               (11.0, {("convolution", "forward"): 5.0, ("convolution", "backward"): 4.0, ("matmul", "backward"): 2.0})]
    rows, step_ms = layers.layer_rows(samples)
    assert step_ms == 11.0
    by_part = {r["part"]: r for r in rows}
    assert list(by_part) == ["convolution", "update", "matmul", "other"]  # PARTS order, then unknown parts, then the rest
    conv = by_part["convolution"]
    assert (conv["forward_ms"], conv["backward_ms"], conv["update_ms"], conv["ms"]) == (4.0, 5.0, None, 9.0)
    assert by_part["update"]["ms"] == 1.0 and by_part["matmul"]["ms"] == 0.0  # medians count missing samples as 0
    assert by_part["other"]["ms"] == pytest.approx(1.0)
    assert sum(r["share"] for r in rows) == pytest.approx(100)
    assert conv["share"] == pytest.approx(100 * 9 / 11)


def test_torch_quick_holds_tnet_weights_under_tnet_names():
    for width in (1, 2):
        state = cifar10_quick(width=width).state_dict()
        got = steps.torch_quick(state).state_dict()
        assert list(got) == list(state)
        # numpy's arrays both sides: an array == a tnet Tensor would compare through the interpreter's kernels
        assert all(np.array_equal(got[k].numpy(), v.numpy()) for k, v in state.items())


def test_torch_quick_computes_what_tnet_computes(ieee):
    """The reference net is tnet's net: both forwards on 2 images, with weights that make every layer count."""
    rng = np.random.default_rng(5)
    model = cifar10_quick()
    state = {name: rng.standard_normal(v.shape).astype(np.float32) * (0.05 if "conv" in name else 0.1)
             for name, v in model.state_dict().items()}
    model.load_state_dict(state)
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32) * 50
    ref = steps.torch_quick(state).double()(torch.tensor(x, dtype=torch.float64))
    assert_close(model(tnet.tensor(x)), ref, TOL["ieee"], "logits")


def test_torch_sgd_takes_caffes_steps():
    """torch.optim.SGD with the bias group at 2*lr against tnet's SGD (Caffe's rule), same gradients."""
    state = {k: v.numpy() for k, v in cifar10_quick().state_dict().items()}
    net = steps.torch_quick(state)
    opt = steps.torch_sgd(net)
    model = cifar10_quick()
    caffe = optim.SGD(model.parameters(), **steps.SOLVER)
    torch.manual_seed(0)
    for _ in range(3):
        for (name, p), q in zip(net.named_parameters(), model.parameters()):
            p.grad = torch.randn_like(p)
            q.grad = tnet.tensor(p.grad)
        opt.step()
        caffe.step()
    for (name, p), q in zip(net.named_parameters(), model.parameters()):
        assert_close(q.numpy() - state[name], p.detach() - torch.from_numpy(state[name]), 1e-4, name)


@pytest.fixture
def cpu_batches():
    return steps.random_batches(3, "cpu")


def test_random_batches_differ_and_repeat(cpu_batches):
    assert len(cpu_batches) == steps.N_BATCHES
    (x0, y0), (x1, y1) = cpu_batches[:2]
    assert x0.shape == (3, 3, 32, 32) and x0.dtype == torch.float32 and y0.dtype == torch.int64
    assert not torch.equal(x0, x1) and 30 < x0.std() < 70 and ((0 <= y0) & (y0 < 10)).all()
    assert all(torch.equal(a, b) for a, b in zip(cpu_batches[0], steps.random_batches(3, "cpu")[0]))


def test_check_passes_pytorch_in_fp32(cpu_batches):
    ref = steps.reference_record(1, cpu_batches)
    assert set(ref) == {"loss"} | set(cifar10_quick().state_dict())
    assert ref["loss"].shape == (steps.CHECK_STEPS,) and all(ref[k].norm() > 0 for k in ref)
    # graphed: without a GPU the step runs eagerly; with one, CPU work cannot be captured
    for graphed in (False,) if torch.cuda.is_available() else (False, True):
        err, tol, worst = steps.check_record(steps.record(*steps.torch_variant(1, cpu_batches, graphed), cpu_batches), ref)
        assert err <= tol, worst


def test_a_wrong_step_is_reported_not_timed(cpu_batches, monkeypatch):
    ref = steps.reference_record(1, cpu_batches)
    monkeypatch.setattr(steps, "block_time", lambda *args, **kwargs: pytest.fail("a wrong step was timed"))
    monkeypatch.setattr(steps, "torch_sgd", lambda net: torch.optim.SGD(net.parameters(), **steps.SOLVER))  # no lr_mult 2
    row = steps.check_then_time_steps(lambda: steps.torch_variant(1, cpu_batches), cpu_batches, ref, "cpu",
                                      train.CPU_TIMING)
    assert row["status"] == "WRONG" and row["worst"].endswith(".bias") and row["err"] == pytest.approx(0.5, rel=0.02)


def test_profiled_step_is_a_training_step_and_times_every_part(monkeypatch):
    monkeypatch.setattr(steps, "CHECK_STEPS", 1)  # one tnet step under the interpreter: a few seconds
    batches = steps.random_batches(2, tnet.DEVICE)
    model, opt, params = steps.tnet_quick()
    marks = []
    err, tol, worst = steps.check_record(steps.record(layers.profiled_step(model, opt, marks), params, batches),
                                         steps.reference_record(1, batches))
    assert err <= tol, worst
    assert importlib.import_module("tnet.tensor")._backward_timer[0] is None  # switched off again
    parts = {(part, phase) for part, phase, _ in marks}
    assert {part for part, _ in parts} == set(layers.PARTS)
    assert {phase for _, phase in parts} == set(layers.PHASES)
    assert len(marks) == 12 + 1 + 13 + 1  # forward: 12 layers and the loss; backward: their 13 closures; update
    assert all(clock.ms() >= 0 for _, _, clock in marks)


def test_train_study_end_to_end_with_pytorch(tmp_path, monkeypatch):
    """The study on the CPU with PyTorch's variants only (tnet's would run through the interpreter)."""
    monkeypatch.setattr(train, "QUICK_NETS", [("tiny b3", 1, 3), ("tiny b5", 1, 5)])
    monkeypatch.setattr(train, "QUICK_TIMING", {"warmup": 1, "iters": 2, "repeats": 2})
    monkeypatch.setattr(train, "CPU_TIMING", {"warmup": 0, "iters": 1, "repeats": 1})
    monkeypatch.setattr(train, "TRAIN_VARIANTS", {k: v for k, v in train.TRAIN_VARIANTS.items()
                                                  if k.startswith("torch") and not k.endswith("bf16")})
    monkeypatch.setattr(airbench, "rows", lambda args: iter(()))  # test_airbench_rows_end_to_end has them
    rows = train.run(cli.build_parser().parse_args(["train", "--quick", "--out", str(tmp_path)]))
    assert [(r["net"], r["variant"]) for r in rows] == [
        ("tiny b3", "torch eager"), ("tiny b3", "torch graphed"), ("tiny b3", "torch cpu"),
        ("tiny b5", "torch eager"), ("tiny b5", "torch graphed")]  # the CPU: the smallest net only
    assert all(r["status"] == "ok" and r["err"] <= steps.CHECK_TOL["change"] and r["ms"] > 0 for r in rows), rows
    eager, graphed, cpu = rows[:3]
    assert eager["vs_torch_eager"] == 1 and eager["vs_torch_graphed"] is None and graphed["vs_torch_graphed"] == 1
    assert cpu["vs_torch_eager"] == pytest.approx(cpu["ms"] / eager["ms"])
    assert cpu["s_per_100"] == pytest.approx(cpu["ms"] / 10)
    saved = json.loads((tmp_path / "train.json").read_text())
    assert saved["study"] == "train" and len(saved["rows"]) == 5 and saved["settings"]["check_steps"] == steps.CHECK_STEPS
    assert saved["complete"] is True


# -----------------------------------------------------------------------------
# the train study's airbench94 rows, on the CPU at widths 8 and batch 2 (the interpreter runs tnet's step)

TINY_AIRBENCH = ("airbench94 tiny b2", (8, 8, 8), 2)


def tiny_recipe(batch, recipe=airbench.recipe):
    """The recipe at 1024 / batch times its lr: the summed loss's gradients grow with the batch, so
    batch 2 then takes steps of batch 1024's size, which float16 weights can hold (at the recipe's lr
    whiten.bias's change falls under its float16 ulp: its check fails, as airbench's would at batch 2)."""
    at_batch = recipe(batch)
    return dataclasses.replace(at_batch, lr=at_batch.lr * 1024 / batch)


@pytest.fixture
def tiny_airbench(monkeypatch):
    """airbench.rows at TINY_AIRBENCH, with torch.compile standing in as the function itself (the modes
    asked for in `modes`) and fake timings (in `timed`: 1 ms more per variant, in order); the
    rows' pieces built alike for tests that take them apart: the initial state, groups and batches."""
    _, widths, batch = TINY_AIRBENCH
    modes, timed = [], []

    def fake_compile(fn, mode):
        modes.append(mode)
        return fn

    def fake_time(fn, inputs, device, warmup, iters, repeats):
        timed.append(inputs)
        return float(len(timed))
    monkeypatch.setattr(airbench, "NET", TINY_AIRBENCH)
    monkeypatch.setattr(airbench, "recipe", tiny_recipe)
    monkeypatch.setattr(torch, "compile", fake_compile)
    monkeypatch.setattr(steps, "block_time", fake_time)
    recipe = tiny_recipe(batch)
    batches = steps.random_batches(batch, tnet.DEVICE, std=1)
    state = airbench.initial_state(widths, torch.cat([x for x, _ in batches]))
    return argparse.Namespace(modes=modes, timed=timed, recipe=recipe, batches=batches, state=state, widths=widths,
                              groups=airbench.sgd_groups(state, widths, recipe))


def test_train_options():
    parse = cli.build_parser().parse_args
    args = parse(["train"])
    assert (args.compile_mode, args.only_airbench) == (None, False)
    assert airbench.compile_mode(args) == "max-autotune-no-cudagraphs"
    assert airbench.compile_mode(parse(["train", "--quick"])) == "default"  # quicker to compile
    args = parse(["train", "--quick", "--compile-mode", "max-autotune", "--only-airbench"])
    assert (airbench.compile_mode(args), args.only_airbench) == ("max-autotune", True)
    with pytest.raises(SystemExit):
        parse(["train", "--compile-mode", "fast"])


def test_airbench_settings_are_a_subset():
    assert airbench.NET == ("airbench94 b1024", (64, 256, 256), 1024)
    assert airbench.QUICK_TIMING["repeats"] < airbench.TIMING["repeats"]
    for timing in (airbench.TIMING, airbench.QUICK_TIMING):  # each block holds as many lookahead updates
        assert timing["iters"] % 5 == 0 and timing["warmup"] >= 3  # cuDNN's benchmark mode picks in the first
    assert airbench.CHECK_STEPS < 5 and airbench.CHECK_STEPS <= steps.N_BATCHES  # no lookahead update in the check


def test_torch_airbench94_holds_tnet_weights_under_tnet_names():
    """(test_airbench runs both nets' forward and gradients against each other.)"""
    from tnet.models import airbench94
    model = airbench94(widths=(8, 16, 8))
    state = model.state_dict()
    net = airbench.torch_airbench94((8, 16, 8))
    net.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in state.items()})
    assert list(net.state_dict()) == list(state)
    assert all(np.array_equal(net.state_dict()[k].numpy(), v) for k, v in state.items())
    assert ({k: p.requires_grad for k, p in net.named_parameters()} ==
            {k: p.requires_grad for k, p in model.named_parameters()})


def test_sgd_groups_are_train_pys_airbench_groups(tiny_airbench):
    weights, shifts, bias = tiny_airbench.groups
    assert bias["params"] == ["whiten.bias"] and "head.weight" in weights["params"]
    assert sorted(shifts["params"]) == sorted(f"block{b}.norm{i}.bias" for b in (1, 2, 3) for i in (1, 2))
    assert len(weights["params"]) == 7 and "whiten.weight" not in weights["params"]  # frozen
    lr = 0.2 * tiny_airbench.recipe.lr / (1024 * (1 + 1 / 0.15))  # airbench's units; the schedule starts at 0.2
    assert (weights["lr"], bias["lr"], shifts["lr"]) == pytest.approx((lr, lr, 64 * lr))
    assert shifts["lr"] * shifts["weight_decay"] == pytest.approx(weights["lr"] * weights["weight_decay"])
    assert all(g["nesterov"] and g["momentum"] == 0.85 and g["dampening"] == 0 for g in tiny_airbench.groups)


def test_pytorch_airbench_steps_pass_the_check_and_a_wrong_one_fails(tiny_airbench):
    t = tiny_airbench
    ref_batches = airbench.torch_batches(t.batches, torch.float64)
    ref = steps.record(*airbench.torch_step(t.state, t.widths, ref_batches, t.groups, t.recipe, torch.float64),
                       ref_batches, airbench.CHECK_STEPS)
    assert ref["loss"].shape == (3,) and all(ref[k].norm() > 0 for k in ref)  # trainable parameters only
    assert set(ref) == {"loss"} | {n for g in t.groups for n in g["params"]}
    half = airbench.torch_batches(t.batches, torch.float16)
    assert half[0][0].dtype == torch.float16 and half[0][0].is_contiguous(memory_format=torch.channels_last)
    for graphed in (False, True):  # graphed: eager on the CPU, captured on a GPU
        step, params = airbench.torch_step(t.state, t.widths, half, t.groups, t.recipe, torch.float16, graphed)
        assert params["head.weight"].dtype == torch.float16 and params["block1.norm1.bias"].dtype == torch.float32
        assert params["block1.conv1.weight"].is_contiguous(memory_format=torch.channels_last)
        err, tol, worst = steps.check_record(steps.record(step, params, half, airbench.CHECK_STEPS), ref,
                                             airbench.CHECK_TOL_FP16)
        assert err <= tol, worst
    plain = [{**g, "nesterov": False} for g in t.groups]  # a step without the Nesterov term: WRONG, not timed
    row = steps.check_then_time_steps(
        lambda: airbench.torch_step(t.state, t.widths, half, plain, t.recipe, torch.float16), half, ref, tnet.DEVICE,
        airbench.QUICK_TIMING, airbench.CHECK_TOL_FP16, airbench.CHECK_STEPS)
    assert row["status"] == "WRONG" and row["err"] > 2 * airbench.CHECK_TOL_FP16["change"] and not t.timed


def test_airbench_rows_in_a_graphing_compile_mode(tiny_airbench, monkeypatch):
    """reduce-overhead graphs the compiled step itself: no compiled graphed row; tnet's step stands in
    as PyTorch's in float32 here, so that the run takes a second."""
    def torch_for_tnet(state, widths, batches, recipe):
        return airbench.torch_step(state, widths, batches, airbench.sgd_groups(state, widths, recipe), recipe,
                                   torch.float32)
    monkeypatch.setattr(airbench, "tnet_step", torch_for_tnet)
    args = cli.build_parser().parse_args(["train", "--compile-mode", "reduce-overhead"])
    rows = list(airbench.rows(args))
    assert [r["variant"] for r in rows] == ["torch eager fp16", "torch graphed fp16", "torch compiled fp16",
                                           "tnet graphed fp16"]
    assert tiny_airbench.modes == ["reduce-overhead"] and rows[2]["compile_mode"] == "reduce-overhead"
    assert all(r["status"] == "ok" for r in rows), rows
    assert rows[-1]["vs_torch_compiled"] == 4 / 3 and rows[-1]["vs_torch_compiled_graphed"] is None


def test_airbench_rows_end_to_end(tiny_airbench, tmp_path, capsys):
    """bench.py train --quick --only-airbench at TINY_AIRBENCH: tnet's graphed step (eager on the CPU)
    and PyTorch's four pass the check, are timed (fake), and fill the table, the JSON and the plot."""
    train.run(cli.build_parser().parse_args(["train", "--quick", "--only-airbench", "--out", str(tmp_path)]))
    saved = json.loads((tmp_path / "train.json").read_text())
    rows = saved["rows"]
    names = ["torch eager fp16", "torch graphed fp16", "torch compiled fp16", "torch compiled graphed fp16",
             "tnet graphed fp16"]
    assert [(r["net"], r["variant"]) for r in rows] == [("airbench94 tiny b2", name) for name in names]
    assert all(r["status"] == "ok" and r["err"] <= 1 for r in rows), rows
    assert [r["ms"] for r in rows] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(inputs[0][0].dtype == (torch.float32 if i == 4 else torch.float16)
               for i, inputs in enumerate(tiny_airbench.timed))  # float16 channels-last for PyTorch
    assert tiny_airbench.modes == ["default", "default"]  # --quick's compile mode
    assert all(r["compile_mode"] == "default" and r["compile_s"] > 0 for r in rows[2:4])
    tnet_row = rows[-1]
    assert (tnet_row["vs_torch_eager"], tnet_row["vs_torch_graphed"], tnet_row["vs_torch_same"]) == (5, 2.5, 2.5)
    assert (tnet_row["vs_torch_compiled"], tnet_row["vs_torch_compiled_graphed"]) == (5 / 3, 1.25)
    assert rows[1]["vs_torch_eager"] == 2 and rows[0]["vs_torch_compiled"] is None
    assert saved["complete"] is True and saved["settings"]["airbench94"]["check_steps"] == airbench.CHECK_STEPS
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    tnet_line = next(line for line in lines if line[:6] == ["airbench94", "tiny", "b2", "tnet", "graphed", "fp16"])
    assert tnet_line[7:] == "5.000 0.500 5.00 2.50 2.50 1.67 1.25".split()  # ms, s/100 and the five ratios
    assert sum(line[3:6] == ["torch", "compiled", "graphed"] and "torch.compile" in line for line in lines) == 1
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "train.png").read_bytes()[:4] == b"\x89PNG"


# -----------------------------------------------------------------------------
# the convs study


AIRBENCH_CONVS = ["2x2 3->24 at 32x32", "3x3 24->64 at 31x31", "3x3 64->64 at 15x15", "3x3 64->256 at 15x15",
                  "3x3 256->256 at 7x7", "3x3 256->256 at 3x3"]  # the anchors' cuDNN table's layers, in order


def test_convs_layers_are_airbench94s_and_cifar10_quicks():
    airbench = [layer for layer in convs.LAYERS if layer.net == "airbench94"]
    assert [convs.shape(layer) for layer in airbench] == AIRBENCH_CONVS
    assert [(layer.padding, layer.bias) for layer in airbench] == [(0, True)] + [(1, False)] * 5
    # cifar10_quick's convolutions as PyTorch's copy of tnet's net sees them
    seen = []
    net = steps.torch_quick(cifar10_quick().state_dict())
    for module in net.children():
        if isinstance(module, torch.nn.Conv2d):
            module.register_forward_hook(lambda m, args, out: seen.append(
                ("cifar10_quick", m.in_channels, m.out_channels, args[0].shape[-1], *m.kernel_size[:1], *m.padding[:1],
                 m.bias is not None)))
    net(torch.zeros(1, 3, 32, 32))
    assert [(layer.net, *layer[2:8]) for layer in convs.LAYERS if layer.net == "cifar10_quick"] == seen
    assert all(layer.cin == 3 for layer in convs.LAYERS if "dgrad" in layer.unused)  # the data's gradient only


def test_convs_resnet18_layers_are_the_zoos():
    """ResNet-18's rows are the distinct convolutions of the zoo's model (kuangliu's) at batch 256."""
    seen = set()
    net = zoo.build("ResNet18", "torch")
    for module in net.modules():
        if isinstance(module, torch.nn.Conv2d):
            module.register_forward_hook(lambda m, args, out: seen.add(
                (m.in_channels, m.out_channels, args[0].shape[-1], m.kernel_size[0], m.padding[0], m.stride[0])))
    net(torch.zeros(1, 3, 32, 32))
    rows = {(layer.cin, layer.cout, layer.size, layer.kernel, layer.padding, layer.stride)
            for layer in convs.LAYERS if layer.net == "resnet18"}
    assert rows == seen


def test_convs_warm_up_splits_the_configs_among_its_jobs(monkeypatch):
    """warm() runs `python -m benchmarks.convs LAYERS PRECISIONS BATCH` in `jobs` processes, each under
    TNET_AUTOTUNE=compile:I/N."""
    calls = []

    def fake_run(argv, cwd, env, capture_output, text):
        calls.append((argv[1:], env["TNET_AUTOTUNE"]))
        return subprocess.CompletedProcess(argv, 0, "", "")
    monkeypatch.setattr(common.subprocess, "run", fake_run)
    layers = [layer for layer in convs.LAYERS if layer.layer in ("g1c1", "r18s1")]
    assert convs.warm(layers, ["bf16", "fp16"], None, 2) == {}
    assert sorted(calls) == [(["-m", "benchmarks.convs", "g1c1,r18s1", "bf16,fp16", "0"], f"compile:{i}/2")
                             for i in range(2)]


def test_compiling_processes_out_of_gpu_memory_run_again_fewer_at_a_time(monkeypatch, capsys):
    """A process that died of CUDA's OutOfMemoryError runs again with half as many beside it (a large
    model's shards each take a step); down to one, it fails as any other error does."""
    calls = []

    def fake_run(argv, cwd, env, capture_output, text):
        calls.append(argv[-1])
        oom = argv[-1] == "big" and len(calls) <= 5  # the first round's shards run out; two at a time fit
        error = "torch.OutOfMemoryError: CUDA out of memory." if oom else "ValueError: broken"
        return subprocess.CompletedProcess(argv, 1 if oom or argv[-1] == "bad" else 0, "", "Traceback\n" + error)
    monkeypatch.setattr(common.subprocess, "run", fake_run)
    tasks = [("big", "zoo", ["big"], (i, 4)) for i in range(4)] + [("bad", "zoo", ["bad"], None)]
    assert common.compile_in_processes(tasks, 4, "compiling") == {"bad": "ValueError: broken"}
    assert calls.count("big") == 4 + 4 and calls.count("bad") == 1
    assert "by 4 processes" in capsys.readouterr().out


def test_chosen_configs_name_each_kernel_and_its_tile(monkeypatch):
    """autotune.chosen_configs: what each autotuned kernel chose per tuning key, as text (convs' rows keep
    those a pass added)."""
    from tnet.kernels import autotune, conv
    monkeypatch.setattr(conv.conv_kernel, "chosen", {})
    x = tnet.randn(1, 32, 5, 5).memory.contiguous(memory_format=torch.channels_last)
    w = tnet.randn(8, 32, 3, 3).memory
    before = autotune.chosen_configs()
    conv.conv2d(x, w, 1, 1)
    added = {k: v for k, v in autotune.chosen_configs().items() if k not in before}
    assert [name for name, _ in added] == ["conv_kernel"]
    assert all(f"{k}=" in text for text in added.values() for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps"))


def test_convs_warm_one_runs_each_pass_of_each_layer(monkeypatch):
    """A compiling process's work (python -m benchmarks.convs): tnet's three passes of each layer named, in
    each precision, at the layer's batch unless one is given (here 1, on the CPU)."""
    monkeypatch.setattr(convs, "DEVICE", "cpu")
    ran = []
    monkeypatch.setattr(convs, "tnet_passes", lambda layer, precision, tma=True: {
        p: (lambda x, w, b, dy, p=p: ran.append((layer.layer, precision, p, x.shape[0], tma))) for p in convs.PASSES})
    convs.warm_one(["r18s4sc", "g3c2"], ["bf16", "fp16"], 1)
    assert ran == [(name, prec, p, 1, True) for name in ("g3c2", "r18s4sc") for prec in ("bf16", "fp16")
                   for p in convs.PASSES]
    ran.clear()
    convs.warm_one(["g3c2"], ["bf16"], 1, gathered=True)  # the gathering kernels too
    assert ran == [("g3c2", "bf16", p, 1, tma) for tma in (True, False) for p in convs.PASSES]


def test_convs_options():
    args = cli.build_parser().parse_args(["convs"])
    assert (args.batch, args.precisions, args.jobs) == (None, ["tf32", "bf16", "fp16"], convs.JOBS)
    assert {convs.layer_batch(layer, args.batch) for layer in convs.LAYERS if layer.net == "resnet18"} == {256}
    assert convs.layer_batch(convs.LAYERS[0], None) == 1024 and convs.layer_batch(convs.LAYERS[-1], 8) == 8
    assert args.layers == [layer.layer for layer in convs.LAYERS]
    args = cli.build_parser().parse_args(["convs", "--batch", "8", "--precisions", "fp16,tf32",
                                            "--layers", "g3c2,cifar10_quick"])
    assert (args.batch, args.precisions, args.layers) == (8, ["fp16", "tf32"], ["g3c2", "cifar10_quick"])
    for bad in (["--precisions", "fp32"], ["--layers", "conv9"], ["--layers", ","]):
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(["convs", *bad])


CONVS_MS = {("forward", "tnet"): 1.0, ("dgrad", "tnet"): 2.0, ("wgrad", "tnet"): 3.0,
            ("forward", "cudnn"): 0.5, ("dgrad", "cudnn"): 1.0, ("wgrad", "cudnn"): 4.0}  # fake timings


def test_convs_study_on_the_cpu_with_fake_timings(tmp_path, monkeypatch, capsys):
    """run() at batch 2 on the CPU, PyTorch's passes standing in for tnet's (conv3's bf16 dgrad wrong)
    and each (pass, impl) timed at CONVS_MS: the checks, rows, totals, ratios, table, JSON and plot."""
    cudnn_passes = convs.cudnn_passes
    monkeypatch.setattr(convs, "DEVICE", "cpu")

    def fake(impl):
        def passes(layer, precision=None):
            wrong = impl == "tnet" and (layer.layer, precision) == ("conv3", "bf16")
            out = {}
            for p, fn in cudnn_passes(layer).items():
                def run(x, w, b, dy, fn=fn, scale=1.5 if wrong and p == "dgrad" else 1):
                    return fn(x, w, b if b is None else b.to(x.dtype), dy) * scale
                run.ms = CONVS_MS[p, impl]
                out[p] = run
            return out
        return passes
    timed = []

    def fake_time(fn, inputs, bench):
        timed.append(inputs)
        return fn.ms
    monkeypatch.setattr(convs, "tnet_passes", fake("tnet"))
    monkeypatch.setattr(convs, "cudnn_passes", fake("cudnn"))
    monkeypatch.setattr(convs, "gpu_time", fake_time)
    flags = torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32
    args = cli.build_parser().parse_args(["convs", "--quick", "--batch", "2", "--layers", "whiten,conv3",
                                            "--out", str(tmp_path)])
    rows = convs.run(args)
    assert (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32) == flags  # restored
    assert [(r["layer"], r["precision"]) for r in rows] == [(n, p) for n in ("whiten", "conv3") for p in convs.PRECISIONS]
    assert all(1 < len(inputs) <= convs.MAX_SETS and all((t != 0).all() for t in inputs[1] if t is not None)
               for inputs in timed)  # several input sets, no zeros
    for row in rows:
        wrong = (row["layer"], row["precision"]) == ("conv3", "bf16")
        for (p, impl), ms in CONVS_MS.items():
            status = "WRONG" if wrong and (p, impl) == ("dgrad", "tnet") else "ok"
            assert row[f"{p}_{impl}_status"] == status and row[f"{p}_{impl}_ms"] == (ms if status == "ok" else None)
            assert row[f"{p}_{impl}_err"] <= convs.TOL[row["precision"]] or status == "WRONG"
        assert (row["forward_ratio"], row["wgrad_ratio"]) == (2.0, 0.75)
        assert row["forward_tnet_configs"] == [] and "forward_cudnn_configs" not in row  # the fakes tune nothing
        assert (row["dgrad_ratio"], row["tnet_ms"], row["cudnn_ms"]) == ((None, None, 5.5) if wrong else (2.0, 6.0, 5.5))
        assert row["ratio"] == (None if wrong else pytest.approx(6.0 / 5.5))
    saved = json.loads((tmp_path / "convs.json").read_text())
    assert saved["study"] == "convs" and saved["complete"] is True and saved["rows"] == json.loads(json.dumps(rows))
    out = capsys.readouterr().out
    lines = [line.split() for line in out.splitlines()]
    assert "conv3 5x5 32->64 at 8x8 bf16 dgrad WRONG 1.000 - 5.0e-01".split() in lines
    assert "conv3 5x5 32->64 at 8x8 bf16 total - 5.500 - -".split() in lines
    assert "whiten 2x2 3->24 at 32x32 fp16 wgrad (unused) 3.000 4.000 0.75".split() == lines[11][:-1]  # after the header
    assert sum(line[6] == "total" for line in lines if len(line) > 6) == 6
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "convs.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU stands in for the GPU's timings (on a GPU: bench.py itself)")
def test_convs_gathered_times_tnets_gathering_kernels_beside(tmp_path, monkeypatch, capsys):
    """--gathered: a third impl, tnet's passes with conv_tma's kernels off (each call only), checked and
    timed beside; its column in the table, its fields in the JSON rows."""
    from tnet.kernels import conv_tma
    monkeypatch.setattr(convs, "DEVICE", "cpu")
    seen = []
    suits = conv_tma.suits
    monkeypatch.setattr(conv_tma, "suits", lambda *a, **k: seen.append(conv_tma.ENABLED) or suits(*a, **k))
    monkeypatch.setattr(convs, "gpu_time", lambda fn, inputs, bench: 1.0)
    args = cli.build_parser().parse_args(["convs", "--quick", "--batch", "1", "--layers", "g3c2", "--precisions",
                                            "fp16", "--gathered", "--out", str(tmp_path)])
    assert args.gathered
    (row,) = convs.run(args)
    assert all(row[f"{p}_gathered_status"] == "ok" for p in convs.PASSES) and row["gathered_ms"] == 3.0
    assert set(seen) == {True, False} and conv_tma.ENABLED  # off in the gathered calls alone
    out = capsys.readouterr().out
    assert "gathered ms" in out.splitlines()[0]


# -----------------------------------------------------------------------------
# the zoo study: pytorch-cifar's models (benchmarks/zoo_models.py; tests/test_zoo.py trains them on the CPU)


def test_zoo_options_and_models():
    parse = cli.build_parser().parse_args
    args = parse(["zoo"])
    assert (args.batch, args.models, zoo.models_of(args), args.jobs) == (256, None, list(zoo_models.ZOO), zoo.JOBS)
    assert parse(["zoo", "--jobs", "0"]).jobs == 0
    assert zoo.models_of(parse(["zoo", "--quick"])) == zoo.QUICK_MODELS
    args = parse(["zoo", "--quick", "--models", "DPN92,LeNet", "--batch", "8"])
    assert (zoo.models_of(args), args.batch) == (["DPN92", "LeNet"], 8)
    for bad in (["--models", "ResNet19"], ["--models", ","]):
        with pytest.raises(SystemExit):
            parse(["zoo", *bad])
    assert set(zoo.QUICK_MODELS) < set(zoo.MODELS) and zoo.SIZE == "full"
    assert zoo.QUICK_TIMING["repeats"] < zoo.TIMING["repeats"] and min(zoo.TIMING["warmup"], zoo.QUICK_TIMING["warmup"]) >= 3


def test_zoo_warm_up_runs_each_model_in_its_own_compiling_process(monkeypatch, capsys):
    """warm() runs `python -m benchmarks.zoo MODEL BATCH` per model under TNET_AUTOTUNE=compile (a model's
    configs split among the jobs where there are fewer models: compile:I/N) and reports the ones that
    failed by their last line of stderr."""
    calls = []

    def fake_run(argv, cwd, env, capture_output, text):
        calls.append((argv[1:], env["TNET_AUTOTUNE"], os.path.isfile(os.path.join(cwd, "bench.py"))))
        failed = argv[3] == "DPN92"
        return subprocess.CompletedProcess(argv, int(failed), "", "Traceback\nValueError: no" if failed else "")
    monkeypatch.setattr(common.subprocess, "run", fake_run)
    assert zoo.warm(["LeNet", "DPN92"], 8, jobs=2) == {"DPN92": "ValueError: no"}
    assert sorted(calls) == [(["-m", "benchmarks.zoo", name, "8"], "compile", True) for name in ("DPN92", "LeNet")]
    assert "DPN92: ValueError: no" in capsys.readouterr().out
    calls.clear()  # one model and 3 jobs: its configs split three ways
    assert zoo.warm(["LeNet"], 8, jobs=3) == {}
    assert sorted(calls) == [(["-m", "benchmarks.zoo", "LeNet", "8"], f"compile:{i}/3", True) for i in range(3)]


@pytest.fixture
def reduced_zoo(monkeypatch):
    """The zoo study at the CPU test's reduced sizes."""
    monkeypatch.setattr(zoo, "SIZE", "reduced")


def test_zoo_check_bounds_each_piece_by_pytorchs_own_error(reduced_zoo, monkeypatch):
    """EfficientNet's BatchNorm shifts before a 1x1 convolution and another BatchNorm get no gradient
    but rounding, and its first block's expansion conv none at all: PyTorch's own bf16 error bounds
    the first, the second is exact; PyTorch's bf16 step passes, one without Nesterov's term fails."""
    batches = steps.random_batches(2, "cpu", std=1)
    torch.manual_seed(0)
    state = {k: v.numpy() for k, v in zoo.build("EfficientNetB0", "torch").state_dict().items()}
    wide = [(x.double(), y) for x, y in batches]
    ref = steps.record(*zoo.torch_step("EfficientNetB0", state, wide, torch.float64), wide, zoo.CHECK_STEPS)

    def record(**kwargs):
        return steps.record(*zoo.torch_step("EfficientNetB0", state, batches, **kwargs), batches, zoo.CHECK_STEPS)
    bounds = zoo.bounds_of(ref, record(autocast=torch.bfloat16))
    assert bounds["layers.0.bn3.bias"] > 1e3 and bounds["layers.0.conv2.weight"] < 1
    assert bounds["loss"] == zoo.CHECK_TOL["loss"] and set(bounds) == set(ref)
    assert ref["layers.0.conv1.weight"].norm() == 0 and bounds["layers.0.conv1.weight"] == zoo.CHECK_TOL["change"]
    err, bound, worst = zoo.check_pieces(record(), ref, bounds)  # fp32 passes the bf16 bounds
    assert err <= bound, worst
    monkeypatch.setitem(zoo.SGD, "nesterov", False)
    err, bound, worst = zoo.check_pieces(record(autocast=torch.bfloat16), ref, bounds)
    assert err > bound, worst


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU stands in for the GPU's timings (on a GPU: bench.py itself)")
def test_zoo_study_end_to_end_on_the_cpu(reduced_zoo, monkeypatch, tmp_path, capsys):
    """bench.py zoo on two reduced models at batch 2: PyTorch's fp32 step stands in for tnet's (which
    would run in the interpreter), the timings are fake (1 ms more per variant, in order), and
    MobileNet fails to build in tnet: its row says why, PyTorch's is timed from its own weights."""
    timed = []

    def fake_time(fn, inputs, device, warmup, iters, repeats):
        timed.append(inputs)
        return float(len(timed))
    tnet_state = zoo.tnet_state

    def no_groups(name):
        if name == "MobileNet":
            raise NotImplementedError("Conv2d: groups=8 is not supported")
        return tnet_state(name)
    monkeypatch.setattr(zoo, "block_time", fake_time)
    monkeypatch.setattr(zoo, "tnet_state", no_groups)
    monkeypatch.setattr(zoo, "tnet_step", lambda name, state, batches: zoo.torch_step(name, state, batches))
    args = cli.build_parser().parse_args(["zoo", "--models", "LeNet,MobileNet", "--batch", "2", "--out", str(tmp_path)])
    rows = zoo.run(args)
    assert [(r["model"], r["variant"], r["status"], r["ms"]) for r in rows] == [
        ("LeNet", zoo.TORCH, "ok", 1.0), ("LeNet", zoo.TNET, "ok", 2.0),
        ("MobileNet", zoo.TORCH, "ok", 3.0), ("MobileNet", zoo.TNET, "ERROR", None)]
    assert rows[1]["vs_torch_graphed"] == 2.0 and rows[3]["vs_torch_graphed"] is None
    assert all(r["err"] <= r["bound"] for r in rows[:3]) and rows[0]["params_m"] == pytest.approx(0.062006)
    assert rows[3]["error"] == "NotImplementedError: Conv2d: groups=8 is not supported"
    # PyTorch's batches: LeNet's view(N, -1) cannot take channels-last, MobileNet's can
    assert [r["torch_layout"] for r in rows] == ["NCHW", "NCHW", "channels-last", "channels-last"]
    assert timed[2][0][0].is_contiguous(memory_format=torch.channels_last)
    saved = json.loads((tmp_path / "zoo.json").read_text())
    assert saved["study"] == "zoo" and saved["complete"] and saved["rows"] == json.loads(json.dumps(rows))
    assert saved["settings"]["models"] == ["LeNet", "MobileNet"] and saved["settings"]["batch"] == 2
    out = capsys.readouterr().out
    assert "MobileNet tnet graphed bf16: ERROR, NotImplementedError: Conv2d: groups=8 is not supported" in out
    assert "LeNet 0.06M tnet graphed bf16".split() == [line.split() for line in out.splitlines()][2][:5]
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "zoo.png").read_bytes()[:4] == b"\x89PNG"


SHAPES = [(37, 29, 75), (1, 1, 1), (33, 70, 40)]  # odd sizes; 70 > 64 gives two_tiles a half-empty block
CASES = [(name, p) for name, (_, ps) in gemm_variants.VARIANTS.items() for p in ps]


@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("name,precision", CASES)
def test_variant_matches_torch(name, precision, M, N, K):
    torch.manual_seed(0)
    a, b = torch.randn(M, K).to(tnet.DEVICE), torch.randn(K, N).to(tnet.DEVICE)
    ref = a.double() @ b.double()
    # The interpreter ignores tf32 (the GPU does not).
    tol = {"ieee": 1e-5, "tf32": 3e-3, "bf16": 3e-2, "fp16": 5e-3}[precision]  # tf32 on the GPU: ~1e-3
    out = gemm_variants.VARIANTS[name][0](a, b, precision)
    assert out.shape == (M, N) and out.dtype == torch.float32
    err = (out.double() - ref).abs()
    worst = divmod(err.argmax().item(), N)
    assert (err.norm() / ref.norm()).item() < tol, f"worst element {worst}: {out[worst].item()} vs {ref[worst].item()}"


@pytest.mark.parametrize("dtype,precision", [(torch.bfloat16, "bf16"), (torch.float16, "fp16")])
@pytest.mark.parametrize("name", ["tiled", "two_tiles"])
def test_variant_bf16_inputs_exact_products(name, dtype, precision):
    """16-bit inputs: the products are exact in fp32, so only the fp32 sums differ from float64."""
    torch.manual_seed(1)
    a, b = (torch.randn(*s).to(dtype).to(tnet.DEVICE) for s in ((37, 75), (75, 29)))
    ref = a.double() @ b.double()
    out = gemm_variants.VARIANTS[name][0](a, b, precision)
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


# the eager study: host time per op and eager steps (benchmarks/eager.py)


def test_eager_options():
    parse = cli.build_parser().parse_args
    args = parse(["eager"])
    assert (args.steps, args.profile) == ("all", False)
    assert parse(["eager", "--steps", "readme", "--profile"]).steps == "readme"
    with pytest.raises(SystemExit):
        parse(["eager", "--steps", "resnet"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU stands in for the GPU's timings (on a GPU: bench.py itself)")
def test_eager_op_rows_check_each_op_then_time_it(monkeypatch):
    """Each op's tnet and PyTorch calls are checked against float64, then timed (a fake timing that
    runs the call twice and says 2 ms); the bare launches have no PyTorch row; cProfile's text is
    kept per op."""
    monkeypatch.setattr(eager, "host_ms", lambda fn, warmup, iters: [fn(), fn()] and 2.0)
    monkeypatch.setattr(eager, "PROFILE_CALLS", 1)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)  # the profile's, on the CPU
    profile = []
    rows = eager.op_rows({"iters": 1, "repeats": 1}, profile)
    assert all(r["status"] == "ok" and r["ms"] == 2.0 for r in rows), [r for r in rows if r["status"] != "ok"]
    cases = list(dict.fromkeys(r["case"] for r in rows))
    assert len(cases) == 9 and len(profile) == 9 and all(p.startswith("### ") for p in profile)
    assert [r["variant"] for r in rows if r["case"].startswith("bare")] == ["tnet", "tnet"]
    assert all(r["err"] <= eager.OP_TOL for r in rows)
    assert [r["vs_torch"] for r in rows if r["variant"] == "tnet" and not r["case"].startswith("bare")] == [1.0] * 7


def test_interleaved_takes_turns_and_times_only_what_passed_its_check():
    """The variants' blocks run in turns after one untimed block each, the median per variant; one that
    fails its check is not timed, and a block's exception becomes every timed variant's ERROR."""
    calls, ms = [], {"a": iter([9.0, 1.0, 5.0, 3.0]), "b": iter([9.0, 2.0, 2.0, 7.0])}
    block = lambda name: lambda: calls.append(name) or next(ms[name])
    assert common.interleaved({"a": block("a"), "b": block("b")}, 3) == {"a": 3.0, "b": 2.0}
    assert calls == ["a", "b"] * 4
    rows = common.check_then_time_together({"ok": (lambda: (0.0, 1.0), lambda: 4.0),
                                             "wrong": (lambda: (2.0, 1.0), lambda: pytest.fail("timed"))}, 2)
    assert (rows["ok"]["status"], rows["ok"]["ms"], rows["wrong"]["status"], rows["wrong"]["ms"]) == ("ok", 4.0, "WRONG", None)
    rows = common.check_then_time_together({"ok": (lambda: (0.0, 1.0), lambda: 1 / 0)}, 2)
    assert rows["ok"]["status"] == "ERROR" and "ZeroDivisionError" in rows["ok"]["error"]


# ---- the runs study's PyTorch twin -----------------------------------------------------------

def test_runs_twin_muon_is_tnets_muon(rng):
    """The twin's Muon (PyTorch, bf16 Newton-Schulz, filters of a shape in one batch) takes the
    same steps as tnet.optim.Muon with renormalize=True, within bf16's tolerance."""
    shapes = [(8, 4, 3, 3), (8, 4, 3, 3), (6, 8, 3, 3)]
    ws = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    params = [tnet.nn.Parameter(w) for w in ws]
    twins = [torch.tensor(w, requires_grad=True) for w in ws]
    opt = optim.Muon(params, lr=0.2, momentum=0.6, weight_decay=0.0, ns_steps=3, renormalize=True)
    twin = runs.TorchMuon(twins, 0.2, 0.6, 3)
    for step in range(2):
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for p, t, g in zip(params, twins, grads):
            p.grad, t.grad = tnet.tensor(g), torch.tensor(g)
        opt.step()
        twin.step(1.0)
    for p, t, w in zip(params, twins, ws):
        assert_close(torch.from_numpy(p.numpy()) - torch.from_numpy(w), t.detach() - torch.from_numpy(w), TOL["bf16"], "step")


def test_runs_twin_trains_the_recipe_on_the_sample():
    """A short run of the muon recipe's twin on the built-in sample (no torch.compile on the CPU):
    its steps change every trainable weight and its accuracy is a fraction of the test images."""
    from tnet import data
    from tnet.recipes import RECIPES
    recipe = dataclasses.replace(RECIPES["muon"], batch_size=100, epochs=1, whitening_images=100)
    train_x, train_y, test_x, test_y = data.load_cifar10("sample")
    train_x, test_x = recipe.inputs(train_x, test_x)
    twin = runs.Twin(recipe, compile_mode=None, dtype=torch.float32)  # PyTorch's CPU float16 convolutions: slow
    before = {n: p.detach().clone() for n, p in twin.net.named_parameters() if p.requires_grad}
    accuracy, train_s, eval_s = twin.run(0, train_x[:200], train_y[:200], test_x[:20], test_y[:20], 10)  # 2 steps
    assert 0 <= accuracy <= 1 and train_s > 0 and eval_s > 0
    for name, p in twin.net.named_parameters():
        if p.requires_grad:
            assert not torch.equal(p.detach(), before[name]), name


def test_host_cost_runs_every_case_without_launches():
    """tools/host_cost.py (issue 27's CPU measure): every case runs with its kernels stood in for."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "host_cost.py"), "--calls", "1", "--launches"],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len([line for line in result.stdout.splitlines() if line.endswith(" us")]) == 13  # every case of host_cost.cases()
    assert "    1 launches: pointwise_kernel 1" in result.stdout.splitlines()  # a + b: one launch, counted
