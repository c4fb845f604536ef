"""Property tests of the wgmma accumulator layout (tawac.backend_ptx.layouts.AccLayout).

The layout maps (thread, register) of a cooperative consumer partition to a coordinate
of an MxN f32 tile.  These tests check that it is a bijection onto the tile, that it
splits into a per-thread and a per-register part, that its slices are consistent, and
that it agrees with the PTX ISA's fragment definition for wgmma.mma_async m64nNk16
(PTX ISA 9.7.15.5.1, "Matrix fragments for wgmma.mma_async", f32 accumulator D).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tawac.backend_ptx.layouts import AccLayout

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


def _evaluate(ops, tid: int) -> dict:
    """Run the integer PTX ops `thread_coords` emits for one thread (tid.x = tid)."""
    from tawac.dialects import ptx

    binary = {
        ptx.ShrOp: lambda a, b: a >> b,
        ptx.ShlOp: lambda a, b: a << b,
        ptx.AndOp: lambda a, b: a & b,
        ptx.SubOp: lambda a, b: a - b,
        ptx.AddOp: lambda a, b: a + b,
        ptx.MulOp: lambda a, b: a * b,
    }
    env: dict = {}
    for op in ops:
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
    from tawac.parser import parse_file

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
