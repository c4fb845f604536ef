"""`tawac ARGS...` run in this process through click's test runner, its result shaped as
`subprocess.run`'s (`returncode`, `stdout`, `stderr`).

A `tawac` process costs a Python start and the import of xDSL (about 0.5-1 s of CPU);
the tests whose subject is the command (its output, its files, its one-line errors) run
it here. What only a process shows stays a process: exit statuses and "one line, no
traceback" at both entry points (tests/test_cli_errors.py), what a fresh process imports,
signals, variables read at import time.

An exception that escapes the command (not click's `SystemExit`) is what a process would
print before dying: its traceback is appended to `stderr` and `returncode` is 1, so a
test that asserts one diagnostic line or an exit status fails on it as it did on the
process.
"""

from __future__ import annotations

import subprocess
import traceback
from collections.abc import Mapping, Sequence

#: The environment of every run (plain diagnostics), as lit.cfg gives the RUN lines.
ENV = {"NO_COLOR": "1", "TERM": "dumb"}


def tawac(
    args: Sequence[str],
    *,
    input: str | None = None,
    env: Mapping[str, str | None] | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess:
    """Runs `tawac args...`; `env` adds to (or, with None, removes from) the environment
    for the run only; `check` raises `CalledProcessError` on a non-zero status."""
    from click.testing import CliRunner

    from tawac.tools.cli import main

    argv = [str(a) for a in args]
    res = CliRunner().invoke(
        main,
        argv,
        input=input,
        env={**ENV, **(env or {})},
        catch_exceptions=True,
        prog_name="tawac",
    )
    stderr = res.stderr
    code = res.exit_code
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        stderr += "".join(traceback.format_exception(res.exception))
        code = 1
    proc = subprocess.CompletedProcess(["tawac", *argv], code, res.stdout, stderr)
    if check:
        proc.check_returncode()
    return proc
