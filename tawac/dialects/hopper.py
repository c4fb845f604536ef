"""The `hopper` dialect: target-level operations of sm_90a, above individual instructions.

It names the hardware resources the aref lowering allocates (shared-memory rings of tiles,
mbarrier arrays) and the asynchronous units that use them (TMA, wgmma), with SSA
operands for slots, phases and coordinates.  `convert-to-ptx` turns each op into PTX
instructions (PTX ISA 8.x, sections 9.7.13 "Asynchronous warpgroup level matrix
multiply-accumulate", 9.7.9.25 "cp.async.bulk.tensor", 9.7.13.15 "mbarrier").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tawac.dialects.tile import GlobalTensorType, mma_types_compatible
from tawac.target.layouts import FEW_ROWS, LinearTile, SwizzledTile


def _parse_shape_swizzle(parser: AttrParser):
    with parser.in_angle_brackets():
        dims, elem = parser.parse_ranked_shape()
        parser.parse_punctuation(",")
        parser.parse_keyword("swizzle")
        swz = parser.parse_integer(allow_boolean=False, allow_negative=False)
    return ArrayAttr(IntAttr(d) for d in dims), elem, IntAttr(swz)


def _print_shape_swizzle(printer: Printer, shape, elem, swizzle) -> None:
    dims = "".join(f"{d.data}x" for d in shape)
    printer.print_string(f"<{dims}")
    printer.print_attribute(elem)
    printer.print_string(f", swizzle {swizzle.data}>")


class _SmemShaped:
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    swizzle: IntAttr

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape)

    @property
    def elem_bytes(self) -> int:
        return self.element_type.bitwidth // 8  # type: ignore[attr-defined]

    def verify(self) -> None:
        if self.swizzle.data not in (0, 32, 64, 128):
            raise VerifyException(
                f"swizzle must be 0, 32, 64 or 128 bytes, got {self.swizzle.data}"
            )
        if len(self.shape) == (2 if isinstance(self, SmemRingType) else 1) and self.swizzle.data:
            raise VerifyException("a 1-d tile in shared memory is not swizzled (swizzle 0)")


@irdl_attr_definition
class SmemRingType(_SmemShaped, ParametrizedAttribute, TypeAttribute):
    """`!hopper.smem<3x128x64xbf16, swizzle 128>`: D tiles of RxC elements in shared memory.

    Each tile is stored as ceil(C*bytes/128) column chunks of R rows x 128 bytes (the
    layout a 128-byte-swizzled TMA box writes), every chunk 1024-byte aligned
    (`SmemTileType.layout`: `tawac.target.layouts.SwizzledTile`).
    """

    name = "hopper.smem"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    swizzle: IntAttr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _parse_shape_swizzle(parser)

    def print_parameters(self, printer: Printer) -> None:
        _print_shape_swizzle(printer, self.shape, self.element_type, self.swizzle)

    @property
    def depth(self) -> int:
        return self.shape.data[0].data

    @property
    def tile_type(self) -> SmemTileType:
        return SmemTileType(self.get_shape()[1:], self.element_type, self.swizzle.data)


@irdl_attr_definition
class SmemTileType(_SmemShaped, ParametrizedAttribute, TypeAttribute):
    """`!hopper.smem_tile<128x64xbf16, swizzle 128>`: one tile of a ring, in place.
    `!hopper.smem_tile<1024xbf16, swizzle 0>`: a 1-d tile, its elements in order
    (`LinearTile`)."""

    name = "hopper.smem_tile"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    swizzle: IntAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, swizzle: int):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), element_type, IntAttr(swizzle))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _parse_shape_swizzle(parser)

    def print_parameters(self, printer: Printer) -> None:
        _print_shape_swizzle(printer, self.shape, self.element_type, self.swizzle)

    @property
    def rows(self) -> int:
        return self.get_shape()[0]

    @property
    def cols(self) -> int:
        return self.get_shape()[1]

    @property
    def layout(self) -> SwizzledTile:
        """Where each element and byte of the tile lives (chunks of one swizzle span,
        XOR-swizzled granules): the layout TMA writes and reads."""
        return SwizzledTile(self.rows, self.cols, self.elem_bytes, self.swizzle.data)

    @property
    def linear(self) -> LinearTile | None:
        """A 1-d tile's layout (its elements in order, copied in boxes of up to 256
        elements), or an unswizzled 2-d tile's of a few rows (`smem_ring_type`: its rows
        one after another); None for the other 2-d ones."""
        shape = self.get_shape()
        if len(shape) == 1:
            return LinearTile(shape[0], self.elem_bytes)
        if len(shape) == 2 and shape[0] < FEW_ROWS and self.swizzle.data == 0:
            return LinearTile(shape[1], self.elem_bytes, shape[0])
        return None

    @property
    def _chunked(self) -> SwizzledTile | LinearTile:
        return self.linear or self.layout

    @property
    def chunk_cols(self) -> int:
        """Elements of one 128-byte (swizzle-span) column chunk."""
        return self._chunked.chunk_cols

    @property
    def num_chunks(self) -> int:
        return self._chunked.num_chunks

    @property
    def chunk_bytes(self) -> int:
        return self._chunked.chunk_bytes

    @property
    def nbytes(self) -> int:
        return self._chunked.nbytes

    @property
    def tma_bytes(self) -> int:
        """Bytes a full TMA transfer of this tile delivers (zero-filled parts included)."""
        return self._chunked.tma_bytes


def smem_ring_type(tile: TensorType, depth: int, swizzle: int = 128) -> SmemRingType:
    """A ring of `depth` tiles of `tile`'s shape: 2-d tiles `swizzle`d, 1-d ones not, nor
    2-d ones of a few rows (1 to 7) that whole TMA boxes copy row by row
    (`SmemTileType.linear`: a swizzle would pad each 128-byte chunk of a row to an 8-row
    pattern, up to 8 times its bytes)."""
    shape = tile.get_shape()
    if len(shape) == 1 or (len(shape) == 2 and _linear_rows(tile)):
        swizzle = 0
    return SmemRingType(
        ArrayAttr(IntAttr(d) for d in (depth, *tile.get_shape())),
        tile.element_type,
        IntAttr(swizzle),
    )


def _linear_rows(tile: TensorType) -> bool:
    """Whether whole TMA boxes copy each row of `tile` into consecutive aligned rows
    (`LinearTile.problem`)."""
    nbytes = tile.element_type.bitwidth // 8  # type: ignore[attr-defined]
    rows, cols = tile.get_shape()
    return LinearTile.problem(cols, nbytes, rows) is None


def ring_bytes(t: SmemRingType) -> int:
    return t.depth * t.tile_type.nbytes


@irdl_attr_definition
class MbarriersType(ParametrizedAttribute, TypeAttribute):
    """`!hopper.mbarriers<3>`: an array of 64-bit mbarrier objects in shared memory."""

    name = "hopper.mbarriers"
    count: IntAttr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            n = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (IntAttr(n),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.count.data}>")


@irdl_op_definition
class SmemAllocOp(IRDLOperation):
    """A ring of tiles at a static byte offset of the dynamic shared memory."""

    name = "hopper.smem_alloc"
    offset = prop_def(IntegerAttr[I64])
    result = result_def(SmemRingType)
    assembly_format = "`offset` $offset attr-dict `:` type($result)"

    def __init__(self, offset: int, t: SmemRingType):
        super().__init__(properties={"offset": IntegerAttr(offset, i64)}, result_types=[t])


@irdl_op_definition
class MbarrierAllocOp(IRDLOperation):
    """An array of mbarriers at a static byte offset (8-byte aligned) of shared memory."""

    name = "hopper.mbarrier_alloc"
    offset = prop_def(IntegerAttr[I64])
    result = result_def(MbarriersType)
    assembly_format = "`offset` $offset attr-dict `:` type($result)"

    def __init__(self, offset: int, count: int):
        super().__init__(
            properties={"offset": IntegerAttr(offset, i64)},
            result_types=[MbarriersType(IntAttr(count))],
        )


@irdl_op_definition
class MbarrierInitOp(IRDLOperation):
    """Initialises every barrier of the array with an expected arrival count
    (`mbarrier.init`, executed by one thread)."""

    name = "hopper.mbarrier_init"
    bars = operand_def(MbarriersType)
    count = prop_def(IntegerAttr[I64])
    assembly_format = "$bars `count` $count attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, count: int):
        super().__init__(operands=[bars], properties={"count": IntegerAttr(count, i64)})


@irdl_op_definition
class CtaSyncOp(IRDLOperation):
    """A barrier over all threads of the CTA (`bar.sync 0`), publishing barrier inits."""

    name = "hopper.cta_sync"
    assembly_format = "attr-dict"


@irdl_op_definition
class MbarrierWaitOp(IRDLOperation):
    """Blocks until barrier `bars[slot]` completes the phase of parity `phase`
    (`mbarrier.try_wait.parity` in a loop)."""

    name = "hopper.mbarrier_wait"
    bars = operand_def(MbarriersType)
    slot = operand_def(IndexType)
    phase = operand_def(IndexType)
    assembly_format = "$bars `[` $slot `]` `,` $phase attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, slot: SSAValue, phase: SSAValue):
        super().__init__(operands=[bars, slot, phase])


@irdl_op_definition
class MbarrierArriveOp(IRDLOperation):
    """One arrival on `bars[slot]` per warp that executes it (lane 0 arrives)."""

    name = "hopper.mbarrier_arrive"
    bars = operand_def(MbarriersType)
    slot = operand_def(IndexType)
    assembly_format = "$bars `[` $slot `]` attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, slot: SSAValue):
        super().__init__(operands=[bars, slot])


@irdl_op_definition
class MbarrierArriveExpectTxOp(IRDLOperation):
    """Arrives on `bars[slot]` and adds `bytes` to its expected transaction count
    (`mbarrier.arrive.expect_tx`); the TMA loads completing on it bring the bytes."""

    name = "hopper.mbarrier_arrive_expect_tx"
    bars = operand_def(MbarriersType)
    slot = operand_def(IndexType)
    bytes = prop_def(IntegerAttr[I64])
    assembly_format = "$bars `[` $slot `]` `,` $bytes attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, slot: SSAValue, nbytes: int):
        super().__init__(operands=[bars, slot], properties={"bytes": IntegerAttr(nbytes, i64)})


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """Copies the tile of `source` at the element coordinates into slot `slot` of the
    ring, completing on `bars[slot]` (`cp.async.bulk.tensor...mbarrier::complete_tx`).
    Out-of-bounds elements are zero-filled.  `stack`: a stacked tile (`tile.load`'s),
    one box spanning the rows' dimension and the one before it."""

    name = "hopper.tma_load"
    source = operand_def(GlobalTensorType)
    indices = var_operand_def(IndexType)
    ring = operand_def(SmemRingType)
    bars = operand_def(MbarriersType)
    slot = operand_def(IndexType)
    l2_if = opt_operand_def(i1)
    """Where given, `l2` applies only where it holds (elsewhere the normal priority)."""
    stack = opt_prop_def(IntAttr)
    l2 = opt_prop_def(StringAttr)
    """The L2 eviction priority of the copy (`tile.L2_HINTS`): a hint."""
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$source `[` $indices `]` (`stack` $stack^)? `,` $ring `[` $slot `]` `,` $bars "
        "(`l2` $l2^)? (`l2_if` $l2_if^)? attr-dict `:` type($source) `,` type($ring) `,` "
        "type($bars)"
    )

    def __init__(
        self,
        source: SSAValue,
        indices: Sequence[SSAValue],
        ring: SSAValue,
        bars: SSAValue,
        slot: SSAValue,
        stack: int | None = None,
        l2: str | None = None,
        l2_if: SSAValue | None = None,
    ):
        props: dict[str, Attribute] = (
            {"stack": IntAttr(stack)} if stack is not None and stack > 1 else {}
        )
        if l2 is not None:
            props["l2"] = StringAttr(l2)
        cond = [l2_if] if l2_if is not None else []
        super().__init__(operands=[source, indices, ring, bars, slot, cond], properties=props)

    def verify_(self) -> None:
        st, rt = self.source.type, self.ring.type
        assert isinstance(st, GlobalTensorType) and isinstance(rt, SmemRingType)
        if len(self.indices) != st.rank or st.rank < len(rt.shape) - 1:
            raise VerifyException("hopper.tma_load: coordinates do not match the ranks")
        if st.element_type != rt.element_type:
            raise VerifyException("hopper.tma_load: element types differ")


@irdl_op_definition
class SmemSlotOp(IRDLOperation):
    """The tile held in slot `slot` of a ring, as an operand for wgmma."""

    name = "hopper.smem_slot"
    ring = operand_def(SmemRingType)
    slot = operand_def(IndexType)
    result = result_def(SmemTileType)
    traits = traits_def(Pure())
    assembly_format = "$ring `[` $slot `]` attr-dict `:` type($ring) `->` type($result)"

    def __init__(self, ring: SSAValue, slot: SSAValue):
        rt = ring.type
        assert isinstance(rt, SmemRingType)
        super().__init__(operands=[ring, slot], result_types=[rt.tile_type])

    def verify_(self) -> None:
        rt = self.ring.type
        assert isinstance(rt, SmemRingType)
        if self.result.type != rt.tile_type:
            raise VerifyException(
                f"hopper.smem_slot: result {self.result.type} is not the tile type "
                f"{rt.tile_type} of the ring"
            )


@irdl_op_definition
class WgmmaOp(IRDLOperation):
    """Asynchronous warpgroup MMA over shared-memory operands: `acc + A * B`.

    `a` is MxK, `b` is NxK (both K-major; `transpose_*` mark MN-major operands), the
    accumulator MxN f32 in registers, split over the warp groups of the partition.  `a`
    may also be a 16-bit tile in registers (the wgmma register-A form), laid out like an
    accumulator of the same partition: its k16 slices are the accumulator registers of
    n16 column chunks, packed in pairs.
    Issues `wgmma.fence`, one `wgmma.mma_async` per k16 step and per m64 block, and
    `wgmma.commit_group`; completion is awaited by `hopper.wgmma_wait`.
    """

    name = "hopper.wgmma"
    T: ClassVar = VarConstraint("T", base(TensorType))
    a = operand_def(SmemTileType | TensorType)
    b = operand_def(SmemTileType)
    acc = operand_def(T)
    result = result_def(T)
    transpose_a = opt_prop_def(UnitAttr)
    transpose_b = opt_prop_def(UnitAttr)
    assembly_format = (
        "$a `,` $b `,` $acc (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)? "
        "attr-dict `:` type($a) `,` type($b) `->` type($result)"
    )

    def __init__(self, a: SSAValue, b: SSAValue, acc: SSAValue):
        super().__init__(operands=[a, b, acc], result_types=[acc.type])

    def verify_(self) -> None:
        at, bt, ct = self.a.type, self.b.type, self.acc.type
        assert isinstance(bt, SmemTileType) and isinstance(ct, TensorType)
        if isinstance(at, TensorType):
            if self.transpose_a is not None:
                raise VerifyException("hopper.wgmma: a register A operand cannot be transposed")
            am, ak = at.get_shape()
        else:
            am, ak = (at.cols, at.rows) if self.transpose_a is not None else (at.rows, at.cols)
        bn, bk = (bt.cols, bt.rows) if self.transpose_b is not None else (bt.rows, bt.cols)
        if ak != bk or tuple(ct.get_shape()) != (am, bn):
            raise VerifyException(
                f"hopper.wgmma: {at} x {bt} (M={am}, N={bn}, K={ak}/{bk}) does not produce "
                f"the accumulator {ct}"
            )
        if not mma_types_compatible(at.element_type, bt.element_type):
            raise VerifyException("hopper.wgmma: operand element types differ")


@irdl_op_definition
class WgmmaWaitOp(IRDLOperation):
    """Waits until at most `pending` wgmma groups of this warp group are in flight
    (`wgmma.wait_group`).  The result is the accumulator, final when `pending` is 0."""

    name = "hopper.wgmma_wait"
    T: ClassVar = VarConstraint("T", base(TensorType))
    acc = operand_def(T)
    result = result_def(T)
    pending = prop_def(IntegerAttr[I64])
    assembly_format = "$acc `pending` $pending attr-dict `:` type($result)"

    def __init__(self, acc: SSAValue, pending: int):
        super().__init__(
            operands=[acc],
            result_types=[acc.type],
            properties={"pending": IntegerAttr(pending, i64)},
        )

    def verify_(self) -> None:
        if not 0 <= self.pending.value.data <= 7:
            raise VerifyException("hopper.wgmma_wait: pending must be in 0..7")


@irdl_op_definition
class StoreFragmentOp(IRDLOperation):
    """Every thread writes its registers of a tile into a shared-memory tile, in the
    128-byte-swizzled layout a TMA store reads (`st.shared`, then
    `fence.proxy.async.shared::cta` so that the async proxy sees the writes).

    With `columns N` the shared tile holds columns [N, N + its width) of the value (a
    chunk of a wider epilogue tile, staged through a ring of chunk buffers); the tile's
    rows are the value's. Before writing, each warp group's leader waits until at most
    `pending` of its bulk stores are still reading shared memory
    (`cp.async.bulk.wait_group.read`, PTX ISA 9.7.9.25.6.2): the stores that read this
    buffer last must be done, the `pending` most recent ones (other buffers) may not."""

    name = "hopper.store_fragment"
    value = operand_def(TensorType)
    tile = operand_def(SmemTileType)
    columns = opt_prop_def(IntegerAttr[I64])
    pending = opt_prop_def(IntegerAttr[I64])
    assembly_format = (
        "$value `,` $tile (`columns` $columns^)? (`pending` $pending^)? attr-dict "
        "`:` type($value) `,` type($tile)"
    )

    def __init__(self, value: SSAValue, tile: SSAValue, columns: int = 0, pending: int = 0):
        props = {}
        if columns:
            props["columns"] = IntegerAttr(columns, i64)
        if pending:
            props["pending"] = IntegerAttr(pending, i64)
        super().__init__(operands=[value, tile], properties=props)

    @property
    def first_column(self) -> int:
        return self.columns.value.data if self.columns is not None else 0

    @property
    def max_pending(self) -> int:
        return self.pending.value.data if self.pending is not None else 0

    def verify_(self) -> None:
        vt, tt = self.value.type, self.tile.type
        assert isinstance(vt, TensorType) and isinstance(tt, SmemTileType)
        rows, cols = vt.get_shape()[0], vt.get_shape()[-1]
        shape = tt.get_shape()
        if shape[0] != rows or not 0 <= self.first_column <= cols - shape[-1]:
            raise VerifyException(
                f"hopper.store_fragment: {tt} does not hold columns from {self.first_column} "
                f"of {vt}"
            )
        if not 0 <= self.max_pending <= 7:
            raise VerifyException("hopper.store_fragment: pending must be in 0..7")


@irdl_op_definition
class LoadFragmentOp(IRDLOperation):
    """Every thread reads its registers of a shared-memory tile (128-byte-swizzled, as a
    TMA load wrote it) in the accumulator layout of the partition (`ld.shared`, a pair of
    adjacent columns per load): a 2-d tile received through an aref and read by
    elementwise math rather than by wgmma."""

    name = "hopper.load_fragment"
    tile = operand_def(SmemTileType)
    result = result_def(TensorType)
    assembly_format = "$tile attr-dict `:` type($tile) `->` type($result)"

    def __init__(self, tile: SSAValue, result_type: Attribute):
        super().__init__(operands=[tile], result_types=[result_type])

    def verify_(self) -> None:
        tt, rt = self.tile.type, self.result.type
        assert isinstance(tt, SmemTileType) and isinstance(rt, TensorType)
        if tuple(rt.get_shape()) != tt.get_shape() or rt.element_type != tt.element_type:
            raise VerifyException(
                f"hopper.load_fragment: {tt} cannot be read as {rt} (shape and element type "
                "must agree)"
            )


@irdl_op_definition
class CtaIdOp(IRDLOperation):
    """The CTA's index in a one-dimensional launch (`%ctaid.x`)."""

    name = "hopper.cta_id"
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class NumCtasOp(IRDLOperation):
    """The number of CTAs of a one-dimensional launch (`%nctaid.x`)."""

    name = "hopper.num_ctas"
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class ConsumerSyncOp(IRDLOperation):
    """A barrier over all threads of the enclosing partition (named barrier 15)."""

    name = "hopper.consumer_sync"
    assembly_format = "attr-dict"


TURN_KINDS = ("init", "wait", "pass", "end")


@irdl_op_definition
class TurnOp(IRDLOperation):
    """Ping-pong scheduling of two consumer warp groups on the tensor core (the
    FlashAttention-3 schedule): warp group w takes its turn (`wait`: named barrier 8+w)
    before issuing its MMAs and hands the turn to the other (`pass`: arrive on 8+(1-w))
    right after, so one group's softmax overlaps the other's MMAs.  `init` (warp group 1
    passes the first turn to 0) and `end` (warp group 0 takes the turn left over) make
    the arrivals and waits of each barrier pair up."""

    name = "hopper.turn"
    kind = prop_def(StringAttr)
    assembly_format = "$kind attr-dict"

    def __init__(self, kind: str):
        super().__init__(properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        if self.kind.data not in TURN_KINDS:
            raise VerifyException(f"hopper.turn: unknown kind {self.kind.data!r}")


@irdl_op_definition
class TmaStoreOp(IRDLOperation):
    """Copies a shared-memory tile to `dest` at the element coordinates
    (`cp.async.bulk.tensor...global.shared::cta.bulk_group`); out-of-bounds elements are
    dropped.  Each warp group of the partition stores the rows it owns once all of its
    threads have written them (named barrier), and waits until the copy has read the
    shared memory (`cp.async.bulk.wait_group.read 0`).  `stack`: a stacked tile
    (`tile.store`'s)."""

    name = "hopper.tma_store"
    tile = operand_def(SmemTileType)
    dest = operand_def(GlobalTensorType)
    indices = var_operand_def(IndexType)
    stack = opt_prop_def(IntAttr)
    assembly_format = (
        "$tile `,` $dest `[` $indices `]` (`stack` $stack^)? attr-dict `:` type($tile) `,` "
        "type($dest)"
    )

    def __init__(
        self,
        tile: SSAValue,
        dest: SSAValue,
        indices: Sequence[SSAValue],
        stack: int | None = None,
    ):
        props = {"stack": IntAttr(stack)} if stack is not None and stack > 1 else {}
        super().__init__(operands=[tile, dest, indices], properties=props)


# --- thread block clusters ----------------------------------------------------


@irdl_op_definition
class ClusterSyncOp(IRDLOperation):
    """A barrier over all threads of the cluster: `barrier.cluster.arrive.release` then
    `barrier.cluster.wait.acquire` (PTX ISA 9.7.13.3 barrier.cluster).  After the
    mbarrier inits (with `fence.mbarrier_init.release.cluster`, `hopper.cta_sync`) it
    publishes them to the peer CTAs before any multicast copy or remote arrival reaches
    them; at the end of each partition it keeps every CTA alive until no peer can still
    write into its shared memory or arrive on its barriers."""

    name = "hopper.cluster_sync"
    assembly_format = "attr-dict"


@irdl_op_definition
class ClusterCtaRankOp(IRDLOperation):
    """The CTA's rank in its cluster (`%cluster_ctarank`, PTX ISA 10 special registers):
    x + cx * y within a cx x cy cluster."""

    name = "hopper.cluster_ctarank"
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class ClusterIdOp(IRDLOperation):
    """The cluster's index in a one-dimensional launch (`%clusterid.x`, PTX ISA 10
    special registers): the persistent tile loop of a cluster kernel counts clusters."""

    name = "hopper.cluster_id"
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class NumClustersOp(IRDLOperation):
    """The number of clusters of a one-dimensional launch (`%nclusterid.x`, PTX ISA 10
    special registers)."""

    name = "hopper.num_clusters"
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class MbarrierArriveRemoteOp(IRDLOperation):
    """One arrival per warp that executes it (lane 0 arrives) on barrier `bars[slot]` of
    the CTA of rank `cta` in the cluster: the barrier's address mapped into that CTA
    (`mapa.shared::cluster`, PTX ISA 9.7.9.21) and `mbarrier.arrive.shared::cluster`
    with the default `.release.cta` semantics (PTX ISA 9.7.13.15.13; cluster scope
    would add a GPU-wide memory barrier per arrival, docs/perf.md)."""

    name = "hopper.mbarrier_arrive_remote"
    bars = operand_def(MbarriersType)
    slot = operand_def(IndexType)
    cta = operand_def(IndexType)
    assembly_format = "$bars `[` $slot `]` `,` `cta` $cta attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, slot: SSAValue, cta: SSAValue):
        super().__init__(operands=[bars, slot, cta])


@irdl_op_definition
class TmaLoadMulticastOp(IRDLOperation):
    """The CTA of rank `rank` among the `ctas` CTAs of its cluster copies its band of
    rows of the tile of `source` at the element coordinates (band `rank` of `ctas` equal
    bands: `SwizzledTile.row_band`; the tile spans the last two dimensions, a leading
    coordinate selects one element, as for `hopper.tma_load`) into slot `slot` of the
    ring of every CTA of the cluster, completing on `bars[slot]` in each of them (the
    same shared-memory offsets in every destination CTA;
    `cp.async.bulk.tensor...multicast::cluster` with ctaMask 2^ctas - 1, PTX ISA
    9.7.9.25).  With every CTA of the cluster issuing its band, each CTA's slot
    receives the whole tile, whose bytes its own `arrive.expect_tx` expects.
    Out-of-bounds elements are zero-filled."""

    name = "hopper.tma_load_multicast"
    source = operand_def(GlobalTensorType)
    indices = var_operand_def(IndexType)
    ring = operand_def(SmemRingType)
    bars = operand_def(MbarriersType)
    slot = operand_def(IndexType)
    rank = operand_def(IndexType)
    ctas = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$source `[` $indices `]` `,` $ring `[` $slot `]` `,` $bars `,` `rank` $rank `of` $ctas "
        "attr-dict `:` type($source) `,` type($ring) `,` type($bars)"
    )

    def __init__(
        self,
        source: SSAValue,
        indices: Sequence[SSAValue],
        ring: SSAValue,
        bars: SSAValue,
        slot: SSAValue,
        rank: SSAValue,
        ctas: int,
    ):
        super().__init__(
            operands=[source, indices, ring, bars, slot, rank],
            properties={"ctas": IntegerAttr(ctas, i64)},
        )

    def verify_(self) -> None:
        st, rt = self.source.type, self.ring.type
        assert isinstance(st, GlobalTensorType) and isinstance(rt, SmemRingType)
        if len(self.indices) != st.rank or st.rank < 2 or len(rt.shape) != 3:
            raise VerifyException(
                "hopper.tma_load_multicast: only 2-d tiles of tensors of rank 2 or more"
            )
        if st.element_type != rt.element_type:
            raise VerifyException("hopper.tma_load_multicast: element types differ")
        ctas = self.ctas.value.data
        if not 2 <= ctas <= 16:
            raise VerifyException("hopper.tma_load_multicast: a cluster has 2 to 16 CTAs here")
        try:
            rt.tile_type.layout.row_band(ctas)
        except ValueError as err:
            raise VerifyException(f"hopper.tma_load_multicast: {err}") from None


#: The kernel attribute holding an instrumented build's event table (the `trace` pass),
#: which `convert-to-ptx` copies into the sidecar's "trace" entry.
TRACE_ATTR = "tawac.runtime.trace"


@irdl_op_definition
class TraceOp(IRDLOperation):
    """A time stamp of an instrumented build (the `trace` pass): the leader thread of the
    warp group that executes it writes one record {%globaltimer, %clock64, `event`, %smid}
    into its (CTA, warp group) slice of the trace buffer (docs/abi.md, "trace"). `event`
    indexes the kernel's event table (`tawac.runtime.trace`)."""

    name = "hopper.trace"
    event = prop_def(IntegerAttr[I64])
    assembly_format = "$event attr-dict"

    def __init__(self, event: int):
        super().__init__(properties={"event": IntegerAttr(event, i64)})

    def verify_(self) -> None:
        if not 0 <= self.event.value.data < 1 << 16:
            raise VerifyException("hopper.trace: the event id must fit 16 bits")


Hopper = Dialect(
    "hopper",
    [
        TraceOp,
        SmemAllocOp,
        MbarrierAllocOp,
        MbarrierInitOp,
        CtaSyncOp,
        MbarrierWaitOp,
        MbarrierArriveOp,
        MbarrierArriveExpectTxOp,
        TmaLoadOp,
        SmemSlotOp,
        WgmmaOp,
        WgmmaWaitOp,
        StoreFragmentOp,
        LoadFragmentOp,
        ConsumerSyncOp,
        TurnOp,
        TmaStoreOp,
        CtaIdOp,
        NumCtasOp,
        ClusterSyncOp,
        ClusterCtaRankOp,
        ClusterIdOp,
        NumClustersOp,
        MbarrierArriveRemoteOp,
        TmaLoadMulticastOp,
    ],
    [SmemRingType, SmemTileType, MbarriersType],
)
