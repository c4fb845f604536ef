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
from tawac.passes.lower_aref import consumer_budget
from tawac.target import HOPPER

# Registers a consumer thread needs beside one MMA's accumulator fragment, which ptxas
# must hold in registers all at once (it cannot spill a wgmma's operands). Measured with
# ptxas 13.0 at 160 registers: fragments of 96 registers (m64n192 f32) assemble, 112
# (m64n224) fail with C7602 "Insufficient registers", in GEMMs and in attention alike.
MMA_RESERVE = 64


def fragment_registers(dot: tile.DotOp) -> int:
    """32-bit registers per thread of one m64nN wgmma's accumulator (N at most 256):
    64 x N values over the warp group's 128 threads."""
    n = min(dot.mnk()[1], HOPPER.mma_max_n)
    bits = dot.result.type.element_type.bitwidth
    return HOPPER.mma_m * n * bits // 32 // HOPPER.warp_group_size


def register_problem(dots: list[tile.DotOp], w: int) -> str | None:
    """Why `w` consumer warp groups cannot hold these MMAs' accumulators, or None."""
    worst = max(dots, key=fragment_registers, default=None)
    if worst is None:
        return None
    need, budget = fragment_registers(worst), consumer_budget(w)
    if need + MMA_RESERVE <= budget:
        return None
    return (
        f"an MMA with {worst.mnk()[1]} columns keeps {need} accumulator registers per "
        f"thread in flight; {w} consumer warp groups get {budget} registers each, room "
        f"for at most {budget - MMA_RESERVE}"
    )


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
                w = _choose(part)
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
            problem = register_problem([d for d in part.walk() if isinstance(d, tile.DotOp)], w)
            if problem is not None:
                raise CompileError(f"cooperative-consumers: {problem}; use fewer", part)
            part.warp_groups = IntAttr(w)


def _choose(part: aref.PartitionOp) -> int:
    """The most of 3, 2, 1 warp groups that split every MMA tile into whole m64 blocks
    and leave room in registers for each MMA's accumulator (else the fewest that split
    the tiles)."""
    dots = [d for d in part.walk() if isinstance(d, tile.DotOp)]
    for dot in dots:
        m = dot.mnk()[0]
        if m % 64:
            raise CompileError(
                f"cooperative-consumers: a {m}-row MMA tile is not a multiple of 64 rows "
                "(one wgmma instruction covers 64)",
                dot,
            )
    splits = [n for n in (3, 2, 1) if all(d.mnk()[0] % (64 * n) == 0 for d in dots)]
    return next((n for n in splits if register_problem(dots, n) is None), splits[-1])
