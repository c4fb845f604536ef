"""`cooperative-consumers{warp-groups=2}`: several consumer warp groups share each tile
(Tawa section 4.5).

The consumer partition gets `warp-groups` warp groups; every tile in it is split along
its rows, warp group w owning rows [w*M/W, (w+1)*M/W), so that a 128x256 fp32
accumulator takes 128 registers per thread instead of 256.  The split itself is a
register layout decision (`tawac.backend_ptx.layouts`): this pass sets the count and
checks that every MMA tile can be split into m64 blocks per warp group.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.passes import ModulePass

from tawac.diagnostics import CompileError
from tawac.dialects import aref, tile


@dataclass(frozen=True)
class CooperativeConsumersPass(ModulePass):
    name = "cooperative-consumers"

    warp_groups: int = 2
    """Consumer warp groups; 0 picks the most of 3, 2, 1 that splits every MMA tile into
    whole m64 blocks (192 rows: 3 groups of 64, 128: 2 of 64, 256: 2 of 128): more warps
    per scheduler hide more latency, and a smaller share of the tile needs fewer
    registers per thread."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        w = self.warp_groups
        if w < 0 or w > 3:
            raise CompileError(f"cooperative-consumers: warp-groups must be 0..3, got {w}")
        for part in op.walk():
            if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
                continue
            if self.warp_groups == 0:
                rows = [d.mnk()[0] for d in part.walk() if isinstance(d, tile.DotOp)]
                w = next(n for n in (3, 2, 1) if all(m % (64 * n) == 0 for m in rows))
            for dot in part.walk():
                if not isinstance(dot, tile.DotOp):
                    continue
                m, _, _ = dot.mnk()
                if m % (64 * w):
                    raise CompileError(
                        f"cooperative-consumers: a {m}-row MMA tile cannot be split over {w} "
                        f"consumer warp groups (each needs a multiple of 64 rows)",
                        dot,
                    )
            part.warp_groups = IntAttr(w)
