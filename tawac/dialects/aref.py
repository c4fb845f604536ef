"""The `aref` dialect: Tawa's asynchronous references and warp-group partitions.

An aref is a typed channel between warp groups (Tawa, arXiv 2510.14719, section 3): a ring
of D slots, each holding a tuple of tiles, guarded by an "empty" and a "full" barrier.

- `aref.put %r[%i], %x, %y`: wait until slot `i mod D` is empty, write the payload, mark it
  full.
- `%x, %y = aref.get %r[%i]`: wait until slot `i mod D` is full (`again`: a transfer an
  earlier get of the block received, no wait); the payload is borrowed in place until
- `aref.consumed %r[%i]`: the slot may be reused by the producer.

A put or a release may be predicated: `aref.put %r[%i], %x when %p` and
`aref.consumed %r[%i] when %p` happen only where the i1 `%p` holds (no wait, no copy, no
arrival otherwise; a put that does not happen is not a transfer: the numbering of the
transfers that do happen stays dense). `reuse-slots` predicates the puts of a loop that
re-reads tiles still held in the ring.

`%i` is the iteration number (0, 1, 2, ...) of the transfer; the slot is `i mod D` and the
barrier phase flips each time the slot index wraps.

`aref.partition` holds the code of one warp-group role (producer or consumer), with the
number of warp groups that run it and their register budget (0: chosen by the compiler).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    IndexType,
    IntAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
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
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from tawac.dialects.directives import Choice, Nat, OptionalString, Slot
from tawac.dialects.tile import L2_HINTS, type_str


@irdl_attr_definition
class ArefType(ParametrizedAttribute, TypeAttribute):
    """`!aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>`: payload types, depth."""

    name = "aref.aref"

    payload: ArrayAttr[TensorType]
    depth: IntAttr

    def __init__(self, payload: Sequence[TensorType], depth: int):
        super().__init__(ArrayAttr(payload), IntAttr(depth))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            payload = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_type)
            parser.parse_punctuation(",")
            depth = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (ArrayAttr(payload), IntAttr(depth))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<[")
        printer.print_list(self.payload, printer.print_attribute)
        printer.print_string(f"], {self.depth.data}>")

    def verify(self) -> None:
        if self.depth.data < 1:
            raise VerifyException(f"!aref.aref depth must be >= 1, got {self.depth.data}")
        if not self.payload.data:
            raise VerifyException("!aref.aref payload must not be empty")


@irdl_custom_directive
class Payload(CustomDirective):
    """The aref's type, which gives the types of the values put (operands) or got
    (results): its payload, one tile per value."""

    aref: TypeDirective
    values: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        start = parser.pos
        t = parser.parse_type()
        name = state.op_type.name
        values = self.values.inner
        if isinstance(values, VariadicOperandVariable):
            given = state.operands[values.index]
            n = len(given) if given is not None else 0
            if not isinstance(t, ArefType) or len(t.payload) != n:
                # At the op's operands (the aref), where they begin.
                (ref,) = state.operands[self.aref.inner.index] or (None,)
                at = ref.span.start if ref is not None else start
                parser.raise_error(f"{name}: {n} values do not match {t}", at, parser.pos)
        elif not isinstance(t, ArefType):
            parser.raise_error(f"{name}: expected an !aref.aref type, got {t}", start, parser.pos)
        self.aref.set(state, (t,))
        self.values.set(state, tuple(t.payload.data))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_attribute(self.aref.get(op)[0])


@irdl_op_definition
class CreateOp(IRDLOperation):
    """Creates an aref ring: `%r = aref.create "a_b" : !aref.aref<[...], D>`.

    The string is the aref's identity, given when `warp-specialize` creates it and kept by
    every pass that rebuilds the op: the schedule's per-aref decisions
    (`#tawac.schedule<..., arefs = [a_b: depth 3]>`) name the aref they apply to by it,
    never by its position among the kernel's arefs. Hand-written IR may leave it out (no
    schedule entry applies then)."""

    name = "aref.create"
    result = result_def(ArefType)
    id = opt_prop_def(StringAttr)

    custom_directives = (OptionalString,)
    assembly_format = "custom<OptionalString>($id) attr-dict `:` type($result)"

    def __init__(self, aref_type: ArefType, id: str | None = None):
        props = {"id": StringAttr(id)} if id is not None else {}
        super().__init__(result_types=[aref_type], properties=props)

    @property
    def ident(self) -> str | None:
        """The aref's identity, or None when it has none."""
        return self.id.data if self.id is not None else None

    @property
    def aref_type(self) -> ArefType:
        """The type of the aref it makes (payload and depth)."""
        t = self.result.type
        assert isinstance(t, ArefType)
        return t


def _aref_type(op: IRDLOperation, v: SSAValue) -> ArefType:
    t = v.type
    if not isinstance(t, ArefType):
        raise VerifyException(f"{op.name}: expected an !aref.aref operand, got {t}")
    return t


@irdl_op_definition
class PutOp(IRDLOperation):
    """Writes a payload into slot `index mod D`, after waiting for it to be empty; with
    `when %p`, only where `%p` holds."""

    name = "aref.put"
    aref = operand_def(ArefType)
    index = operand_def(IndexType)
    values = var_operand_def(TensorType)
    when = opt_operand_def(i1)
    l2_if = opt_operand_def(i1)
    """Where given, `l2` applies only where it holds (elsewhere the normal priority)."""
    l2 = opt_prop_def(StringAttr)
    """The L2 eviction priority of its copies (`tile.L2_HINTS`): a hint."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    custom_directives = (Slot, Payload)
    assembly_format = (
        "$aref custom<Slot>($index) (`,` $values^)? (`when` $when^)? (`l2` $l2^)? "
        "(`l2_if` $l2_if^)? `:` custom<Payload>(type($aref), type($values)) attr-dict"
    )

    def __init__(
        self,
        aref: SSAValue,
        index: SSAValue,
        values: Sequence[SSAValue],
        when: SSAValue | None = None,
        l2: str | None = None,
        l2_if: SSAValue | None = None,
    ):
        opt = [[v] if v is not None else [] for v in (when, l2_if)]
        super().__init__(
            operands=[aref, index, values, *opt],
            properties={"l2": StringAttr(l2)} if l2 is not None else {},
        )

    def verify_(self) -> None:
        t = _aref_type(self, self.aref)
        if self.l2 is not None and self.l2.data not in L2_HINTS:
            raise VerifyException(
                f"aref.put: l2 is one of {', '.join(L2_HINTS)}, got '{self.l2.data}'"
            )
        if self.l2_if is not None and self.l2 is None:
            raise VerifyException("aref.put: l2_if conditions an l2 priority the put has not")
        got = tuple(v.type for v in self.values)
        if got != tuple(t.payload.data):
            raise VerifyException(
                f"aref.put: values ({', '.join(type_str(g) for g in got)}) do not match "
                f"the payload of {t}"
            )


@irdl_op_definition
class GetOp(IRDLOperation):
    """Waits until slot `index mod D` is full and borrows its payload in place.

    `aref.get %r[%i] again` reads a transfer an earlier get of the same block received
    and no release has ended since (`reread-slots`): the slot is known full, so it reads
    without waiting."""

    name = "aref.get"
    aref = operand_def(ArefType)
    index = operand_def(IndexType)
    values = var_result_def(TensorType)
    again = opt_prop_def(UnitAttr)

    custom_directives = (Slot, Payload)
    assembly_format = (
        "$aref custom<Slot>($index) (`again` $again^)? `:` "
        "custom<Payload>(type($aref), type($values)) attr-dict"
    )

    def __init__(self, aref: SSAValue, index: SSAValue, again: bool = False):
        t = aref.type
        assert isinstance(t, ArefType)
        super().__init__(
            operands=[aref, index],
            result_types=[list(t.payload.data)],
            properties={"again": UnitAttr()} if again else {},
        )

    def verify_(self) -> None:
        t = _aref_type(self, self.aref)
        if tuple(r.type for r in self.values) != tuple(t.payload.data):
            raise VerifyException(f"aref.get: result types do not match the payload of {t}")


@irdl_op_definition
class ConsumedOp(IRDLOperation):
    """Releases slot `index mod D`: the producer may overwrite it.

    `aref.consumed %r[%i] deferred : ...` is a release that lags the slot's use (the
    pipeline keeps MMAs reading it in flight and releases an earlier iteration's slot);
    after the loop, the slots still held are released by a drain. With `when %p`, the
    release happens only where `%p` holds."""

    name = "aref.consumed"
    aref = operand_def(ArefType)
    index = operand_def(IndexType)
    when = opt_operand_def(i1)
    deferred = opt_prop_def(UnitAttr)

    custom_directives = (Slot,)
    assembly_format = (
        "$aref custom<Slot>($index) (`deferred` $deferred^)? (`when` $when^)? `:` type($aref) "
        "attr-dict"
    )

    def __init__(
        self,
        aref: SSAValue,
        index: SSAValue,
        deferred: bool = False,
        when: SSAValue | None = None,
    ):
        props = {"deferred": UnitAttr()} if deferred else {}
        operands = [aref, index, [when] if when is not None else []]
        super().__init__(operands=operands, properties=props)

    def verify_(self) -> None:
        _aref_type(self, self.aref)


@irdl_op_definition
class OrdinalOp(IRDLOperation):
    """`%p = aref.ordinal`: how many programs the CTA ran before this one. 0 where the
    CTA runs one program; `persistent` replaces it by its loop's tile count. A ring whose
    slots a program keeps past its own loops (`reuse-slots`'s held slots) numbers their
    transfers by it."""

    name = "aref.ordinal"
    result = result_def(IndexType)

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


ROLES = ("producer", "consumer")


@irdl_custom_directive
class Role(Choice):
    """A warp-group role: producer or consumer."""

    CHOICES = ROLES
    MESSAGE = f"expected a role ({', '.join(ROLES)})"
    value: AttributeVariable


@irdl_op_definition
class PartitionOp(IRDLOperation):
    """The code of one warp-group role.

    `aref.partition consumer warp_groups 2 regs 232 { ... }`: `warp_groups` warp groups
    (128 threads each) run the body; `regs` is the per-thread register budget that
    `setmaxnreg` gives them (0 lets the compiler choose).  Partitions of a kernel are
    laid out in order: the first gets warp group 0.
    """

    name = "aref.partition"
    role = prop_def(StringAttr)
    warp_groups = prop_def(IntAttr)
    regs = prop_def(IntAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    custom_directives = (Role, Nat)
    assembly_format = (
        "custom<Role>($role) `warp_groups` custom<Nat>($warp_groups) `regs` custom<Nat>($regs) "
        "attr-dict-with-keyword $body"
    )

    def __init__(self, role: str, warp_groups: int, regs: int, body: Region):
        super().__init__(
            properties={
                "role": StringAttr(role),
                "warp_groups": IntAttr(warp_groups),
                "regs": IntAttr(regs),
            },
            regions=[body],
        )

    def verify_(self) -> None:
        if self.role.data not in ROLES:
            raise VerifyException(f"aref.partition: unknown role {self.role.data!r}")
        if self.warp_groups.data < 1:
            raise VerifyException("aref.partition: warp_groups must be >= 1")
        r = self.regs.data
        if r != 0 and (r < 24 or r > 256 or r % 8):
            raise VerifyException(
                f"aref.partition: register budget {r} must be 0 or a multiple of 8 in 24..256"
            )


Aref = Dialect("aref", [CreateOp, PutOp, GetOp, ConsumedOp, OrdinalOp, PartitionOp], [ArefType])
