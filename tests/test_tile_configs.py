"""The GEMM kernel over several tile configurations (BM, BN, BK) and both MMA input types,
compiled through `tawac.driver.compile_module`: wgmma shape and count, threads per CTA,
shared memory, and a clean ptxas run.

Shared memory of the aref rings (tawac/passes/lower_aref.py, hopper.SmemTileType): per
stage, one BMxBK and one BNxBK tile of 2-byte elements, each stored as BK*2/128 column
chunks of rows x 128 bytes aligned to 1024 (rows are multiples of 8 here, so no padding),
plus a full and an empty 8-byte mbarrier per stage:
    stages x (BM*BK + BN*BK) x 2 + 16 x stages
"""

from __future__ import annotations

import re

import pytest

from tawac.dialects import hopper
from tawac.driver import compile_module, parse_text
from tawac.schedule.planner import PREFERRED_DEPTH
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER

CONFIGS = [(128, 128, 64), (128, 256, 64), (64, 256, 64), (128, 128, 128)]
DTYPES = ["bf16", "f16"]


def gemm_text(bm: int, bn: int, bk: int, dt: str) -> str:
    """C = A * B^T with BMxBNxBK tiles, like examples/gemm.mlir."""
    a = f'!tile.tensor<?x?x{dt}, ["M", "K"]>'
    b = f'!tile.tensor<?x?x{dt}, ["N", "K"]>'
    c = f'!tile.tensor<?x?x{dt}, ["M", "N"]>'
    return f"""\
tile.kernel @gemm_{bm}x{bn}x{bk}_{dt}(%a: {a}, %b: {b}, %c: {c}) {{
  %c0 = arith.constant 0 : index
  %bk = arith.constant {bk} : index
  %bm = arith.constant {bm} : index
  %bn = arith.constant {bn} : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : {a}
  %zero = arith.constant dense<0.0> : tensor<{bm}x{bn}xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<{bm}x{bn}xf32>) {{
    %x = tile.load %a[%m0, %k] : {a} -> tensor<{bm}x{bk}x{dt}>
    %y = tile.load %b[%n0, %k] : {b} -> tensor<{bn}x{bk}x{dt}>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<{bm}x{bk}x{dt}>, tensor<{bn}x{bk}x{dt}> -> tensor<{bm}x{bn}xf32>
    scf.yield %d : tensor<{bm}x{bn}xf32>
  }}
  %o = arith.truncf %acc : tensor<{bm}x{bn}xf32> to tensor<{bm}x{bn}x{dt}>
  tile.store %o, %c[%m0, %n0] : tensor<{bm}x{bn}x{dt}> -> {c}
  tile.return
}}
"""  # noqa: E501


def compile_config(bm, bn, bk, dt, **options):
    """The tile as written (`widen=1`: a 64-row tile stays one program; tests/test_widen.py
    checks the widening)."""
    options.setdefault("widen", 1)
    text = gemm_text(bm, bn, bk, dt)
    return compile_module(parse_text(text, f"gemm_{bm}x{bn}x{bk}_{dt}.mlir"), **options)


def consumer_warp_groups(bm: int) -> int:
    """cooperative-consumers{warp-groups=0}: 2 when the tile has a multiple of 128 rows."""
    return 2 if bm % 128 == 0 else 1


def aref_smem(bm: int, bn: int, bk: int, stages: int) -> int:
    return stages * (bm * bk + bn * bk) * 2 + 16 * stages


def _ring_bytes_from_types(bm, bn, bk, dt, stages) -> int:
    """The same, from hopper.SmemTileType's own layout rules (1024-aligned 128-byte
    column chunks)."""
    from xdsl.dialects.builtin import BFloat16Type, Float16Type, TensorType

    et = BFloat16Type() if dt == "bf16" else Float16Type()
    total = 0
    for rows in (bm, bn):
        ring = hopper.smem_ring_type(TensorType(et, [rows, bk]), stages)
        tile_t = ring.tile_type
        assert tile_t.chunk_cols == 64 and tile_t.num_chunks == bk // 64
        assert tile_t.chunk_bytes % 1024 == 0
        total += hopper.ring_bytes(ring)
    return total + 16 * stages


ALL = [pytest.param(*cfg, dt, id=f"{cfg[0]}x{cfg[1]}x{cfg[2]}-{dt}") for cfg in CONFIGS
       for dt in DTYPES]  # fmt: skip


@pytest.mark.parametrize(("bm", "bn", "bk", "dt"), ALL)
def test_wgmma_shape_count_and_threads(bm, bn, bk, dt):
    res = compile_config(bm, bn, bk, dt, tma_store=False)
    ptx = res.ptx
    wg = consumer_warp_groups(bm)
    mmas = re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)\.f32\.(\w+)\.(\w+) ", ptx)
    assert mmas, "no wgmma.mma_async in the PTX"
    assert {m for m, _, _ in mmas} == {f"m64n{bn}k16"}
    assert {(x, y) for _, x, y in mmas} == {(dt, dt)}
    # One instruction per k16 step and m64 block of a consumer warp group's rows.
    assert len(mmas) == (bk // 16) * (bm // 64 // wg)
    # Each takes BN/2 f32 accumulator registers.
    for regs in re.findall(r"wgmma\.mma_async[^{]*\{([^}]*)\}", ptx):
        assert len(regs.split(",")) == bn // 2
    threads = 128 * (1 + wg)
    assert re.search(rf"^\.maxntid {threads}, 1, 1$", ptx, re.M), re.findall(r"\.maxntid.*", ptx)
    assert res.sidecar["block"] == [threads, 1, 1]
    assert ".target sm_90a" in ptx


def _default_depth(fits) -> int:
    """The planner's rule: the deepest ring up to PREFERRED_DEPTH that `fits`."""
    return next(d for d in range(PREFERRED_DEPTH, 0, -1) if fits(d))


@pytest.mark.parametrize(("bm", "bn", "bk", "dt"), ALL)
def test_dynamic_smem_is_the_aref_rings(bm, bn, bk, dt):
    res = compile_config(bm, bn, bk, dt, tma_store=False)
    depth = _default_depth(lambda d: aref_smem(bm, bn, bk, d) <= HOPPER.smem_per_block)
    expected = aref_smem(bm, bn, bk, depth)
    assert expected == _ring_bytes_from_types(bm, bn, bk, dt, depth)
    assert res.sidecar["dynamic_smem"] == expected


@pytest.mark.parametrize(("bm", "bn", "bk"), CONFIGS)
def test_dynamic_smem_follows_stages(bm, bn, bk):
    for stages in (1, 2, 3, 4):
        expected = aref_smem(bm, bn, bk, stages)
        if expected > HOPPER.smem_per_block:
            with pytest.raises(CompileError, match="shared memory"):
                compile_config(bm, bn, bk, "bf16", stages=stages, tma_store=False)
            continue
        res = compile_config(bm, bn, bk, "bf16", stages=stages, tma_store=False)
        assert res.sidecar["dynamic_smem"] == expected, stages
    # One more stage costs one pair of tiles and one pair of mbarriers.
    a = compile_config(bm, bn, bk, "bf16", stages=1, tma_store=False).sidecar["dynamic_smem"]
    b = compile_config(bm, bn, bk, "bf16", stages=2, tma_store=False).sidecar["dynamic_smem"]
    assert b - a == (bm * bk + bn * bk) * 2 + 16


@pytest.mark.parametrize(("bm", "bn", "bk"), CONFIGS)
def test_dynamic_smem_with_tma_store(bm, bn, bk):
    """The default epilogue stages the BMxBN output tile in shared memory, 1024-aligned
    after the rings, when it fits (tawac/passes/tma_store.py); otherwise it reuses the
    rings and adds nothing."""
    res = compile_config(bm, bn, bk, "bf16")

    def staged(d):
        return -(-aref_smem(bm, bn, bk, d) // 1024) * 1024 + bm * bn * 2

    def fits(b):
        return b <= HOPPER.smem_per_block

    if fits(staged(1)):
        expected = staged(_default_depth(lambda d: fits(staged(d))))
    else:
        expected = aref_smem(bm, bn, bk, _default_depth(lambda d: fits(aref_smem(bm, bn, bk, d))))
    assert res.sidecar["dynamic_smem"] == expected
    assert res.sidecar["dynamic_smem"] <= HOPPER.smem_per_block
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in res.ptx


@pytest.mark.parametrize(
    ("bm", "bn", "stages", "chunks"),
    [(128, 256, 3, 0), (128, 256, 4, 2), (128, 192, 4, 0), (128, 192, 5, 1), (256, 128, 4, 1)],
)
def test_chunked_staging_when_the_whole_tile_does_not_fit(bm, bn, stages, chunks):
    """The planner's `staging`: the whole BMxBN staging tile where it fits beside the
    rings; else a ring of two 64-column chunk buffers (BM x 128 bytes each), or one when
    two do not fit or the chunks (BN / 64) are odd in number."""
    from tawac import schedule
    from tawac.driver import run_pipeline
    from tawac.support.options import PipelineOptions

    module = parse_text(gemm_text(bm, bn, 64, "bf16"), "gemm.mlir")
    run_pipeline(module, PipelineOptions(stages=stages).pipeline(stop="pipeline"))
    kernel = next(op for op in module.body.block.ops if op.name == "tile.kernel")
    (store,) = schedule.of(kernel).stores
    assert (store.mode, store.buffers) == (("chunks", chunks) if chunks else ("whole", 0))
    res = compile_config(bm, bn, 64, "bf16", stages=stages)
    rings = -(-aref_smem(bm, bn, 64, stages) // 1024) * 1024
    staged = bm * bn * 2 if not chunks else chunks * bm * 128
    assert res.sidecar["dynamic_smem"] == rings + staged
    assert res.sidecar["dynamic_smem"] <= HOPPER.smem_per_block
    stores = res.ptx.count("cp.async.bulk.tensor.2d.global.shared::cta")
    assert stores == bn // 64


@pytest.mark.parametrize(("bm", "bn", "bk", "dt"), ALL)
def test_ptxas_assembles_without_spills(bm, bn, bk, dt):
    res = compile_config(bm, bn, bk, dt, cubin=True)
    report = res.ptxas_report
    assert res.cubin[:4] == b"\x7fELF"
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "warning" not in report.lower(), report
