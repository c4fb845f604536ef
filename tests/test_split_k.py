"""The `split-k` pass and its ABI without a GPU: the sidecar's workspace and grid, the
compiled kernels' registers, and the errors of kernels it cannot split."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawac.driver import compile_file, parse_text
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_the_pass_runs_first_only_when_splitting():
    assert (
        PipelineOptions(split_k=4)
        .pipeline()
        .startswith(
            "canonicalize,group-heads,split-k{splits=4},pad-loads,guard-masks,sink-reductions,"
            "warp-specialize,"
        )
    )
    assert (
        PipelineOptions()
        .pipeline()
        .startswith(
            "canonicalize,group-heads,widen,pad-loads,guard-masks,sink-reductions,warp-specialize,"
        )
    )
    assert (
        PipelineOptions(group_heads=False)
        .pipeline()
        .startswith("canonicalize,widen,pad-loads,guard-masks,")
    )
    assert (
        PipelineOptions(widen=1)
        .pipeline()
        .startswith("canonicalize,group-heads,pad-loads,guard-masks,")
    )
    assert (
        PipelineOptions(split_k=4).pipeline(start="warp-specialize").startswith("warp-specialize,")
    )
    assert (
        PipelineOptions(split_k=4).pipeline(stop="warp-specialize")
        == "canonicalize,group-heads,split-k{splits=4},pad-loads,guard-masks,sink-reductions"
    )
    assert (
        PipelineOptions(sink_reductions=False)
        .pipeline()
        .startswith("canonicalize,group-heads,widen,pad-loads,guard-masks,warp-specialize,")
    )


def test_sidecar_workspace_and_grid():
    r = compile_file(
        EXAMPLES / "gemm.mlir",
        params={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128},
        split_k=3,
        cubin=False,
    )
    side = r.sidecar
    assert [a["name"] for a in side["args"]] == ["a", "b", "c"]
    assert side["workspace"] == [
        {
            "name": "tawac_splitk_partials",
            "dtype": "f32",
            "zero": False,
            "shape": [
                {"const": 3},
                {"cdiv": {"arg": "c", "dim": 0}, "by": 1},
                {"cdiv": {"arg": "c", "dim": 1}, "by": 1},
            ],
        },
        {
            "name": "tawac_splitk_tickets",
            "dtype": "i32",
            "zero": True,
            "shape": [
                {"cdiv": {"arg": "c", "dim": 0}, "by": 64},
                {"cdiv": {"arg": "c", "dim": 1}, "by": 64},
            ],
        },
    ]
    assert [w["zero"] for w in side["workspace"]] == [False, True]
    assert all(isinstance(w["zero"], bool) for w in side["workspace"])  # JSON true/false
    assert side["program_grid"][2] == {"const": 3}
    kinds = {(p["kind"], p["arg"]) for p in side["params"] if p.get("arg", "").startswith("tawac")}
    assert ("pointer", "tawac_splitk_partials") in kinds
    assert ("pointer", "tawac_splitk_tickets") in kinds


def test_plain_gemm_has_no_workspace():
    r = compile_file(EXAMPLES / "gemm.mlir", cubin=False)
    assert "workspace" not in r.sidecar
    assert "atom." not in r.ptx and "bar.red" not in r.ptx


@pytest.mark.parametrize("splits", [2, 8])
@pytest.mark.parametrize(
    ("example", "params"),
    [
        ("gemm.mlir", {}),
        ("gemm.mlir", {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128}),
        ("gemm.mlir", {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 128}),
        ("gemm_bias.mlir", {}),
    ],
)
def test_split_kernels_assemble_without_spills(example, params, splits):
    pytest.importorskip("tawac.support.ptxas")
    r = compile_file(EXAMPLES / example, params=params or None, split_k=splits)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report


def test_splits_out_of_range_is_one_error():
    with pytest.raises(CompileError, match=r"split-k.* must be 1\.\.64, got 65"):
        compile_file(EXAMPLES / "gemm.mlir", split_k=65, cubin=False)


def test_attention_splits_its_keys():
    """An online-softmax loop splits as flash-decoding: splits along x (the grid's x
    extent times S), partial (O, m, l) in the workspace, combined by the last program."""
    r = compile_file(EXAMPLES / "attention.mlir", split_k=3, cubin=False)
    assert r.sidecar["program_grid"][0] == {"cdiv": {"arg": "o", "dim": 2}, "by": 128, "times": 3}
    names = [w["name"] for w in r.sidecar["workspace"]]
    assert names == [
        "tawac_splitk_partials",
        "tawac_splitk_row_max",
        "tawac_splitk_row_sum",
        "tawac_splitk_tickets",
    ]
    assert "ex2.approx" in r.ptx and "ld.global.cg.v2.f32" in r.ptx


def test_attention_cannot_be_stream_k():
    with pytest.raises(CompileError, match="split-k: stream-K of an attention loop") as e:
        compile_file(EXAMPLES / "attention.mlir", stream_k=2, persistent=True, cubin=False)
    assert "attention.mlir:" in str(e.value)


def test_split_sum_round_trips():
    text = """tile.kernel @k(%w: !tile.tensor<?x?x?xf32>, %t: !tile.tensor<?x?xi32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %l = tile.arrive %t[%c0, %c0] count %c4 : !tile.tensor<?x?xi32>
  %s = tile.split_sum %w[%c0, %c0, %c0] count %c4 max 4 : !tile.tensor<?x?x?xf32>
    -> tensor<64x64xf32>
  %n, %z, %b = tile.split_info
  tile.return
}"""
    printed = str(parse_text(text, "k.mlir"))
    assert "tile.arrive %t[%c0, %c0] count %c4 : !tile.tensor<?x?xi32>" in printed
    assert "tile.split_sum %w[%c0, %c0, %c0] count %c4 max 4" in printed
    assert "%n, %z, %b = tile.split_info" in printed


def test_stream_k_sidecar_fills_every_sm():
    r = compile_file(EXAMPLES / "gemm.mlir", stream_k=8, cubin=False)
    side = r.sidecar
    assert side["grid"][0] == {"persistent": 1, "fill": True}
    ws = {w["name"]: w for w in side["workspace"]}
    assert ws["tawac_splitk_partials"]["shape"] == [{"sms": 1}, {"const": 128}, {"const": 256}]
    assert ws["tawac_splitk_tickets"]["shape"] == [{"sms": 1}]
    assert "tile.split_info" not in r.ptx and "atom.acq_rel.gpu" in r.ptx


def test_stream_k_needs_a_persistent_kernel():
    with pytest.raises(CompileError, match="stream-K .* compile with --persistent"):
        compile_file(EXAMPLES / "gemm.mlir", stream_k=4, persistent=False, cubin=False)


def test_split_k_and_stream_k_are_one_choice():
    with pytest.raises(CompileError, match="choose one"):
        compile_file(EXAMPLES / "gemm.mlir", stream_k=4, split_k=2, cubin=False)


def test_stream_k_grid_counts_every_sm():
    from tawac.runtime.plans import compute_grid

    shapes = {"c": (100, 300)}
    program_grid = [
        {"cdiv": {"arg": "c", "dim": 0}, "by": 64},
        {"cdiv": {"arg": "c", "dim": 1}, "by": 64},
        {"const": 1},
    ]
    plain = [{"persistent": 1}, {"const": 1}, {"const": 1}]
    fill = [{"persistent": 1, "fill": True}, {"const": 1}, {"const": 1}]
    kw = {"program_grid": program_grid, "sm_count": 132}
    assert compute_grid(plain, shapes, **kw) == (10, 1, 1)
    assert compute_grid(fill, shapes, **kw) == (132, 1, 1)
    assert compute_grid(fill, {"c": (0, 300)}, **kw) == (0, 1, 1)


def test_load_index_round_trips_and_is_refused_on_floats():
    text = """tile.kernel @k(%ids: !tile.tensor<?xi32>) {
  %c0 = arith.constant 0 : index
  %e = tile.load_index %ids[%c0] : !tile.tensor<?xi32>
  tile.return
}"""
    assert "tile.load_index %ids[%c0] : !tile.tensor<?xi32>" in str(parse_text(text, "k.mlir"))
    bad = text.replace("?xi32", "?xf32")
    with pytest.raises(CompileError, match="tile.load_index: expected an i32 tensor"):
        parse_text(bad, "k.mlir")


def test_grouped_gemm_reads_the_expert_id_in_both_roles():
    """The expert id feeds the producer's W coordinates and both roles' loop bound: each
    partition reads it (one ld.global.s32 per partition), and the sidecar takes ids as an
    i32 tensor that is read."""
    r = compile_file(EXAMPLES / "gemm_grouped.mlir", cubin=False)
    assert r.ptx.count("ld.global.s32") == 2
    ids = next(a for a in r.sidecar["args"] if a["name"] == "ids")
    assert (ids["dtype"], ids["access"]) == ("i32", "read")


def test_interpreter_runs_the_grouped_gemm():
    """The reference interpreter (`tawac run`'s check) reads the expert ids: a grouped
    GEMM of 64-row blocks on the CPU against a loop over experts, a padding block (-1)
    giving zeros."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    module = parse_text(
        (EXAMPLES / "gemm_grouped.mlir").read_text(),
        "gemm_grouped.mlir",
        params={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64},
    )
    kernel = next(o for o in module.body.block.ops if o.name == "tile.kernel")
    g = torch.Generator().manual_seed(0)
    a = torch.randn(4 * 64, 128, generator=g).bfloat16()
    w = torch.randn(3, 128, 128, generator=g).bfloat16()
    ids = torch.tensor([2, 0, 0, -1], dtype=torch.int32)
    c = torch.full((4 * 64, 128), float("nan")).bfloat16()
    interpret(kernel, [a, w, ids, c], (4, 2, 1))
    for block, e in enumerate(ids.tolist()):
        rows = slice(block * 64, block * 64 + 64)
        want = torch.zeros(64, 128) if e < 0 else a[rows].float() @ w[e].float().T
        assert torch.allclose(c[rows].float(), want, rtol=2e-2, atol=2e-1), block


def test_bounded_store_round_trips_and_checks_its_bounds():
    text = """tile.kernel @k(%c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %z = arith.constant dense<0.0> : tensor<64x64xbf16>
  tile.store %z, %c[%c0, %c0] bounds [%c0, %c0] : tensor<64x64xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}"""
    assert "bounds [%c0, %c0] :" in str(parse_text(text, "k.mlir"))
    with pytest.raises(CompileError, match="1 bounds given for 2 coordinates"):
        parse_text(text.replace("bounds [%c0, %c0]", "bounds [%c0]"), "k.mlir")


def test_unpadded_grouped_gemm_stores_both_ways_and_sizes_its_grid_by_blocks():
    """A block whole inside its expert's rows leaves through a TMA store, an expert's
    last block through the bounded store from registers (as 16-byte vectors: the tensor
    is TMA-stored too, so its rows are aligned); the grid is one program per block (the
    index tensor's length) along x."""
    r = compile_file(EXAMPLES / "gemm_grouped_offsets.mlir", cubin=False)
    assert r.sidecar["program_grid"][0] == {"cdiv": {"arg": "experts", "dim": 0}, "by": 1}
    assert "cp.async.bulk.tensor.2d.global.shared" in r.ptx
    assert "st.global.v4.b32" in r.ptx


def test_interpreter_runs_the_unpadded_grouped_gemm():
    """Blocks read the next expert's rows and store only their own (bounds)."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    module = parse_text(
        (EXAMPLES / "gemm_grouped_offsets.mlir").read_text(),
        "gemm_grouped_offsets.mlir",
        params={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64},
    )
    kernel = next(o for o in module.body.block.ops if o.name == "tile.kernel")
    g = torch.Generator().manual_seed(1)

    a = torch.randn(100, 128, generator=g).bfloat16()
    w = torch.randn(2, 64, 128, generator=g).bfloat16()
    experts = torch.tensor([0, 0, 1], dtype=torch.int32)
    starts = torch.tensor([0, 64, 70], dtype=torch.int32)
    ends = torch.tensor([70, 70, 100], dtype=torch.int32)
    c = torch.full((100, 64), float("nan")).bfloat16()
    interpret(kernel, [a, w, experts, starts, ends, c], (3, 1, 1))
    want = torch.cat([a[:70].float() @ w[0].float().T, a[70:].float() @ w[1].float().T])
    assert torch.allclose(c.float(), want, rtol=2e-2, atol=2e-1)


def test_a_loaded_index_is_not_folded_as_a_constant():
    """Regression: tile.load_index's register was made by `mov -1` and overwritten by the
    load; the integer folding took it for the constant -1, so the unpadded grouped GEMM's
    `start + BLOCK_M <= end` became `63 <= end` (wrong results on the GPU)."""
    import re

    r = compile_file(
        EXAMPLES / "gemm_grouped_offsets.mlir",
        params={"BLOCK_M": 64, "BLOCK_N": 64},
        cubin=False,
    )
    lines = r.ptx.splitlines()
    cmp = next(ln for ln in lines if "setp.le.s32" in ln)
    lhs = re.findall(r"%r\d+", cmp)[0]
    defs = [ln for ln in lines if re.match(rf"\s*\S+\.\S+ {re.escape(lhs)},", ln)]
    assert defs and defs[0].strip().startswith("add.s32"), defs
