"""What the MMAs of a kernel read and how their results flow: which loads are MMA
operands (read from shared memory by wgmma) and which are read by consumer math, which
dots read an aref's slots, which are pure accumulation chains (their wgmmas may stay in
flight across iterations), how many accumulator registers one MMA keeps in flight, and
whether MMA tiles split over consumer warp groups.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, Use

from tawac.dialects import aref, tile
from tawac.target import HOPPER


def is_mma_operand(use: Use) -> bool:
    """The use is an A or B operand of a `tile.dot` (read from shared memory by wgmma)."""
    return isinstance(use.operation, tile.DotOp) and use.index in (0, 1)


def mma_uses(op: Operation) -> list[bool] | None:
    """For a 2-d `tile.load`, whether each of its uses is an MMA operand; None for any
    other op."""
    if not isinstance(op, tile.LoadOp):
        return None
    t = op.result.type
    if not isinstance(t, TensorType) or t.get_num_dims() != 2:
        return None
    return [is_mma_operand(u) for u in op.result.uses]


def is_consumer_tile_load(op: Operation) -> bool:
    """A 2-d `tile.load` that no `tile.dot` reads as an A or B operand: its users are
    consumer math (elementwise ops, a dot's accumulator, loop-carried values)."""
    flags = mma_uses(op)
    return bool(flags) and not any(flags)


def is_mma_operand_load(op: Operation) -> bool:
    """A 2-d `tile.load` whose every use is an A or B operand of a `tile.dot`."""
    flags = mma_uses(op)
    return bool(flags) and all(flags)


def accumulates(dot: tile.DotOp, body: Block) -> bool:
    """Whether `dot` is a pure MMA accumulation chain: its result only goes to the yield,
    and the iter arg it is yielded into is only this dot's accumulator.  Only then may
    the MMA stay in flight across the back edge (wgmma accumulates in place; any other
    reader, such as attention's rescale O * alpha, needs the result awaited)."""
    uses = list(dot.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, scf.YieldOp):
        return False
    arg = body.args[1 + uses[0].index]
    return [(u.operation, u.index) for u in arg.uses] == [(dot, 2)]


def releasing_dots(consumed: aref.ConsumedOp) -> list[tile.DotOp]:
    """The dots in `consumed`'s block that read a slot of its aref."""
    block = consumed.parent_block()
    assert block is not None
    return [
        op
        for op in block.ops
        if isinstance(op, tile.DotOp)
        and any(
            isinstance(v.owner, aref.GetOp) and v.owner.aref == consumed.aref
            for v in (op.lhs, op.rhs)
        )
    ]


def deferred_dots(creates: list[aref.CreateOp], lags: list[int]) -> set[tile.DotOp]:
    """The dots that stay in flight across iterations: those reading a slot of an aref
    released with a lag."""
    out: set[tile.DotOp] = set()
    for c, lag in zip(creates, lags, strict=True):
        if not lag:
            continue
        for use in c.result.uses:
            if isinstance(use.operation, aref.ConsumedOp):
                out.update(releasing_dots(use.operation))
    return out


def can_release_late(consumed: aref.ConsumedOp) -> bool:
    """The slot may be released some iterations after its use: the loop's one MMA on it
    is a pure accumulation chain (GEMM's K loop), whose wgmmas may stay in flight."""
    block = consumed.parent_block()
    assert block is not None
    dots = releasing_dots(consumed)
    shared = any(
        isinstance(u.operation, aref.ConsumedOp) and u.operation.parent_block() is not block
        for u in consumed.aref.uses
    )  # a ring of loops one after the other: a later loop's producer would wait for it
    return (
        not shared
        and isinstance(block.parent_op(), scf.ForOp)
        and len(dots) == 1
        and accumulates(dots[0], block)
    )


def fragment_registers(dot: tile.DotOp) -> int:
    """32-bit registers per thread of one m64nN wgmma's accumulator (N at most 256):
    64 x N values over the warp group's 128 threads."""
    n = min(dot.mnk()[1], HOPPER.mma_max_n)
    bits = dot.result.type.element_type.bitwidth
    return HOPPER.mma_m * n * bits // 32 // HOPPER.warp_group_size


def dots_in(op: Operation) -> list[tile.DotOp]:
    """The dots nested in `op` (a partition), in walk order."""
    return [d for d in op.walk() if isinstance(d, tile.DotOp)]


def rows_problem(dots: list[tile.DotOp], warp_groups: int) -> tuple[str, tile.DotOp] | None:
    """Why the MMA tiles of `dots` cannot be split over `warp_groups` consumer warp groups
    (each needs whole m64 blocks: one wgmma covers 64 rows), with the dot at fault; or
    None."""
    for dot in dots:
        m = dot.mnk()[0]
        if m % (HOPPER.mma_m * warp_groups):
            if warp_groups == 1:
                return (
                    f"a {m}-row MMA tile is not a multiple of 64 rows (one wgmma instruction "
                    "covers 64)",
                    dot,
                )
            return (
                f"a {m}-row MMA tile cannot be split over {warp_groups} consumer warp groups "
                "(each needs a multiple of 64 rows)",
                dot,
            )
    return None
