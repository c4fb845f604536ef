"""Runs the FileCheck (lit) suite under tests/filecheck as part of pytest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SUITE = Path(__file__).resolve().parent / "filecheck"


def test_filecheck_suite():
    lit = shutil.which("lit")
    cmd = [lit] if lit is not None else [sys.executable, "-m", "lit.main"]
    proc = subprocess.run([*cmd, "-q", "-j2", str(SUITE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]
