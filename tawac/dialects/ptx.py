"""The `ptx` dialect: one operation per PTX instruction (PTX ISA 8.x, sm_90a).

Values are virtual registers (`!ptx.reg<b32>` ...): every result is a fresh register and
`ptx.assign` writes an existing one, which is how loop-carried values and in-place
accumulators (wgmma's `d` operands) are expressed after structured control flow has been
lowered to labels and branches.  ptxas does the register allocation.

Each op knows its own PTX text (`ptx_text`); `tawac.backend_ptx.printer` names the
registers, declares them and writes the module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    UNKNOWN_LOC,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    BlockArgument,
    Dialect,
    Operation,
    OpResult,
    ParametrizedAttribute,
    Region,
    SSAValue,
    SSAValues,
    TypeAttribute,
    Use,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
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
from xdsl.irdl.operations import (
    BaseAccessor,
    BeforeVariadicSingleAccessor,
    UniqueVariadicAccessor,
    VarIRConstruct,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from tawac.target import HOPPER

Names = Callable[[SSAValue], str]

REG_KINDS = ("pred", "b16", "b32", "b64", "f32")


@irdl_attr_definition
class RegType(ParametrizedAttribute, TypeAttribute):
    """A virtual register of one PTX register class: pred, b16, b32, b64 or f32."""

    name = "ptx.reg"
    kind: StringAttr

    def __init__(self, kind: str):
        super().__init__(StringAttr(kind))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(parser.parse_identifier()),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.kind.data}>")

    def verify(self) -> None:
        if self.kind.data not in REG_KINDS:
            raise VerifyException(f"unknown PTX register class {self.kind.data}")


#: One `RegType` per register class, shared by every register of that class (attributes
#: are immutable values: a shared one is the same type as a new one).
_REG_TYPES = {k: RegType(k) for k in REG_KINDS}
PRED, B16, B32, B64, F32 = (_REG_TYPES[k] for k in REG_KINDS)

_KIND_OF_TYPE = {
    "pred": "pred",
    "b16": "b16",
    "u16": "b16",
    "s16": "b16",
    "f16": "b16",
    "bf16": "b16",
    "b32": "b32",
    "u32": "b32",
    "s32": "b32",
    "bf16x2": "b32",
    "f16x2": "b32",
    "b64": "b64",
    "u64": "b64",
    "s64": "b64",
    "f32": "f32",
}


# wgmma's 8-bit float operand types (PTX ISA 9.7.15.5: `.e4m3`, `.e5m2`; k32, K-major).
WGMMA_FP8_TYPES = ("e4m3", "e5m2")


_REG_OF = {t: _REG_TYPES[k] for t, k in _KIND_OF_TYPE.items()}


def reg_of(ptx_type: str) -> RegType:
    """The register class that holds a value of a PTX type such as `s32` or `bf16`."""
    return _REG_OF[ptx_type]


def reg_class(kind: str) -> RegType:
    """The `RegType` of a register class (`pred`, `b32`, ...)."""
    reg = _REG_TYPES.get(kind)
    return reg if reg is not None else RegType(kind)  # an unknown class fails verification


@lru_cache(maxsize=4096)
def _string(s: str) -> StringAttr:
    """`StringAttr(s)`, made once per string (the types and modes instructions repeat)."""
    return StringAttr(s)


@lru_cache(maxsize=4096)
def _int64(v: int) -> IntegerAttr:
    """`IntegerAttr(v, i64)`, made once per value."""
    return IntegerAttr(v, i64)


def _kind(v: SSAValue) -> str:
    t = v.type
    assert isinstance(t, RegType)
    return t.kind.data


_VALUE_TYPES = frozenset((OpResult, BlockArgument))


class PtxInstruction(IRDLOperation):
    """Base of every instruction: `ptx_text(names)` is its PTX line.

    Its constructor takes what `IRDLOperation`'s does (operands in definition order, a
    variadic one as a sequence; result types; properties) and builds the op as
    `Operation.__init__` would, without xDSL's generic argument processing (per-argument
    checks against the definition, segment sizes, default properties): every
    instruction's `__init__` passes exactly its definition's operands, results and
    properties, and no PTX op has segment sizes (but `GENERIC_INIT` ones) or default
    properties.  Thousands of instructions per kernel make this the backend's hot path."""

    GENERIC_INIT: ClassVar[bool] = False
    """Built by `IRDLOperation.__init__` (an op whose operands have segment sizes)."""

    def __init__(
        self,
        *,
        operands: Sequence[SSAValue | Sequence[SSAValue]] = (),
        result_types: Sequence[Attribute] = (),
        properties: dict[str, Attribute] | None = None,
    ):
        if self.GENERIC_INIT:
            super().__init__(operands=operands, result_types=result_types, properties=properties)
            return
        values: list[SSAValue] = []
        for x in operands:
            if type(x) in _VALUE_TYPES or isinstance(x, SSAValue):
                values.append(x)
            else:
                values.extend(x)
        uses = []
        for i, v in enumerate(values):
            use = Use(self, i)
            v.add_use(use)
            uses.append(use)
        self._operands = SSAValues(values)
        self._operand_uses = tuple(uses)
        self.results = SSAValues([OpResult(t, self, i) for i, t in enumerate(result_types)])
        self.properties = dict(properties) if properties else {}
        self.attributes = {}
        self.location = UNKNOWN_LOC

    def ptx_text(self, n: Names) -> str:
        raise NotImplementedError


def _guard(n: Names, guard: Sequence[SSAValue]) -> str:
    """`@p ` before a predicated instruction (an optional `guard` operand), else ""."""
    return f"@{n(guard[0])} " if guard else ""


#: The L2 eviction priorities a `createpolicy.fractional` can give (PTX ISA 9.7.9.22).
L2_PRIORITIES = ("evict_last", "evict_normal", "evict_first", "evict_unchanged")


def _hinted(op: Operation, tail: Sequence[SSAValue]) -> tuple[list[SSAValue], SSAValue | None]:
    """An op's variadic tail split into its own operands and, where the op carries the
    `hint` property, the cache policy register its last one is (`.L2::cache_hint`)."""
    rest = list(tail)
    if "hint" not in op.properties:
        return rest, None
    return rest[:-1], rest[-1]


def _hint_props(policy: SSAValue | None) -> dict[str, Attribute]:
    return {"hint": UnitAttr()} if policy is not None else {}


def _hint_text(n: Names, policy: SSAValue | None) -> tuple[str, str]:
    """The `.L2::cache_hint` qualifier and the `, policy` operand of an instruction with
    a cache policy; two empty strings without one."""
    return (".L2::cache_hint", f", {n(policy)}") if policy is not None else ("", "")


def _opt(v: SSAValue | None) -> list[SSAValue]:
    return [v] if v is not None else []


# --- data movement -----------------------------------------------------------------------


def f32_literal(x: float) -> str:
    import struct

    return "0f" + struct.pack(">f", x).hex().upper()


@irdl_op_definition
class MovImmOp(PtxInstruction):
    """`mov.type d, imm;` (PTX ISA 9.7.9.1 mov) into a fresh register."""

    name = "ptx.mov_imm"
    type = prop_def(StringAttr)
    value = prop_def(IntegerAttr | FloatAttr)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, value: int | float):
        imm = FloatAttr(float(value), 32) if ptx_type == "f32" else _int64(int(value))
        super().__init__(
            properties={"type": _string(ptx_type), "value": imm},
            result_types=[reg_of(ptx_type)],
        )

    def ptx_text(self, n: Names) -> str:
        v = self.value
        imm = f32_literal(v.value.data) if isinstance(v, FloatAttr) else str(v.value.data)
        return f"mov.{self.type.data} {n(self.result)}, {imm};"


@irdl_op_definition
class MovOp(PtxInstruction):
    """`mov.type d, a;` into a fresh register."""

    name = "ptx.mov"
    type = prop_def(StringAttr)
    src = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, src: SSAValue):
        super().__init__(
            operands=[src], properties={"type": _string(ptx_type)}, result_types=[src.type]
        )

    def ptx_text(self, n: Names) -> str:
        return f"mov.{self.type.data} {n(self.result)}, {n(self.src)};"


@irdl_op_definition
class DeclareRegOp(PtxInstruction):
    """A register with no defining instruction (only declared), for operands an
    instruction does not read, such as wgmma accumulators with scale-d false."""

    name = "ptx.declare_reg"
    result = result_def(RegType)

    def __init__(self, kind: str):
        super().__init__(result_types=[reg_class(kind)])

    def ptx_text(self, n: Names) -> str:
        n(self.result)  # named (and so declared) here, before any use
        return ""


@irdl_op_definition
class AssignOp(PtxInstruction):
    """`mov.type dst, src;` writing an existing register (loop-carried values)."""

    name = "ptx.assign"
    type = prop_def(StringAttr)
    dst = operand_def(RegType)
    src = operand_def(RegType)

    def __init__(self, ptx_type: str, dst: SSAValue, src: SSAValue):
        super().__init__(operands=[dst, src], properties={"type": _string(ptx_type)})

    def ptx_text(self, n: Names) -> str:
        return f"mov.{self.type.data} {n(self.dst)}, {n(self.src)};"


@irdl_op_definition
class AssignImmOp(PtxInstruction):
    """`mov.type dst, imm;` writing an existing register."""

    name = "ptx.assign_imm"
    type = prop_def(StringAttr)
    dst = operand_def(RegType)
    value = prop_def(IntegerAttr | FloatAttr)

    def __init__(self, ptx_type: str, dst: SSAValue, value: int | float):
        imm = FloatAttr(float(value), 32) if ptx_type == "f32" else _int64(int(value))
        super().__init__(operands=[dst], properties={"type": _string(ptx_type), "value": imm})

    def ptx_text(self, n: Names) -> str:
        v = self.value
        imm = f32_literal(v.value.data) if isinstance(v, FloatAttr) else str(v.value.data)
        return f"mov.{self.type.data} {n(self.dst)}, {imm};"


#: The 64-bit special registers (PTX ISA 10, "Special Registers": 10.31 %globaltimer, a
#: nanosecond timer common to the GPU; 10.20 %clock64, the SM's cycle counter), read with
#: `mov.u64` (the stamps of an instrumented build, `trace`).
SREGS_64 = ("globaltimer", "clock64")


@irdl_op_definition
class SpecialRegOp(PtxInstruction):
    """`mov.u32 d, %tid.x;` reads a special register (PTX ISA 10): `tid.x`, `ctaid.x`,
    `nctaid.x`, `smid`, ...; for clusters `cluster_ctarank` (the CTA's rank in its
    cluster), `clusterid.x` and `nclusterid.x` (the cluster's index and count along x);
    the 64-bit ones (`SREGS_64`: `mov.u64 d, %globaltimer;`) into a b64 register."""

    name = "ptx.sreg"
    sreg = prop_def(StringAttr)
    result = result_def(RegType)

    def __init__(self, sreg: str):
        width = B64 if sreg in SREGS_64 else B32
        super().__init__(properties={"sreg": _string(sreg)}, result_types=[width])

    def verify_(self) -> None:
        want = B64 if self.sreg.data in SREGS_64 else B32
        if self.result.type != want:
            raise VerifyException(f"ptx.sreg: %{self.sreg.data} is read into a {want}")

    def ptx_text(self, n: Names) -> str:
        bits = 64 if self.sreg.data in SREGS_64 else 32
        return f"mov.u{bits} {n(self.result)}, %{self.sreg.data};"


@irdl_op_definition
class LdParamOp(PtxInstruction):
    """`ld.param.type d, [name];` reads a kernel parameter."""

    name = "ptx.ld_param"
    type = prop_def(StringAttr)
    param = prop_def(StringAttr)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, param: str):
        super().__init__(
            properties={"type": _string(ptx_type), "param": _string(param)},
            result_types=[reg_of(ptx_type)],
        )

    def ptx_text(self, n: Names) -> str:
        return f"ld.param.{self.type.data} {n(self.result)}, [{self.param.data}];"


@irdl_op_definition
class ParamAddrOp(PtxInstruction):
    """`mov.b64 d, name;` the address of a kernel parameter in the param space."""

    name = "ptx.param_addr"
    param = prop_def(StringAttr)
    result = result_def(RegType)

    def __init__(self, param: str):
        super().__init__(properties={"param": _string(param)}, result_types=[B64])

    def ptx_text(self, n: Names) -> str:
        return f"mov.b64 {n(self.result)}, {self.param.data};"


@irdl_op_definition
class CvtaParamOp(PtxInstruction):
    """`cvta.param.u64 d, a;` param-space address to generic (PTX ISA 9.7.9.17 cvta)."""

    name = "ptx.cvta_param"
    src = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[B64])

    def ptx_text(self, n: Names) -> str:
        return f"cvta.param.u64 {n(self.result)}, {n(self.src)};"


@irdl_op_definition
class SharedBaseOp(PtxInstruction):
    """`mov.u32 d, sym;` the shared-window address of the dynamic shared memory."""

    name = "ptx.shared_base"
    symbol = prop_def(StringAttr)
    result = result_def(RegType)

    def __init__(self, symbol: str):
        super().__init__(properties={"symbol": _string(symbol)}, result_types=[B32])

    def ptx_text(self, n: Names) -> str:
        return f"mov.u32 {n(self.result)}, {self.symbol.data};"


@irdl_op_definition
class CvtOp(PtxInstruction):
    """`cvt{.rnd}.dtype.stype d, a;` (PTX ISA 9.7.9.21)."""

    name = "ptx.cvt"
    dtype = prop_def(StringAttr)
    stype = prop_def(StringAttr)
    rnd = opt_prop_def(StringAttr)
    src = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, dtype: str, stype: str, src: SSAValue, rnd: str | None = None):
        props: dict[str, Attribute] = {"dtype": _string(dtype), "stype": _string(stype)}
        if rnd is not None:
            props["rnd"] = _string(rnd)
        super().__init__(operands=[src], properties=props, result_types=[reg_of(dtype)])

    def ptx_text(self, n: Names) -> str:
        rnd = f".{self.rnd.data}" if self.rnd is not None else ""
        return f"cvt{rnd}.{self.dtype.data}.{self.stype.data} {n(self.result)}, {n(self.src)};"


@irdl_op_definition
class CvtPackOp(PtxInstruction):
    """`cvt.rn.bf16x2.f32 d, hi, lo;` packs two floats into one register."""

    name = "ptx.cvt_pack"
    dtype = prop_def(StringAttr)
    hi = operand_def(RegType)
    lo = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, dtype: str, hi: SSAValue, lo: SSAValue):
        super().__init__(
            operands=[hi, lo], properties={"dtype": _string(dtype)}, result_types=[B32]
        )

    def ptx_text(self, n: Names) -> str:
        return f"cvt.rn.{self.dtype.data}.f32 {n(self.result)}, {n(self.hi)}, {n(self.lo)};"


@irdl_op_definition
class PackB16Op(PtxInstruction):
    """`mov.b32 d, {lo, hi};` packs two 16-bit registers (PTX ISA 9.7.9.1 mov)."""

    name = "ptx.pack_b16"
    lo = operand_def(RegType)
    hi = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, lo: SSAValue, hi: SSAValue):
        super().__init__(operands=[lo, hi], result_types=[B32])

    def ptx_text(self, n: Names) -> str:
        return f"mov.b32 {n(self.result)}, {{{n(self.lo)}, {n(self.hi)}}};"


@irdl_op_definition
class UnpackB16Op(PtxInstruction):
    """`mov.b32 {lo, hi}, a;` splits a register into its two 16-bit halves (PTX ISA
    9.7.9.1 mov)."""

    name = "ptx.unpack_b16"
    src = operand_def(RegType)
    lo = result_def(RegType)
    hi = result_def(RegType)

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[B16, B16])

    def ptx_text(self, n: Names) -> str:
        return f"mov.b32 {{{n(self.lo)}, {n(self.hi)}}}, {n(self.src)};"


# --- arithmetic ----------------------------------------------------------------------------


class _BinaryOp(PtxInstruction):
    """`op{.mode}.type d, a, b;`"""

    OPCODE: ClassVar[str] = ""
    type = prop_def(StringAttr)
    mode = opt_prop_def(StringAttr)
    lhs = operand_def(RegType)
    rhs = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, lhs: SSAValue, rhs: SSAValue, mode: str | None = None):
        props: dict[str, Attribute] = {"type": _string(ptx_type)}
        if mode is not None:
            props["mode"] = _string(mode)
        rt = reg_of(ptx_type)
        if mode == "wide":
            rt = B64
        super().__init__(operands=[lhs, rhs], properties=props, result_types=[rt])

    def ptx_text(self, n: Names) -> str:
        mode = f".{self.mode.data}" if self.mode is not None else ""
        return (
            f"{self.OPCODE}{mode}.{self.type.data} {n(self.result)}, {n(self.lhs)}, {n(self.rhs)};"
        )


@irdl_op_definition
class AddOp(_BinaryOp):
    """`add.type d, a, b;` (PTX ISA 9.7.1.1)"""

    name = "ptx.add"
    OPCODE: ClassVar[str] = "add"


@irdl_op_definition
class SubOp(_BinaryOp):
    """`sub.type d, a, b;` (PTX ISA 9.7.1.2)"""

    name = "ptx.sub"
    OPCODE: ClassVar[str] = "sub"


@irdl_op_definition
class MulOp(_BinaryOp):
    """`mul{.lo,.wide}.type d, a, b;` (PTX ISA 9.7.1.3)"""

    name = "ptx.mul"
    OPCODE: ClassVar[str] = "mul"


@irdl_op_definition
class DivOp(_BinaryOp):
    """`div.type d, a, b;` (PTX ISA 9.7.1.6)"""

    name = "ptx.div"
    OPCODE: ClassVar[str] = "div"


@irdl_op_definition
class RemOp(_BinaryOp):
    """`rem.type d, a, b;` (PTX ISA 9.7.1.7)"""

    name = "ptx.rem"
    OPCODE: ClassVar[str] = "rem"


@irdl_op_definition
class MinOp(_BinaryOp):
    """`min.type d, a, b;` (PTX ISA 9.7.1.10)"""

    name = "ptx.min"
    OPCODE: ClassVar[str] = "min"


@irdl_op_definition
class MaxOp(_BinaryOp):
    """`max.type d, a, b;` (PTX ISA 9.7.1.11)"""

    name = "ptx.max"
    OPCODE: ClassVar[str] = "max"


@irdl_op_definition
class AndOp(_BinaryOp):
    """`and.type d, a, b;` (PTX ISA 9.7.8.1)"""

    name = "ptx.and"
    OPCODE: ClassVar[str] = "and"


@irdl_op_definition
class OrOp(_BinaryOp):
    """`or.type d, a, b;` (PTX ISA 9.7.8.2)"""

    name = "ptx.or"
    OPCODE: ClassVar[str] = "or"


@irdl_op_definition
class XorOp(_BinaryOp):
    """`xor.type d, a, b;` (PTX ISA 9.7.8.3)"""

    name = "ptx.xor"
    OPCODE: ClassVar[str] = "xor"


@irdl_op_definition
class ShlOp(_BinaryOp):
    """`shl.type d, a, b;` (PTX ISA 9.7.8.7)"""

    name = "ptx.shl"
    OPCODE: ClassVar[str] = "shl"


@irdl_op_definition
class ShrOp(_BinaryOp):
    """`shr.type d, a, b;` (PTX ISA 9.7.8.8)"""

    name = "ptx.shr"
    OPCODE: ClassVar[str] = "shr"


@irdl_op_definition
class FmaOp(PtxInstruction):
    """`fma.rn.f32 d, a, b, c;` / `mad.lo.s32 d, a, b, c;` (PTX ISA 9.7.3.5, 9.7.1.4)."""

    name = "ptx.fma"
    type = prop_def(StringAttr)
    a = operand_def(RegType)
    b = operand_def(RegType)
    c = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, a: SSAValue, b: SSAValue, c: SSAValue):
        super().__init__(
            operands=[a, b, c],
            properties={"type": _string(ptx_type)},
            result_types=[reg_of(ptx_type)],
        )

    def ptx_text(self, n: Names) -> str:
        op = "fma.rn" if self.type.data == "f32" else "mad.lo"
        args = ", ".join(n(v) for v in (self.a, self.b, self.c))
        return f"{op}.{self.type.data} {n(self.result)}, {args};"


@irdl_op_definition
class NegOp(PtxInstruction):
    """`neg.type d, a;` (PTX ISA 9.7.3.9)."""

    name = "ptx.neg"
    type = prop_def(StringAttr)
    src = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, src: SSAValue):
        super().__init__(
            operands=[src],
            properties={"type": _string(ptx_type)},
            result_types=[reg_of(ptx_type)],
        )

    def ptx_text(self, n: Names) -> str:
        return f"neg.{self.type.data} {n(self.result)}, {n(self.src)};"


class _UnaryF32Op(PtxInstruction):
    """`op d, a;` of one f32 register (the opcode with its modifiers and type)."""

    OPCODE: ClassVar[str] = ""
    src = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[F32])

    def ptx_text(self, n: Names) -> str:
        return f"{self.OPCODE} {n(self.result)}, {n(self.src)};"


@irdl_op_definition
class Ex2Op(_UnaryF32Op):
    """`ex2.approx.ftz.f32 d, a;` 2 to the power a (PTX ISA 9.7.3.22)."""

    name = "ptx.ex2"
    OPCODE: ClassVar[str] = "ex2.approx.ftz.f32"


@irdl_op_definition
class Lg2Op(_UnaryF32Op):
    """`lg2.approx.ftz.f32 d, a;` the base-2 logarithm of a (PTX ISA 9.7.3.21)."""

    name = "ptx.lg2"
    OPCODE: ClassVar[str] = "lg2.approx.ftz.f32"


@irdl_op_definition
class SqrtOp(_UnaryF32Op):
    """`sqrt.rn.f32 d, a;` the square root of a, IEEE round to nearest (PTX ISA 9.7.3.15)."""

    name = "ptx.sqrt"
    OPCODE: ClassVar[str] = "sqrt.rn.f32"


@irdl_op_definition
class RsqrtOp(_UnaryF32Op):
    """`rsqrt.approx.f32 d, a;` 1 / sqrt(a), maximum relative error 2^-22.9 (PTX ISA
    9.7.3.16)."""

    name = "ptx.rsqrt"
    OPCODE: ClassVar[str] = "rsqrt.approx.f32"


@irdl_op_definition
class RcpOp(PtxInstruction):
    """`rcp.rn.f32 d, a;` (IEEE round to nearest) or `rcp.approx.ftz.f32 d, a;` the
    reciprocal 1/a (PTX ISA 9.7.3.13 rcp, 9.7.3.14 rcp.approx)."""

    name = "ptx.rcp"
    mode = prop_def(StringAttr)
    src = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, src: SSAValue, mode: str = "rn"):
        super().__init__(operands=[src], properties={"mode": _string(mode)}, result_types=[F32])

    def verify_(self) -> None:
        if self.mode.data not in ("rn", "approx.ftz"):
            raise VerifyException(f"ptx.rcp: mode must be rn or approx.ftz, got {self.mode.data}")

    def ptx_text(self, n: Names) -> str:
        return f"rcp.{self.mode.data}.f32 {n(self.result)}, {n(self.src)};"


@irdl_op_definition
class ShflBflyOp(PtxInstruction):
    """`shfl.sync.bfly.b32 d, a, lanemask, 0x1f, 0xffffffff;`: the value of the lane whose
    id differs by `lanemask` bits (PTX ISA 9.7.9.6); a 32-bit register of any class."""

    name = "ptx.shfl_bfly"
    lanemask = prop_def(IntegerAttr[I64])
    src = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, src: SSAValue, lanemask: int):
        super().__init__(
            operands=[src],
            properties={"lanemask": _int64(lanemask)},
            result_types=[src.type],
        )

    def ptx_text(self, n: Names) -> str:
        return (
            f"shfl.sync.bfly.b32 {n(self.result)}, {n(self.src)}, {self.lanemask.value.data}, "
            "0x1f, 0xffffffff;"
        )


@irdl_op_definition
class BitcastOp(PtxInstruction):
    """`mov.b32 d, a;` between register classes (f32 <-> b32): the same 32 bits, read as
    the other type (PTX ISA 9.7.9.1)."""

    name = "ptx.bitcast"
    type = prop_def(StringAttr)
    src = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, to_type: str, src: SSAValue):
        super().__init__(
            operands=[src], properties={"type": _string(to_type)}, result_types=[reg_of(to_type)]
        )

    def ptx_text(self, n: Names) -> str:
        return f"mov.b32 {n(self.result)}, {n(self.src)};"


@irdl_op_definition
class VoteAllOp(PtxInstruction):
    """`vote.sync.all.pred d, p, 0xffffffff;`: whether p holds in every lane of the warp
    (PTX ISA 9.7.13.10)."""

    name = "ptx.vote_all"
    pred = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, pred: SSAValue):
        super().__init__(operands=[pred], result_types=[reg_of("pred")])

    def ptx_text(self, n: Names) -> str:
        return f"vote.sync.all.pred {n(self.result)}, {n(self.pred)}, 0xffffffff;"


@irdl_op_definition
class SetpOp(PtxInstruction):
    """`setp.cmp.type p, a, b;` (PTX ISA 9.7.6.1)."""

    name = "ptx.setp"
    cmp = prop_def(StringAttr)
    type = prop_def(StringAttr)
    lhs = operand_def(RegType)
    rhs = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, cmp: str, ptx_type: str, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            operands=[lhs, rhs],
            properties={"cmp": _string(cmp), "type": _string(ptx_type)},
            result_types=[PRED],
        )

    def ptx_text(self, n: Names) -> str:
        return (
            f"setp.{self.cmp.data}.{self.type.data} {n(self.result)}, {n(self.lhs)}, {n(self.rhs)};"
        )


@irdl_op_definition
class SelpOp(PtxInstruction):
    """`selp.type d, a, b, p;` (PTX ISA 9.7.6.3)."""

    name = "ptx.selp"
    type = prop_def(StringAttr)
    a = operand_def(RegType)
    b = operand_def(RegType)
    pred = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, a: SSAValue, b: SSAValue, pred: SSAValue):
        super().__init__(
            operands=[a, b, pred],
            properties={"type": _string(ptx_type)},
            result_types=[reg_of(ptx_type)],
        )

    def ptx_text(self, n: Names) -> str:
        return f"selp.{self.type.data} {n(self.result)}, {n(self.a)}, {n(self.b)}, {n(self.pred)};"


# --- memory --------------------------------------------------------------------------------


@irdl_op_definition
class LdGlobalOp(PtxInstruction):
    """`ld.global{.cop}.type d, [addr];` (PTX ISA 9.7.9.8); the cache operator `cg`
    caches in L2 only (data other SMs wrote during the launch)."""

    name = "ptx.ld_global"
    type = prop_def(StringAttr)
    cache = opt_prop_def(StringAttr)
    addr = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, addr: SSAValue, cache: str | None = None):
        props: dict[str, Attribute] = {"type": _string(ptx_type)}
        if cache is not None:
            props["cache"] = _string(cache)
        super().__init__(operands=[addr], properties=props, result_types=[reg_of(ptx_type)])

    def ptx_text(self, n: Names) -> str:
        cop = f".{self.cache.data}" if self.cache is not None else ""
        return f"ld.global{cop}.{self.type.data} {n(self.result)}, [{n(self.addr)}];"


@irdl_op_definition
class LdGlobalIntoOp(PtxInstruction):
    """`@p ld.global.cg.f32 d, [addr];` into an existing register, which keeps its value
    where the guard is false (PTX ISA 9.7.9.8; a predicated load, not a branch around
    one, so that the loads of a sum stay in flight together)."""

    name = "ptx.ld_global_into"
    addr = operand_def(RegType)
    dst = operand_def(RegType)
    guard = operand_def(RegType)

    def __init__(self, addr: SSAValue, dst: SSAValue, guard: SSAValue):
        super().__init__(operands=[addr, dst, guard])

    def ptx_text(self, n: Names) -> str:
        return f"@{n(self.guard)} ld.global.cg.f32 {n(self.dst)}, [{n(self.addr)}];"


@irdl_op_definition
class FenceGpuOp(PtxInstruction):
    """`fence.acq_rel.gpu;`: this thread's memory accesses before it are ordered before
    those after it for every thread of the GPU (PTX ISA 9.7.13.4, membar/fence)."""

    name = "ptx.fence_gpu"

    def ptx_text(self, n: Names) -> str:
        return "fence.acq_rel.gpu;"


@irdl_op_definition
class AtomAddOp(PtxInstruction):
    """`atom.acq_rel.gpu.global.add.u32 d, [addr], b;`: adds b to the 32-bit word at
    addr and returns its old value, as a release and an acquire at GPU scope (PTX ISA
    9.7.13.5)."""

    name = "ptx.atom_add"
    addr = operand_def(RegType)
    value = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, addr: SSAValue, value: SSAValue):
        super().__init__(operands=[addr, value], result_types=[reg_of("u32")])

    def ptx_text(self, n: Names) -> str:
        return (
            f"atom.acq_rel.gpu.global.add.u32 {n(self.result)}, [{n(self.addr)}], {n(self.value)};"
        )


#: The memory orders `atom` takes (`.sem`, PTX ISA 9.7.13.5).
ATOM_ORDERS = ("relaxed", "acquire", "release", "acq_rel")


@irdl_op_definition
class AtomCasOp(PtxInstruction):
    """`atom.sem.gpu.global.cas.b32 d, [addr], b, c;`: where the 32-bit word at addr
    equals b it becomes c, in one atomic step at GPU scope; d is its old value (PTX ISA
    9.7.13.5 atom, `.sem` one of `ATOM_ORDERS`)."""

    name = "ptx.atom_cas"
    sem = prop_def(StringAttr)
    addr = operand_def(RegType)
    cmp = operand_def(RegType)
    value = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, sem: str, addr: SSAValue, cmp: SSAValue, value: SSAValue):
        super().__init__(
            operands=[addr, cmp, value], properties={"sem": _string(sem)}, result_types=[B32]
        )

    def verify_(self) -> None:
        if self.sem.data not in ATOM_ORDERS:
            raise VerifyException(f"ptx.atom_cas: unknown memory order {self.sem.data!r}")

    def ptx_text(self, n: Names) -> str:
        return (
            f"atom.{self.sem.data}.gpu.global.cas.b32 {n(self.result)}, [{n(self.addr)}], "
            f"{n(self.cmp)}, {n(self.value)};"
        )


@irdl_op_definition
class AtomExchOp(PtxInstruction):
    """`atom.sem.gpu.global.exch.b32 d, [addr], b;`: the 32-bit word at addr becomes b in
    one atomic step at GPU scope; d is its old value (PTX ISA 9.7.13.5 atom)."""

    name = "ptx.atom_exch"
    sem = prop_def(StringAttr)
    addr = operand_def(RegType)
    value = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, sem: str, addr: SSAValue, value: SSAValue):
        super().__init__(
            operands=[addr, value], properties={"sem": _string(sem)}, result_types=[B32]
        )

    def verify_(self) -> None:
        if self.sem.data not in ATOM_ORDERS:
            raise VerifyException(f"ptx.atom_exch: unknown memory order {self.sem.data!r}")

    def ptx_text(self, n: Names) -> str:
        return (
            f"atom.{self.sem.data}.gpu.global.exch.b32 {n(self.result)}, [{n(self.addr)}], "
            f"{n(self.value)};"
        )


@irdl_op_definition
class RedGlobalAddOp(PtxInstruction):
    """`{@p} red.global.add.f32 [addr], a;`, or of 2 or 4 adjacent elements
    `{@p} red.global.add.v2.f32 [addr], {a, b};` / `.v4.f32 ... {a, b, c, d}` (PTX ISA
    9.7.13.6 red, relaxed at GPU scope; the vector forms need sm_90 and an address aligned
    to the vector's size, and each element is added atomically on its own), optionally
    predicated like `st_global_v4_b32` (no branch around it)."""

    name = "ptx.red_global_add"
    addr = operand_def(RegType)
    values = var_operand_def(RegType)
    guard = var_operand_def(RegType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    GENERIC_INIT: ClassVar[bool] = True

    def __init__(self, addr: SSAValue, values: Sequence[SSAValue], guard: SSAValue | None = None):
        super().__init__(operands=[addr, values, [guard] if guard is not None else []])

    def verify_(self) -> None:
        if len(self.values) not in (1, 2, 4) or len(self.guard) > 1:
            raise VerifyException(
                f"ptx.red_global_add: adds 1, 2 or 4 f32 values under at most one guard, got "
                f"{len(self.values)} and {len(self.guard)}"
            )

    def ptx_text(self, n: Names) -> str:
        pred = _guard(n, self.guard)
        if len(self.values) == 1:
            return f"{pred}red.global.add.f32 [{n(self.addr)}], {n(self.values[0])};"
        vals = ", ".join(n(v) for v in self.values)
        return f"{pred}red.global.add.v{len(self.values)}.f32 [{n(self.addr)}], {{{vals}}};"


@irdl_op_definition
class StGlobalOp(PtxInstruction):
    """`{@p} st.global.type [addr], a;` (PTX ISA 9.7.9.10), optionally predicated like
    `st_global_v4_b32` (no branch around it); `b32` stores two packed 16-bit elements to
    a 4-byte aligned address."""

    name = "ptx.st_global"
    type = prop_def(StringAttr)
    hint = opt_prop_def(UnitAttr)
    addr = operand_def(RegType)
    value = operand_def(RegType)
    guard = var_operand_def(RegType)  # the guard, then the cache policy where `hint`

    def __init__(
        self,
        ptx_type: str,
        addr: SSAValue,
        value: SSAValue,
        guard: SSAValue | None = None,
        policy: SSAValue | None = None,
    ):
        super().__init__(
            operands=[addr, value, [*_opt(guard), *_opt(policy)]],
            properties={"type": _string(ptx_type), **_hint_props(policy)},
        )

    def ptx_text(self, n: Names) -> str:
        guard, policy = _hinted(self, self.guard)
        hint, last = _hint_text(n, policy)
        ty = self.type.data
        return f"{_guard(n, guard)}st.global{hint}.{ty} [{n(self.addr)}], {n(self.value)}{last};"


@irdl_op_definition
class StGlobalV4B32Op(PtxInstruction):
    """`{@p} st.global.v4.b32 [addr], {a, b, c, d};` (PTX ISA 9.7.9.10 st, vector of four
    32-bit values: one 16-byte store to a 16-byte aligned address), optionally
    predicated (a branch around it would make the path divergent, which serializes
    wgmma)."""

    name = "ptx.st_global_v4_b32"
    hint = opt_prop_def(UnitAttr)
    addr = operand_def(RegType)
    a = operand_def(RegType)
    b = operand_def(RegType)
    c = operand_def(RegType)
    d = operand_def(RegType)
    guard = var_operand_def(RegType)  # the guard, then the cache policy where `hint`

    def __init__(
        self,
        addr: SSAValue,
        values: tuple[SSAValue, SSAValue, SSAValue, SSAValue],
        guard: SSAValue | None = None,
        policy: SSAValue | None = None,
    ):
        super().__init__(
            operands=[addr, *values, [*_opt(guard), *_opt(policy)]],
            properties=_hint_props(policy),
        )

    def ptx_text(self, n: Names) -> str:
        guard, policy = _hinted(self, self.guard)
        hint, last = _hint_text(n, policy)
        vals = ", ".join(n(v) for v in (self.a, self.b, self.c, self.d))
        return f"{_guard(n, guard)}st.global{hint}.v4.b32 [{n(self.addr)}], {{{vals}}}{last};"


@irdl_op_definition
class StSharedOp(PtxInstruction):
    """`st.shared.type [addr], a;` (PTX ISA 9.7.9.10)."""

    name = "ptx.st_shared"
    type = prop_def(StringAttr)
    addr = operand_def(RegType)
    value = operand_def(RegType)

    def __init__(self, ptx_type: str, addr: SSAValue, value: SSAValue):
        super().__init__(operands=[addr, value], properties={"type": _string(ptx_type)})

    def ptx_text(self, n: Names) -> str:
        return f"st.shared.{self.type.data} [{n(self.addr)}], {n(self.value)};"


@irdl_op_definition
class LdSharedOp(PtxInstruction):
    """`ld.shared.type d, [addr];` (PTX ISA 9.7.9.8)."""

    name = "ptx.ld_shared"
    type = prop_def(StringAttr)
    addr = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, ptx_type: str, addr: SSAValue):
        super().__init__(
            operands=[addr],
            properties={"type": _string(ptx_type)},
            result_types=[reg_of(ptx_type)],
        )

    def ptx_text(self, n: Names) -> str:
        return f"ld.shared.{self.type.data} {n(self.result)}, [{n(self.addr)}];"


@irdl_op_definition
class LdSharedV2Op(PtxInstruction):
    """`ld.shared.v2.type {d0, d1}, [addr];`: two adjacent elements, 8-byte aligned
    (PTX ISA 9.7.9.8, vector loads)."""

    name = "ptx.ld_shared_v2"
    type = prop_def(StringAttr)
    addr = operand_def(RegType)
    lo = result_def(RegType)
    hi = result_def(RegType)

    def __init__(self, ptx_type: str, addr: SSAValue):
        super().__init__(
            operands=[addr],
            properties={"type": _string(ptx_type)},
            result_types=[reg_of(ptx_type), reg_of(ptx_type)],
        )

    def ptx_text(self, n: Names) -> str:
        return f"ld.shared.v2.{self.type.data} {{{n(self.lo)}, {n(self.hi)}}}, [{n(self.addr)}];"


@irdl_op_definition
class LdSharedV4Op(PtxInstruction):
    """`ld.shared.v4.type {d0, d1, d2, d3}, [addr];`: four adjacent 32-bit elements (four
    f32, or eight 16-bit ones as packed `b32` words), 16-byte aligned (PTX ISA 9.7.9.8,
    vector loads)."""

    name = "ptx.ld_shared_v4"
    type = prop_def(StringAttr)
    addr = operand_def(RegType)
    a = result_def(RegType)
    b = result_def(RegType)
    c = result_def(RegType)
    d = result_def(RegType)

    def __init__(self, ptx_type: str, addr: SSAValue):
        super().__init__(
            operands=[addr],
            properties={"type": _string(ptx_type)},
            result_types=[reg_of(ptx_type)] * 4,
        )

    def ptx_text(self, n: Names) -> str:
        regs = ", ".join(n(r) for r in (self.a, self.b, self.c, self.d))
        return f"ld.shared.v4.{self.type.data} {{{regs}}}, [{n(self.addr)}];"


@irdl_op_definition
class LdGlobalV2Op(PtxInstruction):
    """`{@p} ld.global.cg.v2.f32 {d0, d1}, [addr];`: two adjacent f32 elements, 8-byte
    aligned, cached in L2 only, into two existing registers (which keep their values where
    the guard is false), optionally predicated (PTX ISA 9.7.9.8, vector loads)."""

    name = "ptx.ld_global_v2"
    addr = operand_def(RegType)
    lo = operand_def(RegType)
    hi = operand_def(RegType)
    guard = var_operand_def(RegType)

    def __init__(self, addr: SSAValue, lo: SSAValue, hi: SSAValue, guard: SSAValue | None = None):
        super().__init__(operands=[addr, lo, hi, [guard] if guard is not None else []])

    def ptx_text(self, n: Names) -> str:
        pred = _guard(n, self.guard)
        return f"{pred}ld.global.cg.v2.f32 {{{n(self.lo)}, {n(self.hi)}}}, [{n(self.addr)}];"


@irdl_op_definition
class LdGlobalV4Op(PtxInstruction):
    """`{@p} ld.global.cg.v4.f32 {d0, d1, d2, d3}, [addr];`: four adjacent f32 elements,
    16-byte aligned, cached in L2 only, into four existing registers (which keep their
    values where the guard is false), optionally predicated (PTX ISA 9.7.9.8, vector
    loads)."""

    name = "ptx.ld_global_v4"
    addr = operand_def(RegType)
    a = operand_def(RegType)
    b = operand_def(RegType)
    c = operand_def(RegType)
    d = operand_def(RegType)
    guard = var_operand_def(RegType)

    def __init__(
        self,
        addr: SSAValue,
        values: tuple[SSAValue, SSAValue, SSAValue, SSAValue],
        guard: SSAValue | None = None,
    ):
        super().__init__(operands=[addr, *values, [guard] if guard is not None else []])

    def ptx_text(self, n: Names) -> str:
        pred = _guard(n, self.guard)
        regs = ", ".join(n(v) for v in (self.a, self.b, self.c, self.d))
        return f"{pred}ld.global.cg.v4.f32 {{{regs}}}, [{n(self.addr)}];"


@irdl_op_definition
class StGlobalV2Op(PtxInstruction):
    """`st.global.v2.f32 [addr], {a, b};`: two adjacent f32 elements, 8-byte aligned
    (PTX ISA 9.7.9.10, vector stores)."""

    name = "ptx.st_global_v2"
    hint = opt_prop_def(UnitAttr)
    addr = operand_def(RegType)
    a = operand_def(RegType)
    b = operand_def(RegType)
    guard = var_operand_def(RegType)  # the guard, then the cache policy where `hint`

    def __init__(
        self,
        addr: SSAValue,
        a: SSAValue,
        b: SSAValue,
        guard: SSAValue | None = None,
        policy: SSAValue | None = None,
    ):
        super().__init__(
            operands=[addr, a, b, [*_opt(guard), *_opt(policy)]], properties=_hint_props(policy)
        )

    def ptx_text(self, n: Names) -> str:
        guard, policy = _hinted(self, self.guard)
        hint, last = _hint_text(n, policy)
        pair = f"{{{n(self.a)}, {n(self.b)}}}"
        return f"{_guard(n, guard)}st.global{hint}.v2.f32 [{n(self.addr)}], {pair}{last};"


@irdl_op_definition
class FenceProxyAsyncOp(PtxInstruction):
    """`fence.proxy.async.shared::cta;` orders generic-proxy shared-memory writes before
    async-proxy (TMA, wgmma) reads (PTX ISA 9.7.12.4)."""

    name = "ptx.fence_proxy_async"

    def ptx_text(self, n: Names) -> str:
        return "fence.proxy.async.shared::cta;"


# --- control flow --------------------------------------------------------------------------


@irdl_op_definition
class LabelOp(PtxInstruction):
    """A branch target `NAME:`."""

    name = "ptx.label"
    label = prop_def(StringAttr)

    def __init__(self, label: str):
        super().__init__(properties={"label": _string(label)})

    def ptx_text(self, n: Names) -> str:
        return f"{self.label.data}:"


@irdl_op_definition
class BraOp(PtxInstruction):
    """`{@p|@!p} bra{.uni} L;` (PTX ISA 9.7.12.2).  `.uni` (`uni = 1`) asserts that the
    branch is non-divergent: every active thread of the warp has the same predicate
    (branches on scalars, which tawac computes identically in every thread); without
    it ptxas must assume divergence and brackets the branch with reconvergence code."""

    name = "ptx.bra"
    target = prop_def(StringAttr)
    pred = var_operand_def(RegType)
    negate = opt_prop_def(IntegerAttr[I64])
    uni = opt_prop_def(IntegerAttr[I64])

    def __init__(
        self, target: str, pred: SSAValue | None = None, negate: bool = False, uni: bool = False
    ):
        props: dict[str, Attribute] = {"target": _string(target)}
        if negate:
            props["negate"] = _int64(1)
        if uni:
            props["uni"] = _int64(1)
        super().__init__(operands=[[pred] if pred is not None else []], properties=props)

    def verify_(self) -> None:
        if len(self.pred) > 1:
            raise VerifyException("ptx.bra takes at most one predicate")

    def ptx_text(self, n: Names) -> str:
        guard = ""
        if self.pred:
            guard = ("@!" if self.negate is not None else "@") + n(self.pred[0]) + " "
        uni = ".uni" if self.uni is not None else ""
        return f"{guard}bra{uni} {self.target.data};"


@irdl_op_definition
class ExitOp(PtxInstruction):
    """`exit;` ends the thread."""

    name = "ptx.exit"

    def ptx_text(self, n: Names) -> str:
        return "exit;"


# --- synchronisation -----------------------------------------------------------------------


@irdl_op_definition
class BarWarpSyncOp(PtxInstruction):
    """`bar.warp.sync -1;`: the lanes of the warp meet, and their memory accesses before
    it are performed relative to one another (PTX ISA 9.7.12.3)."""

    name = "ptx.bar_warp_sync"

    def ptx_text(self, n: Names) -> str:
        return "bar.warp.sync -1;"


@irdl_op_definition
class BarSyncOp(PtxInstruction):
    """`bar.sync id{, count};` (PTX ISA 9.7.12.1)."""

    name = "ptx.bar_sync"
    id = prop_def(IntegerAttr[I64])
    count = opt_prop_def(IntegerAttr[I64])

    def __init__(self, bar_id: int, count: int | None = None):
        props: dict[str, Attribute] = {"id": _int64(bar_id)}
        if count is not None:
            props["count"] = _int64(count)
        super().__init__(properties=props)

    def ptx_text(self, n: Names) -> str:
        cnt = f", {self.count.value.data}" if self.count is not None else ""
        return f"bar.sync {self.id.value.data}{cnt};"


@irdl_op_definition
class BarSyncRegOp(PtxInstruction):
    """`bar.sync a, count;` with the barrier id in a register (PTX ISA 9.7.12.1)."""

    name = "ptx.bar_sync_reg"
    id = operand_def(RegType)
    count = prop_def(IntegerAttr[I64])

    def __init__(self, bar_id: SSAValue, count: int):
        super().__init__(operands=[bar_id], properties={"count": _int64(count)})

    def ptx_text(self, n: Names) -> str:
        return f"bar.sync {n(self.id)}, {self.count.value.data};"


@irdl_op_definition
class BarRedOrOp(PtxInstruction):
    """`bar.red.or.pred p, id, count, c;`: a named barrier that also ORs the predicate c
    over the `count` threads arriving, every one of them getting the result p (PTX ISA
    9.7.12.1, bar.red)."""

    name = "ptx.bar_red_or"
    id = prop_def(IntegerAttr[I64])
    count = prop_def(IntegerAttr[I64])
    value = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, bar_id: int, count: int, value: SSAValue):
        super().__init__(
            operands=[value],
            properties={"id": _int64(bar_id), "count": _int64(count)},
            result_types=[PRED],
        )

    def ptx_text(self, n: Names) -> str:
        return (
            f"bar.red.or.pred {n(self.result)}, {self.id.value.data}, "
            f"{self.count.value.data}, {n(self.value)};"
        )


@irdl_op_definition
class BarArriveRegOp(PtxInstruction):
    """`bar.arrive a, count;` with the barrier id in a register (PTX ISA 9.7.12.1)."""

    name = "ptx.bar_arrive_reg"
    id = operand_def(RegType)
    count = prop_def(IntegerAttr[I64])

    def __init__(self, bar_id: SSAValue, count: int):
        super().__init__(operands=[bar_id], properties={"count": _int64(count)})

    def ptx_text(self, n: Names) -> str:
        return f"bar.arrive {n(self.id)}, {self.count.value.data};"


@irdl_op_definition
class MbarrierInitOp(PtxInstruction):
    """`mbarrier.init.shared::cta.b64 [addr], count;` (PTX ISA 9.7.13.15.9)."""

    name = "ptx.mbarrier_init"
    addr = operand_def(RegType)
    count = prop_def(IntegerAttr[I64])

    def __init__(self, addr: SSAValue, count: int):
        super().__init__(operands=[addr], properties={"count": _int64(count)})

    def ptx_text(self, n: Names) -> str:
        return f"mbarrier.init.shared::cta.b64 [{n(self.addr)}], {self.count.value.data};"


@irdl_op_definition
class FenceMbarrierInitOp(PtxInstruction):
    """`fence.mbarrier_init.release.cluster;` (PTX ISA 9.7.12.4 membar/fence)."""

    name = "ptx.fence_mbarrier_init"

    def ptx_text(self, n: Names) -> str:
        return "fence.mbarrier_init.release.cluster;"


@irdl_op_definition
class MbarrierArriveOp(PtxInstruction):
    """`{@p} mbarrier.arrive.shared::cta.b64 _, [addr];` (PTX ISA 9.7.13.15.13), optionally
    predicated (a branch around it would make the path divergent, which serializes
    wgmma: ptxas C7520)."""

    name = "ptx.mbarrier_arrive"
    addr = operand_def(RegType)
    guard = var_operand_def(RegType)

    def __init__(self, addr: SSAValue, guard: SSAValue | None = None):
        super().__init__(operands=[addr, [guard] if guard is not None else []])

    def ptx_text(self, n: Names) -> str:
        pred = _guard(n, self.guard)
        return f"{pred}mbarrier.arrive.shared::cta.b64 _, [{n(self.addr)}];"


@irdl_op_definition
class MbarrierArriveExpectTxOp(PtxInstruction):
    """`mbarrier.arrive.expect_tx.shared::cta.b64 _, [addr], bytes;` (9.7.13.15.13)."""

    name = "ptx.mbarrier_arrive_expect_tx"
    addr = operand_def(RegType)
    bytes = prop_def(IntegerAttr[I64])

    def __init__(self, addr: SSAValue, nbytes: int):
        super().__init__(operands=[addr], properties={"bytes": _int64(nbytes)})

    def ptx_text(self, n: Names) -> str:
        return (
            f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{n(self.addr)}], "
            f"{self.bytes.value.data};"
        )


@irdl_op_definition
class MbarrierTryWaitOp(PtxInstruction):
    """`mbarrier.try_wait.parity.shared::cta.b64 p, [addr], phase;` (9.7.13.15.16)."""

    name = "ptx.mbarrier_try_wait"
    addr = operand_def(RegType)
    phase = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, addr: SSAValue, phase: SSAValue):
        super().__init__(operands=[addr, phase], result_types=[PRED])

    def ptx_text(self, n: Names) -> str:
        return (
            f"mbarrier.try_wait.parity.shared::cta.b64 {n(self.result)}, "
            f"[{n(self.addr)}], {n(self.phase)};"
        )


@irdl_op_definition
class MapaOp(PtxInstruction):
    """`mapa.shared::cluster.u32 d, a, rank;`: the shared::cluster address of the
    variable at shared address `a` in the CTA of rank `rank` of the cluster (PTX ISA
    9.7.9.21 mapa)."""

    name = "ptx.mapa"
    addr = operand_def(RegType)
    rank = operand_def(RegType)
    result = result_def(RegType)

    def __init__(self, addr: SSAValue, rank: SSAValue):
        super().__init__(operands=[addr, rank], result_types=[B32])

    def ptx_text(self, n: Names) -> str:
        return f"mapa.shared::cluster.u32 {n(self.result)}, {n(self.addr)}, {n(self.rank)};"


@irdl_op_definition
class MbarrierArriveClusterOp(PtxInstruction):
    """`{@p} mbarrier.arrive.shared::cluster.b64 _, [addr];`: one arrival on an mbarrier
    of any CTA of the cluster (`addr` from `mapa`), with the default `.release.cta`
    semantics (PTX ISA 9.7.13.15.13), optionally predicated like `ptx.mbarrier_arrive`.
    A consumer releasing a ring slot has waited for its wgmma reads already; a
    `.release.cluster` arrive would add a GPU-wide memory barrier (`MEMBAR.ALL.GPU`) per
    arrival, which the slot's protocol does not need (CUTLASS's cluster pipelines arrive
    this way too)."""

    name = "ptx.mbarrier_arrive_cluster"
    addr = operand_def(RegType)
    guard = var_operand_def(RegType)

    def __init__(self, addr: SSAValue, guard: SSAValue | None = None):
        super().__init__(operands=[addr, [guard] if guard is not None else []])

    def ptx_text(self, n: Names) -> str:
        pred = _guard(n, self.guard)
        return f"{pred}mbarrier.arrive.shared::cluster.b64 _, [{n(self.addr)}];"


@irdl_op_definition
class BarrierClusterArriveOp(PtxInstruction):
    """`barrier.cluster.arrive.release;`: this thread arrives at the cluster barrier
    (PTX ISA 9.7.13.3 barrier.cluster; not `.aligned`: threads may arrive from divergent
    code)."""

    name = "ptx.barrier_cluster_arrive"

    def ptx_text(self, n: Names) -> str:
        return "barrier.cluster.arrive.release;"


@irdl_op_definition
class BarrierClusterWaitOp(PtxInstruction):
    """`barrier.cluster.wait.acquire;`: waits until every non-exited thread of the
    cluster has arrived (PTX ISA 9.7.13.3 barrier.cluster)."""

    name = "ptx.barrier_cluster_wait"

    def ptx_text(self, n: Names) -> str:
        return "barrier.cluster.wait.acquire;"


@irdl_op_definition
class SetmaxnregOp(PtxInstruction):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 n;` (PTX ISA 9.7.17.1)."""

    name = "ptx.setmaxnreg"
    action = prop_def(StringAttr)
    regs = prop_def(IntegerAttr[I64])

    def __init__(self, action: str, regs: int):
        super().__init__(properties={"action": _string(action), "regs": _int64(regs)})

    def verify_(self) -> None:
        r = self.regs.value.data
        if self.action.data not in ("inc", "dec") or r < 24 or r > 256 or r % 8:
            raise VerifyException(f"ptx.setmaxnreg: bad action or count {r}")

    def ptx_text(self, n: Names) -> str:
        return f"setmaxnreg.{self.action.data}.sync.aligned.u32 {self.regs.value.data};"


# --- TMA -----------------------------------------------------------------------------------


@irdl_op_definition
class CpAsyncBulkTensorLoadOp(PtxInstruction):
    """`cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    [dst], [tmap, {c0, ...}], [bar];` (PTX ISA 9.7.9.25.5.1)."""

    name = "ptx.cp_async_bulk_tensor_load"
    hint = opt_prop_def(UnitAttr)
    dst = operand_def(RegType)
    tmap = operand_def(RegType)
    bar = operand_def(RegType)
    coords = var_operand_def(RegType)  # the coordinates, then the cache policy where `hint`

    def __init__(
        self,
        dst: SSAValue,
        tmap: SSAValue,
        bar: SSAValue,
        coords: Sequence[SSAValue],
        policy: SSAValue | None = None,
    ):
        super().__init__(
            operands=[dst, tmap, bar, [*coords, *_opt(policy)]], properties=_hint_props(policy)
        )

    def ptx_text(self, n: Names) -> str:
        coords, policy = _hinted(self, self.coords)
        cs = ", ".join(n(c) for c in coords)
        hint, last = _hint_text(n, policy)
        return (
            f"cp.async.bulk.tensor.{len(coords)}d.shared::cluster.global.tile"
            f".mbarrier::complete_tx::bytes{hint} [{n(self.dst)}], [{n(self.tmap)}, {{{cs}}}], "
            f"[{n(self.bar)}]{last};"
        )


@irdl_op_definition
class CpAsyncBulkLoadOp(PtxInstruction):
    """`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src],
    size, [bar];`: `size` contiguous bytes (a multiple of 16, both addresses 16-byte
    aligned) from global memory into shared memory, completing on the mbarrier at `bar`,
    no tensor map and no bounds (PTX ISA 9.7.9.25.4.1)."""

    name = "ptx.cp_async_bulk_load"
    dst = operand_def(RegType)
    src = operand_def(RegType)
    bar = operand_def(RegType)
    policy = var_operand_def(RegType)  # an `.L2::cache_hint`'s cache policy, if any
    size = prop_def(IntegerAttr[I64])

    def __init__(
        self, dst: SSAValue, src: SSAValue, size: int, bar: SSAValue, policy: SSAValue | None = None
    ):
        super().__init__(
            operands=[dst, src, bar, _opt(policy)], properties={"size": IntegerAttr(size, 64)}
        )

    def ptx_text(self, n: Names) -> str:
        hint, last = _hint_text(n, self.policy[0] if self.policy else None)
        return (
            f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{hint} "
            f"[{n(self.dst)}], [{n(self.src)}], {self.size.value.data}, [{n(self.bar)}]{last};"
        )


@irdl_op_definition
class CreatePolicyOp(PtxInstruction):
    """`createpolicy.fractional.L2::<priority>.b64 d, 1.0;`: a cache policy giving every
    line an access touches that L2 eviction priority, for an instruction's
    `.L2::cache_hint` operand (PTX ISA 9.7.9.22)."""

    name = "ptx.createpolicy"
    priority = prop_def(StringAttr)
    result = result_def(RegType)

    def __init__(self, priority: str):
        super().__init__(result_types=[B64], properties={"priority": _string(priority)})

    def verify_(self) -> None:
        if self.priority.data not in L2_PRIORITIES:
            raise VerifyException(f"ptx.createpolicy: unknown priority {self.priority.data}")

    def ptx_text(self, n: Names) -> str:
        return f"createpolicy.fractional.L2::{self.priority.data}.b64 {n(self.result)}, 1.0;"


@irdl_op_definition
class CpAsyncBulkTensorLoadMulticastOp(PtxInstruction):
    """`cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    .multicast::cluster [dst], [tmap, {c0, ...}], [bar], mask;`: one copy written to the
    same shared-memory offset `dst` of every CTA of the cluster whose rank is set in the
    16-bit `mask`, completing on the mbarrier at offset `bar` of each (PTX ISA
    9.7.9.25.5.1)."""

    name = "ptx.cp_async_bulk_tensor_load_multicast"
    dst = operand_def(RegType)
    tmap = operand_def(RegType)
    bar = operand_def(RegType)
    mask = operand_def(RegType)
    coords = var_operand_def(RegType)

    def __init__(
        self,
        dst: SSAValue,
        tmap: SSAValue,
        bar: SSAValue,
        mask: SSAValue,
        coords: Sequence[SSAValue],
    ):
        super().__init__(operands=[dst, tmap, bar, mask, coords])

    def verify_(self) -> None:
        if _kind(self.mask) != "b16":
            raise VerifyException("ptx.cp_async_bulk_tensor_load_multicast: mask is a b16")

    def ptx_text(self, n: Names) -> str:
        cs = ", ".join(n(c) for c in self.coords)
        return (
            f"cp.async.bulk.tensor.{len(self.coords)}d.shared::cluster.global.tile"
            f".mbarrier::complete_tx::bytes.multicast::cluster [{n(self.dst)}], "
            f"[{n(self.tmap)}, {{{cs}}}], [{n(self.bar)}], {n(self.mask)};"
        )


@irdl_op_definition
class CpAsyncBulkTensorStoreOp(PtxInstruction):
    """`cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group [tmap, {c0, ...}], [src];`
    (PTX ISA 9.7.9.25.5.2)."""

    name = "ptx.cp_async_bulk_tensor_store"
    src = operand_def(RegType)
    tmap = operand_def(RegType)
    coords = var_operand_def(RegType)

    def __init__(self, src: SSAValue, tmap: SSAValue, coords: Sequence[SSAValue]):
        super().__init__(operands=[src, tmap, coords])

    def ptx_text(self, n: Names) -> str:
        cs = ", ".join(n(c) for c in self.coords)
        return (
            f"cp.async.bulk.tensor.{len(self.coords)}d.global.shared::cta.bulk_group "
            f"[{n(self.tmap)}, {{{cs}}}], [{n(self.src)}];"
        )


@irdl_op_definition
class CpAsyncBulkCommitOp(PtxInstruction):
    """`cp.async.bulk.commit_group;` (PTX ISA 9.7.9.25.6.1)."""

    name = "ptx.cp_async_bulk_commit"

    def ptx_text(self, n: Names) -> str:
        return "cp.async.bulk.commit_group;"


@irdl_op_definition
class CpAsyncBulkWaitReadOp(PtxInstruction):
    """`cp.async.bulk.wait_group.read N;`: the sources of all but N groups were read
    (PTX ISA 9.7.9.25.6.2)."""

    name = "ptx.cp_async_bulk_wait_read"
    pending = prop_def(IntegerAttr[I64])

    def __init__(self, pending: int):
        super().__init__(properties={"pending": _int64(pending)})

    def ptx_text(self, n: Names) -> str:
        return f"cp.async.bulk.wait_group.read {self.pending.value.data};"


@irdl_op_definition
class PrefetchTensormapOp(PtxInstruction):
    """`prefetch.tensormap [addr];` (PTX ISA 9.7.9.15)."""

    name = "ptx.prefetch_tensormap"
    addr = operand_def(RegType)

    def __init__(self, addr: SSAValue):
        super().__init__(operands=[addr])

    def ptx_text(self, n: Names) -> str:
        return f"prefetch.tensormap [{n(self.addr)}];"


# --- wgmma ---------------------------------------------------------------------------------


@irdl_op_definition
class WgmmaFenceOp(PtxInstruction):
    """`wgmma.fence.sync.aligned;` (PTX ISA 9.7.15.6.1)."""

    name = "ptx.wgmma_fence"

    def ptx_text(self, n: Names) -> str:
        return "wgmma.fence.sync.aligned;"


@irdl_op_definition
class WgmmaCommitOp(PtxInstruction):
    """`wgmma.commit_group.sync.aligned;` (PTX ISA 9.7.15.6.2)."""

    name = "ptx.wgmma_commit"

    def ptx_text(self, n: Names) -> str:
        return "wgmma.commit_group.sync.aligned;"


@irdl_op_definition
class WgmmaWaitOp(PtxInstruction):
    """`wgmma.wait_group.sync.aligned N;` (PTX ISA 9.7.15.6.3)."""

    name = "ptx.wgmma_wait"
    pending = prop_def(IntegerAttr[I64])

    def __init__(self, pending: int):
        super().__init__(properties={"pending": _int64(pending)})

    def ptx_text(self, n: Names) -> str:
        return f"wgmma.wait_group.sync.aligned {self.pending.value.data};"


@irdl_op_definition
class WgmmaMmaAsyncOp(PtxInstruction):
    """`wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T {d...}, descA, descB, p, 1, 1, tA, tB;`

    The `acc` registers are read and written in place (PTX ISA 9.7.15.5.2).  `b_type`,
    when set, is B's type where it differs from A's (e4m3 x e5m2).  The fp8 forms
    (`m64nNk32.f32.e4m3.e5m2 ... p, 1, 1;`) take no transpose operands: both operands
    are K-major.
    """

    name = "ptx.wgmma_mma_async"
    n = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    ab_type = prop_def(StringAttr)
    b_type = opt_prop_def(StringAttr)
    trans_a = prop_def(IntegerAttr[I64])
    trans_b = prop_def(IntegerAttr[I64])
    desc_a = operand_def(RegType)
    desc_b = operand_def(RegType)
    scale_d = operand_def(RegType)
    acc = var_operand_def(RegType)

    def __init__(
        self,
        n: int,
        k: int,
        ab_type: str,
        desc_a: SSAValue,
        desc_b: SSAValue,
        scale_d: SSAValue,
        acc: Sequence[SSAValue],
        trans_a: int = 0,
        trans_b: int = 0,
        b_type: str | None = None,
    ):
        props: dict[str, Attribute] = {
            "n": _int64(n),
            "k": _int64(k),
            "ab_type": _string(ab_type),
            "trans_a": _int64(trans_a),
            "trans_b": _int64(trans_b),
        }
        if b_type is not None and b_type != ab_type:
            props["b_type"] = _string(b_type)
        super().__init__(operands=[desc_a, desc_b, scale_d, acc], properties=props)

    @property
    def fp8(self) -> bool:
        return self.ab_type.data in WGMMA_FP8_TYPES

    def verify_(self) -> None:
        n = self.n.value.data
        if n % 8 or not 8 <= n <= 256:
            raise VerifyException(f"ptx.wgmma_mma_async: N={n} must be a multiple of 8 in 8..256")
        if len(self.acc) != n // 2:
            raise VerifyException(
                f"ptx.wgmma_mma_async: m64n{n} takes {n // 2} accumulator registers, "
                f"got {len(self.acc)}"
            )
        b = self.b_type.data if self.b_type is not None else self.ab_type.data
        if self.fp8 != (b in WGMMA_FP8_TYPES):
            raise VerifyException(
                f"ptx.wgmma_mma_async: {self.ab_type.data} x {b} is not a wgmma type pair"
            )
        if self.fp8 and (
            self.trans_a.value.data or self.trans_b.value.data or self.k.value.data != 32
        ):
            raise VerifyException(
                "ptx.wgmma_mma_async: fp8 wgmmas are k32 with K-major operands (no transpose)"
            )

    def ptx_text(self, n: Names) -> str:
        t = self.ab_type.data
        tb = self.b_type.data if self.b_type is not None else t
        regs = ", ".join(n(r) for r in self.acc)
        trans = "" if self.fp8 else f", {self.trans_a.value.data}, {self.trans_b.value.data}"
        return (
            f"wgmma.mma_async.sync.aligned.m64n{self.n.value.data}k{self.k.value.data}"
            f".f32.{t}.{tb} "
            f"{{{regs}}}, {n(self.desc_a)}, {n(self.desc_b)}, {n(self.scale_d)}, 1, 1{trans};"
        )


@irdl_op_definition
class WgmmaMmaAsyncRegAOp(PtxInstruction):
    """`wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T {d...}, {a0, a1, a2, a3}, descB, p,
    1, 1, tB;`: the register-A form (PTX ISA 9.7.15.5.2), A as four packed registers."""

    name = "ptx.wgmma_mma_async_rega"
    n = prop_def(IntegerAttr[I64])
    ab_type = prop_def(StringAttr)
    trans_b = prop_def(IntegerAttr[I64])
    desc_b = operand_def(RegType)
    scale_d = operand_def(RegType)
    a = var_operand_def(RegType)
    acc = var_operand_def(RegType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    GENERIC_INIT: ClassVar[bool] = True

    def __init__(
        self,
        n: int,
        ab_type: str,
        a: Sequence[SSAValue],
        desc_b: SSAValue,
        scale_d: SSAValue,
        acc: Sequence[SSAValue],
        trans_b: int = 0,
    ):
        super().__init__(
            operands=[desc_b, scale_d, a, acc],
            properties={
                "n": _int64(n),
                "ab_type": _string(ab_type),
                "trans_b": _int64(trans_b),
            },
        )

    def verify_(self) -> None:
        n = self.n.value.data
        if len(self.a) != 4 or len(self.acc) != n // 2:
            raise VerifyException(
                f"ptx.wgmma_mma_async_rega: m64n{n}k16 takes 4 A and {n // 2} accumulator "
                f"registers, got {len(self.a)} and {len(self.acc)}"
            )

    def ptx_text(self, n: Names) -> str:
        t = self.ab_type.data
        regs = ", ".join(n(r) for r in self.acc)
        a = ", ".join(n(r) for r in self.a)
        return (
            f"wgmma.mma_async.sync.aligned.m64n{self.n.value.data}k16.f32.{t}.{t} "
            f"{{{regs}}}, {{{a}}}, {n(self.desc_b)}, {n(self.scale_d)}, 1, 1, "
            f"{self.trans_b.value.data};"
        )


# --- module structure ----------------------------------------------------------------------


@irdl_op_definition
class EntryOp(IRDLOperation):
    """A kernel entry (`.visible .entry name(params) .maxntid ... { body }`).

    `params` lists the parameters in order; each is a dictionary with `name`, `ptx`
    (its PTX declaration type, e.g. `.u64` or `.align 64 .b8 [128]`) and `abi` (what
    the runtime passes: see docs/abi.md).  `launch` holds the rest of the launch ABI
    (block, grid, dynamic shared memory, the kernel's arguments).
    """

    name = "ptx.entry"
    sym_name = prop_def(StringAttr)
    params = prop_def(ArrayAttr[DictionaryAttr])
    maxntid = prop_def(IntegerAttr[I64])
    minnctapersm = prop_def(IntegerAttr[I64])
    launch = prop_def(DictionaryAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(
        self,
        name: str,
        params: Sequence[DictionaryAttr],
        maxntid: int,
        launch: DictionaryAttr,
        body: Region,
        minnctapersm: int = 1,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "params": ArrayAttr(params),
                "maxntid": IntegerAttr(maxntid, i64),
                "minnctapersm": IntegerAttr(minnctapersm, i64),
                "launch": launch,
            },
            regions=[body],
        )

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if not isinstance(op, PtxInstruction):
                raise VerifyException(f"ptx.entry: {op.name} is not a PTX instruction")


@irdl_op_definition
class ModuleOp(IRDLOperation):
    """A PTX module: `.version`, `.target`, `.address_size`, the dynamic shared memory
    symbol, and its entries."""

    name = "ptx.module"
    version = prop_def(StringAttr)
    target = prop_def(StringAttr)
    smem_symbol = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, body: Region, version: str = HOPPER.ptx_version, target: str = HOPPER.name):
        super().__init__(
            properties={
                "version": StringAttr(version),
                "target": StringAttr(target),
                "smem_symbol": StringAttr("tawac_smem"),
            },
            regions=[body],
        )


Ptx = Dialect(
    "ptx",
    [
        MovImmOp,
        MovOp,
        DeclareRegOp,
        AssignOp,
        AssignImmOp,
        SpecialRegOp,
        LdParamOp,
        ParamAddrOp,
        CvtaParamOp,
        SharedBaseOp,
        CvtOp,
        CvtPackOp,
        PackB16Op,
        RcpOp,
        SqrtOp,
        RsqrtOp,
        UnpackB16Op,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        RemOp,
        MinOp,
        MaxOp,
        AndOp,
        OrOp,
        XorOp,
        ShlOp,
        ShrOp,
        FmaOp,
        NegOp,
        Ex2Op,
        Lg2Op,
        ShflBflyOp,
        VoteAllOp,
        BitcastOp,
        SetpOp,
        SelpOp,
        LdGlobalOp,
        LdGlobalV2Op,
        LdGlobalV4Op,
        LdGlobalIntoOp,
        StGlobalV2Op,
        FenceGpuOp,
        AtomAddOp,
        AtomCasOp,
        AtomExchOp,
        RedGlobalAddOp,
        StGlobalOp,
        StGlobalV4B32Op,
        StSharedOp,
        LdSharedOp,
        LdSharedV2Op,
        LdSharedV4Op,
        FenceProxyAsyncOp,
        CpAsyncBulkTensorStoreOp,
        CpAsyncBulkCommitOp,
        CpAsyncBulkWaitReadOp,
        LabelOp,
        BraOp,
        ExitOp,
        BarWarpSyncOp,
        BarSyncOp,
        BarSyncRegOp,
        BarRedOrOp,
        BarArriveRegOp,
        MbarrierInitOp,
        FenceMbarrierInitOp,
        MbarrierArriveOp,
        MbarrierArriveExpectTxOp,
        MbarrierTryWaitOp,
        SetmaxnregOp,
        CpAsyncBulkTensorLoadOp,
        CpAsyncBulkLoadOp,
        CreatePolicyOp,
        CpAsyncBulkTensorLoadMulticastOp,
        MapaOp,
        MbarrierArriveClusterOp,
        BarrierClusterArriveOp,
        BarrierClusterWaitOp,
        PrefetchTensormapOp,
        WgmmaFenceOp,
        WgmmaCommitOp,
        WgmmaWaitOp,
        WgmmaMmaAsyncOp,
        WgmmaMmaAsyncRegAOp,
        EntryOp,
        ModuleOp,
    ],
    [RegType],
)


# --- direct operand and result accessors -----------------------------------------------------


class _At:
    """A named operand or result at a fixed position of the op's operand or result tuple
    (`field`: `_operands` or `results`)."""

    __slots__ = ("field", "index")

    def __init__(self, field: str, index: int):
        self.field, self.index = field, index

    def __get__(self, obj: Operation | None, objtype=None):
        if obj is None:
            return self
        return tuple.__getitem__(getattr(obj, self.field), self.index)

    def __set__(self, obj: Operation, value: object) -> None:
        what = "results" if self.field == "results" else "operands"
        raise NotImplementedError(f"Cannot write to named {what}")


class _OperandRange:
    """The one variadic operand: the operands from `start` to all but the `after` last."""

    __slots__ = ("start", "after")

    def __init__(self, start: int, after: int):
        self.start, self.after = start, after

    def __get__(self, obj: Operation | None, objtype=None):
        if obj is None:
            return self
        values = obj._operands
        return SSAValues(tuple.__getitem__(values, slice(self.start, len(values) - self.after)))

    def __set__(self, obj: Operation, value: object) -> None:
        raise NotImplementedError("Cannot write to named operands")


def _direct_accessors(cls: type[Operation]) -> None:
    """Replace the operand and result accessors that `irdl_op_definition` gave `cls` with
    ones that index its operand and result tuples directly (the same values; xDSL's go
    through a generic view of the operands, several calls per read, and the printer
    and the lowering read every instruction's registers).  The kinds PTX ops have: single
    operands and results before any variadic operand, and one variadic operand; any
    other accessor stays xDSL's."""
    for name, acc in list(vars(cls).items()):
        if not isinstance(acc, BaseAccessor):
            continue
        construct = acc.construct
        if type(acc) is BeforeVariadicSingleAccessor and construct == VarIRConstruct.RESULT:
            setattr(cls, name, _At("results", acc.idx))
        elif construct != VarIRConstruct.OPERAND:
            continue
        elif type(acc) is BeforeVariadicSingleAccessor:
            setattr(cls, name, _At("_operands", acc.idx))
        elif type(acc) is UniqueVariadicAccessor:
            setattr(cls, name, _OperandRange(acc.idx, acc.num_defs - acc.idx - 1))


for _op in Ptx.operations:
    if issubclass(_op, PtxInstruction):
        _direct_accessors(_op)
