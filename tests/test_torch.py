"""CPU tests of tawac.torch and tawac.schedule.tuning: no GPU, no compilation, no CUDA.

`compile_cached` is replaced by one that returns a stored sidecar and `load_kernel` by a
launcher that records its calls; "cpu" is added to the device types so that the real
implementation runs on CPU tensors. Fake tensors stand in for CUDA tensors where the
checks must see a CUDA device (fake-tensor mode, torch.compile).
"""

from __future__ import annotations

import copy
import json
import types
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from test_runtime import SIDECAR as RUNTIME_SIDECAR  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import tawac.torch as tt  # noqa: E402
from tawac.runtime import LaunchError  # noqa: E402
from tawac.schedule import tuning  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SOURCE = "// C = A * B^T\ntile.kernel @gemm(...) {}\n"

# The launcher tests' sidecar, with each argument's access and the kernel parameters.
ACCESS = {"a": "read", "b": "read", "c": "write", "alpha": "none"}
SIDECAR = {
    **RUNTIME_SIDECAR,
    "args": [{**a, "access": ACCESS[a["name"]]} for a in RUNTIME_SIDECAR["args"]],
    "kernel_params": {"BLOCK_M": 128, "BLOCK_N": 256},
}

# Two pure outputs (one f32 of another shape), an int scalar.
SIDECAR_TWO_OUT = {
    **SIDECAR,
    "kernel": "attn",
    "grid": [{"cdiv": {"arg": "q", "dim": 1}, "by": 128}, {"const": 1}, {"const": 1}],
    "args": [
        {"name": "q", "kind": "tensor", "dtype": "bf16", "rank": 3, "dims": ["B", "S", 64]},
        {"name": "o", "kind": "tensor", "dtype": "bf16", "rank": 3, "dims": ["B", "S", 64]},
        {"name": "lse", "kind": "tensor", "dtype": "f32", "rank": 2, "dims": ["B", "S"]},
        {"name": "n", "kind": "scalar", "dtype": "s32"},
    ],
    "params": [{"kind": "pointer", "arg": "q"}],
}
for _spec, _access in zip(SIDECAR_TWO_OUT["args"], ["read", "write", "write", "none"], strict=True):
    _spec["access"] = _access


def _with_access(sidecar, **access):
    side = copy.deepcopy(sidecar)
    for a in side["args"]:
        if a["name"] in access:
            if access[a["name"]] is None:
                del a["access"]
            else:
                a["access"] = access[a["name"]]
    return side


class FakeLauncher:
    """Stands in for tawac.runtime.Kernel: records the argument lists it is called with."""

    made: list[FakeLauncher] = []

    def __init__(self, cubin, sidecar):
        self.cubin, self.sidecar, self.launches = cubin, sidecar, []
        FakeLauncher.made.append(self)

    def __call__(self, *args, stream=None):
        self.launches.append(args)


class Backend:
    """The replaced compile_cached: the sidecar to hand out and the calls it had."""

    def __init__(self):
        self.sidecar = copy.deepcopy(SIDECAR)
        self.calls: list[tuple] = []

    def compile_cached(self, source, *, params=None, text=None, **options):
        assert text == SOURCE or text.startswith(SOURCE)
        self.calls.append((str(source), params, options))
        return types.SimpleNamespace(
            cubin=b"cubin", sidecar=copy.deepcopy(self.sidecar), ptx="", key="k", hit=True
        )


@pytest.fixture
def backend(monkeypatch):
    be = Backend()
    FakeLauncher.made = []
    monkeypatch.setattr(tt, "compile_cached", be.compile_cached)
    monkeypatch.setattr(tt, "load_kernel", FakeLauncher)
    monkeypatch.setattr(tt, "DEVICE_TYPES", frozenset({"cuda", "cpu"}))
    return be


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "gemm.mlir"
    path.write_text(SOURCE)
    return path


def _bf16(*shape, device="cpu"):
    return torch.zeros(shape, dtype=torch.bfloat16, device=device)


def _fake_cuda(*shapes, dtype=torch.bfloat16):
    """Fake CUDA tensors (no CUDA needed) and their mode."""
    mode = FakeTensorMode()
    with mode:
        return mode, [torch.empty(s, dtype=dtype, device="cuda") for s in shapes]


# ---------------------------------------------------------------- calls


def test_functional_call_allocates_and_returns_the_output(backend, source):
    gemm = tt.kernel(source, tuning=None)
    a, b = _bf16(300, 64), _bf16(100, 64)
    c = gemm(a, b, 0.5)
    assert isinstance(c, torch.Tensor)
    assert c.shape == (300, 100) and c.dtype == torch.bfloat16 and c.device == a.device
    (launcher,) = FakeLauncher.made
    (launch,) = launcher.launches
    assert launch[0] is a and launch[1] is b and launch[2] is c and launch[3] == 0.5


def test_inplace_call_launches_every_argument_and_returns_none(backend, source):
    gemm = tt.kernel(source, tuning=None)
    a, b, c = _bf16(300, 64), _bf16(100, 64), _bf16(300, 100)
    assert gemm(a, b, c, 2.0) is None
    (launch,) = FakeLauncher.made[0].launches
    assert launch == (a, b, c, 2.0)


def test_two_outputs_come_back_as_a_tuple_in_sidecar_order(backend, source):
    backend.sidecar = copy.deepcopy(SIDECAR_TWO_OUT)
    attn = tt.kernel(source, tuning=None)
    q = _bf16(2, 200, 64)
    o, lse = attn(q, 7)
    assert o.shape == (2, 200, 64) and o.dtype == torch.bfloat16
    assert lse.shape == (2, 200) and lse.dtype == torch.float32
    (launch,) = FakeLauncher.made[0].launches
    assert launch[0] is q and launch[1] is o and launch[2] is lse and launch[3] == 7
    assert "(q: bf16[B, S, 64], n: s32) -> (o: bf16[B, S, 64], lse: f32[B, S])" in repr(attn)


def test_wrong_arity_lists_both_signatures(backend, source):
    gemm = tt.kernel(source, tuning=None)
    with pytest.raises(TypeError) as info:
        gemm(_bf16(4, 4))
    msg = str(info.value)
    assert "(a: bf16[M, K], b: bf16[N, K], alpha: f32) -> c: bf16[M, N]" in msg
    assert "gemm(a, b, c, alpha) writing c in place" in msg
    assert "got 1" in msg


def test_named_sizes_must_agree(backend, source):
    gemm = tt.kernel(source, tuning=None)
    with pytest.raises(
        LaunchError, match="size K differs: 'a' dimension 1 is 64, 'b' dimension 1 is 32"
    ):
        gemm(_bf16(128, 64), _bf16(256, 32), 1.0)
    with pytest.raises(LaunchError, match="size M differs: 'a' dimension 0 is 128, 'c'"):
        gemm(_bf16(128, 64), _bf16(256, 64), _bf16(64, 256), 1.0)


def test_static_size_dtype_rank_and_scalar_checks(backend, source):
    backend.sidecar = copy.deepcopy(SIDECAR_TWO_OUT)
    attn = tt.kernel(source, tuning=None)
    with pytest.raises(LaunchError, match="'q': dimension 2 must be 64, got 32"):
        attn(_bf16(2, 8, 32), 1)
    with pytest.raises(LaunchError, match=r"'q' must have dtype torch.bfloat16 \(bf16\)"):
        attn(torch.zeros(2, 8, 64), 1)
    with pytest.raises(LaunchError, match="'q' must have rank 3"):
        attn(_bf16(8, 64), 1)
    with pytest.raises(LaunchError, match="'n' must be an integer"):
        attn(_bf16(2, 8, 64), 1.5)
    with pytest.raises(LaunchError, match="'q' must be a torch tensor"):
        attn._run(([1, 2], 1), True)
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'q'"):
        attn([1, 2], 1)  # not a tensor: through the operator, whose parser reports it


def test_tensors_must_be_on_one_cuda_device(monkeypatch, backend, source):
    gemm = tt.kernel(source, tuning=None)
    monkeypatch.setattr(tt, "DEVICE_TYPES", frozenset({"cuda"}))
    with pytest.raises(LaunchError, match="'a' must be on a CUDA device, got cpu"):
        gemm(_bf16(128, 64), _bf16(256, 64), 1.0)
    mode = FakeTensorMode()
    with mode:
        fa, fb = _bf16(128, 64, device="cpu"), _bf16(256, 64, device="cuda")
        with pytest.raises(LaunchError, match="'b' is on cuda:0, argument 'a' on cpu"):
            gemm.op(fa, fb, 1.0)


def test_configuration_is_memoised_by_shapes(backend, source):
    gemm = tt.kernel(source, tuning=None)
    seen = []
    config = gemm.config
    gemm.config = lambda sizes: seen.append(dict(sizes)) or config(sizes)
    a, b = _bf16(300, 64), _bf16(100, 64)
    gemm(a, b, 1.0)
    gemm(a, b, 2.0)
    gemm(_bf16(300, 64), _bf16(100, 64), 1.0)
    assert seen == [{"M": 300, "K": 64, "N": 100}]
    gemm(a, _bf16(50, 64), 1.0)
    gemm(a, b, _bf16(300, 100), 1.0)
    assert len(seen) == 3
    assert len(backend.calls) == 1  # one configuration, compiled once


def test_no_access_means_in_place_only(backend, source):
    backend.sidecar = _with_access(SIDECAR, a=None, b=None, c=None, alpha=None)
    gemm = tt.kernel(source, tuning=None)
    assert gemm.op is None
    assert "Tensor(w0!) a, Tensor(w1!) b, Tensor(w2!) c" in str(gemm.inplace_op._schema)
    with pytest.raises(TypeError, match=r"takes 4 arguments: gemm\(a, b, c, alpha\)"):
        gemm(_bf16(4, 4), _bf16(4, 4), 1.0)


def test_output_size_from_no_input_means_no_functional_form(backend, source):
    backend.sidecar = copy.deepcopy(SIDECAR)
    backend.sidecar["args"][2]["dims"] = ["M", "P"]
    gemm = tt.kernel(source, tuning=None)
    assert gemm.op is None
    with pytest.raises(TypeError, match="no functional form: the size P of output 'c'"):
        gemm(_bf16(4, 4), _bf16(4, 4), 1.0)
    assert gemm(_bf16(4, 4), _bf16(4, 4), _bf16(4, 9), 1.0) is None


def test_readwrite_arguments_are_mutated_by_both_operators(backend, source):
    backend.sidecar = _with_access(SIDECAR, b="readwrite")
    gemm = tt.kernel(source, tuning=None)
    assert str(gemm.op._schema).endswith("(Tensor a, Tensor(w0!) b, float alpha) -> Tensor")
    assert str(gemm.inplace_op._schema).endswith(
        "(Tensor a, Tensor(w0!) b, Tensor(w1!) c, float alpha) -> ()"
    )


def test_schemas_of_both_operators(backend, source):
    gemm = tt.kernel(source, tuning=None)
    assert (
        str(gemm.op._schema) == f"tawac::{gemm.op_name}(Tensor a, Tensor b, float alpha) -> Tensor"
    )
    assert str(gemm.inplace_op._schema) == (
        f"tawac::{gemm.op_name}_inplace(Tensor a, Tensor b, Tensor(w0!) c, float alpha) -> ()"
    )
    assert gemm.op is getattr(torch.ops.tawac, gemm.op_name).default
    assert gemm.op_name.startswith("gemm_")


def test_operator_names_differ_with_params_options_and_source(backend, source, tmp_path):
    names = {
        tt.kernel(source, tuning=None).op_name,
        tt.kernel(source, tuning=None, params={"BLOCK_N": 128}).op_name,
        tt.kernel(source, tuning=None, params={"BLOCK_N": 64}).op_name,
        tt.kernel(source, tuning=None, stages=3).op_name,
    }
    other = tmp_path / "other.mlir"
    other.write_text(SOURCE + "// changed\n")
    names.add(tt.kernel(other, tuning=None).op_name)
    assert len(names) == 5
    assert tt.kernel(source, tuning=None, stages=3).op_name in names  # the same kernel again


def test_same_kernel_twice_reuses_the_operator(backend, source):
    first = tt.kernel(source, tuning=None)
    second = tt.kernel(source, tuning=None)
    assert first.op is second.op
    a, b = _bf16(128, 64), _bf16(256, 64)
    assert first.op(a, b, 1.0).shape == (128, 256)


def test_bad_options_and_missing_source(backend, source, tmp_path):
    with pytest.raises(TypeError, match="unknown option.*stagez"):
        tt.kernel(source, stagez=3)
    with pytest.raises(FileNotFoundError, match="nope.mlir does not exist"):
        tt.kernel(tmp_path / "nope.mlir")


def test_options_and_params_reach_compile_cached(backend, source):
    tt.kernel(source, tuning=None, params={"BLOCK_N": 128}, stages=3, persistent=False)
    assert backend.calls == [(str(source), {"BLOCK_N": 128}, {"stages": 3, "persistent": False})]


# ---------------------------------------------------------------- fake tensors, compile


def test_fake_mode_functional_op_shapes_dtypes_device(backend, source):
    gemm = tt.kernel(source, tuning=None)
    mode, (a, b) = _fake_cuda((300, 64), (100, 64))
    with mode:
        c = gemm.op(a, b, 1.0)
        c2 = gemm(a, b, 1.0)
        assert gemm.inplace_op(a, b, c, 1.0) is None
    for out in (c, c2):
        assert out.shape == (300, 100) and out.dtype == torch.bfloat16
        assert out.device.type == "cuda"
    assert FakeLauncher.made[0].launches == []  # nothing launched


def test_meta_tensors_reach_the_fake_implementation(backend, source, monkeypatch):
    monkeypatch.setattr(tt, "DEVICE_TYPES", frozenset({"cuda"}))
    gemm = tt.kernel(source, tuning=None)
    c = gemm(_bf16(300, 64, device="meta"), _bf16(100, 64, device="meta"), 1.0)
    assert c.device.type == "meta" and c.shape == (300, 100)
    with pytest.raises(LaunchError, match="size K differs"):
        gemm(_bf16(300, 64, device="meta"), _bf16(100, 32, device="meta"), 1.0)


def test_fake_mode_errors_match_the_real_path(backend, source):
    gemm = tt.kernel(source, tuning=None)
    mode, (a, b, bad_k, c_bad) = _fake_cuda((128, 64), (256, 64), (256, 32), (64, 256))
    with mode:
        f32 = torch.empty(256, 64, device="cuda")
        with pytest.raises(LaunchError, match="size K differs: 'a' dimension 1 is 64, 'b'"):
            gemm.op(a, bad_k, 1.0)
        with pytest.raises(LaunchError, match=r"'b' must have dtype torch.bfloat16"):
            gemm.op(a, f32, 1.0)
        with pytest.raises(LaunchError, match="size M differs"):
            gemm.inplace_op(a, b, c_bad, 1.0)
        with pytest.raises(TypeError, match="got 5"):
            gemm(a, b, c_bad, 1.0, 2.0)


def _capture(fn, *args, **compile_options):
    """Compiles `fn` with fullgraph=True and a backend that records the graph and runs
    nothing; returns the graph."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return lambda *a: tuple(None for _ in gm.graph.find_nodes(op="output")[0].args[0])

    torch._dynamo.reset()
    torch.compile(fn, backend=backend, fullgraph=True, **compile_options)(*args)
    (gm,) = graphs
    return gm


def _tawac_calls(gm):
    return [
        n.target
        for n in gm.graph.nodes
        if n.op == "call_function" and str(n.target).startswith("tawac.")
    ]


def test_torch_compile_sees_one_opaque_functional_node(backend, source):
    gemm = tt.kernel(source, tuning=None)
    _, (a, b) = _fake_cuda((300, 64), (100, 64))
    gm = _capture(lambda a, b: gemm(a, b, 0.5) * 2, a, b)
    assert _tawac_calls(gm) == [gemm.op]
    (node,) = [n for n in gm.graph.nodes if n.target is gemm.op]
    assert node.meta["example_value"].shape == (300, 100)
    assert backend.calls and not FakeLauncher.made[0].launches


def test_torch_compile_dynamic_shapes(backend, source):
    gemm = tt.kernel(source, tuning=None)
    _, (a, b) = _fake_cuda((300, 64), (100, 64))
    gm = _capture(lambda a, b: gemm(a, b, 0.5), a, b, dynamic=True)
    (node,) = [n for n in gm.graph.nodes if n.target is gemm.op]
    shape = node.meta["example_value"].shape
    assert all(isinstance(d, torch.SymInt) for d in shape)
    assert [d.node.hint for d in shape] == [300, 100]


def test_torch_compile_sees_one_inplace_node(backend, source):
    gemm = tt.kernel(source, tuning=None)
    _, (a, b, c) = _fake_cuda((300, 64), (100, 64), (300, 100))

    def fn(a, b, c):
        gemm(a, b, c, 1.0)
        return c + 1

    gm = _capture(fn, a, b, c)
    assert _tawac_calls(gm) == [gemm.inplace_op]


def test_torch_compile_reports_bad_shapes(backend, source):
    gemm = tt.kernel(source, tuning=None)
    _, (a, b) = _fake_cuda((300, 64), (100, 32))
    with pytest.raises(Exception, match="size K differs"):
        _capture(lambda a, b: gemm(a, b, 0.5), a, b)
    with pytest.raises(Exception, match="gemm takes 3 arguments.*got 2"):
        _capture(lambda a, b: gemm(a, b), a, b)


def test_eager_calls_skip_the_dispatcher_only_when_plain(backend, source):
    a = _bf16(4, 4)
    assert tt._eager((a, a, 1.0))
    assert not tt._eager((a, a.clone().float().requires_grad_(), 1.0))
    with torch.no_grad():
        assert tt._eager((a, torch.zeros(2, requires_grad=True), 1.0))
    mode, (fa,) = _fake_cuda((4, 4))
    assert not tt._eager((fa, a, 1.0))
    with mode:
        assert not tt._eager((a, a, 1.0))


def test_inputs_requiring_grad_go_through_the_operator(backend, source):
    backend.sidecar = _with_access(SIDECAR)
    for a in backend.sidecar["args"][:3]:
        a["dtype"] = "f32"
    gemm = tt.kernel(source, tuning=None)
    a = torch.zeros(4, 8, requires_grad=True)
    c = gemm(a, torch.zeros(2, 8), 1.0)
    assert c.shape == (4, 2) and c.grad_fn is not None
    with pytest.raises(RuntimeError, match="no autograd formula"):
        c.sum().backward()


# ---------------------------------------------------------------- tuning tables


def test_bucket_size_and_bucket_of():
    assert [tuning.bucket_size(n) for n in (0, 1, 2, 3, 4, 5, 1000, 1024, 1025)] == [
        1,
        1,
        2,
        4,
        4,
        8,
        1024,
        1024,
        2048,
    ]
    assert tuning.bucket_of({"M": 1000, "N": 129, "K": 64}) == {"M": 1024, "N": 256, "K": 64}


def _table(entries, text=SOURCE, args=None):
    return {
        "format": 1,
        "kernel": "gemm",
        "source_sha256": tuning.source_sha256(text),
        "args": copy.deepcopy(args if args is not None else SIDECAR["args"]),
        "entries": entries,
    }


def _entry(m, n, k, block_n, stages=4):
    return {
        "bucket": {"M": m, "N": n, "K": k},
        "params": {"BLOCK_N": block_n},
        "options": {"stages": stages},
        "time_ms": 0.01,
        "tflops": 500.0,
        "device": "NVIDIA H100",
    }


TABLE_ENTRIES = [
    _entry(1024, 1024, 1024, 128),
    _entry(4096, 4096, 4096, 256, 3),
    _entry(1024, 1024, 4096, 64),
]


def test_pick_exact_nearest_and_none():
    table = _table(TABLE_ENTRIES)
    # an entry that does not name `widen` was measured before it existed: widen 1
    assert tuning.pick(table, {"M": 1000, "N": 1024, "K": 700}) == (
        {"BLOCK_N": 128},
        {"widen": 1, "stages": 4},
    )
    assert tuning.pick(table, {"M": 4000, "N": 3000, "K": 4096}) == (
        {"BLOCK_N": 256},
        {"widen": 1, "stages": 3},
    )
    # 1024 x 1024 x 8192: distance 3 to 1024^3, 5 to 4096^3, 1 to (1024, 1024, 4096)
    assert tuning.pick(table, {"M": 1024, "N": 1000, "K": 8000})[0] == {"BLOCK_N": 64}
    # 2048^3: distance 3 to every entry: the first
    assert tuning.pick(table, {"M": 2048, "N": 2048, "K": 2048})[0] == {"BLOCK_N": 128}
    # 2048 x 2048 x 1024: distance 2 to 1024^3 and 4 to 4096^3, 3 to the third
    assert tuning.pick(table, {"M": 2048, "N": 2048, "K": 1024})[0] == {"BLOCK_N": 128}
    assert tuning.pick(table, {"M": 1024, "N": 1024}) is None  # no K: no entry applies
    assert tuning.pick(_table([]), {"M": 1}) is None


def test_pick_ties_go_to_the_first_entry():
    table = _table([_entry(1024, 1024, 1024, 1), _entry(4096, 1024, 1024, 2)])
    assert tuning.pick(table, {"M": 2048, "N": 1024, "K": 1024})[0] == {"BLOCK_N": 1}
    table["entries"].reverse()
    assert tuning.pick(table, {"M": 2048, "N": 1024, "K": 1024})[0] == {"BLOCK_N": 2}


def test_load_table_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="tuning table .*missing.tune.json does not exist"):
        tuning.load_table(tmp_path / "missing.tune.json")
    bad = tmp_path / "bad.tune.json"
    bad.write_text("{")
    with pytest.raises(tuning.TuningTableError, match="bad.tune.json: not valid JSON"):
        tuning.load_table(bad)
    bad.write_text(json.dumps({**_table([]), "format": 2}))
    with pytest.raises(tuning.TuningTableError, match="format 2 is not supported"):
        tuning.load_table(bad)
    bad.write_text(json.dumps(_table([_entry(1000, 1024, 1024, 1)])))
    with pytest.raises(tuning.TuningTableError, match=r"entries\[0\]: bucket size M=1000"):
        tuning.load_table(bad)
    bad.write_text(json.dumps({**_table([]), "entries": {}}))
    with pytest.raises(tuning.TuningTableError, match="'entries' must be a list"):
        tuning.load_table(bad)
    good = tmp_path / "good.tune.json"
    good.write_text(json.dumps(_table(TABLE_ENTRIES)))
    assert tuning.load_table(good)["entries"][1]["params"] == {"BLOCK_N": 256}


def test_table_path():
    assert str(tuning.table_path("examples/gemm.mlir")) == "examples/gemm.tune.json"
    assert str(tuning.table_path("k")) == "k.tune.json"


def test_auto_table_picks_per_bucket_and_compiles_lazily(backend, source):
    tuning.table_path(source).write_text(json.dumps(_table(TABLE_ENTRIES)))
    gemm = tt.kernel(source)
    assert gemm.table is not None
    assert backend.calls == []  # the signature comes from the table
    gemm(_bf16(1000, 1000), _bf16(1000, 1000), 1.0)
    gemm(_bf16(4096, 64), _bf16(4000, 64), 1.0)  # nearest: 4096^3 (distance 6)
    assert [c[1:] for c in backend.calls] == [
        ({"BLOCK_N": 128}, {"widen": 1, "stages": 4}),
        ({"BLOCK_N": 256}, {"widen": 1, "stages": 3}),
    ]
    gemm(_bf16(600, 1000), _bf16(1000, 1000), 1.0)  # the first bucket again
    assert len(backend.calls) == 2 and len(gemm.kernels) == 2


def test_user_params_and_options_override_the_table(backend, source):
    tuning.table_path(source).write_text(json.dumps(_table(TABLE_ENTRIES)))
    gemm = tt.kernel(source, params={"BLOCK_N": 32, "BLOCK_M": 64}, persistent=False)
    assert gemm.config({"M": 4096, "N": 4096, "K": 4096}) == (
        {"BLOCK_N": 32, "BLOCK_M": 64},
        {"widen": 1, "stages": 3, "persistent": False},
    )
    gemm(_bf16(1000, 1000), _bf16(1000, 1000), 1.0)
    assert backend.calls[-1][1:] == (  # (`config` compiled its kernel: is it an attention)
        {"BLOCK_N": 32, "BLOCK_M": 64},
        {"widen": 1, "stages": 4, "persistent": False},
    )


def test_another_decomposition_drops_the_whole_entry(backend, source):
    """An entry tuned with swap-AB (its 16-token tile too) does not apply to a kernel
    asked for split-K; one asked for the entry's own decomposition keeps the entry."""
    entries = [
        {
            "bucket": {"M": 16, "N": 4096, "K": 4096},
            "params": {"BLOCK_M": 16, "BLOCK_N": 64},
            "options": {"stages": 6, "swap_ab": True},
        }
    ]
    split = tt.kernel(source, tuning=_table(entries), split_k=2)
    assert split.config({"M": 16, "N": 4096, "K": 4096}) == ({}, {"split_k": 2})
    same = tt.kernel(source, tuning=_table(entries), swap_ab=True, stages=4)
    assert same.config({"M": 16, "N": 4096, "K": 4096}) == (
        {"BLOCK_M": 16, "BLOCK_N": 64},
        {"widen": 1, "stages": 4, "swap_ab": True},
    )


def test_no_entry_applies_uses_the_base_configuration(backend, source):
    entries = [{"bucket": {"Q": 8}, "params": {"BLOCK_N": 8}, "options": {}}]
    gemm = tt.kernel(source, tuning=_table(entries), stages=2)
    gemm(_bf16(64, 64), _bf16(64, 64), 1.0)
    assert backend.calls[0][1:] == (None, {"stages": 2})


def test_stale_table_is_ignored_with_a_warning(backend, source):
    path = tuning.table_path(source)
    path.write_text(json.dumps(_table(TABLE_ENTRIES, text="an older kernel")))
    with pytest.warns(UserWarning, match="tuned for another version.*ignored"):
        gemm = tt.kernel(source)
    assert gemm.table is None
    assert backend.calls == [(str(source), None, {})]  # base configuration, for the signature


def test_explicit_table_missing_or_none(backend, source, tmp_path):
    with pytest.raises(FileNotFoundError, match="tuning table .*elsewhere.json does not exist"):
        tt.kernel(source, tuning=tmp_path / "elsewhere.json")
    tuning.table_path(source).write_text(json.dumps(_table(TABLE_ENTRIES)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tt.kernel(source, tuning=None).table is None
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(_table(TABLE_ENTRIES[:1])))
    assert tt.kernel(source, tuning=elsewhere).table["entries"] == TABLE_ENTRIES[:1]


def test_table_changes_the_operator_name(backend, source):
    plain = tt.kernel(source, tuning=None).op_name
    tuned = tt.kernel(source, tuning=_table(TABLE_ENTRIES)).op_name
    other = tt.kernel(source, tuning=_table(TABLE_ENTRIES[:1])).op_name
    assert len({plain, tuned, other}) == 3


def test_sidecar_disagreeing_with_the_table_signature(backend, source):
    args = copy.deepcopy(SIDECAR["args"])
    args[0]["dtype"] = "f16"
    gemm = tt.kernel(source, tuning=_table(TABLE_ENTRIES, args=args))
    a = torch.zeros(1024, 1024, dtype=torch.float16)
    with pytest.raises(LaunchError, match="the kernel's signature is"):
        gemm(a, _bf16(1024, 1024), 1.0)


# ---------------------------------------------------------------- the real compiler


def _needs_ptxas():
    from tawac.support.ptxas import locate_ptxas

    if locate_ptxas() is None:
        pytest.skip("needs ptxas")


def test_real_gemm_signature_fake_calls_and_compile_graph():
    """examples/gemm.mlir through the real compile cache (no launch): the sidecar's access
    makes c the output; fake calls and a captured graph."""
    _needs_ptxas()
    gemm = tt.kernel(EXAMPLES / "gemm.mlir", tuning=None)
    assert "(a: bf16[M, K], b: bf16[N, K]) -> c: bf16[M, N]" in repr(gemm)
    narrow = tt.kernel(EXAMPLES / "gemm.mlir", tuning=None, params={"BLOCK_N": 128})
    assert narrow.op_name != gemm.op_name
    (kern,) = narrow.kernels.values()
    assert kern.sidecar["kernel_params"]["BLOCK_N"] == 128
    mode, (a, b) = _fake_cuda((1000, 3000), (2000, 3000))
    with mode:
        c = gemm(a, b)
        assert c.shape == (1000, 2000) and c.dtype == torch.bfloat16
        with pytest.raises(LaunchError, match="size K differs"):
            gemm(a, torch.empty(2000, 64, dtype=torch.bfloat16, device="cuda"))
    gm = _capture(lambda a, b: gemm(a, b) + narrow(a, b), a, b)
    assert _tawac_calls(gm) == [gemm.op, narrow.op]


def test_real_attention_takes_its_scale_as_a_float():
    _needs_ptxas()
    attn = tt.kernel(EXAMPLES / "attention.mlir", tuning=None)
    assert str(attn.op._schema).endswith(
        "(Tensor q, Tensor k, Tensor v, float scale_log2e) -> Tensor"
    )
    mode, (q,) = _fake_cuda((2, 3, 1000, 128))
    with mode:
        o = attn(q, q, q, 0.125)
    assert o.shape == (2, 3, 1000, 128) and o.dtype == torch.bfloat16
