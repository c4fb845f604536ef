"""Custom directives of the tile and aref dialects' declarative assembly formats.

xDSL's `assembly_format` spells a property by its attribute syntax (`IntAttr` as `<3>`,
`StringAttr` as `"max"`); these directives spell the dialects' properties as bare words
and integers (`tile.reduce max %s, 1`, `aref.partition consumer warp_groups 2 regs 232`)
and their coordinate lists as `%src[%i, %j]`, with the diagnostics the hand-written
parsers gave. An op names the ones it uses in `custom_directives` and writes them in its
format as `custom<Name>($property)`.
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import FloatData, IntAttr, StringAttr
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    OperandVariable,
    ParsingState,
    PrintingState,
    VariadicOperandVariable,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer


def spaced_after(state: PrintingState) -> None:
    """After a directive printed a word or a closing bracket: the next one is spaced."""
    state.should_emit_space = True
    state.last_was_punctuation = False


class _Bare(CustomDirective):
    """A property as a bare word or number (`text` of its attribute); an anchor of an
    optional group (`(`stack` custom<Nat>($stack)^)?`)."""

    value: AttributeVariable

    @staticmethod
    def text(attr: Attribute) -> str:
        raise NotImplementedError

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_string(self.text(self.value.get(op)))

    def is_present(self, op: IRDLOperation) -> bool:
        return self.value.is_present(op)

    def is_anchorable(self) -> bool:
        return self.value.is_optional


class _Integer(_Bare):
    """An `IntAttr` property as a bare integer."""

    value: AttributeVariable

    @staticmethod
    def parse_integer(parser: Parser) -> int:
        return parser.parse_integer()

    @staticmethod
    def text(attr: Attribute) -> str:
        assert isinstance(attr, IntAttr)
        return str(attr.data)

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.value.set(state, IntAttr(self.parse_integer(parser)))


@irdl_custom_directive
class Int(_Integer):
    """A signed integer: `tile.broadcast %v, 1`."""

    value: AttributeVariable


@irdl_custom_directive
class Nat(_Integer):
    """A non-negative integer (no sign, not `true`): `max 4`, `stack 8`, `regs 232`."""

    value: AttributeVariable

    @staticmethod
    def parse_integer(parser: Parser) -> int:
        return parser.parse_integer(allow_boolean=False, allow_negative=False)


class Choice(CustomDirective):
    """A property spelled as one word of `CHOICES`; another word is an error at it
    (`expected ...`, `MESSAGE`). The property is a `StringAttr` of the word, or with
    `AS_INDEX` an `IntAttr` of its position in `CHOICES`."""

    CHOICES: ClassVar[tuple[str, ...]] = ()
    MESSAGE: ClassVar[str] = ""
    AS_INDEX: ClassVar[bool] = False
    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        pos = parser.pos
        word = parser.parse_identifier()
        if word not in self.CHOICES:
            parser.raise_error(self.MESSAGE, pos, parser.pos)
        attr: Attribute = IntAttr(self.CHOICES.index(word)) if self.AS_INDEX else StringAttr(word)
        self.value.set(state, attr)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.value.get(op)
        assert isinstance(attr, IntAttr | StringAttr)
        state.print_whitespace(printer)
        printer.print_string(self.CHOICES[attr.data] if isinstance(attr, IntAttr) else attr.data)


@irdl_custom_directive
class Indices(CustomDirective):
    """The coordinates of the operand before it, in square brackets: `%a[%m0, %k]`."""

    operands: VariadicOperandVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.operands.set(state, parse_indices(parser))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        print_indices(printer, self.operands.get(op))
        spaced_after(state)


@irdl_custom_directive
class Slot(CustomDirective):
    """One coordinate in square brackets: an aref's slot `%r[%i]`."""

    operand: OperandVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        indices = parse_indices(parser)
        if len(indices) != 1:
            parser.raise_error("expected one iteration index")
        self.operand.set(state, indices[0])

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        print_indices(printer, (self.operand.get(op),))
        spaced_after(state)


def parse_indices(parser: Parser):
    """`[%i, %j]`, unresolved."""
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )


def print_indices(printer: Printer, operands) -> None:
    printer.print_string("[")
    printer.print_list(operands, printer.print_operand)
    printer.print_string("]")


@irdl_custom_directive
class OptionalString(CustomDirective):
    """An optional `StringAttr` property as a string literal, or nothing: `aref.create
    "a_b"` (an attribute dictionary may follow without being taken for it)."""

    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        text = parser.parse_optional_str_literal()
        if text is not None:
            self.value.set(state, StringAttr(text))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.value.get(op)
        if not isinstance(attr, StringAttr):
            return
        state.print_whitespace(printer)
        printer.print_string_literal(attr.data)


@irdl_custom_directive
class Float(_Bare):
    """A `FloatData` property as a bare number, `inf`, `-inf` or `nan` (`tile.load ...
    padding -inf`)."""

    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        negative = parser.parse_optional_punctuation("-") is not None
        word = parser.parse_optional_identifier()
        if word is None:
            number = parser.parse_number(allow_boolean=False)
            value = float(number)
        elif word in ("inf", "nan"):
            value = math.inf if word == "inf" else math.nan
        else:
            parser.raise_error(f"expected a number, inf or nan, got '{word}'")
        self.value.set(state, FloatData(-value if negative else value))

    @staticmethod
    def text(attr: Attribute) -> str:
        assert isinstance(attr, FloatData)
        return float_text(attr.data)


def float_text(value: float) -> str:
    """A float as `Float` prints it: `inf`, `-inf`, `nan`, else Python's shortest
    round-tripping form with a point in its mantissa, as MLIR's float literals have
    (`0.5`, `-1.0e+30`)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        return f"{mantissa}.0e{exponent}"
    return text
