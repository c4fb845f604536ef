"""Where ptxas is, which version it is, and running it, without importing xDSL: the
compile cache (`tawac.support.cache`) names the ptxas version in a cubin's key, a warm load must
not pay for the compiler's imports, and PTX found in the cache assembles without them.
`tawac.driver` re-exports `find_ptxas` and `assemble`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from tawac.support.timelimit import TimeLimit, set_stage

#: The environment variable naming the ptxas executable (first in the search).
PTXAS_ENV = "TAWAC_PTXAS"

#: The wheels that carry ptxas, relative to a `sys.path` folder.
_WHEEL_PATHS = ("nvidia/cu13/bin/ptxas", "nvidia/cuda_nvcc/bin/ptxas")


def locate_ptxas() -> str | None:
    """ptxas from $TAWAC_PTXAS, PATH, $CUDA_HOME/bin (or $CUDA_PATH/bin) or the
    nvidia-cuda-nvcc wheel; None when there is none."""
    env = os.environ.get(PTXAS_ENV)
    if env:
        return env
    found = shutil.which("ptxas")
    if found is not None:
        return found
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home and (Path(home) / "bin" / "ptxas").is_file():
            return str(Path(home) / "bin" / "ptxas")
    for site in sys.path:
        for sub in _WHEEL_PATHS:
            cand = Path(site) / sub
            if cand.is_file():
                return str(cand)
    return None


def find_ptxas() -> str:
    """ptxas from PATH, $CUDA_HOME/bin, or the nvidia-cuda-nvcc wheel; a `CompileError`
    when there is none."""
    found = locate_ptxas()
    if found is not None:
        return found
    from tawac.support.diagnostics import CompileError

    raise CompileError(
        "ptxas not found: put it on PATH, set CUDA_HOME, or `pip install tawac[ptxas]`"
    )


def ptxas_version(exe: str, timeout: float = 10.0) -> str | None:
    """What `exe --version` prints (stripped); None when it cannot run, fails, prints
    nothing or takes longer than `timeout` seconds."""
    import subprocess  # not at the top: a warm compile-cache load spawns nothing

    try:
        proc = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, errors="replace", timeout=timeout
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    text = proc.stdout.strip()
    if proc.returncode != 0 or not text:
        return None
    return text


def assemble(ptx_text: str, ptxas: str | None = None, verbose: bool = False) -> tuple[bytes, str]:
    """Run `ptxas -arch=<target>` (with `verbose`, `-v`) under the active `TimeLimit`;
    returns (cubin, ptxas's report). A `CompileError` when ptxas is missing, fails or
    runs out of time."""
    import subprocess
    import tempfile

    from tawac.support.diagnostics import CompileError
    from tawac.target import HOPPER

    exe = ptxas if ptxas is not None else find_ptxas()
    with tempfile.TemporaryDirectory(prefix="tawac-") as tmp:
        src, dst = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx_text)
        cmd = [exe, HOPPER.arch, str(src), "-o", str(dst)]
        if verbose:
            cmd.insert(1, "-v")
        limit = TimeLimit.active
        timeout = limit.remaining() if limit is not None else None
        set_stage("running ptxas")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except OSError as e:
            raise CompileError(f"cannot run ptxas ({exe}): {e.strerror}") from None
        except subprocess.TimeoutExpired:
            raise CompileError(
                f"ptxas did not finish within the time limit ({timeout:.3g} s left of "
                f"{limit.seconds:g} s); --time-limit sets the limit"
            ) from None
        report = proc.stdout + proc.stderr
        if proc.returncode != 0:
            first = next((ln for ln in report.splitlines() if ln.strip()), "no output")
            raise CompileError(f"ptxas failed (exit {proc.returncode}): {first}")
        return dst.read_bytes(), report
