"""What kind of work a kernel's consumer main loop does, coarsely: the classes the
target's measured planner preference is kept by (`Target.planner_preference`, read by the
`auto` planner when its cost model cannot tell two schedules apart).

The kinds (`KINDS`), of one iteration of the loop's body:

- `gemm`: its MMAs read their A and B operands from arefs' slots (one MMA, or several
  accumulating: a K loop unrolled, two accumulators), with no exponential or row
  reduction in the body;
- `attention`: an MMA's A or B operand is computed from another MMA's result through an
  exponential and a row reduction (softmax: FlashAttention's P V after Q K^T), run by
  several consumer warp groups; `attention-1wg`, the same loop run by one (64-row query
  blocks: no other warp group's MMAs fill the tensor core while one computes its
  softmax, so the order within the warp group's own iteration decides, and the two
  planners' schedules measure differently: docs/perf.md, 2026-11-26);
- `chained`: an MMA's A or B operand is computed from another MMA's result otherwise
  (back-to-back GEMMs, an MLP's two layers);
- `elementwise`: no MMA in the loop (consumer math on streamed tiles);
- `other`: no consumer main loop, or MMAs fed by slots with softmax-like math beside them.

Only the kernel's first consumer main loop is classified (the one the planners
pipeline); an MMA after the loop (a GEMM chained to a second one outside its K loop)
leaves the loop a `gemm`.
"""

from __future__ import annotations

from xdsl.dialects import math, scf
from xdsl.ir import Block, Operation

from tawac.analysis.loops import main_loops
from tawac.dialects import aref, tile

#: Every kind, in the order of `Target.planner_preference`.
KINDS = ("gemm", "attention", "attention-1wg", "chained", "elementwise", "other")

_EXP = (math.ExpOp, math.Exp2Op)


def _operand_slice(dot: tile.DotOp, body: Block) -> set[Operation]:
    """The body's top-level ops that compute `dot`'s A and B operands within the same
    iteration (not through the loop's iteration arguments)."""
    found: set[Operation] = set()
    work = [dot.lhs, dot.rhs]
    while work:
        owner = work.pop().owner
        if not isinstance(owner, Operation):
            continue  # a block argument: an iteration argument, or a region's own
        top = body.find_ancestor_op_in_block(owner)
        if top is None or top in found:
            continue
        found.add(top)
        work.extend(v for inner in top.walk() for v in inner.operands)
    return found


def _softmax_like(ops: set[Operation] | list[Operation]) -> bool:
    """An exponential and a row reduction among `ops` (nested ops included)."""
    inner = [o for op in ops for o in op.walk()]
    return any(isinstance(o, _EXP) for o in inner) and any(
        isinstance(o, tile.ReduceOp) for o in inner
    )


def _is_dot(op: Operation) -> bool:
    """`op` is an MMA or holds one."""
    return any(isinstance(o, tile.DotOp) for o in op.walk())


def loop_kind(loop: scf.ForOp) -> str:
    """The kind of a consumer main loop (module docstring)."""
    body = loop.body.block
    dots = [o for top in body.ops for o in top.walk() if isinstance(o, tile.DotOp)]
    if not dots:
        return "elementwise"
    chains = [s for s in (_operand_slice(d, body) for d in dots) if any(map(_is_dot, s))]
    if any(_softmax_like(s) for s in chains):
        return "attention"
    if chains:
        return "chained"
    return "other" if _softmax_like(list(body.ops)) else "gemm"


def kernel_kind(kernel: tile.KernelOp, warp_groups: int | None = None) -> str:
    """The kind of the partitioned kernel's first consumer main loop; `other` without
    one. `warp_groups`: the consumer warp groups the schedule gives it, where known
    (an attention loop on one is `attention-1wg`)."""
    for part in kernel.body.block.ops:
        if isinstance(part, aref.PartitionOp) and part.role.data == "consumer":
            loops = main_loops(part)
            kind = loop_kind(loops[0]) if loops else "other"
            return "attention-1wg" if kind == "attention" and warp_groups == 1 else kind
    return "other"


def schedule_kind(kernel: tile.KernelOp, s) -> str:
    """`kernel_kind` with the consumer warp groups of schedule `s` (a
    `tawac.dialects.schedule.Schedule`)."""
    consumer = s.role("consumer")
    return kernel_kind(kernel, consumer.warp_groups if consumer is not None else None)
