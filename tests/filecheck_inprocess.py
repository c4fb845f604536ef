"""Runs one FileCheck file of tests/filecheck in this process: the RUN lines' shell
subset that lit's internal shell (tests/filecheck/lit.cfg, `execute_external=False`)
gives them, with `tawac` run through click's test runner and `filecheck` through its
Python matcher instead of a new process per command.

A process per `tawac` in a RUN line cost a Python start and the import of xDSL (about
0.5 s of CPU each, 200 of them in the suite); the process boundary itself (exit codes,
one diagnostic on stderr, no traceback) is tested by tests/test_cli_errors.py and by
`test_lit_runs_the_suite_files` (tests/test_lit_suite.py), which keeps real lit on a
sample.

What a RUN line may hold (anything else is an error here, not a silent pass):
substitutions `%s` (the file), `%S` (its folder), `%t` (a temporary path of the file);
commands joined by `&&`; pipelines `a | b` (pipefail, as lit's default); a `not` prefix
(succeeds where the command fails); redirections `< file`, `> file`, `2>&1`; the
commands `tawac`, `filecheck`, and any other program on PATH (`python3 -c ...`,
`test ! -e ...`), which runs as a process. `REQUIRES: ortools` skips the file where
OR-Tools is missing, as lit.cfg's feature does.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import cli_inprocess

#: The environment lit.cfg gives every RUN line (plain diagnostics).
ENV = cli_inprocess.ENV


class RunLineError(Exception):
    """A RUN line this runner does not understand."""


@dataclass
class Command:
    argv: list[str]
    negate: int = 0
    stdin_file: str | None = None
    stdout_file: str | None = None
    merge_stderr: bool = False


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass
class FileRun:
    ok: bool
    skipped: str | None = None
    log: list[str] = field(default_factory=list)


def run_lines(path: Path) -> list[str]:
    """The file's RUN commands, continuation lines (`\\` at the end) joined."""
    out: list[str] = []
    pending = ""
    for line in path.read_text().splitlines():
        m = re.search(r"RUN:(.*)$", line)
        if m is None:
            if pending:
                raise RunLineError(f"{path}: a RUN line ends in '\\' and none follows")
            continue
        text = m.group(1).strip()
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        out.append(pending + text)
        pending = ""
    return out


def requires(path: Path) -> list[str]:
    features: list[str] = []
    for line in path.read_text().splitlines():
        m = re.search(r"REQUIRES:(.*)$", line)
        if m is not None:
            features += [f.strip() for f in m.group(1).split(",") if f.strip()]
    return features


def substitute(line: str, path: Path, tmp: Path) -> str:
    """lit's substitutions: `%s`, `%S` (`%p`), `%t`, `%%`."""
    subs = {"%s": str(path), "%S": str(path.parent), "%p": str(path.parent), "%t": str(tmp)}
    return re.sub(r"%[sSpt%]", lambda m: "%" if m.group(0) == "%%" else subs[m.group(0)], line)


def parse(line: str) -> list[list[Command]]:
    """The RUN line as `&&`-joined pipelines of commands."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&<>")
    lexer.whitespace_split = True
    tokens = list(lexer)
    chains: list[list[Command]] = [[]]
    cmd = Command([])
    i = 0

    def close() -> None:
        nonlocal cmd
        if not cmd.argv:
            raise RunLineError(f"an empty command in RUN line: {line}")
        chains[-1].append(cmd)
        cmd = Command([])

    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok == "|":
            close()
        elif tok == "&&":
            close()
            chains.append([])
        elif tok == "<" and nxt is not None:
            cmd.stdin_file = nxt
            i += 1
        elif tok == ">" and nxt is not None:
            cmd.stdout_file = nxt
            i += 1
        elif tok == "2" and nxt == ">&" and i + 2 < len(tokens) and tokens[i + 2] == "1":
            cmd.merge_stderr = True
            i += 2
        elif tok in ("|", "&", ">&", "<", ">", ";", "||", ">>"):
            raise RunLineError(f"'{tok}' is not supported in RUN line: {line}")
        elif tok == "not" and not cmd.argv:
            cmd.negate += 1
        else:
            cmd.argv.append(tok)
        i += 1
    close()
    return chains


def _tawac(args: list[str], stdin: str) -> Result:
    proc = cli_inprocess.tawac(args, input=stdin)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _filecheck(args: list[str], stdin: str) -> Result:
    from filecheck.finput import FInput
    from filecheck.matcher import Matcher
    from filecheck.options import parse_argv_options
    from filecheck.parser import Parser

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
        try:
            opts = parse_argv_options(["filecheck", *args])
            if opts.input_file == "-":
                text = stdin
            else:
                text = Path(opts.input_file).read_text()
            matcher = Matcher(
                opts,
                FInput(opts.input_file, FInput.canonicalize_line_ends(text)),
                Parser.from_opts(opts),
            )
            code = matcher.run()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return Result(code, "", err.getvalue())


def _process(argv: list[str], stdin: str) -> Result:
    proc = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env={**os.environ, **ENV}, timeout=300
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


TOOLS = {"tawac": _tawac, "filecheck": _filecheck}


def run_command(cmd: Command, stdin: str) -> Result:
    if cmd.stdin_file is not None:
        stdin = Path(cmd.stdin_file).read_text()
    tool = TOOLS.get(cmd.argv[0], _process)
    argv = cmd.argv[1:] if cmd.argv[0] in TOOLS else cmd.argv
    res = tool(argv, stdin)
    out = res.stdout
    err = res.stderr
    if cmd.merge_stderr:
        out, err = out + err, ""
    if cmd.stdout_file is not None:
        Path(cmd.stdout_file).write_text(out)
        out = ""
    code = res.code
    for _ in range(cmd.negate):
        code = 0 if code != 0 else 1
    return Result(code, out, err)


def run_file(path: Path, tmp: Path) -> FileRun:
    """Runs every RUN line of `path` in order; `ok` is whether all succeeded (lit's
    verdict), `log` what each command printed on stderr."""
    missing = [f for f in requires(path) if not _has_feature(f)]
    if missing:
        return FileRun(True, skipped=f"needs {', '.join(missing)}")
    run = FileRun(True)
    for raw in run_lines(path):
        line = substitute(raw, path, tmp)
        run.log.append(f"RUN: {line}")
        for pipeline in parse(line):
            stdin = ""
            failed = False
            for cmd in pipeline:
                res = run_command(cmd, stdin)
                if res.stderr:
                    run.log.append(res.stderr.rstrip())
                if res.code != 0:
                    run.log.append(f"'{shlex.join(cmd.argv)}' exited {res.code}")
                    failed = True
                stdin = res.stdout
            if failed:
                run.ok = False
                return run
    return run


def _has_feature(name: str) -> bool:
    if name == "ortools":
        try:
            return importlib.util.find_spec("ortools.sat.python.cp_model") is not None
        except (ImportError, ValueError):
            return False
    return False
