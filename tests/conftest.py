"""Session-wide test settings."""

from __future__ import annotations

import compileall
import gc
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest

# The solver planner's answers and compiled kernels are cached on disk: the tests (and
# the FileCheck suite they start) use a fresh folder of their own, made once by the
# process that starts the test workers (they inherit it), so a stale cache cannot hide a
# change and the tests do not write into the user's cache.
os.environ.setdefault("TAWAC_CACHE_DIR", tempfile.mkdtemp(prefix="tawac-cache-"))

# One CPU thread for torch per test worker (and per process a test starts): the workers
# already use every core, and torch's own pool of one thread per core on top of them
# spun on a loaded machine: the interpreter's runs of the Triton attention tutorial took
# 6.3 s of CPU with two threads against 0.7 s with one, on the 2-core VM.
os.environ.setdefault("OMP_NUM_THREADS", "1")

PACKAGE = Path(__file__).resolve().parent.parent / "tawac"


def pytest_configure(config):
    if "torch" in sys.modules:  # imported before this file (a plugin): too late for the env
        sys.modules["torch"].set_num_threads(1)
    # Every `tawac` subprocess of the suite (lit's RUN lines, the command-line tests)
    # imports the compiler; where Python writes no bytecode (PYTHONDONTWRITEBYTECODE),
    # each would compile tawac's sources again (about 0.1 s a process). Compile them once.
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):
        compileall.compile_dir(str(PACKAGE), quiet=1)


def pytest_collection_finish(session):
    """Python's cyclic collector tuned for a test worker: the modules, torch and the
    collected tests (some 220,000 objects that live to the end) frozen out of every
    collection, and the collections made rarer. A kernel's compile allocates hundreds of
    thousands of ops, values and uses and keeps most until it ends, so at the default
    thresholds (700, 10, 10) a worker started a full collection every few compiles, each
    walking the whole heap: 17% of `test_variants`' time on the 2-core VM, 9% with these."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def _has_ortools() -> bool:
    try:
        return importlib.util.find_spec("ortools.sat.python.cp_model") is not None
    except (ImportError, ValueError):
        return False


#: Tests that take many seconds each: handed out first, so that the workers do not end
#: waiting for one of them.
LONG = (
    "test_fuzz.py::",
    "test_triton_tuning.py::test_the_shipped_table_runs",
    "test_convert_ttir.py::test_mutated_ttir",
    "test_variants.py::test_variants_compute_what_the_program_computes[examples/triton/",
)


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not any(mark in item.nodeid for mark in LONG))
    if _has_ortools():
        return
    skip = pytest.mark.skip(reason="needs OR-Tools (pip install 'tawac[solver]')")
    for item in items:
        if "solver" in item.keywords:
            item.add_marker(skip)
