"""The command line's one compile path through the compile cache: `tawac compile` writes
the same bytes on a hit as on a miss (.ptx, .cubin, the .json sidecar, `-v`'s ptxas
report), `-v` says `cache: hit`, `miss` or `off`, `--no-cache` and `TAWAC_CACHE=0` turn it
off, a failed compile leaves no entry, a warm compile in a fresh process loads neither
xDSL nor rich, `tawac run` and `tawac tune` compile through it, and eight processes
compiling one kernel at once leave one valid entry and no partial file.

Every test keeps its cache in its own `tmp_path` (`TAWAC_CACHE_DIR`)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tawac import driver
from tawac.support.ptxas import locate_ptxas
from tawac.tools import cli

REPO = Path(__file__).resolve().parent.parent
GEMM = REPO / "examples" / "gemm.mlir"


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A fresh cache folder, the cache on, the default planner."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("TAWAC_CACHE_DIR", str(folder))
    monkeypatch.delenv("TAWAC_CACHE", raising=False)
    monkeypatch.delenv("TAWAC_SCHEDULE", raising=False)
    return folder


def _entries(root: Path) -> list[str]:
    folder = root / "kernels"
    return sorted(os.listdir(folder)) if folder.exists() else []


def _compile(out: Path, *args: str, source: Path = GEMM):
    """`tawac compile source -o out -v args` in this process: (result, outputs' bytes)."""
    res = CliRunner().invoke(cli.main, ["compile", str(source), "-o", str(out), "-v", *args])
    assert res.exit_code == 0, (res.output, res.stderr)
    return res, (out.read_bytes(), out.with_suffix(".json").read_bytes())


@pytest.mark.parametrize("suffix", [".ptx", ".cubin"])
def test_hit_writes_what_the_miss_wrote(root, tmp_path, monkeypatch, suffix):
    """Miss, hit, --no-cache and TAWAC_CACHE=0: the same kernel file, sidecar and ptxas
    report, byte for byte; `-v` says which it was on stderr."""
    if suffix == ".cubin" and locate_ptxas() is None:
        pytest.skip("no ptxas")
    cold, cold_files = _compile(tmp_path / f"cold{suffix}")
    assert cold.stderr == "cache: miss\n"
    assert len(_entries(root)) == 1
    warm, warm_files = _compile(tmp_path / f"warm{suffix}")
    assert warm.stderr == "cache: hit\n"
    assert warm_files == cold_files and warm.stdout == cold.stdout
    if suffix == ".cubin":
        assert cold.stdout.startswith("ptxas info") and cold_files[0].startswith(b"\x7fELF")
    else:
        assert cold.stdout == "" and b".entry" in cold_files[0]
    assert json.loads(cold_files[1])["target"] == "sm_90a"
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    off, off_files = _compile(tmp_path / f"off{suffix}", "--no-cache")
    assert off.stderr == "cache: off\n" and off_files == cold_files
    monkeypatch.setenv("TAWAC_CACHE", "0")
    env_off, env_files = _compile(tmp_path / f"env{suffix}")
    assert env_off.stderr == "cache: off\n" and env_files == cold_files
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == before  # nothing written


def test_without_verbose_nothing_is_said(root, tmp_path):
    out = tmp_path / "k.ptx"
    for _ in range(2):
        res = CliRunner().invoke(cli.main, ["compile", str(GEMM), "-o", str(out)])
        assert res.exit_code == 0 and res.output == "" and res.stderr == ""


def test_failed_compile_leaves_no_entry(root, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("tile.kernel @k( {\n")
    outdir = tmp_path / "out"
    outdir.mkdir()
    for _ in range(2):  # the second attempt fails the same way: nothing was stored
        res = CliRunner().invoke(cli.main, ["compile", str(bad), "-o", str(outdir / "k.ptx")])
        assert res.exit_code == 1
        assert res.stderr.startswith(f"{bad}:1:") and res.stderr.count("\n") == 1
    assert list(outdir.iterdir()) == []
    assert _entries(root) == []


WARM = """
import json, sys
from tawac.tools.cli import main
try:
    main(sys.argv[1:], prog_name="tawac")
except SystemExit as e:
    code = e.code
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("xdsl", "rich"))
Path = __import__("pathlib").Path
Path(sys.argv[-1]).with_suffix(".modules").write_text(
    json.dumps({"code": code, "loaded": loaded, "core": "tawac.compiler" in sys.modules})
)
"""


def test_warm_compile_in_a_fresh_process_loads_no_compiler(root, tmp_path):
    """A hit in a new process (the console script's path): the outputs of the cold
    compile, and neither xDSL, the compiler core nor rich imported."""
    cold, cold_files = _compile(tmp_path / "cold.ptx")
    out = tmp_path / "warm.ptx"
    # a process: what a fresh interpreter imports on a warm compile is the subject
    proc = subprocess.run(
        [sys.executable, "-c", WARM, "compile", str(GEMM), "-v", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stderr == "cache: hit\n", proc.stderr
    assert (out.read_bytes(), out.with_suffix(".json").read_bytes()) == cold_files
    modules = json.loads(out.with_suffix(".modules").read_text())
    assert modules == {"code": 0, "loaded": [], "core": False}


# -- eight processes at once ------------------------------------------------------------------


def _child(source: str, barrier, out: str) -> None:
    """Compile `source` to PTX through the cache once every child is ready."""
    barrier.wait(timeout=120)
    k = driver.compile_cached(source, cubin=False)
    Path(out).write_text(json.dumps({"ptx": k.ptx, "key": k.key, "cache": k.cache}))


def test_eight_processes_leave_one_entry(root, tmp_path):
    """Eight processes compile one kernel (for real, to PTX) at once: each gets the
    kernel, and the cache holds exactly one valid entry and no temporary file."""
    import tawac.compiler  # noqa: F401  (loaded before forking: the children compile at once)

    # processes: concurrent writers of one cache entry (fork) are the subject
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(8)
    outs = [tmp_path / f"child{i}.json" for i in range(8)]
    children = [ctx.Process(target=_child, args=(str(GEMM), barrier, str(out))) for out in outs]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=300)
    assert [c.exitcode for c in children] == [0] * 8
    got = [json.loads(out.read_text()) for out in outs]
    assert len({(g["ptx"], g["key"]) for g in got}) == 1
    assert "miss" in {g["cache"] for g in got}
    key = got[0]["key"]
    found = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    # the default planner (auto) runs the solver, whose answers have a folder of their own
    solved = [p for p in found if p.startswith("solver/")]
    assert all(p.endswith(".json") and p.count(".") == 1 for p in solved), solved
    assert [p for p in found if p != "solver" and p not in solved] == [
        "kernels",
        f"kernels/{key}.tawac",
    ]
    again = driver.compile_cached(GEMM, cubin=False)
    assert again.hit and again.key == key and again.ptx == got[0]["ptx"]


# -- run and tune -----------------------------------------------------------------------------


def test_run_compiles_through_the_cache(root, tmp_path, monkeypatch):
    """`tawac run` (its GPU part faked): the cubin from the driver's path, a hit the
    second time, `--no-cache` off; the reference's kernel parsed from the source."""
    import tawac.runtime.runner as runner

    seen = []

    def run_kernel_file(path, dims, dtype, compile_fn, check=True, rep_ms=100.0):
        cubin, sidecar, op = compile_fn(path)
        seen.append((cubin, sidecar, op.kernel_name))
        return {"ok": True}

    monkeypatch.setattr(cli, "_require_gpu", lambda: None)
    monkeypatch.setattr(runner, "run_kernel_file", run_kernel_file)
    compiled = []
    real = driver._compile

    def counting(*args, **kwargs):
        compiled.append(kwargs["cubin"])
        return real(*args, **kwargs)

    monkeypatch.setattr(driver, "_compile", counting)
    if locate_ptxas() is None:
        pytest.skip("no ptxas")
    args = ["run", str(GEMM), "--size", "M=256,N=256,K=256"]
    for extra in ([], [], ["--no-cache"]):
        res = CliRunner().invoke(cli.main, [*args, *extra])
        assert res.exit_code == 0, (res.output, res.stderr)
    assert compiled == [True, True]  # the first and the --no-cache run
    assert len(_entries(root)) == 1
    assert seen[0] == seen[1] == seen[2]
    assert seen[0][0].startswith(b"\x7fELF") and seen[0][2] == "gemm"


def _recording_compile(source, params, options, use_cache=True):
    """A `tawac tune` compile function that says how it was called."""
    raise RuntimeError(f"use_cache={use_cache}")


def test_tune_no_cache(root, tmp_path, monkeypatch):
    import tawac.tools.tune as tn

    monkeypatch.setattr(tn, "compile_candidate", _recording_compile)
    args = ["tune", str(GEMM), "--space", "stages=3", "--compile-only", "-j", "1"]
    res = CliRunner().invoke(cli.main, args)
    assert "use_cache=True" in res.output
    res = CliRunner().invoke(cli.main, [*args, "--no-cache"])
    assert "use_cache=False" in res.output


@pytest.mark.parametrize("command", ["compile", "run", "tune"])
def test_help_shows_no_cache(command):
    res = CliRunner().invoke(cli.main, [command, "--help"])
    assert res.exit_code == 0 and "--no-cache" in res.output
