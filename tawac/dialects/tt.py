"""The `tt` dialect: the ops of Triton's TTIR (triton 3.6) that tile programs use, as
`triton.compile(...).asm["ttir"]` prints them, so that tawac reads a Triton kernel's
TTIR as it reads its own `tile` dialect.

These definitions parse and print Triton's own textual form; they carry the meaning of
Triton's ops (`include/triton/Dialect/Triton/IR/TritonOps.td` in the Triton repository)
and check only what the conversion to `tile` relies on. Pointers are `!tt.ptr<T>` (global
memory, address space 1); a tensor of pointers is a builtin tensor whose element type is
a pointer. The arithmetic, math and scf ops of TTIR are xDSL's.

Ops:
- `tt.func`, `tt.return`: a kernel and its end (`tt.func public @name(...)`).
- `tt.get_program_id x`, `tt.get_num_programs x`: the program's id and the grid's size
  along an axis (`i32`).
- `tt.make_range {start, end}`: the `tensor<Nxi32>` [start, end).
- `tt.splat`, `tt.broadcast`, `tt.expand_dims {axis}`: a scalar to a tensor, size-1
  dimensions to larger ones, a new size-1 dimension.
- `tt.addptr`: pointer(s) plus element offset(s).
- `tt.load ptr[, mask[, other]]`, `tt.store ptr, value[, mask]`: a gather and a scatter
  through a tensor of pointers (elements whose mask is false read `other`, are not
  written).
- `tt.dot a, b, c`: `a @ b + c` (`inputPrecision`, `maxNumImpreciseAcc` kept as given).
- `tt.reduce` (generic form, a combining region ending in `tt.reduce.return`) and
  `tt.trans {order}`.
- `tt.atomic_cas`, `tt.atomic_rmw` (`tl.atomic_cas`, `tl.atomic_xchg`, `tl.atomic_add`,
  ...) and `gpu.barrier` (`tl.debug_barrier()`, dialect `GPU`): read so that
  `convert-ttir` refuses them where they are.

xDSL 0.74's `arith.cmpi`, `arith.cmpf` and `arith.select` take scalars only; TTIR
compares and selects tensors (masks), so `ttir_arith()` is xDSL's arith with those three
replaced by the element-wise forms defined here (MLIR's own semantics).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i1,
    i32,
    i64,
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
    AnyAttr,
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, IsTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

#: Triton's global address space (the only one tile programs use).
GLOBAL = 1
_AXES = ("x", "y", "z")


@irdl_attr_definition
class PointerType(ParametrizedAttribute, TypeAttribute):
    """`!tt.ptr<f16>`: a pointer to global memory holding `pointee` values
    (`!tt.ptr<f16, 1>` names the address space; 1, global, is the default)."""

    name = "tt.ptr"

    pointee: Attribute
    address_space: IntAttr

    def __init__(self, pointee: Attribute, address_space: int = GLOBAL):
        super().__init__(pointee, IntAttr(address_space))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pointee = parser.parse_type()
            space = GLOBAL
            if parser.parse_optional_punctuation(",") is not None:
                space = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (pointee, IntAttr(space))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.pointee)
        if self.address_space.data != GLOBAL:
            printer.print_string(f", {self.address_space.data}")
        printer.print_string(">")


@irdl_attr_definition
class TensorDescType(ParametrizedAttribute, TypeAttribute):
    """`!tt.tensordesc<tensor<128x64xf16>>`: a tensor descriptor (TMA's tensor map) whose
    loads and stores move blocks of the given shape (`triton.language.tensor_descriptor`).
    A host-side descriptor argument is followed in the kernel's arguments by its shape
    (`i32` each) and its strides (`i64` each), as Triton's launcher passes them."""

    name = "tt.tensordesc"

    block: TensorType

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            block = parser.parse_type()
        if not isinstance(block, TensorType):
            parser.raise_error(f"a tensor descriptor of a tensor type, got {block}")
        return (block,)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.block)
        printer.print_string(">")


def pointee_of(t: Attribute) -> Attribute:
    """The type a pointer (or a tensor of pointers) points to, as a value (or a tensor of
    values): what `tt.load` through it gives."""
    if isinstance(t, PointerType):
        return t.pointee
    if isinstance(t, TensorType) and isinstance(t.element_type, PointerType):
        return TensorType(t.element_type.pointee, t.get_shape())
    raise VerifyException(f"expected a pointer or a tensor of pointers, got {t}")


@irdl_op_definition
class FuncOp(IRDLOperation):
    """A Triton kernel (`tt.func public @name(args) { ... }`): pointers and scalars in, its
    body ends in `tt.return`."""

    name = "tt.func"

    body = region_def()
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    sym_visibility = opt_prop_def(StringAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove())

    def __init__(
        self,
        name: str,
        inputs: Sequence[Attribute],
        body: Region,
        visibility: str | None = "public",
    ):
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "function_type": FunctionType.from_lists(inputs, []),
        }
        if visibility is not None:
            props["sym_visibility"] = StringAttr(visibility)
        super().__init__(properties=props, regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        visibility = parser.parse_optional_visibility_keyword()
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "sym_visibility")
        )
        op = FuncOp(name, inputs, region, visibility.data if visibility is not None else None)
        if outputs:
            op.function_type = FunctionType.from_lists(inputs, outputs)
        if arg_attrs is not None:
            op.arg_attrs = arg_attrs
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        if self.sym_visibility is not None:
            printer.print_string(f" {self.sym_visibility.data}")
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            arg_attrs=self.arg_attrs,
            reserved_attr_names=("sym_name", "function_type", "sym_visibility", "arg_attrs"),
        )


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """The end of a `tt.func` (tile programs return nothing)."""

    name = "tt.return"

    srcs = var_operand_def()

    assembly_format = "attr-dict ($srcs^ `:` type($srcs))?"

    traits = traits_def(IsTerminator())


class _AxisOp(IRDLOperation):
    """`tt.<op> x : i32`: an op of one grid axis."""

    axis = prop_def(IntegerAttr)
    result = result_def(i32)

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntegerAttr(axis, i32)}, result_types=[i32])

    @property
    def axis_index(self) -> int:
        return self.axis.value.data

    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        word = parser.parse_identifier()
        if word not in _AXES:
            parser.raise_error(f"expected an axis x, y or z, got '{word}'", pos, parser.pos)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_type()
        op = cls(_AXES.index(word))
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {_AXES[self.axis_index]}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : i32")


@irdl_op_definition
class GetProgramIdOp(_AxisOp):
    """The program's id along `axis` (Triton's `tl.program_id`)."""

    name = "tt.get_program_id"


@irdl_op_definition
class GetNumProgramsOp(_AxisOp):
    """The number of programs along `axis` (Triton's `tl.num_programs`)."""

    name = "tt.get_num_programs"


@irdl_op_definition
class MakeRangeOp(IRDLOperation):
    """`tt.make_range {end = E, start = S} : tensor<(E-S)xi32>`: S, S+1, ..., E-1."""

    name = "tt.make_range"

    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)
    result = result_def(TensorType)

    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def verify_(self) -> None:
        n = self.end.value.data - self.start.value.data
        if self.result.type.get_shape() != (n,):
            raise VerifyException(f"tt.make_range of {n} values has type {self.result.type}")


@irdl_op_definition
class SplatOp(IRDLOperation):
    """A scalar repeated into every element of a tensor."""

    name = "tt.splat"

    src = operand_def()
    result = result_def(TensorType)

    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"


@irdl_op_definition
class BroadcastOp(IRDLOperation):
    """A tensor's size-1 dimensions repeated to the result's sizes."""

    name = "tt.broadcast"

    src = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"


@irdl_op_definition
class ExpandDimsOp(IRDLOperation):
    """A new size-1 dimension at `axis` (`x[:, None]`: axis 1)."""

    name = "tt.expand_dims"

    src = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)

    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)


@irdl_op_definition
class AddPtrOp(IRDLOperation):
    """Pointer(s) plus an offset in elements (element-wise on tensors)."""

    name = "tt.addptr"

    T: ClassVar = VarConstraint("T", AnyAttr())
    ptr = operand_def(T)
    offset = operand_def()
    result = result_def(T)

    assembly_format = "$ptr `,` $offset attr-dict `:` type($result) `,` type($offset)"

    def verify_(self) -> None:
        pointee_of(self.ptr.type)


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`tt.load ptr[, mask[, other]] : type(ptr)`: the values at the pointers; where the
    mask is false, `other` (undefined without one)."""

    name = "tt.load"

    ptr = operand_def()
    mask = opt_operand_def()
    other = opt_operand_def()
    result = result_def()

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        names, attrs, ptr = _parse_pointer_form(
            parser, 1, 3, "tt.load takes a pointer, a mask and an other value"
        )
        types = [ptr, _i1_like(ptr), pointee_of(ptr)][: len(names)]
        values = parser.resolve_operands(names, types, parser.pos)
        op = cls.build(
            operands=[values[0], values[1:2], values[2:3]], result_types=[pointee_of(ptr)]
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        _print_pointer_form(self, printer)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`tt.store ptr, value[, mask] : type(ptr)`: the values written at the pointers
    (where the mask is true)."""

    name = "tt.store"

    ptr = operand_def()
    value = operand_def()
    mask = opt_operand_def()

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        names, attrs, ptr = _parse_pointer_form(
            parser, 2, 3, "tt.store takes a pointer, a value and a mask"
        )
        types = [ptr, pointee_of(ptr), _i1_like(ptr)][: len(names)]
        values = parser.resolve_operands(names, types, parser.pos)
        op = cls.build(operands=[values[0], values[1], values[2:3]])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        _print_pointer_form(self, printer)


class _AtomicOp(IRDLOperation):
    """An atomic read-modify-write Triton prints as `tt.<op> <words>, %ptr, ... :
    (types) -> type`: read so that `convert-ttir` refuses it at its Python line."""

    #: How many leading words (kind, memory order, scope) the op is printed with.
    WORDS: ClassVar[int] = 2

    ptr = operand_def()
    rest = var_operand_def()
    words = prop_def(ArrayAttr[StringAttr])
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser):
        words = []
        for _ in range(cls.WORDS):
            words.append(StringAttr(parser.parse_identifier()))
            parser.parse_punctuation(",")
        names = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ft = parser.parse_function_type()
        if len(ft.inputs.data) != len(names) or len(ft.outputs.data) != 1:
            parser.raise_error(f"{cls.name}: one type per operand and one result", pos, parser.pos)
        values = parser.resolve_operands(names, ft.inputs.data, pos)
        op = cls.build(
            operands=[values[0], values[1:]],
            result_types=[ft.outputs.data[0]],
            properties={"words": ArrayAttr(words)},
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" " + ", ".join(w.data for w in self.words.data) + ", ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list([o.type for o in self.operands], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class AtomicCasOp(_AtomicOp):
    """`tt.atomic_cas acq_rel, gpu, %ptr, %cmp, %val`: `tl.atomic_cas(ptr, cmp, val)`."""

    name = "tt.atomic_cas"


@irdl_op_definition
class AtomicRmwOp(_AtomicOp):
    """`tt.atomic_rmw exch, acq_rel, gpu, %ptr, %val, %mask`: `tl.atomic_xchg`,
    `tl.atomic_add`, ... (the first word is the operation)."""

    name = "tt.atomic_rmw"
    WORDS: ClassVar[int] = 3


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """`gpu.barrier`: `tl.debug_barrier()`, every thread of the program waits for the
    others (the `gpu` dialect's op, as TTIR prints it)."""

    name = "gpu.barrier"
    assembly_format = "attr-dict"


#: The op of the `gpu` dialect TTIR holds.
GPU = Dialect("gpu", [BarrierOp])


@irdl_op_definition
class FpToFpOp(IRDLOperation):
    """`tt.fp_to_fp %x[, rounding = rtne] : A -> B`: a float conversion Triton spells this
    way for fp8 (`x.to(tl.float8e4nv)`); a narrowing one names its rounding."""

    name = "tt.fp_to_fp"

    src = operand_def()
    result = result_def()
    rounding = opt_prop_def(StringAttr)

    @classmethod
    def parse(cls, parser: Parser) -> FpToFpOp:
        src = parser.parse_unresolved_operand()
        rounding = None
        if parser.parse_optional_punctuation(",") is not None:
            parser.parse_keyword("rounding")
            parser.parse_punctuation("=")
            rounding = parser.parse_identifier()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        st = parser.parse_type()
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        (v,) = parser.resolve_operands([src], [st], parser.pos)
        props = {"rounding": StringAttr(rounding)} if rounding is not None else {}
        op = cls.build(operands=[v], result_types=[rt], properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        if self.rounding is not None:
            printer.print_string(f", rounding = {self.rounding.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class MakeTensorDescOp(IRDLOperation):
    """`tt.make_tensor_descriptor %ptr, [%M, %K], [%sm, %sk] : <f16>, <tensor<128x64xf16>>`:
    a tensor descriptor made in the kernel (`tl.make_tensor_descriptor`) of the tensor at
    `ptr` with the given sizes (`i32`) and strides (`i64`), moving blocks of the result's
    block shape."""

    name = "tt.make_tensor_descriptor"

    base = operand_def(PointerType)
    shape = var_operand_def()
    strides = var_operand_def()
    result = result_def(TensorDescType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def parse(cls, parser: Parser) -> MakeTensorDescOp:
        base = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        shape = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(",")
        strides = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pointee = PointerType.parse_parameters(parser)[0]
        parser.parse_punctuation(",")
        (block,) = TensorDescType.parse_parameters(parser)
        (b,) = parser.resolve_operands([base], [PointerType(pointee)], parser.pos)
        sh = parser.resolve_operands(shape, [i32] * len(shape), parser.pos)
        st = parser.resolve_operands(strides, [i64] * len(strides), parser.pos)
        op = cls.build(operands=[b, sh, st], result_types=[TensorDescType(block)])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.base)
        printer.print_string(", [")
        printer.print_list(self.shape, printer.print_operand)
        printer.print_string("], [")
        printer.print_list(self.strides, printer.print_operand)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes, reserved_attr_names=("operandSegmentSizes",))
        printer.print_string(" : <")
        printer.print_attribute(self.base.type.pointee)
        printer.print_string(">, <")
        printer.print_attribute(self.result.type.block)
        printer.print_string(">")

    def verify_(self) -> None:
        rank = self.result.type.block.get_num_dims()
        if len(self.shape) != rank or len(self.strides) != rank:
            raise VerifyException(
                "tt.make_tensor_descriptor: one size and one stride per dimension of the block"
            )


def _parse_desc_indices(parser: Parser):
    """`%desc[%i, %j]`: the descriptor's and the indices' unresolved operands."""
    desc = parser.parse_unresolved_operand()
    idx = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )
    return desc, idx


@irdl_op_definition
class DescriptorLoadOp(IRDLOperation):
    """`tt.descriptor_load %desc[%i, %j] : !tt.tensordesc<T> -> T`: the block of the
    descriptor's tensor at element coordinates (i, j) (TMA: out-of-bounds elements 0)."""

    name = "tt.descriptor_load"

    desc = operand_def(TensorDescType)
    indices = var_operand_def()
    result = result_def(TensorType)

    @classmethod
    def parse(cls, parser: Parser) -> DescriptorLoadOp:
        desc, idx = _parse_desc_indices(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dt = parser.parse_type()
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        (d,) = parser.resolve_operands([desc], [dt], parser.pos)
        ops = parser.resolve_operands(idx, [i32] * len(idx), parser.pos)
        op = cls.build(operands=[d, ops], result_types=[rt])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        _print_desc_indices(printer, self.desc, self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.desc.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        _check_block(self, self.desc, self.indices, self.result.type, "the result")


@irdl_op_definition
class DescriptorStoreOp(IRDLOperation):
    """`tt.descriptor_store %desc[%i, %j], %v : !tt.tensordesc<T>, T`: the block written
    at element coordinates (i, j) (TMA: elements out of bounds are not written)."""

    name = "tt.descriptor_store"

    desc = operand_def(TensorDescType)
    indices = var_operand_def()
    src = operand_def(TensorType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def parse(cls, parser: Parser) -> DescriptorStoreOp:
        desc, idx = _parse_desc_indices(parser)
        parser.parse_punctuation(",")
        src = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dt = parser.parse_type()
        parser.parse_punctuation(",")
        st = parser.parse_type()
        d, v = parser.resolve_operands([desc, src], [dt, st], parser.pos)
        ops = parser.resolve_operands(idx, [i32] * len(idx), parser.pos)
        op = cls.build(operands=[d, ops, v])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        _print_desc_indices(printer, self.desc, self.indices)
        printer.print_string(", ")
        printer.print_operand(self.src)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("operandSegmentSizes",))
        printer.print_string(" : ")
        printer.print_attribute(self.desc.type)
        printer.print_string(", ")
        printer.print_attribute(self.src.type)

    def verify_(self) -> None:
        _check_block(self, self.desc, self.indices, self.src.type, "the value")


def _print_desc_indices(printer: Printer, desc: SSAValue, indices) -> None:
    """` %desc[%i, %j]` of `tt.descriptor_load` and `tt.descriptor_store`."""
    printer.print_string(" ")
    printer.print_operand(desc)
    printer.print_string("[")
    printer.print_list(indices, printer.print_operand)
    printer.print_string("]")


def _check_block(op: IRDLOperation, desc: SSAValue, indices, tile: Attribute, what: str) -> None:
    """One index per dimension of the descriptor's block, and `tile` (`what`: the loaded
    result, the stored value) of the block's shape."""
    dt = desc.type
    assert isinstance(dt, TensorDescType)
    if len(indices) != dt.block.get_num_dims():
        raise VerifyException(f"{op.name}: one index per dimension of the block")
    assert isinstance(tile, TensorType)
    if tile.get_shape() != dt.block.get_shape():
        raise VerifyException(f"{op.name}: {what} is the descriptor's block")


def _parse_pointer_form(parser: Parser, lo: int, hi: int, takes: str):
    """`operands attr-dict : type(ptr)` of `tt.load` and `tt.store`: the unresolved
    operands (`lo` to `hi` of them), the attributes and the pointer's type."""
    pos = parser.pos
    names = parser.parse_comma_separated_list(
        parser.Delimiter.NONE, parser.parse_unresolved_operand
    )
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ptr = parser.parse_type()
    if not lo <= len(names) <= hi:
        parser.raise_error(f"{takes}, got {len(names)} operands", pos, parser.pos)
    return names, attrs, ptr


def _print_pointer_form(op: IRDLOperation, printer: Printer) -> None:
    printer.print_string(" ")
    printer.print_list(op.operands, printer.print_operand)
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.operands[0].type)


@irdl_op_definition
class DotOp(IRDLOperation):
    """`tt.dot a, b, c[, inputPrecision = P][, maxNumImpreciseAcc = N] : A * B -> D`:
    `a @ b + c` (Triton's `tl.dot(a, b, acc)`)."""

    name = "tt.dot"

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    input_precision = opt_prop_def(StringAttr)
    max_num_imprecise_acc = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)

    @classmethod
    def parse(cls, parser: Parser) -> DotOp:
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        c = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {}
        while parser.parse_optional_punctuation(",") is not None:
            key = parser.parse_identifier()
            parser.parse_punctuation("=")
            if key == "inputPrecision":
                props["input_precision"] = StringAttr(parser.parse_identifier())
            elif key == "maxNumImpreciseAcc":
                props["max_num_imprecise_acc"] = IntegerAttr(parser.parse_integer(), i32)
            else:
                parser.raise_error(f"tt.dot: unknown option '{key}'")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ta = parser.parse_type()
        parser.parse_punctuation("*")
        tb = parser.parse_type()
        parser.parse_punctuation("->")
        td = parser.parse_type()
        va, vb, vc = parser.resolve_operands([a, b, c], [ta, tb, td], parser.pos)
        op = cls.build(operands=[va, vb, vc], result_types=[td], properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        if self.input_precision is not None:
            printer.print_string(f", inputPrecision = {self.input_precision.data}")
        if self.max_num_imprecise_acc is not None:
            n = self.max_num_imprecise_acc.value.data
            printer.print_string(f", maxNumImpreciseAcc = {n}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.a.type)
        printer.print_string(" * ")
        printer.print_attribute(self.b.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        (m, k), (k2, n) = self.a.type.get_shape(), self.b.type.get_shape()
        if k != k2 or self.result.type.get_shape() != (m, n):
            raise VerifyException(
                f"tt.dot shapes do not match: {self.a.type} * {self.b.type} -> {self.result.type}"
            )


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """`"tt.reduce"(srcs) <{axis = A}> ({ ^bb0(a, b, ...): ...; tt.reduce.return r })`: each
    source reduced along `axis` by the combining region (scalars in, scalars out); Triton
    prints it in the generic form (`tl.max`, `tl.sum`, `tl.reduce`)."""

    name = "tt.reduce"

    srcs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    reduced = var_result_def()
    combine_op = region_def("single_block")

    def combiner(self) -> Operation | None:
        """The region's one combining op (`arith.maxnumf`, `arith.addf`, ...) when it
        reduces one source by one op of its two arguments; else None."""
        block = self.combine_op.block
        ops = list(block.ops)
        if len(self.srcs) != 1 or len(ops) != 2 or not isinstance(ops[1], ReduceReturnOp):
            return None
        op = ops[0]
        if set(op.operands) != set(block.args) or ops[1].operands[0] is not op.results[0]:
            return None
        return op


@irdl_op_definition
class ReduceReturnOp(IRDLOperation):
    """The combined values of a `tt.reduce` region."""

    name = "tt.reduce.return"

    result = var_operand_def()

    assembly_format = "$result attr-dict `:` type($result)"

    traits = traits_def(IsTerminator())


@irdl_op_definition
class TransOp(IRDLOperation):
    """`tt.trans %x {order = array<i32: 1, 0>} : A -> B`: dimensions permuted by `order`."""

    name = "tt.trans"

    src = operand_def(TensorType)
    order = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)


# -- the arith ops of TTIR that xDSL 0.74 does not take on tensors --------------------------

_CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_CMPF = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip


def _i1_like(t: Attribute) -> Attribute:
    return TensorType(i1, t.get_shape()) if isinstance(t, TensorType) else i1


class _CmpOp(IRDLOperation):
    """`arith.cmp? <predicate>, lhs, rhs : T`: element-wise on tensors (the result a
    tensor of i1 of the operands' shape), as MLIR's arith and TTIR have it."""

    PREDICATES: ClassVar[tuple[str, ...]] = ()

    predicate = prop_def(IntegerAttr)
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        word = parser.parse_identifier()
        if word not in cls.PREDICATES:
            parser.raise_error(f"unknown {cls.name} predicate '{word}'", pos, parser.pos)
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        a, b = parser.resolve_operands([lhs, rhs], [t, t], parser.pos)
        op = cls.build(
            operands=[a, b],
            result_types=[_i1_like(t)],
            properties={"predicate": IntegerAttr(cls.PREDICATES.index(word), 64)},
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.PREDICATES[self.predicate.value.data]}, ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    @property
    def predicate_name(self) -> str:
        return self.PREDICATES[self.predicate.value.data]


@irdl_op_definition
class CmpiOp(_CmpOp):
    """Integer comparison, scalars or tensors (`arith.cmpi slt, %a, %b : tensor<64xi32>`)."""

    name = "arith.cmpi"
    PREDICATES: ClassVar[tuple[str, ...]] = _CMPI


@irdl_op_definition
class CmpfOp(_CmpOp):
    """Float comparison, scalars or tensors."""

    name = "arith.cmpf"
    PREDICATES: ClassVar[tuple[str, ...]] = _CMPF


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`arith.select cond, a, b : T` (a scalar condition) or `: tensor<...xi1>, T` (one
    per element)."""

    name = "arith.select"

    cond = operand_def()
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        names = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        first = parser.parse_type()
        if parser.parse_optional_punctuation(",") is not None:
            cond_type, t = first, parser.parse_type()
        else:
            cond_type, t = i1, first
        if len(names) != 3:
            parser.raise_error("arith.select takes a condition and two values")
        c, a, b = parser.resolve_operands(names, [cond_type, t, t], parser.pos)
        op = cls.build(operands=[c, a, b], result_types=[t])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if isinstance(self.cond.type, TensorType):
            printer.print_attribute(self.cond.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)


class _IntCastOp(IRDLOperation):
    """`arith.extsi %x : i32 to i64`, on scalars or tensors of integers."""

    src = operand_def()
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser):
        name = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_keyword("to")
        result_type = parser.parse_type()
        (src,) = parser.resolve_operands([name], [src_type], parser.pos)
        op = cls.build(operands=[src], result_types=[result_type])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class ExtSIOp(_IntCastOp):
    """Sign extension of an integer, scalar or tensor (`.to(tl.int64)`)."""

    name = "arith.extsi"


@irdl_op_definition
class ExtUIOp(_IntCastOp):
    """Zero extension of an integer, scalar or tensor."""

    name = "arith.extui"


@irdl_op_definition
class TruncIOp(_IntCastOp):
    """Truncation of an integer, scalar or tensor."""

    name = "arith.trunci"


def ttir_arith() -> Dialect:
    """xDSL's arith with the comparisons, the select and the integer casts of TTIR (on
    tensors)."""
    from xdsl.dialects.arith import Arith

    mine = (CmpiOp, CmpfOp, SelectOp, ExtSIOp, ExtUIOp, TruncIOp)
    names = {o.name for o in mine}
    ops = [o for o in Arith.operations if o.name not in names]
    return Dialect("arith", [*ops, *mine], list(Arith.attributes))


TT = Dialect(
    "tt",
    [
        FuncOp,
        ReturnOp,
        GetProgramIdOp,
        GetNumProgramsOp,
        MakeRangeOp,
        SplatOp,
        BroadcastOp,
        ExpandDimsOp,
        AddPtrOp,
        LoadOp,
        StoreOp,
        DotOp,
        ReduceOp,
        ReduceReturnOp,
        TransOp,
        DescriptorLoadOp,
        DescriptorStoreOp,
        MakeTensorDescOp,
        FpToFpOp,
        AtomicCasOp,
        AtomicRmwOp,
    ],
    [PointerType, TensorDescType],
)

__all__ = ["GPU", "TT", "PointerType", "pointee_of", "ttir_arith"]
