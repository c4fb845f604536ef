"""Run mutants through `tawac compile` in forked children and classify what they did.

The parent imports the compiler once; each input gets a forked child (memory-limited,
stdout/stderr to files, its own folder with the source and an empty `out/`), a time
limit, and a verdict from `classify`.  Accepted PTX is assembled with ptxas once per
distinct text.  An accepted input that carries a `Check` (a share of them, `--check-meaning`)
is also checked for meaning (`tawac.fuzz.meaning`) in a second forked child, which imports
torch itself: the parent never loads torch (a process that has loaded it forks at about
twice the cost).  One loop polls the children, the check children and the ptxas processes
(no threads: forking a threaded process is unsafe); they share the `jobs` slots.
"""

from __future__ import annotations

import faulthandler
import hashlib
import itertools
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tawac.compiler  # noqa: F401  (imported before forking, so children need not)
import tawac.runtime  # noqa: F401
import tawac.support.ptxas
import tawac.tools.cli
from tawac.fuzz.meaning import CHECK_TIMEOUT, Check, check_meaning, load_checks, selected
from tawac.fuzz.mutate import Corpus, compile_options, mutant, source_suffix
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER

FINDINGS = ("internal", "traceback", "hang", "crash", "partial-output", "bad-diagnostic")
FINDINGS += ("bad-output", "invalid-ptx", "mismatch", "check-error")
CLASSES = ("accepted", "rejected", *FINDINGS)
MEANING = ("checked", "unchecked", "mismatch", "check-error")  # meaning checks' verdicts
DIAGNOSTIC = re.compile(r"^(.+:\d+:\d+: )?error: .+")
ICE = "internal compiler error"
MEMORY_LIMIT = 4 << 30
PTXAS_TIMEOUT = 120.0
#: Seconds a check child may run past its own limit (its imports) before it is killed.
CHECK_GRACE = 60.0


@dataclass
class Outcome:
    """What one `tawac compile` child did."""

    exit_code: int | None  # None: killed by a signal
    signal: int | None = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    out_files: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _traceback_line(text: str) -> str:
    """The exception line of the last traceback in `text`, and its innermost frame."""
    lines = text[text.rfind("Traceback (most recent call last)") :].splitlines()
    frames = [m for ln in lines if (m := re.match(r'\s*File "(.+)", line \d+, in (\S+)', ln))]
    exc = next((ln.strip() for ln in reversed(lines) if ln.strip() and ln[0] != " "), "?")
    where = f" (in {frames[-1].group(2)}, {Path(frames[-1].group(1)).name})" if frames else ""
    return exc + where


def classify(o: Outcome) -> tuple[str, str]:
    """(class, the line it is about) for one child's outcome; see `CLASSES`."""
    both = o.stdout + o.stderr
    if o.timed_out:
        return "hang", f"no exit within the time limit ({o.seconds:.0f}s)"
    if o.signal is not None:
        return "crash", f"killed by signal {signal.Signals(o.signal).name}"
    if "Traceback (most recent call last)" in both:
        return "traceback", _traceback_line(both)
    if ICE in both or o.exit_code == 2:
        line = next((ln for ln in both.splitlines() if ICE in ln), _first_line(both))
        line = line[line.find(ICE) + len(ICE) :].lstrip(": ") if ICE in line else line
        return "internal", line.replace("(set TAWAC_DEBUG=1 for a traceback)", "").strip()
    if o.exit_code not in (0, 1):
        return "crash", f"exit {o.exit_code}"
    if o.exit_code == 0:
        if sorted(o.out_files) == ["k.json", "k.ptx"]:
            return "accepted", ""
        return "bad-output", f"exit 0 with output files [{', '.join(o.out_files)}]"
    if o.out_files:
        return "partial-output", f"[{', '.join(o.out_files)}] left after exit {o.exit_code}"
    lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
    if o.stdout:
        return "bad-diagnostic", f"output on stdout: {_first_line(o.stdout)}"
    if len(lines) != 1:
        return "bad-diagnostic", f"{len(lines)} lines on stderr: {_first_line(o.stderr)}"
    if DIAGNOSTIC.match(lines[0]) is None:
        return "bad-diagnostic", f"not a diagnostic: {lines[0]}"
    return "rejected", lines[0]


def normalize(line: str) -> str:
    """`line` with paths, quoted names, SSA/symbol names and numbers made generic."""
    s = re.sub(r"\.k\.(ptx|json)\.\w+", r".k.\1.<tmp>", line.strip())
    s = re.sub(r"0x[0-9a-fA-F]+", "N", s)
    s = re.sub(r"'[^'\s]*'|\"[^\"\s]*\"", "'_'", s)  # quoted names, not quoted phrases
    s = re.sub(r"(?:[\w.+\-~<>]*/)+[\w.+\-]+", "<path>", s)
    s = re.sub(r"([%@^])[\w$.\-]+", r"\1_", s)
    s = re.sub(r"(?:(?:\d+|\?)x)+", lambda m: re.sub(r"\d+", "N", m.group()), s)  # shapes
    s = re.sub(r"(?<![\w$])\d+", "N", s)
    s = re.sub(r"[\x00-\x1f\x7f]", "?", s)
    s = re.sub(r"\s+", " ", s)
    return s if len(s) <= 200 else s[:197] + "..."


@dataclass
class Result:
    """One input, its outcome and verdict."""

    index: int
    source: str
    mutations: list[str]
    data: bytes
    outcome: Outcome
    cls: str
    detail: str
    ptx_sha: str | None = None
    ptx: bytes | None = None  # kept for invalid PTX only
    options: list[str] = field(default_factory=list)  # `tawac compile` flags
    check: Check | None = None  # the meaning check asked for (accepted inputs only)
    meaning: str = ""  # its verdict: checked, unchecked, mismatch, check-error ("": none)
    meaning_detail: str = ""

    @property
    def signature(self) -> str:
        return f"{self.cls}: {normalize(self.detail)}" if self.detail else self.cls

    def report(self) -> str:
        o = self.outcome
        return (
            f"source: {self.source}\nindex: {self.index}\nmutations:\n"
            + "".join(f"  {m}\n" for m in self.mutations)
            + f"options: {' '.join(self.options)}\n"
            + (f"meaning: {self.meaning}: {self.meaning_detail}\n" if self.meaning else "")
            + f"class: {self.cls}\nsignature: {self.signature}\ndetail: {self.detail}\n"
            f"exit: {o.exit_code} signal: {o.signal} timed out: {o.timed_out} "
            f"seconds: {o.seconds:.2f}\nout/: {sorted(o.out_files)}\n"
            f"--- stdout ---\n{o.stdout}--- stderr ---\n{o.stderr}"
        )


# --- the child --------------------------------------------------------------------------------


def _isolate(stdout: Path, stderr: Path, memory: int) -> None:
    """In a forked child: its own process group, no stdin, stdout and stderr to these
    files (the same file: one descriptor for both), a crash's stack to stderr, its
    memory limited to `memory` bytes."""
    os.setpgid(0, 0)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    out = os.open(stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = out if stderr == stdout else os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    # Fresh streams on fds 1 and 2 (pytest's capture may have replaced sys.stdout).
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    faulthandler.enable(file=sys.stderr)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def _exit(code: int) -> None:
    """Ends a forked child with `code` (its low byte) once its output is flushed: never
    returns into the parent's code, whatever happened before."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


def _child(folder: Path, memory: int, options: list[str], suffix: str) -> None:
    """In the forked child: compile folder/src.mlir (or src.ttir: `suffix`) to
    folder/out/k.ptx with `options`; never returns."""
    code = 70
    try:
        _isolate(folder / "stdout", folder / "stderr", memory)
        for var in ("TAWAC_DEBUG", "FORCE_COLOR", "CLICOLOR_FORCE"):
            os.environ.pop(var, None)
        os.environ["NO_COLOR"] = "1"
        os.environ["TAWAC_CACHE"] = "0"  # every mutant compiled; none fills the user's cache
        os.chdir(folder / "cwd")
        args = ["compile", str(folder / f"src{suffix}"), "-o", str(folder / "out" / "k.ptx")]
        args += options
        try:
            tawac.tools.cli.main(args, prog_name="tawac")
            code = 0
        except SystemExit as e:
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        except BaseException:
            code = 70
            traceback.print_exc()
    except BaseException:
        traceback.print_exc()
    finally:
        _exit(code)


def _start(folder: Path, data: bytes, memory: int, options: list[str], suffix: str) -> int:
    (folder / "out").mkdir(parents=True)
    (folder / "cwd").mkdir()
    (folder / f"src{suffix}").write_bytes(data)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(folder, memory, options, suffix)
    return pid


def _check_child(folder: Path, memory: int, res: Result, suffix: str, seconds: float) -> None:
    """In the forked check child: the meaning check of the accepted folder/src (`res`'s
    flags and `Check`), its verdict written to folder/check.json; never returns."""
    code = 70
    try:
        _isolate(folder / "check.log", folder / "check.log", memory)
        os.environ["TAWAC_CACHE"] = "0"
        text = (folder / f"src{suffix}").read_bytes().decode("utf-8", "surrogateescape")
        program = f"{res.source} (mutant {res.index})"
        verdict = check_meaning(
            text, f"src{suffix}", res.options, res.check, seconds=seconds, program=program
        )
        tmp = folder / "check.json.tmp"
        tmp.write_text(json.dumps(list(verdict)))
        tmp.rename(folder / "check.json")
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        _exit(code)


def _start_check(folder: Path, memory: int, res: Result, seconds: float) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _check_child(folder, memory, res, source_suffix(res.source), seconds)
    return pid


def _check_verdict(folder: Path, status: int | None, seconds: float) -> tuple[str, str]:
    """The verdict a reaped check child wrote (status None: it was killed for time)."""
    if status is None:
        return "unchecked", f"time: the check child ran past {seconds + CHECK_GRACE:g} s"
    path = folder / "check.json"
    if path.is_file():
        verdict, detail = json.loads(path.read_text())
        return verdict, detail
    log_file = folder / "check.log"
    log = log_file.read_text(errors="replace") if log_file.is_file() else ""
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    if "MemoryError" in log or killed:
        return "unchecked", "memory: the check child ran out of memory"
    if os.WIFSIGNALED(status):
        how = f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        how = f"exit {os.WEXITSTATUS(status)}"
    line = _traceback_line(log) if "Traceback" in log else _first_line(log)
    return "check-error", f"the check child died ({how}): {line}"


def _finish(folder: Path, status: int | None, started: float) -> Outcome:
    """The outcome of a reaped child (status None: it was killed for time)."""
    files = sorted(os.listdir(folder / "out"))
    files += [f"cwd/{n}" for n in sorted(os.listdir(folder / "cwd"))]
    read = lambda n: (folder / n).read_bytes().decode("utf-8", "backslashreplace")  # noqa: E731
    o = Outcome(None, stdout=read("stdout"), stderr=read("stderr"), out_files=files)
    o.seconds = time.monotonic() - started
    if status is None:
        o.timed_out = True
    elif os.WIFSIGNALED(status):
        o.signal = os.WTERMSIG(status)
    else:
        o.exit_code = os.WEXITSTATUS(status)
    return o


def _ptxas_error(log: str, code: int | None) -> str:
    """ptxas's first error line (code None: it ran out of time)."""
    if code is None:
        return f"ptxas took over {PTXAS_TIMEOUT:.0f}s"
    err = next((ln for ln in log.splitlines() if "error" in ln.lower()), _first_line(log))
    return f"ptxas exit {code}: {err}"


def find_ptxas() -> str | None:
    """tawac's own search for ptxas; None where there is none."""
    try:
        return tawac.support.ptxas.find_ptxas()
    except CompileError:
        return None


# index, source, mutations, bytes, flags; and optionally the meaning check asked for
Item = (
    tuple[int, str, list[str], bytes, list[str]]
    | tuple[int, str, list[str], bytes, list[str], Check | None]
)


def execute(
    items: Iterable[Item],
    *,
    jobs: int = 2,
    timeout: float = 30.0,
    ptxas: str | None = None,
    deadline: float | None = None,
    memory: int = MEMORY_LIMIT,
    check_timeout: float = CHECK_TIMEOUT,
) -> Iterator[Result]:
    """Compile every item (until `deadline`, a time.monotonic() value), yielding each
    result once final: accepted PTX is assembled with `ptxas` (if given) and an accepted
    item with a `Check` is checked for meaning (`check_timeout` s: `tawac.fuzz.meaning`)
    first."""
    work = Path(tempfile.mkdtemp(prefix="tawac-fuzz-"))
    todo = iter(items)
    running: dict[int, tuple[Item, Path, float]] = {}
    asm_queue: deque[str] = deque()
    asm_running: dict[str, tuple[subprocess.Popen, float]] = {}
    check_queue: deque[tuple[Result, Path]] = deque()
    checking: dict[int, tuple[Result, Path, float]] = {}  # pid -> result, folder, start
    waiting: dict[str, list[Result]] = {}
    verdicts: dict[str, str | None] = {}  # sha -> None (valid) or ptxas's error
    exhausted = False

    def ready(res: Result) -> bool:
        in_check = any(r is res for r, _ in check_queue) or any(
            r is res for r, _, _ in checking.values()
        )
        return not in_check and (res.ptx_sha is None or res.ptx_sha in verdicts)

    try:
        while True:
            for pid, (item, folder, started) in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if not done and time.monotonic() - started < timeout:
                    continue
                if not done:
                    _kill(pid)
                    os.waitpid(pid, 0)
                    status = None
                del running[pid]
                o = _finish(folder, status, started)
                res = Result(*item[:4], o, *classify(o), options=item[4])
                if res.cls == "accepted" and ptxas is not None:
                    text = (folder / "out" / "k.ptx").read_bytes()
                    res.ptx_sha = hashlib.sha256(text).hexdigest()
                    if res.ptx_sha not in verdicts and res.ptx_sha not in waiting:
                        (work / f"{res.ptx_sha}.ptx").write_bytes(text)
                        asm_queue.append(res.ptx_sha)
                check = item[5] if len(item) > 5 else None
                if res.cls == "accepted" and check is not None:
                    res.check = check
                    if check.sizes is None:
                        res.meaning, res.meaning_detail = check_meaning("", "", [], check)
                    else:
                        check_queue.append((res, folder))
                if not any(r is res for r, _ in check_queue):
                    shutil.rmtree(folder, ignore_errors=True)
                if res.ptx_sha is not None and res.ptx_sha not in verdicts:
                    waiting.setdefault(res.ptx_sha, []).append(res)
                if ready(res):
                    yield _apply_ptx(res, verdicts, work)
            for pid, (res, folder, started) in list(checking.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if not done and time.monotonic() - started < check_timeout + CHECK_GRACE:
                    continue
                if not done:
                    _kill(pid)
                    os.waitpid(pid, 0)
                    status = None
                del checking[pid]
                res.meaning, res.meaning_detail = _check_verdict(folder, status, check_timeout)
                if res.meaning in FINDINGS:
                    res.cls, res.detail = res.meaning, res.meaning_detail
                shutil.rmtree(folder, ignore_errors=True)
                if ready(res):
                    yield _apply_ptx(res, verdicts, work)
            for sha, (proc, started) in list(asm_running.items()):
                code = proc.poll()
                if code is None and time.monotonic() - started < PTXAS_TIMEOUT:
                    continue
                if code is None:
                    proc.kill()
                    proc.wait()
                del asm_running[sha]
                log = (work / f"{sha}.log").read_text(errors="replace")
                verdicts[sha] = None if code == 0 else _ptxas_error(log, code)
                for res in waiting.pop(sha, []):
                    if ready(res):
                        yield _apply_ptx(res, verdicts, work)
            while len(running) + len(asm_running) + len(checking) < jobs:
                if asm_queue:
                    sha = asm_queue.popleft()
                    asm_running[sha] = (_start_ptxas(ptxas, work, sha), time.monotonic())
                    continue
                if check_queue:
                    res, folder = check_queue.popleft()
                    pid = _start_check(folder, memory, res, check_timeout)
                    checking[pid] = (res, folder, time.monotonic())
                    continue
                if exhausted or (deadline is not None and time.monotonic() >= deadline):
                    exhausted = True
                    break
                item = next(todo, None)
                if item is None:
                    exhausted = True
                    break
                folder = work / f"i{item[0]}"
                pid = _start(folder, item[3], memory, item[4], source_suffix(item[1]))
                running[pid] = (item, folder, time.monotonic())
            busy = running or asm_running or asm_queue or checking or check_queue
            if exhausted and not busy:
                return
            time.sleep(0.005)
    finally:
        for pid in [*running, *checking]:
            _kill(pid)
            os.waitpid(pid, 0)
        for proc, _ in asm_running.values():
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        os.kill(pid, signal.SIGKILL)


def _start_ptxas(exe: str, work: Path, sha: str) -> subprocess.Popen:
    cmd = [exe, HOPPER.arch, str(work / f"{sha}.ptx"), "-o", str(work / f"{sha}.cubin")]
    with open(work / f"{sha}.log", "wb") as log:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def _apply_ptx(res: Result, verdicts: dict[str, str | None], work: Path) -> Result:
    error = verdicts.get(res.ptx_sha) if res.ptx_sha is not None else None
    if error is not None and res.cls == "accepted":  # a mismatch stays one
        res.cls, res.detail = "invalid-ptx", error
        res.ptx = (work / f"{res.ptx_sha}.ptx").read_bytes()
    return res


# --- campaigns --------------------------------------------------------------------------------


@dataclass
class Summary:
    """Counts of a campaign, and its findings by signature (count, saved example)."""

    inputs: int = 0
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)
    signatures: dict[str, list] = field(default_factory=dict)
    ptx_valid: int = 0
    ptx_invalid: int = 0
    ptxas: str | None = None
    meaning: Counter = field(default_factory=Counter)  # verdicts of the meaning checks
    unchecked: Counter = field(default_factory=Counter)  # why not checked, by reason

    @property
    def findings(self) -> int:
        return sum(self.counts[c] for c in FINDINGS)

    def format(self) -> str:
        rate = self.inputs / self.seconds if self.seconds else 0.0
        lines = [f"{self.inputs} inputs in {self.seconds:.1f}s ({rate:.2f}/s)"]
        lines += [f"  {c:15} {self.counts[c]}" for c in CLASSES]
        if self.ptxas is None:
            lines.append("ptxas: not found or disabled; accepted PTX was not assembled")
        else:
            lines.append(f"distinct PTX: {self.ptx_valid} assembled, {self.ptx_invalid} invalid")
        if self.meaning:
            asked = sum(self.meaning.values())
            done = ", ".join(f"{self.meaning[v]} {v}" for v in MEANING if self.meaning[v])
            lines.append(f"meaning checks: {asked} accepted inputs asked: {done}")
            for why, n in sorted(self.unchecked.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"  unchecked {n:5}  {why}")
        lines.append(f"distinct finding signatures: {len(self.signatures)}")
        for sig, (count, example) in sorted(self.signatures.items(), key=lambda kv: -kv[1][0]):
            lines.append(f"  {count:5}  {sig}\n         e.g. {example}")
        return "\n".join(lines)


def save(res: Result, out: Path, n: int) -> Path:
    """Write the mutant as out/<class>-<n>.mlir (.ttir for a TTIR mutant), with a .txt
    report, its compile flags in .args (when it has any), its meaning check in .check
    (when it had one: the sizes, `replay` checks it again) and its PTX in .ptx (when
    ptxas rejected it)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{res.cls}-{n}{source_suffix(res.source)}"
    path.write_bytes(res.data)
    if res.options:
        path.with_suffix(".args").write_text(" ".join(res.options) + "\n")
    if res.check is not None:
        path.with_suffix(".check").write_text(res.check.to_json())
    path.with_suffix(".txt").write_text(res.report(), errors="backslashreplace")
    if res.ptx is not None:
        path.with_suffix(".ptx").write_bytes(res.ptx)
    return path


def run_campaign(
    corpus_root: str | Path | None = None,
    *,
    inputs: int | None = None,
    seconds: float | None = None,
    seed: int = 0,
    first: int = 0,
    jobs: int = 2,
    timeout: float = 30.0,
    out: str | Path | None = None,
    use_ptxas: bool = True,
    keep: int = 3,
    progress: Callable[[str], None] | None = print,
    check_meaning: float = 0.0,
    check_timeout: float = CHECK_TIMEOUT,
) -> Summary:
    """Mutants `first`, `first` + 1, ... of `seed` until `inputs` ran or `seconds` passed
    (whichever first): disjoint ranges of one seed split a campaign into shards.  A share
    `check_meaning` of the accepted ones (drawn from (seed, index): `meaning.selected`)
    is also checked for meaning, at the sizes corpus/corpus.json gives its source."""
    if inputs is None and seconds is None:
        raise ValueError("give inputs or seconds (or both)")
    root = Path(corpus_root) if corpus_root is not None else Path(tawac.__file__).parents[1]
    corpus = Corpus.load(root)
    summary = Summary(ptxas=find_ptxas() if use_ptxas else None)
    limit = inputs if inputs is not None else sys.maxsize
    start = time.monotonic()
    indices = range(first, first + limit) if limit != sys.maxsize else itertools.count(first)
    checks = load_checks(root) if check_meaning > 0 else {}

    def item(i: int) -> Item:
        source, mutations, data = mutant(corpus, seed, i)
        check = None
        if selected(seed, i, check_meaning):
            check = checks.get(source, Check(source))
        return i, source, mutations, data, compile_options(seed, i), check

    items = (item(i) for i in indices)
    deadline = start + seconds if seconds is not None else None
    assembled: dict[str, bool] = {}
    saved: Counter = Counter()
    last = start
    results = execute(
        items,
        jobs=jobs,
        timeout=timeout,
        ptxas=summary.ptxas,
        deadline=deadline,
        check_timeout=check_timeout,
    )
    for res in results:
        summary.inputs += 1
        summary.counts[res.cls] += 1
        if res.meaning:
            summary.meaning[res.meaning] += 1
        if res.meaning == "unchecked":
            summary.unchecked[res.meaning_detail.split(":")[0]] += 1
        if res.ptx_sha is not None:
            assembled[res.ptx_sha] = res.cls != "invalid-ptx"
        if res.cls in FINDINGS:
            entry = summary.signatures.setdefault(res.signature, [0, "(not saved)"])
            entry[0] += 1
            if out is not None and entry[0] <= keep:
                saved[res.cls] += 1
                path = save(res, Path(out), saved[res.cls])
                if entry[0] == 1:
                    entry[1] = str(path)
        now = time.monotonic()
        if progress is not None and now - last >= 30:
            last = now
            found = summary.findings
            checked = summary.meaning["checked"]
            line = f"[{now - start:6.0f}s] {summary.inputs} inputs, {found} findings"
            progress(line + (f", {checked} checked for meaning" if check_meaning > 0 else ""))
    summary.seconds = time.monotonic() - start
    summary.ptx_valid = sum(assembled.values())
    summary.ptx_invalid = len(assembled) - summary.ptx_valid
    return summary


def replay(
    path: str | Path,
    *,
    timeout: float = 30.0,
    use_ptxas: bool = True,
    check_timeout: float = CHECK_TIMEOUT,
) -> Result:
    """Run one saved mutant through the same child and checks, with the flags saved
    beside it (`.args`) and, where it was checked for meaning, the same check (`.check`)."""
    data = Path(path).read_bytes()
    args = Path(path).with_suffix(".args")
    options = args.read_text().split() if args.is_file() else []
    saved = Path(path).with_suffix(".check")
    check = Check.from_json(saved.read_text()) if saved.is_file() else None
    ptxas = find_ptxas() if use_ptxas else None
    item = (0, str(path), [], data, options, check)
    (res,) = execute([item], jobs=1, timeout=timeout, ptxas=ptxas, check_timeout=check_timeout)
    return res
