"""The benchmarks' result files: one JSON per run in `benchmarks/results/`, named
`<bench>-<date>-<device>.json`, which `benchmarks/report.py` turns into docs/perf.md's
current tables.

    from results import record, run_recorded
    record("gemm", columns, rows)                 # one table (device and versions filled in)
    sys.exit(run_recorded("gemm", main))          # main's printed markdown tables, recorded

A file holds `{"schema": SCHEMA, "bench", "date", "device", "versions", "command",
"tables": [{"title", "columns", "rows"}], "source"}`; cells are the printed strings.
`--no-record` on a benchmark's command line (or TAWAC_BENCH_RECORD=0) writes nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SCHEMA = "tawac-bench/1"


def slug(text: str) -> str:
    """A device name as a file-name part: `NVIDIA H100 80GB HBM3` -> `h100-80gb-hbm3`."""
    s = re.sub(r"^nvidia ", "", text.strip().lower())
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "unknown"


def device_name() -> str:
    """The CUDA device's name, or `cpu` where there is none (or no torch)."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name()
    except ImportError:
        pass
    return "cpu"


def versions() -> dict[str, str]:
    """torch, triton, CUDA and the checkout's commit, where each is present."""
    out: dict[str, str] = {}
    with contextlib.suppress(ImportError):
        import torch

        out["torch"] = torch.__version__
        out["cuda"] = str(torch.version.cuda)
    with contextlib.suppress(ImportError):
        import triton

        out["triton"] = triton.__version__
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        if rev.returncode == 0:
            out["tawac"] = rev.stdout.strip()
    return out


def document(
    bench: str,
    tables: Sequence[dict[str, Any]],
    *,
    date: str,
    device: str,
    versions: dict[str, str],
    command: str,
    source: str = "run",
) -> dict[str, Any]:
    """The JSON document of one run (cells as strings, in the order given)."""
    return {
        "schema": SCHEMA,
        "bench": bench,
        "date": date,
        "device": device,
        "versions": dict(sorted(versions.items())),
        "command": command,
        "source": source,
        "tables": [
            {
                "title": t.get("title", ""),
                "columns": [str(c) for c in t["columns"]],
                "rows": [[str(c) for c in row] for row in t["rows"]],
            }
            for t in tables
        ],
    }


def write(doc: dict[str, Any], out_dir: Path = RESULTS) -> Path:
    """Writes `doc` to `<bench>-<date>-<device>.json` under `out_dir` (a second run of the
    day on the same device replaces the first)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{doc['bench']}-{doc['date']}-{slug(doc['device'])}.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return path


def enabled() -> bool:
    return os.environ.get("TAWAC_BENCH_RECORD", "1") != "0" and "--no-record" not in sys.argv


def _command() -> str:
    return " ".join(["python3", *sys.argv]).replace(str(ROOT) + "/", "")


def record_tables(bench: str, tables: Sequence[dict[str, Any]]) -> Path | None:
    """Records `tables` (each `{"title", "columns", "rows"}`) for this run: today's date,
    this device, these versions. Nothing is written without a table or when disabled."""
    if not tables or not enabled():
        return None
    doc = document(
        bench,
        tables,
        date=datetime.date.today().isoformat(),
        device=device_name(),
        versions=versions(),
        command=_command(),
    )
    path = write(doc)
    print(f"recorded {path.relative_to(ROOT)}", file=sys.stderr)
    return path


def record(bench: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = ""):
    """Records one table (see `record_tables`)."""
    return record_tables(bench, [{"title": title, "columns": columns, "rows": rows}])


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_tables(text: str) -> list[dict[str, Any]]:
    """The markdown tables in printed text, each with the nearest line above it as its
    title (`### ` and `# ` stripped); `# ` note lines between two rows are skipped."""
    lines = text.splitlines()
    tables: list[dict[str, Any]] = []
    i = 0
    while i < len(lines):
        sep = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if lines[i].lstrip().startswith("|") and re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*", sep):
            title = next((t.strip() for t in reversed(lines[:i]) if t.strip()), "")
            title = re.sub(r"^#+\s*", "", title)
            rows = []
            j = i + 2
            while j < len(lines):
                if lines[j].lstrip().startswith("|"):
                    rows.append(_cells(lines[j]))
                    j += 1
                    continue
                # A benchmark's `# ...` note between two rows of its table.
                k = j
                while k < len(lines) and lines[k].startswith("# "):
                    k += 1
                nxt = lines[k + 1].strip() if k + 1 < len(lines) else ""
                if k == j or k == len(lines) or not lines[k].lstrip().startswith("|"):
                    break
                if re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*", nxt):
                    break
                j = k
            tables.append({"title": title, "columns": _cells(lines[i]), "rows": rows})
            i = j
        else:
            i += 1
    return tables


class _Tee(io.TextIOBase):
    def __init__(self, stream):
        self.stream, self.buffer_ = stream, io.StringIO()

    def write(self, s: str) -> int:
        self.buffer_.write(s)
        return self.stream.write(s)

    def flush(self) -> None:
        self.stream.flush()


def run_recorded(bench: str, main: Callable[[], Any], printed: bool = True) -> Any:
    """Runs `main` with its output printed as before and, after it, records the markdown
    tables it printed (see `record_tables`); with `printed=False` the benchmark records its
    own table (`record`). `--no-record` is taken off `sys.argv` first."""
    on = enabled()
    if "--no-record" in sys.argv:
        sys.argv.remove("--no-record")
    if not on:
        os.environ["TAWAC_BENCH_RECORD"] = "0"
    if not printed:
        return main()
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        status = main()
    if on:
        record_tables(bench, markdown_tables(tee.buffer_.getvalue()))
    return status
