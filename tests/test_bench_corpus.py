"""benchmarks/bench_corpus.py's arithmetic, without a GPU: the main loop's step read from
the program, and the table's model error (predicted / measured - 1)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tawac.driver import kernel_op

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "benchmarks/bench_corpus.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize(
    ("source", "params", "step"),
    [
        ("examples/gemm.mlir", None, 64),
        ("examples/gemm_fp8.mlir", None, 128),
        ("examples/gemm.mlir", {"BLOCK_K": 32}, 32),
        ("examples/attention.mlir", {"BLOCK_N": 64}, 64),
        ("examples/attention_causal.mlir", None, 128),
    ],
)
def test_main_loop_step(source, params, step):
    assert bench.main_loop_step(kernel_op(ROOT / source, params=params)) == step


def _row(ms, ii, meas):
    return {
        "ms": ms,
        "ok": True,
        "max_error": 1e-3,
        "ii": ii,
        "measured_ns_per_iter": meas,
    }


def test_table_reports_the_model_error_and_the_ratio():
    rows = [
        {
            "name": "p",
            "ghz": 2.0,
            "planners": {
                "heuristic": {
                    **_row(0.2, 600.0, 250.0),
                    "traced_ms": 0.3,
                    "traced_spills": True,
                    "trace": [
                        {"k": 0, "cycles": 500.0, "model": 600.0},
                        {"k": 1, "cycles": 400.0, "model": 300.0},
                    ],
                },
                "solver": _row(0.1, 500.0, None),
            },
        },
        {"name": "q", "error": "CompileError: no"},
    ]
    lines = bench.table(rows, ("heuristic", "solver"))
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    # heuristic: 600 cycles at 2 GHz = 300 ns predicted vs 250 measured: +20%
    assert cells[1] == "2.00"
    assert cells[2:8] == ["0.2000", "ok", "600", "250", "300", "+20%"]
    # heuristic's traced build: loop 0 measured at 500 cycles (model 600: +20%), loop 1
    # at 400 (model 300: -25%), its build spills (*), and runs 1.5x the plain time
    assert cells[8:11] == ["500 / 400*", "+20% / -25%", "1.50x"]
    # solver: nothing measured, no error
    assert cells[11:17] == ["0.1000", "ok", "500", "-", "250", "-"]
    assert cells[17:20] == ["-", "-", "-"]
    assert cells[20] == "2.00x"
    assert lines[3] == "| q | error: CompileError: no |"
    errs = bench.trace_errors(rows, ("heuristic", "solver"))
    assert [(e["k"], round(e["error"], 3), e["perturbed"]) for e in errs] == [
        (0, 0.2, True),
        (1, -0.25, True),
    ]


def test_corpus_loop_sizes_drive_a_constant_step_loop():
    """A `loop` size must lengthen the main loop: its program's loop has a constant step."""
    for entry in bench.load_corpus():
        if entry.get("loop") is None:
            continue
        op = kernel_op(ROOT / entry["source"], params=entry.get("defines") or None)
        assert bench.main_loop_step(op) is not None, entry["name"]


def test_configs_name_a_planner_and_knobs():
    assert bench.parse_config("solver") == ("solver", {})
    assert bench.parse_config("heuristic:stages=5:mma-depth=1:persistent=false") == (
        "heuristic",
        {"stages": 5, "mma_depth": 1, "persistent": False},
    )
    with pytest.raises(SystemExit, match="bad option"):
        bench.parse_config("heuristic:ring=5")
    # Options go one per colon; a comma list (or any other word) is no boolean value.
    for text in ("auto:persistent=false,tma-store=false", "auto:persistent=no"):
        with pytest.raises(SystemExit, match="bad option"):
            bench.parse_config(text)


def test_identical_cubins_are_timed_once():
    class B:
        def __init__(self, cubin, traced=b""):
            self.cubin, self.traced_cubin = cubin, traced

    builds = {"heuristic": B(b"x"), "solver": B(b"y"), "auto": B(b"x"), "other": B(b"x", b"t")}
    assert bench.same_builds(builds) == {
        "heuristic": "heuristic",
        "solver": "solver",
        "auto": "heuristic",
        "other": "other",  # same plain cubin, another traced one: timed on its own
    }


def test_auto_summary(capsys):
    def row(name, h, s, a, tags=(), same=None):
        auto = {"ms": a, **({"same_as": same} if same else {})}
        planners = {"heuristic": {"ms": h}, "solver": {"ms": s}, "auto": auto}
        return {"name": name, "tags": list(tags), "planners": planners}

    rows = [
        row("e", 1.0, 2.0, 1.0, tags=["example"], same="heuristic"),
        row("p", 1.0, 0.8, 0.8, same="solver"),
        row("q", 1.0, 0.9, 1.0, same="heuristic"),  # picked the slower: 0.9x
    ]
    bench.auto_summary(rows, ("heuristic", "solver", "auto"))
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("auto / the faster of heuristic and solver: geomean 0.965")
    assert "lowest 0.900, 1 of 3 below 0.98" in out[0]
    assert out[1] == "  q: 0.900 (auto = heuristic)"
    # non-examples p and q: auto 1.25x and 1.0x over the heuristic, the oracle 1.25x, 1.11x
    assert out[2] == (
        "non-example programs (2), speed-up over the heuristic: auto 1.118, the faster of "
        "the two (oracle) 1.179"
    )
    bench.auto_summary(rows, ("heuristic", "solver"))
    assert capsys.readouterr().out == ""
