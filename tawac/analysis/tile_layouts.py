"""The register layout of the 2-d tiles of a consumer partition (`TileLayouts`).

A 2-d tile in registers is in the accumulator layout of its shape
(`AccLayout(m, n, warp_groups)`), except in a kernel without MMAs whose partition holds a
2-d tile that layout cannot split (rows not whole m64 blocks per warp group, Triton's
32-row blocks): there every 2-d tile of the partition takes a `BlockedTileLayout`, its
runs 16 bytes of the widest element type that the partition's 2-d loads and stores move.

Where two consumer warp groups cannot split a tile of the partition into bands of rows
(one row a program), every 2-d tile of it may lie across both, all eight warps side by
side along its rows (`BlockedTileLayout.spanning`: a long row spread over the warp
groups). Only a schedule that asks for two warp groups has it (`spread`: the planners do
not propose it, so their decisions stay those measured; `--consumer-warp-groups 2` asks).

The backend lays tiles out with it (`tawac.backend_ptx.vector_layouts`); `plan` asks it
first (`layout_problem`), so a schedule whose consumer warp groups cannot split a tile is
refused where it is made, by `explain` as by `compile`, not later by `convert-to-ptx`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import BFloat16Type, Float16Type, TensorType
from xdsl.ir import Operation

from tawac.dialects import hopper, tile
from tawac.support.diagnostics import CompileError
from tawac.target.blocked_tiles import BlockedTileLayout
from tawac.target.layouts import AccLayout

#: The layout of a 2-d tile in registers.
TileLayout = AccLayout | BlockedTileLayout


def elem_bytes(t: TensorType) -> int:
    """The bytes of one element of `t` in registers' terms: 2 for bf16 and fp16, else 4."""
    return 2 if isinstance(t.element_type, BFloat16Type | Float16Type) else 4


def moved_2d(op: Operation) -> TensorType | None:
    """The type of the 2-d tile `op` moves between registers and memory, if any."""
    if isinstance(op, tile.LoadOp | hopper.LoadFragmentOp):
        v = op.result
    elif isinstance(op, tile.StoreOp | tile.AtomicAddOp | hopper.StoreFragmentOp):
        v = op.value
    else:
        return None
    t = v.type
    return t if isinstance(t, TensorType) and t.get_num_dims() == 2 else None


def _tiles_2d(root: Operation):
    """(op, type) of every 2-d tile a op under `root` makes."""
    for op in root.walk():
        for r in op.results:
            if isinstance(r.type, TensorType) and r.type.get_num_dims() == 2:
                yield op, r.type


def tile_shapes(root: Operation) -> set[tuple[int, int]]:
    """The (rows, columns) of every 2-d tile an op under `root` makes."""
    return {tuple(t.get_shape()) for _, t in _tiles_2d(root)}  # type: ignore[misc]


class TileLayouts:
    """The layout of the 2-d tiles of the consumer partition `root` of `kernel`: the
    accumulator layout of each tile's shape, or where the kernel has no MMA and some 2-d
    tile of the partition does not fit that layout, a `BlockedTileLayout` for every one
    of them, its runs 16 bytes of the widest element the partition's 2-d loads and stores
    move (4 bytes where they move none); with `spread`, where two warp groups cannot
    split some tile into bands, every tile across both (`spanning`)."""

    def __init__(self, root: Operation, warp_groups: int, kernel: Operation, spread: bool = True):
        self.warp_groups = warp_groups
        #: Every 2-d tile lies across the two warp groups, all eight warps side by side.
        self.spanning = False
        #: The element size setting a blocked layout's runs; None: accumulator layouts.
        self.blocked_bytes: int | None = None
        self._of: dict[tuple[int, int], TileLayout] = {}
        if any(isinstance(o, hopper.WgmmaOp | tile.DotOp) for o in kernel.walk()):
            return
        shapes = tile_shapes(root)
        if all(_fits_acc(m, n, warp_groups) for m, n in shapes):
            return
        widest = 0
        for op in root.walk():
            moved = moved_2d(op)
            if moved is not None:
                widest = max(widest, elem_bytes(moved))
        self.blocked_bytes = widest or 4
        if spread and warp_groups == 2:
            self.spanning = any(
                _banded_problem(m, n, self.blocked_bytes) is not None for m, n in shapes
            ) and all(_spans(m, n, self.blocked_bytes) for m, n in shapes)

    def layout(self, m: int, n: int) -> TileLayout:
        """The layout of an m x n tile; ValueError where the warp groups cannot split it."""
        layout = self._of.get((m, n))
        if layout is None:
            if self.blocked_bytes is None:
                layout = AccLayout(m, n, self.warp_groups)
            elif self.spanning:
                layout = BlockedTileLayout.spanning(m, n, self.blocked_bytes)
            else:
                layout = BlockedTileLayout.for_tile(m, n, self.warp_groups, self.blocked_bytes)
            self._of[(m, n)] = layout
        return layout

    def of(self, t: TensorType, op: Operation) -> TileLayout:
        """The layout of a 2-d tile of type `t` (made by `op`, which an error names)."""
        m, n = t.get_shape()
        try:
            return self.layout(m, n)
        except ValueError as e:
            raise CompileError(f"convert-to-ptx: {e}", op) from None


def layout_problem(
    root: Operation, warp_groups: int, kernel: Operation, spread: bool = True
) -> tuple[str, Operation] | None:
    """(why, the op making the tile) for the first 2-d tile under the consumer partition
    `root` that `warp_groups` warp groups cannot lay out, or None.

    Only a kernel without MMAs can fail here: with MMAs every tile takes the accumulator
    layout, whose m64 blocks per warp group the MMA checks (`tawac.analysis.mma`) already
    ask for."""
    if any(isinstance(o, hopper.WgmmaOp | tile.DotOp) for o in kernel.walk()):
        return None
    layouts = TileLayouts(root, warp_groups, kernel, spread)
    for op, t in _tiles_2d(root):
        try:
            layouts.layout(*t.get_shape())
        except ValueError as e:
            return str(e), op
    return None


def _banded_problem(m: int, n: int, elem: int) -> str | None:
    """Why two warp groups cannot split an m x n tile into bands of rows, or None."""
    try:
        BlockedTileLayout.for_tile(m, n, 2, elem)
    except ValueError as e:
        return str(e)
    return None


def _spans(m: int, n: int, elem: int) -> bool:
    """Two warp groups' eight warps can lie side by side along an m x n tile's rows."""
    try:
        BlockedTileLayout.spanning(m, n, elem)
    except ValueError:
        return False
    return True


def _fits_acc(m: int, n: int, warp_groups: int) -> bool:
    try:
        AccLayout(m, n, warp_groups)
    except ValueError:
        return False
    return True
