"""`benchmarks/report.py`: docs/perf.md's current tables are what the command writes from
`benchmarks/results/`, and the same result files always give the same text."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


report = _load("report")
results = _load("results")


def test_perf_md_current_section_is_generated():
    """docs/perf.md's marked section equals `python3 benchmarks/report.py`'s output now."""
    text = (ROOT / "docs" / "perf.md").read_text()
    assert report.current(text) == report.render(), "run python3 benchmarks/report.py"
    assert report.main(["--check"]) == 0


def test_every_benchmark_has_a_current_table():
    benches = {p.stem.removeprefix("bench_") for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert benches <= set(report.newest())


def _doc(bench, date, value, device="NVIDIA H100 80GB HBM3"):
    return results.document(
        bench,
        [{"title": "t", "columns": ["shape", "TFLOP/s"], "rows": [["4096", value]]}],
        date=date,
        device=device,
        versions={"torch": "2.11"},
        command=f"python3 benchmarks/bench_{bench}.py",
    )


def test_render_is_deterministic_and_takes_the_newest(tmp_path):
    results.write(_doc("gemm", "2026-11-24", "600"), tmp_path)
    results.write(_doc("gemm", "2026-12-01", "700"), tmp_path)
    results.write(_doc("attention", "2026-11-20", "500", device="NVIDIA H200"), tmp_path)
    (tmp_path / "corpus-old.json").write_text(json.dumps({"device": "x", "rows": []}))
    a = report.render(tmp_path)
    assert a == report.render(tmp_path)
    assert "| 4096 | 700 |" in a and "| 4096 | 600 |" not in a
    assert a.index("### attention") < a.index("### gemm")
    assert "2026-12-01, NVIDIA H100 80GB HBM3; torch 2.11." in a
    assert "2026-11-20, NVIDIA H200" in a


def test_check_fails_on_a_stale_section(tmp_path):
    results.write(_doc("gemm", "2026-11-24", "600"), tmp_path)
    perf = tmp_path / "perf.md"
    perf.write_text(f"# P\n\n{report.BEGIN}\nold\n{report.END}\n\nrecord\n")
    assert report.main(["--check", "--results", str(tmp_path), "--perf", str(perf)]) == 1
    assert report.main(["--results", str(tmp_path), "--perf", str(perf)]) == 0
    text = perf.read_text()
    assert text.startswith("# P\n\n") and text.endswith("\n\nrecord\n") and "old" not in text
    assert report.main(["--check", "--results", str(tmp_path), "--perf", str(perf)]) == 0


def test_markdown_tables_read_a_printed_table_with_notes_between_rows():
    printed = "### bf16 GEMM\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n#   note\n| 3 | 4 |\n\ndone\n"
    (t,) = results.markdown_tables(printed)
    assert t == {"title": "bf16 GEMM", "columns": ["a", "b"], "rows": [["1", "2"], ["3", "4"]]}
    assert results.slug("NVIDIA H100 80GB HBM3") == "h100-80gb-hbm3"
