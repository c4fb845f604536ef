"""The cost model of tile-level ops (tawac/schedule/cost.py): hand-computed costs from the
Hopper table, and a cost for every op of the example kernels' loop bodies."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from xdsl.dialects import arith, math, scf
from xdsl.dialects import test as xdsl_test
from xdsl.dialects.builtin import IndexType, TensorType, bf16, f32

from tawac.dialects import aref, tile
from tawac.driver import parse_text, run_pipeline
from tawac.schedule.cost import ASYNC_ISSUE, OpCost, wgmma_timing
from tawac.schedule.cost import op_cost as _op_cost
from tawac.target import HOPPER, Target

#: The uncalibrated table: these tests check its arithmetic (the shipped calibration's
#: figures are tested in tests/test_calibrate.py).
TABLE = Target()


def op_cost(op, warp_groups=1):
    return _op_cost(op, warp_groups, TABLE)


REPO = Path(__file__).resolve().parent.parent


def _value(t):
    return xdsl_test.TestOp(result_types=[t]).results[0]


def _tile(rows: int, cols: int, elem=bf16):
    return _value(TensorType(elem, [rows, cols]))


def test_dot_128x128x128_on_two_warp_groups():
    # Each warp group: 64 rows = one m64 block, K/16 = 8 wgmma m64n128k16; the tensor core
    # takes one every 64 cycles (N/2); the chain completes 7 x 64 + 118 cycles after issue.
    dot = tile.DotOp(_tile(128, 128), _tile(128, 128), _tile(128, 128, f32), transpose_rhs=True)
    c = op_cost(dot, warp_groups=2)
    assert (c.unit, c.occupancy, c.latency, c.issue) == ("tensor", 512.0, 566.0, 8 * ASYNC_ISSUE)
    assert "8 x wgmma m64n128k16" in c.source


def test_dot_rows_and_n_split():
    # One warp group owns both m64 blocks: 16 instructions.
    dot = tile.DotOp(_tile(128, 128), _tile(128, 128), _tile(128, 128, f32), transpose_rhs=True)
    assert op_cost(dot, 1).occupancy == 1024.0
    # GEMM's 128x256x64 on 2 warp groups: 4 x m64n256k16 at 128 cycles each.
    gemm = tile.DotOp(_tile(128, 64), _tile(256, 64), _tile(128, 256, f32), transpose_rhs=True)
    c = op_cost(gemm, 2)
    assert (c.occupancy, c.latency) == (512.0, 3 * 128 + 182.0)


def test_wgmma_interpolation():
    assert wgmma_timing(128)[:2] == (64.0, 118.0)
    assert wgmma_timing(96)[:2] == (48.0, 102.0)  # halfway between N=64 and N=128
    assert wgmma_timing(32)[:2] == (16.0, 70.0)  # extrapolated below N=64
    assert wgmma_timing(192)[:2] == (96.0, 150.0)


def test_exp2_128x128_on_two_warp_groups():
    # 8192 elements per warp group at 16 per cycle per SM, then ex2's 17-cycle latency.
    c = op_cost(math.Exp2Op(_tile(128, 128, f32)), warp_groups=2)
    assert (c.unit, c.issue, c.occupancy, c.latency) == ("mufu", 512.0, 512.0, 529.0)


def test_put_of_two_bf16_tiles():
    # 128x64 + 256x64 bf16 = 48 KiB = 3 x 16 KiB: lands after 3 x the L2-hit latency of
    # 479 cycles; copies pipeline, so the TMA unit is busy only while they are issued (a
    # GEMM's ring keeps several in flight and the tensor core, not TMA, bounds it).
    t1, t2 = TensorType(bf16, [128, 64]), TensorType(bf16, [256, 64])
    ring = _value(aref.ArefType([t1, t2], 2))
    put = aref.PutOp(ring, _value(IndexType()), [_value(t1), _value(t2)])
    c = op_cost(put, warp_groups=2)
    assert (c.unit, c.latency, c.occupancy, c.issue) == (
        "tma",
        1437.0,
        2 * ASYNC_ISSUE,
        2 * ASYNC_ISSUE,
    )


def test_elementwise_reduce_and_sync():
    s = _tile(128, 128, f32)
    mul = arith.MulfOp(s, s)
    assert op_cost(mul, 2) == OpCost("fma", 64.0, 64.0, 68.0, op_cost(mul, 2).source)
    row = _value(TensorType(f32, [128]))
    # A row vector: each row's value lives in the 4 threads of a quad: 64 x 4 ops.
    assert op_cost(arith.MulfOp(row, row), 2).occupancy == 2.0
    red = tile.ReduceOp("sum", s, 1, TensorType(f32, [128]))
    c = op_cost(red, 2)
    # fold 8192/128 = 64; 2 rounds of (256 lanes / 32 shuffle + 256 / 128 fma) = 20
    assert (c.unit, c.issue, c.occupancy) == ("fma", 84.0, 64.0)
    assert c.latency == 68.0 + 2 * (10 + 24 + 4)
    assert [p.unit for p in c.parts] == ["fma", "shfl"] and c.parts[1].occupancy == 16.0
    # max and min (FMNMX) run at half the FMA rate (the measured max.f32 row)
    c = op_cost(tile.ReduceOp("max", s, 1, TensorType(f32, [128])), 2)
    assert (c.issue, c.occupancy) == (148.0, 128.0)
    assert op_cost(arith.MaximumfOp(s, s), 2).occupancy == 128.0
    ring = _value(aref.ArefType([TensorType(bf16, [128, 128])], 2))
    idx = _value(IndexType())
    assert op_cost(aref.ConsumedOp(ring, idx), 2).latency == 72.0
    get = op_cost(aref.GetOp(ring, idx), 2)
    assert (get.unit, get.issue, get.latency) == ("sync", 0.0, 0.0)
    # A payload read into registers (not a dot's operand): its ld.shared words on the MIO
    # pipe, 128 x 128 bf16 over 2 warp groups = 4096 words at 32 lanes per cycle.
    read = aref.GetOp(ring, idx)
    arith.AddfOp(read.results[0], read.results[0])
    c = op_cost(read, 2)
    assert (c.unit, c.issue, c.occupancy, c.latency) == ("shfl", 128.0, 128.0, 128.0 + 23)
    scalar = op_cost(arith.AddiOp(idx, idx), 2)
    assert (scalar.unit, scalar.issue, scalar.latency) == ("alu", 0.0, 0.0)


def test_unknown_tile_op_and_bad_arguments():
    with pytest.raises(ValueError, match="no cost model"):
        op_cost(math.CosOp(_tile(128, 128, f32)), 1)
    with pytest.raises(ValueError, match="warp_groups"):
        op_cost(math.Exp2Op(_tile(128, 128, f32)), 0)


def test_a_store_in_a_loop_costs_its_bytes_at_the_dram_share():
    """A 64x128 bf16 tile (16 KiB) written from a consumer loop: its bytes at the SM's
    share of DRAM bandwidth on the TMA unit, as a put's reads."""
    store = tile.StoreOp(_tile(64, 128), _value(IndexType()), [])
    c = op_cost(store, 1)
    dram = TABLE.cost("bytes").throughput
    assert c.unit == "tma" and c.issue == ASYNC_ISSUE
    assert c.occupancy == pytest.approx(ASYNC_ISSUE + 16384 / dram)


def _loop_bodies(path: Path):
    module = parse_text(path.read_text(), str(path))
    run_pipeline(module, "warp-specialize")
    out = {}
    for part in module.walk():
        if isinstance(part, aref.PartitionOp):
            loops = [op for op in part.walk() if isinstance(op, scf.ForOp)]
            out[part.role.data] = list(loops[0].body.block.ops)
    return out


@pytest.mark.parametrize("name", ["attention.mlir", "gemm.mlir", "attention_causal.mlir"])
def test_every_loop_op_of_the_examples_has_a_cost(name):
    for role, ops in _loop_bodies(REPO / "examples" / name).items():
        for op in ops:
            c = op_cost(op, 2)
            assert min(c.issue, c.occupancy, c.latency) >= 0, (role, op.name)


def test_attention_masking_branch_costs_its_then_branch():
    ops = _loop_bodies(REPO / "examples" / "attention.mlir")["consumer"]
    branch = next(op for op in ops if op.name == "scf.if")
    c = op_cost(branch, 2)
    # iota, cmpi, select on 128x128 over 2 warp groups: 3 x 64 cycles on the FMA pipe.
    assert (c.unit, c.issue, len(c.parts)) == ("fma", 192.0, 3)
    # `Target.if_taken` charges that share of it per iteration (0: a branch never taken).
    half = _op_cost(branch, 2, dataclasses.replace(TABLE, if_taken=0.5))
    assert (half.issue, half.occupancy, half.latency) == pytest.approx(
        (c.issue / 2, c.occupancy / 2, c.latency / 2)
    )
    assert _op_cost(branch, 2, dataclasses.replace(TABLE, if_taken=0.0)).issue == 0.0


def _producer_puts(path: Path) -> list:
    return [op for op in _loop_bodies(path)["producer"] if isinstance(op, aref.PutOp)]


@pytest.mark.parametrize(
    ("path", "streamed"),
    [
        # grid over M only: no other program reads a row band of A: 16 KiB from DRAM
        ("tests/data/chained_gemm.mlir", 16384),
        # A shared along program id y, B along x
        ("examples/gemm.mlir", 0),
        # K and V shared by the query blocks of a head; causal: the same keys 0, 128, ...
        # up to each block's diagonal (the loop's upper bound alone depends on x)
        ("examples/attention.mlir", 0),
        ("examples/attention_causal.mlir", 0),
        ("corpus/attention_gqa.mlir", 0),
        # batched: A[b] shared along y, B[b] along x
        ("corpus/gemm_batched.mlir", 0),
    ],
)
def test_streamed_operands_are_read_from_dram(path, streamed):
    puts = _producer_puts(REPO / path)
    assert puts
    costs = [op_cost(p, 2) for p in puts]
    dram_cycles = sum(c.occupancy - c.issue for c in costs)
    assert dram_cycles == pytest.approx(streamed / 11.5)
    if streamed:
        assert any("from DRAM" in c.source for c in costs)


def test_a_streaming_loop_is_bound_by_dram():
    """chained_gemm's loop: 16 KiB of A from DRAM per iteration at 11.5 B/cycle (1425
    cycles) outlasts its 512-cycle MMA; measured 1270-1350 cycles per iteration on the
    H100 (docs/perf.md, the corpus)."""
    from tawac.driver import parse_source
    from tawac.support.options import PipelineOptions
    from tawac.tools.explain import explain_module

    info = explain_module(
        parse_source(REPO / "tests/data/chained_gemm.mlir"), PipelineOptions(), timeline=True
    )
    dram = HOPPER.cost("bytes").throughput  # the calibrated rate, where one ships
    assert info["timeline"]["ii"] == pytest.approx(16384 / dram, rel=0.01)


def _planned(path: Path):
    from tawac.tools.calibrate import prepare

    p = prepare(path, None, "heuristic")
    return p.kernel, p.plan


@pytest.mark.parametrize(
    ("sizes", "lone"),
    [
        (None, frozenset()),
        # the grid is cdiv(M, 128) x cdiv(N, 128) x 1: z always has one program
        ({"M": 65536, "N": 128, "K": 4096}, frozenset({1, 2})),  # one column tile
        ({"M": 65536, "N": 256, "K": 4096}, frozenset({2})),
        ({"M": 100, "N": 100, "K": 64}, frozenset({0, 1, 2})),
        ({"M": 65536}, frozenset({2})),  # N not given: unknown
    ],
)
def test_lone_axes_follow_the_sizes(sizes, lone):
    from tawac.analysis.grid import lone_axes

    kernel, _ = _planned(REPO / "tests/data/row_softmax.mlir")
    assert lone_axes(kernel, sizes) == lone


def test_a_grid_of_one_column_streams_a_from_dram():
    """row_softmax at N = 128: one program along y, so no other program reads A's row band:
    16 KiB per iteration from DRAM (measured 1222-1361 cycles per iteration on the H100,
    where the model without the sizes said 597: docs/perf.md). Without the sizes, or with
    two column tiles, A comes from L2."""
    from tawac.schedule.model import model_intervals

    kernel, plan = _planned(REPO / "tests/data/row_softmax.mlir")
    (alone,) = model_intervals(kernel, plan, target=TABLE)
    (streamed,) = model_intervals(kernel, plan, target=TABLE, sizes={"M": 65536, "N": 128})
    (shared,) = model_intervals(kernel, plan, target=TABLE, sizes={"M": 65536, "N": 256})
    assert alone == shared < 16384 / 11.5
    assert streamed == pytest.approx(16384 / 11.5, rel=0.01)


def test_tma_arrival_under_load():
    """With the fitted figures a copy arrives `fixed + bytes / rate` after its issue; with
    none, the table's one-copy latency (479 cycles per 16 KiB) scaled by the bytes."""
    import dataclasses

    (put,) = _producer_puts(REPO / "examples/gemm.mlir")  # A 128x64 + B 256x64: 48 KiB
    assert _op_cost(put, 2, TABLE).latency == pytest.approx(479 * 3)
    loaded = dataclasses.replace(TABLE, tma_fixed_cycles=1000.0, tma_bytes_per_cycle=64.0)
    assert _op_cost(put, 2, loaded).latency == pytest.approx(1000 + 49152 / 64)
    assert loaded.model_key != TABLE.model_key


def test_fewer_programs_than_sms_share_dram_among_fewer():
    """A decode step of 32 programs (8 sequences x 4 K/V head groups) streams its K/V
    cache from DRAM at 132 / 32 times an SM's share of the bandwidth, up to the most one
    SM reads (the `bytes to one SM` row); at 64 sequences (256 programs) at the share."""
    from tawac.analysis.grid import problem_at
    from tawac.schedule.cost import _dram_share

    kernel, _ = _planned(REPO / "examples/attention_decode.mlir")
    sizes = {"B": 8, "H": 32, "L": 1, "HK": 4, "S": 8192, "D": 128}
    few = problem_at(kernel, sizes)
    assert few is not None and few.programs == 32 and 0 in few.lone
    many = problem_at(kernel, {**sizes, "B": 64})
    assert many is not None and many.programs == 256
    share = TABLE.cost("bytes").throughput
    assert _dram_share(TABLE, many.programs)[0] == share
    assert _dram_share(TABLE, few.programs)[0] == min(share * 132 / 32, 31.0)
    assert _dram_share(TABLE, 1)[0] == TABLE.cost("bytes to one SM").throughput == 31.0


@pytest.mark.parametrize(
    ("path", "sizes", "streamed"),
    [
        # 64 row blocks read the weights of 8 experts: shared (pigeonhole); A's row block
        # is shared along y
        ("examples/gemm_grouped.mlir", {"T": 8192, "N": 4096, "K": 4096, "E": 8, "BLOCKS": 64}, 0),
        # as many experts as row blocks: each block may have its own expert's weights
        (
            "examples/gemm_grouped.mlir",
            {"T": 8192, "N": 4096, "K": 4096, "E": 64, "BLOCKS": 64},
            256 * 64 * 2,
        ),
        # a paged cache: more pages than sequences, so a page is one sequence's (one query
        # block per sequence: Q, then K and V from DRAM; 32 programs: 31 B/cycle each)
        (
            "examples/attention_paged.mlir",
            {"B": 8, "H": 32, "L": 1, "HK": 4, "P": 1024, "PAGE": 128, "D": 128, "MAXP": 128},
            (16384 + 2 * 128 * 128 * 2) / 31.0 * 11.5,
        ),
    ],
)
def test_coordinates_read_from_memory_are_shared_by_pigeonhole(path, sizes, streamed):
    """A tile whose coordinate is read from memory is shared where the programs along
    the index's axis outnumber the values it indexes (`read_by_one_program`); the bytes
    streamed from DRAM, in the units of the table's per-SM share (11.5 B/cycle)."""
    from tawac.analysis.grid import problem_at

    kernel, _ = _planned(REPO / path)
    problem = problem_at(kernel, sizes)
    puts = [o for o in kernel.walk() if isinstance(o, aref.PutOp)]
    costs = [_op_cost(p, 2, TABLE, problem) for p in puts]
    dram = sum(c.occupancy - c.issue for c in costs)
    assert dram == pytest.approx(streamed / TABLE.cost("bytes").throughput)
