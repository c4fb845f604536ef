"""`persistent`: persistent kernels with an L2-friendly tile order (Tawa section 4.6),
applying the `tiles` and `program_grid` of `#tawac.schedule`.  Runs after `pipeline`.

The launch grid becomes at most one CTA per multiprocessor; each partition loops over
the logical program ids `t = cta_id, cta_id + num_ctas, ...` (the same sequence in every
partition, so producer and consumers agree), maps `t` to (x, y) in groups of `group-m`
rows of x (consecutive CTAs share B tiles and a band of A tiles in L2), and runs the
original body with `tile.program_id` replaced.  The producer of tile t+1 runs ahead
while the consumers finish the epilogue of tile t (the planner gives an aref written
once per tile, Q, a second slot where shared memory allows).  When a main loop's bounds
follow program id x (causal attention), the planner orders tiles longest-first instead
(see `_longest_first`).

aref iteration numbers continue across tiles: the loop carries one `%base` per stream of
transfers (the arefs of a main loop, a loop moving data through arefs; or of the main
loops one after the other that share their rings), the number of its transfers before
this tile, which is added to every aref index of the stream (a `resident` aref's stream
counts the first loop's transfers only where they stay in its ring, as `reuse-slots`
numbers them: T, else T per loop; a resident ring whose slots a program keeps, `hold`,
is numbered from the program's ordinal instead, and every `aref.ordinal` becomes the
tile count); after a main loop whose
releases were deferred by `pipeline` (mma-depth P > 0), the consumer releases the last
min(P, trips) slots, since the producer will wait for them.

The logical grid (inferred from the stores, as for a plain launch) is the schedule's
`program_grid`; the sidecar's grid becomes `{"persistent": 1}`.

With a cluster of C CTAs along program id x (or y) in the schedule, the loop runs over
the clusters' tiles (the grid with that axis divided by C, rounded up) from
`%clusterid.x` in steps of `%nclusterid.x`, so both CTAs of a cluster take the same
sequence of tiles and trip counts (their aref slots and phases agree, as the multicast
into each other's rings needs); the CTA of rank r takes program id C * x' + r.  A CTA
whose program lies past the grid (an odd count along the paired axis) computes a tile
that is entirely out of range (its loads read zeros, its stores are clipped) rather than
leave its peer waiting.  Groups of `group-m` programs along x stay groups of `group-m`
programs (group-m / C cluster tiles).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.analysis.arefs import stays_in_ring
from tawac.analysis.grid import decomposition_of, from_attr
from tawac.analysis.loops import main_loops, trip_count
from tawac.dialects import aref, hopper, tile
from tawac.support.diagnostics import CompileError


def _c(v: int) -> arith.ConstantOp:
    return arith.ConstantOp.from_int_and_width(v, IndexType())


class _Builder:
    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def const(self, v: int) -> SSAValue:
        return self.add(_c(v))


def _grid_extent(b: _Builder, kernel: tile.KernelOp, entry: dict) -> SSAValue:
    if "const" in entry:
        return b.const(entry["const"])
    ref = entry["cdiv"]
    arg = next(a for a in kernel.body.block.args if a.name_hint == ref["arg"])
    size = b.add(tile.DimOp(arg, ref["dim"]))
    blocks = b.add(arith.CeilDivUIOp(size, b.const(entry["by"])))
    if int(entry.get("times", 1)) == 1:
        return blocks
    return b.add(arith.MuliOp(blocks, b.const(entry["times"])))


def _trip_count(loop: scf.ForOp, at: InsertPoint) -> tuple[list[Operation], SSAValue]:
    """max(0, ceil((ub - lb) / step)) before `at`."""
    ops = trip_count(loop.lb, loop.ub, loop.step)
    Rewriter.insert_op(ops, at)
    return ops, ops[-1].results[0]


def _tile_coords(
    ib: _Builder,
    t: SSAValue,
    g: tuple[SSAValue, SSAValue, SSAValue],
    group_m: int,
    order: str | None,
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """Logical tile number t -> program ids (x, y, z)."""
    if order is not None:
        return _longest_first(ib, t, g, order)
    return _grouped(ib, t, g, group_m)


def _longest_first(
    ib: _Builder, t: SSAValue, g: tuple[SSAValue, SSAValue, SSAValue], order: str
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """Tiles whose work varies with x (causal attention), longest first (static LPT).

    A snake over rounds of num_ctas tiles (CTA c takes position c of even rounds and
    len-1-c of odd ones) pairs long and short tiles per CTA.  Heads (y, z) go in groups
    of ceil(2 * num_ctas / gx), about two rounds, so that the K/V the running CTAs stream
    stay few enough for L2; within a group x varies slowest, from the longest tiles to
    the shortest ("up": x descending, "down": ascending)."""
    gx, gy, gz = g
    gyz = ib.add(arith.MuliOp(gy, gz))
    n = ib.add(hopper.NumCtasOp())
    total = ib.add(arith.MuliOp(gx, gyz))
    rnd = ib.add(arith.DivUIOp(t, n))
    c = ib.add(arith.RemUIOp(t, n))
    start = ib.add(arith.MuliOp(rnd, n))
    length = ib.add(arith.MinUIOp(ib.add(arith.SubiOp(total, start)), n))
    back = ib.add(arith.SubiOp(ib.add(arith.SubiOp(length, ib.const(1))), c))
    odd = ib.add(arith.CmpiOp(ib.add(arith.RemUIOp(rnd, ib.const(2))), ib.const(1), "eq"))
    pos = ib.add(arith.AddiOp(start, ib.add(arith.SelectOp(odd, back, c))))
    two_rounds = ib.add(arith.MuliOp(n, ib.const(2)))
    heads = ib.add(arith.MinUIOp(ib.add(arith.CeilDivUIOp(two_rounds, gx)), gyz))
    per_group = ib.add(arith.MuliOp(heads, gx))
    group = ib.add(arith.DivUIOp(pos, per_group))
    first = ib.add(arith.MuliOp(group, heads))
    size = ib.add(arith.MinUIOp(ib.add(arith.SubiOp(gyz, first)), heads))
    within = ib.add(arith.RemUIOp(pos, per_group))
    x = ib.add(arith.DivUIOp(within, size))
    head = ib.add(arith.AddiOp(first, ib.add(arith.RemUIOp(within, size))))
    if order == "up":
        x = ib.add(arith.SubiOp(ib.add(arith.SubiOp(gx, ib.const(1))), x))
    return x, ib.add(arith.RemUIOp(head, gy)), ib.add(arith.DivUIOp(head, gy))


def _grouped(
    ib: _Builder, t: SSAValue, g: tuple[SSAValue, SSAValue, SSAValue], group_m: int
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """Groups of group_m values of x share y (Triton's grouped order, for L2); group_m 0:
    the whole x axis is one group (x fastest, the programs of one (y, z) together)."""
    gx, gy, _ = g
    gxy = ib.add(arith.MuliOp(gx, gy))
    z = ib.add(arith.DivUIOp(t, gxy))
    r = ib.add(arith.RemUIOp(t, gxy))
    gm = gx if group_m == 0 else ib.const(group_m)
    per_group = ib.add(arith.MuliOp(gm, gy))
    group = ib.add(arith.DivUIOp(r, per_group))
    first_x = ib.add(arith.MuliOp(group, gm))
    size_x = ib.add(arith.MinUIOp(ib.add(arith.SubiOp(gx, first_x)), gm))
    in_group = ib.add(arith.RemUIOp(r, per_group))
    x = ib.add(arith.AddiOp(first_x, ib.add(arith.RemUIOp(in_group, size_x))))
    y = ib.add(arith.DivUIOp(in_group, size_x))
    return x, y, z


def _stream_plan(
    b: _Builder, tiles: SSAValue, ctas: SSAValue, max_splits: int
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """Stream-K's programs (the split-k pass's `stream`): the tiles of the whole waves
    (`dp` = tiles - tiles mod ctas) are one program each; the `rest` tiles of the last,
    partly filled wave are split `splits` = min(max_splits, ctas / rest) ways (at least
    1), so that they fill the CTAs again. Returns (dp, splits, programs)."""
    dp = b.add(arith.MuliOp(b.add(arith.DivUIOp(tiles, ctas)), ctas))
    rest = b.add(arith.SubiOp(tiles, dp))
    per = b.add(arith.DivUIOp(ctas, b.add(arith.MaxUIOp(rest, b.const(1)))))
    splits = b.add(arith.MaxUIOp(b.add(arith.MinUIOp(per, b.const(max_splits))), b.const(1)))
    programs = b.add(arith.AddiOp(dp, b.add(arith.MuliOp(rest, splits))))
    dp.name_hint, splits.name_hint, programs.name_hint = "dp_tiles", "tail_splits", "programs"
    return dp, splits, programs


def _stream_share(
    ib: _Builder, t: SSAValue, stream: tuple[SSAValue, SSAValue, SSAValue]
) -> tuple[SSAValue, tuple[SSAValue, SSAValue, SSAValue]]:
    """Program t of stream-K -> (its tile number, (n, z, base) of `tile.split_info`): a
    program of the whole waves is tile t alone (1, 0, 0); program dp + j of the tail is
    split z = j mod splits of tile dp + j / splits, whose partials are the slots
    j - z .. j - z + splits - 1 (one per program of the tail: fewer than the CTAs)."""
    dp, splits, _ = stream
    tail = ib.add(arith.CmpiOp(t, dp, "uge"))
    j = ib.add(arith.SelectOp(tail, ib.add(arith.SubiOp(t, dp)), ib.const(0)))
    z = ib.add(arith.RemUIOp(j, splits))
    number = ib.add(
        arith.SelectOp(tail, ib.add(arith.AddiOp(dp, ib.add(arith.DivUIOp(j, splits)))), t)
    )
    count = ib.add(arith.SelectOp(tail, splits, ib.const(1)))
    base = ib.add(arith.SubiOp(j, z))
    return number, (count, z, base)


def _make_persistent(
    kernel: tile.KernelOp,
    part: aref.PartitionOp,
    grid: list[dict],
    group_m: int,
    depth: int,
    order: str | None,
    cluster: tuple[int | None, int] = (None, 1),
    max_splits: int = 0,
) -> None:
    old = part.body.block
    new = Block()
    b = _Builder(new)
    g = [_grid_extent(b, kernel, grid[a]) for a in range(3)]
    axis, ctas = cluster
    if axis is not None:
        # A cluster's CTAs take the programs 2i, 2i + 1 along `axis` together: the loop
        # runs over the clusters' tiles, in lockstep in the CTAs of each cluster.
        g[axis] = b.add(arith.CeilDivUIOp(g[axis], b.const(ctas)))
        if axis == 0 and group_m:
            group_m = max(1, group_m // ctas)
    gx, gy, gz = g
    total = b.add(arith.MuliOp(b.add(arith.MuliOp(gx, gy)), gz))
    first = b.add(hopper.CtaIdOp() if axis is None else hopper.ClusterIdOp())
    step = b.add(hopper.NumCtasOp() if axis is None else hopper.NumClustersOp())
    zero = b.const(0)
    stream = _stream_plan(b, total, step, max_splits) if max_splits else None
    if stream is not None:
        total = stream[-1]

    mains = main_loops(part)
    slot_ops = (aref.PutOp, aref.GetOp, aref.ConsumedOp)
    streams = _streams(mains, slot_ops, _resident_depths(kernel))
    keys = list(dict.fromkeys(streams.values()))
    body = Block(arg_types=[IndexType()] * (2 + len(keys)))
    t, count, bases = body.args[0], body.args[1], body.args[2:]
    t.name_hint, count.name_hint = "tile", "count"
    for base in bases:
        base.name_hint = "base"
    loop = scf.ForOp(first, total, step, [zero] * (1 + len(keys)), Region(body))
    new.add_op(loop)

    ib = _Builder(body)
    share = None
    if stream is not None:
        t_tile, share = _stream_share(ib, t, stream)
        x, y, z = _tile_coords(ib, t_tile, (gx, gy, gz), group_m, order)
    else:
        x, y, z = _tile_coords(ib, t, (gx, gy, gz), group_m, order)
    if axis is not None:
        # program id = ctas * (the cluster's tile) + the CTA's rank in the cluster
        rank = ib.add(hopper.ClusterCtaRankOp())
        xy = [x, y]
        xy[axis] = ib.add(arith.AddiOp(ib.add(arith.MuliOp(xy[axis], ib.const(ctas))), rank))
        x, y = xy
    for v, name in ((x, "pid_x"), (y, "pid_y"), (z, "pid_z")):
        v.name_hint = name
    pids = (x, y, z)

    for op in list(old.ops):
        op.detach()
        body.add_op(op)
    for pid in [o for o in body.walk() if isinstance(o, tile.ProgramIdOp)]:
        pid.result.replace_all_uses_with(pids[pid.axis.data])
        Rewriter.erase_op(pid)
    for info in [o for o in body.walk() if isinstance(o, tile.SplitInfoOp)]:
        if share is None:
            raise CompileError("persistent: tile.split_info needs the stream-K tile order", info)
        for res, v in zip(info.results, share, strict=True):
            res.replace_all_uses_with(v)
        Rewriter.erase_op(info)

    # Each stream of transfers (the arefs of a main loop, or of the loops one after the
    # other that share them) is numbered from its own base, carried across tiles; an
    # aref used once per tile outside the main loops is numbered by the tile count.
    in_mains = {o for m in mains for o in m.walk()}
    for a in [o for o in body.walk() if isinstance(o, slot_ops) and o not in in_mains]:
        g = arith.AddiOp(count, a.index)
        Rewriter.insert_op(g, InsertPoint.before(a))
        a.operands = [a.operands[0], g.result, *a.operands[2:]]
    one = _c(1)
    count_next = arith.AddiOp(count, one.result)
    nexts: list[SSAValue] = [count_next.result]
    base_of = dict(zip(keys, bases, strict=True))
    done: dict[tuple[tuple[int, ...], int], SSAValue] = {}
    trips_of: dict[int, SSAValue] = {}
    # a ring whose slots a program keeps (`reuse-slots`'s held slots) numbers its
    # transfers from the program's ordinal, not from a base: it is the tile count
    for ordinal in [o for o in body.walk() if isinstance(o, aref.OrdinalOp)]:
        ordinal.result.replace_all_uses_with(body.args[1])
        Rewriter.erase_op(ordinal)
    # (`ArefPlan.hold`: `reuse-slots` numbered their transfers from `aref.ordinal`)
    numbered = schedule.marked_arefs(kernel, schedule.of(kernel), lambda a: a.hold)
    for k, main_loop in enumerate(mains):
        for a in [o for o in main_loop.walk() if isinstance(o, slot_ops)]:
            if a.aref in numbered:
                continue
            g = arith.AddiOp(base_of[streams[a.aref]], a.index)
            Rewriter.insert_op(g, InsertPoint.before(a))
            a.operands = [a.operands[0], g.result, *a.operands[2:]]
        trips_op, trips = _trip_count(main_loop, InsertPoint.after(main_loop))
        trips_of[k] = trips
        consumes = any(isinstance(o, aref.ConsumedOp) for o in main_loop.walk())
        if consumes and depth > 0:
            # a release lag only on a ring of this loop alone (`can_release_late`)
            _drain(main_loop, trips_op[-1], base_of.get(((k,), 0), bases[0]), depth)
        for key in keys:
            loops, held = key
            if k not in loops:
                continue
            count = trips
            if held and k != loops[0]:
                # a resident ring's later loops move nothing where its tiles stay in it
                test = stays_in_ring(trips_of[loops[0]], held)
                zero = _c(0)
                moved = arith.SelectOp(test[-1].results[0], zero.result, trips)
                body.add_ops([*test, zero, moved])
                count = moved.result
            nxt = arith.AddiOp(done.get(key, base_of[key]), count)
            body.add_op(nxt)
            done[key] = nxt.result
    nexts += [done[key] for key in keys]
    body.add_ops([one, count_next, scf.YieldOp(*nexts)])
    part.body.detach_block(old)
    part.body.add_block(new)


def _streams(
    mains: list[scf.ForOp], slot_ops: tuple, resident: dict[SSAValue, int]
) -> dict[SSAValue, tuple[tuple[int, ...], int]]:
    """Per aref of the main loops, the loops (by index) that move data through it: its
    stream of transfers, numbered on across those loops (`warp-specialize` shares rings
    between loops one after the other); with the depth of a resident aref's ring (0 for
    the others), whose later loops move nothing where its tiles stay in it."""
    used: dict[SSAValue, list[int]] = {}
    for k, m in enumerate(mains):
        for o in m.walk():
            if isinstance(o, slot_ops) and k not in used.setdefault(o.aref, []):
                used[o.aref].append(k)
    return {r: (tuple(ks), resident.get(r, 0)) for r, ks in used.items()}


def _resident_depths(kernel: tile.KernelOp) -> dict[SSAValue, int]:
    """The ring depth of each aref the schedule marks `resident` (`reuse-slots`)."""
    plan = schedule.of(kernel)
    out = {}
    for create in [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]:
        decided = plan.aref(create.ident)
        if decided is not None and decided.resident:
            out[create.result] = create.aref_type.depth.data
    return out


def _drain(main_loop: scf.ForOp, trips_op: Operation, base: SSAValue, depth: int) -> None:
    """Release the slots of the last min(depth, trips) iterations after the loop."""
    trips = trips_op.results[0]
    refs = list(
        dict.fromkeys(
            o.aref
            for o in main_loop.walk()
            if isinstance(o, aref.ConsumedOp) and o.deferred is not None
        )
    )
    if not refs:
        return
    zero, p, one = _c(0), _c(depth), _c(1)
    back = arith.SubiOp(trips, p.result)
    start = arith.MaxSIOp(back.result, zero.result)
    body = Block(arg_types=[IndexType()])
    for ref in refs:
        g = arith.AddiOp(base, body.args[0])
        body.add_ops([g, aref.ConsumedOp(ref, g.result)])
    body.add_op(scf.YieldOp())
    drain = scf.ForOp(start.result, trips, one.result, [], Region(body))
    Rewriter.insert_op([zero, p, one, back, start, drain], InsertPoint.after(trips_op))


def _stream_k(kernel: tile.KernelOp) -> int:
    """The most programs per tile of a stream-K kernel (`split-k{stream=...}`), else 0."""
    decision = decomposition_of(kernel)
    return int(decision["max_splits"]) if decision["kind"] == "stream_k" else 0


@dataclass(frozen=True)
class PersistentPass(ModulePass):
    """Applies the tile order and program grid of `#tawac.schedule` (nothing to do for a
    kernel the planner left on a plain grid)."""

    name = "persistent"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            plan = schedule.planned(kernel, "persistent")
            if plan.tiles is None or plan.program_grid is None:
                if _stream_k(kernel):
                    raise CompileError(
                        "persistent: stream-K splits the last wave's tiles among the CTAs of "
                        "a persistent kernel; compile with --persistent",
                        kernel,
                    )
                continue
            parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
            loops = [bool(main_loops(p)) for p in parts]
            if any(loops) and not all(loops):
                raise CompileError(
                    "persistent: every partition needs a loop streaming through arefs, or "
                    "none does (each aref then used once per tile)",
                    kernel,
                )
            grid = from_attr(plan.program_grid)
            kind, arg = plan.tiles
            group_m = arg if kind == "grouped" else 0
            order = arg if kind == "longest_first" else None
            depth = plan.mma_depth or 0
            cluster = (plan.cluster_axis, plan.cluster_size)
            if plan.cluster_axis is not None and order is not None:
                raise CompileError(
                    "persistent: a cluster's CTAs take tiles in pairs, which the "
                    "longest-first order does not do; use tiles = grouped",
                    kernel,
                )
            max_splits = _stream_k(kernel)
            if max_splits and (plan.cluster_axis is not None or order is not None):
                raise CompileError(
                    "persistent: stream-K takes the grouped tile order without clusters",
                    kernel,
                )
            for part in parts:
                _make_persistent(
                    kernel,
                    part,
                    grid,
                    group_m,
                    depth,
                    order,
                    cluster,
                    max_splits,  # type: ignore[arg-type]
                )
