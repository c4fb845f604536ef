"""The blocked layout of 2-d tiles in registers, and how its threads read their runs
from a 128B-swizzled shared tile.

A consumer partition without MMAs holds its 2-d tiles in the wgmma accumulator layout
(`layouts.AccLayout`) where that layout splits them: whole m64 blocks per warp group. A
tile it cannot split (Triton's 32 x 128 column-sum blocks) takes `BlockedTileLayout`,
which any shape of whole 4-row steps per warp group fits, and a tile of fewer rows (one
to three a warp group: a few tokens' rows, whole) with the warps side by side along the
row. A tile of a few rows over two warp groups may put all eight warps side by side
along them (`spans_groups`: a long row spread over the warp groups, each holding a share
of every row). Like `layouts.py`, these are data: the lowering emits what they say, no
fragment or swizzle formula of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tawac.target import HOPPER
from tawac.target.layouts import (
    GRANULE_BYTES,
    LANE,
    WARP_IN_GROUP,
    And,
    Const,
    IndexExpr,
    MulAdd,
    Shl,
    Shr,
    SwizzledTile,
    Xor,
    warp_group_in_partition,
    warp_in_partition,
)

_WARPS_PER_GROUP = HOPPER.warp_group_size // HOPPER.warp_size


def _log2(x: int) -> int:
    assert x > 0 and x & (x - 1) == 0, x
    return x.bit_length() - 1


@dataclass(frozen=True)
class BlockedTileLayout:
    """An m x n tile over the `warp_groups` warp groups of a consumer partition, each
    thread holding runs of `vec` contiguous elements of a row.

    The lanes of a warp lie across the columns, `col_lanes` of them a run apart (the most,
    up to 32, that split the row's runs evenly: a power of two), the other factor of the
    warp, `row_lanes` = 32 / col_lanes, across as many rows; a warp group's four warps lie
    below each other in 4 / `col_warps` rows of `col_warps` warps side by side (1 unless
    the tile has too few rows for four warps below each other: then 2 or 4), and warp
    group g holds the band of rows [g m / W, (g + 1) m / W), as in `AccLayout` (each warp
    group's rows are its own, for a TMA store of them). The pattern repeats down the band
    every `rows_per_pass` = (4 / col_warps) row_lanes rows (`row_reps` times) and along
    the row every col_warps * col_lanes * vec columns (`col_reps` times). With two warp
    groups, `col_warps` may be 8 (`spans_groups`): the warps of both side by side along
    every row, warp w = 4 g + (warp in group) at column run w, each warp group holding
    every row (no bands); the rows repeat every row_lanes rows.

    Register i = (rr * col_reps + cr) * vec + j of the thread at (row0, col0) holds
    element (row0 + rr * rows_per_pass, col0 + cr * col_warps * col_lanes * vec + j), with
    row0 = g m / W + row_lanes * (warp / col_warps) + lane / col_lanes and col0 = vec *
    (col_lanes * (warp % col_warps) + lane % col_lanes). With warps side by side a row's
    values are in several warps: a row reduction combines the warps' partials through
    shared scratch (`row_scratch_bytes`).

    It answers what the lowering asks of `AccLayout` where the lowering is generic
    (thread coordinates, register offsets, row and column slices, the lanes of a row or
    column reduction), so elementwise math, masks, reductions along either dimension,
    broadcasts, register stores and atomic adds take it as they are; its shared-memory
    runs are `run_access`."""

    m: int
    n: int
    warp_groups: int
    vec: int
    col_warps: int = 1

    def __post_init__(self) -> None:
        problem = BlockedTileLayout.problem(
            self.m, self.n, self.warp_groups, self.vec, self.col_warps
        )
        if problem is not None:
            raise ValueError(problem)

    @staticmethod
    def problem(m: int, n: int, warp_groups: int, vec: int, col_warps: int = 1) -> str | None:
        """Why an m x n tile has no such layout with runs of `vec` and `col_warps` warps
        side by side, or None."""
        if warp_groups < 1:
            return f"warp_groups must be >= 1, got {warp_groups}"
        if vec < 1 or vec & (vec - 1):
            return f"{vec} elements per run is not a power of two"
        spans = col_warps == 2 * _WARPS_PER_GROUP and warp_groups == 2
        if col_warps not in (1, 2, _WARPS_PER_GROUP) and not spans:
            return (
                f"{col_warps} warps side by side do not divide a warp group's warps (nor "
                "are they two warp groups' eight)"
            )
        if n <= 0 or n % vec:
            return f"a {n}-column tile is not whole runs of {vec} elements"
        col_lanes = _col_lanes(n, vec)
        if (n // vec) % (col_lanes * col_warps):
            return (
                f"a {n}-column tile is not whole runs of {vec} elements for {col_warps} "
                f"warps side by side"
            )
        if spans:  # every warp group holds every row
            rows = HOPPER.warp_size // col_lanes
            if m <= 0 or m % rows:
                return (
                    f"a {m}x{n} tile's rows are not a multiple of the {rows} a warp covers "
                    f"at once with the warps of {warp_groups} warp groups side by side"
                )
            return None
        rows = _WARPS_PER_GROUP // col_warps * (HOPPER.warp_size // col_lanes)
        if m <= 0 or m % (warp_groups * rows):
            return (
                f"a {m}x{n} tile cannot be split over {warp_groups} warp group(s) in the "
                f"blocked layout: a warp group's rows must be a multiple of the {rows} its "
                f"warps cover at once (runs of {vec} elements)"
            )
        return None

    @staticmethod
    def side_by_side(m: int, n: int, warp_groups: int) -> bool:
        """Whether an m x n tile's blocked layout puts warps side by side along its rows
        (`for_tile`: no run splits it with the four warps below each other; runs of one
        element put the most lanes across a row, so the fewest rows under a pass)."""
        return BlockedTileLayout.problem(m, n, warp_groups, 1) is not None

    @classmethod
    def for_tile(cls, m: int, n: int, warp_groups: int, elem_bytes: int) -> BlockedTileLayout:
        """Runs of 16 bytes of `elem_bytes` elements (4 f32, 8 bf16), halved until the
        layout splits the tile (shorter runs put more lanes across a row and fewer rows
        under one pass of the warps); where no run does with the four warps below each
        other (fewer rows than a pass of them), 2, then 4 warps side by side."""
        for col_warps in (1, 2, _WARPS_PER_GROUP):
            vec = GRANULE_BYTES // elem_bytes
            while vec > 1 and cls.problem(m, n, warp_groups, vec, col_warps) is not None:
                vec //= 2
            if cls.problem(m, n, warp_groups, vec, col_warps) is None:
                return cls(m, n, warp_groups, vec, col_warps)
        problem = cls.problem(m, n, warp_groups, 1)  # the four below each other's, runs of 1
        raise ValueError(f"{problem}, nor with 2 or 4 warps side by side along its rows")

    @classmethod
    def spanning(cls, m: int, n: int, elem_bytes: int) -> BlockedTileLayout:
        """The m x n tile over two warp groups with all eight warps side by side along its
        rows (`spans_groups`): runs of 16 bytes, halved until they split the row."""
        vec = GRANULE_BYTES // elem_bytes
        cw = 2 * _WARPS_PER_GROUP
        while vec > 1 and cls.problem(m, n, 2, vec, cw) is not None:
            vec //= 2
        return cls(m, n, 2, vec, cw)

    @property
    def spans_groups(self) -> bool:
        """The warps of every warp group lie side by side along each row (each warp group
        holds a share of every row, not a band of rows)."""
        return self.col_warps > _WARPS_PER_GROUP

    @property
    def threads(self) -> int:
        return HOPPER.warp_group_size * self.warp_groups

    @property
    def col_lanes(self) -> int:
        """Lanes of a warp across a row, a run apart."""
        return _col_lanes(self.n, self.vec)

    @property
    def row_lanes(self) -> int:
        """Rows of one warp (32 / col_lanes)."""
        return HOPPER.warp_size // self.col_lanes

    @property
    def rows_per_pass(self) -> int:
        """Rows the warps of a warp group cover at once (4 / col_warps row_lanes; a warp's
        row_lanes where the warps span the warp groups)."""
        if self.spans_groups:
            return self.row_lanes
        return _WARPS_PER_GROUP // self.col_warps * self.row_lanes

    @property
    def run_span(self) -> int:
        """Columns of one pass of the warps side by side along a row (col_warps * col_lanes
        * vec): the pattern's period along it."""
        return self.col_warps * self.col_lanes * self.vec

    @property
    def rows_per_warp_group(self) -> int:
        return self.m if self.spans_groups else self.m // self.warp_groups

    @property
    def row_reps(self) -> int:
        return self.rows_per_warp_group // self.rows_per_pass

    @property
    def col_reps(self) -> int:
        return self.n // self.run_span

    @property
    def num_regs(self) -> int:
        return self.row_reps * self.col_reps * self.vec

    # -- the two parts of the map -------------------------------------------------------

    def thread_offset(self, wg: int, warp: int, lane: int) -> tuple[int, int]:
        """(row, col) of register 0 of thread (warp group, warp in group, lane)."""
        if self.spans_groups:
            run = self.col_lanes * (wg * _WARPS_PER_GROUP + warp) + lane % self.col_lanes
            return lane // self.col_lanes, self.vec * run
        warp_row, warp_col = divmod(warp, self.col_warps)
        row = wg * self.rows_per_warp_group + warp_row * self.row_lanes + lane // self.col_lanes
        return row, self.vec * (self.col_lanes * warp_col + lane % self.col_lanes)

    def thread_row(self, first_wg: int) -> IndexExpr:
        """The row of `thread_offset` as an expression of `%tid.x`, for the partition
        whose first warp group is `first_wg`."""
        warp_row: IndexExpr | None = WARP_IN_GROUP
        if self.spans_groups:  # every warp group holds every row
            return Shr(LANE, _log2(self.col_lanes)) if self.row_lanes > 1 else Const(0)
        if self.col_warps == _WARPS_PER_GROUP:
            warp_row = None
        elif self.col_warps > 1:
            warp_row = Shr(WARP_IN_GROUP, _log2(self.col_warps))
        within: IndexExpr | None = warp_row
        if self.row_lanes > 1:
            lane_row = Shr(LANE, _log2(self.col_lanes))
            within = lane_row if warp_row is None else MulAdd(warp_row, self.row_lanes, lane_row)
        if self.warp_groups == 1:
            return Const(0) if within is None else within
        wg = warp_group_in_partition(first_wg)
        return MulAdd(wg, self.rows_per_warp_group, Const(0) if within is None else within)

    def warp_col(self, first_wg: int | None = None) -> IndexExpr:
        """The thread's warp among those side by side (warp % col_warps; where the warps
        span the warp groups, its warp in the partition whose first warp group is
        `first_wg`)."""
        if self.spans_groups:
            if first_wg is None:
                raise ValueError("a layout spanning warp groups needs the partition's first")
            return warp_in_partition(first_wg)
        if self.col_warps == _WARPS_PER_GROUP:
            return WARP_IN_GROUP
        return And(WARP_IN_GROUP, self.col_warps - 1)

    def thread_run(self, first_wg: int | None = None) -> IndexExpr:
        """The index of the thread's first run along a row: col_lanes * (warp %
        col_warps) + lane % col_lanes (below run_span / vec)."""
        lane: IndexExpr = (
            LANE if self.col_lanes == HOPPER.warp_size else And(LANE, self.col_lanes - 1)
        )
        if self.col_warps == 1:
            return lane
        return MulAdd(self.warp_col(first_wg), self.col_lanes, lane)

    def thread_col(self, first_wg: int | None = None) -> IndexExpr:
        """The column of `thread_offset` as an expression of `%tid.x` (in the partition
        whose first warp group is `first_wg`: needed where the warps span the groups)."""
        run = self.thread_run(first_wg)
        return run if self.vec == 1 else Shl(run, _log2(self.vec))

    def reg_offset(self, i: int) -> tuple[int, int]:
        """(row, col) of register i relative to register 0 (the same for every thread)."""
        return _tables(self).offsets[i]

    def reg_offsets(self) -> tuple[tuple[int, int], ...]:
        return _tables(self).offsets

    def coord(self, thread: int, i: int) -> tuple[int, int]:
        wg, t = divmod(thread, HOPPER.warp_group_size)
        r0, c0 = self.thread_offset(wg, t // HOPPER.warp_size, t % HOPPER.warp_size)
        dr, dc = self.reg_offset(i)
        return (r0 + dr, c0 + dc)

    # -- slices ---------------------------------------------------------------------------

    def row_offsets(self) -> list[int]:
        """The distinct register row offsets, in order."""
        return list(_tables(self).rows)

    def col_offsets(self) -> list[int]:
        return list(_tables(self).cols)

    def slice_key(self, dim: int) -> tuple:
        """What determines the registers of a vector along `dim`: the rows of a thread
        follow from M, the warp groups and the lanes across a row; its columns from N, the
        lanes across a row and the run."""
        if dim == 0:
            return ("blocked rows", self.m, self.warp_groups, self.col_lanes, self.col_warps)
        return ("blocked cols", self.n, self.col_lanes, self.vec, self.col_warps)

    def slice_index(self, dim: int, i: int) -> int:
        return self.slice_indices(dim)[i]

    def slice_indices(self, dim: int) -> tuple[int, ...]:
        """The register of the dim-`dim` slice that each register broadcasts from."""
        tables = _tables(self)
        return tables.col_slice if dim == 1 else tables.row_slice

    def row_reduction_lanes(self) -> tuple[int, ...]:
        """Lane masks of the butterfly shuffles that combine a warp's values of a row: the
        `col_lanes` lanes holding it (lane % col_lanes selects the column). With warps
        side by side, the warps' partials are then combined through `row_scratch_bytes`."""
        return tuple(1 << b for b in range(_log2(self.col_lanes)))

    @property
    def row_scratch_bytes(self) -> int:
        """The shared scratch a row reduction takes: an f32 per row and warp side by side
        (0 with one warp across a row: the shuffles combine the whole row)."""
        return 0 if self.col_warps == 1 else 4 * self.m * self.col_warps

    def column_reduction_lanes(self) -> tuple[int, ...]:
        """Lane masks of the butterfly shuffles that combine a column's values across the
        warp: the `row_lanes` lanes of equal lane % col_lanes."""
        return tuple(1 << b for b in range(_log2(self.col_lanes), _log2(HOPPER.warp_size)))

    @property
    def first_row_lanes(self) -> int:
        """The lanes of a warp in its first row (lane < col_lanes): after a column
        reduction's shuffles they hold the warp's partial of every column."""
        return self.col_lanes


def _col_lanes(n: int, vec: int) -> int:
    runs = n // vec
    return min(HOPPER.warp_size, runs & -runs)


@dataclass(frozen=True)
class _Tables:
    offsets: tuple[tuple[int, int], ...]
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    row_slice: tuple[int, ...]
    col_slice: tuple[int, ...]


@cache
def _tables(layout: BlockedTileLayout) -> _Tables:
    """A layout's register offsets and slices, computed once (the lowering asks for them
    register by register)."""
    per_row = layout.col_reps * layout.vec
    offsets = []
    for i in range(layout.num_regs):
        rr, rest = divmod(i, per_row)
        cr, j = divmod(rest, layout.vec)
        offsets.append((rr * layout.rows_per_pass, cr * layout.run_span + j))
    rows = tuple(sorted({r for r, _ in offsets}))
    cols = tuple(sorted({c for _, c in offsets}))
    row_at = {r: x for x, r in enumerate(rows)}
    col_at = {c: x for x, c in enumerate(cols)}
    return _Tables(
        tuple(offsets),
        rows,
        cols,
        tuple(row_at[r] for r, _ in offsets),
        tuple(col_at[c] for _, c in offsets),
    )


# --- runs in shared memory ---------------------------------------------------------------


@dataclass(frozen=True)
class RunAccess:
    """How the threads of a `BlockedTileLayout` read their runs from a 128B-swizzled
    tile that TMA wrote (`run_access`), one access of `run_bytes` per run.

    A thread's base address is tile + row0 * `row_bytes` + the sum of index * scale over
    `thread` (its column's chunk and its byte within a 16-byte granule); the run starting
    at register i of `runs` entry (i, offset, flip) is at base + offset + ((key ^ flip)
    << `granule_shift`), where `key` is the granule of the thread's column XOR its row
    modulo 8 (the 128B swizzle) and `flip` the run's own part of both."""

    row_bytes: int
    thread: tuple[tuple[IndexExpr, int], ...]
    key: IndexExpr
    granule_shift: int
    run_bytes: int
    runs: tuple[tuple[int, int, int], ...]


def _row_flips(layout: BlockedTileLayout, dr: int) -> bool:
    """Whether every thread's row r0 has (r0 + dr) mod 8 = (r0 mod 8) XOR (dr mod 8): a
    run `dr` rows down is then the thread's swizzle key XOR a constant."""
    if dr % 4 == 0:
        return True
    rows = {layout.coord(t, 0)[0] for t in range(layout.threads)}
    return all((r + dr) % 8 == (r % 8) ^ (dr % 8) for r in rows)


def run_access(tile: SwizzledTile, layout: BlockedTileLayout, first_wg: int) -> RunAccess:
    """The plan of `RunAccess` for the threads of `layout` (in the partition whose first
    warp group is `first_wg`) and a tile of its shape.

    A thread's column byte b0 = run_bytes * `thread_run` is below P = col_warps *
    col_lanes * run_bytes, a power of two, and a run's column offset is a multiple of P:
    their bits are disjoint, so the run's chunk, granule and byte within the granule are
    the thread's plus the run's, and the granule's part is an XOR. A run's row offset is a
    multiple of 4 (`rows_per_pass` with the warps below each other), so its row modulo 8
    is the thread's XOR 0 or 4; with warps side by side it must be so for every thread's
    row (`_row_flips`: in one warp group, a multiple of `rows_per_pass`, a power of two
    above the thread's row), else the plan is refused."""
    if tile.swizzle != 128:
        raise ValueError("a blocked tile's runs are read from 128B-swizzled tiles only")
    if (tile.rows, tile.cols) != (layout.m, layout.n):
        raise ValueError(
            f"a {layout.m}x{layout.n} blocked tile cannot be read from a "
            f"{tile.rows}x{tile.cols} tile"
        )
    run_bytes = layout.vec * tile.elem_bytes
    if run_bytes > GRANULE_BYTES:
        raise ValueError(f"a run of {run_bytes} bytes is more than a 16-byte granule")
    shift = _log2(run_bytes)
    lane = layout.thread_run(first_wg)  # below span / run_bytes
    span = layout.col_warps * layout.col_lanes * run_bytes  # P
    thread: list[tuple[IndexExpr, int]] = []
    if span > tile.row_bytes:  # the thread's chunk
        thread.append((Shr(lane, _log2(tile.row_bytes) - shift), tile.chunk_bytes))
    if run_bytes < GRANULE_BYTES and span > run_bytes:  # its byte within the granule
        thread.append((And(lane, GRANULE_BYTES // run_bytes - 1), run_bytes))
    row_key = And(layout.thread_row(first_wg), tile.granules_per_row - 1)
    key: IndexExpr = row_key
    if span > GRANULE_BYTES:  # the thread's granule within its chunk's row
        down = _log2(GRANULE_BYTES) - shift
        granule = And(Shr(lane, down) if down else lane, tile.granules_per_row - 1)
        key = Xor(granule, row_key)
    runs = []
    for i in range(0, layout.num_regs, layout.vec):
        dr, dc = layout.reg_offset(i)
        b = dc * tile.elem_bytes
        if not _row_flips(layout, dr) or b % span:
            raise ValueError("the blocked layout's runs do not keep the swizzle's key")
        chunk, within = divmod(b, tile.row_bytes)
        offset = dr * tile.row_bytes + chunk * tile.chunk_bytes + within % GRANULE_BYTES
        runs.append((i, offset, within // GRANULE_BYTES ^ dr % 8))
    return RunAccess(
        row_bytes=tile.row_bytes,
        thread=tuple(thread),
        key=key,
        granule_shift=_log2(GRANULE_BYTES),
        run_bytes=run_bytes,
        runs=tuple(runs),
    )
