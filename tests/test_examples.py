"""Every example compiles to a cubin that ptxas accepts cleanly, and its SASS uses the
Hopper machinery the compiler is meant to emit (no GPU needed).

- ptxas -v: no spills, no warning of any kind (C75 included);
- cuobjdump --dump-sass: HGMMA (wgmma), USETMAXREG (setmaxnreg), UTMALDG (TMA loads),
  no local-memory traffic (LDL/STL).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tawac.driver import compile_file

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))


def test_there_are_examples():
    assert {p.name for p in EXAMPLES} >= {"gemm.mlir", "gemm_bias.mlir", "gemm_fp16.mlir"}


@functools.cache
def _nvidia_bin() -> Path | None:
    """site-packages/nvidia/cu13/bin of the nvidia-cuda-cuobjdump / -nvdisasm wheels."""
    try:
        import nvidia  # type: ignore[import-not-found]
    except ImportError:
        return None
    for root in nvidia.__path__:
        cand = Path(root) / "cu13" / "bin"
        if cand.is_dir():
            return cand
    return None


@functools.cache
def _cuobjdump() -> tuple[str, dict[str, str]] | None:
    """(cuobjdump, environment with nvdisasm on PATH), or None."""
    path = os.environ.get("PATH", "")
    wheel = _nvidia_bin()
    if wheel is not None:
        path = f"{wheel}{os.pathsep}{path}"
    exe = shutil.which("cuobjdump", path=path)
    if exe is None or shutil.which("nvdisasm", path=path) is None:
        return None
    return exe, {**os.environ, "PATH": path}


@functools.cache
def _compiled(name: str):
    return compile_file(REPO / "examples" / name, cubin=True)


@functools.cache
def _sass(name: str) -> str:
    tool = _cuobjdump()
    assert tool is not None
    exe, env = tool
    res = _compiled(name)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tawac-sass-") as tmp:
        cubin = Path(tmp) / f"{Path(name).stem}.cubin"
        cubin.write_bytes(res.cubin)
        proc = subprocess.run(
            [exe, "--dump-sass", str(cubin)], capture_output=True, text=True, env=env, timeout=120
        )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


NAMES = [p.name for p in EXAMPLES]


@pytest.mark.parametrize("name", NAMES)
def test_ptxas_report_is_clean(name):
    res = _compiled(name)
    report = res.ptxas_report
    assert res.cubin is not None and res.cubin[:4] == b"\x7fELF"
    assert f"Compiling entry function '{res.sidecar['kernel']}' for 'sm_90a'" in report, report
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "0 bytes stack frame" in report, report
    assert "C75" not in report, report
    assert "warning" not in report.lower(), report
    # Register use fits the budget the entry declares (.maxntid).
    used = int(re.search(r"Used (\d+) registers", report).group(1))
    threads = res.sidecar["block"][0]
    assert used * threads <= 65536, report


needs_cuobjdump = pytest.mark.skipif(
    _cuobjdump() is None,
    reason="cuobjdump/nvdisasm not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)",
)


def _opcodes(sass: str) -> set[str]:
    """The opcodes (first word, with modifiers) of every SASS instruction line."""
    ops = set()
    for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass):
        ops.add(m.group(1))
    return ops


@needs_cuobjdump
@pytest.mark.parametrize("name", NAMES)
def test_sass_uses_hopper_units(name):
    """The tensor cores where the program multiplies tiles (and nowhere else), register
    reallocation, TMA loads and mbarriers in every example."""
    ops = _opcodes(_sass(name))
    bases = {op.split(".")[0] for op in ops}
    mma = "tile.dot" in (REPO / "examples" / name).read_text()
    # QGMMA: the fp8 (e4m3/e5m2) wgmma
    assert bool(bases & {"HGMMA", "QGMMA"}) == mma, sorted(bases)
    assert "USETMAXREG" in bases, sorted(bases)
    assert "UTMALDG" in bases, sorted(bases)
    assert "SYNCS" in bases, sorted(bases)  # mbarrier waits and arrivals


@needs_cuobjdump
@pytest.mark.parametrize("name", NAMES)
def test_sass_has_no_local_memory(name):
    ops = _opcodes(_sass(name))
    bases = {op.split(".")[0] for op in ops}
    assert not bases & {"LDL", "STL"}, sorted(bases & {"LDL", "STL"})


@needs_cuobjdump
def test_sass_of_gemm_has_one_hgmma_per_k16_step():
    """examples/gemm.mlir: 128x256x64 tiles, two consumer warp groups of one m64 block
    each: 64 / 16 = 4 HGMMA.64x256x16 in the (shared) consumer code."""
    sass = _sass("gemm.mlir")
    hgmma = re.findall(r"\bHGMMA\.64x256x16\.F32\.BF16\b", sass)
    assert len(hgmma) == 4, re.findall(r"\bHGMMA\S*", sass)


@needs_cuobjdump
def test_sass_of_gemm_fp8_has_one_qgmma_per_k32_step():
    """examples/gemm_fp8.mlir: 128x256x128 e4m3 tiles, two consumer warp groups of one
    m64 block each: 128 / 32 = 4 fp8 wgmmas, which nvdisasm prints as
    QGMMA.64x256x32.F32.E4M3.E4M3 (not HGMMA), and no 16-bit HGMMA."""
    sass = _sass("gemm_fp8.mlir")
    qgmma = re.findall(r"\bQGMMA\.64x256x32\.F32\.E4M3\.E4M3\b", sass)
    assert len(qgmma) == 4, re.findall(r"\b[HQ]GMMA\S*", sass)
    assert "HGMMA" not in sass
