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
  `attention-narrow`, the same loop on several warp groups with narrow heads: its MMAs'
  multiply-adds per exponential at most the tensor core's rate over the MUFU's
  (`narrow`: each unit as long busy per iteration, head dim 64 at 16-bit inputs on
  Hopper), where the H100 corpus measured the two planners the other way round from
  wider heads, whose MMAs outlast the exponentials (docs/perf.md, 2026-11-26, eighth
  part);
- `chained`: an MMA's A or B operand is computed from another MMA's result otherwise
  (back-to-back GEMMs, an MLP's two layers);
- `elementwise`: no MMA in the loop (consumer math on streamed tiles);
- `other`: no consumer main loop, or MMAs fed by slots with softmax-like math beside them.

Only the kernel's first consumer main loop is classified (the one the planners
pipeline); an MMA after the loop (a GEMM chained to a second one outside its K loop)
leaves the loop a `gemm`.
"""

from __future__ import annotations

from math import prod as math_prod

from xdsl.dialects import math, scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation

from tawac.analysis.loops import in_loop, main_loops
from tawac.dialects import aref, tile
from tawac.target import HOPPER, Target

#: Every kind, in the order of `Target.planner_preference`.
KINDS = (
    "gemm",
    "attention",
    "attention-1wg",
    "attention-narrow",
    "chained",
    "elementwise",
    "other",
)

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


def tile_exponentials(op: Operation) -> list[Operation]:
    """The exponentials of a 2-D tile among `op` and the ops nested in it (a softmax's
    `exp2` of the scores; not a row vector's, nor a scalar's)."""
    return [
        o
        for o in op.walk()
        if isinstance(o, _EXP)
        and isinstance(o.result.type, TensorType)
        and len(o.result.type.get_shape()) == 2
    ]


def _macs(dot: tile.DotOp) -> int:
    """`dot`'s multiply-adds: M x N x K."""
    m, n = dot.result.type.get_shape()
    lhs = dot.lhs.type.get_shape()
    return m * n * (lhs[0] if dot.transpose_lhs is not None else lhs[1])


def narrow(body: Block, target: Target = HOPPER) -> bool:
    """Whether an attention body's MMAs do at most as many multiply-adds per element of
    its tile exponentials as the tensor core does per MUFU exponential (`target`'s
    rates: wgmma m64n256k16 at 16-bit inputs, twice that at 8-bit; ex2): the MMAs take
    the tensor core no longer than the exponentials take the MUFU."""
    dots = [o for top in body.ops for o in top.walk() if isinstance(o, tile.DotOp)]
    exps = [o for top in body.ops for o in tile_exponentials(top)]
    elements = sum(math_prod(o.result.type.get_shape()) for o in exps)
    if not dots or not elements:
        return False
    wgmma = target.cost("wgmma m64n256k16 bf16")
    rate = 64 * 256 * 16 * wgmma.throughput
    if dots[0].lhs.type.element_type.bitwidth == 8:
        rate *= 2  # k32 per wgmma at 8-bit inputs (PTX ISA 9.7.15.5.1)
    ex2 = target.cost("ex2.approx.ftz.f32").throughput
    return sum(map(_macs, dots)) * ex2 <= rate * elements


def loop_kind(loop: scf.ForOp) -> str:
    """The kind of a consumer main loop (module docstring; `attention-1wg` is told by the
    schedule's warp groups, `kernel_kind`)."""
    body = loop.body.block
    dots = [o for top in body.ops for o in top.walk() if isinstance(o, tile.DotOp)]
    if not dots:
        return "elementwise"
    chains = [s for s in (_operand_slice(d, body) for d in dots) if any(map(_is_dot, s))]
    if any(_softmax_like(s) for s in chains):
        return "attention-narrow" if narrow(body) else "attention"
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
            attention = kind in ("attention", "attention-narrow")
            return "attention-1wg" if attention and warp_groups == 1 else kind
    return "other"


def streams_tiles(kernel: tile.KernelOp) -> bool:
    """Whether `kernel` (partitioned or not) loads 2-d tiles in a loop and runs no MMA: a
    row softmax, a norm, a column sum over column or row blocks; memory-bound, its rings
    sized for the bytes they keep in flight, not for an MMA's pace
    (`tawac.schedule.planner.ROWS_DEPTH`), and not widened (`tawac.schedule.widen`)."""
    looped = False
    for op in kernel.walk():
        if isinstance(op, tile.DotOp):
            return False
        t = op.result.type if isinstance(op, tile.LoadOp) else None
        if isinstance(t, TensorType) and t.get_num_dims() == 2:
            looped = looped or in_loop(op)
    return looped


def schedule_kind(kernel: tile.KernelOp, s) -> str:
    """`kernel_kind` with the consumer warp groups of schedule `s` (a
    `tawac.dialects.schedule.Schedule`)."""
    consumer = s.role("consumer")
    return kernel_kind(kernel, consumer.warp_groups if consumer is not None else None)
