"""Regressions of the input-hardening work that need the real command line: hangs, bytes
that are not text, terminal output, closed pipes, time limits, `tawac run`'s exit status,
`--help`.

The diagnostics of malformed IR are FileCheck tests
(`tests/filecheck/regressions/malformed-input.mlir`,
`tests/filecheck/passes/cooperative-consumers-regressions.mlir`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpu_util import requires_gpu
from test_cli_errors import GEMM, _assert_one_diagnostic, _compile, _env, _loc, _write
from test_gpu_attention_sweep import instantiate
from test_tile_configs import gemm_text

from tawac.driver import compile_module, parse_text
from tawac.tools import cli

REPO = Path(__file__).resolve().parent.parent
PY = [sys.executable, "-m", "tawac.tools.cli"]


def test_stray_quote_does_not_hang(tmp_path):
    """The first type of the causal loop's result list written `tensor<128"128xf32>`:
    xDSL's string-literal regex backtracked exponentially over the rest of the line."""
    text = (REPO / "examples" / "attention_causal.mlir").read_text()
    loop_types = "-> (tensor<128x128xf32>, tensor<128xf32>"
    assert loop_types in text
    src, outdir = _write(tmp_path, text.replace(loop_types, loop_types.replace("x", '"', 1), 1))
    start = time.monotonic()
    proc = _compile(PY, src, outdir / "k.ptx")
    assert time.monotonic() - start < 30
    _assert_one_diagnostic(
        proc, outdir, _loc(src, 28) + " error: string literal not closed on its line"
    )


def test_lex_error_on_first_token(tmp_path):
    """A lexing error on the very first token was raised outside the driver's error
    handling (exit 2, four lines)."""
    src, outdir = _write(tmp_path, '"' + GEMM)
    proc = _compile(PY, src, outdir / "k.ptx")
    _assert_one_diagnostic(proc, outdir, _loc(src, 1, 1) + " error: string literal not closed.*")


def test_not_utf8(tmp_path):
    src = tmp_path / "kernel.mlir"
    src.write_bytes(GEMM.encode().replace(b"%c64 =", b"%c64\xff ="))
    outdir = tmp_path / "out"
    outdir.mkdir()
    proc = _compile(PY, src, outdir / "k.ptx")
    _assert_one_diagnostic(
        proc, outdir, _loc(src, 3, 7) + r" error: input is not UTF-8 \(byte 0xff\)"
    )


@pytest.mark.parametrize("line", [100, 1234])
def test_no_emoji_codes_in_locations(tmp_path, line):
    """rich turned `f.mlir:100:3` into an emoji (`:100:`), line 1234 too (`:1234:`)."""
    head, rest = GEMM.split("\n", 1)
    text = (
        head
        + "\n"
        + "// pad\n" * (line - 9)
        + rest.replace("%K = tile.dim %a[1] :", "%K = tile.dim %a[1]")
    )
    src, outdir = _write(tmp_path, text)
    proc = _compile(PY, src, outdir / "k.ptx", env=_env(FORCE_COLOR="1", TERM="xterm"))
    assert f"kernel.mlir:{line}:23: error: Expected ':'" in proc.stderr, proc.stderr
    assert proc.returncode == 1


def test_control_characters_escaped(tmp_path):
    src, outdir = _write(tmp_path, GEMM.replace("%c0 = arith", "%c0 = \x1b[31marith"))
    proc = _compile(PY, src, outdir / "k.ptx")
    line = _assert_one_diagnostic(
        proc, outdir, _loc(src, 2, 9) + r" error: Unexpected character: .*"
    )
    assert line.endswith("Unexpected character: \\x1b"), line


def test_closed_pipe_is_quiet():
    """`tawac opt ... | head -1`: no 'internal compiler error: BrokenPipeError'."""
    example = str(REPO / "examples" / "attention.mlir")
    cmd = [*PY, "opt", example, "-p", "warp-specialize,plan,pipeline"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 128 + 13
    assert err == ""


def test_time_limit(tmp_path):
    """Every stage runs under the time limit; past it, one diagnostic naming the stage."""
    src, outdir = _write(tmp_path, (REPO / "examples" / "attention.mlir").read_text())
    extra = ("--time-limit", "0.05", "--no-cache")  # a cached kernel would take no time
    proc = _compile(PY, src, outdir / "k.ptx", extra=extra)
    _assert_one_diagnostic(
        proc,
        outdir,
        r"error: compilation did not finish within 0\.05 s \(stopped while [a-z -]+\); "
        r"--time-limit sets the limit",
    )


def test_ptxas_time_limit(tmp_path):
    """A ptxas that never returns is stopped at the time limit."""
    fake = tmp_path / "slow-ptxas"
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    src, outdir = _write(tmp_path, GEMM)
    start = time.monotonic()
    proc = _compile(
        PY, src, outdir / "k.cubin", env=_env(TAWAC_PTXAS=str(fake)), extra=("--time-limit", "1")
    )
    assert time.monotonic() - start < 30
    _assert_one_diagnostic(
        proc, outdir, r"error: (ptxas|compilation) did not finish within .*ptxas.*"
    )


@pytest.mark.parametrize("command", [[], ["compile"], ["opt"], ["run"], ["explain"]])
def test_help_shows_an_example(command):
    res = CliRunner().invoke(cli.main, [*command, "--help"])
    assert res.exit_code == 0, res.output
    assert "Examples:" in res.output
    example = res.output.split("Examples:", 1)[1]
    assert f"tawac {command[0]} " in example if command else "tawac compile " in example


def test_run_exits_1_when_the_check_fails(tmp_path, monkeypatch):
    """`tawac run` printed `ok: False` and exited 0: a CI job could not fail."""
    import tawac.runtime.runner as runner

    result = {
        "kernel": "gemm",
        "errors": {"c": 0.31, "d": 0.001, "e": float("nan")},
        "nan_outputs": ["e"],
        "tol": 0.02,
        "ok": False,
    }
    monkeypatch.setattr(cli, "_require_gpu", lambda: None)
    monkeypatch.setattr(runner, "run_kernel_file", lambda *a, **k: dict(result))
    res = CliRunner().invoke(
        cli.main, ["run", str(REPO / "examples" / "gemm.mlir"), "--size", "M=1"]
    )
    assert res.exit_code == 1, res.output
    assert "ok: False" in res.output
    last = res.output.strip().splitlines()[-1]
    assert last == (
        "error: check failed: output 'e' has NaN where the reference has values; "
        "output 'c' relative error 0.31 > 0.02"
    ), last
    monkeypatch.setattr(runner, "run_kernel_file", lambda *a, **k: dict(result, ok=True))
    res = CliRunner().invoke(
        cli.main, ["run", str(REPO / "examples" / "gemm.mlir"), "--size", "M=1"]
    )
    assert res.exit_code == 0, res.output


WIDE = [
    ("gemm192x256", gemm_text(192, 256, 64, "bf16")),
    ("gemm192x224", gemm_text(192, 224, 64, "bf16")),
    ("attention192x224d64", instantiate(192, 224, 64, False)),
    ("attention192x256d64", instantiate(192, 256, 64, True)),
]


@pytest.mark.parametrize("name,text", WIDE)
def test_wide_192_row_tiles_assemble(name, text):
    """192-row tiles with a wide N picked three consumer warp groups without checking the
    register budget: ptxas failed with C7602, reported as the user's error."""
    res = compile_module(parse_text(text, f"{name}.mlir"), cubin=True)
    assert res.cubin, name
    assert "C7602" not in res.ptxas_report
    assert res.sidecar["block"][0] == 2 * 128, res.sidecar["block"]  # producer + 1 consumer


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name,text", WIDE)
def test_wide_192_row_tiles_run_correctly(name, text):
    """The fallback to one consumer warp group computes the right result."""
    import torch
    from test_gpu_attention import _check
    from test_gpu_gemm import _run_abt

    from tawac.runtime import load_kernel

    res = compile_module(parse_text(text, f"{name}.mlir"), cubin=True)
    kern = load_kernel(res.cubin, res.sidecar)
    if name.startswith("gemm"):
        for m, n, k in ((1000, 2000, 3000), (384, 512, 128)):
            assert _run_abt(kern, m, n, k, torch.bfloat16) < 1e-2, (name, m, n, k)
        return
    for b, h, s in ((1, 2, 333), (2, 3, 1000)):
        _check(kern, b, h, s, 64, name.endswith("256d64"), s)


def test_time_limit_python_api_leaves_no_alarm():
    """compile_file's time limit raises one CompileError, disarms its alarm and restores
    the previous SIGALRM handler; a limit of 0 means none."""
    import signal

    from tawac.driver import compile_file
    from tawac.support.diagnostics import CompileError

    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(CompileError, match=r"did not finish within 0\.01 s \(stopped while "):
        compile_file(REPO / "examples" / "attention.mlir", cubin=False, time_limit=0.01)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before
    res = compile_file(REPO / "examples" / "gemm.mlir", cubin=False, time_limit=0)
    assert "wgmma.mma_async" in res.ptx


def test_a_block_label_xdsl_cannot_name_is_one_located_error():
    """`%c = arith.constant 6^4 : index` (fuzz seed 1, input 379): `^4` starts a block
    whose label xDSL refuses as a name with a ValueError; it is a located parse error."""
    from tawac.compiler import parse_text
    from tawac.support.diagnostics import CompileError

    text = "tile.kernel @k(%a: f32) {\n  %c = arith.constant 6^4 : index\n  tile.return\n}\n"
    with pytest.raises(CompileError) as e:
        parse_text(text, "k.mlir")
    assert str(e.value) == (
        "k.mlir:2:24: error: invalid block label '^4': a block name starts with a letter, "
        "'_', '$' or '.'"
    )
