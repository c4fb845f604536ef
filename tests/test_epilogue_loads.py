"""2-d tile loads read by consumer math: an epilogue's second matrix
(D = alpha A B^T + beta C, a residual, a gate) or a bias tile in a main loop.

warp-specialize moves such a load to the producer with an aref of its own, lower-aref
gives it a shared-memory ring, a TMA load and `hopper.load_fragment` (the slot into the
registers of the accumulator layout), convert-to-ptx `ld.shared` per pair of columns.
CPU tests: the kernels assemble cleanly (no spills, no warnings) in every configuration
the GPU tests run, the partitioning, the shared-memory plan and `tawac explain`, the
interpreter (the GPU tests' reference) against torch, and the errors. The GPU runs are
in tests/test_gpu_epilogue.py.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from cli_inprocess import tawac

from tawac.dialects import aref, tile
from tawac.driver import compile_file, compile_source, parse_text, run_pipeline
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "gemm_residual.mlir"
DATA = REPO / "tests" / "data"

# (file, kernel parameters): every kernel and parameter set tests/test_gpu_epilogue.py runs.
CONFIGS = [
    (EXAMPLE, None),
    (EXAMPLE, {"BLOCK_N": 128}),
    (DATA / "gemm_residual_f32.mlir", None),
    (DATA / "gemm_gated.mlir", None),
    (DATA / "gemm_acc_init.mlir", None),
    (DATA / "attention_bias.mlir", None),
    (DATA / "attention_bias.mlir", {"BLOCK_N": 64}),
]


def _id(cfg) -> str:
    path, params = cfg
    return path.stem + "".join(f"-{k}={v}" for k, v in (params or {}).items())


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_assembles_cleanly(cfg, persistent):
    """ptxas accepts the kernel without spills or warnings, the consumer-read tensor is
    passed as a 128B-swizzled tensor map (one box per 128-byte column chunk of the tile)
    and is read, not written."""
    path, params = cfg
    res = compile_file(path, params=params, persistent=persistent)
    report = res.ptxas_report
    assert res.cubin is not None and res.cubin[:4] == b"\x7fELF"
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "0 bytes stack frame" in report, report
    assert "warning" not in report.lower(), report
    assert "ld.shared" in res.ptx and "bar.warp.sync -1;" in res.ptx
    name = {"gemm_gated": "g", "attention_bias": "bias"}.get(path.stem, "c")
    (arg,) = [a for a in res.sidecar["args"] if a["name"] == name]
    assert arg["access"] == "read"
    maps = [p for p in res.sidecar["params"] if p.get("arg") == name]
    assert [p["kind"] for p in maps] == ["tensor_map"], maps
    assert maps[0]["swizzle"] == "128B"
    assert maps[0]["box"][0] * (4 if arg["dtype"] == "f32" else 2) == 128


def _partitioned(path: Path, stop: str = "plan", params=None):
    module = parse_text(path.read_text(), path.name, params=params)
    run_pipeline(module, PipelineOptions().pipeline(stop=stop))
    (kernel,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
    return kernel


def test_warp_specialize_gives_the_epilogue_load_its_own_aref():
    """The C tile is loaded by the producer after its K loop and put through a second,
    one-slot aref; the consumer gets it right before the math reads it and releases it
    after the conversion; no 2-d tile.load is left in the consumer."""
    kernel = _partitioned(EXAMPLE, stop="plan")
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    assert [str(t) for t in creates[1].result.type.payload] == ["tensor<128x256xbf16>"]
    producer, consumer = [o for o in kernel.body.block.ops if isinstance(o, aref.PartitionOp)]
    loads = [o for o in producer.walk() if isinstance(o, tile.LoadOp)]
    assert [ld.source.name_hint for ld in loads] == ["a", "b", "c"]
    put = next(u.operation for u in loads[2].result.uses)
    assert isinstance(put, aref.PutOp) and put.aref is creates[1].result
    assert put.parent_op() is producer  # after the K loop, once per tile
    assert not [o for o in consumer.walk() if isinstance(o, tile.LoadOp)]
    ops = list(consumer.body.block.ops)
    get = next(o for o in ops if isinstance(o, aref.GetOp) and o.aref is creates[1].result)
    done = next(o for o in ops if isinstance(o, aref.ConsumedOp) and o.aref is get.aref)
    (user,) = [u.operation for u in get.values[0].uses]
    assert user.name == "arith.extf"
    assert ops.index(get) < ops.index(user) < ops.index(done)


def test_smem_plan_counts_the_epilogue_ring():
    """The C ring is part of the shared-memory plan: with it and a whole staging tile the
    128x256 GEMM's operand ring would be two slots deep (examples/gemm.mlir: three), so
    the output stages in one 64-column chunk and the ring keeps three
    (`planner.MIN_GEMM_DEPTH`: 1.15x faster on the H100, docs/perf.md 2026-11-26); tawac
    explain shows the C ring and marks it as read into registers."""
    from tawac.tools.explain import explain_module as explain

    info = explain(parse_text(EXAMPLE.read_text(), EXAMPLE.name), PipelineOptions())
    assert info["stages"] == 3
    assert info["stores"] == [{"name": "d", "staging": "chunks", "buffers": 1}]
    whole = explain(parse_text(EXAMPLE.read_text(), EXAMPLE.name), PipelineOptions(stages=2))
    assert whole["stores"] == [{"name": "d", "staging": "whole"}]
    gemm = explain(
        parse_text((REPO / "examples/gemm.mlir").read_text(), "gemm.mlir"), PipelineOptions()
    )
    assert gemm["stages"] == 3
    (c_aref,) = [a for a in info["arefs"] if a["payload"] == ["tensor<128x256xbf16>"]]
    assert c_aref["registers"] == [0] and c_aref["slot_bytes"] == 65536
    assert "registers" not in info["arefs"][0]
    regions = {r["what"]: r for r in info["smem"]["regions"]}
    ring = regions[f"ring of {c_aref['name']} tensor<128x256xbf16>"]
    assert ring["bytes"] == 65536 and ring["offset"] % 1024 == 0
    assert info["smem"]["bytes"] == compile_file(EXAMPLE, cubin=False).sidecar["dynamic_smem"]
    assert sum(r["bytes"] for r in info["smem"]["regions"]) <= info["smem"]["bytes"]


def test_explain_names_the_register_payload():
    cmd = ["explain", str(EXAMPLE)]
    run = functools.partial(tawac, check=True)
    info = json.loads(run([*cmd, "--json"]).stdout)
    assert [a.get("registers") for a in info["arefs"]] == [None, [0]]
    assert "tensor<128x256xbf16> (into registers)" in run(cmd).stdout


def test_persistent_epilogue_aref_gets_a_second_slot_where_it_fits():
    """Written once per tile, the C aref of a persistent kernel gets the second slot
    attention's Q gets (the producer loads tile t+1's C while the consumers finish tile
    t), where shared memory allows: with 128x128 tiles, not with 128x256."""
    from tawac import schedule
    from tawac.schedule.planner import PREFERRED_DEPTH

    small = _partitioned(EXAMPLE, stop="pipeline", params={"BLOCK_N": 128})
    assert [a.depth for a in schedule.of(small).arefs] == [PREFERRED_DEPTH, 2]
    big = _partitioned(EXAMPLE, stop="pipeline")
    assert [a.depth for a in schedule.of(big).arefs] == [3, 1]


_TOO_BIG = """
tile.kernel @huge(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>, %d: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c256 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<256x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<256x256xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
    %p = tile.dot %x, %y, %acc_i transpose_rhs : tensor<256x64xbf16>, tensor<256x64xbf16> -> tensor<256x256xf32>
    scf.yield %p : tensor<256x256xf32>
  }
  %ct = tile.load %c[%m0, %n0] : !tile.tensor<?x?xf32> -> tensor<256x256xf32>
  %r = arith.addf %acc, %ct : tensor<256x256xf32>
  %o = arith.truncf %r : tensor<256x256xf32> to tensor<256x256xbf16>
  tile.store %o, %d[%m0, %n0] : tensor<256x256xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
"""  # noqa: E501


def test_too_large_epilogue_tile_is_a_clear_error():
    """A 256x256 f32 C tile (256 KiB) cannot have a shared-memory slot: one located
    error that names the ring read by consumer math and its size."""
    with pytest.raises(CompileError) as err:
        compile_source(_TOO_BIG, "huge.mlir")
    msg = str(err.value)
    assert msg.startswith("huge.mlir:2:1: error: lower-aref: the aref rings need ")
    assert "more than the 232448 bytes a CTA can have" in msg
    assert "1 x tensor<256x256xf32>, read by consumer math: 262144 bytes" in msg


def _gemm_epilogue(epilogue: str) -> str:
    """A 128x128x64 GEMM whose epilogue (operating on %acc, %m0, %n0) is `epilogue`."""
    return f"""
tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>, %d: !tile.tensor<?x?xf32>, %s: index) {{
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {{
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %p = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %p : tensor<128x128xf32>
  }}
{epilogue}
  tile.return
}}
"""  # noqa: E501


def test_load_read_by_a_dot_and_by_math_is_an_error():
    text = _gemm_epilogue(
        """  %ct = tile.load %c[%m0, %n0] : !tile.tensor<?x?xbf16> -> tensor<128x128xbf16>
  %e = tile.dot %ct, %ct, %acc transpose_rhs : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
  %cf = arith.extf %ct : tensor<128x128xbf16> to tensor<128x128xf32>
  %r = arith.addf %e, %cf : tensor<128x128xf32>
  tile.store %r, %d[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>"""  # noqa: E501
    )
    with pytest.raises(CompileError, match="read both as a tile.dot operand and by other ops"):
        compile_source(text, "mixed.mlir")


def test_epilogue_load_in_an_if_is_an_error():
    text = _gemm_epilogue(
        """  %zero_i = arith.constant 0 : index
  %cond = arith.cmpi sgt, %s, %zero_i : index
  %r = scf.if %cond -> (tensor<128x128xf32>) {
    %ct = tile.load %c[%m0, %n0] : !tile.tensor<?x?xbf16> -> tensor<128x128xbf16>
    %cf = arith.extf %ct : tensor<128x128xbf16> to tensor<128x128xf32>
    %sum = arith.addf %acc, %cf : tensor<128x128xf32>
    scf.yield %sum : tensor<128x128xf32>
  } else {
    scf.yield %acc : tensor<128x128xf32>
  }
  tile.store %r, %d[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>"""
    )
    with pytest.raises(CompileError) as err:
        compile_source(text, "cond.mlir")
    assert str(err.value).startswith("cond.mlir:21:11: error: warp-specialize: 2-d tile.loads")
    assert "inside 'scf.if' are not supported yet" in str(err.value)


def test_epilogue_load_at_a_computed_coordinate_is_an_error():
    """A coordinate the producer cannot compute (here a float conversion) is named."""
    text = _gemm_epilogue(
        """  %one = arith.constant 1.0 : f32
  %i32 = arith.fptosi %one : f32 to i32
  %row = arith.index_cast %i32 : i32 to index
  %ct = tile.load %c[%row, %n0] : !tile.tensor<?x?xbf16> -> tensor<128x128xbf16>
  %cf = arith.extf %ct : tensor<128x128xbf16> to tensor<128x128xf32>
  %r = arith.addf %acc, %cf : tensor<128x128xf32>
  tile.store %r, %d[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>"""
    )
    with pytest.raises(CompileError, match="coordinates of a 2-d tile.load read by consumer math"):
        compile_source(text, "coord.mlir")


# --- the interpreter, the GPU tests' reference, against torch --------------------------------

torch = pytest.importorskip("torch")


def _kernel(path: Path, params=None) -> tile.KernelOp:
    module = parse_text(path.read_text(), path.name, params=params)
    (kernel,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
    return kernel


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _gemm_inputs(m, n, k, c_dtype, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).to(torch.bfloat16)
    b = torch.randn(n, k, generator=g).to(torch.bfloat16)
    c = torch.randn(m, n, generator=g).to(c_dtype)
    d = torch.full((m, n), float("nan"), dtype=torch.bfloat16)
    return a, b, c, d


def _rel(out, ref) -> float:
    assert not out.isnan().any()
    return float((out.float() - ref).norm() / ref.norm())


@pytest.mark.parametrize("params", [None, {"BLOCK_N": 128}])
def test_interpreter_gemm_residual_matches_torch(params):
    from tawac.runtime.interpret import interpret

    m, n, k = 130, 270, 70
    a, b, c, d = _gemm_inputs(m, n, k, torch.bfloat16, 1)
    bn = (params or {}).get("BLOCK_N", 256)
    interpret(_kernel(EXAMPLE, params), [a, b, c, d, 0.75, -1.5], (_cdiv(m, 128), _cdiv(n, bn), 1))
    ref = 0.75 * (a.float() @ b.float().T) - 1.5 * c.float()
    assert _rel(d, ref) < 1e-2


def test_interpreter_residual_variants_match_torch():
    from tawac.runtime.interpret import interpret

    m, n, k = 200, 136, 96
    grid = (_cdiv(m, 128), _cdiv(n, 128), 1)
    a, b, c, d = _gemm_inputs(m, n, k, torch.float32, 2)
    interpret(_kernel(DATA / "gemm_residual_f32.mlir"), [a, b, c, d], grid)
    assert _rel(d, a.float() @ b.float().T + c) < 1e-2
    d.fill_(float("nan"))
    interpret(_kernel(DATA / "gemm_acc_init.mlir"), [a, b, c, d], grid)
    assert _rel(d, a.float() @ b.float().T + c) < 1e-2
    a, b, g, d = _gemm_inputs(m, n, k, torch.bfloat16, 3)
    interpret(_kernel(DATA / "gemm_gated.mlir"), [a, b, g, d], grid)
    assert _rel(d, (a.float() @ b.float().T) * torch.sigmoid(g.float())) < 1e-2


@pytest.mark.parametrize("params", [None, {"BLOCK_N": 64}])
def test_interpreter_attention_bias_matches_torch(params):
    from tawac.runtime.interpret import interpret

    b, h, s, d = 1, 2, 200, 128
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(b, h, s, d, generator=g).to(torch.bfloat16) for _ in range(3))
    bias = (2 * torch.randn(s, s, generator=g)).to(torch.bfloat16)
    o = torch.full((b, h, s, d), float("nan"), dtype=torch.bfloat16)
    scale = d**-0.5
    kern = _kernel(DATA / "attention_bias.mlir", params)
    interpret(kern, [q, k, v, o, bias, scale * 1.4426950408889634], (_cdiv(s, 128), h, b))
    scores = (q.float() @ k.float().transpose(-1, -2) + bias.float()) * scale
    ref = torch.softmax(scores, -1) @ v.float()
    assert _rel(o, ref) < 1e-2
