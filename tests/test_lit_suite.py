"""The FileCheck suite under tests/filecheck, one test per file, run in this process
(tests/filecheck_inprocess.py: `tawac` through click's test runner, `filecheck` through
its matcher), and real lit on a sample of files, so that lit.cfg and the process
boundary stay tested too. `lit -v tests/filecheck` runs the whole suite the lit way."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filecheck_inprocess import RunLineError, parse, run_file, run_lines, substitute

SUITE = Path(__file__).resolve().parent / "filecheck"
FILES = sorted(
    p for p in SUITE.rglob("*") if p.suffix in (".mlir", ".test") and "Inputs" not in p.parts
)
#: Files real lit runs (process per command): one of each kind of RUN line (an error
#: checked with `not ... 2>&1`, a round trip through a pipe, a compile to a file read
#: back with `<`, a `python3 -c` stage).
LIT_SAMPLE = (
    "dialects/aref-invalid.mlir",
    "dialects/tile-roundtrip.mlir",
    "passes/convert-to-ptx-pair-store.mlir",
)


def _lit() -> list[str]:
    lit = shutil.which("lit")
    return [lit] if lit is not None else [sys.executable, "-m", "lit.main"]


def test_the_suite_is_found():
    assert len(FILES) >= 70


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(SUITE)) for p in FILES])
def test_filecheck_file(path, tmp_path):
    run = run_file(path, tmp_path / f"{path.name}.tmp")
    if run.skipped:
        pytest.skip(run.skipped)
    assert run.ok, "\n".join(run.log)[-20000:]


def test_lit_runs_the_suite_files():
    files = [SUITE / f for f in LIT_SAMPLE]
    assert all(f.exists() for f in files), [str(f) for f in files if not f.exists()]
    proc = subprocess.run([*_lit(), "-q", "-j1", *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]


# --- the in-process runner itself -----------------------------------------------------------


def test_every_run_line_is_understood():
    for path in FILES:
        for line in run_lines(path):
            assert parse(substitute(line, path, Path("/tmp/x.tmp"))), (path, line)


def test_a_failing_check_fails(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "// RUN: tawac opt %s | filecheck %s\n"
        "// CHECK: tile.kernel @nope\n"
        "tile.kernel @k() {\n  tile.return\n}\n"
    )
    run = run_file(bad, tmp_path / "bad.tmp")
    assert not run.ok
    assert any("nope" in line for line in run.log), run.log


def test_not_inverts_and_2_and_1_merges(tmp_path):
    f = tmp_path / "err.mlir"
    f.write_text(
        "// RUN: not tawac opt %s 2>&1 | filecheck %s\n// CHECK: error:\ntile.kernel @k( {\n"
    )
    assert run_file(f, tmp_path / "err.tmp").ok
    f.write_text("// RUN: tawac opt %s 2>&1 | filecheck %s\n// CHECK: error:\ntile.kernel @k( {\n")
    assert not run_file(f, tmp_path / "err.tmp").ok


def test_unsupported_shell_is_an_error():
    with pytest.raises(RunLineError):
        parse("tawac opt x || true")
