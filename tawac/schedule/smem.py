"""The shared-memory plan of one CTA: the one place that lays out dynamic shared memory.

`lower-aref` (aref rings and their mbarriers), `tma-store` (epilogue staging tiles), the
backend (the reductions' scratch after them, `reduction_scratch_bytes`) and
the passes that must know in advance whether a choice fits (`pipeline`'s ring depth,
`persistent`'s second slot for per-tile operands) all place regions through `SmemPlan`,
so an estimate and the layout are the same computation.

Layout rules: a tile region (a ring of swizzled tiles, a staging tile) starts on the
target's swizzle alignment (1024 bytes for 128B swizzle); mbarriers are 8 bytes each,
8-byte aligned; regions follow each other in the order they are placed. The arefs' rings
come first, one after another, then all their mbarriers (`SmemPlan.arefs`): a ring of
swizzled tiles is a whole number of alignments, so the rings pack without padding, and
only a staging tile placed after the mbarriers pays one alignment pad. (Each aref's
mbarriers after its own rings cost up to 1008 bytes of padding per aref: 4 arefs of
32 KiB slots at depth 2 then missed the limit by 32 bytes.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType

from tawac.analysis.stores import staged_stores
from tawac.dialects import aref, hopper, tile
from tawac.target import HOPPER, Target
from tawac.target.blocked_tiles import BlockedTileLayout


def _align(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


@dataclass(frozen=True)
class SmemRegion:
    """`size` bytes at `offset` of the CTA's dynamic shared memory."""

    name: str
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass
class SmemPlan:
    """Regions placed one after another from offset `start`."""

    start: int = 0
    target: Target = HOPPER
    regions: list[SmemRegion] = field(default_factory=list)
    ctas: int = 1
    """CTAs of the kernel on one SM (the schedule's `ctas_per_sm`): the plan fits their
    share of its shared memory."""

    @property
    def limit(self) -> int:
        """The bytes the plan may end at."""
        return self.target.smem_per_cta(self.ctas)

    def limit_text(self) -> str:
        """`limit` in the words of an error: "the N bytes a CTA can have" (at k CTAs a SM)."""
        shared = f" at {self.ctas} CTAs a SM" if self.ctas > 1 else ""
        return f"the {self.limit} bytes a CTA can have{shared}"

    @property
    def end(self) -> int:
        return self.regions[-1].end if self.regions else self.start

    def fits(self) -> bool:
        return self.end <= self.limit

    def _place(self, name: str, size: int, alignment: int) -> SmemRegion:
        region = SmemRegion(name, _align(self.end, alignment), size)
        self.regions.append(region)
        return region

    def tiles(self, name: str, ring: hopper.SmemRingType) -> SmemRegion:
        """A ring of swizzled tiles (depth 1: one tile)."""
        return self._place(name, hopper.ring_bytes(ring), self.target.swizzle_alignment)

    def barriers(self, name: str, count: int) -> SmemRegion:
        """`count` 8-byte mbarriers."""
        return self._place(name, 8 * count, 8)

    def scratch(self, size: int) -> SmemRegion:
        """`size` bytes of reduction scratch, 16-byte aligned (`reduction_scratch_bytes`)."""
        return self._place("scratch", size, 16)

    def try_tiles(self, name: str, ring: hopper.SmemRingType) -> SmemRegion | None:
        """Place the tiles only if the plan still fits with them."""
        region = self.tiles(name, ring)
        if self.fits():
            return region
        self.regions.pop()
        return None

    def arefs(
        self, arefs: list[tuple[aref.ArefType, int | None]]
    ) -> list[tuple[list[SmemRegion], SmemRegion, SmemRegion]]:
        """The arefs' rings (one per payload tile), then their full and empty mbarriers
        (module docstring), as `lower-aref` lays them out: per aref, (rings, full,
        empty). A depth given beside an aref's type overrides its own."""
        depths = [d if d is not None else t.depth.data for t, d in arefs]
        rings = [
            [self.tiles("ring", hopper.smem_ring_type(p, d)) for p in t.payload]
            for (t, _), d in zip(arefs, depths, strict=True)
        ]
        return [
            (r, self.barriers("full", d), self.barriers("empty", d))
            for r, d in zip(rings, depths, strict=True)
        ]


def staging_ring_type(value: TensorType, chunks: int = 0) -> hopper.SmemRingType:
    """The staging buffers of an epilogue store of `value` (`tma-store`): one tile of the
    value's shape, or with `chunks` (the schedule's `staging`) a ring of that many buffers
    of one 128-byte column chunk each."""
    if not chunks:
        return hopper.smem_ring_type(value, 1)
    rows, cols = value.get_shape()
    whole = hopper.smem_ring_type(value, 1).tile_type
    chunk = TensorType(value.element_type, [rows, min(cols, whole.chunk_cols)])
    return hopper.smem_ring_type(chunk, chunks)


def chunk_ring_fits(value: TensorType, chunks: int) -> bool:
    """A ring of `chunks` chunk buffers stages `value`: its chunks take the buffers in
    turn, tile after tile, when their number is a multiple of the ring's."""
    whole = hopper.smem_ring_type(value, 1).tile_type
    return chunks > 0 and whole.num_chunks % chunks == 0


def kernel_plan(
    kernel: tile.KernelOp,
    depths: dict[aref.CreateOp, int] | None = None,
    staging: bool = True,
    chunks: int = 0,
    warp_groups: int = 1,
    ctas: int = 1,
) -> SmemPlan:
    """The plan of the kernel's arefs (at their depths, or at `depths`) followed, with
    `staging`, by the staging buffers of the stores that may be staged with `warp_groups`
    consumer warp groups (`staged_stores`: whole tiles, or rings of `chunks` column
    chunks), to fit the share of an SM's shared memory of one of `ctas` CTAs."""
    plan = SmemPlan(ctas=ctas)
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    plan.arefs([(c.aref_type, (depths or {}).get(c)) for c in creates])
    for st in staged_stores(kernel, warp_groups) if staging else []:
        assert isinstance(st.value.type, TensorType)
        plan.tiles("staging", staging_ring_type(st.value.type, chunks))
    scratch = reduction_scratch_bytes(kernel, warp_groups)
    if scratch:
        plan.scratch(scratch)
    return plan


def scratch_region(planned: int, size: int) -> SmemRegion:
    """The reductions' scratch of `size` bytes after the `planned` bytes of the schedule
    (`SmemPlan.scratch`'s alignment): where the backend places it and explain shows it."""
    return SmemPlan(start=planned).scratch(size)


def reduction_scratch_bytes(kernel: tile.KernelOp, warp_groups: int = 1) -> int:
    """The shared scratch the consumer's reductions across warps take: one region, after
    everything else, that they share (`KernelLowering.scratch`), as large as the largest
    `reduce_scratch_bytes`."""
    warps = warp_groups * HOPPER.warp_group_size // HOPPER.warp_size
    ops = [o for o in kernel.walk() if isinstance(o, tile.ReduceOp)]
    return max((reduce_scratch_bytes(o, warps) for o in ops), default=0)


def _fewest_side_by_side(m: int, n: int, warp_groups: int) -> int:
    """The fewest warps side by side along the rows of an m x n tile's blocked layout over
    any element size (`BlockedTileLayout.for_tile`; over two warp groups that cannot split
    it into bands, the eight of `spanning`), 1 where it has none (the accumulator
    layout's: each warp its own rows)."""
    found = []
    for elem_bytes in (1, 2, 4):
        try:
            found.append(BlockedTileLayout.for_tile(m, n, warp_groups, elem_bytes).col_warps)
        except ValueError:
            if warp_groups != 2:
                continue
            try:  # two warp groups that cannot split it into bands: the row across both
                found.append(BlockedTileLayout.spanning(m, n, elem_bytes).col_warps)
            except ValueError:
                continue
    return min(found, default=1)


def reduce_scratch_bytes(op: tile.ReduceOp, warps: int) -> int:
    """The scratch one reduction over `warps` warps takes: to a scalar one f32 per warp,
    along the columns of a 2-d tile one f32 per column and band of warps (the warps
    holding a column; none where one band holds every column: `reduce_columns`), along
    rows none (a quad's shuffles), except in a tile of so few rows that its blocked
    layout puts warps side by side along them (`BlockedTileLayout.side_by_side`): at most
    one f32 per row and warp."""
    src = op.source.type
    assert isinstance(src, TensorType)
    if not isinstance(op.result.type, TensorType):
        return 4 * warps
    if op.dim.data == 0 and src.get_num_dims() == 2:
        m, n = src.get_shape()
        wpg = HOPPER.warp_group_size // HOPPER.warp_size
        # one f32 per column and band of warps (a column's warps: those of equal warp %
        # col_warps), at the fewest warps side by side a blocked layout of the tile has;
        # one band (every warp side by side) exchanges nothing
        bands = warps // _fewest_side_by_side(m, n, warps // wpg)
        return 4 * bands * n if bands > 1 else 0
    if src.get_num_dims() == 2:
        m, n = src.get_shape()
        if BlockedTileLayout.side_by_side(m, n, warps * HOPPER.warp_size // HOPPER.warp_group_size):
            return 4 * warps * m
    return 0
