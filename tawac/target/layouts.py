"""Layouts: which thread holds which tile element in which register, and where an element
or a byte of a tile lives in shared memory.

A layout is data: objects and pure functions that the lowering reads and emits, never a
formula written in the lowering itself.  This module holds every fragment, thread and
swizzle formula of the PTX backend:

- the thread decomposition of `%tid.x` (warp group, warp, lane) as `IndexExpr` trees,
  which `KernelLowering.index` turns into PTX integer ops node by node;
- `AccLayout`, the wgmma accumulator fragment (PTX ISA 9.7.15.5.1), split into a
  per-thread part (`thread_row`/`thread_col`, evaluated by `thread_offset`) and a
  per-register part (`reg_offset`), with its slices and the register-A operand pairs;
- `SwizzledTile`, a tile in shared memory as TMA writes and reads it (column chunks of
  one swizzle span, 16-byte granules XOR-swizzled; cp.async.bulk.tensor, PTX ISA 9.7.9.25,
  and the tensor-map swizzle modes of PTX ISA 5.5), with the byte offset of (row, col),
  the chunking of TMA boxes, the plan of `hopper.store_fragment`'s stores and the
  operands of wgmma;
- `MatrixDescriptor`, the wgmma shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2).

The one distributed layout needed by GEMM is the wgmma accumulator fragment
(PTX ISA 9.7.15.5.1, "Matrix fragments for wgmma.mma_async", m64nNk16 f32 D):
thread t of a warp group, register j < N/2,
    row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((j >> 1) & 1)
    col = 8 * (j >> 2) + 2 * (t % 4) + (j & 1)
tiled over `m_reps` m64 blocks per warp group and over the warp groups of a
cooperative consumer partition along the rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from tawac.target import HOPPER

# --- thread indices ----------------------------------------------------------------------


class IndexExpr:
    """An integer expression of the thread index `%tid.x` built from shifts, masks and
    multiply-adds by constants: the per-thread part of a layout, as data.  `value(tid)`
    evaluates it; the lowering emits one PTX op per node (children first, left to right,
    then the node's constant)."""

    def value(self, tid: int) -> int:
        raise NotImplementedError

    def alignment(self, cap: int = 16) -> int:
        """The largest power of two, at most `cap`, dividing the value in every thread of
        a CTA (evaluated for each thread index: the gcd of the values)."""
        g = 0
        for tid in range(HOPPER.max_threads_per_block):
            g = math.gcd(g, self.value(tid))
        align = cap
        while align > 1 and g % align:
            align //= 2
        return align


@dataclass(frozen=True)
class Tid(IndexExpr):
    """`%tid.x`, the thread's index in the (one-dimensional) CTA."""

    def value(self, tid: int) -> int:
        return tid


@dataclass(frozen=True)
class Const(IndexExpr):
    """The constant k, the same in every thread."""

    k: int

    def value(self, tid: int) -> int:
        return self.k


@dataclass(frozen=True)
class Shr(IndexExpr):
    """x >> k (unsigned)."""

    x: IndexExpr
    k: int

    def value(self, tid: int) -> int:
        return self.x.value(tid) >> self.k


@dataclass(frozen=True)
class Shl(IndexExpr):
    """x << k."""

    x: IndexExpr
    k: int

    def value(self, tid: int) -> int:
        return self.x.value(tid) << self.k


@dataclass(frozen=True)
class And(IndexExpr):
    """x & k."""

    x: IndexExpr
    k: int

    def value(self, tid: int) -> int:
        return self.x.value(tid) & self.k


@dataclass(frozen=True)
class Sub(IndexExpr):
    """x - k (emitted even for k = 0)."""

    x: IndexExpr
    k: int

    def value(self, tid: int) -> int:
        return self.x.value(tid) - self.k


@dataclass(frozen=True)
class Xor(IndexExpr):
    """x ^ y."""

    x: IndexExpr
    y: IndexExpr

    def value(self, tid: int) -> int:
        return self.x.value(tid) ^ self.y.value(tid)


@dataclass(frozen=True)
class MulAdd(IndexExpr):
    """x * k + y."""

    x: IndexExpr
    k: int
    y: IndexExpr

    def value(self, tid: int) -> int:
        return self.x.value(tid) * self.k + self.y.value(tid)


def _log2(x: int) -> int:
    assert x > 0 and x & (x - 1) == 0, x
    return x.bit_length() - 1


_WARPS_PER_GROUP = HOPPER.warp_group_size // HOPPER.warp_size

TID = Tid()
"""`%tid.x`."""
LANE = And(TID, HOPPER.warp_size - 1)
"""The lane within the warp (PTX ISA 9.7.15.5.1: warps of a warp group are 32 lanes)."""
WARP_GROUP = Shr(TID, _log2(HOPPER.warp_group_size))
"""The CTA's warp group of this thread (tid / 128, uniform in a warp)."""
WARP_IN_GROUP = And(Shr(TID, _log2(HOPPER.warp_size)), _WARPS_PER_GROUP - 1)
"""The warp within its warp group (the `16 * (t / 32)` rows of a wgmma fragment)."""
THREAD_IN_GROUP = And(TID, HOPPER.warp_group_size - 1)
"""The thread's index within its warp group (0: the warp group's leader)."""


def warp_group_in_partition(first_wg: int) -> IndexExpr:
    """The warp group's index within a partition whose first warp group is `first_wg`."""
    return Sub(WARP_GROUP, first_wg)


def warp_in_partition(first_wg: int) -> IndexExpr:
    """The thread's warp within a partition whose first warp group is `first_wg` (its slot
    in a reduction's shared scratch): (tid - 128 first_wg) / 32."""
    return Shr(Sub(TID, HOPPER.warp_group_size * first_wg), _log2(HOPPER.warp_size))


def thread_parts(tid: int) -> tuple[int, int, int]:
    """(warp group, warp in group, lane) of a CTA thread index."""
    return WARP_GROUP.value(tid), WARP_IN_GROUP.value(tid), LANE.value(tid)


# --- the wgmma accumulator fragment ------------------------------------------------------


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

    def thread_row(self, first_wg: int) -> IndexExpr:
        """The row of `thread_offset` as an expression of `%tid.x`, for the partition whose
        first warp group is `first_wg`: wg * M/W + 16 * warp + groupID (PTX ISA
        9.7.15.5.1, m64nNk16 D fragment: groupID = lane / 4)."""
        within = MulAdd(WARP_IN_GROUP, 16, self.thread_row_mod8())
        return MulAdd(warp_group_in_partition(first_wg), self.rows_per_warp_group, within)

    def thread_col(self, first_wg: int | None = None) -> IndexExpr:
        """The column of `thread_offset` as an expression of `%tid.x`: 2 *
        threadID_in_group with threadID_in_group = lane % 4 (PTX ISA 9.7.15.5.1); the same
        in every warp group (`first_wg` is not needed)."""
        return Shl(And(LANE, 3), 1)

    def thread_row_mod8(self) -> IndexExpr:
        """The thread's row modulo 8, for every one of its registers: groupID = lane / 4
        (M/W, 16 * warp and the register row offsets 0, 8, 64 * mi are multiples of 8).
        It is the XOR key of a 128B-swizzled row (`SwizzledTile.granule`)."""
        return Shr(LANE, 2)

    def reg_offset(self, i: int) -> tuple[int, int]:
        """(row, col) of register i relative to register 0 (the same for every thread)."""
        return _reg_offset(self.n // 2, i)

    def reg_offsets(self) -> tuple[tuple[int, int], ...]:
        """`reg_offset(i)` of every register i, in order."""
        return _fragment_tables(self.n // 2, self.num_regs).offsets

    def coord(self, thread: int, i: int) -> tuple[int, int]:
        wg, t = divmod(thread, HOPPER.warp_group_size)
        r0, c0 = self.thread_offset(wg, t // HOPPER.warp_size, t % HOPPER.warp_size)
        dr, dc = self.reg_offset(i)
        return (r0 + dr, c0 + dc)

    def block_regs(self, mi: int) -> range:
        """Registers of m64 block `mi`: the `d` operands of one m64nNk16 wgmma."""
        return range(mi * self.regs_per_block, (mi + 1) * self.regs_per_block)

    def a_operand_pairs(self, mi: int, kk: int) -> list[tuple[int, int]]:
        """The registers of this layout that form the A operand of k16 slice `kk` of m64
        block `mi` when a 16-bit tile in this layout is wgmma's register A (PTX ISA
        9.7.15.5.1, "Register fragments for A", m64nNk16): (lo, hi) of each of the four
        .b32 registers a0..a3, which hold (groupID, 2t..2t+1), (groupID + 8, 2t..),
        (groupID, 2t + 8..), (groupID + 8, 2t + 8..) of the slice: registers
        8kk + 0,1 / +2,3 / +4,5 / +6,7 of the block."""
        base = mi * self.regs_per_block + 8 * kk
        return [(base + 2 * q, base + 2 * q + 1) for q in range(4)]

    # -- slices ---------------------------------------------------------------------------

    def row_offsets(self) -> list[int]:
        """The distinct register row offsets, in order."""
        return list(_fragment_tables(self.n // 2, self.num_regs).rows)

    def col_offsets(self) -> list[int]:
        return list(_fragment_tables(self.n // 2, self.num_regs).cols)

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

    def column_reduction_lanes(self) -> tuple[int, ...]:
        """Lane masks of the butterfly shuffles that combine a column's values across the
        threads of a warp holding it: the eight lanes of equal lane % 4 (lane / 4 selects
        the rows)."""
        return (4, 8, 16)

    #: The lanes of a warp whose rows are its first (lane / 4 == 0): after a column
    #: reduction's shuffles they hold the warp's partial of every column.
    first_row_lanes = 4

    def slice_index(self, dim: int, i: int) -> int:
        """The register of the dim-`dim` slice that register i broadcasts from: a vector
        along dimension 1 (one value per column) is held as `col_offsets()`, one along
        dimension 0 as `row_offsets()`."""
        return self.slice_indices(dim)[i]

    def slice_indices(self, dim: int) -> tuple[int, ...]:
        """`slice_index(dim, i)` of every register i, in order."""
        tables = _fragment_tables(self.n // 2, self.num_regs)
        return tables.col_slice if dim == 1 else tables.row_slice


def _reg_offset(regs_per_block: int, i: int) -> tuple[int, int]:
    """`AccLayout.reg_offset`: (row, col) of register i of a fragment whose m64 blocks hold
    `regs_per_block` registers (PTX ISA 9.7.15.5.1, m64nNk16 D: 8 * ((j >> 1) & 1) rows
    and 8 * (j >> 2) + (j & 1) columns for register j of block mi, 64 * mi rows more)."""
    mi, j = divmod(i, regs_per_block)
    return (64 * mi + 8 * ((j >> 1) & 1), 8 * (j >> 2) + (j & 1))


@dataclass(frozen=True)
class _FragmentTables:
    """An accumulator fragment's register offsets and slices, computed once per shape
    (`_fragment_tables`): the lowering asks for them register by register."""

    offsets: tuple[tuple[int, int], ...]  # reg_offset(i) of every register
    rows: tuple[int, ...]  # the distinct row offsets, in order
    cols: tuple[int, ...]  # the distinct column offsets, in order
    row_slice: tuple[int, ...]  # slice_index(0, i) of every register
    col_slice: tuple[int, ...]  # slice_index(1, i) of every register


@cache
def _fragment_tables(regs_per_block: int, num_regs: int) -> _FragmentTables:
    offsets = tuple(_reg_offset(regs_per_block, i) for i in range(num_regs))
    rows = tuple(sorted({r for r, _ in offsets}))
    cols = tuple(sorted({c for _, c in offsets}))
    row_at = {r: x for x, r in enumerate(rows)}
    col_at = {c: x for x, c in enumerate(cols)}
    return _FragmentTables(
        offsets,
        rows,
        cols,
        tuple(row_at[r] for r, _ in offsets),
        tuple(col_at[c] for _, c in offsets),
    )


# --- standalone 1-d tiles ----------------------------------------------------------------


@dataclass(frozen=True)
class BlockedLayout:
    """A 1-d tile of `n` elements over the `threads` threads of a consumer partition: each
    thread holds runs of `vec` contiguous elements, thread t's first run at t * vec, the
    pattern repeated every threads * vec elements (`reps` times).  Register i of thread t
    holds element (i / vec) * threads * vec + t * vec + i % vec.

    A vector shorter than one run per thread (`n` < threads * vec: the one-element tile of
    a scalar store) is one run of `vec` for each of its first `owners` = n / vec threads;
    the other threads own nothing (`owns`): they have the registers, but what those hold
    is never stored, and a reduction replaces it by its identity.

    The layout of a vector that is neither reduced from nor broadcast into a 2-d tile (a
    vector add, a row reduced to a scalar): `for_tile` takes `vec` as 16 bytes of the
    widest element type its loads and stores move, so each run is one or two vector
    accesses of global memory."""

    n: int
    threads: int
    vec: int

    def __post_init__(self) -> None:
        if self.threads <= 0 or self.threads % HOPPER.warp_size:
            raise ValueError(f"{self.threads} threads are not whole warps")
        if self.vec <= 0 or self.vec & (self.vec - 1):
            raise ValueError(f"{self.vec} elements per run is not a power of two")
        short = 0 < self.n < self.threads * self.vec and self.n % self.vec == 0
        if not short and (self.n <= 0 or self.n % (self.threads * self.vec)):
            raise ValueError(
                f"a {self.n}-element vector cannot be split into runs of {self.vec} over "
                f"{self.threads} threads (it must be a multiple of {self.threads * self.vec}, "
                f"or fewer elements in whole runs)"
            )

    @classmethod
    def for_tile(cls, n: int, threads: int, elem_bytes: int) -> BlockedLayout:
        """Runs of 16 bytes of `elem_bytes` elements (4 f32, 8 bf16), halved until every
        thread holds whole runs (a vector of 128 f32 over 128 threads: runs of 1); a
        vector too short for a run of one per thread gets the longest run that divides it,
        for its first threads only."""
        widest = GRANULE_BYTES // elem_bytes
        vec = widest
        while vec > 1 and n % (threads * vec):
            vec //= 2
        if 0 < n < threads * widest and n % (threads * vec):
            vec = widest
            while vec > 1 and n % vec:
                vec //= 2
        return cls(n, threads, vec)

    @property
    def owners(self) -> int:
        """How many of the partition's threads hold elements: its first ones."""
        return min(self.threads, self.n // self.vec)

    @property
    def short(self) -> bool:
        """Some threads hold no element."""
        return self.owners < self.threads

    def owns(self, thread: int) -> bool:
        return thread < self.owners

    @property
    def reps(self) -> int:
        """How many times the threads' runs repeat along the vector."""
        return max(1, self.n // (self.threads * self.vec))

    @property
    def num_regs(self) -> int:
        return self.reps * self.vec

    @property
    def warps(self) -> int:
        return self.threads // HOPPER.warp_size

    def thread_offset(self, thread: int) -> int:
        """The element of register 0 of the partition's thread `thread`."""
        return thread * self.vec

    def thread_start(self, first_wg: int) -> IndexExpr:
        """`thread_offset` as an expression of `%tid.x`, for the partition whose first warp
        group is `first_wg`: (tid - 128 first_wg) * vec."""
        return Shl(Sub(TID, HOPPER.warp_group_size * first_wg), _log2(self.vec))

    def reg_offset(self, i: int) -> int:
        """The element of register i relative to register 0 (the same for every thread)."""
        rep, j = divmod(i, self.vec)
        return rep * self.threads * self.vec + j

    def reg_offsets(self) -> tuple[int, ...]:
        return tuple(self.reg_offset(i) for i in range(self.num_regs))

    def coord(self, thread: int, i: int) -> int:
        return self.thread_offset(thread) + self.reg_offset(i)

    def runs(self) -> range:
        """The first register of each run of `vec` contiguous elements."""
        return range(0, self.num_regs, self.vec)

    def reduction_lanes(self) -> tuple[int, ...]:
        """Lane masks of the butterfly shuffles that combine one value per lane into the
        warp's (every lane ends with it): 16, 8, 4, 2, 1."""
        return tuple(1 << b for b in reversed(range(_log2(HOPPER.warp_size))))


# --- shared memory: swizzled tiles and wgmma descriptors ---------------------------------

GRANULE_BYTES = 16
"""The unit a TMA swizzle permutes: 16-byte granules (PTX ISA 5.5.x, tensor swizzle modes)."""


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


#: The alignment of a TMA copy's destination in shared memory (cp.async.bulk.tensor).
TMA_SMEM_ALIGN = 128

#: A 2-d tile of fewer rows than this (the 128-byte swizzle's 8-row pattern) is kept
#: unswizzled, its rows one after another (`LinearTile`), where whole boxes copy a row.
FEW_ROWS = 8


@dataclass(frozen=True)
class LinearTile:
    """A 1-d tile of `n` elements in shared memory as TMA writes it without swizzle: the
    elements in order, element c at byte c * elem_bytes, copied in boxes of `box` elements
    (at most `HOPPER.tma_max_box`, 256: a 1024-element row is four boxes, each one
    cp.async.bulk.tensor; a box's bytes a multiple of 16, TMA's rule for the innermost
    box dimension). Its consumer reads runs of 16 bytes (`ld.shared.v4.b32`), which a
    swizzle would only scatter: there are no rows for it to spread over banks.

    With `rows` > 1 (a 2-d tile of a few rows, fewer than `FEW_ROWS`: a 128-byte swizzle
    would pad each chunk to its 8-row pattern), the rows one after another, row r at byte
    r * `row_bytes` (a multiple of `TMA_SMEM_ALIGN`, so each row's boxes land aligned),
    each row copied as a 1-row tile is."""

    n: int
    elem_bytes: int
    rows: int = 1

    def __post_init__(self) -> None:
        problem = LinearTile.problem(self.n, self.elem_bytes, self.rows)
        if problem is not None:
            raise ValueError(problem)

    @staticmethod
    def problem(n: int, elem_bytes: int, rows: int = 1) -> str | None:
        """Why a tile of `rows` rows of `n` elements cannot be copied by whole TMA boxes
        into consecutive rows, or None."""
        box = min(n, HOPPER.tma_max_box)
        if n <= 0 or n % box:
            return f"{n} elements are not whole boxes of {box}"
        if box * elem_bytes % GRANULE_BYTES:
            return f"a box of {box} elements is not a multiple of {GRANULE_BYTES} bytes"
        if not 1 <= rows < FEW_ROWS:
            return f"{rows} rows are not a few rows (1 to {FEW_ROWS - 1})"
        if rows > 1 and n * elem_bytes % TMA_SMEM_ALIGN:
            return f"a row of {n * elem_bytes} bytes is not a multiple of {TMA_SMEM_ALIGN}"
        return None

    @property
    def row_bytes(self) -> int:
        return self.n * self.elem_bytes

    @property
    def box(self) -> int:
        return min(self.n, HOPPER.tma_max_box)

    @property
    def num_chunks(self) -> int:
        return self.n // self.box

    @property
    def chunk_bytes(self) -> int:
        return self.box * self.elem_bytes

    @property
    def chunk_cols(self) -> int:
        return self.box

    @property
    def nbytes(self) -> int:
        """Bytes of one tile in a ring: whole TMA destinations, so the next slot's first
        box is aligned too."""
        return _align(self.rows * self.row_bytes, TMA_SMEM_ALIGN)

    @property
    def tma_bytes(self) -> int:
        return self.rows * self.row_bytes

    def tma_box(self, lead: int) -> list[int]:
        """The box of one copy, innermost first, with `lead` leading dimensions of one
        element (a row of a rank-2 tensor)."""
        return [self.box] + [1] * lead

    def chunks(self) -> list[tuple[int, int]]:
        """(byte offset, first element) of each box of a row (of row 0; row r's at r *
        `row_bytes` further): one cp.async.bulk.tensor each."""
        return [(c * self.chunk_bytes, c * self.box) for c in range(self.num_chunks)]

    def byte_offset(self, col: int) -> int:
        return col * self.elem_bytes


@dataclass(frozen=True)
class MatrixDescriptor:
    """A wgmma shared-memory matrix descriptor without its start address (PTX ISA
    9.7.15.5.1.2, "Matrix Descriptor Format"): bits 0-13 hold the start address >> 4,
    bits 16-29 the leading dimension byte offset (LBO) >> 4, bits 32-45 the stride
    dimension byte offset (SBO) >> 4, bits 62-63 the swizzle mode (0 none, 1 128B,
    2 64B, 3 32B)."""

    lbo: int
    sbo: int
    swizzle: int = 128

    ADDRESS_SHIFT: ClassVar[int] = 4
    ADDRESS_MASK: ClassVar[int] = 0x3FFF
    MODES: ClassVar[dict[int, int]] = {0: 0, 128: 1, 64: 2, 32: 3}

    def __post_init__(self) -> None:
        if self.swizzle not in self.MODES:
            raise ValueError(f"no descriptor swizzle mode for {self.swizzle}B")
        for name, v in (("LBO", self.lbo), ("SBO", self.sbo)):
            if v % 16 or not 0 <= v >> 4 <= self.ADDRESS_MASK:
                raise ValueError(f"{name} {v} does not fit a 14-bit field of 16-byte units")

    def fields(self) -> int:
        """The descriptor's bits other than the start address."""
        return ((self.lbo >> 4) << 16) | ((self.sbo >> 4) << 32) | (self.MODES[self.swizzle] << 62)

    def encode(self, addr: int) -> int:
        """The whole 64-bit descriptor of the operand at shared address `addr`."""
        return ((addr >> self.ADDRESS_SHIFT) & self.ADDRESS_MASK) | self.fields()

    @classmethod
    def step(cls, off: int) -> int:
        """What to add to the descriptor of address a for the one of a + off.  The start
        address field is (a >> 4) & 0x3FFF and shared addresses stay below 2^18, so for off
        a multiple of 16 the sum never carries out of the field: one add per k16 step."""
        if off % GRANULE_BYTES:
            raise ValueError(f"descriptor offsets are multiples of 16 bytes, got {off}")
        return off >> cls.ADDRESS_SHIFT

    @staticmethod
    def decode(word: int) -> tuple[int, int, int, int]:
        """(start address, LBO, SBO, swizzle mode field) of an encoded descriptor."""
        field = MatrixDescriptor.ADDRESS_MASK
        return (
            (word & field) << 4,
            ((word >> 16) & field) << 4,
            ((word >> 32) & field) << 4,
            (word >> 62) & 3,
        )


@dataclass(frozen=True)
class FragmentStore:
    """How the threads holding an accumulator-layout fragment write it into a swizzled
    tile, two 16-bit elements (one .b32) per store (`SwizzledTile.fragment_store`).

    A thread's base address is tile + row0 * `row_bytes` + index * scale with
    (index, scale) = `thread_byte` (the byte of its register 0 within a granule); the
    pair of registers (i, i + 1) of `pairs` entry (i, offset, g) is stored at
    base + offset + ((key ^ g) << `granule_shift`), where `key` is the thread's row modulo
    8 and g < `granules` the pair's granule within its row before swizzling."""

    row_bytes: int
    key: IndexExpr
    thread_byte: tuple[IndexExpr, int]
    granules: int
    granule_shift: int
    pairs: tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class FragmentLoad:
    """How the threads of an accumulator-layout fragment read it from a swizzled tile
    that TMA wrote, two elements per load (`SwizzledTile.fragment_load`): a `.b32` for
    16-bit elements, a `.v2` of 4-byte ones (`pair_bytes`).

    A thread's base address is tile + row0 * `row_bytes` + index * scale with
    (index, scale) = `thread_byte` (the byte of its register 0 within its 16-byte
    granule); the pair of registers (i, i + 1) of `pairs` entry (i, offset, g) is read at
    base + offset + ((key ^ g) << `granule_shift`), where `key` is the thread's row
    modulo 8 XOR the granule its column starts in (0 for 16-bit elements, whose four
    column pairs of a thread quad share one granule) and g < `granules` the pair's
    granule within its row before swizzling, less the thread's part."""

    row_bytes: int
    key: IndexExpr
    thread_byte: tuple[IndexExpr, int]
    granules: int
    granule_shift: int
    pair_bytes: int
    pairs: tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class SwizzledTile:
    """A rows x cols tile in shared memory, laid out as a TMA copy with swizzle mode
    `swizzle` (0, 32, 64 or 128 bytes) writes and reads it (cp.async.bulk.tensor, PTX ISA
    9.7.9.25; the tensor-map swizzle modes, PTX ISA 5.5.x and CU_TENSOR_MAP_SWIZZLE_*).

    The columns are split into chunks of one swizzle span (`row_bytes`: 128 bytes, 64
    16-bit elements, for 128B), one TMA box each; chunk c holds columns
    [c * chunk_cols, (c + 1) * chunk_cols) of every row, starts at c * `chunk_bytes`
    (1024-byte aligned) and puts row r at r * row_bytes.  The swizzle permutes the 16-byte
    granules of each row by XOR with address bits 7 and up (`swizzle_address`): for 128B,
    granule g of row r sits at granule g ^ (r % 8), and 8 rows form a 1024-byte block
    holding each of their 64 granules once."""

    rows: int
    cols: int
    elem_bytes: int
    swizzle: int = 128

    # -- chunks ---------------------------------------------------------------------------

    @property
    def row_bytes(self) -> int:
        """Bytes of one row of a chunk: the swizzle span (16 bytes without swizzle)."""
        return max(self.swizzle, GRANULE_BYTES)

    @property
    def chunk_cols(self) -> int:
        """Elements of one row of a chunk: the columns of one TMA box."""
        return self.row_bytes // self.elem_bytes

    @property
    def num_chunks(self) -> int:
        return -(-self.cols // self.chunk_cols)

    @property
    def chunk_bytes(self) -> int:
        """Bytes from one chunk to the next (the swizzle alignment divides them)."""
        return _align(self.rows * self.chunk_cols * self.elem_bytes, HOPPER.swizzle_alignment)

    @property
    def nbytes(self) -> int:
        return self.num_chunks * self.chunk_bytes

    @property
    def tma_bytes(self) -> int:
        """Bytes a full TMA transfer of this tile delivers (zero-filled parts included)."""
        return self.rows * self.num_chunks * self.chunk_cols * self.elem_bytes

    def tma_box(self, rows: int) -> list[int]:
        """The box of one TMA copy of `rows` rows of a chunk, innermost dimension first."""
        return [self.chunk_cols, rows]

    def stacked_box(self, rows: int, per: int, lead: int) -> list[int]:
        """The box of one TMA copy of `rows` rows of a chunk of a stacked tile (`per` rows
        of each index of the dimension before the rows': `tile.load ... stack`), with
        `lead` dimensions before the rows' (rank - 2), innermost first. `rows` a multiple
        of `per` spans rows / per of those indices; a part of one (`per` a multiple of
        `rows`, a warp group's share) is an ordinary box."""
        if per >= rows:
            if per % rows:
                raise ValueError(f"{rows} rows are not a part of the stack's {per} rows")
            return self.tma_box(rows) + [1] * lead
        if rows % per:
            raise ValueError(f"{rows} rows are not whole blocks of the stack's {per} rows")
        return self.tma_box(per) + [rows // per] + [1] * (lead - 1)

    def chunks(self) -> list[tuple[int, int]]:
        """(byte offset, first column) of each chunk: one cp.async.bulk.tensor each."""
        return [(c * self.chunk_bytes, c * self.chunk_cols) for c in range(self.num_chunks)]

    def row_band(self, parts: int) -> tuple[int, int]:
        """(rows, bytes) of one of `parts` equal bands of rows: band p is rows
        [p * rows, (p + 1) * rows) of every chunk, starting `p * bytes` after the chunk's
        start. The CTAs of a cluster each copy one band and multicast it
        (`hopper.tma_load_multicast`). A band must start on a whole swizzle pattern (the
        swizzle alignment: 8 rows of 128B), so that a copy of the band writes exactly the
        bytes a copy of the whole tile writes there."""
        rows, rest = divmod(self.rows, parts)
        step = rows * self.row_bytes
        if rest or rows == 0 or step % HOPPER.swizzle_alignment:
            pattern = HOPPER.swizzle_alignment // self.row_bytes
            raise ValueError(
                f"{self.rows} rows do not split into {parts} bands of a multiple of "
                f"{pattern} rows (a band starts on a {HOPPER.swizzle_alignment}-byte "
                "swizzle pattern)"
            )
        return rows, step

    # -- where an element lives -----------------------------------------------------------

    @property
    def granules_per_row(self) -> int:
        return self.row_bytes // GRANULE_BYTES

    def swizzle_address(self, off: int) -> int:
        """The swizzled byte of linear byte `off` (from a 1024-byte aligned base): the
        16-byte granule index (address bits 4 and up) XORed with address bits 7 and up,
        as many bits as a row has granules (CUTLASS's Swizzle<3,4,3> for 128B, <2,4,3>
        for 64B, <1,4,3> for 32B)."""
        mask = self.granules_per_row - 1
        return off ^ (((off >> 7) & mask) << 4)

    def granule(self, row: int, g: int) -> int:
        """Where granule g of row `row` of a chunk sits in that row: g ^ (row % 8) for
        128B."""
        off = self.swizzle_address(row * self.row_bytes + g * GRANULE_BYTES)
        return off % self.row_bytes // GRANULE_BYTES

    def linear_offset(self, row: int, col: int) -> int:
        """The byte of element (row, col) before swizzling."""
        chunk, c = divmod(col, self.chunk_cols)
        return chunk * self.chunk_bytes + row * self.row_bytes + c * self.elem_bytes

    def byte_offset(self, row: int, col: int) -> int:
        """The byte of element (row, col) from the tile's base (1024-byte aligned)."""
        return self.swizzle_address(self.linear_offset(row, col))

    # -- the stores of a register fragment ------------------------------------------------

    def fragment_store(self, acc: AccLayout) -> FragmentStore:
        """How the threads of `acc` store a 16-bit fragment of this tile's shape in pairs
        of columns (`hopper.store_fragment`).  Row r of a thread is row0 + dr with dr a
        multiple of 8, so r % 8 is `acc.thread_row_mod8()` for every register: each thread
        XORs with one key, and a pair's granule and chunk follow from its constant column
        offset (PTX ISA 9.7.15.5.1 for the fragment, 128B swizzle for the granules)."""
        if self.swizzle != 128:
            raise ValueError("fragment stores need a 128B-swizzled tile")
        col = acc.thread_col()
        if not isinstance(col, Shl):
            raise ValueError("the fragment's column is not a shifted thread index")
        per_granule = GRANULE_BYTES // self.elem_bytes
        pairs = []
        for i in range(0, acc.num_regs, 2):
            dr, dc = acc.reg_offset(i)
            if dr % 8 or dc % per_granule or acc.reg_offset(i + 1) != (dr, dc + 1):
                raise ValueError("fragment layout does not pair columns")
            chunk, g = divmod(dc // per_granule, self.granules_per_row)
            pairs.append((i, dr * self.row_bytes + chunk * self.chunk_bytes, g))
        return FragmentStore(
            row_bytes=self.row_bytes,
            key=acc.thread_row_mod8(),
            thread_byte=(col.x, self.elem_bytes << col.k),
            granules=self.granules_per_row,
            granule_shift=_log2(GRANULE_BYTES),
            pairs=tuple(pairs),
        )

    def fragment_load(self, acc: AccLayout) -> FragmentLoad:
        """How the threads of `acc` read a tile of this shape (16-bit or 4-byte elements)
        into their registers, a pair of adjacent columns per load
        (`hopper.load_fragment`).  A thread's columns are 2t + dc (t = lane % 4, dc a
        multiple of 8): with 16-bit elements the pair is byte 4t of the granule of dc;
        with 4-byte elements it is byte 8 (t % 2) of granule dc / 4 + t / 2, and since
        dc / 4 is even, that granule is (dc / 4) ^ (t / 2): the thread's part joins the
        XOR key (row % 8 = lane / 4, as in `fragment_store`).  Per warp, the 16-bit loads
        hit 32 distinct banks; the 8-byte loads take the two wavefronts 256 bytes need
        (rows r and r ^ 1 share banks)."""
        if self.swizzle != 128:
            raise ValueError("fragment loads need a 128B-swizzled tile")
        if self.elem_bytes not in (2, 4):
            raise ValueError(
                f"fragment loads read 2- or 4-byte elements, not {self.elem_bytes}-byte ones"
            )
        if (acc.m, acc.n) != (self.rows, self.cols):
            raise ValueError(
                f"a {acc.m}x{acc.n} fragment cannot be read from a {self.rows}x{self.cols} tile"
            )
        col = acc.thread_col()
        if not isinstance(col, Shl) or col.k != 1:
            raise ValueError("the fragment's column is not twice a thread index")
        pair_bytes = 2 * self.elem_bytes
        per_granule = GRANULE_BYTES // pair_bytes  # column pairs of one granule
        quad = col.x  # t = lane % 4: the thread's column pair
        if per_granule >= 4:
            within: IndexExpr = quad
            key = acc.thread_row_mod8()
        else:
            within = And(quad, per_granule - 1)
            key = Xor(acc.thread_row_mod8(), Shr(quad, _log2(per_granule)))
        per_granule_cols = GRANULE_BYTES // self.elem_bytes
        pairs = []
        for i in range(0, acc.num_regs, 2):
            dr, dc = acc.reg_offset(i)
            if dr % 8 or dc % 8 or acc.reg_offset(i + 1) != (dr, dc + 1):
                raise ValueError("fragment layout does not pair columns")
            chunk, c = divmod(dc, self.chunk_cols)
            pairs.append((i, dr * self.row_bytes + chunk * self.chunk_bytes, c // per_granule_cols))
        return FragmentLoad(
            row_bytes=self.row_bytes,
            key=key,
            thread_byte=(within, pair_bytes),
            granules=self.granules_per_row,
            granule_shift=_log2(GRANULE_BYTES),
            pair_bytes=pair_bytes,
            pairs=tuple(pairs),
        )

    # -- wgmma operands -------------------------------------------------------------------

    def mma_operand(self, mn_major: bool, mn: int, k: int) -> tuple[int, MatrixDescriptor]:
        """(byte offset, descriptor fields) of the wgmma operand whose MN extent starts at
        element `mn` and whose K extent starts at element `k` of this tile (PTX ISA
        9.7.15.5.1.2: the canonical 128B-swizzled layouts, in units of 8-row groups).

        K-major tiles (rows MN, columns K): a K step moves along a 128-byte row (across a
        chunk every chunk_cols elements), 8-row groups are 1024 bytes apart (SBO); LBO is
        unused (16).  MN-major tiles (rows K, columns MN) are the same chunks read the
        other way: a K step is k rows, 8-row K groups are 1024 bytes apart (SBO) and
        64-element MN blocks are one chunk apart (LBO)."""
        if self.swizzle != 128:
            raise ValueError("wgmma operands must be 128B-swizzled")
        row = self.row_bytes
        if not mn_major:
            chunk, within = divmod(k, self.chunk_cols)
            offset = chunk * self.chunk_bytes + within * self.elem_bytes + mn * row
            return offset, MatrixDescriptor(GRANULE_BYTES, 8 * row, self.swizzle)
        chunk, rest = divmod(mn, self.chunk_cols)
        if rest:
            raise ValueError("MN offsets of MN-major operands are whole chunks")
        offset = chunk * self.chunk_bytes + k * row
        return offset, MatrixDescriptor(self.chunk_bytes, 8 * row, self.swizzle)
