"""Thread block clusters: which CTAs form a cluster and which operands they
load once for all of them.

A cluster of 2 CTAs along program id x (`--cluster 2x1`) runs the programs x = 2i and
2i + 1 with the same y and z. In C = A B^T with x over M and y over N, both need the
same B tile at every step of the K loop: each CTA copies one half of the tile's rows
and multicasts it into both CTAs' rings (`hopper.tma_load_multicast`), so B is read from
L2 once per pair. `1x2` is the mirror (y paired, A shared). In attention with x over
query blocks (y heads, z batches), the CTAs of a 2x1 cluster need the same K and V tiles
at every key step: both are multicast, while each CTA loads its own Q.

The planner decides this from data flow, not from names: the *shared* payloads of an
aref written in a loop are the loads whose coordinates do not depend on the paired
program id; the others differ between the CTAs and stay private, and so do arefs written
once per tile (an epilogue operand, attention's Q). The passes then rely on the two CTAs
running the same transfers in lockstep (the peer writes into my slot i while I wait for
slot i), so clusters are planned only where that holds, and anything else is a located
error rather than a miscompile:

- one producer and one consumer partition;
- every aref written in a loop is written by one `aref.put` in the producer's loop, and
  its transfers run in lockstep in the paired CTAs: the bounds of the loops around its
  `put`, `get` and release do not depend on the paired program id (equal trip counts;
  causal attention's key loop ends at the diagonal, so it is refused), and no condition
  is around them;
- each payload of such an aref is a `tile.load`; at least one in the kernel is shared,
  each shared tile 2-d (of a tensor of rank 2 or more, the leading coordinates taking
  one element) with rows that split into whole swizzle patterns
  (`SwizzledTile.row_band`);
- the stores follow the paired program id (the launch grid has that axis).

Any number of `tile.dot`s and of arefs is fine; an aref may have all its payloads shared
(attention's K and V) or some (GEMM's B).
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Operation

from tawac.analysis.grid import infer_grid
from tawac.analysis.program_ids import depends_on_program_id
from tawac.dialects import aref, hopper, tile
from tawac.support.diagnostics import CompileError
from tawac.support.options import CLUSTERS


def cluster_shape(text: str) -> tuple[int, int]:
    """The shape named by the `cluster` option ("1x1", "2x1", "1x2")."""
    shape = CLUSTERS.get(text)
    if shape is None:
        raise CompileError(f"plan: cluster must be one of {', '.join(CLUSTERS)}, got '{text}'")
    return shape


def _put_in_loop(op: Operation) -> bool:
    return isinstance(op, aref.PutOp) and isinstance(op.parent_op(), scf.ForOp)


_SLOT_OPS = (aref.PutOp, aref.GetOp, aref.ConsumedOp)


def _not_in_lockstep(op: Operation, axis: int) -> tuple[str, Operation] | None:
    """Why `op` (a transfer of an aref) may run a different number of times in the
    CTAs paired along program id `axis`, and the op to blame: a loop around it whose
    bounds depend on that program id, or a region op other than a loop (a condition);
    None when it runs in lockstep."""
    name = "xy"[axis]
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, aref.PartitionOp):
        if not isinstance(parent, scf.ForOp):
            return f"an aref transfer runs inside '{parent.name}'", parent
        if any(depends_on_program_id(b, axis) for b in (parent.lb, parent.ub, parent.step)):
            why = (
                f"the loop's bounds depend on program id {name}, so the paired CTAs would "
                "run different numbers of steps"
            )
            return why, parent
        parent = parent.parent_op()
    return None


def _band_problem(ld: tile.LoadOp, ctas: int) -> str | None:
    """Why the tile of `ld` cannot be shared by `ctas` CTAs, each copying a band of its
    rows, or None."""
    t = ld.result.type
    if len(t.get_shape()) != 2 or ld.source.type.rank < 2:
        return "the shared operand must be a 2-d tile of a tensor of rank 2 or more"
    layout = hopper.smem_ring_type(t, 1).tile_type.layout
    try:
        layout.row_band(ctas)
    except ValueError as err:
        return f"the shared operand cannot be split between the CTAs: {err}"
    return None


def plan_cluster(
    kernel: tile.KernelOp, text: str
) -> tuple[tuple[int, int], dict[aref.CreateOp, tuple[int, ...]]]:
    """The cluster shape and, per aref, the payloads its CTAs load together (multicast);
    a located error where the kernel cannot run in such a cluster."""
    shape = cluster_shape(text)
    if shape == (1, 1):
        return shape, {}
    axis = 0 if shape[0] > 1 else 1
    name = "xy"[axis]

    def fail(why: str, at: Operation = kernel) -> CompileError:
        return CompileError(
            f"plan: cluster {text} (CTAs of program ids {name} = 2i, 2i+1 share an operand) "
            f"cannot be used: {why}",
            at,
        )

    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    if sorted(p.role.data for p in parts) != ["consumer", "producer"]:
        raise fail("it needs one producer and one consumer partition")
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    looped = [c for c in creates if any(_put_in_loop(u.operation) for u in c.result.uses)]
    if not looped:
        raise fail("no aref is written in a loop: nothing to share")
    puts: dict[aref.CreateOp, aref.PutOp] = {}
    for create in looped:
        found = [u.operation for u in create.result.uses if isinstance(u.operation, aref.PutOp)]
        if len(found) != 1:
            raise fail("an aref written in a loop must be written once per iteration", found[-1])
        puts[create] = found[0]
    # The paired CTAs multicast into each other's slots of these arefs: both must run
    # the same transfers, in the same order.
    streamed = {c.result for c in looped}
    for part in parts:
        for op in part.walk():
            if not isinstance(op, _SLOT_OPS) or op.aref not in streamed:
                continue
            problem = _not_in_lockstep(op, axis)
            if problem is not None:
                raise fail(*problem)
    ctas = shape[0] * shape[1]
    multicast: dict[aref.CreateOp, tuple[int, ...]] = {}
    for create, put in puts.items():
        shared: list[int] = []
        for i, v in enumerate(put.values):
            ld = v.owner
            if not isinstance(ld, tile.LoadOp):
                raise fail("an aref payload is not a tile.load", put)
            if any(depends_on_program_id(ix, axis) for ix in ld.indices):
                continue
            problem = _band_problem(ld, ctas)
            if problem is not None:
                raise fail(problem, ld)
            shared.append(i)
        if shared:
            multicast[create] = tuple(shared)
    if not multicast:
        raise fail(
            f"every operand load depends on program id {name}: nothing to share",
            next(iter(puts.values())),
        )
    grid = infer_grid(kernel)
    if "cdiv" not in grid[axis]:
        raise fail(f"no store follows program id {name} (the grid has no such axis)")
    return shape, multicast
