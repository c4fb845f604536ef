"""Reading Triton's TTIR: the text `triton.compile(...).asm["ttir"]`
gives (triton 3.6), parsed into the `tt` dialect (`tawac.dialects.tt`) with xDSL's
scf and math and an arith that compares tensors (`ttir_arith`).

Two things of TTIR's text need care:
- Location aliases: Triton prints most `#locN = loc(...)` definitions after the module,
  and xDSL 0.74 resolves an alias only after its definition. `parse_ttir` moves every
  alias line to the front, in its order (an alias refers only to those printed before
  it).
- Float splats in hex (`dense<0xFF800000>`, -inf): their bit patterns; and tawac's
  lexer limits (linear-time strings, bounded numbers) and shape bounds:
  `tawac.ir.parser.BoundedParser`. A shaped type with an extent of 0 is refused where it
  is written (no Triton block has one, and the conversion divides by block sizes).
- Locations: each op carries its Python source position, often wrapped: a name
  (`loc("a_ptrs"(...))`), a call site in Triton's own library
  (`loc(callsite(<standard.py> at <kernel.py>))`) or several fused.
  `python_location(op)` unwraps them to the kernel's file, line and column (the
  innermost position outside Triton's package), which diagnostics name.

Errors: text that does not parse (or lex: the first token included) is one
`CompileError` located in the `.ttir` file (its line and column); an op that does not
verify is located at its Python line where the TTIR has one, else at the file.

Speed (xDSL's parser is most of the cost of reading a kernel): the reader reads the
location aliases of the usual forms itself (`_read_alias`), each type text once, a float
splat as its one element, and the frequent tokens without xDSL's per-token dispatch
(`_TtirLexer`), each as xDSL reads them; a text read again is a copy of the module read
first (`_copy`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    AnyFloat,
    Builtin,
    BytesAttr,
    CallSiteLoc,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    ShapedType,
    StringAttr,
    UnknownLoc,
)
from xdsl.dialects.math import Math
from xdsl.dialects.scf import Scf
from xdsl.ir import Attribute, Block, Dialect, Operation, Region
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span, Token
from xdsl.utils.mlir_lexer import MLIRToken, MLIRTokenKind

from tawac.dialects.tt import GPU, TT, ttir_arith
from tawac.ir.parser import BoundedParser, _Lexer
from tawac.ir.verifier import check_definitions
from tawac.support.diagnostics import CompileError

_ALIAS = re.compile(r"^#[\w.$-]+\s*=\s*loc\(.*\)\s*$", re.MULTILINE)
#: Path parts of Triton's own library (its call sites are not the user's code).
_TRITON_PARTS = ("triton/language/", "triton/runtime/")


class _WhileOp(scf.WhileOp):
    """xDSL's `scf.while`, also read without loop-carried values as MLIR prints it
    (`scf.while : () -> () {`: `while tl.atomic_cas(Lock, 0, 1) == 1: pass`)."""

    @classmethod
    def parse(cls, parser: Parser) -> _WhileOp:
        if parser.parse_optional_punctuation(":") is None:
            return super().parse(parser)
        pos = parser.pos
        ft = parser.parse_function_type()
        if ft.inputs.data:
            parser.raise_error("scf.while: loop-carried values without their names", pos)
        before = parser.parse_region()
        parser.parse_characters("do")
        after = parser.parse_region()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls((), ft.outputs.data, before, after)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


def ttir_context() -> Context:
    """The dialects of TTIR: builtin, `tt`, arith (on tensors), math, scf (`scf.while`
    as `_WhileOp` reads it), and of gpu its `gpu.barrier` (`tl.debug_barrier()`)."""
    ctx = Context()
    ops = [_WhileOp if op is scf.WhileOp else op for op in Scf.operations]
    scf_ = Dialect("scf", ops, list(Scf.attributes))
    for d in (Builtin, TT, ttir_arith(), Math, scf_, GPU):
        ctx.load_dialect(d)
    return ctx


def hoist_aliases(text: str) -> str:
    """`text` with every `#locN = loc(...)` line moved to the front, keeping their order
    and the line count (each moved line leaves an empty line, so that the parser's line
    numbers are the file's, but for the alias lines)."""
    aliases = _ALIAS.findall(text)
    if not aliases:
        return text
    body = _ALIAS.sub("", text)
    return " ".join(a.strip() for a in aliases) + " " + body


_S = r"[ \t]*"
_STRING = r'"([ !#-\[\]-~]*)"'
_NUMBER = r"(0|[1-9][0-9]{0,17})(?![\w.$-])"
_NAME = r"(#[a-zA-Z$_][a-zA-Z0-9$_-]*|#[0-9]+)(?![\w.$-])"
#: A token of a location alias's line as `_read_alias` reads it, after spaces or tabs: a
#: string without escapes (1), a decimal integer (2), an alias name without dots (3), a
#: keyword (4), a punctuation mark (5). Each is one token of MLIR's lexer too, where it
#: ends (no letter, digit or `.$-` after it).
_LOC_TOKEN = re.compile(
    rf"{_S}(?:{_STRING}|{_NUMBER}|{_NAME}|([a-zA-Z_][a-zA-Z0-9_]*)(?![\w.$])|([()\[\]:,=]))"
)
_STR, _INT, _HASH, _WORD, _PUNCT = 1, 2, 3, 4, 5
#: The three forms of nearly every alias line Triton prints, in `_LOC_TOKEN`'s tokens: a
#: file position (groups 2-4), a name of an alias (5, 6), a call site of two aliases (7,
#: 8); the alias's name is group 1.
_COMMON = re.compile(
    rf"{_NAME}{_S}={_S}loc{_S}\({_S}(?:{_STRING}{_S}:{_S}{_NUMBER}{_S}:{_S}{_NUMBER}"
    rf"|{_STRING}{_S}\({_S}{_NAME}{_S}\)|callsite{_S}\({_S}{_NAME}{_S}at{_S}{_NAME}{_S}\))"
    rf"{_S}\)"
)


class _Slow(Exception):
    """A location alias `_read_alias` leaves to xDSL's parser."""


def _read_alias(line: str, aliases: dict[str, Attribute]) -> tuple[str, Attribute]:
    """The name and location of an alias line `#name = loc(...)` whose location is a
    file position, a name, a call site, `unknown` or an alias defined before, built as
    xDSL's parser builds it (`AttrParser._parse_location`); `_Slow` for anything else
    (escapes, other location kinds, an alias defined twice or not yet, a lexing
    question), which xDSL's parser reads, with its errors."""
    m = _COMMON.fullmatch(line)
    if m is None:
        return _read_tokens(line, aliases)
    name, file, row, col, label, inner, callee, caller = m.groups()
    refs = [r for r in (inner, callee, caller) if r is not None]
    if name in aliases or any(r not in aliases for r in refs):
        raise _Slow
    if file is not None:
        return name, FileLineColLoc(StringAttr(file), IntAttr(int(row)), IntAttr(int(col)))
    if label is not None:
        return name, NameLoc(StringAttr(label), aliases[inner])
    return name, CallSiteLoc(aliases[callee], aliases[caller])


def _read_tokens(line: str, aliases: dict[str, Attribute]) -> tuple[str, Attribute]:
    """`_read_alias` of any line, token by token (`_LOC_TOKEN`)."""
    tokens, pos = [], 0
    while pos < len(line):
        m = _LOC_TOKEN.match(line, pos)
        if m is None:
            raise _Slow
        tokens.append((m.lastindex, m.group(m.lastindex)))
        pos = m.end()
    head = [(_PUNCT, "="), (_WORD, "loc"), (_PUNCT, "(")]
    if len(tokens) < 5 or tokens[0][0] != _HASH or tokens[1:4] != head:
        raise _Slow
    try:
        loc, end = _read_location(tokens, 4, aliases)
    except IndexError:
        raise _Slow from None
    if tokens[end:] != [(_PUNCT, ")")] or tokens[0][1] in aliases:
        raise _Slow
    return tokens[0][1], loc


def _read_location(tokens: list, i: int, aliases: dict) -> tuple[Attribute, int]:
    """The location at `tokens[i]` and the index after it (`_read_alias`)."""
    kind, text = tokens[i]
    if (kind, text) == (_WORD, "unknown"):
        return UnknownLoc(), i + 1
    if kind == _STR:
        after = tokens[i + 1][1] if i + 1 < len(tokens) else None
        if after == ":":
            if [k for k, _ in tokens[i + 2 : i + 5]] != [_INT, _PUNCT, _INT]:
                raise _Slow
            if tokens[i + 3][1] != ":":
                raise _Slow
            line, col = int(tokens[i + 2][1]), int(tokens[i + 4][1])
            return FileLineColLoc(StringAttr(text), IntAttr(line), IntAttr(col)), i + 5
        if after == "(":
            inner, j = _read_location(tokens, i + 2, aliases)
            if tokens[j] != (_PUNCT, ")"):
                raise _Slow
            return NameLoc(StringAttr(text), inner), j + 1
        return NameLoc(StringAttr(text), NoneAttr()), i + 1
    if kind == _HASH and text in aliases:
        return aliases[text], i + 1
    if (kind, text) == (_WORD, "callsite") and tokens[i + 1] == (_PUNCT, "("):
        callee, j = _read_location(tokens, i + 2, aliases)
        if tokens[j] != (_WORD, "at"):
            raise _Slow
        caller, j = _read_location(tokens, j + 1, aliases)
        if tokens[j] != (_PUNCT, ")"):
            raise _Slow
        return CallSiteLoc(callee, caller), j + 1
    raise _Slow


def _hoisted(text: str) -> tuple[str, dict[str, Attribute]]:
    """`hoist_aliases(text)` with its first aliases that `_read_alias` reads (up to the
    first it does not) read here and blanked (spaces, so that every position stays):
    the text for xDSL's parser, and those aliases, which it starts from."""
    lines = [a.strip() for a in _ALIAS.findall(text)]
    if not lines:
        return text, {}
    known: dict[str, Attribute] = {}
    for k, line in enumerate(lines):
        try:
            name, loc = _read_alias(line, known)
        except _Slow:
            break
        known[name] = loc
        lines[k] = " " * len(line)
    return " ".join(lines) + " " + _ALIAS.sub("", text), known


#: The text of a type that ends in `>` (a tensor, a pointer, a descriptor, nested once),
#: which `_TtirParser` reads once per text: a type reads the same wherever its text is,
#: and its last token, `>`, ends where the text does.
_TYPE_TEXT = re.compile(r"(?:tensor|!tt\.ptr|!tt\.tensordesc)<[^<>]*(?:<[^<>]*>[^<>]*)*>")

#: xDSL's one-character punctuation tokens (`MLIRLexer.lex` builds this dict per token).
_PUNCTUATION = {
    ":": MLIRTokenKind.COLON,
    ",": MLIRTokenKind.COMMA,
    "(": MLIRTokenKind.L_PAREN,
    ")": MLIRTokenKind.R_PAREN,
    "}": MLIRTokenKind.R_BRACE,
    "[": MLIRTokenKind.L_SQUARE,
    "]": MLIRTokenKind.R_SQUARE,
    "<": MLIRTokenKind.LESS,
    ">": MLIRTokenKind.GREATER,
    "=": MLIRTokenKind.EQUAL,
    "+": MLIRTokenKind.PLUS,
    "/": MLIRTokenKind.SLASH,
    "*": MLIRTokenKind.STAR,
    "?": MLIRTokenKind.QUESTION,
    "|": MLIRTokenKind.VERTICAL_BAR,
}
#: xDSL's prefixed identifiers (`MLIRLexer._lex_prefixed_ident`).
_PREFIXED = {
    "%": MLIRTokenKind.PERCENT_IDENT,
    "#": MLIRTokenKind.HASH_IDENT,
    "!": MLIRTokenKind.EXCLAMATION_IDENT,
    "^": MLIRTokenKind.CARET_IDENT,
}


class _TtirLexer(_Lexer):
    """tawac's lexer with TTIR's most frequent tokens (identifiers, one-character
    punctuation, `->`, numbers) dispatched without xDSL's per-token overhead (a dict
    built per token, a method call per step): the same tokens, every other token and
    every error by `MLIRLexer.lex`."""

    def lex(self) -> MLIRToken:
        inp = self.input
        content = inp.content
        start = self._whitespace_regex.match(content, self.pos).end()
        c = content[start : start + 1]
        if c.isalpha() or c == "_":
            self.pos = self.bare_identifier_suffix_regex.match(content, start + 1).end()
            return Token(MLIRTokenKind.BARE_IDENT, Span(start, self.pos, inp))
        kind = _PUNCTUATION.get(c)
        if kind is not None:
            self.pos = start + 1
            return Token(kind, Span(start, start + 1, inp))
        kind = _PREFIXED.get(c)
        if kind is not None and not (c == "#" and content.startswith("-}", start + 1)):
            m = self._suffix_id.match(content, start + 1)
            if m is not None:
                self.pos = m.end()
                return Token(kind, Span(start, self.pos, inp))
        elif c == "-":
            arrow = content.startswith(">", start + 1)
            self.pos = start + 2 if arrow else start + 1
            return Token(
                MLIRTokenKind.ARROW if arrow else MLIRTokenKind.MINUS, Span(start, self.pos, inp)
            )
        elif c in "0123456789" and c:
            self.pos = start + 1
            return self._lex_number(start)
        self.pos = start
        return super().lex()


class _TtirParser(BoundedParser):
    """`BoundedParser` (tawac's lexer and shape bounds) refusing a shaped type with an
    extent of 0: Triton's blocks have at least one element per dimension (`tl.arange`
    of a positive power of two), and the conversion divides by block sizes. Its lexer is
    `_TtirLexer`."""

    def __init__(self, ctx: Context, text: str, name: str) -> None:
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(_TtirLexer(Input(text, name)))
        #: the text of each type of `_TYPE_TEXT` read, and the type
        self._types: dict[str, Attribute] = {}

    def parse_optional_type(self):
        """`BoundedParser`'s, each text of `_TYPE_TEXT` read (and checked) once: where it
        comes again the parser moves past it, to the token after it as reading it would."""
        content = self.lexer.input.content
        m = _TYPE_TEXT.match(content, self._current_token.span.start)
        if m is None:
            return super().parse_optional_type()
        t = self._types.get(m.group())
        if t is not None:
            self._resume_from(m.end())
            return t
        t = super().parse_optional_type()
        after = self.lexer._whitespace_regex.match(content, m.end()).end()
        if t is not None and self._current_token.span.start == after:
            self._types[m.group()] = t
        return t

    def _check_shape(self, t: ShapedType, start: int) -> None:
        super()._check_shape(t, start)
        if 0 in t.get_shape():
            span = Span(start, self.pos, self._current_token.span.input)
            raise ParseError(span, f"{t} has a zero dimension (a Triton block has none)")

    def parse_dense_int_or_fp_elements_attr(self, type):
        """xDSL's, but a float splat (`dense<0.0> : tensor<128x128xbf16>`) is packed as its
        one element repeated: the same bytes, where xDSL packs each element of the splat
        expanded (bf16's one by one in Python, a tenth of a TTIR file's parse). Anything
        else, and any error, is xDSL's parse from the `<` again."""
        start = self._current_token.span.start
        if type is None:
            try:
                attr = self._float_splat()
            except Exception:
                attr = None
            if attr is not None:
                return attr
            self._resume_from(start)
        return super().parse_dense_int_or_fp_elements_attr(type)

    def _float_splat(self) -> DenseIntOrFPElementsAttr | None:
        """`<x> : type` with `x` one element and `type` of floats, as xDSL reads it, in its
        order; None for any other literal."""
        self.parse_punctuation("<", " in dense attribute")
        if self._current_token.kind in (MLIRTokenKind.STRING_LIT, MLIRTokenKind.GREATER):
            return None
        elements, shape = self._parse_tensor_literal()
        if shape:
            return None
        self.parse_punctuation(">", " in dense attribute")
        self.parse_punctuation(":", " in dense attribute")
        type = self._parse_dense_literal_type()
        elem = type.element_type
        if not isinstance(elem, AnyFloat):
            return None
        (element,) = elements
        one = elem.pack([element.to_type(self, elem)])
        return DenseIntOrFPElementsAttr(type, BytesAttr(one * math.prod(type.get_shape())))


#: `parse_ttir`'s memory, by text and file name: the texts read once and, for a text read
#: again, a copy of its module (never handed out) that it is copied from from then on
#: (`_copy`: a tenth of the cost of parsing); at most `_MEMORY` of each, the oldest
#: forgotten first.
_SEEN: dict[tuple[str, str], None] = {}
_KEPT: dict[tuple[str, str], ModuleOp] = {}
_MEMORY = 64


def parse_ttir(text: str, filename: str = "<ttir>") -> ModuleOp:
    """Parse and verify a TTIR module; one located `CompileError` on failure. A text read
    before (under the same file name) is a copy of the module read then (`_copy`)."""
    key = (text, filename)
    kept = _KEPT.get(key)
    if kept is not None:
        return _copy(kept)
    module = _parse(text, filename)
    if key in _SEEN:
        copy = _checked_copy(module)
        if copy is not None:
            _remember(_KEPT, key, copy)
    else:
        _remember(_SEEN, key, None)
    return module


def _remember(memory: dict, key, value) -> None:
    memory[key] = value
    while len(memory) > _MEMORY:
        del memory[next(iter(memory))]


def _copy(module: ModuleOp) -> ModuleOp:
    """A copy of a module read: its ops made in the order the parser makes them (an op
    after the ops of its regions), so that each value's uses come in the parser's order
    too, with the same types, attributes, locations and names. KeyError where an op uses
    a value defined after it (which the parser orders otherwise)."""
    return _made(module, {}, {})


def _made(op: Operation, values: dict, blocks: dict) -> Operation:
    """The copy of `op` (`_copy`); `values` and `blocks`: the copies made so far."""
    regions = []
    for region in op.regions:
        new = Region()
        for block in region.blocks:
            copy = Block()
            copy._name = block._name  # as kept: the `name_hint` setter strips a `_N` again
            for arg in block.args:
                values[arg] = copy.insert_arg(arg.type, len(copy.args), arg.location)
                values[arg]._name = arg._name
            blocks[block] = copy
            new.add_block(copy)
        for block in region.blocks:
            for inner in block.ops:
                blocks[block].add_op(_made(inner, values, blocks))
        regions.append(new)
    made = op.create(
        operands=[values[v] for v in op.operands],
        result_types=[r.type for r in op.results],
        properties=op.properties.copy(),
        attributes=op.attributes.copy(),
        location=op.location,
        successors=[blocks[b] for b in op.successors],
        regions=regions,
    )
    for old, new_result in zip(op.results, made.results, strict=True):
        new_result._name = old._name
        values[old] = new_result
    return made


def _checked_copy(module: ModuleOp) -> ModuleOp | None:
    """`_copy(module)` where it has `module`'s uses in the same order (`_uses`), else
    None."""
    try:
        copy = _copy(module)
    except Exception:
        return None
    return copy if _uses(copy) == _uses(module) else None


def _uses(module: ModuleOp) -> list:
    """Each value's and block's uses, in walk order: (the user's walk index, the index)."""
    ops = list(module.walk())
    index = {op: i for i, op in enumerate(ops)}
    out = []
    for op in ops:
        users = [*op.results]
        for region in op.regions:
            for block in region.blocks:
                users += [block, *block.args]
        out += [[(index[u.operation], u.index) for u in x.uses] for x in users]
    return out


def _parse(text: str, filename: str) -> ModuleOp:
    """`parse_ttir` of a text not kept."""
    parser = None
    try:
        # the constructor lexes the first token: its errors are located too
        hoisted, aliases = _hoisted(text)
        parser = _TtirParser(ttir_context(), hoisted, filename)
        parser.attribute_aliases.update(aliases)
        module = parser.parse_module()
    except ParseError as e:
        msg = e.msg.strip().splitlines()[0] if e.msg.strip() else "parse error"
        loc = e.span.get_location()
        raise CompileError(msg, location=f"{filename}:{loc.line}:{loc.col}") from None
    except (VerifyException, ValueError, OverflowError) as e:  # a type's check, a value
        # never defined, a float that does not fit its type (xDSL packs with `struct`)
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if isinstance(e, OverflowError):
            msg = "value out of range for its type"
        if parser is None:
            raise CompileError(msg, location=filename) from None
        loc = parser._current_token.span.get_location()
        raise CompileError(msg, location=f"{filename}:{loc.line}:{loc.col}") from None
    try:
        module.verify()
    except (VerifyException, ValueError) as e:  # ValueError: a value used, never defined
        op = _first_invalid(module)
        where = python_location(op) if op is not None else None
        raise CompileError(str(e).strip().splitlines()[0], location=where or filename) from None
    try:  # an op may use its own result: the converter's analyses would go round it
        check_definitions(module)
    except CompileError as e:
        where = python_location(e.op) if e.op is not None else None
        raise CompileError(e.message, location=where or filename) from None
    return module


def _first_invalid(module: ModuleOp) -> Operation | None:
    """The first op (in walk order) that fails its own verification."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, ValueError):
            return op
    return None


def read_ttir(path: str | Path) -> ModuleOp:
    """A `.ttir` file parsed (`parse_ttir`)."""
    return parse_ttir(Path(path).read_text(), str(path))


def _positions(loc: Attribute) -> list[FileLineColLoc]:
    """Every file position inside `loc`, innermost call sites last."""
    if isinstance(loc, FileLineColLoc):
        return [loc]
    if isinstance(loc, NameLoc):
        return _positions(loc.location)
    if isinstance(loc, CallSiteLoc):
        return _positions(loc.caller) + _positions(loc.callee)
    if isinstance(loc, FusedLoc):
        return [p for inner in loc.locations for p in _positions(inner)]
    return []


def python_location(op: Operation) -> str | None:
    """`file:line:col` of the user's Python code `op` comes from (the innermost
    position outside Triton's own library), or None when its location has none."""
    found = [
        p
        for p in _positions(op.location)
        if not any(part in p.filename.data for part in _TRITON_PARTS)
    ]
    if not found:
        return None
    p = found[-1]
    return f"{p.filename.data}:{p.line.data}:{p.column.data}"


__all__ = ["hoist_aliases", "parse_ttir", "python_location", "read_ttir", "ttir_context"]
