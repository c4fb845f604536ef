"""The search space of `tawac tune` (`tawac.tools.tune`): each `--space NAME=V1,V2,...` is
one axis, a pipeline knob (a row of `tawac.support.options.KNOBS`, `mma-depth` or
`mma_depth`) or a kernel parameter (an upper-case name the kernel declares); the
candidates are their cartesian product, first axis slowest. Pure functions: no compiler,
no GPU."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tawac.support.diagnostics import CompileError
from tawac.support.options import KNOBS, knob

#: More candidates than this is a space to split (each one is a compile and a timing).
MAX_CANDIDATES = 512
#: Relative error to the float32 reference above which a candidate is a wrong result.
TOLERANCE = 2e-2

#: Kernel parameter names, as tawac.support.params declares them.
_PARAM_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_INT = re.compile(r"[+-]?\d{1,12}\Z")


# --------------------------------------------------------------------------- the space


@dataclass(frozen=True)
class Axis:
    """One `--space`: a pipeline knob (`name` is its Python name) or a kernel parameter,
    and the values to try."""

    name: str
    kind: str  # "option" or "param"
    values: tuple


@dataclass(frozen=True)
class Candidate:
    """A configuration: the kernel parameters and pipeline options it sets (the others
    keep their defaults; the default configuration sets none)."""

    params: dict[str, int] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def is_default(self) -> bool:
        return not self.params and not self.options

    def label(self) -> str:
        if self.is_default:
            return "default"
        items = [*self.params.items(), *self.options.items()]
        return " ".join(f"{k}={_spelled(v)}" for k, v in items)


def _spelled(v: object) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def parse_space(items: Sequence[str]) -> list[Axis]:
    """The `--space NAME=V1,V2,...` options as axes, in the order given. A NAME that is a
    pipeline knob (hyphens or underscores) takes that knob's values (`Knob.parse`:
    booleans true, false, 1, 0); any other is a kernel parameter (integers)."""
    axes: list[Axis] = []
    seen: set[str] = set()
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CompileError(f"--space expects NAME=V1,V2,..., got '{item}'")
        option = knob(name)
        if option is not None:
            kind, key = "option", option.name
        elif _PARAM_NAME.match(name) is not None:
            kind, key = "param", name
        else:
            options = ", ".join(k.option for k in KNOBS)
            raise CompileError(
                f"--space {name}: not a pipeline option ({options}) nor a kernel parameter "
                "(parameter names are upper case: [A-Z][A-Z0-9_]*)"
            )
        if key in seen:
            raise CompileError(f"--space {name} given twice (list its values in one --space)")
        seen.add(key)
        words = [w.strip() for w in text.split(",")]
        if not text.strip():
            raise CompileError(f"--space {name}: no values")
        if any(not w for w in words):
            raise CompileError(f"--space {name}: empty value in '{text}'")
        if option is not None:
            try:
                values = [option.parse(w) for w in words]
            except ValueError as e:
                raise CompileError(f"--space {name}: {e}") from None
        else:
            if any(_INT.match(w) is None for w in words):
                bad = next(w for w in words if _INT.match(w) is None)
                raise CompileError(f"--space {name}: expected an integer, got '{bad}'")
            values = [int(w) for w in words]
        for i, v in enumerate(values):
            if v in values[:i]:
                raise CompileError(f"--space {name}: value {_spelled(v)} given twice")
        axes.append(Axis(key, kind, tuple(values)))
    return axes


def space_size(axes: Sequence[Axis]) -> int:
    return math.prod(len(a.values) for a in axes)


def enumerate_candidates(axes: Sequence[Axis]) -> list[Candidate]:
    """The cartesian product of the axes, the first axis varying slowest (no axes: one
    candidate, the default configuration)."""
    count = space_size(axes)
    if count > MAX_CANDIDATES:
        sizes = " x ".join(str(len(a.values)) for a in axes)
        raise CompileError(
            f"the space has {count} candidates ({sizes}), more than {MAX_CANDIDATES}: "
            "tune fewer values at once (fix the axes already settled, then tune the rest)"
        )
    out: list[Candidate] = []
    for combo in itertools.product(*(a.values for a in axes)):
        params = {a.name: v for a, v in zip(axes, combo, strict=True) if a.kind == "param"}
        options = {a.name: v for a, v in zip(axes, combo, strict=True) if a.kind == "option"}
        out.append(Candidate(params, options))
    return out
