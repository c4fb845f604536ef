"""Thread block clusters with TMA multicast of the shared operand, on the CPU:
the schedule records the cluster, `tawac explain` shows it, ptxas assembles the cluster
kernels cleanly and their SASS multicasts, the sidecar and the launcher's grid follow the
cluster shape, and kernels that cannot run in a cluster get a clear error. Every GEMM
example in 2x1 and 1x2 clusters; non-causal attention in 2x1 clusters (K and V
multicast, Q private); causal attention and 1x2 attention refused.

The GPU tests are tests/test_gpu_cluster.py and tests/test_gpu_cluster_attention.py.
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
from cli_inprocess import tawac
from test_examples import _cuobjdump, _opcodes

from tawac import schedule
from tawac.driver import compile_file, run_pipeline
from tawac.ir.parser import parse_file
from tawac.runtime import LaunchError
from tawac.runtime.arguments import validate_sidecar
from tawac.runtime.launcher import Kernel
from tawac.runtime.plans import compute_grid
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions
from tawac.target.layouts import SwizzledTile
from tawac.tools.explain import explain_module
from tawac.tools.tune import parse_space

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
GEMMS = [
    "gemm.mlir",
    "gemm_fp16.mlir",
    "gemm_nn.mlir",
    "gemm_bias.mlir",
    "gemm_fp8.mlir",
    "gemm_residual.mlir",
]
# Examples with an aref written once per tile, private to each CTA (its empty barriers
# count one CTA's consumer warps): the residual's C, attention's Q.
PER_TILE = {"gemm_residual.mlir", "attention.mlir", "attention_d64.mlir"}
ATTENTION = ["attention.mlir", "attention_d64.mlir"]
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
        ("gemm.mlir", "2x1", [(1,)]),  # x pairs M tiles: B is shared
        ("gemm.mlir", "1x2", [(0,)]),  # y pairs N tiles: A is shared
        ("gemm_nn.mlir", "2x1", [(1,)]),  # B stored KxN (MN-major) splits along K
        ("gemm_bias.mlir", "1x2", [(0,)]),
        ("gemm_fp8.mlir", "2x1", [(1,)]),
        ("gemm_fp8.mlir", "1x2", [(0,)]),
        # the epilogue's C (an aref written once per tile) stays private
        ("gemm_residual.mlir", "2x1", [(1,), ()]),
        ("gemm_residual.mlir", "1x2", [(0,), ()]),
        # x pairs query blocks of one head: K and V (one payload each) are shared, Q not
        ("attention.mlir", "2x1", [(), (0,), (0,)]),
        ("attention_d64.mlir", "2x1", [(), (0,), (0,)]),
    ],
)
def test_schedule_records_the_cluster_and_the_shared_operand(name, cluster, shared):
    plan = _plan(name, cluster=cluster)
    assert plan.cluster == {"2x1": (2, 1), "1x2": (1, 2)}[cluster]
    assert [a.multicast for a in plan.arefs] == shared
    assert plan.cluster_size == 2
    assert plan.cluster_axis == (0 if cluster == "2x1" else 1)


def test_default_is_no_cluster():
    plan = _plan("gemm.mlir")
    assert plan.cluster == (1, 1) and plan.cluster_axis is None
    assert all(a.multicast == () for a in plan.arefs)
    side = compile_file(EXAMPLES / "gemm.mlir").sidecar
    assert side["cluster"] == [1, 1, 1] and "program_cluster" not in side


def _explain_cli(example: str, *args: str) -> str:
    """`tawac explain examples/<example> args...` (in this process): its stdout."""
    return tawac(["explain", str(EXAMPLES / example), *args], check=True).stdout


def test_explain_shows_the_cluster():
    info = explain_module(parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions(cluster="2x1"))
    assert info["cluster"]["shape"] == [2, 1] and info["cluster"]["axis"] == "x"
    assert info["arefs"][0]["multicast"] == [1]
    assert info["arefs"][0]["multicast_tensors"] == ["%b"]
    plain = explain_module(parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions())
    assert "cluster" not in plain and "multicast" not in plain["arefs"][0]
    out = _explain_cli("gemm.mlir", "--cluster", "1x2")
    assert "cluster: 1x2, program ids y = 2i .. 2i+1" in out
    assert "%a" in out and "(multicast)" in out
    data = json.loads(_explain_cli("gemm.mlir", "--cluster", "2x1", "--json"))
    assert data["cluster"]["ctas"] == 2


def test_explain_shows_the_attention_cluster():
    info = explain_module(parse_file(EXAMPLES / "attention.mlir"), PipelineOptions(cluster="2x1"))
    assert info["cluster"]["shape"] == [2, 1] and info["cluster"]["axis"] == "x"
    assert ["multicast" in a for a in info["arefs"]] == [False, True, True]
    assert [a.get("multicast_tensors") for a in info["arefs"]] == [None, ["%k"], ["%v"]]
    out = _explain_cli("attention.mlir", "--cluster", "2x1")
    assert "cluster: 2x1, program ids x = 2i .. 2i+1 (same y and z)" in out
    assert "%k, %v" in " ".join(out.split())  # the line may wrap


def test_cluster_option_spellings():
    assert "cluster=2x1" in PipelineOptions(cluster="2x1").plan_spec()
    assert parse_space(["cluster=1x1,2x1,1x2"])[0].values == ("1x1", "2x1", "1x2")
    with pytest.raises(CompileError, match="expected 1x1, 2x1, 1x2"):
        parse_space(["cluster=2x2"])
    with pytest.raises(CompileError, match="cluster must be one of 1x1, 2x1, 1x2, got '4x1'"):
        _plan("gemm.mlir", cluster="4x1")


# ---------------------------------------------------------------- clear errors


@pytest.mark.parametrize("name", ["attention_causal.mlir", "attention_causal_d64.mlir"])
def test_causal_attention_is_refused(name):
    """The key loop ends at the diagonal (its bound follows program id x): the paired
    CTAs would run different numbers of key steps, and a multicast needs both."""
    with pytest.raises(CompileError, match="different numbers of steps") as info:
        compile_file(EXAMPLES / name, cluster="2x1")
    text = str(info.value)
    assert "cluster 2x1" in text and "the loop's bounds depend on program id x" in text
    lines = (EXAMPLES / name).read_text().splitlines()
    loop = next(n for n, line in enumerate(lines, 1) if "scf.for %n" in line)
    assert f"{name}:{loop}:" in text  # located at the key loop


@pytest.mark.parametrize("name", ["attention.mlir", "attention_d64.mlir", "attention_causal.mlir"])
def test_attention_1x2_is_refused(name):
    """1x2 pairs heads: K, V and Q all follow program id y."""
    with pytest.raises(CompileError, match="every operand load depends on program id y: nothing"):
        compile_file(EXAMPLES / name, cluster="1x2")


def test_cli_error_is_one_line(tmp_path):
    out = tmp_path / "a.ptx"
    proc = tawac(
        ["compile", str(EXAMPLES / "attention_causal.mlir")] + ["-o", str(out), "--cluster", "2x1"]
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "attention_causal.mlir:" in lines[0] and "different numbers of steps" in lines[0]
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
    # empty barriers: the consumer warps of both CTAs (2 warp groups x 4 warps x 2);
    # those of a private aref written once per tile, one CTA's
    consumer_warps = 4 * (res.sidecar["block"][0] // 128 - 1)
    inits = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", ptx)
    private = [consumer_warps] if name in PER_TILE else []
    assert sorted(set(map(int, inits))) == sorted([1, *private, 2 * consumer_warps])
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


@pytest.mark.parametrize("name", ATTENTION)
@pytest.mark.parametrize("persistent", [True, False])
def test_attention_cluster_kernels(name, persistent):
    """K and V multicast (each CTA its 64-row band of the 128-row tiles, every 64-column
    chunk), Q a plain copy; every release of a K or V slot also arrives on the peer's
    empty barrier, Q's only on its own; ptxas assembles it without spills."""
    res = _compiled(name, "2x1", persistent)
    report = res.ptxas_report
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "warning" not in report.lower(), report
    ptx = res.ptx
    d = 64 if "d64" in name else 128
    block_m = 192 if "d64" in name else 128
    chunks = d // 64
    copies = re.findall(r"cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.tile\S*", ptx)
    multicast = [c for c in copies if c.endswith(".multicast::cluster")]
    assert len(multicast) == 2 * chunks  # K and V, one copy per chunk each
    assert len(copies) - len(multicast) == chunks  # Q
    assert ".param .align 64 .b8 k_tmap_64x64x1x1[128]" in ptx  # a band of 64 keys
    assert ".param .align 64 .b8 v_tmap_64x64x1x1[128]" in ptx
    assert f".param .align 64 .b8 q_tmap_64x{block_m}x1x1[128]" in ptx  # the whole Q tile
    local = ptx.count("mbarrier.arrive.shared::cta.b64")
    remote = ptx.count("mbarrier.arrive.shared::cluster.b64")
    assert remote == ptx.count("mapa.shared::cluster.u32") and remote > 0
    assert local - remote == 1  # Q's release
    assert ptx.count("barrier.cluster.arrive.release;") == 3
    assert ptx.count("barrier.cluster.wait.acquire;") == 3
    assert ".release.cluster.shared::cluster" not in ptx and ".acquire.cluster" not in ptx
    consumer_warps = 4 * (res.sidecar["block"][0] // 128 - 1)
    inits = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", ptx)
    assert sorted(set(map(int, inits))) == [1, consumer_warps, 2 * consumer_warps]
    side = res.sidecar
    assert side["cluster"] == [2, 1, 1]
    if persistent:
        assert side["program_cluster"] == [2, 1, 1]
        assert side["grid"][0] == {"persistent": 1}
        assert [g["cdiv"]["dim"] for g in side["program_grid"]] == [2, 1, 0]
    else:
        assert "program_cluster" not in side
        assert side["grid"][0] == {"cdiv": {"arg": "o", "dim": 2}, "by": block_m}
    validate_sidecar(side)


@needs_cuobjdump
@pytest.mark.parametrize("name", ["gemm.mlir", "gemm_fp8.mlir", "gemm_residual.mlir"])
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
def test_sass_multicasts(name, cluster, persistent):
    sass = _sass(name, cluster, persistent)
    ops = _opcodes(sass)
    assert "UTMALDG.2D.MULTICAST" in ops, sorted(ops)
    assert "UTMALDG.2D" in ops  # the private operand
    assert {"UCGABAR_ARV", "UCGABAR_WAIT"} <= ops, sorted(ops)
    bases = {op.split(".")[0] for op in ops}
    assert {"QGMMA" if "fp8" in name else "HGMMA", "USETMAXREG", "SYNCS"} <= bases
    assert not bases & {"LDL", "STL"}


@needs_cuobjdump
@pytest.mark.parametrize("name", ATTENTION)
@pytest.mark.parametrize("persistent", [True, False])
def test_sass_multicasts_attention(name, persistent):
    ops = _opcodes(_sass(name, "2x1", persistent))
    assert {"UTMALDG.4D.MULTICAST", "UTMALDG.4D"} <= ops, sorted(ops)
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


def test_attention_grid_pairs_query_blocks():
    """Odd numbers of query blocks: the grid (plain) or the programs (persistent) are
    rounded up to whole clusters along x; heads and batches are not paired."""

    class T:
        def __init__(self, *s):
            self.shape = s

    side = _compiled("attention.mlir", "2x1", False).sidecar
    t = T(2, 3, 2 * 128 + 17, 128)  # 3 query blocks
    assert Kernel(b"", side).grid(t, t, t, t, 0.1) == (4, 3, 2)
    side = _compiled("attention_d64.mlir", "2x1", False).sidecar
    t = T(1, 5, 4 * 192 + 1, 64)  # 5 query blocks of 192
    assert Kernel(b"", side).grid(t, t, t, t, 0.1) == (6, 5, 1)
    side = _compiled("attention.mlir", "2x1", True).sidecar
    kw = {
        "program_grid": side["program_grid"],
        "cluster": side["cluster"],
        "program_cluster": side["program_cluster"],
    }
    shapes = {n: (2, 3, 2 * 128 + 17, 128) for n in "qkvo"}  # 4 x 3 x 2 programs in clusters
    assert compute_grid(side["grid"], shapes, sm_count=132, **kw) == (24, 1, 1)
    assert compute_grid(side["grid"], shapes, sm_count=7, **kw) == (6, 1, 1)


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
