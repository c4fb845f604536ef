"""How scalars and loops vary with the program ids: whether a value may differ between
programs that differ in one program id (the cluster decision pairs such programs), and
how a tile's amount of work follows program id x (the persistent tile order)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import scf
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from tawac.analysis.loops import main_loops
from tawac.dialects import aref, tile

if TYPE_CHECKING:
    from tawac.analysis.grid import Problem


def program_id_ops(op: Operation, axis: int) -> list[tile.ProgramIdOp]:
    """Every `tile.program_id axis` in `op` (a kernel), in program order: a kernel may
    read one axis several times (a converted Triton kernel reads it where the source
    does), and what depends on the program id depends on each of them."""
    return [o for o in op.walk() if isinstance(o, tile.ProgramIdOp) and o.axis.data == axis]


def depends_on_program_id(
    v: SSAValue, axis: int, upper_bounds: bool = True, through_data: bool = True
) -> bool:
    """Whether scalar `v` may differ between programs that differ only in program id
    `axis`: its backward slice reaches `tile.program_id axis`. Conservative: a value
    made by an op with regions (an `scf.if` result) or carried by a loop counts as
    dependent; a loop's induction variable depends on what its bounds depend on, or,
    with `upper_bounds=False` (which values it takes, not how many), on its lower bound
    and step only: a causal loop's keys `0, 128, ...` up to the diagonal are the same
    sequence in every query block. With `through_data=False`, a value read from memory
    (`tile.load_index`) does not follow the program id whose coordinates read it: how it
    varies with them is the data's, not the program order's."""
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
                work.extend(
                    (parent.lb, parent.ub, parent.step)
                    if upper_bounds
                    else (parent.lb, parent.step)
                )
                continue
            return True
        if isinstance(owner, tile.LoadIndexOp) and not through_data:
            continue
        if isinstance(owner, Operation):
            if owner.regions:
                return True
            work.extend(owner.operands)
    return False


def read_by_one_program(load: tile.LoadOp, problem: Problem | None = None) -> bool:
    """Whether no two programs read the same tile through `load`: its coordinates depend
    on every program id the kernel uses, but those of the axes where the grid has one
    program at `problem`'s sizes (`tawac.analysis.grid.Problem.lone`). A GEMM's A tile at
    `(pid_m * BM, k)` is shared along program id y, unless the grid has one program along
    y; attention's K tile, not indexed by the query block x, is shared by the query blocks
    of a head. Such a tile comes from DRAM: no other program brings it into L2 first.

    A coordinate read from memory (`tile.load_index`) follows the program ids its index
    depends on, unless `problem` (`tawac.analysis.grid.Problem`) shows more programs
    along that axis than the values the coordinate indexes: a grouped GEMM's 64 row
    blocks read the weights of 8 experts, so some share them (pigeonhole); the pages of a
    paged KV cache outnumber the sequences, so each may have its own."""
    kernel = load.parent_op()
    while kernel is not None and not isinstance(kernel, tile.KernelOp):
        kernel = kernel.parent_op()
    if kernel is None:
        return False
    used = {op.axis.data for op in kernel.walk() if isinstance(op, tile.ProgramIdOp)}
    if not used:
        return False
    lone = problem.lone if problem is not None else frozenset()
    return all(_varies_along(load, a, problem) for a in used - lone)


def _varies_along(load: tile.LoadOp, axis: int, problem: Problem | None) -> bool:
    """Whether `load`'s tile may differ between every two programs along `axis`."""
    indices = list(load.indices)
    if any(depends_on_program_id(i, axis, False, through_data=False) for i in indices):
        return True
    read = [d for d, i in enumerate(indices) if depends_on_program_id(i, axis, False)]
    if not read:
        return False
    n = problem.extents[axis] if problem is not None and axis < len(problem.extents) else None
    for d in read:
        values = problem.size(load.source, d) if problem is not None else None
        if n is None or values is None or n <= values:
            return True
    return False


def work_order(part: aref.PartitionOp) -> str | None:
    """How a tile's work varies with program id x, from its main loops' bounds: "up" when
    an upper bound follows x (causal attention's key loop ends at the diagonal), "down"
    when only a lower bound does, None when neither (a bound read from memory, as a
    grouped GEMM's, has no order in x: the grouped order serves it)."""
    loops = main_loops(part)
    if any(depends_on_program_id(lp.ub, 0, through_data=False) for lp in loops):
        return "up"
    if any(depends_on_program_id(lp.lb, 0, through_data=False) for lp in loops):
        return "down"
    return None


def streams_along_x(parts: list[aref.PartitionOp]) -> bool:
    """Whether a load in a main loop of `parts` reads coordinates that depend on program
    id x: its programs along x stream different data (a GEMM's A band). Where none does
    (attention's K and V follow the head and the batch, y and z; only the query tile,
    loaded once per tile, follows x), every program of one (y, z) streams the same data,
    and running them together keeps that data in L2 (`HeuristicPlanner`'s tile order).
    A loop bound that follows x changes how much of the data a program streams, not
    which (a causal key loop reads a prefix of the same keys)."""
    for part in parts:
        for loop in main_loops(part):
            for op in loop.walk():
                if isinstance(op, tile.LoadOp) and any(
                    depends_on_program_id(v, 0, upper_bounds=False) for v in op.indices
                ):
                    return True
    return False
