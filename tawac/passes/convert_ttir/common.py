"""What every part of `convert-ttir` uses: its errors, located at the TTIR op's Python line,
and the element types of values."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float32Type,
    IntAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation, SSAValue

from tawac.ir.ttir import python_location
from tawac.support.diagnostics import CompileError


def _error(message: str, op: Operation | None) -> CompileError:
    where = python_location(op) if op is not None else None
    return CompileError(f"convert-ttir: {message}", location=where)


def _located(new: Operation, old: Operation) -> Operation:
    """`new` at the Python line of the TTIR op `old` (where a later pass's error about
    it points), where `old` has one."""
    where = python_location(old)
    if where is not None:
        file, line, col = where.rsplit(":", 2)
        new.location = FileLineColLoc(StringAttr(file), IntAttr(int(line)), IntAttr(int(col)))
    return new


def _name(op) -> str:
    return op.name if isinstance(op, Operation) else "a block argument"


def _op(v: SSAValue) -> Operation | None:
    return v.owner if isinstance(v.owner, Operation) else None


def _elem(t):
    return t.element_type if isinstance(t, TensorType) else t


def _is_f32(v: SSAValue) -> bool:
    return isinstance(_elem(v.type), Float32Type)


def _is_float(v: SSAValue) -> bool:
    return isinstance(_elem(v.type), AnyFloat)


def _float_result(em, op: Operation) -> bool:
    """A row's condition: the op makes a float value (not an index tensor)."""
    return _is_float(op.result)


def _splat(v: DenseIntOrFPElementsAttr) -> tuple[bool, object]:
    """`v.is_splat()` and `v.get_values()[0]`, without unpacking every element (bf16's
    one by one in Python) where `v` holds floats whose bytes are its first element's
    repeated: those are equal values, but for NaN (no splat: unequal to itself)."""
    elem = v.get_element_type()
    data = v.data.data
    if isinstance(elem, AnyFloat):
        size = elem.compile_time_size
        first = data[:size]
        if len(first) == size and data == first * (len(data) // size):
            x = elem.unpack(first, 1)[0]
            if x == x:
                return True, x
    values = v.get_values()
    return values.count(values[0]) == len(values), values[0]
