"""The shared-memory plan (tawac/schedule/smem.py): its layout rules, and that what the
passes plan before lowering is the layout lower-aref and tma-store produce."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import TensorType, bf16, f32

from tawac import schedule
from tawac.dialects import hopper, tile
from tawac.driver import compile_module, parse_text, run_pipeline
from tawac.schedule.smem import SmemPlan, kernel_plan
from tawac.support.options import PipelineOptions
from tawac.target import HOPPER

REPO = Path(__file__).resolve().parent.parent
KERNELS = sorted(
    [
        *REPO.glob("examples/*.mlir"),
        *REPO.glob("tests/data/*.mlir"),
        *REPO.glob("tests/data/variants/*.mlir"),
    ]
)


def _ring(rows: int, cols: int, depth: int, elem=bf16) -> hopper.SmemRingType:
    return hopper.smem_ring_type(TensorType(elem, [rows, cols]), depth)


def test_layout_rules():
    plan = SmemPlan()
    a = plan.tiles("a", _ring(128, 64, 3))  # 3 x 16 KiB
    full = plan.barriers("full", 3)
    empty = plan.barriers("empty", 3)
    b = plan.tiles("b", _ring(8, 64, 1))  # 1 KiB, must start on 1024 bytes
    assert (a.offset, a.size) == (0, 3 * 16384)
    assert (full.offset, empty.offset) == (3 * 16384, 3 * 16384 + 24)
    assert b.offset == 49 * 1024  # 3 x 16 KiB + 48 bytes of mbarriers, rounded up to 1 KiB
    assert plan.end == b.end and plan.fits()
    regions = plan.regions
    assert all(r.end <= n.offset for r, n in zip(regions, regions[1:], strict=False))


def test_arefs_pack_their_rings_before_their_mbarriers():
    """The arefs' rings follow one another without alignment padding and all their
    mbarriers come after them: four arefs of 32 KiB slots (attention with a bias tile at
    head dim 128: Q once, K, V and the bias twice) fit in 232448 bytes, which an aref's
    mbarriers after its own rings (1008 bytes of padding per aref) missed by 32."""
    from tawac.dialects import aref as aref_d

    slot = TensorType(bf16, [128, 128])
    types = [aref_d.ArefType([slot], 1)] + [aref_d.ArefType([slot], 2) for _ in range(3)]
    plan = SmemPlan()
    placed = plan.arefs([(t, None) for t in types])
    rings = [r for rs, _, _ in placed for r in rs]
    assert [r.offset for r in rings] == [0, 32768, 98304, 163840]
    barriers = [b for _, full, empty in placed for b in (full, empty)]
    assert barriers[0].offset == 229376 and all(b.offset % 8 == 0 for b in barriers)
    assert [b.size for b in barriers] == [8, 8, 16, 16, 16, 16, 16, 16]
    assert plan.end == 229376 + 112 and plan.fits()
    # a depth given beside the type overrides the aref's own
    assert SmemPlan().arefs([(types[0], 3)])[0][0][0].size == 3 * 32768


def test_try_tiles_keeps_the_plan_within_the_limit():
    plan = SmemPlan(start=HOPPER.smem_per_block - 20000)
    assert plan.try_tiles("big", _ring(128, 128, 1, f32)) is None  # 64 KiB: does not fit
    assert plan.end == HOPPER.smem_per_block - 20000 and plan.regions == []
    assert plan.try_tiles("small", _ring(64, 64, 1)) is not None  # 8 KiB after alignment
    assert plan.fits()


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.name)
def test_plan_before_lowering_is_the_layout(path):
    """Planned after cooperative-consumers (the arefs at their final depths), the
    shared memory equals what lower-aref and tma-store lay out (the sidecar's)."""
    text = path.read_text()
    module = parse_text(text, path.name)
    run_pipeline(module, PipelineOptions().pipeline(stop="lower-aref"))
    (kernel,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
    plan = schedule.of(kernel)
    wgs = plan.role("consumer").warp_groups
    chunks = max((st.buffers for st in plan.stores if st.mode == "chunks"), default=0)
    planned = kernel_plan(kernel, warp_groups=wgs, chunks=chunks).end
    assert planned == compile_module(parse_text(text, path.name)).sidecar["dynamic_smem"]
    assert planned <= HOPPER.smem_per_block


def test_without_tma_stores_no_staging_tile_is_reserved():
    """One model for planner and passes: with --no-tma-store nothing is staged, so the
    planner's ring depth does not leave room for a staging tile either (the 128x256
    residual GEMM: 3 stages beside one 16 KiB chunk buffer, where a whole 64 KiB staging
    tile would leave 2: `planner.MIN_GEMM_DEPTH`; 3 without staging)."""
    path = REPO / "examples" / "gemm_residual.mlir"
    depths = {}
    for tma in (True, False):
        module = parse_text(path.read_text(), path.name)
        run_pipeline(module, PipelineOptions(tma_store=tma).pipeline(stop="pipeline"))
        (kernel,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
        plan = schedule.of(kernel)
        depths[tma] = (plan.aref("a_b").depth, [st.mode for st in plan.stores])
    assert depths == {True: (3, ["chunks"]), False: (3, ["registers"])}


def _planned(path: Path, defines=None, **options) -> tuple[tile.KernelOp, schedule.Schedule]:
    module = parse_text(path.read_text(), path.name, params=defines)
    run_pipeline(module, PipelineOptions(**options).pipeline(stop="pipeline"))
    (kernel,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
    return kernel, schedule.of(kernel)


def test_the_coarse_pipelines_ring_gets_a_second_slot_where_one_fits():
    """Attention with a 128x128 bias tile at head dim 128: the rings fit one slot deep
    beside Q's two and the staging tile, which leaves the loop unpipelined (its PV ring
    must hold two slots); V's ring gets the second slot that fits, and the loop takes the
    two-stage split. An explicit ring depth is kept as given."""
    path = REPO / "tests" / "data" / "attention_bias.mlir"
    _, plan = _planned(path)
    assert {a.name: a.depth for a in plan.arefs} == {"q": 2, "k": 1, "v": 2, "bias": 1}
    assert plan.loop("consumer", 0).stages == 2
    _, fixed = _planned(path, stages=1)
    assert {a.name: a.depth for a in fixed.arefs} == {"q": 2, "k": 1, "v": 1, "bias": 1}
    assert fixed.loop("consumer", 0).stages == 1


def test_the_second_slot_is_taken_only_where_the_model_prices_it_faster(monkeypatch):
    """Head dim 256 with 64-key blocks: the same second slot fits, but the timeline model
    prices the two-stage loop above the unpipelined one (measured slower too,
    docs/perf.md), so the heuristic keeps the one-slot rings."""
    from tawac.schedule import planner
    from tawac.schedule.model import model_intervals

    path = REPO / "corpus" / "attention_kv.mlir"
    defines = {"HEAD_DIM": 256, "BLOCK_N": 64}
    kernel, kept = _planned(path, defines)
    assert {a.name: a.depth for a in kept.arefs} == {"q": 1, "k": 1, "v": 1}
    monkeypatch.setattr(planner, "_faster", lambda *args: True)
    kernel2, split = _planned(path, defines)
    assert {a.name: a.depth for a in split.arefs} == {"q": 1, "k": 1, "v": 2}
    assert split.loop("consumer", 0).stages == 2

    def price(k, s):
        return sum(model_intervals(k, s))

    assert price(kernel2, split) > price(kernel, kept)
