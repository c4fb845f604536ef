"""Whether a kernel can realize a schedule: each check written once, run once, by `plan`,
on every schedule (a planner's, or one written on the kernel), before any pass applies
it. The passes after `plan` apply the schedule and check nothing of it.

A failed check is one located `CompileError` naming what is at fault; its prefix names
the part of the pipeline the decision belongs to (`cooperative-consumers:` for roles,
`pipeline:` for release lags, `coarse-pipeline:` for loop schedules, `tma-store:` for
store staging).
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tawac.analysis import remat
from tawac.analysis.arefs import rereads
from tawac.analysis.loops import main_loops, scheduled_ops
from tawac.analysis.mma import can_release_late, dots_in, fragment_registers, rows_problem
from tawac.analysis.stores import store_after_loops, tma_storable
from tawac.analysis.tile_layouts import layout_problem
from tawac.dialects import aref, hopper, tile
from tawac.dialects.schedule import LoopPlan, Schedule
from tawac.schedule import reread_arefs
from tawac.schedule.chain import chain_problem
from tawac.schedule.smem import SmemPlan, chunk_ring_fits, staging_ring_type
from tawac.schedule.waits import awaited_dots, due
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER

#: Registers a consumer thread needs beside one MMA's accumulator fragment, which ptxas
#: must hold in registers all at once (it cannot spill a wgmma's operands). Measured with
#: ptxas 13.0 at 160 registers: fragments of 96 registers (m64n192 f32) assemble, 112
#: (m64n224) fail with C7602 "Insufficient registers", in GEMMs and in attention alike.
MMA_RESERVE = 64

#: Registers beside an MMA's accumulator fragment that ptxas needs under the kernel's own
#: register target (what `.minnctapersm` and the block size leave a thread at entry,
#: whatever `setmaxnreg` gives a partition later). Measured with ptxas 13.0: an m64n256
#: f32 fragment (128 registers) at a target of 128 (two CTAs of 256 threads a SM) fails
#: with C7602 "Try to compile with register target of 154 or higher".
TARGET_RESERVE = 26


def check(kernel: tile.KernelOp, s: Schedule) -> None:
    """Raise the error of the first part of `s` that `kernel` cannot realize."""
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    check_roles(kernel, parts, s)
    check_arefs(kernel, s)
    check_loops(kernel, parts, s)
    check_stores(kernel, parts, s)


# -- roles ----------------------------------------------------------------------------------


def register_problem(dots: list[tile.DotOp], w: int, budget: int) -> str | None:
    """Why `w` consumer warp groups at `budget` registers per thread cannot hold these
    MMAs' accumulators, or None."""
    worst = max(dots, key=fragment_registers, default=None)
    if worst is None:
        return None
    need = fragment_registers(worst)
    if need + MMA_RESERVE <= budget:
        return None
    return (
        f"an MMA with {worst.mnk()[1]} columns keeps {need} accumulator registers per "
        f"thread in flight; {w} consumer warp groups get {budget} registers each, room "
        f"for at most {budget - MMA_RESERVE}"
    )


def target_problem(dots: list[tile.DotOp], warp_groups: int, ctas: int) -> str | None:
    """Why the register target of `warp_groups` warp groups in all (`ctas` CTAs a SM) is
    too low for these MMAs' largest accumulator fragment (`TARGET_RESERVE`), or None."""
    worst = max(dots, key=fragment_registers, default=None)
    if worst is None:
        return None
    need = fragment_registers(worst) + TARGET_RESERVE
    target = HOPPER.register_cap(warp_groups, ctas)
    if need <= target:
        return None
    return (
        f"an MMA with {worst.mnk()[1]} columns needs {need} registers per thread in one "
        f"instruction; {warp_groups} warp groups at {ctas} CTAs a SM enter with {target}"
    )


def check_roles(kernel: tile.KernelOp, parts: list[aref.PartitionOp], s: Schedule) -> None:
    """The roles are the kernel's partitions, in order; every consumer MMA tile splits into
    m64 blocks per warp group and its accumulator fragment fits the budget; the budgets
    fit the register file."""
    if [p.role.data for p in parts] != [r.role for r in s.roles]:
        raise CompileError(
            "cooperative-consumers: the schedule's roles "
            f"({', '.join(r.role for r in s.roles)}) are not the kernel's partitions "
            f"({', '.join(p.role.data for p in parts)})",
            kernel,
        )
    for part, role in zip(parts, s.roles, strict=True):
        if role.role != "consumer":
            continue
        dots = dots_in(part)
        rows = rows_problem(dots, role.warp_groups)
        if rows is not None:
            raise CompileError(f"cooperative-consumers: {rows[0]}", rows[1])
        tiles = layout_problem(part, role.warp_groups, kernel)
        if tiles is not None:
            raise CompileError(f"cooperative-consumers: {tiles[0]}; use fewer", tiles[1])
        problem = register_problem(dots, role.warp_groups, role.regs)
        if problem is not None:
            raise CompileError(f"cooperative-consumers: {problem}; use fewer", part)
    wgs = sum(r.warp_groups for r in s.roles)
    for part in parts:
        problem = target_problem(dots_in(part), wgs, s.ctas_per_sm)
        if problem is not None:
            raise CompileError(f"plan: {problem}; use fewer CTAs a SM or warp groups", part)
    total = HOPPER.register_cap(wgs, s.ctas_per_sm) * wgs
    used = sum(r.regs * r.warp_groups for r in s.roles)
    if used > total:
        raise CompileError(
            f"lower-aref: register budgets add up to {used} per thread slot over {wgs} warp "
            f"groups, more than the {total} that {HOPPER.warp_group_size * wgs} threads can hold",
            kernel,
        )


# -- arefs ----------------------------------------------------------------------------------


def _check_rereads(kernel: tile.KernelOp, s: Schedule) -> None:
    """`reread` only on an aref of a kernel without MMAs, held plainly (not resident, no
    lag, no multicast), whose slot a consumer block computes a value from that is used
    after a row reduction (`tawac.analysis.remat`)."""
    marked = reread_arefs(kernel, s)
    if not marked:
        return
    mma = any(isinstance(o, tile.DotOp) for o in kernel.walk())
    plans = remat.consumer_plans(kernel, lambda g: g.aref in marked)
    read = {g.aref for r in plans for g in r.gets}
    for create in kernel.walk():
        if not isinstance(create, aref.CreateOp) or create.result not in marked:
            continue
        plan = s.aref(create.ident)
        assert plan is not None
        why = None
        if mma:
            why = "the kernel runs MMAs, whose operands stay in shared memory"
        elif plan.resident or plan.lag or plan.multicast:
            why = "its slots are held by another rule of the schedule (resident, lag or multicast)"
        elif create.result not in read:
            why = (
                "no consumer block computes a value from its slot that is used after a row "
                "reduction, with one get and one plain release of the aref in that block"
            )
        if why is not None:
            raise CompileError(
                f"reread-slots: aref '{create.ident}' is reread in the schedule, but {why}", create
            )


def check_arefs(kernel: tile.KernelOp, s: Schedule) -> None:
    """Every aref has one entry, named by its identity, and no entry names an aref the
    kernel lacks; a release lag only where the slot's one MMA is a pure accumulation
    chain (its wgmmas may stay in flight); `resident` only on an aref whose later loops
    re-read its first loop's tiles (`rereads`), without a lag, and its `hold` below its
    depth."""
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    names = {c.ident for c in creates}
    for a in s.arefs:
        if a.name not in names:
            raise CompileError(
                f"plan: the schedule names aref '{a.name}', which the kernel does not have "
                f"(its arefs: {', '.join(sorted(n or '?' for n in names))})",
                kernel,
            )
    for create in creates:
        plan = s.aref(create.ident)
        if plan is None:
            raise CompileError(f"plan: the schedule has no entry for aref '{create.ident}'", create)
        if plan.resident and isinstance(why := rereads(create), str):
            raise CompileError(
                f"reuse-slots: aref '{create.ident}' is resident in the schedule, but {why}",
                create,
            )
        if plan.resident and plan.multicast:
            raise CompileError(
                f"reuse-slots: aref '{create.ident}' is resident in the schedule and loaded "
                "by multicast; a cluster's rings are not kept on chip yet",
                create,
            )
        if plan.hold and not (plan.resident and 0 < plan.hold < plan.depth):
            raise CompileError(
                f"reuse-slots: aref '{create.ident}' holds {plan.hold} slots in the schedule; "
                f"a hold needs a resident aref and keeps 1 to {plan.depth - 1} of its "
                f"{plan.depth} slots (the others stream)",
                create,
            )
        if plan.resident and plan.lag:
            raise CompileError(
                f"reuse-slots: aref '{create.ident}' is resident in the schedule, which "
                "holds its slots to the last loop; it cannot also release them late (lag)",
                create,
            )
        if not plan.lag:
            continue
        for use in create.result.uses:
            consumed = use.operation
            if isinstance(consumed, aref.ConsumedOp) and not can_release_late(consumed):
                raise CompileError(
                    f"pipeline: a release lag of {plan.lag} needs the slot's one MMA to be a "
                    "pure accumulation chain in a loop (its wgmmas stay in flight)",
                    consumed,
                )
    _check_rereads(kernel, s)


def lags(kernel: tile.KernelOp, s: Schedule) -> dict[SSAValue, int]:
    """Each aref value's release lag in `s`."""
    out: dict[SSAValue, int] = {}
    for create in [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]:
        plan = s.aref(create.ident)
        out[create.result] = plan.lag if plan is not None else 0
    return out


# -- loops ----------------------------------------------------------------------------------


def op_name(op: Operation) -> str:
    """An op in a diagnostic: its name and result, `tile.dot %d`."""
    hint = op.results[0].name_hint if op.results else None
    return op.name + (f" %{hint}" if hint else "")


def loop_error(loop: scf.ForOp, lp: LoopPlan, why: str) -> CompileError:
    """The error of a loop schedule that cannot be applied."""
    return CompileError(
        f"coarse-pipeline: the schedule of {lp.role} loop {lp.loop} cannot be applied: {why}",
        loop,
    )


def check_loops(kernel: tile.KernelOp, parts: list[aref.PartitionOp], s: Schedule) -> None:
    """Every loop schedule names a main loop the kernel has and lists exactly its
    scheduled ops; its waits are realizable (`check_waits`)."""
    arefs = lags(kernel, s)
    for lp in s.loops:
        part = next((p for p in parts if p.role.data == lp.role), None)
        loops = main_loops(part) if part is not None else []
        if lp.loop >= len(loops):
            raise CompileError(
                f"coarse-pipeline: the schedule names {lp.role} loop {lp.loop}, which "
                "the kernel does not have",
                kernel,
            )
        loop = loops[lp.loop]
        mismatch = ops_mismatch(loop, lp)
        if mismatch is not None:
            raise loop_error(loop, lp, mismatch)
        check_waits(loop, lp, arefs)
        if lp.chained:
            check_chain(s, lp, loops)


def check_chain(s: Schedule, lp: LoopPlan, loops: list[scf.ForOp]) -> None:
    """A chained loop has a next loop in its partition, not chained itself, with which it
    can run as one pipeline (`tawac.schedule.chain`)."""
    loop = loops[lp.loop]
    nxt = s.loop(lp.role, lp.loop + 1)
    if lp.loop + 1 >= len(loops) or nxt is None:
        raise loop_error(loop, lp, "it is chained, and no scheduled loop follows it")
    if nxt.chained:
        raise loop_error(loop, lp, "it is chained to a loop that is chained to the next")
    problem = chain_problem(loop, lp, loops[lp.loop + 1], nxt)
    if problem is not None:
        raise loop_error(loop, lp, f"it is chained to the next loop, but {problem}")


def ops_mismatch(loop: scf.ForOp, lp: LoopPlan) -> str | None:
    """How the schedule's ops differ from the loop's scheduled ops, or None when it lists
    each of them once, by number and name."""
    sched = scheduled_ops(loop.body.block)
    if sorted(o.index for o in lp.ops) == list(range(len(sched))) and all(
        sched[o.index].name == o.op for o in lp.ops
    ):
        return None
    listed = ", ".join(f"{o.index} {o.op}" for o in sorted(lp.ops, key=lambda o: o.index))
    found = ", ".join(f"{n} {o.name}" for n, o in enumerate(sched))
    return f"it lists [{listed}], the loop has [{found}]"


def check_waits(loop: scf.ForOp, lp: LoopPlan, arefs: dict[SSAValue, int]) -> None:
    """Each MMA whose slots the loop releases has one wait; it comes after the MMA and
    before every op of its body that reads the result or releases the MMA's slots; its
    `pending` leaves in flight only MMAs issued after it (and, in a loop run in body
    order, the last L iterations' when its slots are released with lag L). A release lag
    needs the loop in body order."""
    body = loop.body.block
    sched = scheduled_ops(body)
    order = [sched[o.index] for o in lp.ops]
    stage = {sched[o.index]: o.stage for o in lp.ops}
    awaited = awaited_dots(body, arefs)
    if not lp.in_body_order and any(awaited.values()):
        raise loop_error(
            loop,
            lp,
            "its MMAs are kept in flight across iterations (a release lag): only a "
            "one-stage schedule in body order applies",
        )
    for w in lp.waits:
        dot = sched[w.dot] if w.dot < len(sched) else None
        if dot not in awaited:
            raise loop_error(
                loop, lp, f"it waits for op {w.dot}, which is not an MMA whose slots it releases"
            )
    for dot in awaited:
        w = lp.wait(sched.index(dot))
        if w is None:
            raise loop_error(loop, lp, f"the MMA {op_name(dot)} has no wait")
        p = order.index(dot)
        if w.at <= p:
            raise loop_error(loop, lp, f"the wait of {op_name(dot)} comes before the MMA")
        early = next((x for x in order[p + 1 : w.at] if due(x, dot, stage, body)), None)
        if early is not None:
            raise loop_error(
                loop, lp, f"{op_name(early)} needs the MMA {op_name(dot)} done before its wait"
            )
        allowed = sum(1 for x in order[p + 1 : w.at] if x in awaited) + awaited[dot]
        if w.pending > allowed:
            raise loop_error(
                loop,
                lp,
                f"the wait of {op_name(dot)} leaves {w.pending} wgmma groups in flight; at most "
                f"{allowed} are issued after it",
            )


# -- stores ---------------------------------------------------------------------------------


def check_stores(kernel: tile.KernelOp, parts: list[aref.PartitionOp], s: Schedule) -> None:
    """Every consumer store has one entry and no entry names a store the kernel lacks; a
    staged store's tile can be staged as its mode says, and the staging buffers fit after
    the aref rings."""
    consumers = [(p, r) for p, r in zip(parts, s.roles, strict=True) if r.role == "consumer"]
    stores = [
        (st, part, r.warp_groups)
        for part, r in consumers
        for st in part.walk()
        if isinstance(st, tile.StoreOp)
    ]
    names = {st.ident for st, _, _ in stores}
    for plan in s.stores:
        if plan.name not in names:
            raise CompileError(
                f"plan: the schedule names store '{plan.name}', which the kernel does not have",
                kernel,
            )
    layout = SmemPlan(ctas=s.ctas_per_sm)
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    decided = [s.aref(c.ident) for c in creates]
    layout.arefs(
        [
            (c.aref_type, a.depth if a is not None else None)
            for c, a in zip(creates, decided, strict=True)
        ]
    )
    # where the rings alone do not fit, lower-aref, which lays them out, says so
    rings_fit = layout.fits()
    for st, part, w in stores:
        plan = s.store(st.ident)
        if plan is None:
            raise CompileError(f"plan: the schedule has no staging for store '{st.ident}'", st)
        if not plan.staged:
            continue
        vt = st.value.type
        assert isinstance(vt, TensorType)
        why = _staging_problem(st, part, w, plan.mode, plan.buffers, s.persistent, layout.end)
        if why is not None:
            raise CompileError(f"tma-store: store '{st.ident}' cannot be staged {why}", st)
        if plan.mode != "rings":
            layout.tiles("staging", staging_ring_type(vt, plan.buffers))
        if rings_fit and not layout.fits():
            raise CompileError(
                f"tma-store: the staging buffers of store '{st.ident}' end at byte "
                f"{layout.end}, past {layout.limit_text()}",
                st,
            )


def _staging_problem(
    st: tile.StoreOp,
    part: aref.PartitionOp,
    w: int,
    mode: str,
    buffers: int,
    persistent: bool,
    laid_out: int,
) -> str | None:
    vt = st.value.type
    assert isinstance(vt, TensorType)
    if st.transposed is not None:
        return "through shared memory: a transposed store (swap-ab) leaves from registers"
    if not tma_storable(vt, w):
        return (
            "through shared memory: TMA stores take 16-bit 2-d tiles of whole 64-column "
            f"chunks and m64 row blocks per warp group ({w} here)"
        )
    if mode == "chunks" and not chunk_ring_fits(vt, buffers):
        return f"in chunks through {buffers} buffers: its chunk count is not a multiple of it"
    if mode != "rings":
        return None
    if persistent or not store_after_loops(st, part):
        return (
            "in the aref rings: they are free for good only after the main loop of a "
            "kernel that is not persistent"
        )
    if hopper.ring_bytes(hopper.smem_ring_type(vt, 1)) > laid_out:
        return "in the aref rings: they are smaller than the tile"
    return None
