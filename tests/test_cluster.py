"""Thread block clusters with TMA multicast of the shared operand (issue 11), on the CPU:
the schedule records the cluster, `tawac explain` shows it, ptxas assembles the cluster
kernels cleanly and their SASS multicasts, the sidecar and the launcher's grid follow the
cluster shape, and kernels that cannot run in a cluster get a clear error.

The GPU tests are tests/test_gpu_cluster.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import pytest
from test_examples import _cuobjdump, _opcodes

from tawac import schedule
from tawac.backend_ptx.layouts import SwizzledTile
from tawac.diagnostics import CompileError
from tawac.driver import compile_file, run_pipeline
from tawac.explain import explain_module
from tawac.options import PipelineOptions
from tawac.parser import parse_file
from tawac.runtime import LaunchError
from tawac.runtime.launcher import Kernel, compute_grid, validate_sidecar
from tawac.tune import parse_space

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
GEMMS = ["gemm.mlir", "gemm_fp16.mlir", "gemm_nn.mlir", "gemm_bias.mlir"]
CONFIGS = [(c, p) for c in ("2x1", "1x2") for p in (True, False)]


def _plan(name: str, **options):
    module = parse_file(EXAMPLES / name)
    run_pipeline(module, PipelineOptions(**options).pipeline(stop="pipeline"))
    kernel = next(op for op in module.body.block.ops if op.name == "tile.kernel")
    return schedule.of(kernel)


@cache
def _compiled(name: str, cluster: str, persistent: bool):
    return compile_file(EXAMPLES / name, cubin=True, cluster=cluster, persistent=persistent)


@cache
def _sass(name: str, cluster: str, persistent: bool) -> str:
    exe, env = _cuobjdump()
    res = _compiled(name, cluster, persistent)
    with tempfile.TemporaryDirectory(prefix="tawac-sass-") as tmp:
        cubin = Path(tmp) / "k.cubin"
        cubin.write_bytes(res.cubin)
        proc = subprocess.run(
            [exe, "--dump-sass", str(cubin)], capture_output=True, text=True, env=env, timeout=120
        )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


needs_cuobjdump = pytest.mark.skipif(
    _cuobjdump() is None,
    reason="cuobjdump/nvdisasm not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)",
)


# ---------------------------------------------------------------- the decision


@pytest.mark.parametrize(
    ("name", "cluster", "shared"),
    [
        ("gemm.mlir", "2x1", (1,)),  # x pairs M tiles: B is shared
        ("gemm.mlir", "1x2", (0,)),  # y pairs N tiles: A is shared
        ("gemm_nn.mlir", "2x1", (1,)),  # B stored KxN (MN-major) splits along K
        ("gemm_bias.mlir", "1x2", (0,)),
    ],
)
def test_schedule_records_the_cluster_and_the_shared_operand(name, cluster, shared):
    plan = _plan(name, cluster=cluster)
    assert plan.cluster == {"2x1": (2, 1), "1x2": (1, 2)}[cluster]
    assert [a.multicast for a in plan.arefs] == [shared]
    assert plan.cluster_size == 2
    assert plan.cluster_axis == (0 if cluster == "2x1" else 1)


def test_default_is_no_cluster():
    plan = _plan("gemm.mlir")
    assert plan.cluster == (1, 1) and plan.cluster_axis is None
    assert all(a.multicast == () for a in plan.arefs)
    side = compile_file(EXAMPLES / "gemm.mlir").sidecar
    assert side["cluster"] == [1, 1, 1] and "program_cluster" not in side


def test_explain_shows_the_cluster():
    info = explain_module(parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions(cluster="2x1"))
    assert info["cluster"]["shape"] == [2, 1] and info["cluster"]["axis"] == "x"
    assert info["arefs"][0]["multicast"] == [1]
    assert info["arefs"][0]["multicast_tensors"] == ["%b"]
    plain = explain_module(parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions())
    assert "cluster" not in plain and "multicast" not in plain["arefs"][0]
    out = subprocess.run(
        [sys.executable, "-m", "tawac.cli", "explain", str(EXAMPLES / "gemm.mlir")]
        + ["--cluster", "1x2"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "cluster: 1x2, program ids y = 2i .. 2i+1" in out
    assert "%a" in out and "(multicast)" in out
    data = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tawac.cli", "explain", str(EXAMPLES / "gemm.mlir")]
            + ["--cluster", "2x1", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert data["cluster"]["ctas"] == 2


def test_cluster_option_spellings():
    assert "cluster=2x1" in PipelineOptions(cluster="2x1").plan_spec()
    assert parse_space(["cluster=1x1,2x1,1x2"])[0].values == ("1x1", "2x1", "1x2")
    with pytest.raises(CompileError, match="expected 1x1, 2x1, 1x2"):
        parse_space(["cluster=2x2"])
    with pytest.raises(CompileError, match="cluster must be one of 1x1, 2x1, 1x2, got '4x1'"):
        _plan("gemm.mlir", cluster="4x1")


# ---------------------------------------------------------------- clear errors


@pytest.mark.parametrize("name", ["attention.mlir", "attention_causal.mlir"])
def test_attention_is_refused(name):
    with pytest.raises(CompileError, match="supported for GEMM-like kernels only"):
        compile_file(EXAMPLES / name, cluster="2x1")


def test_cli_error_is_one_line(tmp_path):
    out = tmp_path / "a.ptx"
    proc = subprocess.run(
        [sys.executable, "-m", "tawac.cli", "compile", str(EXAMPLES / "attention.mlir")]
        + ["-o", str(out), "--cluster", "1x2"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "GEMM-like kernels only" in lines[0], proc.stderr
    assert not out.exists()


# ---------------------------------------------------------------- code and sidecar


@pytest.mark.parametrize("name", GEMMS)
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
def test_ptxas_assembles_cluster_kernels_cleanly(name, cluster, persistent):
    res = _compiled(name, cluster, persistent)
    report = res.ptxas_report
    assert res.cubin[:4] == b"\x7fELF"
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "warning" not in report.lower(), report
    ptx = res.ptx
    assert ptx.count("barrier.cluster.arrive.release;") == 3  # after init, 2 partition ends
    assert ptx.count("barrier.cluster.wait.acquire;") == 3
    assert ".multicast::cluster" in ptx and "mapa.shared::cluster.u32" in ptx
    assert "mbarrier.arrive.shared::cluster.b64" in ptx
    # cta-scope semantics: a cluster-scope release or acquire costs a GPU-wide
    # MEMBAR / a CCTL.IVALL per K step (measured 0.6x cuBLAS with them)
    assert ".release.cluster.shared::cluster" not in ptx and ".acquire.cluster" not in ptx
    # empty barriers: the consumer warps of both CTAs (2 warp groups x 4 warps x 2)
    consumer_warps = 4 * (res.sidecar["block"][0] // 128 - 1)
    inits = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", ptx)
    assert sorted(set(map(int, inits))) == [1, 2 * consumer_warps]
    side = res.sidecar
    if persistent:
        assert side["cluster"] == [2, 1, 1]
        assert side["program_cluster"] == ([2, 1, 1] if cluster == "2x1" else [1, 2, 1])
        assert side["grid"][0] == {"persistent": 1}
        assert "%clusterid.x" in ptx and "%nclusterid.x" in ptx
    else:
        assert side["cluster"] == ([2, 1, 1] if cluster == "2x1" else [1, 2, 1])
        assert "program_cluster" not in side
    validate_sidecar(side)


@needs_cuobjdump
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
def test_sass_multicasts(cluster, persistent):
    sass = _sass("gemm.mlir", cluster, persistent)
    ops = _opcodes(sass)
    assert "UTMALDG.2D.MULTICAST" in ops, sorted(ops)
    assert "UTMALDG.2D" in ops  # the private operand
    assert {"UCGABAR_ARV", "UCGABAR_WAIT"} <= ops, sorted(ops)
    bases = {op.split(".")[0] for op in ops}
    assert {"HGMMA", "USETMAXREG", "SYNCS"} <= bases
    assert not bases & {"LDL", "STL"}


@pytest.mark.parametrize(("cluster", "persistent"), [("2x1", False), ("1x2", True)])
def test_band_offsets_in_the_ptx(cluster, persistent):
    """gemm.mlir's shared tile: B is 256x64 (2x1): bands of 128 rows, 16384 bytes; A is
    128x64 (1x2): bands of 64 rows, 8192 bytes; each CTA's box has the band's rows."""
    ptx = _compiled("gemm.mlir", cluster, persistent).ptx
    rows, nbytes, tmap = (128, 16384, "b") if cluster == "2x1" else (64, 8192, "a")
    assert f".param .align 64 .b8 {tmap}_tmap_64x{rows}[128]" in ptx
    assert re.search(rf"mov\.s32 %r\d+, {nbytes};", ptx)


# ---------------------------------------------------------------- layouts


def test_row_band():
    assert SwizzledTile(256, 64, 2).row_band(2) == (128, 16384)
    assert SwizzledTile(64, 256, 2).row_band(2) == (32, 4096)  # gemm_nn's B: K rows
    assert SwizzledTile(16, 64, 2).row_band(2) == (8, 1024)
    for rows in (8, 24, 100):
        with pytest.raises(ValueError, match="bands of a multiple of 8 rows"):
            SwizzledTile(rows, 64, 2).row_band(2)


# ---------------------------------------------------------------- the launcher's grid

GRID = [
    {"cdiv": {"arg": "c", "dim": 0}, "by": 128},
    {"cdiv": {"arg": "c", "dim": 1}, "by": 256},
    {"const": 1},
]
PERSISTENT = [{"persistent": 1}, {"const": 1}, {"const": 1}]


def test_plain_grid_rounds_up_along_the_cluster():
    shapes = {"c": (3 * 128 + 5, 512)}  # 4 x 2 tiles
    assert compute_grid(GRID, shapes, cluster=(2, 1, 1)) == (4, 2, 1)
    shapes = {"c": (2 * 128 + 5, 3 * 256)}  # 3 x 3 tiles: odd along both
    assert compute_grid(GRID, shapes) == (3, 3, 1)
    assert compute_grid(GRID, shapes, cluster=(2, 1, 1)) == (4, 3, 1)
    assert compute_grid(GRID, shapes, cluster=(1, 2, 1)) == (3, 4, 1)
    assert compute_grid(GRID, {"c": (0, 512)}, cluster=(2, 1, 1)) == (0, 2, 1)


def test_persistent_grid_is_a_multiple_of_the_cluster():
    shapes = {"c": (2 * 128 + 5, 3 * 256)}  # 3 x 3 programs
    kw = {"program_grid": GRID, "sm_count": 132}
    assert compute_grid(PERSISTENT, shapes, **kw) == (9, 1, 1)
    # programs in whole clusters: 4 x 3 (2x1) or 3 x 4 (1x2)
    two_by_one = {"cluster": (2, 1, 1), "program_cluster": (2, 1, 1)}
    assert compute_grid(PERSISTENT, shapes, **kw, **two_by_one) == (12, 1, 1)
    one_by_two = {"cluster": (2, 1, 1), "program_cluster": (1, 2, 1)}
    assert compute_grid(PERSISTENT, shapes, **kw, **one_by_two) == (12, 1, 1)
    big = {"c": (8192, 8192)}
    odd = {"program_grid": GRID, "sm_count": 133}
    assert compute_grid(PERSISTENT, big, **odd) == (133, 1, 1)
    assert compute_grid(PERSISTENT, big, **odd, **two_by_one) == (132, 1, 1)
    tiny = {"program_grid": GRID, "sm_count": 1}
    assert compute_grid(PERSISTENT, big, **tiny, **two_by_one) == (2, 1, 1)
    with pytest.raises(LaunchError, match="three positive extents"):
        compute_grid(GRID, {"c": (1, 1)}, cluster=(0, 1, 1))


def test_kernel_grid_uses_the_sidecar_cluster():
    class T:
        def __init__(self, *s):
            self.shape = s

    side = _compiled("gemm.mlir", "2x1", False).sidecar
    k = Kernel(b"", side)
    assert k.cluster == (2, 1, 1)
    a, b, c = T(2 * 128 + 5, 64), T(512, 64), T(2 * 128 + 5, 512)
    grid = k.grid(a, b, c)
    assert grid == (4, 2, 1) and all(g % n == 0 for g, n in zip(grid, k.cluster, strict=True))
    side = _compiled("gemm.mlir", "1x2", False).sidecar
    k = Kernel(b"", side)
    assert k.grid(T(256, 64), T(3 * 256, 64), T(256, 3 * 256)) == (2, 4, 1)


def test_sidecar_program_cluster_is_checked():
    side = dict(_compiled("gemm.mlir", "2x1", True).sidecar)
    validate_sidecar(side)
    side["program_cluster"] = [2, 1]
    with pytest.raises(LaunchError, match="program_cluster must have 3 entries"):
        validate_sidecar(side)


def test_bench_gemm_passes_the_cluster_option():
    """`benchmarks/bench_gemm.py --opt cluster=2x1`: a string value reaches compile_file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_gemm", REPO / "benchmarks/bench_gemm.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_gemm", bench)
    spec.loader.exec_module(bench)
    opts = bench.parse_opts(["cluster=2x1", "persistent=false"])
    assert opts == {"cluster": "2x1", "persistent": False}
    side = _compiled("gemm.mlir", opts["cluster"], opts["persistent"]).sidecar
    assert side["cluster"] == [2, 1, 1]
