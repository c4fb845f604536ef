"""Property tests of the wgmma accumulator layout (tawac.target.layouts.AccLayout).

The layout maps (thread, register) of a cooperative consumer partition to a coordinate
of an MxN f32 tile.  These tests check that it is a bijection onto the tile, that it
splits into a per-thread and a per-register part, that its slices are consistent, and
that it agrees with the PTX ISA's fragment definition for wgmma.mma_async m64nNk16
(PTX ISA 9.7.15.5.1, "Matrix fragments for wgmma.mma_async", f32 accumulator D).

The rest of the module's layouts are checked the same way: the thread expressions the
lowering emits, the register-A operand pairs against the ISA's A fragment, SwizzledTile
against a brute-force model of TMA's 128B swizzle and the canonical wgmma operand
layouts (PTX ISA 9.7.15.5.1.2), MatrixDescriptor against the descriptor's bit layout;
and the emitted PTX (thread coordinates, store_fragment's st.shared addresses, wgmma
descriptors), interpreted per thread, against the layouts.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tawac.target.layouts import AccLayout

# (m, n, warp_groups): one and several m64 blocks per warp group, 1..3 warp groups,
# narrow and the widest N.
SHAPES = [
    (64, 8, 1),
    (64, 16, 1),
    (64, 256, 1),
    (128, 8, 1),
    (128, 64, 2),
    (128, 128, 2),
    (128, 256, 2),
    (256, 128, 2),
    (256, 64, 4),
    (192, 32, 3),
    (192, 24, 1),
]


def _all(layout: AccLayout):
    for t in range(layout.threads):
        for i in range(layout.num_regs):
            yield t, i


@pytest.mark.parametrize(("m", "n", "wgs"), SHAPES)
def test_every_element_has_exactly_one_owner(m, n, wgs):
    lay = AccLayout(m, n, wgs)
    assert lay.threads == 128 * wgs
    assert lay.threads * lay.num_regs == m * n
    owners: dict[tuple[int, int], tuple[int, int]] = {}
    for t, i in _all(lay):
        rc = lay.coord(t, i)
        assert 0 <= rc[0] < m and 0 <= rc[1] < n, (t, i, rc)
        assert rc not in owners, f"{rc} owned by {owners[rc]} and {(t, i)}"
        owners[rc] = (t, i)
    assert len(owners) == m * n


@pytest.mark.parametrize(("m", "n", "wgs"), SHAPES)
def test_coord_is_thread_offset_plus_reg_offset(m, n, wgs):
    lay = AccLayout(m, n, wgs)
    for t, i in _all(lay):
        wg, local = divmod(t, 128)
        r0, c0 = lay.thread_offset(wg, local // 32, local % 32)
        dr, dc = lay.reg_offset(i)
        assert lay.coord(t, i) == (r0 + dr, c0 + dc)


@pytest.mark.parametrize(("m", "n", "wgs"), SHAPES)
def test_sizes(m, n, wgs):
    lay = AccLayout(m, n, wgs)
    assert lay.rows_per_warp_group == m // wgs
    assert lay.m_reps == m // wgs // 64
    assert lay.regs_per_block == n // 2
    assert lay.num_regs == lay.m_reps * n // 2


@pytest.mark.parametrize(("m", "n", "wgs"), SHAPES)
def test_warp_groups_own_contiguous_row_slices(m, n, wgs):
    """Warp group w owns rows [w*M/W, (w+1)*M/W) (the cooperative split)."""
    lay = AccLayout(m, n, wgs)
    rows = m // wgs
    for t, i in _all(lay):
        r, _ = lay.coord(t, i)
        assert r // rows == t // 128


@pytest.mark.parametrize(("m", "n", "wgs"), SHAPES)
def test_block_regs_are_one_m64_block(m, n, wgs):
    """block_regs(mi) are the N/2 `d` registers of the mi-th m64nN wgmma of a warp group:
    together they cover rows [64*mi, 64*mi+64) of the warp group's slice, all columns."""
    lay = AccLayout(m, n, wgs)
    regs = [list(lay.block_regs(mi)) for mi in range(lay.m_reps)]
    assert sorted(itertools.chain.from_iterable(regs)) == list(range(lay.num_regs))
    for mi, block in enumerate(regs):
        assert len(block) == n // 2
        for wg in range(wgs):
            covered = {lay.coord(wg * 128 + t, i) for t in range(128) for i in block}
            base = wg * lay.rows_per_warp_group + 64 * mi
            assert covered == {(base + r, c) for r in range(64) for c in range(n)}


@pytest.mark.parametrize(("m", "n", "wgs"), SHAPES)
def test_slices(m, n, wgs):
    lay = AccLayout(m, n, wgs)
    rows, cols = lay.row_offsets(), lay.col_offsets()
    offsets = [lay.reg_offset(i) for i in range(lay.num_regs)]
    assert rows == sorted({r for r, _ in offsets})
    assert cols == sorted({c for _, c in offsets})
    assert len(rows) == len(set(rows)) and len(cols) == len(set(cols))
    # Each thread holds N/4 columns and 2 rows per m64 block.
    assert len(cols) == n // 4
    assert len(rows) == 2 * lay.m_reps
    for i, (dr, dc) in enumerate(offsets):
        assert cols[lay.slice_index(1, i)] == dc
        assert rows[lay.slice_index(0, i)] == dr
    # A vector along a dimension, held in the slice layout, broadcasts to the value each
    # register needs: v[col] for dim 1, v[row] for dim 0.
    for t, i in _all(lay):
        wg, local = divmod(t, 128)
        r0, c0 = lay.thread_offset(wg, local // 32, local % 32)
        r, c = lay.coord(t, i)
        assert c0 + cols[lay.slice_index(1, i)] == c
        assert r0 + rows[lay.slice_index(0, i)] == r


def _ptx_isa_fragment(t: int, j: int) -> tuple[int, int]:
    """PTX ISA, wgmma m64nNk16, f32 accumulator D: thread t of the warp group, d_j.

    row = 16 * warp + groupID + 8 * ((j >> 1) & 1)  with warp = t / 32, groupID = lane / 4
    col = 8 * (j >> 2) + 2 * threadID_in_group + (j & 1)  with threadID_in_group = lane % 4
    """
    warp, lane = divmod(t, 32)
    group_id, tig = divmod(lane, 4)
    return 16 * warp + group_id + 8 * ((j >> 1) & 1), 8 * (j >> 2) + 2 * tig + (j & 1)


def test_m64n8_matches_ptx_isa():
    lay = AccLayout(64, 8, 1)
    assert lay.num_regs == 4
    for t in range(128):
        for j in range(4):
            assert lay.coord(t, j) == _ptx_isa_fragment(t, j), (t, j)
    # Entries read off the ISA's figure for the m64nNk16 D fragment (N = 8).
    figure = {
        (0, 0): (0, 0), (0, 1): (0, 1), (0, 2): (8, 0), (0, 3): (8, 1),
        (1, 0): (0, 2), (3, 1): (0, 7), (4, 0): (1, 0), (31, 3): (15, 7),
        (32, 0): (16, 0), (64, 2): (40, 0), (127, 0): (55, 6), (127, 3): (63, 7),
    }  # fmt: skip
    for (t, j), rc in figure.items():
        assert lay.coord(t, j) == rc, (t, j)


@pytest.mark.parametrize("n", [16, 64, 128, 256])
def test_m64n_matches_ptx_isa(n):
    """One warp group, one m64 block: the layout is the ISA fragment for every N."""
    lay = AccLayout(64, n, 1)
    for t in range(128):
        for j in range(n // 2):
            assert lay.coord(t, j) == _ptx_isa_fragment(t, j)


def test_m_reps_and_warp_groups_tile_the_isa_fragment():
    """Register j of m64 block mi of warp group w is the ISA fragment shifted by
    (w * M/W + 64 * mi) rows."""
    lay = AccLayout(256, 32, 2)
    for t in range(lay.threads):
        wg, local = divmod(t, 128)
        for mi in range(lay.m_reps):
            for j, i in enumerate(lay.block_regs(mi)):
                r, c = _ptx_isa_fragment(local, j)
                assert lay.coord(t, i) == (wg * 128 + 64 * mi + r, c)


@pytest.mark.parametrize(
    ("m", "n", "wgs"),
    [
        (32, 8, 1),  # fewer than 64 rows
        (96, 8, 1),  # not a multiple of 64
        (64, 8, 2),  # 32 rows per warp group
        (128, 8, 3),  # 128 rows do not split into m64 blocks over 3 warp groups
        (64, 12, 1),  # N not a multiple of 8
        (64, 4, 1),
        (64, 0, 1),
        (64, -8, 1),
    ],
)
def test_invalid_shapes_raise(m, n, wgs):
    with pytest.raises(ValueError):
        AccLayout(m, n, wgs)


@pytest.mark.parametrize(("m", "n", "wgs"), [(0, 8, 1), (-64, 8, 1), (64, 8, -1), (128, 8, 0)])
def test_degenerate_shapes_raise_value_error(m, n, wgs):
    with pytest.raises(ValueError):
        AccLayout(m, n, wgs)


# --- the emitted form: the lowering's thread coordinates agree with AccLayout -------------


def _integer_step(op, env: dict, tid: int) -> bool:
    """Evaluate one integer PTX op of a thread (tid.x = tid) into `env`; False if `op` is
    not one."""
    from tawac.dialects import ptx

    binary = {
        ptx.ShrOp: lambda a, b: a >> b,
        ptx.ShlOp: lambda a, b: a << b,
        ptx.AndOp: lambda a, b: a & b,
        ptx.OrOp: lambda a, b: a | b,
        ptx.XorOp: lambda a, b: a ^ b,
        ptx.SubOp: lambda a, b: a - b,
        ptx.AddOp: lambda a, b: a + b,
        ptx.MulOp: lambda a, b: a * b,
    }
    if isinstance(op, ptx.SpecialRegOp):
        assert op.sreg.data == "tid.x", op
        env[op.results[0]] = tid
    elif isinstance(op, ptx.MovImmOp):
        env[op.results[0]] = op.value.value.data
    elif isinstance(op, ptx.FmaOp):
        env[op.results[0]] = env[op.a] * env[op.b] + env[op.c]
    elif type(op) in binary:
        env[op.results[0]] = binary[type(op)](env[op.lhs], env[op.rhs])
    else:
        return False
    return True


def _evaluate(ops, tid: int) -> dict:
    """Run the integer PTX ops `thread_coords` emits for one thread (tid.x = tid)."""
    env: dict = {}
    for op in ops:
        if not _integer_step(op, env, tid):
            raise AssertionError(f"unexpected op in thread coordinates: {op.name}")
    return env


@pytest.mark.parametrize(("m", "n", "w"), [(64, 64, 1), (128, 256, 2), (192, 128, 3), (256, 64, 2)])
@pytest.mark.parametrize("first_wg", [1, 2])
def test_emitted_thread_coords_match_the_layout(m, n, w, first_wg):
    """`KernelLowering.thread_coords` writes the per-thread part of the fragment map as PTX
    integer ops; evaluated for every thread of the partition, it must give
    AccLayout.thread_offset (the one definition of the map)."""
    from tawac.backend_ptx.lowering.state import KernelLowering, _Partition
    from tawac.dialects import tile
    from tawac.ir.parser import parse_file

    module = parse_file(Path(__file__).resolve().parent.parent / "examples" / "gemm.mlir")
    (kernel,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
    k = KernelLowering(kernel)
    k.part = _Partition("consumer", first_wg, w)
    layout = AccLayout(m, n, w)
    row, col = k.thread_coords(layout)
    ops = list(k.block.ops)
    for t in range(layout.threads):
        env = _evaluate(ops, 128 * first_wg + t)
        wg, lt = divmod(t, 128)
        assert (env[row], env[col]) == layout.thread_offset(wg, lt // 32, lt % 32), t


# --- thread index expressions -------------------------------------------------------------


def test_thread_parts_are_the_cta_decomposition():
    """WARP_GROUP / WARP_IN_GROUP / LANE / THREAD_IN_GROUP split tid.x as 128-thread warp
    groups of four 32-lane warps."""
    from tawac.target import layouts

    for tid in range(1024):
        wg, rest = divmod(tid, 128)
        assert layouts.thread_parts(tid) == (wg, rest // 32, rest % 32), tid
        assert layouts.THREAD_IN_GROUP.value(tid) == rest
        assert layouts.warp_group_in_partition(1).value(tid) == wg - 1


@pytest.mark.parametrize(("m", "n", "wgs"), SHAPES)
@pytest.mark.parametrize("first_wg", [0, 1])
def test_thread_expressions_are_thread_offset(m, n, wgs, first_wg):
    """The expressions the lowering emits (thread_row / thread_col / thread_row_mod8) are
    thread_offset, evaluated for every thread of a partition starting at `first_wg`."""
    lay = AccLayout(m, n, wgs)
    row, col, key = lay.thread_row(first_wg), lay.thread_col(), lay.thread_row_mod8()
    for t in range(lay.threads):
        tid = 128 * first_wg + t
        wg, local = divmod(t, 128)
        r0, c0 = lay.thread_offset(wg, local // 32, local % 32)
        assert (row.value(tid), col.value(tid)) == (r0, c0), t
        for i in range(lay.num_regs):
            assert lay.coord(t, i)[0] % 8 == key.value(tid), (t, i)


def test_emitted_index_expressions_evaluate_to_their_value():
    """`KernelLowering.index` emits any IndexExpr node by node; the PTX it writes computes
    `IndexExpr.value` for every thread."""
    from tawac.backend_ptx.lowering.state import _Partition
    from tawac.target import layouts as L

    k = _lowering()
    k.part = _Partition("consumer", 1, 2)
    exprs = [
        L.LANE,
        L.WARP_GROUP,
        L.THREAD_IN_GROUP,
        L.MulAdd(L.Sub(L.WARP_IN_GROUP, 3), 5, L.Shl(L.Shr(L.LANE, 1), 2)),
    ]
    values = [k.index(e) for e in exprs]
    ops = list(k.block.ops)
    for tid in range(0, 512, 7):
        env = _evaluate(ops, tid)
        assert [env[v] for v in values] == [e.value(tid) for e in exprs], tid


# --- the register-A operand -----------------------------------------------------------------


def _ptx_isa_a_fragment(t: int, q: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """PTX ISA 9.7.15.5.1, "Register fragments for A", m64nNk16 .bf16/.f16: .b32 register
    q of thread t of the warp group holds elements a_{2q}, a_{2q+1} at
    row = 16 * warp + groupID + 8 * (q % 2), col = 2 * threadID_in_group + 8 * (q // 2)
    (+0 and +1)."""
    warp, lane = divmod(t, 32)
    group_id, tig = divmod(lane, 4)
    r, c = 16 * warp + group_id + 8 * (q % 2), 2 * tig + 8 * (q // 2)
    return (r, c), (r, c + 1)


@pytest.mark.parametrize(
    ("m", "n", "wgs"), [(64, 16, 1), (128, 64, 1), (128, 128, 2), (192, 64, 3)]
)
def test_a_operand_pairs_are_the_isa_a_fragment(m, n, wgs):
    """A 16-bit tile in the accumulator layout is wgmma's register A without moving data:
    the pairs of k16 slice kk of m64 block mi hold the ISA's A fragment of that slice."""
    lay = AccLayout(m, n, wgs)
    for t in range(lay.threads):
        wg, local = divmod(t, 128)
        for mi in range(lay.m_reps):
            for kk in range(n // 16):
                pairs = lay.a_operand_pairs(mi, kk)
                assert len(pairs) == 4
                for q, (lo, hi) in enumerate(pairs):
                    (r, c), (r1, c1) = _ptx_isa_a_fragment(local, q)
                    base = wg * lay.rows_per_warp_group + 64 * mi
                    assert lay.coord(t, lo) == (base + r, 16 * kk + c), (t, mi, kk, q)
                    assert lay.coord(t, hi) == (base + r1, 16 * kk + c1), (t, mi, kk, q)


# --- swizzled shared-memory tiles -----------------------------------------------------------

# (rows, cols, element bytes): bf16 tiles of one and several chunks, f32 (tf32) and fp8.
TILES = [(64, 64, 2), (128, 64, 2), (128, 256, 2), (64, 32, 2), (128, 32, 4), (64, 128, 1)]


def _tma_128b_model(rows: int, eb: int, r: int, c: int) -> int:
    """An independent model of a 128B-swizzled TMA box: columns in chunks of 128 bytes,
    each chunk rows x 128 bytes rounded up to 1024; in row r, 16-byte granule g of the
    row sits at granule g ^ (r % 8)."""
    chunk_bytes = -(-rows * 128 // 1024) * 1024
    chunk, byte = divmod(c * eb, 128)
    g, within = divmod(byte, 16)
    return chunk * chunk_bytes + 128 * r + 16 * (g ^ (r % 8)) + within


@pytest.mark.parametrize(("rows", "cols", "eb"), TILES)
def test_swizzle_128b_matches_the_tma_model(rows, cols, eb):
    from tawac.target.layouts import SwizzledTile

    tile = SwizzledTile(rows, cols, eb)
    assert tile.chunk_cols == 128 // eb and tile.row_bytes == 128
    offsets = {}
    for r in range(rows):
        for c in range(cols):
            off = tile.byte_offset(r, c)
            assert off == _tma_128b_model(rows, eb, r, c), (r, c)
            assert off % eb == 0 and 0 <= off < tile.nbytes
            assert off not in offsets, f"{(r, c)} and {offsets[off]} share byte {off}"
            offsets[off] = (r, c)
    # Each 8-row group of a chunk fills its 1024-byte block: every one of the block's 64
    # granules holds exactly one of the group's (row, 16-byte column group).
    per_granule = 16 // eb
    for chunk in range(tile.num_chunks):
        for r0 in range(0, rows, 8):
            block = chunk * tile.chunk_bytes + r0 * 128
            granules = {
                tile.byte_offset(r, chunk * tile.chunk_cols + g * per_granule) // 16
                for r in range(r0, r0 + 8)
                for g in range(8)
            }
            assert granules == set(range(block // 16, block // 16 + 64))
    for r in range(rows):
        for g in range(8):
            assert tile.granule(r, g) == g ^ (r % 8)


@pytest.mark.parametrize(
    ("swizzle", "key"),
    [(32, lambda r: (r >> 2) & 1), (64, lambda r: (r >> 1) & 3), (0, lambda r: 0)],
)
def test_narrower_swizzles(swizzle, key):
    """32B and 64B swizzle (CUTLASS Swizzle<1,4,3>, <2,4,3>): rows of `swizzle` bytes,
    granule g of row r at g ^ ((r * swizzle / 128) % granules); no swizzle: 16-byte rows."""
    from tawac.target.layouts import SwizzledTile

    tile = SwizzledTile(64, 64, 2, swizzle)
    span = max(swizzle, 16)
    assert tile.row_bytes == span and tile.chunk_cols == span // 2
    seen = set()
    for r in range(64):
        for c in range(64):
            chunk, byte = divmod(2 * c, span)
            g, within = divmod(byte, 16)
            want = chunk * tile.chunk_bytes + span * r + 16 * (g ^ key(r)) + within
            assert tile.byte_offset(r, c) == want, (r, c)
            seen.add(want)
    assert len(seen) == 64 * 64


@pytest.mark.parametrize(("rows", "cols", "eb"), TILES)
def test_chunks_and_smem_tile_type(rows, cols, eb):
    """SmemTileType's chunk layout is its SwizzledTile; one TMA box per chunk, chunks
    1024-byte aligned, and the box's columns are the chunk's."""
    from xdsl.dialects.builtin import BFloat16Type, Float32Type, IntegerType

    from tawac.dialects import hopper

    elem = {2: BFloat16Type(), 4: Float32Type(), 1: IntegerType(8)}[eb]
    tt = hopper.SmemTileType([rows, cols], elem, 128)
    tile = tt.layout
    assert (tile.rows, tile.cols, tile.elem_bytes, tile.swizzle) == (rows, cols, eb, 128)
    assert (tt.chunk_cols, tt.num_chunks, tt.chunk_bytes, tt.nbytes, tt.tma_bytes) == (
        tile.chunk_cols,
        tile.num_chunks,
        tile.chunk_bytes,
        tile.nbytes,
        tile.tma_bytes,
    )
    assert tile.tma_box(rows) == [128 // eb, rows]
    chunks = tile.chunks()
    assert len(chunks) == -(-cols * eb // 128)
    for c, (off, col0) in enumerate(chunks):
        assert off % 1024 == 0 and col0 == c * tile.chunk_cols
        assert tile.byte_offset(0, col0) == off
        assert off + rows * 128 <= tile.nbytes


def _fragment_store_cases():
    return [(64, 64, 1), (128, 64, 1), (128, 128, 2), (128, 256, 2), (192, 64, 3), (64, 32, 1)]


@pytest.mark.parametrize(("m", "n", "wgs"), _fragment_store_cases())
def test_fragment_store_plan_is_the_swizzled_layout(m, n, wgs):
    """Every thread's store of register pair (i, i + 1), computed as the plan says, writes
    the bytes SwizzledTile.byte_offset gives the pair's elements."""
    from tawac.target.layouts import SwizzledTile

    lay, tile = AccLayout(m, n, wgs), SwizzledTile(m, n, 2)
    plan = tile.fragment_store(lay)
    assert [i for i, _, _ in plan.pairs] == list(range(0, lay.num_regs, 2))
    index, scale = plan.thread_byte
    written = set()
    for t in range(lay.threads):
        wg, local = divmod(t, 128)
        row0, _ = lay.thread_offset(wg, local // 32, local % 32)
        key = plan.key.value(t)
        base = row0 * plan.row_bytes + index.value(t) * scale
        for i, off, g in plan.pairs:
            addr = base + off + ((key ^ g) << plan.granule_shift)
            assert addr == tile.byte_offset(*lay.coord(t, i)), (t, i)
            assert addr + 2 == tile.byte_offset(*lay.coord(t, i + 1)), (t, i)
            written.add(addr)
    assert len(written) == m * n // 2


def test_fragment_store_rejects_unpaired_layouts():
    from tawac.target.layouts import SwizzledTile

    with pytest.raises(ValueError, match="128B"):
        SwizzledTile(64, 64, 2, 64).fragment_store(AccLayout(64, 64, 1))


# --- the emitted forms: store_fragment and descriptors agree with SwizzledTile -------------


def _lowering():
    import tawac.backend_ptx.convert_to_ptx  # noqa: F401  (registers every handler)
    from tawac.backend_ptx.lowering.state import KernelLowering
    from tawac.dialects import tile
    from tawac.ir.parser import parse_file

    module = parse_file(Path(__file__).resolve().parent.parent / "examples" / "gemm.mlir")
    (kernel,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
    return KernelLowering(kernel)


def _interpret(ops, tid: int) -> tuple[dict, list[tuple[int, object]]]:
    """Run the integer ops of straight-line PTX for one thread, skipping barriers, fences,
    labels and branches; returns the values and the `st.shared` (address, value) pairs."""
    from tawac.dialects import ptx

    skipped = (
        ptx.SetpOp,
        ptx.BraOp,
        ptx.LabelOp,
        ptx.CpAsyncBulkWaitReadOp,
        ptx.BarSyncRegOp,
        ptx.FenceProxyAsyncOp,
        ptx.DeclareRegOp,
    )
    env: dict = {}
    stores = []
    for op in ops:
        if _integer_step(op, env, tid):
            continue
        if isinstance(op, ptx.CvtOp):
            env[op.results[0]] = env[op.src]
        elif isinstance(op, ptx.PackB16Op):
            env[op.results[0]] = (op.lo, op.hi)
        elif isinstance(op, ptx.StSharedOp):
            stores.append((env[op.addr], env[op.value]))
        elif not isinstance(op, skipped):
            raise AssertionError(f"unexpected op: {op.name}")
    return env, stores


@pytest.mark.parametrize(("m", "n", "w"), [(64, 64, 1), (128, 128, 2), (192, 64, 3), (128, 256, 2)])
def test_emitted_store_fragment_matches_swizzled_tile(m, n, w):
    """The `st.shared` addresses convert-to-ptx emits for hopper.store_fragment, evaluated
    for threads of every warp group, put each register pair where SwizzledTile.byte_offset
    puts its elements."""
    from xdsl.dialects.builtin import BFloat16Type, TensorType
    from xdsl.ir import Block

    from tawac.backend_ptx.lowering.state import Frag, SmemTile, _Partition
    from tawac.dialects import hopper, ptx
    from tawac.target.layouts import SwizzledTile

    first_wg, tile_base = 1, 5 * 1024
    tt = hopper.SmemTileType([m, n], BFloat16Type(), 128)
    args = Block(arg_types=[TensorType(BFloat16Type(), [m, n]), tt]).args
    op = hopper.StoreFragmentOp(args[0], args[1])
    k = _lowering()
    k.part = _Partition("consumer", first_wg, w)
    lay = AccLayout(m, n, w)
    regs = [k.r(ptx.DeclareRegOp("b16")) for _ in range(lay.num_regs)]
    k.vals[args[0]] = Frag(lay, regs, "bf16")
    k.vals[args[1]] = SmemTile(k.r(ptx.MovImmOp("u32", tile_base)), tt)
    k.lower_op(op)
    ops = list(k.block.ops)
    tile = SwizzledTile(m, n, 2)
    reg_index = {r: i for i, r in enumerate(regs)}
    for t in [0, 1, 5, 31, 32, 77, 100, 127, *range(128, lay.threads, 37), lay.threads - 1]:
        _, stores = _interpret(ops, 128 * first_wg + t)
        assert len(stores) == lay.num_regs // 2
        for addr, (lo, hi) in stores:
            i, j = reg_index[lo], reg_index[hi]
            assert j == i + 1
            assert addr - tile_base == tile.byte_offset(*lay.coord(t, i)), (t, i)
            assert addr - tile_base + 2 == tile.byte_offset(*lay.coord(t, j)), (t, j)


@pytest.mark.parametrize(
    ("rows", "cols", "mn_major"),
    [(128, 64, False), (64, 256, True), (128, 128, True), (128, 128, False)],
)
def test_mma_operand_descriptors_describe_the_tile(rows, cols, mn_major):
    """The (offset, LBO, SBO) of each wgmma operand slice address the elements where
    SwizzledTile puts them (PTX ISA 9.7.15.5.1.2 canonical 128B layouts, before the
    swizzle, which acts on address bits): K-major, element (m, k) of the slice at
    start + (m / 8) * SBO + (m % 8) * 128 + k * bytes; MN-major, at start + (m / 64) * LBO
    + (k / 8) * SBO + (k % 8) * 128 + (m % 64) * bytes."""
    from tawac.target.layouts import SwizzledTile

    tile = SwizzledTile(rows, cols, 2)
    mn_extent, k_extent = (cols, rows) if mn_major else (rows, cols)
    kstep, mn_block = 16, 64
    for mn in range(0, mn_extent, mn_block):
        for k0 in range(0, k_extent, kstep):
            start, desc = tile.mma_operand(mn_major, mn, k0)
            assert desc.sbo == 1024 and desc.swizzle == 128
            assert desc.lbo == (tile.chunk_bytes if mn_major else 16)
            for m in range(mn_block):
                for kk in range(kstep):
                    if mn_major:
                        want = tile.linear_offset(k0 + kk, mn + m)
                        got = (
                            start + (m // 64) * desc.lbo + (kk // 8) * desc.sbo
                            + (kk % 8) * 128 + (m % 64) * 2
                        )  # fmt: skip
                    else:
                        want = tile.linear_offset(mn + m, k0 + kk)
                        got = start + (m // 8) * desc.sbo + (m % 8) * 128 + kk * 2
                    assert got == want, (mn, k0, m, kk)
                    assert tile.swizzle_address(got) == tile.byte_offset(
                        *((k0 + kk, mn + m) if mn_major else (mn + m, k0 + kk))
                    )


def test_descriptor_fields_are_the_isa_bit_layout():
    from tawac.target.layouts import MatrixDescriptor

    d = MatrixDescriptor(16384, 1024)
    word = d.encode(0x2_3450)
    assert word & 0x3FFF == 0x2_3450 >> 4
    assert (word >> 16) & 0x3FFF == 16384 >> 4
    assert (word >> 32) & 0x3FFF == 1024 >> 4
    assert word >> 62 == 1  # 128B swizzle
    assert word & ((0b11 << 14) | (0b11 << 30) | (0xFFFF << 46)) == 0  # reserved bits
    assert MatrixDescriptor.decode(word) == (0x2_3450, 16384, 1024, 1)
    assert MatrixDescriptor(16, 1024, 64).encode(0) >> 62 == 2
    assert MatrixDescriptor(16, 1024, 32).encode(0) >> 62 == 3
    assert d.encode(0x2_3450 + 96) == word + MatrixDescriptor.step(96)
    with pytest.raises(ValueError):
        MatrixDescriptor.step(8)
    with pytest.raises(ValueError):
        MatrixDescriptor(1 << 18, 1024)


@pytest.mark.parametrize("mn_major", [False, True])
def test_emitted_descriptors_match_the_layout(mn_major):
    """The descriptors mma.py emits for the k16 steps of an operand, evaluated, are
    MatrixDescriptor.encode of the slice's address with the tile's LBO and SBO."""
    from tawac.backend_ptx.lowering.mma import _Descriptors
    from tawac.dialects import ptx
    from tawac.target.layouts import MatrixDescriptor, SwizzledTile

    tile = SwizzledTile(64, 128, 2)
    k = _lowering()
    base_addr = 3 * 1024 + 0x1_0000
    descs = _Descriptors(k, k.r(ptx.MovImmOp("u32", base_addr)))
    want, got = [], []
    for kk in range(4):
        off, fields = tile.mma_operand(mn_major, 0, 16 * kk)
        got.append(descs.at(off, fields))
        want.append(fields.encode(base_addr + off))
        lbo = tile.chunk_bytes if mn_major else 16
        assert MatrixDescriptor.decode(want[-1])[1:] == (lbo, 1024, 1)
    env, _ = _interpret(list(k.block.ops), 0)
    assert [env[v] for v in got] == want


# --- fragment loads: a TMA-written tile into the accumulator layout ------------------------


def _fragment_load_cases():
    return [(64, 64, 1), (128, 64, 1), (128, 128, 2), (128, 256, 2), (192, 96, 3), (64, 8, 1)]


@pytest.mark.parametrize("eb", [2, 4])
@pytest.mark.parametrize(("m", "n", "wgs"), _fragment_load_cases())
def test_fragment_load_plan_is_the_swizzled_layout(m, n, wgs, eb):
    """Every thread's load of register pair (i, i + 1), addressed as the plan says, reads
    the bytes SwizzledTile.byte_offset gives the pair's elements (16-bit and 4-byte
    elements: the thread's granule joins the XOR key for f32), and the loads of all
    threads read every element of the tile once."""
    from tawac.target.layouts import SwizzledTile

    lay, tile = AccLayout(m, n, wgs), SwizzledTile(m, n, eb)
    plan = tile.fragment_load(lay)
    assert plan.pair_bytes == 2 * eb
    assert [i for i, _, _ in plan.pairs] == list(range(0, lay.num_regs, 2))
    index, scale = plan.thread_byte
    read = set()
    for t in range(lay.threads):
        wg, local = divmod(t, 128)
        row0, _ = lay.thread_offset(wg, local // 32, local % 32)
        key = plan.key.value(t)
        base = row0 * plan.row_bytes + index.value(t) * scale
        for i, off, g in plan.pairs:
            assert 0 <= g < plan.granules
            addr = base + off + ((key ^ g) << plan.granule_shift)
            assert addr % plan.pair_bytes == 0  # the .b32 / .v2 alignment
            assert addr == tile.byte_offset(*lay.coord(t, i)), (t, i)
            assert addr + eb == tile.byte_offset(*lay.coord(t, i + 1)), (t, i)
            read.add(addr)
    assert len(read) == m * n // 2


@pytest.mark.parametrize("eb", [2, 4])
@pytest.mark.parametrize(("m", "n", "wgs"), [(128, 256, 2), (64, 64, 1), (192, 96, 3)])
def test_fragment_loads_take_the_fewest_wavefronts(m, n, wgs, eb):
    """Per warp and register pair, the 32 lanes' loads touch each of the 32 banks once
    (16-bit pairs: 128 bytes, one wavefront) or twice (f32 pairs: 256 bytes, the two
    wavefronts they need): the 128B swizzle spreads the 8 rows of a warp's quads."""
    from tawac.target.layouts import SwizzledTile

    lay, tile = AccLayout(m, n, wgs), SwizzledTile(m, n, eb)
    plan = tile.fragment_load(lay)
    index, scale = plan.thread_byte
    for warp in range(lay.threads // 32):
        for _, off, g in plan.pairs:
            words: dict[int, set[int]] = {}
            for lane in range(32):
                t = 32 * warp + lane
                row0 = lay.coord(t, 0)[0]
                addr = row0 * plan.row_bytes + index.value(t) * scale + off
                addr += (plan.key.value(t) ^ g) << plan.granule_shift
                for word in range(addr // 4, (addr + plan.pair_bytes) // 4):
                    words.setdefault(word % 32, set()).add(word)
            assert len(words) == 32
            assert max(len(w) for w in words.values()) == eb // 2


def test_fragment_load_rejects_what_it_cannot_read():
    from tawac.target.layouts import SwizzledTile

    with pytest.raises(ValueError, match="128B"):
        SwizzledTile(64, 64, 2, 64).fragment_load(AccLayout(64, 64, 1))
    with pytest.raises(ValueError, match="1-byte"):
        SwizzledTile(64, 64, 1).fragment_load(AccLayout(64, 64, 1))
    with pytest.raises(ValueError, match="cannot be read"):
        SwizzledTile(64, 128, 2).fragment_load(AccLayout(64, 64, 1))


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize(("m", "n", "w"), [(64, 64, 1), (128, 128, 2), (192, 64, 3), (128, 256, 2)])
def test_emitted_load_fragment_matches_swizzled_tile(m, n, w, dtype):
    """The `ld.shared` addresses convert-to-ptx emits for hopper.load_fragment, evaluated
    for threads of every warp group, read each register pair of the fragment from where
    SwizzledTile.byte_offset puts its elements; 16-bit pairs are split with the low half
    first (the lower address), f32 pairs are one .v2 load; a warp barrier follows."""
    from xdsl.dialects.builtin import BFloat16Type, Float32Type, TensorType
    from xdsl.ir import Block

    from tawac.backend_ptx.lowering.state import SmemTile, _Partition
    from tawac.dialects import hopper, ptx
    from tawac.target.layouts import SwizzledTile

    elem = BFloat16Type() if dtype == "bf16" else Float32Type()
    eb = 2 if dtype == "bf16" else 4
    first_wg, tile_base = 1, 7 * 1024
    tt = hopper.SmemTileType([m, n], elem, 128)
    (arg,) = Block(arg_types=[tt]).args
    op = hopper.LoadFragmentOp(arg, TensorType(elem, [m, n]))
    k = _lowering()
    k.part = _Partition("consumer", first_wg, w)
    k.vals[arg] = SmemTile(k.r(ptx.MovImmOp("u32", tile_base)), tt)
    k.lower_op(op)
    frag = k.vals[op.result]
    lay = AccLayout(m, n, w)
    assert frag.layout == lay and frag.dtype == dtype and len(frag.regs) == lay.num_regs
    ops = list(k.block.ops)
    # the reads end with the slot's release order: a proxy fence, then the warp sync
    assert isinstance(ops[-2], ptx.FenceProxyAsyncOp)
    assert isinstance(ops[-1], ptx.BarWarpSyncOp)
    tile = SwizzledTile(m, n, eb)
    for t in [0, 1, 2, 3, 6, 31, 32, 77, 100, 127, *range(128, lay.threads, 37), lay.threads - 1]:
        env: dict = {}
        loaded: dict = {}  # register -> the byte address of its element
        for o in ops:
            if _integer_step(o, env, 128 * first_wg + t):
                continue
            if isinstance(o, ptx.LdSharedOp):
                assert o.type.data == "b32"
                env[o.result] = env[o.addr]
            elif isinstance(o, ptx.UnpackB16Op):
                loaded[o.lo], loaded[o.hi] = env[o.src], env[o.src] + 2
            elif isinstance(o, ptx.LdSharedV2Op):
                assert o.type.data == "f32"
                loaded[o.lo], loaded[o.hi] = env[o.addr], env[o.addr] + 4
            elif not isinstance(o, ptx.FenceProxyAsyncOp | ptx.BarWarpSyncOp):
                raise AssertionError(f"unexpected op: {o.name}")
        for i, reg in enumerate(frag.regs):
            assert loaded[reg] - tile_base == tile.byte_offset(*lay.coord(t, i)), (t, i)


# --- BlockedLayout: standalone 1-d tiles -------------------------------------------------

# (n, threads, element bytes): one and several repetitions, 1..3 warp groups, runs shrunk
# for short vectors.
BLOCKED = [(1024, 128, 4), (1024, 128, 2), (4096, 256, 4), (128, 128, 4), (3072, 384, 2)]
# shorter than one run a thread: only the first threads own elements
SHORT = [(1, 128, 4), (64, 128, 4), (100, 128, 4), (8, 128, 2), (200, 256, 2), (96, 128, 2)]


@pytest.mark.parametrize(("n", "threads", "nbytes"), BLOCKED + SHORT)
def test_blocked_every_element_has_exactly_one_owner(n, threads, nbytes):
    """An independent model: element e belongs to thread (e / vec) % threads, register
    (e / (threads * vec)) * vec + e % vec; the layout's map must be the same bijection.
    A thread that owns nothing (a short vector's later threads) holds only coordinates
    past the vector's end, and the owners are the first threads."""
    from tawac.target.layouts import BlockedLayout

    lay = BlockedLayout.for_tile(n, threads, nbytes)
    owning = [t for t in range(threads) if lay.owns(t)]
    assert owning == list(range(lay.owners))
    assert len(owning) * lay.num_regs == n
    owners: dict[int, tuple[int, int]] = {}
    for t in range(threads):
        for i in range(lay.num_regs):
            e = lay.coord(t, i)
            assert e == lay.thread_offset(t) + lay.reg_offset(i)
            if not lay.owns(t):
                assert e >= n, (t, i, e)
                continue
            assert 0 <= e < n and e not in owners, (t, i, e)
            owners[e] = (t, i)
    assert sorted(owners) == list(range(n))
    v = lay.vec
    assert all(owners[e] == ((e // v) % threads, (e // (threads * v)) * v + e % v) for e in owners)


@pytest.mark.parametrize(("n", "threads", "nbytes", "vec", "owners"), [
    (1, 128, 4, 1, 1), (64, 128, 4, 4, 16), (100, 128, 4, 4, 25), (8, 128, 2, 8, 1),
    (6, 128, 2, 2, 3), (1024, 128, 4, 4, 128),
])  # fmt: skip
def test_blocked_short_vectors_take_the_longest_run_that_divides_them(
    n, threads, nbytes, vec, owners
):
    from tawac.target.layouts import BlockedLayout

    lay = BlockedLayout.for_tile(n, threads, nbytes)
    assert (lay.vec, lay.owners, lay.short) == (vec, owners, owners < threads)
    assert lay.reps == 1 or not lay.short


@pytest.mark.parametrize(("n", "threads", "nbytes", "vec"), [
    (1024, 128, 4, 4), (1024, 128, 2, 8), (128, 128, 4, 1), (256, 128, 2, 2), (3072, 384, 2, 8)
])  # fmt: skip
def test_blocked_runs_are_16_bytes_where_the_vector_allows(n, threads, nbytes, vec):
    from tawac.target.layouts import BlockedLayout

    lay = BlockedLayout.for_tile(n, threads, nbytes)
    assert lay.vec == vec
    # each run is vec contiguous elements of one thread
    for t in range(threads):
        for r in lay.runs():
            assert [lay.coord(t, r + j) for j in range(vec)] == list(
                range(lay.coord(t, r), lay.coord(t, r) + vec)
            )


@pytest.mark.parametrize(
    ("n", "threads", "vec"), [(600, 128, 1), (1024, 96, 4), (1024, 128, 3), (6, 128, 4)]
)
def test_blocked_invalid_shapes_raise(n, threads, vec):
    from tawac.target.layouts import BlockedLayout

    with pytest.raises(ValueError):
        BlockedLayout(n, threads, vec)


@pytest.mark.parametrize("first_wg", [1, 2])
def test_blocked_thread_expressions(first_wg):
    """`thread_start` and `warp_in_partition`, evaluated for every thread of the
    partition, are `thread_offset` and the thread's warp; the shuffles span a warp's 32
    lanes."""
    from tawac.target.layouts import BlockedLayout, warp_in_partition

    lay = BlockedLayout(2048, 256, 4)
    for t in range(lay.threads):
        tid = 128 * first_wg + t
        assert lay.thread_start(first_wg).value(tid) == lay.thread_offset(t)
        assert warp_in_partition(first_wg).value(tid) == t // 32
    lanes = {0}
    for mask in lay.reduction_lanes():
        lanes |= {x ^ mask for x in lanes}
    assert lanes == set(range(32)) and lay.warps == 8
