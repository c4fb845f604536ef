"""`pingpong`: the two consumer warp groups take turns on the tensor core, where
`#tawac.schedule` says `turns` (run after `lower-aref`).

In a consumer loop that issues more than one MMA per iteration with other work between
them (attention: S = QK^T, softmax, O += PV), both warp groups otherwise wait on the
same barriers, issue their MMAs together, and then both run their softmax while the
tensor core idles.  With turns, warp group w waits for its turn before the first MMA of
an iteration and hands the turn over right after issuing it (or, when more MMAs follow
before any wait, after the last of those): the MMAs of the two groups
alternate, and one group's softmax runs under the other's MMAs (FlashAttention-3's
inter-warpgroup schedule).  Turns are hopper.turn ops on named barriers; `init` before
the loop and `end` after it make the arrivals and waits pair up.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.dialects import aref, hopper, tile


def _candidate(loop: scf.ForOp) -> tuple[hopper.WgmmaOp, hopper.WgmmaOp] | None:
    """In a loop body with at least two wgmmas: the first, and the last one issued before
    any wait (coarse-pipelined attention issues S_j and P_{j-1} V_{j-1} back to back:
    the turn covers both); None otherwise."""
    ops = list(loop.body.block.ops)
    mmas = [o for o in ops if isinstance(o, hopper.WgmmaOp)]
    if len(mmas) < 2:
        return None
    last = mmas[0]
    for o in ops[ops.index(mmas[0]) + 1 :]:
        if isinstance(o, hopper.WgmmaWaitOp):
            break
        if isinstance(o, hopper.WgmmaOp):
            last = o
    return mmas[0], last


@dataclass(frozen=True)
class PingpongPass(ModulePass):
    name = "pingpong"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            if not schedule.planned(kernel, "pingpong").turns:
                continue
            for part in kernel.body.block.ops:
                if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
                    continue
                if part.warp_groups.data != 2:
                    continue
                for loop in [o for o in part.walk() if isinstance(o, scf.ForOp)]:
                    found = _candidate(loop)
                    if found is None:
                        continue
                    first, last = found
                    Rewriter.insert_op(hopper.TurnOp("wait"), InsertPoint.before(first))
                    Rewriter.insert_op(hopper.TurnOp("pass"), InsertPoint.after(last))
                    Rewriter.insert_op(hopper.TurnOp("init"), InsertPoint.before(loop))
                    Rewriter.insert_op(hopper.TurnOp("end"), InsertPoint.after(loop))
