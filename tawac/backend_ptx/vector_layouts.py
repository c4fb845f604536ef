"""Layouts of the 1-d tiles (vectors, `VectorLayouts`) of a consumer partition.

A 2-d tile in registers is in the accumulator layout of its shape or, in a kernel without
MMAs, in a `BlockedTileLayout` (`tawac.analysis.tile_layouts.TileLayouts`, which `plan`
asks too). A 1-d tile is a slice of a 2-d tile's layout: a vector along rows
(`dim` 0, the result of a reduction along dimension 1) or along columns (`dim` 1).  Which
one follows from the data flow, in both directions: a reduction fixes its result's
layout, a broadcast fixes its source's, and elementwise ops (a mask's `tile.cmpi` and
`tile.select` among them), loop-carried values and their inits, yields and results share
one; a 1-d `tile.iota` or `tile.splat` takes its class's.  This module solves those
equations with union-find, so a vector constant, a vector load or an index vector gets
its layout from how it is used.

A class of vectors that touches no 2-d tile (a vector add, a row reduced to a scalar) is
standalone: it gets a `BlockedLayout` over the partition's threads, its runs 16 bytes of
the widest element type that its loads and stores move (4 f32, 8 bf16).
"""

from __future__ import annotations

from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tawac.analysis.tile_layouts import TileLayout, TileLayouts, elem_bytes
from tawac.dialects import tile
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER
from tawac.target.layouts import BlockedLayout

_ELEMENTWISE = (
    arith.ExtFOp, arith.TruncFOp, arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp,
    arith.MaximumfOp, arith.MinimumfOp, arith.MaxnumfOp, arith.MinnumfOp, arith.NegfOp,
    arith.CmpfOp, arith.SelectOp, tile.CmpiOp, tile.SelectOp,
    math.ExpOp, math.Exp2Op, math.Log2Op,
)  # fmt: skip


def _is_vector(v: SSAValue) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.get_num_dims() == 1


class VectorLayouts:
    """The (layout, dim) of every vector value under `root` (a slice of a 2-d tile's
    layout, `tiles`), or (BlockedLayout, None) of a standalone one."""

    def __init__(self, root: Operation, warp_groups: int, kernel: Operation | None = None):
        self.tiles = TileLayouts(root, warp_groups, kernel or root)
        self.parent: dict[SSAValue, SSAValue] = {}
        self.known: dict[SSAValue, tuple[TileLayout, int]] = {}
        self.threads = HOPPER.warp_group_size * warp_groups
        # The element size the loads and stores of each vector move (by value; the
        # widest of a class sets a standalone class's runs).
        self.moved: dict[SSAValue, int] = {}
        self.blocked: dict[SSAValue, BlockedLayout] = {}
        for op in root.walk():
            self._visit(op)

    def _find(self, v: SSAValue) -> SSAValue:
        self.parent.setdefault(v, v)
        while self.parent[v] is not v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def _union(self, a: SSAValue, b: SSAValue) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra is rb:
            return
        self.parent[ra] = rb
        if ra in self.known:
            self._fix(rb, self.known.pop(ra))

    def _fix(self, v: SSAValue, layout: tuple[TileLayout, int]) -> None:
        r = self._find(v)
        old = self.known.get(r)
        if old is not None and old[0].slice_key(old[1]) != layout[0].slice_key(layout[1]):
            raise CompileError(
                "convert-to-ptx: a vector is used both along rows and along columns (or "
                "with tiles of different shapes); convert it explicitly",
                v.owner if isinstance(v.owner, Operation) else None,
            )
        self.known[r] = layout

    def _visit(self, op: Operation) -> None:
        if isinstance(op, tile.LoadOp | tile.StoreOp):
            self._note_moved(op)
        elif isinstance(op, tile.IotaOp | tile.SplatOp):
            if _is_vector(op.result):  # a 1-d value of its class, set by its users
                self._find(op.result)
        elif isinstance(op, tile.ReduceOp) and not isinstance(op.result.type, TensorType):
            self._find(op.source)  # a 1-d tile to a scalar: fixes nothing
        elif isinstance(op, tile.ReduceOp):
            st = op.source.type
            assert isinstance(st, TensorType)
            self._fix(op.result, (self.tiles.of(st, op), 1 - op.dim.data))
        elif isinstance(op, tile.BroadcastOp):
            rt = op.result.type
            assert isinstance(rt, TensorType)
            self._fix(op.source, (self.tiles.of(rt, op), op.dim.data))
        elif isinstance(op, tile.SplitSoftmaxOp):
            ot = op.out.type
            assert isinstance(ot, TensorType)
            for v in (op.row_max, op.row_sum):
                self._fix(v, (self.tiles.of(ot, op), 0))
        elif isinstance(op, _ELEMENTWISE):
            vecs = [v for v in (*op.operands, *op.results) if _is_vector(v)]
            for v in vecs[1:]:
                self._union(vecs[0], v)
        elif isinstance(op, scf.IfOp):
            for region in op.regions:
                if not region.blocks:
                    continue
                y = region.block.last_op
                assert isinstance(y, scf.YieldOp)
                for res, v in zip(op.results, y.operands, strict=True):
                    if _is_vector(res):
                        self._union(res, v)
        elif isinstance(op, scf.ForOp):
            body = op.body.block
            yield_op = body.last_op
            assert isinstance(yield_op, scf.YieldOp)
            for init, arg, y, res in zip(
                op.iter_args, body.args[1:], yield_op.operands, op.results, strict=True
            ):
                if _is_vector(res):
                    for v in (init, arg, y):
                        self._union(res, v)

    def _note_moved(self, op: tile.LoadOp | tile.StoreOp) -> None:
        """The element size a 1-d load or store moves between its vector and memory."""
        v = op.result if isinstance(op, tile.LoadOp) else op.value
        if not _is_vector(v):
            return
        t = v.type
        assert isinstance(t, TensorType)
        self.moved[v] = max(elem_bytes(t), self.moved.get(v, 0))

    def of(self, v: SSAValue, op: Operation) -> tuple[TileLayout, int] | tuple[BlockedLayout, None]:
        root = self._find(v)
        layout = self.known.get(root)
        if layout is not None:
            return layout
        blocked = self.blocked.get(root)
        if blocked is None:
            blocked = self.blocked[root] = self._blocked(root, v, op)
        return blocked, None

    def _blocked(self, root: SSAValue, v: SSAValue, op: Operation) -> BlockedLayout:
        """The layout of a standalone class: runs of 16 bytes of the widest element its
        loads and stores move (4 bytes where it moves none)."""
        t = v.type
        assert isinstance(t, TensorType)
        widest = max((size for w, size in self.moved.items() if self._find(w) is root), default=4)
        try:
            return BlockedLayout.for_tile(t.get_shape()[0], self.threads, widest)
        except ValueError as e:
            raise CompileError(f"convert-to-ptx: {e}", op) from None
