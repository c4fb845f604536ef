"""Thread block clusters (issue 11): which CTAs form a cluster and which operand they
load once for all of them.

A cluster of 2 CTAs along program id x (`--cluster 2x1`) runs the programs x = 2i and
2i + 1 with the same y and z. In C = A B^T with x over M and y over N, both need the
same B tile at every step of the K loop: each CTA copies one half of the tile's rows
and multicasts it into both CTAs' rings (`hopper.tma_load_multicast`), so B is read from
L2 once per pair. `1x2` is the mirror (y paired, A shared).

The planner decides this from data flow, not from names: the *shared* payloads of an
aref are the loads whose coordinates do not depend on the paired program id; the others
differ between the CTAs and stay private. The passes then rely on the two CTAs running
the same transfers in lockstep (the peer writes into my slot i while I wait for slot i),
so clusters are planned only where that holds, and anything else is a located error
rather than a miscompile:

- one producer and one consumer partition, one aref written in a loop (a GEMM's K
  loop; arefs written once per tile, such as an epilogue operand, stay private to each
  CTA), one main loop per partition and one `tile.dot` in the kernel;
- the main loops' bounds do not depend on the paired program id (equal trip counts);
- each payload is a `tile.load`, at least one shared and one private, each shared tile
  2-d with rows that split into whole swizzle patterns (`SwizzledTile.row_band`);
- the stores follow the paired program id (the launch grid has that axis).
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from tawac.backend_ptx import abi
from tawac.diagnostics import CompileError
from tawac.dialects import aref, hopper, tile
from tawac.options import CLUSTERS
from tawac.schedule.loops import main_loops


def cluster_shape(text: str) -> tuple[int, int]:
    """The shape named by the `cluster` option ("1x1", "2x1", "1x2")."""
    shape = CLUSTERS.get(text)
    if shape is None:
        raise CompileError(f"plan: cluster must be one of {', '.join(CLUSTERS)}, got '{text}'")
    return shape


def depends_on_program_id(v: SSAValue, axis: int) -> bool:
    """Whether scalar `v` may differ between programs that differ only in program id
    `axis`: its backward slice reaches `tile.program_id axis`. Conservative: a value
    made by an op with regions (an `scf.if` result) or carried by a loop counts as
    dependent; a loop's induction variable depends on what its bounds depend on."""
    work, seen = [v], set()
    while work:
        x = work.pop()
        if x in seen:
            continue
        seen.add(x)
        owner = x.owner
        if isinstance(owner, tile.ProgramIdOp):
            if owner.axis.data == axis:
                return True
            continue
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if isinstance(parent, tile.KernelOp):
                continue  # a kernel argument
            if isinstance(parent, scf.ForOp) and isinstance(x, BlockArgument) and x.index == 0:
                work.extend((parent.lb, parent.ub, parent.step))
                continue
            return True
        if isinstance(owner, Operation):
            if owner.regions:
                return True
            work.extend(owner.operands)
    return False


def _put_in_loop(op: Operation) -> bool:
    return isinstance(op, aref.PutOp) and isinstance(op.parent_op(), scf.ForOp)


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
            f"is supported for GEMM-like kernels only: {why}",
            at,
        )

    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    if sorted(p.role.data for p in parts) != ["consumer", "producer"]:
        raise fail("it needs one producer and one consumer partition")
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    looped = [c for c in creates if any(_put_in_loop(u.operation) for u in c.result.uses)]
    if len(looped) != 1:
        raise fail(
            f"it needs exactly one aref written in a loop (a K loop's operands), found "
            f"{len(looped)}"
        )
    dots = [o for o in kernel.walk() if isinstance(o, tile.DotOp)]
    if len(dots) != 1:
        raise fail(
            f"it needs exactly one tile.dot, found {len(dots)}", dots[-1] if dots else kernel
        )
    for part in parts:
        loops = main_loops(part)
        if len(loops) != 1:
            raise fail(f"the {part.role.data} needs exactly one loop streaming through the aref")
        loop = loops[0]
        for bound in (loop.lb, loop.ub, loop.step):
            if depends_on_program_id(bound, axis):
                raise fail(
                    f"the loop's bounds depend on program id {name}, so the paired CTAs "
                    "would run different numbers of steps",
                    loop,
                )
    create = looped[0]
    puts = [u.operation for u in create.result.uses if isinstance(u.operation, aref.PutOp)]
    if len(puts) != 1 or not isinstance(puts[0].parent_op(), scf.ForOp):
        raise fail("the aref must be written once per iteration of the producer's loop")
    put = puts[0]
    shared: list[int] = []
    for i, v in enumerate(put.values):
        ld = v.owner
        if not isinstance(ld, tile.LoadOp):
            raise fail("an aref payload is not a tile.load", put)
        if not any(depends_on_program_id(ix, axis) for ix in ld.indices):
            shared.append(i)
    if not shared:
        raise fail(f"every operand load depends on program id {name}: nothing to share", put)
    if len(shared) == len(put.values):
        raise fail(f"no operand load depends on program id {name}", put)
    for i in shared:
        ld = put.values[i].owner
        assert isinstance(ld, tile.LoadOp)
        t = ld.result.type
        if len(t.get_shape()) != 2 or ld.source.type.rank != 2:
            raise fail("the shared operand must be a 2-d tile of a 2-d tensor", ld)
        layout = hopper.smem_ring_type(t, 1).tile_type.layout
        try:
            layout.row_band(shape[0] * shape[1])
        except ValueError as err:
            raise fail(f"the shared operand cannot be split between the CTAs: {err}", ld) from None
    grid = abi.infer_grid(kernel)
    if "cdiv" not in grid[axis]:
        raise fail(f"no store follows program id {name} (the grid has no such axis)")
    return shape, {create: tuple(shared)}
