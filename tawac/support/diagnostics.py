"""Errors that reach the user as one diagnostic line: `file:line:col: error: message`.

Imports no xDSL at module import: the command line's warm path (a compile-cache hit)
raises and prints these errors without loading the compiler."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.ir import Operation


def location_of(op: Operation | None) -> str | None:
    """`file:line:col` of an op parsed from a file, or of its nearest located ancestor."""
    if op is None:
        return None
    from xdsl.dialects.builtin import FileLineColLoc  # an op exists: xDSL is loaded

    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return None


class CompileError(Exception):
    """A user-facing compilation error, optionally attached to the op that caused it."""

    def __init__(self, message: str, op: Operation | None = None, location: str | None = None):
        super().__init__(message)
        self.message = message
        self.op = op
        self.location = location if location is not None else location_of(op)

    def __str__(self) -> str:
        if self.location is not None:
            return f"{self.location}: error: {self.message}"
        return f"error: {self.message}"
