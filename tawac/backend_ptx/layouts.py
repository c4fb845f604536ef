"""Register layouts: which thread holds which tile element in which register.

A layout is data: an object that maps (thread, register) to a tile coordinate, splits
that map into a per-thread part and a per-register part (so the lowering computes the
thread part once and adds constants), and derives slices and broadcasts.  No other module
writes a fragment index formula.

The one distributed layout needed by GEMM is the wgmma accumulator fragment
(PTX ISA 9.7.15.5.1, "Matrix fragments for wgmma.mma_async", m64nNk16 f32 D):
thread t of a warp group, register j < N/2,
    row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((j >> 1) & 1)
    col = 8 * (j >> 2) + 2 * (t % 4) + (j & 1)
tiled over `m_reps` m64 blocks per warp group and over the warp groups of a
cooperative consumer partition along the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from tawac.target import HOPPER


@dataclass(frozen=True)
class AccLayout:
    """The accumulator of an MxN wgmma tile split row-wise over `warp_groups` warp groups."""

    m: int
    n: int
    warp_groups: int

    def __post_init__(self) -> None:
        if self.warp_groups < 1:
            raise ValueError(f"warp_groups must be >= 1, got {self.warp_groups}")
        if self.m <= 0 or self.m % (64 * self.warp_groups):
            raise ValueError(
                f"a {self.m}-row tile cannot be split into m64 blocks over "
                f"{self.warp_groups} warp groups"
            )
        if self.n % 8 or self.n <= 0:
            raise ValueError(f"N={self.n} must be a positive multiple of 8")

    @property
    def rows_per_warp_group(self) -> int:
        return self.m // self.warp_groups

    @property
    def m_reps(self) -> int:
        """m64 blocks per warp group."""
        return self.rows_per_warp_group // 64

    @property
    def regs_per_block(self) -> int:
        return self.n // 2

    @property
    def num_regs(self) -> int:
        return self.m_reps * self.regs_per_block

    @property
    def threads(self) -> int:
        return HOPPER.warp_group_size * self.warp_groups

    # -- the two parts of the map -------------------------------------------------------

    def thread_offset(self, wg: int, warp: int, lane: int) -> tuple[int, int]:
        """(row, col) of register 0 of thread (warp group, warp in group, lane)."""
        return (wg * self.rows_per_warp_group + 16 * warp + lane // 4, 2 * (lane % 4))

    def reg_offset(self, i: int) -> tuple[int, int]:
        """(row, col) of register i relative to register 0 (the same for every thread)."""
        mi, j = divmod(i, self.regs_per_block)
        return (64 * mi + 8 * ((j >> 1) & 1), 8 * (j >> 2) + (j & 1))

    def coord(self, thread: int, i: int) -> tuple[int, int]:
        wg, t = divmod(thread, HOPPER.warp_group_size)
        r0, c0 = self.thread_offset(wg, t // HOPPER.warp_size, t % HOPPER.warp_size)
        dr, dc = self.reg_offset(i)
        return (r0 + dr, c0 + dc)

    def block_regs(self, mi: int) -> range:
        """Registers of m64 block `mi`: the `d` operands of one m64nNk16 wgmma."""
        return range(mi * self.regs_per_block, (mi + 1) * self.regs_per_block)

    # -- slices ---------------------------------------------------------------------------

    def row_offsets(self) -> list[int]:
        """The distinct register row offsets, in order."""
        return sorted({self.reg_offset(i)[0] for i in range(self.num_regs)})

    def col_offsets(self) -> list[int]:
        return sorted({self.reg_offset(i)[1] for i in range(self.num_regs)})

    def slice_key(self, dim: int) -> tuple:
        """What determines the registers of a vector along `dim`: the rows of a thread
        depend on M and the warp groups only, the columns on N only; vectors with equal
        keys have the same layout, whatever tile they came from."""
        if dim == 0:
            return ("rows", self.m, self.warp_groups)
        return ("cols", self.n)

    def row_reduction_lanes(self) -> tuple[int, ...]:
        """Lane masks of the butterfly shuffles that combine a row's values across the
        threads holding it: the four lanes of a quad (lane % 4 selects the columns)."""
        return (1, 2)

    def slice_index(self, dim: int, i: int) -> int:
        """The register of the dim-`dim` slice that register i broadcasts from: a vector
        along dimension 1 (one value per column) is held as `col_offsets()`, one along
        dimension 0 as `row_offsets()`."""
        dr, dc = self.reg_offset(i)
        if dim == 1:
            return self.col_offsets().index(dc)
        return self.row_offsets().index(dr)
