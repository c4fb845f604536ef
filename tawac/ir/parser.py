"""Reading `.mlir` input: bytes to a verified module, or one `CompileError`.

xDSL's parser with the limits a compiler that reads untrusted text needs:
- a linear-time string-literal rule (xDSL 0.74's regex backtracks exponentially on an
  unterminated string: one stray `"` could hang the compiler);
- number literals of at most `MAX_LITERAL_CHARS` characters (Python refuses to convert
  integers of more than 4,300 digits, and long ones cost quadratic time);
- shaped types of at most `MAX_DIM` per dimension and `MAX_TILE_ELEMENTS` elements (a
  `dense<...>` constant is expanded element by element while parsing);
- float literals that fit their type (`1e39 : f32` is an error, as in MLIR);
- `file:line:col` of the op name on every op (MLIR's convention), and of the offending
  byte for input that is not UTF-8.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ComplexType,
    FileLineColLoc,
    IndexType,
    IntAttr,
    IntegerType,
    ModuleOp,
    RankedStructure,
    ShapedType,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import base
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Position, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken

from tawac.ir.context import make_context
from tawac.ir.verifier import verify, verify_message
from tawac.support.diagnostics import CompileError
from tawac.support.files import read_source
from tawac.support.params import SourceMap, substitute

# A tile lives in one CTA's registers and shared memory (a few hundred KiB): anything
# near these limits is a typo, and rejecting it early keeps parsing cheap.
MAX_TILE_ELEMENTS = 1 << 20
MAX_DIM = (1 << 31) - 1
MAX_LITERAL_CHARS = 100

_RESULTS = re.compile(r"(?:%[^\s,=:]+(?::\d+)?\s*,\s*)*%[^\s,=:]+(?::\d+)?\s*=\s*")


class _Lexer(MLIRLexer):
    """MLIR's lexer with linear-time string literals and bounded number literals."""

    # One character or one escape per repetition: the alternatives start with different
    # characters, so a string without its closing quote fails in linear time.
    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

    def _lex_number(self, start_pos: Position) -> MLIRToken:
        token = super()._lex_number(start_pos)
        if self.pos - start_pos > MAX_LITERAL_CHARS:
            raise ParseError(
                Span(start_pos, self.pos, self.input),
                f"number literal of {self.pos - start_pos} characters "
                f"(at most {MAX_LITERAL_CHARS})",
            )
        return token

    def _lex_string_literal(self, start_pos: Position) -> MLIRToken:
        try:
            return super()._lex_string_literal(start_pos)
        except ParseError:
            raise ParseError(
                Span(start_pos, start_pos + 1, self.input),
                "string literal not closed on its line",
            ) from None


@dataclass
class _HexElement(Parser._TensorLiteralElement):
    """A tensor literal element written in hex (`dense<0xff800000> : tensor<..xf32>`):
    for a float element type its bit pattern, as MLIR reads it and xDSL prints -inf
    and NaN (xDSL's parser took the digits as an integer value)."""

    def to_type(self, parser, type):
        if isinstance(type, AnyFloat) and isinstance(self.value, int) and self.value >= 0:
            size = type.compile_time_size
            if self.value >= 1 << (8 * size):
                parser.raise_error(f"hex value too large for {type}", at_position=self.span)
            return next(iter(type.iter_unpack(self.value.to_bytes(size, "little"))))
        return super().to_type(parser, type)


#: The types a `dense<...>` literal may have (xDSL's `_parse_dense_literal_type`).
_DENSE_LITERAL_TYPE = base(RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType])


class BoundedParser(Parser):
    """xDSL's parser with tawac's lexer (`_Lexer`: string literals lexed in linear time,
    number literals of at most `MAX_LITERAL_CHARS`), shaped types within `MAX_DIM` and
    `MAX_TILE_ELEMENTS` (before a `dense<...>` splat is expanded to one value per
    element) and a float tensor literal's hex elements read as bit patterns
    (`_HexElement`); the base of `TawacParser` and of the TTIR reader (`tawac.ir.ttir`)."""

    def __init__(self, ctx: Context, text: str, name: str) -> None:
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(_Lexer(Input(text, name)))

    def parse_optional_type(self):
        start = self._current_token.span.start
        t = super().parse_optional_type()
        if isinstance(t, ShapedType):
            self._check_shape(t, start)
        return t

    def _check_shape(self, t: ShapedType, start: int) -> None:
        shape = [d for d in t.get_shape() if d >= 0]
        span = Span(start, self.pos, self._current_token.span.input)
        if any(d > MAX_DIM for d in shape):
            raise ParseError(span, f"dimension larger than {MAX_DIM} in {t}")
        if math.prod(shape) > MAX_TILE_ELEMENTS:
            raise ParseError(
                span,
                f"{t} has {math.prod(shape)} elements; a tile holds at most "
                f"{MAX_TILE_ELEMENTS} (it lives in one CTA's registers and shared memory)",
            )

    def _parse_dense_literal_type(self):
        """xDSL's check of a `dense<...>` literal's type, with its constraint built once
        (xDSL builds it again for every literal: a sixth of a tile file's parse), and its
        errors at the type (xDSL's are at the token after it)."""
        start = self._current_token.span.start
        type = self.expect(self.parse_optional_type, "Dense attribute must be typed!")
        span = Span(start, self.pos, self._current_token.span.input)
        if not _DENSE_LITERAL_TYPE.verifies(type):
            raise ParseError(
                span,
                f"a dense literal's type must be a tensor of integers, indices or floats, "
                f"not {type}",
            )
        if any(dim == DYNAMIC_INDEX for dim in type.get_shape()):
            raise ParseError(span, f"a dense literal's type must have a static shape, not {type}")
        return type

    def _parse_tensor_literal_element(self):
        if self._current_token.text[:2] not in ("0x", "0X"):
            return super()._parse_tensor_literal_element()
        e = super()._parse_tensor_literal_element()
        return _HexElement(e.is_negative, e.value, e.span)


class TawacParser(BoundedParser):
    """xDSL's parser with tawac's limits; attaches `file:line:col` of the op name to
    every op parsed without an explicit `loc(...)`."""

    def __init__(
        self, ctx: Context, text: str, name: str, source_map: SourceMap | None = None
    ) -> None:
        super().__init__(ctx, text, name)
        self.source_map = source_map

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as e:
            if e.msg.startswith("values used but not defined"):
                self._raise_undefined()
            raise

    def _raise_undefined(self) -> None:
        """Report a value used but never defined (in scope) at its first use."""
        uses = [
            (u.operation, name)
            for name, values in self.forward_ssa_references.items()
            for v in values.values()
            for u in v.uses
        ]
        located = [(op.location, name) for op, name in uses]
        located = [(loc, n) for loc, n in located if isinstance(loc, FileLineColLoc)]
        if not located:
            return
        loc, name = min(located, key=lambda p: (p[0].line.data, p[0].column.data))
        raise CompileError(
            f"use of undefined value %{name}",
            location=f"{loc.filename.data}:{loc.line.data}:{loc.column.data}",
        )

    def resolve_operand(self, operand, type):
        value = super().resolve_operand(operand, type)
        name = operand.operand_name
        if isinstance(value, ForwardDeclaredValue) and SSAValue.is_valid_name(name):
            value.name_hint = name  # for "used before its definition"
        return value

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        results = _RESULTS.match(str(start.input.content), start.start)
        pos = results.end() if results is not None else start.start
        name = Span(pos, pos + 1, start.input)
        try:
            op = super().parse_operation()
        except ParseError as e:
            if "is not registered" not in e.msg or getattr(e, "at_op_name", False):
                raise
            located = ParseError(name, e.msg)
            located.at_op_name = True  # type: ignore[attr-defined]
            raise located from None
        except VerifyException as e:  # a declarative format checks its operands' types
            raise ParseError(name, verify_message(e)) from None
        if isinstance(op.location, UnknownLoc):
            file, line, col = span_location(name, self.source_map)
            op.location = FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(col))
        return op

    def _parse_block(self):
        """xDSL's block, its label's name refused where xDSL refuses it (a name starting
        with a digit, `^4`) as a located error instead of its ValueError."""
        start = self._current_token.span
        try:
            return super()._parse_block()
        except ValueError as e:
            if "Block name" not in str(e):
                raise
            raise ParseError(
                start,
                f"invalid block label '{start.text}': a block name starts with a letter, "
                "'_', '$' or '.'",
            ) from None

    def _located_verify(self, parse):
        """Run a type/attribute parse; a verifier failure is reported where it began, and
        so is a float that does not fit its type (xDSL packs floats with `struct`)."""
        start = self._current_token.span
        try:
            return parse()
        except VerifyException as e:
            raise ParseError(Span(start.start, self.pos, start.input), verify_message(e)) from None
        except OverflowError:
            raise ParseError(
                Span(start.start, self.pos, start.input), "value out of range for its type"
            ) from None

    def parse_optional_type(self):
        return self._located_verify(super().parse_optional_type)

    def parse_optional_attribute(self):
        return self._located_verify(super().parse_optional_attribute)


def span_location(span: Span, source_map: SourceMap | None) -> tuple[str, int, int]:
    """(file, line, column) of a span's start in the user's text (before parameter
    substitution, when there was one)."""
    if source_map is None:
        loc = span.get_location()
        return loc.file, loc.line, loc.col
    line, col = source_map.line_col(span.start)
    return span.input.name, line, col


def _located(span: Span, source_map: SourceMap | None) -> str:
    return ":".join(str(p) for p in span_location(span, source_map))


def _parse_error(e: ParseError, source_map: SourceMap | None = None) -> CompileError:
    msg = e.msg.strip().splitlines()[0] if e.msg.strip() else "parse error"
    return CompileError(msg, location=_located(e.span, source_map))


def parse_text(
    text: str,
    filename: str,
    ctx: Context | None = None,
    params: Mapping[str, object] | None = None,
) -> ModuleOp:
    """Parse and verify `text`, its kernel parameters set from `params` (tawac.support.params);
    every failure is one `CompileError` with a location in `text`."""
    ctx = ctx if ctx is not None else make_context()
    sub = substitute(text, filename, params)
    try:
        parser = TawacParser(ctx, sub.text, filename, sub.source_map)  # lexes the first token
        module = parser.parse_module()
    except ParseError as e:
        raise _parse_error(e, sub.source_map) from None
    except VerifyException as e:  # type verifiers run while parsing: the type just ended
        loc = _located(parser._current_token.span, sub.source_map)
        raise CompileError(verify_message(e), location=loc) from None
    verify(module)
    return module


def parse_file(
    path: str | Path, ctx: Context | None = None, params: Mapping[str, object] | None = None
) -> ModuleOp:
    return parse_text(read_source(path), str(path), ctx, params)
