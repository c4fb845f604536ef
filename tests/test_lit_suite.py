"""Runs the FileCheck (lit) suite under tests/filecheck as part of pytest, in shards the
test workers run in parallel (each shard's failures name their FileCheck files)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parent / "filecheck"
FILES = sorted(
    p for p in SUITE.rglob("*") if p.suffix in (".mlir", ".test") and "Inputs" not in p.parts
)
SHARDS = 8


def _lit() -> list[str]:
    lit = shutil.which("lit")
    return [lit] if lit is not None else [sys.executable, "-m", "lit.main"]


def test_every_filecheck_file_is_in_a_shard():
    assert len(FILES) >= 50
    assert sorted(f for k in range(SHARDS) for f in FILES[k::SHARDS]) == FILES


@pytest.mark.parametrize("shard", range(SHARDS))
def test_filecheck_suite(shard):
    files = FILES[shard::SHARDS]
    proc = subprocess.run([*_lit(), "-q", "-j1", *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]
