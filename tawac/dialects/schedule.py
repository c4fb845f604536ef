"""The `tawac` dialect: the schedule a kernel was compiled with, as one typed attribute.

    tile.kernel @gemm(...) attributes {tawac.schedule = #tawac.schedule<stages = 3,
        mma_depth = 0, smem_bytes = 214016, program_grid = [...]>} { ... }

Passes record their decisions here (`tawac.schedule.of` / `tawac.schedule.update`)
instead of in loose attributes; `tawac opt` prints and parses it, so FileCheck tests can
check a decision. A field not decided yet is absent.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntAttr, NoneAttr
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

# The integer fields, in printing order.
INT_FIELDS = ("stages", "mma_depth", "smem_bytes")


@irdl_attr_definition
class ScheduleAttr(ParametrizedAttribute):
    """`#tawac.schedule<stages = D, mma_depth = P, smem_bytes = B, program_grid = G>`:
    the ring depth of looped arefs (D), wgmma groups kept in flight (P), the CTA's
    dynamic shared memory (B), and for a persistent kernel the grid of programs it
    loops over (G, the launch ABI's grid form); absent fields are undecided."""

    name = "tawac.schedule"

    stages: IntAttr | NoneAttr
    mma_depth: IntAttr | NoneAttr
    smem_bytes: IntAttr | NoneAttr
    program_grid: Attribute

    @staticmethod
    def make(
        stages: int | None = None,
        mma_depth: int | None = None,
        smem_bytes: int | None = None,
        program_grid: Attribute | None = None,
    ) -> ScheduleAttr:
        def opt(v: int | None) -> IntAttr | NoneAttr:
            return IntAttr(v) if v is not None else NoneAttr()

        grid = program_grid if program_grid is not None else NoneAttr()
        return ScheduleAttr(opt(stages), opt(mma_depth), opt(smem_bytes), grid)

    def get(self, field: str) -> int | None:
        v = getattr(self, field)
        return v.data if isinstance(v, IntAttr) else None

    @property
    def persistent(self) -> bool:
        return not isinstance(self.program_grid, NoneAttr)

    def fields(self) -> dict[str, int | Attribute]:
        out: dict[str, int | Attribute] = {
            f: v for f in INT_FIELDS if (v := self.get(f)) is not None
        }
        if self.persistent:
            out["program_grid"] = self.program_grid
        return out

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        values: dict[str, int | Attribute] = {}
        with parser.in_angle_brackets():
            key = parser.parse_optional_identifier()
            while key is not None:
                if key not in (*INT_FIELDS, "program_grid") or key in values:
                    parser.raise_error(f"unknown or repeated schedule field '{key}'")
                parser.parse_punctuation("=")
                if key == "program_grid":
                    values[key] = parser.parse_attribute()
                else:
                    values[key] = parser.parse_integer(allow_boolean=False, allow_negative=False)
                if parser.parse_optional_punctuation(",") is None:
                    break
                key = parser.parse_identifier(" (a schedule field)")
        made = cls.make(**values)  # type: ignore[arg-type]
        return (made.stages, made.mma_depth, made.smem_bytes, made.program_grid)

    def print_parameters(self, printer: Printer) -> None:
        parts = [f"{f} = {v}" for f, v in self.fields().items() if isinstance(v, int)]
        printer.print_string("<" + ", ".join(parts))
        if self.persistent:
            printer.print_string(", " if parts else "")
            printer.print_string("program_grid = ")
            printer.print_attribute(self.program_grid)
        printer.print_string(">")

    def verify(self) -> None:
        for f in INT_FIELDS:
            v = self.get(f)
            if v is not None and v < 0:
                raise VerifyException(f"#tawac.schedule {f} must be >= 0, got {v}")


Schedule = Dialect("tawac", [], [ScheduleAttr])
