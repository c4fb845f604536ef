"""`tawac explain`: golden decisions for the GEMM and attention examples, a consistent
shared-memory map for every example, and the command line's tables and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inprocess import tawac

from tawac.ir.parser import parse_file
from tawac.support.options import PipelineOptions
from tawac.tools.explain import explain_module

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "data" / "explain"
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))


def _explain(path: Path, **options) -> dict:
    return explain_module(parse_file(path), PipelineOptions(**options))


@pytest.mark.solver  # the default planner, auto, has both planners propose
@pytest.mark.parametrize("name", ["gemm", "attention"])
def test_golden(name):
    """The decisions for the examples; a change here is a change of schedule (update the
    golden file with `tawac explain examples/NAME.mlir --json` when it is meant)."""
    got = _explain(REPO / "examples" / f"{name}.mlir")
    assert got == json.loads((GOLDEN / f"{name}.json").read_text())


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_smem_map_is_consistent(path):
    info = _explain(path)
    smem = info["smem"]
    regions = smem["regions"]
    assert regions and smem["bytes"] <= smem["limit"]
    for a, b in zip(regions, regions[1:], strict=False):
        assert a["offset"] + a["bytes"] <= b["offset"], (a, b)
    assert regions[-1]["offset"] + regions[-1]["bytes"] == smem["bytes"]
    rings = [r for r in regions if r["what"].startswith("ring of ")]
    assert len(rings) == sum(len(a["payload"]) for a in info["arefs"])
    for a in info["arefs"]:
        assert sum(r["bytes"] for r in rings if f" {a['name']} " in r["what"]) == (
            a["slot_bytes"] * a["depth"]
        )
    assert sum(r["threads"] for r in info["roles"]) == info["threads"]


def test_options_change_the_decisions():
    base = _explain(REPO / "examples" / "gemm.mlir")
    other = _explain(REPO / "examples" / "gemm.mlir", stages=2, mma_depth=1, persistent=False)
    assert (other["stages"], other["mma_depth"], other["persistent"]) == (2, 1, False)
    assert [a["depth"] for a in other["arefs"]] == [2]
    assert [a["release_lag"] for a in other["arefs"]] == [1]
    assert base["arefs"][0]["release_lag"] == 0


@pytest.mark.solver  # the golden file's decision is auto's
def test_cli_tables_and_json(tmp_path):
    cmd = ["explain", str(REPO / "examples" / "gemm.mlir")]
    text = tawac(cmd, check=True).stdout
    assert "kernel @gemm on sm_90a: 384 threads per CTA" in text
    assert "grid: one CTA per SM, looping over cdiv(c.shape[0], 128) x" in text
    for row in ("producer", "consumer", "ring of a_b tensor<256x64xbf16>", "staging tile"):
        assert row in text, text
    assert "shared memory: 214016 of 232448 bytes" in text
    out = tawac([*cmd, "--json"], check=True)
    assert json.loads(out.stdout) == json.loads((GOLDEN / "gemm.json").read_text())


def test_cli_error_is_one_line(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("tile.kernel @k(%a: !tile.tensor<?x?xbf16>) {\n  tile.fence\n  tile.return\n}\n")
    proc = tawac(["explain", str(bad)])
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"{bad}:2:3: error: Operation tile.fence is not registered"


def test_decomposition_for_a_size_comes_from_the_tuning_table(tmp_path):
    """`--size` picks the tuning table's entry for that size: its split-K, and why."""
    from click.testing import CliRunner

    from tawac.tools.cli import main

    table = json.loads((REPO / "examples" / "gemm.tune.json").read_text())
    table["entries"] = [
        {
            "bucket": {"M": 16, "N": 4096, "K": 16384},
            "params": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128},
            "options": {"stages": 4, "split_k": 2},
            "time_ms": 0.0577,
            "device": "NVIDIA H100 80GB HBM3",
        }
    ]
    path = tmp_path / "t.tune.json"
    path.write_text(json.dumps(table))
    args = ["explain", str(REPO / "examples" / "gemm.mlir"), "--size", "M=16,N=4096,K=14336"]
    out = CliRunner().invoke(main, [*args, "--table", str(path), "--json"])
    assert out.exit_code == 0, out.output
    info = json.loads(out.output)
    assert info["decomposition"]["kind"] == "split_k"
    assert info["decomposition"]["splits"] == 2
    assert "the entry of bucket M=16,N=4096,K=16384, 57.7 us" in info["decomposition"]["why"]
    assert info["grid"][2] == {"const": 2}
    # a flag on the command line wins over the table
    out = CliRunner().invoke(main, [*args, "--table", str(path), "--split-k", "1", "--json"])
    assert json.loads(out.output)["decomposition"]["kind"] == "data_parallel"
    text = CliRunner().invoke(main, [*args, "--table", str(path)]).output
    assert "decomposition: split-K by 2" in text


def test_swap_ab_entry_and_a_flag_choosing_another_decomposition(tmp_path):
    """A table entry with swap-AB (a 16-token tile) is explained as such; a flag that
    chooses another decomposition drops the whole entry (its tile was tuned with it),
    and says so."""
    from click.testing import CliRunner

    from tawac.tools.cli import main

    table = json.loads((REPO / "examples" / "gemm.tune.json").read_text())
    table["entries"] = [
        {
            "bucket": {"M": 16, "N": 4096, "K": 4096},
            "params": {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128},
            "options": {"stages": 6, "swap_ab": True},
        }
    ]
    path = tmp_path / "t.tune.json"
    path.write_text(json.dumps(table))
    args = ["explain", str(REPO / "examples" / "gemm.mlir"), "--size", "M=16,N=4096,K=4096"]
    out = CliRunner().invoke(main, [*args, "--table", str(path), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["decomposition"]["kind"] == "swap_ab"
    text = CliRunner().invoke(main, [*args, "--table", str(path)]).output
    assert "decomposition: swap-AB: each tile computed transposed" in text
    out = CliRunner().invoke(main, [*args, "--table", str(path), "--split-k", "2", "--json"])
    assert out.exit_code == 0, out.output
    info = json.loads(out.output)
    assert info["decomposition"]["kind"] == "split_k"
    assert "the flags choose another decomposition" in info["decomposition"]["why"]


def test_stream_k_decomposition_is_said():
    info = _explain(REPO / "examples" / "gemm.mlir", stream_k=4)
    assert info["decomposition"] == {"kind": "stream_k", "max_splits": 4}
    from tawac.tools.explain import decomposition_text

    assert decomposition_text(info).startswith("decomposition: stream-K: the tiles of the last")


@pytest.mark.parametrize(
    ("name", "options", "order"),
    [
        ("gemm.mlir", {}, "grouped: 8 rows"),  # A's band follows x: Triton's groups
        ("attention.mlir", {}, "along x"),  # K and V follow the head only
        ("attention_d64.mlir", {}, "along x"),
        ("attention.mlir", {"group_m": 4}, "grouped: 4 rows"),  # a given group is kept
        ("attention_causal.mlir", {}, "longest first"),  # work grows with x
    ],
)
def test_the_tile_order_follows_what_the_main_loops_stream(name, options, order):
    """The persistent tile order runs together the programs that stream the same data: a
    main loop whose loads do not depend on program id x (attention's K/V) takes the
    whole x axis as one group (docs/perf/2026-11-27.md: 1.08-1.11x at 16k keys); one
    whose loads do (a GEMM's A band), Triton's groups of 8; `group_m` given wins."""
    from tawac.analysis.program_ids import streams_along_x
    from tawac.compiler import run_pipeline
    from tawac.dialects import aref

    info = _explain(REPO / "examples" / name, **options)
    assert info["tile_order"].startswith(order), info["tile_order"]
    module = parse_file(REPO / "examples" / name)
    run_pipeline(module, "warp-specialize")
    parts = [o for o in module.walk() if isinstance(o, aref.PartitionOp)]
    assert streams_along_x(parts) == name.startswith("gemm")


@pytest.mark.parametrize(
    ("name", "options", "expected"),
    [
        ("attention", {}, True),
        ("gemm", {}, False),  # its first MMA is in its K loop
        ("attention_decode", {"split_k": 4}, False),  # the ticket follows the epilogue
        ("attention", {"persistent": False}, False),
    ],
)
def test_overlap_epilogue_is_planned_where_it_applies(name, options, expected):
    """`overlap_epilogue` asks; the planner records `overlap` only where the pass has an
    epilogue to move, so explain shows what the kernel does."""
    info = _explain(REPO / "examples" / f"{name}.mlir", overlap_epilogue=True, **options)
    assert info["overlap"] is expected


@pytest.mark.parametrize("hints", [True, False])
def test_explain_says_where_l2_hints_hold_a_row_that_does_not_fit(hints):
    """The softmax at 131072 columns in 8192-column blocks: 16 tiles a program, more than
    its ring holds, so each loop reads them; with `l2_hints` the text says the first
    loop's lines are held in L2 for the next, and the JSON marks the aref."""
    args = ["explain", "examples/softmax.mlir", "-D", "BLOCK_M=1", "-D", "BLOCK_N=8192"]
    args += ["--size", "M=1024,N=131072", *([] if hints else ["--no-l2-hints"])]
    text = " ".join(tawac(args, check=True).stdout.split())  # as one line, unwrapped
    assert "its first 10 tiles kept in their slots, the others loaded once per loop" in text
    assert ("held in L2" in text) is hints
    info = json.loads(tawac([*args, "--json"], check=True).stdout)
    (x,) = [a for a in info["arefs"] if a.get("resident")]
    assert x["l2_hints"] is hints
    assert (x["depth"], x["held_tiles"]) == (14, 10)  # 4 slots of 16 KiB stream


def test_explain_says_each_loop_loads_a_row_without_held_slots():
    """The same with `--no-hold-slots`: every tile loaded once per loop, none held."""
    args = ["explain", "examples/softmax.mlir", "-D", "BLOCK_M=1", "-D", "BLOCK_N=8192"]
    args += ["--size", "M=1024,N=131072", "--no-hold-slots"]
    text = tawac(args, check=True).stdout
    assert "program has 16: loaded once per loop" in " ".join(text.split())
    assert "kept in their slots" not in text


@pytest.mark.parametrize(
    ("name", "params", "exact"),
    [
        ("rmsnorm_bwd", {"BLOCK_M": 8, "BLOCK_N": 1024}, True),  # column sums over 4 warps
        ("layernorm_bwd_rows", {"BLOCK_M": 1}, True),  # one row: the row sums' 4 partials only
        ("layernorm_bwd_rows", {}, True),  # two rows on two WGs: a scratch row a WG
        ("layernorm", {"BLOCK_M": 2, "BLOCK_N": 2048}, False),  # reserves 32, uses 16
        ("gemm", {}, True),
    ],
)
def test_the_smem_map_shows_the_reductions_scratch(name, params, exact):
    """explain's shared memory ends with the scratch the planner reserves for reductions
    across warps (it left it out: 64 KiB of column-sum scratch did not show); the launch
    takes what the backend's reductions use, at most that."""
    from tawac.compiler import compile_file

    path = REPO / "examples" / f"{name}.mlir"
    smem = explain_module(parse_file(path, params=params), PipelineOptions())["smem"]
    launch = compile_file(path, params=params, cubin=False).sidecar["dynamic_smem"]
    assert smem["bytes"] == launch if exact else smem["bytes"] >= launch
    scratch = [r for r in smem["regions"] if r["what"] == "reductions' scratch (reserved)"]
    assert bool(scratch) == (name != "gemm")
