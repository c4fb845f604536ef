"""`tawac compile` failures, through the real command line (subprocess).

Each failure must be exactly one diagnostic line on stderr (`file:line:col: error: ...`
where the input has a position), a non-zero exit (1: the user's error; 2 would be an
internal compiler error), no Python traceback, and no output file at all: neither the
.ptx/.cubin nor the .json sidecar, nor a leftover temporary file.

Each kind of error runs as a process at both entry points (the console script and
`python -m`): exit statuses and "no traceback" are properties of the process. Where one
kind is checked on many inputs, a few inputs run per entry point as processes and the
rest in this process (tests/cli_inprocess.py, the same assertions: an escaped exception
is a traceback and exit 1 there too), which saves a Python start and xDSL's import each.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_inprocess import tawac

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# The two ways to run the CLI: the console script and the module.
TAWAC = shutil.which("tawac")
RUNNERS = {
    "tawac": [TAWAC] if TAWAC else None,
    "python -m tawac.tools.cli": [sys.executable, "-m", "tawac.tools.cli"],
}
#: `tawac` run in this process (`_compile` with it calls tests/cli_inprocess.py).
IN_PROCESS = ["in process"]

GEMM_HEAD = """\
tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
"""
# Line 13 onwards.
GEMM_LOOP = (
    "    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>\n"
    "    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, "
    "tensor<128x64xbf16> -> tensor<128x128xf32>\n"
    "    scf.yield %d : tensor<128x128xf32>\n"
    "  }\n"
)
# Line 17 onwards: the epilogue.
EPILOGUE = """\
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
"""
GEMM = GEMM_HEAD + GEMM_LOOP + EPILOGUE


def _env(**overrides: str | None) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("TAWAC_PTXAS", "TAWAC_DEBUG", "FORCE_COLOR", "CLICOLOR_FORCE"):
        env.pop(var, None)
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def _compile(runner, src: Path, out: Path, env=None, extra=()):
    if runner is IN_PROCESS:
        # the paths are absolute: the process's cwd (src.parent) changes nothing
        args = ["compile", str(src), "-o", str(out), *extra]
        return tawac(args, env=_inprocess_env(env or _env()))
    # a process: its exit status, its stderr and "no traceback" at an entry point
    cmd = [*runner, "compile", str(src), "-o", str(out), *extra]
    return subprocess.run(
        cmd, capture_output=True, text=True, env=env or _env(), timeout=120, cwd=src.parent
    )


def _inprocess_env(env: dict[str, str]) -> dict[str, str | None]:
    """`env` (a whole environment, as `_env` makes it) as the changes to this process's
    environment that give it: what it sets, and None for what it lacks."""
    changes: dict[str, str | None] = {k: None for k in os.environ if k not in env}
    changes.update({k: v for k, v in env.items() if os.environ.get(k) != v})
    return changes


def _runner(name: str):
    if name == "in process":
        return IN_PROCESS
    cmd = RUNNERS[name]
    if cmd is None:
        pytest.skip("the `tawac` console script is not on PATH")
    return cmd


@pytest.fixture(params=list(RUNNERS))
def runner(request):
    return _runner(request.param)


def _turns(values: list) -> list[tuple]:
    """Each of `values` once in this process, and as processes taking turns at the two
    entry points (each entry point runs one at least)."""
    entries = list(RUNNERS)
    return [(v, entries[i % len(entries)]) for i, v in enumerate(values)] + [
        (v, "in process") for v in values
    ]


def _assert_one_diagnostic(proc, outdir: Path, pattern: str) -> str:
    """One line on stderr matching `pattern`, exit 1, no traceback, nothing written."""
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both, both
    assert proc.returncode == 1, (proc.returncode, both)
    assert "\x1b[" not in proc.stderr, "colour codes on a non-terminal stderr"
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert proc.stdout.strip() == "", proc.stdout
    assert re.fullmatch(pattern, lines[0]), (pattern, lines[0])
    assert sorted(p.name for p in outdir.iterdir()) == [], "output written on failure"
    return lines[0]


def _write(tmp_path: Path, text: str, name: str = "kernel.mlir") -> tuple[Path, Path]:
    src = tmp_path / name
    src.write_text(text)
    outdir = tmp_path / "out"
    outdir.mkdir()
    return src, outdir


def _loc(src: Path, line: int, col: int | None = None) -> str:
    return re.escape(f"{src}:{line}:") + (str(col) if col is not None else r"\d+") + ":"


# --- errors in the input ---------------------------------------------------------------------

CASES = {
    # name: (source text, line, column or None, message regex)
    "malformed": (
        GEMM.replace("%x = tile.load %a[%m0, %k] :", "%x = tile.load %a[%m0, %k :"),
        12,
        31,
        r" error: ']' expected",
    ),
    "missing-colon": (
        GEMM.replace("%K = tile.dim %a[1] :", "%K = tile.dim %a[1]"),
        9,
        23,
        r" error: Expected ':'",
    ),
    "shape-mismatch": (
        GEMM.replace(
            "-> tensor<128x64xbf16>\n    %d",
            "-> tensor<128x32xbf16>\n    %d",
        ).replace(
            "tensor<128x64xbf16>, tensor<128x64xbf16> ->",
            "tensor<128x64xbf16>, tensor<128x32xbf16> ->",
        ),
        14,
        None,
        r" error: tile\.dot: contraction sizes differ: lhs tensor<128x64xbf16> has K=64, "
        r"rhs tensor<128x32xbf16> has K=32",
    ),
    "dtype-mismatch": (
        GEMM.replace("%b: !tile.tensor<?x?xbf16>", "%b: !tile.tensor<?x?xf16>")
        .replace(
            "%y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>",
            "%y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf16> -> tensor<128x64xf16>",
        )
        .replace(
            "tensor<128x64xbf16>, tensor<128x64xbf16> ->",
            "tensor<128x64xbf16>, tensor<128x64xf16> ->",
        ),
        14,
        None,
        r" error: tile\.dot: operand element types differ: tensor<128x64xbf16> vs "
        r"tensor<128x64xf16>",
    ),
    "load-element-type": (
        GEMM.replace("%b: !tile.tensor<?x?xbf16>", "%b: !tile.tensor<?x?xf16>")
        .replace(
            "%x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>",
            "%x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xf16>",
        )
        .replace(
            "%y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>",
            "%y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf16> -> tensor<128x64xf16>",
        )
        .replace(
            "tensor<128x64xbf16>, tensor<128x64xbf16> ->",
            "tensor<128x64xf16>, tensor<128x64xf16> ->",
        ),
        12,
        10,
        r" error: tile\.load: element type mismatch: tile tensor<128x64xf16> vs global "
        r"!tile\.tensor<\?x\?xbf16>",
    ),
    "unknown-op": (
        GEMM.replace("  %o = arith.truncf", "  tile.fence %acc\n  %o = arith.truncf"),
        17,
        None,
        r" error: Operation tile\.fence is not registered",
    ),
    # An unknown op without operands is reported at its name, not at the next token.
    "unknown-op-no-operands": pytest.param(
        GEMM.replace("  tile.return\n", "  tile.fence\n  tile.return\n"),
        19,
        None,
        r" error: Operation tile\.fence is not registered",
    ),
    "math-sin-epilogue": (
        GEMM_HEAD
        + GEMM_LOOP
        + "  %e = math.sin %acc : tensor<128x128xf32>\n"
        + EPILOGUE.replace("arith.truncf %acc", "arith.truncf %e"),
        17,
        None,
        r" error: .*'math\.sin' is not supported.*",
    ),
    "math-cos-epilogue": (
        GEMM_HEAD
        + GEMM_LOOP
        + "  %e = math.cos %acc : tensor<128x128xf32>\n"
        + EPILOGUE.replace("arith.truncf %acc", "arith.truncf %e"),
        17,
        None,
        r" error: .*'math\.cos' is not supported.*",
    ),
    "no-dot-no-load": (
        """\
tile.kernel @fill(%c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = arith.constant dense<1.0> : tensor<64x64xf32>
  tile.store %x, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}
""",
        1,
        1,
        r" error: warp-specialize: a kernel without MMAs needs a 2-d tile\.load.*",
    ),
}


# The first cases take turns at the two entry points as processes, one to .cubin and one
# to .ptx (input errors stop before ptxas, so each case once; the other tests below run
# both entry points); the rest, the same assertions on other inputs, run in this process.
ENTRY_POINTS = [("tawac", ".cubin"), ("python -m tawac.tools.cli", ".ptx")]
AS_PROCESSES = 4
IN_PROCESS_ENTRY = [("in process", ".cubin"), ("in process", ".ptx")]


def _case_params():
    for i, (name, case) in enumerate(CASES.items()):
        turns = ENTRY_POINTS if i < AS_PROCESSES else IN_PROCESS_ENTRY
        entry = turns[i % len(turns)]
        if hasattr(case, "marks"):  # a pytest.param
            yield pytest.param(*case.values, *entry, marks=case.marks, id=name)
        else:
            yield pytest.param(*case, *entry, id=name)


def test_cases_take_turns_at_both_entry_points():
    used = [p.values[-2:] for p in _case_params()]
    assert set(used[:AS_PROCESSES]) == set(ENTRY_POINTS)
    assert set(used[AS_PROCESSES:]) == set(IN_PROCESS_ENTRY)


@pytest.mark.parametrize(
    ("text", "line", "col", "msg", "runner_name", "suffix"), list(_case_params())
)
def test_input_error(text, line, col, msg, runner_name, suffix, tmp_path):
    runner = _runner(runner_name)
    src, outdir = _write(tmp_path, text)
    proc = _compile(runner, src, outdir / f"k{suffix}")
    _assert_one_diagnostic(proc, outdir, _loc(src, line, col) + msg)


def test_missing_source(tmp_path, runner):
    outdir = tmp_path / "out"
    outdir.mkdir()
    src = tmp_path / "nope.mlir"
    proc = _compile(runner, src, outdir / "k.ptx")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "nope.mlir" in proc.stderr
    assert list(outdir.iterdir()) == []


def test_bad_output_suffix(tmp_path, runner):
    src, outdir = _write(tmp_path, GEMM)
    proc = _compile(runner, src, outdir / "k.o")
    _assert_one_diagnostic(proc, outdir, r"error: output must end in \.ptx or \.cubin, got .*")


def test_output_folder_missing(tmp_path, runner):
    src, outdir = _write(tmp_path, GEMM)
    proc = _compile(runner, src, outdir / "sub" / "k.ptx")
    _assert_one_diagnostic(proc, outdir, r"error: output folder .* does not exist")


# --- ptxas -------------------------------------------------------------------------------------


def test_ptxas_missing_env(tmp_path, runner):
    """TAWAC_PTXAS names a file that does not exist."""
    src, outdir = _write(tmp_path, GEMM)
    env = _env(TAWAC_PTXAS=str(tmp_path / "no-such-ptxas"))
    proc = _compile(runner, src, outdir / "k.cubin", env=env)
    line = _assert_one_diagnostic(proc, outdir, r"error: .*ptxas.*")
    assert "no-such-ptxas" in line


def _wheel_ptxas() -> list[Path]:
    """Where tawac.driver.find_ptxas looks after PATH and CUDA_HOME (pip wheels)."""
    found = []
    for site in sys.path:
        for sub in ("nvidia/cu13/bin/ptxas", "nvidia/cuda_nvcc/bin/ptxas"):
            if (Path(site) / sub).is_file():
                found.append(Path(site) / sub)
    return found


def _run_without_ptxas(tmp_path, runner=RUNNERS["python -m tawac.tools.cli"]):
    if _wheel_ptxas():
        pytest.skip(f"a ptxas wheel is importable ({_wheel_ptxas()[0]}); it would be found")
    src, outdir = _write(tmp_path, GEMM)
    empty = tmp_path / "bin"
    empty.mkdir()
    env = _env(PATH=str(empty), CUDA_HOME=None, CUDA_PATH=None)
    proc = _compile(runner, src, outdir / "k.cubin", env=env)
    return proc, outdir


def test_ptxas_not_found(tmp_path):
    """No ptxas on PATH, no CUDA_HOME/CUDA_PATH, no TAWAC_PTXAS: one diagnostic saying so."""
    proc, outdir = _run_without_ptxas(tmp_path)
    _assert_one_diagnostic(
        proc, outdir, r"error: ptxas not found: put it on PATH, set CUDA_HOME, or .*"
    )


def test_ptxas_not_found_hint_is_intact(tmp_path):
    # in this process: test_ptxas_not_found runs the same as a process
    proc, outdir = _run_without_ptxas(tmp_path, IN_PROCESS)
    _assert_one_diagnostic(
        proc,
        outdir,
        r"error: ptxas not found: put it on PATH, set CUDA_HOME, or `pip install tawac\[ptxas\]`",
    )


def test_ptxas_not_needed_for_ptx(tmp_path):
    """Compiling to .ptx does not look for ptxas."""
    src, outdir = _write(tmp_path, GEMM)
    env = _env(TAWAC_PTXAS=str(tmp_path / "no-such-ptxas"))
    proc = _compile(IN_PROCESS, src, outdir / "k.ptx", env=env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in outdir.iterdir()) == ["k.json", "k.ptx"]


def test_ptxas_fails(tmp_path, runner):
    """ptxas exits 1 after printing an error: its first line is reported, nothing written."""
    fake = tmp_path / "fake-ptxas"
    fake.write_text(
        "#!/bin/sh\n"
        "echo \"ptxas fatal   : Unresolved extern function 'frobnicate'\" >&2\n"
        "echo 'second line' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    src, outdir = _write(tmp_path, GEMM)
    proc = _compile(runner, src, outdir / "k.cubin", env=_env(TAWAC_PTXAS=str(fake)))
    _assert_one_diagnostic(
        proc,
        outdir,
        r"error: ptxas failed \(exit 1\): ptxas fatal   : Unresolved extern function "
        r"'frobnicate'",
    )


def test_ptxas_option_fails(tmp_path):
    """--ptxas names the failing executable."""
    fake = tmp_path / "fake-ptxas"
    fake.write_text("#!/bin/sh\necho 'ptxas error: boom' >&2\nexit 3\n")
    fake.chmod(0o755)
    src, outdir = _write(tmp_path, GEMM)
    proc = _compile(IN_PROCESS, src, outdir / "k.cubin", extra=("--ptxas", str(fake)))
    _assert_one_diagnostic(proc, outdir, r"error: ptxas failed \(exit 3\): ptxas error: boom")


# --- file names that look like console markup ---------------------------------------------------


@pytest.mark.parametrize("folder", ["kernels[v2]", "run[/x]"])
def test_diagnostic_keeps_path_with_brackets(tmp_path, folder):
    d = tmp_path / folder
    d.mkdir(parents=True)
    src, outdir = _write(d, GEMM.replace("  tile.return\n", "  tile.fence\n  tile.return\n"))
    for no_color in ("1", None):
        for p in outdir.iterdir():
            p.unlink()
        proc = _compile(IN_PROCESS, src, outdir / "k.ptx", env=_env(NO_COLOR=no_color))
        _assert_one_diagnostic(
            proc, outdir, _loc(src, 19) + r" error: Operation tile\.fence is not registered"
        )


# --- success ------------------------------------------------------------------------------------

SIDECAR_KEYS = {
    "format",
    "kernel",
    "target",
    "block",
    "cluster",
    "dynamic_smem",
    "grid",
    "args",
    "params",
}


@pytest.mark.parametrize(
    ("runner_name", "suffix"),
    # a success at each entry point as a process, each output kind in this process
    [
        ("tawac", ".cubin"),
        ("python -m tawac.tools.cli", ".ptx"),
        ("in process", ".ptx"),
        ("in process", ".cubin"),
    ],
)
def test_compile_gemm_example(tmp_path, runner_name, suffix):
    runner = _runner(runner_name)
    out = tmp_path / f"gemm{suffix}"
    proc = _compile(runner, EXAMPLES / "gemm.mlir", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, "gemm.json"])
    data = out.read_bytes()
    if suffix == ".cubin":
        assert data[:4] == b"\x7fELF"
    else:
        text = data.decode()
        assert ".target sm_90a" in text
        assert ".visible .entry gemm(" in text
    side = json.loads((tmp_path / "gemm.json").read_text())
    assert SIDECAR_KEYS <= set(side)
    assert side["format"] == 1
    assert side["kernel"] == "gemm"
    assert side["target"] == "sm_90a"
    assert side["block"][0] % 128 == 0 and side["block"][1:] == [1, 1]
    assert side["cluster"] == [1, 1, 1]
    assert isinstance(side["dynamic_smem"], int) and 0 < side["dynamic_smem"] <= 232448
    program_grid = [
        {"cdiv": {"arg": "c", "dim": 0}, "by": 128},
        {"cdiv": {"arg": "c", "dim": 1}, "by": 256},
        {"const": 1},
    ]
    assert len(side["grid"]) == 3
    if "persistent" in side["grid"][0]:  # a persistent kernel: the logical grid is separate
        assert side["program_grid"] == program_grid
    else:
        assert side["grid"] == program_grid
    assert [a["name"] for a in side["args"]] == ["a", "b", "c"]
    for a in side["args"]:
        assert a["kind"] == "tensor" and a["dtype"] == "bf16" and a["rank"] == 2
    assert side["args"][0]["dims"] == ["M", "K"]
    kinds = {p["kind"] for p in side["params"]}
    assert "tensor_map" in kinds
    for p in side["params"]:
        assert p["arg"] in {"a", "b", "c"}
        if p["kind"] == "tensor_map":
            assert p["swizzle"] == "128B" and len(p["box"]) == 2


def test_compile_verbose_prints_ptxas_report(tmp_path):
    out = tmp_path / "gemm.cubin"
    proc = _compile(IN_PROCESS, EXAMPLES / "gemm.mlir", out, extra=("-v",))
    assert proc.returncode == 0, proc.stderr
    assert "Compiling entry function 'gemm' for 'sm_90a'" in proc.stdout
    assert "0 bytes spill stores, 0 bytes spill loads" in proc.stdout


def test_run_without_gpu_is_one_clear_error():
    """`tawac run` on a machine without a Hopper GPU: one line, exit 1, no traceback."""
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the error path is not reachable")
    # a process: the console script's exit status and stderr are the subject
    proc = subprocess.run(
        ["tawac", "run", str(EXAMPLES / "gemm.mlir"), "--size", "M=64,N=64,K=64"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "needs" in lines[0], proc.stderr


# --- errors in a .ttir (Triton's IR) -----------------------------------------------------------

TRITON = EXAMPLES / "triton"


def _zero_extent(name: str, old: str, new: str) -> tuple[str, int, int]:
    """`name`'s text with every `old` type written `new`, and the line and column of the
    first one."""
    text = (TRITON / name).read_text()
    at = text.index(old)
    line = text.count("\n", 0, at) + 1
    return text.replace(old, new), line, at - (text.rfind("\n", 0, at) + 1) + 1


ZERO_EXTENTS = [
    # found by fuzzing: a ZeroDivisionError in convert-ttir (a descriptor's block of
    # no rows)
    ("matmul_persistent.ttir", "tensor<128x256xf16>", "tensor<0x256xf16>"),
    # an offsets tile of no columns compiled to a kernel
    ("matmul.ttir", "tensor<128x256xi32>", "tensor<128x0xi32>"),
]


@pytest.mark.parametrize(("case", "runner_name"), _turns(ZERO_EXTENTS))
def test_a_ttir_type_with_a_zero_extent_is_one_located_error(case, runner_name, tmp_path):
    name, old, new = case
    runner = _runner(runner_name)
    text, line, col = _zero_extent(name, old, new)
    src, outdir = _write(tmp_path, text, "kernel.ttir")
    proc = _compile(runner, src, outdir / "k.ptx")
    _assert_one_diagnostic(proc, outdir, _loc(src, line, col) + r" error: .*zero.*")


def _nul_at(text: str, at: int) -> tuple[str, int, int]:
    """`text` with a NUL byte inserted at offset `at`, and its line and column."""
    line = text.count("\n", 0, at) + 1
    return text[:at] + "\x00" + text[at:], line, at - (text.rfind("\n", 0, at) + 1) + 1


def _without_aliases(text: str) -> str:
    """A `.ttir` as Triton prints it without debug locations: no `#loc` alias lines and
    no `loc(...)` on its ops."""
    text = re.sub(r"(?m)^#[\w.$-]+\s*=\s*loc\(.*\)\s*$", "", text)
    return re.sub(r' loc\((?:[^()"]|"[^"]*"|\((?:[^()"]|"[^"]*")*\))*\)', "", text)


@pytest.mark.parametrize(("where", "runner_name"), _turns(["first token", "middle"]))
def test_a_ttir_the_lexer_rejects_is_one_located_error(where, runner_name, tmp_path):
    """Found by fuzzing: a NUL byte where xDSL's lexer reads the first token of a
    `.ttir` made the TTIR reader raise xDSL's ParseError (an internal error, exit 2); the
    `.mlir` reader has always reported it at its position."""
    text = _without_aliases((TRITON / "matmul.ttir").read_text())
    assert "#loc" not in text and " loc(" not in text
    runner = _runner(runner_name)
    at = 0 if where == "first token" else text.index("tt.dot")
    bad, line, col = _nul_at(text, at)
    src, outdir = _write(tmp_path, bad, "kernel.ttir")
    proc = _compile(runner, src, outdir / "k.ptx")
    _assert_one_diagnostic(proc, outdir, _loc(src, line, col) + r" error: Unexpected character.*")
