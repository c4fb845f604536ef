"""Where ptxas is and which version it is, without importing xDSL: the compile cache
(`tawac.cache`) names the ptxas version in its key, and a warm load must not pay for the
compiler's imports. `tawac.driver` re-exports `find_ptxas`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

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
    from tawac.diagnostics import CompileError  # imports xDSL: only on the way out

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
