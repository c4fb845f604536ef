"""The `tile` dialect: the user's language, at Triton's level of abstraction.

A kernel is written over *tiles* (builtin `tensor` values of static shape held by a
program instance) and *global tensors* (`!tile.tensor`, dynamic-size arrays in device
memory).  There are no warps, barriers, shared memory or register layouts here: the
compiler decides them.  Elementwise math reuses `arith` / `math` on builtin tensors and
loops are `scf.for` with loop-carried tiles.

Semantics of one kernel launch: a logical grid of program instances, each identified by
`tile.program_id`; each instance loads tiles addressed by element coordinates of their
origin (out-of-bounds elements read as zero), computes, and stores tiles (out-of-bounds
elements are dropped).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    DictionaryAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    FloatData,
    FunctionType,
    IndexType,
    IntAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
    i32,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    TypeDirective,
    VariadicOperandVariable,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from tawac.dialects.directives import (
    Choice,
    Float,
    Indices,
    Int,
    Nat,
    parse_indices,
    print_indices,
    spaced_after,
)

DYNAMIC = DYNAMIC_INDEX

# The 8-bit float formats of tensors and MMA operands (wgmma's e4m3 and e5m2).
FP8_TYPES = (Float8E4M3FNType, Float8E5M2Type)


def type_str(t: Attribute) -> str:
    """Short MLIR spelling of a type, for diagnostics."""
    if isinstance(t, TensorType):
        dims = "x".join("?" if d == DYNAMIC else str(d) for d in t.get_shape())
        return f"tensor<{dims}x{t.element_type}>"
    return str(t)


#: The L2 eviction priorities a load or store may carry as a hint (`tile.store`'s `l2`,
#: `aref.put`'s and `hopper.tma_load`'s): lines it touches leave L2 first, or last.
L2_HINTS = ("evict_first", "evict_last")


@irdl_attr_definition
class GlobalTensorType(ParametrizedAttribute, TypeAttribute):
    """A dense array in global memory: `!tile.tensor<?x?xbf16>`.

    Dimensions are `?` (known at launch) or static.  The innermost dimension is
    contiguous; the outer strides are launch parameters.  Optional symbolic names for the
    dimensions (`!tile.tensor<?x?xbf16, ["M", "K"]>`) let tools size inputs by name.
    """

    name = "tile.tensor"

    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    dim_names: ArrayAttr[StringAttr]

    def __init__(
        self, shape: Sequence[int], element_type: Attribute, dim_names: Sequence[str] = ()
    ):
        super().__init__(
            ArrayAttr(IntAttr(d) for d in shape),
            element_type,
            ArrayAttr(StringAttr(n) for n in dim_names),
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims, elem = parser.parse_ranked_shape()
            names: list[StringAttr] = []
            if parser.parse_optional_punctuation(",") is not None:
                names = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: StringAttr(parser.parse_str_literal())
                )
        return (ArrayAttr(IntAttr(d) for d in dims), elem, ArrayAttr(names))

    def print_parameters(self, printer: Printer) -> None:
        dims = "".join(("?" if d.data == DYNAMIC else str(d.data)) + "x" for d in self.shape)
        printer.print_string(f"<{dims}")
        printer.print_attribute(self.element_type)
        if self.dim_names.data:
            names = ", ".join(f'"{n.data}"' for n in self.dim_names)
            printer.print_string(f", [{names}]")
        printer.print_string(">")

    def verify(self) -> None:
        if not isinstance(self.element_type, AnyFloat) and self.element_type != i32:
            raise VerifyException(
                f"!tile.tensor element type must be a float type or i32, got {self.element_type}"
            )
        if self.element_type.bitwidth < 16 and not isinstance(self.element_type, FP8_TYPES):
            raise VerifyException(
                f"!tile.tensor element type {self.element_type} is not supported "
                "(the 8-bit float types are f8E4M3FN and f8E5M2)"
            )
        if not self.shape.data:
            raise VerifyException("!tile.tensor must have rank >= 1")
        if self.dim_names.data and len(self.dim_names) != len(self.shape):
            raise VerifyException(
                f"!tile.tensor has {len(self.shape)} dimensions but "
                f"{len(self.dim_names)} dimension names"
            )

    @property
    def rank(self) -> int:
        return len(self.shape)

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape)


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A tile kernel: one program instance of a launch grid.

    Arguments are global tensors (`!tile.tensor`) and scalars (`f32`, `index`).
    The body is a single block ending in `tile.return`.
    """

    name = "tile.kernel"

    body = region_def("single_block")
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove())

    def __init__(self, name: str, arg_types: Sequence[Attribute], body: Region):
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(arg_types, []),
            },
            regions=[body],
        )

    # Hand-written: a signature with named block arguments, `@k(%a: T, ...)`, is beyond
    # assembly_format (xDSL's own func.func parses and prints it by hand the same way).
    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        start = parser.pos
        name, inputs, outputs, region, extra, arg_attrs, _ = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "arg_attrs")
        )
        if outputs:
            parser.raise_error("tile.kernel does not return values", start, start + 1)
        op = cls(name, inputs, region)
        if extra is not None:
            op.attributes |= extra.data
        if arg_attrs is not None:
            op.arg_attrs = arg_attrs
        return op

    def print(self, printer: Printer) -> None:
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            arg_attrs=self.arg_attrs,
            reserved_attr_names=("sym_name", "function_type", "arg_attrs"),
        )

    def verify_(self) -> None:
        block = self.body.block
        if tuple(a.type for a in block.args) != tuple(self.function_type.inputs.data):
            raise VerifyException("tile.kernel: block arguments do not match the signature")
        for arg in block.args:
            t = arg.type
            if isinstance(t, GlobalTensorType | Float32Type | IndexType):
                continue
            raise VerifyException(
                f"tile.kernel @{self.sym_name.data}: argument of type {t} is not supported "
                "(expected !tile.tensor, f32 or index)"
            )
        if not isinstance(block.last_op, ReturnOp):
            raise VerifyException("tile.kernel body must end with tile.return")

    @property
    def kernel_name(self) -> str:
        return self.sym_name.data


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """Terminates a `tile.kernel` body."""

    name = "tile.return"
    traits = traits_def(IsTerminator(), HasParent(KernelOp))
    assembly_format = "attr-dict"


_AXES = ("x", "y", "z")


@irdl_custom_directive
class Axis(Choice):
    """A grid axis, `x`, `y` or `z`, held as its number."""

    CHOICES = _AXES
    MESSAGE = "expected axis x, y or z"
    AS_INDEX = True
    value: AttributeVariable


@irdl_op_definition
class ProgramIdOp(IRDLOperation):
    """The index of this program instance along one axis of the launch grid."""

    name = "tile.program_id"
    axis = prop_def(IntAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    custom_directives = (Axis,)
    assembly_format = "custom<Axis>($axis) attr-dict"

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntAttr(axis)}, result_types=[IndexType()])

    def verify_(self) -> None:
        if not 0 <= self.axis.data < len(_AXES):
            raise VerifyException(
                f"tile.program_id axis must be 0, 1 or 2 (x, y, z), got {self.axis.data}"
            )


@irdl_op_definition
class DimOp(IRDLOperation):
    """The size of one dimension of a global tensor (a launch-time value)."""

    name = "tile.dim"
    source = operand_def(GlobalTensorType)
    dim = prop_def(IntAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    custom_directives = (Int,)
    assembly_format = "$source `[` custom<Int>($dim) `]` `:` type($source) attr-dict"

    def __init__(self, source: SSAValue, dim: int):
        super().__init__(
            operands=[source], properties={"dim": IntAttr(dim)}, result_types=[IndexType()]
        )

    def verify_(self) -> None:
        t = self.source.type
        assert isinstance(t, GlobalTensorType)
        if not 0 <= self.dim.data < t.rank:
            raise VerifyException(
                f"tile.dim: dimension {self.dim.data} out of range for {t} of rank {t.rank}"
            )


def _check_access(op: IRDLOperation, gt: Attribute, tile: Attribute, n_idx: int) -> None:
    assert isinstance(gt, GlobalTensorType)
    if not isinstance(tile, TensorType):
        raise VerifyException(f"{op.name}: expected a ranked tensor tile, got {tile}")
    if not isinstance(gt.element_type, AnyFloat):
        raise VerifyException(
            f"{op.name}: tiles of {gt.element_type} tensors are not supported yet (an i32 "
            "tensor holds tile.arrive's counters)"
        )
    if tile.get_num_dims() > gt.rank:
        raise VerifyException(
            f"{op.name}: tile {type_str(tile)} has rank {tile.get_num_dims()} but "
            f"{gt} has rank {gt.rank}"
        )
    if n_idx != gt.rank:
        raise VerifyException(f"{op.name}: {n_idx} coordinates given for {gt} of rank {gt.rank}")
    if tile.element_type != gt.element_type:
        raise VerifyException(
            f"{op.name}: element type mismatch: tile {type_str(tile)} vs global {gt}"
        )
    if any(d <= 0 for d in tile.get_shape()):
        raise VerifyException(f"{op.name}: tile shape must be static, got {type_str(tile)}")


def _check_stack(op: IRDLOperation, stack: IntAttr | None, gt: Attribute, t: Attribute) -> None:
    """A stacked tile: 2-d, of a tensor of rank 3 or more (a 1-d one, a row statistic:
    rank 2 or more), its rows a multiple of the stack."""
    if stack is None:
        return
    assert isinstance(gt, GlobalTensorType) and isinstance(t, TensorType)
    n = stack.data
    dims = t.get_num_dims()
    if dims not in (1, 2) or gt.rank < dims + 1:
        raise VerifyException(
            f"{op.name}: a stacked tile is 2-d (1-d), of a tensor of rank 3 (2) or more "
            f"(got {type_str(t)} of {gt})"
        )
    if n < 1 or t.get_shape()[0] % n:
        raise VerifyException(
            f"{op.name}: stack {n} must divide the tile's {t.get_shape()[0]} rows"
        )


def stack_of(op: Operation) -> int:
    """How many consecutive indices of the dimension before its rows' the tile of a
    (stacked) load or store covers (rank-3 for a 2-d tile, rank-2 for a 1-d one): its
    `stack`, 1 for an ordinary one."""
    stack = op.properties.get("stack")
    return stack.data if isinstance(stack, IntAttr) else 1


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Reads the tile whose origin is at the given element coordinates.

    Elements outside the global tensor read as zero, or as `padding` where it is given
    (`padding -inf`: a ragged row's tail that must not change a maximum).  A tile of lower
    rank than the tensor covers one element of each leading dimension (`%q[%b, %h, %m0, %c0]` ->
    `tensor<128x64xbf16>` reads rows m0.. of head h of batch b).
    `%x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>`

    With `stack G`, the tile's rows are G blocks of rows/G rows each, block g from index
    h + g of dimension rank-3 (rows m0 .. m0 + rows/G of heads h .. h + G - 1, stacked):
    the query rows of the G heads that share one K/V head, as one tile (`group-heads`).
    TMA reads it as one box (a multi-dimensional box, PTX ISA 5.5.1 tensor copies).
    `%q = tile.load %q[%b, %h0, %m0, %c0] stack 8 : ... -> tensor<64x128xbf16>`
    """

    name = "tile.load"
    source = operand_def(GlobalTensorType)
    indices = var_operand_def(IndexType)
    result = result_def(TensorType)
    stack = opt_prop_def(IntAttr)
    padding = opt_prop_def(FloatData)

    custom_directives = (Indices, Nat, Float)
    assembly_format = (
        "$source custom<Indices>($indices) (`stack` custom<Nat>($stack)^)? "
        "(`padding` custom<Float>($padding)^)? "
        "`:` type($source) `->` type($result) attr-dict"
    )

    def __init__(
        self,
        source: SSAValue,
        indices: Sequence[SSAValue],
        result_type: Attribute,
        stack: int | None = None,
        padding: float | None = None,
    ):
        props: dict[str, Attribute] = {"stack": IntAttr(stack)} if stack is not None else {}
        if padding is not None:
            props["padding"] = FloatData(padding)
        super().__init__(operands=[source, indices], result_types=[result_type], properties=props)

    @property
    def padding_value(self) -> float:
        """What an element outside the tensor reads as: `padding`, else 0."""
        return self.padding.data if self.padding is not None else 0.0

    @property
    def zero_padded(self) -> bool:
        """Whether the outside reads as +0 (no `padding`, or `padding 0.0`), as TMA fills it."""
        v = self.padding_value
        return v == 0.0 and math.copysign(1.0, v) > 0

    def verify_(self) -> None:
        _check_access(self, self.source.type, self.result.type, len(self.indices))
        _check_stack(self, self.stack, self.source.type, self.result.type)
        rt = self.result.type
        if self.stack is not None and isinstance(rt, TensorType) and rt.get_num_dims() != 2:
            raise VerifyException("tile.load: a stacked load reads a 2-d tile")


@irdl_custom_directive
class StoreCoords(CustomDirective):
    """`tile.store`'s one operand list: `[%i, %j]`, then `stack N`, then (with the
    `bounded` property) `bounds [%ei, %ej]`, the list's second half."""

    coords: VariadicOperandVariable
    stack: AttributeVariable
    bounded: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        indices = parse_indices(parser)
        if parser.parse_optional_keyword("stack") is not None:
            self.stack.set(state, IntAttr(Nat.parse_integer(parser)))
        bounds = parse_indices(parser) if parser.parse_optional_keyword("bounds") else []
        if bounds:
            self.bounded.set(state, UnitAttr())
        self.coords.set(state, [*indices, *bounds])

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        coords = tuple(self.coords.get(op))
        half = len(coords) // 2 if self.bounded.get(op) is not None else len(coords)
        print_indices(printer, coords[:half])
        if isinstance(stack := self.stack.get(op), IntAttr):
            printer.print_string(f" stack {stack.data}")
        if coords[half:]:
            printer.print_string(" bounds ")
            print_indices(printer, coords[half:])
        spaced_after(state)


#: The attribute naming a consumer's store (`{tawac.store = "c"}`: the tensor it writes,
#: numbered when several stores write one): set by `warp-specialize`, kept by the passes
#: that clone the store, read by the schedule's per-store decisions (`stores = [c: ...]`).
STORE_ID = "tawac.store"


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Writes a tile at the given element coordinates; out-of-bounds elements are dropped.

    With `bounds` (one per tensor dimension), elements at or past a bound are dropped as
    well: a tile that ends inside a tensor's rows (a grouped GEMM's block of one expert's
    tokens, followed by the next expert's) writes only its own. A bounded store leaves
    from registers (predicated global stores), never through a TMA bulk store.

    `tile.store %o, %c[%m0, %n0] : tensor<128x256xbf16> -> !tile.tensor<?x?xbf16>`
    `tile.store %o, %c[%m0, %n0] bounds [%end, %n] : ...`

    With `stack G` the tile's rows go to G consecutive indices of dimension rank-3, as
    `tile.load`'s `stack` reads them.

    With `transposed` the tile holds the destination's block transposed: its rows run
    along the last dimension and its columns along the one before (`swap-ab` computes a
    GEMM's tile as C^T = B A^T and stores it so).

    `tile.store %ot, %c[%m0, %n0] transposed : tensor<64x16xbf16> -> ...` writes
    c[m0 + j, n0 + i] = ot[i, j].
    """

    name = "tile.store"
    value = operand_def(TensorType)
    dest = operand_def(GlobalTensorType)
    coords = var_operand_def(IndexType)
    """The coordinates, then (with `bounded`) as many bounds: one operand list, so that
    the generic form of an unbounded store is what it always was."""
    bounded = opt_prop_def(UnitAttr)
    stack = opt_prop_def(IntAttr)
    transposed = opt_prop_def(UnitAttr)
    l2 = opt_prop_def(StringAttr)
    """The L2 eviction priority of its global stores (`L2_HINTS`), a hint the
    compiler gives (`reuse-slots`): no effect on what is stored."""

    custom_directives = (StoreCoords,)
    assembly_format = (
        "$value `,` $dest custom<StoreCoords>($coords, $stack, $bounded) "
        "(`transposed` $transposed^)? (`l2` $l2^)? `:` type($value) `->` type($dest) attr-dict"
    )

    def __init__(
        self,
        value: SSAValue,
        dest: SSAValue,
        indices: Sequence[SSAValue],
        bounds: Sequence[SSAValue] = (),
        stack: int | None = None,
        transposed: bool = False,
    ):
        props: dict[str, Attribute] = {"bounded": UnitAttr()} if bounds else {}
        if stack is not None:
            props["stack"] = IntAttr(stack)
        if transposed:
            props["transposed"] = UnitAttr()
        super().__init__(operands=[value, dest, [*indices, *bounds]], properties=props)

    @property
    def indices(self) -> tuple[SSAValue, ...]:
        """The tile's origin, one coordinate per tensor dimension."""
        coords = tuple(self.coords)
        return coords[: len(coords) // 2] if self.bounded is not None else coords

    @property
    def bounds(self) -> tuple[SSAValue, ...]:
        """Per tensor dimension, the coordinate from which elements are dropped; () for
        a store clipped only by the tensor."""
        coords = tuple(self.coords)
        return coords[len(coords) // 2 :] if self.bounded is not None else ()

    def verify_(self) -> None:
        gt = self.dest.type
        assert isinstance(gt, GlobalTensorType)
        if self.bounded is not None and len(self.coords) != 2 * gt.rank:
            raise VerifyException(
                f"tile.store: {len(self.coords) - gt.rank} bounds given for {gt.rank} "
                "coordinates (one per tensor dimension)"
            )
        _check_access(self, self.dest.type, self.value.type, len(self.indices))
        _check_stack(self, self.stack, self.dest.type, self.value.type)
        if self.stack is not None and self.bounded is not None:
            raise VerifyException("tile.store: a stacked store cannot be bounded yet")
        if self.transposed is not None and (self.stack is not None or self.bounded is not None):
            raise VerifyException("tile.store: a transposed store cannot be stacked or bounded yet")
        if self.l2 is not None and self.l2.data not in L2_HINTS:
            raise VerifyException(
                f"tile.store: l2 is one of {', '.join(L2_HINTS)}, got '{self.l2.data}'"
            )
        vt = self.value.type
        if self.transposed is not None and (
            not isinstance(vt, TensorType) or vt.get_num_dims() != 2
        ):
            raise VerifyException("tile.store: a transposed store writes a 2-d tile")

    @property
    def ident(self) -> str | None:
        """The store's identity in the schedule (`STORE_ID`), or None before
        `warp-specialize`."""
        attr = self.attributes.get(STORE_ID)
        return attr.data if isinstance(attr, StringAttr) else None


@irdl_op_definition
class AtomicAddOp(IRDLOperation):
    """Adds a tile to the global tensor at the given element coordinates, each element
    with one atomic add; elements outside the tensor are not written (`tile.store`'s
    addressing and clipping, without `bounds`, `stack` or `transposed`).

    Programs adding to the same element all add: the result is the tensor's values plus
    every program's contribution, in an order the launch does not fix (f32 addition
    rounds, so two launches agree within rounding only). Nothing orders the add with
    another program's loads of the tensor. f32 tiles of f32 tensors only. Models `red`
    (PTX ISA 9.7.13.6: `red.global.add.f32`, on sm_90 `red.global.add.v2.f32` /
    `.v4.f32` of adjacent elements, each element atomic on its own). It reads and writes
    global memory: no CSE merges two adds, none moves across a store.

    `tile.atomic_add %dq, %g[%m0, %c0] : tensor<64x128xf32> -> !tile.tensor<?x?xf32>`
    """

    name = "tile.atomic_add"
    value = operand_def(TensorType)
    dest = operand_def(GlobalTensorType)
    indices = var_operand_def(IndexType)

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    custom_directives = (Indices,)
    assembly_format = (
        "$value `,` $dest custom<Indices>($indices) `:` type($value) `->` type($dest) attr-dict"
    )

    def __init__(self, value: SSAValue, dest: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, dest, indices])

    def verify_(self) -> None:
        gt, vt = self.dest.type, self.value.type
        assert isinstance(gt, GlobalTensorType)
        if isinstance(vt, TensorType) and not (
            isinstance(vt.element_type, Float32Type) and isinstance(gt.element_type, Float32Type)
        ):
            raise VerifyException(
                f"tile.atomic_add: only f32 tiles add to f32 tensors yet, got {type_str(vt)} "
                f"-> {gt}"
            )
        _check_access(self, gt, vt, len(self.indices))
        if isinstance(vt, TensorType) and vt.get_num_dims() not in (1, 2):
            raise VerifyException(f"tile.atomic_add: a 1-d or 2-d tile adds, got {type_str(vt)}")


def _check_i32_element(op: IRDLOperation, t: Attribute, n_idx: int, wrong: str) -> None:
    """One element of an i32 tensor at `n_idx` coordinates (`tile.arrive`'s counter,
    `tile.load_index`'s index): the element type and one coordinate per dimension."""
    assert isinstance(t, GlobalTensorType)
    if t.element_type != i32:
        raise VerifyException(f"{op.name}: {wrong}, got {t.element_type}")
    if n_idx != t.rank:
        raise VerifyException(f"{op.name}: {n_idx} coordinates given for {t} of rank {t.rank}")


@irdl_op_definition
class ArriveOp(IRDLOperation):
    """Counts this program's arrival at one counter of a global `i32` tensor and says
    whether it was the last of `count` programs to arrive there.

    The program's global stores made before the op are released at GPU scope first, and
    the one program whose arrival is the `count`-th acquires: its reads after the op see
    every store the other `count` - 1 programs made before their arrivals.  The last
    arrival sets the counter back to 0, so a tensor of zeros is zeros again when every
    program of the launch has arrived (split-K's tickets: `split-k`).  Models a fence
    (PTX ISA 9.7.13.4, `fence.acq_rel.gpu`) around an atomic add (9.7.13.5, `atom.add`).
    A counter outside the tensor counts nothing and the answer is false.

    `%last = tile.arrive %tickets[%px, %py] count %n : !tile.tensor<?x?xi32>`
    """

    name = "tile.arrive"
    counters = operand_def(GlobalTensorType)
    count = operand_def(IndexType)
    indices = var_operand_def(IndexType)
    result = result_def(i1)

    custom_directives = (Indices,)
    assembly_format = (
        "$counters custom<Indices>($indices) `count` $count `:` type($counters) attr-dict"
    )

    def __init__(self, counters: SSAValue, indices: Sequence[SSAValue], count: SSAValue):
        super().__init__(operands=[counters, count, indices], result_types=[i1])

    def verify_(self) -> None:
        _check_i32_element(self, self.counters.type, len(self.indices), "counters must be i32")


#: The memory orders of `tile.atomic_cas` and `tile.atomic_xchg` (`atom`'s `.sem`, PTX ISA
#: 9.7.13.5; Triton's `sem=`), weakest first.
MEMORY_ORDERS = ("relaxed", "acquire", "release", "acq_rel")


@irdl_custom_directive
class MemoryOrder(Choice):
    """The memory order of a scalar atomic: relaxed, acquire, release or acq_rel."""

    CHOICES = MEMORY_ORDERS
    MESSAGE = f"expected a memory order ({', '.join(MEMORY_ORDERS)})"
    value: AttributeVariable


class _ScalarAtomic(IRDLOperation):
    """What `tile.atomic_cas` and `tile.atomic_xchg` share: one element of an `i32`
    tensor at the coordinates, index operands written as i32, the element's old value as
    the index result, and the memory order."""

    order = prop_def(StringAttr)
    result = result_def(IndexType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    @property
    def acquires(self) -> bool:
        """The program's accesses after the op happen after it (`acquire`, `acq_rel`)."""
        return self.order.data in ("acquire", "acq_rel")

    @property
    def releases(self) -> bool:
        """The program's accesses before the op happen before it (`release`, `acq_rel`)."""
        return self.order.data in ("release", "acq_rel")

    def verify_(self) -> None:
        if self.order.data not in MEMORY_ORDERS:
            raise VerifyException(f"{self.name}: unknown memory order {self.order.data!r}")
        target, indices = self.target, self.indices  # type: ignore[attr-defined]
        _check_i32_element(self, target.type, len(indices), "expected an i32 tensor")


@irdl_op_definition
class AtomicCasOp(_ScalarAtomic):
    """Compare-and-swap of one element of a global `i32` tensor, once per program: where
    the element equals `cmp` it becomes `value`, in one atomic step; the result is the
    element's value before (the swap happened where it equals `cmp`), the same in the
    whole program.

    Once per program, not per thread or element: the program's one read-modify-write at
    GPU scope (every program of the launch). `order` places the program's other memory
    accesses around it: with `acquire` (or `acq_rel`) every access after it in program
    order happens after it, and sees what another program wrote before a `release` whose
    value it read; with `release` (or `acq_rel`) every access before it happens before
    it; `relaxed` orders nothing. A coordinate outside the tensor writes nothing and
    reads -1 (as `tile.load_index`). A spin lock is an `scf.while` without loop-carried
    values around it (`while tl.atomic_cas(Lock, 0, 1) == 1: pass`). Models
    `atom{.sem}.gpu.global.cas.b32` (PTX ISA 9.7.13.5) by one thread of the program,
    its result handed to the program's other threads (`tile.atomic_xchg` alike).

    `%old = tile.atomic_cas acq_rel %lock[%i], %c0, %c1 : !tile.tensor<?xi32>`
    """

    name = "tile.atomic_cas"
    target = operand_def(GlobalTensorType)
    cmp = operand_def(IndexType)
    value = operand_def(IndexType)
    indices = var_operand_def(IndexType)

    custom_directives = (MemoryOrder, Indices)
    assembly_format = (
        "custom<MemoryOrder>($order) $target custom<Indices>($indices) `,` $cmp `,` $value "
        "`:` type($target) attr-dict"
    )

    def __init__(
        self,
        order: str,
        target: SSAValue,
        indices: Sequence[SSAValue],
        cmp: SSAValue,
        value: SSAValue,
    ):
        super().__init__(
            operands=[target, cmp, value, indices],
            properties={"order": StringAttr(order)},
            result_types=[IndexType()],
        )


@irdl_op_definition
class AtomicXchgOp(_ScalarAtomic):
    """Exchange of one element of a global `i32` tensor, once per program: the element
    becomes `value` in one atomic step; the result is its value before, the same in the
    whole program. Once per program, with `order` and coordinates outside the tensor as
    `tile.atomic_cas` (a spin lock's release: `tile.atomic_xchg release %lock[%i], %c0`).
    Models `atom{.sem}.gpu.global.exch.b32` (PTX ISA 9.7.13.5).

    `%old = tile.atomic_xchg release %lock[%i], %c0 : !tile.tensor<?xi32>`
    """

    name = "tile.atomic_xchg"
    target = operand_def(GlobalTensorType)
    value = operand_def(IndexType)
    indices = var_operand_def(IndexType)

    custom_directives = (MemoryOrder, Indices)
    assembly_format = (
        "custom<MemoryOrder>($order) $target custom<Indices>($indices) `,` $value "
        "`:` type($target) attr-dict"
    )

    def __init__(self, order: str, target: SSAValue, indices: Sequence[SSAValue], value: SSAValue):
        super().__init__(
            operands=[target, value, indices],
            properties={"order": StringAttr(order)},
            result_types=[IndexType()],
        )


#: The scalar atomics: once per program, with a result and a memory order.
SCALAR_ATOMICS = (AtomicCasOp, AtomicXchgOp)


@irdl_op_definition
class SplitSumOp(IRDLOperation):
    """The sum over the leading dimension of `count` tiles of an f32 tensor, in order
    (`p[0] + p[1] + ... + p[count - 1]`, added left to right: the same bits whichever
    program computes it), each read straight from global memory into the registers of
    the threads that add it (no shared memory, no producer: the partials are written by
    other programs and read once, after a `tile.arrive`).  `count` is at most `max`
    (a count known only at run time reads its slices under a predicate).  The tile lies
    along the last two dimensions at the given coordinates; the first coordinate is the
    first slice.  Elements outside the tensor read as zero.  Models `ld.global.cg` (PTX
    ISA 9.7.9.8): cached in L2 only, where the other SMs' stores are.

    `%s = tile.split_sum %w[%c0, %m0, %n0] count %n max 4 : !tile.tensor<?x?x?xf32>
    -> tensor<64x128xf32>`
    """

    name = "tile.split_sum"
    source = operand_def(GlobalTensorType)
    count = operand_def(IndexType)
    indices = var_operand_def(IndexType)
    max = prop_def(IntAttr)
    result = result_def(TensorType)

    custom_directives = (Indices, Nat)
    assembly_format = (
        "$source custom<Indices>($indices) `count` $count `max` custom<Nat>($max) "
        "`:` type($source) `->` type($result) attr-dict"
    )

    def __init__(
        self,
        source: SSAValue,
        indices: Sequence[SSAValue],
        count: SSAValue,
        max_count: int,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[source, count, indices],
            properties={"max": IntAttr(max_count)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        t, rt = self.source.type, self.result.type
        _check_access(self, t, rt, len(self.indices))
        assert isinstance(t, GlobalTensorType) and isinstance(rt, TensorType)
        if not isinstance(rt.element_type, Float32Type) or rt.get_num_dims() != 2:
            raise VerifyException(f"tile.split_sum: expected a 2-d f32 tile, got {type_str(rt)}")
        if t.rank < 3:
            raise VerifyException(
                f"tile.split_sum: the partials need a leading dimension beyond the tile's "
                f"two, got {t} of rank {t.rank}"
            )
        if self.max.data < 1:
            raise VerifyException(f"tile.split_sum: max must be at least 1, got {self.max.data}")


SOFTMAX_BASES = ("exp2", "exp")


@irdl_custom_directive
class SoftmaxBase(Choice):
    """The exponential of `tile.split_softmax`: exp2 or exp."""

    CHOICES = SOFTMAX_BASES
    MESSAGE = "expected exp2 or exp"
    value: AttributeVariable


@irdl_custom_directive
class SoftmaxResults(CustomDirective):
    """`tile.split_softmax`'s results, `tensor<MxNxf32>, tensor<Mxf32>`: the combined
    tile's type gives the row statistics' (the second type written is not read)."""

    out: TypeDirective
    row_max: TypeDirective
    row_sum: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        pos = parser.pos
        ot = parser.parse_type()
        parser.parse_punctuation(",")
        parser.parse_type()
        if not isinstance(ot, TensorType) or ot.get_num_dims() != 2:
            parser.raise_error("tile.split_softmax: expected a 2-d tile", pos, parser.pos)
        rows = TensorType(Float32Type(), [ot.get_shape()[0]])
        self.out.set(state, (ot,))
        self.row_max.set(state, (rows,))
        self.row_sum.set(state, (rows,))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_list((*self.out.get(op), *self.row_max.get(op)), printer.print_attribute)


@irdl_op_definition
class SplitSoftmaxOp(IRDLOperation):
    """Combines `count` partial online softmaxes (split-key attention, flash-decoding),
    in order: slice s along the leading dimension of `partials` holds a program's
    un-normalised output O_s (an f32 tile at the coordinates, as the epilogue stores its
    output: `stack` too), of `row_maxes` and `row_sums` its row maximum m_s and row sum
    l_s (1-d, at the coordinates but the last, along the last dimension).  With
    M = max_s m_s and w_s = base(m_s - M) (`exp2` or `exp`, the loop's rescale):

        O = sum_s w_s O_s,   M,   L = sum_s w_s l_s      (added in split order)

    the (O, m, l) one program over all the keys would have had, up to rounding, and the
    same bits whichever program combines.  A slice at or past `count` (at most `max`)
    counts as empty (m = -inf); elements outside the tensors read as O = 0, m = -inf,
    l = 0 (rows the output does not have).  Read as `tile.split_sum` reads
    (`ld.global.cg`, PTX ISA 9.7.9.8, straight into the registers that combine them).

    `%o, %m, %l = tile.split_softmax %po[%c0, %b, %h0, %m0, %c0], %pm, %pl count %n max 16
    exp2 stack 8 : !tile.tensor<?x?x?x?x?xf32>, !tile.tensor<?x?x?x?xf32>,
    !tile.tensor<?x?x?x?xf32> -> tensor<64x128xf32>, tensor<64xf32>`
    """

    name = "tile.split_softmax"
    partials = operand_def(GlobalTensorType)
    row_maxes = operand_def(GlobalTensorType)
    row_sums = operand_def(GlobalTensorType)
    count = operand_def(IndexType)
    indices = var_operand_def(IndexType)
    max = prop_def(IntAttr)
    base = prop_def(StringAttr)
    stack = opt_prop_def(IntAttr)
    out = result_def(TensorType)
    row_max = result_def(TensorType)
    row_sum = result_def(TensorType)

    custom_directives = (Indices, Nat, SoftmaxBase, SoftmaxResults)
    assembly_format = (
        "$partials custom<Indices>($indices) `,` $row_maxes `,` $row_sums `count` $count "
        "`max` custom<Nat>($max) custom<SoftmaxBase>($base) (`stack` custom<Nat>($stack)^)? "
        "`:` type($partials) `,` type($row_maxes) `,` type($row_sums) "
        "`->` custom<SoftmaxResults>(type($out), type($row_max), type($row_sum)) attr-dict"
    )

    def __init__(
        self,
        partials: SSAValue,
        stats: tuple[SSAValue, SSAValue],
        indices: Sequence[SSAValue],
        count: SSAValue,
        max_count: int,
        base: str,
        out_type: TensorType,
        stack: int | None = None,
    ):
        rows = TensorType(Float32Type(), [out_type.get_shape()[0]])
        props: dict[str, Attribute] = {"max": IntAttr(max_count), "base": StringAttr(base)}
        if stack is not None and stack > 1:
            props["stack"] = IntAttr(stack)
        super().__init__(
            operands=[partials, stats[0], stats[1], count, indices],
            properties=props,
            result_types=[out_type, rows, rows],
        )

    def verify_(self) -> None:
        pt, ot = self.partials.type, self.out.type
        _check_access(self, pt, ot, len(self.indices))
        assert isinstance(pt, GlobalTensorType) and isinstance(ot, TensorType)
        if not isinstance(ot.element_type, Float32Type) or ot.get_num_dims() != 2:
            raise VerifyException(
                f"tile.split_softmax: expected a 2-d f32 tile, got {type_str(ot)}"
            )
        if pt.rank < 3:
            raise VerifyException(
                "tile.split_softmax: the partials need a leading dimension beyond the tile's two"
            )
        for st in (self.row_maxes.type, self.row_sums.type):
            assert isinstance(st, GlobalTensorType)
            if st.rank != pt.rank - 1 or not isinstance(st.element_type, Float32Type):
                raise VerifyException(
                    "tile.split_softmax: the row statistics are f32 tensors of one dimension "
                    f"less than the partials, got {st}"
                )
        _check_stack(self, self.stack, pt, ot)
        if self.base.data not in SOFTMAX_BASES:
            raise VerifyException(f"tile.split_softmax: unknown base {self.base.data!r}")
        if self.max.data < 1:
            raise VerifyException(
                f"tile.split_softmax: max must be at least 1, got {self.max.data}"
            )


@irdl_op_definition
class SplitInfoOp(IRDLOperation):
    """This program's share of its output tile under the launch's work decomposition
    (stream-K, `split-k{stream=...}`): `n` programs share the tile (1: it is not split),
    this one is the `z`-th of them, and their partial tiles are the workspace's slots
    `base` .. `base + n - 1`.  The tile order decides it: `persistent` replaces the op
    with what its loop over tiles computes.

    `%n, %z, %base = tile.split_info`
    """

    name = "tile.split_info"
    count = result_def(IndexType)
    index = result_def(IndexType)
    base = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType(), IndexType(), IndexType()])


@irdl_op_definition
class LoadIndexOp(IRDLOperation):
    """Reads one element of an `i32` tensor as an index: a value that other coordinates,
    loop bounds and loads may use (an expert's id for a grouped GEMM's tile, a page of a
    paged cache).  Every partition that needs the value reads it (the producer too: its
    loads' coordinates may depend on it).  Coordinates outside the tensor read -1.  Models
    `ld.global.s32` (PTX ISA 9.7.9.8).

    `%e = tile.load_index %ids[%pid_m] : !tile.tensor<?xi32>`
    """

    name = "tile.load_index"
    source = operand_def(GlobalTensorType)
    indices = var_operand_def(IndexType)
    result = result_def(IndexType)

    custom_directives = (Indices,)
    assembly_format = "$source custom<Indices>($indices) `:` type($source) attr-dict"

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[source, indices], result_types=[IndexType()])

    def verify_(self) -> None:
        _check_i32_element(self, self.source.type, len(self.indices), "expected an i32 tensor")


MMA_INPUT_TYPES = (BFloat16Type, Float16Type, Float8E4M3FNType, Float8E5M2Type)


def mma_types_compatible(a: Attribute, b: Attribute) -> bool:
    """Whether two MMA operand element types may meet in one product: equal, or two
    fp8 formats (wgmma multiplies e4m3 by e5m2)."""
    return a == b or (isinstance(a, FP8_TYPES) and isinstance(b, FP8_TYPES))


@irdl_op_definition
class DotOp(IRDLOperation):
    """Matrix product with fp32 accumulation: `acc + op(lhs) * op(rhs)`.

    `lhs` is MxK (KxM with `transpose_lhs`), `rhs` is KxN (NxK with `transpose_rhs`),
    `acc` and the result are MxN f32.
    """

    name = "tile.dot"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    T: ClassVar = VarConstraint("T", base(TensorType))
    acc = operand_def(T)
    result = result_def(T)
    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs `,` $acc (`transpose_lhs` $transpose_lhs^)? "
        "(`transpose_rhs` $transpose_rhs^)? attr-dict "
        "`:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        acc: SSAValue,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
    ):
        props: dict[str, Attribute] = {}
        if transpose_lhs:
            props["transpose_lhs"] = UnitAttr()
        if transpose_rhs:
            props["transpose_rhs"] = UnitAttr()
        super().__init__(operands=[lhs, rhs, acc], result_types=[acc.type], properties=props)

    def mnk(self) -> tuple[int, int, int]:
        lt, rt = self.lhs.type, self.rhs.type
        assert isinstance(lt, TensorType) and isinstance(rt, TensorType)
        ls, rs = lt.get_shape(), rt.get_shape()
        m, k = (ls[1], ls[0]) if self.transpose_lhs else ls
        k2, n = (rs[1], rs[0]) if self.transpose_rhs else rs
        del k2
        return m, n, k

    def verify_(self) -> None:
        lt, rt, at = self.lhs.type, self.rhs.type, self.acc.type
        assert isinstance(lt, TensorType) and isinstance(rt, TensorType)
        assert isinstance(at, TensorType)
        for what, t in (("lhs", lt), ("rhs", rt), ("acc", at)):
            if t.get_num_dims() != 2:
                raise VerifyException(f"tile.dot: {what} must be 2-d, got {type_str(t)}")
        if self.result.type != at:
            raise VerifyException("tile.dot: result type must equal the accumulator type")
        if not isinstance(lt.element_type, MMA_INPUT_TYPES):
            raise VerifyException(
                f"tile.dot: operand element type {lt.element_type} is not supported "
                "(bf16, f16, f8E4M3FN or f8E5M2)"
            )
        if not mma_types_compatible(lt.element_type, rt.element_type):
            raise VerifyException(
                f"tile.dot: operand element types differ: {type_str(lt)} vs {type_str(rt)}"
            )
        if not isinstance(at.element_type, Float32Type):
            raise VerifyException(f"tile.dot: accumulator must be f32, got {type_str(at)}")
        ls, rs = lt.get_shape(), rt.get_shape()
        m, k = (ls[1], ls[0]) if self.transpose_lhs else ls
        k2, n = (rs[1], rs[0]) if self.transpose_rhs else rs
        if k != k2:
            raise VerifyException(
                f"tile.dot: contraction sizes differ: lhs {type_str(lt)} has K={k}, "
                f"rhs {type_str(rt)} has K={k2}"
            )
        if tuple(at.get_shape()) != (m, n):
            raise VerifyException(
                f"tile.dot: accumulator {type_str(at)} does not match the product shape "
                f"{m}x{n} of {type_str(lt)} and {type_str(rt)}"
            )


@irdl_op_definition
class SplatOp(IRDLOperation):
    """A tile with every element equal to a scalar: `tile.splat %s : f32 -> tensor<..>`;
    an index scalar makes an i32 tile (for masks: `tile.cmpi slt, %cols, %limit`)."""

    name = "tile.splat"
    value = operand_def(Float32Type | IndexType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `:` type($value) `->` type($result)"

    def verify_(self) -> None:
        rt = self.result.type
        assert isinstance(rt, TensorType)
        want = i32 if isinstance(self.value.type, IndexType) else self.value.type
        if rt.element_type != want:
            raise VerifyException(
                f"tile.splat: {type_str(rt)} cannot hold {self.value.type} values "
                f"(expected {want} elements)"
            )


@irdl_op_definition
class BroadcastOp(IRDLOperation):
    """Replicates a 1-d tile along a new dimension of a 2-d tile.

    `tile.broadcast %v, 1 : tensor<256xf32> -> tensor<128x256xf32>` puts the vector along
    dimension 1 (a row vector repeated over rows); dimension 0 puts it along the rows.
    """

    name = "tile.broadcast"
    source = operand_def(TensorType)
    dim = prop_def(IntAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    custom_directives = (Int,)
    assembly_format = "$source `,` custom<Int>($dim) `:` type($source) `->` type($result) attr-dict"

    def __init__(self, source: SSAValue, dim: int, result_type: Attribute):
        super().__init__(
            operands=[source], properties={"dim": IntAttr(dim)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        st, rt = self.source.type, self.result.type
        assert isinstance(st, TensorType) and isinstance(rt, TensorType)
        if st.get_num_dims() != 1 or rt.get_num_dims() != 2:
            raise VerifyException(
                f"tile.broadcast: expected 1-d to 2-d, got {type_str(st)} -> {type_str(rt)}"
            )
        d = self.dim.data
        if d not in (0, 1):
            raise VerifyException(f"tile.broadcast: dimension {d} out of range")
        if rt.get_shape()[d] != st.get_shape()[0] or st.element_type != rt.element_type:
            raise VerifyException(
                f"tile.broadcast: {type_str(st)} cannot be broadcast along dimension {d} "
                f"of {type_str(rt)}"
            )


@irdl_op_definition
class IotaOp(IRDLOperation):
    """An i32 tile of coordinates: `%r = tile.iota 0, %m0 : tensor<128x128xi32>` holds
    m0 + i at (i, j) (dimension 1: n0 + j); a 1-d one, `tile.iota 0, %c0 :
    tensor<1024xi32>`, holds c0 + i at i.  With `tile.cmpi` and `tile.select` it builds
    masks (causal attention, ragged edges, the columns of a row past its length)."""

    name = "tile.iota"
    dim = prop_def(IntAttr)
    offset = operand_def(IndexType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    custom_directives = (Int,)
    assembly_format = "custom<Int>($dim) `,` $offset `:` type($result) attr-dict"

    def __init__(self, dim: int, offset: SSAValue, result_type: Attribute):
        super().__init__(
            operands=[offset], properties={"dim": IntAttr(dim)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        rt = self.result.type
        assert isinstance(rt, TensorType)
        rank = rt.get_num_dims()
        if rank not in (1, 2) or rt.element_type != i32:
            raise VerifyException(f"tile.iota: expected a 1-d or 2-d i32 tile, got {type_str(rt)}")
        if not 0 <= self.dim.data < rank:
            raise VerifyException(
                f"tile.iota: dimension {self.dim.data} out of range for a {rank}-d tile"
            )


CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge")


@irdl_custom_directive
class CmpiPredicate(Choice):
    """A comparison of `tile.cmpi`: eq, ne, slt, sle, sgt or sge."""

    CHOICES = CMPI_PREDICATES
    MESSAGE = f"expected a predicate ({', '.join(CMPI_PREDICATES)})"
    value: AttributeVariable


@irdl_custom_directive
class CompareType(CustomDirective):
    """The operands' tensor type, which gives the result's: i1 elements of its shape."""

    lhs: TypeDirective
    rhs: TypeDirective
    result: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        pos = parser.pos
        t = parser.parse_type()
        if not isinstance(t, TensorType):
            parser.raise_error(f"tile.cmpi: expected a tensor type, got {t}", pos, parser.pos)
        self.lhs.set(state, (t,))
        self.rhs.set(state, (t,))
        self.result.set(state, (TensorType(i1, t.get_shape()),))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_attribute(self.lhs.get(op)[0])


@irdl_op_definition
class CmpiOp(IRDLOperation):
    """Elementwise comparison of two i32 tiles: `tile.cmpi sge, %r, %c : tensor<..xi32>`
    gives a tile of i1."""

    name = "tile.cmpi"
    predicate = prop_def(StringAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    custom_directives = (CmpiPredicate, CompareType)
    assembly_format = (
        "custom<CmpiPredicate>($predicate) `,` $lhs `,` $rhs "
        "`:` custom<CompareType>(type($lhs), type($rhs), type($result)) attr-dict"
    )

    def __init__(self, predicate: str, lhs: SSAValue, rhs: SSAValue):
        t = lhs.type
        assert isinstance(t, TensorType)
        super().__init__(
            operands=[lhs, rhs],
            properties={"predicate": StringAttr(predicate)},
            result_types=[TensorType(i1, t.get_shape())],
        )

    def verify_(self) -> None:
        if self.predicate.data not in CMPI_PREDICATES:
            raise VerifyException(f"tile.cmpi: unknown predicate {self.predicate.data!r}")
        if self.lhs.type != self.rhs.type:
            raise VerifyException("tile.cmpi: operand types differ")


@irdl_op_definition
class SelectOp(IRDLOperation):
    """Elementwise choice: `tile.select %mask, %a, %b : tensor<..xi1>, tensor<..xf32>`."""

    name = "tile.select"
    cond = operand_def(TensorType)
    T: ClassVar = VarConstraint("T", base(TensorType))
    true_value = operand_def(T)
    false_value = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = (
        "$cond `,` $true_value `,` $false_value attr-dict `:` type($cond) `,` type($result)"
    )

    def __init__(self, cond: SSAValue, a: SSAValue, b: SSAValue):
        super().__init__(operands=[cond, a, b], result_types=[a.type])

    def verify_(self) -> None:
        ct, rt = self.cond.type, self.result.type
        assert isinstance(ct, TensorType) and isinstance(rt, TensorType)
        if ct.element_type != i1 or ct.get_shape() != rt.get_shape():
            raise VerifyException(
                f"tile.select: the condition {type_str(ct)} must be an i1 tile of the "
                f"shape of {type_str(rt)}"
            )


REDUCE_KINDS = ("max", "min", "sum")


@irdl_custom_directive
class ReduceKind(Choice):
    """A reduction of `tile.reduce`: max, min or sum."""

    CHOICES = REDUCE_KINDS
    MESSAGE = f"expected a reduction ({', '.join(REDUCE_KINDS)})"
    value: AttributeVariable


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Reduces a 2-d tile along one dimension to a 1-d tile, or a 1-d tile to a scalar.

    `%m = tile.reduce max %s, 1 : tensor<128x64xf32> -> tensor<128xf32>` takes the maximum
    over dimension 1 (along each row): the result has one value per row.
    `%m = tile.reduce max %v, 0 : tensor<1024xf32> -> f32` takes the maximum of all the
    elements of a 1-d tile: the result is a scalar of its element type.  Kinds: max,
    min, sum.
    """

    name = "tile.reduce"
    kind = prop_def(StringAttr)
    dim = prop_def(IntAttr)
    source = operand_def(TensorType)
    result = result_def(TensorType | AnyFloat)
    traits = traits_def(Pure())

    custom_directives = (ReduceKind, Int)
    assembly_format = (
        "custom<ReduceKind>($kind) $source `,` custom<Int>($dim) "
        "`:` type($source) `->` type($result) attr-dict"
    )

    def __init__(self, kind: str, source: SSAValue, dim: int, result_type: Attribute):
        super().__init__(
            operands=[source],
            properties={"kind": StringAttr(kind), "dim": IntAttr(dim)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        st, rt = self.source.type, self.result.type
        assert isinstance(st, TensorType)
        if self.kind.data not in REDUCE_KINDS:
            raise VerifyException(f"tile.reduce: unknown reduction {self.kind.data!r}")
        if not isinstance(rt, TensorType):
            self._verify_to_scalar(st, rt)
            return
        if st.get_num_dims() != 2 or rt.get_num_dims() != 1:
            raise VerifyException(
                f"tile.reduce: expected 2-d to 1-d, got {type_str(st)} -> {type_str(rt)}"
            )
        d = self.dim.data
        if d not in (0, 1):
            raise VerifyException(f"tile.reduce: dimension {d} out of range")
        kept = st.get_shape()[1 - d]
        if rt.get_shape()[0] != kept or rt.element_type != st.element_type:
            raise VerifyException(
                f"tile.reduce: reducing {type_str(st)} along dimension {d} gives "
                f"tensor<{kept}x{st.element_type}>, not {type_str(rt)}"
            )

    def _verify_to_scalar(self, st: TensorType, rt: Attribute) -> None:
        """A reduction to a scalar: of a 1-d tile, along dimension 0, to its element type."""
        if st.get_num_dims() != 1:
            raise VerifyException(
                f"tile.reduce: only a 1-d tile reduces to a scalar, got {type_str(st)} -> {rt}"
            )
        if self.dim.data != 0:
            raise VerifyException(
                f"tile.reduce: a 1-d tile reduces along dimension 0, not {self.dim.data}"
            )
        if rt != st.element_type:
            raise VerifyException(
                f"tile.reduce: reducing {type_str(st)} gives {st.element_type}, not {rt}"
            )


Tile = Dialect(
    "tile",
    [
        KernelOp,
        ReturnOp,
        ProgramIdOp,
        DimOp,
        LoadOp,
        StoreOp,
        AtomicAddOp,
        DotOp,
        SplatOp,
        BroadcastOp,
        ReduceOp,
        IotaOp,
        CmpiOp,
        SelectOp,
        ArriveOp,
        AtomicCasOp,
        AtomicXchgOp,
        SplitSumOp,
        SplitSoftmaxOp,
        SplitInfoOp,
        LoadIndexOp,
    ],
    [GlobalTensorType],
)
