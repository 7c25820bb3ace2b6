"""torch's module paths and names that training scripts and the files they copy from torch import
(`from torch.nn.parallel.distributed import DistributedDataParallel`, `from torch.types import Number`):
each imports from tnet where torch has it, and the new ones behave as torch's."""
import importlib
import importlib.util
import warnings

import numpy as np
import pytest
import torch

import tnet
from tnet import nn
from helpers import TOL, assert_close

# module path under torch/tnet: the names scripts import from it (those torch itself lacks are skipped)
PATHS = {
    "nn.modules.module": ["Module", "register_module_forward_hook", "register_module_forward_pre_hook", "_addindent",
                          "_IncompatibleKeys"],
    "nn.modules.loss": ["_Loss", "_WeightedLoss", "CrossEntropyLoss", "MSELoss", "BCEWithLogitsLoss", "NLLLoss"],
    "nn.modules.batchnorm": ["_BatchNorm", "_NormBase", "BatchNorm2d", "SyncBatchNorm"],
    "nn.modules.instancenorm": ["_InstanceNorm", "InstanceNorm2d"],
    "nn.modules.conv": ["_ConvNd", "_ConvTransposeNd", "Conv2d", "ConvTranspose2d", "_single", "_pair", "_triple",
                        "_reverse_repeat_tuple"],
    "nn.modules.padding": ["ReflectionPad2d", "_ReflectionPadNd", "_pair", "_quadruple", "_ntuple"],
    "nn.modules.linear": ["Linear", "Identity", "NonDynamicallyQuantizableLinear"],
    "nn.modules.activation": ["MultiheadAttention", "ReLU", "GELU", "NonDynamicallyQuantizableLinear"],
    "nn.modules.utils": ["_pair", "_single", "_triple", "_quadruple", "_ntuple"],
    "nn.modules.pooling": ["MaxPool2d", "_MaxPoolNd", "_AvgPoolNd", "_AdaptiveAvgPoolNd", "FractionalMaxPool2d",
                           "FractionalMaxPool3d", "_single", "_pair", "_triple"],
    "nn.modules.dropout": ["_DropoutNd", "Dropout"],
    "nn.modules.container": ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"],
    "nn.modules.transformer": ["TransformerEncoderLayer", "_get_activation_fn", "_get_clones",
                               "_generate_square_subsequent_mask", "_detect_is_causal_mask", "_get_seq_len"],
    "nn.parameter": ["Parameter", "UninitializedParameter", "Buffer", "is_lazy"],
    "nn.init": ["_calculate_fan_in_and_fan_out", "_calculate_correct_fan", "_no_grad_trunc_normal_",
                "_no_grad_uniform_", "_no_grad_normal_", "_no_grad_fill_", "_no_grad_zero_"],
    "nn.functional": ["_in_projection_packed", "_in_projection", "_mha_shape_check", "_canonical_mask",
                      "_none_or_dtype", "_verify_batch_size", "multi_head_attention_forward", "has_torch_function",
                      "handle_torch_function", "has_torch_function_unary", "has_torch_function_variadic"],
    "nn.utils.clip_grad": ["clip_grad_norm_", "clip_grad_value_"],
    "nn.utils.rnn": ["pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "PackedSequence"],
    "nn.parallel": ["DataParallel", "DistributedDataParallel"],
    "nn.parallel.distributed": ["DistributedDataParallel"],
    "nn.parallel.data_parallel": ["DataParallel"],
    "utils.data.dataloader": ["default_collate", "DataLoader", "get_worker_info", "default_convert"],
    "utils.data._utils.collate": ["default_collate", "default_convert", "collate", "default_collate_fn_map",
                                  "collate_tensor_fn", "collate_numpy_array_fn", "collate_numpy_scalar_fn",
                                  "collate_float_fn", "collate_int_fn", "collate_str_fn"],
    "utils.checkpoint": ["checkpoint", "checkpoint_sequential", "detach_variable", "check_backward_validity",
                         "noop_context_fn"],
    "jit": ["script", "trace", "ignore", "unused", "Final", "export", "script_if_tracing", "trace_module", "freeze",
            "optimize_for_inference", "fork", "wait", "Future", "annotate", "is_scripting", "is_tracing"],
    "optim.optimizer": ["Optimizer", "required"],
    "optim.lr_scheduler": ["_LRScheduler", "LRScheduler", "StepLR", "OneCycleLR", "ReduceLROnPlateau"],
    "cuda.amp": ["autocast", "GradScaler", "custom_fwd", "custom_bwd"],
    "cuda.memory": ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "empty_cache"],
    "cuda.amp.grad_scaler": ["GradScaler"],
    "cuda.amp.autocast_mode": ["autocast", "custom_fwd", "custom_bwd"],
    "amp": ["autocast", "GradScaler"],
    "amp.grad_scaler": ["GradScaler", "OptState"],
    "amp.autocast_mode": ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"],
    "backends.cudnn": ["benchmark", "deterministic"],
    "autograd.function": ["Function", "once_differentiable", "FunctionCtx", "InplaceFunction"],
    "nn._reduction": ["get_enum", "legacy_get_string", "legacy_get_enum"],
    "serialization": ["add_safe_globals"],
    "utils.data.dataset": ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "ChainDataset",
                           "StackDataset", "random_split"],
    "types": ["Number", "_size", "_dtype", "_device", "Device", "Storage", "_TensorOrTensors", "_int", "_float",
              "_bool"],
    "overrides": ["has_torch_function", "handle_torch_function", "has_torch_function_unary",
                  "has_torch_function_variadic", "is_tensor_like"],
    "version": ["__version__", "cuda"],
    "hub": ["load_state_dict_from_url", "download_url_to_file", "get_dir", "set_dir", "load"],
    "distributed": ["init_process_group", "all_reduce", "all_gather", "broadcast", "reduce_scatter",
                    "reduce_scatter_tensor", "all_gather_into_tensor", "gather", "scatter", "all_to_all_single",
                    "all_to_all", "send", "recv", "isend", "irecv", "get_global_rank", "get_process_group_ranks"],
    "distributed.nn.functional": ["all_gather", "all_reduce", "reduce_scatter"],
    "distributed.elastic.multiprocessing.errors": ["record", "ChildFailedError"],
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_torchs_module_paths_import(path):
    ours, theirs = (importlib.import_module(f"{lib}.{path}") for lib in ("tnet", "torch"))
    missing = [n for n in PATHS[path] if hasattr(theirs, n) and not hasattr(ours, n)]
    assert not missing, f"tnet.{path} lacks {missing}"
    assert importlib.import_module(f"tnet.{path}") is eval(f"tnet.{path}")  # the attribute path reaches it too


def test_parallel_submodules_are_the_packages_classes():
    from tnet.nn.parallel.distributed import DistributedDataParallel
    from tnet.nn.parallel.data_parallel import DataParallel
    assert DistributedDataParallel is tnet.distributed.DistributedDataParallel and DataParallel is nn.DataParallel
    with pytest.raises(AttributeError):
        tnet.nn.parallel.distributed.nothing


def test_amp_submodules_and_opt_state_as_torchs():
    from tnet.amp.grad_scaler import GradScaler, OptState
    from tnet.cuda.amp.autocast_mode import autocast
    from tnet.cuda.amp.grad_scaler import GradScaler as CudaGradScaler
    assert GradScaler is tnet.amp.GradScaler and CudaGradScaler is tnet.cuda.amp.GradScaler
    assert autocast is tnet.cuda.amp.autocast
    assert [s.name for s in OptState] == [s.name for s in torch.amp.grad_scaler.OptState]
    layer = nn.Linear(3, 2)
    opt = tnet.optim.SGD(layer.parameters(), lr=0.1)
    scaler = GradScaler()
    assert scaler._stage(opt) is OptState.READY
    scaler.scale(layer(tnet.ones(1, 3)).sum()).backward()
    scaler.unscale_(opt)
    assert scaler._stage(opt) is OptState.UNSCALED
    scaler.step(opt)
    assert scaler._stage(opt) is OptState.STEPPED
    scaler.update()
    assert scaler._stage(opt) is OptState.READY


def test_overrides_and_types_as_torchs():
    from tnet.overrides import handle_torch_function, has_torch_function, has_torch_function_variadic, is_tensor_like
    from tnet.types import Number, _TensorOrTensors
    x, xr = tnet.ones(2), torch.ones(2)
    assert has_torch_function((x, 3)) == torch.overrides.has_torch_function((xr, 3)) is False
    assert has_torch_function_variadic(x, x) is False
    assert handle_torch_function(tnet.add, (x,), x, 2).tolist() == torch.add(xr, 2).tolist()
    assert [is_tensor_like(v) for v in (x, nn.Parameter(x), 3)] == [True, True, False]
    assert Number == torch.types.Number and _TensorOrTensors.__args__[0] is tnet.Tensor
    assert tnet.version.__version__ == tnet.__version__


def test_private_init_helpers_write_as_the_public_ones():
    from tnet.nn.init import _no_grad_fill_, _no_grad_normal_, _no_grad_uniform_, _no_grad_zero_
    w = nn.Parameter(tnet.ones(50, 40))
    assert _no_grad_fill_(w, 3.0) is w and w.tolist() == torch.full((50, 40), 3.0).tolist() and w.requires_grad
    _no_grad_zero_(w)
    assert not w.any()
    _no_grad_uniform_(w, -2.0, -1.0)
    assert -2.0 <= float(w.min()) <= float(w.max()) <= -1.0
    _no_grad_normal_(w, 5.0, 0.1)
    assert abs(float(w.mean()) - 5.0) < 0.05


def test_transformer_and_parameter_helpers_as_torchs():
    from tnet.nn.modules.linear import NonDynamicallyQuantizableLinear
    from tnet.nn.modules.transformer import _get_activation_fn
    from tnet.nn.parameter import is_lazy
    assert type(nn.MultiheadAttention(4, 2).out_proj) is NonDynamicallyQuantizableLinear
    assert issubclass(NonDynamicallyQuantizableLinear, nn.Linear)
    assert _get_activation_fn("gelu") is tnet.functional.gelu and _get_activation_fn("relu") is tnet.functional.relu
    for bad in ("tanh", tnet.functional.relu):
        with pytest.raises(RuntimeError):
            torch.nn.modules.transformer._get_activation_fn(bad if isinstance(bad, str) else torch.relu)
        with pytest.raises(RuntimeError):
            _get_activation_fn(bad)
    lazy = nn.LazyLinear(3)
    assert is_lazy(lazy.weight) and not is_lazy(nn.Linear(2, 3).weight)
    lazy(tnet.ones(1, 2))
    assert not is_lazy(lazy.weight)


def test_attention_private_helpers_as_torchs(rng, ieee):
    F, TF = tnet.functional, torch.nn.functional
    E = 6
    w, b = rng.standard_normal((3 * E, E)), rng.standard_normal(3 * E)
    q, k, v = (rng.standard_normal((5, 2, E)) for _ in range(3))
    wt, bt = tnet.tensor(w, dtype=tnet.float32), tnet.tensor(b, dtype=tnet.float32)
    wr, br = torch.tensor(w), torch.tensor(b)
    qt, kt, vt = (tnet.tensor(a, dtype=tnet.float32) for a in (q, k, v))
    qr, kr, vr = (torch.tensor(a) for a in (q, k, v))
    for ours, theirs in (((qt, qt, qt), (qr, qr, qr)), ((qt, kt, kt), (qr, kr, kr)), ((qt, kt, vt), (qr, kr, vr))):
        for bias in (True, False):
            outs = F._in_projection_packed(*ours, wt, bt if bias else None)
            refs = TF._in_projection_packed(*theirs, wr, br if bias else None)
            for out, ref in zip(outs, refs, strict=True):
                assert_close(out, ref, TOL["ieee"])
    outs = F._in_projection(qt, kt, vt, *F.chunk(wt, 3), *F.chunk(bt, 3))
    for out, ref in zip(outs, TF._in_projection(qr, kr, vr, *wr.chunk(3), *br.chunk(3)), strict=True):
        assert_close(out, ref, TOL["ieee"])
    with pytest.raises(AssertionError):
        F._in_projection(qt, kt, vt, wt, wt, wt)
    mask = np.array([[False, True], [True, False]])
    ours = F._canonical_mask(tnet.tensor(mask), "attn_mask", None, "", tnet.float32)
    theirs = TF._canonical_mask(torch.tensor(mask), "attn_mask", None, "", torch.float32)
    assert ours.tolist() == theirs.tolist() and ours.dtype == theirs.dtype
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F._canonical_mask(tnet.tensor(mask), "key_padding_mask", tnet.float32, "attn_mask", tnet.float32)
    assert "mismatched key_padding_mask and attn_mask" in str(caught[0].message)
    with pytest.raises(AssertionError):
        F._canonical_mask(tnet.ones(2, dtype=tnet.int64), "attn_mask", None, "", tnet.float32)
    assert F._none_or_dtype(None) is None and F._none_or_dtype(qt) == TF._none_or_dtype(qr.float())
    with pytest.raises(RuntimeError):
        F._none_or_dtype(3)
    assert F._mha_shape_check(qt, kt, vt, None, None, 2) is True
    assert F._mha_shape_check(qt[:, 0], kt[:, 0], vt[:, 0], None, None, 2) is False
    with pytest.raises(AssertionError):
        F._mha_shape_check(qt, kt[:, 0], vt, None, None, 2)
    with pytest.raises(ValueError):
        F._verify_batch_size(torch.Size([1, 3]))


def test_copied_torch_optimizer_files_find_their_imports():
    """A fork of one of torch's optimizer files (adam.py, sgd.py, rmsprop.py, ...) imports torch.optim.optimizer's
    helpers and annotations: every name that torch's own files import from there is in tnet's."""
    import ast
    import pathlib
    ours = importlib.import_module("tnet.optim.optimizer")
    missing = []
    for path in sorted((pathlib.Path(torch.__file__).parent / "optim").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == "optimizer":
                missing += [f"{path.name}: {a.name}" for a in node.names if not hasattr(ours, a.name)]
    assert not missing, missing
    theirs = importlib.import_module("torch.optim.optimizer")
    assert ours._get_capturable_supported_devices() == theirs._get_capturable_supported_devices()


def test_module_printing_and_transformer_helpers_as_torchs():
    from tnet.nn.modules.module import _addindent
    from tnet.nn.modules.transformer import _detect_is_causal_mask, _generate_square_subsequent_mask, _get_seq_len
    theirs = importlib.import_module("torch.nn.modules.transformer")
    text = "Linear(\n(a): x\n\n  (b): y)"
    assert _addindent(text, 2) == torch.nn.modules.module._addindent(text, 2) and _addindent("one", 4) == "one"
    assert _generate_square_subsequent_mask(4).tolist() == theirs._generate_square_subsequent_mask(4).tolist()
    for n, size, hint in ((4, None, None), (3, 4, None), (4, None, False), (4, 4, True)):
        ours = _detect_is_causal_mask(_generate_square_subsequent_mask(n), hint, size)
        assert ours == theirs._detect_is_causal_mask(theirs._generate_square_subsequent_mask(n), hint, size)
    assert _detect_is_causal_mask(tnet.zeros(4, 4)) is theirs._detect_is_causal_mask(torch.zeros(4, 4)) is False
    for shape, batch_first in (((2, 3, 4), True), ((2, 3, 4), False), ((5, 4), True)):
        assert _get_seq_len(tnet.ones(*shape), batch_first) == theirs._get_seq_len(torch.ones(*shape), batch_first)


def test_legacy_reduction_strings_as_torchs():
    from tnet.nn import _reduction as ours
    from torch.nn import _reduction as theirs
    for size_average in (None, True, False):
        for reduce in (None, True, False):
            with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
                got = ours.legacy_get_string(size_average, reduce)
            assert got == theirs.legacy_get_string(size_average, reduce, emit_warning=False)
            assert ours.legacy_get_enum(size_average, reduce, False) == theirs.legacy_get_enum(size_average, reduce,
                                                                                               False)
    assert [ours.get_enum(r) for r in ("none", "mean", "sum")] == [theirs.get_enum(r) for r in ("none", "mean", "sum")]
    with pytest.raises(ValueError):
        ours.get_enum("max")


def test_data_sets_samplers_and_loader_are_generic_as_torchs():
    from tnet.utils.data import DataLoader, Dataset, IterableDataset, Sampler, Subset

    class Pairs(Dataset[tuple[tnet.Tensor, int]]):  # typed code subscripts torch's generic classes
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return tnet.full((2,), float(i)), i

    class Evens(Sampler[int]):
        def __iter__(self):
            return iter([0, 2])

    assert [b[1].tolist() for b in DataLoader[tuple](Pairs(), batch_size=2, sampler=Evens())] == [[0, 2]]
    assert IterableDataset[int] is not None and Subset[int] is not None


def test_inplace_function_keeps_its_flag_and_applies_as_torchs(rng):
    values = rng.standard_normal(6).astype(np.float32) * 3
    grads = []
    for lib in (tnet, torch):
        class Round(lib.autograd.function.InplaceFunction):  # a quantizer's straight-through rounding
            @staticmethod
            def forward(ctx, x):
                return x.round()

            @staticmethod
            def backward(ctx, g):
                return g

        x = lib.tensor(values, requires_grad=True)
        (Round.apply(x) * 2).sum().backward()
        grads.append((Round(inplace=True).inplace, x.grad.tolist()))
    assert grads[0] == grads[1]


def test_collate_with_a_type_map_as_torchs():
    """A custom collate_fn in torch's documented shape: collate() with default_collate_fn_map extended by a
    function for one type (here boxes of varying length kept as a list), and default_collate following a change
    to the map, as torch's."""
    from tnet.utils.data._utils.collate import collate, default_collate, default_collate_fn_map

    class Boxes(list):
        pass

    samples = [{"image": np.full((2, 3), i, np.float32), "label": i, "boxes": Boxes([[i, i]] * (i + 1)),
                "name": f"s{i}"} for i in range(3)]
    keep = lambda batch, *, collate_fn_map=None: [list(b) for b in batch]  # noqa: E731
    outs = []
    for lib, module in ((tnet, "tnet"), (torch, "torch")):
        mod = importlib.import_module(f"{module}.utils.data._utils.collate")
        out = mod.collate(samples, collate_fn_map={**mod.default_collate_fn_map, Boxes: keep})
        outs.append((out["image"].tolist(), out["label"].tolist(), out["boxes"], out["name"]))
    assert outs[0] == outs[1]
    with pytest.raises(TypeError):
        collate([object()], collate_fn_map=default_collate_fn_map)
    default_collate_fn_map[Boxes] = keep
    try:
        assert default_collate(samples)["boxes"] == outs[1][2]
    finally:
        del default_collate_fn_map[Boxes]
    with pytest.raises(RuntimeError):  # without its entry, the boxes' rows differ in length, as in torch
        default_collate(samples)


def test_hub_download_url_to_file_as_torchs(tmp_path):
    import hashlib
    source = tmp_path / "weights.bin"
    source.write_bytes(bytes(range(256)) * 40)
    url, digest = source.as_uri(), hashlib.sha256(source.read_bytes()).hexdigest()
    for lib in (tnet, torch):
        lib.hub.download_url_to_file(url, tmp_path / f"{lib.__name__}.bin", hash_prefix=digest[:10], progress=False)
        with pytest.raises(RuntimeError):
            lib.hub.download_url_to_file(url, str(tmp_path / f"{lib.__name__}_bad.bin"), hash_prefix="0" * 10,
                                         progress=False)
    assert (tmp_path / "tnet.bin").read_bytes() == (tmp_path / "torch.bin").read_bytes() == source.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tnet.bin", "torch.bin", "weights.bin"]  # no partial file


def test_checkpoint_helpers_and_jit_fork_as_torchs():
    from tnet.utils.checkpoint import check_backward_validity, detach_variable, noop_context_fn
    x, y = tnet.ones(2, requires_grad=True) * 2, tnet.ones(2)
    out = detach_variable((x, y, 3))
    assert [v.requires_grad for v in out[:2]] == [True, False] and out[0].is_leaf and out[2] == 3
    assert out[0].tolist() == x.tolist()
    with pytest.raises(RuntimeError):
        detach_variable([x])
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        check_backward_validity((y, 3))
    forward, recompute = noop_context_fn()
    with forward, recompute:
        pass
    future = tnet.jit.fork(lambda a, b: a + b, tnet.ones(2), b=tnet.ones(2))
    theirs = torch.jit.fork(torch.add, torch.ones(2), torch.ones(2))
    assert tnet.jit.wait(future).tolist() == torch.jit.wait(theirs).tolist()
    model = nn.Linear(2, 2)
    assert tnet.jit.script_if_tracing(print) is print and tnet.jit.freeze(model) is model
    assert tnet.jit.trace_module(model, {"forward": tnet.ones(1, 2)}) is model


def test_torchrun_error_reporting_decorates_main_as_torchs():
    from tnet.distributed.elastic.multiprocessing.errors import record

    @record
    def main(x):
        return x + 1
    assert main(2) == 3 and record is importlib.import_module("torch.distributed.elastic.multiprocessing.errors").record


@pytest.mark.parametrize("package, submodules", [
    ("cuda", ["memory", "graphs", "streams", "random", "nvtx"]), ("xpu", ["memory", "graphs", "random", "streams"]),
    ("accelerator", ["memory", "graphs"]), ("multiprocessing", ["pool", "queue", "reductions", "spawn"])])
def test_device_submodules_are_torchs_own_modules(package, submodules):
    """`from torch.cuda.memory import ...` (torch.xpu's, torch.accelerator's, torch.multiprocessing's submodules)
    gets torch's module itself (the tnet module's names are torch's), not a second copy of its file; a name torch's
    module does not have as a submodule is no module of tnet's either."""
    for name in submodules:
        if importlib.util.find_spec(f"torch.{package}.{name}"):
            assert importlib.import_module(f"tnet.{package}.{name}") is importlib.import_module(f"torch.{package}.{name}")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"tnet.{package}.no_such_module")
    with pytest.raises(AttributeError):
        getattr(importlib.import_module(f"tnet.{package}"), "__path__")


def test_layout_constants_as_torchs():
    """`p.grad.layout == torch.sparse_coo` in copied optimizer code: torch's layout objects."""
    assert (tnet.sparse_coo, tnet.sparse_csr, tnet.strided) == (torch.sparse_coo, torch.sparse_csr, torch.strided)
    assert tnet.ones(2).layout == torch.ones(2).layout == tnet.strided != tnet.sparse_coo
