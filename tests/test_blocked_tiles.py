"""2-d tiles of fewer than 64 rows in kernels without MMAs: the blocked layout
(`tawac.target.blocked_tiles.BlockedTileLayout`) a consumer partition takes where the
accumulator layout cannot split its tiles, and the kernels it makes compile: Triton's
`_layer_norm_bwd_dwdb` (32 x 128 column-sum blocks), a column sum over a loop and a row
softmax in 32- and 16-row tiles (tests/data/no_mma/blocked_*.mlir).

On the CPU: the layout against an independent model (every element held once, the
thread expressions, the slices and the lanes of each reduction, each run's shared-memory
address against the TMA swizzle), which layout each kernel gets, the tile passes and
the interpreter on the new kernels, ptxas without spills. On the GPU: each kernel
against torch at ragged sizes."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from gpu_util import assert_assembles_without_spills, load_module, loaded_kernel, requires_gpu

from tawac import driver
from tawac.backend_ptx.vector_layouts import TileLayouts
from tawac.check import baseline, validate_pipeline
from tawac.compiler import default_pipeline, parse_file, run_pipeline
from tawac.dialects import aref, tile
from tawac.runtime.interpret import interpret_launch
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER
from tawac.target.blocked_tiles import BlockedTileLayout, run_access
from tawac.target.layouts import AccLayout, SwizzledTile

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "data" / "no_mma"
DWDB = REPO / "examples" / "triton" / "layer_norm_bwd_dwdb.ttir"
COLUMN_SUM = REPO / "examples" / "column_sum.mlir"


def _layout(m, n, w, b) -> BlockedTileLayout:
    return BlockedTileLayout.for_tile(m, n, w, b)


def _has_layout(m, n, w, b) -> bool:
    try:
        _layout(m, n, w, b)
    except ValueError:
        return False
    return True


#: (rows, columns, warp groups, element bytes) of the layouts checked against the model:
#: the warps below each other (4 rows or more a warp group) and side by side (1-3, 6).
SHAPES = [
    (m, n, w, b)
    for m, n, w, b in itertools.product(
        (1, 2, 3, 4, 6, 16, 32, 96), (16, 96, 128, 512, 4096), (1, 2), (2, 4)
    )
    if _has_layout(m, n, w, b) and m * n <= 32 * 512
]


# ---- the layout against a model


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_each_element_has_one_owner_and_the_expressions_say_where(shape):
    """Every (row, col) of the tile is held by exactly one register of one thread; the
    thread part as `%tid.x` expressions (`thread_row` for a partition starting at warp
    group 0 or 1, `thread_col`) gives each thread's register 0; runs are `vec`
    contiguous elements of a row."""
    layout = _layout(*shape)
    seen = {}
    for t in range(layout.threads):
        for i in range(layout.num_regs):
            seen.setdefault(layout.coord(t, i), []).append((t, i))
        r0, c0 = layout.coord(t, 0)
        assert layout.thread_row(0).value(t) == r0
        assert layout.thread_row(1).value(t + HOPPER.warp_group_size) == r0
        assert layout.thread_col().value(t) == c0
    m, n = layout.m, layout.n
    assert sorted(seen) == [(r, c) for r in range(m) for c in range(n)]
    assert all(len(v) == 1 for v in seen.values())
    for i in range(layout.num_regs):
        dr, dc = layout.reg_offset(i)
        assert layout.reg_offset(i - i % layout.vec) == (dr, dc - i % layout.vec)
    # each warp group holds its own band of rows (a TMA store of a warp group's rows)
    band = m // layout.warp_groups
    for t in range(layout.threads):
        wg = t // HOPPER.warp_group_size
        assert all(layout.coord(t, i)[0] // band == wg for i in range(layout.num_regs))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_slices_and_the_reduction_lanes(shape):
    """A register's row (column) is its row (column) slice's entry; the butterfly masks of
    a row reduction stay in the row and, with the thread's registers, cover it; those of
    a column reduction stay in the column and cover the warp's rows of it, whose first
    row's lanes are `first_row_lanes`."""
    _slices_and_reduction_lanes_hold(_layout(*shape))


def _slices_and_reduction_lanes_hold(layout: BlockedTileLayout) -> None:
    """Asserts what `test_the_slices_and_the_reduction_lanes` says of `layout`."""
    rows, cols = layout.row_offsets(), layout.col_offsets()
    for i in range(layout.num_regs):
        dr, dc = layout.reg_offset(i)
        assert rows[layout.slice_index(0, i)] == dr and cols[layout.slice_index(1, i)] == dc
    ws = HOPPER.warp_size
    # the columns each butterfly group of a row reduction holds in its first row: the
    # threads of one group share it, so it is computed once per group
    # (with warps side by side, of the col_warps warps of equal warp // col_warps, whose
    # partials the scratch combines)
    held_cols: dict[frozenset[int], set[int]] = {}
    cw = layout.col_warps
    for t in range(layout.threads):
        r0, c0 = layout.coord(t, 0)
        lanes = {t}
        for mask in layout.row_reduction_lanes():
            lanes |= {x ^ mask for x in lanes}
        assert all(layout.coord(x, 0)[0] == r0 for x in lanes)
        warp = t // ws
        first = warp - warp % cw
        lanes = {x + (w - warp) * ws for x in lanes for w in range(first, first + cw)}
        group = frozenset(lanes)
        if group not in held_cols:
            held = {layout.coord(x, i) for x in lanes for i in range(layout.num_regs)}
            held_cols[group] = {c for r, c in held if r == r0}
        assert held_cols[group] == set(range(layout.n))
        assert all(layout.coord(x, 0)[0] == r0 for x in lanes)
        lanes = {t}
        for mask in layout.column_reduction_lanes():
            lanes |= {x ^ mask for x in lanes}
        assert all(layout.coord(x, 0)[1] == c0 for x in lanes)
        warp = t - t % ws
        in_warp = {layout.coord(x, 0)[0] for x in range(warp, warp + ws)}
        assert {layout.coord(x, 0)[0] for x in lanes} == in_warp
        first = (t % ws) < layout.first_row_lanes
        assert first == (layout.coord(t, 0)[0] == min(in_warp))


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[1] * s[3] % 16 == 0], ids=str)
def test_each_run_is_read_where_the_tma_swizzle_put_it(shape):
    """`run_access`'s address of every run of every thread is the byte
    `SwizzledTile.byte_offset` gives its first element (the 128B-swizzled tile a TMA
    load wrote), with the partition's first warp group 0 or 1."""
    layout = _layout(*shape)
    smem = SwizzledTile(layout.m, layout.n, shape[3], 128)
    firsts = {layout.coord(t, 0)[0] for t in range(layout.threads)}
    downs = layout.row_offsets()
    flips = all((r0 + dr) % 8 == (r0 % 8) ^ (dr % 8) for r0 in firsts for dr in downs)
    if not flips:  # three rows a warp group in two: a run's key is not the thread's XOR one
        assert layout.warp_groups > 1 and layout.col_warps > 1
        with pytest.raises(ValueError, match="do not keep the swizzle's key"):
            run_access(smem, layout, 0)
        return
    for first_wg in (0, 1):
        plan = _runs_land_where_tma_put_them(layout, smem, first_wg)
        assert plan.run_bytes == layout.vec * shape[3]


def _runs_land_where_tma_put_them(layout: BlockedTileLayout, smem: SwizzledTile, first_wg: int):
    """Asserts every thread's run address of `run_access` (the partition's first warp
    group `first_wg`) is the swizzled tile's byte of the run's first element; the plan."""
    plan = run_access(smem, layout, first_wg)
    for t in range(layout.threads):
        tid = t + first_wg * HOPPER.warp_group_size
        row0 = layout.thread_row(first_wg).value(tid)
        base = row0 * plan.row_bytes + sum(e.value(tid) * s for e, s in plan.thread)
        key = plan.key.value(tid)
        for i, off, flip in plan.runs:
            addr = base + off + ((key ^ flip) << plan.granule_shift)
            assert addr == smem.byte_offset(*layout.coord(t, i)), (t, i)
    return plan


@pytest.mark.parametrize(
    ("shape", "vec", "col_lanes"),
    [
        ((32, 128, 1, 2), 8, 16),  # bf16: 16-byte runs, 16 lanes a row, 2 rows a warp
        ((32, 128, 1, 4), 4, 32),  # f32: a warp per row
        ((16, 128, 2, 4), 4, 32),  # 8 rows a warp group
        ((4, 128, 1, 2), 4, 32),  # 16-byte bf16 runs would need 8 rows: halved
        ((32, 96, 1, 4), 4, 8),  # 24 runs a row: 8 lanes, 3 times along it
    ],
)
def test_runs_of_16_bytes_halved_until_the_tile_splits(shape, vec, col_lanes):
    layout = _layout(*shape)
    assert (layout.vec, layout.col_lanes, layout.col_warps) == (vec, col_lanes, 1)
    assert layout.num_regs * layout.threads == layout.m * layout.n


@pytest.mark.parametrize(
    ("shape", "vec", "col_warps"),
    [
        ((2, 128, 1, 4), 2, 2),  # two rows: two warps side by side on each, runs of 2
        ((1, 4096, 1, 2), 8, 4),  # a token's row: the four warps along it
        ((1, 128, 1, 4), 1, 4),  # 32 f32 runs of 4 do not split over 4 x 32 lanes
        ((3, 256, 1, 2), 2, 4),  # three rows, one pass of the four warps each
        ((6, 1024, 1, 2), 8, 2),
        ((4, 1024, 1, 2), 8, 1),  # four rows: below each other, as before
    ],
)
def test_warps_side_by_side_where_a_tile_has_fewer_rows_than_a_pass(shape, vec, col_warps):
    """Fewer rows than four warps below each other cover (a token's or a few tokens'
    rows): 2 or 4 warps side by side along each row, with the longest runs that split it;
    only then (a tile of four or more rows a warp group keeps its layout)."""
    layout = _layout(*shape)
    assert (layout.vec, layout.col_warps) == (vec, col_warps)
    assert layout.num_regs * layout.threads == layout.m * layout.n
    assert layout.side_by_side(*shape[:3]) == (col_warps > 1)
    assert layout.row_scratch_bytes == (4 * layout.m * col_warps if col_warps > 1 else 0)


@pytest.mark.parametrize(("shape", "match"), [((1, 16, 1, 4), "1x16"), ((1, 128, 2, 2), "1x128")])
def test_a_tile_no_pass_of_the_warps_splits_has_no_blocked_layout(shape, match):
    """16 columns over four warps side by side, or one row over two warp groups."""
    with pytest.raises(ValueError, match=f"{match} tile cannot be split.*side by side"):
        _layout(*shape)


# ---- which layout a kernel gets


def _tile_layouts(path: Path, params: dict | None = None) -> TileLayouts:
    """The 2-d layouts of `path`'s consumer partition after every pass before
    convert-to-ptx."""
    module = parse_file(path, params=params)
    run_pipeline(module, default_pipeline().removesuffix(",convert-to-ptx"))
    kernel = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
    part = next(
        p for p in kernel.walk() if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
    )
    return TileLayouts(part, part.warp_groups.data, kernel)


def _layout_of(layouts: TileLayouts, m: int, n: int):
    from xdsl.dialects.builtin import TensorType, f32

    return layouts.of(TensorType(f32, [m, n]), None)  # type: ignore[arg-type]


SUMS = DATA / "blocked_column_sum.mlir"
ROWS = DATA / "blocked_rows.mlir"


@pytest.mark.parametrize(
    ("path", "params", "want"),
    [
        # the tutorial's 32 x 128 blocks of f16 partial sums: 16-byte runs of f16
        (DWDB, None, BlockedTileLayout(32, 128, 1, 8)),
        (SUMS, None, BlockedTileLayout(32, 128, 1, 8)),
        (SUMS, {"BLOCK_M": 16}, BlockedTileLayout(16, 128, 1, 8)),
        # f32 tiles read: 16-byte runs of f32
        (COLUMN_SUM, {"BLOCK_M": 32}, BlockedTileLayout(32, 128, 1, 4)),
        # bf16 loaded, an f32 tile stored: the widest sets the runs
        (ROWS, None, BlockedTileLayout(32, 128, 1, 4)),
        # whole m64 blocks: the accumulator layout, as before
        (SUMS, {"BLOCK_M": 64}, AccLayout(64, 128, 1)),
        (COLUMN_SUM, None, AccLayout(64, 128, 1)),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else None,
)
def test_the_layout_each_kernel_gets(path, params, want):
    assert _layout_of(_tile_layouts(path, params), want.m, want.n) == want


@pytest.mark.parametrize("name", ["softmax", "rmsnorm", "layernorm"])
def test_the_examples_without_mmas_keep_the_accumulator_layout(name):
    """Their tiles are whole m64 blocks per warp group (two 64-row programs as one
    128-row tile on two warp groups)."""
    assert _tile_layouts(REPO / "examples" / f"{name}.mlir").blocked_bytes is None


def test_a_kernel_with_mmas_keeps_the_accumulator_layout():
    """A GEMM's tiles are wgmma operands and accumulators: no blocked layout, and a tile
    the accumulator layout cannot split is refused as before."""
    layouts = _tile_layouts(REPO / "examples" / "gemm.mlir")
    assert layouts.blocked_bytes is None
    with pytest.raises(CompileError, match="32-row tile cannot be split into m64 blocks"):
        _layout_of(layouts, 32, 128)


def test_a_tile_the_blocked_layout_cannot_split_is_refused_at_its_op():
    """One row of 16 columns over a warp group's four warps: a located error, not a wrong
    result."""
    text = (DATA / "blocked_rows.mlir").read_text().replace("128", "16")
    module = driver.parse_text(text, "blocked_rows.mlir", params={"BLOCK_M": 1})
    with pytest.raises(CompileError, match=r"blocked_rows\.mlir:\d+:\d+: .*1x16 tile"):
        driver.compile_module(module)


# ---- compiling


def test_the_column_sums_of_the_layer_norm_backward_compile():
    """`_layer_norm_bwd_dwdb` (refused before: 32-row tiles): its consumer reads each
    thread's 16-byte runs of the f16 tiles, sums them along the columns after the loop
    and stores the sums; ptxas assembles it without spills."""
    ptx = driver.compile_module(driver.parse_text(DWDB.read_text(), str(DWDB))).ptx
    assert "wgmma" not in ptx
    assert ptx.count("ld.shared.v4.b32") == 8  # two tiles of four runs a thread
    assert "shfl.sync.bfly.b32" in ptx and "st.global.b16" in ptx
    assert_assembles_without_spills(ptx)


BLOCKED = [
    (DATA / "blocked_column_sum.mlir", 32),
    (DATA / "blocked_column_sum.mlir", 16),
    (COLUMN_SUM, 32),
    (COLUMN_SUM, 16),
    (DATA / "blocked_rows.mlir", 32),
    (DATA / "blocked_rows.mlir", 16),
    (DATA / "blocked_rows.mlir", 2),
    (DATA / "blocked_rows.mlir", 1),
]


@pytest.mark.parametrize(("path", "rows"), BLOCKED, ids=lambda v: getattr(v, "stem", v))
def test_32_and_16_row_tiles_assemble_without_spills(path, rows):
    """Column sums over a loop (a 2-d accumulator reduced after it, or a 1-d one of each
    block's sums) and a row softmax, in 32- and 16-row tiles, and in 2 and 1 (the warps
    side by side along the rows)."""
    module = parse_file(path, params={"BLOCK_M": rows})
    res = driver.compile_module(module)
    assert "wgmma" not in res.ptx
    assert "cp.async.bulk.tensor.2d" in res.ptx  # the producer streams the tiles
    assert_assembles_without_spills(res.ptx)


def _atomic_32_rows() -> str:
    """tests/data/no_mma/column_sum_atomic.mlir in 32-row blocks: each block's column sums
    (the column slice of the blocked layout) added to y with `tile.atomic_add`."""
    text = (DATA / "column_sum_atomic.mlir").read_text().replace("64", "32")
    assert "arith.constant 32 : index" in text and "tensor<32x128xf32>" in text
    return text


def test_atomic_adds_of_a_blocked_tiles_column_sums_compile():
    ptx = driver.compile_module(driver.parse_text(_atomic_32_rows(), "atomic32.mlir")).ptx
    assert "red.global.add" in ptx and "ld.shared.v4.f32" in ptx
    assert_assembles_without_spills(ptx)


def test_a_row_reduction_of_warps_side_by_side_combines_their_partials():
    """One row a program: the four warps side by side along it; each row reduction (the
    maximum, the sum) shuffles within the warp, then the first lane of each warp writes
    its partial between two barriers of the consumer warp group and every thread reads
    the four; the column maxima of one row are its values (each column in one thread: no
    exchange). Two rows: two warps on each, two partials a row, and the column maxima
    exchanged between the two warps holding each column."""
    for rows, partials, exchanges in ((1, 4, 4), (2, 2, 6)):
        module = parse_file(DATA / "blocked_rows.mlir", params={"BLOCK_M": rows})
        ptx = driver.compile_module(module).ptx
        body = ptx[ptx.index("shfl.sync.bfly") :]
        # two per row reduction, two for the column maxima where several warps hold a column
        assert body.count("bar.sync 15, 128;") == exchanges
        row_reads = body[: body.index("ex2.approx")].split("bar.sync 15, 128;")[-1]
        assert row_reads.count("ld.shared.f32") == partials


def test_a_one_row_tile_streams_through_unswizzled_slots_of_its_own_bytes():
    """A program of one row (examples/rmsnorm.mlir at 1 x 4096): the x ring's slots hold
    the row as TMA writes it without swizzle, 8 KiB each (a 128B swizzle would pad each
    128-byte chunk to an 8-row pattern: 64 KiB), copied in 16 boxes of 256 x 1; each
    thread reads its four 16-byte runs with `ld.shared.v4`; the ring is deeper for it."""
    from tawac.dialects import hopper

    params = {"BLOCK_M": 1, "BLOCK_N": 4096}
    module = parse_file(REPO / "examples" / "rmsnorm.mlir", params=params)
    run_pipeline(module, default_pipeline().removesuffix(",convert-to-ptx"))
    slots = [
        t
        for o in module.walk()
        for t in (r.type for r in o.results)
        if isinstance(t, hopper.SmemRingType) and len(t.get_shape()) == 3
    ]
    assert slots and all(t.swizzle.data == 0 and t.tile_type.nbytes == 8192 for t in slots), slots
    ptx = driver.compile_module(parse_file(REPO / "examples" / "rmsnorm.mlir", params=params)).ptx
    assert "x_tmap_256x1[128]" in ptx
    # four runs a thread of x in each of two loops, and of w (its slice) in the second
    assert ptx.count("ld.shared.v4.b32") == 12


# ---- 1-d tiles read from their slots into a slice of the layout


def _slice_columns(layout, dim: int, thread: int) -> list[int]:
    """The model: the row (`dim` 0) or column (1) of each of `thread`'s slice registers
    (in `row_offsets` / `col_offsets` order), from `coord` of a register holding it."""
    offsets = layout.row_offsets() if dim == 0 else layout.col_offsets()
    regs = {}
    for i in range(layout.num_regs):
        regs.setdefault(layout.reg_offset(i)[dim], i)
    return [layout.coord(thread, regs[off])[dim] for off in offsets]


#: the accumulator layouts of the 64-row forms (rows, columns, warp groups, element bytes)
ACC_SHAPES = [(64, 128, 1, 2), (64, 256, 1, 4), (128, 128, 2, 2), (192, 64, 3, 4)]


@pytest.mark.parametrize("shape", SHAPES + ACC_SHAPES, ids=str)
def test_a_slice_is_read_in_aligned_runs_of_its_consecutive_elements(shape):
    """`vectors.slice_runs` with the alignment `KernelLowering.slice_alignment` takes (the
    first row or column expression's `IndexExpr.alignment`): against the model, in
    every thread, each run reads consecutive elements and starts at a multiple of its
    length (its address a multiple of its bytes in a 16-byte aligned slot), the runs
    cover the slice in order, and a slice of whole 16-byte runs takes 16-byte loads."""
    from tawac.backend_ptx.lowering.vectors import slice_runs

    m, n, w, b = shape
    layout = AccLayout(m, n, w) if shape in ACC_SHAPES else _layout(m, n, w, b)
    for dim in (0, 1):
        align = (layout.thread_row(0) if dim == 0 else layout.thread_col()).alignment()
        offsets = layout.row_offsets() if dim == 0 else layout.col_offsets()
        runs = slice_runs(offsets, align, b)
        assert [off for first, count in runs for off in range(first, first + count)] == offsets
        for thread in range(w * HOPPER.warp_group_size):
            got = _slice_columns(layout, dim, thread)
            i = 0
            for _, count in runs:
                run = got[i : i + count]
                assert run == list(range(run[0], run[0] + count)), (dim, thread, run)
                assert run[0] % count == 0, (dim, thread, run)
                i += count
        if dim == 1 and isinstance(layout, BlockedTileLayout) and layout.vec * b == 16:
            assert {count * b for _, count in runs} == {16}


def test_slice_runs_take_the_widest_aligned_access():
    from tawac.backend_ptx.lowering.vectors import slice_runs

    bf16 = list(range(8)) + list(range(256, 264))
    assert slice_runs(bf16, 16, 2) == [(0, 8), (256, 8)]
    assert slice_runs(bf16, 4, 2) == [(0, 4), (4, 4), (256, 4), (260, 4)]
    assert slice_runs([0, 1, 8, 9], 2, 2) == [(0, 2), (8, 2)]  # the accumulator's pairs
    assert slice_runs([0, 1, 8, 9], 1, 2) == [(0, 1), (1, 1), (8, 1), (9, 1)]
    assert slice_runs([0, 2, 4, 6], 16, 2) == [(0, 1), (2, 1), (4, 1), (6, 1)]
    assert slice_runs([4, 5, 6, 7], 16, 4) == [(4, 4)]
    assert slice_runs([2, 3, 4, 5], 16, 4) == [(2, 2), (4, 2)]
    assert slice_runs(list(range(16)), 16, 1) == [(i, 1) for i in range(16)]  # 8-bit


def test_a_one_row_layer_norm_reads_its_weight_and_bias_in_16_byte_runs():
    """examples/layernorm.mlir at 1 x 4096 (the table's few-token form): w and b, 1-d
    slots read into the row's column slice, four `ld.shared.v4` a thread each, as x's runs
    (one 16-bit load each before: 64 a thread, about 0.3 us of the program's 2.8 on the
    H100's trace)."""
    params = {"BLOCK_M": 1, "BLOCK_N": 4096}
    ptx = driver.compile_module(parse_file(REPO / "examples" / "layernorm.mlir", params=params)).ptx
    assert "ld.shared.b16" not in ptx
    assert ptx.count("ld.shared.v4.b32") == 3 * 4 + 2 * 4


def test_explain_names_the_blocked_layout_and_warps_side_by_side():
    """`explain` says how a kernel without MMAs holds its tiles: at one row a program (the
    layer norm's table at 1 x 4096) the four warps side by side along it; 8 x 1024 the
    warps below each other; 64-row tiles (the accumulator layout) no line."""
    from cli_inprocess import tawac

    path = str(REPO / "examples" / "layernorm.mlir")
    one = tawac(["explain", path, "--size", "M=1,N=4096"], check=True).stdout
    want = "registers: blocked layout (no MMA): 1x4096 in runs of 8, 32 lanes a row, 4 warps side"
    assert want in " ".join(one.split())
    eight = tawac(["explain", path, "-D", "BLOCK_M=8", "-D", "BLOCK_N=1024"], check=True).stdout
    assert "registers: blocked layout (no MMA): 8x1024 in runs of 8, 32 lanes a row\n" in eight
    assert "registers: blocked" not in tawac(["explain", path], check=True).stdout
    # two rows of 4096 columns: a warp group a row (the planner's rule for 2-row tiles)
    two = tawac(["explain", path, "-D", "BLOCK_M=2", "-D", "BLOCK_N=4096"], check=True).stdout
    want = "2x4096 in runs of 8, 32 lanes a row, 1 row a warp group, 4 warps side by side"
    assert want in " ".join(two.split())


def test_a_linear_tile_inside_its_tensor_is_one_bulk_copy():
    """The one-row x tile and the 1-d weight tile of 4096 elements: where the tile lies
    inside its tensor (no index below 0, its end within the size) and starts a whole 16
    bytes in, one `cp.async.bulk` of its 8 KiB;
    else its 16 boxes of 256 by the tensor map (the zero fill past the tensor's end). The
    bulk copy needs no more of the tensor than its map does: no `align` entry (a ragged
    row would be copied into a padded buffer for it)."""
    params = {"BLOCK_M": 1, "BLOCK_N": 4096}
    res = driver.compile_module(parse_file(REPO / "examples" / "rmsnorm.mlir", params=params))
    bulk = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
    sizes = [re.search(r"\], (\d+), \[", ln) for ln in res.ptx.splitlines() if bulk in ln]
    # x in each of its two loops (the second where the row does not stay in the ring), w
    assert [m.group(1) for m in sizes if m] == ["8192"] * 3 and all(sizes)
    assert res.ptx.count("cp.async.bulk.tensor.2d") == 2 * 16
    assert res.ptx.count("cp.async.bulk.tensor.1d") == 16
    # the guard: each index at least 0 (a tile may start before its tensor) and within
    # its size with the tile's end, the column a whole 16 bytes in
    guard = res.ptx[res.ptx.index("[x_dim0]") : res.ptx.index(bulk)]
    assert guard.count("setp.ge.s32") == 2 and guard.count("setp.le.s32") == 2
    assert "setp.eq.s32" in guard
    params_of = {p["arg"]: p for p in res.sidecar["params"] if p["kind"] == "pointer"}
    assert "align" not in params_of.get("x", {}) and "align" not in params_of.get("w", {})


# ---- the kernels' meaning (the interpreter)

SIZES = {
    "blocked_column_sum": {"P": 70, "N": 300},
    "blocked_rows": {"M": 77, "N": 100},
}


@pytest.mark.parametrize("rows", [32, 16])
@pytest.mark.parametrize("name", sorted(SIZES))
def test_the_tile_passes_keep_its_meaning(name, rows):
    module = parse_file(DATA / f"{name}.mlir", params={"BLOCK_M": rows})
    base = baseline(module, SIZES[name])
    assert validate_pipeline(module, base, program=name)


def _kernel(path: Path, rows: int) -> tile.KernelOp:
    module = parse_file(path, params={"BLOCK_M": rows})
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _rows_reference(x, w, rows: int):
    """blocked_rows.mlir's outputs in float32: softmax(h), h minus the column maxima of
    its block of `rows` rows, the row maxima (h = x + w)."""
    import torch

    h = x.float() + w[None, :]
    m, n = h.shape
    pad = -(-m // rows) * rows
    blocks = torch.full((pad, n), float("-inf"), device=h.device)
    blocks[:m] = h
    colmax = blocks.view(pad // rows, rows, n).amax(1).repeat_interleave(rows, 0)[:m]
    return torch.softmax(h, 1), h - colmax, h.amax(1)


@pytest.mark.parametrize("rows", [32, 16])
def test_the_interpreter_agrees_with_torch(rows):
    import torch

    g = torch.Generator().manual_seed(rows)
    x = (torch.randn(70, 300, generator=g) * 3).to(torch.bfloat16)
    y = torch.full((300,), float("nan")).to(torch.bfloat16)
    interpret_launch(_kernel(DATA / "blocked_column_sum.mlir", rows), [x, y])
    want = x.float().sum(0)
    assert ((y.float() - want).abs() <= 1e-2 * want.abs().clamp(min=1)).all()
    m, n = 37, 100
    x = (torch.randn(m, n, generator=g) * 3).to(torch.bfloat16)
    w = torch.randn(n, generator=g)
    outs = [torch.full((m, n), float("nan")).to(torch.bfloat16), torch.full((m, n), 0.5)]
    outs.append(torch.full((m,), float("nan")))
    interpret_launch(_kernel(DATA / "blocked_rows.mlir", rows), [x, w, *outs])
    p, d, rmax = _rows_reference(x, w, rows)
    assert (outs[0].float() - p).abs().max() < 1e-2
    assert torch.equal(outs[1], d) and torch.equal(outs[2], rmax)


# ---- on the GPU


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("p", "n"), [(1, 5), (70, 300), (333, 1000), (1000, 128)])
@pytest.mark.parametrize("rows", [32, 16])
def test_the_column_sums_match_torch_on_the_gpu(rows, p, n):
    """blocked_column_sum.mlir (bf16 in, a 2-d accumulator) and examples/column_sum.mlir
    (f32 in, a 1-d accumulator) in `rows`-row tiles, the outputs poisoned with NaN."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(rows * p + n)
    x = torch.randn(p, n, device="cuda", generator=g) * 3
    for path, xin in ((DATA / "blocked_column_sum.mlir", x.to(torch.bfloat16)), (COLUMN_SUM, x)):
        y = torch.full((n,), float("nan"), device="cuda").to(torch.bfloat16)
        loaded_kernel(path, params={"BLOCK_M": rows})(xin, y)
        torch.cuda.synchronize()
        want = xin.float().sum(0)
        assert not torch.isnan(y.float()).any(), path.name
        err = (y.float() - want).abs() / want.abs().clamp(min=1)
        assert err.max().item() < 1e-2, (path.name, err.max().item())


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n"), [(1, 1), (77, 100), (1000, 128), (4097, 33)])
@pytest.mark.parametrize("rows", [32, 16, 3, 2, 1])
def test_the_row_softmax_matches_torch_on_the_gpu(rows, m, n):
    """blocked_rows.mlir: a reduction along the rows and one along the columns, each
    broadcast back, a bf16 and an f32 tile stored, a row vector stored."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(rows * m + n)
    x = (torch.randn(m, n, device="cuda", generator=g) * 3).to(torch.bfloat16)
    w = torch.randn(n, device="cuda", generator=g)
    y = torch.full((m, n), float("nan"), device="cuda").to(torch.bfloat16)
    d = torch.full((m, n), float("nan"), device="cuda")
    rmax = torch.full((m,), float("nan"), device="cuda")
    loaded_kernel(DATA / "blocked_rows.mlir", params={"BLOCK_M": rows})(x, w, y, d, rmax)
    torch.cuda.synchronize()
    p, dd, rr = _rows_reference(x, w, rows)
    assert (y.float() - p).abs().max().item() < 1e-2
    assert torch.equal(d, dd) and torch.equal(rmax, rr)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n"), [(1, 5), (77, 300), (1000, 129)])
def test_atomic_column_sums_of_32_row_blocks_match_torch_on_the_gpu(m, n):
    import torch

    from tawac.compiler import compile_source
    from tawac.runtime import load_kernel

    res = compile_source(_atomic_32_rows(), "atomic32.mlir")
    kernel = load_kernel(res.cubin, res.sidecar)
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = torch.randn(m, n, device="cuda", generator=g)
    y = torch.zeros(n, device="cuda")
    kernel(x, y)
    torch.cuda.synchronize()
    assert (y - x.sum(0)).abs().max().item() < 1e-3 * max(1.0, x.abs().sum(0).max().item())


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n"), [(1, 5), (70, 300), (256, 1000), (333, 4099)])
def test_the_layer_norm_column_sums_match_torch_on_the_gpu(m, n):
    """`_layer_norm_bwd_dwdb` compiled from Python by `tawac.triton` (M rows of partial
    sums in 32-row blocks, the last ragged, over 128-column programs)."""
    pytest.importorskip("triton")
    import torch

    import tawac.triton

    cfg = load_module(REPO / "examples" / "triton" / "layer_norm.py", "layer_norm").DWDB
    kernel = tawac.triton.compile(
        cfg["kernel"], signature=cfg["signature"], constexprs=cfg["constexprs"]
    )
    g = torch.Generator(device="cuda").manual_seed(m + n)
    dw, db = (torch.randn(m, n, device="cuda", generator=g).half() for _ in range(2))
    fdw, fdb = (torch.full((n,), float("nan"), device="cuda").half() for _ in range(2))
    kernel[(-(-n // 128),)](dw, db, fdw, fdb, m, n)
    torch.cuda.synchronize()
    for got, part in ((fdw, dw), (fdb, db)):
        ref = part.float().sum(0)
        assert not torch.isnan(got.float()).any()
        assert (got.float() - ref).abs().max().item() <= 1e-2 * max(1.0, ref.abs().max().item())


@pytest.mark.parametrize(
    ("rows", "cols", "linear"),
    [
        (2, 2048, True),
        (3, 256, True),
        (7, 64, True),
        (2, 32, False),
        (2, 300, False),
        (8, 2048, False),
    ],
)
def test_a_few_rows_tile_takes_unswizzled_slots_of_its_own_bytes(rows, cols, linear):
    """A tile of 2 to 7 rows whose rows are whole TMA boxes of a multiple of 128 bytes
    (each row's boxes land aligned) is kept unswizzled, its rows one after another: a
    128-byte swizzle would pad each chunk to its 8-row pattern (2 rows: 4 times the
    bytes). A row of 64 bytes, one not whole boxes, and 8 rows stay swizzled."""
    from xdsl.dialects.builtin import TensorType, bf16

    from tawac.dialects import hopper

    t = hopper.smem_ring_type(TensorType(bf16, [rows, cols]), 1).tile_type
    assert (t.swizzle.data == 0) == linear
    if linear:
        assert t.linear is not None and t.linear.rows == rows
        assert t.nbytes == t.tma_bytes == rows * cols * 2
    else:
        assert t.linear is None


def test_a_two_row_tile_streams_row_by_row_and_reads_its_rows_runs():
    """examples/layernorm.mlir at 2 x 2048: each row of a tile inside the tensor one bulk
    copy (`cp.async.bulk`, 4096 bytes, the second a row further), else 256-element boxes
    per row; the ring of x 5 times deeper than the 128-byte swizzle's padded slots
    allowed; each thread's runs read with `ld.shared.v4`."""
    params = {"BLOCK_M": 2, "BLOCK_N": 2048}
    res = driver.compile_module(parse_file(REPO / "examples" / "layernorm.mlir", params=params))
    from tawac.support.options import PipelineOptions
    from tawac.tools.explain import explain_module

    bulk = [ln for ln in res.ptx.splitlines() if "cp.async.bulk.shared::cluster.global" in ln]
    assert len(bulk) >= 2 and all("], 4096, [" in ln for ln in bulk), bulk
    assert len({ln.split("[")[1] for ln in bulk}) == len(bulk)  # each row to its own place
    assert "x_tmap_256x1[128]" in res.ptx
    assert "ld.shared.v4.b32" in res.ptx
    module = parse_file(REPO / "examples" / "layernorm.mlir", params=params)
    assert explain_module(module, PipelineOptions())["stages"] >= 16


_WIDE_COLUMN_SUMS = """
tile.kernel @wide_column_sums(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, \
%y: !tile.tensor<?xf32, ["N"]>) attributes {params = {BLOCK_N = 16384}} {
  %c0 = arith.constant 0 : index
  %pid = tile.program_id x
  %t = tile.load %x[%c0, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<4x$BLOCK_Nxbf16>
  %f = arith.extf %t : tensor<4x$BLOCK_Nxbf16> to tensor<4x$BLOCK_Nxf32>
  %s = tile.reduce sum %f, 0 : tensor<4x$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
  tile.store %s, %y[%c0] : tensor<$BLOCK_Nxf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
"""


def test_shared_memory_past_a_ctas_is_refused_at_compile_time(tmp_path):
    """Column sums of a 4 x 16384 tile over two consumer warp groups (two warps side by
    side a row) take 4 bands x 16384 f32 of scratch (256 KiB) after the ring: more than
    a CTA can have. The compiler refuses it (it wrote such a kernel, at 2 x 8192 before
    the scratch had a row a band, and the launch refused it: cuFuncSetAttribute failed)."""
    from tawac.support.diagnostics import CompileError

    src = tmp_path / "wide.mlir"
    src.write_text(_WIDE_COLUMN_SUMS)
    module = parse_file(src)
    with pytest.raises(CompileError, match=r"of them the reductions' scratch\) do not fit a CTA"):
        driver.compile_module(module, consumer_warp_groups=2)


def test_column_sums_take_a_scratch_row_a_band_of_warps(tmp_path):
    """Column sums of a 2-row tile over two consumer warp groups (a row each, its four
    warps side by side): each column is in one warp of each warp group, so the table
    has 2 rows (bands), not 8 (warps): 32 KiB at 4096 columns, which the planner
    reserves and the launch takes; each thread adds its columns' 2 partials."""
    from tawac.support.options import PipelineOptions
    from tawac.tools.explain import explain_module

    src = tmp_path / "wide.mlir"
    src.write_text(_WIDE_COLUMN_SUMS.replace("4x$BLOCK_N", "2x$BLOCK_N"))
    params = {"BLOCK_N": 4096}
    res = driver.compile_module(parse_file(src, params=params), consumer_warp_groups=2)
    options = PipelineOptions(consumer_warp_groups=2)
    smem = explain_module(parse_file(src, params=params), options)["smem"]
    (scratch,) = [r for r in smem["regions"] if r["what"].startswith("reductions' scratch")]
    assert scratch["bytes"] == 4 * 2 * 4096
    assert res.sidecar["dynamic_smem"] == smem["bytes"]
    consumer = res.ptx[res.ptx.index("setmaxnreg.inc") :]
    # 4096 columns over 128 threads a row: 32 a thread, 2 partials each
    assert consumer.count("ld.shared.f32") == 2 * 32


@pytest.mark.parametrize(
    ("name", "block_m", "block_n", "want"),
    [
        ("softmax", 1, 4096, 1),  # 1-row tiles: a row lies in one warp group
        ("softmax", 2, 4096, 2),  # 64 elements a thread on one warp group: a row each
        ("rmsnorm", 2, 4096, 2),
        ("layernorm_bwd", 2, 8192, 2),
        ("softmax", 2, 2048, 1),  # 32 a thread: one warp group (measured no faster)
        ("softmax", 3, 4096, 1),  # 3 rows: not measured, one warp group
        ("softmax", 4, 1024, 1),
        ("softmax", 128, 256, 2),  # whole 64-row blocks: the accumulator layout's split
    ],
)
def test_a_few_row_tile_gets_a_warp_group_a_row(name, block_m, block_n, want):
    """The heuristic gives a consumer whose 2-d tiles are 2 rows a warp group a row where
    one warp group would hold more than 32 elements a thread
    (`planner.FEW_ROW_ELEMENTS_PER_THREAD`: twice the warps, half the registers a
    thread, each row's reductions in its warp group)."""
    from tawac.support.options import PipelineOptions
    from tawac.tools.explain import explain_module

    params = {"BLOCK_M": block_m, "BLOCK_N": block_n}
    module = parse_file(EXAMPLES / f"{name}.mlir", params=params)
    info = explain_module(module, PipelineOptions(schedule="heuristic"))
    assert {r["role"]: r["warp_groups"] for r in info["roles"]}["consumer"] == want


# ---- a row spread over two warp groups (all eight warps side by side)

#: (rows, columns, element bytes) of tiles laid across two warp groups.
SPANNING = [(1, 8192, 2), (1, 8192, 4), (1, 2048, 2), (1, 4096, 2), (2, 4096, 2), (1, 32768, 2)]


@pytest.mark.parametrize("shape", SPANNING, ids=str)
def test_a_row_across_two_warp_groups_has_one_owner_per_element(shape):
    """`BlockedTileLayout.spanning`: every element held once; each warp group holds a
    share of every row (no bands); the `%tid.x` expressions of the partition starting at
    warp group 0, 1 or 2 give each thread's register 0 (its warp among the eight is its
    warp in the partition)."""
    m, n, b = shape
    layout = BlockedTileLayout.spanning(m, n, b)
    assert layout.spans_groups and layout.col_warps == 8 and layout.warp_groups == 2
    seen = {}
    for t in range(layout.threads):
        for i in range(layout.num_regs):
            seen.setdefault(layout.coord(t, i), []).append((t, i))
        r0, c0 = layout.coord(t, 0)
        for first_wg in (0, 1, 2):
            tid = t + first_wg * HOPPER.warp_group_size
            assert layout.thread_row(first_wg).value(tid) == r0
            assert layout.thread_col(first_wg).value(tid) == c0
    assert sorted(seen) == [(r, c) for r in range(m) for c in range(n)]
    assert all(len(v) == 1 for v in seen.values())
    for wg in (0, 1):  # both warp groups hold part of every row
        ts = range(wg * HOPPER.warp_group_size, (wg + 1) * HOPPER.warp_group_size)
        assert {layout.coord(t, i)[0] for t in ts for i in range(layout.num_regs)} == set(range(m))
    with pytest.raises(ValueError, match="needs the partition's first"):
        layout.thread_col()


@pytest.mark.parametrize("shape", SPANNING, ids=str)
def test_a_row_across_two_warp_groups_reduces_over_its_eight_warps(shape):
    """A row reduction's butterflies stay in the row, and the eight warps' partials (the
    scratch table: 8 entries a row, `row_scratch_bytes`) cover it; a column lies in one
    warp (one band: no scratch for a column reduction)."""
    m, n, b = shape
    layout = BlockedTileLayout.spanning(m, n, b)
    assert layout.row_scratch_bytes == 4 * m * 8
    _slices_and_reduction_lanes_hold(layout)  # its col_warps: all eight warps of the row


@pytest.mark.parametrize("shape", SPANNING, ids=str)
def test_a_row_across_two_warp_groups_reads_its_runs_where_tma_put_them(shape):
    """`run_access` for the spanning layout, the partition's first warp group 1 or 2."""
    m, n, b = shape
    layout = BlockedTileLayout.spanning(m, n, b)
    smem = SwizzledTile(m, n, b, 128)
    for first_wg in (1, 2):
        _runs_land_where_tma_put_them(layout, smem, first_wg)


def test_a_long_row_is_spread_over_two_warp_groups_after_either_planner():
    """A one-row program of 8192 columns (64 elements a thread on one warp group): the
    planners choose one warp group (their decisions and the model's prices unchanged),
    then with `spread_rows` `plan_spread` gives it two, the row across both (the spanning
    layout), whichever planner chose; without, one; at 4096 columns (32 a thread), one."""
    from tawac.analysis.tile_layouts import TileLayouts as Layouts
    from tawac.support.options import PipelineOptions

    def consumer(block_n=8192, **options):
        params = {"BLOCK_M": 1, "BLOCK_N": block_n}
        module = parse_file(EXAMPLES / "softmax.mlir", params=params)
        run_pipeline(module, PipelineOptions(**options).pipeline(stop="lower-aref"))
        (part,) = [
            p
            for p in module.walk()
            if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
        ]
        (kernel,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
        return part, kernel

    for schedule in ("heuristic", "solver"):
        part, kernel = consumer(schedule=schedule, spread_rows=True)
        assert part.warp_groups.data == 2
        layout = Layouts(part, 2, kernel).layout(1, 8192)
        assert isinstance(layout, BlockedTileLayout) and layout.spans_groups
        assert Layouts(part, 2, kernel, spread=False).spanning is False
        part, _ = consumer(schedule=schedule, spread_rows=False)
        assert part.warp_groups.data == 1
    part, _ = consumer(block_n=4096, spread_rows=True)
    assert part.warp_groups.data == 1
    part, _ = consumer()  # the knob's default: off until the default builds run on a GPU
    assert part.warp_groups.data == 1
