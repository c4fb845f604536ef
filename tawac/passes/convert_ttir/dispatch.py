"""The table of converters: per TTIR op class, the functions that convert its ops into the
tile kernel, each with the condition under which it takes an op (`when`). A construct's
module adds its rows with `@converts(...)`; adding a construct is adding a row.

An op is converted by the first row whose condition holds: the rows of its class, in the
order they were added, then the rows added for `Operation`, which take what no row of the
op's class took (float arith and math ops copied, the index work the plan rebuilds
dropped: `tawac.passes.convert_ttir.elementwise`). An op no row takes is refused. The rows
of one class are kept in one module, in the order they are tried."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.ir import Block, Operation

from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.emitter import _Emitter

#: A converter: the TTIR op's tile-kernel ops added to the emitter's block.
Converter = Callable[[_Emitter, Any], None]
#: The condition under which a row takes an op.
Condition = Callable[[_Emitter, Any], bool]

#: Per TTIR op class, its rows: (condition, None for every op; converter), tried in order.
CONVERTERS: dict[type[Operation], list[tuple[Condition | None, Converter]]] = {}


def converts(*classes: type[Operation], when: Condition | None = None):
    """A decorator: the function converts the ops of `classes` (those for which `when`
    holds, where given)."""

    def add(converter: Converter) -> Converter:
        for cls in classes:
            CONVERTERS.setdefault(cls, []).append((when, converter))
        return converter

    return add


def _body(em: _Emitter, block: Block) -> None:
    """Each op of the TTIR block `block` converted, in order, by its row of `CONVERTERS`."""
    for op in block.ops:
        for cls in type(op).__mro__:
            rows = CONVERTERS.get(cls, ())
            converter = next((c for when, c in rows if when is None or when(em, op)), None)
            if converter is not None:
                converter(em, op)
                break
        else:
            raise _error(f"{op.name} is not supported", op)
