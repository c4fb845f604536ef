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
"""

from __future__ import annotations

import re
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import (
    Builtin,
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    ModuleOp,
    NameLoc,
    ShapedType,
)
from xdsl.dialects.math import Math
from xdsl.dialects.scf import Scf
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

from tawac.dialects.tt import TT, ttir_arith
from tawac.ir.parser import BoundedParser
from tawac.support.diagnostics import CompileError

_ALIAS = re.compile(r"^#[\w.$-]+\s*=\s*loc\(.*\)\s*$", re.MULTILINE)
#: Path parts of Triton's own library (its call sites are not the user's code).
_TRITON_PARTS = ("triton/language/", "triton/runtime/")


def ttir_context() -> Context:
    """The dialects of TTIR: builtin, `tt`, arith (on tensors), math, scf."""
    ctx = Context()
    for d in (Builtin, TT, ttir_arith(), Math, Scf):
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


class _TtirParser(BoundedParser):
    """`BoundedParser` (tawac's lexer and shape bounds) refusing a shaped type with an
    extent of 0: Triton's blocks have at least one element per dimension (`tl.arange`
    of a positive power of two), and the conversion divides by block sizes."""

    def _check_shape(self, t: ShapedType, start: int) -> None:
        super()._check_shape(t, start)
        if 0 in t.get_shape():
            span = Span(start, self.pos, self._current_token.span.input)
            raise ParseError(span, f"{t} has a zero dimension (a Triton block has none)")


def parse_ttir(text: str, filename: str = "<ttir>") -> ModuleOp:
    """Parse and verify a TTIR module; one located `CompileError` on failure."""
    parser = None
    try:
        # the constructor lexes the first token: its errors are located too
        parser = _TtirParser(ttir_context(), hoist_aliases(text), filename)
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
