"""Kernel parameters: named integer compile-time constants of a `.mlir` kernel.

A kernel declares its parameters, with their default values, in its attribute
dictionary, and refers to them as `$NAME` wherever an integer may stand in the text,
types included:

    tile.kernel @gemm(%a: ..., %c: ...) attributes {params = {BLOCK_M = 128, BLOCK_N = 256}} {
      %bm = arith.constant $BLOCK_M : index
      %x = tile.load %a[%m0, %k] : ... -> tensor<$BLOCK_Mx64xbf16>

Names are upper case (`[A-Z][A-Z0-9_]*`), so `$BLOCK_Mx64` reads unambiguously inside a
shape. `tawac compile -D BLOCK_N=128` (or `params={"BLOCK_N": 128}` in Python) overrides
a default. The substitution happens on the text before parsing (a tile's shape is part
of its type); the declaration is rewritten to the values used, so the parsed kernel
records them (`params` attribute, and `"kernel_params"` in the sidecar). Diagnostics keep
pointing at the user's text: `SourceMap` maps positions of the substituted text back.

No xDSL import here: the compile cache computes its key without loading the compiler.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tawac.support.diagnostics import CompileError

NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_NAME_FULL = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_REFERENCE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?")
_DECLARATION = re.compile(r"\bparams\s*=\s*\{")
_ENTRY = re.compile(
    r"\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>-?\d+)(?:\s*:\s*(?:i64|index))?\s*\Z"
)
#: Values are tile sizes, stage counts and the like; anything longer is a typo.
MAX_DIGITS = 12


@dataclass
class SourceMap:
    """Positions of a substituted text mapped back to the original's.

    `edits` are (new start, new end, old start, old end) of each replaced span, in order.
    A position inside a replacement maps to the start of what it replaced."""

    original: str
    edits: list[tuple[int, int, int, int]] = field(default_factory=list)

    def position(self, pos: int) -> int:
        i = bisect.bisect_right([e[0] for e in self.edits], pos) - 1
        if i < 0:
            return pos
        new_start, new_end, old_start, old_end = self.edits[i]
        if pos < new_end:
            return old_start
        return old_end + (pos - new_end)

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based (line, column) in the original text of position `pos` of the new one."""
        old = min(self.position(pos), len(self.original))
        line = self.original.count("\n", 0, old) + 1
        col = old - (self.original.rfind("\n", 0, old) + 1) + 1
        return line, col


@dataclass(frozen=True)
class Substituted:
    """The text to parse, the parameters' values used, and the way back to the source."""

    text: str
    values: dict[str, int]
    source_map: SourceMap | None


def _location(text: str, filename: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"{filename}:{line}:{col}"


def _blank_comments_and_strings(text: str) -> str:
    """`text` with `//` comments and string literals' contents replaced by spaces (same
    length, newlines kept): the scan below then only sees code."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] not in '"\n':
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1)
            out[i + 1 : j] = " " * (j - i - 1)
            i = j + 1
            continue
        i += 1
    return "".join(out)


def _int_value(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise CompileError(f"parameter {name}: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        raise CompileError(f"parameter {name}: expected an integer, got {str(value)!r}")
    if len(text.lstrip("+-")) > MAX_DIGITS:
        raise CompileError(f"parameter {name}: {text} has more than {MAX_DIGITS} digits")
    return int(text)


def parse_defines(defines: Iterable[str]) -> dict[str, int]:
    """`-D NAME=VALUE` options (a comma-separated list in one option works too) as a
    dict; a malformed one is a `CompileError`."""
    out: dict[str, int] = {}
    for define in defines:
        for item in define.split(","):
            if not item.strip():
                continue
            name, sep, value = item.partition("=")
            name = name.strip()
            if not sep or not name:
                raise CompileError(f"-D {item}: expected NAME=VALUE")
            if name in out:
                raise CompileError(f"-D {name} given twice")
            out[name] = _int_value(name, value)
    return out


def _declaration(text: str, code: str, filename: str) -> tuple[int, int, dict[str, int]] | None:
    """(start, end, defaults) of the `params = {...}` dictionary, or None."""
    found = list(_DECLARATION.finditer(code))
    if not found:
        return None
    if len(found) > 1:
        raise CompileError(
            "parameters declared twice (one `params = {...}` per file)",
            location=_location(text, filename, found[1].start()),
        )
    start = found[0].end()
    end = code.find("}", start)
    if end < 0:
        raise CompileError(
            "`params = {` is not closed", location=_location(text, filename, found[0].start())
        )
    defaults: dict[str, int] = {}
    body = code[start:end]
    if not body.strip():  # `params = {}`
        return start, end, defaults
    pos = start
    for item in body.split(","):
        at = pos + len(item) - len(item.lstrip())
        pos += len(item) + 1
        m = _ENTRY.match(item)
        if m is None:
            raise CompileError(
                "expected NAME = <integer> in `params = {...}`",
                location=_location(text, filename, at),
            )
        name = m["name"]
        if _NAME_FULL.match(name) is None:
            raise CompileError(
                f"parameter name {name} must be upper case ([A-Z][A-Z0-9_]*), so that "
                f"tensor<${name}x64xbf16> reads unambiguously",
                location=_location(text, filename, at),
            )
        if name in defaults:
            raise CompileError(
                f"parameter {name} declared twice", location=_location(text, filename, at)
            )
        defaults[name] = _int_value(name, m["value"])
    return start, end, defaults


def substitute(
    text: str, filename: str, overrides: Mapping[str, object] | None = None
) -> Substituted:
    """Replace every `$NAME` by its value (the declared default or `overrides`) and
    rewrite the declaration to the values used. A text without parameters and without
    overrides comes back unchanged (`source_map` None)."""
    overrides = dict(overrides or {})
    code = _blank_comments_and_strings(text)
    declared = _declaration(text, code, filename)
    refs = list(_REFERENCE.finditer(code))
    if declared is None:
        if overrides:
            raise CompileError(
                f"the kernel declares no parameters, so {', '.join(sorted(overrides))} "
                "cannot be set (declare them: attributes {params = {NAME = <default>}})"
            )
        if refs:
            raise CompileError(
                f"parameter ${refs[0][1] or ''} used but the kernel declares no parameters "
                "(attributes {params = {NAME = <default>}})",
                location=_location(text, filename, refs[0].start()),
            )
        return Substituted(text, {}, None)
    start, end, defaults = declared
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise CompileError(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(the kernel declares {', '.join(defaults) or 'none'})"
        )
    values = {n: _int_value(n, overrides.get(n, v)) for n, v in defaults.items()}
    replacements: list[tuple[int, int, str]] = []
    declaration = ", ".join(f"{n} = {v}" for n, v in values.items())
    replacements.append((start, end, declaration))
    for m in refs:
        name = m[1]
        if name is None:
            raise CompileError(
                "expected a parameter name after '$'",
                location=_location(text, filename, m.start()),
            )
        # A reference ends where an upper-case name does: `$BLOCK_Mx64` is BLOCK_M.
        upper = NAME.match(name)
        name = upper[0] if upper is not None else name
        if name not in values:
            raise CompileError(
                f"unknown parameter ${name} (the kernel declares {', '.join(values) or 'none'})",
                location=_location(text, filename, m.start()),
            )
        replacements.append((m.start(), m.start() + 1 + len(name), str(values[name])))
    replacements.sort()
    smap = SourceMap(text)
    pieces: list[str] = []
    prev = 0
    length = 0
    for old_start, old_end, new in replacements:
        pieces.append(text[prev:old_start])
        length += old_start - prev
        smap.edits.append((length, length + len(new), old_start, old_end))
        pieces.append(new)
        length += len(new)
        prev = old_end
    pieces.append(text[prev:])
    return Substituted("".join(pieces), values, smap)
